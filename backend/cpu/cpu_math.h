/* cpu_math.h — exp, tanh, log, log1p and expm1 for the chunk loops of the CPU backend, bit for bit
 * PyTorch's CPU functions.
 *
 * PyTorch computes exp of float32 and float64 on the CPU (torch.exp, softmax, log_softmax,
 * logsumexp, the vector body of sigmoid) with Vectorized<T>::exp(), which is SLEEF's
 * Sleef_expf8_u10 / Sleef_expd4_u10, and torch.tanh, torch.log (logsumexp's log), torch.log1p and
 * torch.expm1 with Vectorized<T>'s functions of those names, SLEEF's u10 ones; on a CPU with AVX2
 * those are SLEEF's AVX2 builds, whose multiply-adds are fused (vfmadd). The functions here are the
 * same algorithms written as scalar, branch-free C (sleefsimdsp.c xexpf, xtanhf, xlogf_u1,
 * xlog1pf, xexpm1f and sleefsimddp.c xexp, xtanh, xlog_u1, xlog1p, xexpm1 with ENABLE_FMA_SP /
 * ENABLE_FMA_DP, of SLEEF 3.5.1, which Debian's torch links,
 * and their helpers): every operation that SLEEF fuses is an fma()/fmaf() here and
 * every other one a separate, rounded IEEE operation (ISO C mode keeps GCC from contracting
 * them), so the results are the same bits as torch's whatever machine runs them, and a loop
 * over them has no call that GCC cannot vectorise.
 *
 * fma is one instruction only where the target has it, so loops that call these functions are
 * compiled with CPU_MATH_CLONES: a clone for x86-64-v3 (AVX2 and FMA) picked at load time, and
 * the baseline one, where fma is libm's (exact, slow, not vectorised: the same bits). On other
 * architectures with FMA (AArch64) the one build vectorises.
 *
 * exp's range reduction: d = q ln2 + s with q = rint(d / ln2) and ln2 split in two (Cody-Waite), then a
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

/* ---- tanh: SLEEF's xtanhf and xtanh (u10), FMA builds ----
 *
 * e = exp(|x|) as an unevaluated sum hi + lo (SLEEF's expk2f / expk2: the reduction and the
 * polynomial's last terms in double-float or double-double arithmetic), then
 * (e - 1/e) / (e + 1/e) in the same arithmetic, rounded once; 1 past |x| 8.664339742 (float) or
 * 18.714973875 (double), the sign of x put back, NaN for NaN (all bits set, as SLEEF's
 * vor with the NaN mask gives). The pair operations are df.h's and dd.h's FMA forms, named after
 * them: where SLEEF writes vfma / vfmapn / vfmanp / vmla it is fma() here, and everything else is
 * one rounded operation (vrec is a division). */
typedef struct {
    float x, y;
} CpuF2;
typedef struct {
    double x, y;
} CpuD2;

CPU_MATH_INLINE CpuF2 cpu_f2(float x, float y)
{
    CpuF2 r = {x, y};
    return r;
}

CPU_MATH_INLINE CpuD2 cpu_d2(double x, double y)
{
    CpuD2 r = {x, y};
    return r;
}

/* dfadd2_vf2_vf2_vf */
CPU_MATH_INLINE CpuF2 cpu_df_add2_f(CpuF2 x, float y)
{
    float s = x.x + y, v = s - x.x;
    float t = (x.x - (s - v)) + (y - v);
    return cpu_f2(s, t + x.y);
}

/* dfadd2_vf2_vf2_vf2 */
CPU_MATH_INLINE CpuF2 cpu_df_add2(CpuF2 x, CpuF2 y)
{
    float s = x.x + y.x, v = s - x.x;
    float t = (x.x - (s - v)) + (y.x - v);
    return cpu_f2(s, t + (x.y + y.y));
}

/* dfadd_vf2_vf2_vf2 (|x| >= |y|) */
CPU_MATH_INLINE CpuF2 cpu_df_add(CpuF2 x, CpuF2 y)
{
    float s = x.x + y.x;
    return cpu_f2(s, (((x.x - s) + y.x) + x.y) + y.y);
}

/* dfadd_vf2_vf_vf2 */
CPU_MATH_INLINE CpuF2 cpu_df_add_f2(float x, CpuF2 y)
{
    float s = x + y.x;
    return cpu_f2(s, ((x - s) + y.x) + y.y);
}

/* dfmul_vf2_vf2_vf */
CPU_MATH_INLINE CpuF2 cpu_df_mul_f(CpuF2 x, float y)
{
    float s = x.x * y;
    return cpu_f2(s, fmaf(x.y, y, fmaf(x.x, y, -s)));
}

/* dfmul_vf2_vf2_vf2 */
CPU_MATH_INLINE CpuF2 cpu_df_mul(CpuF2 x, CpuF2 y)
{
    float s = x.x * y.x;
    return cpu_f2(s, fmaf(x.x, y.y, fmaf(x.y, y.x, fmaf(x.x, y.x, -s))));
}

/* dfsqu_vf2_vf2 */
CPU_MATH_INLINE CpuF2 cpu_df_squ(CpuF2 x)
{
    float s = x.x * x.x;
    return cpu_f2(s, fmaf(x.x + x.x, x.y, fmaf(x.x, x.x, -s)));
}

/* dfrec_vf2_vf2 */
CPU_MATH_INLINE CpuF2 cpu_df_rec(CpuF2 d)
{
    float s = 1.0f / d.x;
    return cpu_f2(s, s * fmaf(-d.y, s, fmaf(-d.x, s, 1.0f)));
}

