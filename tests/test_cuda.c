/* test_cuda.c — the CUDA backend (backend/cuda/), mostly without a GPU.
 *
 * What runs anywhere NVRTC can be loaded (CI machines have the toolkit; where it cannot be, each
 * test says so on stderr and passes):
 *  - every kernel that the script tests (the .tdl files of tests/scripts) schedule, collected through
 *    --dump-cuda (TDL_DUMP_CUDA: the CUDA source of each kernel as the CPU path runs it), is
 *    compiled by NVRTC for sm_90, and every fourth distinct source for sm_80 too (the generator
 *    writes one source for both; all of them doubled the suite's cold time, a third of the CI's
 *    fresh-clone run); any compile error fails, with NVRTC's log and the
 *    numbered source on stderr. The cold compile times are reported. With TDL_TEST_NVRTC_CACHE (make
 *    test sets it), a disk cache there answers for the sources an earlier run compiled.
 *  - representative kernels (a pointwise chain, a gather, softmax's fused reductions, a bounded
 *    masked reduction, root reductions of both shapes, an argmax, a scattered accumulation, a
 *    masked contraction and the matrix product the plain ones become) compile, and their source
 *    has the structure the plan promises (a bounded loop for the masked sum, vector accesses
 *    for the contiguous chain, block reductions for softmax, ...).
 *  - the compile cache: memory hits, disk hits across cache objects, corrupt and truncated
 *    entries recompiled and replaced, TDL_CACHE_DIR=off.
 * What runs where g++ is (not under ASan): the generated source compiled for the host with an
 * emulation of CUDA's execution model, run on every kernel of representative programs (of all the
 * script tests with TDL_CUDA_HOST_SCRIPTS=1) and compared with the CPU executor, bit for bit
 * except for the order of block reductions' additions.
 * What needs no NVRTC: without a driver, device="cuda" is a DeviceError saying why, and the
 * interpreter goes on. With a GPU (a driver and a device), programs run on cuda:0 and print
 * what they print on the CPU; without one those tests say so and pass. */
#include "tdl.h"
#include "tests.h"
#include "watch.h"
#include "golden_cases.h"          /* env_save, env_restore */
#include "cuda_emu.h"             /* the emulation of CUDA's execution model */

#include "backend.h"
#include "cuda/cuda_internal.h"     /* the code generator's plan, for the emulated launches */
#include "internal.h"             /* fc_kcache_stats */
#include "interp.h"               /* an interpreter's FcCtx */

#include <dlfcn.h>
#include <math.h>
#include <sys/wait.h>

#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- collecting kernels ---- */

typedef struct Text { char *buf; size_t n; } Text;

typedef struct Kernels {
    char **src;
    int n, cap;
} Kernels;

static void kernels_add(Kernels *ks, const char *s, size_t len)
{
    if (ks->n == ks->cap) {
        ks->cap = ks->cap ? 2 * ks->cap : 64;
        ks->src = realloc(ks->src, (size_t)ks->cap * sizeof *ks->src);
        ck_assert_ptr_nonnull(ks->src);
    }
    char *c = malloc(len + 1);
    ck_assert_ptr_nonnull(c);
    memcpy(c, s, len);
    c[len] = 0;
    ks->src[ks->n++] = c;
}

static void kernels_free(Kernels *ks)
{
    for (int i = 0; i < ks->n; i++)
        free(ks->src[i]);
    free(ks->src);
    memset(ks, 0, sizeof *ks);
}

/* The dump hook: each call is one kernel's text (it ends with a newline). */
static void on_dump(void *ud, const char *text, size_t len)
{
    if (len == 1 && text[0] == '\n')
        return;
    kernels_add(ud, text, len);
}

static void sink(void *ud, const char *text, size_t len)
{
    Text *t = ud;
    if (!t)
        return;
    char *q = realloc(t->buf, t->n + len + 1);
    ck_assert_ptr_nonnull(q);
    memcpy(q + t->n, text, len);
    t->n += len;
    q[t->n] = 0;
    t->buf = q;
}

/* Runs program code (or the file path when code is NULL) with every kernel's CUDA source going
 * into ks. Returns the run's status. */
static tdl_status collect(const char *code, const char *path, Kernels *ks, Text *out)
{
    tdl_config cfg = {0};
    /* the CPU's kernels stand for the CUDA backend's, whose sums are kernels too */
    cfg.flags = TDL_DUMP_CUDA | TDL_FUSED_SUMS;
    cfg.dump = on_dump;
    cfg.dump_ud = ks;
    cfg.write = sink;
    cfg.write_ud = out;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    const char *argv[] = {path ? path : "<test>"};
    tdl_set_argv(T, 1, argv);
    tdl_status st = code ? tdl_run_string(T, code, "<test>") : tdl_run_file(T, path);
    tdl_close(T);
    return st;
}

/* The source part of a dump (without the trailing "// launch" and "// args" comments). */
static char *source_of(const char *dump)
{
    const char *e = strstr(dump, "// launch:");
    size_t n = e ? (size_t)(e - dump) : strlen(dump);
    char *s = malloc(n + 1);
    ck_assert_ptr_nonnull(s);
    memcpy(s, dump, n);
    s[n] = 0;
    return s;
}

