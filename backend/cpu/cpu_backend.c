/* cpu_backend.c — the CPU backend's FcBackend table: host memory for device memory (with a cache
 * of large blocks), kernels and matrix products handed to the executors, the pool (cpu_pool.c)
 * started lazily and stopped by destroy. The backend holds all its state (no global state).
 * Depends on backend.h and pthreads only. */
#include "cpu_internal.h"
#include "mem.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { HUGE_PAGE = 2 << 20 };

void *fc_cpu_aligned_alloc(size_t nbytes)
{
    /* No x86-64 or AArch64 address space holds 2^48 bytes: refuse such sizes here rather than
     * hand them to an allocator (sanitizer allocators abort on them instead of failing). */
    if ((uint64_t)nbytes >= (uint64_t)1 << 48)
        return NULL;
    /* A large block is asked to be backed by transparent huge pages (where the kernel does that
     * on request, Linux's default "madvise" mode): a kernel that walks it with a large stride
     * (roi_align's taps across the channel planes of an NCHW input, a transpose) then misses the
     * TLB far less, and the block faults in 2 MiB at a time. It is aligned to a huge page and
     * rounded up to whole ones, so it holds nothing else. */
    if (nbytes >= 4 * (size_t)HUGE_PAGE) {
        size_t n = (nbytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
        void *p = mem_aligned_alloc(HUGE_PAGE, n);
#ifdef MADV_HUGEPAGE
        if (p)
            madvise(p, n, MADV_HUGEPAGE);     /* a hint: refused, the pages are small */
#endif
        return p;
    }
    /* aligned_alloc wants a multiple of the alignment; 0 still gives a unique pointer. */
    size_t n = (nbytes + 63) & ~(size_t)63;
    return mem_aligned_alloc(64, n ? n : 64);
}

/* ---- memory ---- */

/* The block cache (CpuBackend.cache). A block of a few huge pages or more that is freed is kept,
 * up to CPU_CACHE_BLOCKS of them (the oldest going first), and handed to the next allocation
 * that it fits with at most an eighth to spare: a gradient's buffers, a channels_last copy and a
 * result are allocated afresh at every step of a training loop, and the kernel zeroes fresh
 * memory page by page at its first touch (clear_page: a third of roi_align's forward and
 * backward). Callers never assume zeroed memory (zeros are written by a fill kernel). A kept
 * block stays charged to the memory account; an allocation refused empties the cache and is
 * tried again. Not under AddressSanitizer, whose use-after-free checks reuse would blind. */
#if defined(__SANITIZE_ADDRESS__)
#define CPU_CACHE_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CPU_CACHE_ON 0
#endif
#endif
#ifndef CPU_CACHE_ON
#define CPU_CACHE_ON 1
#endif

/* Large blocks: CACHE_MIN bytes or more. Small ones: from SMALL_MIN (a smaller request is the
 * allocator's own fast case) to SMALL_MAX, an allocation of fc_cpu_aligned_alloc's 64-byte
 * alignment; they are kept in a list of their own, so that a loop of small ops does not push the
 * large blocks out. */
enum { CACHE_MIN = 4 * HUGE_PAGE, SMALL_MIN = 1024, SMALL_MAX = 256 << 10 };

/* A kept block of at least nbytes, at most an eighth more than a new one would be, or NULL. A
 * new large block is whole huge pages (fc_cpu_aligned_alloc): a 12.25 MiB request gets 14, and
 * measured against the request that block never fitted the same request again. A kept block's
 * size is what malloc_usable_size says, and glibc's aligned allocation of a mapped block keeps
 * whatever the alignment left past its end: up to a huge page (and a page) more than asked,
 * depending on where the mapping fell, so that slack is allowed too (without it the same
 * request missed its own block now and then). */
static void *cache_take(CpuBackend *be, size_t nbytes)
{
    bool large = nbytes >= CACHE_MIN;
    if (!CPU_CACHE_ON || (!large && (nbytes < SMALL_MIN || nbytes > SMALL_MAX)))
        return NULL;
    size_t fresh = large ? (nbytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1) : nbytes;
    size_t most = fresh + fresh / 8 + (large ? HUGE_PAGE + 4096 : 0);
    void *p = NULL;
    pthread_mutex_lock(&be->cache_mu);
    int *n = large ? &be->ncache : &be->nsmall;
    void **blk = large ? be->cache : be->small;
    size_t *size = large ? be->cache_size : be->small_size;
    int best = -1;
    for (int i = 0; i < *n; i++)
        if (size[i] >= nbytes && size[i] <= most && (best < 0 || size[i] < size[best]))
            best = i;
    if (best >= 0) {
        p = blk[best];
        for (int i = best + 1; i < *n; i++) {
            blk[i - 1] = blk[i];
            size[i - 1] = size[i];
        }
        (*n)--;
        be->cache_hits += large;
    }
    pthread_mutex_unlock(&be->cache_mu);
    return p;
}

/* Keeps p when it is a large block (aligned to a huge page: fc_cpu_aligned_alloc's) or a small
 * one; frees the oldest kept one of its kind to make room. Returns whether p was kept. */
static bool cache_keep(CpuBackend *be, void *p)
{
    if (!CPU_CACHE_ON || !p || (uintptr_t)p % 64 != 0)
        return false;
    size_t sz = malloc_usable_size(p);
    bool large = sz >= CACHE_MIN;
    if (large ? (uintptr_t)p % HUGE_PAGE != 0 : sz < SMALL_MIN || sz > SMALL_MAX)
        return false;
    void *old = NULL;
    pthread_mutex_lock(&be->cache_mu);
    int *n = large ? &be->ncache : &be->nsmall;
    void **blk = large ? be->cache : be->small;
    size_t *size = large ? be->cache_size : be->small_size;
    if (*n == CPU_CACHE_BLOCKS) {
        old = blk[0];
        memmove(blk, blk + 1, (CPU_CACHE_BLOCKS - 1) * sizeof *blk);
        memmove(size, size + 1, (CPU_CACHE_BLOCKS - 1) * sizeof *size);
        (*n)--;
    }
    blk[*n] = p;
    size[(*n)++] = sz;
    pthread_mutex_unlock(&be->cache_mu);
    mem_free(old);
    return true;
}

/* Frees every kept block; returns how many there were. */
static int cache_empty(CpuBackend *be)
{
    pthread_mutex_lock(&be->cache_mu);
    int n = be->ncache, m = be->nsmall;
    void *blocks[2 * CPU_CACHE_BLOCKS];
    memcpy(blocks, be->cache, (size_t)n * sizeof *blocks);
    memcpy(blocks + n, be->small, (size_t)m * sizeof *blocks);
    be->ncache = be->nsmall = 0;
    pthread_mutex_unlock(&be->cache_mu);
    for (int i = 0; i < n + m; i++)
        mem_free(blocks[i]);
    return n + m;
}

long fc_cpu_cache_hits(FcBackend *base)
{
    CpuBackend *be = (CpuBackend *)base;
    if (!CPU_CACHE_ON)
        return -1;
    pthread_mutex_lock(&be->cache_mu);
    long n = be->cache_hits;
    pthread_mutex_unlock(&be->cache_mu);
    return n;
}

static FcStatus cpu_alloc(FcBackend *base, size_t nbytes, void **out, FcError *err)
{
    CpuBackend *be = (CpuBackend *)base;
    void *p = cache_take(be, nbytes);
    if (!p)
        p = fc_cpu_aligned_alloc(nbytes);
    if (!p && cache_empty(be) > 0)
        p = fc_cpu_aligned_alloc(nbytes);
    if (!p) {
        *out = NULL;
        snprintf(err->msg, sizeof err->msg,
                 "DefaultCPUAllocator: not enough memory: you tried to allocate %zu bytes.", nbytes);
        return FC_ERR_NOMEM;
    }
    *out = p;
    return FC_OK;
}

static void cpu_free(FcBackend *be, void *p)
{
    if (!cache_keep((CpuBackend *)be, p))
        mem_free(p);
}

static FcStatus cpu_copy(FcBackend *be, void *dst, const void *src, size_t nbytes, FcError *err)
{
    if (nbytes)
        memmove(dst, src, nbytes);
    return FC_OK;
}

static FcStatus cpu_run(FcBackend *be, const FcKernel *k, FcError *err)
{
    return fc_cpu_run_kernel((CpuBackend *)be, k, err);
}

static FcStatus cpu_prepare(FcBackend *be, const FcKernel *k, void **handle, FcError *err)
{
    return fc_cpu_prepare((CpuBackend *)be, k, handle, err);
}

static FcStatus cpu_run_prepared(FcBackend *be, void *handle, const FcKernel *k, FcError *err)
{
    return fc_cpu_run_prepared((CpuBackend *)be, handle, k, err);
}

static void cpu_release(FcBackend *be, void *handle)
{
    fc_cpu_release(handle);
}

static FcStatus cpu_mm(FcBackend *be, const FcMatmul *m, FcError *err)
{
    return fc_cpu_matmul((CpuBackend *)be, m, err);
}

static FcStatus cpu_ordered_sum(FcBackend *be, const FcOrderedSum *s, FcError *err)
{
    CpuBackend *cpu = (CpuBackend *)be;
    switch (s->order) {
    case FC_SUM_CASCADE: return fc_cpu_cascade_sum(cpu, s, err);
    case FC_SUM_LANES:
    case FC_SUM_NORM2:
    case FC_PROD_VEC: return fc_cpu_vec_sum(cpu, s, err);
    default: return fc_cpu_serial_sum(cpu, s, err);
    }
}

static void cpu_destroy(FcBackend *base)
{
    CpuBackend *be = (CpuBackend *)base;
    if (!be)
        return;
    fc_cpu_pool_stop(be);
    cache_empty(be);
    pthread_mutex_destroy(&be->cache_mu);
    pthread_cond_destroy(&be->wake);
    pthread_cond_destroy(&be->done);
    pthread_mutex_destroy(&be->mu);
    pthread_mutex_destroy(&be->busy);
    mem_free(be);
}

static FcStatus cpu_supports(FcBackend *base, const FcInstr *in, FcDType a_dtype, FcError *err)
{
    (void)base;
    return fc_cpu_supports(in, a_dtype, err);
}

FcBackend *fc_cpu_backend_new(int nthreads)
{
    CpuBackend *be = mem_calloc(1, sizeof *be);
    if (!be)
        return NULL;
    be->base = (FcBackend){
        .name = "cpu",
        .device = FC_DEV_CPU,
        .target = &fc_cpu_target,
        .supports = cpu_supports,
        .alloc = cpu_alloc,
        .free = cpu_free,
        .to_host = cpu_copy,
        .from_host = cpu_copy,
        .run = cpu_run,
        .prepare = cpu_prepare,
        .run_prepared = cpu_run_prepared,
        .release = cpu_release,
        .matmul = cpu_mm,
        .matmul_epilogue = true,
        .matmul_implicit = true,
        .ordered_sum = cpu_ordered_sum,
        .destroy = cpu_destroy,
    };
    be->nthreads = nthreads < 1 ? 1 : nthreads;
    if (pthread_mutex_init(&be->mu, NULL) != 0) {
        mem_free(be);
        return NULL;
    }
    if (pthread_mutex_init(&be->busy, NULL) != 0) {
        pthread_mutex_destroy(&be->mu);
        mem_free(be);
        return NULL;
    }
    if (pthread_mutex_init(&be->cache_mu, NULL) != 0) {
        pthread_mutex_destroy(&be->busy);
        pthread_mutex_destroy(&be->mu);
        mem_free(be);
        return NULL;
    }
    if (pthread_cond_init(&be->wake, NULL) != 0) {
        pthread_mutex_destroy(&be->cache_mu);
        pthread_mutex_destroy(&be->busy);
        pthread_mutex_destroy(&be->mu);
        mem_free(be);
        return NULL;
    }
    if (pthread_cond_init(&be->done, NULL) != 0) {
        pthread_cond_destroy(&be->wake);
        pthread_mutex_destroy(&be->cache_mu);
        pthread_mutex_destroy(&be->busy);
        pthread_mutex_destroy(&be->mu);
        mem_free(be);
        return NULL;
    }
    return &be->base;
}

FcBackend *fc_cpu_backend_as_cuda_new(int nthreads)
{
    FcBackend *be = fc_cpu_backend_new(nthreads);
    if (be) {
        be->name = "cuda (host memory, for tests)";
        be->device = FC_DEV_CUDA;
        be->matmul_epilogue = false;    /* as the CUDA backend */
        be->matmul_implicit = false;
        be->ordered_sum = NULL;
    }
    return be;
}
