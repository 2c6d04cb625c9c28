/* cuda_internal.h — what the files of the CUDA backend share: the driver API and NVRTC entry
 * points it calls (our own minimal typedefs: the build needs no CUDA headers), the tables they
 * are loaded into, the generated code of a kernel with its launch plan, and the compile cache.
 *
 * Private to backend/cuda/ and its tests (tests/test_cuda.c, the mock driver of tests/mock_cuda/):
 * the rest of tdl uses backend.h.
 * Depends on backend.h (and so on fcdim.h's kernel types) and libc; libcuda and libnvrtc are
 * opened with dlopen at first use, never linked. */
#ifndef TDL_CUDA_INTERNAL_H
#define TDL_CUDA_INTERNAL_H

#include "backend.h"

#include <pthread.h>

/* ---- the driver API, as far as we call it (cuda.h's types, re-declared) ---- */

typedef int CUresult;                       /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

enum {
    CUDA_OK = 0,
    CUDA_ERROR_NO_DEVICE_ = 100,
    CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
    CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    CU_ATTR_CC_MAJOR = 75,
    CU_ATTR_CC_MINOR = 76,
};

/* The driver's entry points (the _v2 names where cuda.h maps to them). */
typedef struct CudaDriver {
    int version;                            /* cuDriverGetVersion: 12040 for 12.4 */
    CUresult (*Init)(unsigned flags);
    CUresult (*DriverGetVersion)(int *v);
    CUresult (*DeviceGetCount)(int *n);
    CUresult (*DeviceGet)(CUdevice *d, int ordinal);
    CUresult (*DeviceGetAttribute)(int *v, int attr, CUdevice d);
    CUresult (*DeviceGetName)(char *name, int len, CUdevice d);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *c, CUdevice d);
    CUresult (*CtxSetCurrent)(CUcontext c);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *p, size_t n);
    CUresult (*MemFree)(CUdeviceptr p);
    CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t n);
    CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t n);
    CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t n);
    CUresult (*MemsetD8)(CUdeviceptr p, unsigned char v, size_t n);
    CUresult (*ModuleLoadData)(CUmodule *m, const void *image);
    CUresult (*ModuleUnload)(CUmodule m);
    CUresult (*ModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
    CUresult (*LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shmem, CUstream s, void **params, void **extra);
    CUresult (*GetErrorName)(CUresult r, const char **s);
    CUresult (*GetErrorString)(CUresult r, const char **s);
} CudaDriver;

/* ---- NVRTC ---- */

typedef int nvrtcResult;                    /* NVRTC_SUCCESS = 0 */
typedef struct _nvrtcProgram *nvrtcProgram;

typedef struct CudaNvrtc {
    int major, minor;                       /* nvrtcVersion */
    char path[256];                         /* the library that was opened */
    int narch;                              /* sm_XX it compiles for (nvrtcGetSupportedArchs) */
    int arch[64];
    const char *(*GetErrorString)(nvrtcResult r);
    nvrtcResult (*Version)(int *major, int *minor);
    nvrtcResult (*CreateProgram)(nvrtcProgram *p, const char *src, const char *name, int nheaders,
                                 const char *const *headers, const char *const *include_names);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *p);
    nvrtcResult (*CompileProgram)(nvrtcProgram p, int nopt, const char *const *opts);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram p, size_t *n);
    nvrtcResult (*GetProgramLog)(nvrtcProgram p, char *log);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram p, size_t *n);
    nvrtcResult (*GetCUBIN)(nvrtcProgram p, char *cubin);
    nvrtcResult (*GetPTXSize)(nvrtcProgram p, size_t *n);
    nvrtcResult (*GetPTX)(nvrtcProgram p, char *ptx);
} CudaNvrtc;

/* ---- cuda_loader.c ----
 * Each library is opened once per process (pthread_once: the one lazily initialised table the
 * house style allows), and a failure is remembered with its reason. */

/* The driver table after cuInit, or NULL with *why set to a sentence for a DeviceError:
 * "no CUDA driver (libcuda.so.1 not found)", "no CUDA device (cuInit: ...)". */
const CudaDriver *fc_cuda_driver(const char **why);
/* Device index's primary context (dev: its CUdevice), retained at the first call and held for
 * the life of the process: callers never release it. */
CUresult fc_cuda_primary_context(const CudaDriver *d, int index, CUdevice dev, CUcontext *out);
/* The NVRTC table, or NULL with *why ("NVRTC not found (tried libnvrtc.so, ...)"). Tried in
 * turn: $TDL_NVRTC, libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12 on the loader's path, then
 * the same names under $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64. */