/* dfdiv_vf2_vf2_vf2 */
CPU_MATH_INLINE CpuF2 cpu_df_div(CpuF2 n, CpuF2 d)
{
    float t = 1.0f / d.x, s = n.x * t;
    float u = fmaf(t, n.x, -s);
    float v = fmaf(-d.y, t, fmaf(-d.x, t, 1.0f));
    return cpu_f2(s, fmaf(s, v, fmaf(n.y, t, u)));
}

/* expk2f(d): exp of the pair d as a pair, with SLEEF's zero (both parts) for d.x below -104.
 * rint((d.x + d.y) / ln2) is taken as in cpu_expk2_f32 (the product kept under 2^22, else 0), which
 * differs from SLEEF's cvtps2dq only where d.x + d.y is past about +-2.9e6: below, both give 0;
 * above, exp overflows and the callers replace the result. */
CPU_MATH_INLINE CpuF2 cpu_expk2_pair_f32(CpuF2 d)
{
    float t = (d.x + d.y) * 1.442695040888963407359924681001892137426645954152985934135449406931f;
    t = cpu_f32_from_bits(cpu_f32_bits(t) & CPU_MASK32(fabsf(t) < 0x1p22f));
    float qf = (t + 0x1.8p23f) - 0x1.8p23f;
    int32_t q = (int32_t)qf;

    CpuF2 s = cpu_df_add2_f(d, qf * -0.693145751953125f);
    s = cpu_df_add2_f(s, qf * -1.428606765330187045e-06f);

    float u = +0.1980960224e-3f;
    u = fmaf(u, s.x, +0.1394256484e-2f);
    u = fmaf(u, s.x, +0.8333456703e-2f);
    u = fmaf(u, s.x, +0.4166637361e-1f);

    CpuF2 r = cpu_df_add2_f(cpu_df_mul_f(s, u), +0.166666659414234244790680580464e+0f);
    r = cpu_df_add2_f(cpu_df_mul(s, r), 0.5f);
    r = cpu_df_add2(s, cpu_df_mul(cpu_df_squ(s), r));
    r = cpu_df_add_f2(1.0f, r);

    /* vldexp2 on both parts */
    int32_t q1 = q >> 1;
    float p1 = cpu_f32_from_bits((uint32_t)(q1 + 0x7f) << 23);
    float p2 = cpu_f32_from_bits((uint32_t)(q - q1 + 0x7f) << 23);
    uint32_t keep = ~CPU_MASK32(d.x < -104.0f);
    return cpu_f2(cpu_f32_from_bits(cpu_f32_bits(r.x * p1 * p2) & keep),
                  cpu_f32_from_bits(cpu_f32_bits(r.y * p1 * p2) & keep));
}

/* expk2f(d, 0): exp(d) as a pair, for the d whose results tanh and expm1 keep. */
CPU_MATH_INLINE CpuF2 cpu_expk2_f32(float d)
{
    return cpu_expk2_pair_f32(cpu_f2(d, 0.0f));
}

/* tanh(x) in float: SLEEF's xtanhf (u10), FMA build. */
CPU_MATH_INLINE float cpu_tanh_f32(float x)
{
    float a = fabsf(x);
    CpuF2 d = cpu_expk2_f32(a);
    CpuF2 e = cpu_df_rec(d);
    CpuF2 r = cpu_df_div(cpu_df_add(d, cpu_f2(-e.x, -e.y)), cpu_df_add(d, e));
    float y = r.x + r.y;
    uint32_t one = CPU_MASK32(a > 8.664339742f) | CPU_MASK32(y != y);
    uint32_t yb = (cpu_f32_bits(y) & ~one) | (0x3f800000u & one);
    yb ^= cpu_f32_bits(x) & 0x80000000u;
    return cpu_f32_from_bits(yb | CPU_MASK32(x != x));
}

/* ddadd2_vd2_vd2_vd */
CPU_MATH_INLINE CpuD2 cpu_dd_add2_d(CpuD2 x, double y)
{
    double s = x.x + y, v = s - x.x;
    double w = (x.x - (s - v)) + (y - v);
    return cpu_d2(s, w + x.y);
}

/* ddadd2_vd2_vd2_vd2 */
CPU_MATH_INLINE CpuD2 cpu_dd_add2(CpuD2 x, CpuD2 y)
{
    double s = x.x + y.x, v = s - x.x;
    double t = (x.x - (s - v)) + (y.x - v);
    return cpu_d2(s, t + (x.y + y.y));
}

/* ddadd_vd2_vd2_vd2 (|x| >= |y|) */
CPU_MATH_INLINE CpuD2 cpu_dd_add(CpuD2 x, CpuD2 y)
{
    double s = x.x + y.x;
    return cpu_d2(s, (((x.x - s) + y.x) + x.y) + y.y);
}

/* ddadd_vd2_vd_vd2 */
CPU_MATH_INLINE CpuD2 cpu_dd_add_d2(double x, CpuD2 y)
{
    double s = x + y.x;
    return cpu_d2(s, ((x - s) + y.x) + y.y);
}

/* ddmul_vd2_vd2_vd */
CPU_MATH_INLINE CpuD2 cpu_dd_mul_d(CpuD2 x, double y)
{
    double s = x.x * y;
    return cpu_d2(s, fma(x.y, y, fma(x.x, y, -s)));
}

/* ddmul_vd2_vd2_vd2 */
CPU_MATH_INLINE CpuD2 cpu_dd_mul(CpuD2 x, CpuD2 y)
{
    double s = x.x * y.x;
    return cpu_d2(s, fma(x.x, y.y, fma(x.y, y.x, fma(x.x, y.x, -s))));
}

