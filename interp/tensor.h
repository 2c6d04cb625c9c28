/* tensor.h — what tensor.c (signatures, argument binding, dispatch) and tensor_ops.c (the operator
 * table and the operators that are not generic lowerings) share. Private to those two files; the
 * rest of the interpreter sees tensors through interp.h.
 *
 * An operator is one row of tensor_ops.def:
 *
 *     OP(name, overload, "(signature) -> result", variants, lowering)
 *
 * after PyTorch's native_functions.yaml. Rows with the same name are overloads, tried in order
 * (exact types first, then with Python scalars accepted where a Tensor is expected). The signature
 * grammar (parsed once, at tdl_open):
 *
 *     signature := "(" [param {"," param}] ")" ["->" result]
 *     param     := "*"                              the parameters after it are keyword-only
 *                | type name ["=" default]
 *                | "*" type name                    extra positional arguments (savez)
 *                | "**" type name                   extra keyword arguments (savez)
 *     type      := ("Tensor" | "Scalar" | "int" | "float" | "bool" | "str" | "ScalarType"
 *                  | "Device" | "MemoryFormat" | "object") ["[" [digits] "]"] ["?"]
 *     default   := None | True | False | number | "[]" | 'text' | a memory format's name
 *
 * `T[]` is a list or tuple of T (int[] also takes one int, and a method or function whose only
 * positional parameter is an int[] takes the ints as separate arguments: x.reshape(2, 3));
 * `?` also accepts None. A parameter without a default is required. The first parameter of a
 * method is `Tensor self`. A Python scalar passed for a Tensor becomes a wrapped number (a 0-dim
 * tensor that promotes like a scalar), as in PyTorch. The result after "->" is documentation.
 */
#ifndef TDL_TENSOR_H
#define TDL_TENSOR_H

#include "interp.h"

typedef enum TensorType {
    TT_TENSOR, TT_SCALAR, TT_INT, TT_FLOAT, TT_BOOL, TT_STR, TT_DTYPE, TT_DEVICE, TT_MEMFMT,
    TT_OBJECT,
    TT_INTLIST, TT_TENSORLIST,          /* int[], Tensor[] */
} TensorType;

enum { TV_FUNCTION = 1, TV_METHOD = 2, TV_ATTR = 4 };

/* How a row runs: a generic lowering onto one fcdim call, or its own C function. */
typedef enum TensorLowering {
    TL_UNARY,       /* fc_unary(op, self) */
    TL_BINARY,      /* fc_binary(op, self, other) */
    TL_LOGICAL,     /* the operands as bool, then NOT / AND / OR / XOR */
    TL_REDUCE,      /* fc_reduce(op, self, dim, keepdim), after casting to dtype= when given */
    TL_CAST,        /* to dtype (the tensor itself when it has it) */
    TL_IMPL,        /* impl(I, sig, args, out) */
} TensorLowering;

typedef struct TensorSig TensorSig;
typedef struct TensorArg TensorArg;
typedef bool (*TensorImpl)(Interp *I, const TensorSig *sig, TensorArg *a, Value *out);

typedef struct TensorOpRow {
    const char *name, *overload, *sig;
    unsigned variants;          /* TV_* */
    TensorLowering lower;
    FcOp op;                    /* UNARY, BINARY, LOGICAL, REDUCE */
    FcDType dtype;              /* CAST */
    TensorImpl impl;            /* IMPL */
    BuiltinDef def;             /* how the interpreter calls it (checks nothing: binding does) */
} TensorOpRow;

extern const TensorOpRow tensor_ops[];
/* The names of torch.return_types' results (tensor_ops.c): max(dim), min(dim), sort, topk. */
extern const TupleFields rt_max, rt_min, rt_sort, rt_topk;
extern const int tensor_nops;

/* A default value from a signature. */
typedef struct TensorDefault {
    enum { TD_NONE, TD_BOOL, TD_INT, TD_FLOAT, TD_EMPTY_LIST, TD_STR, TD_MEMFMT } kind;
    int64_t i;
    double f;
    char s[16];
} TensorDefault;

typedef struct TensorParam {
    char name[24];
    TensorType type;
    bool optional;              /* `?`: None accepted */
    bool kwonly;
    bool required;              /* no default */
    bool varargs, varkw;        /* `*T name`, `**T name` */
    TensorDefault dflt;
    const char *text;           /* this parameter in the signature text, for messages */
    int textlen;
} TensorParam;

