/* compose.c — operations made of other operations: mean, max/min along a dim, softmax and
 * log_softmax, logsumexp, clamp, and reading one element (item).
 *
 * Each is built from the lazy IR ops (fc_reduce, fc_binary, fc_unary, fc_where, fc_cast) the way
 * PyTorch 1.13 composes it, so the dtypes, the special values (NaN, infinities, empty tensors)
 * and the messages are torch's: mean is sum / count; softmax subtracts the max along the dim,
 * which is realised before it is broadcast back; logsumexp zeroes infinite maxima first
 * (aten/src/ATen/native/ReduceOps.cpp: logsumexp_out_impl); clamp promotes like torch's two
 * overloads (scalar bounds vs tensor bounds). The result of an in-place operation is checked and
 * cast here too (fc_inplace_result). Depends on fcdim.h, internal.h and the C library. */
#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The dims a reduction mask selects on an ndim tensor (0: all of them). */
static uint64_t mask_dims(uint64_t mask, int ndim)
{
    uint64_t all = ndim >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << ndim) - 1);
    return mask == 0 ? all : (mask & all);
}

static FcStatus wrapped_float(FcCtx *ctx, double v, FcTensor **out, FcError *err)
{
    FcScalar s = {.f = v};
    return fc_scalar(ctx, FC_FLOAT64, s, true, out, err);
}

/* op(a, wrapped float v) */
static FcStatus with_float(FcCtx *ctx, FcOp op, FcTensor *a, double v, FcTensor **out, FcError *err)
{
    FcTensor *w = NULL;
    FcStatus st = wrapped_float(ctx, v, &w, err);
    if (!st)
        st = fc_binary(ctx, op, a, w, out, err);
    fc_tensor_release(w);
    return st;
}

/* ---- mean ---- */

FcStatus fc_mean(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (!fc_dtype_is_float(a->dtype))
        return fc_errf(err, FC_ERR_RUNTIME,
                    "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                    "dtype. Got: %s",
                    fc_dtype_torch_name(a->dtype));
    /* mean_out on CPU: sum_out(...).div_(dim_prod), dim_prod an integer. */
    uint64_t m = mask_dims(dim_mask, a->ndim);
    int64_t count, reduced[FC_MAX_DIMS];
    int nr = 0;
    for (int d = 0; d < a->ndim; d++)
        if ((m >> d) & 1)
            reduced[nr++] = a->shape[d];
    fc_shape_numel(nr, reduced, &count);    /* saturates only where the result is empty */
    FcTensor *sum = NULL, *n = NULL;
    FcStatus st = fc_sum(ctx, a, dim_mask, keepdim, &sum, err);
    if (!st)
        st = fc_scalar(ctx, FC_INT64, (FcScalar){.i = count}, true, &n, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_DIV, sum, n, out, err);
    fc_tensor_release(sum);
    fc_tensor_release(n);
    return st;
}

/* ---- max / min along a dim ---- */

FcStatus fc_max_dim(FcCtx *ctx, FcTensor *a, int64_t dim, bool keepdim, bool is_min, FcTensor **values,
                    FcTensor **indices, FcError *err)
{
    *values = *indices = NULL;
    int d;
    FcStatus st = fc_wrap_dim(dim, a->ndim, &d, err);
    if (st)
        return st;
    if (a->ndim == 0) {
        /* One element: itself (a copy, as torch's values are a new tensor), index 0. */
        st = fc_clone(ctx, a, FC_MF_CONTIGUOUS, values, err);
        if (!st)
            st = fc_full(ctx, FC_INT64, a->device, 0, NULL, (FcScalar){.i = 0}, indices, err);
        if (st) {
            fc_tensor_release(*values);
            *values = NULL;
        }
        return st;
    }
    if (a->shape[d] == 0)
        return fc_errf(err, FC_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", is_min ? "min" : "max",
                    d);
    uint64_t mask = (uint64_t)1 << d;
    if (fc_is_grad_enabled() && fc_requires_grad(a)) {
        /* PyTorch's values select the element at the index (its whole gradient goes there, where
         * amax splits it among ties): a gather of a at the indices. */
        FcTensor *ik = NULL;
        st = fc_reduce(ctx, is_min ? FC_OP_ARGMIN : FC_OP_ARGMAX, a, mask, true, &ik, err);
        if (!st)
            st = fc_gather(ctx, a, d, ik, values, err);
        if (!st && !keepdim) {
            FcTensor *v = *values;
            st = fc_squeeze(ctx, v, mask, values, err);
            fc_tensor_release(v);
            if (!st)
                st = fc_squeeze(ctx, ik, mask, indices, err);
        } else if (!st) {
            *indices = fc_tensor_retain(ik);
        }
        fc_tensor_release(ik);
        if (st) {
            fc_tensor_release(*values);
            *values = NULL;
        }
        return st;
    }
    st = fc_reduce(ctx, is_min ? FC_OP_AMIN : FC_OP_AMAX, a, mask, keepdim, values, err);
    if (!st)
        st = fc_reduce(ctx, is_min ? FC_OP_ARGMIN : FC_OP_ARGMAX, a, mask, keepdim, indices, err);
    if (st) {
        fc_tensor_release(*values);
        *values = NULL;
    }
    return st;
}

