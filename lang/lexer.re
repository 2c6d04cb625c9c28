/* lexer.re — tdl's tokenizer (re2c). The generated lexer.c is a build product.
 *
 * One re2c block scans a raw token over a NUL-terminated buffer (the NUL is the sentinel, no
 * refill). lang_lexer_next() wraps it with Python's layout rules: NEWLINE at the end of a logical
 * line, INDENT/DEDENT from the indentation stack, no NEWLINE inside brackets, blank and
 * comment-only lines skipped. Positions are byte offsets; line:col is computed only for errors.
 * Depends on nothing outside lang/. */
#include "parse_int.h"
#include "mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 200       /* open brackets, and indentation levels (Python allows 100) */

enum { RAW_NEWLINE = 1000, RAW_EOF, RAW_ERROR, RAW_INCOMPLETE, RAW_SKIP };

struct LangLexer {
    LangSource *src;
    const char *cur;        /* scan position */
    const char *lim;        /* the terminating NUL */
    bool interactive;
    bool at_line_start;     /* indentation of the next line is still to be measured */
    bool line_has_tokens;   /* a token has been emitted on the current logical line */
    bool done;
    int pending;            /* DEDENTs (< 0) or an INDENT (> 0) still to emit */
    int nindent;
    int indents[MAX_DEPTH];
    int altindents[MAX_DEPTH];  /* the same levels with a tab counted as one column (TabError) */
    int alt;                    /* that width of the line just measured */
    long bad_utf8;              /* offset of the first byte that is not UTF-8, or -1 */
    const char *utf8_why;
    int nparen;
    char parens[MAX_DEPTH];
    uint32_t paren_pos[MAX_DEPTH];
};

static LangStatus fail(LangError *err, LangErrorKind kind, uint32_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static LangStatus fail(LangError *err, LangErrorKind kind, uint32_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err->kind = kind;
    err->pos = pos;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return LANG_ERROR;
}

/* Where text[0..n) stops being UTF-8 (CPython's decoder rules: no overlong forms, surrogates or
 * code points past U+10FFFF), with the reason in CPython's words; -1 when it is all UTF-8. */
static long first_bad_utf8(const unsigned char *s, size_t n, const char **why)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                   : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!len) {
            *why = "invalid start byte";
            return (long)i;
        }
        for (size_t k = 1; k < len; k++) {
            if (i + k >= n) {
                *why = "unexpected end of data";
                return (long)i;
            }
            unsigned d = s[i + k];
            bool ok = (d & 0xC0) == 0x80;
            /* the second byte's range excludes overlong forms, surrogates and > U+10FFFF */
            if (k == 1 && ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F) || (c == 0xF0 && d < 0x90)
                           || (c == 0xF4 && d > 0x8F)))
                ok = false;
            if (!ok) {
                *why = "invalid continuation byte";
                return (long)i;
            }
        }
        i += len;
    }
    return -1;
}

static LangLexer *lexer_alloc(LangSource *src, bool interactive, bool check_utf8);

LangLexer *lang_lexer_new(LangSource *src, bool interactive)
{
    return lexer_alloc(src, interactive, true);
}

/* check_utf8: validate the whole text first (not for an f-string field's lexer: its text is a
 * copy of the part of a source already validated, and validating it again per field would make
 * a file of many f-strings quadratic). */
static LangLexer *lexer_alloc(LangSource *src, bool interactive, bool check_utf8)
{
    LangLexer *lx = mem_calloc(1, sizeof *lx);
    if (!lx) return NULL;
    lx->src = lang_source_retain(src);
    lx->cur = src->text;
    lx->lim = src->text + src->len;
    lx->interactive = interactive;
    lx->at_line_start = true;
    lx->bad_utf8 = check_utf8 ? first_bad_utf8((const unsigned char *)src->text, src->len, &lx->utf8_why) : -1;
    /* A leading UTF-8 byte order mark is not part of the program. */
    if (src->len >= 3 && memcmp(src->text, "\xEF\xBB\xBF", 3) == 0) lx->cur += 3;
    return lx;
}

LangLexer *lang_lexer_new_at(LangSource *src, uint32_t start)
{
    LangLexer *lx = lexer_alloc(src, false, false);
    if (!lx) return NULL;
    lx->cur = src->text + start;
    lx->at_line_start = false;
    return lx;
}

void lang_lexer_free(LangLexer *lx)
{
    if (!lx) return;
    lang_source_release(lx->src);
    mem_free(lx);
}

