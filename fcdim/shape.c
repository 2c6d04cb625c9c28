/* shape.c — views and shape operations: reshape and view, permute and transpose, expand, squeeze
 * and unsqueeze, flatten, memory formats (contiguous, is_contiguous, clone), cat and stack, and
 * moving a tensor to another dtype or device.
 *
 * Everything follows PyTorch 1.13, rule for rule: which geometries can be viewed
 * (aten/src/ATen/TensorUtils.cpp: computeStride), the flags a TensorImpl keeps about its layout
 * (c10/core/TensorImpl.cpp: compute_contiguous, compute_channels_last_contiguous_2d/3d,
 * compute_non_overlapping_and_dense; c10/core/MemoryFormat.h: is_channels_last_strides_2d/3d),
 * the strides a copy gets (empty_like's infer_dense_strides, suggest_memory_format), and the
 * message of every error. Stride and layout products wrap in 64 bits as c10's do (fc_mul_wrap):
 * they overflow only for a tensor with no element (zeros(0, 2**62, 4)), whose strides address
 * nothing, while extent products are checked (fc_shape_numel). A view is an fc_as_strided of
 * its input, which realises a lazy input first: a view shares storage, so writes through it
 * reach the base. Copies are an fc_empty of
 * the chosen strides filled by fc_assign, which evaluates a lazy source straight into place.
 * Depends on fcdim.h, internal.h and the C library. */
#include "internal.h"
#include "mem.h"

#include "backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages ---- */

/* Tensor::toString() as Python shows it: "CPUFloatType", which torch's error processing renames
 * "torch.FloatTensor" for the legacy tensor types, bool not among them. */
static const char *type_str(char *buf, size_t cap, const FcTensor *t)
{
    const char *name = fc_dtype_torch_name(t->dtype);
    bool cuda = t->device.type == FC_DEV_CUDA;
    if (t->dtype == FC_BOOL)
        snprintf(buf, cap, "%sBoolType", cuda ? "CUDA" : "CPU");
    else
        snprintf(buf, cap, "torch.%s%sTensor", cuda ? "cuda." : "", name);
    return buf;
}

static FcStatus too_many_dims(FcError *err, int ndim)
{
    return fc_errf(err, FC_ERR_VALUE, "too many dimensions (%d): at most %d", ndim, FC_MAX_DIMS);
}