/* PyTorch's max() and min() differentiate as evenly_distribute_backward does on the CPU, amax and
 * amin as scale_grad_by_count: the node says which (autograd.c). Their messages name max and min
 * ("max(): Expected reduction dim to be specified for input.numel() == 0. ..."). */
FcStatus fc_max_all(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool is_min, FcTensor **out, FcError *err)
{
    FcOp op = is_min ? FC_OP_AMIN : FC_OP_AMAX;
    FcStatus st = fc_reduce(ctx, op, a, dim_mask, false, out, err);
    const char *name = fc_op_name(op);
    size_t n = strlen(name);
    if (st && strncmp(err->msg, name, n) == 0 && strncmp(err->msg + n, "():", 3) == 0)
        memmove(err->msg, err->msg + 1, strlen(err->msg));     /* amax() -> max() */
    FcNode *r = st ? NULL : (*out)->node;
    if (r && r->op == op)
        r->evenly = true;
    return st;
}

/* ---- softmax, log_softmax ---- */

/* x - max(x) along dim d, its exp, and their sum along d (kept). */
static FcStatus exp_sum(FcCtx *ctx, FcTensor *a, int d, FcTensor **xm, FcTensor **e, FcTensor **s, FcError *err)
{
    uint64_t mask = (uint64_t)1 << d;
    FcTensor *m = NULL;
    FcStatus st = FC_OK;
    if (a->ndim == 0) {
        m = fc_tensor_retain(a);
    } else {
        /* The max is a constant to the gradient: the result does not depend on it, and PyTorch's
         * backward formulas have no term through it (one would be NaN where an infinity meets it,
         * and not exactly 0 at the max elsewhere). */
        bool was_off = fc_grad_off;
        fc_grad_off = true;
        st = fc_reduce(ctx, FC_OP_AMAX, a, mask, true, &m, err);
        fc_grad_off = was_off;
    }
    if (!st)
        st = fc_binary(ctx, FC_OP_SUB, a, m, xm, err);
    if (!st)
        st = fc_unary(ctx, FC_OP_EXP, *xm, e, err);
    if (!st && a->ndim == 0)
        *s = fc_tensor_retain(*e);
    else if (!st)
        st = fc_reduce(ctx, FC_OP_SUM, *e, mask, true, s, err);
    fc_tensor_release(m);
    return st;
}

/* ---- float32 and float64 softmax as PyTorch 1.13's CPU kernels (SoftMaxKernel.cpp, AVX2) ----
 * Along the last dim (_vec_softmax_lastdim, _vec_log_softmax_lastdim): per row the max, the
 * vector exp of x - max and its sum in vec::reduce_all's order (FC_SUM_LANES), then x - max - log
 * (sum), or exp(x - max) * (1 / sum). Along another dim (_vec_softmax, _vec_logsoftmax): per inner
 * position the serial sum from 0 (FC_SUM_SERIAL) and exp(x - max) / sum or x - max - log(sum);
 * the inner positions past the last multiple of the vector width run the scalar code, whose exp
 * is libm's. The gradients (_vec_softmax_backward, _vec_log_softmax_backward and their last-dim
 * forms): (g - sum(g * y)) * y, each product of the sum added by an fma, and g - exp(y) * sum(g)
 * as one fma (GCC contracts both). Their sums have PyTorch's bits where the backend computes
 * ordered sums (the CPU); elsewhere they are fused. The gradient is declared (FC_VJP_SOFTMAX,
 * FC_VJP_LOG_SOFTMAX), computed by fc_softmax_backward. */

/* Vectorized<T>::size() under AVX2 for float32 and float64. */
static int vec_width(FcDType dt) { return dt == FC_FLOAT64 ? 4 : 8; }

/* exp(x) over a tensor of softmax's shape along dim d, as the kernel computes it: its vector exp,
 * and libm's at the inner positions that its scalar code runs (a dim that is not the last). */
static FcStatus kernel_exp(FcCtx *ctx, FcTensor *x, int d, FcTensor **out, FcError *err)
{
    int64_t inner = 1;
    for (int k = d + 1; k < x->ndim; k++)
        inner *= x->shape[k];
    int64_t cut = inner / vec_width(x->dtype) * vec_width(x->dtype);
    if (d == x->ndim - 1 || cut == inner)
        return fc_unary(ctx, FC_OP_EXP, x, out, err);
    if (cut == 0)
        return fc_unary(ctx, FC_OP_LIBM_EXP, x, out, err);
    FcTensor *v = NULL, *sc = NULL, *in_vec = NULL;
    FcStatus st = fc_unary(ctx, FC_OP_EXP, x, &v, err);
    if (!st)
        st = fc_unary(ctx, FC_OP_LIBM_EXP, x, &sc, err);
    if (!st)
        st = fc_inner_below(ctx, x->ndim, x->shape, d, cut, x->device, &in_vec, err);
    if (!st)
        st = fc_where(ctx, in_vec, v, sc, out, err);
    fc_tensor_release(v);
    fc_tensor_release(sc);
    fc_tensor_release(in_vec);
    return st;
}

