/* test_lexer.c — the tokenizer of lang/: every token kind, the layout rules (NEWLINE, INDENT,
 * DEDENT), the interactive rule and every lexical error with its exact message and line:col.
 *
 * Most tests run a table through lex_all(), which renders the whole token stream as one line of
 * text ("NAME(x) '=' INT(1) NEWLINE end"), so a case is one exact string compare. */
#include "tests.h"

#include "lang.h"
#include "grammar.h"

#include <stdio.h>
#include <string.h>

static const char *const status_names[] = {"OK", "ERROR", "INCOMPLETE", "NOMEM"};

/* Lexes text[0..len) to the end or the first error and renders the stream into out: each token's
 * printable name, with its text in parentheses for NAME/INT/FLOAT/STRING, "end" for end of input;
 * an error ends the stream with "! STATUS line:col message" (IndentationError says "!I"). */
static void lex_all(const char *text, size_t len, bool interactive, char *out, size_t cap)
{
    LangSource *src = lang_source_new("<test>", text, len);
    ck_assert_ptr_nonnull(src);
    LangLexer *lx = lang_lexer_new(src, interactive);
    ck_assert_ptr_nonnull(lx);
    size_t w = 0;
    out[0] = '\0';
    for (int i = 0; i < 500; i++) {
        LangToken t;
        LangError err;
        LangStatus st = lang_lexer_next(lx, &t, &err);
        const char *sep = w ? " " : "";
        if (st != LANG_OK) {
            int line, col;
            lang_source_linecol(src, err.pos, &line, &col);
            w += (size_t)snprintf(out + w, cap - w, "%s!%s%s %d:%d %s", sep,
                                  err.kind == LANG_INDENTATION_ERROR ? "I " : err.kind == LANG_TAB_ERROR ? "T " : "",
                                  status_names[st],
                                  line, col, err.msg);
            break;
        }
        ck_assert_ptr_eq(t.z, src->text + t.pos);      /* tokens point into the source */
        if (t.kind == 0) {
            w += (size_t)snprintf(out + w, cap - w, "%send", sep);
            break;
        }
        if (t.kind == TK_NAME || t.kind == TK_INT || t.kind == TK_FLOAT || t.kind == TK_STRING || t.kind == TK_FSTRING)
            w += (size_t)snprintf(out + w, cap - w, "%s%s(%.*s)", sep, lang_token_name(t.kind), t.n, t.z);
        else
            w += (size_t)snprintf(out + w, cap - w, "%s%s", sep, lang_token_name(t.kind));
        ck_assert_uint_lt(w, cap);
    }
    lang_lexer_free(lx);
    lang_source_release(src);
}

/* The first token of text: its kind and length must be exactly want_kind and the whole text. */
static void check_single(const char *text, int want_kind)
{
    LangSource *src = lang_source_new("<test>", text, strlen(text));
    LangLexer *lx = lang_lexer_new(src, false);
    LangToken t;
    LangError err;
    ck_assert_int_eq(lang_lexer_next(lx, &t, &err), LANG_OK);
    ck_assert_msg(t.kind == want_kind, "%s: kind %s, want %s", text, lang_token_name(t.kind),
                  lang_token_name(want_kind));
    ck_assert_int_eq(t.pos, 0);
    ck_assert_int_eq(t.n, (int)strlen(text));
    ck_assert_int_eq(lang_lexer_next(lx, &t, &err), LANG_OK);
    ck_assert_int_eq(t.kind, TK_NEWLINE);
    ck_assert_int_eq(lang_lexer_next(lx, &t, &err), LANG_OK);
    ck_assert_int_eq(t.kind, 0);
    lang_lexer_free(lx);
    lang_source_release(src);
}

typedef struct { const char *text; int kind; } SingleCase;
typedef struct { const char *src; const char *stream; } StreamCase;

#define N_CASES(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void check_stream(const StreamCase *c, bool interactive)
{
    char out[4096];
    lex_all(c->src, strlen(c->src), interactive, out, sizeof out);
    ck_assert_msg(strcmp(out, c->stream) == 0, "source:\n%s\ngot:  %s\nwant: %s", c->src, out, c->stream);
}