/* ddsqu_vd2_vd2 */
CPU_MATH_INLINE CpuD2 cpu_dd_squ(CpuD2 x)
{
    double s = x.x * x.x;
    return cpu_d2(s, fma(x.x + x.x, x.y, fma(x.x, x.x, -s)));
}

/* ddrec_vd2_vd2 */
CPU_MATH_INLINE CpuD2 cpu_dd_rec(CpuD2 d)
{
    double s = 1.0 / d.x;
    return cpu_d2(s, s * fma(-d.y, s, fma(-d.x, s, 1.0)));
}

/* dddiv_vd2_vd2_vd2 */
CPU_MATH_INLINE CpuD2 cpu_dd_div(CpuD2 n, CpuD2 d)
{
    double t = 1.0 / d.x, s = n.x * t;
    double u = fma(t, n.x, -s);
    double v = fma(-d.y, t, fma(-d.x, t, 1.0));
    return cpu_d2(s, fma(s, v, fma(n.y, t, u)));
}

/* expk2(d): exp of the pair d as a pair (Estrin's scheme for the polynomial), with SLEEF's zero
 * for d.x below -1000; rint as in cpu_expk2_f64 (the product kept under 2^30, else 0: it differs
 * from SLEEF's only where d.x + d.y is past about +-7.4e8, as in cpu_expk2_pair_f32). */
CPU_MATH_INLINE CpuD2 cpu_expk2_pair_f64(CpuD2 d)
{
    double t = (d.x + d.y) * 1.442695040888963407359924681001892137426645954152985934135449406931;
    t = cpu_f64_from_bits(cpu_f64_bits(t) & CPU_MASK64(fabs(t) < 0x1p30));
    double qd = (t + 0x1.8p52) - 0x1.8p52;
    int32_t q = (int32_t)qd;

    CpuD2 s = cpu_dd_add2_d(d, qd * -.69314718055966295651160180568695068359375);
    s = cpu_dd_add2_d(s, qd * -.28235290563031577122588448175013436025525412068e-12);

    CpuD2 s2 = cpu_dd_squ(s), s4 = cpu_dd_squ(s2);
    double x = s.x, x2 = s2.x, x4 = s4.x, x8 = s4.x * s4.x;
    double p98 = fma(x, +0.1602472219709932072e-9, +0.2092255183563157007e-8);
    double p76 = fma(x, +0.2505230023782644465e-7, +0.2755724800902135303e-6);
    double p54 = fma(x, +0.2755731892386044373e-5, +0.2480158735605815065e-4);
    double p32 = fma(x, +0.1984126984148071858e-3, +0.1388888888886763255e-2);
    double p10 = fma(x, +0.8333333333333347095e-2, +0.4166666666666669905e-1);
    double u = fma(x8, p98, fma(x4, fma(x2, p76, p54), fma(x2, p32, p10)));

    CpuD2 r = cpu_dd_add_d2(0.5, cpu_dd_mul_d(s, +0.1666666666666666574e+0));
    r = cpu_dd_add_d2(1.0, cpu_dd_mul(r, s));
    r = cpu_dd_add_d2(1.0, cpu_dd_mul(r, s));
    r = cpu_dd_add(r, cpu_dd_mul_d(s4, u));

    int32_t q1 = q >> 1;
    double p1 = cpu_f64_from_bits((uint64_t)(uint32_t)(q1 + 0x3ff) << 52);
    double p2 = cpu_f64_from_bits((uint64_t)(uint32_t)(q - q1 + 0x3ff) << 52);
    uint64_t keep = ~CPU_MASK64(d.x < -1000.0);
    return cpu_d2(cpu_f64_from_bits(cpu_f64_bits(r.x * p1 * p2) & keep),
                  cpu_f64_from_bits(cpu_f64_bits(r.y * p1 * p2) & keep));
}

/* expk2(d, 0), as cpu_expk2_f32. */
CPU_MATH_INLINE CpuD2 cpu_expk2_f64(double d)
{
    return cpu_expk2_pair_f64(cpu_d2(d, 0.0));
}

/* tanh(x) in double: SLEEF's xtanh (u10), FMA build. */
CPU_MATH_INLINE double cpu_tanh_f64(double x)
{
    double a = fabs(x);
    CpuD2 d = cpu_expk2_f64(a);
    CpuD2 e = cpu_dd_rec(d);
    CpuD2 r = cpu_dd_div(cpu_dd_add2(d, cpu_d2(-e.x, -e.y)), cpu_dd_add2(d, e));
    double y = r.x + r.y;
    uint64_t one = CPU_MASK64(a > 18.714973875) | CPU_MASK64(y != y);
    uint64_t yb = (cpu_f64_bits(y) & ~one) | (UINT64_C(0x3ff0000000000000) & one);
    yb ^= cpu_f64_bits(x) & UINT64_C(0x8000000000000000);
    return cpu_f64_from_bits(yb | CPU_MASK64(x != x));
}

/* ---- log, log2 and log10: SLEEF's xlogf_u1 / xlog_u1, xlog2f / xlog2 and xlog10f / xlog10 (u10),
 * FMA builds, AVX2's code path ----
 *
 * d = m 2^e with m in [0.75, 1.5) (a denormal d scaled by 2^64 first), x = (m - 1) / (m + 1) as
 * a pair, then e ln2 + 2x (log), e + x 2/ln2 (log2) or e log10(2) + x 2/ln10 (log10) in pair
 * arithmetic with the pair constants SLEEF uses, the odd polynomial's terms past the first in
 * plain arithmetic, rounded once. +inf for +inf, -inf for +-0, the quiet NaN 0x7fc00000
 * (0x7ff8000000000000) for negative and NaN inputs. Constants SLEEF writes as double literals
 * are rounded from the double, as its vcast_vf_f does. */

