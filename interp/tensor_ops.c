/* tensor_ops.c — the operator table (tensor_ops.def made into rows, builtin defs and one dispatch
 * trampoline per row) and the IMPL functions: the operators that are not one generic fcdim call
 * (creation from nested lists, casts and devices, reductions with extra results, shapes and
 * views, host values, NumPy files).
 *
 * Every impl gets its arguments already bound and converted (TensorArg, in signature order; by
 * name with ARG("dim") when a function serves several rows) and returns a new reference in *out.
 * Depends on interp.h, tensor.h, tensor_impl.h and fcdim.h; PyTorch 1.13 is the specification of each operator,
 * fcdim does the tensor work.
 */
#include "tensor.h"
#include "tensor_impl.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMPL_FN(fn) static bool impl_##fn(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)

#define TUPLEV(t) v_obj(V_TUPLE, &(t)->h)
#define LISTV(l) v_obj(V_LIST, &(l)->h)

/* ---- helpers ------------------------------------------------------------------------------- */

static FcDType dtype_or(const TensorArg *d, FcDType dflt) { return d && !d->none ? d->dtype : dflt; }
static FcDevice device_or(const TensorArg *d, FcDevice dflt) { return d && !d->none ? d->device : dflt; }
static double scalar_f(const TensorArg *s) { return s->sdt == FC_FLOAT64 ? s->s.f : (double)s->s.i; }

bool tensor_check_sizes(Interp *I, int n, const int64_t *size)
{
    for (int k = 0; k < n; k++) {
        if (size[k] >= 0) continue;
        Buf b = {0};
        for (int j = 0; j < n; j++) buf_printf(&b, "%s%lld", j ? ", " : "", (long long)size[j]);
        bool ok = b.nomem ? err_nomem(I)
                          : err_raise(I, TDL_ERR_RUNTIME, "Trying to create tensor with negative dimension %lld: [%s]",
                                      (long long)size[k], b.p);
        buf_free(&b);
        return ok;
    }
    return true;
}

/* A tensor of shape size (or like), equal to v (of kind vdt) everywhere. */
static bool make_full(Interp *I, int n, const int64_t *size, FcScalar v, FcDType vdt, FcDType dt, FcDevice dev,
                      Value *out)
{
    FcTensor *t;
    FcError e;
    if (!tensor_check_sizes(I, n, size) || !tensor_scalar_fits(I, v, vdt, dt, true)) return false;
    FcStatus st = fc_full(I->fc, dt, dev, n, size, tensor_scalar_as(v, vdt, dt), &t, &e);
    return result(I, st, &e, t, out);
}

static FcScalar scalar_i(int64_t i)
{
    FcScalar s;
    s.i = i;
    return s;
}

FcOperand tensor_operand(const FcTensor *t)
{
    FcOperand o;
    o.kind = t->wrapped_number ? FC_OPERAND_SCALAR : t->ndim == 0 ? FC_OPERAND_ZERO_DIM : FC_OPERAND_TENSOR;
    o.dtype = t->dtype;
    return o;
}

bool tensor_check_divisor(Interp *I, FcOp op, FcTensor *x, FcTensor *y)
{
    if (op != FC_OP_FLOORDIV && op != FC_OP_MOD && op != FC_OP_FMOD) return true;
    FcOperand ops[2] = {tensor_operand(x), tensor_operand(y)};
    /* (an empty operand makes an empty result: nothing is divided) */
    if (!fc_dtype_is_int(fc_result_type(ops, 2)) || fc_tensor_numel(x) == 0 || fc_tensor_numel(y) == 0) return true;
    FcScalar v = {0};
    /* a divisor known now (a Python number, a constant) needs no kernel to be tested */
    if (fc_tensor_known(y, &v))
        return v.i ? true : err_raise(I, TDL_ERR_RUNTIME, "ZeroDivisionError");
    FcTensor *zero = NULL, *eq = NULL, *any = NULL;
    FcError e;
    FcStatus st = fc_scalar(I->fc, FC_INT64, scalar_i(0), true, &zero, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_EQ, y, zero, &eq, &e);
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_ANY, eq, 0, false, &any, &e);
    if (st == FC_OK) st = fc_item(I->fc, any, &v, &e);
    fc_tensor_release(zero);
    fc_tensor_release(eq);
    fc_tensor_release(any);
    if (!tensor_check(I, st, &e)) return false;
    return v.i ? err_raise(I, TDL_ERR_RUNTIME, "ZeroDivisionError") : true;     /* torch's message */
}

/* ---- creation ------------------------------------------------------------------------------ */

/* tensor(data): nested lists and tuples of bools, ints, floats and one-element tensors. */
typedef struct Nested {
    int ndim;
    int64_t shape[FC_MAX_DIMS];
    int dtype;                  /* inferred so far; -1 before the first element */
    FcDType want;               /* when storing */
    char *dst;
    int64_t k;                  /* elements stored */
} Nested;

static bool seq_of(Value v, const Value **items, size_t *n)
{
    if (v.tag == V_LIST) {
        *items = as_list(v)->items;
        *n = as_list(v)->n;
        return true;
    }
    if (v.tag == V_TUPLE) {
        *items = as_tuple(v)->items;
        *n = as_tuple(v)->n;
        return true;
    }
    return false;
}

static void store_elem(char *p, FcDType dt, FcScalar s, FcDType sdt)
{
    fc_scalar_store(dt, p, tensor_scalar_as(s, sdt, dt));
}

/* Walks data: with n->dst NULL checks the shape and infers the dtype, else stores elements. */
static bool nested_walk(Interp *I, Value v, int dim, Nested *n)
{
    const Value *items;
    size_t len;
    if (dim < n->ndim) {
        if (!seq_of(v, &items, &len)) return err_raise(I, TDL_ERR_TYPE, "not a sequence");
        if ((int64_t)len != n->shape[dim])
            return err_raise(I, TDL_ERR_VALUE, "expected sequence of length %lld at dim %d (got %zu)",
                             (long long)n->shape[dim], dim, len);
        for (size_t j = 0; j < len; j++)
            if (!nested_walk(I, items[j], dim + 1, n)) return false;
        return true;
    }
    FcScalar s;
    FcDType sdt;
    switch (v.tag) {
    case V_BOOL: s.i = v.b; sdt = FC_BOOL; break;
    case V_INT: s.i = v.i; sdt = FC_INT64; break;
    case V_FLOAT: s.f = v.f; sdt = FC_FLOAT64; break;
    case V_TENSOR: {
        FcTensor *t = as_tensor(v);
        FcError e;
        if (fc_tensor_numel(t) != 1)
            return err_raise(I, TDL_ERR_VALUE, "only one element tensors can be converted to Python scalars");
        sdt = t->dtype;
        if (n->dst && !tensor_check(I, fc_item(I->fc, t, &s, &e), &e)) return false;
        break;
    }
    case V_LIST: case V_TUPLE:
        /* a sequence where a number belongs: torch infers the dtype first, then fails storing */
        if (!n->dst) return true;
        if (!fc_dtype_is_float(n->want))
            return err_raise(I, TDL_ERR_TYPE, "'%s' object cannot be interpreted as an integer", val_type_name(v));
        return err_raise(I, TDL_ERR_TYPE, "must be real number, not %s", val_type_name(v));
    default:
        return err_raise(I, TDL_ERR_RUNTIME, "Could not infer dtype of %s", val_type_name(v));
    }
    if (!n->dst) {
        /* A Python float is the default dtype; the others promote as torch.promote_types. */
        FcDType t = v.tag == V_FLOAT ? FC_FLOAT32 : sdt;
        n->dtype = n->dtype < 0 ? (int)t : (int)fc_promote_types((FcDType)n->dtype, t);
        return true;
    }
    if (fc_dtype_is_int(n->want) && !tensor_scalar_fits(I, s, sdt, n->want, false)) return false;
    store_elem(n->dst + n->k++ * (int64_t)fc_dtype_size(n->want), n->want, s, sdt);
    return true;
}

bool tensor_from_data(Interp *I, Value data, const FcDType *dtype, FcDevice dev, FcTensor **out)
{
    FcTensor *t;
    FcError e;
    Nested n = {.ndim = 0, .dtype = -1};
    for (Value v = data;;) {
        const Value *items;
        size_t len;
        if (!seq_of(v, &items, &len)) break;
        if (n.ndim == FC_MAX_DIMS) return err_raise(I, TDL_ERR_VALUE, "too many dimensions (at most %d)", FC_MAX_DIMS);
        n.shape[n.ndim++] = (int64_t)len;
        if (len == 0) break;
        v = items[0];
    }
    if (!nested_walk(I, data, 0, &n)) return false;
    n.want = dtype ? *dtype : n.dtype < 0 ? FC_FLOAT32 : (FcDType)n.dtype;
    FcView view = {.dtype = n.want, .ndim = n.ndim, .offset = 0};
    memcpy(view.shape, n.shape, sizeof n.shape);
    fc_contiguous_strides(n.ndim, n.shape, view.strides);
    int64_t count = fc_view_numel(&view);
    n.dst = mem_malloc((size_t)(count ? count : 1) * fc_dtype_size(n.want));
    if (!n.dst) return err_nomem(I);
    bool ok = nested_walk(I, data, 0, &n);
    view.data = n.dst;
    if (ok) ok = tensor_check(I, fc_from_view(I->fc, &view, dev, &t, &e), &e);
    mem_free(n.dst);
    if (ok) *out = t;
    return ok;
}

/* The dtype and device of a new tensor: the arguments, else self's (new_zeros, new_tensor, ...),
 * else dflt and the interpreter's device. */
static FcDType new_dtype(const TensorSig *sig, TensorArg *a, FcDType dflt)
{
    TensorArg *self = ARG("self");
    return dtype_or(ARG("dtype"), self ? self->t->dtype : dflt);
}

static FcDevice new_device(Interp *I, const TensorSig *sig, TensorArg *a)
{
    TensorArg *self = ARG("self");
    return device_or(ARG("device"), self ? self->t->device : I->device);
}

