/* cuda_nvrtc.c — compiles generated CUDA C with NVRTC straight to a cubin for the device's own
 * architecture, and caches what it compiled: in memory (per cache object) and on disk.
 *
 * The key of a compilation is its whole text: a format line, NVRTC's version, the options (the
 * architecture among them) and the source. Its 64-bit FNV-1a hash names the disk entry
 * (<dir>/<hash>.cubin, or .ptx); the entry holds a header (magic, format, sizes, the key's and
 * the image's hashes), the key itself and the image. An entry is used only when all of it
 * checks out, the key compared byte for byte, so a truncated or corrupt file, one from another
 * NVRTC, or a hash collision is compiled again and replaced, never trusted. Entries are written
 * to a temporary file in the same folder and renamed into place, so a reader sees a whole entry
 * or none, and concurrent writers of the same entry are harmless. The disk cache is best
 * effort: a folder that cannot be created or written only costs the compile next time.
 *
 * Options: --gpu-architecture=sm_XX (compute_XX and PTX for the driver to compile when NVRTC
 * predates the device), --fmad=false (no contraction of a * b + c into FMA: pointwise math then
 * rounds as the CPU executor's does), -std=c++17, and --minimal where NVRTC has it (12.4 on).
 * Depends on cuda_internal.h, libc and POSIX files. */
#include "cuda_internal.h"
#include "hash.h"
#include "mem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENTRY_MAGIC "TDLCUDA1"
enum { ENTRY_FORMAT = 1 };

typedef struct EntryHeader {
    char magic[8];
    uint32_t format;
    uint32_t ptx;
    uint64_t keylen, imglen;
    uint64_t keyhash, imghash;
} EntryHeader;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- the cache object ---- */

FcCudaCache *fc_cuda_cache_new(const char *dir)
{
    FcCudaCache *c = mem_calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        mem_free(c);
        return NULL;
    }
    if (dir) {
        snprintf(c->dir, sizeof c->dir, "%s", dir);
        return c;
    }
    const char *env = getenv("TDL_CACHE_DIR");
    if (env) {
        if (env[0] && strcmp(env, "off") != 0 && strcmp(env, "0") != 0)
            snprintf(c->dir, sizeof c->dir, "%s", env);
        return c;
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(c->dir, sizeof c->dir, "%s/tdl/cuda", xdg);
    else if (home && home[0])
        snprintf(c->dir, sizeof c->dir, "%s/.cache/tdl/cuda", home);
    return c;
}

void fc_cuda_cache_free(FcCudaCache *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++) {
        mem_free(c->e[i].key);
        mem_free(c->e[i].image);
    }
    mem_free(c->e);
    pthread_mutex_destroy(&c->mu);
    mem_free(c);
}

const char *fc_cuda_cache_dir(const FcCudaCache *c) { return c ? c->dir : ""; }

FcCudaCacheStats fc_cuda_cache_stats(FcCudaCache *c)
{
    FcCudaCacheStats s = {0};
    if (!c)
        return s;
    pthread_mutex_lock(&c->mu);
    s = c->stats;
    pthread_mutex_unlock(&c->mu);
    return s;
}

/* A copy of the image of the memory entry with this key, or false. Called locked. */
static bool memory_find(FcCudaCache *c, uint64_t h, const char *key, size_t keylen, FcCudaBuild *out)
{
    for (int i = 0; i < c->n; i++) {
        const CacheEntry *e = &c->e[i];
        if (e->hash != h || e->keylen != keylen || memcmp(e->key, key, keylen) != 0)
            continue;
        out->image = mem_malloc(e->len + 1);
        if (!out->image)
            return false;
        memcpy(out->image, e->image, e->len);
        ((char *)out->image)[e->len] = 0;
        out->len = e->len;
        out->ptx = e->ptx;
        return true;
    }
    return false;
}

