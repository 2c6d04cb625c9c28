/* test_grad.c — gradients (fcdim/autograd.c) against PyTorch autograd.
 *
 * The golden cases (tests/golden/grad/cases.txt and its .npy files, written by gen_grad.py with
 * PyTorch 1.13 and torchvision) are programs that compute gradients with backward() or grad() and
 * leave them in globals: each is compared with PyTorch's, the same shape and dtype and |tdl -
 * torch| <= tol * (|torch| + amax|torch|) (tol 1e-5 for float32, 1e-12 for float64); "var=None":
 * the global must be None (no gradient reached it). They cover every differentiable op, views,
 * gathers, writes, matmul, first-class dims and roi_align's input gradient against torchvision's
 * backward (gen_grad.py lists what). Besides: float64 finite differences of composite programs,
 * the same bits at 1, 2 and 4 threads and from run to run for roi_align's gradient, and PyTorch's
 * errors. With TDL_TEST_DEVICE (make check-device, check-gpu) the inputs go to that device. */
#include "tests.h"

#include "backend.h"               /* fc_cpu_narrow_skips, fc_cpu_term_skips, fc_cpu_gate_points */
#include "fcdim.h"
#include "golden_cases.h"
#include "interp.h"                 /* an interpreter's FcCtx: FC_SCHED_STAGE off */
#include "tdl.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIR "tests/golden/grad/"
#define MIN_CASES 250

/* Compares global var of T with the .npy file path (or, path NULL, requires None). */
static void compare(tdl_interp *T, const char *var, const char *path, char *why, size_t cap)
{
    if (path) {
        golden_compare_npy(T, var, path, -1.0, "-", why, cap);
        return;
    }
    tdl_value *v = NULL;
    if (tdl_get_global(T, var, &v) != TDL_OK)
        golden_put(why, cap, "no global %s", var);
    else if (tdl_typeof(T, v) != TDL_TNONE)
        golden_put(why, cap, "%s: a value, want None", var);
    tdl_value_free(v);
}

START_TEST(golden)
{
    GoldenCase *cases = NULL;
    char err[256];
    int n = golden_cases_load(DIR "cases.txt", &cases, err, sizeof err);
    ck_assert_msg(err[0] == '\0', "%s", err);
    ck_assert_msg(n >= MIN_CASES, "%s holds %d cases, fewer than %d", DIR "cases.txt", n, MIN_CASES);
    char *report = calloc(1, 65536);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        const GoldenCase *c = &cases[i];
        char prog[16384], why[2048] = "";
        golden_case_program("vision", c->program, c->ok ? c->text : NULL, prog, sizeof prog);
        tdl_interp *T = golden_open(0);
        ck_assert_ptr_nonnull(T);
        if (tdl_run_string(T, prog, c->name) != TDL_OK) {
            golden_put(why, sizeof why, "raised %s: %s", tdl_error_kind_name(tdl_error_kind_of(T)), tdl_error_message(T));
        } else {
            char *spec = strdup(c->text), *save = NULL;
            for (char *tok = strtok_r(spec, " ", &save); tok && !why[0]; tok = strtok_r(NULL, " ", &save)) {
                char *eq = strchr(tok, '=');
                if (!eq)
                    continue;
                *eq = '\0';
                char path[512];
                snprintf(path, sizeof path, DIR "%s", eq + 1);
                compare(T, tok, strcmp(eq + 1, "None") == 0 ? NULL : path, why, sizeof why);
            }
            free(spec);
        }
        tdl_close(T);
        if (why[0]) {
            failed++;
            golden_put(report, 65536, "\n  %s: %s", c->name, why);
        }
    }
    golden_cases_free(cases, n);
    if (failed)
        fprintf(stderr, "gradient cases that differ from PyTorch:%s\n", report);
    char head[1500];
    snprintf(head, sizeof head, "%s", report);
    free(report);
    ck_assert_msg(failed == 0, "%d of %d gradient cases differ from PyTorch:%s", failed, n, head);
}
END_TEST

/* Runs program in a fresh interpreter; it must succeed (its asserts hold). */
static void run_ok(const char *program)
{
    tdl_interp *T = golden_open(0);
    ck_assert_ptr_nonnull(T);
    tdl_status st = tdl_run_string(T, program, "test");
    ck_assert_msg(st == TDL_OK, "%s: %s", tdl_error_kind_name(tdl_error_kind_of(T)), tdl_error_message(T));
    tdl_close(T);
}

/* Runs program; it must raise kind with a message starting with msg, and the interpreter stays
 * usable. */
static void run_err(const char *program, const char *kind, const char *msg)
{
    tdl_interp *T = golden_open(0);
    ck_assert_ptr_nonnull(T);
    tdl_status st = tdl_run_string(T, program, "test");
    ck_assert_msg(st == TDL_ERROR, "no error from:\n%s", program);
    ck_assert_str_eq(tdl_error_kind_name(tdl_error_kind_of(T)), kind);
    ck_assert_msg(strncmp(tdl_error_message(T), msg, strlen(msg)) == 0, "message: %s\nwant: %s", tdl_error_message(T),
                  msg);
    ck_assert_int_eq(tdl_run_string(T, "assert (tensor([1.0]) + 1).item() == 2.0", "after"), TDL_OK);
    tdl_close(T);
}

/* Central differences in float64 of composite programs: f(x) built from many ops, its gradient
 * from backward against (f(x + h e_i) - f(x - h e_i)) / 2h at every element. */
START_TEST(finite_differences)
{
    static const char *const fns[] = {
        "def f(x, w):\n    h = (x @ w).tanh()\n    return (h.softmax(1) * h.sigmoid()).sum() + h.logsumexp(0).sum()\n",
        "def f(x, w):\n    y = cat([x * w[:, 0], x.exp()[:, ::2]], 1)\n    y[1] = y[0] * 2\n    return (y.amax(1) + y.mean(0).sum()).sum()\n",
        "def f(x, w):\n    i, j = dims(2)\n    a = x[i, j] * w[:, 0][j]\n    return (a.sum(j).order(i) ** 2).sum() + x[tensor([0, 0, 1])].pow(3).sum()\n",
        ("def f(x, w):\n    z = zeros(4, 3, dtype=float64)\n    z.index_put_([tensor([0, 0, 3])], x[:, :3] * w[1, :3], accumulate=True)\n"
         "    return (z.sin() * x.clamp(-0.5, 0.5).sum()).sum() + x.gather(1, tensor([[1, 0], [2, 2], [0, 1]])).prod()\n"),
    };
    for (size_t k = 0; k < sizeof fns / sizeof *fns; k++) {
        char prog[4096];
        snprintf(prog, sizeof prog,
                 "%s"
                 "x = (arange(12, dtype=float64).reshape(3, 4) * 0.37).sin().requires_grad_()\n"
                 "w = (arange(12, dtype=float64).reshape(4, 3) * 0.61).cos()\n"
                 "f(x, w).backward()\n"
                 "g = x.grad\n"
                 "h = 1e-6\n"
                 "xd = x.detach().clone()\n"
                 "for i in range(3):\n"
                 "    for j in range(4):\n"
                 "        a = xd.clone()\n"
                 "        a[i, j] += h\n"
                 "        b = xd.clone()\n"
                 "        b[i, j] -= h\n"
                 "        fd = (f(a, w) - f(b, w)).item() / (2 * h)\n"
                 "        assert abs(fd - g[i, j].item()) <= 1e-6 * (1 + abs(fd)), (i, j, fd, g[i, j].item())\n",
                 fns[k]);
        run_ok(prog);
    }
}
END_TEST

/* Runs prog at 1, 2, 4, 4 and 1 threads (TDL_NUM_THREADS), each time in a fresh interpreter, and
 * requires the float32 global gx to have the same bits every time; returns its values from the
 * first run (malloc'd, *n of them). The runs at 2 and 4 threads must split a scattered store
 * over its owner loops at least once (fc_owner_split_count): the parallel path, not a fallback
 * to one thread. */
static bool terms_on;   /* same_bits' interpreters scatter gathers alike by one kernel, bounds the data
                           set or not (FC_SCHED_TERMS, FC_SCHED_TERMS_BOUNDED) */

static float *same_bits(const char *prog, const char *what, size_t *n)
{
    char *saved = env_save("TDL_NUM_THREADS");
    float *first = NULL;
    size_t bytes = 0;
    static const char *const threads[] = {"1", "2", "4", "4", "1"};
    for (size_t r = 0; r < sizeof threads / sizeof *threads; r++) {
        setenv("TDL_NUM_THREADS", threads[r], 1);
        long splits = fc_owner_split_count();
        tdl_interp *T = golden_open(0);
        ck_assert_ptr_nonnull(T);
        if (terms_on)
            T->I.fc->sched_off &= ~(FC_SCHED_TERMS | FC_SCHED_TERMS_BOUNDED);
        ck_assert_msg(tdl_run_string(T, prog, "det") == TDL_OK, "%s", tdl_error_message(T));
        tdl_value *v = NULL;
        tdl_tensor_info info;
        ck_assert_int_eq(tdl_get_global(T, "gx", &v), TDL_OK);
        ck_assert_int_eq(tdl_tensor_read(T, v, TDL_DTYPE_FLOAT32, &info), TDL_OK);
        size_t nb = (size_t)info.numel * sizeof(float);
        if (!first) {
            first = malloc(nb);
            ck_assert_ptr_nonnull(first);
            memcpy(first, info.data, nb);
            bytes = nb;
            *n = (size_t)info.numel;
        } else {
            ck_assert_msg(nb == bytes && memcmp(first, info.data, nb) == 0,
                          "%s: the gradient at %s threads differs from the one at 1", what, threads[r]);
        }
        if (strcmp(threads[r], "1") != 0)
            ck_assert_msg(fc_owner_split_count() > splits,
                          "%s: no scattered store was split over owner loops at %s threads", what, threads[r]);
        tdl_value_free(v);
        tdl_close(T);
    }
    env_restore("TDL_NUM_THREADS", saved);
    return first;
}

/* Reads float32 (or int64) global name (on the CPU) of a fresh run of prog into a malloc'd array. */
static void *read_global(const char *prog, const char *name, tdl_dtype dt, size_t *n)
{
    tdl_interp *T = golden_open(0);
    ck_assert_ptr_nonnull(T);
    ck_assert_msg(tdl_run_string(T, prog, "ref") == TDL_OK, "%s", tdl_error_message(T));
    tdl_value *v = NULL;
    tdl_tensor_info info;
    ck_assert_int_eq(tdl_get_global(T, name, &v), TDL_OK);
    ck_assert_int_eq(tdl_tensor_read(T, v, dt, &info), TDL_OK);
    size_t es = dt == TDL_DTYPE_FLOAT32 ? sizeof(float) : sizeof(int64_t);
    void *out = malloc((size_t)info.numel * es);
    ck_assert_ptr_nonnull(out);
    memcpy(out, info.data, (size_t)info.numel * es);
    *n = (size_t)info.numel;
    tdl_value_free(v);
    tdl_close(T);
    return out;
}

/* roi_align's gradient (a scatter-add of many overlapping taps, split over the channels: 512 of
 * them, two chunks' worth): the same bits at 1, 2 and 4 threads, and twice in a row. */
START_TEST(deterministic)
{
    static const char prog[] =
        "import vision\n"
        "x = (arange(2 * 512 * 20 * 24, dtype=float32).reshape(2, 512, 20, 24) * 0.01).sin().requires_grad_()\n"
        "b = tensor([[0, 1.0, 1.5, 17.2, 18.9], [1, -3.0, 2.0, 30.0, 16.0], [0, 4.0, 4.0, 9.0, 9.0],\n"
        "            [1, 6.0, 5.0, 2.0, 1.0], [0, 0.5, 0.5, 23.0, 19.0], [1, 2.0, 2.0, 12.0, 12.0]])\n"
        "y = vision.roi_align(x, b, (7, 7), 1.0, -1, True)\n"
        "g = (arange(y.numel(), dtype=float32) * 0.37).cos().reshape(y.shape)\n"
        "(y * g).sum().backward()\n"
        "gx = x.grad.cpu()\n";
    size_t n;
    float *gx = same_bits(prog, "roi_align", &n);
    ck_assert_int_eq(n, 2 * 512 * 20 * 24);
    free(gx);
}
END_TEST

