/* matmul.c — torch.matmul: the dot product, matrix-vector, matrix-matrix and batched products
 * with broadcast batch dims, as one strided FcMatmul that the backend runs.
 *
 * Shapes, dtype rules and error messages are PyTorch 1.13's. The operands are realised (a product
 * is a materialisation point); the result is a new C-contiguous tensor. Depends on fcdim.h,
 * internal.h and the backend interface. */
#include "internal.h"

#include "backend.h"
#include "mem.h"

#include <stdio.h>
#include <string.h>

/* The product as an IR expression, sum over k of A[..., i, k] * B[..., k, j] (levels: c's dims,
 * then k), recorded as how c's storage was written: backward differentiates it like any other. */
static FcStatus record_product(FcCtx *ctx, FcTensor *a, FcTensor *b, FcTensor *c, int nbatch, bool has_m, bool has_n,
                               FcError *err)
{
    (void)has_m;
    int nd = c->ndim, na = a->ndim, nb = b->ndim;
    int64_t size[FC_MAX_DIMS + 1];
    memcpy(size, c->shape, (size_t)nd * sizeof *size);
    size[nd] = a->shape[na - 1];
    FcNode *la = fc_tensor_node(a), *lb = fc_tensor_node(b);
    FcNode *ins[2] = {la, lb};
    FcNode *mul = la && lb ? fc_node_new(FC_OP_MUL, a->dtype, nd + 1, size, 2, ins) : NULL;
    fc_node_release(la);
    fc_node_release(lb);
    if (!mul)
        return fc_nomem(err);
    /* A: batch dims right-aligned to c's, then m (when A is 2-D or more), then k (level nd). */
    for (int j = 0; j < na; j++) {
        int l;
        if (j == na - 1)
            l = nd;
        else if (j == na - 2)
            l = nbatch;
        else
            l = j + nbatch - (na - 2);
        mul->lev_map[0][j] = (int8_t)(a->shape[j] == 1 && size[l] != 1 ? FC_LEV_BCAST : l);
    }
    /* B: batch dims, then k, then n (the last of c's dims when B is 2-D or more). */
    for (int j = 0; j < nb; j++) {
        int l;
        if (nb == 1 || j == nb - 2)
            l = nd;
        else if (j == nb - 1)
            l = nd - 1;
        else
            l = j + nbatch - (nb - 2);
        mul->lev_map[1][j] = (int8_t)(b->shape[j] == 1 && size[l] != 1 ? FC_LEV_BCAST : l);
    }
    (void)has_n;
    FcNode *sum = fc_node_new(FC_OP_SUM, a->dtype, nd, size, 1, &mul);
    if (sum)
        for (int l = 0; l <= nd; l++)
            sum->lev_map[0][l] = (int8_t)(l < nd ? l : FC_LEV_REDUCED);
    fc_node_release(mul);
    if (!sum)
        return fc_nomem(err);
    FcStatus st = fc_grad_after_write(ctx, c->storage, c->offset, c->strides, sum, NULL, err);
    fc_node_release(sum);
    return st;
}

