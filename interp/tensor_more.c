/* tensor_more.c — the IMPL functions of the operators PyTorch users reach for next (tensor_ops.def's
 * "statistics, scans, sorting" and "in-place methods" sections): std/var, cumsum/cumprod,
 * sort/argsort/topk/unique, kthvalue/median/nanmedian/mode/msort/cummax/cummin,
 * nansum/nanmean/aminmax, repeat/chunk/split/flip/roll/tril/triu, norm, masked_fill,
 * allclose/isclose, einsum, the in-place `_` methods, and the composites after trace (kron,
 * block_diag, cartesian_prod, tensordot, inner, cross, logspace, bincount, histc, trapezoid,
 * vander, dist, equal, isreal, isin, unique_consecutive, cov, corrcoef).
 *
 * Each is built from fcdim's lazy operations where it can be (a flip or roll an index_select by
 * an index expression, einsum one product summed), so the results stay lazy and fuse with what
 * uses them; sorting and unique order the values on the host (a comparison sort has no expression
 * form) and gather the values lazily by the indices found; a scan on the CPU is one host pass
 * (elsewhere, or with a gradient to record, a masked reduction). PyTorch 1.13 is the specification, messages included. Depends on tensor.h and fcdim.h.
 */
#include "tensor.h"
#include "mem.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARG(name) tensor_arg(sig, a, name)

/* A result of one fcdim call: wraps *r on success. */
static bool result(Interp *I, FcStatus st, const FcError *e, FcTensor *r, Value *out)
{
    return tensor_check(I, st, e) && tensor_value_steal(I, r, out);
}

/* result for a chain whose r (NULL until made) may hold a tensor when a later step failed: released
 * then. */
static bool chain_result(Interp *I, FcStatus st, const FcError *e, FcTensor *r, Value *out)
{
    if (st != FC_OK) {
        fc_tensor_release(r);
        return tensor_check(I, st, e);
    }
    return tensor_value_steal(I, r, out);
}

/* *t = op(*t, ...) for a chain of steps: releases the old *t; on failure *t is NULL. */
static FcStatus step(FcStatus st, FcTensor **t, FcTensor **next)
{
    fc_tensor_release(*t);
    *t = st == FC_OK ? *next : NULL;
    return st;
}

/* A dense C-contiguous host copy of t, its dims permuted by perm (NULL: as they are) and converted
 * to dtype, and a view of it: *h holds what the view borrows, for the caller to release (NULL on
 * failure, with the error raised). */
static bool host_dense(Interp *I, FcTensor *t, const int64_t *perm, FcDType dtype, FcTensor **h, FcView *v)
{
    FcError e;
    FcTensor *p = NULL, *tmp;
    *h = NULL;
    FcStatus st = perm ? fc_permute(I->fc, t, t->ndim, perm, &p, &e) : FC_OK;
    if (st == FC_OK) st = fc_to(I->fc, p ? p : t, dtype, fc_cpu(), h, &e);
    if (st == FC_OK) st = step(fc_contiguous(I->fc, *h, FC_MF_CONTIGUOUS, &tmp, &e), h, &tmp);
    if (st == FC_OK) st = fc_host_view(I->fc, *h, v, &e);
    fc_tensor_release(p);
    if (st != FC_OK) {
        fc_tensor_release(*h);
        *h = NULL;
    }
    return tensor_check(I, st, &e);
}

