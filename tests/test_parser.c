/* test_parser.c — the grammar and builders of lang/: trees of every operator level and statement
 * form (compared as lang_dump s-expressions), literals, and every syntax error with its exact
 * message, kind, status and line:col; and lang_source_caret's output. */
#include "tests.h"

#include "lang.h"

#include <stdio.h>
#include <string.h>

#define N_CASES(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct { const char *src; const char *tree; } TreeCase;

/* Parses src (batch mode) and compares lang_dump of the whole unit with want. */
static void check_tree(const char *src, const char *want)
{
    LangSource *s = lang_source_new("<test>", src, strlen(src));
    ck_assert_ptr_nonnull(s);
    LangUnit *u = NULL;
    LangError err;
    LangStatus st = lang_parse(s, false, &u, &err);
    if (st != LANG_OK) {
        int line, col;
        lang_source_linecol(s, err.pos, &line, &col);
        ck_abort_msg("source:\n%s\nstatus %d at %d:%d: %s", src, st, line, col, err.msg);
    }
    char out[4096];
    size_t n = lang_dump(u->body, out, sizeof out);
    ck_assert_uint_lt(n, sizeof out);
    ck_assert_msg(strcmp(out, want) == 0, "source:\n%s\ngot:\n%s\nwant:\n%s", src, out, want);
    lang_unit_release(u);
    lang_source_release(s);
}

typedef struct {
    const char *src;
    bool interactive;
    LangStatus status;
    LangErrorKind kind;
    int line, col;
    const char *msg;
} ErrorCase;

#define SYN(src, line, col, msg) {src, false, LANG_ERROR, LANG_SYNTAX_ERROR, line, col, msg}
#define IND(src, line, col, msg) {src, false, LANG_ERROR, LANG_INDENTATION_ERROR, line, col, msg}

static void check_error(const ErrorCase *c)
{
    LangSource *s = lang_source_new("<test>", c->src, strlen(c->src));
    LangUnit *u = (LangUnit *)&u;      /* must be reset to NULL */
    LangError err;
    LangStatus st = lang_parse(s, c->interactive, &u, &err);
    ck_assert_ptr_null(u);
    int line, col;
    lang_source_linecol(s, err.pos, &line, &col);
    ck_assert_msg(st == c->status, "source:\n%s\nstatus %d, want %d (%s)", c->src, st, c->status, err.msg);
    ck_assert_str_eq(err.msg, c->msg);
    ck_assert_int_eq(err.kind, c->kind);
    ck_assert_int_eq(line, c->line);
    ck_assert_int_eq(col, c->col);
    lang_source_release(s);
}

/* ---- operators ---- */

static const TreeCase precedence[] = {
    /* unary minus binds looser than ** on its left, tighter on its right */
    {"-2**2", "(expr (- (** 2 2)))"},
    {"2**-1", "(expr (** 2 (- 1)))"},
    {"-a ** -b", "(expr (- (** a (- b))))"},
    {"a ** b ** c", "(expr (** a (** b c)))"},
    {"(a ** b) ** c", "(expr (** (** a b) c))"},
    {"~a ** b", "(expr (~ (** a b)))"},
    {"-a * b", "(expr (* (- a) b))"},
    {"a * -b", "(expr (* a (- b)))"},
    {"~a + b", "(expr (+ (~ a) b))"},
    {"+a - -b", "(expr (- (+ a) (- b)))"},
    {"a - - b", "(expr (- a (- b)))"},
    {"--a", "(expr (- (- a)))"},
    /* the binary levels, loosest first: | ^ & << >> + - * / // % @ */
    {"a | b ^ c & d << e + f * g", "(expr (| a (^ b (& c (<< d (+ e (* f g)))))))"},
    {"a * b + c << d & e ^ f | g", "(expr (| (^ (& (<< (+ (* a b) c) d) e) f) g))"},
    {"a - b - c", "(expr (- (- a b) c))"},
    {"a / b / c", "(expr (/ (/ a b) c))"},
    {"a // b % c * d / e @ f", "(expr (@ (/ (* (% (// a b) c) d) e) f))"},
    {"a + b * c", "(expr (+ a (* b c)))"},
    {"(a + b) * c", "(expr (* (+ a b) c))"},
    {"a @ b + c", "(expr (+ (@ a b) c))"},
    {"a << b >> c", "(expr (>> (<< a b) c))"},
    {"a | b | c", "(expr (| (| a b) c))"},
    {"a & b & c", "(expr (& (& a b) c))"},
    {"a ^ b ^ c", "(expr (^ (^ a b) c))"},
    /* comparisons sit between the bit operators and not */
    {"a | b < c & d", "(expr (compare (| a b) (< (& c d))))"},
    {"a + 1 == b * 2", "(expr (compare (+ a 1) (== (* b 2))))"},
    {"not a == b", "(expr (not (compare a (== b))))"},
    {"not a", "(expr (not a))"},
    {"not not a", "(expr (not (not a)))"},
    {"not -a", "(expr (not (- a)))"},
    {"a and not b", "(expr (and a (not b)))"},
    {"not a and b", "(expr (and (not a) b))"},
    {"a or b and c", "(expr (or a (and b c)))"},
    {"a and b or c", "(expr (or (and a b) c))"},
    {"a or b or c", "(expr (or (or a b) c))"},
    {"a and b and c", "(expr (and (and a b) c))"},
    {"(a or b) and c", "(expr (and (or a b) c))"},
    /* comparisons chain; parentheses stop the chain */
    {"a < b < c", "(expr (compare a (< b) (< c)))"},
    {"(a < b) < c", "(expr (compare (compare a (< b)) (< c)))"},
    {"a < (b < c)", "(expr (compare a (< (compare b (< c)))))"},
    {"a < b == c > d", "(expr (compare a (< b) (== c) (> d)))"},
    {"a <= b >= c != d", "(expr (compare a (<= b) (>= c) (!= d)))"},
    {"a in b not in c", "(expr (compare a (in b) (not in c)))"},
    {"a is b is not c", "(expr (compare a (is b) (is not c)))"},
    {"a is not b", "(expr (compare a (is not b)))"},
    {"a not in b", "(expr (compare a (not in b)))"},
    {"a < b and b < c", "(expr (and (compare a (< b)) (compare b (< c))))"},
    /* conditional expressions: right-associative, looser than or */
    {"a if b else c", "(expr (ifexp b a c))"},
    {"x if c else y if d else z", "(expr (ifexp c x (ifexp d y z)))"},
    {"(x if c else y) if d else z", "(expr (ifexp d (ifexp c x y) z))"},
    {"a or b if c or d else e or f", "(expr (ifexp (or c d) (or a b) (or e f)))"},
    {"x if not c else -y", "(expr (ifexp (not c) x (- y)))"},
    /* lambda is loosest and its body extends as far as possible */
    {"lambda: 0", "(expr (lambda <lambda> () [(return 0)]))"},
    {"lambda x, y=1: x + y", "(expr (lambda <lambda> ((param x) (param y 1)) [(return (+ x y))]))"},
    {"lambda x: x if x else y", "(expr (lambda <lambda> ((param x)) [(return (ifexp x x y))]))"},
    {"lambda x: lambda y: x + y",
     "(expr (lambda <lambda> ((param x)) [(return (lambda <lambda> ((param y)) [(return (+ x y))]))]))"},
    {"a if b else lambda: c", "(expr (ifexp b a (lambda <lambda> () [(return c)])))"},
    {"f(lambda x: x, 1)", "(expr (call f (lambda <lambda> ((param x)) [(return x)]) 1))"},
    {"lambda x=1, : x", "(expr (lambda <lambda> ((param x 1)) [(return x)]))"},
    /* postfix operators bind tightest */
    {"-a.b", "(expr (- (attr a b)))"},
    {"-f(x) ** 2", "(expr (- (** (call f x) 2)))"},
    {"a.b ** c[0]", "(expr (** (attr a b) (subscript c 0)))"},
    {"f(x)(y)[0].z", "(expr (attr (subscript (call (call f x) y) 0) z))"},
    {"(a + b).c", "(expr (attr (+ a b) c))"},
    {"x.y.z", "(expr (attr (attr x y) z))"},
};

