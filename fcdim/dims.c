/* dims.c — first-class dimensions: functorch.dim's semantics over the levels of a tensor.
 *
 * A tensor's dims are its levels (FcTensor.levels): each is positional or a first-class FcDim.
 * Everything outside this file treats every level as a positional dim of the underlying tensor
 * (functorch.dim's `_tensor`); this file gives the levels their meaning, after
 * functorch/csrc/dim/dim.cpp (PyTorch 1.13), so that results — values and the order of their
 * levels, which printing shows — are functorch.dim's:
 *   - binding sizes (fc_dim_bind), a dim as a tensor (its index, an iota over it);
 *   - pointwise alignment: the union of the operands' levels in order of appearance, positional
 *     levels aligned from the right (fc_levels_union, fc_match_levels);
 *   - indexing with dims, dim packs, tensors carrying dims (fc_index_dims: getsetitem_flat);
 *   - order, expand, stack over dims.
 * Moving levels never moves data: a stored tensor gets a strided view, a lazy one a node that
 * maps its levels (a CAST to its own dtype, which the scheduler emits as nothing).
 * Depends on fcdim.h and internal.h. */
#include "internal.h"
#include "mem.h"

#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Dim objects ---- */

FcDim *fc_dim_new(FcCtx *ctx, const char *name, bool named, int64_t size)
{
    FcDim *d = fc_zalloc(sizeof *d);
    if (!d)
        return NULL;
    d->name = mem_strdup(name);
    if (!d->name) {
        mem_free(d);
        return NULL;
    }
    d->refcnt = 1;
    d->serial = ctx->dim_serial++;
    d->size = size >= 0 ? size : -1;
    d->named = named;
    return d;
}

FcDim *fc_dim_retain(FcDim *d)
{
    if (d)
        d->refcnt++;
    return d;
}

void fc_dim_release(FcDim *d)
{
    if (!d || --d->refcnt > 0)
        return;
    mem_free(d->name);
    mem_free(d->bound_at);
    mem_free(d);
}

bool fc_dim_set_name(FcDim *d, const char *name)
{
    char *s = mem_strdup(name);
    if (!s)
        return false;
    mem_free(d->name);
    d->name = s;
    d->named = true;
    return true;
}

/* "x.tdl:3:5, indexing dim 0 of shape [3, 4]": where the host is, and what binds. */
static char *binding_text(FcCtx *ctx, const char *what)
{
    char where[160] = "", buf[400];
    if (ctx->locate)
        ctx->locate(ctx->locate_ud, where, sizeof where);
    snprintf(buf, sizeof buf, "%s%s%s", where[0] ? "at " : "", where, what && what[0] ? (where[0] ? ", " : "") : "");
    if (what && what[0])
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s", what);
    return mem_strdup(buf);
}

FcStatus fc_dim_bind(FcCtx *ctx, FcDim *d, int64_t size, const char *what, FcError *err)
{
    if (size < 0)
        return fc_errf(err, FC_ERR_VALUE, "dimension %s cannot have negative size %lld", d->name, (long long)size);
    if (d->size == size)
        return FC_OK;
    if (d->size >= 0) {
        char *now = binding_text(ctx, what);
        if (!now)
            return fc_nomem(err);
        FcStatus st = fc_errf(err, FC_ERR_DIM_BIND,
                              "dim '%s' was bound to size %lld (%s) and cannot bind to size %lld (%s)", d->name,
                              (long long)d->size, d->bound_at && d->bound_at[0] ? d->bound_at : "earlier",
                              (long long)size, now && now[0] ? now : "here");
        mem_free(now);
        return st;
    }
    /* Where it was bound is part of every later message about it: no memory for that is no bind. */
    char *at = binding_text(ctx, what);
    if (!at)
        return fc_nomem(err);
    d->size = size;
    mem_free(d->bound_at);
    d->bound_at = at;
    return FC_OK;
}

FcStatus fc_dim_size(const FcDim *d, int64_t *out, FcError *err)
{
    *out = 0;
    if (d->size < 0)
        return fc_errf(err, FC_ERR_VALUE, "dimension %s is unbound: give it a size (%s.size = n) or index a dim with it",
                       d->name, d->name);
    *out = d->size;
    return FC_OK;
}

/* ---- levels ---- */

int fc_tensor_npos(const FcTensor *t)
{
    if (!t->levels)
        return t->ndim;
    int n = 0;
    for (int k = 0; k < t->ndim; k++)
        n += t->levels[k] == NULL;
    return n;
}

void fc_tensor_levels(const FcTensor *t, FcLevels *out)
{
    out->n = t->ndim;
    for (int k = 0; k < t->ndim; k++)
        out->at[k] = t->levels ? t->levels[k] : NULL;
}

bool fc_tensor_levels_are(const FcTensor *t, const FcLevels *lv)
{
    if (t->ndim != lv->n)
        return false;
    for (int k = 0; k < t->ndim; k++)
        if ((t->levels ? t->levels[k] : NULL) != lv->at[k])
            return false;
    return true;
}

int fc_level_of_dim(const FcTensor *t, const FcDim *d)
{
    for (int k = 0; t->levels && k < t->ndim; k++)
        if (t->levels[k] == d)
            return k;
    return -1;
}

int fc_level_of_pos(const FcTensor *t, int p)
{
    for (int k = 0; k < t->ndim; k++)
        if (!t->levels || !t->levels[k])
            if (p-- == 0)
                return k;
    return -1;
}

/* "(i, 0)": levels as functorch.dim's repr shows them (positional levels numbered from 0). */
const char *fc_levels_str(char *buf, size_t cap, const FcLevels *lv)
{
    size_t n = (size_t)snprintf(buf, cap, "(");
    int p = 0;
    for (int k = 0; k < lv->n && n < cap; k++) {
        if (lv->at[k])
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", k ? ", " : "", lv->at[k]->name);
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s%d", k ? ", " : "", p++);
    }
    if (n < cap)
        snprintf(buf + n, cap - n, "%s)", lv->n == 1 ? "," : "");
    return buf;
}

static bool levels_have_dims(const FcLevels *lv)
{
    for (int k = 0; k < lv->n; k++)
        if (lv->at[k])
            return true;
    return false;
}

