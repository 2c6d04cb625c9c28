/* matmul.c — torch.matmul: the dot product, matrix-vector, matrix-matrix and batched products
 * with broadcast batch dims, as one strided FcMatmul that the backend runs.
 *
 * Shapes, dtype rules and error messages are PyTorch 1.13's. The operands are realised (a product
 * is a materialisation point); the result is a new C-contiguous tensor. Depends on fcdim.h,
 * internal.h and the backend interface. */
#include "internal.h"

#include "backend.h"

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
