/* cuda_codegen.c — a scheduled kernel (FcKernel, the one the CPU executor runs) printed as CUDA C
 * source, with the plan of its launch: which entry point, how many points, which arguments.
 *
 * What the source is specialised on. Only the kernel's structure: its code (ops, dtypes, which
 * instruction reads which), which loops each access moves along (and whether by a unit step
 * along the vector loop), gathers, bounds, reductions and the way the GPU walks the loop nest.
 * Every number (extents, strides, offsets, constants, fills) is a field of the argument struct,
 * so a program that runs the same expression on other shapes or scalars hits the compile cache.
 * The source includes no header (NVRTC compiles it in tens of milliseconds) and is meant to be
 * read: one `vN` per instruction N of the kernel, loops named `iL` after the kernel's loops.
 *
 * Honesty. Pointwise math is the CPU executor's, operation for operation (cpu_ops.c: integer
 * arithmetic in unsigned types, Python's floor division and remainder, NaN-propagating min/max,
 * float-to-int conversions that give INT_MIN out of range, ...), compiled without contraction
 * into FMA (--fmad=false), so +, -, *, / and sqrt give the CPU's bits; libm's functions (exp,
 * sin, pow, ...) are CUDA's, within a few ulp of glibc's. Reductions accumulate as cpu_reduce.c
 * does (double for floats, int64 for integers) with its identities, NaN rules and final
 * conversions; a reduction computed by one thread also adds in the CPU's order (a reduction of
 * one value per chunk over eight lanes, i % 8, combined lane by lane; a wide one element by
 * element), so its bits are the CPU's. Reductions shared by the threads of a block (a row's
 * max and sum in softmax, a root reduction of a long row) add in a tree: the same result up to
 * the rounding of double additions. Bounds are the scheduler's (FcBound): a loop runs to
 * min(e, extent) (bound_count's rounding of float e) and the fill is folded once when indices
 * were skipped; a bound that varies along the vector loop is not applied (the mask in the body
 * then gives the same bits), as the CPU does. Errors found in the data (a gathered index out of
 * range, an integer division by zero) are recorded in an error slot that the backend reads
 * after the launch, with the CPU's message.
 *
 * How the GPU walks the nest (CudaMode): a thread per output point (V consecutive points along
 * the vector loop with 16-byte loads and stores where contiguous and aligned, checked at run
 * time); a block per row when the kernel holds reductions computed once per row (softmax), the
 * row's threads reducing cooperatively (warp shuffles, then shared memory); for a root
 * reduction a block per output (split over blocks whose partials a second kernel combines in a
 * fixed order) or a thread per output when outputs are many and the reduced loop is not innermost;
 * scattered and accumulating stores on one thread in the loop nest's order, as the CPU runs them
 * (duplicates land in order), or, when they cannot fail (a gradient's scatter-add), with their
 * records (points of the loops but the owner ones) sorted by destination and a thread per
 * (destination, owner point) adding its records in loop order (CUDA_SORTED), or else, with
 * owner loops, a thread per point of those, the other loops in order inside (CUDA_OWNER): the
 * CPU's bits, no float atomics. Loops are grid- and block-stride loops; index arithmetic is 32-bit
 * when the kernel's addresses (FcKernel.index32) and every count fit. Each value is computed at
 * the outermost level of the nest where its loops (the plan's deps) are bound; a value of an
 * inner reduction's body that would still be computed again along a loop it does not vary along
 * (roi_align's coordinates and weights, for every channel) is precomputed by the plan's rule
 * (fc_kplan_pre) in tdl_pre, launched first, into tables the kernel reads (plan_pre).
 * Depends on cuda_internal.h and libc. */
#include "cuda_internal.h"
#include "mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text ---- */

typedef struct Buf {
    char *p;
    size_t n, cap;
    bool oom;
} Buf;

static void bvput(Buf *b, const char *fmt, va_list ap)
{
    if (b->oom)
        return;
    va_list aq;
    va_copy(aq, ap);
    int m = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, aq);
    va_end(aq);
    if (m < 0) {
        b->oom = true;
        return;
    }
    if (!b->p || b->n + (size_t)m + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + (size_t)m + 1)
            cap *= 2;
        char *q = mem_realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
        vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    }
    b->n += (size_t)m;
}

