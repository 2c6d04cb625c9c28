/* conv.c — operations a device backend may hand to a vendor library (FcBackend.conv: cuDNN on CUDA)
 * instead of running the kernels tdl generates: here the 2-D convolution and the transposed one,
 * max and average pooling, batch norm (fc_pool2d_library, fc_batch_norm_library likewise).
 *
 * The stdlib's nn.conv2d (conv_transpose2d) checks its arguments, then asks fc_conv2d_library
 * (fc_conv_transpose2d_library); when the backend has no library path or does not take the case, the stdlib's
 * own tdl version (a masked contraction the scheduler fuses) runs instead, so both paths give
 * PyTorch's semantics and the tdl one stays the reference. Nothing here knows cuDNN.
 *
 * Gradients: when an operand of a convolution needs one, the stdlib passes a lazy tdl reference of
 * it too (never run forward); a library that takes the forward gets its result recorded as a
 * library op (fc_grad_library, autograd.c's REC_LIB), whose backward asks the library for the
 * input's and the weight's gradients (fc_conv_library_grad: backward data and backward filter, a
 * forward convolution and a backward filter for conv_transpose2d) and differentiates the reference
 * for an operand the library declines. The bias's gradient is the stdlib's pointwise add's (a sum).
 * Depends on fcdim.h, internal.h and backend.h. */
#include "fcdim.h"
#include "internal.h"

#include "backend.h"

FcStatus (*fc_conv_test_hook)(FcBackend *be, FcConv *c, FcError *err);

/* The library call of be: the test hook when one is set, else be's own (NULL: none). */
static FcStatus (*library_of(FcBackend *be))(FcBackend *, FcConv *, FcError *)
{
    return fc_conv_test_hook ? fc_conv_test_hook : be->conv;
}

#include <stdio.h>
#include <string.h>

/* Under --verbose, one line on ctx's dump: which path ran the convolution, and why. */
static void say(FcCtx *ctx, const char *op, FcDevice dev, const char *what, const char *note)
{
    if (!(ctx->dump_flags & FC_DUMP_VERBOSE) || !ctx->dump)
        return;
    char name[32], line[400];
    snprintf(line, sizeof line, "tdl: %s on %s: %s (%s)\n", op, fc_device_name(dev, name), what, note);
    ctx->dump(ctx->dump_ud, line);
}

/* The backend of dev in *bep when it has a library path for op, else NULL (a --verbose line says
 * so). */
static FcStatus device_library(FcCtx *ctx, const char *op, FcDevice dev, FcBackend **bep, FcError *err)
{
    *bep = NULL;
    FcBackend *be;
    FcStatus st = fc_ctx_backend(ctx, dev, &be, err);
    if (st)
        return st;
    if (!library_of(be))
        say(ctx, op, dev, "generated kernels", "this device has no library path");
    else
        *bep = be;
    return FC_OK;
}

/* The strides of a dense NCHW shape laid out as fmt. */
static void layout(const int64_t shape[4], FcMemoryFormat fmt, int64_t strides[4])
{
    if (fmt == FC_MF_CHANNELS_LAST) {
        strides[1] = 1;
        strides[3] = shape[1];
        strides[2] = shape[3] * strides[3];
        strides[0] = shape[2] * strides[2];
    } else {
        strides[3] = 1;
        strides[2] = shape[3];
        strides[1] = shape[2] * strides[2];
        strides[0] = shape[1] * strides[1];
    }
}

static const void *first_elem(const FcTensor *t)
{
    return (const char *)t->storage->data + t->offset * (int64_t)fc_dtype_size(t->dtype);
}

/* Whether the library of x's device is asked for operation op (--verbose name) on in[0] = x and
 * the other operands in[1..n-1] (each 4-D or per-channel, on x's device, of x's dtype, needing no
 * gradient unless ref), giving y_shape: *be that backend, with every operand realised, else NULL
 * (FC_OK; a --verbose line says why where there is a library to decline). unsupported: why no
 * library can take the case, or NULL. ref: the lazy reference a gradient is taken through
 * (fc_grad_library), or NULL. */
