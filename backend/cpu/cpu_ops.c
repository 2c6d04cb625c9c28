/* cpu_ops.c — the elementwise operations of scheduled kernels, one function per op and dtype,
 * each a plain loop over one register chunk.
 *
 * Every function is generated from the tables below (X-macros: one line per op, instantiated
 * per dtype), and every loop has the shape `for (i = 0; i < n; i++) d[i] = f(a[i], b[i])` over
 * restrict pointers, written twice: once with the trip count FC_CHUNK, which GCC vectorises even
 * at -O2 (its "very cheap" cost model takes only loops that need no scalar epilogue), and once
 * for the shorter chunks at the ends of rows. Semantics are PyTorch's CPU kernels: integer
 * arithmetic wraps (done in unsigned types, so it is never undefined behaviour), floor division
 * and remainder follow Python's signs, min/max propagate NaN, bool is a byte holding 0 or 1.
 * exp (and the ops torch builds on its vector exp: sigmoid) is cpu_math.h's, torch's SLEEF exp
 * bit for bit, not libm's. Depends on cpu_internal.h, cpu_math.h and libm only. */
#include "cpu_internal.h"
#include "cpu_math.h"

#include <math.h>
#include <string.h>

#define OP_PARAMS void *restrict dv, const void *restrict av, const void *restrict bv, const void *restrict cv, int n

/* libm's name for a function at each float type. */
#define MATH_f32(fn) fn##f
#define MATH_f64(fn) fn

/* ---- the op lists ----
 * X(OP, sfx, T, R, expr): d = (R)expr with x = a[i] (and y = b[i] for binary ops), T the operand
 * type, R the result type. */

#define FLOAT_UNARY(X, s, T, M)                                                                    \
    X(NEG, s, T, T, -x)                                                                            \
    X(ABS, s, T, T, M(fabs)(x))                                                                    \
    X(LOG, s, T, T, M(log)(x))                                                                     \
    X(SQRT, s, T, T, M(sqrt)(x))                                                                   \
    X(RSQRT, s, T, T, (T)1 / M(sqrt)(x))                                                           \
    X(SIN, s, T, T, M(sin)(x))                                                                     \
    X(COS, s, T, T, M(cos)(x))                                                                     \
    X(TAN, s, T, T, M(tan)(x))                                                                     \
    X(TANH, s, T, T, M(tanh)(x))                                                                   \
    X(RELU, s, T, T, x < 0 ? (T)0 : x)                                                             \
    X(FLOOR, s, T, T, M(floor)(x))                                                                 \
    X(CEIL, s, T, T, M(ceil)(x))                                                                   \
    X(ROUND, s, T, T, M(nearbyint)(x))                                                             \
    X(TRUNC, s, T, T, M(trunc)(x))                                                                 \
    X(SIGN, s, T, T, (T)((0 < x) - (x < 0)))                                                       \
    X(RECIPROCAL, s, T, T, (T)1 / x)                                                               \
    X(LOG2, s, T, T, M(log2)(x))                                                                   \
    X(LOG1P, s, T, T, M(log1p)(x))                                                                 \
    X(EXPM1, s, T, T, M(expm1)(x))                                                                 \
    X(ASIN, s, T, T, M(asin)(x))                                                                   \
    X(ACOS, s, T, T, M(acos)(x))                                                                   \
    X(ATAN, s, T, T, M(atan)(x))                                                                   \
    X(SINH, s, T, T, M(sinh)(x))                                                                   \
    X(COSH, s, T, T, M(cosh)(x))                                                                   \
    X(ERF, s, T, T, M(erf)(x))                                                                     \
    X(SQUARE, s, T, T, x * x)                                                                      \
    X(ISNAN, s, T, uint8_t, x != x)

/* The ops on cpu_math.h's exp, as torch's vector kernels compute them (Vectorized<T>::exp();
 * sigmoid negates as 0 - x, which keeps a NaN's sign). Their loops are compiled with
 * CPU_MATH_CLONES, for fused multiply-adds. Torch's sigmoid runs its vector code on all but the
 * last few (under 2 * 32 bytes) values of each contiguous run and libm's exp on those and on
 * strided data, so tdl's sigmoid has torch's bits everywhere except there (within an ulp). */
