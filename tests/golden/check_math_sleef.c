/* check_math_sleef.c — backend/cpu/cpu_math.h's exp, tanh, log, log1p, expm1, log2 and log10 and
 * its siblings' erf, erfc (cpu_math_erf.h), asin, acos, atan (cpu_math_arc.h), sin, cos and tan
 * (cpu_math_trig.h, as the chunk loop runs them: per vector of 8 floats or 4 doubles) against the SLEEF
 * library that PyTorch calls (Debian's libsleef3, which python3-torch links), bit for bit: every
 * one of the 2^32 float32 bit patterns and a sample of float64s (random bit patterns, random
 * values over the function's working range and around its thresholds). Each is computed by the
 * chunk loop compiled for x86-64-v3 (vectorised, as the backend's clone) and, on every STRIDE-th
 * block of values, by the baseline build (fma from libm). A developer's check, not part of
 * `make test`, which has tests/test_cpu_math.c and the golden files of gen_math.py; needs an
 * x86-64 with AVX2 and FMA.
 *
 *   cc -std=c11 -O2 -Ibackend -Ibackend/cpu -Ifcdim tests/golden/check_math_sleef.c \
 *       backend/cpu/cpu_math_rempi.c -o /tmp/check_math_sleef -l:libsleef.so.3 -lm && /tmp/check_math_sleef [FN [NDOUBLE [STRIDE]]]
 *
 * FN is one of the functions above or all (the default). Prints the count of values compared
 * and of differences per function and dtype; exit status 1 on any. */
#include "cpu_math.h"
#include "cpu_math_arc.h"
#include "cpu_math_erf.h"
#include "cpu_math_trig.h"

#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SLEEF's own declarations (sleef.h is not installed with the runtime library). */
__m256 Sleef_expf8_u10(__m256);
__m256d Sleef_expd4_u10(__m256d);
__m256 Sleef_tanhf8_u10(__m256);
__m256d Sleef_tanhd4_u10(__m256d);
__m256 Sleef_logf8_u10(__m256);
__m256d Sleef_logd4_u10(__m256d);
__m256 Sleef_log1pf8_u10(__m256);
__m256d Sleef_log1pd4_u10(__m256d);
__m256 Sleef_expm1f8_u10(__m256);
__m256d Sleef_expm1d4_u10(__m256d);
__m256 Sleef_log2f8_u10(__m256);
__m256d Sleef_log2d4_u10(__m256d);
__m256 Sleef_log10f8_u10(__m256);
__m256d Sleef_log10d4_u10(__m256d);
__m256 Sleef_erff8_u10(__m256);
__m256d Sleef_erfd4_u10(__m256d);
__m256 Sleef_erfcf8_u15(__m256);
__m256d Sleef_erfcd4_u15(__m256d);
__m256 Sleef_asinf8_u10(__m256);
__m256d Sleef_asind4_u10(__m256d);
__m256 Sleef_acosf8_u10(__m256);
__m256d Sleef_acosd4_u10(__m256d);
__m256 Sleef_atanf8_u10(__m256);
__m256d Sleef_atand4_u10(__m256d);
__m256 Sleef_sinf8_u10(__m256);
__m256d Sleef_sind4_u10(__m256d);
__m256 Sleef_cosf8_u10(__m256);
__m256d Sleef_cosd4_u10(__m256d);
__m256 Sleef_tanf8_u10(__m256);
__m256d Sleef_tand4_u10(__m256d);

enum { N = 256 };

typedef void (*LoopF32)(float *restrict, const float *restrict);
typedef void (*LoopF64)(double *restrict, const double *restrict);

/* Per function: the vectorised loop, the baseline one and SLEEF's, at both dtypes. */
#define LOOPS(fn)                                                                                  \
    __attribute__((target("arch=x86-64-v3"))) static void vec_##fn##_f32(float *restrict d,      \
                                                                         const float *restrict a) \
    {                                                                                              \
        for (int i = 0; i < N; i++)                                                                \
            d[i] = cpu_##fn##_f32(a[i]);                                                           \
    }                                                                                              \
    __attribute__((target("arch=x86-64-v3"))) static void vec_##fn##_f64(double *restrict d,     \
                                                                         const double *restrict a) \
    {                                                                                              \
        for (int i = 0; i < N; i++)                                                                \
            d[i] = cpu_##fn##_f64(a[i]);                                                           \
    }                                                                                              \
    static void base_##fn##_f32(float *restrict d, const float *restrict a)                        \
    {                                                                                              \
        for (int i = 0; i < N; i++)                                                                \
            d[i] = cpu_##fn##_f32(a[i]);                                                           \
    }                                                                                              \
    static void base_##fn##_f64(double *restrict d, const double *restrict a)                      \
    {                                                                                              \
        for (int i = 0; i < N; i++)                                                                \
            d[i] = cpu_##fn##_f64(a[i]);                                                           \
    }
