/* create.c — tensors made from nothing: arange, linspace, eye, and the random tensors rand and
 * randn.
 *
 * arange and linspace give PyTorch 1.13's CPU values bit for bit. Those are not the plain
 * formulas: torch's kernels (aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp, AVX2 build)
 * compute each run of 2*V elements (V = 32 bytes / element size) in vectors of V, starting from a
 * base computed once per vector (start + step * idx, contracted to a fused multiply-add by the
 * compiler) and adding i * step to it; the tail takes the scalar formula. linspace counts its
 * second half back from `end`, choosing per vector, and works in the output's own float type.
 * Both are written out here with C's fma(), single-threaded as torch is on one thread, so the
 * result does not depend on the thread count. The elements are computed on the host and copied to
 * the device.
 *
 * rand/randn use Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC'11), keyed by the 64-bit seed (key = low word, high word). Value number n = offset + i of a
 * draw comes from the block with counter (b low word, b high word, stream, 0), where
 *   uniform float32: b = n / 4, word n % 4, u = (w >> 8) * 2^-24                  (stream 0)
 *   uniform float64: b = n / 2, words 2(n%2), 2(n%2)+1 as (hi, lo), u = (x >> 11) * 2^-53
 *                                                                                 (stream 1)
 *   normal:          b = n / 2; u1 = 1 - U(words 0[,1]), u2 = U(word 1 / words 2, 3) as above;
 *                    r = sqrt(-2 log u1), t = 2 pi u2; n even: r cos t, odd: r sin t, computed
 *                    in double, rounded to the dtype                           (streams 2, 3)
 * so a value depends only on (seed, n) and the four kinds never share a block. Not PyTorch's
 * stream (that is mt19937 on CPU); reproducible across thread counts and devices.
 * Depends on fcdim.h, internal.h and the C library. */
#include "internal.h"
#include "mem.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- filling a new tensor on the host ---- */

typedef void (*FillFn)(void *data, int64_t n, const void *ud);

/* A new C-contiguous tensor of dt on dev whose n elements fill() writes. CPU tensors are filled in
 * place; for other devices the values are made in host memory and copied over. */
static FcStatus make_filled(FcCtx *ctx, FcDType dt, FcDevice dev, int ndim, const int64_t *shape, FillFn fill,
                            const void *ud, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (dev.type == FC_DEV_CPU) {
        FcTensor *t = NULL;
        FcStatus st = fc_empty(ctx, dt, dev, ndim, shape, NULL, &t, err);
        if (st)
            return st;
        fill((char *)t->storage->data + t->offset * (int64_t)fc_dtype_size(dt), fc_tensor_numel(t), ud);
        *out = t;
        return FC_OK;
    }
    FcBackend *be;
    FcStatus st = fc_ctx_backend(ctx, dev, &be, err);
    if (st)
        return st;
    FcView v;
    memset(&v, 0, sizeof v);
    v.dtype = dt;
    v.ndim = ndim;
    /* A negative extent or an overflowing shape: fc_from_view reports it (n is then 0). */
    int64_t n, nbytes;
    for (int k = 0; k < ndim; k++)
        v.shape[k] = shape[k];
    if (!fc_shape_nbytes(ndim, shape, dt, &nbytes))
        nbytes = 0;
    n = nbytes / (int64_t)fc_dtype_size(dt);
    fc_contiguous_strides(ndim, shape, v.strides);
    v.data = mem_malloc(nbytes > 0 ? (size_t)nbytes : 1);
    if (!v.data)
        return fc_nomem(err);
    fill(v.data, n, ud);
    st = fc_from_view(ctx, &v, dev, out, err);
    mem_free(v.data);
    return st;
}

static void store(void *data, int64_t i, FcDType dt, double f, int64_t x, bool is_float)
{
    switch (dt) {
    case FC_FLOAT32: ((float *)data)[i] = is_float ? (float)f : (float)x; break;
    case FC_FLOAT64: ((double *)data)[i] = is_float ? f : (double)x; break;
    case FC_INT32: ((int32_t *)data)[i] = (int32_t)(uint32_t)(uint64_t)x; break;
    case FC_INT64: ((int64_t *)data)[i] = x; break;
    case FC_BOOL: ((unsigned char *)data)[i] = is_float ? f != 0 : x != 0; break;
    default: {
        /* The narrow dtypes: wrapped or rounded as a cast does. */
        FcScalar v = fc_scalar_convert(is_float ? (FcScalar){.f = f} : (FcScalar){.i = x},
                                       is_float ? FC_FLOAT64 : FC_INT64, dt);
        fc_scalar_store(dt, (char *)data + i * (int64_t)fc_dtype_size(dt), v);
        break;
    }
    }
}