/* Gives r (without levels of its own) the levels lv, in its block, when they hold a dim. */
static void set_levels(FcTensor *r, const FcLevels *lv)
{
    if (!levels_have_dims(lv))
        return;
    r->levels = fc_tensor_level_room(r);
    for (int k = 0; k < lv->n; k++)
        r->levels[k] = fc_dim_retain(lv->at[k]);
}

FcStatus fc_with_levels(FcCtx *ctx, FcTensor *t, const FcLevels *lv, FcTensor **out, FcError *err)
{
    (void)ctx;
    *out = NULL;
    if (lv->n != t->ndim)
        return fc_errf(err, FC_ERR_RUNTIME, "internal error: %d levels for a tensor of %d dims", lv->n, t->ndim);
    FcTensor *r;
    if (t->node) {
        r = fc_tensor_from_node(fc_node_retain(t->node), t->device, &t, 1);
        if (!r)
            return fc_nomem(err);
        r->wrapped_number = t->wrapped_number;
        if (!fc_tensor_add_alias(t, r, NULL)) {
            fc_tensor_release(r);
            return fc_nomem(err);
        }
    } else if (!(r = fc_tensor_view_over(t, t->storage))) {
        return fc_nomem(err);
    }
    set_levels(r, lv);
    *out = r;
    return FC_OK;
}

FcStatus fc_take_levels(FcCtx *ctx, FcTensor **t, const FcLevels *lv, FcError *err)
{
    FcTensor *r = *t;
    if (r->refcnt != 1 || r->levels || lv->n != r->ndim) {
        FcStatus st = fc_with_levels(ctx, r, lv, t, err);
        if (st != FC_OK)
            *t = r;
        else
            fc_tensor_release(r);
        return st;
    }
    set_levels(r, lv);
    return FC_OK;
}

FcStatus fc_dim_tensor(FcCtx *ctx, FcDim *d, FcTensor **out, FcError *err)
{
    *out = NULL;
    int64_t n;
    FcStatus st = fc_dim_size(d, &n, err);
    FcTensor *iota = NULL;
    if (st == FC_OK)
        st = fc_iota(ctx, n, &iota, err);
    if (st)
        return st;
    FcLevels lv = {1, {d}};
    st = fc_with_levels(ctx, iota, &lv, out, err);
    fc_tensor_release(iota);
    return st;
}

/* A level as functorch numbers it: a dim, or a positional level counted from the right (-1 is
 * the last positional dim). */
typedef struct Lev { FcDim *dim; int pos; } Lev;

static bool lev_eq(Lev a, Lev b) { return a.dim == b.dim && (a.dim || a.pos == b.pos); }

static int lev_find(const Lev *ls, int n, Lev l)
{
    for (int k = 0; k < n; k++)
        if (lev_eq(ls[k], l))
            return k;
    return -1;
}

static int levs_of(const FcTensor *t, Lev *ls)
{
    int npos = fc_tensor_npos(t), p = -npos;
    for (int k = 0; k < t->ndim; k++) {
        FcDim *d = t->levels ? t->levels[k] : NULL;
        ls[k] = (Lev){d, d ? 0 : p++};
    }
    return t->ndim;
}

static void levs_to_levels(const Lev *ls, int n, FcLevels *out)
{
    out->n = n;
    for (int k = 0; k < n; k++)
        out->at[k] = ls[k].dim;
}

/* Renumbers the positional levels of ls from the right (-1 last). */
static void levs_renumber(Lev *ls, int n)
{
    int seen = 0;
    for (int k = n - 1; k >= 0; k--)
        if (!ls[k].dim)
            ls[k].pos = -++seen;
}

/* A tensor over the levels `to` (sizes size) whose level j is t's level src[j] (-1: t lacks it,
 * broadcast). Stored tensors get a view, lazy ones a level-moving node. Positional result. */
static FcStatus relayout(FcCtx *ctx, FcTensor *t, int n, const int *src, const int64_t *size, FcTensor **out,
                         FcError *err)
{
    *out = NULL;
    bool same = n == t->ndim;
    for (int j = 0; j < n && same; j++)
        same = src[j] == j;
    if (same && !t->levels)
        return (*out = fc_tensor_retain(t)), FC_OK;
    if (same) {
        FcLevels lv = {n, {NULL}};
        return fc_with_levels(ctx, t, &lv, out, err);
    }
    if (t->node) {
        FcNode *c = fc_node_new(FC_OP_CAST, t->dtype, n, size, 1, &t->node);
        if (!c)
            return fc_nomem(err);
        c->src_dtype = t->dtype;
        for (int j = 0; j < n; j++)
            if (src[j] >= 0)
                c->lev_map[0][src[j]] = (int8_t)(t->shape[src[j]] == 1 && size[j] != 1 ? FC_LEV_BCAST : j);
        *out = fc_tensor_from_node(c, t->device, &t, 1);
        if (!*out)
            return fc_nomem(err);
        (*out)->wrapped_number = t->wrapped_number;
        /* a view of t, as the strided layout below is of a stored t */
        if (!fc_tensor_add_alias(t, *out, src)) {
            fc_tensor_release(*out);
            *out = NULL;
            return fc_nomem(err);
        }
        return FC_OK;
    }
    int64_t strides[FC_MAX_DIMS];
    for (int j = 0; j < n; j++)
        strides[j] = src[j] >= 0 && t->shape[src[j]] != 1 ? t->strides[src[j]] : 0;
    return fc_as_strided(ctx, t, n, size, strides, t->offset, out, err);
}

/* functorch's _match_levels: t (levels from) laid out over `to`; a level t lacks has size 1
 * when positional and the dim's size (stride 0) when first-class. */
static FcStatus match_levs(FcCtx *ctx, FcTensor *t, const Lev *from, int nfrom, const Lev *to, int nto,
                           FcTensor **out, FcError *err)
{
    int src[FC_MAX_DIMS] = {0};
    int64_t size[FC_MAX_DIMS] = {0};
    for (int j = 0; j < nto; j++) {
        src[j] = lev_find(from, nfrom, to[j]);
        size[j] = src[j] >= 0 ? t->shape[src[j]] : to[j].dim ? to[j].dim->size : 1;
    }
    return relayout(ctx, t, nto, src, size, out, err);
}

