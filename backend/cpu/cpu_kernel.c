/* cpu_kernel.c — runs a scheduled kernel (FcKernel) on the CPU: the loop nest walked in chunks of
 * up to FC_CHUNK values, the straight-line code evaluated chunk by chunk through the op tables
 * of cpu_ops.c, the result stored or reduced with the folds of cpu_reduce.c.
 *
 * Plan. The kernel's registers are renamed onto physical chunk buffers so that no instruction
 * writes a buffer it reads (the op functions take restrict pointers); invariant instructions get
 * buffers shared by all threads and are evaluated once, before the loops. A load with unit
 * stride along the chunk loop reads memory in place (its register points into the input), other
 * loads copy, broadcast or gather. A gathered or scattered index that holds one value along the
 * chunk loop (x[idx] and z[idx] = x walk row i with idx[i] alone) makes its gather or scatter
 * flat: the index is checked once per chunk and moved into the chunk's offset, and the chunk is
 * read or written as the strided run it then is; only indices that vary along the chunk loop
 * address element by element. A step that does not vary along its list's chunk loop holds one
 * value per chunk and is memoised (hoisting by domain): kept across chunks while its loops stay,
 * in a table over its loops that cycle inside a loop it does not vary along (plan_memo); each
 * list is ordered by domain so that the steps of one domain are checked, and skipped, as one run.
 *
 * Iteration. One loop is the chunk loop (the innermost, unless it is short and another loop is
 * long, or a gather varies along it and along another long loop every access is a run:
 * addresses are affine in every loop index, so any loop can run along the chunk). A short
 * chunk loop of a store takes whole loops into its chunk too (plan_span: a chunk that spans
 * several loops, each value computed over the loops of the chunk it varies along). The other
 * loops are split into kept (output) loops and reduced loops. The work is cut into units that
 * each produce a distinct set of outputs: for a store, one chunk of outputs (taken in tiles
 * of rows when a load runs across the chunk loop, as in a transpose, so that neighbouring units
 * share cache lines); for a vertical reduction (chunk loop kept), a group of VERT_GROUP chunks
 * of outputs, each combined elementwise over all reduced iterations, the group's chunks visited
 * in turn for each iteration so that input rows are read in order; for a horizontal reduction
 * (chunk loop reduced), one output point whose chunks are folded into CPU_LANES accumulators.
 * Units are spread over threads, each unit computed by one thread in a fixed order, so results
 * do not depend on the thread count. When there are few units and much reduction work per
 * unit, each unit's reduced iterations are cut into blocks whose size depends only on the shape
 * (never on the thread count), blocks are reduced in parallel into partials, and the partials
 * are combined in block order afterwards. A scattered store (FcKernel.scatter), or one that
 * accumulates, is the exception: it keeps the innermost loop as the chunk loop and runs its
 * units in order, so that elements sent to the same address are written, or summed, in the
 * order of the loop nest (a flat one writes contiguous chunks as one run): on one thread, or
 * split over its owner loops (fc_store_owner_loops: distinct indices never write one element),
 * each part with the other loops inside in their order (plan_owner, task_owner).
 *
 * Addressing. Each chunk's first element is found with 64-bit arithmetic; the offsets of the
 * elements of a chunk from it (strided and gathered loads, strided stores) are computed in
 * int32_t when the kernel says its addresses fit (FcKernel.index32) and the plan confirms that
 * every access spans fewer than 2^31 elements, in int64_t otherwise. With 32-bit offsets a
 * gathered load, and a strided one whose elements share cache lines, reads through a table of
 * offsets in a loop that GCC vectorises with eight offsets to an AVX2 register (the elements
 * are still loaded one by one: GCC's generic tuning emits no vpgatherdd), and the offset
 * arithmetic becomes 32-bit vector multiplies (AVX2 has none for 64 bits); at 64 bits such a
 * loop has four lanes and loses to scalar loads, so it is not compiled for AVX2. Loop counters
 * and chunk origins are 64-bit either way: index32 bounds addresses, not extents (a stride-0
 * loop may be longer than 2^31), and so are the output offsets of a scattered store.
 *
 * Errors found in the data (integer division by zero, a gathered or scattered index out of
 * range) stop the job; the one reported is that of the lowest-numbered failing task, the one a
 * sequential run would meet first among those that ran.
 * Depends on cpu_internal.h (backend.h, fcdim.h) only. */
#include "cpu_internal.h"
#include "mem.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    SMALL_WORK = 32 * 1024,     /* elements below which a kernel runs on the calling thread */
    TASK_WORK = 32 * 1024,      /* elements of work per task when spreading units */
    BLOCK_WORK = 64 * 1024,     /* elements per reduction block when a unit is split */
    SPLIT_UNITS = 32,           /* a reduction with fewer units than this may split them */
    VERT_GROUP = 8,             /* chunks per unit of a vertical reduction */
    TILE = 16,                  /* indices per tile of a transposing store */
    PARTIAL_BYTES = 8 << 20,    /* about the most memory the partials of a split may take */
    NEAR_STRIDE_BYTES = 32,     /* 32-bit offsets: strided loads up to this step read through a table */
    MEMO_TABLE = 1024,          /* entries of one memo table at most */
    MEMO_ENTRIES = 64 * 1024,   /* entries of all of a kernel's memo tables at most (per thread) */
    MEMO_WIDE = 64,             /* positions of a wide step that may be memoised at most */
    SPAN_LOOP = 64,             /* a chunk loop shorter than this takes whole inner loops too ... */
    SPAN_CAP = 1024,            /* ... up to this many positions (plan_span) */
    PRE_POS = 64 * 1024,        /* points of a precomputed step's loops at most (fc_cpu_target) ... */
    PRE_BYTES = 8 << 20,        /* ... and bytes of all of a kernel's tables */
};
#define CHUNK_BYTES ((size_t)FC_CHUNK * 8)

/* A memoised step whose value is copied back from its table when its chain holds (memo_restore):
 * what that needs, apart from the step (whose struct is large). */
typedef struct Restore {
    int memo;                   /* its slot */
    int d;                      /* its buffer */
    int w;                      /* positions to fill (one value), or 0: a wide value, read where it
                                   lies in the table */
    int esize;
    int m;                      /* a wide value's positions */
    size_t val0;                /* its table's values */
} Restore;

/* How a precomputed step's table is filled (pre_fill): its operands (steps, -1 for none) each
 * invariant or precomputed, the latter widened to its loops through x (with the pattern of
 * widen_vals) where theirs are fewer. */
typedef struct PreFill {
    int step;
    int n;                      /* the table's values */
    int op[3];
    const int32_t *x[3];
    int xrep[3], xcyc[3];
} PreFill;

/* A precomputed step read by others, as the first step of its run points at it (pre_point):
 * its values for the current loop indices begin at entry sum of tl[j].str * idx[tl[j].loop]
 * of its table (its loops outside the chunk; those in it come last in the table, whole). */
typedef struct PreX {
    int d;                      /* its buffer */
    int w;                      /* 0: pointed at; else one value broadcast over w positions */
    int esize;
    int nl;
    const struct TabLoop *tl;
    size_t pre0;
} PreX;

/* How a gathered index of a load read element by element is read: one value (narrow: moved into
 * the chunk's offset), or a value per position of the load (or of its rows), through a table
 * when, in a span, the index varies along fewer of the chunk's loops (x, over the index's m
 * positions). */
typedef struct GatherX {
    bool wide;
    int m;
    const int32_t *x;
    int xrep, xcyc;             /* x's pattern (widen_rep, widen_cycle), when it has one */
    /* 32-bit offsets, a precomputed index: its table scaled by the stride (sc, entry for entry
     * with ix0, its table), checked as a whole (*ok: every index in range; else each chunk's
     * are checked as they are read) by pre_fill */
    const int32_t *sc;
    const int64_t *ix0;
    const bool *ok;
} GatherX;

/* A precomputed index that a gather reads, scaled and checked once by pre_fill (GatherX.sc). */
typedef struct PreScale {
    const FcGather *ga;
    int q;                      /* the index's step */
    int32_t *sc;
    bool ok;
} PreScale;

/* Terms of one step of weighted rows at most (see "weighted rows" below). */
enum { ROW_TERMS = 4 };

/* A term of weighted rows: the weight w (or the product w * v) times the rows r; w and v each
 * read through a widening table (wx, vx: for each row, its position) or by row (NULL). When
 * outer > 0 the product is an outer one: the weight of row a * outer + b is w[a] * v[b] (wx
 * repeats each value outer times, vx cycles through outer values), or v[a] * w[b] when wx
 * cycles and vx repeats (outer < 0, by -outer). */
typedef struct RowTerm {
    int w, v, r;                /* steps, then physical buffers (as Step.a); v -1: none */
    const int32_t *wx, *vx;
    int outer;
} RowTerm;

/* One instruction, with its registers renamed to physical buffers. What every evaluation reads
 * comes first, and the arrays over loops are elsewhere (Plan.pool): a list of steps is walked
 * for every chunk, so each visit should touch one or two cache lines (the first 64 bytes: any
 * visit; the next: a load's). */
typedef struct Step {
    /* the first cache line: what every visit reads */
    const FcInstr *in;
    CpuOpFn fn;                 /* ops other than LOAD, CONST, IOTA */
    CpuSelFn sel;               /* a WHERE whose comparison with a constant it makes itself: a is
                                   then the compared value (plan_selects), else NULL */
    int d, a, b, c;             /* physical buffers; absent operands name the NULL slot */
    int memo;                   /* kept across evaluations: its slot among the memoised steps,
                                   or -1 */
    bool dead;                  /* not evaluated: a comparison that its selects make, a product
                                   or sum of weighted rows that its reader computes, or a
                                   precomputed value that only precomputed values read */
    bool pre;                   /* precomputed (plan_pre): its values lie in a table filled before
                                   the units run, where the first step of its run points the
                                   steps that read it (skip) */
    bool memo_as_prev;          /* memoised, right after a memoised step of its list with the same
                                   loops: always computed and kept together, so one holds when
                                   the other does (a chain of coordinates is checked once) */
    bool wide;                  /* varies along its chunk: computed over it; else one value */
    bool fill;                  /* one value read beyond position 0: broadcast over fillw */
    bool widens;                /* an operand is read through a table (x[]) */
    bool per_element;           /* LOAD gathered through indices that vary along the chunk loop:
                                   each element addressed on its own (plan_marks) */
    bool inplace;               /* LOAD: a wide one read where it lies (its offsets are 0, 1, ...) */
    bool narrow;                /* LOAD of one value per chunk, read only at position 0 */
    uint8_t nterm;              /* weighted rows (plan_rowops): a (or nothing, when a is absent)
                                   plus term[k], k < nterm, in that order; else 0 */
    bool rowdefer;              /* LOAD by rows read in place by its nterm reader: its buffer
                                   holds where the rows are (RowRef), not their values */
    int skip;                   /* the first of a run of steps not evaluated one by one (dead or
                                   precomputed): the step after the run, which a visit jumps to
                                   once it has pointed the run's precomputed values that others
                                   read at their tables (pfirst, pcount); else 0 (plan_runs) */
    int m;                      /* wide, in a list whose chunk spans several loops: its positions
                                   (those of its shape); else 0 (the chunk's) */
    int fillw;                  /* positions its readers read: the longest chunk of their lists */
    int chain_end;              /* the first step of a memo chain: the step after its last */
    int rowg;                   /* nterm: the step of its first rows (their number and length) */
    /* loads */
    char selk[8];               /* sel: the constant, in the compared dtype */
    size_t esize;               /* bytes per element of its value */
    const int64_t *strides;     /* LOAD: [L] */
    int64_t cstride;            /* LOAD: its stride along its shape's one loop (0 for several) */
    const int32_t *ramp;        /* LOAD read through 32-bit offsets (needs_ramp): the offset of each
                                   position of its shape (its rows) from the first, or NULL */
    int *g;                     /* [in->ngather] physical buffers of the gathered indices */
    GatherX *gx;                /* [in->ngather] how they are read (per_element) */
    int cx;                     /* the chunk loop of the list it is evaluated in */
    bool rampz;                 /* LOAD: its offsets along its shape (its rows) are all 0 */
    int osum, og[2];            /* a gathered LOAD whose offsets are an outer sum (plan_index):
                                   the offset of position a * osum + b is that of gathered index
                                   og[0] at a plus that of og[1] at b; else osum is 0 */
    int rows, rlen;             /* a gathered LOAD in a span whose indices vary along none of its
                                   inner loops: read as rows (one offset each) of rlen values ... */
    const int32_t *iramp;       /* ... each through these offsets, or NULL: a contiguous run */
    uint64_t outer;             /* its rows' loops (the others are inner) */
    uint64_t deps;              /* the loops it varies along */
    uint64_t shape;             /* wide: the loops of its list's chunk it varies along */
    const int32_t *x[3];        /* a, b, c (a reduction's a) widened to its shape: for each of its
                                   positions, the operand's (plan_widen), or NULL */
    int xes[3];                 /* their element sizes */
    int xrep[3];                /* > 0: the widening repeats each value this many times ... */
    int xcyc[3];                /* ... > 0: it repeats this many values in order, over and over */
    /* precomputing (plan_pre) */
    size_t pre0;                /* its table: Plan.pretab + pre0, a value per point of its loops (an
                                   invariant that precomputed steps read: its value repeated) */
    int pfirst, pcount;         /* skip: the precomputed steps of its run that others read,
                                   Plan.plist[pfirst, + pcount) */
    /* hoisting */
    int chain;                  /* memoised: the slot of the first step of its chain, whose
                                   key, generation and table entries the chain shares */
    bool restore;               /* memoised: read outside its chain, so its values are kept in
                                   its table and one found there is copied back to its buffer */
    size_t val0;                /* restore: its values, Thread.tvals + val0 * 8, 8 bytes apart (a
                                   wide one's: its m values packed in m such slots per entry) */
    /* the first step of a chain (the others share its check): its table, one entry per point of
     * the loops `tab` (the loops it varies along that cycle inside a loop it does not vary
     * along), entry sum of tl[j].str * idx[tl[j].loop]; the other loops it varies along are its
     * key, a new key a new generation */
    uint64_t tab;
    uint64_t key;               /* the loops of its key: those it varies along but tab's and the
                                   chunk's (whose values a span's chunk holds whole) */
    int rfirst, rcount;         /* its steps that restore: Plan.rlist[rfirst, + rcount) */
    int ntl;
    int64_t tsize;              /* entries */
    size_t stamp0;              /* its entries' generations: Thread.stamps[stamp0 ...] */
    struct TabLoop { int loop; int64_t str; } *tl;  /* [L] */
    /* an inner reduction */
    int parent;                 /* the step of the reduction whose body holds it, or -1 */
    int body0, body1;           /* its body: steps [body0, body1) */
    int racc;                   /* its slot of accumulators in Thread.racc */
    int rcl;                    /* a reduction of one value (not wide): the loop of its own it
                                   runs along the chunk; -1 for a wide one */
    const void *fillv;          /* a chunk of the fill value (for bounds) */
    CpuReducer red;
    int nrl, *rl;               /* [L] its loops other than rcl, outermost first */
    int *bvals;                 /* [L] physical buffers of its bounds' values */
    FcDType *bdt;               /* [L] and their dtypes */
    RowTerm term[ROW_TERMS];    /* nterm: its terms */
} Step;

