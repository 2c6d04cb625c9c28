/* test_embed.c — the embedding API of tdl.h as a host uses it: value handles, globals, calls with
 * positional and keyword arguments, errors, C builtins and their signatures, tensors copied and
 * borrowed from host memory (strided, every dtype, release callbacks run exactly once), DLPack
 * import and export (zero-copy, deleters from other threads, exports outliving tdl_close), the
 * file-access flag, independent interpreters on two threads, and misuse. LeakSanitizer checks
 * that nothing is left behind when the suite runs under SANITIZE=1. */
#include "tests.h"
#include "capture.h"
#include "tdl.h"

#include <dlpack/dlpack.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static Out out;
static tdl_interp *T;

static tdl_interp *open_capturing(int flags)
{
    tdl_config cfg = {0};
    cfg.write = capture;
    cfg.write_ud = &out;
    cfg.flags = flags;
    return tdl_open(&cfg);
}

static void setup(void)
{
    memset(&out, 0, sizeof out);
    T = open_capturing(0);
    ck_assert_ptr_nonnull(T);
}

static void teardown(void)
{
    tdl_close(T);
    T = NULL;
}

#define OK(call) ck_assert_msg((call) == TDL_OK, "%s failed: %s", #call, tdl_error_report(T))
#define RUN(code) OK(tdl_run_string(T, code, "<test>"))

static int64_t get_int(const char *name)
{
    tdl_value *v;
    int64_t i;
    OK(tdl_get_global(T, name, &v));
    OK(tdl_to_int(T, v, &i));
    tdl_value_free(v);
    return i;
}

static double get_float(const char *name)
{
    tdl_value *v;
    double d;
    OK(tdl_get_global(T, name, &v));
    OK(tdl_to_float(T, v, &d));
    tdl_value_free(v);
    return d;
}

/* ---- values and globals ---- */

/* The REPL's Tab completion (tdl_complete) and help: names by prefix, a tensor's methods after
 * "x.", a module's names; `help` alone points at :help, help(f) prints the table's signatures. */
static void add_name(void *ud, const char *s)
{
    char *buf = ud;
    strcat(buf, s);
    strcat(buf, " ");
}

START_TEST(test_complete_and_help)
{
    char names[8192] = "";
    RUN("x = ones(2)\nxyz = 1\n");
    OK(tdl_complete(T, "xy", add_name, names));
    ck_assert_str_eq(names, "xyz ");
    names[0] = 0;
    OK(tdl_complete(T, "x.cums", add_name, names));
    ck_assert_str_eq(names, "x.cumsum ");
    names[0] = 0;
    OK(tdl_complete(T, "x.sor", add_name, names));
    ck_assert_str_eq(names, "x.sort ");
    names[0] = 0;
    OK(tdl_complete(T, "whi", add_name, names));
    ck_assert_str_eq(names, "while ");
    names[0] = 0;
    OK(tdl_complete(T, "hel", add_name, names));
    ck_assert_str_eq(names, "help ");
    names[0] = 0;
    OK(tdl_complete(T, "nosuch.a", add_name, names));
    ck_assert_str_eq(names, "");
    OK(tdl_complete(T, "xyz.re", add_name, names));
    ck_assert_str_eq(names, "");
    ck_assert_int_eq(tdl_complete(T, NULL, add_name, names), TDL_ERROR);
    memset(&out, 0, sizeof out);
    RUN("print(help)\nhelp(x.cumsum)\n");
    ck_assert_str_eq(out.buf,
                     "Type :help for help on the REPL, or help(object) for the signature of a function or method.\n"
                     "Tensor.cumsum(int dim, *, ScalarType? dtype=None) -> Tensor\n");
}
END_TEST

START_TEST(test_globals_roundtrip)
{
    tdl_value *n, *f, *s, *b, *none, *items[3], *tup, *lst;
    OK(tdl_int(T, 41, &n));
    OK(tdl_float(T, 0.5, &f));
    OK(tdl_str(T, "héllo", &s));
    OK(tdl_bool(T, true, &b));
    OK(tdl_none(T, &none));
    items[0] = n, items[1] = s, items[2] = none;
    OK(tdl_tuple(T, 3, items, &tup));
    OK(tdl_list(T, 2, items, &lst));
    OK(tdl_list_append(T, lst, f));
    const char *names[] = {"n", "f", "s", "b", "none", "tup", "lst"};
    tdl_value *vals[] = {n, f, s, b, none, tup, lst};
    for (int k = 0; k < 7; k++) OK(tdl_set_global(T, names[k], vals[k]));
    for (int k = 0; k < 7; k++) tdl_value_free(vals[k]);
    RUN("print(n, f, s, b, none, tup, lst)\n"
        "n += 1\nf *= 4\ns = s + '!'\nb = not b\nlst.append(len(s))\nout = (n, f, [s])");
    ck_assert_str_eq(out.buf, "41 0.5 héllo True None (41, 'héllo', None) [41, 'héllo', 0.5]\n");
    ck_assert_int_eq(get_int("n"), 42);
    ck_assert(get_float("f") == 2.0);
    tdl_value *v, *item;
    bool bv;
    const char *text;
    size_t len;
    OK(tdl_get_global(T, "b", &v));
    ck_assert_int_eq(tdl_typeof(T, v), TDL_TBOOL);
    OK(tdl_to_bool(T, v, &bv));
    ck_assert(!bv);
    tdl_value_free(v);
    OK(tdl_get_global(T, "s", &v));
    OK(tdl_to_str(T, v, &text, &len));
    ck_assert_str_eq(text, "héllo!");
    ck_assert_uint_eq(len, 7);
    tdl_value_free(v);
    OK(tdl_get_global(T, "lst", &v));
    ck_assert_int_eq(tdl_typeof(T, v), TDL_TLIST);
    OK(tdl_seq_len(T, v, &len));
    ck_assert_uint_eq(len, 4);
    OK(tdl_seq_get(T, v, 3, &item));
    int64_t i;
    OK(tdl_to_int(T, item, &i));
    ck_assert_int_eq(i, 6);      /* len('héllo!') counts characters */
    tdl_value_free(item);
    ck_assert_int_eq(tdl_seq_get(T, v, 4, &item), TDL_ERROR);
    ck_assert_ptr_null(item);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_INDEX);
    ck_assert_str_eq(tdl_error_message(T), "tdl_seq_get: index 4 is out of range for a list of 4");
    tdl_value_free(v);
    OK(tdl_get_global(T, "out", &v));
    ck_assert_int_eq(tdl_typeof(T, v), TDL_TTUPLE);
    ck_assert_str_eq(tdl_type_name(T, v), "tuple");
    tdl_value *r;
    OK(tdl_repr(T, v, &r));
    OK(tdl_to_str(T, r, &text, NULL));
    ck_assert_str_eq(text, "(42, 2.0, ['héllo!'])");
    tdl_value_free(r);
    tdl_value_free(v);
    /* the builtins are globals too */
    OK(tdl_get_global(T, "len", &v));
    ck_assert_int_eq(tdl_typeof(T, v), TDL_TCALLABLE);
    tdl_value_free(v);
    ck_assert_int_eq(tdl_get_global(T, "nope", &v), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_NAME);
    ck_assert_str_eq(tdl_error_message(T), "name 'nope' is not defined");
}
END_TEST

START_TEST(test_read_type_errors)
{
    tdl_value *s, *f;
    int64_t i = 7;
    double d;
    OK(tdl_str(T, "x", &s));
    OK(tdl_float(T, 1.5, &f));
    ck_assert_int_eq(tdl_to_int(T, s, &i), TDL_ERROR);
    ck_assert_int_eq(i, 0);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_TYPE);
    ck_assert_str_eq(tdl_error_message(T), "tdl_to_int: expected int, got str");
    ck_assert_int_eq(tdl_to_int(T, f, &i), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_to_int: expected int, got float");
    OK(tdl_to_float(T, f, &d));
    ck_assert(d == 1.5);
    ck_assert_int_eq(tdl_seq_len(T, s, &(size_t){0}), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_seq_len: expected a tuple or list, got str");
    tdl_value *bad;
    ck_assert_int_eq(tdl_str_len(T, "a\xff", 2, &bad), TDL_ERROR);
    ck_assert_ptr_null(bad);
    ck_assert_str_eq(tdl_error_message(T), "tdl_str: the text is not UTF-8 (byte 1)");
    tdl_value *dup;
    OK(tdl_dup(T, f, &dup));
    tdl_value_free(f);
    OK(tdl_to_float(T, dup, &d));
    ck_assert(d == 1.5);
    tdl_value_free(dup);
    tdl_value_free(s);
}
END_TEST

START_TEST(test_get_attr)
{
    RUN("x = arange(6).reshape(2, 3)");
    tdl_value *x, *shape, *sum, *r;
    OK(tdl_get_global(T, "x", &x));
    OK(tdl_get_attr(T, x, "shape", &shape));
    OK(tdl_repr(T, shape, &r));
    const char *text;
    OK(tdl_to_str(T, r, &text, NULL));
    ck_assert_str_eq(text, "(2, 3)");
    tdl_value_free(r);
    tdl_value_free(shape);
    OK(tdl_get_attr(T, x, "sum", &sum));
    tdl_value *total;
    OK(tdl_call(T, sum, 0, NULL, 0, NULL, NULL, &total));
    OK(tdl_repr(T, total, &r));
    OK(tdl_to_str(T, r, &text, NULL));
    ck_assert_str_eq(text, "tensor(15)");
    tdl_value_free(r);
    tdl_value_free(total);
    tdl_value_free(sum);
    ck_assert_int_eq(tdl_get_attr(T, x, "nope", &r), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_ATTRIBUTE);
    tdl_value_free(x);
}
END_TEST

/* ---- calling tdl ---- */

START_TEST(test_call_positional_and_keyword)
{
    RUN("def f(a, b=2, c=3):\n    return a * 100 + b * 10 + c\n");
    tdl_value *f, *a, *c, *r;
    OK(tdl_get_global(T, "f", &f));
    OK(tdl_int(T, 1, &a));
    OK(tdl_int(T, 5, &c));
    const char *kw[] = {"c"};
    OK(tdl_call(T, f, 1, &a, 1, kw, &c, &r));
    int64_t i;
    OK(tdl_to_int(T, r, &i));
    ck_assert_int_eq(i, 125);
    tdl_value_free(r);
    const char *kw2[] = {"c", "a"};
    tdl_value *kv[] = {a, c};
    OK(tdl_call_name(T, "f", 0, NULL, 2, kw2, kv, &r));
    OK(tdl_to_int(T, r, &i));
    ck_assert_int_eq(i, 521);
    tdl_value_free(r);
    /* a result may be dropped */
    OK(tdl_call(T, f, 1, &a, 0, NULL, NULL, NULL));
    /* builtins and methods by name */
    tdl_value *l;
    tdl_value *items[] = {a, c, a};
    OK(tdl_list(T, 3, items, &l));
    OK(tdl_call_name(T, "len", 1, &l, 0, NULL, NULL, &r));
    OK(tdl_to_int(T, r, &i));
    ck_assert_int_eq(i, 3);
    tdl_value_free(r);
    /* wrong arguments are the function's TypeError */
    ck_assert_int_eq(tdl_call(T, f, 0, NULL, 0, NULL, NULL, &r), TDL_ERROR);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_TYPE);
    ck_assert_str_eq(tdl_error_message(T), "f() missing 1 required positional argument: 'a'");
    ck_assert_int_eq(tdl_call_name(T, "g", 0, NULL, 0, NULL, NULL, &r), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "name 'g' is not defined");
    ck_assert_int_eq(tdl_call(T, l, 0, NULL, 0, NULL, NULL, &r), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "'list' object is not callable");
    tdl_value_free(l);
    tdl_value_free(f);
    tdl_value_free(a);
    tdl_value_free(c);
}
END_TEST