#define TENSOR_MAX_PARAMS 10

struct TensorSig {
    const TensorOpRow *row;
    int nparams;
    TensorParam params[TENSOR_MAX_PARAMS];
    int npos;                   /* parameters that may be given by position (self included) */
    int varargs, varkw;         /* index of the `*` / `**` parameter, or -1 */
    int group_end;              /* index after the last row with this row's name */
    int requires_grad;          /* index of the requires_grad parameter, or -1 (looked up once:
                                   every call of an IMPL row asks) */
};

/* A bound argument, converted to C. Everything is zero/false when the argument is None or left
 * out with a None default (none set). References (t, ts) are released by the dispatcher. */
struct TensorArg {
    bool none;
    Value v;                    /* the value passed (borrowed); V_UNDEF for a default */
    FcTensor *t;                /* Tensor */
    FcScalar s;                 /* Scalar; sdt says which member: FC_BOOL/FC_INT64 -> i, FC_FLOAT64 -> f */
    FcDType sdt;
    int64_t i;                  /* int */
    double f;                   /* float */
    bool b;                     /* bool */
    const char *str;            /* str (borrowed from v) */
    FcDType dtype;              /* ScalarType */
    FcDevice device;            /* Device */
    FcMemoryFormat mf;          /* MemoryFormat */
    int n;                      /* int[] and Tensor[]: how many */
    int64_t ints[FC_MAX_DIMS];
    FcTensor **ts;              /* Tensor[] (malloc'd array of references) */
    const char **names;         /* `**` parameter: the keyword of each ts[k] (borrowed) */
    bool fdim;                  /* a `dim` given as first-class dims (in v), for rows that take them */
};

/* What the BuiltinDef of row `row` calls (a trampoline per row, generated in tensor_ops.c): binds
 * the call to the first overload of that name that fits, and runs it. */
bool tensor_dispatch(Interp *I, int row, Value self, const Value *args, int nargs, const char *const *kwnames,
                     int nkw, Value *out);

/* The argument named `name`, or NULL when the signature has no such parameter. */
TensorArg *tensor_arg(const TensorSig *sig, TensorArg *a, const char *name);

/* Helpers shared by the lowerings. */
bool tensor_check(Interp *I, FcStatus st, const FcError *e);             /* st == FC_OK, else raises */
/* For FLOORDIV, MOD and FMOD of an integral result: raises torch's RuntimeError "ZeroDivisionError"
 * now if some divisor in y is 0, although the quotient is lazy (realises y: the project checks
 * index values eagerly in the same way). True when there is nothing to raise. */
bool tensor_check_divisor(Interp *I, FcOp op, FcTensor *x, FcTensor *y);
/* A dim argument (int, int[] or None) as fcdim's dim mask over t's dims (0: all). */
bool tensor_dim_mask(Interp *I, const FcTensor *t, const TensorArg *dim, uint64_t *mask);
/* tensor(data): a new stored tensor from nested lists and tuples of numbers (and one-element
 * tensors); dtype NULL: inferred as PyTorch does. */
bool tensor_from_data(Interp *I, Value data, const FcDType *dtype, FcDevice dev, FcTensor **out);
/* Scalar value s (of kind sdt) converted to dtype dt. */
FcScalar tensor_scalar_as(FcScalar s, FcDType sdt, FcDType dt);
/* c10::checked_convert of a number s (of kind sdt) into dt: false, with torch's RuntimeError
 * raised, when it overflows dt (float64 and bool take every number). The
 * tensor() constructor names the type as a dtype ("uint8"), a fill as a C++ type ("uint8_t"). */
bool tensor_scalar_fits(Interp *I, FcScalar s, FcDType sdt, FcDType dt, bool cxx_name);
/* The same for the item of a 0-dim tensor that torch takes as a number (fill_, masked_fill_). */
bool tensor_item_fits(Interp *I, FcTensor *t, FcDType dt);

/* Runs a bound row (its generic lowering or impl) on plain arguments. */
bool tensor_run_row(Interp *I, const TensorSig *sig, TensorArg *a, Value *out);
/* An in-place method's result: its self argument itself (so `y = x.add_(1)` is x). */
bool tensor_return_self(Interp *I, TensorArg *self, Value *out);
/* One element of an index (an int, slice, None, ..., bool, tensor, or a list made a tensor, kept
 * in *owned) as fcdim's FcIndex. */
