/* cuda_loader.c — opens the CUDA driver (libcuda) and NVRTC (libnvrtc) with dlopen at first use
 * and fills the function tables the backend calls through, so that tdl neither links against
 * them nor needs CUDA's headers to build: on a machine without them the backend reports why.
 *
 * Each library is loaded once per process under pthread_once, its outcome (the table, or the
 * reason it is missing) kept in a static that is written only there: the one lazily initialised
 * global the house style allows. The libraries stay open for the life of the process, and so
 * does each device's primary context once a backend has asked for it (fc_cuda_primary_context).
 * Depends on cuda_internal.h and libc (dlfcn, pthread). */
#include "cuda_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the driver ---- */

static struct {
    pthread_once_t once;
    CudaDriver d;
    bool ok;
    char why[256];
} driver = {.once = PTHREAD_ONCE_INIT};

/* dlsym into *slot; false (with why set) when the symbol is missing. */
static bool sym(void *lib, const char *name, void *slot, char *why, size_t cap, const char *libname)
{
    void *p = dlsym(lib, name);
    if (!p) {
        snprintf(why, cap, "%s is too old (it has no %s)", libname, name);
        return false;
    }
    memcpy(slot, &p, sizeof p);
    return true;
}

void fc_cuda_result_str(const CudaDriver *d, CUresult r, char *buf, size_t cap)
{
    const char *name = NULL, *text = NULL;
    if (d && d->GetErrorName)
        d->GetErrorName(r, &name);
    if (d && d->GetErrorString)
        d->GetErrorString(r, &text);
    if (name && text)
        snprintf(buf, cap, "%s: %s", name, text);
    else
        snprintf(buf, cap, "CUDA error %d", r);
}

static void load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(driver.why, sizeof driver.why, "no CUDA driver (libcuda.so.1 not found)");
        return;
    }
    CudaDriver *d = &driver.d;
    char *w = driver.why;
    size_t cap = sizeof driver.why;
    const char *ln = "the CUDA driver (libcuda.so.1)";
    /* cuda.h maps these names onto their _v2 entry points (the ones with 64-bit sizes). */
    bool ok = sym(lib, "cuInit", &d->Init, w, cap, ln) && sym(lib, "cuDriverGetVersion", &d->DriverGetVersion, w, cap, ln) &&
              sym(lib, "cuDeviceGetCount", &d->DeviceGetCount, w, cap, ln) &&
              sym(lib, "cuDeviceGet", &d->DeviceGet, w, cap, ln) &&
              sym(lib, "cuDeviceGetAttribute", &d->DeviceGetAttribute, w, cap, ln) &&
              sym(lib, "cuDeviceGetName", &d->DeviceGetName, w, cap, ln) &&
              sym(lib, "cuDevicePrimaryCtxRetain", &d->DevicePrimaryCtxRetain, w, cap, ln) &&
              sym(lib, "cuCtxSetCurrent", &d->CtxSetCurrent, w, cap, ln) &&
              sym(lib, "cuCtxSynchronize", &d->CtxSynchronize, w, cap, ln) &&
              sym(lib, "cuMemAlloc_v2", &d->MemAlloc, w, cap, ln) && sym(lib, "cuMemFree_v2", &d->MemFree, w, cap, ln) &&
              sym(lib, "cuMemcpyHtoD_v2", &d->MemcpyHtoD, w, cap, ln) &&
              sym(lib, "cuMemcpyDtoH_v2", &d->MemcpyDtoH, w, cap, ln) &&
              sym(lib, "cuMemcpyDtoD_v2", &d->MemcpyDtoD, w, cap, ln) &&
              sym(lib, "cuMemsetD8_v2", &d->MemsetD8, w, cap, ln) &&
              sym(lib, "cuModuleLoadData", &d->ModuleLoadData, w, cap, ln) &&
              sym(lib, "cuModuleUnload", &d->ModuleUnload, w, cap, ln) &&
              sym(lib, "cuModuleGetFunction", &d->ModuleGetFunction, w, cap, ln) &&
              sym(lib, "cuLaunchKernel", &d->LaunchKernel, w, cap, ln) &&
              sym(lib, "cuGetErrorName", &d->GetErrorName, w, cap, ln) &&
              sym(lib, "cuGetErrorString", &d->GetErrorString, w, cap, ln);
    if (!ok) {
        dlclose(lib);
        return;
    }
    CUresult r = d->Init(0);
    if (r != CUDA_OK) {
        char s[160];
        fc_cuda_result_str(d, r, s, sizeof s);
        if (r == CUDA_ERROR_NO_DEVICE_)
            snprintf(w, cap, "no CUDA device (cuInit: %s)", s);
        else
            snprintf(w, cap, "the CUDA driver did not start (cuInit: %s)", s);
        dlclose(lib);
        return;
    }
    if (d->DriverGetVersion(&d->version) != CUDA_OK)
        d->version = 0;
    driver.ok = true;
}

