/* test_cpu_math.c — the CPU backend's exp, tanh, log, log1p, expm1, log2, log10, erf, erfc, asin,
 * acos, atan, sin, cos and tan (backend/cpu/cpu_math.h and its siblings cpu_math_erf.h,
 * cpu_math_arc.h, cpu_math_trig.h) against torch's, bit for bit.
 *
 * The golden files (tests/golden/math/, written by gen_math.py with torch, whose CPU functions of
 * those names are SLEEF's vector functions) hold inputs and torch's results of those, of softmax
 * over the last dim and of sigmoid, for float32 and float64: thresholds, denormal results, NaN
 * payloads and signs included; the trigonometric functions' large arguments fill vectors of their
 * own, as SLEEF picks one argument reduction per vector. Each is
 * run through fcdim as a program would (stored and lazy inputs), which on an x86-64 with FMA
 * runs the vectorised FMA clone of the chunk loops; and cpu_math.h's functions are also called
 * directly from this file, which is compiled for the baseline ISA (fma from libm, the code a CPU
 * without FMA runs), on the golden inputs and on sweeps that both paths must agree on. Torch is
 * not needed; the files are read relative to the repository root, where `make test` runs. */
#include "tests.h"

#include "fcdim.h"
/* White-box: the portable build of the functions the chunk loops inline. */
#include "cpu/cpu_math.h"
#include "cpu/cpu_math_arc.h"
#include "cpu/cpu_math_erf.h"
#include "cpu/cpu_math_trig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_DIR "tests/golden/math/"

static const FcDType dtypes[2] = {FC_FLOAT32, FC_FLOAT64};

static FcCtx *ctx;

static void setup(void)
{
    FcError err;
    ck_assert_int_eq(fc_ctx_new(&ctx, &err), FC_OK);
}

static void teardown(void)
{
    fc_ctx_free(ctx);
    ctx = NULL;
}

/* GOLDEN_DIR/<what>_<dtype>.npy: a (2, ...) array of inputs and torch's results, of dtype dt. */
static FcView load_golden(const char *what, FcDType dt)
{
    char path[256];
    snprintf(path, sizeof path, GOLDEN_DIR "%s_%s.npy", what, fc_dtype_name(dt));
    FcView v;
    FcError err;
    FcStatus st = fc_npy_load(path, &v, &err);
    ck_assert_msg(st == FC_OK, "%s: %s", path, err.msg);
    ck_assert_int_eq(v.dtype, dt);
    ck_assert_int_ge(v.ndim, 2);
    ck_assert_int_eq(v.shape[0], 2);
    return v;
}

/* Half k (0: inputs, 1: results) of a golden array, as a C-contiguous view of its own. */
static FcView golden_half(const FcView *g, int k)
{
    FcView h = *g;
    h.ndim = g->ndim - 1;
    memmove(h.shape, g->shape + 1, sizeof(int64_t) * (size_t)h.ndim);
    fc_contiguous_strides(h.ndim, h.shape, h.strides);
    h.offset = 0;
    h.data = (char *)g->data + (size_t)k * (size_t)fc_view_numel(&h) * fc_dtype_size(g->dtype);
    return h;
}

/* The element bits of a contiguous float view, as uint64. */
static uint64_t bits_at(const void *data, FcDType dt, int64_t i)
{
    if (dt == FC_FLOAT32) {
        uint32_t b;
        memcpy(&b, (const float *)data + i, 4);
        return b;
    }
    uint64_t b;
    memcpy(&b, (const double *)data + i, 8);
    return b;
}

static double value_at(const void *data, FcDType dt, int64_t i)
{
    return dt == FC_FLOAT32 ? ((const float *)data)[i] : ((const double *)data)[i];
}

/* got (a tensor) and want (n contiguous values) have the same bits; x names the inputs. */
static void assert_same_bits(const char *what, FcTensor *got, const FcView *x, const FcView *want)
{
    FcView v;
    FcError err;
    ck_assert_int_eq(fc_host_view(ctx, got, &v, &err), FC_OK);
    int64_t n = fc_view_numel(want);
    ck_assert_int_eq(fc_view_numel(&v), n);
    ck_assert_int_eq(v.dtype, want->dtype);
    const char *base = (const char *)v.data + v.offset * (int64_t)fc_dtype_size(v.dtype);
    int64_t contiguous[FC_MAX_DIMS];
    fc_contiguous_strides(v.ndim, v.shape, contiguous);
    for (int d = 0; d < v.ndim; d++)
        ck_assert(v.shape[d] == 1 || v.strides[d] == contiguous[d]);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(bits_at(base, v.dtype, i) == bits_at(want->data, v.dtype, i),
                      "%s %s [%lld]: x = %a gives %a (0x%llx), torch %a (0x%llx)", what, fc_dtype_name(v.dtype),
                      (long long)i, value_at(x->data, v.dtype, i), value_at(base, v.dtype, i),
                      (unsigned long long)bits_at(base, v.dtype, i), value_at(want->data, v.dtype, i),
                      (unsigned long long)bits_at(want->data, v.dtype, i));
}