FcStatus fc_match_levels(FcCtx *ctx, FcTensor *t, const FcLevels *to, FcTensor **out, FcError *err)
{
    Lev from[FC_MAX_DIMS], tl[FC_MAX_DIMS];
    int nf = levs_of(t, from);
    for (int j = 0; j < to->n; j++)
        tl[j] = (Lev){to->at[j], 0};
    levs_renumber(tl, to->n);
    return match_levs(ctx, t, from, nf, tl, to->n, out, err);
}

FcStatus fc_levels_union(int n, FcTensor *const *ts, FcLevels *out, FcError *err)
{
    Lev u[FC_MAX_DIMS], ls[FC_MAX_DIMS];
    int nu = 0;
    for (int i = 0; i < n; i++) {
        if (!ts[i])
            continue;
        int nl = levs_of(ts[i], ls);
        for (int k = 0; k < nl; k++)
            if (lev_find(u, nu, ls[k]) < 0) {
                if (nu == FC_MAX_DIMS)
                    return fc_errf(err, FC_ERR_VALUE, "too many dimensions: at most %d", FC_MAX_DIMS);
                u[nu++] = ls[k];
            }
    }
    /* functorch asserts here when positional levels come out of order (x + T[i] with x of lower
     * rank): keep the slots and give them the positional levels in order. */
    int slot[FC_MAX_DIMS], np = 0, lo = 0;
    for (int k = 0; k < nu; k++)
        if (!u[k].dim) {
            slot[np++] = k;
            if (u[k].pos < lo)
                lo = u[k].pos;
        }
    for (int q = 0; q < np; q++)
        u[slot[q]].pos = lo + q;
    levs_to_levels(u, nu, out);
    return FC_OK;
}

FcStatus fc_levels_batch(int n, FcTensor *const *ts, FcLevels *out, int *nbatch, FcError *err)
{
    FcDim *ds[FC_MAX_DIMS];
    int nd = 0, npos = 0;
    for (int i = 0; i < n; i++) {
        if (!ts[i])
            continue;
        int p = fc_tensor_npos(ts[i]);
        if (p > npos)
            npos = p;
        for (int k = 0; ts[i]->levels && k < ts[i]->ndim; k++) {
            FcDim *d = ts[i]->levels[k];
            bool seen = !d;
            for (int q = 0; q < nd && !seen; q++)
                seen = ds[q] == d;
            if (!seen)
                ds[nd++] = d;
        }
    }
    if (nd + npos > FC_MAX_DIMS)
        return fc_errf(err, FC_ERR_VALUE, "too many dimensions: at most %d", FC_MAX_DIMS);
    /* EnableAllLayers: in the order the dims were made */
    for (int a = 1; a < nd; a++)
        for (int b = a; b > 0 && ds[b - 1]->serial > ds[b]->serial; b--) {
            FcDim *x = ds[b];
            ds[b] = ds[b - 1];
            ds[b - 1] = x;
        }
    out->n = nd;
    for (int q = 0; q < nd; q++)
        out->at[q] = ds[q];
    *nbatch = nd;
    return FC_OK;
}

FcStatus fc_batch_tensor(FcCtx *ctx, FcTensor *t, const FcLevels *batch, FcTensor **out, FcError *err)
{
    Lev from[FC_MAX_DIMS], to[FC_MAX_DIMS];
    int nf = levs_of(t, from), nt = 0;
    for (int q = 0; q < batch->n; q++)
        to[nt++] = (Lev){batch->at[q], 0};
    for (int k = 0; k < nf; k++)
        if (!from[k].dim)
            to[nt++] = from[k];
    return match_levs(ctx, t, from, nf, to, nt, out, err);
}

/* ---- indexing with dims (functorch's getsetitem_flat) ---- */

static FcStatus bind_pack(FcCtx *ctx, int64_t sz, int64_t sd, FcDim *const *pack, int n, int64_t *nsz,
                          int64_t *nsd, int *nn, FcError *err)
{
    /* The product of the sizes known: 0 when one is 0, else checked (a product that overflows
     * matches no dim, which holds at most 2**63 - 1 elements). */
    int64_t known[FC_MAX_DIMS], prod;
    int nk = 0;
    if (n > FC_MAX_DIMS)
        return fc_errf(err, FC_ERR_VALUE, "too many dimensions (%d): at most %d", n, FC_MAX_DIMS);
    for (int i = 0; i < n; i++)
        if (pack[i]->size >= 0)
            known[nk++] = pack[i]->size;
    bool fits = fc_shape_numel(nk, known, &prod);
    FcStatus st;
    for (int i = 0; i < n; i++) {
        if (pack[i]->size < 0) {
            for (int j = i + 1; j < n; j++)
                if (pack[j]->size < 0)
                    return fc_errf(err, FC_ERR_DIM_BIND, "cannot infer the sizes of two dimensions at once: %s and %s",
                                   pack[i]->name, pack[j]->name);
            if (!fits || prod == 0 || sz % prod != 0) {
                char buf[256];
                size_t m = 0;
                for (int j = 0; j < n && m < sizeof buf; j++) {
                    if (pack[j]->size < 0)
                        m += (size_t)snprintf(buf + m, sizeof buf - m, "%s%s=?", j ? ", " : "", pack[j]->name);
                    else
                        m += (size_t)snprintf(buf + m, sizeof buf - m, "%s%s=%lld", j ? ", " : "", pack[j]->name,
                                              (long long)pack[j]->size);
                }
                return fc_errf(err, FC_ERR_DIM_BIND,
                               "inferred dimension %s does not evenly fit into the dimension of size %lld it packs with "
                               "sizes (%s)", pack[i]->name, (long long)sz, buf);
            }
            char what[96];
            snprintf(what, sizeof what, "inferred from a dim pack over a dim of size %lld", (long long)sz);
            if ((st = fc_dim_bind(ctx, pack[i], sz / prod, what, err)))
                return st;
            prod = sz;
            fits = true;
            break;
        }
    }
    if (!fits || prod != sz) {
        char buf[256];
        size_t m = 0;
        for (int j = 0; j < n && m < sizeof buf; j++)
            m += (size_t)snprintf(buf + m, sizeof buf - m, "%s%s=%lld", j ? ", " : "", pack[j]->name,
                                  (long long)pack[j]->size);
        char ps[32] = "more than 2**63 - 1";
        if (fits)
            snprintf(ps, sizeof ps, "%lld", (long long)prod);
        return fc_errf(err, FC_ERR_DIM_BIND, "dimension sizes do not match (%lld != %s) when matching dimension pack (%s)",
                       (long long)sz, ps, buf);
    }
    int64_t stride = sd;
    for (int i = n - 1; i >= 0; i--) {
        nsd[*nn + i] = stride;
        nsz[*nn + i] = pack[i]->size;
        stride = fc_mul_wrap(stride, pack[i]->size);     /* as a view's strides (shape.c) */
    }
    *nn += n;
    return FC_OK;
}

