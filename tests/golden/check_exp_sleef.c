/* check_exp_sleef.c — backend/cpu/cpu_math.h's exp against the SLEEF library that PyTorch calls
 * (Debian's libsleef3, which python3-torch links), bit for bit: every one of the 2^32 float32
 * bit patterns and a sample of float64s (random values over the range where exp is finite and
 * nonzero, around its thresholds, and random bit patterns). Each is computed by the chunk loop
 * compiled for x86-64-v3 (vectorised, as the backend's clone) and, on every STRIDE-th value, by
 * the baseline build (fma from libm). A developer's check, not part of `make test`, which has
 * tests/test_cpu_math.c and the golden files of gen_exp.py; needs an x86-64 with AVX2 and FMA.
 *
 *   cc -std=c11 -O2 -Ibackend -Ibackend/cpu -Ifcdim tests/golden/check_exp_sleef.c \
 *       -o /tmp/check_exp_sleef -l:libsleef.so.3 -lm && /tmp/check_exp_sleef [NDOUBLE [STRIDE]]
 *
 * Prints the count of values compared and of differences per dtype; exit status 1 on any. */
#include "cpu_math.h"

#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>

/* SLEEF's own declarations (sleef.h is not installed with the runtime library). */
__m256 Sleef_expf8_u10(__m256);
__m256d Sleef_expd4_u10(__m256d);

enum { N = 256 };

__attribute__((target("arch=x86-64-v3"))) static void vec_f32(float *restrict d, const float *restrict a)
{
    for (int i = 0; i < N; i++)
        d[i] = cpu_exp_f32(a[i]);
}

__attribute__((target("arch=x86-64-v3"))) static void vec_f64(double *restrict d, const double *restrict a)
{
    for (int i = 0; i < N; i++)
        d[i] = cpu_exp_f64(a[i]);
}

__attribute__((target("avx2"))) static void sleef_f32(float *d, const float *a)
{
    for (int i = 0; i < N; i += 8)
        _mm256_storeu_ps(d + i, Sleef_expf8_u10(_mm256_loadu_ps(a + i)));
}

__attribute__((target("avx2"))) static void sleef_f64(double *d, const double *a)
{
    for (int i = 0; i < N; i += 4)
        _mm256_storeu_pd(d + i, Sleef_expd4_u10(_mm256_loadu_pd(a + i)));
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (double)(next_rand(s) >> 11) / 9007199254740992.0 * (hi - lo);
}

int main(int argc, char **argv)
{
    uint64_t ndouble = argc > 1 ? strtoull(argv[1], NULL, 0) : 1 << 24;
    uint64_t stride = argc > 2 ? strtoull(argv[2], NULL, 0) : 61;
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        fprintf(stderr, "check_exp_sleef: needs AVX2 and FMA\n");
        return 2;
    }
    float a[N], want[N], got[N];
    uint64_t n = 0, bad = 0, nbase = 0;
    for (uint64_t b = 0; b < (UINT64_C(1) << 32); b += N) {
        for (int i = 0; i < N; i++)
            a[i] = cpu_f32_from_bits((uint32_t)(b + (uint64_t)i));
        sleef_f32(want, a);
        vec_f32(got, a);
        for (int i = 0; i < N; i++, n++) {
            uint32_t w = cpu_f32_bits(want[i]);
            bool ok = cpu_f32_bits(got[i]) == w;
            if (n % stride == 0) {
                ok = ok && cpu_f32_bits(cpu_exp_f32(a[i])) == w;
                nbase++;
            }
            if (!ok && bad++ < 10)
                printf("float32 exp(%a) (0x%08x): %a, SLEEF %a\n", a[i], cpu_f32_bits(a[i]), got[i], want[i]);
        }
    }
    printf("float32: %llu values (%llu also baseline), %llu differ\n", (unsigned long long)n,
           (unsigned long long)nbase, (unsigned long long)bad);
    uint64_t fbad = bad;

    double da[N], dwant[N], dgot[N];
    uint64_t s = 0x9e3779b97f4a7c15u;
    n = bad = nbase = 0;
    for (uint64_t k = 0; k < ndouble / N; k++) {
        for (int i = 0; i < N; i++) {
            switch (k % 4) {
            case 0: da[i] = cpu_f64_from_bits(next_rand(&s)); break;
            case 1: da[i] = uniform(&s, -1010.0, 720.0); break;
            case 2: da[i] = uniform(&s, -1.0, 1.0); break;
            default: da[i] = (i & 1) ? uniform(&s, 700.0, 720.0) : uniform(&s, -1010.0, -700.0); break;
            }
        }
        sleef_f64(dwant, da);
        vec_f64(dgot, da);
        for (int i = 0; i < N; i++, n++) {
            uint64_t w = cpu_f64_bits(dwant[i]);
            bool ok = cpu_f64_bits(dgot[i]) == w;
            if (n % stride == 0) {
                ok = ok && cpu_f64_bits(cpu_exp_f64(da[i])) == w;
                nbase++;
            }
            if (!ok && bad++ < 10)
                printf("float64 exp(%a): %a, SLEEF %a\n", da[i], dgot[i], dwant[i]);
        }
    }
    printf("float64: %llu values (%llu also baseline), %llu differ\n", (unsigned long long)n,
           (unsigned long long)nbase, (unsigned long long)bad);
    return fbad || bad;
}
