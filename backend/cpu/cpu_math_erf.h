/* cpu_math_erf.h — erf and erfc for the chunk loops of the CPU backend, bit for bit PyTorch's CPU
 * functions.
 *
 * PyTorch computes torch.erf and torch.erfc of float32 and float64 on the CPU with
 * Vectorized<T>::erf() / erfc(), which on a CPU with AVX2 are SLEEF's Sleef_erff8_u10 /
 * Sleef_erfcf8_u15 and Sleef_erfd4_u10 / Sleef_erfcd4_u15, AVX2 builds whose multiply-adds are
 * fused. The functions here are the same algorithms written as scalar, branch-free C, in the
 * manner of cpu_math.h (whose pair types, pair operations and mask selections they use):
 * sleefsimdsp.c xerff_u1 and xerfcf_u15 and sleefsimddp.c xerf_u1 and xerfc_u15 of SLEEF 3.5.1
 * with ENABLE_FMA_SP / ENABLE_FMA_DP, and their helpers. Every operation that SLEEF fuses (vmla,
 * vfma, vfmapn, vfmanp) is an fmaf()/fma() here and every other one a separate, rounded IEEE
 * operation; SLEEF's selections (vsel) are bit masks, so a loop over these functions has no
 * branch and no call that GCC cannot vectorise. Compile such loops with CPU_MATH_CLONES, as for
 * cpu_math.h's functions.
 *
 * The algorithms: |x| is split into intervals (float erf at 1.1, 2.4 and 4; float erfc at 1, 2.2,
 * 4.3 and 10.1; double erf at 1, 3.7 and 6; double erfc at 1, 2.2, 4.2 and 27.3), each with its
 * own coefficients, all picked by masks from one polynomial evaluation. erf: a polynomial in x^2
 * times |x| on the first interval, 1 - exp(p(|x|)) beyond it (exp of a pair: SLEEF's expk2f /
 * expk2), 1 past the last bound, the sign of x put back. erfc: exp(p(|x|) |x|) up to 2.2 (in
 * double, 1 - p(x^2) |x| below 1), exp(-x^2 + p(1/|x|)) / |x| beyond, 0 past the last bound,
 * 2 - r for negative x. NaN gives the quiet NaN 0x7fc00000 (0x7ff8000000000000).
 * SLEEF's code for these four has no whole-vector branch; every selection is per element.
 *
 * Constants SLEEF writes as float literals are float literals here; those it writes as double
 * literals into a float context are rounded from the double ((float)1.1), and its double pair
 * constants of the float functions (vcast_vf2_d) are the double rounded to float plus the
 * rounded remainder, as SLEEF computes them.
 * Depends on cpu_math.h and libm only. */
#ifndef TDL_CPU_MATH_ERF_H
#define TDL_CPU_MATH_ERF_H

#include "cpu_math.h"

/* ---- erf and erfc ---- */

/* erf(x) in float: SLEEF's xerff_u1 (u10), FMA build. */
CPU_MATH_INLINE float cpu_erf_f32(float x)
{
    float a = fabsf(x);
    uint32_t o0 = CPU_MASK32(a < (float)1.1), o1 = CPU_MASK32(a < (float)2.4), o2 = CPU_MASK32(a < 4.0f);
    float u = cpu_sel_f32(o0, a * a, a);

    float t = cpu_sel3_f32(o0, o1, +0.7089292194e-4f, -0.1792667899e-4f, -0.9495757695e-5f);
    t = fmaf(t, u, cpu_sel3_f32(o0, o1, -0.7768311189e-3f, +0.3937633010e-3f, +0.2481465926e-3f));
    t = fmaf(t, u, cpu_sel3_f32(o0, o1, +0.5159463733e-2f, -0.3949181177e-2f, -0.2918176819e-2f));
    t = fmaf(t, u, cpu_sel3_f32(o0, o1, -0.2683781274e-1f, +0.2445474640e-1f, +0.2059706673e-1f));
    t = fmaf(t, u, cpu_sel3_f32(o0, o1, +0.1128318012e+0f, -0.1070996150e+0f, -0.9901899844e-1f));

    CpuF2 d = cpu_df_mul_ff(t, u);
    d = cpu_df_add2(d, cpu_df_sel3_d(o0, o1, -0.376125876000657465175213237214e+0, -0.634588905908410389971210809210e+0,
                                     -0.643598050547891613081201721633e+0));
    d = cpu_df_mul_f(d, u);
    d = cpu_df_add2(d, cpu_df_sel3_d(o0, o1, +0.112837916021059138255978217023e+1, -0.112879855826694507209862753992e+1,
                                     -0.112461487742845562801052956293e+1));
    d = cpu_df_mul_f(d, a);
    /* past the first interval, d is the exponent: 1 - exp(d) */
    d = cpu_df_sel(o0, d, cpu_df_add_f2(1.0f, cpu_df_neg(cpu_expk2_pair_f32(d))));

    uint32_t rb = cpu_f32_bits(cpu_sel_f32(o2, d.x + d.y, 1.0f)) ^ (cpu_f32_bits(x) & 0x80000000u);
    uint32_t nan = CPU_MASK32(a != a);
    return cpu_f32_from_bits((rb & ~nan) | (0x7fc00000u & nan));
}