/* c10::checked_convert<T>(double) for an integer dtype: NaN and values past the type's range fail. */
static FcStatus to_int(double v, FcDType dt, int64_t *out, FcError *err)
{
    bool i32 = dt == FC_INT32, i64 = !i32 && fc_dtype_compute(dt) == dt;
    double lo = i32 ? -2147483648.0 : -9223372036854775808.0, hi = i32 ? 2147483647.0 : 9223372036854775807.0;
    const char *name = i32 ? "int" : "int64_t";
    switch (dt) {
    /* an integral value may be negative for uint8 (-5 is 251), as for an int Scalar */
    case FC_UINT8: lo = v == floor(v) ? -255 : 0, hi = 255, name = "uint8_t"; break;
    case FC_INT8: lo = -128, hi = 127, name = "int8_t"; break;
    case FC_INT16: lo = -32768, hi = 32767, name = "int16_t"; break;
    default: break;
    }
    if (v != v || v < lo || v > hi || (i64 && v >= 9223372036854775808.0))
        return fc_errf(err, FC_ERR_RUNTIME, "value cannot be converted to type %s without overflow", name);
    *out = (int64_t)v;
    return FC_OK;
}

/* Elements per AVX2 vector of dt (32 bytes). */
static int64_t vec_len(FcDType dt) { return 32 / (int64_t)fc_dtype_size(dt); }

/* ---- arange ---- */

typedef struct ArangeArgs {
    FcDType dt;
    double start, step;          /* floats */
    int64_t istart, istep;       /* ints */
} ArangeArgs;

static void fill_arange(void *data, int64_t n, const void *ud)
{
    const ArangeArgs *a = ud;
    if (!fc_dtype_is_float(a->dt)) {
        /* Exact in int64 (wrapping), then narrowed: the vector and scalar paths agree. */
        for (int64_t i = 0; i < n; i++)
            store(data, i, a->dt, 0, (int64_t)((uint64_t)a->istart + (uint64_t)a->istep * (uint64_t)i), false);
        return;
    }
    /* float16 and bfloat16 accumulate in float32 (their opmath type), as float32 does. */
    bool f32 = fc_dtype_compute(a->dt) == FC_FLOAT32;
    int64_t v = vec_len(a->dt), nv = n / (2 * v) * (2 * v);
    for (int64_t g = 0; g < nv; g += v) {
        double base = fma(a->step, (double)g, a->start);
        if (f32)
            base = (float)base;
        for (int64_t i = 0; i < v; i++)
            store(data, g + i, a->dt, fma((double)i, a->step, base), 0, true);
    }
    for (int64_t i = nv; i < n; i++)
        store(data, i, a->dt, fma(a->step, (double)i, a->start), 0, true);
}

