/* registry.c — the backends fcdim may open, one row per device type: how to open one and the
 * kernel text it would compile. fcdim reaches backends through this table and FcBackend's
 * functions only, so that it names no backend (after ggml-backend's registry).
 * Depends on backend.h only. */
#include "backend.h"

#include <stdio.h>

typedef struct Row {
    FcDeviceType type;
    FcStatus (*open)(int index, int nthreads, bool fake, FcBackend **out, FcError *err);
    char *(*text)(const FcKernel *k);   /* or NULL */
} Row;

static FcStatus open_cpu(int index, int nthreads, bool fake, FcBackend **out, FcError *err)
{
    (void)index;
    (void)fake;
    *out = fc_cpu_backend_new(nthreads);
    if (!*out) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return FC_ERR_NOMEM;
    }
    return FC_OK;
}

static FcStatus open_cuda(int index, int nthreads, bool fake, FcBackend **out, FcError *err)
{
    if (!fake)
        return fc_cuda_backend_new(index, out, err);
    *out = fc_cpu_backend_as_cuda_new(nthreads);
    if (!*out) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return FC_ERR_NOMEM;
    }
    return FC_OK;
}

static const Row rows[] = {
    {FC_DEV_CPU, open_cpu, NULL},
    {FC_DEV_CUDA, open_cuda, fc_cuda_kernel_dump},
};

static const Row *row_of(FcDeviceType type)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].type == type)
            return &rows[i];
    return NULL;
}

FcStatus fc_backend_open(FcDeviceType type, int index, int nthreads, bool fake, FcBackend **out, FcError *err)
{
    *out = NULL;
    const Row *r = row_of(type);
    if (!r) {
        snprintf(err->msg, sizeof err->msg, "no backend for this device type");
        return FC_ERR_DEVICE;
    }
    return r->open(index, nthreads, fake, out, err);
}

char *fc_backend_kernel_text(FcDeviceType type, const FcKernel *k)
{
    const Row *r = row_of(type);
    return r && r->text ? r->text(k) : NULL;
}
