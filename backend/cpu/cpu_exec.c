/* cpu_exec.c — runs a Plan (cpu_plan.c) with a kernel's buffers: the steps evaluated chunk by
 * chunk through the op tables of cpu_ops.c (loads, gathers, weighted rows, memoised and
 * precomputed values, inner reductions), the result stored, scattered or reduced with the
 * folds of cpu_reduce.c, the units cut into tasks for the pool (cpu_pool.c), and the
 * backend's entry points for kernels (run, prepare, run prepared, release). See cpu_plan.h for
 * how the executor works.
 * Depends on cpu_plan.h (cpu_internal.h, backend.h, fcdim.h) only. */
#include "cpu_plan.h"
#include "mem.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>        /* Plan.stream: non-temporal stores */
#endif

typedef struct Thread {
    void **buf;                 /* [nphys + 1]: where each buffer is written */
    const void **cur;           /* [nphys + 1]: where it is read (its buffer, or loaded memory) */
    void *offs;                 /* [cap] gathered element offsets (int32_t or int64_t) */
    void *tmp;                  /* [cap] values converted for a store; during evaluation, a
                                   gather's scaled indices */
    char *xbuf;                 /* [3 * cbytes] operands widened for a step */
    void *acc;                  /* [group * FC_CHUNK] accumulators */
    int64_t *aidx;              /* [group * FC_CHUNK] arg reductions: indices */
    int64_t idx[FC_MAX_DIMS];   /* current loop indices (not cl's: chunks pass their start) */
    char *run;                  /* a scattered store's chunks held back (defer_run): run_len bytes */
    const char *run_src;        /* to run from run_src */
    size_t run_len;
    /* memoised steps, by slot (chains by their first step's) */
    int64_t *mkey;              /* [nmemo * L]: a chain's key: the indices of its key loops */
    uint64_t *mgen;             /* [nmemo]: a chain's generation (0: no key yet) */
    int64_t *ment;              /* [nmemo]: a chain's entry at the last check */
    int64_t *mcur;              /* [nmemo]: the entry a step's buffer holds ... */
    uint64_t *mcg;              /* [nmemo]: ... and its generation (0: none) */
    uint64_t *stamps;           /* [nstamps]: the generation each entry was computed in */
    char *tvals;                /* [nvals * 8]: the entries' values */
    char *racc;                 /* [nracc * cbytes]: the inner reductions' accumulators */
    /* A gated store (plan_gate): evaluating its steps before the where narrow (wide steps that
     * are not memoised left out, one value per chunk not broadcast; eval_gated), and whether
     * its last chunk was a skipped zero (its next is then evaluated narrow first). */
    bool narrow;
    bool gate_off;
    bool gate_skip;             /* its last chunk was skipped (eval_gated's *skip) */
    long gate_points;           /* points left out by runs (gate_run; fc_cpu_gate_points) */
    long narrow_skips;          /* chunks skipped after a narrow pass (fc_cpu_narrow_skips) */
    /* Plan.term: a point's terms after its first evaluate only what varies along the term
     * level (tonly). tstamp[j], for step j of the top list: 2 * tgen + 1 when its value (its
     * chain's, its run's) holds in full for the current point and chunk, 2 * tgen when it
     * holds at position 0 (computed narrow); tgen counts the points. */
    bool tonly;
    uint64_t tgen;
    uint64_t *tstamp;
    int64_t *tent;              /* [Plan.nplist]: a precomputed value's entry at the point's first
                                   term (pre_point), for those that vary along the level */
    long term_skips;            /* steps left out so (fc_cpu_term_skips) */
    /* Plan.tload: the current unit (unit_pos), its row in its tile and the tile's rows; the
     * block of eight rows from unit tlb_u0 at chunk position tlb_i0 held in tlb (tlb_n values
     * a row), if tlb_ok. */
    int64_t unit, trow, trows;
    char *tlb;
    bool tlb_ok;
    int64_t tlb_u0, tlb_i0;
    int tlb_n;
    long tload_blocks;          /* blocks transposed (fc_cpu_tload_blocks) */
    long copy_tiles;            /* tiles of a tcopy copied whole (fc_cpu_copy_tiles) */
    long scaled_tiles;          /* of them, tiles scaled (Plan.nscale, fc_cpu_scaled_tiles) */
    long one_terms;             /* passes of Step.one's MULADDs in a chain (fc_cpu_one_term_passes) */
    long pre_copies;            /* precomputed values broadcast out of their table (fc_cpu_pre_copies) */
    int64_t err_task;           /* the task that failed, or -1 */
    FcStatus status;
    FcError err;
} Thread;

typedef struct Run {
    const Plan *p;
    Thread **th;
    int64_t units_per_task;     /* or parts per task (task_owner) */
    int64_t nslice, slice;      /* task_owner: cl's positions in nslice slices of slice positions */
    bool split;
    int64_t steps_per_block, nblocks;
    char *partials;             /* split: nunits * nblocks partials */
    size_t partial_size;
    /* A band split (Plan.band): the row of each point of kl's first band_d loops (key), and
     * the points of band b, in order, at pts[first[b], first[b + 1]) */
    bool band;
    int nth;                    /* the threads that run the parts (th[nth, 2 nth) read the rows) */
    int32_t *key;
    int64_t *work;              /* and its share of the work (point_work) */
    int32_t *pts;
    int64_t *first;
    bool gskip;                 /* Plan.gb: zeros past a false bound skipped by runs (gate_bounded) */
} Run;

/* ---- evaluation ---- */

static bool fail(Thread *t, FcStatus st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err.msg, sizeof t->err.msg, fmt, ap);
    va_end(ap);
    t->status = st;
    return false;
}

/* Whether some index ix[i], i < m, is out of range for g (check_indices' test, below; also
 * scale_indices'); always inlined, so that the AVX2 clones vectorise it (GCC did not inline it
 * there on its own). */
static inline __attribute__((always_inline)) bool any_out_of_range(const FcGather *g, const int64_t *ix, int m)
{
    uint64_t ext = (uint64_t)g->extent;
    int bad = 0;
    if (g->wrap)
        CHUNK_LOOP(m, bad |= (uint64_t)ix[i] + ext >= 2 * ext);
    else
        CHUNK_LOOP(m, bad |= (uint64_t)ix[i] >= ext);
    return bad;
}

/* Whether every index ix[i], i < m, is valid for g: in [0, extent), or [-extent, extent) when it
 * wraps (shifted up by the extent, one unsigned comparison either way); else fails t naming the
 * first bad index as it was given. The common unwrapped test has a loop of its own rather than
 * a shift by 0. Inlined into the gathers' AVX2 clones, these loops vectorise (with an int flag,
 * not a bool, and a constant trip count): a 32-bit gather of int64 indices held in cache runs
 * about a third faster than with the scalar test. */
static inline bool check_indices(Thread *t, const FcGather *g, const int64_t *ix, int m)
{
    uint64_t ext = (uint64_t)g->extent, lo = g->wrap ? ext : 0;
    if (any_out_of_range(g, ix, m))
        for (int i = 0; i < m; i++)
            if ((uint64_t)ix[i] + lo >= ext + lo)
                return fail(t, FC_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld",
                            (long long)ix[i], g->dim, (long long)g->extent);
    return true;
}

/* ---- element addressing, for each offset width ----
 *
 * X(w, IT, CLONE): the functions whose per-element offsets are IT. Reading through a table of
 * offsets (copy_at, gather) is compiled for AVX2 too at 32 bits (eight lanes per register); at
 * 64 bits four lanes lose to scalar loads, so it is not. A loop that steps by a fixed stride
 * (copy_step, store_step) becomes a stepping pointer at either width; AVX2 has no scatter to
 * vectorise the stores. */
#define INDEX_WIDTHS(X) X(32, int32_t, CPU_CLONES) X(64, int64_t, )

static bool fold_indices(Thread *t, const FcGather *g, const int *phys, int n, int64_t *off);
/* With its clones, as defined below: Clang takes the attribute only when the first declaration
 * has it. */
CPU_CLONES static void copy_at_32(void *restrict d, const char *restrict src, const int32_t *restrict o, size_t es,
                                  int n);

/* d[j * rep + r] = v[j] for j < n / rep and r < rep, by element size: a value widened along
 * loops inside its own. Rows of whole vectors where they fit (GCC's vector extension: a
 * broadcast and a store per vector). */
typedef uint32_t U32x8 __attribute__((vector_size(32)));
typedef uint64_t U64x4 __attribute__((vector_size(32)));
CPU_CLONES static void repeat_vals(void *restrict d, const void *restrict v, int n, int rep, size_t es)
{
    char *q = d;
    if (es == 4 && rep % 8 == 0) {
        const uint32_t *x = v;
        for (int j = 0; j < n / rep; j++) {
            U32x8 b = (U32x8){0} + x[j];
            for (int r = 0; r < rep; r += 8, q += 32)
                memcpy(q, &b, 32);
        }
    } else if (es == 8 && rep % 4 == 0) {
        const uint64_t *x = v;
        for (int j = 0; j < n / rep; j++) {
            U64x4 b = (U64x4){0} + x[j];
            for (int r = 0; r < rep; r += 4, q += 32)
                memcpy(q, &b, 32);
        }
    } else if (es == 4) {
        const uint32_t *x = v;
        uint32_t *o = d;
        for (int j = 0; j < n / rep; j++, o += rep)
            for (int r = 0; r < rep; r++)
                o[r] = x[j];
    } else if (es == 8) {
        const uint64_t *x = v;
        uint64_t *o = d;
        for (int j = 0; j < n / rep; j++, o += rep)
            for (int r = 0; r < rep; r++)
                o[r] = x[j];
    } else {
        for (int j = 0; j < n / rep; j++, q += (size_t)rep * es)
            fc_cpu_broadcast(q, (const char *)v + (size_t)j * es, es, rep);
    }
}

/* d[i] = v[x[i]], i < m: values widened through table x, by the pattern it has when it has one
 * (rep > 0: each value repeated rep times; cyc > 0: cyc values over and over). */
static void widen_vals(void *restrict d, const void *restrict v, int m, const int32_t *x, int rep, int cyc,
                       size_t es)
{
    if (rep > 0) {
        repeat_vals(d, v, m, rep, es);
    } else if (cyc > 0) {
        for (int i = 0; i < m; i += cyc)
            memcpy((char *)d + (size_t)i * es, v, (size_t)cyc * es);
    } else {
        copy_at_32(d, v, x, es, m);
    }
}

/* ---- weighted rows ----
 *
 * x + w * load, where the load is gathered by rows (Step.rows: runs of rlen values, one offset
 * per row) and w holds one value per row (a weight widened along the rows by repeats), is
 * bilinear interpolation's and any weighted gather's inner step: the rows would be copied out,
 * w repeated over them, multiplied and added, four passes over the chunk, and again for each
 * tap. plan_rowops makes a chain of fcdim's MULADDs of such products (x + w0 * rows0 + w1 *
 * rows1 ..., added in that order) one step that reads the rows where they lie: the same
 * products and sums, rounded the same way (a * b + c is not contracted in ISO C mode), in one
 * pass. */
/* What a rowdefer load leaves in its buffer: the element its offsets count from, then the
 * offset of each row (32-bit: rows come with 32-bit offsets only). */
typedef struct RowRef {
    const char *src;
    int32_t o[];
} RowRef;

/* A term as rows_f32/f64 read it: a weight per row and where the rows are. */
typedef struct RowW {
    const void *w;
    const RowRef *g;
} RowW;

/* d = x + w[0] * rows[0] + ... + w[nt - 1] * rows[nt - 1] (no x when NULL), row by row: rows of
 * whole vectors (GCC's vector extension: 32 bytes, loaded and stored unaligned) where rlen is a
 * multiple of one, else element by element (at -O2 GCC vectorises no loop whose trip count it
 * does not know). Inlined with nt a constant, for each number of terms. */
typedef float F32x8 __attribute__((vector_size(32)));
typedef double F64x4 __attribute__((vector_size(32)));
#define DEF_ROWS(T, V, sfx)                                                                        \
    /* d[r] = w[wx[r]] * v[vx[r]], r < rows (wx, vx NULL: r): the weights of a term that are    \
     * products (RowTerm), by the outer product they are when they are one. */                    \
    static void row_weights_##sfx(T *restrict d, const T *w, const T *v, const RowTerm *tm, int rows) \
    {                                                                                              \
        int o = tm->outer > 0 ? tm->outer : -tm->outer;                                            \
        if (tm->outer > 0) {                                                                       \
            for (int a = 0; a < rows / o; a++, d += o)                                             \
                for (int b = 0; b < o; b++)                                                        \
                    d[b] = w[a] * v[b];                                                            \
        } else if (tm->outer < 0) {                                                                \
            for (int a = 0; a < rows / o; a++, d += o)                                             \
                for (int b = 0; b < o; b++)                                                        \
                    d[b] = w[b] * v[a];                                                            \
        } else {                                                                                   \
            const int32_t *wx = tm->wx, *vx = tm->vx;                                              \
            for (int r = 0; r < rows; r++)                                                         \
                d[r] = w[wx ? wx[r] : r] * v[vx ? vx[r] : r];                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static inline __attribute__((always_inline)) void rows_##sfx##_n(                              \
        T *restrict d, const T *restrict x, const int nt, const RowW *w, int rows, int rlen)      \
    {                                                                                              \
        enum { LANES = sizeof(V) / sizeof(T) };                                                    \
        for (int r = 0; r < rows; r++, d += rlen) {                                                \
            const T *restrict v[ROW_TERMS];                                                        \
            T wr[ROW_TERMS];                                                                       \
            _Pragma("GCC unroll 4") for (int k = 0; k < nt; k++) {                                 \
                v[k] = (const T *)(const void *)w[k].g->src + w[k].g->o[r];                        \
                wr[k] = ((const T *)w[k].w)[r];                                                    \
            }                                                                                      \
            if (rlen % LANES == 0) {                                                               \
                for (int j = 0; j < rlen; j += LANES) {                                            \
                    V acc, b;                                                                      \
                    memcpy(&b, v[0] + j, sizeof b);                                                \
                    acc = ((V){0} + wr[0]) * b;                                                    \
                    if (x) {                                                                       \
                        memcpy(&b, x + j, sizeof b);                                               \
                        acc = b + acc;                                                             \
                    }                                                                              \
                    _Pragma("GCC unroll 4") for (int k = 1; k < nt; k++) {                         \
                        memcpy(&b, v[k] + j, sizeof b);                                            \
                        acc = acc + ((V){0} + wr[k]) * b;                                          \
                    }                                                                              \
                    memcpy(d + j, &acc, sizeof acc);                                               \
                }                                                                                  \
            } else {                                                                               \
                for (int j = 0; j < rlen; j++) {                                                   \
                    T acc = wr[0] * v[0][j];                                                       \
                    if (x)                                                                         \
                        acc = x[j] + acc;                                                          \
                    for (int k = 1; k < nt; k++)                                                   \
                        acc = acc + wr[k] * v[k][j];                                               \
                    d[j] = acc;                                                                    \
                }                                                                                  \
            }                                                                                      \
            if (x)                                                                                 \
                x += rlen;                                                                         \
        }                                                                                          \
    }                                                                                              \
    CPU_CLONES static void rows_##sfx(T *restrict d, const T *restrict x, int nt, const RowW *w, int rows, \
                                      int rlen)                                                    \
    {                                                                                              \
        switch (nt) {                                                                              \
        case 1: rows_##sfx##_n(d, x, 1, w, rows, rlen); break;                                     \
        case 2: rows_##sfx##_n(d, x, 2, w, rows, rlen); break;                                     \
        case 3: rows_##sfx##_n(d, x, 3, w, rows, rlen); break;                                     \
        default: rows_##sfx##_n(d, x, 4, w, rows, rlen); break;     /* ROW_TERMS */             \
        }                                                                                          \
    }
DEF_ROWS(float, F32x8, f32)
DEF_ROWS(double, F64x4, f64)
#undef DEF_ROWS

/* A gathered load read by rows (Step.rows): row r of its n values, rlen long, from element o[r]
 * of src, as a run or through the offsets iramp. Runs of 16, 32 and 64 bytes are fixed-size
 * copies (a few vector moves each). Rows come only with 32-bit offsets (a span needs them):
 * offs is int32_t. */
