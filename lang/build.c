/* build.c — the parser driver and the tree builders that grammar.y's actions call.
 *
 * Builders allocate in the parse's arena and never fail visibly: on out-of-memory they set
 * p->nomem and return a static placeholder node, so an action never has to check. Literal
 * conversion (integers with overflow checks, string escapes) happens here, with errors reported
 * at the literal's position. Depends on nothing outside lang/. */
#include "parse_int.h"
#include "mem.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const lang_op_text[OP__COUNT] = {
    [OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*", [OP_DIV] = "/", [OP_FLOORDIV] = "//",
    [OP_MOD] = "%", [OP_POW] = "**", [OP_MATMUL] = "@", [OP_BITAND] = "&", [OP_BITOR] = "|",
    [OP_BITXOR] = "^", [OP_LSHIFT] = "<<", [OP_RSHIFT] = ">>", [OP_NEG] = "-", [OP_POS] = "+",
    [OP_INVERT] = "~", [OP_LT] = "<", [OP_LE] = "<=", [OP_GT] = ">", [OP_GE] = ">=",
    [OP_EQ] = "==", [OP_NE] = "!=", [OP_IN] = "in", [OP_NOTIN] = "not in", [OP_IS] = "is",
    [OP_ISNOT] = "is not",
};

static Node placeholder;

void lang_parser_error(LangParser *p, LangErrorKind kind, uint32_t pos, const char *fmt, ...)
{
    if (p->failed) return;          /* the first error is the one reported */
    va_list ap;
    va_start(ap, fmt);
    p->failed = true;
    p->err.kind = kind;
    p->err.pos = pos;
    vsnprintf(p->err.msg, sizeof p->err.msg, fmt, ap);
    va_end(ap);
}

void lang_parser_syntax_error(LangParser *p, int major, LangToken *tok)
{
    if (p->failed) return;
    uint32_t pos = tok ? tok->pos : (uint32_t)p->src->len;
    uint32_t ppos;
    int paren = lang_lexer_open_paren(p->lx, &ppos);
    if (paren) {
        /* An error on a later line than an unclosed bracket is most likely that bracket. */
        int pl, pc, tl, tc;
        lang_source_linecol(p->src, ppos, &pl, &pc);
        lang_source_linecol(p->src, pos, &tl, &tc);
        if (tl > pl) {
            lang_parser_error(p, LANG_SYNTAX_ERROR, ppos, "'%c' was never closed", paren);
            return;
        }
    }
    if (major == TK_INDENT) {
        lang_parser_error(p, LANG_INDENTATION_ERROR, pos, "unexpected indent");
        return;
    }
    /* Input that ends early is incomplete (a REPL reads on); the message is for a script. */
    p->incomplete = major == 0;
    if (p->prev.kind == TK_NEWLINE && p->prev2.kind == TK_COLON) {
        int line, col;
        lang_source_linecol(p->src, p->prev2.pos, &line, &col);
        lang_parser_error(p, LANG_INDENTATION_ERROR, pos,
                          "expected an indented block after ':' on line %d", line);
        return;
    }
    if (major == 0) {
        lang_parser_error(p, LANG_SYNTAX_ERROR, pos, "unexpected end of input");
        return;
    }
    if (major == TK_DEDENT) {
        lang_parser_error(p, LANG_SYNTAX_ERROR, pos, "invalid syntax: unexpected end of block");
        return;
    }
    if (major == TK_NEWLINE) {
        lang_parser_error(p, LANG_SYNTAX_ERROR, pos, "invalid syntax: unexpected end of line");
        return;
    }
    if (major == TK_NAME || major == TK_INT || major == TK_FLOAT || major == TK_STRING)
        lang_parser_error(p, LANG_SYNTAX_ERROR, pos, "invalid syntax: unexpected %s '%.*s'",
                          major == TK_NAME ? "name" : major == TK_STRING ? "string" : "number",
                          tok->n > 40 ? 40 : tok->n, tok->z);
    else
        lang_parser_error(p, LANG_SYNTAX_ERROR, pos, "invalid syntax: unexpected %s",
                          lang_token_name(major));
}

void lang_parser_too_deep(LangParser *p)
{
    lang_parser_error(p, LANG_SYNTAX_ERROR, p->prev.pos, "too many nested expressions or blocks");
}

/* ---- lists ---- */

NodeList lang_list1(Node *n)
{
    NodeList l = {n, n};
    return l;
}

NodeList lang_list_add(NodeList l, Node *n)
{
    if (!l.head) return lang_list1(n);
    if (n == &placeholder || l.tail == &placeholder) return l;
    l.tail->next = n;
    l.tail = n;
    return l;
}

NodeList lang_list_cat(NodeList a, NodeList b)
{
    if (!a.head) return b;
    if (!b.head) return a;
    if (a.tail == &placeholder || b.head == &placeholder) return a;
    a.tail->next = b.head;
    a.tail = b.tail;
    return a;
}

static int list_len(Node *n)
{
    int k = 0;
    for (; n; n = n->next) k++;
    return k;
}

/* ---- nodes ---- */

#define INT_TOO_LARGE "integer literal too large: tdl ints are 64-bit (at most 9223372036854775807)"

/* Every builder calls this for each child it links under n (child: a chain linked by next, or
 * NULL). It keeps n->height above its children's and refuses, as the nodes are made (so no walker
 * of a whole tree is needed, nor could one recurse through it safely):
 *  - a tree deeper than LANG_MAX_DEPTH, at the node that crosses the limit;
 *  - 9223372036854775808 as anything but the operand of unary minus (lang_unary takes that one
 *    before it becomes anyone's child). */
static void grow(LangParser *p, Node *n, const Node *child)
{
    if (n == &placeholder) return;
    for (; child; child = child->next) {
        if (child->kind == N_INT && child->count == 1)
            lang_parser_error(p, LANG_SYNTAX_ERROR, child->pos, INT_TOO_LARGE);
        /* *x only unpacks into a display, a call, or (as a target) a tuple or list */
        if (child->kind == N_STARRED && n->kind != N_TUPLE && n->kind != N_LIST && n->kind != N_SET
            && n->kind != N_CALL && !(n->kind == N_DICT && child->op == 2))
            lang_parser_error(p, LANG_SYNTAX_ERROR, child->pos, "can't use starred expression here");
        if (child->height >= n->height) n->height = child->height + 1;
    }
    if (n->height > LANG_MAX_DEPTH)
        lang_parser_error(p, LANG_SYNTAX_ERROR, n->pos,
                          "expression too deeply nested or too long a chain of operators, calls or "
                          "subscripts (more than %d levels)", LANG_MAX_DEPTH);
}

