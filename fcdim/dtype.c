/* dtype.c — the ten dtypes of tdl, PyTorch's type promotion over them, and the shape arithmetic
 * of strided views (element counts, C-order strides).
 *
 * Promotion follows aten/src/ATen/native/TypeProperties.cpp exactly: operands fall into three
 * priority classes (tensors with dimensions, 0-dim tensors, Python scalars), each class promotes
 * within itself by the ordinary table, and a lower class only matters when its category
 * (bool < integral < floating) is higher than the classes above it (combine_categories).
 * Depends on fcdim.h, internal.h and the C library. */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[FC_DTYPE__COUNT] = {
    [FC_BOOL] = {"bool", 1},
    [FC_INT32] = {"int32", 4},
    [FC_INT64] = {"int64", 8},
    [FC_FLOAT32] = {"float32", 4},
    [FC_FLOAT64] = {"float64", 8},
    [FC_UINT8] = {"uint8", 1},
    [FC_INT8] = {"int8", 1},
    [FC_INT16] = {"int16", 2},
    [FC_FLOAT16] = {"float16", 2},
    [FC_BFLOAT16] = {"bfloat16", 2},
};

static bool dtype_valid(FcDType t) { return (unsigned)t < FC_DTYPE__COUNT; }

size_t fc_dtype_size(FcDType t) { return dtype_valid(t) ? dtype_info[t].size : 0; }

const char *fc_dtype_name(FcDType t) { return dtype_valid(t) ? dtype_info[t].name : "<invalid dtype>"; }

const char *fc_dtype_torch_name(FcDType t)
{
    static const char *const names[FC_DTYPE__COUNT] = {"Bool", "Int",  "Long",  "Float", "Double",
                                                       "Byte", "Char", "Short", "Half",  "BFloat16"};
    return dtype_valid(t) ? names[t] : "?";
}

bool fc_dtype_is_float(FcDType t)
{
    return t == FC_FLOAT32 || t == FC_FLOAT64 || t == FC_FLOAT16 || t == FC_BFLOAT16;
}

bool fc_dtype_is_int(FcDType t)
{
    return t == FC_INT32 || t == FC_INT64 || t == FC_UINT8 || t == FC_INT8 || t == FC_INT16;
}

FcDType fc_dtype_compute(FcDType t)
{
    switch (t) {
    case FC_UINT8: case FC_INT8: case FC_INT16: return FC_INT32;
    case FC_FLOAT16: case FC_BFLOAT16: return FC_FLOAT32;
    default: return t;
    }
}

bool fc_dtype_from_name(const char *name, FcDType *out)
{
    if (!name)
        return false;
    for (int t = 0; t < FC_DTYPE__COUNT; t++)
        if (strcmp(name, dtype_info[t].name) == 0) {
            if (out)
                *out = (FcDType)t;
            return true;
        }
    return false;
}

FcScalar fc_scalar_load(FcDType t, const void *p)
{
    FcScalar r = {0};
    switch (t) {
    case FC_BOOL: r.i = *(const uint8_t *)p != 0; break;
    case FC_UINT8: r.i = *(const uint8_t *)p; break;
    case FC_INT8: r.i = *(const int8_t *)p; break;
    case FC_INT16: { int16_t x; memcpy(&x, p, 2); r.i = x; break; }
    case FC_INT32: { int32_t x; memcpy(&x, p, 4); r.i = x; break; }
    case FC_INT64: memcpy(&r.i, p, 8); break;
    case FC_FLOAT16: { uint16_t x; memcpy(&x, p, 2); r.f = fc_f16_to_f32(x); break; }
    case FC_BFLOAT16: { uint16_t x; memcpy(&x, p, 2); r.f = fc_bf16_to_f32(x); break; }
    case FC_FLOAT32: { float x; memcpy(&x, p, 4); r.f = x; break; }
    case FC_FLOAT64: memcpy(&r.f, p, 8); break;
    default: break;
    }
    return r;
}