const CudaDriver *fc_cuda_driver(const char **why)
{
    pthread_once(&driver.once, load_driver);
    if (!driver.ok) {
        *why = driver.why;
        return NULL;
    }
    return &driver.d;
}

/* The primary context of each device, retained at its first backend and never released, as PyTorch
 * keeps its own: an interpreter closed and another opened in the same process (an embedder's, the
 * golden tests' one per case) finds the context alive, where releasing the last reference would
 * have the driver tear it down and build it again at the next open. Part of the driver's state:
 * set once per device under the lock, never written again. */
#define HELD_DEVICES 64
static struct {
    pthread_mutex_t mu;
    CUcontext ctx[HELD_DEVICES];
} primary = {.mu = PTHREAD_MUTEX_INITIALIZER};

CUresult fc_cuda_primary_context(const CudaDriver *d, int index, CUdevice dev, CUcontext *out)
{
    if (index < 0 || index >= HELD_DEVICES)
        return d->DevicePrimaryCtxRetain(out, dev);     /* held all the same: never released */
    pthread_mutex_lock(&primary.mu);
    CUresult r = CUDA_OK;
    if (!primary.ctx[index] && (r = d->DevicePrimaryCtxRetain(&primary.ctx[index], dev)) != CUDA_OK)
        primary.ctx[index] = NULL;
    *out = primary.ctx[index];
    pthread_mutex_unlock(&primary.mu);
    return r;
}

/* ---- NVRTC ---- */

static struct {
    pthread_once_t once;
    CudaNvrtc n;
    bool ok;
    char why[512];
} nvrtc = {.once = PTHREAD_ONCE_INIT};

static const char *const nvrtc_names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};

void *fc_cuda_open_lib_in(const char *dir, const char *const *names, size_t n, char *path, size_t cap)
{
    for (size_t i = 0; i < n; i++) {
        int w = dir[0] ? snprintf(path, cap, "%s/%s", dir, names[i]) : snprintf(path, cap, "%s", names[i]);
        void *lib = w > 0 && (size_t)w < cap ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (lib)
            return lib;
    }
    return NULL;
}

void *fc_cuda_open_lib_in_toolkit(const char *const *names, size_t n, char *path, size_t cap)
{
    const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    const char *subs[] = {"lib64", "lib"};
    void *lib = NULL;
    for (size_t h = 0; h < sizeof homes / sizeof homes[0] && !lib; h++) {
        if (!homes[h] || !homes[h][0])
            continue;
        for (size_t d = 0; d < 2 && !lib; d++) {
            char dir[512];
            snprintf(dir, sizeof dir, "%s/%s", homes[h], subs[d]);
            lib = fc_cuda_open_lib_in(dir, names, n, path, cap);
        }
    }
    return lib;
}

