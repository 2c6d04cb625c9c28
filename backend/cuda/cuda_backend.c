/* cuda_backend.c — the CUDA backend: device memory through a caching allocator over plain
 * cuMemAlloc, copies to and from the host, and kernels run as compiled CUDA C (cuda_codegen.c,
 * cuda_nvrtc.c) launched through the driver API.
 *
 * One backend object per device (FcCtx.cuda[i]), on the device's primary context. Memory: freed
 * blocks are kept, by size, for the next allocation of about their size (sizes are rounded to
 * 512 bytes below 1 MiB and to 1 MiB above); when the driver runs out, the kept blocks are
 * released and the allocation tried again. Live blocks are known by address (a hash table),
 * which is also how a kernel's buffer that is host memory is recognised: a CPU 0-dim tensor in
 * an expression on the GPU, which PyTorch allows. Such a buffer is staged: the span that the
 * kernel's loads can touch is copied into a temporary device block for the launch.
 *
 * Kernels: the source of a kernel is generated from the FcKernel, looked up among the modules
 * this backend has loaded (by the whole text), else compiled for the device's architecture
 * through the compile cache (memory, then disk, then NVRTC) and loaded. A launch fills the
 * kernel's argument struct as the code generator laid it out, clears the error slot, runs the
 * kernel (tdl_v when the vector loop's extent allows V points per thread, else tdl_s; a split
 * block reduction also runs tdl_finish; each entry point is compiled and loaded as a module of
 * its own when a launch first needs it), waits for it and reads the error slot back: an index
 * out of range or a division by zero is reported with the CPU executor's message. Everything
 * runs on the default stream and completes before run() returns.
 *
 * Tested on GPUs by make check-gpu, and on every machine on the mock driver of
 * tests/mock_cuda/ (tests/test_mock_cuda.sh): the same calls, with host memory and kernels built
 * for the host.
 * Depends on cuda_internal.h, libc and pthreads. */
#include "cuda_internal.h"
#include "cuda_cudnn.h"
#include "hash.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    ERR_SLOT_BYTES = 32,        /* struct Err in the prelude: int32 code, dim; int64 value, extent */
};

typedef struct Block {
    CUdeviceptr p;
    size_t size;
} Block;

/* A kernel's source and its entry points, loaded when a launch first needs them: each load a
 * module of those it needed then. */
typedef struct Module {
    uint64_t hash;
    char *src;
    CUmodule mod[CUDA_NENTRY];
    int nmod;
    CUfunction fn[CUDA_NENTRY];
} Module;

typedef struct CudaBackend {
    FcBackend base;             /* first: an FcBackend * is a CudaBackend * */
    const CudaDriver *d;
    int index;
    CUdevice dev;
    CUcontext ctx;
    int sm, nsm;                /* compute capability (90 for 9.0), multiprocessors */
    char name[128];
    FcCudaCache *cache;
    pthread_mutex_t mu;         /* the allocator */
    Block *live;                /* open addressing by address (p == 0: empty) */
    size_t caplive, nlive;
    Block *cached;              /* freed blocks kept for reuse */
    size_t ncached, capcached, cached_bytes;
    Module *mods;
    int nmods, capmods;
    CUmodule mm_mod[FC_DTYPE__COUNT];
    CUfunction mm_fn[FC_DTYPE__COUNT];
    CUdeviceptr err_slot;
    CudnnState *dnn;            /* cuDNN's handle and plans on this device (cuda_cudnn.c), made on first use */
    /* TDL_CUDA_PROFILE: where the host's time goes, printed when the device closes (seconds) */
    bool prof;
    double t_code, t_launch, t_wait;
    long nrun, nkept;
} CudaBackend;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static FcStatus cu_fail(CudaBackend *be, CUresult r, const char *call, FcError *err)
{
    char s[200];
    fc_cuda_result_str(be->d, r, s, sizeof s);
    snprintf(err->msg, sizeof err->msg, "CUDA (%s): %s: %s", be->name, call, s);
    return r == 2 ? FC_ERR_NOMEM : FC_ERR_RUNTIME;      /* CUDA_ERROR_OUT_OF_MEMORY */
}

/* ---- the allocator ---- */

static size_t round_size(size_t n)
{
    if (n < ((size_t)1 << 20))
        return n < 512 ? 512 : (n + 511) / 512 * 512;
    return (n + ((size_t)1 << 20) - 1) >> 20 << 20;
}

static size_t live_slot(const CudaBackend *be, CUdeviceptr p)
{
    return (size_t)(((p >> 8) * 0x9E3779B97F4A7C15ULL) >> 20) & (be->caplive - 1);
}

static Block *live_find(CudaBackend *be, CUdeviceptr p)
{
    if (!be->caplive || !p)
        return NULL;
    for (size_t i = live_slot(be, p);; i = (i + 1) & (be->caplive - 1)) {
        if (be->live[i].p == p)
            return &be->live[i];
        if (be->live[i].p == 0)
            return NULL;
    }
}

