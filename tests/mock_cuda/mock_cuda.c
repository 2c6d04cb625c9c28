/* mock_cuda.c — a CUDA driver (libcuda) and NVRTC with no GPU behind them, for testing the CUDA
 * backend's host side (cuda_backend.c, cuda_nvrtc.c, cuda_loader.c) on any machine: built as
 * libcuda.so.1, found by the loader's path (LD_LIBRARY_PATH) and as NVRTC through TDL_NVRTC.
 *
 * The one device is an sm_90 with two multiprocessors whose memory is host memory. NVRTC's
 * "cubin" is the kernel's source itself; loading it as a module compiles it for the host with
 * g++ behind the emulation of CUDA's execution model (tests/cuda_emu.h), each __global__ entry
 * point given a host wrapper, emu_NAME(args, grid, block), which cuLaunchKernel calls. A launch
 * runs at once, to the end: a valid order of the default stream's work. The builds are kept in
 * $TDL_MOCK_CUDA_DIR (by a hash of the source) when it is set, else in a folder of the process
 * (removed at exit). $TDL_MOCK_CUDA_MEMORY (bytes) makes the device that small, for running out.
 *
 * What the backend does is checked, not only served: every copy, fill and free must fall inside
 * one live allocation, and a wrong call fails the way the real driver's would
 * (CUDA_ERROR_INVALID_VALUE), with a line on stderr. $TDL_MOCK_CUDA_LOG, when set, receives a
 * line per call ("alloc N", "free N", "htod N", "dtoh N", "dtod N", "memset N", "launch NAME gx gy
 * gz bx by bz", "sync", "load NAME...") and, at exit, "live N" (blocks never freed), for the tests
 * to read the protocol from.
 * Depends on cuda_internal.h (the driver's types), tests/cuda_emu.h, libc, libdl, pthreads and g++
 * at run time. */
#include "cuda_emu.h"
#include "cuda/cuda_internal.h"     /* the driver's types and attributes as the backend declares them */

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum {      /* cuda.h's codes that the mock gives (CUDA_OK is success) */
    ERR_INVALID_VALUE = 1,
    ERR_OUT_OF_MEMORY = 2,
    ERR_NOT_INITIALIZED = 3,
    ERR_INVALID_DEVICE = 101,
    ERR_INVALID_IMAGE = 200,
    ERR_NOT_FOUND = 500,
    ERR_INVALID_HANDLE = 400,
};

typedef void (*EmuEntry)(const void *args, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by);

typedef struct Fn {
    EmuEntry run;
    char name[64];
} Fn;

typedef struct Module {
    void *so;
    Fn fn[8];           /* the functions taken from it, valid until it is unloaded */
    int nfn;
} Module;

typedef struct Alloc {
    char *p;
    size_t n;
} Alloc;

static struct {
    pthread_mutex_t mu;
    bool init;
    char dir[256];
    FILE *log;
    Alloc *a;
    size_t na, cap;
    size_t limit;       /* TDL_MOCK_CUDA_MEMORY: bytes the device holds (0: no limit) */
    size_t used;
    bool own_dir;       /* dir made for this process: removed at exit */
    int ctx;            /* the primary context's address stands for it */
} M = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    if (!M.log)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(M.log, fmt, ap);
    va_end(ap);
    fputc('\n', M.log);
    fflush(M.log);
}

static CUresult wrong(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static CUresult wrong(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mock cuda: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    logf_("wrong");
    return ERR_INVALID_VALUE;
}

static void at_exit(void)
{
    logf_("live %zu", M.na);
    if (M.log)
        fclose(M.log);
    M.log = NULL;
    DIR *d = M.own_dir ? opendir(M.dir) : NULL;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", M.dir, e->d_name);
        if (e->d_name[0] != '.')
            unlink(p);
    }
    if (d) {
        closedir(d);
        rmdir(M.dir);
    }
}

/* The allocation holding [p, p + n), or NULL. */
static Alloc *find(const void *p, size_t n)
{
    const char *c = p;
    for (size_t i = 0; i < M.na; i++)
        if (c >= M.a[i].p && c + n <= M.a[i].p + M.a[i].n && c + n >= c)
            return &M.a[i];
    return NULL;
}

/* ---- the driver ---- */