/* a (float32 or float64, 1+ dims) softmax or log_softmax along d, as the kernels. */
static FcStatus softmax_kernel(FcCtx *ctx, FcTensor *a, int d, bool log, FcTensor **out, FcError *err)
{
    bool last = d == a->ndim - 1;
    FcTensor *m = NULL, *xm = NULL, *e = NULL, *s = NULL, *t = NULL, *one = NULL;
    bool was_off = fc_grad_off;
    fc_grad_off = true;     /* (a constant to the gradient, as in exp_sum) */
    FcStatus st = fc_reduce(ctx, FC_OP_AMAX, a, (uint64_t)1 << d, true, &m, err);
    fc_grad_off = was_off;
    /* Where the sum is computed apart, the max and exp(x - max), read by it and by the result,
     * are each stored once, as the kernels keep them; else all of it is one fused kernel. */
    FcBackend *be = NULL;
    bool apart = !st && fc_ctx_backend(ctx, a->device, &be, err) == FC_OK && fc_sums_ordered(ctx, be);
    if (apart)
        st = fc_realize(ctx, m, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_SUB, a, m, &xm, err);
    if (!st)
        st = kernel_exp(ctx, xm, d, &e, err);
    if (!st && apart)
        st = fc_realize(ctx, e, err);
    if (!st)
        st = fc_sum_ordered(ctx, e, NULL, (uint64_t)1 << d, true, last ? FC_SUM_LANES : FC_SUM_SERIAL, &s, err);
    if (!st && log) {
        st = fc_unary(ctx, FC_OP_LOG, s, &t, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_SUB, xm, t, out, err);
    } else if (!st && last) {
        st = wrapped_float(ctx, 1.0, &one, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_DIV, one, s, &t, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_MUL, e, t, out, err);
    } else if (!st) {
        st = fc_binary(ctx, FC_OP_DIV, e, s, out, err);
    }
    if (!st)
        fc_grad_declare(*out, log ? FC_VJP_LOG_SOFTMAX : FC_VJP_SOFTMAX, 1, &a, d);
    fc_tensor_release(m);
    fc_tensor_release(xm);
    fc_tensor_release(e);
    fc_tensor_release(s);
    fc_tensor_release(t);
    fc_tensor_release(one);
    return st;
}

FcStatus fc_softmax_backward(FcCtx *ctx, FcTensor *g, FcTensor *y, int d, bool log, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcSumOrder order = d == y->ndim - 1 ? FC_SUM_LANES : FC_SUM_SERIAL;
    FcTensor *s = NULL, *t = NULL, *ey = NULL;
    /* y is read twice (a softmax's own sum inside it): computed once */
    FcStatus st = fc_realize(ctx, y, err);
    if (st)
        return st;
    if (!log) {
        st = fc_sum_ordered(ctx, g, y, (uint64_t)1 << d, true, order, &s, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_SUB, g, s, &t, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_MUL, t, y, out, err);
    } else {
        st = fc_sum_ordered(ctx, g, NULL, (uint64_t)1 << d, true, order, &s, err);
        if (!st)
            st = kernel_exp(ctx, y, d, &ey, err);
        if (!st)
            st = fc_unary(ctx, FC_OP_NEG, ey, &t, err);
        if (!st)
            st = fc_fma(ctx, g, t, s, out, err);
    }
    fc_tensor_release(s);
    fc_tensor_release(t);
    fc_tensor_release(ey);
    return st;
}

/* bfloat16 log_softmax along the last dim, as torch 1.13's CPU kernel (_vec_log_softmax_lastdim)
 * makes it: the float32 sum of exp(x - max) kept as bfloat16, its log kept as bfloat16, and
 * (x - max) - that log rounded once. w: a in float32. */
static FcStatus log_softmax_bf16_last(FcCtx *ctx, FcTensor *w, int d, FcTensor **out, FcError *err)
{
    FcTensor *xm = NULL, *e = NULL, *s = NULL, *sb = NULL, *l = NULL, *lf = NULL, *r = NULL;
    FcStatus st = exp_sum(ctx, w, d, &xm, &e, &s, err);
    if (!st)
        st = fc_cast(ctx, s, FC_BFLOAT16, &sb, err);
    if (!st)
        st = fc_unary(ctx, FC_OP_LOG, sb, &l, err);     /* computed in float32, rounded to bfloat16 */
    if (!st)
        st = fc_cast(ctx, l, FC_FLOAT32, &lf, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_SUB, xm, lf, &r, err);
    if (!st)
        st = fc_cast(ctx, r, FC_BFLOAT16, out, err);
    fc_tensor_release(xm);
    fc_tensor_release(e);
    fc_tensor_release(s);
    fc_tensor_release(sb);
    fc_tensor_release(l);
    fc_tensor_release(lf);
    fc_tensor_release(r);
    return st;
}

/* bfloat16 softmax along a dim that is not the last, as torch 1.13's CPU kernel (_vec_softmax,
 * AVX2, one thread) makes it: each row of the inner elements (those after dim d) runs 16 at a
 * time in float32 with one rounding, and the rest of the row (all of it when shorter than 16)
 * runs the scalar tail, which stores exp(x - max) as bfloat16 and then multiplies it by the
 * float32 1 / sum. w: a in float32. */