START_TEST(operator_precedence)
{
    check_tree(precedence[_i].src, precedence[_i].tree);
}
END_TEST

/* ---- atoms and literals ---- */

static const TreeCase atoms[] = {
    {"x", "(expr x)"},
    {"\xC3\xA9 + na\xC3\xAFve", "(expr (+ \xC3\xA9 na\xC3\xAFve))"},
    {"True; False; None; ...", "(expr True)\n(expr False)\n(expr None)\n(expr ...)"},
    {"()", "(expr (tuple))"},
    {"(1,)", "(expr (tuple 1))"},
    {"(1, 2)", "(expr (tuple 1 2))"},
    {"1, 2,", "(expr (tuple 1 2))"},
    {"(((x)))", "(expr x)"},
    {"[]", "(expr (list))"},
    {"[1]", "(expr (list 1))"},
    {"[1,]", "(expr (list 1))"},
    {"[1, (2, 3), [4]]", "(expr (list 1 (tuple 2 3) (list 4)))"},
    /* integers */
    {"0; 00; 7; 1_000", "(expr 0)\n(expr 0)\n(expr 7)\n(expr 1000)"},
    {"0x1F; 0XfF; 0o17; 0b101; 0b1_0", "(expr 31)\n(expr 255)\n(expr 15)\n(expr 5)\n(expr 2)"},
    {"9223372036854775807", "(expr 9223372036854775807)"},
    {"-9223372036854775808", "(expr -9223372036854775808)"},
    {"-9223372036854775807", "(expr (- 9223372036854775807))"},
    {"--9223372036854775808", "(expr (- -9223372036854775808))"},
    {"x = -9223372036854775808 + 1", "(assign x (+ -9223372036854775808 1))"},
    {"0x7fffffffffffffff", "(expr 9223372036854775807)"},
    {"-0x8000000000000000", "(expr -9223372036854775808)"},
    /* floats */
    {"1.5; .5; 5.; 1e5; 1_0.5e-3", "(expr 1.5)\n(expr 0.5)\n(expr 5.0)\n(expr 1e+05)\n(expr 0.0105)"},
    {"0.0; 0.1; 1E-3; 2.5e+2", "(expr 0.0)\n(expr 0.1)\n(expr 0.001)\n(expr 2.5e+02)"},
    {"1e400", "(expr inf)"},
    {"-1.5", "(expr (- 1.5))"},
};

START_TEST(atoms_and_literals)
{
    check_tree(atoms[_i].src, atoms[_i].tree);
}
END_TEST

/* Strings: the decoded bytes, compared exactly (a dump shows a string as '<bytes>'). */
typedef struct { const char *src; const char *value; size_t len; } StringCase;

static const StringCase string_cases[] = {
    {"'abc'", "abc", 3},
    {"\"abc\"", "abc", 3},
    {"''", "", 0},
    {"'a\\nb\\tc'", "a\nb\tc", 5},
    {"'\\x41\\x7a'", "Az", 2},
    {"'\\u00e9'", "\xC3\xA9", 2},
    {"'\\U0001F600'", "\xF0\x9F\x98\x80", 4},
    {"'\\u20ac'", "\xE2\x82\xAC", 3},
    {"'\\101\\60\\0'", "A0\0", 3},
    {"'\\1234'", "S4", 2},
    {"'\\\\ \\' \\\"'", "\\ ' \"", 5},
    {"'\\a\\b\\f\\v\\r'", "\a\b\f\v\r", 5},
    {"'\\q\\d'", "\\q\\d", 4},          /* unknown escapes stay as written */
    {"'a\\\nb'", "ab", 2},              /* backslash-newline continues the string */
    {"'a' \"b\"", "ab", 2},             /* adjacent literals are one string */
    {"'a' 'b' '''c'''", "abc", 3},
    {"('a'\n 'b')", "ab", 2},
    {"'''a\nb'''", "a\nb", 3},
    {"\"\"\"it's \"quoted\"!\"\"\"", "it's \"quoted\"!", 14},
    {"'''a\r\nb'''", "a\nb", 3},        /* CRLF inside a string reads as \n */
    {"r'a\\nb'", "a\\nb", 4},
    {"R'\\x41'", "\\x41", 4},
    {"r'\\''", "\\'", 2},
    {"r'a' '\\n'", "a\n", 2},           /* raw only applies to its own literal */
    {"u'\\n'", "\n", 1},
    {"'\xC3\xA9t\xC3\xA9'", "\xC3\xA9t\xC3\xA9", 5},
};

