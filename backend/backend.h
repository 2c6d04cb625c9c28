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
    /* What the planner and the scheduler ask of this backend: the vector loop it takes (from its
     * thresholds), its chunk width and lanes, the name a refused kernel's message starts with. */
    const FcTarget *target;
    /* Whether this backend computes instruction in (whose a has dtype a_dtype): FC_OK, else
     * FC_ERR_TYPE with the message it would refuse the kernel with ("cpu kernel: sqrt is not
     * supported for int64"). The scheduler asks it of every instruction of a kernel before the
     * kernel is kept or run. */
    FcStatus (*supports)(FcBackend *be, const FcInstr *in, FcDType a_dtype, FcError *err);
    /* nbytes may be 0 (a valid, unique pointer is still returned). Memory is aligned to 64 bytes. */
    FcStatus (*alloc)(FcBackend *be, size_t nbytes, void **out, FcError *err);
    void (*free)(FcBackend *be, void *p);                       /* NULL is fine */
    /* Copies between host memory and this backend's memory (for cpu both are memcpy). */
    FcStatus (*to_host)(FcBackend *be, void *dst, const void *src, size_t nbytes, FcError *err);
    FcStatus (*from_host)(FcBackend *be, void *dst, const void *src, size_t nbytes, FcError *err);
    /* Runs a kernel to completion. Errors found in the data (an integer division by zero, a
     * gathered index out of range) are FC_ERR_RUNTIME / FC_ERR_INDEX with PyTorch's message. */
    FcStatus (*run)(FcBackend *be, const FcKernel *k, FcError *err);
    /* Optional (NULL: each run is planned afresh): a kernel kept to run again (the scheduler's
     * kernel cache). prepare compiles k with its plan (k->plan) into a handle, and k's code and
     * plan must outlive it (the cache keeps them together); run_prepared runs the handle with a
     * launch's buffers: as run would for a kernel equal to k but for bufs, out and interrupt;
     * release frees it. */
    FcStatus (*prepare)(FcBackend *be, const FcKernel *k, void **handle, FcError *err);
    FcStatus (*run_prepared)(FcBackend *be, void *handle, const FcKernel *k, FcError *err);
    void (*release)(FcBackend *be, void *handle);
    FcStatus (*matmul)(FcBackend *be, const FcMatmul *m, FcError *err);
    /* Whether matmul applies FcMatmul.epi; without it a contraction is realised by matmul and its
     * consumer runs as a kernel of its own. */
    bool matmul_epilogue;
    /* Whether matmul reads FcMatmul.a_ix / b_ix (implicit GEMM); without it a masked gather that
     * a contraction reads is materialised first. */
    bool matmul_implicit;
    /* Optional (NULL: the generated kernels do it): a convolution (forward or backward), pooling
     * or batch norm (FcConv.op) through a library (cuDNN). Sets
     * c->taken when it computed c->y, and c->note either way (how, or why not); an error only
     * when the library took the case and failed. */
    FcStatus (*conv)(FcBackend *be, FcConv *c, FcError *err);
    /* Optional (NULL: sums run as kernels, the backend's order): a tensor's sum in one of
     * PyTorch's CPU orders (FcOrderedSum.order), so that its bits are PyTorch's (fc_sum's
     * cascade; softmax's lanes and serial sums). */
    FcStatus (*ordered_sum)(FcBackend *be, const FcOrderedSum *s, FcError *err);
    void (*destroy)(FcBackend *be);     /* frees the backend itself (threads joined) */
};

/* For tests only (NULL otherwise): when set, it serves every library call of fcdim/conv.c in place
 * of FcBackend.conv, on any CUDA device (the stand-in's too, which has no library path): so the
 * library's wiring (convolution gradients through the library, fall-backs, --verbose) is tested
 * without a GPU. */
extern FcStatus (*fc_conv_test_hook)(FcBackend *be, FcConv *c, FcError *err);

/* ---- the registry (backend/registry.c) ----
 * fcdim opens backends and asks for their kernel text only through these, never through a
 * backend's own constructor: adding a backend is a row of the registry. */

/* Opens the backend of device type `type` (index: which device of that type; nthreads: the
 * context's thread count; fake: a CUDA device stands in for one on the host, FcCtx.fake_cuda).
 * FC_ERR_DEVICE when there is none here (the message says why), FC_ERR_NOMEM. */
