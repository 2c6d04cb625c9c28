/* cpu_cascade_sum.c — a tensor's sum in at::sum's order (FcBackend.ordered_sum, FC_SUM_CASCADE), so that tdl's
 * float sums have PyTorch's bits.
 *
 * PyTorch 1.13's CPU sum (aten/src/ATen/native/cpu/SumKernel.cpp, cascade_sum, in its AVX2 build,
 * on one thread) is replayed step for step:
 * - the TensorIterator of reduce_op(out, in): the output C-contiguous over the kept dims with
 *   stride 0 along the summed ones; the dims sorted by reorder_dimensions (the summed dims first,
 *   then by strides, the output's before the input's) and merged by coalesce_dimensions;
 * - the output filled with zeros, then each 2-D block of that iterator (its first two dims; the
 *   others are walked in order, the first fastest) summed in the accumulation type (float for
 *   float32, bfloat16 and float16, double for float64) and added into the output in the output's
 *   own type (a bfloat16 output is rounded between blocks, after the block's sum is rounded);
 * - within a block, one of cascade_sum's four loops, chosen as it chooses them: a row contiguous
 *   along the sum (vectorized_inner_sum: vectors of 8 floats or 4 doubles, a bfloat16 vector of
 *   16 adding its halves, a float16 one its neighbours), a block contiguous along the outputs
 *   (vectorized_outer_sum: 32 outputs at a time as lanes, then 8, then one by one), or neither
 *   (scalar_inner_sum, scalar_outer_sum); each a multi_row_sum: a running sum of 16 or more
 *   terms flushed into the next of four levels (a cascade), four rows at a time (row_sum: a row
 *   as four interleaved ones).
 * Vectors are arrays of lanes here: a lane's adds are those of the vector's, in the same order.
 * Every add is one IEEE add in the accumulation type (the file is not compiled with contraction
 * or reassociation of float adds, and there is nothing to contract: no products).
 * PyTorch's own result for a sum of 32768 elements or more changes with its thread count
 * (TensorIteratorReduce.cpp's two_pass_reduction); this is its result on one thread, whatever
 * the threads here (see DEF_CASCADE for how they share a sum). An input that is not in memory
 * (FcOrderedSum.tile: the scheduler's expression computed a tile at a time) is read a tile of
 * spans at a time. The iterator (fc_cpu_sum_iter) is also the order of the serial reductions
 * (cpu_serial_sums.c).
 * Depends on cpu_internal.h, cpu_plan.h (its error) and mem.h. */
#include "cpu_internal.h"
#include "cpu_plan.h"
#include "mem.h"

#include <string.h>

#define LEVELS 4        /* multi_row_sum's num_levels */
#define ROWS 4          /* multi_row_sum's nrows in row_sum (ilp_factor) and the outer sums */
#define MAX_LANES 8     /* Vectorized<float>::size() under AVX2 */

/* c10::CeilLog2 */
static int64_t ceil_log2(int64_t x)
{
    return x <= 2 ? 1 : 64 - __builtin_clzll((uint64_t)(x - 1));
}

/* How a value (or a vector of them) is read: a number of the input, as the accumulation type;
 * a contiguous vector for the inner sum; a vector of LANES consecutive numbers for the outer. */
typedef enum { LD_SCALAR, LD_INNER, LD_OUTER } LoadKind;

/* ---- the iterator (TensorIterator's reorder_dimensions and coalesce_dimensions) ---- */

/* reorder_dimensions' comparison over (output, input, second input): 1 when dim d0 goes after
 * d1, -1 before, 0 undecided. */
typedef struct SwapUd { const FcOrderedSum *s; const int64_t *ost; } SwapUd;
static int should_swap(const void *ud, int d0, int d1)
{
    const FcOrderedSum *s = ((const SwapUd *)ud)->s;
    const int64_t *st[3] = {((const SwapUd *)ud)->ost, s->strides, s->strides2};
    for (int a = 0; a < (s->in2 ? 3 : 2); a++) {
        int64_t s0 = st[a][d0], s1 = st[a][d1];
        if (a == 0 && (s0 == 0) != (s1 == 0))
            return s1 == 0 ? 1 : -1;    /* the summed dims first */
        if (s0 == 0 || s1 == 0)
            continue;
        if (s0 < s1)
            return -1;
        if (s0 > s1)
            return 1;
        if (s->shape[d0] > s->shape[d1])
            return 1;
    }
    return 0;
}

