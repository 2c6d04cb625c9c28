/* backend.h — the one interface every backend implements: allocate and free device memory, copy
 * between host and device, run a scheduled kernel (fcdim's FcKernel), run a matrix product.
 *
 * fcdim/ calls backends only through this table (after ggml-backend: op functions build graphs,
 * backends execute them). A backend sees fcdim's IR and kernel types, never the interpreter.
 * Nothing here prints, exits or aborts: failures are an FcStatus with a message in FcError. */
#ifndef TDL_BACKEND_H
#define TDL_BACKEND_H

#include "fcdim.h"

struct FcBackend {
    const char *name;                   /* "cpu", "cuda" */
    FcDeviceType device;
    /* nbytes may be 0 (a valid, unique pointer is still returned). Memory is aligned to 64 bytes. */
    FcStatus (*alloc)(FcBackend *be, size_t nbytes, void **out, FcError *err);
    void (*free)(FcBackend *be, void *p);                       /* NULL is fine */
    /* Copies between host memory and this backend's memory (for cpu both are memcpy). */
    FcStatus (*to_host)(FcBackend *be, void *dst, const void *src, size_t nbytes, FcError *err);
    FcStatus (*from_host)(FcBackend *be, void *dst, const void *src, size_t nbytes, FcError *err);
    /* Runs a kernel to completion. Errors found in the data (an integer division by zero, a
     * gathered index out of range) are FC_ERR_RUNTIME / FC_ERR_INDEX with PyTorch's message. */
    FcStatus (*run)(FcBackend *be, const FcKernel *k, FcError *err);
    FcStatus (*matmul)(FcBackend *be, const FcMatmul *m, FcError *err);
    void (*destroy)(FcBackend *be);     /* frees the backend itself (threads joined) */
};

/* The CPU backend (backend/cpu/): vectorised chunked loops on nthreads threads (a pool started on
 * first use). NULL on out-of-memory. */
FcBackend *fc_cpu_backend_new(int nthreads);

#endif
