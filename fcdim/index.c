/* index.c — t[...] with PyTorch's semantics, reading and writing, and the gathers and scatters of
 * the same kind: index_select, gather, scatter_add, nonzero.
 *
 * An index is translated as PyTorch translates it (TensorIndexing.h applySlicing, then
 * TensorAdvancedIndexing.cpp make_info): ints, slices, None and ... build a view of t's storage
 * (a Plan's view); Python bools and tensors are recorded as advanced indices at the view dim
 * they stand for (bool masks become their nonzero() coordinates, one index per mask dim); the
 * index tensors broadcast together and their dims take the place of the indexed dims in the
 * result (or go first when the indexed dims are not adjacent). Quirks are PyTorch's: a mask
 * moves the position of the following indices by one dim, whatever its rank; every `...` skips
 * the dims the others do not name.
 *
 * A read is one lazy LOAD of the view whose operand for an indexed dim is that index tensor's
 * IR (so x[i] * 2 fuses into one kernel); a write is one kernel with a scattered store
 * (fc_store_scattered). A read with an advanced index (and index_select, gather) of a lazy
 * tensor whose node is a LOAD composes with that LOAD instead of realising it: x[i][j] is one
 * gather of x through i (see "composing"). A basic index of a lazy tensor still realises it: the
 * view must share its storage (fc_index_read is the composing read for callers that want values).
 * Index values are checked on the host before either is built, so an error names the line that
 * indexed; the executor checks them again (it never trusts a kernel).
 * Depends on fcdim.h and internal.h. */
#include "internal.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What an index expression selects: a view of src's storage, plus advanced indices. */
typedef struct Plan {
    FcTensor *src;                      /* the tensor indexed (a reference): realised, unless the
                                           read is composed into its lazy LOAD (compose) */
    int ndim;                           /* the view, after ints, slices, None and ... */
    int64_t shape[FC_MAX_DIMS], strides[FC_MAX_DIMS], offset;   /* strides, offset: src stored */
    /* The same view in terms of src's dims (what composing needs): view dim k walks dim vdim[k]
     * of src (-1: a dim that None or a bool inserted) from vstart[k] by vstep[k]; a dim j of src
     * that an int selected is fixed at fixed[j] (has_fixed[j]). */
    int vdim[FC_MAX_DIMS];
    int64_t vstart[FC_MAX_DIMS], vstep[FC_MAX_DIMS];
    bool has_fixed[FC_MAX_DIMS];
    int64_t fixed[FC_MAX_DIMS];
    bool compose;                       /* src is lazy: the read composes into its LOAD */
    FcTensor *idx[FC_MAX_DIMS];         /* per view dim: its int64/int32 index (a reference) or NULL */
    bool in_range[FC_MAX_DIMS];         /* idx[k] holds a mask's coordinates: no need to check them */
    int nidx;                           /* indices after masks are expanded: the view dims [0, nidx) */
    int nb;                             /* their broadcast shape */
    int64_t bshape[FC_MAX_DIMS];
    int bpos;                           /* the result level of the broadcast shape's first dim */
    int rdim;                           /* the result (or the written region) */
    int64_t rshape[FC_MAX_DIMS];
    int lev[FC_MAX_DIMS];               /* per view dim not indexed: its result level */
} Plan;

static void plan_free(Plan *p)
{
    fc_tensor_release(p->src);
    for (int k = 0; k < FC_MAX_DIMS; k++)
        fc_tensor_release(p->idx[k]);
}

/* uint8 indexes as a mask too (PyTorch 1.13 still takes it, with a deprecation warning). */
static bool is_mask(const FcTensor *t) { return t->dtype == FC_BOOL || t->dtype == FC_UINT8; }

static int64_t elem_int(const FcView *v, int64_t off)
{
    return v->dtype == FC_INT32 ? ((const int32_t *)v->data)[off] : ((const int64_t *)v->data)[off];
}

/* The first index of a dense run of n (int32 or int64) outside [lo, hi), or -1. */
static int64_t first_bad(const FcView *v, int64_t off, int64_t n, int64_t lo, int64_t hi)
{
    int bad = 0;
    if (v->dtype == FC_INT32) {
        const int32_t *p = (const int32_t *)v->data + off;
        for (int64_t i = 0; i < n; i++)
            bad |= p[i] < lo || p[i] >= hi;
    } else {
        const int64_t *p = (const int64_t *)v->data + off;
        for (int64_t i = 0; i < n; i++)
            bad |= p[i] < lo || p[i] >= hi;
    }
    for (int64_t i = 0; bad && i < n; i++)
        if (elem_int(v, off + i) < lo || elem_int(v, off + i) >= hi)
            return i;
    return -1;
}

static FcStatus out_of_bounds(FcError *err, FcStatus kind, int64_t i, int dim, int64_t size)
{
    return fc_errf(err, kind, "index %lld is out of bounds for dimension %d with size %lld", (long long)i, dim,
                   (long long)size);
}

/* Checks index tensors idx[0..n) walked together over the broadcast shape (nb, bshape) in C
 * order, as PyTorch's index kernel meets them: each value must lie in [0, extent[g]) or, with
 * wrap, [-extent[g], extent[g]). The first bad one is reported (kind, naming dim[g]). The
 * tensors are realised (and copied to the host when on a device). */
static FcStatus check_range(FcCtx *ctx, int n, FcTensor *const *idx, const int64_t *extent, const int *dim,
                            bool wrap, FcStatus kind, int nb, const int64_t *bshape, FcError *err)
{
    FcTensor *host[FC_MAX_DIMS] = {0};
    FcView v[FC_MAX_DIMS];
    int64_t str[FC_MAX_DIMS][FC_MAX_DIMS], off[FC_MAX_DIMS], pos[FC_MAX_DIMS] = {0};
    FcStatus st = FC_OK;
    int64_t numel;
    fc_shape_numel(nb, bshape, &numel);
    if (n == 0)
        numel = 0;      /* nothing to walk with no index to check */
    for (int g = 0; g < n && !st; g++) {
        st = fc_to(ctx, idx[g], idx[g]->dtype, fc_cpu(), &host[g], err);
        if (!st)
            st = fc_host_view(ctx, host[g], &v[g], err);
        if (st)
            break;
        off[g] = v[g].offset;
        for (int d = 0; d < nb; d++) {
            int j = d - (nb - v[g].ndim);
            str[g][d] = j >= 0 && v[g].shape[j] != 1 ? v[g].strides[j] : 0;
        }
    }
    if (!st && n == 1 && v[0].ndim == nb && fc_view_numel(&v[0]) == numel) {
        /* One index covering the whole shape, densely: one vectorisable pass. */
        bool dense = true;
        int64_t acc = 1;
        for (int d = nb - 1; d >= 0 && dense; d--) {
            dense = v[0].shape[d] == 1 || v[0].strides[d] == acc;
            acc = fc_mul_wrap(acc, v[0].shape[d]);
        }
        if (dense) {
            int64_t i = first_bad(&v[0], v[0].offset, numel, wrap ? -extent[0] : 0, extent[0]);
            if (i >= 0)
                st = out_of_bounds(err, kind, elem_int(&v[0], v[0].offset + i), dim[0], extent[0]);
            numel = 0;
        }
    }
    for (int64_t e = 0; e < numel && !st; e++) {
        for (int g = 0; g < n && !st; g++) {
            int64_t i = elem_int(&v[g], off[g]);
            if (i >= extent[g] || i < (wrap ? -extent[g] : 0))
                st = out_of_bounds(err, kind, i, dim[g], extent[g]);
        }
        for (int d = nb - 1; d >= 0; d--) {      /* the next position, last dim fastest */
            for (int g = 0; g < n; g++)
                off[g] += str[g][d];
            if (++pos[d] < bshape[d])
                break;
            for (int g = 0; g < n; g++)
                off[g] -= str[g][d] * bshape[d];
            pos[d] = 0;
        }
    }
    for (int g = 0; g < n; g++)
        fc_tensor_release(host[g]);
    return st;
}

/* Nonzero elements among the n of type T at p (floats: -0.0 and 0.0 are zero). With rows, also
 * writes the coordinates of each: prefix[0, nd - 1) then the position in the run. */
