/* dims.c — first-class dims in the interpreter (functorch.dim's surface): Dim and DimList values
 * (dims(), dimlists(), d.size, d.is_bound; a dim takes the name of the variable it is first
 * assigned to, in eval.c), and what tensor operations do when dims are involved:
 *   - pointwise rows align their operands' levels (fc_levels_union), reductions and softmax take
 *     dims for `dim` (functorch's _wrap), other rows run batched over the dims (its vmap
 *     fallback), `(a * b).sum(dims)` of two tensors with only first-class dims is a matmul
 *     (functorch's delayed multiply);
 *   - t[...] with dims, dim packs and tensors carrying dims (fc_index_dims), t.order(...),
 *     t.expand(d...), t.index(dims, indices), stack(tensors, new_dim, dim), t.dims;
 *   - a tensor with dims prints as functorch.dim's repr ("with dims=(i, 0) sizes=(3, 4)").
 * The semantics are fcdim/dims.c's; this file maps values and operator rows onto it. */
#include "tensor.h"
#include "mem.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "x.tdl:3:5": the statement running now (FcCtx.locate). */
void dims_locate(void *ud, char *buf, size_t cap)
{
    Interp *I = ud;
    if (!I->stmt_src) {
        buf[0] = '\0';
        return;
    }
    int line, col;
    lang_source_linecol(I->stmt_src, I->stmt_pos, &line, &col);
    snprintf(buf, cap, "%s:%d:%d", I->stmt_src->name, line, col);
}

/* ---- making dims ---- */

static bool dimlist_bind_len(Interp *I, DimListObj *l, int64_t n)
{
    if (l->bound) {
        if (l->n != n)
            return err_raise(I, TDL_ERR_DIMENSION_BIND, "dim list %s has %d dims but is being bound to %lld",
                             l->name, l->n, (long long)n);
        return true;
    }
    if (n < 0 || n > FC_MAX_DIMS) return err_raise(I, TDL_ERR_VALUE, "a dim list of %lld dims", (long long)n);
    l->dims = mem_calloc((size_t)(n ? n : 1), sizeof *l->dims);
    if (!l->dims) return err_nomem(I);
    for (int k = 0; k < n; k++) {
        char name[96];
        snprintf(name, sizeof name, "%s%d", l->name, k);
        l->dims[k] = fc_dim_new(I->fc, name, true, -1);
        if (!l->dims[k]) {
            for (int j = 0; j < k; j++) fc_dim_release(l->dims[j]);
            mem_free(l->dims);
            l->dims = NULL;
            return err_nomem(I);
        }
    }
    l->n = (int)n;
    l->bound = true;
    return true;
}

static bool bind_size(Interp *I, FcDim *d, Value v, const char *what)
{
    if (!is_intlike(v))
        return err_raise(I, TDL_ERR_TYPE, "the size of dim %s must be an int, not %s", d->name, val_type_name(v));
    FcError e;
    return tensor_check(I, fc_dim_bind(I->fc, d, as_i(v), what, &e), &e);
}

/* One item of sizes= (None, an int, or for a dim list a sequence of ints). On failure *out is
 * V_UNDEF: the caller's tuple may hold it. */
static bool make_one(Interp *I, bool list, int k, Value size, Value *out)
{
    char name[32];
    snprintf(name, sizeof name, "d%d", k);
    if (!list) {
        FcDim *d = fc_dim_new(I->fc, name, false, -1);
        if (!d) return err_nomem(I);
        Value dv;
        if (!dim_value_steal(I, d, &dv)) return false;
        if (size.tag != V_NONE && !bind_size(I, d, size, "dims(sizes=...)")) {
            val_decref(I, dv);
            return false;
        }
        *out = dv;
        return true;
    }
    Value lv;
    if (!dimlist_new(I, name, false, &lv)) return false;
    DimListObj *l = as_dimlist(lv);
    bool ok = true;
    if (is_intlike(size)) {
        ok = dimlist_bind_len(I, l, as_i(size));
    } else if (size.tag == V_TUPLE || size.tag == V_LIST) {
        size_t n = size.tag == V_TUPLE ? as_tuple(size)->n : as_list(size)->n;
        const Value *items = size.tag == V_TUPLE ? as_tuple(size)->items : as_list(size)->items;
        ok = dimlist_bind_len(I, l, (int64_t)n);
        for (size_t j = 0; ok && j < n; j++) ok = bind_size(I, l->dims[j], items[j], "dimlists(sizes=...)");
    } else if (size.tag != V_NONE) {
        ok = err_raise(I, TDL_ERR_TYPE, "dimlists(): a size must be None, an int or a sequence of ints");
    }
    if (ok) *out = lv;
    else val_decref(I, lv);
    return ok;
}

static bool make_dims(Interp *I, bool list, const Value *args, int nargs, const char *const *kwnames, int nkw,
                      Value *out)
{
    const char *fname = list ? "dimlists" : "dims";
    Value n = v_none(), sizes = v_none();
    if (nargs > 0) n = args[0];
    if (nargs > 1) sizes = args[1];
    for (int k = 0; k < nkw; k++) {
        Value *slot = strcmp(kwnames[k], "n") == 0 ? &n : strcmp(kwnames[k], "sizes") == 0 ? &sizes : NULL;
        if (!slot || (slot == &n && nargs > 0) || (slot == &sizes && nargs > 1))
            return err_raise(I, TDL_ERR_TYPE, "%s() got an unexpected or repeated keyword argument '%s'", fname,
                             kwnames[k]);
        *slot = args[nargs + k];
    }
    int64_t count = 1;
    size_t nsizes = 0;
    const Value *sz = NULL;
    if (sizes.tag == V_TUPLE || sizes.tag == V_LIST) {
        nsizes = sizes.tag == V_TUPLE ? as_tuple(sizes)->n : as_list(sizes)->n;
        sz = sizes.tag == V_TUPLE ? as_tuple(sizes)->items : as_list(sizes)->items;
        count = (int64_t)nsizes;
    } else if (sizes.tag != V_NONE) {
        return err_raise(I, TDL_ERR_TYPE, "%s(): sizes must be a list of sizes (None for unbound), not %s", fname,
                         val_type_name(sizes));
    }
    if (n.tag != V_NONE) {
        if (!is_intlike(n)) return err_raise(I, TDL_ERR_TYPE, "%s(): n must be an int, not %s", fname, val_type_name(n));
        count = as_i(n);
        if (sz && (int64_t)nsizes != count)
            return err_raise(I, TDL_ERR_VALUE, "expected %lld sizes but found %zu", (long long)count, nsizes);
    }
    if (count < 1 || count > FC_MAX_DIMS)
        return err_raise(I, TDL_ERR_VALUE, "%s(): n must be between 1 and %d, got %lld", fname, FC_MAX_DIMS, (long long)count);
    if (count == 1) return make_one(I, list, 0, sz ? sz[0] : v_none(), out);
    TupleObj *t = tuple_alloc(I, (size_t)count);
    if (!t) return false;
    Value tv = v_obj(V_TUPLE, &t->h);
    for (int64_t k = 0; k < count; k++)
        if (!make_one(I, list, (int)k, sz ? sz[k] : v_none(), &t->items[k])) {
            val_decref(I, tv);
            return false;
        }
    *out = tv;
    return true;
}

bool builtin_dims(Interp *I, Value self, const Value *args, int nargs, const char *const *kwnames, int nkw, Value *out)
{
    (void)self;
    return make_dims(I, false, args, nargs, kwnames, nkw, out);
}

bool builtin_dimlists(Interp *I, Value self, const Value *args, int nargs, const char *const *kwnames, int nkw,
                      Value *out)
{
    (void)self;
    return make_dims(I, true, args, nargs, kwnames, nkw, out);
}

bool dims_set_attr(Interp *I, Value obj, const char *name, Value v, bool *found)
{
    *found = obj.tag == V_DIM && strcmp(name, "size") == 0;
    if (!*found) return true;
    FcDim *d = as_dim(obj);
    char what[96];
    snprintf(what, sizeof what, "%s.size = %lld", d->name, is_intlike(v) ? (long long)as_i(v) : 0LL);
    return bind_size(I, d, v, what);
}

/* ---- values as tensors ---- */

bool dims_tensor_of(Interp *I, Value v, FcTensor **out)
{
    if (v.tag == V_TENSOR) {
        *out = fc_tensor_retain(as_tensor(v));
        return true;
    }
    FcError e;
    return tensor_check(I, fc_dim_tensor(I->fc, as_dim(v), out, &e), &e);
}

/* The dims of a dim argument: a dim, a bound dim list, or a tuple/list of dims and ints. */
static bool is_dimlike(Value v) { return v.tag == V_DIM || (v.tag == V_DIMLIST && as_dimlist(v)->bound); }

bool dims_in_arg(Value v)
{
    if (is_dimlike(v)) return true;
    if (v.tag != V_TUPLE && v.tag != V_LIST) return false;
    size_t n = v.tag == V_TUPLE ? as_tuple(v)->n : as_list(v)->n;
    const Value *items = v.tag == V_TUPLE ? as_tuple(v)->items : as_list(v)->items;
    for (size_t k = 0; k < n; k++)
        if (is_dimlike(items[k])) return true;
    return false;
}

