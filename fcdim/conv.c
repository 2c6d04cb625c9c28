/* conv.c — operations a device backend may hand to a vendor library (FcBackend.conv: cuDNN on CUDA)
 * instead of running the kernels tdl generates: here the 2-D convolution and the transposed one.
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

/* Runs c (its shapes, paddings, stride, dilation, groups and transposed filled in) on x, w into a new
 * tensor laid out as fmt, through the library of x's device; *out NULL when it is not taken
 * (unsupported: why no library can take it, or NULL). */
static FcStatus run_library(FcCtx *ctx, const char *op, FcTensor *x, FcTensor *w, FcConv *c, FcMemoryFormat fmt,
                            const char *unsupported, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcDevice dev = x->device;
    if (dev.type != FC_DEV_CUDA || x->ndim != 4 || w->ndim != 4)
        return FC_OK;
    if (w->device.type != dev.type || w->device.index != dev.index || x->dtype != w->dtype)
        return FC_OK;           /* the stdlib's version reports the mismatch */
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
    if (!fc_grad_off && (fc_requires_grad(x) || fc_requires_grad(w))) {
        say(ctx, op, dev, "generated kernels", "gradients are needed, and the cuDNN backward is not wired");
        return FC_OK;
    }
    int64_t numel;
    fc_shape_numel(4, c->y_shape, &numel);
    if (numel == 0 || fc_tensor_numel(x) == 0 || fc_tensor_numel(w) == 0)
        return FC_OK;           /* nothing for a library to do: the stdlib's version makes it */
    if ((st = fc_realize(ctx, x, err)) || (st = fc_realize(ctx, w, err)))
        return st;
    c->dtype = x->dtype;
    for (int i = 0; i < 4; i++) {
        c->x_shape[i] = x->shape[i];
        c->x_strides[i] = x->strides[i];
        c->w_shape[i] = w->shape[i];
        c->w_strides[i] = w->strides[i];
    }
    layout(c->y_shape, fmt == FC_MF_CHANNELS_LAST ? FC_MF_CHANNELS_LAST : FC_MF_CONTIGUOUS, c->y_strides);
    FcTensor *y;
    if ((st = fc_empty(ctx, x->dtype, dev, 4, c->y_shape, c->y_strides, &y, err)))
        return st;
    c->x = first_elem(x);
    c->w = first_elem(w);
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
