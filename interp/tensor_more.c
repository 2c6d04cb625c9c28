/* tensor_more.c — the IMPL functions of the operators PyTorch users reach for next (tensor_ops.def's
 * "statistics, scans, sorting", "pieces and rearrangements" and "in-place methods" sections, but
 * the sorts: tensor_sort.c, and the products and matrices: tensor_linalg.c): std/var,
 * cumsum/cumprod, nansum/nanmean/aminmax, repeat/chunk/split/tensor_split/flip/roll/tril/triu,
 * norm/dist, masked_fill/index_fill, take/take_along_dim/repeat_interleave/meshgrid,
 * allclose/isclose, the in-place `_` methods, PyTorch's small compositions and pointwise formulas
 * (lerp, addcmul, addcdiv, logspace, bincount, histc, trapezoid, vander, equal, isin, ...).
 *
 * Each is built from fcdim's lazy operations where it can be (a flip or roll an index_select by
 * an index expression), so the results stay lazy and fuse with what uses them; a scan on the CPU
 * is one host pass (elsewhere, or with a gradient to record, a masked reduction). PyTorch 1.13 is
 * the specification, messages included. Depends on tensor_impl.h.
 */
#include "tensor_impl.h"
#include "mem.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- std / var ----------------------------------------------------------------------------- */

/* var over dims (mask 0: all) with divisor max(0, N - correction), as PyTorch's CPU (fc_var). */
static bool variance(Interp *I, const TensorSig *sig, TensorArg *a, bool is_std, Value *out)
{
    FcTensor *x = a[0].t, *r = NULL;
    TensorArg *dim = ARG("dim"), *unb = ARG("unbiased"), *corr = ARG("correction"), *keep = ARG("keepdim");
    FcError e;
    uint64_t mask;
    if (!need_float(I, x, "std and var only support floating point and complex dtypes")) return false;
    if (!tensor_dim_mask(I, x, dim, &mask)) return false;
    int64_t c = corr ? (corr->none ? 1 : corr->i) : unb && !unb->b ? 0 : 1;
    FcStatus st = fc_var(I->fc, x, mask, c, keep && keep->b, is_std, &r, &e);
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

static const char *const min_max[] = {"min", "max"};
static const TupleFields rt_aminmax = {"torch.return_types.aminmax", min_max, NULL};  /* no derivative in torch 1.13 */

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
    FcTensor *x = NULL, *w = NULL;
    TensorArg *dt = ARG("dtype");
    FcError e;
    uint64_t mask;
    *out = NULL;
    FcDType in = a[0].t->dtype, want = !dt->none ? dt->dtype : in;
    if (fc_dtype_is_float(in) && !fc_dtype_is_float(want))
        return err_raise(I, TDL_ERR_RUNTIME, "\"nansum_cpu\" not implemented for '%s'", fc_dtype_torch_name(want));
    if (!tensor_dim_mask(I, a[0].t, ARG("dim"), &mask)) return false;
    FcStatus st = want != in ? fc_to(I->fc, a[0].t, want, a[0].t->device, &x, &e) : (x = fc_tensor_retain(a[0].t), FC_OK);
    if (st == FC_OK) st = fc_nansum(I->fc, x, mask, ARG("keepdim")->b, out, &e);
    /* sum(dtype=int32) stays int32 */
    if (st == FC_OK && !dt->none && (*out)->dtype != want) st = step(fc_to(I->fc, *out, want, (*out)->device, &w, &e), out, &w);
    fc_tensor_release(x);
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

/* norm(p, dim, keepdim, dtype): the vector p-norm of the elements over dim (all: None), as
 * torch.norm (fc_norm). 'fro' (the default) and None are p = 2, but 'fro' over two dims, which is
 * frobenius_norm's sqrt(sum(x * x)), and over more, its error. */
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
    /* 'fro' (frobenius_norm): at most 2 dims; over 2, sqrt(sum(x * x)) (at::sum's, its gradient
     * autograd's through them); else the 2-norm */
    bool fro = pv.tag == V_STR || pv.tag == V_UNDEF;
    int ndims = dim->none ? 0 : dim->n;
    FcStatus st = FC_OK;
    if (fro && ndims > 2) {
        fc_tensor_release(x);
        return err_raise(I, TDL_ERR_RUNTIME, "Expected at most 2 dimensions, but got %d dimensions instead.", ndims);
    } else if (fro && ndims == 2) {
        FcTensor *sq = NULL, *s = NULL;
        st = fc_binary(I->fc, FC_OP_MUL, x, x, &sq, &e);
        if (st == FC_OK) st = fc_sum(I->fc, sq, mask, keep, &s, &e);
        if (st == FC_OK) st = fc_unary(I->fc, FC_OP_SQRT, s, &r, &e);
        fc_tensor_release(sq);
        fc_tensor_release(s);
    } else {
        st = fc_norm(I->fc, x, p, mask, keep, &r, &e);
    }
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
    if (st == FC_OK) st = fc_unary(I->fc, FC_OP_LIBM_SIN, p, &s, &e);     /* sinc_kernel's std::sin */
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
    st = fc_norm(I->fc, d, p, 0, false, &r, &e);
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