#define NONZERO_RUN(T)                                                                            \
    static int64_t nonzero_run_##T(const T *p, int64_t n, int nd, const int64_t *prefix, int64_t *rows) \
    {                                                                                             \
        int64_t k = 0;                                                                            \
        if (!rows) {                                                                              \
            for (int64_t i = 0; i < n; i++)                                                       \
                k += p[i] != 0;                                                                   \
            return k;                                                                             \
        }                                                                                         \
        for (int64_t i = 0; i < n; i++)                                                           \
            if (p[i] != 0) {                                                                      \
                memcpy(rows + k * nd, prefix, (size_t)(nd - 1) * sizeof *prefix);                  \
                rows[k * nd + nd - 1] = i;                                                        \
                k++;                                                                              \
            }                                                                                     \
        return k;                                                                                 \
    }
NONZERO_RUN(uint8_t)
NONZERO_RUN(int32_t)
NONZERO_RUN(int64_t)
NONZERO_RUN(float)
NONZERO_RUN(double)

static int64_t nonzero_run(const FcView *v, int64_t off, int64_t n, const int64_t *prefix, int64_t *rows)
{
    const char *p = (const char *)v->data + off * (int64_t)fc_dtype_size(v->dtype);
    switch (v->dtype) {
    case FC_BOOL: case FC_UINT8: return nonzero_run_uint8_t((const uint8_t *)p, n, v->ndim, prefix, rows);
    case FC_INT32: return nonzero_run_int32_t((const int32_t *)(const void *)p, n, v->ndim, prefix, rows);
    case FC_INT64: return nonzero_run_int64_t((const int64_t *)(const void *)p, n, v->ndim, prefix, rows);
    case FC_FLOAT32: return nonzero_run_float((const float *)(const void *)p, n, v->ndim, prefix, rows);
    default: return nonzero_run_double((const double *)(const void *)p, n, v->ndim, prefix, rows);
    }
}

/* Walks v in C order, a run of its last dim at a time (element by element when that dim is not
 * unit-stride): counts the nonzero elements, and with rows writes their coordinates. */
static int64_t nonzero_walk(const FcView *v, int64_t *rows)
{
    int nd = v->ndim;
    int64_t numel = fc_view_numel(v), pos[FC_MAX_DIMS] = {0}, k = 0;
    if (numel == 0)
        return 0;
    if (nd == 0)        /* one element, no coordinates */
        return nonzero_run(v, v->offset, 1, pos, NULL);
    bool unit = v->strides[nd - 1] == 1 || v->shape[nd - 1] == 1;
    int last = unit ? nd - 1 : nd;          /* the dims walked one index at a time */
    int64_t run = unit ? v->shape[nd - 1] : 1, off = v->offset;
    for (int64_t e = 0; e < numel; e += run) {
        if (unit) {
            k += nonzero_run(v, off, run, pos, rows ? rows + k * nd : NULL);
        } else if (nonzero_run(v, off, 1, pos, NULL)) {
            if (rows)
                memcpy(rows + k * nd, pos, (size_t)nd * sizeof *pos);
            k++;
        }
        for (int d = last - 1; d >= 0; d--) {
            off += v->strides[d];
            if (++pos[d] < v->shape[d])
                break;
            off -= v->strides[d] * v->shape[d];
            pos[d] = 0;
        }
    }
    return k;
}

FcStatus fc_nonzero(FcCtx *ctx, FcTensor *t, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcTensor *h = NULL, *r = NULL;
    FcView v;
    /* The other narrow dtypes are scanned in their compute dtype (the same zeros). */
    FcDType dt = t->dtype == FC_UINT8 ? FC_UINT8 : fc_dtype_compute(t->dtype);
    FcStatus st = fc_to(ctx, t, dt, fc_cpu(), &h, err);
    if (!st)
        st = fc_host_view(ctx, h, &v, err);
    if (!st) {
        int64_t shape[2] = {nonzero_walk(&v, NULL), v.ndim};
        st = fc_empty(ctx, FC_INT64, fc_cpu(), 2, shape, NULL, &r, err);
        if (!st)
            nonzero_walk(&v, r->storage->data);
    }
    fc_tensor_release(h);
    if (!st && t->device.type != FC_DEV_CPU) {
        FcTensor *d = NULL;
        st = fc_to(ctx, r, FC_INT64, t->device, &d, err);
        fc_tensor_release(r);
        r = d;
    }
    if (st) {
        fc_tensor_release(r);
        return st;
    }
    *out = r;
    return FC_OK;
}

/* ---- translating an index (applySlicing) ---- */

/* Dims of t an index names: ints, slices, tensors (a mask its rank); None, ... and bools none. */
static int specified_dims(int n, const FcIndex *ix)
{
    int count = 0;
    for (int k = 0; k < n; k++) {
        if (ix[k].kind == FC_IX_TENSOR)
            count += is_mask(ix[k].t) ? ix[k].t->ndim : 1;
        else if (ix[k].kind == FC_IX_INT || ix[k].kind == FC_IX_SLICE)
            count++;
    }
    return count;
}

/* Moves the per-view-dim arrays from dim on by `by` (1: opens dim, -1: closes dim). */
static void view_shift(Plan *p, int dim, int by)
{
    int from = by > 0 ? dim : dim + 1, to = from + by;
    size_t n = (size_t)(p->ndim - from);
    memmove(p->shape + to, p->shape + from, n * sizeof *p->shape);
    memmove(p->strides + to, p->strides + from, n * sizeof *p->strides);
    memmove(p->vdim + to, p->vdim + from, n * sizeof *p->vdim);
    memmove(p->vstart + to, p->vstart + from, n * sizeof *p->vstart);
    memmove(p->vstep + to, p->vstep + from, n * sizeof *p->vstep);
    p->ndim += by;
}

static void view_insert(Plan *p, int dim)
{
    view_shift(p, dim, 1);
    p->shape[dim] = 1;
    /* as unsqueeze */
    p->strides[dim] = dim + 1 < p->ndim ? fc_mul_wrap(p->shape[dim + 1], p->strides[dim + 1]) : 1;
    p->vdim[dim] = -1;
    p->vstart[dim] = 0;
    p->vstep[dim] = 1;
}

/* Selects index i of view dim `dim`; a message names `named`, the index's position in the index
 * tuple (PyTorch's real_dim). */
static FcStatus view_select(Plan *p, int dim, int64_t i, int named, FcError *err)
{
    int64_t size = p->shape[dim];
    if (i < -size || i >= size)
        return out_of_bounds(err, FC_ERR_INDEX, i, named, size);
    if (i < 0)
        i += size;
    p->offset += i * p->strides[dim];
    if (p->vdim[dim] >= 0) {
        p->has_fixed[p->vdim[dim]] = true;
        p->fixed[p->vdim[dim]] = p->vstart[dim] + p->vstep[dim] * i;
    }
    view_shift(p, dim, -1);
    return FC_OK;
}

/* start:stop:step along dim: PyTorch's clamping for positive steps, Python's for negative ones. */
static void view_slice(Plan *p, int dim, const FcIndex *s)
{
    int64_t len = p->shape[dim], step = s->step, lo, hi, count;
    if (step > 0) {
        lo = s->has_start ? s->start : 0;
        hi = s->has_stop ? s->stop : len;
        lo = lo < 0 ? (lo + len < 0 ? 0 : lo + len) : (lo > len ? len : lo);
        hi = hi < 0 ? (hi + len < 0 ? 0 : hi + len) : (hi > len ? len : hi);
        count = hi > lo ? (hi - lo - 1) / step + 1 : 0;
    } else {
        lo = s->has_start ? s->start : len - 1;
        hi = s->has_stop ? s->stop : -1;
        if (s->has_start)
            lo = lo < 0 ? (lo + len < 0 ? -1 : lo + len) : (lo >= len ? len - 1 : lo);
        if (s->has_stop)
            hi = hi < 0 ? (hi + len < 0 ? -1 : hi + len) : (hi >= len ? len - 1 : hi);
        count = lo > hi ? (lo - hi - 1) / -step + 1 : 0;
    }
    if (count > 0) {
        p->offset += lo * p->strides[dim];
        p->vstart[dim] += lo * p->vstep[dim];
    }
    p->shape[dim] = count;
    p->strides[dim] = fc_mul_wrap(p->strides[dim], step);    /* as PyTorch's slice (an empty view's may wrap) */
    p->vstep[dim] = fc_mul_wrap(p->vstep[dim], step);
}