EXPORT CUresult cuInit(unsigned flags)
{
    pthread_mutex_lock(&M.mu);
    if (!M.init) {
        M.init = true;
        const char *l = getenv("TDL_MOCK_CUDA_LOG");
        if (l && *l)
            M.log = fopen(l, "a");
        const char *lim = getenv("TDL_MOCK_CUDA_MEMORY");
        M.limit = lim ? (size_t)strtoull(lim, NULL, 10) : 0;
        const char *d = getenv("TDL_MOCK_CUDA_DIR");
        if (d && *d) {
            snprintf(M.dir, sizeof M.dir, "%s", d);
            mkdir(M.dir, 0777);
        } else {
            snprintf(M.dir, sizeof M.dir, "/tmp/tdl-mock-cuda-XXXXXX");
            M.own_dir = mkdtemp(M.dir) != NULL;
            if (!M.own_dir)
                M.dir[0] = 0;
        }
        if (M.dir[0])
            cuda_emu_setup(M.dir);
        atexit(at_exit);
    }
    pthread_mutex_unlock(&M.mu);
    return flags == 0 ? CUDA_OK : ERR_INVALID_VALUE;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_OK;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
    if (!M.init)
        return ERR_NOT_INITIALIZED;
    *n = 1;
    return CUDA_OK;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int i)
{
    if (i != 0)
        return ERR_INVALID_DEVICE;
    *d = 0;
    return CUDA_OK;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
    if (d != 0)
        return ERR_INVALID_DEVICE;
    switch (attr) {
    case CU_ATTR_MAX_THREADS_PER_BLOCK: *v = 1024; return CUDA_OK;
    case CU_ATTR_MULTIPROCESSOR_COUNT: *v = 2; return CUDA_OK;
    case CU_ATTR_CC_MAJOR: *v = 9; return CUDA_OK;     /* sm_90 */
    case CU_ATTR_CC_MINOR: *v = 0; return CUDA_OK;
    default: return ERR_INVALID_VALUE;
    }
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (d != 0)
        return ERR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "tdl mock device");
    return CUDA_OK;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    if (d != 0)
        return ERR_INVALID_DEVICE;
    *c = (CUcontext)&M.ctx;
    return CUDA_OK;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
    return c == (CUcontext)&M.ctx || c == NULL ? CUDA_OK : ERR_INVALID_VALUE;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    logf_("sync");
    return CUDA_OK;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t n)
{
    if (n == 0)
        return ERR_INVALID_VALUE;
    pthread_mutex_lock(&M.mu);
    CUresult r = CUDA_OK;
    char *p = NULL;
    if (M.limit && M.used + n > M.limit) {
        r = ERR_OUT_OF_MEMORY;
    } else if (M.na == M.cap) {
        size_t cap = M.cap ? 2 * M.cap : 256;
        Alloc *q = realloc(M.a, cap * sizeof *q);
        if (q) {
            M.a = q;
            M.cap = cap;
        }
    }
    if (!r && M.na < M.cap && (p = malloc(n)) != NULL) {
        memset(p, 0xa5, n);     /* not zeros: what a fresh block holds is not to be relied on */
        M.a[M.na++] = (Alloc){p, n};
        M.used += n;
        *out = (CUdeviceptr)(uintptr_t)p;
        logf_("alloc %zu", n);
    } else if (!r) {
        r = ERR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&M.mu);
    return r;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr d)
{
    pthread_mutex_lock(&M.mu);
    CUresult r = CUDA_OK;
    size_t i = 0;
    while (i < M.na && M.a[i].p != (char *)(uintptr_t)d)
        i++;
    if (i == M.na) {
        r = wrong("cuMemFree of %#llx, not the start of a live allocation", d);
    } else {
        logf_("free %zu", M.a[i].n);
        M.used -= M.a[i].n;
        free(M.a[i].p);
        M.a[i] = M.a[--M.na];
    }
    pthread_mutex_unlock(&M.mu);
    return r;
}