FcStatus fc_backend_open(FcDeviceType type, int index, int nthreads, bool fake, FcBackend **out, FcError *err);
/* The text a backend of type would compile for k (`tdl --dump-cuda`), malloc'd; NULL when that
 * backend has none or on out-of-memory. */
char *fc_backend_kernel_text(FcDeviceType type, const FcKernel *k);

/* The CPU backend (backend/cpu/): vectorised chunked loops on nthreads threads (a pool started on
 * first use). NULL on out-of-memory. */
FcBackend *fc_cpu_backend_new(int nthreads);
/* The CPU backend standing in for a CUDA device (FcCtx.fake_cuda, for tests without a GPU): host
 * memory, kernels run by the CPU executor, device FC_DEV_CUDA. NULL on out-of-memory. */
FcBackend *fc_cpu_backend_as_cuda_new(int nthreads);

/* How many allocations of a CPU backend were served from its cache of freed large blocks
 * (cpu_backend.c), for tests; -1 when the build has no cache (AddressSanitizer). */
long fc_cpu_cache_hits(FcBackend *be);
/* How many chunks of gated scatter-adds the CPU executor found to add zeros after evaluating
 * only what holds one value per chunk (cpu_exec.c's eval_gated), over all backends, for tests. */
long fc_cpu_narrow_skips(void);
/* How many runs of CPU scatter-adds were split over bands of destination rows (cpu_plan.c's
 * plan_band, cpu_exec.c's task_band: roi_align's backward at more than one thread), over all
 * backends, for tests. */
long fc_cpu_band_splits(void);
/* How many points of gated scatter-adds the CPU executor left out by runs, past a bound of the
 * gate found false (cpu_plan.c's plan_gate_bounds, cpu_exec.c's gate_run), for tests. */
long fc_cpu_gate_points(void);
/* How many runs of CPU kernels added a product into their output in one pass (cpu_plan.c's
 * plan_mul_add), over all backends, for tests. */
long fc_cpu_mul_add_runs(void);
/* How many of those runs computed the product's factor of one value without broadcasting it over
 * the chunk (cpu_plan.c's unfill_factor), over all backends, for tests. */
long fc_cpu_mul_w_one_runs(void);
/* How many runs of CPU kernels had a multiply-add read a factor of one value per chunk as that
 * value, not broadcast (cpu_plan.c's muladd_one: roi_align's bilinear weights), for tests. */
long fc_cpu_muladd_one_runs(void);
/* How many steps (memo chains, runs of precomputed steps) the CPU executor left out for a
 * point's later terms because they do not vary along the term level and hold from its first
 * (cpu_plan.h's Plan.term), over all backends, for tests. */
long fc_cpu_term_skips(void);
/* How many blocks of eight units' chunks the CPU executor loaded through one transpose
 * (cpu_exec.c's load_block: a load along the tile loop in a transposing store), over all
 * backends, for tests. */
long fc_cpu_tload_blocks(void);
/* How many runs of CPU kernels wrote a large fill or transposing copy with non-temporal stores
 * (cpu_plan.c's plan_stream), over all backends, for tests. */
long fc_cpu_stream_runs(void);
/* How many tiles of sixteen units the CPU executor copied whole in transposing copies (cpu_exec.c's
 * copy_tile: NCHW made channels_last, or back), over all backends, for tests. */
long fc_cpu_copy_tiles(void);
/* How many runs of transposing copies the CPU executor took chunk by chunk, every tile of one
 * chunk before the next (cpu_plan.h's Plan.tchunk: NCHW from channels-last), over all backends,
 * for tests. */
long fc_cpu_chunk_copies(void);
/* How many of those tiles the CPU executor scaled as it copied them: a transposing copy of the
 * input times or divided by values constant over the tile (cpu_plan.c's plan_tscale: roi_align's
 * cotangent g / count staged channels-last), over all backends, for tests. */
long fc_cpu_scaled_tiles(void);
/* How many passes over a chunk the CPU executor made for chains of multiply-adds with a factor
 * of one value per chunk, each chain one pass (cpu_plan.c's plan_rowops outside a span:
 * roi_align's four taps over a chunk of channels), over all backends, for tests. */