/* Whether NVRTC can be loaded; when not, says so once per test. */
static bool have_nvrtc(const char *test)
{
    int major, minor;
    FcError err;
    if (fc_cuda_nvrtc_version(&major, &minor, &err) == FC_OK)
        return true;
    fprintf(stderr, "cuda: %s skipped: %s\n", test, err.msg);
    return false;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Compiles src for sm (no cache); on an error prints NVRTC's log and the numbered source and
 * fails. Returns the compile time in ms. */
static double compile_ok(const char *src, int sm, const char *what)
{
    FcCudaBuild b;
    FcError err;
    FcStatus st = fc_cuda_compile(NULL, src, sm, &b, &err);
    if (st != FC_OK) {
        fprintf(stderr, "cuda: %s does not compile for sm_%d: %s\n%s\n", what, sm, err.msg, b.log ? b.log : src);
        free(b.log);
        ck_abort_msg("%s does not compile for sm_%d: %s", what, sm, err.msg);
    }
    ck_assert(b.len > 0 && !b.ptx && b.from == FC_CUDA_COMPILED);
    free(b.image);
    free(b.log);
    return b.ms;
}

/* ---- the generated source run on the host ----
 *
 * Without a GPU the CUDA source can still be run: compiled as C++ for the host (the system's
 * g++, -std=c++17, so no contraction into FMA) with a small emulation of CUDA's execution model
 * in front of it (tests/cuda_emu.h: blocks one after another, a block's threads coroutines
 * switched at __syncthreads and at every shuffle); the kernel's pointers are host memory. Each
 * kernel a program runs on the CPU is also run this way (through FcCtx.on_kernel, on copies of
 * its output) and the two results are compared bit for bit:
 * the same values, except where the GPU adds in another order than the CPU (block reductions,
 * split reductions, root reductions: the same up to the rounding of double additions) and where
 * the GPU runs CUDA's own sin, erf, ... while the CPU runs SLEEF's (such a kernel is run, not
 * compared); libm versus CUDA's other functions (pow, sinh, ...) agree here, both glibc's. */

typedef void (*EmuLaunch)(int which, const void *args, unsigned gx, unsigned gy, unsigned bx);

typedef struct EmuKernel {
    char *src;
    void *so;
    EmuLaunch launch;
} EmuKernel;

typedef struct Emu {
    char dir[1024];                          /* where the host builds go */
    bool own_dir;                            /* a temporary folder, removed by emu_free */
    EmuKernel *k;
    int nk;
    FcBackend *cpu;
    int checked, exact, rounded, skipped;   /* kernels compared; identical; differing within rounding */
    int own_math;                            /* of those checked, with CUDA's own sin, erf, ...: not compared */
    int sorted, owner;                       /* of those checked, CUDA_SORTED and CUDA_OWNER stores */
    int nfail;
    char fail[1024];                         /* the first failure */
    double max_rel;                          /* the largest relative difference seen where allowed */
} Emu;

/* Whether g++ is here (the emulation's compiler); sets up e's folder. */
static bool emu_init(Emu *e)
{
    memset(e, 0, sizeof *e);
    /* $TDL_TEST_EMU_DIR (make test: the mock driver's build/mock_cuda/kernels) keeps the builds
     * between runs and builds; else a temporary folder. */
    const char *keep = getenv("TDL_TEST_EMU_DIR");
    if (keep && keep[0]) {
        snprintf(e->dir, sizeof e->dir, "%s", keep);
        mkdir(e->dir, 0777);
    } else {
        snprintf(e->dir, sizeof e->dir, "/tmp/tdl-cuda-emu-XXXXXX");
        if (!mkdtemp(e->dir))
            return false;
        e->own_dir = true;
    }
    if (!cuda_emu_setup(e->dir))
        return false;
    e->cpu = fc_cpu_backend_new(1);
    return system("g++ --version > /dev/null 2>&1") == 0 && e->cpu;
}

static void emu_free(Emu *e)
{
    for (int i = 0; i < e->nk; i++) {
        free(e->k[i].src);
        if (e->k[i].so)
            dlclose(e->k[i].so);
    }
    free(e->k);
    if (e->cpu)
        e->cpu->destroy(e->cpu);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf %s", e->dir);
    if (e->own_dir && system(cmd) != 0)
        fprintf(stderr, "cuda: could not remove %s\n", e->dir);
}

static void emu_failf(Emu *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emu_failf(Emu *e, const char *fmt, ...)
{
    if (e->nfail++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->fail, sizeof e->fail, fmt, ap);
        va_end(ap);
    }
}

/* The host build of c's source (compiled on first use), or NULL. */
static EmuLaunch emu_compile(Emu *e, const CudaCode *c)
{
    for (int i = 0; i < e->nk; i++)
        if (strcmp(e->k[i].src, c->src) == 0)
            return e->k[i].launch;
    char *text = NULL, so[1100], log[1200];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fputs(c->src, f);
    fprintf(f, "\nstatic void emu_s(const void *a) { tdl_s(*(const Args *)a); }\n");
    if (c->vec)
        fprintf(f, "static void emu_v(const void *a) { tdl_v(*(const Args *)a); }\n");
    if (c->mode == CUDA_BLOCK_REDUCE)
        fprintf(f, "static void emu_f(const void *a) { tdl_finish(*(const Args *)a); }\n");
    if (c->pre_bytes > 0)
        fprintf(f, "static void emu_p(const void *a) { tdl_pre(*(const Args *)a); }\n");
    bool sorted = c->mode == CUDA_SORTED;
    if (sorted)
        fprintf(f, "static void emu_k(const void *a) { tdl_keys(*(const Args *)a); }\n"
                   "static void emu_c(const void *a) { tdl_scan(*(const Args *)a); }\n"
                   "static void emu_l(const void *a) { tdl_fill(*(const Args *)a); }\n"
                   "static void emu_o(const void *a) { tdl_order(*(const Args *)a); }\n");
    fprintf(f, "extern \"C\" void emu_launch(int which, const void *a, unsigned gx, unsigned gy, unsigned bx)\n"
               "{\n"
               "    static_assert(sizeof(Args) == %zu, \"the argument struct's layout\");\n"
               "    static void (*const fn[])(const void *) = {emu_s, %s, %s, %s, %s, %s, %s, %s};\n"
               "    emu_reverse = which == 6;\n"
               "    emu_grid(fn[which], a, gx, gy, 1, bx, 1);\n"
               "}\n",
            c->args_size, c->vec ? "emu_v" : "emu_s", c->mode == CUDA_BLOCK_REDUCE ? "emu_f" : "emu_s",
            c->pre_bytes > 0 ? "emu_p" : "emu_s", sorted ? "emu_k" : "emu_s", sorted ? "emu_c" : "emu_s",
            sorted ? "emu_l" : "emu_s", sorted ? "emu_o" : "emu_s");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    EmuKernel k = {strdup(c->src), NULL, NULL};
    if (cuda_emu_build(e->dir, text, so, sizeof so))
        k.so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    free(text);
    if (k.so)
        k.launch = (EmuLaunch)dlsym(k.so, "emu_launch");
    e->k = realloc(e->k, (size_t)(e->nk + 1) * sizeof *e->k);
    e->k[e->nk++] = k;
    if (!k.launch) {
        char msg[600] = "";
        snprintf(log, sizeof log, "%s.log", so);
        FILE *lf = fopen(log, "r");
        if (lf) {
            size_t m = fread(msg, 1, sizeof msg - 1, lf);
            msg[m] = 0;
            fclose(lf);
        }
        emu_failf(e, "the host build of a kernel failed (%s):\n%s", log, msg);
    }
    return k.launch;
}

/* The output's span in elements, [lo, hi), that k can write. False when it writes nothing (an
 * empty kept loop; a root reduction over an empty loop still writes its identity). */
static bool out_span(const FcKernel *k, int64_t *lo, int64_t *hi)
{
    int64_t a = k->out_offset, b = k->out_offset;
    for (int l = 0; l < k->nloop; l++) {
        if (k->extent[l] == 0 && k->owner[l] < 0 && !(k->reduce != FC_OP_NONE && k->reduced[l]))
            return false;
        int64_t s = k->out_strides[l] * (k->extent[l] > 0 ? k->extent[l] - 1 : 0);
        if (s > 0)
            b += s;
        else
            a += s;
    }
    for (int g = 0; g < k->nscatter; g++) {
        int64_t s = k->scatter[g].stride * (k->scatter[g].extent > 0 ? k->scatter[g].extent - 1 : 0);
        if (s > 0)
            b += s;
        else
            a += s;
    }
    *lo = a;
    *hi = b + 1;
    return true;
}

/* Runs c's entry point `which` (0 tdl_s, 1 tdl_v; after tdl_pre when it has tables) on the host into out (whose element 0 is the
 * output's element `lo`). Returns the status the backend would, with its message in err. */
static FcStatus emu_run(Emu *e, const FcKernel *k, const CudaCode *c, EmuLaunch launch, int which, char *out, int64_t lo,
                        FcError *err)
{
    struct { int32_t code, dim; int64_t value, extent; } slot = {0};
    int64_t npts = which ? c->npts_v : c->npts, nsplit = 1, per = c->split_ext;
    fc_cuda_split(c, npts, &nsplit, &per);
    void *part = nsplit > 1 ? calloc((size_t)(npts * nsplit), c->part_elem) : NULL;
    /* the tables, filled with a pattern that no value read before tdl_pre wrote it could hide */
    void *pre = c->pre_bytes > 0 ? malloc(c->pre_bytes) : NULL;
    if (pre)
        memset(pre, 0xa5, c->pre_bytes);
    /* SORTED's scratch: its counts zeroed, as the backend does, the rest a pattern */
    void *scr = c->mode == CUDA_SORTED ? malloc(c->scratch_bytes) : NULL;
    if (scr) {
        memset(scr, 0x5a, c->scratch_bytes);
        memset(scr, 0, c->scratch_zero);
    }
    unsigned char *args = calloc(1, c->args_size + 8);
    size_t es = fc_dtype_size(k->out_dtype);
    for (int i = 0; i < c->nargs; i++) {
        const CudaArg *a = &c->args[i];
        uintptr_t p = 0;
        switch (a->kind) {
        case CARG_OUT: p = (uintptr_t)out - (uintptr_t)(lo * (int64_t)es); break;
        case CARG_BUF: p = (uintptr_t)k->bufs[a->buf]; break;
        case CARG_ERR: p = (uintptr_t)&slot; break;
        case CARG_PART: p = (uintptr_t)part; break;
        case CARG_PRE: p = (uintptr_t)pre; break;
        case CARG_SCRATCH: p = (uintptr_t)scr; break;
        case CARG_VAL: fc_cuda_arg_value(a, k, args + a->offset); continue;
        }
        memcpy(args + a->offset, &p, 8);
    }
    memcpy(args + c->args[c->arg_npts].offset, &npts, 8);
    if (c->arg_nsplit >= 0) {
        memcpy(args + c->args[c->arg_nsplit].offset, &nsplit, 8);
        memcpy(args + c->args[c->arg_per].offset, &per, 8);
    }
    /* A few blocks: the grid- and block-stride loops cover the rest. */
    unsigned few = 3, bx = (unsigned)c->block;
    if (pre)
        launch(3, args, c->pre_pts / 256 + 1 < few ? (unsigned)(c->pre_pts / 256 + 1) : few, 1, 256);
    switch (c->mode) {
    case CUDA_THREAD:
    case CUDA_THREAD_REDUCE: {
        int64_t g = (npts + bx - 1) / bx;
        launch(which, args, g < few ? (unsigned)g : few, 1, bx);
        break;
    }
    case CUDA_ROW:
    case CUDA_TILE:
        launch(which, args, npts < few ? (unsigned)npts : few, 1, bx);
        break;
    case CUDA_BLOCK_REDUCE:
        launch(which, args, npts < few ? (unsigned)npts : few, (unsigned)nsplit, bx);
        if (nsplit > 1)
            launch(2, args, 2, 1, 32);
        break;
    case CUDA_SERIAL:
        launch(which, args, 1, 1, 1);
        break;
    case CUDA_OWNER: {
        int64_t g = (npts + bx - 1) / bx;
        launch(which, args, g < few ? (unsigned)g : few, 1, bx);
        break;
    }
    case CUDA_SORTED: {
        /* tdl_keys, tdl_scan, tdl_fill, tdl_order, then the store; the fill's blocks and threads
         * run last to first (emu_reverse), so that its runs come out of order as a GPU's may,
         * and the CPU's bits then need tdl_order */
        int64_t gr = (c->nrec + 255) / 256, gk = (c->nkeys + 255) / 256, g = (npts + bx - 1) / bx;
        launch(4, args, gr < few ? (unsigned)gr : few, 1, 256);
        launch(5, args, c->scan_tiles < few ? (unsigned)c->scan_tiles : few, 1, 256);
        launch(6, args, gr < few ? (unsigned)gr : few, 1, 256);
        launch(7, args, gk < few ? (unsigned)gk : few, 1, 256);
        launch(which, args, g < few ? (unsigned)g : few, 1, bx);
        break;
    }
    }
    free(scr);
    free(part);
    free(pre);
    free(args);
    if (slot.code == 1) {
        snprintf(err->msg, sizeof err->msg, "index %lld is out of bounds for dimension %d with size %lld",
                 (long long)slot.value, slot.dim, (long long)slot.extent);
        return FC_ERR_INDEX;
    }
    if (slot.code == 2) {
        snprintf(err->msg, sizeof err->msg, "ZeroDivisionError");
        return FC_ERR_RUNTIME;
    }
    return FC_OK;
}

/* Whether op's CUDA column is CUDA's own function where the CPU's is a SLEEF port (ops.def's
 * *_MATH forms whose CUDA template is not one of the prelude's tdl_ ports): sin, erf, ... give the
 * GPU's math library's bits, which are not the CPU's (on the host, glibc's, which are not either:
 * a kernel with one is run but its values are not compared). */
static bool cuda_own_math(FcOp op)
{
#define FLOAT(NAME, form, cpu, cuda)                                                               \
    if (op == FC_OP_##NAME && strstr(#form, "_MATH") && strncmp(cuda, "tdl_", 4) != 0)            \
        return true;
#include "ops.def"
    return false;
}

static bool kernel_own_math(const FcKernel *k)
{
    for (int i = 0; i < k->ncode; i++)
        if (cuda_own_math(k->code[i].op))
            return true;
    return false;
}

/* Compares the emulated output with the CPU's: bits, or (where the GPU adds in another order)
 * values within the rounding of double sums. */
static void emu_compare(Emu *e, const FcKernel *k, const CudaCode *c, const char *want, const char *got, size_t n,
                        const char *what)
{
    if (kernel_own_math(k)) {
        e->own_math++;
        return;
    }
    if (memcmp(want, got, n) == 0) {
        e->exact++;
        return;
    }
    bool reorders = c->mode == CUDA_BLOCK_REDUCE || c->mode == CUDA_THREAD_REDUCE || c->mode == CUDA_ROW;
    FcDType dt = k->out_dtype;
    size_t es = fc_dtype_size(dt), bad = 0, first = 0;
    double worst = 0;
    for (size_t i = 0; i < n / es; i++) {
        if (memcmp(want + i * es, got + i * es, es) == 0)
            continue;
        double x = dt == FC_FLOAT32 ? ((const float *)want)[i] : dt == FC_FLOAT64 ? ((const double *)want)[i] : NAN;
        double y = dt == FC_FLOAT32 ? ((const float *)got)[i] : dt == FC_FLOAT64 ? ((const double *)got)[i] : NAN;
        double rel = fabs(x - y) / (fabs(x) > 1e-300 ? fabs(x) : 1e-300);
        if (!(rel <= (dt == FC_FLOAT32 ? 2e-7 : 1e-13)))
            rel = INFINITY;
        if (bad++ == 0)
            first = i;
        if (rel > worst)
            worst = rel;
    }
    if (reorders && worst < INFINITY) {
        e->rounded++;
        if (worst > e->max_rel)
            e->max_rel = worst;
        return;
    }
    char a[64] = "?", b[64] = "?";
    if (dt == FC_FLOAT32)
        snprintf(a, sizeof a, "%.9g", ((const float *)want)[first]), snprintf(b, sizeof b, "%.9g", ((const float *)got)[first]);
    else if (dt == FC_FLOAT64)
        snprintf(a, sizeof a, "%.17g", ((const double *)want)[first]), snprintf(b, sizeof b, "%.17g", ((const double *)got)[first]);
    else if (dt == FC_INT64)
        snprintf(a, sizeof a, "%lld", (long long)((const int64_t *)want)[first]), snprintf(b, sizeof b, "%lld", (long long)((const int64_t *)got)[first]);
    else if (dt == FC_INT32)
        snprintf(a, sizeof a, "%d", ((const int32_t *)want)[first]), snprintf(b, sizeof b, "%d", ((const int32_t *)got)[first]);
    else
        snprintf(a, sizeof a, "%d", ((const uint8_t *)want)[first]), snprintf(b, sizeof b, "%d", ((const uint8_t *)got)[first]);
    char *dump = fc_kernel_dump(k);
    emu_failf(e, "%s: %zu of %zu elements differ from the CPU's (the first, %zu: cpu %s, cuda %s)\n%s", what, bad,
              n / es, first, a, b, dump ? dump : "");
    free(dump);
}

/* Runs k on copies of its output (lo, hi: out_span) by the CPU backend and by launch, the host
 * build of code c (tdl_s, and tdl_v where it applies), and compares them. */
static void emu_check(Emu *e, const FcKernel *k, const CudaCode *cc, EmuLaunch launch, int64_t lo, int64_t hi)
{
    const CudaCode c = *cc;
    size_t es = fc_dtype_size(k->out_dtype), n = (size_t)(hi - lo) * es;
    const char *cur = (const char *)k->out + lo * (int64_t)es;
    char *want = malloc(n), *got = malloc(n);
    memcpy(want, cur, n);
    FcKernel k2 = *k;
    k2.out = want - lo * (int64_t)es;
    k2.nthreads = 1;
    k2.interrupt = NULL;
    FcError e1, e2;
    FcStatus s1 = e->cpu->run(e->cpu, &k2, &e1);
    for (int which = 0; which < 2; which++) {
        if (which == 1 && !(c.vec && k->extent[c.vl] % c.V == 0))
            break;
        memcpy(got, cur, n);
        FcStatus s2 = emu_run(e, k, &c, launch, which, got, lo, &e2);
        e->checked++;
        e->sorted += c.mode == CUDA_SORTED;
        e->owner += c.mode == CUDA_OWNER;
        const char *what = which ? "tdl_v" : "tdl_s";
        if (s1 != s2 || (s1 && strcmp(e1.msg, e2.msg) != 0))
            emu_failf(e, "%s: the CPU gives %d (%s), the CUDA source %d (%s)", what, s1, s1 ? e1.msg : "", s2,
                      s2 ? e2.msg : "");
        else if (!s1)
            emu_compare(e, k, &c, want, got, n, what);
        else
            e->exact++;
    }
    free(want);
    free(got);
}

/* FcCtx.on_kernel: every kernel the CPU is about to run, checked by emu_check against the host
 * build of its CUDA source. */
static void emu_on_kernel(void *ud, const FcKernel *k, FcDevice dev)
{
    Emu *e = ud;
    int64_t lo, hi;
    if (dev.type != FC_DEV_CPU || !out_span(k, &lo, &hi))
        return;
    CudaCode c;
    FcError err;
    if (fc_cuda_codegen(k, &c, &err) != FC_OK) {
        e->skipped++;
        return;
    }
    EmuLaunch launch = emu_compile(e, &c);
    if (launch)
        emu_check(e, k, &c, launch, lo, hi);
    fc_cuda_code_free(&c);
}

/* Runs code (or the file path) with every kernel also checked through the host build of its
 * CUDA source. */
static tdl_status emu_program(Emu *e, const char *code, const char *path)
{
    tdl_interp *T = open_watching(emu_on_kernel, e);
    const char *argv[] = {path ? path : "<test>"};
    tdl_set_argv(T, 1, argv);
    tdl_status st = code ? tdl_run_string(T, code, "<test>") : tdl_run_file(T, path);
    tdl_close(T);
    return st;
}

static void emu_report(const Emu *e, const char *what)
{
    fprintf(stderr,
            "cuda: %s, run on the host: %d launches checked against the CPU, %d identical, %d within the rounding "
            "of double sums (relative %.1e at most), %d of them stores sorted by destination and %d split over owner "
            "loops, %d with CUDA's own sin, erf, ... (run, not compared), %d kernels compiled, %d refused\n",
            what, e->checked, e->exact, e->rounded, e->max_rel, e->sorted, e->owner, e->own_math, e->nk, e->skipped);
}

/* ---- every kernel of the script tests ---- */

/* The distinct sources compiled for sm_80 as well as sm_90: every SM80_EVERY-th. */
enum { SM80_EVERY = 4 };

typedef struct Job {
    char **src;                 /* distinct sources */
    const char **from;          /* the script each came from */
    int n;
    atomic_int next;
    FcCudaCache *cache;         /* $TDL_TEST_NVRTC_CACHE's, or NULL: compile every one */
    double *ms;                 /* [2n]: sm_90, sm_80 (0 for one taken from the cache) */
    atomic_int cached;          /* compiles the cache answered */
    char **fail;                /* [n] a compile error report, or NULL */
} Job;

static void *compile_worker(void *arg)
{
    Job *j = arg;
    for (;;) {
        int i = atomic_fetch_add(&j->next, 1);
        if (i >= 2 * j->n)
            return NULL;
        int k = i / 2, sm = i % 2 ? 80 : 90;
        if (sm == 80 && k % SM80_EVERY)
            continue;
        FcCudaBuild b;
        FcError err;
        if (fc_cuda_compile(j->cache, j->src[k], sm, &b, &err) == FC_OK) {
            if (b.from == FC_CUDA_COMPILED)
                j->ms[i] = b.ms;
            else
                atomic_fetch_add(&j->cached, 1);
        } else if (!j->fail[k]) {
            size_t cap = strlen(err.msg) + (b.log ? strlen(b.log) : 0) + 256;
            j->fail[k] = malloc(cap);
            if (j->fail[k])
                snprintf(j->fail[k], cap, "sm_%d, a kernel of %s: %s\n%s", sm, j->from[k], err.msg,
                         b.log ? b.log : "");
        }
        free(b.image);
        free(b.log);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

START_TEST(script_kernels_compile)
{
    if (!have_nvrtc("compiling the script tests' kernels"))
        return;
    char cwd[4096];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir("tests/scripts"), 0);
    DIR *d = opendir(".");
    ck_assert_ptr_nonnull(d);
    char **names = NULL;
    int nn = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".tdl") == 0) {
            names = realloc(names, (size_t)(nn + 1) * sizeof *names);
            names[nn++] = strdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    /* Run each script as run_scripts.sh does (its output discarded), collecting its kernels. */
    Kernels all = {0};
    const char **from = NULL;
    int nfrom = 0, unsupported = 0;
    double t0 = now_ms();
    for (int i = 0; i < nn; i++) {
        Kernels ks = {0};
        collect(NULL, names[i], &ks, NULL);
        for (int k = 0; k < ks.n; k++) {
            if (strncmp(ks.src[k], "// cuda: ", 9) == 0) {
                /* A kernel the code generator refused: only what the CPU refuses too. */
                if (!strstr(ks.src[k], "is not supported"))
                    ck_abort_msg("%s: the CUDA code generator refused a kernel: %s", names[i], ks.src[k] + 9);
                unsupported++;
                continue;
            }
            char *s = source_of(ks.src[k]);
            kernels_add(&all, s, strlen(s));
            free(s);
            from = realloc(from, (size_t)(nfrom + 1) * sizeof *from);
            from[nfrom++] = names[i];
        }
        kernels_free(&ks);
    }
    double t_run = now_ms() - t0;
    ck_assert_int_eq(chdir(cwd), 0);
    /* Distinct sources (the same structure on other shapes or scalars is the same source). */
    Job j = {0};
    j.src = malloc((size_t)(all.n + 1) * sizeof *j.src);
    j.from = malloc((size_t)(all.n + 1) * sizeof *j.from);
    for (int i = 0; i < all.n; i++) {
        bool dup = false;
        for (int q = 0; q < j.n && !dup; q++)
            dup = strcmp(j.src[q], all.src[i]) == 0;
        if (!dup) {
            j.src[j.n] = all.src[i];
            j.from[j.n++] = from[i];
        }
    }
    j.ms = calloc((size_t)(2 * j.n + 1), sizeof *j.ms);
    j.fail = calloc((size_t)(j.n + 1), sizeof *j.fail);
    atomic_init(&j.next, 0);
    atomic_init(&j.cached, 0);
    /* make test names a disk cache shared by its builds (gcc, ASan, clang: their generated sources
     * are the same), so that a source is compiled by NVRTC once, not once per build; an entry is
     * keyed by the whole source, NVRTC's version and the options. */
    const char *cache_dir = getenv("TDL_TEST_NVRTC_CACHE");
    if (cache_dir && cache_dir[0]) {
        j.cache = fc_cuda_cache_new(cache_dir);
        ck_assert_ptr_nonnull(j.cache);
    }
    t0 = now_ms();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nth = ncpu < 2 ? 2 : ncpu > 8 ? 8 : (int)ncpu;
    pthread_t th[8];
    for (int t = 0; t < nth; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, compile_worker, &j), 0);
    for (int t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    double t_compile = now_ms() - t0;
    int nfail = 0;
    for (int k = 0; k < j.n; k++)
        if (j.fail[k]) {
            if (nfail++ == 0)
                fprintf(stderr, "cuda: a script test's kernel does not compile: %s\n", j.fail[k]);
        }
    double *s90 = malloc((size_t)(j.n + 1) * sizeof *s90), total = 0;
    int n90 = 0;
    for (int k = 0; k < j.n; k++) {
        if (j.ms[2 * k] > 0)
            s90[n90++] = j.ms[2 * k];
        total += j.ms[2 * k] + j.ms[2 * k + 1];
    }
    qsort(s90, (size_t)n90, sizeof *s90, cmp_double);
    int cached = atomic_load(&j.cached);
    fprintf(stderr,
            "cuda: %d kernels from %d scripts (%d distinct sources; %d refused as on the CPU) collected in %.1f s; "
            "compiled for sm_90 (every %dth for sm_80) in %.1f s on %d threads (%.1f s of NVRTC; %d of the %d compiles "
            "found in %s); cold compile per kernel (sm_90): median %.0f ms, max %.0f ms\n",
            all.n, nn, j.n, unsupported, t_run / 1e3, SM80_EVERY, t_compile / 1e3, nth, total / 1e3, cached,
            j.n + (j.n + SM80_EVERY - 1) / SM80_EVERY,
            j.cache ? cache_dir : "no cache", n90 ? s90[n90 / 2] : 0.0, n90 ? s90[n90 - 1] : 0.0);
    fc_cuda_cache_free(j.cache);
    ck_assert_msg(nfail == 0, "%d of %d distinct kernels of the script tests do not compile (the first is on stderr)",
                  nfail, j.n);
    ck_assert_int_gt(j.n, 50);
    for (int k = 0; k < j.n; k++)
        free(j.fail[k]);
    free(j.fail);
    free(j.ms);
    free(j.src);
    free(j.from);
    free(s90);
    free(from);
    kernels_free(&all);
    for (int i = 0; i < nn; i++)
        free(names[i]);
    free(names);
}
END_TEST

/* ---- representative kernels ---- */

/* A program, the number of its kernel to look at (the last: -1), what its source must contain
 * and must not contain ("" for nothing). */
typedef struct Shape {
    const char *name;
    const char *code;
    int kernel;
    const char *has[6];
    const char *hasnt[3];
} Shape;

static const Shape shapes[] = {
    {"a transposing copy (channels-last): tiles of 32 x 32, read along the input's contiguous loop and "
     "written along the output's through shared memory",
     "x = arange(2 * 40 * 70.0).reshape(2, 40, 70)\ny = x.permute(0, 2, 1).contiguous()\nprint(y[1, 69, 39], y.stride())\n",
     -1,
     {"in tiles of 32 x 32", "__shared__ f32 tile[32][33];", "__syncthreads();",
      "tile[threadIdx.x & 31][(threadIdx.x >> 5) + kk] = v0;", "= tile[(threadIdx.x >> 5) + kk][threadIdx.x & 31];", NULL},
     {"tdl_v", NULL}},
    {"pointwise chain",
     "x = arange(4096.0).reshape(64, 64)\ny = x.t().contiguous()\n"
     "z = (x * 0.5 + 1).sin() * y - x.abs().sqrt()\nprint(z[0, :3])\n",
     -1,
     {"a thread per output point", "ldv<V>(", "stv<V>(", "tdl_v(const Args a) { run<4>(a); }", "sinf(", NULL},
     {"fma", "block_reduce", NULL}},
    {"gather",
     "x = arange(1000.0).reshape(100, 10)\ni = tensor([3, -1, 7, 0, 99])\nprint(x[i] * 2)\n",
     -1,
     {"gix(", ", true, 0, a.err)", "const ix_t o", NULL},
     {NULL}},
    {"softmax",
     "x = (arange(64 * 300.0) * 0.37).sin().reshape(64, 300)\ny = x.softmax(1)\nprint(y[0, :3])\n",
     -1,
     {"a block per row", "block_reduce<f64, c_amax>", "block_reduce<f64, c_sum>", "by the block",
      "stv<V>(", NULL},
     {NULL}},
    {"a sum of softmax: rows in order, shared out over split blocks",
     "x = (arange(64 * 300.0) * 0.37).sin().reshape(64, 300)\nprint(x.softmax(1).sum().item() > 0)\n",
     -1,
     {"a block per output", "for (ix_t i0 = lo; i0 < (a.nt > 0 ? hi : 0); i0++)", "block_reduce<f64, c_amax>(a2)",
      "t2 < a.nt", NULL},
     {NULL}},
    {"bounded masked sum",
     "x = (arange(64 * 300.0) * 0.37).sin().reshape(64, 300)\n"
     "i, j = dims(2)\nv = x[i, j]\ne = x[i, 0].abs() * 40\n"
     "s = where(j < e, v, 0).sum(j).order(i)\nprint(s[:3])\n",
     -1,
     {"bcount(false, (f64)v", "if (c < n", "; i", "a.f", NULL},
     {NULL}},
    {"root reduction, a block per output",
     "x = arange(100000.0).reshape(10, 10000)\nprint(x.sum(1))\n",
     0,
     {"a block per output", "block_reduce<f64, c_sum>(r)", "tdl_finish", "a.nsplit", NULL},
     {NULL}},
    {"root reduction, a thread per output",
     "x = arange(40000.0).reshape(2, 20000)\ny = x.sum(0)\nprint(y[:3])\n",
     -1,
     {"a thread per output", "r = c_sum(r, (f64)v", NULL},
     {"block_reduce", NULL}},
    {"argmax",
     "x = (arange(64 * 300.0) * 0.37).sin().reshape(64, 300)\nprint(x.argmax(1))\n",
     -1,
     {"block_argreduce<true>(r, ri)", "b_argmax(", NULL},
     {NULL}},
    {"lanes: a fused row sum under a thread per output",
     "x = (arange(20000 * 20.0) * 0.37).sin().reshape(20000, 20)\n"
     "y = (x - x.sum(1, keepdim=True)).exp().sum(1)\nprint(y[:3])\n",
     -1,
     {"in eight lanes (the CPU's order)", "_Pragma(\"unroll\") for (int l", "a thread per output", NULL},
     {NULL}},
    {"scattered accumulation",
     "z = zeros(10)\nz.index_put_((tensor([1, 3, 1, 9]),), tensor([1.0, 2.0, 3.0, 4.0]), accumulate=True)\nprint(z)\n",
     -1,
     {"one thread in loop order", "*dst += ", "if (a.err->code != 0)", NULL},
     {NULL}},
    {"a gradient's scatter-add whose scatter index moves with its owner loop (the row): rows and "
     "columns are the records, sorted by destination, no float atomics",
     "x = zeros(64, 300, requires_grad=True)\n"
     "idx = (arange(64).reshape(64, 1) * 7 + (arange(200) * arange(200) * 13).reshape(1, 200)) % 300\n"
     "(x.gather(1, idx) * 2.0).sum().backward()\n",
     -1,
     {"its records sorted by destination", "(19200 destinations x the owner points), 12800 records", "acc += ",
      "__launch_bounds__(256)", NULL},
     {"atomicAdd(dst", "__launch_bounds__(1)", NULL}},
    {"a gradient's scatter-add whose destinations do not move with its owner loop: the records (rows) "
     "sorted by destination, a thread per destination and column, no float atomics",
     "y = zeros(50, 40, requires_grad=True)\n"
     "(y[(arange(300) * arange(300) * 7) % 50] * (arange(300 * 40.0) * 0.61).sin().reshape(300, 40)).sum().backward()\n",
     -1,
     {"its records sorted by destination", "tdl_keys", "atomicAdd(&cnt[key], 1u)", "tdl_order",
      "for (uint32 j = lo; j < hi; j++)", "acc += "},
     {"atomicAdd(dst", "__launch_bounds__(1)", NULL}},
    {"a root reduction over an empty loop: the body inside the loop, never run",
     "x = arange(0).reshape(0, 9).float()\nprint(x.sum(0))\n",
     -1,
     {"a thread per output", "for (ix_t i0 = 0; i0 < a.e0; i0++) {\n            const ix_t o0 = ", NULL},
     {NULL}},
    {"an inner reduction over an empty loop: its identity, with no loop and no body",
     "x = arange(0).reshape(0, 9).float()\nprint(x.logsumexp(0))\n",
     -1,
     {"const f32 v1 = tdl_log(v0);", NULL},
     {"for (ix_t i1", NULL}},
    {"masked contraction",
     "i, j, k = dims(3)\na = (arange(12.0).reshape(3, 4))[i, k]\nb = (arange(20.0).reshape(4, 5))[k, j]\n"
     "print(where(k < 3, a * b, 0).sum(k).order(i, j))\n",
     -1,
     {"bcount(", "c_sum", NULL},
     {NULL}},
};

START_TEST(representative_kernels)
{
    bool nvrtc = have_nvrtc("compiling representative kernels");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *sh = &shapes[s];
        Kernels ks = {0};
        Text out = {0};
        tdl_status st = collect(sh->code, NULL, &ks, &out);
        ck_assert_msg(st == TDL_OK, "%s: the program fails", sh->name);
        ck_assert_msg(ks.n > 0, "%s: no kernel", sh->name);
        int k = sh->kernel < 0 ? ks.n + sh->kernel : sh->kernel;
        ck_assert_msg(k >= 0 && k < ks.n, "%s: %d kernels", sh->name, ks.n);
        const char *src = strstr(ks.src[k], "// ---- the kernel");    /* after the prelude */
        ck_assert_msg(src != NULL, "%s: no kernel in the dump", sh->name);
        for (int h = 0; h < 6 && sh->has[h]; h++)
            if (!strstr(src, sh->has[h])) {
                fprintf(stderr, "%s\n", src);
                ck_abort_msg("%s: the source (on stderr) lacks \"%s\"", sh->name, sh->has[h]);
            }
        for (int h = 0; h < 3 && sh->hasnt[h]; h++)
            if (strstr(src, sh->hasnt[h])) {
                fprintf(stderr, "%s\n", src);
                ck_abort_msg("%s: the source (on stderr) has \"%s\"", sh->name, sh->hasnt[h]);
            }
        if (nvrtc)
            for (int q = 0; q < ks.n; q++) {
                char *c = source_of(ks.src[q]);
                double ms = compile_ok(c, 90, sh->name);
                if (q == k)
                    fprintf(stderr, "cuda: cold compile, %s: %.0f ms\n", sh->name, ms);
                compile_ok(c, 80, sh->name);
                free(c);
            }
        kernels_free(&ks);
        free(out.buf);
    }
    if (nvrtc)
        for (FcDType dt = FC_INT32; dt <= FC_FLOAT64; dt++) {
            char *c = fc_cuda_matmul_source(dt);
            ck_assert_ptr_nonnull(c);
            double ms = compile_ok(c, 90, "the matrix product");
            fprintf(stderr, "cuda: cold compile, the matrix product (%s): %.0f ms\n", fc_dtype_name(dt), ms);
            free(c);
        }
}
END_TEST

/* How many times needle occurs in [from, to). */
static int count_in(const char *from, const char *to, const char *needle)
{
    int n = 0;
    for (const char *q = strstr(from, needle); q && q < to; q = strstr(q + 1, needle))
        n++;
    return n;
}

/* roi_align's kernel takes the shared precomputation (fcdim's fc_kplan_pre): its coordinates
 * and weights, which vary along (box, bin, sample) but not along the channel, are computed once
 * per point of their own loops by tdl_pre, into tables the kernel reads, not by every thread
 * (one per box, channel and bin) again. In run() only the batch index is converted to an
 * integer (y.long() and x.long() are tdl_pre's), and the four weights and the four tap indices
 * are read from the tables. The sources compile for sm_80 and sm_90; kernels_run_on_the_host
 * runs roi_align's against the CPU executor. */
START_TEST(roi_align_precomputed)
{
    const char *code = "import vision\nx = randn(2, 8, 16, 20, seed=0)\n"
                       "boxes = tensor([[0, 1.0, 1.0, 9.0, 7.0], [1, 4.5, 2.0, 19.0, 15.5], [1, -3.0, 10.0, 6.0, 20.0]])\n"
                       "y = vision.roi_align(x, boxes, (3, 3), sampling_ratio=2, aligned=True)\nprint(y.sum().item())\n";
    Kernels ks = {0};
    Text out = {0};
    ck_assert_int_eq(collect(code, NULL, &ks, &out), TDL_OK);
    const char *src = NULL;
    for (int q = 0; q < ks.n && !src; q++) {
        const char *k = strstr(ks.src[q], "// ---- the kernel");
        if (k && strstr(k, "bcount(") && strstr(k, "gix("))     /* the sum over the samples */
            src = k;
    }
    ck_assert_msg(src != NULL, "no roi_align kernel among %d", ks.n);
    const char *run = strstr(src, "void run(const Args &a)"), *pre = strstr(src, "void __launch_bounds__(256) tdl_pre(");
    if (!run || !pre || pre < run) {
        fprintf(stderr, "%s\n", src);
        ck_abort_msg("roi_align's kernel (on stderr) has no tdl_pre after run()");
    }
    const char *end = src + strlen(src);
    int conv_run = count_in(run, pre, "f64_to_int64("), conv_pre = count_in(pre, end, "f64_to_int64(");
    int wts = count_in(run, pre, "((const f32 *)a.pre)["), idx = count_in(run, pre, "((const int64 *)a.pre)[");
    if (conv_run != 1 || conv_pre < 2 || wts != 4 || idx != 4) {
        fprintf(stderr, "%s\n", src);
        ck_abort_msg("roi_align's kernel (on stderr): %d conversions to int in run(), %d in tdl_pre, %d weights and "
                     "%d indices read from tables (want 1, >= 2, 4, 4)", conv_run, conv_pre, wts, idx);
    }
    ck_assert_ptr_nonnull(strstr(src, "values read from tables that tdl_pre fills first"));
    if (have_nvrtc("compiling roi_align's kernel"))
        for (int q = 0; q < ks.n; q++) {
            char *c = source_of(ks.src[q]);
            compile_ok(c, 90, "roi_align");
            compile_ok(c, 80, "roi_align");
            free(c);
        }
    kernels_free(&ks);
    free(out.buf);
}
END_TEST

/* The generator says which instructions it has code for, with the message its refusal of a
 * kernel holding one gives (FcBackend.supports; the CPU's in test_cpu_backend.c). */
START_TEST(cuda_supports)
{
    FcError e;
    FcInstr in = {.op = FC_OP_AND, .dtype = FC_FLOAT32, .src_dtype = FC_FLOAT32, .a = 0, .b = 1, .c = -1};
    ck_assert_int_eq(fc_cuda_supports(&in, FC_FLOAT32, &e), FC_ERR_TYPE);
    ck_assert_str_eq(e.msg, "cuda kernel: bitwise_and is not supported for float32");
    in.dtype = in.src_dtype = FC_BOOL;
    ck_assert_int_eq(fc_cuda_supports(&in, FC_BOOL, &e), FC_OK);
    in = (FcInstr){.op = FC_OP_LT, .dtype = FC_BOOL, .src_dtype = FC_FLOAT64, .a = 0, .b = 1, .c = -1};
    ck_assert_int_eq(fc_cuda_supports(&in, FC_FLOAT64, &e), FC_OK);
    in.dtype = FC_INT32;
    ck_assert_int_eq(fc_cuda_supports(&in, FC_FLOAT64, &e), FC_ERR_TYPE);
    ck_assert_str_eq(e.msg, "cuda kernel: lt gives bool, not int32");
    const FcTarget *t = &fc_cuda_target;
    ck_assert_str_eq(t->name, "cuda");
}
END_TEST

/* The CPU executor and the generator take the same instructions: the pointwise ops at the dtypes
 * that ops.def gives code for (a CPU expression and a CUDA template in one row), and the same
 * reductions from each dtype into each. */
START_TEST(cuda_supports_as_cpu)
{
    static const FcDType dts[] = {FC_BOOL, FC_INT32, FC_INT64, FC_FLOAT32, FC_FLOAT64};
    enum { ND = sizeof dts / sizeof dts[0] };
    FcBackend *cpu = NULL;
    FcError e;
    ck_assert_int_eq(fc_backend_open(FC_DEV_CPU, 0, 1, false, &cpu, &e), FC_OK);
    int taken = 0;
    for (FcOp op = FC_OP_NONE; op < FC_OP__COUNT; op++) {
        /* x + y * z: MULADD (fused, but with a row of its own in ops.def) and FMA */
        bool muladd = op == FC_OP_MULADD || op == FC_OP_FMA;
        bool pointwise = (fc_op_is_unary(op) || fc_op_is_binary(op) || muladd) && op != FC_OP_CAST;
        if (!pointwise && !fc_op_is_reduce(op))
            continue;
        for (int i = 0; i < ND; i++)
            for (int j = 0; j < ND; j++) {
                bool to_bool = op == FC_OP_ISNAN || fc_op_is_compare(op);
                if (pointwise && dts[j] != (to_bool ? FC_BOOL : dts[i]))
                    continue;
                FcInstr in = {.op = op, .dtype = dts[j], .src_dtype = dts[i], .a = 0,
                              .b = fc_op_is_binary(op) || muladd ? 1 : -1, .c = muladd ? 2 : -1};
                FcStatus c = cpu->supports(cpu, &in, dts[i], &e), g = fc_cuda_supports(&in, dts[i], &e);
                ck_assert_msg(c == g, "%s of %s into %s: cpu %d, cuda %d", fc_op_name(op), fc_dtype_name(dts[i]),
                              fc_dtype_name(dts[j]), c, g);
                taken += pointwise && c == FC_OK;
            }
    }
    /* the fused select: at the compared dtypes and comparisons both take, into every dtype */
    static const FcDType all[] = {FC_BOOL, FC_UINT8, FC_INT8, FC_INT16, FC_INT32, FC_INT64, FC_FLOAT16,
                                  FC_BFLOAT16, FC_FLOAT32, FC_FLOAT64};
    int fused = 0;
    for (FcOp cmp = FC_OP_NONE; cmp < FC_OP__COUNT; cmp++)
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            for (size_t j = 0; j < sizeof all / sizeof *all; j++) {
                FcInstr in = {.op = FC_OP_WHERE_CMP, .cmp = cmp, .dtype = all[j], .src_dtype = all[i], .a = 0, .b = 1,
                              .c = 2};
                FcStatus c = cpu->supports(cpu, &in, all[i], &e), g = fc_cuda_supports(&in, all[i], &e);
                ck_assert_msg(c == g, "where_cmp %s of %s into %s: cpu %d, cuda %d", fc_op_name(cmp),
                              fc_dtype_name(all[i]), fc_dtype_name(all[j]), c, g);
                fused += c == FC_OK;
            }
    ck_assert_int_eq(fused, 6 * 4 * 10);    /* EQ..GE of int32, int64, float32, float64 */
    int rows = 0
#define FLOAT(NAME, form, cpu, cuda) + 2
#define INT(NAME, form, cpu, cuda) + 2
#define BOOL(NAME, form, cpu, cuda) + 1
#define COMPARE(NAME, cpu, cuda) + ND
#include "ops.def"
        ;
    ck_assert_int_eq(taken, rows);
    cpu->destroy(cpu);
}
END_TEST

/* Without --dump-cuda, --dump-kernels shows no CUDA for CPU kernels: its text is unchanged. */
START_TEST(cpu_dump_unchanged)
{
    Kernels ks = {0};
    tdl_config cfg = {0};
    cfg.flags = TDL_DUMP_KERNELS;
    cfg.dump = on_dump;
    cfg.dump_ud = &ks;
    cfg.write = sink;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_int_eq(tdl_run_string(T, "x = arange(10.0)\ny = (x * 2).exp()\nprint(y.sum())\n", "<t>"), TDL_OK);
    tdl_close(T);
    ck_assert_int_gt(ks.n, 0);
    for (int i = 0; i < ks.n; i++) {
        /* (a tensor's sum is no kernel on the CPU: fc_sum's, in PyTorch's order) */
        ck_assert(strncmp(ks.src[i], "kernel: ", 8) == 0 || strncmp(ks.src[i], "cascade sum ", 12) == 0);
        ck_assert(!strstr(ks.src[i], "__global__"));
    }
    kernels_free(&ks);
}
END_TEST

/* The same structure on other sizes and scalars is the same source (so it hits the cache). */
START_TEST(source_independent_of_numbers)
{
    Kernels a = {0}, b = {0};
    ck_assert_int_eq(collect("x = arange(1000.0)\nprint((x * 3 + 1).sin().sum() > 0)\n", NULL, &a, NULL), TDL_OK);
    ck_assert_int_eq(collect("x = arange(2000.0)\nprint((x * 5 + 2).sin().sum() > 0)\n", NULL, &b, NULL), TDL_OK);
    ck_assert_int_eq(a.n, b.n);
    for (int i = 0; i < a.n; i++) {
        char *x = source_of(a.src[i]), *y = source_of(b.src[i]);
        ck_assert_str_eq(x, y);
        ck_assert_str_ne(a.src[i], b.src[i]);     /* the argument values differ */
        free(x);
        free(y);
    }
    kernels_free(&a);
    kernels_free(&b);
}
END_TEST

/* ---- each entry point a module of its own ---- */

typedef struct Codes {
    CudaCode c[16];
    int n;
} Codes;

static void codes_on_kernel(void *ud, const FcKernel *k, FcDevice dev)
{
    Codes *cs = ud;
    FcError err;
    if (dev.type == FC_DEV_CPU && cs->n < 16 && fc_cuda_codegen(k, &cs->c[cs->n], &err) == FC_OK)
        cs->n++;
}

/* The backend compiles the entry point a launch runs (and tdl_finish with it only for a split
 * block reduction) as a module: the source of a set of entries is the head and those entries
 * alone, the whole source is the head and then all of them, and each such source compiles. */
START_TEST(entry_points_alone)
{
    bool nvrtc = have_nvrtc("compiling each entry point alone");
    Codes cs = {0};
    tdl_interp *T = open_watching(codes_on_kernel, &cs);
    ck_assert_int_eq(tdl_run_string(T,
                                     "x = arange(4096.0).reshape(64, 64)\nprint(((x * 0.5 + 1).sin() * x)[0, :2])\n"
                                     "y = arange(100000.0).reshape(10, 10000)\nprint(y.sum(1)[:2])\n"
                                     "z = zeros(10)\nz.index_put_((tensor([1, 3, 1]),), tensor([1.0, 2.0, 3.0]), "
                                     "accumulate=True)\nprint(z[:2])\n"
                                     "w = zeros(50, 40, requires_grad=True)\n(w[(arange(300) * 7) % 50] * 2.0).sum()"
                                     ".backward()\n",
                                     "<t>"),
                     TDL_OK);
    tdl_close(T);
    static const char *const names[CUDA_NENTRY] = {"tdl_s(",    "tdl_v(",    "tdl_finish(", "tdl_pre(",
                                                   "tdl_keys(", "tdl_scan(", "tdl_fill(",   "tdl_order("};
    const unsigned sort = 1u << CUDA_ENTRY_KEYS | 1u << CUDA_ENTRY_SCAN | 1u << CUDA_ENTRY_FILL | 1u << CUDA_ENTRY_ORDER;
    bool seen_v = false, seen_finish = false, seen_sorted = false;
    ck_assert_int_ge(cs.n, 3);
    for (int i = 0; i < cs.n; i++) {
        const CudaCode *c = &cs.c[i];
        ck_assert_msg(c->head > 0 && c->head <= c->len, "kernel %d: head %zu of %zu", i, c->head, c->len);
        ck_assert_int_eq(c->ent_off[CUDA_ENTRY_FINISH], c->head);
        ck_assert_int_eq(c->ent_off[CUDA_ENTRY_PRE], c->head + c->ent_len[CUDA_ENTRY_FINISH]);
        for (int e = CUDA_ENTRY_KEYS; e <= CUDA_ENTRY_ORDER; e++) {
            ck_assert_int_eq(c->ent_off[e], c->ent_off[e - 1] + c->ent_len[e - 1]);
            ck_assert_int_eq(c->ent_len[e] > 0, c->mode == CUDA_SORTED);
        }
        ck_assert_int_eq(c->ent_off[CUDA_ENTRY_S], c->ent_off[CUDA_ENTRY_ORDER] + c->ent_len[CUDA_ENTRY_ORDER]);
        ck_assert_int_eq(c->ent_off[CUDA_ENTRY_V], c->ent_off[CUDA_ENTRY_S] + c->ent_len[CUDA_ENTRY_S]);
        ck_assert_int_eq(c->ent_off[CUDA_ENTRY_V] + c->ent_len[CUDA_ENTRY_V], c->len);
        ck_assert_int_eq(c->ent_len[CUDA_ENTRY_V] > 0, c->vec);
        ck_assert_int_eq(c->ent_len[CUDA_ENTRY_FINISH] > 0, c->mode == CUDA_BLOCK_REDUCE);
        seen_v |= c->vec;
        seen_finish |= c->mode == CUDA_BLOCK_REDUCE;
        seen_sorted |= c->mode == CUDA_SORTED;
        ck_assert_ptr_null(fc_cuda_entries_source(c, 0));
        char *all = fc_cuda_entries_source(c, 7);
        ck_assert_int_eq(all != NULL, c->vec && c->mode == CUDA_BLOCK_REDUCE);
        free(all);
        for (unsigned set = 1; set < 1u << CUDA_NENTRY; set++) {
            char *src = fc_cuda_entries_source(c, set);
            size_t len = c->head;
            bool have = true;
            for (int e = 0; e < CUDA_NENTRY; e++)
                if (set >> e & 1) {
                    have &= c->ent_len[e] > 0;
                    len += c->ent_len[e];
                }
            ck_assert_int_eq(src != NULL, have);
            if (!src)
                continue;
            ck_assert_int_eq(strlen(src), len);
            ck_assert(strncmp(src, c->src, c->head) == 0);
            for (int o = 0; o < CUDA_NENTRY; o++)
                ck_assert_msg((strstr(src, names[o]) != NULL) == (set >> o & 1), "kernel %d, entries %u: has %s?\n%s",
                              i, set, names[o], src);
            /* One entry alone, the pair a split launch loads and a sorted store's five compile by
             * themselves. */
            bool compiled = set == 1u << CUDA_ENTRY_S || set == 1u << CUDA_ENTRY_V ||
                            set == (1u << CUDA_ENTRY_S | 1u << CUDA_ENTRY_FINISH) || set == (1u << CUDA_ENTRY_S | sort);
            if (nvrtc && compiled) {
                compile_ok(src, 90, "entry points alone");
                compile_ok(src, 80, "entry points alone");
            }
            free(src);
        }
        fc_cuda_code_free(&cs.c[i]);
    }
    ck_assert(seen_v && seen_finish && seen_sorted);
}
END_TEST

/* ---- the compile cache ---- */

static char cache_dir[256];

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* The one entry file in cache_dir/sub (its path into p), and how many files there are. */
static int entries(const char *dir, char *p, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        n++;
        snprintf(p, cap, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return n;
}

static const char tiny[] =
    "extern \"C\" __global__ void tdl_s(float *o, const float *a, long long n)\n"
    "{\n"
    "    for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
    "        o[i] = a[i] * 2.0f + 1.0f;\n"
    "}\n";

static FcCudaFrom build_from(FcCudaCache *c, const char *src, int sm, void **img, size_t *len)
{
    FcCudaBuild b;
    FcError err;
    ck_assert_int_eq(fc_cuda_compile(c, src, sm, &b, &err), FC_OK);
    if (img) {
        *img = b.image;
        *len = b.len;
    } else {
        free(b.image);
    }
    free(b.log);
    return b.from;
}

START_TEST(cache_memory_and_disk)
{
    if (!have_nvrtc("the compile cache"))
        return;
    snprintf(cache_dir, sizeof cache_dir, "/tmp/tdl-cuda-cache-%ld/sub/dir", (long)getpid());
    FcCudaCache *c = fc_cuda_cache_new(cache_dir);
    ck_assert_str_eq(fc_cuda_cache_dir(c), cache_dir);
    void *img1, *img2;
    size_t len1, len2;
    ck_assert_int_eq(build_from(c, tiny, 90, &img1, &len1), FC_CUDA_COMPILED);
    ck_assert_int_eq(build_from(c, tiny, 90, NULL, NULL), FC_CUDA_FROM_MEMORY);
    ck_assert_int_eq(build_from(c, tiny, 80, NULL, NULL), FC_CUDA_COMPILED);     /* another architecture */
    FcCudaCacheStats s = fc_cuda_cache_stats(c);
    ck_assert_int_eq(s.compiled, 2);
    ck_assert_int_eq(s.memory_hits, 1);
    ck_assert_int_eq(s.disk_written, 2);
    ck_assert(s.compile_ms > 0);
    fc_cuda_cache_free(c);
    /* A new cache (a new process) finds both on disk, byte for byte. */
    char path[600];
    ck_assert_int_eq(entries(cache_dir, path, sizeof path), 2);
    c = fc_cuda_cache_new(cache_dir);
    ck_assert_int_eq(build_from(c, tiny, 90, &img2, &len2), FC_CUDA_FROM_DISK);
    ck_assert_uint_eq(len1, len2);
    ck_assert(memcmp(img1, img2, len1) == 0);
    free(img2);
    ck_assert_int_eq(build_from(c, tiny, 90, NULL, NULL), FC_CUDA_FROM_MEMORY);
    fc_cuda_cache_free(c);
    rm_dir(cache_dir);
    /* Corrupt entries: a flipped byte in the image, a truncated file, another key under the
     * same name. Each is compiled again and replaced. */
    for (int how = 0; how < 3; how++) {
        c = fc_cuda_cache_new(cache_dir);
        ck_assert_int_eq(build_from(c, tiny, 90, NULL, NULL), FC_CUDA_COMPILED);
        fc_cuda_cache_free(c);
        ck_assert_int_eq(entries(cache_dir, path, sizeof path), 1);
        FILE *f = fopen(path, "r+b");
        ck_assert_ptr_nonnull(f);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        if (how == 0) {
            fseek(f, size - 100, SEEK_SET);
            int ch = fgetc(f);
            fseek(f, size - 100, SEEK_SET);
            fputc(ch ^ 0x5a, f);
            fclose(f);
        } else if (how == 1) {
            fclose(f);
            ck_assert_int_eq(truncate(path, size / 2), 0);
        } else {
            fseek(f, 48 + 40, SEEK_SET);    /* inside the key (the header is 48 bytes) */
            fputc('#', f);
            fclose(f);
        }
        c = fc_cuda_cache_new(cache_dir);
        ck_assert_int_eq(build_from(c, tiny, 90, &img2, &len2), FC_CUDA_COMPILED);
        s = fc_cuda_cache_stats(c);
        ck_assert_int_eq(s.disk_rejected, 1);
        ck_assert_int_eq(s.disk_written, 1);
        ck_assert_uint_eq(len2, len1);
        free(img2);
        fc_cuda_cache_free(c);
        c = fc_cuda_cache_new(cache_dir);
        ck_assert_int_eq(build_from(c, tiny, 90, NULL, NULL), FC_CUDA_FROM_DISK);
        fc_cuda_cache_free(c);
        rm_dir(cache_dir);
    }
    free(img1);
    /* Memory only: "" and TDL_CACHE_DIR=off write nothing. */
    c = fc_cuda_cache_new("");
    ck_assert_int_eq(build_from(c, tiny, 90, NULL, NULL), FC_CUDA_COMPILED);
    ck_assert_int_eq(build_from(c, tiny, 90, NULL, NULL), FC_CUDA_FROM_MEMORY);
    ck_assert_int_eq(fc_cuda_cache_stats(c).disk_written, 0);
    fc_cuda_cache_free(c);
    char *saved = env_save("TDL_CACHE_DIR");
    setenv("TDL_CACHE_DIR", "off", 1);
    c = fc_cuda_cache_new(NULL);
    ck_assert_str_eq(fc_cuda_cache_dir(c), "");
    fc_cuda_cache_free(c);
    setenv("TDL_CACHE_DIR", cache_dir, 1);
    c = fc_cuda_cache_new(NULL);
    ck_assert_str_eq(fc_cuda_cache_dir(c), cache_dir);
    fc_cuda_cache_free(c);
    unsetenv("TDL_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/x/y", 1);
    c = fc_cuda_cache_new(NULL);
    ck_assert_str_eq(fc_cuda_cache_dir(c), "/x/y/tdl/cuda");
    fc_cuda_cache_free(c);
    unsetenv("XDG_CACHE_HOME");
    env_restore("TDL_CACHE_DIR", saved);
    char top[300];
    snprintf(top, sizeof top, "/tmp/tdl-cuda-cache-%ld/sub", (long)getpid());
    rmdir(top);
    snprintf(top, sizeof top, "/tmp/tdl-cuda-cache-%ld", (long)getpid());
    rmdir(top);
}
END_TEST

START_TEST(compile_error_report)
{
    if (!have_nvrtc("the compile error report"))
        return;
    FcCudaBuild b;
    FcError err;
    const char *bad = "extern \"C\" __global__ void tdl_s(int *o)\n{\n    o[0] = undefined_name;\n}\n";
    ck_assert_int_eq(fc_cuda_compile(NULL, bad, 90, &b, &err), FC_ERR_RUNTIME);
    ck_assert_msg(strncmp(err.msg, "the CUDA kernel does not compile: ", 34) == 0, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "undefined_name"), "%s", err.msg);
    ck_assert_ptr_nonnull(b.log);
    ck_assert_msg(strstr(b.log, "    3      o[0] = undefined_name;"), "%s", b.log);
    ck_assert_ptr_null(b.image);
    free(b.log);
    /* An architecture older than anything NVRTC compiles for. */
    ck_assert_int_eq(fc_cuda_compile(NULL, tiny, 10, &b, &err), FC_ERR_DEVICE);
    ck_assert_msg(strstr(err.msg, "does not compile for sm_10"), "%s", err.msg);
}
END_TEST

/* ---- the generated source run on the host, against the CPU ---- */

/* Programs whose kernels cover the code generator's paths: every mode, vector widths, dtypes,
 * gathers with negative indices, bounds of both kinds, fills, nested and fused reductions,
 * arg reductions, scatters, casts, integer division (and by zero). */
static const char *const emu_programs[] = {
    "x = (arange(64 * 300.0) * 0.37).sin().reshape(64, 300)\nx64 = x.double() * 1.0001\n"
    "print(x.softmax(1)[0, :4], x64.log_softmax(-1)[3, :4], (x - x.mean(1, keepdim=True))[5, :4])\n"
    "print((x - x.amax(1, keepdim=True)).exp().sum(1)[:4], x.softmax(1).sum(), x64.softmax(0)[:2, :3])\n",
    "x = (arange(64 * 300.0) * 0.37).sin().reshape(64, 300)\nx64 = x.double() * 1.0001\n"
    "i, j = dims(2)\nv = x[i, j]\ne = x[i, 0].abs() * 40\n"
    "print(where(j < e, v, 0).sum(j).order(i)[:5])\n"
    "print(where((j < e) & (j <= x[i, 2].abs() * 50), v, 0).amax(j).order(i)[:5])\n"
    "print((where(j < e, v, 0) * where(j < e, v, 0)).sum(j).order(i)[:5])\n"
    "print(where(j < (x[i, 1].abs() * 40).long(), x64[i, j], 0).sum(j).order(i)[:5])\n"
    "print((where(e > j, v, 0).sum(j) / e.clamp(min=1)).order(i)[:5])\n",
    "feats = ((arange(4 * 16 * 20.0) * 0.13).cos()).reshape(4, 16, 20)\nb = tensor([0, 3, 1, 2, 3, 0])\n"
    "start = tensor([0.5, 3.2, 7.9, 1.1, 12.4, 5.0])\nn, c, k = dims(3)\nk.size = 8\n"
    "cnt = (start[n] * 0.7).ceil()\nxs = (start[n] + k * 1.3).clamp(max=19.0)\nxl = xs.floor().long()\nw = xs - xl\n"
    "val = feats[b[n]][c][xl] * (1 - w) + feats[b[n]][c][(xl + 1).clamp(max=19)] * w\n"
    "print((where(k < cnt, val, 0).sum(k) / cnt.clamp(min=1)).order(n, c)[:2, :4])\n",
    "x = arange(100000.0).reshape(10, 10000) * 0.001\nprint(x.sum(1), x.sum(), x.double().prod(1), x.amin(0)[:3])\n"
    "print(x.argmax(1), x.argmin(0)[:4], (x > 50).any(1), (x > -1).all(), (x > 5).sum(1))\n"
    "y = arange(40000.0).reshape(2, 20000)\nprint(y.sum(0)[:3], y.long().sum(0)[:3], y.int().amax(0)[:3])\n",
    "x = (arange(20000 * 20.0) * 0.37).sin().reshape(20000, 20)\n"
    "print((x - x.sum(1, keepdim=True)).exp().sum(1)[:3], x.double().cumsum(1)[0, :3] if False else 0)\n",
    "x = arange(1000.0).reshape(100, 10)\ni = tensor([3, -1, 7, 0, 99])\nprint(x[i] * 2, x[:, tensor([1, -2])])\n"
    "z = zeros(10)\nz.index_put_((tensor([1, 3, 1, 9]),), tensor([1.0, 2.0, 3.0, 4.0]), accumulate=True)\nprint(z)\n"
    "z[tensor([2, 2, 5])] = tensor([7.0, 8.0, 9.0])\nprint(z)\n"
    "s = zeros(3, 4).scatter_add_(0, tensor([[0, 1, 2, 0], [2, 2, 1, 1]]), ones(2, 4))\nprint(s)\n",
    "x = arange(-10, 10)\ny = tensor([3, -3, 4, -1] * 5)\nprint(x // y, x % y, x.fmod(y), x >> 2, x << 3, x.abs(), -x)\n"
    "print(gcd(x, y), lcm(x, y * 7), gcd(x.int(), tensor(-2147483648, dtype=int32)), fmax(x, y), fmin(x, y))\n"
    "g = tensor([0.0, -0.0, float('nan'), 1.5, -2.0, float('inf')] * 3)\nh = g.flip(0)\n"
    "print(copysign(g, h).tolist(), fmax(g, h).tolist(), fmin(g, h).double().tolist(), fmax(g.half(), h.half()).tolist())\n"
    "print(fmin(g.bfloat16(), h.bfloat16()).tolist(), copysign(x, y), signbit(g), fmax(x > 0, y > 0))\n"
    "print(logaddexp(f, f * 0.5 - 1).tolist(), logaddexp(g, h).double().tolist(), logaddexp(f.bfloat16(), g[:1].bfloat16()).tolist())\n"
    "print(asinh(f).tolist(), acosh(f.abs() + 1).double().tolist(), atanh(f / 8).tolist(), exp2(f).tolist(), exp2(x).tolist())\n"
    "f = x * 0.7\nprint(f // 0.3, f % -0.4, f.fmod(0.3), f.floor(), f.round(), f.long(), f.int(), f.bool())\n"
    "print((f / 0).long(), (-f / 0).int(), (f * 0 / 0).long(), x.float().sqrt(), f.exp(), f.sigmoid(), f.tanh())\n"
    "print(x.pow(2), (x + 11).pow(y.abs()), f.pow(2.5), f.relu(), f.sign(), f.clamp(-1, 2), x.max(y), f.min(f * -1))\n"
    "t = arange(-3000, 3000) * 0.0037\nu = zeros(5, 6000, dtype=float64)\n"
    "u[0] = t.tanh()\nu[1] = t.double().tanh()\nu[2] = (t * 1e-30).tanh()\nu[3] = (t.abs() * 3.1 + 1e-39).log()\n"
    "u[4] = (t.double().abs() * 1e-300 + 1e-320).log()\nprint(u.abs().sum(1), u[:, ::700])\n"
    "v = zeros(4, 6000, dtype=float64)\nv[0] = (t * 8.1).log1p()\nv[1] = (t.double() * 1e3).log1p()\n"
    "v[2] = (t * 9.5).expm1()\nv[3] = (t.double() * 70).expm1()\nprint(v[:, ::600], v.isnan().sum(1))\n"
    "print(tensor([0.0, -0.0, -1.0, float('inf'), float('nan'), 1.0]).log(), tensor([0.0, -2.0, 1.0], dtype=float64).log())\n",
    "x = arange(10)\nprint(x // tensor([1, 2, 0, 1, 1, 1, 1, 1, 1, 1]))\n",
    "a = arange(24.0).reshape(2, 3, 4)\nprint(a.permute(2, 0, 1).contiguous(), a.transpose(0, 2).sum(0), a[:, 1:, ::2] * 3)\n"
    "print(cat([a, a * 2], 1)[0], stack([a[0], a[1]]).amax(0), a.to(int32) + 1, a.double().exp()[1, 2])\n"
    "c = a.contiguous(memory_format=channels_last) if False else a\nprint(c.mean((0, 2)), c.var(1) if False else 0)\n",
    "i, j, k = dims(3)\na = (arange(12.0).reshape(3, 4))[i, k]\nb = (arange(20.0).reshape(4, 5))[k, j]\n"
    "print(where(k < 3, a * b, 0).sum(k).order(i, j), (a * b).sum(k).order(i, j))\n",
    /* Selects that compare with a constant (WHERE_CMP), either way round, at every compared dtype,
     * wide and not, inside a reduction's body. */
    "x = (arange(600.0) * 0.37).sin().reshape(20, 30)\nd = x.double()\ni = (x * 10).long()\nj = i.int()\n"
    "print(where(x > 0.25, x * 2, x - 1)[:2, :5], where(0.5 < x, 1.0, x).sum(1)[:4], where(d != 0.5, d, -d)[0, :3])\n"
    "print(where(i >= 3, i, -i).sum(0)[:4], where(j == 2, j, j * 3)[1, :6], where(x <= -0.5, 1, 0).sum(0)[:4])\n"
    "print(where(x[0] < 0.0, x, x * x).sum(1)[:3], where(x > 0.0, x > 0.5, x < -0.5).sum())\n",
    /* Reductions over an empty loop, at the root and inside: the identity, the body never run. */
    "x = arange(0).reshape(0, 9)\nf = x.float()\nprint(x.sum(0), x.prod(0), f.all(0), f.any(0), f.exp().amax(1))\n"
    "print(f.logsumexp(0), f.sum(0) + 1, f.reciprocal().prod(0) * 2, x.all(0).long().sum(), f.mean(0))\n"
    "w = zeros(300, 0).contiguous()\nprint(w.sum(1)[:3], w.logsumexp(1).amax(), w.all(1).sum(), w.sum())\n"
    "print(zeros(5, 3)[4, tensor([False, False, False])].logsumexp(0))\n"
    "i, j = dims(2)\nt = f[i, j]\nprint(t.sum(i), (t.exp().sum(i) * 2).order(j), (t.logsumexp(i) + t.all(i)).order(j))\n",
    /* Gradients' scatter-adds split over owner loops: a gather's row, a gather's column (x[idx]),
     * the channels of an interpolation through first-class dims; the CPU's bits. */
    "x = zeros(64, 300, requires_grad=True)\n"
    "idx = (arange(64).reshape(64, 1) * 7 + (arange(200) * arange(200) * 13).reshape(1, 200)) % 300\n"
    "w = (arange(64 * 200.0) * 0.37).cos().reshape(64, 200)\n(x.gather(1, idx) * w).sum().backward()\n"
    "print(x.grad[:2, :6])\ny = zeros(50, 40, requires_grad=True)\n"
    "(y[(arange(300) * arange(300) * 7) % 50] * (arange(300 * 40.0) * 0.61).sin().reshape(300, 40)).sum().backward()\n"
    "print(y.grad[:2, :5])\n"
    "feats = ((arange(4 * 16 * 20.0) * 0.13).cos()).reshape(4, 16, 20).requires_grad_()\nb = tensor([0, 3, 1, 2, 3, 0])\n"
    "start = tensor([0.5, 3.2, 7.9, 1.1, 12.4, 5.0])\nn, c, k = dims(3)\nk.size = 8\n"
    "cnt = (start[n] * 0.7).ceil()\nxs = (start[n] + k * 1.3).clamp(max=19.0)\nxl = xs.floor().long()\nw = xs - xl\n"
    "val = feats[b[n]][c][xl] * (1 - w) + feats[b[n]][c][(xl + 1).clamp(max=19)] * w\n"
    "(where(k < cnt, val, 0).sum(k) / cnt.clamp(min=1)).order(n, c).sum().backward()\nprint(feats.grad[0, :2, :6])\n",
    /* roi_align's backward: its four taps' scatter-adds (one kernel each by default,
     * FC_SCHED_TERMS), split over the channels, no atomics; the CPU's bits. */
    "import vision\nx = (arange(2 * 40 * 10 * 12.0) * 0.1).sin().reshape(2, 40, 10, 12).requires_grad_()\n"
    "b = tensor([[0, 1.0, 1.5, 8.0, 7.0], [1, 0.5, 0.5, 5.0, 9.0], [0, -2.0, 3.0, 14.0, 2.0]])\n"
    "(vision.roi_align(x, b, (3, 3), 1.0, 0, True) * (arange(3 * 40 * 9.0) * 0.37).cos().reshape(3, 40, 3, 3)).sum().backward()\n"
    "print(x.grad[0, :2, :3, :4])\n",
    /* roi_align's backward sorted by destination (CUDA_SORTED): overlapping boxes on two images,
     * so long runs per pixel, fixed and adaptive sampling (whose records past a box's grid the
     * gate leaves out), float32 and float64; the CPU's bits. */
    "import vision\nx = (arange(2 * 6 * 9 * 11.0) * 0.7).sin().reshape(2, 6, 9, 11).requires_grad_()\n"
    "b = tensor([[0, 1.0, 1.0, 9.0, 7.0], [0, 1.5, 0.5, 9.5, 8.0], [1, 0.0, 0.0, 10.0, 8.0], [0, 2.0, 2.0, 3.0, 3.0],\n"
    "            [1, 4.0, 1.0, 10.5, 8.5], [0, -1.0, -1.0, 20.0, 4.0], [1, 6.0, 6.0, 6.0, 6.0], [0, 5.0, 5.0, 2.0, 1.0]])\n"
    "g = (arange(8 * 6 * 4 * 4.0) * 0.29).cos().reshape(8, 6, 4, 4)\n"
    "(vision.roi_align(x, b, (4, 4), 1.0, 2, False) * g).sum().backward()\nprint(x.grad[1, 0, :3, :4])\n"
    "x.grad = None\n(vision.roi_align(x, b * tensor([1.0, 2, 2, 2, 2]), (4, 4), 0.5, 0, True) * g).sum().backward()\nprint(x.grad[0, 1, :3, :4])\n"
    "d = x.detach().double().requires_grad_()\n(vision.roi_align(d, b.double(), (4, 4), 1.0, 0, False) * g.double()).sum().backward()\n"
    "print(d.grad[0, 0, :2, :4])\n",
    /* Sorted with many destinations: 9000 pixels, five of tdl_scan's tiles of 2048 keys on the
     * emulation's three blocks (a block takes several; the last to finish scans the tiles' sums). */
    "import vision\nx = (arange(2 * 90 * 100.0) * 0.3).sin().reshape(1, 2, 90, 100).requires_grad_()\n"
    "b = tensor([[0, 1.0, 2.0, 95.0, 85.0], [0, 30.0, 10.0, 70.0, 60.0], [0, -5.0, 40.0, 50.0, 100.0]])\n"
    "(vision.roi_align(x, b, (6, 6), 1.0, 3, False) * (arange(3 * 2 * 36.0) * 0.41).cos().reshape(3, 2, 6, 6)).sum().backward()\n"
    "print(x.grad[0, 1, 40:42, 30:36])\n",
    /* A scatter index computed by a reduction in the store's own kernel: no sort (tdl_keys computes
     * point by point), split over the owner loop (the columns) instead (CUDA_OWNER). */
    "y = zeros(50, 40, requires_grad=True)\ni = ((arange(300 * 5).reshape(300, 5) * 7) % 50).amax(1)\n"
    "(y[i] * (arange(300 * 40.0) * 0.61).sin().reshape(300, 40)).sum().backward()\nprint(y.grad[:2, :5])\n",
    /* An empty loop inside huge ones: no trip of the huge ones (it hung on an H200 for 2^80). */
    "x = zeros(2**40, 2**40, 0)\nprint(x.sum(), x.double().mean(), zeros(2, 2**40, 3, 0).sum((1, 3)) + 2)\n"
    "print(zeros(2**36, 3, 0).sum((0, 2)), zeros(4, 2**40, 0).amax((1, 2)) if False else 0)\n",
};

START_TEST(kernels_run_on_the_host)
{
#if defined(__SANITIZE_ADDRESS__)
    fprintf(stderr, "cuda: the host runs of CUDA sources skipped: their coroutines (swapcontext) confuse ASan\n");
    return;
#endif
    Emu e;
    if (!emu_init(&e)) {
        fprintf(stderr, "cuda: the host runs of CUDA sources skipped: no g++\n");
        emu_free(&e);
        return;
    }
    for (size_t p = 0; p < sizeof emu_programs / sizeof emu_programs[0]; p++)
        emu_program(&e, emu_programs[p], NULL);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        emu_program(&e, shapes[s].code, NULL);
    if (access("examples/roi_align.tdl", R_OK) == 0)      /* the standard library's roi_align */
        emu_program(&e, NULL, "examples/roi_align.tdl");
    emu_report(&e, "representative programs");
    if (e.nfail)
        fprintf(stderr, "cuda: %d failures; the first:\n%s\n", e.nfail, e.fail);
    int nfail = e.nfail, checked = e.checked, sorted = e.sorted, owner = e.owner;
    emu_free(&e);
    ck_assert_msg(nfail == 0, "%d kernels compute other values than the CPU (the first on stderr)", nfail);
    ck_assert_int_gt(checked, 40);
    ck_assert_msg(sorted >= 8 && owner >= 1, "%d launches of stores sorted by destination, %d split over owner loops",
                  sorted, owner);
}
END_TEST

/* The kernels of a loop that gives a new Python number each time, as the backend runs a kept
 * kernel (cuda_run_prepared): the code generated for the first launch, its arguments laid out
 * from each launch's kernel. */
typedef struct Params {
    Emu e;
    CudaCode c0;
    EmuLaunch launch;
    int n, other_src;
} Params;

static void params_on_kernel(void *ud, const FcKernel *k, FcDevice dev)
{
    Params *p = ud;
    int64_t lo, hi;
    CudaCode c;
    FcError err;
    if (dev.type != FC_DEV_CPU || !out_span(k, &lo, &hi) || fc_cuda_codegen(k, &c, &err) != FC_OK)
        return;
    if (p->n++ == 0) {
        p->c0 = c;
        p->launch = emu_compile(&p->e, &p->c0);
    } else {
        p->other_src += strcmp(c.src, p->c0.src) != 0;
        fc_cuda_code_free(&c);
    }
    if (p->launch)
        emu_check(&p->e, k, &p->c0, p->launch, lo, hi);
}

/* Floating-point constants are parameters of the kept kernel (fcdim/kernel_cache.c): a hundred
 * fresh scalars (never two equal ones, which would share a register) make one kept kernel, one CUDA source (one module, one NVRTC compile), and each
 * launch of the first one's code computes with its own values, as the CPU does. */
START_TEST(kept_kernel_parameters)
{
    Params p = {0};
    bool emu = emu_init(&p.e);
#if defined(__SANITIZE_ADDRESS__)
    emu = false;
#endif
    if (!emu)
        fprintf(stderr, "cuda: the host runs of kept kernels' parameters skipped (no g++, or ASan)\n");
    tdl_interp *T = open_watching(params_on_kernel, &p);
    FcKernelCacheStats s0 = fc_kcache_stats(T->I.fc);
    ck_assert_int_eq(tdl_run_string(T,
                                     "x = (arange(3000.0) * 0.37).log1p()\n"
                                     "for i in range(100):\n"
                                     "    y = x * (i * 0.25 + 1) + (-1 - i / 8.0)\n"
                                     "    y.stride()\n",
                                     "<test>"),
                     TDL_OK);
    FcKernelCacheStats s1 = fc_kcache_stats(T->I.fc);
    tdl_close(T);
    ck_assert_int_eq(s1.kept, s0.kept + 1);
    ck_assert_uint_eq(s1.hits, s0.hits + 99);
    ck_assert_int_eq(p.n, 100);
    ck_assert_int_eq(p.other_src, 0);
    if (p.n > 0 && have_nvrtc("compiling a kept kernel's source")) {
        compile_ok(p.c0.src, 90, "a kept kernel with parameters");
        compile_ok(p.c0.src, 80, "a kept kernel with parameters");
    }
    if (emu) {
        emu_report(&p.e, "a kept kernel's parameters");
        if (p.e.nfail)
            fprintf(stderr, "cuda: %d failures; the first:\n%s\n", p.e.nfail, p.e.fail);
        ck_assert_int_eq(p.e.nfail, 0);
        ck_assert_int_ge(p.e.checked, 100);
    }
    if (p.n > 0)
        fc_cuda_code_free(&p.c0);
    emu_free(&p.e);
}
END_TEST

/* Every kernel of the script tests, run on the host against the CPU: slow (a g++ build per
 * kernel), so only with TDL_CUDA_HOST_SCRIPTS=1, or =NAME,NAME... for those scripts alone. */
START_TEST(script_kernels_run_on_the_host)
{
#if defined(__SANITIZE_ADDRESS__)
    fprintf(stderr, "cuda: the host runs of CUDA sources skipped: their coroutines (swapcontext) confuse ASan\n");
    return;
#endif
    const char *only = getenv("TDL_CUDA_HOST_SCRIPTS");
    if (!only) {
        fprintf(stderr, "cuda: the host runs of the script tests' kernels skipped (set TDL_CUDA_HOST_SCRIPTS=1)\n");
        return;
    }
    Emu e;
    if (!emu_init(&e)) {
        fprintf(stderr, "cuda: the host runs of CUDA sources skipped: no g++\n");
        emu_free(&e);
        return;
    }
    char cwd[4096];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir("tests/scripts"), 0);
    DIR *d = opendir(".");
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len <= 4 || strcmp(de->d_name + len - 4, ".tdl") != 0)
            continue;
        bool listed = strcmp(only, "1") == 0;
        for (const char *p = only; !listed && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
            size_t n = strcspn(p, ",");
            listed = n == len - 4 && strncmp(p, de->d_name, n) == 0;
        }
        if (listed)
            emu_program(&e, NULL, de->d_name);
    }
    closedir(d);
    ck_assert_int_eq(chdir(cwd), 0);
    emu_report(&e, "the script tests");
    if (e.nfail)
        fprintf(stderr, "cuda: %d failures; the first:\n%s\n", e.nfail, e.fail);
    int nfail = e.nfail;
    emu_free(&e);
    ck_assert_msg(nfail == 0, "%d kernels compute other values than the CPU (the first on stderr)", nfail);
}
END_TEST