/* A stored tensor of view h, made lazy (-(-x), the same bits) when asked. */
static FcTensor *tensor_of(const FcView *h, bool lazy)
{
    FcTensor *t = NULL, *a = NULL, *b = NULL;
    FcError err;
    ck_assert_int_eq(fc_from_view(ctx, h, fc_cpu(), &t, &err), FC_OK);
    if (!lazy)
        return t;
    ck_assert_int_eq(fc_unary(ctx, FC_OP_NEG, t, &a, &err), FC_OK);
    ck_assert_int_eq(fc_unary(ctx, FC_OP_NEG, a, &b, &err), FC_OK);
    fc_tensor_release(t);
    fc_tensor_release(a);
    return b;
}

/* ---- through fcdim: the chunk loops ---- */

/* _i: dtype (bit 0) and lazy input (bit 1). */
static void run_unary(const char *what, FcOp op, int i)
{
    FcDType dt = dtypes[i & 1];
    bool lazy = (i & 2) != 0;
    FcView g = load_golden(what, dt);
    FcView x = golden_half(&g, 0), want = golden_half(&g, 1);
    FcTensor *in = tensor_of(&x, lazy), *out = NULL;
    FcError err;
    ck_assert_int_eq(fc_unary(ctx, op, in, &out, &err), FC_OK);
    assert_same_bits(what, out, &x, &want);
    fc_tensor_release(in);
    fc_tensor_release(out);
    free(g.data);
}

/* The pointwise functions with golden files, by op; _i: op (_i / 4), dtype (bit 0), lazy input
 * (bit 1). */
static const FcOp golden_ops[] = {FC_OP_EXP,  FC_OP_SIGMOID, FC_OP_TANH, FC_OP_LOG,  FC_OP_LOG1P, FC_OP_EXPM1,
                                  FC_OP_LOG2, FC_OP_LOG10,   FC_OP_ERF,  FC_OP_ERFC, FC_OP_ASIN,  FC_OP_ACOS,
                                  FC_OP_ATAN, FC_OP_SIN,     FC_OP_COS,  FC_OP_TAN};
enum { NGOLDEN = sizeof golden_ops / sizeof golden_ops[0] };

START_TEST(unary_matches_torch)
{
    FcOp op = golden_ops[_i / 4];
    run_unary(fc_op_name(op), op, _i % 4);
}
END_TEST

/* Rows whose sum of exp(x - max) is exactly 1 (see gen_exp.py): softmax gives exp's bits. */
START_TEST(softmax_matches_torch)
{
    FcDType dt = dtypes[_i & 1];
    FcView g = load_golden("softmax", dt);
    FcView x = golden_half(&g, 0), want = golden_half(&g, 1);
    FcTensor *in = tensor_of(&x, (_i & 2) != 0), *out = NULL;
    FcError err;
    ck_assert_int_eq(fc_softmax(ctx, in, -1, false, &out, &err), FC_OK);
    assert_same_bits("softmax", out, &x, &want);
    fc_tensor_release(in);
    fc_tensor_release(out);
    free(g.data);
}
END_TEST

/* ---- the portable build ---- */

/* The functions of cpu_math.h that the tests below take, by op. */
static const FcOp math_ops[] = {FC_OP_EXP,  FC_OP_TANH, FC_OP_LOG,  FC_OP_LOG1P, FC_OP_EXPM1, FC_OP_LOG2,
                                FC_OP_LOG10, FC_OP_ERF, FC_OP_ERFC, FC_OP_ASIN,  FC_OP_ACOS,  FC_OP_ATAN,
                                FC_OP_SIN,  FC_OP_COS,  FC_OP_TAN};
enum { NMATH = sizeof math_ops / sizeof math_ops[0] };