/* A dim argument as refs (dims, or positional ints). */
static bool dim_refs(Interp *I, Value v, FcDimRef *refs, int *n)
{
    *n = 0;
    const Value *items = &v;
    size_t cnt = 1;
    if (v.tag == V_TUPLE || v.tag == V_LIST) {
        cnt = v.tag == V_TUPLE ? as_tuple(v)->n : as_list(v)->n;
        items = v.tag == V_TUPLE ? as_tuple(v)->items : as_list(v)->items;
    }
    for (size_t k = 0; k < cnt; k++) {
        Value x = items[k];
        if (x.tag == V_DIMLIST && as_dimlist(x)->bound) {
            for (int j = 0; j < as_dimlist(x)->n; j++) {
                if (*n == FC_MAX_DIMS) return err_raise(I, TDL_ERR_VALUE, "too many dims");
                refs[(*n)++] = (FcDimRef){as_dimlist(x)->dims[j], 0};
            }
            continue;
        }
        if (*n == FC_MAX_DIMS) return err_raise(I, TDL_ERR_VALUE, "too many dims");
        if (x.tag == V_DIM) refs[(*n)++] = (FcDimRef){as_dim(x), 0};
        else if (is_intlike(x)) refs[(*n)++] = (FcDimRef){NULL, as_i(x)};
        else return err_raise(I, TDL_ERR_TYPE, "expected a dim or an int, got %s", val_type_name(x));
    }
    return true;
}

/* ---- printing ---- */

bool dims_repr_suffix(Interp *I, const FcTensor *t, Buf *b)
{
    (void)I;
    FcLevels lv;
    char buf[1024];
    fc_tensor_levels(t, &lv);
    buf_printf(b, "\nwith dims=%s sizes=(", fc_levels_str(buf, sizeof buf, &lv));
    for (int k = 0; k < t->ndim; k++) buf_printf(b, "%s%lld", k ? ", " : "", (long long)t->shape[k]);
    buf_puts(b, t->ndim == 1 ? ",)" : ")");
    return true;
}

/* ---- results ---- */

/* Wraps r with levels lv (stealing r). */
static bool steal_with_levels(Interp *I, FcTensor *r, const FcLevels *lv, Value *out)
{
    FcTensor *w;
    FcError e;
    FcStatus st = fc_with_levels(I->fc, r, lv, &w, &e);
    fc_tensor_release(r);
    return tensor_check(I, st, &e) && tensor_value_steal(I, w, out);
}

/* The tensors in a result value (a tensor, or a tuple of them) relabelled: lv exactly (all
 * results have lv->n dims), or, when nbatch >= 0, the first nbatch dims as lv's dims. */
static bool relabel(Interp *I, Value *res, const FcLevels *lv, int nbatch)
{
    if (res->tag == V_TUPLE) {
        TupleObj *t = as_tuple(*res);
        for (size_t k = 0; k < t->n; k++)
            if (!relabel(I, &t->items[k], lv, nbatch)) return false;
        return true;
    }
    if (res->tag != V_TENSOR) return true;
    FcTensor *r = as_tensor(*res);
    FcLevels l = *lv;
    if (nbatch >= 0) {
        if (r->ndim < nbatch) return err_raise(I, TDL_ERR_RUNTIME, "internal error: a batched result lost its batch dims");
        l.n = r->ndim;
        for (int k = nbatch; k < r->ndim; k++) l.at[k] = NULL;
    }
    if (l.n != r->ndim) return err_raise(I, TDL_ERR_RUNTIME, "internal error: %d levels for %d dims", l.n, r->ndim);
    TensorObj *o = (TensorObj *)res->o;
    if (o->h.refcnt == 1 && !o->fa && !o->fb) {     /* a fresh result: relabelled where it is */
        FcError e;
        return tensor_check(I, fc_take_levels(I->fc, &o->t, &l, &e), &e);
    }
    Value w;
    if (!steal_with_levels(I, fc_tensor_retain(r), &l, &w)) return false;
    val_decref(I, *res);
    *res = w;
    return true;
}

/* ---- operator rows with dims (tensor.c's dispatch calls dims_run) ---- */

typedef enum RowKind {
    RK_POINTWISE, RK_DIMS_FIRST, RK_SELF, RK_DIMOP, RK_BATCH, RK_INFO, RK_OWN, RK_INPLACE, RK_REFUSE
} RowKind;

static bool name_in(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(name, *list) == 0) return true;
    return false;
}

static RowKind row_kind(const TensorOpRow *r);

bool dims_row_takes_dims(const TensorOpRow *r) { return row_kind(r) == RK_DIMOP; }

static RowKind classify_row(const TensorOpRow *r)
{
    static const char *const pointwise[] = {"add", "sub", "div", "where", "clamp", "clip", NULL};
    static const char *const self[] = {"cpu", "cuda", "clone", "contiguous", "zeros_like", "ones_like",
                                       "full_like", "empty_like", "rand_like", "randn_like", NULL};
    static const char *const dimop[] = {"sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin",
                                        "any", "all", "logsumexp", "softmax", "log_softmax", "var", "std",
                                        "cumsum", "cumprod", "sort", "argsort", NULL};
    static const char *const batch[] = {"reshape", "view", "permute", "transpose", "t", "T", "expand", "expand_as",
                                        "squeeze", "unsqueeze", "flatten", "cat", "stack", "matmul", "index_select",
                                        "gather", "dot", "bmm", "split", "chunk", NULL};
    /* pointwise, but not in functorch.dim's pointwise set: they run batched there, which puts the
     * levels of the operands that carry dims before those of plain tensors (mul: unless delayed) */
    static const char *const batch_pointwise[] = {"mul", "neg", "clip", "to", "type", NULL};
    static const char *const info[] = {"numel", "dim", "size", "stride", "shape", "ndim", "dtype", "device",
                                       "is_contiguous", NULL};
    if (r->impl == impl_inplace || r->impl == impl_fill_ || r->impl == impl_copy_ || r->impl == impl_masked_fill_)
        return RK_INPLACE;
    if (name_in(r->name, batch_pointwise) || r->lower == TL_CAST) return RK_DIMS_FIRST;
    if (r->lower == TL_UNARY || r->lower == TL_BINARY || r->lower == TL_LOGICAL) {
        if (strcmp(r->name, "max") == 0 || strcmp(r->name, "min") == 0) return r->overload[0] ? RK_POINTWISE : RK_DIMOP;
        return RK_POINTWISE;
    }
    if (strcmp(r->overload, "dims") == 0) return RK_OWN;     /* takes dims itself: stack(ts, new_dim) */
    if (name_in(r->name, dimop)) return RK_DIMOP;
    if (name_in(r->name, pointwise)) return RK_POINTWISE;
    if (name_in(r->name, self)) return RK_SELF;
    if (name_in(r->name, batch)) return RK_BATCH;
    if (name_in(r->name, info)) return RK_INFO;
    return RK_REFUSE;
}

/* Each row's kind, classified once (by name: tens of string compares) for all interpreters. */
enum { KIND_ROWS = 512 };       /* tensor.c refuses a table of more rows */
static uint8_t row_kinds[KIND_ROWS];
static pthread_once_t kinds_once = PTHREAD_ONCE_INIT;

static void classify_rows(void)
{
    for (int r = 0; r < tensor_nops && r < KIND_ROWS; r++) row_kinds[r] = (uint8_t)classify_row(&tensor_ops[r]);
}

static RowKind row_kind(const TensorOpRow *r)
{
    pthread_once(&kinds_once, classify_rows);
    ptrdiff_t k = r - tensor_ops;
    return k >= 0 && k < KIND_ROWS ? (RowKind)row_kinds[k] : classify_row(r);
}

static bool is_tensor_param(const TensorParam *p) { return p->type == TT_TENSOR; }

bool dims_involved(const TensorSig *sig, const TensorArg *a)
{
    for (int k = 0; k < sig->nparams; k++) {
        if (a[k].fdim) return true;
        if (a[k].t && a[k].t->levels) return true;
        for (int j = 0; a[k].ts && j < a[k].n; j++)
            if (a[k].ts[j]->levels) return true;
    }
    return false;
}

static bool refuse(Interp *I, const TensorSig *sig)
{
    return err_raise(I, TDL_ERR_RUNTIME,
                     "%s() does not take tensors with first-class dims: make them positional first with "
                     "t.order(...)", sig->row->name);
}

/* Pointwise rows: every tensor operand laid out over the union of their levels (dims_first: the
 * operands that carry dims counted first). */
