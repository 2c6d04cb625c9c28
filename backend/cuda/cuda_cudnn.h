/* cuda_cudnn.h — what cuda_cudnn.c shares with cuda_backend.c and the tests: the subset of cuDNN 9's
 * graph (backend) API that tdl calls, re-declared (no cuDNN header is needed to build), the table
 * it is loaded into, and the path of the operations it runs (convolutions forward and backward,
 * pooling, batch norm: descriptors, the plan cache, execution).
 *
 * Private to backend/cuda/ and its tests (kept apart from cuda_internal.h so that the driver's and
 * NVRTC's declarations and cuDNN's change separately). tests/cudnn_header_check.c compiles these
 * declarations against the installed cudnn_graph.h, where there is one, and fails to build when
 * an enum value or a prototype differs: it defines TDL_CUDNN_REAL_TYPES and the real types first.
 * Depends on backend.h (FcConv, FcBackend) and libc. */
#ifndef TDL_CUDA_CUDNN_H
#define TDL_CUDA_CUDNN_H

#include "backend.h"

/* cuDNN's types: enums are int-sized, descriptors and handles opaque pointers. */
#ifndef TDL_CUDNN_REAL_TYPES
typedef int CudnnStatus;
typedef void *CudnnDesc;
typedef struct CudnnContext *CudnnHandle;
typedef int CudnnDescType;
typedef int CudnnAttrName;
typedef int CudnnAttrType;
#endif

/* The enum values we use, as cudnn_graph.h names them less the CUDNN_ prefix (X(name, value)):
 * the header check compares each with the real one. */