/* cpu_math.h's functions, called from this file's baseline build. */
static uint64_t portable(FcOp op, FcDType dt, const void *x, int64_t i)
{
    if (dt == FC_FLOAT32) {
        float v = ((const float *)x)[i];
        switch (op) {
        case FC_OP_EXP: return cpu_f32_bits(cpu_exp_f32(v));
        case FC_OP_TANH: return cpu_f32_bits(cpu_tanh_f32(v));
        case FC_OP_LOG: return cpu_f32_bits(cpu_log_f32(v));
        case FC_OP_LOG1P: return cpu_f32_bits(cpu_log1p_f32(v));
        case FC_OP_EXPM1: return cpu_f32_bits(cpu_expm1_f32(v));
        case FC_OP_LOG2: return cpu_f32_bits(cpu_log2_f32(v));
        case FC_OP_LOG10: return cpu_f32_bits(cpu_log10_f32(v));
        case FC_OP_ERF: return cpu_f32_bits(cpu_erf_f32(v));
        case FC_OP_ERFC: return cpu_f32_bits(cpu_erfc_f32(v));
        case FC_OP_ASIN: return cpu_f32_bits(cpu_asin_f32(v));
        case FC_OP_ACOS: return cpu_f32_bits(cpu_acos_f32(v));
        case FC_OP_ATAN: return cpu_f32_bits(cpu_atan_f32(v));
        case FC_OP_SIN: return cpu_f32_bits(cpu_sin_f32(v));
        case FC_OP_COS: return cpu_f32_bits(cpu_cos_f32(v));
        case FC_OP_TAN: return cpu_f32_bits(cpu_tan_f32(v));
        default: ck_abort_msg("no portable %s", fc_op_name(op));
        }
    }
    double v = ((const double *)x)[i];
    switch (op) {
    case FC_OP_EXP: return cpu_f64_bits(cpu_exp_f64(v));
    case FC_OP_TANH: return cpu_f64_bits(cpu_tanh_f64(v));
    case FC_OP_LOG: return cpu_f64_bits(cpu_log_f64(v));
    case FC_OP_LOG1P: return cpu_f64_bits(cpu_log1p_f64(v));
    case FC_OP_EXPM1: return cpu_f64_bits(cpu_expm1_f64(v));
    case FC_OP_LOG2: return cpu_f64_bits(cpu_log2_f64(v));
    case FC_OP_LOG10: return cpu_f64_bits(cpu_log10_f64(v));
    case FC_OP_ERF: return cpu_f64_bits(cpu_erf_f64(v));
    case FC_OP_ERFC: return cpu_f64_bits(cpu_erfc_f64(v));
    case FC_OP_ASIN: return cpu_f64_bits(cpu_asin_f64(v));
    case FC_OP_ACOS: return cpu_f64_bits(cpu_acos_f64(v));
    case FC_OP_ATAN: return cpu_f64_bits(cpu_atan_f64(v));
    case FC_OP_SIN: return cpu_f64_bits(cpu_sin_f64(v));
    case FC_OP_COS: return cpu_f64_bits(cpu_cos_f64(v));
    case FC_OP_TAN: return cpu_f64_bits(cpu_tan_f64(v));
    default: ck_abort_msg("no portable %s", fc_op_name(op));
    }
    return 0;
}

/* Element i of n as the chunk loop computes it: sin, cos and tan take the way of the largest
 * element of their 32 bytes (counted from element 0, where the one chunk loop starts). */
static uint64_t portable_in_vectors(FcOp op, FcDType dt, const void *x, int64_t i, int64_t n)
{
    if (op != FC_OP_SIN && op != FC_OP_COS && op != FC_OP_TAN)
        return portable(op, dt, x, i);
    int64_t vec = dt == FC_FLOAT32 ? 8 : 4, lo = i / vec * vec, hi = lo + vec < n ? lo + vec : n;
    int way = 0;
    for (int64_t j = lo; j < hi; j++) {
        int w = dt == FC_FLOAT32 ? cpu_trig_way_f32(((const float *)x)[j]) : cpu_trig_way_f64(((const double *)x)[j]);
        way = w > way ? w : way;
    }
    if (dt == FC_FLOAT32) {
        float v = ((const float *)x)[i];
        return cpu_f32_bits(op == FC_OP_SIN ? cpu_sin_f32_way(v, way)
                            : op == FC_OP_COS ? cpu_cos_f32_way(v, way) : cpu_tan_f32_way(v, way));
    }
    double v = ((const double *)x)[i];
    return cpu_f64_bits(op == FC_OP_SIN ? cpu_sin_f64_way(v, way)
                        : op == FC_OP_COS ? cpu_cos_f64_way(v, way) : cpu_tan_f64_way(v, way));
}

