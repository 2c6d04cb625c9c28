/* test_eval.c — the evaluator through the public API: values, control flow, functions and
 * closures, errors with their kind, message and position, the REPL statuses, imports. */
#include "tests.h"
#include "capture.h"
#include "tdl.h"
#include "interp.h"         /* ctxmgr_new: a context manager made in C, as a builtin would make one */

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static Out out;
static tdl_interp *T;

static void setup(void)
{
    memset(&out, 0, sizeof out);
    tdl_config cfg = {0};
    cfg.write = capture;
    cfg.write_ud = &out;
    T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
}

static void teardown(void)
{
    tdl_close(T);
    T = NULL;
}

/* ---- programs and what they print ---- */

static const struct { const char *code, *want; } programs[] = {
    {"print(1 + 2 * 3, 7 // 2, -7 // 2, 7 % -3, 2 ** 10, 2 ** -1)", "7 3 -4 -2 1024 0.5\n"},
    {"print(0.1 + 0.2, 1e16, -0.0, 1 / 3, 10 / 2)", "0.30000000000000004 1e+16 -0.0 0.3333333333333333 5.0\n"},
    {"print((1,), (), [1, 'a'], None, True)", "(1,) () [1, 'a'] None True\n"},
    {"print(1 < 2 < 3, 1 < 3 < 2, (1 < 2) < 2, 3 > 2 == 2)", "True False True True\n"},
    {"print(0 or 'x', 1 and 2, not 0, None or [])", "x 2 True []\n"},
    {"x = [1, 2, 3]\nprint(2 in x, 5 not in x, x is x, x is not [1, 2, 3])", "True True True True\n"},
    {"print('yes' if 1 > 2 else 'no', 'a' if 0 else 'b' if 1 else 'c')", "no b\n"},
    {"def f(a, b=2, c=3):\n    return a + b * c\nprint(f(1), f(1, c=10), f(c=1, b=1, a=1))", "7 21 2\n"},
    {"def mk():\n    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n        return n\n    return inc\n"
     "c = mk()\nc()\nc()\nprint(c())", "3\n"},
    {"fs = []\nfor i in range(3):\n    fs.append(lambda x, i=i: x + i)\nprint(fs[2](10))", "12\n"},
    {"def adder(n):\n    return lambda x: x + n\nprint(adder(5)(1))", "6\n"},
    {"d = 1\ndef f(x=d):\n    return x\nd = 2\nprint(f())", "1\n"},
    {"def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nprint(fib(20))", "6765\n"},
    {"s = 0\nfor i in range(10):\n    if i == 7:\n        break\n    if i % 2:\n        continue\n    s += i\nelse:\n    s = -1\nprint(s)", "12\n"},
    {"i = 0\nwhile i < 3:\n    i += 1\nelse:\n    print('done', i)", "done 3\n"},
    {"a, (b, c) = 1, [2, 3]\nprint(a, b, c)", "1 2 3\n"},
    {"a = b = [0]\na += [1]\nprint(b)", "[0, 1]\n"},
    {"t = 'hello'\nprint(t[1], t[-1], t[1:3], t[::-1], t[::2])", "e o el olleh hlo\n"},
    {"l = list(range(10))\nprint(l[2:8:3], l[-3:], l[:-8], l[::-3])", "[2, 5] [7, 8, 9] [0, 1] [9, 6, 3, 0]\n"},
    {"l = [0, 1, 2, 3]\nl[1:3] = [9]\nl[0] = 'a'\nprint(l)", "['a', 9, 3]\n"},
    {"for ch in 'ab':\n    print(ch)", "a\nb\n"},
    {"for a, b in [(1, 2), (3, 4)]:\n    print(a * b)", "2\n12\n"},
    {"x = 5\ndef g():\n    global x\n    x = 7\ng()\nprint(x)", "7\n"},
    {"assert True, 'never'\nprint('ok')", "ok\n"},
    {"print(type(1), type(1.0), type('s'), type(None), type([]))",
     "<class 'int'> <class 'float'> <class 'str'> <class 'NoneType'> <class 'list'>\n"},
    {"print(-9223372036854775807 - 1)", "-9223372036854775808\n"},
    {"print(7 & 3, 7 | 8, 7 ^ 2, ~5, 1 << 4, -16 >> 2, True & False)", "3 15 5 -6 16 -4 False\n"},
    {"print(-7.5 // 2, -7.5 % 2, 7.5 % -2)", "-4.0 0.5 -0.5\n"},
    {"print(1 == 1.0, 2 ** 53 + 1 == float(2 ** 53 + 1), 'a' < 'b', (1, 2) < (1, 3))", "True False True True\n"},
    {"print([1, 2] * 2, 'ab' * 3, (0,) * 2)", "[1, 2, 1, 2] ababab (0, 0)\n"},
    {"print('a', 'b', sep='-', end='!\\n')", "a-b!\n"},
    {"if 0:\n    pass\nelif 0:\n    pass\nelif 1:\n    print('third')\nelse:\n    print('no')", "third\n"},
    {"def f():\n    pass\nprint(f())", "None\n"},
    {"x = 1; y = 2; print(x + y)", "3\n"},
    {"print(__name__)", "__main__\n"},
};