static CUresult copy(const char *what, void *dst, const void *src, size_t n, bool dst_dev, bool src_dev)
{
    pthread_mutex_lock(&M.mu);
    CUresult r = CUDA_OK;
    if (dst_dev && !find(dst, n))
        r = wrong("%s of %zu bytes to %p: not inside one allocation", what, n, dst);
    else if (src_dev && !find(src, n))
        r = wrong("%s of %zu bytes from %p: not inside one allocation", what, n, src);
    else if (!dst || !src)
        r = wrong("%s with a null pointer", what);
    if (!r) {
        memmove(dst, src, n);
        logf_("%s %zu", what, n);
    }
    pthread_mutex_unlock(&M.mu);
    return r;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    return copy("htod", (void *)(uintptr_t)dst, src, n, true, false);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    return copy("dtoh", dst, (const void *)(uintptr_t)src, n, false, true);
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy("dtod", (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, true, true);
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n)
{
    pthread_mutex_lock(&M.mu);
    CUresult r = CUDA_OK;
    if (!find((void *)(uintptr_t)dst, n)) {
        r = wrong("cuMemsetD8 of %zu bytes at %#llx: not inside one allocation", n, dst);
    } else {
        memset((void *)(uintptr_t)dst, v, n);
        logf_("memset %zu", n);
    }
    pthread_mutex_unlock(&M.mu);
    return r;
}

/* The source with a host wrapper after it for each entry point: `__global__ void
 * [__launch_bounds__(n)] NAME(const TYPE a)` gets emu_NAME. Names the entries in *names. */
static bool write_source(FILE *f, const char *src, char *names, size_t cap)
{
    fputs(src, f);
    fputs("\n", f);
    size_t nn = 0;
    names[0] = 0;
    for (const char *s = strstr(src, "__global__ void "); s; s = strstr(s + 1, "__global__ void ")) {
        const char *p = s + strlen("__global__ void ");
        if (strncmp(p, "__launch_bounds__(", 18) == 0) {
            p = strchr(p, ')');
            if (!p)
                return false;
            p++;
            while (*p == ' ')
                p++;
        }
        char name[64], type[64];
        if (sscanf(p, "%63[A-Za-z0-9_](const %63[A-Za-z0-9_]", name, type) != 2)
            return false;
        fprintf(f,
                "extern \"C\" void emu_%s(const void *p, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by)\n"
                "{\n"
                "    emu_reverse = %d;\n"
                "    emu_grid([](const void *q) { %s(*(const %s *)q); }, p, gx, gy, gz, bx, by);\n"
                "}\n",
                name, strcmp(name, "tdl_fill") == 0, name, type);
        nn += (size_t)snprintf(names + nn, nn < cap ? cap - nn : 0, " %s", name);
    }
    return nn > 0;
}

EXPORT CUresult cuModuleLoadData(void **mod, const void *image)
{
    const char *src = image;
    if (!src || !M.dir[0])
        return ERR_INVALID_IMAGE;
    char *text = NULL, so[1100], names[512];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return ERR_OUT_OF_MEMORY;
    bool ok = write_source(f, src, names, sizeof names);
    if (fclose(f) != 0) {
        free(text);
        return ERR_OUT_OF_MEMORY;
    }
    if (!ok) {
        free(text);
        return wrong("a module with no entry point this mock can call");
    }
    ok = cuda_emu_build(M.dir, text, so, sizeof so);
    free(text);
    if (!ok) {
        fprintf(stderr, "mock cuda: the host build %s failed (see %s.log)\n", so, so);
        return ERR_INVALID_IMAGE;
    }
    Module *m = calloc(1, sizeof *m);
    if (!m)
        return ERR_OUT_OF_MEMORY;
    m->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!m->so) {
        free(m);
        fprintf(stderr, "mock cuda: %s\n", dlerror());
        return ERR_INVALID_IMAGE;
    }
    logf_("load%s", names);
    *mod = m;
    return CUDA_OK;
}

EXPORT CUresult cuModuleUnload(void *mod)
{
    Module *m = mod;
    if (!m)
        return ERR_INVALID_HANDLE;
    dlclose(m->so);
    free(m);
    return CUDA_OK;
}

EXPORT CUresult cuModuleGetFunction(void **fn, void *mod, const char *name)
{
    Module *m = mod;
    char sym[80];
    snprintf(sym, sizeof sym, "emu_%s", name);
    EmuEntry e = m ? (EmuEntry)dlsym(m->so, sym) : NULL;
    if (!e)
        return ERR_NOT_FOUND;
    Fn *f = NULL;
    for (int i = 0; i < m->nfn && !f; i++)
        if (strcmp(m->fn[i].name, name) == 0)
            f = &m->fn[i];
    if (!f && m->nfn == (int)(sizeof m->fn / sizeof m->fn[0]))
        return wrong("more functions taken from one module than this mock keeps");
    if (!f)
        f = &m->fn[m->nfn++];
    f->run = e;
    snprintf(f->name, sizeof f->name, "%s", name);
    *fn = f;
    return CUDA_OK;
}