START_TEST(test_call_errors_have_tracebacks)
{
    RUN("def inner(x):\n    return 1 / x\ndef outer(x):\n    return inner(x) + 1\n");
    tdl_value *zero, *r;
    OK(tdl_int(T, 0, &zero));
    ck_assert_int_eq(tdl_call_name(T, "outer", 1, &zero, 0, NULL, NULL, &r), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_ZERO_DIVISION);
    ck_assert_str_eq(tdl_error_kind_name(tdl_error_kind_of(T)), "ZeroDivisionError");
    ck_assert_str_eq(tdl_error_message(T), "division by zero");
    ck_assert_str_eq(tdl_error_report(T),
                     "Traceback (most recent call last):\n"
                     "  <test>:4:17: in outer\n"
                     "      return inner(x) + 1\n"
                     "                  ^\n"
                     "  <test>:2:14: in inner\n"
                     "      return 1 / x\n"
                     "               ^\n"
                     "<test>:2:14: ZeroDivisionError: division by zero\n");
    /* the interpreter goes on */
    RUN("print('still here')");
    ck_assert_str_eq(out.buf, "still here\n");
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_NONE);
    tdl_value_free(zero);
}
END_TEST

/* A list or tuple display that failed inside a subscript's index tuple left the index tuple
 * holding the list it had just freed, which the tuple then freed again: the CLI stopped at the
 * error, a host that goes on used freed memory (issue 23). */
static const char *const failing_index[] = {
    "x[0, [y]]", "x[0, (1, [y])]", "x[0, [1, [y]]] = 2", "x[1:2, [y]] += 1", "x[0, (1, y)]",
};

START_TEST(test_failed_index_display_then_go_on)
{
    RUN("x = [1]");
    for (int rep = 0; rep < 3; rep++) {
        ck_assert_int_eq(tdl_run_string(T, failing_index[_i], "<test>"), TDL_ERROR);
        ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_NAME);
        ck_assert_str_eq(tdl_error_message(T), "name 'y' is not defined");
        /* the interpreter goes on: containers of the freed sizes come and go, x is intact */
        RUN("z = []\nfor k in range(50):\n    z.append([k, (k, [k])])\nz = None\nn = x[0] + len(x)");
        ck_assert_int_eq(get_int("n"), 2);
    }
}
END_TEST

START_TEST(test_call_exit)
{
    RUN("def quit(n):\n    exit(n)\n");
    tdl_value *n;
    OK(tdl_int(T, 3, &n));
    ck_assert_int_eq(tdl_call_name(T, "quit", 1, &n, 0, NULL, NULL, NULL), TDL_EXIT);
    ck_assert_int_eq(tdl_exit_code(T), 3);
    OK(tdl_call_name(T, "abs", 1, &n, 0, NULL, NULL, NULL));
    tdl_value_free(n);
}
END_TEST

static char moddir[64];