void fc_scalar_store(FcDType t, void *p, FcScalar v)
{
    switch (t) {
    case FC_BOOL: *(uint8_t *)p = v.i != 0; break;
    case FC_UINT8: case FC_INT8: *(uint8_t *)p = (uint8_t)(uint64_t)v.i; break;
    case FC_INT16: { uint16_t x = (uint16_t)(uint64_t)v.i; memcpy(p, &x, 2); break; }
    case FC_INT32: { uint32_t x = (uint32_t)(uint64_t)v.i; memcpy(p, &x, 4); break; }
    case FC_INT64: memcpy(p, &v.i, 8); break;
    case FC_FLOAT16: { uint16_t x = fc_f32_to_f16((float)v.f); memcpy(p, &x, 2); break; }
    case FC_BFLOAT16: {
        /* c10::BFloat16's scalar conversion: a NaN is 0x7FC0 (the vector kernels' casts give 0xFFFF) */
        uint16_t x = v.f != v.f ? 0x7FC0 : fc_f32_to_bf16((float)v.f);
        memcpy(p, &x, 2);
        break;
    }
    case FC_FLOAT32: { float x = (float)v.f; memcpy(p, &x, 4); break; }
    case FC_FLOAT64: memcpy(p, &v.f, 8); break;
    default: break;
    }
}

bool fc_scalar_fits(FcScalar v, FcDType from, FcDType to)
{
    double lo, hi;
    switch (to) {
    case FC_UINT8: lo = 0, hi = 255; break;
    case FC_INT8: lo = -128, hi = 127; break;
    case FC_INT16: lo = -32768, hi = 32767; break;
    case FC_FLOAT16: lo = -65504, hi = 65504; break;
    case FC_BFLOAT16: lo = -3.3895313892515355e38, hi = 3.3895313892515355e38; break;
    case FC_INT32: lo = -2147483648.0, hi = 2147483647.0; break;
    /* numeric_limits<int64_t>::max() as a double is 2^63: c10 compares against that */
    case FC_INT64: lo = -9223372036854775808.0, hi = 9223372036854775808.0; break;
    case FC_FLOAT32: lo = -FLT_MAX, hi = FLT_MAX; break;
    default: return true;       /* float64 holds every Scalar; bool takes any (Scalar::to<bool>) */
    }
    if (fc_dtype_is_float(from)) {
        /* c10::overflows: a float type takes infinities and NaN, an integer type neither */
        if (fc_dtype_is_float(to) && (v.f != v.f || v.f == INFINITY || v.f == -INFINITY))
            return true;
        return v.f >= lo && v.f <= hi;
    }
    int64_t x = from == FC_BOOL ? v.i != 0 : v.i;
    /* an unsigned type takes the negatives of its values too (-1 is 255) */
    if (to == FC_UINT8)
        return x >= -255 && x <= 255;
    return (double)x >= lo && (double)x <= hi;
}

const char *fc_dtype_cxx_name(FcDType t)
{
    static const char *const names[FC_DTYPE__COUNT] = {"bool", "int", "int64_t", "float", "double", "uint8_t",
                                                       "int8_t", "int16_t", "at::Half", "at::BFloat16"};
    return dtype_valid(t) ? names[t] : "?";
}

/* ---- promotion ---- */

/* "No operand of this class yet" (PyTorch's ScalarType::Undefined). */
#define FC_UNDEFINED ((int)FC_DTYPE__COUNT)

/* c10::promoteTypes restricted to tdl's dtypes. They form a chain by rank (bool < uint8, int8 <
 * int16 < int32 < int64 < float16, bfloat16 < float32 < float64: int64 with float16 gives
 * float16), so the table is the one of higher rank, but for the two pairs of equal rank: uint8
 * with int8 gives int16 (the smallest type that holds both), float16 with bfloat16 float32.
 * promote_skip_undefined lets an empty class give way. */
static int promote_rank(int t)
{
    static const int rank[FC_DTYPE__COUNT] = {
        [FC_BOOL] = 0, [FC_UINT8] = 1, [FC_INT8] = 1, [FC_INT16] = 2, [FC_INT32] = 3, [FC_INT64] = 4,
        [FC_FLOAT16] = 5, [FC_BFLOAT16] = 5, [FC_FLOAT32] = 6, [FC_FLOAT64] = 7,
    };
    return rank[t];
}

static int promote_skip_undefined(int a, int b)
{
    if (a == FC_UNDEFINED)
        return b;
    if (b == FC_UNDEFINED || a == b)
        return a;
    int ra = promote_rank(a), rb = promote_rank(b);
    if (ra == rb)
        return fc_dtype_is_float((FcDType)a) ? FC_FLOAT32 : FC_INT16;
    return ra > rb ? a : b;
}

static bool is_float_or_undef(int t) { return t != FC_UNDEFINED && fc_dtype_is_float((FcDType)t); }

/* combine_categories(higher, lower): the higher-priority class wins unless the lower one is of a
 * higher category; bool always promotes (bool tensor + int 0-dim is int). */
