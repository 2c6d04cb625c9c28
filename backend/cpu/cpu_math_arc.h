/* cpu_math_arc.h — asin, acos, atan and atan2 for the chunk loops of the CPU backend, bit for bit
 * PyTorch's CPU functions.
 *
 * PyTorch computes torch.asin, torch.acos, torch.atan and torch.atan2 of float32 and float64 on
 * the CPU with Vectorized<T>'s functions of those names, which on a CPU with AVX2 are SLEEF's
 * Sleef_asinf8_u10, Sleef_acosf8_u10, Sleef_atanf8_u10, Sleef_atan2f8_u10 and Sleef_asind4_u10,
 * Sleef_acosd4_u10, Sleef_atand4_u10, Sleef_atan2d4_u10, AVX2 builds whose multiply-adds are
 * fused. The functions here are the same algorithms written as scalar, branch-free C, in the
 * manner of cpu_math.h (whose pair types, pair operations and mask selections they use):
 * sleefsimdsp.c xasinf_u1, xacosf_u1, xatanf_u1, xatan2f_u1 and sleefsimddp.c xasin_u1, xacos_u1,
 * xatan_u1, xatan2_u1 of SLEEF 3.5.1 with ENABLE_FMA_SP / ENABLE_FMA_DP, and their helpers
 * (atan2kf_u1, atan2k_u1, dfsqrt_vf2_vf, ddsqrt_vd2_vd). Every operation that SLEEF fuses (vmla,
 * vfma, vfmapn, vfmanp) is an fmaf()/fma() here and every other one a separate, rounded IEEE
 * operation; SLEEF's selections (vsel) are bit masks, so a loop over these functions has no branch
 * and no call that GCC cannot vectorise. Compile such loops with CPU_MATH_CLONES, as for
 * cpu_math.h's functions. SLEEF's code for these functions has no whole-vector branch; every
 * selection is per element.
 *
 * The algorithms: asin and acos take |x| < 0.5 directly, else sqrt((1 - |x|) / 2) as a pair
 * (asin(x) = pi/2 - 2 asin(sqrt((1 - x) / 2))), one odd polynomial for both, the result put
 * together in pair arithmetic and rounded once. atan and atan2 reduce y / x to a quotient s of
 * magnitude at most 1 (a pair) and a multiple q of pi/2, then s + s^3 p(s^2) + q pi/2 in pair
 * arithmetic; atan2 scales a tiny x (and y with it) by 2^24 (2^53), and takes SLEEF's values for
 * zeros and infinities of x and y.
 *
 * SLEEF's vsqrt is sqrtps / sqrtpd: cpu_math.h's cpu_sqrt_f32 / cpu_sqrt_f64 (sqrtf / sqrt, the
 * same bits; the vector instruction where errno is off, as in cpu_ops.c).
 *
 * NaN results: SLEEF's NaNs come from its operations' NaN propagation, which a C compiler may
 * order differently (which operand of an add comes first); they are selected here as SLEEF gives
 * them: the input NaN quietened (its sign kept by asin and atan, cleared by acos), and for
 * |x| > 1 asin's 0xffc00000 (0xfff8000000000000) with x's sign and acos's 0xffc00000
 * (0xfff8000000000000); atan2 gives all bits set for a NaN argument, as SLEEF does.
 *
 * Constants SLEEF writes as float literals are float literals here; those it writes as double
 * literals into a float context are rounded from the double ((float)0.4197454825e-1).
 * Depends on cpu_math.h and libm only. */
#ifndef TDL_CPU_MATH_ARC_H
#define TDL_CPU_MATH_ARC_H

#include "cpu_math.h"

/* ---- atan2kf_u1 / atan2k_u1: atan(y / x) for the pairs y >= 0 and x, as a pair ----
 *
 * q = -2 where x < 0 (where x's sign bit is set, in double), x negated there; then q + 1 and the
 * quotient -x / y where x < y, else y / x; s + s^3 p(s^2) + q pi/2. */

