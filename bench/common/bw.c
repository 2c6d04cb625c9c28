/* bw.c — the memory bandwidth that the benchmarks divide by (bench/index.sh, bench/sched.sh,
 * bench/roi_align.sh): how fast this machine reads one float32 array (a sum), copies one into
 * another, and scales one into another (b = s * a), STREAM-style.
 *
 * usage: bw N [repeats]
 * Two arrays of N float32 (64-byte aligned), first touched by the same static schedule that
 * later walks them, so that each thread's pages sit near it. Threads: OpenMP
 * (OMP_NUM_THREADS). Each loop runs twice to warm up, then `repeats` times (default 20); the
 * best time counts. Prints four lines:
 *     read SECONDS GBPS CHECK      s += a[i]          N * 4 bytes (read)
 *     copy SECONDS GBPS CHECK      b[i] = a[i]        N * 8 bytes (read and written)
 *     scale SECONDS GBPS CHECK     b[i] = s * a[i]    N * 8 bytes (read and written)
 *     threads T
 * Copy and scale count N * 4 read and N * 4 written, as STREAM counts (the write-allocate read of
 * b that plain stores cost is in the time, not in the bytes); GB/s is 10^9 bytes per second.
 * CHECK is the sum, or one element of b summed over the runs, so that no loop can be dropped.
 * Depends on nothing but libc and OpenMP. */
#define _GNU_SOURCE
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *alloc_touched(int64_t n)
{
    float *p = aligned_alloc(64, ((size_t)n * 4 + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)(i % 7) - 3.0f;
    return p;
}

/* The loops are separate functions so that the compiler cannot hoist work across repeats. */
__attribute__((noinline)) static double read_all(const float *restrict a, int64_t n)
{
    float s = 0.0f;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
    for (int64_t i = 0; i < n; i++)
        s += a[i];
    return s;
}

__attribute__((noinline)) static void copy_all(float *restrict b, const float *restrict a, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++)
        b[i] = a[i];
}

__attribute__((noinline)) static void scale_all(float *restrict b, const float *restrict a, float s,
                                                int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++)
        b[i] = s * a[i];
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s N [repeats]\n", argv[0]);
        return 2;
    }
    int64_t n = strtoll(argv[1], NULL, 10);
    int repeats = argc > 2 ? atoi(argv[2]) : 20;
    if (n < 1 || repeats < 1) {
        fprintf(stderr, "N and repeats must be positive\n");
        return 2;
    }
    float *a = alloc_touched(n), *b = alloc_touched(n);
    double best_read = INFINITY, best_copy = INFINITY, best_scale = INFINITY;
    double sum = 0.0, check_copy = 0.0, check_scale = 0.0;
    for (int r = -2; r < repeats; r++) {
        double t0 = now();
        sum = read_all(a, n);
        double t1 = now();
        copy_all(b, a, n);
        double t2 = now();
        check_copy += b[n / 2];
        double t3 = now();
        scale_all(b, a, 3.0f, n);
        double t4 = now();
        check_scale += b[n / 2];
        if (r >= 0) {
            best_read = fmin(best_read, t1 - t0);
            best_copy = fmin(best_copy, t2 - t1);
            best_scale = fmin(best_scale, t4 - t3);
        }
    }
    printf("read %.6f %.2f %.9g\n", best_read, 4.0 * (double)n / best_read / 1e9, sum);
    printf("copy %.6f %.2f %.9g\n", best_copy, 8.0 * (double)n / best_copy / 1e9, check_copy);
    printf("scale %.6f %.2f %.9g\n", best_scale, 8.0 * (double)n / best_scale / 1e9, check_scale);
    printf("threads %d\n", omp_get_max_threads());
    free(a);
    free(b);
    return 0;
}
