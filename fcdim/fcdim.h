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

#endif
