/* cudnn_header_check.c — compiles backend/cuda/cuda_cudnn.h's declarations of cuDNN against the
 * installed cudnn_graph.h: every enum value we use must equal the header's, every entry point's
 * prototype must be the header's, and the types we stand in for its enums must have their size.
 * A difference fails the build of the test runner (static assertions), not a test.
 *
 * The Makefile defines TDL_CUDNN_INCLUDE (the header's folder, also on the include path) where it
 * finds cudnn_graph.h; elsewhere this file checks nothing and says so (test_cudnn.c reports it). */
#include "tests.h"

#if defined(TDL_CUDNN_INCLUDE)
/* We call the graph API's HANDLE attributes on purpose (cuda_cudnn.c says why); the header marks
 * them deprecated. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn_graph.h>

#define TDL_CUDNN_REAL_TYPES
typedef cudnnStatus_t CudnnStatus;
typedef cudnnBackendDescriptor_t CudnnDesc;
typedef cudnnHandle_t CudnnHandle;
typedef cudnnBackendDescriptorType_t CudnnDescType;
typedef cudnnBackendAttributeName_t CudnnAttrName;
typedef cudnnBackendAttributeType_t CudnnAttrType;
#include "cuda/cuda_cudnn.h"

/* cuda_cudnn.c, built without the header, passes these as int */
_Static_assert(sizeof(cudnnStatus_t) == sizeof(int), "cudnnStatus_t is not int-sized");
_Static_assert(sizeof(cudnnBackendDescriptorType_t) == sizeof(int), "cudnnBackendDescriptorType_t is not int-sized");
_Static_assert(sizeof(cudnnBackendAttributeName_t) == sizeof(int), "cudnnBackendAttributeName_t is not int-sized");
_Static_assert(sizeof(cudnnBackendAttributeType_t) == sizeof(int), "cudnnBackendAttributeType_t is not int-sized");
_Static_assert(sizeof(cudnnDataType_t) == sizeof(int), "cudnnDataType_t is not int-sized");
_Static_assert(sizeof(cudnnConvolutionMode_t) == sizeof(int), "cudnnConvolutionMode_t is not int-sized");
_Static_assert(sizeof(cudnnBackendHeurMode_t) == sizeof(int), "cudnnBackendHeurMode_t is not int-sized");
_Static_assert(sizeof(cudnnBackendNumericalNote_t) == sizeof(int), "cudnnBackendNumericalNote_t is not int-sized");

#define CHECK_ENUM(name, value) _Static_assert((long long)CDN_##name == (long long)CUDNN_##name, "CUDNN_" #name " differs from cudnn_graph.h");
TDL_CUDNN_ENUMS(CHECK_ENUM)

#define CHECK_FUNC(ret, name, params)                                                              \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((CudnnLib *)0)->name), __typeof__(&cudnn##name)), \
                   "cudnn" #name "'s prototype differs from cudnn_graph.h");
TDL_CUDNN_FUNCS(CHECK_FUNC)

const char *cudnn_header_checked(void)
{
    return TDL_CUDNN_INCLUDE;
}
#else
const char *cudnn_header_checked(void)
{
    return NULL;
}
#endif