static FcStatus softmax_bf16_inner(FcCtx *ctx, FcTensor *w, int d, FcTensor **out, FcError *err)
{
    enum { VEC = 16 };      /* Vectorized<BFloat16>::size() under AVX2 */
    int64_t inner = 1;
    for (int k = d + 1; k < w->ndim; k++)
        inner *= w->shape[k];
    int64_t cut = inner / VEC * VEC;
    FcTensor *xm = NULL, *e = NULL, *s = NULL, *once = NULL, *one = NULL, *inv = NULL, *eb = NULL, *ef = NULL,
             *tail = NULL, *tb = NULL, *in_vec = NULL;
    FcStatus st = exp_sum(ctx, w, d, &xm, &e, &s, err);
    if (!st && cut > 0)
        st = fc_binary(ctx, FC_OP_DIV, e, s, &once, err);
    if (!st && cut == inner) {
        st = fc_cast(ctx, once, FC_BFLOAT16, out, err);
        goto done;
    }
    if (!st)
        st = wrapped_float(ctx, 1.0, &one, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_DIV, one, s, &inv, err);
    if (!st)
        st = fc_cast(ctx, e, FC_BFLOAT16, &eb, err);
    if (!st)
        st = fc_cast(ctx, eb, FC_FLOAT32, &ef, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_MUL, ef, inv, &tail, err);
    if (!st && cut == 0) {
        st = fc_cast(ctx, tail, FC_BFLOAT16, out, err);
        goto done;
    }
    if (!st)
        st = fc_inner_below(ctx, w->ndim, w->shape, d, cut, w->device, &in_vec, err);
    if (!st)
        st = fc_where(ctx, in_vec, once, tail, &tb, err);
    if (!st)
        st = fc_cast(ctx, tb, FC_BFLOAT16, out, err);
done:
    fc_tensor_release(xm);
    fc_tensor_release(e);
    fc_tensor_release(s);
    fc_tensor_release(once);
    fc_tensor_release(one);
    fc_tensor_release(inv);
    fc_tensor_release(eb);
    fc_tensor_release(ef);
    fc_tensor_release(tail);
    fc_tensor_release(tb);
    fc_tensor_release(in_vec);
    return st;
}

FcStatus fc_softmax(FcCtx *ctx, FcTensor *a, int64_t dim, bool log, FcTensor **out, FcError *err)
{
    *out = NULL;
    int d;
    FcStatus st = fc_wrap_dim(dim, a->ndim, &d, err);
    if (st)
        return st;
    if (fc_tensor_numel(a) == 0)     /* torch returns before dispatching on the dtype; a copy keeps
                                      * a's graph (the empty result requires grad when a does) */
        return fc_clone(ctx, a, FC_MF_PRESERVE, out, err);
    if (!fc_dtype_is_float(a->dtype) || a->dtype == FC_FLOAT16) {
        /* The kernel that refuses: log_softmax shares softmax's for the other dims. */
        bool last = a->ndim == 0 || d == a->ndim - 1;
        return fc_errf(err, FC_ERR_RUNTIME, "\"%s\" not implemented for '%s'",
                    !last ? "softmax_kernel_impl" : log ? "log_softmax_lastdim_kernel_impl" : "softmax_lastdim_kernel_impl",
                    fc_dtype_torch_name(a->dtype));
    }
    if (fc_dtype_compute(a->dtype) != a->dtype) {
        /* bfloat16: torch's kernels compute in float32 and round the result once, but for
         * softmax along a dim that is not the last and log_softmax along the last one. */
        FcTensor *w = NULL, *r = NULL;
        bool last = a->ndim == 0 || d == a->ndim - 1;
        st = fc_cast(ctx, a, fc_dtype_compute(a->dtype), &w, err);
        if (!st && a->dtype == FC_BFLOAT16 && !log && !last)
            st = softmax_bf16_inner(ctx, w, d, out, err);
        else if (!st && a->dtype == FC_BFLOAT16 && log && last)
            st = log_softmax_bf16_last(ctx, w, d, out, err);
        else if (!st)
            st = fc_softmax(ctx, w, dim, log, &r, err);
        if (!st && r)
            st = fc_cast(ctx, r, a->dtype, out, err);
        fc_tensor_release(w);
        fc_tensor_release(r);
        return st;
    }
    if (a->ndim > 0 && !fc_tensor_has_dims(a))     /* (along a first-class dim: fused) */
        return softmax_kernel(ctx, a, d, log, out, err);
    FcTensor *xm = NULL, *e = NULL, *s = NULL, *ls = NULL;
    st = exp_sum(ctx, a, d, &xm, &e, &s, err);
    if (!st && log) {
        st = fc_unary(ctx, FC_OP_LOG, s, &ls, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_SUB, xm, ls, out, err);
    } else if (!st) {
        st = fc_binary(ctx, FC_OP_DIV, e, s, out, err);
    }
    fc_tensor_release(xm);
    fc_tensor_release(e);
    fc_tensor_release(s);
    fc_tensor_release(ls);
    return st;
}

/* ---- var and std ---- */

/* var (std) of all of float32 or float64 x as std_var_all_cpu (fc_var): a result of nout dims of
 * size 1. */