/* roi_align's gradient with the cotangent of its sum over samples computed once into a
 * channels-innermost buffer (FC_SCHED_STAGE) and without: the same bits (a buffer laid out or read
 * wrongly would move values), and the staging taken only when on. */
START_TEST(staged_cotangent)
{
    static const char prog[] =
        "import vision\n"
        "x = (arange(2 * 64 * 20 * 24, dtype=float32).reshape(2, 64, 20, 24) * 0.01).sin().requires_grad_()\n"
        "b = tensor([[0, 1.0, 1.5, 17.2, 18.9], [1, -3.0, 2.0, 30.0, 16.0], [0, 4.0, 4.0, 9.0, 9.0],\n"
        "            [1, 6.0, 5.0, 2.0, 1.0], [0, 0.5, 0.5, 23.0, 19.0], [1, 2.0, 2.0, 12.0, 12.0]])\n"
        "y = vision.roi_align(x, b, (5, 6), 0.5, 0, True)\n"
        "g = (arange(y.numel(), dtype=float32) * 0.37).cos().reshape(y.shape)\n"
        "(y * g).sum().backward()\n"
        "gx = x.grad.cpu()\n";
    float *bits[2] = {NULL, NULL};
    size_t nb = 0;
    for (int off = 0; off < 2; off++) {
        tdl_interp *T = golden_open(0);
        ck_assert_ptr_nonnull(T);
        if (off)
            T->I.fc->sched_off |= FC_SCHED_STAGE;
        long before = fc_grad_staged_count(), tiles = fc_cpu_scaled_tiles();
        ck_assert_msg(tdl_run_string(T, prog, "staged") == TDL_OK, "%s", tdl_error_message(T));
        if (off) {
            ck_assert_int_eq(fc_grad_staged_count(), before);
        } else {
            ck_assert_msg(fc_grad_staged_count() > before, "no cotangent was staged");
            /* dY / count is read from NCHW dY along the bin columns and stored channels
             * innermost: sixteen bins' channels at a time, transposed and divided in
             * registers (plan_tscale) */
            ck_assert_msg(golden_device() || fc_cpu_scaled_tiles() > tiles,
                          "the staged cotangent was read element by element");
        }
        tdl_value *v = NULL;
        tdl_tensor_info info;
        ck_assert_int_eq(tdl_get_global(T, "gx", &v), TDL_OK);
        ck_assert_int_eq(tdl_tensor_read(T, v, TDL_DTYPE_FLOAT32, &info), TDL_OK);
        nb = (size_t)info.numel * sizeof(float);
        ck_assert_int_eq(info.numel, 2 * 64 * 20 * 24);
        bits[off] = malloc(nb);
        ck_assert_ptr_nonnull(bits[off]);
        memcpy(bits[off], info.data, nb);
        tdl_value_free(v);
        tdl_close(T);
    }
    ck_assert_msg(memcmp(bits[0], bits[1], nb) == 0, "roi_align's gradient: staged and not, different bits");
    free(bits[0]);
    free(bits[1]);
    /* a cotangent that reads a value overwritten since the forward is not staged: the backward
     * reports it as PyTorch does */
    run_err("x = ones(64, 16, 128, requires_grad=True)\nv = (arange(64 * 128, dtype=float32) * 0.5).reshape(64, 128)\n"
            "z = (x.sum(1) * v).sum()\nv[0] = 5.0\nz.backward()\n",
            "RuntimeError", "one of the variables needed for gradient computation has been modified by an inplace operation");
}
END_TEST

/* The executor's test counters count each run once: a kernel run again (its plan and threads
 * kept, kernel_cache.c) adds what that run did, as the first run did (thread_init starts each
 * run's threads from zero; run_plan adds them up). roi_align's backward with the taps as terms
 * and its cotangent staged: scaled tiles, later terms' skips and narrow skips. */
START_TEST(counters_per_run)
{
    static const char prog[] =
        "import vision\n"
        "x = (arange(2 * 64 * 20 * 24, dtype=float32).reshape(2, 64, 20, 24) * 0.01).sin().requires_grad_()\n"
        "b = tensor([[0, 1.0, 1.5, 17.2, 18.9], [1, -3.0, 2.0, 30.0, 16.0], [0, 4.0, 4.0, 9.0, 9.0]])\n"
        "y = vision.roi_align(x, b, (5, 6), 0.5, 0, True)\n"
        "g = (arange(y.numel(), dtype=float32) * 0.37).cos().reshape(y.shape)\n"
        "(y * g).sum().backward()\n"
        "x.grad.stride()\n";
    if (golden_device())
        return;
    tdl_interp *T = golden_open(0);
    ck_assert_ptr_nonnull(T);
    T->I.fc->sched_off &= ~(FC_SCHED_TERMS | FC_SCHED_TERMS_BOUNDED);
    long d[2][3];
    for (int r = 0; r < 2; r++) {
        long b = fc_cpu_scaled_tiles(), s = fc_cpu_term_skips(), z = fc_cpu_narrow_skips();
        ck_assert_msg(tdl_run_string(T, prog, "counters") == TDL_OK, "%s", tdl_error_message(T));
        d[r][0] = fc_cpu_scaled_tiles() - b;
        d[r][1] = fc_cpu_term_skips() - s;
        d[r][2] = fc_cpu_narrow_skips() - z;
    }
    for (int c = 0; c < 3; c++) {
        ck_assert_int_gt(d[0][c], 0);
        ck_assert_int_eq(d[1][c], d[0][c]);
    }
    tdl_close(T);
}
END_TEST

/* The executor's ways of moving bytes in a backward's kernels give the values they would give
 * otherwise: a computed value stored across the layout of what it reads (an NCHW tensor times
 * two plus one written into channels_last memory: its loads taken eight rows at a time through
 * a transposed block, cpu_exec.c's load_block), and fills of 16 MiB and more (zeros, as a
 * gradient buffer's, written with non-temporal stores: plan_stream). */
START_TEST(transposed_loads_and_fills)
{
    long blocks = fc_cpu_tload_blocks(), streams = fc_cpu_stream_runs();
    run_ok("x = (arange(3 * 40 * 11 * 13, dtype=float32) * 0.37).sin().reshape(3, 40, 11, 13)\n"
           "y = empty(3, 40, 11, 13).contiguous(memory_format=channels_last)\n"
           "y[...] = x * 2.0 + 1.0\n"
           "assert y.is_contiguous(memory_format=channels_last)\n"
           "assert bool((y == x * 2.0 + 1.0).all())\n"
           "assert bool((y.contiguous() == (x * 2.0 + 1.0).contiguous()).all())\n"
           "z = zeros(5000000)\n"
           "z.stride()\n"
           "assert z.abs().sum().item() == 0.0 and z.shape[0] == 5000000\n"
           "f = full((3, 2000000), 2.5)\n"
           "f.stride()\n"
           "assert bool((f == 2.5).all()) and f[2, 1999999].item() == 2.5\n");
    if (!golden_device()) {
        ck_assert_msg(fc_cpu_tload_blocks() > blocks, "no load went through a transposed block");
        ck_assert_msg(fc_cpu_stream_runs() >= streams + 2, "the fills were not streamed");
    }
}
END_TEST

/* The transposing copies of roi_align's forward and backward (NCHW made channels_last, and the
 * channels-last gradient back to NCHW) go a tile of sixteen rows at a time (cpu_exec.c's
 * copy_tile), written past the caches when large (Plan.tstream), the way back chunk by chunk
 * (Plan.tchunk): the values are the input's, for channels that fill the tile's blocks and for
 * those that do not, at 1, 2 and 3 threads. */
START_TEST(transposing_copies_tiled)
{
    for (int t = 1; t <= 3; t++) {
        char nth[2] = {(char)('0' + t), 0};
        setenv("TDL_NUM_THREADS", nth, 1);
        long tiles = fc_cpu_copy_tiles(), streams = fc_cpu_stream_runs(), chunks = fc_cpu_chunk_copies();
        run_ok("for c, h, w in ((256, 96, 100), (40, 11, 13), (24, 16, 17)):\n"
               "    x = (arange(2 * c * h * w, dtype=float32) * 0.37).sin().reshape(2, c, h, w)\n"
               "    y = x.contiguous(memory_format=channels_last)\n"
               "    assert y.is_contiguous(memory_format=channels_last) and not x.is_contiguous(memory_format=channels_last)\n"
               "    assert bool((y == x).all())\n"
               "    z = y.contiguous()\n"
               "    z.stride()\n"
               "    assert z.is_contiguous()\n"
               "    assert bool((z == x).all())\n"
               "    assert y[1, c - 1, h - 1, w - 1].item() == x[1, c - 1, h - 1, w - 1].item()\n");
        if (!golden_device()) {
            ck_assert_msg(fc_cpu_copy_tiles() > tiles, "no tile was copied whole");
            ck_assert_msg(fc_cpu_stream_runs() >= streams + 2, "the large copies were not streamed");
            ck_assert_msg(fc_cpu_chunk_copies() >= chunks + 2, "the copies back to NCHW were not taken chunk by chunk");
        }
    }
    unsetenv("TDL_NUM_THREADS");
}
END_TEST

/* A transposing store of a scaled value (cpu_plan.c's plan_tscale: the load times or divided by
 * values constant over a tile, as roi_align's staged cotangent dY / count) gives the values the
 * same expression gives computed in place, NCHW into channels_last memory and back, with the
 * divisor's operand first and second, for channels that fill the tile's blocks and for those
 * that do not, at 1 and 3 threads; whole tiles were scaled. */
START_TEST(scaled_transposing_copies)
{
    for (int t = 1; t <= 3; t += 2) {
        setenv("TDL_NUM_THREADS", t == 1 ? "1" : "3", 1);
        long scaled = fc_cpu_scaled_tiles();
        run_ok("for c, h, w in ((256, 20, 21), (40, 11, 13), (24, 16, 17)):\n"
               "    x = (arange(2 * c * h * w, dtype=float32) * 0.37).sin().reshape(2, c, h, w)\n"
               "    d = arange(2, dtype=float32).reshape(2, 1, 1, 1) * 1.5 + 3.0\n"
               "    y = empty(2, c, h, w).contiguous(memory_format=channels_last)\n"
               "    y[...] = x * 0.3 / d\n"
               "    assert y.is_contiguous(memory_format=channels_last)\n"
               "    assert bool((y == x * 0.3 / d).all())\n"
               "    z = empty(2, c, h, w)\n"
               "    z[...] = 3.0 / y * d\n"
               "    assert bool((z == 3.0 / y * d).all())\n"
               "    assert y[1, c - 1, h - 1, w - 1].item() == (x[1, c - 1, h - 1, w - 1] * 0.3 / d[1, 0, 0, 0]).item()\n");
        if (!golden_device())
            ck_assert_msg(fc_cpu_scaled_tiles() > scaled, "no tile was scaled as it was copied");
    }
    unsetenv("TDL_NUM_THREADS");
}
END_TEST

/* A multiply-add whose factor holds one value per chunk (roi_align's bilinear weights over the
 * channels; w per row below) reads that value where it is, not broadcast over the chunk
 * (cpu_plan.c's muladd_one): the sums are those of the product stored first and added after
 * (no contraction), at 1 and 2 threads, in float32 and float64, with and without an x; and the
 * forward of roi_align (MASKRCNN's 256 channels) takes it, the same values at 1, 2 and 4 threads. */