START_TEST(string_literals)
{
    const StringCase *c = &string_cases[_i];
    LangSource *s = lang_source_new("<test>", c->src, strlen(c->src));
    LangUnit *u;
    LangError err;
    ck_assert_int_eq(lang_parse(s, false, &u, &err), LANG_OK);
    Node *e = u->body->a;
    ck_assert_int_eq(u->body->kind, N_EXPR_STMT);
    ck_assert_int_eq(e->kind, N_STR);
    ck_assert_uint_eq(e->len, c->len);
    ck_assert_msg(memcmp(e->str, c->value, c->len) == 0, "%s: decoded as '%s'", c->src, e->str);
    ck_assert_int_eq(e->str[e->len], '\0');
    ck_assert_int_eq(e->pos, strcspn(c->src, "'\"rRuU"));     /* at its first literal */
    lang_unit_release(u);
    lang_source_release(s);
}
END_TEST

/* ---- statements ---- */

static const TreeCase statements[] = {
    /* assignment */
    {"x = 1", "(assign x 1)"},
    {"a = b = c = 0", "(assign a b c 0)"},
    {"a, b = b, a", "(assign (tuple a b) (tuple b a))"},
    {"(a, b), c = x", "(assign (tuple (tuple a b) c) x)"},
    {"[a, b] = c", "(assign (list a b) c)"},
    {"x, = y", "(assign (tuple x) y)"},
    {"a, b = c, d = e", "(assign (tuple a b) (tuple c d) e)"},
    {"a.b = 1", "(assign (attr a b) 1)"},
    {"d.size = n", "(assign (attr d size) n)"},
    {"t[i] = 1", "(assign (subscript t i) 1)"},
    {"t[i, j] = t[j, i]", "(assign (subscript t (tuple i j)) (subscript t (tuple j i)))"},
    {"ph.size, pw.size = output_size", "(assign (tuple (attr ph size) (attr pw size)) output_size)"},
    {"x = a if b else c", "(assign x (ifexp b a c))"},
    {"x = lambda: 0", "(assign x (lambda <lambda> () [(return 0)]))"},
    /* augmented assignment, every operator */
    {"x += 1", "(augassign + x 1)"},
    {"x -= 1; x *= 2; x /= 3", "(augassign - x 1)\n(augassign * x 2)\n(augassign / x 3)"},
    {"x //= 1; x %= 2; x **= 3", "(augassign // x 1)\n(augassign % x 2)\n(augassign ** x 3)"},
    {"x @= m; x &= 1; x |= 2", "(augassign @ x m)\n(augassign & x 1)\n(augassign | x 2)"},
    {"x ^= 1; x <<= 2; x >>= 3", "(augassign ^ x 1)\n(augassign << x 2)\n(augassign >> x 3)"},
    {"t[i] += 1", "(augassign + (subscript t i) 1)"},
    {"a.b *= 2", "(augassign * (attr a b) 2)"},
    {"x += 1, 2", "(augassign + x (tuple 1 2))"},
    /* expression statements */
    {"f(x)", "(expr (call f x))"},
    {"1, 2", "(expr (tuple 1 2))"},
    /* simple statements */
    {"pass", "(pass)"},
    {"while x:\n    break\n    continue", "(while x [(break) (continue)])"},
    {"def f():\n    return", "(def f () [(return)])"},
    {"def f():\n    return x", "(def f () [(return x)])"},
    {"def f():\n    return x, y", "(def f () [(return (tuple x y))])"},
    {"assert x", "(assert x)"},
    {"assert x, \"message\"", "(assert x 'message')"},
    {"assert (x, y)", "(assert (tuple x y))"},
    {"assert 0 < n, 'n must be positive'", "(assert (compare 0 (< n)) 'n must be positive')"},
    {"import vision", "(import vision as vision)"},
    {"import vision as v", "(import vision as v)"},
    {"import a.b", "(import a.b as a)"},
    {"import a.b.c as d", "(import a.b.c as d)"},
    {"global a", "(global a)"},
    {"global a, b", "(global a b)"},
    {"def f():\n    nonlocal a, b", "(def f () [(nonlocal a b)])"},
    /* ;-separated statements, with an optional final ; */
    {"a = 1; b = 2", "(assign a 1)\n(assign b 2)"},
    {"pass; break; continue;", "(pass)\n(break)\n(continue)"},
    {"if x: a; b", "(if x [(expr a) (expr b)])"},
    {"if x: a;", "(if x [(expr a)])"},
    /* if / elif / else */
    {"if a:\n    x", "(if a [(expr x)])"},
    {"if a: x\nelse: y", "(if a [(expr x)] else [(expr y)])"},
    {"if a:\n    x\nelif b:\n    y", "(if a [(expr x)] else [(if b [(expr y)])])"},
    {"if a: x\nelif b: y\nelif c: z\nelse: w",
     "(if a [(expr x)] else [(if b [(expr y)] else [(if c [(expr z)] else [(expr w)])])])"},
    {"if a:\n    if b:\n        x\n    else:\n        y\nelse:\n    z",
     "(if a [(if b [(expr x)] else [(expr y)])] else [(expr z)])"},
    {"if a:\n    x\n    y\nz", "(if a [(expr x) (expr y)])\n(expr z)"},
    /* while / else */
    {"while a:\n    x", "(while a [(expr x)])"},
    {"while a: x\nelse: y", "(while a [(expr x)] else [(expr y)])"},
    {"while not done:\n    step()\nelse:\n    pass",
     "(while (not done) [(expr (call step))] else [(pass)])"},
    /* for / else, with tuple targets */
    {"for x in xs:\n    f(x)", "(for x xs [(expr (call f x))])"},
    {"for i in range(3): pass\nelse: break", "(for i (call range 3) [(pass)] else [(break)])"},
    {"for x, y in z: pass", "(for (tuple x y) z [(pass)])"},
    {"for x, in z: pass", "(for (tuple x) z [(pass)])"},
    {"for (a, b), c in z: pass", "(for (tuple (tuple a b) c) z [(pass)])"},
    {"for x in a, b: pass", "(for x (tuple a b) [(pass)])"},
    {"for t[i] in a: pass", "(for (subscript t i) a [(pass)])"},
    {"for x in a if c else b: pass", "(for x (ifexp c a b) [(pass)])"},
    {"for x in y:\n    for z in x:\n        continue\nelse:\n    pass",
     "(for x y [(for z x [(continue)])] else [(pass)])"},
    /* def */
    {"def f(): pass", "(def f () [(pass)])"},
    {"def f(a, b): return a", "(def f ((param a) (param b)) [(return a)])"},
    {"def f(a, b=1, c=(1, 2),): return a",
     "(def f ((param a) (param b 1) (param c (tuple 1 2))) [(return a)])"},
    {"def f(x=-1, y=None, z=lambda: 0):\n    pass",
     "(def f ((param x (- 1)) (param y None) (param z (lambda <lambda> () [(return 0)]))) [(pass)])"},
    {"def f(a):\n    def g(b):\n        return a + b\n    return g",
     "(def f ((param a)) [(def g ((param b)) [(return (+ a b))]) (return g)])"},
    /* comments and blank lines between statements */
    {"x = 1  # one\n\n# two\n  # three\ny = 2\n", "(assign x 1)\n(assign y 2)"},
    {"if a:\n    x\n\n    # c\n    y\n", "(if a [(expr x) (expr y)])"},
    {"", ""},
    {"\n\n# nothing\n", ""},
};

