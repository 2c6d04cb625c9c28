/* autograd.c — reverse-mode gradients over the IR (fcdim.h, "gradients").
 *
 * The records: a storage whose contents need a gradient points to an FcGradRec, a leaf or a
 * write (an IR expression stored at an offset with strides, maybe scattered), linked to the record
 * of what the write overwrote (prev). Each record lists the storages its expression loads with
 * their versions and records at the time, so that a backward reads each load as the contents it
 * saw, and refuses (PyTorch's message) when a value it needs was overwritten since.
 *
 * The backward: a cotangent per record (a flat gradient buffer over the storage's elements),
 * filled by scatter-adds of the cotangents of the loads that read that storage; records are taken
 * newest first (a record only reads older ones), each one's cotangent read at the positions it
 * wrote, pushed through its expression by the per-op rules below (vjp_rule: lazy IR over the
 * node's levels, fused by the scheduler like any forward), and what it did not overwrite handed to
 * prev. The scatter-adds run as kernels with an accumulating store, whose elements each get their
 * contributions in loop order (the backend splits the work only over owner loops, owner.c): the
 * same bits every run and at every thread count (docs/architecture.md, "Gradients").
 *
 * Depends on fcdim.h and internal.h. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

_Thread_local bool fc_grad_off;
_Thread_local long fc_grad_live;
static _Thread_local uint64_t grad_seq;
static _Thread_local FcGradRec *live_head;   /* every record alive on this thread */

typedef struct GradRead {
    FcStorage *s;               /* reference */
    uint64_t version;
    FcGradRec *rec;             /* reference, or NULL */
} GradRead;

/* REC_LIB: a write by a library op (a convolution a device's library computed, conv.c): a WRITE
 * whose value is the op's lazy tdl reference (never run forward), whose backward asks the library
 * for its operands' gradients first (backprop_lib) and differentiates the reference only for an
 * operand the library declines. */
/* REC_MOVE: a copy from another device (fc_move_device): a WRITE whose value is a plain LOAD of
 * the source, on the source's device; its backward (backprop_move) copies the cotangent back
 * there. */
enum { REC_LEAF, REC_WRITE, REC_LIB, REC_MOVE };

struct FcGradRec {
    int32_t refcnt;
    int kind;
    uint64_t seq;               /* creation order: a record reads only older ones */
    FcCtx *ctx;
    FcGradRec *live_prev, *live_next;
    FcGradRec *prev;            /* WRITE: the record of the contents it overwrote (reference), or NULL */
    FcDType dtype;              /* of the storage's elements */
    FcDevice device;
    int64_t nelem;              /* elements of the storage */
    /* LEAF: the leaf's geometry and accumulated gradient; WRITE: the levels of value, their
     * strides, the offset. */
    int ndim;
    int64_t shape[FC_MAX_DIMS], strides[FC_MAX_DIMS], offset;
    FcTensor *gradt;
    FcNode *value;              /* WRITE (reference; NULL once freed by a backward) */
    FcScatter sc;               /* WRITE: scattered dims (index references) */
    int nreads;
    GradRead *reads;
    bool freed;
    bool off;                   /* LEAF: kept while requires_grad is off (FcStorage.grad_off): a
                                 * backward adds nothing to it, as PyTorch's AccumulateGrad of a
                                 * tensor that no longer requires grad */
    FcOp op;                    /* the root op of value, for grad_fn ... */
    const char *fn;             /* ... or its declared derivative's name (vjp_name) */
    FcLibConv *lib;             /* LIB: the op (its operands' references) */
    struct FcRetained *retain;  /* the stored tensors over this storage that retain their gradient
                                   (a list through FcRetained.next, references) */
};

/* retain_grad()'s holder of a gradient: referenced by the tensor, and by the node (lazy tensor) or
 * the record (stored tensor) where a backward finds the tensor's cotangent. */
struct FcRetained {
    int32_t refcnt;
    FcTensor *grad;             /* accumulated, or NULL */
    int ndim;                   /* on a record: the tensor's geometry in the storage */
    int64_t shape[FC_MAX_DIMS], strides[FC_MAX_DIMS], offset;
    struct FcRetained *next;    /* the record's next one (a reference) */
};

void fc_retained_release(struct FcRetained *b)
{
    while (b && --b->refcnt == 0) {
        struct FcRetained *next = b->next;
        fc_tensor_release(b->grad);
        mem_free(b);
        b = next;
    }
}

static struct FcRetained *retained_ref(struct FcRetained *b)
{
    if (b)
        b->refcnt++;
    return b;
}

/* A composite's declared derivative (fc_grad_declare): its operands' nodes, each with the map of its
 * levels into the composite's (as an operand's lev_map). */
struct FcVjp {
    FcVjpRule rule;
    bool reduce;                /* a reduction: map marks the reduced levels FC_LEV_REDUCED */
    int nin;
    FcNode *in[3];              /* references */
    int8_t map[3][FC_MAX_DIMS];
    double k;
};

void fc_vjp_free(struct FcVjp *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->nin; i++)
        fc_node_release(v->in[i]);
    mem_free(v);
}

void fc_grad_declare(FcTensor *t, FcVjpRule rule, int n, FcTensor *const *ops, double k)
{
    FcNode *r = t->node;
    if (fc_grad_off || !fc_grad_live || !r || r->refcnt != 1 || r->vjp || t->levels || r->nlev != t->ndim ||
        (t->dtype != FC_FLOAT32 && t->dtype != FC_FLOAT64) || n > 3)
        return;
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (ops[i]->dtype != t->dtype || ops[i]->levels || ops[i]->ndim > t->ndim)
            return;
        any |= fc_requires_grad(ops[i]);
    }
    struct FcVjp *v = any ? mem_calloc(1, sizeof *v) : NULL;
    if (!v)
        return;     /* out of memory: the IR is differentiated */
    v->rule = rule;
    v->k = k;
    for (int i = 0; i < n; i++) {
        FcTensor *o = ops[i];
        if (!(v->in[i] = fc_tensor_node(o)) || v->in[i]->nlev != o->ndim) {
            v->nin = v->in[i] ? i + 1 : i;
            fc_vjp_free(v);
            return;
        }
        v->nin = i + 1;
        for (int j = 0; j < o->ndim; j++) {
            int l = j + t->ndim - o->ndim;
            if (o->shape[j] != t->shape[l] && o->shape[j] != 1) {
                fc_vjp_free(v);
                return;
            }
            v->map[i][j] = (int8_t)(o->shape[j] == 1 && t->shape[l] != 1 ? FC_LEV_BCAST : l);
        }
    }
    r->vjp = v;
}

void fc_grad_declare_reduce(FcTensor *t, FcVjpRule rule, FcTensor *x, uint64_t dim_mask, bool keepdim, double k)
{
    FcNode *r = t->node;
    if (fc_grad_off || !fc_grad_live || !r || r->refcnt != 1 || r->vjp || t->levels || x->levels ||
        r->nlev != t->ndim || (t->dtype != FC_FLOAT32 && t->dtype != FC_FLOAT64) || x->dtype != t->dtype ||
        !fc_requires_grad(x))
        return;
    struct FcVjp *v = mem_calloc(1, sizeof *v);
    if (!v || !(v->in[0] = fc_tensor_node(x)) || v->in[0]->nlev != x->ndim) {
        fc_vjp_free(v);
        return;     /* out of memory: the IR is differentiated */
    }
    v->rule = rule;
    v->k = k;
    v->reduce = true;
    v->nin = 1;
    if (dim_mask == 0)      /* all dims */
        dim_mask = x->ndim >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << x->ndim) - 1;
    for (int j = 0, l = 0; j < x->ndim; j++) {
        bool red = (dim_mask >> j) & 1;
        v->map[0][j] = (int8_t)(red ? FC_LEV_REDUCED : l);
        l += !red || keepdim;
    }
    r->vjp = v;
}

/* grad_fn's name of a node with a declared derivative (PyTorch's), or NULL. */
static const char *vjp_name(const struct FcVjp *v)
{
    if (!v)
        return NULL;
    switch (v->rule) {
    case FC_VJP_LERP: return v->nin == 2 ? "LerpBackward0" : "LerpBackward1";
    case FC_VJP_ADDCMUL: return "AddcmulBackward0";
    case FC_VJP_ADDCDIV: return "AddcdivBackward0";
    case FC_VJP_SUB: return "SubBackward0";
    case FC_VJP_SOFTMAX: return "SoftmaxBackward0";
    case FC_VJP_LOG_SOFTMAX: return "LogSoftmaxBackward0";
    case FC_VJP_LOGSUMEXP: return "LogsumexpBackward0";
    case FC_VJP_VAR: return "VarBackward0";
    case FC_VJP_STD: return "StdBackward0";
    case FC_VJP_NORM: return "NormBackward1";
    }
    return NULL;
}

void fc_set_grad_enabled(bool on) { fc_grad_off = !on; }
bool fc_is_grad_enabled(void) { return !fc_grad_off; }

/* ---- records ---- */

static void rec_clear(FcGradRec *r)
{
    fc_node_release(r->value);
    r->value = NULL;
    for (int g = 0; g < r->sc.n; g++)
        fc_node_release(r->sc.index[g]);
    r->sc.n = 0;
    for (int i = 0; i < r->nreads; i++) {
        fc_storage_release(r->reads[i].s);
        fc_grad_rec_release(r->reads[i].rec);
    }
    mem_free(r->reads);
    r->reads = NULL;
    r->nreads = 0;
    FcGradRec *p = r->prev;
    r->prev = NULL;
    fc_grad_rec_release(p);
    fc_retained_release(r->retain);
    r->retain = NULL;
    if (r->lib) {
        fc_tensor_release(r->lib->x);
        fc_tensor_release(r->lib->w);
        mem_free(r->lib);
        r->lib = NULL;
    }
}

void fc_grad_rec_release(FcGradRec *r)
{
    if (!r || --r->refcnt > 0)
        return;
    r->refcnt = 1;      /* clearing may come back here through a cycle */
    rec_clear(r);
    fc_tensor_release(r->gradt);
    r->gradt = NULL;
    if (r->live_prev)
        r->live_prev->live_next = r->live_next;
    else if (live_head == r)
        live_head = r->live_next;
    if (r->live_next)
        r->live_next->live_prev = r->live_prev;
    fc_grad_live--;
    mem_free(r);
}

void fc_grad_free_all(FcCtx *ctx)
{
    for (;;) {
        FcGradRec *r = live_head;
        while (r && (r->ctx != ctx || (!r->value && !r->nreads && !r->prev && !r->gradt && !r->lib && !r->retain)))
            r = r->live_next;
        if (!r)
            return;
        r->refcnt++;
        rec_clear(r);
        fc_tensor_release(r->gradt);
        r->gradt = NULL;
        fc_grad_rec_release(r);
    }
}

static FcGradRec *rec_new(FcCtx *ctx, int kind, FcDType dt, FcStorage *s)
{
    FcGradRec *r = fc_zalloc(sizeof *r);
    if (!r)
        return NULL;
    r->refcnt = 1;
    r->kind = kind;
    r->seq = ++grad_seq;
    r->ctx = ctx;
    r->dtype = dt;
    r->device = s->device;
    r->nelem = (int64_t)(s->nbytes / fc_dtype_size(dt));
    r->live_next = live_head;
    if (live_head)
        live_head->live_prev = r;
    live_head = r;
    fc_grad_live++;
    return r;
}

/* Gives s the record r (taking the reference). */
static void storage_set_rec(FcStorage *s, FcGradRec *r)
{
    FcGradRec *old = s->grad;
    s->grad = r;
    fc_grad_rec_release(old);
}

/* ---- which nodes need a gradient ---- */

/* A small map from pointers to ints (open addressing), for the walks. */
typedef struct PtrMap {
    const void **key;
    int *val;
    size_t cap, n;
} PtrMap;

static void pm_free(PtrMap *m)
{
    mem_free(m->key);
    mem_free(m->val);
    memset(m, 0, sizeof *m);
}

static size_t pm_slot(const PtrMap *m, const void *p)
{
    size_t h = ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull;
    size_t i = h & (m->cap - 1);
    while (m->key[i] && m->key[i] != p)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int *pm_get(const PtrMap *m, const void *p)
{
    if (!m->cap)
        return NULL;
    size_t i = pm_slot(m, p);
    return m->key[i] ? &m->val[i] : NULL;
}

static bool pm_put(PtrMap *m, const void *p, int v)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        PtrMap b = {mem_calloc(cap, sizeof(void *)), mem_calloc(cap, sizeof(int)), cap, 0};
        if (!b.key || !b.val) {
            pm_free(&b);
            return false;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                size_t j = pm_slot(&b, m->key[i]);
                b.key[j] = m->key[i];
                b.val[j] = m->val[i];
                b.n++;
            }
        pm_free(m);
        *m = b;
    }
    size_t i = pm_slot(m, p);
    if (!m->key[i]) {
        m->key[i] = p;
        m->n++;
    }
    m->val[i] = v;
    return true;
}

/* The record a load of s reads: that of the record being differentiated (when it lists s), else
 * the storage's own. */
static FcGradRec *read_rec(const FcGradRec *ctxrec, const FcStorage *s)
{
    if (ctxrec) {
        for (int i = 0; i < ctxrec->nreads; i++)
            if (ctxrec->reads[i].s == s)
                return ctxrec->reads[i].rec;
        return NULL;
    }
    return s->grad;
}

/* Whether n needs a gradient (memo: 1 yes, 2 no); -1 on out-of-memory. */
static int needs(FcNode *n, const FcGradRec *ctxrec, PtrMap *memo)
{
    int *m = pm_get(memo, n);
    if (m)
        return *m == 1;
    int r = 0;
    if (!n->nograd && fc_dtype_is_float(n->dtype)) {
        if (n->op == FC_OP_LOAD)
            r = read_rec(ctxrec, n->storage) != NULL;
        else
            for (int k = 0; k < n->nin; k++) {
                int c = needs(n->in[k], ctxrec, memo);
                if (c < 0)
                    return -1;
                r |= c;
            }
    }
    return pm_put(memo, n, r ? 1 : 2) ? r : -1;
}

static bool node_needs(FcNode *n)
{
    if (!fc_grad_live || !n || n->nograd)
        return false;
    PtrMap memo = {0};
    int r = needs(n, NULL, &memo);
    pm_free(&memo);
    return r > 0;
}

bool fc_requires_grad(FcTensor *t)
{
    if (t->node)
        return node_needs(t->node);
    return t->storage && t->storage->grad;
}

/* ---- recording ---- */

/* The storages n's DAG loads (with their versions and records now), added to r->reads. */
static bool collect_reads(FcNode *n, FcGradRec *r, PtrMap *seen)
{
    if (pm_get(seen, n))
        return true;
    if (!pm_put(seen, n, 1))
        return false;
    if (n->op == FC_OP_LOAD) {
        bool have = false;
        for (int i = 0; i < r->nreads && !have; i++)
            have = r->reads[i].s == n->storage;
        if (!have) {
            GradRead *g = mem_realloc(r->reads, (size_t)(r->nreads + 1) * sizeof *g);
            if (!g)
                return false;
            r->reads = g;
            g[r->nreads].s = fc_storage_retain(n->storage);
            g[r->nreads].version = n->storage->version;
            g[r->nreads].rec = n->storage->grad;
            if (n->storage->grad)
                n->storage->grad->refcnt++;
            r->nreads++;
        }
    }
    for (int k = 0; k < n->nin; k++)
        if (!collect_reads(n->in[k], r, seen))
            return false;
    /* a declared derivative reads its operands, which n may read only through stored results
     * (a reduction realised first when fusion is off) */
    for (int k = 0; n->vjp && k < n->vjp->nin; k++)
        if (!collect_reads(n->vjp->in[k], r, seen))
            return false;
    return true;
}