/* ---- every token kind ---- */

static const SingleCase keywords[] = {
    {"def", TK_DEF}, {"return", TK_RETURN}, {"if", TK_IF}, {"elif", TK_ELIF}, {"else", TK_ELSE},
    {"for", TK_FOR}, {"in", TK_IN}, {"while", TK_WHILE}, {"break", TK_BREAK},
    {"continue", TK_CONTINUE}, {"pass", TK_PASS}, {"assert", TK_ASSERT}, {"import", TK_IMPORT},
    {"as", TK_AS}, {"global", TK_GLOBAL}, {"nonlocal", TK_NONLOCAL}, {"lambda", TK_LAMBDA},
    {"True", TK_TRUE}, {"False", TK_FALSE}, {"None", TK_NONE}, {"and", TK_AND}, {"or", TK_OR},
    {"not", TK_NOT}, {"is", TK_IS},
};

START_TEST(keyword_tokens)
{
    check_single(keywords[_i].text, keywords[_i].kind);
}
END_TEST

static const SingleCase operators[] = {
    {"(", TK_LPAREN}, {"[", TK_LBRACKET}, {",", TK_COMMA}, {":", TK_COLON}, {";", TK_SEMI},
    {".", TK_DOT}, {"...", TK_ELLIPSIS}, {"=", TK_ASSIGN}, {"+", TK_PLUS}, {"-", TK_MINUS},
    {"*", TK_STAR}, {"/", TK_SLASH}, {"//", TK_DSLASH}, {"%", TK_PERCENT}, {"**", TK_POW},
    {"@", TK_AT}, {"&", TK_AMP}, {"|", TK_PIPE}, {"^", TK_CARET}, {"~", TK_TILDE},
    {"<<", TK_LSHIFT}, {">>", TK_RSHIFT}, {"<", TK_LT}, {"<=", TK_LE}, {">", TK_GT},
    {">=", TK_GE}, {"==", TK_EQ}, {"!=", TK_NE},
};

/* An opening bracket leaves the lexer inside brackets, so lex only the first token here. */
START_TEST(operator_tokens)
{
    const char *text = operators[_i].text;
    LangSource *src = lang_source_new("<test>", text, strlen(text));
    LangLexer *lx = lang_lexer_new(src, false);
    LangToken t;
    LangError err;
    ck_assert_int_eq(lang_lexer_next(lx, &t, &err), LANG_OK);
    ck_assert_msg(t.kind == operators[_i].kind, "%s: got %s", text, lang_token_name(t.kind));
    ck_assert_int_eq(t.n, (int)strlen(text));
    lang_lexer_free(lx);
    lang_source_release(src);
}
END_TEST

START_TEST(closing_brackets)
{
    static const StreamCase cases[] = {
        {"()", "'(' ')' NEWLINE end"},
        {"[]", "'[' ']' NEWLINE end"},
        {"([])", "'(' '[' ']' ')' NEWLINE end"},
    };
    for (int i = 0; i < N_CASES(cases); i++) check_stream(&cases[i], false);
}
END_TEST

static const char *const augassigns[] = {
    "+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "&=", "|=", "^=", "<<=", ">>=",
};

START_TEST(augassign_tokens)
{
    check_single(augassigns[_i], TK_AUGASSIGN);
}
END_TEST

/* Longest match: keywords are only whole words; non-ASCII letters are name characters. */
static const char *const names[] = {
    "x", "_", "__init__", "abc_DEF9", "define", "iffy", "classy", "True1", "None_", "is_",
    "notin", "import_x", "lambda_", "\xC3\xA9", "na\xC3\xAFve", "\xE5\x8F\x98\xE9\x87\x8F",
    "x\xC3\xA9y", "\xCE\xB1\xCE\xB2",
};

START_TEST(name_tokens)
{
    check_single(names[_i], TK_NAME);
}
END_TEST

static const char *const ints[] = {
    "0", "00", "0_0", "7", "42", "1_000", "1_2_3", "9223372036854775808", "0x1F", "0XfF",
    "0x_1f", "0o17", "0O7", "0o_7", "0b101", "0B1_0",
};