int lang_lexer_open_paren(LangLexer *lx, uint32_t *pos)
{
    if (lx->nparen == 0) return 0;
    *pos = lx->paren_pos[lx->nparen - 1];
    return lx->parens[lx->nparen - 1];
}

static uint32_t off(LangLexer *lx, const char *p) { return (uint32_t)(p - lx->src->text); }

/* The body of a triple-quoted string, after its opening quotes: finds the closing ones. */
static int scan_triple(LangLexer *lx, char q, const char *start, int kind, LangError *err)
{
    const char *p = lx->cur;
    for (;;) {
        if (p >= lx->lim) {
            fail(err, LANG_SYNTAX_ERROR, off(lx, start), "unterminated triple-quoted string literal");
            return lx->interactive ? RAW_INCOMPLETE : RAW_ERROR;
        }
        if (*p == '\0') {
            fail(err, LANG_SYNTAX_ERROR, off(lx, p), "source code cannot contain null bytes");
            return RAW_ERROR;
        }
        if (*p == '\\' && p[1] != '\0') { p += 2; continue; }
        if (*p == q && p[1] == q && p[2] == q) { lx->cur = p + 3; return kind; }
        p++;
    }
}

/* A one-line string literal that did not close: it ran into the end of the line or a NUL. */
static int bad_string(LangLexer *lx, const char *body, LangToken *t, LangError *err)
{
    const char *e = body;
    for (; *e && *e != '\n' && *e != '\r'; e++)
        if (*e == '\\' && e[1]) e++;
    if (e < lx->lim && *e == '\0')
        fail(err, LANG_SYNTAX_ERROR, off(lx, e), "source code cannot contain null bytes");
    else
        fail(err, LANG_SYNTAX_ERROR, t->pos, "unterminated string literal");
    return RAW_ERROR;
}

static int bracket_open(LangLexer *lx, char c, const char *tok, int kind, LangError *err)
{
    if (lx->nparen == MAX_DEPTH) {
        fail(err, LANG_SYNTAX_ERROR, off(lx, tok), "too many nested parentheses");
        return RAW_ERROR;
    }
    lx->parens[lx->nparen] = c;
    lx->paren_pos[lx->nparen++] = off(lx, tok);
    return kind;
}

static int bracket_close(LangLexer *lx, char c, const char *tok, int kind, LangError *err)
{
    char want = c == ')' ? '(' : c == ']' ? '[' : '{';
    if (lx->nparen == 0) {
        fail(err, LANG_SYNTAX_ERROR, off(lx, tok), "unmatched '%c'", c);
        return RAW_ERROR;
    }
    if (lx->parens[lx->nparen - 1] != want) {
        int line, col;
        lang_source_linecol(lx->src, lx->paren_pos[lx->nparen - 1], &line, &col);
        fail(err, LANG_SYNTAX_ERROR, off(lx, tok),
             "closing parenthesis '%c' does not match opening parenthesis '%c' on line %d",
             c, lx->parens[lx->nparen - 1], line);
        return RAW_ERROR;
    }
    lx->nparen--;
    return kind;
}

/*!re2c
    re2c:define:YYCTYPE = "unsigned char";
    re2c:define:YYCURSOR = "cur";
    re2c:define:YYMARKER = "mar";
    re2c:define:YYCTXMARKER = "ctx";
    re2c:yyfill:enable = 0;

    dig = [0-9];
    digits = dig ("_"? dig)*;
    idstart = [a-zA-Z_\x80-\xff];
    idchar = [a-zA-Z0-9_\x80-\xff];
    name = idstart idchar*;
    decint = [1-9] ("_"? dig)* | "0" ("_"? "0")*;
    radixint = "0" [xX] ("_"? [0-9a-fA-F])+ | "0" [oO] ("_"? [0-7])+ | "0" [bB] ("_"? [01])+;
    exponent = [eE] [+-]? digits;
    float = (digits? "." digits | digits ".") exponent? | digits exponent;
    sqchar = [^'\\\n\r\x00] | "\\" [^\x00];
    dqchar = [^"\\\n\r\x00] | "\\" [^\x00];
    strprefix = [rRuU]?;
    fprefix = [fF] [rR]? | [rR] [fF];
    newline = "\r\n" | "\n" | "\r";
*/