bool tensor_index_item(Interp *I, Value v, FcIndex *x, FcTensor **owned);
/* The first row named name with the variant (TV_*), for tensor_dispatch; -1 if none. */
int tensor_row(const char *name, unsigned variant);

/* ---- first-class dims (dims.c) ---- */

/* Does this row take dims for its `dim` argument (reductions, softmax, logsumexp)? */
bool dims_row_takes_dims(const TensorOpRow *r);
/* Is v a dim argument holding dims (a dim, a bound dim list, a sequence with one)? */
bool dims_in_arg(Value v);
/* Do the bound arguments carry first-class dims? Then dims_run runs the row. */
bool dims_involved(const TensorSig *sig, const TensorArg *a);
bool dims_run(Interp *I, const TensorSig *sig, TensorArg *a, Value *out);
/* functorch computes a delayed product of dims (Tensor::tensor) as soon as anything but its sum
 * reads it: from then on it is a plain tensor, summed as any (no matmul). Tensor value v, read
 * so (an operand of a row, indexed, printed), forgets its factors. */
void dims_forget_product(Value v);
/* A tensor or a dim (its iota) as an FcTensor (a new reference). */
bool dims_tensor_of(Interp *I, Value v, FcTensor **out);
/* t[idx] = value when dims are involved (in t, idx or value): a write through the view t[idx]. */
bool dims_setitem(Interp *I, Value v, Value idx, FcTensor *value);
/* t[idx] when dims are involved (*done true), else nothing (*done false). */
bool dims_getitem(Interp *I, Value v, Value idx, Value *out, bool *done);
/* "\nwith dims=(i, 0) sizes=(3, 4)" after a tensor with dims is printed. */
bool dims_repr_suffix(Interp *I, const FcTensor *t, Buf *b);
/* FcCtx.locate: the running statement's file:line:col. */
void dims_locate(void *ud, char *buf, size_t cap);
bool impl_stack_dims(Interp *I, const TensorSig *sig, TensorArg *a, Value *out);
bool impl_split_dims(Interp *I, const TensorSig *sig, TensorArg *a, Value *out);

/* The sizes of a tensor to be made: a negative one is PyTorch's RuntimeError ("Trying to create
 * tensor with negative dimension -1: [2, -1]"). */
bool tensor_check_sizes(Interp *I, int n, const int64_t *size);
/* PyTorch's operand kind of t for type promotion (a wrapped number, a 0-dim tensor, a tensor). */
FcOperand tensor_operand(const FcTensor *t);

/* ---- the operators of tensor_more.c, tensor_sort.c and tensor_linalg.c (IMPL rows of
 * tensor_ops.def) ---- */
