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
 *  - registers: linear scan over the straight-line code;
 *  - 32-bit index arithmetic when every access fits.
 * Depends on fcdim.h, internal.h and the backend interface. */
#include "internal.h"

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

typedef struct Sched {
    FcCtx *ctx;
    FcError *err;
    FcStatus st;
    int nloop;
    int64_t extent[FC_MAX_DIMS];
    bool reduced[FC_MAX_DIMS];
    int8_t red_loop[FC_MAX_DIMS];      /* root reduction: operand level -> loop (or -1) */
    FcInstr *code;
    int ncode, capcode;
    Memo *memo;
    int nmemo, capmemo;
    FcStorage **bufs;                  /* the storages loaded (borrowed from the DAG) */
    int nbufs, capbufs;
} Sched;

static void sched_free(Sched *s)
{
    for (int i = 0; i < s->ncode; i++) {
        free(s->code[i].strides);
        free(s->code[i].gathers);
    }
    free(s->code);
    for (int i = 0; i < s->nmemo; i++)
        free(s->memo[i].map);
    free(s->memo);
    free(s->bufs);
}

static bool grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return true;
    int c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
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

static FcInstr *new_instr(Sched *s, FcOp op, FcDType dt)
{
    if (!grow((void **)&s->code, &s->capcode, s->ncode + 1, sizeof *s->code)) {
        fail(s, FC_ERR_NOMEM, "out of memory");
        return NULL;
    }
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

/* Where level j of operand k of a node lands, given the node's mapping. */
static int8_t compose(Sched *s, int8_t lm, const int8_t *map, int j)
{
    if (lm == FC_LEV_BCAST)
        return -1;
    if (lm == FC_LEV_REDUCED)
        return s->red_loop[j];
    return map[lm];
}

static int emit(Sched *s, const FcNode *n, const int8_t *map);

static int emit_operand(Sched *s, const FcNode *n, int k, const int8_t *map)
{
    const FcNode *in = n->in[k];
    int8_t sub[FC_MAX_DIMS];
    for (int j = 0; j < in->nlev; j++)
        sub[j] = compose(s, n->lev_map[k][j], map, j);
    return emit(s, in, sub);
}

static int emit_load(Sched *s, const FcNode *n, const int8_t *map)
{
    int64_t *strides = calloc((size_t)(s->nloop ? s->nloop : 1), sizeof *strides);
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
            sub[j] = compose(s, n->lev_map[k][j], map, j);
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
                free(strides);
                return fail(s, FC_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld",
                            (long long)i, n->index_dim[k], (long long)ext);
            }
            offset += (i < 0 ? i + ext : i) * n->strides[k];
        } else {
            int r = emit(s, ix, sub);
            if (r < 0) {
                free(strides);
                return -1;
            }
            if (!s->code[r].invariant)
                invariant = false;
            g[ng++] = (FcGather){.reg = r, .stride = n->strides[k], .extent = n->shape[k],
                                 .wrap = n->wrap >> k & 1, .dim = n->index_dim[k]};
        }
    }
    int b = buf_index(s, n->storage);
    FcInstr *in = b < 0 ? NULL : new_instr(s, FC_OP_LOAD, n->dtype);
    if (!in) {
        free(strides);
        return -1;
    }
    in->buf = b;
    in->offset = offset;
    in->strides = strides;
    in->invariant = invariant;
    if (ng) {
        in->gathers = malloc((size_t)ng * sizeof *in->gathers);
        if (!in->gathers)
            return fail(s, FC_ERR_NOMEM, "out of memory");
        memcpy(in->gathers, g, (size_t)ng * sizeof *g);
        in->ngather = ng;
    }
    return in->dst;
}

