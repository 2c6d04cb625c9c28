/* tensor.c — the tensor value and what it stands on: the context (backends, threads, the random
 * generator's state), devices, storages, tensors stored or lazy, and the leaf tensors (empty,
 * scalars, constants, iota, copies of host data, strided views).
 *
 * A write into a storage must not change what a lazy tensor computed before the write sees: every
 * lazy tensor registers itself with the storages its IR loads (FcStorage.readers), and
 * fc_storage_prepare_write realises them first. Depends on fcdim.h and the backend interface. */
#include "internal.h"
#include "mem.h"

#include "backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

FcStatus fc_errf(FcError *err, FcStatus status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}

FcStatus fc_nomem(FcError *err) { return fc_errf(err, FC_ERR_NOMEM, "out of memory"); }

const char *fc_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

/* ---- devices ---- */

bool fc_device_parse(const char *s, FcDevice *out)
{
    if (strcmp(s, "cpu") == 0) {
        *out = fc_cpu();
        return true;
    }
    if (strncmp(s, "cuda", 4) != 0)
        return false;
    s += 4;
    int index = 0;
    if (*s == ':') {
        s++;
        if (*s < '0' || *s > '9')
            return false;
        while (*s >= '0' && *s <= '9') {
            index = index * 10 + (*s++ - '0');
            if (index > 1 << 20)
                return false;
        }
    }
    if (*s)
        return false;
    out->type = FC_DEV_CUDA;
    out->index = index;
    return true;
}

const char *fc_device_name(FcDevice d, char *buf)
{
    if (d.type == FC_DEV_CPU)
        strcpy(buf, "cpu");
    else
        snprintf(buf, 24, "cuda:%d", d.index);
    return buf;
}

/* ---- the context ---- */

static int threads_from_env(void)
{
    const char *s = getenv("TDL_NUM_THREADS");
    if (s && *s) {
        char *end;
        long n = strtol(s, &end, 10);
        if (*end == 0 && n >= 1 && n <= 1024)
            return (int)n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)(n > 1024 ? 1024 : n) : 1;
}

FcStatus fc_ctx_new(FcCtx **out, FcError *err)
{
    *out = NULL;
    FcCtx *ctx = mem_calloc(1, sizeof *ctx);
    if (!ctx)
        return fc_nomem(err);
    ctx->nthreads = threads_from_env();
    const char *fake = getenv("TDL_FAKE_CUDA");
    ctx->fake_cuda = fake && strcmp(fake, "1") == 0;
    ctx->max_fused = 256;
    ctx->sched_off = FC_SCHED_TERMS_BOUNDED;    /* see FC_SCHED_TERMS */
    FcStatus st = fc_backend_open(FC_DEV_CPU, 0, ctx->nthreads, false, &ctx->cpu, err);
    if (st) {
        mem_free(ctx);
        return st;
    }
    *out = ctx;
    return FC_OK;
}

void fc_ctx_free(FcCtx *ctx)
{
    if (!ctx)
        return;
    fc_grad_free_all(ctx);      /* records hold storages (the backends free them) */
    fc_kcache_free(ctx);        /* before the backends: it holds their plans */
    if (ctx->cpu)
        ctx->cpu->destroy(ctx->cpu);
    for (int i = 0; i < FC_MAX_CUDA; i++)
        if (ctx->cuda[i])
            ctx->cuda[i]->destroy(ctx->cuda[i]);
    mem_free(ctx);
}

FcStatus fc_ctx_backend(FcCtx *ctx, FcDevice d, FcBackend **out, FcError *err)
{
    if (d.type == FC_DEV_CPU) {
        *out = ctx->cpu;
        return FC_OK;
    }
    char name[24];
    if (d.index < 0 || d.index >= FC_MAX_CUDA)
        return fc_errf(err, FC_ERR_DEVICE, "device %s is not available: tdl addresses cuda:0 to cuda:%d",
                       fc_device_name(d, name), FC_MAX_CUDA - 1);
    if (!ctx->cuda[d.index]) {
        /* The CUDA backend loads the driver on first use: without one this says why. */
        FcError why;
        FcStatus st = fc_backend_open(FC_DEV_CUDA, d.index, ctx->nthreads, ctx->fake_cuda, &ctx->cuda[d.index], &why);
        if (st == FC_ERR_DEVICE)
            return fc_errf(err, st, "device %s is not available: %s", fc_device_name(d, name), why.msg);
        if (st)
            return fc_errf(err, st, "%s", why.msg);
    }
    *out = ctx->cuda[d.index];
    return FC_OK;
}