/* A widening table: positions of shape `to` -> positions of shape `from` (a subset). */
typedef struct Widen {
    uint64_t from, to;
    int32_t *tab;
} Widen;

typedef struct Plan {
    const FcKernel *k;
    const FcPlan *kp;           /* the kernel's plan: k->plan, or made_plan */
    FcPlan *made_plan;          /* the plan made here for a kernel that came without one */
    int L;                      /* loops (a kernel with none runs one of extent 1) */
    int cl;                     /* the chunk loop */
    /* the root chunk (plan_span): the loops it spans, outermost first (the chunk loop last) */
    int nck, ck[FC_MAX_DIMS];
    uint64_t ckmask;
    int span;                   /* positions of a chunk that spans several loops (whole ones), or 0 */
    int cap;                    /* positions a buffer holds: FC_CHUNK, or more for a span */
    size_t cbytes;              /* bytes of a buffer */
    int32_t *otab;              /* a span: the output offset of each position, NULL when 0, 1, ... */
    int trr, trc;               /* a span whose store is a transpose (plan_transpose), else 0: */
    int64_t trld;               /* position a * trc + b goes to offset b * trld + a */
    const int32_t *xres;        /* a span: the result widened to the chunk, or NULL ... */
    int xrep, xcyc;             /* ... in a pattern (widen_rep, widen_cycle), when it has one */
    Widen *widen;               /* the widening tables */
    int nwiden;
    GatherX *gxs;               /* storage for Step.gx */
    void *pool;                 /* storage for Step.tl, rl, bvals, bdt */
    int64_t ext[FC_MAX_DIMS];
    bool red[FC_MAX_DIMS];
    int64_t ostr[FC_MAX_DIMS];
    int64_t zero[FC_MAX_DIMS];  /* strides of loads of a kernel with no loops */
    Step *steps;                /* invariant steps first, then the others (the top list), then the
                                   body of each inner reduction, each in code order */
    int ninv, ntop, nsteps;     /* the top list is steps [ninv, ntop) */
    /* A gated store (plan_gate): steps of the masked value where(cond, v, 0) and of the product
     * by w that is the result (0: none), and cond's and w's steps; gate_where 0: not gated. */
    int gate_where, gate_mul, gate_cond, gate_w, gate_zero;
    bool gate_narrow;           /* its chunks may be evaluated narrow first (eval_gated) */
    int gate_v;                 /* the where's v when a chunk with cond true may read it as the
                                   where's value (nothing up to the product writes its buffer),
                                   else -1 */
    int nmemo, nracc;           /* memoised steps, inner reductions */
    size_t nstamps, nvals;      /* table entries of the chains, and of their steps */
    struct Restore *rlist;      /* the steps of each chain that restore (Step.rfirst) */
    char *fills;                /* the fill chunks of the bounded reductions */
    int *gphys;                 /* storage for Step.g */
    int nshared, nphys;         /* buffers [0, nshared) are shared, [nshared, nphys) per thread */
    int res;                    /* physical buffer of the result */
    int sphys[FC_MAX_DIMS];     /* physical buffers of the scatter indices (FcKernel.scatter) */
    FcDType res_dt;
    char *shared;
    /* iteration */
    bool reduce, hor;
    bool scatter;               /* a scattered or accumulating store: in loop order (one thread, or own) */
    bool flat_scatter;          /* its scatter indices hold one value over each chunk */
    bool defer;                 /* a flat scattered store that may hold back runs (defer_run) */
    /* A scattered store split over its owner loops (fc_store_owner_loops; plan_owner): kl's first
     * nkown loops (outer points) are owner loops, the others (inner points) run in order inside
     * each part; own_cl: cl is one too, and its positions are split as well (task_owner). */
    bool own;
    bool own_cl;
    int nkown;
    int64_t inner, outer;
    int nkl, kl[FC_MAX_DIMS];   /* kept loops other than cl */
    int nrl, rl[FC_MAX_DIMS];   /* reduced loops other than cl */
    int argloop;                /* arg reductions: the reduced loop, or -1 */
    int64_t nchunk;             /* chunks along cl */
    int group;                  /* chunks per unit (vertical reductions) */
    int64_t ngroup;             /* groups of chunks along cl */
    int lk;                     /* stores and vertical reductions: the last kept loop other than cl */
    int64_t tile;               /* units taken in tiles of this many indices of lk */
    bool tcopy;                 /* a copy whose input runs along lk and output along cl (NCHW made
                                   channels_last), or the other way round: eight units at a time,
                                   copied straight from the input by blocks transposed in
                                   registers (copy_units) */
    int64_t nunits, nred;       /* units, and reduction steps per unit */
    bool idle;                  /* nothing to evaluate (a loop of extent 0) */
    int64_t total;              /* points of the root loops (saturating) */
    int64_t work;               /* points of every loop, inner reductions' too: evaluations of the
                                   innermost body, which threading weighs (saturating) */
    CpuReducer r;
    CpuOpFn store_cast;         /* result dtype -> out dtype, when they differ */
    size_t out_es;
    /* addressing (plan_index) */
    bool idx32;                 /* offsets within a chunk in int32_t */
    int32_t ostr32;             /* idx32: the output stride along cl (0 when cl has one index) */
    int32_t *ramps;             /* idx32: storage for Step.ramp */
    /* precomputing (plan_pre) */
    struct PreFill *pfill;      /* how each precomputed step's table is filled, in step order */
    int npfill;
    int *pinv, npinv;           /* the invariant steps they read, repeated first (Step.pre0) */
    int pmost;                  /* values of the largest table */
    struct PreX *plist;         /* the precomputed steps read by others (Step.pfirst) */
    struct TabLoop *ptl;        /* storage for PreX.tl */
    char *pretab;               /* the tables */
    char *prex;                 /* [3 * cap of a table * 8] operands widened for a fill */
    PreScale *pscale;           /* the gathers' precomputed indices, scaled */
    int npscale;
    /* running */
    struct Thread **th;         /* the threads of its runs (plan_threads) */
    int nth;
} Plan;

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
    long narrow_skips;          /* chunks skipped after a narrow pass (fc_cpu_narrow_skips) */
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
} Run;

static FcStatus errorf(FcError *err, FcStatus st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return st;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* ---- plan ---- */


static void threads_free(Thread **th, int n);

static void plan_free(Plan *p)
{
    threads_free(p->th, p->nth);
    fc_kplan_free(p->made_plan);
    mem_free(p->fills);
    mem_free(p->steps);
    mem_free(p->gphys);
    mem_free(p->shared);
    mem_free(p->ramps);
    mem_free(p->rlist);
    mem_free(p->otab);
    mem_free(p->gxs);
    mem_free(p->pool);
    mem_free(p->pfill);
    if (p->pscale)
        for (int i = 0; i < p->npscale; i++)
            mem_free(p->pscale[i].sc);
    mem_free(p->pscale);
    mem_free(p->pinv);
    mem_free(p->plist);
    mem_free(p->ptl);
    mem_free(p->pretab);
    mem_free(p->prex);
    for (int i = 0; i < p->nwiden; i++)
        mem_free(p->widen[i].tab);
    mem_free(p->widen);
}

/* where(x <cmp> k, y, z) with k a constant: when every reader of the comparison is such a
 * select over the same loops, the selects compare (CpuSelFn: no chunk of bools written and read
 * back) and the comparison is dead. val[i * 3 + o]: instruction i's operands as instructions. */
static void plan_selects(Plan *p, const FcKernel *k, int *val)
{
    const FcPlan *kp = p->kp;
    const uint64_t *deps = kp->deps;
    int n = k->ncode;
    int *reads = mem_calloc((size_t)n + 1, sizeof *reads), *sels = mem_calloc((size_t)n + 1, sizeof *sels);
    if (!reads || !sels)
        goto done;      /* no fusion: the same results */
    for (int i = 0; i < n; i++) {
        const FcInstr *in = &k->code[i];
        int ng = in->op == FC_OP_LOAD ? in->ngather : 0, nb = fc_op_is_reduce(in->op) ? in->nbound : 0;
        for (int o = 0; o < 3 + ng + nb; o++) {
            int v = o < 3 ? val[i * 3 + o] : o < 3 + ng ? kp->gopv[kp->goff[i] + o - 3] : kp->bopv[kp->boff[i] + o - 3 - ng];
            if (v >= 0)
                reads[v]++;
        }
        int c = val[i * 3];
        if (in->op == FC_OP_WHERE && c >= 0 && fc_op_is_compare(k->code[c].op) && deps[c] == deps[i])
            sels[c]++;
    }
    reads[kp->res]++;
    for (int g = 0; g < k->nscatter; g++)
        reads[kp->sres[g]]++;
    /* twice: first whether each select can compare (else its comparison stays), then the fusion */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            const FcInstr *in = &k->code[i];
            int c = val[i * 3];
            if (in->op != FC_OP_WHERE || c < 0 || sels[c] <= 0 || sels[c] != reads[c])
                continue;
            const FcInstr *cmp = &k->code[c];
            int x = val[c * 3], kk = val[c * 3 + 1];
            FcOp op = cmp->op;
            if (x >= 0 && k->code[x].op == FC_OP_CONST) {  /* k <cmp> x: x <flipped cmp> k */
                int t = x;
                x = kk;
                kk = t;
                op = op == FC_OP_LT ? FC_OP_GT : op == FC_OP_GT ? FC_OP_LT : op == FC_OP_LE ? FC_OP_GE
                     : op == FC_OP_GE ? FC_OP_LE : op;
            }
            CpuSelFn fn = fc_cpu_sel_fn(op, cmp->src_dtype, in->dtype);
            if (x < 0 || kk < 0 || k->code[kk].op != FC_OP_CONST || !fn) {
                sels[c] = -1;   /* not this one, so none of its readers */
                continue;
            }
            if (pass == 0)
                continue;
            Step *s = &p->steps[i];
            FcScalar v = k->code[kk].konst;
            switch (cmp->src_dtype) {
            case FC_INT32: {
                int32_t q = (int32_t)(uint32_t)(uint64_t)v.i;
                memcpy(s->selk, &q, sizeof q);
                break;
            }
            case FC_FLOAT32: {
                float q = (float)v.f;
                memcpy(s->selk, &q, sizeof q);
                break;
            }
            case FC_INT64:
                memcpy(s->selk, &v.i, sizeof v.i);
                break;
            default:
                memcpy(s->selk, &v.f, sizeof v.f);
                break;
            }
            s->sel = fn;
            val[i * 3] = x;
            p->steps[c].dead = true;
        }
    }
done:
    mem_free(reads);
    mem_free(sels);
}

const FcTarget fc_cpu_target = {"cpu", FC_CHUNK, CPU_LANES, FC_SHORT_CHUNK_LOOP, FC_LONG_CHUNK_LOOP, PRE_POS, PRE_BYTES};

FcStatus fc_cpu_supports(const FcInstr *in, FcDType a_dt, FcError *err)
{
    CpuReducer red;
    if (fc_op_is_reduce(in->op)) {
        if (!fc_cpu_reducer_init(&red, in->op, in->src_dtype, in->dtype))
            return errorf(err, FC_ERR_TYPE, "cpu kernel: %s of %s into %s is not supported", fc_op_name(in->op),
                          fc_dtype_name(in->src_dtype), fc_dtype_name(in->dtype));
        return FC_OK;
    }
    if (in->op == FC_OP_LOAD || in->op == FC_OP_CONST || in->op == FC_OP_IOTA || fc_cpu_op_fn(in->op, in->dtype, a_dt))
        return FC_OK;
    bool by_src = in->op == FC_OP_CAST || in->op == FC_OP_ISNAN || fc_op_is_compare(in->op);
    return errorf(err, FC_ERR_TYPE, "cpu kernel: %s is not supported for %s", fc_op_name(in->op),
                  fc_dtype_name(by_src ? a_dt : in->dtype));
}

/* Orders the code into steps by the kernel's plan (fcdim's kplan): the invariant ones (they vary
 * along no loop), the top list (the rest of what the root evaluates), and the body of each inner
 * reduction, each by domain; operands become step numbers. Then what is the CPU's own: each
 * step's op function or fold (a kernel of an op or dtype it has none for is FC_ERR_TYPE), and the
 * selects that compare. Buffers are given by plan_buffers once the chunk loop is known. */