/* One raw token starting at lx->cur: a TK_* code or a RAW_* code. */
static int scan(LangLexer *lx, LangToken *t, LangError *err)
{
    const char *cur, *mar, *ctx;
    (void)ctx;
again:
    cur = lx->cur;
    t->z = cur;
    t->pos = off(lx, cur);
#define TOK(k) do { lx->cur = cur; t->n = (int)(cur - t->z); return (k); } while (0)
    /*!re2c
        [ \t\f]+               { lx->cur = cur; goto again; }
        "#" [^\n\r\x00]*        { lx->cur = cur; goto again; }
        "\\" newline            { lx->cur = cur; goto again; }
        "\\"                    { fail(err, LANG_SYNTAX_ERROR, t->pos,
                                       "unexpected character after line continuation character");
                                  return RAW_ERROR; }
        newline                 { TOK(RAW_NEWLINE); }
        "\x00"                  { if (cur - 1 == lx->lim) { lx->cur = cur - 1; t->n = 0; return RAW_EOF; }
                                  fail(err, LANG_SYNTAX_ERROR, t->pos, "source code cannot contain null bytes");
                                  return RAW_ERROR; }

        "def"       { TOK(TK_DEF); }       "return"   { TOK(TK_RETURN); }
        "if"        { TOK(TK_IF); }        "elif"     { TOK(TK_ELIF); }
        "else"      { TOK(TK_ELSE); }      "for"      { TOK(TK_FOR); }
        "in"        { TOK(TK_IN); }        "while"    { TOK(TK_WHILE); }
        "break"     { TOK(TK_BREAK); }     "continue" { TOK(TK_CONTINUE); }
        "pass"      { TOK(TK_PASS); }      "assert"   { TOK(TK_ASSERT); }
        "import"    { TOK(TK_IMPORT); }    "as"       { TOK(TK_AS); }
        "global"    { TOK(TK_GLOBAL); }    "nonlocal" { TOK(TK_NONLOCAL); }
        "lambda"    { TOK(TK_LAMBDA); }    "True"     { TOK(TK_TRUE); }
        "False"     { TOK(TK_FALSE); }     "None"     { TOK(TK_NONE); }
        "and"       { TOK(TK_AND); }       "or"       { TOK(TK_OR); }
        "not"       { TOK(TK_NOT); }       "is"       { TOK(TK_IS); }
        "is" [ \t]+ "not" / [^a-zA-Z0-9_\x80-\xff]  { TOK(TK_ISNOT); }
        "not" [ \t]+ "in" / [^a-zA-Z0-9_\x80-\xff]  { TOK(TK_NOTIN); }
        "raise"     { TOK(TK_RAISE); }
        "del"       { TOK(TK_DEL); }
        "try"       { TOK(TK_TRY); }       "except"   { TOK(TK_EXCEPT); }
        "finally"   { TOK(TK_FINALLY); }   "from"     { TOK(TK_FROM); }
        "with"      { TOK(TK_WITH); }
        "class"     { TOK(TK_CLASS); }
        "yield"     { TOK(TK_YIELD); }
        "async" | "await"
                    { lx->cur = cur;
                      fail(err, LANG_SYNTAX_ERROR, t->pos, "'%.*s' is not supported in tdl",
                           (int)(cur - t->z), t->z);
                      return RAW_ERROR; }
        name        { TOK(TK_NAME); }

        decint | radixint   { TOK(TK_INT); }
        float               { TOK(TK_FLOAT); }
        "0"+ [0-9_]* [0-9]  { fail(err, LANG_SYNTAX_ERROR, t->pos,
                                   "leading zeros in decimal integer literals are not permitted");
                              return RAW_ERROR; }
        (decint | radixint | float) idchar
                            { fail(err, LANG_SYNTAX_ERROR, t->pos, "invalid decimal literal");
                              return RAW_ERROR; }

        strprefix "'" sqchar* "'"   { TOK(TK_STRING); }
        strprefix "\"" dqchar* "\"" { TOK(TK_STRING); }
        strprefix "'''"             { lx->cur = cur; int k = scan_triple(lx, '\'', t->z, TK_STRING, err);
                                      t->n = (int)(lx->cur - t->z); return k; }
        strprefix "\"\"\""          { lx->cur = cur; int k = scan_triple(lx, '"', t->z, TK_STRING, err);
                                      t->n = (int)(lx->cur - t->z); return k; }
        strprefix ['"]              { return bad_string(lx, cur, t, err); }
        fprefix "'" sqchar* "'"     { TOK(TK_FSTRING); }
        fprefix "\"" dqchar* "\"" { TOK(TK_FSTRING); }
        fprefix "'''"               { lx->cur = cur; int k = scan_triple(lx, '\'', t->z, TK_FSTRING, err);
                                      t->n = (int)(lx->cur - t->z); return k; }
        fprefix "\"\"\""          { lx->cur = cur; int k = scan_triple(lx, '"', t->z, TK_FSTRING, err);
                                      t->n = (int)(lx->cur - t->z); return k; }
        fprefix ['"]                { return bad_string(lx, cur, t, err); }
        ([bB] [rR]? | [rR] [bB]) ['"]
                                    { fail(err, LANG_SYNTAX_ERROR, t->pos,
                                           "bytes literals are not supported in tdl");
                                      return RAW_ERROR; }

        "("   { lx->cur = cur; return bracket_open(lx, '(', t->z, (t->n = 1, TK_LPAREN), err); }
        "["   { lx->cur = cur; return bracket_open(lx, '[', t->z, (t->n = 1, TK_LBRACKET), err); }
        ")"   { lx->cur = cur; return bracket_close(lx, ')', t->z, (t->n = 1, TK_RPAREN), err); }
        "]"   { lx->cur = cur; return bracket_close(lx, ']', t->z, (t->n = 1, TK_RBRACKET), err); }
        "{"   { lx->cur = cur; return bracket_open(lx, '{', t->z, (t->n = 1, TK_LBRACE), err); }
        "}"   { lx->cur = cur; return bracket_close(lx, '}', t->z, (t->n = 1, TK_RBRACE), err); }

        ","   { TOK(TK_COMMA); }      ":"   { TOK(TK_COLON); }      ":="  { TOK(TK_WALRUS); }
        ";"   { TOK(TK_SEMI); }       "."   { TOK(TK_DOT); }
        "..." { TOK(TK_ELLIPSIS); }   "="   { TOK(TK_ASSIGN); }
        "+"   { TOK(TK_PLUS); }       "-"   { TOK(TK_MINUS); }
        "*"   { TOK(TK_STAR); }       "/"   { TOK(TK_SLASH); }
        "//"  { TOK(TK_DSLASH); }     "%"   { TOK(TK_PERCENT); }
        "**"  { TOK(TK_POW); }        "@"   { TOK(TK_AT); }
        "&"   { TOK(TK_AMP); }        "|"   { TOK(TK_PIPE); }
        "^"   { TOK(TK_CARET); }      "~"   { TOK(TK_TILDE); }
        "<<"  { TOK(TK_LSHIFT); }     ">>"  { TOK(TK_RSHIFT); }
        "<"   { TOK(TK_LT); }         "<="  { TOK(TK_LE); }
        ">"   { TOK(TK_GT); }         ">="  { TOK(TK_GE); }
        "=="  { TOK(TK_EQ); }         "!="  { TOK(TK_NE); }
        ("+" | "-" | "*" | "/" | "//" | "%" | "**" | "@" | "&" | "|" | "^" | "<<" | ">>") "="
              { TOK(TK_AUGASSIGN); }
        "->"  { fail(err, LANG_SYNTAX_ERROR, t->pos, "annotations are not supported in tdl");
                return RAW_ERROR; }

        [^]   { unsigned c = (unsigned char)*t->z;
                if (c >= 0x20 && c < 0x7f)
                    fail(err, LANG_SYNTAX_ERROR, t->pos, "invalid character '%c' (U+%04X)", c, c);
                else
                    fail(err, LANG_SYNTAX_ERROR, t->pos, "invalid character (byte 0x%02X)", c);
                return RAW_ERROR; }
    */
#undef TOK
}