IMPL_FN(tensor)
{
    Value data = ARG("data")->v;
    FcDevice dev = new_device(I, sig, a);
    TensorArg *self = ARG("self"), *dt = ARG("dtype");
    FcDType want = new_dtype(sig, a, FC_FLOAT32);
    FcTensor *t, *r;
    FcError e;
    if (data.tag == V_TENSOR) {     /* a copy, as torch.tensor(t) */
        if (!interp_warn(I, TDL_ERR_USER_WARNING,
                         self ? "To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
                                "or sourceTensor.clone().detach().requires_grad_(True), rather than "
                                "tensor.new_tensor(sourceTensor)."
                              : "To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
                                "or sourceTensor.clone().detach().requires_grad_(True), rather than "
                                "torch.tensor(sourceTensor)."))
            return false;
        t = as_tensor(data);
        if (!tensor_check(I, fc_clone(I->fc, t, FC_MF_CONTIGUOUS, &r, &e), &e)) return false;
        t = r;
        FcStatus st = fc_to(I->fc, t, self || !dt->none ? want : t->dtype, dev, &r, &e);
        fc_tensor_release(t);
        return result(I, st, &e, r, out);
    }
    return tensor_from_data(I, data, self || !dt->none ? &want : NULL, dev, &t) && tensor_value_steal(I, t, out);
}

IMPL_FN(zeros)
{
    TensorArg *size = ARG("size");
    return make_full(I, size->n, size->ints, scalar_i(0), FC_INT64, new_dtype(sig, a, FC_FLOAT32),
                     new_device(I, sig, a), out);
}

IMPL_FN(ones)
{
    TensorArg *size = ARG("size");
    return make_full(I, size->n, size->ints, scalar_i(1), FC_INT64, new_dtype(sig, a, FC_FLOAT32),
                     new_device(I, sig, a), out);
}

IMPL_FN(full)
{
    /* The dtype follows the fill value, as torch 1.13: bool, int64, or the default float (new_full:
     * self's). */
    TensorArg *size = ARG("size"), *v = ARG("fill_value");
    FcDType dflt = v->sdt == FC_FLOAT64 ? FC_FLOAT32 : v->sdt;
    return make_full(I, size->n, size->ints, v->s, v->sdt, new_dtype(sig, a, dflt), new_device(I, sig, a), out);
}

IMPL_FN(empty)
{
    FcTensor *t;
    FcError e;
    TensorArg *size = ARG("size"), *mf = ARG("memory_format");
    int64_t strides[FC_MAX_DIMS];
    if (!tensor_check_sizes(I, size->n, size->ints)) return false;
    if (mf && !mf->none && mf->mf == FC_MF_PRESERVE) return err_raise(I, TDL_ERR_RUNTIME, "unsupported memory format Preserve");
    if (!tensor_check(I, fc_format_strides(!mf || mf->none ? FC_MF_CONTIGUOUS : mf->mf, size->n, size->ints, strides, &e),
                      &e))
        return false;
    FcStatus st = fc_empty(I->fc, new_dtype(sig, a, FC_FLOAT32), new_device(I, sig, a), size->n, size->ints, strides,
                           &t, &e);
    return result(I, st, &e, t, out);
}

IMPL_FN(arange)
{
    TensorArg *start = ARG("start"), *end = ARG("end"), *step = ARG("step");
    bool ints = end->sdt != FC_FLOAT64 && (!start || start->sdt != FC_FLOAT64) && (!step || step->sdt != FC_FLOAT64);
    FcTensor *t;
    FcError e;
    FcStatus st = fc_arange(I->fc, start ? scalar_f(start) : 0.0, scalar_f(end), step ? scalar_f(step) : 1.0,
                            dtype_or(ARG("dtype"), ints ? FC_INT64 : FC_FLOAT32), device_or(ARG("device"), I->device),
                            &t, &e);
    return result(I, st, &e, t, out);
}

IMPL_FN(linspace)
{
    FcTensor *t;
    FcError e;
    if (a[2].i < 0) return err_raise(I, TDL_ERR_RUNTIME, "number of steps must be non-negative");
    FcStatus st = fc_linspace(I->fc, scalar_f(&a[0]), scalar_f(&a[1]), a[2].i, dtype_or(ARG("dtype"), FC_FLOAT32),
                              device_or(ARG("device"), I->device), &t, &e);
    return result(I, st, &e, t, out);
}

IMPL_FN(eye)
{
    FcTensor *t;
    FcError e;
    int64_t m = a[1].none ? a[0].i : a[1].i;
    if (a[0].i < 0) return err_raise(I, TDL_ERR_RUNTIME, "n must be greater or equal to 0, got %lld", (long long)a[0].i);
    if (m < 0) return err_raise(I, TDL_ERR_RUNTIME, "m must be greater or equal to 0, got %lld", (long long)m);
    FcStatus st = fc_eye(I->fc, a[0].i, m, dtype_or(ARG("dtype"), FC_FLOAT32), device_or(ARG("device"), I->device),
                         &t, &e);
    return result(I, st, &e, t, out);
}

/* A *_like result's strides (memory_format=, preserve by default: fc_like_strides, which realises
 * a lazy self of two or more dims to learn its layout); *c_order when they are C order, so the
 * result may stay lazy. */
static bool like_strides(Interp *I, const TensorSig *sig, TensorArg *a, int64_t *strides, bool *c_order)
{
    FcTensor *self = ARG("self")->t;
    TensorArg *mf = ARG("memory_format");
    FcMemoryFormat f = mf->none ? FC_MF_PRESERVE : mf->mf;
    FcError e;
    int64_t c[FC_MAX_DIMS];
    fc_contiguous_strides(self->ndim, self->shape, c);
    *c_order = f == FC_MF_CONTIGUOUS || (f == FC_MF_PRESERVE && self->ndim < 2);
    if (*c_order) return true;
    if (!tensor_check(I, fc_like_strides(I->fc, self, f, strides, &e), &e)) return false;
    *c_order = memcmp(strides, c, (size_t)self->ndim * sizeof *c) == 0;
    return true;
}

/* The result r of a *_like op (consumed; st its status) with the strides like_strides gave: r
 * itself in C order, else a stored copy so laid out. */
static bool like_result(Interp *I, FcStatus st, FcError *e, FcTensor *r, const int64_t *strides, bool c_order,
                        Value *out)
{
    if (st || c_order) return result(I, st, e, r, out);
    FcTensor *t = NULL;
    st = fc_empty(I->fc, r->dtype, r->device, r->ndim, r->shape, strides, &t, e);
    if (!st) st = fc_assign(I->fc, t, r, e);
    fc_tensor_release(r);
    if (st) {
        fc_tensor_release(t);
        t = NULL;
    }
    return result(I, st, e, t, out);
}

/* rand / randn and their _like forms: shape from size or from self. */
static bool random_tensor(Interp *I, const TensorSig *sig, TensorArg *a, bool normal, Value *out)
{
    TensorArg *size = ARG("size"), *self = ARG("self"), *seed = ARG("seed");
    int n = size ? size->n : self->t->ndim;
    const int64_t *shape = size ? size->ints : self->t->shape;
    FcDType dt = dtype_or(ARG("dtype"), self ? self->t->dtype : FC_FLOAT32);
    FcDevice dev = device_or(ARG("device"), self ? self->t->device : I->device);
    int64_t s = seed->none ? -1 : seed->i, strides[FC_MAX_DIMS];
    bool c_order = true;
    FcTensor *t = NULL;
    FcError e;
    if (!seed->none && s < 0) return err_raise(I, TDL_ERR_VALUE, "seed must be non-negative, got %lld", (long long)s);
    if (!tensor_check_sizes(I, n, shape) || (self && !like_strides(I, sig, a, strides, &c_order))) return false;
    FcStatus st = normal ? fc_randn(I->fc, dt, n, shape, s, dev, &t, &e) : fc_rand(I->fc, dt, n, shape, s, dev, &t, &e);
    return like_result(I, st, &e, t, strides, c_order, out);
}

IMPL_FN(rand) { return random_tensor(I, sig, a, false, out); }
IMPL_FN(randn) { return random_tensor(I, sig, a, true, out); }
IMPL_FN(rand_like) { return random_tensor(I, sig, a, false, out); }
IMPL_FN(randn_like) { return random_tensor(I, sig, a, true, out); }

IMPL_FN(manual_seed)
{
    I->fc->seed = (uint64_t)a[0].i;
    I->fc->rng_offset = 0;
    *out = v_none();
    return true;
}

static bool full_like(Interp *I, const TensorSig *sig, TensorArg *a, FcScalar v, FcDType vdt, Value *out)
{
    FcTensor *self = a[0].t, *t = NULL;
    FcDType dt = dtype_or(ARG("dtype"), self->dtype);
    int64_t strides[FC_MAX_DIMS];
    bool c_order;
    FcError e;
    if (!tensor_scalar_fits(I, v, vdt, dt, true) || !like_strides(I, sig, a, strides, &c_order)) return false;
    FcStatus st = fc_full(I->fc, dt, device_or(ARG("device"), self->device), self->ndim, self->shape,
                          tensor_scalar_as(v, vdt, dt), &t, &e);
    return like_result(I, st, &e, t, strides, c_order, out);
}

IMPL_FN(zeros_like) { return full_like(I, sig, a, scalar_i(0), FC_INT64, out); }
IMPL_FN(ones_like) { return full_like(I, sig, a, scalar_i(1), FC_INT64, out); }
IMPL_FN(full_like) { return full_like(I, sig, a, a[1].s, a[1].sdt, out); }

IMPL_FN(empty_like)
{
    FcTensor *self = a[0].t, *t;
    int64_t strides[FC_MAX_DIMS];
    bool c_order;
    FcError e;
    if (!like_strides(I, sig, a, strides, &c_order)) return false;
    FcStatus st = fc_empty(I->fc, dtype_or(ARG("dtype"), self->dtype), device_or(ARG("device"), self->device),
                           self->ndim, self->shape, c_order ? NULL : strides, &t, &e);
    return result(I, st, &e, t, out);
}

/* ---- pointwise ----------------------------------------------------------------------------- */

/* self op other * alpha with the product rounded, then the sum (PyTorch's kernels on ints, and on
 * float16 and bfloat16 outside the vector loop). */
