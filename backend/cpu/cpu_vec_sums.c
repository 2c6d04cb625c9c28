/* cpu_vec_sums.c — the sums (and the product) of PyTorch's vectorised CPU kernels other than
 * at::sum, in their order, so that what is built on them has PyTorch's bits: FcOrderedSum of order
 * FC_SUM_LANES (softmax, log_softmax and their gradients along the last dim, SoftMaxKernel.cpp),
 * FC_SUM_NORM2 where norm's kernel vectorises (its other sums: cpu_serial_sums.c) and
 * FC_PROD_VEC (prod).
 *
 * PyTorch 1.13's AVX2 build, one output at a time:
 * - LANES (ATen/cpu/vec/functional_base.h's reduce_all, map_reduce_all, map2_reduce_all): a row of
 *   n elements read as vectors of W lanes (8 floats, 4 doubles); lane j starts at element j and adds
 *   every W-th one after it in turn, the last partial vector into the first lanes only; then
 *   the lanes are added: for float VecReduceAllSIMD's three shuffles, lane j with j ^ 4, then
 *   j ^ 2, then j ^ 1, ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)); for double in turn,
 *   ((a0 + a1) + a2) + a3. A row shorter than W is added in turn from its first element.
 *   With in2 the sum is of the products in[i] * in2[i], each added by one fma, as GCC contracts
 *   PyTorch's `acc + a * b` (vectors and scalar tails alike, -mfma); a product that starts a
 *   lane or that a row shorter than W holds is rounded alone.
 * - NORM2 (ReduceOpsKernel.cpp's norm_kernel_tensor_iterator_impl, p = 2, its fast path for a
 *   float32 iterator with one summed dim, fastest and contiguous): 8 lanes from 0, each adding
 *   x * x of every 8th element by one fma; the lanes added in turn into lane 0; then the rest of
 *   the row (n % 8 elements) into it: when there are 4 or more, the first 4 squares rounded and
 *   added in turn (GCC vectorised their products), the others by fma. Elsewhere (float64, other
 *   layouts) PyTorch's generic kernel runs: fc_cpu_serial_sum.
 * - PROD_VEC (Reduce.h's binary_kernel_reduce_vec: PyTorch's prod): the output filled with 1,
 *   then each 2-D block of the iterator (fc_cpu_sum_iter: its first two dims; the others walked
 *   in order, the third fastest) multiplied into it: a row contiguous along the reduced dim
 *   (vectorized_reduction, reduction128) by 4 vectors of W lanes, each lane multiplying every
 *   4W-th element from its first, then (v0 * v1) * (v2 * v3) lane by lane, the lanes in turn,
 *   that into the output, then the rest of the row in turn; outputs contiguous along the block's
 *   second dim (vectorized_outer_reduction) by 4W columns from their first row, down the rows,
 *   times the output, the remaining columns in turn; anything else element by element.
 * Every other add (multiply) is one IEEE operation of the element type (ISO C: no contraction).
 * Outputs of the sums are independent: threads share them out, never a sum, so the bits do not
 * depend on the threads; a product runs on one thread (its blocks accumulate into the output).
 * Depends on cpu_internal.h, cpu_math.h (CPU_MATH_CLONES: hardware fma) and cpu_plan.h (its
 * error). */
#include "cpu_internal.h"
#include "cpu_math.h"
#include "cpu_plan.h"

#include <math.h>

enum { BLOCK = 64 };    /* outputs per task */

typedef struct Job {
    const FcOrderedSum *s;
    int d;                      /* the summed dim */
    int64_t n;                  /* its extent */
    int nk;                     /* kept dims, in order */
    int kd[FC_MAX_DIMS];
    int64_t m;                  /* extent of the last kept dim (1 when none), whose outputs go by BLOCK */
    int64_t nblk;               /* blocks per run of it */
} Job;

/* Element offsets (in, in2) of output o's first summed element, o in C order over the kept dims. */
static void out_base(const Job *j, int64_t o, int64_t *x, int64_t *x2)
{
    *x = *x2 = 0;
    for (int k = j->nk - 1; k >= 0; k--) {
        int dim = j->kd[k];
        int64_t sz = j->s->shape[dim], i = o % sz;
        o /= sz;
        *x += i * j->s->strides[dim];
        *x2 += i * j->s->strides2[dim];
    }
}

