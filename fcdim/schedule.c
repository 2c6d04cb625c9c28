/* schedule.c — materialisation: turns the IR DAG under a lazy tensor into one scheduled kernel
 * (FcKernel) and runs it on the tensor's backend.
 *
 * Scheduling a DAG:
 *  - loops: the root's levels, then (for a reduction at the root) the reduced levels;
 *  - emission: a post-order walk that gives each (node, level-to-loop mapping) pair one
 *    instruction, so shared sub-expressions are computed once per chunk; an instruction that
 *    depends on no loop is marked invariant (computed once per thread); loads become affine
 *    strides per loop, with gathered dims for index expressions that are not plain iotas;
 *  - layout: a new tensor takes the dim order of its inputs (PyTorch's TensorIterator
 *    reorder_dimensions), reductions are C-contiguous;
 *  - loop order: by the output's strides (by the first input's for reductions), innermost the
 *    smallest; then adjacent loops that every access walks as one are merged;
 *  - domains and the vector loop: what each instruction varies along, the reduction bodies and
 *    the vector loop a kernel with inner reductions is fixed to are the kernel plan's rules
 *    (kplan.c's fc_kplan_domains, fc_kplan_chunk_loop, fc_kplan_chunks), applied to the code
 *    while fusion and bounds still change it; the final kernel is then planned (fc_kplan_new);
 *  - registers: one per instruction (SSA); the backends reuse buffers by the plan's live ranges;
 *  - 32-bit index arithmetic when every access fits.
 * Depends on fcdim.h, internal.h and the backend interface. */
#include "internal.h"
#include "mem.h"

#include "backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Memo {
    const FcNode *node;
    int8_t *map;            /* [node->nlev] */
    int reg;
} Memo;

/* A reduction that is not fused into its consumer: realised into tmp first, read as load. */
typedef struct Sub {
    const FcNode *node;
    FcTensor *tmp;
    FcNode *load;
} Sub;

typedef struct Sched {
    FcCtx *ctx;
    FcError *err;
    FcStatus st;
    FcDevice dev;
    const FcTarget *target;            /* the backend's: the vector loop it will take */
    int nloop, nroot;                  /* loops [0, nroot) are the root's, the rest inner reductions' */
    int64_t extent[FC_MAX_DIMS];
    bool reduced[FC_MAX_DIMS];
    int owner[FC_MAX_DIMS];            /* -1, or the inner reduction iterating the loop */
    FcInstr *code;
    const FcNode **node_of;            /* [ncode] the node each instruction computes */
    int ncode, capcode;
    Memo *memo;
    int nmemo, capmemo;
    FcStorage **bufs;                  /* the storages loaded (borrowed from the DAG) */
    int nbufs, capbufs;
    Sub *subs;
    int nsubs, capsubs;
    bool root_inner;                   /* the root reduction is emitted as an inner one (root_as_inner) */
    bool ordered;                      /* the backend computes the sums of PyTorch's orders alone
                                          (FcBackend.ordered_sum) */
    const FcNode *root;
    const FcNode *apart;               /* an inner reduction to realise first: its loops did not fit,
                                        * or an arg reduction (only a root makes its index) */
    /* by instruction, the plan's analysis of the code as it stands (fc_kplan_domains: analyse) */
    uint64_t *deps, *own;
    int *list;
    int capdom;
} Sched;

/* Drops the code (not the substitutions): scheduling starts again. */
static void sched_reset(Sched *s)
{
    for (int i = 0; i < s->ncode; i++) {
        mem_free(s->code[i].strides);
        mem_free(s->code[i].gathers);
        mem_free(s->code[i].bounds);
    }
    s->ncode = 0;
    for (int i = 0; i < s->nmemo; i++)
        mem_free(s->memo[i].map);
    s->nmemo = 0;
    s->nbufs = 0;
    s->nloop = s->nroot = 0;
    s->st = FC_OK;
}

static void sched_free(Sched *s)
{
    sched_reset(s);
    mem_free(s->code);
    mem_free(s->node_of);
    mem_free(s->memo);
    mem_free(s->bufs);
    for (int i = 0; i < s->nsubs; i++) {
        fc_node_release(s->subs[i].load);
        fc_tensor_release(s->subs[i].tmp);
    }
    mem_free(s->subs);
    mem_free(s->deps);
    mem_free(s->own);
    mem_free(s->list);
}

static bool grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return true;
    int c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *q = mem_realloc(*p, (size_t)c * elem);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