static bool run_pointwise(Interp *I, const TensorSig *sig, TensorArg *a, bool dims_first, Value *out)
{
    FcTensor *ts[TENSOR_MAX_PARAMS] = {NULL};
    int n = 0;
    for (int pass = dims_first ? 0 : 1; pass < 2; pass++)
        for (int k = 0; k < sig->nparams; k++)
            if (is_tensor_param(&sig->params[k]) && a[k].t && !a[k].t->wrapped_number &&
                (!dims_first || (pass == 0) == (a[k].t->levels != NULL)))
                ts[n++] = a[k].t;
    FcLevels lv;
    FcError e;
    if (!tensor_check(I, fc_levels_union(n, ts, &lv, &e), &e)) return false;
    if (dims_first && strcmp(sig->row->name, "mul") == 0 && a[0].t && !a[0].t->levels && !a[0].t->wrapped_number) {
        /* p * t of a plain tensor p runs batched in functorch.dim (torch.Tensor.mul is not in its
         * pointwise set): EnableAllLayers orders the dims as they were made, and from_batched
         * puts them before the positional levels (p * t[j, i]: i before j). t * p, 2 * t are
         * _Tensor's own __mul__, pointwise: the union in order of appearance. (t.mul(p) runs
         * batched too in functorch; tdl, which cannot tell it from t * p, gives the union.) */
        FcLevels b = {0};
        for (int k = 0; k < lv.n; k++)
            if (lv.at[k]) {
                int q = b.n++;
                for (; q > 0 && b.at[q - 1]->serial > lv.at[k]->serial; q--) b.at[q] = b.at[q - 1];
                b.at[q] = lv.at[k];
            }
        for (int k = 0; k < lv.n; k++)
            if (!lv.at[k]) b.at[b.n++] = NULL;
        lv = b;
    }
    /* functorch delays a product of two float tensors with only first-class dims (dims_run sends
     * only those products here): summed over dims, it is a matmul (try_contract) */
    bool delay = !dims_first && strcmp(sig->row->name, "mul") == 0 && n == 2;
    FcTensor *fa = delay ? fc_tensor_retain(ts[0]) : NULL, *fb = delay ? fc_tensor_retain(ts[1]) : NULL;
    /* Each operand laid out over lv as a positional tensor. One already over lv goes as it is:
     * the row's fcdim functions do not read levels, and its result is relabelled anyway. */
    for (int k = 0; k < sig->nparams; k++) {
        if (!is_tensor_param(&sig->params[k]) || !a[k].t || a[k].t->wrapped_number ||
            fc_tensor_levels_are(a[k].t, &lv))
            continue;
        FcTensor *m;
        if (!tensor_check(I, fc_match_levels(I->fc, a[k].t, &lv, &m, &e), &e)) {
            fc_tensor_release(fa);
            fc_tensor_release(fb);
            return false;
        }
        fc_tensor_release(a[k].t);
        a[k].t = m;
    }
    if (!tensor_run_row(I, sig, a, out) || !relabel(I, out, &lv, -1)) {
        fc_tensor_release(fa);
        fc_tensor_release(fb);
        return false;
    }
    if (delay && out->tag == V_TENSOR) {
        ((TensorObj *)out->o)->fa = fa;
        ((TensorObj *)out->o)->fb = fb;
    }
    return true;
}

/* Rows that keep self's levels (casts, copies, *_like): run on self's data, relabel as self. */
static bool run_self(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    for (int k = 1; k < sig->nparams; k++)
        if (a[k].t && a[k].t->levels) return refuse(I, sig);
    FcLevels lv;
    fc_tensor_levels(a[0].t, &lv);
    return tensor_run_row(I, sig, a, out) && relabel(I, out, &lv, -1);
}

/* (a * b).sum(dims) where the product's operands have only first-class dims: a matmul over the
 * summed dims (functorch's delayed multiply), so contractions give matmul's values. Returns
 * true with *done false when it does not apply. */
static bool try_contract(Interp *I, TensorArg *self, const FcDimRef *refs, int nref, Value *out, bool *done);
/* Reductions, softmax, logsumexp: `dim` may hold dims (and ints: positional dims). */
/* A reduction over no positional dims reduces nothing: a[0]'s tensor (of levels lv) gets a
 * size-1 positional level to reduce, last. Returns its index, or -1 with the error raised. */
static int add_unit_level(Interp *I, TensorArg *a, const FcLevels *lv)
{
    FcLevels to = *lv;
    if (to.n + 1 > FC_MAX_DIMS) return err_raise(I, TDL_ERR_VALUE, "too many dims"), -1;
    to.at[to.n++] = NULL;
    FcTensor *m;
    FcError e;
    if (!tensor_check(I, fc_match_levels(I->fc, a[0].t, &to, &m, &e), &e)) return -1;
    fc_tensor_release(a[0].t);
    a[0].t = m;
    return lv->n;
}

static bool run_dimop(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    TensorArg *dim = tensor_arg(sig, a, "dim"), *keep = tensor_arg(sig, a, "keepdim");
    FcTensor *t = a[0].t;
    static const char *const keeps[] = {"softmax", "log_softmax", "cumsum", "cumprod", "sort", "argsort", NULL};
    bool reduce = !name_in(sig->row->name, keeps);      /* the others keep the dim they run along */
    bool keepdim = keep && keep->b;
    FcLevels lv;
    fc_tensor_levels(t, &lv);
    FcDimRef refs[FC_MAX_DIMS];
    int nref = 0;
    FcError e;
    bool all = !dim || dim->none || (!dim->fdim && dim->n == 0 && sig->params[dim - a].type == TT_INTLIST);
    if (!all) {
        if (dim->fdim) {
            if (!dim_refs(I, dim->v, refs, &nref)) return false;
        } else {
            for (int k = 0; k < dim->n; k++) refs[nref++] = (FcDimRef){NULL, dim->ints[k]};
        }
    }
    if (dim && dim->fdim && strcmp(sig->row->name, "sum") == 0 && !keepdim && tensor_arg(sig, a, "dtype")->none) {
        bool done;
        if (!try_contract(I, &a[0], refs, nref, out, &done)) return false;
        if (done) return true;
    }
    int npos = fc_tensor_npos(t);
    bool drop[FC_MAX_DIMS] = {false};
    int idx[FC_MAX_DIMS], nidx = 0;
    if (all) {
        /* functorch's fallback (no dim to look at): the dims in the order they were made, first */
        FcLevels batch;
        int nbatch;
        FcTensor *m = NULL;
        if (!tensor_check(I, fc_levels_batch(1, &t, &batch, &nbatch, &e), &e) ||
            !tensor_check(I, fc_batch_tensor(I->fc, t, &batch, &m, &e), &e))
            return false;
        for (batch.n = nbatch; batch.n < m->ndim; batch.n++) batch.at[batch.n] = NULL;
        if (!tensor_check(I, fc_take_levels(I->fc, &m, &batch, &e), &e)) {
            fc_tensor_release(m);
            return false;
        }
        fc_tensor_release(a[0].t);
        a[0].t = t = m;
        fc_tensor_levels(t, &lv);
        if (npos == 0 && reduce) {
            int l = add_unit_level(I, a, &lv);
            if (l < 0) return false;
            t = a[0].t;
            idx[nidx++] = l;
        } else {
            for (int p = 0; p < npos; p++) idx[nidx++] = fc_level_of_pos(t, p);
        }
    } else {
        char buf[1024];
        for (int k = 0; k < nref; k++) {
            int l;
            if (refs[k].dim) {
                if (keepdim) return err_raise(I, TDL_ERR_VALUE, "cannot preserve first-class dimensions with keepdim=True");
                l = fc_level_of_dim(t, refs[k].dim);
                if (l < 0)
                    return err_raise(I, TDL_ERR_VALUE, "tensor with dims %s does not contain dim %s",
                                     fc_levels_str(buf, sizeof buf, &lv), refs[k].dim->name);
            } else {
                int p;
                if (!tensor_check(I, fc_wrap_dim(refs[k].pos, npos, &p, &e), &e)) return false;
                if (npos == 0) {
                    /* dim 0 or -1 of no positional dims (a 0-dim tensor's, as PyTorch wraps it):
                     * a reduction reduces a size-1 level added for it, as in the `all` case */
                    if (!reduce)
                        return err_raise(I, TDL_ERR_INDEX, "%s(): the tensor has no positional dim to take",
                                         sig->row->name);
                    if ((l = add_unit_level(I, a, &lv)) < 0) return false;
                    t = a[0].t;
                    npos = 1;
                } else {
                    l = fc_level_of_pos(t, p);
                }
            }
            idx[nidx++] = l;
        }
    }
    if (reduce && !keepdim)
        for (int k = 0; k < nidx; k++) drop[idx[k]] = true;
    /* the row sees the level indices as plain dims */
    if (dim) {
        dim->none = false;
        dim->fdim = false;
        dim->n = nidx;
        for (int k = 0; k < nidx; k++) dim->ints[k] = idx[k];
        dim->i = nidx ? idx[0] : 0;
        /* an int dim (prod, argmax, any, max(dim), softmax, ...) takes one: several given are
         * PyTorch's TypeError (functorch.dim passes them on as a tuple); None: all of them */
        if (!all && nidx != 1 && sig->params[dim - a].type == TT_INT)
            return err_raise(I, TDL_ERR_TYPE, "%s() takes one dim, got %d", sig->row->name, nidx);
    }
    FcLevels res = {0, {0}};
    int nl = t->ndim;
    for (int k = 0; k < nl; k++)
        if (!drop[k]) res.at[res.n++] = k < lv.n ? lv.at[k] : NULL;
    if (!dim) {     /* max(), min(): the row takes no dim, so the positional levels go this way */
        uint64_t mask = 0;
        for (int k = 0; k < nidx; k++) mask |= UINT64_C(1) << idx[k];
        FcTensor *r = NULL;
        return tensor_check(I, fc_max_all(I->fc, t, mask, sig->row->op == FC_OP_AMIN, &r, &e), &e) &&
               tensor_value_steal(I, r, out) && relabel(I, out, &res, -1);
    }
    return tensor_run_row(I, sig, a, out) && relabel(I, out, &res, -1);
}