Node *lang_node(LangParser *p, NodeKind k, uint32_t pos)
{
    Node *n = lang_arena_alloc(p->arena, sizeof *n);
    if (!n) {
        p->nomem = true;
        return &placeholder;
    }
    n->kind = (uint8_t)k;
    n->pos = pos;
    n->builtin = -1;
    n->height = 1;
    return n;
}

Node *lang_node1(LangParser *p, NodeKind k, uint32_t pos, Node *a)
{
    Node *n = lang_node(p, k, pos);
    if (n != &placeholder) n->a = a;
    grow(p, n, a);
    return n;
}

Node *lang_node2(LangParser *p, NodeKind k, uint32_t pos, Node *a, Node *b)
{
    Node *n = lang_node1(p, k, pos, a);
    if (n != &placeholder) n->b = b;
    grow(p, n, b);
    return n;
}

Node *lang_node3(LangParser *p, NodeKind k, uint32_t pos, Node *a, Node *b, Node *c)
{
    Node *n = lang_node2(p, k, pos, a, b);
    if (n != &placeholder) n->c = c;
    grow(p, n, c);
    return n;
}

Node *lang_seq(LangParser *p, NodeKind k, uint32_t pos, NodeList items)
{
    Node *n = lang_node1(p, k, pos, items.head);
    if (n != &placeholder) n->count = list_len(items.head);
    return n;
}

static Node *named(LangParser *p, NodeKind k, const LangToken *t)
{
    Node *n = lang_node(p, k, t->pos);
    if (n == &placeholder) return n;
    n->str = lang_arena_strndup(p->arena, t->z, (size_t)t->n);
    n->len = (size_t)t->n;
    if (!n->str) {
        p->nomem = true;
        n->str = "";
        n->len = 0;
    }
    return n;
}

Node *lang_name(LangParser *p, const LangToken *t) { return named(p, N_NAME, t); }

Node *lang_dotted(LangParser *p, Node *left, const LangToken *t)
{
    if (left == &placeholder) return left;
    size_t n = left->len + 1 + (size_t)t->n;
    char *s = lang_arena_alloc(p->arena, n + 1);
    if (!s) {
        p->nomem = true;
        return left;
    }
    memcpy(s, left->str, left->len);
    s[left->len] = '.';
    memcpy(s + left->len + 1, t->z, (size_t)t->n);
    left->str = s;
    left->len = n;
    return left;
}

/* ---- literals ---- */

Node *lang_int(LangParser *p, const LangToken *t)
{
    Node *n = lang_node(p, N_INT, t->pos);
    if (n == &placeholder) return n;
    const char *s = t->z;
    int base = 10;
    int i = 0;
    if (t->n > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, i = 2;
    else if (t->n > 1 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) base = 8, i = 2;
    else if (t->n > 1 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) base = 2, i = 2;
    uint64_t v = 0;
    for (; i < t->n; i++) {
        int c = s[i];
        if (c == '_') continue;
        int d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) goto overflow;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    /* 9223372036854775808 is allowed only as the operand of unary minus; see lang_unary. */
    if (v > (uint64_t)INT64_MAX + 1) goto overflow;
    n->ival = (int64_t)(v - (v > (uint64_t)INT64_MAX));
    n->count = v > (uint64_t)INT64_MAX;   /* marks the one literal that is -INT64_MIN */
    return n;
overflow:
    lang_parser_error(p, LANG_SYNTAX_ERROR, t->pos, INT_TOO_LARGE);
    return n;
}

Node *lang_float(LangParser *p, const LangToken *t)
{
    Node *n = lang_node(p, N_FLOAT, t->pos);
    if (n == &placeholder) return n;
    char buf[128];
    int k = 0;
    for (int i = 0; i < t->n && k < (int)sizeof buf - 1; i++)
        if (t->z[i] != '_') buf[k++] = t->z[i];
    buf[k] = '\0';
    n->fval = strtod(buf, NULL);     /* overflow gives inf, as in Python */
    return n;
}

static size_t put_utf8(char *out, uint32_t c)
{
    if (c < 0x80) { out[0] = (char)c; return 1; }
    if (c < 0x800) { out[0] = (char)(0xC0 | c >> 6); out[1] = (char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | c >> 12); out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | c >> 18); out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3F)); out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
    return -1;
}

/* Decodes the text s[0..n) of a literal (escapes, unless raw; source newlines become '\n') into
 * out, which has room for 4 * n bytes; pos0 is the source offset of s. Returns the bytes written
 * (an error is recorded in p at the bad escape). */
static size_t decode_text(LangParser *p, const char *s, int n, bool raw, uint32_t pos0, char *out)
{
    size_t w = 0;
    for (int i = 0; i < n; i++) {
        char c = s[i];
        if (c != '\\' || raw) {
            if (c == '\\' && raw && i + 1 < n) {    /* a raw string keeps the backslash and the next char */
                out[w++] = c;
                out[w++] = s[++i];
                continue;
            }
            if (c == '\r') {                        /* newlines in the source are '\n' */
                out[w++] = '\n';
                if (i + 1 < n && s[i + 1] == '\n') i++;
                continue;
            }
            out[w++] = c;
            continue;
        }
        uint32_t epos = pos0 + (uint32_t)i;
        if (i + 1 >= n) {       /* a lone backslash at the end of an f-string's text piece */
            out[w++] = '\\';
            break;
        }
        char e = s[++i];
        switch (e) {
        case '\n': break;
        case '\r': if (i + 1 < n && s[i + 1] == '\n') i++; break;
        case '\\': out[w++] = '\\'; break;
        case '\'': out[w++] = '\''; break;
        case '"': out[w++] = '"'; break;
        case 'a': out[w++] = '\a'; break;
        case 'b': out[w++] = '\b'; break;
        case 'f': out[w++] = '\f'; break;
        case 'n': out[w++] = '\n'; break;
        case 'r': out[w++] = '\r'; break;
        case 't': out[w++] = '\t'; break;
        case 'v': out[w++] = '\v'; break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            uint32_t v = 0;
            int k = 0;
            while (k < 3 && i < n && s[i] >= '0' && s[i] <= '7') v = v * 8 + (uint32_t)(s[i++] - '0'), k++;
            i--;
            w += put_utf8(out + w, v);
            break;
        }
        case 'x': case 'u': case 'U': {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t v = 0;
            for (int k = 0; k < digits; k++) {
                int h = i + 1 < n ? hexval(s[i + 1]) : -1;
                if (h < 0) {
                    lang_parser_error(p, LANG_SYNTAX_ERROR, epos,
                                      "truncated \\%cXX escape in string literal", e);
                    return w;
                }
                v = v * 16 + (uint32_t)h;
                i++;
            }
            if (v > 0x10FFFF) {
                lang_parser_error(p, LANG_SYNTAX_ERROR, epos, "illegal Unicode character in string literal");
                return w;
            }
            w += put_utf8(out + w, v);
            break;
        }
        default:                                    /* unknown escapes stay as written */
            out[w++] = '\\';
            out[w++] = e;
        }
    }
    return w;
}