START_TEST(statement_forms)
{
    check_tree(statements[_i].src, statements[_i].tree);
}
END_TEST

/* ---- subscripts and calls ---- */

static const TreeCase postfix[] = {
    {"t[1]", "(expr (subscript t 1))"},
    {"t[1, 2]", "(expr (subscript t (tuple 1 2)))"},
    {"t[1,]", "(expr (subscript t (tuple 1)))"},
    {"t[1:2, ::3, None, ...]",
     "(expr (subscript t (tuple (slice 1 2 _) (slice _ _ 3) None ...)))"},
    {"t[:]", "(expr (subscript t (slice _ _ _)))"},
    {"t[::]", "(expr (subscript t (slice _ _ _)))"},
    {"t[1:]", "(expr (subscript t (slice 1 _ _)))"},
    {"t[:2]", "(expr (subscript t (slice _ 2 _)))"},
    {"t[1:2:3]", "(expr (subscript t (slice 1 2 3)))"},
    {"t[::-1]", "(expr (subscript t (slice _ _ (- 1))))"},
    {"t[a+1:b*2]", "(expr (subscript t (slice (+ a 1) (* b 2) _)))"},
    {"t[..., 0]", "(expr (subscript t (tuple ... 0)))"},
    {"t[None]", "(expr (subscript t None))"},
    {"t[(a, b),]", "(expr (subscript t (tuple (tuple a b))))"},
    {"t[(a, b)]", "(expr (subscript t (tuple a b)))"},
    {"A[(a, b), k]", "(expr (subscript A (tuple (tuple a b) k)))"},
    {"x[n, :, j]", "(expr (subscript x (tuple n (slice _ _ _) j)))"},
    {"t[i][j]", "(expr (subscript (subscript t i) j))"},
    {"input[roi_batch_ind][c]", "(expr (subscript (subscript input roi_batch_ind) c))"},
    {"t[f(x) if c else 0]", "(expr (subscript t (ifexp c (call f x) 0)))"},
    /* calls */
    {"f()", "(expr (call f))"},
    {"f(a,)", "(expr (call f a))"},
    {"f(a, b)", "(expr (call f a b))"},
    {"f(x, k=v)", "(expr (call f x (kw k v)))"},
    {"f(k=1, j=2,)", "(expr (call f (kw k 1) (kw j 2)))"},
    {"x.clamp(min=1.0)", "(expr (call (attr x clamp) (kw min 1.0)))"},
    {"f((a, b))", "(expr (call f (tuple a b)))"},
    {"f(a == b, c=d < e)", "(expr (call f (compare a (== b)) (kw c (compare d (< e)))))"},
    {"f(\n    a,\n    b=1,\n)", "(expr (call f a (kw b 1)))"},
    {"(val.sum((iy, ix)) / count).order(n, c)",
     "(expr (call (attr (/ (call (attr val sum) (tuple iy ix)) count) order) n c))"},
};

START_TEST(subscripts_and_calls)
{
    check_tree(postfix[_i].src, postfix[_i].tree);
}
END_TEST

/* ---- the shape of nodes beyond the dump ---- */

static LangUnit *parse_ok(LangSource *s)
{
    LangUnit *u = NULL;
    LangError err;
    LangStatus st = lang_parse(s, false, &u, &err);
    ck_assert_msg(st == LANG_OK, "status %d: %s", st, err.msg);
    return u;
}

static void assert_at(LangSource *s, uint32_t pos, int want_line, int want_col)
{
    int line, col;
    lang_source_linecol(s, pos, &line, &col);
    ck_assert_int_eq(line, want_line);
    ck_assert_int_eq(col, want_col);
}

START_TEST(node_positions)
{
    const char *text = "x = a + f(b)\nif c:\n    t[i].y += -1\n";
    LangSource *s = lang_source_new("<test>", text, strlen(text));
    LangUnit *u = parse_ok(s);
    Node *assign = u->body;
    ck_assert_int_eq(assign->kind, N_ASSIGN);
    assert_at(s, assign->pos, 1, 1);
    Node *plus = assign->b;
    ck_assert_int_eq(plus->kind, N_BINOP);
    ck_assert_int_eq(plus->op, OP_ADD);
    assert_at(s, plus->pos, 1, 7);                 /* a binary operator is at its operator */
    assert_at(s, plus->b->pos, 1, 10);             /* a call is at its '(' */
    Node *iff = assign->next;
    ck_assert_int_eq(iff->kind, N_IF);
    assert_at(s, iff->pos, 2, 1);
    Node *aug = iff->b;
    ck_assert_int_eq(aug->kind, N_AUGASSIGN);
    assert_at(s, aug->pos, 3, 12);                 /* augmented assignment is at its operator */
    ck_assert_int_eq(aug->a->kind, N_ATTR);
    assert_at(s, aug->a->pos, 3, 9);               /* an attribute is at its '.' */
    ck_assert_int_eq(aug->a->a->kind, N_SUBSCRIPT);
    assert_at(s, aug->a->a->pos, 3, 6);            /* a subscript is at its '[' */
    ck_assert_int_eq(aug->b->kind, N_UNARY);         /* -1 is negation applied to 1 */
    ck_assert_int_eq(aug->b->op, OP_NEG);
    ck_assert_int_eq(aug->b->a->ival, 1);
    lang_unit_release(u);
    lang_source_release(s);
}
END_TEST

