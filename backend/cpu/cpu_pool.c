/* cpu_pool.c — the CPU backend's thread pool, which kernels and matrix products run on.
 *
 * The pool belongs to the backend (no global state). Its workers start on the first job that
 * wants more than one thread, sleep on a condition variable between jobs, and are joined by
 * destroy. A job is a parallel-for over numbered tasks in which the calling thread takes part;
 * tasks are claimed in order through an atomic counter, so a failing or interrupted job stops
 * soon without waiting for the tasks nobody has claimed yet.
 * Depends on cpu_internal.h (backend.h) and pthreads only. */
#include "cpu_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

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

void fc_cpu_pool_stop(CpuBackend *be)
{
    pthread_mutex_lock(&be->mu);
    be->quit = true;
    pthread_cond_broadcast(&be->wake);
    pthread_mutex_unlock(&be->mu);
    for (int i = 0; i < be->nworkers; i++)
        pthread_join(be->workers[i], NULL);
    free(be->workers);      /* libc: the pool's startup */
}
