/* test_cudnn.c — the cuDNN path of the CUDA backend (backend/cuda/cuda_cudnn.c), without a GPU.
 *
 * What runs everywhere: loading with the reason kept when it fails (a wrong TDL_CUDNN_PATH, a
 * library that is not cuDNN, TDL_CUDNN=0), the plan cache's key (what must and must not tell two
 * convolutions apart), and tests/cudnn_header_check.c's verdict (it is compiled against the
 * installed cudnn_graph.h where there is one: a declaration that differs fails the build).
 * What runs where libcudnn.so.9 loads (no GPU needed): the operation graph of a convolution
 * forward, finalised by cuDNN, for a set of shapes (NCHW and NHWC strides, groups, depthwise,
 * dilation, stride > kernel, asymmetric padding, 1x1, float64, the mask head's), of transposed
 * convolutions (cuDNN's backward data: the mask head's, groups with output_padding), of every
 * shape's gradients as autograd asks them (backward data and filter; for the transposed ones a
 * forward and a backward filter with the roles swapped), of max and average pools
 * (resample forward) and batch norm in inference and training (norm forward), in NCHW and NHWC,
 * float32 and float64; malformed ones refused with cuDNN's reason; and the fallback when cuDNN
 * loads but has no device (cudnnCreate fails): every operation is declined with the reason, the
 * caller runs the generated kernels.
 * The results on a GPU are checked by the nn_cudnn suite (test_nn.c) under make check-gpu. */
#include "tests.h"

#include "backend.h"
#include "cuda/cuda_cudnn.h"
#include "cuda/cuda_internal.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cuDNN's table, or NULL after saying why on stderr (the tests that need it pass). */
static const CudnnLib *lib_or_skip(const char *test)
{
    const char *why = NULL;
    const CudnnLib *L = fc_cudnn_lib(&why);
    if (!L)
        fprintf(stderr, "%s: cuDNN not loaded (%s): skipped\n", test, why);
    return L;
}

START_TEST(loads_or_says_why)
{
    const char *why = NULL;
    const CudnnLib *L = fc_cudnn_lib(&why);
    if (L) {
        ck_assert_uint_ge(L->version, 90000);
        ck_assert_uint_lt(L->version, 100000);
        ck_assert(L->path[0]);
        fprintf(stderr, "cudnn: %s, version %zu\n", L->path, L->version);
    } else {
        ck_assert(why && why[0]);
        fprintf(stderr, "cudnn: not loaded: %s\n", why);
    }
    /* the outcome is kept: asking again gives the same */
    const char *why2 = NULL;
    ck_assert_ptr_eq(fc_cudnn_lib(&why2), L);
    if (!L)
        ck_assert_str_eq(why2, why);
}
END_TEST

START_TEST(turned_off)
{
    CudnnLib L;
    void *dl = (void *)1;
    char why[256];
    ck_assert(!fc_cudnn_open("0", NULL, &L, &dl, why, sizeof why));
    ck_assert_str_eq(why, "turned off (TDL_CUDNN=0)");
    ck_assert_ptr_null(dl);
    ck_assert(!fc_cudnn_open("off", "/usr/lib", &L, &dl, why, sizeof why));
    ck_assert_str_eq(why, "turned off (TDL_CUDNN=off)");
}
END_TEST

START_TEST(wrong_path)
{
    CudnnLib L;
    void *dl;
    char why[512];
    ck_assert(!fc_cudnn_open(NULL, "/nonexistent/libcudnn.so.9", &L, &dl, why, sizeof why));
    ck_assert_str_eq(why, "cuDNN not found at TDL_CUDNN_PATH=/nonexistent/libcudnn.so.9 (neither the library nor a "
                          "folder holding libcudnn.so.9)");
    /* a library that is not cuDNN */
    ck_assert(!fc_cudnn_open("1", "libz.so.1", &L, &dl, why, sizeof why));
    ck_assert_str_eq(why, "libz.so.1 is not cuDNN 9 (it has no cudnnGetVersion)");
    ck_assert_ptr_null(dl);
}
END_TEST