static void bput(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bput(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bvput(b, fmt, ap);
    va_end(ap);
}

/* Writes template t into b with $x $y $z (operands), $T (the C type), $U (its unsigned type),
 * $M (libm's suffix: f for float) and $B (its width in bits) replaced. */
static void subst(Buf *b, const char *t, const char *x, const char *y, const char *z, const char *T,
                  const char *U, const char *M, int bits)
{
    for (; *t; t++) {
        if (*t != '$' || !t[1]) {
            bput(b, "%c", *t);
            continue;
        }
        t++;
        switch (*t) {
        case 'x': bput(b, "%s", x); break;
        case 'y': bput(b, "%s", y); break;
        case 'z': bput(b, "%s", z); break;
        case 'T': bput(b, "%s", T); break;
        case 'U': bput(b, "%s", U); break;
        case 'M': bput(b, "%s", M); break;
        case 'B': bput(b, "%d", bits); break;
        default: bput(b, "$%c", *t); break;
        }
    }
}

/* ---- the prelude: the same text in every kernel ---- */

static const char prelude[] =
    "// ---- tdl prelude: types, and the semantics of tdl's CPU executor (cpu_ops.c, cpu_reduce.c) ----\n"
    "typedef unsigned char b8;\n"
    "typedef int int32;\n"
    "typedef unsigned int uint32;\n"
    "typedef long long int64;\n"
    "typedef unsigned long long uint64;\n"
    "typedef float f32;\n"
    "typedef double f64;\n"
    "typedef unsigned char u8;\n"
    "typedef signed char i8;\n"
    "typedef short i16;\n"
    "typedef unsigned short uint16;\n"
    "typedef unsigned short h16;    // float16, its bits\n"
    "typedef unsigned short bh16;   // bfloat16, its bits\n"
    "#define LANES _Pragma(\"unroll\") for (int u = 0; u < V; u++)\n"
    "#define I64_MIN (-9223372036854775807LL - 1)\n"
    "#define I64_MAX 9223372036854775807LL\n"
    "\n"
    "// The error slot: code 1 an index out of range (value, dim, extent), 2 an integer division by zero.\n"
    "struct Err { int32 code, dim; int64 value, extent; };\n"
    "__device__ __noinline__ void fail(Err *e, int32 code, int64 value, int32 dim, int64 extent)\n"
    "{\n"
    "    if (atomicCAS(&e->code, 0, code) == 0) {\n"
    "        e->dim = dim;\n"
    "        e->value = value;\n"
    "        e->extent = extent;\n"
    "    }\n"
    "}\n"
    "// A gathered or scattered index checked against its extent (when wrap, a negative one counts\n"
    "// from the end); an index out of range is recorded and reads element 0.\n"
    "__device__ __forceinline__ int64 gix(int64 x, int64 ext, bool wrap, int32 dim, Err *e)\n"
    "{\n"
    "    const uint64 lo = wrap ? (uint64)ext : 0;\n"
    "    if ((uint64)x + lo >= (uint64)ext + lo) {\n"
    "        fail(e, 1, x, dim, ext);\n"
    "        return 0;\n"
    "    }\n"
    "    return x + (ext & (x >> 63));\n"
    "}\n"
    "// Float to int as x86's cvtt: C's conversion in range, the minimum outside it and for NaN.\n"
    "__device__ __forceinline__ int64 f64_to_int64(f64 x)\n"
    "{\n"
    "    return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64)x : I64_MIN;\n"
    "}\n"
    "__device__ __forceinline__ int32 f64_to_int32(f64 x)\n"
    "{\n"
    "    return (x > -2147483649.0 && x < 2147483648.0) ? (int32)x : (int32)(-2147483647 - 1);\n"
    "}\n"
    "// float16 and bfloat16 to and from float32 as fcdim.h's fc_f16_to_f32 ... (c10's conversions):\n"
    "// round to nearest even through float32 arithmetic, a NaN made quiet.\n"
    "__device__ __forceinline__ f32 h2f(h16 h)\n"
    "{\n"
    "    const uint32 w = (uint32)h << 16, sign = w & 0x80000000u, two_w = w + w;\n"
    "    const f32 normalized = __uint_as_float((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;\n"
    "    const f32 denormalized = __uint_as_float((two_w >> 17) | (126u << 23)) - 0.5f;\n"
    "    return __uint_as_float(sign | (two_w < (1u << 27) ? __float_as_uint(denormalized) : __float_as_uint(normalized)));\n"
    "}\n"
    "__device__ __forceinline__ h16 f2h(f32 f)\n"
    "{\n"
    "    f32 base = (fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;\n"
    "    const uint32 w = __float_as_uint(f), shl1_w = w + w, sign = w & 0x80000000u;\n"
    "    uint32 bias = shl1_w & 0xFF000000u;\n"
    "    if (bias < 0x71000000u)\n"
    "        bias = 0x71000000u;\n"
    "    base = __uint_as_float((bias >> 1) + 0x07800000u) + base;\n"
    "    const uint32 bits = __float_as_uint(base);\n"
    "    const uint32 nonsign = ((bits >> 13) & 0x7C00u) + (bits & 0x0FFFu);\n"
    "    return (h16)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));\n"
    "}\n"
    "__device__ __forceinline__ f32 bh2f(bh16 h) { return __uint_as_float((uint32)h << 16); }\n"
    "__device__ __forceinline__ bh16 f2bh(f32 f)\n"
    "{\n"
    "    const uint32 u = __float_as_uint(f);\n"
    "    return f != f ? (bh16)0xFFFF : (bh16)((u + ((u >> 16) & 1) + 0x7FFFu) >> 16);\n"
    "}\n"
    "__device__ __forceinline__ f32 m_fmod(f32 a, f32 b) { return fmodf(a, b); }\n"
    "__device__ __forceinline__ f64 m_fmod(f64 a, f64 b) { return fmod(a, b); }\n"
    "__device__ __forceinline__ f32 m_floor(f32 a) { return floorf(a); }\n"
    "__device__ __forceinline__ f64 m_floor(f64 a) { return floor(a); }\n"
    "__device__ __forceinline__ f32 m_copysign(f32 a, f32 b) { return copysignf(a, b); }\n"
    "__device__ __forceinline__ f64 m_copysign(f64 a, f64 b) { return copysign(a, b); }\n"
    "// exp as the CPU executor computes it (cpu_math.h: SLEEF's xexpf and xexp, FMA build), bit for\n"
    "// bit: fmaf/fma are fused, every other operation is rounded on its own (--fmad=false).\n"
    "__device__ __forceinline__ f32 tdl_exp(f32 d)\n"
    "{\n"
    "    f32 t = d * 1.442695040888963407359924681001892137426645954152985934135449406931f;\n"
    "    t = fabsf(t) < 0x1p22f ? t : 0.0f;\n"
    "    const f32 qf = (t + 0x1.8p23f) - 0x1.8p23f;\n"
    "    const int32 q = (int32)qf;\n"
    "    f32 s = fmaf(qf, -0.693145751953125f, d);\n"
    "    s = fmaf(qf, -1.428606765330187045e-06f, s);\n"
    "    f32 u = 0.000198527617612853646278381f;\n"
    "    u = fmaf(u, s, 0.00139304355252534151077271f);\n"
    "    u = fmaf(u, s, 0.00833336077630519866943359f);\n"
    "    u = fmaf(u, s, 0.0416664853692054748535156f);\n"
    "    u = fmaf(u, s, 0.166666671633720397949219f);\n"
    "    u = fmaf(u, s, 0.5f);\n"
    "    u = 1.0f + fmaf(s * s, u, s);\n"
    "    const int32 q1 = q >> 1;\n"
    "    u = u * __uint_as_float((uint32)(q1 + 0x7f) << 23);\n"
    "    u = u * __uint_as_float((uint32)(q - q1 + 0x7f) << 23);\n"
    "    if (d < -104.0f)\n"
    "        u = 0.0f;\n"
    "    return 100.0f < d ? __uint_as_float(0x7f800000u) : u;\n"
    "}\n"
    "__device__ __forceinline__ f64 tdl_exp(f64 d)\n"
    "{\n"
    "    f64 t = d * 1.442695040888963407359924681001892137426645954152985934135449406931;\n"
    "    t = fabs(t) < 0x1p30 ? t : 0.0;\n"
    "    const f64 qd = (t + 0x1.8p52) - 0x1.8p52;\n"
    "    const int32 q = (int32)qd;\n"
    "    f64 s = fma(qd, -.69314718055966295651160180568695068359375, d);\n"
    "    s = fma(qd, -.28235290563031577122588448175013436025525412068e-12, s);\n"
    "    const f64 s2 = s * s, s4 = s2 * s2, s8 = s4 * s4;\n"
    "    const f64 p98 = fma(s, +0.2081276378237164457e-8, +0.2511210703042288022e-7);\n"
    "    const f64 p76 = fma(s, +0.2755762628169491192e-6, +0.2755723402025388239e-5);\n"
    "    const f64 p54 = fma(s, +0.2480158687479686264e-4, +0.1984126989855865850e-3);\n"
    "    const f64 p32 = fma(s, +0.1388888888914497797e-2, +0.8333333333314938210e-2);\n"
    "    const f64 p10 = fma(s, +0.4166666666666602598e-1, +0.1666666666666669072e+0);\n"
    "    const f64 p7654 = fma(s2, p76, p54), p3210 = fma(s2, p32, p10);\n"
    "    f64 u = fma(s8, p98, fma(s4, p7654, p3210));\n"
    "    u = fma(u, s, 0.5);\n"
    "    u = fma(u, s, 1.0);\n"
    "    u = fma(u, s, 1.0);\n"
    "    const int32 q1 = q >> 1;\n"
    "    u = u * __longlong_as_double((int64)((uint64)(uint32)(q1 + 0x3ff) << 52));\n"
    "    u = u * __longlong_as_double((int64)((uint64)(uint32)(q - q1 + 0x3ff) << 52));\n"
    "    if (d > 709.78271114955742909217217426)\n"
    "        u = __longlong_as_double(0x7ff0000000000000LL);\n"
    "    return d < -1000.0 ? 0.0 : u;\n"
    "}\n"
    "// Pair arithmetic (hi + lo) for tdl_tanh, tdl_log, tdl_log1p and tdl_expm1: SLEEF's df.h and dd.h,\n"
    "// FMA forms (named in cpu_math.h); fmaf/fma fused, every other operation rounded on its own.\n"
    "__device__ __forceinline__ f32 m_fma(f32 a, f32 b, f32 c) { return fmaf(a, b, c); }\n"
    "__device__ __forceinline__ f64 m_fma(f64 a, f64 b, f64 c) { return fma(a, b, c); }\n"
    "template <class T> struct tdl_pair { T x, y; };\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_add_ss(T a, T b)\n"
    "{\n"
    "    const T s = a + b;\n"
    "    return {s, (a - s) + b};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_add2_ss(T a, T b)\n"
    "{\n"
    "    const T s = a + b, v = s - a;\n"
    "    return {s, (a - (s - v)) + (b - v)};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_add2_s(tdl_pair<T> a, T b)\n"
    "{\n"
    "    const T s = a.x + b, v = s - a.x;\n"
    "    return {s, ((a.x - (s - v)) + (b - v)) + a.y};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_add2_sp(T a, tdl_pair<T> b)\n"
    "{\n"
    "    const T s = a + b.x, v = s - a;\n"
    "    return {s, ((a - (s - v)) + (b.x - v)) + b.y};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_add2(tdl_pair<T> a, tdl_pair<T> b)\n"
    "{\n"
    "    const T s = a.x + b.x, v = s - a.x;\n"
    "    return {s, ((a.x - (s - v)) + (b.x - v)) + (a.y + b.y)};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_add(tdl_pair<T> a, tdl_pair<T> b)\n"
    "{\n"
    "    const T s = a.x + b.x;\n"
    "    return {s, (((a.x - s) + b.x) + a.y) + b.y};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_add_p(tdl_pair<T> a, T b)\n"
    "{\n"
    "    const T s = a.x + b;\n"
    "    return {s, ((a.x - s) + b) + a.y};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_add_s(T a, tdl_pair<T> b)\n"
    "{\n"
    "    const T s = a + b.x;\n"
    "    return {s, ((a - s) + b.x) + b.y};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_mul_s(tdl_pair<T> a, T b)\n"
    "{\n"
    "    const T s = a.x * b;\n"
    "    return {s, m_fma(a.y, b, m_fma(a.x, b, -s))};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_mul(tdl_pair<T> a, tdl_pair<T> b)\n"
    "{\n"
    "    const T s = a.x * b.x;\n"
    "    return {s, m_fma(a.x, b.y, m_fma(a.y, b.x, m_fma(a.x, b.x, -s)))};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_squ(tdl_pair<T> a)\n"
    "{\n"
    "    const T s = a.x * a.x;\n"
    "    return {s, m_fma(a.x + a.x, a.y, m_fma(a.x, a.x, -s))};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_rec(tdl_pair<T> d)\n"
    "{\n"
    "    const T s = (T)1 / d.x;\n"
    "    return {s, s * m_fma(-d.y, s, m_fma(-d.x, s, (T)1))};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ tdl_pair<T> pr_div(tdl_pair<T> n, tdl_pair<T> d)\n"
    "{\n"
    "    const T t = (T)1 / d.x, s = n.x * t;\n"
    "    const T u = m_fma(t, n.x, -s), v = m_fma(-d.y, t, m_fma(-d.x, t, (T)1));\n"
    "    return {s, m_fma(s, v, m_fma(n.y, t, u))};\n"
    "}\n"
    "// tanh as the CPU executor computes it (cpu_math.h: SLEEF's xtanhf and xtanh, FMA build), bit for\n"
    "// bit: exp(|x|) as a pair (expk2f, expk2), then (e - 1/e) / (e + 1/e) in pair arithmetic, 1 past\n"
    "// the threshold, x's sign, NaN all ones.\n"
    "__device__ __forceinline__ tdl_pair<f32> tdl_expk2(f32 d)\n"
    "{\n"
    "    f32 t = d * 1.442695040888963407359924681001892137426645954152985934135449406931f;\n"
    "    t = fabsf(t) < 0x1p22f ? t : 0.0f;\n"
    "    const f32 qf = (t + 0x1.8p23f) - 0x1.8p23f;\n"
    "    const int32 q = (int32)qf;\n"
    "    tdl_pair<f32> s = pr_add2_s(tdl_pair<f32>{d, 0.0f}, qf * -0.693145751953125f);\n"
    "    s = pr_add2_s(s, qf * -1.428606765330187045e-06f);\n"
    "    f32 u = +0.1980960224e-3f;\n"
    "    u = fmaf(u, s.x, +0.1394256484e-2f);\n"
    "    u = fmaf(u, s.x, +0.8333456703e-2f);\n"
    "    u = fmaf(u, s.x, +0.4166637361e-1f);\n"
    "    tdl_pair<f32> r = pr_add2_s(pr_mul_s(s, u), +0.166666659414234244790680580464e+0f);\n"
    "    r = pr_add2_s(pr_mul(s, r), 0.5f);\n"
    "    r = pr_add2(s, pr_mul(pr_squ(s), r));\n"
    "    r = pr_add_s(1.0f, r);\n"
    "    const int32 q1 = q >> 1;\n"
    "    const f32 p1 = __uint_as_float((uint32)(q1 + 0x7f) << 23), p2 = __uint_as_float((uint32)(q - q1 + 0x7f) << 23);\n"
    "    return {r.x * p1 * p2, r.y * p1 * p2};\n"
    "}\n"
    "__device__ __forceinline__ tdl_pair<f64> tdl_expk2(f64 d)\n"
    "{\n"
    "    f64 t = d * 1.442695040888963407359924681001892137426645954152985934135449406931;\n"
    "    t = fabs(t) < 0x1p30 ? t : 0.0;\n"
    "    const f64 qd = (t + 0x1.8p52) - 0x1.8p52;\n"
    "    const int32 q = (int32)qd;\n"
    "    tdl_pair<f64> s = pr_add2_s(tdl_pair<f64>{d, 0.0}, qd * -.69314718055966295651160180568695068359375);\n"
    "    s = pr_add2_s(s, qd * -.28235290563031577122588448175013436025525412068e-12);\n"
    "    const tdl_pair<f64> s2 = pr_squ(s), s4 = pr_squ(s2);\n"
    "    const f64 x = s.x, x2 = s2.x, x4 = s4.x, x8 = s4.x * s4.x;\n"
    "    const f64 p98 = fma(x, +0.1602472219709932072e-9, +0.2092255183563157007e-8);\n"
    "    const f64 p76 = fma(x, +0.2505230023782644465e-7, +0.2755724800902135303e-6);\n"
    "    const f64 p54 = fma(x, +0.2755731892386044373e-5, +0.2480158735605815065e-4);\n"
    "    const f64 p32 = fma(x, +0.1984126984148071858e-3, +0.1388888888886763255e-2);\n"
    "    const f64 p10 = fma(x, +0.8333333333333347095e-2, +0.4166666666666669905e-1);\n"
    "    const f64 u = fma(x8, p98, fma(x4, fma(x2, p76, p54), fma(x2, p32, p10)));\n"
    "    tdl_pair<f64> r = pr_add_s(0.5, pr_mul_s(s, +0.1666666666666666574e+0));\n"
    "    r = pr_add_s(1.0, pr_mul(r, s));\n"
    "    r = pr_add_s(1.0, pr_mul(r, s));\n"
    "    r = pr_add(r, pr_mul_s(s4, u));\n"
    "    const int32 q1 = q >> 1;\n"
    "    const f64 p1 = __longlong_as_double((int64)((uint64)(uint32)(q1 + 0x3ff) << 52));\n"
    "    const f64 p2 = __longlong_as_double((int64)((uint64)(uint32)(q - q1 + 0x3ff) << 52));\n"
    "    return {r.x * p1 * p2, r.y * p1 * p2};\n"
    "}\n"
    "__device__ __forceinline__ f32 tdl_tanh(f32 x)\n"
    "{\n"
    "    const f32 a = fabsf(x);\n"
    "    const tdl_pair<f32> d = tdl_expk2(a), e = pr_rec(d);\n"
    "    const tdl_pair<f32> r = pr_div(pr_add(d, tdl_pair<f32>{-e.x, -e.y}), pr_add(d, e));\n"
    "    f32 y = r.x + r.y;\n"
    "    y = (a > 8.664339742f || y != y) ? 1.0f : y;\n"
    "    y = __uint_as_float(__float_as_uint(y) ^ (__float_as_uint(x) & 0x80000000u));\n"
    "    return x != x ? __uint_as_float(0xffffffffu) : y;\n"
    "}\n"
    "__device__ __forceinline__ f64 tdl_tanh(f64 x)\n"
    "{\n"
    "    const f64 a = fabs(x);\n"
    "    const tdl_pair<f64> d = tdl_expk2(a), e = pr_rec(d);\n"
    "    const tdl_pair<f64> r = pr_div(pr_add2(d, tdl_pair<f64>{-e.x, -e.y}), pr_add2(d, e));\n"
    "    f64 y = r.x + r.y;\n"
    "    y = (a > 18.714973875 || y != y) ? 1.0 : y;\n"
    "    y = __longlong_as_double(__double_as_longlong(y) ^ (__double_as_longlong(x) & I64_MIN));\n"
    "    return x != x ? __longlong_as_double(-1LL) : y;\n"
    "}\n"
    "// log, log2 and log10 as the CPU executor computes them (cpu_math.h: SLEEF's xlogf_u1, xlog_u1,\n"
    "// xlog2f, xlog2, xlog10f and xlog10, FMA builds), bit for bit: d = m 2^e, m in [0.75, 1.5),\n"
    "// x = (m - 1) / (m + 1) as a pair, then e ln2 + 2x, e + x 2/ln2 or e log10(2) + x 2/ln10 in pair\n"
    "// arithmetic.\n"
    "template <class T> struct tdl_log_arg { T ds; int32 e; tdl_pair<T> x; };\n"
    "__device__ __forceinline__ tdl_log_arg<f32> tdl_log_reduce(f32 d)\n"
    "{\n"
    "    const bool tiny = d < 0x1p-126f;\n"
    "    tdl_log_arg<f32> a;\n"
    "    a.ds = tiny ? d * 0x1p64f : d;\n"
    "    a.e = (int32)((__float_as_uint(a.ds * (1.0f / 0.75f)) >> 23) & 0xff) - 0x7f;\n"
    "    const f32 m = __uint_as_float(__float_as_uint(a.ds) + ((uint32)-a.e << 23));\n"
    "    if (tiny)\n"
    "        a.e -= 64;\n"
    "    a.x = pr_div(pr_add2_ss(-1.0f, m), pr_add2_ss(1.0f, m));\n"
    "    return a;\n"
    "}\n"
    "__device__ __forceinline__ tdl_log_arg<f64> tdl_log_reduce(f64 d)\n"
    "{\n"
    "    const bool tiny = d < 0x1p-1022;\n"
    "    tdl_log_arg<f64> a;\n"
    "    a.ds = tiny ? d * 0x1p64 : d;\n"
    "    a.e = (int32)((__double_as_longlong(a.ds * (1.0 / 0.75)) >> 52) & 0x7ff) - 0x3ff;\n"
    "    const f64 m = __longlong_as_double((int64)((uint64)__double_as_longlong(a.ds) + ((uint64)((uint32)-a.e << 20) << 32)));\n"
    "    if (tiny)\n"
    "        a.e -= 64;\n"
    "    a.x = pr_div(pr_add2_ss(-1.0, m), pr_add2_ss(1.0, m));\n"
    "    return a;\n"
    "}\n"
    "__device__ __forceinline__ f32 tdl_log_fix(f32 r, f32 ds)\n"
    "{\n"
    "    if (ds == __uint_as_float(0x7f800000u))\n"
    "        r = ds;\n"
    "    if (ds < 0.0f || ds != ds)\n"
    "        r = __uint_as_float(0x7fc00000u);\n"
    "    return ds == 0.0f ? __uint_as_float(0xff800000u) : r;\n"
    "}\n"
    "__device__ __forceinline__ f64 tdl_log_fix(f64 r, f64 ds)\n"
    "{\n"
    "    if (ds == __longlong_as_double(0x7ff0000000000000LL))\n"
    "        r = ds;\n"
    "    if (ds < 0.0 || ds != ds)\n"
    "        r = __longlong_as_double(0x7ff8000000000000LL);\n"
    "    return ds == 0.0 ? __longlong_as_double((int64)0xfff0000000000000ULL) : r;\n"
    "}\n"
    "__device__ __forceinline__ f32 tdl_log(f32 d)\n"
    "{\n"
    "    const tdl_log_arg<f32> a = tdl_log_reduce(d);\n"
    "    const f32 x2 = a.x.x * a.x.x;\n"
    "    f32 t = +0.3027294874e+0f;\n"
    "    t = fmaf(t, x2, +0.3996108174e+0f);\n"
    "    t = fmaf(t, x2, +0.6666694880e+0f);\n"
    "    tdl_pair<f32> s = pr_mul_s(tdl_pair<f32>{0.69314718246459960938f, -1.904654323148236017e-09f}, (f32)a.e);\n"
    "    s = pr_add(s, tdl_pair<f32>{a.x.x * 2.0f, a.x.y * 2.0f});\n"
    "    s = pr_add_p(s, (x2 * a.x.x) * t);\n"
    "    return tdl_log_fix(s.x + s.y, a.ds);\n"
    "}\n"
    "__device__ __forceinline__ f32 tdl_log2(f32 d)\n"
    "{\n"
    "    const tdl_log_arg<f32> a = tdl_log_reduce(d);\n"
    "    const f32 x2 = a.x.x * a.x.x;\n"
    "    f32 t = +0.4374550283e+0f;\n"
    "    t = fmaf(t, x2, +0.5764790177e+0f);\n"
    "    t = fmaf(t, x2, +0.9618012905120f);\n"
    "    tdl_pair<f32> s = pr_add2_sp((f32)a.e, pr_mul(a.x, tdl_pair<f32>{(f32)2.8853900432586669922, (f32)3.2734474483568488616e-08}));\n"
    "    s = pr_add2_s(s, (x2 * a.x.x) * t);\n"
    "    return tdl_log_fix(s.x + s.y, a.ds);\n"
    "}\n"
    "__device__ __forceinline__ f32 tdl_log10(f32 d)\n"
    "{\n"
    "    const tdl_log_arg<f32> a = tdl_log_reduce(d);\n"
    "    const f32 x2 = a.x.x * a.x.x;\n"
    "    f32 t = (f32)+0.1314289868e+0;\n"
    "    t = fmaf(t, x2, (f32)+0.1735493541e+0);\n"
    "    t = fmaf(t, x2, (f32)+0.2895309627e+0);\n"
    "    tdl_pair<f32> s = pr_mul_s(tdl_pair<f32>{(f32)0.30103001, (f32)-1.432098889e-08}, (f32)a.e);\n"
    "    s = pr_add(s, pr_mul(a.x, tdl_pair<f32>{(f32)0.868588984, (f32)-2.170757285e-08}));\n"
    "    s = pr_add_p(s, (x2 * a.x.x) * t);\n"
    "    return tdl_log_fix(s.x + s.y, a.ds);\n"
    "}\n"
    "__device__ __forceinline__ f64 tdl_log(f64 d)\n"
    "{\n"
    "    const tdl_log_arg<f64> a = tdl_log_reduce(d);\n"
    "    const f64 x2 = a.x.x * a.x.x, x4 = x2 * x2, x8 = x4 * x4;\n"
    "    const f64 t = fma(x8, fma(x4, 0.1532076988502701353e+0, fma(x2, 0.1525629051003428716e+0, 0.1818605932937785996e+0)),\n"
    "                      fma(x4, fma(x2, 0.2222214519839380009e+0, 0.2857142932794299317e+0),\n"
    "                          fma(x2, 0.3999999999635251990e+0, 0.6666666666667333541e+0)));\n"
    "    tdl_pair<f64> s = pr_mul_s(tdl_pair<f64>{0.693147180559945286226764, 2.319046813846299558417771e-17}, (f64)a.e);\n"
    "    s = pr_add(s, tdl_pair<f64>{a.x.x * 2.0, a.x.y * 2.0});\n"
    "    s = pr_add_p(s, (x2 * a.x.x) * t);\n"
    "    return tdl_log_fix(s.x + s.y, a.ds);\n"
    "}\n"
    "__device__ __forceinline__ f64 tdl_log2(f64 d)\n"
    "{\n"
    "    const tdl_log_arg<f64> a = tdl_log_reduce(d);\n"
    "    const f64 x2 = a.x.x * a.x.x, x4 = x2 * x2, x8 = x4 * x4;\n"
    "    const f64 t = fma(x8, fma(x4, +0.2211941750456081490e+0, fma(x2, +0.2200768693152277689e+0, +0.2623708057488514656e+0)),\n"
    "                      fma(x4, fma(x2, +0.3205977477944495502e+0, +0.4121985945485324709e+0),\n"
    "                          fma(x2, +0.5770780162997058982e+0, +0.96179669392608091449)));\n"
    "    tdl_pair<f64> s = pr_add2_sp((f64)a.e, pr_mul(a.x, tdl_pair<f64>{2.885390081777926774, 6.0561604995516736434e-18}));\n"
    "    s = pr_add2_s(s, (x2 * a.x.x) * t);\n"
    "    return tdl_log_fix(s.x + s.y, a.ds);\n"
    "}\n"
    "__device__ __forceinline__ f64 tdl_log10(f64 d)\n"
    "{\n"
    "    const tdl_log_arg<f64> a = tdl_log_reduce(d);\n"
    "    const f64 x2 = a.x.x * a.x.x, x4 = x2 * x2, x8 = x4 * x4;\n"
    "    const f64 t = fma(x8, fma(x4, +0.6653725819576758460e-1, fma(x2, +0.6625722782820833712e-1, +0.7898105214313944078e-1)),\n"
    "                      fma(x4, fma(x2, +0.9650955035715275132e-1, +0.1240841409721444993e+0),\n"
    "                          fma(x2, +0.1737177927454605086e+0, +0.2895296546021972617e+0)));\n"
    "    tdl_pair<f64> s = pr_mul_s(tdl_pair<f64>{0.30102999566398119802, -2.803728127785170339e-18}, (f64)a.e);\n"
    "    s = pr_add(s, pr_mul(a.x, tdl_pair<f64>{0.86858896380650363334, 1.1430059694096389311e-17}));\n"
    "    s = pr_add_p(s, (x2 * a.x.x) * t);\n"
    "    return tdl_log_fix(s.x + s.y, a.ds);\n"
    "}\n"
    "// log1p and expm1 as the CPU executor computes them (cpu_math.h: SLEEF's xlog1pf, xlog1p, xexpm1f and\n"
    "// xexpm1, FMA build), bit for bit.\n"
    "__device__ __forceinline__ f32 tdl_log1p(f32 d)\n"
    "{\n"
    "    f32 dp1 = d + 1.0f;\n"
    "    const bool tiny = dp1 < 0x1p-126f;\n"
    "    if (tiny)\n"
    "        dp1 = dp1 * 0x1p64f;\n"
    "    int32 e = (int32)((__float_as_uint(dp1 * (1.0f / 0.75f)) >> 23) & 0xff) - 0x7f;\n"
    "    const f32 t = __uint_as_float(0x3f800000u + ((uint32)-e << 23));\n"
    "    const f32 m = fmaf(d, t, t - 1.0f);\n"
    "    if (tiny)\n"
    "        e -= 64;\n"
    "    tdl_pair<f32> s = pr_mul_s(tdl_pair<f32>{0.69314718246459960938f, -1.904654323148236017e-09f}, (f32)e);\n"
    "    const tdl_pair<f32> x = pr_div(tdl_pair<f32>{m, 0.0f}, pr_add_ss(2.0f, m));\n"
    "    const f32 x2 = x.x * x.x;\n"
    "    f32 u = +0.3027294874e+0f;\n"
    "    u = fmaf(u, x2, +0.3996108174e+0f);\n"
    "    u = fmaf(u, x2, +0.6666694880e+0f);\n"
    "    s = pr_add(s, tdl_pair<f32>{x.x * 2.0f, x.y * 2.0f});\n"
    "    s = pr_add_p(s, (x2 * x.x) * u);\n"
    "    f32 r = s.x + s.y;\n"
    "    if (d > 1e+38f)\n"
    "        r = __uint_as_float(0x7f800000u);\n"
    "    if (-1.0f > d)\n"
    "        r = __uint_as_float(0xffffffffu);\n"
    "    if (d == -1.0f)\n"
    "        r = __uint_as_float(0xff800000u);\n"
    "    return __float_as_uint(d) == 0x80000000u ? d : r;\n"
    "}\n"
    "__device__ __forceinline__ f64 tdl_log1p(f64 d)\n"
    "{\n"
    "    f64 dp1 = d + 1.0;\n"
    "    const bool tiny = dp1 < 0x1p-1022;\n"
    "    if (tiny)\n"
    "        dp1 = dp1 * 0x1p64;\n"
    "    int32 e = (int32)((__double_as_longlong(dp1 * (1.0 / 0.75)) >> 52) & 0x7ff) - 0x3ff;\n"
    "    const f64 t = __longlong_as_double((int64)(0x3ff0000000000000ULL + ((uint64)((uint32)-e << 20) << 32)));\n"
    "    const f64 m = fma(d, t, t - 1.0);\n"
    "    if (tiny)\n"
    "        e -= 64;\n"
    "    tdl_pair<f64> s = pr_mul_s(tdl_pair<f64>{0.693147180559945286226764, 2.319046813846299558417771e-17}, (f64)e);\n"
    "    const tdl_pair<f64> x = pr_div(tdl_pair<f64>{m, 0.0}, pr_add_ss(2.0, m));\n"
    "    const f64 x2 = x.x * x.x, x4 = x2 * x2, x8 = x4 * x4;\n"
    "    const f64 u = fma(x8, fma(x4, 0.1532076988502701353e+0, fma(x2, 0.1525629051003428716e+0, 0.1818605932937785996e+0)),\n"
    "                      fma(x4, fma(x2, 0.2222214519839380009e+0, 0.2857142932794299317e+0),\n"
    "                          fma(x2, 0.3999999999635251990e+0, 0.6666666666667333541e+0)));\n"
    "    s = pr_add(s, tdl_pair<f64>{x.x * 2.0, x.y * 2.0});\n"
    "    s = pr_add_p(s, (x2 * x.x) * u);\n"
    "    f64 r = s.x + s.y;\n"
    "    if (d > 1e+307)\n"
    "        r = __longlong_as_double(0x7ff0000000000000LL);\n"
    "    if (d < -1.0 || d != d)\n"
    "        r = __longlong_as_double(0x7ff8000000000000LL);\n"
    "    if (d == -1.0)\n"
    "        r = __longlong_as_double((int64)0xfff0000000000000ULL);\n"
    "    return __double_as_longlong(d) == I64_MIN ? d : r;\n"
    "}\n"
    "__device__ __forceinline__ f32 tdl_expm1(f32 a)\n"
    "{\n"
    "    const tdl_pair<f32> d = pr_add2_s(tdl_expk2(a), -1.0f);\n"
    "    f32 x = d.x + d.y;\n"
    "    if (a > 88.72283172607421875f)\n"
    "        x = __uint_as_float(0x7f800000u);\n"
    "    if (a < -16.635532333438687426013570f)\n"
    "        x = -1.0f;\n"
    "    return __float_as_uint(a) == 0x80000000u ? a : x;\n"
    "}\n"
    "__device__ __forceinline__ f64 tdl_expm1(f64 a)\n"
    "{\n"
    "    const tdl_pair<f64> d = pr_add2_s(tdl_expk2(a), -1.0);\n"
    "    f64 x = d.x + d.y;\n"
    "    if (a > 709.782712893383996732223)\n"
    "        x = __longlong_as_double(0x7ff0000000000000LL);\n"
    "    if (a < -36.736800569677101399113302437)\n"
    "        x = -1.0;\n"
    "    return __double_as_longlong(a) == I64_MIN ? a : x;\n"
    "}\n"
    "// PyTorch's div_floor_floating and float remainder, in the float's own precision.\n"
    "template <class T> __device__ T floordiv_f(T a, T b)\n"
    "{\n"
    "    if (b == 0)\n"
    "        return a / b;\n"
    "    T mod = m_fmod(a, b);\n"
    "    T div = (a - mod) / b;\n"
    "    if (mod != 0 && (b < 0) != (mod < 0))\n"
    "        div -= (T)1;\n"
    "    T fl;\n"
    "    if (div != 0) {\n"
    "        fl = m_floor(div);\n"
    "        if (div - fl > (T)0.5)\n"
    "            fl += (T)1;\n"
    "    } else {\n"
    "        fl = m_copysign((T)0, a / b);\n"
    "    }\n"
    "    return fl;\n"
    "}\n"
    "template <class T> __device__ T mod_f(T a, T b)\n"
    "{\n"
    "    T m = m_fmod(a, b);\n"
    "    if (m != 0 && (b < 0) != (m < 0))\n"
    "        m += b;\n"
    "    return m;\n"
    "}\n"
    "template <class T> __device__ __forceinline__ T nan_min(T x, T y) { return y != y ? y : x != x ? x : x < y ? x : y; }\n"
    "template <class T> __device__ __forceinline__ T nan_max(T x, T y) { return y != y ? y : x != x ? x : x > y ? x : y; }\n"
    "// logaddexp as the CPU executor (PyTorch's vector kernel)\n"
    "__device__ __forceinline__ f32 default_nan(f32) { return __uint_as_float(0x7FC00000u); }\n"
    "__device__ __forceinline__ f64 default_nan(f64) { return __longlong_as_double(0x7FF8000000000000LL); }\n"
    "template <class T> __device__ T tdl_logaddexp(T a, T b)\n"
    "{\n"
    "    if (a != a || b != b)\n"
    "        return default_nan(a);\n"
    "    if (a == b && a - a != (T)0)\n"
    "        return a;\n"
    "    T m = a > b ? a : b, d = a > b ? a - b : b - a;\n"
    "    return m + tdl_log((T)1 + tdl_exp(-d));\n"
    "}\n"
    "// fmax and fmin as the CPU executor (PyTorch's std::fmax): NaNs quietened\n"
    "__device__ __forceinline__ bool signaling(f32 v) { return v != v && !(__float_as_uint(v) & 0x00400000u); }\n"
    "__device__ __forceinline__ bool signaling(f64 v)\n"
    "{\n"
    "    return v != v && !((unsigned long long)__double_as_longlong(v) & 0x0008000000000000ull);\n"
    "}\n"
    "__device__ __forceinline__ f32 quieted(f32 v) { return __uint_as_float(__float_as_uint(v) | 0x00400000u); }\n"
    "__device__ __forceinline__ f64 quieted(f64 v)\n"
    "{\n"
    "    return __longlong_as_double((long long)((unsigned long long)__double_as_longlong(v) | 0x0008000000000000ull));\n"
    "}\n"
    "template <class T> __device__ T fnan(T a, T b)\n"
    "{\n"
    "    if (b != b && (a != a || signaling(b)))\n"
    "        return quieted(b);\n"
    "    if (signaling(a))\n"
    "        return quieted(a);\n"
    "    return a != a ? b : a;\n"
    "}\n"
    "template <class T> __device__ T fmax_f(T a, T b) { return a != a || b != b ? fnan(a, b) : a >= b ? a : b; }\n"
    "template <class T> __device__ T fmin_f(T a, T b) { return a != a || b != b ? fnan(a, b) : a <= b ? a : b; }\n"
    "template <class T> __device__ T fmax16_f(T a, T b) { return a != a || b != b ? fnan(b, a) : a > b ? a : b; }\n"
    "template <class T> __device__ T fmin16_f(T a, T b) { return a != a || b != b ? fnan(b, a) : a < b ? a : b; }\n"
    "// Integer power, floor division and remainders (Python's signs; MIN / -1 wraps).\n"
    "template <class T, class U> __device__ T powi(T a, T b)\n"
    "{\n"
    "    if (b < 0)\n"
    "        return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
    "    U r = 1, base = (U)a, e = (U)b;\n"
    "    while (e) {\n"
    "        if (e & 1)\n"
    "            r *= base;\n"
    "        e >>= 1;\n"
    "        base *= base;\n"
    "    }\n"
    "    return (T)r;\n"
    "}\n"
    "template <class T, class U> __device__ T gcd_i(T a, T b)\n"
    "{\n"
    "    T x = a < 0 ? (T)((U)0 - (U)a) : a, y = b < 0 ? (T)((U)0 - (U)b) : b;\n"
    "    while (x != 0) {\n"
    "        T c = x;\n"
    "        x = y % x;\n"
    "        y = c;\n"
    "    }\n"
    "    return y;\n"
    "}\n"
    "template <class T, class U> __device__ T lcm_i(T a, T b)\n"
    "{\n"
    "    T g = gcd_i<T, U>(a, b);\n"
    "    if (g == 0)\n"
    "        return 0;\n"
    "    T q = g == -1 ? (T)((U)0 - (U)a) : a / g;\n"
    "    T p = (T)((U)q * (U)b);\n"
    "    return p < 0 ? (T)((U)0 - (U)p) : p;\n"
    "}\n"
    "template <class T, class U> __device__ T floordiv_i(T x, T y, Err *e)\n"
    "{\n"
    "    if (y == 0) {\n"
    "        fail(e, 2, 0, 0, 0);\n"
    "        return 0;\n"
    "    }\n"
    "    if (y == -1)\n"
    "        return (T)((U)0 - (U)x);\n"
    "    T q = x / y, r = x % y;\n"
    "    return (r != 0 && (r < 0) != (y < 0)) ? q - 1 : q;\n"
    "}\n"
    "template <class T, class U> __device__ T mod_i(T x, T y, Err *e)\n"
    "{\n"
    "    if (y == 0) {\n"
    "        fail(e, 2, 0, 0, 0);\n"
    "        return 0;\n"
    "    }\n"
    "    T r = y == -1 ? 0 : x % y;\n"
    "    return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;\n"
    "}\n"
    "template <class T, class U> __device__ T fmod_i(T x, T y, Err *e)\n"
    "{\n"
    "    if (y == 0) {\n"
    "        fail(e, 2, 0, 0, 0);\n"
    "        return 0;\n"
    "    }\n"
    "    return y == -1 ? 0 : x % y;\n"
    "}\n"
    "// Folds into accumulators (f64 for floats, int64 for ints and bools); NaN propagates.\n"
    "__device__ __forceinline__ f64 c_sum(f64 a, f64 x) { return a + x; }\n"
    "__device__ __forceinline__ int64 c_sum(int64 a, int64 x) { return (int64)((uint64)a + (uint64)x); }\n"
    "__device__ __forceinline__ f64 c_prod(f64 a, f64 x) { return a * x; }\n"
    "__device__ __forceinline__ int64 c_prod(int64 a, int64 x) { return (int64)((uint64)a * (uint64)x); }\n"
    "__device__ __forceinline__ f64 c_amax(f64 a, f64 x) { return (x > a || x != x) ? x : a; }\n"
    "__device__ __forceinline__ int64 c_amax(int64 a, int64 x) { return x > a ? x : a; }\n"
    "__device__ __forceinline__ f64 c_amin(f64 a, f64 x) { return (x < a || x != x) ? x : a; }\n"
    "__device__ __forceinline__ int64 c_amin(int64 a, int64 x) { return x < a ? x : a; }\n"
    "__device__ __forceinline__ int64 c_any(int64 a, int64 x) { return a | (int64)(x != 0); }\n"
    "__device__ __forceinline__ int64 c_all(int64 a, int64 x) { return a & (int64)(x != 0); }\n"
    "// Arg reductions: whether v replaces the extreme c (strictly: the first one stays; NaN is the\n"
    "// largest for argmax, the smallest for argmin).\n"
    "__device__ __forceinline__ bool b_argmax(f64 v, f64 c) { return v != v ? c == c : v > c; }\n"
    "__device__ __forceinline__ bool b_argmax(int64 v, int64 c) { return v > c; }\n"
    "__device__ __forceinline__ bool b_argmin(f64 v, f64 c) { return v != v ? c == c : v < c; }\n"
    "__device__ __forceinline__ bool b_argmin(int64 v, int64 c) { return v < c; }\n"
    "template <bool MAX, class A> __device__ __forceinline__ void arg_comb(A &v, int64 &i, A ov, int64 oi)\n"
    "{\n"
    "    if (oi < 0)\n"
    "        return;\n"
    "    const bool ob = MAX ? b_argmax(ov, v) : b_argmin(ov, v), tb = MAX ? b_argmax(v, ov) : b_argmin(v, ov);\n"
    "    if (i < 0 || ob || (!tb && oi < i)) {\n"
    "        v = ov;\n"
    "        i = oi;\n"
    "    }\n"
    "}\n"
    "// How many indices of a loop of extent ext satisfy index < x (or index <= x when le).\n"
    "__device__ inline int64 bcount(bool le, int64 x, int64 ext)\n"
    "{\n"
    "    if (x >= ext)\n"
    "        return ext;\n"
    "    const f64 c = (f64)(le ? x + 1 : x);\n"
    "    return c <= 0 ? 0 : c >= (f64)ext ? ext : (int64)c;\n"
    "}\n"
    "__device__ inline int64 bcount(bool le, f64 x, int64 ext)\n"
    "{\n"
    "    if (x != x)\n"
    "        return 0;\n"
    "    const f64 c = le ? floor(x) + 1 : ceil(x);\n"
    "    return c <= 0 ? 0 : c >= (f64)ext ? ext : (int64)c;\n"
    "}\n"
    "// n / d for 0 <= n, d < 2^31 by a multiply: m and s from the host (fastdiv_magic).\n"
    "__device__ __forceinline__ int32 fastdiv(int32 n, uint32 m, uint32 s)\n"
    "{\n"
    "    return (int32)((__umulhi((uint32)n, m) + (uint32)n) >> s);\n"
    "}\n"
    "// V consecutive elements: one 4-, 8- or 16-byte access when aligned, else element by element.\n"
    "template <class T, int N> struct alignas(sizeof(T) * N) Pack { T x[N]; };\n"
    "template <int V, class T> __device__ __forceinline__ void ldv(T (&d)[V], const T *p)\n"
    "{\n"
    "    if (V > 1 && ((uint64)p & (sizeof(T) * V - 1)) == 0) {\n"
    "        const Pack<T, V> w = *(const Pack<T, V> *)p;\n"
    "        LANES d[u] = w.x[u];\n"
    "    } else {\n"
    "        LANES d[u] = p[u];\n"
    "    }\n"
    "}\n"
    "template <int V, class T> __device__ __forceinline__ void stv(T *p, const T (&s)[V])\n"
    "{\n"
    "    if (V > 1 && ((uint64)p & (sizeof(T) * V - 1)) == 0) {\n"
    "        Pack<T, V> w;\n"
    "        LANES w.x[u] = s[u];\n"
    "        *(Pack<T, V> *)p = w;\n"
    "    } else {\n"
    "        LANES p[u] = s[u];\n"
    "    }\n"
    "}\n"
    "// Block reductions (every thread of the block calls them; all get the result). The order\n"
    "// is fixed by the block size alone: a shuffle tree in each warp, then the warps in order\n"
    "// (a loop of one thread, a few steps, each waiting on the last: not unrolled, which NVRTC\n"
    "// would spend time on for nothing).\n"
    "template <class A, A (*F)(A, A)> __device__ A block_reduce(A x)\n"
    "{\n"
    "    __shared__ A sh[32];\n"
    "    for (int d = 16; d > 0; d >>= 1)\n"
    "        x = F(x, __shfl_down_sync(0xffffffffu, x, d));\n"
    "    __syncthreads();\n"
    "    if ((threadIdx.x & 31) == 0)\n"
    "        sh[threadIdx.x >> 5] = x;\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0) {\n"
    "        _Pragma(\"unroll 1\") for (unsigned w = 1; w < (blockDim.x + 31) >> 5; w++)\n"
    "            x = F(x, sh[w]);\n"
    "        sh[0] = x;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    return sh[0];\n"
    "}\n"
    "template <bool MAX, class A> __device__ void block_argreduce(A &v, int64 &i)\n"
    "{\n"
    "    __shared__ A shv[32];\n"
    "    __shared__ int64 shi[32];\n"
    "    for (int d = 16; d > 0; d >>= 1) {\n"
    "        const A ov = __shfl_down_sync(0xffffffffu, v, d);\n"
    "        const int64 oi = __shfl_down_sync(0xffffffffu, i, d);\n"
    "        arg_comb<MAX>(v, i, ov, oi);\n"
    "    }\n"
    "    __syncthreads();\n"
    "    if ((threadIdx.x & 31) == 0) {\n"
    "        shv[threadIdx.x >> 5] = v;\n"
    "        shi[threadIdx.x >> 5] = i;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0) {\n"
    "        _Pragma(\"unroll 1\") for (unsigned w = 1; w < (blockDim.x + 31) >> 5; w++)\n"
    "            arg_comb<MAX>(v, i, shv[w], shi[w]);\n"
    "        shv[0] = v;\n"
    "        shi[0] = i;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    v = shv[0];\n"
    "    i = shi[0];\n"
    "}\n"
    "// An exclusive scan over the block of one uint32 per thread, in sh[blockDim.x]: each thread\n"
    "// gets the sum of the threads before it; sh[blockDim.x - 1] holds the block's sum until the\n"
    "// next call. Integers: exact in any order.\n"
    "__device__ uint32 block_exscan(uint32 *sh, uint32 x)\n"
    "{\n"
    "    __syncthreads();\n"
    "    sh[threadIdx.x] = x;\n"
    "    __syncthreads();\n"
    "    _Pragma(\"unroll 1\") for (unsigned d = 1; d < blockDim.x; d <<= 1) {\n"
    "        const uint32 y = threadIdx.x >= d ? sh[threadIdx.x - d] : 0;\n"
    "        __syncthreads();\n"
    "        sh[threadIdx.x] += y;\n"
    "        __syncthreads();\n"
    "    }\n"
    "    return sh[threadIdx.x] - x;\n"
    "}\n";

/* The prelude's parts after the types: where each starts (a line of the prelude) and the names
 * it defines. A kernel gets the types, struct Err and the parts whose names it (or a part it
 * gets) uses: NVRTC then parses less. */
static const struct {
    const char *start;
    const char *names;     /* space-separated; each followed by a space */
} prelude_parts[] = {
    {"__device__ __noinline__ void fail(", "fail "},
    {"// A gathered or scattered index", "gix "},
    {"// Float to int as x86's cvtt", "f64_to_int64 f64_to_int32 "},
    {"// float16 and bfloat16", "h2f f2h bh2f f2bh "},
    {"__device__ __forceinline__ f32 m_fmod(", "m_fmod m_floor m_copysign "},
    {"// exp as the CPU executor", "tdl_exp "},
    {"// Pair arithmetic (hi + lo)",
     "m_fma tdl_pair pr_add_ss pr_add2_ss pr_add2_s pr_add2_sp pr_add2 pr_add pr_add_p pr_add_s pr_mul_s pr_mul pr_squ pr_rec pr_div "},
    {"// tanh as the CPU executor", "tdl_expk2 tdl_tanh "},
    {"// log, log2 and log10 as the CPU executor", "tdl_log_arg tdl_log_reduce tdl_log_fix tdl_log tdl_log2 tdl_log10 "},
    {"// log1p and expm1 as the CPU executor", "tdl_log1p tdl_expm1 "},
    {"// PyTorch's div_floor_floating", "floordiv_f mod_f "},
    {"template <class T> __device__ __forceinline__ T nan_min(", "nan_min nan_max "},
    {"// logaddexp as the CPU executor", "default_nan tdl_logaddexp "},
    {"// fmax and fmin as the CPU executor", "signaling quieted fnan fmax_f fmin_f fmax16_f fmin16_f "},
    {"// Integer power, floor division", "powi gcd_i lcm_i floordiv_i mod_i fmod_i "},
    {"// Folds into accumulators", "c_sum c_prod c_amax c_amin c_any c_all "},
    {"// Arg reductions:", "b_argmax b_argmin arg_comb "},
    {"// How many indices of a loop", "bcount "},
    {"// n / d for 0 <= n, d < 2^31", "fastdiv "},
    {"// V consecutive elements", "Pack ldv stv "},
    {"// Block reductions", "block_reduce "},
    {"template <bool MAX, class A> __device__ void block_argreduce(", "block_argreduce "},
    {"// An exclusive scan over the block", "block_exscan "},
};
enum { NPARTS = sizeof prelude_parts / sizeof prelude_parts[0] };

/* Marks in used[] the parts that define an identifier of text[0, n). */
static void parts_used(const char *text, size_t n, bool *used)
{
    for (size_t i = 0; i < n;) {
        char c = text[i];
        bool id0 = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!id0) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && (text[j] == '_' || (text[j] >= 'a' && text[j] <= 'z') || (text[j] >= 'A' && text[j] <= 'Z') ||
                         (text[j] >= '0' && text[j] <= '9')))
            j++;
        size_t len = j - i;
        for (int p = 0; p < NPARTS && len >= 3 && len <= 15; p++)     /* the names' lengths */
            for (const char *nm = prelude_parts[p].names; *nm;) {
                const char *sp = strchr(nm, ' ');
                if ((size_t)(sp - nm) == len && memcmp(nm, text + i, len) == 0)
                    used[p] = true;
                nm = sp + 1;
            }
        i = j;
    }
}

