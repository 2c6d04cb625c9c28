/* test_oom.c — every allocation failure path, as SQLite's malloc tests do it: for representative
 * programs (a script parsed and run, tensor creation, ops and printing, an .npy file, first-class
 * dims, stdlib's roi_align, a runtime error with its traceback, REPL echo, the embedding API with
 * globals, calls, host tensors, DLPack, C builtins and imports), the N-th allocation through
 * lang/mem.h is made to fail, for N = 1, 2, 3, ... until the program runs with no failure
 * injected; once with only the N-th failing, once with every allocation from the N-th on failing
 * (SQLite's "persistent" mode). Each run must end in a MemoryError or exactly as the run without
 * failures did (status, error, output): never a crash or another error. The same interpreter must
 * then still run a statement correctly. Under SANITIZE=1 (make check's second pass)
 * LeakSanitizer checks that no failure path leaks; tdl_open itself is swept too.
 *
 * Run time: every program at every N (a few thousand runs; seconds, also under the sanitizers).
 * TDL_OOM_STRIDE=K sweeps every K-th N only. Tensor work runs on one thread (TDL_NUM_THREADS=1)
 * so that the N-th allocation is the same one in every run. */
#include "tests.h"
#include "mem.h"
#include "tdl.h"

#include <dlpack/dlpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TDL_TEST_STDLIB
#define TDL_TEST_STDLIB "stdlib"
#endif

/* What the program printed in this run (the host's memory, not injected). */
static char printed[8192];
static size_t nprinted;

static void keep(void *ud, const char *text, size_t len)
{
    (void)ud;
    if (len > sizeof printed - 1 - nprinted) len = sizeof printed - 1 - nprinted;
    memcpy(printed + nprinted, text, len);
    nprinted += len;
    printed[nprinted] = 0;
}

static tdl_interp *open_quiet(void)
{
    nprinted = 0;
    printed[0] = 0;
    tdl_config cfg = {.size = sizeof cfg};
    cfg.write = keep;
    cfg.path = TDL_TEST_STDLIB;
    return tdl_open(&cfg);
}

/* A program: TDL_OK, or the status of the first call that failed (its handles freed). */
typedef tdl_status (*Program)(tdl_interp *T);

static tdl_status run(tdl_interp *T, const char *code) { return tdl_run_string(T, code, "<oom>"); }

static tdl_status prog_parse(tdl_interp *T)
{
    return run(T, "def f(a, b=2):\n"
                  "    s = 0\n"
                  "    for x in [a, b] + list(range(3)):\n"
                  "        if x % 2 == 0:\n"
                  "            s += x\n"
                  "        elif x > 10:\n"
                  "            s -= 1\n"
                  "        else:\n"
                  "            s = s * 2\n"
                  "    return s\n"
                  "names = []\n"
                  "for i in range(4):\n"
                  "    names.append(str(i) * 2)\n"
                  "d = [f(1, 4), names]\n"
                  "t = (1, 'two', 3.0, None, True)\n"
                  "msg = 'x=' + str(d[0]) + ','.join(d[1]) + repr(t)\n"
                  "g = lambda y: y + len(msg)\n"
                  "r = g(3)\n"
                  "print(r, msg[:3], t[1:])\n");
}

static tdl_status prog_tensor(tdl_interp *T)
{
    return run(T, "a = arange(12).reshape(3, 4).float()\n"
                  "b = (a * 2 + 1).sum(1)\n"
                  "c = a.t().matmul(a)\n"
                  "m = a[1:, ::2].max()\n"
                  "print(b, c, m)\n"
                  "z = zeros(2, 3, dtype=int64)\n"
                  "z[0, 1] = 5\n"
                  "print(z, a.mean(0), a > 3)\n");
}

/* Gathers, joins, a printed tensor long enough to be summarised, an .npy file written and read. */
static tdl_status prog_tensor_more(tdl_interp *T)
{
    char code[1024];
    snprintf(code, sizeof code,
             "x = arange(2000).reshape(40, 50).double()\n"
             "idx = tensor([3, 1, 4])\n"
             "y = x[idx][:, idx]\n"
             "c = cat([y, y * 2], 0)\n"
             "s = stack([c, c], 1)\n"
             "w = where(c > 10, c, -c)\n"
             "print(x, s.shape, w)\n"
             "save('/tmp/tdl_oom_%d.npy', w)\n"
             "print(load('/tmp/tdl_oom_%d.npy').sum().item())\n"
             "k = randn(3, 4, seed=1).exp().log_softmax(1).argmax(1)\n"
             "print(k, x.permute(1, 0).contiguous()[2:4, :3])\n",
             (int)getpid(), (int)getpid());
    return run(T, code);
}

