/* fcdim.h — tensors for tdl: dtypes and type promotion, strided views of memory, and the pieces
 * that work on materialised data (NumPy .npy/.npz files, PyTorch-style printing).
 *
 * This is the one header other folders may include from fcdim/. It knows nothing of the
 * interpreter or the syntax tree. It declares the tensor value (storage + strides + levels), the
 * loop-free IR that tensor operations build, and the scheduled kernels that backends run (the
 * backend interface itself is backend/backend.h).
 *
 * Errors: fallible functions return an FcStatus and write a message into a caller-supplied
 * FcError; nothing here prints, exits or aborts.
 */
#ifndef TDL_FCDIM_H
#define TDL_FCDIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- dtypes ---- */

typedef enum FcDType {
    FC_BOOL = 0,
    FC_INT32,
    FC_INT64,
    FC_FLOAT32,
    FC_FLOAT64,
    FC_UINT8,
    FC_INT8,
    FC_INT16,
    FC_FLOAT16,         /* IEEE binary16, stored as its 16 bits */
    FC_BFLOAT16,        /* the upper half of a float32's bits */
    FC_DTYPE__COUNT
} FcDType;

size_t fc_dtype_size(FcDType t);                 /* bytes per element */
const char *fc_dtype_name(FcDType t);            /* "float32", "int64", "bool", ... */
bool fc_dtype_is_float(FcDType t);
bool fc_dtype_is_int(FcDType t);                 /* uint8, int8, int16, int32, int64 (not bool) */
bool fc_dtype_from_name(const char *name, FcDType *out);
/* PyTorch's name of a dtype in messages ("not implemented for 'Long'"): Bool Int Long Float Double
 * Byte Char Short Half BFloat16. */
const char *fc_dtype_torch_name(FcDType t);
/* The dtype elementwise ops and reductions compute a narrow dtype's values in, as PyTorch's CPU
 * kernels do: float32 for float16 and bfloat16 (the result rounded back after every op), int32
 * for uint8, int8 and int16 (the result wrapped back, which is what their own arithmetic gives);
 * any other dtype itself. The backends compute only in these; the narrow ones they load, store
 * and cast. */
FcDType fc_dtype_compute(FcDType t);

/* float16 and bfloat16 to and from float32, bit for bit as c10::Half and c10::BFloat16 convert
 * (c10/util/Half.h: fp16_ieee_from_fp32_value / fp16_ieee_to_fp32_value; c10/util/BFloat16.h:
 * round_to_nearest_even): round to nearest even, overflow to infinity, subnormals kept, a NaN
 * made quiet (float16: 0x7E00 with its sign; bfloat16: 0xFFFF, what the vectorised conversion
 * of torch's casts and elementwise kernels writes, cvtfp32_bf16). The float16 ones round through
 * float32 arithmetic (a scale to the target's precision and back), so they need IEEE float32 in
 * round-to-nearest, as C11 gives; the same code is emitted into CUDA kernels. */