/* Adds a copy of the image under key (out of memory: the cache just does not grow). Locked. */
static void memory_add(FcCudaCache *c, uint64_t h, const char *key, size_t keylen, const void *img, size_t len,
                       bool ptx)
{
    for (int i = 0; i < c->n; i++)
        if (c->e[i].hash == h && c->e[i].keylen == keylen && memcmp(c->e[i].key, key, keylen) == 0)
            return;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        CacheEntry *q = mem_realloc(c->e, (size_t)cap * sizeof *q);
        if (!q)
            return;
        c->e = q;
        c->cap = cap;
    }
    CacheEntry e = {.hash = h, .keylen = keylen, .len = len, .ptx = ptx};
    e.key = mem_malloc(keylen);
    e.image = mem_malloc(len);
    if (!e.key || !e.image) {
        mem_free(e.key);
        mem_free(e.image);
        return;
    }
    memcpy(e.key, key, keylen);
    memcpy(e.image, img, len);
    c->e[c->n++] = e;
}

/* ---- the disk ---- */

static void entry_path(char *buf, size_t cap, const char *dir, uint64_t h, bool ptx)
{
    snprintf(buf, cap, "%s/%016llx.%s", dir, (unsigned long long)h, ptx ? "ptx" : "cubin");
}

/* mkdir -p, mode 0700 for what it creates. */
static bool make_dirs(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(p, 0700) != 0 && errno != EEXIST)
            return false;
        *s = '/';
    }
    return mkdir(p, 0700) == 0 || errno == EEXIST;
}

/* Reads the entry for key: true with out filled when it is whole and its key is this one;
 * *found tells whether a file was there at all. */
static bool disk_read(const char *dir, uint64_t h, const char *key, size_t keylen, bool ptx, FcCudaBuild *out,
                      bool *found)
{
    char path[1200];
    entry_path(path, sizeof path, dir, h, ptx);
    *found = false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    *found = true;
    EntryHeader hd;
    bool ok = fread(&hd, sizeof hd, 1, f) == 1 && memcmp(hd.magic, ENTRY_MAGIC, 8) == 0 &&
              hd.format == ENTRY_FORMAT && hd.ptx == (uint32_t)ptx && hd.keylen == keylen &&
              hd.keyhash == h && hd.imglen > 0 && hd.imglen < ((uint64_t)1 << 30);
    char *k = NULL, *img = NULL;
    if (ok) {
        k = mem_malloc(keylen);
        img = mem_malloc(hd.imglen + 1);
        ok = k && img && fread(k, 1, keylen, f) == keylen && memcmp(k, key, keylen) == 0 &&
             fread(img, 1, hd.imglen, f) == hd.imglen && fgetc(f) == EOF &&
             fnv1a_bytes(FNV1A_SEED, img, hd.imglen) == hd.imghash;
    }
    fclose(f);
    mem_free(k);
    if (!ok) {
        mem_free(img);
        return false;
    }
    img[hd.imglen] = 0;
    out->image = img;
    out->len = hd.imglen;
    out->ptx = ptx;
    return true;
}

/* Writes the entry through a temporary file renamed into place; false when it could not. */
static bool disk_write(const char *dir, uint64_t h, const char *key, size_t keylen, const void *img, size_t len,
                       bool ptx)
{
    if (!make_dirs(dir))
        return false;
    char path[1200], tmp[1300];
    entry_path(path, sizeof path, dir, h, ptx);
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    snprintf(tmp, sizeof tmp, "%s.%ld.%lx.%ld.tmp", path, (long)getpid(), (unsigned long)pthread_self(),
             (long)t.tv_nsec);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return false;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        return false;
    }
    EntryHeader hd;
    memset(&hd, 0, sizeof hd);
    memcpy(hd.magic, ENTRY_MAGIC, 8);
    hd.format = ENTRY_FORMAT;
    hd.ptx = ptx;
    hd.keylen = keylen;
    hd.imglen = len;
    hd.keyhash = h;
    hd.imghash = fnv1a_bytes(FNV1A_SEED, img, len);
    bool ok = fwrite(&hd, sizeof hd, 1, f) == 1 && fwrite(key, 1, keylen, f) == keylen &&
              fwrite(img, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return false;
    }
    return true;
}