EXPORT CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shmem, void *stream, void **params, void **extra)
{
    Fn *f = fn;
    if (!f || !params || extra || stream || shmem || bz != 1 || gx < 1 || gy < 1 || gz < 1 || bx < 1 || by < 1 ||
        bx * by > 1024 || gy > 65535 || gz > 65535)
        return wrong("cuLaunchKernel(%s, grid %u %u %u, block %u %u %u): not a launch this mock takes",
                     f ? f->name : "NULL", gx, gy, gz, bx, by, bz);
    logf_("launch %s %u %u %u %u %u %u", f->name, gx, gy, gz, bx, by, bz);
    pthread_mutex_lock(&M.mu);
    f->run(params[0], gx, gy, gz, bx, by);
    pthread_mutex_unlock(&M.mu);
    return CUDA_OK;
}

EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
    switch (r) {
    case CUDA_OK: *s = "CUDA_SUCCESS"; return CUDA_OK;
    case ERR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return CUDA_OK;
    case ERR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_OK;
    case ERR_NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; return CUDA_OK;
    case ERR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_OK;
    case ERR_INVALID_IMAGE: *s = "CUDA_ERROR_INVALID_IMAGE"; return CUDA_OK;
    case ERR_INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; return CUDA_OK;
    case ERR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return CUDA_OK;
    default: *s = NULL; return ERR_INVALID_VALUE;
    }
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s)
{
    switch (r) {
    case CUDA_OK: *s = "no error"; return CUDA_OK;
    case ERR_INVALID_VALUE: *s = "invalid argument"; return CUDA_OK;
    case ERR_OUT_OF_MEMORY: *s = "out of memory"; return CUDA_OK;
    case ERR_NOT_INITIALIZED: *s = "initialization error"; return CUDA_OK;
    case ERR_INVALID_DEVICE: *s = "invalid device ordinal"; return CUDA_OK;
    case ERR_INVALID_IMAGE: *s = "device kernel image is invalid"; return CUDA_OK;
    case ERR_INVALID_HANDLE: *s = "invalid resource handle"; return CUDA_OK;
    case ERR_NOT_FOUND: *s = "named symbol not found"; return CUDA_OK;
    default: *s = NULL; return ERR_INVALID_VALUE;
    }
}

/* ---- NVRTC: a program's "cubin" and "PTX" are its source ---- */

typedef struct Program {
    char *src;
} Program;

EXPORT const char *nvrtcGetErrorString(int r)
{
    return r == 0 ? "NVRTC_SUCCESS" : r == 1 ? "NVRTC_ERROR_OUT_OF_MEMORY" : "NVRTC_ERROR_INVALID_INPUT";
}

EXPORT int nvrtcVersion(int *major, int *minor)
{
    *major = 99;
    *minor = 0;
    return 0;
}

EXPORT int nvrtcGetNumSupportedArchs(int *n)
{
    *n = 1;
    return 0;
}

EXPORT int nvrtcGetSupportedArchs(int *a)
{
    a[0] = 90;
    return 0;
}

EXPORT int nvrtcCreateProgram(void **prog, const char *src, const char *name, int nh, const char *const *h,
                              const char *const *hn)
{
    Program *p = calloc(1, sizeof *p);
    if (!p || !(p->src = strdup(src))) {
        free(p);
        return 1;
    }
    *prog = p;
    return 0;
}

EXPORT int nvrtcDestroyProgram(void **prog)
{
    Program *p = *prog;
    if (p)
        free(p->src);
    free(p);
    *prog = NULL;
    return 0;
}

EXPORT int nvrtcCompileProgram(void *prog, int nopt, const char *const *opts)
{
    for (int i = 0; i < nopt; i++)
        if (strcmp(opts[i], "--fmad=false") == 0)
            return 0;
    return 3;      /* the backend always asks for no contraction: the host build has none */
}

EXPORT int nvrtcGetProgramLogSize(void *prog, size_t *n)
{
    *n = 1;
    return 0;
}

EXPORT int nvrtcGetProgramLog(void *prog, char *log)
{
    log[0] = 0;
    return 0;
}

EXPORT int nvrtcGetCUBINSize(void *prog, size_t *n)
{
    *n = strlen(((Program *)prog)->src) + 1;
    return 0;
}

EXPORT int nvrtcGetCUBIN(void *prog, char *out)
{
    strcpy(out, ((Program *)prog)->src);
    return 0;
}

EXPORT int nvrtcGetPTXSize(void *prog, size_t *n)
{
    return nvrtcGetCUBINSize(prog, n);
}

EXPORT int nvrtcGetPTX(void *prog, char *out)
{
    return nvrtcGetCUBIN(prog, out);
}