START_TEST(test_program)
{
    tdl_status st = tdl_run_string(T, programs[_i].code, "<test>");
    ck_assert_msg(st == TDL_OK, "%s\n%s", programs[_i].code, tdl_error_report(T));
    ck_assert_str_eq(out.buf, programs[_i].want);
}
END_TEST

/* ---- errors: kind, message and line:col ---- */

static const struct { const char *code; tdl_error_kind kind; const char *msg, *where; } errors[] = {
    {"x = 1 / 0", TDL_ERR_ZERO_DIVISION, "division by zero", "<test>:1:7:"},
    {"print(undefined_name)", TDL_ERR_NAME, "name 'undefined_name' is not defined", "<test>:1:7:"},
    {"def f():\n    y = x + 1\n    x = 2\nf()", TDL_ERR_UNBOUND_LOCAL,
     "cannot access local variable 'x' where it is not associated with a value", "<test>:2:9:"},
    {"'a' + 1", TDL_ERR_TYPE, "can only concatenate str (not \"int\") to str", "<test>:1:5:"},
    {"[1, 2][5]", TDL_ERR_INDEX, "list index out of range", "<test>:1:7:"},
    {"assert 1 == 2, 'one is not two'", TDL_ERR_ASSERTION, "one is not two", "<test>:1:1:"},
    {"def f():\n    return f()\nf()", TDL_ERR_RECURSION, "maximum recursion depth exceeded", "<test>:2:13:"},
    {"x = 9223372036854775807\nx + 1", TDL_ERR_OVERFLOW,
     "integer overflow: 9223372036854775807 + 1 does not fit in 64 bits", "<test>:2:3:"},
    {"2 ** 64", TDL_ERR_OVERFLOW, "integer overflow: 2 ** 64 does not fit in 64 bits", "<test>:1:3:"},
    {"a, b = 1, 2, 3", TDL_ERR_VALUE, "too many values to unpack (expected 2)", "<test>:1:1:"},
    {"def f(a, b):\n    pass\nf(1)", TDL_ERR_TYPE, "f() missing 1 required positional argument: 'b'", "<test>:3:2:"},
    {"def f(a):\n    pass\nf(1, 2)", TDL_ERR_TYPE, "f() takes 1 positional argument but 2 were given", "<test>:3:2:"},
    {"def f(a):\n    pass\nf(b=1)", TDL_ERR_TYPE, "f() got an unexpected keyword argument 'b'", "<test>:3:2:"},
    {"(1, 2)[0] = 3", TDL_ERR_TYPE, "'tuple' object does not support item assignment", "<test>:1:7:"},
    {"x = (1 +\n", TDL_ERR_SYNTAX, "'(' was never closed", "<test>:1:5:"},
    {"if 1:\nprint(2)", TDL_ERR_INDENTATION, "expected an indented block after ':' on line 1", "<test>:2:1:"},
    {"return 5", TDL_ERR_SYNTAX, "'return' outside function", "<test>:1:1:"},
    {"break", TDL_ERR_SYNTAX, "'break' outside loop", "<test>:1:1:"},
    {"import no_such_module_here", TDL_ERR_IMPORT, "No module named 'no_such_module_here'", "<test>:1:1:"},
    {"None.x", TDL_ERR_ATTRIBUTE, "'NoneType' object has no attribute 'x'", "<test>:1:5:"},
    {"5()", TDL_ERR_TYPE, "'int' object is not callable", "<test>:1:2:"},
    {"1 < 'a'", TDL_ERR_TYPE, "'<' not supported between instances of 'int' and 'str'", "<test>:1:3:"},
};