/* An int64 index tensor of one element 0 (true) or none (false): a Python bool as PyTorch
 * indexes with it. */
static FcStatus bool_index(FcCtx *ctx, bool b, FcTensor **out, FcError *err)
{
    int64_t n = b ? 1 : 0;
    FcScalar zero = {.i = 0};
    FcTensor *t = NULL;
    FcStatus st = fc_full(ctx, FC_INT64, fc_cpu(), 1, &n, zero, &t, err);
    if (!st)
        st = fc_realize(ctx, t, err);
    if (st) {
        fc_tensor_release(t);
        return st;
    }
    *out = t;
    return FC_OK;
}

/* Applies the basic indices to t's view and records the advanced ones by view position in
 * rec[0, *nrec) (references; NULL between them). */
static FcStatus apply_basic(FcCtx *ctx, FcTensor *t, int n, const FcIndex *ix, Plan *p, FcTensor **rec, int *nrec,
                            FcError *err)
{
    if (t->ndim == 0 && n > 0 && ix[0].kind == FC_IX_INT)
        return fc_errf(err, FC_ERR_INDEX,
                       "invalid index of a 0-dim tensor. Use `tensor.item()` to convert a 0-dim tensor to a number");
    if (t->ndim == 0 && n > 0 && ix[0].kind == FC_IX_SLICE)
        return fc_errf(err, FC_ERR_INDEX, "slice() cannot be applied to a 0-dim tensor.");
    int ellipses = 0;
    for (int k = 0; k < n; k++)
        ellipses += ix[k].kind == FC_IX_ELLIPSIS;
    if (ellipses > 1)
        return fc_errf(err, FC_ERR_INDEX, "an index can only have a single ellipsis ('...')");
    int specified = specified_dims(n, ix);
    if (specified > t->ndim)
        return fc_errf(err, FC_ERR_INDEX, "too many indices for tensor of dimension %d", t->ndim);
    FcStatus st = p->compose ? FC_OK : fc_realize(ctx, t, err);
    if (st)
        return st;
    p->src = fc_tensor_retain(t);
    p->ndim = t->ndim;
    memcpy(p->shape, t->shape, (size_t)t->ndim * sizeof *t->shape);
    if (p->compose)     /* no storage yet: strides that keep view_insert's arithmetic defined */
        fc_contiguous_strides(t->ndim, t->shape, p->strides);
    else
        memcpy(p->strides, t->strides, (size_t)t->ndim * sizeof *t->strides);
    p->offset = p->compose ? 0 : t->offset;
    for (int k = 0; k < t->ndim; k++) {
        p->vdim[k] = k;
        p->vstart[k] = 0;
        p->vstep[k] = 1;
    }
    int dim = 0;
    for (int k = 0; k < n && !st; k++) {
        FcIndex one = ix[k];
        const FcIndex *x = &one;
        if (x->kind == FC_IX_TENSOR && x->t->ndim == 0 && (is_mask(x->t) || fc_dtype_is_int(x->t->dtype))) {
            /* A 0-dim int tensor selects as an int, a 0-dim bool tensor indexes as a bool. */
            FcScalar v;
            st = fc_item(ctx, x->t, &v, err);
            if (st)
                return st;
            one.kind = is_mask(x->t) ? FC_IX_BOOL : FC_IX_INT;
            one.i = v.i;
        }
        if (x->kind != FC_IX_ELLIPSIS && x->kind != FC_IX_NONE && x->kind != FC_IX_BOOL && dim >= p->ndim)
            return fc_errf(err, FC_ERR_INDEX, "too many indices for tensor of dimension %d", t->ndim);
        if ((x->kind == FC_IX_NONE || x->kind == FC_IX_BOOL) && dim > p->ndim)
            return fc_errf(err, FC_ERR_INDEX, "Dimension out of range (expected to be in range of [%d, %d], but got %d)",
                           -p->ndim - 1, p->ndim, dim);
        if ((x->kind == FC_IX_NONE || x->kind == FC_IX_BOOL) && p->ndim >= FC_MAX_DIMS)
            return fc_errf(err, FC_ERR_INDEX, "an index with more than %d dims", FC_MAX_DIMS);
        switch (x->kind) {
        case FC_IX_INT:
            st = view_select(p, dim, x->i, k, err);
            break;
        case FC_IX_SLICE:
            if (x->step == 0)
                return fc_errf(err, FC_ERR_VALUE, "slice step cannot be zero");
            view_slice(p, dim++, x);
            break;
        case FC_IX_NONE:
            view_insert(p, dim++);
            break;
        case FC_IX_ELLIPSIS:
            dim += t->ndim - specified;
            break;
        case FC_IX_TENSOR:
            rec[dim++] = fc_tensor_retain(x->t);
            break;
        case FC_IX_BOOL:
            view_insert(p, dim);
            st = bool_index(ctx, x->i != 0, &rec[dim], err);
            dim++;
            break;
        case FC_IX_DIM:
        case FC_IX_DIMPACK:
            return fc_errf(err, FC_ERR_RUNTIME, "internal error: first-class dims reached fc_index");
        }
        if (dim > *nrec)
            *nrec = dim;
    }
    return st;
}

/* Masks to coordinates (expandTensors), then the shape checks of make_info, the broadcast of
 * the indices, their values, and where the result's dims come from. */