static int emit(Sched *s, const FcNode *n, const int8_t *map)
{
    if (s->st)
        return -1;
    for (int i = 0; i < s->nmemo; i++)
        if (s->memo[i].node == n && memcmp(s->memo[i].map, map, (size_t)n->nlev) == 0)
            return s->memo[i].reg;
    int reg = -1;
    FcInstr *in;
    if (n->op == FC_OP_CAST && n->in[0]->dtype == n->dtype)    /* only moves levels (a broadcast) */
        return emit_operand(s, n, 0, map);
    switch (n->op) {
    case FC_OP_CONST:
        in = new_instr(s, FC_OP_CONST, n->dtype);
        if (!in)
            return -1;
        in->konst = n->konst;
        in->invariant = true;
        reg = in->dst;
        break;
    case FC_OP_IOTA:
        if (map[0] < 0 || s->extent[map[0]] <= 1) {
            in = new_instr(s, FC_OP_CONST, FC_INT64);
            if (!in)
                return -1;
            in->konst.i = 0;
            in->invariant = true;
        } else {
            in = new_instr(s, FC_OP_IOTA, FC_INT64);
            if (!in)
                return -1;
            in->loop = map[0];
        }
        reg = in->dst;
        break;
    case FC_OP_LOAD:
        reg = emit_load(s, n, map);
        break;
    default: {
        if (fc_op_is_reduce(n->op))
            return fail(s, FC_ERR_VALUE, "internal error: a reduction inside a kernel");
        int ops[3] = {-1, -1, -1};
        bool invariant = true;
        for (int k = 0; k < n->nin && k < 3; k++) {
            ops[k] = emit_operand(s, n, k, map);
            if (ops[k] < 0)
                return -1;
            invariant = invariant && s->code[ops[k]].invariant;
        }
        in = new_instr(s, n->op, n->dtype);
        if (!in)
            return -1;
        in->a = ops[0];
        in->b = ops[1];
        in->c = ops[2];
        in->invariant = invariant;
        if (n->op == FC_OP_CAST || n->op == FC_OP_ISNAN)
            in->src_dtype = n->in[0]->dtype;
        else if (fc_op_is_compare(n->op))
            in->src_dtype = n->src_dtype;
        reg = in->dst;
        break;
    }
    }
    if (reg < 0)
        return -1;
    if (!grow((void **)&s->memo, &s->capmemo, s->nmemo + 1, sizeof *s->memo))
        return fail(s, FC_ERR_NOMEM, "out of memory");
    int8_t *m = malloc((size_t)(n->nlev ? n->nlev : 1));
    if (!m)
        return fail(s, FC_ERR_NOMEM, "out of memory");
    memcpy(m, map, (size_t)n->nlev);
    s->memo[s->nmemo++] = (Memo){n, m, reg};
    return reg;
}

/* Emits the code of root; the loops are root's levels then its reduced levels. Returns the
 * register of the value to store or reduce. */
static int emit_root(Sched *s, const FcNode *root)
{
    s->nloop = root->nlev;
    memcpy(s->extent, root->size, (size_t)root->nlev * sizeof *s->extent);
    int8_t map[FC_MAX_DIMS];
    for (int l = 0; l < root->nlev; l++)
        map[l] = (int8_t)l;
    if (!fc_op_is_reduce(root->op))
        return emit(s, root, map);
    const FcNode *in = root->in[0];
    for (int j = 0; j < in->nlev; j++) {
        s->red_loop[j] = -1;
        if (root->lev_map[0][j] == FC_LEV_REDUCED) {
            if (s->nloop >= FC_MAX_DIMS)
                return fail(s, FC_ERR_VALUE, "too many loops");
            s->red_loop[j] = (int8_t)s->nloop;
            s->reduced[s->nloop] = true;
            s->extent[s->nloop++] = in->size[j];
        }
    }
    return emit_operand(s, root, 0, map);
}

/* ---- layout ---- */

/* PyTorch's TensorIterator::reorder_dimensions over the affine loads (in emission order): perm[0]
 * is the fastest-varying loop. */
static void iterator_perm(const Sched *s, int n, int *perm)
{
    for (int i = 0; i < n; i++)
        perm[i] = n - 1 - i;
    for (int i = 1; i < n; i++) {
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; d0--) {
            int cmp = 0;
            for (int c = 0; c < s->ncode && cmp == 0; c++) {
                const FcInstr *in = &s->code[c];
                if (in->op != FC_OP_LOAD)
                    continue;
                int64_t s0 = in->strides[perm[d0]], s1 = in->strides[perm[d1]];
                if (s0 == 0 || s1 == 0)
                    continue;
                if (s0 < 0)
                    s0 = -s0;
                if (s1 < 0)
                    s1 = -s1;
                if (s0 < s1)
                    cmp = -1;
                else if (s0 > s1)
                    cmp = 1;
                else if (s->extent[perm[d0]] > s->extent[perm[d1]])
                    cmp = 1;
            }
            if (cmp > 0) {
                int t = perm[d0];
                perm[d0] = perm[d1];
                perm[d1] = t;
                d1 = d0;
            } else if (cmp < 0) {
                break;
            }
        }
    }
}

/* ---- finishing: loop order, merging, registers ---- */