/* N: name suffix, T: element type, W: lanes, FMA: libm's fma at T, COMBINE(a): the lanes added. */
#define DEF_VEC_SUM(N, T, W, FMA, COMBINE)                                                          \
    /* One output's row (LANES): elements x[0], x[sd], ... (times y[...] when y). */                \
    CPU_MATH_INLINE T N##_lanes(const T *x, int64_t sd, const T *y, int64_t sd2, int64_t n)                   \
    {                                                                                               \
        T a[W];                                                                                     \
        if (n < W) {                                                                                \
            T s = 0;                                                                                \
            for (int64_t i = 0; i < n; i++) {                                                       \
                T v = y ? x[i * sd] * y[i * sd2] : x[i * sd];                                       \
                s = i == 0 ? v : s + v;                                                             \
            }                                                                                       \
            return s;                                                                               \
        }                                                                                           \
        for (int l = 0; l < W; l++)                                                                 \
            a[l] = y ? x[l * sd] * y[l * sd2] : x[l * sd];                                          \
        for (int64_t i = W; i < n; i += W) {                                                        \
            int k = n - i < W ? (int)(n - i) : W;                                                   \
            for (int l = 0; l < k; l++)                                                             \
                a[l] = y ? FMA(x[(i + l) * sd], y[(i + l) * sd2], a[l]) : a[l] + x[(i + l) * sd];  \
        }                                                                                           \
        return COMBINE(a);                                                                          \
    }                                                                                               \
                                                                                                    \
    CPU_MATH_CLONES static bool N##_task(void *arg, int tid, int64_t task)                      \
    {                                                                                               \
        const Job *j = arg;                                                                         \
        const FcOrderedSum *s = j->s;                                                               \
        const T *in = s->in, *in2 = s->in2;                                                         \
        T *out = s->out;                                                                            \
        int64_t q = task / j->nblk, b0 = task % j->nblk * BLOCK;                                    \
        int64_t cnt = j->m - b0 < BLOCK ? j->m - b0 : BLOCK, o = q * j->m + b0;                     \
        int64_t sd = s->strides[j->d], sd2 = in2 ? s->strides2[j->d] : 0;                           \
        int last = j->nk > 0 ? j->kd[j->nk - 1] : 0;                                                \
        int64_t sj = j->nk > 0 ? s->strides[last] : 0, sj2 = j->nk > 0 && in2 ? s->strides2[last] : 0; \
        int64_t x, x2;                                                                              \
        out_base(j, o, &x, &x2);                                                                    \
        for (int64_t t = 0; t < cnt; t++)                                                           \
            out[o + t] = N##_lanes(in + x + t * sj, sd, in2 ? in2 + x2 + t * sj2 : NULL, sd2, j->n);   \
        return true;                                                                                \
    }

#define COMBINE_F32(a) ((((a)[0] + (a)[4]) + ((a)[2] + (a)[6])) + (((a)[1] + (a)[5]) + ((a)[3] + (a)[7])))
#define COMBINE_F64(a) ((((a)[0] + (a)[1]) + (a)[2]) + (a)[3])

DEF_VEC_SUM(f32, float, 8, fmaf, COMBINE_F32)
DEF_VEC_SUM(f64, double, 4, fma, COMBINE_F64)

/* NORM2's fast path: the sum of squares of one contiguous row of n float32. */
CPU_MATH_CLONES static float norm2_row(const float *x, int64_t n)
{
    float a[8] = {0};
    int64_t d = 0;
    for (; d < n - n % 8; d += 8)
        for (int l = 0; l < 8; l++)
            a[l] = fmaf(x[d + l], x[d + l], a[l]);
    float b = a[0];
    for (int l = 1; l < 8; l++)
        b = b + a[l];
    int64_t rounded = n - d >= 4 ? d + 4 : d;
    for (; d < rounded; d++)
        b = b + x[d] * x[d];
    for (; d < n; d++)
        b = fmaf(x[d], x[d], b);
    return b;
}

typedef struct NormJob {
    const FcOrderedSum *s;
    CpuSumIter it;              /* its dim 0 the row, the others the outputs' */
} NormJob;

static bool norm2_task(void *arg, int tid, int64_t task)
{
    const NormJob *j = arg;
    const CpuSumIter *it = &j->it;
    int64_t onum = 1;
    for (int d = 1; d < it->nd; d++)
        onum *= it->shape[d];
    for (int64_t q0 = task * BLOCK; q0 < onum && q0 < (task + 1) * BLOCK; q0++) {
        int64_t q = q0, x = 0, o = 0;
        for (int d = 1; d < it->nd; d++) {
            x += q % it->shape[d] * it->ist[d];
            o += q % it->shape[d] * it->ost[d];
            q /= it->shape[d];
        }
        ((float *)j->s->out)[o] = norm2_row((const float *)j->s->in + x, it->shape[0]);
    }
    return true;
}