START_TEST(muladd_one_factor)
{
    long runs = fc_cpu_muladd_one_runs();
    for (int t = 1; t <= 2; t++) {
        setenv("TDL_NUM_THREADS", t == 1 ? "1" : "2", 1);
        run_ok("for dt in (float32, float64):\n"
               "    x = (arange(300 * 257, dtype=dt) * 0.37).sin().reshape(300, 257)\n"
               "    y = (arange(300 * 257, dtype=dt) * 0.23).cos().reshape(300, 257)\n"
               "    w = (arange(300, dtype=dt) * 0.11).cos().reshape(300, 1) * 3.0\n"
               "    z = x + w * y\n"
               "    q = w * y\n"
               "    q.stride()\n"
               "    assert bool((z == x + q).all())\n"
               "    z2 = (x * y + w * y) * 0.5\n"
               "    q2 = x * y\n"
               "    q2.stride()\n"
               "    assert bool((z2 == (q2 + q) * 0.5).all())\n");
    }
    unsetenv("TDL_NUM_THREADS");
    if (!golden_device())
        ck_assert_msg(fc_cpu_muladd_one_runs() > runs, "no multiply-add read its factor of one value in place");
    float *bits[3] = {NULL, NULL, NULL};
    size_t nb = 0;
    for (int i = 0; i < 3; i++) {
        setenv("TDL_NUM_THREADS", i == 0 ? "1" : i == 1 ? "2" : "4", 1);
        tdl_interp *T = golden_open(0);
        ck_assert_ptr_nonnull(T);
        runs = fc_cpu_muladd_one_runs();
        tdl_status st = tdl_run_string(T,
            "import vision\n"
            "x = (arange(2 * 256 * 30 * 34, dtype=float32) * 0.37).sin().reshape(2, 256, 30, 34)\n"
            "b = tensor([[0, 1.0, 2.0, 100.0, 90.0], [1, 30.0, 10.5, 80.0, 120.0], [0, -8.0, 4.0, 130.0, 110.0]])\n"
            "y = vision.roi_align(x, b, (7, 7), 0.25, 2, True)\n"
            "y.stride()\n"
            "yc = y.cpu()\n", "test");
        ck_assert_msg(st == TDL_OK, "%s", tdl_error_message(T));
        if (!golden_device())
            ck_assert_msg(fc_cpu_muladd_one_runs() > runs, "roi_align's forward broadcast its weights");
        tdl_value *v = NULL;
        tdl_tensor_info info;
        ck_assert_int_eq(tdl_get_global(T, "yc", &v), TDL_OK);
        ck_assert_int_eq(tdl_tensor_read(T, v, TDL_DTYPE_FLOAT32, &info), TDL_OK);
        nb = (size_t)info.numel * sizeof(float);
        bits[i] = malloc(nb);
        ck_assert_ptr_nonnull(bits[i]);
        memcpy(bits[i], info.data, nb);
        tdl_value_free(v);
        tdl_close(T);
    }
    unsetenv("TDL_NUM_THREADS");
    ck_assert_msg(memcmp(bits[0], bits[1], nb) == 0 && memcmp(bits[0], bits[2], nb) == 0,
                  "roi_align's forward: different bits at 1, 2 and 4 threads");
    for (int i = 0; i < 3; i++)
        free(bits[i]);
}
END_TEST

/* A chain of multiply-adds whose factors hold one value per chunk (roi_align's four taps, each
 * a row of channels times its bilinear weight) is one pass over each chunk (cpu_plan.c's
 * plan_rowops outside a span, cpu_exec.c's terms_one): 300 rows of 257 values are two chunks
 * each, so one pass per chunk is 600 a kernel, where a pass per tap would be 2400. The sums are
 * those of the products stored first and added one after the other (no contraction), with and
 * without an x, in float32 and float64, at 1 and 2 threads; roi_align's forward at 256
 * channels takes it. */
START_TEST(one_term_chains)
{
    for (int t = 1; t <= 2; t++) {
        setenv("TDL_NUM_THREADS", t == 1 ? "1" : "2", 1);
        for (int dt = 0; dt < 2; dt++) {
            char code[1400];
            snprintf(code, sizeof code,
                     "dt = %s\n"
                     "r = [(arange(300 * 257, dtype=dt) * (0.37 + 0.1 * k)).sin().reshape(300, 257) for k in range(5)]\n"
                     "w = [(arange(300, dtype=dt) * (0.11 + 0.05 * k)).cos().reshape(300, 1) * 3.0 for k in range(5)]\n"
                     "p = [r[k] * w[k] for k in range(5)]\n"
                     "for q in p:\n"
                     "    q.stride()\n"
                     "s = p[0] + p[1]\n"
                     "s.stride()\n"
                     "s = s + p[2]\n"
                     "s.stride()\n"
                     "s3 = s + p[3]\n"
                     "s3.stride()\n"
                     "x = r[4] + p[0]\n"
                     "x.stride()\n"
                     "x = x + p[1]\n"
                     "x.stride()\n"
                     "x = x + p[2]\n"
                     "x.stride()\n",
                     dt ? "float64" : "float32");
            tdl_interp *T = golden_open(0);
            ck_assert_ptr_nonnull(T);
            ck_assert_msg(tdl_run_string(T, code, "setup") == TDL_OK, "%s", tdl_error_message(T));
            long passes = fc_cpu_one_term_passes();
            ck_assert_msg(tdl_run_string(T, "z = r[0] * w[0] + r[1] * w[1] + r[2] * w[2] + r[3] * w[3]\nz.stride()\n",
                                         "chain") == TDL_OK, "%s", tdl_error_message(T));
            if (!golden_device() && t == 1)
                ck_assert_int_eq(fc_cpu_one_term_passes() - passes, 600);
            passes = fc_cpu_one_term_passes();
            ck_assert_msg(tdl_run_string(T, "zx = r[4] + r[0] * w[0] + r[1] * w[1] + r[2] * w[2]\nzx.stride()\n",
                                         "chain") == TDL_OK, "%s", tdl_error_message(T));
            if (!golden_device() && t == 1)
                ck_assert_int_eq(fc_cpu_one_term_passes() - passes, 600);
            ck_assert_msg(tdl_run_string(T, "assert bool((z == s3).all()) and bool((zx == x).all())\n"
                                            "assert z.dtype == dt and not bool((z == s).all())\n", "check") == TDL_OK,
                          "%s", tdl_error_message(T));
            tdl_close(T);
        }
    }
    long passes = fc_cpu_one_term_passes();
    run_ok("import vision\n"
           "x = (arange(2 * 256 * 30 * 34, dtype=float32) * 0.37).sin().reshape(2, 256, 30, 34)\n"
           "b = tensor([[0, 1.0, 2.0, 100.0, 90.0], [1, 30.0, 10.5, 80.0, 120.0]])\n"
           "y = vision.roi_align(x, b, (7, 7), 0.25, 2, True)\n"
           "y.stride()\n");
    unsetenv("TDL_NUM_THREADS");
    if (!golden_device())
        ck_assert_msg(fc_cpu_one_term_passes() > passes, "roi_align's forward took a pass per tap");
}
END_TEST

/* A precomputed value that its readers read at position 0 alone (roi_align's weights and
 * coordinates, one per sample: cpu_plan.c's plan_pre) is pointed at in its table, not copied
 * into a buffer at every point (cpu_exec.c's pre_point). The value checked is torchvision's
 * roi_align (torch 1.13) at that position. So is the backward's tap weight, the factor of the
 * product its kernel adds in one pass, and the gate's cond (cpu_plan.c's fill_one), when they
 * fit the tables (fixed sampling; the staged cotangent channels-last, as band_split_rows), the
 * gradient torchvision's there too. */
START_TEST(pre_values_pointed)
{
    long copies = fc_cpu_pre_copies();
    run_ok("import vision\n"
           "x = (arange(2 * 256 * 30 * 34, dtype=float32) * 0.37).sin().reshape(2, 256, 30, 34)\n"
           "b = tensor([[0, 1.0, 2.0, 100.0, 90.0], [1, 30.0, 10.5, 80.0, 120.0]])\n"
           "y = vision.roi_align(x, b, (7, 7), 0.25, 2, True)\n"
           "y.stride()\n"
           "assert abs(y[0, 5, 3, 4].item() - 0.9249998927) < 1e-6\n");
    if (!golden_device())
        ck_assert_int_eq(fc_cpu_pre_copies() - copies, 0);
    copies = fc_cpu_pre_copies();
    run_ok("import vision\n"
           "x = (arange(2 * 256 * 30 * 36, dtype=float32).reshape(2, 256, 30, 36) * 0.01).sin().requires_grad_()\n"
           "b = tensor([[0, 1.0, 1.5, 17.2, 18.9], [1, -3.0, 2.0, 30.0, 16.0], [0, 4.0, 4.0, 9.0, 9.0],\n"
           "            [1, 6.0, 5.0, 2.0, 1.0], [0, 0.5, 0.5, 35.0, 29.0], [1, 2.0, 2.0, 12.0, 12.0],\n"
           "            [0, 3.0, 20.0, 33.0, 31.0], [1, 10.0, 0.0, 11.0, 29.5]])\n"
           "y = vision.roi_align(x, b, (7, 7), 0.9, 2, True)\n"
           "g = (arange(y.numel(), dtype=float32) * 0.61).cos().reshape(y.shape)\n"
           "(y * g).sum().backward()\n"
           "assert abs(x.grad[1, 7, 5, 12].item() - 0.03483665362) < 1e-7, x.grad[1, 7, 5, 12].item()\n"
           "assert abs(x.grad[0, 200, 10, 10].item() - -0.1772919893) < 1e-7, x.grad[0, 200, 10, 10].item()\n");
    if (!golden_device())
        ck_assert_int_eq(fc_cpu_pre_copies() - copies, 0);
}
END_TEST

/* A scatter-add of where(m, v, 0) * w with m and w one value per row (cpu_plan.c's gated store:
 * rows where m is false add zeros, and are left out): where w is not finite there, the zero
 * times w is NaN and is added, as in PyTorch 1.13 (rows 0..9 of x.grad NaN, the others finite:
 * the sums of 2 g over the rows that gather them). */
START_TEST(gated_masked_zero)
{
    for (int t = 0; t < 2; t++) {
        setenv("TDL_NUM_THREADS", t ? "2" : "1", 1);
        run_ok("x = zeros(50, 300, requires_grad=True)\nidx = arange(400) % 50\nm = (idx >= 10).reshape(400, 1)\n"
               "w = where(idx >= 10, 2.0, float('inf')).reshape(400, 1)\n"
               "g = (arange(400 * 300, dtype=float32) * 0.37).cos().reshape(400, 300)\n"
               "(where(m, x[idx] * w, 0.0) * g).sum().backward()\n"
               "assert x.grad[:10].isnan().all().item()\nassert not x.grad[10:].isnan().any().item()\n"
               "ref = (g * 2.0).reshape(8, 50, 300).sum(0)\n"
               "assert (x.grad[10:] - ref[10:]).abs().max().item() < 1e-5\n");
    }
    unsetenv("TDL_NUM_THREADS");
}
END_TEST

/* The gated store of gated_masked_zero with w finite: its masked rows come in runs of 10 (idx %
 * 50 < 10), two chunks each (300 columns: 256 + 44), and every chunk of a run after its first is
 * found to add zeros from its narrow values alone (cpu_exec.c's eval_gated: 8 runs of 20
 * chunks, 19 each; fc_cpu_narrow_skips), at 1 and 2 threads, with the gradient of PyTorch: the
 * masked rows 0 (w there 3, never used), the others the sums of 2 g over the rows that gather
 * them. (On a real GPU the count is not the CPU's to check.) */
