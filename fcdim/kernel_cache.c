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
 * appearance (not address); then a scattered store's indices (their DAGs in the same walk) with
 * each one's stride, extent, wrap and dim, and whether it accumulates and cannot fail; which of the
 * storages read is the one written; then the output's geometry when it is given, the device and
 * the context's settings that scheduling reads. A context keeps KCACHE_ENTRIES kernels; the least
 * recently used goes first.
 *
 * Floating-point constants are the kernel's parameters: a loop that adds a new Python number each
 * time (`x + i * 0.5`) runs one kept kernel, its constant instructions given each run's values
 * (run_kept; the CPU executor reads an instruction's konst as it runs, the CUDA generator makes it
 * a field of the launch's arguments). Their values enter the key only where scheduling reads
 * them: the operands of a comparison (fused into WHERE_CMP, whose constant the CPU plans with) and
 * of a where (the fill of a masked reduction, the CPU's zero gate). What the key holds of each is
 * the first earlier one of the same dtype and bits, since the scheduler gives equal constants one
 * register. Integer and bool constants (load indices folded into offsets, the scheduler's own
 * zeros for loops of one index) stay in the key by value.
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
    FcKey spare;                /* the arrays of the last key given back (fc_key_release), which
                                   the next fc_key_make fills: a key is made at every realisation */
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

/* The constant n is, looking through the casts that only move levels (emit's broadcasts), or NULL. */
static const FcNode *const_under(const FcNode *n)
{
    while (n->op == FC_OP_CAST && n->in[0]->dtype == n->dtype)
        n = n->in[0];
    return n->op == FC_OP_CONST ? n : NULL;
}

/* Whether scheduling reads the values of n's constant operands (see the top of the file). */
static bool reads_konst(const FcNode *n)
{
    return fc_op_is_compare(n->op) || n->op == FC_OP_WHERE;
}

/* The slot of parameter n in key->kv (appended), or -1 on out-of-memory; *same: the first
 * earlier slot of the same dtype and bits (or the new one). */
static int add_param(FcKey *key, const FcNode *n, int *same)
{
    *same = key->nkv;
    for (int j = 0; j < key->nkv; j++)
        if (key->kv[j].i == n->konst.i && key->kn[j]->dtype == n->dtype) {
            *same = j;
            break;
        }
    if (key->nkv == key->capkv) {
        int cap = key->capkv ? 2 * key->capkv : 8;
        FcScalar *v = mem_realloc(key->kv, (size_t)cap * sizeof *v);
        if (v)
            key->kv = v;
        const FcNode **q = v ? mem_realloc(key->kn, (size_t)cap * sizeof *q) : NULL;
        if (!q)
            return -1;
        key->kn = q;
        key->capkv = cap;
    }
    key->kv[key->nkv] = n->konst;
    key->kn[key->nkv] = n;
    return key->nkv++;
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
    int same = 0;
    bool param = n->op == FC_OP_CONST && fc_dtype_is_float(n->dtype);
    if (param && add_param(key, n, &same) < 0)
        return false;
    bool konsts = reads_konst(n);
    /* The node's words, written in place after one check of the room (a small DAG's key is
     * made at every realisation, kept kernel or not). */
    size_t room = 2 + (size_t)n->nlev + (load ? 4 + 3 * (size_t)n->nin : 0) + (konsts ? (size_t)n->nin : 0);
    for (int k = 0; k < n->nin; k++)
        room += 1 + ((size_t)n->in[k]->nlev + 7) / 8;
    if (key->n + room > key->cap && !grow(key, 2 * key->cap > key->n + room ? 2 * key->cap : key->n + room))
        return false;
    uint64_t *w = key->w + key->n;
    *w++ = (uint64_t)n->op | (uint64_t)n->dtype << 8 | (uint64_t)n->src_dtype << 16 |
           (uint64_t)(uint32_t)n->nlev << 24 | (uint64_t)(uint32_t)n->nin << 40 |
           (uint64_t)n->order << 56 | (uint64_t)n->order_fma << 59 | (uint64_t)n->c_order << 63;
    for (int i = 0; i < n->nlev; i++)
        *w++ = (uint64_t)n->size[i];
    for (int k = 0; k < n->nin; k++) {
        *w++ = n->in[k]->walk_id;
        const int8_t *b = n->lev_map[k];
        for (int i = 0, nb = n->in[k]->nlev; i < nb; i += 8) {      /* bytes, eight to a word */
            uint64_t x = 0;     /* shifted in, not copied: a word read from bytes just stored stalls */
            for (int j = i; j < nb && j < i + 8; j++)
                x |= (uint64_t)(uint8_t)b[j] << 8 * (j - i);
            *w++ = x;
        }
    }
    if (n->op == FC_OP_CONST)
        *w++ = param ? (uint64_t)same : (uint64_t)n->konst.i;
    for (int k = 0; konsts && k < n->nin; k++) {
        const FcNode *c = const_under(n->in[k]);
        *w++ = c ? (uint64_t)c->konst.i : 0;
    }
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

bool fc_key_make(FcKey *key, FcCtx *ctx, FcNode *root, const FcScatter *sc, FcDevice dev, const FcStorage *out,
                 const int64_t *out_strides, int64_t out_offset)
{
    *key = (FcKey){0};
    if (ctx->kcache) {
        *key = ctx->kcache->spare;
        ctx->kcache->spare = (FcKey){0};
        key->n = 0;
        key->nst = key->nkv = 0;
    }
    uint32_t count = 0;
    /* about sixteen words a node (its sizes, its operands' maps): one allocation, not a chain
     * (the count is an upper bound; past 512 nodes the key grows as it goes) */
    uint32_t nodes = root->count < 512 ? root->count : 512;
    size_t words = 16 * (size_t)(nodes > 16 ? nodes : 16);
    uint64_t mark = fc_walk_stamp();
    bool ok = (key->cap >= words || grow(key, words)) && put_node(key, root, mark, &count) &&
              put(key, sc ? 1 + (uint64_t)sc->n : 0);
    for (int g = 0; ok && sc && g < sc->n; g++) {
        const FcGather *at = &sc->at[g];
        ok = put_node(key, sc->index[g], mark, &count) && put(key, sc->index[g]->walk_id) &&
             put(key, (uint64_t)at->stride) && put(key, (uint64_t)at->extent) && put(key, at->wrap) &&
             put(key, (uint64_t)(int64_t)at->dim);
    }
    if (ok && sc)
        ok = put(key, sc->accumulate) && put(key, sc->checked);
    /* which storage read is also the one written (a plan treats such loads apart) */
    for (int i = 0; ok && i < key->nst; i++)
        ok = put(key, key->st[i] == out);
    ok = ok && put(key, (uint64_t)dev.type) && put(key, (uint64_t)(int64_t)dev.index) &&
              put(key, (uint64_t)ctx->sched_off) && put(key, (uint64_t)ctx->nthreads) && put(key, ctx->max_fused) &&
              put(key, out_strides != NULL);
    if (ok && out_strides)
        ok = put_all(key, out_strides, root->nlev) && put(key, (uint64_t)out_offset);
    if (!ok) {
        fc_key_free(key);
        return false;
    }
    /* four lanes, so that the multiplies overlap, then combined; each lane shifts by its own
     * amount, which keeps the compiler from making them vector multiplies (SSE2 has none of 64
     * bits: emulated, they cost more than the scalar ones) */
    uint64_t h[4] = {0x243F6A8885A308D3u, 0x13198A2E03707344u, 0xA4093822299F31D0u, 0x082EFA98EC4E6C89u};
    size_t i = 0;
    for (; i + 4 <= key->n; i += 4) {
        h[0] = (h[0] ^ key->w[i]) * 0x9E3779B97F4A7C15u;
        h[1] = (h[1] ^ key->w[i + 1]) * 0x9E3779B97F4A7C15u;
        h[2] = (h[2] ^ key->w[i + 2]) * 0x9E3779B97F4A7C15u;
        h[3] = (h[3] ^ key->w[i + 3]) * 0x9E3779B97F4A7C15u;
        h[0] ^= h[0] >> 31;
        h[1] ^= h[1] >> 29;
        h[2] ^= h[2] >> 33;
        h[3] ^= h[3] >> 27;
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
    mem_free(key->kv);
    mem_free(key->kn);
    *key = (FcKey){0};
}

void fc_key_release(FcCtx *ctx, FcKey *key)
{
    if (ctx->kcache && !ctx->kcache->spare.w) {
        ctx->kcache->spare = *key;
        *key = (FcKey){0};
    } else {
        fc_key_free(key);
    }
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
    mem_free(e->kref);
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

/* e's references to the parameters of key that the instructions of k hold, by node_of. */
static bool find_params(FcCached *e, const FcKey *key, const FcKernel *k, const FcNode *const *node_of)
{
    int n = 0;
    for (int i = 0; i < k->ncode; i++)
        n += k->code[i].op == FC_OP_CONST && node_of[i]->op == FC_OP_CONST && fc_dtype_is_float(node_of[i]->dtype);
    if (n == 0)
        return true;
    e->kref = mem_malloc((size_t)n * sizeof *e->kref);
    if (!e->kref)
        return false;
    for (int i = 0; i < k->ncode; i++) {
        if (k->code[i].op != FC_OP_CONST || node_of[i]->op != FC_OP_CONST || !fc_dtype_is_float(node_of[i]->dtype))
            continue;
        int slot = -1;
        for (int j = 0; j < key->nkv && slot < 0; j++)
            if (key->kn[j] == node_of[i])
                slot = j;
        if (slot < 0)
            return false;       /* not a node of this DAG: not kept */
        e->kref[e->nkref++] = (FcKonstRef){i, slot};
    }
    return true;
}

FcCached *fc_kcache_add(FcCtx *ctx, FcKey *key, const FcKernel *k, FcStorage *const *bufs,
                        const FcNode *const *node_of, const int64_t *strides, FcBackend *be)
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
    e.k.scatter = NULL;         /* e.scatter, bound at each run (run_kept) */
    if (k->nscatter > 0)
        memcpy(e.scatter, k->scatter, (size_t)k->nscatter * sizeof *e.scatter);
    bool ok = e.buf_of && e.k.code;
    for (int b = 0; ok && b < k->nbufs; b++) {
        e.buf_of[b] = -1;
        for (int j = 0; j < key->nst; j++)
            if (key->st[j] == bufs[b])
                e.buf_of[b] = j;
        ok = e.buf_of[b] >= 0;
    }
    ok = ok && find_params(&e, key, k, node_of);
    if (ok && strides)
        memcpy(e.strides, strides, sizeof e.strides);
    /* Planned with this run's buffers and output (which the plan does not keep: each run gives
     * its own); a backend that cannot plan it runs it as a new kernel each time. */
    FcKernel now = e.k;
    now.bufs = k->bufs;
    now.out = k->out;
    now.scatter = k->scatter;
    FcError ignored;
    if (ok && be->prepare && be->prepare(be, &now, &e.prep, &ignored) != FC_OK)
        e.prep = NULL;
    if (!ok) {
        e.k.plan = NULL;        /* not taken */
        entry_free(&e);
        return NULL;
    }
    e.plan = (FcPlan *)k->plan; /* taken */
    e.key = *key;               /* taken (its nodes are this DAG's: not kept) */
    *key = (FcKey){0};
    mem_free(e.key.kn);
    e.key.kn = NULL;
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
    fc_key_free(&c->spare);
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
