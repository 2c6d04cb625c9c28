/* hash.h — FNV-1a, the one hash of byte strings in tdl: the interpreter's string and name tables,
 * the CUDA backend's compile caches (memory and disk) and cuDNN's plan cache, and the tests' host
 * builds of emulated CUDA. Fast on the short keys these are, and stable across runs and machines,
 * which the disk caches need (their file names are hashes).
 *
 * Like mem.h it depends on libc alone and includes nothing of lang/, so every folder may include
 * it. Chain calls to hash several pieces as one: fnv1a_str(fnv1a_bytes(FNV1A_SEED, p, n), s). */
#ifndef TDL_HASH_H
#define TDL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A_SEED 0xcbf29ce484222325ULL    /* the 64-bit offset basis */

/* h continued over the n bytes at p. */
static inline uint64_t fnv1a_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ULL;
    return h;
}

/* h continued over the bytes of the string s (not its terminator). */
static inline uint64_t fnv1a_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

#endif