/* ---- storage ---- */

FcStatus fc_storage_new(FcCtx *ctx, FcDevice dev, size_t nbytes, FcStorage **out, FcError *err)
{
    *out = NULL;
    FcBackend *be = NULL;
    FcStatus st = fc_ctx_backend(ctx, dev, &be, err);
    if (st)
        return st;
    FcStorage *s = fc_zalloc(sizeof *s);
    if (!s)
        return fc_nomem(err);
    st = be->alloc(be, nbytes, &s->data, err);
    if (st) {
        mem_free(s);
        return st;
    }
    s->refcnt = 1;
    s->device = dev;
    s->nbytes = nbytes;
    s->backend = be;
    *out = s;
    return FC_OK;
}

FcStorage *fc_storage_retain(FcStorage *s)
{
    if (s)
        s->refcnt++;
    return s;
}

void fc_storage_release(FcStorage *s)
{
    if (!s || --s->refcnt > 0)
        return;
    if (s->release)
        s->release(s->release_ud, s->data);
    else if (s->backend)
        s->backend->free(s->backend, s->data);
    fc_grad_rec_release(s->grad);
    fc_grad_rec_release(s->grad_off);
    mem_free(s->readers);
    mem_free(s);
}

static bool storage_add_reader(FcStorage *s, FcTensor *t)
{
    if (s->nreaders == s->capreaders) {
        int cap = s->capreaders ? s->capreaders * 2 : 4;
        FcTensor **r = mem_realloc(s->readers, (size_t)cap * sizeof *r);
        if (!r)
            return false;
        s->readers = r;
        s->capreaders = cap;
    }
    s->readers[s->nreaders++] = t;
    return true;
}

static void storage_remove_reader(FcStorage *s, FcTensor *t)
{
    for (int i = s->nreaders - 1; i >= 0; i--)
        if (s->readers[i] == t) {
            s->readers[i] = s->readers[--s->nreaders];
            return;
        }
}

/* fc_tensor_alloc's block holds, after the shape and strides, room for the levels (one per dim)
 * and for the first few storages a lazy tensor reads: most tensors need no other allocation. */
enum { INLINE_READS = 4 };

static FcStorage **inline_reads(FcTensor *t)
{
    return (FcStorage **)(fc_tensor_level_room(t) + (t->ndim > 0 ? t->ndim : 1));
}

void fc_tensor_drop_reads(FcTensor *t)
{
    for (int i = 0; i < t->nreads; i++)
        storage_remove_reader(t->reads[i], t);
    if (t->reads != inline_reads(t))
        mem_free(t->reads);
    t->reads = NULL;
    t->nreads = 0;
}

FcStatus fc_storage_realize_readers(FcCtx *ctx, FcStorage *s, FcError *err)
{
    /* Realising a reader removes it from the list (and may add none: realised tensors read
     * nothing lazily). */
    while (s->nreaders > 0) {
        FcTensor *t = s->readers[s->nreaders - 1];
        FcStatus st = fc_realize(ctx, t, err);
        if (st)
            return st;
        if (s->nreaders > 0 && s->readers[s->nreaders - 1] == t)
            storage_remove_reader(s, t);   /* not reached: realize drops the reads */
    }
    return FC_OK;
}

FcStatus fc_storage_prepare_write(FcCtx *ctx, FcStorage *s, FcError *err)
{
    FcStatus st = fc_storage_realize_readers(ctx, s, err);
    return st ? st : fc_grad_before_write(s, err);
}

/* ---- tensors ---- */

FcTensor *fc_tensor_alloc(int ndim)
{
    size_t nd = (size_t)(ndim > 0 ? ndim : 1);
    FcTensor *t = fc_zalloc(sizeof *t + 2 * nd * sizeof(int64_t) + nd * sizeof(FcDim *) +
                            INLINE_READS * sizeof(FcStorage *));
    if (!t)
        return NULL;
    t->refcnt = 1;
    t->ndim = ndim;
    t->shape = (int64_t *)(t + 1);
    t->strides = t->shape + ndim;
    t->device = fc_cpu();
    return t;
}