/* ---- compiling ---- */

/* The architecture to compile for: sm itself when NVRTC knows it (a cubin); else the newest it
 * knows of the same major below sm (a cubin runs on later minors); else, when the device is
 * newer than NVRTC, PTX of the newest (the driver compiles it). False when sm is older than
 * anything NVRTC compiles for. */
static bool pick_arch(const CudaNvrtc *nv, int sm, int *use, bool *ptx)
{
    int best_same = -1, newest = -1, oldest = 1 << 30;
    for (int i = 0; i < nv->narch; i++) {
        int a = nv->arch[i];
        if (a == sm) {
            *use = sm;
            *ptx = false;
            return true;
        }
        if (a / 10 == sm / 10 && a < sm && a > best_same)
            best_same = a;
        if (a > newest)
            newest = a;
        if (a < oldest)
            oldest = a;
    }
    if (best_same >= 0) {
        *use = best_same;
        *ptx = false;
        return true;
    }
    if (sm > newest) {
        *use = newest;
        *ptx = true;
        return true;
    }
    return false;
}

/* The source with numbered lines, appended to b (for compile errors). */
static char *numbered(const char *log, const char *src)
{
    size_t lines = 1;
    for (const char *s = src; *s; s++)
        lines += *s == '\n';
    size_t cap = strlen(log) + strlen(src) + lines * 8 + 64;
    char *o = mem_malloc(cap);
    if (!o)
        return NULL;
    size_t n = (size_t)snprintf(o, cap, "%s\n---- the source ----\n", log);
    int ln = 1;
    const char *s = src;
    while (*s && n < cap) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        n += (size_t)snprintf(o + n, cap - n, "%5d  %.*s\n", ln++, (int)len, s);
        s += len + (e != NULL);
    }
    return o;
}

static FcStatus nvrtc_run(const CudaNvrtc *nv, const char *src, const char *const *opts, int nopt, bool ptx,
                          FcCudaBuild *out, FcError *err)
{
    nvrtcProgram prog = NULL;
    double t0 = now_ms();
    nvrtcResult r = nv->CreateProgram(&prog, src, "tdl_kernel.cu", 0, NULL, NULL);
    if (r != 0) {
        snprintf(err->msg, sizeof err->msg, "nvrtcCreateProgram: %s", nv->GetErrorString(r));
        return r == 1 ? FC_ERR_NOMEM : FC_ERR_RUNTIME;
    }
    r = nv->CompileProgram(prog, nopt, opts);
    out->ms = now_ms() - t0;
    size_t loglen = 0;
    char *log = NULL;
    if (nv->GetProgramLogSize(prog, &loglen) == 0 && loglen > 0 && (log = mem_malloc(loglen + 1)) != NULL) {
        if (nv->GetProgramLog(prog, log) != 0)
            log[0] = 0;
        log[loglen] = 0;
    }
    if (r != 0) {
        const char *first = log && log[0] ? log : nv->GetErrorString(r);
        size_t fl = strcspn(first, "\n");
        snprintf(err->msg, sizeof err->msg, "the CUDA kernel does not compile: %.*s", (int)(fl > 400 ? 400 : fl),
                 first);
        out->log = numbered(log ? log : nv->GetErrorString(r), src);
        mem_free(log);
        nv->DestroyProgram(&prog);
        return FC_ERR_RUNTIME;
    }
    mem_free(log);
    size_t n = 0;
    r = ptx ? nv->GetPTXSize(prog, &n) : nv->GetCUBINSize(prog, &n);
    if (r == 0 && n > 0 && (out->image = mem_malloc(n + 1)) != NULL) {
        r = ptx ? nv->GetPTX(prog, out->image) : nv->GetCUBIN(prog, out->image);
        ((char *)out->image)[n] = 0;
        out->len = n;
        out->ptx = ptx;
    } else if (r == 0) {
        r = 1;
    }
    nv->DestroyProgram(&prog);
    if (r != 0) {
        mem_free(out->image);
        out->image = NULL;
        snprintf(err->msg, sizeof err->msg, "NVRTC gave no %s", ptx ? "PTX" : "cubin");
        return FC_ERR_RUNTIME;
    }
    return FC_OK;
}

