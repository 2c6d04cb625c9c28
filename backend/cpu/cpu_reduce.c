/* cpu_reduce.c — the folds that reduction kernels are made of: combining a chunk of values into
 * accumulators, combining accumulators with each other, and converting them to the output dtype.
 *
 * Like cpu_ops.c, every function is generated from a table (reduce op x accumulator kind x input
 * dtype). The semantics are PyTorch's: sums and products of floats accumulate in double, of
 * integers and bools in int64 with wrapping; amax/amin propagate NaN; argmax/argmin keep the
 * first extreme value, a NaN counting as the largest (argmax) or smallest (argmin), so the first
 * NaN wins. Everything here is sequential and deterministic: the order in which values are
 * combined is fixed by the caller's chunks and blocks, never by threads.
 * Depends on cpu_internal.h only. */
#include "cpu_internal.h"

#include <math.h>
#include <string.h>

#define ACC_F_T double
#define ACC_I_T int64_t

/* COMB_<op>_<kind>(acc, x): x (already of the accumulator's type) combined into acc. A NaN x
 * replaces the accumulator and a NaN accumulator is never replaced: NaN propagates. */
#define COMB_SUM_F(a, x) ((a) + (x))
#define COMB_SUM_I(a, x) ((int64_t)((uint64_t)(a) + (uint64_t)(x)))
#define COMB_PROD_F(a, x) ((a) * (x))
#define COMB_PROD_I(a, x) ((int64_t)((uint64_t)(a) * (uint64_t)(x)))
#define COMB_AMAX_F(a, x) (((x) > (a) || (x) != (x)) ? (x) : (a))
#define COMB_AMAX_I(a, x) ((x) > (a) ? (x) : (a))
#define COMB_AMIN_F(a, x) (((x) < (a) || (x) != (x)) ? (x) : (a))
#define COMB_AMIN_I(a, x) ((x) < (a) ? (x) : (a))
#define COMB_ANY_I(a, x) ((a) | ((x) != 0))
#define COMB_ALL_I(a, x) ((a) & ((x) != 0))

/* BETTER_<op>_<kind>(v, c): v replaces the current extreme c (strictly: the first one stays). */
#define BETTER_ARGMAX_F(v, c) ((v) != (v) ? (c) == (c) : (v) > (c))
#define BETTER_ARGMIN_F(v, c) ((v) != (v) ? (c) == (c) : (v) < (c))
#define BETTER_ARGMAX_I(v, c) ((v) > (c))
#define BETTER_ARGMIN_I(v, c) ((v) < (c))

/* EXT_<arg op>_<kind>(a, x): the running extreme of an arg reduction's chunk, as amax/amin. */
#define EXT_ARGMAX_F COMB_AMAX_F
#define EXT_ARGMIN_F COMB_AMIN_F
#define EXT_ARGMAX_I COMB_AMAX_I
#define EXT_ARGMIN_I COMB_AMIN_I

/* Whether a fold's full chunks run on eight named lanes (see DEF_FOLD). */
_Static_assert(CPU_LANES == 8, "DEF_FOLD unrolls eight lanes");
#define UNROLL_SUM 1
#define UNROLL_PROD 1
#define UNROLL_ANY 1
#define UNROLL_ALL 1
#define UNROLL_AMAX 0
#define UNROLL_AMIN 0

_Static_assert(FC_CHUNK % (4 * CPU_LANES) == 0, "DEF_FOLD's min/max runs 4 * CPU_LANES values");
/* The reductions and accumulator kinds that exist; X(op, kind). */
#define FOLD_OPS(X)                                                                                \
    X(SUM, F) X(SUM, I) X(PROD, F) X(PROD, I) X(AMAX, F) X(AMAX, I) X(AMIN, F) X(AMIN, I)          \
    X(ANY, I) X(ALL, I)
#define ARG_OPS(X) X(ARGMAX, F) X(ARGMAX, I) X(ARGMIN, F) X(ARGMIN, I)