#define TENSOR_MORE_IMPL(fn) bool impl_##fn(Interp *I, const TensorSig *sig, TensorArg *a, Value *out);
TENSOR_MORE_IMPL(var) TENSOR_MORE_IMPL(std) TENSOR_MORE_IMPL(cumsum) TENSOR_MORE_IMPL(cumprod)
TENSOR_MORE_IMPL(sort) TENSOR_MORE_IMPL(argsort) TENSOR_MORE_IMPL(topk) TENSOR_MORE_IMPL(unique)
TENSOR_MORE_IMPL(kthvalue) TENSOR_MORE_IMPL(median) TENSOR_MORE_IMPL(nanmedian) TENSOR_MORE_IMPL(mode)
TENSOR_MORE_IMPL(msort) TENSOR_MORE_IMPL(cummax) TENSOR_MORE_IMPL(cummin) TENSOR_MORE_IMPL(aminmax)
TENSOR_MORE_IMPL(nansum) TENSOR_MORE_IMPL(nanmean)
TENSOR_MORE_IMPL(norm) TENSOR_MORE_IMPL(isclose) TENSOR_MORE_IMPL(allclose) TENSOR_MORE_IMPL(einsum)
TENSOR_MORE_IMPL(repeat) TENSOR_MORE_IMPL(chunk) TENSOR_MORE_IMPL(split) TENSOR_MORE_IMPL(flip)
TENSOR_MORE_IMPL(roll) TENSOR_MORE_IMPL(tril) TENSOR_MORE_IMPL(triu) TENSOR_MORE_IMPL(masked_fill)
TENSOR_MORE_IMPL(inplace) TENSOR_MORE_IMPL(masked_fill_) TENSOR_MORE_IMPL(index_fill) TENSOR_MORE_IMPL(index_fill_)
TENSOR_MORE_IMPL(take) TENSOR_MORE_IMPL(take_along_dim) TENSOR_MORE_IMPL(tensor_split)
TENSOR_MORE_IMPL(repeat_interleave) TENSOR_MORE_IMPL(tri_indices) TENSOR_MORE_IMPL(meshgrid)
TENSOR_MORE_IMPL(fill_) TENSOR_MORE_IMPL(copy_)
TENSOR_MORE_IMPL(isinf) TENSOR_MORE_IMPL(isposinf) TENSOR_MORE_IMPL(isneginf) TENSOR_MORE_IMPL(isfinite)
TENSOR_MORE_IMPL(signbit)
TENSOR_MORE_IMPL(deg2rad) TENSOR_MORE_IMPL(rad2deg) TENSOR_MORE_IMPL(clamp_min) TENSOR_MORE_IMPL(clamp_max)
TENSOR_MORE_IMPL(count_nonzero) TENSOR_MORE_IMPL(unflatten) TENSOR_MORE_IMPL(movedim) TENSOR_MORE_IMPL(outer) TENSOR_MORE_IMPL(mm)
TENSOR_MORE_IMPL(mv) TENSOR_MORE_IMPL(narrow) TENSOR_MORE_IMPL(select) TENSOR_MORE_IMPL(unbind) TENSOR_MORE_IMPL(tile)
TENSOR_MORE_IMPL(fliplr) TENSOR_MORE_IMPL(flipud) TENSOR_MORE_IMPL(atleast_1d) TENSOR_MORE_IMPL(atleast_2d)
TENSOR_MORE_IMPL(atleast_3d) TENSOR_MORE_IMPL(vstack) TENSOR_MORE_IMPL(hstack) TENSOR_MORE_IMPL(dstack)
TENSOR_MORE_IMPL(column_stack) TENSOR_MORE_IMPL(frac) TENSOR_MORE_IMPL(nan_to_num) TENSOR_MORE_IMPL(xlogy)
TENSOR_MORE_IMPL(float_power) TENSOR_MORE_IMPL(heaviside) TENSOR_MORE_IMPL(logit)
TENSOR_MORE_IMPL(sinc) TENSOR_MORE_IMPL(diff) TENSOR_MORE_IMPL(searchsorted) TENSOR_MORE_IMPL(bucketize)
/* lerp, addcmul, addcdiv, masked_select, rot90, diag, diagflat, diag_embed, trace */
TENSOR_MORE_IMPL(lerp) TENSOR_MORE_IMPL(addcmul) TENSOR_MORE_IMPL(addcdiv) TENSOR_MORE_IMPL(masked_select)
TENSOR_MORE_IMPL(rot90) TENSOR_MORE_IMPL(diag) TENSOR_MORE_IMPL(diagflat) TENSOR_MORE_IMPL(diag_embed) TENSOR_MORE_IMPL(trace)
/* kron, block_diag, cartesian_prod, tensordot, inner, cross, logspace, bincount, histc, trapezoid, vander,
 * dist, equal, isreal, isin, unique_consecutive, cov, corrcoef */
TENSOR_MORE_IMPL(kron) TENSOR_MORE_IMPL(block_diag) TENSOR_MORE_IMPL(cartesian_prod) TENSOR_MORE_IMPL(tensordot)
TENSOR_MORE_IMPL(inner) TENSOR_MORE_IMPL(cross) TENSOR_MORE_IMPL(logspace) TENSOR_MORE_IMPL(bincount) TENSOR_MORE_IMPL(histc)
TENSOR_MORE_IMPL(trapezoid) TENSOR_MORE_IMPL(cumulative_trapezoid) TENSOR_MORE_IMPL(vander)
TENSOR_MORE_IMPL(dist) TENSOR_MORE_IMPL(equal) TENSOR_MORE_IMPL(isreal) TENSOR_MORE_IMPL(isin)
TENSOR_MORE_IMPL(unique_consecutive) TENSOR_MORE_IMPL(cov) TENSOR_MORE_IMPL(corrcoef)
#undef TENSOR_MORE_IMPL

#endif