static bool try_contract(Interp *I, TensorArg *self, const FcDimRef *refs, int nref, Value *out, bool *done)
{
    *done = false;
    if (self->v.tag != V_TENSOR) return true;
    TensorObj *o = (TensorObj *)self->v.o;
    if (!o->fa || !o->fb) return true;
    for (int k = 0; k < nref; k++)
        if (!refs[k].dim || fc_level_of_dim(self->t, refs[k].dim) < 0) return true;
    FcTensor *r = NULL;
    FcError e;
    FcLevels lv;
    FcDim *sum[FC_MAX_DIMS];
    for (int k = 0; k < nref; k++) sum[k] = refs[k].dim;
    if (!tensor_check(I, fc_contract(I->fc, o->fa, o->fb, nref, sum, &r, &lv, &e), &e)) return false;
    *done = true;
    return steal_with_levels(I, r, &lv, out);
}

/* The int arguments of a batched row that name dims of self, or its sizes. */
static bool is_dim_param(const char *name)
{
    return strcmp(name, "dim") == 0 || strcmp(name, "dim0") == 0 || strcmp(name, "dim1") == 0 ||
           strcmp(name, "start_dim") == 0 || strcmp(name, "end_dim") == 0;
}

/* matmul of x and y under one vmap level (dim d), as functorch's batch rules
 * (BatchRulesLinearAlgebra.cpp) run it, for a vector or matrix by a vector or matrix: at::matmul of
 * the operands with d first (bx, by: fc_batch_tensor's), an operand without d as it is (orig) and
 * not expanded, so that a bfloat16 product rounds as torch's kernel for those operands does.
 * dot_batch_rule: both batched, a row by a column per item; one, matmul(A_, B_.t()).
 * tv_batch_rule (matrix @ vector): both, the vector a column per item; the matrix alone,
 * matmul(A_, v); the vector alone, mm(A, v moved to (k, d)), whose result has d after its row
 * dim. A vector first is a row (matmul's unsqueeze(0), mm_batch_rule). Other ranks: *done false. */
static bool matmul_one_level(Interp *I, FcTensor *const *orig, FcTensor *bx, FcTensor *by, FcDim *d, bool *done,
                             Value *out)
{
    bool hx = fc_level_of_dim(orig[0], d) >= 0, hy = fc_level_of_dim(orig[1], d) >= 0;
    FcTensor *x = hx ? bx : orig[0], *y = hy ? by : orig[1], *xm = NULL, *ym = NULL, *r = NULL, *s = NULL;
    int nx = x->ndim - hx, ny = y->ndim - hy;
    if (nx < 1 || ny < 1 || nx > 2 || ny > 2) return true;
    *done = true;
    FcError e;
    FcStatus st = FC_OK;
    uint64_t squeeze = 0;
    bool after = false;
    int64_t tr[2] = {1, 0};
    if (ny == 1 && hx && hy) {
        /* a row (dot) or the matrix by a column per item */
        if (nx == 1) st = fc_unsqueeze(I->fc, x, 1, &xm, &e);
        else xm = fc_tensor_retain(x);
        if (!st) st = fc_unsqueeze(I->fc, y, 2, &ym, &e);
        squeeze = nx == 1 ? UINT64_C(6) : UINT64_C(4);
    } else if (ny == 1 && hy) {
        /* y^T: (k, d); a matrix x keeps its row dim before d */
        xm = fc_tensor_retain(x);
        st = fc_permute(I->fc, y, 2, tr, &ym, &e);
        after = nx == 2;
    } else if (ny == 1) {
        xm = fc_tensor_retain(x);
        ym = fc_tensor_retain(y);
    } else {
        /* a vector x is a row: (d, 1, k) or (1, k) */
        if (nx == 1) st = fc_unsqueeze(I->fc, x, hx, &xm, &e);
        else xm = fc_tensor_retain(x);
        ym = fc_tensor_retain(y);
        if (nx == 1) squeeze = (hx || hy) ? UINT64_C(2) : UINT64_C(1);
    }
    if (!st) st = fc_matmul(I->fc, xm, ym, &r, &e);
    if (!st && squeeze) {
        st = fc_squeeze(I->fc, r, squeeze, &s, &e);
        fc_tensor_release(r);
        r = s;
    }
    fc_tensor_release(xm);
    fc_tensor_release(ym);
    if (!tensor_check(I, st, &e)) {
        fc_tensor_release(r);
        return false;
    }
    FcLevels lv = {.n = r->ndim};
    for (int k = 0; k < r->ndim; k++) lv.at[k] = NULL;
    if (hx || hy) lv.at[after ? r->ndim - 1 : 0] = d;
    return tensor_value_steal(I, r, out) && relabel(I, out, &lv, -1);
}

