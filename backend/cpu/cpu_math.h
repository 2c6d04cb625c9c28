/* cpu_math.h — exp for the chunk loops of the CPU backend, bit for bit PyTorch's CPU exp.
 *
 * PyTorch computes exp of float32 and float64 on the CPU (torch.exp, softmax, log_softmax,
 * logsumexp, the vector body of sigmoid) with Vectorized<T>::exp(), which is SLEEF's
 * Sleef_expf8_u10 / Sleef_expd4_u10; on a CPU with AVX2 those are SLEEF's AVX2 builds, whose
 * multiply-adds are fused (vfmadd). cpu_exp_f32 and cpu_exp_f64 are the same algorithms written
 * as scalar, branch-free C (sleefsimdsp.c xexpf, sleefsimddp.c xexp with ENABLE_FMA_DP, and their
 * helpers vrint, vpow2i, vldexp2): every operation that SLEEF fuses is an fma()/fmaf() here and
 * every other one a separate, rounded IEEE operation (ISO C mode keeps GCC from contracting
 * them), so the results are the same bits as torch's whatever machine runs them, and a loop
 * over them has no call that GCC cannot vectorise.
 *
 * fma is one instruction only where the target has it, so loops that call these functions are
 * compiled with CPU_MATH_CLONES: a clone for x86-64-v3 (AVX2 and FMA) picked at load time, and
 * the baseline one, where fma is libm's (exact, slow, not vectorised: the same bits). On other
 * architectures with FMA (AArch64) the one build vectorises.
 *
 * Range reduction: d = q ln2 + s with q = rint(d / ln2) and ln2 split in two (Cody-Waite), then a
 * polynomial for exp(s) and a scale by 2^q in two steps (2^(q>>1) then 2^(q - (q>>1)), so that
 * results near the overflow and underflow thresholds round as SLEEF's do). Inputs past the
 * thresholds give +inf or +0; NaN stays the input NaN (quietened).
 * Depends on cpu_internal.h (for CPU_NO_CLONES) and libm only. */
#ifndef TDL_CPU_MATH_H
#define TDL_CPU_MATH_H

#include "cpu_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute) && !defined(CPU_NO_CLONES)
#if __has_attribute(target_clones)
#if defined(__clang__) || __GNUC__ >= 12
#define CPU_MATH_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
/* Older GCCs have no dispatcher for x86-64-v3: FMA (with AVX) alone, on 16-byte vectors. */
#define CPU_MATH_CLONES __attribute__((target_clones("fma", "default")))
#endif
#endif
#endif
#ifndef CPU_MATH_CLONES
#define CPU_MATH_CLONES
#endif

/* Always inlined: a loop that calls them vectorises only with their bodies in it, and GCC's -O2
 * inlining limits would keep the double one out. */
#if defined(__GNUC__)
#define CPU_MATH_INLINE static inline __attribute__((always_inline))
#else
#define CPU_MATH_INLINE static inline
#endif