START_TEST(test_error)
{
    tdl_status st = tdl_run_string(T, errors[_i].code, "<test>");
    ck_assert_int_eq(st, TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), errors[_i].kind);
    ck_assert_str_eq(tdl_error_message(T), errors[_i].msg);
    const char *rep = tdl_error_report(T);
    ck_assert_msg(strstr(rep, errors[_i].where) != NULL, "report lacks %s:\n%s", errors[_i].where, rep);
    /* the last line names the kind and the message */
    char last[512];
    snprintf(last, sizeof last, "%s: %s\n", tdl_error_kind_name(errors[_i].kind), errors[_i].msg);
    ck_assert_msg(strstr(rep, last) != NULL, "report lacks '%s':\n%s", last, rep);
    /* and the interpreter is still usable */
    ck_assert_int_eq(tdl_run_string(T, "print('after')", "<test>"), TDL_OK);
    ck_assert_ptr_nonnull(strstr(out.buf, "after\n"));
}
END_TEST

START_TEST(test_traceback_layout)
{
    const char *code = "def inner(x):\n    return 1 // x\n\ndef outer():\n    return inner(0)\n\nouter()\n";
    ck_assert_int_eq(tdl_run_string(T, code, "prog.tdl"), TDL_ERROR);
    ck_assert_str_eq(tdl_error_report(T),
                     "Traceback (most recent call last):\n"
                     "  prog.tdl:7:6: in <module>\n"
                     "      outer()\n"
                     "           ^\n"
                     "  prog.tdl:5:17: in outer\n"
                     "      return inner(0)\n"
                     "                  ^\n"
                     "  prog.tdl:2:14: in inner\n"
                     "      return 1 // x\n"
                     "               ^\n"
                     "prog.tdl:2:14: ZeroDivisionError: integer division or modulo by zero\n");
}
END_TEST

START_TEST(test_syntax_error_layout)
{
    ck_assert_int_eq(tdl_run_string(T, "x = 1\ny = (2 + * 3)\n", "prog.tdl"), TDL_ERROR);
    ck_assert_str_eq(tdl_error_report(T),
                     "prog.tdl:2:10: SyntaxError: invalid syntax: unexpected '*'\n"
                     "    y = (2 + * 3)\n"
                     "             ^\n");
}
END_TEST

/* ---- the REPL's statuses ---- */

START_TEST(test_interactive)
{
    const char *incomplete[] = {"def f():\n", "x = (1,\n", "if 1:\n    y = 2\n", "s = '''abc\n"};
    for (size_t i = 0; i < sizeof incomplete / sizeof incomplete[0]; i++)
        ck_assert_int_eq(tdl_run_string_ex(T, incomplete[i], strlen(incomplete[i]), "<stdin>", TDL_RUN_INTERACTIVE),
                         TDL_INCOMPLETE);
    const char *block = "if 1:\n    y = 2\n\n";
    ck_assert_int_eq(tdl_run_string_ex(T, block, strlen(block), "<stdin>", TDL_RUN_INTERACTIVE), TDL_OK);
    ck_assert_int_eq(tdl_run_string_ex(T, "y * 21\n", 7, "<stdin>", TDL_RUN_INTERACTIVE), TDL_OK);
    ck_assert_int_eq(tdl_run_string_ex(T, "None\n", 5, "<stdin>", TDL_RUN_INTERACTIVE), TDL_OK);
    ck_assert_int_eq(tdl_run_string_ex(T, "'s'\n", 4, "<stdin>", TDL_RUN_INTERACTIVE), TDL_OK);
    ck_assert_str_eq(out.buf, "42\n's'\n");
    /* not interactive: the same text is an error */
    ck_assert_int_eq(tdl_run_string(T, "def f():\n", "<test>"), TDL_ERROR);
}
END_TEST

START_TEST(test_exit)
{
    ck_assert_int_eq(tdl_run_string(T, "print('a')\nexit(3)\nprint('b')", "<test>"), TDL_EXIT);
    ck_assert_int_eq(tdl_exit_code(T), 3);
    ck_assert_str_eq(out.buf, "a\n");
    ck_assert_int_eq(tdl_run_string(T, "def f():\n    exit(0)\nf()", "<test>"), TDL_EXIT);
    ck_assert_int_eq(tdl_exit_code(T), 0);
}
END_TEST