static FcStatus plan_advanced(FcCtx *ctx, Plan *p, FcTensor **rec, int nrec, FcError *err)
{
    char a[512], b[512];
    int n = 0;
    FcStatus st = FC_OK;
    for (int k = 0; k < nrec; k++)
        if (rec[k] && !is_mask(rec[k]) && rec[k]->dtype != FC_INT64 && rec[k]->dtype != FC_INT32)
            return fc_errf(err, FC_ERR_INDEX, "tensors used as indices must be long, int, byte or bool tensors");
    for (int k = 0; k < nrec && !st; k++) {
        FcTensor *x = rec[k];
        if (!x || !is_mask(x)) {
            if (n >= FC_MAX_DIMS)
                return fc_errf(err, FC_ERR_INDEX, "too many indices for tensor of dimension %d", p->ndim);
            p->idx[n++] = fc_tensor_retain(x);
            continue;
        }
        for (int j = 0; j < x->ndim; j++) {
            int src = n + j;
            if (src >= p->ndim)
                return fc_errf(err, FC_ERR_INDEX, "Dimension out of range (expected to be in range of [%d, %d], but got %d)",
                               -p->ndim, p->ndim - 1, src);
            if (x->shape[j] != p->shape[src])
                return fc_errf(err, FC_ERR_INDEX,
                               "The shape of the mask %s at index %d does not match the shape of the indexed tensor %s "
                               "at index %d",
                               fc_shape_str(a, sizeof a, x->ndim, x->shape), j,
                               fc_shape_str(b, sizeof b, p->ndim, p->shape), src);
        }
        FcTensor *nz = NULL;
        st = fc_nonzero(ctx, x, &nz, err);
        for (int j = 0; j < x->ndim && !st; j++) {
            int64_t len = nz->shape[0], stride = nz->strides[0];
            p->in_range[n] = true;
            st = fc_as_strided(ctx, nz, 1, &len, &stride, nz->offset + j, &p->idx[n++], err);
        }
        fc_tensor_release(nz);
    }
    if (st)
        return st;
    if (n > p->ndim)
        return fc_errf(err, FC_ERR_INDEX, "too many indices for tensor of dimension %d (got %d)", p->ndim, n);
    p->nidx = n;
    /* Broadcast the defined indices; note where they are. */
    int first = -1, last = -1, count = 0;
    p->nb = 0;
    for (int k = 0; k < n; k++) {
        FcTensor *x = p->idx[k];
        if (!x)
            continue;
        if (first < 0)
            first = k;
        last = k;
        count++;
        if (fc_broadcast_shapes(p->nb, p->bshape, x->ndim, x->shape, &p->nb, p->bshape, err)) {
            size_t len = 0;
            a[0] = 0;
            for (int j = 0; j < n; j++)
                if (p->idx[j] && len < sizeof a)
                    len += (size_t)snprintf(a + len, sizeof a - len, "%s%s", len ? ", " : "",
                                            fc_shape_str(b, sizeof b, p->idx[j]->ndim, p->idx[j]->shape));
            return fc_errf(err, FC_ERR_INDEX, "shape mismatch: indexing tensors could not be broadcast together with "
                                              "shapes %s", a);
        }
    }
    /* As PyTorch's AdvancedIndex: an index into a dim of size 0 is out of bounds whatever its
     * values; the values themselves are checked by the walk over the result, which a result of
     * no elements never makes (zeros(5, 0)[tensor([7])] has shape (1, 0)). */
    bool empty = false;
    for (int d = 0; d < p->nb; d++)
        empty |= p->bshape[d] == 0;
    for (int k = 0; k < p->ndim; k++) {
        if (k < n && p->idx[k] && p->shape[k] == 0 && fc_tensor_numel(p->idx[k]) > 0)
            return fc_errf(err, FC_ERR_INDEX, "index is out of bounds for dimension with size 0");
        if (k >= n || !p->idx[k])
            empty |= p->shape[k] == 0;
    }
    /* The values, in the order PyTorch's kernel meets them. A lazy index is not realised to be
     * checked here: the gather that reads through it checks each index as the kernel computes it
     * (so roi_align's tap coordinates are never stored); an error then surfaces where the result
     * is materialised, as with PyTorch's CUDA kernels. */
    FcTensor *vals[FC_MAX_DIMS] = {0};
    int64_t ext[FC_MAX_DIMS] = {0};
    int dims[FC_MAX_DIMS] = {0}, nv = 0, g = 0;
    for (int k = 0; k < n; k++) {
        if (p->idx[k] && !p->in_range[k] && !fc_tensor_is_lazy(p->idx[k]) && !empty) {
            vals[nv] = p->idx[k];
            ext[nv] = p->shape[k];
            dims[nv++] = g;         /* its position among all advanced indices */
        }
        g += p->idx[k] != NULL;
    }
    st = check_range(ctx, nv, vals, ext, dims, true, FC_ERR_INDEX, p->nb, p->bshape, err);
    if (st)
        return st;
    /* The result: the broadcast dims where the first index was when the indexed dims are
     * adjacent, else in front; the other view dims in order around them. */
    bool adjacent = last - first + 1 == count;
    p->bpos = adjacent ? first : 0;
    if (p->ndim - count + p->nb > FC_MAX_DIMS)
        return fc_errf(err, FC_ERR_INDEX, "the result of indexing would have more than %d dims", FC_MAX_DIMS);
    int r = 0;
    for (int k = 0; k < p->ndim; k++) {
        if (k == p->bpos && adjacent)
            r += p->nb;
        if (!adjacent && k == 0)
            r += p->nb;
        if (k < n && p->idx[k])
            continue;
        p->lev[k] = r;
        p->rshape[r++] = p->shape[k];
    }
    for (int j = 0; j < p->nb; j++)
        p->rshape[p->bpos + j] = p->bshape[j];
    p->rdim = r;
    return FC_OK;
}

/* Whether PyTorch's setitem writes through a view of t, one its applySlicing made (a select, an
 * unsqueeze, a slice other than exactly 0:size:1), rather than into t itself. */
static bool basic_makes_view(const FcTensor *t, int n, const FcIndex *ix)
{
    int dim = 0;
    for (int k = 0; k < n; k++) {
        const FcIndex *x = &ix[k];
        switch (x->kind) {
        case FC_IX_SLICE:
            if ((x->has_start && x->start != 0) || !x->has_stop || dim >= t->ndim || x->stop != t->shape[dim] ||
                x->step != 1)
                return true;
            dim++;
            break;
        case FC_IX_ELLIPSIS:
            dim += t->ndim - specified_dims(n, ix);
            break;
        case FC_IX_TENSOR:
            if (x->t->ndim == 0 && (is_mask(x->t) || fc_dtype_is_int(x->t->dtype)))
                return true;
            dim += is_mask(x->t) ? x->t->ndim : 1;
            break;
        default:        /* an int, None, a bool */
            return true;
        }
    }
    return false;
}

/* Plans t[ix]; compose: t is a lazy tensor whose LOAD the read will compose with (it is not
 * realised; the plan's strides and offset are then meaningless). write: a setitem's, checked in
 * PyTorch's order: the basic indices, autograd's in-place test (a leaf that requires grad), then
 * the advanced indices. */
static FcStatus plan_index(FcCtx *ctx, FcTensor *t, int n, const FcIndex *ix, bool compose, bool write, Plan *p,
                           FcError *err)
{
    memset(p, 0, sizeof *p);
    p->compose = compose;
    FcTensor *rec[FC_MAX_DIMS] = {0};
    int nrec = 0;
    FcStatus st = apply_basic(ctx, t, n, ix, p, rec, &nrec, err);
    if (!st && write)
        st = fc_grad_check_write(t->storage, basic_makes_view(t, n, ix), err);
    bool advanced = false;
    for (int k = 0; k < nrec; k++)
        advanced |= rec[k] != NULL;
    if (!st && advanced)
        st = plan_advanced(ctx, p, rec, nrec, err);
    for (int k = 0; k < nrec; k++)
        fc_tensor_release(rec[k]);
    if (!st && !advanced) {
        p->rdim = p->ndim;
        memcpy(p->rshape, p->shape, (size_t)p->ndim * sizeof *p->shape);
        for (int k = 0; k < p->ndim; k++)
            p->lev[k] = k;
    }
    if (st)
        plan_free(p);
    return st;
}

/* ---- building the IR ---- */

/* Tensor x as a node of dtype dt over a domain of nlev levels, its dims right-aligned to end at
 * level `end`, broadcast where x has size 1. */
static FcNode *placed_node(FcTensor *x, FcDType dt, int nlev, const int64_t *size, int end)
{
    FcNode *n = fc_tensor_node(x);
    FcNode *c = n ? fc_node_place(n, dt, nlev, size, end) : NULL;
    fc_node_release(n);
    return c;
}

/* A LOAD of the view (offset, strides, shape over nin dims of src's storage) over a domain of
 * nlev levels: operand k is the IOTA of level lev[k] when ix[k] is NULL, else ix[k]'s values
 * (a node over the domain; taken). wrap: negative indices count from the end; index_dim[k]: the
 * dim an out-of-range index names. NULL on out-of-memory. */
static FcNode *load_node(const FcTensor *src, int64_t offset, int nin, const int64_t *shape, const int64_t *strides,
                         int nlev, const int64_t *size, const int *lev, FcNode **ix, bool wrap, const int *index_dim)
{
    FcNode *ops[FC_MAX_DIMS] = {0};
    bool ok = true;
    for (int k = 0; k < nin; k++) {
        ops[k] = ix[k];
        if (!ix[k])
            ops[k] = fc_node_new(FC_OP_IOTA, FC_INT64, 1, &size[lev[k]], 0, NULL);
        ok = ok && ops[k];
    }
    FcNode *n = ok ? fc_node_new(FC_OP_LOAD, src->dtype, nlev, size, nin, ops) : NULL;
    for (int k = 0; k < nin; k++)
        fc_node_release(ops[k]);
    if (!n)
        return NULL;
    for (int k = 0; k < nin; k++) {
        if (!ix[k]) {
            n->lev_map[k][0] = (int8_t)lev[k];
        } else {
            for (int l = 0; l < nlev; l++)
                n->lev_map[k][l] = (int8_t)l;
            n->wrap |= (uint64_t)wrap << k;
            n->index_dim[k] = index_dim[k];
        }
        n->strides[k] = strides[k];
        n->shape[k] = shape[k];
    }
    n->storage = fc_storage_retain(src->storage);
    n->offset = offset;
    return n;
}

