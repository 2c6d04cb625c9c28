/* mem.c — the allocation choke point (mem.h). Depends on libc only. */
#include "mem.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local MemAccount *current;

/* Injection state: `countdown` allocations to go before the failing one (0: off). */
static atomic_long countdown;
static atomic_bool persistent;
static atomic_bool tripped;
static atomic_long nfailed;

void mem_fail_after(long n, bool persist)
{
    atomic_store(&nfailed, 0);
    atomic_store(&tripped, false);
    atomic_store(&persistent, persist);
    atomic_store(&countdown, n > 0 ? n : 0);
}

long mem_fail_count(void) { return atomic_load(&nfailed); }

/* Whether this allocation is to fail by injection. */
static bool injected(void)
{
    if (atomic_load_explicit(&countdown, memory_order_relaxed) == 0
        && !atomic_load_explicit(&tripped, memory_order_relaxed))
        return false;
    if (atomic_load(&tripped)) {
        if (!atomic_load(&persistent)) return false;
        atomic_fetch_add(&nfailed, 1);
        return true;
    }
    long left = atomic_fetch_sub(&countdown, 1);
    if (left == 1) {
        atomic_store(&tripped, true);
        atomic_fetch_add(&nfailed, 1);
        return true;
    }
    if (left <= 0) atomic_fetch_add(&countdown, 1);     /* raced past the end: undo */
    return false;
}

/* Whether an allocation of n more bytes is refused (injection or the current account's limit). */
static bool refused(size_t n)
{
    if (injected()) return true;
    MemAccount *a = current;
    if (a && a->limit > 0) {
        int64_t used = atomic_load_explicit((_Atomic int64_t *)&a->used, memory_order_relaxed);
        if (n > (uint64_t)a->limit || used > a->limit - (int64_t)n) {
            __atomic_store_n(&a->hit, true, __ATOMIC_RELAXED);
            return true;
        }
    }
    return false;
}

static void charge(void *p)
{
    MemAccount *a = current;
    if (a && p)
        atomic_fetch_add_explicit((_Atomic int64_t *)&a->used, (int64_t)malloc_usable_size(p),
                                  memory_order_relaxed);
}

static void credit(void *p)
{
    MemAccount *a = current;
    if (a && p)
        atomic_fetch_sub_explicit((_Atomic int64_t *)&a->used, (int64_t)malloc_usable_size(p),
                                  memory_order_relaxed);
}

void *mem_malloc(size_t n)
{
    if (refused(n)) return errno = ENOMEM, NULL;
    void *p = malloc(n);
    charge(p);
    return p;
}

void *mem_calloc(size_t count, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) return errno = ENOMEM, NULL;
    if (refused(n)) return errno = ENOMEM, NULL;
    void *p = calloc(count, size);
    charge(p);
    return p;
}

void *mem_realloc(void *p, size_t n)
{
    if (!p) return mem_malloc(n);
    /* Only growth is charged against the limit; realloc to a smaller size always goes through. */
    size_t old = current ? malloc_usable_size(p) : 0;
    if (refused(n > old ? n - old : 0)) return errno = ENOMEM, NULL;
    credit(p);
    void *q = realloc(p, n);
    charge(q ? q : p);
    return q;
}

void mem_free(void *p)
{
    credit(p);
    free(p);
}

char *mem_strdup(const char *s) { return mem_strndup(s, strlen(s)); }

char *mem_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = mem_malloc(len + 1);
    if (!p) return NULL;
    memcpy(p, s, len);
    p[len] = 0;
    return p;
}

void *mem_aligned_alloc(size_t align, size_t n)
{
    if (refused(n)) return errno = ENOMEM, NULL;
    void *p = aligned_alloc(align, n);
    charge(p);
    return p;
}

int mem_vasprintf(char **out, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    *out = NULL;
    if (n < 0) return -1;
    char *p = mem_malloc((size_t)n + 1);
    if (!p) return -1;
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    *out = p;
    return n;
}

int mem_asprintf(char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = mem_vasprintf(out, fmt, ap);
    va_end(ap);
    return n;
}

MemAccount *mem_scope_begin(MemAccount *a)
{
    MemAccount *prev = current;
    current = a;
    return prev;
}

void mem_scope_end(MemAccount **prev) { current = *prev; }

MemAccount *mem_scope_current(void) { return current; }