const CudaNvrtc *fc_cuda_nvrtc(const char **why);
/* "CUDA_ERROR_OUT_OF_MEMORY: out of memory" for a driver result (r may come from no driver). */
void fc_cuda_result_str(const CudaDriver *d, CUresult r, char *buf, size_t cap);
/* dlopen (RTLD_NOW | RTLD_LOCAL) of the first of names[0..n) found in folder dir ("" for the
 * loader's path); path holds the last one tried. NULL when none opens. */
void *fc_cuda_open_lib_in(const char *dir, const char *const *names, size_t n, char *path, size_t cap);
/* The same in the CUDA toolkit's folders: lib64, then lib, of $CUDA_HOME, $CUDA_PATH and
 * /usr/local/cuda in that order. */
void *fc_cuda_open_lib_in_toolkit(const char *const *names, size_t n, char *path, size_t cap);

/* ---- cuda_codegen.c: a scheduled kernel as CUDA C source ---- */

/* How the GPU walks the kernel's loop nest. */
typedef enum CudaMode {
    CUDA_THREAD,        /* a thread per output point (V of them along the vector loop) */
    CUDA_ROW,           /* a block per point of the other root loops, its threads along the vector
                           loop; the reductions computed once per row, cooperatively */
    CUDA_BLOCK_REDUCE,  /* a root reduction, a block per output (split over gridDim.y blocks whose
                           partials tdl_finish combines) */
    CUDA_THREAD_REDUCE, /* a root reduction, a thread per output looping over the reduced loops */
    CUDA_SERIAL,        /* a scattered or accumulating store: one thread, loops in order */
    CUDA_OWNER,         /* one that cannot fail, with owner loops (fc_store_owner_loops): a thread
                           per point of them, the other loops in order inside */
    CUDA_SORTED,        /* one that cannot fail whose destinations do not move with its owner
                           loops (if any): the points of the other loops (records) sorted by
                           destination, then a thread per (owner point, destination) adding its
                           records in loop order (tdl_keys, tdl_scan, tdl_fill, tdl_order first) */
    CUDA_TILE,          /* a thread per output point whose reads run along another loop than its
                           writes (a transposing copy): tiles of 32 x 32 of the two loops, each
                           point computed by threads along the reads, then written through shared
                           memory by threads along the writes; npts counts tiles */
} CudaMode;

/* One field of the kernel's argument struct (struct Args in the source), in declaration order,
 * laid out as C lays out a struct (natural alignment), which is how NVCC lays it out too. */
typedef enum CudaArgKind {
    CARG_OUT, CARG_BUF, CARG_ERR, CARG_PART,    /* pointers: the backend fills them at launch */
    CARG_PRE,                                   /* the precomputed tables (pre_bytes) */
    CARG_SCRATCH,                               /* SORTED: the records' keys and lists (scratch_bytes) */
    CARG_VAL,                                   /* a number taken from the kernel (bytes) */
} CudaArgKind;
typedef struct CudaArg {
    CudaArgKind kind;
    int buf;                /* CARG_BUF: the index into FcKernel.bufs */
    char name[16];
    char ctype[16];         /* its C type in the source */
    int size;               /* 1, 4 or 8 bytes (its alignment too) */
    size_t offset;          /* in the struct */
    unsigned char bytes[8]; /* CARG_VAL: the value */
    int konst;              /* CARG_VAL: -1, or the instruction whose konst (as dtype) the value is:
                               each launch's kernel gives it (fc_cuda_arg_value) */
    FcDType dtype;
    char shown[32];         /* the value as text, for the dump */
} CudaArg;

/* Writes field a's value (CARG_VAL) for a launch of k into p: its bytes, or the konst of its
 * instruction in k (a kept kernel's parameters, run_kept in fcdim/schedule.c). */
void fc_cuda_arg_value(const CudaArg *a, const FcKernel *k, void *p);

/* The entry points of a kernel's source. The backend compiles those a launch needs that it has
 * not loaded yet into a module (fc_cuda_entries_source): most launches need one of them, a
 * split block reduction two, and NVRTC's time grows with the entry points it compiles. */
typedef enum CudaEntry {
    CUDA_ENTRY_S,           /* tdl_s: a point per thread (always there) */
    CUDA_ENTRY_V,           /* tdl_v: V points per thread (when vec) */
    CUDA_ENTRY_FINISH,      /* tdl_finish: combines a split block reduction's partials */
    CUDA_ENTRY_PRE,         /* tdl_pre: fills the precomputed tables before tdl_s or tdl_v (pre_bytes) */
    CUDA_ENTRY_KEYS,        /* SORTED, in this order before tdl_s: each record's destination key,   */
    CUDA_ENTRY_SCAN,        /* the first record of each key's run, the records placed in their runs */
    CUDA_ENTRY_FILL,        /* and each run put in loop order (tdl_keys, tdl_scan, tdl_fill,        */
    CUDA_ENTRY_ORDER,       /* tdl_order) */
    CUDA_NENTRY
} CudaEntry;