/* One entry of the flattened index: a basic index or a tensor (with its levels). */
typedef struct Flat {
    FcIndex ix;                 /* INT SLICE NONE BOOL: as given; TENSOR: tensor below */
    FcDim *dim;                 /* a dim binding this position (when not a tensor) */
    FcTensor *t;                /* an index tensor (a reference), levels in tl */
    int ntl;
    Lev tl[FC_MAX_DIMS];
} Flat;

/* Entry k of the flattened index, zeroed but for its levels (read only up to ntl). */
static Flat *flat_at(Flat *flat, int k)
{
    memset(&flat[k], 0, offsetof(Flat, tl));
    return &flat[k];
}

typedef struct Uses { FcDim *d[FC_MAX_DIMS * 2]; int n[FC_MAX_DIMS * 2]; int count; } Uses;

static void use_dim(Uses *u, FcDim *d)
{
    for (int k = 0; k < u->count; k++)
        if (u->d[k] == d) {
            u->n[k]++;
            return;
        }
    if (u->count < FC_MAX_DIMS * 2) {
        u->d[u->count] = d;
        u->n[u->count++] = 1;
    }
}

static int uses_of(const Uses *u, FcDim *d)
{
    for (int k = 0; k < u->count; k++)
        if (u->d[k] == d)
            return u->n[k];
    return 0;
}

static bool ix_counts(const FcIndex *x) { return x->kind != FC_IX_NONE && x->kind != FC_IX_ELLIPSIS; }