static void load_nvrtc(void)
{
    CudaNvrtc *n = &nvrtc.n;
    void *lib = NULL;
    const char *env = getenv("TDL_NVRTC");
    if (env && env[0]) {
        snprintf(n->path, sizeof n->path, "%s", env);
        lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    }
    size_t nnames = sizeof nvrtc_names / sizeof nvrtc_names[0];
    if (!lib)
        lib = fc_cuda_open_lib_in("", nvrtc_names, nnames, n->path, sizeof n->path);
    if (!lib)
        lib = fc_cuda_open_lib_in_toolkit(nvrtc_names, nnames, n->path, sizeof n->path);
    if (!lib) {
        snprintf(nvrtc.why, sizeof nvrtc.why,
                 "NVRTC not found (tried %s%slibnvrtc.so, libnvrtc.so.13 and libnvrtc.so.12 on the loader's path "
                 "and in lib64 and lib of $CUDA_HOME, $CUDA_PATH, /usr/local/cuda)",
                 env && env[0] ? env : "", env && env[0] ? ", " : "");
        return;
    }
    char *w = nvrtc.why;
    size_t cap = sizeof nvrtc.why;
    const char *ln = n->path;
    int (*num_archs)(int *) = NULL, (*archs)(int *) = NULL;
    bool ok = sym(lib, "nvrtcGetErrorString", &n->GetErrorString, w, cap, ln) &&
              sym(lib, "nvrtcVersion", &n->Version, w, cap, ln) &&
              sym(lib, "nvrtcCreateProgram", &n->CreateProgram, w, cap, ln) &&
              sym(lib, "nvrtcDestroyProgram", &n->DestroyProgram, w, cap, ln) &&
              sym(lib, "nvrtcCompileProgram", &n->CompileProgram, w, cap, ln) &&
              sym(lib, "nvrtcGetProgramLogSize", &n->GetProgramLogSize, w, cap, ln) &&
              sym(lib, "nvrtcGetProgramLog", &n->GetProgramLog, w, cap, ln) &&
              sym(lib, "nvrtcGetCUBINSize", &n->GetCUBINSize, w, cap, ln) &&
              sym(lib, "nvrtcGetCUBIN", &n->GetCUBIN, w, cap, ln) &&
              sym(lib, "nvrtcGetPTXSize", &n->GetPTXSize, w, cap, ln) && sym(lib, "nvrtcGetPTX", &n->GetPTX, w, cap, ln) &&
              sym(lib, "nvrtcGetNumSupportedArchs", &num_archs, w, cap, ln) &&
              sym(lib, "nvrtcGetSupportedArchs", &archs, w, cap, ln);
    if (!ok) {
        dlclose(lib);
        return;
    }
    if (n->Version(&n->major, &n->minor) != 0) {
        snprintf(w, cap, "%s does not work (nvrtcVersion failed)", ln);
        dlclose(lib);
        return;
    }
    int na = 0;
    if (num_archs(&na) != 0 || na < 1 || na > (int)(sizeof n->arch / sizeof n->arch[0]) || archs(n->arch) != 0) {
        snprintf(w, cap, "%s does not work (nvrtcGetSupportedArchs failed)", ln);
        dlclose(lib);
        return;
    }
    n->narch = na;
    nvrtc.ok = true;
}

const CudaNvrtc *fc_cuda_nvrtc(const char **why)
{
    pthread_once(&nvrtc.once, load_nvrtc);
    if (!nvrtc.ok) {
        *why = nvrtc.why;
        return NULL;
    }
    return &nvrtc.n;
}

FcStatus fc_cuda_nvrtc_version(int *major, int *minor, FcError *err)
{
    const char *why = NULL;
    const CudaNvrtc *n = fc_cuda_nvrtc(&why);
    if (!n) {
        snprintf(err->msg, sizeof err->msg, "%s", why);
        return FC_ERR_DEVICE;
    }
    *major = n->major;
    *minor = n->minor;
    return FC_OK;
}
