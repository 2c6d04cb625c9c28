/* cpu_backend.c — the CPU backend's FcBackend table: host memory for device memory, and the
 * thread pool that kernels and matrix products run on.
 *
 * The pool belongs to the backend (no global state). Its workers start on the first job that
 * wants more than one thread, sleep on a condition variable between jobs, and are joined by
 * destroy. A job is a parallel-for over numbered tasks in which the calling thread takes part;
 * tasks are claimed in order through an atomic counter, so a failing or interrupted job stops
 * soon without waiting for the tasks nobody has claimed yet.
 * Depends on backend.h and pthreads only. */
#include "cpu_internal.h"
#include "mem.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

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

enum { CACHE_MIN = 4 * HUGE_PAGE };

/* A kept block of at least nbytes, at most an eighth more, or NULL. */
static void *cache_take(CpuBackend *be, size_t nbytes)
{
    if (!CPU_CACHE_ON || nbytes < CACHE_MIN)
        return NULL;
    void *p = NULL;
    pthread_mutex_lock(&be->cache_mu);
    int best = -1;
    for (int i = 0; i < be->ncache; i++)
        if (be->cache_size[i] >= nbytes && be->cache_size[i] - nbytes <= nbytes / 8 &&
            (best < 0 || be->cache_size[i] < be->cache_size[best]))
            best = i;
    if (best >= 0) {
        p = be->cache[best];
        for (int i = best + 1; i < be->ncache; i++) {
            be->cache[i - 1] = be->cache[i];
            be->cache_size[i - 1] = be->cache_size[i];
        }
        be->ncache--;
        be->cache_hits++;
    }
    pthread_mutex_unlock(&be->cache_mu);
    return p;
}

/* Keeps p when it is a large block (aligned to a huge page: fc_cpu_aligned_alloc's); frees the
 * oldest kept one to make room. Returns whether p was kept. */
static bool cache_keep(CpuBackend *be, void *p)
{
    if (!CPU_CACHE_ON || !p || (uintptr_t)p % HUGE_PAGE != 0)
        return false;
    size_t n = malloc_usable_size(p);
    if (n < CACHE_MIN)
        return false;
    void *old = NULL;
    pthread_mutex_lock(&be->cache_mu);
    if (be->ncache == CPU_CACHE_BLOCKS) {
        old = be->cache[0];
        memmove(be->cache, be->cache + 1, (CPU_CACHE_BLOCKS - 1) * sizeof *be->cache);
        memmove(be->cache_size, be->cache_size + 1, (CPU_CACHE_BLOCKS - 1) * sizeof *be->cache_size);
        be->ncache--;
    }
    be->cache[be->ncache] = p;
    be->cache_size[be->ncache++] = n;
    pthread_mutex_unlock(&be->cache_mu);
    mem_free(old);
    return true;
}