static tdl_status prog_dims(tdl_interp *T)
{
    return run(T, "i, j = dims(2)\n"
                  "x = arange(12).reshape(3, 4).float()\n"
                  "y = x[i, j]\n"
                  "s = (y * y).sum(j)\n"
                  "print(s.order(i), y.order(j, i))\n");
}

static tdl_status prog_roi_align(tdl_interp *T)
{
    return run(T, "import vision\n"
                  "x = randn(1, 2, 8, 8, seed=0)\n"
                  "boxes = tensor([[0, 1.0, 1.0, 6.0, 5.0], [0, 0.5, 2.0, 7.5, 7.0]])\n"
                  "y = vision.roi_align(x, boxes, (2, 2), spatial_scale=1.0, sampling_ratio=2, aligned=True)\n"
                  "print(y.sum())\n");
}

static tdl_status prog_grad(tdl_interp *T)
{
    return run(T, "x = tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]], requires_grad=True)\n"
                  "w = ones(3, 2, requires_grad=True)\n"
                  "y = (x @ w).tanh()\n"
                  "z = x * 1\n"
                  "z[0] = y[:, 0] * 2 + z[1]\n"
                  "l = (z.softmax(1) * x[tensor([1, 0])]).sum() + y.amax()\n"
                  "l.backward()\n"
                  "print(x.grad, w.grad, grad((x * x).prod(), [x]))\n");
}

static void dl_free(DLManagedTensor *self)
{
    free(self->dl_tensor.shape);
    free(self->dl_tensor.data);
    free(self);
}

/* A 2 x 3 float32 DLPack tensor of the host's, owned by whoever calls its deleter. */
static DLManagedTensor *dl_new(void)
{
    DLManagedTensor *m = calloc(1, sizeof *m);
    float *data = malloc(6 * sizeof *data);
    int64_t *shape = malloc(2 * sizeof *shape);
    if (!m || !data || !shape) abort();     /* the host's memory: not injected */
    for (int k = 0; k < 6; k++) data[k] = (float)k;
    shape[0] = 2, shape[1] = 3;
    m->dl_tensor = (DLTensor){.data = data, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1},
                              .shape = shape};
    m->deleter = dl_free;
    return m;
}

static int released;
static void release_buf(void *ud, void *data) { (void)ud, (void)data; released++; }

#define TRY(call) do { if ((st = (call)) != TDL_OK) goto out; } while (0)

static tdl_status prog_embed(tdl_interp *T)
{
    static float buf[4] = {1, 2, 3, 4};
    tdl_value *v[12] = {0};
    tdl_status st;
    const int64_t shape[2] = {2, 2};
    TRY(run(T, "def f(x, k=1):\n    return x * k + 1\n"));
    TRY(tdl_int(T, 5, &v[0]));
    TRY(tdl_str(T, "hello", &v[1]));
    TRY(tdl_list(T, 2, v, &v[2]));
    TRY(tdl_set_global(T, "g", v[2]));
    TRY(tdl_get_global(T, "g", &v[3]));
    TRY(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT32, 2, shape, NULL, buf, &v[4]));
    const char *kw[] = {"k"};
    TRY(tdl_call_name(T, "f", 1, &v[4], 1, kw, &v[0], &v[5]));
    tdl_tensor_info info;
    TRY(tdl_tensor_read(T, v[5], TDL_DTYPE_FLOAT32, &info));
    TRY(tdl_tensor_borrow(T, TDL_DTYPE_FLOAT32, 2, shape, NULL, buf, release_buf, NULL, &v[6]));
    TRY(tdl_tensor_from_dlpack(T, dl_new(), &v[7]));
    TRY(tdl_call_name(T, "f", 1, &v[7], 0, NULL, NULL, &v[8]));
    DLManagedTensor *out;
    TRY(tdl_tensor_to_dlpack(T, v[8], &out));
    out->deleter(out);
    TRY(tdl_repr(T, v[6], &v[9]));
    TRY(tdl_get_attr(T, v[8], "shape", &v[10]));
    TRY(tdl_call_name(T, "len", 1, &v[3], 0, NULL, NULL, &v[11]));
out:
    for (int k = 0; k < 12; k++) tdl_value_free(v[k]);
    return st;
}

/* A runtime error through a function, with its traceback: the outcome is that error (or a
 * MemoryError), whatever fails on the way. */
static tdl_status prog_error(tdl_interp *T)
{
    tdl_status st = run(T, "def g(x):\n    return x[5]\nprint('before')\ny = g([1, 2])\n");
    if (st == TDL_ERROR) tdl_error_report(T);
    return st;
}

