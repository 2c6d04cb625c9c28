/* cuda_cudnn.h — what cuda_cudnn.c shares with cuda_backend.c and the tests: the subset of cuDNN 9's
 * graph (backend) API that tdl calls, re-declared (no cuDNN header is needed to build), the table
 * it is loaded into, and the convolution path (descriptors, the plan cache, execution).
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
    X(TYPE_DATA_TYPE, 1)                                                                           \
    X(TYPE_INT64, 3)                                                                               \
    X(TYPE_FLOAT, 4)                                                                               \
    X(TYPE_DOUBLE, 5)                                                                              \
    X(TYPE_VOID_PTR, 6)                                                                            \
    X(TYPE_CONVOLUTION_MODE, 7)                                                                    \
    X(TYPE_HEUR_MODE, 8)                                                                           \
    X(TYPE_NUMERICAL_NOTE, 11)                                                                     \
    X(TYPE_BACKEND_DESCRIPTOR, 15)                                                                 \
    X(TYPE_BEHAVIOR_NOTE, 19)                                                                      \
    X(BACKEND_CONVOLUTION_DESCRIPTOR, 1)                                                           \
    X(BACKEND_ENGINE_DESCRIPTOR, 2)                                                                \
    X(BACKEND_ENGINECFG_DESCRIPTOR, 3)                                                             \
    X(BACKEND_ENGINEHEUR_DESCRIPTOR, 4)                                                            \
    X(BACKEND_EXECUTION_PLAN_DESCRIPTOR, 5)                                                        \
    X(BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, 10)                                        \
    X(BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, 12)                                  \
    X(BACKEND_OPERATIONGRAPH_DESCRIPTOR, 15)                                                       \
    X(BACKEND_VARIANT_PACK_DESCRIPTOR, 16)                                                         \
    X(BACKEND_TENSOR_DESCRIPTOR, 17)                                                               \
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
    X(ATTR_OPERATIONGRAPH_HANDLE, 800)                                                             \
    X(ATTR_OPERATIONGRAPH_OPS, 801)                                                                \
    X(ATTR_TENSOR_BYTE_ALIGNMENT, 900)                                                             \
    X(ATTR_TENSOR_DATA_TYPE, 901)                                                                  \
    X(ATTR_TENSOR_DIMENSIONS, 902)                                                                 \
    X(ATTR_TENSOR_STRIDES, 903)                                                                    \
    X(ATTR_TENSOR_UNIQUE_ID, 906)                                                                  \
    X(ATTR_VARIANT_PACK_UNIQUE_IDS, 1000)                                                          \
    X(ATTR_VARIANT_PACK_DATA_POINTERS, 1001)                                                       \
    X(ATTR_VARIANT_PACK_WORKSPACE, 1003)                                                           \
    X(ATTR_ENGINE_GLOBAL_INDEX, 1301)                                                              \
    X(ATTR_ENGINE_NUMERICAL_NOTE, 1303)                                                            \
    X(ATTR_ENGINE_BEHAVIOR_NOTE, 1305)                                                             \
    X(NUMERICAL_NOTE_TENSOR_CORE, 0)                                                               \
    X(NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, 1)                                                       \
    X(NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION, 2)                                               \
    X(NUMERICAL_NOTE_NONDETERMINISTIC, 4)                                                          \
    X(NUMERICAL_NOTE_TYPE_COUNT, 10)                                                               \
    X(BEHAVIOR_NOTE_TYPE_COUNT, 5)                                                                 \
    X(HEUR_MODE_B, 1)                                                                              \
    X(HEUR_MODE_FALLBACK, 2)                                                                       \
    X(HEUR_MODE_A, 3)

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

/* ---- the convolution forward ---- */

/* What decides a plan: shapes, strides, alignments, dtype and options. Plain data, compared and
 * hashed as bytes (made with memset 0 first). */
typedef struct CudnnConvKey {
    int32_t dtype;              /* FcDType */
    int32_t flags;              /* FC_CONV_* of FcConv.flags that change the choice */
    int32_t transposed, unused_;
    int64_t x_dim[4], x_str[4], w_dim[4], w_str[4], y_dim[4], y_str[4];
    int64_t pre[2], post[2], stride[2], dil[2], groups;
    int64_t align[3];           /* byte alignment of x, w, y (16, 8 or 4...) */
} CudnnConvKey;

/* The plan key of c (its pointers' alignments included). */
void fc_cudnn_conv_key(const FcConv *c, CudnnConvKey *key);
/* One convolution's operation graph (tensors 'x', 'w', 'y'), finalised, with the descriptors it
 * is made of (kept alive while it is): a convolution forward, or for a transposed convolution the
 * forward's backward data (x its DY, y its DX). */
typedef struct CudnnGraph {
    CudnnDesc parts[5];         /* x, w, y, the convolution, the operation */
    CudnnDesc graph;
} CudnnGraph;
/* Builds the graph of key on handle h (NULL: none, which cuDNN allows for building a graph but
 * not for heuristics or plans). FC_OK with *g filled, else FC_ERR_RUNTIME with the failing call
 * and cuDNN's reason in err (and nothing left to free). */
FcStatus fc_cudnn_conv_graph(const CudnnLib *L, const CudnnConvKey *key, CudnnHandle h, CudnnGraph *g, FcError *err);
void fc_cudnn_graph_free(const CudnnLib *L, CudnnGraph *g);     /* a zeroed g is fine */

/* One device's cuDNN state: the handle and the plan cache (cuda_backend.c owns one per device). */
typedef struct CudnnState CudnnState;
void fc_cudnn_state_free(CudnnState *s);                 /* NULL is fine */
/* Runs c through cuDNN on backend be (its caching allocator gives the workspace), creating *s on
 * first use. c->taken false with c->note saying why when cuDNN is not used (not loaded, no
 * engine for the case): the caller falls back. An error only when cuDNN took the case and failed
 * running it. The CUDA context must be current. */
FcStatus fc_cudnn_conv(CudnnState **s, FcBackend *be, FcConv *c, FcError *err);
/* The number of plans s holds, and of cache hits, for the tests. */
void fc_cudnn_cache_counts(const CudnnState *s, int *plans, int *hits);

#endif