/* The body of a string token: *raw, *fmt from its prefix; s, n without prefix and quotes. */
static void literal_body(const LangToken *t, const char **s, int *n, bool *raw, bool *fmt)
{
    const char *z = t->z;
    int k = t->n;
    *raw = *fmt = false;
    while (k > 0 && (*z == 'r' || *z == 'R' || *z == 'u' || *z == 'U' || *z == 'f' || *z == 'F')) {
        *raw |= (*z == 'r' || *z == 'R');
        *fmt |= (*z == 'f' || *z == 'F');
        z++, k--;
    }
    int q = (k >= 6 && z[1] == z[0] && z[2] == z[0]) ? 3 : 1;
    *s = z + q;
    *n = k - 2 * q;
}

/* A new N_STR of the decoded text s[0..n). */
static Node *text_node(LangParser *p, const char *s, int n, bool raw, uint32_t pos)
{
    Node *node = lang_node(p, N_STR, pos);
    char *out = lang_arena_alloc(p->arena, (size_t)n * 4 + 1);
    if (!out || node == &placeholder) {
        p->nomem = true;
        return node;
    }
    size_t w = decode_text(p, s, n, raw, pos, out);
    out[w] = '\0';
    node->str = out;
    node->len = w;
    return node;
}

/* Decodes one literal (prefix, quotes, escapes) and appends it to prev's text, or starts a new
 * N_STR node. After an f-string (prev an N_FSTRING) it becomes one more text part. */
Node *lang_string(LangParser *p, Node *prev, const LangToken *t)
{
    const char *s;
    int n;
    bool raw, fmt;
    literal_body(t, &s, &n, &raw, &fmt);
    uint32_t pos0 = t->pos + (uint32_t)(s - t->z);
    if (prev && prev->kind == N_FSTRING) {
        Node *part = text_node(p, s, n, raw, pos0);
        if (prev == &placeholder || part == &placeholder) return prev;
        Node *last = prev->a;
        while (last && last->next) last = last->next;
        if (last) last->next = part;
        else prev->a = part;
        grow(p, prev, part);
        return prev;
    }
    size_t plen = prev ? prev->len : 0;
    char *out = lang_arena_alloc(p->arena, plen + (size_t)n * 4 + 1);
    Node *node = prev ? prev : lang_node(p, N_STR, t->pos);
    if (!out || node == &placeholder) {
        p->nomem = true;
        return node;
    }
    if (prev) memcpy(out, prev->str, plen);
    size_t w = plen + decode_text(p, s, n, raw, pos0, out + plen);
    out[w] = '\0';
    node->str = out;
    node->len = w;
    return node;
}

/* ---- f-strings ---- */

#define FSTRING_MAX_NEST 8

/* Parses source[s, e), the expression of an f-string field, as `(expr)` into p's arena, with the
 * positions of the real source: a copy of the source up to e, with '(' before s and ')' at e, is
 * lexed from s - 1. */
static Node *field_expr(LangParser *p, uint32_t s, uint32_t e)
{
    if (p->fdepth >= FSTRING_MAX_NEST) {
        lang_parser_error(p, LANG_SYNTAX_ERROR, s, "f-string: expressions nested too deeply");
        return &placeholder;
    }
    bool blank = true;
    for (uint32_t i = s; i < e && blank; i++) blank = strchr(" \t\r\n\f", p->src->text[i]) != NULL;
    if (blank) {
        lang_parser_error(p, LANG_SYNTAX_ERROR, s, "f-string: empty expression not allowed");
        return &placeholder;
    }
    char *text = mem_malloc((size_t)e + 2);
    if (!text) {
        p->nomem = true;
        return &placeholder;
    }
    memcpy(text, p->src->text, e);
    text[s - 1] = '(';
    text[e] = ')';
    text[e + 1] = '\0';
    LangSource *src = lang_source_new(p->src->name, text, (size_t)e + 1);
    mem_free(text);
    LangParser q = {0};
    q.src = src;
    q.arena = p->arena;
    q.fdepth = p->fdepth + 1;
    q.lx = src ? lang_lexer_new_at(src, s - 1) : NULL;
    void *parser = q.lx ? LangParseAlloc(mem_malloc, &q) : NULL;
    Node *res = &placeholder;
    if (!parser) {
        p->nomem = true;
        goto out;
    }
    for (;;) {
        LangToken t;
        LangError err;
        if (lang_lexer_next(q.lx, &t, &err) != LANG_OK) {
            lang_parser_error(p, err.kind, err.pos, "f-string: %s", err.msg);
            goto out;
        }
        LangParse(parser, t.kind, t);
        if (q.nomem) {
            p->nomem = true;
            goto out;
        }
        if (q.failed) {
            /* at the ')' this adds, the field's expression is what is incomplete */
            if (q.err.pos >= e) lang_parser_error(p, LANG_SYNTAX_ERROR, q.err.pos, "f-string: invalid syntax");
            else lang_parser_error(p, q.err.kind, q.err.pos, "f-string: %s", q.err.msg);
            goto out;
        }
        if (t.kind == 0) break;
        q.prev2 = q.prev;
        q.prev = t;
    }
    if (!q.body || q.body->next || q.body->kind != N_EXPR_STMT) {
        lang_parser_error(p, LANG_SYNTAX_ERROR, s, "f-string: expecting '}'");
        goto out;
    }
    res = q.body->a;
out:
    if (parser) LangParseFree(parser, mem_free);
    lang_lexer_free(q.lx);
    lang_source_release(src);
    return res;
}

/* Appends node to the chain *head / *tail. */
static void chain_add(Node **head, Node **tail, Node *n)
{
    if (n == &placeholder) return;
    if (*tail) (*tail)->next = n;
    else *head = n;
    *tail = n;
}