/* TDL_CUDNN_PATH may name the folder: the one the search found is given back by name. */
START_TEST(path_is_a_folder)
{
    const CudnnLib *found = lib_or_skip("path_is_a_folder");
    if (!found)
        return;
    Dl_info info;
    ck_assert(dladdr((void *)found->GetVersion, &info) && info.dli_fname);
    char file[512], why[512];
    snprintf(file, sizeof file, "%s", info.dli_fname);
    const char *dir = dirname(file);
    CudnnLib L;
    void *dl;
    ck_assert_msg(fc_cudnn_open(NULL, dir, &L, &dl, why, sizeof why), "%s: %s", dir, why);
    ck_assert_uint_eq(L.version, found->version);
    char want[600];
    snprintf(want, sizeof want, "%s/libcudnn.so.9", dir);
    ck_assert_str_eq(L.path, want);
    dlclose(dl);
}
END_TEST

START_TEST(header_declarations)
{
    const char *dir = cudnn_header_checked();
    if (dir)
        fprintf(stderr, "cuda_cudnn.h's declarations compiled against %s/cudnn_graph.h\n", dir);
    else
        fprintf(stderr, "header_declarations: no cudnn_graph.h at build time: not checked\n");
}
END_TEST

/* ---- convolutions ---- */

typedef struct ConvShape {
    const char *name;
    FcDType dt;
    int64_t n, c, h, w, k, r, s;
    int64_t groups, pre[2], post[2], stride[2], dil[2];
    bool nhwc;
    bool transposed;            /* conv_transpose2d: c input channels, k output channels */
    int64_t outpad;             /* its output_padding */
} ConvShape;

static const ConvShape shapes[] = {
    {"3x3 pad 1", FC_FLOAT32, 2, 8, 10, 10, 16, 3, 3, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false, false, 0},
    {"3x3 pad 1 NHWC", FC_FLOAT32, 2, 8, 10, 10, 16, 3, 3, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, false, 0},
    {"groups 2", FC_FLOAT32, 1, 8, 7, 9, 6, 3, 2, 2, {0, 1}, {0, 1}, {1, 1}, {1, 1}, false, false, 0},
    {"depthwise", FC_FLOAT32, 3, 12, 8, 8, 12, 3, 3, 12, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, false, 0},
    {"dilation 2", FC_FLOAT32, 1, 4, 12, 12, 4, 3, 3, 1, {2, 2}, {2, 2}, {1, 1}, {2, 2}, false, false, 0},
    {"stride > kernel", FC_FLOAT32, 2, 3, 11, 11, 5, 2, 2, 1, {0, 0}, {0, 0}, {3, 3}, {1, 1}, false, false, 0},
    {"same, even kernel", FC_FLOAT32, 1, 2, 6, 6, 3, 4, 2, 1, {1, 0}, {2, 1}, {1, 1}, {1, 1}, false, false, 0},
    {"1x1", FC_FLOAT32, 4, 16, 5, 5, 8, 1, 1, 1, {0, 0}, {0, 0}, {1, 1}, {1, 1}, true, false, 0},
    {"float64", FC_FLOAT64, 2, 4, 9, 9, 6, 3, 3, 2, {1, 1}, {1, 1}, {2, 2}, {1, 1}, false, false, 0},
    {"mask head", FC_FLOAT32, 64, 256, 14, 14, 256, 3, 3, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, false, 0},
    {"transposed, mask head", FC_FLOAT32, 64, 256, 14, 14, 256, 2, 2, 1, {0, 0}, {0, 0}, {2, 2}, {1, 1}, true, true, 0},
    {"transposed, groups, output_padding", FC_FLOAT64, 2, 4, 5, 6, 6, 3, 3, 2, {1, 1}, {1, 1}, {2, 2}, {1, 1}, false,
     true, 1},
    {"transposed, dilation", FC_FLOAT32, 1, 3, 7, 7, 2, 3, 2, 1, {1, 1}, {1, 1}, {1, 1}, {2, 2}, false, true, 0},
};

