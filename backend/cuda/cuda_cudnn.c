/* cuda_cudnn.c — convolutions (forward, and backward data / filter), pooling and batch norm on
 * CUDA through cuDNN 9's graph (backend) API: libcudnn.so.9 opened with dlopen at first use (no
 * link-time dependency, no cuDNN header at build time), the operation graph built from
 * descriptors by one builder whatever the operation (a table gives each operation's descriptor
 * and attributes: convolution forward, backward data, backward filter, resample forward for the
 * pools, norm forward for batch norm in inference and training), the engine chosen by cuDNN's
 * heuristics (mode A, then the fallback list; every candidate timed when TDL_CUDNN_BENCHMARK=1),
 * the execution plan cached per device by operation, shapes, strides, alignments, dtype and
 * options (one key, CudnnKey), the workspace taken from the CUDA backend's caching allocator.
 *
 * Engines are filtered on their numerical notes: never one that down-converts its inputs or
 * reduces in lower precision; for float32 none on tensor cores (TF32) unless TDL_CUDNN_TF32=1, so
 * that results match the CPU's to float32 rounding; none marked non-deterministic when the
 * program asked for deterministic algorithms (use_deterministic_algorithms(True)), nor ever for a
 * gradient (backward data or filter of a forward convolution: tdl's gradients are the same bits
 * every run). cuDNN says which engines are not deterministic (they accumulate with atomics: the
 * backward filter's and backward data's split-reduction engines) by that numerical note; its
 * behaviour notes (runtime compilation, int8x32 reordering, CUDA graphs, cuBLASLt) do not bear
 * on it.
 *
 * The handle is attached to graphs and plans through their HANDLE attributes, which cuDNN 9.19
 * marks deprecated in favour of a device-properties descriptor that older 9.x releases (the pip
 * wheels of the GPU machines) lack; every 9.x takes the handle.
 *
 * Gradients: autograd records a convolution computed here under requires_grad as a library op
 * and asks its backward of this file too (fcdim/conv.c's fc_conv_library_grad): conv2d's backward
 * data and backward filter; conv_transpose2d's input gradient as a forward convolution and its
 * weight gradient as a backward filter, the roles swapped (fc_conv_grad_call). A case declined
 * here falls back on differentiating the stdlib's tdl reference.
 *
 * THE EXECUTION PART HAS NOT RUN ON A GPU YET, the gradients included: the loader, the descriptors
 * and the graph are tested without one (tests/test_cudnn.c, every gradient's graph too), and the
 * gradients' wiring through autograd with a CPU stand-in for this file (tests/test_grad.c, case
 * library); heuristics, plans and execution need a device.
 * Depends on cuda_cudnn.h, cuda_internal.h (the driver table, to synchronise), libc and pthreads. */
#include "cuda_cudnn.h"
#include "cuda_internal.h"
#include "hash.h"
#include "mem.h"

#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- loading ---- */

static struct {
    pthread_once_t once;
    CudnnLib lib;
    bool ok;
    char why[768];
} cudnn = {.once = PTHREAD_ONCE_INIT};

static const char *const cudnn_names[] = {"libcudnn.so.9"};

/* Opens dir/libcudnn.so.9 (dir "": the loader's path); path records what was tried. */
static void *open_in(const char *dir, char *path, size_t cap)
{
    return fc_cuda_open_lib_in(dir, cudnn_names, 1, path, cap);
}

/* The first folder matching a glob pattern that holds libcudnn.so.9, opened. */
static void *open_glob(const char *pattern, char *path, size_t cap)
{
    glob_t g;
    void *lib = NULL;
    if (glob(pattern, 0, NULL, &g) != 0)
        return NULL;
    for (size_t i = 0; i < g.gl_pathc && !lib; i++)
        lib = open_in(g.gl_pathv[i], path, cap);
    globfree(&g);
    return lib;
}

/* The pip wheel's folder (nvidia-cudnn-cu13, -cu12: site-packages/nvidia/cudnn/lib) under the
 * usual Python prefixes, then the CUDA toolkit's. */
static void *search(char *path, size_t cap)
{
    void *lib = open_in("", path, cap);
    const char *env_prefix[] = {"VIRTUAL_ENV", "CONDA_PREFIX"};
    char pat[640];
    for (size_t i = 0; i < 2 && !lib; i++) {
        const char *p = getenv(env_prefix[i]);
        if (p && p[0]) {
            snprintf(pat, sizeof pat, "%s/lib/python3*/site-packages/nvidia/cudnn/lib", p);
            lib = open_glob(pat, path, cap);
        }
    }
    const char *home = getenv("HOME");
    if (!lib && home && home[0]) {
        snprintf(pat, sizeof pat, "%s/.local/lib/python3*/site-packages/nvidia/cudnn/lib", home);
        lib = open_glob(pat, path, cap);
    }
    const char *sys[] = {"/usr/local/lib/python3*/dist-packages/nvidia/cudnn/lib",
                         "/usr/local/lib/python3*/site-packages/nvidia/cudnn/lib",
                         "/usr/lib/python3/dist-packages/nvidia/cudnn/lib",
                         "/usr/lib/python3*/site-packages/nvidia/cudnn/lib"};
    for (size_t i = 0; i < sizeof sys / sizeof sys[0] && !lib; i++)
        lib = open_glob(sys[i], path, cap);
    if (!lib)
        lib = fc_cuda_open_lib_in_toolkit(cudnn_names, 1, path, cap);
    return lib;
}