/* Writes an fcdim-style error (for the messages built here). */
static FcStatus ferr(FcError *e, FcStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static FcStatus ferr(FcError *e, FcStatus st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return st;
}

static FcStatus int_scalar(FcCtx *ctx, FcDType dt, int64_t v, FcTensor **out, FcError *e)
{
    FcScalar s;
    if (fc_dtype_is_float(dt)) s.f = (double)v;
    else s.i = v;
    return fc_scalar(ctx, dt, s, false, out, e);
}

static FcStatus float_scalar(FcCtx *ctx, double v, FcTensor **out, FcError *e)
{
    FcScalar s;
    s.f = v;
    return fc_scalar(ctx, FC_FLOAT64, s, true, out, e);
}

/* op(a, wrapped scalar v): the scalar takes no part in the dtype unless its category is higher. */
static FcStatus binary_scalar(FcCtx *ctx, FcOp op, FcTensor *a, double v, FcTensor **out, FcError *e)
{
    FcTensor *s = NULL;
    FcStatus st = float_scalar(ctx, v, &s, e);
    if (st == FC_OK) st = fc_binary(ctx, op, a, s, out, e);
    fc_tensor_release(s);
    return st;
}

static bool need_float(Interp *I, const FcTensor *t, const char *msg)
{
    if (fc_dtype_is_float(t->dtype)) return true;
    return err_raise(I, TDL_ERR_RUNTIME, msg, fc_dtype_torch_name(t->dtype));
}

/* A tuple of n tensors (stolen from ts, which is then all NULL; released on failure), with
 * torch.return_types' names when fields is not NULL. */
static bool tuple_of(Interp *I, FcTensor **ts, int n, const TupleFields *fields, Value *out)
{
    if (fields && fields->grad && n > 0) fc_grad_name(ts[0], fields->grad);
    TupleObj *tu = tuple_alloc(I, (size_t)n);
    bool ok = tu != NULL;
    for (int k = 0; k < n; k++) {
        if (ok) ok = tensor_value_steal(I, ts[k], &tu->items[k]);
        else fc_tensor_release(ts[k]);
        ts[k] = NULL;
    }
    if (!ok) {
        if (tu) val_decref(I, v_obj(V_TUPLE, &tu->h));
        return false;
    }
    tu->fields = fields;
    *out = v_obj(V_TUPLE, &tu->h);
    return true;
}

/* t[:, ..., start:start+len] along dim d: a view. */
static FcStatus narrow(FcCtx *ctx, FcTensor *t, int d, int64_t start, int64_t len, FcTensor **out, FcError *e)
{
    FcIndex ix[FC_MAX_DIMS];
    for (int k = 0; k < d; k++) ix[k] = (FcIndex){.kind = FC_IX_SLICE, .step = 1};
    ix[d] = (FcIndex){.kind = FC_IX_SLICE, .start = start, .stop = start + len, .has_start = true, .has_stop = true,
                      .step = 1};
    return fc_index(ctx, t, d + 1, ix, out, e);
}

/* t with dims d gathered by index (an int64 1-D tensor): a lazy copy. */
static FcStatus select_by(FcCtx *ctx, FcTensor *t, int d, FcTensor *index, FcTensor **out, FcError *e)
{
    return fc_index_select(ctx, t, d, index, out, e);
}

/* The int64 index k -> f(k) for k in [0, n): (iota * mul + add) mod m (m 0: no mod). */
static FcStatus index_expr(FcCtx *ctx, int64_t n, int64_t mul, int64_t add, int64_t m, FcTensor **out, FcError *e)
{
    FcTensor *x = NULL, *s = NULL, *r = NULL;
    FcStatus st = fc_iota(ctx, n, &x, e);
    if (st == FC_OK && mul != 1) {
        st = int_scalar(ctx, FC_INT64, mul, &s, e);
        if (st == FC_OK) st = step(fc_binary(ctx, FC_OP_MUL, x, s, &r, e), &x, &r);
        fc_tensor_release(s);
        s = NULL;
    }
    if (st == FC_OK && add != 0) {
        st = int_scalar(ctx, FC_INT64, add, &s, e);
        if (st == FC_OK) st = step(fc_binary(ctx, FC_OP_ADD, x, s, &r, e), &x, &r);
        fc_tensor_release(s);
        s = NULL;
    }
    if (st == FC_OK && m > 0) {
        st = int_scalar(ctx, FC_INT64, m, &s, e);
        if (st == FC_OK) st = step(fc_binary(ctx, FC_OP_MOD, x, s, &r, e), &x, &r);
        fc_tensor_release(s);
    }
    if (st != FC_OK) fc_tensor_release(x);
    else *out = x;
    return st;
}

/* 0..n-1 as a tensor of ndim dims, all of size 1 but dim `at`, on dev (a view of the index
 * expression is stored, on the CPU: it is moved where the operation runs). */
static FcStatus iota_along(FcCtx *ctx, int64_t n, int ndim, int at, FcDevice dev, FcTensor **out, FcError *e)
{
    FcTensor *x = NULL, *tmp;
    int64_t shape[FC_MAX_DIMS + 1];
    for (int k = 0; k < ndim; k++) shape[k] = k == at ? n : 1;
    FcStatus st = fc_iota(ctx, n, &x, e);
    if (st == FC_OK) st = step(fc_reshape(ctx, x, ndim, shape, &tmp, e), &x, &tmp);
    if (st == FC_OK && !x->unplaced && !fc_device_eq(x->device, dev))
        st = step(fc_to(ctx, x, FC_INT64, dev, &tmp, e), &x, &tmp);
    if (st != FC_OK) fc_tensor_release(x);
    else *out = x;
    return st;
}

/* ---- std / var ----------------------------------------------------------------------------- */

/* var over dims (mask 0: all) with divisor max(0, N - correction): PyTorch's two-pass formula,
 * sum((x - mean)^2) / (N - correction). */
static bool variance(Interp *I, const TensorSig *sig, TensorArg *a, bool is_std, Value *out)
{
    FcTensor *x = a[0].t, *m = NULL, *d = NULL, *r = NULL, *t;
    TensorArg *dim = ARG("dim"), *unb = ARG("unbiased"), *corr = ARG("correction"), *keep = ARG("keepdim");
    FcError e;
    uint64_t mask;
    if (!need_float(I, x, "std and var only support floating point and complex dtypes")) return false;
    if (!tensor_dim_mask(I, x, dim, &mask)) return false;
    int64_t n = 1;
    for (int k = 0; k < x->ndim; k++)
        if (!mask || (mask >> k & 1)) n *= x->shape[k];
    int64_t c = corr ? (corr->none ? 1 : corr->i) : unb && !unb->b ? 0 : 1;
    double div = n - c > 0 ? (double)(n - c) : 0.0;
    bool keepdim = keep && keep->b;
    FcTensor *wide = NULL;
    FcStatus st = FC_OK;
    if (fc_dtype_compute(x->dtype) != x->dtype) {
        /* float16 and bfloat16: computed in float32 and rounded once, as torch's std_var kernel
         * upcasts the reduced floating types. */
        st = fc_cast(I->fc, x, fc_dtype_compute(x->dtype), &wide, &e);
        x = wide;
    }
    if (st == FC_OK) st = fc_mean(I->fc, x, mask, true, &m, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, x, m, &d, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, d, d, &r, &e);
    if (st == FC_OK) st = step(fc_reduce(I->fc, FC_OP_SUM, r, mask, keepdim, &t, &e), &r, &t);
    if (st == FC_OK) st = step(binary_scalar(I->fc, FC_OP_DIV, r, div, &t, &e), &r, &t);
    if (st == FC_OK && is_std && fc_is_grad_enabled() && fc_requires_grad(r)) {
        /* PyTorch's std_backward masks the gradient to 0 where std is 0 (sqrt's own would be
         * 0 / 0): where(var == 0, 0, sqrt(where(var == 0, 1, var))), the same values */
        FcTensor *z = NULL, *one = NULL, *zero = NULL, *safe = NULL, *root = NULL;
        st = binary_scalar(I->fc, FC_OP_EQ, r, 0.0, &z, &e);
        if (st == FC_OK) st = float_scalar(I->fc, 1.0, &one, &e);
        if (st == FC_OK) st = float_scalar(I->fc, 0.0, &zero, &e);
        if (st == FC_OK) st = fc_where(I->fc, z, one, r, &safe, &e);
        if (st == FC_OK) st = fc_unary(I->fc, FC_OP_SQRT, safe, &root, &e);
        if (st == FC_OK) st = step(fc_where(I->fc, z, zero, root, &t, &e), &r, &t);
        fc_tensor_release(z);
        fc_tensor_release(one);
        fc_tensor_release(zero);
        fc_tensor_release(safe);
        fc_tensor_release(root);
    } else if (st == FC_OK && is_std) {
        st = step(fc_unary(I->fc, FC_OP_SQRT, r, &t, &e), &r, &t);
    }
    if (st == FC_OK && wide) st = step(fc_cast(I->fc, r, a[0].t->dtype, &t, &e), &r, &t);
    fc_tensor_release(wide);
    fc_tensor_release(m);
    fc_tensor_release(d);
    return result(I, st, &e, r, out);
}

bool impl_var(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { return variance(I, sig, a, false, out); }
bool impl_std(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { return variance(I, sig, a, true, out); }

/* ---- cumsum / cumprod ---------------------------------------------------------------------- */

/* x (host, dense, dtype want) scanned along its middle dim of n (outer x n x inner elements) into
 * y as PyTorch's CPU kernel does (cpu_cum_base_kernel): one running value per line, in
 * at::acc_type (double for float32/float64, float for bfloat16, int64 for the integers, wrapping
 * as two's complement), stored in want after every element; acc has room for inner values. */
static void scan_lines(FcOp op, FcDType want, const char *x, char *y, int64_t outer, int64_t n, int64_t inner,
                       FcScalar *acc)
{
    int64_t es = (int64_t)fc_dtype_size(want);
    bool fl = fc_dtype_is_float(want), sum = op == FC_OP_SUM;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < inner; k++) {
            if (fl) acc[k].f = sum ? 0.0 : 1.0;
            else acc[k].i = sum ? 0 : 1;
        }
        for (int64_t j = 0; j < n; j++) {
            int64_t at = (o * n + j) * inner;
            if (want == FC_FLOAT32) {
                const float *xs = (const float *)x + at;
                float *ys = (float *)y + at;
                for (int64_t k = 0; k < inner; k++) {
                    acc[k].f = sum ? acc[k].f + xs[k] : acc[k].f * xs[k];
                    ys[k] = (float)acc[k].f;
                }
                continue;
            }
            for (int64_t k = 0; k < inner; k++) {
                FcScalar v = fc_scalar_load(want, x + (at + k) * es);
                if (want == FC_BFLOAT16) /* acc_type<BFloat16> is float: round after each step */
                    acc[k].f = (float)(sum ? (float)acc[k].f + (float)v.f : (float)acc[k].f * (float)v.f);
                else if (fl)
                    acc[k].f = sum ? acc[k].f + v.f : acc[k].f * v.f;
                else
                    acc[k].i = (int64_t)(sum ? (uint64_t)acc[k].i + (uint64_t)v.i : (uint64_t)acc[k].i * (uint64_t)v.i);
                fc_scalar_store(want, y + (at + k) * es, acc[k]);
            }
        }
    }
}

/* The scan of x (dtype want) along dim d on the host, with PyTorch's CPU rounding (scan_lines). */
static bool scan_host(Interp *I, FcTensor *x, int d, FcOp op, FcDType want, FcTensor **out)
{
    FcTensor *h, *y = NULL;
    FcView v, yv;
    FcError e;
    if (!host_dense(I, x, NULL, want, &h, &v)) return false;
    int64_t n = x->shape[d], inner = 1, outer = 1;
    for (int k = 0; k < d; k++) outer *= x->shape[k];
    for (int k = d + 1; k < x->ndim; k++) inner *= x->shape[k];
    FcScalar *acc = mem_malloc((size_t)(inner ? inner : 1) * sizeof *acc);
    if (!acc) {
        fc_tensor_release(h);
        return err_nomem(I);
    }
    FcStatus st = fc_empty(I->fc, want, x->device, x->ndim, x->shape, NULL, &y, &e);
    if (st == FC_OK) st = fc_host_view(I->fc, y, &yv, &e);
    if (st == FC_OK) {
        size_t es = fc_dtype_size(want);
        scan_lines(op, want, (const char *)v.data + v.offset * (int64_t)es, (char *)yv.data + yv.offset * (int64_t)es,
                   outer, n, inner, acc);
    }
    mem_free(acc);
    fc_tensor_release(h);
    if (st != FC_OK) fc_tensor_release(y);
    *out = st == FC_OK ? y : NULL;
    return tensor_check(I, st, &e);
}

/* out[..., i, ...] = reduce over j <= i of x[..., j, ...]. On the CPU, when no gradient is
 * recorded, scan_host runs it in one pass with PyTorch's rounding. Elsewhere it is x seen over
 * (i, j) with the j > i entries made the reduction's identity, then reduced over j (a masked
 * reduction: the scheduler runs its loop to the bound j <= i; quadratic in the scanned extent,
 * but lazy and differentiable, and on CUDA parallel). */
static bool scan_of(Interp *I, FcTensor *x0, int64_t dim, const FcDType *dtype, FcOp op, FcTensor **out)
{
    FcTensor *x = NULL, *y = NULL, *ii = NULL, *jj = NULL, *mask = NULL, *id = NULL, *w = NULL, *t;
    FcError e;
    int d;
    *out = NULL;
    FcStatus st = fc_wrap_dim(dim, x0->ndim, &d, &e);
    if (st == FC_OK)
        st = dtype ? fc_to(I->fc, x0, *dtype, x0->device, &x, &e) : (x = fc_tensor_retain(x0), FC_OK);
    FcDType want = dtype ? *dtype : fc_dtype_is_float(x0->dtype) ? x0->dtype : FC_INT64;
    if (st == FC_OK && x->dtype == FC_FLOAT16 && fc_tensor_numel(x) > 0) {
        fc_tensor_release(x);
        return err_raise(I, TDL_ERR_RUNTIME, "\"%s_out_cpu\" not implemented for 'Half'",
                         op == FC_OP_SUM ? "cumsum" : "cumprod");
    }
    if (st == FC_OK && x->ndim == 0) {
        st = fc_to(I->fc, x, want, x->device, out, &e);
        fc_tensor_release(x);
        return tensor_check(I, st, &e);
    }
    if (st == FC_OK && fc_device_eq(x->device, fc_cpu()) && !(fc_is_grad_enabled() && fc_requires_grad(x))) {
        bool ok = scan_host(I, x, d, op, want, out);
        fc_tensor_release(x);
        return ok;
    }
    /* bfloat16 accumulates in float32 (at::acc_type), and has no product reduction of its own */
    if (st == FC_OK && x->dtype == FC_BFLOAT16) st = step(fc_to(I->fc, x, FC_FLOAT32, x->device, &t, &e), &x, &t);
    int64_t n = st == FC_OK ? x->shape[d] : 0;
    int trail = st == FC_OK ? x->ndim - d - 1 : 0;
    if (st == FC_OK) st = fc_unsqueeze(I->fc, x, d, &y, &e);      /* [..., 1 (i), n (j), ...] */
    if (st == FC_OK) st = iota_along(I->fc, n, trail + 2, 0, x->device, &ii, &e);
    if (st == FC_OK) st = iota_along(I->fc, n, trail + 2, 1, x->device, &jj, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_LE, jj, ii, &mask, &e);
    if (st == FC_OK) st = int_scalar(I->fc, x->dtype, op == FC_OP_SUM ? 0 : 1, &id, &e);
    if (st == FC_OK) st = fc_where(I->fc, mask, y, id, &w, &e);
    if (st == FC_OK) st = step(fc_reduce(I->fc, op, w, UINT64_C(1) << (d + 1), false, &t, &e), &w, &t);
    if (st == FC_OK && w->dtype != want) st = step(fc_to(I->fc, w, want, w->device, &t, &e), &w, &t);
    fc_tensor_release(x);
    fc_tensor_release(y);
    fc_tensor_release(ii);
    fc_tensor_release(jj);
    fc_tensor_release(mask);
    fc_tensor_release(id);
    *out = st == FC_OK ? w : NULL;
    return tensor_check(I, st, &e);
}

static bool scan(Interp *I, const TensorSig *sig, TensorArg *a, FcOp op, Value *out)
{
    TensorArg *dt = ARG("dtype");
    FcTensor *r;
    return scan_of(I, a[0].t, a[1].i, dt->none ? NULL : &dt->dtype, op, &r) && tensor_value_steal(I, r, out);
}

bool impl_cumsum(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { return scan(I, sig, a, FC_OP_SUM, out); }
bool impl_cumprod(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { return scan(I, sig, a, FC_OP_PROD, out); }

/* ---- sorting ------------------------------------------------------------------------------- */

/* How two elements compare: NaN the largest value (sort, topk, kthvalue), the same with equal
 * values ordered by their position (median's comparator), or the plain `<` of mode's std::sort,
 * under which a NaN is neither before nor after anything. */
typedef enum { CMP_NAN_LAST, CMP_NAN_LAST_INDEX, CMP_PLAIN } SortCmp;

typedef struct SortKeys {
    const char *base;
    FcDType dt;
    bool desc;
    SortCmp cmp;
} SortKeys;

static double key_f(const SortKeys *k, int64_t i)
{
    return fc_scalar_load(k->dt, k->base + i * (int64_t)fc_dtype_size(k->dt)).f;
}

static int64_t key_i(const SortKeys *k, int64_t i)
{
    return fc_scalar_load(k->dt, k->base + i * (int64_t)fc_dtype_size(k->dt)).i;
}

/* Whether element i goes strictly before element j, by k->cmp (offsets i < j: i is earlier in its
 * line). */
static bool goes_before(const SortKeys *k, int64_t i, int64_t j)
{
    if (fc_dtype_is_float(k->dt)) {
        double x = key_f(k, i), y = key_f(k, j);
        if (k->cmp == CMP_PLAIN) return k->desc ? x > y : x < y;
        if (k->cmp == CMP_NAN_LAST_INDEX && x == y) return i < j;
        if (k->desc) return (isnan(x) && !isnan(y)) || x > y;
        return (!isnan(x) && isnan(y)) || x < y;
    }
    int64_t x = key_i(k, i), y = key_i(k, j);
    if (k->cmp == CMP_NAN_LAST_INDEX && x == y) return i < j;
    return k->desc ? x > y : x < y;
}

/* Stable merge sort of idx[0..n) (element offsets) by keys; tmp has room for n. */
static void merge_sort(const SortKeys *k, int64_t *idx, int64_t *tmp, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t p = lo, q = mid, o = lo;
            while (p < mid && q < hi) tmp[o++] = goes_before(k, idx[q], idx[p]) ? idx[q++] : idx[p++];
            while (p < mid) tmp[o++] = idx[p++];
            while (q < hi) tmp[o++] = idx[q++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

/* libstdc++'s std::sort, std::nth_element and std::partial_sort (bits/stl_algo.h, stl_heap.h),
 * step for step: PyTorch's CPU sort (stable=False) and topk call them, and where elements tie
 * their order is what these steps make of it, so the indices are PyTorch's only if the steps are
 * the same. Over element offsets, compared by goes_before. */

static void cxx_swap(int64_t *a, int64_t *b)
{
    int64_t t = *a;
    *a = *b;
    *b = t;
}

/* std::__push_heap */
static void cxx_push_heap(const SortKeys *k, int64_t *first, int64_t hole, int64_t top, int64_t value)
{
    int64_t parent = (hole - 1) / 2;
    while (hole > top && goes_before(k, first[parent], value)) {
        first[hole] = first[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    first[hole] = value;
}

/* std::__adjust_heap */
static void cxx_adjust_heap(const SortKeys *k, int64_t *first, int64_t hole, int64_t len, int64_t value)
{
    int64_t top = hole, child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (goes_before(k, first[child], first[child - 1])) child--;
        first[hole] = first[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        first[hole] = first[child - 1];
        hole = child - 1;
    }
    cxx_push_heap(k, first, hole, top, value);
}

/* std::__make_heap */
static void cxx_make_heap(const SortKeys *k, int64_t *first, int64_t len)
{
    if (len < 2) return;
    for (int64_t parent = (len - 2) / 2;; parent--) {
        cxx_adjust_heap(k, first, parent, len, first[parent]);
        if (parent == 0) return;
    }
}

/* std::__pop_heap: the heap's top to *result, *result's value into the heap [first, first + len) */
static void cxx_pop_heap(const SortKeys *k, int64_t *first, int64_t len, int64_t *result)
{
    int64_t value = *result;
    *result = *first;
    cxx_adjust_heap(k, first, 0, len, value);
}

/* std::__heap_select */
static void cxx_heap_select(const SortKeys *k, int64_t *first, int64_t *middle, int64_t *last)
{
    cxx_make_heap(k, first, middle - first);
    for (int64_t *i = middle; i < last; i++)
        if (goes_before(k, *i, *first)) cxx_pop_heap(k, first, middle - first, i);
}

/* std::__partial_sort: the first middle - first in order, the rest in no useful order */
static void cxx_partial_sort(const SortKeys *k, int64_t *first, int64_t *middle, int64_t *last)
{
    cxx_heap_select(k, first, middle, last);
    while (middle - first > 1) {                            /* std::__sort_heap */
        middle--;
        cxx_pop_heap(k, first, middle - first, middle);
    }
}

/* std::__unguarded_linear_insert */
static void cxx_linear_insert(const SortKeys *k, int64_t *last)
{
    int64_t val = *last, *next = last - 1;
    while (goes_before(k, val, *next)) {
        *last = *next;
        last = next--;
    }
    *last = val;
}

/* std::__insertion_sort */
static void cxx_insertion_sort(const SortKeys *k, int64_t *first, int64_t *last)
{
    if (first == last) return;
    for (int64_t *i = first + 1; i != last; i++) {
        if (goes_before(k, *i, *first)) {
            int64_t val = *i;
            memmove(first + 1, first, (size_t)(i - first) * sizeof *first);
            *first = val;
        } else {
            cxx_linear_insert(k, i);
        }
    }
}

/* std::__unguarded_partition_pivot: the median of first[1], the middle and the last moved to
 * first[0], then Hoare's partition around it */
static int64_t *cxx_partition_pivot(const SortKeys *k, int64_t *first, int64_t *last)
{
    int64_t *a = first + 1, *b = first + (last - first) / 2, *c = last - 1;
    if (goes_before(k, *a, *b)) {
        if (goes_before(k, *b, *c)) cxx_swap(first, b);
        else if (goes_before(k, *a, *c)) cxx_swap(first, c);
        else cxx_swap(first, a);
    } else if (goes_before(k, *a, *c)) {
        cxx_swap(first, a);
    } else if (goes_before(k, *b, *c)) {
        cxx_swap(first, c);
    } else {
        cxx_swap(first, b);
    }
    int64_t *lo = first + 1, *hi = last;
    for (;;) {
        while (goes_before(k, *lo, *first)) lo++;
        hi--;
        while (goes_before(k, *first, *hi)) hi--;
        if (!(lo < hi)) return lo;
        cxx_swap(lo, hi);
        lo++;
    }
}

/* std::__lg */
static int cxx_lg(int64_t n)
{
    return 63 - __builtin_clzll((unsigned long long)n);
}

enum { CXX_THRESHOLD = 16 };     /* std::sort's _S_threshold */

/* std::__introsort_loop */
static void cxx_introsort_loop(const SortKeys *k, int64_t *first, int64_t *last, int depth)
{
    while (last - first > CXX_THRESHOLD) {
        if (depth == 0) {
            cxx_partial_sort(k, first, last, last);
            return;
        }
        depth--;
        int64_t *cut = cxx_partition_pivot(k, first, last);
        cxx_introsort_loop(k, cut, last, depth);
        last = cut;
    }
}

/* std::sort */
static void cxx_sort(const SortKeys *k, int64_t *first, int64_t n)
{
    if (n < 2) return;
    cxx_introsort_loop(k, first, first + n, 2 * cxx_lg(n));
    if (n > CXX_THRESHOLD) {                                 /* std::__final_insertion_sort */
        cxx_insertion_sort(k, first, first + CXX_THRESHOLD);
        for (int64_t *i = first + CXX_THRESHOLD; i != first + n; i++) cxx_linear_insert(k, i);
    } else {
        cxx_insertion_sort(k, first, first + n);
    }
}

/* std::nth_element (std::__introselect) */
static void cxx_nth_element(const SortKeys *k, int64_t *first, int64_t *nth, int64_t *last)
{
    if (first == last || nth == last) return;
    int depth = 2 * cxx_lg(last - first);
    while (last - first > 3) {
        if (depth == 0) {
            cxx_heap_select(k, first, nth + 1, last);
            cxx_swap(first, nth);
            return;
        }
        depth--;
        int64_t *cut = cxx_partition_pivot(k, first, last);
        if (cut <= nth) first = cut;
        else last = cut;
    }
    cxx_insertion_sort(k, first, last);
}

/* PyTorch's topk_impl_loop on one line of n elements: its first kk are the top kk (largest or
 * smallest by k->desc), in order when sorted. */
static void topk_line(const SortKeys *k, int64_t *idx, int64_t n, int64_t kk, bool sorted)
{
    if (kk <= 0) return;
    if (kk * 64 <= n) {
        cxx_partial_sort(k, idx, idx + kk, idx + n);
    } else {
        cxx_nth_element(k, idx, idx + kk - 1, idx + n);
        if (sorted) cxx_sort(k, idx, kk - 1);
    }
}

/* How a line is ordered: PyTorch's sort(stable=True) (any stable sort), sort(stable=False)
 * (std::sort), or topk's selection of the first k; or, by select_line, one element of it picked
 * to the front (kthvalue, median(dim), nanmedian(dim), median(), nanmedian(), mode), or each
 * position given the index of the running max / min (cummax, cummin: by desc). */
typedef enum {
    ORDER_STABLE, ORDER_SORT, ORDER_TOPK, ORDER_KTH, ORDER_MEDIAN, ORDER_NANMEDIAN, ORDER_MEDIAN_ALL,
    ORDER_NANMEDIAN_ALL, ORDER_MODE, ORDER_CUMMAX
} LineOrder;

static void select_line(const SortKeys *k, int64_t *idx, int64_t n, LineOrder order, int64_t kk);

/* The int64 indices that order t along dim d, on t's device (for ORDER_TOPK, the first k of each
 * line are topk's, in order when sorted, the rest in no useful order). */
static bool sort_indices(Interp *I, FcTensor *t, int d, bool desc, LineOrder order, int64_t kk, bool sorted,
                         FcTensor **out)
{
    FcTensor *h;
    FcView v;
    FcError e;
    if (!host_dense(I, t, NULL, t->dtype, &h, &v)) return false;
    int64_t n = t->ndim ? t->shape[d] : 1, inner = 1, total = fc_view_numel(&v);
    for (int k = d + 1; k < t->ndim; k++) inner *= t->shape[k];
    FcView iv = {.dtype = FC_INT64, .ndim = t->ndim, .offset = 0};
    memcpy(iv.shape, t->shape, (size_t)t->ndim * sizeof *t->shape);
    fc_contiguous_strides(t->ndim, iv.shape, iv.strides);
    int64_t *res = mem_malloc((size_t)(total ? total : 1) * sizeof *res);
    /* a line's indices, and after them the merge sort's scratch */
    int64_t *idx = mem_malloc((size_t)(n ? (order == ORDER_STABLE ? 2 : 1) * n : 1) * sizeof *idx);
    bool ok = res && idx ? true : err_nomem(I);
    SortKeys k = {(const char *)v.data + v.offset * (int64_t)fc_dtype_size(v.dtype), v.dtype, desc, CMP_NAN_LAST};
    for (int64_t base = 0; ok && n > 0 && base < total; base++) {
        if ((base / inner) % n != 0) continue;      /* the first element of each line */
        for (int64_t j = 0; j < n; j++) idx[j] = base + j * inner;
        if (order == ORDER_STABLE) merge_sort(&k, idx, idx + n, n);
        else if (order == ORDER_SORT) cxx_sort(&k, idx, n);
        else if (order == ORDER_TOPK) topk_line(&k, idx, n, kk, sorted);
        else select_line(&k, idx, n, order, kk);
        for (int64_t j = 0; j < n; j++) res[base + j * inner] = (idx[j] - base) / inner;
    }
    iv.data = res;
    if (ok) ok = tensor_check(I, fc_from_view(I->fc, &iv, t->device, out, &e), &e);
    mem_free(res);
    mem_free(idx);
    fc_tensor_release(h);
    return ok;
}

/* *r replaced by a stored copy of it with these strides (dense); *r NULL on failure. */
static FcStatus store_strided(FcCtx *ctx, FcTensor **r, const int64_t *strides, FcError *e)
{
    FcTensor *t = NULL;
    FcStatus st = fc_empty(ctx, (*r)->dtype, (*r)->device, (*r)->ndim, (*r)->shape, strides, &t, e);
    if (st == FC_OK) st = fc_assign(ctx, t, *r, e);
    if (st != FC_OK) {
        fc_tensor_release(t);
        t = NULL;
    }
    return step(st, r, &t);
}

/* (values, indices) of t ordered along dim; ORDER_TOPK: only the first k; kthvalue, median and
 * mode's orders: only the first (the dim kept, of size 1). */
static bool sorted(Interp *I, FcTensor *t, int64_t dim, bool desc, LineOrder order, int64_t k, bool in_order,
                   FcTensor **values, FcTensor **indices)
{
    FcError e;
    int d;
    FcTensor *ix = NULL, *tmp;
    *values = *indices = NULL;
    if (!tensor_check(I, fc_wrap_dim(dim, t->ndim, &d, &e), &e)) return false;
    if (order == ORDER_TOPK && k > (t->ndim ? t->shape[d] : 1)) return err_raise(I, TDL_ERR_RUNTIME, "selected index k out of range");
    if (!sort_indices(I, t, d, desc, order, k, in_order, &ix)) return false;
    FcStatus st = FC_OK;
    bool picks = order >= ORDER_KTH && order <= ORDER_MODE;
    if ((order == ORDER_TOPK || picks) && t->ndim)
        st = step(narrow(I->fc, ix, d, 0, picks ? 1 : k, &tmp, &e), &ix, &tmp);
    if (st == FC_OK) st = t->ndim ? fc_gather(I->fc, t, d, ix, values, &e) : fc_clone(I->fc, t, FC_MF_PRESERVE, values, &e);
    if (st == FC_OK && (order == ORDER_STABLE || order == ORDER_SORT) && t->ndim > 1) {
        /* laid out as t (PyTorch's sort meta: t's strides when dense, else dense in t's order) */
        int64_t like[FC_MAX_DIMS], c[FC_MAX_DIMS];
        st = fc_like_strides(I->fc, t, FC_MF_PRESERVE, like, &e);
        fc_contiguous_strides(t->ndim, t->shape, c);
        if (st == FC_OK && memcmp(like, c, (size_t)t->ndim * sizeof *c) != 0) {
            st = store_strided(I->fc, values, like, &e);
            if (st == FC_OK) st = store_strided(I->fc, &ix, like, &e);
        }
    }
    if (st != FC_OK) {
        fc_tensor_release(*values);
        *values = NULL;
        fc_tensor_release(ix);
        return tensor_check(I, st, &e);
    }
    *indices = ix;
    return true;
}

/* sort's and argsort's order: std::sort unless stable=True */
static LineOrder sort_order(const TensorSig *sig, TensorArg *a)
{
    TensorArg *stable = ARG("stable");
    return stable && !stable->none && stable->b ? ORDER_STABLE : ORDER_SORT;
}

bool impl_sort(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r[2];
    if (!sorted(I, a[0].t, ARG("dim")->i, ARG("descending")->b, sort_order(sig, a), -1, true, &r[0], &r[1]))
        return false;
    return tuple_of(I, r, 2, &rt_sort, out);
}

bool impl_argsort(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *v, *ix;
    if (!sorted(I, a[0].t, ARG("dim")->i, ARG("descending")->b, sort_order(sig, a), -1, true, &v, &ix)) return false;
    fc_tensor_release(v);
    return tensor_value_steal(I, ix, out);
}

bool impl_topk(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r[2];
    if (a[1].i < 0) return err_raise(I, TDL_ERR_RUNTIME, "selected index k out of range");
    if (a[0].t->dtype == FC_FLOAT16) return err_raise(I, TDL_ERR_RUNTIME, "\"topk_cpu\" not implemented for 'Half'");
    if (!sorted(I, a[0].t, ARG("dim")->i, ARG("largest")->b, ORDER_TOPK, a[1].i, ARG("sorted")->b, &r[0], &r[1]))
        return false;
    return tuple_of(I, r, 2, &rt_topk, out);
}

/* ---- kthvalue, median, nanmedian, mode, msort, cummax, cummin ------------------------------ */

/* PyTorch's quick_select_template (aten/src/ATen/native/SortingUtils.h), kthvalue's selection,
 * step for step (it swaps values and indices together, as these swaps move idx): idx[kk] ends as
 * the element of rank kk, NaN the largest value. */
static void quick_select(const SortKeys *k, int64_t *idx, int64_t n, int64_t kk)
{
    int64_t lo = 0, hi = n - 1;
    for (;;) {
        if (hi <= lo) return;
        if (hi == lo + 1) {
            if (goes_before(k, idx[hi], idx[lo])) cxx_swap(&idx[lo], &idx[hi]);
            return;
        }
        cxx_swap(&idx[lo + (hi - lo) / 2], &idx[lo + 1]);        /* the median of three */
        if (goes_before(k, idx[hi], idx[lo + 1])) cxx_swap(&idx[lo + 1], &idx[hi]);
        if (goes_before(k, idx[hi], idx[lo])) cxx_swap(&idx[lo], &idx[hi]);
        if (goes_before(k, idx[lo], idx[lo + 1])) cxx_swap(&idx[lo + 1], &idx[lo]);
        int64_t i = lo + 1, j = hi, piv = idx[lo];
        for (;;) {
            do i++; while (goes_before(k, idx[i], piv));
            do j--; while (goes_before(k, piv, idx[j]));
            if (j < i) break;
            cxx_swap(&idx[i], &idx[j]);
        }
        cxx_swap(&idx[lo], &idx[j]);
        if (j <= kk) lo = i;
        if (j >= kk) hi = j - 1;
    }
}

static bool key_nan(const SortKeys *k, int64_t i)
{
    return fc_dtype_is_float(k->dt) && isnan(key_f(k, i));
}

/* PyTorch's median_with_indices_impl (median(dim), nanmedian(dim)) and median_impl (median(),
 * nanmedian()) on one line: the first NaN where NaN propagates, else std::nth_element to the lower
 * median of the values that are not NaN. Its comparator orders equal values by index for the dim
 * forms (then the pick is the lower index) and not for the others. */
static void median_line(const SortKeys *k, int64_t *idx, int64_t n, bool skip_nan)
{
    int64_t nans = 0;
    for (int64_t j = 0; j < n; j++) {
        if (!key_nan(k, idx[j])) continue;
        if (!skip_nan) {
            idx[0] = idx[j];
            return;
        }
        nans++;
    }
    cxx_nth_element(k, idx, idx + (n - nans - 1) / 2, idx + n);
    idx[0] = idx[(n - nans - 1) / 2];
}

/* PyTorch's mode kernel (aten/src/ATen/native/cpu/TensorCompareKernel.cpp) on one line: std::sort
 * of (value, index) pairs by the value's plain `<`, then the first longest run of equal values (a
 * NaN equals nothing) gives the mode and the index of that run's last pair. */
static void mode_line(const SortKeys *k, int64_t *idx, int64_t n)
{
    cxx_sort(k, idx, n);
    int64_t best = 0, freq = 0, pick = idx[0];
    bool fl = fc_dtype_is_float(k->dt);
    for (int64_t j = 0; j < n; j++) {
        freq++;
        if (j == n - 1 || (fl ? key_f(k, idx[j]) != key_f(k, idx[j + 1]) : key_i(k, idx[j]) != key_i(k, idx[j + 1]))) {
            if (freq > best) {
                best = freq;
                pick = idx[j];
            }
            freq = 0;
        }
    }
    idx[0] = pick;
}

/* PyTorch's cummax_cummin_helper on one line: a NaN, or a value >= the running max (cummax;
 * <= the running min for cummin) while that is not NaN, becomes the running one, so among equal
 * values the last is taken and a NaN stays. */
static void cummax_line(const SortKeys *k, int64_t *idx, int64_t n)
{
    int64_t run = idx[0];
    for (int64_t j = 0; j < n; j++) {
        if (key_nan(k, idx[j]) || (!key_nan(k, run) && !goes_before(k, idx[j], run))) run = idx[j];
        idx[j] = run;
    }
}

/* The orders after ORDER_TOPK (LineOrder) on one line of n > 0 offsets. */
static void select_line(const SortKeys *k, int64_t *idx, int64_t n, LineOrder order, int64_t kk)
{
    SortKeys by = *k;
    by.cmp = order == ORDER_MEDIAN || order == ORDER_NANMEDIAN ? CMP_NAN_LAST_INDEX : order == ORDER_MODE ? CMP_PLAIN : CMP_NAN_LAST;
    if (order == ORDER_KTH) {
        quick_select(&by, idx, n, kk - 1);
        idx[0] = idx[kk - 1];
    } else if (order == ORDER_MODE) {
        mode_line(&by, idx, n);
    } else if (order == ORDER_CUMMAX) {
        /* not goes_before: x >= running ascending (cummax), x <= running descending (cummin) */
        cummax_line(&by, idx, n);
    } else {
        median_line(&by, idx, n, order == ORDER_NANMEDIAN || order == ORDER_NANMEDIAN_ALL);
    }
}

static const char *const values_indices[] = {"values", "indices"};
static const TupleFields rt_kthvalue = {"torch.return_types.kthvalue", values_indices, "KthvalueBackward0"};
static const TupleFields rt_median = {"torch.return_types.median", values_indices, "MedianBackward1"};
static const TupleFields rt_nanmedian = {"torch.return_types.nanmedian", values_indices, "NanmedianBackward1"};
static const TupleFields rt_mode = {"torch.return_types.mode", values_indices, "ModeBackward0"};
static const TupleFields rt_cummax = {"torch.return_types.cummax", values_indices, "CummaxBackward0"};
static const TupleFields rt_cummin = {"torch.return_types.cummin", values_indices, "CumminBackward0"};

/* PyTorch's "NAME_cpu" not implemented for 'Half' (and 'Bool'): the dtypes a kernel refuses. */
static bool dtype_refused(Interp *I, const FcTensor *t, const char *kernel, bool half)
{
    if (t->dtype == FC_BOOL || (half && t->dtype == FC_FLOAT16))
        return err_raise(I, TDL_ERR_RUNTIME, "\"%s\" not implemented for '%s'", kernel, fc_dtype_torch_name(t->dtype)), true;
    return false;
}

/* (values, indices) of the reduction of t along dim by one element per line (order, kk: as
 * sorted), as a torch.return_types tuple; a dim of size 0 has no element to pick (name's
 * IndexError). */
static bool picked(Interp *I, FcTensor *t, int64_t dim, bool keep, LineOrder order, int64_t kk, const char *name,
                   const TupleFields *fields, Value *out)
{
    FcTensor *r[2], *tmp;
    FcError e;
    int d;
    if (!tensor_check(I, fc_wrap_dim(dim, t->ndim, &d, &e), &e)) return false;
    if (t->ndim && t->shape[d] == 0)
        return err_raise(I, TDL_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, d);
    if (order == ORDER_KTH && (kk < 1 || kk > (t->ndim ? t->shape[d] : 1)))
        return err_raise(I, TDL_ERR_RUNTIME, "kthvalue(): selected number k out of range for dimension %d", d);
    if (!sorted(I, t, d, false, order, kk, false, &r[0], &r[1])) return false;
    FcStatus st = FC_OK;
    for (int j = 0; j < 2 && st == FC_OK && !keep && t->ndim; j++)
        st = step(fc_squeeze(I->fc, r[j], UINT64_C(1) << d, &tmp, &e), &r[j], &tmp);
    if (st != FC_OK) {
        fc_tensor_release(r[0]);
        fc_tensor_release(r[1]);
        return tensor_check(I, st, &e);
    }
    return tuple_of(I, r, 2, fields, out);
}

bool impl_kthvalue(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    if (dtype_refused(I, a[0].t, "kthvalue_cpu", true)) return false;
    return picked(I, a[0].t, ARG("dim")->i, ARG("keepdim")->b, ORDER_KTH, a[1].i, "kthvalue", &rt_kthvalue, out);
}

/* median() / nanmedian(): the lower median of every element (NaN where one is and NaN propagates;
 * NaN for no elements), a 0-dim tensor. Its gradient goes evenly to the elements equal to it (to
 * the NaNs when it is NaN), as PyTorch's evenly_distribute_backward: with a gradient to record,
 * the result is max() (fc_max_all, whose gradient that is) of where(x == median, x, -inf) (+inf and
 * min() for a median of -inf), which may give 0 for a median of -0 with both zeros in t. The
 * elements are searched in t's logical order, where PyTorch's clone keeps a dense tensor's memory
 * order: only which zero or which NaN is returned could tell. */
static bool median_all(Interp *I, FcTensor *t, bool skip_nan, Value *out)
{
    FcTensor *flat = NULL, *v = NULL, *ix = NULL, *m = NULL, *fill = NULL, *w = NULL;
    FcScalar med;
    FcError e;
    int64_t n = fc_tensor_numel(t);
    if (dtype_refused(I, t, "median_cpu", false)) return false;
    if (n == 0) {
        FcScalar nan = {.f = NAN};
        /* at::full({}, NaN).to(dtype): an integer tensor gets what x86's conversion of a NaN
         * gives (the lowest int64 or int32, whose low bits the narrower types keep: 0) */
        if (!fc_dtype_is_float(t->dtype)) nan.i = t->dtype == FC_INT32 ? INT32_MIN : INT64_MIN;
        FcStatus st = fc_full(I->fc, t->dtype, t->device, 0, NULL, nan, &v, &e);
        return result(I, st, &e, v, out);
    }
    FcStatus st = fc_reshape(I->fc, t, 1, &n, &flat, &e);
    if (st != FC_OK) return tensor_check(I, st, &e);
    if (!sorted(I, flat, 0, false, skip_nan ? ORDER_NANMEDIAN_ALL : ORDER_MEDIAN_ALL, 1, false, &v, &ix)) {
        fc_tensor_release(flat);
        return false;
    }
    fc_tensor_release(ix);
    st = step(fc_reshape(I->fc, v, 0, NULL, &ix, &e), &v, &ix);
    if (st == FC_OK && fc_is_grad_enabled() && fc_requires_grad(t) && fc_dtype_is_float(t->dtype)) {
        bool is_nan, low;
        FcTensor *c;
        st = fc_item(I->fc, v, &med, &e);
        is_nan = isnan(med.f);
        low = med.f == -INFINITY;
        if (st == FC_OK) st = fc_detach(I->fc, v, &c, &e);
        if (st == FC_OK) {
            st = is_nan ? fc_binary(I->fc, FC_OP_NE, flat, flat, &m, &e) : fc_binary(I->fc, FC_OP_EQ, flat, c, &m, &e);
            fc_tensor_release(c);
        }
        if (st == FC_OK) st = float_scalar(I->fc, low ? INFINITY : -INFINITY, &fill, &e);
        if (st == FC_OK) st = fc_where(I->fc, m, flat, fill, &w, &e);
        if (st == FC_OK) {
            fc_tensor_release(v);
            v = NULL;
            st = fc_max_all(I->fc, w, 0, low, &v, &e);
        }
    }
    fc_tensor_release(flat);
    fc_tensor_release(m);
    fc_tensor_release(fill);
    fc_tensor_release(w);
    if (st == FC_OK) fc_grad_name(v, skip_nan ? "NanmedianBackward0" : "MedianBackward0");
    return chain_result(I, st, &e, v, out);
}

bool impl_median(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    if (!ARG("dim")) return median_all(I, a[0].t, false, out);
    if (dtype_refused(I, a[0].t, "median_out", false)) return false;
    return picked(I, a[0].t, a[1].i, ARG("keepdim")->b, ORDER_MEDIAN, 1, "median", &rt_median, out);
}

bool impl_nanmedian(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    if (!ARG("dim")) return median_all(I, a[0].t, true, out);
    if (dtype_refused(I, a[0].t, "median_out", false)) return false;
    return picked(I, a[0].t, a[1].i, ARG("keepdim")->b, ORDER_NANMEDIAN, 1, "nanmedian", &rt_nanmedian, out);
}

bool impl_mode(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    return picked(I, a[0].t, ARG("dim")->i, ARG("keepdim")->b, ORDER_MODE, 1, "mode", &rt_mode, out);
}

/* msort: sort(dim=0)'s values */
bool impl_msort(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *v, *ix;
    if (!sorted(I, a[0].t, 0, false, ORDER_SORT, -1, true, &v, &ix)) return false;
    fc_tensor_release(ix);
    fc_grad_name(v, rt_sort.grad);
    return tensor_value_steal(I, v, out);
}

/* cummax(dim) / cummin(dim): the running max / min and its index (cummax_line), the values
 * gathered by the indices (so the gradient is PyTorch's scatter-add into them). */
static bool cummax(Interp *I, TensorArg *a, bool is_min, Value *out)
{
    FcTensor *r[2];
    if (a[0].t->dtype == FC_FLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"%s\" not implemented for 'Half'", is_min ? "cummin_cpu" : "cummax_cpu");
    if (!sorted(I, a[0].t, a[1].i, is_min, ORDER_CUMMAX, -1, false, &r[0], &r[1])) return false;
    return tuple_of(I, r, 2, is_min ? &rt_cummin : &rt_cummax, out);
}

bool impl_cummax(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return cummax(I, a, false, out); }
bool impl_cummin(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return cummax(I, a, true, out); }

static const char *const min_max[] = {"min", "max"};
static const TupleFields rt_aminmax = {"torch.return_types.aminmax", min_max};

/* aminmax(*, dim=None, keepdim=False): (amin, amax) over dim (None: every element), as PyTorch's
 * aminmax's values and messages; the results have amin's and amax's gradients, where PyTorch 1.13
 * has no derivative for aminmax. */
bool impl_aminmax(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *r[2] = {NULL, NULL};
    TensorArg *dim = ARG("dim");
    FcError e;
    uint64_t mask = 0;
    int d;
    if (t->dtype == FC_FLOAT16) return err_raise(I, TDL_ERR_RUNTIME, "\"aminmax_cpu\" not implemented for 'Half'");
    if (dim->none && fc_tensor_numel(t) == 0)
        return err_raise(I, TDL_ERR_RUNTIME,
                         "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.");
    if (!dim->none) {
        if (!tensor_check(I, fc_wrap_dim(dim->i, t->ndim, &d, &e), &e)) return false;
        if (t->ndim && t->shape[d] == 0)
            return err_raise(I, TDL_ERR_INDEX, "aminmax: Expected reduction dim %d to have non-zero size.", d);
        mask = t->ndim ? UINT64_C(1) << d : 0;
    }
    bool keep = ARG("keepdim")->b;
    FcStatus st = fc_reduce(I->fc, FC_OP_AMIN, t, mask, keep, &r[0], &e);
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_AMAX, t, mask, keep, &r[1], &e);
    /* a 0-dim tensor's keepdim result along a dim: PyTorch resizes its outputs to [1], warning */
    bool resized = st == FC_OK && !dim->none && keep && t->ndim == 0;
    for (int j = 0; j < 2 && resized && st == FC_OK; j++) {
        int64_t one = 1;
        FcTensor *tmp;
        st = step(fc_reshape(I->fc, r[j], 1, &one, &tmp, &e), &r[j], &tmp);
    }
    if (st != FC_OK) {
        fc_tensor_release(r[0]);
        fc_tensor_release(r[1]);
        return tensor_check(I, st, &e);
    }
    if (resized &&
        !interp_warn(I, TDL_ERR_USER_WARNING,
                     "An output with one or more elements was resized since it had shape [], which does not match the "
                     "required output shape [1]. This behavior is deprecated, and in a future PyTorch release outputs "
                     "will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by "
                     "resizing it, inplace, to zero elements with t.resize_(0). (Triggered internally at  "
                     "./aten/src/ATen/native/Resize.cpp:17.)")) {
        fc_tensor_release(r[0]);
        fc_tensor_release(r[1]);
        return false;
    }
    return tuple_of(I, r, 2, &rt_aminmax, out);
}

/* nansum over dim (None: all) in dtype: sum of where(isnan(x), 0, x); an integer or bool x is
 * summed as sum() does, and a floating x takes no integer dtype (its CPU kernel's message). The
 * gradient is zero at the NaNs, +0 from where's backward, where PyTorch's nansum_backward
 * (grad * ~isnan(x)) gives -0 for a negative grad. */
static bool nansum(Interp *I, const TensorSig *sig, TensorArg *a, FcTensor **out)
{
    FcTensor *x = NULL, *nan = NULL, *zero = NULL, *w = NULL;
    TensorArg *dt = ARG("dtype");
    FcError e;
    uint64_t mask;
    *out = NULL;
    FcDType in = a[0].t->dtype, want = !dt->none ? dt->dtype : in;
    if (fc_dtype_is_float(in) && !fc_dtype_is_float(want))
        return err_raise(I, TDL_ERR_RUNTIME, "\"nansum_cpu\" not implemented for '%s'", fc_dtype_torch_name(want));
    if (!tensor_dim_mask(I, a[0].t, ARG("dim"), &mask)) return false;
    FcStatus st = want != in ? fc_to(I->fc, a[0].t, want, a[0].t->device, &x, &e) : (x = fc_tensor_retain(a[0].t), FC_OK);
    if (st == FC_OK && fc_dtype_is_float(in)) {
        st = fc_binary(I->fc, FC_OP_NE, x, x, &nan, &e);
        if (st == FC_OK) st = int_scalar(I->fc, want, 0, &zero, &e);
        if (st == FC_OK) st = step(fc_where(I->fc, nan, zero, x, &w, &e), &x, &w);
    }
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_SUM, x, mask, ARG("keepdim")->b, out, &e);
    /* sum(dtype=int32) stays int32 */
    if (st == FC_OK && !dt->none && (*out)->dtype != want) st = step(fc_to(I->fc, *out, want, (*out)->device, &w, &e), out, &w);
    fc_tensor_release(x);
    fc_tensor_release(nan);
    fc_tensor_release(zero);
    return tensor_check(I, st, &e);
}

bool impl_nansum(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r;
    return nansum(I, sig, a, &r) && tensor_value_steal(I, r, out);
}

/* nanmean: nansum / the count of the elements that are not NaN, as PyTorch composes it. */
bool impl_nanmean(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *s = NULL, *ok = NULL, *n = NULL, *r = NULL;
    FcError e;
    uint64_t mask;
    if (!fc_dtype_is_float(a[0].t->dtype))
        return err_raise(I, TDL_ERR_RUNTIME, "nanmean(): expected input to have floating point dtype but got %s",
                         fc_dtype_torch_name(a[0].t->dtype));
    if (!tensor_dim_mask(I, a[0].t, ARG("dim"), &mask) || !nansum(I, sig, a, &s)) return false;
    FcStatus st = fc_binary(I->fc, FC_OP_EQ, a[0].t, a[0].t, &ok, &e);
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_SUM, ok, mask, ARG("keepdim")->b, &n, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_DIV, s, n, &r, &e);
    fc_tensor_release(s);
    fc_tensor_release(ok);
    fc_tensor_release(n);
    return result(I, st, &e, r, out);
}

/* Slices a and b (each len elements at a * len, b * len of base, of dtype dt) in PyTorch's
 * unique_dim order: lexicographic by < and > (a NaN compares neither way); -1, 0 or 1. */
static int slice_cmp(const char *base, FcDType dt, int64_t len, int64_t a, int64_t b)
{
    size_t sz = fc_dtype_size(dt);
    for (int64_t i = 0; i < len; i++) {
        FcScalar x = fc_scalar_load(dt, base + (a * len + i) * (int64_t)sz);
        FcScalar y = fc_scalar_load(dt, base + (b * len + i) * (int64_t)sz);
        if (fc_dtype_is_float(dt) ? x.f < y.f : x.i < y.i) return -1;
        if (fc_dtype_is_float(dt) ? x.f > y.f : x.i > y.i) return 1;
    }
    return 0;
}

/* Whether slices a and b are equal element by element (a NaN equals nothing). */
static bool slice_eq(const char *base, FcDType dt, int64_t len, int64_t a, int64_t b)
{
    size_t sz = fc_dtype_size(dt);
    for (int64_t i = 0; i < len; i++) {
        FcScalar x = fc_scalar_load(dt, base + (a * len + i) * (int64_t)sz);
        FcScalar y = fc_scalar_load(dt, base + (b * len + i) * (int64_t)sz);
        if (fc_dtype_is_float(dt) ? !(x.f == y.f) : x.i != y.i) return false;
    }
    return true;
}

/* unique's result, as torch.unique builds it: the m slices of src along d that first[] names, then
 * (when not NULL) the inverse, shaped as inv_shape, and the counts of each slice, as int64 tensors on
 * src's device; one tensor, or a tuple when inverse or counts are asked for. */
static bool unique_result(Interp *I, FcTensor *src, int d, const int64_t *first, int64_t m, const int64_t *inverse,
                          int inv_ndim, const int64_t *inv_shape, const int64_t *counts, Value *out)
{
    FcError e;
    FcTensor *sel = NULL, *r[3] = {NULL, NULL, NULL};
    FcView iv = {.dtype = FC_INT64, .ndim = 1, .offset = 0, .strides = {1}};
    iv.shape[0] = m;
    iv.data = (void *)first;
    int nr = 1;
    bool ok = tensor_check(I, fc_from_view(I->fc, &iv, src->device, &sel, &e), &e);
    if (ok) ok = tensor_check(I, fc_index_select(I->fc, src, d, sel, &r[0], &e), &e);
    if (ok && inverse) {
        FcView xv = {.dtype = FC_INT64, .ndim = inv_ndim, .offset = 0, .data = (void *)inverse};
        memcpy(xv.shape, inv_shape, (size_t)inv_ndim * sizeof *inv_shape);
        fc_contiguous_strides(inv_ndim, xv.shape, xv.strides);
        ok = tensor_check(I, fc_from_view(I->fc, &xv, src->device, &r[nr++], &e), &e);
    }
    if (ok && counts) {
        iv.data = (void *)counts;
        ok = tensor_check(I, fc_from_view(I->fc, &iv, src->device, &r[nr++], &e), &e);
    }
    fc_tensor_release(sel);
    if (!ok) {
        for (int k = 0; k < 3; k++) fc_tensor_release(r[k]);
        return false;
    }
    if (nr == 1) return tensor_value_steal(I, r[0], out);
    return tuple_of(I, r, nr, NULL, out);
}

/* unique(dim=d): the distinct slices of t along d, sorted (always, as torch's unique_dim), with
 * the inverse (which output slice each input slice is) and the counts when asked. */
static bool unique_dim(Interp *I, FcTensor *t, int64_t dim, bool inv, bool cnt, Value *out)
{
    FcError e;
    int d;
    if (t->ndim == 0)
        return err_raise(I, TDL_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions", (long long)dim);
    if (!tensor_check(I, fc_wrap_dim(dim, t->ndim, &d, &e), &e)) return false;
    if (t->dtype == FC_FLOAT16 || t->dtype == FC_BFLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"unique_dim\" not implemented for '%s'", fc_dtype_torch_name(t->dtype));
    int64_t n = t->shape[d], len = 1;
    for (int k = 0; k < t->ndim; k++)
        if (k != d) len *= t->shape[k];
    if (n > 0 && len == 0)
        return err_raise(I, TDL_ERR_RUNTIME, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
    int64_t perm[FC_MAX_DIMS];
    perm[0] = d;
    for (int k = 0, j = 1; k < t->ndim; k++)
        if (k != d) perm[j++] = k;
    FcTensor *h;
    FcView v;
    if (!host_dense(I, t, perm, t->dtype, &h, &v)) return false;
    const char *base = (const char *)v.data + v.offset * (int64_t)fc_dtype_size(v.dtype);
    size_t cap = (size_t)(n ? n : 1);
    int64_t *idx = mem_malloc(cap * sizeof *idx), *tmpi = mem_malloc(cap * sizeof *tmpi);
    int64_t *first = mem_malloc(cap * sizeof *first), *inverse = mem_malloc(cap * sizeof *inverse);
    int64_t *counts = mem_calloc(cap, sizeof *counts), m = 0;
    bool ok = idx && tmpi && first && inverse && counts ? true : err_nomem(I);
    if (ok) {
        for (int64_t j = 0; j < n; j++) idx[j] = j;
        /* stable merge sort of the slice indices */
        for (int64_t w = 1; w < n; w *= 2) {
            for (int64_t lo = 0; lo < n; lo += 2 * w) {
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
                int64_t a = lo, b = mid, o = lo;
                while (a < mid && b < hi) tmpi[o++] = slice_cmp(base, v.dtype, len, idx[b], idx[a]) < 0 ? idx[b++] : idx[a++];
                while (a < mid) tmpi[o++] = idx[a++];
                while (b < hi) tmpi[o++] = idx[b++];
            }
            memcpy(idx, tmpi, (size_t)n * sizeof *idx);
        }
        for (int64_t j = 0; j < n; j++) {
            if (m == 0 || !slice_eq(base, v.dtype, len, first[m - 1], idx[j])) first[m++] = idx[j];
            inverse[idx[j]] = m - 1;
            counts[m - 1]++;
        }
    }
    fc_tensor_release(h);
    if (ok) ok = unique_result(I, t, d, first, m, inv ? inverse : NULL, 1, &n, cnt ? counts : NULL, out);
    mem_free(idx);
    mem_free(tmpi);
    mem_free(first);
    mem_free(inverse);
    mem_free(counts);
    return ok;
}

/* unique(): the sorted distinct values of the flattened tensor, with the index of each input
 * element's value among them (return_inverse) and how often each occurs (return_counts). */
bool impl_unique(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *flat = NULL, *ord = NULL, *h = NULL;
    TensorArg *dim = ARG("dim");
    bool inv = ARG("return_inverse")->b, cnt = ARG("return_counts")->b;
    FcError e;
    FcView v;
    if (!dim->none) return unique_dim(I, t, dim->i, inv, cnt, out);
    int64_t n = fc_tensor_numel(t), one = n;
    FcStatus st = fc_reshape(I->fc, t, 1, &one, &flat, &e);
    if (!tensor_check(I, st, &e)) return false;
    bool ok = sort_indices(I, flat, 0, false, ORDER_STABLE, -1, true, &ord);
    if (ok) ok = tensor_check(I, fc_to(I->fc, flat, flat->dtype, fc_cpu(), &h, &e), &e);
    if (ok) ok = tensor_check(I, fc_host_view(I->fc, h, &v, &e), &e);
    FcView ov;
    FcTensor *oh = NULL;
    if (ok) ok = tensor_check(I, fc_to(I->fc, ord, FC_INT64, fc_cpu(), &oh, &e), &e);
    if (ok) ok = tensor_check(I, fc_host_view(I->fc, oh, &ov, &e), &e);
    int64_t *first = NULL, *inverse = NULL, *counts = NULL, m = 0;
    if (ok) {
        first = mem_malloc((size_t)(n ? n : 1) * sizeof *first);
        inverse = mem_malloc((size_t)(n ? n : 1) * sizeof *inverse);
        counts = mem_calloc((size_t)(n ? n : 1), sizeof *counts);
        ok = first && inverse && counts ? true : err_nomem(I);
    }
    if (ok) {
        SortKeys k = {(const char *)v.data + v.offset * (int64_t)fc_dtype_size(v.dtype), v.dtype, false, CMP_NAN_LAST};
        const int64_t *o = (const int64_t *)ov.data + ov.offset;
        for (int64_t j = 0; j < n; j++) {
            int64_t e0 = o[j * ov.strides[0]] * v.strides[0];
            /* sorted: a new value is one that the previous one goes before (NaNs stay apart) */
            bool fresh = m == 0 || goes_before(&k, first[m - 1] * v.strides[0], e0) ||
                         (fc_dtype_is_float(v.dtype) && isnan(key_f(&k, e0)));
            if (fresh) first[m++] = o[j * ov.strides[0]];
            inverse[o[j * ov.strides[0]]] = m - 1;
            counts[m - 1]++;
        }
    }
    if (ok) ok = unique_result(I, flat, 0, first, m, inv ? inverse : NULL, t->ndim, t->shape, cnt ? counts : NULL, out);
    mem_free(first);
    mem_free(inverse);
    mem_free(counts);
    fc_tensor_release(flat);
    fc_tensor_release(ord);
    fc_tensor_release(h);
    fc_tensor_release(oh);
    return ok;
}

/* ---- pieces and rearrangements ------------------------------------------------------------- */

/* The pieces of t along dim d of the given sizes, as a tuple of views: each after the one before,
 * or (starts not NULL) from starts[k]. */
static bool pieces(Interp *I, FcTensor *t, int d, int n, const int64_t *sizes, const int64_t *starts, Value *out)
{
    FcTensor **ts = mem_calloc((size_t)(n ? n : 1), sizeof *ts);
    if (!ts) return err_nomem(I);
    FcError e;
    FcStatus st = FC_OK;
    int64_t at = 0;
    for (int k = 0; k < n && st == FC_OK; k++) {
        st = narrow(I->fc, t, d, starts ? starts[k] : at, sizes[k], &ts[k], &e);
        at += sizes[k];
    }
    bool ok = tensor_check(I, st, &e);
    if (!ok)
        for (int k = 0; k < n; k++) fc_tensor_release(ts[k]);
    if (ok) ok = tuple_of(I, ts, n, NULL, out);
    mem_free(ts);
    return ok;
}

/* split(int) and chunk(): pieces of `size` along d, the last one smaller (count of them: n). */
static bool split_even(Interp *I, FcTensor *t, int d, int64_t size, int64_t count, Value *out)
{
    int64_t len = t->shape[d];
    int64_t *sizes = mem_malloc((size_t)(count ? count : 1) * sizeof *sizes);
    if (!sizes) return err_nomem(I);
    for (int64_t k = 0; k < count; k++) {
        int64_t rest = len - k * size;
        sizes[k] = rest < size ? (rest > 0 ? rest : 0) : size;
    }
    bool ok = count <= INT32_MAX ? pieces(I, t, d, (int)count, sizes, NULL, out)
                                 : err_raise(I, TDL_ERR_VALUE, "split: too many pieces (%lld)", (long long)count);
    mem_free(sizes);
    return ok;
}

static bool piece_dim(Interp *I, FcTensor *t, int64_t dim, const char *fname, int *d)
{
    FcError e;
    if (t->ndim == 0) return err_raise(I, TDL_ERR_RUNTIME, "%s expects at least a 1-dimensional tensor", fname);
    return tensor_check(I, fc_wrap_dim(dim, t->ndim, d, &e), &e);
}

bool impl_split(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t;
    int d;
    if (!piece_dim(I, t, ARG("dim")->i, "split", &d)) return false;
    int64_t len = t->shape[d];
    if (strcmp(sig->row->overload, "sizes") == 0) {
        int64_t sum = 0;
        for (int k = 0; k < a[1].n; k++) {
            if (a[1].ints[k] < 0)
                return err_raise(I, TDL_ERR_RUNTIME,
                                 "split_with_sizes expects split_sizes have only non-negative entries, but got "
                                 "split_sizes=%lld", (long long)a[1].ints[k]);
            sum += a[1].ints[k];
        }
        if (sum != len) {
            Buf b = {0};
            for (int k = 0; k < a[1].n; k++) buf_printf(&b, "%s%lld", k ? ", " : "", (long long)a[1].ints[k]);
            bool ok = b.nomem ? err_nomem(I)
                              : err_raise(I, TDL_ERR_RUNTIME,
                                          "split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's "
                                          "size at dimension %d), but got split_sizes=[%s]", (long long)len, d,
                                          b.p ? b.p : "");
            buf_free(&b);
            return ok;
        }
        return pieces(I, t, d, a[1].n, a[1].ints, NULL, out);
    }
    int64_t size = a[1].i;
    if (size < 0)
        return err_raise(I, TDL_ERR_RUNTIME, "split expects split_size be non-negative, but got split_size=%lld",
                         (long long)size);
    if (size == 0 && len != 0)
        return err_raise(I, TDL_ERR_RUNTIME,
                         "split_size can only be 0 if dimension size is 0, but got dimension size of %lld", (long long)len);
    int64_t count = size == 0 ? 1 : (len + size - 1) / size;
    return split_even(I, t, d, size, count > 0 ? count : 1, out);
}

bool impl_chunk(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t;
    int64_t chunks = a[1].i;
    int d;
    if (!piece_dim(I, t, ARG("dim")->i, "chunk", &d)) return false;
    if (chunks <= 0)
        return err_raise(I, TDL_ERR_RUNTIME, "chunk expects `chunks` to be greater than 0, got: %lld", (long long)chunks);
    int64_t len = t->shape[d], size = (len + chunks - 1) / chunks;
    if (size == 0) return split_even(I, t, d, 0, chunks, out);      /* torch: chunks empty pieces */
    return split_even(I, t, d, size, (len + size - 1) / size, out);
}

/* t reversed along the n dims d[] (valid, distinct): a copy, as torch's flip (never a view of t). */
static FcStatus flip_along(FcCtx *ctx, FcTensor *t, int n, const int *d, FcTensor **out, FcError *e)
{
    FcTensor *r = fc_tensor_retain(t), *ix, *tmp;
    FcStatus st = FC_OK;
    for (int k = 0; k < n && st == FC_OK && t->ndim > 0; k++) {
        st = index_expr(ctx, t->shape[d[k]], -1, t->shape[d[k]] - 1, 0, &ix, e);
        if (st == FC_OK) {
            st = step(select_by(ctx, r, d[k], ix, &tmp, e), &r, &tmp);
            fc_tensor_release(ix);
        }
    }
    if (st == FC_OK && r == t) st = step(fc_clone(ctx, t, FC_MF_PRESERVE, &tmp, e), &r, &tmp);
    *out = r;
    return st;
}

bool impl_flip(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *r = NULL;
    FcError e;
    uint64_t mask;
    int d[FC_MAX_DIMS];
    (void)sig;
    if (a[1].n > 0 && !tensor_dim_mask(I, t, &a[1], &mask)) return false;
    for (int k = 0; k < a[1].n && t->ndim > 0; k++) fc_wrap_dim(a[1].ints[k], t->ndim, &d[k], &e);
    FcStatus st = flip_along(I->fc, t, t->ndim > 0 ? a[1].n : 0, d, &r, &e);
    return chain_result(I, st, &e, r, out);
}

bool impl_roll(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *r = NULL, *ix, *tmp;
    TensorArg *sh = &a[1], *dims = &a[2];
    FcError e;
    (void)sig;
    if (sh->n == 0) return err_raise(I, TDL_ERR_RUNTIME, "`shifts` required");
    if (dims->n == 0 && sh->n == 1) {
        /* roll of the flattened tensor, reshaped back */
        int64_t n = fc_tensor_numel(t);
        FcStatus st = fc_reshape(I->fc, t, 1, &n, &r, &e);
        if (st == FC_OK && n > 0) {
            st = index_expr(I->fc, n, 1, n - sh->ints[0] % n, n, &ix, &e);
            if (st == FC_OK) {
                st = step(select_by(I->fc, r, 0, ix, &tmp, &e), &r, &tmp);
                fc_tensor_release(ix);
            }
        } else if (st == FC_OK) {
            st = step(fc_clone(I->fc, r, FC_MF_PRESERVE, &tmp, &e), &r, &tmp);
        }
        if (st == FC_OK) st = step(fc_reshape(I->fc, r, t->ndim, t->shape, &tmp, &e), &r, &tmp);
        return result(I, st, &e, r, out);
    }
    if (sh->n != dims->n)
        return err_raise(I, TDL_ERR_RUNTIME, "shifts and dimensions must align. shifts: %d, dims:%d", sh->n, dims->n);
    r = fc_tensor_retain(t);
    FcStatus st = FC_OK;
    for (int k = 0; k < sh->n && st == FC_OK; k++) {
        int d;
        st = fc_wrap_dim(dims->ints[k], t->ndim, &d, &e);
        int64_t n = st == FC_OK && t->ndim ? t->shape[d] : 0;
        if (st != FC_OK || n == 0) continue;
        st = index_expr(I->fc, n, 1, n - sh->ints[k] % n, n, &ix, &e);
        if (st == FC_OK) {
            st = step(select_by(I->fc, r, d, ix, &tmp, &e), &r, &tmp);
            fc_tensor_release(ix);
        }
    }
    if (st == FC_OK && r == t) st = step(fc_clone(I->fc, t, FC_MF_PRESERVE, &tmp, &e), &r, &tmp);
    return result(I, st, &e, r, out);
}

/* repeat(sizes): t tiled; a lazy gather by index k mod size along each dim (a copy, as torch's). */
/* r, a result PyTorch allocates contiguous, is stored in C order when realised (not in the order
 * of the loads it reads, as an elementwise result is); only a node r alone holds is marked. */
static void c_order(FcTensor *r)
{
    if (r->node && r->node->refcnt == 1)
        r->node->c_order = true;
}

bool impl_repeat(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *r = NULL, *ix, *tmp;
    int n = a[1].n;
    FcError e;
    (void)sig;
    if (n < t->ndim)
        return err_raise(I, TDL_ERR_RUNTIME,
                         "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
    int64_t shape[FC_MAX_DIMS] = {0}, target[FC_MAX_DIMS] = {0};
    for (int k = 0; k < n; k++) {
        shape[k] = k < n - t->ndim ? 1 : t->shape[k - (n - t->ndim)];
        target[k] = shape[k] * a[1].ints[k];
    }
    if (!tensor_check_sizes(I, n, target)) return false;
    FcStatus st = fc_reshape(I->fc, t, n, shape, &r, &e);
    for (int k = 0; k < n && st == FC_OK; k++) {
        if (a[1].ints[k] == 1) continue;
        st = index_expr(I->fc, target[k], 1, 0, shape[k] ? shape[k] : 1, &ix, &e);
        if (st == FC_OK) {
            st = step(select_by(I->fc, r, k, ix, &tmp, &e), &r, &tmp);
            fc_tensor_release(ix);
        }
    }
    if (st == FC_OK && (r->storage && t->storage && r->storage == t->storage))
        st = step(fc_clone(I->fc, r, FC_MF_CONTIGUOUS, &tmp, &e), &r, &tmp);
    if (st == FC_OK) c_order(r);
    return result(I, st, &e, r, out);
}

/* tril / triu: where(col - row <= diagonal (tril) or >= diagonal (triu), t, 0) over the last two dims. */
static bool triangle(Interp *I, TensorArg *a, bool lower, Value *out)
{
    FcTensor *t = a[0].t, *row = NULL, *col = NULL, *diff = NULL, *mask = NULL, *zero = NULL, *r = NULL;
    FcError e;
    int d;
    if (t->ndim > 0 && fc_tensor_numel(t) == 0) {   /* PyTorch checks no dims then */
        FcStatus st = fc_clone(I->fc, t, FC_MF_PRESERVE, &r, &e);
        return result(I, st, &e, r, out);
    }
    if (!tensor_check(I, fc_wrap_dim(-2, t->ndim, &d, &e), &e)) return false;
    int64_t h = t->shape[t->ndim - 2], w = t->shape[t->ndim - 1];
    FcStatus st = iota_along(I->fc, h, 2, 0, t->device, &row, &e);
    if (st == FC_OK) st = iota_along(I->fc, w, 1, 0, t->device, &col, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, col, row, &diff, &e);
    if (st == FC_OK) st = int_scalar(I->fc, FC_INT64, a[1].i, &zero, &e);
    if (st == FC_OK) st = fc_binary(I->fc, lower ? FC_OP_LE : FC_OP_GE, diff, zero, &mask, &e);
    fc_tensor_release(zero);
    zero = NULL;
    if (st == FC_OK) st = int_scalar(I->fc, t->dtype, 0, &zero, &e);
    if (st == FC_OK) st = fc_where(I->fc, mask, t, zero, &r, &e);
    if (st == FC_OK) c_order(r);
    fc_tensor_release(row);
    fc_tensor_release(col);
    fc_tensor_release(diff);
    fc_tensor_release(mask);
    fc_tensor_release(zero);
    return result(I, st, &e, r, out);
}

bool impl_tril(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return triangle(I, a, true, out); }
bool impl_triu(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return triangle(I, a, false, out); }

/* ---- norm ---------------------------------------------------------------------------------- */

/* The sum of the singular values of the m x n matrix a (row-major, overwritten), by one-sided
 * Jacobi rotations of its columns (orthogonal to each other at convergence, their norms being
 * the singular values); m >= n. */
static double nuclear_of(double *a, int64_t m, int64_t n)
{
    for (int sweep = 0; sweep < 100; sweep++) {
        bool rotated = false;
        for (int64_t p = 0; p < n; p++)
            for (int64_t q = p + 1; q < n; q++) {
                double al = 0, be = 0, ga = 0;
                for (int64_t i = 0; i < m; i++) {
                    double x = a[i * n + p], y = a[i * n + q];
                    al += x * x, be += y * y, ga += x * y;
                }
                if (ga == 0 || fabs(ga) <= 1e-17 * sqrt(al * be)) continue;
                rotated = true;
                double zeta = (be - al) / (2 * ga);
                double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                double c = 1 / sqrt(1 + t * t), s = c * t;
                for (int64_t i = 0; i < m; i++) {
                    double x = a[i * n + p], y = a[i * n + q];
                    a[i * n + p] = c * x - s * y;
                    a[i * n + q] = s * x + c * y;
                }
            }
        if (!rotated) break;
    }
    double sum = 0;
    for (int64_t p = 0; p < n; p++) {
        double s2 = 0;
        for (int64_t i = 0; i < m; i++) s2 += a[i * n + p] * a[i * n + p];
        sum += sqrt(s2);
    }
    return sum;
}

/* norm('nuc', dim, keepdim): the nuclear norm (sum of singular values) of the matrices over the
 * two dims (the last two of a 2-D tensor when dim is None), computed in float64 on the host and
 * given in t's dtype, with torch's checks in its order. */
static bool nuclear_norm(Interp *I, FcTensor *t, TensorArg *dim, bool keep, bool dtype_given, Value *out)
{
    if (dtype_given) return err_raise(I, TDL_ERR_VALUE, "dtype argument is not supported in nuclear norm");
    int d[2] = {0, 1};
    FcError e;
    if (dim->none && t->ndim != 2)
        return err_raise(I, TDL_ERR_RUNTIME, "Expected a tensor with 2 dimensions, but got a tensor with %d dimension%s instead.",
                         t->ndim, t->ndim == 1 ? "" : "s");
    if (!dim->none) {
        if (dim->n != 2) return err_raise(I, TDL_ERR_RUNTIME, "nuclear norm requires a 'dim' argument of size 2");
        for (int k = 0; k < 2; k++)
            if (!tensor_check(I, fc_wrap_dim(dim->ints[k], t->ndim, &d[k], &e), &e)) return false;
        if (d[0] == d[1]) return err_raise(I, TDL_ERR_RUNTIME, "duplicate or invalid dimensions");
    }
    if (!fc_dtype_is_float(t->dtype))
        return err_raise(I, TDL_ERR_RUNTIME, "linalg.svd: Expected a floating point or complex tensor as input. Got %s",
                         fc_dtype_torch_name(t->dtype));
    if (t->dtype == FC_FLOAT16 || t->dtype == FC_BFLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"linalg_svd_cpu\" not implemented for '%s'", fc_dtype_torch_name(t->dtype));
    /* the batch dims in order, then the two matrix dims */
    int64_t perm[FC_MAX_DIMS], bshape[FC_MAX_DIMS], oshape[FC_MAX_DIMS];
    int nb = 0, no = 0;
    for (int k = 0; k < t->ndim; k++) {
        if (k != d[0] && k != d[1]) bshape[nb] = t->shape[k], perm[nb++] = k;
        if (k != d[0] && k != d[1]) oshape[no++] = t->shape[k];
        else if (keep) oshape[no++] = 1;
    }
    perm[nb] = d[0], perm[nb + 1] = d[1];
    int64_t m = t->shape[d[0]], n = t->shape[d[1]], batch = 1;
    for (int k = 0; k < nb; k++) batch *= bshape[k];
    FcTensor *h, *r = NULL;
    FcView v;
    if (!host_dense(I, t, perm, FC_FLOAT64, &h, &v)) return false;
    int64_t rows = m >= n ? m : n, cols = m >= n ? n : m;
    double *res = mem_malloc((size_t)(batch ? batch : 1) * sizeof *res);
    double *work = mem_malloc((size_t)(m * n != 0 ? m * n : 1) * sizeof *work);
    bool ok = res && work ? true : err_nomem(I);
    const double *src = (const double *)v.data + v.offset;
    for (int64_t b = 0; ok && b < batch; b++) {
        const double *x = src + b * m * n;
        bool finite = true;
        for (int64_t i = 0; i < m; i++)      /* as rows x cols with rows >= cols (A or its transpose) */
            for (int64_t j = 0; j < n; j++) {
                finite &= isfinite(x[i * n + j]) != 0;
                if (m >= n) work[i * n + j] = x[i * n + j];
                else work[j * m + i] = x[i * n + j];
            }
        if (!finite)
            ok = err_raise(I, TDL_ERR_RUNTIME, "linalg.svd: The algorithm failed to converge because the input matrix "
                                               "contained non-finite values.");
        else res[b] = nuclear_of(work, rows, cols);
    }
    fc_tensor_release(h);
    mem_free(work);
    if (ok) {
        FcView rv = {.dtype = FC_FLOAT64, .ndim = no, .offset = 0, .data = res};
        memcpy(rv.shape, oshape, (size_t)no * sizeof *oshape);
        fc_contiguous_strides(no, rv.shape, rv.strides);
        FcTensor *tmp;
        FcStatus st = fc_from_view(I->fc, &rv, t->device, &r, &e);
        if (st == FC_OK && t->dtype != FC_FLOAT64) st = step(fc_cast(I->fc, r, t->dtype, &tmp, &e), &r, &tmp);
        ok = result(I, st, &e, r, out);
    }
    mem_free(res);
    return ok;
}

/* norm(p, dim, keepdim, dtype): the vector p-norm of the elements over dim (all: None). 'fro'
 * (the default) and None are p = 2. */
/* The p-norm of float x over the dims in mask (PyTorch's special cases for p = inf, -inf, 0, 1, 2). */
static FcStatus p_norm(FcCtx *ctx, FcTensor *x, double p, uint64_t mask, bool keep, FcTensor **out, FcError *err)
{
    FcTensor *ax = NULL, *r = NULL, *tmp;
    FcStatus st = fc_unary(ctx, FC_OP_ABS, x, &ax, err);
    if (st == FC_OK) {
        if (isinf(p)) {
            st = fc_reduce(ctx, p > 0 ? FC_OP_AMAX : FC_OP_AMIN, ax, mask, keep, &r, err);
        } else if (p == 0) {
            st = binary_scalar(ctx, FC_OP_NE, ax, 0.0, &r, err);
            if (st == FC_OK) st = step(fc_reduce(ctx, FC_OP_SUM, r, mask, keep, &tmp, err), &r, &tmp);
            if (st == FC_OK) st = step(fc_cast(ctx, r, x->dtype, &tmp, err), &r, &tmp);
        } else if (p == 1) {
            st = fc_reduce(ctx, FC_OP_SUM, ax, mask, keep, &r, err);
        } else if (p == 2) {
            st = fc_binary(ctx, FC_OP_MUL, ax, ax, &r, err);
            if (st == FC_OK) st = step(fc_reduce(ctx, FC_OP_SUM, r, mask, keep, &tmp, err), &r, &tmp);
            if (st == FC_OK) st = step(fc_unary(ctx, FC_OP_SQRT, r, &tmp, err), &r, &tmp);
        } else {
            st = binary_scalar(ctx, FC_OP_POW, ax, p, &r, err);
            if (st == FC_OK) st = step(fc_reduce(ctx, FC_OP_SUM, r, mask, keep, &tmp, err), &r, &tmp);
            if (st == FC_OK) st = step(binary_scalar(ctx, FC_OP_POW, r, 1.0 / p, &tmp, err), &r, &tmp);
        }
    }
    fc_tensor_release(ax);
    if (st != FC_OK) fc_tensor_release(r);
    *out = st == FC_OK ? r : NULL;
    return st;
}

bool impl_norm(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    Value pv = ARG("p")->v;
    TensorArg *dim = ARG("dim"), *dt = ARG("dtype");
    bool keep = ARG("keepdim")->b;
    double p = 2;
    if (pv.tag == V_STR) {
        const char *s = as_str(pv)->data;
        if (strcmp(s, "nuc") == 0) return nuclear_norm(I, a[0].t, dim, keep, !dt->none, out);
        if (strcmp(s, "fro") != 0)
            return err_raise(I, TDL_ERR_RUNTIME, "only valid string values are 'fro' and 'nuc', found %s", s);
    } else if (pv.tag == V_INT || pv.tag == V_BOOL) {
        p = pv.tag == V_INT ? (double)pv.i : pv.b;
    } else if (pv.tag == V_FLOAT) {
        p = pv.f;
    } else if (pv.tag != V_NONE && pv.tag != V_UNDEF) {
        return err_raise(I, TDL_ERR_TYPE, "norm(): argument 'p' must be Number or str, not %s", val_type_name(pv));
    }
    FcTensor *x = NULL, *r = NULL;
    FcError e;
    uint64_t mask;
    if (!dt->none && (pv.tag == V_STR || pv.tag == V_UNDEF))
        return err_raise(I, TDL_ERR_VALUE, "dtype argument is not supported in frobenius norm");
    if (!dt->none && !tensor_check(I, fc_to(I->fc, a[0].t, dt->dtype, a[0].t->device, &x, &e), &e)) return false;
    if (!x) x = fc_tensor_retain(a[0].t);
    if (!need_float(I, x, "norm(): input dtype should be either floating point or complex. Got %s instead.") ||
        !tensor_dim_mask(I, x, dim, &mask)) {
        fc_tensor_release(x);
        return false;
    }
    FcStatus st = p_norm(I->fc, x, p, mask, keep, &r, &e);
    fc_tensor_release(x);
    return result(I, st, &e, r, out);
}

/* ---- masked_fill, isclose / allclose ------------------------------------------------------- */

/* where(mask, value, self) in self's dtype and shape. */
static bool masked_fill(Interp *I, TensorArg *a, FcTensor **out)
{
    FcTensor *self = a[0].t, *mask = NULL, *v = NULL, *r = NULL;
    FcError e;
    FcStatus st;
    *out = NULL;
    if (fc_dtype_is_float(a[1].t->dtype))
        return err_raise(I, TDL_ERR_RUNTIME, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                         fc_dtype_name(a[1].t->dtype));
    if (!fc_dtype_is_int(a[1].t->dtype)) {
        mask = fc_tensor_retain(a[1].t);
    } else {
        /* an integer mask of 0s and 1s is taken as bool (torch's legacy byte masks) */
        FcTensor *bad = NULL, *any = NULL, *one = NULL;
        FcScalar yes = {0};
        st = int_scalar(I->fc, FC_INT64, 1, &one, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_GT, a[1].t, one, &bad, &e);
        fc_tensor_release(one);
        one = NULL;
        if (st == FC_OK) st = int_scalar(I->fc, FC_INT64, 0, &one, &e);
        if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_LT, a[1].t, one, &any, &e), &one, &any);
        if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_OR, bad, one, &any, &e), &bad, &any);
        if (st == FC_OK) st = step(fc_reduce(I->fc, FC_OP_ANY, bad, 0, false, &any, &e), &bad, &any);
        if (st == FC_OK) st = fc_item(I->fc, bad, &yes, &e);
        fc_tensor_release(bad);
        fc_tensor_release(one);
        if (!tensor_check(I, st, &e)) return false;
        if (yes.i) return err_raise(I, TDL_ERR_RUNTIME, "Mask tensor can take 0 and 1 values only");
        if (!tensor_check(I, fc_cast(I->fc, a[1].t, FC_BOOL, &mask, &e), &e)) return false;
    }
    if (a[2].t) {
        if (a[2].t->ndim != 0) {
            fc_tensor_release(mask);
            return err_raise(I, TDL_ERR_RUNTIME,
                             "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %d dimension(s).",
                             a[2].t->ndim);
        }
        if (!tensor_item_fits(I, a[2].t, self->dtype)) {
            fc_tensor_release(mask);
            return false;
        }
        st = fc_cast(I->fc, a[2].t, self->dtype, &v, &e);
    } else {
        if (!tensor_scalar_fits(I, a[2].s, a[2].sdt, self->dtype, true)) {
            fc_tensor_release(mask);
            return false;
        }
        st = fc_scalar(I->fc, self->dtype, tensor_scalar_as(a[2].s, a[2].sdt, self->dtype), false, &v, &e);
    }
    if (st == FC_OK) st = fc_where(I->fc, mask, v, self, &r, &e);
    fc_tensor_release(v);
    fc_tensor_release(mask);
    if (!tensor_check(I, st, &e)) return false;
    FcTensor *res;
    st = fc_inplace_result(I->fc, self, r, &res, &e);
    fc_tensor_release(r);
    if (!tensor_check(I, st, &e)) return false;
    *out = res;
    return true;
}

bool impl_masked_fill(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r;
    (void)sig;
    return masked_fill(I, a, &r) && tensor_value_steal(I, r, out);
}

/* index_fill(dim, index, value): value at the positions index names along dim, self elsewhere, in
 * self's dtype (a where over a mask along dim, so its gradient is the where's: none to self there,
 * their sum once each to a tensor value, duplicates counted once as torch's unique does). The
 * checks, in torch's order (index_fill_ and its CPU kernel): a tensor value 0-dim, index int64, dim
 * in range, index at most 1-dim, the value fits self's dtype, then each index in turn in [-size,
 * size) (negatives count from the end). */
static bool index_fill(Interp *I, TensorArg *a, FcTensor **out)
{
    FcTensor *self = a[0].t, *index = a[2].t, *val = a[3].t, *h = NULL, *mask = NULL, *v = NULL, *r = NULL;
    FcView iv;
    FcError e;
    int d;
    *out = NULL;
    if (val && val->ndim != 0)
        return err_raise(I, TDL_ERR_RUNTIME,
                         "index_fill_ only supports a 0-dimensional value tensor, but got tensor with %d dimension(s).",
                         val->ndim);
    if (index->dtype != FC_INT64) return err_raise(I, TDL_ERR_INDEX, "index_fill_(): Expected dtype int64 for index.");
    if (!tensor_check(I, fc_wrap_dim(a[1].i, self->ndim, &d, &e), &e)) return false;
    if (index->ndim > 1) return err_raise(I, TDL_ERR_RUNTIME, "Index has to be a vector/scalar");
    if (val ? !tensor_item_fits(I, val, self->dtype) : !tensor_scalar_fits(I, a[3].s, a[3].sdt, self->dtype, true))
        return false;
    if (!host_dense(I, index, NULL, FC_INT64, &h, &iv)) return false;
    int64_t size = self->ndim ? self->shape[d] : 1, n = fc_view_numel(&iv);
    const int64_t *ix = (const int64_t *)iv.data + iv.offset;
    bool *at = mem_calloc((size_t)(size ? size : 1), sizeof *at);
    bool ok = at ? true : err_nomem(I);
    for (int64_t k = 0; ok && k < n; k++) {
        if (ix[k] < -size || ix[k] >= size)
            ok = err_raise(I, TDL_ERR_INDEX, "index %" PRId64 " is out of bounds for dimension %d with size %" PRId64,
                           ix[k], d, size);
        else
            at[ix[k] < 0 ? ix[k] + size : ix[k]] = true;
    }
    fc_tensor_release(h);
    FcView mv = {.dtype = FC_BOOL, .ndim = self->ndim, .offset = 0, .data = at};
    for (int k = 0; k < self->ndim; k++) mv.shape[k] = k == d ? size : 1;
    fc_contiguous_strides(mv.ndim, mv.shape, mv.strides);
    if (ok) {
        FcStatus st = fc_from_view(I->fc, &mv, self->device, &mask, &e);
        if (st == FC_OK)
            st = val ? fc_cast(I->fc, val, self->dtype, &v, &e)
                     : fc_scalar(I->fc, self->dtype, tensor_scalar_as(a[3].s, a[3].sdt, self->dtype), false, &v, &e);
        if (st == FC_OK) st = fc_where(I->fc, mask, v, self, &r, &e);
        if (st == FC_OK) st = fc_inplace_result(I->fc, self, r, out, &e);
        ok = tensor_check(I, st, &e);
    }
    mem_free(at);
    fc_tensor_release(mask);
    fc_tensor_release(v);
    fc_tensor_release(r);
    return ok;
}

bool impl_index_fill(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r;
    (void)sig;
    return index_fill(I, a, &r) && tensor_value_steal(I, r, out);
}

/* tensor_split(sections | indices, dim) and hsplit / vsplit / dsplit (dim 1 of a tensor of 2 dims or
 * more, else 0 / dim 0 / dim 2): torch's pieces, views. Sections: the first len % sections of them
 * one longer; indices: t[start:stop] between them, each bound as a Python slice takes it (negatives
 * from the end, clamped, a stop before its start an empty piece). The *split forms check the rank
 * and that sections divide the length first, with torch's messages. */
bool impl_tensor_split(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t;
    const char *name = sig->row->name;
    bool sections = sig->row->overload[0] == 0;
    int d, nd = t->ndim;
    FcError e;
    if (strcmp(name, "tensor_split") == 0) {
        if (nd == 0)
            return err_raise(I, TDL_ERR_RUNTIME,
                             "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
        if (!tensor_check(I, fc_wrap_dim(ARG("dim")->i, nd, &d, &e), &e)) return false;
    } else {
        int need = name[0] == 'h' ? 1 : name[0] == 'v' ? 2 : 3;
        d = name[0] == 'h' ? (nd >= 2 ? 1 : 0) : name[0] == 'v' ? 0 : 2;
        if (nd < need)
            return err_raise(I, TDL_ERR_RUNTIME, "torch.%s requires a tensor with at least %d dimension, but got a tensor "
                             "with %d dimensions!", name, need, nd);
        if (sections && (a[1].i == 0 || t->shape[d] % a[1].i != 0))
            return err_raise(I, TDL_ERR_RUNTIME, "torch.%s attempted to split along dimension %d, but the size of the "
                             "dimension %lld is not divisible by the split_size %lld!", name, d,
                             (long long)t->shape[d], (long long)a[1].i);
    }
    int64_t len = t->shape[d], n = sections ? a[1].i : (int64_t)a[1].n + 1;
    if (sections && n <= 0)
        return err_raise(I, TDL_ERR_RUNTIME, "number of sections must be larger than 0, got %lld", (long long)n);
    if (n > INT32_MAX) return err_raise(I, TDL_ERR_VALUE, "tensor_split: too many pieces (%lld)", (long long)n);
    int64_t *sizes = mem_malloc((size_t)n * 2 * sizeof *sizes), *starts = sizes + n;
    if (!sizes) return err_nomem(I);
    for (int64_t k = 0, at = 0; k < n; k++) {
        if (sections) {
            sizes[k] = len / n + (k < len % n);
            starts[k] = at;
            at += sizes[k];
            continue;
        }
        int64_t lo = k == 0 ? 0 : a[1].ints[k - 1], hi = k == n - 1 ? len : a[1].ints[k];
        lo = lo < 0 ? (lo + len < 0 ? 0 : lo + len) : lo > len ? len : lo;
        hi = hi < 0 ? (hi + len < 0 ? 0 : hi + len) : hi > len ? len : hi;
        starts[k] = lo;
        sizes[k] = hi > lo ? hi - lo : 0;
    }
    bool ok = pieces(I, t, d, (int)n, sizes, starts, out);
    mem_free(sizes);
    return ok;
}

/* repeat_interleave(repeats) (1-D int64 or int32): each i repeats[i] times, in repeats' dtype, on its
 * device; output_size (< 0: none) must be the total. torch's checks in its order (the dtype as its
 * dispatch names it, the rank, the total, then negative counts). */
static bool repeat_index(Interp *I, FcTensor *reps, int64_t output_size, FcTensor **out)
{
    FcTensor *h = NULL;
    FcView v;
    FcError e;
    *out = NULL;
    if (reps->dtype != FC_INT64 && reps->dtype != FC_INT32)
        return err_raise(I, TDL_ERR_RUNTIME, "\"repeat_interleave_cpu\" not implemented for '%s'",
                         fc_dtype_torch_name(reps->dtype));
    if (reps->ndim != 1) return err_raise(I, TDL_ERR_RUNTIME, "repeat_interleave only accept 1D vector as repeat");
    int64_t n = reps->shape[0], total = 0;
    if (!host_dense(I, reps, NULL, FC_INT64, &h, &v)) return false;
    const int64_t *r = (const int64_t *)v.data + v.offset;
    bool negative = false;
    for (int64_t k = 0; k < n; k++) {
        total += r[k];
        negative |= r[k] < 0;
    }
    bool ok = true;
    if (n > 0 && output_size >= 0 && output_size != total)
        ok = err_raise(I, TDL_ERR_RUNTIME, "allocated size does not match required size");
    else if (negative)
        ok = err_raise(I, TDL_ERR_RUNTIME, "repeats can not be negative");
    if (n == 0) total = 0;
    size_t width = reps->dtype == FC_INT64 ? 8 : 4;
    char *buf = ok ? mem_malloc(total > 0 ? (size_t)total * width : 1) : NULL;
    if (ok && !buf) ok = err_nomem(I);
    for (int64_t k = 0, at = 0; ok && k < n; k++)
        for (int64_t j = 0; j < r[k]; j++, at++) {
            if (width == 8) ((int64_t *)buf)[at] = k;
            else ((int32_t *)buf)[at] = (int32_t)k;
        }
    fc_tensor_release(h);
    if (!ok) return false;
    FcView iv = {.dtype = reps->dtype, .ndim = 1, .offset = 0, .data = buf};
    iv.shape[0] = total;
    iv.strides[0] = 1;
    ok = tensor_check(I, fc_from_view(I->fc, &iv, reps->device, out, &e), &e);
    mem_free(buf);
    return ok;
}

/* repeat_interleave(repeats, dim=None, *, output_size): torch's composition, self (flattened without
 * dim) index_select'ed along dim by repeat_index of the repeats (an int, or a 0-dim or one-element
 * tensor, stand for the same count for every element); the function form of one tensor gives the
 * index itself. */
bool impl_repeat_interleave(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    const TensorArg *os = ARG("output_size");
    int64_t osize = os->none ? -1 : os->i;
    FcTensor *idx = NULL, *x = NULL, *reps = NULL, *r = NULL;
    FcError e;
    if (sig->row->overload[0] == 0) {
        if (!repeat_index(I, a[0].t, osize, &idx)) return false;
        return tensor_value_steal(I, idx, out);
    }
    FcTensor *self = a[0].t;
    const TensorArg *dim = ARG("dim");
    FcStatus st = dim->none ? fc_flatten(I->fc, self, 0, -1, &x, &e) : FC_OK;
    if (st != FC_OK) return tensor_check(I, st, &e);
    FcTensor *in = x ? x : self;
    int d = 0;
    bool ok = true;
    if (!dim->none && in->ndim == 0)
        ok = err_raise(I, TDL_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions", (long long)dim->i);
    else if (!dim->none)
        ok = tensor_check(I, fc_wrap_dim(dim->i, in->ndim, &d, &e), &e);
    int64_t n = ok ? in->shape[d] : 0;
    if (ok && a[1].t) {
        FcTensor *rt = a[1].t;
        if (rt->ndim == 0 || (rt->ndim == 1 && rt->shape[0] == 1)) {
            int64_t one = 1;
            st = fc_reshape(I->fc, rt, 1, &one, &reps, &e);
            FcTensor *tmp = NULL;
            if (st == FC_OK) st = fc_expand(I->fc, reps, 1, &n, &tmp, &e);
            fc_tensor_release(reps);
            reps = st == FC_OK ? tmp : NULL;
            ok = tensor_check(I, st, &e);
        } else if (rt->ndim == 1) {
            if (rt->shape[0] != n) ok = err_raise(I, TDL_ERR_RUNTIME, "repeats must have the same size as input along dim");
            else reps = fc_tensor_retain(rt);
        } else {
            ok = err_raise(I, TDL_ERR_RUNTIME, "repeats must be 0-dim or 1-dim tensor");
        }
    } else if (ok) {
        FcScalar c = {.i = a[1].i};
        ok = tensor_check(I, fc_full(I->fc, FC_INT64, self->device, 1, &n, c, &reps, &e), &e);
    }
    if (ok) ok = repeat_index(I, reps, osize, &idx);
    if (ok) ok = tensor_check(I, fc_index_select(I->fc, in, d, idx, &r, &e), &e);
    fc_tensor_release(idx);
    fc_tensor_release(reps);
    fc_tensor_release(x);
    return ok && tensor_value_steal(I, r, out);
}

/* The columns [*lo, *hi) of row i in the lower (j - i <= off) or upper (j - i >= off) triangle of a
 * matrix of col columns. */
static void tri_cols(bool lower, int64_t i, int64_t off, int64_t col, int64_t *lo, int64_t *hi)
{
    int64_t a = lower ? 0 : i + off, b = lower ? i + off + 1 : col;
    *lo = a < 0 ? 0 : a > col ? col : a;
    *hi = b < *lo ? *lo : b > col ? col : b;
}

/* tril_indices / triu_indices(row, col, offset): the coordinates of a row x col matrix's lower or
 * upper triangle, 2 x N in row-major order, int64 or int32. */
bool impl_tri_indices(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    const char *name = sig->row->name;
    bool lower = strncmp(name, "tril", 4) == 0;
    int64_t row = a[0].i, col = a[1].i, off = a[2].i, n = 0;
    const TensorArg *dt = ARG("dtype"), *dev = ARG("device");
    FcDType dtype = dt->none ? FC_INT64 : dt->dtype;
    if (row < 0) return err_raise(I, TDL_ERR_RUNTIME, "row must be non-negative, got%lld", (long long)row);
    if (col < 0) return err_raise(I, TDL_ERR_RUNTIME, "col must be non-negative, got%lld", (long long)col);
    if (dtype != FC_INT64 && dtype != FC_INT32)
        return err_raise(I, TDL_ERR_RUNTIME, "\"%s\" not implemented for '%s'", name, fc_dtype_torch_name(dtype));
    int64_t lo, hi;
    for (int64_t i = 0; i < row; i++) {
        tri_cols(lower, i, off, col, &lo, &hi);
        n += hi - lo;
    }
    size_t width = dtype == FC_INT64 ? 8 : 4;
    char *buf = mem_malloc(n > 0 ? (size_t)(2 * n) * width : 1);
    if (!buf) return err_nomem(I);
    int64_t at = 0;
    for (int64_t i = 0; i < row; i++) {
        tri_cols(lower, i, off, col, &lo, &hi);
        for (int64_t j = lo; j < hi; j++, at++) {
            if (width == 8) {
                ((int64_t *)buf)[at] = i;
                ((int64_t *)buf)[n + at] = j;
            } else {
                ((int32_t *)buf)[at] = (int32_t)i;
                ((int32_t *)buf)[n + at] = (int32_t)j;
            }
        }
    }
    FcView v = {.dtype = dtype, .ndim = 2, .offset = 0, .data = buf};
    v.shape[0] = 2;
    v.shape[1] = n;
    fc_contiguous_strides(2, v.shape, v.strides);
    FcTensor *r = NULL;
    FcError e;
    FcStatus st = fc_from_view(I->fc, &v, dev->none ? I->device : dev->device, &r, &e);
    mem_free(buf);
    return result(I, st, &e, r, out);
}

/* meshgrid(*tensors | [tensors], indexing): grid k is tensor k (0-dim or 1-dim) viewed along dim k
 * and expanded to every tensor's length (views); 'xy' swaps the first two, inputs and grids, as torch
 * does. Without indexing, torch 1.13's warning (once) and 'ij'. */
bool impl_meshgrid(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    const TensorArg *ix = ARG("indexing");
    int n = a[0].n;
    FcTensor **in = a[0].ts;
    if (ix->none && !interp_warn_once(I, TDL_ERR_USER_WARNING,
                                      "torch.meshgrid: in an upcoming release, it will be required to pass the "
                                      "indexing argument. (Triggered internally at  "
                                      "./aten/src/ATen/native/TensorShape.cpp:3190.)"))
        return false;
    if (n == 0) return err_raise(I, TDL_ERR_RUNTIME, "meshgrid expects a non-empty TensorList");
    for (int k = 0; k + 1 < n; k++) {
        if (in[k]->dtype != in[k + 1]->dtype)
            return err_raise(I, TDL_ERR_RUNTIME, "meshgrid expects all tensors to have the same dtype");
        if (!fc_device_eq(in[k]->device, in[k + 1]->device))
            return err_raise(I, TDL_ERR_RUNTIME, "meshgrid expects all tensors to have the same device");
    }
    bool xy = !ix->none && strcmp(ix->str, "xy") == 0;
    if (!ix->none && !xy && strcmp(ix->str, "ij") != 0)
        return err_raise(I, TDL_ERR_RUNTIME, "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: %s",
                         ix->str);
    bool swap = xy && n >= 2;
    if (n > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "meshgrid: too many tensors (%d)", n);
    int64_t shape[FC_MAX_DIMS], view[FC_MAX_DIMS];
    for (int k = 0; k < n; k++) {
        FcTensor *t = in[swap && k < 2 ? 1 - k : k];
        /* torch prints the tensor after this text (C++'s operator<<), which is not reproduced */
        if (t->ndim > 1)
            return err_raise(I, TDL_ERR_RUNTIME, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: "
                             "a tensor of %d dimensions", t->ndim);
        shape[k] = fc_tensor_numel(t);
        view[k] = 1;
    }
    FcTensor *grids[FC_MAX_DIMS] = {0};
    FcError e;
    FcStatus st = FC_OK;
    for (int k = 0; k < n && st == FC_OK; k++) {
        FcTensor *v = NULL;
        view[k] = -1;
        st = fc_view(I->fc, in[swap && k < 2 ? 1 - k : k], n, view, &v, &e);
        view[k] = 1;
        if (st == FC_OK) st = fc_expand(I->fc, v, n, shape, &grids[swap && k < 2 ? 1 - k : k], &e);
        fc_tensor_release(v);
    }
    if (st != FC_OK) {
        for (int k = 0; k < n; k++) fc_tensor_release(grids[k]);
        return tensor_check(I, st, &e);
    }
    return tuple_of(I, grids, n, NULL, out);
}

/* take(index): self's elements in C order, gathered at index (any shape, int64; negatives count
 * from the end), a new tensor of index's shape; each index checked in order, with torch's messages. */
bool impl_take(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *self = a[0].t, *index = a[1].t, *h = NULL, *flat = NULL, *ix = NULL, *k = NULL, *r = NULL;
    FcView iv;
    FcError e;
    (void)sig;
    if (index->dtype != FC_INT64)
        return err_raise(I, TDL_ERR_RUNTIME, "take(): Expected a long tensor for index, but got %s",
                         fc_dtype_torch_name(index->dtype));
    int64_t n = fc_tensor_numel(self), m = fc_tensor_numel(index), all = -1;
    if (n == 0 && m != 0) return err_raise(I, TDL_ERR_INDEX, "take(): tried to take from an empty tensor");
    if (!host_dense(I, index, NULL, FC_INT64, &h, &iv)) return false;
    const int64_t *ixs = (const int64_t *)iv.data + iv.offset;
    bool ok = true;
    for (int64_t j = 0; ok && j < m; j++)
        if (ixs[j] < -n || ixs[j] >= n)
            ok = err_raise(I, TDL_ERR_INDEX, "out of range: tried to access index %" PRId64 " on a tensor of %" PRId64
                           " elements.", ixs[j], n);
    fc_tensor_release(h);
    if (!ok) return false;
    /* (index + n) % n: the negatives wrapped, for gather */
    FcStatus st = fc_reshape(I->fc, self, 1, &all, &flat, &e);
    if (st == FC_OK) st = fc_reshape(I->fc, index, 1, &m, &ix, &e);
    if (st == FC_OK && n > 0) st = int_scalar(I->fc, FC_INT64, n, &k, &e);
    if (st == FC_OK && n > 0) st = step(fc_binary(I->fc, FC_OP_ADD, ix, k, &r, &e), &ix, &r);
    if (st == FC_OK && n > 0) st = step(fc_binary(I->fc, FC_OP_MOD, ix, k, &r, &e), &ix, &r);
    if (st == FC_OK) st = fc_gather(I->fc, flat, 0, ix, &r, &e);
    if (st == FC_OK) st = step(fc_reshape(I->fc, r, index->ndim, index->shape, &h, &e), &r, &h);
    fc_tensor_release(flat);
    fc_tensor_release(ix);
    fc_tensor_release(k);
    return chain_result(I, st, &e, r, out);
}

/* take_along_dim(indices, dim=None): PyTorch's composition, with its checks and messages: without
 * dim, self.view(-1).gather(0, indices.view(-1)); with one, self and indices broadcast to each
 * other outside dim, then gathered along it. */
bool impl_take_along_dim(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *self = a[0].t, *index = a[1].t, *x = NULL, *ix = NULL, *r = NULL;
    FcError e;
    FcStatus st;
    int64_t all = -1;
    (void)sig;
    if (a[2].none) {
        st = fc_view(I->fc, self, 1, &all, &x, &e);
        if (st == FC_OK) st = fc_view(I->fc, index, 1, &all, &ix, &e);
        if (st == FC_OK) st = fc_gather(I->fc, x, 0, ix, &r, &e);
        fc_tensor_release(x);
        fc_tensor_release(ix);
        return chain_result(I, st, &e, r, out);
    }
    if (self->ndim != index->ndim)
        return err_raise(I, TDL_ERR_RUNTIME, "torch.take_along_dim(): input and indices should have the same number of "
                         "dimensions, but got %d dimensions for input, and %d dimensions for indices",
                         self->ndim, index->ndim);
    if (index->dtype != FC_INT64)
        return err_raise(I, TDL_ERR_RUNTIME, "torch.take_along_dim(): dtype of indices should be Long but got %s",
                         fc_dtype_torch_name(index->dtype));
    int d, n;
    if (!tensor_check(I, fc_wrap_dim(a[2].i, self->ndim, &d, &e), &e)) return false;
    if (self->ndim == 0)
        return err_raise(I, TDL_ERR_INDEX, "Dimension specified as %d but tensor has no dimensions", d);
    int64_t want[FC_MAX_DIMS], ishape[FC_MAX_DIMS], xshape[FC_MAX_DIMS];
    memcpy(want, self->shape, (size_t)self->ndim * sizeof *want);
    want[d] = index->shape[d];
    st = fc_broadcast_shapes(self->ndim, want, index->ndim, index->shape, &n, ishape, &e);
    memcpy(want, index->shape, (size_t)index->ndim * sizeof *want);
    want[d] = self->shape[d];
    if (st == FC_OK) st = fc_broadcast_shapes(index->ndim, want, self->ndim, self->shape, &n, xshape, &e);
    if (st == FC_OK) st = fc_expand(I->fc, index, n, ishape, &ix, &e);
    if (st == FC_OK) st = fc_expand(I->fc, self, n, xshape, &x, &e);
    if (st == FC_OK) st = fc_gather(I->fc, x, d, ix, &r, &e);
    fc_tensor_release(x);
    fc_tensor_release(ix);
    return chain_result(I, st, &e, r, out);
}


/* isclose: a == b, or |a - b| <= atol + rtol * |b| where that difference is finite; equal_nan:
 * NaN is close to NaN. PyTorch's formula (and its dtype check). */
static bool isclose(Interp *I, TensorArg *a, FcTensor **out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *eq = NULL, *d = NULL, *ad = NULL, *tol = NULL, *fin = NULL, *le = NULL,
             *r = NULL, *tmp;
    FcError e;
    double rtol = a[2].f, atol = a[3].f;
    *out = NULL;
    if (x->dtype != y->dtype)
        return err_raise(I, TDL_ERR_RUNTIME, "%s did not match %s", fc_dtype_torch_name(x->dtype),
                         fc_dtype_torch_name(y->dtype));
    FcStatus st = fc_binary(I->fc, FC_OP_EQ, x, y, &eq, &e);
    if (st == FC_OK && a[4].b && fc_dtype_is_float(x->dtype)) {
        FcTensor *nx = NULL, *ny = NULL, *nn = NULL;
        st = fc_unary(I->fc, FC_OP_ISNAN, x, &nx, &e);
        if (st == FC_OK) st = fc_unary(I->fc, FC_OP_ISNAN, y, &ny, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_AND, nx, ny, &nn, &e);
        if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_OR, eq, nn, &tmp, &e), &eq, &tmp);
        fc_tensor_release(nx);
        fc_tensor_release(ny);
        fc_tensor_release(nn);
    }
    if (st == FC_OK && x->dtype != FC_BOOL) {
        /* the difference in float (as torch: ints are compared through their float difference) */
        st = fc_binary(I->fc, FC_OP_SUB, x, y, &d, &e);
        if (st == FC_OK && !fc_dtype_is_float(d->dtype)) st = step(fc_cast(I->fc, d, FC_FLOAT32, &tmp, &e), &d, &tmp);
        if (st == FC_OK) st = fc_unary(I->fc, FC_OP_ABS, d, &ad, &e);
        if (st == FC_OK) st = fc_unary(I->fc, FC_OP_ABS, y, &tol, &e);
        if (st == FC_OK) st = step(binary_scalar(I->fc, FC_OP_MUL, tol, rtol, &tmp, &e), &tol, &tmp);
        if (st == FC_OK) st = step(binary_scalar(I->fc, FC_OP_ADD, tol, atol, &tmp, &e), &tol, &tmp);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_LE, ad, tol, &le, &e);
        /* finite: |a - b| - |a - b| == 0 */
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, ad, ad, &fin, &e);
        if (st == FC_OK) st = step(binary_scalar(I->fc, FC_OP_EQ, fin, 0.0, &tmp, &e), &fin, &tmp);
        if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_AND, le, fin, &tmp, &e), &le, &tmp);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_OR, eq, le, &r, &e);
    } else if (st == FC_OK) {
        r = fc_tensor_retain(eq);
    }
    fc_tensor_release(eq);
    fc_tensor_release(d);
    fc_tensor_release(ad);
    fc_tensor_release(tol);
    fc_tensor_release(fin);
    fc_tensor_release(le);
    if (!tensor_check(I, st, &e)) return false;
    *out = r;
    return true;
}