START_TEST(node_counts)
{
    const char *text = "a = b = f(1, 2, k=3)\nx < y <= z\nt[1, 2:3, 4]\n(1, 2, 3, 4)\n";
    LangSource *s = lang_source_new("<test>", text, strlen(text));
    LangUnit *u = parse_ok(s);
    Node *assign = u->body;
    ck_assert_int_eq(assign->count, 2);
    ck_assert_int_eq(assign->b->kind, N_CALL);
    ck_assert_int_eq(assign->b->count, 3);
    ck_assert_int_eq(assign->b->b->next->next->kind, N_KWARG);
    ck_assert_str_eq(assign->b->b->next->next->str, "k");
    Node *cmp = assign->next->a;
    ck_assert_int_eq(cmp->kind, N_COMPARE);
    ck_assert_int_eq(cmp->count, 2);
    ck_assert_int_eq(cmp->b->op, OP_LT);
    ck_assert_int_eq(cmp->b->next->op, OP_LE);
    Node *sub = assign->next->next->a;
    ck_assert_int_eq(sub->b->kind, N_TUPLE);
    ck_assert_int_eq(sub->b->count, 3);
    ck_assert_int_eq(sub->b->a->next->kind, N_SLICE);
    ck_assert_int_eq(assign->next->next->next->a->count, 4);
    lang_unit_release(u);
    lang_source_release(s);
}
END_TEST

START_TEST(function_shape)
{
    const char *text = "def roi(input, boxes, scale=1.0, ratio=-1):\n    return 0\nf = lambda a, b=2: a\n";
    LangSource *s = lang_source_new("<test>", text, strlen(text));
    LangUnit *u = parse_ok(s);
    Node *def = u->body;
    ck_assert_int_eq(def->kind, N_DEF);
    ck_assert_str_eq(def->a->str, "roi");
    ck_assert_int_eq(def->a->kind, N_NAME);
    LangFunc *f = def->func;
    ck_assert_str_eq(f->name, "roi");
    ck_assert_int_eq(f->nparams, 4);
    ck_assert_int_eq(f->ndefaults, 2);
    ck_assert_str_eq(f->params->next->next->str, "scale");
    ck_assert_int_eq(f->params->next->next->a->kind, N_FLOAT);
    ck_assert_int_eq(f->body->kind, N_RETURN);
    ck_assert(!f->resolved);
    assert_at(s, f->pos, 1, 1);
    Node *lam = def->next->b;
    ck_assert_int_eq(lam->kind, N_LAMBDA);
    ck_assert_str_eq(lam->func->name, "<lambda>");
    ck_assert_int_eq(lam->func->nparams, 2);
    ck_assert_int_eq(lam->func->ndefaults, 1);
    ck_assert_int_eq(lam->func->body->kind, N_RETURN);
    ck_assert_ptr_null(lam->func->body->next);
    assert_at(s, lam->pos, 3, 5);
    lang_unit_release(u);
    lang_source_release(s);
}
END_TEST

START_TEST(names_start_unresolved)
{
    LangSource *s = lang_source_new("<test>", "x", 1);
    LangUnit *u = parse_ok(s);
    Node *x = u->body->a;
    ck_assert_int_eq(x->kind, N_NAME);
    ck_assert_int_eq(x->scope, SCOPE_UNRESOLVED);
    ck_assert_int_eq(x->builtin, -1);
    ck_assert_uint_eq(x->len, 1);
    lang_unit_release(u);
    lang_source_release(s);
}
END_TEST

START_TEST(unit_keeps_its_source)
{
    const char *text = "x = 'abc'";
    LangSource *s = lang_source_new("file.tdl", text, strlen(text));
    LangUnit *u = parse_ok(s);
    ck_assert_ptr_eq(u->src, s);
    ck_assert_int_eq(u->refcnt, 1);
    ck_assert_int_eq(s->refcnt, 2);
    lang_source_release(s);                        /* the unit still holds the source */
    ck_assert_str_eq(u->src->name, "file.tdl");
    ck_assert_ptr_eq(lang_unit_retain(u), u);
    ck_assert_int_eq(u->refcnt, 2);
    lang_unit_release(u);
    char out[64];
    lang_dump(u->body, out, sizeof out);
    ck_assert_str_eq(out, "(assign x 'abc')");
    lang_unit_release(u);
    lang_unit_release(NULL);
    lang_source_release(NULL);
}
END_TEST

START_TEST(dump_truncates)
{
    LangSource *s = lang_source_new("<test>", "f(alpha, beta)", 14);
    LangUnit *u = parse_ok(s);
    char out[8];
    size_t n = lang_dump(u->body, out, sizeof out);
    ck_assert_uint_eq(n, strlen("(expr (call f alpha beta))"));
    ck_assert_str_eq(out, "(expr (");
    ck_assert_uint_eq(lang_dump(u->body, NULL, 0), n);
    lang_unit_release(u);
    lang_source_release(s);
}
END_TEST

START_TEST(dump_names)
{
    ck_assert_str_eq(lang_node_kind_name(N_NAME), "name");
    ck_assert_str_eq(lang_node_kind_name(N_SUBSCRIPT), "subscript");
    ck_assert_str_eq(lang_node_kind_name(N_PARAM), "param");
    ck_assert_str_eq(lang_node_kind_name(N__COUNT), "?");
    ck_assert_str_eq(lang_op_text[OP_NOTIN], "not in");
    ck_assert_str_eq(lang_op_text[OP_ISNOT], "is not");
    ck_assert_str_eq(lang_op_text[OP_FLOORDIV], "//");
    ck_assert_str_eq(lang_op_text[OP_INVERT], "~");
}
END_TEST

/* ---- errors ---- */