static bool loop_has_iota(const Sched *s, int l)
{
    for (int i = 0; i < s->ncode; i++)
        if (s->code[i].op == FC_OP_IOTA && s->code[i].loop == l)
            return true;
    return false;
}

/* Renumbers loops: new loop i is old loop order[i]; loops not in order are dropped (extent 1). */
static void apply_loop_order(Sched *s, FcKernel *k, const int *order, int n)
{
    int64_t ext[FC_MAX_DIMS], ostr[FC_MAX_DIMS];
    bool red[FC_MAX_DIMS];
    int newof[FC_MAX_DIMS];
    for (int l = 0; l < s->nloop; l++)
        newof[l] = -1;
    for (int i = 0; i < n; i++) {
        ext[i] = s->extent[order[i]];
        red[i] = s->reduced[order[i]];
        ostr[i] = k->out_strides[order[i]];
        newof[order[i]] = i;
    }
    for (int c = 0; c < s->ncode; c++) {
        FcInstr *in = &s->code[c];
        if (in->op == FC_OP_IOTA)
            in->loop = newof[in->loop];
        if (in->op == FC_OP_LOAD) {
            int64_t st[FC_MAX_DIMS];
            for (int i = 0; i < n; i++)
                st[i] = in->strides[order[i]];
            memcpy(in->strides, st, (size_t)n * sizeof *st);
        }
    }
    memcpy(s->extent, ext, (size_t)n * sizeof *ext);
    memcpy(s->reduced, red, (size_t)n * sizeof *red);
    memcpy(k->out_strides, ostr, (size_t)n * sizeof *ostr);
    s->nloop = n;
}

typedef enum LoopOrder { BY_OUTPUT, BY_INPUT, AS_GIVEN } LoopOrder;

