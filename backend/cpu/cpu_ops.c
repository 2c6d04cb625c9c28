/* cpu_ops.c — the elementwise operations of scheduled kernels, one function per op and dtype,
 * each a plain loop over one register chunk.
 *
 * Every function is generated from the rows of fcdim/ops.def (one per op and dtype class,
 * instantiated below per dtype), and every loop has the shape
 * `for (i = 0; i < n; i++) d[i] = f(a[i], b[i])` over restrict pointers, written twice: once with
 * the trip count FC_CHUNK, which GCC vectorises even at -O2 (its "very cheap" cost model takes
 * only loops that need no scalar epilogue), and once for the shorter chunks at the ends of rows. Semantics are PyTorch's CPU kernels: integer
 * arithmetic wraps (done in unsigned types, so it is never undefined behaviour), floor division
 * and remainder follow Python's signs, min/max propagate NaN, bool is a byte holding 0 or 1.
 * exp, log, tanh, the trigonometric functions, erf and their kin (the ops torch computes with its
 * vector functions, SLEEF's) are cpu_math.h's and its siblings', torch's bits, not libm's. Depends
 * on cpu_internal.h, the cpu_math headers and libm only. */
#include "cpu_internal.h"
#include "cpu_math.h"
#include "cpu_math_arc.h"
#include "cpu_math_erf.h"
#include "cpu_math_trig.h"

#include <math.h>
#include <string.h>

#define OP_PARAMS void *restrict dv, const void *restrict av, const void *restrict bv, const void *restrict cv, int n

/* libm's name for a function at each float type. */
#define MATH_f32(fn) fn##f
#define MATH_f64(fn) fn

/* NaN-propagating minimum and maximum, in a form GCC turns into compare-and-blend. */
#define NAN_MIN(x, y) ((y) != (y) ? (y) : (x) != (x) ? (x) : (x) < (y) ? (x) : (y))
#define NAN_MAX(x, y) ((y) != (y) ? (y) : (x) != (x) ? (x) : (x) > (y) ? (x) : (y))

/* CAST(X): X(dst sfx, dst type, src sfx, src type, expr). To bool is != 0 (NaN is true); float
 * to int is C's conversion in range and INT*_MIN outside it; int64 to int32 wraps. */
#define CASTS(X)                                                                                   \
    X(b, uint8_t, i32, int32_t, x != 0)                                                            \
    X(b, uint8_t, i64, int64_t, x != 0)                                                            \
    X(b, uint8_t, f32, float, x != 0)                                                              \
    X(b, uint8_t, f64, double, x != 0)                                                             \
    X(i32, int32_t, b, uint8_t, x)                                                                 \
    X(i32, int32_t, i64, int64_t, (uint32_t)(uint64_t)x)                                           \
    X(i32, int32_t, f32, float, cpu_f64_to_i32(x))                                                 \
    X(i32, int32_t, f64, double, cpu_f64_to_i32(x))                                                \
    X(i64, int64_t, b, uint8_t, x)                                                                 \
    X(i64, int64_t, i32, int32_t, x)                                                               \
    X(i64, int64_t, f32, float, cpu_f64_to_i64(x))                                                 \
    X(i64, int64_t, f64, double, cpu_f64_to_i64(x))                                                \
    X(f32, float, b, uint8_t, x)                                                                   \
    X(f32, float, i32, int32_t, x)                                                                 \
    X(f32, float, i64, int64_t, x)                                                                 \
    X(f32, float, f64, double, x)                                                                  \
    X(f64, double, b, uint8_t, x)                                                                  \
    X(f64, double, i32, int32_t, x)                                                                \
    X(f64, double, i64, int64_t, x)                                                                \
    X(f64, double, f32, float, x)

/* Casts to and from the narrow dtypes (uint8, int8, int16, float16, bfloat16), every pair: a
 * value is read as a C number (float16 and bfloat16 widened to float32, exactly) and written as
 * the other casts are, floats to the narrow integers through int32 as PyTorch's CPU casts go
 * (300.0 -> uint8 44, 1e10 -> 0), anything to float16 or bfloat16 through float32 (double
 * rounding, as c10::Half(float) gives for a double). The lists: X(..., sfx, C type, category). */