FcStatus fc_grad_check_write(const FcStorage *s, bool view, FcError *err)
{
    if (!fc_grad_off && s->grad && s->grad->kind == REC_LEAF)
        return fc_errf(err, FC_ERR_RUNTIME, "a %sleaf Variable that requires grad is being used in an in-place operation.",
                       view ? "view of a " : "");
    return FC_OK;
}

FcStatus fc_grad_before_write(FcStorage *s, FcError *err)
{
    FcStatus st = fc_grad_check_write(s, false, err);
    if (!st)
        s->version++;
    return st;
}

FcStatus fc_grad_after_write(FcCtx *ctx, FcStorage *dst, int64_t offset, const int64_t *strides, FcNode *value,
                             const FcScatter *sc, FcError *err)
{
    if (fc_grad_off || !fc_grad_live)
        return FC_OK;
    return fc_grad_record(ctx, dst, offset, strides, value, sc, err);
}

/* A write r over the contents that record prev made: the tensors that retain their gradient
 * there (prev's, and a lazy one that prev realised) retain the new value's instead, as PyTorch
 * moves the hook to the in-place op's result. */
static void move_retained(FcGradRec *r, FcGradRec *prev)
{
    if (!prev)
        return;
    r->retain = prev->retain;
    prev->retain = NULL;
    FcNode *v = prev->kind == REC_WRITE ? prev->value : NULL;
    if (v && v->retain && !v->retain->next && prev->ndim == v->nlev) {
        struct FcRetained *b = v->retain;
        v->retain = NULL;
        b->ndim = prev->ndim;
        memcpy(b->shape, prev->shape, sizeof b->shape);
        memcpy(b->strides, prev->strides, sizeof b->strides);
        b->offset = prev->offset;
        b->next = r->retain;
        r->retain = b;          /* the node's reference */
    }
}

FcStatus fc_grad_record(FcCtx *ctx, FcStorage *dst, int64_t offset, const int64_t *strides, FcNode *value,
                        const FcScatter *sc, FcError *err)
{
    if (!fc_grad_live)
        return FC_OK;
    bool need = node_needs(value);
    if (!need && !dst->grad)
        return FC_OK;
    FcGradRec *r = rec_new(ctx, REC_WRITE, value->dtype, dst);
    if (!r)
        return fc_nomem(err);
    r->ndim = value->nlev;
    memcpy(r->shape, value->size, (size_t)value->nlev * sizeof *r->shape);
    memcpy(r->strides, strides, (size_t)value->nlev * sizeof *r->strides);
    r->offset = offset;
    r->op = value->op == FC_OP_CAST && value->narrows ? value->in[0]->op : value->op;
    r->fn = vjp_name(value->vjp);
    r->value = fc_node_retain(value);
    if (sc) {
        r->sc = *sc;
        for (int g = 0; g < sc->n; g++)
            fc_node_retain(sc->index[g]);
    }
    r->prev = dst->grad;
    if (r->prev)
        r->prev->refcnt++;
    move_retained(r, r->prev);
    PtrMap seen = {0};
    bool ok = collect_reads(value, r, &seen);
    pm_free(&seen);
    if (!ok) {
        fc_grad_rec_release(r);
        return fc_nomem(err);
    }
    storage_set_rec(dst, r);
    return FC_OK;
}

FcStatus fc_grad_library(FcCtx *ctx, FcTensor *y, FcTensor *ref, const FcLibConv *lc, FcError *err)
{
    if (fc_grad_off || !fc_grad_live || !ref || !ref->node || !y->storage || y->storage->grad || y->ndim != 4)
        return FC_OK;
    FcNode *value = ref->node;
    if (!node_needs(value))
        return FC_OK;
    /* the reference's levels (n, g, k, h, w) over y's (n, (g, k), h, w) */
    int64_t strides[5] = {y->strides[0], y->strides[1] * value->size[2], y->strides[1], y->strides[2], y->strides[3]};
    if (value->nlev != 5 || value->size[0] != y->shape[0] || value->size[1] * value->size[2] != y->shape[1] ||
        value->size[3] != y->shape[2] || value->size[4] != y->shape[3])
        return fc_errf(err, FC_ERR_RUNTIME, "%s: its gradient's reference does not match its result", lc->op);
    FcLibConv *l = fc_zalloc(sizeof *l);
    if (!l)
        return fc_nomem(err);
    FcStatus st = fc_grad_record(ctx, y->storage, y->offset, strides, value, NULL, err);
    FcGradRec *r = y->storage->grad;
    if (st || !r || r->kind != REC_WRITE || r->value != value) {
        mem_free(l);
        return st;
    }
    *l = *lc;
    fc_tensor_retain(l->x);
    fc_tensor_retain(l->w);
    r->kind = REC_LIB;
    r->lib = l;
    return FC_OK;
}

FcStatus fc_grad_move(FcCtx *ctx, FcTensor *src, FcTensor *dst, FcError *err)
{
    if (fc_grad_off || !fc_grad_live || src->node || !fc_requires_grad(src))
        return FC_OK;
    FcNode *value = fc_tensor_node(src);
    if (!value)
        return fc_nomem(err);
    FcStatus st = fc_grad_record(ctx, dst->storage, dst->offset, dst->strides, value, NULL, err);
    FcGradRec *r = dst->storage->grad;
    if (!st && r && r->kind == REC_WRITE && r->value == value)
        r->kind = REC_MOVE;
    fc_node_release(value);
    return st;
}

static bool same_geometry(const FcTensor *t, const FcGradRec *r)
{
    if (t->ndim != r->ndim || t->offset != r->offset)
        return false;
    for (int k = 0; k < t->ndim; k++)
        if (t->shape[k] != r->shape[k] || (t->shape[k] > 1 && t->strides[k] != r->strides[k]))
            return false;
    return true;
}

/* A leaf record with t's (realised) geometry and no gradient yet. */
static FcGradRec *leaf_new(FcCtx *ctx, FcTensor *t)
{
    FcGradRec *r = rec_new(ctx, REC_LEAF, t->dtype, t->storage);
    if (!r)
        return NULL;
    r->ndim = t->ndim;
    memcpy(r->shape, t->shape, (size_t)t->ndim * sizeof *r->shape);
    memcpy(r->strides, t->strides, (size_t)t->ndim * sizeof *r->strides);
    r->offset = t->offset;
    return r;
}