FcStatus fc_index_dims(FcCtx *ctx, FcTensor *self, int n, const FcIndex *ix, int nkeys, const int *keys,
                       FcTensor **out, FcError *err)
{
    *out = NULL;
    FcStatus st = FC_OK;
    int npos = fc_tensor_npos(self);
    /* expand `...` into slices (getsetitem) */
    FcIndex in[FC_MAX_DIMS * 2];
    int nin = 0;
    if (!keys) {
        int indexed = 0, ell = -1;
        for (int k = 0; k < n; k++) {
            if (ix[k].kind == FC_IX_ELLIPSIS) {
                if (ell >= 0)
                    return fc_errf(err, FC_ERR_DIM_BIND,
                                   "at most one ... or unbound dimension list can exist in an index, but found 2 at "
                                   "offsets %d and %d", ell, k);
                ell = k;
            } else if (ix_counts(&ix[k])) {
                indexed++;
            }
        }
        if (indexed > npos)
            return fc_errf(err, FC_ERR_VALUE, "at least %d indices were supplied but the tensor only has %d dimensions",
                           indexed, npos);
        for (int k = 0; k < n; k++) {
            if (ix[k].kind == FC_IX_ELLIPSIS) {
                for (int q = 0; q < npos - indexed; q++) {
                    if (nin == FC_MAX_DIMS * 2)
                        return fc_errf(err, FC_ERR_INDEX, "too many indices");
                    in[nin++] = (FcIndex){.kind = FC_IX_SLICE, .step = 1};
                }
            } else {
                if (nin == FC_MAX_DIMS * 2)
                    return fc_errf(err, FC_ERR_INDEX, "too many indices");
                in[nin++] = ix[k];
            }
        }
    }

    bool has_packs_or_none = false;
    for (int k = 0; k < (keys ? n : nin); k++) {
        FcIndexKind kd = (keys ? ix : in)[k].kind;
        if (kd == FC_IX_NONE || kd == FC_IX_DIMPACK)
            has_packs_or_none = true;
    }

    /* Each of self's dims makes an entry (or a pack's), each None one more. The entries are
     * large (a tensor's levels): only those used are zeroed, up to their levels (flat_at). */
    int nflat = 0, most = self->ndim + (keys ? n : nin);
    for (int k = 0; k < (keys ? n : nin); k++)
        if ((keys ? ix : in)[k].kind == FC_IX_DIMPACK)
            most += (keys ? ix : in)[k].npack;
    most = most < FC_MAX_DIMS * 2 ? most + 1 : FC_MAX_DIMS * 2;
    Flat few[8];                /* most indexings need no more: no allocation */
    Flat *flat = most <= 8 ? few : mem_malloc((size_t)most * sizeof *flat);
    if (!flat)
        return fc_nomem(err);
    Uses uses;
    uses.count = 0;
    int64_t nsz[FC_MAX_DIMS * 2], nsd[FC_MAX_DIMS * 2];
    int nn = 0;
    int it = 0;
    FcTensor *base = NULL;
    if (has_packs_or_none && (st = fc_realize(ctx, self, err)))
        goto done;

#define NEED_FLAT()                                                                                   \
    do {                                                                                              \
        if (nflat == FC_MAX_DIMS * 2 || nn == FC_MAX_DIMS * 2) {                                      \
            st = fc_errf(err, FC_ERR_INDEX, "too many dimensions");                                   \
            goto done;                                                                                \
        }                                                                                             \
    } while (0)

    for (int i = 0; i <= self->ndim; i++) {
        /* Nones before positional dim i (and trailing ones) */
        bool take = i == self->ndim || !self->levels || !self->levels[i];
        if (!keys && take)
            while (it < nin && in[it].kind == FC_IX_NONE) {
                NEED_FLAT();
                flat_at(flat, nflat++)->ix = (FcIndex){.kind = FC_IX_SLICE, .step = 1};
                nsz[nn] = 1;
                nsd[nn++] = 0;
                it++;
            }
        if (i == self->ndim)
            break;
        const FcIndex *arg = NULL;
        FcIndex noslice = {.kind = FC_IX_SLICE, .step = 1};
        if (keys) {
            for (int q = 0; q < nkeys; q++)
                if (keys[q] == i)
                    arg = &ix[q];
        }
        FcDim *own = self->levels ? self->levels[i] : NULL;
        if (!arg && own) {
            use_dim(&uses, own);
            NEED_FLAT();
            Flat *f = flat_at(flat, nflat++);
            f->ix = noslice;
            f->dim = own;
            nsz[nn] = self->shape[i];
            nsd[nn++] = self->strides[i];
            continue;
        }
        if (!arg && !keys)
            arg = it < nin ? &in[it++] : &noslice;
        if (!arg)
            arg = &noslice;
        int64_t sz = self->shape[i];
        NEED_FLAT();
        Flat *f = flat_at(flat, nflat);
        switch (arg->kind) {
        case FC_IX_DIM: {
            if (arg->dim->size != sz) {     /* binds it, or says why not */
                char what[128], shp[96];
                snprintf(what, sizeof what, "indexing dim %d of a tensor of shape %s", i,
                         fc_shape_str(shp, sizeof shp, self->ndim, self->shape));
                if ((st = fc_dim_bind(ctx, arg->dim, sz, what, err)))
                    goto done;
            }
            use_dim(&uses, arg->dim);
            f->ix = noslice;
            f->dim = arg->dim;
            nflat++;
            nsz[nn] = sz;
            nsd[nn++] = self->strides[i];
            break;
        }
        case FC_IX_TENSOR:
            f->ix = *arg;
            f->t = fc_tensor_retain(arg->t);
            f->ntl = levs_of(arg->t, f->tl);
            for (int q = 0; q < f->ntl; q++)
                if (f->tl[q].dim)
                    use_dim(&uses, f->tl[q].dim);
            nflat++;
            nsz[nn] = sz;
            nsd[nn++] = self->strides[i];
            break;
        case FC_IX_DIMPACK:
            if (nflat + arg->npack > FC_MAX_DIMS * 2 || nn + arg->npack > FC_MAX_DIMS * 2) {
                st = fc_errf(err, FC_ERR_INDEX, "too many dimensions");
                goto done;
            }
            for (int q = 0; q < arg->npack; q++) {
                use_dim(&uses, arg->pack[q]);
                Flat *fq = flat_at(flat, nflat++);
                fq->ix = noslice;
                fq->dim = arg->pack[q];
            }
            if ((st = bind_pack(ctx, sz, self->strides[i], arg->pack, arg->npack, nsz, nsd, &nn, err)))
                goto done;
            break;
        case FC_IX_ELLIPSIS:
            st = fc_errf(err, FC_ERR_INDEX, "an ellipsis cannot index a named dim");
            goto done;
        default:
            f->ix = *arg;
            nflat++;
            nsz[nn] = sz;
            nsd[nn++] = self->strides[i];
            break;
        }
    }
    if (!keys && it < nin) {
        st = fc_errf(err, FC_ERR_VALUE, "at least %d indices were supplied but the tensor only has %d dimensions",
                     it + 1, npos);
        goto done;
    }

    base = fc_tensor_retain(self);
    if (has_packs_or_none) {
        FcTensor *v;
        if ((st = fc_as_strided(ctx, self, nn, nsz, nsd, self->offset, &v, err)))
            goto done;
        fc_tensor_release(base);
        base = v;
    }

    /* the levels of the result and of the index tensors */
    Lev res[FC_MAX_DIMS * 2], idx[FC_MAX_DIMS];
    int nres = 0, nidx = 0, insert = -1;
    bool getindex = false;
    for (int k = 0; k < nflat; k++) {
        Flat *f = &flat[k];
        if (!f->t && f->dim && uses_of(&uses, f->dim) > 1) {
            /* a dim used twice indexes by its iota: the diagonal */
            if ((st = fc_dim_tensor(ctx, f->dim, &f->t, err)))
                goto done;
            f->ntl = 1;
            f->tl[0] = (Lev){f->dim, 0};
            f->ix = (FcIndex){.kind = FC_IX_TENSOR};
        }
        if (f->t) {
            getindex = true;
            if (insert == -1)
                insert = nres;
            else if (insert != nres)
                insert = 0;
            for (int q = 0; q < f->ntl; q++)
                if (lev_find(idx, nidx, f->tl[q]) < 0) {
                    if (nidx == FC_MAX_DIMS) {
                        st = fc_errf(err, FC_ERR_INDEX, "too many dimensions");
                        goto done;
                    }
                    idx[nidx++] = f->tl[q];
                }
        } else if (f->dim) {
            res[nres++] = (Lev){f->dim, 0};
        } else {
            if (!(f->ix.kind == FC_IX_SLICE && !f->ix.has_start && !f->ix.has_stop && f->ix.step == 1))
                getindex = true;
            if (f->ix.kind != FC_IX_INT)
                res[nres++] = (Lev){NULL, -1};
        }
    }
    if (insert != -1) {
        if (nres + nidx > FC_MAX_DIMS) {
            st = fc_errf(err, FC_ERR_INDEX, "too many dimensions");
            goto done;
        }
        memmove(res + insert + nidx, res + insert, (size_t)(nres - insert) * sizeof *res);
        memcpy(res + insert, idx, (size_t)nidx * sizeof *idx);
        nres += nidx;
    }
    if (nres > FC_MAX_DIMS) {
        st = fc_errf(err, FC_ERR_INDEX, "too many dimensions");
        goto done;
    }

    FcTensor *r = NULL;
    if (getindex) {
        FcIndex pix[FC_MAX_DIMS * 2];
        for (int k = 0; k < nflat; k++) {
            pix[k] = flat[k].ix;
            if (flat[k].t) {
                FcTensor *m;
                Lev from[FC_MAX_DIMS];
                int nf = levs_of(flat[k].t, from);
                if ((st = match_levs(ctx, flat[k].t, from, nf, idx, nidx, &m, err)))
                    goto done;
                fc_tensor_release(flat[k].t);
                flat[k].t = m;
                pix[k] = (FcIndex){.kind = FC_IX_TENSOR, .t = m};
            }
        }
        if ((st = fc_index(ctx, base, nflat, pix, &r, err)))
            goto done;
    } else {
        r = fc_tensor_retain(base);
    }
    FcLevels lv;
    levs_to_levels(res, nres, &lv);
    if (lv.n != r->ndim)
        st = fc_errf(err, FC_ERR_RUNTIME, "internal error: indexing gave %d dims for %d levels", r->ndim, lv.n);
    else
        st = fc_with_levels(ctx, r, &lv, out, err);
    fc_tensor_release(r);
done:
#undef NEED_FLAT
    for (int k = 0; k < nflat; k++)
        fc_tensor_release(flat[k].t);
    if (flat != few)
        mem_free(flat);
    fc_tensor_release(base);
    return st;
}

