/* cpu_math_trig.h — sin, cos and tan for the chunk loops of the CPU backend, bit for bit PyTorch's
 * CPU functions.
 *
 * torch.sin, torch.cos and torch.tan of float32 and float64 on a CPU with AVX2 are
 * Vectorized<T>'s sin/cos/tan, SLEEF's Sleef_sinf8_u10, Sleef_cosf8_u10, Sleef_tanf8_u10,
 * Sleef_sind4_u10, Sleef_cosd4_u10 and Sleef_tand4_u10: sleefsimdsp.c's xsinf_u1, xcosf_u1,
 * xtanf_u1 and sleefsimddp.c's xsin_u1, xcos_u1, xtan_u1 of SLEEF 3.5.1 (the ordinary, not the
 * DETERMINISTIC, build), compiled with ENABLE_FMA_SP / ENABLE_FMA_DP. Here they are scalar C in the
 * conventions of cpu_math.h: every multiply-add SLEEF fuses (vmla, vfma, vfmapn, vfmanp) is an
 * fmaf()/fma(), every other operation one rounded IEEE operation, selections are bit masks. No
 * expression here multiplies and adds in one, so a compiler that contracts within an expression
 * (Clang's default) finds nothing to fuse either.
 *
 * SLEEF takes a multiple of pi/2 out of the argument in one of two ways (three for double), and
 * picks the way once per vector: the cheap Cody-Waite reduction (the argument less
 * q times pi split in three float or two double parts) when every lane of the vector is below a
 * threshold, else a slower one for all lanes: Payne-Hanek (rempif / rempi: the argument times
 * 1/(2 pi) from a table of its bits, cpu_math_rempi.c) for float; for double a Cody-Waite
 * reduction with q split in two and pi in four parts while every lane is below 1e14, Payne-Hanek
 * past that. The ways can round differently, so a lane's result depends on the other lanes of its
 * vector (of eight floats or four doubles, 32 bytes). So the functions here come in parts:
 *
 *   cpu_<fn>_<t>_fast(d)      the cheap reduction: SLEEF's bits for |d| below 125 (float) or 15
 *                             (double), branch-free and without table lookups, so that a loop
 *                             over it vectorises;
 *   cpu_trig_way_<t>(d)       the way a vector holding d alone takes: 0 the cheap one, 1 the next
 *                             (float: Payne-Hanek; double: the longer Cody-Waite), 2 (double)
 *                             Payne-Hanek; NaN and +-inf the last. A vector takes its lanes' largest;
 *   cpu_<fn>_<t>_way(d, way)  what SLEEF computes for d in a vector taking that way, for any d;
 *                             scalar code with branches and table lookups; +-inf and NaN give the
 *                             NaN with every bit set, as SLEEF's Payne-Hanek does;
 *   cpu_<fn>_<t>(d)           d in a vector of its own.
 *
 * The CPU backend's chunk loop (cpu_ops.c, UNARY_MATH_TRIG) runs the fast function over a chunk
 * and then, on each 32 bytes from the chunk's start where some element's way is not 0, the way
 * function at the largest way: torch's vectors where tdl's chunk starts where torch's loop does.
 * Depends on cpu_math.h, the tables of cpu_math_rempi.c and libm. */
#ifndef TDL_CPU_MATH_TRIG_H
#define TDL_CPU_MATH_TRIG_H

#include "cpu_math.h"

/* SLEEF's Sleef_rempitabsp and Sleef_rempitabdp (cpu_math_rempi.c): 103 and 969 rows of four. */
extern const float cpu_rempitab_f32[];
extern const double cpu_rempitab_f64[];

/* ---- shared pieces ---- */

/* SLEEF's constants (misc.h): pi in three float parts for the fast float ways, in two double
 * parts for the fast double ways and in four for double's middle way; 1/pi and 2/pi. */