/* erfc(x) in float: SLEEF's xerfcf_u15 (u15), FMA build. */
CPU_MATH_INLINE float cpu_erfc_f32(float x)
{
    float a = fabsf(x);
    uint32_t o0 = CPU_MASK32(a < 1.0f), o1 = CPU_MASK32(a < (float)2.2), o2 = CPU_MASK32(a < (float)4.3);
    uint32_t o3 = CPU_MASK32(a < (float)10.1);
    /* the polynomials' variable: |x|, or 1 / |x| as a pair past 2.2 */
    CpuF2 u = cpu_df_sel(o1, cpu_f2(a, 0.0f), cpu_df_div(cpu_f2(1.0f, 0.0f), cpu_f2(a, 0.0f)));

    float t = cpu_sel4_f32(o0, o1, o2, -0.8638041618e-4f, -0.6236977242e-5f, -0.3869504035e+0f, +0.1115344167e+1f);
    t = fmaf(t, u.x, cpu_sel4_f32(o0, o1, o2, +0.6000166177e-3f, +0.5749821503e-4f, +0.1288077235e+1f,
                                  -0.9454904199e+0f));
    t = fmaf(t, u.x, cpu_sel4_f32(o0, o1, o2, -0.1665703603e-2f, +0.6002851478e-5f, -0.1816803217e+1f,
                                  -0.3667259514e+0f));
    t = fmaf(t, u.x, cpu_sel4_f32(o0, o1, o2, +0.1795156277e-3f, -0.2851036377e-2f, +0.1249150872e+1f,
                                  +0.7155663371e+0f));
    t = fmaf(t, u.x, cpu_sel4_f32(o0, o1, o2, +0.1914106123e-1f, +0.2260518074e-1f, -0.1328857988e+0f,
                                  -0.1262947265e-1f));

    CpuF2 d = cpu_df_mul_f(u, t);
    d = cpu_df_add2(d, cpu_df_sel4_d(o0, o1, o2, -0.102775359343930288081655368891e+0,
                                     -0.105247583459338632253369014063e+0,
                                     -0.482365310333045318680618892669e+0, -0.498961546254537647970305302739e+0));
    d = cpu_df_mul(d, u);
    d = cpu_df_add2(d, cpu_df_sel4_d(o0, o1, o2, -0.636619483208481931303752546439e+0,
                                     -0.635609463574589034216723775292e+0,
                                     -0.134450203224533979217859332703e-2, -0.471199543422848492080722832666e-4));
    d = cpu_df_mul(d, u);
    d = cpu_df_add2(d, cpu_df_sel4_d(o0, o1, o2, -0.112837917790537404939545770596e+1,
                                     -0.112855987376668622084547028949e+1,
                                     -0.572319781150472949561786101080e+0, -0.572364030327966044425932623525e+0));

    /* the exponent: d |x| up to 2.2, -x^2 + d past it; exp of it, divided by |x| past 2.2 */
    CpuF2 e = cpu_df_mul_f(cpu_df_sel(o1, d, cpu_f2(-a, 0.0f)), a);
    e = cpu_df_sel(o1, e, cpu_df_add2(e, d));
    e = cpu_expk2_pair_f32(e);
    e = cpu_df_sel(o1, e, cpu_df_mul(e, u));

    float r = cpu_sel_f32(o3, e.x + e.y, 0.0f);
    r = cpu_sel_f32(CPU_MASK32(cpu_f32_bits(x) >> 31), 2.0f - r, r);
    uint32_t nan = CPU_MASK32(x != x);
    return cpu_f32_from_bits((cpu_f32_bits(r) & ~nan) | (0x7fc00000u & nan));
}