/* The lazy tensor of a LOAD node built over src and the index tensors xs (for reader lists). */
static FcStatus load_tensor(FcNode *n, FcTensor *src, FcTensor *const *xs, int nx, FcTensor **out, FcError *err)
{
    FcTensor *from[FC_MAX_DIMS + 1];
    int nfrom = 0;
    from[nfrom++] = src;
    for (int k = 0; k < nx; k++)
        if (xs[k])
            from[nfrom++] = xs[k];
    *out = fc_tensor_from_node(n, src->device, from, nfrom);
    return *out ? FC_OK : fc_nomem(err);
}

/* The per-view-dim index nodes of an advanced plan, over its result levels. */
static bool plan_index_nodes(const Plan *p, FcNode **ix, int *index_dim)
{
    int g = 0;
    for (int k = 0; k < p->ndim; k++) {
        ix[k] = NULL;
        if (k >= p->nidx || !p->idx[k])
            continue;
        index_dim[k] = g++;
        ix[k] = placed_node(p->idx[k], FC_INT64, p->rdim, p->rshape, p->bpos + p->nb);
        if (!ix[k]) {
            while (k-- > 0)
                fc_node_release(ix[k]);
            return false;
        }
    }
    return true;
}

/* The read of a plan over a realised tensor: one LOAD of the view, its indexed dims gathered. */
static FcStatus plan_load(Plan *p, FcTensor **out, FcError *err)
{
    FcNode *nodes[FC_MAX_DIMS];
    int index_dim[FC_MAX_DIMS];
    FcNode *load = NULL;
    if (plan_index_nodes(p, nodes, index_dim))
        load = load_node(p->src, p->offset, p->ndim, p->shape, p->strides, p->rdim, p->rshape, p->lev, nodes, true,
                         index_dim);
    return load ? load_tensor(load, p->src, p->idx, p->nidx, out, err) : fc_nomem(err);
}

/* ---- composing a read with a lazy LOAD ----
 *
 * Reading t[...] where t is lazy and its node is a LOAD (a plain read or a gather of a stored
 * tensor, itself perhaps composed) gives one new LOAD of the same storage, t unrealised: the old
 * LOAD's index expressions are rebuilt over the new result's levels, each level j of t (each dim
 * of t) replaced by what the new index gives for it (a Repl): a constant (an int), start +
 * step * iota of a result level (a slice, or a dim not indexed), or an index tensor's values (an
 * advanced index, already checked against t's dim j when the index was planned). Nodes are
 * rebuilt once per (node, level mapping).
 *
 * Where a LOAD reads one of its dims by the iota of a level of t directly (every dim of a plain
 * read, the dims a gather did not index), the replacement goes into the LOAD: a constant becomes
 * a CONST operand, a slice moves the offset and scales the stride (the access stays affine: the
 * scheduler sees an iota, not a gather register), an index tensor becomes a gathered operand with
 * the extent of t's dim (negative values wrap around it) and the dim the new index names in
 * messages. Any other operand (the index expression of an earlier gather) keeps its extent, wrap
 * and message dim: its new values are a selection of values already checked against them. */

typedef enum ReplKind { R_FIXED, R_AFFINE, R_GATHER } ReplKind;
typedef struct Repl {
    ReplKind kind;
    int64_t start, step;        /* FIXED: the index (>= 0); AFFINE: start + step * iota(level lev) */
    int lev;
    FcNode *ix;                 /* GATHER: int64 over the new domain (borrowed) */
    bool wrap;                  /* GATHER: a negative index counts from the end */
    int dim;                    /* GATHER: the dim an out-of-range message names */
} Repl;

typedef struct ComposeMemo {
    const FcNode *old;
    int8_t map[FC_MAX_DIMS];    /* old's levels -> levels of t (or FC_LEV_BCAST) */
    FcNode *node;               /* the rebuilt node (a reference) */
} ComposeMemo;

typedef struct Compose {
    const Repl *repl;           /* per level of t */
    bool used[FC_MAX_DIMS];     /* per level of t: its GATHER's index was built into the DAG */
    int nlev;                   /* the new domain */
    const int64_t *size;
    ComposeMemo *memo;
    int nmemo, capmemo;
} Compose;

/* Whether compose_node can rebuild n: loads, constants, casts and pointwise ops, iotas only as
 * a load's operands (operand: n is one), no reductions. */
static bool composable(const FcNode *n, bool operand)
{
    if (n->op == FC_OP_IOTA)
        return operand;
    if (n->op == FC_OP_CONST)
        return true;
    if (n->op != FC_OP_LOAD && n->op != FC_OP_CAST && !fc_op_is_unary(n->op) && !fc_op_is_binary(n->op) &&
        n->op != FC_OP_WHERE)
        return false;
    for (int k = 0; k < n->nin; k++)
        if (!composable(n->in[k], n->op == FC_OP_LOAD))
            return false;
    return true;
}

/* Whether a read of t composes with t's node rather than realising t. */
static bool can_compose(const FcCtx *ctx, const FcTensor *t)
{
    return t->node && t->node->op == FC_OP_LOAD && t->ndim > 0 && !fc_node_bigger(t->node, ctx->max_fused) &&
           composable(t->node, false);
}

static FcNode *compose_node(Compose *c, const FcNode *n, const int8_t *map);

/* A CONST of dtype dt over no levels (an operand broadcast everywhere). */
static FcNode *const_node(FcDType dt, FcScalar v)
{
    FcNode *n = fc_node_new(FC_OP_CONST, dt, 0, NULL, 0, NULL);
    if (n)
        n->konst = v;
    return n;
}

/* The LOAD n rebuilt over the new domain (map: n's levels -> levels of t). */
static FcNode *compose_load(Compose *c, const FcNode *n, const int8_t *map)
{
    FcNode *ops[FC_MAX_DIMS] = {0};
    const Repl *r[FC_MAX_DIMS] = {0};       /* per operand read by the iota of a level of t */
    bool ok = true;
    for (int k = 0; k < n->nin && ok; k++) {
        const FcNode *in = n->in[k];
        int8_t sub[FC_MAX_DIMS];
        for (int q = 0; q < in->nlev; q++) {
            int m = n->lev_map[k][q];
            sub[q] = (int8_t)(m < 0 ? FC_LEV_BCAST : map[m]);
        }
        if (in->op != FC_OP_IOTA) {
            ops[k] = compose_node(c, in, sub);
        } else if (sub[0] < 0 || c->repl[sub[0]].kind == R_FIXED) {
            FcScalar v = {.i = sub[0] < 0 ? 0 : c->repl[sub[0]].start};
            ops[k] = const_node(FC_INT64, v);
        } else if (c->repl[sub[0]].kind == R_AFFINE) {
            r[k] = &c->repl[sub[0]];
            ops[k] = fc_node_new(FC_OP_IOTA, FC_INT64, 1, &c->size[r[k]->lev], 0, NULL);
        } else {
            r[k] = &c->repl[sub[0]];
            ops[k] = fc_node_retain(r[k]->ix);
            c->used[sub[0]] = true;
        }
        ok = ops[k] != NULL;
    }
    FcNode *l = ok ? fc_node_new(FC_OP_LOAD, n->dtype, c->nlev, c->size, n->nin, ops) : NULL;
    for (int k = 0; k < n->nin; k++)
        fc_node_release(ops[k]);
    if (!l)
        return NULL;
    l->src_dtype = n->src_dtype;
    l->storage = fc_storage_retain(n->storage);
    l->offset = n->offset;
    l->wrap = n->wrap;
    for (int k = 0; k < n->nin; k++) {
        const FcNode *in = l->in[k];
        l->strides[k] = n->strides[k];
        l->shape[k] = n->shape[k];
        l->index_dim[k] = n->index_dim[k];
        if (n->in[k]->op == FC_OP_IOTA)
            l->wrap &= ~((uint64_t)1 << k);
        if (r[k] && r[k]->kind == R_AFFINE) {
            l->lev_map[k][0] = (int8_t)r[k]->lev;
            if (in->size[0] > 0)
                l->offset += r[k]->start * n->strides[k];
            l->strides[k] = n->strides[k] * r[k]->step;
            l->shape[k] = in->size[0];
            continue;
        }
        if (r[k]) {     /* a gather of t's level: its extent, its dim, its wrap */
            l->shape[k] = n->in[k]->size[0];
            l->index_dim[k] = r[k]->dim;
            l->wrap |= (uint64_t)r[k]->wrap << k;
        }
        for (int q = 0; q < in->nlev; q++)     /* the other operands are over the new domain, or none */
            l->lev_map[k][q] = (int8_t)q;
    }
    return l;
}