/* ---- order, expand, stack ---- */

static FcStatus ref_lev(const FcTensor *t, FcDimRef r, int npos, Lev *out, FcError *err)
{
    if (r.dim) {
        *out = (Lev){r.dim, 0};
        return FC_OK;
    }
    int64_t p = r.pos;
    if (p < -npos || p >= npos)
        return fc_errf(err, FC_ERR_INDEX, "Dimension out of range (expected to be in range of [%d, %d], but got %lld)",
                       -npos, npos - 1, (long long)p);
    (void)t;
    *out = (Lev){NULL, (int)(p >= 0 ? p - npos : p)};
    return FC_OK;
}

FcStatus fc_order(FcCtx *ctx, FcTensor *t, int n, const FcDimRef *refs, const int *group_len, int ngroups,
                  FcTensor **out, FcError *err)
{
    *out = NULL;
    Lev orig[FC_MAX_DIMS], lv[FC_MAX_DIMS], flat[FC_MAX_DIMS];
    bool gone[FC_MAX_DIMS] = {false};
    int nl = levs_of(t, orig), nflat = 0, npos = fc_tensor_npos(t);
    memcpy(lv, orig, sizeof orig);
    FcStatus st;
    char buf[512];
    FcLevels ol;
    fc_tensor_levels(t, &ol);
    for (int k = 0; k < n; k++) {
        Lev l = {NULL, 0};
        if ((st = ref_lev(t, refs[k], npos, &l, err)))
            return st;
        int at = lev_find(lv, nl, l);
        if (at < 0 || gone[at]) {
            if (l.dim)
                return fc_errf(err, FC_ERR_VALUE, "tensor of dimensions %s does not contain dim %s or it was specified twice",
                               fc_levels_str(buf, sizeof buf, &ol), l.dim->name);
            return fc_errf(err, FC_ERR_VALUE, "tensor has %d positional dimensions, but %d specified, or it was specified twice",
                           npos, l.pos + npos);
        }
        gone[at] = true;
        flat[nflat++] = l;
    }
    /* the ordered levels go where the first remaining positional level is (else at the end) */
    Lev nlv[FC_MAX_DIMS];
    int nnew = 0, insert = -1;
    for (int k = 0; k < nl; k++) {
        if (gone[k])
            continue;
        if (!lv[k].dim && insert == -1) {
            insert = nnew;
            memcpy(nlv + nnew, flat, (size_t)nflat * sizeof *flat);
            nnew += nflat;
        }
        nlv[nnew++] = lv[k];
    }
    if (insert == -1) {
        insert = nnew;
        memcpy(nlv + nnew, flat, (size_t)nflat * sizeof *flat);
        nnew += nflat;
    }
    FcTensor *m;
    if ((st = match_levs(ctx, t, orig, nl, nlv, nnew, &m, err)))
        return st;
    /* the new positional levels, then flatten groups of more than one */
    Lev rl[FC_MAX_DIMS];
    int nr = 0;
    int64_t shape[FC_MAX_DIMS];
    bool reshape = false;
    for (int k = 0; k < insert; k++) {
        shape[nr] = m->shape[k];
        rl[nr++] = nlv[k];
    }
    for (int g = 0, k = 0; g < ngroups; g++) {
        int64_t s;
        if (!fc_shape_numel(group_len[g], m->shape + insert + k, &s)) {    /* as flatten's */
            fc_tensor_release(m);
            return fc_numel_overflow(err);
        }
        if (group_len[g] != 1)
            reshape = true;
        shape[nr] = s;
        rl[nr++] = (Lev){NULL, -1};
        k += group_len[g];
    }
    for (int k = insert + nflat; k < nnew; k++) {
        shape[nr] = m->shape[k];
        rl[nr++] = nlv[k];
    }
    FcTensor *r = m;
    if (reshape && insert == 0 && nflat == nnew) {
        /* every level flattened: a lazy product stays lazy, its levels merged */
        st = fc_product_merge(ctx, m, ngroups, group_len, shape, &r, err);
        if (st || r) {
            fc_tensor_release(m);
            if (st)
                return st;
            reshape = false;
        } else {
            r = m;
        }
    }
    if (reshape) {
        st = fc_reshape(ctx, m, nr, shape, &r, err);
        fc_tensor_release(m);
        if (st)
            return st;
    }
    FcLevels out_lv;
    levs_to_levels(rl, nr, &out_lv);
    st = fc_with_levels(ctx, r, &out_lv, out, err);
    fc_tensor_release(r);
    return st;
}

FcStatus fc_expand_dims(FcCtx *ctx, FcTensor *t, int n, FcDim *const *dims, FcTensor **out, FcError *err)
{
    *out = NULL;
    Lev from[FC_MAX_DIMS], to[FC_MAX_DIMS];
    int nf = levs_of(t, from);
    if (n + nf > FC_MAX_DIMS)
        return fc_errf(err, FC_ERR_VALUE, "too many dimensions: at most %d", FC_MAX_DIMS);
    FcStatus st;
    for (int k = 0; k < n; k++) {
        int64_t s;
        if ((st = fc_dim_size(dims[k], &s, err)))
            return st;
        if (lev_find(from, nf, (Lev){dims[k], 0}) >= 0 || lev_find(to, k, (Lev){dims[k], 0}) >= 0)
            return fc_errf(err, FC_ERR_DIM_BIND, "expanding dimension %s already exists in the tensor", dims[k]->name);
        to[k] = (Lev){dims[k], 0};
    }
    memcpy(to + n, from, (size_t)nf * sizeof *from);
    FcTensor *m;
    if ((st = match_levs(ctx, t, from, nf, to, n + nf, &m, err)))
        return st;
    FcLevels lv;
    levs_to_levels(to, n + nf, &lv);
    st = fc_with_levels(ctx, m, &lv, out, err);
    fc_tensor_release(m);
    return st;
}