/* _i: dtype (bit 0), the op (math_ops[_i >> 1]). */
START_TEST(portable_matches_torch)
{
    FcDType dt = dtypes[_i & 1];
    FcOp op = math_ops[_i >> 1];
    FcView g = load_golden(fc_op_name(op), dt);
    FcView x = golden_half(&g, 0), want = golden_half(&g, 1);
    int64_t n = fc_view_numel(&x);
    for (int64_t i = 0; i < n; i++) {
        uint64_t got = portable(op, dt, x.data, i);
        ck_assert_msg(got == bits_at(want.data, dt, i),
                      "portable %s %s [%lld]: x = %a gives 0x%llx, torch %a (0x%llx)", fc_op_name(op),
                      fc_dtype_name(dt), (long long)i, value_at(x.data, dt, i), (unsigned long long)got,
                      value_at(want.data, dt, i), (unsigned long long)bits_at(want.data, dt, i));
    }
    free(g.data);
}
END_TEST

/* A 64-bit xorshift, for sweeps that are the same on every run. */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The chunk loops (vectorised where the CPU allows) and the portable functions agree over a
 * sweep: float32 every 2^15-th of all 2^32 bit patterns (NaNs, infinities, huge and tiny values)
 * and 2^16 bit patterns spread evenly over [-104, 104] (exp's thresholds -104 and 100, tanh's
 * 8.66); float64 random values over [-1010, 720] and random bit patterns. (Every float32 is
 * compared with SLEEF itself by tests/golden/check_math_sleef.c, outside the suite.) _i: dtype (bit 0), the
 * op (math_ops[_i >> 1]). */
START_TEST(kernel_matches_portable_sweep)
{
    FcDType dt = dtypes[_i & 1];
    FcOp op = math_ops[_i >> 1];
#if defined(__SANITIZE_ADDRESS__)
    enum { N = 1 << 15 };   /* the sanitizers' pass (make check's second) runs a part of the sweep */
#else
    enum { N = 1 << 18 };
#endif
    FcView v;
    memset(&v, 0, sizeof v);
    v.dtype = dt;
    v.ndim = 1;
    v.shape[0] = N + 3;     /* a short chunk at the end */
    v.strides[0] = 1;
    v.data = malloc((size_t)v.shape[0] * fc_dtype_size(dt));
    ck_assert_ptr_nonnull(v.data);
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (int64_t i = 0; i < v.shape[0]; i++) {
        if (dt == FC_FLOAT32) {
            uint32_t b = (i & 1) ? (uint32_t)(i >> 1) << 15
                                 : (i & 2 ? 0x80000000u : 0u) + (uint32_t)((i >> 2) * 0x42C8 % 0x42D00001);
            memcpy((float *)v.data + i, &b, 4);
        } else {
            uint64_t r = next_rand(&s);
            double d;
            if (i % 4 == 3)
                memcpy(&d, &r, 8);
            else
                d = (double)(r >> 11) / 9007199254740992.0 * 1730.0 - 1010.0;
            ((double *)v.data)[i] = d;
        }
    }
    FcTensor *in = tensor_of(&v, false), *out = NULL;
    FcError err;
    ck_assert_int_eq(fc_unary(ctx, op, in, &out, &err), FC_OK);
    FcView o;
    ck_assert_int_eq(fc_host_view(ctx, out, &o, &err), FC_OK);
    ck_assert(o.offset == 0 && o.strides[0] == 1);
    for (int64_t i = 0; i < v.shape[0]; i++) {
        uint64_t want = portable_in_vectors(op, dt, v.data, i, v.shape[0]);
        ck_assert_msg(bits_at(o.data, dt, i) == want, "%s %s [%lld]: x = %a, kernel %a (0x%llx), portable 0x%llx",
                      fc_op_name(op), fc_dtype_name(dt), (long long)i, value_at(v.data, dt, i), value_at(o.data, dt, i),
                      (unsigned long long)bits_at(o.data, dt, i), (unsigned long long)want);
    }
    fc_tensor_release(in);
    fc_tensor_release(out);
    free(v.data);
}
END_TEST

/* ---- float16 and bfloat16 (tests/golden/dtypes/, gen_dtypes.py) ---- */

#define DTYPES_DIR "tests/golden/dtypes/"

static FcView load_dtypes(const char *name, FcDType dt)
{
    FcView v;
    FcError err;
    FcStatus st = fc_npy_load(name, &v, &err);
    ck_assert_msg(st == FC_OK, "%s: %s", name, err.msg);
    ck_assert_int_eq(v.dtype, dt);
    ck_assert_int_eq(v.ndim, 1);
    return v;
}