/* dfadd2_vf2_vf_vf */
CPU_MATH_INLINE CpuF2 cpu_df_add2_ff(float x, float y)
{
    float s = x + y, v = s - x;
    return cpu_f2(s, (x - (s - v)) + (y - v));
}

/* dfadd2_vf2_vf_vf2 */
CPU_MATH_INLINE CpuF2 cpu_df_add2_f2(float x, CpuF2 y)
{
    float s = x + y.x, v = s - x;
    return cpu_f2(s, ((x - (s - v)) + (y.x - v)) + y.y);
}

/* dfadd_vf2_vf2_vf */
CPU_MATH_INLINE CpuF2 cpu_df_add_f(CpuF2 x, float y)
{
    float s = x.x + y;
    return cpu_f2(s, ((x.x - s) + y) + x.y);
}

/* ddadd2_vd2_vd_vd */
CPU_MATH_INLINE CpuD2 cpu_dd_add2_dd(double x, double y)
{
    double s = x + y, v = s - x;
    return cpu_d2(s, (x - (s - v)) + (y - v));
}

/* ddadd2_vd2_vd_vd2 */
CPU_MATH_INLINE CpuD2 cpu_dd_add2_d2(double x, CpuD2 y)
{
    double s = x + y.x, v = s - x;
    return cpu_d2(s, ((x - (s - v)) + (y.x - v)) + y.y);
}

/* ddadd_vd2_vd2_vd */
CPU_MATH_INLINE CpuD2 cpu_dd_add_d(CpuD2 x, double y)
{
    double s = x.x + y;
    return cpu_d2(s, ((x.x - s) + y) + x.y);
}

/* The reduction the logs share: ds (d, a denormal scaled by 2^64), its e and x. */
typedef struct {
    float ds;
    int32_t e;
    CpuF2 x;
} CpuLogArgF32;
typedef struct {
    double ds;
    int32_t e;
    CpuD2 x;
} CpuLogArgF64;

CPU_MATH_INLINE CpuLogArgF32 cpu_log_arg_f32(float d)
{
    CpuLogArgF32 a;
    uint32_t tiny = CPU_MASK32(d < 0x1p-126f);
    a.ds = cpu_f32_from_bits((cpu_f32_bits(d * 0x1p64f) & tiny) | (cpu_f32_bits(d) & ~tiny));
    /* vilogb2k of ds * (1 / 0.75), and vldexp3: e taken out of the exponent field directly */
    a.e = (int32_t)((cpu_f32_bits(a.ds * (1.0f / 0.75f)) >> 23) & 0xff) - 0x7f;
    float m = cpu_f32_from_bits(cpu_f32_bits(a.ds) + ((uint32_t)-a.e << 23));
    a.e -= (int32_t)(tiny & 64);
    a.x = cpu_df_div(cpu_df_add2_ff(-1.0f, m), cpu_df_add2_ff(1.0f, m));
    return a;
}

CPU_MATH_INLINE CpuLogArgF64 cpu_log_arg_f64(double d)
{
    CpuLogArgF64 a;
    uint64_t tiny = CPU_MASK64(d < 0x1p-1022);
    a.ds = cpu_f64_from_bits((cpu_f64_bits(d * 0x1p64) & tiny) | (cpu_f64_bits(d) & ~tiny));
    a.e = (int32_t)((cpu_f64_bits(a.ds * (1.0 / 0.75)) >> 52) & 0x7ff) - 0x3ff;
    double m = cpu_f64_from_bits(cpu_f64_bits(a.ds) + ((uint64_t)((uint32_t)-a.e << 20) << 32));
    a.e -= (int32_t)(tiny & 64);
    a.x = cpu_dd_div(cpu_dd_add2_dd(-1.0, m), cpu_dd_add2_dd(1.0, m));
    return a;
}

/* r with the logs' special values put in, by ds. */
CPU_MATH_INLINE float cpu_log_specials_f32(float r, float ds)
{
    uint32_t rb = cpu_f32_bits(r);
    uint32_t inf = CPU_MASK32(ds == INFINITY), nan = CPU_MASK32(ds < 0.0f) | CPU_MASK32(ds != ds);
    uint32_t zero = CPU_MASK32(ds == 0.0f);
    rb = (rb & ~inf) | (0x7f800000u & inf);
    rb = (rb & ~nan) | (0x7fc00000u & nan);
    rb = (rb & ~zero) | (0xff800000u & zero);
    return cpu_f32_from_bits(rb);
}

CPU_MATH_INLINE double cpu_log_specials_f64(double r, double ds)
{
    uint64_t rb = cpu_f64_bits(r);
    uint64_t inf = CPU_MASK64(ds == INFINITY), nan = CPU_MASK64(ds < 0.0) | CPU_MASK64(ds != ds);
    uint64_t zero = CPU_MASK64(ds == 0.0);
    rb = (rb & ~inf) | (UINT64_C(0x7ff0000000000000) & inf);
    rb = (rb & ~nan) | (UINT64_C(0x7ff8000000000000) & nan);
    rb = (rb & ~zero) | (UINT64_C(0xfff0000000000000) & zero);
    return cpu_f64_from_bits(rb);
}

/* log(d) in float: SLEEF's xlogf_u1, FMA build. */
CPU_MATH_INLINE float cpu_log_f32(float d)
{
    CpuLogArgF32 a = cpu_log_arg_f32(d);
    float x2 = a.x.x * a.x.x;
    float t = +0.3027294874e+0f;
    t = fmaf(t, x2, +0.3996108174e+0f);
    t = fmaf(t, x2, +0.6666694880e+0f);
    CpuF2 s = cpu_df_mul_f(cpu_f2(0.69314718246459960938f, -1.904654323148236017e-09f), (float)a.e);
    s = cpu_df_add(s, cpu_f2(a.x.x * 2.0f, a.x.y * 2.0f));
    s = cpu_df_add_f(s, (x2 * a.x.x) * t);
    return cpu_log_specials_f32(s.x + s.y, a.ds);
}