/* Errors whose messages are built from parts: a call missing arguments, a dim bound to two sizes
 * (the message says where each came from), a bad size among dims(sizes=...). */
static tdl_status prog_error_args(tdl_interp *T)
{
    return run(T, "def area(w, h, d):\n    return w * h\n\nprint(area(2))\n");
}

static tdl_status prog_error_bind(tdl_interp *T)
{
    return run(T, "i, j = dims(2)\n"
                  "A = arange(12.).reshape(3, 4)\n"
                  "B = arange(20.).reshape(4, 5)\n"
                  "x = A[i, j]\n"
                  "def rows(t):\n"
                  "    return t[i]\n"
                  "y = rows(B)\n");
}

static tdl_status prog_error_sizes(tdl_interp *T) { return run(T, "a, b, c = dims(sizes=[3, 4, -1])\n"); }

/* REPL mode: expression values echoed, an open block reported incomplete. */
static tdl_status prog_repl(tdl_interp *T)
{
    static const char *const lines[] = {"x = tensor([1.5, 2.0])\n", "x * 2\n", "[1, 'a', (None,)]\n",
                                        "def h(a):\n", "def h(a):\n    return a\n\n", "h(3)\n"};
    for (size_t k = 0; k < sizeof lines / sizeof lines[0]; k++) {
        tdl_status st = tdl_run_string_ex(T, lines[k], strlen(lines[k]), "<stdin>", TDL_RUN_INTERACTIVE);
        if (st != TDL_OK && st != TDL_INCOMPLETE) return st;
    }
    return TDL_OK;
}

static tdl_status c_scale(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    (void)nargs, (void)ud;
    int64_t k;
    tdl_status st = tdl_to_int(T, args[1], &k);
    if (st != TDL_OK) return st;
    if (k < 0) return tdl_raise(T, TDL_ERR_VALUE, "k must be >= 0, got %lld", (long long)k);
    tdl_value *f;
    if ((st = tdl_get_attr(T, args[0], "mul", &f)) != TDL_OK) return st;
    st = tdl_call(T, f, 1, &args[1], 0, NULL, NULL, result);
    tdl_value_free(f);
    return st;
}

/* A C builtin registered, called from tdl with defaults and keywords, calling back into tdl;
 * a module imported and read through the API. */
static tdl_status prog_builtin(tdl_interp *T)
{
    tdl_value *m = NULL, *f = NULL;
    tdl_status st;
    TRY(tdl_register(T, "scale", "t: tensor, k: int = 2, *, note: str? = None", c_scale, NULL));
    TRY(run(T, "print(scale(arange(3)), scale(arange(2), 3, note='x'))\n"));
    TRY(tdl_import(T, "vision", &m));
    TRY(tdl_get_attr(T, m, "roi_align", &f));
out:
    tdl_value_free(f);
    tdl_value_free(m);
    return st;
}

/* The same interpreter still runs code: a statement, its value read back. */
static void check_usable(tdl_interp *T, const char *what, long n)
{
    ck_assert_msg(run(T, "ok__ = len([6] * 7)\n") == TDL_OK, "%s, failure at %ld: then %s", what, n,
                  tdl_error_report(T));
    tdl_value *v;
    int64_t i = 0;
    ck_assert_int_eq(tdl_get_global(T, "ok__", &v), TDL_OK);
    ck_assert_int_eq(tdl_to_int(T, v, &i), TDL_OK);
    tdl_value_free(v);
    ck_assert_int_eq(i, 7);
}

/* What the program prints, and how it ends, when nothing fails. */
static char expected[sizeof printed];
static tdl_status expected_st;
static tdl_error_kind expected_kind;
static char expected_msg[512];

/* Runs p with the n-th allocation failing (and every later one when persistent), in a fresh
 * interpreter; checks the outcome: a MemoryError, or the status, error and output of a run where
 * nothing failed (a failure the code gets round, such as a kernel not cached, must not change
 * results). Returns how many failures were injected (0: p completed without reaching the n-th
 * allocation). */