bool impl_isclose(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r;
    (void)sig;
    return isclose(I, a, &r) && tensor_value_steal(I, r, out);
}

bool impl_allclose(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r, *all = NULL;
    FcError e;
    FcScalar v = {0};
    (void)sig;
    if (!isclose(I, a, &r)) return false;
    FcStatus st = fc_reduce(I->fc, FC_OP_ALL, r, 0, false, &all, &e);
    if (st == FC_OK) st = fc_item(I->fc, all, &v, &e);
    fc_tensor_release(r);
    fc_tensor_release(all);
    if (!tensor_check(I, st, &e)) return false;
    *out = v_bool(v.i != 0);
    return true;
}

/* ---- einsum -------------------------------------------------------------------------------- */

enum { EIN_LABELS = 52 + FC_MAX_DIMS };     /* a-z, A-Z, then the dims an ellipsis covers */

static int label_of(char c) { return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? c - 'A' + 26 : -1; }
static char label_char(int l) { return (char)(l < 26 ? 'a' + l : 'A' + l - 26); }

typedef struct EinTerm {
    int n;                      /* labels written (without the ellipsis) */
    int lab[FC_MAX_DIMS];
    int ell;                    /* position of the ellipsis among the labels, or -1 */
} EinTerm;

/* Parses one term (p up to end); false with torch's message. */
static bool ein_term(Interp *I, const char *eq, const char *p, const char *end, EinTerm *t)
{
    t->n = 0;
    t->ell = -1;
    for (; p < end; p++) {
        if (*p == ' ') continue;
        if (*p == '.') {
            if (t->ell >= 0 || end - p < 3 || p[1] != '.' || p[2] != '.')
                return err_raise(I, TDL_ERR_RUNTIME, "einsum(): found '.' for operand that is not part of any ellipsis");
            t->ell = t->n;
            p += 2;
            continue;
        }
        int l = label_of(*p);
        if (l < 0)
            return err_raise(I, TDL_ERR_RUNTIME,
                             "einsum(): invalid subscript given at index %d in the equation string, subscripts must be "
                             "in [a-zA-Z]", (int)(p - eq));
        if (t->n == FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "einsum(): too many subscripts");
        t->lab[t->n++] = l;
    }
    return true;
}

