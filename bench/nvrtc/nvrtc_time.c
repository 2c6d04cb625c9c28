/* nvrtc_time.c — bench/nvrtc.sh's timer: compiles the CUDA kernels of tdl programs the way the
 * CUDA backend does (fc_cuda_compile: the same options and cache) and reports the times. Needs
 * NVRTC, no GPU.
 *
 * usage: nvrtc_time SM REPEATS CACHEDIR PROGRAM.tdl...
 * Runs each program on the CPU; every kernel it runs (FcCtx.on_kernel) is also generated as CUDA
 * (fc_cuda_codegen). Distinct kernels are kept once; the batched matrix product's module
 * (fc_cuda_matmul_source, float32, what `@` runs on a GPU) is added. For every kernel:
 *   whole   its whole source, every entry point in one module (what --dump-cuda shows);
 *   launch  what the backend compiles for the launch of this kernel on this shape: a module of
 *           the entry point it runs (tdl_v when the vector loop's extent allows it, else tdl_s)
 *           and, when the block reduction is split, tdl_finish;
 *   warm    a disk-cache hit for the launch's modules: fresh cache objects over CACHEDIR (which
 *           the first compile filled) answering fc_cuda_compile, i.e. everything the backend
 *           does before cuModuleLoadData (the key, hashing, reading and checking the file).
 * A cold time is the CPU time of this thread in fc_cuda_compile with no cache (nvrtcCreateProgram
 * and nvrtcCompileProgram for sm_SM, which run on the calling thread: on an idle machine the
 * same as the wall time, on a shared one much steadier), the best of REPEATS; warm, the wall
 * time, the best of 5 x REPEATS. Built with -DWHOLE_ONLY (for a build that predates
 * fc_cuda_entries_source), launch and warm time the whole source. With $NVRTC_TIME_SAVE (a folder), the launch's modules are written
 * there as NNN_M.cu (for profiling them, e.g. with NVRTC's --fdevice-time-trace). Prints one line per kernel, then the median and max of each
 * column. Without NVRTC it says so and exits 0; exit status 1 when a program fails or a kernel
 * does not compile. */
#include "backend.h"
#include "cuda/cuda_internal.h"
#include "interp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAXK = 1024, MAXM = 3 };

typedef struct Kern {
    char *whole;
    char *mod[MAXM];    /* the launch's modules */
    int nmod;
    const char *from;
} Kern;

static Kern ks[MAXK];
static int nk;
static const char *current;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void add(char *whole, char **mod, int nmod, const char *from)
{
    for (int i = 0; i < nk; i++)
        if (strcmp(ks[i].whole, whole) == 0 && ks[i].nmod == nmod &&
            (nmod == 0 || strcmp(ks[i].mod[0], mod[0]) == 0)) {
            free(whole);
            for (int m = 0; m < nmod; m++)
                free(mod[m]);
            return;
        }
    if (nk == MAXK)
        return;
    Kern *k = &ks[nk++];
    k->whole = whole;
    k->nmod = nmod;
    for (int m = 0; m < nmod; m++)
        k->mod[m] = mod[m];
    k->from = from;
}

static void on_kernel(void *ud, const FcKernel *k, FcDevice dev)
{
    (void)ud;
    CudaCode c;
    FcError err;
    if (dev.type != FC_DEV_CPU || fc_cuda_codegen(k, &c, &err) != FC_OK)
        return;
    if (c.npts == 0) {
        fc_cuda_code_free(&c);
        return;
    }
    char *mod[MAXM];
    int nmod = 0;
    bool v = c.vec && k->extent[c.vl] % c.V == 0;
#ifdef WHOLE_ONLY
    (void)v;
    mod[nmod++] = strdup(c.src);
#else
    int64_t nsplit, per;
    fc_cuda_split(&c, v ? c.npts_v : c.npts, &nsplit, &per);
    mod[nmod++] = fc_cuda_entries_source(&c, 1u << (v ? CUDA_ENTRY_V : CUDA_ENTRY_S) |
                                                 (nsplit > 1 ? 1u << CUDA_ENTRY_FINISH : 0));
#endif
    add(strdup(c.src), mod, nmod, current);
    fc_cuda_code_free(&c);
}

static void sink(void *ud, const char *text, size_t len)
{
    (void)ud;
    (void)text;
    (void)len;
}

/* The best cold compile of src in ms, or -1 when it does not compile (reported). */
static double cold(const char *src, int sm, int reps, const char *from)
{
    double best = -1;
    for (int r = 0; r < reps; r++) {
        FcCudaBuild b;
        FcError err;
        double t0 = cpu_ms();
        FcStatus st = fc_cuda_compile(NULL, src, sm, &b, &err);
        double t = cpu_ms() - t0;
        if (st != FC_OK) {
            fprintf(stderr, "nvrtc_time: a kernel of %s does not compile: %s\n%s\n", from, err.msg, b.log ? b.log : "");
            return -1;
        }
        if (best < 0 || t < best)
            best = t;
        free(b.image);
    }
    return best;
}