#define FMA_UNARY(X, s, T)                                                                         \
    X(EXP, s, T, T, cpu_exp_##s(x))                                                                \
    X(SIGMOID, s, T, T, (T)1 / (cpu_exp_##s((T)0 - x) + (T)1))

#define INT_UNARY(X, s, T, U)                                                                      \
    X(NEG, s, T, T, (T)((U)0 - (U)x))                                                              \
    X(ABS, s, T, T, x < 0 ? (T)((U)0 - (U)x) : x)                                                  \
    X(NOT, s, T, T, ~x)                                                                            \
    X(RELU, s, T, T, x < 0 ? 0 : x)                                                                \
    X(FLOOR, s, T, T, x)                                                                           \
    X(CEIL, s, T, T, x)                                                                            \
    X(ROUND, s, T, T, x)                                                                           \
    X(TRUNC, s, T, T, x)                                                                           \
    X(SIGN, s, T, T, (0 < x) - (x < 0))                                                            \
    X(SQUARE, s, T, T, (U)x * (U)x)                                                                \
    X(ISNAN, s, T, uint8_t, 0)

#define BOOL_UNARY(X, s, T)                                                                        \
    X(NOT, s, T, T, !x)                                                                            \
    X(ABS, s, T, T, x != 0)                                                                        \
    X(SIGN, s, T, T, x != 0)                                                                       \
    X(FLOOR, s, T, T, x != 0)                                                                      \
    X(CEIL, s, T, T, x != 0)                                                                       \
    X(ROUND, s, T, T, x != 0)                                                                      \
    X(TRUNC, s, T, T, x != 0)                                                                      \
    X(ISNAN, s, T, uint8_t, 0)

/* NaN-propagating minimum and maximum, in a form GCC turns into compare-and-blend. */
#define NAN_MIN(x, y) ((y) != (y) ? (y) : (x) != (x) ? (x) : (x) < (y) ? (x) : (y))
#define NAN_MAX(x, y) ((y) != (y) ? (y) : (x) != (x) ? (x) : (x) > (y) ? (x) : (y))

#define FLOAT_BINARY(X, s, T, M)                                                                   \
    X(ADD, s, T, T, x + y)                                                                         \
    X(SUB, s, T, T, x - y)                                                                         \
    X(MUL, s, T, T, x * y)                                                                         \
    X(DIV, s, T, T, x / y)                                                                         \
    X(FLOORDIV, s, T, T, floordiv_##s(x, y))                                                       \
    X(MOD, s, T, T, mod_##s(x, y))                                                                 \
    X(FMOD, s, T, T, M(fmod)(x, y))                                                                \
    X(POW, s, T, T, M(pow)(x, y))                                                                  \
    X(MIN, s, T, T, NAN_MIN(x, y))                                                                 \
    X(MAX, s, T, T, NAN_MAX(x, y))                                                                 \
    X(ATAN2, s, T, T, M(atan2)(x, y))

/* Shifts as PyTorch's lshift/rshift: an amount outside [0, width) gives 0, or the sign fill. */
#define INT_BINARY(X, s, T, U)                                                                     \
    X(ADD, s, T, T, (U)x + (U)y)                                                                   \
    X(SUB, s, T, T, (U)x - (U)y)                                                                   \
    X(MUL, s, T, T, (U)x * (U)y)                                                                   \
    X(POW, s, T, T, powi_##s(x, y))                                                                \
    X(MIN, s, T, T, x < y ? x : y)                                                                 \
    X(MAX, s, T, T, x > y ? x : y)                                                                 \
    X(AND, s, T, T, x & y)                                                                         \
    X(OR, s, T, T, x | y)                                                                          \
    X(XOR, s, T, T, x ^ y)                                                                         \
    X(SHL, s, T, T, (y < 0 || y >= (T)(8 * sizeof(T))) ? (U)0 : (U)x << y)                         \
    X(SHR, s, T, T, (y < 0 || y >= (T)(8 * sizeof(T))) ? (x < 0 ? (T)-1 : (T)0) : x >> y)

/* bool + bool is logical or and bool * bool logical and, as in PyTorch. */
#define BOOL_BINARY(X, s, T)                                                                       \
    X(ADD, s, T, T, x | y)                                                                         \
    X(MUL, s, T, T, x & y)                                                                         \
    X(MIN, s, T, T, x & y)                                                                         \
    X(MAX, s, T, T, x | y)                                                                         \
    X(AND, s, T, T, x & y)                                                                         \
    X(OR, s, T, T, x | y)                                                                          \
    X(XOR, s, T, T, x ^ y)

#define COMPARE(X, s, T)                                                                           \
    X(EQ, s, T, uint8_t, x == y)                                                                   \
    X(NE, s, T, uint8_t, x != y)                                                                   \
    X(LT, s, T, uint8_t, x < y)                                                                    \
    X(LE, s, T, uint8_t, x <= y)                                                                   \
    X(GT, s, T, uint8_t, x > y)                                                                    \
    X(GE, s, T, uint8_t, x >= y)

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

/* ---- the chunk functions ---- */

#define DEF_UNARY(OP, s, T, R, expr)                                                               \
    CPU_CLONES static int op_##OP##_##s(OP_PARAMS)                                                 \
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

#define DEF_UNARY_FMA(OP, s, T, R, expr)                                                           \
    CPU_MATH_CLONES static int op_##OP##_##s(OP_PARAMS)                                            \
    {                                                                                              \
        R *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        CHUNK_LOOP(n, {                                                                            \
            T x = a[i];                                                                            \
            d[i] = (R)(expr);                                                                      \
        });                                                                                        \
        return CPU_OK;                                                                             \
    }

#define DEF_BINARY(OP, s, T, R, expr)                                                              \
    CPU_CLONES static int op_##OP##_##s(OP_PARAMS)                                                 \
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

FLOAT_UNARY(DEF_UNARY, f32, float, MATH_f32)
FLOAT_UNARY(DEF_UNARY, f64, double, MATH_f64)
FMA_UNARY(DEF_UNARY_FMA, f32, float)
FMA_UNARY(DEF_UNARY_FMA, f64, double)
INT_UNARY(DEF_UNARY, i32, int32_t, uint32_t)
INT_UNARY(DEF_UNARY, i64, int64_t, uint64_t)
BOOL_UNARY(DEF_UNARY, b, uint8_t)
FLOAT_BINARY(DEF_BINARY, f32, float, MATH_f32)
FLOAT_BINARY(DEF_BINARY, f64, double, MATH_f64)
INT_BINARY(DEF_BINARY, i32, int32_t, uint32_t)
INT_BINARY(DEF_BINARY, i64, int64_t, uint64_t)
BOOL_BINARY(DEF_BINARY, b, uint8_t)
COMPARE(DEF_BINARY, b, uint8_t)
COMPARE(DEF_BINARY, i32, int32_t)
COMPARE(DEF_BINARY, i64, int64_t)
COMPARE(DEF_BINARY, f32, float)
COMPARE(DEF_BINARY, f64, double)

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

/* The bits of x where c (0 or 1) is 1, else of y, as a bit mask so that it vectorises (NaN
 * payloads and -0.0 copied unchanged). */
#define SELECT_BITS(U, c, x, y) ((U)((y) ^ (((x) ^ (y)) & (U)((U)0 - (U)(c)))))

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

/* where(x <cmp> k, y, z) with k one value: the comparison made in the select, the mask never
 * stored as bools (see CpuSelFn). The same bits as the comparison then op_WHERE_w. */
#define DEF_SEL(OP, s, T, R, expr, w, U)                                                           \
    CPU_CLONES static int sel_##OP##_##s##_##w(void *restrict dv, const void *restrict av,         \
                                               const void *restrict bv, const void *restrict cv,  \
                                               const void *kv, int n)                              \
    {                                                                                              \
        U *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        const U *restrict p = bv;                                                                  \
        const U *restrict q = cv;                                                                  \
        T y;                                                                                       \
        memcpy(&y, kv, sizeof y);                                                                  \
        CHUNK_LOOP(n, {                                                                            \
            T x = a[i];                                                                            \
            d[i] = SELECT_BITS(U, expr, p[i], q[i]);                                               \
        });                                                                                        \
        return CPU_OK;                                                                             \
    }
#define DEF_SELS(OP, s, T, R, expr)                                                                \
    DEF_SEL(OP, s, T, R, expr, 1, uint8_t)                                                         \
    DEF_SEL(OP, s, T, R, expr, 2, uint16_t)                                                        \
    DEF_SEL(OP, s, T, R, expr, 4, uint32_t)                                                        \
    DEF_SEL(OP, s, T, R, expr, 8, uint64_t)
COMPARE(DEF_SELS, i32, int32_t)
COMPARE(DEF_SELS, i64, int64_t)
COMPARE(DEF_SELS, f32, float)
COMPARE(DEF_SELS, f64, double)

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

#define REG(OP, s, T, R, expr) [FC_OP_##OP][DT_##s] = op_##OP##_##s,

/* Unary and binary ops by the dtype of their operands (= the result's, except ISNAN). */
static const CpuOpFn op_table[FC_OP__COUNT][FC_DTYPE__COUNT] = {
    FLOAT_UNARY(REG, f32, float, MATH_f32)
    FLOAT_UNARY(REG, f64, double, MATH_f64)
    FMA_UNARY(REG, f32, float)
    FMA_UNARY(REG, f64, double)
    INT_UNARY(REG, i32, int32_t, uint32_t)
    INT_UNARY(REG, i64, int64_t, uint64_t)
    BOOL_UNARY(REG, b, uint8_t)
    FLOAT_BINARY(REG, f32, float, MATH_f32)
    FLOAT_BINARY(REG, f64, double, MATH_f64)
    INT_BINARY(REG, i32, int32_t, uint32_t)
    INT_BINARY(REG, i64, int64_t, uint64_t)
    BOOL_BINARY(REG, b, uint8_t)
    [FC_OP_FLOORDIV][FC_INT32] = op_FLOORDIV_i32,
    [FC_OP_FLOORDIV][FC_INT64] = op_FLOORDIV_i64,
    [FC_OP_MOD][FC_INT32] = op_MOD_i32,
    [FC_OP_MOD][FC_INT64] = op_MOD_i64,
    [FC_OP_FMOD][FC_INT32] = op_FMOD_i32,
    [FC_OP_FMOD][FC_INT64] = op_FMOD_i64,
};

/* Comparisons by the dtype of the compared values. */
static const CpuOpFn compare_table[FC_OP__COUNT][FC_DTYPE__COUNT] = {
    COMPARE(REG, b, uint8_t)
    COMPARE(REG, i32, int32_t)
    COMPARE(REG, i64, int64_t)
    COMPARE(REG, f32, float)
    COMPARE(REG, f64, double)
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

static bool is_compare(FcOp op) { return op >= FC_OP_EQ && op <= FC_OP_GE; }

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
    if (is_compare(op))
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

#define REG_SEL(OP, s, T, R, expr)                                                                 \
    [FC_OP_##OP][DT_##s] = {[1] = sel_##OP##_##s##_1, [2] = sel_##OP##_##s##_2, [4] = sel_##OP##_##s##_4,      \
                            [8] = sel_##OP##_##s##_8},
static const CpuSelFn sel_table[FC_OP__COUNT][FC_DTYPE__COUNT][9] = {
    COMPARE(REG_SEL, i32, int32_t)
    COMPARE(REG_SEL, i64, int64_t)
    COMPARE(REG_SEL, f32, float)
    COMPARE(REG_SEL, f64, double)
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