START_TEST(int_tokens)
{
    check_single(ints[_i], TK_INT);
}
END_TEST

static const char *const floats[] = {
    "1.5", ".5", "5.", "0.0", "00.5", "1e5", "1E5", "1e+5", "1e-5", "1_0.5e-3", "1_000.0_1",
    "5.e3", ".5e1", "0e0", "1e1_0",
};

START_TEST(float_tokens)
{
    check_single(floats[_i], TK_FLOAT);
}
END_TEST

static const char *const strings[] = {
    "'a'", "\"a\"", "''", "\"\"", "'it\\'s'", "\"say \\\"hi\\\"\"", "'\"'", "\"'\"",
    "'''a'b'''", "\"\"\"a\"b\"\"\"", "'''multi\nline'''", "\"\"\"\"\"\"", "'''a\\'''b'''",
    "'a\\\nb'", "r'\\d'", "R\"\\d\"", "u'x'", "r'\\''", "r'''\\d'''", "'\\x41\\u00e9'",
};

START_TEST(string_tokens)
{
    check_single(strings[_i], TK_STRING);
}
END_TEST

START_TEST(token_positions)
{
    const char *text = "x1 = f(a)\n  \xC3\xA9 += 0x1F";
    LangSource *src = lang_source_new("<test>", text, strlen(text));
    LangLexer *lx = lang_lexer_new(src, false);
    static const struct { int kind, line, col, n; } want[] = {
        {TK_NAME, 1, 1, 2}, {TK_ASSIGN, 1, 4, 1}, {TK_NAME, 1, 6, 1}, {TK_LPAREN, 1, 7, 1},
        {TK_NAME, 1, 8, 1}, {TK_RPAREN, 1, 9, 1}, {TK_NEWLINE, 1, 10, 0}, {TK_INDENT, 2, 3, 0},
        {TK_NAME, 2, 3, 2}, {TK_AUGASSIGN, 2, 5, 2}, {TK_INT, 2, 8, 4}, {TK_NEWLINE, 2, 12, 0},
        {TK_DEDENT, 2, 12, 0}, {0, 2, 12, 0},
    };
    for (int i = 0; i < N_CASES(want); i++) {
        LangToken t;
        LangError err;
        int line, col;
        ck_assert_int_eq(lang_lexer_next(lx, &t, &err), LANG_OK);
        lang_source_linecol(src, t.pos, &line, &col);
        ck_assert_msg(t.kind == want[i].kind, "token %d: %s", i, lang_token_name(t.kind));
        ck_assert_int_eq(line, want[i].line);
        ck_assert_int_eq(col, want[i].col);
        ck_assert_int_eq(t.n, want[i].n);
    }
    lang_lexer_free(lx);
    lang_source_release(src);
}
END_TEST

START_TEST(end_of_input_repeats)
{
    LangSource *src = lang_source_new("<test>", "x", 1);
    LangLexer *lx = lang_lexer_new(src, false);
    LangToken t;
    LangError err;
    ck_assert_int_eq(lang_lexer_next(lx, &t, &err), LANG_OK);
    ck_assert_int_eq(t.kind, TK_NAME);
    ck_assert_int_eq(lang_lexer_next(lx, &t, &err), LANG_OK);
    ck_assert_int_eq(t.kind, TK_NEWLINE);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(lang_lexer_next(lx, &t, &err), LANG_OK);
        ck_assert_int_eq(t.kind, 0);
    }
    lang_lexer_free(lx);
    lang_source_release(src);
}
END_TEST

START_TEST(token_names)
{
    ck_assert_str_eq(lang_token_name(0), "end of input");
    ck_assert_str_eq(lang_token_name(TK_NEWLINE), "NEWLINE");
    ck_assert_str_eq(lang_token_name(TK_INDENT), "INDENT");
    ck_assert_str_eq(lang_token_name(TK_DEDENT), "DEDENT");
    ck_assert_str_eq(lang_token_name(TK_NAME), "NAME");
    ck_assert_str_eq(lang_token_name(TK_LPAREN), "'('");
    ck_assert_str_eq(lang_token_name(TK_ISNOT), "'is not'");
    ck_assert_str_eq(lang_token_name(TK_NOTIN), "'not in'");
    ck_assert_str_eq(lang_token_name(TK_AUGASSIGN), "augmented assignment");
    ck_assert_str_eq(lang_token_name(TK_POW), "'**'");
}
END_TEST