FcStatus fc_arange(FcCtx *ctx, double start, double end, double step, FcDType dt, FcDevice dev, FcTensor **out,
                   FcError *err)
{
    *out = NULL;
    if (dt == FC_BOOL)
        return fc_errf(err, FC_ERR_RUNTIME, "\"arange_cpu\" not implemented for 'Bool'");
    ArangeArgs a = {.dt = dt, .start = start, .step = step};
    double size_d;
    if (fc_dtype_is_int(dt)) {
        /* The accumulate type of every integer dtype is int64: the scalars are truncated. */
        int64_t xend = 0;
        FcStatus st = to_int(start, FC_INT64, &a.istart, err);
        if (!st)
            st = to_int(end, FC_INT64, &xend, err);
        if (!st)
            st = to_int(step, FC_INT64, &a.istep, err);
        if (st)
            return st;
        if (a.istep == 0)
            return fc_errf(err, FC_ERR_RUNTIME, "step must be nonzero");
        if (!((a.istep > 0 && xend >= a.istart) || (a.istep < 0 && xend <= a.istart)))
            return fc_errf(err, FC_ERR_RUNTIME, "upper bound and larger bound inconsistent with step sign");
        /* int64 measures the length in its own (truncated) values; int32 in the given doubles. */
        if (dt == FC_INT64)
            size_d = ceil((double)(int64_t)((uint64_t)xend - (uint64_t)a.istart) / (double)a.istep);
        else
            size_d = ceil((end - start) / step);
    } else {
        if (!(step > 0 || step < 0))
            return fc_errf(err, FC_ERR_RUNTIME, "step must be nonzero");
        if (!isfinite(start) || !isfinite(end))
            return fc_errf(err, FC_ERR_RUNTIME, "unsupported range: %g -> %g", start, end);
        if (!((step > 0 && end >= start) || (step < 0 && end <= start)))
            return fc_errf(err, FC_ERR_RUNTIME, "upper bound and larger bound inconsistent with step sign");
        size_d = ceil((end - start) / step);
    }
    if (!(size_d >= 0 && size_d <= 9223372036854775807.0))
        return fc_errf(err, FC_ERR_RUNTIME, "invalid size, possible overflow?");
    int64_t n = (int64_t)size_d;
    return make_filled(ctx, dt, dev, 1, &n, fill_arange, &a, out, err);
}

/* ---- linspace ---- */

typedef struct LinspaceArgs {
    FcDType dt;
    int64_t steps;
    double start, end, step;     /* float64, and the integer dtypes (step in double) */
    float fstart, fend, fstep;   /* float32: the kernel's arithmetic is float */
    int64_t istart, iend;
} LinspaceArgs;

/* x rounded to a->dt (float16 and bfloat16 values in their own arithmetic: c10::Half's operators
 * compute in float and round each result). */
static float lin_round(const LinspaceArgs *a, double x)
{
    return (float)fc_scalar_convert((FcScalar){.f = x}, FC_FLOAT64, a->dt).f;
}

/* The element's base value at index idx: from start in the first half, back from end after. */
static double lin_base(const LinspaceArgs *a, int64_t idx)
{
    int64_t half = a->steps / 2;
    if (a->dt == FC_FLOAT16 || a->dt == FC_BFLOAT16) {
        /* start + step * idx with idx converted to the dtype, each operation rounded */
        if (idx < half)
            return lin_round(a, a->fstart + lin_round(a, a->fstep * lin_round(a, (double)idx)));
        return lin_round(a, a->fend - lin_round(a, a->fstep * lin_round(a, (double)(a->steps - idx - 1))));
    }
    switch (fc_dtype_compute(a->dt)) {
    case FC_FLOAT32:
        return idx < half ? fmaf(a->fstep, (float)idx, a->fstart)
                          : fmaf(-a->fstep, (float)(a->steps - idx - 1), a->fend);
    case FC_FLOAT64:
        return idx < half ? fma(a->step, (double)idx, a->start) : fma(-a->step, (double)(a->steps - idx - 1), a->end);
    default:
        return idx < half ? fma(a->step, (double)idx, (double)a->istart)
                          : fma(-a->step, (double)(a->steps - idx - 1), (double)a->iend);
    }
}

/* A double converted to the integer dtype as C++ does (truncation; the kernel never checks). */
static int64_t lin_trunc(double v, FcDType dt)
{
    if (v != v)
        return dt == FC_INT32 ? INT32_MIN : INT64_MIN;
    if (dt == FC_INT32)
        return (v > -2147483649.0 && v < 2147483648.0) ? (int64_t)v : INT32_MIN;
    return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (int64_t)v : INT64_MIN;
}

static void lin_store(void *data, int64_t i, const LinspaceArgs *a, double v)
{
    if (fc_dtype_is_float(a->dt))
        store(data, i, a->dt, v, 0, true);
    else
        store(data, i, a->dt, 0, lin_trunc(v, a->dt), false);
}