static void order_loops(Sched *s, FcKernel *k, LoopOrder how, bool keep_reduced)
{
    /* Key: |stride| in the output (pointwise) or the first varying load (reductions); broadcast
     * (0) loops go outermost. Stable: equal keys keep their order. AS_GIVEN only drops the
     * loops of extent 1 (scattered stores write in the order of the root's levels). */
    const int64_t *key = how == BY_OUTPUT ? k->out_strides : NULL;
    if (how == BY_INPUT) {
        key = NULL;
        for (int c = 0; c < s->ncode && !key; c++)
            if (s->code[c].op == FC_OP_LOAD && !s->code[c].invariant)
                key = s->code[c].strides;
    }
    int order[FC_MAX_DIMS], n = 0;
    for (int l = 0; l < s->nloop; l++)
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

/* Merges loop i into loop i+1 where every access steps through them as one. */
static void merge_loops(Sched *s, FcKernel *k, bool argreduce)
{
    for (int i = s->nloop - 2; i >= 0; i--) {
        int j = i + 1;
        if (s->reduced[i] != s->reduced[j] || (argreduce && s->reduced[i]))
            continue;
        if (loop_has_iota(s, i) || loop_has_iota(s, j))
            continue;
        bool ok = k->out_strides[i] == k->out_strides[j] * s->extent[j];
        for (int c = 0; c < s->ncode && ok; c++)
            if (s->code[c].op == FC_OP_LOAD)
                ok = s->code[c].strides[i] == s->code[c].strides[j] * s->extent[j];
        if (!ok)
            continue;
        int order[FC_MAX_DIMS], n = 0;
        s->extent[j] *= s->extent[i];
        for (int l = 0; l < s->nloop; l++)
            if (l != i)
                order[n++] = l;
        apply_loop_order(s, k, order, n);
    }
}

static bool fits32(int64_t offset, const int64_t *strides, const int64_t *extent, int n)
{
    int64_t lo = offset, hi = offset;
    for (int l = 0; l < n; l++) {
        if (extent[l] == 0)
            return true;
        int64_t span = strides[l] * (extent[l] - 1);
        if (span > 0)
            hi += span;
        else
            lo += span;
        if (hi > INT32_MAX || lo < INT32_MIN)
            return false;
    }
    return true;
}

/* Linear-scan register allocation over the straight-line code; invariant registers are never
 * reused. Rewrites dst/a/b/c/gathers[].reg and k->result; sets k->nreg. */
static bool alloc_registers(Sched *s, FcKernel *k, int result)
{
    int n = s->ncode;
    int *last = malloc((size_t)(n ? n : 1) * sizeof *last);
    int *phys = malloc((size_t)(n ? n : 1) * sizeof *phys);
    int *freelist = malloc((size_t)(n ? n : 1) * sizeof *freelist);
    if (!last || !phys || !freelist) {
        free(last);
        free(phys);
        free(freelist);
        return false;
    }
    for (int i = 0; i < n; i++)
        last[i] = i;
    for (int i = 0; i < n; i++) {
        const FcInstr *in = &s->code[i];
        int ops[3] = {in->a, in->b, in->c};
        for (int o = 0; o < 3; o++)
            if (ops[o] >= 0)
                last[ops[o]] = i;
        for (int g = 0; g < in->ngather; g++)
            last[in->gathers[g].reg] = i;
    }
    if (result >= 0)
        last[result] = n;
    for (int g = 0; g < k->nscatter; g++)
        last[k->scatter[g].reg] = n;        /* read by the store, after the code */
    int nfree = 0, nreg = 0;
    for (int i = 0; i < n; i++) {
        FcInstr *in = &s->code[i];
        in->a = in->a >= 0 ? phys[in->a] : -1;
        in->b = in->b >= 0 ? phys[in->b] : -1;
        in->c = in->c >= 0 ? phys[in->c] : -1;
        for (int g = 0; g < in->ngather; g++)
            in->gathers[g].reg = phys[in->gathers[g].reg];
        phys[i] = nfree > 0 && !in->invariant ? freelist[--nfree] : nreg++;
        in->dst = phys[i];
        /* Free the operands whose last use is here (after choosing dst: no aliasing). */
        for (int j = 0; j < i; j++)
            if (last[j] == i && !s->code[j].invariant)
                freelist[nfree++] = phys[j];
    }
    k->result = result >= 0 ? phys[result] : -1;
    for (int g = 0; g < k->nscatter; g++)
        k->scatter[g].reg = phys[k->scatter[g].reg];
    k->nreg = nreg;
    free(last);
    free(phys);
    free(freelist);
    return true;
}

/* ---- running ---- */

static void dump(FcCtx *ctx, int what, char *text)
{
    if (text && ctx->dump && (ctx->dump_flags & what))
        ctx->dump(ctx->dump_ud, text);
    free(text);
}

/* Schedules root and writes its value into out_storage at out_offset with out_strides (one per
 * root level); out_strides NULL: a fresh layout (TensorIterator's order, C order for
 * reductions) is chosen and a storage allocated, returned in *new_storage / new_strides.
 * sc (or NULL): the store is scattered by these indices (root is not a reduction). */
static FcStatus run_root(FcCtx *ctx, const FcNode *root, FcDevice dev, FcStorage *out_storage,
                         int64_t out_offset, const int64_t *out_strides, const FcScatter *sc,
                         FcStorage **new_storage, int64_t *new_strides, FcError *err)
{
    Sched s = {.ctx = ctx, .err = err};
    FcKernel k;
    memset(&k, 0, sizeof k);
    FcGather scatter[FC_MAX_DIMS];
    FcBackend *be = NULL;
    FcStatus st = fc_ctx_backend(ctx, dev, &be, err);
    if (st)
        return st;
    bool is_reduce = fc_op_is_reduce(root->op);
    int result = emit_root(&s, root);
    for (int g = 0; sc && g < sc->n && result >= 0; g++) {
        int8_t map[FC_MAX_DIMS];
        for (int l = 0; l < root->nlev; l++)
            map[l] = (int8_t)l;
        scatter[g] = sc->at[g];
        scatter[g].reg = emit(&s, sc->index[g], map);
        if (scatter[g].reg < 0)
            result = -1;
    }
    if (result < 0) {
        st = s.st;
        goto done;
    }
    if (ctx->dump && (ctx->dump_flags & FC_DUMP_IR))
        dump(ctx, FC_DUMP_IR, fc_node_dump(root));
    int nlev = root->nlev;
    int64_t strides[FC_MAX_DIMS];
    if (out_strides) {
        memcpy(strides, out_strides, (size_t)nlev * sizeof *strides);
    } else {
        int perm[FC_MAX_DIMS];
        if (is_reduce) {
            for (int i = 0; i < nlev; i++)
                perm[i] = nlev - 1 - i;
        } else {
            iterator_perm(&s, nlev, perm);
        }
        int64_t acc = 1;
        for (int i = 0; i < nlev; i++) {
            strides[perm[i]] = acc;
            acc *= root->size[perm[i]] > 0 ? root->size[perm[i]] : 1;
        }
        int64_t numel = 1;
        for (int i = 0; i < nlev; i++)
            numel *= root->size[i];
        st = fc_storage_new(ctx, dev, (size_t)numel * fc_dtype_size(root->dtype), &out_storage, err);
        if (st)
            goto done;
        *new_storage = out_storage;
        memcpy(new_strides, strides, (size_t)nlev * sizeof *strides);
        out_offset = 0;
    }
    memcpy(k.out_strides, strides, (size_t)nlev * sizeof *strides);
    for (int l = nlev; l < s.nloop; l++)
        k.out_strides[l] = 0;
    order_loops(&s, &k, sc ? AS_GIVEN : is_reduce ? BY_INPUT : BY_OUTPUT,
                root->op == FC_OP_ARGMAX || root->op == FC_OP_ARGMIN);
    merge_loops(&s, &k, root->op == FC_OP_ARGMAX || root->op == FC_OP_ARGMIN);
    if (sc) {
        k.nscatter = sc->n;
        k.scatter = scatter;
        k.accumulate = sc->accumulate;
    }
    if (!alloc_registers(&s, &k, result)) {
        st = fc_nomem(err);
        goto done;
    }
    k.nloop = s.nloop;
    memcpy(k.extent, s.extent, (size_t)s.nloop * sizeof *s.extent);
    memcpy(k.reduced, s.reduced, (size_t)s.nloop * sizeof *s.reduced);
    k.code = s.code;
    k.ncode = s.ncode;
    k.reduce = is_reduce ? root->op : FC_OP_NONE;
    k.out = out_storage->data;
    k.out_dtype = root->dtype;
    k.out_offset = out_offset;
    void *bufs[64];
    void **bp = s.nbufs <= 64 ? bufs : malloc((size_t)s.nbufs * sizeof *bp);
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
    if (ctx->dump && (ctx->dump_flags & FC_DUMP_KERNELS))
        dump(ctx, FC_DUMP_KERNELS, fc_kernel_dump(&k));
    st = be->run(be, &k, err);
    if (bp != bufs)
        free(bp);
done:
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
    if (st)
        return st;
    fc_tensor_drop_reads(t);
    fc_node_release(t->node);
    t->node = NULL;
    t->storage = storage;
    t->offset = 0;
    memcpy(t->strides, strides, (size_t)t->ndim * sizeof *strides);
    return FC_OK;
}

static bool dag_reads(const FcNode *n, const FcStorage *s)
{
    if (n->op == FC_OP_LOAD && n->storage == s)
        return true;
    for (int k = 0; k < n->nin; k++)
        if (dag_reads(n->in[k], s))
            return true;
    return false;
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
    /* A reduction can be the root of the kernel that writes dst only when nothing is left to do
     * after it; otherwise (and for DAGs too big to fuse) src is realised first. */
    if (src->node && (fc_op_is_reduce(src->node->op) || src->node->count > ctx->max_fused)) {
        bool root_ok = fc_op_is_reduce(src->node->op) && src->dtype == dst->dtype && src->ndim == dst->ndim;
        for (int i = 0; i < src->ndim && root_ok; i++)
            root_ok = src->shape[i] == dst->shape[i];
        if (!root_ok) {
            st = fc_realize(ctx, src, err);
            if (st)
                return st;
        }
    }
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
    fc_node_release(n);
    for (int g = 0; g < own.n; g++)
        fc_node_release(own.index[g]);
    return st;
}

/* ---- text of a kernel ---- */

char *fc_kernel_dump(const FcKernel *k)
{
    size_t cap = 1024 + (size_t)k->ncode * 256 + (size_t)k->nloop * 64;
    char *p = malloc(cap);
    if (!p)
        return NULL;
    size_t n = 0;
#define OUT(...) do { if (n < cap) n += (size_t)snprintf(p + n, cap - n, __VA_ARGS__); } while (0)
    OUT("kernel: %d loops [", k->nloop);
    for (int l = 0; l < k->nloop; l++)
        OUT("%s%lld%s", l ? ", " : "", (long long)k->extent[l], k->reduced[l] ? "r" : "");
    OUT("], %d registers, %s indices\n", k->nreg, k->index32 ? "32-bit" : "64-bit");
    for (int c = 0; c < k->ncode; c++) {
        const FcInstr *in = &k->code[c];
        OUT("  r%d = %s", in->dst, fc_op_name(in->op));
        if (in->op == FC_OP_CAST)
            OUT("<%s>", fc_dtype_name(in->src_dtype));
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
        OUT(" : %s%s\n", fc_dtype_name(in->dtype), in->invariant ? " (invariant)" : "");
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