/* einsum(equation, *operands): each operand laid out over all the labels (output labels first,
 * in the output's order, then the summed ones), multiplied, summed over the summed labels. A
 * label repeated in one operand takes its diagonal. */
bool impl_einsum(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    const char *eq = a[0].str;
    int nops = a[1].n;
    FcTensor **ops = a[1].ts;
    (void)sig;
    if (nops == 0) return err_raise(I, TDL_ERR_RUNTIME, "einsum(): must provide at least one operand");
    const char *arrow = strstr(eq, "->"), *lhs_end = arrow ? arrow : eq + strlen(eq);
    EinTerm terms[16], outt;
    int nterms = 0;
    for (const char *p = eq;;) {
        const char *c = memchr(p, ',', (size_t)(lhs_end - p));
        const char *e = c ? c : lhs_end;
        if (nterms == nops)
            return err_raise(I, TDL_ERR_RUNTIME, "einsum(): fewer operands were provided than specified in the equation");
        if (nterms == 16) return err_raise(I, TDL_ERR_RUNTIME, "einsum(): at most 16 operands are supported");
        if (!ein_term(I, eq, p, e, &terms[nterms++])) return false;
        if (!c) break;
        p = c + 1;
    }
    if (nterms < nops)
        return err_raise(I, TDL_ERR_RUNTIME, "einsum(): more operands were provided than specified in the equation");
    /* the ellipsis: each operand's covers ndim - n dims, right-aligned with the others' */
    int nell = 0;
    for (int k = 0; k < nops; k++) {
        EinTerm *t = &terms[k];
        if (t->ell < 0 && t->n != ops[k]->ndim)
            return err_raise(I, TDL_ERR_RUNTIME,
                             "einsum(): the number of subscripts in the equation (%d) does not match the number of "
                             "dimensions (%d) for operand %d and no ellipsis was given", t->n, ops[k]->ndim, k);
        if (t->ell >= 0 && t->n > ops[k]->ndim)
            return err_raise(I, TDL_ERR_RUNTIME,
                             "einsum(): the number of subscripts in the equation (%d) is more than the number of "
                             "dimensions (%d) for operand %d", t->n, ops[k]->ndim, k);
        if (t->ell >= 0 && ops[k]->ndim - t->n > nell) nell = ops[k]->ndim - t->n;
    }
    int count[EIN_LABELS] = {0};
    int64_t size[EIN_LABELS];
    for (int k = 0; k < nops; k++)
        for (int j = 0; j < terms[k].n; j++) count[terms[k].lab[j]]++;
    /* the result's labels */
    int order[EIN_LABELS], nord = 0;
    bool in_out[EIN_LABELS] = {false};
    if (arrow) {
        if (!ein_term(I, eq, arrow + 2, arrow + strlen(arrow), &outt)) return false;
        for (int j = 0; j <= outt.n; j++) {
            if (j == outt.ell)
                for (int q = 0; q < nell; q++) order[nord++] = 52 + q, in_out[52 + q] = true;
            if (j == outt.n) break;
            int l = outt.lab[j];
            if (in_out[l])
                return err_raise(I, TDL_ERR_RUNTIME, "einsum(): output subscript %c appears more than once in the output",
                                 label_char(l));
            if (!count[l])
                return err_raise(I, TDL_ERR_RUNTIME,
                                 "einsum(): output subscript %c does not appear in the equation for any input operand",
                                 label_char(l));
            in_out[l] = true;
            order[nord++] = l;
        }
    } else {
        for (int q = 0; q < nell; q++) order[nord++] = 52 + q, in_out[52 + q] = true;
        for (int l = 0; l < 52; l++)
            if (count[l] == 1) order[nord++] = l, in_out[l] = true;
    }
    int nout = nord;
    for (int k = 0; k < nops; k++)
        for (int j = 0; j < terms[k].n; j++) {
            int l = terms[k].lab[j];
            bool seen = false;
            for (int q = 0; q < nord && !seen; q++) seen = order[q] == l;
            if (!seen) order[nord++] = l;
        }
    for (int q = 0; q < nell; q++)      /* ellipsis dims left out of the output are summed */
        if (!in_out[52 + q]) order[nord++] = 52 + q;
    if (nord > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "einsum(): too many subscripts");
    for (int k = 1; k < nops; k++)
        if (ops[k]->dtype != ops[0]->dtype)
            return err_raise(I, TDL_ERR_RUNTIME, "expected scalar type %s but found %s",
                             fc_dtype_torch_name(ops[0]->dtype), fc_dtype_torch_name(ops[k]->dtype));
    for (int l = 0; l < EIN_LABELS; l++) size[l] = -1;
    FcTensor *prod = NULL, *tmp;
    FcError e;
    FcStatus st = FC_OK;
    for (int k = 0; k < nops && st == FC_OK; k++) {
        FcTensor *x = ops[k];
        EinTerm *t = &terms[k];
        /* the label of each dim of x */
        int lab[FC_MAX_DIMS], nd = x->ndim, ne = t->ell >= 0 ? nd - t->n : 0;
        for (int j = 0, q = 0; q < nd; j++) {
            if (j == t->ell)
                for (int z = 0; z < ne; z++) lab[q++] = 52 + nell - ne + z;
            if (j < t->n) lab[q++] = t->lab[j];
        }
        /* sizes, and the diagonal of a repeated label: one dim of stride the sum */
        int64_t shp[FC_MAX_DIMS], str[FC_MAX_DIMS];
        int ul[FC_MAX_DIMS], nu = 0;
        bool repeated = false;
        for (int q = 0; q < nd; q++)
            for (int z = 0; z < q; z++) repeated |= lab[z] == lab[q];
        FcTensor *y = fc_tensor_retain(x);
        if (repeated) st = fc_realize(I->fc, y, &e);
        for (int q = 0; q < nd && st == FC_OK; q++) {
            int z = 0;
            while (z < nu && ul[z] != lab[q]) z++;
            if (z < nu) {
                if (shp[z] != x->shape[q])
                    st = ferr(&e, FC_ERR_RUNTIME,
                                        "einsum(): subscript %c is repeated for operand %d but the sizes don't match, "
                                        "%lld != %lld", label_char(lab[q]), k, (long long)shp[z], (long long)x->shape[q]);
                else if (repeated) str[z] += y->strides[q];
                continue;
            }
            ul[nu] = lab[q];
            shp[nu] = x->shape[q];
            if (repeated) str[nu] = y->strides[q];
            nu++;
        }
        if (st == FC_OK && repeated) st = step(fc_as_strided(I->fc, y, nu, shp, str, y->offset, &tmp, &e), &y, &tmp);
        for (int z = 0; z < nu && st == FC_OK; z++) {
            int l = ul[z];
            if (size[l] >= 0 && size[l] != shp[z] && size[l] != 1 && shp[z] != 1) {
                char name[8];
                if (l < 52) snprintf(name, sizeof name, "%c", label_char(l));
                else snprintf(name, sizeof name, "...");
                st = ferr(&e, FC_ERR_RUNTIME,
                                    "einsum(): subscript %s has size %lld for operand %d which does not broadcast with "
                                    "previously seen size %lld", name, (long long)shp[z], k, (long long)size[l]);
            } else if (size[l] < 0 || size[l] == 1) {
                size[l] = shp[z];
            }
        }
        /* permute into the global order, then the missing labels as size-1 dims */
        int64_t perm[FC_MAX_DIMS], full[FC_MAX_DIMS];
        int np = 0;
        for (int q = 0; q < nord; q++) {
            full[q] = 1;
            for (int z = 0; z < nu; z++)
                if (ul[z] == order[q]) {
                    perm[np++] = z;
                    full[q] = shp[z];
                }
        }
        if (st == FC_OK) st = step(fc_permute(I->fc, y, nu, perm, &tmp, &e), &y, &tmp);
        if (st == FC_OK) st = step(fc_reshape(I->fc, y, nord, full, &tmp, &e), &y, &tmp);
        if (st == FC_OK && prod) st = step(fc_binary(I->fc, FC_OP_MUL, prod, y, &tmp, &e), &prod, &tmp);
        else if (st == FC_OK) prod = fc_tensor_retain(y);
        fc_tensor_release(y);
    }
    if (st == FC_OK && nord > nout) {
        uint64_t mask = 0;
        for (int q = nout; q < nord; q++) mask |= UINT64_C(1) << q;
        FcDType dt = prod->dtype;
        st = step(fc_reduce(I->fc, FC_OP_SUM, prod, mask, false, &tmp, &e), &prod, &tmp);
        if (st == FC_OK && prod->dtype != dt) st = step(fc_cast(I->fc, prod, dt, &tmp, &e), &prod, &tmp);
    }
    if (st != FC_OK) fc_tensor_release(prod);
    return result(I, st, &e, prod, out);
}

