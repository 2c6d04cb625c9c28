/* mem.h — the one choke point every heap allocation of the library goes through.
 *
 * Why here: the folders depend on each other as lang <- interp -> fcdim -> backend, and lang/
 * depends on nothing. This module depends on libc alone (it includes nothing of lang/), so it
 * sits at the bottom of lang/ and is the one header from lang/ that fcdim/ and backend/ may
 * include too; it brings no dependency on the front end with it.
 *
 * mem_malloc, mem_calloc, mem_realloc, mem_free, mem_strdup, mem_strndup, mem_aligned_alloc,
 * mem_vasprintf and mem_asprintf behave as their libc namesakes (memory from them may be freed
 * with free() and the other way round: they do not change the block), with two additions:
 *
 * - Fault injection for tests (after SQLite's test_malloc.c): mem_fail_after(n, persistent) makes
 *   the n-th allocation from now fail (return NULL, errno ENOMEM) and, when persistent, every one
 *   after it too. It counts every thread's allocations; tests run with one worker thread.
 * - Accounting for a per-interpreter memory limit: a MemAccount made current on this thread (by
 *   the interpreter on entry to each API call, mem_scope_begin / mem_scope_end) is charged the
 *   usable size of each block allocated and credited each block freed while it is current; an
 *   allocation that would take it past its limit fails and sets `hit`. A block freed under
 *   another account (or none) than the one it was charged to leaves the charge where it was, so
 *   the count errs on the high side only where memory crosses threads or interpreters.
 *
 * The mechanical replacement of the libc calls by these is tests/oom/rewrite_allocs.sh; code that
 * must keep calling libc directly says so with a comment starting "libc:" on the same line.
 */
#ifndef TDL_MEM_H
#define TDL_MEM_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *mem_malloc(size_t n);
void *mem_calloc(size_t count, size_t size);
void *mem_realloc(void *p, size_t n);
void mem_free(void *p);
char *mem_strdup(const char *s);
char *mem_strndup(const char *s, size_t n);
void *mem_aligned_alloc(size_t align, size_t n);
int mem_vasprintf(char **out, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
int mem_asprintf(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- fault injection (tests) ---- */

/* n > 0: the n-th allocation from now fails, and every later one when persistent; n <= 0: off.
 * Resets mem_fail_count. Process-wide. */
void mem_fail_after(long n, bool persistent);
/* How many allocations failed by injection since the last mem_fail_after. */
long mem_fail_count(void);

/* ---- accounting ---- */

typedef struct MemAccount {
    int64_t used;       /* bytes charged now (atomic; a deleter may free on another thread) */
    int64_t limit;      /* 0: no limit */
    bool hit;           /* an allocation was refused for the limit since the owner cleared it
                           (atomic too) */
} MemAccount;

/* Makes a current on this thread (a may be NULL: none) and returns the one it replaces, for
 * mem_scope_end. */
MemAccount *mem_scope_begin(MemAccount *a);
void mem_scope_end(MemAccount **prev);     /* restores *prev; fits __attribute__((cleanup)) */
MemAccount *mem_scope_current(void);

#endif