static FcStatus add_rounded(FcCtx *ctx, FcOp op, FcTensor *self, FcTensor *other, FcDType adt, FcScalar av,
                            bool one, FcTensor **out, FcError *e)
{
    FcTensor *alpha = NULL, *p = NULL;
    FcStatus st = one ? FC_OK : fc_scalar(ctx, adt, av, true, &alpha, e);
    if (st == FC_OK && !one) st = fc_binary(ctx, FC_OP_MUL, other, alpha, &p, e);
    if (st == FC_OK) st = fc_binary(ctx, op, self, one ? other : p, out, e);
    fc_tensor_release(alpha);
    fc_tensor_release(p);
    return st;
}

/* self op other * alpha as one FMA, as torch's vector loop: vec::fmadd(other, alpha, self), sub
 * with -alpha. */
static FcStatus add_fused(FcCtx *ctx, FcOp op, FcTensor *self, FcTensor *other, FcDType adt, FcScalar av,
                          FcTensor **out, FcError *e)
{
    if (op == FC_OP_SUB) {
        if (adt == FC_FLOAT64) av.f = -av.f;
        else av.i = (int64_t)(0 - (uint64_t)av.i);
    }
    FcTensor *alpha = NULL;
    FcStatus st = fc_scalar(ctx, adt, av, true, &alpha, e);
    if (st == FC_OK) st = fc_fma(ctx, self, other, alpha, out, e);
    fc_tensor_release(alpha);
    return st;
}

/* The extent of the innermost loop PyTorch's TensorIterator runs an elementwise op of these
 * operands in (C order output of nd dims, shape): every element when each operand is all of it,
 * contiguous, or one value; else the last dim (a broadcast operand stops the dims coalescing). */
static int64_t torch_inner_extent(FcTensor *const *ops, int n, int nd, const int64_t *shape)
{
    int64_t numel = 1, c[FC_MAX_DIMS];
    for (int d = 0; d < nd; d++) numel *= shape[d];
    for (int k = 0; k < n; k++) {
        const FcTensor *t = ops[k];
        if (fc_tensor_numel(t) == 1) continue;
        bool whole = t->ndim == nd && memcmp(t->shape, shape, (size_t)nd * sizeof *shape) == 0;
        if (whole && t->storage) {
            fc_contiguous_strides(nd, shape, c);
            for (int d = 0; d < nd; d++) whole = whole && (shape[d] == 1 || t->strides[d] == c[d]);
        }
        if (!whole) return nd ? shape[nd - 1] : 1;
    }
    return numel;
}

/* add / sub: self op other * alpha. As in torch, alpha takes no part in type promotion: it is
 * checked against, and cast to, the dtype of self op other (True + True * 2 is True). For float32
 * and float64 an alpha other than 1 makes one FMA, as torch's kernel: vec::fmadd(other, alpha,
 * self), sub with -alpha, its scalar loop contracted alike. bfloat16 has both: its vector loop
 * (Vectorized<BFloat16>: an FMA in float32) takes the first 32 * k elements of each innermost
 * loop, the scalar loop (each operation rounded to bfloat16) the rest; float16's Vectorized,
 * generic in 1.13, rounds each operation everywhere. */
static bool add_sub(Interp *I, TensorArg *a, FcOp op, Value *out)
{
    FcTensor *self = a[0].t, *other = a[1].t;
    FcOperand ops[2] = {tensor_operand(self), tensor_operand(other)};
    FcDType rdt = fc_result_type(ops, 2);
    FcDType adt = a[2].sdt;
    FcScalar av = a[2].s;
    if (adt == FC_BOOL && rdt != FC_BOOL)
        return err_raise(I, TDL_ERR_RUNTIME, "Boolean alpha only supported for Boolean results.");
    if (!fc_dtype_is_float(rdt) && fc_dtype_is_float(adt))
        return err_raise(I, TDL_ERR_RUNTIME,
                         "For integral input tensors, argument alpha must not be a floating point number.");
    if (rdt == FC_BOOL) {
        av.i = av.i != 0;
        adt = FC_BOOL;
    }
    FcTensor *r = NULL;
    FcError e;
    bool one = adt == FC_BOOL ? av.i == 1 : adt == FC_INT64 && av.i == 1;
    int64_t shape[FC_MAX_DIMS], inner = 0, cut = 0;
    int nd = 0;
    FcStatus st = FC_OK;
    if (!one && (rdt == FC_FLOAT32 || rdt == FC_FLOAT64)) {
        cut = inner = 1;
    } else if (!one && rdt == FC_BFLOAT16) {
        st = fc_broadcast_shapes(self->ndim, self->shape, other->ndim, other->shape, &nd, shape, &e);
        inner = torch_inner_extent((FcTensor *[]){self, other}, 2, nd, shape);
        cut = inner / 32 * 32;
    }
    if (st == FC_OK && cut < inner) {
        FcTensor *fused = NULL, *rounded = NULL, *pos = NULL, *lim = NULL, *in_vec = NULL;
        st = add_rounded(I->fc, op, self, other, adt, av, one, &rounded, &e);
        /* the FMA of the vector loop, where it runs: (index along the inner loop) < cut */
        if (st == FC_OK && cut > 0) {
            st = add_fused(I->fc, op, self, other, adt, av, &fused, &e);
            if (st == FC_OK) st = fc_iota(I->fc, inner, &pos, &e);
            if (st == FC_OK) {
                fc_tensor_place(pos, fused->device);
                FcTensor *pv = NULL;
                if (nd > 1 && inner == fc_tensor_numel(fused)) {     /* positions in C order */
                    st = fc_reshape(I->fc, pos, nd, shape, &pv, &e);
                    fc_tensor_release(pos);
                    pos = pv;
                }
            }
            if (st == FC_OK) st = fc_scalar(I->fc, FC_INT64, (FcScalar){.i = cut}, true, &lim, &e);
            if (st == FC_OK) st = fc_binary(I->fc, FC_OP_LT, pos, lim, &in_vec, &e);
            if (st == FC_OK) st = fc_where(I->fc, in_vec, fused, rounded, &r, &e);
        } else if (st == FC_OK) {
            r = fc_tensor_retain(rounded);
        }
        FcTensor *tmp[] = {fused, rounded, pos, lim, in_vec};
        for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) fc_tensor_release(tmp[k]);
        return result(I, st, &e, r, out);
    }
    if (st != FC_OK) return tensor_check(I, st, &e);
    if (cut == 0) {
        st = add_rounded(I->fc, op, self, other, adt, av, one, &r, &e);
        return result(I, st, &e, r, out);
    }
    /* every element in the vector loop (float32, float64; bfloat16 when the loop is whole) */
    st = add_fused(I->fc, op, self, other, adt, av, &r, &e);
    if (st == FC_OK && op == FC_OP_SUB)
        fc_grad_declare(r, FC_VJP_SUB, 2, (FcTensor *[]){self, other}, adt == FC_FLOAT64 ? av.f : (double)av.i);
    return result(I, st, &e, r, out);
}

IMPL_FN(add) { return add_sub(I, a, FC_OP_ADD, out); }
IMPL_FN(sub) { return add_sub(I, a, FC_OP_SUB, out); }

IMPL_FN(div)
{
    const char *mode = a[2].none ? NULL : a[2].str;
    FcTensor *x = a[0].t, *y = a[1].t, *m = NULL, *d = NULL, *r = NULL;
    FcError e;
    FcStatus st;
    if (!mode) {
        st = fc_binary(I->fc, FC_OP_DIV, x, y, &r, &e);
    } else if (strcmp(mode, "floor") == 0) {
        if (!tensor_check_divisor(I, FC_OP_FLOORDIV, x, y)) return false;
        st = fc_binary(I->fc, FC_OP_FLOORDIV, x, y, &r, &e);
    } else if (strcmp(mode, "trunc") == 0) {
        FcOperand ops[2] = {tensor_operand(x), tensor_operand(y)};
        FcDType rdt = fc_result_type(ops, 2);
        if (fc_dtype_is_float(rdt)) {
            st = fc_binary(I->fc, FC_OP_DIV, x, y, &d, &e);
            if (st == FC_OK) st = fc_unary(I->fc, FC_OP_TRUNC, d, &r, &e);
        } else if (rdt == FC_BOOL) {
            return err_raise(I, TDL_ERR_RUNTIME, "\"div_trunc_cpu\" not implemented for 'Bool'");
        } else {
            /* exact for integers: (x - fmod(x, y)) is a multiple of y; a bool x is first made the
             * result's integer type, as torch computes in it (bool has no subtraction) */
            if (!tensor_check_divisor(I, FC_OP_FMOD, x, y)) return false;
            FcTensor *xi = NULL;
            st = x->dtype == FC_BOOL ? fc_cast(I->fc, x, rdt, &xi, &e) : FC_OK;
            if (xi) x = xi;
            if (st == FC_OK) st = fc_binary(I->fc, FC_OP_FMOD, x, y, &m, &e);
            if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, x, m, &d, &e);
            if (st == FC_OK) st = fc_binary(I->fc, FC_OP_FLOORDIV, d, y, &r, &e);
            fc_tensor_release(xi);
        }
    } else {
        return err_raise(I, TDL_ERR_RUNTIME,
                         "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'", mode);
    }
    fc_tensor_release(m);
    fc_tensor_release(d);
    return result(I, st, &e, r, out);
}