static int combine_categories(int higher, int lower)
{
    if (is_float_or_undef(higher))
        return higher;
    if (higher == FC_BOOL || is_float_or_undef(lower))
        return promote_skip_undefined(higher, lower);
    if (higher != FC_UNDEFINED)
        return higher;
    return lower;
}

FcDType fc_result_type(const FcOperand *ops, int n)
{
    int dim = FC_UNDEFINED, zero = FC_UNDEFINED, wrapped = FC_UNDEFINED;
    for (int i = 0; i < n; i++) {
        int t = ops[i].dtype;
        switch (ops[i].kind) {
        case FC_OPERAND_TENSOR:
            dim = promote_skip_undefined(dim, t);
            break;
        case FC_OPERAND_ZERO_DIM:
            zero = promote_skip_undefined(zero, t);
            break;
        case FC_OPERAND_SCALAR:
            /* A Python float is wrapped as the default dtype, not as double. */
            if (fc_dtype_is_float((FcDType)t))
                t = FC_FLOAT32;
            wrapped = promote_skip_undefined(wrapped, t);
            break;
        }
    }
    int r = combine_categories(dim, combine_categories(zero, wrapped));
    /* No operands at all: the default dtype, as torch would give for an empty promotion. */
    return r == FC_UNDEFINED ? FC_FLOAT32 : (FcDType)r;
}

FcDType fc_promote_types(FcDType a, FcDType b) { return (FcDType)promote_skip_undefined(a, b); }

FcDType fc_div_result_type(const FcOperand *ops, int n)
{
    FcDType t = fc_result_type(ops, n);
    return fc_dtype_is_float(t) ? t : FC_FLOAT32;
}

bool fc_dtype_can_cast(FcDType from, FcDType to)
{
    if (fc_dtype_is_float(from))
        return fc_dtype_is_float(to);
    return from == FC_BOOL || to != FC_BOOL;
}

/* ---- strided views ---- */

void fc_reorder_dimensions(int n, int *perm, int (*cmp)(const void *ud, int d0, int d1), const void *ud)
{
    for (int i = 0; i < n; i++)
        perm[i] = n - 1 - i;
    for (int i = 1; i < n; i++) {
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; d0--) {
            int c = cmp(ud, perm[d0], perm[d1]);
            if (c > 0) {
                int t = perm[d0];
                perm[d0] = perm[d1];
                perm[d1] = t;
                d1 = d0;
            } else if (c < 0) {
                break;
            }
        }
    }
}

bool fc_shape_numel(int ndim, const int64_t *shape, int64_t *out)
{
    /* A zero extent first: (2**62, 4, 0) holds no element, as (0, 2**62, 4) does, whatever
     * the product of the other extents. */
    for (int k = 0; k < ndim; k++)
        if (shape[k] == 0) {
            *out = 0;
            return true;
        }
    int64_t n = 1;
    for (int k = 0; k < ndim; k++)
        if (shape[k] < 0 || __builtin_mul_overflow(n, shape[k], &n)) {
            *out = INT64_MAX;
            return false;
        }
    *out = n;
    return true;
}

bool fc_shape_nbytes(int ndim, const int64_t *shape, FcDType dt, int64_t *out)
{
    int64_t n;
    if (!fc_shape_numel(ndim, shape, &n) || __builtin_mul_overflow(n, (int64_t)fc_dtype_size(dt), out)) {
        *out = INT64_MAX;
        return false;
    }
    return true;
}

int64_t fc_view_numel(const FcView *v)
{
    int64_t n;
    fc_shape_numel(v->ndim, v->shape, &n);
    return n;
}

/* PyTorch's dense strides (c10's contiguous_strides): a size-0 or size-1 dim is given the stride
 * it would have with size 1. The products wrap in 64 bits as PyTorch's do: they only overflow
 * for a tensor with no element (any other has a numel that fits), whose strides address
 * nothing; torch.zeros(0, 2**62, 4).stride() is (0, 4, 1). */
void fc_dense_strides(int ndim, const int64_t *shape, const int *perm, int64_t *strides)
{
    uint64_t s = 1;
    for (int i = 0; i < ndim; i++) {
        int k = perm ? perm[i] : ndim - 1 - i;
        strides[k] = (int64_t)s;
        s *= shape[k] > 1 ? (uint64_t)shape[k] : 1;
    }
}

void fc_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    fc_dense_strides(ndim, shape, NULL, strides);
}

void fc_fortran_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int perm[FC_MAX_DIMS];
    for (int k = 0; k < ndim; k++)
        perm[k] = k;
    fc_dense_strides(ndim, shape, perm, strides);
}