static long run_failing(Program p, const char *what, long n, bool persistent)
{
    tdl_interp *T = open_quiet();
    ck_assert_ptr_nonnull(T);
    mem_fail_after(n, persistent);
    tdl_status st = p(T);
    long failed = mem_fail_count();
    mem_fail_after(0, false);
    const char *mode = persistent ? " (persistent)" : "";
    if (st != TDL_ERROR || tdl_error_kind_of(T) != TDL_ERR_MEMORY) {
        ck_assert_msg(st == expected_st && tdl_error_kind_of(T) == expected_kind, "%s, failure at %ld%s: status %d, %s",
                      what, n, mode, (int)st, tdl_error_report(T));
        ck_assert_msg(strcmp(tdl_error_message(T), expected_msg) == 0, "%s, failure at %ld%s: message %s", what, n,
                      mode, tdl_error_message(T));
        ck_assert_msg(strcmp(printed, expected) == 0, "%s, failure at %ld%s: printed\n%s\ninstead of\n%s", what, n,
                      mode, printed, expected);
    }
    check_usable(T, what, n);
    tdl_close(T);
    return failed;
}

/* Sweeps N = 1, 1 + stride, ... until p runs with nothing injected (stride 1 unless
 * TDL_OOM_STRIDE says otherwise). */
static void sweep(Program p, const char *what, bool persistent)
{
    const char *s = getenv("TDL_OOM_STRIDE");
    long stride = s && atol(s) > 0 ? atol(s) : 1;
    setenv("TDL_NUM_THREADS", "1", 1);
    tdl_interp *T = open_quiet();
    ck_assert_ptr_nonnull(T);
    expected_st = p(T);
    expected_kind = tdl_error_kind_of(T);
    ck_assert_msg(expected_st == TDL_OK || expected_kind != TDL_ERR_MEMORY, "%s: %s", what, tdl_error_report(T));
    snprintf(expected_msg, sizeof expected_msg, "%s", tdl_error_message(T));
    tdl_close(T);
    memcpy(expected, printed, sizeof expected);
    long n = 1;
    while (run_failing(p, what, n, persistent) > 0) n += stride;
    ck_assert_msg(n > 1, "%s allocates nothing?", what);
}

static const struct { const char *name; Program p; } programs[] = {
    {"parse", prog_parse}, {"tensor", prog_tensor}, {"tensor_more", prog_tensor_more}, {"dims", prog_dims},
    {"roi_align", prog_roi_align}, {"embed", prog_embed}, {"error", prog_error}, {"repl", prog_repl},
    {"builtin", prog_builtin}, {"error_args", prog_error_args}, {"error_bind", prog_error_bind},
    {"error_sizes", prog_error_sizes}, {"grad", prog_grad},
};
enum { NPROGRAMS = sizeof programs / sizeof programs[0] };

/* Loop test _i: program _i / 2, persistent when _i is odd. */
START_TEST(oom_program)
{
    sweep(programs[_i / 2].p, programs[_i / 2].name, _i % 2 == 1);
    char path[64];
    snprintf(path, sizeof path, "/tmp/tdl_oom_%d.npy", (int)getpid());
    unlink(path);
}
END_TEST

/* Script files named in TDL_OOM_SCRIPTS (space-separated), swept the same way in both modes: not
 * part of make check (all of tests/scripts at every N takes minutes under the sanitizers), for a
 * deeper run: TDL_OOM_SCRIPTS="$(ls tests/scripts/NAME.tdl ...)" CK_RUN_CASE=scripts. */
static const char *script_path;

static tdl_status prog_script(tdl_interp *T) { return tdl_run_file(T, script_path); }

START_TEST(oom_scripts)
{
    const char *list = getenv("TDL_OOM_SCRIPTS");
    char path[1024];
    for (const char *p = list ? list : ""; *p;) {
        size_t n = strcspn(p, " ");
        if (n > 0 && n < sizeof path) {
            memcpy(path, p, n);
            path[n] = 0;
            script_path = path;
            sweep(prog_script, path, false);
            sweep(prog_script, path, true);
        }
        p += n + (p[n] == ' ');
    }
}
END_TEST

/* tdl_open itself: NULL or a working interpreter, nothing leaked either way. */
START_TEST(oom_open)
{
    for (long n = 1;; n++) {
        mem_fail_after(n, false);
        tdl_interp *T = open_quiet();
        long failed = mem_fail_count();
        mem_fail_after(0, false);
        if (T) {
            check_usable(T, "tdl_open", n);
            tdl_close(T);
        }
        if (failed == 0) {
            ck_assert_ptr_nonnull(T);
            break;
        }
    }
}
END_TEST

Suite *oom_suite(void)
{
    Suite *s = suite_create("oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, oom_open);
    tcase_add_loop_test(tc, oom_program, 0, 2 * NPROGRAMS);
    suite_add_tcase(s, tc);
    TCase *scripts = tcase_create("scripts");
    tcase_set_timeout(scripts, 0);
    tcase_add_test(scripts, oom_scripts);
    suite_add_tcase(s, scripts);
    return s;
}