static bool live_add(CudaBackend *be, CUdeviceptr p, size_t size)
{
    if (2 * (be->nlive + 1) > be->caplive) {
        size_t cap = be->caplive ? 2 * be->caplive : 256;
        Block *old = be->live, *q = mem_calloc(cap, sizeof *q);
        if (!q)
            return false;
        size_t oldcap = be->caplive;
        be->live = q;
        be->caplive = cap;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].p) {
                size_t j = live_slot(be, old[i].p);
                while (q[j].p)
                    j = (j + 1) & (cap - 1);
                q[j] = old[i];
            }
        mem_free(old);
    }
    size_t j = live_slot(be, p);
    while (be->live[j].p)
        j = (j + 1) & (be->caplive - 1);
    be->live[j] = (Block){p, size};
    be->nlive++;
    return true;
}

/* Removes the entry at e, shifting later entries of its probe run back (no tombstones). */
static void live_remove(CudaBackend *be, Block *e)
{
    size_t mask = be->caplive - 1, i = (size_t)(e - be->live);
    be->live[i].p = 0;
    for (size_t j = (i + 1) & mask; be->live[j].p; j = (j + 1) & mask) {
        size_t home = live_slot(be, be->live[j].p);
        /* Move entry j into the hole at i when its home is not within (i, j]. */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            be->live[i] = be->live[j];
            be->live[j].p = 0;
            i = j;
        }
    }
    be->nlive--;
}

static void release_cached(CudaBackend *be)
{
    for (size_t i = 0; i < be->ncached; i++)
        be->d->MemFree(be->cached[i].p);
    be->ncached = 0;
    be->cached_bytes = 0;
}

/* A device block of at least n bytes (a kept one of up to twice the size when there is one). */
static FcStatus dev_alloc(CudaBackend *be, size_t n, CUdeviceptr *out, FcError *err)
{
    size_t want = round_size(n);
    pthread_mutex_lock(&be->mu);
    size_t best = be->ncached;
    for (size_t i = 0; i < be->ncached; i++)
        if (be->cached[i].size >= want && be->cached[i].size <= 2 * want &&
            (best == be->ncached || be->cached[i].size < be->cached[best].size))
            best = i;
    CUdeviceptr p = 0;
    size_t size = want;
    if (best < be->ncached) {
        p = be->cached[best].p;
        size = be->cached[best].size;
        be->cached_bytes -= size;
        be->cached[best] = be->cached[--be->ncached];
    } else {
        CUresult r = be->d->MemAlloc(&p, want);
        if (r == 2 && be->ncached > 0) {            /* out of memory: give the kept blocks back */
            release_cached(be);
            r = be->d->MemAlloc(&p, want);
        }
        if (r != CUDA_OK) {
            pthread_mutex_unlock(&be->mu);
            if (r == 2) {
                snprintf(err->msg, sizeof err->msg, "CUDA out of memory (%s): tried to allocate %zu bytes",
                         be->name, want);
                return FC_ERR_NOMEM;
            }
            return cu_fail(be, r, "cuMemAlloc", err);
        }
    }
    if (!live_add(be, p, size)) {
        be->d->MemFree(p);
        pthread_mutex_unlock(&be->mu);
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return FC_ERR_NOMEM;
    }
    pthread_mutex_unlock(&be->mu);
    *out = p;
    return FC_OK;
}

static void dev_free(CudaBackend *be, CUdeviceptr p)
{
    pthread_mutex_lock(&be->mu);
    Block *e = live_find(be, p);
    if (e) {
        Block b = *e;
        live_remove(be, e);
        if (be->ncached == be->capcached) {
            size_t cap = be->capcached ? 2 * be->capcached : 64;
            Block *q = mem_realloc(be->cached, cap * sizeof *q);
            if (q) {
                be->cached = q;
                be->capcached = cap;
            }
        }
        if (be->ncached < be->capcached) {
            be->cached[be->ncached++] = b;
            be->cached_bytes += b.size;
        } else {
            be->d->MemFree(b.p);
        }
    }
    pthread_mutex_unlock(&be->mu);
}

static bool is_device(CudaBackend *be, const void *p)
{
    pthread_mutex_lock(&be->mu);
    bool r = live_find(be, (CUdeviceptr)(uintptr_t)p) != NULL;
    pthread_mutex_unlock(&be->mu);
    return r;
}

/* ---- the backend table: memory ---- */

static FcStatus cuda_alloc(FcBackend *base, size_t nbytes, void **out, FcError *err)
{
    CudaBackend *be = (CudaBackend *)base;
    be->d->CtxSetCurrent(be->ctx);
    CUdeviceptr p = 0;
    FcStatus st = dev_alloc(be, nbytes, &p, err);
    *out = st ? NULL : (void *)(uintptr_t)p;
    return st;
}