static FcStatus library_for(FcCtx *ctx, const char *op, FcTensor *const *in, int n, const int64_t y_shape[4],
                            const char *unsupported, FcTensor *ref, FcBackend **bep, FcError *err)
{
    *bep = NULL;
    FcTensor *x = in[0];
    FcDevice dev = x->device;
    if (dev.type != FC_DEV_CUDA || x->ndim != 4)
        return FC_OK;
    for (int i = 1; i < n; i++)
        if (in[i]->device.type != dev.type || in[i]->device.index != dev.index || in[i]->dtype != x->dtype)
            return FC_OK;       /* the stdlib's version reports the mismatch */
    FcBackend *be;
    FcStatus st = device_library(ctx, op, dev, &be, err);
    if (st || !be)
        return st;
    if (unsupported) {
        say(ctx, op, dev, "generated kernels", unsupported);
        return FC_OK;
    }
    if (x->dtype != FC_FLOAT32 && x->dtype != FC_FLOAT64) {
        say(ctx, op, dev, "generated kernels", "cuDNN is used for float32 and float64");
        return FC_OK;
    }
    for (int i = 0; i < n && !fc_grad_off; i++) {
        if (fc_requires_grad(in[i]) && !ref) {
            say(ctx, op, dev, "generated kernels", "gradients are needed, and this operation has no library backward");
            return FC_OK;
        }
    }
    int64_t numel;
    fc_shape_numel(4, y_shape, &numel);
    for (int i = 0; i < n && numel; i++)
        numel = fc_tensor_numel(in[i]) ? numel : 0;
    if (numel == 0)
        return FC_OK;           /* nothing for a library to do: the stdlib's version makes it */
    for (int i = 0; i < n; i++)
        if ((st = fc_realize(ctx, in[i], err)))
            return st;
    *bep = be;
    return FC_OK;
}

/* Runs c (its op's fields, w's geometry and pointer filled in) on be for x into a new tensor
 * laid out as fmt; *out NULL when the library did not take it after all (a --verbose line says
 * why). */
static FcStatus library_run(FcCtx *ctx, const char *op, FcBackend *be, FcTensor *x, FcConv *c, FcMemoryFormat fmt,
                            FcTensor **out, FcError *err)
{
    *out = NULL;
    FcDevice dev = x->device;
    c->dtype = x->dtype;
    for (int i = 0; i < 4; i++) {
        c->x_shape[i] = x->shape[i];
        c->x_strides[i] = x->strides[i];
    }
    layout(c->y_shape, fmt == FC_MF_CHANNELS_LAST ? FC_MF_CHANNELS_LAST : FC_MF_CONTIGUOUS, c->y_strides);
    FcTensor *y;
    FcStatus st = fc_empty(ctx, x->dtype, dev, 4, c->y_shape, c->y_strides, &y, err);
    if (st)
        return st;
    c->x = first_elem(x);
    c->y = y->storage->data;
    c->flags = ctx->deterministic ? FC_CONV_DETERMINISTIC : 0;
    st = library_of(be)(be, c, err);
    if (st || !c->taken) {
        if (!st)
            say(ctx, op, dev, "generated kernels", c->note);
        fc_tensor_release(y);
        return st;
    }
    say(ctx, op, dev, "cuDNN", c->note);
    *out = y;
    return FC_OK;
}

/* Whether ref is a lazy reference of convolution c a gradient can be taken through: y's levels
 * with the channel dim split by groups, x's dtype. */
static bool reference_fits(const FcTensor *ref, const FcTensor *x, const FcConv *c)
{
    if (!ref || !ref->node || ref->ndim != 5 || ref->dtype != x->dtype || c->groups < 1)
        return false;
    int64_t want[5] = {c->y_shape[0], c->groups, c->y_shape[1] / c->groups, c->y_shape[2], c->y_shape[3]};
    for (int i = 0; i < 5; i++)
        if (ref->shape[i] != want[i])
            return false;
    return true;
}

/* Runs convolution c (its shapes, paddings, stride, dilation, groups and transposed filled in) on
 * x, w into a new tensor laid out as fmt, through the library of x's device; *out NULL when it is
 * not taken (unsupported: why no library can take it, or NULL). ref: the lazy tdl reference its
 * gradient is taken through when an operand needs one (NULL: none, the case is declined then). */
