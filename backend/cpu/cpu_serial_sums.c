/* cpu_serial_sums.c — the reductions PyTorch's CPU computes one output at a time, each element
 * in turn (FcOrderedSum of order FC_SUM_SERIAL, FC_SUM_WELFORD, and FC_SUM_NORM2 where its kernel
 * does not vectorise), so that what is built on them has PyTorch's bits: norm's sums (of |x|,
 * |x|^p, x * x), var's and std's m2, the softmax kernels' sums along a dim that is not the last.
 *
 * PyTorch 1.13's binary_kernel_reduce (ReduceOpsKernel.cpp's norm and std_var kernels) runs each
 * output's elements in its TensorIterator's order (fc_cpu_sum_iter: the summed dims fastest
 * first); the softmax kernels along one dim add from its first element in turn. Per element:
 * - SERIAL: acc + x, in the dtype; with in2, x * y added by one fma;
 * - NORM2: x * x added by one fma (NormTwoOps, contracted in the AVX2 build);
 * - WELFORD (WelfordOps<scalar_t, double>): x read as a double, n += 1; delta = x - mean;
 *   mean = mean + delta / n; m2 = m2 + delta * (x - mean), the last one fma; the output is m2
 *   in float64 (the scheduler divides and roots it).
 * Every other operation is one IEEE operation (ISO C here: no contraction). PyTorch splits one
 * output's reduction over threads from 32768 elements on when it has more than one; this is its
 * one-thread result. Here outputs are independent: threads share them out, and a task updates
 * a block of outputs along the fastest kept dim element by element, each output's own updates
 * in its order, so the bits do not depend on the threads.
 * Depends on cpu_internal.h, cpu_math.h (CPU_MATH_CLONES: hardware fma) and cpu_plan.h (its
 * error). */
#include "cpu_internal.h"
#include "cpu_math.h"
#include "cpu_plan.h"

#include <math.h>
#include <string.h>

enum { BLOCK = 64 };    /* outputs updated together along the fastest kept dim (at most) */

typedef struct Job {
    const FcOrderedSum *s;
    CpuSumIter it;
    int nr;                     /* the iterator's summed dims: its first nr */
    int64_t m;                  /* extent of the first kept dim (1 when none): a block's dim */
    int64_t blk;                /* outputs per block (BLOCK, fewer to share few outputs out) */
    int64_t nblk;               /* blocks along it */
} Job;

/* The first elements (in, in2, out) of the outputs of task: its block's first output. */
static void task_base(const Job *j, int64_t task, int64_t *x, int64_t *x2, int64_t *o, int64_t *cnt)
{
    const CpuSumIter *it = &j->it;
    int64_t q = task / j->nblk, b0 = task % j->nblk * j->blk;
    int kb = j->nr;
    *cnt = j->m - b0 < j->blk ? j->m - b0 : j->blk;
    *x = kb < it->nd ? b0 * it->ist[kb] : 0;
    *x2 = kb < it->nd ? b0 * it->ist2[kb] : 0;
    *o = kb < it->nd ? b0 * it->ost[kb] : 0;
    for (int d = kb + 1; d < it->nd; d++) {
        int64_t i = q % it->shape[d];
        *x += i * it->ist[d];
        *x2 += i * it->ist2[d];
        *o += i * it->ost[d];
        q /= it->shape[d];
    }
}

/* The summed elements of a block in order: BODY runs for each, with r, r2 their offsets in in,
 * in2 (the block's first output's), count the elements so far (this one included). */
#define FOR_SUMMED(j, x, x2, BODY)                                                                  \
    do {                                                                                            \
        const CpuSumIter *it_ = &(j)->it;                                                           \
        int64_t idx_[FC_MAX_DIMS] = {0}, count = 0;                                                 \
        int64_t n0_ = (j)->nr > 0 ? it_->shape[0] : 1;                                              \
        int64_t s0_ = (j)->nr > 0 ? it_->ist[0] : 0, t0_ = (j)->nr > 0 ? it_->ist2[0] : 0;          \
        for (;;) {                                                                                  \
            int64_t r = (x), r2 = (x2);                                                             \
            for (int d_ = 1; d_ < (j)->nr; d_++) {                                                  \
                r += idx_[d_] * it_->ist[d_];                                                       \
                r2 += idx_[d_] * it_->ist2[d_];                                                     \
            }                                                                                       \
            for (int64_t i_ = 0; i_ < n0_; i_++, r += s0_, r2 += t0_) {                             \
                count++;                                                                            \
                BODY                                                                                \
            }                                                                                       \
            int d_ = 1;                                                                             \
            for (; d_ < (j)->nr; d_++) {                                                            \
                if (++idx_[d_] < it_->shape[d_])                                                    \
                    break;                                                                          \
                idx_[d_] = 0;                                                                       \
            }                                                                                       \
            if (d_ >= (j)->nr)                                                                      \
                break;                                                                              \
        }                                                                                           \
        (void)count;                                                                                \
    } while (0)