static FcStatus plan_code(Plan *p, const FcKernel *k, FcError *err)
{
    const FcPlan *kp = p->kp;
    int n = k->ncode, L = k->nloop;
    int ngath = 0;
    for (int i = 0; i < n; i++)
        ngath += k->code[i].op == FC_OP_LOAD ? k->code[i].ngather : 0;
    int *val = mem_malloc((size_t)(n + 1) * 3 * sizeof *val);
    p->steps = mem_calloc((size_t)(n + 1), sizeof *p->steps);
    p->gphys = mem_malloc((size_t)(ngath + 1) * sizeof *p->gphys);
    p->gxs = mem_calloc((size_t)(ngath + 1), sizeof *p->gxs);
    size_t nl = L > 0 ? (size_t)L : 1;
    size_t per = (nl * (sizeof(struct TabLoop) + 2 * sizeof(int) + sizeof(FcDType)) + 15) & ~(size_t)15;
    p->pool = mem_malloc((size_t)(n + 1) * per);
    Step *sorted = mem_malloc((size_t)(n + 1) * sizeof *sorted);
    FcStatus st = FC_OK;
    if (!val || !p->steps || !p->gphys || !p->gxs || !p->pool || !sorted) {
        st = errorf(err, FC_ERR_NOMEM, "out of memory");
        goto done;
    }
    memcpy(val, kp->opv, (size_t)n * 3 * sizeof *val);
    int gused = 0;
    for (int i = 0; i < n; i++) {
        const FcInstr *in = &k->code[i];
        char *q = (char *)p->pool + (size_t)i * per;
        Step *s = &p->steps[i];
        s->tl = (struct TabLoop *)(void *)q;
        s->rl = (int *)(void *)(q + nl * sizeof(struct TabLoop));
        s->bvals = s->rl + nl;
        s->bdt = (FcDType *)(void *)(s->bvals + nl);
        int ng = in->op == FC_OP_LOAD ? in->ngather : 0;
        s->in = in;
        s->g = ng > 0 ? &p->gphys[gused] : NULL;
        s->gx = ng > 0 ? &p->gxs[gused] : NULL;
        gused += ng;
        s->esize = fc_dtype_size(in->dtype);
        s->deps = kp->deps[i];
        FcDType a_dt = in->a >= 0 ? k->code[kp->opv[3 * i]].dtype : in->dtype;
        st = fc_cpu_supports(in, a_dt, err);
        if (st != FC_OK)
            goto done;
        if (in->op == FC_OP_LOAD)
            s->strides = k->nloop > 0 ? in->strides : p->zero;
        else if (fc_op_is_reduce(in->op))
            fc_cpu_reducer_init(&s->red, in->op, in->src_dtype, in->dtype);
        else if (in->op != FC_OP_CONST && in->op != FC_OP_IOTA)
            s->fn = fc_cpu_op_fn(in->op, in->dtype, a_dt);
    }
    plan_selects(p, k, val);
    p->ninv = kp->ninv;
    p->ntop = kp->ntop;
    const int *pos = kp->pos;
    for (int r = 0; r < n; r++)
        if (fc_op_is_reduce(k->code[r].op)) {
            p->steps[r].body0 = kp->body0[r];
            p->steps[r].body1 = kp->body1[r];
            p->steps[r].racc = p->nracc++;
        }
    for (int i = 0; i < n; i++) {
        Step s = p->steps[i];
        const FcInstr *in = s.in;
        s.d = -1;       /* plan_buffers */
        s.parent = kp->list[i] >= 0 ? pos[kp->list[i]] : -1;
        s.a = val[i * 3] >= 0 ? pos[val[i * 3]] : -1;
        s.b = val[i * 3 + 1] >= 0 ? pos[val[i * 3 + 1]] : -1;
        s.c = val[i * 3 + 2] >= 0 ? pos[val[i * 3 + 2]] : -1;
        for (int g = 0; in->op == FC_OP_LOAD && g < in->ngather; g++)
            s.g[g] = pos[kp->gopv[kp->goff[i] + g]];
        for (int b = 0; fc_op_is_reduce(in->op) && b < in->nbound; b++) {
            s.bvals[b] = pos[kp->bopv[kp->boff[i] + b]];
            s.bdt[b] = k->code[kp->bopv[kp->boff[i] + b]].dtype;
        }
        sorted[pos[i]] = s;
    }
    p->res = pos[kp->res];
    for (int g = 0; g < k->nscatter; g++)
        p->sphys[g] = pos[kp->sres[g]];
    p->res_dt = k->code[kp->res].dtype;
    mem_free(p->steps);
    p->steps = sorted;
    sorted = NULL;
    p->nsteps = n;
done:
    mem_free(sorted);
    mem_free(val);
    return st;
}

/* ---- values that hold along a chunk ---- */

/* What walk_one marks on an instruction. */
enum {
    HOLDS = 1,      /* its register holds one value over each chunk */
    FLAT = 2,       /* a load whose gathered indices all hold */
};

/* The values step s reads: a, b, c, its gathered indices, its bounds' values, its terms'
 * weights and rows (steps, or after plan_buffers physical buffers; -1 for an absent a, b, c or
 * second factor of a weight). */
static int step_operands(const Step *s)
{
    return 3 + (s->in->op == FC_OP_LOAD ? s->in->ngather : 0) + (fc_op_is_reduce(s->in->op) ? s->in->nbound : 0) +
           3 * s->nterm;
}

static int step_operand(const Step *s, int o)
{
    int ng = s->in->op == FC_OP_LOAD ? s->in->ngather : 0, nb = fc_op_is_reduce(s->in->op) ? s->in->nbound : 0;
    if (o < 3)
        return o == 0 ? s->a : o == 1 ? s->b : s->c;
    if ((o -= 3) < ng)
        return s->g[o];
    if ((o -= ng) < nb)
        return s->bvals[o];
    const RowTerm *q = &s->term[(o - nb) / 3];
    o = (o - nb) % 3;
    return o == 0 ? q->w : o == 1 ? q->v : q->r;
}

/* Whether register r (-1: no operand) holds, as far as walk_one has got. */
static bool held(const uint8_t *mark, const int *def, int r) { return r < 0 || (mark[def[r]] & HOLDS); }

/* Walks the code as if loop cl were the chunk loop, marking each instruction i in mark[i], with
 * def[r] the instruction that last wrote register r. HOLDS, for a register that has one value
 * at every position of its chunk (as an invariant's buffer does): constants, invariants, iotas
 * of other loops, loads that move along cl neither by a stride nor by an index, ops over such
 * operands, and anything at all when cl has one index. FLAT, for a load each of whose chunks
 * is an ordinary strided run from an offset that its indices move. Returns the gathered loads
 * that are not flat. */
static int walk_one(const Plan *p, int cl, uint8_t *mark, int *def)
{
    const FcKernel *k = p->k;
    int rough = 0;
    for (int i = 0; i < k->ncode; i++) {
        const FcInstr *in = &k->code[i];
        bool holds = in->invariant || p->ext[cl] <= 1, flat = true;
        switch (in->op) {
        case FC_OP_CONST:
            holds = true;
            break;
        case FC_OP_IOTA:
            holds = holds || in->loop != cl;
            break;
        case FC_OP_LOAD:
            for (int g = 0; g < in->ngather; g++)
                flat = flat && held(mark, def, in->gathers[g].reg);
            rough += in->ngather > 0 && !flat;
            holds = holds || (flat && in->strides[cl] == 0);
            break;
        default:
            holds = holds || (held(mark, def, in->a) && held(mark, def, in->b) && held(mark, def, in->c));
            break;
        }
        mark[i] = (uint8_t)((holds ? HOLDS : 0) | (flat ? FLAT : 0));
        def[in->dst] = i;
    }
    return rough;
}

/* Whether every access (the output and each load, its gathers flat) steps along loop l by at
 * most one element. */
static bool steady(const Plan *p, int l, uint8_t *mark, int *def)
{
    if (llabs(p->ostr[l]) > 1 || walk_one(p, l, mark, def) > 0)
        return false;
    for (int i = 0; i < p->k->ncode; i++) {
        const FcInstr *in = &p->k->code[i];
        if (in->op == FC_OP_LOAD && llabs(in->strides[l]) > 1)
            return false;
    }
    return true;
}

static FcStatus plan_marks(Plan *p, FcError *err);
static bool spans_fit(const Plan *p);

/* ---- chunks that span several loops ----
 *
 * A short chunk loop leaves each chunk too little work for what it costs to run a step (roi_align
 * on 16 channels: twenty steps of 16 positions per sample). When the root stores, such a chunk
 * takes whole loops too, the innermost root loops first, up to SPAN_CAP positions: the chunk
 * spans loops ck[] (outermost first, the chunk loop last), which then do not cycle. A value over
 * the chunk holds one entry per point of the chunk's loops it varies along (its shape), row-major
 * in ck's order, so that a coordinate over (bin row) is computed at 7 positions and a tap over
 * (bin row, bin column, channel) at 784; an operand with a smaller shape than its reader's is
 * widened through a table of positions (plan_widen). Offsets within such a chunk are 32-bit. */

static int64_t shape_size(const Plan *p, uint64_t shape)
{
    int64_t n = 1;
    for (uint64_t d = shape; d; d &= d - 1)
        n *= p->ext[__builtin_ctzll(d)];
    return n;
}

/* The loops of a shape in the order of its positions (outermost first): those outside the root
 * chunk in increasing order, then those of the chunk in the chunk's order (a value over the
 * chunk's loops only, or over one loop, is the common case; a precomputed table has others
 * outside them). Returns how many. */
static int shape_loops(const Plan *p, uint64_t shape, int *loops)
{
    int nl = 0;
    for (uint64_t d = shape & ~p->ckmask; d; d &= d - 1)
        loops[nl++] = __builtin_ctzll(d);
    for (int j = 0; j < p->nck; j++)
        if (shape >> p->ck[j] & 1)
            loops[nl++] = p->ck[j];
    return nl;
}

/* str[l] for each loop l of shape: its step between positions (row-major); 0 elsewhere. */
static void shape_strides(const Plan *p, uint64_t shape, int64_t *str)
{
    int loops[FC_MAX_DIMS], nl = shape_loops(p, shape, loops);
    int64_t s = 1;
    memset(str, 0, (size_t)p->L * sizeof *str);
    for (int j = nl - 1; j >= 0; j--) {
        str[loops[j]] = s;
        s *= p->ext[loops[j]];
    }
}

/* Whether coef[l] * index of l, summed over the loops of shape, is the position itself (0, 1,
 * ...): an access over the shape that is one run in its order. */
static bool row_major(const Plan *p, uint64_t shape, const int64_t *coef)
{
    int64_t str[FC_MAX_DIMS];
    shape_strides(p, shape, str);
    for (uint64_t d = shape; d; d &= d - 1) {
        int l = __builtin_ctzll(d);
        if (p->ext[l] > 1 && coef[l] != str[l])
            return false;
    }
    return true;
}

/* out[i] for the first (at most limit) positions i of shape: the sum of coef[l] times the index
 * of loop l there. */
static void shape_table(const Plan *p, uint64_t shape, const int64_t *coef, int32_t *out, int64_t limit)
{
    int loops[FC_MAX_DIMS], nl = shape_loops(p, shape, loops);
    int64_t idx[FC_MAX_DIMS] = {0}, v = 0, n = shape_size(p, shape);
    if (n > limit)
        n = limit;
    for (int64_t i = 0; i < n; i++) {
        out[i] = (int32_t)v;
        for (int j = nl - 1; j >= 0; j--) {
            int l = loops[j];
            v += coef[l];
            if (++idx[j] < p->ext[l])
                break;
            v -= coef[l] * p->ext[l];
            idx[j] = 0;
        }
    }
}

/* Makes the chunk span several loops when it should (see above); else it is the chunk loop's. */
static void plan_span(Plan *p)
{
    const FcKernel *k = p->k;
    int cl = p->cl;
    p->nck = 1;
    p->ck[0] = cl;
    p->ckmask = (uint64_t)1 << cl;
    p->span = 0;
    p->cap = FC_CHUNK;
    p->cbytes = CHUNK_BYTES;
    if (p->reduce || p->scatter || k->no_hoist || k->nloop == 0 || p->ext[cl] < 1 || p->ext[cl] >= SPAN_LOOP ||
        !p->idx32)
        return;
    /* Not the loops a reduction's bound varies along: the scheduler keeps a bound's mask only
     * where the bound varies along the chunk loop, so the bound must hold over the chunk. */
    uint64_t bounded = 0;
    for (int j = 0; j < p->nsteps; j++) {
        const Step *s = &p->steps[j];
        for (int b = 0; fc_op_is_reduce(s->in->op) && b < s->in->nbound; b++)
            bounded |= p->steps[s->bvals[b]].deps;
    }
    int64_t size = p->ext[cl];
    int add[FC_MAX_DIMS], na = 0;
    for (int l = p->L - 1; l >= 0; l--) {
        if (l == cl || k->owner[l] >= 0 || p->ext[l] <= 1 || (bounded >> l & 1))
            continue;
        if (p->ext[l] > SPAN_CAP / size)
            break;
        size *= p->ext[l];
        add[na++] = l;
    }
    if (na == 0)
        return;
    p->nck = 0;
    for (int j = na - 1; j >= 0; j--) {
        p->ck[p->nck++] = add[j];
        p->ckmask |= (uint64_t)1 << add[j];
    }
    p->ck[p->nck++] = cl;
    p->span = (int)size;
    p->cap = (int)((size > FC_CHUNK ? size : FC_CHUNK) + 31) & ~31;
    p->cbytes = (size_t)p->cap * 8;
}

/* The loops of the chunk of a list whose chunk loop is cx. */
static uint64_t chunk_mask(const Plan *p, int cx)
{
    return cx < 0 ? 0 : cx == p->cl ? p->ckmask : (uint64_t)1 << cx;
}

/* The table that widens a value of shape `from` to shape `to` (kept in the plan, one per pair),
 * or NULL when out of memory. */
static const int32_t *plan_widen(Plan *p, uint64_t from, uint64_t to)
{
    for (int i = 0; i < p->nwiden; i++)
        if (p->widen[i].from == from && p->widen[i].to == to)
            return p->widen[i].tab;
    Widen *w = mem_realloc(p->widen, (size_t)(p->nwiden + 1) * sizeof *w);
    if (!w)
        return NULL;
    p->widen = w;
    int64_t coef[FC_MAX_DIMS];
    shape_strides(p, from, coef);
    int32_t *tab = mem_malloc((size_t)shape_size(p, to) * sizeof *tab);
    if (!tab)
        return NULL;
    shape_table(p, to, coef, tab, INT64_MAX);
    p->widen[p->nwiden++] = (Widen){from, to, tab};
    return tab;
}

/* How many times widening from `from` to `to` repeats each value in a row, when it does so (the
 * loops it adds all come after from's in to's order), else 0. */
static int widen_rep(const Plan *p, uint64_t from, uint64_t to)
{
    int loops[FC_MAX_DIMS], nl = shape_loops(p, to, loops);
    bool added = false;
    for (int j = 0; j < nl; j++) {
        bool f = from >> loops[j] & 1;
        if (f && added)
            return 0;
        added |= !f;
    }
    return (int)shape_size(p, to & ~from);
}

/* How many values widening from `from` to `to` repeats in order, over and over, when it does so
 * (the loops it adds all come before from's in to's order), else 0. */
static int widen_cycle(const Plan *p, uint64_t from, uint64_t to)
{
    int loops[FC_MAX_DIMS], nl = shape_loops(p, to, loops);
    bool seen = false;
    for (int j = 0; j < nl; j++) {
        bool f = from >> loops[j] & 1;
        if (!f && seen)
            return 0;
        seen |= f;
    }
    return (int)shape_size(p, from);
}

/* Whether the scattered store of p is split over owner loops (Plan.own), from the shape alone (so
 * that the order of the units does not depend on the thread count), only for work enough to be
 * threaded and for a store that cannot fail (FcKernel.checked: a part may run past another's
 * failure): kept owner loops move to the front of kl, so that units run with them outermost
 * and the others in their order inside (an element, whose owner indices are fixed, still gets
 * its contributions in the nest's order). */