/* n (an index expression over levels of t by map) rebuilt over the new domain: a node over all of
 * its levels, or a CONST over none. New reference; NULL on out-of-memory. */
static FcNode *compose_node(Compose *c, const FcNode *n, const int8_t *map)
{
    for (int i = 0; i < c->nmemo; i++)
        if (c->memo[i].old == n && memcmp(c->memo[i].map, map, (size_t)n->nlev) == 0)
            return fc_node_retain(c->memo[i].node);
    FcNode *r = NULL;
    if (n->op == FC_OP_CONST) {
        r = const_node(n->dtype, n->konst);
    } else if (n->op == FC_OP_CAST && n->in[0]->dtype == n->dtype) {
        /* Only places its operand (a broadcast): the rebuilt operand is placed already. */
        int8_t sub[FC_MAX_DIMS];
        for (int q = 0; q < n->in[0]->nlev; q++) {
            int m = n->lev_map[0][q];
            sub[q] = (int8_t)(m < 0 ? FC_LEV_BCAST : map[m]);
        }
        r = compose_node(c, n->in[0], sub);
    } else if (n->op == FC_OP_LOAD) {
        r = compose_load(c, n, map);
    } else {
        FcNode *ops[3] = {0};
        bool ok = n->nin <= 3;
        for (int k = 0; k < n->nin && ok; k++) {
            int8_t sub[FC_MAX_DIMS];
            for (int q = 0; q < n->in[k]->nlev; q++) {
                int m = n->lev_map[k][q];
                sub[q] = (int8_t)(m < 0 ? FC_LEV_BCAST : map[m]);
            }
            ops[k] = compose_node(c, n->in[k], sub);
            ok = ops[k] != NULL;
        }
        r = ok ? fc_node_new(n->op, n->dtype, c->nlev, c->size, n->nin, ops) : NULL;
        for (int k = 0; k < n->nin && k < 3; k++)
            fc_node_release(ops[k]);
        if (r) {
            r->src_dtype = n->src_dtype;
            r->konst = n->konst;
            for (int k = 0; k < n->nin; k++)
                for (int q = 0; q < r->in[k]->nlev; q++)
                    r->lev_map[k][q] = (int8_t)q;
        }
    }
    if (!r)
        return NULL;
    ComposeMemo *m = c->memo;
    if (c->nmemo == c->capmemo) {
        int cap = c->capmemo ? 2 * c->capmemo : 16;
        m = mem_realloc(c->memo, (size_t)cap * sizeof *m);
        if (!m) {
            fc_node_release(r);
            return NULL;
        }
        c->memo = m;
        c->capmemo = cap;
    }
    m[c->nmemo].old = n;
    memcpy(m[c->nmemo].map, map, (size_t)n->nlev);
    m[c->nmemo++].node = fc_node_retain(r);
    return r;
}

/* The LOAD node (over the levels of t) with each level j of t replaced by repl[j], over the new
 * domain (nlev levels of sizes size); used[j]: repl[j]'s index is read by the result (a level
 * that nothing reads leaves its index out). New reference; NULL on out-of-memory. */
static FcNode *compose_read(const FcNode *node, const Repl *repl, int nlev, const int64_t *size, bool *used)
{
    Compose c = {.repl = repl, .nlev = nlev, .size = size};
    int8_t map[FC_MAX_DIMS];
    for (int j = 0; j < node->nlev; j++)
        map[j] = (int8_t)j;
    FcNode *n = compose_node(&c, node, map);
    memcpy(used, c.used, (size_t)node->nlev * sizeof *used);
    for (int i = 0; i < c.nmemo; i++)
        fc_node_release(c.memo[i].node);
    mem_free(c.memo);
    return n;
}

/* The read of a composing plan: what it gives for each dim of p->src, composed with its LOAD. */
static FcStatus plan_compose(Plan *p, FcTensor **out, FcError *err)
{
    FcNode *nodes[FC_MAX_DIMS] = {0};
    int index_dim[FC_MAX_DIMS];
    if (!plan_index_nodes(p, nodes, index_dim))
        return fc_nomem(err);
    Repl repl[FC_MAX_DIMS];
    for (int j = 0; j < p->src->ndim; j++)
        repl[j] = (Repl){.kind = R_FIXED, .start = p->fixed[j]};    /* every other dim is a view dim's */
    for (int k = 0; k < p->ndim; k++) {
        int j = p->vdim[k];
        if (j < 0)
            continue;   /* inserted by None or a bool: an index there selects nothing of t */
        if (nodes[k])   /* advanced: the view dim is all of dim j (vstart 0, vstep 1) */
            repl[j] = (Repl){.kind = R_GATHER, .ix = nodes[k], .wrap = true, .dim = index_dim[k]};
        else
            repl[j] = (Repl){.kind = R_AFFINE, .start = p->vstart[k], .step = p->vstep[k], .lev = p->lev[k]};
    }
    /* t's node; or, when planning realised t (t[t] realises the index), a plain read of it. */
    FcNode *base = fc_tensor_node(p->src);
    bool used[FC_MAX_DIMS] = {0};
    FcNode *load = base ? compose_read(base, repl, p->rdim, p->rshape, used) : NULL;
    fc_node_release(base);
    /* The reader lists name only the index tensors the DAG holds (an index of a dim that None
     * inserted, or of a level nothing reads, is checked but not read). */
    FcTensor *xs[FC_MAX_DIMS];
    int nx = 0;
    for (int k = 0; k < p->ndim; k++) {
        if (nodes[k] && p->vdim[k] >= 0 && used[p->vdim[k]])
            xs[nx++] = p->idx[k];
        fc_node_release(nodes[k]);
    }
    return load ? load_tensor(load, p->src, xs, nx, out, err) : fc_nomem(err);
}

/* index_select's and gather's read of a lazy t (can_compose) composed with its LOAD: over a new
 * domain of nlev levels (sizes size), dim d of t gathered by ix (int64 over the new domain,
 * borrowed; negative values are errors, messages name d), every other dim k walking level k
 * from 0. x: the index tensor (for the reader lists). */
static FcStatus compose_gather(FcTensor *t, int d, FcNode *ix, FcTensor *x, int nlev, const int64_t *size,
                               FcTensor **out, FcError *err)
{
    Repl repl[FC_MAX_DIMS];
    for (int k = 0; k < t->ndim; k++)
        repl[k] = k == d ? (Repl){.kind = R_GATHER, .ix = ix, .dim = d} : (Repl){.kind = R_AFFINE, .step = 1, .lev = k};
    FcNode *base = fc_tensor_node(t);      /* t may have been realised since: t.gather(0, t) */
    bool used[FC_MAX_DIMS] = {0};
    FcNode *load = base ? compose_read(base, repl, nlev, size, used) : NULL;
    fc_node_release(base);
    return load ? load_tensor(load, t, &x, used[d] ? 1 : 0, out, err) : fc_nomem(err);
}

/* Whether an index has an advanced part (its result is then a new tensor, never a view). */
static bool has_advanced(int n, const FcIndex *ix)
{
    for (int k = 0; k < n; k++)
        if (ix[k].kind == FC_IX_BOOL ||
            (ix[k].kind == FC_IX_TENSOR && (ix[k].t->ndim > 0 || is_mask(ix[k].t) ||
                                            !fc_dtype_is_int(ix[k].t->dtype))))
            return true;
    return false;
}

FcStatus fc_index(FcCtx *ctx, FcTensor *t, int n, const FcIndex *ix, FcTensor **out, FcError *err)
{
    *out = NULL;
    Plan p;
    /* A view of a lazy t must share t's storage (a write through either shows in the other, and
     * the view's strides are t's): t is realised. A read with an advanced index is a new tensor:
     * when t's node is a LOAD, it composes. */
    FcStatus st = plan_index(ctx, t, n, ix, has_advanced(n, ix) && can_compose(ctx, t), false, &p, err);
    if (st)
        return st;
    if (p.compose) {
        st = plan_compose(&p, out, err);
        plan_free(&p);
        return st;
    }
    if (p.nidx == 0)
        st = fc_as_strided(ctx, p.src, p.ndim, p.shape, p.strides, p.offset, out, err);
    else
        st = plan_load(&p, out, err);
    plan_free(&p);
    return st;
}