static const ErrorCase errors[] = {
    /* invalid syntax names the unexpected token */
    SYN("x = 1 2", 1, 7, "invalid syntax: unexpected number '2'"),
    SYN("a b", 1, 3, "invalid syntax: unexpected name 'b'"),
    SYN("x = 'a' 1", 1, 9, "invalid syntax: unexpected number '1'"),
    SYN("f(x) 'abc'", 1, 6, "invalid syntax: unexpected string ''abc''"),
    SYN("x == = 1", 1, 6, "invalid syntax: unexpected '='"),
    SYN("else: pass", 1, 1, "invalid syntax: unexpected 'else'"),
    SYN("x = 1;;", 1, 7, "invalid syntax: unexpected ';'"),
    SYN("f(**a, *b)", 1, 8, "iterable argument unpacking follows keyword argument unpacking"),
    SYN("x = *a", 1, 5, "can't use starred expression here"),
    SYN("*a = b", 1, 1, "starred assignment target must be in a list or tuple"),
    SYN("a, *b, *c = d", 1, 1, "multiple starred expressions in assignment"),
    SYN("f(a for a in b, 1)", 1, 3, "Generator expression must be parenthesized"),
    SYN("x[]", 1, 3, "invalid syntax: unexpected ']'"),
    SYN("x.if", 1, 3, "invalid syntax: unexpected 'if'"),
    SYN("a.1", 1, 2, "invalid syntax: unexpected number '.1'"),
    SYN("x = y += 1", 1, 7, "invalid syntax: unexpected augmented assignment"),
    SYN("x is not", 1, 9, "invalid syntax: unexpected end of line"),
    SYN("x = ", 1, 5, "invalid syntax: unexpected end of line"),
    SYN("if x", 1, 5, "invalid syntax: unexpected end of line"),
    SYN("x = 1 +\ny = 2", 1, 8, "invalid syntax: unexpected end of line"),
    SYN("def f(: pass", 1, 7, "invalid syntax: unexpected ':'"),
    SYN("def f(1): pass", 1, 7, "invalid syntax: unexpected number '1'"),
    SYN("def (): pass", 1, 5, "invalid syntax: unexpected '('"),
    SYN("f(yield)", 1, 3, "invalid syntax: unexpected 'yield'"),
    SYN("import a.b.", 1, 12, "invalid syntax: unexpected end of line"),
    SYN("import 'a'", 1, 8, "invalid syntax: unexpected string ''a''"),
    SYN("global a.b", 1, 9, "invalid syntax: unexpected '.'"),
    SYN("return = 1", 1, 8, "invalid syntax: unexpected '='"),
    IND("if a:\n  x\n else:\n  y", 3, 2, "unindent does not match any outer indentation level"),
    SYN("if a:\n    x\ny\nelse: z", 4, 1, "invalid syntax: unexpected 'else'"),
    SYN("for x in range(3) pass", 1, 19, "invalid syntax: unexpected 'pass'"),
    SYN("x = " "\"" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" "\" 1", 1, 58,
        "invalid syntax: unexpected number '1'"),
    /* a long token is shortened to 40 bytes in the message */
    SYN("x y2345678901234567890123456789012345678901234567890", 1, 3,
        "invalid syntax: unexpected name 'y234567890123456789012345678901234567890'"),
    /* assignment targets */
    SYN("1 = x", 1, 1, "cannot assign to literal"),
    SYN("'a' = x", 1, 1, "cannot assign to literal"),
    SYN("None = x", 1, 1, "cannot assign to literal"),
    SYN("x = 1 = y", 1, 5, "cannot assign to literal"),
    SYN("a, 1 = x", 1, 4, "cannot assign to literal"),
    SYN("a, (b, 2.5) = x", 1, 8, "cannot assign to literal"),
    SYN("f() = x", 1, 1, "cannot assign to function call"),
    SYN("x.f(y) = 1", 1, 1, "cannot assign to function call"),
    SYN("a, g(b) = x", 1, 4, "cannot assign to function call"),
    SYN("x + 1 = y", 1, 1, "cannot assign to expression"),
    SYN("-x = y", 1, 1, "cannot assign to expression"),
    SYN("a < b = c", 1, 1, "cannot assign to comparison"),
    SYN("a if b else c = d", 1, 3, "cannot assign to conditional expression"),
    SYN("lambda: 0 = x", 1, 1, "cannot assign to lambda"),
    SYN("for f() in x: pass", 1, 5, "cannot assign to function call"),
    SYN("for 1 in x: pass", 1, 5, "cannot assign to literal"),
    SYN("x, y += 1", 1, 1, "'tuple' is an illegal expression for augmented assignment"),
    SYN("1 += 1", 1, 1, "'literal' is an illegal expression for augmented assignment"),
    SYN("f(x) += 1", 1, 1, "'function call' is an illegal expression for augmented assignment"),
    SYN("a + b -= 1", 1, 1, "'expression' is an illegal expression for augmented assignment"),
    /* arguments and parameters */
    SYN("f(k=1, 2)", 1, 8, "positional argument follows keyword argument"),
    SYN("f(a, k=1, b, c)", 1, 11, "positional argument follows keyword argument"),
    SYN("f(a=1, a=2)", 1, 8, "keyword argument repeated: a"),
    SYN("f(1=2)", 1, 4, "invalid syntax: unexpected '='"),
    SYN("def f(a, a): pass", 1, 10, "duplicate argument 'a' in function definition"),
    SYN("def f(a, b, c=1, a=2): pass", 1, 18, "duplicate argument 'a' in function definition"),
    SYN("lambda a, a: 0", 1, 11, "duplicate argument 'a' in function definition"),
    SYN("def f(a=1, b): pass", 1, 12, "non-default argument follows default argument"),
    SYN("lambda a=1, b: 0", 1, 13, "non-default argument follows default argument"),
    SYN("def f(x, y=2,\n      z): pass", 2, 7, "non-default argument follows default argument"),
    /* indentation */
    IND("if x:\npass", 2, 1, "expected an indented block after ':' on line 1"),
    IND("x = 1\nwhile x:\n# comment\n\nx -= 1", 5, 1, "expected an indented block after ':' on line 2"),
    IND("for i in x:\n    pass\nelse:\nbreak", 4, 1, "expected an indented block after ':' on line 3"),
    IND("def f():\nreturn 1", 2, 1, "expected an indented block after ':' on line 1"),
    IND("if a:\n    if b:\n    x", 3, 5, "expected an indented block after ':' on line 2"),
    IND(" x = 1", 1, 2, "unexpected indent"),
    IND("x = 1\n  y = 2", 2, 3, "unexpected indent"),
    IND("if a:\n    x\n        y", 3, 9, "unexpected indent"),
    IND("if a:\n  x\n y", 3, 2, "unindent does not match any outer indentation level"),
    /* integer literals */
    SYN("9223372036854775808", 1, 1,
        "integer literal too large: tdl ints are 64-bit (at most 9223372036854775807)"),
    SYN("x = 1 + 9223372036854775808", 1, 9,
        "integer literal too large: tdl ints are 64-bit (at most 9223372036854775807)"),
    SYN("-(9223372036854775808)", 1, 3,
        "integer literal too large: tdl ints are 64-bit (at most 9223372036854775807)"),
    SYN("-9223372036854775809", 1, 2,
        "integer literal too large: tdl ints are 64-bit (at most 9223372036854775807)"),
    SYN("99999999999999999999999", 1, 1,
        "integer literal too large: tdl ints are 64-bit (at most 9223372036854775807)"),
    SYN("0xFFFFFFFFFFFFFFFFF", 1, 1,
        "integer literal too large: tdl ints are 64-bit (at most 9223372036854775807)"),
    SYN("0x8000000000000000", 1, 1,
        "integer literal too large: tdl ints are 64-bit (at most 9223372036854775807)"),
    SYN("def f(x=9223372036854775808): pass", 1, 9,
        "integer literal too large: tdl ints are 64-bit (at most 9223372036854775807)"),
    /* string escapes */
    SYN("'\\x4'", 1, 2, "truncated \\xXX escape in string literal"),
    SYN("'ab\\u12'", 1, 4, "truncated \\uXX escape in string literal"),
    SYN("'\\U00110000'", 1, 2, "illegal Unicode character in string literal"),
    /* lexical errors come through lang_parse too */
    SYN("x = 1\ny = $", 2, 5, "invalid character '$' (U+0024)"),
    SYN("x = (1, 2]", 1, 10, "closing parenthesis ']' does not match opening parenthesis '(' on line 1"),
    SYN("class A(*b):\n    pass", 1, 9, "starred bases are not supported in tdl"),
    SYN("def f(*, **k): pass", 1, 7, "named arguments must follow bare *"),
    SYN("def f(**k, a): pass", 1, 12, "arguments cannot follow var-keyword argument"),
    SYN("def f(*a, *b): pass", 1, 12, "* argument may appear only once"),
    SYN("x := 1", 1, 3, "invalid syntax"),
};