static FcStatus run_library(FcCtx *ctx, const char *op, FcTensor *x, FcTensor *w, FcConv *c, FcMemoryFormat fmt,
                            const char *unsupported, FcTensor *ref, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (w->ndim != 4)
        return FC_OK;
    FcBackend *be;
    FcTensor *in[2] = {x, w};
    FcStatus st = library_for(ctx, op, in, 2, c->y_shape, unsupported, reference_fits(ref, x, c) ? ref : NULL, &be,
                              err);
    if (st || !be)
        return st;
    for (int i = 0; i < 4; i++) {
        c->w_shape[i] = w->shape[i];
        c->w_strides[i] = w->strides[i];
    }
    c->w = first_elem(w);
    bool grad = !fc_grad_off && (fc_requires_grad(x) || fc_requires_grad(w));
    st = library_run(ctx, op, be, x, c, fmt, out, err);
    if (st || !*out || !grad)
        return st;
    /* the operands as the library read them, in views of their own (the tensors may be re-pointed) */
    FcLibConv lc;
    memset(&lc, 0, sizeof lc);
    lc.c = *c;
    lc.c.x = lc.c.w = NULL;
    lc.c.y = NULL;
    lc.fmt = fmt == FC_MF_CHANNELS_LAST ? FC_MF_CHANNELS_LAST : FC_MF_CONTIGUOUS;
    lc.op = op;
    st = fc_as_strided(ctx, x, 4, x->shape, x->strides, x->offset, &lc.x, err);
    if (!st)
        st = fc_as_strided(ctx, w, 4, w->shape, w->strides, w->offset, &lc.w, err);
    if (!st)
        st = fc_grad_library(ctx, *out, ref, &lc, err);
    fc_tensor_release(lc.x);
    fc_tensor_release(lc.w);
    if (st) {
        fc_tensor_release(*out);
        *out = NULL;
    }
    return st;
}

FcStatus fc_conv2d_library(FcCtx *ctx, FcTensor *x, FcTensor *w, const int64_t stride[2], const int64_t pad[4],
                           const int64_t dilation[2], int64_t groups, FcMemoryFormat fmt, FcTensor *ref, FcTensor **out,
                           FcError *err)
{
    *out = NULL;
    if (x->ndim != 4 || w->ndim != 4)
        return FC_OK;
    FcConv c;
    memset(&c, 0, sizeof c);
    c.y_shape[0] = x->shape[0];
    c.y_shape[1] = w->shape[0];
    for (int i = 0; i < 2; i++) {
        c.pad_pre[i] = pad[i];
        c.pad_post[i] = pad[2 + i];
        c.stride[i] = stride[i];
        c.dilation[i] = dilation[i];
        int64_t span = dilation[i] * (w->shape[2 + i] - 1) + 1;
        c.y_shape[2 + i] = (x->shape[2 + i] + pad[i] + pad[2 + i] - span) / stride[i] + 1;
    }
    c.groups = groups;
    return run_library(ctx, "conv2d", x, w, &c, fmt, NULL, ref, out, err);
}

FcStatus fc_conv_transpose2d_library(FcCtx *ctx, FcTensor *x, FcTensor *w, const int64_t stride[2], const int64_t pad[2],
                                     const int64_t output_padding[2], const int64_t dilation[2], int64_t groups,
                                     FcMemoryFormat fmt, FcTensor *ref, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (x->ndim != 4 || w->ndim != 4)
        return FC_OK;
    FcConv c;
    memset(&c, 0, sizeof c);
    c.transposed = true;
    c.y_shape[0] = x->shape[0];
    c.y_shape[1] = w->shape[1] * groups;
    const char *unsupported = NULL;
    for (int i = 0; i < 2; i++) {
        c.pad_pre[i] = c.pad_post[i] = pad[i];
        c.stride[i] = stride[i];
        c.dilation[i] = dilation[i];
        int64_t span = dilation[i] * (w->shape[2 + i] - 1) + 1;
        c.y_shape[2 + i] = (x->shape[2 + i] - 1) * stride[i] - 2 * pad[i] + span + output_padding[i];
        /* cuDNN takes the output as the input of the forward convolution whose output is x: that
         * forward must give x's size back, which an output_padding >= stride (PyTorch allows it
         * when below the dilation) does not */
        if (c.y_shape[2 + i] >= 1 && (c.y_shape[2 + i] + 2 * pad[i] - span) / stride[i] + 1 != x->shape[2 + i])
            unsupported = "cuDNN takes no output_padding at or above the stride";
    }
    c.groups = groups;
    return run_library(ctx, "conv_transpose2d", x, w, &c, fmt, unsupported, ref, out, err);
}