#define CPU_TRIG_PI_A2F 3.1414794921875f
#define CPU_TRIG_PI_B2F 0.00011315941810607910156f
#define CPU_TRIG_PI_C2F 1.9841872589410058936e-09f
#define CPU_TRIG_PI_A2 3.141592653589793116
#define CPU_TRIG_PI_B2 1.2246467991473532072e-16
#define CPU_TRIG_PI_A 3.1415926218032836914
#define CPU_TRIG_PI_B 3.1786509424591713469e-08
#define CPU_TRIG_PI_C 1.2246467864107188502e-16
#define CPU_TRIG_PI_D 1.2736634327021899816e-24
#define CPU_TRIG_1_PI 0.318309886183790671537767526745028724
#define CPU_TRIG_2_PI_H 0.63661977236758138243
#define CPU_TRIG_2_PI_L -3.9357353350364971764e-17

/* rint(t) as roundps / roundpd (to nearest even, the sign of t kept, so rint(-0.25) is -0), for
 * |t| < 2^22 (2^51): t + 1.5 * 2^23 (2^52) has unit last place, so its integer is
 * 1.5 * 2^23 + rint(t); *low gets that integer's last two bits, which are rint(t)'s (as SLEEF's
 * q & 3 with q = rint(t) as an int). */
CPU_MATH_INLINE float cpu_trig_rint_f32(float t, uint32_t *low)
{
    float m = t + 0x1.8p23f;
    *low = cpu_f32_bits(m) & 3u;
    return cpu_f32_from_bits(cpu_f32_bits(m - 0x1.8p23f) | (cpu_f32_bits(t) & 0x80000000u));
}

CPU_MATH_INLINE double cpu_trig_rint_f64(double t, uint64_t *low)
{
    double m = t + 0x1.8p52;
    *low = cpu_f64_bits(m) & 3u;
    return cpu_f64_from_bits(cpu_f64_bits(m - 0x1.8p52) | (cpu_f64_bits(t) & UINT64_C(0x8000000000000000)));
}

/* The end of xsinf_u1 and xcosf_u1 on the reduced argument s (a pair, within pi/2): the odd
 * polynomial s (1 + s^2 (c1 + s^2 (...))), its last two terms in pair arithmetic, rounded once,
 * its sign bit xor-ed with flip. */
CPU_MATH_INLINE float cpu_sincosf_u1_poly(CpuF2 s, uint32_t flip)
{
    CpuF2 t = s;
    s = cpu_df_squ(s);
    float u = 2.6083159809786593541503e-06f;
    u = fmaf(u, s.x, -0.0001981069071916863322258f);
    u = fmaf(u, s.x, 0.00833307858556509017944336f);
    CpuF2 x = cpu_df_add_f2(1.0f, cpu_df_mul(cpu_df_add_ff(-0.166666597127914428710938f, u * s.x), s));
    return cpu_f32_from_bits(cpu_f32_bits(cpu_df_mul_to_f(t, x)) ^ flip);
}

/* The end of xtanf_u1 on the reduced argument s (within pi/4) and q: tan(s) as
 * s (1 + s^2 (...)), or -1/tan(s) for odd q, then -0 for d = -0. */
CPU_MATH_INLINE float cpu_tanf_u1_poly(CpuF2 s, uint32_t qodd, float d)
{
    uint32_t o = CPU_MASK32(qodd), n = o & 0x80000000u;
    s = cpu_f2(cpu_f32_from_bits(cpu_f32_bits(s.x) ^ n), cpu_f32_from_bits(cpu_f32_bits(s.y) ^ n));
    CpuF2 t = s;
    s = cpu_df_normalize(cpu_df_squ(s));
    float u = 0.00446636462584137916564941f;
    u = fmaf(u, s.x, -8.3920182078145444393158e-05f);
    u = fmaf(u, s.x, 0.0109639242291450500488281f);
    u = fmaf(u, s.x, 0.0212360303848981857299805f);
    u = fmaf(u, s.x, 0.0540687143802642822265625f);
    CpuF2 x = cpu_df_add_ff(0.133325666189193725585938f, u * s.x);
    x = cpu_df_add_f2(1.0f, cpu_df_mul(cpu_df_add_f2(0.33333361148834228515625f, cpu_df_mul(s, x)), s));
    x = cpu_df_mul(t, x);
    x = cpu_df_sel(o, cpu_df_rec(x), x);
    uint32_t ub = cpu_f32_bits(x.x + x.y);
    uint32_t negzero = CPU_MASK32(cpu_f32_bits(d) == 0x80000000u);
    return cpu_f32_from_bits((ub & ~negzero) | (0x80000000u & negzero));
}