#define OLD_DTYPES(X)                                                                              \
    X(b, uint8_t, B) X(i32, int32_t, I) X(i64, int64_t, L) X(f32, float, F) X(f64, double, F)
#define NEW_DTYPES(X) X(u8, uint8_t, I) X(i8, int8_t, I) X(i16, int16_t, I) X(f16, uint16_t, H) X(bf16, uint16_t, BH)
/* The same lists with leading arguments, for use inside an expansion of the ones above. */
#define OLD_DTYPES_WITH(X, ...)                                                                    \
    X(__VA_ARGS__, b, uint8_t, B) X(__VA_ARGS__, i32, int32_t, I) X(__VA_ARGS__, i64, int64_t, L)  \
    X(__VA_ARGS__, f32, float, F) X(__VA_ARGS__, f64, double, F)
#define NEW_DTYPES_WITH(X, ...)                                                                    \
    X(__VA_ARGS__, u8, uint8_t, I) X(__VA_ARGS__, i8, int8_t, I) X(__VA_ARGS__, i16, int16_t, I)   \
    X(__VA_ARGS__, f16, uint16_t, H) X(__VA_ARGS__, bf16, uint16_t, BH)
#define RD_B(x) (x)
#define RD_I(x) (x)
#define RD_L(x) (x)
#define RD_F(x) (x)
#define RD_H(x) fc_f16_to_f32(x)
#define RD_BH(x) fc_bf16_to_f32(x)
#define FL_B 0
#define FL_I 0
#define FL_L 0
#define FL_F 1
#define FL_H 1
#define FL_BH 1
#define WR_B(DT, fl, v) ((v) != 0)
#define WR_I(DT, fl, v) ((fl) ? (DT)(uint32_t)cpu_f64_to_i32(v) : (DT)(uint64_t)(int64_t)(v))
#define WR_L(DT, fl, v) ((fl) ? cpu_f64_to_i64(v) : (int64_t)(v))
#define WR_F(DT, fl, v) ((DT)(v))
#define WR_H(DT, fl, v) fc_f32_to_f16((float)(v))
#define WR_BH(DT, fl, v) fc_f32_to_bf16((float)(v))

/* ---- scalar helpers ---- */

/* PyTorch's div_floor_floating and the float remainder (c10/util/generic_math.h,
 * aten/src/ATen/native/cpu/BinaryOpsKernel.cpp), in the float's own precision. */
#define DEF_FLOAT_HELPERS(s, T, M)                                                                 \
    static inline T floordiv_##s(T a, T b)                                                         \
    {                                                                                              \
        if (b == 0)                                                                                \
            return a / b;                                                                          \
        T mod = M(fmod)(a, b);                                                                     \
        T div = (a - mod) / b;                                                                     \
        if (mod != 0 && (b < 0) != (mod < 0))                                                      \
            div -= (T)1;                                                                           \
        T fl;                                                                                      \
        if (div != 0) {                                                                            \
            fl = M(floor)(div);                                                                    \
            if (div - fl > (T)0.5)                                                                 \
                fl += (T)1;                                                                        \
        } else {                                                                                   \
            fl = M(copysign)((T)0, a / b);                                                         \
        }                                                                                          \
        return fl;                                                                                 \
    }                                                                                              \
    static inline T mod_##s(T a, T b)                                                              \
    {                                                                                              \
        T m = M(fmod)(a, b);                                                                       \
        if (m != 0 && (b < 0) != (m < 0))                                                          \
            m += b;                                                                                \
        return m;                                                                                  \
    }
DEF_FLOAT_HELPERS(f32, float, MATH_f32)
DEF_FLOAT_HELPERS(f64, double, MATH_f64)