/* log2(d) in float: SLEEF's xlog2f, FMA build. */
CPU_MATH_INLINE float cpu_log2_f32(float d)
{
    CpuLogArgF32 a = cpu_log_arg_f32(d);
    float x2 = a.x.x * a.x.x;
    float t = +0.4374550283e+0f;
    t = fmaf(t, x2, +0.5764790177e+0f);
    t = fmaf(t, x2, +0.9618012905120f);
    CpuF2 s = cpu_df_add2_f2((float)a.e, cpu_df_mul(a.x, cpu_f2((float)2.8853900432586669922, (float)3.2734474483568488616e-08)));
    s = cpu_df_add2_f(s, (x2 * a.x.x) * t);
    return cpu_log_specials_f32(s.x + s.y, a.ds);
}

/* log10(d) in float: SLEEF's xlog10f, FMA build. */
CPU_MATH_INLINE float cpu_log10_f32(float d)
{
    CpuLogArgF32 a = cpu_log_arg_f32(d);
    float x2 = a.x.x * a.x.x;
    float t = (float)+0.1314289868e+0;
    t = fmaf(t, x2, (float)+0.1735493541e+0);
    t = fmaf(t, x2, (float)+0.2895309627e+0);
    CpuF2 s = cpu_df_mul_f(cpu_f2((float)0.30103001, (float)-1.432098889e-08), (float)a.e);
    s = cpu_df_add(s, cpu_df_mul(a.x, cpu_f2((float)0.868588984, (float)-2.170757285e-08)));
    s = cpu_df_add_f(s, (x2 * a.x.x) * t);
    return cpu_log_specials_f32(s.x + s.y, a.ds);
}

/* log(d) in double: SLEEF's xlog_u1, FMA build (Estrin's scheme for the polynomials, here and
 * below). */
CPU_MATH_INLINE double cpu_log_f64(double d)
{
    CpuLogArgF64 a = cpu_log_arg_f64(d);
    double x2 = a.x.x * a.x.x, x4 = x2 * x2, x8 = x4 * x4;
    double t = fma(x8, fma(x4, 0.1532076988502701353e+0, fma(x2, 0.1525629051003428716e+0, 0.1818605932937785996e+0)),
                   fma(x4, fma(x2, 0.2222214519839380009e+0, 0.2857142932794299317e+0),
                       fma(x2, 0.3999999999635251990e+0, 0.6666666666667333541e+0)));
    CpuD2 s = cpu_dd_mul_d(cpu_d2(0.693147180559945286226764, 2.319046813846299558417771e-17), (double)a.e);
    s = cpu_dd_add(s, cpu_d2(a.x.x * 2.0, a.x.y * 2.0));
    s = cpu_dd_add_d(s, (x2 * a.x.x) * t);
    return cpu_log_specials_f64(s.x + s.y, a.ds);
}

/* log2(d) in double: SLEEF's xlog2, FMA build. */
CPU_MATH_INLINE double cpu_log2_f64(double d)
{
    CpuLogArgF64 a = cpu_log_arg_f64(d);
    double x2 = a.x.x * a.x.x, x4 = x2 * x2, x8 = x4 * x4;
    double t = fma(x8, fma(x4, +0.2211941750456081490e+0, fma(x2, +0.2200768693152277689e+0, +0.2623708057488514656e+0)),
                   fma(x4, fma(x2, +0.3205977477944495502e+0, +0.4121985945485324709e+0),
                       fma(x2, +0.5770780162997058982e+0, +0.96179669392608091449)));
    CpuD2 s = cpu_dd_add2_d2((double)a.e, cpu_dd_mul(a.x, cpu_d2(2.885390081777926774, 6.0561604995516736434e-18)));
    s = cpu_dd_add2_d(s, (x2 * a.x.x) * t);
    return cpu_log_specials_f64(s.x + s.y, a.ds);
}

/* log10(d) in double: SLEEF's xlog10, FMA build. */
CPU_MATH_INLINE double cpu_log10_f64(double d)
{
    CpuLogArgF64 a = cpu_log_arg_f64(d);
    double x2 = a.x.x * a.x.x, x4 = x2 * x2, x8 = x4 * x4;
    double t = fma(x8, fma(x4, +0.6653725819576758460e-1, fma(x2, +0.6625722782820833712e-1, +0.7898105214313944078e-1)),
                   fma(x4, fma(x2, +0.9650955035715275132e-1, +0.1240841409721444993e+0),
                       fma(x2, +0.1737177927454605086e+0, +0.2895296546021972617e+0)));
    CpuD2 s = cpu_dd_mul_d(cpu_d2(0.30102999566398119802, -2.803728127785170339e-18), (double)a.e);
    s = cpu_dd_add(s, cpu_dd_mul(a.x, cpu_d2(0.86858896380650363334, 1.1430059694096389311e-17)));
    s = cpu_dd_add_d(s, (x2 * a.x.x) * t);
    return cpu_log_specials_f64(s.x + s.y, a.ds);
}

/* ---- log1p and expm1: SLEEF's xlog1pf / xlog1p and xexpm1f / xexpm1 (u10), FMA builds ---- */

/* dfadd_vf2_vf_vf */
CPU_MATH_INLINE CpuF2 cpu_df_add_ff(float x, float y)
{
    float s = x + y;
    return cpu_f2(s, (x - s) + y);
}