void fc_cpu_sum_iter(const FcOrderedSum *s, CpuSumIter *it)
{
    int nd = s->ndim;
    int64_t ost[FC_MAX_DIMS];
    int64_t acc = 1;
    for (int d = nd - 1; d >= 0; d--) {
        bool red = (s->reduced >> d) & 1;
        ost[d] = red ? 0 : acc;
        acc *= red ? 1 : s->shape[d];
    }
    int perm[FC_MAX_DIMS];
    fc_reorder_dimensions(nd, perm, should_swap, &(SwapUd){s, ost});
    for (int i = 0; i < nd; i++) {
        it->shape[i] = s->shape[perm[i]];
        it->ost[i] = ost[perm[i]];
        it->ist[i] = s->strides[perm[i]];
        it->ist2[i] = s->in2 ? s->strides2[perm[i]] : 0;
    }
    it->nd = nd;
    if (nd <= 1)
        return;
    int prev = 0;
    for (int d = 1; d < nd; d++) {
        int64_t s0 = it->shape[prev], s1 = it->shape[d];
        bool can = s0 == 1 || s1 == 1 ||
                   (s0 * it->ost[prev] == it->ost[d] && s0 * it->ist[prev] == it->ist[d] &&
                    s0 * it->ist2[prev] == it->ist2[d]);
        if (can) {
            if (s0 == 1) {
                it->ost[prev] = it->ost[d];
                it->ist[prev] = it->ist[d];
                it->ist2[prev] = it->ist2[d];
            }
            it->shape[prev] *= s1;
        } else {
            prev++;
            if (prev != d) {
                it->ost[prev] = it->ost[d];
                it->ist[prev] = it->ist[d];
                it->ist2[prev] = it->ist2[d];
                it->shape[prev] = it->shape[d];
            }
        }
    }
    it->nd = prev + 1;
}

/* Where a streamed input's values are (FcOrderedSum.tile): the producer, and whether it failed. */
typedef struct Stream {
    const FcOrderedSum *s;
    int64_t n;                  /* its elements */
    FcError *err;
    FcStatus st;                /* the producer's failure */
} Stream;

/* The input and output of a sum: typed pointers (the input's element x at x[x - base]: a
 * streamed input's tile holds its elements from base on), and for a narrow dtype whether the
 * output is written in float32 (the sum of a bfloat16 or float16 tensor read as float32 by its
 * consumer). */
typedef struct { const float *x; float *out; int64_t base; Stream *stream; } f32_In;
typedef struct { const double *x; double *out; int64_t base; Stream *stream; } f64_In;
typedef struct { const uint16_t *x; void *out; int64_t base; Stream *stream; FcDType dt; bool wide; } h16_In;

#define f32_VEC 8
#define f64_VEC 4
#define h16_VEC 16      /* Vectorized<BFloat16>::size(), Vectorized<Half>::size() */

static inline __attribute__((always_inline)) void f32_load(const f32_In *in, int64_t x, LoadKind kind, float *v)
{
    int n = kind == LD_SCALAR ? 1 : 8;
    for (int l = 0; l < n; l++)
        v[l] = in->x[x - in->base + l];
}
static inline void f32_store(const f32_In *in, int64_t o, float v) { in->out[o] += v; }
static inline void f32_add_elem(const f32_In *in, int64_t o, int64_t x) { in->out[o] = in->out[o] + in->x[x - in->base]; }

static inline __attribute__((always_inline)) void f64_load(const f64_In *in, int64_t x, LoadKind kind, double *v)
{
    int n = kind == LD_SCALAR ? 1 : 4;
    for (int l = 0; l < n; l++)
        v[l] = in->x[x - in->base + l];
}
static inline void f64_store(const f64_In *in, int64_t o, double v) { in->out[o] += v; }
static inline void f64_add_elem(const f64_In *in, int64_t o, int64_t x) { in->out[o] = in->out[o] + in->x[x - in->base]; }