/* The end of xsin_u1 and xcos_u1 (Estrin's scheme for the polynomial), as cpu_sincosf_u1_poly. */
CPU_MATH_INLINE double cpu_sincos_u1_poly(CpuD2 s, uint64_t flip)
{
    CpuD2 t = s;
    s = cpu_dd_squ(s);
    double x1 = s.x, s2 = s.x * s.x, s4 = s2 * s2;
    double u = fma(s4, fma(x1, 2.72052416138529567917983e-15, -7.6429259411395447190023e-13),
                   fma(s2, fma(x1, 1.60589370117277896211623e-10, -2.5052106814843123359368e-08),
                       fma(x1, 2.75573192104428224777379e-06, -0.000198412698412046454654947)));
    u = fma(u, x1, 0.00833333333333318056201922);
    CpuD2 x = cpu_dd_add_d2(1.0, cpu_dd_mul(cpu_dd_add_dd(-0.166666666666666657414808, u * x1), s));
    return cpu_f64_from_bits(cpu_f64_bits(cpu_dd_mul_to_d(t, x)) ^ flip);
}

/* The end of xtan_u1 on the reduced argument s (within pi/4) and q: tan(s/2) by a polynomial,
 * then tan(s) = 2 tan(s/2) / (1 - tan(s/2)^2) (or its negated reciprocal for odd q) in pair
 * arithmetic, then d for d = +-0. */
CPU_MATH_INLINE double cpu_tan_u1_poly(CpuD2 s, uint64_t qodd, double d)
{
    CpuD2 t = cpu_dd_scale(s, 0.5);
    s = cpu_dd_squ(t);
    double x1 = s.x, s2 = s.x * s.x, s4 = s2 * s2;
    double u = fma(s4,
                   fma(s2, fma(x1, +0.3245098826639276316e-3, +0.5619219738114323735e-3),
                       fma(x1, +0.1460781502402784494e-2, +0.3591611540792499519e-2)),
                   fma(s2, fma(x1, +0.8863268409563113126e-2, +0.2186948728185535498e-1),
                       fma(x1, +0.5396825399517272970e-1, +0.1333333333330500581e+0)));
    u = fma(u, x1, +0.3333333333333343695e+0);
    CpuD2 x = cpu_dd_add(t, cpu_dd_mul_d(cpu_dd_mul(s, t), u));
    CpuD2 y = cpu_dd_add_d2(-1.0, cpu_dd_squ(x));
    x = cpu_dd_scale(x, -2.0);
    uint64_t o = CPU_MASK64(qodd);
    x = cpu_dd_div(cpu_dd_sel(o, cpu_dd_neg(y), x), cpu_dd_sel(o, x, y));
    uint64_t ub = cpu_f64_bits(x.x + x.y);
    uint64_t zero = CPU_MASK64(d == 0.0);
    return cpu_f64_from_bits((ub & ~zero) | (cpu_f64_bits(d) & zero));
}

/* rempisubf (FULL_FP_ROUNDING, as AVX2's): x less the nearest multiple of 1/4, and in *q that
 * multiple's quarters beyond the nearest whole number, rint(4x) - 4 rint(x) (whole turns drop
 * out). */
static inline float cpu_rempisub_f32(float x, int32_t *q)
{
    float y = rintf(x * 4.0f), x4 = rintf(x) * 4.0f, yq = y * 0.25f;
    *q = (int32_t)truncf(y - x4);
    return x - yq;
}

static inline double cpu_rempisub_f64(double x, int32_t *q)
{
    double y = rint(x * 4.0), x4 = rint(x) * 4.0, yq = y * 0.25;
    *q = (int32_t)trunc(y - x4);
    return x - yq;
}