FcStatus fc_wrap_dim(int64_t dim, int ndim, int *out, FcError *err)
{
    /* maybe_wrap_dim(dim, ndim, wrap_scalar=true): a 0-dim tensor takes dims as if it had one. */
    int64_t n = ndim > 0 ? ndim : 1;
    *out = 0;
    if (dim < -n || dim > n - 1)
        return fc_errf(err, FC_ERR_INDEX, "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                    (long long)-n, (long long)(n - 1), (long long)dim);
    *out = (int)(dim < 0 ? dim + n : dim);
    return FC_OK;
}

/* ---- layout predicates (the flags TensorImpl::refresh_contiguous computes) ---- */

static bool geo_contiguous(int nd, const int64_t *sz, const int64_t *st)
{
    for (int d = 0; d < nd; d++)
        if (sz[d] == 0)
            return true;
    int64_t z = 1;
    for (int d = nd - 1; d >= 0; d--)
        if (sz[d] != 1) {
            if (st[d] != z)
                return false;
            z = fc_mul_wrap(z, sz[d]);
        }
    return true;
}

/* Strides laid out along `order` (innermost first), skipping size-1 dims; no shortcut for empty
 * tensors (compute_channels_last_contiguous_2d/3d have none). */
static bool geo_ordered_contiguous(const int64_t *sz, const int64_t *st, const int *order, int n)
{
    int64_t expected = 1;
    for (int i = 0; i < n; i++) {
        int d = order[i];
        if (sz[d] != 1) {
            if (st[d] != expected)
                return false;
            expected = fc_mul_wrap(expected, sz[d]);
        }
    }
    return true;
}

static const int order_cl2d[4] = {1, 3, 2, 0};
static const int order_cl3d[5] = {1, 4, 3, 2, 0};

static bool geo_cl_contiguous(int nd, const int64_t *sz, const int64_t *st)
{
    return nd == 4 && geo_ordered_contiguous(sz, st, order_cl2d, 4);
}

static bool geo_cl3d_contiguous(int nd, const int64_t *sz, const int64_t *st)
{
    return nd == 5 && geo_ordered_contiguous(sz, st, order_cl3d, 5);
}

/* is_channels_last_strides_2d_s4 / _3d_s5: strides that look like channels-last even when not
 * dense (ambiguous cases fall back to NCHW, as PyTorch does). */
static bool geo_strides_like(const int64_t *sz, const int64_t *st, const int *order, int n)
{
    int64_t min = 0;
    if (st[1] == 0)
        return false;
    for (int i = 0; i < n; i++) {
        int d = order[i];
        if (sz[d] == 0 || st[d] < min)
            return false;
        if (d == 0 && min == st[1])
            return false;
        min = st[d];
        if (sz[d] > 1)
            min = fc_mul_wrap(min, sz[d]);
    }
    return true;
}

static bool geo_non_overlapping_and_dense(int nd, const int64_t *sz, const int64_t *st)
{
    if (geo_contiguous(nd, sz, st) || geo_cl_contiguous(nd, sz, st) || geo_cl3d_contiguous(nd, sz, st))
        return true;
    if (nd == 1)
        return sz[0] < 2 || st[0] == 1;
    /* Sort dims by stride, size-0/1 dims last (a stable insertion sort: equal keys cannot make
     * a dense layout, so their order does not matter). */
    int perm[FC_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        int d = i, j = i;
        for (; j > 0; j--) {
            int p = perm[j - 1];
            bool before = sz[d] >= 2 && (sz[p] < 2 || st[d] < st[p]);
            if (!before)
                break;
            perm[j] = p;
        }
        perm[j] = d;
    }
    int64_t require = 1;
    for (int i = 0; i < nd; i++) {
        int d = perm[i];
        if (sz[d] < 2)
            return true;
        if (st[d] != require)
            return false;
        require = fc_mul_wrap(require, sz[d]);
    }
    return true;
}

/* TensorBase::suggest_memory_format(). */
static FcMemoryFormat geo_suggest(int nd, const int64_t *sz, const int64_t *st)
{
    if (nd == 4 && geo_strides_like(sz, st, order_cl2d, 4))
        return FC_MF_CHANNELS_LAST;
    if (nd == 5 && geo_strides_like(sz, st, order_cl3d, 5))
        return FC_MF_CHANNELS_LAST_3D;
    return FC_MF_CONTIGUOUS;
}

/* get_channels_last_strides_2d/3d do not clamp sizes to 1, unlike C order. */
FcStatus fc_format_strides(FcMemoryFormat mf, int nd, const int64_t *sz, int64_t *st, FcError *err)
{
    switch (mf) {
    case FC_MF_CHANNELS_LAST:
        if (nd != 4)
            return fc_errf(err, FC_ERR_RUNTIME, "required rank 4 tensor to use channels_last format");
        st[1] = 1;
        st[3] = sz[1];
        st[2] = fc_mul_wrap(st[3], sz[3]);
        st[0] = fc_mul_wrap(st[2], sz[2]);
        return FC_OK;
    case FC_MF_CHANNELS_LAST_3D:
        if (nd != 5)
            return fc_errf(err, FC_ERR_RUNTIME, "required rank 5 tensor to use channels_last_3d format");
        st[1] = 1;
        st[4] = sz[1];
        st[3] = fc_mul_wrap(st[4], sz[4]);
        st[2] = fc_mul_wrap(st[3], sz[3]);
        st[0] = fc_mul_wrap(st[2], sz[2]);
        return FC_OK;
    default:
        fc_contiguous_strides(nd, sz, st);
        return FC_OK;
    }
}

/* reorder_dimensions' comparison of one tensor's dims by stride (zero strides undecided, equal
 * strides by size). */
typedef struct DimsUd { const int64_t *sz, *st; } DimsUd;
static int stride_cmp(const void *ud, int d0, int d1)
{
    const DimsUd *u = ud;
    int64_t s0 = u->st[d0], s1 = u->st[d1];
    if (s0 == 0 || s1 == 0)
        return 0;
    if (s0 != s1)
        return s0 < s1 ? -1 : 1;
    return u->sz[d0] > u->sz[d1] ? 1 : 0;
}

void fc_stride_order(int nd, const int64_t *shape, const int64_t *strides, int *perm)
{
    fc_reorder_dimensions(nd, perm, stride_cmp, &(DimsUd){shape, strides});
}

/* infer_dense_strides: dense strides in the input's dim order (TensorIterator's stable sort by
 * stride, zero strides ambiguous, equal strides ordered by size). */
static void infer_dense_strides(int nd, const int64_t *sz, const int64_t *st, int64_t *out)
{
    if (nd == 0)
        return;
    if (nd == 1) {
        out[0] = 1;
        return;
    }
    int perm[FC_MAX_DIMS];
    fc_stride_order(nd, sz, st, perm);
    int64_t cur = 1;
    for (int i = 0; i < nd; i++) {
        int d = perm[i];
        out[d] = cur;
        if (sz[d] > 1)
            cur = fc_mul_wrap(cur, sz[d]);
    }
}

/* ---- views ---- */

/* infer_size: resolves the one -1 of shape against numel, with PyTorch's checks and messages. */
static FcStatus infer_size(int nd, const int64_t *shape, int64_t numel, int64_t *out, FcError *err)
{
    int64_t newsize, given[FC_MAX_DIMS];
    int infer = -1, ngiven = 0;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == -1) {
            if (infer >= 0)
                return fc_errf(err, FC_ERR_RUNTIME, "only one dimension can be inferred");
            infer = d;
        } else if (shape[d] >= 0) {
            given[ngiven++] = shape[d];
        } else {
            return fc_errf(err, FC_ERR_RUNTIME, "invalid shape dimension %lld", (long long)shape[d]);
        }
        out[d] = shape[d];
    }
    if (!fc_shape_numel(ngiven, given, &newsize))
        return fc_numel_overflow(err);
    char buf[512];
    if (numel == newsize || (infer >= 0 && newsize > 0 && numel % newsize == 0)) {
        if (infer >= 0) {
            if (newsize == 0)
                return fc_errf(err, FC_ERR_RUNTIME,
                            "cannot reshape tensor of 0 elements into shape %s because the unspecified dimension "
                            "size -1 can be any value and is ambiguous",
                            fc_shape_str(buf, sizeof buf, nd, shape));
            out[infer] = numel / newsize;
        }
        return FC_OK;
    }
    return fc_errf(err, FC_ERR_RUNTIME, "shape '%s' is invalid for input of size %lld", fc_shape_str(buf, sizeof buf, nd, shape),
                (long long)numel);
}

/* computeStride: strides that let a tensor of (oldshape, oldstride) be viewed as newshape, or
 * false when some new dim would span two non-contiguous chunks. */