START_TEST(gated_narrow_skips)
{
    for (int t = 0; t < 2; t++) {
        setenv("TDL_NUM_THREADS", t ? "2" : "1", 1);
        long before = fc_cpu_narrow_skips();
        run_ok("x = zeros(50, 300, requires_grad=True)\nidx = arange(400) % 50\nm = (idx >= 10).reshape(400, 1)\n"
               "w = where(idx >= 10, 2.0, 3.0).reshape(400, 1)\n"
               "g = (arange(400 * 300, dtype=float32) * 0.37).cos().reshape(400, 300)\n"
               "(where(m, x[idx] * w, 0.0) * g).sum().backward()\n"
               "assert (x.grad[:10] == 0.0).all().item()\n"
               "ref = (g * 2.0).reshape(8, 50, 300).sum(0)\n"
               "assert (x.grad[10:] - ref[10:]).abs().max().item() < 1e-5\n");
        /* The CPU executor ran it. At 2 threads the store is split over 8 bands of rows
         * (task_band): a band that starts inside a run evaluates its first chunk in full unless
         * its thread's last chunk was a zero too, which depends on which thread took which band. */
        if ((!golden_device() || getenv("TDL_FAKE_CUDA")) && t == 0)
            ck_assert_int_eq(fc_cpu_narrow_skips() - before, 8 * 19);
        else if (!golden_device() || getenv("TDL_FAKE_CUDA"))
            ck_assert_msg(fc_cpu_narrow_skips() - before >= 8 * 19 - 8 && fc_cpu_narrow_skips() - before <= 8 * 19,
                          "%ld narrow skips", fc_cpu_narrow_skips() - before);
    }
    unsetenv("TDL_NUM_THREADS");
}
END_TEST

/* A gated scatter-add whose gate is an AND of bounds, i < a[n] and j < b[n] (a masked sum with
 * data-dependent bounds, as roi_align's adaptive sampling): once a bound is false at a point, the
 * rest of its loop's run is zeros, left out whole (cpu_plan.c's plan_gate_bounds, cpu_exec.c's
 * gate_run; fc_cpu_gate_points: i's bound in the order of (n, i), j's along the term level j).
 * The same bits at 1, 2 and 4 threads, and those of adding each product, rounded, in the order of
 * the loop nest (the reference in C), 640 channels in slices. With w not finite at a masked
 * point, no run is left out and its zero times w gives PyTorch's NaN. */
START_TEST(gated_bound_runs)
{
    static const char head[] =
        "x = zeros(40, 640, requires_grad=True)\n"
        "a = tensor([0, 3, 1, 5, 2, 4, 5, 0, 1, 3, 2, 5])\nb = tensor([4, 1, 0, 4, 2, 3, 1, 4, 2, 0, 4, 3])\n"
        "n, i, j = dims(3)\ni.size, j.size = 5, 4\n"
        "idx = ((arange(12 * 5 * 4) * 7) % 40).reshape(12, 5, 4)\n"
        "g = (arange(12 * 640, dtype=float32) * 0.37).cos().reshape(12, 640)\n";
    static const char tail[] =
        "v = where((i < a[n]) & (j < b[n]), x[idx[n, i, j]] * w[n, i, j], 0.0)\n"
        "(v.sum((i, j)).order(n) * g).sum().backward()\n"
        "gx = x.grad.cpu()\nic = idx.cpu()\nwc = w.cpu()\ngc = g.cpu()\n";
    static const int ha[12] = {0, 3, 1, 5, 2, 4, 5, 0, 1, 3, 2, 5}, hb[12] = {4, 1, 0, 4, 2, 3, 1, 4, 2, 0, 4, 3};
    char prog[2048];
    snprintf(prog, sizeof prog, "%sw = (arange(12 * 5 * 4, dtype=float32) * 0.3).sin().reshape(12, 5, 4) * 1000.0\n%s",
             head, tail);
    bool cpu = !golden_device() || getenv("TDL_FAKE_CUDA");    /* the CPU executor ran it */
    long before = fc_cpu_gate_points();
    size_t n, ni, nw, ng;
    float *gx = same_bits(prog, "a gate of bounds", &n);
    if (cpu)
        ck_assert_int_gt(fc_cpu_gate_points() - before, 0);
    int64_t *idx = read_global(prog, "ic", TDL_DTYPE_INT64, &ni);
    float *w = read_global(prog, "wc", TDL_DTYPE_FLOAT32, &nw), *g = read_global(prog, "gc", TDL_DTYPE_FLOAT32, &ng);
    ck_assert_int_eq(n, 40 * 640);
    ck_assert_int_eq(ni, 12 * 5 * 4);
    float *ref = calloc(n, sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    for (int q = 0; q < 12; q++)
        for (int r = 0; r < ha[q]; r++)
            for (int s = 0; s < hb[q]; s++)
                for (int c = 0; c < 640; c++) {
                    int e = (q * 5 + r) * 4 + s;
                    ref[(size_t)idx[e] * 640 + c] += g[q * 640 + c] * w[e];
                }
    ck_assert_msg(memcmp(ref, gx, n * sizeof *ref) == 0, "not the sums in loop order");
    free(gx);
    free(idx);
    free(w);
    free(g);
    free(ref);
    /* w infinite at (n 0, i 0, j 0), masked (a[0] is 0): its row of x.grad is NaN, the others not */
    snprintf(prog, sizeof prog,
             "%sw = where(arange(12 * 5 * 4) == 0, float('inf'), 2.0).reshape(12, 5, 4)\n%s"
             "assert gx[0].isnan().all().item()\nassert not gx[1:].isnan().any().item()\n",
             head, tail);
    for (int t = 0; t < 2; t++) {
        setenv("TDL_NUM_THREADS", t ? "2" : "1", 1);
        before = fc_cpu_gate_points();
        run_ok(prog);
        if (cpu)
            ck_assert_int_eq(fc_cpu_gate_points() - before, 0);
    }
    unsetenv("TDL_NUM_THREADS");
}
END_TEST

/* Generic gathers' gradients (scatter-adds with many duplicates), split over the row loop of
 * gather(1, idx) (not the vector loop) and over the column loop of x[idx] (the vector loop, cut
 * into slices): the same bits at 1, 2 and 4 threads, and the bits of adding each element's
 * contributions one by one in the order of the loop nest (the reference in C), so that a change
 * of order that every thread count shares is caught too. */
START_TEST(deterministic_gather)
{
    static const char gather[] =
        "x = zeros(64, 300, requires_grad=True)\n"
        "idx = (arange(64).reshape(64, 1) * 7 + (arange(2000) * arange(2000) * 13).reshape(1, 2000)) % 300\n"
        "w = (arange(64 * 2000, dtype=float32) * 0.37).cos().reshape(64, 2000) * 1000.0\n"
        "(x.gather(1, idx) * w).sum().backward()\n"
        "gx = x.grad.cpu()\nidxc = idx.cpu()\nwc = w.cpu()\n";
    static const char rows[] =
        "x = zeros(200, 640, requires_grad=True)\n"
        "idx = (arange(1000) * arange(1000) * 7) % 200\n"
        "w = (arange(1000 * 640, dtype=float32) * 0.61).sin().reshape(1000, 640) * 1000.0\n"
        "(x[idx] * w).sum().backward()\n"
        "gx = x.grad.cpu()\nidxc = idx.cpu()\nwc = w.cpu()\n";
    size_t n, ni, nw;
    float *gx = same_bits(gather, "gather(1, idx)", &n);
    int64_t *idx = read_global(gather, "idxc", TDL_DTYPE_INT64, &ni);
    float *w = read_global(gather, "wc", TDL_DTYPE_FLOAT32, &nw);
    ck_assert_int_eq(n, 64 * 300);
    ck_assert_int_eq(ni, 64 * 2000);
    float *ref = calloc(n, sizeof *ref);
    for (size_t i = 0; i < 64; i++)
        for (size_t j = 0; j < 2000; j++)
            ref[i * 300 + (size_t)idx[i * 2000 + j]] += w[i * 2000 + j];
    ck_assert_msg(memcmp(ref, gx, n * sizeof *ref) == 0, "gather(1, idx): not the sums in loop order");
    free(gx);
    free(idx);
    free(w);
    free(ref);

    gx = same_bits(rows, "x[idx]", &n);
    idx = read_global(rows, "idxc", TDL_DTYPE_INT64, &ni);
    w = read_global(rows, "wc", TDL_DTYPE_FLOAT32, &nw);
    ck_assert_int_eq(n, 200 * 640);
    ref = calloc(n, sizeof *ref);
    for (size_t i = 0; i < 1000; i++)
        for (size_t c = 0; c < 640; c++)
            ref[(size_t)idx[i] * 640 + c] += w[i * 640 + c];
    ck_assert_msg(memcmp(ref, gx, n * sizeof *ref) == 0, "x[idx]: not the sums in loop order");
    free(gx);
    free(idx);
    free(w);
    free(ref);
}
END_TEST

/* Two loads of x through different gathers (x[idx1] * w1 + x[idx2] * w2, as roi_align's taps):
 * their cotangents are the terms of ONE scatter-add (autograd.c's
 * same_scatter), whose order is
 * per row i the terms in the order the backward reached the loads (x[idx2]'s first), then the
 * channels: the reference in C (the backward reaches the loads from the root, the last operand
 * first). The old order (all of one load, then all of the other) gives
 * other bits for these values, and so does the terms' other order. */
START_TEST(scatter_terms_one_kernel)
{
    static const char prog[] =
        "x = zeros(200, 640, requires_grad=True)\n"
        "idx1 = (arange(1000) * arange(1000) * 7) % 200\n"
        "idx2 = (idx1 + arange(1000) % 2) % 200\n"
        "w1 = (arange(1000 * 640, dtype=float32) * 0.61).sin().reshape(1000, 640) * 1000.0\n"
        "w2 = (arange(1000 * 640, dtype=float32) * 0.37).cos().reshape(1000, 640) * 3.0\n"
        "(x[idx1] * w1 + x[idx2] * w2).sum().backward()\n"
        "gx = x.grad.cpu()\ni1 = idx1.cpu()\ni2 = idx2.cpu()\nw1c = w1.cpu()\nw2c = w2.cpu()\n";
    long kernels = fc_grad_term_kernels(), skips = fc_cpu_term_skips();
    size_t n, ni, nw;
    terms_on = true;
    float *gx = same_bits(prog, "x[idx1] * w1 + x[idx2] * w2", &n);
    terms_on = false;
    ck_assert_int_ge(fc_grad_term_kernels() - kernels, 5);     /* one per run of same_bits */
    if (!golden_device() || getenv("TDL_FAKE_CUDA"))      /* the CPU executor ran it: the second term
                                                             of a row left out what the first computed */
        ck_assert_int_ge(fc_cpu_term_skips() - skips, 5 * 1000);
    int64_t *i1 = read_global(prog, "i1", TDL_DTYPE_INT64, &ni), *i2 = read_global(prog, "i2", TDL_DTYPE_INT64, &ni);
    float *w1 = read_global(prog, "w1c", TDL_DTYPE_FLOAT32, &nw), *w2 = read_global(prog, "w2c", TDL_DTYPE_FLOAT32, &nw);
    ck_assert_int_eq(n, 200 * 640);
    float *ref = calloc(n, sizeof *ref), *swapped = calloc(n, sizeof *ref), *old = calloc(n, sizeof *ref);
    ck_assert(ref && swapped && old);
    for (size_t i = 0; i < 1000; i++)
        for (size_t c = 0; c < 640; c++) {
            ref[(size_t)i2[i] * 640 + c] += w2[i * 640 + c];
            ref[(size_t)i1[i] * 640 + c] += w1[i * 640 + c];
            swapped[(size_t)i1[i] * 640 + c] += w1[i * 640 + c];
            swapped[(size_t)i2[i] * 640 + c] += w2[i * 640 + c];
        }
    for (size_t i = 0; i < 1000; i++)
        for (size_t c = 0; c < 640; c++)
            old[(size_t)i2[i] * 640 + c] += w2[i * 640 + c];
    for (size_t i = 0; i < 1000; i++)
        for (size_t c = 0; c < 640; c++)
            old[(size_t)i1[i] * 640 + c] += w1[i * 640 + c];
    ck_assert_msg(memcmp(ref, old, n * sizeof *ref) != 0 && memcmp(ref, swapped, n * sizeof *ref) != 0,
                  "the orders give the same bits: the test cannot tell them apart");
    ck_assert_msg(memcmp(ref, gx, n * sizeof *ref) == 0, "not the sums in the terms' order");
    free(gx);
    free(i1);
    free(i2);
    free(w1);
    free(w2);
    free(ref);
    free(swapped);
    free(old);
}
END_TEST

/* roi_align's four taps as the terms of one gated scatter-add (FC_SCHED_TERMS and
 * FC_SCHED_TERMS_BOUNDED cleared), with adaptive sampling: the sample loops run to the largest
 * grid, so many points are zeros. The
 * executor runs a point's four terms together (cpu_plan.h's Plan.term): for the last three, what
 * does not vary along the terms (the sample's coordinates, its gate, the cotangent row, the batch
 * index) is left out where it holds (fc_cpu_term_skips), a gated point's later terms evaluating
 * their weights alone. The same bits at 1, 2 and 4 threads (same_bits), and the values of the
 * kernel per tap (the default, checked against torchvision by the golden cases) within float
 * rounding: the order of the additions differs. A tap's own kernel has such a level too, the
 * sample column loop (no load varies along it, the scatter index does). */
START_TEST(terms_held_along_level)
{
    static const char prog[] =
        "import vision\n"
        "x = (arange(512 * 12 * 16, dtype=float32).reshape(1, 512, 12, 16) * 0.013).sin().requires_grad_()\n"
        "b = tensor([[0, 1.0, 1.5, 13.2, 10.9], [0, -3.0, 2.0, 30.0, 16.0], [0, 4.0, 4.0, 5.0, 5.5],\n"
        "            [0, 6.0, 5.0, 2.0, 1.0], [0, 0.5, 0.5, 15.0, 11.0]])\n"
        "y = vision.roi_align(x, b, (3, 3), 1.0, 0, True)\n"
        "g = (arange(y.numel(), dtype=float32) * 0.37).cos().reshape(y.shape)\n"
        "(y * g).sum().backward()\n"
        "gx = x.grad.cpu()\n";
    long skips = fc_cpu_term_skips(), narrow = fc_cpu_narrow_skips();
    size_t n, m;
    terms_on = true;
    float *on = same_bits(prog, "roi_align's taps as terms", &n);
    terms_on = false;
    if (!golden_device() || getenv("TDL_FAKE_CUDA")) {
        ck_assert_int_gt(fc_cpu_term_skips() - skips, 0);
        ck_assert_int_gt(fc_cpu_narrow_skips() - narrow, 0);
    }
    skips = fc_cpu_term_skips();
    float *off = same_bits(prog, "roi_align's taps by a kernel each", &m);
    if (!golden_device() || getenv("TDL_FAKE_CUDA"))      /* a tap's kernel: its sample column loop */
        ck_assert_int_gt(fc_cpu_term_skips() - skips, 0);
    ck_assert_int_eq(n, m);
    double big = 0, diff = 0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(off[i]));
        diff = fmax(diff, fabs((double)on[i] - off[i]));
    }
    ck_assert_msg(big > 0 && diff <= 1e-5 * big, "terms and taps differ by %g (largest %g)", diff, big);
    free(on);
    free(off);
}
END_TEST

