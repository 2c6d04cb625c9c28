/* bw.c — the memory bandwidth that bench/index.sh divides by: how fast this machine reads one
 * float32 array (a sum) and copies one into another, STREAM-style.
 *
 * usage: bw N [repeats]
 * Two arrays of N float32 (64-byte aligned), first touched by the same static schedule that
 * later walks them, so that each thread's pages sit near it. Threads: OpenMP
 * (OMP_NUM_THREADS). Each loop runs twice to warm up, then `repeats` times (default 20); the
 * best time counts. Prints two lines:
 *     read SECONDS GBPS CHECKSUM      a sum of a[i] (N * 4 bytes read)
 *     copy SECONDS GBPS               b[i] = a[i] (N * 8 bytes: read and written, as STREAM counts)
 * GB/s is 10^9 bytes per second. Depends on nothing but libc and OpenMP. */
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

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s N [repeats]\n", argv[0]);
        return 2;
    }
    int64_t n = strtoll(argv[1], NULL, 10);
    int repeats = argc > 2 ? atoi(argv[2]) : 20;
    float *a = alloc_touched(n), *b = alloc_touched(n);
    double best_read = INFINITY, best_copy = INFINITY, sum = 0.0;
    for (int r = -2; r < repeats; r++) {
        double t0 = now();
        sum = read_all(a, n);
        double t1 = now();
        copy_all(b, a, n);
        double t2 = now();
        if (r >= 0) {
            best_read = fmin(best_read, t1 - t0);
            best_copy = fmin(best_copy, t2 - t1);
        }
    }
    printf("read %.6f %.2f %.9g\n", best_read, 4.0 * (double)n / best_read / 1e9, sum + b[n / 2]);
    printf("copy %.6f %.2f\n", best_copy, 8.0 * (double)n / best_copy / 1e9);
    free(a);
    free(b);
    return 0;
}