static bool run_batch(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    const char *name = sig->row->name;
    FcTensor *ts[TENSOR_MAX_PARAMS * 4];
    int n = 0;
    for (int k = 0; k < sig->nparams; k++) {
        if (a[k].fdim) return refuse(I, sig);
        if (a[k].t && !a[k].t->wrapped_number && n < (int)(sizeof ts / sizeof *ts)) ts[n++] = a[k].t;
        for (int j = 0; a[k].ts && j < a[k].n && n < (int)(sizeof ts / sizeof *ts); j++) ts[n++] = a[k].ts[j];
    }
    FcLevels b;
    int nb;
    FcError e;
    if (!tensor_check(I, fc_levels_batch(n, ts, &b, &nb, &e), &e)) return false;
    FcTensor *first = a[0].t ? a[0].t : a[0].ts ? a[0].ts[0] : NULL;
    int npos = first ? fc_tensor_npos(first) : 0;
    /* matmul keeps its operands as they were for matmul_one_level (one dim); with more, matrix @
     * vector with only the vector batched at the outermost level (the dim made last) puts that
     * level after the result's positional dim (tv_batch_rule, as matmul_one_level says) */
    FcTensor *orig[2] = {NULL, NULL};
    bool mv_last = false;
    if (strcmp(name, "matmul") == 0 && nb > 0 && a[0].t && a[1].t) {
        mv_last = fc_tensor_npos(a[0].t) == 2 && fc_tensor_npos(a[1].t) == 1 &&
                  fc_level_of_dim(a[0].t, b.at[nb - 1]) < 0 && fc_level_of_dim(a[1].t, b.at[nb - 1]) >= 0;
        if (nb == 1) {
            orig[0] = fc_tensor_retain(a[0].t);
            orig[1] = fc_tensor_retain(a[1].t);
        }
    }
    /* self's positional rank decides negative dims, as the row would without dims */
    for (int k = 0; k < sig->nparams; k++) {
        const TensorParam *p = &sig->params[k];
        if (a[k].none) continue;
        if (a[k].t && !a[k].t->wrapped_number) {
            FcTensor *m;
            if (!tensor_check(I, fc_batch_tensor(I->fc, a[k].t, &b, &m, &e), &e)) {
                fc_tensor_release(orig[0]);
                fc_tensor_release(orig[1]);
                return false;
            }
            fc_tensor_release(a[k].t);
            a[k].t = m;
        }
        for (int j = 0; a[k].ts && j < a[k].n; j++) {
            FcTensor *m;
            if (!tensor_check(I, fc_batch_tensor(I->fc, a[k].ts[j], &b, &m, &e), &e)) return false;
            fc_tensor_release(a[k].ts[j]);
            a[k].ts[j] = m;
        }
        if (p->type == TT_INT && is_dim_param(p->name)) {
            /* unsqueeze's dim counts one more dim; the others count self's */
            int rank = npos + (strcmp(name, "unsqueeze") == 0 || strcmp(name, "stack") == 0);
            int64_t d = a[k].i;
            if (d < 0) d += rank;
            if (d >= 0) d += nb;
            a[k].i = a[k].ints[0] = d;
        } else if (p->type == TT_INTLIST && strcmp(p->name, "dims") == 0) {      /* permute */
            if (a[k].n + nb > FC_MAX_DIMS) return err_raise(I, TDL_ERR_VALUE, "too many dims");
            for (int j = a[k].n - 1; j >= 0; j--) {
                int64_t d = a[k].ints[j];
                a[k].ints[j + nb] = d < 0 ? d + npos + nb : d + nb;
            }
            for (int j = 0; j < nb; j++) a[k].ints[j] = j;
            a[k].n += nb;
        } else if (p->type == TT_INTLIST && (strcmp(p->name, "size") == 0 || strcmp(p->name, "shape") == 0)) {
            if (a[k].n + nb > FC_MAX_DIMS) return err_raise(I, TDL_ERR_VALUE, "too many dims");
            memmove(a[k].ints + nb, a[k].ints, (size_t)a[k].n * sizeof *a[k].ints);
            for (int j = 0; j < nb; j++) a[k].ints[j] = b.at[j]->size;
            a[k].n += nb;
        }
    }
    if (strcmp(name, "t") == 0 || strcmp(name, "T") == 0) {
        /* transpose / reverse the positional dims only */
        FcTensor *x = a[0].t, *r;
        int64_t perm[FC_MAX_DIMS];
        for (int j = 0; j < x->ndim; j++) perm[j] = j < nb ? j : x->ndim - 1 - (j - nb);
        if (strcmp(name, "t") == 0 && npos > 2)
            return err_raise(I, TDL_ERR_RUNTIME, "t() expects a tensor with <= 2 dimensions, but self is %dD", npos);
        if (!tensor_check(I, fc_permute(I->fc, x, x->ndim, perm, &r, &e), &e)) return false;
        return tensor_value_steal(I, r, out) && relabel(I, out, &b, nb);
    }
    if (strcmp(name, "squeeze") == 0 && a[1].none) {
        FcTensor *x = a[0].t, *r;
        uint64_t mask = 0;
        for (int j = nb; j < x->ndim; j++)
            if (x->shape[j] == 1) mask |= UINT64_C(1) << j;
        if (!mask) return relabel(I, (tensor_value_steal(I, fc_tensor_retain(x), out), out), &b, nb);
        if (!tensor_check(I, fc_squeeze(I->fc, x, mask, &r, &e), &e)) return false;
        return tensor_value_steal(I, r, out) && relabel(I, out, &b, nb);
    }
    if (orig[0]) {
        bool done = false, ok = matmul_one_level(I, orig, a[0].t, a[1].t, b.at[0], &done, out);
        fc_tensor_release(orig[0]);
        fc_tensor_release(orig[1]);
        if (!ok || done) return ok;
    }
    if (mv_last) {
        /* the batched product below, its last batch dim moved after the row dim */
        FcTensor *ym = NULL, *r = NULL, *q = NULL, *p = NULL;
        FcLevels lv = b;
        int64_t perm[FC_MAX_DIMS];
        FcStatus st = fc_unsqueeze(I->fc, a[1].t, a[1].t->ndim, &ym, &e);
        if (!st) st = fc_matmul(I->fc, a[0].t, ym, &r, &e);
        if (!st) st = fc_squeeze(I->fc, r, UINT64_C(1) << (r->ndim - 1), &q, &e);
        for (int k = 0; k < nb + 1; k++) perm[k] = k < nb - 1 ? k : k == nb - 1 ? nb : nb - 1;
        if (!st) st = fc_permute(I->fc, q, nb + 1, perm, &p, &e);
        fc_tensor_release(ym);
        fc_tensor_release(r);
        fc_tensor_release(q);
        if (!tensor_check(I, st, &e)) return false;
        lv.n = nb + 1;
        lv.at[nb - 1] = NULL;
        lv.at[nb] = b.at[nb - 1];
        return tensor_value_steal(I, p, out) && relabel(I, out, &lv, -1);
    }
    if (strcmp(name, "matmul") == 0) {
        /* a vector operand per batch item stays a vector: unsqueeze it, squeeze the result */
        FcTensor *x = a[0].t, *y = a[1].t, *xm = NULL, *ym = NULL, *r = NULL, *s = NULL;
        int nx = x->ndim - nb, ny = y->ndim - nb;
        if (nx == 0 || ny == 0)
            return err_raise(I, TDL_ERR_RUNTIME, "both arguments to matmul need to be at least 1D, but they are %dD and %dD",
                             nx, ny);
        FcStatus st = nx == 1 ? fc_unsqueeze(I->fc, x, x->ndim - 1, &xm, &e) : (xm = fc_tensor_retain(x), FC_OK);
        if (!st) st = ny == 1 ? fc_unsqueeze(I->fc, y, y->ndim, &ym, &e) : (ym = fc_tensor_retain(y), FC_OK);
        /* the operand with fewer positional dims gets ones after the batch dims, so that the
         * positional batch dims broadcast against each other, not against the batch levels */
        while (!st && xm->ndim != ym->ndim) {
            FcTensor **lo = xm->ndim < ym->ndim ? &xm : &ym, *u;
            st = fc_unsqueeze(I->fc, *lo, nb, &u, &e);
            if (!st) {
                fc_tensor_release(*lo);
                *lo = u;
            }
        }
        if (!st) st = fc_matmul(I->fc, xm, ym, &r, &e);
        if (!st && nx == 1) st = fc_squeeze(I->fc, r, UINT64_C(1) << (r->ndim - 2), &s, &e);
        if (!st && nx == 1) {
            fc_tensor_release(r);
            r = s;
            s = NULL;
        }
        if (!st && ny == 1) st = fc_squeeze(I->fc, r, UINT64_C(1) << (r->ndim - 1), &s, &e);
        if (!st && ny == 1) {
            fc_tensor_release(r);
            r = s;
        }
        fc_tensor_release(xm);
        fc_tensor_release(ym);
        if (!tensor_check(I, st, &e)) {
            fc_tensor_release(r);
            return false;
        }
        return tensor_value_steal(I, r, out) && relabel(I, out, &b, nb);
    }
    return tensor_run_row(I, sig, a, out) && relabel(I, out, &b, nb);
}

/* shape, size(), dim(), numel(), stride(): the positional dims only. */
static bool run_info(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t;
    const char *name = sig->row->name;
    if (strcmp(name, "dtype") == 0 || strcmp(name, "device") == 0) return tensor_run_row(I, sig, a, out);
    int npos = fc_tensor_npos(t);
    FcError e;
    if (strcmp(name, "dim") == 0 || strcmp(name, "ndim") == 0) {
        *out = v_int(npos);
        return true;
    }
    if (strcmp(name, "numel") == 0) {
        int64_t sizes[FC_MAX_DIMS], n;
        for (int p = 0; p < npos; p++) sizes[p] = t->shape[fc_level_of_pos(t, p)];
        /* zeros(0, 2**62, 4)[i]: the positional (2**62, 4) hold 2**64 elements */
        if (!fc_shape_numel(npos, sizes, &n))
            return err_raise(I, TDL_ERR_RUNTIME, "numel: integer multiplication overflow");
        *out = v_int(n);
        return true;
    }
    bool stride = strcmp(name, "stride") == 0;
    if (stride && !tensor_check(I, fc_realize(I->fc, t, &e), &e)) return false;
    const int64_t *v = stride ? t->strides : t->shape;
    TensorArg *dim = tensor_arg(sig, a, "dim");
    if (dim && !dim->none) {
        int p;
        if (!tensor_check(I, fc_wrap_dim(dim->i, npos, &p, &e), &e)) return false;
        *out = v_int(v[fc_level_of_pos(t, p)]);
        return true;
    }
    if (strcmp(name, "is_contiguous") == 0) return refuse(I, sig);
    TupleObj *tu = tuple_alloc(I, (size_t)npos);
    if (!tu) return false;
    for (int p = 0; p < npos; p++) tu->items[p] = v_int(v[fc_level_of_pos(t, p)]);
    *out = v_obj(V_TUPLE, &tu->h);
    return true;
}

/* The size of t's positional dim q counted from the right (0: the last), or 1 when it has none. */
static int64_t pos_from_right(const FcTensor *t, int q)
{
    int np = fc_tensor_npos(t);
    return q < np ? t->shape[fc_level_of_pos(t, np - 1 - q)] : 1;
}

/* PyTorch's "output with shape [...] doesn't match the broadcast shape [...]" for an in-place
 * method whose operands have dims (levels u all together) that self lacks: the output is self's
 * shape, over u when self is batched (as functorch's vmap sees it). */
static bool inplace_shape_error(Interp *I, const FcTensor *self, FcTensor *const *ts, int n, const FcLevels *u)
{
    Buf o = {0}, b = {0};
    int npos = 0;
    for (int k = 0; k < u->n; k++) npos += u->at[k] == NULL;
    if (!self->levels)
        for (int k = 0; k < self->ndim; k++) buf_printf(&o, "%s%lld", k ? ", " : "", (long long)self->shape[k]);
    /* the dims first (vmap's batch dims), then the positional ones */
    int order[FC_MAX_DIMS], no = 0;
    for (int k = 0; k < u->n; k++)
        if (u->at[k]) order[no++] = k;
    for (int k = 0; k < u->n; k++)
        if (!u->at[k]) order[no++] = k;
    for (int i = 0, q = npos; i < u->n; i++) {
        int k = order[i];
        int64_t bs, os;
        if (u->at[k]) {
            bs = u->at[k]->size;
            os = fc_level_of_dim(self, u->at[k]) >= 0 ? bs : 1;
        } else {
            q--;
            os = pos_from_right(self, q);
            bs = 1;
            for (int j = 0; j < n; j++)
                if (pos_from_right(ts[j], q) != 1) bs = pos_from_right(ts[j], q);
        }
        if (self->levels) buf_printf(&o, "%s%lld", i ? ", " : "", (long long)os);
        buf_printf(&b, "%s%lld", i ? ", " : "", (long long)bs);
    }
    if (o.nomem || b.nomem) err_nomem(I);
    else err_raise(I, TDL_ERR_RUNTIME, "output with shape [%s] doesn't match the broadcast shape [%s]",
                   o.p ? o.p : "", b.p ? b.p : "");
    buf_free(&o);
    buf_free(&b);
    return false;
}