static FcStatus var_all(FcCtx *ctx, FcTensor *x, int64_t correction, bool take_sqrt, int nout, FcTensor **out,
                        FcError *err)
{
    *out = NULL;
    /* the elements in the order TensorIterator walks them: a stored tensor's by its strides */
    int64_t perm[FC_MAX_DIMS], n = fc_tensor_numel(x);
    int fast[FC_MAX_DIMS];
    if (x->storage && !x->node)
        fc_stride_order(x->ndim, x->shape, x->strides, fast);
    for (int k = 0; k < x->ndim; k++)
        perm[k] = x->storage && !x->node ? fast[x->ndim - 1 - k] : k;
    FcTensor *p = NULL, *flat = NULL, *m = NULL, *md = NULL, *xd = NULL, *dev = NULL, *sq = NULL, *s0 = NULL,
             *s = NULL, *div = NULL, *v = NULL, *r = NULL;
    int64_t ones[FC_MAX_DIMS];
    for (int k = 0; k < nout; k++)
        ones[k] = 1;
    FcStatus st = fc_permute(ctx, x, x->ndim, perm, &p, err);
    if (!st)
        st = fc_reshape(ctx, p, 1, &n, &flat, err);
    if (!st)
        st = fc_mean(ctx, x, 0, false, &m, err);
    if (!st)
        st = fc_cast(ctx, m, FC_FLOAT64, &md, err);
    if (!st)
        st = fc_cast(ctx, flat, FC_FLOAT64, &xd, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_SUB, xd, md, &dev, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_MUL, dev, dev, &sq, err);
    if (!st)
        st = fc_sum_ordered(ctx, sq, NULL, 1, false, FC_SUM_SERIAL, &s0, err);
    if (!st)
        st = fc_reshape(ctx, s0, nout, ones, &s, err);
    FcScalar divisor = {.f = n - correction > 0 ? (double)(n - correction) : 0.0};
    if (!st)
        st = fc_scalar(ctx, FC_FLOAT64, divisor, true, &div, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_DIV, s, div, &v, err);
    if (!st && take_sqrt)
        st = fc_unary(ctx, FC_OP_SQRT, v, &r, err);
    else if (!st)
        r = fc_tensor_retain(v);
    if (!st)
        st = fc_cast(ctx, r, x->dtype, out, err);
    FcTensor *tmp[] = {p, flat, m, md, xd, dev, sq, s0, s, div, v, r};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++)
        fc_tensor_release(tmp[k]);
    return st;
}

FcStatus fc_welford_m2(FcCtx *ctx, FcTensor *x, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err)
{
    *out = NULL;
    uint64_t red = mask_dims(dim_mask, x->ndim);
    int64_t count = 1;
    for (int d = 0; d < x->ndim; d++)
        if ((red >> d) & 1)
            count *= x->shape[d];
    FcTensor *xd = NULL, *s = NULL, *mean = NULL, *v = NULL, *sq = NULL;
    FcStatus st = fc_cast(ctx, x, FC_FLOAT64, &xd, err);
    /* (the mean is a fused sum: where m2 is the backend's Welford, nothing computes it) */
    if (!st)
        st = fc_reduce(ctx, FC_OP_SUM, xd, dim_mask, true, &s, err);
    if (!st)
        st = with_float(ctx, FC_OP_DIV, s, (double)count, &mean, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_SUB, xd, mean, &v, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_MUL, v, v, &sq, err);
    if (!st)
        st = fc_reduce(ctx, FC_OP_SUM, sq, dim_mask, keepdim, out, err);
    FcNode *m2 = st ? NULL : (*out)->node;
    if (m2 && m2->op == FC_OP_SUM && m2->refcnt == 1 && x->ndim > 0 && !fc_tensor_has_dims(x))
        m2->order = FC_SUM_WELFORD;     /* made just now: no other DAG holds it yet */
    FcTensor *tmp[] = {xd, s, mean, v, sq};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++)
        fc_tensor_release(tmp[k]);
    return st;
}

/* sqrt(v) with std_backward's 0 gradient where v is 0 (sqrt's own would be 0 / 0):
 * where(v == 0, 0, sqrt(where(v == 0, 1, v))), the same values. */
static FcStatus std_root(FcCtx *ctx, FcTensor *v, FcTensor **out, FcError *err)
{
    if (!fc_is_grad_enabled() || !fc_requires_grad(v))
        return fc_unary(ctx, FC_OP_SQRT, v, out, err);
    FcTensor *zero = NULL, *one = NULL, *z = NULL, *safe = NULL, *root = NULL;
    FcStatus st = wrapped_float(ctx, 0.0, &zero, err);
    if (!st)
        st = wrapped_float(ctx, 1.0, &one, err);
    if (!st)
        st = with_float(ctx, FC_OP_EQ, v, 0.0, &z, err);
    if (!st)
        st = fc_where(ctx, z, one, v, &safe, err);
    if (!st)
        st = fc_unary(ctx, FC_OP_SQRT, safe, &root, err);
    if (!st)
        st = fc_where(ctx, z, zero, root, out, err);
    FcTensor *tmp[] = {zero, one, z, safe, root};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++)
        fc_tensor_release(tmp[k]);
    return st;
}