/* Writes the prelude that kernel text uses into b: the types, struct Err, and the parts it
 * needs, each with the parts it uses in turn (they only use earlier ones). All of it when a
 * part's start is not found (the prelude changed and the table did not). */
static void put_prelude(Buf *b, const char *text)
{
    const char *at[NPARTS + 1];
    for (int p = 0; p < NPARTS; p++) {
        at[p] = strstr(prelude, prelude_parts[p].start);
        if (!at[p] || (p > 0 && at[p] <= at[p - 1])) {
            bput(b, "%s\n", prelude);
            return;
        }
    }
    at[NPARTS] = prelude + strlen(prelude);
    bool used[NPARTS] = {false};
    parts_used(text, strlen(text), used);
    for (int p = NPARTS - 1; p >= 0; p--)
        if (used[p])
            parts_used(at[p], (size_t)(at[p + 1] - at[p]), used);
    bput(b, "%.*s", (int)(at[0] - prelude), prelude);
    for (int p = 0; p < NPARTS; p++)
        if (used[p])
            bput(b, "%.*s", (int)(at[p + 1] - at[p]), at[p]);
    bput(b, "\n");
}

/* ---- dtypes ---- */

static const char *ctype(FcDType t)
{
    switch (t) {
    case FC_BOOL: return "b8";
    case FC_INT32: return "int32";
    case FC_INT64: return "int64";
    case FC_FLOAT32: return "f32";
    case FC_UINT8: return "u8";
    case FC_INT8: return "i8";
    case FC_INT16: return "i16";
    case FC_FLOAT16: return "h16";
    case FC_BFLOAT16: return "bh16";
    default: return "f64";
    }
}

static const char *utype(FcDType t) { return t == FC_INT32 ? "uint32" : "uint64"; }
static bool is_float(FcDType t) { return t == FC_FLOAT32 || t == FC_FLOAT64; }

/* The template of op over operand dtype t (the cuda column of ops.def, whose cpu column is the
 * CPU's), or NULL when the CPU executor does not take that combination either. */
static const char *op_template(FcOp op, FcDType t)
{
    if (fc_op_is_compare(op)) {
        switch (op) {
#define COMPARE(NAME, cpu, cuda) case FC_OP_##NAME: return cuda;
#include "ops.def"
        default: return NULL;
        }
    }
    if (is_float(t)) {
        switch (op) {
#define FLOAT(NAME, form, cpu, cuda) case FC_OP_##NAME: return cuda;
#include "ops.def"
        default: return NULL;
        }
    }
    if (t == FC_INT32 || t == FC_INT64) {
        switch (op) {
#define INT(NAME, form, cpu, cuda) case FC_OP_##NAME: return cuda;
#include "ops.def"
        default: return NULL;
        }
    }
    switch (op) {   /* bool */
#define BOOL(NAME, form, cpu, cuda) case FC_OP_##NAME: return cuda;
#include "ops.def"
    default: return NULL;
    }
}

/* The conversion of x from dtype s to dtype d (the CPU's CASTS and reductions' fin): the narrow
 * dtypes as cpu_ops.c's casts to and from them (float16 and bfloat16 through float32, floats to
 * the narrow integers through int32). */
static void cast_expr(Buf *b, FcDType d, FcDType s, const char *x)
{
    bool narrow_d = fc_dtype_compute(d) != d, narrow_s = fc_dtype_compute(s) != s;
    if (d != s && (narrow_d || narrow_s)) {
        char v[64];
        if (s == FC_FLOAT16 || s == FC_BFLOAT16)
            snprintf(v, sizeof v, "%s(%s)", s == FC_FLOAT16 ? "h2f" : "bh2f", x);
        else
            snprintf(v, sizeof v, "%s", x);
        bool from_float = is_float(s) || s == FC_FLOAT16 || s == FC_BFLOAT16;
        if (d == FC_FLOAT16 || d == FC_BFLOAT16)
            bput(b, "%s((f32)%s)", d == FC_FLOAT16 ? "f2h" : "f2bh", v);
        else if (d == FC_BOOL)
            bput(b, "(b8)(%s != 0)", v);
        else if (d == FC_INT64)
            bput(b, from_float ? "f64_to_int64((f64)%s)" : "(int64)%s", v);
        else if (fc_dtype_is_int(d) && from_float)
            bput(b, "(%s)(uint32)f64_to_int32((f64)%s)", ctype(d), v);
        else if (fc_dtype_is_int(d))
            bput(b, "(%s)(uint64)(int64)%s", ctype(d), v);
        else
            bput(b, "(%s)%s", ctype(d), v);
        return;
    }
    if (d == s)
        bput(b, "%s", x);
    else if (d == FC_BOOL)
        bput(b, "(b8)(%s != 0)", x);
    else if (d == FC_INT32 && s == FC_INT64)
        bput(b, "(int32)(uint32)(uint64)%s", x);
    else if ((d == FC_INT32 || d == FC_INT64) && is_float(s))
        bput(b, "f64_to_%s((f64)%s)", ctype(d), x);
    else
        bput(b, "(%s)%s", ctype(d), x);
}

/* ---- reductions ---- */

typedef struct Reducer {
    const char *comb;           /* c_sum, ..., or NULL for arg reductions */
    bool fkind;                 /* f64 accumulator (else int64) */
    const char *init;
} Reducer;

/* cpu_reduce.c's fc_cpu_reducer_init: false when it does not take the combination. */
static bool reducer(FcOp op, FcDType in, FcDType out, Reducer *r)
{
    bool fin = is_float(in), fout = is_float(out);
    switch (op) {
    case FC_OP_SUM:
        *r = (Reducer){"c_sum", fin || fout, fin || fout ? "0.0" : "0"};
        return true;
    case FC_OP_PROD:
        *r = (Reducer){"c_prod", fin || fout, fin || fout ? "1.0" : "1"};
        return true;
    case FC_OP_AMAX:
        *r = (Reducer){"c_amax", fin, fin ? "-__longlong_as_double(0x7ff0000000000000LL)" : "I64_MIN"};
        return true;
    case FC_OP_AMIN:
        *r = (Reducer){"c_amin", fin, fin ? "__longlong_as_double(0x7ff0000000000000LL)" : "I64_MAX"};
        return true;
    case FC_OP_ANY:
        *r = (Reducer){"c_any", false, "0"};
        return !fin;
    case FC_OP_ALL:
        *r = (Reducer){"c_all", false, "1"};
        return !fin;
    case FC_OP_ARGMAX:
    case FC_OP_ARGMIN:
        *r = (Reducer){NULL, fin, "0"};
        return true;
    default:
        return false;
    }
}

/* A thread takes up to 4 points along the vector loop (tdl_v), and a fold of floats along a loop
 * of its own keeps eight lanes as the CPU's does; the vector loop is the scheduler's, or the
 * innermost kept one, so the thresholds are the CPU's (the scheduler plans for either). */
/* Precomputed tables (tdl_pre) live in device memory for one launch: up to a million points
 * each, 64 MiB in all. */
const FcTarget fc_cuda_target = {"cuda", 4, 8, FC_SHORT_CHUNK_LOOP, FC_LONG_CHUNK_LOOP, 1 << 20, 64 << 20};

FcStatus fc_cuda_supports(const FcInstr *in, FcDType a_dtype, FcError *err)
{
    Reducer rd;
    if (fc_op_is_reduce(in->op)) {
        if (!reducer(in->op, in->src_dtype, in->dtype, &rd))
            return snprintf(err->msg, sizeof err->msg, "cuda kernel: %s of %s into %s is not supported",
                            fc_op_name(in->op), fc_dtype_name(in->src_dtype), fc_dtype_name(in->dtype)), FC_ERR_TYPE;
        return FC_OK;
    }
    switch (in->op) {
    case FC_OP_LOAD: case FC_OP_CONST: case FC_OP_IOTA: case FC_OP_CAST: case FC_OP_WHERE:
        return FC_OK;
    case FC_OP_WHERE_CMP:
        /* At the compared dtypes the CPU's select functions take, so that a kernel fuses the
         * same on both backends (and the host emulation checks the CPU's kernels). */
        if (fc_op_is_compare(in->cmp) && (in->src_dtype == FC_INT32 || in->src_dtype == FC_INT64 ||
                                          in->src_dtype == FC_FLOAT32 || in->src_dtype == FC_FLOAT64))
            return FC_OK;
        return snprintf(err->msg, sizeof err->msg, "cuda kernel: where_cmp is not supported for %s",
                        fc_dtype_name(in->src_dtype)), FC_ERR_TYPE;
    default:
        break;
    }
    bool by_src = in->op == FC_OP_ISNAN || fc_op_is_compare(in->op);
    FcDType t = by_src ? a_dtype : in->dtype;
    if (by_src && in->dtype != FC_BOOL)
        return snprintf(err->msg, sizeof err->msg, "cuda kernel: %s gives bool, not %s", fc_op_name(in->op),
                        fc_dtype_name(in->dtype)), FC_ERR_TYPE;
    if (!op_template(in->op, t))
        return snprintf(err->msg, sizeof err->msg, "cuda kernel: %s is not supported for %s", fc_op_name(in->op),
                        fc_dtype_name(t)), FC_ERR_TYPE;
    return FC_OK;
}

/* ---- the generator ---- */

/* A level of a loop nest as the generated code opens it. */
typedef enum LvKind {
    LV_GRID,            /* grid-stride over the points of `mask`'s loops (decoded, vl first) */
    LV_SERIAL,          /* the same on the one thread, the last loop fastest */
    LV_BLOCKS,          /* block-stride over the points of `mask`'s loops */
    LV_THREADS_VEC,     /* the block's threads along the vector loop, V indices each */
    LV_THREADS_FLAT,    /* the block's threads over the points of `mask`'s loops (a split's share
                           when it is the first reduced level) */
    LV_SEQ,             /* one loop, in order */
    LV_SEQ_SPLIT,       /* one loop, in order, over a split's share of it */
    LV_LANES8,          /* one loop, in order, by eight (lane l = index % 8, unrolled) */
    LV_THREADS_SEQ,     /* one loop, strided over the block's threads */
    LV_SORTED,          /* grid-stride over (destination key, point of `mask`'s loops, the owner
                           loops), the owner point fastest; keys with no record skipped */
    LV_RUN,             /* the key's records in loop order, each decoded into `mask`'s loops */
    LV_TILE,            /* TILE: block-stride over tiles, the block's threads over the tile's
                           points along the reads' loop (the writes after, close_level) */
} LvKind;

