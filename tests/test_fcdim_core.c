/* test_fcdim_core.c — the tensor value, the IR and the scheduler: what materialisation does
 * (how many kernels, which loops, which layout), lazy readers across writes, overlapping
 * assignment, and results of small fused programs. Values of individual ops against PyTorch
 * are checked by the golden and script tests; this suite checks the machinery. */
#include "tests.h"

#include "fcdim.h"
#include "internal.h"      /* fc_index_read */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FcCtx *ctx;
static FcError err;
static int nkernels;
static char last_kernel[4096];

static void on_dump(void *ud, const char *text)
{
    (void)ud;
    if (strncmp(text, "kernel:", 7) == 0) {
        nkernels++;
        snprintf(last_kernel, sizeof last_kernel, "%s", text);
    }
}

static void setup(void)
{
    ck_assert_int_eq(fc_ctx_new(&ctx, &err), FC_OK);
    ctx->dump = on_dump;
    ctx->dump_flags = FC_DUMP_KERNELS;
    nkernels = 0;
    last_kernel[0] = 0;
}

static void teardown(void)
{
    fc_ctx_free(ctx);
    ctx = NULL;
}

#define OK(x) ck_assert_msg((x) == FC_OK, "%s: %s", #x, err.msg)

/* A stored copy of C data of dtype dt. */
static FcTensor *from_data(FcDType dt, const void *data, int ndim, const int64_t *shape)
{
    FcView v;
    memset(&v, 0, sizeof v);
    v.dtype = dt;
    v.ndim = ndim;
    memcpy(v.shape, shape, (size_t)ndim * sizeof *shape);
    fc_contiguous_strides(ndim, shape, v.strides);
    v.data = (void *)data;
    FcTensor *t;
    OK(fc_from_view(ctx, &v, fc_cpu(), &t, &err));
    return t;
}

static FcTensor *from_f32(const float *data, int ndim, const int64_t *shape)
{
    return from_data(FC_FLOAT32, data, ndim, shape);
}

static FcTensor *from_i64(const int64_t *data, int ndim, const int64_t *shape)
{
    return from_data(FC_INT64, data, ndim, shape);
}

static FcTensor *scalar_f(double f)
{
    FcTensor *t;
    OK(fc_scalar(ctx, FC_FLOAT64, (FcScalar){.f = f}, true, &t, &err));
    return t;
}

static char *text_of(FcTensor *t)
{
    FcView v;
    OK(fc_host_view(ctx, t, &v, &err));
    char *s;
    OK(fc_format_tensor(&v, NULL, &s, &err));
    return s;
}

#define CHECK_TEXT(t, want) do { char *s_ = text_of(t); ck_assert_str_eq(s_, want); free(s_); } while (0)

/* where(a > 0, a*b + c, c*0.5).sum(): one kernel, three loads, one reduction. */
START_TEST(test_fused_chain_is_one_kernel)
{
    enum { N = 1000 };
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
    double want = 0;
    for (int i = 0; i < N; i++) {
        a[i] = (float)((i % 7) - 3);
        b[i] = (float)(i % 5);
        c[i] = (float)(i % 3);
        want += a[i] > 0 ? (double)(a[i] * b[i] + c[i]) : (double)(c[i] * 0.5f);
    }
    int64_t n = N;
    FcTensor *A = from_f32(a, 1, &n), *B = from_f32(b, 1, &n), *C = from_f32(c, 1, &n);
    FcTensor *zero = scalar_f(0), *half = scalar_f(0.5);
    FcTensor *gt, *ab, *abc, *ch, *w, *s;
    nkernels = 0;
    OK(fc_binary(ctx, FC_OP_GT, A, zero, &gt, &err));
    OK(fc_binary(ctx, FC_OP_MUL, A, B, &ab, &err));
    OK(fc_binary(ctx, FC_OP_ADD, ab, C, &abc, &err));
    OK(fc_binary(ctx, FC_OP_MUL, C, half, &ch, &err));
    OK(fc_where(ctx, gt, abc, ch, &w, &err));
    OK(fc_reduce(ctx, FC_OP_SUM, w, 0, false, &s, &err));
    ck_assert_int_eq(nkernels, 0);     /* nothing runs before a materialisation */
    OK(fc_realize(ctx, s, &err));
    ck_assert_int_eq(nkernels, 1);
    ck_assert_ptr_nonnull(strstr(last_kernel, "kernel: 1 loops [1000r]"));
    ck_assert_ptr_nonnull(strstr(last_kernel, "32-bit"));
    FcScalar v;
    OK(fc_item(ctx, s, &v, &err));
    ck_assert_double_eq_tol(v.f, want, 1e-3);
    /* The intermediates were never stored. */
    ck_assert(fc_tensor_is_lazy(w) && fc_tensor_is_lazy(abc));
    FcTensor *all[] = {A, B, C, zero, half, gt, ab, abc, ch, w, s};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        fc_tensor_release(all[i]);
    free(a);
    free(b);
    free(c);
}
END_TEST

/* (a * b + k).sum(1) of two 4 x 6 float32 tensors: a lazy 4-vector. */
static FcTensor *mul_add_sum(FcTensor *a, FcTensor *b, double k)
{
    FcTensor *ab, *kk = scalar_f(k), *abk, *r;
    OK(fc_binary(ctx, FC_OP_MUL, a, b, &ab, &err));
    OK(fc_binary(ctx, FC_OP_ADD, ab, kk, &abk, &err));
    OK(fc_reduce(ctx, FC_OP_SUM, abk, 1u << 1, false, &r, &err));
    fc_tensor_release(ab);
    fc_tensor_release(kk);
    fc_tensor_release(abk);
    return r;
}