static inline float cpu_f32_from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline double cpu_f64_from_bits(uint64_t b)
{
    double f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline uint32_t cpu_f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static inline uint64_t cpu_f64_bits(double f)
{
    uint64_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* The selections below are bit masks (all ones where a condition holds), not ?:, which GCC
 * turns into branches around the polynomial: a loop with those does not vectorise. */
#define CPU_MASK32(c) ((uint32_t)0 - (uint32_t)(c))
#define CPU_MASK64(c) ((uint64_t)0 - (uint64_t)(c))

/* exp(d) in float: SLEEF's xexpf (u10), FMA build. */
CPU_MATH_INLINE float cpu_exp_f32(float d)
{
    /* q = rint(d / ln2) as cvtps2dq rounds (to nearest even). Adding and subtracting 1.5 * 2^23
     * rounds that way for |t| < 2^22; a larger t (or NaN) is replaced by 0, which only changes
     * results that the threshold tests below replace anyway. */
    float t = d * 1.442695040888963407359924681001892137426645954152985934135449406931f;
    t = cpu_f32_from_bits(cpu_f32_bits(t) & CPU_MASK32(fabsf(t) < 0x1p22f));
    float qf = (t + 0x1.8p23f) - 0x1.8p23f;
    int32_t q = (int32_t)qf;

    float s = fmaf(qf, -0.693145751953125f, d);
    s = fmaf(qf, -1.428606765330187045e-06f, s);

    float u = 0.000198527617612853646278381f;
    u = fmaf(u, s, 0.00139304355252534151077271f);
    u = fmaf(u, s, 0.00833336077630519866943359f);
    u = fmaf(u, s, 0.0416664853692054748535156f);
    u = fmaf(u, s, 0.166666671633720397949219f);
    u = fmaf(u, s, 0.5f);
    u = 1.0f + fmaf(s * s, u, s);

    /* u * 2^q as two exact powers of two (vldexp2): q >> 1 is an arithmetic shift in GCC and
     * Clang; the exponent arithmetic is unsigned so that out-of-range q wraps instead of
     * overflowing (its result is replaced below). */
    int32_t q1 = q >> 1;
    u = u * cpu_f32_from_bits((uint32_t)(q1 + 0x7f) << 23);
    u = u * cpu_f32_from_bits((uint32_t)(q - q1 + 0x7f) << 23);

    uint32_t ub = cpu_f32_bits(u) & ~CPU_MASK32(d < -104.0f);
    uint32_t inf = CPU_MASK32(100.0f < d);
    return cpu_f32_from_bits((ub & ~inf) | (0x7f800000u & inf));
}

/* exp(d) in double: SLEEF's xexp (u10), FMA build (Estrin's scheme for the polynomial). */
CPU_MATH_INLINE double cpu_exp_f64(double d)
{
    /* q = rint(d / ln2) as roundpd rounds it (to nearest even), t kept under 2^30 so that q fits
     * an int32, as in cpu_exp_f32. */
    double t = d * 1.442695040888963407359924681001892137426645954152985934135449406931;
    t = cpu_f64_from_bits(cpu_f64_bits(t) & CPU_MASK64(fabs(t) < 0x1p30));
    double qd = (t + 0x1.8p52) - 0x1.8p52;
    int32_t q = (int32_t)qd;

    double s = fma(qd, -.69314718055966295651160180568695068359375, d);
    s = fma(qd, -.28235290563031577122588448175013436025525412068e-12, s);

    double s2 = s * s, s4 = s2 * s2, s8 = s4 * s4;
    double p98 = fma(s, +0.2081276378237164457e-8, +0.2511210703042288022e-7);
    double p76 = fma(s, +0.2755762628169491192e-6, +0.2755723402025388239e-5);
    double p54 = fma(s, +0.2480158687479686264e-4, +0.1984126989855865850e-3);
    double p32 = fma(s, +0.1388888888914497797e-2, +0.8333333333314938210e-2);
    double p10 = fma(s, +0.4166666666666602598e-1, +0.1666666666666669072e+0);
    double p7654 = fma(s2, p76, p54);
    double p3210 = fma(s2, p32, p10);
    double u = fma(s8, p98, fma(s4, p7654, p3210));
    u = fma(u, s, 0.5);
    u = fma(u, s, 1.0);
    u = fma(u, s, 1.0);

    int32_t q1 = q >> 1;
    u = u * cpu_f64_from_bits((uint64_t)(uint32_t)(q1 + 0x3ff) << 52);
    u = u * cpu_f64_from_bits((uint64_t)(uint32_t)(q - q1 + 0x3ff) << 52);

    uint64_t inf = CPU_MASK64(d > 709.78271114955742909217217426);
    uint64_t ub = (cpu_f64_bits(u) & ~inf) | (UINT64_C(0x7ff0000000000000) & inf);
    return cpu_f64_from_bits(ub & ~CPU_MASK64(d < -1000.0));
}

#endif