/* t.NAME_(...), the in-place methods, with dims (functorch.dim's): the operands laid out over
 * self's levels, the method writes into self's memory (a lazy self is computed first, and written);
 * self comes back. An operand with a dim self lacks is PyTorch's shape error. */
static bool run_inplace(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *self = a[0].t, *ts[TENSOR_MAX_PARAMS];
    int n = 0;
    for (int k = 0; k < sig->nparams; k++)
        if (is_tensor_param(&sig->params[k]) && a[k].t && !a[k].t->wrapped_number) ts[n++] = a[k].t;
    FcLevels lv, u;
    FcError e;
    fc_tensor_levels(self, &lv);
    if (!tensor_check(I, fc_levels_union(n, ts, &u, &e), &e)) return false;
    if (u.n != lv.n) return inplace_shape_error(I, self, ts, n, &u);
    /* a relabel of a lazy tensor is its view: computing that tensor makes self a view of it */
    if (!tensor_check(I, fc_realize_target(I->fc, self, &e), &e)) return false;
    for (int k = 1; k < sig->nparams; k++) {
        if (!is_tensor_param(&sig->params[k]) || !a[k].t || a[k].t->wrapped_number || !a[k].t->levels) continue;
        FcTensor *m;
        if (!tensor_check(I, fc_match_levels(I->fc, a[k].t, &lv, &m, &e), &e)) return false;
        fc_tensor_release(a[k].t);
        a[k].t = m;
    }
    /* self as a positional view of its memory, its dims as leading positional dims */
    FcLevels none = {lv.n, {0}};
    FcTensor *plain;
    if (!tensor_check(I, fc_with_levels(I->fc, self, &none, &plain, &e), &e)) return false;
    a[0].t = plain;
    Value r;
    bool ok = tensor_run_row(I, sig, a, &r);
    a[0].t = self;
    fc_tensor_release(plain);
    if (!ok) return false;
    val_decref(I, r);
    if (a[0].v.tag == V_TENSOR && as_tensor(a[0].v) == self) {
        val_incref(a[0].v);
        *out = a[0].v;
        return true;
    }
    return tensor_value_steal(I, fc_tensor_retain(self), out);
}

void dims_forget_product(Value v)
{
    if (v.tag != V_TENSOR) return;
    TensorObj *o = (TensorObj *)v.o;
    fc_tensor_release(o->fa);
    fc_tensor_release(o->fb);
    o->fa = o->fb = NULL;
}

bool dims_run(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    const char *name = sig->row->name;
    for (int k = 0; k < sig->nparams; k++)
        if (is_tensor_param(&sig->params[k]) && !(k == 0 && strcmp(name, "sum") == 0)) dims_forget_product(a[k].v);
    if (strcmp(name, "mul") == 0 && a[0].t && a[1].t && a[0].t->levels && a[1].t->levels &&
        fc_tensor_npos(a[0].t) == 0 && fc_tensor_npos(a[1].t) == 0 && fc_dtype_is_float(a[0].t->dtype) &&
        fc_dtype_is_float(a[1].t->dtype))
        return run_pointwise(I, sig, a, false, out);        /* functorch's delayed multiply */
    switch (row_kind(sig->row)) {
    case RK_POINTWISE: return run_pointwise(I, sig, a, false, out);
    case RK_DIMS_FIRST: return run_pointwise(I, sig, a, true, out);
    case RK_SELF: return run_self(I, sig, a, out);
    case RK_DIMOP: return run_dimop(I, sig, a, out);
    case RK_BATCH: return run_batch(I, sig, a, out);
    case RK_INFO: return run_info(I, sig, a, out);
    case RK_OWN: return tensor_run_row(I, sig, a, out);
    case RK_INPLACE: return run_inplace(I, sig, a, out);
    default: return refuse(I, sig);
    }
}

/* ---- indexing with dims ---- */

/* Is v, used as an index, about dims (functorch's getitem takes over)? */
static bool index_has_dims(Value v)
{
    if (v.tag == V_DIM || v.tag == V_DIMLIST) return true;
    if (v.tag == V_TENSOR) return as_tensor(v)->levels != NULL;
    if (v.tag == V_TUPLE || v.tag == V_LIST) {
        size_t n = v.tag == V_TUPLE ? as_tuple(v)->n : as_list(v)->n;
        const Value *items = v.tag == V_TUPLE ? as_tuple(v)->items : as_list(v)->items;
        for (size_t k = 0; k < n; k++)
            if (items[k].tag == V_DIM || items[k].tag == V_DIMLIST ||
                (items[k].tag == V_TENSOR && as_tensor(items[k])->levels) ||
                ((items[k].tag == V_TUPLE || items[k].tag == V_LIST) && index_has_dims(items[k])))
                return true;
    }
    return false;
}

typedef struct DimIndex {
    int n;
    FcIndex ix[FC_MAX_DIMS * 2];
    FcTensor *owned[FC_MAX_DIMS * 2];
    FcDim **packs[FC_MAX_DIMS * 2];     /* a pack's dims (allocated: few indices have packs) */
} DimIndex;

static void dimindex_free(DimIndex *x)
{
    for (int k = 0; k < x->n; k++) {
        fc_tensor_release(x->owned[k]);
        mem_free(x->packs[k]);
    }
}

/* A dim pack: a tuple or list whose first item is a dim. */
static bool is_pack(Value v)
{
    if (v.tag != V_TUPLE && v.tag != V_LIST) return false;
    size_t n = v.tag == V_TUPLE ? as_tuple(v)->n : as_list(v)->n;
    const Value *items = v.tag == V_TUPLE ? as_tuple(v)->items : as_list(v)->items;
    return n > 0 && items[0].tag == V_DIM;
}

static bool dimindex_add(Interp *I, DimIndex *x, Value v)
{
    if (x->n == FC_MAX_DIMS * 2) return err_raise(I, TDL_ERR_INDEX, "too many indices");
    int k = x->n;
    FcIndex *f = &x->ix[k];
    memset(f, 0, sizeof *f);
    x->owned[k] = NULL;
    x->packs[k] = NULL;
    if (v.tag == V_DIM) {
        f->kind = FC_IX_DIM;
        f->dim = as_dim(v);
    } else if (is_pack(v)) {
        size_t n = v.tag == V_TUPLE ? as_tuple(v)->n : as_list(v)->n;
        const Value *items = v.tag == V_TUPLE ? as_tuple(v)->items : as_list(v)->items;
        if (n > FC_MAX_DIMS) return err_raise(I, TDL_ERR_INDEX, "a dim pack of more than %d dims", FC_MAX_DIMS);
        for (size_t j = 0; j < n; j++)
            if (items[j].tag != V_DIM)
                return err_raise(I, TDL_ERR_TYPE, "a dim pack holds dims only, found %s", val_type_name(items[j]));
        if (!(x->packs[k] = mem_malloc(n * sizeof *x->packs[k]))) return err_nomem(I);
        for (size_t j = 0; j < n; j++) x->packs[k][j] = as_dim(items[j]);
        f->kind = FC_IX_DIMPACK;
        f->pack = x->packs[k];
        f->npack = (int)n;
    } else if (!tensor_index_item(I, v, f, &x->owned[k])) {
        return false;
    }
    x->n++;
    return true;
}

/* The index items of t[idx] with dim lists expanded (an unbound one takes the dims left). */
static bool dimindex_of(Interp *I, const FcTensor *t, Value idx, DimIndex *x)
{
    x->n = 0;
    const Value *items = &idx;
    size_t n = 1;
    if (idx.tag == V_TUPLE || (idx.tag == V_LIST && !is_pack(idx))) {
        items = idx.tag == V_TUPLE ? as_tuple(idx)->items : as_list(idx)->items;
        n = idx.tag == V_TUPLE ? as_tuple(idx)->n : as_list(idx)->n;
    }
    int indexed = 0;
    DimListObj *unbound = NULL;
    for (size_t k = 0; k < n; k++) {
        Value v = items[k];
        if (v.tag == V_DIMLIST) {
            DimListObj *l = as_dimlist(v);
            if (!l->bound) {
                if (unbound)
                    return err_raise(I, TDL_ERR_DIMENSION_BIND, "at most one ... or unbound dim list can be in an index");
                unbound = l;
            } else {
                indexed += l->n;
            }
        } else if (v.tag != V_NONE && v.tag != V_ELLIPSIS) {
            indexed++;
        }
    }
    if (unbound) {
        int npos = fc_tensor_npos(t);
        for (size_t k = 0; k < n; k++)
            if (items[k].tag == V_ELLIPSIS)
                return err_raise(I, TDL_ERR_DIMENSION_BIND, "at most one ... or unbound dim list can be in an index");
        if (indexed > npos)
            return err_raise(I, TDL_ERR_VALUE, "at least %d indices were supplied but the tensor only has %d dimensions",
                             indexed, npos);
        if (!dimlist_bind_len(I, unbound, npos - indexed)) return false;
    }
    for (size_t k = 0; k < n; k++) {
        Value v = items[k];
        if (v.tag == V_DIMLIST) {
            DimListObj *l = as_dimlist(v);
            for (int j = 0; j < l->n; j++) {
                Value d;
                if (!dim_value_steal(I, fc_dim_retain(l->dims[j]), &d)) return false;
                bool ok = dimindex_add(I, x, d);
                val_decref(I, d);
                if (!ok) return false;
            }
        } else if (!dimindex_add(I, x, v)) {
            return false;
        }
    }
    return true;
}