FcStatus fc_index_read(FcCtx *ctx, FcTensor *t, int n, const FcIndex *ix, FcTensor **out, FcError *err)
{
    *out = NULL;
    Plan p;
    FcStatus st = plan_index(ctx, t, n, ix, can_compose(ctx, t), false, &p, err);
    if (st)
        return st;
    st = p.compose ? plan_compose(&p, out, err) : plan_load(&p, out, err);
    plan_free(&p);
    return st;
}

/* ---- writing ---- */

/* v without its leading size-1 dims (PyTorch's setitem, slicePrefix1sDims), as a view. */
static FcStatus strip_leading_ones(FcCtx *ctx, FcTensor *v, FcTensor **out, FcError *err)
{
    int lead = 0;
    while (lead < v->ndim && v->shape[lead] == 1)
        lead++;
    if (lead == 0) {
        *out = fc_tensor_retain(v);
        return FC_OK;
    }
    if (v->node) {
        /* A lazy value is not realised for that (a reshape would): a node reads it without them,
         * so that what computes it still writes the destination (a product's epilogue). */
        FcNode *c = fc_node_new(FC_OP_CAST, v->dtype, v->ndim - lead, v->shape + lead, 1, &v->node);
        if (!c)
            return fc_nomem(err);
        c->src_dtype = v->dtype;
        for (int j = 0; j < v->ndim; j++)
            c->lev_map[0][j] = (int8_t)(j < lead ? FC_LEV_BCAST : j - lead);
        *out = fc_tensor_from_node(c, v->device, &v, 1);
        return *out ? FC_OK : fc_nomem(err);
    }
    return fc_reshape(ctx, v, v->ndim - lead, v->shape + lead, out, err);
}

bool fc_index_put_fills(int n, const FcIndex *ix, const FcTensor *v)
{
    int nmask = 0, nother = 0;
    for (int k = 0; k < n; k++) {
        bool tensor = ix[k].kind == FC_IX_TENSOR;
        nmask += tensor && is_mask(ix[k].t) && ix[k].t->ndim > 0;
        nother += ix[k].kind == FC_IX_BOOL || (tensor && ix[k].t->ndim > 0 && !is_mask(ix[k].t)) ||
                  (tensor && ix[k].t->ndim == 0 && is_mask(ix[k].t));
    }
    return nmask == 1 && nother == 0 && fc_tensor_numel(v) == 1;
}

FcStatus fc_index_put(FcCtx *ctx, FcTensor *t, int n, const FcIndex *ix, FcTensor *v, bool accumulate,
                      FcError *err)
{
    Plan p;     /* plan_index realises t: the write goes into its storage */
    FcStatus st = fc_realize_target(ctx, t, err);
    if (!st)
        st = plan_index(ctx, t, n, ix, false, true, &p, err);
    if (st)
        return st;
    FcTensor *val = NULL;
    st = strip_leading_ones(ctx, v, &val, err);
    char a[256], b[256];
    if (!st && p.nidx == 0 && !accumulate) {
        /* Basic: copy_ into the view (which converts the dtype). */
        FcTensor *view = NULL;
        st = fc_expand_check(val, p.ndim, p.shape, err);
        if (!st)
            st = fc_as_strided(ctx, p.src, p.ndim, p.shape, p.strides, p.offset, &view, err);
        if (!st)
            st = fc_assign(ctx, view, val, err);
        fc_tensor_release(view);
        fc_tensor_release(val);
        plan_free(&p);
        return st;
    }
    bool fill = !st && !accumulate && fc_index_put_fills(n, ix, val);
    if (!st && fill && val->ndim > 0) {
        FcTensor *s = NULL;
        st = fc_reshape(ctx, val, 0, NULL, &s, err);
        fc_tensor_release(val);
        val = s;
    }
    if (!st && val->dtype != t->dtype && !val->wrapped_number && !fill)
        st = fc_errf(err, FC_ERR_RUNTIME,
                     "Index put requires the source and destination dtypes match, got %s for the destination and %s "
                     "for the source.",
                     fc_dtype_torch_name(t->dtype), fc_dtype_torch_name(val->dtype));
    if (!st) {
        int nd;
        int64_t shape[FC_MAX_DIMS];
        bool ok = val->ndim <= p.rdim &&
                  fc_broadcast_shapes(val->ndim, val->shape, p.rdim, p.rshape, &nd, shape, err) == FC_OK;
        for (int k = 0; ok && k < nd; k++)
            ok = shape[k] == p.rshape[k];
        if (!ok)
            st = fc_errf(err, FC_ERR_RUNTIME, "shape mismatch: value tensor of shape %s cannot be broadcast to "
                                              "indexing result of shape %s",
                         fc_shape_str(a, sizeof a, val->ndim, val->shape), fc_shape_str(b, sizeof b, p.rdim, p.rshape));
    }
    /* The written region: the result's levels; the view dims not indexed are walked by their
     * strides, the indexed ones scattered. */
    FcScatter sc = {.accumulate = accumulate};
    int64_t ostr[FC_MAX_DIMS] = {0};
    FcNode *nodes[FC_MAX_DIMS] = {0}, *value = NULL;
    int index_dim[FC_MAX_DIMS];
    if (!st && !plan_index_nodes(&p, nodes, index_dim))
        st = fc_nomem(err);
    if (!st) {
        for (int k = 0; k < p.ndim; k++) {
            if (!nodes[k]) {
                ostr[p.lev[k]] = p.strides[k];
                continue;
            }
            sc.index[sc.n] = nodes[k];
            sc.at[sc.n] = (FcGather){.stride = p.strides[k], .extent = p.shape[k], .wrap = true, .dim = index_dim[k]};
            sc.n++;
        }
        value = placed_node(val, t->dtype, p.rdim, p.rshape, p.rdim);
        st = value ? fc_store_scattered(ctx, p.src->storage, p.offset, ostr, value, &sc, err) : fc_nomem(err);
    }
    fc_node_release(value);
    for (int k = 0; k < p.ndim; k++)
        fc_node_release(nodes[k]);
    fc_tensor_release(val);
    plan_free(&p);
    return st;
}

/* ---- index_select, gather, scatter ---- */

FcStatus fc_index_select(FcCtx *ctx, FcTensor *t, int64_t dim, FcTensor *index, FcTensor **out, FcError *err)
{
    *out = NULL;
    int d;
    FcStatus st = fc_wrap_dim(dim, t->ndim, &d, err);
    if (st)
        return st;
    if (index->ndim > 1)
        return fc_errf(err, FC_ERR_INDEX, "index_select(): Index is supposed to be a vector");
    if (index->dtype != FC_INT64 && index->dtype != FC_INT32)
        return fc_errf(err, FC_ERR_RUNTIME, "index_select(): Expected dtype int32 or int64 for index");
    if (t->ndim == 0 && fc_tensor_numel(index) != 1)     /* PyTorch 2's check (1.13 reads garbage) */
        return fc_errf(err, FC_ERR_INDEX, "index_select(): Index to scalar can have only 1 value, got %lld value(s)",
                       (long long)fc_tensor_numel(index));
    bool compose = can_compose(ctx, t);     /* a lazy LOAD: read through it, not realised */
    st = compose ? FC_OK : fc_realize(ctx, t, err);
    if (st)
        return st;
    /* A 0-dim t is indexed as one element along a dim of its own. */
    int nin = t->ndim > 0 ? t->ndim : 1;
    int64_t one = 1, zero = 0, len = fc_tensor_numel(index);
    const int64_t *shape = t->ndim > 0 ? t->shape : &one, *strides = t->ndim > 0 ? t->strides : &zero;
    st = check_range(ctx, 1, &index, &shape[d], &d, false, FC_ERR_INDEX, 1, &len, err);
    if (st)
        return st;
    int64_t size[FC_MAX_DIMS];
    int lev[FC_MAX_DIMS], index_dim[FC_MAX_DIMS] = {0};
    FcNode *ix[FC_MAX_DIMS] = {0};
    for (int k = 0; k < nin; k++) {
        size[k] = k == d ? len : shape[k];
        lev[k] = k;
    }
    index_dim[d] = d;
    FcTensor *flat = NULL;
    st = fc_reshape(ctx, index, 1, &len, &flat, err);
    if (st)
        return st;
    ix[d] = placed_node(flat, FC_INT64, nin, size, d + 1);
    if (compose) {
        st = ix[d] ? compose_gather(t, d, ix[d], flat, t->ndim, size, out, err) : fc_nomem(err);
        fc_node_release(ix[d]);
        fc_tensor_release(flat);
        return st;
    }
    FcNode *n = ix[d] ? load_node(t, t->offset, nin, shape, strides, t->ndim, size, lev, ix, false, index_dim)
                      : NULL;
    st = n ? load_tensor(n, t, &flat, 1, out, err) : fc_nomem(err);
    fc_tensor_release(flat);
    return st;
}