typedef struct Level {
    LvKind kind;
    uint64_t mask;      /* the loops it binds */
    int loop;           /* SEQ, LANES8, THREADS_SEQ: the loop */
} Level;

typedef struct Nest {
    int lst;            /* the list whose instructions it places: -1 the top, else a reduction */
    int nlv;
    Level lv[FC_MAX_DIMS + 2];
} Nest;

/* A short piece of source returned by value ("v12[u]", "a.e3"): valid for the full expression. */
typedef struct Name { char s[24]; } Name;

typedef struct Gen {
    const FcKernel *k;
    FcError *err;
    FcStatus st;
    Buf b;                      /* the kernel's own source (after the prelude and struct Args) */
    int ind;
    int n, L;
    const FcPlan *kp;           /* the kernel's plan: k->plan, or own */
    FcPlan *own_plan;           /* made here for a kernel that came without one */
    /* the plan's (operands as instructions, the loops each varies along, their lists) */
    const int *opv, *gopv, *goff, *bopv, *boff;
    const uint64_t *deps, *own;
    const int *list;
    bool *wide;                 /* an array of V values (varies along the vector loop) */
    bool *coop;                 /* an inner reduction the block computes together */
    bool *lanes;                /* an inner reduction that folds into eight lanes as the CPU does */
    bool *done;                 /* emitted */
    /* Precomputation (fcdim's fc_kplan_pre): pre, a value tdl_pre may compute over its own
     * domain; tab, one the kernel reads from its table (at field p<i> of a.pre) where it would
     * have computed it at every point of the loops it does not vary along; inl, a precomputed
     * value the kernel computes all the same (a load or an iota, cheaper than a read of a table,
     * and what it needs). A precomputed value that is neither is not in the kernel. */
    bool *pre, *tab, *inl;
    size_t *poff;               /* tab: its table's byte offset in a.pre */
    int ntab;
    bool in_pre;                /* emitting tdl_pre: every value computed, none from a table */
    int res;                    /* the result's instruction */
    int sres[FC_MAX_DIMS];      /* the scatter indices' instructions */
    CudaMode mode;
    int vl;
    bool vec;
    int V;
    uint64_t roots, K, RR;      /* root loops (extent > 1), kept ones, reduced ones */
    uint64_t O;                 /* OWNER, SORTED: the owner loops the grid takes */
    /* SORTED: the record loops (the kept loops but the owner ones), the destination's terms that
     * do not move with the owner loops (a loop's index or a scatter index, mixed radix in this
     * order: the key), and a gate: a record whose value is where(cond, v, 0) [* w] with cond
     * false (and w finite) adds a zero, and is left out (the CPU's plan_gate skips the same). */
    uint64_t R;
    int nterm;
    FcStoreTerm term[FC_STORE_TERMS_MAX];
    int64_t nkeys, nrec, nown;
    int gate_c, gate_w;
    int tile_w, tile_r;         /* TILE: the loop the output is contiguous along, and the reads' */
    int flat_first;             /* BLOCK_REDUCE: the loop the threads' points move along fastest
                                   (the one most loads read by unit steps), or -1: the last */
    uint64_t T, D;              /* BLOCK_REDUCE: the reduced loops the threads split, and those
                                   walked in order by the whole block (what a reduction inside
                                   varies along, so it is computed once per point of them) */
    bool idx32;
    Reducer rr;                 /* the root reduction's */
    CudaArg *args;
    Name *refs;                 /* [capargs] "a.name" of each field */
    int nargs, capargs;
    CudaCode *code;
} Gen;