FcStatus fc_stack_dims(FcCtx *ctx, int n, FcTensor *const *ts, FcDim *new_dim, const FcDimRef *dim, FcTensor **out,
                       FcError *err)
{
    *out = NULL;
    FcLevels u;
    FcStatus st = fc_levels_union(n, ts, &u, err);
    if (st)
        return st;
    if (u.n + 1 > FC_MAX_DIMS)
        return fc_errf(err, FC_ERR_VALUE, "too many dimensions: at most %d", FC_MAX_DIMS);
    if ((st = fc_dim_bind(ctx, new_dim, n, "stacking that many tensors", err)))
        return st;
    Lev ul[FC_MAX_DIMS];
    for (int k = 0; k < u.n; k++)
        ul[k] = (Lev){u.at[k], 0};
    levs_renumber(ul, u.n);
    int raw = 0, npos = 0;
    for (int k = 0; k < u.n; k++)
        npos += !ul[k].dim;
    if (dim && !dim->dim && npos == 0) {
        raw = u.n;      /* stack(ts, new_dim, 0) of tensors with only first-class dims: new_dim last */
    } else if (dim) {
        Lev l = {NULL, 0};
        if ((st = ref_lev(NULL, *dim, npos, &l, err)))
            return st;
        raw = lev_find(ul, u.n, l);
        if (raw < 0)
            return fc_errf(err, FC_ERR_TYPE, "dimension %s does not exist in the inputs", l.dim ? l.dim->name : "?");
    }
    FcTensor **ms = mem_calloc((size_t)(n > 0 ? n : 1), sizeof *ms);
    if (!ms)
        return fc_nomem(err);
    for (int k = 0; k < n && !st; k++)
        st = fc_match_levels(ctx, ts[k], &u, &ms[k], err);
    FcTensor *r = NULL;
    if (!st)
        st = fc_stack(ctx, n, ms, raw, &r, err);
    for (int k = 0; k < n; k++)
        fc_tensor_release(ms[k]);
    mem_free(ms);
    if (st)
        return st;
    FcLevels lv = {0, {0}};
    for (int k = 0; k < u.n + 1; k++)
        lv.at[lv.n++] = k < raw ? u.at[k] : k == raw ? new_dim : u.at[k - 1];
    st = fc_with_levels(ctx, r, &lv, out, err);
    fc_tensor_release(r);
    return st;
}

/* ---- contractions (functorch's dot) ---- */

typedef struct Part { FcDim *d[FC_MAX_DIMS]; int n; } Part;

static void part_add(Part *p, FcDim *d) { p->d[p->n++] = d; }

/* t over the dims of parts, each part flattened into one positional dim. */
static FcStatus dot_prepare(FcCtx *ctx, FcTensor *t, const Part *const *parts, int nparts, FcTensor **out, FcError *err)
{
    Lev from[FC_MAX_DIMS], to[FC_MAX_DIMS];
    int nf = levs_of(t, from), nt = 0;
    int64_t shape[3], sizes[FC_MAX_DIMS];
    for (int q = 0; q < nparts; q++) {
        for (int k = 0; k < parts[q]->n; k++) {
            to[nt++] = (Lev){parts[q]->d[k], 0};
            sizes[k] = parts[q]->d[k]->size;
        }
        /* A part flattened into one dim: its size must fit, as flatten's (a zero one does). */
        if (!fc_shape_numel(parts[q]->n, sizes, &shape[q]))
            return fc_numel_overflow(err);
    }
    FcTensor *m;
    FcStatus st = match_levs(ctx, t, from, nf, to, nt, &m, err);
    if (st)
        return st;
    st = fc_reshape(ctx, m, nparts, shape, out, err);
    fc_tensor_release(m);
    return st;
}

/* Whether stored t's levels [at, at + n) flatten into one stride (size-1 levels take any). */
static bool part_flattens(const FcTensor *t, int at, int n)
{
    int64_t span = 0;
    bool any = false;
    for (int k = at + n - 1; k >= at; k--) {
        if (t->shape[k] == 1)
            continue;
        if (any && t->strides[k] != span)
            return false;
        any = true;
        span = t->strides[k] * t->shape[k];
    }
    return true;
}

/* Operand t of a lazy product over the dims of parts, each a positional dim (*out): t's own
 * lazy node when it is a gather the backend's GEMM reads through index arithmetic (not with the
 * fusion pass off, which gives the materialised path), a stored t as it is where its rows and
 * columns flatten, else t realised with each part flattened (dot_prepare, as fc_matmul reads
 * it) and split back into the dims (a view). */
static FcStatus product_operand(FcCtx *ctx, const FcBackend *be, FcTensor *t, const Part *const *parts,
                                FcTensor **out, FcError *err)
{
    Lev from[FC_MAX_DIMS], to[FC_MAX_DIMS];
    int64_t size[FC_MAX_DIMS];
    int nt = 0;
    for (int q = 0; q < 3; q++)
        for (int k = 0; k < parts[q]->n; k++) {
            size[nt] = parts[q]->d[k]->size;
            to[nt++] = (Lev){parts[q]->d[k], 0};
        }
    if (be->matmul_implicit && !(ctx->sched_off & FC_SCHED_FUSE) && t->node && fc_product_gather(t->node))
        return match_levs(ctx, t, from, levs_of(t, from), to, nt, out, err);
    FcStatus st;
    if (!t->node) {
        /* stored, with rows and columns that each flatten: read as it is (the product takes a
         * stride per batch level; a weight made a batch over (n, g) has stride 0 along n) */
        FcTensor *v;
        if ((st = match_levs(ctx, t, from, levs_of(t, from), to, nt, &v, err)))
            return st;
        int n0 = parts[0]->n, n1 = parts[1]->n, n2 = parts[2]->n;
        if (part_flattens(v, n0, n1) && part_flattens(v, n0 + n1, n2)) {
            *out = v;
            return FC_OK;
        }
        fc_tensor_release(v);
    }
    FcTensor *x;
    st = dot_prepare(ctx, t, parts, 3, &x, err);
    if (st)
        return st;
    st = fc_reshape(ctx, x, nt, size, out, err);
    fc_tensor_release(x);
    return st;
}