static void fill_linspace(void *data, int64_t n, const void *ud)
{
    const LinspaceArgs *a = ud;
    int64_t v = vec_len(a->dt), nv = n / (2 * v) * (2 * v);
    for (int64_t g = 0; g < nv; g += v) {
        /* Vectorized<T>::arange(base, step): base converted to T, then base + i * step (not
         * contracted here), in float for float32 and in double otherwise. */
        double base = lin_base(a, g);
        if (a->dt == FC_FLOAT16 || a->dt == FC_BFLOAT16) {
            for (int64_t i = 0; i < v; i++)
                lin_store(data, g + i, a, lin_round(a, base + lin_round(a, lin_round(a, (double)i) * a->fstep)));
        } else if (fc_dtype_compute(a->dt) == FC_FLOAT32) {
            float fb = (float)base;
            for (int64_t i = 0; i < v; i++) {
                float prod = (float)i * a->fstep;
                lin_store(data, g + i, a, (double)(fb + prod));
            }
        } else {
            if (!fc_dtype_is_float(a->dt))
                base = (double)lin_trunc(base, a->dt);
            for (int64_t i = 0; i < v; i++) {
                double prod = (double)i * a->step;
                lin_store(data, g + i, a, base + prod);
            }
        }
    }
    for (int64_t i = nv; i < n; i++)
        lin_store(data, i, a, lin_base(a, i));
}

typedef struct ConstArgs { FcDType dt; double f; int64_t x; bool is_float; } ConstArgs;

static void fill_const(void *data, int64_t n, const void *ud)
{
    const ConstArgs *c = ud;
    for (int64_t i = 0; i < n; i++)
        store(data, i, c->dt, c->f, c->x, c->is_float);
}

FcStatus fc_linspace(FcCtx *ctx, double start, double end, int64_t steps, FcDType dt, FcDevice dev, FcTensor **out,
                     FcError *err)
{
    *out = NULL;
    if (steps < 0)
        return fc_errf(err, FC_ERR_RUNTIME, "number of steps must be non-negative");
    if (steps <= 1) {
        /* No kernel: empty, or fill_(start). */
        ConstArgs c = {.dt = dt, .f = start, .is_float = true};
        if (fc_dtype_is_int(dt)) {
            FcStatus st = to_int(start, dt, &c.x, err);
            if (st)
                return st;
            c.is_float = false;
        }
        return make_filled(ctx, dt, dev, 1, &steps, fill_const, &c, out, err);
    }
    if (dt == FC_BOOL)
        return fc_errf(err, FC_ERR_RUNTIME, "\"linspace_cpu\" not implemented for 'Bool'");
    LinspaceArgs a = {.dt = dt, .steps = steps};
    if (dt == FC_FLOAT16 || dt == FC_BFLOAT16) {
        /* step = (Half(end) - Half(start)) / Half(steps - 1), in the dtype's arithmetic */
        a.fstart = lin_round(&a, start);
        a.fend = lin_round(&a, end);
        a.fstep = lin_round(&a, lin_round(&a, a.fend - a.fstart) / lin_round(&a, (double)(steps - 1)));
    } else if (fc_dtype_compute(dt) == FC_FLOAT32) {
        a.fstart = (float)start;
        a.fend = (float)end;
        a.fstep = (a.fend - a.fstart) / (float)(steps - 1);
    } else if (dt == FC_FLOAT64) {
        a.start = start;
        a.end = end;
        a.step = (end - start) / (double)(steps - 1);
    } else {
        FcStatus st = to_int(start, dt, &a.istart, err);
        if (!st)
            st = to_int(end, dt, &a.iend, err);
        if (st)
            return st;
        /* start and end are converted to the dtype first (uint8's -5 is 251) */
        a.istart = fc_scalar_convert((FcScalar){.i = a.istart}, FC_INT64, dt).i;
        a.iend = fc_scalar_convert((FcScalar){.i = a.iend}, FC_INT64, dt).i;
        a.step = ((double)a.iend - (double)a.istart) / (double)(steps - 1);
    }
    return make_filled(ctx, dt, dev, 1, &steps, fill_linspace, &a, out, err);
}

/* ---- eye ---- */

typedef struct EyeArgs { FcDType dt; int64_t m; } EyeArgs;

static void fill_eye(void *data, int64_t n, const void *ud)
{
    const EyeArgs *e = ud;
    for (int64_t i = 0; i < n; i++)
        store(data, i, e->dt, 0, i / e->m == i % e->m, false);
}