/* r (a 4-vector, realised) against (a * b + k).sum(1) computed here, a and b 4 x 6 with
 * element (i, j) at a[i * as0 + j * as1] (exact: small integers). */
static void check_mul_add_sum(FcTensor *r, const float *a, int64_t as0, int64_t as1, const float *b, double k)
{
    FcView v;
    OK(fc_host_view(ctx, r, &v, &err));
    ck_assert_int_eq(v.ndim, 1);
    for (int i = 0; i < 4; i++) {
        double want = 0;
        for (int j = 0; j < 6; j++)
            want += a[i * as0 + j * as1] * b[i * 6 + j] + k;
        ck_assert_double_eq(((const float *)v.data)[i * v.strides[0] + v.offset], want);
    }
}

/* The kernel cache: a DAG scheduled again with other storages or another floating-point
 * constant runs the kernel kept from the first, on the new storages' and constant's values; one
 * that differs in loading one storage twice, in a load's strides or in the output's offset is
 * scheduled afresh; the least recently used kernels go when the cache is full; FC_SCHED_CACHE
 * turns it off. */
START_TEST(test_kernel_cache)
{
    float a1[24], b1[24], a2[24], b2[24];
    for (int i = 0; i < 24; i++) {
        a1[i] = (float)(i % 5);
        b1[i] = (float)(i % 3 - 1);
        a2[i] = (float)(i % 7 - 2);
        b2[i] = (float)(i % 4);
    }
    int64_t shape[2] = {4, 6};
    FcTensor *A1 = from_f32(a1, 2, shape), *B1 = from_f32(b1, 2, shape);
    FcTensor *A2 = from_f32(a2, 2, shape), *B2 = from_f32(b2, 2, shape);
    int64_t tshape[2] = {6, 4}, vshape[2] = {4, 6}, vstrides[2] = {1, 4};
    FcTensor *T = from_f32(a1, 2, tshape), *Tv;      /* a1 as 6 x 4, viewed as its transpose */
    OK(fc_as_strided(ctx, T, 2, vshape, vstrides, 0, &Tv, &err));
    FcKernelCacheStats s0 = fc_kcache_stats(ctx);
    FcTensor *r = mul_add_sum(A1, B1, 2.0);
    OK(fc_realize(ctx, r, &err));
    check_mul_add_sum(r, a1, 6, 1, b1, 2.0);
    fc_tensor_release(r);
    FcKernelCacheStats s1 = fc_kcache_stats(ctx);
    ck_assert_int_eq(s1.kept, s0.kept + 1);
    ck_assert_uint_eq(s1.hits, s0.hits);
    /* other storages, same structure: the kept kernel, the new values */
    r = mul_add_sum(A2, B2, 2.0);
    OK(fc_realize(ctx, r, &err));
    check_mul_add_sum(r, a2, 6, 1, b2, 2.0);
    fc_tensor_release(r);
    ck_assert_uint_eq(fc_kcache_stats(ctx).hits, s1.hits + 1);
    ck_assert_int_eq(fc_kcache_stats(ctx).kept, s1.kept);
    /* another constant: the kept kernel, the new constant */
    r = mul_add_sum(A2, B2, 3.0);
    OK(fc_realize(ctx, r, &err));
    check_mul_add_sum(r, a2, 6, 1, b2, 3.0);
    fc_tensor_release(r);
    ck_assert_uint_eq(fc_kcache_stats(ctx).hits, s1.hits + 2);
    /* one storage loaded twice; a transposed view (other strides): afresh */
    r = mul_add_sum(B2, B2, 2.0);
    OK(fc_realize(ctx, r, &err));
    check_mul_add_sum(r, b2, 6, 1, b2, 2.0);
    fc_tensor_release(r);
    r = mul_add_sum(Tv, B1, 2.0);
    OK(fc_realize(ctx, r, &err));
    check_mul_add_sum(r, a1, 1, 4, b1, 2.0);
    fc_tensor_release(r);
    ck_assert_uint_eq(fc_kcache_stats(ctx).hits, s1.hits + 2);
    ck_assert_int_eq(fc_kcache_stats(ctx).kept, s1.kept + 2);
    /* into a given output: its offset is part of the key */
    int64_t eight = 8, four = 4, one = 1;
    FcTensor *D, *D0, *D1;
    OK(fc_empty(ctx, FC_FLOAT32, fc_cpu(), 1, &eight, NULL, &D, &err));
    OK(fc_as_strided(ctx, D, 1, &four, &one, 0, &D0, &err));
    OK(fc_as_strided(ctx, D, 1, &four, &one, 4, &D1, &err));
    FcKernelCacheStats s2 = fc_kcache_stats(ctx);
    r = mul_add_sum(A1, B1, 2.0);
    OK(fc_assign(ctx, D0, r, &err));
    fc_tensor_release(r);
    r = mul_add_sum(A2, B2, 2.0);
    OK(fc_assign(ctx, D1, r, &err));
    fc_tensor_release(r);
    r = mul_add_sum(A2, B1, 2.0);
    OK(fc_assign(ctx, D0, r, &err));
    fc_tensor_release(r);
    ck_assert_int_eq(fc_kcache_stats(ctx).kept, s2.kept + 2);
    ck_assert_uint_eq(fc_kcache_stats(ctx).hits, s2.hits + 1);
    check_mul_add_sum(D0, a2, 6, 1, b1, 2.0);
    check_mul_add_sum(D1, a2, 6, 1, b2, 2.0);
    /* full (forty outputs at other offsets): the least recently used go, and what runs is
     * still right */
    int64_t n160 = 160;
    FcTensor *E, *Ek[40];
    OK(fc_empty(ctx, FC_FLOAT32, fc_cpu(), 1, &n160, NULL, &E, &err));
    for (int k = 0; k < 40; k++) {
        OK(fc_as_strided(ctx, E, 1, &four, &one, 4 * k, &Ek[k], &err));
        r = mul_add_sum(A1, B2, 10.0 + k);
        OK(fc_assign(ctx, Ek[k], r, &err));
        check_mul_add_sum(Ek[k], a1, 6, 1, b2, 10.0 + k);
        fc_tensor_release(r);
    }
    FcKernelCacheStats s3 = fc_kcache_stats(ctx);
    ck_assert_int_le(s3.kept, 32);
    r = mul_add_sum(A1, B2, 49.0);      /* the last kept */
    OK(fc_assign(ctx, Ek[39], r, &err));
    check_mul_add_sum(Ek[39], a1, 6, 1, b2, 49.0);
    fc_tensor_release(r);
    ck_assert_uint_eq(fc_kcache_stats(ctx).hits, s3.hits + 1);
    for (int k = 0; k < 40; k++)
        fc_tensor_release(Ek[k]);
    fc_tensor_release(E);
    /* off */
    ctx->sched_off |= FC_SCHED_CACHE;
    r = mul_add_sum(A1, B2, 49.0);
    OK(fc_realize(ctx, r, &err));
    check_mul_add_sum(r, a1, 6, 1, b2, 49.0);
    fc_tensor_release(r);
    ck_assert_uint_eq(fc_kcache_stats(ctx).hits, s3.hits + 1);
    FcTensor *all[] = {A1, B1, A2, B2, T, Tv, D, D0, D1};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        fc_tensor_release(all[i]);
}
END_TEST