FcStatus fc_var(FcCtx *ctx, FcTensor *x, uint64_t dim_mask, int64_t correction, bool keepdim, bool take_sqrt,
                FcTensor **out, FcError *err)
{
    *out = NULL;
    uint64_t red = mask_dims(dim_mask, x->ndim);
    int64_t n = 1, kept = 1;
    int nout = 0;
    for (int d = 0; d < x->ndim; d++) {
        bool r = (red >> d) & 1;
        n *= r ? x->shape[d] : 1;
        kept *= r ? 1 : x->shape[d];
        nout += !r || keepdim;
    }
    double divisor = n - correction > 0 ? (double)(n - correction) : 0.0;
    bool f32_f64 = x->dtype == FC_FLOAT32 || x->dtype == FC_FLOAT64;
    FcTensor *c = NULL, *m = NULL, *d = NULL, *sq = NULL, *s = NULL, *div = NULL, *v = NULL, *r = NULL;
    FcStatus st;
    if (fc_tensor_has_dims(x)) {
        /* sum((x - mean)^2) / divisor in x's computation dtype, fused */
        st = fc_cast(ctx, x, fc_dtype_compute(x->dtype), &c, err);
        if (!st)
            st = fc_mean(ctx, c, dim_mask, true, &m, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_SUB, c, m, &d, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_MUL, d, d, &sq, err);
        if (!st)
            st = fc_reduce(ctx, FC_OP_SUM, sq, dim_mask, keepdim, &s, err);
    } else if (f32_f64 && kept == 1 && fc_tensor_numel(x) > 0) {
        /* one result: PyTorch's two passes over all of x */
        st = var_all(ctx, x, correction, take_sqrt, nout, out, err);
        goto done;
    } else {
        st = fc_welford_m2(ctx, x, dim_mask, keepdim, &s, err);
    }
    if (!st)
        st = wrapped_float(ctx, divisor, &div, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_DIV, s, div, &v, err);
    if (!st && take_sqrt)
        st = std_root(ctx, v, &r, err);
    else if (!st)
        r = fc_tensor_retain(v);
    if (!st)
        st = fc_cast(ctx, r, x->dtype, out, err);
done:
    /* the gradient as PyTorch's var_backward / std_backward (n - correction may be 0 or less) */
    if (!st)
        fc_grad_declare_reduce(*out, take_sqrt ? FC_VJP_STD : FC_VJP_VAR, x, dim_mask, keepdim, (double)(n - correction));
    FcTensor *tmp[] = {c, m, d, sq, s, div, v, r};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++)
        fc_tensor_release(tmp[k]);
    return st;
}

/* ---- vector norms ---- */

FcStatus fc_norm(FcCtx *ctx, FcTensor *x, double p, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err)
{
    *out = NULL;
    uint64_t red = mask_dims(dim_mask, x->ndim);
    FcTensor *ax = NULL, *r = NULL, *t = NULL;
    FcStatus st = fc_unary(ctx, FC_OP_ABS, x, &ax, err);
    if (st) {
        /* (nothing more) */
    } else if (isinf(p)) {
        st = fc_reduce(ctx, p > 0 ? FC_OP_AMAX : FC_OP_AMIN, ax, dim_mask, keepdim, &r, err);
    } else if (p == 0) {
        st = with_float(ctx, FC_OP_NE, ax, 0.0, &t, err);
        if (!st)
            st = fc_reduce(ctx, FC_OP_SUM, t, dim_mask, keepdim, &r, err);
        fc_tensor_release(t);
        t = r;
        r = NULL;
        if (!st)
            st = fc_cast(ctx, t, x->dtype, &r, err);
    } else if (p == 1) {
        st = fc_sum_ordered(ctx, ax, NULL, red, keepdim, FC_SUM_SERIAL, &r, err);
    } else if (p == 2) {
        st = fc_sum_ordered(ctx, x, x, red, keepdim, FC_SUM_NORM2, &t, err);
        if (!st)
            st = fc_unary(ctx, FC_OP_SQRT, t, &r, err);
    } else {
        /* NormOps: sum(|x|^p) in the dtype, then its power 1 / p, that computed in the dtype;
         * each power libm's pow (not the tensor op's special exponents: the exponents are 0-dim
         * tensors of the dtype, not numbers) */
        double inv = x->dtype == FC_FLOAT32 ? (double)(1.0f / (float)p) : 1.0 / p;
        FcTensor *s = NULL, *e = NULL, *ie = NULL;
        st = fc_scalar(ctx, x->dtype, (FcScalar){.f = p}, false, &e, err);
        if (!st)
            st = fc_scalar(ctx, x->dtype, (FcScalar){.f = inv}, false, &ie, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_POW, ax, e, &t, err);
        if (!st)
            st = fc_sum_ordered(ctx, t, NULL, red, keepdim, FC_SUM_SERIAL, &s, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_POW, s, ie, &r, err);
        fc_tensor_release(s);
        fc_tensor_release(e);
        fc_tensor_release(ie);
    }
    /* the gradient as PyTorch's norm_backward (sqrt's own would be NaN where the norm is 0) */
    if (!st && isfinite(p) && p != 0)
        fc_grad_declare_reduce(r, FC_VJP_NORM, x, dim_mask, keepdim, p);
    fc_tensor_release(ax);
    fc_tensor_release(t);
    if (st)
        fc_tensor_release(r);
    *out = st ? NULL : r;
    return st;
}

/* ---- logsumexp ---- */