#define TDL_CUDNN_ENUMS(X)                                                                         \
    X(STATUS_SUCCESS, 0)                                                                           \
    X(STATUS_NOT_SUPPORTED, 3000)                                                                  \
    X(DATA_FLOAT, 0)                                                                               \
    X(DATA_DOUBLE, 1)                                                                              \
    X(CROSS_CORRELATION, 1)                                                                        \
    X(TYPE_HANDLE, 0)                                                                              \
    X(TYPE_BOOLEAN, 2)                                                                             \
    X(TYPE_DATA_TYPE, 1)                                                                           \
    X(TYPE_INT64, 3)                                                                               \
    X(TYPE_FLOAT, 4)                                                                               \
    X(TYPE_DOUBLE, 5)                                                                              \
    X(TYPE_VOID_PTR, 6)                                                                            \
    X(TYPE_CONVOLUTION_MODE, 7)                                                                    \
    X(TYPE_HEUR_MODE, 8)                                                                           \
    X(TYPE_NUMERICAL_NOTE, 11)                                                                     \
    X(TYPE_BACKEND_DESCRIPTOR, 15)                                                                 \
    X(TYPE_NAN_PROPOGATION, 10)                                                                    \
    X(TYPE_BEHAVIOR_NOTE, 19)                                                                      \
    X(TYPE_RESAMPLE_MODE, 21)                                                                      \
    X(TYPE_PADDING_MODE, 22)                                                                       \
    X(TYPE_NORM_MODE, 27)                                                                          \
    X(TYPE_NORM_FWD_PHASE, 28)                                                                     \
    X(BACKEND_CONVOLUTION_DESCRIPTOR, 1)                                                           \
    X(BACKEND_ENGINE_DESCRIPTOR, 2)                                                                \
    X(BACKEND_ENGINECFG_DESCRIPTOR, 3)                                                             \
    X(BACKEND_ENGINEHEUR_DESCRIPTOR, 4)                                                            \
    X(BACKEND_EXECUTION_PLAN_DESCRIPTOR, 5)                                                        \
    X(BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, 10)                                        \
    X(BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, 11)                                \
    X(BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, 12)                                  \
    X(BACKEND_OPERATIONGRAPH_DESCRIPTOR, 15)                                                       \
    X(BACKEND_VARIANT_PACK_DESCRIPTOR, 16)                                                         \
    X(BACKEND_TENSOR_DESCRIPTOR, 17)                                                               \
    X(BACKEND_RESAMPLE_DESCRIPTOR, 24)                                                             \
    X(BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR, 25)                                               \
    X(BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, 29)                                               \
    X(ATTR_CONVOLUTION_COMP_TYPE, 100)                                                             \
    X(ATTR_CONVOLUTION_CONV_MODE, 101)                                                             \
    X(ATTR_CONVOLUTION_DILATIONS, 102)                                                             \
    X(ATTR_CONVOLUTION_FILTER_STRIDES, 103)                                                        \
    X(ATTR_CONVOLUTION_POST_PADDINGS, 104)                                                         \
    X(ATTR_CONVOLUTION_PRE_PADDINGS, 105)                                                          \
    X(ATTR_CONVOLUTION_SPATIAL_DIMS, 106)                                                          \
    X(ATTR_ENGINEHEUR_MODE, 200)                                                                   \
    X(ATTR_ENGINEHEUR_OPERATION_GRAPH, 201)                                                        \
    X(ATTR_ENGINEHEUR_RESULTS, 202)                                                                \
    X(ATTR_ENGINECFG_ENGINE, 300)                                                                  \
    X(ATTR_EXECUTION_PLAN_HANDLE, 400)                                                             \
    X(ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 401)                                                      \
    X(ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 402)                                                     \
    X(ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 700)                                               \
    X(ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 701)                                                \
    X(ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, 702)                                           \
    X(ATTR_OPERATION_CONVOLUTION_FORWARD_W, 703)                                                   \
    X(ATTR_OPERATION_CONVOLUTION_FORWARD_X, 704)                                                   \
    X(ATTR_OPERATION_CONVOLUTION_FORWARD_Y, 705)                                                   \
    X(ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, 706)                                              \
    X(ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, 707)                                               \
    X(ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, 708)                                          \
    X(ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, 709)                                                  \
    X(ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, 710)                                                 \
    X(ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, 711)                                                 \
    X(ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, 712)                                            \
    X(ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, 713)                                             \
    X(ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, 714)                                        \
    X(ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, 715)                                               \
    X(ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, 716)                                                \
    X(ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, 717)                                               \
    X(ATTR_OPERATIONGRAPH_HANDLE, 800)                                                             \
    X(ATTR_OPERATIONGRAPH_OPS, 801)                                                                \
    X(ATTR_TENSOR_BYTE_ALIGNMENT, 900)                                                             \
    X(ATTR_TENSOR_DATA_TYPE, 901)                                                                  \
    X(ATTR_TENSOR_DIMENSIONS, 902)                                                                 \
    X(ATTR_TENSOR_STRIDES, 903)                                                                    \
    X(ATTR_TENSOR_UNIQUE_ID, 906)                                                                  \
    X(ATTR_TENSOR_IS_BY_VALUE, 908)                                                                \
    X(ATTR_VARIANT_PACK_UNIQUE_IDS, 1000)                                                          \
    X(ATTR_VARIANT_PACK_DATA_POINTERS, 1001)                                                       \
    X(ATTR_VARIANT_PACK_WORKSPACE, 1003)                                                           \
    X(ATTR_ENGINE_GLOBAL_INDEX, 1301)                                                              \
    X(ATTR_ENGINE_NUMERICAL_NOTE, 1303)                                                            \
    X(ATTR_ENGINE_BEHAVIOR_NOTE, 1305)                                                             \
    X(ATTR_RESAMPLE_MODE, 1700)                                                                    \
    X(ATTR_RESAMPLE_COMP_TYPE, 1701)                                                               \
    X(ATTR_RESAMPLE_SPATIAL_DIMS, 1702)                                                            \
    X(ATTR_RESAMPLE_POST_PADDINGS, 1703)                                                           \
    X(ATTR_RESAMPLE_PRE_PADDINGS, 1704)                                                            \
    X(ATTR_RESAMPLE_STRIDES, 1705)                                                                 \
    X(ATTR_RESAMPLE_WINDOW_DIMS, 1706)                                                             \
    X(ATTR_RESAMPLE_NAN_PROPAGATION, 1707)                                                         \
    X(ATTR_RESAMPLE_PADDING_MODE, 1708)                                                            \
    X(ATTR_OPERATION_RESAMPLE_FWD_XDESC, 1710)                                                     \
    X(ATTR_OPERATION_RESAMPLE_FWD_YDESC, 1711)                                                     \
    X(ATTR_OPERATION_RESAMPLE_FWD_DESC, 1716)                                                      \
    X(ATTR_OPERATION_NORM_FWD_MODE, 2000)                                                          \
    X(ATTR_OPERATION_NORM_FWD_PHASE, 2001)                                                         \
    X(ATTR_OPERATION_NORM_FWD_XDESC, 2002)                                                         \
    X(ATTR_OPERATION_NORM_FWD_MEAN_DESC, 2003)                                                     \
    X(ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, 2004)                                             \
    X(ATTR_OPERATION_NORM_FWD_SCALE_DESC, 2005)                                                    \
    X(ATTR_OPERATION_NORM_FWD_BIAS_DESC, 2006)                                                     \
    X(ATTR_OPERATION_NORM_FWD_EPSILON_DESC, 2007)                                                  \
    X(ATTR_OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC, 2008)                                           \
    X(ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC, 2009)                                       \
    X(ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC, 2010)                                        \
    X(ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC, 2011)                                      \
    X(ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC, 2012)                                       \
    X(ATTR_OPERATION_NORM_FWD_YDESC, 2013)                                                         \
    X(NUMERICAL_NOTE_TENSOR_CORE, 0)                                                               \
    X(NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, 1)                                                       \
    X(NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION, 2)                                               \
    X(NUMERICAL_NOTE_NONDETERMINISTIC, 4)                                                          \
    X(NUMERICAL_NOTE_TYPE_COUNT, 10)                                                               \
    X(BEHAVIOR_NOTE_TYPE_COUNT, 5)                                                                 \
    X(HEUR_MODE_B, 1)                                                                              \
    X(HEUR_MODE_FALLBACK, 2)                                                                       \
    X(HEUR_MODE_A, 3)                                                                              \
    X(PROPAGATE_NAN, 1)                                                                            \
    X(RESAMPLE_AVGPOOL_INCLUDE_PADDING, 2)                                                         \
    X(RESAMPLE_MAXPOOL, 3)                                                                         \
    X(RESAMPLE_AVGPOOL_EXCLUDE_PADDING, 4)                                                         \
    X(ZERO_PAD, 0)                                                                                 \
    X(NEG_INF_PAD, 1)                                                                              \
    X(BATCH_NORM, 2)                                                                               \
    X(NORM_FWD_INFERENCE, 0)                                                                       \
    X(NORM_FWD_TRAINING, 1)