/* t's 8 float32 values against want (exact). */
static void check_f32_8(FcTensor *t, const float *want)
{
    FcView v;
    OK(fc_host_view(ctx, t, &v, &err));
    for (int i = 0; i < 8; i++)
        ck_assert_float_eq(((const float *)v.data)[v.offset + i * v.strides[0]], want[i]);
}

/* Scattered stores are kept too: scatter_add_ again with other storages, other indices (the
 * duplicates elsewhere) and other values runs only kept kernels, with the right sums; a store
 * into a tensor that its value also reads, after one that does not, is right. */
START_TEST(test_kernel_cache_scatter)
{
    int64_t n8 = 8, n6 = 6;
    float zeros[8] = {0};
    const int64_t i1[6] = {0, 3, 3, 7, 1, 3}, i2[6] = {5, 5, 2, 0, 5, 6};
    const float v1[6] = {1, 2, 4, 8, 16, 32}, v2[6] = {0.5f, 1, 2, 3, 4, 5};
    FcKernelCacheStats s0 = {0};
    int k0 = 0;
    float want[8];
    for (int round = 0; round < 3; round++) {
        if (round == 1) {
            s0 = fc_kcache_stats(ctx);
            k0 = nkernels;
        }
        const int64_t *ix = round == 1 ? i2 : i1;
        const float *vv = round == 1 ? v2 : v1;
        FcTensor *t = from_f32(zeros, 1, &n8), *index = from_i64(ix, 1, &n6), *src = from_f32(vv, 1, &n6);
        OK(fc_scatter(ctx, t, 0, index, src, false, true, &err));
        memset(want, 0, sizeof want);
        for (int i = 0; i < 6; i++)
            want[ix[i]] += vv[i];
        check_f32_8(t, want);
        fc_tensor_release(t);
        fc_tensor_release(index);
        fc_tensor_release(src);
    }
    /* every kernel of the second and third rounds a kept one */
    FcKernelCacheStats s1 = fc_kcache_stats(ctx);
    ck_assert_int_gt(nkernels, k0);
    ck_assert_uint_eq(s1.hits - s0.hits, (uint64_t)(nkernels - k0));
    ck_assert_int_eq(s1.kept, s0.kept);
    /* into D from A, then into D from D itself: two keys, both right */
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    FcTensor *A = from_f32(a, 1, &n8), *D = from_f32(zeros, 1, &n8), *two = scalar_f(2), *r;
    OK(fc_binary(ctx, FC_OP_MUL, A, two, &r, &err));
    OK(fc_assign(ctx, D, r, &err));
    fc_tensor_release(r);
    OK(fc_binary(ctx, FC_OP_MUL, D, two, &r, &err));
    OK(fc_assign(ctx, D, r, &err));
    fc_tensor_release(r);
    for (int i = 0; i < 8; i++)
        want[i] = 4 * a[i];
    check_f32_8(D, want);
    fc_tensor_release(A);
    fc_tensor_release(D);
    fc_tensor_release(two);
}
END_TEST

/* where(a > t, a * k1 + k2, a) of a 1000-element float32 tensor, realised and checked against the
 * same in float (exact for the values used: multiples of a quarter in a small range). */
static void check_params(FcTensor *a, const float *av, double t, double k1, double k2)
{
    FcTensor *tt = scalar_f(t), *t1 = scalar_f(k1), *t2 = scalar_f(k2), *gt, *m, *mk, *r;
    OK(fc_binary(ctx, FC_OP_GT, a, tt, &gt, &err));
    OK(fc_binary(ctx, FC_OP_MUL, a, t1, &m, &err));
    OK(fc_binary(ctx, FC_OP_ADD, m, t2, &mk, &err));
    OK(fc_where(ctx, gt, mk, a, &r, &err));
    OK(fc_realize(ctx, r, &err));
    FcView v;
    OK(fc_host_view(ctx, r, &v, &err));
    for (int i = 0; i < 1000; i++) {
        float want = av[i] > (float)t ? av[i] * (float)k1 + (float)k2 : av[i];
        ck_assert_float_eq(((const float *)v.data)[v.offset + i * v.strides[0]], want);
    }
    FcTensor *all[] = {tt, t1, t2, gt, m, mk, r};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        fc_tensor_release(all[i]);
}