bool dims_getitem(Interp *I, Value v, Value idx, Value *out, bool *done)
{
    FcTensor *t = as_tensor(v);
    *done = t->levels || index_has_dims(idx);
    if (!*done) return true;
    dims_forget_product(v);
    DimIndex x;
    bool ok = dimindex_of(I, t, idx, &x);
    FcTensor *r = NULL;
    FcError e;
    if (ok) ok = tensor_check(I, fc_index_dims(I->fc, t, x.n, x.ix, 0, NULL, &r, &e), &e);
    dimindex_free(&x);
    return ok && tensor_value_steal(I, r, out);
}

/* t[idx] = value with dims (functorch's setitem): t[idx] is read as a view of t's memory (dims
 * bind its positional dims; ints and slices as usual), and value, laid out over that view's
 * levels by matching dims (broadcast over the ones it lacks), is written into it. An index that
 * gathers (a tensor index, a dim used twice) has no view to write through: a TypeError. */
bool dims_setitem(Interp *I, Value v, Value idx, FcTensor *val)
{
    FcTensor *t = as_tensor(v), *view = NULL, *m = NULL, *plain = NULL;
    FcError e;
    Value r = v_undef();
    if (!tensor_check(I, fc_realize_target(I->fc, t, &e), &e)) return false;
    bool ok = tensor_getitem(I, v, idx, &r);
    if (ok) {
        view = as_tensor(r);
        if (!view->storage || view->storage != t->storage)
            ok = err_raise(I, TDL_ERR_TYPE, "this index with first-class dims is not a view of the tensor (it gathers), "
                                            "so it cannot be written through: index with dims, ints and slices");
    }
    FcLevels lv, u;
    if (ok) {
        fc_tensor_levels(view, &lv);
        FcTensor *both[2] = {view, val};
        ok = tensor_check(I, fc_levels_union(2, both, &u, &e), &e);
    }
    if (ok && u.n != lv.n) {
        char b[512];
        const char *name = "?";
        for (int k = 0; k < u.n; k++)
            if (u.at[k] && fc_level_of_dim(view, u.at[k]) < 0) {
                name = u.at[k]->name;
                break;
            }
        ok = err_raise(I, TDL_ERR_DIMENSION_BIND,
                       "rhs of setitem contains dimension %s which is not in the dimension on the left (%s)", name,
                       fc_levels_str(b, sizeof b, &lv));
    }
    FcLevels none = {view ? view->ndim : 0, {0}};
    if (ok) ok = tensor_check(I, fc_match_levels(I->fc, val, &lv, &m, &e), &e);
    if (ok) ok = tensor_check(I, fc_with_levels(I->fc, view, &none, &plain, &e), &e);
    if (ok) ok = tensor_check(I, fc_assign(I->fc, plain, m, &e), &e);
    fc_tensor_release(m);
    fc_tensor_release(plain);
    val_decref(I, r);
    return ok;
}

/* split(sizes, dim) with dims (functorch.dim's): dim a dim or a positional int; sizes dims, each
 * piece taking its dim in place of the one split (bound dims keep their size, unbound ones share
 * what is left, rounded up). Int sizes with a dim `dim` are functorch's TypeError. */
bool impl_split_dims(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t;
    Value sv = tensor_arg(sig, a, "split_size")->v, dv = tensor_arg(sig, a, "dim")->v;
    const Value *items = NULL;
    size_t n = 0;
    bool dimseq = sv.tag == V_TUPLE || sv.tag == V_LIST;
    if (dimseq) {
        items = sv.tag == V_TUPLE ? as_tuple(sv)->items : as_list(sv)->items;
        n = sv.tag == V_TUPLE ? as_tuple(sv)->n : as_list(sv)->n;
        for (size_t k = 0; k < n; k++) dimseq &= items[k].tag == V_DIM;
    }
    if (!dimseq) {
        if (dv.tag == V_DIM)
            return err_raise(I, TDL_ERR_TYPE, "when dim is specified as a Dim object, split sizes must also be dimensions.");
        return err_raise(I, TDL_ERR_TYPE, "split(): split_size must be an int, a list of ints or a list of dims, not %s",
                         val_type_name(sv));
    }
    int l;
    FcError e;
    if (dv.tag == V_DIM) {
        if ((l = fc_level_of_dim(t, as_dim(dv))) < 0)
            return err_raise(I, TDL_ERR_TYPE, "tensor does not contain dimension %s", as_dim(dv)->name);
    } else if (is_intlike(dv) || dv.tag == V_UNDEF) {
        int p;
        if (!tensor_check(I, fc_wrap_dim(dv.tag == V_UNDEF ? 0 : as_i(dv), fc_tensor_npos(t), &p, &e), &e)) return false;
        l = fc_level_of_pos(t, p);
    } else {
        return err_raise(I, TDL_ERR_TYPE, "split(): dim must be a dim or an int, not %s", val_type_name(dv));
    }
    if (n > FC_MAX_DIMS) return err_raise(I, TDL_ERR_VALUE, "too many dims");
    int64_t size = t->shape[l], bound = 0, sizes[FC_MAX_DIMS];
    int nunbound = 0;
    for (size_t k = 0; k < n; k++) {
        FcDim *d = as_dim(items[k]);
        if (d->size >= 0) bound += d->size;
        else nunbound++;
    }
    if (nunbound ? bound > size : bound != size)
        return err_raise(I, TDL_ERR_VALUE, "result dimensions %s original: %lld vs %lld",
                         nunbound ? "are larger than" : "do not match", (long long)bound, (long long)size);
    int64_t rest = size - bound, chunk = nunbound ? (rest + nunbound - 1) / nunbound : 0;
    for (size_t k = 0; k < n; k++) {
        FcDim *d = as_dim(items[k]);
        if (d->size < 0) {
            int64_t sz = chunk < rest ? chunk : rest;
            if (!tensor_check(I, fc_dim_bind(I->fc, d, sz, "splitting a dim", &e), &e)) return false;
            rest -= sz;
        }
        sizes[k] = d->size;
    }
    TupleObj *tu = tuple_alloc(I, n);
    if (!tu) return false;
    FcLevels lv;
    fc_tensor_levels(t, &lv);
    bool ok = true;
    int64_t at = 0;
    for (size_t k = 0; k < n && ok; k++) {
        FcIndex ix[FC_MAX_DIMS];
        FcTensor *plain = NULL, *piece = NULL, *r = NULL;
        FcLevels none = {t->ndim, {0}}, pl = lv;
        for (int q = 0; q < l; q++) ix[q] = (FcIndex){.kind = FC_IX_SLICE, .step = 1};
        ix[l] = (FcIndex){.kind = FC_IX_SLICE, .start = at, .stop = at + sizes[k], .has_start = true, .has_stop = true,
                          .step = 1};
        at += sizes[k];
        pl.at[l] = as_dim(items[k]);
        FcStatus st = fc_with_levels(I->fc, t, &none, &plain, &e);
        if (st == FC_OK) st = fc_index(I->fc, plain, l + 1, ix, &piece, &e);
        if (st == FC_OK) st = fc_with_levels(I->fc, piece, &pl, &r, &e);
        fc_tensor_release(plain);
        fc_tensor_release(piece);
        ok = tensor_check(I, st, &e) && tensor_value_steal(I, r, &tu->items[k]);
    }
    if (!ok) {
        val_decref(I, v_obj(V_TUPLE, &tu->h));
        return false;
    }
    *out = v_obj(V_TUPLE, &tu->h);
    return true;
}

/* ---- methods and attributes that dims add ---- */

#define METHOD_ARGS Interp *I, Value self, const Value *args, int nargs, const char *const *kwnames, int nkw, Value *out

/* t.order(d, ...): each argument a dim, an int, a bound dim list, or a sequence of dims (flattened). */
static bool m_order(METHOD_ARGS)
{
    (void)kwnames;
    if (nkw) return err_raise(I, TDL_ERR_TYPE, "order() takes no keyword arguments");
    FcTensor *t;
    if (!dims_tensor_of(I, self, &t)) return false;
    FcDimRef refs[FC_MAX_DIMS];
    int group[FC_MAX_DIMS], nref = 0, ng = 0;
    bool ok = true;
    for (int k = 0; k < nargs && ok; k++) {
        FcDimRef r[FC_MAX_DIMS];
        int n;
        Value a = args[k];
        bool seq = a.tag == V_TUPLE || a.tag == V_LIST;
        if (!(ok = dim_refs(I, a, r, &n))) break;
        if (nref + n > FC_MAX_DIMS) {
            ok = err_raise(I, TDL_ERR_VALUE, "too many dims");
            break;
        }
        memcpy(refs + nref, r, (size_t)n * sizeof *r);
        nref += n;
        if (seq) {
            group[ng++] = n;
        } else {
            for (int j = 0; j < n; j++) group[ng++] = 1;
        }
    }
    FcTensor *r = NULL;
    FcError e;
    if (ok) ok = tensor_check(I, fc_order(I->fc, t, nref, refs, group, ng, &r, &e), &e);
    fc_tensor_release(t);
    return ok && tensor_value_steal(I, r, out);
}

