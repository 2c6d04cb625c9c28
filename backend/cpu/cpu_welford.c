/* cpu_welford.c — var's and std's sum of squared deviations (m2) as PyTorch's WelfordOps computes
 * it (FcOrderedSum of order FC_SUM_WELFORD), so that var and std over some dims have PyTorch's
 * bits.
 *
 * PyTorch 1.13's CPU var and std over dims whose result has more than one element (and every
 * bfloat16 and float16 one) run ReduceOpsKernel.cpp's std_var_kernel_impl: binary_kernel_reduce
 * with WelfordOps<scalar_t, double, int64_t, double>. Per output, the summed elements in its
 * TensorIterator's order (fc_cpu_sum_iter: the summed dims fastest first), each read as a double:
 *   n += 1; delta = x - mean; mean = mean + delta / n; m2 = m2 + delta * (x - mean)
 * the last add and product one fma (GCC contracts it in the AVX2 build, -mfma); every other
 * operation one IEEE operation in double (ISO C here: no contraction). The output is m2 in
 * float64; the scheduler divides and roots it. PyTorch splits one output's reduction over
 * threads from 32768 elements on when it has more than one; this is its one-thread result.
 * Here outputs are independent: threads share them out, and a task updates a block of outputs
 * along the fastest kept dim element by element, each output's own updates in its order, so
 * the bits do not depend on the threads.
 * Depends on cpu_internal.h, cpu_math.h (CPU_MATH_CLONES: hardware fma) and cpu_plan.h (its
 * error). */
#include "cpu_internal.h"
#include "cpu_math.h"
#include "cpu_plan.h"

#include <math.h>

enum { BLOCK = 64 };    /* outputs updated together along the fastest kept dim (at most) */

typedef struct Job {
    const FcOrderedSum *s;
    CpuSumIter it;
    int nr;                     /* the iterator's summed dims: its first nr */
    int64_t m;                  /* extent of the first kept dim (1 when none): a block's dim */
    int64_t blk;                /* outputs per block (BLOCK, fewer to share few outputs out) */
    int64_t nblk;               /* blocks along it */
} Job;

/* N: name suffix, T: element type, LOAD(p): element *p as a double. */
#define DEF_WELFORD(N, T, LOAD)                                                                     \
    CPU_MATH_CLONES static bool N##_task(void *arg, int tid, int64_t task)                          \
    {                                                                                               \
        const Job *j = arg;                                                                         \
        const CpuSumIter *it = &j->it;                                                              \
        const T *in = j->s->in;                                                                     \
        double *out = j->s->out;                                                                    \
        int64_t q = task / j->nblk, b0 = task % j->nblk * j->blk;                                   \
        int64_t cnt = j->m - b0 < j->blk ? j->m - b0 : j->blk;                                      \
        int kb = j->nr;                 /* the block's dim, when there is a kept one */             \
        int64_t sb = kb < it->nd ? it->ist[kb] : 0, ob = kb < it->nd ? it->ost[kb] : 0;             \
        int64_t x = b0 * sb, o = b0 * ob;                                                           \
        for (int d = kb + 1; d < it->nd; d++) {                                                     \
            x += q % it->shape[d] * it->ist[d];                                                     \
            o += q % it->shape[d] * it->ost[d];                                                     \
            q /= it->shape[d];                                                                      \
        }                                                                                           \
        double mean[BLOCK], m2[BLOCK];                                                              \
        for (int64_t t = 0; t < cnt; t++)                                                           \
            mean[t] = m2[t] = 0;                                                                    \
        int64_t idx[FC_MAX_DIMS] = {0}, n0 = j->nr > 0 ? it->shape[0] : 1, s0 = j->nr > 0 ? it->ist[0] : 0; \
        double count = 0;                                                                           \
        for (;;) {                                                                                  \
            int64_t r = x;                                                                          \
            for (int d = 1; d < j->nr; d++)                                                         \
                r += idx[d] * it->ist[d];                                                           \
            for (int64_t i = 0; i < n0; i++, r += s0) {                                             \
                double nf = ++count;                                                                \
                for (int64_t t = 0; t < cnt; t++) {                                                 \
                    double v = LOAD(in + r + t * sb);                                               \
                    double delta = v - mean[t];                                                     \
                    mean[t] = mean[t] + delta / nf;                                                 \
                    m2[t] = fma(delta, v - mean[t], m2[t]);                                         \
                }                                                                                   \
            }                                                                                       \
            int d = 1;                                                                              \
            for (; d < j->nr; d++) {                                                                \
                if (++idx[d] < it->shape[d])                                                        \
                    break;                                                                          \
                idx[d] = 0;                                                                         \
            }                                                                                       \
            if (d >= j->nr)                                                                         \
                break;                                                                              \
        }                                                                                           \
        for (int64_t t = 0; t < cnt; t++)                                                           \
            out[o + t * ob] = m2[t];                                                                \
        return true;                                                                                \
    }