static void plan_owner(Plan *p)
{
    if (!p->scatter || !p->k->checked || p->span || p->work < SMALL_WORK)
        return;
    uint64_t own = fc_store_owner_loops(p->k);
    p->own_cl = own >> p->cl & 1;
    int kl[FC_MAX_DIMS], n = 0;
    for (int j = 0; j < p->nkl; j++)
        if (own >> p->kl[j] & 1)
            kl[n++] = p->kl[j];
    p->nkown = n;
    p->inner = 1;
    for (int j = 0; j < p->nkl; j++)
        if (!(own >> p->kl[j] & 1)) {
            kl[n++] = p->kl[j];
            p->inner = sat_mul(p->inner, p->ext[p->kl[j]]);
        }
    if (p->nkown == 0 && !p->own_cl)
        return;
    memcpy(p->kl, kl, sizeof kl);
    p->own = true;
}

static FcStatus plan_chunk_loop(Plan *p, FcError *err)
{
    const FcKernel *k = p->k;
    /* A scattered store keeps the last loop innermost: its units then run in the order of the
     * loop nest, the order in which duplicates must land. Only root loops are chunk loops. */
    if (k->chunk_loop >= 0) {     /* checked by the plan */
        p->cl = k->chunk_loop;
        plan_span(p);
        return plan_marks(p, err);
    }
    int cl = fc_target_chunk_loop(&fc_cpu_target, p->L, p->ext, k->nloop ? k->owner : NULL, p->scatter);
    if (cl < 0)
        cl = 0;
    uint8_t *mark = mem_malloc((size_t)k->ncode + 1);
    int *def = mem_malloc(((size_t)k->nreg + 1) * sizeof *def);
    if (!mark || !def) {
        mem_free(mark);
        mem_free(def);
        return errorf(err, FC_ERR_NOMEM, "out of memory");
    }
    /* A chunk loop along which some load gathers element by element gives way to a long loop
     * along which every access is a run: (x[idx] * 2).sum() has its loops in the order of its
     * first load, idx's, and would otherwise read one element of each row of x per step. */
    if (!p->scatter && walk_one(p, cl, mark, def) > 0) {
        int best = cl;
        for (int l = 0; l < p->L; l++)
            if (l != cl && (k->nloop == 0 || k->owner[l] < 0) && p->ext[l] >= FC_LONG_CHUNK_LOOP &&
                (best == cl || p->ext[l] > p->ext[best]) && steady(p, l, mark, def))
                best = l;
        cl = best;
    }
    mem_free(mark);
    mem_free(def);
    p->cl = cl;
    plan_span(p);
    return plan_marks(p, err);
}

/* With the chunk loop known: each list's chunk loop (a reduction of one value per chunk runs
 * along a loop of its own), which steps are computed over the chunk (wide), which hold one value
 * and are kept while their loops stay (memo: the hoisting), which of those are read beyond
 * position 0 (fill), and how loads address (flat gathers, narrow loads). Then the buffers. */
static FcStatus plan_buffers(Plan *p, FcError *err);

/* The most positions a chunk along loop cx holds (1 for a reduction of one value that runs no
 * loop of its own along the chunk). */
static int chunk_width(const Plan *p, int cx)
{
    return cx < 0 ? 1 : cx == p->cl && p->span ? p->span : p->ext[cx] < FC_CHUNK ? (int)p->ext[cx] : FC_CHUNK;
}

/* The positions wide step s is computed over. */
static int positions(const Plan *p, const Step *s)
{
    return s->m > 0 ? s->m : chunk_width(p, s->cx);
}

/* Whether loop l cycles while a list whose chunk loop is cx is evaluated: a loop of the root
 * chunk, or cx, when it has more than one chunk; any other loop of more than one index. */
static bool cycles(const Plan *p, int cx, int l)
{
    if (p->ckmask >> l & 1)
        return p->span == 0 && p->ext[l] > FC_CHUNK;
    return p->ext[l] > (l == cx ? FC_CHUNK : 1);
}

/* w: the positions a reader takes; at least position 0 is written, which every other reader
 * reads (a reader in the body of a reduction over an empty loop takes none). */
static void mark_fill(Step *s, int w)
{
    s->fill = true;
    if (w < 1)
        w = 1;
    if (w > s->fillw)
        s->fillw = w;
}

/* Whether a value of one step s could be kept for a later evaluation: some loop that cycles
 * while its list is evaluated (a root loop, a loop of a reduction whose body holds it; a chunk
 * loop cycles when it has more than one chunk) leaves it alone. A value that varies along all
 * of them is computed afresh every time. */
static bool may_hold(const Plan *p, const Step *s)
{
    uint64_t loops = 0;
    for (int l = 0; l < p->L; l++)
        if (p->k->nloop == 0 || p->k->owner[l] < 0)
            loops |= (uint64_t)1 << l;
    for (int r = s->parent; r >= 0; r = p->steps[r].parent)
        for (int l = 0; l < p->L; l++)
            if (p->k->owner[l] == (int)(p->steps[r].in - p->k->code))
                loops |= (uint64_t)1 << l;
    for (uint64_t d = loops & ~s->deps; d; d &= d - 1)
        if (cycles(p, s->cx, __builtin_ctzll(d)))
            return true;
    return false;
}

/* Whether wide step s may be memoised like a value of one: in a span (its positions, s->m, the
 * same at every evaluation), a short one (the coordinates that vary along one loop of the
 * chunk and along a reduction's loop, recomputed for every point of the reduction otherwise),
 * whose buffer holds its values (not weighted rows' whereabouts), not a reduction. */
static bool memo_wide(const Step *s)
{
    return s->m > 0 && s->m <= MEMO_WIDE && !s->rowdefer && !s->nterm && !fc_op_is_reduce(s->in->op);
}

/* Whether step v, read by a step of m positions, is a product of weighted rows (see "weighted
 * rows"): a float MUL of m positions, not a select, of a load by contiguous rows that only it
 * reads and that it reads as is, and of a value with one entry per row, repeated along each
 * (its operands at *w and *g). reads[]: how many times each step is read. */
static bool row_product(const Plan *p, int v, int m, const int *reads, int *w, int *g)
{
    const Step *s = &p->steps[v];
    if (s->in->op != FC_OP_MUL || !s->wide || s->m != m || s->sel || s->dead || v < p->ninv ||
        (s->in->dtype != FC_FLOAT32 && s->in->dtype != FC_FLOAT64))
        return false;
    for (int o = 0; o < 2; o++) {
        int gi = o ? s->a : s->b, wi = o ? s->b : s->a;
        if (gi < 0 || wi < 0)
            continue;
        const Step *ld = &p->steps[gi], *ws = &p->steps[wi];
        if (ld->in->op != FC_OP_LOAD || ld->rows <= 0 || reads[gi] != 1 || ld->shape != s->shape ||
            s->x[o ? 0 : 1] || gi < p->ninv || !row_major(p, ld->shape & ~ld->outer, ld->strides))
            continue;
        if (!ws->wide || ws->shape != ld->outer || ws->in->dtype != s->in->dtype || !s->x[o ? 1 : 0] ||
            s->xrep[o ? 1 : 0] != ld->rlen)
            continue;
        *w = wi;
        *g = gi;
        return true;
    }
    return false;
}

/* Fuses weighted rows (see above): an ADD of a value and a product of weighted rows that only
 * it reads (in its own list) becomes a step of one term (weight, rows) added to the value (a),
 * the product dead; a product read otherwise becomes one term alone. Then a step whose value a
 * is such a step that only it reads takes that step's terms before its own (up to ROW_TERMS),
 * the other dead: a sum of taps is one pass. Last, a weight that is a product only its term
 * reads, recomputed at every evaluation anyway (not memoised), is computed row by row in that
 * pass from its factors (bilinear weights: hy * hx). Runs after the marks, before memoisation
 * and buffers (which see the new operands). False when out of memory. */
static void row_term(Plan *p, Step *s, int x, int w, int g)
{
    p->steps[g].rowdefer = true;
    s->nterm = 1;
    s->term[0] = (RowTerm){.w = w, .v = -1, .r = g};
    s->rowg = g;
    s->a = x;
    s->b = -1;
    s->c = -1;
}

static bool plan_rowops(Plan *p)
{
    if (!p->span)
        return true;
    int *reads = mem_calloc((size_t)p->nsteps + 1, sizeof *reads);
    if (!reads)
        return false;
    for (int j = 0; j < p->nsteps; j++)
        for (int o = 0; o < step_operands(&p->steps[j]); o++) {
            int v = step_operand(&p->steps[j], o);
            if (v >= 0)
                reads[v]++;
        }
    reads[p->res]++;
    for (int g = 0; g < p->k->nscatter; g++)
        reads[p->sphys[g]]++;
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->in->op != FC_OP_ADD || !s->wide || s->m == 0 || s->sel)
            continue;
        for (int o = 0; o < 2; o++) {
            int pi = o ? s->b : s->a, xi = o ? s->a : s->b, w, g;
            if (pi < 0 || xi < 0 || reads[pi] != 1 || s->x[0] || s->x[1] || p->steps[pi].parent != s->parent ||
                !row_product(p, pi, s->m, reads, &w, &g))
                continue;
            const Step *x = &p->steps[xi];
            if (x->in->dtype != s->in->dtype || !x->wide || x->shape != s->shape)
                continue;
            p->steps[pi].dead = true;
            row_term(p, s, xi, w, g);
            break;
        }
    }
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        int w, g;
        if (!s->nterm && s->m > 0 && row_product(p, j, s->m, reads, &w, &g))
            row_term(p, s, -1, w, g);
    }
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        Step *x = s->nterm && s->a >= 0 ? &p->steps[s->a] : NULL;
        if (!x || !x->nterm || reads[s->a] != 1 || x->parent != s->parent || x->nterm + s->nterm > ROW_TERMS ||
            p->steps[x->rowg].rows != p->steps[s->rowg].rows || p->steps[x->rowg].rlen != p->steps[s->rowg].rlen)
            continue;
        RowTerm term[ROW_TERMS];
        int n = 0;
        for (int k = 0; k < x->nterm; k++)
            term[n++] = x->term[k];
        for (int k = 0; k < s->nterm; k++)
            term[n++] = s->term[k];
        memcpy(s->term, term, sizeof term);
        s->nterm = (uint8_t)n;
        s->a = x->a;
        s->rowg = x->rowg;
        x->dead = true;
        x->nterm = 0;
        x->a = -1;
    }
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        for (int k = 0; k < s->nterm; k++) {
            RowTerm *tm = &s->term[k];
            Step *w = &p->steps[tm->w];
            if (w->in->op != FC_OP_MUL || w->sel || w->dead || w->nterm || !w->wide || w->m == 0 || tm->w < p->ninv ||
                reads[tm->w] != 1 || w->parent != s->parent || w->in->dtype != s->in->dtype || w->a < 0 || w->b < 0 ||
                (memo_wide(w) && may_hold(p, w)))
                continue;
            int outer = w->xrep[0] > 0 && w->xcyc[1] == w->xrep[0]   ? w->xrep[0]
                        : w->xcyc[0] > 0 && w->xrep[1] == w->xcyc[0] ? -w->xcyc[0]
                                                                     : 0;
            *tm = (RowTerm){.w = w->a, .v = w->b, .r = tm->r, .wx = w->x[0], .vx = w->x[1], .outer = outer};
            w->dead = true;
        }
    }
    mem_free(reads);
    return true;
}

/* ---- precomputed values ----
 *
 * A value that varies along few of the chunk's positions (a coordinate over a bin row, one per
 * box) is computed many times over few positions: roi_align's sixty coordinate steps, seven
 * positions each, once per box and sample, cost more in dispatch than in arithmetic. When its
 * loops hold few points, it is computed once for all of them before the units run, into a table
 * (a value per point, the loops outside the chunk first, those of the chunk last, each in
 * shape_loops' order), as one pass per step over the whole table; during the run each chunk
 * points at its slice. Only what cannot fail is precomputed (loads that gather nothing, iotas,
 * ops but integer division): a body that runs to a bound would otherwise fail on points it
 * never reaches. A step is precomputed when it is not computed over the whole chunk (one value,
 * or at most MEMO_WIDE positions of a span), its operands are invariant or precomputed and its
 * table fits (PRE_POS, PRE_BYTES); the unhoisted schedule precomputes nothing. */

/* Whether the CPU's layout rules step j out of precomputation (fc_kplan_pre's veto; the
 * plan's rule does the rest): a step fused into another (dead, weighted rows and the rows they
 * read in place), one of a list that runs along another loop than the chunk loop, and one
 * computed over the whole chunk (wide, but for at most MEMO_WIDE positions of a span). */
static bool pre_veto(const Plan *p, int j)
{
    const Step *s = &p->steps[j];
    return s->dead || s->nterm || s->rowdefer || s->cx != p->cl || (s->wide && (s->m == 0 || s->m > MEMO_WIDE));
}

/* Marks the precomputed steps (fcdim's fc_kplan_pre, with the operands as the CPU reads them
 * after its fusions) and plans their tables (see above), the ones no other step reads dead.
 * Before memoisation and buffers. */