static void dense(const int64_t shape[4], bool nhwc, int64_t st[4])
{
    if (nhwc) {
        st[1] = 1;
        st[3] = shape[1];
        st[2] = shape[3] * st[3];
        st[0] = shape[2] * st[2];
    } else {
        st[3] = 1;
        st[2] = shape[3];
        st[1] = shape[2] * st[2];
        st[0] = shape[1] * st[1];
    }
}

/* The FcConv of shape sh, its data at made-up 256-byte aligned addresses (no memory is read). */
static void make_conv(const ConvShape *sh, FcConv *c)
{
    memset(c, 0, sizeof *c);
    c->dtype = sh->dt;
    int64_t xs[4] = {sh->n, sh->c, sh->h, sh->w}, ws[4] = {sh->k, sh->c / sh->groups, sh->r, sh->s};
    if (sh->transposed) {
        ws[0] = sh->c;
        ws[1] = sh->k / sh->groups;
    }
    memcpy(c->x_shape, xs, sizeof xs);
    memcpy(c->w_shape, ws, sizeof ws);
    c->transposed = sh->transposed;
    c->y_shape[0] = sh->n;
    c->y_shape[1] = sh->k;
    for (int i = 0; i < 2; i++) {
        c->pad_pre[i] = sh->pre[i];
        c->pad_post[i] = sh->post[i];
        c->stride[i] = sh->stride[i];
        c->dilation[i] = sh->dil[i];
        int64_t span = sh->dil[i] * ((i ? sh->s : sh->r) - 1) + 1;
        c->y_shape[2 + i] = sh->transposed ? (xs[2 + i] - 1) * sh->stride[i] - sh->pre[i] - sh->post[i] + span + sh->outpad
                                           : (xs[2 + i] + sh->pre[i] + sh->post[i] - span) / sh->stride[i] + 1;
    }
    c->groups = sh->groups;
    dense(c->x_shape, sh->nhwc, c->x_strides);
    dense(c->w_shape, sh->nhwc, c->w_strides);
    dense(c->y_shape, sh->nhwc, c->y_strides);
    c->x = (const void *)(uintptr_t)0x10000;
    c->w = (const void *)(uintptr_t)0x20000;
    c->y = (void *)(uintptr_t)0x30000;
}

/* c's graph, finalised by cuDNN; the roles it has must be exactly those in want (a bit per
 * CDN_T_*), with an auxiliary descriptor (convolution, resample) where aux. */
static void check_graph(const CudnnLib *L, const FcConv *c, const char *name, unsigned want, bool aux)
{
    CudnnKey key;
    fc_cudnn_key(c, &key);
    CudnnGraph g;
    FcError err;
    FcStatus st = fc_cudnn_graph(L, &key, NULL, &g, &err);
    ck_assert_msg(st == FC_OK, "%s: %s", name, err.msg);
    ck_assert_ptr_nonnull(g.graph);
    ck_assert_ptr_nonnull(g.op);
    ck_assert_msg((g.aux != NULL) == aux, "%s: the auxiliary descriptor", name);
    for (int r = 0; r < CDN_T_COUNT; r++)
        ck_assert_msg((g.t[r] != NULL) == ((want >> r & 1) != 0), "%s: role %d", name, r);
    fc_cudnn_graph_free(L, &g);
    ck_assert_ptr_null(g.graph);
    ck_assert_ptr_null(g.op);
    ck_assert_ptr_null(g.t[CDN_T_X]);
}

enum { CONV_ROLES = 1u << CDN_T_X | 1u << CDN_T_W | 1u << CDN_T_Y };

START_TEST(graph_for_shape)
{
    const CudnnLib *L = lib_or_skip("graph_for_shape");
    if (!L)
        return;
    FcConv c;
    make_conv(&shapes[_i], &c);
    check_graph(L, &c, shapes[_i].name, CONV_ROLES, true);
}
END_TEST

