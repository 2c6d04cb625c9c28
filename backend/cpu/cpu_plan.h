/* cpu_plan.h — the CPU executor: what its planning (cpu_plan.c: an FcKernel made a Plan) and its
 * execution (cpu_exec.c: a Plan run on the pool) share: the Plan, its Steps, the few functions
 * each side calls of the other; and how the executor works as a whole. It runs a scheduled
 * kernel (FcKernel) on the CPU: the loop nest walked in chunks of up to FC_CHUNK values, the
 * straight-line code evaluated chunk by chunk through the op tables of cpu_ops.c, the result
 * stored or reduced with the folds of cpu_reduce.c.
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
 *
 * Private to cpu_plan.c and cpu_exec.c. Depends on cpu_internal.h (backend.h, fcdim.h) only. */
#ifndef TDL_CPU_PLAN_H
#define TDL_CPU_PLAN_H

#include "cpu_internal.h"

#include <stddef.h>

enum {
    SMALL_WORK = 32 * 1024,     /* elements below which a kernel runs on the calling thread */
    TASK_WORK = 32 * 1024,      /* elements of work per task when spreading units */
    STREAM_BYTES = 16 << 20,    /* a fill at least this large bypasses the caches (Plan.stream) */
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
    PRUN_MIN = 8,               /* the shortest run a load in a span copies whole (Step.prun) */
    PRE_POS = 256 * 1024,       /* points of a precomputed step's loops at most (fc_cpu_target) ... */
    PRE_BYTES = 8 << 20,        /* ... and bytes of all of a kernel's tables */
    BAND_POINTS = 1 << 20,      /* points whose destination rows a band split reads at most ... */
    BAND_KEYS = 1 << 20,        /* ... and its rows at most (plan_band) */
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
    int step;                   /* the precomputed step */
    int d;                      /* its buffer */
    int w;                      /* 0: pointed at; else one value broadcast over w positions */
    int esize;
    bool tvar;                  /* it varies along the term level (Plan.term) ... */
    int64_t tstr;               /* ... by this many entries a term */
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

/* One instruction, with its registers renamed to physical buffers: a small core that any step
 * has, then what only one kind of step has, in a union by kind. What every evaluation reads
 * comes first, and the arrays over loops are elsewhere (Plan.pool): a list of steps is walked
 * for every chunk, so each visit should touch one or two cache lines (the first 64 bytes: any
 * visit; the next: a load's, or a select's constant). */
typedef struct Step {
    /* the first cache line: what every visit reads */
    const FcInstr *in;
    CpuOpFn fn;                 /* ops other than LOAD, CONST, IOTA */
    CpuSelFn sel;               /* WHERE_CMP (fcdim's fused select that compares with a constant,
                                   a the compared value): its function (plan_select), else NULL */
    int d, a, b, c;             /* physical buffers; absent operands name the NULL slot */
    int memo;                   /* kept across evaluations: its slot among the memoised steps,
                                   or -1 */
    bool dead;                  /* not evaluated: weighted rows that their reader computes (a
                                   MULADD of a chain, a weight's product), or a precomputed
                                   value that only precomputed values read */
    bool pre;                   /* precomputed (plan_pre): its values lie in a table filled before
                                   the units run, where the first step of its run points the
                                   steps that read it (skip) */
    bool memo_as_prev;          /* memoised, right after a memoised step of its list with the same
                                   loops: always computed and kept together, so one holds when
                                   the other does (a chain of coordinates is checked once) */
    bool wide;                  /* varies along its chunk: computed over it; else one value */
    bool fill;                  /* one value read beyond position 0: broadcast over fillw */
    bool widens;                /* an operand is read through a table (x[]) */
    int8_t one;                 /* a float MULADD of a wide factor and one of one value per chunk
                                   (roi_align's bilinear weights): that factor's operand (1 or
                                   2), read at position 0 and not broadcast (muladd_one); else 0 */
    bool per_element;           /* LOAD gathered through indices that vary along the chunk loop:
                                   each element addressed on its own (plan_marks) */
    bool inplace;               /* LOAD: a wide one read where it lies (its offsets are 0, 1, ...) */
    bool narrow;                /* LOAD of one value per chunk, read only at position 0 */
    uint8_t nterm;              /* weighted rows (plan_rowops, from a chain of MULADDs): a (or
                                   nothing, when a is absent) plus term[k], k < nterm, in that
                                   order; outside a span, a chain of Step.one's MULADDs (each
                                   term's w one value, r wide, no rowg); else 0 */
    bool rowdefer;              /* LOAD by rows read in place by its nterm reader: its buffer
                                   holds where the rows are (RowRef), not their values */
    int skip;                   /* the first of a run of steps not evaluated one by one (dead or
                                   precomputed): the step after the run, which a visit jumps to
                                   once it has pointed the run's precomputed values that others
                                   read at their tables (pfirst, pcount); else 0 (plan_runs) */
    int m;                      /* wide, in a list whose chunk spans several loops: its positions
                                   (those of its shape); else 0 (the chunk's) */
    /* the rest of the core: what any kind of step may have */
    int fillw;                  /* positions its readers read: the longest chunk of their lists */
    int chain_end;              /* the first step of a memo chain: the step after its last */
    size_t esize;               /* bytes per element of its value */
    /* What only one kind of step has. The kinds exclude one another (a step is one op; weighted
     * rows are a MULADD, a select is a WHERE_CMP), and each group is read and written only
     * where its kind is checked (in->op, nterm, sel): the groups share storage. Being memoised,
     * precomputed or read through widened operands is not a kind: any step may be, so those
     * fields stay in the core. */
    union {
        struct {                /* in->op == FC_OP_LOAD */
            const int64_t *strides;     /* [L] */
            int64_t cstride;            /* its stride along its shape's one loop (0 for several) */
            const int32_t *ramp;        /* read through 32-bit offsets (needs_ramp): the offset of
                                           each position of its shape (its rows) from the first,
                                           or NULL */
            int *g;                     /* [in->ngather] physical buffers of the gathered indices */
            GatherX *gx;                /* [in->ngather] how they are read (per_element) */
            bool rampz;                 /* its offsets along its shape (its rows) are all 0 */
            int osum, og[2];            /* gathered, with offsets that are an outer sum
                                           (plan_index): the offset of position a * osum + b is
                                           that of gathered index og[0] at a plus that of og[1]
                                           at b; else osum is 0 */
            int rows, rlen;             /* gathered, in a span, with indices that vary along none
                                           of its inner loops: read as rows (one offset each) of
                                           rlen values ... */
            const int32_t *iramp;       /* ... each through these offsets, or NULL: a contiguous
                                           run */
            uint64_t outer;             /* its rows' loops (the others are inner) */
            int prun;                   /* not gathered, over several loops of a span but not
                                           one run, contiguous along the innermost of them: read
                                           as runs of prun values, ramp the offset of each run,
                                           or 0 */
        };
        struct {                /* fc_op_is_reduce(in->op): an inner reduction */
            int body0, body1;           /* its body: steps [body0, body1) */
            int racc;                   /* its slot of accumulators in Thread.racc */
            int rcl;                    /* a reduction of one value (not wide): the loop of its own
                                           it runs along the chunk; -1 for a wide one */
            const void *fillv;          /* a chunk of the fill value (for bounds) */
            CpuReducer red;
            int nrl, *rl;               /* [L] its loops other than rcl, outermost first */
            int *bvals;                 /* [L] physical buffers of its bounds' values */
            FcDType *bdt;               /* [L] and their dtypes */
        };
        struct {                /* nterm > 0: weighted rows (plan_rowops) */
            int rowg;                   /* the step of its first rows (their number and length) */
            RowTerm term[ROW_TERMS];    /* its terms */
        };
        struct {                /* sel: WHERE_CMP: a select that compares with a constant (plan_select) */
            char selk[8];               /* the constant, in the compared dtype */
        };
    };
    int cx;                     /* the chunk loop of the list it is evaluated in */
    int parent;                 /* the step of the reduction whose body holds it, or -1 */
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
} Step;

/* What every visit reads stays in the first 64 bytes (the array of steps is not aligned to cache
 * lines, so that is one or two lines), and the union keeps a step within 7 lines (the groups of all
 * kinds side by side would take more than 10). */
_Static_assert(offsetof(Step, m) + sizeof(int) <= 64, "Step: the core outgrew the first 64 bytes");
_Static_assert(sizeof(Step) <= 448, "Step: grew past 7 lines");

/* A widening table: positions of shape `to` -> positions of shape `from` (a subset). */
typedef struct Widen {
    uint64_t from, to;
    int32_t *tab;
} Widen;

#define GATE_BOUNDS 4           /* Plan.gb */

#define TSCALE_MAX 4            /* scaling steps of a tcopy (Plan.nscale) */

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
    /* A gated store's bounds (plan_gate_bounds): leaves of cond (cond an AND of them, or one)
     * of the form iota(l) < b, precomputed, b varying along neither l nor a loop inside it: once
     * false at a point, false over the rest of l's run (the points up to l's next cycle), which
     * gate_run then skips whole when w is bounded (Run.gskip). step: the leaf's; kpos: l's
     * place in kl. */
    int ngb;
    struct GateBound { int step, kpos; } gb[GATE_BOUNDS];
    int ngw, gw[2];             /* ngb: the precomputed steps whose tables bound w: none (no w),
                                   w itself (finite), or its two factors (each at most the root
                                   of the largest finite value: their product finite) */
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
    /* A flat accumulating store whose result, the top list's last step, is a float product of a
     * wide value and one value per chunk (plan_mul_add): flat_write adds the two's product in one
     * pass, the product step not evaluated. Their physical buffers: */
    bool mul_add;
    int mul_v, mul_w;
    bool mul_w_one;             /* w's step is not broadcast over the chunk (fill_one) */
    /* A scattered store split over its owner loops (fc_store_owner_loops; plan_owner): kl's first
     * nkown loops (outer points) are owner loops, the others (inner points) run in order inside
     * each part; own_cl: cl is one too, and its positions are split as well (task_owner). */
    bool own;
    bool own_cl;
    int nkown;
    int64_t inner, outer;
    /* A store split so, with no kept owner loop (outer 1), whose destination rows
     * (fc_store_band_rows: scatter indices band, over unit band_unit, band_keys rows) vary
     * only along kl's first band_d loops (band_pts points), none of them the term level: at more
     * than one thread its parts are bands of rows (task_band), each running the nest in order
     * over the points of those loops whose row is its own. The rows are read from the scatter
     * indices, evaluated narrow up to step band_end (all of them computed before it) at each
     * point first (band_keys_task). */
    uint64_t band;
    int64_t band_unit, band_keys, band_pts;
    int band_d, band_end;
    int sstep[FC_MAX_DIMS];     /* the steps of the scatter indices (sphys before plan_buffers) */
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
    bool stream;                /* a fill: a store of one invariant value, contiguous and large,
                                   written with non-temporal stores (store_chunk) */
    bool muladd_one;            /* a step is a MULADD with a factor of one value (Step.one) */
    bool tstream;               /* a tcopy of STREAM_BYTES or more: its whole tiles written with
                                   non-temporal stores, whole lines at a time (copy_tile) */
    bool tchunk;                /* a tcopy written along cl over more than one chunk (NCHW from
                                   channels-last): units numbered chunk by chunk, every tile of lk
                                   over one chunk before the next chunk (tile_place) */
    int tsrc;                   /* a tcopy: the step of its wide load */
    /* A tcopy of a scaled value (plan_tscale): the load times, or divided by, values of one
     * float32 each that vary along neither lk nor cl, nscale steps in code order (roi_align's
     * cotangent staged channels-last, g / count): each step's other operand (a physical
     * buffer, read at position 0 after the tile's steps are evaluated narrow), whether it
     * divides, and whether the load's chain is its second operand. */
    int nscale;
    struct {
        int buf;
        bool div, second;
    } scale[TSCALE_MAX];
    /* The term level of a gradient's scatter-add (plan_term): the innermost kept root loop,
     * stride 0 in the store, along which scatter indices vary (the terms of one store:
     * autograd.c's same_scatter, roi_align's four taps), or -1. The executor runs a point's
     * terms one after the other (task_owner, task_units) and, for every term but the first,
     * leaves out the steps that do not vary along it while they hold (Thread.tstamp): tunit[j]
     * marks a step where such a skip may start (a step, a memo chain's first, a run of
     * precomputed steps that all hold along it), tjump[j] the step after what it skips. The
     * steps that do not vary along it keep their buffers for the whole point (plan_buffers). */
    int term;
    uint8_t *tunit;
    int *tjump;
    int *tpx, *tpf, *tpn;       /* a run's precomputed values that vary along it: plist indices
                                   tpx[tpf[j], + tpn[j]) for the run's first step j */
    int tload;                  /* a tiled store's wide load that runs along lk and strides along
                                   cl (a cotangent transposed as it is computed): read eight units
                                   at a time through a block transposed in registers (load_block,
                                   into Thread.tlb); its step, or -1 */
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
    int nplist;
    struct TabLoop *ptl;        /* storage for PreX.tl */
    char *pretab;               /* the tables */
    char *prex;                 /* [3 * cap of a table * 8] operands widened for a fill */
    PreScale *pscale;           /* the gathers' precomputed indices, scaled */
    int npscale;
    /* running */
    struct Thread **th;         /* the threads of its runs (plan_threads) */
    int nth;
} Plan;

/* ---- between planning and execution ----
 *
 * A shape is a set of loops (bit l: loop l): the loops of a chunk that a value varies along. */

/* The positions of a shape: the product of its loops' extents. */
static inline int64_t cpu_shape_size(const Plan *p, uint64_t shape)
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
static inline int cpu_shape_loops(const Plan *p, uint64_t shape, int *loops)
{
    int nl = 0;
    for (uint64_t d = shape & ~p->ckmask; d; d &= d - 1)
        loops[nl++] = __builtin_ctzll(d);
    for (int j = 0; j < p->nck; j++)
        if (shape >> p->ck[j] & 1)
            loops[nl++] = p->ck[j];
    return nl;
}

/* Formats the message into err->msg and returns st. */
FcStatus cpu_errorf(FcError *err, FcStatus st, const char *fmt, ...);

/* Checks and plans k into *p (cpu_plan.c), which cpu_plan_free frees whatever the result. A kernel
 * with nothing to evaluate is planned as idle. */
FcStatus cpu_plan_kernel(Plan *p, const FcKernel *k, FcError *err);
void cpu_plan_free(Plan *p);

/* Frees the n threads of a plan's runs (cpu_exec.c; th may be NULL). */
void cpu_threads_free(struct Thread **th, int n);

#endif