static FcStatus plan_pre(Plan *p, FcError *err)
{
    if (p->k->no_hoist)
        return FC_OK;
    const FcKernel *k = p->k;
    int n = p->nsteps;
    int *opv = mem_malloc((size_t)(3 * n + 1) * sizeof *opv);
    bool *veto = mem_malloc((size_t)n + 1), *pre = mem_malloc((size_t)n + 1);
    size_t *off = mem_malloc((size_t)(n + 1) * sizeof *off);
    FcStatus st = FC_OK;
    size_t bytes = 0;
    int64_t most = 0;
    if (!opv || !veto || !pre || !off) {
        st = errorf(err, FC_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int j = 0; j < n; j++) {
        const Step *s = &p->steps[j];
        int i = (int)(s->in - k->code);
        for (int o = 0; o < 3; o++) {
            int v = step_operand(s, o);
            opv[3 * i + o] = v >= 0 ? (int)(p->steps[v].in - k->code) : -1;
        }
        veto[i] = pre_veto(p, j);
    }
    bytes = fc_kplan_pre(p->kp, k, &fc_cpu_target, opv, veto, pre, off, NULL);
    for (int j = p->ninv; j < n; j++) {
        Step *s = &p->steps[j];
        int i = (int)(s->in - k->code);
        if (!pre[i])
            continue;
        s->pre = true;
        s->pre0 = off[i];
        p->npfill++;
        int64_t m = shape_size(p, s->deps);
        most = m > most ? m : most;
    }
done:
    mem_free(opv);
    mem_free(veto);
    mem_free(pre);
    mem_free(off);
    if (st != FC_OK)
        return st;
    if (p->npfill == 0)
        return FC_OK;
    /* the invariants they read, each repeated over the largest table once */
    bool *read = mem_calloc((size_t)p->nsteps + 1, sizeof *read);
    p->pinv = mem_malloc((size_t)(p->ninv + 1) * sizeof *p->pinv);
    if (!read || !p->pinv) {
        mem_free(read);
        return errorf(err, FC_ERR_NOMEM, "out of memory");
    }
    for (int j = p->ninv; j < p->nsteps; j++)
        for (int o = 0; o < 3 && p->steps[j].pre; o++) {
            int v = step_operand(&p->steps[j], o);
            if (v >= 0 && v < p->ninv && !read[v]) {
                read[v] = true;
                p->pinv[p->npinv++] = v;
                p->steps[v].pre0 = bytes;
                bytes += ((size_t)most * p->steps[v].esize + 63) & ~(size_t)63;
            }
        }
    memset(read, 0, (size_t)p->nsteps * sizeof *read);
    p->pmost = (int)most;
    p->pfill = mem_calloc((size_t)p->npfill, sizeof *p->pfill);
    p->pretab = fc_cpu_aligned_alloc(bytes);
    p->prex = fc_cpu_aligned_alloc(3 * (size_t)most * 8);
    if (!p->pfill || !p->pretab || !p->prex) {
        mem_free(read);
        return errorf(err, FC_ERR_NOMEM, "out of memory");
    }
    int nf = 0;
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->pre) {
            PreFill *f = &p->pfill[nf++];
            f->step = j;
            f->n = (int)shape_size(p, s->deps);
            for (int o = 0; o < 3; o++) {
                int v = step_operand(s, o);
                const Step *q = v >= 0 ? &p->steps[v] : NULL;
                f->op[o] = v;
                if (!q || !q->pre || q->deps == s->deps)
                    continue;
                if (!(f->x[o] = plan_widen(p, q->deps, s->deps))) {
                    mem_free(read);
                    return errorf(err, FC_ERR_NOMEM, "out of memory");
                }
                f->xrep[o] = widen_rep(p, q->deps, s->deps);
                f->xcyc[o] = widen_cycle(p, q->deps, s->deps);
            }
        } else if (!s->dead) {
            for (int o = 0; o < step_operands(s); o++) {
                int v = step_operand(s, o);
                if (v >= 0)
                    read[v] = true;
            }
        }
    }
    for (int j = p->ninv; j < p->nsteps; j++)
        if (p->steps[j].pre && !read[j])
            p->steps[j].dead = true;
    mem_free(read);
    /* with 32-bit offsets, the precomputed indices that gathers read element by element, each
     * scaled once for all the gathers that read it alike (a tap's y is read by two taps) */
    int most_scaled = 0;
    for (int j = p->ninv; j < p->nsteps && p->idx32; j++)
        most_scaled += p->steps[j].per_element ? p->steps[j].in->ngather : 0;
    if (most_scaled > 0 && !(p->pscale = mem_calloc((size_t)most_scaled, sizeof *p->pscale)))
        return errorf(err, FC_ERR_NOMEM, "out of memory");
    for (int j = p->ninv; j < p->nsteps && p->idx32; j++) {
        Step *s = &p->steps[j];
        for (int g = 0; s->per_element && !s->pre && !s->dead && g < s->in->ngather; g++) {
            const Step *q = &p->steps[s->g[g]];
            const FcGather *ga = &s->in->gathers[g];
            if (!s->gx[g].wide || !q->pre)
                continue;
            PreScale *c = p->pscale;
            for (; c < p->pscale + p->npscale; c++)
                if (c->q == s->g[g] && c->ga->stride == ga->stride && c->ga->extent == ga->extent &&
                    c->ga->wrap == ga->wrap)
                    break;
            if (c == p->pscale + p->npscale) {
                *c = (PreScale){.ga = ga, .q = s->g[g]};
                /* eight more: gather_32 reads eight from any entry (the outer sum) */
                if (!(c->sc = mem_calloc((size_t)shape_size(p, q->deps) + 8, sizeof *c->sc)))
                    return errorf(err, FC_ERR_NOMEM, "out of memory");
                p->npscale++;
            }
            s->gx[g].sc = c->sc;
            s->gx[g].ix0 = (const int64_t *)(const void *)(p->pretab + q->pre0);
            s->gx[g].ok = &c->ok;
        }
    }
    return FC_OK;
}

/* The runs of each list's steps that are not evaluated one by one, dead or precomputed: the
 * first step of each jumps past it (Step.skip), with a list of the run's precomputed steps that
 * others read (Plan.plist), pointed at their tables. Once the buffers are known. */
static FcStatus plan_runs(Plan *p, FcError *err)
{
    int nx = 0;
    for (int j = p->ninv; j < p->nsteps; j++)
        nx += p->steps[j].pre && !p->steps[j].dead;
    p->plist = mem_malloc((size_t)(nx + 1) * sizeof *p->plist);
    p->ptl = mem_malloc((size_t)(nx + 1) * (size_t)p->L * sizeof *p->ptl);
    int *lend = mem_malloc((size_t)(p->nsteps + 1) * sizeof *lend);   /* the end of each step's list */
    if (!p->plist || !p->ptl || !lend) {
        mem_free(lend);
        return errorf(err, FC_ERR_NOMEM, "out of memory");
    }
    for (int j = 0; j < p->nsteps; j++)
        lend[j] = j < p->ninv ? p->ninv : p->ntop;
    for (int r = 0; r < p->nsteps; r++)
        if (fc_op_is_reduce(p->steps[r].in->op))
            for (int j = p->steps[r].body0; j < p->steps[r].body1; j++)
                lend[j] = p->steps[r].body1;
    int n = 0;
    for (int j = 0; j < p->nsteps;) {
        Step *h = &p->steps[j];
        if (!h->dead && !h->pre) {
            j++;
            continue;
        }
        int e = j + 1;
        while (e < lend[j] && (p->steps[e].dead || p->steps[e].pre))
            e++;
        h->skip = e;
        h->pfirst = n;
        const PreX *prev = NULL;
        for (int q = j; q < e; q++) {
            const Step *s = &p->steps[q];
            if (!s->pre || s->dead)
                continue;
            PreX *x = &p->plist[n];
            struct TabLoop *tl = p->ptl + (size_t)n * (size_t)p->L;
            int64_t str[FC_MAX_DIMS];
            shape_strides(p, s->deps, str);
            *x = (PreX){.d = s->d, .w = !s->wide && s->fill ? s->fillw : 0, .esize = (int)s->esize, .tl = tl,
                        .pre0 = s->pre0};
            for (uint64_t d = s->deps & ~p->ckmask; d; d &= d - 1) {
                int l = __builtin_ctzll(d);
                tl[x->nl++] = (struct TabLoop){l, str[l]};
            }
            if (prev && prev->nl == x->nl && memcmp(prev->tl, tl, (size_t)x->nl * sizeof *tl) == 0)
                x->tl = prev->tl;       /* the same entry: pre_point computes it once */
            prev = x;
            n++;
        }
        h->pcount = n - h->pfirst;
        j = e;
    }
    mem_free(lend);
    return FC_OK;
}

static FcStatus plan_marks(Plan *p, FcError *err)
{
    const FcKernel *k = p->k;
    bool hoist = !k->no_hoist;
    /* Each list's chunk loop, by the plan's rule (fc_kplan_chunks): a reduction of one value per
     * chunk runs along a loop of its own, and so does its body. */
    int *cx = mem_malloc(((size_t)k->ncode + 1) * sizeof *cx);
    if (!cx)
        return errorf(err, FC_ERR_NOMEM, "out of memory");
    fc_kplan_chunks(k->ncode, k->nloop, p->kp->deps, p->kp->own, p->kp->list, p->cl, p->ckmask, cx);
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        int i = (int)(s->in - k->code);
        s->cx = cx[i];
        s->wide = j >= p->ninv && (s->deps & chunk_mask(p, s->cx));
        if (fc_op_is_reduce(s->in->op)) {
            uint64_t own = p->kp->own[i];
            s->rcl = -1;
            if (!s->wide)
                for (int l = 0; l < p->L; l++)
                    if (own >> l & 1)
                        s->rcl = l;
            s->nrl = 0;
            for (int l = 0; l < p->L; l++)
                if ((own >> l & 1) && l != s->rcl)
                    s->rl[s->nrl++] = l;
        } else if (!hoist && j >= p->ninv) {
            s->wide = true;         /* the unhoisted schedule: everything at every point */
        }
        s->shape = s->wide ? s->deps & chunk_mask(p, s->cx) : 0;
        s->m = s->wide && p->span && s->cx == p->cl ? (int)shape_size(p, s->shape) : 0;
    }
    mem_free(cx);
    /* Fills: one value read beyond position 0, by readers whose chunks are at most as long as
     * their lists' chunk loops. Widening: a wide value read by a step of a larger shape. */
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        const FcInstr *in = s->in;
        bool flat = true;
        for (int g = 0; in->op == FC_OP_LOAD && g < in->ngather; g++)
            flat = flat && !p->steps[s->g[g]].wide;
        s->per_element = in->op == FC_OP_LOAD && in->ngather > 0 && !flat;
        int ops[3] = {s->a, s->b, s->c}, nops = 0;
        if (in->op == FC_OP_LOAD) {
            s->outer = s->shape;
            if (s->per_element && s->m > 0) {
                /* rows: the inner loops of its shape that no index varies along go by runs */
                uint64_t vary = 0, inner = 0;
                for (int g = 0; g < in->ngather; g++)
                    vary |= p->steps[s->g[g]].wide ? p->steps[s->g[g]].shape : 0;
                for (int q = p->nck - 1; q >= 0 && !(vary >> p->ck[q] & 1); q--)
                    inner |= s->shape & (uint64_t)1 << p->ck[q];
                if (inner && inner != s->shape) {
                    s->outer = s->shape & ~inner;
                    s->rows = (int)shape_size(p, s->outer);
                    s->rlen = (int)shape_size(p, inner);
                }
            }
            for (int g = 0; s->per_element && g < in->ngather; g++) {
                const Step *q = &p->steps[s->g[g]];
                GatherX *gx = &s->gx[g];
                gx->wide = q->wide;
                gx->m = q->m;
                bool widen = s->m > 0 && q->wide && q->shape != s->outer;
                gx->x = widen ? plan_widen(p, q->shape, s->outer) : NULL;
                if (widen && !gx->x)
                    return errorf(err, FC_ERR_NOMEM, "out of memory");
                gx->xrep = widen ? widen_rep(p, q->shape, s->outer) : 0;
                gx->xcyc = widen ? widen_cycle(p, q->shape, s->outer) : 0;
            }
        } else if (fc_op_is_reduce(in->op)) {
            if (s->a >= 0)
                mark_fill(&p->steps[s->a], s->wide ? positions(p, s) : chunk_width(p, s->rcl));
            nops = s->wide ? 1 : 0;
        } else if (s->wide) {
            for (int o = 0; o < 3; o++)
                if (ops[o] >= 0)
                    mark_fill(&p->steps[ops[o]], positions(p, s));
            nops = 3;
        }
        for (int o = 0; o < nops; o++) {
            const Step *q = ops[o] >= 0 ? &p->steps[ops[o]] : NULL;
            if (!q || !q->wide || q->shape == s->shape || s->m == 0)
                continue;
            if ((q->shape & ~s->shape) || !(s->x[o] = plan_widen(p, q->shape, s->shape)))
                return errorf(err, (q->shape & ~s->shape) ? FC_ERR_VALUE : FC_ERR_NOMEM,
                              (q->shape & ~s->shape) ? "cpu kernel: an operand varies where its reader does not"
                                                     : "out of memory");
            s->xes[o] = (int)q->esize;
            s->xrep[o] = widen_rep(p, q->shape, s->shape);
            s->xcyc[o] = widen_cycle(p, q->shape, s->shape);
            s->widens = true;
        }
    }
    mark_fill(&p->steps[p->res], chunk_width(p, p->cl));
    const Step *rs = &p->steps[p->res];
    if (p->span && rs->wide && rs->shape != p->ckmask) {
        if (!(p->xres = plan_widen(p, rs->shape, p->ckmask)))
            return errorf(err, FC_ERR_NOMEM, "out of memory");
        p->xrep = widen_rep(p, rs->shape, p->ckmask);
        p->xcyc = widen_cycle(p, rs->shape, p->ckmask);
    }
    p->flat_scatter = true;
    for (int g = 0; g < k->nscatter; g++)
        p->flat_scatter = p->flat_scatter && !p->steps[p->sphys[g]].wide;
    for (int g = 0; g < k->nscatter && !p->flat_scatter; g++)
        mark_fill(&p->steps[p->sphys[g]], chunk_width(p, p->cl));
    if (!plan_rowops(p))
        return errorf(err, FC_ERR_NOMEM, "out of memory");
    FcStatus st = plan_pre(p, err);
    if (st != FC_OK)
        return st;
    p->nmemo = 0;
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        s->memo = j >= p->ninv && (!s->wide || memo_wide(s)) && !s->dead && !s->pre && hoist && may_hold(p, s)
                      ? p->nmemo++
                      : -1;
        const Step *q = j > p->ninv ? &p->steps[j - 1] : NULL;
        s->memo_as_prev = s->memo >= 0 && q && q->memo >= 0 && q->parent == s->parent && q->deps == s->deps;
        s->narrow = s->in->op == FC_OP_LOAD && !s->wide && !s->fill;
        s->chain = !s->memo_as_prev ? s->memo : q->chain;
    }
    /* A memoised value read only inside its own chain is never copied back from its table:
     * whenever the chain runs, it is computed. */
    for (int j = p->ninv; j < p->nsteps; j++) {
        const Step *s = &p->steps[j];
        for (int o = 0; o < step_operands(s); o++) {
            int v = step_operand(s, o);
            if (v < 0)
                continue;
            Step *q = &p->steps[v];
            if (q->memo >= 0 && !(s->memo >= 0 && s->chain == q->chain))
                q->restore = true;
        }
    }
    p->steps[p->res].restore = true;
    for (int g = 0; g < k->nscatter; g++)
        p->steps[p->sphys[g]].restore = true;
    /* A bound is read at position 0 where its reduction starts: one that varies along the
     * chunk (a per-position bound of a wide reduction) is not used (FC_BOOL marks it); the body
     * then still holds its mask (the scheduler drops a mask only when its bounds do not vary
     * along the chunk). Whether it varies is its loops', not its wide mark: unhoisted, every
     * value is computed over the chunk but a bound that does not vary is still one value. */
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        for (int b = 0; fc_op_is_reduce(s->in->op) && b < s->in->nbound; b++)
            if (p->steps[s->bvals[b]].deps & chunk_mask(p, s->cx))
                s->bdt[b] = FC_BOOL;
    }
    size_t nfill = 0;
    for (int j = 0; j < p->nsteps; j++)
        if (fc_op_is_reduce(p->steps[j].in->op) && p->steps[j].in->nbound > 0)
            nfill++;
    if (nfill) {
        p->fills = fc_cpu_aligned_alloc(nfill * p->cbytes);
        if (!p->fills)
            return errorf(err, FC_ERR_NOMEM, "out of memory");
        char *f = p->fills;
        for (int j = 0; j < p->nsteps; j++) {
            Step *s = &p->steps[j];
            if (!fc_op_is_reduce(s->in->op) || s->in->nbound == 0)
                continue;
            fc_cpu_fill(f, s->in->src_dtype, s->in->fill, p->cap);
            s->fillv = f;
            f += p->cbytes;
        }
    }
    /* A scattered run held back is written late (defer_run): never when a load reads the
     * output's storage (a later chunk would read it before the write), nor from converted
     * values (they sit in a thread buffer that the next chunk overwrites). */
    p->defer = p->scatter && p->flat_scatter && !k->accumulate && !p->store_cast;
    for (int b = 0; b < k->nbufs; b++)
        p->defer = p->defer && k->bufs[b] != k->out;
    return plan_buffers(p, err);
}