/* rempif: a = q pi/2 + r (modulo 2 pi) with r (a pair, radians) within about pi/4, for a finite
 * float a of any size: a times the bits of 1/(2 pi) that matter at a's exponent
 * (cpu_rempitab_f32), in three pieces, each step's quarter turns taken out into q, the rest times
 * 2 pi. An a of |a| < 0.7 is r itself (with q 0). */
static inline CpuF2 cpu_rempi_f32(float a, int32_t *qout)
{
    int32_t ex = (int32_t)((cpu_f32_bits(a) >> 23) & 0xff) - 0x7f - 25;
    int32_t q = ex > 90 - 25 ? -64 : 0;
    a = cpu_f32_from_bits(cpu_f32_bits(a) + ((uint32_t)q << 23)); /* vldexp3: a * 2^q */
    ex = ex < 0 ? 0 : ex;
    const float *tab = cpu_rempitab_f32 + 4 * ex;
    int32_t qi;
    CpuF2 x = cpu_df_mul_ff(a, tab[0]);
    x.x = cpu_rempisub_f32(x.x, &qi);
    q = qi;
    x = cpu_df_normalize(x);
    x = cpu_df_add2(x, cpu_df_mul_ff(a, tab[1]));
    x.x = cpu_rempisub_f32(x.x, &qi);
    q += qi;
    x = cpu_df_normalize(x);
    x = cpu_df_add2(x, cpu_df_mul_f(cpu_f2(tab[2], tab[3]), a));
    x = cpu_df_normalize(x);
    x = cpu_df_mul(x, cpu_f2(3.1415927410125732422f * 2, -8.7422776573475857731e-08f * 2));
    if (fabsf(a) < 0.7f)
        x = cpu_f2(a, 0.0f);
    *qout = q;
    return x;
}

/* rempi: as rempif, in double (cpu_rempitab_f64). */
static inline CpuD2 cpu_rempi_f64(double a, int32_t *qout)
{
    int32_t ex = (int32_t)((cpu_f64_bits(a) >> 52) & 0x7ff) - 0x3ff - 55;
    int32_t q = ex > 700 - 55 ? -64 : 0;
    a = cpu_f64_from_bits(cpu_f64_bits(a) + ((uint64_t)(uint32_t)q << 52)); /* vldexp3 */
    ex = ex < 0 ? 0 : ex;
    const double *tab = cpu_rempitab_f64 + 4 * ex;
    int32_t qi;
    CpuD2 x = cpu_dd_mul_dd(a, tab[0]);
    x.x = cpu_rempisub_f64(x.x, &qi);
    q = qi;
    x = cpu_dd_normalize(x);
    x = cpu_dd_add2(x, cpu_dd_mul_dd(a, tab[1]));
    x.x = cpu_rempisub_f64(x.x, &qi);
    q += qi;
    x = cpu_dd_normalize(x);
    x = cpu_dd_add2(x, cpu_dd_mul_d(cpu_d2(tab[2], tab[3]), a));
    x = cpu_dd_normalize(x);
    x = cpu_dd_mul(x, cpu_d2(3.141592653589793116 * 2, 1.2246467991473532072e-16 * 2));
    if (fabs(a) < 0.7)
        x = cpu_d2(a, 0.0);
    *qout = q;
    return x;
}

/* rempif's result as sin's argument (xsinf_u1's else branch): r and q (quarter turns) become an
 * argument within pi/2 (r less pi/2 times r's sign, for odd q) and in *flip the sign of the
 * result, from the parity of the multiple of pi taken out. */
static inline CpuF2 cpu_rempi_sin_f32(CpuF2 r, int32_t qi, uint32_t *flip)
{
    int32_t q = ((qi & 3) * 2 + (r.x > 0 ? 2 : 1)) >> 2;
    if (qi & 1) {
        uint32_t sg = cpu_f32_bits(r.x) & 0x80000000u;
        CpuF2 h = cpu_f2(cpu_f32_from_bits(cpu_f32_bits(3.1415927410125732422f * -0.5f) ^ sg),
                         cpu_f32_from_bits(cpu_f32_bits(-8.7422776573475857731e-08f * -0.5f) ^ sg));
        r = cpu_df_add2(r, h);
    }
    *flip = (uint32_t)(q & 1) << 31;
    return cpu_df_normalize(r);
}