/* atan2kf_u1 */
CPU_MATH_INLINE CpuF2 cpu_atan2k_f32(CpuF2 y, CpuF2 x)
{
    uint32_t neg = CPU_MASK32(x.x < 0.0f);
    float q = cpu_f32_from_bits(neg & 0xc0000000u); /* -2 or +0 */
    x = cpu_f2(cpu_f32_from_bits(cpu_f32_bits(x.x) ^ (neg & 0x80000000u)),
               cpu_f32_from_bits(cpu_f32_bits(x.y) ^ (neg & 0x80000000u)));

    uint32_t p = CPU_MASK32(x.x < y.x);
    q = q + cpu_f32_from_bits(p & 0x3f800000u);
    CpuF2 s = cpu_df_sel(p, cpu_df_neg(x), y);
    CpuF2 t = cpu_df_sel(p, y, x);

    s = cpu_df_div(s, t);
    t = cpu_df_normalize(cpu_df_squ(s));

    float u = -0.00176397908944636583328247f;
    u = fmaf(u, t.x, 0.0107900900766253471374512f);
    u = fmaf(u, t.x, -0.0309564601629972457885742f);
    u = fmaf(u, t.x, 0.0577365085482597351074219f);
    u = fmaf(u, t.x, -0.0838950723409652709960938f);
    u = fmaf(u, t.x, 0.109463557600975036621094f);
    u = fmaf(u, t.x, -0.142626821994781494140625f);
    u = fmaf(u, t.x, 0.199983194470405578613281f);

    t = cpu_df_mul(t, cpu_df_add_ff(-0.333332866430282592773438f, u * t.x));
    t = cpu_df_mul(s, cpu_df_add_f2(1.0f, t));
    return cpu_df_add(cpu_df_mul_f(cpu_f2(1.5707963705062866211f, -4.3711388286737928865e-08f), q), t);
}

/* POLY4 of SLEEF's estrin.h: (c3 x + c2) x2 + (c1 x + c0), x2 = x^2 */
CPU_MATH_INLINE double cpu_poly4_f64(double x, double x2, double c3, double c2, double c1, double c0)
{
    return fma(x2, fma(x, c3, c2), fma(x, c1, c0));
}

/* atan2k_u1 */
CPU_MATH_INLINE CpuD2 cpu_atan2k_f64(CpuD2 y, CpuD2 x)
{
    /* q from x's sign bit (vsel_vi_vd_vi), the negation from x < 0 */
    double q = cpu_f64_from_bits(((uint64_t)0 - (cpu_f64_bits(x.x) >> 63)) & UINT64_C(0xc000000000000000));
    uint64_t neg = CPU_MASK64(x.x < 0.0) & UINT64_C(0x8000000000000000);
    x = cpu_d2(cpu_f64_from_bits(cpu_f64_bits(x.x) ^ neg), cpu_f64_from_bits(cpu_f64_bits(x.y) ^ neg));

    uint64_t p = CPU_MASK64(x.x < y.x);
    q = q + cpu_f64_from_bits(p & UINT64_C(0x3ff0000000000000));
    CpuD2 s = cpu_dd_sel(p, cpu_dd_neg(x), y);
    CpuD2 t = cpu_dd_sel(p, y, x);

    s = cpu_dd_div(s, t);
    t = cpu_dd_normalize(cpu_dd_squ(s));

    /* POLY16(t, t2, t4, t8, ...) */
    double t1 = t.x, t2 = t1 * t1, t4 = t2 * t2, t8 = t4 * t4;
    double hi = fma(t4,
                    cpu_poly4_f64(t1, t2, 1.06298484191448746607415e-05, -0.000125620649967286867384336,
                                  0.00070557664296393412389774, -0.00251865614498713360352999),
                    cpu_poly4_f64(t1, t2, 0.00646262899036991172313504, -0.0128281333663399031014274,
                                  0.0208024799924145797902497, -0.0289002344784740315686289));
    double lo = fma(t4,
                    cpu_poly4_f64(t1, t2, 0.0359785005035104590853656, -0.041848579703592507506027,
                                  0.0470843011653283988193763, -0.0524914210588448421068719),
                    cpu_poly4_f64(t1, t2, 0.0587946590969581003860434, -0.0666620884778795497194182,
                                  0.0769225330296203768654095, -0.0909090442773387574781907));
    double u = fma(t8, hi, lo);
    u = fma(u, t1, 0.111111108376896236538123);
    u = fma(u, t1, -0.142857142756268568062339);
    u = fma(u, t1, 0.199999999997977351284817);
    u = fma(u, t1, -0.333333333333317605173818);

    t = cpu_dd_add(s, cpu_dd_mul_d(cpu_dd_mul(s, t), u));
    return cpu_dd_add(cpu_dd_mul_d(cpu_d2(1.570796326794896557998982, 6.12323399573676603586882e-17), q), t);
}