/* Splits the f-string text z[0..n) (at source offset pos0) into text parts and fields, appending
 * them to *head / *tail. in_spec: z is a format spec (no escapes to decode; `}` ends nothing). */
static void fstring_parts(LangParser *p, const char *z, int n, bool raw, uint32_t pos0, bool in_spec,
                          Node **head, Node **tail)
{
    int i = 0;
    char *buf = lang_arena_alloc(p->arena, (size_t)n + 1);      /* literal text with {{ }} undoubled */
    if (!buf) {
        p->nomem = true;
        return;
    }
    int blen = 0;
    uint32_t bpos = pos0;
    while (i <= n && !p->failed) {
        bool end = i == n;
        char c = end ? 0 : z[i];
        if (!end && (c == '{' || c == '}') && i + 1 < n && z[i + 1] == c && !in_spec) {
            buf[blen++] = c;
            i += 2;
            continue;
        }
        if (!end && c == '}' && !in_spec) {
            lang_parser_error(p, LANG_SYNTAX_ERROR, pos0 + (uint32_t)i, "f-string: single '}' is not allowed");
            return;
        }
        if (!end && c != '{') {
            if (blen == 0) bpos = pos0 + (uint32_t)i;
            buf[blen++] = c;
            i++;
            continue;
        }
        if (blen) {     /* flush the text before the field (or the end) */
            Node *t = in_spec ? lang_node(p, N_STR, bpos) : text_node(p, buf, blen, raw, bpos);
            if (in_spec && t != &placeholder) {
                char *cp = lang_arena_strndup(p->arena, buf, (size_t)blen);
                if (!cp) p->nomem = true;
                t->str = cp ? cp : "";
                t->len = cp ? (size_t)blen : 0;
            }
            chain_add(head, tail, t);
            blen = 0;
        }
        if (end) break;
        /* a field: find where its expression ends (at depth 0: '!', ':', '=' or '}') */
        int j = i + 1, depth = 0;
        char quote = 0;
        int expr_end = -1, conv = 0, spec_start = -1, spec_end = -1;
        bool debug = false;
        for (; j < n; j++) {
            char d = z[j];
            if (quote) {
                if (d == quote) quote = 0;
                continue;
            }
            if (d == '\'' || d == '"') quote = d;
            else if (d == '(' || d == '[' || d == '{') depth++;
            else if ((d == ')' || d == ']' || d == '}') && depth > 0) depth--;
            else if (depth == 0 && (d == '}' || d == ':' || (d == '!' && z[j + 1] != '='))) break;
            else if (depth == 0 && d == '=' && j + 1 < n && z[j + 1] != '=' && !strchr("=!<>", z[j - 1])) {
                debug = true;
                break;
            }
        }
        expr_end = j;
        if (j < n && debug) {
            j++;
            while (j < n && z[j] == ' ') j++;
        }
        if (j < n && z[j] == '!') {
            if (j + 1 >= n || !strchr("rsa", z[j + 1])) {
                lang_parser_error(p, LANG_SYNTAX_ERROR, pos0 + (uint32_t)j,
                                  "f-string: invalid conversion character: expected 's', 'r', or 'a'");
                return;
            }
            conv = z[j + 1];
            j += 2;
        }
        if (j < n && z[j] == ':') {
            spec_start = ++j;
            int sd = 0;
            for (; j < n; j++) {
                if (z[j] == '{') sd++;
                else if (z[j] == '}' && sd-- == 0) break;
            }
            spec_end = j;
        }
        if (j >= n || z[j] != '}') {
            lang_parser_error(p, LANG_SYNTAX_ERROR, pos0 + (uint32_t)i, "f-string: expecting '}'");
            return;
        }
        if (debug) {    /* f'{x=}': the expression's text, then its repr unless a conversion or spec says */
            Node *t = lang_node(p, N_STR, pos0 + (uint32_t)i + 1);
            int tl = expr_end + 1 - (i + 1);       /* up to '=' and the spaces after it */
            while (i + 1 + tl < n && z[i + 1 + tl] == ' ') tl++;
            char *cp = lang_arena_strndup(p->arena, z + i + 1, (size_t)tl);
            if (t != &placeholder) {
                if (!cp) p->nomem = true;
                t->str = cp ? cp : "";
                t->len = cp ? (size_t)tl : 0;
            }
            chain_add(head, tail, t);
            if (!conv && spec_start < 0) conv = 'r';
        }
        Node *e = field_expr(p, pos0 + (uint32_t)i + 1, pos0 + (uint32_t)expr_end);
        Node *spec = NULL;
        if (spec_start >= 0) {
            Node *sh = NULL, *st = NULL;
            fstring_parts(p, z + spec_start, spec_end - spec_start, raw, pos0 + (uint32_t)spec_start, true, &sh, &st);
            spec = lang_node1(p, N_FSTRING, pos0 + (uint32_t)spec_start, sh);
        }
        Node *f = lang_node2(p, N_FIELD, pos0 + (uint32_t)i + 1, e, spec);
        if (f != &placeholder) f->op = (uint8_t)conv;
        chain_add(head, tail, f);
        i = j + 1;
    }
}

Node *lang_fstring(LangParser *p, Node *prev, const LangToken *t)
{
    const char *s;
    int n;
    bool raw, fmt;
    literal_body(t, &s, &n, &raw, &fmt);
    Node *head = NULL, *tail = NULL;
    if (prev && prev->kind == N_STR) {     /* 'a' f'{x}': the plain string is the first part */
        Node *first = prev;
        prev = lang_node(p, N_FSTRING, first->pos);
        chain_add(&head, &tail, first);
    } else if (prev) {
        head = prev->a;
        for (tail = head; tail && tail->next; tail = tail->next) {}
    } else {
        prev = lang_node(p, N_FSTRING, t->pos);
    }
    fstring_parts(p, s, n, raw, t->pos + (uint32_t)(s - t->z), false, &head, &tail);
    if (prev == &placeholder) return prev;
    prev->a = head;
    grow(p, prev, head);
    return prev;
}

/* ---- operators ---- */

Node *lang_binop(LangParser *p, LangOp op, uint32_t pos, Node *x, Node *y)
{
    Node *n = lang_node2(p, N_BINOP, pos, x, y);
    n->op = (uint8_t)op;
    return n;
}

Node *lang_unary(LangParser *p, LangOp op, uint32_t pos, Node *x)
{
    /* -9223372036854775808 is the one literal that exists only negated. */
    if (op == OP_NEG && x->kind == N_INT && x->count == 1 && !x->parens) {
        x->count = 0;
        x->ival = INT64_MIN;
        x->pos = pos;
        return x;
    }
    Node *n = lang_node1(p, N_UNARY, pos, x);
    n->op = (uint8_t)op;
    return n;
}