bool fc_compute_stride(int on, const int64_t *oldshape, const int64_t *oldstride, int nn, const int64_t *newshape,
                       int64_t *newstride)
{
    if (on == 0) {
        for (int d = 0; d < nn; d++)
            newstride[d] = 1;
        return true;
    }
    int64_t numel;
    fc_shape_numel(on, oldshape, &numel);
    if (numel == 0) {
        bool same = on == nn;
        for (int d = 0; d < on && same; d++)
            same = oldshape[d] == newshape[d];
        if (same)
            memcpy(newstride, oldstride, (size_t)on * sizeof *newstride);
        else
            fc_contiguous_strides(nn, newshape, newstride);
        return true;
    }
    int view_d = nn - 1;
    int64_t chunk_base_stride = oldstride[on - 1], tensor_numel = 1, view_numel = 1;
    for (int tensor_d = on - 1; tensor_d >= 0; tensor_d--) {
        tensor_numel *= oldshape[tensor_d];
        if (tensor_d == 0 ||
            (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
                newstride[view_d] = view_numel * chunk_base_stride;
                view_numel *= newshape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel)
                return false;
            if (tensor_d > 0) {
                chunk_base_stride = oldstride[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

static FcStatus view_or_reshape(FcCtx *ctx, FcTensor *t, int nd, const int64_t *shape, bool copy_ok, FcTensor **out,
                                FcError *err)
{
    *out = NULL;
    if (nd < 0 || nd > FC_MAX_DIMS)
        return too_many_dims(err, nd);
    int64_t sz[FC_MAX_DIMS], st[FC_MAX_DIMS];
    FcStatus s = infer_size(nd, shape, fc_tensor_numel(t), sz, err);
    if (s)
        return s;
    s = fc_realize(ctx, t, err);
    if (s)
        return s;
    if (fc_compute_stride(t->ndim, t->shape, t->strides, nd, sz, st))
        return fc_as_strided(ctx, t, nd, sz, st, t->offset, out, err);
    if (!copy_ok)
        return fc_errf(err, FC_ERR_RUNTIME,
                    "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                    "across two contiguous subspaces). Use .reshape(...) instead.");
    /* _unsafe_view(clone(contiguous), shape): the copy is C-contiguous, so any shape views it. */
    FcTensor *c = NULL;
    s = fc_clone(ctx, t, FC_MF_CONTIGUOUS, &c, err);
    if (s)
        return s;
    fc_compute_stride(c->ndim, c->shape, c->strides, nd, sz, st);
    s = fc_as_strided(ctx, c, nd, sz, st, c->offset, out, err);
    fc_tensor_release(c);
    return s;
}

FcStatus fc_reshape(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *shape, FcTensor **out, FcError *err)
{
    return view_or_reshape(ctx, t, ndim, shape, true, out, err);
}

FcStatus fc_view(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *shape, FcTensor **out, FcError *err)
{
    return view_or_reshape(ctx, t, ndim, shape, false, out, err);
}

FcStatus fc_permute(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *dims, FcTensor **out, FcError *err)
{
    *out = NULL;
    int nd = t->ndim;
    if (ndim != nd)
        return fc_errf(err, FC_ERR_RUNTIME,
                    "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
                    "desired ordering of dimensions i.e. input.dim() = %d is not equal to len(dims) = %d",
                    nd, ndim);
    bool seen[FC_MAX_DIMS] = {false};
    int64_t sz[FC_MAX_DIMS], st[FC_MAX_DIMS];
    int perm[FC_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        FcStatus s = fc_wrap_dim(dims[i], nd, &perm[i], err);
        if (s)
            return s;
        if (seen[perm[i]])
            return fc_errf(err, FC_ERR_RUNTIME, "permute(): duplicate dims are not allowed.");
        seen[perm[i]] = true;
    }
    FcStatus s = fc_realize(ctx, t, err);
    if (s)
        return s;
    for (int i = 0; i < nd; i++) {
        sz[i] = t->shape[perm[i]];
        st[i] = t->strides[perm[i]];
    }
    return fc_as_strided(ctx, t, nd, sz, st, t->offset, out, err);
}

FcStatus fc_transpose(FcCtx *ctx, FcTensor *t, int64_t d0, int64_t d1, FcTensor **out, FcError *err)
{
    *out = NULL;
    int a, b;
    FcStatus s = fc_wrap_dim(d0, t->ndim, &a, err);
    if (!s)
        s = fc_wrap_dim(d1, t->ndim, &b, err);
    if (!s)
        s = fc_realize(ctx, t, err);
    if (s)
        return s;
    int64_t sz[FC_MAX_DIMS], st[FC_MAX_DIMS];
    memcpy(sz, t->shape, (size_t)t->ndim * sizeof *sz);
    memcpy(st, t->strides, (size_t)t->ndim * sizeof *st);
    if (t->ndim > 0) {
        sz[a] = t->shape[b];
        sz[b] = t->shape[a];
        st[a] = t->strides[b];
        st[b] = t->strides[a];
    }
    return fc_as_strided(ctx, t, t->ndim, sz, st, t->offset, out, err);
}

FcStatus fc_diagonal(FcCtx *ctx, FcTensor *t, int64_t offset, int64_t d1, int64_t d2, FcTensor **out, FcError *err)
{
    *out = NULL;
    int a, b;
    FcStatus s = fc_wrap_dim(d1, t->ndim, &a, err);
    if (!s)
        s = fc_wrap_dim(d2, t->ndim, &b, err);
    if (!s && a == b)
        s = fc_errf(err, FC_ERR_RUNTIME, "diagonal dimensions cannot be identical %lld, %lld", (long long)d1,
                    (long long)d2);
    if (!s)
        s = fc_realize(ctx, t, err);
    if (s)
        return s;
    int64_t sa = t->shape[a], sb = t->shape[b];
    int64_t len = offset >= 0 ? (sa < sb - offset ? sa : sb - offset) : (sa + offset < sb ? sa + offset : sb);
    int64_t at = t->offset;
    if (len <= 0)
        len = 0;
    else
        at += offset >= 0 ? offset * t->strides[b] : -offset * t->strides[a];
    int64_t sz[FC_MAX_DIMS], st[FC_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < t->ndim; d++)
        if (d != a && d != b) {
            sz[n] = t->shape[d];
            st[n++] = t->strides[d];
        }
    sz[n] = len;
    st[n++] = t->strides[a] + t->strides[b];
    return fc_as_strided(ctx, t, n, sz, st, at, out, err);
}

/* "[1, 2]" for PyTorch's messages that print an IntArrayRef. */
static const char *int_list_str(char *buf, size_t cap, int n, const int64_t *v)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (k < cap)
        snprintf(buf + k, cap - k, "]");
    return buf;
}

FcStatus fc_as_strided_checked(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                               const int64_t *storage_offset, FcTensor **out, FcError *err)
{
    *out = NULL;
    char a[512], b[512];
    if (ndim > FC_MAX_DIMS)
        return too_many_dims(err, ndim);
    for (int d = 0; d < ndim; d++)
        if (strides[d] < 0)
            return fc_errf(err, FC_ERR_RUNTIME, "as_strided: Negative strides are not supported at the moment, got strides: %s",
                           int_list_str(a, sizeof a, ndim, strides));
    FcStatus s = fc_realize(ctx, t, err);
    if (s)
        return s;
    int64_t offset = storage_offset ? *storage_offset : t->offset;
    /* at::detail::computeStorageNbytes: 1 + the last element's offset, in unsigned arithmetic (a
     * negative size overflows), 0 when a size is 0; then the offset's bytes. */
    size_t item = fc_dtype_size(t->dtype);
    uint64_t need = 1;
    bool over = false, empty = false;
    for (int d = 0; d < ndim && !empty; d++) {
        uint64_t span;
        if (shape[d] == 0)
            empty = true;
        over |= __builtin_mul_overflow((uint64_t)strides[d], (uint64_t)shape[d] - 1, &span);
        over |= __builtin_add_overflow(need, span, &need);
    }
    over |= __builtin_mul_overflow(need, (uint64_t)item, &need);
    if (over && !empty)
        return fc_errf(err, FC_ERR_RUNTIME, "Storage size calculation overflowed with sizes=%s and strides=%s",
                       int_list_str(a, sizeof a, ndim, shape), int_list_str(b, sizeof b, ndim, strides));
    /* then the offset's bytes (an offset so large that they overflow is out of bounds too, where
     * PyTorch's int64 arithmetic wraps) */
    int64_t off_bytes = 0, need_bytes = INT64_MAX;
    bool oob = __builtin_mul_overflow(offset, (int64_t)item, &off_bytes) ||
               __builtin_add_overflow((int64_t)need, off_bytes, &need_bytes) || need_bytes > (int64_t)t->storage->nbytes;
    if (!empty && oob)
        return fc_errf(err, FC_ERR_RUNTIME,
                       "setStorage: sizes %s, strides %s, storage offset %lld, and itemsize %zu requiring a storage "
                       "size of %lld are out of bounds for storage of size %zu",
                       int_list_str(a, sizeof a, ndim, shape), int_list_str(b, sizeof b, ndim, strides), (long long)offset,
                       item, (long long)need_bytes, t->storage->nbytes);
    if (offset < 0)
        return fc_errf(err, FC_ERR_RUNTIME, "Tensor: invalid storage offset %lld", (long long)offset);
    return fc_as_strided(ctx, t, ndim, shape, strides, offset, out, err);
}

FcStatus fc_unfold(FcCtx *ctx, FcTensor *t, int64_t dim, int64_t size, int64_t step, FcTensor **out, FcError *err)
{
    *out = NULL;
    int d;
    FcStatus s = fc_wrap_dim(dim, t->ndim, &d, err);
    if (s)
        return s;
    int64_t max = t->ndim == 0 ? 1 : t->shape[d];
    if (size > max)
        return fc_errf(err, FC_ERR_RUNTIME, "maximum size for tensor at dimension %d is %lld but size is %lld", d,
                       (long long)max, (long long)size);
    if (step <= 0)
        return fc_errf(err, FC_ERR_RUNTIME, "step is %lld but must be > 0", (long long)step);
    if (t->ndim + 1 > FC_MAX_DIMS)
        return too_many_dims(err, t->ndim + 1);
    s = fc_realize(ctx, t, err);
    if (s)
        return s;
    int64_t sz[FC_MAX_DIMS], st[FC_MAX_DIMS];
    memcpy(sz, t->shape, (size_t)t->ndim * sizeof *sz);
    memcpy(st, t->strides, (size_t)t->ndim * sizeof *st);
    sz[t->ndim] = size;
    st[t->ndim] = t->ndim == 0 ? 1 : t->strides[d];
    if (t->ndim > 0) {
        sz[d] = (sz[d] - size) / step + 1;
        st[d] *= step;
    }
    return fc_as_strided_checked(ctx, t, t->ndim + 1, sz, st, NULL, out, err);
}

FcStatus fc_expand_check(const FcTensor *t, int ndim, const int64_t *shape, FcError *err)
{
    char a[256], b[512], c[512];
    if (ndim < t->ndim)
        return fc_errf(err, FC_ERR_RUNTIME,
                    "expand(%s{%s}, size=%s): the number of sizes provided (%d) must be greater or equal to the "
                    "number of dimensions in the tensor (%d)",
                    type_str(a, sizeof a, t), fc_shape_str(b, sizeof b, t->ndim, t->shape),
                    fc_shape_str(c, sizeof c, ndim, shape), ndim, t->ndim);
    if (ndim > FC_MAX_DIMS)
        return too_many_dims(err, ndim);
    for (int i = ndim - 1; i >= 0 && t->ndim > 0; i--) {
        int dim = t->ndim - (ndim - i);
        int64_t size = dim >= 0 ? t->shape[dim] : 1, target = shape[i];
        if (target == -1 && dim < 0)
            return fc_errf(err, FC_ERR_RUNTIME,
                        "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension %d",
                        i);
        if (target != -1 && size != target && size != 1)
            return fc_errf(err, FC_ERR_RUNTIME,
                        "The expanded size of the tensor (%lld) must match the existing size (%lld) at "
                        "non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                        (long long)target, (long long)size, i, fc_shape_str(b, sizeof b, ndim, shape),
                        fc_shape_str(c, sizeof c, t->ndim, t->shape));
    }
    for (int i = 0; i < ndim; i++)
        if (shape[i] < -1 || (shape[i] == -1 && t->ndim == 0))   /* as_strided's size check, as torch reports it */
            return fc_errf(err, FC_ERR_RUNTIME, "numel: integer multiplication overflow");
    return FC_OK;
}

FcStatus fc_expand(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *shape, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcStatus s = fc_expand_check(t, ndim, shape, err);
    if (s)
        return s;
    /* inferExpandGeometry needs t's strides: the input is realised (a stride-0 view of it). */
    s = fc_realize(ctx, t, err);
    if (s)
        return s;
    int64_t sz[FC_MAX_DIMS], st[FC_MAX_DIMS];
    for (int i = ndim - 1; i >= 0; i--) {
        int dim = t->ndim - (ndim - i);
        int64_t size = dim >= 0 ? t->shape[dim] : 1;
        int64_t stride = dim >= 0 ? t->strides[dim] : (i + 1 < ndim ? fc_mul_wrap(sz[i + 1], st[i + 1]) : 1);
        if (t->ndim == 0) {
            /* A 0-dim tensor takes the sizes as given, every stride 0. */
            size = shape[i];
            stride = 0;
        } else if (shape[i] != -1 && size != shape[i]) {
            size = shape[i];
            stride = 0;
        }
        sz[i] = size;
        st[i] = stride;
    }
    int64_t numel;
    if (!fc_shape_numel(ndim, sz, &numel))
        return fc_numel_overflow(err);
    return fc_as_strided(ctx, t, ndim, sz, st, t->offset, out, err);
}

FcStatus fc_squeeze(FcCtx *ctx, FcTensor *t, uint64_t dim_mask, FcTensor **out, FcError *err)
{
    *out = NULL;
    int nd = t->ndim;
    for (int d = 63; d >= (nd > 0 ? nd : 1); d--)
        if ((dim_mask >> d) & 1) {
            int w;
            return fc_wrap_dim(d, nd, &w, err);
        }
    FcStatus s = fc_realize(ctx, t, err);
    if (s)
        return s;
    int64_t sz[FC_MAX_DIMS], st[FC_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < nd; d++) {
        bool chosen = dim_mask == 0 || ((dim_mask >> d) & 1);
        if (chosen && t->shape[d] == 1)
            continue;
        sz[n] = t->shape[d];
        st[n++] = t->strides[d];
    }
    return fc_as_strided(ctx, t, n, sz, st, t->offset, out, err);
}

FcStatus fc_unsqueeze(FcCtx *ctx, FcTensor *t, int64_t dim, FcTensor **out, FcError *err)
{
    *out = NULL;
    int nd = t->ndim, d;
    FcStatus s = fc_wrap_dim(dim, nd + 1, &d, err);
    if (s)
        return s;
    if (nd + 1 > FC_MAX_DIMS)
        return too_many_dims(err, nd + 1);
    s = fc_realize(ctx, t, err);
    if (s)
        return s;
    int64_t sz[FC_MAX_DIMS], st[FC_MAX_DIMS];
    for (int i = 0, j = 0; i <= nd; i++) {
        if (i == d) {
            sz[i] = 1;
            st[i] = d >= nd ? 1 : fc_mul_wrap(t->shape[d], t->strides[d]);
        } else {
            sz[i] = t->shape[j];
            st[i] = t->strides[j++];
        }
    }
    return fc_as_strided(ctx, t, nd + 1, sz, st, t->offset, out, err);
}

FcStatus fc_flatten(FcCtx *ctx, FcTensor *t, int64_t start, int64_t end, FcTensor **out, FcError *err)
{
    *out = NULL;
    int nd = t->ndim, a, b;
    FcStatus s = fc_wrap_dim(start, nd, &a, err);
    if (!s)
        s = fc_wrap_dim(end, nd, &b, err);
    if (s)
        return s;
    if (a > b)
        return fc_errf(err, FC_ERR_RUNTIME, "flatten() has invalid args: start_dim cannot come after end_dim");
    if (nd == 0) {
        int64_t one = 1;
        return fc_reshape(ctx, t, 1, &one, out, err);
    }
    if (a == b) {
        *out = fc_tensor_retain(t);
        return FC_OK;
    }
    int64_t sz[FC_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < a; d++)
        sz[n++] = t->shape[d];
    /* (0, 2**62, 4).flatten(1) would make a dim of 2**64: refused (PyTorch wraps it to 0). */
    int64_t slice;
    if (!fc_shape_numel(b - a + 1, t->shape + a, &slice))
        return fc_numel_overflow(err);
    sz[n++] = slice;
    for (int d = b + 1; d < nd; d++)
        sz[n++] = t->shape[d];
    return fc_reshape(ctx, t, n, sz, out, err);
}

/* ---- memory formats ---- */

static bool is_contiguous_as(const FcTensor *t, FcMemoryFormat mf)
{
    switch (mf) {
    case FC_MF_CHANNELS_LAST:
        return geo_cl_contiguous(t->ndim, t->shape, t->strides);
    case FC_MF_CHANNELS_LAST_3D:
        return geo_cl3d_contiguous(t->ndim, t->shape, t->strides);
    default:
        /* TensorImpl::is_contiguous(Preserve) answers for C order, as for Contiguous. */
        return geo_contiguous(t->ndim, t->shape, t->strides);
    }
}

FcStatus fc_is_contiguous(FcCtx *ctx, FcTensor *t, FcMemoryFormat mf, bool *out, FcError *err)
{
    FcStatus s = fc_realize(ctx, t, err);
    if (s)
        return s;
    *out = is_contiguous_as(t, mf);
    return FC_OK;
}

FcStatus fc_contiguous(FcCtx *ctx, FcTensor *t, FcMemoryFormat mf, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcStatus s = fc_realize(ctx, t, err);
    if (s)
        return s;
    if (is_contiguous_as(t, mf)) {
        *out = fc_tensor_retain(t);
        return FC_OK;
    }
    if (mf == FC_MF_PRESERVE)
        return fc_errf(err, FC_ERR_RUNTIME, "preserve memory format is unsupported by the contiguous operator");
    return fc_clone(ctx, t, mf, out, err);
}

/* A new tensor of t's shape with the given strides (NULL: C order) holding t's values. */
static FcStatus copy_into_new(FcCtx *ctx, FcTensor *t, FcDType dt, FcDevice dev, const int64_t *strides,
                              FcTensor **out, FcError *err)
{
    *out = NULL;
    FcTensor *r = NULL;
    FcStatus s = fc_empty(ctx, dt, dev, t->ndim, t->shape, strides, &r, err);
    if (!s)
        s = fc_assign(ctx, r, t, err);
    if (s) {
        fc_tensor_release(r);
        return s;
    }
    *out = r;
    return FC_OK;
}

FcStatus fc_like_strides(FcCtx *ctx, FcTensor *t, FcMemoryFormat mf, int64_t *strides, FcError *err)
{
    if (mf != FC_MF_PRESERVE)
        return fc_format_strides(mf, t->ndim, t->shape, strides, err);
    /* Dense: the same strides; otherwise dense strides in the input's dim order. A lazy input
     * has no strides until it is realised. */
    FcStatus s = fc_realize(ctx, t, err);
    if (s)
        return s;
    if (geo_non_overlapping_and_dense(t->ndim, t->shape, t->strides))
        memcpy(strides, t->strides, (size_t)t->ndim * sizeof *strides);
    else
        infer_dense_strides(t->ndim, t->shape, t->strides, strides);
    return FC_OK;
}

FcStatus fc_clone(FcCtx *ctx, FcTensor *t, FcMemoryFormat mf, FcTensor **out, FcError *err)
{
    *out = NULL;
    int64_t st[FC_MAX_DIMS];
    FcStatus s = fc_like_strides(ctx, t, mf, st, err);
    return s ? s : copy_into_new(ctx, t, t->dtype, t->device, st, out, err);
}

/* ---- cat and stack ---- */

/* The geometry cat sees for input i: the tensor itself, or (stack at the last dim) the tensor
 * unsqueezed there. Strides are needed only where a memory format can be suggested (4-D, 5-D);
 * lazy inputs are realised only then. */
typedef struct CatPart {
    FcTensor *t;
    int ndim;
    int64_t shape[FC_MAX_DIMS];
    int64_t strides[FC_MAX_DIMS];
    bool have_strides;
} CatPart;

static FcStatus part_init(FcCtx *ctx, CatPart *p, FcTensor *t, int unsqueeze_at, FcError *err)
{
    p->t = t;
    p->ndim = t->ndim + (unsqueeze_at >= 0);
    if (p->ndim > FC_MAX_DIMS)
        return too_many_dims(err, p->ndim);
    p->have_strides = !fc_tensor_is_lazy(t) || p->ndim == 4 || p->ndim == 5;
    if (p->have_strides) {
        FcStatus s = fc_realize(ctx, t, err);
        if (s)
            return s;
    }
    for (int i = 0, j = 0; i < p->ndim; i++) {
        if (i == unsqueeze_at) {
            p->shape[i] = 1;
            p->strides[i] = 1;      /* unsqueeze at the end: stride 1 */
        } else {
            p->shape[i] = t->shape[j];
            p->strides[i] = p->have_strides ? t->strides[j] : 0;
            j++;
        }
    }
    return FC_OK;
}

static FcMemoryFormat part_suggest(const CatPart *p)
{
    if (!p->have_strides)
        return FC_MF_CONTIGUOUS;
    return geo_suggest(p->ndim, p->shape, p->strides);
}

/* cat over n parts along dim (torch's cat meta function and its checks; stacking: each part
 * goes into its own index along dim, with the unsqueezed dim dropped from the slice). */
static FcStatus cat_parts(FcCtx *ctx, int n, CatPart *parts, int64_t dim_in, bool stacking, FcTensor **out,
                          FcError *err)
{
    *out = NULL;
    for (int i = 0; i < n; i++)
        if (parts[i].ndim == 0)
            return fc_errf(err, FC_ERR_RUNTIME, "zero-dimensional tensor (at position %d) cannot be concatenated", i);
    /* legacy_cat_wrap_dim: wrap against the first tensor that is not a legacy empty 1-D [0]. */
    int dim = -1;
    int valid = -1;
    for (int i = 0; i < n; i++) {
        bool skip = parts[i].ndim == 1 && parts[i].shape[0] == 0;
        if (!skip) {
            FcStatus s = fc_wrap_dim(dim_in, parts[i].ndim, &dim, err);
            if (s)
                return s;
            valid = i;
            break;
        }
    }
    if (n == 0)
        return fc_errf(err, FC_ERR_RUNTIME, "torch.cat(): expected a non-empty list of Tensors");
    /* Output memory format: channels-last only when every input suggests the same one. */
    FcMemoryFormat mf = FC_MF_CONTIGUOUS;
    for (int i = 0; i < n; i++) {
        FcMemoryFormat f = part_suggest(&parts[i]);
        if (f == FC_MF_CONTIGUOUS || (i > 0 && f != mf)) {
            mf = FC_MF_CONTIGUOUS;
            break;
        }
        mf = f;
    }
    /* result_type over tensors with dims: promotion among them is associative. */
    FcDType dt = parts[0].t->dtype;
    for (int i = 1; i < n; i++) {
        FcOperand ops[2] = {{FC_OPERAND_TENSOR, dt}, {FC_OPERAND_TENSOR, parts[i].t->dtype}};
        dt = fc_result_type(ops, 2);
    }
    FcTensor **ts = mem_calloc((size_t)(n > 0 ? n : 1), sizeof *ts);
    if (!ts)
        return fc_nomem(err);
    for (int i = 0; i < n; i++)
        ts[i] = parts[i].t;
    FcDevice dev;
    FcStatus dst = fc_common_device(ts, n, &dev, err);
    mem_free(ts);
    if (dst)
        return dst;
    int nd = 1;
    int64_t sz[FC_MAX_DIMS] = {0};
    if (valid >= 0) {
        const CatPart *v = &parts[valid];
        int64_t at_dim = 0;
        for (int i = 0; i < n; i++) {
            const CatPart *p = &parts[i];
            if (p->ndim == 1 && p->shape[0] == 0)
                continue;
            if (p->ndim != v->ndim)
                return fc_errf(err, FC_ERR_RUNTIME, "Tensors must have same number of dimensions: got %d and %d", v->ndim,
                            p->ndim);
            for (int d = 0; d < v->ndim; d++)
                if (d != dim && p->shape[d] != v->shape[d])
                    return fc_errf(err, FC_ERR_RUNTIME,
                                "Sizes of tensors must match except in dimension %d. Expected size %lld but got size "
                                "%lld for tensor number %d in the list.",
                                dim, (long long)v->shape[d], (long long)p->shape[d], i);
            if (__builtin_add_overflow(at_dim, p->shape[dim], &at_dim))
                return fc_numel_overflow(err);
        }
        nd = v->ndim;
        memcpy(sz, v->shape, (size_t)nd * sizeof *sz);
        sz[dim] = at_dim;
    } else {
        /* every part a legacy empty [0]: a copy of one that requires grad keeps the graph */
        for (int i = 0; i < n; i++)
            if (fc_requires_grad(parts[i].t)) {
                FcTensor *c = NULL;
                FcStatus s = fc_clone(ctx, parts[i].t, FC_MF_CONTIGUOUS, &c, err);
                if (!s && c->dtype != dt)
                    s = fc_cast(ctx, c, dt, out, err);
                else if (!s)
                    *out = fc_tensor_retain(c);
                fc_tensor_release(c);
                return s;
            }
        mf = FC_MF_CONTIGUOUS;
    }
    int64_t st[FC_MAX_DIMS];
    FcStatus s = fc_format_strides(mf, nd, sz, st, err);
    if (s)
        return s;
    FcTensor *r = NULL;
    s = fc_empty(ctx, dt, dev, nd, sz, st, &r, err);
    if (s)
        return s;
    int64_t pos = 0;
    for (int i = 0; i < n && valid >= 0; i++) {
        const CatPart *p = &parts[i];
        if (p->ndim == 1 && p->shape[0] == 0)
            continue;
        int64_t vsz[FC_MAX_DIMS], vst[FC_MAX_DIMS];
        int vn = 0;
        for (int d = 0; d < nd; d++) {
            if (stacking && d == dim)
                continue;
            vsz[vn] = d == dim ? p->shape[d] : sz[d];
            vst[vn++] = st[d];
        }
        FcTensor *slice = NULL;
        s = fc_as_strided(ctx, r, vn, vsz, vst, r->offset + pos * st[dim], &slice, err);
        if (!s)
            s = fc_assign(ctx, slice, p->t, err);
        fc_tensor_release(slice);
        if (s) {
            fc_tensor_release(r);
            return s;
        }
        pos += p->shape[dim];
    }
    *out = r;
    return FC_OK;
}

static FcStatus parts_new(int n, CatPart **out, FcError *err)
{
    *out = mem_calloc(n > 0 ? (size_t)n : 1, sizeof **out);
    return *out ? FC_OK : fc_nomem(err);
}

FcStatus fc_cat(FcCtx *ctx, int n, FcTensor *const *ts, int64_t dim, FcTensor **out, FcError *err)
{
    *out = NULL;
    CatPart *parts;
    FcStatus s = parts_new(n, &parts, err);
    for (int i = 0; i < n && !s; i++)
        s = part_init(ctx, &parts[i], ts[i], -1, err);
    if (!s)
        s = cat_parts(ctx, n, parts, dim, false, out, err);
    mem_free(parts);
    return s;
}

FcStatus fc_stack(FcCtx *ctx, int n, FcTensor *const *ts, int64_t dim, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (n == 0)
        return fc_errf(err, FC_ERR_RUNTIME, "stack expects a non-empty TensorList");
    int nd = ts[0]->ndim, d;
    FcStatus s = fc_wrap_dim(dim, nd + 1, &d, err);
    if (s)
        return s;
    char a[512], b[512];
    for (int i = 1; i < n; i++) {
        bool same = ts[i]->ndim == nd;
        for (int k = 0; k < nd && same; k++)
            same = ts[i]->shape[k] == ts[0]->shape[k];
        if (!same)
            return fc_errf(err, FC_ERR_RUNTIME, "stack expects each tensor to be equal size, but got %s at entry 0 and %s at "
                        "entry %d", fc_shape_str(a, sizeof a, nd, ts[0]->shape),
                        fc_shape_str(b, sizeof b, ts[i]->ndim, ts[i]->shape), i);
    }
    if (nd + 1 > FC_MAX_DIMS)
        return too_many_dims(err, nd + 1);
    CatPart *parts;
    s = parts_new(n, &parts, err);
    if (s)
        return s;
    FcTensor *r = NULL;
    if (d < nd) {
        /* cat along d, then view with the stacked dim split off (always viewable). */
        for (int i = 0; i < n && !s; i++)
            s = part_init(ctx, &parts[i], ts[i], -1, err);
        if (!s)
            s = cat_parts(ctx, n, parts, d, false, &r, err);
        if (!s) {
            int64_t sz[FC_MAX_DIMS];
            for (int i = 0, j = 0; i <= nd; i++)
                sz[i] = i == d ? n : ts[0]->shape[j++];
            s = fc_view(ctx, r, nd + 1, sz, out, err);
            fc_tensor_release(r);
        }
    } else {
        /* cat of the inputs unsqueezed at the end (torch's get_stack_inputs). */
        for (int i = 0; i < n && !s; i++)
            s = part_init(ctx, &parts[i], ts[i], nd, err);
        if (!s)
            s = cat_parts(ctx, n, parts, d, true, out, err);
    }
    mem_free(parts);
    return s;
}

/* ---- dtype and device ---- */

FcStatus fc_to(FcCtx *ctx, FcTensor *t, FcDType dt, FcDevice dev, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (fc_device_eq(t->device, dev)) {
        if (t->dtype == dt) {
            *out = fc_tensor_retain(t);
            return FC_OK;
        }
        return fc_cast(ctx, t, dt, out, err);
    }
    FcBackend *be = NULL;
    FcStatus s = fc_ctx_backend(ctx, dev, &be, err);
    if (s)
        return s;
    /* _to_copy with memory_format=preserve: dense inputs keep their strides, others take the
     * suggested format. The copy (and cast) is made on t's device, then moved as bytes. */
    s = fc_realize(ctx, t, err);
    if (s)
        return s;
    int64_t st[FC_MAX_DIMS];
    bool dense = geo_non_overlapping_and_dense(t->ndim, t->shape, t->strides);
    if (dense && t->dtype == dt)
        return fc_move_device(ctx, t, dev, out, err);
    if (dense)
        memcpy(st, t->strides, (size_t)t->ndim * sizeof *st);
    else
        fc_format_strides(geo_suggest(t->ndim, t->shape, t->strides), t->ndim, t->shape, st, NULL);
    FcTensor *tmp = NULL;
    s = copy_into_new(ctx, t, dt, t->device, st, &tmp, err);
    if (!s)
        s = fc_move_device(ctx, tmp, dev, out, err);
    fc_tensor_release(tmp);
    return s;
}

FcStatus fc_move_device(FcCtx *ctx, FcTensor *t, FcDevice dev, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcStatus s = fc_realize(ctx, t, err);
    if (s)
        return s;
    if (fc_device_eq(t->storage->device, dev)) {
        *out = fc_tensor_retain(t);
        return FC_OK;
    }
    if (!geo_non_overlapping_and_dense(t->ndim, t->shape, t->strides)) {
        FcTensor *d = NULL;
        s = fc_clone(ctx, t, FC_MF_PRESERVE, &d, err);
        if (!s)
            s = fc_move_device(ctx, d, dev, out, err);
        fc_tensor_release(d);
        return s;
    }
    /* Dense: the elements fill numel consecutive slots from the lowest address. */
    int64_t lo = t->offset, numel = fc_tensor_numel(t);
    for (int i = 0; i < t->ndim; i++)
        if (t->strides[i] < 0 && t->shape[i] > 0)
            lo += t->strides[i] * (t->shape[i] - 1);
    size_t es = fc_dtype_size(t->dtype), nbytes = (size_t)numel * es;
    FcBackend *from = NULL, *to = NULL;
    s = fc_ctx_backend(ctx, dev, &to, err);
    if (!s && t->storage->device.type != FC_DEV_CPU)
        s = fc_ctx_backend(ctx, t->storage->device, &from, err);
    FcStorage *st = NULL;
    if (!s)
        s = fc_storage_new(ctx, dev, nbytes, &st, err);
    if (s)
        return s;
    const char *src = (const char *)t->storage->data + lo * (int64_t)es;
    if (nbytes == 0)
        s = FC_OK;
    else if (!from)
        s = to->from_host(to, st->data, src, nbytes, err);
    else if (dev.type == FC_DEV_CPU)
        s = from->to_host(from, st->data, src, nbytes, err);
    else {
        /* Between two devices: through host memory. */
        void *h = mem_malloc(nbytes);
        s = h ? from->to_host(from, h, src, nbytes, err) : fc_nomem(err);
        if (!s)
            s = to->from_host(to, st->data, h, nbytes, err);
        mem_free(h);
    }
    FcTensor *r = s ? NULL : fc_tensor_view_over(t, st);
    fc_storage_release(st);
    if (!s && !r)
        s = fc_nomem(err);
    if (s)
        return s;
    r->device = dev;
    r->offset = t->offset - lo;
    s = fc_grad_move(ctx, t, r, err);
    if (s)
        fc_tensor_release(r);
    else
        *out = r;
    return s;
}
