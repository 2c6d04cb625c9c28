/* matmul.c — torch.matmul: the dot product, matrix-vector, matrix-matrix and batched products
 * with broadcast batch dims, as one strided FcMatmul that the backend runs.
 *
 * Shapes, dtype rules and error messages are PyTorch 1.13's. The operands are realised (a product
 * is a materialisation point); the result is a new C-contiguous tensor. Depends on fcdim.h,
 * internal.h and the backend interface. */
#include "internal.h"

#include "backend.h"
#include "mem.h"

#include <math.h>
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

/* ---- which kernel PyTorch 1.13's CPU runs a bfloat16 product with ----
 *
 * Its oneDNN gemm (use_mkldnn_bf16_matmul: more than 4096 multiply-adds, mkldnn/Utils.h's
 * checksize) and cpublas's gemm_transa_ (a dot per element, in float) accumulate in float and
 * round once, as fc_matmul's float32 product does; every other kernel it has for a small product
 * (cpublas's gemm_notrans_, gemm_transb_, gemm_transab_, gemv, dot_naive and bmm's
 * baddbmm_cpu_kernel) computes in c10::BFloat16, rounding each product and each partial sum in
 * order of k (docs/language.md, "bfloat16 products"). */
enum { BF16_ONEDNN_MIN = 16 * 16 * 16 };

/* mm (addmm_impl_cpu_, LinearAlgebra.cpp) of A (m x k, strides sa) and B (k x n, strides sb) into
 * a new contiguous C: true when it rounds every step. It runs C^T = B^T A^T column-major (C's
 * transpose_c, unless n is 1), passing each operand as is ('n') or transposed ('t') by its strides
 * (a copy when neither fits); only 't' for the first with 'n' for the second is gemm_transa_. */
static bool bf16_mm_steps(int64_t m, int64_t k, int64_t n, const int64_t *sa, const int64_t *sb)
{
    if ((double)m * (double)k * (double)n > BF16_ONEDNN_MIN)
        return false;
    int64_t k1 = k > 1 ? k : 1, m1 = m > 1 ? m : 1, n1 = n > 1 ? n : 1;
    bool ta, tb;
    if (n != 1) {
        ta = !(sb[1] == 1 && sb[0] >= n1) && sb[0] == 1 && sb[1] >= k1;
        tb = !(sa[1] == 1 && sa[0] >= k1) && sa[0] == 1 && sa[1] >= m1;
    } else {
        ta = !(sa[0] == 1 && sa[1] >= m1);
        tb = !(sb[0] == 1 && sb[1] >= k1);
    }
    return !(ta && !tb);
}

/* matmul's should_fold (LinearAlgebra.cpp): t of three dims or more with another of one or two is
 * folded, unless t has three whose last two are transposed under a contiguous first (a
 * permute(0, 2, 1)), which bmm takes. */
static bool bf16_folds(const FcTensor *t, int nother)
{
    if (t->ndim < 3 || nother > 2)
        return false;
    return !(t->ndim == 3 && nother == 2 && t->strides[2] != 1 && t->strides[0] == t->shape[1] * t->shape[2]);
}

/* True when at::matmul(a, b) of bfloat16 on the CPU rounds every step: dot and mv by their
 * sizes; a 2-D product (a vector first is one row, unsqueeze(0)'s strides) by bf16_mm_steps; a
 * product of three or more dims with one of one or two mostly folds the larger's batch into its
 * rows (reshape: a view when one fits, else a contiguous copy) for mm or mv (bf16_folds); the
 * rest expand both to the common batch and reshape to three dims for bmm (bmm_out_or_baddbmm_,
 * Blas.cpp): oneDNN above 4096 multiply-adds in all, baddbmm_cpu_kernel below 400 per item, else
 * mm per item. */