/* ---- in-place methods ---------------------------------------------------------------------- */

bool tensor_write_into(Interp *I, FcTensor *self, FcTensor *res)
{
    FcError e;
    if (!tensor_check(I, fc_realize_target(I->fc, self, &e), &e)) return false;
    for (int k = 0; k < self->ndim; k++)
        if (self->strides[k] == 0 && self->shape[k] > 1)
            return err_raise(I, TDL_ERR_RUNTIME,
                             "unsupported operation: more than one element of the written-to tensor refers to a single "
                             "memory location. Please clone() the tensor before performing the operation.");
    return tensor_check(I, fc_assign(I->fc, self, res, &e), &e);
}

bool tensor_return_self(Interp *I, TensorArg *self, Value *out)
{
    if (self->v.tag == V_TENSOR && as_tensor(self->v) == self->t) {
        val_incref(self->v);
        *out = self->v;
        return true;
    }
    return tensor_value_steal(I, fc_tensor_retain(self->t), out);
}

/* NAME_(...): the row NAME with the same signature, its result cast into self (fc_inplace_result:
 * self's shape, a dtype that can be cast) and written into self's memory. */
bool impl_inplace(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    char name[32];
    size_t n = strlen(sig->row->name);
    if (n < 2 || n >= sizeof name) return err_raise(I, TDL_ERR_RUNTIME, "internal error: in-place row %s", sig->row->name);
    memcpy(name, sig->row->name, n - 1);
    name[n - 1] = 0;
    int r = tensor_row(name, TV_METHOD);
    while (r >= 0 && r < tensor_nops && strcmp(tensor_ops[r].name, name) == 0 && strcmp(tensor_ops[r].sig, sig->row->sig) != 0)
        r++;
    if (r < 0 || r >= tensor_nops || strcmp(tensor_ops[r].name, name) != 0)
        return err_raise(I, TDL_ERR_RUNTIME, "internal error: no out-of-place row for %s", sig->row->name);
    FcTensor *self = a[0].t, *res = NULL;
    Value rv;
    if (!tensor_run_row(I, &I->tsigs[r], a, &rv)) return false;
    FcTensor *rt = as_tensor(rv);
    FcError e;
    /* pow_(Scalar) checks the dtype itself, with its own message (as `x **= 2.0`) */
    if (strcmp(name, "pow") == 0 && a[1].t && a[1].t->wrapped_number && rt->dtype != self->dtype) {
        FcDType want = rt->dtype;
        val_decref(I, rv);
        return err_raise(I, TDL_ERR_RUNTIME, "Found dtype %s but expected %s", fc_dtype_torch_name(self->dtype),
                         fc_dtype_torch_name(want));
    }
    FcStatus st = fc_inplace_result(I->fc, self, rt, &res, &e);
    val_decref(I, rv);
    bool ok = tensor_check(I, st, &e) && tensor_write_into(I, self, res);
    fc_tensor_release(res);
    return ok && tensor_return_self(I, &a[0], out);
}

/* fill_(value): a number, or a 0-dim tensor; zero_(): fill_(0). */
bool impl_fill_(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *self = a[0].t, *v = NULL;
    FcError e;
    FcStatus st;
    if (strcmp(sig->row->name, "zero_") == 0) {
        st = int_scalar(I->fc, self->dtype, 0, &v, &e);
    } else if (a[1].t) {
        if (a[1].t->ndim != 0)
            return err_raise(I, TDL_ERR_RUNTIME,
                             "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.", a[1].t->ndim);
        if (!tensor_item_fits(I, a[1].t, self->dtype)) return false;
        st = fc_cast(I->fc, a[1].t, self->dtype, &v, &e);
    } else {
        if (!tensor_scalar_fits(I, a[1].s, a[1].sdt, self->dtype, true)) return false;
        st = fc_scalar(I->fc, self->dtype, tensor_scalar_as(a[1].s, a[1].sdt, self->dtype), false, &v, &e);
    }
    bool ok = tensor_check(I, st, &e) && tensor_write_into(I, self, v);
    fc_tensor_release(v);
    return ok && tensor_return_self(I, &a[0], out);
}

/* copy_(src): src broadcast to self's shape and cast to its dtype. */
bool impl_copy_(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    (void)sig;
    return tensor_write_into(I, a[0].t, a[1].t) && tensor_return_self(I, &a[0], out);
}

/* masked_fill_(mask, value) */
bool impl_masked_fill_(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r;
    (void)sig;
    if (!masked_fill(I, a, &r)) return false;
    bool ok = tensor_write_into(I, a[0].t, r);
    fc_tensor_release(r);
    return ok && tensor_return_self(I, &a[0], out);
}

/* index_fill_(dim, index, value) */
bool impl_index_fill_(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r;
    (void)sig;
    if (!index_fill(I, a, &r)) return false;
    bool ok = tensor_write_into(I, a[0].t, r);
    fc_tensor_release(r);
    return ok && tensor_return_self(I, &a[0], out);
}

/* ---- PyTorch's names for small compositions ---------------------------------------------------- */

/* The bool result of op on x against a wrapped float v (isinf: |x| == inf), or for a tensor that is
 * not floating (which holds no infinity) all `whole` (x == x) or none (x != x). */
static FcStatus float_test(FcCtx *ctx, FcTensor *x, FcOp op, double v, bool absolute, bool whole, FcTensor **out,
                           FcError *e)
{
    if (!fc_dtype_is_float(x->dtype)) return fc_binary(ctx, whole ? FC_OP_EQ : FC_OP_NE, x, x, out, e);
    FcTensor *ax = NULL;
    FcStatus st = absolute ? fc_unary(ctx, FC_OP_ABS, x, &ax, e) : FC_OK;
    if (st == FC_OK) st = binary_scalar(ctx, op, absolute ? ax : x, v, out, e);
    fc_tensor_release(ax);
    return st;
}

static bool float_test_value(Interp *I, TensorArg *a, FcOp op, double v, bool absolute, bool whole, Value *out)
{
    FcTensor *r = NULL;
    FcError e;
    FcStatus st = float_test(I->fc, a[0].t, op, v, absolute, whole, &r, &e);
    return chain_result(I, st, &e, r, out);
}

bool impl_isinf(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    (void)sig;
    return float_test_value(I, a, FC_OP_EQ, INFINITY, true, false, out);
}

bool impl_isposinf(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    (void)sig;
    return float_test_value(I, a, FC_OP_EQ, INFINITY, false, false, out);
}

bool impl_isneginf(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    (void)sig;
    return float_test_value(I, a, FC_OP_EQ, -INFINITY, false, false, out);
}

/* signbit: whether the sign bit is set (-0.0 and a negative NaN too): copysign(1, x) < 0 for
 * floats, x < 0 for ints, false for bools. */
bool impl_signbit(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *k = NULL, *c = NULL, *r = NULL;
    FcError e;
    (void)sig;
    FcStatus st;
    if (fc_dtype_is_float(x->dtype)) {
        st = float_scalar(I->fc, 1.0, &k, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_COPYSIGN, k, x, &c, &e);
        if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_LT, c, 0.0, &r, &e);
    } else {
        st = int_scalar(I->fc, x->dtype, 0, &k, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_LT, x, k, &r, &e);
    }
    fc_tensor_release(k);
    fc_tensor_release(c);
    return chain_result(I, st, &e, r, out);
}

/* isfinite: |x| < inf (NaN compares false), every element of a tensor that is not floating. */
bool impl_isfinite(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    (void)sig;
    return float_test_value(I, a, FC_OP_LT, INFINITY, true, true, out);
}

/* deg2rad / rad2deg: x times the double constant (PyTorch's M_PI / 180, 180 / M_PI) as a wrapped
 * number; a tensor that is not floating (bool too) becomes the default float first. */
static bool angle(Interp *I, TensorArg *a, double k, Value *out)
{
    FcTensor *x = a[0].t, *f = NULL, *r = NULL;
    FcError e;
    FcStatus st = fc_dtype_is_float(x->dtype) ? FC_OK : fc_cast(I->fc, x, FC_FLOAT32, &f, &e);
    if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_MUL, f ? f : x, k, &r, &e);
    fc_tensor_release(f);
    return chain_result(I, st, &e, r, out);
}

bool impl_deg2rad(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    (void)sig;
    return angle(I, a, M_PI / 180.0, out);
}

bool impl_rad2deg(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    (void)sig;
    return angle(I, a, 180.0 / M_PI, out);
}

/* clamp_min(min) / clamp_max(max): clamp with one bound. */
bool impl_clamp_min(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r = NULL;
    FcError e;
    (void)sig;
    FcStatus st = fc_clamp(I->fc, a[0].t, a[1].t, NULL, &r, &e);
    return chain_result(I, st, &e, r, out);
}

bool impl_clamp_max(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r = NULL;
    FcError e;
    (void)sig;
    FcStatus st = fc_clamp(I->fc, a[0].t, NULL, a[1].t, &r, &e);
    return chain_result(I, st, &e, r, out);
}

/* count_nonzero(dim=None): the int64 count of x != 0 over dim (every dim when None). */
bool impl_count_nonzero(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *nz = NULL, *r = NULL;
    FcError e;
    uint64_t mask = 0;
    (void)sig;
    if (!tensor_dim_mask(I, x, &a[1], &mask)) return false;
    if (a[1].none) mask = x->ndim ? (UINT64_C(1) << x->ndim) - 1 : 0;
    FcTensor *tmp;
    FcStatus st = binary_scalar(I->fc, FC_OP_NE, x, 0.0, &nz, &e);
    if (st == FC_OK) st = step(fc_cast(I->fc, nz, FC_INT64, &tmp, &e), &nz, &tmp);
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_SUM, nz, mask, false, &r, &e);
    fc_tensor_release(nz);
    return chain_result(I, st, &e, r, out);
}

/* "[a, b, c]" */
static const char *ints_text(int n, const int64_t *v, char *buf, size_t cap)
{
    size_t w = (size_t)snprintf(buf, cap, "[");
    for (int k = 0; k < n && w < cap; k++)
        w += (size_t)snprintf(buf + w, cap - w, "%s%lld", k ? ", " : "", (long long)v[k]);
    if (w < cap) snprintf(buf + w, cap - w, "]");
    return buf;
}

/* unflatten(dim, sizes): dim split into sizes (one may be -1), a view */
bool impl_unflatten(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *r;
    FcError e;
    int d;
    (void)sig;
    if (!tensor_check(I, fc_wrap_dim(a[1].i, x->ndim, &d, &e), &e)) return false;
    const TensorArg *sz = &a[2];
    if (sz->n == 0) return err_raise(I, TDL_ERR_RUNTIME, "unflatten: sizes must be non-empty");
    if (x->ndim - 1 + sz->n > FC_MAX_DIMS)
        return err_raise(I, TDL_ERR_RUNTIME, "unflatten: more than %d dims", FC_MAX_DIMS);
    int64_t shape[FC_MAX_DIMS], prod = 1;
    int infer = -1, n = 0;
    for (int k = 0; k < sz->n; k++) {
        if (sz->ints[k] == -1 && infer >= 0)
            return err_raise(I, TDL_ERR_RUNTIME, "unflatten got an unexpected error:\nonly one dimension can be inferred");
        if (sz->ints[k] == -1) infer = k;
        else prod *= sz->ints[k];
    }
    for (int k = 0; k < x->ndim; k++) {
        if (k != d) {
            shape[n++] = x->shape[k];
            continue;
        }
        for (int j = 0; j < sz->n; j++)
            shape[n++] = j == infer ? (prod != 0 ? x->shape[d] / prod : -1) : sz->ints[j];
    }
    bool fits = infer >= 0 ? prod != 0 && x->shape[d] % prod == 0 : prod == x->shape[d];
    if (!fits) {
        char b[256];
        return err_raise(I, TDL_ERR_RUNTIME,
                         "unflatten: Provided sizes %s don't multiply up to the size of dim %d (%lld) in the input tensor",
                         ints_text(sz->n, sz->ints, b, sizeof b), d, (long long)x->shape[d]);
    }
    FcStatus st = fc_view(I->fc, x, n, shape, &r, &e);
    return result(I, st, &e, r, out);
}

/* movedim(source, destination) / moveaxis: each source dim to its destination, the others in
 * their order in the places left (PyTorch's checks and messages). */

bool impl_movedim(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *r = NULL;
    TensorArg *src = &a[1], *dst = &a[2];
    FcError e;
    char ts[200], td[200];
    (void)sig;
    ints_text(src->n, src->ints, ts, sizeof ts);
    ints_text(dst->n, dst->ints, td, sizeof td);
    if (src->n != dst->n)
        return err_raise(I, TDL_ERR_RUNTIME, "movedim: Invalid source or destination dims: source (%s dims) should contain "
                         "the same number of dims as destination (%s dims)", ts, td);
    int nd = x->ndim ? x->ndim : 1, s[FC_MAX_DIMS], d[FC_MAX_DIMS];
    bool used_s[FC_MAX_DIMS] = {0}, used_d[FC_MAX_DIMS] = {0};
    for (int k = 0; k < src->n; k++) {
        if (!tensor_check(I, fc_wrap_dim(src->ints[k], x->ndim, &s[k], &e), &e)) return false;
        if (!tensor_check(I, fc_wrap_dim(dst->ints[k], x->ndim, &d[k], &e), &e)) return false;
    }
    for (int k = 0; k < src->n; k++) {
        if (used_s[s[k]]) return err_raise(I, TDL_ERR_RUNTIME, "movedim: repeated dim in `source` (%s)", ts);
        used_s[s[k]] = true;
    }
    for (int k = 0; k < dst->n; k++) {
        if (used_d[d[k]]) return err_raise(I, TDL_ERR_RUNTIME, "movedim: repeated dim in `destination` (%s)", td);
        used_d[d[k]] = true;
    }
    if (x->ndim == 0) {     /* a view, as PyTorch's alias() */
        FcStatus st = fc_permute(I->fc, x, 0, NULL, &r, &e);
        return result(I, st, &e, r, out);
    }
    int64_t perm[FC_MAX_DIMS];
    for (int k = 0; k < nd; k++) perm[k] = -1;
    for (int k = 0; k < src->n; k++) perm[d[k]] = s[k];
    for (int k = 0, next = 0; k < nd; k++) {
        if (perm[k] >= 0) continue;
        while (used_s[next]) next++;
        perm[k] = next++;
    }
    FcStatus st = fc_permute(I->fc, x, nd, perm, &r, &e);
    return chain_result(I, st, &e, r, out);
}

/* outer(vec2) / ger: a column of self times a row of vec2. */
bool impl_outer(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *col = NULL, *r = NULL;
    FcError e;
    (void)sig;
    if (x->ndim != 1) return err_raise(I, TDL_ERR_RUNTIME, "outer: Expected 1-D argument self, but got %d-D", x->ndim);
    if (y->ndim != 1) return err_raise(I, TDL_ERR_RUNTIME, "outer: Expected 1-D argument vec2, but got %d-D", y->ndim);
    FcStatus st = fc_unsqueeze(I->fc, x, 1, &col, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, col, y, &r, &e);
    fc_tensor_release(col);
    return chain_result(I, st, &e, r, out);
}

/* mm(mat2): two matrices; mv(vec): a matrix and a vector (torch's checks), then matmul. */
bool impl_mm(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *r = NULL;
    FcError e;
    (void)sig;
    if (x->ndim != 2) return err_raise(I, TDL_ERR_RUNTIME, "self must be a matrix");
    if (y->ndim != 2) return err_raise(I, TDL_ERR_RUNTIME, "mat2 must be a matrix");
    FcStatus st = fc_matmul(I->fc, x, y, &r, &e);
    return chain_result(I, st, &e, r, out);
}

bool impl_mv(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *v = a[1].t, *r = NULL;
    FcError e;
    (void)sig;
    if (x->ndim != 2 || v->ndim != 1)
        return err_raise(I, TDL_ERR_RUNTIME, "vector + matrix @ vector expected, got 1, %d, %d", x->ndim, v->ndim);
    if (x->shape[1] != v->shape[0])
        return err_raise(I, TDL_ERR_RUNTIME, "size mismatch, got %lld, %lldx%lld,%lld", (long long)x->shape[0],
                         (long long)x->shape[0], (long long)x->shape[1], (long long)v->shape[0]);
    FcStatus st = fc_matmul(I->fc, x, v, &r, &e);
    return chain_result(I, st, &e, r, out);
}

/* t[:, ..., ix] at dim d (ix one FcIndex), a view for a slice or an integer. */
static FcStatus index_at(FcCtx *ctx, FcTensor *t, int d, FcIndex ix, FcTensor **out, FcError *e)
{
    FcIndex all[FC_MAX_DIMS];
    for (int k = 0; k < d; k++) all[k] = (FcIndex){.kind = FC_IX_SLICE, .step = 1};
    all[d] = ix;
    return fc_index(ctx, t, d + 1, all, out, e);
}

/* narrow(dim, start, length): the view of `length` indices from `start` (negative: from the end),
 * with PyTorch 1.13's checks. */