/* log(1 + d) in float: SLEEF's xlog1pf, FMA build. As cpu_log_f32, on the m of 1 + d, with m
 * computed from d itself (fma(d, 2^-e, 2^-e - 1)) so that small d keep their bits. */
CPU_MATH_INLINE float cpu_log1p_f32(float d)
{
    float dp1 = d + 1.0f;
    uint32_t tiny = CPU_MASK32(dp1 < 0x1p-126f);
    dp1 = cpu_f32_from_bits((cpu_f32_bits(dp1 * 0x1p64f) & tiny) | (cpu_f32_bits(dp1) & ~tiny));
    int32_t e = (int32_t)((cpu_f32_bits(dp1 * (1.0f / 0.75f)) >> 23) & 0xff) - 0x7f;
    float t = cpu_f32_from_bits(0x3f800000u + ((uint32_t)-e << 23));
    float m = fmaf(d, t, t - 1.0f);
    e -= (int32_t)(tiny & 64);

    CpuF2 s = cpu_df_mul_f(cpu_f2(0.69314718246459960938f, -1.904654323148236017e-09f), (float)e);
    CpuF2 x = cpu_df_div(cpu_f2(m, 0.0f), cpu_df_add_ff(2.0f, m));
    float x2 = x.x * x.x;

    float u = +0.3027294874e+0f;
    u = fmaf(u, x2, +0.3996108174e+0f);
    u = fmaf(u, x2, +0.6666694880e+0f);

    s = cpu_df_add(s, cpu_f2(x.x * 2.0f, x.y * 2.0f));
    s = cpu_df_add_f(s, (x2 * x.x) * u);
    uint32_t rb = cpu_f32_bits(s.x + s.y);

    uint32_t inf = CPU_MASK32(d > 1e+38f), minf = CPU_MASK32(d == -1.0f);
    uint32_t negzero = CPU_MASK32(cpu_f32_bits(d) == 0x80000000u);
    rb = (rb & ~inf) | (0x7f800000u & inf);
    rb |= CPU_MASK32(-1.0f > d);
    rb = (rb & ~minf) | (0xff800000u & minf);
    return cpu_f32_from_bits((rb & ~negzero) | (0x80000000u & negzero));
}

/* exp(a) - 1 in float: SLEEF's xexpm1f, FMA build: the pair exp(a) (expk2f) less 1, rounded once. */
CPU_MATH_INLINE float cpu_expm1_f32(float a)
{
    CpuF2 d = cpu_df_add2_f(cpu_expk2_f32(a), -1.0f);
    uint32_t rb = cpu_f32_bits(d.x + d.y);
    uint32_t inf = CPU_MASK32(a > 88.72283172607421875f), m1 = CPU_MASK32(a < -16.635532333438687426013570f);
    uint32_t negzero = CPU_MASK32(cpu_f32_bits(a) == 0x80000000u);
    rb = (rb & ~inf) | (0x7f800000u & inf);
    rb = (rb & ~m1) | (0xbf800000u & m1);
    return cpu_f32_from_bits((rb & ~negzero) | (0x80000000u & negzero));
}

/* ddadd_vd2_vd_vd */
CPU_MATH_INLINE CpuD2 cpu_dd_add_dd(double x, double y)
{
    double s = x + y;
    return cpu_d2(s, (x - s) + y);
}

/* log(1 + d) in double: SLEEF's xlog1p, FMA build. */
CPU_MATH_INLINE double cpu_log1p_f64(double d)
{
    double dp1 = d + 1.0;
    uint64_t tiny = CPU_MASK64(dp1 < 0x1p-1022);
    dp1 = cpu_f64_from_bits((cpu_f64_bits(dp1 * 0x1p64) & tiny) | (cpu_f64_bits(dp1) & ~tiny));
    int32_t e = (int32_t)((cpu_f64_bits(dp1 * (1.0 / 0.75)) >> 52) & 0x7ff) - 0x3ff;
    double t = cpu_f64_from_bits(UINT64_C(0x3ff0000000000000) + ((uint64_t)((uint32_t)-e << 20) << 32));
    double m = fma(d, t, t - 1.0);
    e -= (int32_t)(tiny & 64);

    CpuD2 s = cpu_dd_mul_d(cpu_d2(0.693147180559945286226764, 2.319046813846299558417771e-17), (double)e);
    CpuD2 x = cpu_dd_div(cpu_d2(m, 0.0), cpu_dd_add_dd(2.0, m));
    double x2 = x.x * x.x, x4 = x2 * x2, x8 = x4 * x4;
    double u = fma(x8, fma(x4, 0.1532076988502701353e+0, fma(x2, 0.1525629051003428716e+0, 0.1818605932937785996e+0)),
                   fma(x4, fma(x2, 0.2222214519839380009e+0, 0.2857142932794299317e+0),
                       fma(x2, 0.3999999999635251990e+0, 0.6666666666667333541e+0)));

    s = cpu_dd_add(s, cpu_d2(x.x * 2.0, x.y * 2.0));
    s = cpu_dd_add_d(s, (x2 * x.x) * u);
    uint64_t rb = cpu_f64_bits(s.x + s.y);

    uint64_t inf = CPU_MASK64(d > 1e+307), nan = CPU_MASK64(d < -1.0) | CPU_MASK64(d != d);
    uint64_t minf = CPU_MASK64(d == -1.0), negzero = CPU_MASK64(cpu_f64_bits(d) == UINT64_C(0x8000000000000000));
    rb = (rb & ~inf) | (UINT64_C(0x7ff0000000000000) & inf);
    rb = (rb & ~nan) | (UINT64_C(0x7ff8000000000000) & nan);
    rb = (rb & ~minf) | (UINT64_C(0xfff0000000000000) & minf);
    return cpu_f64_from_bits((rb & ~negzero) | (UINT64_C(0x8000000000000000) & negzero));
}