static void cuda_free(FcBackend *base, void *p)
{
    if (p)
        dev_free((CudaBackend *)base, (CUdeviceptr)(uintptr_t)p);
}

static FcStatus cuda_to_host(FcBackend *base, void *dst, const void *src, size_t n, FcError *err)
{
    CudaBackend *be = (CudaBackend *)base;
    be->d->CtxSetCurrent(be->ctx);
    CUresult r = n ? be->d->MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, n) : CUDA_OK;
    return r == CUDA_OK ? FC_OK : cu_fail(be, r, "cuMemcpyDtoH", err);
}

static FcStatus cuda_from_host(FcBackend *base, void *dst, const void *src, size_t n, FcError *err)
{
    CudaBackend *be = (CudaBackend *)base;
    be->d->CtxSetCurrent(be->ctx);
    CUresult r = n ? be->d->MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, n) : CUDA_OK;
    return r == CUDA_OK ? FC_OK : cu_fail(be, r, "cuMemcpyHtoD", err);
}

/* ---- modules ---- */

/* Compiles (through the cache) and loads src; fills the module's entry points. */
static FcStatus load_module(CudaBackend *be, const char *src, CUmodule *mod, FcError *err)
{
    FcCudaBuild b;
    FcStatus st = fc_cuda_compile(be->cache, src, be->sm, &b, err);
    if (st) {
        /* The log and numbered source go to stderr once: a compile error is a bug in tdl. */
        if (b.log)
            fprintf(stderr, "tdl: a generated CUDA kernel does not compile:\n%s\n", b.log);
        mem_free(b.log);
        mem_free(b.image);
        return st;
    }
    CUresult r = be->d->ModuleLoadData(mod, b.image);
    mem_free(b.image);
    mem_free(b.log);
    return r == CUDA_OK ? FC_OK : cu_fail(be, r, "cuModuleLoadData", err);
}

/* The module of c's source: found by the whole text, or added with no entry point loaded yet. */
static FcStatus kernel_module(CudaBackend *be, const CudaCode *c, Module **out, FcError *err)
{
    uint64_t h = fnv1a_bytes(FNV1A_SEED, c->src, c->len);
    for (int i = 0; i < be->nmods; i++)
        if (be->mods[i].hash == h && strcmp(be->mods[i].src, c->src) == 0) {
            *out = &be->mods[i];
            return FC_OK;
        }
    if (be->nmods == be->capmods) {
        int cap = be->capmods ? 2 * be->capmods : 32;
        Module *q = mem_realloc(be->mods, (size_t)cap * sizeof *q);
        if (!q) {
            snprintf(err->msg, sizeof err->msg, "out of memory");
            return FC_ERR_NOMEM;
        }
        be->mods = q;
        be->capmods = cap;
    }
    Module m = {.hash = h};
    m.src = mem_strdup(c->src);
    if (!m.src) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return FC_ERR_NOMEM;
    }
    be->mods[be->nmods] = m;
    *out = &be->mods[be->nmods++];
    return FC_OK;
}

/* Loads the entry points in the set need (bit 1 << e) of module m (c's code) that it has not
 * loaded yet, as one module. */
static FcStatus load_entries(CudaBackend *be, Module *m, const CudaCode *c, unsigned need, FcError *err)
{
    unsigned missing = 0;
    for (int e = 0; e < CUDA_NENTRY; e++)
        if ((need >> e & 1) && !m->fn[e])
            missing |= 1u << e;
    if (!missing)
        return FC_OK;
    char *src = fc_cuda_entries_source(c, missing);
    if (!src) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return FC_ERR_NOMEM;
    }
    CUmodule mod;
    FcStatus st = load_module(be, src, &mod, err);
    mem_free(src);
    if (st)
        return st;
    CUresult r = CUDA_OK;
    for (int e = 0; e < CUDA_NENTRY && r == CUDA_OK; e++)
        if (missing >> e & 1)
            r = be->d->ModuleGetFunction(&m->fn[e], mod, fc_cuda_entry_name((CudaEntry)e));
    if (r != CUDA_OK) {
        for (int e = 0; e < CUDA_NENTRY; e++)
            if (missing >> e & 1)
                m->fn[e] = NULL;
        be->d->ModuleUnload(mod);
        return cu_fail(be, r, "cuModuleGetFunction", err);
    }
    m->mod[m->nmod++] = mod;
    return FC_OK;
}

/* ---- running a kernel ---- */

/* A buffer in host memory (a CPU 0-dim tensor in a GPU expression): the span of elements the
 * kernel's loads of it can reach, copied to a temporary device block; *base is what the kernel
 * takes as the buffer's start (the block minus the span's start). */