FcStatus fc_pool2d_library(FcCtx *ctx, FcTensor *x, bool max, const int64_t kernel[2], const int64_t stride[2],
                           const int64_t pad[2], const int64_t dilation[2], bool count_include_pad,
                           const int64_t out_size[2], FcMemoryFormat fmt, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (x->ndim != 4)
        return FC_OK;
    FcConv c;
    memset(&c, 0, sizeof c);
    c.op = max ? FC_POOL_MAX : FC_POOL_AVG;
    c.count_include_pad = count_include_pad;
    c.y_shape[0] = x->shape[0];
    c.y_shape[1] = x->shape[1];
    const char *unsupported = NULL;
    for (int i = 0; i < 2; i++) {
        c.window[i] = kernel[i];
        c.stride[i] = stride[i];
        c.pad_pre[i] = c.pad_post[i] = pad[i];
        c.dilation[i] = 1;
        c.y_shape[2 + i] = out_size[i];
        if (dilation[i] != 1)
            unsupported = "cuDNN's pooling has no dilation";
        /* cuDNN's windows are the floor division's: a ceil_mode that adds one is not its case
         * (where it adds none, the windows and avg_pool2d's divisors are the same) */
        else if (out_size[i] != (x->shape[2 + i] + 2 * pad[i] - kernel[i]) / stride[i] + 1)
            unsupported = "ceil_mode adds a window cuDNN's pooling does not have";
    }
    FcBackend *be;
    FcStatus st = library_for(ctx, max ? "max_pool2d" : "avg_pool2d", &x, 1, c.y_shape, unsupported, NULL, &be, err);
    if (st || !be)
        return st;
    return library_run(ctx, max ? "max_pool2d" : "avg_pool2d", be, x, &c, fmt, out, err);
}

/* A new dense (C) tensor of x's dtype and device. */
static FcStatus per_channel(FcCtx *ctx, const FcTensor *x, FcTensor **out, FcError *err)
{
    int64_t shape[1] = {x->shape[1]}, strides[1] = {1};
    return fc_empty(ctx, x->dtype, x->device, 1, shape, strides, out, err);
}

FcStatus fc_batch_norm_library(FcCtx *ctx, FcTensor *x, FcTensor *weight, FcTensor *bias, FcTensor *mean,
                               FcTensor *var, bool training, double momentum, double eps, FcMemoryFormat fmt,
                               FcTensor *out[3], FcError *err)
{
    out[0] = out[1] = out[2] = NULL;
    if (x->ndim != 4)
        return FC_OK;
    FcConv c;
    memset(&c, 0, sizeof c);
    c.op = FC_BATCH_NORM;
    c.training = training;
    c.eps = eps;
    c.momentum = momentum;
    memcpy(c.y_shape, x->shape, sizeof c.y_shape);
    /* PyTorch takes cuDNN's batch norm only from its least epsilon on (CUDNN_BN_MIN_EPSILON) */
    const char *unsupported = !weight || !bias  ? "cuDNN's batch norm takes a weight and a bias"
                            : !mean || !var     ? "cuDNN's batch norm takes running statistics"
                            : eps < 1e-5        ? "cuDNN's batch norm takes no epsilon below 1e-5"
                                                : NULL;
    FcTensor *in[5] = {x, weight, bias, mean, var};
    int n = unsupported ? 1 : 5;
    for (int i = 1; i < n; i++)
        if (in[i]->ndim != 1 || in[i]->shape[0] != x->shape[1])
            return FC_OK;       /* the stdlib's version reports it */
    FcBackend *be;
    FcStatus st = library_for(ctx, "batch_norm", in, n, c.y_shape, unsupported, NULL, &be, err);
    if (st || !be)
        return st;
    c.scale = first_elem(weight);
    c.bias = first_elem(bias);
    c.run_mean = first_elem(mean);
    FcTensor *saved[2] = {NULL, NULL};
    if (training) {
        c.run_var = first_elem(var);
        for (int i = 0; i < 2 && !st; i++)
            st = per_channel(ctx, x, &saved[i], err);
        for (int i = 1; i < 3 && !st; i++)
            st = per_channel(ctx, x, &out[i], err);
        if (!st) {
            c.save_mean = saved[0]->storage->data;
            c.save_invstd = saved[1]->storage->data;
            c.new_mean = out[1]->storage->data;
            c.new_var = out[2]->storage->data;
        }
    } else {
        c.run_invstd = first_elem(var);
    }
    if (!st)
        st = library_run(ctx, "batch_norm", be, x, &c, fmt, &out[0], err);
    for (int i = 0; i < 2; i++)
        fc_tensor_release(saved[i]);
    if (st || !out[0]) {
        for (int i = 1; i < 3; i++) {
            fc_tensor_release(out[i]);
            out[i] = NULL;
        }
    }
    return st;
}