/* ---- asin, acos, atan ---- */

/* The float polynomial of asin and acos in x2, times x2 x: xasinf_u1's u */
CPU_MATH_INLINE float cpu_asin_poly_f32(float x2, float x)
{
    float u = (float)+0.4197454825e-1;
    u = fmaf(u, x2, (float)+0.2424046025e-1);
    u = fmaf(u, x2, (float)+0.4547423869e-1);
    u = fmaf(u, x2, (float)+0.7495029271e-1);
    u = fmaf(u, x2, (float)+0.1666677296e+0);
    return u * (x2 * x);
}

/* asin(d) in float: SLEEF's xasinf_u1, FMA build. */
CPU_MATH_INLINE float cpu_asin_f32(float d)
{
    float a = fabsf(d);
    uint32_t o = CPU_MASK32(a < 0.5f);
    float x2 = cpu_sel_f32(o, d * d, (1.0f - a) * 0.5f);
    CpuF2 x = cpu_df_sel(o, cpu_f2(a, 0.0f), cpu_df_sqrt_f(x2));
    x = cpu_df_sel(CPU_MASK32(a == 1.0f), cpu_f2(0.0f, 0.0f), x);
    float u = cpu_asin_poly_f32(x2, x.x);

    CpuF2 y = cpu_df_sub_f(cpu_df_sub(cpu_f2(3.1415927410125732422f / 4, -8.7422776573475857731e-08f / 4), x), u);
    float r = cpu_sel_f32(o, u + x.x, (y.x + y.y) * 2.0f);

    uint32_t rb = cpu_f32_bits(r), dom = CPU_MASK32(a > 1.0f), nan = CPU_MASK32(d != d);
    rb = (rb & ~dom) | (0xffc00000u & dom);
    rb = (rb & ~nan) | ((cpu_f32_bits(a) | 0x00400000u) & nan);
    return cpu_mulsign_f32(cpu_f32_from_bits(rb), d);
}

/* acos(d) in float: SLEEF's xacosf_u1, FMA build. */
CPU_MATH_INLINE float cpu_acos_f32(float d)
{
    float a = fabsf(d);
    uint32_t o = CPU_MASK32(a < 0.5f);
    float x2 = cpu_sel_f32(o, d * d, (1.0f - a) * 0.5f);
    CpuF2 x = cpu_df_sel(o, cpu_f2(a, 0.0f), cpu_df_sqrt_f(x2));
    x = cpu_df_sel(CPU_MASK32(a == 1.0f), cpu_f2(0.0f, 0.0f), x);
    float u = cpu_asin_poly_f32(x2, x.x);

    CpuF2 y = cpu_df_sub(cpu_f2(3.1415927410125732422f / 2, -8.7422776573475857731e-08f / 2),
                         cpu_df_add_ff(cpu_mulsign_f32(x.x, d), cpu_mulsign_f32(u, d)));
    x = cpu_df_add_f(x, u);
    y = cpu_df_sel(o, y, cpu_df_scale(x, 2.0f));
    y = cpu_df_sel(~o & CPU_MASK32(d < 0.0f),
                   cpu_df_sub(cpu_f2(3.1415927410125732422f, -8.7422776573475857731e-08f), y), y);

    uint32_t rb = cpu_f32_bits(y.x + y.y), dom = CPU_MASK32(a > 1.0f), nan = CPU_MASK32(d != d);
    rb = (rb & ~dom) | (0xffc00000u & dom);
    return cpu_f32_from_bits((rb & ~nan) | ((cpu_f32_bits(a) | 0x00400000u) & nan));
}

/* atan(d) in float: SLEEF's xatanf_u1, FMA build. */
CPU_MATH_INLINE float cpu_atan_f32(float d)
{
    float a = fabsf(d);
    CpuF2 t = cpu_atan2k_f32(cpu_f2(a, 0.0f), cpu_f2(1.0f, 0.0f));
    float r = cpu_sel_f32(CPU_MASK32(a == INFINITY), (float)1.570796326794896557998982, t.x + t.y);
    uint32_t nan = CPU_MASK32(d != d);
    r = cpu_f32_from_bits((cpu_f32_bits(r) & ~nan) | ((cpu_f32_bits(a) | 0x00400000u) & nan));
    return cpu_mulsign_f32(r, d);
}