/* The gradients' graphs of every shape, as autograd asks them of the library (fc_conv_grad_call,
 * fcdim/conv.c): conv2d's backward data and backward filter; conv_transpose2d's input gradient as
 * the forward convolution of its result's gradient, its weight gradient as the backward filter with
 * the roles swapped (dy the input, x the output's place). NCHW and NHWC, float32 and float64,
 * groups, depthwise, dilation, stride > kernel, asymmetric padding, output_padding; deterministic
 * engines asked for (the key's flags). */
START_TEST(backward_graph_for_shape)
{
    const CudnnLib *L = lib_or_skip("backward_graph_for_shape");
    if (!L)
        return;
    const ConvShape *sh = &shapes[_i / 2];
    int which = _i % 2;
    FcConv f, c;
    make_conv(sh, &f);
    int64_t gs[4];
    dense(which ? f.w_shape : f.x_shape, sh->nhwc, gs);
    fc_conv_grad_call(&f, which, (const void *)(uintptr_t)0x40000, f.y_strides, (void *)(uintptr_t)0x50000, gs, &c);
    FcConvOp want = which ? FC_CONV_BACKWARD_FILTER : sh->transposed ? FC_CONV_FORWARD : FC_CONV_BACKWARD_DATA;
    ck_assert_int_eq(c.op, want);
    ck_assert(!c.transposed);
    CudnnKey key;
    fc_cudnn_key(&c, &key);
    ck_assert(key.flags & FC_CONV_DETERMINISTIC);
    /* the convolution's input and output: conv_transpose2d's result (dy) and input (x) */
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(c.x_shape[i], sh->transposed ? f.y_shape[i] : f.x_shape[i]);
        ck_assert_int_eq(c.y_shape[i], sh->transposed ? f.x_shape[i] : f.y_shape[i]);
        ck_assert_int_eq(c.w_shape[i], f.w_shape[i]);
    }
    char name[160];
    snprintf(name, sizeof name, "%s, %s gradient", sh->name, which ? "weight" : "input");
    check_graph(L, &c, name, CONV_ROLES, true);
}
END_TEST

