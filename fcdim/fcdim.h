/* fcdim.h — tensors for tdl: dtypes and type promotion, strided views of memory, and the pieces
 * that work on materialised data (NumPy .npy/.npz files, PyTorch-style printing).
 *
 * This is the one header other folders may include from fcdim/. It knows nothing of the
 * interpreter or the syntax tree. The tensor value with first-class-dim levels and the loop-free
 * IR will be declared here too as they land (see docs/architecture.md).
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
    FC_DTYPE__COUNT
} FcDType;

size_t fc_dtype_size(FcDType t);                 /* bytes per element */
const char *fc_dtype_name(FcDType t);            /* "float32", "int64", "bool", ... */
bool fc_dtype_is_float(FcDType t);
bool fc_dtype_is_int(FcDType t);                 /* int32, int64 (not bool) */
bool fc_dtype_from_name(const char *name, FcDType *out);

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
/* The dtype of true division a / b: result_type, then float32 if that is not a float. */
FcDType fc_div_result_type(const FcOperand *ops, int n);

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

int64_t fc_view_numel(const FcView *v);
/* Row-major (C order) contiguous strides for shape. */
void fc_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);

/* ---- errors ---- */

typedef enum FcStatus { FC_OK = 0, FC_ERR_IO, FC_ERR_VALUE, FC_ERR_NOMEM } FcStatus;
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

#endif