#define LOAD_F32(p) ((double)*(p))
#define LOAD_F64(p) (*(p))
#define LOAD_BF16(p) ((double)fc_bf16_to_f32(*(p)))
#define LOAD_F16(p) ((double)fc_f16_to_f32(*(p)))

DEF_WELFORD(f32, float, LOAD_F32)
DEF_WELFORD(f64, double, LOAD_F64)
DEF_WELFORD(bf16, uint16_t, LOAD_BF16)
DEF_WELFORD(f16, uint16_t, LOAD_F16)

FcStatus fc_cpu_welford(CpuBackend *be, const FcOrderedSum *s, FcError *err)
{
    if (s->out_dtype != FC_FLOAT64 || s->in2)
        return cpu_errorf(err, FC_ERR_RUNTIME, "internal error: a Welford m2 it cannot take");
    Job j = {.s = s, .m = 1};
    int64_t onum = 1, n = 1;
    for (int d = 0; d < s->ndim; d++) {
        if ((s->reduced >> d) & 1)
            n *= s->shape[d];
        else
            onum *= s->shape[d];
    }
    if (onum == 0)
        return FC_OK;
    fc_cpu_sum_iter(s, &j.it);
    if (n == 0) {
        /* nothing summed: m2 is 0 (and var 0 / 0) */
        for (int64_t o = 0; o < onum; o++)
            ((double *)s->out)[o] = 0;
        return FC_OK;
    }
    while (j.nr < j.it.nd && j.it.ost[j.nr] == 0)
        j.nr++;
    j.m = j.nr < j.it.nd ? j.it.shape[j.nr] : 1;
    /* threads only for work worth waking them, each given two tasks or more where the outputs
     * allow (batch norm's statistics: few outputs, each of many elements) */
    int nth = onum * n >= 32768 ? fc_cpu_clamp_threads(be, be->nthreads) : 1;
    j.blk = BLOCK;
    while (nth > 1 && j.blk > 8 && onum / j.m * ((j.m + j.blk - 1) / j.blk) < 2 * nth)
        j.blk /= 2;
    j.nblk = (j.m + j.blk - 1) / j.blk;
    int64_t ntasks = onum / j.m * j.nblk;
    CpuTaskFn fn = s->dtype == FC_FLOAT32   ? f32_task
                   : s->dtype == FC_FLOAT64 ? f64_task
                   : s->dtype == FC_BFLOAT16 ? bf16_task
                                             : f16_task;
    if (nth <= 1 || ntasks <= 1) {
        for (int64_t t = 0; t < ntasks; t++) {
            fn(&j, 0, t);
            if (s->interrupt && *s->interrupt)
                return cpu_errorf(err, FC_ERR_INTERRUPT, "interrupted");
        }
        return FC_OK;
    }
    if (!fc_cpu_parallel_for(be, nth, ntasks, fn, &j, s->interrupt))
        return cpu_errorf(err, FC_ERR_INTERRUPT, "interrupted");
    return FC_OK;
}