/* where(|m| == inf, 0, m) */
static FcStatus zero_infinite(FcCtx *ctx, FcTensor *m, FcTensor **out, FcError *err)
{
    FcTensor *abs = NULL, *inf = NULL, *is_inf = NULL, *zero = NULL;
    FcStatus st = fc_unary(ctx, FC_OP_ABS, m, &abs, err);
    if (!st)
        st = wrapped_float(ctx, INFINITY, &inf, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_EQ, abs, inf, &is_inf, err);
    if (!st)
        st = wrapped_float(ctx, 0.0, &zero, err);
    if (!st)
        st = fc_where(ctx, is_inf, zero, m, out, err);
    fc_tensor_release(abs);
    fc_tensor_release(inf);
    fc_tensor_release(is_inf);
    fc_tensor_release(zero);
    return st;
}

FcStatus fc_logsumexp(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcTensor *x = NULL, *m = NULL, *msq = NULL, *mk = NULL, *ms = NULL, *xm = NULL, *e = NULL, *s = NULL,
             *l = NULL;
    FcStatus st;
    /* Integer and bool inputs are promoted to the default float dtype. */
    if (fc_dtype_is_float(a->dtype))
        x = fc_tensor_retain(a);
    else if ((st = fc_cast(ctx, a, FC_FLOAT32, &x, err)))
        return st;
    uint64_t red = mask_dims(dim_mask, x->ndim);
    if (fc_tensor_numel(x) == 0) {
        /* Nothing to take the max of: log(sum(exp(x))). */
        st = fc_unary(ctx, FC_OP_EXP, x, &e, err);
        if (!st)
            st = fc_reduce(ctx, FC_OP_SUM, e, dim_mask, keepdim, &s, err);
        if (!st)
            st = fc_unary(ctx, FC_OP_LOG, s, out, err);
        goto done;
    }
    if (x->ndim == 0) {
        m = fc_tensor_retain(x);
        msq = fc_tensor_retain(x);
        st = FC_OK;
    } else {
        st = fc_reduce(ctx, FC_OP_AMAX, x, dim_mask, true, &m, err);
        if (!st)
            st = fc_realize(ctx, m, err);
        if (!st && keepdim) {
            msq = fc_tensor_retain(m);
        } else if (!st) {
            /* The max without the reduced dims: a view of the stored keepdim result. */
            int64_t sz[FC_MAX_DIMS], stv[FC_MAX_DIMS];
            int n = 0;
            for (int d = 0; d < m->ndim; d++)
                if (!((red >> d) & 1)) {
                    sz[n] = m->shape[d];
                    stv[n++] = m->strides[d];
                }
            st = fc_as_strided(ctx, m, n, sz, stv, m->offset, &msq, err);
        }
    }
    if (!st)
        st = zero_infinite(ctx, m, &mk, err);
    if (!st)
        st = zero_infinite(ctx, msq, &ms, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_SUB, x, mk, &xm, err);
    if (!st)
        st = fc_unary(ctx, FC_OP_EXP, xm, &e, err);
    if (!st) {
        if (x->ndim == 0)
            s = fc_tensor_retain(e);
        else
            st = fc_sum(ctx, e, dim_mask, keepdim, &s, err);    /* at::sum_out, as torch's */
    }
    if (!st)
        st = fc_unary(ctx, FC_OP_LOG, s, &l, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_ADD, l, ms, out, err);
    if (!st && x == a)
        fc_grad_declare_reduce(*out, FC_VJP_LOGSUMEXP, a, red, keepdim, 0);
done:
    fc_tensor_release(x);
    fc_tensor_release(m);
    fc_tensor_release(msq);
    fc_tensor_release(mk);
    fc_tensor_release(ms);
    fc_tensor_release(xm);
    fc_tensor_release(e);
    fc_tensor_release(s);
    fc_tensor_release(l);
    return st;
}

/* ---- clamp ---- */

static FcOperand operand(const FcTensor *t, bool as_scalar)
{
    FcOperand o = {FC_OPERAND_TENSOR, t->dtype};
    if (as_scalar || t->wrapped_number)
        o.kind = FC_OPERAND_SCALAR;
    else if (t->ndim == 0)
        o.kind = FC_OPERAND_ZERO_DIM;
    return o;
}

static FcStatus is_nan_scalar(FcCtx *ctx, FcTensor *t, bool *out, FcError *err)
{
    *out = false;
    if (!t || !fc_dtype_is_float(t->dtype))
        return FC_OK;
    FcScalar v;
    FcStatus st = fc_item(ctx, t, &v, err);
    if (!st)
        *out = v.f != v.f;
    return st;
}

