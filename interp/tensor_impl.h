/* tensor_impl.h — what the IMPL files of tensor_ops.def share (tensor_ops.c, tensor_more.c,
 * tensor_sort.c, tensor_linalg.c): ARG, the wrapping of one fcdim call's result, chains of steps, host copies,
 * scalars, index expressions. Internal to the interpreter; static inline, so each file keeps its
 * own copy and the library exports none of these names. Depends on tensor.h and fcdim.h. */
#ifndef TDL_TENSOR_IMPL_H
#define TDL_TENSOR_IMPL_H

#include "tensor.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ARG(name) tensor_arg(sig, a, name)

/* A result of one fcdim call: wraps *r on success. */
static inline bool result(Interp *I, FcStatus st, const FcError *e, FcTensor *r, Value *out)
{
    return tensor_check(I, st, e) && tensor_value_steal(I, r, out);
}

/* result for a chain whose r (NULL until made) may hold a tensor when a later step failed: released
 * then. */
static inline bool chain_result(Interp *I, FcStatus st, const FcError *e, FcTensor *r, Value *out)
{
    if (st != FC_OK) {
        fc_tensor_release(r);
        return tensor_check(I, st, e);
    }
    return tensor_value_steal(I, r, out);
}

/* *t = op(*t, ...) for a chain of steps: releases the old *t; on failure *t is NULL. */
static inline FcStatus step(FcStatus st, FcTensor **t, FcTensor **next)
{
    fc_tensor_release(*t);
    *t = st == FC_OK ? *next : NULL;
    return st;
}

/* A dense C-contiguous host copy of t, its dims permuted by perm (NULL: as they are) and converted
 * to dtype, and a view of it: *h holds what the view borrows, for the caller to release (NULL on
 * failure, with the error raised). */
static inline bool host_dense(Interp *I, FcTensor *t, const int64_t *perm, FcDType dtype, FcTensor **h, FcView *v)
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
static inline FcStatus ferr(FcError *e, FcStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline FcStatus ferr(FcError *e, FcStatus st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return st;
}

static inline FcStatus int_scalar(FcCtx *ctx, FcDType dt, int64_t v, FcTensor **out, FcError *e)
{
    FcScalar s;
    if (fc_dtype_is_float(dt)) s.f = (double)v;
    else s.i = v;
    return fc_scalar(ctx, dt, s, false, out, e);
}

static inline FcStatus float_scalar(FcCtx *ctx, double v, FcTensor **out, FcError *e)
{
    FcScalar s;
    s.f = v;
    return fc_scalar(ctx, FC_FLOAT64, s, true, out, e);
}

/* op(a, wrapped scalar v): the scalar takes no part in the dtype unless its category is higher. */
static inline FcStatus binary_scalar(FcCtx *ctx, FcOp op, FcTensor *a, double v, FcTensor **out, FcError *e)
{
    FcTensor *s = NULL;
    FcStatus st = float_scalar(ctx, v, &s, e);
    if (st == FC_OK) st = fc_binary(ctx, op, a, s, out, e);
    fc_tensor_release(s);
    return st;
}

static inline bool need_float(Interp *I, const FcTensor *t, const char *msg)
{
    if (fc_dtype_is_float(t->dtype)) return true;
    return err_raise(I, TDL_ERR_RUNTIME, msg, fc_dtype_torch_name(t->dtype));
}

/* A tuple of n tensors (stolen from ts, which is then all NULL; released on failure), with
 * torch.return_types' names when fields is not NULL. */
static inline bool tuple_of(Interp *I, FcTensor **ts, int n, const TupleFields *fields, Value *out)
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
static inline FcStatus narrow(FcCtx *ctx, FcTensor *t, int d, int64_t start, int64_t len, FcTensor **out, FcError *e)
{
    FcIndex ix[FC_MAX_DIMS];
    for (int k = 0; k < d; k++) ix[k] = (FcIndex){.kind = FC_IX_SLICE, .step = 1};
    ix[d] = (FcIndex){.kind = FC_IX_SLICE, .start = start, .stop = start + len, .has_start = true, .has_stop = true,
                      .step = 1};
    return fc_index(ctx, t, d + 1, ix, out, e);
}

/* t with dims d gathered by index (an int64 1-D tensor): a lazy copy. */
static inline FcStatus select_by(FcCtx *ctx, FcTensor *t, int d, FcTensor *index, FcTensor **out, FcError *e)
{
    return fc_index_select(ctx, t, d, index, out, e);
}

/* The int64 index k -> f(k) for k in [0, n): (iota * mul + add) mod m (m 0: no mod). */
static inline FcStatus index_expr(FcCtx *ctx, int64_t n, int64_t mul, int64_t add, int64_t m, FcTensor **out, FcError *e)
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
static inline FcStatus iota_along(FcCtx *ctx, int64_t n, int ndim, int at, FcDevice dev, FcTensor **out, FcError *e)
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

/* "[a, b, c]" */
static inline const char *ints_text(int n, const int64_t *v, char *buf, size_t cap)
{
    size_t w = (size_t)snprintf(buf, cap, "[");
    for (int k = 0; k < n && w < cap; k++)
        w += (size_t)snprintf(buf + w, cap - w, "%s%lld", k ? ", " : "", (long long)v[k]);
    if (w < cap) snprintf(buf + w, cap - w, "]");
    return buf;
}

#endif