/* erf(x) in double: SLEEF's xerf_u1 (u10), FMA build. */
CPU_MATH_INLINE double cpu_erf_f64(double x)
{
    double a = fabs(x);
    uint64_t o0 = CPU_MASK64(a < 1.0), o1 = CPU_MASK64(a < 3.7), o2 = CPU_MASK64(a < 6.0);
    double u = cpu_sel_f64(o0, a * a, a);

    double t = cpu_sel3_f64(o0, o1, +0.6801072401395392157e-20, +0.2830954522087717660e-13, -0.5846750404269610493e-17);
    t = fma(t, u, cpu_sel3_f64(o0, o1, -0.2161766247570056391e-18, -0.1509491946179481940e-11,
                               +0.6076691048812607898e-15));
    t = fma(t, u, cpu_sel3_f64(o0, o1, +0.4695919173301598752e-17, +0.3827857177807173152e-10,
                               -0.3007518609604893831e-13));
    t = fma(t, u, cpu_sel3_f64(o0, o1, -0.9049140419888010819e-16, -0.6139733921558987241e-09,
                               +0.9427906260824646063e-12));
    t = fma(t, u, cpu_sel3_f64(o0, o1, +0.1634018903557411517e-14, +0.6985387934608038824e-08,
                               -0.2100110908269393629e-10));
    t = fma(t, u, cpu_sel3_f64(o0, o1, -0.2783485786333455216e-13, -0.5988224513034371474e-07,
                               +0.3534639523461223473e-09));
    t = fma(t, u, cpu_sel3_f64(o0, o1, +0.4463221276786412722e-12, +0.4005716952355346640e-06,
                               -0.4664967728285395926e-08));
    t = fma(t, u, cpu_sel3_f64(o0, o1, -0.6711366622850138987e-11, -0.2132190104575784400e-05,
                               +0.4943823283769000532e-07));
    t = fma(t, u, cpu_sel3_f64(o0, o1, +0.9422759050232658346e-10, +0.9092461304042630325e-05,
                               -0.4271203394761148254e-06));
    t = fma(t, u, cpu_sel3_f64(o0, o1, -0.1229055530100228477e-08, -0.3079188080966205457e-04,
                               +0.3034067677404915895e-05));
    t = fma(t, u, cpu_sel3_f64(o0, o1, +0.1480719281585085023e-07, +0.7971413443082370762e-04,
                               -0.1776295289066871135e-04));
    t = fma(t, u, cpu_sel3_f64(o0, o1, -0.1636584469123402714e-06, -0.1387853215225442864e-03,
                               +0.8524547630559505050e-04));
    t = fma(t, u, cpu_sel3_f64(o0, o1, +0.1646211436588923363e-05, +0.6469678026257590965e-04,
                               -0.3290582944961784398e-03));
    t = fma(t, u, cpu_sel3_f64(o0, o1, -0.1492565035840624866e-04, +0.4996645280372945860e-03,
                               +0.9696966068789101157e-03));
    t = fma(t, u, cpu_sel3_f64(o0, o1, +0.1205533298178966496e-03, -0.1622802482842520535e-02,
                               -0.1812527628046986137e-02));
    t = fma(t, u, cpu_sel3_f64(o0, o1, -0.8548327023450851166e-03, +0.1615320557049377171e-03,
                               -0.4725409828123619017e-03));
    t = fma(t, u, cpu_sel3_f64(o0, o1, +0.5223977625442188799e-02, +0.1915262325574875607e-01,
                               +0.2090315427924229266e-01));
    t = fma(t, u, cpu_sel3_f64(o0, o1, -0.2686617064513125569e-01, -0.1027818298486033455e+00,
                               -0.1052041921842776645e+00));
    t = fma(t, u, cpu_sel3_f64(o0, o1, +0.1128379167095512753e+00, -0.6366172819842503827e+00,
                               -0.6345351808766568347e+00));
    t = fma(t, u, cpu_sel3_f64(o0, o1, -0.3761263890318375380e+00, -0.1128379590648910469e+01,
                               -0.1129442929103524396e+01));

    CpuD2 d = cpu_dd_mul_dd(t, u);
    d = cpu_dd_add2(d, cpu_d2(cpu_sel3_f64(o0, o1, 1.1283791670955125586, 3.4110644736196137587e-08,
                                           0.00024963035690526438285),
                              cpu_sel3_f64(o0, o1, 1.5335459613165822674e-17, -2.4875650708323294246e-24,
                                           -5.4362665034856259795e-21)));
    /* d |x| on the first interval, 1 - exp(d) past it */
    d = cpu_dd_sel(o0, cpu_dd_mul_d(d, a), cpu_dd_add_d2(1.0, cpu_dd_neg(cpu_expk2_pair_f64(d))));

    uint64_t rb = cpu_f64_bits(cpu_sel_f64(o2, d.x + d.y, 1.0)) ^ (cpu_f64_bits(x) & UINT64_C(0x8000000000000000));
    uint64_t nan = CPU_MASK64(a != a);
    return cpu_f64_from_bits((rb & ~nan) | (UINT64_C(0x7ff8000000000000) & nan));
}