/* Floating-point constants are the kept kernel's parameters: a hundred fresh ones make one kept
 * kernel that computes with each; a constant the scheduler reads (compared with) is in the key by
 * value; two constants that are equal share a register, so equal ones are another kernel, and
 * unequal ones again are not computed with the shared one. */
START_TEST(test_kernel_cache_params)
{
    float av[1000];
    for (int i = 0; i < 1000; i++)
        av[i] = (float)(i % 37) * 0.25f - 4.0f;
    int64_t n = 1000;
    FcTensor *A = from_f32(av, 1, &n);
    FcKernelCacheStats s0 = fc_kcache_stats(ctx);
    for (int k = 0; k < 100; k++)
        check_params(A, av, 0.5, 1.0 + k * 0.25, -2.0 - k * 0.5);
    FcKernelCacheStats s1 = fc_kcache_stats(ctx);
    ck_assert_int_eq(s1.kept, s0.kept + 1);
    ck_assert_uint_eq(s1.hits, s0.hits + 99);
    check_params(A, av, 1.5, 3.0, -1.0);        /* another threshold: another kernel */
    ck_assert_int_eq(fc_kcache_stats(ctx).kept, s1.kept + 1);
    check_params(A, av, 0.5, 2.0, 2.0);         /* equal: one register, another kernel */
    ck_assert_int_eq(fc_kcache_stats(ctx).kept, s1.kept + 2);
    check_params(A, av, 0.5, 2.5, -3.0);        /* the first kernel again */
    ck_assert_int_eq(fc_kcache_stats(ctx).kept, s1.kept + 2);
    ck_assert_uint_eq(fc_kcache_stats(ctx).hits, s1.hits + 1);
    fc_tensor_release(A);
}
END_TEST

/* (x[i, 1:] * 2 + 1).sum() with a lazy index i = j - 1: nothing runs when indexing (a lazy index
 * is checked by the gather that reads through it); the index, the gather, the math and the sum
 * are one kernel whose load indexes by a register. */
START_TEST(test_gather_fuses)
{
    float d[12];
    for (int k = 0; k < 12; k++)
        d[k] = (float)k;
    int64_t shape[2] = {3, 4}, three = 3, jd[3] = {3, 1, 0};    /* i = [2, 0, -1] */
    FcTensor *x = from_f32(d, 2, shape), *j = from_i64(jd, 1, &three), *one, *i, *g, *m, *a, *s;
    OK(fc_scalar(ctx, FC_INT64, (FcScalar){.i = 1}, true, &one, &err));
    OK(fc_binary(ctx, FC_OP_SUB, j, one, &i, &err));
    FcIndex ix[2] = {{.kind = FC_IX_TENSOR, .t = i}, {.kind = FC_IX_SLICE, .start = 1, .has_start = true, .step = 1}};
    nkernels = 0;
    OK(fc_index(ctx, x, 2, ix, &g, &err));
    ck_assert_int_eq(nkernels, 0);
    ck_assert(fc_tensor_is_lazy(g));
    FcTensor *two = scalar_f(2), *onef = scalar_f(1);
    OK(fc_binary(ctx, FC_OP_MUL, g, two, &m, &err));
    OK(fc_binary(ctx, FC_OP_ADD, m, onef, &a, &err));
    OK(fc_reduce(ctx, FC_OP_SUM, a, 0, false, &s, &err));
    OK(fc_realize(ctx, s, &err));
    ck_assert_int_eq(nkernels, 1);
    ck_assert_ptr_nonnull(strstr(last_kernel, "(wrap)"));
    FcScalar v;
    OK(fc_item(ctx, s, &v, &err));
    /* rows 2, 0, 2 (= -1), columns 1..3: 2 * (9+10+11 + 1+2+3 + 9+10+11) + 9 */
    ck_assert_double_eq(v.f, 2 * 66 + 9);
    FcTensor *all[] = {x, j, one, i, g, two, onef, m, a, s};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        fc_tensor_release(all[k]);
}
END_TEST

/* An index out of range is found when the index is made, not when the gather runs. An index that
 * reads the tensor written is read before the write: t[t] = -1 with t a cycle longer than a chunk
 * sets every element (read while writing, the second chunk would meet -1 and wrap elsewhere). */
START_TEST(test_index_checks_and_self_indices)
{
    enum { N = 600 };
    int64_t n = N, d[N], bad[1] = {N}, one = 1;
    for (int k = 0; k < N; k++)
        d[k] = (k + 1) % N;
    FcTensor *t = from_i64(d, 1, &n), *b = from_i64(bad, 1, &one), *g = NULL, *minus, *head, *s;
    FcIndex ix = {.kind = FC_IX_TENSOR, .t = b};
    ck_assert_int_eq(fc_index(ctx, t, 1, &ix, &g, &err), FC_ERR_INDEX);
    ck_assert_str_eq(err.msg, "index 600 is out of bounds for dimension 0 with size 600");
    ck_assert_ptr_null(g);
    OK(fc_scalar(ctx, FC_INT64, (FcScalar){.i = -1}, true, &minus, &err));
    FcIndex self = {.kind = FC_IX_TENSOR, .t = t};
    FcIndex first = {.kind = FC_IX_SLICE, .stop = 2, .has_stop = true, .step = 1};
    OK(fc_index(ctx, t, 1, &first, &head, &err));          /* t[:2], a view */
    OK(fc_index_put(ctx, t, 1, &self, minus, false, &err));
    OK(fc_reduce(ctx, FC_OP_SUM, t, 0, false, &s, &err));
    FcScalar v;
    OK(fc_item(ctx, s, &v, &err));
    ck_assert_int_eq(v.i, -N);
    CHECK_TEXT(head, "tensor([-1, -1])");
    FcTensor *all[] = {t, b, minus, head, s};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        fc_tensor_release(all[k]);
}
END_TEST