/* ---- gradients of a library convolution (autograd.c's REC_LIB records) ---- */

void fc_conv_grad_call(const FcConv *f, int which, const void *dy, const int64_t dy_strides[4], void *g,
                       const int64_t g_strides[4], FcConv *c)
{
    *c = *f;
    c->taken = false;
    c->note[0] = '\0';
    c->flags = FC_CONV_DETERMINISTIC;
    if (!f->transposed) {
        /* conv2d (x -> y by w): backward data of dy by w, backward filter of x and dy */
        c->op = which ? FC_CONV_BACKWARD_FILTER : FC_CONV_BACKWARD_DATA;
        c->y = (void *)dy;
        memcpy(c->y_strides, dy_strides, sizeof c->y_strides);
        if (which) {
            c->w = g;
            memcpy(c->w_strides, g_strides, sizeof c->w_strides);
        } else {
            c->x = g;
            memcpy(c->x_strides, g_strides, sizeof c->x_strides);
        }
        return;
    }
    /* conv_transpose2d (x -> y by w) is the backward data of the convolution from y's shape to
     * x's: that convolution's forward of dy by w, and its backward filter of dy (its input) and x
     * (its output's place) */
    c->transposed = false;
    c->op = which ? FC_CONV_BACKWARD_FILTER : FC_CONV_FORWARD;
    memcpy(c->x_shape, f->y_shape, sizeof c->x_shape);
    memcpy(c->x_strides, dy_strides, sizeof c->x_strides);
    c->x = dy;
    memcpy(c->y_shape, f->x_shape, sizeof c->y_shape);
    if (which) {
        memcpy(c->y_strides, f->x_strides, sizeof c->y_strides);
        c->y = (void *)f->x;
        c->w = g;
        memcpy(c->w_strides, g_strides, sizeof c->w_strides);
    } else {
        memcpy(c->y_strides, g_strides, sizeof c->y_strides);
        c->y = g;
    }
}

FcStatus fc_conv_library_grad(FcCtx *ctx, const FcLibConv *lc, FcTensor *dy, int which, FcTensor **out,
                              FcError *err)
{
    *out = NULL;
    FcDevice dev = dy->device;
    char op[64];
    snprintf(op, sizeof op, "%s %s gradient", lc->op, which ? "weight" : "input");
    const char *call = which ? "backward filter" : lc->c.transposed ? "forward convolution" : "backward data";
    FcBackend *be;
    FcStatus st = device_library(ctx, op, dev, &be, err);
    if (st || !be)
        return st;
    if (lc->x->storage == lc->w->storage) {
        say(ctx, op, dev, "generated kernels", "the input and the weight share memory");
        return FC_OK;
    }
    const FcTensor *t = which ? lc->w : lc->x;
    int64_t gs[4];
    layout(t->shape, lc->fmt, gs);
    FcTensor *g = NULL;
    if ((st = fc_empty(ctx, t->dtype, dev, 4, t->shape, gs, &g, err)))
        return st;
    FcConv f = lc->c, c;
    f.x = first_elem(lc->x);
    f.w = first_elem(lc->w);
    fc_conv_grad_call(&f, which, first_elem(dy), dy->strides, g->storage->data, gs, &c);
    st = library_of(be)(be, &c, err);
    char note[320];
    snprintf(note, sizeof note, "%s%s%s", call, c.note[0] ? ": " : "", c.note);
    if (st || !c.taken) {
        if (!st)
            say(ctx, op, dev, "generated kernels", note);
        fc_tensor_release(g);
        return st;
    }
    say(ctx, op, dev, "cuDNN", note);
    *out = g;
    return FC_OK;
}