/* Frees every kept block; returns how many there were. */
static int cache_empty(CpuBackend *be)
{
    pthread_mutex_lock(&be->cache_mu);
    int n = be->ncache;
    void *blocks[CPU_CACHE_BLOCKS];
    memcpy(blocks, be->cache, (size_t)n * sizeof *blocks);
    be->ncache = 0;
    pthread_mutex_unlock(&be->cache_mu);
    for (int i = 0; i < n; i++)
        mem_free(blocks[i]);
    return n;
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

/* ---- the pool ---- */

/* Claims and runs tasks until none is left, the job stops, or the host interrupts. */
static void job_work(CpuJob *job, int tid)
{
    while (!atomic_load_explicit(&job->stop, memory_order_relaxed)) {
        if (job->interrupt && *job->interrupt) {
            atomic_store(&job->interrupted, 1);
            atomic_store(&job->stop, 1);
            break;
        }
        int64_t t = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
        if (t >= job->ntasks)
            break;
        if (!job->fn(job->arg, tid, t))
            atomic_store(&job->stop, 1);
    }
}

typedef struct WorkerArg {
    CpuBackend *be;
    int id;                     /* 0-based worker number; its tid in a job is id + 1 */
    uint64_t gen;               /* the generation before the worker's first job */
} WorkerArg;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Waits up to SPIN_NS for *v to differ from old (a uint64_t or int, read with atomic loads), for
 * the next job of a caller that runs kernels back to back: a thread asleep on a condition variable
 * takes tens of microseconds to wake, as long as a small kernel takes to run. Not longer: a worker
 * spinning on the caller's core (or its sibling) slows what the caller does between kernels
 * (roi_align SMALL at two threads: 0.17 ms with 20 us, 0.17 or 0.25 by the run with 100). */
#define SPIN_NS 20000
#define SPIN_WHILE(v, old)                                                                         \
    do {                                                                                           \
        struct timespec t0_, t1_;                                                                  \
        clock_gettime(CLOCK_MONOTONIC, &t0_);                                                      \
        for (unsigned i_ = 1; __atomic_load_n(v, __ATOMIC_ACQUIRE) == (old); i_++) {               \
            cpu_relax();                                                                           \
            if (i_ % 64 == 0) {                                                                    \
                clock_gettime(CLOCK_MONOTONIC, &t1_);                                              \
                if ((t1_.tv_sec - t0_.tv_sec) * 1000000000L + (t1_.tv_nsec - t0_.tv_nsec) > SPIN_NS) \
                    break;                                                                         \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void *worker_main(void *p)
{
    WorkerArg wa = *(WorkerArg *)p;
    free(p);    /* libc: freed on the worker's thread, which no interpreter's account covers */
    CpuBackend *be = wa.be;
    uint64_t seen = wa.gen;
    pthread_mutex_lock(&be->mu);
    for (;;) {
        if (!be->quit && be->gen == seen) {
            pthread_mutex_unlock(&be->mu);
            SPIN_WHILE(&be->gen, seen);
            pthread_mutex_lock(&be->mu);
        }
        while (!be->quit && be->gen == seen)
            pthread_cond_wait(&be->wake, &be->mu);
        if (be->quit)
            break;
        seen = be->gen;
        if (wa.id >= be->job_workers || !be->job)
            continue;           /* not asked, or woken after its caller closed it */
        CpuJob *job = be->job;
        __atomic_store_n(&be->active, be->active + 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&be->mu);
        job_work(job, wa.id + 1);
        pthread_mutex_lock(&be->mu);
        int left = be->active - 1;
        __atomic_store_n(&be->active, left, __ATOMIC_RELEASE);
        if (left == 0)
            pthread_cond_signal(&be->done);
    }
    pthread_mutex_unlock(&be->mu);
    return NULL;
}

/* Starts the workers once (under be->busy). Fewer than asked for is fine: jobs use those there are. */
static void pool_start(CpuBackend *be)
{
    if (be->pool_tried)
        return;
    be->pool_tried = true;
    int want = be->nthreads - 1;
    /* The pool's own startup calls libc: it is the backend's, not a program's, and a failure
     * only means fewer workers. */
    be->workers = calloc((size_t)want, sizeof *be->workers);   /* libc: the pool's startup */
    if (!be->workers)
        return;
    for (int i = 0; i < want; i++) {
        WorkerArg *wa = malloc(sizeof *wa);     /* libc: the pool's startup */
        if (!wa)
            break;
        wa->be = be;
        wa->id = i;
        /* Given, not read by the worker when it gets to run: by then the job that started the
         * pool may already have bumped the generation, and the worker must not miss it. */
        wa->gen = be->gen;
        if (pthread_create(&be->workers[i], NULL, worker_main, wa) == 0) {
            be->nworkers++;
        } else {
            free(wa);       /* libc: the pool's startup */
            break;
        }
    }
}

int fc_cpu_clamp_threads(const CpuBackend *be, int nthreads)
{
    if (nthreads > be->nthreads)
        nthreads = be->nthreads;
    return nthreads < 1 ? 1 : nthreads;
}

bool fc_cpu_parallel_for(CpuBackend *be, int nthreads, int64_t ntasks, CpuTaskFn fn, void *arg,
                      volatile int *interrupt)
{
    CpuJob job = {.fn = fn, .arg = arg, .ntasks = ntasks, .interrupt = interrupt};
    atomic_init(&job.next, 0);
    atomic_init(&job.stop, 0);
    atomic_init(&job.interrupted, 0);
    nthreads = fc_cpu_clamp_threads(be, nthreads);
    if (ntasks < nthreads)
        nthreads = ntasks < 1 ? 1 : (int)ntasks;
    /* A second caller while the pool is busy (or a pool that could not start) runs alone. */
    if (nthreads > 1 && pthread_mutex_trylock(&be->busy) == 0) {
        pool_start(be);
        int nw = nthreads - 1 < be->nworkers ? nthreads - 1 : be->nworkers;
        if (nw > 0) {
            pthread_mutex_lock(&be->mu);
            be->job = &job;
            be->job_workers = nw;
            __atomic_store_n(&be->gen, be->gen + 1, __ATOMIC_RELEASE);
            pthread_cond_broadcast(&be->wake);
            pthread_mutex_unlock(&be->mu);
        }
        job_work(&job, 0);
        if (nw > 0) {
            /* Every task is claimed: the job is closed to workers not yet in it (one asleep
             * would take tens of microseconds to wake, longer than a small kernel's tasks), and
             * the caller waits for those working on it. */
            pthread_mutex_lock(&be->mu);
            be->job = NULL;
            int left = be->active;
            pthread_mutex_unlock(&be->mu);
            if (left > 0)
                SPIN_WHILE(&be->active, left);
            pthread_mutex_lock(&be->mu);
            while (be->active > 0)
                pthread_cond_wait(&be->done, &be->mu);
            pthread_mutex_unlock(&be->mu);
        }
        pthread_mutex_unlock(&be->busy);
    } else {
        job_work(&job, 0);
    }
    return !atomic_load(&job.interrupted);
}

static void cpu_destroy(FcBackend *base)
{
    CpuBackend *be = (CpuBackend *)base;
    if (!be)
        return;
    pthread_mutex_lock(&be->mu);
    be->quit = true;
    pthread_cond_broadcast(&be->wake);
    pthread_mutex_unlock(&be->mu);
    for (int i = 0; i < be->nworkers; i++)
        pthread_join(be->workers[i], NULL);
    free(be->workers);      /* libc: the pool's startup */
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
    }
    return be;
}
