/* kernel_cache.c — scheduled kernels kept for DAGs that come again.
 *
 * A program that runs one computation on new data (a loop body, a function called again, like
 * vision.roi_align) builds DAGs that differ only in the storages they load. Scheduling such a
 * DAG and planning its kernel can cost as much as running a small one, so the scheduler keys
 * each DAG by everything it reads of it (fc_key_make) and keeps the kernel it made, with the
 * backend's plan of it; a DAG with the same key schedules to the same kernel but for the
 * storages' addresses, which are filled in (run_root in schedule.c).
 *
 * The key: every node of the DAG in a post-order walk (each once, so that what is shared counts),
 * with its op, dtypes, sizes, operands (by their place in the walk), level maps and constant, and
 * a load's offset, strides, shape, wrap and index dims and its storage by order of first
 * appearance (not address); then the output's geometry when it is given, the device and the
 * context's settings that scheduling reads. A context keeps KCACHE_ENTRIES kernels; the least
 * recently used goes first.
 * Depends on fcdim.h, internal.h and the backend interface. */
#include "internal.h"
#include "mem.h"

#include "backend.h"

#include <stdlib.h>
#include <string.h>

enum {
    KCACHE_ENTRIES = 32,
    KEY_NODES = 4096,           /* a DAG of more nodes is not kept */
};

struct FcKernelCache {
    FcCached e[KCACHE_ENTRIES];
    int n;
    uint64_t tick;              /* uses so far: an entry's `used` is the tick of its last use */
    uint64_t hits;
};

/* ---- keys ---- */

static bool grow(FcKey *key, size_t cap)
{
    uint64_t *q = mem_realloc(key->w, cap * sizeof *q);
    if (!q)
        return false;
    key->w = q;
    key->cap = cap;
    return true;
}

static inline bool put(FcKey *key, uint64_t w)
{
    if (key->n == key->cap && !grow(key, key->cap ? 2 * key->cap : 256))
        return false;
    key->w[key->n++] = w;
    return true;
}

static bool put_all(FcKey *key, const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!put(key, (uint64_t)v[i]))
            return false;
    return true;
}

/* The storage's number among the key's (appended when new), or -1 on out-of-memory. */
static int64_t storage_id(FcKey *key, FcStorage *st)
{
    for (int i = 0; i < key->nst; i++)
        if (key->st[i] == st)
            return i;
    if (key->nst == key->capst) {
        int cap = key->capst ? 2 * key->capst : 8;
        FcStorage **q = mem_realloc(key->st, (size_t)cap * sizeof *q);
        if (!q)
            return -1;
        key->st = q;
        key->capst = cap;
    }
    key->st[key->nst] = st;
    return key->nst++;
}

/* Appends n and the nodes under it not yet seen by this walk (mark), operands first; numbers
 * each (walk_id). False on out-of-memory or past KEY_NODES. */
static bool put_node(FcKey *key, FcNode *n, uint64_t mark, uint32_t *count)
{
    if (n->mark == mark)
        return true;
    for (int k = 0; k < n->nin; k++)
        if (!put_node(key, n->in[k], mark, count))
            return false;
    if (*count == KEY_NODES)
        return false;
    n->mark = mark;
    n->walk_id = (*count)++;
    bool load = n->op == FC_OP_LOAD;
    int64_t id = load ? storage_id(key, n->storage) : 0;
    if (id < 0)
        return false;
    /* The node's words, written in place after one check of the room (a small DAG's key is
     * made at every realisation, kept kernel or not). */
    size_t room = 2 + (size_t)n->nlev + (load ? 4 + 3 * (size_t)n->nin : 0);
    for (int k = 0; k < n->nin; k++)
        room += 1 + ((size_t)n->in[k]->nlev + 7) / 8;
    if (key->n + room > key->cap && !grow(key, 2 * key->cap > key->n + room ? 2 * key->cap : key->n + room))
        return false;
    uint64_t *w = key->w + key->n;
    *w++ = (uint64_t)n->op | (uint64_t)n->dtype << 8 | (uint64_t)n->src_dtype << 16 |
           (uint64_t)(uint32_t)n->nlev << 24 | (uint64_t)(uint32_t)n->nin << 40;
    for (int i = 0; i < n->nlev; i++)
        *w++ = (uint64_t)n->size[i];
    for (int k = 0; k < n->nin; k++) {
        *w++ = n->in[k]->walk_id;
        const int8_t *b = n->lev_map[k];
        for (int i = 0, nb = n->in[k]->nlev; i < nb; i += 8) {      /* bytes, eight to a word */
            uint64_t x = 0;
            memcpy(&x, b + i, (size_t)(nb - i < 8 ? nb - i : 8));
            *w++ = x;
        }
    }
    if (n->op == FC_OP_CONST)
        *w++ = (uint64_t)n->konst.i;
    if (load) {
        *w++ = (uint64_t)id;
        *w++ = (uint64_t)n->offset;
        *w++ = n->wrap;
        for (int k = 0; k < n->nin; k++)
            *w++ = (uint64_t)n->strides[k];
        for (int k = 0; k < n->nin; k++)
            *w++ = (uint64_t)n->shape[k];
        for (int k = 0; k < n->nin; k++)
            *w++ = (uint64_t)(uint32_t)n->index_dim[k];
    }
    key->n = (size_t)(w - key->w);
    return true;
}