START_TEST(syntax_errors)
{
    check_error(&errors[_i]);
}
END_TEST

/* Nesting limits are errors, not crashes (the column depends on the parser's stack size). */
START_TEST(too_deep_nesting)
{
    static const char *const texts[] = {"-", "not ", "1 if 2 else ", "lambda: ", "a ** "};
    for (int i = 0; i < N_CASES(texts); i++) {
        char text[4096] = "x = ";
        size_t n = 4;
        while (n + strlen(texts[i]) < 3000) {
            memcpy(text + n, texts[i], strlen(texts[i]));
            n += strlen(texts[i]);
        }
        text[n++] = 'x';
        LangSource *s = lang_source_new("<test>", text, n);
        LangUnit *u;
        LangError err;
        ck_assert_int_eq(lang_parse(s, false, &u, &err), LANG_ERROR);
        ck_assert_str_eq(err.msg, "too many nested expressions or blocks");
        ck_assert_int_eq(err.kind, LANG_SYNTAX_ERROR);
        lang_source_release(s);
    }
}
END_TEST

/* Input that ends early is LANG_INCOMPLETE, in both modes; the REPL rule adds open blocks. */
static const ErrorCase incomplete[] = {
    {"f(1,", false, LANG_INCOMPLETE, LANG_SYNTAX_ERROR, 1, 2, "'(' was never closed"},
    {"(1 +\n2", false, LANG_INCOMPLETE, LANG_SYNTAX_ERROR, 1, 1, "'(' was never closed"},
    {"x = [1, (2", true, LANG_INCOMPLETE, LANG_SYNTAX_ERROR, 1, 9, "'(' was never closed"},
    {"x = [1,\n  2,\n", true, LANG_INCOMPLETE, LANG_SYNTAX_ERROR, 1, 5, "'[' was never closed"},
    {"if x:", false, LANG_INCOMPLETE, LANG_INDENTATION_ERROR, 1, 6,
     "expected an indented block after ':' on line 1"},
    {"if x:\n", false, LANG_INCOMPLETE, LANG_INDENTATION_ERROR, 2, 1,
     "expected an indented block after ':' on line 1"},
    {"if x:\n", true, LANG_INCOMPLETE, LANG_INDENTATION_ERROR, 2, 1,
     "expected an indented block after ':' on line 1"},
    {"x = 1\nif x:\n    pass\nelse:", false, LANG_INCOMPLETE, LANG_INDENTATION_ERROR, 4, 6,
     "expected an indented block after ':' on line 4"},
    {"def f():\n    return 1\n", true, LANG_INCOMPLETE, LANG_SYNTAX_ERROR, 3, 1,
     "unexpected end of input in a block"},
    {"for x in y:\n    pass", true, LANG_INCOMPLETE, LANG_SYNTAX_ERROR, 2, 9,
     "unexpected end of input in a block"},
    {"x = '''abc\n", true, LANG_INCOMPLETE, LANG_SYNTAX_ERROR, 1, 5,
     "unterminated triple-quoted string literal"},
    {"x = '''abc\n", false, LANG_ERROR, LANG_SYNTAX_ERROR, 1, 5,
     "unterminated triple-quoted string literal"},
};

START_TEST(incomplete_input)
{
    check_error(&incomplete[_i]);
}
END_TEST

static const TreeCase complete_interactive[] = {
    {"x = 1", "(assign x 1)"},
    {"if a:\n    x\n\n", "(if a [(expr x)])"},
    {"def f():\n    return 1\n    \n", "(def f () [(return 1)])"},
    {"if a:\n    x\ny\n", "(if a [(expr x)])\n(expr y)"},
    {"x = (1 +\n2)", "(assign x (+ 1 2))"},
};

START_TEST(complete_interactive_input)
{
    const TreeCase *c = &complete_interactive[_i];
    LangSource *s = lang_source_new("<stdin>", c->src, strlen(c->src));
    LangUnit *u;
    LangError err;
    ck_assert_int_eq(lang_parse(s, true, &u, &err), LANG_OK);
    char out[1024];
    lang_dump(u->body, out, sizeof out);
    ck_assert_str_eq(out, c->tree);
    lang_unit_release(u);
    lang_source_release(s);
}
END_TEST

START_TEST(null_byte_in_source)
{
    static const char text[] = "x = 1\ny = 2\0\n";
    LangSource *s = lang_source_new("<test>", text, sizeof text - 1);
    LangUnit *u;
    LangError err;
    ck_assert_int_eq(lang_parse(s, false, &u, &err), LANG_ERROR);
    ck_assert_str_eq(err.msg, "source code cannot contain null bytes");
    assert_at(s, err.pos, 2, 6);
    lang_source_release(s);
}
END_TEST

/* ---- positions and carets ---- */

typedef struct { const char *text; uint32_t pos; int line, col; } LineColCase;

static const LineColCase linecols[] = {
    {"abc", 0, 1, 1},
    {"abc", 2, 1, 3},
    {"abc", 3, 1, 4},                   /* the end of the text */
    {"abc", 99, 1, 4},                  /* past the end: clamped */
    {"a\nbc\n", 2, 2, 1},
    {"a\nbc\n", 4, 2, 3},               /* the newline itself */
    {"a\nbc\n", 5, 3, 1},
    {"\n\n\nx", 3, 4, 1},
    {"\xC3\xA9t\xC3\xA9 = 1", 5, 1, 4}, /* columns count characters, not bytes */
    {"x = '\xE2\x82\xAC' + $", 12, 1, 11},
    {"\tx", 1, 1, 2},                   /* a tab is one column */
    {"a\r\nb", 3, 2, 1},                /* \r\n and a lone \r end a line, as in the lexer */
    {"a\r\nb", 1, 1, 2},
    {"a\rb $", 4, 2, 3},
    {"", 0, 1, 1},
};