/* Input dtypes per accumulator kind: a double takes any input, an int64 only bool and ints. */
#define INPUTS_F(X, R, K)                                                                          \
    X(R, K, b, uint8_t) X(R, K, i32, int32_t) X(R, K, i64, int64_t) X(R, K, f32, float)            \
    X(R, K, f64, double)
#define INPUTS_I(X, R, K) X(R, K, b, uint8_t) X(R, K, i32, int32_t) X(R, K, i64, int64_t)

/* ---- folds ---- */

#define DEF_FOLD(R, K, s, T)                                                                       \
    CPU_CLONES static void hfold_##R##_##K##_##s(void *restrict accv, const void *restrict xv, int n) \
    {                                                                                              \
        ACC_##K##_T *restrict acc = accv;                                                          \
        const T *restrict x = xv;                                                                  \
        if (n == FC_CHUNK && UNROLL_##R) {                                                         \
            /* Eight named lanes: GCC's SLP pass keeps them in vector registers (an array of       \
             * lanes would live in memory, one store-to-load round trip per step). */              \
            ACC_##K##_T l0 = acc[0], l1 = acc[1], l2 = acc[2], l3 = acc[3];                        \
            ACC_##K##_T l4 = acc[4], l5 = acc[5], l6 = acc[6], l7 = acc[7];                        \
            for (int i = 0; i < FC_CHUNK; i += CPU_LANES) {                                        \
                l0 = COMB_##R##_##K(l0, (ACC_##K##_T)x[i]);                                        \
                l1 = COMB_##R##_##K(l1, (ACC_##K##_T)x[i + 1]);                                    \
                l2 = COMB_##R##_##K(l2, (ACC_##K##_T)x[i + 2]);                                    \
                l3 = COMB_##R##_##K(l3, (ACC_##K##_T)x[i + 3]);                                    \
                l4 = COMB_##R##_##K(l4, (ACC_##K##_T)x[i + 4]);                                    \
                l5 = COMB_##R##_##K(l5, (ACC_##K##_T)x[i + 5]);                                    \
                l6 = COMB_##R##_##K(l6, (ACC_##K##_T)x[i + 6]);                                    \
                l7 = COMB_##R##_##K(l7, (ACC_##K##_T)x[i + 7]);                                    \
            }                                                                                      \
            acc[0] = l0, acc[1] = l1, acc[2] = l2, acc[3] = l3;                                    \
            acc[4] = l4, acc[5] = l5, acc[6] = l6, acc[7] = l7;                                    \
        } else if (n == FC_CHUNK) {                                                                \
            /* min/max: NaN-aware selects vectorise only as loops. Thirty-two running values      \
             * read the chunk in order (a tree over its halves, reading two places at once,      \
             * ran 3x slower: it defeated the hardware prefetcher), then a tree down to the     \
             * lanes; exact whatever the order. */                                                 \
            T w[4 * CPU_LANES];                                                                    \
            memcpy(w, x, sizeof w);                                                                \
            for (int i = 4 * CPU_LANES; i < FC_CHUNK; i += 4 * CPU_LANES)                          \
                for (int j = 0; j < 4 * CPU_LANES; j++)                                            \
                    w[j] = COMB_##R##_##K(w[j], x[i + j]);                                         \
            for (int j = 0; j < 2 * CPU_LANES; j++)                                                \
                w[j] = COMB_##R##_##K(w[j], w[j + 2 * CPU_LANES]);                                 \
            for (int j = 0; j < CPU_LANES; j++)                                                    \
                acc[j] = COMB_##R##_##K(COMB_##R##_##K(acc[j], (ACC_##K##_T)w[j]),                 \
                                        (ACC_##K##_T)w[j + CPU_LANES]);                            \
        } else {                                                                                   \
            for (int i = 0; i < n; i++) {                                                          \
                ACC_##K##_T v = (ACC_##K##_T)x[i];                                                 \
                acc[i % CPU_LANES] = COMB_##R##_##K(acc[i % CPU_LANES], v);                        \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    CPU_CLONES static void vfold_##R##_##K##_##s(void *restrict accv, const void *restrict xv, int n) \
    {                                                                                              \
        ACC_##K##_T *restrict acc = accv;                                                          \
        const T *restrict x = xv;                                                                  \
        CHUNK_LOOP(n, {                                                                            \
            ACC_##K##_T v = (ACC_##K##_T)x[i];                                                     \
            acc[i] = COMB_##R##_##K(acc[i], v);                                                    \
        });                                                                                        \
    }
#define DEF_FOLDS(R, K) INPUTS_##K(DEF_FOLD, R, K)
FOLD_OPS(DEF_FOLDS)

#define DEF_COMB(R, K)                                                                             \
    static void comb_##R##_##K(void *restrict accv, const void *restrict ov, int n)                \
    {                                                                                              \
        ACC_##K##_T *restrict acc = accv;                                                          \
        const ACC_##K##_T *restrict o = ov;                                                        \
        for (int i = 0; i < n; i++)                                                                \
            acc[i] = COMB_##R##_##K(acc[i], o[i]);                                                 \
    }
FOLD_OPS(DEF_COMB)

/* ---- arg reductions ---- */

#define DEF_ARG(R, K, s, T)                                                                        \
    static void harg_##R##_##K##_##s(void *restrict valv, int64_t *restrict idx,                   \
                                     const void *restrict xv, int n, int64_t index)                \
    {                                                                                              \
        const T *restrict x = xv;                                                                  \
        ACC_##K##_T c = *(ACC_##K##_T *)valv;                                                      \
        int64_t ci = *idx;                                                                         \
        if (n == FC_CHUNK) {                                                                       \
            /* The chunk's extreme first, as amax folds it (vectorised); only a chunk that beats  \
             * the current extreme is searched for the first place it occurs. */                   \
            T w[4 * CPU_LANES];                                                                    \
            memcpy(w, x, sizeof w);                                                                \
            for (int i = 4 * CPU_LANES; i < FC_CHUNK; i += 4 * CPU_LANES)                          \
                for (int j = 0; j < 4 * CPU_LANES; j++)                                            \
                    w[j] = EXT_##R##_##K(w[j], x[i + j]);                                          \
            T m = w[0];                                                                            \
            for (int j = 1; j < 4 * CPU_LANES; j++)                                                \
                m = EXT_##R##_##K(m, w[j]);                                                        \
            if (ci < 0 || BETTER_##R##_##K((ACC_##K##_T)m, c)) {                                   \
                int i = 0;                                                                         \
                if (m != m)                                                                        \
                    while (x[i] == x[i])                                                           \
                        i++;                                                                       \
                else                                                                               \
                    while (x[i] != m)                                                              \
                        i++;                                                                       \
                c = (ACC_##K##_T)x[i];                                                             \
                ci = index + i;                                                                    \
            }                                                                                      \
        } else {                                                                                   \
            for (int i = 0; i < n; i++) {                                                          \
                ACC_##K##_T v = (ACC_##K##_T)x[i];                                                 \
                if (ci < 0 || BETTER_##R##_##K(v, c)) {                                            \
                    c = v;                                                                         \
                    ci = index + i;                                                                \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        *(ACC_##K##_T *)valv = c;                                                                  \
        *idx = ci;                                                                                 \
    }                                                                                              \
    CPU_CLONES static void varg_##R##_##K##_##s(void *restrict valv, int64_t *restrict idx,        \
                                                const void *restrict xv, int n, int64_t index)     \
    {                                                                                              \
        ACC_##K##_T *restrict val = valv;                                                          \
        const T *restrict x = xv;                                                                  \
        CHUNK_LOOP(n, {                                                                            \
            ACC_##K##_T v = (ACC_##K##_T)x[i];                                                     \
            bool take = (idx[i] < 0) | BETTER_##R##_##K(v, val[i]);                                \
            val[i] = take ? v : val[i];                                                            \
            idx[i] = take ? index : idx[i];                                                        \
        });                                                                                        \
    }
#define DEF_ARGS(R, K) INPUTS_##K(DEF_ARG, R, K)
ARG_OPS(DEF_ARGS)

#define DEF_ARGCOMB(R, K)                                                                          \
    static void argcomb_##R##_##K(void *restrict valv, int64_t *restrict idx,                      \
                                  const void *restrict ov, const int64_t *restrict oidx, int n)    \
    {                                                                                              \
        ACC_##K##_T *restrict val = valv;                                                          \
        const ACC_##K##_T *restrict o = ov;                                                        \
        for (int i = 0; i < n; i++)                                                                \
            if (oidx[i] >= 0 && (idx[i] < 0 || BETTER_##R##_##K(o[i], val[i]))) {                  \
                val[i] = o[i];                                                                     \
                idx[i] = oidx[i];                                                                  \
            }                                                                                      \
    }
ARG_OPS(DEF_ARGCOMB)

/* ---- conversion to the output ---- */

#define FINS(X)                                                                                    \
    X(F, b, uint8_t, x != 0)                                                                       \
    X(F, i32, int32_t, cpu_f64_to_i32(x))                                                          \
    X(F, i64, int64_t, cpu_f64_to_i64(x))                                                          \
    X(F, f32, float, x)                                                                            \
    X(F, f64, double, x)                                                                           \
    X(I, b, uint8_t, x != 0)                                                                       \
    X(I, i32, int32_t, (uint32_t)(uint64_t)x)                                                      \
    X(I, i64, int64_t, x)                                                                          \
    X(I, f32, float, x)                                                                            \
    X(I, f64, double, x)

#define DEF_FIN(K, s, T, expr)                                                                     \
    static void fin_##K##_##s(void *restrict dv, const void *restrict av, int n)                   \
    {                                                                                              \
        T *restrict d = dv;                                                                        \
        const ACC_##K##_T *restrict a = av;                                                        \
        CHUNK_LOOP(n, {                                                                            \
            ACC_##K##_T x = a[i];                                                                  \
            d[i] = (T)(expr);                                                                      \
        });                                                                                        \
    }
FINS(DEF_FIN)

/* ---- tables ---- */

enum { R_SUM, R_PROD, R_AMAX, R_AMIN, R_ANY, R_ALL, R_ARGMAX, R_ARGMIN, R__COUNT };
enum { K_F = CPU_ACC_F, K_I = CPU_ACC_I, K__COUNT };

typedef void (*FoldFn)(void *restrict, const void *restrict, int);
typedef void (*ArgFn)(void *restrict, int64_t *restrict, const void *restrict, int, int64_t);

#define REG_HFOLD(R, K, s, T) [R_##R][K_##K][DT_##s] = hfold_##R##_##K##_##s,
#define REG_HFOLDS(R, K) INPUTS_##K(REG_HFOLD, R, K)
static const FoldFn hfold_table[R__COUNT][K__COUNT][FC_DTYPE__COUNT] = {FOLD_OPS(REG_HFOLDS)};

#define REG_VFOLD(R, K, s, T) [R_##R][K_##K][DT_##s] = vfold_##R##_##K##_##s,
#define REG_VFOLDS(R, K) INPUTS_##K(REG_VFOLD, R, K)
static const FoldFn vfold_table[R__COUNT][K__COUNT][FC_DTYPE__COUNT] = {FOLD_OPS(REG_VFOLDS)};

#define REG_COMB(R, K) [R_##R][K_##K] = comb_##R##_##K,
static void (*const comb_table[R__COUNT][K__COUNT])(void *restrict, const void *restrict, int) = {
    FOLD_OPS(REG_COMB)};

#define REG_HARG(R, K, s, T) [R_##R][K_##K][DT_##s] = harg_##R##_##K##_##s,
#define REG_HARGS(R, K) INPUTS_##K(REG_HARG, R, K)
static const ArgFn harg_table[R__COUNT][K__COUNT][FC_DTYPE__COUNT] = {ARG_OPS(REG_HARGS)};

#define REG_VARG(R, K, s, T) [R_##R][K_##K][DT_##s] = varg_##R##_##K##_##s,
#define REG_VARGS(R, K) INPUTS_##K(REG_VARG, R, K)
static const ArgFn varg_table[R__COUNT][K__COUNT][FC_DTYPE__COUNT] = {ARG_OPS(REG_VARGS)};

#define REG_ARGCOMB(R, K) [R_##R][K_##K] = argcomb_##R##_##K,
static void (*const argcomb_table[R__COUNT][K__COUNT])(void *restrict, int64_t *restrict, const void *restrict,
                                                        const int64_t *restrict, int) = {ARG_OPS(REG_ARGCOMB)};

#define REG_FIN(K, s, T, expr) [K_##K][DT_##s] = fin_##K##_##s,
static void (*const fin_table[K__COUNT][FC_DTYPE__COUNT])(void *restrict, const void *restrict, int) = {
    FINS(REG_FIN)};

bool fc_cpu_reducer_init(CpuReducer *r, FcOp op, FcDType in, FcDType out)
{
    if ((unsigned)in >= FC_DTYPE__COUNT || (unsigned)out >= FC_DTYPE__COUNT)
        return false;
    bool fin = fc_dtype_is_float(in), fout = fc_dtype_is_float(out);
    int ri;
    CpuAccKind kind;
    *r = (CpuReducer){.op = op};
    switch (op) {
    case FC_OP_SUM:
    case FC_OP_PROD:
        ri = op == FC_OP_SUM ? R_SUM : R_PROD;
        kind = fin || fout ? CPU_ACC_F : CPU_ACC_I;
        if (kind == CPU_ACC_F)
            r->init.f = op == FC_OP_SUM ? 0.0 : 1.0;
        else
            r->init.i = op == FC_OP_SUM ? 0 : 1;
        break;
    case FC_OP_AMAX:
    case FC_OP_AMIN:
        ri = op == FC_OP_AMAX ? R_AMAX : R_AMIN;
        kind = fin ? CPU_ACC_F : CPU_ACC_I;
        if (kind == CPU_ACC_F)
            r->init.f = op == FC_OP_AMAX ? -INFINITY : INFINITY;
        else
            r->init.i = op == FC_OP_AMAX ? INT64_MIN : INT64_MAX;
        break;
    case FC_OP_ANY:
    case FC_OP_ALL:
        ri = op == FC_OP_ANY ? R_ANY : R_ALL;
        kind = CPU_ACC_I;
        r->init.i = op == FC_OP_ALL;
        break;
    case FC_OP_ARGMAX:
    case FC_OP_ARGMIN:
        ri = op == FC_OP_ARGMAX ? R_ARGMAX : R_ARGMIN;
        kind = fin ? CPU_ACC_F : CPU_ACC_I;
        r->arg = true;
        r->harg = harg_table[ri][kind][in];
        r->varg = varg_table[ri][kind][in];
        r->argcomb = argcomb_table[ri][kind];
        r->fin = fin_table[K_I][out];   /* the indices are what is stored */
        r->kind = kind;
        return r->harg && r->varg && r->argcomb && r->fin;
    default:
        return false;
    }
    r->kind = kind;
    r->hfold = hfold_table[ri][kind][in];
    r->vfold = vfold_table[ri][kind][in];
    r->comb = comb_table[ri][kind];
    r->fin = fin_table[kind][out];
    return r->hfold && r->vfold && r->comb && r->fin;
}

void fc_cpu_reducer_reset(const CpuReducer *r, void *acc, int64_t *idx, int n)
{
    if (r->arg) {
        for (int i = 0; i < n; i++)
            idx[i] = -1;
    }
    if (r->arg || r->kind == CPU_ACC_I) {
        int64_t *a = acc;
        for (int i = 0; i < n; i++)
            a[i] = r->arg ? 0 : r->init.i;
    } else if (r->init.f == 0 && !signbit(r->init.f)) {
        memset(acc, 0, (size_t)n * sizeof(double));     /* sums (the loop is scalar at -O2) */
    } else {
        double *a = acc;
        for (int i = 0; i < n; i++)
            a[i] = r->init.f;
    }
}