void fc_tensor_mark_view(FcTensor *v, FcTensor *src)
{
    v->view = src->view || (fc_is_grad_enabled() && fc_requires_grad(src));
}

FcTensor *fc_tensor_view_over(FcTensor *t, FcStorage *s)
{
    FcTensor *r = fc_tensor_alloc(t->ndim);
    if (!r)
        return NULL;
    r->dtype = t->dtype;
    r->device = t->device;
    memcpy(r->shape, t->shape, (size_t)t->ndim * sizeof *r->shape);
    memcpy(r->strides, t->strides, (size_t)t->ndim * sizeof *r->strides);
    r->offset = t->offset;
    r->storage = fc_storage_retain(s);
    if (s == t->storage)
        fc_tensor_mark_view(r, t);
    return r;
}

FcDim **fc_tensor_level_room(FcTensor *t)
{
    return (FcDim **)(t->shape + 2 * (t->ndim > 0 ? t->ndim : 1));
}

FcTensor *fc_tensor_retain(FcTensor *t)
{
    if (t)
        t->refcnt++;
    return t;
}

bool fc_tensor_add_alias(FcTensor *t, FcTensor *r, const int *src)
{
    mem_free(r->alias_src);
    r->alias_src = NULL;
    if (src) {
        r->alias_src = mem_malloc((size_t)(r->ndim > 0 ? r->ndim : 1));
        if (!r->alias_src)
            return false;
        for (int j = 0; j < r->ndim; j++)
            r->alias_src[j] = (int8_t)src[j];
    }
    if (t->naliases == t->capaliases) {
        int cap = t->capaliases ? 2 * t->capaliases : 4;
        FcTensor **a = mem_realloc(t->aliases, (size_t)cap * sizeof *a);
        if (!a)
            return false;
        t->aliases = a;
        t->capaliases = cap;
    }
    t->aliases[t->naliases++] = r;
    r->alias_of = t;
    return true;
}

/* Takes r out of its base's list of aliases. */
static void alias_unlink(FcTensor *r)
{
    FcTensor *t = r->alias_of;
    if (!t)
        return;
    for (int i = 0; i < t->naliases; i++)
        if (t->aliases[i] == r) {
            t->aliases[i] = t->aliases[--t->naliases];
            break;
        }
    r->alias_of = NULL;
}

/* t has just been realised: its aliases (and theirs) become views of its storage. */
static void realised_aliases(FcTensor *t)
{
    for (int i = 0; i < t->naliases; i++) {
        FcTensor *a = t->aliases[i];
        a->alias_of = NULL;
        if (a->node) {
            int64_t strides[FC_MAX_DIMS];
            for (int j = 0; j < a->ndim; j++) {
                int s = a->alias_src ? a->alias_src[j] : j;
                strides[j] = a->alias_src && (s < 0 || t->shape[s] == 1) ? 0 : t->strides[s];
            }
            fc_tensor_become_stored(a, t->storage, t->offset, strides);
        }
        mem_free(a->alias_src);
        a->alias_src = NULL;
    }
    t->naliases = 0;
}

void fc_tensor_become_stored(FcTensor *t, FcStorage *s, int64_t offset, const int64_t *strides)
{
    if (t->grad_named && t->grad_named == t->node)
        t->grad_named = s->grad;    /* the record of its realisation holds the value now */
    fc_tensor_drop_reads(t);
    fc_node_release(t->node);
    t->node = NULL;
    t->storage = fc_storage_retain(s);
    t->offset = offset;
    memcpy(t->strides, strides, (size_t)t->ndim * sizeof *strides);
    t->unplaced = false;
    realised_aliases(t);
}

void fc_tensor_realised_view(FcTensor *t)
{
    for (FcTensor *a = t, *b; (b = a->alias_of) != NULL && b->node; a = b) {
        if (a->ndim != b->ndim)
            return;
        int64_t strides[FC_MAX_DIMS];
        bool seen[FC_MAX_DIMS] = {false};
        for (int j = 0; j < a->ndim; j++) {
            int s = a->alias_src ? a->alias_src[j] : j;
            if (s < 0 || s >= b->ndim || seen[s] || b->shape[s] != a->shape[j])
                return;
            seen[s] = true;
            strides[s] = a->strides[j];
        }
        alias_unlink(a);
        fc_tensor_become_stored(b, a->storage, a->offset, strides);
    }
}