FcStatus fc_matmul(FcCtx *ctx, FcTensor *a, FcTensor *b, FcTensor **out, FcError *err)
{
    *out = NULL;
    int na = a->ndim, nb = b->ndim;
    if (na == 0 || nb == 0)
        return fc_errf(err, FC_ERR_RUNTIME, "both arguments to matmul need to be at least 1D, but they are %dD and %dD",
                       na, nb);
    if (a->dtype != b->dtype)
        return fc_errf(err, FC_ERR_RUNTIME, "expected scalar type %s but found %s", fc_dtype_torch_name(a->dtype),
                       fc_dtype_torch_name(b->dtype));
    if (a->dtype == FC_BOOL)
        return fc_errf(err, FC_ERR_RUNTIME, na == 1 && nb == 1 ? "\"dot\" not implemented for 'Bool'"
                                                               : "\"addmm_impl_cpu_\" not implemented for 'Bool'");
    /* float16 has no CPU kernel, but a product of no elements dispatches none (but dot) */
    int64_t mo = na >= 2 ? a->shape[na - 2] : 1, no = nb >= 2 ? b->shape[nb - 1] : 1;
    if (a->dtype == FC_FLOAT16 && ((na == 1 && nb == 1) || (mo != 0 && no != 0)))
        return fc_errf(err, FC_ERR_RUNTIME, "\"%s\" not implemented for 'Half'",
                       na == 1 && nb == 1   ? "dot"
                       : na == 2 && nb == 1 ? "addmv_impl_cpu"
                       : nb <= 2            ? "addmm_impl_cpu_"
                                            : "bmm");
    if (fc_dtype_compute(a->dtype) != a->dtype) {
        /* bfloat16 multiplies in float32 and rounds once (torch's CPU gemm accumulates in its
         * opmath type); the narrow integers wrap, so int32 gives their bits. */
        FcDType cdt = fc_dtype_compute(a->dtype);
        FcTensor *ca = NULL, *cb = NULL, *cc = NULL;
        FcStatus st = fc_cast(ctx, a, cdt, &ca, err);
        if (!st)
            st = fc_cast(ctx, b, cdt, &cb, err);
        if (!st)
            st = fc_matmul(ctx, ca, cb, &cc, err);
        if (!st)
            st = fc_cast(ctx, cc, a->dtype, out, err);
        fc_tensor_release(ca);
        fc_tensor_release(cb);
        fc_tensor_release(cc);
        return st;
    }
    FcTensor *ab[2] = {a, b};
    FcDevice dev;
    FcStatus dst = fc_common_device(ab, 2, &dev, err);
    if (dst)
        return dst;
    /* A as (batch..., m, k), B as (batch..., k, n); a 1-D A is one row, a 1-D B one column. */
    int64_t m = na >= 2 ? a->shape[na - 2] : 1, ka = a->shape[na - 1];
    int64_t kb = nb >= 2 ? b->shape[nb - 2] : b->shape[0], n = nb >= 2 ? b->shape[nb - 1] : 1;
    if (ka != kb) {
        if (na == 1 && nb == 1)
            return fc_errf(err, FC_ERR_RUNTIME,
                           "inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the same number "
                           "of elements, but got %lld and %lld elements respectively",
                           (long long)ka, (long long)kb, (long long)ka, (long long)kb);
        if (na == 2 && nb == 1)
            return fc_errf(err, FC_ERR_RUNTIME, "size mismatch, got %lld, %lldx%lld,%lld", (long long)m, (long long)m,
                           (long long)ka, (long long)kb);
        if (na <= 2 && nb <= 2)
            return fc_errf(err, FC_ERR_RUNTIME, "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                           (long long)m, (long long)ka, (long long)kb, (long long)n);
    }
    int nba = na > 2 ? na - 2 : 0, nbb = nb > 2 ? nb - 2 : 0;
    int nbatch;
    int64_t batch[FC_MAX_DIMS];
    FcStatus st = fc_broadcast_shapes(nba, a->shape, nbb, b->shape, &nbatch, batch, err);
    if (st)
        return st;
    if (ka != kb) {
        int64_t nb_elems;
        fc_shape_numel(nbatch, batch, &nb_elems);
        return fc_errf(err, FC_ERR_RUNTIME,
                       "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: [%lld, %lld].",
                       (long long)nb_elems, (long long)ka, (long long)nb_elems, (long long)kb);
    }
    fc_tensor_place(a, dev);
    fc_tensor_place(b, dev);
    if ((st = fc_realize(ctx, a, err)) || (st = fc_realize(ctx, b, err)))
        return st;
    int64_t shape[FC_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < nbatch; i++)
        shape[nd++] = batch[i];
    if (na >= 2)
        shape[nd++] = m;
    if (nb >= 2)
        shape[nd++] = n;
    FcTensor *c;
    st = fc_empty(ctx, a->dtype, dev, nd, shape, NULL, &c, err);
    if (st)
        return st;
    if (fc_tensor_numel(c) == 0) {
        *out = c;       /* nothing to write (and the batch strides below could overflow) */
        return FC_OK;
    }
    FcMatmul mm;
    memset(&mm, 0, sizeof mm);
    mm.dtype = a->dtype;
    mm.nbatch = nbatch;
    int64_t cstride = m * n;
    for (int i = nbatch - 1; i >= 0; i--) {
        mm.batch[i] = batch[i];
        int ia = i - (nbatch - nba), ib = i - (nbatch - nbb);
        mm.a_bstride[i] = ia >= 0 && a->shape[ia] != 1 ? a->strides[ia] : 0;
        mm.b_bstride[i] = ib >= 0 && b->shape[ib] != 1 ? b->strides[ib] : 0;
        mm.c_bstride[i] = cstride;
        cstride *= batch[i];
    }
    mm.m = m;
    mm.n = n;
    mm.k = ka;
    mm.a = a->storage->data;
    mm.a_offset = a->offset;
    mm.a_rs = na >= 2 ? a->strides[na - 2] : 0;
    mm.a_cs = a->strides[na - 1];
    mm.b = b->storage->data;
    mm.b_offset = b->offset;
    mm.b_rs = nb >= 2 ? b->strides[nb - 2] : b->strides[0];
    mm.b_cs = nb >= 2 ? b->strides[nb - 1] : 0;
    mm.c = c->storage->data;
    mm.c_offset = 0;
    mm.c_rs = n;
    mm.c_cs = 1;
    mm.nthreads = ctx->nthreads;
    mm.interrupt = ctx->interrupt;
    FcBackend *be = NULL;
    st = fc_ctx_backend(ctx, dev, &be, err);
    if (!st)
        st = be->matmul(be, &mm, err);
    if (!st && !fc_grad_off && fc_grad_live && fc_dtype_is_float(a->dtype) &&
        (fc_requires_grad(a) || fc_requires_grad(b)))
        st = record_product(ctx, a, b, c, nbatch, m > 0 && na >= 2, nb >= 2, err);
    if (st) {
        fc_tensor_release(c);
        return st;
    }
    *out = c;
    return FC_OK;
}

/* ---- lazy products and their epilogues (FcNode.product) ---- */

_Thread_local long fc_products_live;

typedef struct EpiMemo {
    const FcNode *n;
    int8_t map[FC_MAX_DIMS];
    int reg;
} EpiMemo;

/* The analysis of a DAG as one product and an epilogue: emit() fills e's code, one instruction
 * per (node, mapping to the root's levels), a load's strides first per root level (lstride),
 * split into batch, row and column strides once the product's levels are known. */
typedef struct Epi {
    FcBackend *be;
    const FcNode *root;
    const FcNode *prod;             /* the one product read */
    int8_t pmap[FC_MAX_DIMS];       /* its levels: the root's level each is */
    FcEpilogue e;
    int64_t lstride[FC_EPI_MAX][FC_MAX_DIMS];
    EpiMemo memo[FC_EPI_MAX];
    int nmemo;
} Epi;

static int epi_emit(Epi *p, const FcNode *n, const int8_t *map);

static int epi_instr(Epi *p, const FcNode *n, const int8_t *map, FcOp op, FcDType dt, FcDType src)
{
    if (p->e.n >= FC_EPI_MAX || p->nmemo >= FC_EPI_MAX)
        return -1;
    FcEpiInstr *in = &p->e.code[p->e.n];
    memset(in, 0, sizeof *in);
    memset(p->lstride[p->e.n], 0, sizeof p->lstride[p->e.n]);
    in->op = op;
    in->dtype = dt;
    in->src_dtype = src;
    in->a = in->b = in->c = -1;
    EpiMemo *m = &p->memo[p->nmemo++];
    m->n = n;
    memcpy(m->map, map, (size_t)n->nlev);
    m->reg = p->e.n;
    return p->e.n++;
}

/* Where operand k's level j goes among the root's levels (-1: nowhere, index 0), or -2 when it
 * is a reduced level (not an epilogue). */
static int epi_compose(const FcNode *n, int k, int j, const int8_t *map)
{
    int8_t lm = n->lev_map[k][j];
    return lm == FC_LEV_BCAST ? -1 : lm == FC_LEV_REDUCED ? -2 : map[lm];
}

/* The register of node n read at the root's levels map, or -1 when n is not an epilogue's. */
static int epi_emit(Epi *p, const FcNode *n, const int8_t *map)
{
    for (int i = 0; i < p->nmemo; i++)
        if (p->memo[i].n == n && memcmp(p->memo[i].map, map, (size_t)n->nlev) == 0)
            return p->memo[i].reg;
    int8_t sub[3][FC_MAX_DIMS];
    for (int k = 0; k < n->nin && n->op != FC_OP_LOAD; k++)
        for (int j = 0; j < n->in[k]->nlev; j++) {
            int l = epi_compose(n, k, j, map);
            if (l == -2 && !n->product)
                return -1;
            if (k < 3)
                sub[k][j] = (int8_t)l;
        }
    if (n->product) {
        /* read once, at one mapping that covers every root level of size > 1 */
        if (p->prod)
            return -1;
        bool hit[FC_MAX_DIMS] = {false};
        for (int j = 0; j < n->nlev; j++) {
            if (map[j] < 0 ? n->size[j] != 1 : hit[map[j]])
                return -1;
            if (map[j] >= 0)
                hit[map[j]] = true;
        }
        for (int l = 0; l < p->root->nlev; l++)
            if (!hit[l] && p->root->size[l] != 1)
                return -1;
        p->prod = n;
        memcpy(p->pmap, map, (size_t)n->nlev);
        return epi_instr(p, n, map, FC_OP_NONE, n->dtype, n->dtype);
    }
    if (n->op == FC_OP_CAST && n->in[0]->dtype == n->dtype)     /* only moves levels */
        return epi_emit(p, n->in[0], sub[0]);
    if (n->op == FC_OP_CONST) {
        int r = epi_instr(p, n, map, FC_OP_CONST, n->dtype, n->dtype);
        if (r >= 0)
            p->e.code[r].konst = n->konst;
        return r;
    }
    if (n->op == FC_OP_LOAD) {
        int64_t offset = n->offset, st[FC_MAX_DIMS] = {0};
        for (int k = 0; k < n->nin; k++) {
            const FcNode *ix = n->in[k];
            if (ix->op == FC_OP_CONST) {
                int64_t i = ix->konst.i, ext = n->shape[k];
                if (i >= ext || i < ((n->wrap >> k & 1) ? -ext : 0))
                    return -1;      /* the scheduler reports it */
                offset += (i < 0 ? i + ext : i) * n->strides[k];
                continue;
            }
            if (ix->op != FC_OP_IOTA)
                return -1;
            int l = epi_compose(n, k, 0, map);
            if (l >= 0)
                st[l] += n->strides[k];
        }
        int r = epi_instr(p, n, map, FC_OP_LOAD, n->dtype, n->dtype);
        if (r >= 0) {
            p->e.code[r].data = n->storage->data;
            p->e.code[r].offset = offset;
            memcpy(p->lstride[r], st, sizeof st);
        }
        return r;
    }
    if (!fc_op_is_unary(n->op) && !fc_op_is_binary(n->op) && !fc_op_is_compare(n->op) && n->op != FC_OP_WHERE &&
        n->op != FC_OP_CAST)
        return -1;
    if (n->nin > 3)
        return -1;
    int ops[3] = {-1, -1, -1};
    for (int k = 0; k < n->nin; k++)
        if ((ops[k] = epi_emit(p, n->in[k], sub[k])) < 0)
            return -1;
    FcDType src = n->op == FC_OP_CAST || n->op == FC_OP_ISNAN ? n->in[0]->dtype
                  : fc_op_is_compare(n->op)                   ? n->src_dtype
                                                              : n->dtype;
    /* integer division reports a zero divisor, which a product's tasks cannot */
    if ((n->op == FC_OP_FLOORDIV || n->op == FC_OP_MOD || n->op == FC_OP_FMOD) && !fc_dtype_is_float(n->dtype))
        return -1;
    FcInstr probe = {.op = n->op, .dtype = n->dtype, .src_dtype = src, .a = ops[0], .b = ops[1], .c = ops[2]};
    FcError ignored;
    if (p->be->supports(p->be, &probe, ops[0] >= 0 ? p->e.code[ops[0]].dtype : n->dtype, &ignored))
        return -1;
    int r = epi_instr(p, n, map, n->op, n->dtype, src);
    if (r >= 0) {
        p->e.code[r].a = ops[0];
        p->e.code[r].b = ops[1];
        p->e.code[r].c = ops[2];
    }
    return r;
}

/* The one stride of levels lv[0..n) (outermost first) flattened, in *out; false when they do
 * not flatten (size-1 levels take any stride). */
static bool flat_stride(const int *lv, int n, const int64_t *size, const int64_t *stride, int64_t *out)
{
    int64_t st = 0, span = 0;
    bool any = false;
    for (int i = n - 1; i >= 0; i--) {
        int l = lv[i];
        if (size[l] == 1)
            continue;
        if (any && stride[l] != span)
            return false;
        if (!any)
            st = stride[l];
        any = true;
        span = stride[l] * size[l];
    }
    *out = st;
    return true;
}

/* The strides of a product's operand (a LOAD of plain indices) per level of the MUL above it,
 * and which levels it has; false when it is not such a load. */
static bool operand_strides(const FcNode *mul, int k, int64_t *st, bool *has)
{
    const FcNode *ld = mul->in[k];
    if (ld->op != FC_OP_LOAD)
        return false;
    for (int j = 0; j < ld->nlev; j++)
        if (mul->lev_map[k][j] >= 0)
            has[mul->lev_map[k][j]] = ld->size[j] != 1 || has[mul->lev_map[k][j]];
    for (int q = 0; q < ld->nin; q++) {
        if (ld->in[q]->op != FC_OP_IOTA)
            return false;
        int8_t j = ld->lev_map[q][0];
        if (j < 0)
            continue;
        int8_t l = mul->lev_map[k][j];
        if (l >= 0)
            st[l] += ld->strides[q];
    }
    return true;
}

/* The root's product as an FcMatmul (levels split into batch, rows, columns, k) with p's
 * epilogue's strides split likewise; out_strides: the output's per root level. False when the
 * operands do not flatten into matrices. */
static bool product_matmul(Epi *p, const int64_t *out_strides, int64_t out_offset, void *out, FcMatmul *mm)
{
    const FcNode *prod = p->prod, *mul = prod->in[0];
    if (mul->op != FC_OP_MUL || mul->nin != 2 || mul->nlev > FC_MAX_DIMS)
        return false;
    int64_t sa[FC_MAX_DIMS] = {0}, sb[FC_MAX_DIMS] = {0};
    bool ha[FC_MAX_DIMS] = {false}, hb[FC_MAX_DIMS] = {false};
    if (!operand_strides(mul, 0, sa, ha) || !operand_strides(mul, 1, sb, hb))
        return false;
    int bl[FC_MAX_DIMS], ml[FC_MAX_DIMS], nl[FC_MAX_DIMS], kl[FC_MAX_DIMS];
    int nb = 0, nm = 0, nn = 0, nk = 0;
    int part[FC_MAX_DIMS], at[FC_MAX_DIMS];   /* per product level: 0 batch, 1 row, 2 column; its index */
    for (int l = 0; l < mul->nlev; l++) {
        if (l >= prod->nlev)
            kl[nk++] = l;
        else if (ha[l] && hb[l])
            part[l] = 0, at[l] = nb, bl[nb++] = l;
        else if (hb[l])
            part[l] = 2, at[l] = nn, nl[nn++] = l;
        else
            part[l] = 1, at[l] = nm, ml[nm++] = l;      /* A's, or of size 1 in both */
    }
    memset(mm, 0, sizeof *mm);
    int64_t a_rs, a_cs, b_rs, b_cs;
    if (!flat_stride(ml, nm, mul->size, sa, &a_rs) || !flat_stride(kl, nk, mul->size, sa, &a_cs) ||
        !flat_stride(kl, nk, mul->size, sb, &b_rs) || !flat_stride(nl, nn, mul->size, sb, &b_cs))
        return false;
    const FcNode *la = mul->in[0], *lb = mul->in[1];
    mm->dtype = prod->dtype;
    mm->nbatch = nb;
    mm->m = mm->n = mm->k = 1;
    for (int i = 0; i < nb; i++) {
        mm->batch[i] = mul->size[bl[i]];
        mm->a_bstride[i] = sa[bl[i]];
        mm->b_bstride[i] = sb[bl[i]];
    }
    for (int i = 0; i < nm; i++)
        mm->m *= mul->size[ml[i]];
    for (int i = 0; i < nn; i++)
        mm->n *= mul->size[nl[i]];
    for (int i = 0; i < nk; i++)
        mm->k *= mul->size[kl[i]];
    mm->a = la->storage->data;
    mm->a_offset = la->offset;
    mm->a_rs = a_rs;
    mm->a_cs = a_cs;
    mm->b = lb->storage->data;
    mm->b_offset = lb->offset;
    mm->b_rs = b_rs;
    mm->b_cs = b_cs;
    mm->c = out;
    mm->c_offset = out_offset;
    FcEpilogue *e = &p->e;
    e->nrdim = nm;
    e->ncdim = nn;
    for (int i = 0; i < nm; i++)
        e->rsize[i] = mul->size[ml[i]];
    for (int i = 0; i < nn; i++)
        e->csize[i] = mul->size[nl[i]];
    e->out_dtype = e->code[e->n - 1].dtype;
    memset(e->out_rstride, 0, sizeof e->out_rstride);
    memset(e->out_cstride, 0, sizeof e->out_cstride);
    for (int j = 0; j < prod->nlev; j++) {
        int l = p->pmap[j];
        if (l < 0)
            continue;       /* a level of size 1 */
        int64_t *dst = part[j] == 0 ? &mm->c_bstride[at[j]] : part[j] == 1 ? &e->out_rstride[at[j]]
                                                                            : &e->out_cstride[at[j]];
        *dst = out_strides[l];
        for (int r = 0; r < e->n; r++) {
            FcEpiInstr *in = &e->code[r];
            if (in->op == FC_OP_LOAD)
                (part[j] == 0 ? in->bstride : part[j] == 1 ? in->rstride : in->cstride)[at[j]] = p->lstride[r][l];
        }
    }
    mm->epi = e;
    return true;
}

/* A line for --dump-kernels: the product and its epilogue's ops. */
static void dump_product(FcCtx *ctx, const FcMatmul *mm)
{
    if (!ctx->dump || !(ctx->dump_flags & (FC_DUMP_KERNELS | FC_DUMP_IR)))
        return;
    char line[1024];
    int64_t nb = 1;
    for (int i = 0; i < mm->nbatch; i++)
        nb *= mm->batch[i];
    int n = snprintf(line, sizeof line, "product %s: %lld x (%lld x %lld) @ (%lld x %lld), epilogue:",
                 fc_dtype_name(mm->dtype), (long long)nb, (long long)mm->m, (long long)mm->k, (long long)mm->k,
                 (long long)mm->n);
    const FcEpilogue *e = mm->epi;
    for (int r = 0; r < e->n && n > 0 && n < (int)sizeof line - 40; r++) {
        const FcEpiInstr *in = &e->code[r];
        n += snprintf(line + n, sizeof line - (size_t)n, " %s",
                      in->op == FC_OP_NONE ? "P" : in->op == FC_OP_CONST ? "const" : fc_op_name(in->op));
    }
    if (n > 0 && n < (int)sizeof line - 2)
        snprintf(line + n, sizeof line - (size_t)n, "\n");
    ctx->dump(ctx->dump_ud, line);
}

FcStatus fc_product_root(FcCtx *ctx, FcBackend *be, const FcNode *root, FcDevice dev, FcStorage *out_storage,
                         int64_t out_offset, const int64_t *out_strides, FcStorage **new_storage, int64_t *new_strides,
                         bool *done, FcError *err)
{
    *done = false;
    if (!be->matmul_epilogue || root->nlev > FC_MAX_DIMS)
        return FC_OK;
    Epi *p = mem_calloc(1, sizeof *p);
    if (!p)
        return fc_nomem(err);
    p->be = be;
    p->root = root;
    int8_t map[FC_MAX_DIMS];
    for (int l = 0; l < root->nlev; l++)
        map[l] = (int8_t)l;
    FcStatus st = FC_OK;
    int64_t strides[FC_MAX_DIMS];
    FcMatmul mm;
    if (epi_emit(p, root, map) < 0 || !p->prod)
        goto out;
    if (out_strides) {
        memcpy(strides, out_strides, (size_t)root->nlev * sizeof *strides);
    } else {
        /* laid out as the product's levels are: a contraction's result is (batch, rows, columns)
         * row-major, whichever dims it is read through */
        int64_t run = 1;
        for (int l = 0; l < root->nlev; l++)
            strides[l] = 0;
        for (int j = p->prod->nlev - 1; j >= 0; j--)
            if (p->pmap[j] >= 0) {
                strides[p->pmap[j]] = run;
                run *= p->prod->size[j];
            }
    }
    if (!product_matmul(p, strides, out_offset, NULL, &mm))
        goto out;
    *done = true;
    if (!out_strides) {
        int64_t nbytes;
        fc_shape_nbytes(root->nlev, root->size, root->dtype, &nbytes);
        if ((st = fc_storage_new(ctx, dev, (size_t)nbytes, &out_storage, err)))
            goto out;
        *new_storage = out_storage;
        memcpy(new_strides, strides, (size_t)root->nlev * sizeof *strides);
        out_offset = 0;
    }
    mm.c = out_storage->data;
    mm.c_offset = out_offset;
    mm.nthreads = ctx->nthreads;
    mm.interrupt = ctx->interrupt;
    dump_product(ctx, &mm);
    st = be->matmul(be, &mm, err);
    if (st && !out_strides) {
        fc_storage_release(*new_storage);
        *new_storage = NULL;
    }
out:
    mem_free(p);
    return st;
}

int fc_products_under(FcNode *root, FcNode **out, int cap)
{
    if (!fc_products_live)
        return 0;
    /* depth-first, each node once (FcNode.mark) */
    uint64_t mark = fc_walk_stamp();
    FcNode *stack[256];
    int sp = 0, n = 0;
    stack[sp++] = root;
    root->mark = mark;
    while (sp > 0) {
        FcNode *x = stack[--sp];
        if (x->product && x != root) {
            if (n < cap)
                out[n] = x;
            n++;
            continue;
        }
        for (int k = 0; k < x->nin; k++)
            if (x->in[k]->mark != mark) {
                x->in[k]->mark = mark;
                if (sp == (int)(sizeof stack / sizeof *stack))
                    return -1;
                stack[sp++] = x->in[k];
            }
    }
    return n;
}