IMPL_FN(where)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_where(I->fc, a[0].t, a[1].t, a[2].t, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(clamp)
{
    FcTensor *r;
    FcError e;
    if (a[1].none && a[2].none)
        return err_raise(I, TDL_ERR_RUNTIME, "torch.clamp: At least one of 'min' or 'max' must not be None");
    FcStatus st = fc_clamp(I->fc, a[0].t, a[1].t, a[2].t, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(matmul)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_matmul(I->fc, a[0].t, a[1].t, &r, &e);
    return result(I, st, &e, r, out);
}

/* dot(a, b): two 1-D tensors of the same length (torch.dot's checks and messages). */
IMPL_FN(dot)
{
    FcTensor *x = a[0].t, *y = a[1].t, *r;
    FcError e;
    if (x->ndim != 1 || y->ndim != 1)
        return err_raise(I, TDL_ERR_RUNTIME, "1D tensors expected, but got %dD and %dD tensors", x->ndim, y->ndim);
    if (x->shape[0] != y->shape[0])
        return err_raise(I, TDL_ERR_RUNTIME,
                         "inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the same number of "
                         "elements, but got %lld and %lld elements respectively", (long long)x->shape[0],
                         (long long)y->shape[0], (long long)x->shape[0], (long long)y->shape[0]);
    FcStatus st = fc_matmul(I->fc, x, y, &r, &e);
    return result(I, st, &e, r, out);
}

/* bmm(a, b): batches of matrices, [b, n, k] @ [b, k, m], no broadcasting (torch.bmm's checks). */
IMPL_FN(bmm)
{
    FcTensor *x = a[0].t, *y = a[1].t, *r;
    FcError e;
    if (x->ndim != 3) return err_raise(I, TDL_ERR_RUNTIME, "batch1 must be a 3D tensor");
    if (y->ndim != 3) return err_raise(I, TDL_ERR_RUNTIME, "batch2 must be a 3D tensor");
    if (y->shape[0] != x->shape[0] || y->shape[1] != x->shape[2])
        return err_raise(I, TDL_ERR_RUNTIME,
                         "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: [%lld, %lld].",
                         (long long)x->shape[0], (long long)x->shape[2], (long long)y->shape[0], (long long)y->shape[1]);
    FcStatus st = fc_matmul(I->fc, x, y, &r, &e);
    return result(I, st, &e, r, out);
}

/* ---- dtype and device ---------------------------------------------------------------------- */

/* to(device, dtype) / to(dtype) / to(other) / type(dtype): the tensor itself when nothing changes
 * (unless copy=True); memory_format= lays the result out in that format. */
IMPL_FN(to)
{
    FcTensor *self = a[0].t, *r, *c;
    TensorArg *dv = ARG("device"), *dt = ARG("dtype"), *other = ARG("other"), *copy = ARG("copy"),
              *mf = ARG("memory_format");
    FcDType want = other ? other->t->dtype : self->dtype;
    FcDevice dev = other ? other->t->device : self->device;
    FcError e;
    want = dtype_or(dt, want);
    dev = device_or(dv, dev);
    if (!tensor_check(I, fc_to(I->fc, self, want, dev, &r, &e), &e)) return false;
    FcStatus st = FC_OK;
    if (copy && copy->b && r == self) {
        st = fc_clone(I->fc, r, mf && !mf->none ? mf->mf : FC_MF_PRESERVE, &c, &e);
        fc_tensor_release(r);
        r = st == FC_OK ? c : NULL;
    } else if (mf && !mf->none && mf->mf != FC_MF_PRESERVE) {
        st = fc_contiguous(I->fc, r, mf->mf, &c, &e);
        fc_tensor_release(r);
        r = st == FC_OK ? c : NULL;
    }
    return result(I, st, &e, r, out);
}

IMPL_FN(cpu)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_to(I->fc, a[0].t, a[0].t->dtype, fc_cpu(), &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(cuda)
{
    FcDevice dev = {FC_DEV_CUDA, 0};
    FcTensor *r;
    FcError e;
    if (!a[1].none) {
        dev = a[1].device;
        if (dev.type != FC_DEV_CUDA) return err_raise(I, TDL_ERR_RUNTIME, "Invalid device, must be cuda device");
    }
    FcStatus st = fc_to(I->fc, a[0].t, a[0].t->dtype, dev, &r, &e);
    return result(I, st, &e, r, out);
}

/* ---- reductions ---------------------------------------------------------------------------- */

/* The input of a reduction with dtype= (cast first, as torch), as a new reference. */
static bool reduce_input(Interp *I, const TensorSig *sig, TensorArg *a, FcTensor **x)
{
    TensorArg *dt = ARG("dtype");
    FcError e;
    if (!dt || dt->none) {
        *x = fc_tensor_retain(a[0].t);
        return true;
    }
    return tensor_check(I, fc_to(I->fc, a[0].t, dt->dtype, a[0].t->device, x, &e), &e);
}

IMPL_FN(mean)
{
    FcTensor *x, *r = NULL;
    FcError e;
    uint64_t mask;
    if (!reduce_input(I, sig, a, &x)) return false;
    bool ok = tensor_dim_mask(I, x, &a[1], &mask) &&
              tensor_check(I, fc_mean(I->fc, x, mask, a[2].b, &r, &e), &e);
    fc_tensor_release(x);
    return ok && tensor_value_steal(I, r, out);
}

IMPL_FN(logsumexp)
{
    FcTensor *r;
    FcError e;
    uint64_t mask;
    if (!tensor_dim_mask(I, a[0].t, &a[1], &mask)) return false;
    FcStatus st = fc_logsumexp(I->fc, a[0].t, mask, a[2].b, &r, &e);
    return result(I, st, &e, r, out);
}

static bool softmax(Interp *I, const TensorSig *sig, TensorArg *a, bool log, Value *out)
{
    FcTensor *x, *r;
    FcError e;
    if (!reduce_input(I, sig, a, &x)) return false;
    FcStatus st = fc_softmax(I->fc, x, a[1].i, log, &r, &e);
    fc_tensor_release(x);
    return result(I, st, &e, r, out);
}

IMPL_FN(softmax) { return softmax(I, sig, a, false, out); }
IMPL_FN(log_softmax) { return softmax(I, sig, a, true, out); }

static const char *const values_indices[] = {"values", "indices"};
const TupleFields rt_max = {"torch.return_types.max", values_indices, "MaxBackward0"};
const TupleFields rt_min = {"torch.return_types.min", values_indices, "MinBackward0"};
const TupleFields rt_sort = {"torch.return_types.sort", values_indices, "SortBackward0"};
const TupleFields rt_topk = {"torch.return_types.topk", values_indices, "TopkBackward0"};

/* max(dim) / min(dim): the tuple (values, indices), named as torch.return_types.max / min. */
static bool max_dim(Interp *I, TensorArg *a, bool is_min, Value *out)
{
    FcTensor *ts[2];
    FcError e;
    if (!tensor_check(I, fc_max_dim(I->fc, a[0].t, a[1].i, a[2].b, is_min, &ts[0], &ts[1], &e), &e)) return false;
    return tuple_of(I, ts, 2, is_min ? &rt_min : &rt_max, out);
}

IMPL_FN(max_dim) { return max_dim(I, a, false, out); }
IMPL_FN(min_dim) { return max_dim(I, a, true, out); }

/* ---- shapes and views ---------------------------------------------------------------------- */

/* reshape(shape) / reshape_as(other) */
IMPL_FN(reshape)
{
    TensorArg *other = ARG("other");
    FcTensor *r;
    FcError e;
    FcStatus st = other ? fc_reshape(I->fc, a[0].t, other->t->ndim, other->t->shape, &r, &e)
                        : fc_reshape(I->fc, a[0].t, a[1].n, a[1].ints, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(ravel)
{
    FcTensor *r;
    FcError e;
    int64_t all = -1;
    FcStatus st = fc_reshape(I->fc, a[0].t, 1, &all, &r, &e);
    return result(I, st, &e, r, out);
}

/* view(size) / view_as(other) */
IMPL_FN(view)
{
    TensorArg *other = ARG("other");
    FcTensor *r;
    FcError e;
    FcStatus st = other ? fc_view(I->fc, a[0].t, other->t->ndim, other->t->shape, &r, &e)
                        : fc_view(I->fc, a[0].t, a[1].n, a[1].ints, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(permute)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_permute(I->fc, a[0].t, a[1].n, a[1].ints, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(transpose)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_transpose(I->fc, a[0].t, a[1].i, a[2].i, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(t)
{
    FcTensor *self = a[0].t, *r;
    FcError e;
    if (self->ndim > 2)
        return err_raise(I, TDL_ERR_RUNTIME, "t() expects a tensor with <= 2 dimensions, but self is %dD", self->ndim);
    FcStatus st = fc_transpose(I->fc, self, 0, self->ndim < 2 ? 0 : 1, &r, &e);    /* a view, even of 0 or 1 dims */
    return result(I, st, &e, r, out);
}

IMPL_FN(T)
{
    FcTensor *self = a[0].t, *r;
    FcError e;
    int64_t dims[FC_MAX_DIMS];
    for (int k = 0; k < self->ndim; k++) dims[k] = self->ndim - 1 - k;
    FcStatus st = fc_permute(I->fc, self, self->ndim, dims, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(mT)
{
    FcTensor *self = a[0].t, *r;
    FcError e;
    if (self->ndim < 2)
        return err_raise(I, TDL_ERR_RUNTIME, "tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.",
                         self->ndim);
    FcStatus st = fc_transpose(I->fc, self, -2, -1, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(diagonal)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_diagonal(I->fc, a[0].t, a[1].i, a[2].i, a[3].i, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(unfold)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_unfold(I->fc, a[0].t, a[1].i, a[2].i, a[3].i, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(as_strided)
{
    if (a[1].n != a[2].n)
        return err_raise(I, TDL_ERR_RUNTIME, "mismatch in length of strides and shape");
    FcTensor *r;
    FcError e;
    FcStatus st = fc_as_strided_checked(I->fc, a[0].t, a[1].n, a[1].ints, a[2].ints, a[3].none ? NULL : &a[3].i, &r, &e);
    return result(I, st, &e, r, out);
}

/* expand(size) / expand_as(other) */
IMPL_FN(expand)
{
    TensorArg *size = ARG("size"), *other = ARG("other");
    FcTensor *r;
    FcError e;
    FcStatus st = size ? fc_expand(I->fc, a[0].t, size->n, size->ints, &r, &e)
                       : fc_expand(I->fc, a[0].t, other->t->ndim, other->t->shape, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(squeeze)
{
    FcTensor *r;
    FcError e;
    uint64_t mask = 0;
    if (!a[1].none) {
        if (!tensor_dim_mask(I, a[0].t, &a[1], &mask)) return false;
        /* not a size-1 dim: a lazy tensor unchanged (not realised for it); a stored one's view, as
         * PyTorch's (a leaf's is not the leaf) */
        if (a[0].t->node && (a[0].t->ndim == 0 || a[0].t->shape[__builtin_ctzll(mask)] != 1))
            return tensor_value_steal(I, fc_tensor_retain(a[0].t), out);
    }
    FcStatus st = fc_squeeze(I->fc, a[0].t, mask, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(unsqueeze)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_unsqueeze(I->fc, a[0].t, a[1].i, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(flatten)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_flatten(I->fc, a[0].t, a[1].i, a[2].i, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(contiguous)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_contiguous(I->fc, a[0].t, a[1].mf, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(is_contiguous)
{
    bool b;
    FcError e;
    if (!tensor_check(I, fc_is_contiguous(I->fc, a[0].t, a[1].mf, &b, &e), &e)) return false;
    *out = v_bool(b);
    return true;
}

IMPL_FN(clone)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_clone(I->fc, a[0].t, a[1].none ? FC_MF_PRESERVE : a[1].mf, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(cat)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_cat(I->fc, a[0].n, a[0].ts, a[1].i, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(stack)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_stack(I->fc, a[0].n, a[0].ts, a[1].i, &r, &e);
    return result(I, st, &e, r, out);
}

/* ---- indexing ------------------------------------------------------------------------------ */
/* t[...] itself is tensor_getitem / tensor_setitem in tensor.c. */

IMPL_FN(index_select)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_index_select(I->fc, a[0].t, a[1].i, a[2].t, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(gather)
{
    FcTensor *r;
    FcError e;
    FcStatus st = fc_gather(I->fc, a[0].t, a[1].i, a[2].t, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(nonzero)
{
    FcTensor *r;
    FcError e;
    if (!tensor_check(I, fc_nonzero(I->fc, a[0].t, &r, &e), &e)) return false;
    if (!ARG("as_tuple")->b) return tensor_value_steal(I, r, out);
    /* One index tensor per dim (a 0-dim input counts as 1-dim). */
    int nd = a[0].t->ndim > 0 ? a[0].t->ndim : 1;
    TupleObj *tu = tuple_alloc(I, (size_t)nd);
    bool ok = tu != NULL;
    for (int d = 0; d < nd && ok; d++) {
        FcTensor *col;
        int64_t len = r->shape[0], stride = r->strides[0];
        FcStatus st = a[0].t->ndim > 0 ? fc_as_strided(I->fc, r, 1, &len, &stride, r->offset + d, &col, &e)
                                       : fc_full(I->fc, FC_INT64, a[0].t->device, 1, &len, (FcScalar){.i = 0}, &col, &e);
        ok = tensor_check(I, st, &e) && tensor_value_steal(I, col, &tu->items[d]);
    }
    fc_tensor_release(r);
    if (!tu) return false;
    *out = TUPLEV(tu);
    return ok;
}

/* The in-place operations return self; a copy first for their out-of-place forms. */
static bool self_or_copy(Interp *I, FcTensor *self, bool copy, FcTensor **t)
{
    FcError e;
    if (copy) return tensor_check(I, fc_clone(I->fc, self, FC_MF_PRESERVE, t, &e), &e);
    *t = fc_tensor_retain(self);
    return true;
}

static bool index_put(Interp *I, TensorArg *a, bool copy, Value *out)
{
    FcTensor *t;
    FcError e;
    FcIndex ix[FC_MAX_DIMS];
    int named = 0;      /* dims the indices name (a mask its rank), as make_info counts them */
    for (int k = 0; k < a[1].n; k++)
        named += a[1].ts[k]->dtype == FC_BOOL ? a[1].ts[k]->ndim : 1;
    if (named > a[0].t->ndim)
        return err_raise(I, TDL_ERR_INDEX, "too many indices for tensor of dimension %d (got %d)", a[0].t->ndim, named);
    for (int k = 0; k < a[1].n; k++)
        ix[k] = (FcIndex){.kind = FC_IX_TENSOR, .t = a[1].ts[k]};
    if (!self_or_copy(I, a[0].t, copy, &t)) return false;
    FcStatus st = fc_index_put(I->fc, t, a[1].n, ix, a[2].t, a[3].b, &e);
    if (st) fc_tensor_release(t);
    return copy ? result(I, st, &e, t, out) : tensor_check(I, st, &e) && tensor_value_steal(I, t, out);
}

IMPL_FN(index_put_) { return index_put(I, a, false, out); }
IMPL_FN(index_put) { return index_put(I, a, true, out); }

/* scatter / scatter_add (accumulate), in place or on a copy (copy); a[3] is src, or scatter's
 * Scalar value (converted to self's dtype as torch's fill does). */
static bool scatter(Interp *I, TensorArg *a, bool copy, bool accumulate, Value *out)
{
    FcTensor *t, *src = a[3].t, *v = NULL;
    FcError e;
    if (!src) {
        if (!tensor_scalar_fits(I, a[3].s, a[3].sdt, a[0].t->dtype, true)) return false;
        FcScalar s = tensor_scalar_as(a[3].s, a[3].sdt, a[0].t->dtype);
        if (!tensor_check(I, fc_scalar(I->fc, a[0].t->dtype, s, false, &v, &e), &e)) return false;
        src = v;
    }
    if (!self_or_copy(I, a[0].t, copy, &t)) {
        fc_tensor_release(v);
        return false;
    }
    FcStatus st = fc_scatter(I->fc, t, a[1].i, a[2].t, src, v != NULL, accumulate, &e);
    fc_tensor_release(v);
    if (st || !copy) fc_tensor_release(t);
    if (!tensor_check(I, st, &e)) return false;
    return copy ? tensor_value_steal(I, t, out) : tensor_return_self(I, &a[0], out);
}

IMPL_FN(scatter_) { return scatter(I, a, false, false, out); }
IMPL_FN(scatter) { return scatter(I, a, true, false, out); }
IMPL_FN(scatter_add_) { return scatter(I, a, false, true, out); }
IMPL_FN(scatter_add) { return scatter(I, a, true, true, out); }

static bool host_view(Interp *I, FcTensor *t, FcView *v, FcTensor **keep);

/* "[4, 5]" into b (sep ", ") or "4 5" (sep " ", how torch prints a std::vector). */
static void sizes_text(Buf *b, int n, const int64_t *v, const char *sep)
{
    for (int k = 0; k < n; k++) buf_printf(b, "%s%lld", k ? sep : "", (long long)v[k]);
}

/* t's sizes without dim d (none for a 0-dim t) into out; their number. */
static int slice_sizes(const FcTensor *t, int d, int64_t *out)
{
    int n = 0;
    for (int k = 0; k < t->ndim; k++)
        if (k != d) out[n++] = t->shape[k];
    return n;
}

/* index_add's and index_copy's checks, torch's (index_func_meta_impl, index_copy's meta) in its
 * order, but for the index values and index_add's per-slice broadcast, which index_into checks. */
static bool index_into_checks(Interp *I, FcTensor *self, int d, FcTensor *index, FcTensor *src, bool add)
{
    int64_t numel = fc_tensor_numel(index), src_len = src->ndim ? src->shape[d < src->ndim ? d : 0] : 1;
    const char *sdt = fc_dtype_torch_name(self->dtype), *rdt = fc_dtype_torch_name(src->dtype);
    if (!add) {
        if (index->ndim >= 2)
            return err_raise(I, TDL_ERR_INDEX, "index_copy_(): Index should have dimension 1 or 0 (got %d)", index->ndim);
        if (src->ndim == 0 && numel != 1)
            return err_raise(I, TDL_ERR_INDEX, "index_copy_(): When source is scalar, index should have one element "
                             "(got %lld)", (long long)numel);
        if (src->ndim != self->ndim && src->ndim != 0 && self->ndim != 0)
            return err_raise(I, TDL_ERR_INDEX, "index_copy_(): When source and destination are not scalars, their "
                             "dimensionality must match. Source dimensionality (%d), destination dimensionality (%d)",
                             src->ndim, self->ndim);
        if (index->dtype != FC_INT64)
            return err_raise(I, TDL_ERR_RUNTIME, "index_copy_(): Expected a long tensor for index, but got %s",
                             fc_dtype_torch_name(index->dtype));
        if (self->dtype != src->dtype)
            return err_raise(I, TDL_ERR_RUNTIME, "index_copy_(): self and source expected to have the same dtype, "
                             "but got (self) %s and (source) %s", sdt, rdt);
        int64_t ss[FC_MAX_DIMS], rs[FC_MAX_DIMS];
        int ns = slice_sizes(self, d, ss), nr = slice_sizes(src, d, rs);
        if (ns != nr || memcmp(ss, rs, (size_t)ns * sizeof *ss) != 0) {
            Buf b = {0};
            buf_printf(&b, "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice "
                           "shape: ");
            sizes_text(&b, ns, ss, " ");
            buf_printf(&b, " at dimension %d and source slice shape: ", d);
            sizes_text(&b, nr, rs, " ");
            buf_printf(&b, " at dimension 0.");
            bool ok = b.nomem ? err_nomem(I) : err_raise(I, TDL_ERR_RUNTIME, "%s", b.p);
            buf_free(&b);
            return ok;
        }
        if (src->ndim != 0 && numel != src_len)
            return err_raise(I, TDL_ERR_INDEX, "index_copy_(): Number of indices (%lld) should be equal to "
                             "source.size(dim) (%lld)", (long long)numel, (long long)src_len);
        return true;
    }
    if (index->ndim > 1) {
        Buf b = {0};
        sizes_text(&b, index->ndim, index->shape, ", ");
        bool ok = b.nomem ? err_nomem(I)
                          : err_raise(I, TDL_ERR_INDEX, "index_add_(): Index is supposed to be a vector, but got dim: "
                                      "%d with type: %s and size: [%s]", index->ndim,
                                      fc_dtype_torch_name(index->dtype), b.p);
        buf_free(&b);
        return ok;
    }
    if (index->dtype != FC_INT64 && index->dtype != FC_INT32)
        return err_raise(I, TDL_ERR_RUNTIME, "index_add_(): Expected dtype int32/int64 for index but got: %s",
                         fc_dtype_torch_name(index->dtype));
    if (self->dtype != src->dtype)
        return err_raise(I, TDL_ERR_RUNTIME, "index_add_(): self (%s) and source (%s) must have the same scalar type",
                         sdt, rdt);
    if (d != 0 && d >= src->ndim)
        return err_raise(I, TDL_ERR_RUNTIME, "index_add_(): Indexing dim %d is out of bounds of the source tensor with "
                         "dim %d", d, src->ndim);
    if (numel != src_len)
        return err_raise(I, TDL_ERR_RUNTIME, "index_add_(): Number of indices (%lld) should be equal to "
                         "source.size(dim): (%lld), for dim: %d", (long long)numel, (long long)src_len, d);
    if (self->ndim <= 1 && src->ndim > 1)
        return err_raise(I, TDL_ERR_RUNTIME, "source.dim() (%d) must one or zero for given self.dim() (%d)", src->ndim,
                         self->ndim);
    return true;
}

/* index_add's source as the value index_put writes: self's slice shape (the source's slices
 * broadcast to it, as torch's add_ of one slice into another), dim d of length n, times alpha. */
static FcStatus index_add_value(Interp *I, FcTensor *self, int d, FcTensor *src, const TensorArg *alpha,
                                FcTensor **out, FcError *e)
{
    int64_t ss[FC_MAX_DIMS], rs[FC_MAX_DIMS + 1], bs[FC_MAX_DIMS], shape[FC_MAX_DIMS], perm[FC_MAX_DIMS];
    int ns = slice_sizes(self, d, ss), nr = slice_sizes(src, d, rs), nb, k;
    int64_t n = src->ndim ? src->shape[d] : 1;
    FcStatus st = fc_broadcast_shapes(ns, ss, nr, rs, &nb, bs, e);
    if (st == FC_OK && (nb != ns || memcmp(bs, ss, (size_t)ns * sizeof *ss) != 0)) {
        Buf a = {0}, b = {0};
        sizes_text(&a, ns, ss, ", ");
        sizes_text(&b, nb, bs, ", ");
        snprintf(e->msg, sizeof e->msg, "output with shape [%s] doesn't match the broadcast shape [%s]",
                 a.p ? a.p : "", b.p ? b.p : "");
        st = a.nomem || b.nomem ? FC_ERR_NOMEM : FC_ERR_RUNTIME;
        buf_free(&a);
        buf_free(&b);
    }
    if (st != FC_OK) return st;
    /* (n, 1.., source's slice) broadcast to (n, self's slice), then dim 0 moved to d. */
    shape[0] = n;
    for (k = 0; k < ns - nr; k++) shape[1 + k] = 1;
    memcpy(shape + 1 + k, rs, (size_t)nr * sizeof *rs);
    FcTensor *v = NULL, *tmp, *r;
    for (k = 0; k < src->ndim; k++) perm[k] = k == 0 ? d : k <= d ? k - 1 : k;
    st = src->ndim > 1 && d > 0 ? fc_permute(I->fc, src, src->ndim, perm, &v, e) : FC_OK;
    if (st == FC_OK) st = fc_reshape(I->fc, v ? v : src, 1 + ns, shape, &tmp, e);
    fc_tensor_release(v);
    v = st == FC_OK ? tmp : NULL;
    shape[0] = n;
    memcpy(shape + 1, ss, (size_t)ns * sizeof *ss);
    if (st == FC_OK) st = fc_expand(I->fc, v, 1 + ns, shape, &r, e);
    fc_tensor_release(v);
    v = st == FC_OK ? r : NULL;
    for (k = 0; k <= ns; k++) perm[k] = k < d ? k + 1 : k == d ? 0 : k;
    if (st == FC_OK && d > 0) {
        st = fc_permute(I->fc, v, 1 + ns, perm, &r, e);
        fc_tensor_release(v);
        v = st == FC_OK ? r : NULL;
    }
    /* alpha in self's dtype (torch's alpha.to<scalar_t>(): 2.5 adds twice into an integer self) */
    FcScalar al = tensor_scalar_as(alpha->s, alpha->sdt, self->dtype);
    bool one = fc_dtype_is_float(self->dtype) ? al.f == 1.0 : al.i == 1;
    if (st == FC_OK && !one) {
        FcTensor *k = NULL;
        st = fc_scalar(I->fc, self->dtype, al, false, &k, e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, v, k, &r, e);
        fc_tensor_release(k);
        fc_tensor_release(v);
        v = st == FC_OK ? r : NULL;
    }
    *out = v;
    return st;
}

/* index_add (add) / index_copy along dim, in place or on a copy: index_put of the source's slices
 * at the positions the index names along dim, accumulating (in index order, as torch's loop over the
 * index adds whole slices) or not (of duplicates the last one wins, as torch's CPU kernel). Index
 * values are checked in torch's order: the first before index_add's slice broadcast, then the
 * rest; negatives are out of range. */
static bool index_into(Interp *I, const TensorSig *sig, TensorArg *a, bool copy, bool add, Value *out)
{
    FcTensor *self = a[0].t, *index = a[2].t, *src = a[3].t, *t = NULL, *v = NULL, *ix1 = NULL, *hk = NULL;
    FcError e;
    int d;
    if (!tensor_check(I, fc_wrap_dim(a[1].i, self->ndim, &d, &e), &e)) return false;
    if (!index_into_checks(I, self, d, index, src, add)) return false;
    int64_t size = self->ndim ? self->shape[d] : 1, numel = fc_tensor_numel(index);
    FcView iv;
    if (!host_view(I, index, &iv, &hk)) return false;
    bool ok = true;
    for (int64_t k = 0; ok && k < numel; k++) {
        int64_t at = iv.offset, rest = k, x;
        for (int j = iv.ndim - 1; j >= 0; j--) {
            at += rest % iv.shape[j] * iv.strides[j];
            rest /= iv.shape[j];
        }
        x = index->dtype == FC_INT32 ? ((const int32_t *)iv.data)[at] : ((const int64_t *)iv.data)[at];
        if (x >= 0 && x < size) {
            if (k == 0 && add && numel > 0) {       /* torch adds slice 0 before it reads index 1 */
                ok = tensor_check(I, index_add_value(I, self, d, src, ARG("alpha"), &v, &e), &e);
            }
            continue;
        }
        ok = add ? err_raise(I, TDL_ERR_INDEX, "index out of range in self")
                 : err_raise(I, TDL_ERR_INDEX, "index_copy_(): index %lld is out of bounds for dimension %d with size "
                             "%lld", (long long)x, d, (long long)size);
    }
    fc_tensor_release(hk);
    FcStatus st = FC_OK;
    if (ok && !v) v = fc_tensor_retain(src);
    if (ok) ok = self_or_copy(I, self, copy, &t);
    if (ok) {
        /* A 0-dim self, index or source as one element along a dim of its own. */
        int64_t vshape[FC_MAX_DIMS];
        FcTensor *tt = NULL, *vv = NULL;
        for (int k = 0; k < (self->ndim ? self->ndim : 1); k++) vshape[k] = k == d ? numel : self->ndim ? self->shape[k] : 1;
        st = self->ndim ? FC_OK : fc_unsqueeze(I->fc, t, 0, &tt, &e);
        if (st == FC_OK && v->ndim == 0) st = fc_reshape(I->fc, v, self->ndim ? self->ndim : 1, vshape, &vv, &e);
        if (st == FC_OK) st = fc_reshape(I->fc, index, 1, &numel, &ix1, &e);
        FcIndex ix[FC_MAX_DIMS];
        for (int k = 0; k < d; k++) ix[k] = (FcIndex){.kind = FC_IX_SLICE, .step = 1};
        ix[d] = (FcIndex){.kind = FC_IX_TENSOR, .t = ix1};
        if (st == FC_OK && numel > 0) st = fc_index_put(I->fc, tt ? tt : t, d + 1, ix, vv ? vv : v, add, &e);
        fc_tensor_release(tt);
        fc_tensor_release(vv);
        ok = tensor_check(I, st, &e);
    }
    fc_tensor_release(ix1);
    fc_tensor_release(v);
    if (!ok) {
        fc_tensor_release(t);
        return false;
    }
    if (copy) return tensor_value_steal(I, t, out);
    fc_tensor_release(t);
    return tensor_return_self(I, &a[0], out);
}

IMPL_FN(index_add) { return index_into(I, sig, a, true, true, out); }
IMPL_FN(index_add_) { return index_into(I, sig, a, false, true, out); }
IMPL_FN(index_copy) { return index_into(I, sig, a, true, false, out); }
IMPL_FN(index_copy_) { return index_into(I, sig, a, false, false, out); }

/* ---- host values --------------------------------------------------------------------------- */

static Value host_value(FcDType dt, const char *p)
{
    FcScalar s = fc_scalar_load(dt, p);
    return dt == FC_BOOL ? v_bool(s.i != 0) : fc_dtype_is_float(dt) ? v_float(s.f) : v_int(s.i);
}

IMPL_FN(item)
{
    FcTensor *t = a[0].t;
    FcScalar s;
    FcError e;
    if (!tensor_check(I, fc_item(I->fc, t, &s, &e), &e)) return false;
    *out = fc_dtype_is_float(t->dtype) ? v_float(s.f) : t->dtype == FC_BOOL ? v_bool(s.i != 0) : v_int(s.i);
    return true;
}

static bool tolist_rec(Interp *I, const FcView *v, int dim, int64_t off, Value *out)
{
    if (dim == v->ndim) {
        *out = host_value(v->dtype, (const char *)v->data + off * (int64_t)fc_dtype_size(v->dtype));
        return true;
    }
    ListObj *l = list_alloc(I, (size_t)v->shape[dim]);
    if (!l) return false;
    for (int64_t i = 0; i < v->shape[dim]; i++) {
        if (!tolist_rec(I, v, dim + 1, off + i * v->strides[dim], &l->items[i])) {
            val_decref(I, LISTV(l));
            return false;
        }
    }
    *out = LISTV(l);
    return true;
}

/* A host view of t (moved to the CPU first when it is elsewhere); *keep holds what the view
 * borrows, for the caller to release. */
static bool host_view(Interp *I, FcTensor *t, FcView *v, FcTensor **keep)
{
    FcError e;
    FcStatus st = fc_to(I->fc, t, t->dtype, fc_cpu(), keep, &e);
    if (st == FC_OK) st = fc_host_view(I->fc, *keep, v, &e);
    if (st != FC_OK) {
        if (*keep) fc_tensor_release(*keep);
        *keep = NULL;
    }
    return tensor_check(I, st, &e);
}

IMPL_FN(tolist)
{
    FcView v;
    FcTensor *keep = NULL;
    if (!host_view(I, a[0].t, &v, &keep)) return false;
    bool ok = tolist_rec(I, &v, 0, v.offset, out);
    fc_tensor_release(keep);
    return ok;
}

IMPL_FN(numel)
{
    *out = v_int(fc_tensor_numel(a[0].t));
    return true;
}

IMPL_FN(storage_offset)
{
    FcError e;
    if (!tensor_check(I, fc_realize(I->fc, a[0].t, &e), &e))
        return false;
    *out = v_int(a[0].t->offset);
    return true;
}

IMPL_FN(dim)
{
    *out = v_int(a[0].t->ndim);
    return true;
}

IMPL_FN(dtype)
{
    *out = v_dtype(a[0].t->dtype);
    return true;
}

IMPL_FN(device)
{
    *out = v_device(a[0].t->device);
    return true;
}

/* size / stride (and the shape attribute): a tuple, or one dim's entry. */
static bool sizes(Interp *I, const TensorSig *sig, TensorArg *a, const int64_t *vals, Value *out)
{
    FcTensor *t = a[0].t;
    TensorArg *dim = ARG("dim");
    if (dim && !dim->none) {
        int d;
        FcError e;
        if (!tensor_check(I, fc_wrap_dim(dim->i, t->ndim, &d, &e), &e)) return false;
        *out = v_int(t->ndim == 0 ? 1 : vals[d]);
        return true;
    }
    TupleObj *tu = tuple_alloc(I, (size_t)t->ndim);
    if (!tu) return false;
    for (int k = 0; k < t->ndim; k++) tu->items[k] = v_int(vals[k]);
    *out = TUPLEV(tu);
    return true;
}

IMPL_FN(size) { return sizes(I, sig, a, a[0].t->shape, out); }

IMPL_FN(stride)
{
    FcError e;
    if (!tensor_check(I, fc_realize(I->fc, a[0].t, &e), &e)) return false;
    return sizes(I, sig, a, a[0].t->strides, out);
}

/* ---- files --------------------------------------------------------------------------------- */

/* path with ext appended when it does not end with it (as NumPy's save and savez do). */
static char *with_ext(Interp *I, const char *path, const char *ext)
{
    size_t n = strlen(path), k = strlen(ext);
    char *p = mem_malloc(n + k + 1);
    if (!p) return err_nomem(I), NULL;
    memcpy(p, path, n + 1);
    if (n < k || strcmp(path + n - k, ext) != 0) memcpy(p + n, ext, k + 1);
    return p;
}

IMPL_FN(load)
{
    FcView v;
    FcTensor *t;
    FcError e;
    if (!interp_files_allowed(I, "load", false)) return false;
    if (!tensor_check(I, fc_npy_load(a[0].str, &v, &e), &e)) return false;
    FcStatus st = fc_from_view(I->fc, &v, I->device, &t, &e);
    mem_free(v.data);
    return result(I, st, &e, t, out);
}

IMPL_FN(save)
{
    FcView v;
    FcTensor *keep = NULL;
    FcError e;
    if (!interp_files_allowed(I, "save", true)) return false;
    char *path = with_ext(I, a[0].str, ".npy");
    if (!path) return false;
    bool ok = host_view(I, a[1].t, &v, &keep) && tensor_check(I, fc_npy_save(path, &v, &e), &e);
    fc_tensor_release(keep);
    mem_free(path);
    if (ok) *out = v_none();
    return ok;
}

/* loadz(file): a list of (name, tensor) pairs, in the archive's order. */
IMPL_FN(loadz)
{
    FcNamedView *arrs = NULL;
    int n = 0;
    FcError e;
    if (!interp_files_allowed(I, "loadz", false)) return false;
    if (!tensor_check(I, fc_npz_load(a[0].str, &arrs, &n, &e), &e)) return false;
    ListObj *l = list_alloc(I, (size_t)n);
    bool ok = l != NULL;
    for (int k = 0; k < n && ok; k++) {
        FcTensor *t;
        TupleObj *pair = tuple_alloc(I, 2);
        ok = pair != NULL;
        if (ok) l->items[k] = TUPLEV(pair);
        if (ok) ok = str_from_cstr(I, arrs[k].name, &pair->items[0]);
        if (ok) ok = tensor_check(I, fc_from_view(I->fc, &arrs[k].view, I->device, &t, &e), &e);
        if (ok) ok = tensor_value_steal(I, t, &pair->items[1]);
    }
    fc_npz_free(arrs, n);
    if (!ok) {
        if (l) val_decref(I, LISTV(l));
        return false;
    }
    *out = LISTV(l);
    return true;
}

/* savez(file, *args, **kwds) and savez_compressed: positional arrays are arr_0, arr_1, ... */
IMPL_FN(savez)
{
    if (!interp_files_allowed(I, sig->row->name, true)) return false;
    TensorArg *pos = &a[1], *kw = &a[2];
    int n = pos->n + kw->n;
    FcNamedView *arrs = mem_calloc((size_t)(n ? n : 1), sizeof *arrs);
    FcTensor **keep = mem_calloc((size_t)(n ? n : 1), sizeof *keep);
    char (*names)[24] = mem_calloc((size_t)(pos->n ? pos->n : 1), sizeof *names);
    char *path = NULL;
    bool ok = arrs && keep && names ? true : err_nomem(I);
    for (int k = 0; k < kw->n && ok; k++)
        for (int j = 0; j < pos->n && ok; j++) {
            snprintf(names[j], sizeof names[j], "arr_%d", j);
            if (strcmp(kw->names[k], names[j]) == 0)
                ok = err_raise(I, TDL_ERR_VALUE, "Cannot use un-named variables and keyword %s", kw->names[k]);
        }
    for (int k = 0; k < n && ok; k++) {
        bool positional = k < pos->n;
        if (positional) snprintf(names[k], sizeof names[k], "arr_%d", k);
        arrs[k].name = positional ? names[k] : (char *)kw->names[k - pos->n];
        ok = host_view(I, positional ? pos->ts[k] : kw->ts[k - pos->n], &arrs[k].view, &keep[k]);
    }
    FcError e;
    if (ok) ok = (path = with_ext(I, a[0].str, ".npz")) != NULL;
    if (ok) ok = tensor_check(I, fc_npz_save(path, arrs, n, strcmp(sig->row->name, "savez_compressed") == 0, &e), &e);
    for (int k = 0; keep && k < n; k++) fc_tensor_release(keep[k]);
    mem_free(keep);
    mem_free(arrs);
    mem_free(names);
    mem_free(path);
    if (ok) *out = v_none();
    return ok;
}

/* ---- gradients (fcdim/autograd.c) ---- */

IMPL_FN(requires_grad)
{
    (void)sig;
    *out = v_bool(fc_requires_grad(a[0].t));
    return true;
}

IMPL_FN(is_leaf)
{
    (void)sig;
    *out = v_bool(fc_is_leaf(a[0].t));
    return true;
}

IMPL_FN(grad_attr)
{
    (void)sig;
    FcTensor *t = a[0].t;
    if (fc_requires_grad(t) && !fc_is_leaf(t) && !fc_retains_grad(t) &&
        !interp_warn(I, TDL_ERR_USER_WARNING,
                     "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                     "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                     "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                     "Tensor by mistake, make sure you access the leaf Tensor instead. See "
                     "github.com/pytorch/pytorch/pull/30531 for more informations. (Triggered internally at  "
                     "./build/aten/src/ATen/core/TensorBody.h:480.)"))
        return false;
    FcTensor *g = fc_grad_of(t);
    if (!g) {
        *out = v_none();
        return true;
    }
    return tensor_value_steal(I, g, out);
}

IMPL_FN(grad_fn)
{
    (void)sig;
    char buf[64];
    const char *nm = fc_grad_fn_name(a[0].t, buf, sizeof buf);
    if (!nm) {
        *out = v_none();
        return true;
    }
    return str_printf(I, out, "<%s>", nm);
}

IMPL_FN(retain_grad)
{
    (void)sig;
    FcError e;
    if (!tensor_check(I, fc_retain_grad(I->fc, a[0].t, &e), &e)) return false;
    *out = v_none();
    return true;
}

IMPL_FN(retains_grad)
{
    (void)sig;
    *out = v_bool(fc_retains_grad(a[0].t));
    return true;
}

IMPL_FN(requires_grad_)
{
    (void)sig;
    FcError e;
    if (!tensor_check(I, fc_set_requires_grad(I->fc, a[0].t, a[1].b, &e), &e)) return false;
    val_incref(a[0].v);
    *out = a[0].v;
    return true;
}

IMPL_FN(detach)
{
    (void)sig;
    FcTensor *r;
    FcError e;
    FcStatus st = fc_detach(I->fc, a[0].t, &r, &e);
    return result(I, st, &e, r, out);
}

IMPL_FN(backward)
{
    (void)sig;
    FcError e;
    FcTensor *g = a[1].none ? NULL : a[1].t;
    bool retain = !a[2].none && a[2].b;
    if (!tensor_check(I, fc_backward(I->fc, 1, &a[0].t, &g, 0, NULL, NULL, retain, &e), &e)) return false;
    *out = v_none();
    return true;
}

/* A Tensor or a tuple/list of Tensors (None entries allowed when nones) as an array of borrowed
 * tensors (NULL for None); what names the argument in messages. */
static bool tensor_seq(Interp *I, Value v, bool nones, const char *what, FcTensor ***ts, int *n)
{
    const Value *items = &v;
    size_t cnt = 1;
    if (v.tag == V_TUPLE || v.tag == V_LIST) {
        cnt = v.tag == V_TUPLE ? as_tuple(v)->n : as_list(v)->n;
        items = v.tag == V_TUPLE ? as_tuple(v)->items : as_list(v)->items;
    }
    *ts = mem_calloc(cnt ? cnt : 1, sizeof **ts);
    if (!*ts) return err_nomem(I);
    for (size_t j = 0; j < cnt; j++) {
        if (items[j].tag == V_TENSOR)
            (*ts)[j] = as_tensor(items[j]);
        else if (!(nones && items[j].tag == V_NONE)) {
            mem_free(*ts);
            *ts = NULL;
            return err_raise(I, TDL_ERR_TYPE, "grad(): %s must be a Tensor or a sequence of Tensors, not %s", what,
                             val_type_name(items[j]));
        }
    }
    *n = (int)cnt;
    return true;
}

IMPL_FN(grad)
{
    (void)sig;
    FcTensor **outs = NULL, **ins = NULL, **gouts = NULL, **res = NULL;
    int nout = 0, nin = 0, ng = 0;
    bool ok = tensor_seq(I, a[0].v, false, "outputs", &outs, &nout) && tensor_seq(I, a[1].v, false, "inputs", &ins, &nin);
    if (ok && !a[2].none) {
        ok = tensor_seq(I, a[2].v, true, "grad_outputs", &gouts, &ng);
        if (ok && ng != nout)
            ok = err_raise(I, TDL_ERR_RUNTIME, "grad_outputs has %d entries but outputs has %d", ng, nout);
    }
    if (ok && !(res = mem_calloc(nin ? (size_t)nin : 1, sizeof *res))) ok = err_nomem(I);
    if (ok) {
        FcError e;
        ok = tensor_check(I, fc_backward(I->fc, nout, outs, gouts, nin, ins, res, !a[3].none && a[3].b, &e), &e);
    }
    ListObj *l = NULL;
    if (ok) {
        l = list_alloc(I, 0);
        ok = l != NULL;
        for (int i = 0; ok && i < nin; i++) {
            Value tv;
            ok = tensor_value_steal(I, res[i], &tv);
            res[i] = NULL;
            if (ok) {
                ok = list_append(I, l, tv);
                val_decref(I, tv);
            }
        }
        if (ok) *out = LISTV(l);
        else if (l) val_decref(I, LISTV(l));
    }
    for (int i = 0; res && i < nin; i++) fc_tensor_release(res[i]);
    mem_free(res);
    mem_free(outs);
    mem_free(ins);
    mem_free(gouts);
    return ok;
}

/* The gradient-mode context managers: ud is a GradMode. no_grad()/enable_grad() set the mode when
 * the `with` block is entered; set_grad_enabled(mode) sets it when called (so that it also works
 * as a plain call, as torch's does). Each restores the mode it found when the block ends. */
typedef struct GradMode {
    bool mode, prev, set_on_enter;
} GradMode;

static bool grad_mode_enter(Interp *I, void *ud, Value *out)
{
    (void)I;
    GradMode *g = ud;
    if (g->set_on_enter) {
        g->prev = fc_is_grad_enabled();
        fc_set_grad_enabled(g->mode);
    }
    *out = v_none();
    return true;
}

static bool grad_mode_exit(Interp *I, void *ud, Value exc, bool *suppress)
{
    (void)I;
    (void)exc;
    fc_set_grad_enabled(((GradMode *)ud)->prev);
    *suppress = false;
    return true;
}

static bool grad_mode_new(Interp *I, const char *name, bool mode, bool set_now, Value *out)
{
    GradMode *g = mem_malloc(sizeof *g);
    if (!g) return err_nomem(I);
    *g = (GradMode){.mode = mode, .prev = fc_is_grad_enabled(), .set_on_enter = !set_now};
    if (!ctxmgr_new(I, name, grad_mode_enter, grad_mode_exit, g, mem_free, out)) return false;
    if (set_now) fc_set_grad_enabled(mode);
    return true;
}

IMPL_FN(set_grad_enabled)
{
    (void)sig;
    return grad_mode_new(I, "set_grad_enabled", a[0].b, true, out);
}

IMPL_FN(no_grad)
{
    (void)sig;
    (void)a;
    return grad_mode_new(I, "no_grad", false, false, out);
}

IMPL_FN(enable_grad)
{
    (void)sig;
    (void)a;
    return grad_mode_new(I, "enable_grad", true, false, out);
}

IMPL_FN(is_grad_enabled)
{
    (void)I;
    (void)sig;
    (void)a;
    *out = v_bool(fc_is_grad_enabled());
    return true;
}

bool tensor_set_attr(Interp *I, Value obj, const char *name, Value v, bool *found)
{
    *found = false;
    if (obj.tag != V_TENSOR) return true;
    FcTensor *t = as_tensor(obj);
    FcError e;
    if (strcmp(name, "grad") == 0) {
        *found = true;
        if (v.tag != V_NONE && v.tag != V_TENSOR)
            return err_raise(I, TDL_ERR_TYPE, "assigned grad expected to be a Tensor or None but got grad of %s",
                             val_type_name(v));
        return tensor_check(I, fc_grad_set(I->fc, t, v.tag == V_TENSOR ? as_tensor(v) : NULL, &e), &e);
    }
    if (strcmp(name, "requires_grad") == 0) {
        *found = true;
        if (v.tag != V_BOOL) return err_raise(I, TDL_ERR_TYPE, "requires_grad must be a bool, not %s", val_type_name(v));
        return tensor_check(I, fc_set_requires_grad(I->fc, t, v.b, &e), &e);
    }
    return true;
}

/* ---- algorithms and library paths ---- */

IMPL_FN(use_deterministic_algorithms)
{
    (void)sig;
    I->fc->deterministic = a[0].b;
    *out = v_none();
    return true;
}

IMPL_FN(are_deterministic_algorithms_enabled)
{
    (void)sig;
    (void)a;
    *out = v_bool(I->fc->deterministic);
    return true;
}

/* A library path's result: the tensor, or None when it did not take the case. */
static bool library_result(Interp *I, FcStatus st, const FcError *e, FcTensor *y, Value *out)
{
    if (!st && !y) {
        *out = v_none();
        return true;
    }
    return result(I, st, e, y, out);
}

IMPL_FN(_conv2d_library)
{
    (void)sig;
    FcTensor *y;
    FcError e;
    FcStatus st = fc_conv2d_library(I->fc, a[0].t, a[1].t, a[2].ints, a[3].ints, a[4].ints, a[5].i, a[6].mf, a[7].t, &y, &e);
    return library_result(I, st, &e, y, out);
}

IMPL_FN(_conv_transpose2d_library)
{
    (void)sig;
    FcTensor *y;
    FcError e;
    FcStatus st = fc_conv_transpose2d_library(I->fc, a[0].t, a[1].t, a[2].ints, a[3].ints, a[4].ints, a[5].ints, a[6].i,
                                              a[7].mf, a[8].t, &y, &e);
    return library_result(I, st, &e, y, out);
}

IMPL_FN(_pool2d_library)
{
    (void)sig;
    FcTensor *y;
    FcError e;
    /* window: kernel (2), stride (2), padding (2), dilation (2), output size (2), as nn's _pool_args */
    const int64_t *w = a[2].ints;
    if (a[2].n != 10) {
        *out = v_none();
        return true;
    }
    FcStatus st = fc_pool2d_library(I->fc, a[0].t, a[1].b, w, w + 2, w + 4, w + 6, a[3].b, w + 8, a[4].mf, &y, &e);
    return library_result(I, st, &e, y, out);
}

IMPL_FN(_batch_norm_library)
{
    (void)sig;
    FcTensor *r[3];
    FcError e;
    FcStatus st = fc_batch_norm_library(I->fc, a[0].t, a[1].t, a[2].t, a[3].t, a[4].t, !a[5].none, a[5].f, a[6].f,
                                        a[7].mf, r, &e);
    if (st || !r[0])
        return library_result(I, st, &e, NULL, out);
    TupleObj *t = tuple_alloc(I, 3);
    bool ok = t != NULL;
    for (int i = 0; i < 3; i++) {
        Value v = v_none();
        if (r[i] && ok)
            ok = tensor_value_steal(I, r[i], &v);
        else
            fc_tensor_release(r[i]);
        if (ok)
            t->items[i] = v;
    }
    if (!ok) {
        if (t)
            val_decref(I, TUPLEV(t));
        return false;
    }
    *out = TUPLEV(t);
    return true;
}

IMPL_FN(_product_strides)
{
    (void)sig;
    FcTensor *t = a[0].t;
    int64_t st[FC_MAX_DIMS];
    bool known;
    FcError e;
    if (!tensor_check(I, fc_product_strides(I->fc, t, st, &known, &e), &e)) return false;
    if (!known) {
        *out = v_none();
        return true;
    }
    TupleObj *tu = tuple_alloc(I, (size_t)t->ndim);
    if (!tu) return false;
    for (int k = 0; k < t->ndim; k++) tu->items[k] = v_int(st[k]);
    *out = TUPLEV(tu);
    return true;
}

/* ---- the table ----------------------------------------------------------------------------- */

#define FUNC TV_FUNCTION
#define METHOD TV_METHOD
#define ATTR TV_ATTR
#define UNARY(op) TL_UNARY, op, FC_BOOL, NULL
#define BINARY(op) TL_BINARY, op, FC_BOOL, NULL
#define LOGICAL(op) TL_LOGICAL, op, FC_BOOL, NULL
#define REDUCE(op) TL_REDUCE, op, FC_BOOL, NULL
#define CAST(dt) TL_CAST, FC_OP_NONE, dt, NULL
#define IMPL(fn) TL_IMPL, FC_OP_NONE, FC_BOOL, impl_##fn

enum {
#define OP(name, ovl, sig, var, lower) TOP_##name##_##ovl,
#include "tensor_ops.def"
#undef OP
    TOP__COUNT
};

/* One trampoline per row: a BuiltinFn does not learn which def it was called through. */
#define OP(name, ovl, sig, var, lower)                                                                 \
    static bool top_##name##_##ovl(Interp *I, Value self, const Value *args, int nargs,                 \
                                   const char *const *kwnames, int nkw, Value *out)                     \
    {                                                                                                   \
        return tensor_dispatch(I, TOP_##name##_##ovl, self, args, nargs, kwnames, nkw, out);            \
    }
#include "tensor_ops.def"
#undef OP

const TensorOpRow tensor_ops[] = {
#define OP(name, ovl, sig, var, lower) {#name, #ovl, sig, var, lower, {#name, top_##name##_##ovl, 0, -1, "*"}},
#include "tensor_ops.def"
#undef OP
};

const int tensor_nops = TOP__COUNT;