/* Makes a, an alias of mid, an alias of mid's base instead (mid is going): the dims it walks
 * composed. False on out-of-memory (a then stays lazy, a view of none). */
static bool alias_reparent(FcTensor *base, const FcTensor *mid, FcTensor *a)
{
    int src[FC_MAX_DIMS];
    for (int j = 0; j < a->ndim; j++) {
        int s = a->alias_src ? a->alias_src[j] : j;
        src[j] = s < 0 ? -1 : mid->alias_src ? mid->alias_src[s] : s;
    }
    return fc_tensor_add_alias(base, a, !mid->alias_src && !a->alias_src ? NULL : src);
}

void fc_tensor_release(FcTensor *t)
{
    if (!t || --t->refcnt > 0)
        return;
    /* t's aliases outlive it: they become aliases of its base, so that a chain of them (x[i],
     * then .order(i), the links between dropped) still sees the base realised. */
    FcTensor *base = t->alias_of;
    alias_unlink(t);
    for (int i = 0; i < t->naliases; i++) {
        FcTensor *a = t->aliases[i];
        a->alias_of = NULL;
        if (base && a->node)
            alias_reparent(base, t, a);
    }
    mem_free(t->aliases);
    mem_free(t->alias_src);
    fc_tensor_drop_reads(t);
    fc_node_release(t->node);
    fc_node_release(t->load);
    fc_storage_release(t->storage);
    fc_retained_release(t->retained);
    if (t->levels) {
        for (int k = 0; k < t->ndim; k++)
            fc_dim_release(t->levels[k]);
    }
    mem_free(t);
}

int64_t fc_tensor_numel(const FcTensor *t)
{
    int64_t n;
    fc_shape_numel(t->ndim, t->shape, &n);
    return n;
}

bool fc_tensor_known(const FcTensor *t, FcScalar *v)
{
    if (t->node)
        return t->node->op == FC_OP_CONST && (*v = t->node->konst, true);
    if (t->device.type != FC_DEV_CPU || fc_tensor_numel(t) != 1)
        return false;
    *v = fc_scalar_load(t->dtype, (const char *)t->storage->data + t->offset * (int64_t)fc_dtype_size(t->dtype));
    return true;
}

/* The error for a shape whose bytes overflow int64 (PyTorch's computeStorageNbytesContiguous). */
static FcStatus too_large(FcError *err, int ndim, const int64_t *shape)
{
    char buf[256];
    return fc_errf(err, FC_ERR_RUNTIME, "Storage size calculation overflowed with sizes=%s",
                   fc_shape_str(buf, sizeof buf, ndim, shape));
}

FcStatus fc_check_nbytes(int ndim, const int64_t *shape, FcDType dt, FcError *err)
{
    int64_t nbytes;
    return fc_shape_nbytes(ndim, shape, dt, &nbytes) ? FC_OK : too_large(err, ndim, shape);
}

FcStatus fc_numel_overflow(FcError *err)
{
    return fc_errf(err, FC_ERR_RUNTIME, "numel: integer multiplication overflow");
}