/* a < b < c is one N_COMPARE with two items; (a < b) < c is not. */
Node *lang_compare(LangParser *p, LangOp op, uint32_t pos, Node *x, Node *y)
{
    Node *item = lang_node1(p, N_CMP_ITEM, pos, y);
    item->op = (uint8_t)op;
    if (x->kind == N_COMPARE && !x->parens && x != &placeholder && item != &placeholder) {
        x->last->next = item;
        x->last = item;
        x->count++;
        grow(p, x, item);
        return x;
    }
    Node *n = lang_node2(p, N_COMPARE, x->pos, x, item);
    n->count = 1;
    n->last = item;
    return n;
}

Node *lang_call(LangParser *p, uint32_t pos, Node *f, NodeList args)
{
    bool kw = false, kwunpack = false;
    for (Node *a = args.head; a; a = a->next) {
        if (a->kind == N_STARRED) {     /* *it may follow keywords, but not **d */
            if (a->op == 2) kwunpack = true;
            else if (kwunpack)
                lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos,
                                  "iterable argument unpacking follows keyword argument unpacking");
            continue;
        }
        if (a->kind == N_KWARG) {
            for (Node *b = args.head; b != a; b = b->next)
                if (b->kind == N_KWARG && strcmp(b->str, a->str) == 0)
                    lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos, "keyword argument repeated: %s", a->str);
            kw = true;
        } else if (kw || kwunpack) {
            lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos, kwunpack ? "positional argument follows keyword argument unpacking"
                                                                     : "positional argument follows keyword argument");
        }
    }
    Node *n = lang_node2(p, N_CALL, pos, f, args.head);
    n->count = list_len(args.head);
    for (Node *a = args.head; a && n->count > 1; a = a->next)
        if (a->kind == N_COMP && a->op == COMP_GEN && !a->parens)
            lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos, "Generator expression must be parenthesized");
    return n;
}

Node *lang_kwarg(LangParser *p, const LangToken *name, Node *value)
{
    Node *n = named(p, N_KWARG, name);
    if (n != &placeholder) n->a = value;
    grow(p, n, value);
    return n;
}

Node *lang_attr(LangParser *p, uint32_t pos, Node *x, const LangToken *name)
{
    Node *n = named(p, N_ATTR, name);
    if (n != &placeholder) {
        n->a = x;
        n->pos = pos;
    }
    grow(p, n, x);
    return n;
}

Node *lang_slice(LangParser *p, uint32_t pos, Node *a, Node *b, Node *c)
{
    return lang_node3(p, N_SLICE, a ? a->pos : pos, a, b, c);
}

/* ---- assignment ---- */

static const char *target_problem(Node *t)
{
    switch (t->kind) {
    case N_NAME: case N_SUBSCRIPT: case N_ATTR: return NULL;
    case N_TUPLE: case N_LIST: {
        if (t->kind == N_TUPLE && t->count == 0 && t->parens) return "()";
        int stars = 0;
        for (Node *e = t->a; e; e = e->next) {
            const char *m = target_problem(e->kind == N_STARRED ? e->a : e);
            if (m) return m;
            if (e->kind == N_STARRED && ++stars > 1) return "multiple starred expressions";
        }
        return NULL;
    }
    case N_INT: case N_FLOAT: case N_STR: case N_TRUE: case N_FALSE: case N_NONE: case N_ELLIPSIS:
        return "literal";
    case N_CALL: return "function call";
    case N_LAMBDA: return "lambda";
    case N_COMPARE: return "comparison";
    case N_IFEXP: return "conditional expression";
    default: return "expression";
    }
}

static uint32_t leftmost(const Node *t)
{
    while ((t->kind == N_BINOP || t->kind == N_CALL || t->kind == N_ATTR || t->kind == N_SUBSCRIPT
            || t->kind == N_COMPARE || t->kind == N_AND || t->kind == N_OR) && t->a && !t->parens)
        t = t->a;
    return t->pos;
}

static Node *bad_target(Node *t)
{
    if (t->kind == N_TUPLE || t->kind == N_LIST)
        for (Node *e = t->a; e; e = e->next) {
            Node *x = e->kind == N_STARRED ? e->a : e;
            if (target_problem(x)) return bad_target(x);
        }
    return t;
}

static void check_target(LangParser *p, Node *t)
{
    if (t->kind == N_STARRED) {
        lang_parser_error(p, LANG_SYNTAX_ERROR, t->pos, "starred assignment target must be in a list or tuple");
        return;
    }
    const char *m = target_problem(t);
    if (m && strcmp(m, "multiple starred expressions") == 0) {
        lang_parser_error(p, LANG_SYNTAX_ERROR, t->pos, "multiple starred expressions in assignment");
        return;
    }
    if (m) lang_parser_error(p, LANG_SYNTAX_ERROR, leftmost(bad_target(t)), "cannot assign to %s", m);
}

Node *lang_assign(LangParser *p, Node *target, Node *value)
{
    check_target(p, target);
    Node *n = lang_node2(p, N_ASSIGN, target->pos, target, value);
    n->count = 1;
    return n;
}

Node *lang_assign_chain(LangParser *p, Node *target, Node *assign)
{
    check_target(p, target);
    if (assign == &placeholder || target == &placeholder) return assign;
    grow(p, assign, target);
    target->next = assign->a;
    assign->a = target;
    assign->pos = target->pos;
    assign->count++;
    return assign;
}

/* del x, del a[i], del o.x, del (a, b[0]): the targets Python accepts. */
Node *lang_del(LangParser *p, uint32_t pos, Node *target)
{
    Node *bad = NULL;
    if (target->kind == N_TUPLE || target->kind == N_LIST) {
        for (Node *e = target->a; e && !bad; e = e->next)
            if (e->kind != N_NAME && e->kind != N_SUBSCRIPT && e->kind != N_ATTR
                && e->kind != N_TUPLE && e->kind != N_LIST)
                bad = e;
    } else if (target->kind != N_NAME && target->kind != N_SUBSCRIPT && target->kind != N_ATTR) {
        bad = target;
    }
    if (bad) {
        const char *m = target_problem(bad);
        lang_parser_error(p, LANG_SYNTAX_ERROR, leftmost(bad), "cannot delete %s", m ? m : "expression");
    }
    return lang_node1(p, N_DEL, pos, target);
}