FcStatus fc_cuda_compile(FcCudaCache *c, const char *src, int sm, FcCudaBuild *out, FcError *err)
{
    memset(out, 0, sizeof *out);
    const char *why = NULL;
    const CudaNvrtc *nv = fc_cuda_nvrtc(&why);
    if (!nv) {
        snprintf(err->msg, sizeof err->msg, "%s", why);
        return FC_ERR_DEVICE;
    }
    int use;
    bool ptx;
    if (!pick_arch(nv, sm, &use, &ptx)) {
        snprintf(err->msg, sizeof err->msg, "NVRTC %d.%d (%s) does not compile for sm_%d", nv->major, nv->minor,
                 nv->path, sm);
        return FC_ERR_DEVICE;
    }
    char arch[48];
    snprintf(arch, sizeof arch, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm", use);
    /* --minimal (NVRTC 12.4 on) leaves out of the builtin header what a kernel of ours never
     * uses (textures, device-side launches, the runtime's types): less for the front end. */
    const char *opts[] = {arch, "--fmad=false", "-std=c++17", "--minimal"};
    int nopt = nv->major > 12 || (nv->major == 12 && nv->minor >= 4) ? 4 : 3;
    /* The key: everything that decides the image. */
    char head[256];
    int hn = snprintf(head, sizeof head, "tdl cuda kernel, cache format %d\nnvrtc %d.%d\n", ENTRY_FORMAT,
                      nv->major, nv->minor);
    for (int i = 0; i < nopt; i++)
        hn += snprintf(head + hn, sizeof head - (size_t)hn, "%s%s", opts[i], i + 1 < nopt ? " " : "\n");
    size_t srclen = strlen(src), keylen = (size_t)hn + srclen;
    char *key = mem_malloc(keylen);
    if (!key) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return FC_ERR_NOMEM;
    }
    memcpy(key, head, (size_t)hn);
    memcpy(key + hn, src, srclen);
    uint64_t h = fnv1a_bytes(FNV1A_SEED, key, keylen);
    if (c) {
        pthread_mutex_lock(&c->mu);
        bool hit = memory_find(c, h, key, keylen, out);
        if (hit)
            c->stats.memory_hits++;
        pthread_mutex_unlock(&c->mu);
        if (hit) {
            out->from = FC_CUDA_FROM_MEMORY;
            mem_free(key);
            return FC_OK;
        }
        bool found = false;
        if (c->dir[0] && disk_read(c->dir, h, key, keylen, ptx, out, &found)) {
            pthread_mutex_lock(&c->mu);
            c->stats.disk_hits++;
            memory_add(c, h, key, keylen, out->image, out->len, out->ptx);
            pthread_mutex_unlock(&c->mu);
            out->from = FC_CUDA_FROM_DISK;
            mem_free(key);
            return FC_OK;
        }
        if (found) {
            pthread_mutex_lock(&c->mu);
            c->stats.disk_rejected++;
            pthread_mutex_unlock(&c->mu);
        }
    }
    FcStatus st = nvrtc_run(nv, src, opts, nopt, ptx, out, err);
    if (st == FC_OK)
        out->from = FC_CUDA_COMPILED;
    if (c) {
        bool wrote = st == FC_OK && c->dir[0] && disk_write(c->dir, h, key, keylen, out->image, out->len, ptx);
        pthread_mutex_lock(&c->mu);
        c->stats.compiled++;
        c->stats.compile_ms += out->ms;
        c->stats.disk_written += wrote;
        if (st == FC_OK)
            memory_add(c, h, key, keylen, out->image, out->len, ptx);
        pthread_mutex_unlock(&c->mu);
    }
    mem_free(key);
    return st;
}