/* As cpu_rempi_sin_f32 for cos (xcosf_u1's else branch): an odd multiple of pi/2 taken out
 * (r less pi/2 times r's sign, for even q). */
static inline CpuF2 cpu_rempi_cos_f32(CpuF2 r, int32_t qi, uint32_t *flip)
{
    int32_t q = ((qi & 3) * 2 + (r.x > 0 ? 8 : 7)) >> 1;
    if ((qi & 1) == 0) {
        float y = r.x > 0 ? 0.0f : -1.0f;
        uint32_t sg = cpu_f32_bits(y) & 0x80000000u;
        CpuF2 h = cpu_f2(cpu_f32_from_bits(cpu_f32_bits(3.1415927410125732422f * -0.5f) ^ sg),
                         cpu_f32_from_bits(cpu_f32_bits(-8.7422776573475857731e-08f * -0.5f) ^ sg));
        r = cpu_df_add2(r, h);
    }
    *flip = (q & 2) == 0 ? 0x80000000u : 0u;
    return cpu_df_normalize(r);
}

static inline CpuD2 cpu_rempi_sin_f64(CpuD2 r, int32_t qi, uint64_t *flip)
{
    int32_t q = ((qi & 3) * 2 + (r.x > 0 ? 2 : 1)) >> 2;
    if (qi & 1) {
        uint64_t sg = cpu_f64_bits(r.x) & UINT64_C(0x8000000000000000);
        CpuD2 h = cpu_d2(cpu_f64_from_bits(cpu_f64_bits(-3.141592653589793116 * 0.5) ^ sg),
                         cpu_f64_from_bits(cpu_f64_bits(-1.2246467991473532072e-16 * 0.5) ^ sg));
        r = cpu_dd_add2(r, h);
    }
    *flip = (uint64_t)(q & 1) << 63;
    return cpu_dd_normalize(r);
}

static inline CpuD2 cpu_rempi_cos_f64(CpuD2 r, int32_t qi, uint64_t *flip)
{
    int32_t q = ((qi & 3) * 2 + (r.x > 0 ? 8 : 7)) >> 1;
    if ((qi & 1) == 0) {
        double y = r.x > 0 ? 0.0 : -1.0;
        uint64_t sg = cpu_f64_bits(y) & UINT64_C(0x8000000000000000);
        CpuD2 h = cpu_d2(cpu_f64_from_bits(cpu_f64_bits(-3.141592653589793116 * 0.5) ^ sg),
                         cpu_f64_from_bits(cpu_f64_bits(-1.2246467991473532072e-16 * 0.5) ^ sg));
        r = cpu_dd_add2(r, h);
    }
    *flip = (q & 2) == 0 ? UINT64_C(0x8000000000000000) : 0u;
    return cpu_dd_normalize(r);
}

/* ---- float ---- */

/* sin(d) in float, xsinf_u1's fast way: exact for |d| < 125. */
CPU_MATH_INLINE float cpu_sin_f32_fast(float d)
{
    uint32_t q;
    float u = cpu_trig_rint_f32(d * (float)CPU_TRIG_1_PI, &q);
    float v = fmaf(u, -CPU_TRIG_PI_A2F, d);
    CpuF2 s = cpu_df_add2_ff(v, u * -CPU_TRIG_PI_B2F);
    s = cpu_df_add_f(s, u * -CPU_TRIG_PI_C2F);
    uint32_t rb = cpu_f32_bits(cpu_sincosf_u1_poly(s, (q & 1u) << 31));
    uint32_t negzero = CPU_MASK32(cpu_f32_bits(d) == 0x80000000u);
    return cpu_f32_from_bits((rb & ~negzero) | (0x80000000u & negzero));
}

/* sin(d) in float, xsinf_u1's Payne-Hanek way (any d; NaN for +-inf and NaN). */
static inline float cpu_sin_f32_slow(float d)
{
    if (!isfinite(d))
        return cpu_f32_from_bits(0xffffffffu);
    int32_t qi;
    uint32_t flip;
    CpuF2 red = cpu_rempi_f32(d, &qi);
    CpuF2 s = cpu_rempi_sin_f32(red, qi, &flip);
    float r = cpu_sincosf_u1_poly(s, flip);
    return cpu_f32_bits(d) == 0x80000000u ? d : r;
}