FcStatus fc_empty(FcCtx *ctx, FcDType dt, FcDevice dev, int ndim, const int64_t *shape,
                  const int64_t *strides, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (ndim < 0 || ndim > FC_MAX_DIMS)
        return fc_errf(err, FC_ERR_VALUE, "too many dimensions (%d): at most %d", ndim, FC_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) {
            char buf[256];
            return fc_errf(err, FC_ERR_RUNTIME, "Trying to create tensor with negative dimension %lld: %s",
                           (long long)shape[i], fc_shape_str(buf, sizeof buf, ndim, shape));
        }
    int64_t nbytes;
    if (strides) {
        /* The extent the strides reach (they are non-negative here). */
        int64_t hi = 0, numel;
        bool over = false;
        fc_shape_numel(ndim, shape, &numel);
        for (int i = 0; i < ndim && numel != 0; i++) {
            int64_t span;
            over |= __builtin_mul_overflow(shape[i] - 1, strides[i], &span) ||
                    __builtin_add_overflow(hi, span, &hi);
        }
        if (numel == 0)
            nbytes = 0;
        else if (over || __builtin_add_overflow(hi, 1, &hi) ||
                 __builtin_mul_overflow(hi, (int64_t)fc_dtype_size(dt), &nbytes))
            return too_large(err, ndim, shape);
    } else if (!fc_shape_nbytes(ndim, shape, dt, &nbytes)) {
        return too_large(err, ndim, shape);
    }
    FcTensor *t = fc_tensor_alloc(ndim);
    if (!t)
        return fc_nomem(err);
    FcStatus st = fc_storage_new(ctx, dev, (size_t)nbytes, &t->storage, err);
    if (st) {
        mem_free(t);
        return st;
    }
    t->dtype = dt;
    t->device = dev;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    if (strides)
        memcpy(t->strides, strides, (size_t)ndim * sizeof *strides);
    else
        fc_contiguous_strides(ndim, shape, t->strides);
    *out = t;
    return FC_OK;
}

/* Whether a value computed from these operands is unplaced: at least one of them is, and the
 * others go with any device too (Python numbers, CPU 0-dim tensors). */
static bool from_unplaced(FcTensor *const *from, int nfrom)
{
    bool any = false;
    for (int i = 0; i < nfrom; i++) {
        if (from[i]->unplaced)
            any = true;
        else if (!fc_tensor_goes_anywhere(from[i]))
            return false;
    }
    return any;
}

FcTensor *fc_tensor_from_node(FcNode *node, FcDevice dev, FcTensor *const *from, int nfrom)
{
    FcTensor *t = fc_tensor_alloc(node->nlev);
    if (!t) {
        fc_node_release(node);
        return NULL;
    }
    t->dtype = node->dtype;
    t->device = dev;
    memcpy(t->shape, node->size, (size_t)node->nlev * sizeof *t->shape);
    fc_contiguous_strides(t->ndim, t->shape, t->strides);
    t->node = node;
    t->unplaced = dev.type == FC_DEV_CPU && from_unplaced(from, nfrom);
    /* The storages read: the union over the operands. */
    int cap = 0;
    for (int i = 0; i < nfrom; i++)
        cap += from[i]->storage ? 1 : from[i]->nreads;
    if (cap > 0) {
        t->reads = cap <= INLINE_READS ? inline_reads(t) : mem_malloc((size_t)cap * sizeof *t->reads);
        if (!t->reads) {
            fc_tensor_release(t);
            return NULL;
        }
    }
    for (int i = 0; i < nfrom; i++) {
        FcStorage *const *list = from[i]->storage ? &from[i]->storage : from[i]->reads;
        int n = from[i]->storage ? 1 : from[i]->nreads;
        for (int j = 0; j < n; j++) {
            bool seen = false;
            for (int k = 0; k < t->nreads && !seen; k++)
                seen = t->reads[k] == list[j];
            if (seen)
                continue;
            if (!storage_add_reader(list[j], t)) {
                fc_tensor_release(t);
                return NULL;
            }
            t->reads[t->nreads++] = list[j];
        }
    }
    return t;
}

static FcStatus const_tensor(FcDType dt, FcDevice dev, int ndim, const int64_t *shape, FcScalar v, bool wrapped,
                             FcTensor **out, FcError *err)
{
    *out = NULL;
    FcNode *n = fc_node_new(FC_OP_CONST, dt, ndim, shape, 0, NULL);
    if (!n)
        return fc_nomem(err);
    n->konst = v;
    FcTensor *t = fc_tensor_from_node(n, dev, NULL, 0);
    if (!t)
        return fc_nomem(err);
    t->wrapped_number = wrapped;
    *out = t;
    return FC_OK;
}

FcStatus fc_scalar(FcCtx *ctx, FcDType dt, FcScalar v, bool wrapped, FcTensor **out, FcError *err)
{
    return const_tensor(dt, fc_cpu(), 0, NULL, fc_scalar_convert(v, dt, dt), wrapped, out, err);
}