Node *lang_augassign(LangParser *p, Node *target, const LangToken *op, Node *value)
{
    if (target->kind != N_NAME && target->kind != N_SUBSCRIPT && target->kind != N_ATTR)
        lang_parser_error(p, LANG_SYNTAX_ERROR, leftmost(target),
                          "'%s' is an illegal expression for augmented assignment",
                          target->kind == N_TUPLE ? "tuple" : target_problem(target) ? target_problem(target) : "expression");
    static const struct { const char *s; LangOp op; } ops[] = {
        {"+=", OP_ADD}, {"-=", OP_SUB}, {"*=", OP_MUL}, {"/=", OP_DIV}, {"//=", OP_FLOORDIV},
        {"%=", OP_MOD}, {"**=", OP_POW}, {"@=", OP_MATMUL}, {"&=", OP_BITAND}, {"|=", OP_BITOR},
        {"^=", OP_BITXOR}, {"<<=", OP_LSHIFT}, {">>=", OP_RSHIFT},
    };
    LangOp o = OP_ADD;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if ((int)strlen(ops[i].s) == op->n && memcmp(ops[i].s, op->z, (size_t)op->n) == 0) o = ops[i].op;
    Node *n = lang_node2(p, N_AUGASSIGN, op->pos, target, value);
    n->op = (uint8_t)o;
    return n;
}

Node *lang_for(LangParser *p, uint32_t pos, Node *target, Node *iter, Node *body, Node *orelse)
{
    check_target(p, target);
    Node *n = lang_node3(p, N_FOR, pos, target, iter, body);
    if (n != &placeholder) n->d = orelse;
    grow(p, n, orelse);
    return n;
}

/* ---- functions ---- */

Node *lang_param(LangParser *p, const LangToken *name, Node *dflt)
{
    Node *n = named(p, N_PARAM, name);
    if (n != &placeholder) n->a = dflt;
    grow(p, n, dflt);
    return n;
}

Node *lang_param_star(LangParser *p, uint32_t pos, const LangToken *name, ParamKind kind)
{
    LangToken bare = {kind == PARAM_SLASH ? TK_SLASH : TK_STAR, kind == PARAM_SLASH ? "/" : "*", 1, pos};
    Node *n = named(p, N_PARAM, name ? name : &bare);
    if (n != &placeholder) n->op = (uint8_t)kind;
    return n;
}

/* Checks a parameter list as Python's compiler does and relinks it in slot order: positional
 * parameters, keyword-only ones, *args, **kwargs (a bare * is dropped). */
static LangFunc *make_func(LangParser *p, uint32_t pos, const char *name, NodeList params, Node *body)
{
    LangFunc *f = lang_arena_alloc(p->arena, sizeof *f);
    if (!f) {
        p->nomem = true;
        return NULL;
    }
    f->name = f->qualname = name;
    f->body = body;
    f->pos = pos;
    bool dflt = false, star = false, kw = false, slash = false;
    Node *ph = NULL, *pt = NULL, *kh = NULL, *kt = NULL, *va = NULL, *vk = NULL;
    for (Node *a = params.head; a; a = a->next)
        for (Node *b = params.head; b != a; b = b->next)
            if (a->op != PARAM_BARE_STAR && a->op != PARAM_SLASH && b->op != PARAM_SLASH && strcmp(a->str, b->str) == 0)
                lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos,
                                  "duplicate argument '%s' in function definition", a->str);
    for (Node *a = params.head, *next; a; a = next) {
        next = a->next;
        a->next = NULL;
        if (kw)
            lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos, "arguments cannot follow var-keyword argument");
        if (a->op == PARAM_SLASH) {     /* the parameters so far are positional-only */
            if (slash) lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos, "/ may appear only once");
            else if (star) lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos, "/ must be ahead of *");
            else if (!f->nparams) lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos, "at least one argument must precede /");
            slash = true;
            f->nposonly = f->nparams;
            continue;
        }
        if (a->op == PARAM_VARARGS || a->op == PARAM_BARE_STAR) {
            if (star) lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos, "* argument may appear only once");
            star = true;
            if (a->op == PARAM_BARE_STAR) {
                if (!next || next->op == PARAM_VARKW)
                    lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos, "named arguments must follow bare *");
                continue;
            }
            va = a;
        } else if (a->op == PARAM_VARKW) {
            kw = true;
            vk = a;
        } else if (star) {
            chain_add(&kh, &kt, a);
            f->nkwonly++;
        } else {
            if (a->a) dflt = true;
            else if (dflt)
                lang_parser_error(p, LANG_SYNTAX_ERROR, a->pos, "non-default argument follows default argument");
            chain_add(&ph, &pt, a);
            f->nparams++;
        }
        if (a->a) f->ndefaults++;
    }
    if (kh) {
        if (pt) pt->next = kh;
        else ph = kh;
        pt = kt;
    }
    if (va) chain_add(&ph, &pt, va);
    if (vk) chain_add(&ph, &pt, vk);
    f->varargs = va != NULL;
    f->varkw = vk != NULL;
    f->params = ph;
    return f;
}

Node *lang_def(LangParser *p, uint32_t pos, const LangToken *name, NodeList params, Node *body)
{
    Node *n = lang_node(p, N_DEF, pos);
    Node *target = lang_name(p, name);
    if (n == &placeholder || target == &placeholder) return n;
    n->a = target;
    n->func = make_func(p, pos, target->str, params, body);
    grow(p, n, n->func ? n->func->params : NULL);
    grow(p, n, body);
    return n;
}

Node *lang_lambda(LangParser *p, uint32_t pos, NodeList params, Node *body)
{
    Node *n = lang_node(p, N_LAMBDA, pos);
    Node *ret = lang_node1(p, N_RETURN, body->pos, body);
    if (n == &placeholder || ret == &placeholder) return n;
    n->func = make_func(p, pos, "<lambda>", params, ret);
    grow(p, n, n->func ? n->func->params : NULL);
    grow(p, n, ret);
    return n;
}

Node *lang_class(LangParser *p, uint32_t pos, const LangToken *name, NodeList bases, Node *body)
{
    Node *n = lang_node(p, N_CLASS, pos);
    Node *target = lang_name(p, name);
    if (n == &placeholder || target == &placeholder) return n;
    for (Node *b = bases.head; b; b = b->next)
        if (b->kind == N_STARRED)
            lang_parser_error(p, LANG_SYNTAX_ERROR, b->pos, "starred bases are not supported in tdl");
    n->a = target;
    n->b = bases.head;
    n->count = list_len(bases.head);
    NodeList none = {0};
    n->func = make_func(p, pos, target->str, none, body);
    if (n->func) n->func->is_class = true;
    grow(p, n, bases.head);
    grow(p, n, body);
    return n;
}