/* cos(d) in float, xcosf_u1's fast way: the nearest odd multiple of pi/2, 2 rint(d/pi - 1/2) + 1,
 * taken out. Exact for |d| < 125. */
CPU_MATH_INLINE float cpu_cos_f32_fast(float d)
{
    uint32_t k;
    float dq = fmaf(cpu_trig_rint_f32(fmaf(d, (float)CPU_TRIG_1_PI, -0.5f), &k), 2.0f, 1.0f);
    CpuF2 s = cpu_df_add2_ff(d, dq * (-CPU_TRIG_PI_A2F * 0.5f));
    s = cpu_df_add2_f(s, dq * (-CPU_TRIG_PI_B2F * 0.5f));
    s = cpu_df_add2_f(s, dq * (-CPU_TRIG_PI_C2F * 0.5f));
    /* q = 2k + 1; the sign flips where q & 2 is 0, that is for even k */
    return cpu_sincosf_u1_poly(s, ((k & 1u) ^ 1u) << 31);
}

/* cos(d) in float, xcosf_u1's Payne-Hanek way (any d; NaN for +-inf and NaN). */
static inline float cpu_cos_f32_slow(float d)
{
    if (!isfinite(d))
        return cpu_f32_from_bits(0xffffffffu);
    int32_t qi;
    uint32_t flip;
    CpuF2 red = cpu_rempi_f32(d, &qi);
    CpuF2 s = cpu_rempi_cos_f32(red, qi, &flip);
    return cpu_sincosf_u1_poly(s, flip);
}

/* tan(d) in float, xtanf_u1's fast way (q the nearest multiple of pi/2). Exact for
 * |d| < 125. */
CPU_MATH_INLINE float cpu_tan_f32_fast(float d)
{
    uint32_t q;
    float u = cpu_trig_rint_f32(d * (float)(2 * CPU_TRIG_1_PI), &q);
    float v = fmaf(u, -CPU_TRIG_PI_A2F * 0.5f, d);
    CpuF2 s = cpu_df_add2_ff(v, u * (-CPU_TRIG_PI_B2F * 0.5f));
    s = cpu_df_add_f(s, u * (-CPU_TRIG_PI_C2F * 0.5f));
    return cpu_tanf_u1_poly(s, q & 1u, d);
}

/* tan(d) in float, xtanf_u1's Payne-Hanek way (any d; NaN for +-inf and NaN). */
static inline float cpu_tan_f32_slow(float d)
{
    if (!isfinite(d))
        return cpu_f32_from_bits(0xffffffffu);
    int32_t q;
    CpuF2 s = cpu_rempi_f32(d, &q);
    return cpu_tanf_u1_poly(s, (uint32_t)q & 1u, d);
}

/* ---- double ---- */

/* sin(d) in double, xsin_u1's fast way: exact for |d| < 15. */
CPU_MATH_INLINE double cpu_sin_f64_fast(double d)
{
    uint64_t q;
    double dql = cpu_trig_rint_f64(d * CPU_TRIG_1_PI, &q);
    double u = fma(dql, -CPU_TRIG_PI_A2, d);
    CpuD2 s = cpu_dd_add_dd(u, dql * -CPU_TRIG_PI_B2);
    uint64_t rb = cpu_f64_bits(cpu_sincos_u1_poly(s, (q & 1u) << 63));
    uint64_t zero = CPU_MASK64(d == 0.0);
    return cpu_f64_from_bits((rb & ~zero) | (cpu_f64_bits(d) & zero));
}