/* NORM2: its kernel's fast path where PyTorch takes it (is_reduce_lastdim: one summed dim, the
 * iterator's first, contiguous; float32), else the generic kernel's serial sum. */
static FcStatus norm2_sum(CpuBackend *be, const FcOrderedSum *s, FcError *err)
{
    NormJob j = {.s = s};
    int64_t onum = 1, n = 1;
    for (int d = 0; d < s->ndim; d++) {
        if ((s->reduced >> d) & 1)
            n *= s->shape[d];
        else
            onum *= s->shape[d];
    }
    if (s->dtype != FC_FLOAT32 || s->in2 || onum == 0 || n == 0)
        return fc_cpu_serial_sum(be, s, err);
    fc_cpu_sum_iter(s, &j.it);
    bool lastdim = j.it.ost[0] == 0 && j.it.ist[0] == 1 && (j.it.nd == 1 || j.it.ost[1] != 0);
    if (!lastdim)
        return fc_cpu_serial_sum(be, s, err);
    int64_t ntasks = (onum + BLOCK - 1) / BLOCK;
    int nth = onum * n >= 65536 && ntasks > 1 ? fc_cpu_clamp_threads(be, be->nthreads) : 1;
    if (!fc_cpu_parallel_for(be, nth, ntasks, norm2_task, &j, s->interrupt))
        return cpu_errorf(err, FC_ERR_INTERRUPT, "interrupted");
    return FC_OK;
}

/* PROD_VEC of element type T (W lanes: 4 vectors of them make a group). */
#define DEF_VEC_PROD(N, T, W)                                                                       \
    /* A row of n contiguous elements multiplied into *out (vectorized_reduction). */              \
    static void N##_prod_row(const T *x, int64_t n, T *out)                                         \
    {                                                                                               \
        int64_t count = n / (4 * W);                                                                \
        if (count > 0) {                                                                            \
            T acc[4 * W];                                                                           \
            for (int k = 0; k < 4 * W; k++)                                                         \
                acc[k] = x[k];                                                                      \
            for (int64_t i = 1; i < count; i++)                                                     \
                for (int k = 0; k < 4 * W; k++)                                                     \
                    acc[k] = acc[k] * x[i * 4 * W + k];                                             \
            T b = (acc[0] * acc[W]) * (acc[2 * W] * acc[3 * W]);                                    \
            for (int l = 1; l < W; l++)                                                             \
                b = b * ((acc[l] * acc[W + l]) * (acc[2 * W + l] * acc[3 * W + l]));                \
            *out = *out * b;                                                                        \
        }                                                                                           \
        for (int64_t i = count * 4 * W; i < n; i++)                                                 \
            *out = *out * x[i];                                                                     \
    }                                                                                               \
                                                                                                    \
    /* One 2-D block: size0 x size1 elements, strides os0, is0 (its first dim), os1, is1. */       \
    static void N##_prod_block(const T *in, T *out, int64_t size0, int64_t size1, int64_t os0, int64_t is0, \
                               int64_t os1, int64_t is1)                                            \
    {                                                                                               \
        if (os0 == 0 && is0 == 1) {                                                                 \
            for (int64_t j = 0; j < size1; j++)                                                     \
                N##_prod_row(in + j * is1, size0, out + j * os1);                                   \
        } else if (os0 == 0 && os1 == 1 && is1 == 1) {                                              \
            int64_t full = size1 / (4 * W) * (4 * W);                                               \
            for (int64_t c0 = 0; c0 < full; c0 += 4 * W) {                                          \
                T acc[4 * W];                                                                       \
                for (int k = 0; k < 4 * W; k++)                                                     \
                    acc[k] = in[c0 + k];                                                            \
                for (int64_t i = 1; i < size0; i++)                                                 \
                    for (int k = 0; k < 4 * W; k++)                                                 \
                        acc[k] = acc[k] * in[i * is0 + c0 + k];                                     \
                for (int k = 0; k < 4 * W; k++)                                                     \
                    out[c0 + k] = acc[k] * out[c0 + k];                                             \
            }                                                                                       \
            for (int64_t c = full; c < size1; c++)                                                  \
                for (int64_t i = 0; i < size0; i++)                                                 \
                    out[c] = out[c] * in[i * is0 + c];                                              \
        } else {                                                                                    \
            for (int64_t j = 0; j < size1; j++)                                                     \
                for (int64_t i = 0; i < size0; i++)                                                 \
                    out[j * os1 + i * os0] = out[j * os1 + i * os0] * in[j * is1 + i * is0];        \
        }                                                                                           \
    }