bool impl_narrow(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *r = NULL;
    FcError e;
    int d;
    (void)sig;
    if (t->ndim == 0) return err_raise(I, TDL_ERR_RUNTIME, "narrow() cannot be applied to a 0-dim tensor.");
    if (!tensor_check(I, fc_wrap_dim(a[1].i, t->ndim, &d, &e), &e)) return false;
    /* start wrapped as a dim of `size` would be (PyTorch 1.13's maybe_wrap_dim), but for the end */
    int64_t size = t->shape[d], start = a[2].i, len = a[3].i;
    if (start != size && (start < -size || start >= size))
        return err_raise(I, TDL_ERR_INDEX, "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                         (long long)-size, (long long)size - 1, (long long)start);
    if (start < 0) start += size;
    if (len < 0 || start > size - len)
        return err_raise(I, TDL_ERR_RUNTIME, "start (%lld) + length (%lld) exceeds dimension size (%lld).",
                         (long long)start, (long long)len, (long long)size);
    FcIndex ix = {.kind = FC_IX_SLICE, .start = start, .stop = start + len, .step = 1, .has_start = true, .has_stop = true};
    FcStatus st = index_at(I->fc, t, d, ix, &r, &e);
    return chain_result(I, st, &e, r, out);
}

/* select(dim, index): the view at one index of dim (negative: from the end). */
static bool select_one(Interp *I, FcTensor *t, int64_t dim, int64_t index, FcTensor **out)
{
    FcError e;
    int d;
    *out = NULL;
    if (t->ndim == 0) return err_raise(I, TDL_ERR_INDEX, "select() cannot be applied to a 0-dim tensor.");
    if (!tensor_check(I, fc_wrap_dim(dim, t->ndim, &d, &e), &e)) return false;
    int64_t size = t->shape[d];
    char sz[200];
    if (index < -size || index >= size)
        return err_raise(I, TDL_ERR_INDEX, "select(): index %lld out of range for tensor of size %s at dimension %d",
                         (long long)index, ints_text(t->ndim, t->shape, sz, sizeof sz), d);
    FcStatus st = index_at(I->fc, t, d, (FcIndex){.kind = FC_IX_INT, .i = index < 0 ? index + size : index}, out, &e);
    return tensor_check(I, st, &e);
}

bool impl_select(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r;
    (void)sig;
    return select_one(I, a[0].t, a[1].i, a[2].i, &r) && tensor_value_steal(I, r, out);
}

/* unbind(dim=0): a tuple of the views at each index of dim. */
bool impl_unbind(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t;
    FcError e;
    int d;
    (void)sig;
    if (t->ndim == 0)
        return err_raise(I, TDL_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions", (long long)a[1].i);
    if (!tensor_check(I, fc_wrap_dim(a[1].i, t->ndim, &d, &e), &e)) return false;
    int64_t n = t->shape[d];
    TupleObj *tu = tuple_alloc(I, (size_t)n);
    if (!tu) return false;
    bool ok = true;
    for (int64_t k = 0; k < n; k++) {
        FcTensor *r = NULL;
        tu->items[k] = v_none();
        ok = ok && select_one(I, t, d, k, &r) && tensor_value_steal(I, r, &tu->items[k]);
    }
    *out = v_obj(V_TUPLE, &tu->h);
    if (!ok) {
        val_decref(I, *out);
        *out = v_none();
    }
    return ok;
}

/* tile(dims): repeat, dims padded with leading ones to the tensor's rank. */
bool impl_tile(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    TensorArg b[2] = {a[0], a[1]};
    int pad = a[0].t->ndim - a[1].n;
    if (pad > 0) {
        for (int k = 0; k < a[1].n; k++) b[1].ints[pad + k] = a[1].ints[k];
        for (int k = 0; k < pad; k++) b[1].ints[k] = 1;
        b[1].n = a[0].t->ndim;
    }
    return impl_repeat(I, sig, b, out);
}

/* fliplr / flipud: flip dim 1 (at least 2-D) / dim 0 (at least 1-D). */
static bool flip_one(Interp *I, const TensorSig *sig, TensorArg *a, int dim, Value *out)
{
    if (a[0].t->ndim < dim + 1) return err_raise(I, TDL_ERR_RUNTIME, "Input must be >= %d-d.", dim + 1);
    TensorArg b[2] = {a[0]};
    b[1].n = 1;
    b[1].ints[0] = dim;
    return impl_flip(I, sig, b, out);
}

bool impl_fliplr(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { return flip_one(I, sig, a, 1, out); }
bool impl_flipud(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { return flip_one(I, sig, a, 0, out); }

/* t with at least n dims, as torch.atleast_1d/2d/3d: a 0-dim tensor becomes [1] ([1, 1], [1, 1, 1]);
 * a 1-D one [1, m] for 2-D and [1, m, 1] for 3-D; a 2-D one [r, c, 1] for 3-D. */
static FcStatus at_least(FcCtx *ctx, FcTensor *t, int n, FcTensor **out, FcError *e)
{
    int64_t shape[3] = {1, 1, 1};
    if (t->ndim >= n) {
        *out = fc_tensor_retain(t);
        return FC_OK;
    }
    if (t->ndim == 1) shape[1] = t->shape[0];
    if (t->ndim == 2) shape[0] = t->shape[0], shape[1] = t->shape[1];
    return fc_reshape(ctx, t, n, shape, out, e);
}

static bool at_least_value(Interp *I, TensorArg *a, int n, Value *out)
{
    FcTensor *r = NULL;
    FcError e;
    FcStatus st = at_least(I->fc, a[0].t, n, &r, &e);
    return chain_result(I, st, &e, r, out);
}

bool impl_atleast_1d(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return at_least_value(I, a, 1, out); }
bool impl_atleast_2d(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return at_least_value(I, a, 2, out); }
bool impl_atleast_3d(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return at_least_value(I, a, 3, out); }

/* vstack / hstack / dstack / column_stack: cat of the tensors made at least 2-D (dim 0), 1-D (dim
 * 1, or 0 when they are all 1-D), 3-D (dim 2), or columns (0-D and 1-D ones as [m, 1]; dim 1). */
static bool stack_like(Interp *I, TensorArg *a, int kind, const char *name, Value *out)
{
    int n = a[0].n;
    FcError e;
    if (n == 0) return err_raise(I, TDL_ERR_RUNTIME, "%s expects a non-empty TensorList", name);
    FcTensor **ts = mem_calloc((size_t)n, sizeof *ts), *r = NULL;
    if (!ts) return err_nomem(I);
    FcStatus st = FC_OK;
    bool all1 = true;
    for (int k = 0; k < n && st == FC_OK; k++) {
        FcTensor *t = a[0].ts[k];
        if (kind == 0) st = at_least(I->fc, t, 2, &ts[k], &e);
        else if (kind == 1) st = at_least(I->fc, t, 1, &ts[k], &e);
        else if (kind == 2) st = at_least(I->fc, t, 3, &ts[k], &e);
        else if (t->ndim <= 1) {
            int64_t shape[2] = {t->ndim ? t->shape[0] : 1, 1};
            st = fc_reshape(I->fc, t, 2, shape, &ts[k], &e);
        } else {
            ts[k] = fc_tensor_retain(t);
        }
        if (st == FC_OK) all1 = all1 && ts[k]->ndim == 1;
    }
    int dim = kind == 0 ? 0 : kind == 1 ? (all1 ? 0 : 1) : kind == 2 ? 2 : 1;
    if (st == FC_OK) st = fc_cat(I->fc, n, ts, dim, &r, &e);
    for (int k = 0; k < n; k++) fc_tensor_release(ts[k]);
    mem_free(ts);
    return chain_result(I, st, &e, r, out);
}

bool impl_vstack(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return stack_like(I, a, 0, "vstack", out); }
bool impl_hstack(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return stack_like(I, a, 1, "hstack", out); }
bool impl_dstack(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return stack_like(I, a, 2, "dstack", out); }
bool impl_column_stack(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    (void)sig;
    return stack_like(I, a, 3, "column_stack", out);
}

/* ---- pointwise compositions in PyTorch 1.13's formulas ------------------------------------------ */

/* x cast to dt (a reference to x itself when it has it). */
static FcStatus as_dtype(FcCtx *ctx, FcTensor *x, FcDType dt, FcTensor **out, FcError *e)
{
    if (x->dtype == dt) {
        *out = fc_tensor_retain(x);
        return FC_OK;
    }
    return fc_cast(ctx, x, dt, out, e);
}

/* where(cond, wrapped v, x) */
static FcStatus where_value(FcCtx *ctx, FcTensor *cond, double v, FcTensor *x, FcTensor **out, FcError *e)
{
    FcTensor *s = NULL;
    FcStatus st = float_scalar(ctx, v, &s, e);
    if (st == FC_OK) st = fc_where(ctx, cond, s, x, out, e);
    fc_tensor_release(s);
    return st;
}

/* frac: x - trunc(x), floating tensors only. */
bool impl_frac(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *t = NULL, *r = NULL;
    FcError e;
    (void)sig;
    if (!fc_dtype_is_float(x->dtype))
        return err_raise(I, TDL_ERR_RUNTIME, "\"frac_cpu\" not implemented for '%s'", fc_dtype_torch_name(x->dtype));
    FcStatus st = fc_unary(I->fc, FC_OP_TRUNC, x, &t, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, x, t, &r, &e);
    fc_tensor_release(t);
    return chain_result(I, st, &e, r, out);
}

/* The largest finite value of a float dtype. */
static double float_max(FcDType dt)
{
    switch (dt) {
    case FC_FLOAT16: return 65504.0;
    case FC_BFLOAT16: return 3.3895313892515355e38;
    case FC_FLOAT32: return 3.4028234663852886e38;
    default: return 1.7976931348623157e308;
    }
}

/* nan_to_num(nan=0.0, posinf=None, neginf=None): NaN, +inf and -inf replaced (the infinities by
 * the dtype's largest and lowest finite values by default); a tensor that is not floating is copied. */
bool impl_nan_to_num(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *c = NULL, *r = NULL, *tmp;
    FcError e;
    (void)sig;
    if (!fc_dtype_is_float(x->dtype)) {
        FcStatus st = fc_clone(I->fc, x, FC_MF_PRESERVE, &r, &e);
        return chain_result(I, st, &e, r, out);
    }
    double big = float_max(x->dtype);
    double nanv = a[1].none ? 0.0 : a[1].f, pos = a[2].none ? big : a[2].f, neg = a[3].none ? -big : a[3].f;
    FcStatus st = fc_unary(I->fc, FC_OP_ISNAN, x, &c, &e);
    if (st == FC_OK) st = where_value(I->fc, c, nanv, x, &r, &e);
    if (st == FC_OK) st = step(binary_scalar(I->fc, FC_OP_EQ, x, INFINITY, &tmp, &e), &c, &tmp);
    if (st == FC_OK) st = step(where_value(I->fc, c, pos, r, &tmp, &e), &r, &tmp);
    if (st == FC_OK) st = step(binary_scalar(I->fc, FC_OP_EQ, x, -INFINITY, &tmp, &e), &c, &tmp);
    if (st == FC_OK) st = step(where_value(I->fc, c, neg, r, &tmp, &e), &r, &tmp);
    fc_tensor_release(c);
    return chain_result(I, st, &e, r, out);
}

/* The operands of a float op made its dtype: result_type, or float32 when that is not a float. */
static FcStatus float_operands(FcCtx *ctx, FcTensor *x, FcTensor *y, FcTensor **xf, FcTensor **yf, FcError *e)
{
    FcOperand ops[2] = {tensor_operand(x), tensor_operand(y)};
    FcDType rt = fc_result_type(ops, 2);
    if (!fc_dtype_is_float(rt)) rt = FC_FLOAT32;
    *xf = *yf = NULL;
    FcStatus st = as_dtype(ctx, x, rt, xf, e);
    if (st == FC_OK) st = as_dtype(ctx, y, rt, yf, e);
    return st;
}

/* xlogy(x, y): NaN where y is, 0 where x is 0, else x * log(y). */
bool impl_xlogy(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = NULL, *y = NULL, *l = NULL, *r = NULL, *c = NULL, *tmp;
    FcError e;
    (void)sig;
    FcStatus st = float_operands(I->fc, a[0].t, a[1].t, &x, &y, &e);
    if (st == FC_OK) st = fc_unary(I->fc, FC_OP_LOG, y, &l, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, x, l, &r, &e);
    if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_EQ, x, 0.0, &c, &e);
    if (st == FC_OK) st = step(where_value(I->fc, c, 0.0, r, &tmp, &e), &r, &tmp);
    if (st == FC_OK) st = step(fc_unary(I->fc, FC_OP_ISNAN, y, &tmp, &e), &c, &tmp);
    if (st == FC_OK) st = step(where_value(I->fc, c, NAN, r, &tmp, &e), &r, &tmp);
    fc_tensor_release(x);
    fc_tensor_release(y);
    fc_tensor_release(l);
    fc_tensor_release(c);
    return chain_result(I, st, &e, r, out);
}

/* float_power(exponent): pow in float64. */
bool impl_float_power(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = NULL, *y = NULL, *r = NULL;
    FcError e;
    (void)sig;
    FcStatus st = as_dtype(I->fc, a[0].t, FC_FLOAT64, &x, &e);
    if (st == FC_OK) st = as_dtype(I->fc, a[1].t, FC_FLOAT64, &y, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_POW, x, y, &r, &e);
    fc_tensor_release(x);
    fc_tensor_release(y);
    return chain_result(I, st, &e, r, out);
}

/* heaviside(values): values where x is 0, else (x > 0) in x's dtype; the dtypes must agree. */
bool impl_heaviside(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *v = a[1].t, *pos = NULL, *z = NULL, *r = NULL, *tmp;
    FcError e;
    (void)sig;
    if (x->dtype != v->dtype)
        return err_raise(I, TDL_ERR_RUNTIME, "heaviside is not yet implemented for tensors with different dtypes.");
    FcStatus st = binary_scalar(I->fc, FC_OP_GT, x, 0.0, &pos, &e);
    if (st == FC_OK) st = step(fc_cast(I->fc, pos, x->dtype, &tmp, &e), &pos, &tmp);
    if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_EQ, x, 0.0, &z, &e);
    if (st == FC_OK) st = fc_where(I->fc, z, v, pos, &r, &e);
    fc_tensor_release(pos);
    fc_tensor_release(z);
    return chain_result(I, st, &e, r, out);
}

/* logit(eps=None): log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given. */
bool impl_logit(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = NULL, *z = NULL, *d = NULL, *r = NULL, *tmp;
    FcError e;
    (void)sig;
    FcStatus st = as_dtype(I->fc, a[0].t, fc_dtype_is_float(a[0].t->dtype) ? a[0].t->dtype : FC_FLOAT32, &x, &e);
    if (st == FC_OK && !a[1].none && a[1].f >= 0) {
        /* the bounds in x's dtype (float arithmetic below double, as torch's scalar_t(1) - eps) */
        FcTensor *lo = NULL, *hi = NULL;
        double eps = a[1].f, top = x->dtype == FC_FLOAT64 ? 1.0 - eps : (double)(1.0f - (float)eps);
        st = float_scalar(I->fc, eps, &lo, &e);
        if (st == FC_OK) st = float_scalar(I->fc, top, &hi, &e);
        if (st == FC_OK) st = fc_clamp(I->fc, x, lo, hi, &z, &e);
        fc_tensor_release(lo);
        fc_tensor_release(hi);
    } else if (st == FC_OK) {
        z = fc_tensor_retain(x);
    }
    FcTensor *one = NULL;
    if (st == FC_OK) st = float_scalar(I->fc, 1.0, &one, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, one, z, &d, &e);     /* 1 - z: +0 at 1, so log(1 / +0) = inf */
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_DIV, z, d, &r, &e);
    fc_tensor_release(one);
    if (st == FC_OK) st = step(fc_unary(I->fc, FC_OP_LOG, r, &tmp, &e), &r, &tmp);
    fc_tensor_release(x);
    fc_tensor_release(z);
    fc_tensor_release(d);
    return chain_result(I, st, &e, r, out);
}

/* sinc: 1 at 0, else sin(pi x) / (pi x), pi x in x's floating dtype. */
bool impl_sinc(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = NULL, *p = NULL, *s = NULL, *c = NULL, *r = NULL, *tmp;
    FcError e;
    (void)sig;
    FcStatus st = as_dtype(I->fc, a[0].t, fc_dtype_is_float(a[0].t->dtype) ? a[0].t->dtype : FC_FLOAT32, &x, &e);
    if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_MUL, x, M_PI, &p, &e);
    if (st == FC_OK) st = fc_unary(I->fc, FC_OP_SIN, p, &s, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_DIV, s, p, &r, &e);
    if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_EQ, x, 0.0, &c, &e);
    if (st == FC_OK) st = step(where_value(I->fc, c, 1.0, r, &tmp, &e), &r, &tmp);
    fc_tensor_release(x);
    fc_tensor_release(p);
    fc_tensor_release(s);
    fc_tensor_release(c);
    return chain_result(I, st, &e, r, out);
}

/* diff(n=1, dim=-1, prepend=None, append=None): n times x[1:] - x[:-1] along dim (x[1:] != x[:-1]
 * for bool), after prepend and append are concatenated; n <= 0 gives the input. */
bool impl_diff(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *r = NULL, *hi = NULL, *lo = NULL, *tmp;
    FcError e;
    int d;
    (void)sig;
    if (x->ndim == 0) return err_raise(I, TDL_ERR_RUNTIME, "diff expects input to be at least one-dimensional");
    if (!tensor_check(I, fc_wrap_dim(a[2].i, x->ndim, &d, &e), &e)) return false;
    for (int k = 3; k <= 4; k++)
        if (!a[k].none && a[k].t->ndim != x->ndim)
            return err_raise(I, TDL_ERR_RUNTIME, "diff expects prepend or append to be the same dimension as input");
    FcStatus st = FC_OK;
    if (!a[3].none || !a[4].none) {
        FcTensor *parts[3];
        int n = 0;
        if (!a[3].none) parts[n++] = a[3].t;
        parts[n++] = x;
        if (!a[4].none) parts[n++] = a[4].t;
        st = fc_cat(I->fc, n, parts, d, &r, &e);
    } else {
        r = fc_tensor_retain(x);
    }
    for (int64_t k = 0; k < a[1].i && st == FC_OK; k++) {
        int64_t len = r->shape[d];
        if (len == 0) break;
        FcIndex up = {.kind = FC_IX_SLICE, .start = 1, .step = 1, .has_start = true};
        FcIndex down = {.kind = FC_IX_SLICE, .stop = len - 1, .step = 1, .has_stop = true};
        st = index_at(I->fc, r, d, up, &hi, &e);
        if (st == FC_OK) st = index_at(I->fc, r, d, down, &lo, &e);
        if (st == FC_OK) st = step(fc_binary(I->fc, r->dtype == FC_BOOL ? FC_OP_NE : FC_OP_SUB, hi, lo, &tmp, &e), &r, &tmp);
        fc_tensor_release(hi);
        fc_tensor_release(lo);
        hi = lo = NULL;
    }
    return chain_result(I, st, &e, r, out);
}

/* searchsorted(sorted_sequence, values) / bucketize(values, boundaries): PyTorch's binary search
 * (cus_lower_bound / cus_upper_bound: mid = start + (end - start) / 2, start = mid + 1 while
 * !(b[mid] >= v), or !(b[mid] > v) for right), run on every value at once for as many halvings as
 * the longest search takes, so that unsorted boundaries and NaNs give torch's very indices. The
 * boundaries are 1-D, or their leading dims are the values'. */
/* op(a, v) with v an int64 0-dim tensor: an int64 a stays int64. */
static FcStatus int_op(FcCtx *ctx, FcOp op, FcTensor *a, int64_t v, FcTensor **out, FcError *e)
{
    FcTensor *s = NULL;
    FcStatus st = int_scalar(ctx, FC_INT64, v, &s, e);
    if (st == FC_OK) st = fc_binary(ctx, op, a, s, out, e);
    fc_tensor_release(s);
    return st;
}

static bool search(Interp *I, FcTensor *b, FcTensor *v, bool right, bool i32, Value *out)
{
    FcError e;
    char sb[200], sv[200];
    if (b->ndim == 0)
        return err_raise(I, TDL_ERR_RUNTIME,
                         "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension");
    if (b->ndim > 1 && v->ndim == 0)
        return err_raise(I, TDL_ERR_RUNTIME, "torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                         "dimension is 1, but we got boundaries tensor dim(%d) and input value's dim(0) numel(1)", b->ndim);
    bool lead = b->ndim == 1 || b->ndim == v->ndim;
    for (int k = 0; lead && b->ndim > 1 && k < b->ndim - 1; k++) lead = b->shape[k] == v->shape[k];
    if (!lead)
        return err_raise(I, TDL_ERR_RUNTIME, "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                         "dimensions of boundaries tensor and input value tensor must match, but we got boundaries "
                         "tensor %s and input value tensor %s", ints_text(b->ndim, b->shape, sb, sizeof sb),
                         ints_text(v->ndim, v->shape, sv, sizeof sv));
    if (b->dtype == FC_BOOL || v->dtype == FC_BOOL)
        return err_raise(I, TDL_ERR_RUNTIME, "\"searchsorted_out_cpu\" not implemented for 'Bool'");
    int64_t n = b->shape[b->ndim - 1];
    FcScalar zero = {.i = 0}, top = {.i = n};
    FcTensor *lo = NULL, *hi = NULL, *tmp;
    FcStatus st = fc_full(I->fc, FC_INT64, v->device, v->ndim, v->shape, zero, &lo, &e);
    if (st == FC_OK) st = fc_full(I->fc, FC_INT64, v->device, v->ndim, v->shape, top, &hi, &e);
    for (int64_t left = n; left > 0 && st == FC_OK; left >>= 1) {     /* bit_length(n) halvings */
        FcTensor *active = NULL, *mid = NULL, *at = NULL, *val = NULL, *go = NULL, *c = NULL, *nxt = NULL;
        st = fc_binary(I->fc, FC_OP_LT, lo, hi, &active, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, hi, lo, &mid, &e);
        if (st == FC_OK) st = step(int_op(I->fc, FC_OP_SHR, mid, 1, &tmp, &e), &mid, &tmp);
        if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_ADD, lo, mid, &tmp, &e), &mid, &tmp);
        if (st == FC_OK) st = int_op(I->fc, FC_OP_MIN, mid, n - 1, &at, &e);       /* in range when idle */
        if (st == FC_OK && b->ndim == 1) {
            FcIndex ix = {.kind = FC_IX_TENSOR, .t = at};
            st = fc_index(I->fc, b, 1, &ix, &val, &e);
        } else if (st == FC_OK) {
            st = fc_gather(I->fc, b, -1, at, &val, &e);
        }
        if (st == FC_OK) st = fc_binary(I->fc, right ? FC_OP_GT : FC_OP_GE, val, v, &go, &e);
        if (st == FC_OK) st = step(fc_unary(I->fc, FC_OP_NOT, go, &tmp, &e), &go, &tmp);       /* go right */
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_AND, active, go, &c, &e);
        if (st == FC_OK) st = int_op(I->fc, FC_OP_ADD, mid, 1, &nxt, &e);
        if (st == FC_OK) st = step(fc_where(I->fc, c, nxt, lo, &tmp, &e), &lo, &tmp);
        if (st == FC_OK) st = step(fc_unary(I->fc, FC_OP_NOT, go, &tmp, &e), &go, &tmp);       /* go left */
        if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_AND, active, go, &tmp, &e), &c, &tmp);
        if (st == FC_OK) st = step(fc_where(I->fc, c, mid, hi, &tmp, &e), &hi, &tmp);
        fc_tensor_release(active);
        fc_tensor_release(mid);
        fc_tensor_release(at);
        fc_tensor_release(val);
        fc_tensor_release(go);
        fc_tensor_release(c);
        fc_tensor_release(nxt);
    }
    fc_tensor_release(hi);
    if (st == FC_OK && i32) st = step(fc_cast(I->fc, lo, FC_INT32, &tmp, &e), &lo, &tmp);
    return chain_result(I, st, &e, lo, out);
}

bool impl_searchsorted(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    TensorArg *side = &a[4];
    bool right = a[3].b;
    (void)sig;
    if (!side->none) {
        if (strcmp(side->str, "left") != 0 && strcmp(side->str, "right") != 0)
            return err_raise(I, TDL_ERR_RUNTIME, "torch.searchsorted(): side can only be 'left' or 'right' but got %s",
                             side->str);
        if (right && strcmp(side->str, "left") == 0)
            return err_raise(I, TDL_ERR_RUNTIME, "torch.searchsorted(): side and right can't be set to opposites, got "
                             "side of left while right was True");
        right = strcmp(side->str, "right") == 0;
    }
    return search(I, a[0].t, a[1].t, right, a[2].b, out);
}

bool impl_bucketize(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    (void)sig;
    if (a[1].t->ndim != 1)
        return err_raise(I, TDL_ERR_RUNTIME, "boundaries tensor must be 1 dimension, but got dim(%d)", a[1].t->ndim);
    return search(I, a[1].t, a[0].t, a[3].b, a[2].b, out);
}

/* ---- lerp, addcmul, addcdiv: PyTorch's CPU kernels, rounded as its AVX2 build rounds them ---- */

/* The result shape of broadcasting a, b and c: PyTorch checks it before the kernel's dtype. */
static bool broadcast3(Interp *I, const FcTensor *a, const FcTensor *b, const FcTensor *c)
{
    int64_t s1[FC_MAX_DIMS], s2[FC_MAX_DIMS];
    int n1, n2;
    FcError e;
    FcStatus st = fc_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &n1, s1, &e);
    if (st == FC_OK) st = fc_broadcast_shapes(n1, s1, c->ndim, c->shape, &n2, s2, &e);
    return tensor_check(I, st, &e);
}

/* lerp(self, end, weight): self + weight * (end - self) where weight < 0.5 (torch 1.13 takes no
 * absolute value), else
 * end - (end - self) * (1 - weight), each an FMA (at::native::lerp, contracted), computed in
 * float32 for the narrow floats (opmath) and rounded once. A Python number as weight is the
 * Scalar overload: converted to that type, one branch for the whole tensor. The gradient is
 * derivatives.yaml's (fc_grad_declare). */
bool impl_lerp(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *self = a[0].t, *end = a[1].t, *w = a[2].t;
    FcError e;
    (void)sig;
    bool scalar = w->wrapped_number;
    const char *kernel = scalar ? "lerp_kernel_scalar" : "lerp_kernel_tensor";
    if (end->dtype != self->dtype)
        return err_raise(I, TDL_ERR_RUNTIME, "expected dtype %s for `end` but got dtype %s",
                         fc_dtype_cxx_name(self->dtype), fc_dtype_cxx_name(end->dtype));
    if (!scalar && w->dtype != self->dtype)
        return err_raise(I, TDL_ERR_RUNTIME, "expected dtype %s for `weight` but got dtype %s",
                         fc_dtype_cxx_name(self->dtype), fc_dtype_cxx_name(w->dtype));
    if (!broadcast3(I, self, end, w)) return false;
    if (!fc_dtype_is_float(self->dtype) || self->dtype == FC_FLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"%s\" not implemented for '%s'", kernel, fc_dtype_torch_name(self->dtype));
    FcDType op = fc_dtype_compute(self->dtype);
    FcTensor *s = NULL, *en = NULL, *wt = NULL, *d = NULL, *nd = NULL, *one = NULL, *rest = NULL, *lo = NULL,
             *hi = NULL, *small = NULL, *r = NULL;
    FcStatus st = fc_cast(I->fc, self, op, &s, &e);
    if (st == FC_OK) st = fc_cast(I->fc, end, op, &en, &e);
    if (st == FC_OK && scalar) {
        FcTensor *w64 = NULL;       /* the number as a 0-dim tensor: it takes part at op's precision */
        st = fc_scalar(I->fc, FC_FLOAT64, (FcScalar){.f = w->dtype == FC_FLOAT64 ? w->node->konst.f : (double)w->node->konst.i},
                       false, &w64, &e);
        if (st == FC_OK) st = fc_cast(I->fc, w64, op, &wt, &e);
        fc_tensor_release(w64);
    } else if (st == FC_OK) {
        st = fc_cast(I->fc, w, op, &wt, &e);
    }
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, en, s, &d, &e);
    bool both = !scalar, low = true;
    if (scalar) {
        FcScalar v;
        both = !fc_tensor_known(wt, &v);
        low = !both && v.f < 0.5;
    }
    if (st == FC_OK && (both || low)) st = fc_fma(I->fc, s, wt, d, &lo, &e);
    if (st == FC_OK && (both || !low)) {
        st = int_scalar(I->fc, FC_INT64, 1, &one, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, one, wt, &rest, &e);
        if (st == FC_OK) st = fc_unary(I->fc, FC_OP_NEG, d, &nd, &e);
        if (st == FC_OK) st = fc_fma(I->fc, en, nd, rest, &hi, &e);
    }
    if (st == FC_OK && both) {
        FcTensor *half = NULL;
        st = float_scalar(I->fc, 0.5, &half, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_LT, wt, half, &small, &e);
        if (st == FC_OK) st = fc_where(I->fc, small, lo, hi, &r, &e);
        fc_tensor_release(half);
    } else if (st == FC_OK) {
        r = fc_tensor_retain(low ? lo : hi);
    }
    FcTensor *res = NULL;
    if (st == FC_OK) st = fc_cast(I->fc, r, self->dtype, &res, &e);
    FcTensor *tmp[] = {s, en, wt, d, nd, one, rest, lo, hi, small, r};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) fc_tensor_release(tmp[k]);
    if (st == FC_OK)
        fc_grad_declare(res, FC_VJP_LERP, scalar ? 2 : 3, (FcTensor *[]){self, end, w},
                        scalar ? (w->dtype == FC_FLOAT64 ? w->node->konst.f : (double)w->node->konst.i) : 0);
    return result(I, st, &e, res, out);
}

/* addcmul / addcdiv: self + value * t1 * t2 / self + value * t1 / t2 at the three operands' result
 * dtype, computed at its compute dtype (bfloat16: float32, value too) and rounded once; value is
 * converted to it. For floats, addcmul's sum is an FMA of (value * t1) and t2 (contracted);
 * addcdiv divides (value * t1) by t2 and adds. Gradients as derivatives.yaml (fc_grad_declare). */
static bool addc(Interp *I, const TensorSig *sig, TensorArg *a, bool div, Value *out)
{
    FcTensor *self = a[0].t, *t1 = a[1].t, *t2 = a[2].t;
    TensorArg *value = ARG("value");
    FcError e;
    const char *name = div ? "addcdiv_cpu_out" : "addcmul_cpu_out";
    if (div && !fc_dtype_is_float(t1->dtype) && !fc_dtype_is_float(t2->dtype))
        return err_raise(I, TDL_ERR_RUNTIME,
                         "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will "
                         "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                         "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
                         "inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
                         "behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all "
                         "dtypes.");
    FcOperand ops[3] = {tensor_operand(self), tensor_operand(t1), tensor_operand(t2)};
    FcDType dt = fc_result_type(ops, 3), op = fc_dtype_compute(dt);
    if (!broadcast3(I, self, t1, t2)) return false;
    if (dt == FC_FLOAT16 || dt == FC_BOOL)
        return err_raise(I, TDL_ERR_RUNTIME, "\"%s\" not implemented for '%s'", name, fc_dtype_torch_name(dt));
    if (!tensor_scalar_fits(I, value->s, value->sdt, dt, true)) return false;
    FcTensor *x = NULL, *y = NULL, *z = NULL, *v = NULL, *vy = NULL, *q = NULL, *r = NULL, *res = NULL;
    FcStatus st = fc_cast(I->fc, self, op, &x, &e);
    if (st == FC_OK) st = fc_cast(I->fc, t1, op, &y, &e);
    if (st == FC_OK) st = fc_cast(I->fc, t2, op, &z, &e);
    if (st == FC_OK) st = fc_scalar(I->fc, op, tensor_scalar_as(value->s, value->sdt, op), false, &v, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, v, y, &vy, &e);
    if (st == FC_OK && div) {
        st = fc_binary(I->fc, FC_OP_DIV, vy, z, &q, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_ADD, x, q, &r, &e);
    } else if (st == FC_OK) {
        st = fc_fma(I->fc, x, vy, z, &r, &e);
    }
    if (st == FC_OK) st = fc_cast(I->fc, r, dt, &res, &e);
    FcTensor *tmp[] = {x, y, z, v, vy, q, r};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) fc_tensor_release(tmp[k]);
    if (st == FC_OK)
        fc_grad_declare(res, div ? FC_VJP_ADDCDIV : FC_VJP_ADDCMUL, 3, (FcTensor *[]){self, t1, t2},
                        value->sdt == FC_FLOAT64 ? value->s.f : (double)value->s.i);
    return result(I, st, &e, res, out);
}