static int fail(Sched *s, FcStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(Sched *s, FcStatus st, const char *fmt, ...)
{
    if (s->st == FC_OK) {
        s->st = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->err->msg, sizeof s->err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static FcInstr *new_instr(Sched *s, const FcNode *node, FcOp op, FcDType dt)
{
    int cap = s->capcode;
    if (!grow((void **)&s->code, &s->capcode, s->ncode + 1, sizeof *s->code)) {
        fail(s, FC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (s->capcode != cap) {
        const FcNode **q = mem_realloc(s->node_of, (size_t)s->capcode * sizeof *q);
        if (!q) {
            fail(s, FC_ERR_NOMEM, "out of memory");
            return NULL;
        }
        s->node_of = q;
    }
    s->node_of[s->ncode] = node;
    FcInstr *in = &s->code[s->ncode];
    memset(in, 0, sizeof *in);
    in->op = op;
    in->dtype = dt;
    in->src_dtype = dt;
    in->dst = s->ncode++;
    in->a = in->b = in->c = -1;
    in->loop = -1;
    return in;
}

/* Common subexpressions: an instruction that computes what probe would (the same op on the same
 * registers, loop or load; constants are emit_const's) is reused rather than emitted again; the DAG can hold
 * equal values as distinct nodes (roi_align gathers the batch index once per tap, and casts the
 * same index to float for several uses). Reductions are never shared here (the memo of emit
 * already shares a node's). */
static bool same_gathers(const FcGather *a, const FcGather *b, int n)
{
    for (int g = 0; g < n; g++)
        if (a[g].reg != b[g].reg || a[g].stride != b[g].stride || a[g].extent != b[g].extent ||
            a[g].wrap != b[g].wrap || a[g].dim != b[g].dim)
            return false;
    return true;
}

static int same_instr(const Sched *s, const FcInstr *probe)
{
    for (int i = s->ncode - 1; i >= 0; i--) {
        const FcInstr *in = &s->code[i];
        if (in->op != probe->op || in->dtype != probe->dtype || in->src_dtype != probe->src_dtype)
            continue;
        switch (probe->op) {
        case FC_OP_IOTA:
            if (in->loop == probe->loop)
                return i;
            break;
        case FC_OP_LOAD:
            if (in->buf == probe->buf && in->offset == probe->offset && in->ngather == probe->ngather &&
                memcmp(in->strides, probe->strides, FC_MAX_DIMS * sizeof *in->strides) == 0 &&
                same_gathers(in->gathers, probe->gathers, probe->ngather))
                return i;
            break;
        case FC_OP_SUM: case FC_OP_PROD: case FC_OP_AMAX: case FC_OP_AMIN: case FC_OP_ANY: case FC_OP_ALL:
        case FC_OP_ARGMAX: case FC_OP_ARGMIN:
            break;
        default:
            if (in->a == probe->a && in->b == probe->b && in->c == probe->c)
                return i;
            break;
        }
    }
    return -1;
}

static int buf_index(Sched *s, FcStorage *st)
{
    for (int i = 0; i < s->nbufs; i++)
        if (s->bufs[i] == st)
            return i;
    if (!grow((void **)&s->bufs, &s->capbufs, s->nbufs + 1, sizeof *s->bufs))
        return fail(s, FC_ERR_NOMEM, "out of memory");
    s->bufs[s->nbufs] = st;
    return s->nbufs++;
}

/* Where level j of an operand lands, given the node's mapping map and, for its reduced levels,
 * red (the loops of the reduction; NULL for other nodes). */
static int8_t compose(int8_t lm, const int8_t *map, const int8_t *red, int j)
{
    if (lm == FC_LEV_BCAST)
        return -1;
    if (lm == FC_LEV_REDUCED)
        return red ? red[j] : -1;
    return map[lm];
}

static int emit(Sched *s, const FcNode *n, const int8_t *map);
static bool add_sub(Sched *s, const FcNode *node);

static int emit_operand(Sched *s, const FcNode *n, int k, const int8_t *map, const int8_t *red)
{
    const FcNode *in = n->in[k];
    int8_t sub[FC_MAX_DIMS];
    for (int j = 0; j < in->nlev; j++)
        sub[j] = compose(n->lev_map[k][j], map, red, j);
    return emit(s, in, sub);
}

static int emit_load(Sched *s, const FcNode *n, const int8_t *map)
{
    int64_t *strides = mem_calloc(FC_MAX_DIMS, sizeof *strides);
    if (!strides)
        return fail(s, FC_ERR_NOMEM, "out of memory");
    int64_t offset = n->offset;
    FcGather g[FC_MAX_DIMS];
    int ng = 0;
    bool invariant = true;
    for (int k = 0; k < n->nin; k++) {
        const FcNode *ix = n->in[k];
        int8_t sub[FC_MAX_DIMS];
        for (int j = 0; j < ix->nlev; j++)
            sub[j] = compose(n->lev_map[k][j], map, NULL, j);
        if (ix->op == FC_OP_IOTA) {
            if (sub[0] >= 0) {
                strides[sub[0]] += n->strides[k];
                if (s->extent[sub[0]] > 1)
                    invariant = false;
            }
        } else if (ix->op == FC_OP_CONST) {
            int64_t i = ix->konst.i, ext = n->shape[k];
            bool wrap = n->wrap >> k & 1;
            if (i >= ext || i < (wrap ? -ext : 0)) {
                mem_free(strides);
                return fail(s, FC_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld",
                            (long long)i, n->index_dim[k], (long long)ext);
            }
            offset += (i < 0 ? i + ext : i) * n->strides[k];
        } else {
            int r = emit(s, ix, sub);
            if (r < 0) {
                mem_free(strides);
                return -1;
            }
            if (!s->code[r].invariant)
                invariant = false;
            g[ng++] = (FcGather){.reg = r, .stride = n->strides[k], .extent = n->shape[k],
                                 .wrap = n->wrap >> k & 1, .dim = n->index_dim[k]};
        }
    }
    int b = buf_index(s, n->storage);
    if (b < 0) {
        mem_free(strides);
        return -1;
    }
    FcInstr probe = {.op = FC_OP_LOAD, .dtype = n->dtype, .src_dtype = n->dtype, .buf = b, .offset = offset,
                     .strides = strides, .ngather = ng, .gathers = g};
    int same = same_instr(s, &probe);
    if (same >= 0) {
        mem_free(strides);
        return same;
    }
    FcInstr *in = new_instr(s, n, FC_OP_LOAD, n->dtype);
    if (!in) {
        mem_free(strides);
        return -1;
    }
    in->buf = b;
    in->offset = offset;
    in->strides = strides;
    in->invariant = invariant;
    if (ng) {
        in->gathers = mem_malloc((size_t)ng * sizeof *in->gathers);
        if (!in->gathers)
            return fail(s, FC_ERR_NOMEM, "out of memory");
        memcpy(in->gathers, g, (size_t)ng * sizeof *g);
        in->ngather = ng;
    }
    return in->dst;
}

/* Gives the reduced levels of reduction n's operand loops of their own: red[j] for level j
 * (-1 for kept levels); marks them reduced (root) or owned by owner (-2: not known yet). */
static bool reduce_loops(Sched *s, const FcNode *n, bool root, int8_t *red)
{
    const FcNode *in = n->in[0];
    for (int j = 0; j < in->nlev; j++) {
        red[j] = -1;
        if (n->lev_map[0][j] != FC_LEV_REDUCED)
            continue;
        if (s->nloop >= FC_MAX_DIMS) {
            if (!root && !s->apart)
                s->apart = n;       /* run_root realises it apart and emits the kernel again */
            fail(s, FC_ERR_VALUE, "too many loops");
            return false;
        }
        red[j] = (int8_t)s->nloop;
        s->reduced[s->nloop] = root;
        s->owner[s->nloop] = root ? -1 : -2;
        s->extent[s->nloop++] = in->size[j];
    }
    return true;
}

/* Constant k of dtype dt for node n: one instruction for equal constants. Only one of the DAG's
 * constants is shared with another of the DAG's, as a float one is a parameter of the kept kernel
 * (kernel_cache.c's find_params, by node_of) and the scheduler's own (an identity, an index of a
 * loop of one) are not. */
static int emit_const(Sched *s, const FcNode *n, FcDType dt, FcScalar k)
{
    bool dag = n->op == FC_OP_CONST;
    for (int i = s->ncode - 1; i >= 0; i--) {
        const FcInstr *in = &s->code[i];
        if (in->op == FC_OP_CONST && in->dtype == dt && in->konst.i == k.i && (s->node_of[i]->op == FC_OP_CONST) == dag)
            return i;
    }
    FcInstr *in = new_instr(s, n, FC_OP_CONST, dt);
    if (!in)
        return -1;
    in->konst = k;
    in->loop = -1;
    in->invariant = true;
    return in->dst;
}

/* A reduction inside the expression: its loops, its body, then the instruction that folds it. */
static int emit_reduce(Sched *s, const FcNode *n, const int8_t *map)
{
    /* Operands realise arg reductions first (ir.c realise_first); one reached through a node
     * that reads it lazily (a dims broadcast) is realised apart here. */
    if (n->op == FC_OP_ARGMAX || n->op == FC_OP_ARGMIN) {
        if (!s->apart)
            s->apart = n;
        return fail(s, FC_ERR_VALUE, "an arg reduction inside a kernel");
    }
    bool empty = false;
    for (int j = 0; j < n->in[0]->nlev; j++)
        empty = empty || (n->lev_map[0][j] == FC_LEV_REDUCED && n->in[0]->size[j] == 0);
    if (empty && n->op != FC_OP_AMAX && n->op != FC_OP_AMIN) {
        /* Nothing to fold: the identity, without the body, whose invariants would run once
         * although its loops do not (an integer division by a constant zero would raise). */
        bool one = n->op == FC_OP_PROD || n->op == FC_OP_ALL;
        FcScalar k;
        if (fc_dtype_is_float(n->dtype))
            k.f = one;
        else
            k.i = one;
        return emit_const(s, n, n->dtype, k);
    }
    int8_t red[FC_MAX_DIMS];
    int first = s->nloop;
    if (!reduce_loops(s, n, false, red))
        return -1;
    int last = s->nloop;         /* the body's own inner reductions add loops after these */
    int body = emit_operand(s, n, 0, map, red);
    if (body < 0)
        return -1;
    FcInstr *in = new_instr(s, n, n->op, n->dtype);
    if (!in)
        return -1;
    in->a = body;
    in->src_dtype = n->in[0]->dtype;
    in->invariant = s->code[body].invariant;
    for (int l = first; l < last; l++)
        s->owner[l] = in->dst;
    return in->dst;
}

static int emit(Sched *s, const FcNode *n, const int8_t *map)
{
    if (s->st)
        return -1;
    for (int i = 0; i < s->nmemo; i++)
        if (s->memo[i].node == n && memcmp(s->memo[i].map, map, (size_t)n->nlev) == 0)
            return s->memo[i].reg;
    for (int i = 0; i < s->nsubs; i++)
        if (s->subs[i].node == n)
            return emit(s, s->subs[i].load, map);
    if (n->merge) {
        /* a merged product (not one of the 16 realised first): its levels mean nothing here */
        if (!add_sub(s, n))
            return -1;
        return emit(s, s->subs[s->nsubs - 1].load, map);
    }
    int reg = -1;
    FcInstr *in;
    if (n->op == FC_OP_CAST && n->in[0]->dtype == n->dtype)    /* only moves levels (a broadcast) */
        return emit_operand(s, n, 0, map, NULL);
    switch (n->op) {
    case FC_OP_CONST:
    case FC_OP_IOTA: {
        if (n->op == FC_OP_CONST || map[0] < 0 || s->extent[map[0]] <= 1) {
            reg = emit_const(s, n, n->dtype, n->op == FC_OP_CONST ? n->konst : (FcScalar){.i = 0});
            break;
        }
        FcInstr probe = {.op = FC_OP_IOTA, .dtype = FC_INT64, .src_dtype = FC_INT64, .loop = map[0]};
        if ((reg = same_instr(s, &probe)) >= 0)
            break;
        in = new_instr(s, n, FC_OP_IOTA, FC_INT64);
        if (!in)
            return -1;
        in->loop = map[0];
        reg = in->dst;
        break;
    }
    case FC_OP_LOAD:
        reg = emit_load(s, n, map);
        break;
    default: {
        if (fc_op_is_reduce(n->op)) {
            reg = emit_reduce(s, n, map);
            break;
        }
        int ops[3] = {-1, -1, -1};
        bool invariant = true;
        for (int k = 0; k < n->nin && k < 3; k++) {
            ops[k] = emit_operand(s, n, k, map, NULL);
            if (ops[k] < 0)
                return -1;
            invariant = invariant && s->code[ops[k]].invariant;
        }
        FcInstr probe = {.op = n->op, .dtype = n->dtype, .src_dtype = n->dtype, .a = ops[0], .b = ops[1],
                         .c = ops[2]};
        if (n->op == FC_OP_CAST || n->op == FC_OP_ISNAN)
            probe.src_dtype = n->in[0]->dtype;
        else if (fc_op_is_compare(n->op))
            probe.src_dtype = n->src_dtype;
        if ((reg = same_instr(s, &probe)) >= 0)
            break;
        in = new_instr(s, n, n->op, n->dtype);
        if (!in)
            return -1;
        in->a = ops[0];
        in->b = ops[1];
        in->c = ops[2];
        in->src_dtype = probe.src_dtype;
        in->invariant = invariant;
        reg = in->dst;
        break;
    }
    }
    if (reg < 0)
        return -1;
    if (!grow((void **)&s->memo, &s->capmemo, s->nmemo + 1, sizeof *s->memo))
        return fail(s, FC_ERR_NOMEM, "out of memory");
    int8_t *m = mem_malloc((size_t)(n->nlev ? n->nlev : 1));
    if (!m)
        return fail(s, FC_ERR_NOMEM, "out of memory");
    memcpy(m, map, (size_t)n->nlev);
    s->memo[s->nmemo++] = (Memo){n, m, reg};
    return reg;
}

/* Whether n is a masked value, as find_bounds reads it: where(cond, v, const), or a cast,
 * negation, sum or product of masked values. */
static bool masked_node(const FcNode *n)
{
    switch (n->op) {
    case FC_OP_WHERE:
        return n->in[2]->op == FC_OP_CONST;
    case FC_OP_CAST: case FC_OP_NEG:
        return masked_node(n->in[0]);
    case FC_OP_ADD: case FC_OP_MUL:
        return masked_node(n->in[0]) && masked_node(n->in[1]);
    default:
        return false;
    }
}

/* A masked reduction with kept levels is scheduled as an inner reduction under a store, so that
 * its loops can take data-dependent bounds (the threads split the kept loops). */
static bool root_as_inner(const FcNode *root)
{
    return fc_op_is_reduce(root->op) && root->op != FC_OP_ARGMAX && root->op != FC_OP_ARGMIN && root->nlev > 0 &&
           masked_node(root->in[0]);
}

/* Emits the code of root; the root loops are root's levels then its reduced levels. Returns the
 * register of the value to store or reduce. */
static int emit_root(Sched *s, const FcNode *root)
{
    s->nloop = root->nlev;
    memcpy(s->extent, root->size, (size_t)root->nlev * sizeof *s->extent);
    int8_t map[FC_MAX_DIMS], red[FC_MAX_DIMS];
    for (int l = 0; l < root->nlev; l++) {
        map[l] = (int8_t)l;
        s->owner[l] = -1;
        s->reduced[l] = false;
    }
    if (!fc_op_is_reduce(root->op) || s->root_inner) {
        s->nroot = s->nloop;
        return emit(s, root, map);
    }
    if (!reduce_loops(s, root, true, red))
        return -1;
    s->nroot = s->nloop;
    return emit_operand(s, root, 0, map, red);
}

/* ---- layout ---- */

/* reorder_dimensions' comparison of loops d0, d1 over the affine loads (in emission order). */
static int loads_cmp(const void *ud, int d0, int d1)
{
    const Sched *s = ud;
    for (int c = 0; c < s->ncode; c++) {
        const FcInstr *in = &s->code[c];
        if (in->op != FC_OP_LOAD)
            continue;
        int64_t s0 = in->strides[d0], s1 = in->strides[d1];
        if (s0 == 0 || s1 == 0)
            continue;
        if (s0 < 0)
            s0 = -s0;
        if (s1 < 0)
            s1 = -s1;
        if (s0 != s1)
            return s0 < s1 ? -1 : 1;
        if (s->extent[d0] > s->extent[d1])
            return 1;
    }
    return 0;
}

/* PyTorch's TensorIterator::reorder_dimensions over the affine loads: perm[0] is the
 * fastest-varying loop. */
static void iterator_perm(const Sched *s, int n, int *perm)
{
    fc_reorder_dimensions(n, perm, loads_cmp, s);
}

/* ---- finishing: loop order, merging, registers ---- */

static bool loop_has_iota(const Sched *s, int l)
{
    for (int i = 0; i < s->ncode; i++)
        if (s->code[i].op == FC_OP_IOTA && s->code[i].loop == l)
            return true;
    return false;
}

/* Renumbers the root loops: new root loop i is old loop order[i]; root loops not in order are
 * dropped (extent 1). The inner loops follow, in their order. */
static void apply_loop_order(Sched *s, FcKernel *k, const int *order_root, int n)
{
    int order[FC_MAX_DIMS];
    memcpy(order, order_root, (size_t)n * sizeof *order);
    int m = n;
    for (int l = s->nroot; l < s->nloop; l++)
        order[m++] = l;
    int64_t ext[FC_MAX_DIMS], ostr[FC_MAX_DIMS];
    bool red[FC_MAX_DIMS];
    int own[FC_MAX_DIMS], newof[FC_MAX_DIMS];
    for (int l = 0; l < s->nloop; l++)
        newof[l] = -1;
    for (int i = 0; i < m; i++) {
        ext[i] = s->extent[order[i]];
        red[i] = s->reduced[order[i]];
        own[i] = s->owner[order[i]];
        ostr[i] = k->out_strides[order[i]];
        newof[order[i]] = i;
    }
    for (int c = 0; c < s->ncode; c++) {
        FcInstr *in = &s->code[c];
        if (in->op == FC_OP_IOTA)
            in->loop = newof[in->loop];
        if (in->op == FC_OP_LOAD) {
            int64_t st[FC_MAX_DIMS];
            for (int i = 0; i < m; i++)
                st[i] = in->strides[order[i]];
            memcpy(in->strides, st, (size_t)m * sizeof *st);
        }
    }
    memcpy(s->extent, ext, (size_t)m * sizeof *ext);
    memcpy(s->reduced, red, (size_t)m * sizeof *red);
    memcpy(s->owner, own, (size_t)m * sizeof *own);
    memcpy(k->out_strides, ostr, (size_t)m * sizeof *ostr);
    s->nloop = m;
    s->nroot = n;
}

/* A kernel with inner loops and no root loop gets a root loop of extent 1 to chunk along. */
static void add_unit_loop(Sched *s, FcKernel *k)
{
    if (s->nroot > 0 || s->nloop == 0 || s->nloop >= FC_MAX_DIMS)
        return;
    for (int c = 0; c < s->ncode; c++) {
        FcInstr *in = &s->code[c];
        if (in->op == FC_OP_IOTA)
            in->loop++;
        if (in->op == FC_OP_LOAD) {
            memmove(in->strides + 1, in->strides, (size_t)s->nloop * sizeof *in->strides);
            in->strides[0] = 0;
        }
    }
    memmove(s->extent + 1, s->extent, (size_t)s->nloop * sizeof *s->extent);
    memmove(s->reduced + 1, s->reduced, (size_t)s->nloop * sizeof *s->reduced);
    memmove(s->owner + 1, s->owner, (size_t)s->nloop * sizeof *s->owner);
    memmove(k->out_strides + 1, k->out_strides, (size_t)s->nloop * sizeof *k->out_strides);
    s->extent[0] = 1;
    s->reduced[0] = false;
    s->owner[0] = -1;
    k->out_strides[0] = 0;
    s->nloop++;
    s->nroot = 1;
}

typedef enum LoopOrder { BY_OUTPUT, BY_INPUT, AS_GIVEN } LoopOrder;

static void order_loops(Sched *s, FcKernel *k, LoopOrder how, bool keep_reduced)
{
    /* Key: |stride| in the output (pointwise) or, for reductions, the varying load that varies
     * along the most root loops (the first of those): not a small load that the others are
     * broadcast against (roi_align's box coordinates ahead of its image and the cotangent it is
     * multiplied by), whose one loop would go innermost, so that a per-box memo turns over at
     * every point and the big operands are read across their rows. Broadcast (0) loops go
     * outermost. Stable: equal keys keep their order. AS_GIVEN only drops the loops of extent 1
     * (scattered stores write in the order of the root's levels). Only the root loops move. */
    const int64_t *key = how == BY_OUTPUT ? k->out_strides : NULL;
    if (how == BY_INPUT) {
        int most = 0;
        for (int c = 0; c < s->ncode; c++) {
            if (s->code[c].op != FC_OP_LOAD || s->code[c].invariant)
                continue;
            int n = 0;
            for (int l = 0; l < s->nroot; l++)
                n += s->code[c].strides[l] != 0;
            if (n > most) {
                most = n;
                key = s->code[c].strides;
            }
        }
    }
    int order[FC_MAX_DIMS], n = 0;
    for (int l = 0; l < s->nroot; l++)
        if (s->extent[l] != 1 || (keep_reduced && s->reduced[l]) || loop_has_iota(s, l))
            order[n++] = l;
    if (key) {
        for (int i = 1; i < n; i++) {
            int l = order[i], j = i;
            uint64_t kl = key[l] == 0 ? UINT64_MAX : (uint64_t)(key[l] < 0 ? -key[l] : key[l]);
            while (j > 0) {
                int m = order[j - 1];
                uint64_t km = key[m] == 0 ? UINT64_MAX : (uint64_t)(key[m] < 0 ? -key[m] : key[m]);
                if (km >= kl)
                    break;
                order[j] = m;
                j--;
            }
            order[j] = l;
        }
    }
    apply_loop_order(s, k, order, n);
}

/* Merges root loop i into loop i+1 where every access steps through them as one. */
static void merge_loops(Sched *s, FcKernel *k, bool argreduce)
{
    for (int i = s->nroot - 2; i >= 0; i--) {
        int j = i + 1;
        if (s->reduced[i] != s->reduced[j] || (argreduce && s->reduced[i]))
            continue;
        if (loop_has_iota(s, i) || loop_has_iota(s, j))
            continue;
        /* Checked products: in a nest with an empty loop the others' may overflow (no merge). */
        int64_t p;
        bool ok = !__builtin_mul_overflow(k->out_strides[j], s->extent[j], &p) && k->out_strides[i] == p;
        for (int c = 0; c < s->ncode && ok; c++)
            if (s->code[c].op == FC_OP_LOAD)
                ok = !__builtin_mul_overflow(s->code[c].strides[j], s->extent[j], &p) && s->code[c].strides[i] == p;
        if (!ok || __builtin_mul_overflow(s->extent[j], s->extent[i], &p))
            continue;
        int order[FC_MAX_DIMS], n = 0;
        s->extent[j] = p;
        for (int l = 0; l < s->nroot; l++)
            if (l != i)
                order[n++] = l;
        apply_loop_order(s, k, order, n);
    }
}

static bool fits32(int64_t offset, const int64_t *strides, const int64_t *extent, int n)
{
    for (int l = 0; l < n; l++)
        if (extent[l] == 0)
            return true;        /* nothing is addressed (and the spans below could overflow) */
    int64_t lo = offset, hi = offset;
    for (int l = 0; l < n; l++) {
        int64_t span;
        if (__builtin_mul_overflow(strides[l], extent[l] - 1, &span))
            return false;
        if (span > 0)
            hi += span;
        else
            lo += span;
        if (hi > INT32_MAX || lo < INT32_MIN)
            return false;
    }
    return true;
}

/* ---- domains, fusion, bounds ---- */

static uint64_t root_loops(const Sched *s)
{
    uint64_t m = 0;
    for (int l = 0; l < s->nroot; l++)
        if (s->extent[l] > 1)
            m |= (uint64_t)1 << l;
    return m;
}

/* The plan's analysis of the code as it stands (the rules the backends' plan applies to the
 * final kernel): s->own, s->deps, s->list by instruction, and each instruction's deps and
 * invariant mark. False when out of memory. */
static bool analyse(Sched *s)
{
    int n = s->ncode, cap = s->capdom;
    if (n > cap) {
        cap = n > 2 * cap ? n : 2 * cap;
        mem_free(s->deps);
        mem_free(s->own);
        mem_free(s->list);
        s->deps = mem_malloc((size_t)cap * sizeof *s->deps);
        s->own = mem_malloc((size_t)cap * sizeof *s->own);
        s->list = mem_malloc((size_t)cap * sizeof *s->list);
        s->capdom = s->deps && s->own && s->list ? cap : 0;
        if (!s->capdom)
            return false;
    }
    fc_kplan_domains(s->code, n, s->nloop, s->extent, s->owner, s->deps, s->own, s->list);
    for (int c = 0; c < n; c++) {
        s->code[c].deps = s->deps[c];
        s->code[c].invariant = s->deps[c] == 0;
    }
    return true;
}

/* The registers instruction in reads: a, b, c (those in use), its gathers' indices and its
 * bounds' values, as pointers into in (so that they can be renumbered). Returns how many. */
static int operand_slots(FcInstr *in, int **slots)
{
    int n = 0;
    int *abc[3] = {&in->a, &in->b, &in->c};
    for (int o = 0; o < 3; o++)
        if (*abc[o] >= 0)
            slots[n++] = abc[o];
    for (int g = 0; in->op == FC_OP_LOAD && g < in->ngather; g++)
        slots[n++] = &in->gathers[g].reg;
    for (int b = 0; b < in->nbound; b++)
        slots[n++] = &in->bounds[b].reg;
    return n;
}

/* Fusion: an inner reduction stays in the kernel when it is computed once per point of its own
 * domain: its consumers vary over no loop it does not, except the chunk loop (softmax's max,
 * one value per row, serves every chunk of the row; the backend keeps it across chunks). Else
 * (a column sum under a row-major store, a full sum under a large output) it would be
 * recomputed for every point of the missing loops: it is realised first instead. Marks the
 * reductions to realise in bad[]; returns how many. */
static int unfused(const Sched *s, int result, const int *sregs, int ns, int cl, bool *bad)
{
    int n = s->ncode;
    const uint64_t *own = s->own;
    int *cx = mem_malloc((size_t)(n + 1) * sizeof *cx);
    if (!cx)
        return -1;
    /* The loop each instruction's list runs along the chunk, as the plan gives it to the
     * backends. */
    fc_kplan_chunks(n, s->nloop, s->deps, own, s->list, cl, cl >= 0 ? (uint64_t)1 << cl : 0, cx);
    /* A reduction fuses when every consumer varies over nothing more than it does, except that
     * consumer's chunk loop (one value serves every chunk); one of no loops at all only when it
     * is small (it is computed once, before the parallel loops). */
    bool off = s->ctx->sched_off & FC_SCHED_FUSE;
    /* (the root is where it is; the sums in PyTorch's orders are computed alone where the backend
     * can, also as the result under a placement of it, such as a gradient's) */
    for (int c = 0; c < n; c++) {
        bool ordered = s->ordered && s->node_of[c] && s->node_of[c]->order != FC_SUM_FUSED;
        bad[c] = fc_op_is_reduce(s->code[c].op) &&
                 (c != result ? off || ordered : ordered && s->node_of[c] != s->root);
    }
    for (int c = 0; c < n; c++) {
        FcInstr *in = &s->code[c];
        uint64_t d = in->deps | own[c];
        int *ops[3 + 2 * FC_MAX_DIMS];
        int nops = operand_slots(in, ops);
        for (int o = 0; o < nops; o++) {
            int v = *ops[o];
            if (!fc_op_is_reduce(s->code[v].op))
                continue;
            uint64_t missing = d & ~s->code[v].deps;
            int ccx = ops[o] == &in->a && own[c] ? -1 : cx[c];
            if (missing != 0 && (ccx < 0 || missing != (uint64_t)1 << ccx))
                bad[v] = true;
        }
    }
    uint64_t roots = root_loops(s);
    for (int g = -1; g < ns; g++) {
        int v = g < 0 ? result : sregs[g];
        if (fc_op_is_reduce(s->code[v].op)) {
            uint64_t missing = roots & ~s->code[v].deps;
            if (missing != 0 && (cl < 0 || missing != (uint64_t)1 << cl))
                bad[v] = true;
        }
    }
    int nbad = 0;
    for (int c = 0; c < n; c++) {
        const FcInstr *in = &s->code[c];
        if (fc_op_is_reduce(in->op) && in->deps == 0 && !bad[c]) {
            int64_t work = 1;       /* saturates: the extents of an empty domain may be huge */
            for (int l = 0; l < s->nloop; l++)
                if ((own[c] >> l & 1) && __builtin_mul_overflow(work, s->extent[l], &work))
                    work = INT64_MAX;
            bad[c] = work > 65536;
        }
        nbad += bad[c];
    }
    mem_free(cx);
    return nbad;
}

/* Realises node into a temporary that the kernel then loads. */
static bool add_sub(Sched *s, const FcNode *node)
{
    if (!grow((void **)&s->subs, &s->capsubs, s->nsubs + 1, sizeof *s->subs)) {
        fail(s, FC_ERR_NOMEM, "out of memory");
        return false;
    }
    FcTensor *tmp = fc_tensor_from_node(fc_node_retain((FcNode *)node), s->dev, NULL, 0);
    if (!tmp) {
        fail(s, FC_ERR_NOMEM, "out of memory");
        return false;
    }
    FcStatus st = fc_realize(s->ctx, tmp, s->err);
    FcNode *load = st ? NULL : fc_tensor_node(tmp);
    if (!load) {
        fc_tensor_release(tmp);
        if (!st)
            fail(s, FC_ERR_NOMEM, "out of memory");
        else
            s->st = st;
        return false;
    }
    s->subs[s->nsubs++] = (Sub){node, tmp, load};
    return true;
}

/* The loop of inner reduction r whose index register i holds (an IOTA, or one cast to a float
 * type that holds every index exactly), or -1. */
static int index_loop(const Sched *s, int i, int r)
{
    const FcInstr *in = &s->code[i];
    int64_t exact = INT64_MAX;
    if (in->op == FC_OP_CAST && (in->dtype == FC_FLOAT32 || in->dtype == FC_FLOAT64)) {
        exact = in->dtype == FC_FLOAT32 ? (int64_t)1 << 24 : (int64_t)1 << 53;
        in = &s->code[in->a];
    }
    if (in->op != FC_OP_IOTA || s->owner[in->loop] != r || s->extent[in->loop] > exact)
        return -1;
    return in->loop;
}

/* Adds the bounds that condition register c (a conjunction of comparisons, joined by &) puts on
 * the loops of inner reduction r: index < e or index <= e (or e > index, e >= index) with e not
 * varying over r's loops. Returns whether every term of the conjunction became a bound (then
 * the condition holds wherever the bounded loops run). */
static bool cond_bounds(const Sched *s, int c, int r, FcBound *b, int *nb)
{
    const FcInstr *in = &s->code[c];
    if (in->op == FC_OP_AND && in->dtype == FC_BOOL) {
        bool all = cond_bounds(s, in->a, r, b, nb);
        return cond_bounds(s, in->b, r, b, nb) && all;
    }
    FcOp op = in->op;
    int x = in->a, y = in->b;
    if (op == FC_OP_GT || op == FC_OP_GE) {
        x = in->b;
        y = in->a;
        op = op == FC_OP_GT ? FC_OP_LT : FC_OP_LE;
    }
    if (op != FC_OP_LT && op != FC_OP_LE)
        return false;
    int l = index_loop(s, x, r);
    if (l < 0 || (s->code[y].deps & s->own[r]) || *nb >= FC_MAX_DIMS)
        return false;
    b[(*nb)++] = (FcBound){.loop = l, .reg = y, .cmp = op};
    return true;
}

/* Whether register i is masked for inner reduction r: where(cond, v, fill) with a constant
 * fill and bounds from cond; or a cast, negation, or an op of two operands masked by the same
 * bounds (the mask inside the reduced expression). Sets the bounds and the fill. */
static bool masked(const Sched *s, int i, int r, FcBound *b, int *nb, FcScalar *fill)
{
    const FcInstr *in = &s->code[i];
    *nb = 0;
    switch (in->op) {
    case FC_OP_WHERE:
        if (s->code[in->c].op != FC_OP_CONST)
            return false;
        cond_bounds(s, in->a, r, b, nb);
        *fill = s->code[in->c].konst;
        return *nb > 0;
    case FC_OP_CAST:
        if (!masked(s, in->a, r, b, nb, fill))
            return false;
        *fill = fc_scalar_convert(*fill, in->src_dtype, in->dtype);
        return true;
    case FC_OP_NEG:
        if (!masked(s, in->a, r, b, nb, fill))
            return false;
        if (fc_dtype_is_float(in->dtype))
            fill->f = -fill->f;
        else
            fill->i = -fill->i;
        return true;
    case FC_OP_ADD: case FC_OP_MUL: case FC_OP_MIN: case FC_OP_MAX: {
        FcBound b2[FC_MAX_DIMS];
        int n2;
        FcScalar f2;
        if (!masked(s, in->a, r, b, nb, fill) || !masked(s, in->b, r, b2, &n2, &f2) || n2 != *nb ||
            memcmp(b, b2, (size_t)n2 * sizeof *b2) != 0)
            return false;
        bool fl = fc_dtype_is_float(in->dtype);
        if (in->op == FC_OP_ADD && fl)
            fill->f += f2.f;
        else if (in->op == FC_OP_ADD)
            fill->i = (int64_t)((uint64_t)fill->i + (uint64_t)f2.i);
        else if (in->op == FC_OP_MUL && fl)
            fill->f *= f2.f;
        else if (in->op == FC_OP_MUL)
            fill->i = (int64_t)((uint64_t)fill->i * (uint64_t)f2.i);
        else
            return false;   /* min/max of fills: not worth the NaN rules */
        return in->dtype != FC_INT32;   /* int32 wraps differently; keep it simple */
    }
    default:
        return false;
    }
}

/* Bound masks: an inner reduction of a masked body runs its loops only to their bounds, when
 * the fill is the reduction's identity up to the sign of zero (sum: 0, product: 1) or the
 * reduction is idempotent (max, min, any, all): folding the fill once then gives the bits of
 * folding it at every skipped index. */
static bool find_bounds(Sched *s, int cl)
{
    for (int c = 0; c < s->ncode; c++) {
        FcInstr *in = &s->code[c];
        if (!fc_op_is_reduce(in->op) || in->op == FC_OP_ARGMAX || in->op == FC_OP_ARGMIN)
            continue;
        FcBound b[FC_MAX_DIMS];
        int nb;
        FcScalar fill;
        if (!masked(s, in->a, c, b, &nb, &fill))
            continue;
        bool fl = fc_dtype_is_float(in->src_dtype);
        bool ok = in->op == FC_OP_SUM ? (fl ? fill.f == 0 : fill.i == 0)
                  : in->op == FC_OP_PROD ? (fl ? fill.f == 1 : fill.i == 1)
                                         : true;
        if (!ok)
            continue;
        in->bounds = mem_malloc((size_t)nb * sizeof *b);
        if (!in->bounds) {
            fail(s, FC_ERR_NOMEM, "out of memory");
            return false;
        }
        memcpy(in->bounds, b, (size_t)nb * sizeof *b);
        in->nbound = nb;
        in->fill = fill;
        /* where(cond, v, fill) whose cond is all bounds is v wherever the loops now run: the
         * reduction folds v, and the mask is no longer computed (compact_code drops it). Only
         * where the backend is sure to apply the bounds: a reduction in the root's list whose
         * bounds do not vary along the chunk loop cl (cpu_plan.c's plan_marks). */
        const FcInstr *body = &s->code[in->a];
        FcBound b2[FC_MAX_DIMS];
        int n2 = 0;
        bool uniform = cl >= 0 && s->list[c] < 0;
        for (int j = 0; j < nb && uniform; j++)
            uniform = !(s->code[b[j].reg].deps >> cl & 1);
        if (uniform && body->op == FC_OP_WHERE && cond_bounds(s, body->a, c, b2, &n2))
            in->a = body->b;
    }
    return true;
}

/* Drops the instructions nothing needs (the masks find_bounds made redundant), renumbering the
 * registers of the rest; result and sregs[0..ns) are renumbered too. */
static bool compact_code(Sched *s, int *result, int *sregs, int ns)
{
    int n = s->ncode;
    int *map = mem_malloc((size_t)(n + 1) * sizeof *map);
    if (!map) {
        fail(s, FC_ERR_NOMEM, "out of memory");
        return false;
    }
    for (int i = 0; i < n; i++)
        map[i] = 0;
    map[*result] = 1;
    for (int g = 0; g < ns; g++)
        map[sregs[g]] = 1;
    for (int l = 0; l < s->nloop; l++)
        if (s->owner[l] >= 0)
            map[s->owner[l]] = 1;       /* a reduction keeps its loops (even one only a mask read) */
    int *ops[3 + 2 * FC_MAX_DIMS];
    for (int i = n - 1; i >= 0; i--) {
        int nops = map[i] ? operand_slots(&s->code[i], ops) : 0;
        for (int o = 0; o < nops; o++)
            map[*ops[o]] = 1;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        map[i] = map[i] ? m++ : -1;
    if (m == n) {
        mem_free(map);
        return true;
    }
    for (int i = 0; i < n; i++) {
        FcInstr *in = &s->code[i];
        if (map[i] < 0) {
            mem_free(in->strides);
            mem_free(in->gathers);
            mem_free(in->bounds);
            continue;
        }
        in->dst = map[i];
        int nops = operand_slots(in, ops);
        for (int o = 0; o < nops; o++)
            *ops[o] = map[*ops[o]];
        s->node_of[map[i]] = s->node_of[i];
        s->code[map[i]] = *in;
    }
    for (int l = 0; l < s->nloop; l++)
        if (s->owner[l] >= 0)
            s->owner[l] = map[s->owner[l]];
    *result = map[*result];
    for (int g = 0; g < ns; g++)
        sregs[g] = map[sregs[g]];
    s->ncode = m;
    mem_free(map);
    return true;
}

/* ---- running ---- */

/* fc_kplan_fuse's question to the backend (ud): whether it computes instruction in. */
static bool backend_takes(void *ud, const FcInstr *in)
{
    FcBackend *be = ud;
    FcError scratch;
    return be->supports(be, in, in->op == FC_OP_WHERE_CMP ? in->src_dtype : in->dtype, &scratch) == FC_OK;
}

static void dump(FcCtx *ctx, int what, char *text)
{
    if (text && ctx->dump && (ctx->dump_flags & what))
        ctx->dump(ctx->dump_ud, text);
    mem_free(text);
}

/* Dumps k as asked, shows it to the host's hook and runs it (by the backend's plan prep when
 * there is one). */
static FcStatus launch(FcCtx *ctx, FcBackend *be, const FcKernel *k, FcDevice dev, void *prep, FcError *err)
{
    if (ctx->dump && (ctx->dump_flags & (FC_DUMP_IR | FC_DUMP_KERNELS)))
        dump(ctx, FC_DUMP_IR | FC_DUMP_KERNELS, fc_kernel_dump(k));
    if (ctx->dump && (ctx->dump_flags & (dev.type == FC_DEV_CUDA ? FC_DUMP_IR | FC_DUMP_KERNELS | FC_DUMP_CUDA : FC_DUMP_CUDA)))
        dump(ctx, FC_DUMP_IR | FC_DUMP_KERNELS | FC_DUMP_CUDA, fc_backend_kernel_text(FC_DEV_CUDA, k));
    if (ctx->on_kernel)
        ctx->on_kernel(ctx->on_kernel_ud, k, dev);
    return prep ? be->run_prepared(be, prep, k, err) : be->run(be, k, err);
}

/* The output storage of root when run_root allocates it (its strides are the caller's). */
static FcStatus new_output(FcCtx *ctx, const FcNode *root, FcDevice dev, FcStorage **out, FcError *err)
{
    int64_t nbytes;
    fc_shape_nbytes(root->nlev, root->size, root->dtype, &nbytes);   /* it fits: the op checked its shape */
    return fc_storage_new(ctx, dev, (size_t)nbytes, out, err);
}

/* Runs kept kernel c (fc_kcache_find) for the DAG whose key is key: the kernel as scheduled, with
 * the storages of this DAG, its parameters' values (written into c's code, which the backend's
 * plan reads at the launch) and the output. c->k itself is launched (a kernel is over a
 * kilobyte to copy), its bufs, out and interrupt this run's until it returns. */
static FcStatus run_kept(FcCtx *ctx, FcBackend *be, FcCached *c, const FcKey *key, const FcNode *root,
                         FcDevice dev, FcStorage *out_storage, FcStorage **new_storage, int64_t *new_strides,
                         FcError *err)
{
    for (int i = 0; i < c->nkref; i++)
        c->k.code[c->kref[i].instr].konst = key->kv[c->kref[i].slot];
    FcKernel *k = &c->k;
    if (!out_storage) {
        FcStatus st = new_output(ctx, root, dev, &out_storage, err);
        if (st)
            return st;
        *new_storage = out_storage;
        memcpy(new_strides, c->strides, (size_t)root->nlev * sizeof *new_strides);
    }
    void *bufs[64];
    void **bp = k->nbufs <= 64 ? bufs : mem_malloc((size_t)k->nbufs * sizeof *bp);
    if (!bp) {
        if (*new_storage) {
            fc_storage_release(*new_storage);
            *new_storage = NULL;
        }
        return fc_nomem(err);
    }
    for (int i = 0; i < k->nbufs; i++)
        bp[i] = key->st[c->buf_of[i]]->data;
    k->bufs = bp;
    k->out = out_storage->data;
    k->interrupt = ctx->interrupt;
    k->scatter = k->nscatter > 0 ? c->scatter : NULL;
    FcStatus st = launch(ctx, be, k, dev, c->prep, err);
    k->bufs = NULL;
    k->out = NULL;
    k->interrupt = NULL;
    k->scatter = NULL;
    if (bp != bufs)
        mem_free(bp);
    if (st && *new_storage) {
        fc_storage_release(*new_storage);
        *new_storage = NULL;
    }
    return st;
}

/* Schedules root and writes its value into out_storage at out_offset with out_strides (one per
 * root level); out_strides NULL: a fresh layout (TensorIterator's order, C order for
 * reductions) is chosen and a storage allocated, returned in *new_storage / new_strides.
 * sc (or NULL): the store is scattered by these indices (root is not a reduction). */
static FcStatus run_root(FcCtx *ctx, const FcNode *root, FcDevice dev, FcStorage *out_storage,
                         int64_t out_offset, const int64_t *out_strides, const FcScatter *sc,
                         FcStorage **new_storage, int64_t *new_strides, FcError *err);

/* root realised apart (into fresh memory, as fc_realize does), then stored by a load of it as
 * run_root's arguments say (into out_storage, or scattered by sc). */
static FcStatus store_apart(FcCtx *ctx, const FcNode *root, FcDevice dev, FcStorage *out_storage, int64_t out_offset,
                            const int64_t *out_strides, const FcScatter *sc, FcStorage **new_storage,
                            int64_t *new_strides, FcError *err)
{
    FcTensor *tmp = fc_tensor_from_node(fc_node_retain((FcNode *)root), dev, NULL, 0);
    if (!tmp)
        return fc_nomem(err);
    FcStatus st = fc_realize(ctx, tmp, err);
    FcNode *load = st ? NULL : fc_tensor_node(tmp);
    if (!st && !load)
        st = fc_nomem(err);
    if (!st)
        st = run_root(ctx, load, dev, out_storage, out_offset, out_strides, sc, new_storage, new_strides, err);
    fc_node_release(load);
    fc_tensor_release(tmp);
    return st;
}

bool fc_sums_ordered(const FcCtx *ctx, const FcBackend *be)
{
    return be->ordered_sum && !ctx->fused_sums;
}

/* Whether node n is over its operand k's levels, each the same level. */
static bool same_levels(const FcNode *n, int k)
{
    if (n->in[k]->nlev != n->nlev)
        return false;
    for (int l = 0; l < n->nlev; l++)
        if (n->lev_map[k][l] != l)
            return false;
    return true;
}

/* The tensor x that a sum of squares is computed from, the backend reading x and not the SUM's
 * operand: NORM2's SUM of MUL(x, x) (float32 or float64); WELFORD's (fc_welford_m2) SUM of
 * MUL(v, v), v = SUB(x as float64, mean), x below the CAST that widens a float x to float64
 * (exactly), else the float64 operand. NULL where the sum is not of that form. */
static const FcNode *squares_input(const FcNode *sum)
{
    const FcNode *sq = sum->in[0];
    if (sq->op != FC_OP_MUL || sq->nin != 2 || sq->in[0] != sq->in[1] || !same_levels(sq, 0))
        return NULL;
    if (sum->order == FC_SUM_NORM2)
        return sq->dtype == FC_FLOAT32 || sq->dtype == FC_FLOAT64 ? sq->in[0] : NULL;
    const FcNode *v = sq->in[0];
    if (v->op != FC_OP_SUB || v->dtype != FC_FLOAT64 || !same_levels(v, 0))
        return NULL;
    const FcNode *x = v->in[0];
    if (x->op == FC_OP_CAST && fc_dtype_is_float(x->in[0]->dtype) && same_levels(x, 0))
        x = x->in[0];
    return x->dtype == FC_FLOAT32 || x->dtype == FC_FLOAT64 || x->dtype == FC_BFLOAT16 || x->dtype == FC_FLOAT16
               ? x
               : NULL;
}

/* Whether the backend computes sum from a tensor other than its operand (squares_input). */
static bool of_squares(const FcNode *sum) { return sum->order == FC_SUM_WELFORD || sum->order == FC_SUM_NORM2; }

/* A sum (or fc_prod's product) in one of PyTorch's orders at root (FcNode.order), or fc_sum's
 * under the CAST that rounds it to its narrow dtype: that SUM (PROD), else NULL. */
static const FcNode *ordered_of(const FcNode *root)
{
    const FcNode *n = root->op == FC_OP_CAST && root->narrows ? root->in[0] : root;
    if ((n->op == FC_OP_PROD) != (n->order == FC_PROD_VEC) || (n->op != FC_OP_SUM && n->op != FC_OP_PROD) ||
        n->order == FC_SUM_FUSED || (n != root && !n->cascade_narrow) ||
        (of_squares(n) && !squares_input(n)))
        return NULL;
    /* (its output is laid out as the operand's kept levels: they must map in order) */
    for (int l = 0, last = -1; l < n->in[0]->nlev; l++)
        if (n->lev_map[0][l] >= 0) {
            if (n->lev_map[0][l] < last)
                return NULL;
            last = n->lev_map[0][l];
        }
    /* a narrow dtype's operand is its CAST to float32 (a constant when there is nothing to sum) */
    return !n->cascade_narrow || n->in[0]->op == FC_OP_CAST ? n : NULL;
}

/* Whether LOAD n reads its stored view element by element: each index the iota of its own level. */
static bool plain_load(const FcNode *n)
{
    if (n->op != FC_OP_LOAD)
        return false;
    for (int k = 0; k < n->nin; k++)
        if (n->in[k]->op != FC_OP_IOTA || n->in[k]->nlev != 1 || n->lev_map[k][0] != k || n->strides[k] < 0)
            return false;
    return true;
}

/* Whether MUL x is of two operands over its own levels (an fma sum's factors): then f[0], f[1]. */
static bool fma_factors(const FcNode *x, const FcNode **f)
{
    if (x->op != FC_OP_MUL || x->nin != 2)
        return false;
    for (int k = 0; k < 2; k++) {
        if (x->in[k]->dtype != x->dtype || !same_levels(x, k))
            return false;
        f[k] = x->in[k];
    }
    return true;
}

/* An ordered sum as --dump-kernels shows it: "cascade sum float32 [40, 300] strides [300, 1] over
 * dims [0, 1] -> float32 (PyTorch's order)" (a new string, or NULL). */
static char *ordered_text(const FcOrderedSum *cs)
{
    static const char *const names[] = {"fused", "cascade", "lanes", "serial", "welford", "norm2", "vec"};
    char a[256], b[256], c[256];
    int64_t dims[FC_MAX_DIMS];
    int nr = 0;
    for (int d = 0; d < cs->ndim; d++)
        if ((cs->reduced >> d) & 1)
            dims[nr++] = d;
    fc_shape_str(a, sizeof a, cs->ndim, cs->shape);
    fc_shape_str(b, sizeof b, cs->ndim, cs->strides);
    fc_shape_str(c, sizeof c, nr, dims);
    char *text = NULL;
    mem_asprintf(&text, "%s %s%s %s %s strides %s over dims %s -> %s (PyTorch's order)\n", names[cs->order],
                 cs->order == FC_SUM_WELFORD  ? "m2"
                 : cs->order == FC_SUM_NORM2  ? "sum of squares"
                 : cs->order == FC_PROD_VEC   ? "product"
                                              : "sum",
                 cs->in2 ? " of products (fma)" : "", fc_dtype_name(cs->dtype), a, b, c, fc_dtype_name(cs->out_dtype));
    return text;
}

/* ---- a sum's operand computed a tile at a time ----
 * A sum of all of a pointwise expression over C-contiguous tensors of its shape (and numbers):
 * PyTorch sums the contiguous tensor the expression makes, in one row. Its elements [a, b) in
 * C order are the same expression over the elements [a, b) of each tensor, so the backend asks
 * for it a tile at a time (FcOrderedSum.tile), each tile computed by a kernel into a buffer that
 * stays in cache, and the operand is never stored whole. */

enum { TILE_MAX_NODES = 512, TILE_MIN_ELEMS = 1 << 21 };

typedef struct Tiler {
    FcCtx *ctx;
    FcDevice dev;
    const FcNode *x;
    const FcNode *old[TILE_MAX_NODES];  /* the DAG's nodes (x's walk), and for a tile ... */
    FcNode *now[TILE_MAX_NODES];        /* ... each one's node over the tile */
    int n;
    FcStorage *buf;                     /* the tile's memory */
} Tiler;

/* Whether node n of the sum's operand x (nd levels of sizes size) is, over its elements in C
 * order, the same expression over flat runs: a number (no levels), a C-contiguous plain load
 * of x's shape, a constant over x's levels, or a pointwise op of such over x's levels exactly.
 * Each node is looked at once (mark); counts the distinct nodes into *n. */
static bool flat_pointwise(const FcNode *n, int nd, const int64_t *size, uint64_t mark, int *count)
{
    if (n->mark == mark)
        return true;
    if (n->nlev == 0)
        return true;    /* a number or a 0-dim value: the same at every element (kept as it is) */
    if (++*count > TILE_MAX_NODES || n->nlev != nd || memcmp(n->size, size, (size_t)nd * sizeof *size) != 0)
        return false;
    if (n->op == FC_OP_LOAD) {
        if (!plain_load(n))
            return false;
        int64_t c[FC_MAX_DIMS];
        fc_contiguous_strides(nd, size, c);
        for (int d = 0; d < nd; d++)
            if (size[d] != 1 && n->strides[d] != c[d])
                return false;
    } else if (n->op == FC_OP_CONST) {
        /* a constant over x's levels */
    } else if (fc_op_is_unary(n->op) || fc_op_is_binary(n->op) || fc_op_is_compare(n->op) || n->op == FC_OP_WHERE ||
               n->op == FC_OP_FMA) {
        for (int k = 0; k < n->nin; k++) {
            const FcNode *in = n->in[k];
            for (int j = 0; j < in->nlev; j++)
                if (in->nlev != nd || n->lev_map[k][j] != j)
                    return false;
            if (!flat_pointwise(in, nd, size, mark, count))
                return false;
        }
    } else {
        return false;
    }
    ((FcNode *)n)->mark = mark;
    return true;
}

/* Node n of x over the flat elements [a, a + len): a new reference, or NULL when out of memory. */
static FcNode *flat_node(Tiler *t, const FcNode *n, int64_t a, int64_t len)
{
    if (n->nlev == 0)
        return fc_node_retain((FcNode *)n);
    for (int i = 0; i < t->n; i++)
        if (t->old[i] == n)
            return fc_node_retain(t->now[i]);
    FcNode *r;
    if (n->op == FC_OP_LOAD) {
        FcNode *ix = fc_node_new(FC_OP_IOTA, FC_INT64, 1, &len, 0, NULL);
        r = ix ? fc_node_new(FC_OP_LOAD, n->dtype, 1, &len, 1, &ix) : NULL;
        fc_node_release(ix);
        if (r) {
            r->storage = fc_storage_retain(n->storage);
            r->offset = n->offset + a;
            r->strides[0] = 1;
            r->shape[0] = len;
            r->lev_map[0][0] = 0;
        }
    } else if (n->op == FC_OP_CONST) {
        r = fc_node_new(FC_OP_CONST, n->dtype, 1, &len, 0, NULL);
        if (r)
            r->konst = n->konst;
    } else {
        FcNode *ins[3] = {NULL, NULL, NULL};
        bool ok = true;
        for (int k = 0; k < n->nin && ok; k++)
            ok = (ins[k] = flat_node(t, n->in[k], a, len)) != NULL;
        r = ok ? fc_node_new(n->op, n->dtype, 1, &len, n->nin, ins) : NULL;
        for (int k = 0; k < n->nin; k++) {
            if (r && ins[k]->nlev == 1)
                r->lev_map[k][0] = 0;
            fc_node_release(ins[k]);
        }
        if (r) {
            r->src_dtype = n->src_dtype;
            r->konst = n->konst;
            r->nograd = true;
        }
    }
    if (r && t->n < TILE_MAX_NODES) {
        t->old[t->n] = n;
        t->now[t->n++] = fc_node_retain(r);
    }
    return r;
}

/* FcOrderedSum.tile: x's elements [begin, end) computed into the tile buffer. */
static FcStatus tile_of(void *ud, int64_t begin, int64_t end, const void **at, FcError *err)
{
    Tiler *t = ud;
    int64_t len = end - begin;
    size_t need = (size_t)len * fc_dtype_size(t->x->dtype);
    FcStatus st = FC_OK;
    if (!t->buf || t->buf->nbytes < need) {
        fc_storage_release(t->buf);
        t->buf = NULL;
        st = fc_storage_new(t->ctx, t->dev, need, &t->buf, err);
    }
    for (int i = 0; i < t->n; i++)
        fc_node_release(t->now[i]);
    t->n = 0;
    FcNode *n = st ? NULL : flat_node(t, t->x, begin, len);
    if (!st && !n)
        st = fc_nomem(err);
    int64_t one = 1;
    FcStorage *unused = NULL;
    if (!st && len > 0)
        st = run_root(t->ctx, n, t->dev, t->buf, 0, &one, NULL, &unused, NULL, err);
    fc_node_release(n);
    *at = st ? NULL : t->buf->data;
    return st;
}

/* The stored tensor that node x is: its storage (a reference), offset and strides; realised
 * first when x is an expression (in the layout PyTorch's TensorIterator gives it). */
static FcStatus stored_operand(FcCtx *ctx, const FcNode *x, FcDevice dev, FcStorage **storage, int64_t *offset,
                               int64_t *strides, FcError *err)
{
    if (plain_load(x)) {
        *storage = fc_storage_retain(x->storage);
        *offset = x->offset;
        memcpy(strides, x->strides, (size_t)x->nlev * sizeof *strides);
        return FC_OK;
    }
    FcTensor *tmp = fc_tensor_from_node(fc_node_retain((FcNode *)x), dev, NULL, 0);
    if (!tmp)
        return fc_nomem(err);
    FcStatus st = fc_realize(ctx, tmp, err);
    if (!st) {
        *storage = fc_storage_retain(tmp->storage);
        *offset = tmp->offset;
        memcpy(strides, tmp->strides, (size_t)x->nlev * sizeof *strides);
    }
    fc_tensor_release(tmp);
    return st;
}

/* A sum in one of PyTorch's orders at root, computed by the backend's ordered_sum: its operand
 * (or an fma sum's two factors) stored first, the result new and C-contiguous; written into
 * out_storage or scattered through a load of it. *done when it took the root. */
static FcStatus ordered_root(FcCtx *ctx, FcBackend *be, const FcNode *root, FcDevice dev, FcStorage *out_storage,
                             int64_t out_offset, const int64_t *out_strides, const FcScatter *sc,
                             FcStorage **new_storage, int64_t *new_strides, bool *done, FcError *err)
{
    *done = true;
    FcStatus st;
    if (out_storage || sc)
        return store_apart(ctx, root, dev, out_storage, out_offset, out_strides, sc, new_storage, new_strides, err);
    const FcNode *sum = ordered_of(root);
    const FcNode *x = sum->in[0];
    if (sum->cascade_narrow)
        x = x->in[0];   /* below the CAST to float32 */
    if (of_squares(sum))
        x = squares_input(sum);     /* the tensor itself: its squares are computed from it */
    FcOrderedSum cs = {.order = (FcSumOrder)sum->order, .dtype = x->dtype, .ndim = x->nlev, .out_dtype = root->dtype,
                       .interrupt = ctx->interrupt};
    FcStorage *in_storage = NULL, *in2_storage = NULL;
    const FcNode *f[2];
    bool fma = sum->order_fma && !of_squares(sum) && fma_factors(x, f);
    int64_t in_offset = 0;
    const FcNode *nan_x = sum->cascade_nan && x->op == FC_OP_WHERE ? x->in[2] : NULL;
    /* a sum of all of a big pointwise expression over contiguous tensors: a tile at a time */
    int64_t numel;
    fc_shape_numel(x->nlev, x->size, &numel);    /* saturates only where it is empty */
    for (int d = 0; d < cs.ndim; d++) {
        cs.shape[d] = x->size[d];
        if (sum->lev_map[0][d] == FC_LEV_REDUCED)
            cs.reduced |= (uint64_t)1 << d;
    }
    bool all = cs.reduced == (cs.ndim < 64 ? ((uint64_t)1 << cs.ndim) - 1 : ~(uint64_t)0);
    int count = 0;
    Tiler *tiler = NULL;
    bool tiled = sum->order == FC_SUM_CASCADE && !plain_load(x) && !nan_x && all && numel >= TILE_MIN_ELEMS &&
                 flat_pointwise(x, x->nlev, x->size, fc_walk_stamp(), &count);
    if (tiled) {
        if (!(tiler = mem_calloc(1, sizeof *tiler)))
            return fc_nomem(err);
        *tiler = (Tiler){.ctx = ctx, .dev = dev, .x = x};
    }
    if (fma) {
        /* each product added by one fma: its factors stored */
        int64_t in2_offset = 0;
        st = stored_operand(ctx, f[0], dev, &in_storage, &in_offset, cs.strides, err);
        if (!st)
            st = stored_operand(ctx, f[1], dev, &in2_storage, &in2_offset, cs.strides2, err);
        if (st) {
            fc_storage_release(in_storage);
            return st;
        }
        cs.in2 = (const char *)in2_storage->data + in2_offset * (int64_t)fc_dtype_size(x->dtype);
    } else if (nan_x && plain_load(nan_x) && nan_x->nlev == x->nlev) {
        /* at::nansum reads x where it lies: its zeroed copy is laid out as x (x's own span:
         * it is stored, so no product overflows unless x is empty) */
        int64_t span = numel > 0;
        for (int d = 0; d < cs.ndim && span; d++)
            span += (x->size[d] - 1) * nan_x->strides[d];
        st = fc_storage_new(ctx, dev, (size_t)span * fc_dtype_size(x->dtype), &in_storage, err);
        FcStorage *unused = NULL;
        if (!st && span > 0)
            st = run_root(ctx, x, dev, in_storage, 0, nan_x->strides, NULL, &unused, NULL, err);
        if (st) {
            fc_storage_release(in_storage);
            return st;
        }
        memcpy(cs.strides, nan_x->strides, (size_t)cs.ndim * sizeof *cs.strides);
    } else if (tiled) {
        /* an expression a tile at a time (tile_of): C-contiguous, nothing stored */
        fc_contiguous_strides(cs.ndim, x->size, cs.strides);
        cs.tile = tile_of;
        cs.tile_ud = tiler;
    } else if ((st = stored_operand(ctx, x, dev, &in_storage, &in_offset, cs.strides, err))) {
        return st;
    }
    if (in_storage)
        cs.in = (const char *)in_storage->data + in_offset * (int64_t)fc_dtype_size(x->dtype);
    st = new_output(ctx, root, dev, new_storage, err);
    if (!st) {
        int perm[FC_MAX_DIMS];
        for (int i = 0; i < root->nlev; i++)
            perm[i] = root->nlev - 1 - i;
        fc_dense_strides(root->nlev, root->size, perm, new_strides);
        cs.out = (*new_storage)->data;
        if (ctx->dump && (ctx->dump_flags & (FC_DUMP_IR | FC_DUMP_KERNELS)))
            dump(ctx, FC_DUMP_IR | FC_DUMP_KERNELS, ordered_text(&cs));
        st = be->ordered_sum(be, &cs, err);
        if (st) {
            fc_storage_release(*new_storage);
            *new_storage = NULL;
        }
    }
    fc_storage_release(in_storage);
    fc_storage_release(in2_storage);
    if (tiler) {
        for (int i = 0; i < tiler->n; i++)
            fc_node_release(tiler->now[i]);
        fc_storage_release(tiler->buf);
        mem_free(tiler);
    }
    return st;
}

static FcStatus run_root(FcCtx *ctx, const FcNode *root, FcDevice dev, FcStorage *out_storage,
                         int64_t out_offset, const int64_t *out_strides, const FcScatter *sc,
                         FcStorage **new_storage, int64_t *new_strides, FcError *err)
{
    Sched s;
    FcKernel k;
    FcGather scatter[FC_MAX_DIMS];
    int sregs[FC_MAX_DIMS];
    bool *bad = NULL;
    FcBackend *be = NULL;
    FcStatus st = fc_ctx_backend(ctx, dev, &be, err);
    if (st)
        return st;
    bool arg = root->op == FC_OP_ARGMAX || root->op == FC_OP_ARGMIN;
    int nlev = root->nlev;
    int64_t strides[FC_MAX_DIMS];
    if (ctx->dump && (ctx->dump_flags & FC_DUMP_IR))
        dump(ctx, FC_DUMP_IR, fc_node_dump(root));
    /* A contraction left lazy (FcNode.product) is the backend's matmul: with this DAG as its
     * epilogue when it has that form, else realised first and loaded (add_sub below). */
    FcNode *prods[16];
    int nprod = 0;
    if (fc_products_live) {
        bool done = false;
        if (!sc)
            st = fc_product_root(ctx, be, root, dev, out_storage, out_offset, out_strides, new_storage, new_strides,
                                 &done, err);
        if (st || done)
            return st;
        if (root->merge && !sc)
            return fc_errf(err, FC_ERR_RUNTIME, "internal error: a merged product that the matmul did not take");
        if (root->merge)    /* its levels mean nothing to a kernel */
            return store_apart(ctx, root, dev, out_storage, out_offset, out_strides, sc, new_storage, new_strides,
                               err);
        nprod = fc_products_under((FcNode *)root, prods, 16);
        nprod = nprod > 16 ? 16 : nprod;
    }
    bool ordered = fc_sums_ordered(ctx, be);
    if (ordered && ordered_of(root)) {
        bool done = false;
        st = ordered_root(ctx, be, root, dev, out_storage, out_offset, out_strides, sc, new_storage, new_strides,
                          &done, err);
        if (st || done)
            return st;
    }
    /* A DAG scheduled before (but for its storages) runs the kernel kept then. */
    FcKey key = {0};
    bool keep = nprod == 0 && !(ctx->sched_off & FC_SCHED_CACHE) &&
                fc_key_make(&key, ctx, (FcNode *)root, sc, dev, out_storage, out_strides, out_offset);
    if (keep) {
        FcCached *c = fc_kcache_find(ctx, &key);
        if (c) {
            st = run_kept(ctx, be, c, &key, root, dev, out_storage, new_storage, new_strides, err);
            fc_key_release(ctx, &key);
            return st;
        }
    }
    /* Set up here, not above: a kept kernel needs neither, and they are kilobytes to clear. */
    s = (Sched){.ctx = ctx, .err = err, .dev = dev, .target = be->target, .root_inner = root_as_inner(root),
                .ordered = ordered, .root = root};
    memset(&k, 0, sizeof k);
    for (int i = 0; i < nprod; i++)
        if (!add_sub(&s, prods[i])) {
            st = s.st;
            goto done;
        }
    bool is_reduce = fc_op_is_reduce(root->op) && !s.root_inner;
    /* Emit, order the loops, and check that the inner reductions fuse; those that do not are
     * realised and the kernel is emitted again with loads of them (and such a kernel is not
     * kept: its key is of the DAG before those were realised). */
    int result;
    for (;;) {
        result = emit_root(&s, root);
        for (int g = 0; sc && g < sc->n && result >= 0; g++) {
            int8_t map[FC_MAX_DIMS];
            for (int l = 0; l < root->nlev; l++)
                map[l] = (int8_t)l;
            scatter[g] = sc->at[g];
            scatter[g].reg = sregs[g] = emit(&s, sc->index[g], map);
            if (scatter[g].reg < 0)
                result = -1;
        }
        if (result < 0 && s.apart && s.apart != root && s.st == FC_ERR_VALUE) {
            /* Nested reductions that need more loops than a kernel has, or an arg reduction: the
             * first such one is computed apart, and read. */
            const FcNode *sub = s.apart;
            s.apart = NULL;
            s.st = FC_OK;
            if (!add_sub(&s, sub)) {
                st = s.st;
                goto done;
            }
            sched_reset(&s);
            keep = false;
            continue;
        }
        if (result < 0) {
            st = s.st;
            goto done;
        }
        if (out_strides) {
            memcpy(strides, out_strides, (size_t)nlev * sizeof *strides);
        } else {
            int perm[FC_MAX_DIMS];
            if (is_reduce || root->c_order) {
                for (int i = 0; i < nlev; i++)
                    perm[i] = nlev - 1 - i;
            } else {
                iterator_perm(&s, nlev, perm);
            }
            fc_dense_strides(nlev, root->size, perm, strides);
        }
        memcpy(k.out_strides, strides, (size_t)nlev * sizeof *strides);
        for (int l = nlev; l < s.nloop; l++)
            k.out_strides[l] = 0;
        order_loops(&s, &k, sc ? AS_GIVEN : is_reduce ? BY_INPUT : BY_OUTPUT, arg);
        merge_loops(&s, &k, arg);
        add_unit_loop(&s, &k);
        if (!analyse(&s)) {
            st = fc_nomem(err);
            goto done;
        }
        int cl = fc_kplan_chunk_loop(s.target, s.nloop, s.extent, s.owner, sc != NULL, s.ncode, s.deps);
        mem_free(bad);
        bad = mem_malloc((size_t)s.ncode + 1);
        int nbad = bad ? unfused(&s, result, sregs, sc ? sc->n : 0, cl, bad) : -1;
        if (nbad < 0) {
            st = fc_nomem(err);
            goto done;
        }
        if (nbad == 0) {
            k.chunk_loop = s.nloop > s.nroot ? cl : -1;
            break;
        }
        for (int c = 0; c < s.ncode; c++) {
            if (bad[c] && s.node_of[c] == root) {
                /* The root as an inner reduction does not fuse (its loops hold no point, or it
                 * would be computed again per point): realising it would schedule it again as
                 * it is, for ever. It is a root reduction instead. */
                s.root_inner = false;
                is_reduce = fc_op_is_reduce(root->op);
                continue;
            }
            if (bad[c] && !add_sub(&s, s.node_of[c])) {
                st = s.st;
                goto done;
            }
        }
        sched_reset(&s);
        keep = false;
    }
    if (!(ctx->sched_off & FC_SCHED_BOUNDS) && (!find_bounds(&s, k.chunk_loop) || !compact_code(&s, &result, sregs, sc ? sc->n : 0))) {
        st = s.st;
        goto done;
    }
    /* The fused ops the backend takes, on the final code (what they replace is dropped). */
    if (fc_kplan_fuse(s.code, s.ncode, s.nloop, s.extent, s.owner, result, sregs, sc ? sc->n : 0, backend_takes, be) > 0 &&
        !compact_code(&s, &result, sregs, sc ? sc->n : 0)) {
        st = s.st;
        goto done;
    }
    for (int g = 0; sc && g < sc->n; g++)
        scatter[g].reg = sregs[g];
    if (!out_strides) {
        st = new_output(ctx, root, dev, &out_storage, err);
        if (st)
            goto done;
        *new_storage = out_storage;
        memcpy(new_strides, strides, (size_t)nlev * sizeof *strides);
        out_offset = 0;
    }
    if (sc) {
        k.nscatter = sc->n;
        k.scatter = scatter;
        k.accumulate = sc->accumulate;
        k.checked = sc->checked;
    }
    k.no_hoist = ctx->sched_off & FC_SCHED_HOIST;
    k.result = result;
    k.nreg = s.ncode;
    k.nloop = s.nloop;
    memcpy(k.extent, s.extent, (size_t)s.nloop * sizeof *s.extent);
    memcpy(k.reduced, s.reduced, (size_t)s.nloop * sizeof *s.reduced);
    memcpy(k.owner, s.owner, (size_t)s.nloop * sizeof *s.owner);
    k.code = s.code;
    k.ncode = s.ncode;
    k.reduce = is_reduce ? root->op : FC_OP_NONE;
    k.out = out_storage->data;
    k.out_dtype = root->dtype;
    k.out_offset = out_offset;
    void *bufs[64];
    void **bp = s.nbufs <= 64 ? bufs : mem_malloc((size_t)s.nbufs * sizeof *bp);
    if (!bp) {
        st = fc_nomem(err);
        goto done;
    }
    for (int i = 0; i < s.nbufs; i++)
        bp[i] = s.bufs[i]->data;
    k.bufs = bp;
    k.nbufs = s.nbufs;
    k.index32 = fits32(k.out_offset, k.out_strides, k.extent, k.nloop);
    for (int c = 0; c < s.ncode && k.index32; c++) {
        const FcInstr *in = &s.code[c];
        if (in->op != FC_OP_LOAD)
            continue;
        /* A gathered dim spans its stride times its extent (indices are checked against it). */
        int64_t st2[2 * FC_MAX_DIMS], ext2[2 * FC_MAX_DIMS];
        int n2 = 0;
        for (int l = 0; l < k.nloop; l++, n2++) {
            st2[n2] = in->strides[l];
            ext2[n2] = k.extent[l];
        }
        for (int g = 0; g < in->ngather; g++, n2++) {
            st2[n2] = in->gathers[g].stride;
            ext2[n2] = in->gathers[g].extent > 0 ? in->gathers[g].extent : 1;
        }
        k.index32 = fits32(in->offset, st2, ext2, n2);
    }
    k.nthreads = ctx->nthreads;
    k.interrupt = ctx->interrupt;
    /* The one analysis of the kernel, which the backend and the kernel cache take with it; a
     * kernel the backend cannot compute is refused before it is kept. */
    FcPlan *plan = NULL;
    st = fc_kplan_new(&k, be->target->name, &plan, err);
    for (int c = 0; !st && c < k.ncode; c++) {
        const FcInstr *in = &k.code[c];
        st = be->supports(be, in, in->a >= 0 ? k.code[plan->opv[3 * c]].dtype : in->dtype, err);
    }
    k.plan = plan;
    const FcCached *kept = !st && keep ? fc_kcache_add(ctx, &key, &k, s.bufs, s.node_of, out_strides ? NULL : strides, be) : NULL;
    if (!st)
        st = launch(ctx, be, &k, dev, kept ? kept->prep : NULL, err);
    if (!kept)
        fc_kplan_free(plan);
    if (bp != bufs)
        mem_free(bp);
done:
    fc_key_release(ctx, &key);
    mem_free(bad);
    sched_free(&s);
    if (st && *new_storage) {
        fc_storage_release(*new_storage);
        *new_storage = NULL;
    }
    return st;
}

FcStatus fc_realize(FcCtx *ctx, FcTensor *t, FcError *err)
{
    if (!t->node)
        return FC_OK;
    FcStorage *storage = NULL;
    int64_t strides[FC_MAX_DIMS];
    FcStatus st = run_root(ctx, t->node, t->device, NULL, 0, NULL, NULL, &storage, strides, err);
    if (!st)
        st = fc_grad_record(ctx, storage, 0, strides, t->node, NULL, err);
    if (st) {
        fc_storage_release(storage);
        return st;
    }
    fc_tensor_become_stored(t, storage, 0, strides);    /* its values now live on t->device */
    fc_storage_release(storage);
    fc_tensor_realised_view(t);
    return FC_OK;
}

FcStatus fc_realize_target(FcCtx *ctx, FcTensor *t, FcError *err)
{
    FcTensor *root = t;
    while (fc_tensor_is_lazy(root) && root->alias_of)
        root = root->alias_of;
    FcStatus st = fc_realize(ctx, root, err);
    return st ? st : fc_realize(ctx, t, err);
}

/* Whether the DAG n reads storage s; each node is looked at once (those marked with this walk's
 * stamp are not looked at again: a DAG that reuses its values has far more paths than nodes). */
static bool reads_storage(FcNode *n, const FcStorage *s, uint64_t mark)
{
    if (n->mark == mark)
        return false;
    n->mark = mark;
    if (n->op == FC_OP_LOAD && n->storage == s)
        return true;
    for (int k = 0; k < n->nin; k++)
        if (reads_storage(n->in[k], s, mark))
            return true;
    return false;
}

static bool dag_reads(FcNode *n, const FcStorage *s)
{
    return reads_storage(n, s, fc_walk_stamp());
}

/* When the DAG *n reads storage s (about to be written), computes it into fresh memory first
 * and replaces *n by a load of that: a write never reads what it overwrites. */
static FcStatus detach(FcCtx *ctx, FcNode **n, FcStorage *s, FcDevice dev, FcError *err)
{
    if (!dag_reads(*n, s))
        return FC_OK;
    FcTensor *tmp = fc_tensor_from_node(*n, dev, NULL, 0);     /* takes *n */
    *n = NULL;
    if (!tmp)
        return fc_nomem(err);
    FcStatus st = fc_realize(ctx, tmp, err);
    if (!st) {
        *n = fc_tensor_node(tmp);       /* holds the temporary's storage */
        if (!*n)
            st = fc_nomem(err);
    }
    fc_tensor_release(tmp);
    return st;
}

FcStatus fc_assign(FcCtx *ctx, FcTensor *dst, FcTensor *src, FcError *err)
{
    if (!dst->storage)
        return fc_errf(err, FC_ERR_VALUE, "internal error: assignment into a lazy tensor");
    int nd;
    int64_t shape[FC_MAX_DIMS];
    FcStatus st = fc_broadcast_shapes(dst->ndim, dst->shape, src->ndim, src->shape, &nd, shape, err);
    if (st)
        return st;
    bool same = nd == dst->ndim;
    for (int i = 0; i < nd && same; i++)
        same = shape[i] == dst->shape[i];
    if (!same) {
        char a[256], b[256];
        return fc_errf(err, FC_ERR_RUNTIME, "output with shape %s doesn't match the broadcast shape %s",
                       fc_shape_str(a, sizeof a, dst->ndim, dst->shape), fc_shape_str(b, sizeof b, nd, shape));
    }
    /* From another device (copy_, .to(), a host view into a CUDA tensor): moved first, as bytes. */
    if (!fc_device_eq(src->device, dst->device)) {
        FcTensor *moved = NULL;
        st = fc_move_device(ctx, src, dst->device, &moved, err);
        if (!st)
            st = fc_assign(ctx, dst, moved, err);
        fc_tensor_release(moved);
        return st;
    }
    /* A reduction can be the root of the kernel that writes dst only when nothing is left to do
     * after it; otherwise (and for DAGs too big to fuse) src is realised first. */
    if (src->node && (fc_op_is_reduce(src->node->op) || fc_node_bigger(src->node, ctx->max_fused))) {
        bool root_ok = fc_op_is_reduce(src->node->op) && src->dtype == dst->dtype && src->ndim == dst->ndim;
        for (int i = 0; i < src->ndim && root_ok; i++)
            root_ok = src->shape[i] == dst->shape[i];
        if (!root_ok) {
            st = fc_realize(ctx, src, err);
            if (st)
                return st;
        }
    }
    st = fc_grad_check_write(dst->storage, dst->view, err);    /* naming a view of a leaf */
    if (!st)
        st = fc_storage_prepare_write(ctx, dst->storage, err);
    if (st)
        return st;
    FcNode *n = fc_tensor_node(src);
    if (!n)
        return fc_nomem(err);
    st = detach(ctx, &n, dst->storage, src->device, err);
    if (st)
        return st;
    bool direct = n->dtype == dst->dtype && n->nlev == dst->ndim;
    for (int i = 0; i < n->nlev && direct; i++)
        direct = n->size[i] == dst->shape[i];
    if (!direct) {
        /* Cast and broadcast to dst's shape. */
        FcNode *c = fc_node_place(n, dst->dtype, dst->ndim, dst->shape, dst->ndim);
        fc_node_release(n);
        n = c;
        if (!n)
            return fc_nomem(err);
    }
    FcStorage *unused = NULL;
    st = run_root(ctx, n, dst->device, dst->storage, dst->offset, dst->strides, NULL, &unused, NULL, err);
    if (!st)
        st = fc_grad_after_write(ctx, dst->storage, dst->offset, dst->strides, n, NULL, err);
    fc_node_release(n);
    return st;
}

FcStatus fc_store_scattered(FcCtx *ctx, FcStorage *dst, int64_t offset, const int64_t *strides, FcNode *value,
                            const FcScatter *sc, FcError *err)
{
    FcStatus st = fc_storage_prepare_write(ctx, dst, err);
    if (st)
        return st;
    FcScatter own = *sc;
    FcNode *n = fc_node_retain(value);
    for (int g = 0; g < own.n; g++)
        fc_node_retain(own.index[g]);
    st = detach(ctx, &n, dst, dst->device, err);
    for (int g = 0; g < own.n && !st; g++)
        st = detach(ctx, &own.index[g], dst, dst->device, err);
    FcStorage *unused = NULL;
    if (!st)
        st = run_root(ctx, n, dst->device, dst, offset, strides, &own, &unused, NULL, err);
    if (!st)
        st = fc_grad_after_write(ctx, dst, offset, strides, n, &own, err);
    fc_node_release(n);
    for (int g = 0; g < own.n; g++)
        fc_node_release(own.index[g]);
    return st;
}

/* ---- text of a kernel ---- */

static void loops_str(char *buf, size_t cap, uint64_t m)
{
    size_t n = 0;
    buf[0] = 0;
    n += (size_t)snprintf(buf + n, cap - n, "{");
    for (int l = 0; l < 64 && n < cap; l++)
        if (m >> l & 1)
            n += (size_t)snprintf(buf + n, cap - n, "%si%d", n > 1 ? "," : "", l);
    if (n < cap)
        snprintf(buf + n, cap - n, "}");
}

char *fc_kernel_dump(const FcKernel *k)
{
    size_t cap = 1024 + (size_t)k->ncode * 512 + (size_t)k->nloop * 64;
    char *p = mem_malloc(cap);
    if (!p)
        return NULL;
    size_t n = 0;
#define OUT(...) do { if (n < cap) n += (size_t)snprintf(p + n, cap - n, __VA_ARGS__); } while (0)
    uint64_t roots = 0;
    OUT("kernel: %d loops [", k->nloop);
    for (int l = 0; l < k->nloop; l++) {
        OUT("%s%lld%s", l ? ", " : "", (long long)k->extent[l], k->reduced[l] ? "r" : "");
        if (k->owner[l] >= 0)
            OUT(" in r%d", k->owner[l]);
        else if (k->extent[l] > 1)
            roots |= (uint64_t)1 << l;
    }
    OUT("], %d registers, %s indices", k->nreg, k->index32 ? "32-bit" : "64-bit");
    if (k->chunk_loop >= 0)
        OUT(", vector loop i%d", k->chunk_loop);
    if (k->no_hoist)
        OUT(", unhoisted");
    OUT("\n");
    char dom[512];
    for (int c = 0; c < k->ncode; c++) {
        const FcInstr *in = &k->code[c];
        /* Its context: the root loops and those of the reductions whose body it is in. */
        uint64_t ctx = roots;
        int depth = 0;
        for (int l = 0; l < k->nloop; l++) {
            int r = k->owner[l];
            if (r >= 0 && r > c && (in->deps >> l & 1)) {
                uint64_t own = 0;
                for (int j = 0; j < k->nloop; j++)
                    if (k->owner[j] == r)
                        own |= (uint64_t)1 << j;
                if (!(ctx & own))
                    depth++;
                ctx |= own;
            }
        }
        OUT("  %*sr%d = %s", 2 * depth, "", in->dst, fc_op_name(in->op));
        if (in->op == FC_OP_CAST)
            OUT("<%s>", fc_dtype_name(in->src_dtype));
        if (in->op == FC_OP_WHERE_CMP && fc_dtype_is_float(in->src_dtype))
            OUT("<%s %.9g>", fc_op_name(in->cmp), in->konst.f);
        else if (in->op == FC_OP_WHERE_CMP)
            OUT("<%s %lld>", fc_op_name(in->cmp), (long long)in->konst.i);
        if (in->op == FC_OP_CONST) {
            if (fc_dtype_is_float(in->dtype))
                OUT(" %.9g", in->konst.f);
            else
                OUT(" %lld", (long long)in->konst.i);
        }
        if (in->op == FC_OP_IOTA)
            OUT(" loop%d", in->loop);
        if (in->op == FC_OP_LOAD) {
            OUT(" buf%d[%lld", in->buf, (long long)in->offset);
            for (int l = 0; l < k->nloop; l++)
                OUT(" %+lld*i%d", (long long)in->strides[l], l);
            for (int g = 0; g < in->ngather; g++)
                OUT(" %+lld*r%d%s", (long long)in->gathers[g].stride, in->gathers[g].reg,
                    in->gathers[g].wrap ? "(wrap)" : "");
            OUT("]");
        }
        int ops[3] = {in->a, in->b, in->c};
        for (int o = 0; o < 3; o++)
            if (ops[o] >= 0)
                OUT(" r%d", ops[o]);
        if (fc_op_is_reduce(in->op)) {
            OUT(" over");
            for (int l = 0; l < k->nloop; l++)
                if (k->owner[l] == c) {
                    OUT(" i%d", l);
                    for (int b = 0; b < in->nbound; b++)
                        if (in->bounds[b].loop == l)
                            OUT(" (bound %s r%d)", in->bounds[b].cmp == FC_OP_LT ? "<" : "<=", in->bounds[b].reg);
                }
        }
        loops_str(dom, sizeof dom, in->deps);
        OUT(" : %s over %s", fc_dtype_name(in->dtype), dom);
        if (in->deps == 0 && in->op != FC_OP_CONST)
            OUT(" (invariant)");
        else if ((in->deps & ctx) != ctx && in->op != FC_OP_CONST)
            OUT(" (hoisted)");
        OUT("\n");
    }
    if (k->reduce != FC_OP_NONE)
        OUT("  %s r%d -> out[%lld", fc_op_name(k->reduce), k->result, (long long)k->out_offset);
    else
        OUT("  %s r%d -> out[%lld", k->accumulate ? "add" : "store", k->result, (long long)k->out_offset);
    for (int l = 0; l < k->nloop; l++)
        OUT(" %+lld*i%d", (long long)k->out_strides[l], l);
    for (int g = 0; g < k->nscatter; g++)
        OUT(" %+lld*r%d%s", (long long)k->scatter[g].stride, k->scatter[g].reg, k->scatter[g].wrap ? "(wrap)" : "");
    OUT("] : %s\n", fc_dtype_name(k->out_dtype));
#undef OUT
    if (n >= cap)
        p[cap - 1] = 0;
    return p;
}