Node *lang_decorate(LangParser *p, uint32_t pos, Node *deco, Node *c)
{
    if (c == &placeholder) return c;
    if (c->kind != N_DEF && c->kind != N_CLASS) {
        lang_parser_error(p, LANG_SYNTAX_ERROR, c->pos, "invalid syntax");
        return c;
    }
    (void)pos;
    deco->next = c->d;
    c->d = deco;
    grow(p, c, deco);
    return c;
}

Node *lang_walrus(LangParser *p, const LangToken *name, uint32_t pos, Node *value)
{
    return lang_node2(p, N_NAMEDEXPR, pos, lang_name(p, name), value);
}

Node *lang_expr_stmt(LangParser *p, Node *e)
{
    if (e->kind == N_NAMEDEXPR && !e->parens) lang_parser_error(p, LANG_SYNTAX_ERROR, e->pos, "invalid syntax");
    return lang_node1(p, N_EXPR_STMT, e->pos, e);
}

Node *lang_with_item(LangParser *p, Node *mgr, Node *target)
{
    check_target(p, target);
    return lang_node2(p, N_WITHITEM, mgr->pos, mgr, target);
}

Node *lang_try(LangParser *p, uint32_t pos, Node *body, Node *handlers, Node *orelse, Node *fin)
{
    for (Node *h = handlers; h; h = h->next)
        if (!h->a && h->next)
            lang_parser_error(p, LANG_SYNTAX_ERROR, h->pos, "default 'except:' must be last");
    Node *n = lang_node3(p, N_TRY, pos, body, handlers, orelse);
    if (n != &placeholder) n->d = fin;
    grow(p, n, fin);
    return n;
}

Node *lang_import(LangParser *p, uint32_t pos, Node *module, const LangToken *alias)
{
    Node *n = lang_node(p, N_IMPORT, pos);
    if (n == &placeholder || module == &placeholder) return n;
    n->str = module->str;
    n->len = module->len;
    if (alias) {
        n->a = lang_name(p, alias);
    } else {
        /* `import a.b` binds `a`, as in Python. */
        LangToken t = {TK_NAME, module->str, (int)strcspn(module->str, "."), module->pos};
        n->a = named(p, N_NAME, &t);
        n->a->pos = module->pos;
    }
    return n;
}

/* ---- comprehensions ---- */

Node *lang_comp_for(LangParser *p, uint32_t pos, Node *target, Node *iter)
{
    check_target(p, target);
    return lang_node2(p, N_FOR, pos, target, iter);
}

/* Builds the comprehension's scope: its clauses nested innermost first around the N_COMP_EMIT of
 * elem (an N_PAIR for a dict comprehension), the first clause's iterable taken out to the N_COMP
 * node and replaced by the parameter `.0`. */
Node *lang_comp(LangParser *p, uint32_t pos, CompKind kind, Node *elem, Node *clauses)
{
    static const char *const names[] = {"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"};
    Node *n = lang_node(p, N_COMP, pos);
    if (kind == COMP_DICT && elem->kind == N_STARRED) {
        lang_parser_error(p, LANG_SYNTAX_ERROR, elem->pos, "dict unpacking cannot be used in dict comprehension");
        return n;
    }
    Node *emit = kind == COMP_DICT ? lang_node2(p, N_COMP_EMIT, elem->a ? elem->a->pos : pos, elem->a, elem->b)
                                   : lang_node1(p, N_COMP_EMIT, elem->pos, elem);
    LangToken dot0 = {TK_NAME, ".0", 2, pos};
    Node *param = lang_param(p, &dot0, NULL);
    if (n == &placeholder || emit == &placeholder || param == &placeholder || clauses == &placeholder)
        return n;
    n->op = (uint8_t)kind;
    /* clauses are chained by next: reverse-link them into nesting, innermost first */
    Node *list[LANG_MAX_DEPTH];
    int k = 0;
    for (Node *c = clauses; c && k < LANG_MAX_DEPTH; c = c->next) list[k++] = c;
    Node *inner = emit;
    for (int i = k - 1; i >= 0; i--) {
        Node *c = list[i];
        c->next = NULL;
        if (c->kind == N_FOR) c->c = inner;
        else c->b = inner;
        grow(p, c, inner);
        inner = c;
    }
    Node *first = list[0];
    n->a = first->b;
    first->b = lang_name(p, &dot0);
    n->func = make_func(p, pos, names[kind], lang_list1(param), first);
    if (n->func) n->func->is_comp = true;
    grow(p, n, n->a);
    grow(p, n, first);
    return n;
}

/* ---- the driver ---- */

LangStatus lang_parse(LangSource *src, bool interactive, LangUnit **out, LangError *err)
{
    *out = NULL;
    LangParser p = {0};
    p.src = src;
    p.arena = lang_arena_new();
    p.lx = lang_lexer_new(src, interactive);
    void *parser = p.arena && p.lx ? LangParseAlloc(mem_malloc, &p) : NULL;
    LangStatus st = LANG_OK;
    if (!parser) {
        st = LANG_NOMEM;
        goto out;
    }
    for (;;) {
        LangToken t;
        LangStatus ls = lang_lexer_next(p.lx, &t, err);
        if (ls != LANG_OK) {
            st = ls;
            goto out;
        }
        LangParse(parser, t.kind, t);
        if (p.nomem) {
            st = LANG_NOMEM;
            goto out;
        }
        if (p.failed) {
            st = p.incomplete ? LANG_INCOMPLETE : LANG_ERROR;
            *err = p.err;
            /* Input that ended early inside brackets: say which bracket was never closed. */
            uint32_t ppos;
            int c = p.incomplete ? lang_lexer_open_paren(p.lx, &ppos) : 0;
            if (c) {
                err->pos = ppos;
                snprintf(err->msg, sizeof err->msg, "'%c' was never closed", c);
            }
            goto out;
        }
        if (t.kind == 0) break;
        p.prev2 = p.prev;
        p.prev = t;
    }
    LangUnit *u = mem_calloc(1, sizeof *u);
    if (!u) {
        st = LANG_NOMEM;
        goto out;
    }
    u->refcnt = 1;
    u->src = lang_source_retain(src);
    u->arena = p.arena;
    u->body = p.body;
    p.arena = NULL;
    *out = u;
out:
    if (st == LANG_NOMEM) {
        err->kind = LANG_SYNTAX_ERROR;
        err->pos = 0;
        snprintf(err->msg, sizeof err->msg, "out of memory while parsing");
    }
    if (parser) LangParseFree(parser, mem_free);
    lang_lexer_free(p.lx);
    lang_arena_free(p.arena);
    return st;
}