/* xsin_u1's middle way: for 15 <= |d| < 1e14 (and exact wherever SLEEF takes it, |d| < 1e14). */
static inline double cpu_sin_f64_mid(double d)
{
    double dqh = trunc(d * (CPU_TRIG_1_PI / (1 << 24))) * (1 << 24);
    double dql = rint(fma(d, CPU_TRIG_1_PI, -dqh));
    int32_t ql = (int32_t)dql;
    double u = fma(dqh, -CPU_TRIG_PI_A, d);
    CpuD2 s = cpu_dd_add_dd(u, dql * -CPU_TRIG_PI_A);
    s = cpu_dd_add2_d(s, dqh * -CPU_TRIG_PI_B);
    s = cpu_dd_add2_d(s, dql * -CPU_TRIG_PI_B);
    s = cpu_dd_add2_d(s, dqh * -CPU_TRIG_PI_C);
    s = cpu_dd_add2_d(s, dql * -CPU_TRIG_PI_C);
    s = cpu_dd_add_d(s, (dqh + dql) * -CPU_TRIG_PI_D);
    double r = cpu_sincos_u1_poly(s, (uint64_t)(ql & 1) << 63);
    return d == 0.0 ? d : r;
}

/* xsin_u1's Payne-Hanek way (any d; NaN for +-inf and NaN). */
static inline double cpu_sin_f64_rempi(double d)
{
    if (!isfinite(d))
        return cpu_f64_from_bits(UINT64_C(0xffffffffffffffff));
    int32_t qi;
    uint64_t flip;
    CpuD2 red = cpu_rempi_f64(d, &qi);
    CpuD2 s = cpu_rempi_sin_f64(red, qi, &flip);
    double r = cpu_sincos_u1_poly(s, flip);
    return d == 0.0 ? d : r;
}

/* cos(d) in double, xcos_u1's fast way: exact for |d| < 15. */
CPU_MATH_INLINE double cpu_cos_f64_fast(double d)
{
    uint64_t k;
    double dql = fma(2.0, cpu_trig_rint_f64(fma(d, CPU_TRIG_1_PI, -0.5), &k), 1.0);
    CpuD2 s = cpu_dd_add2_dd(d, dql * (-CPU_TRIG_PI_A2 * 0.5));
    s = cpu_dd_add_d(s, dql * (-CPU_TRIG_PI_B2 * 0.5));
    return cpu_sincos_u1_poly(s, ((k & 1u) ^ 1u) << 63);
}

/* xcos_u1's middle way (exact for |d| < 1e14). */
static inline double cpu_cos_f64_mid(double d)
{
    double dqh = trunc(fma(d, CPU_TRIG_1_PI / (1 << 23), -CPU_TRIG_1_PI / (1 << 24)));
    double dpi = d * CPU_TRIG_1_PI;
    int32_t ql = (int32_t)rint(dpi + fma(dqh, -(1 << 23), -0.5));
    dqh = dqh * (1 << 24);
    ql = ql + ql + 1;
    double dql = (double)ql;
    double u = fma(dqh, -CPU_TRIG_PI_A * 0.5, d);
    CpuD2 s = cpu_dd_add2_dd(u, dql * (-CPU_TRIG_PI_A * 0.5));
    s = cpu_dd_add2_d(s, dqh * (-CPU_TRIG_PI_B * 0.5));
    s = cpu_dd_add2_d(s, dql * (-CPU_TRIG_PI_B * 0.5));
    s = cpu_dd_add2_d(s, dqh * (-CPU_TRIG_PI_C * 0.5));
    s = cpu_dd_add2_d(s, dql * (-CPU_TRIG_PI_C * 0.5));
    s = cpu_dd_add_d(s, (dqh + dql) * (-CPU_TRIG_PI_D * 0.5));
    return cpu_sincos_u1_poly(s, (ql & 2) == 0 ? UINT64_C(0x8000000000000000) : 0u);
}

/* xcos_u1's Payne-Hanek way (any d; NaN for +-inf and NaN). */
static inline double cpu_cos_f64_rempi(double d)
{
    if (!isfinite(d))
        return cpu_f64_from_bits(UINT64_C(0xffffffffffffffff));
    int32_t qi;
    uint64_t flip;
    CpuD2 red = cpu_rempi_f64(d, &qi);
    CpuD2 s = cpu_rempi_cos_f64(red, qi, &flip);
    return cpu_sincos_u1_poly(s, flip);
}