START_TEST(line_and_column)
{
    const LineColCase *c = &linecols[_i];
    LangSource *s = lang_source_new("<test>", c->text, strlen(c->text));
    int line = 0, col = 0;
    lang_source_linecol(s, c->pos, &line, &col);
    ck_assert_int_eq(line, c->line);
    ck_assert_int_eq(col, c->col);
    lang_source_release(s);
}
END_TEST

START_TEST(source_lines)
{
    const char *text = "first\r\nsecond\n\rlast";
    LangSource *s = lang_source_new("<test>", text, strlen(text));
    const char *start;
    size_t len;
    ck_assert(lang_source_line(s, 1, &start, &len));
    ck_assert_int_eq((int)len, 5);
    ck_assert(memcmp(start, "first", 5) == 0);      /* without its \r\n */
    ck_assert(lang_source_line(s, 2, &start, &len));
    ck_assert_int_eq((int)len, 6);
    ck_assert(memcmp(start, "second", 6) == 0);
    ck_assert(lang_source_line(s, 3, &start, &len));
    ck_assert_int_eq((int)len, 0);
    ck_assert(lang_source_line(s, 4, &start, &len));
    ck_assert_int_eq((int)len, 4);
    ck_assert(!lang_source_line(s, 0, &start, &len));
    ck_assert(!lang_source_line(s, 5, &start, &len));
    ck_assert_str_eq(s->name, "<test>");
    lang_source_release(s);

    s = lang_source_new(NULL, "", 0);
    ck_assert_str_eq(s->name, "<string>");
    lang_source_release(s);
}
END_TEST

typedef struct { const char *text; uint32_t pos; const char *caret; } CaretCase;

static const CaretCase carets[] = {
    {"x = 1 $ 2", 6, "    x = 1 $ 2\n          ^\n"},
    {"x = 1 $ 2", 0, "    x = 1 $ 2\n    ^\n"},
    {"x = 1", 5, "    x = 1\n         ^\n"},                      /* just past the end of the line */
    /* leading white space is dropped and the caret stays under its character */
    {"if a:\n    y = $\n", 14, "    y = $\n        ^\n"},
    {"if a:\n\ty = $\n", 11, "    y = $\n        ^\n"},
    /* the second line of three */
    {"a\nbb cc\nd", 5, "    bb cc\n       ^\n"},
    /* UTF-8: one caret column per character */
    {"\xC3\xA9 = $", 5, "    \xC3\xA9 = $\n        ^\n"},
    {"x\r\ny $\r\n", 5, "    y $\n      ^\n"},                   /* the \r is not shown */
    {"x\ry $\r", 4, "    y $\n      ^\n"},
    /* a blank line or a white-space-only line gives nothing */
    {"a\n\nb", 2, ""},
    {"a\n   \nb", 3, ""},
};

START_TEST(caret_lines)
{
    const CaretCase *c = &carets[_i];
    LangSource *s = lang_source_new("<test>", c->text, strlen(c->text));
    char buf[256];
    size_t n = lang_source_caret(s, c->pos, buf, sizeof buf);
    ck_assert_str_eq(buf, c->caret);
    ck_assert_uint_eq(n, strlen(c->caret));
    lang_source_release(s);
}
END_TEST

START_TEST(caret_truncates)
{
    LangSource *s = lang_source_new("<test>", "abcdefgh $", 10);
    char buf[12];
    size_t n = lang_source_caret(s, 9, buf, sizeof buf);
    ck_assert_str_eq(buf, "    abcdefg");
    ck_assert_uint_eq(n, 11);
    ck_assert_uint_eq(lang_source_caret(s, 9, buf, 0), 0);
    lang_source_release(s);
}
END_TEST

START_TEST(caret_of_parse_error)
{
    const char *text = "def f(x):\n    return x +* 2\n";
    LangSource *s = lang_source_new("f.tdl", text, strlen(text));
    LangUnit *u;
    LangError err;
    ck_assert_int_eq(lang_parse(s, false, &u, &err), LANG_ERROR);
    ck_assert_str_eq(err.msg, "invalid syntax: unexpected '*'");
    char buf[256];
    lang_source_caret(s, err.pos, buf, sizeof buf);
    ck_assert_str_eq(buf, "    return x +* 2\n              ^\n");
    lang_source_release(s);
}
END_TEST

Suite *parser_suite(void)
{
    Suite *s = suite_create("parser");
    TCase *tc = tcase_create("trees");
    tcase_add_loop_test(tc, operator_precedence, 0, N_CASES(precedence));
    tcase_add_loop_test(tc, atoms_and_literals, 0, N_CASES(atoms));
    tcase_add_loop_test(tc, string_literals, 0, N_CASES(string_cases));
    tcase_add_loop_test(tc, statement_forms, 0, N_CASES(statements));
    tcase_add_loop_test(tc, subscripts_and_calls, 0, N_CASES(postfix));
    tcase_add_test(tc, node_positions);
    tcase_add_test(tc, node_counts);
    tcase_add_test(tc, function_shape);
    tcase_add_test(tc, names_start_unresolved);
    tcase_add_test(tc, unit_keeps_its_source);
    tcase_add_test(tc, dump_truncates);
    tcase_add_test(tc, dump_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_loop_test(tc, syntax_errors, 0, N_CASES(errors));
    tcase_add_loop_test(tc, incomplete_input, 0, N_CASES(incomplete));
    tcase_add_loop_test(tc, complete_interactive_input, 0, N_CASES(complete_interactive));
    tcase_add_test(tc, null_byte_in_source);
    tcase_add_test(tc, too_deep_nesting);
    suite_add_tcase(s, tc);

    tc = tcase_create("source");
    tcase_add_loop_test(tc, line_and_column, 0, N_CASES(linecols));
    tcase_add_test(tc, source_lines);
    tcase_add_loop_test(tc, caret_lines, 0, N_CASES(carets));
    tcase_add_test(tc, caret_truncates);
    tcase_add_test(tc, caret_of_parse_error);
    suite_add_tcase(s, tc);
    return s;
}