/* Measures the indentation of the line at lx->cur. Returns -1 for a blank or comment-only line
 * (which is skipped), else the width (a tab goes to the next multiple of 8). */
static int measure_indent(LangLexer *lx)
{
    const char *p = lx->cur;
    int w = 0, alt = 0;
    for (;; p++) {
        if (*p == ' ') w++, alt++;
        else if (*p == '\t') w = (w / 8 + 1) * 8, alt++;
        else if (*p == '\f') w = alt = 0;
        else break;
    }
    lx->alt = alt;
    if (*p == '#') while (*p && *p != '\n' && *p != '\r') p++;
    if (*p == '\n' || *p == '\r') {
        if (p[0] == '\r' && p[1] == '\n') p++;
        lx->cur = p + 1;
        return -1;
    }
    lx->cur = p;
    if (p == lx->lim) return -1;
    return w;
}

/* The REPL rule: an open block is complete only once a blank line follows it. */
static bool ends_with_blank_line(LangLexer *lx)
{
    const char *p = lx->lim;
    const char *b = lx->src->text;
    while (p > b && (p[-1] == ' ' || p[-1] == '\t')) p--;
    if (p == b || (p[-1] != '\n' && p[-1] != '\r')) return false;
    p--;
    if (p > b && p[-1] == '\r' && p[0] == '\n') p--;
    while (p > b && (p[-1] == ' ' || p[-1] == '\t')) p--;
    return p == b || p[-1] == '\n' || p[-1] == '\r';
}