FcStatus fc_clamp(FcCtx *ctx, FcTensor *a, FcTensor *lo, FcTensor *hi, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (!lo && !hi)
        return fc_errf(err, FC_ERR_RUNTIME, "torch.clamp: At least one of 'min' or 'max' must not be None");
    /* torch.clamp has a Scalar overload and a Tensor overload. Python picks the Scalar one when
     * some bound is a number and the others convert to numbers (0-dim tensors); its bounds
     * promote as scalars and a NaN bound is special-cased. Otherwise every operand is a tensor. */
    bool any_wrapped = (lo && lo->wrapped_number) || (hi && hi->wrapped_number);
    bool all_scalar = (!lo || lo->ndim == 0) && (!hi || hi->ndim == 0);
    bool scalar_mode = any_wrapped && all_scalar;
    FcOperand ops[3];
    int nops = 0;
    ops[nops++] = operand(a, false);
    if (lo)
        ops[nops++] = operand(lo, scalar_mode);
    if (hi)
        ops[nops++] = operand(hi, scalar_mode);
    FcDType rt = fc_result_type(ops, nops);
    FcStatus st;
    if (scalar_mode) {
        /* checked before is_nan_scalar realises the bounds (a NaN fits a float type; bool and
         * float16 fail below for want of a kernel, as in torch, whatever the bounds) */
        if (rt != FC_BOOL && rt != FC_FLOAT16 &&
            ((st = fc_check_wrapped(lo, rt, err)) || (st = fc_check_wrapped(hi, rt, err))))
            return st;
        bool lo_nan, hi_nan;
        if ((st = is_nan_scalar(ctx, lo, &lo_nan, err)) || (st = is_nan_scalar(ctx, hi, &hi_nan, err)))
            return st;
        if (lo && hi && (lo_nan || hi_nan))
            return fc_full(ctx, rt, a->device, a->ndim, a->shape, (FcScalar){.f = NAN}, out, err);
        /* One bound alone: std::max(a, NaN) and the vector max both keep a. */
        if (lo_nan || hi_nan)
            return fc_cast(ctx, a, rt, out, err);
        if (rt == FC_BOOL || rt == FC_FLOAT16)
            return fc_errf(err, FC_ERR_RUNTIME, "\"%s\" not implemented for '%s'",
                        lo && hi ? "clamp_scalar_cpu" : lo ? "clamp_min_cpu" : "clamp_max_scalar_cpu",
                        fc_dtype_torch_name(rt));
    } else if ((rt == FC_BOOL || rt == FC_FLOAT16) && lo && hi) {
        return fc_errf(err, FC_ERR_RUNTIME, "\"clamp_cpu\" not implemented for '%s'", fc_dtype_torch_name(rt));
    }
    /* min(max(a, lo), hi), keeping a where it equals a bound: torch's std::max(a, lo) and its
     * vectorised clamp_min/clamp_max return a on a tie, which shows with signed zeros
     * (clamp(-0.0, min=0.0) is -0.0). NaN in a or in a tensor bound propagates through max/min. */
    FcTensor *x = NULL, *b = NULL, *eq = NULL, *m = NULL, *r = NULL;
    st = fc_cast(ctx, a, rt, &x, err);
    for (int k = 0; k < 2 && !st; k++) {
        FcTensor *bound = k == 0 ? lo : hi;
        if (!bound)
            continue;
        st = fc_cast(ctx, bound, rt, &b, err);
        if (!st)
            st = fc_binary(ctx, k == 0 ? FC_OP_MAX : FC_OP_MIN, x, b, &m, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_EQ, x, b, &eq, err);
        if (!st)
            st = fc_where(ctx, eq, x, m, &r, err);
        fc_tensor_release(b);
        fc_tensor_release(eq);
        fc_tensor_release(m);
        b = eq = m = NULL;
        if (!st) {
            fc_tensor_release(x);
            x = r;
            r = NULL;
        }
    }
    if (st) {
        fc_tensor_release(x);
        return st;
    }
    *out = x;
    return FC_OK;
}

/* ---- in-place results ---- */

FcStatus fc_inplace_result(FcCtx *ctx, FcTensor *self, FcTensor *r, FcTensor **out, FcError *err)
{
    *out = NULL;
    /* TensorIterator checks the output's shape (resize_outputs is off for an in-place op) before
     * it checks the common dtype against the output's. */
    bool same = r->ndim == self->ndim;
    for (int k = 0; same && k < r->ndim; k++)
        same = r->shape[k] == self->shape[k];
    if (!same) {
        char a[256], b[256];
        return fc_errf(err, FC_ERR_RUNTIME, "output with shape %s doesn't match the broadcast shape %s",
                       fc_shape_str(a, sizeof a, self->ndim, self->shape), fc_shape_str(b, sizeof b, r->ndim, r->shape));
    }
    if (!fc_dtype_can_cast(r->dtype, self->dtype))
        return fc_errf(err, FC_ERR_RUNTIME, "result type %s can't be cast to the desired output type %s",
                       fc_dtype_torch_name(r->dtype), fc_dtype_torch_name(self->dtype));
    return fc_cast(ctx, r, self->dtype, out, err);
}

/* ---- item ---- */

FcStatus fc_item(FcCtx *ctx, FcTensor *t, FcScalar *out, FcError *err)
{
    if (fc_tensor_numel(t) != 1)
        return fc_errf(err, FC_ERR_VALUE, "only one element tensors can be converted to Python scalars");
    FcTensor *h = NULL;
    FcStatus st = fc_to(ctx, t, t->dtype, fc_cpu(), &h, err);
    if (st)
        return st;
    FcView v;
    st = fc_host_view(ctx, h, &v, err);
    if (!st) {
        *out = fc_scalar_load(v.dtype, (const char *)v.data + v.offset * (int64_t)fc_dtype_size(v.dtype));
    }
    fc_tensor_release(h);
    return st;
}