LOOPS(exp)
LOOPS(tanh)
LOOPS(log)
LOOPS(log1p)
LOOPS(expm1)
LOOPS(log2)
LOOPS(log10)
LOOPS(erf)
LOOPS(erfc)
LOOPS(asin)
LOOPS(acos)
LOOPS(atan)

/* sin, cos and tan as cpu_ops.c's UNARY_MATH_TRIG chunk loop runs them: the fast way over the
 * block, then each vector (8 floats, 4 doubles) holding a larger element again, the way SLEEF's
 * vector takes. */
#define TRIG_LOOPS(fn)                                                                             \
    __attribute__((target("arch=x86-64-v3"))) static void vec_##fn##_f32(float *restrict d,      \
                                                                         const float *restrict a) \
    {                                                                                              \
        for (int i = 0; i < N; i++)                                                                \
            d[i] = cpu_##fn##_f32_fast(a[i]);                                                      \
        trig_fix_f32(d, a, cpu_##fn##_f32_way);                                                    \
    }                                                                                              \
    __attribute__((target("arch=x86-64-v3"))) static void vec_##fn##_f64(double *restrict d,     \
                                                                         const double *restrict a) \
    {                                                                                              \
        for (int i = 0; i < N; i++)                                                                \
            d[i] = cpu_##fn##_f64_fast(a[i]);                                                      \
        trig_fix_f64(d, a, cpu_##fn##_f64_way);                                                    \
    }                                                                                              \
    static void base_##fn##_f32(float *restrict d, const float *restrict a)                        \
    {                                                                                              \
        for (int i = 0; i < N; i++)                                                                \
            d[i] = cpu_##fn##_f32_fast(a[i]);                                                      \
        trig_fix_f32(d, a, cpu_##fn##_f32_way);                                                    \
    }                                                                                              \
    static void base_##fn##_f64(double *restrict d, const double *restrict a)                      \
    {                                                                                              \
        for (int i = 0; i < N; i++)                                                                \
            d[i] = cpu_##fn##_f64_fast(a[i]);                                                      \
        trig_fix_f64(d, a, cpu_##fn##_f64_way);                                                    \
    }

static void trig_fix_f32(float *d, const float *a, float (*way_fn)(float, int))
{
    for (int v = 0; v < N; v += 8) {
        int way = 0;
        for (int i = v; i < v + 8; i++)
            way = cpu_trig_way_f32(a[i]) > way ? cpu_trig_way_f32(a[i]) : way;
        for (int i = v; way && i < v + 8; i++)
            d[i] = way_fn(a[i], way);
    }
}

static void trig_fix_f64(double *d, const double *a, double (*way_fn)(double, int))
{
    for (int v = 0; v < N; v += 4) {
        int way = 0;
        for (int i = v; i < v + 4; i++)
            way = cpu_trig_way_f64(a[i]) > way ? cpu_trig_way_f64(a[i]) : way;
        for (int i = v; way && i < v + 4; i++)
            d[i] = way_fn(a[i], way);
    }
}

TRIG_LOOPS(sin)
TRIG_LOOPS(cos)
TRIG_LOOPS(tan)

#define SLEEF_LOOPS(fn, f8, d4)                                                                    \
    __attribute__((target("avx2"))) static void sleef_##fn##_f32(float *restrict d, const float *restrict a) \
    {                                                                                              \
        for (int i = 0; i < N; i += 8)                                                             \
            _mm256_storeu_ps(d + i, f8(_mm256_loadu_ps(a + i)));                                   \
    }                                                                                              \
    __attribute__((target("avx2"))) static void sleef_##fn##_f64(double *restrict d, const double *restrict a) \
    {                                                                                              \
        for (int i = 0; i < N; i += 4)                                                             \
            _mm256_storeu_pd(d + i, d4(_mm256_loadu_pd(a + i)));                                   \
    }
SLEEF_LOOPS(exp, Sleef_expf8_u10, Sleef_expd4_u10)
SLEEF_LOOPS(tanh, Sleef_tanhf8_u10, Sleef_tanhd4_u10)
SLEEF_LOOPS(log, Sleef_logf8_u10, Sleef_logd4_u10)
SLEEF_LOOPS(log1p, Sleef_log1pf8_u10, Sleef_log1pd4_u10)
SLEEF_LOOPS(expm1, Sleef_expm1f8_u10, Sleef_expm1d4_u10)
SLEEF_LOOPS(log2, Sleef_log2f8_u10, Sleef_log2d4_u10)
SLEEF_LOOPS(log10, Sleef_log10f8_u10, Sleef_log10d4_u10)
SLEEF_LOOPS(erf, Sleef_erff8_u10, Sleef_erfd4_u10)
SLEEF_LOOPS(erfc, Sleef_erfcf8_u15, Sleef_erfcd4_u15)
SLEEF_LOOPS(asin, Sleef_asinf8_u10, Sleef_asind4_u10)
SLEEF_LOOPS(acos, Sleef_acosf8_u10, Sleef_acosd4_u10)
SLEEF_LOOPS(atan, Sleef_atanf8_u10, Sleef_atand4_u10)
SLEEF_LOOPS(sin, Sleef_sinf8_u10, Sleef_sind4_u10)
SLEEF_LOOPS(cos, Sleef_cosf8_u10, Sleef_cosd4_u10)
SLEEF_LOOPS(tan, Sleef_tanf8_u10, Sleef_tand4_u10)

typedef struct {
    const char *name;
    LoopF32 vec32, base32, sleef32;
    LoopF64 vec64, base64, sleef64;
    double lo, hi;     /* the float64 working range */
    double edge;       /* and a threshold, sampled on both sides within 20 */
} Fn;

static const Fn fns[] = {
    {"exp", vec_exp_f32, base_exp_f32, sleef_exp_f32, vec_exp_f64, base_exp_f64, sleef_exp_f64, -1010.0, 720.0, 709.78},
    {"tanh", vec_tanh_f32, base_tanh_f32, sleef_tanh_f32, vec_tanh_f64, base_tanh_f64, sleef_tanh_f64, -25.0, 25.0,
     18.714973875},
    {"log", vec_log_f32, base_log_f32, sleef_log_f32, vec_log_f64, base_log_f64, sleef_log_f64, 0.0, 1e6, 21.0},
    {"log1p", vec_log1p_f32, base_log1p_f32, sleef_log1p_f32, vec_log1p_f64, base_log1p_f64, sleef_log1p_f64, -1.0, 1e6, 20.0},
    {"expm1", vec_expm1_f32, base_expm1_f32, sleef_expm1_f32, vec_expm1_f64, base_expm1_f64, sleef_expm1_f64, -40.0, 720.0, 30.0},
    {"log2", vec_log2_f32, base_log2_f32, sleef_log2_f32, vec_log2_f64, base_log2_f64, sleef_log2_f64, 0.0, 1e6, 21.0},
    {"log10", vec_log10_f32, base_log10_f32, sleef_log10_f32, vec_log10_f64, base_log10_f64, sleef_log10_f64, 0.0, 1e6, 21.0},
    {"erf", vec_erf_f32, base_erf_f32, sleef_erf_f32, vec_erf_f64, base_erf_f64, sleef_erf_f64, -7.0, 7.0, 3.7},
    {"erfc", vec_erfc_f32, base_erfc_f32, sleef_erfc_f32, vec_erfc_f64, base_erfc_f64, sleef_erfc_f64, -7.0, 30.0, 27.3},
    {"asin", vec_asin_f32, base_asin_f32, sleef_asin_f32, vec_asin_f64, base_asin_f64, sleef_asin_f64, -1.5, 1.5, 0.5},
    {"acos", vec_acos_f32, base_acos_f32, sleef_acos_f32, vec_acos_f64, base_acos_f64, sleef_acos_f64, -1.5, 1.5, 0.5},
    {"atan", vec_atan_f32, base_atan_f32, sleef_atan_f32, vec_atan_f64, base_atan_f64, sleef_atan_f64, -100.0, 100.0, 1.0},
    {"sin", vec_sin_f32, base_sin_f32, sleef_sin_f32, vec_sin_f64, base_sin_f64, sleef_sin_f64, -1e6, 1e6, 15.0},
    {"cos", vec_cos_f32, base_cos_f32, sleef_cos_f32, vec_cos_f64, base_cos_f64, sleef_cos_f64, -1e6, 1e6, 15.0},
    {"tan", vec_tan_f32, base_tan_f32, sleef_tan_f32, vec_tan_f64, base_tan_f64, sleef_tan_f64, -1e6, 1e6, 15.0},
};

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

static uint64_t check_f32(const Fn *f, uint64_t stride)
{
    float a[N], want[N], got[N], base[N];
    uint64_t n = 0, bad = 0, nbase = 0;
    for (uint64_t b = 0; b < (UINT64_C(1) << 32); b += N) {
        for (int i = 0; i < N; i++)
            a[i] = cpu_f32_from_bits((uint32_t)(b + (uint64_t)i));
        f->sleef32(want, a);
        f->vec32(got, a);
        bool check_base = (b / N) % stride == 0;
        if (check_base)
            f->base32(base, a);
        for (int i = 0; i < N; i++, n++) {
            uint32_t w = cpu_f32_bits(want[i]);
            bool ok = cpu_f32_bits(got[i]) == w && (!check_base || cpu_f32_bits(base[i]) == w);
            nbase += check_base;
            if (!ok && bad++ < 10)
                printf("float32 %s(%a) (0x%08x): %a, baseline %a, SLEEF %a\n", f->name, a[i], cpu_f32_bits(a[i]),
                       got[i], check_base ? base[i] : got[i], want[i]);
        }
    }
    printf("%s float32: %llu values (%llu also baseline), %llu differ\n", f->name, (unsigned long long)n,
           (unsigned long long)nbase, (unsigned long long)bad);
    return bad;
}

static uint64_t check_f64(const Fn *f, uint64_t ndouble, uint64_t stride)
{
    double a[N], want[N], got[N], base[N];
    uint64_t s = 0x9e3779b97f4a7c15u;
    uint64_t n = 0, bad = 0, nbase = 0;
    for (uint64_t k = 0; k < ndouble / N; k++) {
        for (int i = 0; i < N; i++) {
            switch (k % 4) {
            case 0: a[i] = cpu_f64_from_bits(next_rand(&s)); break;
            case 1: a[i] = uniform(&s, f->lo, f->hi); break;
            case 2: a[i] = uniform(&s, -1.0, 1.0); break;
            default: a[i] = (i & 1) ? uniform(&s, f->edge - 20, f->edge + 20) : -uniform(&s, f->edge - 20, f->edge + 20); break;
            }
        }
        f->sleef64(want, a);
        f->vec64(got, a);
        bool check_base = k % stride == 0;
        if (check_base)
            f->base64(base, a);
        for (int i = 0; i < N; i++, n++) {
            uint64_t w = cpu_f64_bits(want[i]);
            bool ok = cpu_f64_bits(got[i]) == w && (!check_base || cpu_f64_bits(base[i]) == w);
            nbase += check_base;
            if (!ok && bad++ < 10)
                printf("float64 %s(%a): %a, baseline %a, SLEEF %a\n", f->name, a[i], got[i],
                       check_base ? base[i] : got[i], want[i]);
        }
    }
    printf("%s float64: %llu values (%llu also baseline), %llu differ\n", f->name, (unsigned long long)n,
           (unsigned long long)nbase, (unsigned long long)bad);
    return bad;
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    uint64_t ndouble = argc > 2 ? strtoull(argv[2], NULL, 0) : 1 << 24;
    uint64_t stride = argc > 3 ? strtoull(argv[3], NULL, 0) : 61;
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        fprintf(stderr, "check_math_sleef: needs AVX2 and FMA\n");
        return 2;
    }
    uint64_t bad = 0;
    int ran = 0;
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        if (strcmp(which, "all") != 0 && strcmp(which, fns[i].name) != 0)
            continue;
        bad += check_f32(&fns[i], stride) + check_f64(&fns[i], ndouble, stride);
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "check_math_sleef: no function %s (exp, tanh, log, log1p, expm1, log2, log10, erf, erfc, asin, acos, atan, sin, cos, tan, all)\n", which);
        return 2;
    }
    return bad != 0;
}