LangStatus lang_lexer_next(LangLexer *lx, LangToken *t, LangError *err)
{
    t->z = lx->cur;
    t->n = 0;
    t->pos = off(lx, lx->cur);
    t->kind = 0;
    if (lx->pending < 0) { lx->pending++; t->kind = TK_DEDENT; return LANG_OK; }
    if (lx->pending > 0) { lx->pending = 0; t->kind = TK_INDENT; return LANG_OK; }
    if (lx->done) return LANG_OK;
    if (lx->bad_utf8 >= 0) {
        /* CPython refuses the whole file before reading any of it */
        uint32_t at = (uint32_t)lx->bad_utf8;
        unsigned byte = (unsigned char)lx->src->text[at];
        lx->bad_utf8 = -1;
        lx->done = true;
        return fail(err, LANG_SYNTAX_ERROR, at, "Non-UTF-8 code starting with '\\x%02x' (%s): tdl source must be UTF-8",
                    byte, lx->utf8_why);
    }

    while (lx->at_line_start && lx->nparen == 0) {
        int w = measure_indent(lx);
        if (w < 0) {
            if (lx->cur >= lx->lim) break;
            continue;
        }
        lx->at_line_start = false;
        int top = lx->nindent ? lx->indents[lx->nindent - 1] : 0;
        int alttop = lx->nindent ? lx->altindents[lx->nindent - 1] : 0;
        t->pos = off(lx, lx->cur);
        t->z = lx->cur;
        /* CPython's rule: the widths with tab stops of 8 and of 1 must order the lines alike */
        if ((w == top) != (lx->alt == alttop) || (w > top) != (lx->alt > alttop))
            return fail(err, LANG_TAB_ERROR, t->pos, "inconsistent use of tabs and spaces in indentation");
        if (w > top) {
            if (lx->nindent == MAX_DEPTH)
                return fail(err, LANG_INDENTATION_ERROR, t->pos, "too many levels of indentation");
            lx->altindents[lx->nindent] = lx->alt;
            lx->indents[lx->nindent++] = w;
            t->kind = TK_INDENT;
            return LANG_OK;
        }
        if (w < top) {
            int n = 0;
            while (lx->nindent > 0 && lx->indents[lx->nindent - 1] > w) { lx->nindent--; n++; }
            if ((lx->nindent ? lx->indents[lx->nindent - 1] : 0) != w)
                return fail(err, LANG_INDENTATION_ERROR, t->pos,
                            "unindent does not match any outer indentation level");
            if ((lx->nindent ? lx->altindents[lx->nindent - 1] : 0) != lx->alt)
                return fail(err, LANG_TAB_ERROR, t->pos, "inconsistent use of tabs and spaces in indentation");
            lx->pending = -(n - 1);
            t->kind = TK_DEDENT;
            return LANG_OK;
        }
    }

    for (;;) {
        int k = scan(lx, t, err);
        switch (k) {
        case RAW_ERROR:
            return LANG_ERROR;
        case RAW_INCOMPLETE:
            return LANG_INCOMPLETE;
        case RAW_NEWLINE:
            if (lx->nparen > 0) continue;           /* implicit line joining */
            lx->at_line_start = true;
            if (!lx->line_has_tokens) return lang_lexer_next(lx, t, err);
            lx->line_has_tokens = false;
            t->kind = TK_NEWLINE;
            t->n = 0;
            return LANG_OK;
        case RAW_EOF:
            if (lx->nparen > 0) {
                char c = lx->parens[lx->nparen - 1];
                fail(err, LANG_SYNTAX_ERROR, lx->paren_pos[lx->nparen - 1], "'%c' was never closed", c);
                return LANG_INCOMPLETE;
            }
            if (lx->line_has_tokens) {
                lx->line_has_tokens = false;
                t->kind = TK_NEWLINE;
                return LANG_OK;
            }
            if (lx->interactive && lx->nindent > 0 && !ends_with_blank_line(lx)) {
                fail(err, LANG_SYNTAX_ERROR, t->pos, "unexpected end of input in a block");
                return LANG_INCOMPLETE;
            }
            if (lx->nindent > 0) {
                lx->pending = -(lx->nindent - 1);
                lx->nindent = 0;
                t->kind = TK_DEDENT;
                return LANG_OK;
            }
            lx->done = true;
            t->kind = 0;
            return LANG_OK;
        default:
            lx->line_has_tokens = true;
            t->kind = k;
            return LANG_OK;
        }
    }
}