#define TDL_CUDNN_ENUM_(name, value) CDN_##name = value,
enum { TDL_CUDNN_ENUMS(TDL_CUDNN_ENUM_) };
#undef TDL_CUDNN_ENUM_

/* The entry points (cudnn_graph.h's names less the cudnn prefix), X(ret, name, params). */
#define TDL_CUDNN_FUNCS(X)                                                                         \
    X(size_t, GetVersion, (void))                                                                  \
    X(const char *, GetErrorString, (CudnnStatus s))                                               \
    X(void, GetLastErrorString, (char *message, size_t max_size))                                  \
    X(CudnnStatus, Create, (CudnnHandle * h))                                                      \
    X(CudnnStatus, Destroy, (CudnnHandle h))                                                       \
    X(CudnnStatus, BackendCreateDescriptor, (CudnnDescType t, CudnnDesc * d))                      \
    X(CudnnStatus, BackendDestroyDescriptor, (CudnnDesc d))                                        \
    X(CudnnStatus, BackendFinalize, (CudnnDesc d))                                                 \
    X(CudnnStatus, BackendSetAttribute,                                                            \
      (CudnnDesc d, CudnnAttrName name, CudnnAttrType type, int64_t n, const void *values))        \
    X(CudnnStatus, BackendGetAttribute,                                                            \
      (CudnnDesc const d, CudnnAttrName name, CudnnAttrType type, int64_t requested, int64_t *n, void *values)) \
    X(CudnnStatus, BackendExecute, (CudnnHandle h, CudnnDesc plan, CudnnDesc pack))

#define TDL_CUDNN_FIELD_(ret, name, params) ret(*name) params;
typedef struct CudnnLib {
    char path[512];             /* the library that was opened */
    size_t version;             /* cudnnGetVersion: 91900 for 9.19.0 */
    TDL_CUDNN_FUNCS(TDL_CUDNN_FIELD_)
} CudnnLib;
#undef TDL_CUDNN_FIELD_

/* cuDNN's table, loaded once per process (pthread_once), or NULL with *why a sentence: "turned
 * off (TDL_CUDNN=0)", "libcudnn.so.9 not found (tried ...)", "... is too old (it has no ...)".
 * Tried in turn: $TDL_CUDNN_PATH (the library, or a folder holding it), libcudnn.so.9 on the
 * loader's path, the pip wheel nvidia-cudnn-cu13/cu12 (site-packages/nvidia/cudnn/lib under
 * $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local and /usr/local/lib, /usr/lib), then $CUDA_HOME, $CUDA_PATH
 * and /usr/local/cuda (lib64, lib). */