/* A gradient's scatter-add of a product, the cotangent row w times one value s per row, adds the
 * product in one pass (cpu_plan.c's plan_mul_add): the bits of adding each product, rounded,
 * one by one in the order of the loop nest (the reference in C), at 1, 2 and 4 threads. */
static void check_mul_add(const char *prog, const char *what)
{
    long before = fc_cpu_mul_add_runs();
    size_t n, ni, nw, ns;
    float *gx = same_bits(prog, what, &n);
    if (!golden_device() || getenv("TDL_FAKE_CUDA"))      /* the CPU executor ran it */
        ck_assert_int_ge(fc_cpu_mul_add_runs() - before, 5);
    int64_t *idx = read_global(prog, "idxc", TDL_DTYPE_INT64, &ni);
    float *w = read_global(prog, "wc", TDL_DTYPE_FLOAT32, &nw);
    float *sv = read_global(prog, "sc", TDL_DTYPE_FLOAT32, &ns);
    ck_assert_int_eq(n, 200 * 640);
    ck_assert_int_eq(nw, 1000 * 640);
    ck_assert_int_eq(ns, 1000);
    float *ref = calloc(n, sizeof *ref);
    for (size_t i = 0; i < 1000; i++)
        for (size_t c = 0; c < 640; c++)
            ref[(size_t)idx[i] * 640 + c] += w[i * 640 + c] * sv[i];
    ck_assert_msg(memcmp(ref, gx, n * sizeof *ref) == 0, "%s: not the sums in loop order", what);
    free(gx);
    free(idx);
    free(w);
    free(sv);
    free(ref);
}

START_TEST(mul_add_one_pass)
{
    check_mul_add("x = zeros(200, 640, requires_grad=True)\n"
                  "idx = (arange(1000) * arange(1000) * 7) % 200\n"
                  "w = (arange(1000 * 640, dtype=float32) * 0.61).sin().reshape(1000, 640) * 1000.0\n"
                  "s = (arange(1000, dtype=float32) * 0.3).cos().reshape(1000, 1) * 3.0\n"
                  "(x[idx] * w * s).sum().backward()\n"
                  "gx = x.grad.cpu()\nidxc = idx.cpu()\nwc = w.cpu()\nsc = s.cpu()\n",
                  "x[idx] * w * s");
}
END_TEST

/* roi_align's tap weight, one value per sample over (box, bin row, sample row, bin column, sample
 * column), too many points to precompute (64 boxes, 14 x 14 bins, grids up to 5 x 5: 313,600),
 * is computed at each point of a tap's kernel; read at position 0 alone by the product added in
 * one pass, it is not broadcast over the chunk (cpu_plan.c's fill_one;
 * fc_cpu_mul_w_one_runs). The same bits at 1, 2 and 4 threads (same_bits). */
START_TEST(mul_add_factor_one)
{
    static const char prog[] =
        "import vision\n"
        "x = (arange(256 * 72 * 72, dtype=float32).reshape(1, 256, 72, 72) * 0.013).sin().requires_grad_()\n"
        "k = arange(64, dtype=float32)\n"
        "b = stack([k * 0.0, (k * 7.0) % 5.0, (k * 3.0) % 6.0, 60.0 + (k % 10.0), 56.0 + (k % 13.0)], 1)\n"
        "y = vision.roi_align(x, b, (14, 14), 1.0, 0, True)\n"
        "g = (arange(y.numel(), dtype=float32) * 0.37).cos().reshape(y.shape)\n"
        "(y * g).sum().backward()\n"
        "gx = x.grad.cpu()\n";
    long runs = fc_cpu_mul_w_one_runs(), bands = fc_cpu_band_splits(), scaled = fc_cpu_scaled_tiles();
    size_t n;
    float *gx = same_bits(prog, "adaptive roi_align, 256 channels", &n);
    ck_assert_int_eq(n, 256 * 72 * 72);
    free(gx);
    /* The CPU executor ran it at 1, 2, 4, 4 and 1 threads: four taps each time, split by bands
     * of rows at 2 and 4 threads */
    if (!golden_device() || getenv("TDL_FAKE_CUDA")) {
        ck_assert_int_ge(fc_cpu_mul_w_one_runs() - runs, 5 * 4);
        ck_assert_int_ge(fc_cpu_band_splits() - bands, 3 * 4);
        /* the cotangent g / count staged channels-last by scaled tiles (plan_tscale): twelve
         * whole tiles of 16 of the 196 bins for each of the 64 boxes in each run, but for tiles
         * that tasks cut (store_unit) */
        ck_assert_int_ge(fc_cpu_scaled_tiles() - scaled, 3 * 64 * 12);
    }
}
END_TEST

/* The same when the row is itself gathered (wb[idx2]: a weighted gather, which kplan makes a
 * MULADD without x): still one pass, the same sums. */
START_TEST(mul_add_gathered_row)
{
    check_mul_add("x = zeros(200, 640, requires_grad=True)\n"
                  "idx = (arange(1000) * arange(1000) * 7) % 200\n"
                  "idx2 = (arange(1000) * 13) % 50\n"
                  "wb = (arange(50 * 640, dtype=float32) * 0.61).sin().reshape(50, 640) * 1000.0\n"
                  "s = (arange(1000, dtype=float32) * 0.3).cos().reshape(1000, 1) * 3.0\n"
                  "(x[idx] * wb[idx2] * s).sum().backward()\n"
                  "gx = x.grad.cpu()\nidxc = idx.cpu()\nwc = wb[idx2].cpu()\nsc = s.cpu()\n",
                  "x[idx] * wb[idx2] * s");
}
END_TEST

/* What the hook sees of a backward's accumulating scattered stores (roi_align's: one per tap):
 * how many, their scatter indices that vary along some loop, and how many of those the kernel
 * reads from precomputed tables (fc_kplan_pre, for the backend that runs the kernel). */
typedef struct TapSeen {
    FcCtx *ctx;
    int stores, indices, pre;
} TapSeen;

static void tap_on_kernel(void *ud, const FcKernel *k, FcDevice dev)
{
    TapSeen *s = ud;
    const FcPlan *p = k->plan;
    if (k->nscatter == 0 || !k->accumulate || !p)
        return;
    FcBackend *be = NULL;
    FcError err;
    ck_assert_int_eq(fc_ctx_backend(s->ctx, dev, &be, &err), FC_OK);
    bool *pre = calloc((size_t)p->n + 1, 1), *kept = calloc((size_t)p->n + 1, 1);
    size_t *off = calloc((size_t)p->n + 1, sizeof *off);
    ck_assert(pre && kept && off);
    fc_kplan_pre(p, k, be->target, p->opv, NULL, pre, off, kept);
    s->stores++;
    for (int g = 0; g < k->nscatter; g++) {
        int i = p->sres[g];
        if (p->deps[i] == 0)
            continue;
        s->indices++;
        s->pre += pre[i] && kept[i];
    }
    free(pre);
    free(kept);
    free(off);
}

/* roi_align's taps land where y_low, y_low + 1 (clamped), x_low ... send them: values over (box,
 * bin, sample), not over the channels. The four taps' scatter-adds are ONE kernel when
 * FC_SCHED_TERMS_BOUNDED is cleared (the terms of one store; four by default with adaptive
 * sampling, its bound set by the data, and when FC_SCHED_TERMS is set), which reads each term's row and column from
 * precomputed tables (as it reads its weights) instead of computing them at every point; the
 * store still checks each index it reads. The batch index stays in the kernel: it is read
 * through a gather of the boxes, which may fail. The gradient's values: the golden cases and
 * the bit tests above. */
START_TEST(scatter_indices_precomputed)
{
    static const char prog[] =
        "import vision\n"
        "x = (arange(2 * 16 * 20 * 24, dtype=float32).reshape(2, 16, 20, 24) * 0.01).sin().requires_grad_()\n"
        "b = tensor([[0, 1.0, 1.5, 17.2, 18.9], [1, -3.0, 2.0, 30.0, 16.0], [0, 4.0, 4.0, 9.0, 9.0],\n"
        "            [1, 6.0, 5.0, 2.0, 1.0], [0, 0.5, 0.5, 23.0, 19.0], [1, 2.0, 2.0, 12.0, 12.0]])\n"
        "y = vision.roi_align(x, b, (7, 7), 1.0, 0, True)\n"
        "(y * y).sum().backward()\n"
        "gx = x.grad.cpu()\n";
    for (int terms_off = 0; terms_off < 2; terms_off++) {
        TapSeen s = {0};
        tdl_interp *T = golden_open(0);
        ck_assert_ptr_nonnull(T);
        s.ctx = T->I.fc;
        T->I.fc->on_kernel = tap_on_kernel;
        T->I.fc->on_kernel_ud = &s;
        if (!terms_off)
            T->I.fc->sched_off &= ~(FC_SCHED_TERMS | FC_SCHED_TERMS_BOUNDED);
        else
            T->I.fc->sched_off |= FC_SCHED_TERMS;
        ck_assert_msg(tdl_run_string(T, prog, "taps") == TDL_OK, "%s", tdl_error_message(T));
        tdl_close(T);
        ck_assert_int_eq(s.stores, terms_off ? 4 : 1);
        ck_assert_int_eq(s.indices, 3 * s.stores);
        ck_assert_msg(s.pre == 2 * s.stores, "%d of the taps' %d scatter indices precomputed", s.pre, s.indices);
    }
}
END_TEST