bool impl_addcmul(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { return addc(I, sig, a, false, out); }
bool impl_addcdiv(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { return addc(I, sig, a, true, out); }

/* ---- masked_select, rot90, diag, diagflat, diag_embed, trace ---- */

/* masked_select(mask): the elements of self and mask broadcast together where mask is true, in
 * order, as one dim (a lazy gather: self[mask] of the broadcast pair). */
bool impl_masked_select(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *m = a[1].t, *tb = NULL, *mb = NULL, *r = NULL;
    FcError e;
    (void)sig;
    if (m->dtype != FC_BOOL && m->dtype != FC_UINT8)
        return err_raise(I, TDL_ERR_RUNTIME, "masked_select: expected BoolTensor or ByteTensor for mask");
    if (m->dtype == FC_UINT8 &&
        !interp_warn(I, TDL_ERR_USER_WARNING,
                     "masked_select received a mask with dtype torch.uint8, this behavior is now deprecated,please use "
                     "a mask with dtype torch.bool instead. (Triggered internally at  "
                     "./aten/src/ATen/native/TensorAdvancedIndexing.cpp:1729.)"))
        return false;
    int64_t shape[FC_MAX_DIMS];
    int n;
    FcStatus st = fc_broadcast_shapes(m->ndim, m->shape, t->ndim, t->shape, &n, shape, &e);
    if (st == FC_OK) st = fc_expand(I->fc, t, n, shape, &tb, &e);
    if (st == FC_OK) st = m->dtype == FC_BOOL ? fc_expand(I->fc, m, n, shape, &mb, &e) : FC_OK;
    if (st == FC_OK && !mb) {
        FcTensor *bm = NULL;
        st = fc_cast(I->fc, m, FC_BOOL, &bm, &e);
        if (st == FC_OK) st = fc_expand(I->fc, bm, n, shape, &mb, &e);
        fc_tensor_release(bm);
    }
    if (st == FC_OK && n == 0) {
        /* a 0-dim pair: the one element, as a 1-dim tensor, where the mask holds */
        FcTensor *t1 = NULL, *m1 = NULL;
        int64_t one = 1;
        st = fc_reshape(I->fc, tb, 1, &one, &t1, &e);
        if (st == FC_OK) st = fc_reshape(I->fc, mb, 1, &one, &m1, &e);
        fc_tensor_release(tb);
        fc_tensor_release(mb);
        tb = t1;
        mb = m1;
    }
    if (st == FC_OK) st = fc_index(I->fc, tb, 1, &(FcIndex){.kind = FC_IX_TENSOR, .t = mb}, &r, &e);
    fc_tensor_release(tb);
    fc_tensor_release(mb);
    return result(I, st, &e, r, out);
}

/* rot90(k, dims): as torch's: flip then transpose (k = 1: dims[1]; k = 3: dims[0]), flip of both
 * (k = 2), or a contiguous copy; the flip is stored first, so that the transposed view has
 * torch's strides. */
bool impl_rot90(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *f = NULL, *r = NULL;
    TensorArg *dims = &a[2];
    FcError e;
    (void)sig;
    if (dims->v.tag == V_UNDEF) {
        dims->n = 2;
        dims->ints[0] = 0;
        dims->ints[1] = 1;
    }
    if (dims->n != 2)
        return err_raise(I, TDL_ERR_RUNTIME, "expected total rotation dims == 2, but got dims = %d", dims->n);
    if (t->ndim < 2)
        return err_raise(I, TDL_ERR_RUNTIME, "expected total dims >= 2, but got total dims = %d", t->ndim);
    int64_t d0 = dims->ints[0], d1 = dims->ints[1];
    if (d0 == d1 || llabs(d0 - d1) == t->ndim)
        return err_raise(I, TDL_ERR_RUNTIME, "expected rotation dims to be different, but got dim0 = %lld and dim1 = %lld",
                         (long long)d0, (long long)d1);
    for (int k = 0; k < 2; k++)
        if (dims->ints[k] >= t->ndim || dims->ints[k] < -t->ndim)
            return err_raise(I, TDL_ERR_RUNTIME, "Rotation dim%d out of range, dim%d = %lld", k, k, (long long)dims->ints[k]);
    int d[2] = {(int)(d0 < 0 ? d0 + t->ndim : d0), (int)(d1 < 0 ? d1 + t->ndim : d1)};
    int64_t k = ((a[1].i % 4) + 4) % 4;
    FcStatus st;
    if (k == 0) {
        st = fc_clone(I->fc, t, FC_MF_CONTIGUOUS, &r, &e);
        return result(I, st, &e, r, out);
    }
    if (k == 2) {
        st = flip_along(I->fc, t, 2, d, &r, &e);
        return chain_result(I, st, &e, r, out);
    }
    st = flip_along(I->fc, t, 1, k == 1 ? &d[1] : &d[0], &f, &e);
    if (st == FC_OK) st = fc_realize(I->fc, f, &e);
    if (st == FC_OK) st = fc_transpose(I->fc, f, d[0], d[1], &r, &e);
    fc_tensor_release(f);
    return result(I, st, &e, r, out);
}

/* A tensor of t's shape with its last dim n replaced by two of n + |offset| at d1 and d2 (of the
 * result's dims), zero but for the offset diagonal, which holds t's last dim (zeros with that
 * diagonal written: the write is recorded, so the gradient reaches t). */
static FcStatus embed_diagonal(FcCtx *ctx, FcTensor *t, int64_t offset, int d1, int d2, FcTensor **out, FcError *e)
{
    int nd = t->ndim + 1;
    int64_t n = t->ndim ? t->shape[t->ndim - 1] : 1, m = n + (offset < 0 ? -offset : offset), shape[FC_MAX_DIMS];
    for (int k = 0, j = 0; k < nd; k++) shape[k] = k == d1 || k == d2 ? m : t->shape[j++];
    FcTensor *z = NULL, *diag = NULL;
    FcStatus st = fc_full(ctx, t->dtype, t->device, nd, shape, (FcScalar){.i = 0}, &z, e);
    if (st == FC_OK) st = fc_diagonal(ctx, z, offset, d1, d2, &diag, e);
    if (st == FC_OK) st = fc_assign(ctx, diag, t, e);
    fc_tensor_release(diag);
    if (st != FC_OK) fc_tensor_release(z);
    *out = st == FC_OK ? z : NULL;
    return st;
}

bool impl_diag_embed(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *r = NULL;
    FcError e;
    int d1, d2;
    (void)sig;
    if (!tensor_check(I, fc_wrap_dim(a[2].i, t->ndim + 1, &d1, &e), &e) ||
        !tensor_check(I, fc_wrap_dim(a[3].i, t->ndim + 1, &d2, &e), &e))
        return false;
    if (d1 == d2)
        return err_raise(I, TDL_ERR_RUNTIME, "diagonal dimensions cannot be identical %lld, %lld", (long long)a[2].i,
                         (long long)a[3].i);
    FcStatus st = embed_diagonal(I->fc, t, a[1].i, d1, d2, &r, &e);
    return result(I, st, &e, r, out);
}

/* diag(offset): a vector's square matrix, a matrix's diagonal (a copy). */
static FcStatus diag_of(FcCtx *ctx, FcTensor *t, int64_t offset, FcTensor **out, FcError *e)
{
    *out = NULL;
    if (t->ndim == 1) return embed_diagonal(ctx, t, offset, 0, 1, out, e);
    if (t->ndim != 2) return ferr(e, FC_ERR_RUNTIME, "matrix or a vector expected");
    FcTensor *v = NULL;
    FcStatus st = fc_diagonal(ctx, t, offset, 0, 1, &v, e);
    if (st == FC_OK) st = fc_clone(ctx, v, FC_MF_CONTIGUOUS, out, e);
    fc_tensor_release(v);
    return st;
}

bool impl_diag(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r = NULL;
    FcError e;
    (void)sig;
    FcStatus st = diag_of(I->fc, a[0].t, a[1].i, &r, &e);
    return result(I, st, &e, r, out);
}

bool impl_diagflat(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *f = NULL, *r = NULL;
    FcError e;
    (void)sig;
    FcStatus st = fc_flatten(I->fc, a[0].t, 0, -1, &f, &e);
    if (st == FC_OK && f->ndim == 0) {
        int64_t one = 1;
        st = step(fc_reshape(I->fc, f, 1, &one, &r, &e), &f, &r);
    }
    if (st == FC_OK) st = diag_of(I->fc, f, a[1].i, &r, &e);
    fc_tensor_release(f);
    return result(I, st, &e, r, out);
}

/* trace: the diagonal's sum (ints and bools give int64, as sum). */
bool impl_trace(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *v = NULL, *r = NULL;
    FcError e;
    (void)sig;
    if (t->ndim != 2) return err_raise(I, TDL_ERR_RUNTIME, "trace: expected a matrix, but got tensor with dim %d", t->ndim);
    if (t->dtype == FC_BOOL || t->dtype == FC_FLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"trace\" not implemented for '%s'", fc_dtype_torch_name(t->dtype));
    FcStatus st = fc_diagonal(I->fc, t, 0, 0, 1, &v, &e);
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_SUM, v, 0, false, &r, &e);
    fc_tensor_release(v);
    return result(I, st, &e, r, out);
}

/* ---- kron, block_diag, cartesian_prod, tensordot, inner, cross ---- */

/* kron(other): self's dims interleaved with size-1 ones, times other's the other way round (both
 * padded on the left to the same rank), the product's pairs of dims merged by a view: PyTorch's
 * KronImpl, whose view refuses a product laid out in a transposed operand's order. */
bool impl_kron(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *xv = NULL, *yv = NULL, *p = NULL, *r = NULL;
    FcError e;
    (void)sig;
    int nd = x->ndim > y->ndim ? x->ndim : y->ndim, px = nd - x->ndim, py = nd - y->ndim;
    if (2 * nd > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "kron: tdl supports at most %d dims", FC_MAX_DIMS / 2);
    int64_t xs[FC_MAX_DIMS], ys[FC_MAX_DIMS], rs[FC_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        xs[2 * i] = i >= px ? x->shape[i - px] : 1;
        xs[2 * i + 1] = 1;
        ys[2 * i] = 1;
        ys[2 * i + 1] = i >= py ? y->shape[i - py] : 1;
        rs[i] = xs[2 * i] * ys[2 * i + 1];
    }
    FcStatus st = fc_view(I->fc, x, 2 * nd, xs, &xv, &e);
    if (st == FC_OK) st = fc_view(I->fc, y, 2 * nd, ys, &yv, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, xv, yv, &p, &e);
    if (st == FC_OK) st = fc_view(I->fc, p, nd, rs, &r, &e);
    fc_tensor_release(xv);
    fc_tensor_release(yv);
    fc_tensor_release(p);
    return result(I, st, &e, r, out);
}

/* block_diag(*tensors): zeros of the operands' result type, each operand (0-dim: 1 x 1, 1-D: a
 * row) written at its place on the diagonal (recorded writes: the gradient reaches each). */
bool impl_block_diag(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor **ts = a[0].ts, *r = NULL;
    int n = a[0].n;
    FcError e;
    (void)sig;
    if (n == 0) {
        int64_t shape[2] = {1, 0};
        FcStatus st = fc_empty(I->fc, FC_FLOAT32, fc_cpu(), 2, shape, NULL, &r, &e);
        return result(I, st, &e, r, out);
    }
    for (int k = 0; k < n; k++)
        if (!fc_device_eq(ts[k]->device, ts[0]->device)) {
            char d0[32], dk[32];
            return err_raise(I, TDL_ERR_RUNTIME, "torch.block_diag: input tensors must all be on the same device. Input 0 "
                             "is on device %s and input %d is on device %s.", fc_device_name(ts[0]->device, d0), k,
                             fc_device_name(ts[k]->device, dk));
        }
    FcOperand *ops = mem_calloc((size_t)n, sizeof *ops);
    if (!ops) return err_nomem(I);
    int64_t shape[2] = {0, 0};
    for (int k = 0; k < n; k++) {
        ops[k] = tensor_operand(ts[k]);
        if (ts[k]->ndim > 2) {
            mem_free(ops);
            return err_raise(I, TDL_ERR_RUNTIME, "torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                             "Input %d has %d dimensions", k, ts[k]->ndim);
        }
        shape[0] += ts[k]->ndim == 2 ? ts[k]->shape[0] : 1;
        shape[1] += ts[k]->ndim == 2 ? ts[k]->shape[1] : ts[k]->ndim == 1 ? ts[k]->shape[0] : 1;
    }
    FcDType dt = fc_result_type(ops, n);
    mem_free(ops);
    FcStatus st = fc_full(I->fc, dt, ts[0]->device, 2, shape, (FcScalar){.i = 0}, &r, &e);
    int64_t at[2] = {0, 0};
    for (int k = 0; k < n && st == FC_OK; k++) {
        FcTensor *t = ts[k], *rows = NULL, *block = NULL;
        int64_t h = t->ndim == 2 ? t->shape[0] : 1, w = t->ndim == 2 ? t->shape[1] : t->ndim == 1 ? t->shape[0] : 1;
        st = narrow(I->fc, r, 0, at[0], h, &rows, &e);
        if (st == FC_OK) st = narrow(I->fc, rows, 1, at[1], w, &block, &e);
        if (st == FC_OK) st = fc_assign(I->fc, block, t, &e);
        fc_tensor_release(rows);
        fc_tensor_release(block);
        at[0] += h;
        at[1] += w;
    }
    return chain_result(I, st, &e, r, out);
}

/* cartesian_prod(*tensors): 1-D tensors' meshgrid (ij), each grid flattened, stacked as columns;
 * one tensor is returned itself, as PyTorch does. */
bool impl_cartesian_prod(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor **ts = a[0].ts, *cols[FC_MAX_DIMS] = {0}, *r = NULL;
    int n = a[0].n;
    FcError e;
    (void)sig;
    for (int k = 0; k < n; k++)
        if (ts[k]->ndim != 1) {
            char buf[256];
            return err_raise(I, TDL_ERR_RUNTIME, "Expect a 1D vector, but got shape %s",
                             ints_text(ts[k]->ndim, ts[k]->shape, buf, sizeof buf));
        }
    if (n == 1) return tensor_value_steal(I, fc_tensor_retain(ts[0]), out);
    if (n == 0) return err_raise(I, TDL_ERR_RUNTIME, "meshgrid expects a non-empty TensorList");
    for (int k = 0; k + 1 < n; k++) {
        if (ts[k]->dtype != ts[k + 1]->dtype)
            return err_raise(I, TDL_ERR_RUNTIME, "meshgrid expects all tensors to have the same dtype");
        if (!fc_device_eq(ts[k]->device, ts[k + 1]->device))
            return err_raise(I, TDL_ERR_RUNTIME, "meshgrid expects all tensors to have the same device");
    }
    if (n > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "cartesian_prod: too many tensors (%d)", n);
    int64_t shape[FC_MAX_DIMS], view[FC_MAX_DIMS];
    for (int k = 0; k < n; k++) {
        shape[k] = ts[k]->shape[0];
        view[k] = 1;
    }
    FcStatus st = FC_OK;
    for (int k = 0; k < n && st == FC_OK; k++) {
        FcTensor *v = NULL, *g = NULL;
        view[k] = -1;
        st = fc_view(I->fc, ts[k], n, view, &v, &e);
        view[k] = 1;
        if (st == FC_OK) st = fc_expand(I->fc, v, n, shape, &g, &e);
        if (st == FC_OK) st = fc_flatten(I->fc, g, 0, -1, &cols[k], &e);
        fc_tensor_release(v);
        fc_tensor_release(g);
    }
    if (st == FC_OK) st = fc_stack(I->fc, n, cols, 1, &r, &e);
    for (int k = 0; k < n; k++) fc_tensor_release(cols[k]);
    return result(I, st, &e, r, out);
}

/* tensordot over dims d1 of x and d2 of y (PyTorch's at::tensordot): a size-1 dim facing a larger
 * one is summed first; x's free dims then its contracted ones, by y's contracted then free ones,
 * as one mm, reshaped to the free dims (the mm refuses operands of two dtypes, 1.13 itself does not). */
static bool tensordot_over(Interp *I, FcTensor *x, FcTensor *y, int n, const int64_t *d1, const int64_t *d2, Value *out)
{
    FcError e;
    FcTensor *t1 = fc_tensor_retain(x), *t2 = fc_tensor_retain(y), *tmp, *m1 = NULL, *m2 = NULL, *p = NULL, *r = NULL;
    FcStatus st = FC_OK;
    int64_t csize = 1;
    for (int i = 0; i < n && st == FC_OK; i++) {
        int w1, w2;
        st = fc_wrap_dim(d1[i], x->ndim, &w1, &e);
        if (st == FC_OK) st = fc_wrap_dim(d2[i], y->ndim, &w2, &e);
        if (st != FC_OK) break;
        int64_t s1 = x->ndim ? x->shape[w1] : 1, s2 = y->ndim ? y->shape[w2] : 1;
        if (s2 == 1) st = step(fc_reduce(I->fc, FC_OP_SUM, t1, 1ull << w1, true, &tmp, &e), &t1, &tmp);
        else if (s1 == 1) st = step(fc_reduce(I->fc, FC_OP_SUM, t2, 1ull << w2, true, &tmp, &e), &t2, &tmp);
        else if (s1 != s2)
            st = ferr(&e, FC_ERR_RUNTIME, "contracted dimensions need to match, but first has size %lld in dim %lld and "
                      "second has size %lld in dim %lld", (long long)s1, (long long)d1[i], (long long)s2, (long long)d2[i]);
        else csize *= s1;
    }
    bool seen1[FC_MAX_DIMS] = {0}, seen2[FC_MAX_DIMS] = {0};
    for (int k = 0; k < 2 && st == FC_OK; k++) {
        const FcTensor *t = k ? y : x;
        const int64_t *d = k ? d2 : d1;
        bool *seen = k ? seen2 : seen1;
        for (int i = 0; i < n && st == FC_OK; i++) {
            int w;
            st = fc_wrap_dim(d[i], t->ndim, &w, &e);
            if (st == FC_OK && seen[w]) st = ferr(&e, FC_ERR_RUNTIME, "dim %d appears multiple times in the list of dims", w);
            if (st == FC_OK) seen[w] = true;
        }
    }
    int64_t p1[FC_MAX_DIMS], p2[FC_MAX_DIMS], rs[FC_MAX_DIMS], size1 = 1, size2 = 1;
    int n1 = 0, n2 = 0, nr = 0;
    if (st == FC_OK) {
        for (int i = 0; i < x->ndim; i++)
            if (!seen1[i]) {
                p1[n1++] = i;
                size1 *= t1->shape[i];
                rs[nr++] = t1->shape[i];
            }
        for (int i = 0; i < n; i++) p1[n1++] = d1[i];
        for (int i = 0; i < n; i++) p2[n2++] = d2[i];
        for (int i = 0; i < y->ndim; i++)
            if (!seen2[i]) {
                p2[n2++] = i;
                size2 *= t2->shape[i];
                rs[nr++] = t2->shape[i];
            }
        tmp = NULL;
        st = fc_permute(I->fc, t1, n1, p1, &tmp, &e);
        if (st == FC_OK) st = fc_reshape(I->fc, tmp, 2, (int64_t[]){size1, csize}, &m1, &e);
        fc_tensor_release(tmp);
    }
    if (st == FC_OK) {
        tmp = NULL;
        st = fc_permute(I->fc, t2, n2, p2, &tmp, &e);
        if (st == FC_OK) st = fc_reshape(I->fc, tmp, 2, (int64_t[]){csize, size2}, &m2, &e);
        fc_tensor_release(tmp);
    }
    if (st == FC_OK) st = fc_matmul(I->fc, m1, m2, &p, &e);
    if (st == FC_OK) st = fc_reshape(I->fc, p, nr, rs, &r, &e);
    fc_tensor_release(t1);
    fc_tensor_release(t2);
    fc_tensor_release(m1);
    fc_tensor_release(m2);
    fc_tensor_release(p);
    return result(I, st, &e, r, out);
}

/* The ints of a dims list of tensordot's pair (a list or tuple of ints). */
static bool dims_list(Interp *I, Value v, int64_t *d, int *n)
{
    if (v.tag != V_LIST && v.tag != V_TUPLE)
        return err_raise(I, TDL_ERR_TYPE, "tensordot(): argument 'dims_a' must be tuple of ints, not %s", val_type_name(v));
    size_t len = v.tag == V_LIST ? as_list(v)->n : as_tuple(v)->n;
    const Value *it = v.tag == V_LIST ? as_list(v)->items : as_tuple(v)->items;
    if (len > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "tensordot: too many dims (%zu)", len);
    for (size_t k = 0; k < len; k++) {
        if (!is_intlike(it[k]))
            return err_raise(I, TDL_ERR_TYPE, "tensordot(): argument 'dims_a' must be tuple of ints, but found element "
                             "of type %s at pos %zu", val_type_name(it[k]), k);
        d[k] = it[k].i;
    }
    *n = (int)len;
    return true;
}

/* tensordot(a, b, dims): dims an int (a's last dims with b's first) or a pair of lists, as
 * torch.functional.tensordot reads them. */
bool impl_tensordot(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    TensorArg *dims = ARG("dims");
    int64_t d1[FC_MAX_DIMS], d2[FC_MAX_DIMS];
    int n1 = 0, n2 = 0;
    Value v = dims->v;
    if (v.tag == V_UNDEF || is_intlike(v)) {
        int64_t k = v.tag == V_UNDEF ? 2 : v.i;
        if (k < 0) return err_raise(I, TDL_ERR_RUNTIME, "tensordot expects dims >= 0, but got dims=%lld", (long long)k);
        if (k > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "tensordot: too many dims (%lld)", (long long)k);
        for (int64_t i = 0; i < k; i++) {
            d1[i] = i - k;
            d2[i] = i;
        }
        n1 = n2 = (int)k;
    } else if (v.tag == V_LIST || v.tag == V_TUPLE) {
        size_t len = v.tag == V_LIST ? as_list(v)->n : as_tuple(v)->n;
        const Value *it = v.tag == V_LIST ? as_list(v)->items : as_tuple(v)->items;
        if (len > 2) return err_raise(I, TDL_ERR_VALUE, "too many values to unpack (expected 2)");
        if (len < 2) return err_raise(I, TDL_ERR_VALUE, "not enough values to unpack (expected 2, got %zu)", len);
        if (!dims_list(I, it[0], d1, &n1) || !dims_list(I, it[1], d2, &n2)) return false;
    } else {
        Buf b = {0};
        bool ok = val_str(I, v, &b);
        if (ok)
            err_raise(I, TDL_ERR_RUNTIME, "tensordot expects dims to be int or Tuple[List[int], List[int]] or "
                      "List[List[int]] containing two lists, but got dims=%.*s", (int)b.n, b.p ? b.p : "");
        buf_free(&b);
        return false;
    }
    if (n1 != n2) return err_raise(I, TDL_ERR_RUNTIME, "both dimension lists should have same length");
    return tensordot_over(I, a[0].t, a[1].t, n1, d1, d2, out);
}

/* inner(other): a product when either is 0-dim, else tensordot over both last dims. */
bool impl_inner(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *r = NULL;
    FcError e;
    (void)sig;
    if (x->ndim == 0 || y->ndim == 0) {
        FcStatus st = fc_binary(I->fc, FC_OP_MUL, x, y, &r, &e);
        return result(I, st, &e, r, out);
    }
    if (x->shape[x->ndim - 1] != y->shape[y->ndim - 1]) {
        char bx[256], by[256];
        return err_raise(I, TDL_ERR_RUNTIME, "inner() the last dimension must match on both input tensors but got shapes "
                         "%s and %s", ints_text(x->ndim, x->shape, bx, sizeof bx), ints_text(y->ndim, y->shape, by, sizeof by));
    }
    int64_t last = -1;
    return tensordot_over(I, x, y, 1, &last, &last, out);
}

/* cross(other, dim): self and other broadcast, r_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1} along dim
 * (indices mod 3); floats as PyTorch's CPU kernel rounds it, one FMA of a_{i+1} b_{i+2} less the
 * rounded a_{i+2} b_{i+1}. dim None: self's first dim of size 3 (1.13 gives no warning). */
bool impl_cross(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *xb = NULL, *yb = NULL, *i1 = NULL, *i2 = NULL, *a1 = NULL, *a2 = NULL,
             *b1 = NULL, *b2 = NULL, *p = NULL, *q = NULL, *r = NULL;
    TensorArg *dim = ARG("dim");
    FcError e;
    int64_t d = dim->none ? -1 : dim->i;
    if (dim->none) {
        for (int k = 0; k < x->ndim && d < 0; k++)
            if (x->shape[k] == 3) d = k;
        if (d < 0) return err_raise(I, TDL_ERR_RUNTIME, "no dimension of size 3 in input");
    }
    if (x->ndim != y->ndim)
        return err_raise(I, TDL_ERR_RUNTIME, "linalg.cross: inputs must have the same number of dimensions.");
    int w;
    if (!tensor_check(I, fc_wrap_dim(d, x->ndim, &w, &e), &e)) return false;
    int64_t sx = x->ndim ? x->shape[w] : 1, sy = y->ndim ? y->shape[w] : 1;
    if (sx != 3 || sy != 3)
        return err_raise(I, TDL_ERR_RUNTIME, "linalg.cross: inputs dimension %lld must have length 3. Got %lld and %lld",
                         (long long)d, (long long)sx, (long long)sy);
    int64_t shape[FC_MAX_DIMS];
    int n;
    FcStatus st = fc_broadcast_shapes(x->ndim, x->shape, y->ndim, y->shape, &n, shape, &e);
    if (st != FC_OK) return tensor_check(I, st, &e);
    if (x->dtype != y->dtype)
        return err_raise(I, TDL_ERR_RUNTIME, "expected scalar type %s but found %s", fc_dtype_torch_name(x->dtype),
                         fc_dtype_torch_name(y->dtype));
    if (x->dtype == FC_BOOL || x->dtype == FC_FLOAT16 || x->dtype == FC_BFLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"cross\" not implemented for '%s'", fc_dtype_torch_name(x->dtype));
    st = fc_expand(I->fc, x, n, shape, &xb, &e);
    if (st == FC_OK) st = fc_expand(I->fc, y, n, shape, &yb, &e);
    if (st == FC_OK) st = index_expr(I->fc, 3, 1, 1, 3, &i1, &e);
    if (st == FC_OK) st = index_expr(I->fc, 3, 1, 2, 3, &i2, &e);
    if (st == FC_OK) st = select_by(I->fc, xb, w, i1, &a1, &e);
    if (st == FC_OK) st = select_by(I->fc, xb, w, i2, &a2, &e);
    if (st == FC_OK) st = select_by(I->fc, yb, w, i1, &b1, &e);
    if (st == FC_OK) st = select_by(I->fc, yb, w, i2, &b2, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, a2, b1, &p, &e);
    if (fc_dtype_is_float(x->dtype)) {
        if (st == FC_OK) st = fc_unary(I->fc, FC_OP_NEG, p, &q, &e);
        if (st == FC_OK) st = fc_fma(I->fc, q, a1, b2, &r, &e);
    } else {
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, a1, b2, &q, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, q, p, &r, &e);
    }
    FcTensor *tmp[] = {xb, yb, i1, i2, a1, a2, b1, b2, p, q};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) fc_tensor_release(tmp[k]);
    return result(I, st, &e, r, out);
}

/* ---- logspace, bincount, trapezoid, cumulative_trapezoid ---- */

static double scalar_value(const TensorArg *s) { return s->sdt == FC_FLOAT64 ? s->s.f : (double)s->s.i; }

/* A new 1-D tensor of dtype dt and n elements on the CPU and its data, to be filled on the host. */
static FcStatus host_vector(FcCtx *ctx, FcDType dt, int64_t n, FcTensor **out, void **data, FcError *e)
{
    FcView v;
    FcStatus st = fc_empty(ctx, dt, fc_cpu(), 1, &n, NULL, out, e);
    if (st == FC_OK) st = fc_host_view(ctx, *out, &v, e);
    if (st == FC_OK) *data = (char *)v.data + v.offset * (int64_t)fc_dtype_size(dt);
    else {
        fc_tensor_release(*out);
        *out = NULL;
    }
    return st;
}

/* logspace(start, end, steps, base): PyTorch's CPU kernel: start and end in the dtype, the step
 * (end - start, in the dtype) / (steps - 1) in double, base ** (start + step * i) in double for
 * the first half and base ** (end - step * (steps - 1 - i)) for the rest, stored in the dtype
 * (ints truncated); one step is base ** start, start not rounded. */
bool impl_logspace(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    TensorArg *dta = ARG("dtype"), *dva = ARG("device");
    FcDType dt = dta->none ? FC_FLOAT32 : dta->dtype;
    FcDevice dev = dva->none ? I->device : dva->device;
    int64_t n = a[2].i;
    double base = a[3].f, start = scalar_value(&a[0]), end = scalar_value(&a[1]);
    FcTensor *h = NULL, *r = NULL;
    double *d = NULL;
    FcError e;
    if (n < 0) return err_raise(I, TDL_ERR_RUNTIME, "number of steps must be non-negative");
    if (dt == FC_BOOL || dt == FC_FLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"logspace_cpu\" not implemented for '%s'", fc_dtype_torch_name(dt));
    /* PyTorch rounds start, end and their difference to bfloat16: not reproduced */
    if (dt == FC_BFLOAT16) return err_raise(I, TDL_ERR_RUNTIME, "logspace: tdl does not support bfloat16");
    FcStatus st = host_vector(I->fc, FC_FLOAT64, n, &h, (void **)&d, &e);
    if (st == FC_OK && n == 1) d[0] = pow(base, start);
    if (st == FC_OK && n > 1) {
        bool f32 = dt == FC_FLOAT32, is_int = !fc_dtype_is_float(dt);
        double s = f32 ? (float)start : is_int ? trunc(start) : start, t = f32 ? (float)end : is_int ? trunc(end) : end;
        double step = (f32 ? (double)(float)(t - s) : t - s) / (double)(n - 1);
        for (int64_t i = 0; i < n; i++) {
            d[i] = i < n / 2 ? pow(base, s + step * (double)i) : pow(base, t - step * (double)(n - i - 1));
            if (is_int) d[i] = trunc(d[i]);
        }
    }
    if (st == FC_OK) st = fc_to(I->fc, h, dt, dev, &r, &e);
    fc_tensor_release(h);
    return result(I, st, &e, r, out);
}

/* bincount(weights, minlength): the count (or the weights' sum, in float32 for float32 weights,
 * else in double) of each value of a 1-d non-negative int tensor, added in order on the host. */
bool impl_bincount(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *w = a[1].none ? NULL : a[1].t, *hx = NULL, *hw = NULL, *r = NULL, *res = NULL;
    int64_t minlength = a[2].i;
    FcView vx, vw;
    FcError e;
    if (!fc_dtype_is_int(x->dtype))
        return err_raise(I, TDL_ERR_RUNTIME, "\"bincount_cpu\" not implemented for '%s'", fc_dtype_torch_name(x->dtype));
    if (minlength < 0) return err_raise(I, TDL_ERR_RUNTIME, "minlength should be >= 0");
    FcStatus st;
    void *data;
    if (x->ndim == 1 && x->shape[0] == 0) {
        st = fc_full(I->fc, FC_INT64, x->device, 1, &minlength, (FcScalar){.i = 0}, &r, &e);
        return result(I, st, &e, r, out);
    }
    if (!host_dense(I, x, NULL, FC_INT64, &hx, &vx)) return false;
    const int64_t *xs = (const int64_t *)vx.data + vx.offset;
    int64_t n = fc_tensor_numel(x), nbins = 0;
    bool neg = false;
    for (int64_t i = 0; i < n; i++) {
        neg = neg || xs[i] < 0;
        if (xs[i] + 1 > nbins) nbins = xs[i] + 1;
    }
    if (x->ndim != 1 || neg) {
        fc_tensor_release(hx);
        return err_raise(I, TDL_ERR_RUNTIME, "bincount only supports 1-d non-negative integral inputs.");
    }
    if (w && (w->ndim != 1 || w->shape[0] != x->shape[0])) {
        fc_tensor_release(hx);
        return err_raise(I, TDL_ERR_RUNTIME, "weights should be 1-d and have the same length as input");
    }
    if (nbins < minlength) nbins = minlength;
    FcDType dt = !w ? FC_INT64 : w->dtype == FC_FLOAT32 ? FC_FLOAT32 : FC_FLOAT64;
    if (w && !host_dense(I, w, NULL, dt, &hw, &vw)) {
        fc_tensor_release(hx);
        return false;
    }
    st = host_vector(I->fc, dt, nbins, &r, &data, &e);
    if (st == FC_OK && dt == FC_INT64) {
        memset(data, 0, (size_t)nbins * sizeof(int64_t));
        for (int64_t i = 0; i < n; i++) ((int64_t *)data)[xs[i]] += 1;
    } else if (st == FC_OK && dt == FC_FLOAT32) {
        const float *ws = (const float *)vw.data + vw.offset;
        memset(data, 0, (size_t)nbins * sizeof(float));
        for (int64_t i = 0; i < n; i++) ((float *)data)[xs[i]] += ws[i];
    } else if (st == FC_OK) {
        const double *ws = (const double *)vw.data + vw.offset;
        memset(data, 0, (size_t)nbins * sizeof(double));
        for (int64_t i = 0; i < n; i++) ((double *)data)[xs[i]] += ws[i];
    }
    fc_tensor_release(hx);
    fc_tensor_release(hw);
    if (st == FC_OK) st = fc_to(I->fc, r, dt, x->device, &res, &e);
    fc_tensor_release(r);
    return result(I, st, &e, res, out);
}