const CudnnLib *fc_cudnn_lib(const char **why);
/* The loading itself, not cached: off is $TDL_CUDNN ("0" or "off": not loaded), path
 * $TDL_CUDNN_PATH (the library, or a folder holding libcudnn.so.9; NULL or "": the search above).
 * True with *lib filled (its handle in *dl, for dlclose), else false with why. For fc_cudnn_lib
 * and the tests. */
bool fc_cudnn_open(const char *off, const char *path, CudnnLib *lib, void **dl, char *why, size_t cap);

/* cuDNN's failure as "CUDNN_STATUS_BAD_PARAM (cudnnBackendFinalize(tensor x)): <last error>". */
void fc_cudnn_status_str(const CudnnLib *L, CudnnStatus s, const char *call, char *buf, size_t cap);

/* ---- operation graphs: convolutions (forward, backward data, backward filter), pooling, batch norm ---- */

/* What decides a plan: the operation, shapes, strides, alignments, dtype and options. Plain data,
 * compared and hashed as bytes (made with memset 0 first). One key for every operation, so that
 * one cache holds them all and two operations on the same shapes never share a plan. */
typedef struct CudnnKey {
    int32_t op;                 /* FcConvOp; conv_transpose2d (FcConv.transposed) is FC_CONV_BACKWARD_DATA */
    int32_t dtype;              /* FcDType */
    int32_t flags;              /* FC_CONV_* of FcConv.flags that change the choice */
    int32_t mode;               /* pooling: CDN_RESAMPLE_*; batch norm: CDN_NORM_FWD_* */
    /* the forward convolution's x, w, y whatever the op (conv_transpose2d's y is x here);
     * pooling: x, y; batch norm: x, y, and w the per-channel tensors' (1, C, 1, 1) */
    int64_t x_dim[4], x_str[4], w_dim[4], w_str[4], y_dim[4], y_str[4];
    int64_t pre[2], post[2], stride[2], dil[2], groups;
    int64_t window[2];          /* pooling */
    int64_t align[3];           /* byte alignment of x, w (batch norm: the least of the per-channel ones), y */
} CudnnKey;

/* The tensors of a graph, by role; each one's unique id in the variant pack is its slot + 1. */
enum {
    CDN_T_X, CDN_T_W, CDN_T_Y,
    CDN_T_SCALE, CDN_T_BIAS, CDN_T_MEAN, CDN_T_INVSTD, CDN_T_EPS, CDN_T_FACTOR,
    CDN_T_RUN_MEAN, CDN_T_RUN_VAR, CDN_T_NEW_MEAN, CDN_T_NEW_VAR,
    CDN_T_COUNT
};

/* The plan key of c (its pointers' alignments included). Gradients (backward data and filter
 * of a forward convolution) always ask for deterministic engines: tdl's gradients are the same
 * bits every run (docs/architecture.md, "Gradients"). */
void fc_cudnn_key(const FcConv *c, CudnnKey *key);
/* One operation's graph, finalised, with the descriptors it is made of (kept alive while it is):
 * the tensors by role (NULL where the operation has none), the convolution or resample
 * descriptor (batch norm: none), the operation. */
typedef struct CudnnGraph {
    CudnnDesc t[CDN_T_COUNT];
    CudnnDesc aux, op;
    CudnnDesc graph;
} CudnnGraph;
/* Builds the graph of key on handle h (NULL: none, which cuDNN allows for building a graph but
 * not for heuristics or plans). FC_OK with *g filled, else FC_ERR_RUNTIME with the failing call
 * and cuDNN's reason in err (and nothing left to free). */
FcStatus fc_cudnn_graph(const CudnnLib *L, const CudnnKey *key, CudnnHandle h, CudnnGraph *g, FcError *err);
void fc_cudnn_graph_free(const CudnnLib *L, CudnnGraph *g);     /* a zeroed g is fine */

/* One device's cuDNN state: the handle and the plan cache (cuda_backend.c owns one per device). */
typedef struct CudnnState CudnnState;
void fc_cudnn_state_free(CudnnState *s);                 /* NULL is fine */
/* Runs c (any FcConvOp) through cuDNN on backend be (its caching allocator gives the workspace),
 * creating *s on first use. c->taken false with c->note saying why when cuDNN is not used (not loaded, no
 * engine for the case): the caller falls back. An error only when cuDNN took the case and failed
 * running it. The CUDA context must be current. */
FcStatus fc_cudnn_conv(CudnnState **s, FcBackend *be, FcConv *c, FcError *err);
/* The number of plans s holds, and of cache hits, for the tests. */
void fc_cudnn_cache_counts(const CudnnState *s, int *plans, int *hits);

#endif