/* c's graph is refused, with the failing call (want) and cuDNN's reason, and nothing kept. */
static void refused_by(const CudnnLib *L, const FcConv *c, const char *want)
{
    CudnnKey key;
    fc_cudnn_key(c, &key);
    CudnnGraph g;
    FcError err;
    ck_assert_int_eq(fc_cudnn_graph(L, &key, NULL, &g, &err), FC_ERR_RUNTIME);
    ck_assert_msg(strncmp(err.msg, "cuDNN: CUDNN_STATUS_", 20) == 0, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
    ck_assert_ptr_null(g.graph);
    ck_assert_ptr_null(g.op);
    ck_assert_ptr_null(g.t[CDN_T_X]);
}

/* An output whose shape is not the convolution's is refused, with the call and cuDNN's reason. */
START_TEST(graph_refuses_wrong_output)
{
    const CudnnLib *L = lib_or_skip("graph_refuses_wrong_output");
    if (!L)
        return;
    FcConv c;
    make_conv(&shapes[0], &c);
    c.y_shape[2] += 1;
    dense(c.y_shape, false, c.y_strides);
    refused_by(L, &c, "(cudnnBackendFinalize(convolution forward))");
}
END_TEST

/* A backward filter whose weight gradient has the wrong shape, and a backward data whose input
 * gradient has, are refused by the operation's finalisation. */
START_TEST(backward_graph_refuses_wrong_shape)
{
    const CudnnLib *L = lib_or_skip("backward_graph_refuses_wrong_shape");
    if (!L)
        return;
    FcConv c;
    make_conv(&shapes[0], &c);
    c.op = FC_CONV_BACKWARD_FILTER;
    c.w_shape[2] = 2;
    dense(c.w_shape, false, c.w_strides);
    refused_by(L, &c, "(cudnnBackendFinalize(convolution backward filter))");
    make_conv(&shapes[1], &c);
    c.op = FC_CONV_BACKWARD_DATA;
    c.x_shape[1] = 3;
    dense(c.x_shape, true, c.x_strides);
    refused_by(L, &c, "(cudnnBackendFinalize(convolution backward data))");
}
END_TEST

/* ---- pooling and batch norm ---- */

typedef struct PoolShape {
    const char *name;
    FcConvOp op;
    bool include_pad;
    FcDType dt;
    int64_t n, c, h, w, kh, kw, stride[2], pad[2];
    bool nhwc;
} PoolShape;

static const PoolShape pools[] = {
    {"max 2x2 stride 2", FC_POOL_MAX, false, FC_FLOAT32, 2, 8, 10, 10, 2, 2, {2, 2}, {0, 0}, false},
    {"max 3x3 stride 2 pad 1 NHWC", FC_POOL_MAX, false, FC_FLOAT32, 2, 8, 11, 9, 3, 3, {2, 2}, {1, 1}, true},
    {"max 3x2 float64", FC_POOL_MAX, false, FC_FLOAT64, 1, 3, 7, 6, 3, 2, {1, 2}, {1, 0}, false},
    {"max stride > kernel, float64 NHWC", FC_POOL_MAX, false, FC_FLOAT64, 3, 4, 9, 9, 2, 2, {3, 3}, {0, 0}, true},
    {"avg count_include_pad", FC_POOL_AVG, true, FC_FLOAT32, 2, 5, 8, 8, 3, 3, {2, 2}, {1, 1}, false},
    {"avg excluding the padding NHWC", FC_POOL_AVG, false, FC_FLOAT32, 2, 5, 8, 8, 3, 3, {2, 2}, {1, 1}, true},
    {"avg float64 NHWC", FC_POOL_AVG, true, FC_FLOAT64, 1, 6, 6, 6, 2, 2, {2, 2}, {0, 0}, true},
    {"avg excluding the padding float64", FC_POOL_AVG, false, FC_FLOAT64, 2, 3, 5, 7, 3, 3, {1, 1}, {1, 1}, false},
};

/* The FcConv of pooling sh (PyTorch's floor output size), its data at made-up aligned addresses. */
static void make_pool(const PoolShape *sh, FcConv *c)
{
    memset(c, 0, sizeof *c);
    c->op = sh->op;
    c->count_include_pad = sh->include_pad;
    c->dtype = sh->dt;
    int64_t xs[4] = {sh->n, sh->c, sh->h, sh->w};
    memcpy(c->x_shape, xs, sizeof xs);
    c->y_shape[0] = sh->n;
    c->y_shape[1] = sh->c;
    c->window[0] = sh->kh;
    c->window[1] = sh->kw;
    for (int i = 0; i < 2; i++) {
        c->pad_pre[i] = c->pad_post[i] = sh->pad[i];
        c->stride[i] = sh->stride[i];
        c->dilation[i] = 1;
        c->y_shape[2 + i] = (xs[2 + i] + 2 * sh->pad[i] - c->window[i]) / sh->stride[i] + 1;
    }
    dense(c->x_shape, sh->nhwc, c->x_strides);
    dense(c->y_shape, sh->nhwc, c->y_strides);
    c->x = (const void *)(uintptr_t)0x10000;
    c->y = (void *)(uintptr_t)0x30000;
}

enum { POOL_ROLES = 1u << CDN_T_X | 1u << CDN_T_Y };

START_TEST(pool_graph_for_shape)
{
    const CudnnLib *L = lib_or_skip("pool_graph_for_shape");
    if (!L)
        return;
    FcConv c;
    make_pool(&pools[_i], &c);
    check_graph(L, &c, pools[_i].name, POOL_ROLES, true);
}
END_TEST

/* batch_norm of an (n, c, h, w) input: i's bits are training, NHWC, float64. */
static void make_norm(int i, FcConv *c)
{
    memset(c, 0, sizeof *c);
    c->op = FC_BATCH_NORM;
    c->training = i & 1;
    bool nhwc = i & 2;
    c->dtype = i & 4 ? FC_FLOAT64 : FC_FLOAT32;
    int64_t xs[4] = {4, 6, 5, 7};
    memcpy(c->x_shape, xs, sizeof xs);
    memcpy(c->y_shape, xs, sizeof xs);
    dense(c->x_shape, nhwc, c->x_strides);
    dense(c->y_shape, nhwc, c->y_strides);
    c->eps = 1e-5;
    c->momentum = 0.1;
    c->x = (const void *)(uintptr_t)0x10000;
    c->y = (void *)(uintptr_t)0x30000;
    c->scale = (const void *)(uintptr_t)0x40000;
    c->bias = (const void *)(uintptr_t)0x40100;
    c->run_mean = (const void *)(uintptr_t)0x40200;
    c->run_var = (const void *)(uintptr_t)0x40300;
    c->run_invstd = (const void *)(uintptr_t)0x40400;
    c->save_mean = (void *)(uintptr_t)0x40500;
    c->save_invstd = (void *)(uintptr_t)0x40600;
    c->new_mean = (void *)(uintptr_t)0x40700;
    c->new_var = (void *)(uintptr_t)0x40800;
}

START_TEST(norm_graph)
{
    const CudnnLib *L = lib_or_skip("norm_graph");
    if (!L)
        return;
    FcConv c;
    make_norm(_i, &c);
    char name[100];
    snprintf(name, sizeof name, "batch_norm %s, %s, %s", _i & 1 ? "training" : "evaluation", _i & 2 ? "NHWC" : "NCHW",
             _i & 4 ? "float64" : "float32");
    unsigned want = 1u << CDN_T_X | 1u << CDN_T_Y | 1u << CDN_T_SCALE | 1u << CDN_T_BIAS | 1u << CDN_T_MEAN |
                    1u << CDN_T_INVSTD;
    if (c.training)
        want |= 1u << CDN_T_EPS | 1u << CDN_T_FACTOR | 1u << CDN_T_RUN_MEAN | 1u << CDN_T_RUN_VAR |
                1u << CDN_T_NEW_MEAN | 1u << CDN_T_NEW_VAR;
    check_graph(L, &c, name, want, false);
}
END_TEST

/* A pooling whose output is not the window's, and a batch norm whose output is not its input's
 * shape, are refused by cuDNN. */
START_TEST(pool_norm_graph_refuses_wrong_output)
{
    const CudnnLib *L = lib_or_skip("pool_norm_graph_refuses_wrong_output");
    if (!L)
        return;
    FcConv c;
    make_pool(&pools[1], &c);
    c.y_shape[3] += 2;
    dense(c.y_shape, true, c.y_strides);
    refused_by(L, &c, "(cudnnBackendFinalize(resample forward))");
    make_norm(1, &c);
    c.y_shape[1] = 5;
    dense(c.y_shape, false, c.y_strides);
    refused_by(L, &c, "(cudnnBackendFinalize(norm forward (training)))");
}
END_TEST

static bool same_key(const FcConv *a, const FcConv *b)
{
    CudnnKey ka, kb;
    fc_cudnn_key(a, &ka);
    fc_cudnn_key(b, &kb);
    return memcmp(&ka, &kb, sizeof ka) == 0;
}

/* What a cached plan may be reused for: the same geometry, dtype, options and alignments. */
START_TEST(plan_key)
{
    FcConv a, b;
    make_conv(&shapes[0], &a);
    make_conv(&shapes[0], &b);
    ck_assert(same_key(&a, &b));
    /* other addresses with the same alignment: the same plan */
    b.x = (const void *)(uintptr_t)0x90000;
    b.y = (void *)(uintptr_t)0x7770;
    ck_assert(same_key(&a, &b));
    /* a note is not part of it */
    snprintf(b.note, sizeof b.note, "anything");
    ck_assert(same_key(&a, &b));
    /* each of these is */
    make_conv(&shapes[0], &b);
    b.x = (const void *)(uintptr_t)0x10004;     /* 4-byte aligned only */
    ck_assert(!same_key(&a, &b));
    make_conv(&shapes[1], &b);                  /* the same shape in NHWC */
    ck_assert(!same_key(&a, &b));
    make_conv(&shapes[0], &b);
    b.flags = FC_CONV_DETERMINISTIC;
    ck_assert(!same_key(&a, &b));
    b.flags = FC_CONV_EXHAUSTIVE;
    ck_assert(!same_key(&a, &b));
    make_conv(&shapes[0], &b);
    b.stride[1] = 2;
    ck_assert(!same_key(&a, &b));
    make_conv(&shapes[0], &b);
    b.pad_post[0] = 0;
    ck_assert(!same_key(&a, &b));
    make_conv(&shapes[0], &b);
    b.dtype = FC_FLOAT64;
    ck_assert(!same_key(&a, &b));
    make_conv(&shapes[0], &b);
    b.dilation[0] = 2;
    ck_assert(!same_key(&a, &b));
    make_conv(&shapes[0], &b);
    b.transposed = true;
    ck_assert(!same_key(&a, &b));
    /* the operation: the forward, its backward data and backward filter on the same tensors */
    FcConv d, f;
    make_conv(&shapes[0], &d);
    d.op = FC_CONV_BACKWARD_DATA;
    make_conv(&shapes[0], &f);
    f.op = FC_CONV_BACKWARD_FILTER;
    ck_assert(!same_key(&a, &d));
    ck_assert(!same_key(&a, &f));
    ck_assert(!same_key(&d, &f));
    /* conv_transpose2d is a backward data, but not a gradient: it may take non-deterministic
     * engines, the gradients never */
    CudnnKey k;
    fc_cudnn_key(&d, &k);
    ck_assert_int_eq(k.op, FC_CONV_BACKWARD_DATA);
    ck_assert_int_eq(k.flags, FC_CONV_DETERMINISTIC);
    fc_cudnn_key(&f, &k);
    ck_assert_int_eq(k.flags, FC_CONV_DETERMINISTIC);
    fc_cudnn_key(&a, &k);
    ck_assert_int_eq(k.flags, 0);
    make_conv(&shapes[10], &b);
    fc_cudnn_key(&b, &k);
    ck_assert_int_eq(k.op, FC_CONV_BACKWARD_DATA);
    ck_assert_int_eq(k.flags, 0);
    /* pooling: max, average with and without the padding counted, window, stride */
    FcConv p, q;
    make_pool(&pools[4], &p);
    make_pool(&pools[4], &q);
    ck_assert(same_key(&p, &q));
    q.count_include_pad = false;
    ck_assert(!same_key(&p, &q));
    q.op = FC_POOL_MAX;
    ck_assert(!same_key(&p, &q));
    make_pool(&pools[4], &q);
    q.window[1] = 2;
    ck_assert(!same_key(&p, &q));
    make_pool(&pools[4], &q);
    q.stride[0] = 3;
    ck_assert(!same_key(&p, &q));
    /* a pool's key has no weight, a batch norm's no window: what is not theirs does not count */
    q = p;
    q.w = (const void *)(uintptr_t)0x1234;
    q.dilation[0] = 5;
    q.groups = 7;
    ck_assert(same_key(&p, &q));
    /* batch norm: training or not; epsilon and momentum are the variant pack's, not the plan's */
    FcConv m, n;
    make_norm(0, &m);
    make_norm(0, &n);
    ck_assert(same_key(&m, &n));
    n.eps = 1e-3;
    n.momentum = 0.3;
    ck_assert(same_key(&m, &n));
    n.training = true;
    ck_assert(!same_key(&m, &n));
    make_norm(2, &n);
    ck_assert(!same_key(&m, &n));
    make_norm(0, &n);
    n.run_invstd = (const void *)(uintptr_t)0x40404;   /* 4-byte aligned only */
    ck_assert(!same_key(&m, &n));
    /* the same x and y under each operation: never one key */
    FcConv ops[5];
    make_pool(&pools[0], &ops[0]);
    make_pool(&pools[0], &ops[1]);
    ops[1].op = FC_POOL_AVG;
    ops[1].count_include_pad = true;
    make_norm(0, &ops[2]);
    make_norm(1, &ops[3]);
    make_conv(&shapes[0], &ops[4]);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < i; j++)
            ck_assert_msg(!same_key(&ops[i], &ops[j]), "%d and %d", i, j);
}
END_TEST