/* Which backward scatters roi_align's four taps as the terms of one kernel (fc_grad_term_kernels):
 * fixed sampling, by default; adaptive sampling, whose sample loops a bound that the boxes set
 * masks in the scatter's own expression (autograd.c's data_bits; 256 channels: the cotangent is
 * staged over the bins, the mask applied per sample), only with FC_SCHED_TERMS_BOUNDED cleared;
 * neither with FC_SCHED_TERMS set. */
START_TEST(terms_unless_data_bound)
{
    static const struct { int ratio, on, off; } cases[] = {
        {2, 0, 0}, {0, 0, 0}, {0, 0, FC_SCHED_TERMS_BOUNDED}, {2, FC_SCHED_TERMS, 0}, {0, FC_SCHED_TERMS, FC_SCHED_TERMS_BOUNDED}};
    static const long want[] = {1, 0, 1, 0, 0};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char prog[1024];
        snprintf(prog, sizeof prog,
                 "import vision\n"
                 "x = (arange(2 * 256 * 30 * 36, dtype=float32).reshape(2, 256, 30, 36) * 0.01).sin().requires_grad_()\n"
                 "b = tensor([[0, 1.0, 1.5, 12.3, 22.0], [1, 3.0, 2.0, 27.5, 8.3], [0, 4.0, 0.5, 10.2, 27.7],\n"
                 "            [1, 6.0, 5.0, 26.1, 18.1], [0, 20.5, 24.0, 23.0, 20.0], [1, 2.0, 2.0, 1.0, 11.9]])\n"
                 "y = vision.roi_align(x, b, (7, 7), 1.0, %d, True)\n"
                 "(y * (arange(y.numel(), dtype=float32) * 0.37).cos().reshape(y.shape)).sum().backward()\n"
                 "x.grad.stride()\n", cases[c].ratio);
        tdl_interp *T = golden_open(0);
        ck_assert_ptr_nonnull(T);
        T->I.fc->sched_off = (T->I.fc->sched_off | cases[c].on) & ~cases[c].off;
        long before = fc_grad_term_kernels();
        ck_assert_msg(tdl_run_string(T, prog, "terms") == TDL_OK, "%s", tdl_error_message(T));
        ck_assert_msg(fc_grad_term_kernels() - before == want[c], "case %zu: %ld kernels with terms", c,
                      fc_grad_term_kernels() - before);
        tdl_close(T);
    }
}
END_TEST

/* fc_store_owner_loops on index maps written out: a loop owns its elements when no other term of
 * the address can reach into its stride's digit, whatever the scatter indices hold. */
START_TEST(owner_loops)
{
    FcGather sc[3] = {{.reg = 0, .stride = 491520, .extent = 2}, {.reg = 0, .stride = 12288, .extent = 48},
                      {.reg = 0, .stride = 256, .extent = 48}};
    FcKernel k = {.nloop = 6, .extent = {6, 7, 2, 7, 2, 256}, .owner = {-1, -1, -1, -1, -1, -1},
                  .reduce = FC_OP_NONE, .out_strides = {0, 0, 0, 0, 0, 1}, .nscatter = 3, .scatter = sc,
                  .accumulate = true};
    /* roi_align's backward into a channels-last buffer: the channel loop */
    ck_assert_uint_eq(fc_store_owner_loops(&k), (uint64_t)1 << 5);
    /* the same into NCHW (channel stride 960 = 20 x 48 past the pixel's span 959) */
    sc[1].stride = 48;
    sc[1].extent = 20;
    sc[2].stride = 1;
    sc[0].stride = 256 * 960;
    k.out_strides[5] = 960;
    ck_assert_uint_eq(fc_store_owner_loops(&k), (uint64_t)1 << 5);
    /* a row whose pixels a scatter index can reach (stride 959 < span): nothing owns */
    k.out_strides[5] = 959;
    ck_assert_uint_eq(fc_store_owner_loops(&k), 0);
    /* gather(1, idx)'s backward: rows of 300, the column scattered; negative strides count too */
    FcGather col = {.reg = 0, .stride = 1, .extent = 300};
    FcKernel g = {.nloop = 2, .extent = {64, 2000}, .owner = {-1, -1}, .reduce = FC_OP_NONE,
                  .out_strides = {-300, 0}, .nscatter = 1, .scatter = &col, .accumulate = true};
    ck_assert_uint_eq(fc_store_owner_loops(&g), 1);
    /* rows of 299: the last column of one row is the first of the next */
    g.out_strides[0] = 299;
    ck_assert_uint_eq(fc_store_owner_loops(&g), 0);
    /* two loops with one stride (a diagonal written twice over): neither owns; a third beyond both
     * spans does */
    FcKernel d = {.nloop = 3, .extent = {4, 5, 5}, .owner = {-1, -1, -1}, .reduce = FC_OP_NONE,
                  .out_strides = {100, 1, 1}, .accumulate = true};
    ck_assert_uint_eq(fc_store_owner_loops(&d), 1);
    /* a higher stride that is no multiple of the lower ones' reach: 10 + 0 = 0 + 10 */
    FcKernel h = {.nloop = 2, .extent = {3, 11}, .owner = {-1, -1}, .reduce = FC_OP_NONE,
                  .out_strides = {10, 1}, .accumulate = true};
    ck_assert_uint_eq(fc_store_owner_loops(&h), 0);
    h.extent[1] = 10;
    ck_assert_uint_eq(fc_store_owner_loops(&h), 3);
    /* a reduction is not a store */
    h.reduce = FC_OP_SUM;
    ck_assert_uint_eq(fc_store_owner_loops(&h), 0);
}
END_TEST

/* The destination rows of a scatter-add (fc_store_band_rows): roi_align's backward into a
 * channels-last buffer 2 x 40 x 48 x 256 is owned by its (image, row) pairs when the column index
 * may not be used (it varies along the term level), by its pixels when it may. */
START_TEST(band_rows)
{
    FcGather sc[3] = {{.reg = 0, .stride = 491520, .extent = 2}, {.reg = 0, .stride = 12288, .extent = 40},
                      {.reg = 0, .stride = 256, .extent = 48}};
    FcKernel k = {.nloop = 6, .extent = {6, 7, 2, 7, 2, 256}, .owner = {-1, -1, -1, -1, -1, -1},
                  .reduce = FC_OP_NONE, .out_strides = {0, 0, 0, 0, 0, 1}, .nscatter = 3, .scatter = sc,
                  .accumulate = true};
    uint64_t rows;
    int64_t keys;
    /* image and row: 80 rows of 12288 elements (the columns and channels span 12287) */
    ck_assert_int_eq(fc_store_band_rows(&k, 3, 1 << 20, &rows, &keys), 12288);
    ck_assert_uint_eq(rows, 3);
    ck_assert_int_eq(keys, 80);
    /* the pixels, when the column may be used; at most 100 rows: image and row again */
    ck_assert_int_eq(fc_store_band_rows(&k, 7, 1 << 20, &rows, &keys), 256);
    ck_assert_uint_eq(rows, 7);
    ck_assert_int_eq(keys, 2 * 40 * 48);
    ck_assert_int_eq(fc_store_band_rows(&k, 7, 100, &rows, &keys), 12288);
    ck_assert_int_eq(keys, 80);
    /* the image alone: the rows (not allowed) span 12288 * 39 + 12287 < 491520 */
    ck_assert_int_eq(fc_store_band_rows(&k, 1, 1 << 20, &rows, &keys), 491520);
    ck_assert_int_eq(keys, 2);
    /* NCHW: the channel plane (stride 1920) lies between the image and the rows, so the row
     * index does not determine the element's row; the image alone does */
    sc[0].stride = 256 * 1920;
    sc[1].stride = 48;
    sc[2].stride = 1;
    k.out_strides[5] = 1920;
    ck_assert_int_eq(fc_store_band_rows(&k, 2, 1 << 20, &rows, &keys), 0);
    ck_assert_int_eq(fc_store_band_rows(&k, 3, 1 << 20, &rows, &keys), 256 * 1920);
    ck_assert_uint_eq(rows, 1);
    ck_assert_int_eq(keys, 2);
    /* a negative stride, or a row stride that is no multiple of the unit: none */
    k.out_strides[5] = -1920;
    ck_assert_int_eq(fc_store_band_rows(&k, 1, 1 << 20, &rows, &keys), 0);
    k.out_strides[5] = 1;
    sc[0].stride = 491520;
    sc[1].stride = 12288;
    sc[2].stride = 256;
    sc[0].stride = 491521;
    ck_assert_int_eq(fc_store_band_rows(&k, 3, 1 << 20, &rows, &keys), 491521);
    ck_assert_int_eq(keys, 2);
    /* a reduction is not a store */
    sc[0].stride = 491520;
    k.reduce = FC_OP_SUM;
    ck_assert_int_eq(fc_store_band_rows(&k, 3, 1 << 20, &rows, &keys), 0);
}
END_TEST

/* roi_align's backward on 256 channels (one chunk: the channel loop, its only owner loop, gives
 * one part; fixed sampling: the four taps the terms of one kernel) runs at 2 and 4 threads in
 * bands of destination rows (fc_cpu_band_splits), with the
 * bits of one thread (which takes no band split: the nest in order); boxes overlap, and some
 * rows are reached by several boxes of both images. */
START_TEST(band_split_rows)
{
    static const char prog[] =
        "import vision\n"
        "x = (arange(2 * 256 * 30 * 36, dtype=float32).reshape(2, 256, 30, 36) * 0.01).sin().requires_grad_()\n"
        "b = tensor([[0, 1.0, 1.5, 17.2, 18.9], [1, -3.0, 2.0, 30.0, 16.0], [0, 4.0, 4.0, 9.0, 9.0],\n"
        "            [1, 6.0, 5.0, 2.0, 1.0], [0, 0.5, 0.5, 35.0, 29.0], [1, 2.0, 2.0, 12.0, 12.0],\n"
        "            [0, 3.0, 20.0, 33.0, 31.0], [1, 10.0, 0.0, 11.0, 29.5]])\n"
        "y = vision.roi_align(x, b, (7, 7), 0.9, 2, True)\n"
        "g = (arange(y.numel(), dtype=float32) * 0.37).cos().reshape(y.shape)\n"
        "(y * g).sum().backward()\n"
        "gx = x.grad.cpu()\n";
    char *saved = env_save("TDL_NUM_THREADS");
    static const char *const threads[] = {"1", "2", "4"};
    for (size_t r = 0; r < sizeof threads / sizeof *threads; r++) {
        setenv("TDL_NUM_THREADS", threads[r], 1);
        long bands = fc_cpu_band_splits();
        tdl_interp *T = golden_open(0);
        ck_assert_ptr_nonnull(T);
        ck_assert_msg(tdl_run_string(T, prog, "band") == TDL_OK, "%s", tdl_error_message(T));
        tdl_close(T);
        if (golden_device() && !getenv("TDL_FAKE_CUDA"))    /* not the CPU executor: no bands */
            continue;
        if (r == 0)
            ck_assert_int_eq(fc_cpu_band_splits(), bands);
        else    /* the taps' kernel */
            ck_assert_int_ge(fc_cpu_band_splits() - bands, 1);
    }
    env_restore("TDL_NUM_THREADS", saved);
    size_t n;
    float *gx = same_bits(prog, "roi_align, 256 channels", &n);
    ck_assert_int_eq(n, 2 * 256 * 30 * 36);
    free(gx);
}
END_TEST