START_TEST(test_call_dotted_and_import)
{
    strcpy(moddir, "/tmp/tdl_embed_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(moddir));
    char path[128];
    snprintf(path, sizeof path, "%s/geom.tdl", moddir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("def area(w, h=2):\n    return w * h\n", f);
    fclose(f);
    tdl_config cfg = {0};
    cfg.path = moddir;
    tdl_interp *U = tdl_open(&cfg);
    ck_assert_ptr_nonnull(U);
    tdl_value *w, *r, *m;
    ck_assert_int_eq(tdl_int(U, 21, &w), TDL_OK);
    ck_assert_int_eq(tdl_call_name(U, "geom.area", 1, &w, 0, NULL, NULL, &r), TDL_OK);
    int64_t i;
    ck_assert_int_eq(tdl_to_int(U, r, &i), TDL_OK);
    ck_assert_int_eq(i, 42);
    tdl_value_free(r);
    ck_assert_int_eq(tdl_import(U, "geom", &m), TDL_OK);
    ck_assert_int_eq(tdl_typeof(U, m), TDL_TOTHER);
    ck_assert_str_eq(tdl_type_name(U, m), "module");
    ck_assert_int_eq(tdl_call_name(U, "geom.volume", 1, &w, 0, NULL, NULL, &r), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(U), TDL_ERR_ATTRIBUTE);
    ck_assert_int_eq(tdl_import(U, "nosuch", &r), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(U), TDL_ERR_IMPORT);
    ck_assert_str_eq(tdl_error_message(U), "No module named 'nosuch'");
    tdl_value_free(m);
    tdl_value_free(w);
    tdl_close(U);
    unlink(path);
    rmdir(moddir);
}
END_TEST

/* ---- C builtins ---- */

/* clampadd(a: int, b: int = 1, *, lo: int = 0): max(a + b, lo) */
static tdl_status c_clampadd(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    int64_t a, b, lo;
    ck_assert_int_eq(nargs, 3);
    ++*(int *)ud;
    if (tdl_to_int(T, args[0], &a) || tdl_to_int(T, args[1], &b) || tdl_to_int(T, args[2], &lo)) return TDL_ERROR;
    if (b == 13) return tdl_raise(T, TDL_ERR_VALUE, "b may not be %d", (int)b);
    return tdl_int(T, a + b > lo ? a + b : lo, result);
}

START_TEST(test_cbuiltin_call)
{
    int calls = 0;
    OK(tdl_register(T, "clampadd", "a: int, b: int = 1, *, lo: int = 0", c_clampadd, &calls));
    RUN("print(clampadd(1), clampadd(1, 2), clampadd(1, b=5), clampadd(-9, lo=-3), clampadd(b=2, a=True))\n"
        "print(clampadd)");
    ck_assert_str_eq(out.buf, "2 3 6 -3 3\n<built-in function clampadd>\n");
    ck_assert_int_eq(calls, 5);
    /* from C too, with keywords */
    tdl_value *a, *lo, *r;
    OK(tdl_int(T, 1, &a));
    OK(tdl_int(T, 100, &lo));
    const char *kw[] = {"lo"};
    OK(tdl_call_name(T, "clampadd", 1, &a, 1, kw, &lo, &r));
    int64_t i;
    OK(tdl_to_int(T, r, &i));
    ck_assert_int_eq(i, 100);
    tdl_value_free(r);
    tdl_value_free(a);
    tdl_value_free(lo);
    /* an imported module sees it as a builtin too */
    RUN("def g():\n    return clampadd(40, 2)\nprint(g())");
    ck_assert_str_eq(out.buf + strlen("2 3 6 -3 3\n<built-in function clampadd>\n"), "42\n");
}
END_TEST

static const struct { const char *call, *msg; } sig_errors[] = {
    {"clampadd()", "clampadd() missing 1 required positional argument: 'a'"},
    {"clampadd(1, 2, 3)", "clampadd() takes from 1 to 2 positional arguments but 3 were given"},
    {"clampadd(1, c=2)", "clampadd() got an unexpected keyword argument 'c'"},
    {"clampadd(1, a=2)", "clampadd() got multiple values for argument 'a'"},
    {"clampadd('x')", "clampadd(): argument 'a' (position 1) must be int, not str"},
    {"clampadd(1, 2.5)", "clampadd(): argument 'b' (position 2) must be int, not float"},
    {"clampadd(1, lo=None)", "clampadd(): argument 'lo' must be int, not NoneType"},
    {"clampadd(1, lo=[1])", "clampadd(): argument 'lo' must be int, not list"},
};

START_TEST(test_cbuiltin_signature_errors)
{
    int calls = 0;
    OK(tdl_register(T, "clampadd", "a: int, b: int = 1, *, lo: int = 0", c_clampadd, &calls));
    char code[128];
    snprintf(code, sizeof code, "x = 1\ny = %s\n", sig_errors[_i].call);
    ck_assert_int_eq(tdl_run_string(T, code, "<sig>"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_TYPE);
    ck_assert_str_eq(tdl_error_message(T), sig_errors[_i].msg);
    ck_assert_msg(strstr(tdl_error_report(T), "<sig>:2:13: TypeError: ") != NULL, "%s", tdl_error_report(T));
    ck_assert_int_eq(calls, 0);
}
END_TEST

START_TEST(test_cbuiltin_raises)
{
    int calls = 0;
    OK(tdl_register(T, "clampadd", "a: int, b: int = 1, *, lo: int = 0", c_clampadd, &calls));
    ck_assert_int_eq(tdl_run_string(T, "def f():\n    return clampadd(1, 13)\nf()\n", "<raise>"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_VALUE);
    ck_assert_str_eq(tdl_error_message(T), "b may not be 13");
    ck_assert_str_eq(tdl_error_report(T),
                     "Traceback (most recent call last):\n"
                     "  <raise>:3:2: in <module>\n"
                     "      f()\n"
                     "       ^\n"
                     "  <raise>:2:20: in f\n"
                     "      return clampadd(1, 13)\n"
                     "                     ^\n"
                     "<raise>:2:20: ValueError: b may not be 13\n");
    /* and from C */
    tdl_value *a, *b;
    OK(tdl_int(T, 1, &a));
    OK(tdl_int(T, 13, &b));
    tdl_value *args[] = {a, b};
    ck_assert_int_eq(tdl_call_name(T, "clampadd", 2, args, 0, NULL, NULL, NULL), TDL_ERROR);
    ck_assert_str_eq(tdl_error_report(T), "ValueError: b may not be 13\n");
    tdl_value_free(a);
    tdl_value_free(b);
}
END_TEST

/* apply(f: callable, x: any): f(x), the error of f passed on as it is */
static tdl_status c_apply(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    return tdl_call(T, args[0], 1, &args[1], 0, NULL, NULL, result);
}

/* ident(x): x itself; bad(): a status without an error; nested_close(): tries tdl_close */
static tdl_status c_ident(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    tdl_value_free(args[0]);    /* argument handles belong to the call: this does nothing */
    *result = args[0];
    return TDL_OK;
}

static tdl_status c_bad(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    return TDL_ERROR;
}

static tdl_status c_close(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    tdl_close(T);               /* refused: T is running */
    return tdl_none(T, result);
}

START_TEST(test_cbuiltin_callback)
{
    OK(tdl_register(T, "apply", "f: callable, x", c_apply, NULL));
    OK(tdl_register(T, "ident", "x", c_ident, NULL));
    OK(tdl_register(T, "bad", "", c_bad, NULL));
    OK(tdl_register(T, "nested_close", "", c_close, NULL));
    RUN("def sq(v):\n    return v * v\nprint(apply(sq, 7), apply(lambda s: s + '!', 'hi'), ident([1]))\n"
        "nested_close()\n");
    ck_assert_str_eq(out.buf, "49 hi! [1]\n");
    ck_assert_int_eq(tdl_run_string(T, "def bad_sq(v):\n    return v / 0\n\nprint(apply(bad_sq, 1))\n", "<cb>"),
                     TDL_ERROR);
    ck_assert_str_eq(tdl_error_report(T),
                     "Traceback (most recent call last):\n"
                     "  <cb>:4:12: in <module>\n"
                     "      print(apply(bad_sq, 1))\n"
                     "                 ^\n"
                     "  <cb>:2:14: in bad_sq\n"
                     "      return v / 0\n"
                     "               ^\n"
                     "<cb>:2:14: ZeroDivisionError: division by zero\n");
    ck_assert_int_eq(tdl_run_string(T, "bad()", "<bad>"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_RUNTIME);
    ck_assert_str_eq(tdl_error_message(T), "bad(): the C function returned TDL_ERROR without raising an error");
    ck_assert_int_eq(tdl_run_string(T, "apply(exit, 4)\nprint('not reached')", "<x>"), TDL_EXIT);
    ck_assert_int_eq(tdl_exit_code(T), 4);
    ck_assert_str_eq(out.buf, "49 hi! [1]\n");
}
END_TEST

/* runcode(code: str): runs code in the same interpreter, from inside a call */
static tdl_status c_runcode(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    const char *code;
    if (tdl_to_str(T, args[0], &code, NULL)) return TDL_ERROR;
    return tdl_run_string(T, code, "<nested>");
}

START_TEST(test_cbuiltin_reentrant)
{
    OK(tdl_register(T, "runcode", "code: str", c_runcode, NULL));
    RUN("def f():\n    runcode('w = 3')\n    return w * 2\nprint(f())");
    ck_assert_str_eq(out.buf, "6\n");
    /* an error in the nested code comes back through the call, and the outer statement's
       position is kept for what follows */
    ck_assert_int_eq(tdl_run_string(T, "i = dims(1)\nruncode('1 / 0')\n", "<outer>"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_ZERO_DIVISION);
    ck_assert_str_eq(tdl_error_report(T),
                     "Traceback (most recent call last):\n"
                     "  <outer>:2:8: in <module>\n"
                     "      runcode('1 / 0')\n"
                     "             ^\n"
                     "  <nested>:1:3: in <module>\n"
                     "      1 / 0\n"
                     "        ^\n"
                     "<nested>:1:3: ZeroDivisionError: division by zero\n");
    ck_assert_int_eq(tdl_run_string(T, "x = arange(3)[i]\nruncode('y = 2')\nz = arange(4)[i]\n", "<dims>"),
                     TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_DIMENSION_BIND);
    ck_assert_msg(strstr(tdl_error_message(T), "<dims>:1:") != NULL, "%s", tdl_error_message(T));
}
END_TEST

static const struct { const char *sig, *msg; } bad_sigs[] = {
    {"x: tensr", "tdl_register: the signature of 'f' at column 4: unknown type (any, none, bool, int, float, str, "
                 "tuple, list, tensor, callable)"},
    {"x, x", "tdl_register: the signature of 'f' at column 4: a parameter named twice"},
    {"x=1, y", "tdl_register: the signature of 'f' at column 7: a parameter without a default after one with a "
               "default"},
    {"x: int = 'a'", "tdl_register: the signature of 'f' at column 13: a default value of the wrong type"},
    {"x y", "tdl_register: the signature of 'f' at column 3: expected ',' between parameters"},
    {"x, *", "tdl_register: the signature of 'f' at column 5: a '*' must be followed by a parameter"},
    {"x = 'open", "tdl_register: the signature of 'f' at column 5: unterminated string"},
    {"1x", "tdl_register: the signature of 'f' at column 1: expected a parameter name"},
};

START_TEST(test_register_bad_signature)
{
    ck_assert_int_eq(tdl_register(T, "f", bad_sigs[_i].sig, c_bad, NULL), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_VALUE);
    ck_assert_str_eq(tdl_error_message(T), bad_sigs[_i].msg);
    ck_assert_int_eq(tdl_run_string(T, "f", NULL), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_NAME);
}
END_TEST

/* describe(t: tensor?, s: str = 'dflt', d: float = 2, o: any = None): "<ndim> <s> <d>" */
static tdl_status c_describe(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    char buf[64];
    const char *s;
    double d;
    tdl_tensor_info info = {0};
    if (tdl_typeof(T, args[0]) == TDL_TTENSOR && tdl_tensor_read(T, args[0], TDL_DTYPE_ANY, &info)) return TDL_ERROR;
    if (tdl_to_str(T, args[1], &s, NULL) || tdl_to_float(T, args[2], &d)) return TDL_ERROR;
    snprintf(buf, sizeof buf, "%d %s %g %s", tdl_typeof(T, args[0]) == TDL_TNONE ? -1 : info.ndim, s, d,
             tdl_type_name(T, args[3]));
    return tdl_str(T, buf, result);
}

START_TEST(test_cbuiltin_defaults_and_optional)
{
    OK(tdl_register(T, "describe", "t: tensor?, s: str = 'dflt', d: float = 2, o: any = None", c_describe, NULL));
    RUN("print(describe(None))\nprint(describe(zeros(2, 3), \"x\", 5, o=[]))\nprint(describe(t=zeros(1), d=True))");
    ck_assert_str_eq(out.buf, "-1 dflt 2 NoneType\n2 x 5 list\n1 dflt 1 NoneType\n");
    ck_assert_int_eq(tdl_run_string(T, "describe(1)", NULL), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "describe(): argument 't' (position 1) must be Tensor or None, not int");
}
END_TEST

/* ---- tensors from host memory ---- */

START_TEST(test_tensor_copy)
{
    float host[2][3] = {{1, 2, 3}, {4, 5, 6}};
    int64_t shape[] = {2, 3};
    tdl_value *x, *y;
    OK(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT32, 2, shape, NULL, host, &x));
    host[0][0] = 100;           /* a copy: tdl does not see this */
    OK(tdl_set_global(T, "x", x));
    RUN("y = x * 2 + 1\nprint(y)");
    ck_assert_str_eq(out.buf, "tensor([[ 3.,  5.,  7.],\n        [ 9., 11., 13.]])\n");
    OK(tdl_get_global(T, "y", &y));
    tdl_tensor_info info;
    OK(tdl_tensor_read(T, y, TDL_DTYPE_FLOAT32, &info));
    ck_assert_int_eq(info.dtype, TDL_DTYPE_FLOAT32);
    ck_assert_int_eq(info.ndim, 2);
    ck_assert_int_eq(info.shape[0], 2);
    ck_assert_int_eq(info.shape[1], 3);
    ck_assert_int_eq(info.numel, 6);
    ck_assert_uint_eq(info.itemsize, 4);
    const float *p = info.data;
    ck_assert(p[info.strides[0] * 1 + info.strides[1] * 2] == 13.0f);
    ck_assert_int_eq(tdl_tensor_read(T, y, TDL_DTYPE_FLOAT64, &info), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_TYPE);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_read: expected a float64 tensor, got float32");
    ck_assert_ptr_null(info.data);
    tdl_value_free(x);
    tdl_value_free(y);
}
END_TEST

typedef struct Released { int count; void *data; } Released;

static void on_release(void *ud, void *data)
{
    Released *r = ud;
    r->count++;
    r->data = data;
}

START_TEST(test_borrow_release_once_at_close)
{
    double buf[4] = {1, 2, 3, 4};
    int64_t n = 4;
    Released rel = {0};
    tdl_interp *U = tdl_open(NULL);
    tdl_value *x;
    ck_assert_int_eq(tdl_tensor_borrow(U, TDL_DTYPE_FLOAT64, 1, &n, NULL, buf, on_release, &rel, &x), TDL_OK);
    ck_assert_int_eq(tdl_set_global(U, "x", x), TDL_OK);
    tdl_value_free(x);
    ck_assert_int_eq(rel.count, 0);     /* the global still views it */
    ck_assert_int_eq(tdl_run_string(U, "x[1] = 20\nkeep = [x[1:]]\ns = x.sum().item()", NULL), TDL_OK);
    ck_assert(buf[1] == 20);            /* borrowed: writes go to the host's memory */
    ck_assert_int_eq(rel.count, 0);
    tdl_close(U);
    ck_assert_int_eq(rel.count, 1);
    ck_assert_ptr_eq(rel.data, buf);
}
END_TEST

START_TEST(test_borrow_release_when_unreferenced)
{
    int32_t buf[3] = {1, 2, 3};
    int64_t n = 3;
    Released rel = {0};
    tdl_value *x, *y;
    OK(tdl_tensor_borrow(T, TDL_DTYPE_INT32, 1, &n, NULL, buf, on_release, &rel, &x));
    OK(tdl_set_global(T, "x", x));
    tdl_value_free(x);
    /* y is lazy: it still reads the buffer after x is gone */
    RUN("y = x * 10\ndel_x = None\nx = None");
    ck_assert_int_eq(rel.count, 0);
    buf[2] = 7;                         /* y is computed when it is read */
    OK(tdl_get_global(T, "y", &y));
    tdl_tensor_info info;
    OK(tdl_tensor_read(T, y, TDL_DTYPE_INT32, &info));
    ck_assert_int_eq(((int32_t *)info.data)[2], 70);
    ck_assert_int_eq(rel.count, 1);     /* computed: nothing reads the buffer any more */
    tdl_value_free(y);
    ck_assert_int_eq(rel.count, 1);
    /* a handle alone: released when it is freed */
    OK(tdl_tensor_borrow(T, TDL_DTYPE_INT32, 1, &n, NULL, buf, on_release, &rel, &x));
    ck_assert_int_eq(rel.count, 1);
    tdl_value_free(x);
    ck_assert_int_eq(rel.count, 2);
}
END_TEST

START_TEST(test_strided_host_memory)
{
    /* a 3x4 int64 matrix read as its transpose (4x3, strides 1, 4), and with a negative stride */
    int64_t m[3][4];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) m[i][j] = 10 * i + j;
    int64_t shape[] = {4, 3}, strides[] = {1, 4};
    tdl_value *tc, *tb, *rev;
    Released rel = {0};
    OK(tdl_tensor_from_host(T, TDL_DTYPE_INT64, 2, shape, strides, m, &tc));
    OK(tdl_tensor_borrow(T, TDL_DTYPE_INT64, 2, shape, strides, m, on_release, &rel, &tb));
    int64_t rshape[] = {4}, rstrides[] = {-1};
    OK(tdl_tensor_borrow(T, TDL_DTYPE_INT64, 1, rshape, rstrides, &m[2][3], on_release, &rel, &rev));
    OK(tdl_set_global(T, "tc", tc));
    OK(tdl_set_global(T, "tb", tb));
    OK(tdl_set_global(T, "rev", rev));
    RUN("print(tc)\nprint(bool((tc == tb).all()), tb.stride(), rev)\nrev[0] = -1");
    ck_assert_str_eq(out.buf, "tensor([[ 0, 10, 20],\n        [ 1, 11, 21],\n        [ 2, 12, 22],\n"
                              "        [ 3, 13, 23]])\nTrue (1, 4) tensor([23, 22, 21, 20])\n");
    ck_assert_int_eq(m[2][3], -1);
    tdl_tensor_info info;
    OK(tdl_tensor_read(T, tb, TDL_DTYPE_INT64, &info));
    ck_assert_ptr_eq(info.data, m);
    ck_assert_int_eq(info.strides[0], 1);
    ck_assert_int_eq(info.strides[1], 4);
    OK(tdl_tensor_read(T, rev, TDL_DTYPE_INT64, &info));
    ck_assert_ptr_eq(info.data, &m[2][3]);
    ck_assert_int_eq(info.strides[0], -1);
    /* contiguous: the copy is C order, a contiguous tensor is itself */
    tdl_value *c;
    OK(tdl_tensor_contiguous(T, tb, &c));
    OK(tdl_tensor_read(T, c, TDL_DTYPE_INT64, &info));
    ck_assert_int_eq(info.strides[0], 3);
    ck_assert_int_eq(info.strides[1], 1);
    ck_assert_int_eq(((int64_t *)info.data)[1], 10);
    tdl_value_free(c);
    OK(tdl_tensor_contiguous(T, tc, &c));
    tdl_tensor_info info2;
    OK(tdl_tensor_read(T, tc, TDL_DTYPE_INT64, &info2));
    OK(tdl_tensor_read(T, c, TDL_DTYPE_INT64, &info));
    ck_assert_ptr_eq(info.data, info2.data);
    tdl_value_free(c);
    tdl_value_free(tc);
    tdl_value_free(tb);
    tdl_value_free(rev);
    RUN("tb = rev = None");
    ck_assert_int_eq(rel.count, 2);
}
END_TEST

static const struct {
    tdl_dtype dt;
    const char *name;
    const char *printed;
} dtype_cases[] = {
    {TDL_DTYPE_BOOL, "bool", "tensor([ True, False,  True]) tensor(2)\n"},
    {TDL_DTYPE_INT32, "int32", "tensor([1, 0, 3], dtype=int32) tensor(4)\n"},
    {TDL_DTYPE_INT64, "int64", "tensor([1, 0, 3]) tensor(4)\n"},
    {TDL_DTYPE_FLOAT32, "float32", "tensor([1., 0., 3.]) tensor(4.)\n"},
    {TDL_DTYPE_FLOAT64, "float64", "tensor([1., 0., 3.], dtype=float64) tensor(4., dtype=float64)\n"},
};

START_TEST(test_dtypes)
{
    tdl_dtype dt = dtype_cases[_i].dt;
    union { bool b[3]; int32_t i32[3]; int64_t i64[3]; float f32[3]; double f64[3]; } u;
    double vals[3] = {1, 0, 3};
    for (int k = 0; k < 3; k++) {
        switch (dt) {
        case TDL_DTYPE_BOOL: u.b[k] = vals[k] != 0; break;
        case TDL_DTYPE_INT32: u.i32[k] = (int32_t)vals[k]; break;
        case TDL_DTYPE_INT64: u.i64[k] = (int64_t)vals[k]; break;
        case TDL_DTYPE_FLOAT32: u.f32[k] = (float)vals[k]; break;
        default: u.f64[k] = vals[k]; break;
        }
    }
    ck_assert_str_eq(tdl_dtype_name(dt), dtype_cases[_i].name);
    int64_t n = 3;
    tdl_value *x, *s;
    OK(tdl_tensor_from_host(T, dt, 1, &n, NULL, &u, &x));
    OK(tdl_set_global(T, "x", x));
    RUN("s = x.sum()\nprint(x, s)\ny = x.clone()");
    ck_assert_str_eq(out.buf, dtype_cases[_i].printed);
    tdl_tensor_info info;
    OK(tdl_get_global(T, "y", &s));
    OK(tdl_tensor_read(T, s, dt, &info));
    ck_assert_int_eq(info.dtype, dt);
    ck_assert_uint_eq(info.itemsize, tdl_dtype_size(dt));
    ck_assert_int_eq(memcmp(info.data, &u, 3 * info.itemsize), 0);
    tdl_dtype other = dt == TDL_DTYPE_FLOAT64 ? TDL_DTYPE_BOOL : dt + 1;
    ck_assert_int_eq(tdl_tensor_read(T, s, other, &info), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_TYPE);
    tdl_value_free(s);
    tdl_value_free(x);
}
END_TEST

START_TEST(test_tensor_edge_shapes)
{
    /* 0-d and empty tensors, with NULL data for the empty one */
    double one = 2.5;
    int64_t zero = 0;
    tdl_value *s, *e, *b;
    OK(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT64, 0, NULL, NULL, &one, &s));
    OK(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT32, 1, &zero, NULL, NULL, &e));
    Released rel = {0};
    OK(tdl_tensor_borrow(T, TDL_DTYPE_FLOAT32, 1, &zero, NULL, NULL, on_release, &rel, &b));
    OK(tdl_set_global(T, "s", s));
    OK(tdl_set_global(T, "e", e));
    OK(tdl_set_global(T, "b", b));
    RUN("print(s, e, b + 1, e.shape)");
    ck_assert_str_eq(out.buf, "tensor(2.5000, dtype=float64) tensor([]) tensor([]) (0,)\n");
    tdl_tensor_info info;
    OK(tdl_tensor_read(T, s, TDL_DTYPE_ANY, &info));
    ck_assert_int_eq(info.ndim, 0);
    ck_assert_int_eq(info.numel, 1);
    ck_assert(*(double *)info.data == 2.5);
    tdl_value_free(s);
    tdl_value_free(e);
    tdl_value_free(b);
    RUN("b = None");
    ck_assert_int_eq(rel.count, 1);
    ck_assert_ptr_null(rel.data);
}
END_TEST

START_TEST(test_tensor_with_dims_refused)
{
    RUN("i, j = dims(2)\nx = arange(6).reshape(2, 3)[i, j]");
    tdl_value *x;
    tdl_tensor_info info;
    OK(tdl_get_global(T, "x", &x));
    ck_assert_int_eq(tdl_tensor_read(T, x, TDL_DTYPE_ANY, &info), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_VALUE);
    ck_assert_str_eq(tdl_error_message(T),
                     "tdl_tensor_read: the tensor has first-class dims: order() them into positional dims first");
    struct DLManagedTensor *mt;
    ck_assert_int_eq(tdl_tensor_to_dlpack(T, x, &mt), TDL_ERROR);
    ck_assert_ptr_null(mt);
    tdl_value_free(x);
}
END_TEST

/* ---- DLPack ---- */

START_TEST(test_dlpack_roundtrip_zero_copy)
{
    float buf[2][3] = {{1, 2, 3}, {4, 5, 6}};
    int64_t shape[] = {2, 3};
    Released rel = {0};
    tdl_value *x, *y;
    OK(tdl_tensor_borrow(T, TDL_DTYPE_FLOAT32, 2, shape, NULL, buf, on_release, &rel, &x));
    DLManagedTensor *mt;
    OK(tdl_tensor_to_dlpack(T, x, &mt));
    ck_assert_ptr_eq(mt->dl_tensor.data, buf);
    ck_assert_int_eq(mt->dl_tensor.device.device_type, kDLCPU);
    ck_assert_int_eq(mt->dl_tensor.ndim, 2);
    ck_assert_int_eq(mt->dl_tensor.dtype.code, kDLFloat);
    ck_assert_int_eq(mt->dl_tensor.dtype.bits, 32);
    ck_assert_int_eq(mt->dl_tensor.dtype.lanes, 1);
    ck_assert_int_eq(mt->dl_tensor.shape[1], 3);
    ck_assert_int_eq(mt->dl_tensor.strides[0], 3);
    ck_assert_int_eq(mt->dl_tensor.byte_offset, 0);
    tdl_value_free(x);
    ck_assert_int_eq(rel.count, 0);     /* the export holds the buffer */
    /* into another interpreter, without a copy */
    tdl_interp *U = tdl_open(NULL);
    ck_assert_int_eq(tdl_tensor_from_dlpack(U, mt, &y), TDL_OK);
    tdl_tensor_info info;
    ck_assert_int_eq(tdl_tensor_read(U, y, TDL_DTYPE_FLOAT32, &info), TDL_OK);
    ck_assert_ptr_eq(info.data, buf);
    ck_assert_int_eq(tdl_set_global(U, "y", y), TDL_OK);
    ck_assert_int_eq(tdl_run_string(U, "y[1, 2] = 60\ns = float(y.sum())", NULL), TDL_OK);
    ck_assert(buf[1][2] == 60);
    tdl_value_free(y);
    ck_assert_int_eq(rel.count, 0);
    tdl_close(U);                       /* drops the import: calls the export's deleter */
    ck_assert_int_eq(rel.count, 1);
    ck_assert_ptr_eq(rel.data, buf);
}
END_TEST

START_TEST(test_dlpack_versioned)
{
    RUN("x = arange(12).reshape(3, 4).t()");
    tdl_value *x, *y;
    OK(tdl_get_global(T, "x", &x));
    struct DLManagedTensorVersioned *mv;
    OK(tdl_tensor_to_dlpack_versioned(T, x, &mv));
    tdl_tensor_info info;
    OK(tdl_tensor_read(T, x, TDL_DTYPE_INT64, &info));
    OK(tdl_tensor_from_dlpack_versioned(T, mv, &y));
    tdl_tensor_info info2;
    OK(tdl_tensor_read(T, y, TDL_DTYPE_INT64, &info2));
    ck_assert_ptr_eq(info2.data, info.data);
    ck_assert_int_eq(info2.strides[0], 1);
    ck_assert_int_eq(info2.strides[1], 4);
    OK(tdl_set_global(T, "y", y));
    RUN("print(y[3], bool((x == y).all()))");
    ck_assert_str_eq(out.buf, "tensor([ 3,  7, 11]) True\n");
    tdl_value_free(x);
    tdl_value_free(y);
}
END_TEST

/* The narrow dtypes cross DLPack with their codes (bfloat16 as kDLBfloat) and their bits. */
START_TEST(test_dlpack_narrow_dtypes)
{
    static const struct { const char *src; uint8_t code, bits; const char *text; } cases[] = {
        {"tensor([1, 255], dtype=uint8)", kDLUInt, 8, "tensor([  1, 255], dtype=uint8)"},
        {"tensor([-1, 7], dtype=int8)", kDLInt, 8, "tensor([-1,  7], dtype=int8)"},
        {"tensor([-300, 7], dtype=int16)", kDLInt, 16, "tensor([-300,    7], dtype=int16)"},
        {"tensor([1.5, -0.1], dtype=float16)", kDLFloat, 16, "tensor([ 1.5000, -0.1000], dtype=float16)"},
        {"tensor([1.5, 3.14159], dtype=bfloat16)", kDLBfloat, 16, "tensor([1.5000, 3.1406], dtype=bfloat16)"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tdl_value *x, *y, *r;
        char code[96];
        snprintf(code, sizeof code, "x = %s", cases[c].src);
        OK(tdl_run_string(T, code, NULL));
        OK(tdl_get_global(T, "x", &x));
        DLManagedTensor *mt;
        OK(tdl_tensor_to_dlpack(T, x, &mt));
        ck_assert_int_eq(mt->dl_tensor.dtype.code, cases[c].code);
        ck_assert_int_eq(mt->dl_tensor.dtype.bits, cases[c].bits);
        ck_assert_int_eq(mt->dl_tensor.dtype.lanes, 1);
        tdl_interp *U = tdl_open(NULL);
        OK(tdl_tensor_from_dlpack(U, mt, &y));
        const char *text;
        ck_assert_int_eq(tdl_repr(U, y, &r), TDL_OK);
        ck_assert_int_eq(tdl_to_str(U, r, &text, NULL), TDL_OK);
        ck_assert_str_eq(text, cases[c].text);
        tdl_value_free(r);
        tdl_value_free(y);
        tdl_close(U);
        tdl_value_free(x);
    }
}
END_TEST

/* A DLPack tensor made by a host: its deleter counts. */
typedef struct HostDL {
    DLManagedTensor mt;
    int64_t shape[2];
    double data[6];
    int deleted;
} HostDL;

static void host_dl_deleter(DLManagedTensor *self) { ((HostDL *)self->manager_ctx)->deleted++; }

static void host_dl_init(HostDL *h)
{
    memset(h, 0, sizeof *h);
    for (int k = 0; k < 6; k++) h->data[k] = k;
    h->shape[0] = 2;
    h->shape[1] = 3;
    h->mt.dl_tensor = (DLTensor){.data = h->data, .device = {kDLCPU, 0}, .ndim = 2,
                                 .dtype = {kDLFloat, 64, 1}, .shape = h->shape, .strides = NULL};
    h->mt.manager_ctx = h;
    h->mt.deleter = host_dl_deleter;
}

START_TEST(test_dlpack_import_host)
{
    HostDL h;
    host_dl_init(&h);
    tdl_value *x, *x2;
    OK(tdl_tensor_from_dlpack(T, &h.mt, &x));
    /* importing it again would call the deleter twice: refused, and the deleter is left alone */
    ck_assert_int_eq(tdl_tensor_from_dlpack(T, &h.mt, &x2), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_VALUE);
    ck_assert_ptr_null(x2);
    ck_assert_int_eq(h.deleted, 0);
    OK(tdl_set_global(T, "x", x));
    tdl_value_free(x);
    RUN("print(x.sum(1))\nx = None");
    ck_assert_str_eq(out.buf, "tensor([ 3., 12.], dtype=float64)\n");
    ck_assert_int_eq(h.deleted, 1);
    /* released: it may be imported again */
    h.mt.dl_tensor.byte_offset = 3 * sizeof(double);
    h.shape[0] = 1;
    OK(tdl_tensor_from_dlpack(T, &h.mt, &x));
    OK(tdl_repr(T, x, &x2));
    const char *text;
    OK(tdl_to_str(T, x2, &text, NULL));
    ck_assert_str_eq(text, "tensor([[3., 4., 5.]], dtype=float64)");
    tdl_value_free(x2);
    tdl_value_free(x);
    ck_assert_int_eq(h.deleted, 2);
}
END_TEST

START_TEST(test_dlpack_import_refusals)
{
    HostDL h;
    tdl_value *x = (tdl_value *)1;
    host_dl_init(&h);
    h.mt.dl_tensor.device = (DLDevice){kDLCUDA, 0};
    ck_assert_int_eq(tdl_tensor_from_dlpack(T, &h.mt, &x), TDL_ERROR);
    ck_assert_ptr_null(x);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_DEVICE);
    /* "device cuda:0 is not available: <why>" here; with a GPU, "importing CUDA memory is not
       supported yet" */
    ck_assert_msg(strncmp(tdl_error_message(T), "tdl_tensor_from_dlpack: device cuda:0 is not available: ", 56) == 0
                      || strstr(tdl_error_message(T), "importing CUDA memory is not supported yet") != NULL,
                  "%s", tdl_error_message(T));
    ck_assert_int_eq(h.deleted, 1);     /* consumed, even on failure */
    host_dl_init(&h);
    h.mt.dl_tensor.dtype = (DLDataType){kDLUInt, 16, 1};
    ck_assert_int_eq(tdl_tensor_from_dlpack(T, &h.mt, &x), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_TYPE);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_from_dlpack: DLPack dtype (code 1, 16 bits, 1 lanes) is not "
                                           "supported: tdl has bool, uint8, int8, int16, int32, int64, float16, "
                                           "bfloat16, float32 and float64");
    ck_assert_int_eq(h.deleted, 1);
    host_dl_init(&h);
    h.mt.dl_tensor.byte_offset = 1;
    ck_assert_int_eq(tdl_tensor_from_dlpack(T, &h.mt, &x), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_VALUE);
    ck_assert_int_eq(h.deleted, 1);
    host_dl_init(&h);
    h.mt.dl_tensor.ndim = 65;
    ck_assert_int_eq(tdl_tensor_from_dlpack(T, &h.mt, &x), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_from_dlpack: ndim is 65, not in [0, 64]");
    ck_assert_int_eq(h.deleted, 1);
    ck_assert_int_eq(tdl_tensor_from_dlpack(T, NULL, &x), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_from_dlpack: the tensor is NULL");
    ck_assert_int_eq(tdl_tensor_from_dlpack(NULL, &h.mt, &x), TDL_MISUSE);
    ck_assert_int_eq(h.deleted, 2);
}
END_TEST

/* A versioned DLPack tensor made by a host, read-only or of another major version. */
typedef struct HostDLV {
    struct DLManagedTensorVersionedLayout {     /* DLPack 1.0's layout */
        uint32_t major, minor;
        void *manager_ctx;
        void (*deleter)(void *self);
        uint64_t flags;
        DLTensor dl_tensor;
    } mt;
    int64_t shape[1];
    int32_t data[3];
    int deleted;
} HostDLV;

static void host_dlv_deleter(void *self) { ((HostDLV *)((struct DLManagedTensorVersionedLayout *)self)->manager_ctx)->deleted++; }

START_TEST(test_dlpack_versioned_readonly_and_version)
{
    HostDLV h = {0};
    h.data[0] = 5, h.data[1] = 6, h.data[2] = 7;
    h.shape[0] = 3;
    h.mt.major = 1;
    h.mt.manager_ctx = &h;
    h.mt.deleter = host_dlv_deleter;
    h.mt.flags = 1;             /* DLPACK_FLAG_BITMASK_READ_ONLY */
    h.mt.dl_tensor = (DLTensor){.data = h.data, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLInt, 32, 1},
                                .shape = h.shape};
    tdl_value *x;
    OK(tdl_tensor_from_dlpack_versioned(T, (struct DLManagedTensorVersioned *)&h.mt, &x));
    ck_assert_int_eq(h.deleted, 1);     /* read-only: copied, and released at once */
    tdl_tensor_info info;
    OK(tdl_tensor_read(T, x, TDL_DTYPE_INT32, &info));
    ck_assert_ptr_ne(info.data, h.data);
    ck_assert_int_eq(((int32_t *)info.data)[2], 7);
    tdl_value_free(x);
    h.mt.major = 2;
    ck_assert_int_eq(tdl_tensor_from_dlpack_versioned(T, (struct DLManagedTensorVersioned *)&h.mt, &x), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_from_dlpack_versioned: DLPack 2.0 is not supported (tdl reads "
                                           "1.x)");
    ck_assert_int_eq(h.deleted, 2);
}
END_TEST

START_TEST(test_dlpack_export_outlives_close)
{
    int64_t buf[3] = {7, 8, 9};
    int64_t n = 3;
    Released rel = {0};
    tdl_interp *U = tdl_open(NULL);
    tdl_value *x, *y, *left;
    ck_assert_int_eq(tdl_tensor_borrow(U, TDL_DTYPE_INT64, 1, &n, NULL, buf, on_release, &rel, &x), TDL_OK);
    ck_assert_int_eq(tdl_set_global(U, "x", x), TDL_OK);
    ck_assert_int_eq(tdl_run_string(U, "y = (x * 2).float()", NULL), TDL_OK);
    ck_assert_int_eq(tdl_get_global(U, "y", &y), TDL_OK);
    DLManagedTensor *mx, *my;
    ck_assert_int_eq(tdl_tensor_to_dlpack(U, x, &mx), TDL_OK);
    ck_assert_int_eq(tdl_tensor_to_dlpack(U, y, &my), TDL_OK);      /* computes y */
    ck_assert_int_eq(tdl_int(U, 1, &left), TDL_OK);
    tdl_value_free(x);
    tdl_value_free(y);
    tdl_close(U);
    ck_assert_int_eq(rel.count, 0);
    /* the exports still work after close; calls on U and its handles are misuse */
    ck_assert(((float *)my->dl_tensor.data)[2] == 18.0f);
    ck_assert_int_eq(tdl_run_string(U, "1", NULL), TDL_MISUSE);
    ck_assert_int_eq(tdl_typeof(U, left), TDL_TINVALID);
    ck_assert_int_eq(tdl_to_int(U, left, &n), TDL_MISUSE);
    ck_assert_int_eq(tdl_error_kind_of(U), TDL_ERR_NONE);
    ck_assert_str_eq(tdl_error_report(U), "");
    tdl_close(U);               /* a second close does nothing */
    my->deleter(my);
    tdl_value_free(left);
    ck_assert_int_eq(rel.count, 0);
    mx->deleter(mx);            /* the last one frees U */
    ck_assert_int_eq(rel.count, 1);
}
END_TEST

static void *call_deleter_thread(void *arg)
{
    DLManagedTensor *mt = arg;
    mt->deleter(mt);
    return NULL;
}

START_TEST(test_dlpack_deleter_on_another_thread)
{
    double buf[2] = {1, 2};
    int64_t n = 2;
    Released rel = {0};
    tdl_value *x, *v;
    OK(tdl_tensor_borrow(T, TDL_DTYPE_FLOAT64, 1, &n, NULL, buf, on_release, &rel, &x));
    DLManagedTensor *mt;
    OK(tdl_tensor_to_dlpack(T, x, &mt));
    tdl_value_free(x);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, call_deleter_thread, mt), 0);
    pthread_join(th, NULL);
    ck_assert_int_eq(rel.count, 0);     /* left for the interpreter's thread */
    OK(tdl_none(T, &v));                /* its next call releases it */
    ck_assert_int_eq(rel.count, 1);
    tdl_value_free(v);
    /* and one still pending at close is released by tdl_close */
    OK(tdl_tensor_borrow(T, TDL_DTYPE_FLOAT64, 1, &n, NULL, buf, on_release, &rel, &x));
    OK(tdl_tensor_to_dlpack(T, x, &mt));
    tdl_value_free(x);
    ck_assert_int_eq(pthread_create(&th, NULL, call_deleter_thread, mt), 0);
    pthread_join(th, NULL);
    tdl_close(T);
    T = NULL;
    ck_assert_int_eq(rel.count, 2);
}
END_TEST

/* An export of a tensor that views an import of the same interpreter's own export: deleting the
 * outer export releases the import, whose deleter is the inner export's (found by fuzz_embed; it
 * deadlocked on the interpreter's lock, taken again on the same thread). Before and after close. */
START_TEST(test_dlpack_export_of_own_import)
{
    for (int closed = 0; closed < 2; closed++) {
        int64_t buf[3] = {4, 5, 6}, n = 3;
        Released rel = {0};
        tdl_interp *U = tdl_open(NULL);
        tdl_value *x, *y;
        DLManagedTensor *inner, *outer;
        ck_assert_int_eq(tdl_tensor_borrow(U, TDL_DTYPE_INT64, 1, &n, NULL, buf, on_release, &rel, &x), TDL_OK);
        ck_assert_int_eq(tdl_tensor_to_dlpack(U, x, &inner), TDL_OK);
        ck_assert_int_eq(tdl_tensor_from_dlpack(U, inner, &y), TDL_OK);
        ck_assert_int_eq(tdl_tensor_to_dlpack(U, y, &outer), TDL_OK);
        tdl_value_free(x);
        tdl_value_free(y);
        if (closed)
            tdl_close(U);
        ck_assert_int_eq(((int64_t *)outer->dl_tensor.data)[2], 6);
        outer->deleter(outer);          /* after close, the last export: it frees U */
        ck_assert_int_eq(rel.count, 1);
        if (!closed)
            tdl_close(U);
    }
}
END_TEST

/* ---- options ---- */

START_TEST(test_no_files)
{
    tdl_interp *U = open_capturing(TDL_NO_FILES);
    ck_assert_ptr_nonnull(U);
    static const char *const progs[] = {
        "save('/tmp/tdl_nofiles.npy', zeros(2))", "load('/tmp/tdl_nofiles.npy')", "loadz('/tmp/x.npz')",
        "savez('/tmp/x.npz', zeros(1))", "savez_compressed('/tmp/x.npz', a=zeros(1))",
    };
    static const char *const names[] = {"save", "load", "loadz", "savez", "savez_compressed"};
    for (int k = 0; k < 5; k++) {
        ck_assert_int_eq(tdl_run_string(U, progs[k], NULL), TDL_ERROR);
        ck_assert_int_eq(tdl_error_kind_of(U), TDL_ERR_IO);
        char want[128];
        snprintf(want, sizeof want, "%s(): programs may not access files in this interpreter (TDL_NO_FILES)",
                 names[k]);
        ck_assert_str_eq(tdl_error_message(U), want);
    }
    ck_assert_int_eq(access("/tmp/tdl_nofiles.npy", F_OK), -1);
    ck_assert_int_eq(tdl_run_string(U, "print(1 + 1)", NULL), TDL_OK);
    tdl_close(U);
}
END_TEST

START_TEST(test_config_device)
{
    tdl_config cfg = {0};
    cfg.device = "cpu";
    tdl_interp *U = tdl_open(&cfg);
    ck_assert_ptr_nonnull(U);
    ck_assert_int_eq(tdl_run_string(U, "assert zeros(1).device == device('cpu')", NULL), TDL_OK);
    tdl_close(U);
    cfg.device = "cuda";
    ck_assert_ptr_null(tdl_open(&cfg));
    cfg.device = "tpu";
    ck_assert_ptr_null(tdl_open(&cfg));
}
END_TEST

/* What open_error was told: how often, and the last text. */
typedef struct OpenError {
    int calls;
    char text[256];
} OpenError;

static void note_open_error(void *ud, const char *text, size_t len)
{
    OpenError *o = ud;
    o->calls++;
    ck_assert_uint_eq(strlen(text), len);
    snprintf(o->text, sizeof o->text, "%s", text);
}

/* A tdl_open that fails says why through open_error, once (the error of the unavailable device,
 * the memory limit); one that works says nothing, and a host whose struct ends before open_error
 * is not called. (A malformed operator table, the failure open_error was made for, is a build
 * error that no test can inject: tensor_ops.def is compiled in.) */
START_TEST(test_open_error)
{
    OpenError told = {0};
    tdl_config cfg = {.size = sizeof cfg};
    cfg.write = capture;
    cfg.write_ud = &out;
    cfg.open_error = note_open_error;
    cfg.open_error_ud = &told;
    cfg.device = "tpu";
    ck_assert_ptr_null(tdl_open(&cfg));
    ck_assert_int_eq(told.calls, 1);
    ck_assert_str_eq(told.text, "DeviceError: unknown device 'tpu' (use cpu, cuda or cuda:N)");
    cfg.device = NULL;
    cfg.max_memory = 1024;
    ck_assert_ptr_null(tdl_open(&cfg));
    ck_assert_int_eq(told.calls, 2);
    ck_assert_str_eq(told.text, "MemoryError: over the interpreter's memory limit (max_memory = 1024 bytes)");
    cfg.max_memory = 0;
    tdl_interp *U = tdl_open(&cfg);
    ck_assert_ptr_nonnull(U);
    tdl_close(U);
    cfg.size = offsetof(tdl_config, open_error);
    cfg.device = "tpu";
    ck_assert_ptr_null(tdl_open(&cfg));
    ck_assert_int_eq(told.calls, 2);
}
END_TEST

/* ---- interpreters are independent ---- */

static tdl_status c_const(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    return tdl_int(T, *(int *)ud, result);
}

START_TEST(test_two_interpreters)
{
    tdl_interp *U = tdl_open(NULL);
    ck_assert_ptr_nonnull(U);
    int one = 1, two = 2;
    OK(tdl_register(T, "which", "", c_const, &one));
    ck_assert_int_eq(tdl_register(U, "which", "", c_const, &two), TDL_OK);
    RUN("x = which()");
    ck_assert_int_eq(tdl_run_string(U, "x = which() * 10", NULL), TDL_OK);
    ck_assert_int_eq(get_int("x"), 1);
    tdl_value *x, *ux;
    ck_assert_int_eq(tdl_get_global(U, "x", &ux), TDL_OK);
    int64_t i;
    ck_assert_int_eq(tdl_to_int(U, ux, &i), TDL_OK);
    ck_assert_int_eq(i, 20);
    /* a handle of U is refused by T */
    ck_assert_int_eq(tdl_to_int(T, ux, &i), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_to_int: v belongs to another interpreter");
    ck_assert_int_eq(tdl_set_global(T, "y", ux), TDL_ERROR);
    ck_assert_int_eq(tdl_typeof(T, ux), TDL_TINVALID);
    OK(tdl_get_global(T, "x", &x));
    ck_assert_int_eq(tdl_call(U, x, 0, NULL, 0, NULL, NULL, NULL), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(U), "tdl_call: f belongs to another interpreter");
    tdl_value_free(x);
    tdl_close(U);
    /* after U is closed, its handle says so */
    ck_assert_int_eq(tdl_to_int(T, ux, &i), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_to_int: v belongs to an interpreter that was closed");
    tdl_value_free(ux);         /* frees U's shell */
}
END_TEST

/* Two interpreters on two threads, each holding a view of the other's export and re-exporting it:
 * each thread deletes the other interpreter's outer export (left in that interpreter's pending
 * list), then calls its own interpreter, whose release of the view runs the other interpreter's
 * deleter (through a host's adapter that takes its time, as a real consumer's may). With one lock
 * per interpreter the two threads took them in opposite orders and waited on each other for ever;
 * a watchdog turns such a hang into a failure. */
typedef struct Crossed {
    tdl_interp *U;
    struct Crossed *peer;
    DLManagedTensor *own;       /* U's export of its own buffer, for the peer to import */
    DLManagedTensor *outer;     /* U's export of its view of the peer's export */
    DLManagedTensor adapter;    /* the peer's export as U imports it: a host's wrapper */
    int64_t buf[4];
    int rounds;
    bool failed;
    pthread_barrier_t *bar;
} Crossed;

static void slow_adapter_deleter(DLManagedTensor *self)
{
    DLManagedTensor *inner = self->manager_ctx;
    usleep(1000);
    inner->deleter(inner);
}

static void *crossed_job(void *arg)
{
    Crossed *c = arg;
    int64_t n = 4;
    for (int it = 0; it < c->rounds && !c->failed; it++) {
        tdl_value *x = NULL, *view = NULL, *v = NULL;
        bool ok = tdl_tensor_borrow(c->U, TDL_DTYPE_INT64, 1, &n, NULL, c->buf, NULL, NULL, &x) == TDL_OK &&
                  tdl_tensor_to_dlpack(c->U, x, &c->own) == TDL_OK;
        tdl_value_free(x);
        pthread_barrier_wait(c->bar);
        c->adapter = (DLManagedTensor){.dl_tensor = c->peer->own->dl_tensor, .manager_ctx = c->peer->own,
                                       .deleter = slow_adapter_deleter};
        ok = ok && tdl_tensor_from_dlpack(c->U, &c->adapter, &view) == TDL_OK &&
             tdl_tensor_to_dlpack(c->U, view, &c->outer) == TDL_OK;
        tdl_value_free(view);
        pthread_barrier_wait(c->bar);
        if (ok)
            c->peer->outer->deleter(c->peer->outer);   /* on a thread the peer does not own */
        pthread_barrier_wait(c->bar);
        ok = ok && tdl_none(c->U, &v) == TDL_OK;        /* releases the view: the peer's deleter */
        tdl_value_free(v);
        if (!ok)
            c->failed = true;
        pthread_barrier_wait(c->bar);
    }
    return NULL;
}

START_TEST(test_dlpack_crossed_deleters_on_two_threads)
{
    pthread_barrier_t bar;
    ck_assert_int_eq(pthread_barrier_init(&bar, NULL, 2), 0);
    Crossed c[2] = {{.rounds = 200, .bar = &bar}, {.rounds = 200, .bar = &bar}};
    c[0].peer = &c[1];
    c[1].peer = &c[0];
    for (int k = 0; k < 2; k++) {
        c[k].U = tdl_open(NULL);
        ck_assert_ptr_nonnull(c[k].U);
    }
    pthread_t th[2];
    for (int k = 0; k < 2; k++) ck_assert_int_eq(pthread_create(&th[k], NULL, crossed_job, &c[k]), 0);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    for (int k = 0; k < 2; k++)
        ck_assert_msg(pthread_timedjoin_np(th[k], NULL, &until) == 0, "deadlock: thread %d still waits", k);
    ck_assert(!c[0].failed && !c[1].failed);
    for (int k = 0; k < 2; k++) tdl_close(c[k].U);
    pthread_barrier_destroy(&bar);
}
END_TEST

typedef struct Job { int seed; int64_t result; char err[256]; } Job;

/* Each thread: its own interpreter, tensors from its own buffers, tensor code in a loop. */
static void *thread_job(void *arg)
{
    Job *j = arg;
    tdl_interp *U = tdl_open(NULL);
    if (!U) return NULL;
    int64_t a[64 * 64];
    for (int k = 0; k < 64 * 64; k++) a[k] = (k * 7 + j->seed) % 13 - 6;
    int64_t shape[] = {64, 64};
    tdl_value *x = NULL, *r = NULL;
    int64_t total = 0;
    tdl_status st = tdl_tensor_from_host(U, TDL_DTYPE_INT64, 2, shape, NULL, a, &x);
    if (st == TDL_OK) st = tdl_set_global(U, "x", x);
    if (st == TDL_OK)
        st = tdl_run_string(U, "def step(x, k):\n    y = (x @ x.t() + k) * (x.sum(1, keepdim=True) > 0)\n"
                               "    return int(where(y > 3, y, -y).sum())\n", "<thread>");
    for (int it = 0; st == TDL_OK && it < 20; it++) {
        tdl_value *k = NULL;
        st = tdl_int(U, it, &k);
        tdl_value *args[] = {x, k};
        if (st == TDL_OK) st = tdl_call_name(U, "step", 2, args, 0, NULL, NULL, &r);
        int64_t v = 0;
        if (st == TDL_OK) st = tdl_to_int(U, r, &v);
        total += v;
        tdl_value_free(r);
        tdl_value_free(k);
    }
    if (st != TDL_OK) snprintf(j->err, sizeof j->err, "%s", tdl_error_report(U));
    j->result = total;
    tdl_value_free(x);
    tdl_close(U);
    return NULL;
}

START_TEST(test_two_threads)
{
    Job jobs[2] = {{.seed = 1}, {.seed = 5}}, solo[2] = {{.seed = 1}, {.seed = 5}};
    thread_job(&solo[0]);
    thread_job(&solo[1]);
    ck_assert_str_eq(solo[0].err, "");
    pthread_t th[2];
    for (int k = 0; k < 2; k++) ck_assert_int_eq(pthread_create(&th[k], NULL, thread_job, &jobs[k]), 0);
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(jobs[k].err[0] == '\0', "thread %d: %s", k, jobs[k].err);
        ck_assert_int_eq(jobs[k].result, solo[k].result);
    }
    ck_assert_int_ne(jobs[0].result, jobs[1].result);
}
END_TEST

/* ---- misuse ---- */

START_TEST(test_misuse_null)
{
    tdl_value *v = (tdl_value *)1;
    int64_t i = 1;
    ck_assert_int_eq(tdl_run_string(NULL, "1", NULL), TDL_MISUSE);
    ck_assert_int_eq(tdl_run_file(NULL, "x.tdl"), TDL_MISUSE);
    ck_assert_int_eq(tdl_int(NULL, 1, &v), TDL_MISUSE);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(tdl_get_global(NULL, "x", &v), TDL_MISUSE);
    ck_assert_int_eq(tdl_call_name(NULL, "len", 0, NULL, 0, NULL, NULL, &v), TDL_MISUSE);
    ck_assert_int_eq(tdl_to_int(NULL, NULL, &i), TDL_MISUSE);
    ck_assert_int_eq(i, 0);
    ck_assert_int_eq(tdl_register(NULL, "f", "", c_bad, NULL), TDL_MISUSE);
    ck_assert_int_eq(tdl_raise(NULL, TDL_ERR_VALUE, "x"), TDL_MISUSE);
    ck_assert_int_eq(tdl_typeof(NULL, NULL), TDL_TINVALID);
    ck_assert_int_eq(tdl_error_kind_of(NULL), TDL_ERR_NONE);
    ck_assert_str_eq(tdl_error_report(NULL), "");
    Released rel = {0};
    int64_t n = 1;
    double d = 0;
    ck_assert_int_eq(tdl_tensor_borrow(NULL, TDL_DTYPE_FLOAT64, 1, &n, NULL, &d, on_release, &rel, &v), TDL_MISUSE);
    ck_assert_int_eq(rel.count, 1);
    tdl_value_free(NULL);
    tdl_close(NULL);
    /* NULL arguments with a good interpreter: ValueErrors naming the call */
    ck_assert_int_eq(tdl_run_string(T, NULL, NULL), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_run_string: code is NULL");
    ck_assert_int_eq(tdl_int(T, 1, NULL), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_int: the out-parameter is NULL");
    ck_assert_int_eq(tdl_to_int(T, NULL, &i), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_to_int: v is NULL");
    ck_assert_int_eq(tdl_call(T, NULL, 0, NULL, 0, NULL, NULL, &v), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_call: f is NULL");
    ck_assert_int_eq(tdl_call_name(T, "len", 1, NULL, 0, NULL, NULL, &v), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_call_name: an argument array is NULL");
    tdl_value *args[2] = {NULL, NULL};
    ck_assert_int_eq(tdl_call_name(T, "len", 1, args, 0, NULL, NULL, &v), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_call_name: argument 0 is NULL");
    ck_assert_int_eq(tdl_tuple(T, 2, args, &v), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tuple: item 0 is NULL");
    ck_assert_int_eq(tdl_set_global(T, "x", NULL), TDL_ERROR);
    ck_assert_int_eq(tdl_register(T, "f", NULL, c_bad, NULL), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_register: the signature of 'f' is NULL (\"\" for none)");
    ck_assert_int_eq(tdl_register(T, "f-g", "", c_bad, NULL), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_register: the name 'f-g' is not an identifier");
    ck_assert_int_eq(tdl_register(T, "f", "", NULL, NULL), TDL_ERROR);
    ck_assert_int_eq(tdl_tensor_read(T, NULL, TDL_DTYPE_ANY, NULL), TDL_ERROR);
    /* the interpreter is still usable */
    RUN("print('fine')");
    ck_assert_str_eq(out.buf, "fine\n");
}
END_TEST

START_TEST(test_misuse_tensors)
{
    double d[4] = {0};
    int64_t shape[] = {2, 2}, neg[] = {2, -1}, big[] = {INT64_MAX / 2, 4};
    tdl_value *v = (tdl_value *)1;
    Released rel = {0};
    ck_assert_int_eq(tdl_tensor_from_host(T, TDL_DTYPE_ANY, 2, shape, NULL, d, &v), TDL_ERROR);
    ck_assert_ptr_null(v);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_from_host: 0 is not a tdl_dtype");
    ck_assert_int_eq(tdl_tensor_from_host(T, (tdl_dtype)99, 2, shape, NULL, d, &v), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_from_host: 99 is not a tdl_dtype");
    ck_assert_int_eq(tdl_tensor_borrow(T, (tdl_dtype)-3, 2, shape, NULL, d, on_release, &rel, &v), TDL_ERROR);
    ck_assert_int_eq(rel.count, 1);     /* consumed even on failure */
    ck_assert_int_eq(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT64, 2, neg, NULL, d, &v), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_from_host: shape[1] is negative (-1)");
    ck_assert_int_eq(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT64, 2, big, NULL, d, &v), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_from_host: the shape has too many elements");
    ck_assert_int_eq(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT64, -1, shape, NULL, d, &v), TDL_ERROR);
    ck_assert_int_eq(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT64, 2, NULL, NULL, d, &v), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_from_host: shape is NULL");
    ck_assert_int_eq(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT64, 2, shape, NULL, NULL, &v), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_from_host: data is NULL");
    ck_assert_int_eq(tdl_tensor_borrow(T, TDL_DTYPE_FLOAT64, 1, shape, NULL, (char *)d + 1, on_release, &rel, &v),
                     TDL_ERROR);
    ck_assert_int_eq(rel.count, 2);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_VALUE);
    /* a value that is not a tensor */
    tdl_value *s;
    tdl_tensor_info info;
    OK(tdl_str(T, "t", &s));
    ck_assert_int_eq(tdl_tensor_read(T, s, TDL_DTYPE_ANY, &info), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_read: expected a Tensor, got str");
    ck_assert_int_eq(tdl_tensor_read(T, s, (tdl_dtype)99, &info), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), "tdl_tensor_read: 99 is not a tdl_dtype");
    struct DLManagedTensor *mt = (struct DLManagedTensor *)1;
    ck_assert_int_eq(tdl_tensor_to_dlpack(T, s, &mt), TDL_ERROR);
    ck_assert_ptr_null(mt);
    tdl_value_free(s);
    ck_assert_ptr_null(tdl_dtype_name(TDL_DTYPE_ANY));
    ck_assert_uint_eq(tdl_dtype_size((tdl_dtype)42), 0);
    RUN("print(zeros(2).sum())");
    ck_assert_str_eq(out.buf, "tensor(0.)\n");
}
END_TEST

START_TEST(test_misuse_closed)
{
    /* an interpreter closed with a handle still out: the handle and T answer TDL_MISUSE until the
       handle is freed, and the borrowed buffer was released at close */
    double d = 1;
    int64_t n = 1;
    Released rel = {0};
    tdl_interp *U = tdl_open(NULL);
    tdl_value *x, *y = (tdl_value *)1;
    ck_assert_int_eq(tdl_tensor_borrow(U, TDL_DTYPE_FLOAT64, 1, &n, NULL, &d, on_release, &rel, &x), TDL_OK);
    tdl_close(U);
    ck_assert_int_eq(rel.count, 1);
    ck_assert_int_eq(tdl_dup(U, x, &y), TDL_MISUSE);
    ck_assert_ptr_null(y);
    ck_assert_int_eq(tdl_tensor_read(U, x, TDL_DTYPE_ANY, &(tdl_tensor_info){0}), TDL_MISUSE);
    ck_assert_int_eq(tdl_call_name(U, "len", 1, &x, 0, NULL, NULL, NULL), TDL_MISUSE);
    ck_assert_int_eq(tdl_register(U, "f", "", c_bad, NULL), TDL_MISUSE);
    ck_assert_int_eq(tdl_set_global(U, "x", x), TDL_MISUSE);
    ck_assert_int_eq(tdl_typeof(U, x), TDL_TINVALID);
    ck_assert_str_eq(tdl_type_name(U, x), "");
    tdl_close(U);
    tdl_value_free(x);          /* the last handle: frees U */
}
END_TEST

Suite *embed_suite(void)
{
    Suite *s = suite_create("embed");
    TCase *tc = tcase_create("api");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_globals_roundtrip);
    tcase_add_test(tc, test_read_type_errors);
    tcase_add_test(tc, test_get_attr);
    tcase_add_test(tc, test_complete_and_help);
    tcase_add_test(tc, test_call_positional_and_keyword);
    tcase_add_test(tc, test_call_errors_have_tracebacks);
    tcase_add_loop_test(tc, test_failed_index_display_then_go_on, 0,
                        sizeof failing_index / sizeof failing_index[0]);
    tcase_add_test(tc, test_call_exit);
    tcase_add_test(tc, test_call_dotted_and_import);
    tcase_add_test(tc, test_cbuiltin_call);
    tcase_add_loop_test(tc, test_cbuiltin_signature_errors, 0, sizeof sig_errors / sizeof sig_errors[0]);
    tcase_add_test(tc, test_cbuiltin_raises);
    tcase_add_test(tc, test_cbuiltin_callback);
    tcase_add_test(tc, test_cbuiltin_reentrant);
    tcase_add_loop_test(tc, test_register_bad_signature, 0, sizeof bad_sigs / sizeof bad_sigs[0]);
    tcase_add_test(tc, test_cbuiltin_defaults_and_optional);
    tcase_add_test(tc, test_tensor_copy);
    tcase_add_test(tc, test_borrow_release_once_at_close);
    tcase_add_test(tc, test_borrow_release_when_unreferenced);
    tcase_add_test(tc, test_strided_host_memory);
    tcase_add_loop_test(tc, test_dtypes, 0, sizeof dtype_cases / sizeof dtype_cases[0]);
    tcase_add_test(tc, test_tensor_edge_shapes);
    tcase_add_test(tc, test_tensor_with_dims_refused);
    tcase_add_test(tc, test_dlpack_roundtrip_zero_copy);
    tcase_add_test(tc, test_dlpack_versioned);
    tcase_add_test(tc, test_dlpack_import_host);
    tcase_add_test(tc, test_dlpack_import_refusals);
    tcase_add_test(tc, test_dlpack_narrow_dtypes);
    tcase_add_test(tc, test_dlpack_versioned_readonly_and_version);
    tcase_add_test(tc, test_dlpack_export_outlives_close);
    tcase_add_test(tc, test_dlpack_deleter_on_another_thread);
    tcase_add_test(tc, test_dlpack_export_of_own_import);
    tcase_add_test(tc, test_no_files);
    tcase_add_test(tc, test_config_device);
    tcase_add_test(tc, test_open_error);
    tcase_add_test(tc, test_two_interpreters);
    tcase_add_test(tc, test_two_threads);
    tcase_add_test(tc, test_dlpack_crossed_deleters_on_two_threads);
    tcase_add_test(tc, test_misuse_null);
    tcase_add_test(tc, test_misuse_tensors);
    tcase_add_test(tc, test_misuse_closed);
    suite_add_tcase(s, tc);
    return s;
}