START_TEST(test_globals_persist)
{
    ck_assert_int_eq(tdl_run_string(T, "def f():\n    return later * 2\n", "<a>"), TDL_OK);
    ck_assert_int_eq(tdl_run_string(T, "later = 21", "<b>"), TDL_OK);
    ck_assert_int_eq(tdl_run_string(T, "print(f())", "<c>"), TDL_OK);
    ck_assert_str_eq(out.buf, "42\n");
}
END_TEST

START_TEST(test_two_interpreters)
{
    tdl_interp *U = tdl_open(NULL);
    ck_assert_ptr_nonnull(U);
    ck_assert_int_eq(tdl_run_string(T, "x = 1", NULL), TDL_OK);
    ck_assert_int_eq(tdl_run_string(U, "x", NULL), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(U), TDL_ERR_NAME);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_NONE);
    tdl_close(U);
}
END_TEST

static void *interrupt_later(void *arg)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    tdl_interrupt(arg);
    return NULL;
}

START_TEST(test_interrupt)
{
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, interrupt_later, T), 0);
    tdl_status st = tdl_run_string(T, "n = 0\nwhile True:\n    n += 1\n", "<test>");
    pthread_join(th, NULL);
    ck_assert_int_eq(st, TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_INTERRUPT);
    ck_assert_str_eq(tdl_error_kind_name(TDL_ERR_INTERRUPT), "KeyboardInterrupt");
    /* the interpreter goes on, and the loop did run */
    ck_assert_int_eq(tdl_run_string(T, "print(n > 0)", "<test>"), TDL_OK);
    ck_assert_str_eq(out.buf, "True\n");
}
END_TEST

START_TEST(test_cycles_freed)
{
    /* reference cycles (a recursive closure, a list containing itself) are freed by tdl_close;
       LeakSanitizer checks it when the suite runs under SANITIZE=1 */
    ck_assert_int_eq(tdl_run_string(T, "def f():\n    def g():\n        return g\n    return g\nh = f()\n"
                                       "l = [1]\nl.append(l)\n", NULL), TDL_OK);
}
END_TEST

/* ---- long chains (issue 23) ---- */

/* head + n copies of unit + tail, malloc'd. */
static char *repeat(const char *head, const char *unit, int n, const char *tail)
{
    size_t lh = strlen(head), lu = strlen(unit), lt = strlen(tail);
    char *t = malloc(lh + (size_t)n * lu + lt + 1);
    ck_assert_ptr_nonnull(t);
    memcpy(t, head, lh);
    for (int i = 0; i < n; i++) memcpy(t + lh + (size_t)i * lu, unit, lu);
    memcpy(t + lh + (size_t)n * lu, tail, lt + 1);
    return t;
}

/* Left-associative chains grow the tree without growing the parser's stack; past a few thousand
 * levels they are a SyntaxError at the level that crosses the limit (CPython refuses them too),
 * not a stack overflow in whichever walker of the tree comes first. Below the limit they run. */
static const struct { const char *head, *unit, *tail; int n; const char *want; } chains[] = {
    {"x = ", "1+", "1\nprint(x)", 50000, NULL},
    {"x = ", "1 and ", "1\nprint(x)", 100000, NULL},
    {"x = [1]\nx = x", "[0:]", "\nprint(x)", 100000, NULL},
    {"f = lambda: f\nx = f", "()", "\nprint(x)", 100000, NULL},
    {"def f():\n    return ", "1 or ", "1\nprint(f())", 100000, NULL},
    {"x = ", "1+", "1\nprint(x)", 2900, "2901\n"},
    {"x = ", "1 and ", "2\nprint(x)", 2900, "2\n"},
    {"x = [1]\nx = x", "[0:]", "\nprint(x)", 2900, "[1]\n"},
    {"f = lambda: f\nx = f", "()", "\nprint(x is f)", 2900, "True\n"},
};

START_TEST(test_long_chain)
{
    char *code = repeat(chains[_i].head, chains[_i].unit, chains[_i].n, chains[_i].tail);
    tdl_status st = tdl_run_string(T, code, "<test>");
    if (chains[_i].want) {
        ck_assert_msg(st == TDL_OK, "%s", tdl_error_report(T));
        ck_assert_str_eq(out.buf, chains[_i].want);
    } else {
        ck_assert_int_eq(st, TDL_ERROR);
        ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_SYNTAX);
        ck_assert_str_eq(tdl_error_message(T), "expression too deeply nested or too long a chain of operators, "
                                               "calls or subscripts (more than 3000 levels)");
        ck_assert_ptr_nonnull(strstr(tdl_error_report(T), "<test>:"));
        ck_assert_int_eq(tdl_run_string(T, "print('after')", "<test>"), TDL_OK);
        ck_assert_str_eq(out.buf, "after\n");
    }
    free(code);
}
END_TEST