static inline float fc_f32_from_bits(uint32_t w)
{
    union { uint32_t u; float f; } c = {w};
    return c.f;
}
static inline uint32_t fc_f32_bits(float f)
{
    union { float f; uint32_t u; } c = {f};
    return c.u;
}
static inline float fc_f16_to_f32(uint16_t h)
{
    uint32_t w = (uint32_t)h << 16, sign = w & 0x80000000u, two_w = w + w;
    float normalized = fc_f32_from_bits((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
    float denormalized = fc_f32_from_bits((two_w >> 17) | (126u << 23)) - 0.5f;
    return fc_f32_from_bits(sign | (two_w < (1u << 27) ? fc_f32_bits(denormalized) : fc_f32_bits(normalized)));
}
static inline uint16_t fc_f32_to_f16(float f)
{
    float base = (__builtin_fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
    uint32_t w = fc_f32_bits(f), shl1_w = w + w, sign = w & 0x80000000u, bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u)
        bias = 0x71000000u;
    base = fc_f32_from_bits((bias >> 1) + 0x07800000u) + base;
    uint32_t bits = fc_f32_bits(base);
    uint32_t nonsign = ((bits >> 13) & 0x7C00u) + (bits & 0x0FFFu);
    return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}
static inline float fc_bf16_to_f32(uint16_t h) { return fc_f32_from_bits((uint32_t)h << 16); }
static inline uint16_t fc_f32_to_bf16(float f)
{
    uint32_t u = fc_f32_bits(f);
    if (f != f)
        return 0xFFFF;
    return (uint16_t)((u + ((u >> 16) & 1) + 0x7FFFu) >> 16);
}

/* A participant in type promotion, as PyTorch sees it (c10/core/ScalarType.h and
 * aten/src/ATen/native/TypeProperties.cpp: result_type): a tensor with dimensions, a 0-dim
 * tensor, or a Python scalar (bool, int or float). */
typedef enum FcOperandKind { FC_OPERAND_TENSOR, FC_OPERAND_ZERO_DIM, FC_OPERAND_SCALAR } FcOperandKind;
typedef struct FcOperand {
    FcOperandKind kind;
    FcDType dtype;      /* for a scalar: FC_BOOL, FC_INT64 (int) or FC_FLOAT64 (float) */
} FcOperand;

/* torch.result_type over n operands: dimensioned tensors decide first; 0-dim tensors and then
 * scalars raise the result only to a higher category (bool < int < float), a float scalar
 * giving the default float dtype (float32). */
FcDType fc_result_type(const FcOperand *ops, int n);
/* torch.promote_types(a, b). */
FcDType fc_promote_types(FcDType a, FcDType b);
/* The dtype of true division a / b: result_type, then float32 if that is not a float. */
FcDType fc_div_result_type(const FcOperand *ops, int n);
/* c10::canCast: whether an in-place operation may write a result of dtype from into a tensor of
 * dtype to (no float into an int or bool tensor, no int into a bool one). */
bool fc_dtype_can_cast(FcDType from, FcDType to);

/* ---- strided views of materialised memory ---- */

#define FC_MAX_DIMS 64

/* A dense or strided array in host memory: element (i0, i1, ...) lives at
 * data + (offset + sum_k i_k * strides[k]) * fc_dtype_size(dtype). Strides are in elements and
 * may be zero (expanded) or negative. A view does not own its memory. */
typedef struct FcView {
    FcDType dtype;
    int ndim;
    int64_t shape[FC_MAX_DIMS];
    int64_t strides[FC_MAX_DIMS];
    int64_t offset;
    void *data;
} FcView;

/* The element count of a shape: 0 when any extent is 0 (the order of the dims does not matter),
 * else the product of the extents. False (and *out INT64_MAX) when an extent is negative or
 * the product overflows int64. fc_shape_nbytes: the same times the dtype's size. Every extent
 * product goes through these (no signed overflow anywhere). */
bool fc_shape_numel(int ndim, const int64_t *shape, int64_t *out);
bool fc_shape_nbytes(int ndim, const int64_t *shape, FcDType dt, int64_t *out);
/* The view's element count (it fits: every tensor's shape was checked when it was made). */
int64_t fc_view_numel(const FcView *v);
/* PyTorch's TensorIterator::reorder_dimensions: perm[0..n) set to the dims from the last to the
 * first, then sorted fastest-varying first by its insertion sort, whose comparison
 * cmp(ud, d0, d1) may be undecided: > 0 moves dim d1 before d0 (and on), < 0 stops, 0 goes on to
 * the next d0. The scheduler's loop order, dense strides (shape.c) and the CPU's at::sum sort so. */
void fc_reorder_dimensions(int n, int *perm, int (*cmp)(const void *ud, int d0, int d1), const void *ud);
/* TensorIterator's order of one tensor's dims (fastest first): by stride, zero strides
 * undecided, equal strides by size. The order its loops walk a stored tensor's elements in. */
void fc_stride_order(int nd, const int64_t *shape, const int64_t *strides, int *perm);
/* Row-major (C order) contiguous strides for shape; Fortran order (the first dim innermost).
 * As PyTorch's: a size-0 or size-1 dim has the stride of size 1, and for a shape with no
 * element whose extents' product overflows the strides wrap in 64 bits as PyTorch's do. */
void fc_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
void fc_fortran_strides(int ndim, const int64_t *shape, int64_t *strides);
/* The same with the dims laid out in the order perm gives, innermost first (NULL: C order). */
void fc_dense_strides(int ndim, const int64_t *shape, const int *perm, int64_t *strides);

/* ---- errors ---- */

/* Each failure kind maps onto one of the interpreter's error kinds (named after PyTorch's
 * exception for the same mistake). */
typedef enum FcStatus {
    FC_OK = 0,
    FC_ERR_IO,          /* IOError */
    FC_ERR_VALUE,       /* ValueError */
    FC_ERR_NOMEM,       /* MemoryError */
    FC_ERR_TYPE,        /* TypeError: a dtype an op does not take */
    FC_ERR_RUNTIME,     /* RuntimeError: shape mismatch, integer division by zero, ... (PyTorch's kind) */
    FC_ERR_INDEX,       /* IndexError: dim or index out of range */
    FC_ERR_DEVICE,      /* DeviceError: no such device, tensors on different devices */
    FC_ERR_INTERRUPT,   /* the host asked to stop (FcCtx.interrupt) */
    FC_ERR_DIM_BIND,    /* DimensionBindError: a first-class dim bound to two sizes, a bad dim pack */
} FcStatus;
typedef struct FcError { char msg[512]; } FcError;

/* ---- printing (print.c) ---- */

/* The text PyTorch 1.13 gives for repr(tensor) with its default print options, with tdl's dtype
 * names ("tensor([1, 2], dtype=int32)"): number style and width chosen from the shown values,
 * "..." in place of the middle of long dimensions above 1000 elements, 1-d rows wrapped at 80
 * columns; the text is always torch's with "torch." taken out of the dtype suffix (which is
 * wrapped where torch's longer name would be). device: NULL for cpu, else e.g. "cuda:0" (adds
 * ", device='cuda:0'").
 * On FC_OK *out is a new malloc'd string the caller frees; on failure *out is NULL. */
FcStatus fc_format_tensor(const FcView *v, const char *device, char **out, FcError *err);
/* The same with a last suffix (autograd's "requires_grad=True" or "grad_fn=<MulBackward0>"), or none (NULL). */
FcStatus fc_format_tensor_grad(const FcView *v, const char *device, const char *grad, char **out, FcError *err);
/* Only the bracketed elements, as torch._tensor_str(t, indent) gives them ("[]" when empty):
 * indent is the column after the prefix the caller writes first (7 for "tensor("). */
FcStatus fc_format_tensor_body(const FcView *v, int indent, char **out, FcError *err);

/* ---- NumPy files (npy.c) ----
 * .npy: format versions 1.0, 2.0 and 3.0; dtypes '<f4' '<f8' '<i4' '<i8' '|b1' (also '=' forms,
 * and '<'/'='/'>' for the one-byte bool); C or Fortran order. Anything else, and any truncated or
 * corrupt input, is FC_ERR_IO with a message that starts with the file's name. Loaded views own
 * nothing: the caller free()s out->data (always non-NULL on success, even with no elements).
 * Saving writes C order, little-endian, format 1.0 (2.0 when the header needs it), through a
 * temporary file renamed over path. */
FcStatus fc_npy_load(const char *path, FcView *out, FcError *err);   /* Fortran order: Fortran strides, no copy */
FcStatus fc_npy_load_mem(const void *buf, size_t len, const char *name_for_messages, FcView *out, FcError *err);
FcStatus fc_npy_save(const char *path, const FcView *v, FcError *err);   /* any strides */

/* .npz: a ZIP archive of .npy members, stored or deflated, CRC-32 checked; ZIP64 sizes and
 * offsets are read, never written (an archive over 4 GiB is FC_ERR_VALUE on save). */
typedef struct FcNamedView { char *name; FcView view; } FcNamedView;   /* name without .npy */
FcStatus fc_npz_load(const char *path, FcNamedView **arrays, int *n, FcError *err);
FcStatus fc_npz_load_mem(const void *buf, size_t len, const char *name_for_messages, FcNamedView **arrays,
                         int *n, FcError *err);
FcStatus fc_npz_save(const char *path, const FcNamedView *arrays, int n, bool compress, FcError *err);
void fc_npz_free(FcNamedView *arrays, int n);   /* frees names, data and the array; NULL is fine */

/* ==== the tensor value, the IR, and scheduled kernels ====
 *
 * Reference counting: functions returning an FcTensor/FcNode/FcStorage through an out-parameter
 * give the caller a new reference; arguments are borrowed. Every *_release accepts NULL.
 * Errors: FcStatus + FcError, as above; a failed call leaves its arguments unchanged. */

typedef struct FcCtx FcCtx;
typedef struct FcBackend FcBackend;     /* backend/backend.h */

/* ---- devices ---- */

typedef enum FcDeviceType { FC_DEV_CPU = 0, FC_DEV_CUDA } FcDeviceType;
typedef struct FcDevice { FcDeviceType type; int index; } FcDevice;   /* index: 0 for cpu */
static inline FcDevice fc_cpu(void) { FcDevice d = {FC_DEV_CPU, 0}; return d; }
static inline bool fc_device_eq(FcDevice a, FcDevice b) { return a.type == b.type && a.index == b.index; }
/* Parses "cpu", "cuda", "cuda:N". */
bool fc_device_parse(const char *s, FcDevice *out);
/* "cpu", "cuda:0": writes into buf (>= 24 bytes) and returns it. */
const char *fc_device_name(FcDevice d, char *buf);

/* A scalar of any dtype (the member that matches the dtype is set; bool in i as 0/1). */
typedef union FcScalar { int64_t i; double f; } FcScalar;
/* One element of dtype t at p as a scalar (f for float dtypes, i otherwise), and a scalar of
 * dtype t (as fc_scalar_convert gives it) stored at p. */
FcScalar fc_scalar_load(FcDType t, const void *p);
void fc_scalar_store(FcDType t, void *p, FcScalar v);
/* c10::checked_convert's test: whether a number v (of kind from: FC_BOOL, FC_INT64 or FC_FLOAT64)
 * fits a narrow dtype to (its range; uint8 also takes -255..-1, an int Scalar's wrap; float16
 * takes infinities and NaN); other dtypes take anything. fc_dtype_cxx_name: the C++ type
 * torch's message names ("uint8_t", "at::Half"). */
bool fc_scalar_fits(FcScalar v, FcDType from, FcDType to);
const char *fc_dtype_cxx_name(FcDType t);
/* Converts a scalar between dtypes with the executor's rules (float->int out of range or NaN
 * gives the type's minimum; to bool: != 0). */
FcScalar fc_scalar_convert(FcScalar v, FcDType from, FcDType to);

/* ---- storage ---- */

/* Memory on one device, shared by every tensor that views it. Allocated and freed by the device's
 * backend, or wrapped from a host's memory (release called on the last reference). */
typedef struct FcStorage {
    int32_t refcnt;
    FcDevice device;
    void *data;
    size_t nbytes;
    FcBackend *backend;                          /* frees data when release is NULL */
    void (*release)(void *ud, void *data);       /* external memory, or NULL */
    void *release_ud;
    /* Lazy tensors whose IR loads from this storage (weak): a write into the storage first
     * materialises them, so they see the values from before the write. */
    struct FcTensor **readers;
    int nreaders, capreaders;
    /* Autograd (autograd.c): the record of how the storage's current contents were made (a
     * reference), or NULL when they need no gradient; version counts the writes into it. */
    struct FcGradRec *grad;
    /* The leaf record kept while requires_grad is off (requires_grad_(False), or .grad assigned
     * to a tensor that needs none: a reference, or NULL): PyTorch keeps a leaf's .grad and its
     * accumulator, so turned on again the leaf adds into the same gradient as the graphs made
     * before. */
    struct FcGradRec *grad_off;
    uint64_t version;
} FcStorage;

FcStorage *fc_storage_retain(FcStorage *s);
void fc_storage_release(FcStorage *s);

/* ---- the IR ----
 *
 * A DAG of expression nodes. Each node has a dtype and a domain: nlev levels with sizes (the
 * dims it varies over, positional for now). An operand edge says where each of the operand's
 * levels goes in this node's domain (lev_map). No node holds a loop: loops appear only when a
 * materialisation schedules the DAG into an FcKernel. */

/* The ops, their kinds and what each backend computes for them are declared in ops.def. */
typedef enum FcOp {
#define OP(NAME, name, kind) FC_OP_##NAME,
#include "ops.def"
    FC_OP__COUNT
} FcOp;

const char *fc_op_name(FcOp op);     /* "add", "exp", "sum", ... */
bool fc_op_is_unary(FcOp op);
bool fc_op_is_binary(FcOp op);
/* ops.def keeps the comparisons and the reductions as contiguous rows (asserted in ir.c), so these are
 * range tests every backend can inline in its inner loops. */
static inline bool fc_op_is_compare(FcOp op) { return op >= FC_OP_EQ && op <= FC_OP_GE; }
static inline bool fc_op_is_reduce(FcOp op) { return op >= FC_OP_SUM && op <= FC_OP_ALL; }

#define FC_LEV_BCAST   (-1)    /* the operand has size 1 along this level: index 0 */
#define FC_LEV_REDUCED (-2)    /* (reductions) the level is reduced away */

/* The order a SUM node adds in, or a PROD node multiplies in (FcNode.order). FUSED: the backend's
 * own, the reduction fused into its consumer (the CPU accumulates in double). The others are
 * PyTorch's CPU orders, so that the result has PyTorch's bits: a backend with FcBackend.ordered_sum
 * computes such a reduction alone, from its operand stored; a backend without computes it as
 * FUSED. */
typedef enum FcSumOrder {
    FC_SUM_FUSED,
    FC_SUM_CASCADE,     /* at::sum's (SumKernel.cpp's cascade_sum): fc_sum */
    FC_SUM_LANES,       /* vec::reduce_all's along one dim: lanes of a vector (8 floats, 4 doubles)
                           each adding every 8th (4th) element in turn, then the lanes added (a
                           tree of three steps for float, in turn for double); fewer elements
                           than lanes added in turn. The softmax kernels along the last dim */
    FC_SUM_SERIAL,      /* from 0, each element added in turn, the summed dims in
                           TensorIterator's order (by ascending stride): binary_kernel_reduce's
                           order (norm's sums of |x| and |x|^p), the softmax kernels' along a dim
                           that is not the last */
    FC_SUM_WELFORD,     /* var's and std's sum of squared deviations (fc_welford_m2): the SUM of
                           MUL(v, v), v = SUB(x in float64, its mean), computed as WelfordOps' m2
                           from x alone: per output the summed elements in TensorIterator's order
                           (the summed dims by ascending stride), mean and m2 in double, each
                           element's delta = x - mean, mean += delta / count, m2 += delta * (x -
                           mean) by one fma (GCC contracts it in PyTorch's AVX2 build) */
    FC_SUM_NORM2,       /* the 2-norm's sum of squares (fc_norm): the SUM of MUL(x, x), computed
                           from x as PyTorch's norm kernel: for float32 whose iterator has one
                           summed dim, fastest and contiguous, 8 lanes adding x * x by fma, the
                           lanes added in turn, then the rest of the row (its first 4 products
                           rounded when there are 4 or more: GCC vectorised them, the others by
                           fma); else SERIAL's order, each x * x added by one fma */
    FC_PROD_VEC,        /* a PROD (fc_prod): binary_kernel_reduce_vec's order (PyTorch's prod):
                           the output filled with 1, then each 2-D block of the TensorIterator
                           (its first two dims; the others walked in order) multiplied into it:
                           a row contiguous along the reduced dim by 4 vectors of lanes (32
                           floats, 16 doubles) each multiplying every 32nd (16th) element from
                           its first, the vectors then multiplied lane by lane ((v0 * v1) * (v2 *
                           v3)), the lanes in turn, that into the output, then the rest of the
                           row in turn; outputs contiguous along the block's second dim by 32
                           (16) columns from their first row, the rest in turn; else each
                           element in turn */
} FcSumOrder;

typedef struct FcNode FcNode;
struct FcNode {
    int32_t refcnt;
    FcOp op;
    FcDType dtype;              /* of the result */
    FcDType src_dtype;          /* the dtype the operands are computed in: for comparisons that of the
                                   compared values, for CAST and ISNAN the operand's; else = dtype */
    int nlev;
    int64_t *size;              /* [nlev] */
    int nin;
    FcNode **in;                /* [nin] operands (references) */
    int8_t **lev_map;           /* [nin][in[k]->nlev]: the level of this node, FC_LEV_BCAST or FC_LEV_REDUCED */
    FcScalar konst;             /* CONST */
    /* LOAD: a stored view (references storage); the operands are the nin = ndim index
     * expressions (int64 nodes over this node's levels); the element is
     * storage.data[offset + sum_k strides[k] * index_k]. */
    FcStorage *storage;
    int64_t offset;
    int64_t *strides;           /* [nin] */
    int64_t *shape;             /* [nin]: extents of the stored view, for bounds checks */
    uint64_t wrap;              /* LOAD: bit k set: a negative index k counts from the end */
    int *index_dim;             /* LOAD: [nin] the dimension an out-of-range index k names (k unless
                                   set otherwise) */
    uint32_t count;             /* nodes in the DAG rooted here: counted per path (an upper bound),
                                   until fc_node_bigger counts the distinct ones; caps fusion */
    bool exact;                 /* count is of distinct nodes */
    bool nograd;                /* made while gradients were off (or by a backward): no gradient
                                   flows through it */
    bool narrows;               /* CAST: rounds or wraps an op's result back to its narrow dtype
                                   (ir.c); autograd names the op below it */
    bool evenly;                /* AMAX, AMIN of max() and min() (fc_max_all): the gradient goes
                                   evenly to the elements equal to the result, the NaNs when it is
                                   NaN, zeros elsewhere (amax's is scaled by the count of ties) */
    bool c_order;               /* stored in C order when it is the root realised (a copy PyTorch
                                   allocates contiguous: repeat, tril), not in its loads' order */
    uint8_t order;              /* SUM: FcSumOrder: the backend's own (fused into its consumer), or
                                   one of PyTorch's, computed alone by a backend that can
                                   (FcBackend.ordered_sum) */
    bool order_fma;             /* LANES, SERIAL: the operand is MUL(a, b) of a and b over its levels,
                                   each product added by one fma (PyTorch's a * b + acc, contracted) */
    bool cascade_narrow;        /* CASCADE: of a bfloat16 or float16 tensor (its operand is the CAST
                                   of one to float32), rounded to that dtype as PyTorch's is ... */
    bool cascade_nan;           /* ... of WHERE(x != x, 0, x): fc_nansum's, summed in x's layout */
    bool product;               /* SUM: a matrix product that fc_contract made, SUM over k of MUL(LOAD,
                                   LOAD): realised by the backend's matmul, with the pointwise
                                   expression that reads it as its epilogue (fc_product_root) */
    int64_t *merge;             /* product: NULL, or [in[0]->nlev] (fc_product_merge): its levels are
                                   merges of the MUL's unreduced ones (a dim of (g, oc) or (iy, ky)),
                                   lev_map[0] naming the level each goes into and merge[l] the
                                   weight of level l's index in it; only the product's analysis
                                   (matmul.c) reads such a node, which the scheduler realises apart */
    uint64_t mark;              /* the last walk that saw it (fc_walk_stamp) ... */
    uint32_t walk_id;           /* ... and what that walk numbered it (kernel_cache.c) */
    struct FcRetained *retain;  /* the lazy tensor of this node called retain_grad(): where a
                                   backward adds the cotangent that reaches here (a reference) */
    struct FcVjp *vjp;          /* a composite's declared derivative (fc_grad_declare): a backward
                                   differentiates the node by it, not through its operands */
};

FcNode *fc_node_retain(FcNode *n);
void fc_node_release(FcNode *n);

/* ---- first-class dims (dims.c) ----
 * functorch.dim's Dim: an object that names a dimension by identity. Its size is bound once
 * (by `d.size = n`, or by indexing a positional dim of that size) and never changes. */
typedef struct FcDim {
    int32_t refcnt;
    uint64_t serial;            /* creation order (functorch's level): batch dims are ordered by it */
    int64_t size;               /* -1 while unbound */
    char *name;                 /* as the dim prints */
    bool named;                 /* the name was given (else a provisional "d0", "d1", ...) */
    char *bound_at;             /* where the size was bound, for messages ("x.tdl:3:5, indexing
                                   dim 0 of shape [3, 4]"), or NULL */
} FcDim;

/* ---- the tensor value ---- */

/* A tensor is either stored (storage + shape/strides/offset: a strided view) or lazy (node: an
 * IR expression whose domain is the tensor's shape, materialised on demand into fresh storage).
 * Realising a lazy tensor sets storage and drops node, so each tensor value is computed at most
 * once. levels: NULL when every dim is positional, else one per dim: the first-class dim that
 * dim stands for (a reference), or NULL for a positional dim — functorch.dim's (_tensor, _levels).
 * Functions outside dims.c see every dim of a tensor as positional; dims.c gives the levels
 * their meaning (fcdim.h's "first-class dims" section). */
typedef struct FcTensor {
    int32_t refcnt;
    FcDType dtype;
    FcDevice device;
    int ndim;
    int64_t *shape;             /* [ndim] */
    int64_t *strides;           /* [ndim], in elements; meaningful only when stored */
    int64_t offset;             /* in elements */
    FcStorage *storage;         /* NULL while lazy */
    FcNode *node;               /* NULL once stored */
    FcNode *load;               /* stored: the LOAD of it that an operation last read it through,
                                   kept for the next one (ir.c's operand_node), or NULL */
    bool wrapped_number;        /* made from a Python scalar: promotes as a scalar (by category) */
    bool view;                  /* a view (of the same storage) made from a stored tensor that
                                   required grad, with gradients on: never a leaf, its .grad None
                                   (PyTorch's differentiable view, whatever its geometry). A lazy
                                   alias needs no mark: its base's storage will hold a write's
                                   record, not a leaf's */
    bool unplaced;              /* reads no storage and came from a dim's index (an iota): belongs to
                                   no device until it meets one, as a Python number does; device
                                   says cpu, where it runs when it meets none */
    FcStorage **reads;          /* lazy: storages this tensor's IR loads (it is registered as a
                                   reader of each; the node holds the references) */
    int nreads;
    FcDim **levels;             /* [ndim], or NULL: see above (in the tensor's own block) */
    const char *grad_name;      /* the grad_fn PyTorch names for the operation that made t
                                   (fc_grad_name), while grad_named (its node, or its storage's
                                   record) is what holds t's value */
    const void *grad_named;
    /* A lazy tensor relabelled with dims (fc_with_levels) or laid out over other levels
     * (dims.c's relayout: order, expand, an operand matched to another's levels) is a view of
     * it, as in functorch.dim: while it is lazy its node reads the base's (so reads through it
     * fuse), and when the base is realised it becomes a view of the base's storage (so a later
     * write into either shows through the other). Both links are weak: each side clears its end
     * when released. */
    struct FcTensor *alias_of;
    struct FcTensor **aliases;
    int naliases, capaliases;
    int8_t *alias_src;          /* a relayout's: [ndim], the base's dim each dim walks (-1: a new
                                   one, stride 0); NULL: the base's own dims */
    struct FcRetained *retained; /* retain_grad() was called (a non-leaf): its .grad (a reference) */
} FcTensor;

FcTensor *fc_tensor_retain(FcTensor *t);
/* Marks v, just made over src's values, as a view of it when src requires grad (FcTensor.view). */
void fc_tensor_mark_view(FcTensor *v, FcTensor *src);
void fc_tensor_release(FcTensor *t);
/* Records lazy r as a view of lazy t: over t's dims (src NULL: r shares t's node and shape), or
 * dim j of r walking t's dim src[j] (-1: a dim t lacks; a size-1 dim of t broadcast walks it
 * too, both with stride 0). False on out-of-memory. */
bool fc_tensor_add_alias(FcTensor *t, FcTensor *r, const int *src);
/* Lazy t takes its values from s (retained), at offset with strides: its expression and the reads
 * it held go, and its aliases (and theirs) become views of the same storage. */
void fc_tensor_become_stored(FcTensor *t, FcStorage *s, int64_t offset, const int64_t *strides);
/* t, an alias of a lazy base, has just been realised on its own (in its own layout): when its dims
 * walk each of the base's once (a relabel, an order), the base becomes a view of t's storage, and
 * so on up the chain, so that a write into either shows in the other. */
void fc_tensor_realised_view(FcTensor *t);
int64_t fc_tensor_numel(const FcTensor *t);
/* Whether every element of t is known without running a kernel: a constant (a Python number,
 * full()) or one element stored in host memory; its value in *v (as fc_scalar_load gives it). */
bool fc_tensor_known(const FcTensor *t, FcScalar *v);
static inline bool fc_tensor_is_lazy(const FcTensor *t) { return t->node != NULL; }
/* Whether t takes the device of the tensors it meets: a Python number, a CPU 0-dim tensor (as in
 * PyTorch), or an unplaced value. */
static inline bool fc_tensor_goes_anywhere(const FcTensor *t)
{
    return t->wrapped_number || t->unplaced || (t->ndim == 0 && t->device.type == FC_DEV_CPU);
}
/* The device of an operation over ts: that of the tensors that do not go anywhere, which must
 * agree (else FC_ERR_DEVICE with PyTorch's message); when all of them go anywhere, that of the
 * first one that is not a Python number (cpu for an unplaced one). */
FcStatus fc_common_device(FcTensor *const *ts, int n, FcDevice *out, FcError *err);
/* Puts an unplaced t on dev (before it is realised there for an operation on dev); a placed
 * tensor is left as it is. */
void fc_tensor_place(FcTensor *t, FcDevice dev);

/* ---- the context: one per interpreter (no globals) ---- */

/* FC_DUMP_CUDA: the CUDA source of every kernel (--dump-cuda); FC_DUMP_KERNELS shows it for the
 * kernels that run on a CUDA device. FC_DUMP_VERBOSE (--verbose): one line for each choice of a
 * library path (cuDNN or the generated kernels, and why). */
enum { FC_DUMP_IR = 1, FC_DUMP_KERNELS = 2, FC_DUMP_CUDA = 4, FC_DUMP_VERBOSE = 8 };

#define FC_MAX_CUDA 16          /* CUDA devices a context addresses (cuda:0 .. cuda:15) */
struct FcKernel;

/* Scheduler passes (FcCtx.sched_off turns them off; each gives the same bits on or off):
 * FUSE: a reduction used inside an expression is computed in the consumer's kernel (else
 * realised first into a temporary); HOIST: each sub-expression is computed once per point of
 * its own domain (else at every point of the loop nest); BOUNDS: a masked reduction loop runs to
 * its data-dependent bound (else over its whole extent); STAGE: a backward computes a
 * reduction's cotangent once into a buffer laid out for the scatter that reads it (autograd.c,
 * stage_cotangent; else it is recomputed at every point of the reduced levels). TERMS is the
 * exception to "the same bits": the loads that read one storage through several gathers alike
 * have their cotangents scattered by one kernel, per point in their order (autograd.c,
 * same_scatter); off, by a kernel each, one load after the other: another order of additions.
 * TERMS_BOUNDED: the terms also when a bound that the data set masks the cotangent (a comparison
 * of an index with a value read from a tensor: roi_align's adaptive sampling grid); off by default
 * (fc_ctx_new sets it in sched_off): on the CPU the terms kernel then costs more than a kernel
 * per load, most of its points being gated zeros, though the executor takes the terms as one
 * (cpu_plan.h's Plan.term; docs/architecture.md, the backward's scheduling). */
enum { FC_SCHED_FUSE = 1, FC_SCHED_HOIST = 2, FC_SCHED_BOUNDS = 4, FC_SCHED_CACHE = 8, FC_SCHED_STAGE = 16,
       FC_SCHED_TERMS = 32, FC_SCHED_TERMS_BOUNDED = 64 };

typedef struct FcCtx {
    FcBackend *cpu;             /* owned */
    int nthreads;               /* from TDL_NUM_THREADS, default all cores */
    uint64_t seed;              /* manual_seed */
    uint64_t rng_offset;        /* draws from the global generator so far */
    uint32_t max_fused;         /* operands with bigger DAGs are realised first */
    int sched_off;              /* scheduler passes turned off (FC_SCHED_*), for testing them */
    bool fused_sums;            /* every sum is fused, in the backend's order: the scheduler
                                   ignores FcNode.order */
    /* --dump-ir / --dump-kernels: dump is called with the text of each kernel's IR DAG
     * (FC_DUMP_IR) and of the scheduled kernel (FC_DUMP_KERNELS), as selected by dump_flags. */
    int dump_flags;
    void (*dump)(void *ud, const char *text);
    void *dump_ud;
    volatile int *interrupt;    /* nonzero: running kernels stop with FC_ERR_INTERRUPT; may be NULL */
    uint64_t dim_serial;        /* first-class dims made so far */
    /* Where the host is (e.g. "x.tdl:3:5"), written into buf when a dim's size is bound, for the
     * messages of later conflicts; may be NULL. */
    void (*locate)(void *ud, char *buf, size_t cap);
    void *locate_ud;
    /* Called with every scheduled kernel just before it runs, on whatever device (after the
     * dumps): a way to collect what a program schedules (the CUDA backend's tests compile each
     * one). May be NULL. */
    void (*on_kernel)(void *ud, const struct FcKernel *k, FcDevice dev);
    void *on_kernel_ud;
    FcBackend *cuda[FC_MAX_CUDA];   /* owned; made by fc_ctx_backend on first use */
    /* TDL_FAKE_CUDA=1: cuda devices are served by the CPU backend on host memory, so that what
     * lives where, what mixes and what is copied back is tested on machines with no GPU. */
    bool fake_cuda;
    struct FcKernelCache *kcache;   /* scheduled kernels kept for DAGs that come again (owned;
                                       kernel_cache.c; off with FC_SCHED_CACHE in sched_off) */
    bool deterministic;         /* use_deterministic_algorithms(True): library paths (cuDNN) use
                                   only algorithms that give the same bits every run */
} FcCtx;

FcStatus fc_ctx_new(FcCtx **out, FcError *err);
void fc_ctx_free(FcCtx *ctx);
/* The backend that runs kernels for device d, or FC_ERR_DEVICE. */
FcStatus fc_ctx_backend(FcCtx *ctx, FcDevice d, FcBackend **out, FcError *err);

/* ---- making tensors ---- */

/* Uninitialised stored tensor; strides NULL: C-contiguous. */
FcStatus fc_empty(FcCtx *ctx, FcDType dt, FcDevice dev, int ndim, const int64_t *shape,
                  const int64_t *strides, FcTensor **out, FcError *err);
/* A lazy 0-dim constant; wrapped: a Python scalar (see wrapped_number). v.i for bool/int dtypes. */
FcStatus fc_scalar(FcCtx *ctx, FcDType dt, FcScalar v, bool wrapped, FcTensor **out, FcError *err);
/* A lazy tensor on dev equal to v everywhere (expanded constant; computed where it is used, on any
 * device: FC_ERR_DEVICE when dev is not there). */
FcStatus fc_full(FcCtx *ctx, FcDType dt, FcDevice dev, int ndim, const int64_t *shape, FcScalar v, FcTensor **out,
                 FcError *err);
/* A lazy 1-D int64 tensor 0..n-1. */
FcStatus fc_iota(FcCtx *ctx, int64_t n, FcTensor **out, FcError *err);
/* A stored copy of host data. */
FcStatus fc_from_view(FcCtx *ctx, const FcView *v, FcDevice dev, FcTensor **out, FcError *err);
/* A stored tensor viewing t's storage with new geometry (t is realised first). No bounds check
 * beyond the storage: the caller passes valid geometry. */
FcStatus fc_as_strided(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                       int64_t offset, FcTensor **out, FcError *err);

/* ---- materialisation ---- */

/* Stores a lazy tensor (no-op when stored): schedules its DAG into kernels and runs them. The
 * result's layout follows the dominant input's dim order, as PyTorch's TensorIterator does. */
FcStatus fc_realize(FcCtx *ctx, FcTensor *t, FcError *err);
/* Realises t, which is about to be written into: a lazy alias's base first (t then becomes a view
 * of its storage, so that the write shows in the base and its other views, as in PyTorch). */
FcStatus fc_realize_target(FcCtx *ctx, FcTensor *t, FcError *err);
/* Realises t and returns a host view of it (CPU tensors; the view borrows t's storage). */
FcStatus fc_host_view(FcCtx *ctx, FcTensor *t, FcView *out, FcError *err);
/* Writes src (broadcast to dst's shape, cast to dst's dtype) into the stored tensor dst, in place:
 * the primitive under copy_, cat/stack, clone and t[idx] = v. Lazy readers of dst's storage
 * are realised first; overlapping src and dst give the result of reading all of src first. */
FcStatus fc_assign(FcCtx *ctx, FcTensor *dst, FcTensor *src, FcError *err);
/* Called before any write into s: realises the lazy tensors that read it. */
FcStatus fc_storage_prepare_write(FcCtx *ctx, FcStorage *s, FcError *err);

/* ---- operations that build IR (results are lazy) ----
 * Operands broadcast from the right; dtypes promote as PyTorch does (fc_result_type over the
 * operands, with wrapped_number tensors as scalars and other 0-dim tensors as ZERO_DIM). */

FcStatus fc_unary(FcCtx *ctx, FcOp op, FcTensor *a, FcTensor **out, FcError *err);
FcStatus fc_binary(FcCtx *ctx, FcOp op, FcTensor *a, FcTensor *b, FcTensor **out, FcError *err);
FcStatus fc_where(FcCtx *ctx, FcTensor *cond, FcTensor *a, FcTensor *b, FcTensor **out, FcError *err);
/* x + y * z rounded once (FC_OP_FMA) at the three operands' result dtype; for ints and bools,
 * the product then the sum. */
FcStatus fc_fma(FcCtx *ctx, FcTensor *x, FcTensor *y, FcTensor *z, FcTensor **out, FcError *err);
FcStatus fc_cast(FcCtx *ctx, FcTensor *a, FcDType dt, FcTensor **out, FcError *err);
/* Reduction over the dims in dim_mask (bit d = dim d; all dims when dim_mask is 0 and
 * a->ndim > 0). keepdim keeps them as size 1. Result dtype as PyTorch: sum/prod of bool and ints
 * give int64, any/all give bool, argmax/argmin int64. ARGMAX/ARGMIN over several dims index the
 * flattened (C-order) reduced dims. */
FcStatus fc_reduce(FcCtx *ctx, FcOp op, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out,
                   FcError *err);
/* PyTorch's at::sum: fc_reduce(FC_OP_SUM), and for a float tensor a sum that a backend with
 * FcBackend.ordered_sum computes alone, from its operand stored, in PyTorch's CPU order
 * (FC_SUM_CASCADE): the bits of torch.sum, where fc_reduce's sums are the backend's (the CPU's
 * accumulates in double). The tensor API's sums and means are these; a tensor with first-class
 * dims sums as fc_reduce does, fused into its consumer. */
FcStatus fc_sum(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err);
/* PyTorch's prod: fc_reduce(FC_OP_PROD), and for a float32 or float64 tensor a product that a
 * backend with FcBackend.ordered_sum computes alone in PyTorch's CPU order (FC_PROD_VEC). */
FcStatus fc_prod(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err);
/* The sum over the dims in dim_mask (0: all; kept as size 1 when keepdim) of a float32 or
 * float64 tensor a, or of a * b (b: NULL or of a's shape and dtype), in order (FC_SUM_LANES along
 * one dim, FC_SUM_SERIAL; with b each product added by one fma; FC_SUM_NORM2 with b = a) where the
 * backend can (FcBackend.ordered_sum), as fc_reduce's sum where it cannot and for first-class
 * dims (fused). PyTorch's softmax and norm kernels sum so. */
FcStatus fc_sum_ordered(FcCtx *ctx, FcTensor *a, FcTensor *b, uint64_t dim_mask, bool keepdim, FcSumOrder order,
                        FcTensor **out, FcError *err);
/* The float64 sum over the dims in dim_mask (0: all; kept as size 1 when keepdim) of (x - mean)^2,
 * x (a float tensor) as float64 and mean its mean over those dims: var's numerator, which a
 * backend with FcBackend.ordered_sum computes from x as PyTorch's WelfordOps computes its m2
 * (FC_SUM_WELFORD), the others and first-class dims in two passes, fused. */
FcStatus fc_welford_m2(FcCtx *ctx, FcTensor *x, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err);
/* A bool tensor of shape[0..ndim): whether an element's position among the elements of dims
 * d + 1.. (their flat index in C order) is below cut. PyTorch's kernels along a dim that is not
 * the last run the inner positions below a multiple of their vector width as vectors, the rest as
 * scalar code: this tells them apart. */
FcStatus fc_inner_below(FcCtx *ctx, int ndim, const int64_t *shape, int d, int64_t cut, FcDevice dev, FcTensor **out,
                        FcError *err);
/* PyTorch's nansum: fc_sum of a with its NaNs as zeros, in a's own layout as at::nansum sums it
 * (FcNode.cascade_nan); ints and bools as fc_sum. */
FcStatus fc_nansum(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err);
/* Broadcast shape of two shapes, or FC_ERR_RUNTIME with PyTorch's message. */
FcStatus fc_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out,
                             FcError *err);

/* ---- scheduled kernels (what a backend runs) ----
 *
 * A kernel evaluates one expression over a loop nest and either stores it or reduces it over the
 * loops marked reduced. The root loops (owner -1) are the output's (outermost first, the last one
 * contiguous in the output where possible) and, for a reduction at the root, its reduced loops.
 * A reduction inside the expression (softmax's max and sum, roi_align's sum over samples) is an
 * instruction of the code that iterates loops of its own (owner = its index): its body, the
 * instructions that vary over those loops, runs once per point of them, and is folded into the
 * reduction's register. Every instruction varies over the loops in its `deps`; a backend
 * computes it once per point of those loops (hoisting by domain), not per point of the nest.
 * The code is straight-line SSA: instruction i writes register i; each register holds a chunk
 * of up to FC_CHUNK consecutive values along the chunk loop. */

#define FC_CHUNK 256

/* An index read from a register (int64) and added to an address: a gathered dim of a load, or a
 * scattered dim of a kernel's store. */
typedef struct FcGather {
    int reg;                    /* the int64 register holding the index */
    int64_t stride;             /* elements per unit of the index */
    int64_t extent;             /* valid indices: [0, extent), or [-extent, extent) when wrap */
    bool wrap;                  /* a negative index counts from the end (Python's rule) */
    int dim;                    /* the dimension an out-of-range message names */
} FcGather;

/* A data-dependent bound of a loop of an inner reduction: the loop runs over the indices d with
 * d < value (cmp FC_OP_LT) or d <= value (FC_OP_LE) only, value being register reg (int64 or
 * float, one value over the reduction's domain) read before the loop. The body masks the other
 * indices to the reduction's identity (or an idempotent fill: FcInstr.fill), so they are skipped. */
typedef struct FcBound {
    int loop;
    int reg;
    FcOp cmp;
} FcBound;

typedef struct FcInstr {
    FcOp op;
    FcDType dtype;              /* of dst */
    FcDType src_dtype;          /* of the operands (CAST: the source; comparisons and WHERE_CMP:
                                   compared values; a reduction: its body's) */
    int dst, a, b, c;           /* registers; -1 when unused */
    bool invariant;             /* depends on no loop: computed once per thread, before the loops */
    uint64_t deps;              /* bit l: the value varies along loop l (set by the scheduler by
                                   fc_kplan_domains; the backends read their plan's) */
    /* LOAD */
    int buf;                    /* index into FcKernel.bufs */
    int64_t offset;             /* elements */
    int64_t *strides;           /* [nloop] elements per step of each loop (0: does not vary) */
    int ngather;                /* gathered dims, each index checked against its extent before any
                                   element is read (else FC_ERR_INDEX "index 7 is out of bounds for
                                   dimension 0 with size 5") */
    FcGather *gathers;          /* [ngather] */
    /* CONST: its value; WHERE_CMP: the constant a is compared with (of src_dtype) */
    FcScalar konst;
    FcOp cmp;                   /* WHERE_CMP: the comparison, EQ..GE */
    /* IOTA: the loop whose index it is */
    int loop;
    /* A reduction (SUM, PROD, AMAX, AMIN, ANY, ALL) inside the code: `a` is its body's result,
     * its loops are those with owner = this instruction. nbound of them have data-dependent
     * bounds; when a bound skips indices, the fill (the value the body gives at skipped indices:
     * +-0 for a sum, 1 for a product, anything for max/min/any/all) is folded in once, which
     * gives the bits of folding it at every skipped index. */
    int nbound;
    FcBound *bounds;            /* [nbound] */
    FcScalar fill;              /* of dtype src_dtype */
} FcInstr;

/* Whether evaluating in can raise (a gather's index out of range, an integer division by zero): such
 * an instruction is evaluated only where the program reads it, never ahead of its mask (kplan's
 * precomputation, the CPU's narrow pass over gated chunks). */
static inline bool fc_instr_may_fail(const FcInstr *in)
{
    if (in->op == FC_OP_LOAD)
        return in->ngather > 0;
    if (in->op == FC_OP_FLOORDIV || in->op == FC_OP_MOD || in->op == FC_OP_FMOD)
        return in->dtype != FC_FLOAT32 && in->dtype != FC_FLOAT64;
    return false;
}

typedef struct FcKernel {
    int nloop;
    int64_t extent[FC_MAX_DIMS];
    bool reduced[FC_MAX_DIMS];  /* reduced by the root reduction */
    int owner[FC_MAX_DIMS];     /* -1: a root loop; else the index of the inner reduction iterating it */
    int chunk_loop;             /* the root loop the backend must vectorise along, or -1: its choice */
    bool no_hoist;              /* compute every instruction at every point (the unhoisted schedule) */
    FcInstr *code;
    int ncode;
    int nreg;
    FcOp reduce;                /* FC_OP_NONE: store register `result`; else reduce it */
    int result;
    /* The output: element for loop indices (i_0, ...) at out + (out_offset + sum out_strides[l] * i_l)
     * (out_strides are 0 for reduced loops). For ARGMAX/ARGMIN the stored value is the index along
     * the one reduced loop. */
    void *out;
    FcDType out_dtype;
    int64_t out_offset;
    int64_t out_strides[FC_MAX_DIMS];
    /* A scattered store (index_put, scatter_add): each element's address also adds every scatter
     * index times its stride (indices checked as a gather's are, before the chunk is written).
     * accumulate: out += value instead of out = value (bool: logical or). A kernel with scatters
     * runs its loops in order, the last loop innermost: duplicates are written (or summed) in the
     * order of the loop nest, the same bits every run (a backend may split it over the owner
     * loops, fc_store_owner_loops, which keeps that order for every element). */
    int nscatter;
    FcGather *scatter;          /* [nscatter] */
    bool accumulate;
    /* The store cannot fail: its indices and values are those a forward computed without error
     * (a gradient's scatter-add through the indices its gather read). A backend may then split
     * it over its owner loops; otherwise a failure must leave written exactly what the nest's
     * order wrote before it, which a split cannot promise. */
    bool checked;
    void **bufs;                /* base pointers of the loaded storages */
    int nbufs;
    bool index32;               /* every address fits in int32 arithmetic */
    int nthreads;
    volatile int *interrupt;
    /* The kernel's plan (fc_kplan_new: made by the scheduler, kept with the kernel in the kernel
     * cache), or NULL: a backend given none plans the kernel itself. */
    const struct FcPlan *plan;
} FcKernel;

/* The vector-loop thresholds both backends give their FcTarget (fc_target_chunk_loop). */
enum { FC_SHORT_CHUNK_LOOP = 32, FC_LONG_CHUNK_LOOP = 64 };

/* ---- the kernel plan (kplan.c) ----
 * The analysis of a kernel that every backend needs, done once per scheduled kernel (and kept
 * with it in the kernel cache): the kernel validated, operands linked to the instructions that
 * wrote them, the loops each value varies along, the list of each instruction (the inner
 * reduction whose body holds it) and an order of evaluation. Arrays are indexed by instruction
 * (code order) unless said otherwise. */

/* What a backend tells the planner about itself (FcBackend.target). */
typedef struct FcTarget {
    const char *name;           /* "cpu", "cuda": a refused kernel's message starts "<name> kernel: " */
    int chunk;                  /* the most values one step along the vector loop computes */
    int lanes;                  /* accumulators a fold along the vector loop keeps */
    int short_loop, long_loop;  /* fc_target_chunk_loop's thresholds for this target */
    int64_t pre_points;         /* fc_kplan_pre: points of one precomputed table at most ... */
    size_t pre_bytes;           /* ... and bytes of all of a kernel's tables */
} FcTarget;

typedef struct FcPlan {
    int n, L;                   /* instructions; loops (0: a kernel of one point) */
    int *opv;                   /* [3n] a, b, c as the instructions that wrote them, -1 when absent */
    int *gopv, *goff;           /* the gathered indices of instruction i: gopv[goff[i] + g] */
    int *bopv, *boff;           /* the bound values of reduction i: bopv[boff[i] + b] */
    uint64_t *deps;             /* bit l: the value varies along loop l (fc_kplan_domains' rule) */
    uint64_t *own;              /* the loops reduction i iterates (0 for others) */
    int *list;                  /* the innermost inner reduction whose loops i varies along (its
                                   body), or -1: the top list */
    int *pos;                   /* i's place in the order of evaluation: invariants [0, ninv), the
                                   top list [ninv, ntop), then the body of each reduction r
                                   [body0[r], body1[r]); each list by domain, then code order */
    int ninv, ntop;
    int *body0, *body1;
    int *seq;                   /* [n] the order of execution: each list in the order of pos, the
                                   body of a reduction just before it (fc_kplan_live's clock) */
    int *epos;                  /* [n] i's place in seq */
    int res;                    /* the instruction of the result */
    int sres[FC_MAX_DIMS];      /* of each scatter index */
    void *block;                /* the arrays' storage */
} FcPlan;

/* Validates k and plans it (new *out, freed with fc_kplan_free). FC_ERR_VALUE for a malformed
 * kernel ("<who> kernel: loop 2 has a bad owner"), FC_ERR_NOMEM. */
FcStatus fc_kplan_new(const FcKernel *k, const char *who, FcPlan **out, FcError *err);
void fc_kplan_free(FcPlan *p);  /* NULL is fine */
/* The part of fc_kplan_new that the scheduler applies to its code before the kernel is final
 * (SSA: instruction i writes register i; not validated): own[i], the loops inner reduction i
 * iterates (owner[l] == i; 0 for others); deps[i], the loops i varies along (those of extent 1
 * left out; one of extent 0 counts, so that nothing read under an empty loop is hoisted out of
 * it and computed; a reduction's own loops left out of what its body varies along); list[i], the
 * first reduction after i whose loops i varies along (its body), or -1. Arrays of n. */
void fc_kplan_domains(const FcInstr *code, int n, int nloop, const int64_t *extent, const int *owner,
                      uint64_t *deps, uint64_t *own, int *list);
/* cx[i]: the loop along which i's list takes its vector steps, given cl, the top list's (clmask:
 * the loops a step of the top list spans, cl's alone unless the backend spans several). A
 * reduction that varies along its list's vector loop takes its steps along it too; else it
 * takes them along its own last loop, and so does its body. */
void fc_kplan_chunks(int n, int nloop, const uint64_t *deps, const uint64_t *own, const int *list, int cl,
                     uint64_t clmask, int *cx);
/* Live ranges: last[i], the place in p->seq where value i is read for the last time, given
 * the values each instruction reads (reads[first[j] .. first[j + 1]), instructions; the plan's
 * operands, gathered indices and bounds, or a backend's after it fused some). A read inside a
 * reduction's body that i is not in counts at the reduction of i's list that holds the reader
 * (i stays live through the loop), a reduction's read of its own body's result at the
 * reduction; the result and the scatter indices live to the end (n), a value nothing reads
 * dies where it is written. A backend that renames values onto buffers frees a buffer there. */
void fc_kplan_live(const FcPlan *p, const FcKernel *k, const int *first, const int *reads, int *last);

/* Small-domain precomputation: the values computed over their own domain (the loops deps
 * names, one entry per point of them, laid out as the backend likes) into tables before the
 * kernel runs, so that the kernel reads each where it would have computed it
 * again at every point of the loops it does not vary along (roi_align's coordinates and weights
 * over (box, bin, sample), read by every channel). A value is precomputed when it varies along
 * some loop, is not a reduction, a constant, a gathered load, a load of the output, the result
 * or an integer floor division or remainder (a table holds points the kernel may
 * never reach: a bounded loop's tail, where such a division could fail), its operands are
 * invariant or precomputed, its table fits t's limits (pre_points; pre_bytes for all of them) and
 * veto (NULL: none) does not refuse it: what the backend's own layout rules out. opv: the
 * operands as instructions, the plan's (p->opv) or the backend's after it fused some of its own
 * (the CPU's weighted rows). Values are taken in the plan's order (pos).
 * Sets pre[i], off[i] (its table's byte offset, 64-byte aligned) and kept[i] (a value that an
 * instruction that is not precomputed reads, or the kernel's bounds, gathers or scatter indices
 * (which the store checks where it reads them): the tables the kernel reads; NULL when not wanted); returns the bytes of all tables. A kernel scheduled
 * unhoisted (no_hoist) precomputes nothing. */
size_t fc_kplan_pre(const FcPlan *p, const FcKernel *k, const FcTarget *t, const int *opv, const bool *veto,
                    bool *pre, size_t *off, bool *kept);

/* The root loop target t vectorises along when the kernel leaves it the choice (chunk_loop -1),
 * and the one the scheduler assumes it will: the innermost root loop (those with owner < 0; all
 * when owner is NULL), unless it is shorter than t->short_loop and another root loop is at least
 * t->long_loop long and 4 times longer. A scattered store keeps the innermost (its duplicates
 * must land in loop order). -1 when there is no root loop. */
int fc_target_chunk_loop(const FcTarget *t, int nloop, const int64_t *extent, const int *owner, bool scatter);
/* The vector loop the scheduler fixes (FcKernel.chunk_loop) for a kernel with inner reductions
 * (some owner >= 0), whose code varies along deps (n instructions): among the root loops long
 * enough to fill chunks, the one the fewest instructions vary along, since every other value is
 * computed once per chunk instead of once per element (roi_align's coordinates and weights do
 * not vary along c: with c along the chunk only the taps and their sum are vector work); ties go
 * to t's choice (fc_target_chunk_loop), then to the innermost. A kernel without inner reductions
 * or with a scattered store: t's choice. */
int fc_kplan_chunk_loop(const FcTarget *t, int nloop, const int64_t *extent, const int *owner, bool scatter, int n,
                        const uint64_t *deps);

/* The fused ops (ops.def's FUSED rows) made on a scheduled kernel's code (SSA, n instructions,
 * over loops of these extents and owners; result and the scatter indices sregs[0..ns) are read
 * by the store) where the backend that runs it takes them (takes(ud, in): whether it computes
 * instruction in), rewriting instructions in place: a WHERE whose condition is a comparison of a
 * value with a constant, over the same loops as the select, becomes a WHERE_CMP when every read
 * of the comparison is such a select (each one taken): the comparison is then read by nothing,
 * and the caller drops it (with what else only it read). A float ADD of x and a MUL w * r that
 * only it reads, over the same loops, becomes MULADD(x, w, r), the MUL then read by nothing; a
 * float MUL left whose factor is a gathered load that only it reads (a weighted gather: a sum's
 * first product, or one alone) becomes a MULADD with no x (a = -1), so that every weighted
 * gather, summed or not, is this op. Returns how many were rewritten; out of
 * memory, none (the same results). */
int fc_kplan_fuse(FcInstr *code, int n, int nloop, const int64_t *extent, const int *owner, int result,
                  const int *sregs, int ns, bool (*takes)(void *ud, const FcInstr *in), void *ud);

/* One term of a store's address (owner.c): stride * index, the index in [0, extent) of root loop
 * `loop` or of scatter index `scatter` (the other -1). */
typedef struct FcStoreTerm {
    int64_t stride, extent;
    int loop, scatter;
} FcStoreTerm;
enum { FC_STORE_TERMS_MAX = FC_MAX_DIMS + 64 };
/* The terms of k's store address that move (owner.c): each root loop of `loops` with extent > 1
 * and a nonzero output stride, in loop order, then each scatter index of extent > 1 and nonzero
 * stride, into t[FC_STORE_TERMS_MAX]. Their number; -1 when a scatter index has no value (extent
 * <= 0: nothing is written) or there are more than 64 of them. */
int fc_store_terms(const FcKernel *k, uint64_t loops, FcStoreTerm *t);
/* Whether the n terms' indices are a one-to-one map of the address (owner.c): taken by |stride|,
 * each beyond what the smaller ones span. Then *nkeys is the product of their extents, at most
 * max_keys (else false). */
bool fc_store_terms_injective(const FcStoreTerm *t, int n, int64_t max_keys, int64_t *nkeys);
/* The owner loops of k's scattered or accumulating store (owner.c): a bit per root loop along
 * which distinct iterations never write the same element, whatever the scatter indices hold (in
 * range). A backend may split the store's work over them, each part in loop order, and still
 * give every element its contributions in the nest's order. 0 for a reduction. */
uint64_t fc_store_owner_loops(const FcKernel *k);
/* The destination rows of k's scattered or accumulating store (owner.c): among the scatter
 * indices in `allowed` (a bit per FcKernel.scatter), a set *rows and a unit A (returned; 0 when
 * there is none) such that the element an iteration writes determines R = (sum over *rows of
 * stride * index) / A, an integer in [0, *nkeys): every other term of the address (the root
 * loops, the other scatter indices) spans less than A, and the strides of *rows are multiples of
 * A. Two iterations with distinct R never write one element, so a backend may split the work by
 * R (each part running the nest in order, skipping the points of other rows) and still give
 * every element its contributions in the nest's order. The smallest such A is taken (the most
 * rows), with at most max_keys rows. */
int64_t fc_store_band_rows(const FcKernel *k, uint64_t allowed, int64_t max_keys, uint64_t *rows, int64_t *nkeys);
/* Counts the stores a backend ran split over owner loops on more than one thread (tests check
 * that the parallel path is taken). */
void fc_owner_split_note(void);
long fc_owner_split_count(void);
/* Counts the reductions' cotangents a backward computed into a buffer of their own
 * (FC_SCHED_STAGE), for tests. */
long fc_grad_staged_count(void);
/* Counts the scatter-adds a backward ran with several loads' cotangents as the terms of one store
 * (FC_SCHED_TERMS), for tests. */
long fc_grad_term_kernels(void);

/* Batched matrix product C[b] = A[b] @ B[b] over a batch of any shape (strides may be 0 for
 * broadcast batch dims). Every pointer is a storage base plus element offsets. */
/* An FcMatmul operand read through index arithmetic rather than one row and one column stride:
 * a masked gather with an affine index per dim (a convolution's patch, x[n, ci, oh * s - p + kh *
 * d, ...] with 0 in the padding), packed into the GEMM's panels straight from its source, so
 * that the gather (the im2col matrix) is never written (implicit GEMM). The operand's rows and
 * columns are each a flattening of sub-dims (sizes rsize, csize, outermost first); its element
 * (b, i, j) is at the operand's offset + batch strides + the sub-indices of i and j times rstride
 * and cstride, and reads 0 unless every bound holds: lo <= bcoef . (b's indices) + rcoef . (i's)
 * + ccoef . (j's) < hi (the source's indices out of [0, size), the gather's mask). One sub-dim
 * each and no bounds is the plain strided operand. */
enum { FC_MM_MAX_BOUNDS = 4 };
typedef struct FcMmBound {
    int64_t lo, hi;
    int64_t bcoef[FC_MAX_DIMS], rcoef[FC_MAX_DIMS], ccoef[FC_MAX_DIMS];
} FcMmBound;
typedef struct FcMmOperand {
    int nrdim, ncdim, nbound;
    int64_t rsize[FC_MAX_DIMS], csize[FC_MAX_DIMS];
    int64_t rstride[FC_MAX_DIMS], cstride[FC_MAX_DIMS];
    FcMmBound bound[FC_MM_MAX_BOUNDS];
} FcMmOperand;

typedef struct FcMatmul {
    FcDType dtype;              /* float32, float64, int32, int64; bfloat16 with round_steps */
    bool round_steps;           /* bfloat16 (a CPU backend's): each product and each partial sum
                                   rounded in order of k, as PyTorch's small CPU kernels do */
    int nbatch;
    int64_t batch[FC_MAX_DIMS];
    int64_t a_bstride[FC_MAX_DIMS], b_bstride[FC_MAX_DIMS], c_bstride[FC_MAX_DIMS];
    int64_t m, n, k;
    const void *a; int64_t a_offset, a_rs, a_cs;   /* A is m x k */
    const void *b; int64_t b_offset, b_rs, b_cs;   /* B is k x n */
    void *c; int64_t c_offset, c_rs, c_cs;         /* C is m x n, written (not accumulated) */
    int nthreads;
    volatile int *interrupt;
    /* NULL, or what is written instead of the product (a backend takes it only when it says so:
     * FcBackend.matmul_epilogue); c_rs and c_cs are then unused (epi says where rows go). */
    const struct FcEpilogue *epi;
    /* NULL, or A (B) read as this says instead of by a_rs and a_cs (b_rs, b_cs); its offset and
     * batch strides stay a_offset and a_bstride (a backend takes it only when it says so:
     * FcBackend.matmul_implicit). */
    const FcMmOperand *a_ix, *b_ix;
} FcMatmul;

/* A tensor's sum over some of its dims in one of PyTorch's CPU orders (FcBackend.ordered_sum):
 * the scheduler hands a SUM of that order (FcNode.order) of a stored float tensor to a backend
 * that has it. The output is C-contiguous over the kept dims (a keepdim=True sum's layout). */
typedef struct FcOrderedSum {
    FcSumOrder order;           /* CASCADE, SERIAL, WELFORD, NORM2 or PROD_VEC (a product) over
                                   the dims in reduced, or LANES along one dim (one bit) */
    const void *in;             /* the input's element (0, ..., 0) */
    const void *in2;            /* NULL, or (LANES, SERIAL) in * in2 is summed, each product added by
                                   one fma; in2 is of in's dtype and shape, with strides2 */
    int64_t strides2[FC_MAX_DIMS];
    FcDType dtype;              /* float32, float64, bfloat16 or float16 */
    int ndim;
    int64_t shape[FC_MAX_DIMS], strides[FC_MAX_DIMS];   /* strides in elements, none negative */
    uint64_t reduced;           /* bit d: dim d is summed */
    void *out;
    FcDType out_dtype;          /* dtype, or float32 for a narrow dtype's sum that its consumer
                                   reads in float32 (the values are the narrow dtype's); WELFORD:
                                   float64 (m2); NORM2: in is x, out its sum of squares */
    volatile int *interrupt;
    /* (CASCADE) NULL, or the input is not in memory: a C-contiguous tensor (strides as such) whose elements
     * [begin, end) in C order tile computes on request, into *at (valid until the next call). A
     * sum of all of it then reads a tile at a time. */
    FcStatus (*tile)(void *ud, int64_t begin, int64_t end, const void **at, FcError *err);
    void *tile_ud;
} FcOrderedSum;

/* A matrix product's epilogue: a pointwise expression of the product P and of tensors indexed
 * like it (bias, batch-norm's scale and shift, a residual), applied to each block of C while it
 * is in cache and written through the output's strides instead of P: the consumer of a
 * contraction fused into it (matmul.c's fc_product_root), so that P is never written and read
 * again. The ops are the IR's (a row of ops.def each, on the dtypes the node had), computed by
 * the backend's functions for those ops, so the bits are those of the unfused kernels.
 * C's rows (m) and columns (n) are each a flattening of up to FC_MAX_DIMS sub-dims (sizes
 * rsize, csize, outermost first); a load and the output give a stride per batch dim, row sub-dim
 * and column sub-dim. */
enum { FC_EPI_MAX = 24 };
typedef struct FcEpiInstr {
    FcOp op;                    /* FC_OP_NONE: P's value; FC_OP_CONST: konst; FC_OP_LOAD: the element of
                                   data at offset + the strides; else the op of registers a, b, c */
    FcDType dtype, src_dtype;   /* as FcInstr's */
    int a, b, c;                /* earlier instructions, or -1 */
    FcScalar konst;
    const void *data;
    int64_t offset;
    int64_t bstride[FC_MAX_DIMS], rstride[FC_MAX_DIMS], cstride[FC_MAX_DIMS];
} FcEpiInstr;
typedef struct FcEpilogue {
    int nrdim, ncdim;
    int64_t rsize[FC_MAX_DIMS], csize[FC_MAX_DIMS];
    FcDType out_dtype;          /* the last instruction's: C's element (b, i, j) is this dtype's at c +
                                   c_offset + FcMatmul's c_bstride, out_rstride and out_cstride */
    int64_t out_rstride[FC_MAX_DIMS], out_cstride[FC_MAX_DIMS];
    int n;                      /* instructions; the result is code[n - 1] */
    FcEpiInstr code[FC_EPI_MAX];
} FcEpilogue;

/* The strides lazy tensor t will have when realised, where they are known without running it:
 * a matrix product left lazy (a contraction's, FcNode.product) and the pointwise expression of
 * it that runs as its epilogue are written in the product's levels' order (fcdim/matmul.c);
 * *known then. The stdlib's nn reads a convolution's memory format so, without realising it
 * before what follows (batch_norm) can join its epilogue. */
FcStatus fc_product_strides(FcCtx *ctx, FcTensor *t, int64_t *strides, bool *known, FcError *err);

/* One 2-D convolution without bias (PyTorch's conv2d, a cross-correlation) that a backend may take
 * (FcBackend.conv): y[n, (g, k), oh, ow] = sum over (c, r, s) of
 * x[n, (g, c), oh*stride - pad_pre + r*dilation, ...] * w[(g, k), c, r, s], 0 in the padding.
 * transposed: conv_transpose2d, the gradient of that convolution with respect to its input, from x
 * (N, K, H, W) and w (K, C/groups, R, S) to y (N, C, Ho, Wo); the paddings are the forward's (the
 * output_padding is taken up by its floor division).
 * Shapes are NCHW (weights KCRS) whatever the layout; the strides (elements) say the layout. */
enum { FC_CONV_DETERMINISTIC = 1, FC_CONV_EXHAUSTIVE = 2, FC_CONV_TF32 = 4 };
/* What FcConv asks for (op). The convolution's three: x, w, y are the forward convolution's
 * tensors whatever the op, which says the one written (its pointer cast from const): FORWARD y
 * (transposed: see above), BACKWARD_DATA x (the input's gradient, from y holding the output's and
 * w), BACKWARD_FILTER w (the weight's gradient, from x and y holding the output's).
 * FC_POOL_MAX, FC_POOL_AVG: y = max_pool2d / avg_pool2d of x (window, stride, pad_pre/pad_post;
 * count_include_pad), dilation 1, PyTorch's floor output size; w unused.
 * FC_BATCH_NORM: y = batch_norm of x with the per-channel (C) scale, bias; training: the batch's
 * mean and 1/sqrt(biased variance + eps) written to save_mean, save_invstd, and the running
 * statistics (run_mean, run_var read; new_mean, new_var written) moved by momentum with the
 * unbiased variance, as PyTorch; else run_mean and run_invstd (1/sqrt(running_var + eps)) read. */
typedef enum FcConvOp {
    FC_CONV_FORWARD = 0,
    FC_CONV_BACKWARD_DATA,
    FC_CONV_BACKWARD_FILTER,
    FC_POOL_MAX,
    FC_POOL_AVG,
    FC_BATCH_NORM,
} FcConvOp;
typedef struct FcConv {
    FcDType dtype;
    int64_t x_shape[4], x_strides[4], w_shape[4], w_strides[4], y_shape[4], y_strides[4];
    int64_t pad_pre[2], pad_post[2], stride[2], dilation[2], groups;
    const void *x, *w;          /* the first element of each */
    void *y;
    int flags;                  /* FC_CONV_*: what the user asked of the choice of algorithm */
    bool transposed;
    bool taken;                 /* out: the backend computed y */
    char note[240];             /* out: how it ran, or why the backend did not take it */
    FcConvOp op;
    int64_t window[2];          /* pooling's kernel size */
    bool count_include_pad;     /* FC_POOL_AVG */
    bool training;              /* FC_BATCH_NORM */
    double eps, momentum;       /* FC_BATCH_NORM */
    const void *scale, *bias, *run_mean, *run_var, *run_invstd;     /* FC_BATCH_NORM, C each */
    void *save_mean, *save_invstd, *new_mean, *new_var;             /* FC_BATCH_NORM training, C each */
} FcConv;

/* Text of a kernel for --dump-kernels (malloc'd; NULL on out-of-memory). */
char *fc_kernel_dump(const FcKernel *k);
/* Text of the IR DAG under n for --dump-ir (malloc'd). */
char *fc_node_dump(const FcNode *n);

/* ---- views and shape operations (shape.c) ----
 * PyTorch semantics and messages. Views share storage (the input is realised first when lazy);
 * dims may be negative (counted from the end) and are checked (FC_ERR_INDEX: "Dimension out of
 * range (expected to be in range of [-2, 1], but got 2)"). */

typedef enum FcMemoryFormat {
    FC_MF_PRESERVE = 0,         /* keep the input's dim order when it is dense, else contiguous */
    FC_MF_CONTIGUOUS,           /* C order */
    FC_MF_CHANNELS_LAST,        /* 4-D NCHW laid out as NHWC */
    FC_MF_CHANNELS_LAST_3D,     /* 5-D NCDHW laid out as NDHWC */
} FcMemoryFormat;

/* shape may hold one -1 (inferred). reshape: a view when the strides allow (PyTorch's
 * computeStride), else a copy. view: only a view, else FC_ERR_RUNTIME with PyTorch's message. */
FcStatus fc_reshape(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *shape, FcTensor **out, FcError *err);
FcStatus fc_view(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *shape, FcTensor **out, FcError *err);
FcStatus fc_permute(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *dims, FcTensor **out, FcError *err);
FcStatus fc_transpose(FcCtx *ctx, FcTensor *t, int64_t d0, int64_t d1, FcTensor **out, FcError *err);
/* The view of t's diagonal over dims d1 and d2 (offset > 0: above the main one), the diagonal as
 * its last dim after t's other dims (PyTorch's diagonal). */
FcStatus fc_diagonal(FcCtx *ctx, FcTensor *t, int64_t offset, int64_t d1, int64_t d2, FcTensor **out, FcError *err);
/* PyTorch's as_strided: a view of t's storage with the given geometry at *storage_offset
 * (elements from the storage's start; NULL: t's own offset), checked as PyTorch checks it (no
 * negative strides, in bounds of the storage, offset >= 0), with its messages. Elements may
 * overlap (their gradients add). */
FcStatus fc_as_strided_checked(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                               const int64_t *storage_offset, FcTensor **out, FcError *err);
/* PyTorch's unfold: the windows of `size` elements every `step` along dim, as a new last dim of a
 * view (a 0-dim tensor has one dim of size 1). */
FcStatus fc_unfold(FcCtx *ctx, FcTensor *t, int64_t dim, int64_t size, int64_t step, FcTensor **out, FcError *err);
/* shape may hold -1 (keep that dim); new leading dims allowed. A stride-0 view (a lazy input is
 * realised first). */
FcStatus fc_expand(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *shape, FcTensor **out, FcError *err);
/* dim_mask 0: every size-1 dim. */
FcStatus fc_squeeze(FcCtx *ctx, FcTensor *t, uint64_t dim_mask, FcTensor **out, FcError *err);
FcStatus fc_unsqueeze(FcCtx *ctx, FcTensor *t, int64_t dim, FcTensor **out, FcError *err);
FcStatus fc_flatten(FcCtx *ctx, FcTensor *t, int64_t start, int64_t end, FcTensor **out, FcError *err);
/* The tensor itself (a new reference) when already in that format, else a stored copy. */
FcStatus fc_contiguous(FcCtx *ctx, FcTensor *t, FcMemoryFormat mf, FcTensor **out, FcError *err);
FcStatus fc_is_contiguous(FcCtx *ctx, FcTensor *t, FcMemoryFormat mf, bool *out, FcError *err);
/* The strides of empty(shape, memory_format=mf) (preserve: C order); FC_ERR_RUNTIME when the
 * rank does not fit the format. */
FcStatus fc_format_strides(FcMemoryFormat mf, int ndim, const int64_t *shape, int64_t *strides, FcError *err);
/* The strides of empty_like(t, memory_format=mf), PyTorch's rule: preserve keeps the strides of a
 * non-overlapping dense t, else gives dense strides in t's dim order (t is realised first); another
 * format, its own strides (FC_ERR_RUNTIME when t's rank does not fit it). */
FcStatus fc_like_strides(FcCtx *ctx, FcTensor *t, FcMemoryFormat mf, int64_t *strides, FcError *err);
/* A stored copy (never shares storage) in format mf (strides as fc_like_strides). */
FcStatus fc_clone(FcCtx *ctx, FcTensor *t, FcMemoryFormat mf, FcTensor **out, FcError *err);
FcStatus fc_cat(FcCtx *ctx, int n, FcTensor *const *ts, int64_t dim, FcTensor **out, FcError *err);
FcStatus fc_stack(FcCtx *ctx, int n, FcTensor *const *ts, int64_t dim, FcTensor **out, FcError *err);
/* To another dtype and/or device (same tensor, a new reference, when nothing changes). */
FcStatus fc_to(FcCtx *ctx, FcTensor *t, FcDType dt, FcDevice dev, FcTensor **out, FcError *err);

/* ---- indexing (index.c) ----
 * PyTorch's translation of t[...] (torch/csrc/autograd/python_variable_indexing.cpp,
 * ATen/TensorIndexing.h, ATen/native/TensorAdvancedIndexing.cpp), with its messages. Ints,
 * slices, None and ... give views; a Python bool, a bool or integer tensor (int64 or int32, of
 * any rank; a 0-dim int tensor selects like an int) is an advanced index: index tensors
 * broadcast together, bool masks stand for their nonzero() coordinates, and the broadcast dims
 * replace the indexed dims where the first of them was when they are adjacent, else go first.
 * An advanced read is lazy: one LOAD whose operands are the index tensors' own IR, so a gather
 * followed by math runs as one kernel. Index values are checked when the index is built
 * (negative ones count from the end): out of range is FC_ERR_INDEX "index 7 is out of bounds for
 * dimension 0 with size 5" (for advanced indices the dimension is the index's position among
 * them, as in PyTorch). A negative slice step is NumPy's reversed slice (PyTorch rejects it). */

typedef enum FcIndexKind {
    FC_IX_INT, FC_IX_SLICE, FC_IX_NONE, FC_IX_ELLIPSIS, FC_IX_BOOL, FC_IX_TENSOR,
    FC_IX_DIM, FC_IX_DIMPACK,   /* first-class dims: fc_index_dims only */
} FcIndexKind;

typedef struct FcIndex {
    FcIndexKind kind;
    int64_t i;                  /* INT: the index; BOOL: 0 or 1 */
    int64_t start, stop, step;  /* SLICE: step != 0 (defaults 1); start/stop only when has_* */
    bool has_start, has_stop;
    FcTensor *t;                /* TENSOR (borrowed) */
    FcDim *dim;                 /* DIM (borrowed) */
    FcDim *const *pack;         /* DIMPACK: npack dims splitting one dim (borrowed) */
    int npack;
} FcIndex;

/* t[ix[0], ..., ix[n-1]]: a view when every index is basic, else a lazy gather. */
FcStatus fc_index(FcCtx *ctx, FcTensor *t, int n, const FcIndex *ix, FcTensor **out, FcError *err);
/* t[ix...] = v, in place (a lazy t is realised first). v broadcasts to the indexed shape (as PyTorch's
 * setitem: v's leading size-1 dims are dropped first; the message names both shapes when it
 * cannot); a basic write converts v's dtype (copy_), an advanced one requires t's dtype unless
 * v is a wrapped Python number (index_put_). accumulate: duplicates are summed, in the order of
 * the indexed elements (deterministic: the same bits every run, whatever the thread count). */
FcStatus fc_index_put(FcCtx *ctx, FcTensor *t, int n, const FcIndex *ix, FcTensor *v, bool accumulate,
                      FcError *err);
/* Whether t[ix...] = v (accumulate off) is PyTorch's masked_fill_ with v's one element, which
 * fc_index_put converts to t's dtype: one bool or uint8 mask of at least one dim is the only
 * advanced index (a Python bool or a 0-dim mask indexes as an int64 tensor there). */
bool fc_index_put_fills(int n, const FcIndex *ix, const FcTensor *v);
/* The coordinates of the nonzero elements of t: int64 [count, ndim], in C order. Realises t. */
FcStatus fc_nonzero(FcCtx *ctx, FcTensor *t, FcTensor **out, FcError *err);
/* t.index_select(dim, index): index 1-D (or 0-D) int64/int32; lazy. */
FcStatus fc_index_select(FcCtx *ctx, FcTensor *t, int64_t dim, FcTensor *index, FcTensor **out, FcError *err);
/* t.gather(dim, index): index int64 with t's rank, no bigger than t outside dim; lazy. */
FcStatus fc_gather(FcCtx *ctx, FcTensor *t, int64_t dim, FcTensor *index, FcTensor **out, FcError *err);
/* t.scatter_(dim, index, src) (accumulate: scatter_add_), in place (a lazy t is realised first):
 * t[..., index[i], ...] = src[i] (+= src[i]) over index's shape (index int64 with t's rank, no bigger
 * than src, nor than t outside dim; no negative index), in C order of index, so of duplicates the
 * last one along dim wins (torch's CPU kernel) or all are summed in that order, deterministic as
 * fc_index_put's accumulate. scalar: src is scatter's Scalar value (0-dim, t's dtype), checked as
 * torch checks that form. */
FcStatus fc_scatter(FcCtx *ctx, FcTensor *t, int64_t dim, FcTensor *index, FcTensor *src, bool scalar, bool accumulate,
                    FcError *err);

/* ---- first-class dims (dims.c) ----
 * functorch.dim's semantics (functorch/csrc/dim/dim.cpp, PyTorch 1.13) over tensor levels: the
 * results' values and the order of their levels (which printing shows) are functorch.dim's. A
 * tensor's positional dims (npos of them) are what its shape and ndim show; its first-class
 * levels stay where the operations put them. */

/* A new dim (size -1: unbound); named: the name was given, else it is provisional. NULL on OOM. */
FcDim *fc_dim_new(FcCtx *ctx, const char *name, bool named, int64_t size);
FcDim *fc_dim_retain(FcDim *d);
void fc_dim_release(FcDim *d);
bool fc_dim_set_name(FcDim *d, const char *name);          /* false on out-of-memory */
/* Binds d's size; what says how, for later messages ("indexing dim 0 of a tensor of shape
 * [3, 4]"), with ctx->locate's position. Binding a bound dim to another size is FC_ERR_DIM_BIND
 * naming the dim, both sizes and where each came from. */
FcStatus fc_dim_bind(FcCtx *ctx, FcDim *d, int64_t size, const char *what, FcError *err);
/* d's size, or FC_ERR_VALUE "dimension d is unbound ...". */
FcStatus fc_dim_size(const FcDim *d, int64_t *out, FcError *err);
/* A dim used as a value: its index, an int64 iota over the level d. */
FcStatus fc_dim_tensor(FcCtx *ctx, FcDim *d, FcTensor **out, FcError *err);

/* The levels of a tensor, or of a result being built: at[k] the dim of level k (borrowed) or
 * NULL for a positional level. */
typedef struct FcLevels { int n; FcDim *at[FC_MAX_DIMS]; } FcLevels;
/* A dim named in an operation: a first-class dim, or (dim NULL) positional dim pos (negative:
 * from the end). */
typedef struct FcDimRef { FcDim *dim; int64_t pos; } FcDimRef;

static inline bool fc_tensor_has_dims(const FcTensor *t) { return t->levels != NULL; }
int fc_tensor_npos(const FcTensor *t);                     /* positional dims */
void fc_tensor_levels(const FcTensor *t, FcLevels *out);
bool fc_tensor_levels_are(const FcTensor *t, const FcLevels *lv);     /* exactly lv, in order */
int fc_level_of_dim(const FcTensor *t, const FcDim *d);    /* its level, or -1 */
int fc_level_of_pos(const FcTensor *t, int p);             /* the level of positional dim p (0-based), or -1 */
/* "(i, 0)" as functorch.dim's repr shows levels (positional ones numbered from 0). */
const char *fc_levels_str(char *buf, size_t cap, const FcLevels *lv);
/* t's data with levels lv (lv->n == t->ndim): a new tensor sharing t's storage or node; without
 * first-class levels it is an ordinary tensor. */
FcStatus fc_with_levels(FcCtx *ctx, FcTensor *t, const FcLevels *lv, FcTensor **out, FcError *err);
/* The same for a reference the caller gives up: *t becomes the tensor with levels lv, t itself
 * when that reference was its only one and it had no first-class levels (a fresh result
 * relabelled: nothing is made), else a new one (and the old reference is released). On failure
 * *t is as it was. */
FcStatus fc_take_levels(FcCtx *ctx, FcTensor **t, const FcLevels *lv, FcError *err);

/* Pointwise operations: the result levels are the union of the operands' levels in order of
 * appearance, positional levels aligned from the right (NULL entries of ts are skipped); each
 * operand is then laid out over them by fc_match_levels as a positional tensor of lv->n dims
 * (size 1 where it lacks a positional level, the dim's size with stride 0 where it lacks a dim). */
FcStatus fc_levels_union(int n, FcTensor *const *ts, FcLevels *out, FcError *err);
FcStatus fc_match_levels(FcCtx *ctx, FcTensor *t, const FcLevels *to, FcTensor **out, FcError *err);
/* Other operations run batched (functorch's vmap fallback): the first-class dims of ts in the order
 * they were made (*nbatch of them, out->at[0..nbatch)); fc_batch_tensor lays t out as those dims
 * (full size) followed by its positional dims. */
FcStatus fc_levels_batch(int n, FcTensor *const *ts, FcLevels *out, int *nbatch, FcError *err);
FcStatus fc_batch_tensor(FcCtx *ctx, FcTensor *t, const FcLevels *batch, FcTensor **out, FcError *err);

/* self[ix...] when dims are involved (functorch's getitem): DIM binds a positional dim (or, used
 * twice, indexes by its iota: a diagonal), DIMPACK splits one, tensors carrying dims gather and
 * add their dims; the rest as fc_index. keys: when not NULL, ix[q] indexes level keys[q] of
 * self and the other levels are kept (t.index(dims, indices)); `...` is not allowed then. */
FcStatus fc_index_dims(FcCtx *ctx, FcTensor *self, int n, const FcIndex *ix, int nkeys, const int *keys,
                       FcTensor **out, FcError *err);
/* t.order(...): the named levels become positional dims, first of the positional ones, in that
 * order; refs are split into ngroups groups (group_len each), a group of several flattened into
 * one dim. A dim t lacks, or one named twice, is FC_ERR_VALUE. */
FcStatus fc_order(FcCtx *ctx, FcTensor *t, int n, const FcDimRef *refs, const int *group_len, int ngroups,
                  FcTensor **out, FcError *err);
/* t.expand(d...): new leading levels (stride 0); a dim t has is FC_ERR_DIM_BIND. */
FcStatus fc_expand_dims(FcCtx *ctx, FcTensor *t, int n, FcDim *const *dims, FcTensor **out, FcError *err);
/* stack(ts, new_dim, dim): the union of the operands' levels with new_dim (bound to n) inserted
 * where dim is (dim NULL: first). */
FcStatus fc_stack_dims(FcCtx *ctx, int n, FcTensor *const *ts, FcDim *new_dim, const FcDimRef *dim, FcTensor **out,
                       FcError *err);

/* a * b summed over dims sum, as a matmul (functorch's delayed multiply: a and b hold only
 * first-class dims): batch dims (in both), then a's, then b's; *levels gets the result's. The
 * operands are realised; on a backend that takes epilogues (float32, float64) the result is a
 * lazy product (FcNode.product) that the matmul computes when it is realised, with the pointwise
 * expression realised with it as its epilogue; elsewhere it is computed now. Either way it is
 * laid out (batch, a's, b's) row-major. */
FcStatus fc_contract(FcCtx *ctx, FcTensor *a, FcTensor *b, int nsum, FcDim *const *sum, FcTensor **out,
                     FcLevels *levels, FcError *err);

/* ---- creation (create.c) ---- */

/* PyTorch's arange: length ceil((end - start) / step) computed in double; values bit for bit as
 * torch's CPU kernel gives them (integers: start + i * step in int64; floats: see create.c);
 * FC_ERR_RUNTIME for step 0 or a sign that never reaches end ("upper bound and larger bound
 * inconsistent with step sign"). */
FcStatus fc_arange(FcCtx *ctx, double start, double end, double step, FcDType dt, FcDevice dev,
                   FcTensor **out, FcError *err);
FcStatus fc_linspace(FcCtx *ctx, double start, double end, int64_t steps, FcDType dt, FcDevice dev,
                     FcTensor **out, FcError *err);
FcStatus fc_eye(FcCtx *ctx, int64_t n, int64_t m, FcDType dt, FcDevice dev, FcTensor **out, FcError *err);
/* Uniform [0, 1) and standard normal, from a counter-based generator (Philox 4x32-10): value i
 * of a draw depends only on (seed, offset + i), so results do not depend on the thread count.
 * seed < 0: the context's generator (ctx->seed, advancing ctx->rng_offset); else that seed,
 * offset 0, leaving the context's generator alone. */
FcStatus fc_rand(FcCtx *ctx, FcDType dt, int ndim, const int64_t *shape, int64_t seed, FcDevice dev,
                 FcTensor **out, FcError *err);
FcStatus fc_randn(FcCtx *ctx, FcDType dt, int ndim, const int64_t *shape, int64_t seed, FcDevice dev,
                  FcTensor **out, FcError *err);

/* ---- composite operations (compose.c): built from the IR ops above ---- */

/* mean: float dtypes only (FC_ERR_RUNTIME for others, PyTorch's message). */
FcStatus fc_mean(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err);
/* max/min along one dim: values and int64 indices (first occurrence). */
FcStatus fc_max_dim(FcCtx *ctx, FcTensor *a, int64_t dim, bool keepdim, bool is_min, FcTensor **values,
                    FcTensor **indices, FcError *err);
/* max() / min(): amax / amin over the dims in dim_mask (0: all) with max()'s gradient
 * (FcNode.evenly) and messages. */
FcStatus fc_max_all(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool is_min, FcTensor **out, FcError *err);
FcStatus fc_softmax(FcCtx *ctx, FcTensor *a, int64_t dim, bool log, FcTensor **out, FcError *err);
/* var (std when take_sqrt) of float tensor x over the dims in dim_mask (0: all) with divisor
 * max(0, N - correction), as PyTorch 1.13's CPU computes it (std_var_out): a float32 or float64 x
 * whose result has one element by std_var_all_cpu (x's mean, at::mean's, as a double, then the
 * squares of each element's difference from it summed in double in memory order from 0: an
 * ordered sum, FC_SUM_SERIAL); else by WelfordOps (fc_welford_m2), m2 / divisor in double,
 * rooted in double, rounded to x's dtype (a narrow one through float32). With first-class dims: in
 * two passes in x's computation dtype. The gradient is var_backward's / std_backward's
 * (fc_grad_declare_reduce) where it can be declared; std's is 0 where std is 0 either way. */
FcStatus fc_var(FcCtx *ctx, FcTensor *x, uint64_t dim_mask, int64_t correction, bool keepdim, bool take_sqrt,
                FcTensor **out, FcError *err);
/* The vector p-norm of float tensor x over the dims in dim_mask (0: all; kept as size 1 when
 * keepdim), as PyTorch 1.13's CPU computes torch.norm (norm_out's norm_kernel_tensor_iterator_impl):
 * inf, -inf: the max, min of |x|; 0: the count of nonzeros; 1: the sum of |x| (FC_SUM_SERIAL); 2:
 * the root of the sum of squares (FC_SUM_NORM2), its gradient norm_backward's; other p: the sum of
 * |x|^p (FC_SUM_SERIAL), to the power 1 / p, each power libm's pow in the dtype. bfloat16 and
 * float16 sum as fc_reduce. */
FcStatus fc_norm(FcCtx *ctx, FcTensor *x, double p, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err);
/* The gradient of softmax (log_softmax) along dim d (wrapped) of a float32 or float64 tensor, from
 * its output y and the output's gradient g (of y's shape and dtype), as PyTorch's CPU kernels
 * compute it (_softmax_backward_data, _log_softmax_backward_data). */
FcStatus fc_softmax_backward(FcCtx *ctx, FcTensor *g, FcTensor *y, int d, bool log, FcTensor **out, FcError *err);
FcStatus fc_logsumexp(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err);
/* clamp(min=, max=): lo/hi may be NULL; tensors or wrapped scalars; promotes as PyTorch. */
FcStatus fc_clamp(FcCtx *ctx, FcTensor *a, FcTensor *lo, FcTensor *hi, FcTensor **out, FcError *err);
/* The result of an in-place operation on self (self.add_(b), self += b), given r, the same
 * operation's out-of-place result: r must have self's shape and a dtype fc_dtype_can_cast to
 * self's (else FC_ERR_RUNTIME with PyTorch's message); *out is r in self's dtype. Writing it into
 * self is the caller's. */
FcStatus fc_inplace_result(FcCtx *ctx, FcTensor *self, FcTensor *r, FcTensor **out, FcError *err);
/* A host value of a one-element tensor (realises): v.f for float dtypes, v.i otherwise.
 * FC_ERR_VALUE with PyTorch's message when numel != 1 (Tensor.item() raises ValueError). */
FcStatus fc_item(FcCtx *ctx, FcTensor *t, FcScalar *out, FcError *err);
/* Normalises a possibly negative dim against ndim (PyTorch's maybe_wrap_dim; a 0-dim tensor
 * accepts -1 and 0). */
FcStatus fc_wrap_dim(int64_t dim, int ndim, int *out, FcError *err);

/* matmul as PyTorch: 1-D x 1-D dot, 2-D, batched with broadcasting batch dims. Realises. */
FcStatus fc_matmul(FcCtx *ctx, FcTensor *a, FcTensor *b, FcTensor **out, FcError *err);

/* ---- library paths (conv.c) ---- */

/* conv2d of x (N, C, H, W) by w (K, C/groups, R, S), no bias, through the device backend's library
 * path (FcBackend.conv: cuDNN on CUDA) into a new stored tensor laid out as fmt (contiguous or
 * channels_last). pad is {top, left, bottom, right}. *out is NULL, with FC_OK, when that path does
 * not take the case (no library, a CPU tensor, gradients needed, an unsupported dtype): the caller
 * computes it itself. The arguments are checked by the caller (the stdlib's conv2d). Under
 * FC_DUMP_VERBOSE, says which path ran and why through ctx->dump. ref: NULL, or when x or w needs
 * a gradient the stdlib's lazy tdl reference of the same convolution with the result's channel dim
 * split by groups (N, groups, K / groups, Ho, Wo), never run forward: the result is then recorded
 * so that its backward asks the library for the operands' gradients and differentiates ref for one
 * the library declines (without ref, a case needing a gradient is not taken). */
FcStatus fc_conv2d_library(FcCtx *ctx, FcTensor *x, FcTensor *w, const int64_t stride[2], const int64_t pad[4],
                           const int64_t dilation[2], int64_t groups, FcMemoryFormat fmt, FcTensor *ref, FcTensor **out,
                           FcError *err);
/* conv_transpose2d of x (N, C_in, H, W) by w (C_in, C_out/groups, R, S), no bias, likewise (ref
 * too); pad is {height, width} on both sides, output_padding as PyTorch's. */
FcStatus fc_conv_transpose2d_library(FcCtx *ctx, FcTensor *x, FcTensor *w, const int64_t stride[2], const int64_t pad[2],
                                     const int64_t output_padding[2], const int64_t dilation[2], int64_t groups,
                                     FcMemoryFormat fmt, FcTensor *ref, FcTensor **out, FcError *err);
/* The library call (into *c) giving the gradient of forward convolution f's (conv2d's, or
 * conv_transpose2d's: f->transposed) input x (which 0) or weight w (which 1), reading f's operands
 * (f->x, f->w, their strides) and dy, the gradient of f's result (strides dy_strides), and writing
 * the gradient at g (strides g_strides): conv2d's are backward data and backward filter;
 * conv_transpose2d, the backward data of the convolution from its result's shape to its input's,
 * has that convolution's forward of dy and its backward filter of dy and x. Deterministic
 * engines (FC_CONV_DETERMINISTIC). */
void fc_conv_grad_call(const FcConv *f, int which, const void *dy, const int64_t dy_strides[4], void *g,
                       const int64_t g_strides[4], FcConv *c);
/* max_pool2d (max) or avg_pool2d of x (N, C, H, W), no indices nor divisor_override, likewise:
 * out_size is the caller's output size (ceil_mode's included); pad on both sides. A library
 * takes only the cases whose windows it has (dilation 1, no window added by ceil_mode). */
FcStatus fc_pool2d_library(FcCtx *ctx, FcTensor *x, bool max, const int64_t kernel[2], const int64_t stride[2],
                           const int64_t pad[2], const int64_t dilation[2], bool count_include_pad,
                           const int64_t out_size[2], FcMemoryFormat fmt, FcTensor **out, FcError *err);
/* batch_norm of x (N, C, H, W) with weight, bias (C each; NULL: not taken), likewise. Training:
 * mean and var are the running statistics (NULL: not taken), out[0] the result and out[1], out[2]
 * their new values (momentum, the unbiased variance), which the caller stores; else var is
 * 1 / sqrt(running_var + eps) and out[1], out[2] are NULL. All NULL when not taken. */
FcStatus fc_batch_norm_library(FcCtx *ctx, FcTensor *x, FcTensor *weight, FcTensor *bias, FcTensor *mean,
                               FcTensor *var, bool training, double momentum, double eps, FcMemoryFormat fmt,
                               FcTensor *out[3], FcError *err);

/* ---- gradients (autograd.c) ----
 * Reverse mode over the IR. A storage whose contents need a gradient holds a record (FcGradRec):
 * a leaf (requires_grad_), or a write of an IR expression into it (the realisation of a lazy
 * tensor, or fc_assign / fc_store_scattered: copies, cat, setitem, index_put, scatter_add), each
 * write linked to the record of the contents it overwrote. A lazy tensor needs a gradient when its
 * DAG loads such a storage. backward walks the DAGs from the output: each node's vector-Jacobian
 * product (one rule per FcOp) is built as lazy IR over the node's levels, and the VJP of a LOAD is
 * a scatter-add of its cotangent into a gradient buffer of the storage it reads (a kernel with a
 * scattered accumulating store: one thread, loop order, the same bits every run). Records are
 * processed newest first, so a write's cotangent is complete before it flows on. */

typedef struct FcGradRec FcGradRec;
void fc_grad_rec_release(FcGradRec *r);

/* Gradient mode of the calling thread (torch.set_grad_enabled): while off, new IR nodes carry no
 * gradient and writes are not recorded. */
void fc_set_grad_enabled(bool on);
bool fc_is_grad_enabled(void);
/* Whether t's value needs a gradient (it reads a storage with a record, through nodes made with
 * gradients on). */
bool fc_requires_grad(FcTensor *t);
/* requires_grad_(on): t (realised first) becomes a leaf whose storage's contents need a gradient;
 * off: only for a leaf (else FC_ERR_RUNTIME, PyTorch's message). */
FcStatus fc_set_requires_grad(FcCtx *ctx, FcTensor *t, bool on, FcError *err);
/* A leaf: no gradient needed, or a stored tensor viewing its leaf storage with the leaf's geometry. */
bool fc_is_leaf(FcTensor *t);
/* The accumulated gradient of a leaf t, or of a non-leaf that retains it (a new reference), or
 * NULL. set: replaces it (g NULL: clears). */
FcTensor *fc_grad_of(FcTensor *t);
FcStatus fc_grad_set(FcCtx *ctx, FcTensor *t, FcTensor *g, FcError *err);
/* PyTorch's retain_grad(): a non-leaf t's .grad gets what every later backward (and grad())
 * computes for it, accumulating; nothing for a leaf; FC_ERR_RUNTIME (PyTorch's message) for a
 * tensor that needs no gradient, or one with first-class dims. After an in-place write into t it
 * is the new value's gradient, as PyTorch moves its hook. retains: whether it was called on t. */
FcStatus fc_retain_grad(FcCtx *ctx, FcTensor *t, FcError *err);
bool fc_retains_grad(const FcTensor *t);
/* Drops a reference to a retained gradient's holder (FcNode.retain, FcTensor.retained). */
void fc_retained_release(struct FcRetained *b);
/* A composite's derivative declared as PyTorch's derivatives.yaml gives it, where differentiating
 * its IR would round otherwise: t, the lazy float32 or float64 result just made (its node held by
 * it alone) from the operands ops[0..n) (of t's dtype, broadcast against t, no first-class dims),
 * is differentiated by the rule (a backward takes the rule's cotangents to the operands and none
 * through t's IR). k: the rule's number. Declares nothing where those conditions do not hold (the
 * IR is differentiated then) or no operand needs a gradient.
 *   LERP      ops self, end (k weight): self grad * (1 - k), end grad * k; with a third op
 *             weight: self grad * (1 - weight), end grad * weight, weight grad * (end - self)
 *   ADDCMUL   ops self, t1, t2 (k value): grad, grad * (t2 * k), grad * (t1 * k)
 *   ADDCDIV   ops self, t1, t2 (k value): grad, grad * (k / t2), -grad * (k * t1 / (t2 * t2))
 *   SUB       ops self, other (k alpha): grad, -grad * k (sub with an alpha, an FMA)
 *   SOFTMAX, LOG_SOFTMAX   op self (k the dim): fc_softmax_backward
 *   reductions of op self (fc_grad_declare_reduce):
 *   LOGSUMEXP grad * exp(self - result)
 *   VAR, STD  (k the divisor N - correction) var_backward, std_backward
 *   NORM      (k p: finite, not 0) norm_backward (norm_cotangent) */
typedef enum FcVjpRule {
    FC_VJP_LERP, FC_VJP_ADDCMUL, FC_VJP_ADDCDIV, FC_VJP_SUB, FC_VJP_SOFTMAX, FC_VJP_LOG_SOFTMAX, FC_VJP_LOGSUMEXP,
    FC_VJP_VAR, FC_VJP_STD, FC_VJP_NORM
} FcVjpRule;
void fc_grad_declare(FcTensor *t, FcVjpRule rule, int n, FcTensor *const *ops, double k);
/* The same for a reduction t of x over the dims in dim_mask (0: all; kept as size 1 when keepdim). */
void fc_grad_declare_reduce(FcTensor *t, FcVjpRule rule, FcTensor *x, uint64_t dim_mask, bool keepdim, double k);
/* Frees a node's declared derivative (FcNode.vjp). */
void fc_vjp_free(struct FcVjp *v);
/* The name of the operation that made t ("MulBackward0"), or NULL for a leaf or no gradient. */
const char *fc_grad_fn_name(FcTensor *t, char *buf, size_t cap);
/* Names the operation that made t, a new result that needs a gradient (name: a static string,
 * PyTorch's, "SortBackward0"), where its IR would name another (a gather): the name holds until
 * t's value is written over (realising t keeps it). */
void fc_grad_name(FcTensor *t, const char *name);
/* A tensor sharing t's memory whose value needs no gradient (t realised first). */
FcStatus fc_detach(FcCtx *ctx, FcTensor *t, FcTensor **out, FcError *err);
/* Backward from outputs[k] with cotangents grads[k] (NULL: ones, only for a one-element output;
 * else PyTorch's message). ninputs == 0: accumulates into the leaves' .grad; else (autograd.grad)
 * *results[i] gets the gradient of inputs[i] (stored) and no .grad is touched. retain_graph: the
 * records stay usable for another backward. */
FcStatus fc_backward(FcCtx *ctx, int noutputs, FcTensor *const *outputs, FcTensor *const *grads, int ninputs,
                     FcTensor *const *inputs, FcTensor **results, bool retain_graph, FcError *err);
/* Frees every record ctx made (at fc_ctx_free: records can hold each other's storages in a cycle). */
void fc_grad_free_all(FcCtx *ctx);

#endif