static FcStatus stage(CudaBackend *be, const FcKernel *k, int buf, CUdeviceptr *tmp, CUdeviceptr *base, FcError *err)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;     /* bytes */
    for (int i = 0; i < k->ncode; i++) {
        const FcInstr *in = &k->code[i];
        if (in->op != FC_OP_LOAD || in->buf != buf)
            continue;
        int64_t es = (int64_t)fc_dtype_size(in->dtype), a = in->offset, b = in->offset;
        for (int l = 0; l < k->nloop; l++) {
            if (k->extent[l] <= 0)
                continue;
            int64_t span = in->strides[l] * (k->extent[l] - 1);
            if (span > 0)
                b += span;
            else
                a += span;
        }
        for (int g = 0; g < in->ngather; g++) {
            int64_t span = in->gathers[g].stride * (in->gathers[g].extent > 0 ? in->gathers[g].extent - 1 : 0);
            if (span > 0)
                b += span;
            else
                a += span;
        }
        if (a * es < lo)
            lo = a * es;
        if ((b + 1) * es > hi)
            hi = (b + 1) * es;
    }
    *tmp = 0;
    *base = 0;
    if (lo >= hi)
        return FC_OK;
    FcStatus st = dev_alloc(be, (size_t)(hi - lo), tmp, err);
    if (st)
        return st;
    CUresult r = be->d->MemcpyHtoD(*tmp, (const char *)k->bufs[buf] + lo, (size_t)(hi - lo));
    if (r != CUDA_OK) {
        dev_free(be, *tmp);
        *tmp = 0;
        return cu_fail(be, r, "cuMemcpyHtoD", err);
    }
    *base = *tmp - (CUdeviceptr)lo;
    return FC_OK;
}

static unsigned grid_for(int64_t work, int64_t per_block, int64_t cap)
{
    int64_t g = per_block > 0 ? (work + per_block - 1) / per_block : 1;
    if (g > cap)
        g = cap;
    return g < 1 ? 1 : (unsigned)g;
}

static FcStatus launch(CudaBackend *be, CUfunction f, unsigned gx, unsigned gy, unsigned bx, void *args,
                       FcError *err)
{
    void *params[] = {args};
    CUresult r = be->d->LaunchKernel(f, gx, gy, 1, bx, 1, 1, 0, NULL, params, NULL);
    return r == CUDA_OK ? FC_OK : cu_fail(be, r, "cuLaunchKernel", err);
}

/* Waits for the device and reads the error slot: the CPU executor's messages. */
static FcStatus finish(CudaBackend *be, FcError *err)
{
    CUresult r = be->d->CtxSynchronize();
    if (r != CUDA_OK)
        return cu_fail(be, r, "a kernel", err);
    struct {
        int32_t code, dim;
        int64_t value, extent;
    } e;
    r = be->d->MemcpyDtoH(&e, be->err_slot, sizeof e);
    if (r != CUDA_OK)
        return cu_fail(be, r, "cuMemcpyDtoH", err);
    if (e.code == 1) {
        snprintf(err->msg, sizeof err->msg, "index %lld is out of bounds for dimension %d with size %lld",
                 (long long)e.value, e.dim, (long long)e.extent);
        return FC_ERR_INDEX;
    }
    if (e.code == 2) {
        snprintf(err->msg, sizeof err->msg, "ZeroDivisionError");
        return FC_ERR_RUNTIME;
    }
    return FC_OK;
}

/* Runs k by its generated code c and module m (index into be->mods): stages host buffers, lays
 * out the arguments, launches, waits and reads the error slot. */