/* roi_align's adaptive sampling on 256 channels at 2 and 4 threads, in bands of destination rows:
 * a band point (box, bin row, sample row) whose sample row lies past its box's grid (iy < gh
 * false) holds only zeros, skipped whole (task_band), and the bands are cut by the work the
 * points hold (point_work), not by their number. One thread skips the same zeros in runs, each
 * run's first point evaluated (task_owner): 2 and 4 threads skip at least as many
 * (fc_cpu_gate_points; without the whole-point skip, a third fewer), and the bits are those of
 * one thread. Box heights give gh 3, 1, 4, 2, 0 (inverted), 2 and widths gw 2, 4, 1, 3, 1, 0. */
START_TEST(band_split_gated_points)
{
    static const char prog[] =
        "import vision\n"
        "x = (arange(2 * 256 * 30 * 36, dtype=float32).reshape(2, 256, 30, 36) * 0.01).sin().requires_grad_()\n"
        "b = tensor([[0, 1.0, 1.5, 12.3, 22.0], [1, 3.0, 2.0, 27.5, 8.3], [0, 4.0, 0.5, 10.2, 27.7],\n"
        "            [1, 6.0, 5.0, 26.1, 18.1], [0, 20.5, 24.0, 23.0, 20.0], [1, 2.0, 2.0, 1.0, 11.9]])\n"
        "y = vision.roi_align(x, b, (7, 7), 1.0, 0, True)\n"
        "g = (arange(y.numel(), dtype=float32) * 0.37).cos().reshape(y.shape)\n"
        "(y * g).sum().backward()\n"
        "gx = x.grad.cpu()\n";
    bool cpu = !golden_device() || getenv("TDL_FAKE_CUDA");
    char *saved = env_save("TDL_NUM_THREADS");
    static const char *const threads[] = {"1", "2", "4"};
    long skipped[3];
    for (int r = 0; r < 3; r++) {
        setenv("TDL_NUM_THREADS", threads[r], 1);
        long bands = fc_cpu_band_splits(), before = fc_cpu_gate_points();
        run_ok(prog);
        skipped[r] = fc_cpu_gate_points() - before;
        if (cpu && r > 0)
            ck_assert_int_ge(fc_cpu_band_splits() - bands, 4);
    }
    env_restore("TDL_NUM_THREADS", saved);
    if (cpu) {
        ck_assert_int_gt(skipped[0], 0);
        for (int r = 1; r < 3; r++)
            ck_assert_msg(skipped[r] >= skipped[0], "%s threads: %ld zeros skipped, one thread %ld",
                          threads[r], skipped[r], skipped[0]);
    }
    size_t n;
    float *gx = same_bits(prog, "roi_align adaptive, 256 channels", &n);
    ck_assert_int_eq(n, 2 * 256 * 30 * 36);
    free(gx);
}
END_TEST

/* grad() of a written tensor whose write overwrote part of an older one: the gradient returned is
 * not the buffer that the backward then zeroes where the write stored and hands on (PyTorch
 * 1.13: [10, 8, 12], and [0, 16, 24] for x). */
START_TEST(grad_of_written_input)
{
    run_ok("x = tensor([1.0, 2.0, 3.0], requires_grad=True)\ny = (x * 2).clone()\ny[0] = 5.0\n"
           "g = grad((y * y).sum(), [y])\nassert g[0].tolist() == [10.0, 8.0, 12.0], g\n"
           "h = grad((y * y).sum(), [x])\nassert h[0].tolist() == [0.0, 16.0, 24.0], h\n"
           "x.grad = None\n(y * y).sum().backward()\nassert x.grad.tolist() == [0.0, 16.0, 24.0]\n");
}
END_TEST

START_TEST(errors)
{
    run_err("x = tensor([1.0, 2.0], requires_grad=True)\n(x * 2).backward()\n", "RuntimeError",
            "grad can be implicitly created only for scalar outputs");
    run_err("x = tensor([1.0, 2.0], requires_grad=True)\ny = (x * x).exp().sum()\ny.backward()\ny.backward()\n",
            "RuntimeError", "Trying to backward through the graph a second time");
    run_err("x = tensor([1.0, 2.0], requires_grad=True)\nx += 1\n", "RuntimeError",
            "a leaf Variable that requires grad is being used in an in-place operation.");
    run_err("x = tensor([1.0, 2.0], requires_grad=True)\nx[0] = 5.0\n", "RuntimeError",
            "a view of a leaf Variable that requires grad is being used in an in-place operation.");
    run_err("x = tensor([1.0, 2.0], requires_grad=True)\ny = x.sin().clone()\nz = (y * y).sum()\n"
            "y[0] = 5.0\nz.backward()\n",
            "RuntimeError", "one of the variables needed for gradient computation has been modified by an inplace operation");
    run_err("x = tensor([1.0, 2.0])\nx.sum().backward()\n", "RuntimeError",
            "element 0 of tensors does not require grad and does not have a grad_fn");
    run_err("x = tensor([1, 2], requires_grad=True)\n", "RuntimeError",
            "only Tensors of floating point dtype can require gradients");
    /* a write into a leaf is fine with gradients off (an optimiser's step; tdl's -= rebinds) */
    run_ok("w = tensor([1.0, 2.0], requires_grad=True)\n(w * w).sum().backward()\nset_grad_enabled(False)\n"
           "w[...] = w - 0.5 * w.grad\nset_grad_enabled(True)\nassert w.tolist() == [0.0, 0.0]\nassert w.requires_grad\n"
           "assert is_grad_enabled()\n");
}
END_TEST

/* ---- convolution gradients through a device's library (test case "library") ----
 * tests/golden/conv_grad (gen_conv_grad.py): conv2d and conv_transpose2d under requires_grad on
 * the stand-in CUDA device (TDL_FAKE_CUDA=1), with fc_conv_test_hook serving the library's calls by
 * direct loops on the CPU: the forward goes through the library and is recorded as a library op
 * (grad_fn ConvolutionBackward0), its backward asks the library for backward data / backward filter
 * (conv_transpose2d: a forward convolution / backward filter with the roles swapped) with the
 * forward's geometry and deterministic engines, and the results equal PyTorch's. Then the same
 * with the library declining the input's or the weight's gradient (or both, or every call): that
 * operand's gradient comes from differentiating the reference, with the same values, and --verbose
 * says which path ran each gradient and why. */

enum { HOOK_CALLS = 16 };
static FcConv hook_calls[HOOK_CALLS];
static int hook_n;
static int hook_decline;        /* 1: the input's gradient, 2: the weight's, 4: every call */

static int64_t conv_at(const int64_t st[4], int64_t a, int64_t b, int64_t c, int64_t d)
{
    return a * st[0] + b * st[1] + c * st[2] + d * st[3];
}

/* Elements of c's tensors by role: A the convolution's input, Z its output (conv_transpose2d's
 * forward swaps x and y). */
static double conv_get(const FcConv *c, const void *p, int64_t i)
{
    return c->dtype == FC_FLOAT32 ? ((const float *)p)[i] : ((const double *)p)[i];
}

static void conv_add(const FcConv *c, void *p, int64_t i, double v)
{
    if (c->dtype == FC_FLOAT32)
        ((float *)p)[i] += (float)v;
    else
        ((double *)p)[i] += v;
}

static void conv_zero(const FcConv *c, void *p, const int64_t sh[4], const int64_t st[4])
{
    for (int64_t a = 0; a < sh[0]; a++)
        for (int64_t b = 0; b < sh[1]; b++)
            for (int64_t d = 0; d < sh[2]; d++)
                for (int64_t e = 0; e < sh[3]; e++) {
                    int64_t i = conv_at(st, a, b, d, e);
                    if (c->dtype == FC_FLOAT32)
                        ((float *)p)[i] = 0;
                    else
                        ((double *)p)[i] = 0;
                }
}

static FcStatus hook_conv(FcBackend *be, FcConv *c, FcError *err)
{
    (void)be;
    (void)err;
    int call = hook_n;
    if (hook_n < HOOK_CALLS)
        hook_calls[hook_n++] = *c;
    bool input_grad = call > 0 && (c->op == FC_CONV_BACKWARD_DATA || (c->op == FC_CONV_FORWARD && !c->transposed));
    bool weight_grad = c->op == FC_CONV_BACKWARD_FILTER;
    if (c->op > FC_CONV_BACKWARD_FILTER || (hook_decline & 4) || (input_grad && (hook_decline & 1)) ||
        (weight_grad && (hook_decline & 2))) {
        snprintf(c->note, sizeof c->note, "declined by the test");
        return FC_OK;
    }
    bool tr = c->transposed;
    const int64_t *ash = tr ? c->y_shape : c->x_shape, *ast = tr ? c->y_strides : c->x_strides;
    const int64_t *zsh = tr ? c->x_shape : c->y_shape, *zst = tr ? c->x_strides : c->y_strides;
    void *A = (void *)(tr ? c->y : c->x), *Z = tr ? (void *)c->x : c->y, *W = (void *)c->w;
    int out = c->op == FC_CONV_BACKWARD_FILTER ? 2 : (c->op == FC_CONV_FORWARD && !tr) ? 1 : 0;
    if (out == 0)
        conv_zero(c, A, ash, ast);
    else if (out == 1)
        conv_zero(c, Z, zsh, zst);
    else
        conv_zero(c, W, c->w_shape, c->w_strides);
    int64_t G = c->groups, Kg = zsh[1] / G, Cg = c->w_shape[1];
    for (int64_t n = 0; n < zsh[0]; n++)
        for (int64_t k = 0; k < zsh[1]; k++)
            for (int64_t oh = 0; oh < zsh[2]; oh++)
                for (int64_t ow = 0; ow < zsh[3]; ow++)
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t r = 0; r < c->w_shape[2]; r++)
                            for (int64_t q = 0; q < c->w_shape[3]; q++) {
                                int64_t ih = oh * c->stride[0] - c->pad_pre[0] + r * c->dilation[0];
                                int64_t iw = ow * c->stride[1] - c->pad_pre[1] + q * c->dilation[1];
                                if (ih < 0 || ih >= ash[2] || iw < 0 || iw >= ash[3])
                                    continue;
                                int64_t ia = conv_at(ast, n, (k / Kg) * Cg + ci, ih, iw);
                                int64_t iz = conv_at(zst, n, k, oh, ow);
                                int64_t iwt = conv_at(c->w_strides, k, ci, r, q);
                                if (out == 0)
                                    conv_add(c, A, ia, conv_get(c, Z, iz) * conv_get(c, W, iwt));
                                else if (out == 1)
                                    conv_add(c, Z, iz, conv_get(c, A, ia) * conv_get(c, W, iwt));
                                else
                                    conv_add(c, W, iwt, conv_get(c, A, ia) * conv_get(c, Z, iz));
                            }
    c->taken = true;
    snprintf(c->note, sizeof c->note, "the test's loops");
    return FC_OK;
}

static bool same4(const int64_t *a, const int64_t *b)
{
    return memcmp(a, b, 4 * sizeof *a) == 0;
}

/* Whether backward call b has forward call f's geometry, its operands in the roles the gradient
 * which (0 input, 1 weight) gives them. */
static bool geometry_of(const FcConv *f, const FcConv *b, int which, char *why, size_t cap)
{
    bool tr = f->transposed;
    FcConvOp want = which ? FC_CONV_BACKWARD_FILTER : tr ? FC_CONV_FORWARD : FC_CONV_BACKWARD_DATA;
    if (b->op != want || b->transposed) {
        golden_put(why, cap, "gradient %d: op %d (transposed %d), want %d; ", which, (int)b->op, b->transposed, (int)want);
        return false;
    }
    /* the convolution's input (A) and output (Z) shapes */
    const int64_t *fa = tr ? f->y_shape : f->x_shape, *fz = tr ? f->x_shape : f->y_shape;
    bool ok = same4(b->x_shape, fa) && same4(b->y_shape, fz) && same4(b->w_shape, f->w_shape) && b->groups == f->groups &&
              memcmp(b->pad_pre, f->pad_pre, sizeof f->pad_pre) == 0 &&
              memcmp(b->pad_post, f->pad_post, sizeof f->pad_post) == 0 &&
              memcmp(b->stride, f->stride, sizeof f->stride) == 0 &&
              memcmp(b->dilation, f->dilation, sizeof f->dilation) == 0 && (b->flags & FC_CONV_DETERMINISTIC);
    /* the operand read keeps the forward's strides */
    if (!tr && which == 0)
        ok = ok && same4(b->w_strides, f->w_strides) && b->w == f->w;
    if (!tr && which == 1)
        ok = ok && same4(b->x_strides, f->x_strides) && b->x == f->x;
    if (tr && which == 0)
        ok = ok && same4(b->w_strides, f->w_strides) && b->w == f->w;
    if (tr && which == 1)
        ok = ok && same4(b->y_strides, f->x_strides) && b->y == f->x;
    if (!ok)
        golden_put(why, cap, "gradient %d: the geometry differs from the forward's; ", which);
    return ok;
}