/* a (lro, lo, lr) times b (lro, lr, ro) summed over lr, as a lazy product (FcNode.product) over
 * the result's dims (lro, lo, ro), then lr's: the operands laid out over those dims
 * (product_operand). *out NULL when it is to run now (fc_matmul): the device's backend takes no
 * epilogue, a dtype fc_matmul converts or refuses, or nothing to compute. */
static FcStatus lazy_product(FcCtx *ctx, FcTensor *a, FcTensor *b, const Part *lro, const Part *lo, const Part *lr,
                             const Part *ro, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (a->dtype != b->dtype || (a->dtype != FC_FLOAT32 && a->dtype != FC_FLOAT64) ||
        !fc_device_eq(a->device, b->device))
        return FC_OK;
    const Part *all[4] = {lro, lo, lr, ro};
    for (int q = 0; q < 4; q++)
        for (int k = 0; k < all[q]->n; k++)
            if (all[q]->d[k]->size == 0)
                return FC_OK;
    FcBackend *be = NULL;
    FcStatus st = fc_ctx_backend(ctx, a->device, &be, err);
    if (st || !be->matmul_epilogue)
        return st;
    const Part *px[3] = {lro, lo, lr}, *py[3] = {lro, lr, ro};
    int nr = lro->n + lo->n + ro->n, nl = nr + lr->n;
    int64_t size[FC_MAX_DIMS];
    int8_t mx[FC_MAX_DIMS], my[FC_MAX_DIMS];
    int nx = 0, ny = 0;
    if (nl > FC_MAX_DIMS || nr == 0)
        return FC_OK;       /* (a 0-dim result may meet another device's tensors: computed now) */
    for (int q = 0; q < 3; q++) {
        for (int k = 0; k < px[q]->n; k++) {
            int l = q == 0 ? k : q == 1 ? lro->n + k : nr + k;
            size[l] = px[q]->d[k]->size;
            mx[nx++] = (int8_t)l;
        }
        for (int k = 0; k < py[q]->n; k++) {
            int l = q == 0 ? k : q == 1 ? nr + k : lro->n + lo->n + k;
            size[l] = py[q]->d[k]->size;
            my[ny++] = (int8_t)l;
        }
    }
    FcTensor *xu = NULL, *yu = NULL;
    if ((st = product_operand(ctx, be, a, px, &xu, err)) || (st = product_operand(ctx, be, b, py, &yu, err))) {
        fc_tensor_release(xu);
        return st;
    }
    FcNode *ins[2] = {fc_tensor_node(xu), fc_tensor_node(yu)};
    FcNode *mul = ins[0] && ins[1] ? fc_node_new(FC_OP_MUL, a->dtype, nl, size, 2, ins) : NULL;
    fc_node_release(ins[0]);
    fc_node_release(ins[1]);
    FcNode *sumn = mul ? fc_node_new(FC_OP_SUM, a->dtype, nr, size, 1, &mul) : NULL;
    if (sumn) {
        memcpy(mul->lev_map[0], mx, (size_t)nx);
        memcpy(mul->lev_map[1], my, (size_t)ny);
        for (int l = 0; l < nl; l++)
            sumn->lev_map[0][l] = (int8_t)(l < nr ? l : FC_LEV_REDUCED);
        sumn->product = true;
        fc_products_live++;
    }
    fc_node_release(mul);
    FcTensor *from[2] = {xu, yu};
    *out = sumn ? fc_tensor_from_node(sumn, a->device, from, 2) : NULL;
    fc_tensor_release(xu);
    fc_tensor_release(yu);
    return *out ? FC_OK : fc_nomem(err);
}

FcStatus fc_contract(FcCtx *ctx, FcTensor *a, FcTensor *b, int nsum, FcDim *const *sum, FcTensor **out,
                     FcLevels *levels, FcError *err)
{
    *out = NULL;
    Part lro = {{0}, 0}, lo = {{0}, 0}, ro = {{0}, 0}, lr = {{0}, 0};
    for (int k = 0; k < nsum; k++)
        part_add(&lr, sum[k]);
    for (int k = 0; k < a->ndim; k++) {
        FcDim *d = a->levels ? a->levels[k] : NULL;
        if (!d)
            return fc_errf(err, FC_ERR_RUNTIME, "internal error: a contraction operand with positional dims");
        bool summed = false;
        for (int q = 0; q < nsum; q++)
            summed |= sum[q] == d;
        if (!summed)
            part_add(fc_level_of_dim(b, d) >= 0 ? &lro : &lo, d);
    }
    for (int k = 0; k < b->ndim; k++) {
        FcDim *d = b->levels ? b->levels[k] : NULL;
        if (!d)
            return fc_errf(err, FC_ERR_RUNTIME, "internal error: a contraction operand with positional dims");
        bool summed = false;
        for (int q = 0; q < nsum; q++)
            summed |= sum[q] == d;
        if (!summed && fc_level_of_dim(a, d) < 0)
            part_add(&ro, d);
    }
    /* functorch.dim's dot: bmm over the lro dims, mm when there are none (a bfloat16 product
     * rounds as the one torch calls does: fc_matmul) */
    const Part *pa[3] = {&lro, &lo, &lr}, *pb[3] = {&lro, &lr, &ro};
    int np = lro.n ? 3 : 2, skip = 3 - np;
    FcTensor *x = NULL, *y = NULL, *r = NULL, *lazy = NULL;
    FcStatus st = lazy_product(ctx, a, b, &lro, &lo, &lr, &ro, &lazy, err);
    if (!st && !lazy)
        st = dot_prepare(ctx, a, pa + skip, np, &x, err);
    if (!st && !lazy)
        st = dot_prepare(ctx, b, pb + skip, np, &y, err);
    if (!st && !lazy)
        st = fc_matmul(ctx, x, y, &r, err);
    fc_tensor_release(x);
    fc_tensor_release(y);
    if (st)
        return st;
    levels->n = 0;
    int64_t shape[FC_MAX_DIMS];
    const Part *pr[3] = {&lro, &lo, &ro};
    for (int q = 0; q < 3; q++)
        for (int k = 0; k < pr[q]->n; k++) {
            shape[levels->n] = pr[q]->d[k]->size;
            levels->at[levels->n++] = pr[q]->d[k];
        }
    if (lazy) {
        *out = lazy;
        return FC_OK;
    }
    st = fc_reshape(ctx, r, levels->n, shape, out, err);
    fc_tensor_release(r);
    return st;
}