static FcStatus run_code(CudaBackend *be, const FcKernel *k, const CudaCode *cc, int mi, FcError *err)
{
    if (!is_device(be, k->out)) {
        snprintf(err->msg, sizeof err->msg, "a CUDA kernel's output is not memory of %s", be->name);
        return FC_ERR_DEVICE;
    }
    const CudaCode c = *cc;
    Module *m = &be->mods[mi];
    FcStatus st = FC_OK;
    CUdeviceptr *tmp = mem_calloc((size_t)k->nbufs + 1, sizeof *tmp), part = 0, pre = 0, scr = 0;
    CUdeviceptr *bases = mem_calloc((size_t)k->nbufs + 1, sizeof *bases);
    unsigned char *args = mem_calloc(1, c.args_size + 8);
    if (!st && (!tmp || !bases || !args)) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        st = FC_ERR_NOMEM;
    }
    for (int b = 0; b < k->nbufs && !st; b++) {
        if (is_device(be, k->bufs[b]))
            bases[b] = (CUdeviceptr)(uintptr_t)k->bufs[b];
        else
            st = stage(be, k, b, &tmp[b], &bases[b], err);
    }
    /* The launch: V points per thread when the vector loop allows it. */
    bool v = !st && c.vec && k->extent[c.vl] % c.V == 0;
    int64_t npts = v ? c.npts_v : c.npts;
    int64_t nsplit = 1, per = c.split_ext;
    CudaEntry ent = v ? CUDA_ENTRY_V : CUDA_ENTRY_S;
    if (!st) {
        fc_cuda_split(&c, npts, &nsplit, &per);
        st = load_entries(be, m, &c,
                          1u << ent | (nsplit > 1 ? 1u << CUDA_ENTRY_FINISH : 0) |
                              (c.pre_bytes > 0 ? 1u << CUDA_ENTRY_PRE : 0) |
                              (c.mode == CUDA_SORTED ? 1u << CUDA_ENTRY_KEYS | 1u << CUDA_ENTRY_SCAN |
                                                           1u << CUDA_ENTRY_FILL | 1u << CUDA_ENTRY_ORDER
                                                     : 0),
                          err);
        if (!st && nsplit > 1)
            st = dev_alloc(be, (size_t)npts * (size_t)nsplit * c.part_elem, &part, err);
        if (!st && c.pre_bytes > 0)
            st = dev_alloc(be, c.pre_bytes, &pre, err);
        if (!st && c.mode == CUDA_SORTED) {
            st = dev_alloc(be, c.scratch_bytes, &scr, err);
            CUresult r = st ? CUDA_OK : be->d->MemsetD8(scr, 0, c.scratch_zero);
            if (r != CUDA_OK)
                st = cu_fail(be, r, "cuMemsetD8", err);
        }
    }
    CUfunction f = m->fn[ent], fin = m->fn[CUDA_ENTRY_FINISH];
    for (int i = 0; i < c.nargs && !st; i++) {
        const CudaArg *a = &c.args[i];
        unsigned char *p = args + a->offset;
        uint64_t ptr = 0;
        switch (a->kind) {
        case CARG_OUT: ptr = (uint64_t)(uintptr_t)k->out; break;
        case CARG_BUF: ptr = bases[a->buf]; break;
        case CARG_ERR: ptr = be->err_slot; break;
        case CARG_PART: ptr = part; break;
        case CARG_PRE: ptr = pre; break;
        case CARG_SCRATCH: ptr = scr; break;
        case CARG_VAL: fc_cuda_arg_value(a, k, p); continue;
        }
        memcpy(p, &ptr, 8);
    }
    if (!st) {
        memcpy(args + c.args[c.arg_npts].offset, &npts, 8);
        if (c.arg_nsplit >= 0) {
            memcpy(args + c.args[c.arg_nsplit].offset, &nsplit, 8);
            memcpy(args + c.args[c.arg_per].offset, &per, 8);
        }
        CUresult r = be->d->MemsetD8(be->err_slot, 0, ERR_SLOT_BYTES);
        if (r != CUDA_OK)
            st = cu_fail(be, r, "cuMemsetD8", err);
    }
    bool launched = !st;
    if (!st && c.pre_bytes > 0)     /* the tables first, in the same stream */
        st = launch(be, m->fn[CUDA_ENTRY_PRE], grid_for(c.pre_pts, 256, (int64_t)be->nsm * 32), 1, 256, args, err);
    if (!st) {
        int64_t cap = (int64_t)be->nsm * 32;
        switch (c.mode) {
        case CUDA_THREAD:
        case CUDA_THREAD_REDUCE:
            st = launch(be, f, grid_for(npts, c.block, cap), 1, (unsigned)c.block, args, err);
            break;
        case CUDA_ROW:
        case CUDA_TILE:
            st = launch(be, f, grid_for(npts, 1, cap), 1, (unsigned)c.block, args, err);
            break;
        case CUDA_BLOCK_REDUCE:
            st = launch(be, f, grid_for(npts, 1, cap), (unsigned)nsplit, (unsigned)c.block, args, err);
            if (!st && nsplit > 1)
                st = launch(be, fin, grid_for(npts, 1, cap), 1, 256, args, err);
            break;
        case CUDA_SERIAL:
            st = launch(be, f, 1, 1, 1, args, err);
            break;
        case CUDA_OWNER:
            st = launch(be, f, grid_for(npts, c.block, cap), 1, (unsigned)c.block, args, err);
            if (!st && npts > 1)
                fc_owner_split_note();
            break;
        case CUDA_SORTED: {
            /* the records' keys, the runs' starts, the runs, each in loop order; then the store */
            unsigned gr = grid_for(c.nrec, 256, cap), gk = grid_for(c.nkeys, 256, cap), gs = grid_for(c.scan_tiles, 1, cap);
            st = launch(be, m->fn[CUDA_ENTRY_KEYS], gr, 1, 256, args, err);
            if (!st)
                st = launch(be, m->fn[CUDA_ENTRY_SCAN], gs, 1, 256, args, err);
            if (!st)
                st = launch(be, m->fn[CUDA_ENTRY_FILL], gr, 1, 256, args, err);
            if (!st)
                st = launch(be, m->fn[CUDA_ENTRY_ORDER], gk, 1, 256, args, err);
            if (!st)
                st = launch(be, f, grid_for(npts, c.block, cap), 1, (unsigned)c.block, args, err);
            if (!st)
                fc_owner_split_note();
            break;
        }
        }
    }
    if (launched) {
        /* Wait even after a failed launch (the temporaries may be in use), then read the slot. */
        FcError e2;
        double t0 = be->prof ? now() : 0;
        FcStatus st2 = finish(be, &e2);
        if (be->prof)
            be->t_wait += now() - t0;
        if (!st && st2) {
            st = st2;
            *err = e2;
        }
    }
    for (int b = 0; tmp && b < k->nbufs; b++)
        if (tmp[b])
            dev_free(be, tmp[b]);
    if (part)
        dev_free(be, part);
    if (pre)
        dev_free(be, pre);
    if (scr)
        dev_free(be, scr);
    mem_free(tmp);
    mem_free(bases);
    mem_free(args);
    return st;
}