static inline float h16_get(const h16_In *in, int64_t x)
{
    return in->dt == FC_BFLOAT16 ? fc_bf16_to_f32(in->x[x - in->base]) : fc_f16_to_f32(in->x[x - in->base]);
}
/* A float rounded to the narrow dtype as c10's scalar conversion does (a NaN is 0x7FC0 in
 * bfloat16), back as a float. */
static inline float h16_round(const h16_In *in, float f)
{
    if (in->dt == FC_BFLOAT16)
        return f != f ? f : fc_bf16_to_f32(fc_f32_to_bf16(f));
    return fc_f16_to_f32(fc_f32_to_f16(f));
}
static inline float h16_out(const h16_In *in, int64_t o)
{
    if (in->wide)
        return ((const float *)in->out)[o];
    const uint16_t *p = in->out;
    return in->dt == FC_BFLOAT16 ? fc_bf16_to_f32(p[o]) : fc_f16_to_f32(p[o]);
}
static inline void h16_set(const h16_In *in, int64_t o, float v)
{
    if (in->wide) {
        ((float *)in->out)[o] = v;
        return;
    }
    uint16_t *p = in->out;
    p[o] = in->dt == FC_BFLOAT16 ? (v != v ? 0x7FC0 : fc_f32_to_bf16(v)) : fc_f32_to_f16(v);
}
static inline __attribute__((always_inline)) void h16_load(const h16_In *in, int64_t x, LoadKind kind, float *v)
{
    if (kind == LD_SCALAR) {
        v[0] = h16_get(in, x);
    } else if (kind == LD_OUTER) {
        for (int l = 0; l < 8; l++)
            v[l] = h16_get(in, x + l);
    } else if (in->dt == FC_BFLOAT16) {
        /* InnerSumCastLoadPolicy: the vector's two halves as floats, added */
        for (int l = 0; l < 8; l++)
            v[l] = h16_get(in, x + l) + h16_get(in, x + l + 8);
    } else {
        /* load_reduce_vec: neighbours added (Vectorized<Half> is the generic vector) */
        for (int l = 0; l < 8; l++)
            v[l] = h16_get(in, x + 2 * l) + h16_get(in, x + 2 * l + 1);
    }
}
/* CastStoreAccumulate: out += v in the narrow type, v converted to it first. */
static inline void h16_store(const h16_In *in, int64_t o, float v)
{
    h16_set(in, o, h16_round(in, h16_out(in, o) + h16_round(in, v)));
}
static inline void h16_add_elem(const h16_In *in, int64_t o, int64_t x)
{
    h16_set(in, o, h16_round(in, h16_out(in, o) + h16_get(in, x)));
}

/* ---- the sums, per accumulation type ---- */

/* Threads for one sum: the backend's pool, how many may work, the host's interrupt. */
typedef struct Par {
    CpuBackend *be;
    int nthreads;
    volatile int *interrupt;
} Par;

/* Work (values read) below which a part of a sum is not split over threads. */
#define PAR_WORK 65536
/* The values of a streamed input asked for at a time (FcOrderedSum.tile): whole spans, about
 * this many (4 MiB of float32: computed into a cache-sized tile, then summed from it). */
#define TILE_ELEMS ((int64_t)1 << 20)

/* DEF_CASCADE(N, ACC, LANES): multi_row_sum, row_sum and the four loops of a block for
 * accumulation type ACC with LANES lanes to a vector, over inputs read by N##_load. A sum that
 * is long enough is split over threads without changing a single add: a block's outputs by
 * ranges that begin at multiples of ROWS * LANES (the outer sums' groups), and a lone long
 * multi_row_sum by spans of step^3 rows (what its top level adds in order: each span's sum is
 * computed from zeros and the spans' sums added as its loop adds them; any long multi_row_sum of
 * a block whose outputs are not split). */