/* ensure_nonempty_size: a 0-dim tensor has one dim of size 1. */
static int64_t nonempty_size(const FcTensor *t, int k) { return t->ndim > 0 ? t->shape[k] : 1; }

/* The checks gather and scatter share (ScatterGatherChecks.h), in their order: src NULL for gather
 * and for scatter's Scalar value. scatter's shape check passes an index without elements, and reads
 * src's size at each of self's dims (a src of fewer dims than index fails there, as torch's
 * src.size(d) does) before its rank is checked. */
static FcStatus check_scatter_gather(const char *name, const FcTensor *t, int d, const FcTensor *index,
                                     const FcTensor *src, FcError *err)
{
    char a[256], b[256], c[256];
    bool gather = strcmp(name, "gather") == 0;
    if (index->dtype != FC_INT64)
        return fc_errf(err, FC_ERR_RUNTIME, "%s(): Expected dtype int64 for index", name);
    if (src && src->dtype != t->dtype)
        return fc_errf(err, FC_ERR_RUNTIME, "%s(): Expected self.dtype to be equal to src.dtype", name);
    if (!gather && fc_tensor_numel(index) == 0)
        return FC_OK;
    int nt = t->ndim > 0 ? t->ndim : 1, ni = index->ndim > 0 ? index->ndim : 1;
    if (nt != ni)
        return fc_errf(err, FC_ERR_RUNTIME, "Index tensor must have the same number of dimensions as %s tensor",
                       gather ? "input" : "self");
    int bad = -1;
    for (int k = 0; k < nt && bad < 0; k++)
        if (k != d && nonempty_size(index, k) > nonempty_size(t, k))
            bad = k;
    fc_shape_str(a, sizeof a, index->ndim, index->shape);
    fc_shape_str(b, sizeof b, t->ndim, t->shape);
    if (gather) {
        if (bad < 0)
            return FC_OK;
        return fc_errf(err, FC_ERR_RUNTIME,
                       "Size does not match at dimension %d expected index %s to be smaller than self %s apart from "
                       "dimension %d",
                       bad, a, b, d);
    }
    for (int k = 0; src && bad < 0 && k < nt; k++) {
        if (src->ndim > 0 && k >= src->ndim)
            return fc_errf(err, FC_ERR_INDEX, "Dimension out of range (expected to be in range of [%d, %d], but got %d)",
                           -src->ndim, src->ndim - 1, k);
        if (nonempty_size(index, k) > nonempty_size(src, k))
            bad = k;
    }
    if (src && (src->ndim > 0 ? src->ndim : 1) != ni)
        return fc_errf(err, FC_ERR_RUNTIME, "Index tensor must have the same number of dimensions as src tensor");
    if (bad < 0)
        return FC_OK;
    if (src)
        return fc_errf(err, FC_ERR_RUNTIME,
                       "Expected index %s to be smaller than self %s apart from dimension %d and to be smaller size "
                       "than src %s",
                       a, b, d, fc_shape_str(c, sizeof c, src->ndim, src->shape));
    return fc_errf(err, FC_ERR_RUNTIME, "Expected index %s to be smaller than self %s apart from dimension %d", a, b, d);
}

FcStatus fc_gather(FcCtx *ctx, FcTensor *t, int64_t dim, FcTensor *index, FcTensor **out, FcError *err)
{
    *out = NULL;
    int d;
    FcStatus st = fc_wrap_dim(dim, t->ndim, &d, err);
    if (!st)
        st = check_scatter_gather("gather", t, d, index, NULL, err);
    bool compose = can_compose(ctx, t);     /* a lazy LOAD: read through it, not realised */
    if (!st && !compose)
        st = fc_realize(ctx, t, err);
    if (st)
        return st;
    int nin = t->ndim > 0 ? t->ndim : 1;
    int64_t one = 1, zero = 0;
    const int64_t *shape = t->ndim > 0 ? t->shape : &one, *strides = t->ndim > 0 ? t->strides : &zero;
    st = check_range(ctx, 1, &index, &shape[d], &d, false, FC_ERR_RUNTIME, index->ndim, index->shape, err);
    if (st)
        return st;
    int64_t size[FC_MAX_DIMS];
    int lev[FC_MAX_DIMS], index_dim[FC_MAX_DIMS] = {0};
    FcNode *ix[FC_MAX_DIMS] = {0};
    int nlev = index->ndim;
    memcpy(size, index->shape, (size_t)nlev * sizeof *size);
    for (int k = 0; k < nin; k++)
        lev[k] = k;
    index_dim[d] = d;
    ix[d] = placed_node(index, FC_INT64, nlev, size, nlev);
    if (compose) {
        st = ix[d] ? compose_gather(t, d, ix[d], index, nlev, size, out, err) : fc_nomem(err);
        fc_node_release(ix[d]);
        return st;
    }
    FcNode *n = ix[d] ? load_node(t, t->offset, nin, shape, strides, nlev, size, lev, ix, false, index_dim) : NULL;
    return n ? load_tensor(n, t, &index, 1, out, err) : fc_nomem(err);
}

FcStatus fc_scatter(FcCtx *ctx, FcTensor *t, int64_t dim, FcTensor *index, FcTensor *src, bool scalar, bool accumulate,
                    FcError *err)
{
    int d;
    FcStatus st = fc_wrap_dim(dim, t->ndim, &d, err);
    if (!st)
        st = check_scatter_gather("scatter", t, d, index, scalar ? NULL : src, err);
    if (!st)
        st = fc_realize_target(ctx, t, err);        /* the sums go into its storage */
    if (st)
        return st;
    int64_t one = 1, zero = 0;
    const int64_t *shape = t->ndim > 0 ? t->shape : &one, *strides = t->ndim > 0 ? t->strides : &zero;
    st = check_range(ctx, 1, &index, &shape[d], &d, false, FC_ERR_RUNTIME, index->ndim, index->shape, err);
    if (st)
        return st;
    /* Over index's shape: src's elements there, added at t's place with dim d scattered. */
    int nlev = index->ndim;
    FcTensor *part = NULL;
    int64_t sstr[FC_MAX_DIMS] = {0}, ostr[FC_MAX_DIMS] = {0};
    st = fc_realize(ctx, src, err);
    if (st)
        return st;
    for (int k = 0; k < nlev; k++) {
        sstr[k] = src->ndim > 0 ? src->strides[k] : 0;
        ostr[k] = k == d || t->ndim == 0 ? 0 : strides[k];
    }
    st = fc_as_strided(ctx, src, nlev, index->shape, sstr, src->offset, &part, err);
    if (st)
        return st;
    FcScatter sc = {.n = 1, .accumulate = accumulate};
    sc.index[0] = placed_node(index, FC_INT64, nlev, index->shape, nlev);
    sc.at[0] = (FcGather){.stride = strides[d], .extent = shape[d], .dim = d};
    FcNode *value = placed_node(part, t->dtype, nlev, index->shape, nlev);
    st = sc.index[0] && value ? fc_store_scattered(ctx, t->storage, t->offset, ostr, value, &sc, err) : fc_nomem(err);
    fc_node_release(value);
    fc_node_release(sc.index[0]);
    fc_tensor_release(part);
    return st;
}