static int gfail(Gen *g, FcStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int gfail(Gen *g, FcStatus st, const char *fmt, ...)
{
    if (g->st == FC_OK) {
        g->st = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->err->msg, sizeof g->err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A line of source at the current indentation. */
static void line(Gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(Gen *g, const char *fmt, ...)
{
    bput(&g->b, "%*s", 4 * g->ind, "");
    va_list ap;
    va_start(ap, fmt);
    bvput(&g->b, fmt, ap);
    va_end(ap);
    bput(&g->b, "\n");
}

/* ---- arguments ----
 * The fields of struct Args. Their storage is allocated once, for the most fields the kernel can
 * need (analyse), so the "a.name" strings the functions below return stay valid. */

/* Registers the field `name` (once: a second use returns the first) and returns "a.name".
 * Numbers are stored as the field's C type: ix_t (4 or 8 bytes), b8, int32, int64, f32 or f64. */
static const char *arg_field(Gen *g, CudaArgKind kind, const char *ct, int size, const void *val,
                             const char *shown, const char *name)
{
    for (int i = 0; i < g->nargs; i++)
        if (strcmp(g->args[i].name, name) == 0)
            return g->refs[i].s;
    if (g->nargs == g->capargs) {
        gfail(g, FC_ERR_VALUE, "cuda kernel: more fields than planned");
        return "a.out";
    }
    int i = g->nargs++;
    CudaArg *a = &g->args[i];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    a->konst = -1;
    snprintf(a->name, sizeof a->name, "%s", name);
    snprintf(a->ctype, sizeof a->ctype, "%s", ct);
    a->size = size;
    if (val)
        memcpy(a->bytes, val, (size_t)size);
    snprintf(a->shown, sizeof a->shown, "%s", shown ? shown : "");
    snprintf(g->refs[i].s, sizeof g->refs[i].s, "a.%s", name);
    return g->refs[i].s;
}

/* The field named by printf format fmt. */
static const char *arg_named(Gen *g, CudaArgKind kind, const char *ct, int size, const void *val, const char *shown,
                             const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static const char *arg_named(Gen *g, CudaArgKind kind, const char *ct, int size, const void *val, const char *shown,
                             const char *fmt, ...)
{
    char name[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return arg_field(g, kind, ct, size, val, shown, name);
}

/* An index-typed field (extent, stride, offset). */
static const char *arg_ix(Gen *g, int64_t v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static const char *arg_ix(Gen *g, int64_t v, const char *fmt, ...)
{
    char name[16], shown[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    snprintf(shown, sizeof shown, "%lld", (long long)v);
    if (g->idx32) {
        int32_t w = (int32_t)v;
        return arg_field(g, CARG_VAL, "ix_t", 4, &w, shown, name);
    }
    return arg_field(g, CARG_VAL, "ix_t", 8, &v, shown, name);
}

static const char *arg_i64(Gen *g, int64_t v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static const char *arg_i64(Gen *g, int64_t v, const char *fmt, ...)
{
    char name[16], shown[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    snprintf(shown, sizeof shown, "%lld", (long long)v);
    return arg_field(g, CARG_VAL, "int64", 8, &v, shown, name);
}

/* A scalar of dtype dt (konst.f for floats, konst.i otherwise) as the field holds it, converted as
 * fc_cpu_fill does, into out; its size, C type and (shown, when not NULL) its text. */
static int scalar_bytes(FcDType dt, FcScalar v, unsigned char out[8], const char **ct, char shown[32])
{
    switch (dt) {
    case FC_BOOL: {
        uint8_t x = v.i != 0;
        if (shown)
            snprintf(shown, 32, "%d", x);
        memcpy(out, &x, 1);
        *ct = "b8";
        return 1;
    }
    case FC_INT32: {
        int32_t x = (int32_t)(uint32_t)(uint64_t)v.i;
        if (shown)
            snprintf(shown, 32, "%d", x);
        memcpy(out, &x, 4);
        *ct = "int32";
        return 4;
    }
    case FC_INT64:
        if (shown)
            snprintf(shown, 32, "%lld", (long long)v.i);
        memcpy(out, &v.i, 8);
        *ct = "int64";
        return 8;
    case FC_UINT8: case FC_INT8: {
        uint8_t x = (uint8_t)(uint64_t)v.i;
        if (shown)
            snprintf(shown, 32, "%d", dt == FC_INT8 ? (int)(int8_t)x : (int)x);
        memcpy(out, &x, 1);
        *ct = ctype(dt);
        return 1;
    }
    case FC_INT16: case FC_FLOAT16: case FC_BFLOAT16: {
        /* float16 and bfloat16 travel as their bits (shown as the value they hold) */
        uint16_t x = dt == FC_INT16 ? (uint16_t)(uint64_t)v.i
                     : dt == FC_FLOAT16 ? fc_f32_to_f16((float)v.f) : fc_f32_to_bf16((float)v.f);
        if (shown && dt == FC_INT16)
            snprintf(shown, 32, "%d", (int)(int16_t)x);
        else if (shown)
            snprintf(shown, 32, "%.9g", dt == FC_FLOAT16 ? fc_f16_to_f32(x) : fc_bf16_to_f32(x));
        memcpy(out, &x, 2);
        *ct = ctype(dt);
        return 2;
    }
    case FC_FLOAT32: {
        float x = (float)v.f;
        if (shown)
            snprintf(shown, 32, "%.9g", x);
        memcpy(out, &x, 4);
        *ct = "f32";
        return 4;
    }
    default:
        if (shown)
            snprintf(shown, 32, "%.17g", v.f);
        memcpy(out, &v.f, 8);
        *ct = "f64";
        return 8;
    }
}

/* A scalar field of dtype dt named prefix followed by i. instr >= 0: the value is instruction
 * instr's konst, which the launch reads from its own kernel (fc_cuda_arg_value: a kept kernel's
 * parameters change from run to run, its module does not); -1: the value v. */
static const char *arg_scalar(Gen *g, FcDType dt, FcScalar v, const char *prefix, int i, int instr)
{
    char shown[32], name[16];
    unsigned char bytes[8];
    const char *ct;
    snprintf(name, sizeof name, "%s%d", prefix, i);
    int n = g->nargs, size = scalar_bytes(dt, v, bytes, &ct, shown);
    const char *ref = arg_field(g, CARG_VAL, ct, size, bytes, shown, name);
    if (g->nargs > n && instr >= 0) {
        g->args[n].konst = instr;
        g->args[n].dtype = dt;
    }
    return ref;
}

void fc_cuda_arg_value(const CudaArg *a, const FcKernel *k, void *p)
{
    unsigned char bytes[8];
    const char *ct;
    if (a->konst >= 0) {
        scalar_bytes(a->dtype, k->code[a->konst].konst, bytes, &ct, NULL);
        memcpy(p, bytes, (size_t)a->size);
    } else {
        memcpy(p, a->bytes, (size_t)a->size);
    }
}

/* The pointer field of buffer i ("buf<i>"). */
static const char *arg_buf(Gen *g, int i)
{
    const char *r = arg_named(g, CARG_BUF, "const char *", 8, NULL, NULL, "buf%d", i);
    for (int j = 0; j < g->nargs; j++)
        if (g->args[j].kind == CARG_BUF && strcmp(g->refs[j].s, r) == 0)
            g->args[j].buf = i;
    return r;
}

static const char *ext_of(Gen *g, int l) { return arg_ix(g, g->k->extent[l], "e%d", l); }

/* ---- analysis ---- */

/* The kernel's plan (fcdim's kplan: validated, operands linked, deps and lists), and room for
 * what the generator marks. */
static FcStatus analyse(Gen *g)
{
    const FcKernel *k = g->k;
    g->kp = k->plan;
    if (!g->kp) {
        g->st = fc_kplan_new(k, "cuda", &g->own_plan, g->err);
        if (g->st)
            return g->st;
        g->kp = g->own_plan;
    }
    const FcPlan *kp = g->kp;
    int n = k->ncode, L = k->nloop, ng = 0;
    for (int i = 0; i < n; i++)
        ng += k->code[i].op == FC_OP_LOAD ? k->code[i].ngather : 0;
    g->n = n;
    g->L = L;
    g->opv = kp->opv;
    g->gopv = kp->gopv;
    g->goff = kp->goff;
    g->bopv = kp->bopv;
    g->boff = kp->boff;
    g->deps = kp->deps;
    g->own = kp->own;
    g->list = kp->list;
    g->res = kp->res;
    for (int s = 0; s < k->nscatter; s++)
        g->sres[s] = kp->sres[s];
    /* The most fields the kernel can use: the fixed ones, an extent and an output stride per
     * loop, per load an offset, a stride per loop and two per gather, a constant or fill per
     * instruction, two per scatter and a pointer per buffer. */
    int nload = 0;
    for (int i = 0; i < n; i++)
        nload += k->code[i].op == FC_OP_LOAD;
    g->capargs = 16 + 4 * L + nload * (1 + L) + 2 * ng + 3 * n + 2 * k->nscatter + k->nbufs;
    g->args = mem_calloc((size_t)g->capargs, sizeof *g->args);
    g->refs = mem_calloc((size_t)g->capargs, sizeof *g->refs);
    g->wide = mem_calloc((size_t)n, sizeof *g->wide);
    g->coop = mem_calloc((size_t)n, sizeof *g->coop);
    g->lanes = mem_calloc((size_t)n, sizeof *g->lanes);
    g->done = mem_calloc((size_t)n, sizeof *g->done);
    g->pre = mem_calloc((size_t)n + 1, sizeof *g->pre);
    g->tab = mem_calloc((size_t)n + 1, sizeof *g->tab);
    g->inl = mem_calloc((size_t)n + 1, sizeof *g->inl);
    g->poff = mem_calloc((size_t)n + 1, sizeof *g->poff);
    if (!g->args || !g->refs || !g->wide || !g->coop || !g->lanes || !g->done || !g->pre || !g->tab || !g->inl ||
        !g->poff)
        return gfail(g, FC_ERR_NOMEM, "out of memory"), g->st;
    for (int l = 0; l < L; l++)
        if (k->owner[l] < 0 && k->extent[l] > 1)
            g->roots |= (uint64_t)1 << l;
    return FC_OK;
}

/* ---- the plan: how the GPU walks the nest ---- */

static uint64_t big(const Gen *g, uint64_t mask);

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t points(const FcKernel *k, uint64_t mask)
{
    int64_t p = 1;
    for (int l = 0; l < k->nloop; l++)
        if (mask >> l & 1)
            p = sat_mul(p, k->extent[l]);
    return p;
}

/* Whether load i moves along the vector loop by one element (so V of them are contiguous). */
static bool unit_along_vl(const Gen *g, int i)
{
    const FcInstr *in = &g->k->code[i];
    if (in->strides[g->vl] != 1)
        return false;
    for (int j = 0; j < in->ngather; j++)
        if (g->deps[g->gopv[g->goff[i] + j]] >> g->vl & 1)
            return false;
    return true;
}

static int pow2_block(int64_t work)
{
    int b = 32;
    while (b < 256 && b < work)
        b *= 2;
    return b;
}

/* Marks in need the values that value v is computed from, itself included: operands, gathered
 * indices and bounds. */
static void rec_need(const Gen *g, int v, bool *need)
{
    if (v < 0 || need[v])
        return;
    need[v] = true;
    const FcInstr *in = &g->k->code[v];
    for (int o = 0; o < 3; o++)
        rec_need(g, g->opv[3 * v + o], need);
    for (int j = 0; in->op == FC_OP_LOAD && j < in->ngather; j++)
        rec_need(g, g->gopv[g->goff[v] + j], need);
    for (int j = 0; fc_op_is_reduce(in->op) && j < in->nbound; j++)
        rec_need(g, g->bopv[g->boff[v] + j], need);
}

/* Whether the values v (>= 0) is computed from are a record's alone: no reduction among them
 * (tdl_keys computes them point by point), none varying along the owner loops. */
static bool record_value(const Gen *g, int v, bool *need)
{
    memset(need, 0, (size_t)g->n);
    rec_need(g, v, need);
    for (int i = 0; i < g->n; i++)
        if (need[i] && (fc_op_is_reduce(g->k->code[i].op) || (g->deps[i] & g->O)))
            return false;
    return true;
}

/* SORTED's gate (Gen.gate_c, gate_w): the stored value where(cond, v, 0), or its product with w
 * (float32 or float64), cond and w a record's values. */
static void plan_gate_sorted(Gen *g, bool *need)
{
    const FcKernel *k = g->k;
    int r = g->res, wh = -1, w = -1;
    g->gate_c = g->gate_w = -1;
    if (k->code[r].op == FC_OP_WHERE) {
        wh = r;
    } else if (k->code[r].op == FC_OP_MUL && is_float(k->code[r].dtype)) {
        for (int o = 0; o < 2 && wh < 0; o++) {
            int x = g->opv[3 * r + o], y = g->opv[3 * r + 1 - o];
            if (x >= 0 && y >= 0 && k->code[x].op == FC_OP_WHERE)
                wh = x, w = y;
        }
    }
    if (wh < 0 || !is_float(k->code[wh].dtype))
        return;
    int c = g->opv[3 * wh], z = g->opv[3 * wh + 2];
    if (c < 0 || z < 0 || k->code[c].dtype != FC_BOOL || k->code[z].op != FC_OP_CONST || k->code[z].konst.f != 0.0 ||
        (w >= 0 && !is_float(k->code[w].dtype)))
        return;
    if (!record_value(g, c, need) || (w >= 0 && !record_value(g, w, need)))
        return;
    g->gate_c = c;
    g->gate_w = w;
}

static bool plan_sorted_keys(Gen *g)
{
    const FcKernel *k = g->k;
    enum { MAX_KEYS = 1 << 25 };
    if (!k->checked || k->nscatter > FC_MAX_DIMS)
        return false;
    bool *need = mem_calloc((size_t)g->n + 1, 1);
    if (!need)
        return false;
    uint64_t moved = 0;
    for (int s = 0; s < k->nscatter; s++)
        rec_need(g, g->sres[s], need);
    bool ok = true;
    for (int i = 0; i < g->n; i++)
        if (need[i]) {
            ok = ok && !fc_op_is_reduce(k->code[i].op);
            moved |= g->deps[i];
        }
    mem_free(need);
    if (!ok)
        return false;
    g->O &= ~moved;
    g->R = g->K & ~g->O;
    g->nrec = points(k, g->R);
    g->nown = points(k, g->O);
    if (g->nrec < 2 || g->nrec > INT32_MAX / 2 || g->nown < 1)
        return false;
    int n = fc_store_terms(k, g->R, g->term);
    int64_t keys;
    if (n < 0 || !fc_store_terms_injective(g->term, n, MAX_KEYS, &keys))
        return false;
    g->nterm = n;
    g->nkeys = keys;
    need = mem_malloc((size_t)g->n + 1);
    if (!need)
        return false;
    plan_gate_sorted(g, need);
    mem_free(need);
    return true;
}

/* Whether a scattered or accumulating store that cannot fail runs SORTED: the owner loops its
 * scatter indices do not vary along (roi_align's channels) stay the grid's (Gen.O), the others
 * join the records (gather(1, idx)'s rows, whose idx moves with them), and the destination's part
 * that does not move with the grid's owner loops is a one-to-one map of its terms (each stride
 * beyond the span of the smaller ones), whose indices are then the key. The scatter indices
 * must be computed point by point (no reduction). Sets O, R, the terms, nkeys, nrec, nown and
 * the gate; O unchanged when it returns false. */
static bool plan_sorted(Gen *g)
{
    uint64_t O = g->O;
    bool ok = plan_sorted_keys(g);
    if (!ok)
        g->O = O;
    return ok;
}
/* Among mask's loops, the one the most loads read by unit steps (a gather's index not moving
 * along it), when it is more of them than along the last loop: the threads of a block then read
 * consecutive addresses (roi_align's channels on channels-last input, where the last loop is
 * the bin's column). -1 otherwise. */
static int flat_first(const Gen *g, uint64_t mask)
{
    int best = -1, last = -1, nbest = 0, nlast = 0;
    for (int l = 0; l < g->L; l++) {
        if (!(mask >> l & 1))
            continue;
        int n = 0;
        for (int i = 0; i < g->n; i++) {
            const FcInstr *in = &g->k->code[i];
            bool moves = false;
            for (int j = 0; in->op == FC_OP_LOAD && j < in->ngather; j++)
                moves |= (g->deps[g->gopv[g->goff[i] + j]] >> l & 1) != 0;
            n += in->op == FC_OP_LOAD && in->strides[l] == 1 && !moves;
        }
        if (n > nbest) {
            best = l;
            nbest = n;
        }
        last = l;
        nlast = n;
    }
    return best >= 0 && best != last && nbest > nlast ? best : -1;
}

/* Whether a thread-per-point kernel runs TILE: the output is contiguous along vl, every load
 * reads across it (none along it by unit steps), and one reads along another kept loop by unit
 * steps (a transposing copy, a layout change: channels-last and back). Both loops at least a
 * tile long; no reduction inside. */
static bool plan_tile(Gen *g)
{
    const FcKernel *k = g->k;
    int w = g->vl, r = -1;
    if (w < 0 || k->out_strides[w] != 1 || k->extent[w] < 32)
        return false;
    for (int i = 0; i < g->n; i++) {
        const FcInstr *in = &k->code[i];
        if (fc_op_is_reduce(in->op) || (in->op == FC_OP_LOAD && in->strides[w] == 1))
            return false;
        for (int l = 0; in->op == FC_OP_LOAD && l < g->L && r < 0; l++) {
            bool moves = false;
            for (int j = 0; j < in->ngather; j++)
                moves |= (g->deps[g->gopv[g->goff[i] + j]] >> l & 1) != 0;
            if (l != w && (g->K >> l & 1) && in->strides[l] == 1 && !moves && k->extent[l] >= 32 &&
                k->out_strides[l] != 0)
                r = l;
        }
    }
    if (r < 0)
        return false;
    g->tile_w = w;
    g->tile_r = r;
    return true;
}

static void plan(Gen *g)
{
    const FcKernel *k = g->k;
    bool reduce = k->reduce != FC_OP_NONE;
    for (int l = 0; l < g->L; l++) {
        if (k->owner[l] >= 0)
            continue;
        if (reduce && k->reduced[l])
            g->RR |= (uint64_t)1 << l;
        else
            g->K |= (uint64_t)1 << l;
    }
    /* The vector loop: the scheduler's chunk loop when it fixed one (the loop the reductions
     * inside may be missing), else the innermost kept loop. */
    g->vl = -1;
    if (k->chunk_loop >= 0 && k->chunk_loop < g->L && k->owner[k->chunk_loop] < 0)
        g->vl = k->chunk_loop;
    else
        for (int l = 0; l < g->L; l++)
            if (g->K >> l & 1)
                g->vl = l;
    int64_t nout = points(k, g->K), nred = points(k, g->RR);
    if (k->nscatter > 0 || k->accumulate) {
        /* Each element's contributions in the nest's order: on one thread, or on a thread per
         * point of the owner loops, which never share an element (no atomics either way). */
        g->O = k->checked ? fc_store_owner_loops(k) & g->K : 0;
        g->mode = plan_sorted(g) ? CUDA_SORTED : g->O ? CUDA_OWNER : CUDA_SERIAL;
    } else if (reduce) {
        /* Many outputs with a kept innermost loop: threads read consecutive addresses, each
         * looping over the reduced loops. Else a block per output. */
        int inner = -1;
        for (int l = 0; l < g->L; l++)
            if (k->owner[l] < 0 && k->extent[l] > 1)
                inner = l;
        bool column = inner >= 0 && !(g->RR >> inner & 1);
        g->mode = nred >= 32 && !(column && nout >= 16384) ? CUDA_BLOCK_REDUCE : CUDA_THREAD_REDUCE;
        if (g->mode == CUDA_BLOCK_REDUCE) {
            for (int r = 0; r < g->n; r++)
                if (fc_op_is_reduce(k->code[r].op) && g->list[r] < 0)
                    g->D |= g->deps[r] & g->RR;
            g->T = g->RR & ~g->D;
            if (!big(g, g->T)) {        /* nothing left to split: the threads take every point */
                g->D = 0;
                g->T = g->RR;
            }
            g->flat_first = flat_first(g, big(g, g->T));
        }
    } else {
        g->mode = CUDA_THREAD;
        if (g->vl >= 0 && k->extent[g->vl] > 1)
            for (int r = 0; r < g->n; r++)
                if (fc_op_is_reduce(k->code[r].op) && g->list[r] < 0 && !(g->deps[r] >> g->vl & 1))
                    g->mode = CUDA_ROW;
        if (g->mode == CUDA_THREAD && plan_tile(g))
            g->mode = CUDA_TILE;
    }
    /* V points per thread along vl where something moves along it by unit steps and the
     * output moves along it. */
    if ((g->mode == CUDA_THREAD || g->mode == CUDA_ROW) && g->vl >= 0 && k->extent[g->vl] > 1 &&
        k->out_strides[g->vl] != 0) {
        size_t es = 0;
        if (k->out_strides[g->vl] == 1)
            es = fc_dtype_size(k->out_dtype);
        for (int i = 0; i < g->n; i++)
            if (k->code[i].op == FC_OP_LOAD && unit_along_vl(g, i) && fc_dtype_size(k->code[i].dtype) > es)
                es = fc_dtype_size(k->code[i].dtype);
        /* A bound that varies along vl could not be applied to V points at once: the loop
         * running to each point's own bound is worth more than the wide accesses. */
        for (int r = 0; r < g->n && es > 0; r++)
            for (int j = 0; fc_op_is_reduce(k->code[r].op) && j < k->code[r].nbound; j++)
                if (g->deps[g->bopv[g->boff[r] + j]] >> g->vl & 1)
                    es = 0;
        if (es > 0) {
            g->vec = true;
            g->V = es <= 4 ? 4 : 2;
        }
    }
    if (!g->vec)
        g->V = 1;
    for (int i = 0; i < g->n; i++)
        g->wide[i] = g->vec && (g->deps[i] >> g->vl & 1);
    /* The chunk loop of each list as the CPU executor plans it (plan_marks): the top list's is
     * the kernel's chunk loop; a reduction that does not vary along its list's chunk loop runs
     * along its own last loop, and so does its body. Such a reduction of floats folds into eight
     * lanes, as the CPU's hfold does. */
    int *cx = mem_malloc((size_t)g->n * sizeof *cx);
    if (!cx) {
        gfail(g, FC_ERR_NOMEM, "out of memory");
        return;
    }
    fc_kplan_chunks(g->n, g->L, g->deps, g->own, g->list, g->vl, g->vl >= 0 ? (uint64_t)1 << g->vl : 0, cx);
    for (int i = 0; i < g->n; i++) {
        if (!fc_op_is_reduce(k->code[i].op))
            continue;
        int c = cx[i], lst = g->list[i];    /* the chunk loop of the reduction's own list */
        bool cpu_wide = c >= 0 && (g->deps[i] >> c & 1);
        Reducer rd;
        bool ok = reducer(k->code[i].op, k->code[i].src_dtype, k->code[i].dtype, &rd);
        g->coop[i] = (g->mode == CUDA_ROW && lst < 0 && !(g->deps[i] >> g->vl & 1)) ||
                     (g->mode == CUDA_BLOCK_REDUCE && lst < 0 && !(g->deps[i] & g->T));
        g->lanes[i] = ok && g->own[i] && !cpu_wide && !g->coop[i] && !g->wide[i] && rd.fkind &&
                      (k->code[i].op == FC_OP_SUM || k->code[i].op == FC_OP_PROD);
    }
    mem_free(cx);
    g->idx32 = k->index32;
    for (int l = 0; l < g->L; l++)
        g->idx32 = g->idx32 && k->extent[l] <= INT32_MAX;
    g->idx32 = g->idx32 && points(k, g->roots) <= INT32_MAX;
    CudaCode *c = g->code;
    c->mode = g->mode;
    c->vl = g->vl;
    c->vec = g->vec;
    c->V = g->V;
    c->nred = nred;
    switch (g->mode) {
    case CUDA_TILE: {
        int64_t ew = k->extent[g->tile_w], er = k->extent[g->tile_r];
        c->npts = c->npts_v = nout / ew / er * ((ew + 31) / 32) * ((er + 31) / 32);
        c->block = 256;
        break;
    }
    case CUDA_THREAD:
        c->npts = nout;
        c->npts_v = g->vec ? nout / k->extent[g->vl] * (k->extent[g->vl] / g->V) : nout;
        c->block = 256;
        break;
    case CUDA_ROW: {
        c->npts = c->npts_v = nout / (k->extent[g->vl] ? k->extent[g->vl] : 1);
        if (k->extent[g->vl] == 0)
            c->npts = c->npts_v = 0;
        int64_t work = k->extent[g->vl];
        for (int r = 0; r < g->n; r++)
            if (g->coop[r])
                for (int l = 0; l < g->L; l++)
                    if (g->own[r] >> l & 1 && k->extent[l] > work)
                        work = k->extent[l];
        c->block = pow2_block(work);
        break;
    }
    case CUDA_BLOCK_REDUCE: {
        c->npts = c->npts_v = nout;
        int64_t work = points(k, g->T);
        for (int r = 0; r < g->n; r++)
            if (g->coop[r])
                for (int l = 0; l < g->L; l++)
                    if (g->own[r] >> l & 1 && k->extent[l] > work)
                        work = k->extent[l];
        c->block = pow2_block(work);
        /* The blocks of a split share the first reduced level: the first loop walked in order,
         * or the points the threads take. */
        c->split_ext = points(k, g->T);
        for (int l = 0; l < g->L; l++)
            if (g->D >> l & 1) {
                c->split_ext = k->extent[l];
                break;
            }
        break;
    }
    case CUDA_THREAD_REDUCE:
        c->npts = c->npts_v = nout;
        c->block = 256;
        break;
    case CUDA_SORTED:
        c->npts = c->npts_v = g->nkeys * g->nown;
        c->nkeys = g->nkeys;
        c->nrec = g->nrec;
        c->scan_tiles = (g->nkeys + 1 + 2047) / 2048;     /* sort_scratch's layout */
        c->scratch_bytes = (size_t)(2 * g->nkeys + 2 + c->scan_tiles + 2 * g->nrec) * sizeof(uint32_t);
        c->scratch_zero = (size_t)(2 * g->nkeys + 2) * sizeof(uint32_t);
        c->block = 256;
        break;
    case CUDA_SERIAL:
    case CUDA_OWNER:
        c->npts = c->npts_v = g->mode == CUDA_OWNER ? points(k, g->O) : points(k, g->roots);
        for (int l = 0; l < g->L; l++)
            if (k->owner[l] < 0 && k->extent[l] == 0)
                c->npts = c->npts_v = 0;
        c->block = g->mode == CUDA_OWNER ? pow2_block(c->npts) : 1;
        break;
    }
    if (nout == 0 && g->mode != CUDA_SERIAL && g->mode != CUDA_OWNER && g->mode != CUDA_SORTED)
        c->npts = c->npts_v = 0;
}

/* ---- emission ---- */

/* Operand instruction j as read by a reader that is wide (lane u) or not. */
static Name opnd(const Gen *g, int j, bool lane)
{
    Name n;
    snprintf(n.s, sizeof n.s, g->wide[j] && lane ? "v%d[u]" : "v%d", j);
    return n;
}

static void emit_instr(Gen *g, int i);

/* The level of the nest at which instruction i is placed: after the last level whose loops it
 * varies along is open. */
static int level_of(const Gen *g, const Nest *ns, int i)
{
    int d = 0;
    for (int j = 0; j < ns->nlv; j++)
        if (g->deps[i] & ns->lv[j].mask)
            d = j + 1;
    return d;
}

static void emit_load(Gen *g, int i)
{
    const FcKernel *k = g->k;
    const FcInstr *in = &k->code[i];
    const char *T = ctype(in->dtype);
    bool w = g->wide[i];
    int base = g->goff[i];
    /* Gathered indices, each checked before anything is read. */
    for (int j = 0; j < in->ngather; j++) {
        const FcGather *ga = &in->gathers[j];
        int r = g->gopv[base + j];
        const char *e = arg_i64(g, ga->extent, "l%dg%de", i, j), *wr = ga->wrap ? "true" : "false";
        if (g->wide[r])
            line(g, "int64 g%d_%d[V]; LANES g%d_%d[u] = gix(v%d[u], %s, %s, %d, a.err);", i, j, i, j, r, e, wr, ga->dim);
        else
            line(g, "const int64 g%d_%d = gix(v%d, %s, %s, %d, a.err);", i, j, r, e, wr, ga->dim);
    }
    /* The address without the vector loop's part (and per-lane gathers) when wide. */
    Buf *b = &g->b;
    bput(b, "%*sconst ix_t o%d = %s", 4 * g->ind, "", i, arg_ix(g, in->offset, "l%do", i));
    for (int l = 0; l < g->L; l++) {
        if (in->strides[l] == 0 || k->extent[l] <= 1 || (w && l == g->vl))
            continue;
        bput(b, " + i%d * %s", l, arg_ix(g, in->strides[l], "l%ds%d", i, l));
    }
    bool lane_gathers = false;
    for (int j = 0; j < in->ngather; j++) {
        if (g->wide[g->gopv[base + j]])
            lane_gathers = true;
        else
            bput(b, " + (ix_t)g%d_%d * %s", i, j, arg_ix(g, in->gathers[j].stride, "l%dg%ds", i, j));
    }
    bput(b, ";\n");
    const char *p = arg_buf(g, in->buf);
    if (!w) {
        line(g, "const %s v%d = ((const %s *)%s)[o%d];", T, i, T, p, i);
        return;
    }
    if (in->strides[g->vl] == 1 && !lane_gathers) {
        line(g, "%s v%d[V];", T, i);
        line(g, "ldv<V>(v%d, (const %s *)%s + o%d + i%d);", i, T, p, i, g->vl);
        return;
    }
    line(g, "%s v%d[V];", T, i);
    bput(b, "%*sLANES v%d[u] = ((const %s *)%s)[o%d", 4 * g->ind, "", i, T, p, i);
    if (in->strides[g->vl] != 0 && k->extent[g->vl] > 1)
        bput(b, " + (i%d + u) * %s", g->vl, arg_ix(g, in->strides[g->vl], "l%ds%d", i, g->vl));
    for (int j = 0; j < in->ngather; j++)
        if (g->wide[g->gopv[base + j]])
            bput(b, " + (ix_t)g%d_%d[u] * %s", i, j, arg_ix(g, in->gathers[j].stride, "l%dg%ds", i, j));
    bput(b, "];\n");
}

static void emit_op(Gen *g, int i)
{
    const FcInstr *in = &g->k->code[i];
    int x = g->opv[3 * i], y = g->opv[3 * i + 1], z = g->opv[3 * i + 2];
    FcDType t = in->dtype;
    if (in->op == FC_OP_CAST || in->op == FC_OP_ISNAN || fc_op_is_compare(in->op) || in->op == FC_OP_WHERE_CMP)
        t = x >= 0 ? g->k->code[x].dtype : in->src_dtype;
    if ((fc_op_is_compare(in->op) || in->op == FC_OP_ISNAN) && in->dtype != FC_BOOL) {
        gfail(g, FC_ERR_TYPE, "cuda kernel: %s gives bool, not %s", fc_op_name(in->op), fc_dtype_name(in->dtype));
        return;
    }
    bool w = g->wide[i];
    Name none = {""};
    Name xn = x >= 0 ? opnd(g, x, w) : none, yn = y >= 0 ? opnd(g, y, w) : none, zn = z >= 0 ? opnd(g, z, w) : none;
    const char *xb = xn.s, *yb = yn.s, *zb = zn.s;
    Buf e = {0};
    if (in->op == FC_OP_CAST) {
        cast_expr(&e, in->dtype, t, xb);
    } else if (in->op == FC_OP_WHERE) {
        bput(&e, "%s ? %s : %s", xb, yb, zb);
    } else if (in->op == FC_OP_MULADD && x < 0 && y >= 0 && z >= 0) {
        bput(&e, "%s * %s", yb, zb);    /* no x: the head of a chain, w * r */
    } else if (in->op == FC_OP_WHERE_CMP && op_template(in->cmp, t)) {
        /* the comparison's own template, with the constant as its second operand */
        subst(&e, op_template(in->cmp, t), xb, arg_scalar(g, t, in->konst, "k", i, i), "", ctype(t), utype(t),
              t == FC_FLOAT32 ? "f" : "", t == FC_INT32 ? 32 : 64);
        bput(&e, " ? %s : %s", yb, zb);
    } else {
        const char *tm = op_template(in->op, t);
        bool unary = fc_op_is_unary(in->op);
        if (!tm || (unary ? x < 0 : (x < 0 || y < 0))) {
            mem_free(e.p);
            bool by_src = in->op == FC_OP_ISNAN || fc_op_is_compare(in->op);
            gfail(g, FC_ERR_TYPE, "cuda kernel: %s is not supported for %s", fc_op_name(in->op),
                  fc_dtype_name(by_src ? t : in->dtype));
            return;
        }
        subst(&e, tm, xb, yb, zb, ctype(t), utype(t), t == FC_FLOAT32 ? "f" : "", t == FC_INT32 ? 32 : 64);
    }
    if (e.oom) {
        mem_free(e.p);
        gfail(g, FC_ERR_NOMEM, "out of memory");
        return;
    }
    if (w) {
        line(g, "%s v%d[V];", ctype(in->dtype), i);
        line(g, "LANES v%d[u] = %s;", i, e.p);
    } else {
        line(g, "const %s v%d = %s;", ctype(in->dtype), i, e.p);
    }
    mem_free(e.p);
}

/* ---- nests ---- */

static void nest_inner(Gen *g, const Nest *ns);
static void nest_pre(Gen *g, const Nest *ns, int d);
static void nest_post(Gen *g, const Nest *ns, int d);

/* fastdiv's multiplier and shift for divisor d (1 <= d < 2^31): n / d = (umulhi(n, m) + n) >> sh
 * for every 0 <= n < 2^31 (Granlund and Montgomery's round-up method; PyTorch's IntDivider). */
static void fastdiv_magic(uint32_t d, uint32_t *m, uint32_t *sh)
{
    uint32_t s = 0;
    while (s < 32 && ((uint64_t)1 << s) < d)
        s++;
    *sh = s;
    *m = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << s) - d)) / d + 1);
}

/* The fields of fastdiv's multiplier and shift for loop l's extent over v (*m, *s). */
static void fastdiv_args(Gen *g, int l, int v, const char *suffix, const char **m, const char **s)
{
    int64_t d = g->k->extent[l] / v;
    uint32_t mu, sh;
    fastdiv_magic(d < 1 ? 1 : (uint32_t)d, &mu, &sh);     /* d < 1: an empty loop, never run */
    char shown[32];
    snprintf(shown, sizeof shown, "%u", mu);
    *m = arg_named(g, CARG_VAL, "uint32", 4, &mu, shown, "e%dm%s", l, suffix);
    snprintf(shown, sizeof shown, "%u", sh);
    *s = arg_named(g, CARG_VAL, "uint32", 4, &sh, shown, "e%ds%s", l, suffix);
}

/* Decodes the point number `q` (of type ix_t) into the loops of mask: vl first (V indices per
 * point) when it is among them and the kernel is vectorised, then the others, the highest
 * numbered fastest (or strictly by number when serial); first (>= 0), when among them and not
 * the vector loop, before the others. With 32-bit indices each quotient is a multiply (fastdiv):
 * a division by a run-time extent costs tens of instructions. */
static void decode_from(Gen *g, const char *q, uint64_t mask, bool serial, int first)
{
    int order[FC_MAX_DIMS], no = 0;
    if (!serial && g->vec && (mask >> g->vl & 1))
        order[no++] = g->vl;
    else if (first >= 0 && (mask >> first & 1))
        order[no++] = first;
    for (int l = g->L - 1; l >= 0; l--)
        if ((mask >> l & 1) && !(no > 0 && order[0] == l))
            order[no++] = l;
    for (int j = 0; j < no; j++) {
        int l = order[j];
        const char *e = ext_of(g, l);
        bool vecl = !serial && g->vec && l == g->vl;
        if (j == no - 1) {
            if (vecl)
                line(g, "const ix_t i%d = %s * V;", l, q);
            else
                line(g, "const ix_t i%d = %s;", l, q);
        } else if (g->idx32) {
            /* 32-bit indices: the quotient by a multiply (fastdiv), the remainder from it; along
             * the vector loop by e / V, V being 1 (tdl_s) or g->V (tdl_v) */
            const char *m1, *s1, *mv, *sv;
            fastdiv_args(g, l, 1, "", &m1, &s1);
            if (vecl) {
                fastdiv_args(g, l, g->V, "v", &mv, &sv);
                line(g, "const ix_t d%d = V == 1 ? fastdiv(%s, %s, %s) : fastdiv(%s, %s, %s);", l, q, m1, s1, q, mv, sv);
                line(g, "const ix_t i%d = (%s - d%d * (%s / V)) * V;", l, q, l, e);
            } else {
                line(g, "const ix_t d%d = fastdiv(%s, %s, %s);", l, q, m1, s1);
                line(g, "const ix_t i%d = %s - d%d * %s;", l, q, l, e);
            }
            line(g, "%s = d%d;", q, l);
        } else if (vecl) {
            line(g, "const ix_t i%d = %s %% (%s / V) * V;", l, q, e);
            line(g, "%s /= %s / V;", q, e);
        } else {
            line(g, "const ix_t i%d = %s %% %s;", l, q, e);
            line(g, "%s /= %s;", q, e);
        }
    }
}

static void decode(Gen *g, const char *q, uint64_t mask, bool serial)
{
    decode_from(g, q, mask, serial, -1);
}

/* Loops of extent <= 1 among mask's: their index is 0. */
static void zero_loops(Gen *g, uint64_t mask)
{
    for (int l = 0; l < g->L; l++)
        if ((mask >> l & 1) && g->k->extent[l] <= 1)
            line(g, "const ix_t i%d = 0;", l);
}

static uint64_t big(const Gen *g, uint64_t mask)
{
    uint64_t m = 0;
    for (int l = 0; l < g->L; l++)
        if ((mask >> l & 1) && g->k->extent[l] > 1)
            m |= (uint64_t)1 << l;
    return m;
}

/* The count of loop l in reduction r's nest (bounded): n<r>_<l>. */
static void count_name(char *buf, size_t cap, int r, int l) { snprintf(buf, cap, "n%d_%d", r, l); }

/* The trip count of sequential level d: zero when a loop inside it in the same nest is empty, so
 * that a reduction over an empty loop inside huge ones (2^40 x 0) does not walk the huge ones for
 * nothing (the CPU executor counts such a domain as empty too). */
static void seq_count(Gen *g, const Nest *ns, int d, const char *cnt, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int e = d + 1; e < ns->nlv && n + 40 < cap; e++) {
        const Level *lv = &ns->lv[e];
        char c[24];
        if (lv->kind == LV_SEQ || lv->kind == LV_LANES8 || lv->kind == LV_THREADS_SEQ) {
            if (ns->lst >= 0)
                count_name(c, sizeof c, ns->lst, lv->loop);
            else
                snprintf(c, sizeof c, "%s", ext_of(g, lv->loop));
        } else if (lv->kind == LV_THREADS_FLAT && e > 1) {
            snprintf(c, sizeof c, "a.nt");
        } else {
            continue;
        }
        n += (size_t)snprintf(buf + n, cap - n, "%s%s > 0", n ? " && " : "(", c);
    }
    if (n)
        snprintf(buf + n, cap - n, " ? %s : 0)", cnt);
    else
        snprintf(buf, cap, "%s", cnt);
}

/* One pass of a tile's 32 x 32 points (after the block's barrier): a warp's 32 lanes along loop
 * `lanes` (tile index tl), its eight warps and the four steps of kk along loop `rows` (tile index
 * tr), the points inside both loops' extents. Opens the kk loop and the bounds test. */
static void tile_pass(Gen *g, int lanes, const char *tl, int rows, const char *tr)
{
    int w = g->tile_w, r = g->tile_r;
    line(g, "__syncthreads();");
    line(g, "for (int kk = 0; kk < 32; kk += 8) {");
    g->ind++;
    line(g, "const ix_t i%d = %s * 32 + (ix_t)(threadIdx.x & 31);", lanes, tl);
    line(g, "const ix_t i%d = %s * 32 + (ix_t)(threadIdx.x >> 5) + kk;", rows, tr);
    line(g, "if (i%d < %s && i%d < %s) {", w, ext_of(g, w), r, ext_of(g, r));
    g->ind++;
}

static void open_level(Gen *g, const Nest *ns, int d)
{
    const Level *lv = &ns->lv[d];
    char cnt[24];
    switch (lv->kind) {
    case LV_GRID:
    case LV_SERIAL:
        line(g, "for (int64 t = (int64)blockIdx.x * blockDim.x + threadIdx.x; t < a.npts; t += (int64)gridDim.x * blockDim.x) {");
        g->ind++;
        zero_loops(g, lv->mask & ~big(g, lv->mask));
        if (big(g, lv->mask)) {
            line(g, "ix_t q = (ix_t)t;");
            decode(g, "q", big(g, lv->mask), lv->kind == LV_SERIAL);
        }
        return;
    case LV_BLOCKS:
        line(g, "for (int64 t = blockIdx.x; t < a.npts; t += gridDim.x) {");
        g->ind++;
        zero_loops(g, lv->mask & ~big(g, lv->mask));
        if (big(g, lv->mask)) {
            line(g, "ix_t q = (ix_t)t;");
            decode(g, "q", big(g, lv->mask), false);
        }
        return;
    case LV_THREADS_VEC: {
        int l = g->vl;
        line(g, "for (ix_t i%d = threadIdx.x * V; i%d < %s; i%d += blockDim.x * V) {", l, l, ext_of(g, l), l);
        g->ind++;
        return;
    }
    case LV_THREADS_FLAT:
        if (d == 1) {
            line(g, "const int64 lo = (int64)blockIdx.y * a.per, hi = lo + a.per < a.nred ? lo + a.per : a.nred;");
            line(g, "for (int64 t2 = lo + threadIdx.x; t2 < hi; t2 += blockDim.x) {");
        } else {
            line(g, "for (int64 t2 = threadIdx.x; t2 < a.nt; t2 += blockDim.x) {");
        }
        g->ind++;
        zero_loops(g, lv->mask & ~big(g, lv->mask));
        if (big(g, lv->mask)) {
            line(g, "ix_t q2 = (ix_t)t2;");
            decode_from(g, "q2", big(g, lv->mask), true, g->flat_first);
        }
        return;
    case LV_SEQ_SPLIT: {
        int l = lv->loop;
        char trips[256];
        seq_count(g, ns, d, "hi", trips, sizeof trips);
        line(g, "const ix_t lo = (ix_t)(blockIdx.y * a.per), hi = lo + a.per < %s ? (ix_t)(lo + a.per) : %s;",
             ext_of(g, l), ext_of(g, l));
        line(g, "for (ix_t i%d = lo; i%d < %s; i%d++) {", l, l, trips, l);
        g->ind++;
        return;
    }
    case LV_SEQ:
        if (ns->lst >= 0)
            count_name(cnt, sizeof cnt, ns->lst, lv->loop);
        else
            snprintf(cnt, sizeof cnt, "%s", ext_of(g, lv->loop));
        char trips[256];
        seq_count(g, ns, d, cnt, trips, sizeof trips);
        line(g, "for (ix_t i%d = 0; i%d < %s; i%d++) {", lv->loop, lv->loop, trips, lv->loop);
        g->ind++;
        return;
    case LV_LANES8:
        count_name(cnt, sizeof cnt, ns->lst, lv->loop);
        line(g, "for (ix_t lb%d = 0; lb%d < %s; lb%d += 8) {", ns->lst, ns->lst, cnt, ns->lst);
        g->ind++;
        line(g, "_Pragma(\"unroll\") for (int l%d = 0; l%d < 8; l%d++) {", ns->lst, ns->lst, ns->lst);
        g->ind++;
        line(g, "const ix_t i%d = lb%d + l%d;", lv->loop, ns->lst, ns->lst);
        line(g, "if (i%d < %s) {", lv->loop, cnt);
        g->ind++;
        return;
    case LV_THREADS_SEQ:
        count_name(cnt, sizeof cnt, ns->lst, lv->loop);
        line(g, "for (ix_t i%d = threadIdx.x; i%d < %s; i%d += blockDim.x) {", lv->loop, lv->loop, cnt, lv->loop);
        g->ind++;
        return;
    case LV_SORTED:
        line(g, "for (int64 t = (int64)blockIdx.x * blockDim.x + threadIdx.x; t < a.npts; t += (int64)gridDim.x * blockDim.x) {");
        g->ind++;
        line(g, "const uint32 lo = RUN_START(a, t / a.nown), hi = RUN_START(a, t / a.nown + 1);");
        line(g, "if (lo == hi)");
        line(g, "    continue;");
        line(g, "%s *dst = nullptr, acc;     // the destination, its value in a register (emit_store)", ctype(g->k->out_dtype));
        zero_loops(g, lv->mask & ~big(g, lv->mask));
        if (big(g, lv->mask)) {
            line(g, "ix_t q = (ix_t)(t %% a.nown);");
            decode(g, "q", big(g, lv->mask), false);
        }
        return;
    case LV_TILE: {
        int w = g->tile_w, r = g->tile_r;
        const char *ntw = arg_ix(g, (g->k->extent[w] + 31) / 32, "ntw"), *ntr = arg_ix(g, (g->k->extent[r] + 31) / 32, "ntr");
        line(g, "__shared__ %s tile[32][33];     // [the reads' loop][the writes'], a bank apart", ctype(g->k->out_dtype));
        line(g, "for (int64 t = blockIdx.x; t < a.npts; t += gridDim.x) {");
        g->ind++;
        line(g, "ix_t q = (ix_t)t;");
        line(g, "const ix_t tw = q %% %s;", ntw);
        line(g, "q /= %s;", ntw);
        line(g, "const ix_t tr = q %% %s;", ntr);
        line(g, "q /= %s;", ntr);
        uint64_t rest = lv->mask & ~((uint64_t)1 << w | (uint64_t)1 << r);
        zero_loops(g, rest & ~big(g, rest));
        if (big(g, rest))
            decode(g, "q", big(g, rest), false);
        tile_pass(g, r, "tr", w, "tw");
        return;
    }
    case LV_RUN:
        line(g, "for (uint32 j = lo; j < hi; j++) {");
        g->ind++;
        line(g, "ix_t r = (ix_t)SORT_RUNS(a)[j];");
        zero_loops(g, lv->mask & ~big(g, lv->mask));
        decode(g, "r", big(g, lv->mask), true);
        return;
    }
}

static void out_offset(Gen *g, const char *ty, const char *name, bool skip_vl);

static void close_level(Gen *g, const Nest *ns, int d)
{
    if (ns->lv[d].kind == LV_TILE) {
        /* the tile's points written along the output's loop */
        int w = g->tile_w, r = g->tile_r;
        const char *OT = ctype(g->k->out_dtype);
        g->ind -= 2;
        line(g, "    }");
        line(g, "}");
        tile_pass(g, w, "tw", r, "tr");
        out_offset(g, "ix_t", "o", false);
        line(g, "((%s *)%s)[o] = tile[(threadIdx.x >> 5) + kk][threadIdx.x & 31];", OT,
             arg_field(g, CARG_OUT, "char *", 8, NULL, NULL, "out"));
        g->ind--;
        line(g, "}");
        g->ind--;
        line(g, "}");
        g->ind--;
        line(g, "}");
        return;
    }
    int m = ns->lv[d].kind == LV_LANES8 ? 3 : 1;
    for (int j = 0; j < m; j++) {
        g->ind--;
        line(g, "}");
    }
    if (ns->lv[d].kind == LV_RUN)
        line(g, "*dst = acc;");
}

/* Places the instructions of the nest's list: those at level d, then level d + 1 inside the
 * next loop, and so on; the innermost level runs the nest's action. pre and post run at each
 * level before and after what is inside it. */
static void nest_level(Gen *g, const Nest *ns, int d)
{
    for (int i = 0; i < g->n && !g->st; i++)
        if (!g->done[i] && g->list[i] == ns->lst && level_of(g, ns, i) == d && i != ns->lst)
            emit_instr(g, i);
    nest_pre(g, ns, d);
    if (d == ns->nlv) {
        nest_inner(g, ns);
    } else {
        open_level(g, ns, d);
        nest_level(g, ns, d + 1);
        close_level(g, ns, d);
    }
    nest_post(g, ns, d);
}

/* ---- inner reductions ---- */

static void emit_reduce(Gen *g, int r)
{
    const FcKernel *k = g->k;
    const FcInstr *in = &k->code[r];
    Reducer rd;
    if (!reducer(in->op, in->src_dtype, in->dtype, &rd)) {
        gfail(g, FC_ERR_TYPE, "cuda kernel: %s of %s into %s is not supported", fc_op_name(in->op),
              fc_dtype_name(in->src_dtype), fc_dtype_name(in->dtype));
        return;
    }
    const char *A = rd.fkind ? "f64" : "int64";
    int body = g->opv[3 * r];
    if (k->code[body].dtype != in->src_dtype) {
        gfail(g, FC_ERR_VALUE, "cuda kernel: reduction %d reads %s, expected %s", r,
              fc_dtype_name(k->code[body].dtype), fc_dtype_name(in->src_dtype));
        return;
    }
    Buf *b = &g->b;
    bput(b, "%*s// v%d = %s of v%d over", 4 * g->ind, "", r, fc_op_name(in->op), body);
    for (int l = 0; l < g->L; l++)
        if (g->own[r] >> l & 1)
            bput(b, " i%d", l);
    bput(b, "%s%s\n", g->coop[r] ? ", by the block" : "", g->lanes[r] ? ", in eight lanes (the CPU's order)" : "");
    if (g->lanes[r])
        line(g, "%s a%d[8] = {%s, %s, %s, %s, %s, %s, %s, %s};", A, r, rd.init, rd.init, rd.init, rd.init, rd.init,
             rd.init, rd.init, rd.init);
    else if (g->wide[r])
        line(g, "%s a%d[V]; LANES a%d[u] = %s;", A, r, r, rd.init);
    else
        line(g, "%s a%d = %s;", A, r, rd.init);
    /* Counts, bounded: a bound whose value varies along the vector loop is not applied. */
    bool cut = false;
    for (int j = 0; j < in->nbound; j++)
        if (!g->wide[g->bopv[g->boff[r] + j]])
            cut = true;
    for (int l = 0; l < g->L; l++)
        if (g->own[r] >> l & 1)
            line(g, "ix_t n%d_%d = %s;", r, l, ext_of(g, l));
    if (cut)
        line(g, "bool c%d = false;", r);
    for (int j = 0; j < in->nbound; j++) {
        int v = g->bopv[g->boff[r] + j];
        if (g->wide[v])
            continue;
        const FcBound *bd = &in->bounds[j];
        line(g, "{");
        g->ind++;
        line(g, "const int64 c = bcount(%s, (%s)v%d, %s);", bd->cmp == FC_OP_LE ? "true" : "false",
             is_float(k->code[v].dtype) ? "f64" : "int64", v, ext_of(g, bd->loop));
        line(g, "if (c < n%d_%d)", r, bd->loop);
        line(g, "    n%d_%d = (ix_t)c;", r, bd->loop);
        line(g, "if (c < %s)", ext_of(g, bd->loop));
        line(g, "    c%d = true;", r);
        g->ind--;
        line(g, "}");
    }
    Nest ns = {.lst = r};
    int last = -1;
    for (int l = 0; l < g->L; l++)
        if (g->own[r] >> l & 1)
            last = l;
    for (int l = 0; l < g->L; l++) {
        if (!(g->own[r] >> l & 1))
            continue;
        LvKind kind = l != last ? LV_SEQ : g->coop[r] ? LV_THREADS_SEQ : g->lanes[r] ? LV_LANES8 : LV_SEQ;
        ns.lv[ns.nlv++] = (Level){kind, (uint64_t)1 << l, l};
    }
    nest_level(g, &ns, 0);
    if (g->coop[r])
        line(g, "a%d = block_reduce<%s, %s>(a%d);", r, A, rd.comb, r);
    if (cut) {
        const char *f = arg_scalar(g, in->src_dtype, in->fill, "fill", r, -1);
        if (g->lanes[r])
            line(g, "if (c%d)\n%*s    a%d[0] = %s(a%d[0], (%s)%s);", r, 4 * g->ind, "", r, rd.comb, r, A, f);
        else if (g->wide[r])
            line(g, "if (c%d)\n%*s    LANES a%d[u] = %s(a%d[u], (%s)%s);", r, 4 * g->ind, "", r, rd.comb, r, A, f);
        else
            line(g, "if (c%d)\n%*s    a%d = %s(a%d, (%s)%s);", r, 4 * g->ind, "", r, rd.comb, r, A, f);
    }
    char acc[24];
    if (g->lanes[r]) {
        line(g, "_Pragma(\"unroll\") for (int l = 1; l < 8; l++)");
        line(g, "    a%d[0] = %s(a%d[0], a%d[l]);", r, rd.comb, r, r);
        snprintf(acc, sizeof acc, "a%d[0]", r);
    } else {
        snprintf(acc, sizeof acc, g->wide[r] ? "a%d[u]" : "a%d", r);
    }
    Buf e = {0};
    cast_expr(&e, in->dtype, rd.fkind ? FC_FLOAT64 : FC_INT64, acc);
    if (g->wide[r]) {
        line(g, "%s v%d[V];", ctype(in->dtype), r);
        line(g, "LANES v%d[u] = %s;", r, e.oom ? "" : e.p);
    } else {
        line(g, "const %s v%d = %s;", ctype(in->dtype), r, e.oom ? "" : e.p);
    }
    if (e.oom)
        gfail(g, FC_ERR_NOMEM, "out of memory");
    mem_free(e.p);
}

/* Writes into b the index of the current point in a table over the loops of mask (row-major,
 * the highest-numbered loop fastest: tdl_pre's order), with lane u added to the vector loop's
 * index when lane. */
static void table_index(Gen *g, Buf *b, uint64_t mask, bool lane)
{
    int m = __builtin_popcountll(mask), j = 0;
    if (m == 0) {
        bput(b, "0");
        return;
    }
    for (int q = 0; q < m - 2; q++)
        bput(b, "(");
    for (int l = 0; l < g->L; l++) {
        if (!(mask >> l & 1))
            continue;
        if (j > 0)
            bput(b, " * %s + ", ext_of(g, l));
        bput(b, lane && l == g->vl ? "(i%d + u)" : "i%d", l);
        if (j > 0 && j < m - 1)
            bput(b, ")");
        j++;
    }
}

/* Instruction i read from its table (tdl_pre filled it). */
static void emit_table_read(Gen *g, int i)
{
    const FcInstr *in = &g->k->code[i];
    const char *T = ctype(in->dtype);
    const char *off = arg_i64(g, (int64_t)(g->poff[i] / fc_dtype_size(in->dtype)), "p%d", i);
    Buf e = {0};
    table_index(g, &e, g->deps[i], g->wide[i]);
    if (e.oom) {
        gfail(g, FC_ERR_NOMEM, "out of memory");
    } else if (g->wide[i]) {
        line(g, "%s v%d[V];", T, i);
        line(g, "LANES v%d[u] = ((const %s *)a.pre)[%s + %s];", i, T, off, e.p);
    } else {
        line(g, "const %s v%d = ((const %s *)a.pre)[%s + %s];", T, i, T, off, e.p);
    }
    mem_free(e.p);
}

static void emit_instr(Gen *g, int i)
{
    const FcInstr *in = &g->k->code[i];
    g->done[i] = true;
    if (!g->in_pre && g->tab[i]) {
        emit_table_read(g, i);
        return;
    }
    if (!g->in_pre && g->pre[i] && !g->inl[i])
        return;     /* read by tables only */
    switch (in->op) {
    case FC_OP_LOAD:
        emit_load(g, i);
        break;
    case FC_OP_CONST:
        line(g, "const %s v%d = %s;", ctype(in->dtype), i, arg_scalar(g, in->dtype, in->konst, "k", i, i));
        break;
    case FC_OP_IOTA:
        if (g->L == 0 || g->k->extent[in->loop] <= 1)
            line(g, "const int64 v%d = 0;", i);
        else if (g->wide[i])
            line(g, "int64 v%d[V]; LANES v%d[u] = (int64)(i%d + u);", i, i, in->loop);
        else
            line(g, "const int64 v%d = (int64)i%d;", i, in->loop);
        break;
    default:
        if (fc_op_is_reduce(in->op))
            emit_reduce(g, i);
        else
            emit_op(g, i);
        break;
    }
}

/* ---- the root: stores and root reductions ---- */

/* The output's element offset (without the vector loop's part when vectorised). */
static void out_offset(Gen *g, const char *ty, const char *name, bool skip_vl)
{
    const FcKernel *k = g->k;
    bput(&g->b, "%*sconst %s %s = %s", 4 * g->ind, "", ty, name, arg_ix(g, k->out_offset, "oo"));
    for (int l = 0; l < g->L; l++) {
        if (k->owner[l] >= 0 || k->out_strides[l] == 0 || k->extent[l] <= 1 || (skip_vl && l == g->vl))
            continue;
        bput(&g->b, " + (%s)i%d * %s", ty, l, arg_ix(g, k->out_strides[l], "os%d", l));
    }
    bput(&g->b, ";\n");
}

/* The store's scatter indices s<N>, each checked against its extent (the store's and tdl_keys'). */
static void scatter_indices(Gen *g)
{
    for (int s = 0; s < g->k->nscatter; s++) {
        const FcGather *sc = &g->k->scatter[s];
        line(g, "const int64 s%d = gix(v%d, %s, %s, %d, a.err);", s, g->sres[s], arg_i64(g, sc->extent, "sc%de", s),
             sc->wrap ? "true" : "false", sc->dim);
    }
}

/* One record applied to target t (an lvalue of the output's type: "*dst", or a sorted store's
 * "acc") as the CPU applies it: written, or-ed, or added in the type's arithmetic. */
static void apply_store(Gen *g, const char *t, const char *v)
{
    const FcKernel *k = g->k;
    FcDType ot = k->out_dtype;
    const char *OT = ctype(ot);
    if (!k->accumulate) {
        line(g, "%s = %s;", t, v);
    } else if (ot == FC_BOOL) {
        line(g, "%s = (b8)(%s | %s);", t, t, v);
    } else if (ot == FC_INT32 || ot == FC_INT64) {
        line(g, "%s = (%s)((%s)%s + (%s)%s);", t, OT, utype(ot), t, utype(ot), v);
    } else if (ot == FC_UINT8 || ot == FC_INT8 || ot == FC_INT16) {
        line(g, "%s = (%s)(uint32)((uint32)%s + (uint32)%s);", t, OT, t, v);
    } else if (ot == FC_FLOAT16 || ot == FC_BFLOAT16) {
        const char *to = ot == FC_FLOAT16 ? "f2h" : "f2bh", *from = ot == FC_FLOAT16 ? "h2f" : "bh2f";
        line(g, "%s = %s(%s(%s) + %s(%s));", t, to, from, t, from, v);
    } else {
        line(g, "%s += %s;", t, v);
    }
}

static void emit_store(Gen *g)
{
    const FcKernel *k = g->k;
    FcDType rt = k->code[g->res].dtype, ot = k->out_dtype;
    const char *OT = ctype(ot);
    const char *outp = arg_field(g, CARG_OUT, "char *", 8, NULL, NULL, "out");
    bool w = g->vec && k->out_strides[g->vl] != 0 && k->extent[g->vl] > 1;
    Buf v = {0};
    cast_expr(&v, ot, rt, opnd(g, g->res, w).s);
    if (v.oom) {
        gfail(g, FC_ERR_NOMEM, "out of memory");
        return;
    }
    if (g->mode == CUDA_TILE) {     /* the writes after the tile (close_level) */
        line(g, "tile[threadIdx.x & 31][(threadIdx.x >> 5) + kk] = %s;", v.p);
        mem_free(v.p);
        return;
    }
    if (g->mode == CUDA_SERIAL || g->mode == CUDA_OWNER || g->mode == CUDA_SORTED) {
        /* 64-bit addresses (the scattered dims may reach past 2^31); indices checked first, and
         * an index out of range stops the store, as on the CPU. */
        out_offset(g, "int64", "o", false);
        scatter_indices(g);
        bool sorted = g->mode == CUDA_SORTED;
        if (k->nscatter > 0 && !sorted) {
            line(g, "if (a.err->code != 0)");
            line(g, "    return;");
        }
        bput(&g->b, "%*s%s *%s = (%s *)%s + o", 4 * g->ind, "", OT, sorted ? "d" : "dst", OT, outp);
        for (int s = 0; s < k->nscatter; s++)
            bput(&g->b, " + s%d * %s", s, arg_i64(g, k->scatter[s].stride, "sc%ds", s));
        bput(&g->b, ";\n");
        if (sorted) {
            /* A sorted store's indices cannot fail (FcKernel.checked), and every record of the
             * thread's run has its destination: its value is kept in acc, read at the first
             * record and written after the last (close_level), each record applied as the CPU
             * applies it, so its bits. */
            line(g, "if (!dst) {");
            line(g, "    dst = d;");
            line(g, "    acc = *d;");
            line(g, "}");
        }
        apply_store(g, sorted ? "acc" : "*dst", v.p);
        mem_free(v.p);
        return;
    }
    out_offset(g, "ix_t", "o", w);
    if (!w) {
        line(g, "((%s *)%s)[o] = %s;", OT, outp, v.p);
    } else if (k->out_strides[g->vl] == 1) {
        if (rt == ot && g->wide[g->res]) {
            line(g, "stv<V>((%s *)%s + o + i%d, v%d);", OT, outp, g->vl, g->res);
        } else {
            line(g, "%s s[V];", OT);
            line(g, "LANES s[u] = %s;", v.p);
            line(g, "stv<V>((%s *)%s + o + i%d, s);", OT, outp, g->vl);
        }
    } else {
        line(g, "LANES ((%s *)%s)[o + (i%d + u) * %s] = %s;", OT, outp, g->vl,
             arg_ix(g, k->out_strides[g->vl], "os%d", g->vl), v.p);
    }
    mem_free(v.p);
}

/* The root reduction's accumulator: r (and ri, the index, for arg reductions). */
static void root_acc(Gen *g)
{
    const char *A = g->rr.fkind ? "f64" : "int64";
    if (g->rr.comb) {
        line(g, "%s r = %s;", A, g->rr.init);
    } else {
        line(g, "%s r = 0;", A);
        line(g, "int64 ri = -1;");
    }
}

static void root_fold(Gen *g)
{
    const FcKernel *k = g->k;
    const char *A = g->rr.fkind ? "f64" : "int64";
    if (g->rr.comb) {
        line(g, "r = %s(r, (%s)v%d);", g->rr.comb, A, g->res);
        return;
    }
    /* An arg reduction: the index along its one reduced loop; the first extreme stays. */
    int rl = -1;
    for (int l = 0; l < g->L; l++)
        if (g->RR >> l & 1)
            rl = l;
    line(g, "if (ri < 0 || %s((%s)v%d, r)) {", k->reduce == FC_OP_ARGMAX ? "b_argmax" : "b_argmin", A, g->res);
    line(g, "    r = (%s)v%d;", A, g->res);
    if (rl >= 0 && k->extent[rl] > 1)
        line(g, "    ri = (int64)i%d;", rl);
    else
        line(g, "    ri = 0;");
    line(g, "}");
}

/* Stores the finished root reduction (acc: the accumulator's expression). */
static void root_store(Gen *g, const char *acc, const char *accidx)
{
    const FcKernel *k = g->k;
    const char *outp = arg_field(g, CARG_OUT, "char *", 8, NULL, NULL, "out");
    Buf v = {0};
    if (g->rr.comb)
        cast_expr(&v, k->out_dtype, g->rr.fkind ? FC_FLOAT64 : FC_INT64, acc);
    else
        cast_expr(&v, k->out_dtype, FC_INT64, accidx);
    out_offset(g, "ix_t", "o", false);
    line(g, "((%s *)%s)[o] = %s;", ctype(k->out_dtype), outp, v.oom ? "" : v.p);
    if (v.oom)
        gfail(g, FC_ERR_NOMEM, "out of memory");
    mem_free(v.p);
}

static void nest_pre(Gen *g, const Nest *ns, int d)
{
    if (ns->lst >= 0 || d != 1)
        return;
    if (g->mode == CUDA_THREAD_REDUCE || g->mode == CUDA_BLOCK_REDUCE)
        root_acc(g);
}

static void nest_inner(Gen *g, const Nest *ns)
{
    if (ns->lst >= 0) {
        /* Fold the body into the reduction's accumulator(s). */
        int r = ns->lst, x = g->opv[3 * r];
        Reducer rd;
        reducer(g->k->code[r].op, g->k->code[r].src_dtype, g->k->code[r].dtype, &rd);
        const char *A = rd.fkind ? "f64" : "int64";
        if (g->lanes[r])
            line(g, "a%d[l%d] = %s(a%d[l%d], (%s)v%d);", r, r, rd.comb, r, r, A, x);
        else if (g->wide[r])
            line(g, "LANES a%d[u] = %s(a%d[u], (%s)%s);", r, rd.comb, r, A, opnd(g, x, true).s);
        else
            line(g, "a%d = %s(a%d, (%s)v%d);", r, rd.comb, r, A, x);
        return;
    }
    switch (g->mode) {
    case CUDA_THREAD:
    case CUDA_TILE:
    case CUDA_ROW:
    case CUDA_SERIAL:
    case CUDA_OWNER:
    case CUDA_SORTED:
        emit_store(g);
        break;
    case CUDA_THREAD_REDUCE:
    case CUDA_BLOCK_REDUCE:
        root_fold(g);
        break;
    }
}

static void nest_post(Gen *g, const Nest *ns, int d)
{
    if (ns->lst >= 0 || d != 1)
        return;
    const FcKernel *k = g->k;
    if (g->mode == CUDA_THREAD_REDUCE) {
        root_store(g, "r", "ri");
    } else if (g->mode == CUDA_BLOCK_REDUCE) {
        const char *A = g->rr.fkind ? "f64" : "int64";
        if (g->rr.comb)
            line(g, "r = block_reduce<%s, %s>(r);", A, g->rr.comb);
        else
            line(g, "block_argreduce<%s>(r, ri);", k->reduce == FC_OP_ARGMAX ? "true" : "false");
        line(g, "if (threadIdx.x == 0) {");
        g->ind++;
        line(g, "if (a.nsplit == 1) {");
        g->ind++;
        root_store(g, "r", "ri");
        g->ind--;
        line(g, "} else {");
        g->ind++;
        arg_field(g, CARG_PART, "char *", 8, NULL, NULL, "part");
        if (g->rr.comb) {
            line(g, "((%s *)a.part)[t * a.nsplit + blockIdx.y] = r;", A);
        } else {
            line(g, "((%s *)a.part)[2 * (t * a.nsplit + blockIdx.y)] = r;", A);
            line(g, "((int64 *)a.part)[2 * (t * a.nsplit + blockIdx.y) + 1] = ri;");
        }
        g->ind--;
        line(g, "}");
        g->ind--;
        line(g, "}");
    }
}

/* ---- the whole kernel ---- */

static const char *mode_name(CudaMode m)
{
    switch (m) {
    case CUDA_THREAD: return "a thread per output point";
    case CUDA_TILE: return "a thread per output point, in tiles of 32 x 32 read along one loop and written along another";
    case CUDA_ROW: return "a block per row of the vector loop, its reductions computed by the block";
    case CUDA_BLOCK_REDUCE: return "a root reduction, a block per output (or per share of one)";
    case CUDA_THREAD_REDUCE: return "a root reduction, a thread per output";
    case CUDA_OWNER: return "a scattered or accumulating store, a thread per point of its owner loops, the rest in loop order";
    case CUDA_SORTED:
        return "a scattered or accumulating store, its records sorted by destination, a thread per destination and "
               "point of its owner loops adding its records in loop order";
    default: return "a scattered or accumulating store, one thread in loop order";
    }
}

/* The levels of the top list's nest: how the launch binds the root loops (CudaMode). */
static void top_nest(const Gen *g, Nest *ns)
{
    *ns = (Nest){.lst = -1};
    switch (g->mode) {
    case CUDA_THREAD:
        ns->lv[ns->nlv++] = (Level){LV_GRID, g->K, -1};
        break;
    case CUDA_TILE:
        ns->lv[ns->nlv++] = (Level){LV_TILE, g->K, -1};
        break;
    case CUDA_SERIAL:
        ns->lv[ns->nlv++] = (Level){LV_SERIAL, g->K, -1};
        break;
    case CUDA_OWNER:
        ns->lv[ns->nlv++] = (Level){LV_GRID, g->O, -1};
        for (int l = 0; l < g->L; l++)
            if ((g->K & ~g->O) >> l & 1)
                ns->lv[ns->nlv++] = (Level){LV_SEQ, (uint64_t)1 << l, l};
        break;
    case CUDA_SORTED:
        ns->lv[ns->nlv++] = (Level){LV_SORTED, g->O, -1};
        ns->lv[ns->nlv++] = (Level){LV_RUN, g->R, -1};
        break;
    case CUDA_ROW:
        ns->lv[ns->nlv++] = (Level){LV_BLOCKS, g->K & ~((uint64_t)1 << g->vl), -1};
        ns->lv[ns->nlv++] = (Level){LV_THREADS_VEC, (uint64_t)1 << g->vl, g->vl};
        break;
    case CUDA_THREAD_REDUCE:
        ns->lv[ns->nlv++] = (Level){LV_GRID, g->K, -1};
        for (int l = 0; l < g->L; l++)
            if (g->RR >> l & 1)
                ns->lv[ns->nlv++] = (Level){LV_SEQ, (uint64_t)1 << l, l};
        break;
    case CUDA_BLOCK_REDUCE:
        ns->lv[ns->nlv++] = (Level){LV_BLOCKS, g->K, -1};
        for (int l = 0; l < g->L; l++)
            if (g->D >> l & 1) {
                LvKind kind = ns->nlv == 1 ? LV_SEQ_SPLIT : LV_SEQ;
                ns->lv[ns->nlv++] = (Level){kind, (uint64_t)1 << l, l};
            }
        ns->lv[ns->nlv++] = (Level){LV_THREADS_FLAT, g->T, -1};
        break;
    }
}

/* Marks in need the values that value v is computed from, itself included (precomputed ones
 * and invariants: what tdl_pre computes for v's table). */
static void pre_need(const Gen *g, int v, bool *need)
{
    if (v < 0 || need[v])
        return;
    need[v] = true;
    for (int o = 0; o < 3; o++)
        pre_need(g, g->opv[3 * v + o], need);
}

/* Marks inl[v] for precomputed value v that the kernel computes (see Gen.pre), and the
 * precomputed values it reads. */
static void need_inline(Gen *g, int v)
{
    if (v < 0 || !g->pre[v] || g->inl[v])
        return;
    g->inl[v] = true;
    for (int o = 0; o < 3; o++)
        need_inline(g, g->opv[3 * v + o]);
}

/* Which values the kernel reads from tables that tdl_pre fills (Gen.pre, tab, inl): the shared
 * precomputation (fc_kplan_pre) of the values of inner reductions' bodies that the kernel would
 * compute again along a loop they do not vary along (roi_align's coordinates and weights, over
 * (box, bin, sample), by the thread of every channel), read from tables; loads and iotas stay
 * in the kernel (a table would only copy them), and so does what the top list reads (computed
 * once per thread). No table: no tdl_pre. */
static void plan_pre(Gen *g)
{
    const FcKernel *k = g->k;
    int n = g->n;
    bool *veto = mem_malloc((size_t)n + 1), *kept = mem_malloc((size_t)n + 1), *need = mem_calloc((size_t)n + 1, 1);
    if (!veto || !kept || !need) {
        mem_free(veto);
        mem_free(kept);
        mem_free(need);
        return;     /* nothing precomputed: the same results */
    }
    /* A value of an inner reduction's body is worth a table when some loop bound around it
     * (the launch's levels outside its outermost reduction, and its reductions' own loops) is
     * not one it varies along; what the top list computes is computed once per thread. */
    Nest ns;
    top_nest(g, &ns);
    bool sorted = g->mode == CUDA_SORTED;
    for (int i = 0; i < n; i++) {
        veto[i] = false;
        if (g->list[i] < 0) {
            /* SORTED: the top list's values of a record (roi_align's weights and taps) would be
             * computed again by the thread of every owner point (every channel) */
            veto[i] = sorted && !(big(g, g->O) & ~g->deps[i]);
            continue;
        }
        uint64_t around = 0;
        int r = i;
        while (g->list[r] >= 0) {
            r = g->list[r];
            around |= g->own[r];
        }
        for (int d = 0; d < level_of(g, &ns, r); d++)
            around |= ns.lv[d].mask;
        veto[i] = !(big(g, around) & ~g->deps[i]);
    }
    fc_kplan_pre(g->kp, k, &fc_cuda_target, g->opv, veto, g->pre, g->poff, kept);
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        FcOp op = k->code[i].op;
        if (!kept[i])
            continue;
        if ((g->list[i] >= 0 || sorted) && op != FC_OP_LOAD && op != FC_OP_IOTA) {
            g->tab[i] = true;
            g->poff[i] = bytes;
            bytes += (((size_t)points(k, g->deps[i]) * fc_dtype_size(k->code[i].dtype)) + 63) & ~(size_t)63;
            g->ntab++;
        } else {
            need_inline(g, i);
        }
    }
    /* tdl_pre computes the invariants the tables need too: none may be an inner reduction (one
     * over loops of its own, which varies along none). */
    for (int i = 0; i < n; i++)
        if (g->tab[i])
            pre_need(g, i, need);
    bool ok = true;
    for (int i = 0; i < n; i++)
        ok = ok && !(need[i] && fc_op_is_reduce(k->code[i].op));
    if (!ok || g->ntab == 0) {
        memset(g->pre, 0, (size_t)n * sizeof *g->pre);
        memset(g->inl, 0, (size_t)n * sizeof *g->inl);
        memset(g->tab, 0, (size_t)n * sizeof *g->tab);
        g->ntab = 0;
        bytes = 0;
    }
    g->code->pre_bytes = bytes;
    mem_free(veto);
    mem_free(kept);
    mem_free(need);
}

static void emit_run(Gen *g)
{
    Nest ns;
    top_nest(g, &ns);
    line(g, "template <int V> __device__ __forceinline__ void run(const Args &a)");
    line(g, "{");
    g->ind++;
    nest_level(g, &ns, 0);
    g->ind--;
    line(g, "}");
}

/* tdl_finish: combines the partials of a split block reduction, a block per output: each thread
 * the parts s = threadIdx.x (mod blockDim.x) in split order, then the block's tree (the order
 * fixed by nsplit and the block size alone). */
static void emit_finish(Gen *g)
{
    const char *A = g->rr.fkind ? "f64" : "int64";
    line(g, "extern \"C\" __global__ void __launch_bounds__(256) tdl_finish(const Args a)");
    line(g, "{");
    g->ind++;
    line(g, "for (int64 t = blockIdx.x; t < a.npts; t += gridDim.x) {");
    g->ind++;
    root_acc(g);
    if (g->rr.comb) {
        line(g, "const %s *p = (const %s *)a.part + t * a.nsplit;", A, A);
        line(g, "for (int64 s = threadIdx.x; s < a.nsplit; s += blockDim.x)");
        line(g, "    r = %s(r, p[s]);", g->rr.comb);
        line(g, "r = block_reduce<%s, %s>(r);", A, g->rr.comb);
    } else {
        const char *mx = g->k->reduce == FC_OP_ARGMAX ? "true" : "false";
        line(g, "const %s *p = (const %s *)a.part + 2 * t * a.nsplit;", A, A);
        line(g, "for (int64 s = threadIdx.x; s < a.nsplit; s += blockDim.x)");
        line(g, "    arg_comb<%s>(r, ri, p[2 * s], ((const int64 *)p)[2 * s + 1]);", mx);
        line(g, "block_argreduce<%s>(r, ri);", mx);
    }
    line(g, "if (threadIdx.x == 0) {");
    g->ind++;
    zero_loops(g, g->K & ~big(g, g->K));
    if (big(g, g->K)) {
        line(g, "ix_t q = (ix_t)t;");
        decode(g, "q", big(g, g->K), false);
    }
    root_store(g, "r", "ri");
    g->ind--;
    line(g, "}");
    g->ind--;
    line(g, "}");
    g->ind--;
    line(g, "}");
}

/* tdl_pre: fills the tables the kernel reads (Gen.tab), a grid-stride loop per domain, each
 * point computing what its tables need in code order, as the kernel would have (same ops, same
 * bits). It runs before the kernel, in the same stream. */
static void emit_pre(Gen *g)
{
    const FcKernel *k = g->k;
    int n = g->n;
    bool *wide = g->wide, *flat = mem_calloc((size_t)n + 1, 1), *need = mem_calloc((size_t)n + 1, 1);
    uint64_t *doms = mem_calloc((size_t)n + 1, sizeof *doms);
    if (!flat || !need || !doms) {
        mem_free(flat);
        mem_free(need);
        mem_free(doms);
        gfail(g, FC_ERR_NOMEM, "out of memory");
        return;
    }
    g->wide = flat;     /* one point per thread: nothing is an array of V */
    g->in_pre = true;
    line(g, "extern \"C\" __global__ void __launch_bounds__(256) tdl_pre(const Args a)");
    line(g, "{");
    g->ind++;
    for (int i = 0; i < n; i++)
        if (g->tab[i])
            pre_need(g, i, need);
    for (int i = 0; i < n; i++)
        if (need[i] && g->deps[i] == 0)
            emit_instr(g, i);
    int nd = 0;
    for (int i = 0; i < n; i++) {
        if (!g->tab[i])
            continue;
        int d = 0;
        while (d < nd && doms[d] != g->deps[i])
            d++;
        if (d < nd)
            continue;
        uint64_t D = doms[nd++] = g->deps[i];
        memset(need, 0, (size_t)n);
        Buf c = {0};
        bput(&c, "// the tables over (");
        for (int l = 0; l < g->L; l++)
            if (D >> l & 1)
                bput(&c, "%si%d", l == __builtin_ctzll(D) ? "" : " ", l);
        bput(&c, "):");
        for (int j = 0; j < n; j++)
            if (g->tab[j] && g->deps[j] == D) {
                pre_need(g, j, need);
                bput(&c, " v%d", j);
            }
        line(g, "%s", c.oom ? "//" : c.p);
        mem_free(c.p);
        int64_t pts = points(k, D);
        if (pts > g->code->pre_pts)
            g->code->pre_pts = pts;
        line(g, "for (int64 t = (int64)blockIdx.x * blockDim.x + threadIdx.x; t < %s; t += (int64)gridDim.x * blockDim.x) {",
             arg_i64(g, pts, "pn%d", i));
        g->ind++;
        line(g, "ix_t q = (ix_t)t;");
        decode(g, "q", D, true);
        for (int j = 0; j < n; j++)
            if (need[j] && g->deps[j] != 0)
                emit_instr(g, j);
        for (int j = 0; j < n; j++)
            if (g->tab[j] && g->deps[j] == D) {
                const char *T = ctype(k->code[j].dtype);
                Buf e = {0};
                table_index(g, &e, D, false);
                line(g, "((%s *)a.pre)[%s + %s] = v%d;", T,
                     arg_i64(g, (int64_t)(g->poff[j] / fc_dtype_size(k->code[j].dtype)), "p%d", j), e.p ? e.p : "0", j);
                if (e.oom)
                    gfail(g, FC_ERR_NOMEM, "out of memory");
                mem_free(e.p);
            }
        g->ind--;
        line(g, "}");
    }
    g->ind--;
    line(g, "}");
    g->in_pre = false;
    g->wide = wide;
    mem_free(flat);
    mem_free(need);
    mem_free(doms);
}

/* SORTED's scratch (uint32 words) and how its kernels find their parts; after the kernel's
 * Args. A run's start is its place in its tile of 2048 keys plus the tile's start. */
static const char sort_scratch[] =
    "// The sort's scratch, uint32 words: the runs' starts within their tiles [nkeys + 1] (first the\n"
    "// counts), the fill's cursors [nkeys], tdl_scan's finished blocks [1], the tiles' starts\n"
    "// [tiles], each record's key [nrec], the runs [nrec]. A tile is 2048 keys (256 threads x 8).\n"
    "#define SORT_TILES(a) (((a).nkeys + 1 + 2047) >> 11)\n"
    "#define SORT_KEYS(a) ((uint32 *)(a).scr + 2 * (a).nkeys + 2 + SORT_TILES(a))\n"
    "#define SORT_RUNS(a) (SORT_KEYS(a) + (a).nrec)\n"
    "#define RUN_START(a, k) (((const uint32 *)(a).scr)[k] + ((const uint32 *)(a).scr)[2 * (a).nkeys + 2 + ((k) >> 11)])\n\n";

/* SORTED's fixed kernels (emit_sort): tdl_scan, tdl_fill, tdl_order. tdl_scan runs on blocks of
 * 256 threads (the tile is 2048 keys). */
static const char *const sort_kernels[3] = {
    "extern \"C\" __global__ void __launch_bounds__(256) tdl_scan(const Args a)\n"
    "{\n"
    "    // Each tile's counts to their exclusive sums in place (8 a thread, then the threads'\n"
    "    // sums in shared memory), the tile's sum to its start; the last block to finish turns\n"
    "    // the tiles' sums into their starts. Integers: exact in any order.\n"
    "    __shared__ uint32 sh[256];\n"
    "    __shared__ bool last;\n"
    "    uint32 *cnt = (uint32 *)a.scr, *done = cnt + 2 * a.nkeys + 1, *tile = done + 1;\n"
    "    const int64 n = a.nkeys + 1, nt = SORT_TILES(a);\n"
    "    for (int64 b = blockIdx.x; b < nt; b += gridDim.x) {\n"
    "        const int64 lo = (b << 11) + threadIdx.x * 8;\n"
    "        uint32 x[8], s = 0;\n"
    "        for (int j = 0; j < 8; j++) {\n"
    "            x[j] = lo + j < n ? cnt[lo + j] : 0;\n"
    "            s += x[j];\n"
    "        }\n"
    "        uint32 acc = block_exscan(sh, s);\n"
    "        for (int j = 0; j < 8; j++)\n"
    "            if (lo + j < n) {\n"
    "                cnt[lo + j] = acc;\n"
    "                acc += x[j];\n"
    "            }\n"
    "        if (threadIdx.x == 255)\n"
    "            tile[b] = acc;\n"
    "    }\n"
    "    __threadfence();\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0)\n"
    "        last = atomicAdd(done, 1u) == gridDim.x - 1;\n"
    "    __syncthreads();\n"
    "    if (!last)\n"
    "        return;\n"
    "    __threadfence();\n"
    "    uint32 carry = 0;\n"
    "    for (int64 lo = 0; lo < nt; lo += 256) {\n"
    "        const int64 i = lo + threadIdx.x;\n"
    "        const uint32 x = i < nt ? ((volatile uint32 *)tile)[i] : 0;\n"
    "        const uint32 e = block_exscan(sh, x);\n"
    "        if (i < nt)\n"
    "            tile[i] = carry + e;\n"
    "        carry += sh[255];\n"
    "    }\n"
    "}\n",
    "extern \"C\" __global__ void __launch_bounds__(256) tdl_fill(const Args a)\n"
    "{\n"
    "    uint32 *cur = (uint32 *)a.scr + a.nkeys + 1, *rk = SORT_KEYS(a), *run = SORT_RUNS(a);\n"
    "    for (int64 t = (int64)blockIdx.x * blockDim.x + threadIdx.x; t < a.nrec; t += (int64)gridDim.x * blockDim.x) {\n"
    "        const uint32 key = rk[t];\n"
    "        if (key < a.nkeys)\n"
    "            run[RUN_START(a, key) + atomicAdd(&cur[key], 1u)] = (uint32)t;\n"
    "    }\n"
    "}\n",
    "extern \"C\" __global__ void __launch_bounds__(256) tdl_order(const Args a)\n"
    "{\n"
    "    uint32 *run = SORT_RUNS(a);\n"
    "    for (int64 t = (int64)blockIdx.x * blockDim.x + threadIdx.x; t < a.nkeys; t += (int64)gridDim.x * blockDim.x) {\n"
    "        const uint32 lo = RUN_START(a, t), hi = RUN_START(a, t + 1);\n"
    "        for (uint32 j = lo + 1; j < hi; j++) {     // insertion: the atomics leave runs nearly in order\n"
    "            const uint32 x = run[j];\n"
    "            uint32 i = j;\n"
    "            for (; i > lo && run[i - 1] > x; i--)\n"
    "                run[i] = run[i - 1];\n"
    "            run[i] = x;\n"
    "        }\n"
    "    }\n"
    "}\n",
};

/* SORTED's first kernels, each ending at ends[e] of g->b (e: 0 tdl_keys, 1 tdl_scan, 2 tdl_fill,
 * 3 tdl_order). tdl_keys computes each record's key (the destination's terms, mixed radix), or
 * nkeys for a record the gate leaves out, and counts the records of each key; tdl_scan turns
 * the counts into the first record of each key's run (sort_scratch: in tiles of 2048 keys, the
 * tiles' sums by the last block); tdl_fill places each record in its
 * key's run (the place within the run taken by an integer atomic, so in any order); tdl_order
 * sorts each run by record number, which is loop order: the order is fixed however the atomics
 * fell. */
static void emit_sort(Gen *g, size_t ends[4])
{
    const FcKernel *k = g->k;
    int n = g->n;
    bool *wide = g->wide, *flat = mem_calloc((size_t)n + 1, 1), *need = mem_calloc((size_t)n + 1, 1);
    bool *one = mem_calloc((size_t)n + 1, 1);
    if (!flat || !need || !one) {
        mem_free(flat);
        mem_free(need);
        mem_free(one);
        gfail(g, FC_ERR_NOMEM, "out of memory");
        return;
    }
    g->wide = flat;
    g->in_pre = true;   /* every value computed, none read from a table */
    for (int s = 0; s < k->nscatter; s++) {
        record_value(g, g->sres[s], one);
        for (int i = 0; i < n; i++)
            need[i] |= one[i];
    }
    for (int v = 0; v < 2; v++) {
        int x = v ? g->gate_w : g->gate_c;
        if (x < 0)
            continue;
        record_value(g, x, one);
        for (int i = 0; i < n; i++)
            need[i] |= one[i];
    }
    line(g, "extern \"C\" __global__ void __launch_bounds__(256) tdl_keys(const Args a)");
    line(g, "{");
    g->ind++;
    line(g, "uint32 *cnt = (uint32 *)a.scr, *rk = SORT_KEYS(a);");
    for (int i = 0; i < n; i++)
        if (need[i] && g->deps[i] == 0)
            emit_instr(g, i);
    line(g, "for (int64 t = (int64)blockIdx.x * blockDim.x + threadIdx.x; t < a.nrec; t += (int64)gridDim.x * blockDim.x) {");
    g->ind++;
    line(g, "ix_t q = (ix_t)t;");
    zero_loops(g, g->R & ~big(g, g->R));
    decode(g, "q", big(g, g->R), true);
    for (int i = 0; i < n; i++)
        if (need[i] && g->deps[i] != 0)
            emit_instr(g, i);
    scatter_indices(g);
    line(g, "int64 key = 0;");
    for (int j = 0; j < g->nterm; j++) {
        const FcStoreTerm *t = &g->term[j];
        if (t->loop >= 0)
            line(g, "key = key * %s + (int64)i%d;", ext_of(g, t->loop), t->loop);
        else
            line(g, "key = key * %s + s%d;", arg_i64(g, t->extent, "sc%de", t->scatter), t->scatter);
    }
    if (g->gate_c >= 0 && g->gate_w >= 0) {
        line(g, "if (!v%d && fabs((f64)v%d) <= 1.7976931348623157e308)     // adds a zero: left out", g->gate_c,
             g->gate_w);
        line(g, "    key = a.nkeys;");
    } else if (g->gate_c >= 0) {
        line(g, "if (!v%d)     // adds a zero: left out", g->gate_c);
        line(g, "    key = a.nkeys;");
    }
    line(g, "rk[t] = (uint32)key;");
    line(g, "if (key < a.nkeys)");
    line(g, "    atomicAdd(&cnt[key], 1u);");
    g->ind--;
    line(g, "}");
    g->ind--;
    line(g, "}");
    ends[0] = g->b.n;
    for (int e = 0; e < 3; e++) {
        bput(&g->b, "\n%s", sort_kernels[e]);
        ends[e + 1] = g->b.n;
    }
    g->in_pre = false;
    g->wide = wide;
    mem_free(flat);
    mem_free(need);
    mem_free(one);
}

static void gen_free(Gen *g)
{
    fc_kplan_free(g->own_plan);
    mem_free(g->pre);
    mem_free(g->tab);
    mem_free(g->inl);
    mem_free(g->poff);
    mem_free(g->wide);
    mem_free(g->coop);
    mem_free(g->lanes);
    mem_free(g->done);
    mem_free(g->b.p);
    mem_free(g->args);
    mem_free(g->refs);
}

void fc_cuda_split(const CudaCode *c, int64_t npts, int64_t *nsplit, int64_t *per)
{
    enum { SPLIT_TARGET = 1024 };   /* blocks a split aims for: a few per SM of a large GPU */
    *nsplit = 1;
    *per = c->split_ext;
    if (c->mode != CUDA_BLOCK_REDUCE || npts < 1 || npts >= SPLIT_TARGET || c->nred < (int64_t)c->block * 64)
        return;
    int64_t a = (SPLIT_TARGET + npts - 1) / npts, b = (c->nred + (int64_t)c->block * 32 - 1) / ((int64_t)c->block * 32);
    int64_t n = a < b ? a : b;
    if (n > c->split_ext)
        n = c->split_ext;
    if (n > SPLIT_TARGET)
        n = SPLIT_TARGET;
    if (n > 1) {
        *nsplit = n;
        *per = (c->split_ext + n - 1) / n;
    }
}

void fc_cuda_code_free(CudaCode *c)
{
    if (!c)
        return;
    mem_free(c->src);
    mem_free(c->args);
    memset(c, 0, sizeof *c);
}

FcStatus fc_cuda_codegen(const FcKernel *k, CudaCode *out, FcError *err)
{
    memset(out, 0, sizeof *out);
    out->arg_npts = out->arg_nsplit = out->arg_per = -1;
    Gen g = {.k = k, .err = err, .code = out, .flat_first = -1};
    if (analyse(&g) != FC_OK) {
        gen_free(&g);
        return g.st;
    }
    if (k->reduce != FC_OP_NONE && !reducer(k->reduce, k->code[g.res].dtype, k->out_dtype, &g.rr)) {
        gfail(&g, FC_ERR_TYPE, "cuda kernel: %s of %s into %s is not supported", fc_op_name(k->reduce),
              fc_dtype_name(k->code[g.res].dtype), fc_dtype_name(k->out_dtype));
        gen_free(&g);
        return g.st;
    }
    if ((k->reduce == FC_OP_ARGMAX || k->reduce == FC_OP_ARGMIN)) {
        int nr = 0;
        for (int l = 0; l < k->nloop; l++)
            nr += k->owner[l] < 0 && k->reduced[l];
        if (nr > 1) {
            gfail(&g, FC_ERR_VALUE, "cuda kernel: an arg reduction over %d loops", nr);
            gen_free(&g);
            return g.st;
        }
    }
    plan(&g);
    if (!g.st)
        plan_pre(&g);
    /* The fields every kernel has, first: the pointers, then the launch-time counts. */
    arg_field(&g, CARG_OUT, "char *", 8, NULL, NULL, "out");
    arg_field(&g, CARG_ERR, "Err *", 8, NULL, NULL, "err");
    if (g.ntab > 0)
        arg_field(&g, CARG_PRE, "char *", 8, NULL, NULL, "pre");
    arg_i64(&g, out->npts, "npts");
    out->arg_npts = g.nargs - 1;
    if (g.mode == CUDA_SORTED) {
        arg_field(&g, CARG_SCRATCH, "char *", 8, NULL, NULL, "scr");
        arg_i64(&g, g.nkeys, "nkeys");
        arg_i64(&g, g.nrec, "nrec");
        arg_i64(&g, g.nown, "nown");
    }
    if (g.mode == CUDA_BLOCK_REDUCE) {
        arg_field(&g, CARG_PART, "char *", 8, NULL, NULL, "part");
        arg_i64(&g, 1, "nsplit");
        out->arg_nsplit = g.nargs - 1;
        arg_i64(&g, out->split_ext, "per");
        out->arg_per = g.nargs - 1;
        arg_i64(&g, out->split_ext, "nred");
        arg_i64(&g, points(k, g.T), "nt");
        out->part_elem = g.rr.comb ? 8 : 16;
    }
    emit_run(&g);
    size_t run_end = g.b.n;     /* tdl_finish follows run in g.b */
    if (g.mode == CUDA_BLOCK_REDUCE) {
        line(&g, "%s", "");
        emit_finish(&g);
    }
    size_t pre_start = g.b.n;   /* tdl_pre follows it */
    if (g.ntab > 0) {
        line(&g, "%s", "");
        emit_pre(&g);
    }
    size_t sort_start = g.b.n, sort_end[4];     /* then SORTED's kernels */
    for (int e = 0; e < 4; e++)
        sort_end[e] = sort_start;
    if (g.mode == CUDA_SORTED) {
        line(&g, "%s", "");
        emit_sort(&g, sort_end);
    }
    if (!g.st && g.b.oom)
        gfail(&g, FC_ERR_NOMEM, "out of memory");
    if (g.st) {
        gen_free(&g);
        return g.st;
    }
    /* Lay out the fields as C does (natural alignment), then assemble the source. */
    size_t off = 0;
    for (int i = 0; i < g.nargs; i++) {
        CudaArg *a = &g.args[i];
        off = (off + (size_t)a->size - 1) / (size_t)a->size * (size_t)a->size;
        a->offset = off;
        off += (size_t)a->size;
    }
    out->args_size = (off + 7) / 8 * 8;
    Buf s = {0};
    bput(&s, "// ---- the kernel: %s; %d loop%s, %s indices", mode_name(g.mode), k->nloop, k->nloop == 1 ? "" : "s",
         g.idx32 ? "32-bit" : "64-bit");
    if (g.vec)
        bput(&s, "; tdl_v takes %d points along i%d per thread", g.V, g.vl);
    if (g.ntab > 0)
        bput(&s, "; %d value%s read from tables that tdl_pre fills first", g.ntab, g.ntab == 1 ? "" : "s");
    bput(&s, " ----\n");
    bput(&s, "typedef %s ix_t;\n", g.idx32 ? "int32" : "int64");
    bput(&s, "struct Args {\n");
    for (int i = 0; i < g.nargs; i++) {
        const CudaArg *a = &g.args[i];
        bool ptr = a->ctype[strlen(a->ctype) - 1] == '*';
        bput(&s, "    %s%s%s;\n", a->ctype, ptr ? "" : " ", a->name);
    }
    bput(&s, "};\n\n");
    if (g.mode == CUDA_SORTED)
        bput(&s, "%s", sort_scratch);
    /* The head, then each entry point's text (fc_cuda_entries_source puts them together). */
    bput(&s, "%.*s", (int)run_end, g.b.p ? g.b.p : "");
    out->head = s.n;
    out->ent_off[CUDA_ENTRY_FINISH] = s.n;
    bput(&s, "%.*s", (int)(pre_start - run_end), g.b.p ? g.b.p + run_end : "");
    out->ent_len[CUDA_ENTRY_FINISH] = s.n - out->ent_off[CUDA_ENTRY_FINISH];
    out->ent_off[CUDA_ENTRY_PRE] = s.n;
    bput(&s, "%.*s", (int)(sort_start - pre_start), g.b.p ? g.b.p + pre_start : "");
    out->ent_len[CUDA_ENTRY_PRE] = s.n - out->ent_off[CUDA_ENTRY_PRE];
    for (int e = 0; e < 4; e++) {
        size_t from = e ? sort_end[e - 1] : sort_start;
        out->ent_off[CUDA_ENTRY_KEYS + e] = s.n;
        bput(&s, "%.*s", (int)(sort_end[e] - from), g.b.p ? g.b.p + from : "");
        out->ent_len[CUDA_ENTRY_KEYS + e] = s.n - out->ent_off[CUDA_ENTRY_KEYS + e];
    }
    int lb = g.mode == CUDA_SERIAL ? 1 : 256;
    out->ent_off[CUDA_ENTRY_S] = s.n;
    bput(&s, "\nextern \"C\" __global__ void __launch_bounds__(%d) tdl_s(const Args a) { run<1>(a); }\n", lb);
    out->ent_len[CUDA_ENTRY_S] = s.n - out->ent_off[CUDA_ENTRY_S];
    out->ent_off[CUDA_ENTRY_V] = s.n;
    if (g.vec)
        bput(&s, "extern \"C\" __global__ void __launch_bounds__(%d) tdl_v(const Args a) { run<%d>(a); }\n", lb, g.V);
    out->ent_len[CUDA_ENTRY_V] = s.n - out->ent_off[CUDA_ENTRY_V];
    mem_free(g.b.p);
    g.b.p = NULL;
    /* The prelude it uses in front. */
    Buf full = {0};
    if (!s.oom)
        put_prelude(&full, s.p);
    size_t pre = full.n;
    bput(&full, "%s", s.p ? s.p : "");
    mem_free(s.p);
    full.oom |= s.oom;
    s = full;
    out->head += pre;
    for (int e = 0; e < CUDA_NENTRY; e++)
        out->ent_off[e] += pre;
    if (s.oom) {
        mem_free(s.p);
        gen_free(&g);
        gfail(&g, FC_ERR_NOMEM, "out of memory");
        return FC_ERR_NOMEM;
    }
    out->src = s.p;
    out->len = s.n;
    out->args = g.args;
    out->nargs = g.nargs;
    g.args = NULL;
    gen_free(&g);
    return FC_OK;
}

const char *fc_cuda_entry_name(CudaEntry e)
{
    static const char *const names[CUDA_NENTRY] = {"tdl_s", "tdl_v", "tdl_finish", "tdl_pre", "tdl_keys", "tdl_scan",
                                                  "tdl_fill", "tdl_order"};
    return names[e];
}

char *fc_cuda_entries_source(const CudaCode *c, unsigned entries)
{
    static const CudaEntry order[CUDA_NENTRY] = {CUDA_ENTRY_FINISH, CUDA_ENTRY_PRE,  CUDA_ENTRY_KEYS,
                                                 CUDA_ENTRY_SCAN,   CUDA_ENTRY_FILL, CUDA_ENTRY_ORDER,
                                                 CUDA_ENTRY_S,      CUDA_ENTRY_V};   /* as in src */
    size_t n = c->head;
    if (!c->src || entries == 0 || entries >> CUDA_NENTRY)
        return NULL;
    for (int e = 0; e < CUDA_NENTRY; e++) {
        if (!(entries >> e & 1))
            continue;
        if (c->ent_len[e] == 0)
            return NULL;
        n += c->ent_len[e];
    }
    char *s = mem_malloc(n + 1);
    if (!s)
        return NULL;
    memcpy(s, c->src, c->head);
    n = c->head;
    for (int i = 0; i < CUDA_NENTRY; i++)
        if (entries >> order[i] & 1) {
            memcpy(s + n, c->src + c->ent_off[order[i]], c->ent_len[order[i]]);
            n += c->ent_len[order[i]];
        }
    s[n] = 0;
    return s;
}

/* ---- text for --dump-cuda ---- */

char *fc_cuda_kernel_dump(const FcKernel *k)
{
    CudaCode c;
    FcError err;
    Buf b = {0};
    FcStatus st = fc_cuda_codegen(k, &c, &err);
    if (st != FC_OK) {
        bput(&b, "// cuda: %s\n", err.msg);
        return b.oom ? (mem_free(b.p), NULL) : b.p;
    }
    bput(&b, "%s", c.src);
    bput(&b, "// launch: %d thread%s per block; %lld %s", c.block, c.block == 1 ? "" : "s", (long long)c.npts,
         c.mode == CUDA_ROW ? "rows" : c.mode == CUDA_THREAD_REDUCE || c.mode == CUDA_BLOCK_REDUCE ? "outputs"
                                                                                                   : "points");
    if (c.vec)
        bput(&b, " (%lld with tdl_v when i%d's extent is a multiple of %d)", (long long)c.npts_v, c.vl, c.V);
    if (c.mode == CUDA_BLOCK_REDUCE)
        bput(&b, ", %lld reduced each", (long long)c.nred);
    if (c.mode == CUDA_SORTED)
        bput(&b, " (%lld destinations x the owner points), %lld records", (long long)c.nkeys, (long long)c.nrec);
    bput(&b, "\n// args:");
    int col = 9;
    for (int i = 0; i < c.nargs; i++) {
        const CudaArg *a = &c.args[i];
        if (a->kind != CARG_VAL)
            continue;
        int w = (int)(strlen(a->name) + strlen(a->shown) + 4);
        if (col + w > 100) {
            bput(&b, "\n//      ");
            col = 9;
        }
        bput(&b, " %s = %s%s", a->name, a->shown, i + 1 < c.nargs ? "," : "");
        col += w;
    }
    bput(&b, "\n");
    fc_cuda_code_free(&c);
    if (b.oom) {
        mem_free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- the matrix product ---- */

char *fc_cuda_matmul_source(FcDType dt)
{
    /* float32 accumulates in float32 and float64 in double, as the CPU's does; integers in
     * unsigned arithmetic (wrapping). Each output element sums its products in k order. */
    const char *T = ctype(dt), *A = dt == FC_FLOAT32 ? "f32" : dt == FC_FLOAT64 ? "f64" : utype(dt);
    Buf b = {0};
    bput(&b,
         "// ---- the batched matrix product C[b] = A[b] @ B[b] (%s): 16 x 16 tiles through shared memory ----\n"
         "struct MmArgs {\n"
         "    const char *a, *b;\n"
         "    char *c;\n"
         "    int64 m, n, k, nb, nbatch;\n"
         "    int64 ao, ars, acs, bo, brs, bcs, co, crs, ccs;\n"
         "    int64 batch[%d], abs_[%d], bbs[%d], cbs[%d];\n"
         "};\n"
         "\n"
         "extern \"C\" __global__ void __launch_bounds__(256) tdl_mm(const MmArgs p)\n"
         "{\n"
         "    __shared__ %s ta[16][17], tb[16][17];\n"
         "    const int tx = threadIdx.x, ty = threadIdx.y;\n"
         "    for (int64 bt = blockIdx.z; bt < p.nb; bt += gridDim.z) {\n"
         "        int64 ao = p.ao, bo = p.bo, co = p.co, q = bt;\n"
         "        for (int d = (int)p.nbatch - 1; d >= 0; d--) {\n"
         "            const int64 i = q %% p.batch[d];\n"
         "            q /= p.batch[d];\n"
         "            ao += i * p.abs_[d];\n"
         "            bo += i * p.bbs[d];\n"
         "            co += i * p.cbs[d];\n"
         "        }\n"
         "        for (int64 m0 = (int64)blockIdx.y * 16; m0 < p.m; m0 += (int64)gridDim.y * 16)\n"
         "            for (int64 n0 = (int64)blockIdx.x * 16; n0 < p.n; n0 += (int64)gridDim.x * 16) {\n"
         "                const int64 row = m0 + ty, col = n0 + tx;\n"
         "                %s acc = 0;\n"
         "                for (int64 k0 = 0; k0 < p.k; k0 += 16) {\n"
         "                    ta[ty][tx] = row < p.m && k0 + tx < p.k ? (%s)((const %s *)p.a)[ao + row * p.ars + (k0 + tx) * p.acs] : 0;\n"
         "                    tb[ty][tx] = k0 + ty < p.k && col < p.n ? (%s)((const %s *)p.b)[bo + (k0 + ty) * p.brs + col * p.bcs] : 0;\n"
         "                    __syncthreads();\n"
         "                    const int kk = p.k - k0 < 16 ? (int)(p.k - k0) : 16;\n"
         "                    for (int j = 0; j < kk; j++)\n"
         "                        acc = acc + ta[ty][j] * tb[j][tx];\n"
         "                    __syncthreads();\n"
         "                }\n"
         "                if (row < p.m && col < p.n)\n"
         "                    ((%s *)p.c)[co + row * p.crs + col * p.ccs] = (%s)acc;\n"
         "            }\n"
         "    }\n"
         "}\n",
         T, FC_MAX_DIMS, FC_MAX_DIMS, FC_MAX_DIMS, FC_MAX_DIMS, A, A, A, T, A, T, T, T);
    Buf full = {0};
    if (!b.oom) {
        put_prelude(&full, b.p);
        bput(&full, "%s", b.p);
    }
    mem_free(b.p);
    if (b.oom || full.oom) {
        mem_free(full.p);
        return NULL;
    }
    return full.p;
}