/* The double polynomial of asin and acos (POLY12 in x2, x4, x8, x16), times x2 x: xasin_u1's u */
CPU_MATH_INLINE double cpu_asin_poly_f64(double x2, double x)
{
    double x4 = x2 * x2, x8 = x4 * x4, x16 = x8 * x8;
    double hi = cpu_poly4_f64(x2, x4, +0.3161587650653934628e-1, -0.1581918243329996643e-1, +0.1929045477267910674e-1,
                              +0.6606077476277170610e-2);
    double lo = fma(x8,
                    cpu_poly4_f64(x2, x4, +0.1215360525577377331e-1, +0.1388715184501609218e-1,
                                  +0.1735956991223614604e-1, +0.2237176181932048341e-1),
                    cpu_poly4_f64(x2, x4, +0.3038195928038132237e-1, +0.4464285681377102438e-1,
                                  +0.7500000000378581611e-1, +0.1666666666666497543e+0));
    return fma(x16, hi, lo) * (x2 * x);
}

/* asin(d) in double: SLEEF's xasin_u1, FMA build. */
CPU_MATH_INLINE double cpu_asin_f64(double d)
{
    double a = fabs(d);
    uint64_t o = CPU_MASK64(a < 0.5);
    double x2 = cpu_sel_f64(o, d * d, (1.0 - a) * 0.5);
    CpuD2 x = cpu_dd_sel(o, cpu_d2(a, 0.0), cpu_dd_sqrt_d(x2));
    x = cpu_dd_sel(CPU_MASK64(a == 1.0), cpu_d2(0.0, 0.0), x);
    double u = cpu_asin_poly_f64(x2, x.x);

    CpuD2 y = cpu_dd_sub_d(cpu_dd_sub(cpu_d2(3.141592653589793116 / 4, 1.2246467991473532072e-16 / 4), x), u);
    double r = cpu_sel_f64(o, u + x.x, (y.x + y.y) * 2.0);

    uint64_t rb = cpu_f64_bits(r), dom = CPU_MASK64(a > 1.0), nan = CPU_MASK64(d != d);
    rb = (rb & ~dom) | (UINT64_C(0xfff8000000000000) & dom);
    rb = (rb & ~nan) | ((cpu_f64_bits(a) | UINT64_C(0x0008000000000000)) & nan);
    return cpu_mulsign_f64(cpu_f64_from_bits(rb), d);
}

/* acos(d) in double: SLEEF's xacos_u1, FMA build. */
CPU_MATH_INLINE double cpu_acos_f64(double d)
{
    double a = fabs(d);
    uint64_t o = CPU_MASK64(a < 0.5);
    double x2 = cpu_sel_f64(o, d * d, (1.0 - a) * 0.5);
    CpuD2 x = cpu_dd_sel(o, cpu_d2(a, 0.0), cpu_dd_sqrt_d(x2));
    x = cpu_dd_sel(CPU_MASK64(a == 1.0), cpu_d2(0.0, 0.0), x);
    double u = cpu_asin_poly_f64(x2, x.x);

    CpuD2 y = cpu_dd_sub(cpu_d2(3.141592653589793116 / 2, 1.2246467991473532072e-16 / 2),
                         cpu_dd_add_dd(cpu_mulsign_f64(x.x, d), cpu_mulsign_f64(u, d)));
    x = cpu_dd_add_d(x, u);
    y = cpu_dd_sel(o, y, cpu_dd_scale(x, 2.0));
    y = cpu_dd_sel(~o & CPU_MASK64(d < 0.0), cpu_dd_sub(cpu_d2(3.141592653589793116, 1.2246467991473532072e-16), y), y);

    uint64_t rb = cpu_f64_bits(y.x + y.y), dom = CPU_MASK64(a > 1.0), nan = CPU_MASK64(d != d);
    rb = (rb & ~dom) | (UINT64_C(0xfff8000000000000) & dom);
    return cpu_f64_from_bits((rb & ~nan) | ((cpu_f64_bits(a) | UINT64_C(0x0008000000000000)) & nan));
}

/* atan(d) in double: SLEEF's xatan_u1, FMA build. */
CPU_MATH_INLINE double cpu_atan_f64(double d)
{
    double a = fabs(d);
    CpuD2 t = cpu_atan2k_f64(cpu_d2(a, 0.0), cpu_d2(1.0, 0.0));
    double r = cpu_sel_f64(CPU_MASK64(a == INFINITY), 1.570796326794896557998982, t.x + t.y);
    uint64_t nan = CPU_MASK64(d != d);
    r = cpu_f64_from_bits((cpu_f64_bits(r) & ~nan) | ((cpu_f64_bits(a) | UINT64_C(0x0008000000000000)) & nan));
    return cpu_mulsign_f64(r, d);
}

