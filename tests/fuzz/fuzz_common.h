/* fuzz_common.h — what the libFuzzer harnesses share: an interpreter configured for untrusted
 * input, and a watchdog that bounds how long one run of tdl code may take.
 *
 * tdl has no instruction budget, but it has tdl_interrupt(): every loop iteration, every call and
 * every running kernel checks it. The watchdog thread calls it when a run passes its deadline, so
 * `while True: pass` ends in KeyboardInterrupt instead of a libFuzzer timeout, and only what does
 * not check (a parser or a builtin stuck in a long loop of its own) can time out: that is a
 * finding. The deadline makes a run's outcome depend on time near the limit; runs that short are
 * the fuzzer's usual case, so coverage stays reproducible in practice. */
#ifndef TDL_FUZZ_COMMON_H
#define TDL_FUZZ_COMMON_H

#include "tdl.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Milliseconds one tdl_run / tdl_call may take before the watchdog interrupts it. libFuzzer's
 * -timeout (seconds) must leave room for several of them. */
#ifndef FUZZ_RUN_MS
#define FUZZ_RUN_MS 300
#endif

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    tdl_interp *T;              /* the armed interpreter, NULL when disarmed */
    struct timespec deadline;
    bool started;
} fuzz_dog = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, {0, 0}, false};

static void *fuzz_dog_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&fuzz_dog.mu);
    for (;;) {
        if (!fuzz_dog.T) {
            pthread_cond_wait(&fuzz_dog.cv, &fuzz_dog.mu);
            continue;
        }
        struct timespec d = fuzz_dog.deadline;
        if (pthread_cond_timedwait(&fuzz_dog.cv, &fuzz_dog.mu, &d) != 0 && fuzz_dog.T) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            /* Under the lock: disarming waits for this, so T is never closed under us. */
            if (now.tv_sec > d.tv_sec || (now.tv_sec == d.tv_sec && now.tv_nsec >= d.tv_nsec))
                tdl_interrupt(fuzz_dog.T);
        }
    }
    return NULL;
}

/* Interrupts T if the code run from now until fuzz_disarm() takes longer than FUZZ_RUN_MS. */
static inline void fuzz_arm(tdl_interp *T)
{
    pthread_mutex_lock(&fuzz_dog.mu);
    if (!fuzz_dog.started) {
        pthread_t th;
        if (pthread_create(&th, NULL, fuzz_dog_main, NULL) != 0) {
            fprintf(stderr, "fuzz: cannot start the watchdog thread\n");
            abort();
        }
        pthread_detach(th);
        fuzz_dog.started = true;
    }
    clock_gettime(CLOCK_REALTIME, &fuzz_dog.deadline);
    fuzz_dog.deadline.tv_nsec += (long)FUZZ_RUN_MS * 1000000L;
    fuzz_dog.deadline.tv_sec += fuzz_dog.deadline.tv_nsec / 1000000000L;
    fuzz_dog.deadline.tv_nsec %= 1000000000L;
    fuzz_dog.T = T;
    pthread_cond_signal(&fuzz_dog.cv);
    pthread_mutex_unlock(&fuzz_dog.mu);
}

static inline void fuzz_disarm(void)
{
    pthread_mutex_lock(&fuzz_dog.mu);
    fuzz_dog.T = NULL;
    pthread_cond_signal(&fuzz_dog.cv);
    pthread_mutex_unlock(&fuzz_dog.mu);
}

/* Program output: read (so ASan sees a bad pointer or length) and dropped. */
static volatile unsigned fuzz_sink;
static inline void fuzz_write(void *ud, const char *text, size_t len)
{
    (void)ud;
    unsigned h = 0;
    for (size_t i = 0; i < len; i++)
        h = h * 31 + (unsigned char)text[i];
    fuzz_sink += h;
}

/* The memory an interpreter of a fuzz input may hold: a program that builds a huge value gets
 * tdl's MemoryError, not minutes of work on it (a 1 GB string's repr, under ASan). */
#define FUZZ_MAX_MEMORY ((size_t)8 << 20)

/* An interpreter for untrusted code: no file access, output dropped, a low recursion limit (deep
 * recursion is tested by the suite; here it would only slow every input that recurses), a memory
 * limit. */
static inline tdl_interp *fuzz_open(int flags)
{
    tdl_config cfg = {0};
    cfg.size = sizeof cfg;
    cfg.max_memory = FUZZ_MAX_MEMORY;
    cfg.write = fuzz_write;
    cfg.dump = fuzz_write;
    cfg.recursion_limit = 50;
    cfg.flags = TDL_NO_FILES | flags;
    return tdl_open(&cfg);
}

/* What must hold after any status: an error has a kind and a report; anything else has none. */
static inline void fuzz_check_status(tdl_interp *T, tdl_status st)
{
    tdl_error_kind k = tdl_error_kind_of(T);
    const char *msg = tdl_error_message(T), *rep = tdl_error_report(T);
    if (!msg || !rep || !tdl_error_kind_name(k)) {
        fprintf(stderr, "fuzz: NULL error string\n");
        abort();
    }
    fuzz_write(NULL, msg, strlen(msg));
    fuzz_write(NULL, rep, strlen(rep));
    if (st == TDL_ERROR && (k <= TDL_ERR_NONE || k >= TDL_ERR__COUNT)) {
        fprintf(stderr, "fuzz: TDL_ERROR without an error kind\n");
        abort();
    }
    if (st != TDL_OK && st != TDL_ERROR && st != TDL_INCOMPLETE && st != TDL_EXIT && st != TDL_MISUSE) {
        fprintf(stderr, "fuzz: unknown status %d\n", (int)st);
        abort();
    }
}

/* Environment for every harness: nothing compiled for a GPU is cached on disk. */
static inline void fuzz_env(void)
{
    setenv("TDL_CACHE_DIR", "off", 1);
}

#endif