/* PyTorch's CPU fmax / fmin (std::fmax, std::fmin as its build runs them): a NaN operand gives
 * the other one, except that two NaNs give the second and a signaling NaN gives itself, both
 * quietened (the quiet bit set, as x86 does); x where the two compare equal (+0 and -0). Those
 * of float16 and bfloat16 (fmax16, fmin16) give y there, and of two NaNs the first. */
#define DEF_FMAX(s, T, B, QUIET)                                                                   \
    static inline T quieted_##s(T v)                                                               \
    {                                                                                              \
        B b;                                                                                       \
        memcpy(&b, &v, sizeof b);                                                                  \
        b |= QUIET;                                                                                \
        memcpy(&v, &b, sizeof v);                                                                  \
        return v;                                                                                  \
    }                                                                                              \
    static inline int signaling_##s(T v)                                                           \
    {                                                                                              \
        B b;                                                                                       \
        memcpy(&b, &v, sizeof b);                                                                  \
        return v != v && !(b & QUIET);                                                             \
    }                                                                                              \
    static inline T fnan_##s(T a, T b)                                                             \
    {                                                                                              \
        if (b != b && (a != a || signaling_##s(b)))                                                \
            return quieted_##s(b);                                                                 \
        if (signaling_##s(a))                                                                      \
            return quieted_##s(a);                                                                 \
        return a != a ? b : a;                                                                     \
    }                                                                                              \
    static inline T fmax_##s(T a, T b) { return a != a || b != b ? fnan_##s(a, b) : a >= b ? a : b; } \
    static inline T fmin_##s(T a, T b) { return a != a || b != b ? fnan_##s(a, b) : a <= b ? a : b; } \
    static inline T fmax16_##s(T a, T b) { return a != a || b != b ? fnan_##s(b, a) : a > b ? a : b; } \
    static inline T fmin16_##s(T a, T b) { return a != a || b != b ? fnan_##s(b, a) : a < b ? a : b; }
DEF_FMAX(f32, float, uint32_t, UINT32_C(0x00400000))
DEF_FMAX(f64, double, uint64_t, UINT64_C(0x0008000000000000))

/* PyTorch's vector logaddexp (BinaryOpsKernel.cpp): a where a == b is infinite, else
 * max(a, b) + log(1 + exp(-|a - b|)) with Vectorized's exp and log (cpu_math.h's). A NaN operand
 * gives the default NaN (positive, no payload), as PyTorch's does. */
#define DEF_LOGADDEXP(s, T, M)                                                                  \
    CPU_MATH_INLINE T logaddexp_##s(T a, T b)                                                      \
    {                                                                                              \
        if (a != a || b != b)                                                                      \
            return (T)NAN;                                                                         \
        if (a == b && M(fabs)(a) == (T)INFINITY)                                                   \
            return a;                                                                              \
        T m = a > b ? a : b, d = a > b ? a - b : b - a;                                            \
        return m + cpu_log_##s((T)1 + cpu_exp_##s(-d));                                            \
    }
DEF_LOGADDEXP(f32, float, MATH_f32)
DEF_LOGADDEXP(f64, double, MATH_f64)

/* PyTorch's powi: a negative exponent gives 1 for base 1, +-1 for base -1, else 0. */
#define DEF_POWI(s, T, U)                                                                          \
    static inline T powi_##s(T a, T b)                                                             \
    {                                                                                              \
        if (b < 0)                                                                                 \
            return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;                                  \
        U r = 1, base = (U)a, e = (U)b;                                                            \
        while (e) {                                                                                \
            if (e & 1)                                                                             \
                r *= base;                                                                         \
            e >>= 1;                                                                               \
            base *= base;                                                                          \
        }                                                                                          \
        return (T)r;                                                                               \
    }
DEF_POWI(i32, int32_t, uint32_t)
DEF_POWI(i64, int64_t, uint64_t)

/* PyTorch's calc_gcd and lcm_kernel (BinaryOpsKernel.cpp): the absolute value of MIN stays MIN
 * (so gcd(MIN, 6) is -2, as PyTorch's), products wrap. The divisor of a % is never -1. */
#define DEF_GCD(s, T, U)                                                                           \
    static inline T gcd_##s(T a, T b)                                                              \
    {                                                                                              \
        T x = a < 0 ? (T)((U)0 - (U)a) : a, y = b < 0 ? (T)((U)0 - (U)b) : b;                      \
        while (x != 0) {                                                                           \
            T c = x;                                                                               \
            x = y % x;                                                                             \
            y = c;                                                                                 \
        }                                                                                          \
        return y;                                                                                  \
    }                                                                                              \
    static inline T lcm_##s(T a, T b)                                                              \
    {                                                                                              \
        T g = gcd_##s(a, b);                                                                       \
        if (g == 0)                                                                                \
            return 0;                                                                              \
        T q = g == -1 ? (T)((U)0 - (U)a) : a / g; /* MIN / -1 wraps (PyTorch's traps) */        \
        T p = (T)((U)q * (U)b);                                                                    \
        return p < 0 ? (T)((U)0 - (U)p) : p;                                                       \
    }
DEF_GCD(i32, int32_t, uint32_t)
DEF_GCD(i64, int64_t, uint64_t)

/* ---- the chunk functions ----
 * op_NAME_sfx for each row of ops.def and each dtype of its class, and for each comparison its
 * selects sel_NAME_sfx_w: ops.def is included once per dtype below, with T the C type, U its
 * unsigned type, SFX the suffix of the names, M(fn) libm's fn and S(fn) the helper fn at T. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define S(fn) CAT(fn##_, SFX)

#define DEF_UNARY_AS(CLONES, N, R, expr)                                                           \
    CLONES static int CAT(op_##N##_, SFX)(OP_PARAMS)                                               \
    {                                                                                              \
        R *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        CHUNK_LOOP(n, {                                                                            \
            T x = a[i];                                                                            \
            (void)x;                                                                               \
            d[i] = (R)(expr);                                                                      \
        });                                                                                        \
        return CPU_OK;                                                                             \
    }
#define DEF_UNARY(N, expr) DEF_UNARY_AS(CPU_CLONES, N, T, expr)
#define DEF_UNARY_BOOL(N, expr) DEF_UNARY_AS(CPU_CLONES, N, uint8_t, expr)
#define DEF_UNARY_MATH(N, expr) DEF_UNARY_AS(CPU_MATH_CLONES, N, T, expr)

/* sin, cos, tan: fn names the family (S(cpu_sin)). SLEEF picks its argument reduction once per
 * vector of 32 bytes (cpu_math_trig.h), so the fast one runs over the chunk (vectorised), then
 * each 32 bytes from the chunk's start holding an element past it is computed again the way its
 * largest element makes SLEEF take. */
#define DEF_UNARY_MATH_TRIG(N, fn)                                                                 \
    CPU_MATH_CLONES static int CAT(op_##N##_, SFX)(OP_PARAMS)                                      \
    {                                                                                              \
        T *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        int slow = 0;                                                                              \
        CHUNK_LOOP(n, {                                                                            \
            T x = a[i];                                                                            \
            d[i] = CAT(fn, _fast)(x);                                                              \
            slow |= S(cpu_trig_way)(x);                                                            \
        });                                                                                        \
        enum { VEC = 32 / (int)sizeof(T) };                                                        \
        for (int v = 0; slow && v < n; v += VEC) {                                                 \
            int end = v + VEC < n ? v + VEC : n, way = 0;                                          \
            for (int i = v; i < end; i++) {                                                        \
                int w = S(cpu_trig_way)(a[i]);                                                     \
                way = w > way ? w : way;                                                           \
            }                                                                                      \
            for (int i = v; way && i < end; i++)                                                   \
                d[i] = CAT(fn, _way)(a[i], way);                                                   \
        }                                                                                          \
        return CPU_OK;                                                                             \
    }

#define DEF_BINARY_AS(CLONES, N, R, expr)                                                          \
    CLONES static int CAT(op_##N##_, SFX)(OP_PARAMS)                                               \
    {                                                                                              \
        R *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        const T *restrict b = bv;                                                                  \
        CHUNK_LOOP(n, {                                                                            \
            T x = a[i];                                                                            \
            T y = b[i];                                                                            \
            d[i] = (R)(expr);                                                                      \
        });                                                                                        \
        return CPU_OK;                                                                             \
    }
#define DEF_BINARY(N, expr) DEF_BINARY_AS(CPU_CLONES, N, T, expr)
#define DEF_BINARY_MATH(N, expr) DEF_BINARY_AS(CPU_MATH_CLONES, N, T, expr)
#define DEF_BINARY_BOOL(N, expr) DEF_BINARY_AS(CPU_CLONES, N, uint8_t, expr)
#define DEF_BINARY_CHECKED(N, expr) /* written out below */

/* x + y * z (expr), or y * z with no x (av NULL): fcdim's fused multiply-add, a step of which
 * the CPU does not read the rows in place (cpu_plan.c's weighted rows). Not contracted into an
 * FMA (ISO C mode), so the bits of the ADD of the MUL. */
#define DEF_MULADD(N, expr)                                                                        \
    CPU_CLONES static int CAT(op_##N##_, SFX)(OP_PARAMS)                                           \
    {                                                                                              \
        T *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        const T *restrict b = bv;                                                                  \
        const T *restrict c = cv;                                                                  \
        if (!a) {                                                                                  \
            CHUNK_LOOP(n, d[i] = b[i] * c[i]);                                                     \
            return CPU_OK;                                                                         \
        }                                                                                          \
        CHUNK_LOOP(n, {                                                                            \
            T x = a[i];                                                                            \
            T y = b[i];                                                                            \
            T z = c[i];                                                                            \
            d[i] = (T)(expr);                                                                      \
        });                                                                                        \
        return CPU_OK;                                                                             \
    }

/* The bits of x where c (0 or 1) is 1, else of y, as a bit mask so that it vectorises (NaN
 * payloads and -0.0 copied unchanged). */
#define SELECT_BITS(U, c, x, y) ((U)((y) ^ (((x) ^ (y)) & (U)((U)0 - (U)(c)))))

/* where(x <cmp> k, y, z) with k one value: the comparison made in the select, the mask never
 * stored as bools (see CpuSelFn). The same bits as the comparison then op_WHERE_w. W is the
 * unsigned type of the selected values' width w. */
#define DEF_SEL(N, expr, w, W)                                                                     \
    CPU_CLONES static int CAT(sel_##N##_, CAT(SFX, _##w))(void *restrict dv, const void *restrict av, \
                                                         const void *restrict bv,                  \
                                                         const void *restrict cv, const void *kv,  \
                                                         int n)                                    \
    {                                                                                              \
        W *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        const W *restrict p = bv;                                                                  \
        const W *restrict q = cv;                                                                  \
        T y;                                                                                       \
        memcpy(&y, kv, sizeof y);                                                                  \
        CHUNK_LOOP(n, {                                                                            \
            T x = a[i];                                                                            \
            d[i] = SELECT_BITS(W, expr, p[i], q[i]);                                               \
        });                                                                                        \
        return CPU_OK;                                                                             \
    }
#define DEF_SELS(N, expr)                                                                          \
    DEF_SEL(N, expr, 1, uint8_t)                                                                   \
    DEF_SEL(N, expr, 2, uint16_t)                                                                  \
    DEF_SEL(N, expr, 4, uint32_t)                                                                  \
    DEF_SEL(N, expr, 8, uint64_t)

#define T float
#define SFX f32
#define M MATH_f32
#define FLOAT(N, form, cpu, cuda) DEF_##form(N, cpu)
#define COMPARE(N, cpu, cuda) DEF_BINARY_BOOL(N, cpu) DEF_SELS(N, cpu)
#include "ops.def"
#undef T
#undef SFX
#undef M

#define T double
#define SFX f64
#define M MATH_f64
#define FLOAT(N, form, cpu, cuda) DEF_##form(N, cpu)
#define COMPARE(N, cpu, cuda) DEF_BINARY_BOOL(N, cpu) DEF_SELS(N, cpu)
#include "ops.def"
#undef T
#undef SFX
#undef M

#define T int32_t
#define U uint32_t
#define SFX i32
#define INT(N, form, cpu, cuda) DEF_##form(N, cpu)
#define COMPARE(N, cpu, cuda) DEF_BINARY_BOOL(N, cpu) DEF_SELS(N, cpu)
#include "ops.def"
#undef T
#undef U
#undef SFX

#define T int64_t
#define U uint64_t
#define SFX i64
#define INT(N, form, cpu, cuda) DEF_##form(N, cpu)
#define COMPARE(N, cpu, cuda) DEF_BINARY_BOOL(N, cpu) DEF_SELS(N, cpu)
#include "ops.def"
#undef T
#undef U
#undef SFX

#define T uint8_t
#define SFX b
#define BOOL(N, form, cpu, cuda) DEF_##form(N, cpu)
#define COMPARE(N, cpu, cuda) DEF_BINARY_BOOL(N, cpu)
#include "ops.def"
#undef T
#undef SFX

/* Integer floor division, remainder and fmod: a zero divisor anywhere in the chunk is PyTorch's
 * "ZeroDivisionError"; a divisor of -1 is handled apart so that MIN / -1 wraps. */
#define DEF_INT_DIV(s, T, U)                                                                       \
    static int op_FLOORDIV_##s(OP_PARAMS)                                                          \
    {                                                                                              \
        T *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        const T *restrict b = bv;                                                                  \
        int zero = 0;                                                                              \
        CHUNK_LOOP(n, zero |= b[i] == 0);                                                          \
        if (zero)                                                                                  \
            return CPU_EZERODIV;                                                                   \
        CHUNK_LOOP(n, {                                                                            \
            T x = a[i], y = b[i];                                                                  \
            if (y == -1) {                                                                         \
                d[i] = (T)((U)0 - (U)x);                                                           \
            } else {                                                                               \
                T q = x / y, r = x % y;                                                            \
                d[i] = (r != 0 && (r < 0) != (y < 0)) ? q - 1 : q;                                 \
            }                                                                                      \
        });                                                                                        \
        return CPU_OK;                                                                             \
    }                                                                                              \
    static int op_MOD_##s(OP_PARAMS)                                                               \
    {                                                                                              \
        T *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        const T *restrict b = bv;                                                                  \
        int zero = 0;                                                                              \
        CHUNK_LOOP(n, zero |= b[i] == 0);                                                          \
        if (zero)                                                                                  \
            return CPU_EZERODIV;                                                                   \
        CHUNK_LOOP(n, {                                                                            \
            T y = b[i];                                                                            \
            T r = y == -1 ? 0 : a[i] % y;                                                          \
            d[i] = (r != 0 && (r < 0) != (y < 0)) ? r + y : r;                                     \
        });                                                                                        \
        return CPU_OK;                                                                             \
    }                                                                                              \
    static int op_FMOD_##s(OP_PARAMS)                                                              \
    {                                                                                              \
        T *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        const T *restrict b = bv;                                                                  \
        int zero = 0;                                                                              \
        CHUNK_LOOP(n, zero |= b[i] == 0);                                                          \
        if (zero)                                                                                  \
            return CPU_EZERODIV;                                                                   \
        CHUNK_LOOP(n, d[i] = b[i] == -1 ? 0 : a[i] % b[i]);                                        \
        return CPU_OK;                                                                             \
    }
DEF_INT_DIV(i32, int32_t, uint32_t)
DEF_INT_DIV(i64, int64_t, uint64_t)

/* where(cond, x, y) by element width. */
#define DEF_WHERE(w, U)                                                                            \
    CPU_CLONES static int op_WHERE_##w(OP_PARAMS)                                                  \
    {                                                                                              \
        U *restrict d = dv;                                                                        \
        const uint8_t *restrict m = av;                                                            \
        const U *restrict x = bv;                                                                  \
        const U *restrict y = cv;                                                                  \
        CHUNK_LOOP(n, d[i] = SELECT_BITS(U, m[i] != 0, x[i], y[i]));                               \
        return CPU_OK;                                                                             \
    }
DEF_WHERE(1, uint8_t)
DEF_WHERE(2, uint16_t)
DEF_WHERE(4, uint32_t)
DEF_WHERE(8, uint64_t)

#define DEF_CAST(ds, DT, ss, ST, expr)                                                             \
    CPU_CLONES static int cast_##ds##_##ss(OP_PARAMS)                                              \
    {                                                                                              \
        DT *restrict d = dv;                                                                       \
        const ST *restrict a = av;                                                                 \
        CHUNK_LOOP(n, {                                                                            \
            ST x = a[i];                                                                           \
            d[i] = (DT)(expr);                                                                     \
        });                                                                                        \
        return CPU_OK;                                                                             \
    }
CASTS(DEF_CAST)

#define DEF_NCAST(ds, DT, dc, ss, ST, sc)                                                          \
    CPU_CLONES static int cast_##ds##_##ss(OP_PARAMS)                                              \
    {                                                                                              \
        DT *restrict d = dv;                                                                       \
        const ST *restrict a = av;                                                                 \
        CHUNK_LOOP(n, d[i] = WR_##dc(DT, FL_##sc, RD_##sc(a[i])));                                 \
        return CPU_OK;                                                                             \
    }
#define DEF_TO_NEW(ds, DT, dc) OLD_DTYPES_WITH(DEF_NCAST, ds, DT, dc) NEW_DTYPES_WITH(DEF_NCAST, ds, DT, dc)
#define DEF_FROM_NEW(ds, DT, dc) NEW_DTYPES_WITH(DEF_NCAST, ds, DT, dc)
NEW_DTYPES(DEF_TO_NEW)
OLD_DTYPES(DEF_FROM_NEW)

#define DEF_COPY(w)                                                                                \
    static int copy_##w(OP_PARAMS)                                                                 \
    {                                                                                              \
        memcpy(dv, av, (size_t)n * (w));                                                           \
        return CPU_OK;                                                                             \
    }
DEF_COPY(1)
DEF_COPY(2)
DEF_COPY(4)
DEF_COPY(8)

/* ---- dispatch tables ---- */

#define REG(N, s) [FC_OP_##N][DT_##s] = op_##N##_##s,

/* Unary, binary and MULADD ops by the dtype of their operands (= the result's, except ISNAN). */
static const CpuOpFn op_table[FC_OP__COUNT][FC_DTYPE__COUNT] = {
#define FLOAT(N, form, cpu, cuda) REG(N, f32) REG(N, f64)
#define INT(N, form, cpu, cuda) REG(N, i32) REG(N, i64)
#define BOOL(N, form, cpu, cuda) REG(N, b)
#include "ops.def"
};

/* Comparisons by the dtype of the compared values. */
static const CpuOpFn compare_table[FC_OP__COUNT][FC_DTYPE__COUNT] = {
#define COMPARE(N, cpu, cuda) REG(N, b) REG(N, i32) REG(N, i64) REG(N, f32) REG(N, f64)
#include "ops.def"
};

#define REG_CAST(ds, DT, ss, ST, expr) [DT_##ds][DT_##ss] = cast_##ds##_##ss,
#define REG_NCAST(ds, DT, dc, ss, ST, sc) [DT_##ds][DT_##ss] = cast_##ds##_##ss,
#define REG_TO_NEW(ds, DT, dc) OLD_DTYPES_WITH(REG_NCAST, ds, DT, dc) NEW_DTYPES_WITH(REG_NCAST, ds, DT, dc)
#define REG_FROM_NEW(ds, DT, dc) NEW_DTYPES_WITH(REG_NCAST, ds, DT, dc)
static const CpuOpFn cast_table[FC_DTYPE__COUNT][FC_DTYPE__COUNT] = {
    CASTS(REG_CAST)
    NEW_DTYPES(REG_TO_NEW)
    OLD_DTYPES(REG_FROM_NEW)
    [FC_BOOL][FC_BOOL] = copy_1,
    [FC_INT32][FC_INT32] = copy_4,
    [FC_FLOAT32][FC_FLOAT32] = copy_4,
    [FC_INT64][FC_INT64] = copy_8,
    [FC_FLOAT64][FC_FLOAT64] = copy_8,
};


CpuOpFn fc_cpu_op_fn(FcOp op, FcDType dtype, FcDType src_dtype)
{
    if ((unsigned)op >= FC_OP__COUNT || (unsigned)dtype >= FC_DTYPE__COUNT ||
        (unsigned)src_dtype >= FC_DTYPE__COUNT)
        return NULL;
    if (op == FC_OP_CAST && dtype == src_dtype) {
        switch (fc_dtype_size(dtype)) {
        case 1: return copy_1;
        case 2: return copy_2;
        case 4: return copy_4;
        default: return copy_8;
        }
    }
    if (op == FC_OP_CAST)
        return cast_table[dtype][src_dtype];
    if (fc_op_is_compare(op))
        return dtype == FC_BOOL ? compare_table[op][src_dtype] : NULL;
    if (op == FC_OP_WHERE) {
        switch (fc_dtype_size(dtype)) {
        case 1: return op_WHERE_1;
        case 2: return op_WHERE_2;
        case 4: return op_WHERE_4;
        case 8: return op_WHERE_8;
        default: return NULL;
        }
    }
    if (op == FC_OP_ISNAN)
        return dtype == FC_BOOL ? op_table[op][src_dtype] : NULL;
    return op_table[op][dtype];
}

#define REG_SEL(N, s)                                                                              \
    [FC_OP_##N][DT_##s] = {[1] = sel_##N##_##s##_1, [2] = sel_##N##_##s##_2, [4] = sel_##N##_##s##_4, \
                           [8] = sel_##N##_##s##_8},
static const CpuSelFn sel_table[FC_OP__COUNT][FC_DTYPE__COUNT][9] = {
#define COMPARE(N, cpu, cuda) REG_SEL(N, i32) REG_SEL(N, i64) REG_SEL(N, f32) REG_SEL(N, f64)
#include "ops.def"
};

CpuSelFn fc_cpu_sel_fn(FcOp cmp, FcDType src_dtype, FcDType dtype)
{
    if ((unsigned)cmp >= FC_OP__COUNT || (unsigned)src_dtype >= FC_DTYPE__COUNT ||
        (unsigned)dtype >= FC_DTYPE__COUNT || fc_dtype_size(dtype) > 8)
        return NULL;
    return sel_table[cmp][src_dtype][fc_dtype_size(dtype)];
}

void fc_cpu_fill(void *d, FcDType dtype, FcScalar v, int n)
{
    switch (dtype) {
    case FC_BOOL:
        memset(d, v.i != 0, (size_t)n);
        break;
    case FC_INT32: {
        int32_t *p = d, x = (int32_t)(uint32_t)(uint64_t)v.i;
        for (int i = 0; i < n; i++)
            p[i] = x;
        break;
    }
    case FC_INT64: {
        int64_t *p = d, x = v.i;
        for (int i = 0; i < n; i++)
            p[i] = x;
        break;
    }
    case FC_FLOAT32: {
        float *p = d, x = (float)v.f;
        for (int i = 0; i < n; i++)
            p[i] = x;
        break;
    }
    case FC_FLOAT64: {
        double *p = d, x = v.f;
        for (int i = 0; i < n; i++)
            p[i] = x;
        break;
    }
    case FC_UINT8: case FC_INT8:
        memset(d, (int)(uint8_t)(uint64_t)v.i, (size_t)n);
        break;
    case FC_INT16: case FC_FLOAT16: case FC_BFLOAT16: {
        uint16_t *p = d, x = dtype == FC_INT16 ? (uint16_t)(uint64_t)v.i
                             : dtype == FC_FLOAT16 ? fc_f32_to_f16((float)v.f) : fc_f32_to_bf16((float)v.f);
        for (int i = 0; i < n; i++)
            p[i] = x;
        break;
    }
    default:
        break;
    }
}