/* SERIAL and NORM2 of float32 or float64 (T, FMA: libm's fma at T). */
#define DEF_SERIAL(N, T, FMA)                                                                       \
    CPU_MATH_CLONES static bool N##_serial_task(void *arg, int tid, int64_t task)                  \
    {                                                                                               \
        const Job *j = arg;                                                                         \
        const FcOrderedSum *s = j->s;                                                               \
        const T *in = s->in, *in2 = s->in2;                                                         \
        T *out = s->out;                                                                            \
        int64_t x, x2, o, cnt, kb = j->nr;                                                          \
        task_base(j, task, &x, &x2, &o, &cnt);                                                      \
        int64_t sb = kb < j->it.nd ? j->it.ist[kb] : 0, sb2 = kb < j->it.nd ? j->it.ist2[kb] : 0;   \
        int64_t ob = kb < j->it.nd ? j->it.ost[kb] : 0;                                             \
        T acc[BLOCK];                                                                               \
        for (int64_t t = 0; t < cnt; t++)                                                           \
            acc[t] = 0;                                                                             \
        if (s->order == FC_SUM_NORM2)                                                               \
            FOR_SUMMED(j, x, x2, {                                                                  \
                for (int64_t t = 0; t < cnt; t++)                                                   \
                    acc[t] = FMA(in[r + t * sb], in[r + t * sb], acc[t]);                           \
            });                                                                                     \
        else if (in2)                                                                               \
            FOR_SUMMED(j, x, x2, {                                                                  \
                for (int64_t t = 0; t < cnt; t++)                                                   \
                    acc[t] = FMA(in[r + t * sb], in2[r2 + t * sb2], acc[t]);                        \
            });                                                                                     \
        else                                                                                        \
            FOR_SUMMED(j, x, x2, {                                                                  \
                for (int64_t t = 0; t < cnt; t++)                                                   \
                    acc[t] = acc[t] + in[r + t * sb];                                               \
            });                                                                                     \
        for (int64_t t = 0; t < cnt; t++)                                                           \
            out[o + t * ob] = acc[t];                                                               \
        return true;                                                                                \
    }

DEF_SERIAL(f32, float, fmaf)
DEF_SERIAL(f64, double, fma)

/* WELFORD of element type T (LOAD(p): element *p as a double). */
#define DEF_WELFORD(N, T, LOAD)                                                                     \
    CPU_MATH_CLONES static bool N##_welford_task(void *arg, int tid, int64_t task)                 \
    {                                                                                               \
        const Job *j = arg;                                                                         \
        const T *in = j->s->in;                                                                     \
        double *out = j->s->out;                                                                    \
        int64_t x, x2, o, cnt, kb = j->nr;                                                          \
        task_base(j, task, &x, &x2, &o, &cnt);                                                      \
        int64_t sb = kb < j->it.nd ? j->it.ist[kb] : 0, ob = kb < j->it.nd ? j->it.ost[kb] : 0;     \
        double mean[BLOCK], m2[BLOCK];                                                              \
        for (int64_t t = 0; t < cnt; t++)                                                           \
            mean[t] = m2[t] = 0;                                                                    \
        FOR_SUMMED(j, x, x2, {                                                                      \
            double nf = (double)count;                                                              \
            for (int64_t t = 0; t < cnt; t++) {                                                     \
                double v = LOAD(in + r + t * sb);                                                   \
                double delta = v - mean[t];                                                         \
                mean[t] = mean[t] + delta / nf;                                                     \
                m2[t] = fma(delta, v - mean[t], m2[t]);                                             \
            }                                                                                       \
        });                                                                                         \
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

FcStatus fc_cpu_serial_sum(CpuBackend *be, const FcOrderedSum *s, FcError *err)
{
    bool welford = s->order == FC_SUM_WELFORD, wide = s->dtype == FC_FLOAT32 || s->dtype == FC_FLOAT64;
    if (welford ? s->out_dtype != FC_FLOAT64 || s->in2
                : (s->order != FC_SUM_SERIAL && s->order != FC_SUM_NORM2) || !wide || s->out_dtype != s->dtype)
        return cpu_errorf(err, FC_ERR_RUNTIME, "internal error: a serial reduction it cannot take");
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
    size_t oes = s->out_dtype == FC_FLOAT32 ? 4 : 8;
    if (n == 0) {
        /* nothing summed: 0 (var's m2 too) */
        memset(s->out, 0, (size_t)onum * oes);
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
    CpuTaskFn fn = !welford ? (s->dtype == FC_FLOAT32 ? f32_serial_task : f64_serial_task)
                   : s->dtype == FC_FLOAT32  ? f32_welford_task
                   : s->dtype == FC_FLOAT64  ? f64_welford_task
                   : s->dtype == FC_BFLOAT16 ? bf16_welford_task
                                             : f16_welford_task;
    if (!fc_cpu_parallel_for(be, nth, ntasks, fn, &j, s->interrupt))
        return cpu_errorf(err, FC_ERR_INTERRUPT, "interrupted");
    return FC_OK;
}