/* The bits of element i of a stored 16-bit tensor's host view. */
static uint16_t bits16(const FcView *v, int64_t i)
{
    uint16_t b;
    memcpy(&b, (const char *)v->data + (v->offset + i * v->strides[0]) * 2, 2);
    return b;
}

/* _i: 0 the fcdim.h helpers, 1 the CPU executor's casts (a stored and a lazy input). */
START_TEST(f16_to_f32_matches_torch)
{
    FcView bits = load_dtypes(DTYPES_DIR "f16_bits.npy", FC_INT16), want = load_dtypes(DTYPES_DIR "f16_to_f32.npy", FC_FLOAT32);
    ck_assert_int_eq(bits.shape[0], 65536);
    FcTensor *in = NULL, *f = NULL;
    FcView got = {0};
    FcError err;
    if (_i == 1) {
        FcView hv = bits;
        hv.dtype = FC_FLOAT16;          /* the same bits read as float16 */
        ck_assert_int_eq(fc_from_view(ctx, &hv, fc_cpu(), &in, &err), FC_OK);
        ck_assert_int_eq(fc_cast(ctx, in, FC_FLOAT32, &f, &err), FC_OK);
        ck_assert_int_eq(fc_host_view(ctx, f, &got, &err), FC_OK);
    }
    for (int64_t i = 0; i < 65536; i++) {
        uint16_t hb = ((const uint16_t *)bits.data)[i];
        uint32_t w, g;
        memcpy(&w, (const float *)want.data + i, 4);
        if (_i == 0) {
            g = fc_f32_bits(fc_f16_to_f32(hb));
        } else {
            memcpy(&g, (const char *)got.data + (got.offset + i * got.strides[0]) * 4, 4);
        }
        ck_assert_msg(g == w, "float16 0x%04x: 0x%08x, torch 0x%08x", hb, g, w);
    }
    fc_tensor_release(in);
    fc_tensor_release(f);
    free(bits.data);
    free(want.data);
}
END_TEST

/* _i: bit 0 bfloat16 (else float16), bit 1 through the CPU executor (else the helpers), bit 2 a
 * lazy input. */
START_TEST(f32_rounding_matches_torch)
{
    bool bf = _i & 1, exec = _i & 2, lazy = _i & 4;
    FcView x = load_dtypes(DTYPES_DIR "round_in.npy", FC_FLOAT32);
    FcView want = load_dtypes(bf ? DTYPES_DIR "round_bf16.npy" : DTYPES_DIR "round_f16.npy", FC_INT16);
    int64_t n = x.shape[0];
    ck_assert_int_eq(want.shape[0], n);
    FcTensor *in = NULL, *out = NULL;
    FcView got = {0};
    FcError err;
    if (exec) {
        in = tensor_of(&x, lazy);
        ck_assert_int_eq(fc_cast(ctx, in, bf ? FC_BFLOAT16 : FC_FLOAT16, &out, &err), FC_OK);
        ck_assert_int_eq(fc_host_view(ctx, out, &got, &err), FC_OK);
    }
    for (int64_t i = 0; i < n; i++) {
        float f = ((const float *)x.data)[i];
        uint16_t w = ((const uint16_t *)want.data)[i];
        uint16_t g = exec ? bits16(&got, i) : bf ? fc_f32_to_bf16(f) : fc_f32_to_f16(f);
        ck_assert_msg(g == w, "%s of %a (0x%08x): 0x%04x, torch 0x%04x", bf ? "bfloat16" : "float16", (double)f,
                      fc_f32_bits(f), g, w);
    }
    fc_tensor_release(in);
    fc_tensor_release(out);
    free(x.data);
    free(want.data);
}
END_TEST

Suite *cpu_math_suite(void)
{
    Suite *s = suite_create("cpu_math");
    TCase *tc = tcase_create("torch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, unary_matches_torch, 0, 4 * NGOLDEN);
    tcase_add_loop_test(tc, softmax_matches_torch, 0, 4);
    tcase_add_loop_test(tc, portable_matches_torch, 0, 2 * NMATH);
    tcase_add_loop_test(tc, f16_to_f32_matches_torch, 0, 2);
    tcase_add_loop_test(tc, f32_rounding_matches_torch, 0, 8);
    suite_add_tcase(s, tc);
    tc = tcase_create("sweep");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, kernel_matches_portable_sweep, 0, 2 * NMATH);
    suite_add_tcase(s, tc);
    return s;
}