bool fc_key_make(FcKey *key, const FcCtx *ctx, FcNode *root, FcDevice dev, const int64_t *out_strides,
                 int64_t out_offset)
{
    *key = (FcKey){0};
    uint32_t count = 0;
    /* about sixteen words a node (its sizes, its operands' maps): one allocation, not a chain
     * (the count is an upper bound; past 512 nodes the key grows as it goes) */
    uint32_t nodes = root->count < 512 ? root->count : 512;
    bool ok = grow(key, 16 * (size_t)(nodes > 16 ? nodes : 16)) && put_node(key, root, fc_walk_stamp(), &count) &&
              put(key, (uint64_t)dev.type) && put(key, (uint64_t)(int64_t)dev.index) &&
              put(key, (uint64_t)ctx->sched_off) && put(key, (uint64_t)ctx->nthreads) && put(key, ctx->max_fused) &&
              put(key, out_strides != NULL);
    if (ok && out_strides)
        ok = put_all(key, out_strides, root->nlev) && put(key, (uint64_t)out_offset);
    if (!ok) {
        fc_key_free(key);
        return false;
    }
    /* four lanes, so that the multiplies overlap, then combined */
    uint64_t h[4] = {0x243F6A8885A308D3u, 0x13198A2E03707344u, 0xA4093822299F31D0u, 0x082EFA98EC4E6C89u};
    size_t i = 0;
    for (; i + 4 <= key->n; i += 4)
        for (int j = 0; j < 4; j++) {
            h[j] = (h[j] ^ key->w[i + j]) * 0x9E3779B97F4A7C15u;
            h[j] ^= h[j] >> 31;
        }
    for (; i < key->n; i++) {
        h[0] = (h[0] ^ key->w[i]) * 0x9E3779B97F4A7C15u;
        h[0] ^= h[0] >> 31;
    }
    key->hash = h[0];
    for (int j = 1; j < 4; j++) {
        key->hash = (key->hash ^ h[j]) * 0x9E3779B97F4A7C15u;
        key->hash ^= key->hash >> 31;
    }
    return true;
}

void fc_key_free(FcKey *key)
{
    mem_free(key->w);
    mem_free(key->st);
    *key = (FcKey){0};
}

/* ---- the cache ---- */

static void code_free(FcInstr *code, int n)
{
    if (!code)
        return;         /* a copy that failed: nothing of it is left */
    for (int i = 0; i < n; i++) {
        mem_free(code[i].strides);
        mem_free(code[i].gathers);
        mem_free(code[i].bounds);
    }
    mem_free(code);
}