/* exp(a) - 1 in double: SLEEF's xexpm1, FMA build. */
CPU_MATH_INLINE double cpu_expm1_f64(double a)
{
    CpuD2 d = cpu_dd_add2_d(cpu_expk2_f64(a), -1.0);
    uint64_t rb = cpu_f64_bits(d.x + d.y);
    uint64_t inf = CPU_MASK64(a > 709.782712893383996732223), m1 = CPU_MASK64(a < -36.736800569677101399113302437);
    uint64_t negzero = CPU_MASK64(cpu_f64_bits(a) == UINT64_C(0x8000000000000000));
    rb = (rb & ~inf) | (UINT64_C(0x7ff0000000000000) & inf);
    rb = (rb & ~m1) | (UINT64_C(0xbff0000000000000) & m1);
    return cpu_f64_from_bits((rb & ~negzero) | (UINT64_C(0x8000000000000000) & negzero));
}

/* ---- more of SLEEF's helpers, for cpu_math_erf.h, cpu_math_arc.h and cpu_math_trig.h ----
 *
 * Selections by mask (vsel: all ones where a condition holds), more of df.h's and dd.h's pair
 * operations (FMA forms), and the square roots SLEEF takes from sqrtps / sqrtpd. */

/* vsel_vf_vo_vf_vf: x where m is set, else y */
CPU_MATH_INLINE float cpu_sel_f32(uint32_t m, float x, float y)
{
    return cpu_f32_from_bits((cpu_f32_bits(x) & m) | (cpu_f32_bits(y) & ~m));
}

/* vsel_vf_vo_vo_f_f_f: d0 where m0, else d1 where m1, else d2 */
CPU_MATH_INLINE float cpu_sel3_f32(uint32_t m0, uint32_t m1, float d0, float d1, float d2)
{
    return cpu_sel_f32(m0, d0, cpu_sel_f32(m1, d1, d2));
}

/* vsel_vf_vo_vo_vo_f_f_f_f: d0 where m0, else d1 where m1, else d2 where m2, else d3 */
CPU_MATH_INLINE float cpu_sel4_f32(uint32_t m0, uint32_t m1, uint32_t m2, float d0, float d1, float d2, float d3)
{
    return cpu_sel_f32(m0, d0, cpu_sel_f32(m1, d1, cpu_sel_f32(m2, d2, d3)));
}

/* vsel_vd_vo_vd_vd */
CPU_MATH_INLINE double cpu_sel_f64(uint64_t m, double x, double y)
{
    return cpu_f64_from_bits((cpu_f64_bits(x) & m) | (cpu_f64_bits(y) & ~m));
}

/* vsel_vd_vo_vo_d_d_d */
CPU_MATH_INLINE double cpu_sel3_f64(uint64_t m0, uint64_t m1, double d0, double d1, double d2)
{
    return cpu_sel_f64(m0, d0, cpu_sel_f64(m1, d1, d2));
}

/* vsel_vd_vo_vo_vo_d_d_d_d */
CPU_MATH_INLINE double cpu_sel4_f64(uint64_t m0, uint64_t m1, uint64_t m2, double d0, double d1, double d2,
                                    double d3)
{
    return cpu_sel_f64(m0, d0, cpu_sel_f64(m1, d1, cpu_sel_f64(m2, d2, d3)));
}

/* vsel_vf2_vo_vf2_vf2 */
CPU_MATH_INLINE CpuF2 cpu_df_sel(uint32_t m, CpuF2 x, CpuF2 y)
{
    return cpu_f2(cpu_sel_f32(m, x.x, y.x), cpu_sel_f32(m, x.y, y.y));
}

/* vsel_vd2_vo_vd2_vd2 */
CPU_MATH_INLINE CpuD2 cpu_dd_sel(uint64_t m, CpuD2 x, CpuD2 y)
{
    return cpu_d2(cpu_sel_f64(m, x.x, y.x), cpu_sel_f64(m, x.y, y.y));
}

/* vcast_vf2_d: a double constant as a float pair, the double rounded to float and the rest */
CPU_MATH_INLINE CpuF2 cpu_df_from_d(double d)
{
    return cpu_f2((float)d, (float)(d - (double)(float)d));
}

/* vsel_vf2_vo_vo_d_d_d */
CPU_MATH_INLINE CpuF2 cpu_df_sel3_d(uint32_t m0, uint32_t m1, double d0, double d1, double d2)
{
    return cpu_df_sel(m0, cpu_df_from_d(d0), cpu_df_sel(m1, cpu_df_from_d(d1), cpu_df_from_d(d2)));
}

/* vsel_vf2_vo_vo_vo_d_d_d_d */
CPU_MATH_INLINE CpuF2 cpu_df_sel4_d(uint32_t m0, uint32_t m1, uint32_t m2, double d0, double d1, double d2,
                                    double d3)
{
    return cpu_df_sel(m0, cpu_df_from_d(d0),
                      cpu_df_sel(m1, cpu_df_from_d(d1), cpu_df_sel(m2, cpu_df_from_d(d2), cpu_df_from_d(d3))));
}

/* dfneg_vf2_vf2 */
CPU_MATH_INLINE CpuF2 cpu_df_neg(CpuF2 x)
{
    return cpu_f2(-x.x, -x.y);
}

/* ddneg_vd2_vd2 */
CPU_MATH_INLINE CpuD2 cpu_dd_neg(CpuD2 x)
{
    return cpu_d2(-x.x, -x.y);
}