static bool bf16_rounds_steps(const FcTensor *a, const FcTensor *b)
{
    int na = a->ndim, nb = b->ndim;
    const int64_t *sa = a->strides, *sb = b->strides;
    if (na == 1 && nb == 1)
        return a->shape[0] <= BF16_ONEDNN_MIN;
    if (na == 2 && nb == 1)
        return (double)a->shape[0] * (double)a->shape[1] <= BF16_ONEDNN_MIN;
    if (na == 1 && nb == 2) {
        int64_t row[2] = {a->shape[0] * sa[0], sa[0]};
        return bf16_mm_steps(1, a->shape[0], b->shape[1], row, sb);
    }
    if (na == 2 && nb == 2)
        return bf16_mm_steps(a->shape[0], a->shape[1], b->shape[1], sa, sb);
    int64_t shape[FC_MAX_DIMS], stride[FC_MAX_DIMS], fshape[2], fstride[2];
    if (bf16_folds(a, nb) || bf16_folds(b, na)) {
        /* t1 (the larger, b transposed when it is b) folded to (rows, k); t2 the other (a
         * transposed when it is a 2-D a). */
        bool tr = nb > na;
        const FcTensor *t1 = tr ? b : a, *t2 = tr ? a : b;
        int n1 = t1->ndim;
        memcpy(shape, t1->shape, (size_t)n1 * sizeof *shape);
        memcpy(stride, t1->strides, (size_t)n1 * sizeof *stride);
        if (tr) {
            int64_t x = shape[n1 - 1], y = stride[n1 - 1];
            shape[n1 - 1] = shape[n1 - 2], stride[n1 - 1] = stride[n1 - 2];
            shape[n1 - 2] = x, stride[n1 - 2] = y;
        }
        fshape[1] = shape[n1 - 1];
        fshape[0] = 1;
        for (int d = 0; d < n1 - 1; d++)
            fshape[0] *= shape[d];
        if (!fc_compute_stride(n1, shape, stride, 2, fshape, fstride))
            fc_contiguous_strides(2, fshape, fstride);
        if (t2->ndim == 1)
            return (double)fshape[0] * (double)fshape[1] <= BF16_ONEDNN_MIN;
        int64_t s2[2] = {t2->strides[tr ? 1 : 0], t2->strides[tr ? 0 : 1]};
        return bf16_mm_steps(fshape[0], fshape[1], t2->shape[tr ? 0 : 1], fstride, s2);
    }
    /* bmm of the operands (two dims or more) expanded to the common batch (stride 0 where a dim
     * of one is expanded) and reshaped to three dims */
    int nbatch = (na > nb ? na : nb) - 2;
    int64_t batch[FC_MAX_DIMS], items = 1, m = a->shape[na - 2], k = a->shape[na - 1], n = b->shape[nb - 1];
    for (int d = 0; d < nbatch; d++) {
        int ia = d - (nbatch - (na - 2)), ib = d - (nbatch - (nb - 2));
        int64_t ea = ia >= 0 ? a->shape[ia] : 1, eb = ib >= 0 ? b->shape[ib] : 1;
        batch[d] = ea != 1 ? ea : eb;
        items *= batch[d];
    }
    double madds = (double)m * (double)k * (double)n;
    if ((double)items * madds > BF16_ONEDNN_MIN)
        return false;
    if (madds < 400)
        return true;
    int64_t ms[2][3];
    for (int w = 0; w < 2; w++) {
        const FcTensor *t = w ? b : a;
        int off = nbatch - (t->ndim - 2);
        for (int d = 0; d < nbatch + 2; d++) {
            int j = d - off;
            shape[d] = d < nbatch ? batch[d] : t->shape[j];
            stride[d] = j < 0 || t->shape[j] != shape[d] ? 0 : t->strides[j];
        }
        int64_t rshape[3] = {items, shape[nbatch], shape[nbatch + 1]};
        if (!fc_compute_stride(nbatch + 2, shape, stride, 3, rshape, ms[w]))
            fc_contiguous_strides(3, rshape, ms[w]);
    }
    return bf16_mm_steps(m, k, n, ms[0] + 1, ms[1] + 1);
}