/* cuDNN loads but there is no device: the convolution is declined with the reason (the caller
 * falls back), the state remembers it, and nothing leaks. Skipped where a driver loads (a GPU
 * machine: there the made-up addresses would be executed on). */
START_TEST(no_device_declines)
{
    const char *why = NULL;
    if (fc_cuda_driver(&why)) {
        fprintf(stderr, "no_device_declines: a CUDA driver is here: skipped\n");
        return;
    }
    FcBackend *be = fc_cpu_backend_new(1);
    ck_assert_ptr_nonnull(be);
    CudnnState *s = NULL;
    for (int round = 0; round < 12; round++) {
        /* each operation twice: the forward, backward data, backward filter, max pool, avg pool,
         * batch norm (training) */
        FcConv c;
        if (round / 2 == 5)
            make_norm(1, &c);
        else if (round / 2 == 3 || round / 2 == 4)
            make_pool(&pools[round / 2 == 3 ? 0 : 4], &c);
        else
            make_conv(&shapes[0], &c);
        if (round / 2 == 1 || round / 2 == 2)
            c.op = round / 2 == 1 ? FC_CONV_BACKWARD_DATA : FC_CONV_BACKWARD_FILTER;
        FcError err;
        ck_assert_int_eq(fc_cudnn_conv(&s, be, &c, &err), FC_OK);
        ck_assert(!c.taken);
        const char *lwhy = NULL;
        if (fc_cudnn_lib(&lwhy)) {
            ck_assert_msg(strncmp(c.note, "cuDNN 9.", 8) == 0 && strstr(c.note, " has no handle here: CUDNN_STATUS_"),
                          "%s", c.note);
            ck_assert_ptr_nonnull(s);
        } else {
            ck_assert_msg(strncmp(c.note, "cuDNN: ", 7) == 0, "%s", c.note);
        }
    }
    int plans, hits;
    fc_cudnn_cache_counts(s, &plans, &hits);
    ck_assert_int_eq(plans, 0);
    fc_cudnn_state_free(s);
    be->destroy(be);
}
END_TEST

Suite *cudnn_suite(void)
{
    Suite *s = suite_create("cudnn");
    TCase *tc = tcase_create("cudnn");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, loads_or_says_why);
    tcase_add_test(tc, turned_off);
    tcase_add_test(tc, wrong_path);
    tcase_add_test(tc, path_is_a_folder);
    tcase_add_test(tc, header_declarations);
    tcase_add_loop_test(tc, graph_for_shape, 0, (int)(sizeof shapes / sizeof shapes[0]));
    tcase_add_test(tc, graph_refuses_wrong_output);
    tcase_add_loop_test(tc, backward_graph_for_shape, 0, 2 * (int)(sizeof shapes / sizeof shapes[0]));
    tcase_add_test(tc, backward_graph_refuses_wrong_shape);
    tcase_add_loop_test(tc, pool_graph_for_shape, 0, (int)(sizeof pools / sizeof pools[0]));
    tcase_add_loop_test(tc, norm_graph, 0, 8);
    tcase_add_test(tc, pool_norm_graph_refuses_wrong_output);
    tcase_add_test(tc, plan_key);
    tcase_add_test(tc, no_device_declines);
    suite_add_tcase(s, tc);
    return s;
}