/* Buffers by liveness (fcdim's fc_kplan_live, over the values the steps read after the CPU's
 * fusions: a select reads the compared value, weighted rows their weights and rows), in the order
 * the steps run (the plan's seq: a reduction's body before the reduction): invariant values get
 * shared buffers, memoised ones buffers of their own; the rest are reused. */
static FcStatus plan_buffers(Plan *p, FcError *err)
{
    const FcKernel *k = p->k;
    const FcPlan *kp = p->kp;
    int n = p->nsteps, nreads = 0;
    for (int j = 0; j < n; j++)
        nreads += step_operands(&p->steps[j]);
    int *seq = mem_malloc((size_t)(n + 1) * sizeof *seq), *first = mem_malloc((size_t)(n + 2) * sizeof *first);
    int *reads = mem_malloc((size_t)(nreads + 1) * sizeof *reads), *last = mem_malloc((size_t)(n + 1) * sizeof *last);
    int *ilast = mem_malloc((size_t)(n + 1) * sizeof *ilast);
    int *phys = mem_malloc((size_t)(n + 1) * sizeof *phys), *freel = mem_malloc((size_t)(n + 1) * sizeof *freel);
    FcStatus st = FC_OK;
    if (!seq || !first || !reads || !last || !ilast || !phys || !freel) {
        st = errorf(err, FC_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* the reads by instruction (steps are in the plan's order: step kp->pos[i] is instruction i) */
    first[0] = 0;
    for (int i = 0; i < n; i++) {
        const Step *s = &p->steps[kp->pos[i]];
        first[i + 1] = first[i];
        for (int o = 0; o < step_operands(s); o++) {
            int v = step_operand(s, o);
            reads[first[i + 1]++] = v >= 0 ? (int)(p->steps[v].in - k->code) : -1;
        }
    }
    fc_kplan_live(kp, k, first, reads, ilast);
    for (int q = 0; q < n; q++)
        seq[q] = kp->pos[kp->seq[q]];
    for (int i = 0; i < n; i++)
        last[kp->pos[i]] = ilast[i];
    int nfree = 0, nlocal = 0, nshared = 0;
    for (int q = 0; q < n; q++) {
        int j = seq[q];
        Step *s = &p->steps[j];
        bool inv = j < p->ninv, sticky = inv || s->memo >= 0;
        phys[j] = inv ? -(nshared++ + 2) : !sticky && nfree > 0 ? freel[--nfree] : nlocal++;
        /* Free what is read for the last time here (after choosing phys[j]: no aliasing), and
         * a value nothing reads. */
        for (int o = -1; o < step_operands(s); o++) {
            int v = o < 0 ? j : step_operand(s, o);
            if (v < 0 || last[v] != q || v < p->ninv || p->steps[v].memo >= 0)
                continue;
            freel[nfree++] = phys[v];
            last[v] = -1;       /* freed once */
        }
    }
    p->nshared = nshared;
    p->nphys = nshared + nlocal;
#define FINAL(x) ((x) < 0 ? p->nphys : phys[x] <= -2 ? -phys[x] - 2 : nshared + phys[x])
    for (int j = 0; j < n; j++) {
        Step *s = &p->steps[j];
        const FcInstr *in = s->in;
        s->d = FINAL(j);
        s->a = FINAL(s->a);
        s->b = FINAL(s->b);
        s->c = FINAL(s->c);
        for (int g = 0; in->op == FC_OP_LOAD && g < in->ngather; g++)
            s->g[g] = FINAL(s->g[g]);
        for (int b = 0; fc_op_is_reduce(in->op) && b < in->nbound; b++)
            s->bvals[b] = FINAL(s->bvals[b]);
        for (int q = 0; q < s->nterm; q++) {
            s->term[q].w = FINAL(s->term[q].w);
            s->term[q].v = FINAL(s->term[q].v);
            s->term[q].r = FINAL(s->term[q].r);
        }
    }
    p->res = FINAL(p->res);
    for (int g = 0; g < p->k->nscatter; g++)
        p->sphys[g] = FINAL(p->sphys[g]);
#undef FINAL
    if (nshared > 0) {
        p->shared = fc_cpu_aligned_alloc((size_t)nshared * p->cbytes);
        if (!p->shared)
            st = errorf(err, FC_ERR_NOMEM, "out of memory");
    }
done:
    mem_free(seq);
    mem_free(first);
    mem_free(reads);
    mem_free(last);
    mem_free(ilast);
    mem_free(phys);
    mem_free(freel);
    return st;
}

/* The step of operand o (0: a, 1: b, 2: c) of step j as the kernel's plan gives it, or -1. */
static int operand_step(const Plan *p, int j, int o)
{
    int v = p->kp->opv[3 * (p->steps[j].in - p->k->code) + o];
    return v >= 0 ? p->kp->pos[v] : -1;
}

/* Gating (eval_gated). A gradient's scatter-add of a masked value, where(cond, v, 0) or
 * where(cond, v, 0) * w with cond and w one value per chunk (roi_align's samples past a box's
 * grid, ADAPTIVE's padded sample loops), adds zeros wherever cond is false: those chunks are
 * not stored, nor is what only the store needs computed (the product, the scatter indices).
 * Exactly what adding them gives, bar the sign of a zero sum: x + 0 is x, and 0 * w is a zero
 * for a finite w (a w that is not finite is multiplied and added, giving the NaN PyTorch
 * gives). torchvision's backward never visits those samples either. Only a store that cannot
 * fail (FcKernel.checked: the indices are those its forward read): an index out of range at a
 * skipped point would go unreported. The split points are wide steps, so no memo chain or run
 * of precomputed steps straddles them, and cond and w are live there (the where and the product
 * read them). After plan_loops (buffers). */
static void plan_gate(Plan *p)
{
    const FcKernel *k = p->k;
    if (!p->scatter || !k->accumulate || !k->checked || p->span || p->reduce)
        return;
    int r = p->kp->pos[p->kp->res];
    if (r < p->ninv || r >= p->ntop || !p->steps[r].wide)
        r = -1;
    int where = -1, mul = 0, w = -1;
    if (r >= 0 && p->steps[r].in->op == FC_OP_WHERE) {
        where = r;
    } else if (r >= 0 && p->steps[r].in->op == FC_OP_MUL && !p->steps[r].nterm && !p->steps[r].widens) {
        int a = operand_step(p, r, 0), b = operand_step(p, r, 1);
        for (int o = 0; o < 2 && where < 0; o++) {
            int x = o ? b : a, y = o ? a : b;
            if (x >= p->ninv && y >= 0 && p->steps[x].in->op == FC_OP_WHERE && !p->steps[y].wide)
                where = x, w = y;
        }
        mul = r;
        FcDType dt = w >= 0 ? p->steps[w].in->dtype : FC_BOOL;
        if (dt != FC_FLOAT32 && dt != FC_FLOAT64)
            where = -1;
    }
    if (where < p->ninv || !p->steps[where].wide || p->steps[where].sel || p->steps[where].widens)
        return;
    const FcInstr *in = p->steps[where].in;
    int c = operand_step(p, where, 0), z = operand_step(p, where, 2);
    if (c < 0 || z < 0 || p->steps[c].wide || p->steps[c].dead || p->steps[c].in->dtype != FC_BOOL ||
        p->steps[z].in->op != FC_OP_CONST || (in->dtype != FC_FLOAT32 && in->dtype != FC_FLOAT64) ||
        p->steps[z].in->konst.f != 0.0)
        return;
    /* the product is the where's only reader (the where is then left out where cond is false) */
    for (int j = p->ninv; mul && j < p->nsteps; j++) {
        const FcInstr *q = p->steps[j].in;
        int i = (int)(q - k->code), wc = (int)(p->steps[where].in - k->code);
        for (int o = 0; o < 3; o++)
            if (j != mul && operand_step(p, j, o) == where)
                return;
        for (int g = 0; q->op == FC_OP_LOAD && g < q->ngather; g++)
            if (p->kp->gopv[p->kp->goff[i] + g] == wc)
                return;
        for (int b = 0; fc_op_is_reduce(q->op) && b < q->nbound; b++)
            if (p->kp->bopv[p->kp->boff[i] + b] == wc)
                return;
    }
    /* A narrow pass leaves out the wide steps before the product: not when one could fail (a
     * gather's index out of range, an integer division by zero, in a reduction's body), which
     * must be reported whether or not cond holds. */
    p->gate_narrow = true;
    for (int j = p->ninv; j < (mul ? mul : where); j++) {
        const FcInstr *q = p->steps[j].in;
        if (p->steps[j].wide && ((q->op == FC_OP_LOAD && q->ngather > 0) || fc_op_is_reduce(q->op) ||
                                 ((q->op == FC_OP_FLOORDIV || q->op == FC_OP_MOD || q->op == FC_OP_FMOD) &&
                                  q->dtype != FC_FLOAT32 && q->dtype != FC_FLOAT64)))
            p->gate_narrow = false;
    }
    p->gate_where = where;
    p->gate_zero = z;
    p->gate_mul = mul;
    p->gate_cond = c;
    p->gate_w = w;
}

/* A gated store's where with cond true: cond holds one value, so it holds over the chunk and
 * the where is v itself, bit for bit; the product may read v where it lies (a load read in
 * place: roi_align's staged cotangent row), or in v's buffer unless a step up to the product
 * writes that buffer (eval_gated). After plan_index (in-place loads) and plan_memo. */
static void plan_gate_v(Plan *p)
{
    p->gate_v = -1;
    int where = p->gate_where, mul = p->gate_mul;
    if (!where || !mul || p->steps[where].memo >= 0)
        return;
    int v = operand_step(p, where, 1);
    if (v < p->ninv || !p->steps[v].wide || p->steps[v].in->dtype != p->steps[where].in->dtype)
        return;
    for (int j = where + 1; j <= mul && !p->steps[v].inplace; j++)
        if (p->steps[j].d == p->steps[v].d)
            return;
    p->gate_v = v;
}

/* Chooses the chunk loop and the shape of the iteration. */
static FcStatus plan_loops(Plan *p, const FcKernel *k, FcError *err)
{
    p->L = k->nloop > 0 ? k->nloop : 1;
    p->total = 1;
    p->work = 1;
    for (int l = 0; l < p->L; l++) {
        p->ext[l] = k->nloop > 0 ? k->extent[l] : 1;
        p->red[l] = k->nloop > 0 && p->reduce && k->reduced[l];
        p->ostr[l] = k->nloop > 0 && !p->red[l] ? k->out_strides[l] : 0;
        if (k->nloop == 0 || k->owner[l] < 0)
            p->total = sat_mul(p->total, p->ext[l]);
        p->work = sat_mul(p->work, p->ext[l]);
    }
    p->idx32 = spans_fit(p);
    FcStatus st = plan_chunk_loop(p, err);
    if (st != FC_OK)
        return st;
    int cl = p->cl;
    p->hor = p->red[cl];
    p->argloop = -1;
    int nred_loops = 0;
    for (int l = 0; l < p->L; l++) {
        if (p->red[l]) {
            nred_loops++;
            p->argloop = l;
        }
        if ((p->ckmask >> l & 1) || (k->nloop > 0 && k->owner[l] >= 0))
            continue;
        if (p->red[l])
            p->rl[p->nrl++] = l;
        else
            p->kl[p->nkl++] = l;
    }
    if (p->r.arg && nred_loops > 1)
        return errorf(err, FC_ERR_VALUE, "cpu kernel: %s over %d loops", fc_op_name(k->reduce), nred_loops);
    plan_owner(p);
    p->nchunk = p->span ? 1 : p->ext[cl] / FC_CHUNK + (p->ext[cl] % FC_CHUNK != 0);   /* no overflow */
    p->group = p->reduce && !p->hor ? VERT_GROUP : 1;
    p->ngroup = (p->nchunk + p->group - 1) / p->group;
    p->lk = !p->hor && p->nkl > 0 ? p->kl[p->nkl - 1] : -1;
    p->tile = 1;
    /* A store that reads (or writes) along lk where it strides along cl, as a transpose does:
     * tiles of lk make the chunks of neighbouring units share cache lines and pages. A
     * scattered store takes no tiles, so that its units run in the order of the loop nest. */
    if (!p->reduce && p->lk >= 0 && !p->scatter && !p->span) {
        bool across = llabs(p->ostr[cl]) > 1 && llabs(p->ostr[p->lk]) == 1;
        for (int j = p->ninv; j < p->nsteps; j++) {
            const Step *s = &p->steps[j];
            if (s->in->op == FC_OP_LOAD && !s->per_element)
                across |= llabs(s->strides[cl]) > 1 && llabs(s->strides[p->lk]) == 1;
        }
        if (across)
            p->tile = TILE;
        const Step *s = p->ntop == p->ninv + 1 && p->nsteps == p->ntop ? &p->steps[p->ninv] : NULL;
        bool copy = across && s && s->d == p->res && s->in->op == FC_OP_LOAD && s->in->ngather == 0 && s->wide &&
                    !p->store_cast && p->out_es == 4 && p->group == 1 && p->ext[p->lk] >= 8 &&
                    k->bufs[s->in->buf] != k->out;
        p->tcopy = copy && ((p->ostr[cl] == 1 && s->strides[p->lk] == 1 && llabs(s->strides[cl]) > 1) ||
                            (p->ostr[p->lk] == 1 && s->strides[cl] == 1 && llabs(p->ostr[cl]) > 1));
    }
    int64_t kept = 1, reduced = 1;
    for (int j = 0; j < p->nkl; j++)
        kept = sat_mul(kept, p->ext[p->kl[j]]);
    for (int j = 0; j < p->nrl; j++)
        reduced = sat_mul(reduced, p->ext[p->rl[j]]);
    p->nunits = p->hor ? kept : sat_mul(kept, p->ngroup);
    if (p->own)
        p->outer = p->inner > 0 ? kept / p->inner : 0;
    p->nred = p->hor ? sat_mul(reduced, p->nchunk) : reduced;
    if (p->nunits == INT64_MAX || p->nred == INT64_MAX)
        return errorf(err, FC_ERR_VALUE, "cpu kernel: the loop nest is too large");
    return FC_OK;
}

/* The memo tables. A memoised step is computed once per point of its loops while they hold; a
 * loop it does not vary along that cycles outside some of its loops (roi_align's y over (box,
 * bin row, sample row) sits in the loop over the bin column, and the sample rows cycle inside
 * that) would make it recompute at every turn, so the loops inside the first such loop get a
 * table: one entry per point, kept for as long as the loops outside it (its key) stay. The order
 * is that of the iteration: kept root loops, the root chunk loop, reduced root loops, then each
 * inner reduction's loops. The steps of a chain share the check, so the first one's table is
 * theirs. */
static FcStatus plan_memo(Plan *p, FcError *err)
{
    int order[FC_MAX_DIMS], no = 0;
    for (int j = 0; j < p->nkl; j++)
        order[no++] = p->kl[j];
    for (int j = 0; j < p->nck; j++)
        order[no++] = p->ck[j];
    for (int j = 0; j < p->nrl; j++)
        order[no++] = p->rl[j];
    for (int j = p->ninv; j < p->nsteps; j++) {
        const Step *s = &p->steps[j];
        for (int i = 0; fc_op_is_reduce(s->in->op) && i < s->nrl && no < FC_MAX_DIMS; i++)
            order[no++] = s->rl[i];
        if (fc_op_is_reduce(s->in->op) && s->rcl >= 0 && no < FC_MAX_DIMS)
            order[no++] = s->rcl;
    }
    size_t entries = 0;
    int64_t tsize = 1;          /* entries of the current chain's table */
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->memo < 0)
            continue;
        if (!s->memo_as_prev) {     /* the chain's first step: its table */
            int i = 0;
            for (; i < no; i++) {
                int l = order[i];
                if (cycles(p, s->cx, l) && !(s->deps >> l & 1))
                    break;
            }
            size_t len = 0;     /* the chain's steps that restore, each a table of values */
            for (int q = 0; q == 0 || (j + q < p->nsteps && s[q].memo_as_prev); q++)
                len += s[q].restore;
            len = len * (size_t)(s->wide ? s->m : 1) + 1;   /* and the stamps */
            s->tab = 0;
            s->ntl = 0;
            int64_t size = 1;
            for (int q = no - 1; q > i; q--) {
                int l = order[q];
                if (!(s->deps >> l & 1) || p->ext[l] <= 1)
                    continue;
                if (p->ext[l] > MEMO_TABLE / size || entries + (size_t)(size * p->ext[l]) * (len + 1) > MEMO_ENTRIES)
                    break;      /* the loops further out stay in the key */
                s->tab |= (uint64_t)1 << l;
                s->tl[s->ntl].loop = l;
                s->tl[s->ntl++].str = size;
                size *= p->ext[l];
            }
            s->tsize = size;
            s->key = s->deps & ~s->tab & ~chunk_mask(p, s->cx);
            s->stamp0 = p->nstamps;
            p->nstamps += (size_t)size;
            entries += (size_t)size;
            tsize = size;
        }
        if (!s->restore)        /* computed whenever its chain runs: never kept */
            continue;
        s->val0 = p->nvals;     /* a value per entry of its chain's table */
        p->nvals += (size_t)tsize * (size_t)(s->wide ? s->m : 1);
        entries += (size_t)tsize * (size_t)(s->wide ? s->m : 1);
    }
    /* a chain that holds is skipped: only its steps that restore are visited */
    p->rlist = mem_malloc((size_t)(p->nsteps + 1) * sizeof *p->rlist);
    if (!p->rlist)
        return errorf(err, FC_ERR_NOMEM, "out of memory");
    int nr = 0;
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->memo < 0 || s->memo_as_prev)
            continue;
        s->rfirst = nr;
        int q = j;
        for (; q < p->nsteps && (q == j || p->steps[q].memo_as_prev); q++)
            if (p->steps[q].restore) {
                const Step *r = &p->steps[q];
                p->rlist[nr++] = (Restore){.memo = r->memo, .d = r->d, .w = r->wide ? 0 : r->fill ? r->fillw : 1,
                                           .esize = (int)r->esize, .val0 = r->val0, .m = r->m};
            }
        s->rcount = nr - s->rfirst;
        s->chain_end = q;
    }
    return FC_OK;
}

