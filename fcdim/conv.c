/* conv.c — operations a device backend may hand to a vendor library (FcBackend.conv: cuDNN on CUDA)
 * instead of running the kernels tdl generates: here the 2-D convolution and the transposed one,
 * max and average pooling, batch norm (fc_pool2d_library, fc_batch_norm_library likewise).
 *
 * The stdlib's nn.conv2d (conv_transpose2d) checks its arguments, then asks fc_conv2d_library
 * (fc_conv_transpose2d_library); when the backend has no library path or does not take the case, the stdlib's
 * own tdl version (a masked contraction the scheduler fuses) runs instead, so both paths give
 * PyTorch's semantics and the tdl one stays the reference. Nothing here knows cuDNN.
 * Depends on fcdim.h, internal.h and backend.h. */
#include "fcdim.h"
#include "internal.h"

#include "backend.h"

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
 * gradient), giving y_shape: *be that backend, with every operand realised, else NULL (FC_OK; a
 * --verbose line says why where there is a library to decline). unsupported: why no library can
 * take the case, or NULL. */
static FcStatus library_for(FcCtx *ctx, const char *op, FcTensor *const *in, int n, const int64_t y_shape[4],
                            const char *unsupported, FcBackend **bep, FcError *err)
{
    *bep = NULL;
    FcTensor *x = in[0];
    FcDevice dev = x->device;
    if (dev.type != FC_DEV_CUDA || x->ndim != 4)
        return FC_OK;
    for (int i = 1; i < n; i++)
        if (in[i]->device.type != dev.type || in[i]->device.index != dev.index || in[i]->dtype != x->dtype)
            return FC_OK;       /* the stdlib's version reports the mismatch */
    FcBackend *be = NULL;
    FcStatus st = fc_ctx_backend(ctx, dev, &be, err);
    if (st)
        return st;
    if (!be->conv) {
        say(ctx, op, dev, "generated kernels", "this device has no library path");
        return FC_OK;
    }
    if (unsupported) {
        say(ctx, op, dev, "generated kernels", unsupported);
        return FC_OK;
    }
    if (x->dtype != FC_FLOAT32 && x->dtype != FC_FLOAT64) {
        say(ctx, op, dev, "generated kernels", "cuDNN is used for float32 and float64");
        return FC_OK;
    }
    for (int i = 0; i < n && !fc_grad_off; i++) {
        if (fc_requires_grad(in[i])) {
            say(ctx, op, dev, "generated kernels", "gradients are needed, and the cuDNN backward is not wired");
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
    st = be->conv(be, c, err);
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

/* Runs convolution c (its shapes, paddings, stride, dilation, groups and transposed filled in) on
 * x, w into a new tensor laid out as fmt, through the library of x's device; *out NULL when it is
 * not taken (unsupported: why no library can take it, or NULL). */
static FcStatus run_library(FcCtx *ctx, const char *op, FcTensor *x, FcTensor *w, FcConv *c, FcMemoryFormat fmt,
                            const char *unsupported, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (w->ndim != 4)
        return FC_OK;
    FcBackend *be;
    FcTensor *in[2] = {x, w};
    FcStatus st = library_for(ctx, op, in, 2, c->y_shape, unsupported, &be, err);
    if (st || !be)
        return st;
    for (int i = 0; i < 4; i++) {
        c->w_shape[i] = w->shape[i];
        c->w_strides[i] = w->strides[i];
    }
    c->w = first_elem(w);
    return library_run(ctx, op, be, x, c, fmt, out, err);
}

FcStatus fc_conv2d_library(FcCtx *ctx, FcTensor *x, FcTensor *w, const int64_t stride[2], const int64_t pad[4],
                           const int64_t dilation[2], int64_t groups, FcMemoryFormat fmt, FcTensor **out, FcError *err)
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
    return run_library(ctx, "conv2d", x, w, &c, fmt, NULL, out, err);
}

FcStatus fc_conv_transpose2d_library(FcCtx *ctx, FcTensor *x, FcTensor *w, const int64_t stride[2], const int64_t pad[2],
                                     const int64_t output_padding[2], const int64_t dilation[2], int64_t groups,
                                     FcMemoryFormat fmt, FcTensor **out, FcError *err)
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
    return run_library(ctx, "conv_transpose2d", x, w, &c, fmt, unsupported, out, err);
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
    FcStatus st = library_for(ctx, max ? "max_pool2d" : "avg_pool2d", &x, 1, c.y_shape, unsupported, &be, err);
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
    FcStatus st = library_for(ctx, "batch_norm", in, n, c.y_shape, unsupported, &be, err);
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