static int count_in(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

START_TEST(library_conv_grads)
{
    GoldenCase *cases = NULL;
    char err[256];
    int n = golden_cases_load("tests/golden/conv_grad/cases.txt", &cases, err, sizeof err);
    ck_assert_msg(err[0] == '\0', "%s", err);
    ck_assert_int_ge(n, 10);
    char *saved = env_save("TDL_FAKE_CUDA");
    setenv("TDL_FAKE_CUDA", "1", 1);
    fc_conv_test_hook = hook_conv;
    char *report = calloc(1, 65536);
    int failed = 0, library_grads = 0, reference_grads = 0;
    static const int modes[] = {0, 1, 2, 3, 4};
    for (int i = 0; i < n; i++) {
        const GoldenCase *c = &cases[i];
        bool tr = strstr(c->program, "conv_transpose2d") != NULL;
        const char *op = tr ? "conv_transpose2d" : "conv2d";
        bool gx = strstr(c->text, "gx=") != NULL, gw = strstr(c->text, "gw=") != NULL;
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
            hook_decline = modes[m];
            hook_n = 0;
            static Lines l;
            l.text[0] = '\0';
            tdl_config cfg = {0};
            cfg.path = "stdlib";
            cfg.flags = TDL_VERBOSE;
            cfg.dump = lines_collect;
            cfg.dump_ud = &l;
            cfg.device = "cuda";
            tdl_interp *T = tdl_open(&cfg);
            ck_assert_ptr_nonnull(T);
            char prog[8192], why[2048] = "";
            snprintf(prog, sizeof prog,
                     "import nn\ndev = 'cuda'\n%s\n", c->program);
            if (tdl_run_string(T, prog, c->name) != TDL_OK) {
                golden_put(why, sizeof why, "raised %s: %s", tdl_error_kind_name(tdl_error_kind_of(T)),
                           tdl_error_message(T));
            } else {
                for (const char *p = c->text; *p;) {
                    int k = (int)strcspn(p, "=");
                    char var[64], path[512];
                    snprintf(var, sizeof var, "%.*s", k, p);
                    p += k + 1;
                    int f = (int)strcspn(p, " ");
                    snprintf(path, sizeof path, "tests/golden/conv_grad/%.*s", f, p);
                    p += f;
                    p += *p == ' ';
                    golden_compare_npy(T, var, path, -1.0, "-", why, sizeof why);
                }
            }
            tdl_close(T);
            /* the forward through the library, recorded; each gradient by the path the mode gives */
            char line[128];
            snprintf(line, sizeof line, "tdl: %s on cuda:0: cuDNN (the test's loops)", op);
            bool fwd = !(hook_decline & 4);
            if (count_in(l.text, line) != (fwd ? 1 : 0))
                golden_put(why, sizeof why, "the forward's line is missing; ");
            if (hook_n < 1 || hook_calls[0].op != FC_CONV_FORWARD || hook_calls[0].transposed != tr)
                golden_put(why, sizeof why, "the forward was not asked of the library; ");
            int next = 1;
            for (int which = 0; which < 2 && fwd; which++) {
                if (!(which ? gw : gx))
                    continue;
                bool declined = hook_decline & (which ? 2 : 1);
                snprintf(line, sizeof line, "tdl: %s %s gradient on cuda:0: %s", op, which ? "weight" : "input",
                         declined ? "generated kernels (" : "cuDNN (");
                if (count_in(l.text, line) != 1)
                    golden_put(why, sizeof why, "no line \"%s\"; ", line);
                if (next >= hook_n)
                    golden_put(why, sizeof why, "gradient %d was not asked of the library; ", which);
                else
                    geometry_of(&hook_calls[0], &hook_calls[next++], which, why, sizeof why);
                if (declined)
                    reference_grads++;
                else
                    library_grads++;
            }
            if (fwd && next != hook_n)
                golden_put(why, sizeof why, "%d library calls, want %d; ", hook_n, next);
            if (!fwd && count_in(l.text, "gradient on cuda:0") != 0)
                golden_put(why, sizeof why, "a gradient line without a library forward; ");
            if (why[0]) {
                failed++;
                size_t len = strlen(report);
                snprintf(report + len, 65536 - len, "%s (decline %d): %s\n%s\n", c->name, hook_decline, why,
                         failed < 3 ? l.text : "");
            }
        }
    }
    fc_conv_test_hook = NULL;
    hook_decline = 0;
    env_restore("TDL_FAKE_CUDA", saved);
    golden_cases_free(cases, n);
    if (failed)
        fprintf(stderr, "%s", report);
    ck_assert_msg(failed == 0, "%d of %d runs differ (on stderr)", failed, n * 5);
    free(report);
    ck_assert_int_gt(library_grads, 20);
    ck_assert_int_gt(reference_grads, 20);
}
END_TEST

/* The record is freed by a backward (a second one raises PyTorch's error), an in-place write into
 * an operand after the forward is refused, and with gradients off nothing is recorded. */
START_TEST(library_conv_records)
{
    char *saved = env_save("TDL_FAKE_CUDA");
    setenv("TDL_FAKE_CUDA", "1", 1);
    fc_conv_test_hook = hook_conv;
    hook_decline = 0;
    static const char *const progs[][2] = {
        {"import nn\nx = randn(1, 2, 5, 5, device='cuda', requires_grad=True)\nw = randn(3, 2, 3, 3, device='cuda')\n"
         "y = nn.conv2d(x, w)\nassert str(y.grad_fn) == '<ConvolutionBackward0>', y.grad_fn\ny.sum().backward()\n"
         "y.sum().backward()\n",
         "Trying to backward through the graph a second time"},
        {"import nn\nx = randn(1, 2, 5, 5, device='cuda')\nw = randn(3, 2, 3, 3, device='cuda').requires_grad_()\n"
         "y = nn.conv2d(x, w)\nx[0, 0, 0, 0] = 1.0\ny.sum().backward()\n",
         "one of the variables needed for gradient computation has been modified by an inplace operation"},
        {"import nn\nx = randn(1, 2, 5, 5, device='cuda', requires_grad=True)\nw = randn(3, 2, 3, 3, device='cuda')\n"
         "with no_grad():\n    y = nn.conv2d(x, w)\nassert not y.requires_grad\n",
         NULL},
    };
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
        tdl_config cfg = {0};
        cfg.path = "stdlib";
        cfg.device = "cuda";
        tdl_interp *T = tdl_open(&cfg);
        ck_assert_ptr_nonnull(T);
        hook_n = 0;
        tdl_status st = tdl_run_string(T, progs[i][0], "records");
        const char *msg = st == TDL_OK ? "" : tdl_error_message(T);
        bool ok = progs[i][1] ? st != TDL_OK && strstr(msg, progs[i][1]) != NULL : st == TDL_OK;
        char copy[512];
        snprintf(copy, sizeof copy, "%s", msg);
        tdl_close(T);
        ck_assert_msg(ok, "program %zu: %s", i, copy);
        ck_assert_msg(hook_n >= 1, "program %zu did not reach the library", i);
    }
    fc_conv_test_hook = NULL;
    env_restore("TDL_FAKE_CUDA", saved);
}
END_TEST

/* A copy between devices carries the graph (PyTorch's ToCopyBackward0): the gradient comes back
 * to the source's device, with the bits of the same program on one device (on the device under
 * test, or host memory standing in for one). */
START_TEST(device_copy_grads)
{
    char *saved = env_save("TDL_FAKE_CUDA");
    if (!golden_device())
        setenv("TDL_FAKE_CUDA", "1", 1);
    tdl_config cfg = {0};
    cfg.path = "stdlib";
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    const char *prog =
        "x = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device='cpu', requires_grad=True)\n"
        "y = x.cuda()\n"
        "assert y.requires_grad and not y.is_leaf and y.grad_fn == '<ToCopyBackward0>', (y, y.grad_fn)\n"
        "def f(t):\n"
        "    return ((t.t() * 3).to(float64) ** 2).sum() + t.exp().sum()\n"
        "want = grad(f(x), [x])[0]\n"
        "got = grad(f(x.cuda()), [x])[0]\n"
        "assert got.device == x.device and got.tolist() == want.tolist(), (got, want)\n"
        "f(x.cuda()).backward()\n"
        "assert x.grad.tolist() == want.tolist(), x.grad\n"
        "w = tensor([1.0, -2.0, 0.5], device='cuda', requires_grad=True)\n"
        "(w.cpu().sin() * tensor([1.0, 2.0, 3.0], device='cpu')).sum().backward()\n"
        "assert w.grad.device == w.device, w.grad\n"
        "assert w.grad.tolist() == (w.detach().cos() * tensor([1.0, 2.0, 3.0], device='cuda')).tolist(), w.grad\n"
        "x.grad = None\n"
        "u = x.cuda()\n"
        "u[0, 0] = 7.0\n"
        "(u * 2).sum().backward()\n"
        "assert x.grad.tolist() == [[0.0, 2.0, 2.0], [2.0, 2.0, 2.0]], x.grad\n"
        "a = x.cuda().cpu()\n"
        "assert a.grad_fn == '<ToCopyBackward0>' and grad((a * a).sum(), [x])[0].tolist() == (2 * x).tolist()\n"
        "with no_grad():\n"
        "    assert not x.cuda().requires_grad\n";
    tdl_status st = tdl_run_string(T, prog, "device_copy");
    ck_assert_msg(st == TDL_OK, "%s: %s", tdl_error_kind_name(tdl_error_kind_of(T)), tdl_error_message(T));
    tdl_close(T);
    env_restore("TDL_FAKE_CUDA", saved);
}
END_TEST

Suite *grad_suite(void)
{
    Suite *s = suite_create("grad");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, golden);
    tcase_add_test(tc, finite_differences);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, deterministic_gather);
    tcase_add_test(tc, scatter_terms_one_kernel);
    tcase_add_test(tc, terms_held_along_level);
    tcase_add_test(tc, staged_cotangent);
    tcase_add_test(tc, counters_per_run);
    tcase_add_test(tc, transposed_loads_and_fills);
    tcase_add_test(tc, transposing_copies_tiled);
    tcase_add_test(tc, scaled_transposing_copies);
    tcase_add_test(tc, one_term_chains);
    tcase_add_test(tc, pre_values_pointed);
    tcase_add_test(tc, muladd_one_factor);
    tcase_add_test(tc, gated_masked_zero);
    tcase_add_test(tc, gated_narrow_skips);
    tcase_add_test(tc, gated_bound_runs);
    tcase_add_test(tc, owner_loops);
    tcase_add_test(tc, band_rows);
    tcase_add_test(tc, band_split_rows);
    tcase_add_test(tc, band_split_gated_points);
    tcase_add_test(tc, terms_unless_data_bound);
    tcase_add_test(tc, scatter_indices_precomputed);
    tcase_add_test(tc, mul_add_one_pass);
    tcase_add_test(tc, mul_add_gathered_row);
    tcase_add_test(tc, mul_add_factor_one);
    tcase_add_test(tc, grad_of_written_input);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, device_copy_grads);
    TCase *lib = tcase_create("library");
    tcase_set_timeout(lib, 600);
    tcase_add_test(lib, library_conv_grads);
    tcase_add_test(lib, library_conv_records);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, lib);
    return s;
}
