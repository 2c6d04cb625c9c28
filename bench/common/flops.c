/* flops.c — the arithmetic peak that bench/mask_head.sh divides by: how many float32
 * multiply-adds per second this machine's cores retire, from a loop of independent vector FMAs.
 *
 * usage: flops [iterations]
 * Each OpenMP thread (OMP_NUM_THREADS) runs `iterations` (default 20000000) steps of ACC
 * independent accumulators acc = acc * m + a on vectors of the widest width the compiler targets
 * (16 floats with AVX-512F, else 8; GCC vector extensions: with -O3 -march=native they are the
 * CPU's fused multiply-adds where it has them, as wide as the GEMM's kernels). Runs twice to
 * warm up, then 5 times; the best counts. Prints "gflops GFLOPS CHECK" and "threads T", a
 * multiply-add counting 2 flops. Depends on nothing but libc and OpenMP. */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef __AVX512F__
enum { VL = 16 };
#else
enum { VL = 8 };
#endif
typedef float vf __attribute__((vector_size(VL * 4)));
enum { ACC = 12 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* iters steps of ACC multiply-add chains; returns their sum so that nothing is dropped. */
static float chains(long iters, float seed)
{
    vf acc[ACC], m, a;
    for (int k = 0; k < VL; k++) {
        m[k] = 0.999999f;
        a[k] = 1e-7f * seed;
    }
    for (int j = 0; j < ACC; j++)
        for (int k = 0; k < VL; k++)
            acc[j][k] = seed + (float)j;
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < ACC; j++)
            acc[j] = acc[j] * m + a;
    float s = 0;
    for (int j = 0; j < ACC; j++)
        for (int k = 0; k < VL; k++)
            s += acc[j][k];
    return s;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 20000000L;
    double best = 1e30, check = 0;
    int threads = 1;
    for (int r = 0; r < 7; r++) {
        double t0 = now();
#pragma omp parallel reduction(+ : check)
        {
            check += chains(iters, 1.0f + (float)omp_get_thread_num());
#pragma omp single
            threads = omp_get_num_threads();
        }
        double t = now() - t0;
        if (r >= 2 && t < best)
            best = t;
    }
    printf("gflops %.3f %g\nthreads %d\n", 2.0 * VL * ACC * (double)iters * threads / best / 1e9, check, threads);
    return 0;
}