/* y's dim d as its left (0 .. n-2) and right (1 .. n-1) samples: y.slice(d, 0, -1), y.slice(d, 1). */
static FcStatus sample_pairs(FcCtx *ctx, FcTensor *y, int d, FcTensor **l, FcTensor **r, FcError *e)
{
    int64_t n = y->shape[d], m = n > 0 ? n - 1 : 0;
    *r = NULL;
    FcStatus st = narrow(ctx, y, d, 0, m, l, e);
    if (st == FC_OK) st = narrow(ctx, y, d, n > 0 ? 1 : 0, m, r, e);
    return st;
}

/* x (trapezoid's sample points) seen as torch sees it against y: a vector along dim d, or with
 * ones in front up to y's rank; the differences of its neighbours along d. */
static bool sample_steps(Interp *I, FcTensor *y, FcTensor *x, int d, const char *who, FcTensor **dx)
{
    FcTensor *xv = NULL, *xl = NULL, *xr = NULL;
    FcError e;
    int64_t shape[FC_MAX_DIMS];
    FcStatus st;
    *dx = NULL;
    if (x->ndim == 1) {
        if (x->shape[0] != y->shape[d])
            return err_raise(I, TDL_ERR_RUNTIME, "%s: There must be one `x` value for each sample point", who);
        for (int k = 0; k < y->ndim; k++) shape[k] = k == d ? x->shape[0] : 1;
        st = fc_view(I->fc, x, y->ndim, shape, &xv, &e);
    } else if (x->ndim < y->ndim) {
        int pad = y->ndim - x->ndim;
        for (int k = 0; k < y->ndim; k++) shape[k] = k < pad ? 1 : x->shape[k - pad];
        st = fc_view(I->fc, x, y->ndim, shape, &xv, &e);
    } else {
        xv = fc_tensor_retain(x);
        st = FC_OK;
    }
    if (st == FC_OK) st = sample_pairs(I->fc, xv, d, &xl, &xr, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, xr, xl, dx, &e);
    fc_tensor_release(xv);
    fc_tensor_release(xl);
    fc_tensor_release(xr);
    return tensor_check(I, st, &e);
}

/* trapezoid / trapz and cumulative_trapezoid, x a tensor of sample points or dx a constant
 * spacing, composed as PyTorch's Integration.cpp does (its rounding, its dtypes):
 *   trapezoid, x:      sum(dx * (y_right + y_left), dim) / 2
 *   trapezoid, dx:     (sum(y, dim) - (y_first + y_last) * 0.5) * dx
 *   cumulative, x:     cumsum(dx / 2 * (y_left + y_right), dim)
 *   cumulative, dx:    cumsum((dx / 2) * (y_left + y_right), dim) */
static bool trapezoid(Interp *I, const TensorSig *sig, TensorArg *a, bool cumulative, Value *out)
{
    FcTensor *y = a[0].t, *dx = NULL, *yl = NULL, *yr = NULL, *t = NULL, *u = NULL, *r = NULL;
    TensorArg *xa = ARG("x"), *dxa = ARG("dx");
    const char *who = cumulative ? "cumulative_trapezoid" : "trapezoid";
    FcError e;
    int d;
    if (!tensor_check(I, fc_wrap_dim(ARG("dim")->i, y->ndim, &d, &e), &e)) return false;
    if (y->ndim == 0)
        return err_raise(I, TDL_ERR_INDEX, "dimension specified as %lld but tensor has no dimensions", (long long)ARG("dim")->i);
    if (!cumulative && y->shape[d] == 0) {
        int64_t shape[FC_MAX_DIMS];
        for (int k = 0, j = 0; k < y->ndim; k++)
            if (k != d) shape[j++] = y->shape[k];
        FcStatus st = fc_full(I->fc, y->dtype, y->device, y->ndim - 1, shape, (FcScalar){.i = 0}, &r, &e);
        return result(I, st, &e, r, out);
    }
    if (xa && (y->dtype == FC_BOOL || xa->t->dtype == FC_BOOL))
        return err_raise(I, TDL_ERR_RUNTIME, "%s: received a bool input for `x` or `y`, but bool is not supported", who);
    if (!xa && y->dtype == FC_BOOL)
        return err_raise(I, TDL_ERR_RUNTIME, "%s: received a bool input for `y`, but bool is not supported", who);
    if (!xa && dxa->sdt == FC_BOOL)
        return err_raise(I, TDL_ERR_RUNTIME, "%s: Currently, we only support dx as a real number.", who);
    if (xa && !sample_steps(I, y, xa->t, d, who, &dx)) return false;
    double h = xa ? 0 : dxa->sdt == FC_FLOAT64 ? dxa->s.f : (double)dxa->s.i;
    FcTensor *p = NULL, *q = NULL, *first = NULL, *last = NULL;
    FcStatus st = FC_OK;
    bool raised = false;
    if (cumulative || dx) {
        st = sample_pairs(I->fc, y, d, &yl, &yr, &e);
        if (st == FC_OK) st = cumulative ? fc_binary(I->fc, FC_OP_ADD, yl, yr, &t, &e) : fc_binary(I->fc, FC_OP_ADD, yr, yl, &t, &e);
    }
    if (cumulative) {
        if (st == FC_OK && dx) st = binary_scalar(I->fc, FC_OP_DIV, dx, 2.0, &u, &e);
        if (st == FC_OK) st = dx ? fc_binary(I->fc, FC_OP_MUL, u, t, &p, &e) : binary_scalar(I->fc, FC_OP_MUL, t, h / 2.0, &p, &e);
        if (st == FC_OK) raised = !scan_of(I, p, d, NULL, FC_OP_SUM, &r);
    } else if (dx) {
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, dx, t, &p, &e);
        if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_SUM, p, UINT64_C(1) << d, false, &q, &e);
        if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_DIV, q, 2.0, &r, &e);
    } else {
        st = index_at(I->fc, y, d, (FcIndex){.kind = FC_IX_INT, .i = 0}, &first, &e);
        if (st == FC_OK) st = index_at(I->fc, y, d, (FcIndex){.kind = FC_IX_INT, .i = y->shape[d] - 1}, &last, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_ADD, first, last, &t, &e);
        if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_MUL, t, 0.5, &u, &e);
        if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_SUM, y, UINT64_C(1) << d, false, &p, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, p, u, &q, &e);
        if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_MUL, q, h, &r, &e);
    }
    FcTensor *tmp[] = {dx, yl, yr, t, u, p, q, first, last};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) fc_tensor_release(tmp[k]);
    if (raised) return false;
    return result(I, st, &e, r, out);
}

bool impl_trapezoid(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { return trapezoid(I, sig, a, false, out); }
bool impl_cumulative_trapezoid(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    return trapezoid(I, sig, a, true, out);
}

/* vander(x, N, increasing): PyTorch's composition: a column of ones, then x repeated N - 1 times
 * (in x's dtype promoted with int64) and its cumprod along the row, flipped unless increasing.
 * Its gradient is autodiff's: PyTorch 1.13's backward of vander fails (its in-place cumprod). */
bool impl_vander(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *ones = NULL, *col = NULL, *c = NULL, *rep = NULL, *pw = NULL, *r = NULL, *f = NULL;
    TensorArg *na = ARG("N");
    FcError e;
    if (x->ndim != 1) return err_raise(I, TDL_ERR_RUNTIME, "x must be a one-dimensional tensor.");
    int64_t m = x->shape[0], n = na->none ? m : na->i;
    if (n < 0) return err_raise(I, TDL_ERR_RUNTIME, "N must be non-negative.");
    FcDType dt = fc_promote_types(x->dtype, FC_INT64);
    FcScalar one;
    if (fc_dtype_is_float(dt)) one.f = 1;
    else one.i = 1;
    FcStatus st = fc_full(I->fc, dt, x->device, 2, (int64_t[]){m, n > 0 ? 1 : 0}, one, &ones, &e);
    if (st == FC_OK && n > 1) {
        st = fc_to(I->fc, x, dt, x->device, &c, &e);
        if (st == FC_OK) st = fc_unsqueeze(I->fc, c, 1, &col, &e);
        if (st == FC_OK) st = fc_expand(I->fc, col, 2, (int64_t[]){m, n - 1}, &rep, &e);
        if (st == FC_OK && !scan_of(I, rep, 1, NULL, FC_OP_PROD, &pw)) {
            FcTensor *tmp[] = {ones, c, col, rep};
            for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) fc_tensor_release(tmp[k]);
            return false;
        }
        if (st == FC_OK) st = fc_cat(I->fc, 2, (FcTensor *[]){ones, pw}, 1, &r, &e);
    } else if (st == FC_OK) {
        r = fc_tensor_retain(ones);
    }
    if (st == FC_OK && !a[2].b) st = flip_along(I->fc, r, 1, (int[]){1}, &f, &e);
    FcTensor *tmp[] = {ones, c, col, rep, pw};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) fc_tensor_release(tmp[k]);
    if (f) {
        fc_tensor_release(r);
        r = f;
    }
    return chain_result(I, st, &e, r, out);
}

/* histc(bins, min, max): PyTorch 1.13's CPU histogram with linear bin selection: the outer edges
 * min and max (both equal: the data's extrema; still equal: widened by 1 each way) in the dtype,
 * an element e inside them counted in bin (int)((e - lo) / (hi - lo) * bins) computed in the
 * dtype (the last bin includes hi); elements outside are skipped. 1.13's range test lets NaN
 * through, and its bin index (int64 of NaN, INT64_MIN) wraps the address back to bin 0: NaN
 * counts in bin 0, as there. */
#define HISTC_LOOP(T)                                                                              \
    do {                                                                                           \
        const T *xs = (const T *)v.data + v.offset;                                                \
        T lo = (T)left, hi = (T)right, *hs = data;                                                 \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T x = xs[i];                                                                           \
            if (x < lo || x > hi) continue;                                                        \
            int64_t pos = x != x ? 0 : (int64_t)((x - lo) / (hi - lo) * (T)bins);                  \
            if (pos == bins) pos--;                                                                \
            hs[pos] += 1;                                                                          \
        }                                                                                          \
    } while (0)

bool impl_histc(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *h = NULL, *r = NULL, *res = NULL;
    int64_t bins = a[1].i, n = fc_tensor_numel(x);
    double left = scalar_value(&a[2]), right = scalar_value(&a[3]);
    FcView v;
    FcError e;
    (void)sig;
    if (bins <= 0)
        return err_raise(I, TDL_ERR_RUNTIME, "torch.histogram(): bins must be > 0, but got %lld for dimension 0",
                         (long long)bins);
    if (x->dtype == FC_BFLOAT16)   /* bfloat16 arithmetic and counts are not reproduced */
        return err_raise(I, TDL_ERR_RUNTIME, "histc: tdl does not support bfloat16");
    bool hist_dtype = x->dtype == FC_FLOAT32 || x->dtype == FC_FLOAT64;
    if (left == right && n > 0) {
        if (x->dtype == FC_FLOAT16)
            return err_raise(I, TDL_ERR_RUNTIME, "\"aminmax_cpu\" not implemented for '%s'", fc_dtype_torch_name(x->dtype));
        if (!host_dense(I, x, NULL, FC_FLOAT64, &h, &v)) return false;
        const double *xs = (const double *)v.data + v.offset;
        left = right = xs[0];
        for (int64_t i = 0; i < n; i++) {
            if (isnan(xs[i])) left = right = xs[i];
            if (isnan(left)) break;
            if (xs[i] < left) left = xs[i];
            if (xs[i] > right) right = xs[i];
        }
        fc_tensor_release(h);
        h = NULL;
    }
    if (left == right) {
        left -= 1;
        right += 1;
    }
    if (isinf(left) || isinf(right) || isnan(left) || isnan(right))
        return err_raise(I, TDL_ERR_RUNTIME, "torch.histc: range of [%g, %g] is not finite", left, right);
    if (!(left < right)) return err_raise(I, TDL_ERR_RUNTIME, "torch.histc: max must be larger than min");
    if (x->dtype == FC_BOOL) return err_raise(I, TDL_ERR_RUNTIME, "\"linspace_cpu\" not implemented for 'Bool'");
    if (!hist_dtype)
        return err_raise(I, TDL_ERR_RUNTIME, "\"histogram_cpu\" not implemented for '%s'", fc_dtype_torch_name(x->dtype));
    void *data;
    if (!host_dense(I, x, NULL, x->dtype, &h, &v)) return false;
    FcStatus st = host_vector(I->fc, x->dtype, bins, &r, &data, &e);
    if (st == FC_OK) {
        memset(data, 0, (size_t)bins * fc_dtype_size(x->dtype));
        if (x->dtype == FC_FLOAT32) HISTC_LOOP(float);
        else HISTC_LOOP(double);
    }
    fc_tensor_release(h);
    if (st == FC_OK) st = fc_to(I->fc, r, x->dtype, x->device, &res, &e);
    fc_tensor_release(r);
    return result(I, st, &e, res, out);
}
#undef HISTC_LOOP

/* ---- dist, equal, isreal, isin ---- */

/* dist(other, p): norm(self - other, p), as PyTorch. */
bool impl_dist(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *d = NULL, *r = NULL;
    FcError e;
    (void)sig;
    if (a[2].sdt == FC_BOOL)
        return err_raise(I, TDL_ERR_RUNTIME, "norm_kernel_tensor_iterator_impl expects norm to be integer or float");
    double p = scalar_value(&a[2]);
    FcStatus st = fc_binary(I->fc, FC_OP_SUB, a[0].t, a[1].t, &d, &e);
    if (st != FC_OK) return tensor_check(I, st, &e);
    if (!need_float(I, d, "norm(): input dtype should be either floating point or complex. Got %s instead.")) {
        fc_tensor_release(d);
        return false;
    }
    st = p_norm(I->fc, d, p, 0, false, &r, &e);
    fc_tensor_release(d);
    return result(I, st, &e, r, out);
}

/* equal(other) -> bool: the same shape and every element equal, compared in the promoted dtype
 * (PyTorch 1.13 promotes; NaN is never equal). */
bool impl_equal(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *eq = NULL, *all = NULL;
    FcScalar v = {0};
    FcError e;
    (void)sig;
    if (!fc_device_eq(x->device, y->device)) {
        char dx[32], dy[32];
        return err_raise(I, TDL_ERR_RUNTIME, "Cannot compare two tensors on different devices. Got: %s and %s",
                         fc_device_name(x->device, dx), fc_device_name(y->device, dy));
    }
    bool same = x->ndim == y->ndim;
    for (int k = 0; same && k < x->ndim; k++) same = x->shape[k] == y->shape[k];
    if (!same || fc_tensor_numel(x) == 0) {
        *out = v_bool(same);
        return true;
    }
    FcStatus st = fc_binary(I->fc, FC_OP_EQ, x, y, &eq, &e);
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_ALL, eq, 0, false, &all, &e);
    if (st == FC_OK) st = fc_item(I->fc, all, &v, &e);
    fc_tensor_release(eq);
    fc_tensor_release(all);
    if (!tensor_check(I, st, &e)) return false;
    *out = v_bool(v.i != 0);
    return true;
}

/* isreal: true everywhere for tdl's real dtypes, laid out as self (ones_like's preserve). */
bool impl_isreal(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *r = NULL, *one = NULL;
    int64_t strides[FC_MAX_DIMS];
    FcError e;
    (void)sig;
    FcStatus st = fc_like_strides(I->fc, t, FC_MF_PRESERVE, strides, &e);
    if (st == FC_OK) st = fc_empty(I->fc, FC_BOOL, t->device, t->ndim, t->shape, strides, &r, &e);
    if (st == FC_OK) st = fc_scalar(I->fc, FC_BOOL, (FcScalar){.i = 1}, false, &one, &e);
    if (st == FC_OK) st = fc_assign(I->fc, r, one, &e);
    fc_tensor_release(one);
    return chain_result(I, st, &e, r, out);
}

/* isin(elements, test_elements, assume_unique, invert): each element compared with every test
 * element in their promoted dtype (Python scalars on either side); bool refused as PyTorch does. */
bool impl_isin(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *t = a[1].t, *xc = NULL, *tc = NULL, *xu = NULL, *eq = NULL, *r = NULL, *tmp;
    FcError e;
    if (x->dtype == FC_BOOL || t->dtype == FC_BOOL)
        return err_raise(I, TDL_ERR_RUNTIME, "Unsupported input type encountered for isin(): Bool");
    FcOperand ops[2] = {tensor_operand(x), tensor_operand(t)};
    FcDType dt = fc_result_type(ops, 2);
    int64_t m = fc_tensor_numel(t);
    /* PyTorch compares few elements one by one (a kernel without float16), many by sorting */
    if (dt == FC_FLOAT16 && (double)fc_tensor_numel(x) < 10.0 * pow((double)m, 0.145))
        return err_raise(I, TDL_ERR_RUNTIME, "\"isin_default_cpu\" not implemented for 'Half'");
    FcStatus st = fc_to(I->fc, x, dt, x->device, &xc, &e);
    if (st == FC_OK) st = fc_to(I->fc, t, dt, x->device, &tc, &e);
    if (st == FC_OK) st = step(fc_reshape(I->fc, tc, 1, &m, &tmp, &e), &tc, &tmp);
    if (st == FC_OK) st = fc_unsqueeze(I->fc, xc, xc->ndim, &xu, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_EQ, xu, tc, &eq, &e);
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_ANY, eq, UINT64_C(1) << x->ndim, false, &r, &e);
    if (st == FC_OK && ARG("invert")->b) st = step(fc_unary(I->fc, FC_OP_NOT, r, &tmp, &e), &r, &tmp);
    fc_tensor_release(xc);
    fc_tensor_release(tc);
    fc_tensor_release(xu);
    fc_tensor_release(eq);
    return chain_result(I, st, &e, r, out);
}

/* ---- unique_consecutive ---- */

/* unique_consecutive(return_inverse, return_counts, dim): each run of equal neighbours (slices
 * along dim, or the flattened elements) kept once, as PyTorch compares them: with the last kept
 * one, a NaN equal to nothing. */
bool impl_unique_consecutive(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *src = NULL, *h = NULL;
    TensorArg *dim = ARG("dim");
    bool inv = ARG("return_inverse")->b, cnt = ARG("return_counts")->b;
    FcError e;
    FcView v;
    int d = 0;
    int64_t perm[FC_MAX_DIMS], n, len = 1;
    bool flat = dim->none;
    if (!flat) {
        if (t->ndim == 0)
            return err_raise(I, TDL_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions", (long long)dim->i);
        if (!tensor_check(I, fc_wrap_dim(dim->i, t->ndim, &d, &e), &e)) return false;
        flat = t->ndim == 1;
    }
    if (flat) {
        int64_t all = fc_tensor_numel(t);
        if (!tensor_check(I, fc_reshape(I->fc, t, 1, &all, &src, &e), &e)) return false;
        d = 0;
    } else {
        src = fc_tensor_retain(t);
        for (int k = 0; k < t->ndim; k++)
            if (k != d) len *= t->shape[k];
        if (t->shape[d] > 0 && len == 0) {
            fc_tensor_release(src);
            return err_raise(I, TDL_ERR_RUNTIME, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
        }
    }
    n = src->shape[d];
    perm[0] = d;
    for (int k = 0, j = 1; k < src->ndim; k++)
        if (k != d) perm[j++] = k;
    if (!host_dense(I, src, perm, src->dtype, &h, &v)) {
        fc_tensor_release(src);
        return false;
    }
    const char *base = (const char *)v.data + v.offset * (int64_t)fc_dtype_size(v.dtype);
    size_t cap = (size_t)(n ? n : 1);
    int64_t *first = mem_malloc(cap * sizeof *first), *inverse = mem_malloc(cap * sizeof *inverse);
    int64_t *counts = mem_calloc(cap, sizeof *counts), m = 0;
    bool ok = first && inverse && counts ? true : err_nomem(I);
    for (int64_t j = 0; ok && j < n; j++) {
        if (m == 0 || !slice_eq(base, v.dtype, len, first[m - 1], j)) first[m++] = j;
        inverse[j] = m - 1;
        counts[m - 1]++;
    }
    fc_tensor_release(h);
    if (ok)
        ok = unique_result(I, src, d, first, m, inv ? inverse : NULL, flat ? t->ndim : 1, flat ? t->shape : &n,
                           cnt ? counts : NULL, out);
    mem_free(first);
    mem_free(inverse);
    mem_free(counts);
    fc_tensor_release(src);
    return ok;
}

/* ---- cov, corrcoef ---- */

/* Whether every element of t is >= 0 (t not empty). */
static bool all_nonnegative(Interp *I, FcTensor *t, bool *yes)
{
    FcTensor *ge = NULL, *all = NULL;
    FcScalar v = {0};
    FcError e;
    FcStatus st = binary_scalar(I->fc, FC_OP_GE, t, 0.0, &ge, &e);
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_ALL, ge, 0, false, &all, &e);
    if (st == FC_OK) st = fc_item(I->fc, all, &v, &e);
    fc_tensor_release(ge);
    fc_tensor_release(all);
    *yes = v.i != 0;
    return tensor_check(I, st, &e);
}

/* The checks of one of cov's weights (fweights: integral, aweights: floating). */
static bool cov_weights(Interp *I, FcTensor *w, const char *name, bool integral, int64_t nobs)
{
    bool ok;
    if (w->ndim > 1)
        return err_raise(I, TDL_ERR_RUNTIME, "cov(): expected %s to have one or fewer dimensions but got %s with %d "
                         "dimensions", name, name, w->ndim);
    if (integral ? !fc_dtype_is_int(w->dtype) : !fc_dtype_is_float(w->dtype))
        return err_raise(I, TDL_ERR_RUNTIME, "cov(): expected %s to have %s dtype but got %s with %s dtype", name,
                         integral ? "integral" : "floating point", name, fc_dtype_torch_name(w->dtype));
    if (fc_tensor_numel(w) != nobs)
        return err_raise(I, TDL_ERR_RUNTIME, "cov(): expected %s to have the same numel as there are observations in "
                         "the input but got %lld != %lld", name, (long long)fc_tensor_numel(w), (long long)nobs);
    if (nobs != 0 && !all_nonnegative(I, w, &ok)) return false;
    if (nobs != 0 && !ok) return err_raise(I, TDL_ERR_RUNTIME, "cov(): %s cannot be negative", name);
    return true;
}

/* cov of x (variables as rows, observations as columns) as PyTorch 1.13 composes it. */
static bool covariance(Interp *I, FcTensor *x, int64_t correction, FcTensor *fw, FcTensor *aw, FcTensor **out)
{
    FcTensor *in = NULL, *w = NULL, *ws = NULL, *wx = NULL, *s = NULL, *avg = NULL, *nf = NULL, *t = NULL, *u = NULL,
             *c = NULL, *ct = NULL, *r = NULL, *tmp;
    FcError e;
    FcScalar v = {0};
    *out = NULL;
    if (x->ndim > 2)
        return err_raise(I, TDL_ERR_RUNTIME, "cov(): expected input to have two or fewer dimensions but got an input "
                         "with %d dimensions", x->ndim);
    if (x->dtype == FC_BOOL) return err_raise(I, TDL_ERR_RUNTIME, "cov(): bool dtype is not supported for input");
    FcStatus st = x->ndim < 2 ? fc_view(I->fc, x, 2, (int64_t[]){1, -1}, &in, &e) : (in = fc_tensor_retain(x), FC_OK);
    if (!tensor_check(I, st, &e)) return false;
    int64_t nobs = in->shape[1];
    bool ok = (!fw || cov_weights(I, fw, "fweights", true, nobs)) && (!aw || cov_weights(I, aw, "aweights", false, nobs));
    if (ok) {
        st = fw && aw ? fc_binary(I->fc, FC_OP_MUL, fw, aw, &w, &e) : FC_OK;
        if (!w && (fw || aw)) w = fc_tensor_retain(fw ? fw : aw);
        if (st == FC_OK) st = w ? fc_reduce(I->fc, FC_OP_SUM, w, 0, false, &ws, &e) : int_scalar(I->fc, FC_INT64, nobs, &ws, &e);
        if (st == FC_OK && w) {
            st = binary_scalar(I->fc, FC_OP_NE, ws, 0.0, &t, &e);
            if (st == FC_OK) st = fc_item(I->fc, t, &v, &e);
            fc_tensor_release(t);
            t = NULL;
            if (st == FC_OK && !v.i) {
                ok = err_raise(I, TDL_ERR_RUNTIME, "cov(): weights sum to zero, can't be normalized");
                st = FC_ERR_RUNTIME;
            }
        }
    }
    if (ok && st == FC_OK) {
        st = w ? fc_binary(I->fc, FC_OP_MUL, in, w, &wx, &e) : (wx = fc_tensor_retain(in), FC_OK);
        if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_SUM, wx, UINT64_C(1) << 1, false, &s, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_DIV, s, ws, &avg, &e);
        if (st == FC_OK && w && correction != 0 && aw) {
            st = fc_binary(I->fc, FC_OP_MUL, w, aw, &t, &e);
            if (st == FC_OK) st = step(fc_reduce(I->fc, FC_OP_SUM, t, 0, false, &tmp, &e), &t, &tmp);
            if (st == FC_OK) st = step(binary_scalar(I->fc, FC_OP_MUL, t, (double)correction, &tmp, &e), &t, &tmp);
            if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_DIV, t, ws, &tmp, &e), &t, &tmp);
            if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, ws, t, &nf, &e);
            fc_tensor_release(t);
            t = NULL;
        } else if (st == FC_OK) {
            FcTensor *k = NULL;
            st = fc_scalar(I->fc, FC_INT64, (FcScalar){.i = correction}, true, &k, &e);
            if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, ws, k, &nf, &e);
            fc_tensor_release(k);
        }
        if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_LE, nf, 0.0, &u, &e);
        if (st == FC_OK) st = fc_item(I->fc, u, &v, &e);
        if (st == FC_OK && v.i) {
            ok = interp_warn(I, TDL_ERR_USER_WARNING, "cov(): degrees of freedom is <= 0 (Triggered internally at  "
                             "./aten/src/ATen/native/Correlation.cpp:100.)");
            if (ok) st = step(int_scalar(I->fc, nf->dtype, 0, &tmp, &e), &nf, &tmp);
        }
    }
    if (ok && st == FC_OK) {
        FcTensor *col = NULL;
        st = fc_unsqueeze(I->fc, avg, 1, &col, &e);
        if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_SUB, in, col, &tmp, &e), &in, &tmp);
        fc_tensor_release(col);
        if (st == FC_OK) st = w ? fc_binary(I->fc, FC_OP_MUL, in, w, &t, &e) : (t = fc_tensor_retain(in), FC_OK);
        if (st == FC_OK) st = fc_transpose(I->fc, t, 0, 1, &ct, &e);
        if (st == FC_OK) st = fc_matmul(I->fc, in, ct, &c, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_DIV, c, nf, &r, &e);
        uint64_t ones = 0;
        for (int k = 0; st == FC_OK && k < r->ndim; k++)
            if (r->shape[k] == 1) ones |= UINT64_C(1) << k;
        if (st == FC_OK && ones) st = step(fc_squeeze(I->fc, r, ones, &tmp, &e), &r, &tmp);
    }
    FcTensor *rel[] = {in, w, ws, wx, s, avg, nf, t, u, c, ct};
    for (size_t k = 0; k < sizeof rel / sizeof *rel; k++) fc_tensor_release(rel[k]);
    if (!ok) {
        fc_tensor_release(r);
        return false;
    }
    *out = st == FC_OK ? r : NULL;
    return tensor_check(I, st, &e);
}

bool impl_cov(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    TensorArg *fw = ARG("fweights"), *aw = ARG("aweights");
    FcTensor *r;
    return covariance(I, a[0].t, ARG("correction")->i, fw->none ? NULL : fw->t, aw->none ? NULL : aw->t, &r) &&
           tensor_value_steal(I, r, out);
}

/* corrcoef: cov normalised by the standard deviations (rows then columns), clipped to [-1, 1];
 * a single variable's c / c. */
bool impl_corrcoef(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *c = NULL, *d = NULL, *sd = NULL, *col = NULL, *row = NULL, *r = NULL, *lo = NULL, *hi = NULL, *tmp;
    FcError e;
    (void)sig;
    if (x->ndim > 2)
        return err_raise(I, TDL_ERR_RUNTIME, "corrcoef(): expected input to have two or fewer dimensions but got an "
                         "input with %d dimensions", x->ndim);
    if (!covariance(I, x, 1, NULL, NULL, &c)) return false;
    FcStatus st;
    if (c->ndim == 0) {
        st = fc_binary(I->fc, FC_OP_DIV, c, c, &r, &e);
        fc_tensor_release(c);
        return result(I, st, &e, r, out);
    }
    int64_t n = c->shape[0];
    st = fc_diagonal(I->fc, c, 0, 0, 1, &d, &e);
    if (st == FC_OK) st = fc_unary(I->fc, FC_OP_SQRT, d, &sd, &e);
    if (st == FC_OK) st = fc_view(I->fc, sd, 2, (int64_t[]){n, 1}, &col, &e);
    if (st == FC_OK) st = fc_view(I->fc, sd, 2, (int64_t[]){1, n}, &row, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_DIV, c, col, &r, &e);
    if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_DIV, r, row, &tmp, &e), &r, &tmp);
    if (st == FC_OK) st = fc_scalar(I->fc, FC_INT64, (FcScalar){.i = -1}, true, &lo, &e);
    if (st == FC_OK) st = fc_scalar(I->fc, FC_INT64, (FcScalar){.i = 1}, true, &hi, &e);
    if (st == FC_OK) st = step(fc_clamp(I->fc, r, lo, hi, &tmp, &e), &r, &tmp);
    FcTensor *rel[] = {c, d, sd, col, row, lo, hi};
    for (size_t k = 0; k < sizeof rel / sizeof *rel; k++) fc_tensor_release(rel[k]);
    return chain_result(I, st, &e, r, out);
}