#define DEF_CASCADE(N, ACC, LANES)                                                                 \
    typedef struct { ACC a[LEVELS][ROWS][LANES]; } N##_Casc;                                       \
                                                                                                   \
    /* multi_row_sum's loop over whole steps of rows [i, end), i a multiple of the step: rows i at \
     * x + i * rs, row k of nrows at + k * cs, each a number or a vector (lanes of them). */       \
    static inline __attribute__((always_inline)) int64_t N##_steps(const N##_In *in, int64_t x, int64_t rs, int64_t cs, \
                                                                int nrows, int lanes, LoadKind kind, int64_t power,  \
                                                                N##_Casc *c, int64_t i, int64_t end)                 \
    {                                                                                              \
        int64_t step = (int64_t)1 << power, mask = step - 1;                                       \
        ACC v[LANES];                                                                              \
        while (i + step <= end) {                                                                  \
            for (int64_t j = 0; j < step; j++, i++)                                                \
                for (int k = 0; k < nrows; k++) {                                                  \
                    N##_load(in, x + i * rs + k * cs, kind, v);                                    \
                    for (int l = 0; l < lanes; l++)                                                \
                        c->a[0][k][l] += v[l];                                                     \
                }                                                                                  \
            for (int j = 1; j < LEVELS; j++) {                                                     \
                for (int k = 0; k < nrows; k++)                                                    \
                    for (int l = 0; l < lanes; l++) {                                              \
                        c->a[j][k][l] += c->a[j - 1][k][l];                                        \
                        c->a[j - 1][k][l] = 0;                                                     \
                    }                                                                              \
                if ((i & (mask << (j * power))) != 0)                                              \
                    break;                                                                         \
            }                                                                                      \
        }                                                                                          \
        return i;                                                                                  \
    }                                                                                              \
                                                                                                   \
    typedef struct {                                                                               \
        const N##_In *in;                                                                          \
        int64_t x, rs, cs, power, span;                                                            \
        LoadKind kind;                                                                             \
        N##_Casc *top;          /* [spans]: each span's top level */                               \
        int64_t first;          /* the span of task 0 */                                           \
    } N##_SpanJob;                                                                                 \
                                                                                                   \
    static bool N##_span_task(void *arg, int tid, int64_t task)                                    \
    {                                                                                              \
        const N##_SpanJob *j = arg;                                                                \
        N##_Casc c;                                                                                \
        memset(&c, 0, sizeof c);                                                                   \
        int64_t i0 = (j->first + task) * j->span;                                                  \
        switch (j->kind) {                                                                         \
        case LD_INNER: N##_steps(j->in, j->x, j->rs, j->cs, ROWS, LANES, LD_INNER, j->power, &c, i0, i0 + j->span); break; \
        case LD_OUTER: N##_steps(j->in, j->x, j->rs, j->cs, ROWS, LANES, LD_OUTER, j->power, &c, i0, i0 + j->span); break; \
        default: N##_steps(j->in, j->x, j->rs, j->cs, ROWS, 1, LD_SCALAR, j->power, &c, i0, i0 + j->span); break;          \
        }                                                                                          \
        memcpy(&j->top[task], c.a[LEVELS - 1], sizeof c.a[LEVELS - 1]);                            \
        return true;                                                                               \
    }                                                                                              \
                                                                                                   \
    /* A streamed input's elements [begin, end) made present (in->x, in->base). */                 \
    static bool N##_tile(const N##_In *in, int64_t begin, int64_t end)                             \
    {                                                                                              \
        Stream *st = in->stream;                                                                   \
        const void *p = NULL;                                                                      \
        if ((st->st = st->s->tile(st->s->tile_ud, begin, end, &p, st->err)))                       \
            return false;                                                                          \
        N##_In *w = (N##_In *)in;       /* the caller's own, which it lends as const */           \
        w->x = p;                                                                                  \
        w->base = begin;                                                                           \
        return true;                                                                               \
    }                                                                                              \
                                                                                                   \
    /* The spans [t0, t1) of a multi_row_sum, their top levels into top[0, t1 - t0): over threads  \
     * when par. */                                                                                \
    static bool N##_spans(const N##_In *in, int64_t x, int64_t rs, int64_t cs, int64_t power, int64_t span, \
                          LoadKind kind, int64_t t0, int64_t t1, N##_Casc *top, const Par *par)    \
    {                                                                                              \
        N##_SpanJob job = {in, x, rs, cs, power, span, kind, top, t0};                             \
        if (par)                                                                                   \
            return fc_cpu_parallel_for(par->be, par->nthreads, t1 - t0, N##_span_task, &job, par->interrupt); \
        for (int64_t t = 0; t < t1 - t0; t++)                                                      \
            N##_span_task(&job, 0, t);                                                             \
        return true;                                                                               \
    }                                                                                              \
                                                                                                   \
    /* multi_row_sum: size rows (ret[k * lanes + l]); par: may split it into spans. A streamed     \
     * input (the inner sum of its one row) comes a tile of spans at a time, then the rest of the \
     * row, which its callers' tails read too. */                                                  \
    static inline __attribute__((always_inline)) bool N##_multi_row(const N##_In *in, int64_t x, int64_t rs,        \
                                                                    int64_t cs, int64_t size, int nrows, int lanes, \
                                                                    LoadKind kind, ACC *ret, const Par *par)       \
    {                                                                                              \
        N##_Casc c;                                                                                \
        memset(&c, 0, sizeof c);                                                                   \
        int64_t power = ceil_log2(size) / LEVELS;                                                  \
        if (power < 4)                                                                             \
            power = 4;                                                                             \
        int64_t span = (int64_t)1 << (3 * power), i = 0;                                           \
        if (in->stream && kind == LD_INNER && nrows == ROWS) {                                     \
            int64_t nspan = size / span, per = TILE_ELEMS / (span * rs);                           \
            per = per < 1 ? 1 : per > nspan ? nspan : per;                                         \
            N##_Casc *top = nspan > 0 ? mem_malloc((size_t)per * sizeof *top) : NULL;              \
            if (nspan > 0 && !top) {                                                               \
                in->stream->st = cpu_errorf(in->stream->err, FC_ERR_NOMEM, "out of memory");      \
                return false;                                                                      \
            }                                                                                      \
            for (int64_t t0 = 0; t0 < nspan; t0 += per) {                                          \
                int64_t t1 = t0 + per < nspan ? t0 + per : nspan;                                  \
                if (!N##_tile(in, x + t0 * span * rs, x + t1 * span * rs) ||                       \
                    !N##_spans(in, x, rs, cs, power, span, kind, t0, t1, top, par)) {              \
                    mem_free(top);                                                                 \
                    return false;                                                                  \
                }                                                                                  \
                for (int64_t t = 0; t < t1 - t0; t++)                                              \
                    for (int k = 0; k < nrows; k++)                                                \
                        for (int l = 0; l < lanes; l++)                                            \
                            c.a[LEVELS - 1][k][l] += top[t].a[0][k][l];                            \
            }                                                                                      \
            mem_free(top);                                                                         \
            i = nspan * span;                                                                      \
            if (!N##_tile(in, x + i * rs, in->stream->n))                                          \
                return false;                                                                      \
        } else if (par && nrows == ROWS && size / span >= 2 && size * nrows * lanes >= 2 * PAR_WORK) { \
            int64_t nspan = size / span;                                                           \
            N##_Casc *top = mem_malloc((size_t)nspan * sizeof *top);                     \
            if (top) {                                                                             \
                if (!N##_spans(in, x, rs, cs, power, span, kind, 0, nspan, top, par)) {            \
                    mem_free(top);                                                                 \
                    return false;                                                                  \
                }                                                                                  \
                for (int64_t t = 0; t < nspan; t++)                                                \
                    for (int k = 0; k < nrows; k++)                                                \
                        for (int l = 0; l < lanes; l++)                                            \
                            c.a[LEVELS - 1][k][l] += top[t].a[0][k][l];                            \
                mem_free(top);                                                                     \
                i = nspan * span;                                                                  \
            }                                                                                      \
        }                                                                                          \
        i = N##_steps(in, x, rs, cs, nrows, lanes, kind, power, &c, i, size);                      \
        ACC v[LANES];                                                                              \
        for (; i < size; i++)                                                                      \
            for (int k = 0; k < nrows; k++) {                                                      \
                N##_load(in, x + i * rs + k * cs, kind, v);                                        \
                for (int l = 0; l < lanes; l++)                                                    \
                    c.a[0][k][l] += v[l];                                                          \
            }                                                                                      \
        for (int j = 1; j < LEVELS; j++)                                                           \
            for (int k = 0; k < nrows; k++)                                                        \
                for (int l = 0; l < lanes; l++)                                                    \
                    c.a[0][k][l] += c.a[j][k][l];                                                  \
        for (int k = 0; k < nrows; k++)                                                            \
            for (int l = 0; l < lanes; l++)                                                        \
                ret[k * lanes + l] = c.a[0][k][l];                                                 \
        return true;                                                                               \
    }                                                                                              \
                                                                                                   \
    /* row_sum: size numbers (vectors) at x + i * stride, as ROWS interleaved rows, the rest       \
     * added to the first, the rows added in order. */                                             \
    static inline __attribute__((always_inline)) bool N##_row(const N##_In *in, int64_t x, int64_t stride,        \
                                                              int64_t size, int lanes, LoadKind kind, ACC *ret,  \
                                                              const Par *par)                                    \
    {                                                                                              \
        ACC part[ROWS * LANES], v[LANES];                                                          \
        int64_t n4 = size / ROWS;                                                                  \
        if (!N##_multi_row(in, x, stride * ROWS, stride, n4, ROWS, lanes, kind, part, par))        \
            return false;                                                                          \
        for (int64_t i = n4 * ROWS; i < size; i++) {                                               \
            N##_load(in, x + i * stride, kind, v);                                                 \
            for (int l = 0; l < lanes; l++)                                                        \
                part[l] += v[l];                                                                   \
        }                                                                                          \
        for (int k = 1; k < ROWS; k++)                                                             \
            for (int l = 0; l < lanes; l++)                                                        \
                part[l] += part[k * lanes + l];                                                    \
        for (int l = 0; l < lanes; l++)                                                            \
            ret[l] = part[l];                                                                      \
        return true;                                                                               \
    }                                                                                              \
                                                                                                   \
    /* A block, its sum along the first dim (cascade_sum's loop once it moved the reduction     \
     * first): the sums of outputs j in [j0, j1) into val[j] (j0 a multiple of ROWS * LANES, j1 too \
     * or size1); par: a lone output's sum may be split. */                                        \
    static bool N##_values(const N##_In *in, int64_t x, int64_t i0, int64_t i1, int64_t size0, int64_t size1, \
                           int64_t j0, int64_t j1, ACC *val, const Par *par)                                  \
    {                                                                                              \
        ACC r[ROWS * LANES];                                                                       \
        if (i0 == 1 && size0 >= N##_VEC) {                                                         \
            int64_t nv = size0 / N##_VEC;                                                          \
            for (int64_t j = j0; j < j1; j++) {                                                    \
                int64_t row = x + j * i1;                                                          \
                if (!N##_row(in, row, N##_VEC, nv, LANES, LD_INNER, r, par))                       \
                    return false;                                                                  \
                ACC fin = 0, v[LANES];                                                             \
                for (int64_t k = nv * N##_VEC; k < size0; k++) {                                   \
                    N##_load(in, row + k, LD_SCALAR, v);                                           \
                    fin += v[0];                                                                   \
                }                                                                                  \
                for (int l = 0; l < LANES; l++)                                                    \
                    fin += r[l];                                                                   \
                val[j] = fin;                                                                      \
            }                                                                                      \
        } else if (i1 == 1 && size1 >= N##_VEC) {                                                  \
            int64_t j = j0;                                                                        \
            for (; j + ROWS * LANES <= size1 && j < j1; j += ROWS * LANES)                         \
                if (!N##_multi_row(in, x + j, i0, LANES, size0, ROWS, LANES, LD_OUTER, val + j, par)) \
                    return false;                                                                  \
            for (; j + LANES <= size1 && j < j1; j += LANES)                                       \
                if (!N##_row(in, x + j, i0, size0, LANES, LD_OUTER, val + j, par))                 \
                    return false;                                                                  \
            for (; j < j1; j++)                                                                    \
                if (!N##_row(in, x + j, i0, size0, 1, LD_SCALAR, val + j, par))                    \
                    return false;                                                                  \
        } else if (i0 < i1) {                                                                      \
            for (int64_t j = j0; j < j1; j++)                                                      \
                if (!N##_row(in, x + j * i1, i0, size0, 1, LD_SCALAR, val + j, par))               \
                    return false;                                                                  \
        } else {                                                                                   \
            int64_t j = j0;                                                                        \
            for (; j + ROWS - 1 < size1 && j < j1; j += ROWS)                                      \
                if (!N##_multi_row(in, x + j * i1, i0, i1, size0, ROWS, 1, LD_SCALAR, val + j, par)) \
                    return false;                                                                  \
            for (; j < j1; j++)                                                                    \
                if (!N##_row(in, x + j * i1, i0, size0, 1, LD_SCALAR, val + j, par))               \
                    return false;                                                                  \
        }                                                                                          \
        return true;                                                                               \
    }                                                                                              \
                                                                                                   \
    typedef struct {                                                                               \
        const N##_In *in;                                                                          \
        int64_t x, i0, i1, size0, size1, per;                                                      \
        ACC *val;                                                                                  \
    } N##_OutJob;                                                                                  \
                                                                                                   \
    static bool N##_out_task(void *arg, int tid, int64_t task)                                     \
    {                                                                                              \
        const N##_OutJob *j = arg;                                                                 \
        int64_t j0 = task * j->per, j1 = j0 + j->per < j->size1 ? j0 + j->per : j->size1;          \
        return N##_values(j->in, j->x, j->i0, j->i1, j->size0, j->size1, j0, j1, j->val, NULL);    \
    }                                                                                              \
                                                                                                   \
    /* One 2-D block: size0 x size1 with output strides o0, o1 and input strides i0, i1 from       \
     * element x of the input and o of the output (cascade_sum's loop); val: room for size1 sums. \
     * False when interrupted. */                                                                  \
    static bool N##_block(const N##_In *in, int64_t x, int64_t o, int64_t o0, int64_t i0, int64_t o1, int64_t i1, \
                          int64_t size0, int64_t size1, ACC *val, const Par *par)                  \
    {                                                                                              \
        if (o0 != 0 && o1 == 0) {       /* the sum along the first dim */                          \
            int64_t t;                                                                             \
            t = i0, i0 = i1, i1 = t;                                                               \
            t = o0, o0 = o1, o1 = t;                                                               \
            t = size0, size0 = size1, size1 = t;                                                   \
        }                                                                                          \
        if (o0 != 0 && o1 != 0) {       /* nothing summed in this block: out = out + in */         \
            for (int64_t j = 0; j < size1; j++)                                                    \
                for (int64_t i = 0; i < size0; i++)                                                \
                    N##_add_elem(in, o + j * o1 + i * o0, x + j * i1 + i * i0);                    \
            return true;                                                                           \
        }                                                                                          \
        int64_t group = ROWS * LANES, ngroups = (size1 + group - 1) / group;                       \
        if (par && ngroups >= 2 && size0 * size1 >= 2 * PAR_WORK) {                                \
            int64_t per = (ngroups + 4 * par->nthreads - 1) / (4 * par->nthreads) * group;          \
            N##_OutJob job = {in, x, i0, i1, size0, size1, per, val};                              \
            if (!fc_cpu_parallel_for(par->be, par->nthreads, (size1 + per - 1) / per, N##_out_task, &job, \
                                     par->interrupt))                                              \
                return false;                                                                      \
        } else if (!N##_values(in, x, i0, i1, size0, size1, 0, size1, val, par)) {                 \
            return false;                                                                          \
        }                                                                                          \
        for (int64_t j = 0; j < size1; j++)                                                        \
            N##_store(in, o + j * o1, val[j]);                                                     \
        return true;                                                                               \
    }

DEF_CASCADE(f32, float, 8)
DEF_CASCADE(f64, double, 4)
DEF_CASCADE(h16, float, 8)

/* ---- the whole sum ---- */

FcStatus fc_cpu_cascade_sum(CpuBackend *be, const FcOrderedSum *s, FcError *err)
{
    /* (an empty input's other dims may be huge: the products saturate) */
    int64_t onum = 1, inum = 1;
    for (int d = 0; d < s->ndim; d++) {
        if (__builtin_mul_overflow(inum, s->shape[d], &inum))
            inum = INT64_MAX;
        if (!((s->reduced >> d) & 1) && __builtin_mul_overflow(onum, s->shape[d], &onum))
            onum = INT64_MAX;
    }
    for (int d = 0; d < s->ndim; d++)
        if (s->shape[d] == 0) {
            inum = 0;
            onum = (s->reduced >> d) & 1 ? onum : 0;
        }
    size_t oes = s->out_dtype == FC_FLOAT64 ? 8 : s->out_dtype == FC_FLOAT32 ? 4 : 2;
    memset(s->out, 0, (size_t)onum * oes);
    if (inum == 0)
        return FC_OK;
    CpuSumIter it;
    fc_cpu_sum_iter(s, &it);
    int64_t st[4] = {it.nd > 0 ? it.ost[0] : 0, it.nd > 0 ? it.ist[0] : 0, it.nd > 1 ? it.ost[1] : 0,
                     it.nd > 1 ? it.ist[1] : 0};
    int64_t size0 = it.nd > 0 ? it.shape[0] : 1, size1 = it.nd > 1 ? it.shape[1] : 1;
    /* room for one block's sums: one per output along the dim not summed (cascade_sum moves the
     * summed one first); none when the block sums nothing */
    int64_t nval = st[0] != 0 && st[2] == 0 ? size0 : st[0] == 0 ? size1 : 1;
    void *val = mem_malloc((size_t)nval * 8);
    if (!val)
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    /* A streamed input: a tile at a time where the sum is the inner sum of one row (the inner
     * loop's multi_row_sum asks for them), else all of it at once. */
    Stream stream = {s, inum, err, FC_OK};
    const void *in = s->in;
    int64_t vec = s->dtype == FC_FLOAT64 ? f64_VEC : s->dtype == FC_FLOAT32 ? f32_VEC : h16_VEC;
    bool streamed = s->tile && it.nd == 1 && st[0] == 0 && st[1] == 1 && size0 >= vec;
    if (s->tile && !streamed && (stream.st = s->tile(s->tile_ud, 0, inum, &in, err))) {
        mem_free(val);
        return stream.st;
    }
    Stream *sp = streamed ? &stream : NULL;
    f32_In a32 = {in, s->out, 0, sp};
    f64_In a64 = {in, s->out, 0, sp};
    h16_In a16 = {in, s->out, 0, sp, s->dtype, s->out_dtype == FC_FLOAT32};
    int nth = fc_cpu_clamp_threads(be, be->nthreads);
    Par par = {be, nth, s->interrupt};
    const Par *pp = nth > 1 ? &par : NULL;
    /* the blocks: the iterator's dims from the third on, the third fastest */
    int64_t idx[FC_MAX_DIMS] = {0};
    bool ok = true;
    for (;;) {
        int64_t x = 0, o = 0;
        for (int d = 2; d < it.nd; d++) {
            x += idx[d] * it.ist[d];
            o += idx[d] * it.ost[d];
        }
        switch (s->dtype) {
        case FC_FLOAT32: ok = f32_block(&a32, x, o, st[0], st[1], st[2], st[3], size0, size1, val, pp); break;
        case FC_FLOAT64: ok = f64_block(&a64, x, o, st[0], st[1], st[2], st[3], size0, size1, val, pp); break;
        default: ok = h16_block(&a16, x, o, st[0], st[1], st[2], st[3], size0, size1, val, pp); break;
        }
        int d = 2;
        for (; d < it.nd; d++) {
            if (++idx[d] < it.shape[d])
                break;
            idx[d] = 0;
        }
        if (!ok || d >= it.nd)
            break;
        if (s->interrupt && *s->interrupt)
            ok = false;
    }
    mem_free(val);
    if (stream.st)
        return stream.st;
    return ok ? FC_OK : cpu_errorf(err, FC_ERR_INTERRUPT, "interrupted");
}