FcStatus fc_matmul(FcCtx *ctx, FcTensor *a, FcTensor *b, FcTensor **out, FcError *err)
{
    *out = NULL;
    int na = a->ndim, nb = b->ndim;
    if (na == 0 || nb == 0)
        return fc_errf(err, FC_ERR_RUNTIME, "both arguments to matmul need to be at least 1D, but they are %dD and %dD",
                       na, nb);
    if (na == 1 && nb == 1) {
        if (a->dtype != b->dtype)
            return fc_errf(err, FC_ERR_RUNTIME, "dot : expected both vectors to have same dtype, but found %s and %s",
                           fc_dtype_torch_name(a->dtype), fc_dtype_torch_name(b->dtype));
        if (a->dtype == FC_BOOL || a->dtype == FC_FLOAT16)
            return fc_errf(err, FC_ERR_RUNTIME, "\"dot\" not implemented for '%s'", fc_dtype_torch_name(a->dtype));
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
    int64_t shape[FC_MAX_DIMS], numel;
    int nd = 0;
    for (int i = 0; i < nbatch; i++)
        shape[nd++] = batch[i];
    if (na >= 2)
        shape[nd++] = m;
    if (nb >= 2)
        shape[nd++] = n;
    fc_shape_numel(nd, shape, &numel);
    if (!(na == 1 && nb == 1)) {
        /* torch runs the product as mm, mv or bmm of a first operand p (b, transposed, when a has
         * one or two dims and b more) and q, and checks dtypes in its kernel: one with no work
         * checks none and gives zeros of mm's p dtype, or of mv's and bmm's q dtype. */
        bool p_is_b = na <= 2 && nb >= 3;
        FcTensor *p = p_is_b ? b : a, *q = p_is_b ? a : b;
        int other = p_is_b ? na : nb;
        bool mv = other == 1, bmm = !p_is_b && na >= 3 && nb >= 3;
        if (numel == 0 || ka == 0) {
            if (a->dtype != b->dtype || a->dtype == FC_BOOL || a->dtype == FC_FLOAT16)
                return fc_full(ctx, mv || bmm ? q->dtype : p->dtype, dev, nd, shape, (FcScalar){.i = 0}, out, err);
        } else if (p->dtype == FC_BOOL || p->dtype == FC_FLOAT16) {
            return fc_errf(err, FC_ERR_RUNTIME, "\"%s\" not implemented for '%s'",
                           mv ? "addmv_impl_cpu" : bmm ? "bmm" : "addmm_impl_cpu_", fc_dtype_torch_name(p->dtype));
        } else if (p->dtype != q->dtype) {
            return fc_errf(err, FC_ERR_RUNTIME, "expected scalar type %s but found %s", fc_dtype_torch_name(p->dtype),
                           fc_dtype_torch_name(q->dtype));
        }
    }
    /* bfloat16 on the CPU as PyTorch's kernel for these operands rounds (bf16_rounds_steps: each
     * step, or once as float32's product and CUDA's do); the narrow integers wrap, so int32 gives
     * their bits. */
    bool steps = false;
    if (a->dtype == FC_BFLOAT16 && dev.type == FC_DEV_CPU) {
        fc_tensor_place(a, dev);
        fc_tensor_place(b, dev);
        if ((st = fc_realize(ctx, a, err)) || (st = fc_realize(ctx, b, err)))
            return st;
        steps = bf16_rounds_steps(a, b);
    }
    if (!steps && fc_dtype_compute(a->dtype) != a->dtype) {
        FcDType cdt = fc_dtype_compute(a->dtype);
        FcTensor *ca = NULL, *cb = NULL, *cc = NULL;
        st = fc_cast(ctx, a, cdt, &ca, err);
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
    fc_tensor_place(a, dev);
    fc_tensor_place(b, dev);
    if ((st = fc_realize(ctx, a, err)) || (st = fc_realize(ctx, b, err)))
        return st;
    FcTensor *c;
    st = fc_empty(ctx, a->dtype, dev, nd, shape, NULL, &c, err);
    if (st)
        return st;
    if (fc_tensor_numel(c) == 0)
        goto record;    /* nothing to write (and the batch strides below could overflow) */
    FcMatmul mm;
    memset(&mm, 0, sizeof mm);
    mm.dtype = a->dtype;
    mm.round_steps = steps;
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
record:     /* an empty result too: it requires grad as torch's does */
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

/* k + c . (the levels' indices) */
typedef struct Aff {
    int64_t c[FC_MAX_DIMS];
    int64_t k;
} Aff;

/* lo <= c . (the levels' indices) < hi */
typedef struct Bound {
    int64_t c[FC_MAX_DIMS];
    int64_t lo, hi;
} Bound;

/* What the operand's element must satisfy for the masked read to equal the IR's value: an
 * index e of the load in [0, size) wherever the masks hold (size > 0), or (size 0) a bound of an
 * index's own WHERE that the masks imply. */
typedef struct Need {
    Aff e;
    int64_t size;
    Bound inner;
} Need;

typedef struct Gather {
    int nl;                     /* the product's levels */
    const int64_t *lsize;       /* their sizes */
    const FcNode *load;
    int64_t offset, st[FC_MAX_DIMS];
    int nb, nneed;
    Bound b[FC_MM_MAX_BOUNDS];
    Need need[FC_MAX_DIMS + 2 * FC_MM_MAX_BOUNDS];
} Gather;

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
    int8_t pmap[FC_MAX_DIMS];       /* per level of its MUL: the root's level it is, or goes into
                                       (a merged product), -1 (size 1) or FC_LEV_REDUCED */
    int64_t pmult[FC_MAX_DIMS];     /* ... and the weight of its index there (1 unless merged) */
    FcEpilogue e;
    int64_t lstride[FC_EPI_MAX][FC_MAX_DIMS];
    EpiMemo memo[FC_EPI_MAX];
    int nmemo;
    Gather ga, gb;                  /* the product's operands (product_matmul) */
    FcMmOperand a_ix, b_ix;
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
        const FcNode *mul = n->in[0];
        if (mul->nlev > FC_MAX_DIMS)
            return -1;
        p->prod = n;
        for (int l = 0; l < mul->nlev; l++) {
            int8_t lm = n->lev_map[0][l];
            p->pmap[l] = (int8_t)(lm == FC_LEV_REDUCED ? FC_LEV_REDUCED : lm < 0 ? -1 : map[lm]);
            p->pmult[l] = n->merge ? n->merge[l] : 1;
        }
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

/* ---- operands read through index arithmetic (implicit GEMM: FcMmOperand) ----
 * A product's operand is a load whose indices are affine in the product's levels, under
 * WHERE(mask, ., +0.0) with masks that are conjunctions of comparisons of affine expressions.
 * Its element is then at offset + st . (the levels' indices) and is 0 unless the masks' bounds
 * hold; the GEMM packs it from the load's storage as it packs a plain operand. */

/* The levels of n's operand k among the product's (n's at map): false when one is reduced. */
static bool gather_sub(const FcNode *n, int k, const int8_t *map, int8_t *sub)
{
    for (int j = 0; j < n->in[k]->nlev; j++) {
        int l = epi_compose(n, k, j, map);
        if (l == -2)
            return false;
        sub[j] = (int8_t)l;
    }
    return true;
}

/* n (int64) at map as an affine expression of the product's levels; false when it is not one
 * (or a coefficient overflows). */
static bool aff_of(const Gather *g, const FcNode *n, const int8_t *map, Aff *out)
{
    memset(out, 0, sizeof *out);
    if (n->dtype != FC_INT64 || n->nin > 2)
        return false;
    if (n->op == FC_OP_CONST) {
        out->k = n->konst.i;
        return true;
    }
    if (n->op == FC_OP_IOTA) {
        if (map[0] >= 0)
            out->c[map[0]] = 1;
        return true;
    }
    if (n->op != FC_OP_CAST && n->op != FC_OP_NEG && n->op != FC_OP_ADD && n->op != FC_OP_SUB && n->op != FC_OP_MUL)
        return false;
    Aff x[2];
    int8_t sub[FC_MAX_DIMS];
    for (int k = 0; k < n->nin; k++)
        if (!gather_sub(n, k, map, sub) || !aff_of(g, n->in[k], sub, &x[k]))
            return false;
    bool ok = true;
    switch (n->op) {
    case FC_OP_CAST:
        *out = x[0];
        break;
    case FC_OP_NEG:
        ok = !__builtin_sub_overflow(0, x[0].k, &out->k);
        for (int l = 0; l < g->nl; l++)
            ok &= !__builtin_sub_overflow(0, x[0].c[l], &out->c[l]);
        break;
    case FC_OP_ADD:
    case FC_OP_SUB:
        ok = n->op == FC_OP_ADD ? !__builtin_add_overflow(x[0].k, x[1].k, &out->k)
                                : !__builtin_sub_overflow(x[0].k, x[1].k, &out->k);
        for (int l = 0; l < g->nl; l++)
            ok &= n->op == FC_OP_ADD ? !__builtin_add_overflow(x[0].c[l], x[1].c[l], &out->c[l])
                                     : !__builtin_sub_overflow(x[0].c[l], x[1].c[l], &out->c[l]);
        break;
    default: {      /* MUL: one side a constant */
        bool c0 = true;
        for (int l = 0; l < g->nl; l++)
            c0 &= x[0].c[l] == 0;
        const Aff *v = c0 ? &x[1] : &x[0];
        int64_t s = c0 ? x[0].k : x[1].k;
        for (int l = 0; l < g->nl && !c0; l++)
            ok &= x[1].c[l] == 0;
        ok &= !__builtin_mul_overflow(v->k, s, &out->k);
        for (int l = 0; l < g->nl; l++)
            ok &= !__builtin_mul_overflow(v->c[l], s, &out->c[l]);
        break;
    }
    }
    return ok;
}

/* lo <= c . i < hi added to the conjunction b[0..*nb), merged with a bound of the same c. */
static bool bound_add(Bound *b, int *nb, int cap, const int64_t *c, int64_t lo, int64_t hi)
{
    for (int q = 0; q < *nb; q++)
        if (memcmp(b[q].c, c, sizeof b[q].c) == 0) {
            b[q].lo = lo > b[q].lo ? lo : b[q].lo;
            b[q].hi = hi < b[q].hi ? hi : b[q].hi;
            return true;
        }
    if (*nb >= cap)
        return false;
    memcpy(b[*nb].c, c, sizeof b[*nb].c);
    b[*nb].lo = lo;
    b[*nb].hi = hi;
    (*nb)++;
    return true;
}

/* The bool mask n at map as bounds added to b[0..*nb); false when it is not a conjunction of
 * comparisons of affine expressions. */
static bool mask_of(const Gather *g, const FcNode *n, const int8_t *map, Bound *b, int *nb, int cap)
{
    int8_t sub[2][FC_MAX_DIMS];
    if (n->dtype != FC_BOOL || n->nin < 1 || n->nin > 2)
        return false;
    for (int k = 0; k < n->nin; k++)
        if (!gather_sub(n, k, map, sub[k]))
            return false;
    if (n->op == FC_OP_CAST && n->in[0]->dtype == FC_BOOL)
        return mask_of(g, n->in[0], sub[0], b, nb, cap);
    if (n->op == FC_OP_AND)
        return mask_of(g, n->in[0], sub[0], b, nb, cap) && mask_of(g, n->in[1], sub[1], b, nb, cap);
    if (n->op != FC_OP_LT && n->op != FC_OP_LE && n->op != FC_OP_GT && n->op != FC_OP_GE)
        return false;
    Aff x, y, d;
    memset(&d, 0, sizeof d);
    if (n->src_dtype != FC_INT64 || !aff_of(g, n->in[0], sub[0], &x) || !aff_of(g, n->in[1], sub[1], &y))
        return false;
    bool ok = !__builtin_sub_overflow(x.k, y.k, &d.k) && d.k > INT64_MIN + 2 && d.k < INT64_MAX - 2;
    bool any = false;
    for (int l = 0; l < g->nl; l++) {
        ok &= !__builtin_sub_overflow(x.c[l], y.c[l], &d.c[l]);
        any |= d.c[l] != 0;
    }
    if (!ok || !any)
        return false;       /* (a constant condition: not worth a bound) */
    /* c . i + k  op  0 */
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    switch (n->op) {
    case FC_OP_GE: lo = -d.k; break;
    case FC_OP_GT: lo = 1 - d.k; break;
    case FC_OP_LT: hi = -d.k; break;
    default: hi = 1 - d.k; break;
    }
    return bound_add(b, nb, cap, d.c, lo, hi);
}

/* The range [*min, *max] of c . i over the levels' extents, narrowed by g's bound on c. */
static void aff_range(const Gather *g, const int64_t *c, int64_t *min, int64_t *max)
{
    __int128 lo = 0, hi = 0;
    for (int l = 0; l < g->nl; l++) {
        __int128 v = (__int128)c[l] * (g->lsize[l] > 0 ? g->lsize[l] - 1 : 0);
        if (v < 0)
            lo += v;
        else
            hi += v;
    }
    for (int q = 0; q < g->nb; q++)
        if (memcmp(g->b[q].c, c, sizeof g->b[q].c) == 0) {
            lo = g->b[q].lo > lo ? g->b[q].lo : lo;
            hi = (__int128)g->b[q].hi - 1 < hi ? (__int128)g->b[q].hi - 1 : hi;
        }
    *min = lo < INT64_MIN / 2 ? INT64_MIN / 2 : lo > INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)lo;
    *max = hi < INT64_MIN / 2 ? INT64_MIN / 2 : hi > INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)hi;
}

/* n (of the product's dtype) at map into g; false when it is not a masked gather. */
static bool gather_of(Gather *g, const FcNode *n, const int8_t *map, FcDType dt)
{
    int8_t sub[3][FC_MAX_DIMS];
    if (n->dtype != dt || n->nlev > FC_MAX_DIMS)
        return false;
    for (int k = 0; k < n->nin && n->op != FC_OP_LOAD && k < 3; k++)
        if (!gather_sub(n, k, map, sub[k]))
            return false;
    if (n->op == FC_OP_CAST && n->in[0]->dtype == dt)      /* only moves levels */
        return gather_of(g, n->in[0], sub[0], dt);
    if (n->op == FC_OP_WHERE) {
        const FcNode *z = n->in[2];
        if (z->op != FC_OP_CONST || z->konst.f != 0 || signbit(z->konst.f))
            return false;       /* the packed padding is +0.0 */
        return mask_of(g, n->in[0], sub[0], g->b, &g->nb, FC_MM_MAX_BOUNDS) && gather_of(g, n->in[1], sub[1], dt);
    }
    if (n->op != FC_OP_LOAD || g->load || !n->storage)
        return false;
    g->load = n;
    g->offset = n->offset;
    for (int q = 0; q < n->nin; q++) {
        const FcNode *ix = n->in[q];
        int8_t s1[FC_MAX_DIMS], s2[FC_MAX_DIMS];
        Aff e;
        if (!gather_sub(n, q, map, s1))
            return false;
        while (ix->op == FC_OP_CAST && ix->dtype == FC_INT64 && ix->in[0]->dtype == FC_INT64) {
            if (!gather_sub(ix, 0, s1, s2))     /* only moves levels */
                return false;
            memcpy(s1, s2, sizeof s1);
            ix = ix->in[0];
        }
        if (ix->op == FC_OP_WHERE && ix->dtype == FC_INT64) {
            /* an index clamped where its element is masked anyway: its own mask must hold
             * wherever the operand's do */
            Bound in[FC_MM_MAX_BOUNDS];
            int nin = 0;
            if (!gather_sub(ix, 0, s1, s2) || !mask_of(g, ix->in[0], s2, in, &nin, FC_MM_MAX_BOUNDS) ||
                !gather_sub(ix, 1, s1, s2) || !aff_of(g, ix->in[1], s2, &e))
                return false;
            for (int r = 0; r < nin; r++) {
                if (g->nneed == (int)(sizeof g->need / sizeof *g->need))
                    return false;
                g->need[g->nneed++] = (Need){.size = 0, .inner = in[r]};
            }
        } else if (!aff_of(g, ix, s1, &e)) {
            return false;
        }
        int64_t t;
        if (__builtin_mul_overflow(e.k, n->strides[q], &t) || __builtin_add_overflow(g->offset, t, &g->offset))
            return false;
        for (int l = 0; l < g->nl; l++)
            if (__builtin_mul_overflow(e.c[l], n->strides[q], &t) || __builtin_add_overflow(g->st[l], t, &g->st[l]))
                return false;
        if (g->nneed == (int)(sizeof g->need / sizeof *g->need))
            return false;
        g->need[g->nneed++] = (Need){.e = e, .size = n->shape[q]};
    }
    return true;
}

/* Whether every need of g holds wherever its bounds do. */
static bool gather_valid(const Gather *g)
{
    if (!g->load)
        return false;
    for (int r = 0; r < g->nneed; r++) {
        const Need *nd = &g->need[r];
        int64_t min, max;
        if (nd->size > 0) {
            aff_range(g, nd->e.c, &min, &max);
            if (min > max)
                continue;       /* never read */
            if (min + nd->e.k < 0 || max + nd->e.k >= nd->size)
                return false;
        } else {
            aff_range(g, nd->inner.c, &min, &max);
            if (min <= max && (min < nd->inner.lo || max >= nd->inner.hi))
                return false;
        }
    }
    return true;
}

/* Operand k of the product's MUL as a gather over the MUL's levels (g->st per level, g->b), and
 * which of its levels it has (size > 1); false when it is not one. */
static bool operand_gather(const FcNode *mul, int k, Gather *g, bool *has)
{
    const FcNode *op = mul->in[k];
    memset(g, 0, sizeof *g);
    g->nl = mul->nlev;
    g->lsize = mul->size;
    int8_t id[FC_MAX_DIMS], sub[FC_MAX_DIMS];
    for (int l = 0; l < mul->nlev; l++)
        id[l] = (int8_t)l;
    if (op->nlev > FC_MAX_DIMS || !gather_sub(mul, k, id, sub))
        return false;
    for (int j = 0; j < op->nlev; j++)
        if (sub[j] >= 0)
            has[sub[j]] = op->size[j] != 1 || has[sub[j]];
    return gather_of(g, op, sub, mul->dtype) && gather_valid(g);
}

bool fc_product_gather(const FcNode *n)
{
    if (n->nlev > FC_MAX_DIMS || (n->dtype != FC_FLOAT32 && n->dtype != FC_FLOAT64))
        return false;
    Gather *g = mem_calloc(1, sizeof *g);
    if (!g)
        return false;
    int8_t map[FC_MAX_DIMS];
    for (int l = 0; l < n->nlev; l++)
        map[l] = (int8_t)l;
    g->nl = n->nlev;
    g->lsize = n->size;
    bool ok = gather_of(g, n, map, n->dtype) && gather_valid(g);
    mem_free(g);
    return ok;
}

/* Gather g as a matrix over the product's levels: batch levels bl, rows rl, columns cl. Plain
 * strides (*rs, *cs, *ix NULL) when it has no bounds and its rows and columns each flatten, else
 * its description in *d (*ix = d) when be reads one; false when neither. */
static bool operand_matrix(const FcBackend *be, const Gather *g, const int64_t *size, const int *bl, int nb,
                           const int *rl, int nr, const int *cl, int nc, int64_t *rs, int64_t *cs, FcMmOperand *d,
                           const FcMmOperand **ix)
{
    *ix = NULL;
    if (g->nb == 0 && flat_stride(rl, nr, size, g->st, rs) && flat_stride(cl, nc, size, g->st, cs))
        return true;
    if (!be->matmul_implicit)
        return false;
    memset(d, 0, sizeof *d);
    d->nrdim = nr;
    d->ncdim = nc;
    for (int i = 0; i < nr; i++) {
        d->rsize[i] = size[rl[i]];
        d->rstride[i] = g->st[rl[i]];
    }
    for (int i = 0; i < nc; i++) {
        d->csize[i] = size[cl[i]];
        d->cstride[i] = g->st[cl[i]];
    }
    d->nbound = g->nb;
    for (int q = 0; q < g->nb; q++) {
        FcMmBound *b = &d->bound[q];
        b->lo = g->b[q].lo;
        b->hi = g->b[q].hi;
        for (int i = 0; i < nb; i++)
            b->bcoef[i] = g->b[q].c[bl[i]];
        for (int i = 0; i < nr; i++)
            b->rcoef[i] = g->b[q].c[rl[i]];
        for (int i = 0; i < nc; i++)
            b->ccoef[i] = g->b[q].c[cl[i]];
    }
    *rs = *cs = 0;
    *ix = d;
    return true;
}

/* The root's product as an FcMatmul (levels split into batch, rows, columns, k) with p's
 * epilogue's strides split likewise; out_strides: the output's per root level. False when the
 * operands are not matrices (plain or, where the backend reads them, gathered). */
static bool product_matmul(Epi *p, const int64_t *out_strides, int64_t out_offset, void *out, FcMatmul *mm)
{
    const FcNode *prod = p->prod, *mul = prod->in[0];
    if (mul->op != FC_OP_MUL || mul->nin != 2 || mul->nlev > FC_MAX_DIMS)
        return false;
    bool ha[FC_MAX_DIMS] = {false}, hb[FC_MAX_DIMS] = {false};
    Gather *ga = &p->ga, *gb = &p->gb;
    if (!operand_gather(mul, 0, ga, ha) || !operand_gather(mul, 1, gb, hb))
        return false;
    int bl[FC_MAX_DIMS], ml[FC_MAX_DIMS], nl[FC_MAX_DIMS], kl[FC_MAX_DIMS];
    int nb = 0, nm = 0, nn = 0, nk = 0;
    int part[FC_MAX_DIMS], at[FC_MAX_DIMS];   /* per product level: 0 batch, 1 row, 2 column; its index */
    for (int l = 0; l < mul->nlev; l++) {
        if (prod->lev_map[0][l] == FC_LEV_REDUCED)
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
    if (!operand_matrix(p->be, ga, mul->size, bl, nb, ml, nm, kl, nk, &a_rs, &a_cs, &p->a_ix, &mm->a_ix) ||
        !operand_matrix(p->be, gb, mul->size, bl, nb, kl, nk, nl, nn, &b_rs, &b_cs, &p->b_ix, &mm->b_ix))
        return false;
    mm->dtype = prod->dtype;
    mm->nbatch = nb;
    mm->m = mm->n = mm->k = 1;
    for (int i = 0; i < nb; i++) {
        mm->batch[i] = mul->size[bl[i]];
        mm->a_bstride[i] = ga->st[bl[i]];
        mm->b_bstride[i] = gb->st[bl[i]];
    }
    for (int i = 0; i < nm; i++)
        mm->m *= mul->size[ml[i]];
    for (int i = 0; i < nn; i++)
        mm->n *= mul->size[nl[i]];
    for (int i = 0; i < nk; i++)
        mm->k *= mul->size[kl[i]];
    mm->a = ga->load->storage->data;
    mm->a_offset = ga->offset;
    mm->a_rs = a_rs;
    mm->a_cs = a_cs;
    mm->b = gb->load->storage->data;
    mm->b_offset = gb->offset;
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
    for (int j = 0; j < mul->nlev; j++) {
        int l = p->pmap[j];
        if (l < 0)
            continue;       /* summed, or a level of size 1 */
        /* a level merged into root level l steps by its weight there */
        int64_t w = p->pmult[j];
        int64_t *dst = part[j] == 0 ? &mm->c_bstride[at[j]] : part[j] == 1 ? &e->out_rstride[at[j]]
                                                                            : &e->out_cstride[at[j]];
        *dst = out_strides[l] * w;
        for (int r = 0; r < e->n; r++) {
            FcEpiInstr *in = &e->code[r];
            if (in->op == FC_OP_LOAD)
                (part[j] == 0 ? in->bstride : part[j] == 1 ? in->rstride : in->cstride)[at[j]] = p->lstride[r][l] * w;
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
    /* an operand read through index arithmetic (the gather not written) says so */
    const FcMmOperand *ix = mm->a_ix ? mm->a_ix : mm->b_ix;
    char how[64] = "";
    if (ix)
        snprintf(how, sizeof how, ", %s gathered (%d bounds)", mm->a_ix ? "A" : "B", ix->nbound);
    int n = snprintf(line, sizeof line, "product %s: %lld x (%lld x %lld) @ (%lld x %lld)%s, epilogue:",
                 fc_dtype_name(mm->dtype), (long long)nb, (long long)mm->m, (long long)mm->k, (long long)mm->k,
                 (long long)mm->n, how);
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

/* The root's DAG (p->root) as one product and its epilogue into *mm (but C's address), written
 * with out_strides, or (NULL) laid out as the product's levels are; the strides either way in
 * strides. False when it is not that form. */
static bool product_plan(Epi *p, const int64_t *out_strides, int64_t out_offset, int64_t *strides, FcMatmul *mm)
{
    const FcNode *root = p->root;
    int8_t map[FC_MAX_DIMS];
    for (int l = 0; l < root->nlev; l++)
        map[l] = (int8_t)l;
    if (epi_emit(p, root, map) < 0 || !p->prod)
        return false;
    if (out_strides) {
        memcpy(strides, out_strides, (size_t)root->nlev * sizeof *strides);
    } else {
        /* laid out as the product's levels are: a contraction's result is (batch, rows, columns)
         * row-major, whichever dims it is read through; a level that merges several goes where
         * the last of them is */
        const FcNode *mul = p->prod->in[0];
        int last[FC_MAX_DIMS];
        for (int l = 0; l < root->nlev; l++)
            strides[l] = 0, last[l] = -1;
        for (int j = 0; j < mul->nlev; j++)
            if (p->pmap[j] >= 0)
                last[p->pmap[j]] = j;
        int64_t run = 1;
        for (int j = mul->nlev - 1; j >= 0; j--)
            for (int l = 0; l < root->nlev; l++)
                if (last[l] == j) {
                    strides[l] = run;
                    run *= root->size[l];
                }
    }
    return product_matmul(p, strides, out_offset, NULL, mm);
}

FcStatus fc_product_strides(FcCtx *ctx, FcTensor *t, int64_t *strides, bool *known, FcError *err)
{
    *known = false;
    if (!t->node || !fc_products_live || t->node->nlev > FC_MAX_DIMS || t->node->nlev != t->ndim)
        return FC_OK;
    FcBackend *be = NULL;
    FcStatus st = fc_ctx_backend(ctx, t->device, &be, err);
    if (st || !be->matmul_epilogue)
        return st;
    Epi *p = mem_calloc(1, sizeof *p);
    if (!p)
        return fc_nomem(err);
    p->be = be;
    p->root = t->node;
    FcMatmul mm;
    *known = product_plan(p, NULL, 0, strides, &mm);
    mem_free(p);
    return FC_OK;
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
    FcStatus st = FC_OK;
    int64_t strides[FC_MAX_DIMS];
    FcMatmul mm;
    if (!product_plan(p, out_strides, out_offset, strides, &mm))
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

FcStatus fc_product_merge(FcCtx *ctx, FcTensor *t, int ngroups, const int *group_len, const int64_t *shape,
                          FcTensor **out, FcError *err)
{
    (void)ctx;
    *out = NULL;
    const FcNode *p = t->node;
    const int8_t *moved = NULL;     /* the product's level -> t's, through a level-moving node */
    if (!p || !fc_products_live)
        return FC_OK;
    if (p->op == FC_OP_CAST && p->nin == 1 && p->in[0]->dtype == p->dtype && p->in[0]->product) {
        moved = p->lev_map[0];
        p = p->in[0];
    }
    if (!p->product || p->merge || p->in[0]->nlev > FC_MAX_DIMS || (!fc_grad_off && fc_requires_grad(t)))
        return FC_OK;
    int group[FC_MAX_DIMS];
    int64_t weight[FC_MAX_DIMS];
    int q = 0;
    for (int g = 0; g < ngroups; g++) {
        int64_t w = 1;
        for (int k = q + group_len[g] - 1; k >= q; k--) {
            group[k] = g;
            weight[k] = w;
            w *= t->shape[k];
        }
        q += group_len[g];
    }
    if (q != t->ndim)
        return FC_OK;
    FcNode *mul = p->in[0];
    int8_t map[FC_MAX_DIMS];
    bool covered[FC_MAX_DIMS] = {false};
    int64_t *merge = mem_malloc((size_t)mul->nlev * sizeof *merge);
    if (!merge)
        return fc_nomem(err);
    for (int l = 0; l < mul->nlev; l++) {
        int8_t lm = p->lev_map[0][l];
        merge[l] = 1;
        map[l] = FC_LEV_REDUCED;
        if (lm == FC_LEV_REDUCED)
            continue;
        int k = lm < 0 ? -1 : moved ? moved[lm] : lm;
        if (k < 0) {        /* (a product level t broadcasts: not made by fc_contract) */
            mem_free(merge);
            return FC_OK;
        }
        map[l] = (int8_t)group[k];
        merge[l] = weight[k];
        covered[k] = true;
    }
    for (int k = 0; k < t->ndim; k++)
        if (!covered[k] && t->shape[k] != 1) {      /* a level t broadcasts the product along */
            mem_free(merge);
            return FC_OK;
        }
    FcNode *n = fc_node_new(FC_OP_SUM, p->dtype, ngroups, shape, 1, &mul);
    if (!n) {
        mem_free(merge);
        return fc_nomem(err);
    }
    memcpy(n->lev_map[0], map, (size_t)mul->nlev);
    n->merge = merge;
    n->product = true;
    n->nograd = true;       /* needs none (above): no walk for gradients looks inside */
    fc_products_live++;
    *out = fc_tensor_from_node(n, t->device, &t, 1);
    return *out ? FC_OK : fc_nomem(err);
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