/* ---- `is not` and `not in` ---- */

static const StreamCase two_word_ops[] = {
    {"a is not b", "NAME(a) 'is not' NAME(b) NEWLINE end"},
    {"a is  \tnot b", "NAME(a) 'is not' NAME(b) NEWLINE end"},
    {"a not in b", "NAME(a) 'not in' NAME(b) NEWLINE end"},
    {"a not   in(b)", "NAME(a) 'not in' '(' NAME(b) ')' NEWLINE end"},
    {"a is notable", "NAME(a) 'is' NAME(notable) NEWLINE end"},
    {"a not inx", "NAME(a) 'not' NAME(inx) NEWLINE end"},
    {"a is not_b", "NAME(a) 'is' NAME(not_b) NEWLINE end"},
    {"not a in b", "'not' NAME(a) 'in' NAME(b) NEWLINE end"},
    {"a is not", "NAME(a) 'is not' NEWLINE end"},
};

START_TEST(two_word_operators)
{
    check_stream(&two_word_ops[_i], false);
}
END_TEST

/* ---- layout ---- */

static const StreamCase layouts[] = {
    /* a simple line, with and without its final newline */
    {"x = 1\n", "NAME(x) '=' INT(1) NEWLINE end"},
    {"x = 1", "NAME(x) '=' INT(1) NEWLINE end"},
    {"", "end"},
    {"\n\n", "end"},
    {"# only a comment", "end"},
    /* one block */
    {"if a:\n    x\ny\n",
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE DEDENT NAME(y) NEWLINE end"},
    /* a block open at the end of input is closed by DEDENTs */
    {"if a:\n    x",
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE DEDENT end"},
    /* nested blocks, two dedents at once */
    {"if a:\n  if b:\n    x\ny\n",
     "'if' NAME(a) ':' NEWLINE INDENT 'if' NAME(b) ':' NEWLINE INDENT NAME(x) NEWLINE "
     "DEDENT DEDENT NAME(y) NEWLINE end"},
    /* three levels closed at the end of input */
    {"def f():\n if a:\n  while b:\n   x\n",
     "'def' NAME(f) '(' ')' ':' NEWLINE INDENT 'if' NAME(a) ':' NEWLINE INDENT 'while' NAME(b) "
     "':' NEWLINE INDENT NAME(x) NEWLINE DEDENT DEDENT DEDENT end"},
    /* dedent to a middle level */
    {"if a:\n  if b:\n    x\n  y\nz\n",
     "'if' NAME(a) ':' NEWLINE INDENT 'if' NAME(b) ':' NEWLINE INDENT NAME(x) NEWLINE DEDENT "
     "NAME(y) NEWLINE DEDENT NAME(z) NEWLINE end"},
    /* blank lines, comment-only lines at any indentation, and whitespace-only lines are skipped */
    {"if a:\n    x\n\n    # c\n  # d\n        \n# e\n    y\nz\n",
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE NAME(y) NEWLINE DEDENT NAME(z) NEWLINE end"},
    {"\n\n  # lead\nx\n", "NAME(x) NEWLINE end"},
    /* a trailing comment does not hide the NEWLINE */
    {"x # c\ny", "NAME(x) NEWLINE NAME(y) NEWLINE end"},
    /* no NEWLINE or INDENT inside brackets */
    {"f(a,\n      b\n)\nc",
     "NAME(f) '(' NAME(a) ',' NAME(b) ')' NEWLINE NAME(c) NEWLINE end"},
    {"x = [1,\n# comment\n\n  2]\n", "NAME(x) '=' '[' INT(1) ',' INT(2) ']' NEWLINE end"},
    {"if a:\n  f(1,\n2)\n  y\n",
     "'if' NAME(a) ':' NEWLINE INDENT NAME(f) '(' INT(1) ',' INT(2) ')' NEWLINE NAME(y) NEWLINE "
     "DEDENT end"},
    /* backslash continuation */
    {"x = 1 + \\\n    2\ny", "NAME(x) '=' INT(1) '+' INT(2) NEWLINE NAME(y) NEWLINE end"},
    {"x = 1 \\\r\n+ 2", "NAME(x) '=' INT(1) '+' INT(2) NEWLINE end"},
    /* tabs: a tab advances to the next multiple of 8 */
    {"if a:\n\tx\n\ty\n",
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE NAME(y) NEWLINE DEDENT end"},
    {"if a:\n\t x\n\t y\n",
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE NAME(y) NEWLINE DEDENT end"},
    /* lines whose order depends on the tab width are CPython's TabError */
    {"if a:\n        x\n\ty\n",
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE !T ERROR 3:2 inconsistent use of tabs and spaces in indentation"},
    {"if a:\n  \tx\n\ty\n",
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE !T ERROR 3:2 inconsistent use of tabs and spaces in indentation"},
    {"if a:\n\tx\n        y\n",
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE !T ERROR 3:9 inconsistent use of tabs and spaces in indentation"},
    /* CRLF and CR line ends */
    {"a\r\nif b:\r\n  c\r\n",
     "NAME(a) NEWLINE 'if' NAME(b) ':' NEWLINE INDENT NAME(c) NEWLINE DEDENT end"},
    {"a\rb\r", "NAME(a) NEWLINE NAME(b) NEWLINE end"},
    /* a UTF-8 byte order mark is not part of the program */
    {"\xEF\xBB\xBFx", "NAME(x) NEWLINE end"},
    /* semicolons are tokens, not line ends */
    {"a; b;", "NAME(a) ';' NAME(b) ';' NEWLINE end"},
    /* a triple-quoted string spans lines without NEWLINEs */
    {"x = '''a\nb'''\ny", "NAME(x) '=' STRING('''a\nb''') NEWLINE NAME(y) NEWLINE end"},
    /* an indented first line is INDENT (the parser rejects it) */
    {"  x\n", "INDENT NAME(x) NEWLINE DEDENT end"},
};

START_TEST(layout)
{
    check_stream(&layouts[_i], false);
}
END_TEST

START_TEST(operators_without_spaces)
{
    static const StreamCase cases[] = {
        {"a**-b", "NAME(a) '**' '-' NAME(b) NEWLINE end"},
        {"a//=b", "NAME(a) AUG NAME(b) NEWLINE end"},
        {"a<=b>=c==d!=e<f>g", "NAME(a) '<=' NAME(b) '>=' NAME(c) '==' NAME(d) '!=' NAME(e) '<' "
                              "NAME(f) '>' NAME(g) NEWLINE end"},
        {"a<<b>>c", "NAME(a) '<<' NAME(b) '>>' NAME(c) NEWLINE end"},
        {"x[...,1:]", "NAME(x) '[' '...' ',' INT(1) ':' ']' NEWLINE end"},
        {"1.5.real", "FLOAT(1.5) '.' NAME(real) NEWLINE end"},
        {"a.b", "NAME(a) '.' NAME(b) NEWLINE end"},
        {"f(x)", "NAME(f) '(' NAME(x) ')' NEWLINE end"},
        {"-1", "'-' INT(1) NEWLINE end"},
        {"'a''b'", "STRING('a') STRING('b') NEWLINE end"},
        {"r'a'rb", "STRING(r'a') NAME(rb) NEWLINE end"},
        {"f'{d[\"k\"]:>{w}}'Rf'a'", "FSTRING(f'{d[\"k\"]:>{w}}') FSTRING(Rf'a') NEWLINE end"},
        {"{1: 2}", "'{' INT(1) ':' INT(2) '}' NEWLINE end"},
    };
    for (int i = 0; i < N_CASES(cases); i++) {
        char out[1024];
        lex_all(cases[i].src, strlen(cases[i].src), false, out, sizeof out);
        /* "AUG" abbreviates the long name of the augmented assignment token */
        char want[1024];
        const char *s = cases[i].stream;
        const char *a = strstr(s, "AUG");
        if (a) snprintf(want, sizeof want, "%.*saugmented assignment%s", (int)(a - s), s, a + 3);
        else snprintf(want, sizeof want, "%s", s);
        ck_assert_str_eq(out, want);
    }
}
END_TEST

/* ---- errors ---- */

typedef struct {
    const char *src;
    int len;                /* -1: strlen(src); else the length (for embedded NULs) */
    const char *stream;     /* the tokens before the error, then the error */
} ErrorCase;

static const ErrorCase errors[] = {
    {"a $ b", -1, "NAME(a) !ERROR 1:3 invalid character '$' (U+0024)"},
    {"x = ?", -1, "NAME(x) '=' !ERROR 1:5 invalid character '?' (U+003F)"},
    {"`", -1, "!ERROR 1:1 invalid character '`' (U+0060)"},
    {"!x", -1, "!ERROR 1:1 invalid character '!' (U+0021)"},
    {"x\x01", -1, "NAME(x) !ERROR 1:2 invalid character (byte 0x01)"},
    {"\xC3\xA9 = 1 $", -1, "NAME(\xC3\xA9) '=' INT(1) !ERROR 1:7 invalid character '$' (U+0024)"},
    /* strings */
    {"x = 'abc", -1, "NAME(x) '=' !ERROR 1:5 unterminated string literal"},
    {"x = \"abc\ny\"", -1, "NAME(x) '=' !ERROR 1:5 unterminated string literal"},
    {"'abc\\'", -1, "!ERROR 1:1 unterminated string literal"},
    {"r'\\'", -1, "!ERROR 1:1 unterminated string literal"},
    {"x = '''abc\n\ndef", -1, "NAME(x) '=' !ERROR 1:5 unterminated triple-quoted string literal"},
    {"\"\"\"abc\"\"", -1, "!ERROR 1:1 unterminated triple-quoted string literal"},
    {"b\"x\"", -1, "!ERROR 1:1 bytes literals are not supported in tdl"},
    /* source must be UTF-8: the first bad byte, with CPython's reason */
    {"x = 1\nna\xffme = 2", -1, "!ERROR 2:3 Non-UTF-8 code starting with '\\xff' (invalid start byte): tdl source must be UTF-8"},
    {"s = 'a\xc3'", -1, "!ERROR 1:7 Non-UTF-8 code starting with '\\xc3' (invalid continuation byte): tdl source must be UTF-8"},
    {"s = '\xed\xa0\x80'", -1, "!ERROR 1:6 Non-UTF-8 code starting with '\\xed' (invalid continuation byte): tdl source must be UTF-8"},
    {"Rb'x'", -1, "!ERROR 1:1 bytes literals are not supported in tdl"},
    {"f'x", -1, "!ERROR 1:1 unterminated string literal"},
    /* numbers */
    {"007", -1, "!ERROR 1:1 leading zeros in decimal integer literals are not permitted"},
    {"x = 0_7", -1, "NAME(x) '=' !ERROR 1:5 leading zeros in decimal integer literals are not permitted"},
    {"1abc", -1, "!ERROR 1:1 invalid decimal literal"},
    {"x = 12if", -1, "NAME(x) '=' !ERROR 1:5 invalid decimal literal"},
    {"1_", -1, "!ERROR 1:1 invalid decimal literal"},
    {"1__0", -1, "!ERROR 1:1 invalid decimal literal"},
    {"1.5x", -1, "!ERROR 1:1 invalid decimal literal"},
    {"1e", -1, "!ERROR 1:1 invalid decimal literal"},
    {"0x", -1, "!ERROR 1:1 invalid decimal literal"},
    {"0b2", -1, "!ERROR 1:1 invalid decimal literal"},
    {"0x1g", -1, "!ERROR 1:1 invalid decimal literal"},
    /* brackets */
    {"a)", -1, "NAME(a) !ERROR 1:2 unmatched ')'"},
    {"x]", -1, "NAME(x) !ERROR 1:2 unmatched ']'"},
    {"f(a]", -1, "NAME(f) '(' NAME(a) "
                 "!ERROR 1:4 closing parenthesis ']' does not match opening parenthesis '(' on line 1"},
    {"[a,\n\n b)", -1, "'[' NAME(a) ',' NAME(b) "
                       "!ERROR 3:3 closing parenthesis ')' does not match opening parenthesis '[' on line 1"},
    {"([)]", -1, "'(' '[' !ERROR 1:3 closing parenthesis ')' does not match opening parenthesis '[' on line 1"},
    {"{}", -1, "'{' '}' NEWLINE end"},
    {"x}", -1, "NAME(x) !ERROR 1:2 unmatched '}'"},
    /* indentation */
    {"if a:\n    x\n  y\n", -1,
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE "
     "!I ERROR 3:3 unindent does not match any outer indentation level"},
    {"if a:\n  if b:\n      x\n    y\n", -1,
     "'if' NAME(a) ':' NEWLINE INDENT 'if' NAME(b) ':' NEWLINE INDENT NAME(x) NEWLINE "
     "!I ERROR 4:5 unindent does not match any outer indentation level"},
    /* null bytes */
    {"x = 1\0", 6, "NAME(x) '=' INT(1) !ERROR 1:6 source code cannot contain null bytes"},
    {"a\n\0b", 4, "NAME(a) NEWLINE !ERROR 2:1 source code cannot contain null bytes"},
    {"x = 'a\0b'", 9, "NAME(x) '=' !ERROR 1:7 source code cannot contain null bytes"},
    {"x = '''a\nb\0'''", 14, "NAME(x) '=' !ERROR 2:2 source code cannot contain null bytes"},
    {"# comment\0", 10, "!ERROR 1:10 source code cannot contain null bytes"},
    /* unsupported keywords */
    {"class A: pass", -1, "'class' NAME(A) ':' 'pass' NEWLINE end"},
    {"(x := 1)", -1, "'(' NAME(x) ':=' INT(1) ')' NEWLINE end"},
    {"del x", -1, "'del' NAME(x) NEWLINE end"},
    {"try:", -1, "'try' ':' NEWLINE end"},
    {"except", -1, "'except' NEWLINE end"},
    {"finally", -1, "'finally' NEWLINE end"},
    {"  raise x", -1, "INDENT 'raise' NAME(x) NEWLINE DEDENT end"},
    {"with f: pass", -1, "'with' NAME(f) ':' 'pass' NEWLINE end"},
    {"x = yield", -1, "NAME(x) '=' 'yield' NEWLINE end"},
    {"from a import b", -1, "'from' NAME(a) 'import' NAME(b) NEWLINE end"},
    {"async", -1, "!ERROR 1:1 'async' is not supported in tdl"},
    {"await x", -1, "!ERROR 1:1 'await' is not supported in tdl"},
    /* other */
    {"x = 1 \\ 2", -1, "NAME(x) '=' INT(1) !ERROR 1:7 unexpected character after line continuation character"},
    {"x \\", -1, "NAME(x) !ERROR 1:3 unexpected character after line continuation character"},
    {"def f() -> int: pass", -1, "'def' NAME(f) '(' ')' !ERROR 1:9 annotations are not supported in tdl"},
};

START_TEST(lexical_errors)
{
    const ErrorCase *c = &errors[_i];
    size_t len = c->len < 0 ? strlen(c->src) : (size_t)c->len;
    char out[1024];
    lex_all(c->src, len, false, out, sizeof out);
    ck_assert_str_eq(out, c->stream);
}
END_TEST

START_TEST(too_many_open_brackets)
{
    char text[256];
    memset(text, '(', 201);
    text[201] = '\0';
    char out[4096];
    lex_all(text, strlen(text), false, out, sizeof out);
    const char *tail = strstr(out, "!");
    ck_assert_ptr_nonnull(tail);
    ck_assert_str_eq(tail, "!ERROR 1:201 too many nested parentheses");
}
END_TEST

/* ---- end of input ---- */

typedef struct { const char *src; bool interactive; const char *stream; } EofCase;

static const EofCase eofs[] = {
    /* an open bracket is incomplete in both modes; the error names the innermost bracket */
    {"f(1,", false, "NAME(f) '(' INT(1) ',' !INCOMPLETE 1:2 '(' was never closed"},
    {"f(1,", true, "NAME(f) '(' INT(1) ',' !INCOMPLETE 1:2 '(' was never closed"},
    {"x = [1,\n (2", true, "NAME(x) '=' '[' INT(1) ',' '(' INT(2) !INCOMPLETE 2:2 '(' was never closed"},
    {"x = [1,\n", false, "NAME(x) '=' '[' INT(1) ',' !INCOMPLETE 1:5 '[' was never closed"},
    /* an unterminated triple-quoted string is incomplete only for a REPL */
    {"x = '''a\n", true, "NAME(x) '=' !INCOMPLETE 1:5 unterminated triple-quoted string literal"},
    {"x = '''a\n", false, "NAME(x) '=' !ERROR 1:5 unterminated triple-quoted string literal"},
    /* the REPL rule: an open block needs a blank line after it */
    {"if a:\n  x", true,
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE !INCOMPLETE 2:4 unexpected end of input in a block"},
    {"if a:\n  x\n", true,
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE !INCOMPLETE 3:1 unexpected end of input in a block"},
    {"if a:\n  x\n  ", true,
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE !INCOMPLETE 3:3 unexpected end of input in a block"},
    {"if a:\n  x\n\n", true, "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE DEDENT end"},
    {"if a:\n  x\n  \n", true, "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE DEDENT end"},
    {"if a:\r\n  x\r\n\r\n", true, "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE DEDENT end"},
    {"if a:\n  if b:\n    x\n\n", true,
     "'if' NAME(a) ':' NEWLINE INDENT 'if' NAME(b) ':' NEWLINE INDENT NAME(x) NEWLINE DEDENT DEDENT end"},
    /* a block closed by a dedent is complete */
    {"if a:\n  x\ny\n", true,
     "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE DEDENT NAME(y) NEWLINE end"},
    /* without the REPL rule the block simply ends */
    {"if a:\n  x", false, "'if' NAME(a) ':' NEWLINE INDENT NAME(x) NEWLINE DEDENT end"},
    /* a simple statement is complete at once */
    {"x = 1", true, "NAME(x) '=' INT(1) NEWLINE end"},
    /* brackets closed on a later line */
    {"x = (1 +\n2)", true, "NAME(x) '=' '(' INT(1) '+' INT(2) ')' NEWLINE end"},
};

START_TEST(end_of_input)
{
    const EofCase *c = &eofs[_i];
    char out[1024];
    lex_all(c->src, strlen(c->src), c->interactive, out, sizeof out);
    ck_assert_msg(strcmp(out, c->stream) == 0, "source (%s):\n%s\ngot:  %s\nwant: %s",
                  c->interactive ? "interactive" : "batch", c->src, out, c->stream);
}
END_TEST

Suite *lexer_suite(void)
{
    Suite *s = suite_create("lexer");
    TCase *tc = tcase_create("tokens");
    tcase_add_loop_test(tc, keyword_tokens, 0, N_CASES(keywords));
    tcase_add_loop_test(tc, operator_tokens, 0, N_CASES(operators));
    tcase_add_test(tc, closing_brackets);
    tcase_add_loop_test(tc, augassign_tokens, 0, N_CASES(augassigns));
    tcase_add_loop_test(tc, name_tokens, 0, N_CASES(names));
    tcase_add_loop_test(tc, int_tokens, 0, N_CASES(ints));
    tcase_add_loop_test(tc, float_tokens, 0, N_CASES(floats));
    tcase_add_loop_test(tc, string_tokens, 0, N_CASES(strings));
    tcase_add_loop_test(tc, two_word_operators, 0, N_CASES(two_word_ops));
    tcase_add_test(tc, operators_without_spaces);
    tcase_add_test(tc, token_positions);
    tcase_add_test(tc, end_of_input_repeats);
    tcase_add_test(tc, token_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("layout");
    tcase_add_loop_test(tc, layout, 0, N_CASES(layouts));
    tcase_add_loop_test(tc, end_of_input, 0, N_CASES(eofs));
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_loop_test(tc, lexical_errors, 0, N_CASES(errors));
    tcase_add_test(tc, too_many_open_brackets);
    suite_add_tcase(s, tc);
    return s;
}