/* A copy of n instructions over nloop loops, with their arrays. */
static FcInstr *code_copy(const FcInstr *code, int n, int nloop)
{
    FcInstr *c = mem_calloc((size_t)(n > 0 ? n : 1), sizeof *c);
    if (!c)
        return NULL;
    for (int i = 0; i < n; i++) {
        const FcInstr *in = &code[i];
        FcInstr *o = &c[i];
        *o = *in;
        o->strides = NULL;
        o->gathers = NULL;
        o->bounds = NULL;
        bool ok = true;
        if (in->strides) {
            o->strides = mem_malloc((size_t)(nloop > 0 ? nloop : 1) * sizeof *o->strides);
            ok = o->strides != NULL;
            if (ok && nloop > 0)
                memcpy(o->strides, in->strides, (size_t)nloop * sizeof *o->strides);
        }
        if (ok && in->ngather > 0) {
            o->gathers = mem_malloc((size_t)in->ngather * sizeof *o->gathers);
            ok = o->gathers != NULL;
            if (ok)
                memcpy(o->gathers, in->gathers, (size_t)in->ngather * sizeof *o->gathers);
        }
        if (ok && in->nbound > 0) {
            o->bounds = mem_malloc((size_t)in->nbound * sizeof *o->bounds);
            ok = o->bounds != NULL;
            if (ok)
                memcpy(o->bounds, in->bounds, (size_t)in->nbound * sizeof *o->bounds);
        }
        if (!ok) {
            code_free(c, i + 1);
            return NULL;
        }
    }
    return c;
}

static void entry_free(FcCached *e)
{
    if (e->prep)
        e->be->release(e->be, e->prep);
    fc_kplan_free(e->plan);
    code_free(e->k.code, e->k.ncode);
    mem_free(e->buf_of);
    fc_key_free(&e->key);
    *e = (FcCached){0};
}

FcCached *fc_kcache_find(FcCtx *ctx, const FcKey *key)
{
    FcKernelCache *c = ctx->kcache;
    for (int i = 0; c && i < c->n; i++) {
        FcCached *e = &c->e[i];
        if (e->key.hash == key->hash && e->key.n == key->n && e->key.nst == key->nst &&
            memcmp(e->key.w, key->w, key->n * sizeof *key->w) == 0) {
            e->used = ++c->tick;
            c->hits++;
            return e;
        }
    }
    return NULL;
}

FcCached *fc_kcache_add(FcCtx *ctx, FcKey *key, const FcKernel *k, FcStorage *const *bufs,
                        const int64_t *strides, FcBackend *be)
{
    if (!ctx->kcache && !(ctx->kcache = mem_calloc(1, sizeof *ctx->kcache)))
        return NULL;
    FcKernelCache *c = ctx->kcache;
    FcCached e = {.be = be, .used = ++c->tick};
    e.buf_of = mem_malloc((size_t)(k->nbufs > 0 ? k->nbufs : 1) * sizeof *e.buf_of);
    e.k = *k;
    e.k.code = code_copy(k->code, k->ncode, k->nloop);
    e.k.bufs = NULL;
    e.k.out = NULL;
    e.k.interrupt = NULL;
    e.k.scatter = NULL;
    bool ok = e.buf_of && e.k.code;
    for (int b = 0; ok && b < k->nbufs; b++) {
        e.buf_of[b] = -1;
        for (int j = 0; j < key->nst; j++)
            if (key->st[j] == bufs[b])
                e.buf_of[b] = j;
        ok = e.buf_of[b] >= 0;
    }
    if (ok && strides)
        memcpy(e.strides, strides, sizeof e.strides);
    /* Planned with this run's buffers and output (which the plan does not keep: each run gives
     * its own); a backend that cannot plan it runs it as a new kernel each time. */
    FcKernel now = e.k;
    now.bufs = k->bufs;
    now.out = k->out;
    FcError ignored;
    if (ok && be->prepare && be->prepare(be, &now, &e.prep, &ignored) != FC_OK)
        e.prep = NULL;
    if (!ok) {
        e.k.plan = NULL;        /* not taken */
        entry_free(&e);
        return NULL;
    }
    e.plan = (FcPlan *)k->plan; /* taken */
    e.key = *key;               /* taken */
    *key = (FcKey){0};
    int slot = c->n;
    if (c->n == KCACHE_ENTRIES) {
        slot = 0;
        for (int i = 1; i < c->n; i++)
            if (c->e[i].used < c->e[slot].used)
                slot = i;
        entry_free(&c->e[slot]);
    } else {
        c->n++;
    }
    c->e[slot] = e;
    return &c->e[slot];
}

void fc_kcache_free(FcCtx *ctx)
{
    FcKernelCache *c = ctx->kcache;
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        entry_free(&c->e[i]);
    mem_free(c);
    ctx->kcache = NULL;
}

FcKernelCacheStats fc_kcache_stats(const FcCtx *ctx)
{
    const FcKernelCache *c = ctx->kcache;
    FcKernelCacheStats s = {0};
    if (c) {
        s.kept = c->n;
        s.hits = c->hits;
    }
    return s;
}