/* Dense contiguous data of any rank runs as one loop. */
START_TEST(test_dense_loops_merge)
{
    float d[24];
    for (int i = 0; i < 24; i++)
        d[i] = (float)i;
    int64_t shape[3] = {2, 3, 4};
    FcTensor *x = from_f32(d, 3, shape), *y;
    OK(fc_unary(ctx, FC_OP_NEG, x, &y, &err));
    OK(fc_realize(ctx, y, &err));
    ck_assert_ptr_nonnull(strstr(last_kernel, "kernel: 1 loops [24]"));
    fc_tensor_release(x);
    fc_tensor_release(y);
}
END_TEST

/* A pointwise result keeps its input's dim order (TensorIterator), here a transpose. */
START_TEST(test_layout_follows_input)
{
    float d[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    FcTensor *x = from_f32(d, 2, shape), *t, *y;
    int64_t tshape[2] = {3, 2}, tstrides[2] = {1, 3};
    OK(fc_as_strided(ctx, x, 2, tshape, tstrides, 0, &t, &err));
    OK(fc_unary(ctx, FC_OP_NEG, t, &y, &err));
    OK(fc_realize(ctx, y, &err));
    ck_assert_int_eq(y->strides[0], 1);
    ck_assert_int_eq(y->strides[1], 3);
    CHECK_TEXT(y, "tensor([[-1., -4.],\n        [-2., -5.],\n        [-3., -6.]])");
    /* ... and a reduction result is C-contiguous. */
    FcTensor *s;
    OK(fc_reduce(ctx, FC_OP_SUM, t, 1, true, &s, &err));
    OK(fc_realize(ctx, s, &err));
    ck_assert_int_eq(s->strides[0], 2);
    ck_assert_int_eq(s->strides[1], 1);
    CHECK_TEXT(s, "tensor([[ 6., 15.]])");
    fc_tensor_release(x);
    fc_tensor_release(t);
    fc_tensor_release(y);
    fc_tensor_release(s);
}
END_TEST

/* A lazy tensor computed before a write sees the values from before the write. */
START_TEST(test_lazy_reader_realised_before_write)
{
    float d[3] = {1, 2, 3};
    int64_t n = 3;
    FcTensor *x = from_f32(d, 1, &n), *two = scalar_f(2), *y, *fill;
    OK(fc_binary(ctx, FC_OP_MUL, x, two, &y, &err));
    ck_assert(fc_tensor_is_lazy(y));
    OK(fc_full(ctx, FC_FLOAT32, fc_cpu(), 1, &n, (FcScalar){.f = 100}, &fill, &err));
    OK(fc_assign(ctx, x, fill, &err));
    ck_assert(!fc_tensor_is_lazy(y));
    CHECK_TEXT(y, "tensor([2., 4., 6.])");
    CHECK_TEXT(x, "tensor([100., 100., 100.])");
    FcTensor *all[] = {x, two, y, fill};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        fc_tensor_release(all[i]);
}
END_TEST

/* t[1:] = t[:-1] reads all of the source before writing (PyTorch's result). */
START_TEST(test_overlapping_assign)
{
    float d[5] = {1, 2, 3, 4, 5};
    int64_t n = 5, n4 = 4, one = 1;
    FcTensor *x = from_f32(d, 1, &n), *hi, *lo;
    OK(fc_as_strided(ctx, x, 1, &n4, &one, 1, &hi, &err));
    OK(fc_as_strided(ctx, x, 1, &n4, &one, 0, &lo, &err));
    OK(fc_assign(ctx, hi, lo, &err));
    CHECK_TEXT(x, "tensor([1., 1., 2., 3., 4.])");
    fc_tensor_release(x);
    fc_tensor_release(hi);
    fc_tensor_release(lo);
}
END_TEST

/* Broadcasting from the right, with the promotion of an int tensor and a float scalar. */
START_TEST(test_broadcast_and_promotion)
{
    int64_t col[3] = {0, 1, 2};
    FcView v;
    memset(&v, 0, sizeof v);
    v.dtype = FC_INT64;
    v.ndim = 2;
    v.shape[0] = 3;
    v.shape[1] = 1;
    v.strides[0] = 1;
    v.strides[1] = 1;
    v.data = col;
    FcTensor *c, *r, *sum, *half;
    OK(fc_from_view(ctx, &v, fc_cpu(), &c, &err));
    OK(fc_iota(ctx, 4, &r, &err));
    OK(fc_binary(ctx, FC_OP_ADD, c, r, &sum, &err));
    ck_assert_int_eq(sum->dtype, FC_INT64);
    ck_assert_int_eq(sum->ndim, 2);
    CHECK_TEXT(sum, "tensor([[0, 1, 2, 3],\n        [1, 2, 3, 4],\n        [2, 3, 4, 5]])");
    FcTensor *p = scalar_f(0.5);
    OK(fc_binary(ctx, FC_OP_MUL, sum, p, &half, &err));
    ck_assert_int_eq(half->dtype, FC_FLOAT32);
    CHECK_TEXT(half, "tensor([[0.0000, 0.5000, 1.0000, 1.5000],\n        [0.5000, 1.0000, 1.5000, 2.0000],\n"
                     "        [1.0000, 1.5000, 2.0000, 2.5000]])");
    FcTensor *bad;
    int64_t five = 5;
    FcTensor *f5;
    OK(fc_full(ctx, FC_FLOAT32, fc_cpu(), 1, &five, (FcScalar){.f = 1}, &f5, &err));
    ck_assert_int_eq(fc_binary(ctx, FC_OP_ADD, sum, f5, &bad, &err), FC_ERR_RUNTIME);
    ck_assert_str_eq(err.msg, "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1");
    FcTensor *all[] = {c, r, sum, half, p, f5};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        fc_tensor_release(all[i]);
}
END_TEST

/* A reduction over the outer dim of a contiguous matrix accumulates whole rows (vertical),
 * and the result equals the other order's. */
START_TEST(test_reduce_outer_and_inner)
{
    float d[12];
    for (int i = 0; i < 12; i++)
        d[i] = (float)i;
    int64_t shape[2] = {3, 4};
    FcTensor *x = from_f32(d, 2, shape), *s0, *s1, *am;
    OK(fc_reduce(ctx, FC_OP_SUM, x, 1, false, &s0, &err));
    CHECK_TEXT(s0, "tensor([12., 15., 18., 21.])");
    ck_assert_ptr_nonnull(strstr(last_kernel, "kernel: 2 loops [3r, 4]"));
    OK(fc_reduce(ctx, FC_OP_SUM, x, 2, false, &s1, &err));
    CHECK_TEXT(s1, "tensor([ 6., 22., 38.])");
    ck_assert_ptr_nonnull(strstr(last_kernel, "kernel: 2 loops [3, 4r]"));
    OK(fc_reduce(ctx, FC_OP_ARGMAX, x, 1, false, &am, &err));
    CHECK_TEXT(am, "tensor([2, 2, 2, 2])");
    fc_tensor_release(x);
    fc_tensor_release(s0);
    fc_tensor_release(s1);
    fc_tensor_release(am);
}
END_TEST

/* A shared sub-expression is computed once per chunk, not once per use. */
START_TEST(test_shared_subexpression_emitted_once)
{
    float d[4] = {1, 2, 3, 4};
    int64_t n = 4;
    FcTensor *x = from_f32(d, 1, &n), *e, *y;
    OK(fc_unary(ctx, FC_OP_EXP, x, &e, &err));
    OK(fc_binary(ctx, FC_OP_MUL, e, e, &y, &err));
    OK(fc_realize(ctx, y, &err));
    const char *first = strstr(last_kernel, "= exp");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_null(strstr(first + 1, "= exp"));
    fc_tensor_release(x);
    fc_tensor_release(e);
    fc_tensor_release(y);
}
END_TEST

/* ---- reads composed with a lazy read ---- */

/* Occurrences of needle in hay. */
static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* x (5 x 6, 0..29), i = [4, 0, -1, 2] (t = x[i] is 4 x 6), j = [1, -1, 0], all stored. */
static FcTensor *cx, *ci, *cj, *ct;

static void compose_setup(void)
{
    setup();
    float d[30];
    for (int k = 0; k < 30; k++)
        d[k] = (float)k;
    int64_t shape[2] = {5, 6}, four = 4, three = 3, id[4] = {4, 0, -1, 2}, jd[3] = {1, -1, 0};
    cx = from_f32(d, 2, shape);
    ci = from_i64(id, 1, &four);
    cj = from_i64(jd, 1, &three);
    FcIndex ix = {.kind = FC_IX_TENSOR, .t = ci};
    OK(fc_index(ctx, cx, 1, &ix, &ct, &err));
    nkernels = 0;
}

static void compose_teardown(void)
{
    FcTensor *all[] = {cx, ci, cj, ct};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        fc_tensor_release(all[k]);
    teardown();
}

static FcIndex tix(FcTensor *t) { return (FcIndex){.kind = FC_IX_TENSOR, .t = t}; }
static FcIndex six(int64_t start, int64_t stop, int64_t step)
{
    return (FcIndex){.kind = FC_IX_SLICE, .start = start, .stop = stop, .step = step, .has_start = true,
                     .has_stop = true};
}

/* x[i][j], x[i][j] * 2 + 1 and x[i][j][k] are each one kernel that gathers from x through i
 * (x[i] is never stored); a composed gather wraps negative indices at every level. */
START_TEST(test_gather_of_gather_fuses)
{
    FcIndex ij = tix(cj);
    FcTensor *y, *m, *a, *two = scalar_f(2), *one = scalar_f(1), *y3, *k;
    OK(fc_index(ctx, ct, 1, &ij, &y, &err));
    ck_assert_int_eq(nkernels, 0);
    ck_assert(fc_tensor_is_lazy(y) && y->node->op == FC_OP_LOAD && y->ndim == 2 && y->shape[0] == 3);
    CHECK_TEXT(y, "tensor([[ 0.,  1.,  2.,  3.,  4.,  5.],\n        [12., 13., 14., 15., 16., 17.],\n"
                  "        [24., 25., 26., 27., 28., 29.]])");
    ck_assert_int_eq(nkernels, 1);
    ck_assert_int_eq(count_of(last_kernel, "= load"), 3);          /* j, i through j, x through i */
    ck_assert_int_eq(count_of(last_kernel, "(wrap)"), 2);
    ck_assert(fc_tensor_is_lazy(ct));
    fc_tensor_release(y);
    OK(fc_index(ctx, ct, 1, &ij, &y, &err));
    OK(fc_binary(ctx, FC_OP_MUL, y, two, &m, &err));
    OK(fc_binary(ctx, FC_OP_ADD, m, one, &a, &err));
    CHECK_TEXT(a, "tensor([[ 1.,  3.,  5.,  7.,  9., 11.],\n        [25., 27., 29., 31., 33., 35.],\n"
                  "        [49., 51., 53., 55., 57., 59.]])");
    ck_assert_int_eq(nkernels, 2);
    ck_assert(fc_tensor_is_lazy(y) && fc_tensor_is_lazy(ct));
    int64_t two_n = 2, kd[2] = {-1, 0};
    k = from_i64(kd, 1, &two_n);
    nkernels = 2;       /* not counting k's copy */
    FcIndex ik = tix(k);
    OK(fc_index(ctx, y, 1, &ik, &y3, &err));
    CHECK_TEXT(y3, "tensor([[24., 25., 26., 27., 28., 29.],\n        [ 0.,  1.,  2.,  3.,  4.,  5.]])");
    ck_assert_int_eq(nkernels, 3);
    ck_assert_int_eq(count_of(last_kernel, "(wrap)"), 3);
    FcTensor *all[] = {y, m, a, two, one, y3, k};
    for (size_t q = 0; q < sizeof all / sizeof *all; q++)
        fc_tensor_release(all[q]);
}
END_TEST

/* Slices and ints composed with a gather move offsets and strides: the loads stay affine (no
 * gather register but the index tensors' own). */
START_TEST(test_composed_slices_stay_affine)
{
    FcTensor *y;
    /* x[i][1:4:2, j]: rows i[1], i[3]: i is read from element 1 by steps of 2 */
    FcIndex a[2] = {six(1, 4, 2), tix(cj)};
    OK(fc_index(ctx, ct, 2, a, &y, &err));
    CHECK_TEXT(y, "tensor([[ 1.,  5.,  0.],\n        [13., 17., 12.]])");
    ck_assert_int_eq(nkernels, 1);
    ck_assert_ptr_nonnull(strstr(last_kernel, "[1 +2*i0 +0*i1] : int64"));
    ck_assert_int_eq(count_of(last_kernel, "(wrap)"), 2);           /* x by i's values and by j's */
    fc_tensor_release(y);
    /* x[i][j, 1:5:3]: x's columns from 1 by steps of 3 */
    FcIndex b[2] = {tix(cj), six(1, 5, 3)};
    OK(fc_index(ctx, ct, 2, b, &y, &err));
    CHECK_TEXT(y, "tensor([[ 1.,  4.],\n        [13., 16.],\n        [25., 28.]])");
    ck_assert_ptr_nonnull(strstr(last_kernel, " +3*i1 +6*r"));
    ck_assert_int_eq(count_of(last_kernel, "(wrap)"), 2);           /* i by j, x by i */
    fc_tensor_release(y);
    /* x[i][j, 2]: a constant offset */
    FcIndex c[2] = {tix(cj), {.kind = FC_IX_INT, .i = -4}};
    OK(fc_index(ctx, ct, 2, c, &y, &err));
    CHECK_TEXT(y, "tensor([ 2., 14., 26.])");
    ck_assert_ptr_nonnull(strstr(last_kernel, "[2 +0*i0 +6*r"));
    fc_tensor_release(y);
    ck_assert_int_eq(nkernels, 3);
    ck_assert(fc_tensor_is_lazy(ct));
    /* A basic read as a value (fc_index_read) composes too: x[i][:, 1:3], one kernel. */
    FcIndex d[2] = {{.kind = FC_IX_SLICE, .step = 1}, six(1, 3, 1)};
    OK(fc_index_read(ctx, ct, 2, d, &y, &err));
    ck_assert(fc_tensor_is_lazy(y) && fc_tensor_is_lazy(ct));
    CHECK_TEXT(y, "tensor([[25., 26.],\n        [ 1.,  2.],\n        [25., 26.],\n        [13., 14.]])");
    ck_assert_int_eq(nkernels, 4);
    ck_assert_int_eq(count_of(last_kernel, "(wrap)"), 1);
    ck_assert_ptr_nonnull(strstr(last_kernel, "[1 +0*i0 +1*i1 +6*r"));
    fc_tensor_release(y);
    /* ... while fc_index gives PyTorch's view of x[i], which realises it. */
    OK(fc_index(ctx, ct, 2, d, &y, &err));
    ck_assert(!fc_tensor_is_lazy(ct) && !fc_tensor_is_lazy(y) && y->storage == ct->storage);
    ck_assert_int_eq(y->strides[0], 6);
    fc_tensor_release(y);
    /* A lazy plain read of a view of x (a LOAD without gathers), then gathered: one kernel, one
     * gather (j's), x read by steps of 2 along its columns. */
    FcTensor *p;
    FcIndex e[2] = {{.kind = FC_IX_SLICE, .start = 1, .has_start = true, .step = 1}, {.kind = FC_IX_SLICE, .step = 2}};
    OK(fc_index_read(ctx, cx, 2, e, &p, &err));
    ck_assert(fc_tensor_is_lazy(p) && p->node->op == FC_OP_LOAD);
    FcIndex f = tix(cj);
    nkernels = 0;
    OK(fc_index(ctx, p, 1, &f, &y, &err));
    CHECK_TEXT(y, "tensor([[12., 14., 16.],\n        [24., 26., 28.],\n        [ 6.,  8., 10.]])");
    ck_assert_int_eq(nkernels, 1);
    ck_assert_int_eq(count_of(last_kernel, "(wrap)"), 1);
    ck_assert_ptr_nonnull(strstr(last_kernel, "[6 +0*i0 +2*i1 +6*r"));
    fc_tensor_release(y);
    fc_tensor_release(p);
}
END_TEST

/* Out of range: the new index is checked on the host against x[i]'s shape (its position among the
 * new index tensors named). A composed load keeps the executor's checks: poking a bad value into
 * an index after the read was made (behind the write checks) is caught, naming the dim and size
 * of the read that index belongs to. */
START_TEST(test_composed_index_errors)
{
    int64_t one = 1, three = 3, bad4[1] = {4}, badm7[1] = {-7}, bad6[1] = {6};
    FcTensor *b4 = from_i64(bad4, 1, &one), *bm7 = from_i64(badm7, 1, &one), *b6 = from_i64(bad6, 1, &one), *y = NULL;
    nkernels = 0;
    FcIndex a = tix(b4);
    ck_assert_int_eq(fc_index(ctx, ct, 1, &a, &y, &err), FC_ERR_INDEX);
    ck_assert_str_eq(err.msg, "index 4 is out of bounds for dimension 0 with size 4");
    FcIndex b[2] = {{.kind = FC_IX_SLICE, .step = 1}, tix(bm7)};
    ck_assert_int_eq(fc_index(ctx, ct, 2, b, &y, &err), FC_ERR_INDEX);
    ck_assert_str_eq(err.msg, "index -7 is out of bounds for dimension 0 with size 6");
    FcIndex c[2] = {tix(cj), tix(b6)};
    ck_assert_int_eq(fc_index(ctx, ct, 2, c, &y, &err), FC_ERR_INDEX);
    ck_assert_str_eq(err.msg, "index 6 is out of bounds for dimension 1 with size 6");
    ck_assert_ptr_null(y);
    ck_assert_int_eq(nkernels, 0);
    ck_assert(fc_tensor_is_lazy(ct));
    /* The executor: j's values index x[i]'s 4 rows (dimension 0 of the second read) ... */
    int64_t jd[3] = {1, -1, 0}, id[4] = {4, 0, -1, 2}, four = 4, kd[3] = {0, 2, 5};
    FcTensor *j = from_i64(jd, 1, &three), *i = from_i64(id, 1, &four), *k = from_i64(kd, 1, &three), *t;
    FcIndex ij = tix(j);
    OK(fc_index(ctx, ct, 1, &ij, &y, &err));
    ((int64_t *)j->storage->data)[0] = 7;
    ck_assert_int_eq(fc_realize(ctx, y, &err), FC_ERR_INDEX);
    ck_assert_str_eq(err.msg, "index 7 is out of bounds for dimension 0 with size 4");
    fc_tensor_release(y);
    /* ... i's values x's 5 rows (dimension 0 of the first) ... */
    FcIndex ii = tix(i), jj = tix(cj);
    OK(fc_index(ctx, cx, 1, &ii, &t, &err));
    OK(fc_index(ctx, t, 1, &jj, &y, &err));
    ((int64_t *)i->storage->data)[1] = 9;      /* cj[0] = 1 picks it */
    ck_assert_int_eq(fc_realize(ctx, y, &err), FC_ERR_INDEX);
    ck_assert_str_eq(err.msg, "index 9 is out of bounds for dimension 0 with size 5");
    fc_tensor_release(y);
    /* ... and the second of two new index tensors x[i]'s 6 columns (dimension 1). */
    FcIndex jk[2] = {tix(cj), tix(k)};
    OK(fc_index(ctx, ct, 2, jk, &y, &err));
    ((int64_t *)k->storage->data)[2] = -7;
    ck_assert_int_eq(fc_realize(ctx, y, &err), FC_ERR_INDEX);
    ck_assert_str_eq(err.msg, "index -7 is out of bounds for dimension 1 with size 6");
    FcTensor *all[] = {b4, bm7, b6, y, j, i, k, t};
    for (size_t q = 0; q < sizeof all / sizeof *all; q++)
        fc_tensor_release(all[q]);
}
END_TEST

Suite *fcdim_core_suite(void)
{
    Suite *s = suite_create("fcdim_core");
    TCase *tc = tcase_create("schedule");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_fused_chain_is_one_kernel);
    tcase_add_test(tc, test_gather_fuses);
    tcase_add_test(tc, test_index_checks_and_self_indices);
    tcase_add_test(tc, test_dense_loops_merge);
    tcase_add_test(tc, test_layout_follows_input);
    tcase_add_test(tc, test_lazy_reader_realised_before_write);
    tcase_add_test(tc, test_overlapping_assign);
    tcase_add_test(tc, test_broadcast_and_promotion);
    tcase_add_test(tc, test_reduce_outer_and_inner);
    tcase_add_test(tc, test_shared_subexpression_emitted_once);
    tcase_add_test(tc, test_kernel_cache);
    tcase_add_test(tc, test_kernel_cache_params);
    tcase_add_test(tc, test_kernel_cache_scatter);
    suite_add_tcase(s, tc);
    TCase *cc = tcase_create("compose");
    tcase_add_checked_fixture(cc, compose_setup, compose_teardown);
    tcase_add_test(cc, test_gather_of_gather_fuses);
    tcase_add_test(cc, test_composed_slices_stay_affine);
    tcase_add_test(cc, test_composed_index_errors);
    suite_add_tcase(s, cc);
    return s;
}