FcStatus fc_eye(FcCtx *ctx, int64_t n, int64_t m, FcDType dt, FcDevice dev, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (n < 0)
        return fc_errf(err, FC_ERR_RUNTIME, "n must be greater or equal to 0, got %lld", (long long)n);
    if (m < 0)
        return fc_errf(err, FC_ERR_RUNTIME, "m must be greater or equal to 0, got %lld", (long long)m);
    int64_t shape[2] = {n, m};
    EyeArgs e = {dt, m > 0 ? m : 1};
    return make_filled(ctx, dt, dev, 2, shape, fill_eye, &e, out, err);
}

/* ---- Philox 4x32-10 ---- */

typedef struct Philox { uint32_t c[4]; } Philox;

static Philox philox(uint64_t block, uint32_t stream, uint64_t seed)
{
    uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = stream, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
    }
    Philox out = {{c0, c1, c2, c3}};
    return out;
}

static double u24(uint32_t w) { return (double)(w >> 8) * (1.0 / 16777216.0); }
static double u53(uint32_t hi, uint32_t lo) { return (double)((((uint64_t)hi << 32) | lo) >> 11) * (1.0 / 9007199254740992.0); }

typedef struct RandArgs { FcDType dt; uint64_t seed, offset; bool normal; } RandArgs;

static void fill_rand(void *data, int64_t n, const void *ud)
{
    const RandArgs *a = ud;
    bool f32 = a->dt == FC_FLOAT32;
    uint32_t stream = (a->normal ? 2 : 0) + (f32 ? 0 : 1);
    int per = a->normal ? 2 : f32 ? 4 : 2;
    uint64_t cached = UINT64_MAX;
    Philox blk = {{0, 0, 0, 0}};
    for (int64_t i = 0; i < n; i++) {
        uint64_t idx = a->offset + (uint64_t)i, b = idx / (uint64_t)per;
        int w = (int)(idx % (uint64_t)per);
        if (b != cached) {
            blk = philox(b, stream, a->seed);
            cached = b;
        }
        double v;
        if (!a->normal) {
            v = f32 ? u24(blk.c[w]) : u53(blk.c[2 * w], blk.c[2 * w + 1]);
        } else {
            double u1 = 1.0 - (f32 ? u24(blk.c[0]) : u53(blk.c[0], blk.c[1]));
            double u2 = f32 ? u24(blk.c[1]) : u53(blk.c[2], blk.c[3]);
            double r = sqrt(-2.0 * log(u1)), t = 2.0 * 3.14159265358979323846 * u2;
            v = w == 0 ? r * cos(t) : r * sin(t);
        }
        store(data, i, a->dt, v, 0, true);
    }
}

static FcStatus random_tensor(FcCtx *ctx, FcDType dt, int ndim, const int64_t *shape, int64_t seed, FcDevice dev,
                              bool normal, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (!fc_dtype_is_float(dt))
        return fc_errf(err, FC_ERR_RUNTIME, "\"%s\" not implemented for '%s'", normal ? "normal_kernel_cpu" : "check_uniform_bounds",
                    fc_dtype_torch_name(dt));
    RandArgs a = {dt, seed < 0 ? ctx->seed : (uint64_t)seed, seed < 0 ? ctx->rng_offset : 0, normal};
    FcStatus st = make_filled(ctx, dt, dev, ndim, shape, fill_rand, &a, out, err);
    if (st == FC_OK && seed < 0)
        ctx->rng_offset += (uint64_t)fc_tensor_numel(*out);
    return st;
}

FcStatus fc_rand(FcCtx *ctx, FcDType dt, int ndim, const int64_t *shape, int64_t seed, FcDevice dev, FcTensor **out,
                 FcError *err)
{
    return random_tensor(ctx, dt, ndim, shape, seed, dev, false, out, err);
}

FcStatus fc_randn(FcCtx *ctx, FcDType dt, int ndim, const int64_t *shape, int64_t seed, FcDevice dev, FcTensor **out,
                  FcError *err)
{
    return random_tensor(ctx, dt, ndim, shape, seed, dev, true, out, err);
}