/* Adds to *span the distance that index i in [0, ext) moves an access with this stride; false
 * when the total reaches 2^31 elements. */
static bool span_add(uint64_t *span, int64_t stride, int64_t ext)
{
    uint64_t a = stride < 0 ? -(uint64_t)stride : (uint64_t)stride;
    if (a == 0 || ext <= 1)
        return true;
    if (a > INT32_MAX || (uint64_t)(ext - 1) > INT32_MAX)
        return false;
    *span += a * (uint64_t)(ext - 1);
    return *span <= INT32_MAX;
}

/* Whether every access (the output over its loops, each load with its gathers) spans fewer
 * than 2^31 elements, and the kernel says its addresses fit in int32 (FcKernel.index32). */
static bool spans_fit(const Plan *p)
{
    uint64_t span = 0;
    bool ok = p->k->index32;
    for (int l = 0; l < p->L && ok; l++)
        ok = span_add(&span, p->ostr[l], p->ext[l]);
    for (int j = 0; j < p->nsteps && ok; j++) {
        const Step *s = &p->steps[j];
        const FcInstr *in = s->in;
        if (in->op != FC_OP_LOAD)
            continue;
        span = 0;
        for (int l = 0; l < p->L && ok; l++)
            ok = span_add(&span, s->strides[l], p->ext[l]);
        for (int g = 0; g < in->ngather && ok; g++)
            ok = span_add(&span, in->gathers[g].stride, in->gathers[g].extent);
    }
    return ok;
}

/* Whether a load reads through a table of 32-bit offsets (Step.ramp): gathers element by
 * element always (flat ones read as the strided loads they are), and wide loads over several
 * loops of a chunk (unless the table is 0, 1, ...: Step.inplace); strided loads when
 * neighbouring elements share cache lines (about 10% faster than a stepping pointer
 * at stride 2 to 4 floats). Where each element is a line of its own, as in a transpose, the
 * table costs a load per element: measured 7-10% slower on 256^2 and 512^2 float transposes
 * held in cache, 2% at 1024^2, and only at 4096^2 (a TLB miss per element) 7% faster. */
static bool needs_ramp(const Step *s)
{
    int64_t stride = s->cstride, near = NEAR_STRIDE_BYTES / (int64_t)s->esize;
    if (s->per_element)
        return true;
    if (!s->wide)
        return false;
    if (s->shape & (s->shape - 1))
        return !s->inplace;
    return stride != 0 && stride != 1 && stride >= -near && stride <= near;
}

/* Chooses the width of the offsets within a chunk. An offset is the distance between two
 * elements of one access (a load over the loop nest and its gathered indices, or the output
 * over the loops it is written along), so it fits in int32 when each access spans fewer than
 * 2^31 elements. The kernel's index32 (all addresses fit in int32, which implies this for
 * addresses into real buffers) asks for 32 bits; the spans are checked here all the same, so a
 * kernel that claims it wrongly runs on the 64-bit path instead of overflowing. Then each load's
 * stride along its chunk, its table of offsets, and (a span) the output's. */
/* Whether a span's store is a transpose: its loops split into outer ones A and inner ones B,
 * with A's positions at output offsets 0, 1, ... and B's at multiples of a stride (its
 * positions taken row-major within each part), as a reduction over bins of channels_last
 * taps written NCHW is. Sets trr, trc, trld. */
static bool plan_transpose(Plan *p)
{
    for (int j = 1; j < p->nck; j++) {
        uint64_t a = 0, b = 0;
        for (int q = 0; q < p->nck; q++)
            *(q < j ? &a : &b) |= (uint64_t)1 << p->ck[q];
        int64_t ld = p->ostr[p->ck[p->nck - 1]], str[FC_MAX_DIMS];
        shape_strides(p, b, str);
        bool ok = row_major(p, a, p->ostr) && ld >= shape_size(p, a);
        for (int q = j; q < p->nck && ok; q++)
            ok = p->ostr[p->ck[q]] == ld * str[p->ck[q]];
        if (ok) {
            p->trr = (int)shape_size(p, a);
            p->trc = (int)shape_size(p, b);
            p->trld = ld;
            return true;
        }
    }
    return false;
}

static FcStatus plan_index(Plan *p, const FcKernel *k, FcError *err)
{
    const int64_t *ext = p->ext;
    int cl = p->cl;
    int nramp = 0;
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->in->op != FC_OP_LOAD)
            continue;
        bool one = s->shape != 0 && !(s->shape & (s->shape - 1));
        s->cstride = one ? s->strides[__builtin_ctzll(s->shape)] : 0;
        s->inplace = s->wide && !s->per_element && s->shape && row_major(p, s->shape, s->strides);
        bool run = s->rows > 0 && row_major(p, s->shape & ~s->outer, s->strides);
        s->rampz = true;
        for (uint64_t d = s->rows > 0 ? s->outer : s->shape; d; d &= d - 1)
            s->rampz = s->rampz && s->strides[__builtin_ctzll(d)] == 0;
        /* Two wide indices, one repeated and one cycled as widely, nothing else moving: the
         * offsets are their outer sum (bilinear taps: y's row offset plus x's). */
        int wide[3], nw = 0;
        for (int g = 0; s->per_element && g < s->in->ngather && nw < 3; g++)
            if (s->gx[g].wide)
                wide[nw++] = g;
        s->osum = 0;
        if (p->idx32 && s->rampz && nw == 2) {
            const GatherX *x0 = &s->gx[wide[0]], *x1 = &s->gx[wide[1]];
            int r = x0->xrep > 0 && x0->xrep == x1->xcyc ? 0 : x1->xrep > 0 && x1->xrep == x0->xcyc ? 1 : -1;
            if (r >= 0 && x0->x && x1->x) {
                s->og[0] = wide[r];
                s->og[1] = wide[1 - r];
                s->osum = s->gx[s->og[0]].xrep;
            }
        }
        nramp += needs_ramp(s) + (s->rows > 0 && !run);
    }
    if (!p->idx32)
        return FC_OK;
    p->ostr32 = ext[cl] > 1 ? (int32_t)p->ostr[cl] : 0;
    if (p->span && !row_major(p, p->ckmask, p->ostr) && !plan_transpose(p)) {
        p->otab = mem_malloc((size_t)p->span * sizeof *p->otab);
        if (!p->otab)
            return errorf(err, FC_ERR_NOMEM, "out of memory");
        shape_table(p, p->ckmask, p->ostr, p->otab, p->span);
    }
    if (nramp == 0)
        return FC_OK;
    p->ramps = mem_malloc((size_t)nramp * (size_t)p->cap * sizeof *p->ramps);
    if (!p->ramps)
        return errorf(err, FC_ERR_NOMEM, "out of memory");
    /* Only the first positions(s) entries are ever read; the rest stay 0 rather than overflow. */
    int32_t *r = p->ramps;
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->in->op != FC_OP_LOAD || !needs_ramp(s))
            continue;
        memset(r, 0, (size_t)p->cap * sizeof *r);
        if (s->outer)
            shape_table(p, s->outer, s->strides, r, p->cap);
        s->ramp = r;
        r += p->cap;
        if (s->rows > 0 && !row_major(p, s->shape & ~s->outer, s->strides)) {
            shape_table(p, s->shape & ~s->outer, s->strides, r, p->cap);     /* within a row */
            s->iramp = r;
            r += p->cap;
        }
    }
    return FC_OK;
}

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

/* d[i] = *src for i < n, by element size, in loops GCC vectorises: a value that holds along a
 * row (s[idx] in x[idx] * s[idx]) is broadcast for every chunk of the row. */