#define COPY_ROWS(bytes)                                                                           \
    for (int r = 0; r < rows; r++)                                                                 \
        memcpy(q + (size_t)r * (bytes), src + (int64_t)o[r] * es, bytes)
static void copy_rows(void *d, const char *src, const void *offs, const Step *s, int n)
{
    char *q = d;
    size_t es = s->esize, len = (size_t)s->rlen * es;
    int rows = n / s->rlen;
    const int32_t *o = offs;
    if (s->iramp) {
        for (int r = 0; r < rows; r++)
            copy_at_32(q + (size_t)r * len, src + (int64_t)o[r] * (int64_t)es, s->iramp, es, s->rlen);
    } else {
        if (len == 64)
            COPY_ROWS(64);
        else if (len == 32)
            COPY_ROWS(32);
        else if (len == 16)
            COPY_ROWS(16);
        else
            COPY_ROWS(len);
    }
}
#undef COPY_ROWS

#define DEF_INDEXED(w, IT, CLONE)                                                                  \
    /* d[i] = src[i * stride], by element size. */                                                 \
    static void copy_step_##w(void *restrict d, const char *restrict src, IT stride, size_t es, int n) \
    {                                                                                              \
        switch (es) {                                                                              \
        case 1: {                                                                                  \
            uint8_t *q = d;                                                                        \
            for (int i = 0; i < n; i++)                                                            \
                q[i] = (uint8_t)src[(IT)i * stride];                                               \
            break;                                                                                 \
        }                                                                                          \
        case 2: {                                                                                  \
            uint16_t *q = d;                                                                       \
            const uint16_t *s = (const uint16_t *)(const void *)src;                               \
            for (int i = 0; i < n; i++)                                                            \
                q[i] = s[(IT)i * stride];                                                          \
            break;                                                                                 \
        }                                                                                          \
        case 4: {                                                                                  \
            uint32_t *q = d;                                                                       \
            const uint32_t *s = (const uint32_t *)(const void *)src;                               \
            for (int i = 0; i < n; i++)                                                            \
                q[i] = s[(IT)i * stride];                                                          \
            break;                                                                                 \
        }                                                                                          \
        default: {                                                                                 \
            uint64_t *q = d;                                                                       \
            const uint64_t *s = (const uint64_t *)(const void *)src;                               \
            for (int i = 0; i < n; i++)                                                            \
                q[i] = s[(IT)i * stride];                                                          \
            break;                                                                                 \
        }                                                                                          \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* d[i] = src[o[i]], by element size. */                                                       \
    CLONE static void copy_at_##w(void *restrict d, const char *restrict src, const IT *restrict o, \
                                  size_t es, int n)                                                \
    {                                                                                              \
        switch (es) {                                                                              \
        case 1: {                                                                                  \
            uint8_t *q = d;                                                                        \
            CHUNK_LOOP(n, q[i] = (uint8_t)src[o[i]]);                                              \
            break;                                                                                 \
        }                                                                                          \
        case 2: {                                                                                  \
            uint16_t *q = d;                                                                       \
            const uint16_t *s = (const uint16_t *)(const void *)src;                               \
            CHUNK_LOOP(n, q[i] = s[o[i]]);                                                         \
            break;                                                                                 \
        }                                                                                          \
        case 4: {                                                                                  \
            uint32_t *q = d;                                                                       \
            const uint32_t *s = (const uint32_t *)(const void *)src;                               \
            CHUNK_LOOP(n, q[i] = s[o[i]]);                                                         \
            break;                                                                                 \
        }                                                                                          \
        default: {                                                                                 \
            uint64_t *q = d;                                                                       \
            const uint64_t *s = (const uint64_t *)(const void *)src;                               \
            CHUNK_LOOP(n, q[i] = s[o[i]]);                                                         \
            break;                                                                                 \
        }                                                                                          \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* dst[i * stride] = src[i] (stride not 1), by element size. */                                \
    static void store_step_##w(char *dst, IT stride, const void *src, size_t es, int n)           \
    {                                                                                              \
        switch (es) {                                                                              \
        case 1: {                                                                                  \
            const uint8_t *s = src;                                                                \
            for (int i = 0; i < n; i++)                                                            \
                dst[(IT)i * stride] = (char)s[i];                                                  \
            break;                                                                                 \
        }                                                                                          \
        case 2: {                                                                                  \
            const uint16_t *s = src;                                                               \
            uint16_t *q = (uint16_t *)(void *)dst;                                                 \
            for (int i = 0; i < n; i++)                                                            \
                q[(IT)i * stride] = s[i];                                                          \
            break;                                                                                 \
        }                                                                                          \
        case 4: {                                                                                  \
            const uint32_t *s = src;                                                               \
            uint32_t *q = (uint32_t *)(void *)dst;                                                 \
            for (int i = 0; i < n; i++)                                                            \
                q[(IT)i * stride] = s[i];                                                          \
            break;                                                                                 \
        }                                                                                          \
        default: {                                                                                 \
            const uint64_t *s = src;                                                               \
            uint64_t *q = (uint64_t *)(void *)dst;                                                 \
            for (int i = 0; i < n; i++)                                                            \
                q[(IT)i * stride] = s[i];                                                          \
            break;                                                                                 \
        }                                                                                          \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* A gathered load of m elements whose first one (every gathered index 0) is element off:     \
     * offsets o (o[i] the chunk's own, from ramp_##w) plus each gathered index times its stride, \
     * the indices checked against their extents before any element is read. A checked index     \
     * that wraps and is negative has the extent added (ix >> 63 is all ones just then). */      \
    CLONE static bool gather_##w(const Plan *p, const Step *s, Thread *t, int64_t off, int m)     \
    {                                                                                              \
        const FcInstr *in = s->in;                                                                 \
        RowRef *ref = s->rowdefer ? t->buf[s->d] : NULL;                                           \
        IT *restrict o = ref ? (IT *)(void *)ref->o : (IT *)t->offs;  /* rows: 32-bit only */     \
        int mr = m;                                                                                \
        if (s->rows > 0)                                                                           \
            m = s->rows;        /* offsets of the rows */                                          \
        bool set = !s->rampz;   /* o holds offsets to add to */                                   \
        const IT *os[2] = {t->tmp, (const IT *)t->tmp + p->cap};    /* osum's scaled indices */  \
        if (set)                                                                                   \
            ramp_##w(s, o, m);                                                                     \
        for (int g = 0; g < in->ngather; g++) {                                                    \
            const FcGather *ga = &in->gathers[g];                                                  \
            const GatherX *gx = &s->gx[g];                                                         \
            const int64_t *ix = t->cur[s->g[g]];                                                   \
            int64_t ext = ga->extent;                                                              \
            IT gs = ext > 1 ? (IT)ga->stride : 0;                                                  \
            if (!gx->wide) {                                                                       \
                if (!fold_indices(t, ga, &s->g[g], 1, &off))                                       \
                    return false;                                                                  \
                continue;                                                                          \
            }                                                                                      \
            const int32_t *x = gx->x;                                                              \
            if (w == 32 && gx->sc) {    /* scaled and checked by pre_fill */                       \
                if (!*gx->ok && !check_indices(t, ga, ix, x ? gx->m : m))                          \
                    return false;                                                                  \
                const IT *sc = (const IT *)(const void *)gx->sc + (ix - gx->ix0);                  \
                if (s->osum) {                                                                     \
                    os[g == s->og[1]] = sc;                                                        \
                    continue;                                                                      \
                }                                                                                  \
                if (x && set)                                                                      \
                    CHUNK_LOOP(m, o[i] += sc[x[i]]);                                               \
                else if (x)                                                                        \
                    CHUNK_LOOP(m, o[i] = sc[x[i]]);                                                \
                else if (set)                                                                      \
                    CHUNK_LOOP(m, o[i] += sc[i]);                                                  \
                else                                                                               \
                    memcpy(o, sc, (size_t)m * sizeof *o);                                          \
                set = true;                                                                        \
                continue;                                                                          \
            }                                                                                      \
            if (!check_indices(t, ga, ix, x ? gx->m : m))  /* its own positions */                 \
                return false;                                                                      \
            if (x) {            /* scaled over its own positions, then widened */                 \
                IT *restrict sc = (IT *)t->tmp + (s->osum && g == s->og[1] ? p->cap : 0);          \
                int mx = gx->m;                                                                    \
                if (ga->wrap)                                                                      \
                    CHUNK_LOOP(mx, sc[i] = (IT)(ix[i] + (ext & (ix[i] >> 63))) * gs);              \
                else                                                                               \
                    CHUNK_LOOP(mx, sc[i] = (IT)ix[i] * gs);                                        \
                if (s->osum)                                                                       \
                    continue;   /* summed below */                                                 \
                if (set)                                                                           \
                    CHUNK_LOOP(m, o[i] += sc[x[i]]);                                               \
                else                                                                               \
                    CHUNK_LOOP(m, o[i] = sc[x[i]]);                                                \
            } else if (ga->wrap) {                                                                 \
                if (set)                                                                           \
                    CHUNK_LOOP(m, o[i] += (IT)(ix[i] + (ext & (ix[i] >> 63))) * gs);               \
                else                                                                               \
                    CHUNK_LOOP(m, o[i] = (IT)(ix[i] + (ext & (ix[i] >> 63))) * gs);                \
            } else {                                                                               \
                if (set)                                                                           \
                    CHUNK_LOOP(m, o[i] += (IT)ix[i] * gs);                                         \
                else                                                                               \
                    CHUNK_LOOP(m, o[i] = (IT)ix[i] * gs);                                          \
            }                                                                                      \
            set = true;                                                                            \
        }                                                                                          \
        if (s->osum) {          /* 32-bit: t->tmp holds 2 * cap offsets, or the tables do */        \
            const IT *sa = os[0], *sb = os[1];                                                     \
            int r = s->osum;                                                                       \
            if (w == 32 && r <= 8) {    /* a row of eight per a (the next row overwrites the     \
                                           rest; sb and o have room for eight past the end) */   \
                U32x8 vb;                                                                          \
                memcpy(&vb, sb, sizeof vb);                                                        \
                for (int a = 0; a < m / r; a++) {                                                  \
                    U32x8 v = vb + (uint32_t)sa[a];                                                \
                    memcpy(o + a * r, &v, sizeof v);                                               \
                }                                                                                  \
            } else {                                                                               \
                for (int a = 0; a < m / r; a++)                                                    \
                    for (int b = 0; b < r; b++)                                                    \
                        o[a * r + b] = sa[a] + sb[b];                                              \
            }                                                                                      \
        } else if (!set) {                                                                         \
            memset(o, 0, (size_t)m * sizeof *o);                                                   \
        }                                                                                          \
        const char *src = (const char *)p->k->bufs[in->buf] + off * (int64_t)s->esize;             \
        if (ref)                                                                                   \
            ref->src = src;                                                                        \
        else if (s->rows > 0)                                                                      \
            copy_rows(t->buf[s->d], src, o, s, mr);                                                \
        else                                                                                       \
            copy_at_##w(t->buf[s->d], src, o, s->esize, m);                                        \
        return true;                                                                               \
    }

/* o[i] = i * (the load's stride along the chunk loop), i < m: a copy of the plan's table at 32
 * bits, computed at 64. */
static void ramp_32(const Step *s, int32_t *restrict o, int m)
{
    memcpy(o, s->ramp, (size_t)m * sizeof *o);
}
static void ramp_64(const Step *s, int64_t *restrict o, int m)
{
    int64_t stride = s->cstride;
    for (int i = 0; i < m; i++)
        o[i] = stride * i;
}

INDEX_WIDTHS(DEF_INDEXED)

/* Checks n indices that hold one value over the chunk (the registers phys) as check_indices
 * does, one value each, and adds each times its stride to *off (a negative one that wraps with
 * the extent added, as in gather_##w): a flat gather's or scatter's whole chunk moves as one. */
static bool fold_indices(Thread *t, const FcGather *g, const int *phys, int n, int64_t *off)
{
    for (int j = 0; j < n; j++) {
        const int64_t *ix = t->cur[phys[j]];
        if (!check_indices(t, &g[j], ix, 1))
            return false;
        *off += (ix[0] + (g[j].extent & (ix[0] >> 63))) * g[j].stride;
    }
    return true;
}

/* dst[o[i]] = src[i] for i < n, by element size: a spanning chunk's store. */
static void store_at_32(char *dst, const int32_t *o, const void *src, size_t es, int n)
{
    switch (es) {
    case 1:
        for (int i = 0; i < n; i++)
            dst[o[i]] = ((const char *)src)[i];
        break;
    case 2:
        for (int i = 0; i < n; i++)
            ((uint16_t *)(void *)dst)[o[i]] = ((const uint16_t *)src)[i];
        break;
    case 4:
        for (int i = 0; i < n; i++)
            ((uint32_t *)(void *)dst)[o[i]] = ((const uint32_t *)src)[i];
        break;
    default:
        for (int i = 0; i < n; i++)
            ((uint64_t *)(void *)dst)[o[i]] = ((const uint64_t *)src)[i];
        break;
    }
}

typedef uint32_t U32x8v __attribute__((vector_size(32)));
#if defined(__clang__)
#define SHUF(x, y, ...) __builtin_shufflevector(x, y, __VA_ARGS__)
#else
#define SHUF(x, y, ...) __builtin_shuffle(x, y, (U32x8v){__VA_ARGS__})
#endif

/* The 8 x 8 block of 4-byte elements whose rows are v[0..7], transposed in registers: o[j] is
 * column j (GCC's vector shuffles: AVX's unpack, shuffle and lane permute at -mavx2). */
static inline void transpose_8x8(const U32x8v *v, U32x8v *o)
{
    U32x8v t[8], u[8];
    _Pragma("GCC unroll 4") for (int k = 0; k < 8; k += 2) {
        t[k] = SHUF(v[k], v[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[k + 1] = SHUF(v[k], v[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    _Pragma("GCC unroll 2") for (int k = 0; k < 8; k += 4) {
        u[k] = SHUF(t[k], t[k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[k + 1] = SHUF(t[k], t[k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[k + 2] = SHUF(t[k + 1], t[k + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[k + 3] = SHUF(t[k + 1], t[k + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
        o[k] = SHUF(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        o[k + 4] = SHUF(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* dst[b * ld + a] = src[a * sld + b], a < r, b < c: a span's transposing store (plan_transpose,
 * sld = c), or a block of a transposing copy straight from its input (copy_units).
 * 4-byte elements go by 8 x 8 blocks, each eight vector loads, transpose_8x8 and eight vector
 * stores; the edges and other sizes element by element. */
CPU_CLONES static void store_transposed(char *dst, const void *src, int r, int c, int64_t sld, int64_t ld, size_t es)
{
    int a0 = 0, b0 = 0;
    if (es == 4) {
        const uint32_t *x = src;
        uint32_t *d = (uint32_t *)(void *)dst;
        for (; a0 + 8 <= r; a0 += 8) {
            for (b0 = 0; b0 + 8 <= c; b0 += 8) {
                U32x8v v[8], o[8];
                _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
                    memcpy(&v[k], x + (a0 + k) * sld + b0, sizeof v[k]);
                transpose_8x8(v, o);
                _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
                    memcpy(d + (int64_t)(b0 + k) * ld + a0, &o[k], sizeof o[k]);
            }
            for (int b = b0; b < c; b++)
                for (int a = a0; a < a0 + 8; a++)
                    d[(int64_t)b * ld + a] = x[a * sld + b];
        }
    }
    for (int b = 0; b < c; b++)
        for (int a = a0; a < r; a++)
            memcpy(dst + ((int64_t)b * ld + a) * (int64_t)es, (const char *)src + (a * sld + b) * (int64_t)es, es);
}

/* Copies nb bytes from src to dst with non-temporal stores (Plan.stream) where both are whole
 * 16-byte blocks at an aligned dst; task_units fences them before its task is done. */
static void stream_bytes(char *dst, const void *src, size_t nb)
{
#if defined(__SSE2__)
    if (nb % 16 == 0 && (uintptr_t)dst % 16 == 0) {
        for (size_t i = 0; i < nb; i += 16)
            _mm_stream_si128((__m128i *)(void *)(dst + i), _mm_loadu_si128((const __m128i *)(const void *)((const char *)src + i)));
        return;
    }
#endif
    memmove(dst, src, nb);
}

/* Writes n values from src to the output at element off, stepping along the chunk loop (or over
 * the loops of a spanning chunk). */
static void store_chunk(const Plan *p, int64_t off, const void *src, int n)
{
    char *dst = (char *)p->k->out + off * (int64_t)p->out_es;
    if (p->stream)
        stream_bytes(dst, src, (size_t)n * p->out_es);
    else if (p->trc)
        store_transposed(dst, src, p->trr, p->trc, p->trc, p->trld, p->out_es);
    else if (p->otab)
        store_at_32(dst, p->otab, src, p->out_es, n);
    else if (p->span || p->ostr[p->cl] == 1)
        memmove(dst, src, (size_t)n * p->out_es);
    else if (p->idx32)
        store_step_32(dst, p->ostr32, src, p->out_es, n);
    else
        store_step_64(dst, p->ostr[p->cl], src, p->out_es, n);
}

/* ---- scattered stores (and accumulating ones, which may have no scatter index) ---- */

/* The output offsets of a scattered chunk of n elements whose first one (every scatter index 0)
 * is element off, into t->offs: 64-bit whatever the plan's width, every scatter index checked
 * before any is used, then added times its stride (a negative one that wraps with the extent
 * added, as in gather_##w). */
static bool scatter_offsets(const Plan *p, Thread *t, int64_t off, int n)
{
    const FcKernel *k = p->k;
    int64_t *restrict o = t->offs;
    int64_t step = p->ostr[p->cl];
    for (int g = 0; g < k->nscatter; g++)
        if (!check_indices(t, &k->scatter[g], t->cur[p->sphys[g]], n))
            return false;
    for (int i = 0; i < n; i++)
        o[i] = off + step * i;
    for (int g = 0; g < k->nscatter; g++) {
        const int64_t *ix = t->cur[p->sphys[g]];
        int64_t ext = k->scatter[g].extent, stride = k->scatter[g].stride;
        for (int i = 0; i < n; i++)
            o[i] += (ix[i] + (ext & (ix[i] >> 63))) * stride;
    }
    return true;
}

/* Adding into the output as a sequential loop adds, in the output's dtype: integers wrap (done
 * in unsigned), bools or, floats add in their own precision (float32 in float). */
#define ADD_BOOL(q, s) ((q) |= (s))
#define ADD_INT32(q, s) ((q) = (int32_t)((uint32_t)(q) + (uint32_t)(s)))
#define ADD_INT64(q, s) ((q) = (int64_t)((uint64_t)(q) + (uint64_t)(s)))
#define ADD_FLOAT(q, s) ((q) += (s))
#define ADD_UINT8(q, s) ((q) = (uint8_t)((q) + (s)))
#define ADD_INT8(q, s) ((q) = (int8_t)(uint8_t)((uint8_t)(q) + (uint8_t)(s)))
#define ADD_INT16(q, s) ((q) = (int16_t)(uint16_t)((uint16_t)(q) + (uint16_t)(s)))
#define ADD_HALF(q, s) ((q) = fc_f32_to_f16(fc_f16_to_f32(q) + fc_f16_to_f32(s)))
#define ADD_BHALF(q, s) ((q) = fc_f32_to_bf16(fc_bf16_to_f32(q) + fc_bf16_to_f32(s)))
#define ADD_DTYPES(X)                                                                              \
    X(b, uint8_t, ADD_BOOL) X(i32, int32_t, ADD_INT32) X(i64, int64_t, ADD_INT64) X(f32, float, ADD_FLOAT) \
    X(f64, double, ADD_FLOAT) X(u8, uint8_t, ADD_UINT8) X(i8, int8_t, ADD_INT8) X(i16, int16_t, ADD_INT16) \
    X(f16, uint16_t, ADD_HALF) X(bf16, uint16_t, ADD_BHALF)

#define DEF_ADD(sfx, T, ADD)                                                                       \
    /* q[o[i]] += s[i], in order: a chunk scattered element by element. */                       \
    static void add_at_##sfx(void *out, const int64_t *o, const void *src, int n)                \
    {                                                                                              \
        T *q = out;                                                                                \
        const T *s = src;                                                                          \
        for (int i = 0; i < n; i++)                                                                \
            ADD(q[o[i]], s[i]);                                                                    \
    }                                                                                              \
                                                                                                   \
    /* q[i * step] += s[i], in order (s may overlap q). */                                         \
    static void add_step_##sfx(void *out, int64_t step, const void *src, int n)                   \
    {                                                                                              \
        T *q = out;                                                                                \
        const T *s = src;                                                                          \
        for (int i = 0; i < n; i++)                                                                \
            ADD(q[i * step], s[i]);                                                                \
    }                                                                                              \
                                                                                                   \
    /* q[i] += s[i], the two apart: a vector loop. */                                              \
    CPU_CLONES static void add_run_##sfx(void *restrict out, const void *restrict src, int n)     \
    {                                                                                              \
        T *restrict q = out;                                                                       \
        const T *restrict s = src;                                                                 \
        CHUNK_LOOP(n, ADD(q[i], s[i]));                                                            \
    }
ADD_DTYPES(DEF_ADD)

/* q[i] += v[i] * w, the two apart (Plan.mul_add): the product rounded, then the sum, as the
 * product's step and add_run give them. */
#define DEF_MUL_ADD(sfx, T)                                                                        \
    CPU_CLONES static void mul_add_run_##sfx(void *restrict out, const void *restrict v, const void *w, int n) \
    {                                                                                              \
        T *restrict q = out;                                                                       \
        const T *restrict s = v;                                                                   \
        T c = *(const T *)w;                                                                       \
        CHUNK_LOOP(n, q[i] += s[i] * c);                                                           \
    }
DEF_MUL_ADD(f32, float)
DEF_MUL_ADD(f64, double)

/* d[i] = x[i] + r[i] * w, or r[i] * w with no x (Step.one: a MULADD one of whose factors is a
 * value of one per chunk, w): the product rounded, then the sum, as op_MULADD gives them. */
#define DEF_MULADD_ONE(sfx, T)                                                                     \
    CPU_CLONES static void muladd_one_##sfx(void *restrict dv, const void *restrict xv, const void *restrict rv, \
                                            const void *w, int n)                                  \
    {                                                                                              \
        T *restrict d = dv;                                                                        \
        const T *restrict x = xv;                                                                  \
        const T *restrict r = rv;                                                                  \
        T c = *(const T *)w;                                                                       \
        if (!x) {                                                                                  \
            CHUNK_LOOP(n, d[i] = r[i] * c);                                                        \
            return;                                                                                \
        }                                                                                          \
        CHUNK_LOOP(n, d[i] = x[i] + r[i] * c);                                                     \
    }
DEF_MULADD_ONE(f32, float)
DEF_MULADD_ONE(f64, double)

/* d[i] = x[i] + r[0][i] * w[0] + ... + r[nt - 1][i] * w[nt - 1] (no x when NULL), added in that
 * order, each w a value of one (Step.one's MULADDs in a chain, plan_rowops outside a span): the
 * products and sums of muladd_one's passes, one pass. Inlined with nt a constant. */
#define DEF_TERMS_ONE(sfx, T)                                                                      \
    static inline __attribute__((always_inline)) void terms_one_##sfx##_n(                         \
        T *restrict d, const T *restrict x, const int nt, const void *const *w, const void *const *r, int n) \
    {                                                                                              \
        const T *restrict r0 = r[0], *restrict r1 = r[nt > 1], *restrict r2 = r[nt > 2 ? 2 : 0];   \
        const T *restrict r3 = r[nt > 3 ? 3 : 0];                                                  \
        T c0 = *(const T *)w[0], c1 = *(const T *)w[nt > 1], c2 = *(const T *)w[nt > 2 ? 2 : 0];   \
        T c3 = *(const T *)w[nt > 3 ? 3 : 0];                                                      \
        if (!x) {                                                                                  \
            CHUNK_LOOP(n, T a = r0[i] * c0; if (nt > 1) a = a + r1[i] * c1;                        \
                       if (nt > 2) a = a + r2[i] * c2; if (nt > 3) a = a + r3[i] * c3; d[i] = a);  \
            return;                                                                                \
        }                                                                                          \
        CHUNK_LOOP(n, T a = x[i] + r0[i] * c0; if (nt > 1) a = a + r1[i] * c1;                     \
                   if (nt > 2) a = a + r2[i] * c2; if (nt > 3) a = a + r3[i] * c3; d[i] = a);      \
    }                                                                                              \
    CPU_CLONES static void terms_one_##sfx(void *d, const void *x, int nt, const void *const *w,  \
                                           const void *const *r, int n)                            \
    {                                                                                              \
        switch (nt) {                                                                              \
        case 1: terms_one_##sfx##_n(d, x, 1, w, r, n); break;                                      \
        case 2: terms_one_##sfx##_n(d, x, 2, w, r, n); break;                                      \
        case 3: terms_one_##sfx##_n(d, x, 3, w, r, n); break;                                      \
        default: terms_one_##sfx##_n(d, x, 4, w, r, n); break;     /* ROW_TERMS */                \
        }                                                                                          \
    }
DEF_TERMS_ONE(f32, float)
DEF_TERMS_ONE(f64, double)
#undef DEF_TERMS_ONE

typedef struct Adder {
    void (*at)(void *out, const int64_t *o, const void *src, int n);
    void (*step)(void *out, int64_t step, const void *src, int n);
    void (*run)(void *restrict out, const void *restrict src, int n);
} Adder;

#define ADDER(sfx, T, ADD) [DT_##sfx] = {add_at_##sfx, add_step_##sfx, add_run_##sfx},
static const Adder adders[FC_DTYPE__COUNT] = {ADD_DTYPES(ADDER)};

/* Whether n bytes at a and n at b do not overlap (compared as integers: they may be parts of
 * different objects). */
static bool apart(const void *a, const void *b, size_t n)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x + n <= y || y + n <= x;
}

/* Writes the chunks that defer_run holds back, if any. */
static void flush_run(Thread *t)
{
    if (t->run_len > 0)
        memcpy(t->run, t->run_src, t->run_len);
    t->run_len = 0;
}

/* Holds back a flat scattered chunk of len bytes, stored with a unit step at q from values read
 * in place at src, while the next chunk continues it in the output and in the input alike, so
 * that a row goes out in one copy. Copied chunk by chunk, where the output and the input share
 * their offsets within pages (as large allocations do), glibc copies each 1 KiB piece
 * backwards and the prefetchers lose the stream: z[idx] = x over 4096 x 1024 float32 took 3.5x
 * as long as with whole rows. Nothing else is written while a run is held (the store runs on
 * one thread and flushes before any other write and at the end of each task) and the plan
 * holds none back when a load reads the output's storage, so the late copy reads and writes
 * what chunk-by-chunk copies would. */
static void defer_run(Thread *t, char *q, const char *src, size_t len)
{
    bool joins = t->run_len > 0 && q == t->run + t->run_len && src == t->run_src + t->run_len &&
                 apart(t->run, t->run_src, t->run_len + len);
    if (!joins) {
        flush_run(t);
        t->run = q;
        t->run_src = src;
    }
    t->run_len += len;
}

/* Writes (or adds) n values from src along the chunk loop from element off: a flat scattered
 * chunk, its indices already folded into off. Its elements land on distinct addresses unless
 * the output does not move along the chunk loop, and only there, or where src overlaps the
 * output, does the order within the chunk show: an in-order loop then gives what the
 * element-by-element path gives (the last stays, sums in order); elsewhere a copy (perhaps
 * held back, defer_run) or a vector add does. */
static void flat_write(const Plan *p, Thread *t, int64_t off, const void *src, int n)
{
    int64_t step = p->ostr[p->cl];
    size_t es = p->out_es, len = (size_t)n * es;
    char *q = (char *)p->k->out + off * (int64_t)es;
    if (p->mul_add) {       /* unit stride, apart, nothing held back (plan_mul_add) */
        if (p->k->out_dtype == FC_FLOAT32)
            mul_add_run_f32(q, t->cur[p->mul_v], t->cur[p->mul_w], n);
        else
            mul_add_run_f64(q, t->cur[p->mul_v], t->cur[p->mul_w], n);
        return;
    }
    bool contiguous = step == 1 && apart(q, src, len);
    if (contiguous && p->defer && src != t->buf[p->res]) {
        defer_run(t, q, src, len);
        return;
    }
    flush_run(t);
    const Adder *add = &adders[p->k->out_dtype];
    if (p->k->accumulate && contiguous)
        add->run(q, src, n);
    else if (p->k->accumulate)
        add->step(q, step, src, n);
    else if (contiguous)
        memcpy(q, src, len);
    else
        store_step_64(q, step, src, es, n);
}

/* Writes (or adds) a chunk of n values of a scattered store whose first element (every scatter
 * index 0) is element off: in the order of the loop nest, the chunk's indices checked first. */
static bool scatter_chunk(const Plan *p, Thread *t, int64_t off, const void *src, int n)
{
    const FcKernel *k = p->k;
    if (p->flat_scatter) {
        if (!fold_indices(t, k->scatter, p->sphys, k->nscatter, &off))
            return false;
        flat_write(p, t, off, src, n);
    } else {
        if (!scatter_offsets(p, t, off, n))
            return false;
        if (k->accumulate)
            adders[k->out_dtype].at(k->out, t->offs, src, n);
        else
            fc_cpu_scatter_elems(p->k->out, src, t->offs, n, p->out_es);
    }
    return true;
}

/* A load of m values: a wide one over its positions from chunk position i0 (m = the chunk's n,
 * or its shape's positions in a span), one value read once (and broadcast over m copies). A
 * gathered load whose indices vary along the chunk reads element by element; one whose indices
 * hold (flat, as every invariant one is) checks them once and reads as an ordinary load from
 * where they point. */
/* The element load s reads first for the current loop indices, its list's chunk loop at i0
 * (0 for a load of one value). */
static int64_t load_origin(const Plan *p, const Step *s, const Thread *t, int64_t i0)
{
    int64_t off = s->in->offset + s->cstride * i0;
    for (int l = 0; l < p->L; l++)
        if (l != s->cx)
            off += s->strides[l] * t->idx[l];
    return off;
}

static bool load_block(const Plan *p, const Step *s, Thread *t, int64_t i0, int m);

static bool do_load(const Plan *p, const Step *s, Thread *t, int64_t i0, int m, bool wide)
{
    if (wide && p->tload >= 0 && s == &p->steps[p->tload] && load_block(p, s, t, i0, m))
        return true;
    const FcInstr *in = s->in;
    size_t es = s->esize;
    int64_t stride = s->cstride;
    int64_t off = load_origin(p, s, t, wide ? i0 : 0);
    void *d = t->buf[s->d];
    t->cur[s->d] = d;
    if (s->per_element)
        return p->idx32 ? gather_32(p, s, t, off, m) : gather_64(p, s, t, off, m);
    if (!fold_indices(t, in->gathers, s->g, in->ngather, &off))
        return false;
    const char *src = (const char *)p->k->bufs[in->buf] + off * (int64_t)es;
    if (s->inplace && wide)
        t->cur[s->d] = src;
    else if ((stride == 0 && !s->ramp) || !wide || m == 1)
        fc_cpu_broadcast(d, src, es, m);
    else if (s->prun)
        for (int r = 0; r < m / s->prun; r++)
            memcpy((char *)d + (size_t)r * (size_t)s->prun * es, src + (int64_t)s->ramp[r] * (int64_t)es,
                   (size_t)s->prun * es);
    else if (s->ramp)
        copy_at_32(d, src, s->ramp, es, m);
    else if (p->idx32)
        copy_step_32(d, src, (int32_t)stride, es, m);
    else
        copy_step_64(d, src, stride, es, m);
    return true;
}

/* The entry of a table over loops tl[0..n) (Step.tl, PreX.tl) at loop indices idx. */
static inline int64_t tab_entry(const struct TabLoop *tl, int n, const int64_t *idx)
{
    int64_t e = 0;
    for (int j = 0; j < n; j++)
        e += tl[j].str * idx[tl[j].loop];
    return e;
}

/* Whether the chain that memoised step s begins holds a value for the current loop indices
 * (its entry computed in the current generation of its key); sets the chain's entry. A new key
 * starts a generation, which leaves every entry of the old one stale. */
static bool memo_holds(const Plan *p, Thread *t, const Step *s)
{
    int g = s->memo;
    int64_t *key = t->mkey + (size_t)g * (size_t)p->L;
    bool same = t->mgen[g] != 0;
    for (uint64_t d = s->key; d && same; d &= d - 1) {
        int l = __builtin_ctzll(d);
        same = key[l] == t->idx[l];
    }
    if (!same) {
        for (uint64_t d = s->key; d; d &= d - 1) {
            int l = __builtin_ctzll(d);
            key[l] = t->idx[l];
        }
        t->mgen[g]++;
    }
    int64_t e = tab_entry(s->tl, s->ntl, t->idx);
    t->ment[g] = e;
    uint64_t *stamp = &t->stamps[s->stamp0 + (size_t)e];
    if (*stamp == t->mgen[g])
        return true;
    *stamp = t->mgen[g];        /* the chain is computed next, in full */
    return false;
}

/* The steps that restore of a chain that holds at entry e of generation gen: each buffer that
 * holds another entry gets its value back from the table. */
static void memo_restore(Thread *t, const Restore *r, int n, int64_t e, uint64_t gen)
{
    for (; n > 0; n--, r++) {
        if (r->w == 0) {
            t->cur[r->d] = t->tvals + (r->val0 + (size_t)e * (size_t)r->m) * 8;
            continue;
        }
        if (t->narrow && r->w > 1) {    /* position 0 alone: the entry itself */
            t->cur[r->d] = t->tvals + (r->val0 + (size_t)e) * 8;
            continue;
        }
        if (t->mcur[r->memo] == e && t->mcg[r->memo] == gen) {
            t->cur[r->d] = t->buf[r->d];        /* a narrow pass may have pointed it elsewhere */
            continue;
        }
        void *d = t->buf[r->d];
        fc_cpu_broadcast(d, t->tvals + (r->val0 + (size_t)e) * 8, (size_t)r->esize, r->w);
        t->cur[r->d] = d;
        t->mcur[r->memo] = e;
        t->mcg[r->memo] = gen;
    }
}

/* Memoised step s that restores, just computed: its value goes to its chain's current entry. */
static void memo_keep(const Plan *p, Thread *t, const Step *s)
{
    int64_t e = t->ment[s->chain];
    if (s->wide) {
        memcpy(t->tvals + (s->val0 + (size_t)e * (size_t)s->m) * 8, t->cur[s->d], (size_t)s->m * s->esize);
        return;
    }
    fc_cpu_broadcast(t->tvals + (s->val0 + (size_t)e) * 8, t->buf[s->d], s->esize, 1);
    t->mcur[s->memo] = e;
    t->mcg[s->memo] = t->narrow && s->fill ? 0 : t->mgen[s->chain];    /* narrow: not broadcast */
}

/* How many indices of a loop of extent ext satisfy index < v (LT) or index <= v (LE). */
static int64_t bound_count(FcOp cmp, FcDType dt, const void *v, int64_t ext)
{
    double c;
    if (dt == FC_INT64) {
        int64_t x = *(const int64_t *)v;
        if (x >= ext)
            return ext;
        c = (double)(cmp == FC_OP_LT ? x : x + 1);
    } else {
        double x = dt == FC_FLOAT32 ? (double)*(const float *)v : *(const double *)v;
        if (x != x)
            return 0;
        c = cmp == FC_OP_LT ? ceil(x) : floor(x) + 1;
    }
    return c <= 0 ? 0 : c >= (double)ext ? ext : (int64_t)c;
}

static bool eval(const Plan *p, Thread *t, int from, int to, int64_t i0, int n);

/* sc[i] = index ix[i] times g's stride as gather_32 reads it (a negative one that wraps with the
 * extent added), i < n; 0 for one out of range. Returns whether all are in range
 * (any_out_of_range, as check_indices tests them). */
CPU_CLONES static bool scale_indices(int32_t *restrict sc, const int64_t *restrict ix, int n, const FcGather *g)
{
    uint64_t ext = (uint64_t)g->extent, lo = g->wrap ? ext : 0;
    uint32_t gs = ext > 1 ? (uint32_t)g->stride : 0;
    bool bad = any_out_of_range(g, ix, n);
    if (!bad && !g->wrap) {
        CHUNK_LOOP(n, sc[i] = (int32_t)((uint32_t)ix[i] * gs));
        return true;
    }
    for (int i = 0; i < n; i++) {
        int out = (uint64_t)ix[i] + lo >= ext + lo;
        uint32_t v = (uint32_t)((uint64_t)ix[i] + (ext & (uint64_t)(ix[i] >> 63))) * gs;
        sc[i] = (int32_t)(out ? 0 : v);
    }
    return !bad;
}

/* Fills the precomputed steps' tables (plan_pre), in step order, with t's invariants: a load
 * and an iota by walking their loops, an op in one pass over the table, its operands widened. */
static void pre_fill(const Plan *p, Thread *t)
{
    for (int i = 0; i < p->npinv; i++) {
        const Step *q = &p->steps[p->pinv[i]];
        fc_cpu_broadcast(p->pretab + q->pre0, t->cur[q->d], q->esize, p->pmost);
    }
    for (int i = 0; i < p->npfill; i++) {
        const PreFill *f = &p->pfill[i];
        const Step *s = &p->steps[f->step];
        const FcInstr *in = s->in;
        char *d = p->pretab + s->pre0;
        if (in->op == FC_OP_IOTA) {     /* over its own loop alone */
            for (int q = 0; q < f->n; q++)
                ((int64_t *)(void *)d)[q] = q;
            continue;
        }
        if (in->op == FC_OP_LOAD) {
            const char *src = (const char *)p->k->bufs[in->buf] + in->offset * (int64_t)s->esize;
            int loops[FC_MAX_DIMS], nl = cpu_shape_loops(p, s->deps, loops);
            int64_t idx[FC_MAX_DIMS] = {0}, off = 0;
            for (int q = 0; q < f->n; q++) {
                memcpy(d + (size_t)q * s->esize, src + off * (int64_t)s->esize, s->esize);
                for (int j = nl - 1; j >= 0; j--) {
                    int l = loops[j];
                    off += s->strides[l];
                    if (++idx[j] < p->ext[l])
                        break;
                    off -= s->strides[l] * p->ext[l];
                    idx[j] = 0;
                }
            }
            continue;
        }
        const void *v[3];
        for (int o = 0; o < 3; o++) {
            const Step *q = f->op[o] >= 0 ? &p->steps[f->op[o]] : NULL;
            char *x = p->prex + (size_t)o * (size_t)f->n * 8;
            v[o] = NULL;
            if (q && f->x[o]) {
                widen_vals(x, p->pretab + q->pre0, f->n, f->x[o], f->xrep[o], f->xcyc[o], q->esize);
                v[o] = x;
            } else if (q) {
                v[o] = p->pretab + q->pre0;
            }
        }
        if (s->sel)
            s->sel(d, v[0], v[1], v[2], s->selk, f->n);
        else
            s->fn(d, v[0], v[1], v[2], f->n);
    }
    for (int i = 0; i < p->npscale; i++) {
        PreScale *c = &p->pscale[i];
        const Step *q = &p->steps[c->q];
        c->ok = scale_indices(c->sc, (const int64_t *)(const void *)(p->pretab + q->pre0),
                              (int)cpu_shape_size(p, q->deps), c->ga);
    }
}

/* The precomputed steps of head s's run that others read, pointed at their values for the
 * current loop indices (or a value broadcast where it is read beyond position 0); with a term
 * level (Plan.term), each one's entry at the level's first index too (Thread.tent). */
static void pre_point(const Plan *p, Thread *t, const Step *s)
{
    const struct TabLoop *tl = NULL;
    int64_t e = 0, tx = t->tent ? t->idx[p->term] : 0;
    for (const PreX *x = p->plist + s->pfirst, *end = x + s->pcount; x < end; x++) {
        if (x->tl != tl) {      /* values over the loops of the one before share its entry */
            tl = x->tl;
            e = tab_entry(tl, x->nl, t->idx);
        }
        if (t->tent)            /* (tstr is 0 for a value that does not vary along the level) */
            t->tent[x - p->plist] = e - x->tstr * tx;
        const char *v = p->pretab + x->pre0 + (size_t)e * (size_t)x->esize;
        if (x->w && !t->narrow) {
            t->pre_copies++;
            fc_cpu_broadcast(t->buf[x->d], v, (size_t)x->esize, x->w);
            v = t->buf[x->d];
        }
        t->cur[x->d] = v;
    }
}

/* pre_point for a point's later term (Plan.term), the run's values that do not vary along the
 * level holding from an earlier one: those that vary, at their entry of the first term (set by
 * pre_point) moved along the level. */
static void pre_point_term(const Plan *p, Thread *t, int j)
{
    int64_t tx = t->idx[p->term];
    for (const int *k = p->tpx + p->tpf[j], *end = k + p->tpn[j]; k < end; k++) {
        const PreX *x = &p->plist[*k];
        const char *v = p->pretab + x->pre0 + (size_t)(t->tent[*k] + x->tstr * tx) * (size_t)x->esize;
        if (x->w && !t->narrow) {
            t->pre_copies++;
            fc_cpu_broadcast(t->buf[x->d], v, (size_t)x->esize, x->w);
            v = t->buf[x->d];
        }
        t->cur[x->d] = v;
    }
}

/* Operand o of step s as it reads it: v itself, or widened to its m positions (into scratch). */
static inline const void *widened(const Plan *p, Thread *t, const Step *s, int o, const void *v, int m)
{
    if (!s->x[o])
        return v;
    void *d = t->xbuf + (size_t)o * p->cbytes;
    widen_vals(d, v, m, s->x[o], s->xrep[o], s->xcyc[o], (size_t)s->xes[o]);
    return d;
}

/* An inner reduction at the chunk [i0, i0 + n) of its list's chunk loop: its loops run (up to
 * their bounds), the body is evaluated at each point and folded; a wide reduction keeps one
 * accumulator per position of the chunk, one of one value folds its own loop rcl in chunks into
 * lanes, as the root's horizontal reductions do. */
static bool eval_reduce(const Plan *p, Thread *t, const Step *s, int64_t i0, int n)
{
    const FcInstr *in = s->in;
    const CpuReducer *r = &s->red;
    int64_t cnt[FC_MAX_DIMS];
    for (int l = 0; l < p->L; l++)
        cnt[l] = p->ext[l];
    bool cut = false;
    for (int b = 0; b < in->nbound; b++) {
        const FcBound *bd = &in->bounds[b];
        if (s->bdt[b] == FC_BOOL)
            continue;
        int64_t c = bound_count(bd->cmp, s->bdt[b], t->cur[s->bvals[b]], p->ext[bd->loop]);
        if (c < cnt[bd->loop])
            cnt[bd->loop] = c;
        cut |= c < p->ext[bd->loop];
    }
    void *acc = t->racc + (size_t)s->racc * p->cbytes;
    int width = s->wide ? (s->m > 0 ? s->m : n) : CPU_LANES;
    fc_cpu_reducer_reset(r, acc, NULL, width);
    bool empty = false;
    for (int j = 0; j < s->nrl; j++) {
        t->idx[s->rl[j]] = 0;
        empty |= cnt[s->rl[j]] == 0;
    }
    int64_t rext = s->rcl >= 0 ? cnt[s->rcl] : 1;
    if (s->rcl >= 0 && rext == 0)
        empty = true;
    while (!empty) {
        if (s->wide) {
            if (!eval(p, t, s->body0, s->body1, i0, n))
                return false;
            r->vfold(acc, widened(p, t, s, 0, t->cur[s->a], width), width);
        } else {
            for (int64_t c0 = 0; c0 < rext; c0 += FC_CHUNK) {
                int m = rext - c0 < FC_CHUNK ? (int)(rext - c0) : FC_CHUNK;
                if (s->rcl < 0)
                    m = 1;
                if (!eval(p, t, s->body0, s->body1, c0, m))
                    return false;
                r->hfold(acc, t->cur[s->a], m);
            }
        }
        int j = s->nrl - 1;
        for (; j >= 0; j--) {
            int l = s->rl[j];
            if (++t->idx[l] < cnt[l])
                break;
            t->idx[l] = 0;
        }
        if (j < 0)
            break;
    }
    if (cut) {
        if (s->wide)
            r->vfold(acc, s->fillv, width);
        else
            r->hfold(acc, s->fillv, 1);
    }
    void *d = t->buf[s->d];
    if (s->wide) {
        r->fin(d, acc, width);
    } else {
        for (int j = 1; j < CPU_LANES; j++)
            r->comb(acc, (char *)acc + j * 8, 1);
        r->fin(d, acc, 1);
        if (s->fill)
            fc_cpu_broadcast(d, d, s->esize, s->fillw);
    }
    t->cur[s->d] = d;
    return true;
}

/* Step s of weighted rows into d, a its value a (or NULL). Its weights that are products first:
 * into the scratch of widened operands (at most ROW_TERMS * rows <= 2 * cap values: a row has
 * two or more). Not inlined: eval's loop stays small. */
static __attribute__((noinline)) void eval_rows(const Plan *p, Thread *t, const Step *s, void *d, const void *a)
{
    const Step *g = &p->steps[s->rowg];
    RowW w[ROW_TERMS];
    for (int q = 0; q < s->nterm; q++) {
        const RowTerm *tm = &s->term[q];
        const void *wv = t->cur[tm->w], *vv = t->cur[tm->v];
        if (vv) {
            void *wd = t->xbuf + (size_t)q * (size_t)g->rows * s->esize;
            if (s->esize == 4)
                row_weights_f32(wd, wv, vv, tm, g->rows);
            else
                row_weights_f64(wd, wv, vv, tm, g->rows);
            wv = wd;
        }
        w[q] = (RowW){wv, t->cur[tm->r]};
    }
    if (s->esize == 4)
        rows_f32(d, a, s->nterm, w, g->rows, g->rlen);
    else
        rows_f64(d, a, s->nterm, w, g->rows, g->rlen);
}

/* Evaluates steps [from, to) (one list) for the chunk of n positions starting at i0 along the
 * list's chunk loop, the other loops at t->idx. A step of one value (an invariant too) is
 * computed once (broadcast when read beyond position 0), and kept while its loops stay. */
static bool eval(const Plan *p, Thread *t, int from, int to, int64_t i0, int n)
{
    uint64_t *ts = t->tstamp, g2 = 2 * t->tgen, now = g2 + !t->narrow;
    for (int j = from; j < to; j++) {
        const Step *s = &p->steps[j];
        const FcInstr *in = s->in;
        if (t->tonly && p->tunit[j] && (ts[j] == g2 + 1 || (t->narrow && ts[j] == g2))) {
            t->term_skips++;
            j = p->tjump[j] - 1;
            continue;
        }
        if (s->skip) {
            if (s->pcount) {
                if (t->tonly && (ts[j] == g2 + 1 || (t->narrow && ts[j] == g2)))
                    pre_point_term(p, t, j);
                else
                    pre_point(p, t, s);
                if (ts)
                    ts[j] = now;
            }
            j = s->skip - 1;
            continue;
        }
        if (ts)
            ts[j] = now;
        if (s->memo >= 0 && !s->memo_as_prev && memo_holds(p, t, s)) {
            memo_restore(t, p->rlist + s->rfirst, s->rcount, t->ment[s->memo], t->mgen[s->memo]);
            j = s->chain_end - 1;
            continue;
        }
        if (t->narrow && s->wide && s->memo < 0) {
            if (ts)
                ts[j] = 0;      /* not computed: holds nothing */
            continue;
        }
        int m = !s->wide ? 1 : s->m > 0 ? s->m : n;
        int fw = s->fill && !t->narrow ? s->fillw : m;  /* positions of one value */
        void *d = t->buf[s->d];
        switch (in->op) {
        case FC_OP_LOAD:
            if (!do_load(p, s, t, i0, !s->wide ? fw : m, s->wide))
                return false;
            if (s->memo >= 0 && s->restore)
                memo_keep(p, t, s);
            continue;
        case FC_OP_CONST:
            fc_cpu_fill(d, in->dtype, in->konst, fw);
            break;
        case FC_OP_IOTA: {
            int64_t *q = d;
            if (s->wide && (s->shape >> in->loop & 1)) {     /* the loop's own shape: 0, 1, ... */
                for (int i = 0; i < m; i++)
                    q[i] = i0 + i;
            } else {
                int64_t v = p->k->nloop > 0 ? t->idx[in->loop] : 0;
                for (int i = 0; i < fw; i++)
                    q[i] = v;
            }
            break;
        }
        case FC_OP_SUM: case FC_OP_PROD: case FC_OP_AMAX: case FC_OP_AMIN: case FC_OP_ANY: case FC_OP_ALL: {
            bool narrow = t->narrow, tonly = t->tonly;
            uint64_t *stamps = t->tstamp;
            t->narrow = false;      /* its body runs along a loop of its own: in full */
            t->tonly = false;
            t->tstamp = NULL;
            bool ok = eval_reduce(p, t, s, i0, n);
            t->narrow = narrow;
            t->tonly = tonly;
            t->tstamp = stamps;
            if (!ok)
                return false;
            break;
        }
        default: {
            const void *a = t->cur[s->a], *b = t->cur[s->b], *c = t->cur[s->c];
            if (s->nterm && !p->span) {
                const void *w[ROW_TERMS], *r[ROW_TERMS];
                for (int q = 0; q < s->nterm; q++) {
                    w[q] = t->cur[s->term[q].w];
                    r[q] = t->cur[s->term[q].r];
                }
                if (s->esize == 4)
                    terms_one_f32(d, a, s->nterm, w, r, m);
                else
                    terms_one_f64(d, a, s->nterm, w, r, m);
                t->one_terms++;
                break;
            }
            if (s->nterm) {
                eval_rows(p, t, s, d, a);
                break;
            }
            if (s->widens) {
                a = widened(p, t, s, 0, a, m);
                b = widened(p, t, s, 1, b, m);
                c = widened(p, t, s, 2, c, m);
            }
            if (s->one) {
                const void *w = s->one == 1 ? b : c, *r = s->one == 1 ? c : b;
                if (s->esize == 4)
                    muladd_one_f32(d, a, r, w, m);
                else
                    muladd_one_f64(d, a, r, w, m);
            } else if (s->sel)
                s->sel(d, a, b, c, s->selk, m);
            else if (s->fn(d, a, b, c, m) != CPU_OK)
                return fail(t, FC_ERR_RUNTIME, "ZeroDivisionError");
            if (!s->wide && fw > 1)
                fc_cpu_broadcast(d, d, s->esize, fw);
            break;
        }
        }
        t->cur[s->d] = d;
        if (s->memo >= 0 && s->restore)
            memo_keep(p, t, s);
    }
    return true;
}

static inline bool eval_chunk(const Plan *p, Thread *t, int64_t i0, int n)
{
    return eval(p, t, p->ninv, p->ntop - p->mul_add, i0, n);
}

/* Sets t->idx for loops[0..n) from the row-major number v (the last loop fastest). */
static void decode(const Plan *p, Thread *t, const int *loops, int n, int64_t v)
{
    for (int j = n - 1; j >= 0; j--) {
        int64_t e = p->ext[loops[j]];
        t->idx[loops[j]] = v % e;
        v /= e;
    }
}

/* Steps t->idx over loops[0..n) to the next point in row-major order (the last loop fastest;
 * past the last point they wrap to 0): decode's number plus one, without its divisions, which
 * cost as much as the rest of a masked point of roi_align's backward. */
static inline void next_point(const Plan *p, Thread *t, const int *loops, int n)
{
    for (int j = n - 1; j >= 0; j--) {
        int l = loops[j];
        if (++t->idx[l] < p->ext[l])
            return;
        t->idx[l] = 0;
    }
}

/* The output offset of the kept loops at t->idx (cl's contribution not included). */
static int64_t out_base(const Plan *p, const Thread *t)
{
    int64_t off = p->k->out_offset;
    for (int j = 0; j < p->nkl; j++)
        off += p->ostr[p->kl[j]] * t->idx[p->kl[j]];
    return off;
}

/* Chunk number c along the chunk loop: [*i0, *i0 + *n). */
static void chunk_at(const Plan *p, int64_t c, int64_t *i0, int *n)
{
    if (p->span) {
        *i0 = 0;
        *n = p->span;
        return;
    }
    *i0 = c * FC_CHUNK;
    int64_t left = p->ext[p->cl] - *i0;
    *n = left < FC_CHUNK ? (int)left : FC_CHUNK;
}

/* Positions t at unit u of a store or vertical reduction: the kept loops at t->idx, and the
 * chunks [*c0, *c0 + *nc) along the chunk loop. Units are numbered over the kept loops and the
 * groups of p->group chunks, the last kept loop (lk) taken in tiles of p->tile indices: the
 * units of one tile share their chunks, so that a load running along lk reuses cache lines
 * (Plan.tchunk: a chunk's tiles one after the other, the chunks outside). */
/* Where unit u lies in its tile: lk's index is *first + *row, of the tile's *rows, over group
 * *grp of chunks; returns the number of the outer kept loops' point. */
static int64_t tile_place(const Plan *p, int64_t u, int64_t *first, int64_t *row, int64_t *rows, int64_t *grp)
{
    int64_t e = p->lk >= 0 ? p->ext[p->lk] : 1, g = p->ngroup, tl = p->tile;
    int64_t r = u % (e * g);
    if (p->tchunk) {
        int64_t l = r % e;
        *grp = r / e;
        *first = l / tl * tl;
        *rows = e - *first < tl ? e - *first : tl;
        *row = l - *first;
        return u / (e * g);
    }
    int64_t tile = r / (tl * g), rr = r % (tl * g);
    *first = tile * tl;
    *rows = e - *first < tl ? e - *first : tl;
    *row = rr % *rows;
    *grp = rr / *rows;
    return u / (e * g);
}

static void unit_pos(const Plan *p, Thread *t, int64_t u, int64_t *c0, int *nc)
{
    int64_t first, row, rows, grp;
    decode(p, t, p->kl, p->lk >= 0 ? p->nkl - 1 : p->nkl, tile_place(p, u, &first, &row, &rows, &grp));
    if (p->lk >= 0)
        t->idx[p->lk] = first + row;
    t->unit = u;
    t->trow = row;
    t->trows = rows;
    *c0 = grp * p->group;
    int64_t left = p->nchunk - *c0;
    *nc = left < p->group ? (int)left : p->group;
}

static long band_splits;        /* fc_cpu_band_splits */

long fc_cpu_band_splits(void) { return __atomic_load_n(&band_splits, __ATOMIC_RELAXED); }

static long narrow_skips;       /* fc_cpu_narrow_skips */

long fc_cpu_narrow_skips(void) { return __atomic_load_n(&narrow_skips, __ATOMIC_RELAXED); }

static long term_skips;         /* fc_cpu_term_skips */

long fc_cpu_term_skips(void) { return __atomic_load_n(&term_skips, __ATOMIC_RELAXED); }

static long mul_add_runs;       /* fc_cpu_mul_add_runs */

long fc_cpu_mul_add_runs(void) { return __atomic_load_n(&mul_add_runs, __ATOMIC_RELAXED); }

static long mul_w_one_runs;     /* fc_cpu_mul_w_one_runs */

long fc_cpu_mul_w_one_runs(void) { return __atomic_load_n(&mul_w_one_runs, __ATOMIC_RELAXED); }

static long muladd_one_runs;    /* fc_cpu_muladd_one_runs */

long fc_cpu_muladd_one_runs(void) { return __atomic_load_n(&muladd_one_runs, __ATOMIC_RELAXED); }

/* Evaluates a gated store's chunk (plan_gate): *skip when its contribution is a zero that need
 * not be added (cond false, w finite), the steps after the product then left out. After a
 * skipped chunk the steps before the where are first evaluated narrow (t->narrow: what holds
 * one value per chunk, at position 0 alone), which is all that cond and w need: the zeros come
 * in runs (roi_align's samples past a box's grid), and a run's chunks then load, compute and
 * broadcast nothing over the chunk. A chunk found on is evaluated again in full (memoised
 * values are restored, not recomputed). The values are the same either way. */
static bool eval_gated(const Plan *p, Thread *t, int64_t i0, int n, bool *skip)
{
    *skip = false;
    bool narrow = p->gate_narrow && t->gate_off;
    t->narrow = narrow;
    bool ok = eval(p, t, p->ninv, p->gate_where, i0, n);
    bool off = ok && *(const uint8_t *)t->cur[p->steps[p->gate_cond].d] == 0;
    if (ok && off && p->gate_mul)       /* w's steps after the where */
        ok = eval(p, t, p->gate_where + 1, p->gate_mul, i0, n);
    t->narrow = false;
    t->gate_off = off;
    if (!ok)
        return false;
    if (off) {
        const Step *w = &p->steps[p->gate_w];
        const void *wv = p->gate_mul ? t->cur[w->d] : NULL;
        if (!wv || (w->in->dtype == FC_FLOAT32 ? isfinite(*(const float *)wv) : isfinite(*(const double *)wv))) {
            *skip = true;
            t->narrow_skips += narrow;
            return true;
        }
    }
    if (narrow && !eval(p, t, p->ninv, p->gate_where, i0, n))
        return false;
    if (!off && p->gate_v >= 0) {
        t->cur[p->steps[p->gate_where].d] = t->cur[p->steps[p->gate_v].d];
        return eval(p, t, p->gate_where + 1, p->ntop - p->mul_add, i0, n);
    }
    if (!off)
        return eval(p, t, p->gate_where, p->ntop - p->mul_add, i0, n);
    /* the where gives its zero everywhere: made only when the product needs it (w not finite) */
    if (narrow && !eval(p, t, p->gate_where + 1, p->gate_mul, i0, n))
        return false;
    const Step *ws = &p->steps[p->gate_where];
    fc_cpu_fill(t->buf[ws->d], ws->in->dtype, p->steps[p->gate_zero].in->konst, n);
    t->cur[ws->d] = t->buf[ws->d];
    if (t->tstamp)
        t->tstamp[p->gate_where] = 0;   /* its buffer holds the zeros, not the where */
    return eval(p, t, p->gate_mul, p->ntop - p->mul_add, i0, n);
}

static long gate_points;        /* fc_cpu_gate_points */

long fc_cpu_gate_points(void) { return __atomic_load_n(&gate_points, __ATOMIC_RELAXED); }

/* Whether a precomputed step's table holds values of magnitude at most lim (NaN is not). */
static bool table_within(const Plan *p, int j, double lim)
{
    const Step *s = &p->steps[j];
    int64_t n = cpu_shape_size(p, s->deps);
    if (s->in->dtype == FC_FLOAT32) {
        const float *v = (const float *)(const void *)(p->pretab + s->pre0);
        for (int64_t i = 0; i < n; i++)
            if (!(fabsf(v[i]) <= (float)lim))
                return false;
        return true;
    }
    if (s->in->dtype == FC_FLOAT64) {
        const double *v = (const double *)(const void *)(p->pretab + s->pre0);
        for (int64_t i = 0; i < n; i++)
            if (!(fabs(v[i]) <= lim))
                return false;
        return true;
    }
    return false;
}

/* Whether a gated store's zeros past a false bound (Plan.gb) may be skipped by runs this run: w
 * is finite at every point (Plan.gw's tables, once filled), so that each such zero is one that
 * eval_gated would skip too (a w that is not finite gives its NaN there). */
static bool gate_bounded(const Plan *p)
{
    if (p->ngb == 0)
        return false;
    bool f32 = p->ngw > 0 && p->steps[p->gw[0]].in->dtype == FC_FLOAT32;
    if (p->ngw == 1)
        return table_within(p, p->gw[0], f32 ? FLT_MAX : DBL_MAX);
    double root = f32 ? 1e19 : 1e154;       /* root * root is finite */
    return p->ngw == 0 || (table_within(p, p->gw[0], root) && table_within(p, p->gw[1], root));
}

/* Whether the bound leaf s (Plan.gb's step) holds at t->idx: its precomputed table's entry, its
 * loops row-major (cpu_shape_loops, none of the chunk). */
static bool bound_holds(const Plan *p, const Thread *t, const Step *s)
{
    int64_t e = 0;
    for (uint64_t d = s->deps; d; d &= d - 1) {
        int l = __builtin_ctzll(d);
        e = e * p->ext[l] + t->idx[l];
    }
    return ((const uint8_t *)(p->pretab + s->pre0))[e] != 0;
}

/* Plan.gb: after a point of a gated store found a zero (Thread.gate_skip), how many points after
 * it in the order of kl[from, to) are zeros too: the rest of the run of the outermost of those
 * loops whose bound leaf is false there, its place in kl in *kpos (0 points: none). A term
 * level (Plan.term, kl's last) is its own: to stops before it where its terms run apart. */
static int64_t gate_run(const Plan *p, const Thread *t, int from, int to, int *kpos)
{
    int best = to;
    for (int g = 0; g < p->ngb; g++) {
        const struct GateBound *b = &p->gb[g];
        if (b->kpos < from || b->kpos >= best)
            continue;
        if (!bound_holds(p, t, &p->steps[b->step]))
            best = b->kpos;
    }
    int64_t r = 0, m = 1;
    for (int j = to - 1; j >= best; j--) {
        int l = p->kl[j];
        r += (p->ext[l] - 1 - t->idx[l]) * m;
        m *= p->ext[l];
    }
    *kpos = best;
    return r;
}

/* After a point of a gated store (walked in the order of kl[from, to), t->idx) found a zero: the
 * rest of the run of zeros past a false bound (gate_run), when skipped (gskip), left out, t->idx
 * moved to the run's last point (next_point then moves past it). Returns how many units the run
 * held, nt a point (a term level's terms: its own loop is not in kl[from, to)). */
static int64_t skip_zeros(const Plan *p, Thread *t, bool gskip, int from, int to, int64_t nt)
{
    int kpos;
    int64_t r = gskip && t->gate_skip ? gate_run(p, t, from, to, &kpos) : 0;
    if (r == 0)
        return 0;
    for (int j = kpos; j < to; j++)
        t->idx[p->kl[j]] = p->ext[p->kl[j]] - 1;
    t->gate_points += r * nt;
    return r * nt;
}

/* Stores the n positions of cl from i0 at the kept loops' indices in t->idx (output offset base). */
static bool store_chunk_at(const Plan *p, Thread *t, int64_t base, int64_t i0, int n)
{
    if (p->gate_where) {
        bool skip;
        if (!eval_gated(p, t, i0, n, &skip))
            return false;
        t->gate_skip = skip;
        if (skip)
            return true;
    } else if (!eval_chunk(p, t, i0, n)) {
        return false;
    }
    const void *src = t->cur[p->res];
    if (p->xres) {      /* as widened() widens an operand */
        widen_vals(t->xbuf, src, n, p->xres, p->xrep, p->xcyc, fc_dtype_size(p->res_dt));
        src = t->xbuf;
    }
    if (p->store_cast) {
        p->store_cast(t->tmp, src, NULL, NULL, n);
        src = t->tmp;
    }
    int64_t off = base + p->ostr[p->cl] * i0;
    if (!p->scatter)
        store_chunk(p, off, src, n);
    else if (!scatter_chunk(p, t, off, src, n))
        return false;
    return true;
}

static bool store_unit(const Plan *p, Thread *t, int64_t u)
{
    int64_t c0;
    int nc;
    unit_pos(p, t, u, &c0, &nc);
    int64_t base = out_base(p, t);
    for (int j = 0; j < nc; j++) {
        int64_t i0;
        int n;
        chunk_at(p, c0 + j, &i0, &n);
        if (!store_chunk_at(p, t, base, i0, n))
            return false;
    }
    return true;
}

/* Whether units [u, u + 8) of a tcopy plan are eight consecutive indices of lk over one chunk
 * (within a tile: see unit_pos). */
static bool eight_units(const Plan *p, int64_t u, int64_t u1)
{
    if (!p->tcopy || p->nscale || u + 8 > u1)
        return false;
    int64_t first, row, rows, grp;
    tile_place(p, u, &first, &row, &rows, &grp);
    return row % 8 == 0 && row + 8 <= rows;
}

/* Units [u, u + 8) of a tcopy plan (eight_units): their chunk of input, eight runs along lk
 * one per position of the chunk, goes to eight output runs along cl, block by block (or eight
 * input runs along cl to runs along lk). */
static void copy_units(const Plan *p, Thread *t, int64_t u)
{
    const Step *s = &p->steps[p->tsrc];
    int64_t c0, i0;
    int nc, n;
    unit_pos(p, t, u, &c0, &nc);
    chunk_at(p, c0, &i0, &n);
    const char *src = (const char *)p->k->bufs[s->in->buf] + load_origin(p, s, t, i0) * (int64_t)s->esize;
    char *dst = (char *)p->k->out + (out_base(p, t) + p->ostr[p->cl] * i0) * (int64_t)p->out_es;
    if (p->ostr[p->cl] == 1)
        store_transposed(dst, src, n, 8, s->strides[p->cl], p->ostr[p->lk], p->out_es);
    else
        store_transposed(dst, src, 8, n, s->strides[p->lk], p->ostr[p->cl], p->out_es);
}

/* Whether units [u, u + 16) of a tcopy plan are a whole tile of TILE == 16 indices of lk over
 * one chunk (copy_tile). */
static bool tile_units(const Plan *p, int64_t u, int64_t u1)
{
    if (!p->tcopy || p->tile != 16 || u + 16 > u1)
        return false;
    int64_t first, row, rows, grp;
    tile_place(p, u, &first, &row, &rows, &grp);
    return row == 0 && rows == 16;
}

/* Stores 16 bytes at dst: a non-temporal store when nt (dst then 16-byte aligned). */
static inline void put16(char *dst, const void *v, bool nt)
{
#if defined(__SSE2__)
    if (nt) {
        __m128i x;
        memcpy(&x, v, sizeof x);
        _mm_stream_si128((__m128i *)(void *)dst, x);
        return;
    }
#endif
    (void)nt;
    memcpy(dst, v, 16);
}

/* A tile's scaling (Plan.nscale): its values, read once per tile (copy_tile). */
typedef struct TScale {
    int n;
    bool div[TSCALE_MAX], second[TSCALE_MAX];
    float v[TSCALE_MAX];
} TScale;

typedef float F32x8v __attribute__((vector_size(32)));

/* f (a float, or eight: F32x8v, the scalar operand then taken for each) scaled by sc's steps in
 * order, each operation with its operands in the kernel's order. */
#define SCALE_CHAIN(f, sc)                                                                         \
    for (int q = 0; q < (sc)->n; q++) {                                                            \
        float c = (sc)->v[q];                                                                      \
        if ((sc)->div[q])                                                                          \
            f = (sc)->second[q] ? c / f : f / c;                                                   \
        else                                                                                       \
            f = (sc)->second[q] ? c * f : f * c;                                                   \
    }

/* x scaled by sc (SCALE_CHAIN). */
static inline __attribute__((always_inline)) void scale_8(U32x8v *x, const TScale *sc)
{
    F32x8v f;
    memcpy(&f, x, sizeof f);
    SCALE_CHAIN(f, sc);
    memcpy(x, &f, sizeof f);
}

/* The same for cnt values at d, in place (a tile's edges, stored by store_transposed). */
static void scale_run(char *d, int cnt, const TScale *sc)
{
    for (int i = 0; i < cnt; i++) {
        float f;
        memcpy(&f, d + 4 * i, 4);
        SCALE_CHAIN(f, sc);
        memcpy(d + 4 * i, &f, 4);
    }
}

/* Two 8 x 8 blocks of 4-byte elements, x[k * sld + j] for k < 16, j < 8, transposed: for each
 * j, the sixteen values x[k * sld + j] in order of k to dst + j * ld (64 bytes), every store
 * non-temporal when nt, each value scaled by sc first when sc (a float32 tile). Eight vector
 * loads and transpose_8x8 per block. */
CPU_CLONES static void transpose_16x8(char *dst, const uint32_t *x, int64_t sld, int64_t ld, bool nt,
                                      const TScale *sc)
{
    U32x8v o[2][8];
    for (int h = 0; h < 2; h++) {
        U32x8v v[8];
        _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
            memcpy(&v[k], x + (8 * h + k) * sld, sizeof v[k]);
        transpose_8x8(v, o[h]);
        if (sc)
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
                scale_8(&o[h][k], sc);
    }
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {
        char *d = dst + j * ld * 4;
        const char *a = (const char *)&o[0][j], *b = (const char *)&o[1][j];
        put16(d, a, nt);
        put16(d + 16, a + 16, nt);
        put16(d + 32, b, nt);
        put16(d + 48, b + 16, nt);
    }
}
#undef SHUF

/* A whole tile of a tcopy plan (tile_units): its chunk of input for sixteen consecutive indices
 * of lk, by blocks of 16 x 8 transposed in registers. Each output row gets sixteen values, 64
 * bytes, at a time, streamed past the caches when the plan is large (Plan.tstream) and the rows
 * lie on whole lines: the destination is not read first, nor does it evict what the next
 * kernels read. Only the way the bytes move changes. */
static bool copy_tile(const Plan *p, Thread *t, int64_t u)
{
    const Step *s = &p->steps[p->tsrc];
    int64_t c0, i0;
    int nc, n;
    unit_pos(p, t, u, &c0, &nc);
    chunk_at(p, c0, &i0, &n);
    TScale scale, *sc = NULL;
    if (p->nscale) {
        /* the one-value steps hold over the tile (plan_tscale): evaluated once, narrow */
        t->narrow = true;
        bool ok = eval(p, t, p->ninv, p->nsteps, i0, n);
        t->narrow = false;
        if (!ok)
            return false;
        sc = &scale;
        sc->n = p->nscale;
        for (int q = 0; q < p->nscale; q++) {
            sc->div[q] = p->scale[q].div;
            sc->second[q] = p->scale[q].second;
            memcpy(&sc->v[q], t->cur[p->scale[q].buf], 4);
        }
        t->scaled_tiles++;
    }
    const uint32_t *src = (const uint32_t *)p->k->bufs[s->in->buf] + load_origin(p, s, t, i0);
    char *dst = (char *)p->k->out + (out_base(p, t) + p->ostr[p->cl] * i0) * (int64_t)4;
    int64_t ld, sld;
    int j = 0;
    if (p->ostr[p->cl] == 1) {
        /* rows of the output along lk, sixteen values of cl at a time from sixteen input rows */
        ld = p->ostr[p->lk];
        sld = s->strides[p->cl];
        bool nt = p->tstream && (uintptr_t)dst % 64 == 0 && ld % 16 == 0;
        if (ld <= n) {
            /* the tile's rows one run (channels-last from NCHW): its input rows are as many
             * streams (256 planes, a line each per tile), more than the hardware prefetchers
             * follow, so each is fetched four tiles ahead while that lies in the plane */
            bool ahead = t->idx[p->lk] + 16 + 64 <= p->ext[p->lk];
            for (; j + 16 <= n; j += 16) {
                for (int k = 0; k < 16 && ahead; k++)
                    __builtin_prefetch(src + (j + k) * sld + 64);
                for (int h = 0; h < 16; h += 8)
                    transpose_16x8(dst + (h * ld + j) * 4, src + j * sld + h, sld, ld, nt, sc);
            }
        } else {
            /* rows far apart (NCHW from channels-last): eight at a time, each written whole:
             * sixteen side by side lose the write-combining. Chunk by chunk (Plan.tchunk), the
             * next tile reads the next line of each of these input rows: fetched now, as the
             * prefetchers do not follow rows a stride apart */
            bool ahead = p->tchunk && t->idx[p->lk] + 32 <= p->ext[p->lk];
            for (int h = 0; h < 16; h += 8)
                for (j = 0; j + 16 <= n; j += 16) {
                    for (int k = 0; k < 16 && ahead && h == 0; k++)
                        __builtin_prefetch(src + (j + k) * sld + 16);
                    transpose_16x8(dst + (h * ld + j) * 4, src + j * sld + h, sld, ld, nt, sc);
                }
        }
        if (j < n)
            store_transposed(dst + (int64_t)j * 4, src + j * sld, n - j, 16, sld, ld, 4);
        for (int h = 0; h < 16 && j < n && sc; h++)
            scale_run(dst + (h * ld + j) * 4, n - j, sc);
    } else {
        /* rows of the output along cl, sixteen values of lk each from sixteen input rows */
        ld = p->ostr[p->cl];
        sld = s->strides[p->lk];
        bool nt = p->tstream && (uintptr_t)dst % 64 == 0 && ld % 16 == 0;
        for (; j + 8 <= n; j += 8)
            transpose_16x8(dst + j * ld * 4, src + j, sld, ld, nt, sc);
        if (j < n)
            store_transposed(dst + j * ld * 4, src + j, 16, n - j, sld, ld, 4);
        for (int r = j; r < n && sc; r++)
            scale_run(dst + r * ld * 4, 16, sc);
    }
    return true;
}

static long tload_blocks;       /* fc_cpu_tload_blocks */
static long copy_tiles;         /* fc_cpu_copy_tiles */

long fc_cpu_copy_tiles(void) { return __atomic_load_n(&copy_tiles, __ATOMIC_RELAXED); }
static long scaled_tiles;       /* fc_cpu_scaled_tiles */

long fc_cpu_scaled_tiles(void) { return __atomic_load_n(&scaled_tiles, __ATOMIC_RELAXED); }
static long stream_runs;        /* fc_cpu_stream_runs */
static long chunk_copies;       /* fc_cpu_chunk_copies */
static long one_term_passes;    /* fc_cpu_one_term_passes */
static long pre_copies;         /* fc_cpu_pre_copies */

long fc_cpu_pre_copies(void) { return __atomic_load_n(&pre_copies, __ATOMIC_RELAXED); }

long fc_cpu_one_term_passes(void) { return __atomic_load_n(&one_term_passes, __ATOMIC_RELAXED); }

long fc_cpu_chunk_copies(void) { return __atomic_load_n(&chunk_copies, __ATOMIC_RELAXED); }

long fc_cpu_stream_runs(void) { return __atomic_load_n(&stream_runs, __ATOMIC_RELAXED); }

long fc_cpu_tload_blocks(void) { return __atomic_load_n(&tload_blocks, __ATOMIC_RELAXED); }

/* Plan.tload's load for the current unit, at chunk positions [i0, i0 + m): the units of its
 * tile are eight rows along lk at a time, whose chunks are columns of one block of memory (an
 * element apart along lk, a stride apart along cl); the block is transposed into t->tlb once
 * for the eight (store_transposed: 8 x 8 in registers, where each element would be a load of a
 * line of its own) and the unit reads its row there. False (the load goes element by element)
 * for the rows past the tile's last eight. The values are the loaded ones. */
static bool load_block(const Plan *p, const Step *s, Thread *t, int64_t i0, int m)
{
    int64_t b = t->trow & ~(int64_t)7;
    if (b + 8 > t->trows)
        return false;
    int64_t u0 = t->unit - (t->trow - b);
    if (!t->tlb_ok || t->tlb_u0 != u0 || t->tlb_i0 != i0 || t->tlb_n != m) {
        int64_t off = load_origin(p, s, t, i0) - (t->trow - b) * s->strides[p->lk];
        const char *src = (const char *)p->k->bufs[s->in->buf] + off * 4;
        store_transposed(t->tlb, src, m, 8, s->strides[p->cl], m, 4);
        t->tlb_ok = true;
        t->tlb_u0 = u0;
        t->tlb_i0 = i0;
        t->tlb_n = m;
        t->tload_blocks++;
    }
    t->cur[s->d] = t->tlb + (size_t)(t->trow - b) * (size_t)m * 4;
    return true;
}

/* A long reduction also looks at the host's interrupt flag between steps, not only between
 * tasks (a task may be one output point of a huge reduction). */
static bool interrupted(const Plan *p, Thread *t, int64_t s)
{
    if ((s & 255) != 255 || !p->k->interrupt || !*p->k->interrupt)
        return false;
    fail(t, FC_ERR_INTERRUPT, "interrupted");
    return true;
}

/* Horizontal: folds reduction steps [s0, s1) (reduced loops x chunks) of the unit whose kept
 * loops are at t->idx into lanes (or one arg accumulator). */
static bool hor_steps(const Plan *p, Thread *t, int64_t s0, int64_t s1, void *acc, int64_t *aidx)
{
    const CpuReducer *r = &p->r;
    for (int64_t s = s0; s < s1; s++) {
        int64_t i0;
        int n;
        decode(p, t, p->rl, p->nrl, s / p->nchunk);
        chunk_at(p, s % p->nchunk, &i0, &n);
        if (interrupted(p, t, s) || !eval_chunk(p, t, i0, n))
            return false;
        if (r->arg)
            r->harg(acc, aidx, t->cur[p->res], n, i0);
        else
            r->hfold(acc, t->cur[p->res], n);
    }
    return true;
}

/* Vertical: folds reduction steps [s0, s1) into the accumulators of chunks [c0, c0 + nc), one
 * FC_CHUNK-wide slice of acc/aidx per chunk; each step visits the chunks in turn, so a row of
 * the input is read in order. */
static bool vert_steps(const Plan *p, Thread *t, int64_t s0, int64_t s1, int64_t c0, int nc, void *acc,
                       int64_t *aidx)
{
    const CpuReducer *r = &p->r;
    for (int64_t s = s0; s < s1; s++) {
        if (interrupted(p, t, s))
            return false;
        decode(p, t, p->rl, p->nrl, s);
        int64_t index = p->argloop >= 0 ? t->idx[p->argloop] : 0;
        for (int j = 0; j < nc; j++) {
            int64_t i0;
            int n;
            chunk_at(p, c0 + j, &i0, &n);
            if (!eval_chunk(p, t, i0, n))
                return false;
            void *a = (char *)acc + (size_t)j * CHUNK_BYTES;
            if (r->arg)
                r->varg(a, aidx + (size_t)j * FC_CHUNK, t->cur[p->res], n, index);
            else
                r->vfold(a, t->cur[p->res], n);
        }
    }
    return true;
}

/* Writes a horizontal unit's result: lanes folded in order, converted, stored at off. */
static void finish_hor(const Plan *p, void *acc, int64_t *aidx, int64_t off)
{
    const CpuReducer *r = &p->r;
    uint64_t v;
    if (r->arg) {
        r->fin(&v, aidx, 1);
    } else {
        for (int j = 1; j < CPU_LANES; j++)
            r->comb(acc, (char *)acc + j * 8, 1);
        r->fin(&v, acc, 1);
    }
    memcpy((char *)p->k->out + off * (int64_t)p->out_es, &v, p->out_es);
}

/* Writes a vertical unit's results (chunks [c0, c0 + nc)) from acc/aidx; base is the output
 * offset of its kept loops. */
static void finish_vert(const Plan *p, Thread *t, const void *acc, const int64_t *aidx, int64_t base, int64_t c0,
                        int nc)
{
    for (int j = 0; j < nc; j++) {
        int64_t i0;
        int n;
        chunk_at(p, c0 + j, &i0, &n);
        const void *src = p->r.arg ? (const void *)(aidx + (size_t)j * FC_CHUNK)
                                   : (const void *)((const char *)acc + (size_t)j * CHUNK_BYTES);
        p->r.fin(t->tmp, src, n);
        store_chunk(p, base + p->ostr[p->cl] * i0, t->tmp, n);
    }
}

/* Accumulators of a horizontal unit: lanes, or one (value, index) for an arg reduction. */
static int hor_accs(const Plan *p) { return p->r.arg ? 1 : CPU_LANES; }

static bool reduce_unit(const Plan *p, Thread *t, int64_t u)
{
    if (p->hor) {
        decode(p, t, p->kl, p->nkl, u);
        int64_t off = out_base(p, t);
        fc_cpu_reducer_reset(&p->r, t->acc, t->aidx, hor_accs(p));
        if (!hor_steps(p, t, 0, p->nred, t->acc, t->aidx))
            return false;
        finish_hor(p, t->acc, t->aidx, off);
    } else {
        int64_t c0;
        int nc;
        unit_pos(p, t, u, &c0, &nc);
        int64_t base = out_base(p, t);
        fc_cpu_reducer_reset(&p->r, t->acc, t->aidx, nc * FC_CHUNK);
        if (!vert_steps(p, t, 0, p->nred, c0, nc, t->acc, t->aidx))
            return false;
        finish_vert(p, t, t->acc, t->aidx, base, c0, nc);
    }
    return true;
}

/* ---- tasks ---- */

/* Stores the chunk [i0, i0 + n) of each term of the point at t->idx (Plan.term), in the order
 * of the terms: the first evaluated as any point, the others leaving out what holds along the
 * term level (tonly). base: the output offset of the kept loops (the term level has stride 0). */
static bool store_terms(const Plan *p, Thread *t, int64_t base, int64_t i0, int n, bool gskip)
{
    int T = p->term, kpos;
    bool ok = true;
    t->tgen++;
    for (int64_t e = 0; e < p->ext[T] && ok; e++) {
        t->idx[T] = e;
        /* A bound of the level false at e (Plan.gb): e and the terms after it are zeros, taken
         * as gate_run takes a run, term e - 1 (evaluated, at the same indices outside the
         * level) standing for the point that found it false; none evaluated. */
        int64_t r = gskip && e > 0 ? gate_run(p, t, p->nkl - 1, p->nkl, &kpos) : 0;
        if (gskip && e > 0 && kpos < p->nkl) {
            t->gate_points += r + 1;
            t->idx[T] = p->ext[T] - 1;
            break;
        }
        t->tonly = e > 0;
        ok = store_chunk_at(p, t, base, i0, n);
    }
    t->tonly = false;
    return ok;
}

/* task_owner's inner points of owner point og with a term level (Plan.term, the last inner
 * loop): per point, each chunk of [lo, hi) for all terms (store_terms). The scatter is flat and
 * moves along cl, so the chunks write distinct elements and each element still gets its
 * contributions in the order of the loop nest. */
static bool owner_terms(const Plan *p, Thread *t, int64_t og, int64_t lo, int64_t hi, bool gskip)
{
    int64_t ext = p->ext[p->cl], nt = p->ext[p->term];
    for (int64_t u = 0; u < p->inner; u += nt, next_point(p, t, p->kl + p->nkown, p->nkl - p->nkown - 1)) {
        t->idx[p->term] = 0;
        int64_t base = out_base(p, t);
        for (int64_t i0 = lo; i0 < hi; i0 += FC_CHUNK) {
            int n = hi - i0 < FC_CHUNK ? (int)(hi - i0) : FC_CHUNK;
            if (!store_terms(p, t, base, i0, n, gskip)) {
                t->err_task = (og * p->inner + u + t->idx[p->term]) * ext + i0;
                return false;
            }
        }
        u += skip_zeros(p, t, gskip, p->nkown, p->nkl - 1, nt);
    }
    return true;
}

static bool task_units(void *arg, int tid, int64_t task)
{
    Run *run = arg;
    const Plan *p = run->p;
    Thread *t = run->th[tid];
    int64_t u0 = task * run->units_per_task;
    int64_t u1 = u0 + run->units_per_task < p->nunits ? u0 + run->units_per_task : p->nunits;
    bool ok = true;
    int64_t nt = p->term >= 0 ? p->ext[p->term] : 0;
    for (int64_t u = u0; u < u1 && ok; u++) {
        if (tile_units(p, u, u1)) {
            ok = copy_tile(p, t, u);
            t->copy_tiles++;
            u += 15;
        } else if (eight_units(p, u, u1)) {
            copy_units(p, t, u);
            u += 7;
        } else if (nt && u % nt == 0 && u + nt <= u1) {    /* a point's terms (one chunk: plan_loops) */
            int64_t c0, i0;
            int nc, n;
            unit_pos(p, t, u, &c0, &nc);
            chunk_at(p, c0, &i0, &n);
            ok = store_terms(p, t, out_base(p, t), i0, n, run->gskip);
            int kpos;
            int64_t r = ok && run->gskip && t->gate_skip ? gate_run(p, t, 0, p->nkl - 1, &kpos) : 0;
            u += nt - 1 + r * nt;
            t->gate_points += r * nt;
        } else {
            ok = p->reduce ? reduce_unit(p, t, u) : store_unit(p, t, u);
            if (ok && run->gskip && t->gate_skip && (u + 1) % p->ngroup == 0) {
                int kpos;       /* units are the points, each its groups of chunks */
                int64_t r = gate_run(p, t, 0, p->nkl, &kpos);
                u += r * p->ngroup;
                t->gate_points += r;
            }
        }
    }
    flush_run(t);
#if defined(__SSE2__)
    if (p->stream || p->tstream)
        _mm_sfence();       /* the streamed stores are seen before the task is reported done */
#endif
    if (!ok)
        t->err_task = task;
    return ok;
}

/* A store split over owner loops (Plan.own): a part is a point of the kept owner loops and, when
 * cl is an owner loop, a slice of run->slice positions along it (else all of them); a task, a
 * range of parts. For each owner point, a task runs the inner points in order, each over its
 * positions of cl in pieces of up to FC_CHUNK, so that what does not vary along cl is computed
 * once per inner point. An element's value does not depend on the piece it is computed in (the
 * ops are elementwise, the same bits at any position), nor its order of contributions on the
 * parts. A failure is recorded by its place in the order of one task running all parts, so that
 * the one reported does not depend on how the parts were grouped. */
static bool task_owner(void *arg, int tid, int64_t task)
{
    Run *run = arg;
    const Plan *p = run->p;
    Thread *t = run->th[tid];
    int64_t ext = p->ext[p->cl], ns = run->nslice, nparts = p->outer * ns;
    int64_t o = task * run->units_per_task;
    int64_t o1 = o + run->units_per_task < nparts ? o + run->units_per_task : nparts;
    bool ok = true;
    while (o < o1 && ok) {
        int64_t og = o / ns, end = (og + 1) * ns < o1 ? (og + 1) * ns : o1;
        int64_t lo = (o % ns) * run->slice, hi = end - og * ns == ns ? ext : (end % ns) * run->slice;
        if (hi > ext)
            hi = ext;
        decode(p, t, p->kl, p->nkl, og * p->inner);
        if (p->term >= 0) {
            ok = owner_terms(p, t, og, lo, hi, run->gskip);
            o = end;
            continue;
        }
        for (int64_t u = 0; u < p->inner && ok; u++, next_point(p, t, p->kl + p->nkown, p->nkl - p->nkown)) {
            int64_t base = out_base(p, t);
            for (int64_t i0 = lo; i0 < hi && ok; i0 += FC_CHUNK) {
                int n = hi - i0 < FC_CHUNK ? (int)(hi - i0) : FC_CHUNK;
                ok = store_chunk_at(p, t, base, i0, n);
                if (!ok)
                    t->err_task = (og * p->inner + u) * ext + i0;
            }
            if (ok)
                u += skip_zeros(p, t, run->gskip, p->nkown, p->nkl, 1);
        }
        o = end;
    }
    flush_run(t);
    return ok;
}

/* A band split's point at t->idx (kl's first d loops): its share of the work, by which
 * band_setup cuts the bands. Its inner points (the other kept loops) less the zeros past a false
 * bound (Plan.gb) where they are skipped by runs (gskip): a bound of a band loop that is false
 * here leaves none, one of an inner loop the fraction of that loop it holds true (at this
 * point's band indices, a bound that depends on other inner loops counted as all true); each
 * point cl's chunks; plus one for the point's own walk. Only the balance of the bands depends
 * on it, never a result. */
static int64_t point_work(const Plan *p, Thread *t, int d, bool gskip)
{
    int64_t ext = p->ext[p->cl];
    double live = (double)(p->inner / p->band_pts) * (double)((ext + FC_CHUNK - 1) / FC_CHUNK);
    uint64_t band = 0;
    for (int j = 0; j < d; j++)
        band |= (uint64_t)1 << p->kl[j];
    for (int g = 0; gskip && g < p->ngb && live > 0; g++) {
        const struct GateBound *b = &p->gb[g];
        const Step *s = &p->steps[b->step];
        int l = p->kl[b->kpos];
        if (s->deps & ~(band | (uint64_t)1 << l))
            continue;
        int64_t keep = t->idx[l], lo = b->kpos < d ? keep : 0, hi = b->kpos < d ? keep + 1 : p->ext[l], on = 0;
        for (int64_t v = lo; v < hi; v++) {
            t->idx[l] = v;
            on += bound_holds(p, t, s);
        }
        t->idx[l] = keep;
        live *= (double)on / (double)(hi - lo);
    }
    return 1 + (int64_t)live;
}

/* A band split's rows (Plan.band), task number `task` of them: the points of kl's first band_d
 * loops in ranges, each evaluated narrow up to the last scatter index of the rows (what holds
 * one value per chunk: the indices, from their tables or memo chains) with the other loops at
 * 0, its row (the wrapped indices times their strides over the unit) into run->key. By the
 * threads th[nth, 2 nth), whose memo state the parts then do not see. */
static bool band_keys_task(void *arg, int tid, int64_t task)
{
    Run *run = arg;
    const Plan *p = run->p;
    const FcKernel *k = p->k;
    Thread *t = run->th[run->nth + tid];
    int64_t per = (p->band_pts + 4 * run->nth - 1) / (4 * run->nth);
    int64_t q0 = task * per, q1 = q0 + per < p->band_pts ? q0 + per : p->band_pts;
    int64_t i0;
    int n;
    chunk_at(p, 0, &i0, &n);
    for (int64_t q = q0; q < q1; q++) {
        decode(p, t, p->kl, p->band_d, q);
        t->narrow = true;
        bool ok = eval(p, t, p->ninv, p->band_end, i0, n);
        t->narrow = false;
        if (!ok)
            return false;
        int64_t r = 0;
        for (int g = 0; g < k->nscatter; g++) {
            if (!(p->band >> g & 1))
                continue;
            int64_t ix = *(const int64_t *)t->cur[p->sphys[g]], ext = k->scatter[g].extent;
            ix += ext & (ix >> 63);
            if (ix < 0 || ix >= ext)
                return false;   /* out of range: the store reports it, in the nest's order */
            r += ix * (k->scatter[g].stride / p->band_unit);
        }
        run->key[q] = (int32_t)r;
        run->work[q] = point_work(p, t, p->band_d, run->gskip);
    }
    return true;
}

/* Part `task` of a band split (Plan.band): the points of its rows' band in order, each with the
 * other kept loops inside in their order and cl's chunks inside those (a point's terms together,
 * as in owner_terms). Every element's row is fixed, so it gets all its contributions here, in
 * the nest's order. A failure is recorded at its place in the whole nest's order. */
static bool task_band(void *arg, int tid, int64_t task)
{
    Run *run = arg;
    const Plan *p = run->p;
    Thread *t = run->th[tid];
    int d = p->band_d;
    int64_t ext = p->ext[p->cl], suf = p->inner / p->band_pts;
    int64_t nt = p->term >= 0 ? p->ext[p->term] : 1;
    int nin = p->nkl - d - (p->term >= 0);
    bool ok = true;
    for (int64_t q = run->first[task]; q < run->first[task + 1] && ok; q++) {
        int64_t pt = run->pts[q];
        decode(p, t, p->kl, d, pt);
        int kpos;               /* a bound of a band loop false here: all of the point's terms are zeros */
        if (run->gskip && (gate_run(p, t, 0, d, &kpos), kpos < d)) {
            t->gate_points += suf;
            continue;
        }
        for (int64_t u = 0; u < suf && ok; u += nt, next_point(p, t, p->kl + d, nin)) {
            if (p->term >= 0)
                t->idx[p->term] = 0;
            int64_t base = out_base(p, t);
            for (int64_t i0 = 0; i0 < ext && ok; i0 += FC_CHUNK) {
                int n = ext - i0 < FC_CHUNK ? (int)(ext - i0) : FC_CHUNK;
                ok = p->term >= 0 ? store_terms(p, t, base, i0, n, run->gskip) : store_chunk_at(p, t, base, i0, n);
                if (!ok)
                    t->err_task = (pt * suf + u + (p->term >= 0 ? t->idx[p->term] : 0)) * ext + i0;
            }
            if (ok)             /* as task_owner and owner_terms skip them */
                u += skip_zeros(p, t, run->gskip, d, d + nin, nt);
        }
    }
    flush_run(t);
    return ok;
}

/* The bands of a band split (Plan.band) for nth threads: every point's row and work
 * (band_keys_task, on threads th[nth, 2 nth)), then rows cut into 4 nth bands of about as much
 * work each (point_work: ADAPTIVE roi_align's rows past a box's sampling grid are cheap), and
 * the points of each band listed in order. Which row goes to which band changes no result.
 * False when a row could not be read (the split is then not taken) or on out-of-memory. */
static bool band_setup(CpuBackend *be, Run *run, int nth)
{
    const Plan *p = run->p;
    int64_t np = p->band_pts, nk = p->band_keys, nb = 4 * (int64_t)nth;
    run->nth = nth;
    run->key = mem_malloc((size_t)np * sizeof *run->key);
    run->work = mem_malloc((size_t)np * sizeof *run->work);
    run->pts = mem_malloc((size_t)np * sizeof *run->pts);
    run->first = mem_calloc((size_t)nb + 1, sizeof *run->first);
    int64_t *cnt = mem_calloc((size_t)(nk > nb ? nk : nb) + 1, sizeof *cnt);
    int64_t *wrow = mem_calloc((size_t)nk, sizeof *wrow);
    int32_t *bof = mem_malloc((size_t)nk * sizeof *bof);
    bool ok = run->key && run->work && run->pts && run->first && cnt && wrow && bof;
    int64_t per = (np + 4 * nth - 1) / (4 * nth);
    if (ok)
        ok = fc_cpu_parallel_for(be, nth, (np + per - 1) / per, band_keys_task, run, p->k->interrupt);
    int64_t all = 0;
    if (ok) {
        for (int64_t q = 0; q < np; q++) {
            if (run->key[q] < 0 || run->key[q] >= nk) {
                ok = false;
                break;
            }
            cnt[run->key[q]]++;
            wrow[run->key[q]] += run->work[q];
            all += run->work[q];
        }
    }
    if (ok) {
        int64_t acc = 0, b = 0;
        for (int64_t r = 0; r < nk; r++) {
            bof[r] = (int32_t)b;
            acc += wrow[r];
            run->first[b + 1] += cnt[r];
            while (b < nb - 1 && acc * nb >= (b + 1) * all)
                b++;
        }
        for (b = 0; b < nb; b++)
            run->first[b + 1] += run->first[b];
        int64_t *at = cnt;      /* reused: the next place of each band */
        for (b = 0; b < nb; b++)
            at[b] = run->first[b];
        for (int64_t q = 0; q < np; q++)
            run->pts[at[bof[run->key[q]]]++] = (int32_t)q;
    }
    mem_free(cnt);
    mem_free(wrow);
    mem_free(bof);
    return ok;
}

static void *partial_acc(const Run *run, int64_t unit, int64_t block)
{
    return run->partials + (size_t)(unit * run->nblocks + block) * run->partial_size;
}

static int64_t *partial_idx(const Run *run, void *acc)
{
    const Plan *p = run->p;
    return (int64_t *)(void *)((char *)acc + (p->hor ? CPU_LANES * 8 : (size_t)p->group * CHUNK_BYTES));
}

/* Split reduction: task = (unit, block), reduced in the thread's own accumulators (partials of
 * neighbouring blocks share cache lines) and then copied into that block's partial. */
static bool task_block(void *arg, int tid, int64_t task)
{
    Run *run = arg;
    const Plan *p = run->p;
    Thread *t = run->th[tid];
    int64_t u = task / run->nblocks, b = task % run->nblocks;
    int64_t s0 = b * run->steps_per_block;
    int64_t s1 = s0 + run->steps_per_block < p->nred ? s0 + run->steps_per_block : p->nred;
    int n;
    bool ok;
    if (p->hor) {
        decode(p, t, p->kl, p->nkl, u);
        n = hor_accs(p);
        fc_cpu_reducer_reset(&p->r, t->acc, t->aidx, n);
        ok = hor_steps(p, t, s0, s1, t->acc, t->aidx);
    } else {
        int64_t c0;
        int nc;
        unit_pos(p, t, u, &c0, &nc);
        n = nc * FC_CHUNK;
        fc_cpu_reducer_reset(&p->r, t->acc, t->aidx, n);
        ok = vert_steps(p, t, s0, s1, c0, nc, t->acc, t->aidx);
    }
    if (!ok) {
        t->err_task = task;
        return false;
    }
    void *acc = partial_acc(run, u, b);
    memcpy(acc, t->acc, (size_t)n * 8);
    if (p->r.arg)
        memcpy(partial_idx(run, acc), t->aidx, (size_t)n * 8);
    return true;
}

/* After a split reduction: each unit's partials combined in block order, then written. */
static void combine_blocks(const Run *run, Thread *t)
{
    const Plan *p = run->p;
    const CpuReducer *r = &p->r;
    for (int64_t u = 0; u < p->nunits; u++) {
        int64_t c0 = 0, base;
        int nc = 0, n;
        if (p->hor) {
            decode(p, t, p->kl, p->nkl, u);
            n = hor_accs(p);
        } else {
            unit_pos(p, t, u, &c0, &nc);
            n = nc * FC_CHUNK;
        }
        base = out_base(p, t);
        void *acc = partial_acc(run, u, 0);
        int64_t *aidx = partial_idx(run, acc);
        for (int64_t b = 1; b < run->nblocks; b++) {
            void *o = partial_acc(run, u, b);
            if (r->arg)
                r->argcomb(acc, aidx, o, partial_idx(run, o), n);
            else
                r->comb(acc, o, n);
        }
        if (p->hor)
            finish_hor(p, acc, aidx, base);
        else
            finish_vert(p, t, acc, aidx, base, c0, nc);
    }
}

/* ---- running ---- */

void cpu_threads_free(Thread **th, int n)
{
    if (!th)
        return;
    for (int i = 0; i < n; i++)
        mem_free(th[i]);
    mem_free(th);
}

/* A thread's block begins with the Thread and its buffer pointers (buf, cur), each on whole
 * cache lines (THREAD_STRUCT bytes, then the pointers); thread_head: the bytes of both, after
 * which its buffers lie. */
#define THREAD_STRUCT ((sizeof(Thread) + 63) & ~(size_t)63)
static size_t thread_head(const Plan *p)
{
    return THREAD_STRUCT + (((size_t)(p->nphys + 1) * 2 * sizeof(void *) + 63) & ~(size_t)63);
}

/* The bytes of one thread's block: the Thread, its buffers and its scratch. */
static size_t thread_bytes(const Plan *p)
{
    int nlocal = p->nphys - p->nshared;
    size_t memo = (((size_t)p->nmemo * ((size_t)p->L + 4) + p->nstamps + p->nvals) * 8 + 63) & ~(size_t)63;
    size_t cb = p->cbytes;      /* buffers, offs, tmp, racc, xbuf; acc and aidx by FC_CHUNK */
    size_t tlb = p->tload >= 0 ? 8 * (size_t)FC_CHUNK * 4 : 0;
    size_t tst = p->term >= 0 ? ((size_t)p->nsteps + (size_t)p->nplist) * 8 : 0;
    return thread_head(p) + (size_t)(nlocal + 2 + p->nracc + 3) * cb + 2 * (size_t)p->group * CHUNK_BYTES + memo + tlb +
           tst;
}

/* Lays a thread out in block m (thread_bytes long) for a run: its state as new. */
static Thread *thread_init(const Plan *p, char *m)
{
    size_t cb = p->cbytes;
    Thread *t = (Thread *)(void *)m;
    memset(t, 0, sizeof *t);
    t->buf = (void **)(void *)(m + THREAD_STRUCT);
    t->cur = (const void **)(t->buf + p->nphys + 1);
    char *b = m + thread_head(p);
    for (int j = 0; j < p->nshared; j++)
        t->buf[j] = p->shared + (size_t)j * cb;
    for (int j = p->nshared; j < p->nphys; j++, b += cb)
        t->buf[j] = b;
    t->buf[p->nphys] = NULL;
    for (int j = 0; j <= p->nphys; j++)
        t->cur[j] = t->buf[j];
    t->offs = (int64_t *)(void *)b;
    t->tmp = b + cb;
    t->racc = b + 2 * cb;
    t->xbuf = t->racc + (size_t)p->nracc * cb;
    t->acc = t->xbuf + 3 * cb;
    t->aidx = (int64_t *)(void *)((char *)t->acc + (size_t)p->group * CHUNK_BYTES);
    t->mkey = (int64_t *)(void *)((char *)t->aidx + (size_t)p->group * CHUNK_BYTES);
    t->mgen = (uint64_t *)(t->mkey + (size_t)p->nmemo * (size_t)p->L);
    t->ment = (int64_t *)(t->mgen + p->nmemo);
    t->mcur = t->ment + p->nmemo;
    t->mcg = (uint64_t *)(t->mcur + p->nmemo);
    t->stamps = t->mcg + p->nmemo;
    t->tvals = (char *)(t->stamps + p->nstamps);
    t->tlb = p->tload >= 0 ? t->tvals + (size_t)p->nvals * 8 : NULL;
    if (p->term >= 0) {
        t->tstamp = (uint64_t *)(void *)(t->tvals + (size_t)p->nvals * 8 + (p->tload >= 0 ? 8 * (size_t)FC_CHUNK * 4 : 0));
        memset(t->tstamp, 0, (size_t)p->nsteps * 8);
        t->tent = (int64_t *)(t->tstamp + p->nsteps);
    }
    memset(t->mgen, 0, ((size_t)p->nmemo * 4 + p->nstamps) * 8);
    t->err_task = -1;
    return t;
}

/* n threads for a run of p: the plan's own (kept from its last run, or made now: a plan run
 * again reuses their memory), each laid out as new. NULL on out-of-memory. */
static Thread **plan_threads(Plan *p, int n)
{
    if (p->nth < n) {
        cpu_threads_free(p->th, p->nth);
        p->nth = 0;
        p->th = mem_calloc((size_t)n, sizeof *p->th);
        if (!p->th)
            return NULL;
        size_t size = thread_bytes(p);
        for (; p->nth < n; p->nth++) {
            p->th[p->nth] = fc_cpu_aligned_alloc(size);
            if (!p->th[p->nth])
                return NULL;
        }
    }
    for (int i = 0; i < n; i++)
        thread_init(p, (char *)p->th[i]);
    return p->th;
}

/* Runs plan p with k's buffers, output and interrupt: k is the kernel p was planned from, or one
 * that differs from it in those only. */
static FcStatus run_plan(CpuBackend *be, Plan *p, const FcKernel *k, FcError *err)
{
    p->k = k;
    if (p->idle)
        return FC_OK;
    if (p->nred == 0 && (p->r.arg || k->reduce == FC_OP_AMAX || k->reduce == FC_OP_AMIN))
        return cpu_errorf(err, FC_ERR_RUNTIME, "%s(): Expected reduction dim to have non-zero size.",
                      fc_op_name(k->reduce));
    if (!k->out)
        return cpu_errorf(err, FC_ERR_VALUE, "cpu kernel: no output");
    FcStatus st = FC_OK;
    Thread **th = NULL;
    int nth = 1;
    Run run = {.p = p};

    /* Threads and tasks. Nothing here that changes a result depends on the thread count. A
     * scattered store runs on one thread, units claimed in order, duplicates landing in order;
     * unless it is split over owner loops (and reads nothing it writes: a part could read what
     * another wrote), whose parts are spread. */
    bool own = p->own;
    for (int b = 0; b < k->nbufs && own; b++)
        own = k->bufs[b] != k->out;
    nth = p->work < SMALL_WORK || (p->scatter && !own) ? 1 : fc_cpu_clamp_threads(be, k->nthreads);
    int64_t per_unit = (p->total > p->nunits ? p->total : p->nunits) / p->nunits;
    int64_t ntasks;
    if (own) {
        /* Parts (see task_owner) in ranges of about TASK_WORK, four per thread at least; cut
         * chunks in one range per thread, so that each thread computes what does not vary
         * along cl once. */
        int64_t ext = p->ext[p->cl];
        run.nslice = 1;
        run.slice = ext;
        if (p->own_cl && p->outer < 4 * (int64_t)nth && ext >= 2 * FC_CHUNK) {
            /* Few owner points: cl's positions in one slice per thread, of whole vectors and at
             * least a chunk each: every slice walks all the other loops and computes what does
             * not vary along cl again, which narrower slices do not pay back. */
            int64_t w = (ext + nth - 1) / nth;
            if (w < FC_CHUNK)
                w = FC_CHUNK;
            run.slice = (w + 31) & ~(int64_t)31;
            run.nslice = (ext + run.slice - 1) / run.slice;
        }
        int64_t nparts = p->outer * run.nslice;
        if (run.nslice > 1) {
            ntasks = nparts;
        } else {
            int64_t per = p->work / nparts > 0 ? p->work / nparts : 1;
            int64_t ppt = TASK_WORK / per > 0 ? TASK_WORK / per : 1;
            ntasks = (nparts + ppt - 1) / ppt;
            if (ntasks < 4 * (int64_t)nth)
                ntasks = nparts < 4 * (int64_t)nth ? nparts : 4 * (int64_t)nth;
        }
        run.units_per_task = (nparts + ntasks - 1) / ntasks;
        ntasks = (nparts + run.units_per_task - 1) / run.units_per_task;
        if (p->band && nth > 1) {
            run.band = true;    /* unless its rows cannot be read: below */
            ntasks = 4 * (int64_t)nth;
        }
        if (nth > 1 && ntasks > 1)
            fc_owner_split_note();
    } else if (p->reduce && p->nunits < SPLIT_UNITS && p->nred > 1 && per_unit >= 2 * BLOCK_WORK) {
        run.split = true;
        run.partial_size = p->hor ? (CPU_LANES + 1) * 8 : 2 * (size_t)p->group * CHUNK_BYTES;
        int64_t step_elems = per_unit / p->nred > 0 ? per_unit / p->nred : 1;
        int64_t max_blocks = (int64_t)(PARTIAL_BYTES / run.partial_size) / p->nunits;
        if (max_blocks < 2)
            max_blocks = 2;
        run.steps_per_block = BLOCK_WORK / step_elems > 0 ? BLOCK_WORK / step_elems : 1;
        if ((p->nred + run.steps_per_block - 1) / run.steps_per_block > max_blocks)
            run.steps_per_block = (p->nred + max_blocks - 1) / max_blocks;
        run.nblocks = (p->nred + run.steps_per_block - 1) / run.steps_per_block;
        run.partials = mem_malloc((size_t)(p->nunits * run.nblocks) * run.partial_size);
        if (!run.partials) {
            st = cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
            goto done;
        }
        ntasks = p->nunits * run.nblocks;
    } else {
        /* Tasks of about TASK_WORK root points (consecutive units share cache lines), but at
         * least four per thread when there are units enough, as many units in each: a kernel
         * whose inner loops make each point costly (roi_align SMALL: 32 units) is spread too. */
        run.units_per_task = TASK_WORK / per_unit > 0 ? TASK_WORK / per_unit : 1;
        ntasks = (p->nunits + run.units_per_task - 1) / run.units_per_task;
        if (ntasks < 4 * (int64_t)nth)
            ntasks = p->nunits < 4 * (int64_t)nth ? p->nunits : 4 * (int64_t)nth;
        run.units_per_task = (p->nunits + ntasks - 1) / ntasks;
        ntasks = (p->nunits + run.units_per_task - 1) / run.units_per_task;
    }
    if (ntasks < nth)
        nth = (int)ntasks;
    th = plan_threads(p, run.band ? 2 * nth : nth);
    if (!th) {
        st = cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
        goto done;
    }
    run.th = th;
    /* Invariants, once, into the shared buffers (skipped when nothing is evaluated at all, so
     * that an empty reduction cannot fail on them). */
    if (p->ninv > 0 && p->total > 0 && !eval(p, th[0], 0, p->ninv, 0, p->cap)) {
        *err = th[0]->err;
        st = th[0]->status;
        goto done;
    }
    if (p->npfill > 0 && p->total > 0)
        pre_fill(p, th[0]);
    run.gskip = p->npfill > 0 && p->total > 0 && gate_bounded(p);
    for (int i = 1; i < (run.band ? 2 * nth : nth); i++)
        for (int j = 0; j < p->nshared; j++)
            th[i]->cur[j] = th[0]->cur[j];
    if (run.band && !band_setup(be, &run, nth)) {
        run.band = false;       /* the plain owner split: its parts report what failed */
        if (run.nslice == 1)
            nth = 1;
        ntasks = (p->outer * run.nslice + run.units_per_task - 1) / run.units_per_task;
    }
    if (run.band)
        __atomic_fetch_add(&band_splits, 1, __ATOMIC_RELAXED);
    bool ok = fc_cpu_parallel_for(be, nth, ntasks,
                                  run.band ? task_band : own ? task_owner : run.split ? task_block : task_units, &run,
                                  k->interrupt);
    /* The test counters: each run's threads start from zero (thread_init), so a run adds its
     * own counts, a plan run again as much as the first time (test_grad.c's counters_per_run). */
    if (p->mul_add)
        __atomic_fetch_add(&mul_add_runs, 1, __ATOMIC_RELAXED);
    if (p->mul_w_one)
        __atomic_fetch_add(&mul_w_one_runs, 1, __ATOMIC_RELAXED);
    if (p->muladd_one)
        __atomic_fetch_add(&muladd_one_runs, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < nth && p->gate_where; i++) {
        __atomic_fetch_add(&narrow_skips, th[i]->narrow_skips, __ATOMIC_RELAXED);
        __atomic_fetch_add(&gate_points, th[i]->gate_points, __ATOMIC_RELAXED);
        th[i]->narrow_skips = 0;
        th[i]->gate_points = 0;
    }
    for (int i = 0; i < nth && p->tload >= 0; i++)
        __atomic_fetch_add(&tload_blocks, th[i]->tload_blocks, __ATOMIC_RELAXED);
    for (int i = 0; i < nth && p->tcopy; i++) {
        __atomic_fetch_add(&copy_tiles, th[i]->copy_tiles, __ATOMIC_RELAXED);
        __atomic_fetch_add(&scaled_tiles, th[i]->scaled_tiles, __ATOMIC_RELAXED);
        th[i]->copy_tiles = 0;
        th[i]->scaled_tiles = 0;
    }
    for (int i = 0; i < nth && p->muladd_one; i++) {
        __atomic_fetch_add(&one_term_passes, th[i]->one_terms, __ATOMIC_RELAXED);
        th[i]->one_terms = 0;
    }
    for (int i = 0; i < nth && p->nplist > 0; i++) {
        __atomic_fetch_add(&pre_copies, th[i]->pre_copies, __ATOMIC_RELAXED);
        th[i]->pre_copies = 0;
    }
    for (int i = 0; i < nth && p->term >= 0; i++)
        __atomic_fetch_add(&term_skips, th[i]->term_skips, __ATOMIC_RELAXED);
    if (p->stream || p->tstream)
        __atomic_fetch_add(&stream_runs, 1, __ATOMIC_RELAXED);
    if (p->tchunk)
        __atomic_fetch_add(&chunk_copies, 1, __ATOMIC_RELAXED);
    Thread *bad = NULL;
    for (int i = 0; i < nth; i++)
        if (th[i]->err_task >= 0 && (!bad || th[i]->err_task < bad->err_task))
            bad = th[i];
    if (bad) {
        *err = bad->err;
        st = bad->status;
    } else if (!ok) {
        st = cpu_errorf(err, FC_ERR_INTERRUPT, "interrupted");
    } else if (run.split) {
        combine_blocks(&run, th[0]);
    }
done:
    mem_free(run.partials);
    mem_free(run.key);
    mem_free(run.work);
    mem_free(run.pts);
    mem_free(run.first);
    return st;
}

/* run_plan on a copy of a kept plan, on the stack: the executor reads the plan at every chunk,
 * and bench/fused.sh's chain ran 6% slower at one thread (0.0089 against 0.0084 s) reading it
 * from the heap. The threads of the run stay with the kept plan. */
static FcStatus run_kept_plan(CpuBackend *be, Plan *kept, const FcKernel *k, FcError *err)
{
    Plan p = *kept;
    FcStatus st = run_plan(be, &p, k, err);
    kept->th = p.th;
    kept->nth = p.nth;
    return st;
}

FcStatus fc_cpu_run_kernel(CpuBackend *be, const FcKernel *k, FcError *err)
{
    Plan p;
    FcStatus st = cpu_plan_kernel(&p, k, err);
    if (st == FC_OK)
        st = run_kept_plan(be, &p, k, err);
    cpu_plan_free(&p);
    return st;
}

FcStatus fc_cpu_prepare(CpuBackend *be, const FcKernel *k, void **handle, FcError *err)
{
    *handle = NULL;
    Plan *p = mem_malloc(sizeof *p);
    if (!p)
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    FcStatus st = cpu_plan_kernel(p, k, err);
    if (st != FC_OK) {
        cpu_plan_free(p);
        mem_free(p);
        return st;
    }
    *handle = p;
    return FC_OK;
}

FcStatus fc_cpu_run_prepared(CpuBackend *be, void *handle, const FcKernel *k, FcError *err)
{
    return run_kept_plan(be, handle, k, err);
}

void fc_cpu_release(void *handle)
{
    if (handle)
        cpu_plan_free(handle);
    mem_free(handle);
}