DEF_VEC_PROD(f32, float, 8)
DEF_VEC_PROD(f64, double, 4)

/* PROD_VEC: the output filled with 1, then the iterator's 2-D blocks in order, each multiplied
 * into it as binary_kernel_reduce_vec's loop does (one thread: the outputs of a block depend on
 * the blocks before it). */
static FcStatus vec_prod(const FcOrderedSum *s, FcError *err)
{
    if ((s->dtype != FC_FLOAT32 && s->dtype != FC_FLOAT64) || s->out_dtype != s->dtype || s->in2)
        return cpu_errorf(err, FC_ERR_RUNTIME, "internal error: a product it cannot take");
    int64_t onum = 1, inum = 1;
    for (int d = 0; d < s->ndim; d++) {
        inum *= s->shape[d];
        onum *= (s->reduced >> d) & 1 ? 1 : s->shape[d];
    }
    bool f32 = s->dtype == FC_FLOAT32;
    for (int64_t o = 0; o < onum; o++) {
        if (f32)
            ((float *)s->out)[o] = 1;
        else
            ((double *)s->out)[o] = 1;
    }
    if (inum == 0)
        return FC_OK;
    CpuSumIter it;
    fc_cpu_sum_iter(s, &it);
    int64_t size0 = it.nd > 0 ? it.shape[0] : 1, size1 = it.nd > 1 ? it.shape[1] : 1;
    int64_t os0 = it.nd > 0 ? it.ost[0] : 0, is0 = it.nd > 0 ? it.ist[0] : 0;
    int64_t os1 = it.nd > 1 ? it.ost[1] : 0, is1 = it.nd > 1 ? it.ist[1] : 0;
    int64_t idx[FC_MAX_DIMS] = {0};
    for (;;) {
        int64_t x = 0, o = 0;
        for (int d = 2; d < it.nd; d++) {
            x += idx[d] * it.ist[d];
            o += idx[d] * it.ost[d];
        }
        if (f32)
            f32_prod_block((const float *)s->in + x, (float *)s->out + o, size0, size1, os0, is0, os1, is1);
        else
            f64_prod_block((const double *)s->in + x, (double *)s->out + o, size0, size1, os0, is0, os1, is1);
        int d = 2;
        for (; d < it.nd; d++) {
            if (++idx[d] < it.shape[d])
                break;
            idx[d] = 0;
        }
        if (d >= it.nd)
            return FC_OK;
        if (s->interrupt && *s->interrupt)
            return cpu_errorf(err, FC_ERR_INTERRUPT, "interrupted");
    }
}

FcStatus fc_cpu_vec_sum(CpuBackend *be, const FcOrderedSum *s, FcError *err)
{
    if (s->order == FC_SUM_NORM2)
        return norm2_sum(be, s, err);
    if (s->order == FC_PROD_VEC)
        return vec_prod(s, err);
    Job j = {.s = s, .d = -1, .n = 1, .m = 1};
    int64_t onum = 1;
    for (int k = 0; k < s->ndim; k++) {
        if ((s->reduced >> k) & 1) {
            if (j.d >= 0)
                return cpu_errorf(err, FC_ERR_RUNTIME, "internal error: an ordered sum over more than one dim");
            j.d = k;
            j.n = s->shape[k];
        } else {
            j.kd[j.nk++] = k;
            onum *= s->shape[k];
        }
    }
    if (j.d < 0 || s->order != FC_SUM_LANES || (s->dtype != FC_FLOAT32 && s->dtype != FC_FLOAT64) ||
        s->out_dtype != s->dtype)
        return cpu_errorf(err, FC_ERR_RUNTIME, "internal error: an ordered sum it cannot take");
    if (onum == 0)
        return FC_OK;
    j.m = j.nk > 0 ? s->shape[j.kd[j.nk - 1]] : 1;
    j.nblk = (j.m + BLOCK - 1) / BLOCK;
    int64_t ntasks = onum / j.m * j.nblk;
    CpuTaskFn fn = s->dtype == FC_FLOAT32 ? f32_task : f64_task;
    /* threads only for work worth waking them (a task sums up to BLOCK outputs) */
    int nth = onum * j.n >= 65536 && ntasks > 1 ? fc_cpu_clamp_threads(be, be->nthreads) : 1;
    if (!fc_cpu_parallel_for(be, nth, ntasks, fn, &j, s->interrupt))
        return cpu_errorf(err, FC_ERR_INTERRUPT, "interrupted");
    return FC_OK;
}