/* The best host time in us of finding every module of k in the disk cache. */
static double warm(Kern *k, int sm, int reps, const char *dir)
{
    FcCudaBuild b;
    FcError err;
    FcCudaCache *c = fc_cuda_cache_new(dir);
    for (int m = 0; m < k->nmod; m++)
        if (fc_cuda_compile(c, k->mod[m], sm, &b, &err) == FC_OK)
            free(b.image);
    fc_cuda_cache_free(c);
    double best = -1;
    for (int r = 0; r < 5 * reps; r++) {
        c = fc_cuda_cache_new(dir);
        double t0 = now_ms();
        bool hit = true;
        for (int m = 0; m < k->nmod; m++) {
            hit = fc_cuda_compile(c, k->mod[m], sm, &b, &err) == FC_OK && b.from == FC_CUDA_FROM_DISK && hit;
            free(b.image);
        }
        double t = now_ms() - t0;
        fc_cuda_cache_free(c);
        if (hit && (best < 0 || t < best))
            best = t;
    }
    return best * 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void summary(const char *what, const char *unit, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("%-7s median %8.1f %s   max %8.1f %s   (%d kernels)\n", what, v[n / 2], unit, v[n - 1], unit, n);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: nvrtc_time SM REPEATS CACHEDIR PROGRAM.tdl...\n");
        return 2;
    }
    int sm = atoi(argv[1]), reps = atoi(argv[2]);
    const char *dir = argv[3], *save = getenv("NVRTC_TIME_SAVE");
    int maj, min;
    FcError err;
    if (fc_cuda_nvrtc_version(&maj, &min, &err) != FC_OK) {
        printf("nvrtc_time: skipped (%s)\n", err.msg);
        return 0;
    }
    for (int a = 4; a < argc; a++) {
        tdl_config cfg = {0};
        cfg.write = sink;
        tdl_interp *T = tdl_open(&cfg);
        if (!T)
            return 2;
        T->I.fc->on_kernel = on_kernel;
        current = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        const char *av[] = {argv[a]};
        tdl_set_argv(T, 1, av);
        tdl_status st = tdl_run_file(T, argv[a]);
        tdl_close(T);
        if (st != TDL_OK) {
            fprintf(stderr, "nvrtc_time: %s fails\n", argv[a]);
            return 1;
        }
    }
    char *mm = fc_cuda_matmul_source(FC_FLOAT32);
    char *mms[] = {strdup(mm)};
    add(mm, mms, 1, "(the matrix product)");
    /* Load NVRTC and its builtins before the first timed compile. */
    cold("extern \"C\" __global__ void k() {}\n", sm, 1, "(warm-up)");
    printf("NVRTC %d.%d, sm_%d; cold (CPU time): best of %d; warm (disk cache hit, host side, wall): best of %d\n", maj, min, sm,
           reps, 5 * reps);
    printf("%4s %6s %9s %9s %9s  %s\n", "#", "lines", "whole ms", "launch ms", "warm us", "program");
    double *w = calloc((size_t)nk, sizeof *w), *l = calloc((size_t)nk, sizeof *l), *h = calloc((size_t)nk, sizeof *h);
    for (int i = 0; i < nk; i++) {
        Kern *k = &ks[i];
        w[i] = cold(k->whole, sm, reps, k->from);
        l[i] = 0;
        for (int m = 0; m < k->nmod && w[i] >= 0; m++) {
            double t = cold(k->mod[m], sm, reps, k->from);
            l[i] = t < 0 || l[i] < 0 ? -1 : l[i] + t;
        }
        if (w[i] < 0 || l[i] < 0)
            return 1;
        h[i] = warm(k, sm, reps, dir);
        if (save)
            for (int m = 0; m < k->nmod; m++) {
                char path[1024];
                snprintf(path, sizeof path, "%s/%03d_%d.cu", save, i, m);
                FILE *f = fopen(path, "w");
                if (f) {
                    fputs(k->mod[m], f);
                    fclose(f);
                }
            }
        int lines = 0;
        for (const char *s = k->whole; *s; s++)
            lines += *s == '\n';
        printf("%4d %6d %9.1f %9.1f %9.1f  %s\n", i, lines, w[i], l[i], h[i], k->from);
    }
    summary("whole", "ms", w, nk);
    summary("launch", "ms", l, nk);
    summary("warm", "us", h, nk);
    return 0;
}