/* k's code and the index of its module (compiled on first use), or an error; *c is to be freed
 * by the caller in every case. A kernel with no point has no module (*mi = -1). */
static FcStatus code_and_module(CudaBackend *be, const FcKernel *k, CudaCode *c, int *mi, FcError *err)
{
    *mi = -1;
    FcStatus st = fc_cuda_codegen(k, c, err);
    if (st || c->npts == 0)
        return st;
    Module *m = NULL;
    st = kernel_module(be, c, &m, err);
    if (!st)
        *mi = (int)(m - be->mods);
    return st;
}

static bool interrupted(const FcKernel *k, FcError *err)
{
    if (!(k->interrupt && *k->interrupt))
        return false;
    snprintf(err->msg, sizeof err->msg, "interrupted");
    return true;
}

static FcStatus cuda_supports(FcBackend *base, const FcInstr *in, FcDType a_dtype, FcError *err)
{
    (void)base;
    return fc_cuda_supports(in, a_dtype, err);
}

static FcStatus cuda_run(FcBackend *base, const FcKernel *k, FcError *err)
{
    CudaBackend *be = (CudaBackend *)base;
    if (interrupted(k, err))
        return FC_ERR_INTERRUPT;
    be->d->CtxSetCurrent(be->ctx);
    CudaCode c;
    int mi;
    double t0 = be->prof ? now() : 0;
    FcStatus st = code_and_module(be, k, &c, &mi, err);
    double t1 = be->prof ? now() : 0;
    if (!st && mi >= 0)
        st = run_code(be, k, &c, mi, err);
    fc_cuda_code_free(&c);
    if (be->prof) {
        be->t_code += t1 - t0;
        be->t_launch += now() - t1;
        be->nrun++;
    }
    return st;
}

/* A kept kernel (the scheduler's kernel cache): its code generated and its module loaded once,
 * so that running it again only launches. Equal kernels have equal code and arguments but for
 * the buffers and the output, which run_code reads from the kernel of each run. */
typedef struct Prepared {
    CudaCode c;
    int mi;
} Prepared;

static FcStatus cuda_prepare(FcBackend *base, const FcKernel *k, void **handle, FcError *err)
{
    CudaBackend *be = (CudaBackend *)base;
    *handle = NULL;
    Prepared *p = mem_calloc(1, sizeof *p);
    if (!p) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return FC_ERR_NOMEM;
    }
    be->d->CtxSetCurrent(be->ctx);
    FcStatus st = code_and_module(be, k, &p->c, &p->mi, err);
    if (st) {
        fc_cuda_code_free(&p->c);
        mem_free(p);
        return st;
    }
    *handle = p;
    return FC_OK;
}

static FcStatus cuda_run_prepared(FcBackend *base, void *handle, const FcKernel *k, FcError *err)
{
    CudaBackend *be = (CudaBackend *)base;
    const Prepared *p = handle;
    if (interrupted(k, err))
        return FC_ERR_INTERRUPT;
    if (p->mi < 0)
        return FC_OK;
    be->d->CtxSetCurrent(be->ctx);
    double t0 = be->prof ? now() : 0;
    FcStatus st = run_code(be, k, &p->c, p->mi, err);
    if (be->prof) {
        be->t_launch += now() - t0;
        be->nrun++;
        be->nkept++;
    }
    return st;
}

static void cuda_release(FcBackend *base, void *handle)
{
    (void)base;
    Prepared *p = handle;
    if (!p)
        return;
    fc_cuda_code_free(&p->c);
    mem_free(p);
}

/* ---- matrix products ---- */