/* A deep expression in every frame of a deep recursion runs out of C stack between two calls:
 * the evaluator checks the stack too, so that is a RecursionError, not a crash. */
START_TEST(test_deep_expression_in_recursion)
{
    char *code = repeat("def f(n):\n    if n == 0:\n        return 0\n    return f(n - 1)", "+1", 2990,
                        "\nprint(f(2))\nprint(f(900))");
    ck_assert_int_eq(tdl_run_string(T, code, "<test>"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_RECURSION);
    ck_assert_str_eq(out.buf, "5980\n");
    ck_assert_int_eq(tdl_run_string(T, "print(f(1))", "<test>"), TDL_OK);
    ck_assert_str_eq(out.buf, "5980\n2990\n");
    free(code);
}
END_TEST

/* A chain of comparisons is built in linear time (it was quadratic: 100000 terms took over a minute). */
START_TEST(test_long_comparison_chain)
{
    int n = 200000;
    char *code = malloc((size_t)n * 10 + 64);
    ck_assert_ptr_nonnull(code);
    size_t w = (size_t)sprintf(code, "x = 0");
    for (int i = 1; i < n; i++) w += (size_t)sprintf(code + w, " < %d", i);
    strcpy(code + w, "\ny = x and 1 < 1 < 2\nprint(x, y)");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tdl_status st = tdl_run_string(T, code, "<test>");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_msg(st == TDL_OK, "%s", tdl_error_report(T));
    ck_assert_str_eq(out.buf, "True False\n");
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    ck_assert_msg(s < 10, "a %d-term comparison took %.1f s", n, s);
    free(code);
}
END_TEST

/* ---- imports ---- */

static char moddir[64];

static void write_file(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", moddir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void import_setup(void)
{
    strcpy(moddir, "/tmp/tdl_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(moddir));
    memset(&out, 0, sizeof out);
    tdl_config cfg = {0};
    cfg.write = capture;
    cfg.write_ud = &out;
    cfg.path = moddir;
    T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
}

static void import_teardown(void)
{
    tdl_close(T);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", moddir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_import)
{
    write_file("geom.tdl", "print('loading geom')\ndef area(w, h):\n    return w * h\nunit = 1\n");
    ck_assert_int_eq(tdl_run_string(T, "import geom\nimport geom as g\nprint(geom.area(3, 4), g.unit, geom is g)",
                                    NULL), TDL_OK);
    ck_assert_str_eq(out.buf, "loading geom\n12 1 True\n");
}
END_TEST

START_TEST(test_import_cycle)
{
    write_file("a.tdl", "import b\n");
    write_file("b.tdl", "import a\n");
    ck_assert_int_eq(tdl_run_string(T, "import a", NULL), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_IMPORT);
    ck_assert_str_eq(tdl_error_message(T), "circular import: module 'a' is still being loaded");
}
END_TEST

START_TEST(test_import_error_in_module)
{
    write_file("bad.tdl", "x = 1\ny = x / 0\n");
    ck_assert_int_eq(tdl_run_string(T, "import bad", "main.tdl"), TDL_ERROR);
    const char *rep = tdl_error_report(T);
    ck_assert_msg(strstr(rep, "main.tdl:1:1: in <module>") && strstr(rep, "bad.tdl:2:7: in <module>"), "%s", rep);
    /* a failed module is not cached */
    write_file("bad.tdl", "x = 1\n");
    ck_assert_int_eq(tdl_run_string(T, "import bad\nprint(bad.x)", NULL), TDL_OK);
}
END_TEST

/* ---- with: a context manager made in C ---- */

typedef struct CmLog { int entered, exited, freed; char last_exc[64]; bool suppress, fail_exit; } CmLog;

static bool cm_enter(Interp *I, void *ud, Value *out)
{
    ((CmLog *)ud)->entered++;
    *out = v_int(42);
    return true;
}

static bool cm_exit(Interp *I, void *ud, Value exc, bool *suppress)
{
    CmLog *log = ud;
    log->exited++;
    snprintf(log->last_exc, sizeof log->last_exc, "%s", exc.tag == V_NONE ? "None" : val_type_name(exc));
    *suppress = log->suppress;
    if (log->fail_exit) return err_raise(I, TDL_ERR_RUNTIME, "exit failed");
    return true;
}

static void cm_free(void *ud) { ((CmLog *)ud)->freed++; }

/* Binds a new manager logging into log as the global `cm`. */
static void bind_cm(CmLog *log)
{
    Interp *I = (Interp *)T;
    Value m;
    ck_assert(ctxmgr_new(I, "test_cm", cm_enter, cm_exit, log, cm_free, &m));
    int32_t k = module_slot(I->main, "cm");
    ck_assert_int_ge(k, 0);
    Value old = I->main->vals[k];
    I->main->vals[k] = m;
    val_decref(I, old);
}

START_TEST(test_with_ctxmgr)
{
    CmLog log = {0};
    bind_cm(&log);
    ck_assert_int_eq(tdl_run_string(T, "with cm as v:\n    print('in', v)\nprint('after')", "<t>"), TDL_OK);
    ck_assert_str_eq(out.buf, "in 42\nafter\n");
    ck_assert_int_eq(log.entered, 1);
    ck_assert_int_eq(log.exited, 1);
    ck_assert_str_eq(log.last_exc, "None");
    /* an exception in the block reaches exit and goes on */
    ck_assert_int_eq(tdl_run_string(T, "with cm:\n    [][1]", "<t>"), TDL_ERROR);
    ck_assert_str_eq(log.last_exc, "IndexError");
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_INDEX);
    /* suppressed when exit says so */
    log.suppress = true;
    out.n = 0;
    out.buf[0] = 0;
    ck_assert_int_eq(tdl_run_string(T, "with cm:\n    1 / 0\nprint('went on')", "<t>"), TDL_OK);
    ck_assert_str_eq(log.last_exc, "ZeroDivisionError");
    ck_assert_str_eq(out.buf, "went on\n");
    /* a failing exit replaces the error; a return in the block passes through exit */
    log.suppress = false;
    log.fail_exit = true;
    ck_assert_int_eq(tdl_run_string(T, "with cm:\n    1 / 0", "<t>"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_RUNTIME);
    log.fail_exit = false;
    out.n = 0;
    out.buf[0] = 0;
    ck_assert_int_eq(tdl_run_string(T, "def f():\n    with cm, cm as b:\n        return b + 1\nprint(f())", "<t>"), TDL_OK);
    ck_assert_str_eq(out.buf, "43\n");
    ck_assert_int_eq(log.exited, 6);
    /* not a context manager */
    ck_assert_int_eq(tdl_run_string(T, "with 5:\n    pass", "<t>"), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "'int' object does not support the context manager protocol");
    ck_assert_int_eq(log.freed, 0);
    ck_assert_int_eq(tdl_run_string(T, "del cm", "<t>"), TDL_OK);
    ck_assert_int_eq(log.freed, 1);
}
END_TEST

Suite *eval_suite(void)
{
    Suite *s = suite_create("eval");
    TCase *tc = tcase_create("programs");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_program, 0, sizeof programs / sizeof programs[0]);
    tcase_add_loop_test(tc, test_error, 0, sizeof errors / sizeof errors[0]);
    tcase_add_test(tc, test_traceback_layout);
    tcase_add_test(tc, test_syntax_error_layout);
    tcase_add_test(tc, test_interactive);
    tcase_add_test(tc, test_exit);
    tcase_add_test(tc, test_globals_persist);
    tcase_add_test(tc, test_two_interpreters);
    tcase_add_test(tc, test_cycles_freed);
    tcase_add_test(tc, test_interrupt);
    tcase_add_loop_test(tc, test_long_chain, 0, sizeof chains / sizeof chains[0]);
    tcase_add_test(tc, test_deep_expression_in_recursion);
    tcase_add_test(tc, test_long_comparison_chain);
    tcase_add_test(tc, test_with_ctxmgr);
    suite_add_tcase(s, tc);
    TCase *ti = tcase_create("import");
    tcase_add_checked_fixture(ti, import_setup, import_teardown);
    tcase_add_test(ti, test_import);
    tcase_add_test(ti, test_import_cycle);
    tcase_add_test(ti, test_import_error_in_module);
    suite_add_tcase(s, ti);
    return s;
}