/* ---- atan2 ----
 *
 * visinf2(x, m) of SLEEF: m with x's sign bit or-ed in where x is infinite, else +0. Where x is 0
 * or infinite the result is pi/2 - visinf2(x, +-pi/2) (pi/2, 0 or pi); where y is infinite,
 * pi/2 - visinf2(x, +-pi/4); where y is 0, pi or +0 by x's sign bit; y's sign put on last, and all
 * bits set where x or y is NaN. */

/* atan2(y, x) in float: SLEEF's xatan2f_u1, FMA build. */
CPU_MATH_INLINE float cpu_atan2_f32(float y, float x)
{
    uint32_t o = CPU_MASK32(fabsf(x) < 2.9387372783541830947e-39f);
    x = cpu_sel_f32(o, x * 16777216.0f, x);
    y = cpu_sel_f32(o, y * 16777216.0f, y);

    CpuF2 d = cpu_atan2k_f32(cpu_f2(fabsf(y), 0.0f), cpu_f2(x, 0.0f));
    float r = cpu_mulsign_f32(d.x + d.y, x);

    const float pi2 = (float)1.570796326794896619231321691639751442, pi4 = (float)0.785398163397448309615660845819875721;
    uint32_t xs = cpu_f32_bits(x) & 0x80000000u, xinf = CPU_MASK32(fabsf(x) == INFINITY);
    float inf2 = cpu_f32_from_bits(xinf & (xs | cpu_f32_bits(cpu_mulsign_f32(pi2, x))));
    float inf4 = cpu_f32_from_bits(xinf & (xs | cpu_f32_bits(cpu_mulsign_f32(pi4, x))));
    r = cpu_sel_f32(xinf | CPU_MASK32(x == 0.0f), pi2 - inf2, r);
    r = cpu_sel_f32(CPU_MASK32(fabsf(y) == INFINITY), pi2 - inf4, r);
    r = cpu_sel_f32(CPU_MASK32(y == 0.0f),
                    cpu_f32_from_bits(CPU_MASK32(xs != 0) & cpu_f32_bits((float)3.141592653589793238462643383279502884)), r);

    uint32_t nan = CPU_MASK32(x != x) | CPU_MASK32(y != y);
    return cpu_f32_from_bits(nan | cpu_f32_bits(cpu_mulsign_f32(r, y)));
}

/* atan2(y, x) in double: SLEEF's xatan2_u1, FMA build. */
CPU_MATH_INLINE double cpu_atan2_f64(double y, double x)
{
    uint64_t o = CPU_MASK64(fabs(x) < 5.5626846462680083984e-309);
    x = cpu_sel_f64(o, x * 9007199254740992.0, x);
    y = cpu_sel_f64(o, y * 9007199254740992.0, y);

    CpuD2 d = cpu_atan2k_f64(cpu_d2(fabs(y), 0.0), cpu_d2(x, 0.0));
    double r = cpu_mulsign_f64(d.x + d.y, x);

    const double pi2 = 1.570796326794896619231321691639751442, pi4 = 0.785398163397448309615660845819875721;
    uint64_t xs = cpu_f64_bits(x) & UINT64_C(0x8000000000000000), xinf = CPU_MASK64(fabs(x) == INFINITY);
    double inf2 = cpu_f64_from_bits(xinf & (xs | cpu_f64_bits(cpu_mulsign_f64(pi2, x))));
    double inf4 = cpu_f64_from_bits(xinf & (xs | cpu_f64_bits(cpu_mulsign_f64(pi4, x))));
    r = cpu_sel_f64(xinf | CPU_MASK64(x == 0.0), pi2 - inf2, r);
    r = cpu_sel_f64(CPU_MASK64(fabs(y) == INFINITY), pi2 - inf4, r);
    r = cpu_sel_f64(CPU_MASK64(y == 0.0), cpu_f64_from_bits(CPU_MASK64(xs != 0) & cpu_f64_bits(3.141592653589793238462643383279502884)),
                    r);

    uint64_t nan = CPU_MASK64(x != x) | CPU_MASK64(y != y);
    return cpu_f64_from_bits(nan | cpu_f64_bits(cpu_mulsign_f64(r, y)));
}

#endif