static void broadcast(void *d, const void *src, size_t es, int n)
{
    switch (es) {
    case 1:
        memset(d, *(const uint8_t *)src, (size_t)n);
        break;
    case 2: {
        uint16_t v, *q = d;
        memcpy(&v, src, 2);
        CHUNK_LOOP(n, q[i] = v);
        break;
    }
    case 4: {
        uint32_t v, *q = d;
        memcpy(&v, src, 4);
        CHUNK_LOOP(n, q[i] = v);
        break;
    }
    default: {
        uint64_t v, *q = d;
        memcpy(&v, src, 8);
        CHUNK_LOOP(n, q[i] = v);
        break;
    }
    }
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
            broadcast(q, (const char *)v + (size_t)j * es, es, rep);
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
 * tap. plan_rowops makes a sum of such products (x + w0 * rows0 + w1 * rows1 ..., added in
 * that order) one step that reads the rows where they lie: the same products and sums, rounded
 * the same way (a * b + c is not contracted in ISO C mode), in one pass. */
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

/* Writes n values from src to the output at element off, stepping along the chunk loop (or over
 * the loops of a spanning chunk). */
/* dst[b * ld + a] = src[a * sld + b], a < r, b < c: a span's transposing store (plan_transpose,
 * sld = c), or a block of a transposing copy straight from its input (copy_units).
 * 4-byte elements go by 8 x 8 blocks, each eight vector loads, a transpose in registers
 * (GCC's vector shuffles: AVX's unpack, shuffle and lane permute at -mavx2) and eight vector
 * stores; the edges and other sizes element by element. */
typedef uint32_t U32x8v __attribute__((vector_size(32)));
#if defined(__clang__)
#define SHUF(x, y, ...) __builtin_shufflevector(x, y, __VA_ARGS__)
#else
#define SHUF(x, y, ...) __builtin_shuffle(x, y, (U32x8v){__VA_ARGS__})
#endif
CPU_CLONES static void store_transposed(char *dst, const void *src, int r, int c, int64_t sld, int64_t ld, size_t es)
{
    int a0 = 0, b0 = 0;
    if (es == 4) {
        const uint32_t *x = src;
        uint32_t *d = (uint32_t *)(void *)dst;
        for (; a0 + 8 <= r; a0 += 8) {
            for (b0 = 0; b0 + 8 <= c; b0 += 8) {
                U32x8v v[8], t[8], u[8];
                _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
                    memcpy(&v[k], x + (a0 + k) * sld + b0, sizeof v[k]);
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
                    U32x8v lo = SHUF(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
                    U32x8v hi = SHUF(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
                    memcpy(d + (int64_t)(b0 + k) * ld + a0, &lo, sizeof lo);
                    memcpy(d + (int64_t)(b0 + k + 4) * ld + a0, &hi, sizeof hi);
                }
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
#undef SHUF

static void store_chunk(const Plan *p, int64_t off, const void *src, int n)
{
    char *dst = (char *)p->k->out + off * (int64_t)p->out_es;
    if (p->trc)
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

/* Writes n values from src at the element offsets o, in order: of duplicates the last stays. */
static void scatter_store(const Plan *p, const int64_t *o, const void *src, int n)
{
    switch (p->out_es) {
    case 1: {
        uint8_t *q = p->k->out;
        const uint8_t *s = src;
        for (int i = 0; i < n; i++)
            q[o[i]] = s[i];
        break;
    }
    case 2: {
        uint16_t *q = p->k->out;
        const uint16_t *s = src;
        for (int i = 0; i < n; i++)
            q[o[i]] = s[i];
        break;
    }
    case 4: {
        uint32_t *q = p->k->out;
        const uint32_t *s = src;
        for (int i = 0; i < n; i++)
            q[o[i]] = s[i];
        break;
    }
    default: {
        uint64_t *q = p->k->out;
        const uint64_t *s = src;
        for (int i = 0; i < n; i++)
            q[o[i]] = s[i];
        break;
    }
    }
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
            scatter_store(p, t->offs, src, n);
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

static bool do_load(const Plan *p, const Step *s, Thread *t, int64_t i0, int m, bool wide)
{
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
        broadcast(d, src, es, m);
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
        broadcast(d, t->tvals + (r->val0 + (size_t)e) * 8, (size_t)r->esize, r->w);
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
    broadcast(t->tvals + (s->val0 + (size_t)e) * 8, t->buf[s->d], s->esize, 1);
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
        broadcast(p->pretab + q->pre0, t->cur[q->d], q->esize, p->pmost);
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
            int loops[FC_MAX_DIMS], nl = shape_loops(p, s->deps, loops);
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
                              (int)shape_size(p, q->deps), c->ga);
    }
}

/* The precomputed steps of head s's run that others read, pointed at their values for the
 * current loop indices (or a value broadcast where it is read beyond position 0). */
static void pre_point(const Plan *p, Thread *t, const Step *s)
{
    const struct TabLoop *tl = NULL;
    int64_t e = 0;
    for (const PreX *x = p->plist + s->pfirst, *end = x + s->pcount; x < end; x++) {
        if (x->tl != tl) {      /* values over the loops of the one before share its entry */
            tl = x->tl;
            e = tab_entry(tl, x->nl, t->idx);
        }
        const char *v = p->pretab + x->pre0 + (size_t)e * (size_t)x->esize;
        if (x->w && !t->narrow) {
            broadcast(t->buf[x->d], v, (size_t)x->esize, x->w);
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
            broadcast(d, d, s->esize, s->fillw);
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
    for (int j = from; j < to; j++) {
        const Step *s = &p->steps[j];
        const FcInstr *in = s->in;
        if (s->skip) {
            if (s->pcount)
                pre_point(p, t, s);
            j = s->skip - 1;
            continue;
        }
        if (s->memo >= 0 && !s->memo_as_prev && memo_holds(p, t, s)) {
            memo_restore(t, p->rlist + s->rfirst, s->rcount, t->ment[s->memo], t->mgen[s->memo]);
            j = s->chain_end - 1;
            continue;
        }
        if (t->narrow && s->wide && s->memo < 0)
            continue;
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
            bool narrow = t->narrow;
            t->narrow = false;      /* its body runs along a loop of its own: in full */
            bool ok = eval_reduce(p, t, s, i0, n);
            t->narrow = narrow;
            if (!ok)
                return false;
            break;
        }
        default: {
            const void *a = t->cur[s->a], *b = t->cur[s->b], *c = t->cur[s->c];
            if (s->nterm) {
                eval_rows(p, t, s, d, a);
                break;
            }
            if (s->widens) {
                a = widened(p, t, s, 0, a, m);
                b = widened(p, t, s, 1, b, m);
                c = widened(p, t, s, 2, c, m);
            }
            if (s->sel)
                s->sel(d, a, b, c, s->selk, m);
            else if (s->fn(d, a, b, c, m) != CPU_OK)
                return fail(t, FC_ERR_RUNTIME, "ZeroDivisionError");
            if (!s->wide && fw > 1)
                broadcast(d, d, s->esize, fw);
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
    return eval(p, t, p->ninv, p->ntop, i0, n);
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
 * units of one tile share their chunks, so that a load running along lk reuses cache lines. */
/* Where unit u lies in its tile: lk's index is *first + *row, of the tile's *rows, over group
 * *grp of chunks; returns the number of the outer kept loops' point. */
static int64_t tile_place(const Plan *p, int64_t u, int64_t *first, int64_t *row, int64_t *rows, int64_t *grp)
{
    int64_t e = p->lk >= 0 ? p->ext[p->lk] : 1, g = p->ngroup, tl = p->tile;
    int64_t r = u % (e * g), tile = r / (tl * g), rr = r % (tl * g);
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
    *c0 = grp * p->group;
    int64_t left = p->nchunk - *c0;
    *nc = left < p->group ? (int)left : p->group;
}

static long narrow_skips;       /* fc_cpu_narrow_skips */

long fc_cpu_narrow_skips(void) { return __atomic_load_n(&narrow_skips, __ATOMIC_RELAXED); }

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
        return eval(p, t, p->gate_where + 1, p->ntop, i0, n);
    }
    if (!off)
        return eval(p, t, p->gate_where, p->ntop, i0, n);
    /* the where gives its zero everywhere: made only when the product needs it (w not finite) */
    if (narrow && !eval(p, t, p->gate_where + 1, p->gate_mul, i0, n))
        return false;
    const Step *ws = &p->steps[p->gate_where];
    fc_cpu_fill(t->buf[ws->d], ws->in->dtype, p->steps[p->gate_zero].in->konst, n);
    t->cur[ws->d] = t->buf[ws->d];
    return eval(p, t, p->gate_mul, p->ntop, i0, n);
}

/* Stores the n positions of cl from i0 at the kept loops' indices in t->idx (output offset base). */
static bool store_chunk_at(const Plan *p, Thread *t, int64_t base, int64_t i0, int n)
{
    if (p->gate_where) {
        bool skip;
        if (!eval_gated(p, t, i0, n, &skip))
            return false;
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
    if (!p->tcopy || u + 8 > u1)
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
    const Step *s = &p->steps[p->ninv];
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

static bool task_units(void *arg, int tid, int64_t task)
{
    Run *run = arg;
    const Plan *p = run->p;
    Thread *t = run->th[tid];
    int64_t u0 = task * run->units_per_task;
    int64_t u1 = u0 + run->units_per_task < p->nunits ? u0 + run->units_per_task : p->nunits;
    bool ok = true;
    for (int64_t u = u0; u < u1 && ok; u++) {
        if (eight_units(p, u, u1)) {
            copy_units(p, t, u);
            u += 7;
        } else {
            ok = p->reduce ? reduce_unit(p, t, u) : store_unit(p, t, u);
        }
    }
    flush_run(t);
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
        for (int64_t u = 0; u < p->inner && ok; u++, next_point(p, t, p->kl + p->nkown, p->nkl - p->nkown)) {
            int64_t base = out_base(p, t);
            for (int64_t i0 = lo; i0 < hi && ok; i0 += FC_CHUNK) {
                int n = hi - i0 < FC_CHUNK ? (int)(hi - i0) : FC_CHUNK;
                ok = store_chunk_at(p, t, base, i0, n);
                if (!ok)
                    t->err_task = (og * p->inner + u) * ext + i0;
            }
        }
        o = end;
    }
    flush_run(t);
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

static void threads_free(Thread **th, int n)
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
    return thread_head(p) + (size_t)(nlocal + 2 + p->nracc + 3) * cb + 2 * (size_t)p->group * CHUNK_BYTES + memo;
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
    memset(t->mgen, 0, ((size_t)p->nmemo * 4 + p->nstamps) * 8);
    t->err_task = -1;
    return t;
}

/* n threads for a run of p: the plan's own (kept from its last run, or made now: a plan run
 * again reuses their memory), each laid out as new. NULL on out-of-memory. */
static Thread **plan_threads(Plan *p, int n)
{
    if (p->nth < n) {
        threads_free(p->th, p->nth);
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

/* Checks and plans k into *p, which plan_free frees whatever the result. A kernel with nothing
 * to evaluate is planned as idle. */
static FcStatus plan_kernel(Plan *p, const FcKernel *k, FcError *err)
{
    *p = (Plan){.k = k};
    if (!k || k->nloop < 0 || k->nloop > FC_MAX_DIMS || k->ncode < 0 || k->nreg < 0 || (k->ncode > 0 && !k->code))
        return errorf(err, FC_ERR_VALUE, "cpu kernel: malformed kernel");
    if ((unsigned)k->out_dtype >= FC_DTYPE__COUNT)
        return errorf(err, FC_ERR_VALUE, "cpu kernel: bad output dtype");
    p->kp = k->plan;
    if (!p->kp) {
        FcStatus st = fc_kplan_new(k, "cpu", &p->made_plan, err);
        if (st != FC_OK)
            return st;
        p->kp = p->made_plan;
    }
    p->reduce = k->reduce != FC_OP_NONE;
    p->scatter = k->nscatter > 0 || k->accumulate;
    p->out_es = fc_dtype_size(k->out_dtype);
    if (p->scatter && p->reduce)
        return errorf(err, FC_ERR_VALUE, "cpu kernel: a scattered or accumulating store cannot reduce");
    FcStatus st = plan_code(p, k, err);
    if (st != FC_OK)
        return st;
    if (p->reduce) {
        if (!fc_op_is_reduce(k->reduce))
            return errorf(err, FC_ERR_VALUE, "cpu kernel: %s is not a reduction", fc_op_name(k->reduce));
        if (!fc_cpu_reducer_init(&p->r, k->reduce, p->res_dt, k->out_dtype))
            return errorf(err, FC_ERR_TYPE, "cpu kernel: %s of %s into %s is not supported", fc_op_name(k->reduce),
                          fc_dtype_name(p->res_dt), fc_dtype_name(k->out_dtype));
    } else if (p->res_dt != k->out_dtype) {
        p->store_cast = fc_cpu_op_fn(FC_OP_CAST, k->out_dtype, p->res_dt);
        if (!p->store_cast)
            return errorf(err, FC_ERR_TYPE, "cpu kernel: cannot store %s as %s", fc_dtype_name(p->res_dt),
                          fc_dtype_name(k->out_dtype));
    }
    st = plan_loops(p, k, err);
    if (st != FC_OK || p->nunits == 0) {
        p->idle = true;
        return st;
    }
    plan_gate(p);
    st = plan_memo(p, err);
    if (st == FC_OK)
        st = plan_runs(p, err);
    if (st != FC_OK)
        return st;
    st = plan_index(p, k, err);
    plan_gate_v(p);
    if (st == FC_OK && p->total == 0 && !p->reduce)
        p->idle = true;
    return st;
}

/* Runs plan p with k's buffers, output and interrupt: k is the kernel p was planned from, or one
 * that differs from it in those only. */
static FcStatus run_plan(CpuBackend *be, Plan *p, const FcKernel *k, FcError *err)
{
    p->k = k;
    if (p->idle)
        return FC_OK;
    if (p->nred == 0 && (p->r.arg || k->reduce == FC_OP_AMAX || k->reduce == FC_OP_AMIN))
        return errorf(err, FC_ERR_RUNTIME, "%s(): Expected reduction dim to have non-zero size.",
                      fc_op_name(k->reduce));
    if (!k->out)
        return errorf(err, FC_ERR_VALUE, "cpu kernel: no output");
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
            st = errorf(err, FC_ERR_NOMEM, "out of memory");
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
    th = plan_threads(p, nth);
    if (!th) {
        st = errorf(err, FC_ERR_NOMEM, "out of memory");
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
    for (int i = 1; i < nth; i++)
        for (int j = 0; j < p->nshared; j++)
            th[i]->cur[j] = th[0]->cur[j];
    bool ok = fc_cpu_parallel_for(be, nth, ntasks, own ? task_owner : run.split ? task_block : task_units, &run,
                                  k->interrupt);
    for (int i = 0; i < nth && p->gate_where; i++) {
        __atomic_fetch_add(&narrow_skips, th[i]->narrow_skips, __ATOMIC_RELAXED);
        th[i]->narrow_skips = 0;
    }
    Thread *bad = NULL;
    for (int i = 0; i < nth; i++)
        if (th[i]->err_task >= 0 && (!bad || th[i]->err_task < bad->err_task))
            bad = th[i];
    if (bad) {
        *err = bad->err;
        st = bad->status;
    } else if (!ok) {
        st = errorf(err, FC_ERR_INTERRUPT, "interrupted");
    } else if (run.split) {
        combine_blocks(&run, th[0]);
    }
done:
    mem_free(run.partials);
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
    FcStatus st = plan_kernel(&p, k, err);
    if (st == FC_OK)
        st = run_kept_plan(be, &p, k, err);
    plan_free(&p);
    return st;
}

FcStatus fc_cpu_prepare(CpuBackend *be, const FcKernel *k, void **handle, FcError *err)
{
    *handle = NULL;
    Plan *p = mem_malloc(sizeof *p);
    if (!p)
        return errorf(err, FC_ERR_NOMEM, "out of memory");
    FcStatus st = plan_kernel(p, k, err);
    if (st != FC_OK) {
        plan_free(p);
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
        plan_free(handle);
    mem_free(handle);
}