static FcStatus cuda_matmul(FcBackend *base, const FcMatmul *m, FcError *err)
{
    CudaBackend *be = (CudaBackend *)base;
    be->d->CtxSetCurrent(be->ctx);
    FcDType dt = m->dtype;
    if (dt != FC_FLOAT32 && dt != FC_FLOAT64 && dt != FC_INT32 && dt != FC_INT64) {
        snprintf(err->msg, sizeof err->msg, "\"addmm_cuda\" not implemented for '%s'", fc_dtype_torch_name(dt));
        return FC_ERR_TYPE;
    }
    if (!be->mm_fn[dt]) {
        char *src = fc_cuda_matmul_source(dt);
        if (!src) {
            snprintf(err->msg, sizeof err->msg, "out of memory");
            return FC_ERR_NOMEM;
        }
        FcStatus st = load_module(be, src, &be->mm_mod[dt], err);
        mem_free(src);
        if (st)
            return st;
        CUresult r = be->d->ModuleGetFunction(&be->mm_fn[dt], be->mm_mod[dt], "tdl_mm");
        if (r != CUDA_OK) {
            be->mm_fn[dt] = NULL;
            return cu_fail(be, r, "cuModuleGetFunction", err);
        }
    }
    int64_t nb = 1;
    for (int d = 0; d < m->nbatch; d++)
        nb *= m->batch[d];
    if (m->m == 0 || m->n == 0 || nb == 0)
        return FC_OK;
    /* struct MmArgs: three pointers, fourteen i64, four arrays of FC_MAX_DIMS i64. */
    int64_t w[3 + 14 + 4 * FC_MAX_DIMS];
    memset(w, 0, sizeof w);
    uint64_t pa = (uint64_t)(uintptr_t)m->a, pb = (uint64_t)(uintptr_t)m->b, pc = (uint64_t)(uintptr_t)m->c;
    memcpy(&w[0], &pa, 8);
    memcpy(&w[1], &pb, 8);
    memcpy(&w[2], &pc, 8);
    int64_t vals[14] = {m->m, m->n, m->k, nb, m->nbatch, m->a_offset, m->a_rs, m->a_cs,
                        m->b_offset, m->b_rs, m->b_cs, m->c_offset, m->c_rs, m->c_cs};
    memcpy(&w[3], vals, sizeof vals);
    for (int d = 0; d < m->nbatch; d++) {
        w[17 + d] = m->batch[d];
        w[17 + FC_MAX_DIMS + d] = m->a_bstride[d];
        w[17 + 2 * FC_MAX_DIMS + d] = m->b_bstride[d];
        w[17 + 3 * FC_MAX_DIMS + d] = m->c_bstride[d];
    }
    void *params[] = {w};
    unsigned gx = grid_for(m->n, 16, 65535), gy = grid_for(m->m, 16, 65535), gz = grid_for(nb, 1, 65535);
    CUresult r = be->d->LaunchKernel(be->mm_fn[dt], gx, gy, gz, 16, 16, 1, 0, NULL, params, NULL);
    if (r != CUDA_OK)
        return cu_fail(be, r, "cuLaunchKernel", err);
    r = be->d->CtxSynchronize();
    return r == CUDA_OK ? FC_OK : cu_fail(be, r, "the matrix product", err);
}

/* ---- convolutions, pooling and batch norm through cuDNN (cuda_cudnn.c) ---- */

static FcStatus cuda_conv(FcBackend *base, FcConv *c, FcError *err)
{
    CudaBackend *be = (CudaBackend *)base;
    be->d->CtxSetCurrent(be->ctx);
    FcStatus st = fc_cudnn_conv(&be->dnn, base, c, err);
    if (st || !c->taken)
        return st;
    /* as a kernel's run does: done before it returns, its faults reported here */
    CUresult r = be->d->CtxSynchronize();
    return r == CUDA_OK ? FC_OK : cu_fail(be, r, "the cuDNN operation", err);
}

/* ---- the backend object ---- */

static void cuda_destroy(FcBackend *base)
{
    CudaBackend *be = (CudaBackend *)base;
    if (!be)
        return;
    be->d->CtxSetCurrent(be->ctx);
    be->d->CtxSynchronize();
    if (be->prof)
        fprintf(stderr,
                "tdl: %s: %ld kernels run (%ld kept); host seconds: %.4f generating code and finding "
                "modules, %.4f staging and launching, %.4f waiting for the device (in the launching)\n",
                be->name, be->nrun, be->nkept, be->t_code, be->t_launch, be->t_wait);
    fc_cudnn_state_free(be->dnn);
    for (int i = 0; i < be->nmods; i++) {
        for (int e = 0; e < be->mods[i].nmod; e++)
            be->d->ModuleUnload(be->mods[i].mod[e]);
        mem_free(be->mods[i].src);
    }
    mem_free(be->mods);
    for (int t = 0; t < FC_DTYPE__COUNT; t++)
        if (be->mm_mod[t])
            be->d->ModuleUnload(be->mm_mod[t]);
    release_cached(be);
    for (size_t i = 0; i < be->caplive; i++)
        if (be->live[i].p)
            be->d->MemFree(be->live[i].p);
    mem_free(be->live);
    mem_free(be->cached);
    if (be->err_slot)
        be->d->MemFree(be->err_slot);
    fc_cuda_cache_free(be->cache);
    pthread_mutex_destroy(&be->mu);
    mem_free(be);
}