LangUnit *lang_unit_retain(LangUnit *u)
{
    if (u) u->refcnt++;
    return u;
}

void lang_unit_release(LangUnit *u)
{
    if (!u || --u->refcnt > 0) return;
    lang_source_release(u->src);
    lang_arena_free(u->arena);
    mem_free(u);
}

/* ---- dump ---- */

static const char *const kind_names[N__COUNT] = {
    "name", "int", "float", "str", "True", "False", "None", "...", "tuple", "list", "binop",
    "unary", "not", "and", "or", "compare", "cmp", "ifexp", "lambda", "call", "kw", "attr",
    "subscript", "slice", "dict", "set", "pair", "comp", "fstring", "field", "starred", "expr", "assign", "augassign", "if", "while", "for", "def", "return",
    "break", "continue", "pass", "assert", "raise", "import", "global", "nonlocal", "param",
    "del", "emit", "try", "except", "with", "withitem", "namedexpr", "class", "yield",
};

const char *lang_node_kind_name(NodeKind k) { return k < N__COUNT ? kind_names[k] : "?"; }

typedef struct Out { char *buf; size_t cap, w; } Out;

static void put(Out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->w < o->cap ? o->cap - o->w : 0;
    /* buf may be NULL with cap 0 (a size query); NULL + 0 is undefined, so do not form it. */
    int r = vsnprintf(room ? o->buf + o->w : NULL, room, fmt, ap);
    va_end(ap);
    if (r > 0) o->w += (size_t)r;
}

static void dump(Out *o, const Node *n);

static void dump_chain(Out *o, const Node *n)
{
    put(o, "[");
    for (; n; n = n->next) {
        dump(o, n);
        if (n->next) put(o, " ");
    }
    put(o, "]");
}

static void dump(Out *o, const Node *n)
{
    if (!n) {
        put(o, "_");
        return;
    }
    switch (n->kind) {
    case N_NAME: put(o, "%s", n->str); return;
    case N_INT: put(o, "%lld", (long long)n->ival); return;
    case N_FLOAT: {
        /* The shortest text that reads back as the same double, and never one that reads as an int. */
        char t[32];
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(t, sizeof t, "%.*g", prec, n->fval);
            if (strtod(t, NULL) == n->fval) break;
        }
        put(o, "%s%s", t, strpbrk(t, ".eEni") ? "" : ".0");
        return;
    }
    case N_STR: put(o, "'%s'", n->str); return;
    case N_TRUE: case N_FALSE: case N_NONE: case N_ELLIPSIS: put(o, "%s", kind_names[n->kind]); return;
    case N_BINOP: case N_UNARY: case N_CMP_ITEM: case N_AUGASSIGN:
        put(o, "(%s", n->kind == N_AUGASSIGN ? "augassign " : n->kind == N_CMP_ITEM ? "" : "");
        put(o, "%s ", lang_op_text[n->op]);
        dump(o, n->a);
        if (n->b) { put(o, " "); dump(o, n->b); }
        put(o, ")");
        return;
    case N_COMPARE:
        put(o, "(compare ");
        dump(o, n->a);
        for (const Node *i = n->b; i; i = i->next) { put(o, " "); dump(o, i); }
        put(o, ")");
        return;
    case N_TUPLE: case N_LIST: case N_GLOBAL: case N_NONLOCAL: case N_SET: case N_DICT:
        put(o, "(%s", kind_names[n->kind]);
        for (const Node *i = n->a; i; i = i->next) { put(o, " "); dump(o, i); }
        put(o, ")");
        return;
    case N_CALL:
        put(o, "(call ");
        dump(o, n->a);
        for (const Node *i = n->b; i; i = i->next) { put(o, " "); dump(o, i); }
        put(o, ")");
        return;
    case N_KWARG: case N_PARAM:
        put(o, "(%s %s", kind_names[n->kind], n->str);
        if (n->a) { put(o, " "); dump(o, n->a); }
        put(o, ")");
        return;
    case N_ATTR: put(o, "(attr "); dump(o, n->a); put(o, " %s)", n->str); return;
    case N_SLICE:   /* every part, "_" where omitted: a[1:] and a[:1] must not look alike */
        put(o, "(slice ");
        dump(o, n->a);
        put(o, " ");
        dump(o, n->b);
        put(o, " ");
        dump(o, n->c);
        put(o, ")");
        return;
    case N_ASSIGN:
        put(o, "(assign");
        for (const Node *i = n->a; i; i = i->next) { put(o, " "); dump(o, i); }
        put(o, " ");
        dump(o, n->b);
        put(o, ")");
        return;
    case N_DEF: case N_LAMBDA:
        put(o, "(%s %s (", kind_names[n->kind], n->func ? n->func->name : "?");
        if (n->func)
            for (const Node *i = n->func->params; i; i = i->next) { dump(o, i); if (i->next) put(o, " "); }
        put(o, ") ");
        if (n->func) dump_chain(o, n->func->body);
        put(o, ")");
        return;
    case N_IMPORT: put(o, "(import %s as ", n->str); dump(o, n->a); put(o, ")"); return;
    case N_IF: case N_WHILE: case N_FOR:
        put(o, "(%s ", kind_names[n->kind]);
        dump(o, n->a);
        put(o, " ");
        if (n->kind == N_FOR) { dump(o, n->b); put(o, " "); dump_chain(o, n->c); if (n->d) { put(o, " else "); dump_chain(o, n->d); } }
        else { dump_chain(o, n->b); if (n->c) { put(o, " else "); dump_chain(o, n->c); } }
        put(o, ")");
        return;
    default:
        put(o, "(%s", kind_names[n->kind]);
        if (n->a) { put(o, " "); dump(o, n->a); }
        if (n->b) { put(o, " "); dump(o, n->b); }
        if (n->c) { put(o, " "); dump(o, n->c); }
        put(o, ")");
        return;
    }
}

size_t lang_dump(const Node *n, char *buf, size_t cap)
{
    Out o = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    for (; n; n = n->next) {
        dump(&o, n);
        if (n->next) put(&o, "\n");
    }
    return o.w;
}