bool fc_cudnn_open(const char *off, const char *path, CudnnLib *L, void **dl, char *why, size_t cap)
{
    memset(L, 0, sizeof *L);
    *dl = NULL;
    void *lib = NULL;
    if (off && (strcmp(off, "0") == 0 || strcmp(off, "off") == 0)) {
        snprintf(why, cap, "turned off (TDL_CUDNN=%s)", off);
        return false;
    }
    if (path && path[0]) {
        snprintf(L->path, sizeof L->path, "%s", path);
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            lib = open_in(path, L->path, sizeof L->path);   /* a folder */
        if (!lib) {
            snprintf(why, cap, "cuDNN not found at TDL_CUDNN_PATH=%s (neither the library nor a folder holding libcudnn.so.9)",
                     path);
            return false;
        }
    } else if (!(lib = search(L->path, sizeof L->path))) {
        snprintf(why, cap,
                 "libcudnn.so.9 not found (tried $TDL_CUDNN_PATH, the loader's path, the pip wheel's "
                 "site-packages/nvidia/cudnn/lib and $CUDA_HOME, $CUDA_PATH, /usr/local/cuda lib64 and lib)");
        return false;
    }
    bool ok = true;
#define TDL_CUDNN_SYM_(ret, name, params)                                                          \
    if (ok) {                                                                                      \
        void *p = dlsym(lib, "cudnn" #name);                                                       \
        if (!p) {                                                                                  \
            snprintf(why, cap, "%s is not cuDNN 9 (it has no cudnn" #name ")", L->path);           \
            ok = false;                                                                            \
        } else {                                                                                   \
            memcpy(&L->name, &p, sizeof p);                                                        \
        }                                                                                          \
    }
    TDL_CUDNN_FUNCS(TDL_CUDNN_SYM_)
#undef TDL_CUDNN_SYM_
    if (ok) {
        L->version = L->GetVersion();
        if (L->version < 90000 || L->version >= 100000) {
            snprintf(why, cap, "%s is cuDNN %zu.%zu, not 9.x", L->path, L->version / 10000, L->version / 100 % 100);
            ok = false;
        }
    }
    if (!ok) {
        dlclose(lib);
        return false;
    }
    *dl = lib;
    return true;
}

static void load_cudnn(void)
{
    void *dl;
    cudnn.ok = fc_cudnn_open(getenv("TDL_CUDNN"), getenv("TDL_CUDNN_PATH"), &cudnn.lib, &dl, cudnn.why, sizeof cudnn.why);
}

const CudnnLib *fc_cudnn_lib(const char **why)
{
    pthread_once(&cudnn.once, load_cudnn);
    if (!cudnn.ok) {
        *why = cudnn.why;
        return NULL;
    }
    return &cudnn.lib;
}

void fc_cudnn_status_str(const CudnnLib *L, CudnnStatus s, const char *call, char *buf, size_t cap)
{
    char last[256] = "";
    L->GetLastErrorString(last, sizeof last);
    snprintf(buf, cap, "%s (%s)%s%s", L->GetErrorString(s), call, last[0] ? ": " : "", last);
}

/* ---- descriptors ---- */

/* A sequence of descriptor calls that stops at the first failure and remembers it. */
typedef struct Bld {
    const CudnnLib *L;
    CudnnStatus s;
    char call[96];
} Bld;

static void failed(Bld *b, CudnnStatus s, const char *fn, const char *what)
{
    b->s = s;
    snprintf(b->call, sizeof b->call, "%s(%s)", fn, what);
}

static CudnnDesc make(Bld *b, CudnnDescType t, const char *what)
{
    CudnnDesc d = NULL;
    if (!b->s) {
        CudnnStatus s = b->L->BackendCreateDescriptor(t, &d);
        if (s) {
            failed(b, s, "cudnnBackendCreateDescriptor", what);
            d = NULL;
        }
    }
    return d;
}

static void set(Bld *b, CudnnDesc d, CudnnAttrName n, CudnnAttrType t, int64_t cnt, const void *v, const char *what)
{
    if (!b->s) {
        CudnnStatus s = b->L->BackendSetAttribute(d, n, t, cnt, v);
        if (s)
            failed(b, s, "cudnnBackendSetAttribute", what);
    }
}

static void fin(Bld *b, CudnnDesc d, const char *what)
{
    if (!b->s) {
        CudnnStatus s = b->L->BackendFinalize(d);
        if (s)
            failed(b, s, "cudnnBackendFinalize", what);
    }
}

static FcStatus bld_error(const Bld *b, FcError *err)
{
    char s[sizeof err->msg - 8];
    fc_cudnn_status_str(b->L, b->s, b->call, s, sizeof s);
    snprintf(err->msg, sizeof err->msg, "cuDNN: %s", s);
    return FC_ERR_RUNTIME;
}

static void destroy(const CudnnLib *L, CudnnDesc *d)
{
    if (*d)
        L->BackendDestroyDescriptor(*d);
    *d = NULL;
}

static int64_t alignment(const void *p, size_t elem)
{
    int64_t a = 16;
    while (a > (int64_t)elem && (uintptr_t)p % (uintptr_t)a)
        a /= 2;
    return a;
}

/* The pointers of c's tensors by role (CDN_T_*; NULL where the op has none). conv_transpose2d's
 * x and y are the forward's y and x. */
static void pointers(const FcConv *c, void *p[CDN_T_COUNT])
{
    memset(p, 0, CDN_T_COUNT * sizeof *p);
    p[CDN_T_X] = (void *)(c->transposed ? c->y : c->x);
    p[CDN_T_Y] = c->transposed ? (void *)c->x : c->y;
    if (c->op < FC_POOL_MAX)
        p[CDN_T_W] = (void *)c->w;
    if (c->op != FC_BATCH_NORM)
        return;
    p[CDN_T_SCALE] = (void *)c->scale;
    p[CDN_T_BIAS] = (void *)c->bias;
    if (c->training) {
        p[CDN_T_MEAN] = c->save_mean;
        p[CDN_T_INVSTD] = c->save_invstd;
        p[CDN_T_RUN_MEAN] = (void *)c->run_mean;
        p[CDN_T_RUN_VAR] = (void *)c->run_var;
        p[CDN_T_NEW_MEAN] = c->new_mean;
        p[CDN_T_NEW_VAR] = c->new_var;
    } else {
        p[CDN_T_MEAN] = (void *)c->run_mean;
        p[CDN_T_INVSTD] = (void *)c->run_invstd;
    }
}

void fc_cudnn_key(const FcConv *c, CudnnKey *k)
{
    memset(k, 0, sizeof *k);
    k->op = c->transposed ? FC_CONV_BACKWARD_DATA : (int32_t)c->op;
    k->dtype = c->dtype;
    k->flags = c->flags;
    /* a gradient's engines are deterministic ones (see cuda_cudnn.h); conv_transpose2d is a forward */
    if (!c->transposed && (c->op == FC_CONV_BACKWARD_DATA || c->op == FC_CONV_BACKWARD_FILTER))
        k->flags |= FC_CONV_DETERMINISTIC;
    if (c->op == FC_POOL_MAX)
        k->mode = CDN_RESAMPLE_MAXPOOL;
    else if (c->op == FC_POOL_AVG)
        k->mode = c->count_include_pad ? CDN_RESAMPLE_AVGPOOL_INCLUDE_PADDING : CDN_RESAMPLE_AVGPOOL_EXCLUDE_PADDING;
    else if (c->op == FC_BATCH_NORM)
        k->mode = c->training ? CDN_NORM_FWD_TRAINING : CDN_NORM_FWD_INFERENCE;
    const int64_t *xd = c->transposed ? c->y_shape : c->x_shape, *xs = c->transposed ? c->y_strides : c->x_strides;
    const int64_t *yd = c->transposed ? c->x_shape : c->y_shape, *ys = c->transposed ? c->x_strides : c->y_strides;
    for (int i = 0; i < 4; i++) {
        k->x_dim[i] = xd[i];
        k->x_str[i] = xs[i];
        k->y_dim[i] = yd[i];
        k->y_str[i] = ys[i];
        if (c->op < FC_POOL_MAX) {
            k->w_dim[i] = c->w_shape[i];
            k->w_str[i] = c->w_strides[i];
        }
    }
    if (c->op == FC_BATCH_NORM) {
        /* the per-channel tensors: (1, C, 1, 1), dense */
        int64_t d[4] = {1, c->x_shape[1], 1, 1}, st[4] = {c->x_shape[1], 1, 1, 1};
        memcpy(k->w_dim, d, sizeof d);
        memcpy(k->w_str, st, sizeof st);
    }
    if (c->op != FC_BATCH_NORM) {
        for (int i = 0; i < 2; i++) {
            k->pre[i] = c->pad_pre[i];
            k->post[i] = c->pad_post[i];
            k->stride[i] = c->stride[i];
        }
    }
    if (c->op < FC_POOL_MAX) {
        for (int i = 0; i < 2; i++)
            k->dil[i] = c->dilation[i];
        k->groups = c->groups;
    } else if (c->op != FC_BATCH_NORM) {
        k->window[0] = c->window[0];
        k->window[1] = c->window[1];
    }
    size_t es = fc_dtype_size(c->dtype);
    void *p[CDN_T_COUNT];
    pointers(c, p);
    k->align[0] = alignment(p[CDN_T_X], es);
    k->align[2] = alignment(p[CDN_T_Y], es);
    k->align[1] = c->op < FC_POOL_MAX ? alignment(p[CDN_T_W], es) : 0;
    for (int i = CDN_T_SCALE; i < CDN_T_COUNT; i++) {
        int64_t a = p[i] ? alignment(p[i], es) : 16;
        if (c->op == FC_BATCH_NORM && (k->align[1] == 0 || a < k->align[1]))
            k->align[1] = a;
    }
}

/* A tensor descriptor; by_value: a scalar passed from the host (batch norm's epsilon and factor). */
static CudnnDesc tensor(Bld *b, int role, int dt, const int64_t dim[4], const int64_t str[4], int64_t align,
                        bool by_value, const char *what)
{
    int64_t uid = role + 1;
    CudnnDesc t = make(b, CDN_BACKEND_TENSOR_DESCRIPTOR, what);
    set(b, t, CDN_ATTR_TENSOR_DATA_TYPE, CDN_TYPE_DATA_TYPE, 1, &dt, what);
    set(b, t, CDN_ATTR_TENSOR_DIMENSIONS, CDN_TYPE_INT64, 4, dim, what);
    set(b, t, CDN_ATTR_TENSOR_STRIDES, CDN_TYPE_INT64, 4, str, what);
    set(b, t, CDN_ATTR_TENSOR_UNIQUE_ID, CDN_TYPE_INT64, 1, &uid, what);
    set(b, t, CDN_ATTR_TENSOR_BYTE_ALIGNMENT, CDN_TYPE_INT64, 1, &align, what);
    if (by_value) {
        bool yes = true;
        set(b, t, CDN_ATTR_TENSOR_IS_BY_VALUE, CDN_TYPE_BOOLEAN, 1, &yes, what);
    }
    fin(b, t, what);
    return t;
}

void fc_cudnn_graph_free(const CudnnLib *L, CudnnGraph *g)
{
    destroy(L, &g->graph);
    destroy(L, &g->op);
    destroy(L, &g->aux);
    for (int i = 0; i < CDN_T_COUNT; i++)
        destroy(L, &g->t[i]);
}

static const char *const role_name[CDN_T_COUNT] = {
    "tensor x", "tensor w", "tensor y", "tensor scale", "tensor bias", "tensor mean", "tensor inv_variance",
    "tensor epsilon", "tensor exp_avg_factor", "tensor running_mean", "tensor running_var",
    "tensor new running_mean", "tensor new running_var"};

/* The operation descriptor's attribute for each role (0: the op has no such tensor), the type
 * and names of the operation. */
typedef struct OpAttrs {
    int desc;                   /* CDN_BACKEND_OPERATION_*_DESCRIPTOR */
    const char *name;
    int tensor[CDN_T_COUNT];
    int aux, alpha, beta;       /* the convolution or resample descriptor, alpha, beta (0: none) */
} OpAttrs;

static const OpAttrs conv_ops[3] = {
    {CDN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
     "convolution forward",
     {[CDN_T_X] = CDN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, [CDN_T_W] = CDN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      [CDN_T_Y] = CDN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y},
     CDN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CDN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
     CDN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
    {CDN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
     "convolution backward data",
     {[CDN_T_X] = CDN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, [CDN_T_W] = CDN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
      [CDN_T_Y] = CDN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY},
     CDN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CDN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
     CDN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
    {CDN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
     "convolution backward filter",
     {[CDN_T_X] = CDN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, [CDN_T_W] = CDN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
      [CDN_T_Y] = CDN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY},
     CDN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CDN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
     CDN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
};

/* The resample forward has alpha and beta attributes too, deprecated in 9.x and not set. */
static const OpAttrs pool_op = {CDN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR,
                                "resample forward",
                                {[CDN_T_X] = CDN_ATTR_OPERATION_RESAMPLE_FWD_XDESC,
                                 [CDN_T_Y] = CDN_ATTR_OPERATION_RESAMPLE_FWD_YDESC},
                                CDN_ATTR_OPERATION_RESAMPLE_FWD_DESC, 0, 0};

static const OpAttrs norm_ops[2] = {
    {CDN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR,
     "norm forward (inference)",
     {[CDN_T_X] = CDN_ATTR_OPERATION_NORM_FWD_XDESC, [CDN_T_Y] = CDN_ATTR_OPERATION_NORM_FWD_YDESC,
      [CDN_T_SCALE] = CDN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, [CDN_T_BIAS] = CDN_ATTR_OPERATION_NORM_FWD_BIAS_DESC,
      [CDN_T_MEAN] = CDN_ATTR_OPERATION_NORM_FWD_MEAN_DESC,
      [CDN_T_INVSTD] = CDN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC},
     0, 0, 0},
    {CDN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR,
     "norm forward (training)",
     {[CDN_T_X] = CDN_ATTR_OPERATION_NORM_FWD_XDESC, [CDN_T_Y] = CDN_ATTR_OPERATION_NORM_FWD_YDESC,
      [CDN_T_SCALE] = CDN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, [CDN_T_BIAS] = CDN_ATTR_OPERATION_NORM_FWD_BIAS_DESC,
      [CDN_T_MEAN] = CDN_ATTR_OPERATION_NORM_FWD_MEAN_DESC,
      [CDN_T_INVSTD] = CDN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC,
      [CDN_T_EPS] = CDN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC,
      [CDN_T_FACTOR] = CDN_ATTR_OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC,
      [CDN_T_RUN_MEAN] = CDN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC,
      [CDN_T_RUN_VAR] = CDN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC,
      [CDN_T_NEW_MEAN] = CDN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC,
      [CDN_T_NEW_VAR] = CDN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC},
     0, 0, 0},
};

static const OpAttrs *op_attrs(const CudnnKey *k)
{
    switch (k->op) {
    case FC_CONV_FORWARD:
    case FC_CONV_BACKWARD_DATA:
    case FC_CONV_BACKWARD_FILTER:
        return &conv_ops[k->op];
    case FC_POOL_MAX:
    case FC_POOL_AVG:
        return &pool_op;
    default:
        return &norm_ops[k->mode == CDN_NORM_FWD_TRAINING];
    }
}

/* The convolution descriptor of k (the same for its forward and both backwards). */
static CudnnDesc conv_desc(Bld *b, const CudnnKey *k, int dt)
{
    /* groups are implied by the shapes: x has groups * w's channels */
    CudnnDesc cv = make(b, CDN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution");
    int64_t nsp = 2;
    int mode = CDN_CROSS_CORRELATION;
    set(b, cv, CDN_ATTR_CONVOLUTION_SPATIAL_DIMS, CDN_TYPE_INT64, 1, &nsp, "convolution");
    set(b, cv, CDN_ATTR_CONVOLUTION_COMP_TYPE, CDN_TYPE_DATA_TYPE, 1, &dt, "convolution");
    set(b, cv, CDN_ATTR_CONVOLUTION_CONV_MODE, CDN_TYPE_CONVOLUTION_MODE, 1, &mode, "convolution");
    set(b, cv, CDN_ATTR_CONVOLUTION_PRE_PADDINGS, CDN_TYPE_INT64, 2, k->pre, "convolution");
    set(b, cv, CDN_ATTR_CONVOLUTION_POST_PADDINGS, CDN_TYPE_INT64, 2, k->post, "convolution");
    set(b, cv, CDN_ATTR_CONVOLUTION_DILATIONS, CDN_TYPE_INT64, 2, k->dil, "convolution");
    set(b, cv, CDN_ATTR_CONVOLUTION_FILTER_STRIDES, CDN_TYPE_INT64, 2, k->stride, "convolution");
    fin(b, cv, "convolution");
    return cv;
}

/* The resample (pooling) descriptor of k: a max pool pads with -inf and propagates NaN (as
 * PyTorch's max_pool2d), an average pool pads with 0. */
static CudnnDesc resample_desc(Bld *b, const CudnnKey *k, int dt)
{
    CudnnDesc rs = make(b, CDN_BACKEND_RESAMPLE_DESCRIPTOR, "resample");
    int64_t nsp = 2;
    int mode = k->mode, pad = k->mode == CDN_RESAMPLE_MAXPOOL ? CDN_NEG_INF_PAD : CDN_ZERO_PAD, nan = CDN_PROPAGATE_NAN;
    set(b, rs, CDN_ATTR_RESAMPLE_MODE, CDN_TYPE_RESAMPLE_MODE, 1, &mode, "resample");
    set(b, rs, CDN_ATTR_RESAMPLE_COMP_TYPE, CDN_TYPE_DATA_TYPE, 1, &dt, "resample");
    set(b, rs, CDN_ATTR_RESAMPLE_SPATIAL_DIMS, CDN_TYPE_INT64, 1, &nsp, "resample");
    set(b, rs, CDN_ATTR_RESAMPLE_PADDING_MODE, CDN_TYPE_PADDING_MODE, 1, &pad, "resample");
    set(b, rs, CDN_ATTR_RESAMPLE_NAN_PROPAGATION, CDN_TYPE_NAN_PROPOGATION, 1, &nan, "resample");
    set(b, rs, CDN_ATTR_RESAMPLE_WINDOW_DIMS, CDN_TYPE_INT64, 2, k->window, "resample");
    set(b, rs, CDN_ATTR_RESAMPLE_STRIDES, CDN_TYPE_INT64, 2, k->stride, "resample");
    set(b, rs, CDN_ATTR_RESAMPLE_PRE_PADDINGS, CDN_TYPE_INT64, 2, k->pre, "resample");
    set(b, rs, CDN_ATTR_RESAMPLE_POST_PADDINGS, CDN_TYPE_INT64, 2, k->post, "resample");
    fin(b, rs, "resample");
    return rs;
}

FcStatus fc_cudnn_graph(const CudnnLib *L, const CudnnKey *k, CudnnHandle h, CudnnGraph *g, FcError *err)
{
    memset(g, 0, sizeof *g);
    Bld b = {.L = L};
    int dt = k->dtype == FC_FLOAT64 ? CDN_DATA_DOUBLE : CDN_DATA_FLOAT;
    const OpAttrs *at = op_attrs(k);
    /* the tensors the operation has, by role, all in the data's type (batch norm's statistics
     * and scalars too, as PyTorch's batch norm through cuDNN keeps them) */
    static const int64_t one[4] = {1, 1, 1, 1};
    for (int r = 0; r < CDN_T_COUNT; r++) {
        if (!at->tensor[r])
            continue;
        bool scalar = r == CDN_T_EPS || r == CDN_T_FACTOR;
        const int64_t *dim = r == CDN_T_X ? k->x_dim : r == CDN_T_Y ? k->y_dim : scalar ? one : k->w_dim;
        const int64_t *str = r == CDN_T_X ? k->x_str : r == CDN_T_Y ? k->y_str : scalar ? one : k->w_str;
        int64_t align = r == CDN_T_X ? k->align[0] : r == CDN_T_Y ? k->align[2] : scalar ? 16 : k->align[1];
        g->t[r] = tensor(&b, r, dt, dim, str, align, scalar, role_name[r]);
    }
    if (k->op < FC_POOL_MAX)
        g->aux = conv_desc(&b, k, dt);
    else if (k->op != FC_BATCH_NORM)
        g->aux = resample_desc(&b, k, dt);
    CudnnDesc op = g->op = make(&b, at->desc, at->name);
    if (k->op == FC_BATCH_NORM) {
        int mode = CDN_BATCH_NORM, phase = k->mode;
        set(&b, op, CDN_ATTR_OPERATION_NORM_FWD_MODE, CDN_TYPE_NORM_MODE, 1, &mode, at->name);
        set(&b, op, CDN_ATTR_OPERATION_NORM_FWD_PHASE, CDN_TYPE_NORM_FWD_PHASE, 1, &phase, at->name);
    }
    for (int r = 0; r < CDN_T_COUNT; r++)
        if (at->tensor[r])
            set(&b, op, at->tensor[r], CDN_TYPE_BACKEND_DESCRIPTOR, 1, &g->t[r], at->name);
    if (at->aux)
        set(&b, op, at->aux, CDN_TYPE_BACKEND_DESCRIPTOR, 1, &g->aux, at->name);
    if (at->alpha) {
        /* alpha and beta in the computation's type */
        double a64 = 1, b64 = 0;
        float a32 = 1, b32 = 0;
        bool d = dt == CDN_DATA_DOUBLE;
        set(&b, op, at->alpha, d ? CDN_TYPE_DOUBLE : CDN_TYPE_FLOAT, 1, d ? (const void *)&a64 : (const void *)&a32,
            at->name);
        set(&b, op, at->beta, d ? CDN_TYPE_DOUBLE : CDN_TYPE_FLOAT, 1, d ? (const void *)&b64 : (const void *)&b32,
            at->name);
    }
    fin(&b, op, at->name);
    g->graph = make(&b, CDN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
    if (h)
        set(&b, g->graph, CDN_ATTR_OPERATIONGRAPH_HANDLE, CDN_TYPE_HANDLE, 1, &h, "operation graph");
    set(&b, g->graph, CDN_ATTR_OPERATIONGRAPH_OPS, CDN_TYPE_BACKEND_DESCRIPTOR, 1, &op, "operation graph");
    fin(&b, g->graph, "operation graph");
    if (b.s) {
        FcStatus st = bld_error(&b, err);
        fc_cudnn_graph_free(L, g);
        return st;
    }
    return FC_OK;
}

/* ---- choosing a plan ---- */

typedef struct Plan {
    CudnnKey key;
    uint64_t hash;
    CudnnGraph g;
    CudnnDesc plan;             /* NULL: cuDNN has no engine for this case (note says why) */
    int64_t workspace;
    char note[200];
} Plan;

struct CudnnState {
    const CudnnLib *L;
    CudnnHandle h;
    pthread_mutex_t mu;         /* the handle and the cache: one operation at a time */
    Plan *plans;
    int n, cap;
    int hits;
    int flags;                  /* FC_CONV_EXHAUSTIVE, FC_CONV_TF32 from the environment */
    char why[200];              /* no handle: why (every convolution on this device falls back) */
};

static bool env_on(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

/* Whether an engine's notes allow it for k, else a reason. */
static const char *refused(const CudnnLib *L, CudnnDesc engine, const CudnnKey *k)
{
    int notes[CDN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t n = 0;
    if (L->BackendGetAttribute(engine, CDN_ATTR_ENGINE_NUMERICAL_NOTE, CDN_TYPE_NUMERICAL_NOTE,
                               CDN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) != CDN_STATUS_SUCCESS)
        return "its notes cannot be read";
    for (int64_t i = 0; i < n; i++) {
        if (notes[i] == CDN_NUMERICAL_NOTE_NONDETERMINISTIC && (k->flags & FC_CONV_DETERMINISTIC))
            return "non-deterministic";
        if (notes[i] == CDN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS || notes[i] == CDN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
            return "reduced precision";
        if (notes[i] == CDN_NUMERICAL_NOTE_TENSOR_CORE && k->dtype == FC_FLOAT32 && !(k->flags & FC_CONV_TF32))
            return "TF32 (TDL_CUDNN_TF32=1 allows it)";
    }
    return NULL;
}

/* The engine configs of one heuristics mode, as new descriptors (*n of them; the caller destroys
 * them), or none. */
static CudnnDesc *heuristics(const CudnnLib *L, CudnnDesc graph, int mode, int64_t *n)
{
    *n = 0;
    Bld b = {.L = L};
    CudnnDesc heur = make(&b, CDN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics");
    set(&b, heur, CDN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CDN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "heuristics");
    set(&b, heur, CDN_ATTR_ENGINEHEUR_MODE, CDN_TYPE_HEUR_MODE, 1, &mode, "heuristics");
    fin(&b, heur, "heuristics");
    int64_t count = 0;
    if (!b.s && L->BackendGetAttribute(heur, CDN_ATTR_ENGINEHEUR_RESULTS, CDN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL))
        count = 0;
    CudnnDesc *cfgs = count > 0 ? mem_calloc((size_t)count, sizeof *cfgs) : NULL;
    int64_t made = 0;
    for (; cfgs && made < count; made++)
        if (L->BackendCreateDescriptor(CDN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[made]))
            break;
    int64_t got = 0;
    if (cfgs && (made < count ||
                 L->BackendGetAttribute(heur, CDN_ATTR_ENGINEHEUR_RESULTS, CDN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfgs))) {
        got = 0;
    }
    for (int64_t i = got; i < made; i++)
        destroy(L, &cfgs[i]);
    if (heur)
        L->BackendDestroyDescriptor(heur);
    if (got == 0) {
        mem_free(cfgs);
        return NULL;
    }
    *n = got;
    return cfgs;
}

/* A finalised plan for config cfg, or NULL (the engine refused by its notes, or cuDNN cannot
 * build it here); *engine its global index. */
static CudnnDesc plan_for(CudnnState *s, const CudnnKey *k, CudnnDesc cfg, int64_t *engine, int64_t *ws,
                          const char **why)
{
    const CudnnLib *L = s->L;
    CudnnDesc eng = NULL;
    int64_t n = 0;
    *why = "cuDNN cannot build it";
    if (L->BackendCreateDescriptor(CDN_BACKEND_ENGINE_DESCRIPTOR, &eng))
        return NULL;
    if (L->BackendGetAttribute(cfg, CDN_ATTR_ENGINECFG_ENGINE, CDN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) || n != 1) {
        destroy(L, &eng);
        return NULL;
    }
    *engine = -1;
    L->BackendGetAttribute(eng, CDN_ATTR_ENGINE_GLOBAL_INDEX, CDN_TYPE_INT64, 1, &n, engine);
    const char *no = refused(L, eng, k);
    destroy(L, &eng);
    if (no) {
        *why = no;
        return NULL;
    }
    Bld b = {.L = L};
    CudnnDesc plan = make(&b, CDN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "plan");
    set(&b, plan, CDN_ATTR_EXECUTION_PLAN_HANDLE, CDN_TYPE_HANDLE, 1, &s->h, "plan");
    set(&b, plan, CDN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CDN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg, "plan");
    fin(&b, plan, "plan");
    if (!b.s && L->BackendGetAttribute(plan, CDN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CDN_TYPE_INT64, 1, &n, ws))
        b.s = CDN_STATUS_NOT_SUPPORTED;
    if (b.s) {
        destroy(L, &plan);
        return NULL;
    }
    return plan;
}

/* Runs plan (of graph g) on c's data with a workspace from be's allocator: the variant pack
 * holds every tensor g has, by its role's unique id (batch norm's scalars by value, in the data's
 * type). */
static FcStatus execute(CudnnState *s, FcBackend *be, const CudnnGraph *g, CudnnDesc plan, int64_t ws,
                        const FcConv *c, FcError *err)
{
    const CudnnLib *L = s->L;
    void *work = NULL;
    if (ws > 0) {
        FcStatus st = be->alloc(be, (size_t)ws, &work, err);
        if (st)
            return st;
    }
    void *p[CDN_T_COUNT];
    pointers(c, p);
    double eps64 = c->eps, mom64 = c->momentum;
    float eps32 = (float)c->eps, mom32 = (float)c->momentum;
    bool d = c->dtype == FC_FLOAT64;
    p[CDN_T_EPS] = d ? (void *)&eps64 : (void *)&eps32;
    p[CDN_T_FACTOR] = d ? (void *)&mom64 : (void *)&mom32;
    int64_t uids[CDN_T_COUNT];
    void *ptrs[CDN_T_COUNT];
    int64_t n = 0;
    for (int r = 0; r < CDN_T_COUNT; r++) {
        if (g->t[r]) {
            uids[n] = r + 1;
            ptrs[n++] = p[r];
        }
    }
    Bld b = {.L = L};
    CudnnDesc pack = make(&b, CDN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
    set(&b, pack, CDN_ATTR_VARIANT_PACK_UNIQUE_IDS, CDN_TYPE_INT64, n, uids, "variant pack");
    set(&b, pack, CDN_ATTR_VARIANT_PACK_DATA_POINTERS, CDN_TYPE_VOID_PTR, n, ptrs, "variant pack");
    set(&b, pack, CDN_ATTR_VARIANT_PACK_WORKSPACE, CDN_TYPE_VOID_PTR, 1, &work, "variant pack");
    fin(&b, pack, "variant pack");
    if (!b.s) {
        CudnnStatus r = L->BackendExecute(s->h, plan, pack);
        if (r) {
            CudnnKey k;
            fc_cudnn_key(c, &k);
            failed(&b, r, "cudnnBackendExecute", op_attrs(&k)->name);
        }
    }
    destroy(L, &pack);
    be->free(be, work);
    return b.s ? bld_error(&b, err) : FC_OK;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Milliseconds of one run of plan (the best of 3 after a warm-up), or -1 when it fails. */
static double time_plan(CudnnState *s, FcBackend *be, const CudnnGraph *g, CudnnDesc plan, int64_t ws,
                        const FcConv *c)
{
    const char *why;
    const CudaDriver *d = fc_cuda_driver(&why);
    FcError e;
    double best = -1;
    for (int i = 0; i < 4; i++) {
        double t0 = now_ms();
        if (execute(s, be, g, plan, ws, c, &e) || !d || d->CtxSynchronize() != CUDA_OK)
            return -1;
        double t = now_ms() - t0;
        if (i > 0 && (best < 0 || t < best))
            best = t;
    }
    return best;
}

/* Chooses p's plan: the first config of heuristics mode A, then of the fallback list, that the
 * notes allow and cuDNN builds; with FC_CONV_EXHAUSTIVE, the fastest of all of them. */
static void choose(CudnnState *s, FcBackend *be, Plan *p, const FcConv *c)
{
    const CudnnLib *L = s->L;
    const int modes[2] = {CDN_HEUR_MODE_A, CDN_HEUR_MODE_FALLBACK};
    const char *modename[2] = {"heuristics mode A", "fallback list"};
    bool all = p->key.flags & FC_CONV_EXHAUSTIVE;
    double best_ms = -1;
    const char *last_why = "no engine";
    int tried = 0;
    for (int m = 0; m < 2 && (all || !p->plan); m++) {
        int64_t n;
        CudnnDesc *cfgs = heuristics(L, p->g.graph, modes[m], &n);
        for (int64_t i = 0; i < n && (all || !p->plan); i++) {
            int64_t engine = -1, ws = 0;
            const char *why;
            CudnnDesc plan = plan_for(s, &p->key, cfgs[i], &engine, &ws, &why);
            tried++;
            if (!plan) {
                last_why = why;
                continue;
            }
            double ms = all ? time_plan(s, be, &p->g, plan, ws, c) : 0;
            if (all && (ms < 0 || (best_ms >= 0 && ms >= best_ms))) {
                destroy(L, &plan);
                continue;
            }
            destroy(L, &p->plan);
            p->plan = plan;
            p->workspace = ws;
            best_ms = ms;
            snprintf(p->note, sizeof p->note, "engine %lld from the %s, workspace %lld bytes%s",
                     (long long)engine, modename[m], (long long)ws, all ? ", the fastest of those timed" : "");
        }
        for (int64_t i = 0; i < n; i++)
            destroy(L, &cfgs[i]);
        mem_free(cfgs);
    }
    if (!p->plan)
        snprintf(p->note, sizeof p->note, "cuDNN has no engine for this case (%d tried; the last: %s)", tried, last_why);
}

static Plan *find(CudnnState *s, const CudnnKey *k, uint64_t h)
{
    for (int i = 0; i < s->n; i++)
        if (s->plans[i].hash == h && memcmp(&s->plans[i].key, k, sizeof *k) == 0)
            return &s->plans[i];
    return NULL;
}

void fc_cudnn_state_free(CudnnState *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        destroy(s->L, &s->plans[i].plan);
        fc_cudnn_graph_free(s->L, &s->plans[i].g);
    }
    mem_free(s->plans);
    if (s->h)
        s->L->Destroy(s->h);
    pthread_mutex_destroy(&s->mu);
    mem_free(s);
}

void fc_cudnn_cache_counts(const CudnnState *s, int *plans, int *hits)
{
    *plans = s ? s->n : 0;
    *hits = s ? s->hits : 0;
}

/* The state of a device, with its handle: NULL with c->note set when cuDNN cannot serve it. */
static CudnnState *state(CudnnState **sp, FcConv *c, FcError *err, FcStatus *st)
{
    *st = FC_OK;
    if (*sp) {
        if (!(*sp)->h)
            snprintf(c->note, sizeof c->note, "%s", (*sp)->why);
        return (*sp)->h ? *sp : NULL;
    }
    const char *why = NULL;
    const CudnnLib *L = fc_cudnn_lib(&why);
    if (!L) {
        snprintf(c->note, sizeof c->note, "cuDNN: %.220s", why);
        return NULL;
    }
    CudnnState *s = mem_calloc(1, sizeof *s);
    if (!s || pthread_mutex_init(&s->mu, NULL) != 0) {
        mem_free(s);
        *st = FC_ERR_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return NULL;
    }
    s->L = L;
    s->flags = (env_on("TDL_CUDNN_BENCHMARK") ? FC_CONV_EXHAUSTIVE : 0) | (env_on("TDL_CUDNN_TF32") ? FC_CONV_TF32 : 0);
    CudnnStatus r = L->Create(&s->h);
    if (r) {
        s->h = NULL;    /* remembered: no handle on this device, fall back from now on */
        char m[200];
        fc_cudnn_status_str(L, r, "cudnnCreate", m, sizeof m);
        snprintf(s->why, sizeof s->why, "cuDNN %zu.%zu has no handle here: %.140s", L->version / 10000,
                 L->version / 100 % 100, m);
        snprintf(c->note, sizeof c->note, "%s", s->why);
    }
    *sp = s;
    return s->h ? s : NULL;
}

FcStatus fc_cudnn_conv(CudnnState **sp, FcBackend *be, FcConv *c, FcError *err)
{
    c->taken = false;
    FcStatus st;
    CudnnState *s = state(sp, c, err, &st);
    if (!s)
        return st;
    c->flags |= s->flags;
    CudnnKey key;
    fc_cudnn_key(c, &key);
    uint64_t h = fnv1a_bytes(FNV1A_SEED, &key, sizeof key);
    pthread_mutex_lock(&s->mu);
    Plan *p = find(s, &key, h);
    bool cached = p != NULL;
    if (!p) {
        if (s->n == s->cap) {
            int cap = s->cap ? 2 * s->cap : 16;
            Plan *q = mem_realloc(s->plans, (size_t)cap * sizeof *q);
            if (!q) {
                pthread_mutex_unlock(&s->mu);
                snprintf(err->msg, sizeof err->msg, "out of memory");
                return FC_ERR_NOMEM;
            }
            s->plans = q;
            s->cap = cap;
        }
        p = &s->plans[s->n];
        memset(p, 0, sizeof *p);
        p->key = key;
        p->hash = h;
        FcError ge;
        if (fc_cudnn_graph(s->L, &key, s->h, &p->g, &ge))
            snprintf(p->note, sizeof p->note, "the graph was refused: %.170s", ge.msg);
        else
            choose(s, be, p, c);
        s->n++;         /* a case cuDNN refuses is remembered too, so that it is not asked again */
    } else {
        s->hits++;
    }
    st = FC_OK;
    if (p->plan) {
        st = execute(s, be, &p->g, p->plan, p->workspace, c, err);
        c->taken = st == FC_OK;
    }
    snprintf(c->note, sizeof c->note, "%s%s", p->note, cached && p->plan ? ", cached plan" : "");
    pthread_mutex_unlock(&s->mu);
    return st;
}