FcStatus fc_cuda_backend_new(int index, FcBackend **out, FcError *err)
{
    *out = NULL;
    const char *why = NULL;
    const CudaDriver *d = fc_cuda_driver(&why);
    if (!d) {
        snprintf(err->msg, sizeof err->msg, "%s", why);
        return FC_ERR_DEVICE;
    }
    int count = 0;
    CUresult r = d->DeviceGetCount(&count);
    if (r != CUDA_OK || index >= count) {
        char what[160];
        if (r != CUDA_OK) {
            fc_cuda_result_str(d, r, what, sizeof what);
            snprintf(err->msg, sizeof err->msg, "no CUDA device (cuDeviceGetCount: %s)", what);
        } else if (count == 0) {
            snprintf(err->msg, sizeof err->msg, "no CUDA device");
        } else if (count == 1) {
            snprintf(err->msg, sizeof err->msg, "there is only one CUDA device (cuda:0)");
        } else {
            snprintf(err->msg, sizeof err->msg, "there are only %d CUDA devices (cuda:0 to cuda:%d)", count, count - 1);
        }
        return FC_ERR_DEVICE;
    }
    const CudaNvrtc *nv = fc_cuda_nvrtc(&why);
    if (!nv) {
        snprintf(err->msg, sizeof err->msg, "%s", why);
        return FC_ERR_DEVICE;
    }
    CudaBackend *be = mem_calloc(1, sizeof *be);
    if (!be || pthread_mutex_init(&be->mu, NULL) != 0) {
        mem_free(be);
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return FC_ERR_NOMEM;
    }
    be->d = d;
    be->index = index;
    be->base = (FcBackend){
        .name = "cuda",
        .device = FC_DEV_CUDA,
        .target = &fc_cuda_target,
        .supports = cuda_supports,
        .alloc = cuda_alloc,
        .free = cuda_free,
        .to_host = cuda_to_host,
        .from_host = cuda_from_host,
        .run = cuda_run,
        .prepare = cuda_prepare,
        .run_prepared = cuda_run_prepared,
        .release = cuda_release,
        .matmul = cuda_matmul,
        .conv = cuda_conv,
        .destroy = cuda_destroy,
    };
    snprintf(be->name, sizeof be->name, "cuda:%d", index);
    int major = 0, minor = 0;
    r = d->DeviceGet(&be->dev, index);
    if (r == CUDA_OK)
        r = d->DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, be->dev);
    if (r == CUDA_OK)
        r = d->DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, be->dev);
    if (r == CUDA_OK)
        r = d->DeviceGetAttribute(&be->nsm, CU_ATTR_MULTIPROCESSOR_COUNT, be->dev);
    if (r == CUDA_OK) {
        char name[100] = "";
        d->DeviceGetName(name, (int)sizeof name, be->dev);
        snprintf(be->name, sizeof be->name, "cuda:%d, %s", index, name);
        r = fc_cuda_primary_context(d, index, be->dev, &be->ctx);
    }
    if (r != CUDA_OK) {
        FcStatus st = cu_fail(be, r, "opening the device", err);
        pthread_mutex_destroy(&be->mu);
        mem_free(be);
        return st == FC_ERR_NOMEM ? st : FC_ERR_DEVICE;
    }
    be->sm = major * 10 + minor;
    if (be->nsm < 1)
        be->nsm = 1;
    const char *pe = getenv("TDL_CUDA_PROFILE");
    be->prof = pe && *pe && strcmp(pe, "0") != 0;
    r = d->CtxSetCurrent(be->ctx);
    if (r == CUDA_OK)
        r = d->MemAlloc(&be->err_slot, ERR_SLOT_BYTES);
    be->cache = fc_cuda_cache_new(NULL);
    if (r != CUDA_OK || !be->cache) {
        FcStatus st = r != CUDA_OK ? cu_fail(be, r, "cuMemAlloc", err) : FC_ERR_NOMEM;
        if (st == FC_ERR_NOMEM && r == CUDA_OK)
            snprintf(err->msg, sizeof err->msg, "out of memory");
        if (be->err_slot)
            d->MemFree(be->err_slot);
        fc_cuda_cache_free(be->cache);
        pthread_mutex_destroy(&be->mu);
        mem_free(be);
        return st;
    }
    *out = &be->base;
    return FC_OK;
}