typedef struct CudaCode {
    char *src;              /* the whole source (malloc'd), entry points tdl_s and, when vec, tdl_v;
                               tdl_finish for CUDA_BLOCK_REDUCE; tdl_pre when pre_bytes */
    size_t len;
    size_t head;            /* src[0, head): what every entry point needs (prelude, Args, run) */
    size_t ent_off[CUDA_NENTRY], ent_len[CUDA_NENTRY];  /* each entry point's text in src (len 0: none) */
    CudaMode mode;
    int vl;                 /* the vector loop (the loop threads walk), or -1 */
    bool vec;               /* tdl_v exists: V points per thread along vl, when ext[vl] % V == 0 */
    int V;
    int block;              /* threads per block */
    int nargs;
    CudaArg *args;
    size_t args_size;       /* sizeof(struct Args) */
    int arg_npts, arg_nsplit, arg_per;   /* indices of the fields set at launch, or -1 */
    int64_t npts, npts_v;   /* points (THREAD: per thread; ROW: rows; REDUCE: outputs) for tdl_s, tdl_v */
    int64_t nred;           /* BLOCK_REDUCE: reduced points per output */
    int64_t split_ext;      /* BLOCK_REDUCE: the extent of the level a split shares out */
    size_t part_elem;       /* BLOCK_REDUCE: bytes per partial */
    size_t pre_bytes;       /* > 0: tdl_pre fills this many bytes of tables (field pre) first ... */
    int64_t pre_pts;        /* ... over its largest domain of this many points */
    int64_t nkeys, nrec;    /* SORTED: destinations (keys), records; npts = nkeys * the owner points */
    size_t scratch_bytes;   /* SORTED: its scratch (the generated source's sort_scratch) ... */
    size_t scratch_zero;    /* ... whose first scratch_zero bytes are zeroed before tdl_keys */
    int64_t scan_tiles;     /* SORTED: tdl_scan's tiles (the blocks it takes at most) */
} CudaCode;

/* Generates the source and launch plan of k. FC_ERR_TYPE for an op/dtype the backend does not
 * take (the CPU executor's message with "cuda kernel:"), FC_ERR_VALUE for a malformed kernel. */
FcStatus fc_cuda_codegen(const FcKernel *k, CudaCode *out, FcError *err);
/* FcBackend.supports: whether the generator has code for instruction in (a of dtype a_dtype);
 * FC_ERR_TYPE with the message fc_cuda_codegen would give. */
FcStatus fc_cuda_supports(const FcInstr *in, FcDType a_dtype, FcError *err);
/* The CUDA backend's FcTarget. */
extern const FcTarget fc_cuda_target;
void fc_cuda_code_free(CudaCode *c);
/* A BLOCK_REDUCE launch of npts outputs: with few outputs and much to reduce, the first reduced
 * level is shared out over *nsplit blocks per output (*per indices each), whose partials
 * tdl_finish combines in order. It depends on the shape alone, so the bits do not depend on
 * the GPU. Else *nsplit = 1. */
void fc_cuda_split(const CudaCode *c, int64_t npts, int64_t *nsplit, int64_t *per);
/* The source of c's entry points in the set entries (bit 1 << e for entry e) alone (malloc'd):
 * src's head and those entries' text, in src's order. NULL when c lacks one of them, when the
 * set is empty, or on out-of-memory. */
char *fc_cuda_entries_source(const CudaCode *c, unsigned entries);
/* The name of entry point e in the source: "tdl_s", "tdl_v", "tdl_finish", "tdl_pre", "tdl_keys",
 * "tdl_scan", "tdl_fill", "tdl_order". */
const char *fc_cuda_entry_name(CudaEntry e);

/* ---- cuda_nvrtc.c: compiling, cached in memory and on disk ---- */

typedef struct CacheEntry {
    uint64_t hash;
    char *key;              /* the whole key text: header, options, source */
    size_t keylen;
    void *image;            /* cubin (or PTX, NUL-terminated, when ptx) */
    size_t len;
    bool ptx;
} CacheEntry;

struct FcCudaCache {
    pthread_mutex_t mu;
    CacheEntry *e;
    int n, cap;
    char dir[1024];         /* "" when the disk cache is off */
    FcCudaCacheStats stats;
};

#endif