FcStatus fc_set_requires_grad(FcCtx *ctx, FcTensor *t, bool on, FcError *err)
{
    if (!on) {
        if (!fc_is_leaf(t))
            return fc_errf(err, FC_ERR_RUNTIME,
                           "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                           "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
        if (t->storage && t->storage->grad) {
            FcStorage *s = t->storage;
            /* what read it lazily was made while it needed a gradient, and keeps its own */
            FcStatus st = fc_storage_realize_readers(ctx, s, err);
            if (st)
                return st;
            fc_grad_rec_release(s->grad_off);
            s->grad_off = s->grad;
            s->grad_off->off = true;
            s->grad = NULL;
        }
        return FC_OK;
    }
    if (!fc_dtype_is_float(t->dtype))
        return fc_errf(err, FC_ERR_RUNTIME, "only Tensors of floating point dtype can require gradients");
    if (fc_requires_grad(t))
        return FC_OK;   /* a leaf, or a result (PyTorch refuses only to turn a result's off) */
    /* what reads it lazily was made before it needed a gradient and does not get one (as in
     * PyTorch, where b = a * 2 before a.requires_grad_() has no grad_fn): realised first */
    FcStatus st = fc_realize(ctx, t, err);
    if (st == FC_OK)
        st = fc_storage_realize_readers(ctx, t->storage, err);
    if (st)
        return st;
    FcStorage *s = t->storage;
    FcGradRec *r = s->grad_off && same_geometry(t, s->grad_off) ? s->grad_off : leaf_new(ctx, t);
    if (!r)
        return fc_nomem(err);
    if (r != s->grad_off)
        fc_grad_rec_release(s->grad_off);
    s->grad_off = NULL;
    r->off = false;
    storage_set_rec(s, r);
    return FC_OK;
}

bool fc_is_leaf(FcTensor *t)
{
    if (!fc_requires_grad(t))
        return true;
    return !t->node && !t->view && t->storage->grad->kind == REC_LEAF && same_geometry(t, t->storage->grad);
}

/* The leaf record whose .grad t shows: its storage's, or the one kept while requires_grad is
 * off, with t's geometry; NULL when there is none. */
static FcGradRec *leaf_rec(FcTensor *t)
{
    if (t->node || !t->storage || t->view)
        return NULL;
    FcGradRec *r = t->storage->grad ? t->storage->grad : t->storage->grad_off;
    return r && r->kind == REC_LEAF && same_geometry(t, r) ? r : NULL;
}

FcTensor *fc_grad_of(FcTensor *t)
{
    if (t->retained)
        return fc_tensor_retain(t->retained->grad);
    FcGradRec *r = leaf_rec(t);
    return r ? fc_tensor_retain(r->gradt) : NULL;
}

FcStatus fc_grad_set(FcCtx *ctx, FcTensor *t, FcTensor *g, FcError *err)
{
    FcGradRec *r = leaf_rec(t);
    if (!r && !g && !t->retained)
        return FC_OK;
    if (g) {
        bool same = g->ndim == t->ndim && g->dtype == t->dtype;
        for (int k = 0; same && k < t->ndim; k++)
            same = g->shape[k] == t->shape[k];
        if (!same)
            return fc_errf(err, FC_ERR_RUNTIME, "assigned grad has data of a different size or type");
    }
    if (t->retained) {
        fc_tensor_release(t->retained->grad);
        t->retained->grad = fc_tensor_retain(g);
        return FC_OK;
    }
    if (!r) {
        /* a tensor that needs no gradient keeps an assigned one, as PyTorch's: in a leaf record
         * kept off, which requires_grad_() takes up */
        if (fc_requires_grad(t) || (t->storage && t->storage->grad_off))
            return fc_errf(err, FC_ERR_RUNTIME, "assigning .grad of a tensor that is not a leaf requiring grad is not supported");
        FcStatus st = fc_realize(ctx, t, err);     /* a lazy t gets fresh storage: none kept there */
        if (st)
            return st;
        r = t->storage->grad_off = leaf_new(ctx, t);
        if (!r)
            return fc_nomem(err);
        r->off = true;
    }
    fc_tensor_release(r->gradt);
    r->gradt = fc_tensor_retain(g);
    return FC_OK;
}

FcStatus fc_retain_grad(FcCtx *ctx, FcTensor *t, FcError *err)
{
    (void)ctx;
    if (!fc_requires_grad(t))
        return fc_errf(err, FC_ERR_RUNTIME, "can't retain_grad on Tensor that has requires_grad=False");
    if (fc_is_leaf(t) || t->retained)
        return FC_OK;
    if (t->levels || t->alias_of)
        return fc_errf(err, FC_ERR_RUNTIME,
                       "retain_grad() of a tensor with first-class dims is not supported: make it positional first "
                       "with t.order(...)");
    if (t->node && t->node->retain) {
        t->retained = retained_ref(t->node->retain);    /* another tensor over the same node */
        return FC_OK;
    }
    struct FcRetained *b = mem_calloc(1, sizeof *b);
    if (!b)
        return fc_nomem(err);
    b->refcnt = 2;
    t->retained = b;
    if (t->node) {
        t->node->retain = b;
        return FC_OK;
    }
    /* stored: on its storage's record, with its geometry there */
    FcGradRec *r = t->storage->grad;
    b->ndim = t->ndim;
    memcpy(b->shape, t->shape, (size_t)t->ndim * sizeof *b->shape);
    memcpy(b->strides, t->strides, (size_t)t->ndim * sizeof *b->strides);
    b->offset = t->offset;
    b->next = r->retain;
    r->retain = b;
    return FC_OK;
}

bool fc_retains_grad(const FcTensor *t)
{
    return t->retained != NULL;
}

/* PyTorch's name of the backward of an op: "exp" -> "ExpBackward0", "floor_divide" -> "FloorDivideBackward0". */
static const char *backward_name(FcOp op, char *buf, size_t cap)
{
    const char *nm;
    switch (op) {
    case FC_OP_LOAD: nm = "index"; break;
    case FC_OP_CAST: nm = "to_copy"; break;
    case FC_OP_MIN: nm = "minimum"; break;
    case FC_OP_FMA: nm = "add"; break;      /* add with an alpha (lerp's and addcmul's are declared) */
    case FC_OP_MAX: nm = "maximum"; break;
    case FC_OP_FMAX16: nm = "fmax"; break;
    case FC_OP_FMIN16: nm = "fmin"; break;
    default: nm = fc_op_name(op); break;
    }
    size_t n = 0;
    bool up = true;
    for (const char *p = nm; *p && n + 12 < cap; p++) {
        if (*p == '_') {
            up = true;
            continue;
        }
        buf[n++] = up && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        up = false;
    }
    snprintf(buf + n, cap - n, "Backward0");
    return buf;
}

void fc_grad_name(FcTensor *t, const char *name)
{
    if (!fc_requires_grad(t) || fc_is_leaf(t))
        return;
    t->grad_name = name;
    t->grad_named = t->node ? (const void *)t->node : (const void *)t->storage->grad;
}

const char *fc_grad_fn_name(FcTensor *t, char *buf, size_t cap)
{
    if (!fc_requires_grad(t) || fc_is_leaf(t))
        return NULL;
    if (t->grad_name && t->grad_named == (t->node ? (const void *)t->node : (const void *)t->storage->grad))
        return snprintf(buf, cap, "%s", t->grad_name), buf;
    if (t->node && t->node->vjp)
        return snprintf(buf, cap, "%s", vjp_name(t->node->vjp)), buf;
    if (t->node)
        return backward_name(t->node->op == FC_OP_CAST && t->node->narrows ? t->node->in[0]->op : t->node->op, buf,
                             cap);
    FcGradRec *r = t->storage->grad;
    if (r->kind == REC_LIB && r->offset == t->offset && t->ndim == 4 && r->prev == NULL)
        return snprintf(buf, cap, "ConvolutionBackward0"), buf;
    if (r->kind == REC_MOVE && r->offset == t->offset && r->ndim == t->ndim && r->prev == NULL)
        return snprintf(buf, cap, "ToCopyBackward0"), buf;
    /* the write that made t, or one over all of its storage (an in-place op on it: named after the
     * op, as PyTorch renames a tensor's grad_fn); a write into part of t (over another, or into a
     * tensor that needed no gradient) is CopySlices */
    int64_t written = 1;
    for (int k = 0; k < r->ndim; k++)
        written *= r->shape[k];
    if (r->kind == REC_WRITE && same_geometry(t, r) && !r->sc.n && (r->prev == NULL || fc_tensor_numel(t) == r->nelem))
        return r->fn ? (snprintf(buf, cap, "%s", r->fn), buf) : backward_name(r->op, buf, cap);
    if (r->kind == REC_WRITE && (r->prev || (fc_tensor_numel(t) > written && t->offset <= r->offset)))
        return snprintf(buf, cap, "CopySlices"), buf;
    snprintf(buf, cap, "AsStridedBackward0");
    return buf;
}

/* A storage of its own over the same memory, holding a reference to the original: no record. */
static void release_shared(void *ud, void *data)
{
    (void)data;
    fc_storage_release(ud);
}

FcStatus fc_detach(FcCtx *ctx, FcTensor *t, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcStatus st = fc_realize(ctx, t, err);
    if (st)
        return st;
    if (!t->storage->grad)
        return fc_as_strided(ctx, t, t->ndim, t->shape, t->strides, t->offset, out, err);
    FcStorage *s = fc_zalloc(sizeof *s);
    if (!s)
        return fc_nomem(err);
    s->refcnt = 1;
    s->device = t->storage->device;
    s->data = t->storage->data;
    s->nbytes = t->storage->nbytes;
    s->backend = t->storage->backend;
    s->release = release_shared;
    s->release_ud = fc_storage_retain(t->storage);
    *out = fc_tensor_view_over(t, s);
    fc_storage_release(s);
    return *out ? FC_OK : fc_nomem(err);
}

/* ---- building backward IR (every node here is made with gradients off) ---- */

/* n1 op n2 over n1's domain (n2 over the same levels, or 0 levels: broadcast). */
static FcNode *mk(FcOp op, FcDType dt, FcNode *a, FcNode *b, FcNode *c)
{
    FcNode *ins[3] = {a, b, c};
    int nin = c ? 3 : b ? 2 : 1;
    FcNode *dom = a;
    for (int k = 0; k < nin; k++)
        if (ins[k] && ins[k]->nlev > dom->nlev)
            dom = ins[k];
    for (int k = 0; k < nin; k++)
        if (!ins[k])
            return NULL;
    FcNode *n = fc_node_new(op, dt, dom->nlev, dom->size, nin, ins);
    if (!n)
        return NULL;
    n->src_dtype = fc_op_is_compare(op) ? a->dtype : op == FC_OP_WHERE ? dt : op == FC_OP_CAST ? a->dtype : dt;
    for (int k = 0; k < nin; k++)
        if (ins[k]->nlev == dom->nlev)
            for (int j = 0; j < dom->nlev; j++)
                n->lev_map[k][j] = (int8_t)(ins[k]->size[j] == 1 && dom->size[j] != 1 ? FC_LEV_BCAST : j);
    return fc_node_widen(n);
}

/* Building with ownership: each helper releases the nodes it is given (NULL-safe), so rules can
 * nest calls; any NULL (out of memory) propagates. */
static FcNode *own1(FcOp op, FcDType dt, FcNode *a)
{
    FcNode *n = a ? mk(op, dt, a, NULL, NULL) : NULL;
    fc_node_release(a);
    return n;
}

static FcNode *own2(FcOp op, FcDType dt, FcNode *a, FcNode *b)
{
    FcNode *n = a && b ? mk(op, dt, a, b, NULL) : NULL;
    fc_node_release(a);
    fc_node_release(b);
    return n;
}

static FcNode *own3(FcOp op, FcDType dt, FcNode *a, FcNode *b, FcNode *c)
{
    FcNode *n = a && b && c ? mk(op, dt, a, b, c) : NULL;
    fc_node_release(a);
    fc_node_release(b);
    fc_node_release(c);
    return n;
}

static FcNode *cst(FcDType dt, double v)
{
    FcNode *n = fc_node_new(FC_OP_CONST, dt, 0, NULL, 0, NULL);
    if (n) {
        if (fc_dtype_is_float(dt))
            n->konst.f = dt == FC_FLOAT32 ? (double)(float)v : v;
        else
            n->konst.i = (int64_t)v;
    }
    return n;
}

static FcNode *ref(FcNode *n) { return fc_node_retain(n); }

/* in, an operand of n whose levels map to n's by m, laid over n's levels (n not a reduction). */
static FcNode *place_from(FcNode *n, FcNode *in, const int8_t *m)
{
    FcNode *c = fc_node_new(FC_OP_CAST, in->dtype, n->nlev, n->size, 1, &in);
    if (!c)
        return NULL;
    c->src_dtype = in->dtype;
    memcpy(c->lev_map[0], m, (size_t)in->nlev);
    return c;
}

/* Operand k of n laid over n's levels (n not a reduction). */
static FcNode *place(FcNode *n, int k) { return place_from(n, n->in[k], n->lev_map[k]); }

/* The levels of f along which its value can vary (bit l: level l): none for a constant, for a
 * placement (a CAST to its own dtype) those its operand's reach, else those of size > 1. */
static uint64_t varying_levels(const FcNode *f)
{
    uint64_t r = 0;
    if (f->op == FC_OP_CAST && f->nin == 1 && f->in[0]->dtype == f->dtype) {
        uint64_t in = varying_levels(f->in[0]);
        for (int l = 0; l < f->in[0]->nlev; l++)
            if (((in >> l) & 1) && f->lev_map[0][l] >= 0)
                r |= (uint64_t)1 << f->lev_map[0][l];
    } else if (f->op != FC_OP_CONST) {
        for (int l = 0; l < f->nlev; l++)
            if (f->size[l] != 1)
                r |= (uint64_t)1 << l;
    }
    return r;
}

/* Whether the sum of C (over n's levels) that a broadcast operand of n takes is at::sum's in
 * PyTorch (sum_to): float32 or float64, not a constant, not a contraction (a product of two
 * factors that each vary along fewer levels than it: matmul's gradients, left to the products),
 * and its kept levels in order (the sum's output laid out as the operand's levels; inv: n's
 * level -> the operand's, or -1). */
static bool broadcast_sum(const FcNode *n, const FcNode *C, const int *inv)
{
    if ((C->dtype != FC_FLOAT32 && C->dtype != FC_FLOAT64) || n->dtype != C->dtype || C->op == FC_OP_CONST)
        return false;
    for (int i = 0, last = -1; i < n->nlev; i++)
        if (inv[i] >= 0) {
            if (inv[i] < last)
                return false;
            last = inv[i];
        }
    if (C->op != FC_OP_MUL || C->nin != 2)
        return true;
    uint64_t all = varying_levels(C), v[2];
    for (int k = 0; k < 2; k++) {
        uint64_t in = varying_levels(C->in[k]);
        v[k] = 0;
        for (int l = 0; l < C->in[k]->nlev; l++)
            if (((in >> l) & 1) && C->lev_map[k][l] >= 0)
                v[k] |= (uint64_t)1 << C->lev_map[k][l];
    }
    return !(v[0] && v[1] && (all & ~v[0]) && (all & ~v[1]));
}

/* C (over n's levels, dtype dt) taken to the levels of in, an operand of n whose levels map to n's
 * by m: n's levels that the operand does not map are summed over, operand levels that n reduces
 * or broadcasts get C as it is, and operand levels mapped twice (a diagonal) get C where their
 * indices agree, zero elsewhere. Takes C. */
static FcNode *pull_to(FcNode *n, FcNode *in, const int8_t *m, FcNode *C)
{
    if (!C)
        return NULL;
    int inv[FC_MAX_DIMS];
    int dup_a[FC_MAX_DIMS], dup_b[FC_MAX_DIMS], ndup = 0;
    bool sum = false;
    for (int i = 0; i < n->nlev; i++) {
        inv[i] = -1;
        for (int j = 0; j < in->nlev; j++)
            if (m[j] == i) {
                if (inv[i] < 0)
                    inv[i] = j;
                else {
                    dup_a[ndup] = inv[i];
                    dup_b[ndup++] = j;
                }
            }
        if (inv[i] < 0 && n->size[i] != 1)
            sum = true;
    }
    FcNode *r;
    if (sum) {
        /* Sum over a domain with the operand's levels that C does not give at size 1, then
         * broadcast. */
        int64_t sz[FC_MAX_DIMS];
        for (int j = 0; j < in->nlev; j++) {
            bool hit = false;
            for (int i = 0; i < n->nlev; i++)
                hit |= inv[i] == j;
            sz[j] = hit ? in->size[j] : 1;
        }
        FcNode *s = fc_node_new(FC_OP_SUM, C->dtype, in->nlev, sz, 1, &C);
        if (s)
            for (int i = 0; i < n->nlev; i++)
                s->lev_map[0][i] = (int8_t)(inv[i] >= 0 ? inv[i] : FC_LEV_REDUCED);
        /* PyTorch sums a broadcast operand's gradient with at::sum (sum_to): in its order where
         * the backend can, but for a contraction (matmul's gradients, kept for the products) */
        if (s && broadcast_sum(n, C, inv))
            s->order = FC_SUM_CASCADE;
        s = fc_node_widen(s);
        fc_node_release(C);
        if (!s)
            return NULL;
        r = fc_node_place(s, s->dtype, in->nlev, in->size, in->nlev);
        fc_node_release(s);
    } else {
        r = fc_node_new(FC_OP_CAST, C->dtype, in->nlev, in->size, 1, &C);
        if (r) {
            r->src_dtype = C->dtype;
            for (int i = 0; i < n->nlev; i++)
                r->lev_map[0][i] = (int8_t)(inv[i] >= 0 ? inv[i] : FC_LEV_BCAST);
        }
        fc_node_release(C);
    }
    for (int d = 0; d < ndup && r; d++) {
        FcNode *ia = fc_node_new(FC_OP_IOTA, FC_INT64, 1, &in->size[dup_a[d]], 0, NULL);
        FcNode *ib = fc_node_new(FC_OP_IOTA, FC_INT64, 1, &in->size[dup_b[d]], 0, NULL);
        FcNode *eq = ia && ib ? fc_node_new(FC_OP_EQ, FC_BOOL, in->nlev, in->size, 2, (FcNode *[]){ia, ib}) : NULL;
        if (eq) {
            eq->src_dtype = FC_INT64;
            eq->lev_map[0][0] = (int8_t)dup_a[d];
            eq->lev_map[1][0] = (int8_t)dup_b[d];
        }
        fc_node_release(ia);
        fc_node_release(ib);
        r = own3(FC_OP_WHERE, r->dtype, eq, r, cst(r->dtype, 0));
    }
    return r;
}

static FcNode *pull(FcNode *n, int k, FcNode *C) { return pull_to(n, n->in[k], n->lev_map[k], C); }

/* A value of n (a reduction) over operand k's levels (its reduced levels broadcast). */
static FcNode *spread(FcNode *n, int k, FcNode *v) { return pull(n, k, v); }

/* A reduction over the same levels as reduction n, of v (over n's operand's levels; taken). */
static FcNode *reduce_like(FcNode *n, FcOp op, FcDType dt, FcNode *v)
{
    if (!v)
        return NULL;
    FcNode *r = fc_node_new(op, dt, n->nlev, n->size, 1, &v);
    if (r)
        memcpy(r->lev_map[0], n->lev_map[0], (size_t)v->nlev);
    fc_node_release(v);
    return fc_node_widen(r);
}

/* The cotangents of n's operands given C (over n's levels, n's dtype): out[k] a new node over
 * in[k]'s levels, or NULL (no gradient flows there, or the operand needs none). False on
 * out-of-memory. */
static bool vjp_rule(FcNode *n, FcNode *C, FcNode **out)
{
    FcDType dt = n->dtype;
    FcNode *x = NULL, *y = NULL;
    if (!fc_op_is_reduce(n->op) && n->nin >= 1 && !(x = place(n, 0)))
        return false;
    if (!fc_op_is_reduce(n->op) && n->nin >= 2 && n->op != FC_OP_WHERE && !(y = place(n, 1))) {
        fc_node_release(x);
        return false;
    }
#define X() ref(x)
#define Y() ref(y)
#define N() ref(n)
#define Cc() ref(C)
#define K(v) cst(dt, v)
#define MUL(a, b) own2(FC_OP_MUL, dt, a, b)
#define DIV(a, b) own2(FC_OP_DIV, dt, a, b)
#define ADD(a, b) own2(FC_OP_ADD, dt, a, b)
#define SUB(a, b) own2(FC_OP_SUB, dt, a, b)
#define NEG(a) own1(FC_OP_NEG, dt, a)
#define U(op, a) own1(op, dt, a)
#define CMP(op, a, b) own2(op, FC_BOOL, a, b)
#define WHERE(c, a, b) own3(FC_OP_WHERE, dt, c, a, b)
#define OUT(k, v) (out[k] = pull(n, k, v), ok = ok && out[k])
    bool ok = true;
    switch (n->op) {
    case FC_OP_NEG: OUT(0, NEG(Cc())); break;
    case FC_OP_ABS: OUT(0, MUL(Cc(), U(FC_OP_SIGN, X()))); break;
    case FC_OP_EXP: case FC_OP_LIBM_EXP: OUT(0, MUL(Cc(), N())); break;
    case FC_OP_LOG: OUT(0, DIV(Cc(), X())); break;
    case FC_OP_SQRT: OUT(0, DIV(Cc(), MUL(K(2), N()))); break;
    case FC_OP_RSQRT: OUT(0, MUL(MUL(Cc(), K(-0.5)), MUL(MUL(N(), N()), N()))); break;
    case FC_OP_SIN: case FC_OP_LIBM_SIN: OUT(0, MUL(Cc(), U(FC_OP_COS, X()))); break;
    case FC_OP_COS: OUT(0, NEG(MUL(Cc(), U(FC_OP_SIN, X())))); break;
    case FC_OP_TAN: OUT(0, MUL(Cc(), ADD(K(1), MUL(N(), N())))); break;
    /* PyTorch's tanh_backward / sigmoid_backward kernels: a * (1 - b * b), its 1 - b * b
     * contracted to one fma; (a * (1 - b)) * b */
    case FC_OP_TANH: OUT(0, MUL(Cc(), own3(FC_OP_FMA, dt, K(1), NEG(N()), N()))); break;
    case FC_OP_SIGMOID: OUT(0, MUL(MUL(Cc(), SUB(K(1), N())), N())); break;
    case FC_OP_RELU: OUT(0, WHERE(CMP(FC_OP_GT, N(), K(0)), Cc(), K(0))); break;
    case FC_OP_FLOOR: case FC_OP_CEIL: case FC_OP_ROUND: case FC_OP_TRUNC: case FC_OP_SIGN:
        /* zeros_like(grad) in derivatives.yaml: zeros, also where the cotangent is NaN or
         * infinite (a zero over the node's levels: the select's condition gives them) */
        OUT(0, WHERE(CMP(FC_OP_EQ, Cc(), Cc()), K(0), K(0)));
        break;
    case FC_OP_RECIPROCAL: OUT(0, MUL(NEG(Cc()), MUL(N(), N()))); break;
    case FC_OP_LOG2: OUT(0, DIV(Cc(), MUL(X(), K(M_LN2)))); break;
    /* derivatives.yaml's constant, 2.3025850929940456: an ulp under ln 10 as a double */
    case FC_OP_LOG10: OUT(0, DIV(Cc(), MUL(X(), K(2.3025850929940456)))); break;
    case FC_OP_LOG1P: OUT(0, DIV(Cc(), ADD(X(), K(1)))); break;
    case FC_OP_EXPM1: OUT(0, MUL(Cc(), ADD(N(), K(1)))); break;
    case FC_OP_ASIN: OUT(0, MUL(Cc(), U(FC_OP_RSQRT, ADD(NEG(MUL(X(), X())), K(1))))); break;
    case FC_OP_ACOS: OUT(0, NEG(MUL(Cc(), U(FC_OP_RSQRT, ADD(NEG(MUL(X(), X())), K(1)))))); break;
    case FC_OP_ATAN: OUT(0, DIV(Cc(), ADD(MUL(X(), X()), K(1)))); break;
    case FC_OP_SINH: OUT(0, MUL(Cc(), U(FC_OP_COSH, X()))); break;
    case FC_OP_COSH: OUT(0, MUL(Cc(), U(FC_OP_SINH, X()))); break;
    case FC_OP_ERF:
        OUT(0, MUL(Cc(), MUL(K(2.0 / sqrt(M_PI)), U(FC_OP_EXP, NEG(MUL(X(), X()))))));
        break;
    case FC_OP_ERFC:
        OUT(0, MUL(Cc(), MUL(K(-2.0 / sqrt(M_PI)), U(FC_OP_EXP, NEG(MUL(X(), X()))))));
        break;
    /* derivatives.yaml: grad * (self.pow(2) + 1).rsqrt(), grad * (self.pow(2) - 1).rsqrt(),
     * grad * 1 / (1 - self.pow(2)), grad * result * ln 2 */
    case FC_OP_ASINH: OUT(0, MUL(Cc(), U(FC_OP_RSQRT, ADD(U(FC_OP_SQUARE, X()), K(1))))); break;
    case FC_OP_ACOSH: OUT(0, MUL(Cc(), U(FC_OP_RSQRT, SUB(U(FC_OP_SQUARE, X()), K(1))))); break;
    case FC_OP_ATANH: OUT(0, DIV(Cc(), SUB(K(1), U(FC_OP_SQUARE, X())))); break;
    case FC_OP_EXP2: OUT(0, MUL(MUL(Cc(), N()), K(M_LN2))); break;
    case FC_OP_SQUARE: OUT(0, MUL(Cc(), MUL(X(), K(2)))); break;
    case FC_OP_CAST:
        if (fc_dtype_is_float(n->in[0]->dtype))
            OUT(0, own1(FC_OP_CAST, n->in[0]->dtype, Cc()));
        break;
    case FC_OP_ADD: OUT(0, Cc()); OUT(1, Cc()); break;
    case FC_OP_SUB: OUT(0, Cc()); OUT(1, NEG(Cc())); break;
    case FC_OP_MUL: OUT(0, MUL(Cc(), Y())); OUT(1, MUL(Cc(), X())); break;
    case FC_OP_DIV:
        OUT(0, DIV(Cc(), Y()));
        OUT(1, MUL(NEG(Cc()), DIV(DIV(X(), Y()), Y())));    /* div_tensor_other_backward */
        break;
    case FC_OP_POW:
        /* PyTorch's pow_backward_self / pow_backward_exponent. */
        OUT(0, WHERE(CMP(FC_OP_EQ, Y(), K(0)), K(0), MUL(MUL(Cc(), Y()), own2(FC_OP_POW, dt, X(), SUB(Y(), K(1))))));
        OUT(1, WHERE(own2(FC_OP_AND, FC_BOOL, CMP(FC_OP_EQ, X(), K(0)), CMP(FC_OP_GE, Y(), K(0))), K(0),
                     MUL(MUL(Cc(), N()), U(FC_OP_LOG, X()))));
        break;
    case FC_OP_FMA: {
        FcNode *z = place(n, 2);
        OUT(0, Cc());
        OUT(1, MUL(Cc(), ref(z)));
        OUT(2, MUL(Cc(), Y()));
        fc_node_release(z);
        ok = ok && z;
        break;
    }
    case FC_OP_MIN: case FC_OP_MAX: {
        /* Ties split the gradient in half; the other operand's wins get none. */
        FcOp lose = n->op == FC_OP_MAX ? FC_OP_LT : FC_OP_GT, win = n->op == FC_OP_MAX ? FC_OP_GT : FC_OP_LT;
        OUT(0, WHERE(CMP(lose, X(), Y()), K(0), WHERE(CMP(FC_OP_EQ, X(), Y()), DIV(Cc(), K(2)), Cc())));
        OUT(1, WHERE(CMP(win, X(), Y()), K(0), WHERE(CMP(FC_OP_EQ, X(), Y()), DIV(Cc(), K(2)), Cc())));
        break;
    }
    case FC_OP_ATAN2: {
        FcNode *rc = DIV(K(1), ADD(MUL(X(), X()), MUL(Y(), Y())));
        OUT(0, MUL(MUL(Cc(), Y()), ref(rc)));
        OUT(1, MUL(MUL(NEG(Cc()), X()), ref(rc)));
        fc_node_release(rc);
        break;
    }
    case FC_OP_COPYSIGN:
        /* copysign_tensor_self_backward: grad * (result / self), 0 where self is 0; other:
         * zeros_like(other) */
        OUT(0, MUL(Cc(), WHERE(CMP(FC_OP_EQ, X(), K(0)), K(0), DIV(N(), X()))));
        OUT(1, WHERE(CMP(FC_OP_EQ, Cc(), Cc()), K(0), K(0)));
        break;
    case FC_OP_FMAX: case FC_OP_FMIN: case FC_OP_FMAX16: case FC_OP_FMIN16: {
        /* derivatives.yaml: self keeps grad where self >= other (fmin: <=) or other is NaN, other
         * gets it elsewhere (masked_fill: zeros, also where grad is NaN) */
        bool max = n->op == FC_OP_FMAX || n->op == FC_OP_FMAX16;
        FcNode *keep = own2(FC_OP_OR, FC_BOOL, CMP(max ? FC_OP_GE : FC_OP_LE, X(), Y()),
                            CMP(FC_OP_NE, Y(), Y()));
        OUT(0, WHERE(ref(keep), Cc(), K(0)));
        OUT(1, WHERE(ref(keep), K(0), Cc()));
        fc_node_release(keep);
        break;
    }
    case FC_OP_LOGADDEXP:
        /* derivatives.yaml: grad / (1 + exp(other - self)), grad / (1 + exp(self - other)) */
        OUT(0, DIV(Cc(), ADD(K(1), U(FC_OP_EXP, SUB(Y(), X())))));
        OUT(1, DIV(Cc(), ADD(K(1), U(FC_OP_EXP, SUB(X(), Y())))));
        break;
    case FC_OP_FMOD: case FC_OP_MOD:
        OUT(0, Cc());
        OUT(1, MUL(NEG(Cc()), U(n->op == FC_OP_MOD ? FC_OP_FLOOR : FC_OP_TRUNC, DIV(X(), Y()))));
        break;
    case FC_OP_FLOORDIV:
        OUT(0, MUL(Cc(), K(0)));
        OUT(1, MUL(Cc(), K(0)));
        break;
    case FC_OP_WHERE: {
        FcNode *c = place(n, 0);
        OUT(1, WHERE(ref(c), Cc(), K(0)));
        OUT(2, WHERE(ref(c), K(0), Cc()));
        fc_node_release(c);
        break;
    }
    case FC_OP_SUM: OUT(0, Cc()); break;
    case FC_OP_PROD: {
        /* PyTorch's prod_backward: grad * (result / x) without zeros; with zeros, grad times the
         * product of the others (prod_safe_zeros_backward): with one zero, that element gets the
         * product of the nonzero others and the rest grad * 0 (NaN where grad is); with more, all
         * grad * 0, except in a prod() of everything, which gives exact zeros then. */
        FcNode *xo = n->in[0];
        FcNode *isz = CMP(FC_OP_EQ, ref(xo), K(0));
        FcNode *nz = reduce_like(n, FC_OP_SUM, dt, own1(FC_OP_CAST, dt, ref(isz)));
        FcNode *p1 = reduce_like(n, FC_OP_PROD, dt, WHERE(ref(isz), K(1), ref(xo)));
        FcNode *plain = DIV(spread(n, 0, N()), ref(xo));
        FcNode *one = WHERE(own2(FC_OP_AND, FC_BOOL, ref(isz), spread(n, 0, CMP(FC_OP_EQ, ref(nz), K(1)))),
                            spread(n, 0, p1), K(0));
        FcNode *others = WHERE(spread(n, 0, CMP(FC_OP_EQ, ref(nz), K(0))), plain, one);
        out[0] = MUL(spread(n, 0, Cc()), others);
        if (n->nlev == 0)
            out[0] = WHERE(spread(n, 0, CMP(FC_OP_GT, ref(nz), K(1))), K(0), out[0]);
        fc_node_release(nz);
        fc_node_release(isz);
        ok = out[0] != NULL;
        break;
    }
    case FC_OP_AMAX: case FC_OP_AMIN: {
        /* The gradient split evenly among the ties. amax, amin (scale_grad_by_count): divided by
         * their count, times their mask (a NaN result has none: all NaN; a negative gradient
         * leaves -0 elsewhere). max(), min() (n->evenly; evenly_distribute_backward on the CPU):
         * the ties of a NaN result are the NaNs, zeros elsewhere. */
        FcNode *xo = n->in[0];
        FcNode *mask = CMP(FC_OP_EQ, ref(xo), spread(n, 0, N()));
        if (n->evenly)
            mask = own2(FC_OP_OR, FC_BOOL, mask,
                        own2(FC_OP_AND, FC_BOOL, CMP(FC_OP_NE, ref(xo), ref(xo)),
                             spread(n, 0, CMP(FC_OP_NE, N(), N()))));
        FcNode *mf = own1(FC_OP_CAST, dt, ref(mask));
        FcNode *cnt = reduce_like(n, FC_OP_SUM, dt, ref(mf));
        FcNode *share = spread(n, 0, DIV(Cc(), cnt));
        if (n->evenly) {
            out[0] = WHERE(mask, share, K(0));
            fc_node_release(mf);
        } else {
            out[0] = MUL(share, mf);
            fc_node_release(mask);
        }
        ok = out[0] != NULL;
        break;
    }
    default:
        break;      /* no gradient: comparisons, integer and bool ops, arg reductions */
    }
    fc_node_release(x);
    fc_node_release(y);
    return ok;
#undef X
#undef Y
#undef N
#undef Cc
#undef K
#undef MUL
#undef DIV
#undef ADD
#undef SUB
#undef NEG
#undef U
#undef CMP
#undef WHERE
#undef OUT
}

/* softmax's (log_softmax's) cotangent along dim d from C and its output n, by
 * fc_softmax_backward on dev (a new node, or NULL). */
static FcNode *softmax_cotangent(FcCtx *ctx, FcDevice dev, FcNode *n, FcNode *C, int d, bool log)
{
    FcTensor *g = fc_tensor_from_node(ref(C), dev, NULL, 0), *y = fc_tensor_from_node(ref(n), dev, NULL, 0), *r = NULL;
    FcError e;
    bool was_off = fc_grad_off;
    fc_grad_off = true;
    FcStatus st = g && y ? fc_softmax_backward(ctx, g, y, d, log, &r, &e) : FC_ERR_NOMEM;
    fc_grad_off = was_off;
    FcNode *c = st ? NULL : fc_tensor_node(r);
    fc_tensor_release(g);
    fc_tensor_release(y);
    fc_tensor_release(r);
    return c;
}

/* norm_backward's cotangent of x (node in) from the output's g and the norm r (both over x's
 * levels), p finite and not 0, as PyTorch 1.13 writes it (each pow Tensor.pow's, special
 * exponents included): p = 1: sgn(x) * g; p = 2: g * (x / r).masked_fill_(r == 0, 0); p < 1:
 * sgn(x) * |x|^(p-1).masked_fill_(x == 0, 0) * g * r^(1-p); else (sgn(x) * |x|^(p-1) below 2,
 * x * |x|^(p-2) above) * (g / r^(p-1)).masked_fill_(r == 0, 0). A new node on dev, or NULL. */
static FcNode *norm_cotangent(FcCtx *ctx, FcDevice dev, FcNode *in, FcNode *g, FcNode *r, double p)
{
    FcTensor *x = fc_tensor_from_node(ref(in), dev, NULL, 0), *gt = fc_tensor_from_node(ref(g), dev, NULL, 0),
             *rt = fc_tensor_from_node(ref(r), dev, NULL, 0);
    FcTensor *t[12] = {NULL};
    FcTensor *res = NULL;
    FcError e;
    bool was_off = fc_grad_off;
    fc_grad_off = true;
    FcStatus st = x && gt && rt ? FC_OK : FC_ERR_NOMEM;
#define NUM(i, v) (st = st ? st : fc_scalar(ctx, FC_FLOAT64, (FcScalar){.f = (v)}, true, &t[i], &e))
#define OP2(op, a, b, o) (st = st ? st : fc_binary(ctx, op, a, b, &o, &e))
#define OP1(op, a, o) (st = st ? st : fc_unary(ctx, op, a, &o, &e))
#define WHERE0(c, a, o) (st = st ? st : fc_where(ctx, c, t[0], a, &o, &e))
    NUM(0, 0);
    if (p == 1) {
        OP1(FC_OP_SIGN, x, t[1]);
        OP2(FC_OP_MUL, t[1], gt, res);
    } else if (p == 2) {
        OP2(FC_OP_EQ, rt, t[0], t[1]);
        OP2(FC_OP_DIV, x, rt, t[2]);
        WHERE0(t[1], t[2], t[3]);
        OP2(FC_OP_MUL, gt, t[3], res);
    } else if (p < 1) {
        NUM(1, p - 1);
        NUM(2, 1 - p);
        OP1(FC_OP_ABS, x, t[3]);
        OP2(FC_OP_POW, t[3], t[1], t[4]);
        OP2(FC_OP_EQ, x, t[0], t[5]);
        WHERE0(t[5], t[4], t[6]);
        OP1(FC_OP_SIGN, x, t[7]);
        OP2(FC_OP_MUL, t[7], t[6], t[8]);           /* self_scaled */
        OP2(FC_OP_MUL, t[8], gt, t[9]);
        OP2(FC_OP_POW, rt, t[2], t[10]);
        OP2(FC_OP_MUL, t[9], t[10], res);
    } else {
        NUM(1, p < 2 ? p - 1 : p - 2);
        NUM(2, p - 1);
        OP1(FC_OP_ABS, x, t[3]);
        OP2(FC_OP_POW, t[3], t[1], t[4]);
        if (p < 2)
            OP1(FC_OP_SIGN, x, t[5]);
        OP2(FC_OP_MUL, p < 2 ? t[5] : x, t[4], t[6]);  /* self_scaled */
        OP2(FC_OP_POW, rt, t[2], t[7]);
        OP2(FC_OP_DIV, gt, t[7], t[8]);
        OP2(FC_OP_EQ, rt, t[0], t[9]);
        WHERE0(t[9], t[8], t[10]);                  /* scale_v */
        OP2(FC_OP_MUL, t[6], t[10], res);
    }
#undef NUM
#undef OP2
#undef OP1
#undef WHERE0
    fc_grad_off = was_off;
    FcNode *c = st ? NULL : fc_tensor_node(res);
    for (int i = 0; i < 12; i++)
        fc_tensor_release(t[i]);
    fc_tensor_release(res);
    fc_tensor_release(x);
    fc_tensor_release(gt);
    fc_tensor_release(rt);
    return c;
}

/* The cotangents of a composite's operands (n->vjp's), given C: as vjp_rule, by the declared rule
 * (fc_grad_declare), each formula as derivatives.yaml writes it (softmax's as PyTorch's kernel
 * computes it), so rounded as PyTorch's. */
static bool vjp_declared(FcCtx *ctx, FcDevice dev, FcNode *n, FcNode *C, FcNode **out)
{
    struct FcVjp *v = n->vjp;
    FcDType dt = n->dtype;
    FcNode *x[3] = {NULL, NULL, NULL};
    bool ok = true;
    for (int i = 0; i < v->nin && !v->reduce; i++)
        ok = ok && (x[i] = place_from(n, v->in[i], v->map[i])) != NULL;
#define X(i) ref(x[i])
#define Cc() ref(C)
#define K(c) cst(dt, c)
#define MUL(a, b) own2(FC_OP_MUL, dt, a, b)
#define DIV(a, b) own2(FC_OP_DIV, dt, a, b)
#define SUB(a, b) own2(FC_OP_SUB, dt, a, b)
#define OUT(i, e) (out[i] = pull_to(n, v->in[i], v->map[i], e), ok = ok && out[i])
    switch (ok ? (int)v->rule : -1) {
    case FC_VJP_LERP:
        if (v->nin == 2) {
            OUT(0, MUL(Cc(), K(1 - v->k)));
            OUT(1, MUL(Cc(), K(v->k)));
        } else {
            OUT(0, MUL(Cc(), SUB(K(1), X(2))));
            OUT(1, MUL(Cc(), X(2)));
            OUT(2, MUL(Cc(), SUB(X(1), X(0))));
        }
        break;
    case FC_VJP_ADDCMUL:
        OUT(0, Cc());
        OUT(1, MUL(Cc(), MUL(X(2), K(v->k))));
        OUT(2, MUL(Cc(), MUL(X(1), K(v->k))));
        break;
    case FC_VJP_ADDCDIV:
        OUT(0, Cc());
        OUT(1, MUL(Cc(), DIV(K(v->k), X(2))));
        OUT(2, MUL(own1(FC_OP_NEG, dt, Cc()), DIV(MUL(K(v->k), X(1)), MUL(X(2), X(2)))));
        break;
    case FC_VJP_SUB:
        OUT(0, Cc());
        OUT(1, MUL(own1(FC_OP_NEG, dt, Cc()), K(v->k)));
        break;
    case FC_VJP_SOFTMAX:
    case FC_VJP_LOG_SOFTMAX:
        OUT(0, softmax_cotangent(ctx, dev, n, C, (int)v->k, v->rule == FC_VJP_LOG_SOFTMAX));
        break;
    case FC_VJP_LOGSUMEXP: {
        /* logsumexp_backward: grad * (self - result).exp(), over self's levels */
        FcNode *in = v->in[0], *y = pull_to(n, in, v->map[0], ref(n));
        out[0] = MUL(pull_to(n, in, v->map[0], Cc()), own1(FC_OP_EXP, dt, SUB(ref(in), y)));
        ok = ok && out[0];
        break;
    }
    case FC_VJP_NORM: {
        FcNode *in = v->in[0], *r = pull_to(n, in, v->map[0], ref(n)), *g = pull_to(n, in, v->map[0], Cc());
        out[0] = r && g ? norm_cotangent(ctx, dev, in, g, r, v->k) : NULL;
        fc_node_release(r);
        fc_node_release(g);
        ok = ok && out[0];
        break;
    }
    case FC_VJP_VAR:
    case FC_VJP_STD: {
        /* var_backward: (2.0 / dof) * grad * (self - self.mean(dim, keepdim=True)), the mean
         * at::mean's (a cascade sum, then / N), 2.0 / dof inf for a dof of 0 (and negative for
         * a negative dof); of a 0-dim tensor with a dof of 0 or less, grad * inf.
         * std_backward first takes grad to (grad / (result * 2)).masked_fill_(result == 0, 0). */
        FcNode *in = v->in[0], *g = pull_to(n, in, v->map[0], Cc());
        if (v->rule == FC_VJP_STD) {
            FcNode *r = pull_to(n, in, v->map[0], ref(n));
            g = own3(FC_OP_WHERE, dt, own2(FC_OP_EQ, FC_BOOL, ref(r), K(0)), K(0), DIV(g, MUL(r, K(2))));
        }
        int64_t sz[FC_MAX_DIMS], cnt = 1;
        for (int l = 0; l < in->nlev; l++) {
            bool red = v->map[0][l] == FC_LEV_REDUCED;
            sz[l] = red ? 1 : in->size[l];
            cnt *= red ? in->size[l] : 1;
        }
        FcNode *sum = fc_node_new(FC_OP_SUM, dt, in->nlev, sz, 1, &in);
        if (sum) {
            for (int l = 0; l < in->nlev; l++)
                sum->lev_map[0][l] = (int8_t)(v->map[0][l] == FC_LEV_REDUCED ? FC_LEV_REDUCED : l);
            sum->order = FC_SUM_CASCADE;
        }
        FcNode *mean = DIV(sum, K((double)cnt));
        FcNode *placed = mean ? fc_node_place(mean, dt, in->nlev, in->size, in->nlev) : NULL;
        fc_node_release(mean);
        FcNode *dev_x = SUB(ref(in), placed);
        if (in->nlev == 0 && v->k <= 0) {
            fc_node_release(dev_x);
            out[0] = MUL(g, K(INFINITY));
        } else {
            out[0] = MUL(MUL(K(v->k == 0 ? INFINITY : 2.0 / v->k), g), dev_x);
        }
        ok = ok && out[0];
        break;
    }
    default:
        break;
    }
#undef X
#undef Cc
#undef K
#undef MUL
#undef DIV
#undef SUB
#undef OUT
    for (int i = 0; i < 3; i++)
        fc_node_release(x[i]);
    return ok;
}

/* ---- the backward ---- */

typedef struct Pending {
    FcGradRec *rec;             /* reference */
    FcTensor *g;                /* flat gradient buffer of the record's storage (stored), or NULL */
} Pending;

typedef struct Engine {
    FcCtx *ctx;
    FcDevice dev;               /* of what is being differentiated now */
    Pending *p;
    int n, cap;
    bool retain;
    int ninputs;
    FcTensor *const *inputs;
    FcGradRec **input_rec;      /* a stored input's record */
    FcNode **input_node;        /* a lazy input's node (borrowed from the input): its cotangent is
                                   taken where the node occurs in a differentiated expression */
    FcTensor **results;
    /* the loads scattered by the record being differentiated */
    struct Contrib { FcNode *load; FcNode *ct; } *cb;
    int ncb, capcb;
} Engine;

static Pending *pending_of(Engine *E, FcGradRec *r)
{
    for (int i = 0; i < E->n; i++)
        if (E->p[i].rec == r)
            return &E->p[i];
    if (E->n == E->cap) {
        int cap = E->cap ? 2 * E->cap : 16;
        Pending *p = mem_realloc(E->p, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        E->p = p;
        E->cap = cap;
    }
    Pending *p = &E->p[E->n++];
    p->rec = r;
    r->refcnt++;
    p->g = NULL;
    return p;
}

static FcStatus zeros_flat(FcCtx *ctx, FcGradRec *r, FcTensor **out, FcError *err)
{
    FcScalar z = {0};
    z.f = 0;
    FcStatus st = fc_full(ctx, r->dtype, r->device, 1, &r->nelem, z, out, err);
    if (!st)
        st = fc_realize(ctx, *out, err);
    return st;
}

/* Whether offsets sum_l strides[l] * i_l over the levels of size > 1 are distinct (PyTorch's
 * overlap check: sorted by stride, each one past the span of the smaller ones). */
static bool injective(int nlev, const int64_t *size, const int64_t *strides)
{
    int64_t st[FC_MAX_DIMS], sz[FC_MAX_DIMS];
    int n = 0;
    for (int l = 0; l < nlev; l++)
        if (size[l] > 1) {
            int64_t a = strides[l] < 0 ? -strides[l] : strides[l];
            if (a == 0)
                return false;
            int k = n++;
            while (k > 0 && st[k - 1] > a) {
                st[k] = st[k - 1];
                sz[k] = sz[k - 1];
                k--;
            }
            st[k] = a;
            sz[k] = size[l];
        }
    int64_t span = 0;
    for (int k = 0; k < n; k++) {
        if (st[k] <= span)
            return false;
        span += st[k] * (sz[k] - 1);
    }
    return true;
}

/* ---- one scatter-add for the loads that read one storage through several gathers ----
 *
 * Loads of one storage that differ only in their gathered indices (roi_align's four taps:
 * img[y_low, x_low], img[y_low, x_high], ...) scatter their cotangents into the same buffer over
 * the same loop domain. They are scattered by ONE kernel: a level T of one index per load (the
 * terms) is added to the domain, just outside its last level, and the store's value and
 * scattered indices at index t along T are load t's. Its order of additions is the loop nest's:
 * per point of the other levels, the terms in their order (the DAG's post-order), which no
 * thread count changes (T does not move the store: its stride is 0, so the owner loops stay).
 * What the terms share is built once, without T (the cotangent's row, the sample's geometry),
 * and where they differ the terms are told apart as deep in the expression as they can be
 * (select_terms): roi_align's value is its staged cotangent row times one weight per term, and
 * the terms' weights and indices are one value per point, so each point's work is shared and
 * its row read once. */

enum { TERMS_WALK = 4096 };     /* node pairs one same_value compares before giving up (not the same) */

/* n without the casts to its own dtype over its own levels that wrap it (what pull and place
 * leave where a level map is the identity): the same values. */
static FcNode *strip_cast(FcNode *n)
{
    while (n->op == FC_OP_CAST && !n->narrows && n->in[0]->dtype == n->dtype && n->in[0]->nlev == n->nlev) {
        bool id = true;
        for (int l = 0; l < n->nlev && id; l++)
            id = n->lev_map[0][l] == l && n->in[0]->size[l] == n->size[l];
        if (!id)
            break;
        n = n->in[0];
    }
    return n;
}

/* Whether a and b compute the same values over the same levels: the same node, or the same
 * elementwise op of such operands, or equal leaves. *budget bounds the walk (false past it). */
static bool same_value(const FcNode *a, const FcNode *b, int *budget)
{
    a = strip_cast((FcNode *)a);
    b = strip_cast((FcNode *)b);
    if (a == b)
        return true;
    if (--*budget < 0 || a->op != b->op || a->dtype != b->dtype || a->src_dtype != b->src_dtype ||
        a->nlev != b->nlev || a->nin != b->nin || a->narrows != b->narrows)
        return false;
    for (int l = 0; l < a->nlev; l++)
        if (a->size[l] != b->size[l])
            return false;
    switch (a->op) {
    case FC_OP_CONST:
        return memcmp(&a->konst, &b->konst, sizeof a->konst) == 0;
    case FC_OP_IOTA:
        return true;
    case FC_OP_LOAD:
        if (a->storage != b->storage || a->offset != b->offset || a->wrap != b->wrap)
            return false;
        for (int k = 0; k < a->nin; k++)
            if (a->strides[k] != b->strides[k] || a->shape[k] != b->shape[k] || a->index_dim[k] != b->index_dim[k])
                return false;
        break;
    default:
        if (!fc_op_is_unary(a->op) && !fc_op_is_binary(a->op) && !fc_op_is_compare(a->op) && a->op != FC_OP_WHERE)
            return false;
    }
    for (int k = 0; k < a->nin; k++)
        if (a->in[k]->nlev != b->in[k]->nlev ||
            memcmp(a->lev_map[k], b->lev_map[k], (size_t)a->in[k]->nlev) != 0 ||
            !same_value(a->in[k], b->in[k], budget))
            return false;
    return true;
}

/* The level of a node over n's levels with one level inserted at pos, for level l of n. */
static int8_t shift_level(int8_t l, int pos) { return l >= pos ? (int8_t)(l + 1) : l; }

/* A node over the levels of a (nlev, size) with a level of size m inserted at pos: x, which does
 * not vary along it, or (t_x) one that is x's levels with that level last. */
static FcNode *over_terms(FcNode *x, bool t_x, int nlev, const int64_t *size, int m, int pos)
{
    int64_t sz[FC_MAX_DIMS];
    for (int l = 0, j = 0; l <= nlev; l++)
        sz[l] = l == pos ? m : size[j++];
    FcNode *c = fc_node_new(FC_OP_CAST, x->dtype, nlev + 1, sz, 1, &x);
    if (!c)
        return NULL;
    c->src_dtype = x->dtype;
    for (int j = 0; j < nlev; j++)
        c->lev_map[0][j] = shift_level((int8_t)j, pos);
    if (t_x)
        c->lev_map[0][nlev] = (int8_t)pos;
    return c;
}

/* The families select_terms has made (so that a family reached along several paths of a DAG
 * is made once: the walk stays linear in the nodes), TERMS_FAMILIES at most; past them, a
 * family is picked by a chain of WHERE as it is, below which nothing is walked. */
enum { TERMS_FAMILIES = 1024 };
typedef struct Terms {
    int m, n, cap;
    FcNode **keys;              /* [cap * m]: each family's members (borrowed) */
    FcNode **res;               /* [cap]: what it made (references) */
    bool *used;                 /* [cap]: its t_used */
    int *pos;                   /* [cap] */
} Terms;

static void terms_free(Terms *T)
{
    for (int i = 0; i < T->n; i++)
        fc_node_release(T->res[i]);
    mem_free(T->keys);
    mem_free(T->res);
    mem_free(T->used);
    mem_free(T->pos);
    memset(T, 0, sizeof *T);
}

static int terms_find(const Terms *T, FcNode *const *a, int pos)
{
    for (int i = 0; i < T->n; i++)
        if (T->pos[i] == pos && memcmp(T->keys + (size_t)i * T->m, a, (size_t)T->m * sizeof *a) == 0)
            return i;
    return -1;
}

/* Keeps n (a new reference taken) as what family a made; false when out of memory. */
static bool terms_keep(Terms *T, FcNode *const *a, int pos, FcNode *n, bool used)
{
    if (T->n == T->cap) {
        int cap = T->cap ? 2 * T->cap : 32;
        FcNode **k = mem_realloc(T->keys, (size_t)cap * (size_t)T->m * sizeof *k);
        if (k)
            T->keys = k;
        FcNode **r = k ? mem_realloc(T->res, (size_t)cap * sizeof *r) : NULL;
        if (r)
            T->res = r;
        bool *u = r ? mem_realloc(T->used, (size_t)cap * sizeof *u) : NULL;
        if (u)
            T->used = u;
        int *p = u ? mem_realloc(T->pos, (size_t)cap * sizeof *p) : NULL;
        if (!p)
            return false;
        T->pos = p;
        T->cap = cap;
    }
    memcpy(T->keys + (size_t)T->n * T->m, a, (size_t)T->m * sizeof *a);
    T->res[T->n] = ref(n);
    T->used[T->n] = used;
    T->pos[T->n] = pos;
    T->n++;
    return true;
}

static FcNode *select_made(Terms *T, FcNode *const *a, int pos, bool *t_used);

/* The m = T->m nodes family[] (over the same levels: nlev, size) as one node over those levels
 * with a level of size m inserted at pos, whose value at index t along it is family[t]'s;
 * *t_used false when they are all the same value (same_value), which is then returned as it is
 * (over the old levels). What the terms share is kept shared: an elementwise op that all of
 * them apply to operands mapped alike becomes that op of the operands' selections; where they
 * part, a chain of WHERE on the term's index picks among them. A new reference, or NULL (out of
 * memory). */
static FcNode *select_terms(Terms *T, FcNode *const *family, int pos, bool *t_used)
{
    int m = T->m;
    FcNode *a[FC_MAX_DIMS] = {NULL};
    for (int t = 0; t < m; t++)
        a[t] = strip_cast(family[t]);
    int i = terms_find(T, a, pos);
    if (i >= 0) {
        *t_used = T->used[i];
        return ref(T->res[i]);
    }
    FcNode *n = select_made(T, a, pos, t_used);
    if (n && T->n < TERMS_FAMILIES && !terms_keep(T, a, pos, n, *t_used)) {
        fc_node_release(n);
        n = NULL;
    }
    return n;
}

static FcNode *select_made(Terms *T, FcNode *const *a, int pos, bool *t_used)
{
    int m = T->m;
    const FcNode *a0 = a[0];
    bool same = true;
    for (int t = 1; t < m && same; t++) {
        int budget = TERMS_WALK;
        same = same_value(a0, a[t], &budget);
    }
    *t_used = !same;
    if (same)
        return ref(a[0]);
    int nlev = a0->nlev;
    int64_t sz[FC_MAX_DIMS];
    for (int l = 0, j = 0; l <= nlev; l++)
        sz[l] = l == pos ? m : a0->size[j++];
    bool alike = (fc_op_is_unary(a0->op) || fc_op_is_binary(a0->op) || fc_op_is_compare(a0->op) ||
                  a0->op == FC_OP_WHERE) && T->n < TERMS_FAMILIES;
    for (int t = 1; t < m && alike; t++) {
        alike = a[t]->op == a0->op && a[t]->dtype == a0->dtype && a[t]->src_dtype == a0->src_dtype &&
                a[t]->nin == a0->nin && a[t]->narrows == a0->narrows;
        for (int k = 0; k < a0->nin && alike; k++)
            alike = a[t]->in[k]->nlev == a0->in[k]->nlev &&
                    memcmp(a[t]->lev_map[k], a0->lev_map[k], (size_t)a0->in[k]->nlev) == 0 &&
                    memcmp(a[t]->in[k]->size, a0->in[k]->size, (size_t)a0->in[k]->nlev * sizeof(int64_t)) == 0;
    }
    if (alike) {
        FcNode *ins[3] = {NULL, NULL, NULL}, *fam[FC_MAX_DIMS];
        bool t_in[3] = {false, false, false}, ok = true;
        for (int k = 0; k < a0->nin && ok; k++) {
            for (int t = 0; t < m; t++)
                fam[t] = a[t]->in[k];
            ok = (ins[k] = select_terms(T, fam, fam[0]->nlev, &t_in[k])) != NULL;
        }
        FcNode *n = ok ? fc_node_new(a0->op, a0->dtype, nlev + 1, sz, a0->nin, ins) : NULL;
        if (n) {
            n->src_dtype = a0->src_dtype;
            n->narrows = a0->narrows;
            n->konst = a0->konst;
            for (int k = 0; k < a0->nin; k++) {
                for (int j = 0; j < a0->in[k]->nlev; j++)
                    n->lev_map[k][j] = a0->lev_map[k][j] < 0 ? a0->lev_map[k][j] : shift_level(a0->lev_map[k][j], pos);
                if (t_in[k])
                    n->lev_map[k][a0->in[k]->nlev] = (int8_t)pos;
            }
        }
        for (int k = 0; k < 3; k++)
            fc_node_release(ins[k]);
        return n;
    }
    /* where(T <= 0, a[0], where(T <= 1, a[1], ... a[m-1])), a term equal to the next one left out */
    FcNode *it = fc_node_new(FC_OP_IOTA, FC_INT64, 1, &sz[pos], 0, NULL);
    FcNode *v = it ? over_terms(a[m - 1], false, nlev, a0->size, m, pos) : NULL;
    for (int t = m - 2; t >= 0 && v; t--) {
        int budget = TERMS_WALK;
        if (same_value(a[t], a[t + 1], &budget))
            continue;
        FcNode *k = cst(FC_INT64, t), *le = NULL, *at = over_terms(a[t], false, nlev, a0->size, m, pos), *w = NULL;
        if (k) {
            FcNode *ops[2] = {it, k};
            le = fc_node_new(FC_OP_LE, FC_BOOL, 1, &sz[pos], 2, ops);
        }
        if (le && at) {
            le->src_dtype = FC_INT64;
            le->lev_map[0][0] = 0;
            FcNode *ops[3] = {le, at, v};
            w = fc_node_new(FC_OP_WHERE, v->dtype, nlev + 1, sz, 3, ops);
        }
        if (w) {
            w->lev_map[0][0] = (int8_t)pos;
            for (int l = 0; l <= nlev; l++)
                w->lev_map[1][l] = w->lev_map[2][l] = (int8_t)l;
        }
        fc_node_release(k);
        fc_node_release(le);
        fc_node_release(at);
        fc_node_release(v);
        v = w;
    }
    fc_node_release(it);
    return v;
}

/* select_terms at the top: the node over the levels with T, whether or not the terms differ. */
static FcNode *select_top(FcNode *const *a, int m, int pos)
{
    bool t_used = false;
    Terms T = {.m = m};
    FcNode *n = select_terms(&T, a, pos, &t_used);
    terms_free(&T);
    if (!n || t_used)
        return n;
    FcNode *c = over_terms(n, false, a[0]->nlev, a[0]->size, m, pos);
    fc_node_release(n);
    return c;
}

/* Whether loads a and b (of one storage, cotangents of one dtype) can be terms of one scatter-add:
 * the same levels, the same plain (IOTA, CONST) operands, and gathered operands at the same
 * positions with the same strides, extents and wrapping, so that the store's offset, strides and
 * scatter layout are one (and its owner loops with them); only the gathered indices differ. */
static bool same_scatter(const FcNode *a, const FcNode *b)
{
    if (a->storage != b->storage || a->offset != b->offset || a->nin != b->nin || a->nlev != b->nlev ||
        a->wrap != b->wrap || a->nlev + 1 > FC_MAX_DIMS)
        return false;
    for (int l = 0; l < a->nlev; l++)
        if (a->size[l] != b->size[l])
            return false;
    bool gathered = false;
    for (int k = 0; k < a->nin; k++) {
        const FcNode *x = a->in[k], *y = b->in[k];
        bool px = (x->op == FC_OP_IOTA && x->nlev == 1) || x->op == FC_OP_CONST;
        bool py = (y->op == FC_OP_IOTA && y->nlev == 1) || y->op == FC_OP_CONST;
        if (a->strides[k] != b->strides[k] || a->shape[k] != b->shape[k] || a->index_dim[k] != b->index_dim[k] ||
            px != py)
            return false;
        if (px) {
            if (x->op != y->op || (x->op == FC_OP_IOTA && a->lev_map[k][0] != b->lev_map[k][0]) ||
                (x->op == FC_OP_CONST && (x->nlev != 0 || y->nlev != 0 || x->konst.i != y->konst.i)))
                return false;
            continue;
        }
        gathered = true;
    }
    return gathered;
}

static long term_kernels;       /* fc_grad_term_kernels */
long fc_grad_term_kernels(void) { return __atomic_load_n(&term_kernels, __ATOMIC_RELAXED); }

/* Adds the cotangents ct[0..m-1] (each over the levels of load L[t], which reads the storage of
 * record r; m > 1 only for loads that are same_scatter) into r's buffer at the elements the
 * loads read: ONE kernel with an accumulating (scattered) store, the terms a level of its domain
 * (see above). */
/* An expanded view's cotangent v (over load L's levels, stored with strides): PyTorch's
 * ExpandBackward sums it over the expanded dims with at::sum (sum_to), so v's levels that the
 * store does not move along (stride 0, more than one point) are summed in that order first
 * (FC_SUM_CASCADE, kept at size 1). Takes v; v itself when there are none. */
static FcNode *expanded_sum(const FcNode *L, const int64_t *strides, FcNode *v)
{
    int64_t sz[FC_MAX_DIMS];
    bool any = false;
    for (int l = 0; l < L->nlev; l++) {
        sz[l] = strides[l] == 0 ? 1 : L->size[l];
        any |= strides[l] == 0 && L->size[l] > 1;
    }
    if (!any || !v || (v->dtype != FC_FLOAT32 && v->dtype != FC_FLOAT64) || v->nlev != L->nlev)
        return v;
    FcNode *s = fc_node_new(FC_OP_SUM, v->dtype, L->nlev, sz, 1, &v);
    fc_node_release(v);
    if (!s)
        return NULL;
    for (int l = 0; l < L->nlev; l++)
        s->lev_map[0][l] = (int8_t)(strides[l] == 0 && L->size[l] > 1 ? FC_LEV_REDUCED : l);
    s->order = FC_SUM_CASCADE;
    /* stored through a placement of it, as pull's sums: a backend without ordered sums fuses it
     * as an inner reduction (a scattered store does not reduce) */
    FcNode *c = fc_node_place(s, s->dtype, L->nlev, sz, L->nlev);
    fc_node_release(s);
    return c;
}

static FcStatus scatter_into(Engine *E, FcGradRec *r, FcNode *const *Ls, FcNode *const *cts, int m, FcError *err)
{
    Pending *p = pending_of(E, r);
    if (!p)
        return fc_nomem(err);
    if (r->freed)
        return fc_errf(err, FC_ERR_RUNTIME,
                       "Trying to backward through the graph a second time (or directly access saved tensors after "
                       "they have already been freed). Saved intermediate values of the graph are freed when you "
                       "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
                       "through the graph a second time or if you need to access saved tensors after calling "
                       "backward.");
    FcNode *L = Ls[0];
    int pos = L->nlev ? L->nlev - 1 : 0;     /* the terms' level: just outside the last one */
    FcStatus st = FC_OK;
    int64_t strides[FC_MAX_DIMS] = {0};
    int64_t offset = L->offset;
    FcScatter sc;
    memset(&sc, 0, sizeof sc);
    sc.accumulate = true;
    sc.checked = true;          /* the indices the loads read, recomputed */
    FcNode *fam[FC_MAX_DIMS] = {NULL};
    for (int k = 0; k < L->nin && !st; k++) {
        FcNode *ix = L->in[k];
        int8_t lv = ix->nlev == 1 ? L->lev_map[k][0] : FC_LEV_BCAST;
        if (ix->op == FC_OP_IOTA && ix->nlev == 1) {
            if (lv >= 0)
                strides[lv] += L->strides[k];
            continue;
        }
        if (ix->op == FC_OP_CONST) {
            int64_t v = ix->konst.i;
            if (v < 0 && (L->wrap >> k & 1))
                v += L->shape[k];
            offset += v * L->strides[k];
            continue;
        }
        int t = 0;
        for (; t < m; t++) {
            FcNode *in = Ls[t]->in[k];
            if (!(fam[t] = fc_node_new(FC_OP_CAST, FC_INT64, L->nlev, L->size, 1, &in)))
                break;
            fam[t]->src_dtype = in->dtype;
            memcpy(fam[t]->lev_map[0], Ls[t]->lev_map[k], (size_t)in->nlev);
        }
        FcNode *pi = t < m ? NULL : m == 1 ? ref(fam[0]) : select_top(fam, m, pos);
        for (int j = 0; j < t; j++) {
            fc_node_release(fam[j]);
            fam[j] = NULL;
        }
        if (!pi) {
            st = fc_nomem(err);
            break;
        }
        sc.index[sc.n] = pi;
        sc.at[sc.n].reg = -1;
        sc.at[sc.n].stride = L->strides[k];
        sc.at[sc.n].extent = L->shape[k];
        sc.at[sc.n].wrap = L->wrap >> k & 1;
        sc.at[sc.n].dim = L->index_dim[k];
        sc.n++;
    }
    /* The first cotangent a fresh buffer gets through a load that reads each element at most
     * once is stored, not added to zero: -0 stays -0, as in PyTorch, whose first gradient is
     * assigned. When that load reads every element, the buffer needs no zeros first. */
    if (!st && !p->g) {
        int64_t n = 1;
        for (int l = 0; l < L->nlev; l++)
            n *= L->size[l];
        bool whole = false;
        if (m == 1 && !sc.n && injective(L->nlev, L->size, strides)) {
            sc.accumulate = false;
            whole = n == r->nelem;
        }
        st = whole ? fc_empty(E->ctx, r->dtype, r->device, 1, &r->nelem, NULL, &p->g, err)
                   : zeros_flat(E->ctx, r, &p->g, err);
    }
    FcNode *v = NULL;
    if (!st) {
        for (int t = 0; t < m && !st; t++) {
            fam[t] = cts[t]->dtype != r->dtype ? own1(FC_OP_CAST, r->dtype, ref(cts[t])) : ref(cts[t]);
            if (!fam[t])
                st = fc_nomem(err);
        }
        if (!st && !(v = m == 1 ? ref(fam[0]) : select_top(fam, m, pos)))
            st = fc_nomem(err);
        for (int t = 0; t < m; t++)
            fc_node_release(fam[t]);
    }
    if (!st && m > 1) {
        for (int l = L->nlev; l > pos; l--)
            strides[l] = strides[l - 1];
        strides[pos] = 0;
        __atomic_fetch_add(&term_kernels, 1, __ATOMIC_RELAXED);
    }
    if (!st && m == 1 && !sc.n && !(v = expanded_sum(L, strides, v)))
        st = fc_nomem(err);
    if (!st)
        st = fc_store_scattered(E->ctx, p->g->storage, offset, strides, v, &sc, err);
    fc_node_release(v);
    for (int g = 0; g < sc.n; g++)
        fc_node_release(sc.index[g]);
    return st;
}

/* ---- staging a reduction's cotangent ----
 *
 * The cotangent of a reduction's operand is the reduction's cotangent C broadcast over the reduced
 * levels (pull): a scatter-add that reads it recomputes C at every point of those levels, and
 * reads it along the levels of its store. roi_align's backward is the case: C = dY / count over
 * (box, channel, bin) is read for each of a bin's samples, and its store runs along the channels,
 * contiguous in the (channels_last) gradient buffer, where dY, NCHW, has them a plane apart: one
 * strided read of 256 values and a division per sample. Such a C is computed once into a buffer
 * whose innermost level is the one the reduction's operand reads contiguously (what its store
 * will walk), and read from there. The values are the same (elementwise ops give the same bits
 * wherever they are computed); only where they are kept changes. */

static bool stale(FcNode *n, const FcGradRec *r, PtrMap *seen, const FcStorage **which, uint64_t *was);

enum {
    STAGE_MIN_ELEMS = 4096,     /* a cotangent smaller than this is recomputed as it is read */
    STAGE_MIN_REDUCED = 4,      /* ... as is one broadcast over fewer reduced points */
    STAGE_WALK = 512,           /* nodes looked at to find the contiguous level */
};

/* The level of `top` (over which map gives, for each level of n, top's level or -1) along which
 * some load in n's DAG reads memory with unit stride, or -1; *budget bounds the walk. */
static int contiguous_level(FcNode *n, const int *map, PtrMap *seen, int *budget)
{
    if (--*budget < 0 || pm_get(seen, n) || !pm_put(seen, n, 1))
        return -1;
    if (n->op == FC_OP_LOAD) {
        for (int k = 0; k < n->nin; k++) {
            const FcNode *ix = n->in[k];
            int8_t lv = ix->nlev == 1 ? n->lev_map[k][0] : FC_LEV_BCAST;
            if (ix->op == FC_OP_IOTA && ix->nlev == 1 && (n->strides[k] == 1 || n->strides[k] == -1) &&
                n->shape[k] > 1 && lv >= 0 && map[lv] >= 0)
                return map[lv];
        }
        return -1;
    }
    for (int k = 0; k < n->nin; k++) {
        FcNode *c = n->in[k];
        int cm[FC_MAX_DIMS];
        for (int j = 0; j < c->nlev; j++) {
            int8_t lv = n->lev_map[k][j];
            cm[j] = lv >= 0 ? map[lv] : -1;
        }
        int l = contiguous_level(c, cm, seen, budget);
        if (l >= 0)
            return l;
    }
    return -1;
}

static long staged;

long fc_grad_staged_count(void) { return __atomic_load_n(&staged, __ATOMIC_RELAXED); }

/* C (over reduction n's levels) as a load of a buffer it is computed into, its level that n's
 * operand reads contiguously innermost (see above); or C itself (*out = NULL) when staging does
 * not pay or cannot be sure to (a forward value it reads was overwritten: flush reports that). */
static FcStatus stage_cotangent(Engine *E, FcNode *n, FcNode *C, const FcGradRec *ctxrec, FcNode **out,
                                FcError *err)
{
    *out = NULL;
    FcNode *in = n->in[0];
    int64_t elems = 1, reduced = 1;
    for (int i = 0; i < n->nlev; i++)
        elems *= n->size[i];
    for (int j = 0; j < in->nlev; j++)
        if (n->lev_map[0][j] == FC_LEV_REDUCED)
            reduced *= in->size[j];
    if ((E->ctx->sched_off & FC_SCHED_STAGE) || C->op == FC_OP_CONST || n->nlev < 2 || elems < STAGE_MIN_ELEMS ||
        reduced < STAGE_MIN_REDUCED)
        return FC_OK;
    PtrMap seen = {0};
    int map[FC_MAX_DIMS], budget = STAGE_WALK;
    for (int j = 0; j < in->nlev; j++)
        map[j] = n->lev_map[0][j] >= 0 ? n->lev_map[0][j] : -1;
    int inner = contiguous_level(in, map, &seen, &budget);
    pm_free(&seen);
    if (inner < 0 || n->size[inner] < 2)
        return FC_OK;
    /* C read in place already (a stored tensor, contiguous along that level) */
    if (C->op == FC_OP_LOAD)
        for (int k = 0; k < C->nin; k++)
            if (C->in[k]->op == FC_OP_IOTA && C->in[k]->nlev == 1 && C->lev_map[k][0] == inner &&
                (C->strides[k] == 1 || C->strides[k] == -1))
                return FC_OK;
    if (ctxrec) {
        PtrMap s2 = {0};
        const FcStorage *which = NULL;
        uint64_t was = 0;
        bool old = stale(C, ctxrec, &s2, &which, &was);
        pm_free(&s2);
        if (old)
            return FC_OK;
    }
    int64_t strides[FC_MAX_DIMS], step = n->size[inner];
    strides[inner] = 1;
    for (int i = n->nlev - 1; i >= 0; i--)
        if (i != inner) {
            strides[i] = step;
            step *= n->size[i];
        }
    FcTensor *buf = NULL;
    FcStatus st = fc_empty(E->ctx, C->dtype, E->dev, n->nlev, n->size, strides, &buf, err);
    FcScatter sc;
    memset(&sc, 0, sizeof sc);
    if (!st)
        st = fc_store_scattered(E->ctx, buf->storage, 0, strides, C, &sc, err);
    FcNode *L = st ? NULL : fc_tensor_node(buf);
    if (L) {
        L->nograd = true;
        *out = L;
        __atomic_fetch_add(&staged, 1, __ATOMIC_RELAXED);
    } else if (!st) {
        st = fc_nomem(err);
    }
    fc_tensor_release(buf);
    return st;
}

/* Adds the cotangent ct of a load (both references, taken) to E's contributions, which flush
 * scatter-adds into the records the loads read. */
static FcStatus push_contrib(Engine *E, FcNode *load, FcNode *ct, FcError *err)
{
    if (E->ncb == E->capcb) {
        int c2 = E->capcb ? 2 * E->capcb : 16;
        void *q = mem_realloc(E->cb, (size_t)c2 * sizeof *E->cb);
        if (!q) {
            fc_node_release(load);
            fc_node_release(ct);
            return fc_nomem(err);
        }
        E->cb = q;
        E->capcb = c2;
    }
    E->cb[E->ncb].load = load;
    E->cb[E->ncb].ct = ct;
    E->ncb++;
    return FC_OK;
}

/* Pushes ct (over root's levels) through root's DAG; loads of storages with records (as ctxrec
 * saw them, or as they are now when ctxrec is NULL) get their cotangents scattered. */
static FcStatus add_into(FcCtx *ctx, FcTensor **acc, FcTensor *g, FcError *err);

/* The cotangent C of a node, computed now (the expression may read values a later step frees) and
 * added into *acc: a lazy input's result, or the gradient a lazy tensor retains. */
static FcStatus add_cotangent(Engine *E, FcTensor **acc, FcNode *C, FcError *err)
{
    FcTensor *t = fc_tensor_from_node(ref(C), E->dev, NULL, 0);
    if (!t)
        return fc_nomem(err);
    FcStatus st = fc_realize(E->ctx, t, err);
    if (!st)
        st = add_into(E->ctx, acc, t, err);
    fc_tensor_release(t);
    return st;
}

static FcStatus backprop_dag(Engine *E, FcNode *root, FcNode *ct, const FcGradRec *ctxrec, FcError *err)
{
    PtrMap memo = {0}, index = {0};
    FcNode **order = NULL, **cts = NULL;
    int norder = 0, cap = 0;
    FcStatus st = FC_OK;
    int rn = needs(root, ctxrec, &memo);
    if (rn <= 0) {
        pm_free(&memo);
        return rn < 0 ? fc_nomem(err) : FC_OK;
    }
    /* Post-order of the nodes that need a gradient (iterative: stack of (node, next operand)). */
    struct Fr { FcNode *n; int k; } *stk = NULL;
    int top = 0, capstk = 0;
#define PUSH(nd) do { if (top == capstk) { int c2 = capstk ? 2 * capstk : 64; void *q = mem_realloc(stk, (size_t)c2 * sizeof *stk); if (!q) goto nomem; stk = q; capstk = c2; } stk[top].n = (nd); stk[top].k = 0; top++; } while (0)
    if (!pm_put(&index, root, -1))
        goto nomem;
    PUSH(root);
    while (top) {
        struct Fr *f = &stk[top - 1];
        int nin = f->n->vjp ? f->n->vjp->nin : f->n->nin;
        if (f->n->op != FC_OP_LOAD && f->k < nin) {
            FcNode *c = f->n->vjp ? f->n->vjp->in[f->k++] : f->n->in[f->k++];
            if (pm_get(&index, c))
                continue;
            int r = needs(c, ctxrec, &memo);
            if (r < 0)
                goto nomem;
            if (!r)
                continue;
            if (!pm_put(&index, c, -1))
                goto nomem;
            PUSH(c);
            continue;
        }
        if (norder == cap) {
            int c2 = cap ? 2 * cap : 64;
            FcNode **o = mem_realloc(order, (size_t)c2 * sizeof *o);
            if (!o)
                goto nomem;
            order = o;
            cap = c2;
        }
        if (!pm_put(&index, f->n, norder))
            goto nomem;
        order[norder++] = f->n;
        top--;
    }
#undef PUSH
    cts = mem_calloc((size_t)norder, sizeof *cts);
    if (!cts)
        goto nomem;
    cts[norder - 1] = ref(ct);      /* the root is last in post-order */
    for (int i = norder - 1; i >= 0 && !st; i--) {
        FcNode *n = order[i], *C = cts[i];
        if (!C)
            continue;
        /* All of n's consumers in this expression came before it: C is its whole cotangent here. */
        for (int q = 0; q < E->ninputs && !st; q++)
            if (E->input_node[q] == n)
                st = add_cotangent(E, &E->results[q], C, err);
        if (!st && n->retain)
            st = add_cotangent(E, &n->retain->grad, C, err);
        if (st)
            break;
        if (n->op == FC_OP_LOAD) {
            if (push_contrib(E, ref(n), ref(C), err))
                goto nomem;
            continue;
        }
        if (n->op == FC_OP_SUM) {
            FcNode *S = NULL;
            st = stage_cotangent(E, n, C, ctxrec, &S, err);
            if (S) {
                fc_node_release(C);
                cts[i] = C = S;
            }
            if (st)
                break;
        }
        FcNode *outs[3] = {NULL, NULL, NULL};
        bool made = n->vjp ? vjp_declared(E->ctx, E->dev, n, C, outs) : vjp_rule(n, C, outs);
        int nin = n->vjp ? n->vjp->nin : n->nin;
        FcNode *const *ins = n->vjp ? n->vjp->in : n->in;
        /* A cotangent is of its operand's dtype (a reduction may compute in another one). */
        for (int k = 0; made && k < nin && k < 3; k++)
            if (outs[k] && outs[k]->dtype != ins[k]->dtype)
                made = (outs[k] = own1(FC_OP_CAST, ins[k]->dtype, outs[k])) != NULL;
        if (!made) {
            for (int k = 0; k < 3; k++)
                fc_node_release(outs[k]);
            goto nomem;
        }
        for (int k = 0; k < nin && k < 3; k++) {
            int *j = outs[k] ? pm_get(&index, ins[k]) : NULL;
            if (!j || *j < 0) {
                fc_node_release(outs[k]);
                continue;
            }
            if (!cts[*j])
                cts[*j] = outs[k];
            else {
                FcNode *s = own2(FC_OP_ADD, cts[*j]->dtype, cts[*j], outs[k]);
                cts[*j] = s;
                if (!s)
                    goto nomem;
            }
            /* A long chain of sums is realised, as a forward operand would be. */
            if (fc_node_bigger(cts[*j], E->ctx->max_fused)) {
                FcTensor *t = fc_tensor_from_node(cts[*j], E->dev, NULL, 0);
                cts[*j] = NULL;
                if (!t)
                    goto nomem;
                st = fc_realize(E->ctx, t, err);
                if (!st && !(cts[*j] = fc_tensor_node(t)))
                    st = fc_nomem(err);
                fc_tensor_release(t);
            }
        }
    }
    goto done;
nomem:
    st = fc_nomem(err);
done:
    for (int i = 0; cts && i < norder; i++)
        fc_node_release(cts[i]);
    mem_free(cts);
    mem_free(order);
    mem_free(stk);
    pm_free(&memo);
    pm_free(&index);
    return st;
}

/* Whether a value the contributions need was overwritten since record r was made. */
static bool stale(FcNode *n, const FcGradRec *r, PtrMap *seen, const FcStorage **which, uint64_t *was)
{
    if (pm_get(seen, n))
        return false;
    if (!pm_put(seen, n, 1))
        return false;
    if (n->op == FC_OP_LOAD)
        for (int i = 0; i < r->nreads; i++)
            if (r->reads[i].s == n->storage && n->storage->version != r->reads[i].version) {
                *which = n->storage;
                *was = r->reads[i].version;
                return true;
            }
    for (int k = 0; k < n->nin; k++)
        if (stale(n->in[k], r, seen, which, was))
            return true;
    return false;
}

/* Whether loads a and b read the same elements of one storage at the same levels, through IOTA
 * and CONST operands only (two uses of one stored tensor: x * x). */
static bool same_plain_load(const FcNode *a, const FcNode *b)
{
    if (a->storage != b->storage || a->offset != b->offset || a->nin != b->nin || a->nlev != b->nlev ||
        a->wrap != b->wrap || a->dtype != b->dtype)
        return false;
    for (int l = 0; l < a->nlev; l++)
        if (a->size[l] != b->size[l])
            return false;
    for (int k = 0; k < a->nin; k++) {
        const FcNode *x = a->in[k], *y = b->in[k];
        if (a->strides[k] != b->strides[k] || a->shape[k] != b->shape[k] || x->op != y->op || x->nlev != y->nlev)
            return false;
        if (x->op == FC_OP_IOTA && x->nlev == 1) {
            if (x->size[0] != y->size[0] || a->lev_map[k][0] != b->lev_map[k][0])
                return false;
        } else if (x->op != FC_OP_CONST || x->nlev != 0 || x->konst.i != y->konst.i) {
            return false;
        }
    }
    return true;
}

/* Whether x reads a stored tensor (bit 1) and whether it masks by a bound that the data set
 * (bit 2): a comparison of an index (an IOTA, maybe cast) with a value read from a tensor, as
 * roi_align's adaptive sampling grid, iy < ceil(roi_h / ph). memo: each node seen, its bits + 4. */
static int data_bits(const FcNode *x, PtrMap *memo, bool *nomem)
{
    const int *seen = pm_get(memo, x);
    if (seen)
        return *seen - 4;
    int bits = x->op == FC_OP_LOAD;
    for (int k = 0; k < x->nin; k++)
        bits |= data_bits(x->in[k], memo, nomem);
    if (fc_op_is_compare(x->op) && x->op != FC_OP_EQ && x->op != FC_OP_NE && x->nin == 2) {
        for (int k = 0; k < 2; k++) {
            const FcNode *i = x->in[k];
            while (i->op == FC_OP_CAST)
                i = i->in[0];
            if (i->op == FC_OP_IOTA && (data_bits(x->in[!k], memo, nomem) & 1))
                bits |= 2;
        }
    }
    if (!pm_put(memo, x, bits + 4))
        *nomem = true;
    return bits;
}

/* Scatters the contributions gathered by backprop_dag (loads read as ctxrec saw them). Loads
 * that read the same elements (same_plain_load) have their cotangents summed first, in their
 * order, and scattered once: one pass over the buffer instead of one per use. */
static FcStatus flush(Engine *E, const FcGradRec *ctxrec, FcError *err)
{
    FcStatus st = FC_OK;
    if (ctxrec) {
        PtrMap seen = {0};
        const FcStorage *s = NULL;
        uint64_t was = 0;
        for (int i = 0; i < E->ncb && !s; i++)
            if (!stale(E->cb[i].ct, ctxrec, &seen, &s, &was))
                for (int k = 0; k < E->cb[i].load->nin && !s; k++)
                    stale(E->cb[i].load->in[k], ctxrec, &seen, &s, &was);
        pm_free(&seen);
        if (s)
            st = fc_errf(err, FC_ERR_RUNTIME,
                         "one of the variables needed for gradient computation has been modified by an inplace "
                         "operation: [%s] is at version %llu; expected version %llu instead.",
                         fc_dtype_name(ctxrec->dtype), (unsigned long long)s->version, (unsigned long long)was);
    }
    for (int i = 0; i < E->ncb && !st; i++)
        for (int j = i + 1; j < E->ncb && E->cb[i].ct; j++)
            if (E->cb[j].ct && E->cb[j].ct->dtype == E->cb[i].ct->dtype &&
                same_plain_load(E->cb[i].load, E->cb[j].load)) {
                E->cb[i].ct = own2(FC_OP_ADD, E->cb[i].ct->dtype, E->cb[i].ct, E->cb[j].ct);
                E->cb[j].ct = NULL;
                if (!E->cb[i].ct)
                    st = fc_nomem(err);
            }
    /* The loads that read one storage through several gathers alike (same_scatter) are scattered
     * by one kernel, as the terms of one store, in their order here; unless a bound that the
     * data set masks the first one's cotangent (FC_SCHED_TERMS_BOUNDED). */
    FcNode *Ls[FC_MAX_DIMS], *cs[FC_MAX_DIMS];
    PtrMap memo = {0};
    bool nomem = false;
    for (int i = 0; i < E->ncb; i++) {
        if (!st && E->cb[i].ct) {
            FcGradRec *r = read_rec(ctxrec, E->cb[i].load->storage);
            int m = 0;
            Ls[m] = E->cb[i].load;
            cs[m++] = E->cb[i].ct;
            bool terms = r && !(E->ctx->sched_off & FC_SCHED_TERMS) &&
                         (!(E->ctx->sched_off & FC_SCHED_TERMS_BOUNDED) || !(data_bits(cs[0], &memo, &nomem) & 2));
            for (int j = i + 1; terms && j < E->ncb && m < FC_MAX_DIMS; j++)
                if (E->cb[j].ct && E->cb[j].ct->dtype == E->cb[i].ct->dtype &&
                    same_scatter(E->cb[i].load, E->cb[j].load)) {
                    Ls[m] = E->cb[j].load;
                    cs[m++] = E->cb[j].ct;
                    E->cb[j].ct = NULL;
                }
            if (r)
                st = scatter_into(E, r, Ls, cs, m, err);
            for (int t = 1; t < m; t++)
                fc_node_release(cs[t]);
        }
        fc_node_release(E->cb[i].load);
        fc_node_release(E->cb[i].ct);
    }
    E->ncb = 0;
    pm_free(&memo);
    return st || !nomem ? st : fc_nomem(err);
}

/* The elements of flat buffer g that tensor geometry (ndim, shape, strides, offset) covers, as a
 * stored tensor of its own; final: nothing writes g after this (a leaf's buffer), so that a
 * contiguous geometry over all of it may be a view of g rather than a copy. */
static FcStatus read_geometry(FcCtx *ctx, FcTensor *g, int ndim, const int64_t *shape, const int64_t *strides,
                              int64_t offset, bool final, FcTensor **out, FcError *err)
{
    FcTensor *v = NULL;
    FcStatus st = fc_as_strided(ctx, g, ndim, shape, strides, offset, &v, err);
    int64_t n = 1, step = 1;
    bool dense = final && offset == 0;
    for (int d = ndim - 1; d >= 0; d--) {
        dense = dense && (shape[d] == 1 || strides[d] == step);
        step *= shape[d];
        n *= shape[d];
    }
    if (!st && dense && n == fc_tensor_numel(g)) {
        *out = v;
        return FC_OK;
    }
    if (!st)
        st = fc_clone(ctx, v, FC_MF_CONTIGUOUS, out, err);
    fc_tensor_release(v);
    return st;
}

/* A write's cotangent: the buffer read where the write stored (a gather through its scatters). */
static FcNode *read_written(FcGradRec *r, FcTensor *g)
{
    FcNode *ins[FC_MAX_DIMS];
    int nin = 0;
    for (int l = 0; l < r->ndim; l++) {
        ins[nin] = fc_node_new(FC_OP_IOTA, FC_INT64, 1, &r->shape[l], 0, NULL);
        if (!ins[nin])
            goto fail;
        nin++;
    }
    for (int s = 0; s < r->sc.n; s++)
        ins[nin++] = ref(r->sc.index[s]);
    FcNode *L = fc_node_new(FC_OP_LOAD, r->dtype, r->ndim, r->shape, nin, ins);
    if (L) {
        for (int l = 0; l < r->ndim; l++) {
            L->lev_map[l][0] = (int8_t)l;
            L->strides[l] = r->strides[l];
            L->shape[l] = r->shape[l];
        }
        for (int s = 0; s < r->sc.n; s++) {
            int k = r->ndim + s;
            for (int l = 0; l < r->ndim; l++)
                L->lev_map[k][l] = (int8_t)l;
            L->strides[k] = r->sc.at[s].stride;
            L->shape[k] = r->sc.at[s].extent;
            if (r->sc.at[s].wrap)
                L->wrap |= (uint64_t)1 << k;
            L->index_dim[k] = r->sc.at[s].dim;
        }
        L->storage = fc_storage_retain(g->storage);
        L->offset = r->offset;
    }
    for (int k = 0; k < nin; k++)
        fc_node_release(ins[k]);
    return L;
fail:
    for (int k = 0; k < nin; k++)
        fc_node_release(ins[k]);
    return NULL;
}

static FcStatus add_into(FcCtx *ctx, FcTensor **acc, FcTensor *g, FcError *err)
{
    if (!*acc) {
        *acc = fc_tensor_retain(g);
        return FC_OK;
    }
    FcTensor *s = NULL;
    FcStatus st = fc_binary(ctx, FC_OP_ADD, *acc, g, &s, err);
    if (!st)
        st = fc_realize(ctx, s, err);
    if (st) {
        fc_tensor_release(s);
        return st;
    }
    fc_tensor_release(*acc);
    *acc = s;
    return FC_OK;
}

/* Whether the VJP of value reads forward values (PyTorch's saved tensors): anything but sums,
 * differences, negations, casts, loads, and products or quotients by constants. Such a record is
 * freed by a backward without retain_graph, as PyTorch frees its saved tensors. */
static bool saves_walk(FcNode *n, PtrMap *seen)
{
    if (pm_get(seen, n))
        return false;
    if (!pm_put(seen, n, 1))
        return true;            /* out of memory: free it, as when it saves */
    if (n->vjp) {
        /* a declared derivative saves its operands, but those of lerp by a number and of sub */
        if ((n->vjp->rule != FC_VJP_LERP || n->vjp->nin != 2) && n->vjp->rule != FC_VJP_SUB)
            return true;
        for (int k = 0; k < n->vjp->nin; k++)
            if (saves_walk(n->vjp->in[k], seen))
                return true;
        return false;
    }
    switch (n->op) {
    case FC_OP_LOAD: case FC_OP_CONST: case FC_OP_IOTA:
        return false;
    case FC_OP_NEG: case FC_OP_ADD: case FC_OP_SUB: case FC_OP_SUM: case FC_OP_CAST:
        break;
    case FC_OP_MUL: case FC_OP_DIV:
        if (n->in[1]->op == FC_OP_CONST || (n->op == FC_OP_MUL && n->in[0]->op == FC_OP_CONST))
            break;
        return true;
    default:
        return !n->nograd && fc_dtype_is_float(n->dtype);
    }
    for (int k = 0; k < n->nin; k++)
        if (saves_walk(n->in[k], seen))
            return true;
    return false;
}

static bool saves_values(FcNode *value)
{
    PtrMap seen = {0};
    bool r = saves_walk(value, &seen);
    pm_free(&seen);
    return r;
}

/* The read of storage s that record r lists, or NULL. */
static const GradRead *read_of(const FcGradRec *r, const FcStorage *s)
{
    for (int i = 0; i < r->nreads; i++)
        if (r->reads[i].s == s)
            return &r->reads[i];
    return NULL;
}

/* A library op's backward (REC_LIB) from its cotangent (the flat buffer g, ctn read where the op
 * wrote): the library's gradient of each operand that needs one, left in E's contributions (the
 * caller's flush scatter-adds them into the operands' records); for an operand the library
 * declines, the reference's VJP (r->value's, the other operand's loads left out), flushed here. */
static FcStatus backprop_lib(Engine *E, FcGradRec *r, FcTensor *g, FcNode *ctn, FcError *err)
{
    FcCtx *ctx = E->ctx;
    FcLibConv *lc = r->lib;
    FcTensor *ops[2] = {lc->x, lc->w}, *grads[2] = {NULL, NULL}, *v = NULL, *dy = NULL;
    bool need[2];
    for (int i = 0; i < 2; i++) {
        const GradRead *rd = read_of(r, ops[i]->storage);
        need[i] = rd && rd->rec;
    }
    /* the operands as the forward read them: each gradient reads the other operand */
    for (int i = 0; i < 2; i++) {
        const GradRead *rd = read_of(r, ops[1 - i]->storage);
        if (need[i] && rd && rd->s->version != rd->version)
            return fc_errf(err, FC_ERR_RUNTIME,
                           "one of the variables needed for gradient computation has been modified by an inplace "
                           "operation: [%s] is at version %llu; expected version %llu instead.",
                           fc_dtype_name(r->dtype), (unsigned long long)rd->s->version,
                           (unsigned long long)rd->version);
    }
    /* the cotangent as a dense tensor laid out as the result */
    FcStatus st = fc_as_strided(ctx, g, 4, lc->c.y_shape, lc->c.y_strides, r->offset, &v, err);
    if (!st)
        st = fc_clone(ctx, v, FC_MF_PRESERVE, &dy, err);
    if (!st)
        st = fc_realize(ctx, dy, err);
    fc_tensor_release(v);
    for (int i = 0; i < 2 && !st; i++)
        if (need[i])
            st = fc_conv_library_grad(ctx, lc, dy, i, &grads[i], err);
    fc_tensor_release(dy);
    /* the reference for the operands the library declined */
    if (!st && ((need[0] && !grads[0]) || (need[1] && !grads[1]))) {
        FcGradRec tmp = *r;
        tmp.reads = mem_calloc((size_t)r->nreads, sizeof *tmp.reads);
        if (!tmp.reads)
            st = fc_nomem(err);
        for (int i = 0; i < r->nreads && !st; i++) {
            tmp.reads[i] = r->reads[i];
            for (int k = 0; k < 2; k++)
                if (grads[k] && r->reads[i].s == ops[k]->storage)
                    tmp.reads[i].rec = NULL;
        }
        if (!st)
            st = backprop_dag(E, r->value, ctn, &tmp, err);
        if (!st)
            st = flush(E, &tmp, err);
        mem_free(tmp.reads);
    }
    for (int i = 0; i < 2; i++) {
        if (grads[i] && !st) {
            FcNode *load = fc_tensor_node(ops[i]), *ct = fc_tensor_node(grads[i]);
            st = load && ct ? push_contrib(E, load, ct, err) : fc_nomem(err);
            if (st && (!load || !ct)) {
                fc_node_release(load);
                fc_node_release(ct);
            }
        }
        fc_tensor_release(grads[i]);
    }
    return st;
}

/* A copy between devices' backward (REC_MOVE): the cotangent ctn, read where the copy wrote,
 * copied back to the source's device and added there into the source's record (that flush runs
 * on the source's device). */
static FcStatus backprop_move(Engine *E, FcGradRec *r, FcNode *ctn, FcError *err)
{
    FcDevice from = r->value->storage->device;
    FcTensor *ct = fc_tensor_from_node(fc_node_retain(ctn), r->device, NULL, 0), *back = NULL;
    FcStatus st = ct ? fc_move_device(E->ctx, ct, from, &back, err) : fc_nomem(err);
    fc_tensor_release(ct);
    FcNode *c = st ? NULL : fc_tensor_node(back);
    fc_tensor_release(back);
    if (!st)
        st = c ? push_contrib(E, fc_node_retain(r->value), c, err) : fc_nomem(err);   /* takes both */
    FcDevice was = E->dev;
    E->dev = from;
    if (!st)
        st = flush(E, r, err);
    E->dev = was;
    return st;
}

static FcStatus process(Engine *E, Pending *p, FcError *err)
{
    FcGradRec *r = p->rec;
    FcCtx *ctx = E->ctx;
    FcStatus st = FC_OK;
    E->dev = r->device;
    for (int i = 0; i < E->ninputs; i++)
        if (E->input_rec[i] == r && !E->results[i]) {
            FcTensor *in = E->inputs[i];
            st = read_geometry(ctx, p->g, in->ndim, in->shape, in->strides, in->offset, r->kind == REC_LEAF,
                               &E->results[i], err);
            if (st)
                return st;
        }
    /* the stored tensors over this storage that retain their gradient: their part of it */
    for (struct FcRetained *b = r->retain; b && !st; b = b->next) {
        FcTensor *v = NULL;
        st = read_geometry(ctx, p->g, b->ndim, b->shape, b->strides, b->offset, false, &v, err);
        if (!st)
            st = add_into(ctx, &b->grad, v, err);
        fc_tensor_release(v);
    }
    if (st)
        return st;
    if (r->kind == REC_LEAF) {
        if (E->ninputs || r->off)
            return FC_OK;
        FcTensor *v = NULL;
        st = read_geometry(ctx, p->g, r->ndim, r->shape, r->strides, r->offset, true, &v, err);
        if (!st)
            st = add_into(ctx, &r->gradt, v, err);
        fc_tensor_release(v);
        return st;
    }
    if (r->freed || !r->value)
        return fc_errf(err, FC_ERR_RUNTIME,
                       "Trying to backward through the graph a second time (or directly access saved tensors after "
                       "they have already been freed). Saved intermediate values of the graph are freed when you "
                       "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
                       "through the graph a second time or if you need to access saved tensors after calling "
                       "backward.");
    FcNode *L = read_written(r, p->g);
    FcTensor *ct = L ? fc_tensor_from_node(L, r->device, NULL, 0) : NULL;
    if (!ct)
        return fc_nomem(err);
    /* The cotangent is read from the buffer where it lies, unless the buffer is zeroed there
     * for the record underneath (then it is copied out first). */
    if (!r->sc.accumulate && r->prev)
        st = fc_realize(ctx, ct, err);
    if (!st && !r->sc.accumulate && r->prev) {
        /* What this write overwrote gets no gradient from after it. */
        FcNode *z = fc_node_new(FC_OP_CONST, r->dtype, r->ndim, r->shape, 0, NULL);
        st = z ? fc_store_scattered(ctx, p->g->storage, r->offset, r->strides, z, &r->sc, err) : fc_nomem(err);
        fc_node_release(z);
    }
    FcNode *ctn = st ? NULL : fc_tensor_node(ct);
    fc_tensor_release(ct);
    if (!st && !ctn)
        st = fc_nomem(err);
    if (!st)
        st = r->kind == REC_LIB    ? backprop_lib(E, r, p->g, ctn, err)
             : r->kind == REC_MOVE ? backprop_move(E, r, ctn, err)
                                   : backprop_dag(E, r->value, ctn, r, err);
    fc_node_release(ctn);
    if (!st)
        st = flush(E, r, err);
    if (!st && r->prev) {
        Pending *pp = pending_of(E, r->prev);
        st = pp ? add_into(ctx, &pp->g, p->g, err) : fc_nomem(err);
    }
    if (!st && !E->retain && saves_values(r->value)) {
        rec_clear(r);
        r->freed = true;
    }
    return st;
}

FcStatus fc_backward(FcCtx *ctx, int noutputs, FcTensor *const *outputs, FcTensor *const *grads, int ninputs,
                     FcTensor *const *inputs, FcTensor **results, bool retain_graph, FcError *err)
{
    Engine E;
    memset(&E, 0, sizeof E);
    E.ctx = ctx;
    E.retain = retain_graph;
    E.ninputs = ninputs;
    E.inputs = inputs;
    E.results = results;
    FcStatus st = FC_OK;
    bool was_off = fc_grad_off;
    for (int i = 0; i < ninputs; i++)
        results[i] = NULL;
    for (int k = 0; k < noutputs; k++)
        if (!fc_requires_grad(outputs[k]))
            return fc_errf(err, FC_ERR_RUNTIME, "element %d of tensors does not require grad and does not have a grad_fn", k);
    if (ninputs) {
        E.input_rec = mem_calloc((size_t)ninputs, sizeof *E.input_rec);
        E.input_node = mem_calloc((size_t)ninputs, sizeof *E.input_node);
        if (!E.input_rec || !E.input_node) {
            st = fc_nomem(err);
            goto out;
        }
        for (int i = 0; i < ninputs; i++) {
            if (!fc_requires_grad(inputs[i])) {
                st = fc_errf(err, FC_ERR_RUNTIME, "One of the differentiated Tensors does not require grad");
                goto out;
            }
            /* A lazy input is found by its node in the expressions that used it (realised now,
             * it would be a new storage that nothing read); one that is also an output, or a
             * view of another lazy tensor, is stored first as before. */
            bool output = false;
            for (int k = 0; k < noutputs; k++)
                output |= outputs[k] == inputs[i];
            if (inputs[i]->node && !inputs[i]->levels && !inputs[i]->alias_of && !output) {
                E.input_node[i] = inputs[i]->node;
                continue;
            }
            if ((st = fc_realize(ctx, inputs[i], err)) != FC_OK)
                goto out;
            E.input_rec[i] = inputs[i]->storage->grad;
        }
    }
    fc_grad_off = true;
    for (int k = 0; k < noutputs && !st; k++) {
        FcTensor *o = outputs[k], *g = grads ? grads[k] : NULL;
        FcNode *ct;
        if (!g) {
            if (fc_tensor_numel(o) != 1) {
                st = fc_errf(err, FC_ERR_RUNTIME, "grad can be implicitly created only for scalar outputs");
                break;
            }
            ct = fc_node_new(FC_OP_CONST, o->dtype, o->ndim, o->shape, 0, NULL);
            if (ct)
                ct->konst.f = 1;
        } else {
            bool same = g->ndim == o->ndim;
            for (int d = 0; same && d < o->ndim; d++)
                same = g->shape[d] == o->shape[d];
            if (!same) {
                char a[256], b[256];
                st = fc_errf(err, FC_ERR_RUNTIME, "Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a shape of %s.",
                             k, fc_shape_str(a, sizeof a, g->ndim, g->shape), k, fc_shape_str(b, sizeof b, o->ndim, o->shape));
                break;
            }
            FcNode *gn = fc_tensor_node(g);
            ct = gn && gn->dtype != o->dtype ? own1(FC_OP_CAST, o->dtype, gn) : gn;
        }
        /* A lazy output is stored first: its record is then freed by this backward as PyTorch
         * frees the graph's saved values. */
        if (ct && o->node && (st = fc_realize(ctx, o, err)) != FC_OK) {
            fc_node_release(ct);
            break;
        }
        FcNode *root = ct ? fc_tensor_node(o) : NULL;
        if (root && !o->node)
            root->nograd = false;       /* a load made here of o's storage, which needs a gradient */
        E.dev = o->device;
        st = root ? backprop_dag(&E, root, ct, NULL, err) : fc_nomem(err);
        fc_node_release(root);
        fc_node_release(ct);
        if (!st)
            st = flush(&E, NULL, err);
    }
    /* Newest record first: everything that reads a record is newer than it. */
    for (;;) {
        if (st)
            break;
        int best = -1;
        for (int i = 0; i < E.n; i++)
            if (E.p[i].g && (best < 0 || E.p[i].rec->seq > E.p[best].rec->seq))
                best = i;
        if (best < 0)
            break;
        /* Taken out of the list (nothing adds to it after this point), so that the list may grow. */
        Pending cur = E.p[best];
        E.p[best].g = NULL;
        st = process(&E, &cur, err);
        fc_tensor_release(cur.g);
    }
    for (int i = 0; i < ninputs && !st; i++)
        if (!results[i])
            st = fc_errf(err, FC_ERR_RUNTIME,
                         "One of the differentiated Tensors appears to not have been used in the graph. Set "
                         "allow_unused=True if this is the desired behavior.");
out:
    fc_grad_off = was_off;
    for (int i = 0; i < E.ncb; i++) {
        fc_node_release(E.cb[i].load);
        fc_node_release(E.cb[i].ct);
    }
    mem_free(E.cb);
    for (int i = 0; i < E.n; i++) {
        fc_tensor_release(E.p[i].g);
        fc_grad_rec_release(E.p[i].rec);
    }
    mem_free(E.p);
    mem_free(E.input_rec);
    mem_free(E.input_node);
    if (st)
        for (int i = 0; i < ninputs; i++) {
            fc_tensor_release(results[i]);
            results[i] = NULL;
        }
    return st;
}