/* tan(d) in double, xtan_u1's fast way: exact for |d| < 15. */
CPU_MATH_INLINE double cpu_tan_f64_fast(double d)
{
    uint64_t q;
    double dql = cpu_trig_rint_f64(d * (2 * CPU_TRIG_1_PI), &q);
    double u = fma(dql, -CPU_TRIG_PI_A2 * 0.5, d);
    CpuD2 s = cpu_dd_add_dd(u, dql * (-CPU_TRIG_PI_B2 * 0.5));
    return cpu_tan_u1_poly(s, q & 1u, d);
}

/* xtan_u1's middle way (exact for |d| < 1e14). */
static inline double cpu_tan_f64_mid(double d)
{
    double dqh = trunc(d * (2 * CPU_TRIG_1_PI / (1 << 24))) * (1 << 24);
    CpuD2 s = cpu_dd_add2_d(cpu_dd_mul_d(cpu_d2(CPU_TRIG_2_PI_H, CPU_TRIG_2_PI_L), d), (d < 0 ? -0.5 : 0.5) - dqh);
    double dql = trunc(s.x + s.y);
    int32_t ql = (int32_t)rint(dql);
    double u = fma(dqh, -CPU_TRIG_PI_A * 0.5, d);
    s = cpu_dd_add_dd(u, dql * (-CPU_TRIG_PI_A * 0.5));
    s = cpu_dd_add2_d(s, dqh * (-CPU_TRIG_PI_B * 0.5));
    s = cpu_dd_add2_d(s, dql * (-CPU_TRIG_PI_B * 0.5));
    s = cpu_dd_add2_d(s, dqh * (-CPU_TRIG_PI_C * 0.5));
    s = cpu_dd_add2_d(s, dql * (-CPU_TRIG_PI_C * 0.5));
    s = cpu_dd_add_d(s, (dqh + dql) * (-CPU_TRIG_PI_D * 0.5));
    return cpu_tan_u1_poly(s, (uint64_t)(ql & 1), d);
}

/* xtan_u1's Payne-Hanek way (any d; NaN for +-inf and NaN). */
static inline double cpu_tan_f64_rempi(double d)
{
    if (!isfinite(d))
        return cpu_f64_from_bits(UINT64_C(0xffffffffffffffff));
    int32_t q;
    CpuD2 s = cpu_rempi_f64(d, &q);
    return cpu_tan_u1_poly(s, (uint64_t)(q & 1), d);
}

/* ---- the ways ---- */

CPU_MATH_INLINE int cpu_trig_way_f32(float d)
{
    return !(fabsf(d) < 125.0f);
}

CPU_MATH_INLINE int cpu_trig_way_f64(double d)
{
    return !(fabs(d) < 15.0) + !(fabs(d) < 1e14);
}

/* cpu_<fn>_<t>_way and cpu_<fn>_<t> of each function. */
#define CPU_TRIG_WAYS(fn)                                                                          \
    static inline float cpu_##fn##_f32_way(float d, int way)                                       \
    {                                                                                              \
        return way ? cpu_##fn##_f32_slow(d) : cpu_##fn##_f32_fast(d);                              \
    }                                                                                              \
    static inline double cpu_##fn##_f64_way(double d, int way)                                     \
    {                                                                                              \
        return way == 0 ? cpu_##fn##_f64_fast(d) : way == 1 ? cpu_##fn##_f64_mid(d) : cpu_##fn##_f64_rempi(d); \
    }                                                                                              \
    static inline float cpu_##fn##_f32(float d)                                                   \
    {                                                                                              \
        return cpu_##fn##_f32_way(d, cpu_trig_way_f32(d));                                         \
    }                                                                                              \
    static inline double cpu_##fn##_f64(double d)                                                 \
    {                                                                                              \
        return cpu_##fn##_f64_way(d, cpu_trig_way_f64(d));                                         \
    }
CPU_TRIG_WAYS(sin)
CPU_TRIG_WAYS(cos)
CPU_TRIG_WAYS(tan)
#undef CPU_TRIG_WAYS

#endif
