/* stream.c — the hardware bounds for bench/fused.sh: how fast this machine can read the three
 * float32 inputs of y = where(a > 0, a*b + c, c*0.5).sum(), and how fast a hand-fused C loop
 * computes y itself.
 *
 * usage: stream A.npy B.npy C.npy [repeats]
 * The three files are little-endian float32 .npy arrays of one length (written by make_data.py).
 * Threads: OpenMP (OMP_NUM_THREADS); the arrays are first touched by the same static schedule
 * that reads them, so each thread's pages sit near it. Each loop runs twice to warm up, then
 * `repeats` times (default 20); the best time counts. Prints three lines:
 *     read SECONDS GBPS CHECKSUM      one pass summing a[i] + b[i] + c[i] (STREAM-style read bound)
 *     fused SECONDS GBPS RESULT       the expression, fused by hand, one pass
 *     ref RESULT SUMABS               y in double, sequential, untimed: the reference value, and
 *                                     the sum of |terms| (a scale for rounding tolerances)
 * GB/s counts the 3 * n * 4 bytes read (10^9 bytes). Depends on nothing but libc and OpenMP. */
#define _GNU_SOURCE
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads a 1-D '<f4' .npy file into 64-byte aligned memory, first touched in parallel. */
static float *load_npy(const char *path, int64_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    unsigned char pre[10];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        fprintf(stderr, "%s: not a .npy file\n", path);
        exit(2);
    }
    size_t hlen;
    if (pre[6] == 1) {
        hlen = pre[8] | (size_t)pre[9] << 8;
    } else {
        unsigned char more[2];
        if (fread(more, 1, 2, f) != 2) {
            fprintf(stderr, "%s: truncated\n", path);
            exit(2);
        }
        hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)more[0] << 16 | (size_t)more[1] << 24;
    }
    char *hdr = calloc(1, hlen + 1);
    if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
        fprintf(stderr, "%s: truncated header\n", path);
        exit(2);
    }
    const char *shape = strstr(hdr, "'shape': (");
    if (!strstr(hdr, "'<f4'") || !shape || strstr(hdr, "'fortran_order': True")) {
        fprintf(stderr, "%s: want a 1-D little-endian float32 array, header %s\n", path, hdr);
        exit(2);
    }
    *n = strtoll(shape + 10, NULL, 10);
    free(hdr);
    float *p = aligned_alloc(64, ((size_t)*n * 4 + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    int64_t len = *n;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < len; i++)
        p[i] = 0.0f;
    if (fread(p, 4, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "%s: truncated data\n", path);
        exit(2);
    }
    fclose(f);
    return p;
}

/* The loops are separate functions so that the compiler cannot hoist work across repeats. */
/* As little arithmetic per byte as a reduction allows: float lanes, no conversion (the checksum
 * is only there so that the reads cannot be dropped). */
__attribute__((noinline)) static double read_all(const float *restrict a, const float *restrict b,
                                                 const float *restrict c, int64_t n)
{
    float s = 0.0f;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
    for (int64_t i = 0; i < n; i++)
        s += a[i] + b[i] + c[i];
    return s;
}

__attribute__((noinline)) static double fused(const float *restrict a, const float *restrict b,
                                              const float *restrict c, int64_t n)
{
    double s = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
    for (int64_t i = 0; i < n; i++) {
        float v = a[i] > 0.0f ? a[i] * b[i] + c[i] : c[i] * 0.5f;
        s += (double)v;
    }
    return s;
}

typedef double (*LoopFn)(const float *restrict, const float *restrict, const float *restrict, int64_t);

static double best_of(LoopFn fn, const float *a, const float *b, const float *c, int64_t n, int repeats,
                      double *result)
{
    double best = INFINITY;
    for (int r = -2; r < repeats; r++) {
        double t0 = now();
        double s = fn(a, b, c, n);
        double dt = now() - t0;
        *result = s;
        if (r >= 0 && dt < best)
            best = dt;
    }
    return best;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s A.npy B.npy C.npy [repeats]\n", argv[0]);
        return 2;
    }
    int repeats = argc > 4 ? atoi(argv[4]) : 20;
    int64_t n, nb, nc;
    float *a = load_npy(argv[1], &n), *b = load_npy(argv[2], &nb), *c = load_npy(argv[3], &nc);
    if (nb != n || nc != n) {
        fprintf(stderr, "arrays differ in length\n");
        return 2;
    }
    double bytes = 3.0 * 4.0 * (double)n;
    double s;
    double t = best_of(read_all, a, b, c, n, repeats, &s);
    printf("read %.6f %.2f %.9g\n", t, bytes / t / 1e9, s);
    t = best_of(fused, a, b, c, n, repeats, &s);
    printf("fused %.6f %.2f %.9g\n", t, bytes / t / 1e9, s);
    /* The reference: each term rounded to float32 as PyTorch computes it, summed in double. */
    double ref = 0.0, sumabs = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float v = a[i] > 0.0f ? a[i] * b[i] + c[i] : c[i] * 0.5f;
        ref += v;
        sumabs += fabs(v);
    }
    printf("ref %.9g %.9g\n", ref, sumabs);
    printf("threads %d\n", omp_get_max_threads());
    free(a);
    free(b);
    free(c);
    return 0;
}