const char *lang_token_name(int kind)
{
    switch (kind) {
    case 0: return "end of input";
    case TK_NEWLINE: return "NEWLINE";
    case TK_INDENT: return "INDENT";
    case TK_DEDENT: return "DEDENT";
    case TK_NAME: return "NAME";
    case TK_INT: return "INT";
    case TK_FLOAT: return "FLOAT";
    case TK_STRING: return "STRING";
    case TK_DEF: return "'def'";
    case TK_RETURN: return "'return'";
    case TK_IF: return "'if'";
    case TK_ELIF: return "'elif'";
    case TK_ELSE: return "'else'";
    case TK_FOR: return "'for'";
    case TK_IN: return "'in'";
    case TK_WHILE: return "'while'";
    case TK_BREAK: return "'break'";
    case TK_CONTINUE: return "'continue'";
    case TK_PASS: return "'pass'";
    case TK_ASSERT: return "'assert'";
    case TK_RAISE: return "'raise'";
    case TK_DEL: return "'del'";
    case TK_FSTRING: return "FSTRING";
    case TK_TRY: return "'try'";
    case TK_EXCEPT: return "'except'";
    case TK_FINALLY: return "'finally'";
    case TK_FROM: return "'from'";
    case TK_WITH: return "'with'";
    case TK_LBRACE: return "'{'";
    case TK_RBRACE: return "'}'";
    case TK_IMPORT: return "'import'";
    case TK_AS: return "'as'";
    case TK_GLOBAL: return "'global'";
    case TK_NONLOCAL: return "'nonlocal'";
    case TK_LAMBDA: return "'lambda'";
    case TK_TRUE: return "'True'";
    case TK_FALSE: return "'False'";
    case TK_NONE: return "'None'";
    case TK_AND: return "'and'";
    case TK_OR: return "'or'";
    case TK_NOT: return "'not'";
    case TK_IS: return "'is'";
    case TK_ISNOT: return "'is not'";
    case TK_NOTIN: return "'not in'";
    case TK_LPAREN: return "'('";
    case TK_RPAREN: return "')'";
    case TK_LBRACKET: return "'['";
    case TK_RBRACKET: return "']'";
    case TK_COMMA: return "','";
    case TK_COLON: return "':'";
    case TK_WALRUS: return "':='";
    case TK_CLASS: return "'class'";
    case TK_YIELD: return "'yield'";
    case TK_SEMI: return "';'";
    case TK_DOT: return "'.'";
    case TK_ELLIPSIS: return "'...'";
    case TK_ASSIGN: return "'='";
    case TK_AUGASSIGN: return "augmented assignment";
    case TK_PLUS: return "'+'";
    case TK_MINUS: return "'-'";
    case TK_STAR: return "'*'";
    case TK_SLASH: return "'/'";
    case TK_DSLASH: return "'//'";
    case TK_PERCENT: return "'%'";
    case TK_POW: return "'**'";
    case TK_AT: return "'@'";
    case TK_AMP: return "'&'";
    case TK_PIPE: return "'|'";
    case TK_CARET: return "'^'";
    case TK_TILDE: return "'~'";
    case TK_LSHIFT: return "'<<'";
    case TK_RSHIFT: return "'>>'";
    case TK_LT: return "'<'";
    case TK_LE: return "'<='";
    case TK_GT: return "'>'";
    case TK_GE: return "'>='";
    case TK_EQ: return "'=='";
    case TK_NE: return "'!='";
    default: return "token";
    }
}