/* ---- devices ---- */

/* Whether a CUDA device is here (the driver and device 0). */
static bool have_device(char *why, size_t cap)
{
    FcBackend *be = NULL;
    FcError err;
    FcStatus st = fc_cuda_backend_new(0, &be, &err);
    if (st == FC_OK) {
        be->destroy(be);
        return true;
    }
    snprintf(why, cap, "%s", err.msg);
    return false;
}

START_TEST(no_device_is_a_device_error)
{
    char why[512];
    if (have_device(why, sizeof why)) {
        fprintf(stderr, "cuda: the no-driver test skipped: this machine has a CUDA device\n");
        return;
    }
    FcBackend *be = NULL;
    FcError err;
    ck_assert_int_eq(fc_cuda_backend_new(0, &be, &err), FC_ERR_DEVICE);
    ck_assert_ptr_null(be);
    /* The interpreter: a DeviceError that says why, and it goes on. */
    Text out = {0};
    tdl_config cfg = {0};
    cfg.write = sink;
    cfg.write_ud = &out;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_int_eq(tdl_run_string(T, "x = zeros(3, device='cuda')\n", "<t>"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_DEVICE);
    char want[600];
    snprintf(want, sizeof want, "device cuda:0 is not available: %s", why);
    ck_assert_str_eq(tdl_error_message(T), want);
    ck_assert_int_eq(tdl_run_string(T, "print(arange(3).cuda())\n", "<t>"), TDL_ERROR);
    ck_assert_str_eq(tdl_error_message(T), want);
    ck_assert_int_eq(tdl_run_string(T, "print(arange(3) + 1)\n", "<t>"), TDL_OK);
    ck_assert_str_eq(out.buf, "tensor([1, 2, 3])\n");
    tdl_close(T);
    free(out.buf);
    if (access("/usr/lib/x86_64-linux-gnu/libcuda.so.1", F_OK) != 0 && access("/usr/lib64/libcuda.so.1", F_OK) != 0 &&
        access("/usr/lib/libcuda.so.1", F_OK) != 0)
        ck_assert_str_eq(why, "no CUDA driver (libcuda.so.1 not found)");
}
END_TEST

/* With a GPU: programs print on cuda:0 what they print on the CPU (the device suffix aside). */
static const char *const device_programs[] = {
    "x = arange(12.0, device=D).reshape(3, 4)\nprint(((x * 2 + 1).sin() * x).cpu())\n",
    "x = arange(1000.0, device=D)\nprint(x.sum().cpu(), x.amax().cpu(), x.argmax().cpu())\n",
    "x = (arange(64 * 300.0, device=D) * 0.37).sin().reshape(64, 300)\nprint(x.softmax(1)[:2, :5].cpu())\n",
    "x = arange(100.0, device=D).reshape(10, 10)\ni = tensor([3, -1, 7], device=D)\nprint(x[i].cpu())\n",
    "i, j = dims(2)\nx = (arange(64 * 300.0, device=D) * 0.37).sin().reshape(64, 300)\n"
    "v = x[i, j]\ne = x[i, 0].abs() * 40\nprint(where(j < e, v, 0).sum(j).order(i)[:6].cpu())\n",
    "z = zeros(10, device=D)\nz.index_put_((tensor([1, 3, 1, 9], device=D),), tensor([1.0, 2.0, 3.0, 4.0], device=D), "
    "accumulate=True)\nprint(z.cpu())\n",
    "a = arange(12.0, device=D).reshape(3, 4)\nb = arange(20.0, device=D).reshape(4, 5)\nprint((a @ b).cpu())\n",
    "x = arange(10, device=D)\nprint((x // 3).cpu(), (x % 4).cpu(), x.cpu().cuda().cpu())\n",
};

START_TEST(programs_on_the_gpu)
{
    char why[512];
    if (!have_device(why, sizeof why)) {
        fprintf(stderr, "cuda: the GPU tests skipped: %s\n", why);
        return;
    }
    for (size_t p = 0; p < sizeof device_programs / sizeof device_programs[0]; p++) {
        Text cpu = {0}, gpu = {0};
        for (int dev = 0; dev < 2; dev++) {
            tdl_config cfg = {0};
            cfg.write = sink;
            cfg.write_ud = dev ? &gpu : &cpu;
            tdl_interp *T = tdl_open(&cfg);
            char code[2048];
            snprintf(code, sizeof code, "D = '%s'\n%s", dev ? "cuda" : "cpu", device_programs[p]);
            tdl_status st = tdl_run_string(T, code, "<t>");
            ck_assert_msg(st == TDL_OK, "program %zu on %s: %s", p, dev ? "cuda" : "cpu", tdl_error_message(T));
            tdl_close(T);
        }
        ck_assert_msg(cpu.buf && gpu.buf && strcmp(cpu.buf, gpu.buf) == 0, "program %zu:\ncpu:\n%s\ncuda:\n%s", p,
                      cpu.buf, gpu.buf);
        free(cpu.buf);
        free(gpu.buf);
    }
}
END_TEST

Suite *cuda_suite(void)
{
    Suite *s = suite_create("cuda");
    TCase *tc = tcase_create("codegen");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, representative_kernels);
    tcase_add_test(tc, roi_align_precomputed);
    tcase_add_test(tc, cpu_dump_unchanged);
    tcase_add_test(tc, cuda_supports);
    tcase_add_test(tc, cuda_supports_as_cpu);
    tcase_add_test(tc, source_independent_of_numbers);
    tcase_add_test(tc, entry_points_alone);
    suite_add_tcase(s, tc);
    tc = tcase_create("scripts");
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, script_kernels_compile);
    suite_add_tcase(s, tc);
    tc = tcase_create("host");
    tcase_set_timeout(tc, 3600);
    tcase_add_test(tc, kernels_run_on_the_host);
    tcase_add_test(tc, kept_kernel_parameters);
    tcase_add_test(tc, script_kernels_run_on_the_host);
    suite_add_tcase(s, tc);
    tc = tcase_create("nvrtc");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cache_memory_and_disk);
    tcase_add_test(tc, compile_error_report);
    suite_add_tcase(s, tc);
    tc = tcase_create("device");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, no_device_is_a_device_error);
    tcase_add_test(tc, programs_on_the_gpu);
    suite_add_tcase(s, tc);
    return s;
}