long fc_cpu_one_term_passes(void);
/* How many times the CPU executor copied a precomputed value out of its table to broadcast it
 * (cpu_exec.c's pre_point; a value read at position 0 alone is pointed at instead), over all
 * backends, for tests. */
long fc_cpu_pre_copies(void);

/* ---- the CUDA backend (backend/cuda/) ----
 * libcuda (the driver API) and libnvrtc are opened with dlopen at first use, so one binary runs
 * everywhere: without them a request for a CUDA device is FC_ERR_DEVICE saying why. A kernel
 * is printed as CUDA C source from the same FcKernel the CPU runs, compiled by NVRTC for the
 * device's own architecture and cached in memory and on disk. */

/* The backend of CUDA device index. FC_ERR_DEVICE with the reason when there is none here:
 * "no CUDA driver (libcuda.so.1 not found)", "no CUDA device (...)", "NVRTC not found (...)". */
FcStatus fc_cuda_backend_new(int index, FcBackend **out, FcError *err);

/* The CUDA C source the backend compiles for k, then comment lines with this kernel's argument
 * values and launch plan: what `tdl --dump-cuda` prints. A kernel the backend does not take
 * gives one comment line with the reason. malloc'd; NULL on out-of-memory. */
char *fc_cuda_kernel_dump(const FcKernel *k);
/* The source of the CUDA backend's batched matrix product for dtype (malloc'd, or NULL). */
char *fc_cuda_matmul_source(FcDType dt);

/* NVRTC's version, or FC_ERR_DEVICE when libnvrtc cannot be loaded (the message says why). */
FcStatus fc_cuda_nvrtc_version(int *major, int *minor, FcError *err);

/* Compiled kernels, cached in memory and on disk, keyed by the source, the architecture, NVRTC's
 * version and the options. Disk entries are files <dir>/<hash>.cubin written atomically
 * (temporary file, then rename); each holds its whole key and a checksum of the image, and one
 * that does not match (corrupt, truncated, stale, a hash collision) is compiled again and
 * replaced, never trusted. Safe to use from several threads. */
typedef struct FcCudaCache FcCudaCache;
typedef struct FcCudaCacheStats {
    int compiled;               /* NVRTC runs */
    int memory_hits, disk_hits;
    int disk_rejected;          /* entries found on disk but not used (corrupt or stale) */
    int disk_written;
    double compile_ms;          /* total time in NVRTC */
} FcCudaCacheStats;
/* dir: the disk cache's folder (created when needed); "" keeps the cache in memory only; NULL
 * takes $TDL_CACHE_DIR ("off", "0" or empty: memory only), else $XDG_CACHE_HOME/tdl/cuda, else
 * ~/.cache/tdl/cuda. NULL on out-of-memory. */
FcCudaCache *fc_cuda_cache_new(const char *dir);
void fc_cuda_cache_free(FcCudaCache *c);               /* NULL is fine */
const char *fc_cuda_cache_dir(const FcCudaCache *c);   /* "" when memory only */
FcCudaCacheStats fc_cuda_cache_stats(FcCudaCache *c);

/* One compilation's result. image is malloc'd (the caller frees it, and log). */
typedef enum FcCudaFrom { FC_CUDA_COMPILED, FC_CUDA_FROM_MEMORY, FC_CUDA_FROM_DISK } FcCudaFrom;
typedef struct FcCudaBuild {
    void *image;                /* a cubin, or PTX text (NUL-terminated) when ptx */
    size_t len;
    bool ptx;                   /* NVRTC is older than the architecture: PTX for the driver to JIT */
    FcCudaFrom from;
    double ms;                  /* time in NVRTC (0 when cached) */
    char *log;                  /* on a compile error: NVRTC's log and the numbered source */
} FcCudaBuild;
/* Compiles src for sm_<sm> with the backend's options (--gpu-architecture=sm_XX --fmad=false:
 * no contraction into FMA, so pointwise math rounds as the CPU's does), through cache c (NULL:
 * a cold compile every time). FC_ERR_DEVICE when NVRTC cannot be loaded or does not know the
 * architecture, FC_ERR_RUNTIME on a compile error (the first line of NVRTC's log in err, all of
 * it in out->log). */
FcStatus fc_cuda_compile(FcCudaCache *c, const char *src, int sm, FcCudaBuild *out, FcError *err);

#endif