/* t.expand(d, ...) with dims: new leading dims; with sizes: the positional expand. */
static bool m_expand(METHOD_ARGS)
{
    bool dims = nargs > 0 && nkw == 0;
    for (int k = 0; k < nargs && dims; k++) dims = args[k].tag == V_DIM;
    if (!dims) return tensor_dispatch(I, tensor_row("expand", TV_METHOD), self, args, nargs, kwnames, nkw, out);
    FcTensor *t, *r = NULL;
    FcDim *ds[FC_MAX_DIMS];
    if (nargs > FC_MAX_DIMS) return err_raise(I, TDL_ERR_VALUE, "too many dims");
    for (int k = 0; k < nargs; k++) ds[k] = as_dim(args[k]);
    if (!dims_tensor_of(I, self, &t)) return false;
    FcError e;
    bool ok = tensor_check(I, fc_expand_dims(I->fc, t, nargs, ds, &r, &e), &e);
    fc_tensor_release(t);
    return ok && tensor_value_steal(I, r, out);
}

/* t.index(dims, indices): index the named dims (dims or positional ints) of t, keep the rest. */
static bool m_index(METHOD_ARGS)
{
    (void)kwnames;
    if (nkw || nargs != 2) return err_raise(I, TDL_ERR_TYPE, "index() takes dims and indices");
    Value dv = args[0], iv = args[1];
    const Value *ds = &dv, *is = &iv;
    size_t nd = 1, ni = 1;
    bool dl = dv.tag == V_TUPLE || dv.tag == V_LIST, il = iv.tag == V_TUPLE || iv.tag == V_LIST;
    if (dl && il) {
        ds = dv.tag == V_TUPLE ? as_tuple(dv)->items : as_list(dv)->items;
        nd = dv.tag == V_TUPLE ? as_tuple(dv)->n : as_list(dv)->n;
        is = iv.tag == V_TUPLE ? as_tuple(iv)->items : as_list(iv)->items;
        ni = iv.tag == V_TUPLE ? as_tuple(iv)->n : as_list(iv)->n;
        if (nd != ni)
            return err_raise(I, TDL_ERR_TYPE, "dims (%zu) and indices (%zu) must have the same length", nd, ni);
    } else if (dl) {
        return err_raise(I, TDL_ERR_TYPE, "index(): a sequence of dims needs a sequence of indices");
    }
    if (nd > FC_MAX_DIMS) return err_raise(I, TDL_ERR_VALUE, "too many dims");
    FcTensor *t;
    if (!dims_tensor_of(I, self, &t)) return false;
    int keys[FC_MAX_DIMS];
    DimIndex *x = mem_malloc(sizeof *x);
    bool ok = x != NULL || err_nomem(I);
    if (x) x->n = 0;
    int npos = fc_tensor_npos(t);
    for (size_t k = 0; k < nd && ok; k++) {
        if (ds[k].tag == V_DIM) {
            keys[k] = fc_level_of_dim(t, as_dim(ds[k]));
            if (keys[k] < 0) ok = err_raise(I, TDL_ERR_TYPE, "dimension %s not in tensor", as_dim(ds[k])->name);
        } else if (is_intlike(ds[k])) {
            int64_t p = as_i(ds[k]);
            if (p < -npos || p >= npos)
                ok = err_raise(I, TDL_ERR_TYPE, "dimension %lld not in tensor of %d dimensions", (long long)p, npos);
            else keys[k] = fc_level_of_pos(t, (int)(p < 0 ? p + npos : p));
        } else {
            ok = err_raise(I, TDL_ERR_TYPE, "expected a dimension specifier but found %s", val_type_name(ds[k]));
        }
        if (ok) ok = dimindex_add(I, x, is[k]);
    }
    FcTensor *r = NULL;
    FcError e;
    if (ok) ok = tensor_check(I, fc_index_dims(I->fc, t, x->n, x->ix, (int)nd, keys, &r, &e), &e);
    if (x) dimindex_free(x);
    mem_free(x);
    fc_tensor_release(t);
    return ok && tensor_value_steal(I, r, out);
}

static const BuiltinDef dim_methods[] = {
    {"order", m_order, 0, -1, NULL},
    {"expand", m_expand, 0, -1, "implicit"},
    {"index", m_index, 2, 2, NULL},
};

const BuiltinDef *dims_method(const char *name)
{
    for (size_t k = 0; k < sizeof dim_methods / sizeof *dim_methods; k++)
        if (dim_methods[k].name[0] == name[0] && strcmp(dim_methods[k].name, name) == 0) return &dim_methods[k];
    return NULL;
}

bool dims_getattr(Interp *I, Value obj, const char *name, Value *out, bool *found)
{
    *found = false;
    if (obj.tag == V_DIMLIST) {
        if (strcmp(name, "is_bound") == 0) {
            *found = true;
            *out = v_bool(as_dimlist(obj)->bound);
        }
        return true;
    }
    if (obj.tag == V_DIM) {
        FcDim *d = as_dim(obj);
        if (strcmp(name, "size") == 0) {
            int64_t s;
            FcError e;
            *found = true;
            if (!tensor_check(I, fc_dim_size(d, &s, &e), &e)) return false;
            *out = v_int(s);
            return true;
        }
        if (strcmp(name, "is_bound") == 0) {
            *found = true;
            *out = v_bool(d->size >= 0);
            return true;
        }
        if (strcmp(name, "ndim") == 0) {      /* functorch.dim: a dim is a 1-D tensor */
            *found = true;
            *out = v_int(1);
            return true;
        }
    }
    for (size_t k = 0; k < sizeof dim_methods / sizeof *dim_methods; k++)
        if (strcmp(dim_methods[k].name, name) == 0) {
            *found = true;
            return builtin_bind(I, &dim_methods[k], obj, out);
        }
    if (strcmp(name, "dims") == 0) {
        FcTensor *t;
        if (!dims_tensor_of(I, obj, &t)) return false;
        *found = true;
        int n = 0;
        for (int k = 0; t->levels && k < t->ndim; k++) n += t->levels[k] != NULL;
        TupleObj *tu = tuple_alloc(I, (size_t)n);
        bool ok = tu != NULL;
        for (int k = 0, j = 0; ok && t->levels && k < t->ndim; k++)
            if (t->levels[k]) ok = dim_value_steal(I, fc_dim_retain(t->levels[k]), &tu->items[j++]);
        fc_tensor_release(t);
        if (ok) *out = v_obj(V_TUPLE, &tu->h);
        else if (tu) val_decref(I, v_obj(V_TUPLE, &tu->h));
        return ok;
    }
    if (obj.tag == V_DIM) {
        /* anything else: the dim as a tensor */
        FcTensor *t;
        Value tv;
        if (!dims_tensor_of(I, obj, &t) || !tensor_value_steal(I, t, &tv)) return false;
        bool ok = val_getattr(I, tv, name, out);
        val_decref(I, tv);
        *found = true;
        return ok;
    }
    return true;
}

/* stack(tensors, new_dim, dim=None): functorch.dim's stack (dim: a dim or a positional int). */
bool impl_stack_dims(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    TensorArg *nd = tensor_arg(sig, a, "new_dim"), *dim = tensor_arg(sig, a, "dim");
    if (nd->v.tag != V_DIM)
        return err_raise(I, TDL_ERR_TYPE, "stack(): new_dim must be a dim, not %s", val_type_name(nd->v));
    FcDimRef ref;
    bool has = dim && !dim->none && dim->v.tag != V_UNDEF;
    if (has && is_intlike(dim->v)) {
        /* functorch's rule: new_dim goes before positional dim d (d == npos: before the first
         * one; d < 0 counts from the end); with no positional dim, last (functorch hangs) */
        FcLevels u;
        FcError e;
        int npos = 0;
        int64_t d = as_i(dim->v);
        if (!tensor_check(I, fc_levels_union(a[0].n, a[0].ts, &u, &e), &e)) return false;
        for (int k = 0; k < u.n; k++) npos += !u.at[k];
        int64_t p = d < 0 ? d + npos : d == npos ? 0 : d;
        if (npos == 0 && (d == 0 || d == -1)) p = 0;
        else if (p < 0 || p >= npos)
            return err_raise(I, TDL_ERR_TYPE, "Dimension %lld does not exist in inputs", (long long)d);
        ref = (FcDimRef){NULL, p};
    } else if (has) {
        if (dim->v.tag == V_DIM) ref = (FcDimRef){as_dim(dim->v), 0};
        else return err_raise(I, TDL_ERR_TYPE, "stack(): dim must be a dim or an int, not %s", val_type_name(dim->v));
    }
    FcTensor *r = NULL;
    FcError e;
    return tensor_check(I, fc_stack_dims(I->fc, a[0].n, a[0].ts, as_dim(nd->v), has ? &ref : NULL, &r, &e), &e) &&
           tensor_value_steal(I, r, out);
}