FcStatus fc_full(FcCtx *ctx, FcDType dt, FcDevice dev, int ndim, const int64_t *shape, FcScalar v, FcTensor **out,
                 FcError *err)
{
    *out = NULL;
    FcBackend *be;
    FcStatus dst = fc_ctx_backend(ctx, dev, &be, err);      /* a device that is not there says so now */
    if (dst)
        return dst;
    if (ndim < 0 || ndim > FC_MAX_DIMS)
        return fc_errf(err, FC_ERR_VALUE, "too many dimensions (%d): at most %d", ndim, FC_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) {
            char buf[256];
            return fc_errf(err, FC_ERR_RUNTIME, "Trying to create tensor with negative dimension %lld: %s",
                           (long long)shape[i], fc_shape_str(buf, sizeof buf, ndim, shape));
        }
    FcStatus st = fc_check_nbytes(ndim, shape, dt, err);
    if (st)
        return st;
    return const_tensor(dt, dev, ndim, shape, fc_scalar_convert(v, dt, dt), false, out, err);
}

FcStatus fc_iota(FcCtx *ctx, int64_t n, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (n < 0)
        return fc_errf(err, FC_ERR_RUNTIME, "Trying to create tensor with negative dimension %lld", (long long)n);
    FcNode *node = fc_node_new(FC_OP_IOTA, FC_INT64, 1, &n, 0, NULL);
    if (!node)
        return fc_nomem(err);
    *out = fc_tensor_from_node(node, fc_cpu(), NULL, 0);
    if (!*out)
        return fc_nomem(err);
    (*out)->unplaced = true;
    return FC_OK;
}

FcStatus fc_from_view(FcCtx *ctx, const FcView *v, FcDevice dev, FcTensor **out, FcError *err)
{
    /* Wrap the host view as a borrowed storage, then copy it into a fresh contiguous tensor. */
    *out = NULL;
    FcTensor *t;
    FcStatus st = fc_empty(ctx, v->dtype, dev, v->ndim, v->shape, NULL, &t, err);
    if (st)
        return st;
    FcStorage host = {.refcnt = 1, .device = fc_cpu(), .data = v->data};
    FcTensor *src = fc_tensor_alloc(v->ndim);
    if (!src) {
        fc_tensor_release(t);
        return fc_nomem(err);
    }
    src->dtype = v->dtype;
    memcpy(src->shape, v->shape, (size_t)v->ndim * sizeof *src->shape);
    memcpy(src->strides, v->strides, (size_t)v->ndim * sizeof *src->strides);
    src->offset = v->offset;
    src->storage = &host;
    host.refcnt++;
    st = fc_assign(ctx, t, src, err);
    fc_tensor_release(src);     /* drops host back to 1: never freed (stack) */
    if (st) {
        fc_tensor_release(t);
        return st;
    }
    *out = t;
    return FC_OK;
}

FcStatus fc_as_strided(FcCtx *ctx, FcTensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                       int64_t offset, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcStatus st = fc_realize(ctx, t, err);
    if (st)
        return st;
    if (ndim < 0 || ndim > FC_MAX_DIMS)
        return fc_errf(err, FC_ERR_VALUE, "too many dimensions (%d): at most %d", ndim, FC_MAX_DIMS);
    FcTensor *v = fc_tensor_alloc(ndim);
    if (!v)
        return fc_nomem(err);
    v->dtype = t->dtype;
    v->device = t->device;
    memcpy(v->shape, shape, (size_t)ndim * sizeof *shape);
    memcpy(v->strides, strides, (size_t)ndim * sizeof *strides);
    v->offset = offset;
    v->storage = fc_storage_retain(t->storage);
    fc_tensor_mark_view(v, t);
    *out = v;
    return FC_OK;
}

FcStatus fc_host_view(FcCtx *ctx, FcTensor *t, FcView *out, FcError *err)
{
    FcStatus st = fc_realize(ctx, t, err);
    if (st)
        return st;
    if (t->device.type != FC_DEV_CPU)
        return fc_errf(err, FC_ERR_DEVICE, "a tensor on the GPU has no host view: copy it with .cpu() first");
    memset(out, 0, sizeof *out);
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    memcpy(out->shape, t->shape, (size_t)t->ndim * sizeof *t->shape);
    memcpy(out->strides, t->strides, (size_t)t->ndim * sizeof *t->strides);
    out->offset = t->offset;
    out->data = t->storage->data;
    return FC_OK;
}