/* erfc(x) in double: SLEEF's xerfc_u15 (u15), FMA build. */
CPU_MATH_INLINE double cpu_erfc_f64(double x)
{
    double a = fabs(x);
    uint64_t o0 = CPU_MASK64(a < 1.0), o1 = CPU_MASK64(a < 2.2), o2 = CPU_MASK64(a < 4.2), o3 = CPU_MASK64(a < 27.3);
    /* the polynomials' variable: x^2 (a pair) below 1, |x| up to 2.2, 1 / |x| (a pair) past it */
    CpuD2 u = cpu_dd_sel(o0, cpu_dd_mul_dd(a, a),
                         cpu_dd_sel(o1, cpu_d2(a, 0.0), cpu_dd_div(cpu_d2(1.0, 0.0), cpu_d2(a, 0.0))));

    double t = cpu_sel4_f64(o0, o1, o2, +0.6801072401395386139e-20, +0.3438010341362585303e-12,
                            -0.5757819536420710449e+2,
                            +0.2334249729638701319e+5);
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, -0.2161766247570055669e-18, -0.1237021188160598264e-10,
                                 +0.4669289654498104483e+3, -0.4695661044933107769e+5));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, +0.4695919173301595670e-17, +0.2117985839877627852e-09,
                                 -0.1796329879461355858e+4, +0.3173403108748643353e+5));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, -0.9049140419888007122e-16, -0.2290560929177369506e-08,
                                 +0.4355892193699575728e+4, +0.3242982786959573787e+4));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, +0.1634018903557410728e-14, +0.1748931621698149538e-07,
                                 -0.7456258884965764992e+4, -0.2014717999760347811e+5));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, -0.2783485786333451745e-13, -0.9956602606623249195e-07,
                                 +0.9553977358167021521e+4, +0.1554006970967118286e+5));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, +0.4463221276786415752e-12, +0.4330010240640327080e-06,
                                 -0.9470019905444229153e+4, -0.6150874190563554293e+4));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, -0.6711366622850136563e-11, -0.1435050600991763331e-05,
                                 +0.7387344321849855078e+4, +0.1240047765634815732e+4));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, +0.9422759050232662223e-10, +0.3460139479650695662e-05,
                                 -0.4557713054166382790e+4, -0.8210325475752699731e+2));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, -0.1229055530100229098e-08, -0.4988908180632898173e-05,
                                 +0.2207866967354055305e+4, +0.3242443880839930870e+2));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, +0.1480719281585086512e-07, -0.1308775976326352012e-05,
                                 -0.8217975658621754746e+3, -0.2923418863833160586e+2));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, -0.1636584469123399803e-06, +0.2825086540850310103e-04,
                                 +0.2268659483507917400e+3, +0.3457461732814383071e+0));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, +0.1646211436588923575e-05, -0.6393913713069986071e-04,
                                 -0.4633361260318560682e+2, +0.5489730155952392998e+1));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, -0.1492565035840623511e-04, -0.2566436514695078926e-04,
                                 +0.9557380123733945965e+1, +0.1559934132251294134e-2));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, +0.1205533298178967851e-03, +0.5895792375659440364e-03,
                                 -0.2958429331939661289e+1, -0.1541741566831520638e+1));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, -0.8548327023450850081e-03, -0.1695715579163588598e-02,
                                 +0.1670329508092765480e+0, +0.2823152230558364186e-5));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, +0.5223977625442187932e-02, +0.2089116434918055149e-03,
                                 +0.6096615680115419211e+0, +0.6249999184195342838e+0));
    t = fma(t, u.x, cpu_sel4_f64(o0, o1, o2, -0.2686617064513125222e-01, +0.1912855949584917753e-01,
                                 +0.1059212443193543585e-2, +0.1741749416408701288e-8));

    CpuD2 d = cpu_dd_mul_d(u, t);
    d = cpu_dd_add2(d, cpu_d2(cpu_sel4_f64(o0, o1, o2, 0.11283791670955126141, -0.10277263343147646779,
                                           -0.50005180473999022439,
                                           -0.5000000000258444377),
                              cpu_sel4_f64(o0, o1, o2, -4.0175691625932118483e-18, -6.2338714083404900225e-18,
                                           2.6362140569041995803e-17, -4.0074044712386992281e-17)));
    d = cpu_dd_mul(d, u);
    d = cpu_dd_add2(d, cpu_d2(cpu_sel4_f64(o0, o1, o2, -0.37612638903183753802, -0.63661976742916359662,
                                           1.601106273924963368e-06,
                                           2.3761973137523364792e-13),
                              cpu_sel4_f64(o0, o1, o2, 1.3391897206042552387e-17, 7.6321019159085724662e-18,
                                           1.1974001857764476775e-23, -1.1670076950531026582e-29)));
    d = cpu_dd_mul(d, u);
    d = cpu_dd_add2(d, cpu_d2(cpu_sel4_f64(o0, o1, o2, 1.1283791670955125586, -1.1283791674717296161,
                                           -0.57236496645145429341,
                                           -0.57236494292470108114),
                              cpu_sel4_f64(o0, o1, o2, 1.5335459613165822674e-17, 8.0896847755965377194e-17,
                                           3.0704553245872027258e-17, -2.3984352208056898003e-17)));

    /* the exponent: d |x| up to 2.2, -x^2 + d past it; 1 - d |x| below 1, exp of the exponent
     * from 1 on, divided by |x| past 2.2 */
    CpuD2 e = cpu_dd_mul_d(cpu_dd_sel(o1, d, cpu_d2(-a, 0.0)), a);
    e = cpu_dd_sel(o1, e, cpu_dd_add2(e, d));
    e = cpu_dd_sel(o0, cpu_dd_sub(cpu_d2(1.0, 0.0), e), cpu_expk2_pair_f64(e));
    e = cpu_dd_sel(o1, e, cpu_dd_mul(e, u));

    double r = cpu_sel_f64(o3, e.x + e.y, 0.0);
    r = cpu_sel_f64(CPU_MASK64(cpu_f64_bits(x) >> 63), 2.0 - r, r);
    uint64_t nan = CPU_MASK64(x != x);
    return cpu_f64_from_bits((cpu_f64_bits(r) & ~nan) | (UINT64_C(0x7ff8000000000000) & nan));
}

#endif