/* dfmul_vf2_vf_vf */
CPU_MATH_INLINE CpuF2 cpu_df_mul_ff(float x, float y)
{
    float s = x * y;
    return cpu_f2(s, fmaf(x, y, -s));
}

/* ddmul_vd2_vd_vd */
CPU_MATH_INLINE CpuD2 cpu_dd_mul_dd(double x, double y)
{
    double s = x * y;
    return cpu_d2(s, fma(x, y, -s));
}

/* ddsub_vd2_vd2_vd2 (|x| >= |y|) */
CPU_MATH_INLINE CpuD2 cpu_dd_sub(CpuD2 x, CpuD2 y)
{
    double s = x.x - y.x;
    double t = ((x.x - s) - y.x) + x.y;
    return cpu_d2(s, t - y.y);
}

/* dfnormalize_vf2_vf2 */
CPU_MATH_INLINE CpuF2 cpu_df_normalize(CpuF2 t)
{
    float s = t.x + t.y;
    return cpu_f2(s, (t.x - s) + t.y);
}

/* ddnormalize_vd2_vd2 */
CPU_MATH_INLINE CpuD2 cpu_dd_normalize(CpuD2 t)
{
    double s = t.x + t.y;
    return cpu_d2(s, (t.x - s) + t.y);
}

/* ddscale_vd2_vd2_vd */
CPU_MATH_INLINE CpuD2 cpu_dd_scale(CpuD2 d, double s)
{
    return cpu_d2(d.x * s, d.y * s);
}

/* vmulsign_vf_vf_vf: x with its sign flipped where y's sign bit is set */
CPU_MATH_INLINE float cpu_mulsign_f32(float x, float y)
{
    return cpu_f32_from_bits(cpu_f32_bits(x) ^ (cpu_f32_bits(y) & 0x80000000u));
}

/* vmulsign_vd_vd_vd */
CPU_MATH_INLINE double cpu_mulsign_f64(double x, double y)
{
    return cpu_f64_from_bits(cpu_f64_bits(x) ^ (cpu_f64_bits(y) & UINT64_C(0x8000000000000000)));
}

/* dfsub_vf2_vf2_vf2 (|x| >= |y|) */
CPU_MATH_INLINE CpuF2 cpu_df_sub(CpuF2 x, CpuF2 y)
{
    float s = x.x - y.x;
    float t = ((x.x - s) - y.x) + x.y;
    return cpu_f2(s, t - y.y);
}

/* dfsub_vf2_vf2_vf */
CPU_MATH_INLINE CpuF2 cpu_df_sub_f(CpuF2 x, float y)
{
    float s = x.x - y;
    return cpu_f2(s, ((x.x - s) - y) + x.y);
}

/* ddsub_vd2_vd2_vd */
CPU_MATH_INLINE CpuD2 cpu_dd_sub_d(CpuD2 x, double y)
{
    double s = x.x - y;
    return cpu_d2(s, ((x.x - s) - y) + x.y);
}

/* dfscale_vf2_vf2_vf */
CPU_MATH_INLINE CpuF2 cpu_df_scale(CpuF2 d, float s)
{
    return cpu_f2(d.x * s, d.y * s);
}

/* dfrec_vf2_vf */
CPU_MATH_INLINE CpuF2 cpu_df_rec_f(float d)
{
    float s = 1.0f / d;
    return cpu_f2(s, s * fmaf(-d, s, 1.0f));
}

/* ddrec_vd2_vd */
CPU_MATH_INLINE CpuD2 cpu_dd_rec_d(double d)
{
    double s = 1.0 / d;
    return cpu_d2(s, s * fma(-d, s, 1.0));
}

/* vsqrt_vf_vf / vsqrt_vd_vd (sqrtps / sqrtpd): IEEE's square root, which libm's sqrtf and sqrt
 * are too (x86's NaN 0xffc00000 for negative x). A loop over them vectorises only without errno
 * (-fno-math-errno: cpu_ops.c is compiled with it; elsewhere they are libm calls, the same bits). */
CPU_MATH_INLINE float cpu_sqrt_f32(float x)
{
    return sqrtf(x);
}

CPU_MATH_INLINE double cpu_sqrt_f64(double x)
{
    return sqrt(x);
}

/* dfsqrt_vf2_vf: sqrt(d) as a pair, (d + t^2) / (2 t) with t = sqrt(d) rounded. */
CPU_MATH_INLINE CpuF2 cpu_df_sqrt_f(float d)
{
    float t = cpu_sqrt_f32(d);
    return cpu_df_scale(cpu_df_mul(cpu_df_add2_f2(d, cpu_df_mul_ff(t, t)), cpu_df_rec_f(t)), 0.5f);
}

/* ddsqrt_vd2_vd */
CPU_MATH_INLINE CpuD2 cpu_dd_sqrt_d(double d)
{
    double t = cpu_sqrt_f64(d);
    return cpu_dd_scale(cpu_dd_mul(cpu_dd_add2_d2(d, cpu_dd_mul_dd(t, t)), cpu_dd_rec_d(t)), 0.5);
}

/* dfmul_vf_vf2_vf2: the product rounded to one float */
CPU_MATH_INLINE float cpu_df_mul_to_f(CpuF2 x, CpuF2 y)
{
    return fmaf(x.x, y.x, fmaf(x.y, y.x, x.x * y.y));
}

/* ddmul_vd_vd2_vd2: the product rounded to one double */
CPU_MATH_INLINE double cpu_dd_mul_to_d(CpuD2 x, CpuD2 y)
{
    return fma(x.x, y.x, fma(x.y, y.x, x.x * y.y));
}

#endif
