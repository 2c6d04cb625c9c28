/* test_cpu_backend.c — the CPU backend (backend/cpu/): memory, scheduled kernels built by hand
 * (loads, constants, iotas, every op family, stores and reductions of both shapes), PyTorch's
 * edge cases (floor division and remainder signs, -0.0, NaN in min/max/amax/argmax, integer
 * division by zero, gathers out of range, float-to-int casts of NaN), negative indices that wrap,
 * scattered stores (plain and accumulating, duplicates in loop order), gathers and scatters
 * whose indices hold along the chunk loop (flat) against the element-by-element path, chunk
 * boundaries, the same results with 32- and 64-bit offsets (index32), addresses past 2^32
 * elements and loops longer than 2^31, results that do not depend on the thread count, matrix
 * products against a naive reference, and interrupts.
 *
 * Kernels are assembled with a small builder (KB) in which every instruction writes its own
 * register and invariance is derived as fcdim derives it (constants, loads with no varying
 * stride, ops over invariant operands). Results are compared exactly (floats bit for bit). */
#include "tests.h"

#include "backend.h"
#include "mem.h"
#include "cpu/cpu_plan.h"          /* the executor's plan of a kernel, for the weighted rows */
#include "watch.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* ---- fixture ---- */

static FcBackend *be;       /* 4 threads */
static FcError err;

static void setup(void)
{
    be = fc_cpu_backend_new(4);
    ck_assert_ptr_nonnull(be);
    memset(&err, 0, sizeof err);
}

static void teardown(void)
{
    be->destroy(be);
    be = NULL;
}

/* ---- kernel builder ---- */

enum { KB_CODE = 48, KB_GATHER = 4 };

typedef struct KB {
    FcKernel k;
    FcInstr code[KB_CODE];
    int64_t strides[KB_CODE][FC_MAX_DIMS];
    FcGather gath[KB_CODE][KB_GATHER];
    FcGather scat[KB_GATHER];
    void *bufs[16];
} KB;

static void kb_init(KB *b, int nloop, const int64_t *ext)
{
    memset(b, 0, sizeof *b);
    b->k.nloop = nloop;
    b->k.chunk_loop = -1;
    for (int l = 0; l < FC_MAX_DIMS; l++)
        b->k.owner[l] = -1;
    for (int l = 0; l < nloop; l++)
        b->k.extent[l] = ext[l];
    b->k.code = b->code;
    b->k.bufs = b->bufs;
    b->k.nthreads = 4;
    b->k.result = -1;
}

static int kb_add(KB *b, FcOp op, FcDType dt, FcDType src, int x, int y, int z, bool inv)
{
    ck_assert_int_lt(b->k.ncode, KB_CODE);
    int r = b->k.ncode++;
    FcInstr *in = &b->code[r];
    in->op = op;
    in->dtype = dt;
    in->src_dtype = src;
    in->dst = r;
    in->a = x;
    in->b = y;
    in->c = z;
    in->invariant = inv;
    b->k.nreg = b->k.ncode;
    return r;
}

static bool kb_inv(const KB *b, int r) { return r < 0 || b->code[r].invariant; }

static int kb_load(KB *b, FcDType dt, const void *data, int64_t offset, const int64_t *strides)
{
    bool inv = true;
    for (int l = 0; l < b->k.nloop; l++)
        inv = inv && strides[l] == 0;
    int r = kb_add(b, FC_OP_LOAD, dt, dt, -1, -1, -1, inv);
    FcInstr *in = &b->code[r];
    for (int l = 0; l < b->k.nloop; l++)
        b->strides[r][l] = strides[l];
    in->strides = b->strides[r];
    in->buf = b->k.nbufs++;
    b->bufs[in->buf] = (void *)data;
    in->offset = offset;
    return r;
}

/* Adds a gathered dim to load r: + index_reg * stride, index in [0, extent), named dim g in
 * messages; the caller may set wrap and dim on the result. */
static FcGather *kb_gather(KB *b, int r, int index_reg, int64_t stride, int64_t extent)
{
    FcInstr *in = &b->code[r];
    ck_assert_int_lt(in->ngather, KB_GATHER);
    int g = in->ngather++;
    b->gath[r][g] = (FcGather){.reg = index_reg, .stride = stride, .extent = extent, .dim = g};
    in->gathers = b->gath[r];
    in->invariant = in->invariant && kb_inv(b, index_reg);
    return &b->gath[r][g];
}

static int kb_const(KB *b, FcDType dt, FcScalar v)
{
    int r = kb_add(b, FC_OP_CONST, dt, dt, -1, -1, -1, true);
    b->code[r].konst = v;
    return r;
}
static int kb_f(KB *b, FcDType dt, double v) { return kb_const(b, dt, (FcScalar){.f = v}); }
static int kb_i(KB *b, FcDType dt, int64_t v) { return kb_const(b, dt, (FcScalar){.i = v}); }

static int kb_iota(KB *b, int loop)
{
    int r = kb_add(b, FC_OP_IOTA, FC_INT64, FC_INT64, -1, -1, -1, false);
    b->code[r].loop = loop;
    return r;
}

/* An op; comparisons, casts and isnan take src from operand x. */
static int kb_op(KB *b, FcOp op, FcDType dt, int x, int y, int z)
{
    FcDType src = op == FC_OP_WHERE ? dt : b->code[x].dtype;
    return kb_add(b, op, dt, src, x, y, z, kb_inv(b, x) && kb_inv(b, y) && kb_inv(b, z));
}

static void kb_store(KB *b, int r, void *out, FcDType dt, int64_t offset, const int64_t *ostr)
{
    b->k.result = r;
    b->k.reduce = FC_OP_NONE;
    b->k.out = out;
    b->k.out_dtype = dt;
    b->k.out_offset = offset;
    for (int l = 0; l < b->k.nloop; l++)
        b->k.out_strides[l] = ostr[l];
}

static void kb_reduce(KB *b, FcOp op, int r, void *out, FcDType dt, const bool *red, const int64_t *ostr)
{
    kb_store(b, r, out, dt, 0, ostr);
    b->k.reduce = op;
    for (int l = 0; l < b->k.nloop; l++)
        b->k.reduced[l] = red[l];
}

/* Adds a scattered dim to the store: + index_reg * stride, as kb_gather. */
static FcGather *kb_scatter(KB *b, int index_reg, int64_t stride, int64_t extent)
{
    ck_assert_int_lt(b->k.nscatter, KB_GATHER);
    int g = b->k.nscatter++;
    b->scat[g] = (FcGather){.reg = index_reg, .stride = stride, .extent = extent, .dim = g};
    b->k.scatter = b->scat;
    return &b->scat[g];
}

static FcStatus kb_run(KB *b) { return be->run(be, &b->k, &err); }

/* ---- one-dimensional helpers ---- */

static const int64_t ONE[1] = {1};

/* out[i] = op(x[i], y[i]) over n elements of dtype dt (result dtype rdt). */
static FcStatus binary(FcOp op, FcDType dt, FcDType rdt, const void *x, const void *y, void *out, int64_t n)
{
    KB b;
    kb_init(&b, 1, &n);
    int a = kb_load(&b, dt, x, 0, ONE);
    int c = kb_load(&b, dt, y, 0, ONE);
    kb_store(&b, kb_op(&b, op, rdt, a, c, -1), out, rdt, 0, ONE);
    return kb_run(&b);
}

static FcStatus unary(FcOp op, FcDType dt, FcDType rdt, const void *x, void *out, int64_t n)
{
    KB b;
    kb_init(&b, 1, &n);
    int a = kb_load(&b, dt, x, 0, ONE);
    kb_store(&b, kb_op(&b, op, rdt, a, -1, -1), out, rdt, 0, ONE);
    return kb_run(&b);
}

/* Bitwise equality, except that any NaN equals any NaN. */
static bool same_f64(double a, double b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }
static bool same_f32(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

#define ck_assert_same_f64(a, b)                                                                   \
    ck_assert_msg(same_f64((a), (b)), "%s = %.17g, expected %.17g", #a, (double)(a), (double)(b))
#define ck_assert_same_f32(a, b)                                                                   \
    ck_assert_msg(same_f32((a), (b)), "%s = %.9g, expected %.9g", #a, (double)(a), (double)(b))

/* A deterministic pseudo-random sequence (xorshift) for large inputs. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static float rng_float(uint64_t *s) { return (float)((double)(rng_next(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

/* ---- memory ---- */

START_TEST(test_table)
{
    ck_assert_str_eq(be->name, "cpu");
    ck_assert_int_eq(be->device, FC_DEV_CPU);
}
END_TEST

START_TEST(test_alloc_aligned_and_unique)
{
    void *p[4];
    size_t sizes[4] = {0, 0, 1, 1000};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(be->alloc(be, sizes[i], &p[i], &err), FC_OK);
        ck_assert_ptr_nonnull(p[i]);
        ck_assert_uint_eq((uintptr_t)p[i] % 64, 0);
    }
    ck_assert_ptr_ne(p[0], p[1]);
    memset(p[3], 7, 1000);
    for (int i = 0; i < 4; i++)
        be->free(be, p[i]);
    be->free(be, NULL);
}
END_TEST

START_TEST(test_alloc_failure)
{
    void *p = (void *)1;
    ck_assert_int_eq(be->alloc(be, SIZE_MAX / 2, &p, &err), FC_ERR_NOMEM);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(err.msg, "you tried to allocate"));
}
END_TEST

/* A large block freed is kept and handed to the next allocation it fits (at most an eighth to
 * spare), not to a larger or much smaller one; the oldest of too many goes. */
START_TEST(test_alloc_cache)
{
    long h0 = fc_cpu_cache_hits(be);
    if (h0 < 0)
        return;                 /* no cache under AddressSanitizer */
    size_t big = 24u << 20;
    void *a, *b, *c;
    /* a block of a few huge pages fits its own request again wherever its mapping falls: glibc
     * leaves up to a huge page past its end, by the mapping's place, which mappings of odd sizes
     * between move (first, before this test's frees of larger blocks raise glibc's threshold for
     * a mapped block) */
    void *held[16], *spacer[16];
    for (int i = 0; i < 16; i++) {
        size_t sp = (size_t)(1 + 61 * i) * 4096, req = (size_t)(4 + i % 4) << 21;
        spacer[i] = mmap(NULL, sp, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ck_assert_ptr_ne(spacer[i], MAP_FAILED);
        ck_assert_int_eq(be->alloc(be, req, &a, &err), FC_OK);
        be->free(be, a);
        ck_assert_int_eq(be->alloc(be, req, &held[i], &err), FC_OK);
        ck_assert_int_eq(fc_cpu_cache_hits(be), h0 + 1);
        h0++;
    }
    for (int i = 0; i < 16; i++) {
        be->free(be, held[i]);
        munmap(spacer[i], (size_t)(1 + 61 * i) * 4096);
    }
    /* a block of whole huge pages with more than an eighth of its request to spare (64 x 256 x
     * 14 x 14 floats: 12.25 MiB in 14) fits the same request again (that block, or one of its
     * size kept before: the hit is what counts) */
    size_t act = (size_t)64 * 256 * 14 * 14 * 4;
    ck_assert_int_eq(be->alloc(be, act, &a, &err), FC_OK);
    h0 = fc_cpu_cache_hits(be);
    be->free(be, a);
    ck_assert_int_eq(be->alloc(be, act, &c, &err), FC_OK);
    ck_assert_int_eq(fc_cpu_cache_hits(be), h0 + 1);
    be->free(be, c);
    h0++;
    ck_assert_int_eq(be->alloc(be, big, &a, &err), FC_OK);
    memset(a, 1, big);
    be->free(be, a);
    ck_assert_int_eq(be->alloc(be, 2 * big, &b, &err), FC_OK);       /* too large for it */
    ck_assert_int_eq(fc_cpu_cache_hits(be), h0);
    ck_assert_int_eq(be->alloc(be, 17u << 20, &c, &err), FC_OK);    /* too small for it */
    ck_assert_int_eq(fc_cpu_cache_hits(be), h0);
    be->free(be, c);
    ck_assert_int_eq(be->alloc(be, big - 4096, &c, &err), FC_OK);
    ck_assert_ptr_eq(c, a);
    ck_assert_int_eq(fc_cpu_cache_hits(be), h0 + 1);
    ck_assert_uint_eq((uintptr_t)c % 64, 0);
    be->free(be, b);
    be->free(be, c);
    /* more blocks than the cache keeps: the first ones freed are gone */
    void *many[12];
    for (int i = 0; i < 12; i++)
        ck_assert_int_eq(be->alloc(be, big + (size_t)i * (64u << 20), &many[i], &err), FC_OK);
    for (int i = 0; i < 12; i++)
        be->free(be, many[i]);
    long h1 = fc_cpu_cache_hits(be);
    ck_assert_int_eq(be->alloc(be, big + 11 * (64u << 20), &a, &err), FC_OK);
    ck_assert_int_eq(fc_cpu_cache_hits(be), h1 + 1);
    ck_assert_int_eq(be->alloc(be, big, &b, &err), FC_OK);
    ck_assert_int_eq(fc_cpu_cache_hits(be), h1 + 1);
    be->free(be, a);
    be->free(be, b);
}
END_TEST

START_TEST(test_copies)
{
    int32_t src[5] = {1, 2, 3, 4, 5}, dev[5], back[5];
    ck_assert_int_eq(be->from_host(be, dev, src, sizeof src, &err), FC_OK);
    ck_assert_int_eq(be->to_host(be, back, dev, sizeof dev, &err), FC_OK);
    ck_assert_mem_eq(back, src, sizeof src);
}
END_TEST

/* ---- elementwise basics and chunk boundaries ---- */

static const int64_t chunk_sizes[] = {1, 255, 256, 257, 1000, 70000};

START_TEST(test_add_f32_sizes)
{
    int64_t n = chunk_sizes[_i];
    float *x = calloc((size_t)n, 4), *y = calloc((size_t)n, 4), *o = calloc((size_t)n + 1, 4);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)i * 0.5f;
        y[i] = (float)(n - i);
    }
    o[n] = 42.0f;
    ck_assert_int_eq(binary(FC_OP_ADD, FC_FLOAT32, FC_FLOAT32, x, y, o, n), FC_OK);
    for (int64_t i = 0; i < n; i++)
        ck_assert_same_f32(o[i], x[i] + y[i]);
    ck_assert_same_f32(o[n], 42.0f);   /* nothing written past the end */
    free(x);
    free(y);
    free(o);
}
END_TEST

/* A fused expression over several loads, with a strided output (every other element). */
START_TEST(test_fused_strided_output)
{
    int64_t n = 1000;
    double x[1000], y[1000], o[2000];
    for (int i = 0; i < n; i++) {
        x[i] = i - 500;
        y[i] = i * 0.25;
    }
    for (int i = 0; i < 2 * n; i++)
        o[i] = -1;
    KB b;
    kb_init(&b, 1, &n);
    int a = kb_load(&b, FC_FLOAT64, x, 0, ONE);
    int c = kb_load(&b, FC_FLOAT64, y, 0, ONE);
    int zero = kb_f(&b, FC_FLOAT64, 0);
    int gt = kb_op(&b, FC_OP_GT, FC_BOOL, a, zero, -1);
    int prod = kb_op(&b, FC_OP_MUL, FC_FLOAT64, a, c, -1);
    int sum = kb_op(&b, FC_OP_ADD, FC_FLOAT64, prod, c, -1);
    int half = kb_f(&b, FC_FLOAT64, 0.5);
    int alt = kb_op(&b, FC_OP_MUL, FC_FLOAT64, c, half, -1);
    int w = kb_op(&b, FC_OP_WHERE, FC_FLOAT64, gt, sum, alt);
    int64_t two = 2;
    kb_store(&b, w, o, FC_FLOAT64, 1, &two);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < n; i++) {
        ck_assert_same_f64(o[2 * i], -1.0);
        ck_assert_same_f64(o[2 * i + 1], x[i] > 0 ? x[i] * y[i] + y[i] : y[i] * 0.5);
    }
}
END_TEST

/* Invariant instructions (constants and ops on them) read by loop-dependent ones. */
START_TEST(test_invariant_chain)
{
    int64_t n = 300;
    int64_t x[300], o[300];
    for (int i = 0; i < n; i++)
        x[i] = i;
    KB b;
    kb_init(&b, 1, &n);
    int two = kb_i(&b, FC_INT64, 2);
    int three = kb_i(&b, FC_INT64, 3);
    int five = kb_op(&b, FC_OP_ADD, FC_INT64, two, three, -1);
    ck_assert(b.code[five].invariant);
    int a = kb_load(&b, FC_INT64, x, 0, ONE);
    kb_store(&b, kb_op(&b, FC_OP_MUL, FC_INT64, a, five, -1), o, FC_INT64, 0, ONE);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(o[i], 5 * i);
}
END_TEST

/* A register overwritten by a later instruction (as fcdim's allocator reuses them). */
START_TEST(test_register_reuse)
{
    int64_t n = 10;
    int32_t x[10], o[10];
    for (int i = 0; i < n; i++)
        x[i] = i;
    KB b;
    kb_init(&b, 1, &n);
    int a = kb_load(&b, FC_INT32, x, 0, ONE);
    int c = kb_i(&b, FC_INT32, 7);
    int s = kb_op(&b, FC_OP_ADD, FC_INT32, a, c, -1);   /* r2 = x + 7 */
    int m = kb_op(&b, FC_OP_MUL, FC_INT32, s, s, -1);   /* r3 = r2 * r2 */
    b.code[m].dst = a;                                  /* written into r0 instead */
    kb_store(&b, a, o, FC_INT32, 0, ONE);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(o[i], (i + 7) * (i + 7));
    b.code[m].dst = s;                                  /* r2 = r2 * r2: reads what it overwrites */
    kb_store(&b, s, o, FC_INT32, 0, ONE);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(o[i], (i + 7) * (i + 7));
}
END_TEST

/* ---- integer arithmetic ---- */

START_TEST(test_int_wraps)
{
    int32_t a32[4] = {INT32_MAX, INT32_MIN, 100000, -7}, b32[4] = {1, -1, 100000, 3}, o32[4];
    ck_assert_int_eq(binary(FC_OP_ADD, FC_INT32, FC_INT32, a32, b32, o32, 4), FC_OK);
    ck_assert_int_eq(o32[0], INT32_MIN);
    ck_assert_int_eq(o32[1], INT32_MAX);
    ck_assert_int_eq(binary(FC_OP_MUL, FC_INT32, FC_INT32, a32, b32, o32, 4), FC_OK);
    ck_assert_int_eq(o32[2], (int32_t)1410065408);   /* 10^10 mod 2^32 */
    int32_t lo[1] = {INT32_MIN}, one[1] = {1};
    ck_assert_int_eq(binary(FC_OP_SUB, FC_INT32, FC_INT32, lo, one, o32, 1), FC_OK);
    ck_assert_int_eq(o32[0], INT32_MAX);
    int64_t a64[3] = {INT64_MAX, INT64_MIN, 3}, o64[3];
    ck_assert_int_eq(binary(FC_OP_MUL, FC_INT64, FC_INT64, a64, a64, o64, 3), FC_OK);
    ck_assert_int_eq(o64[0], 1);
    ck_assert_int_eq(o64[1], 0);
    ck_assert_int_eq(o64[2], 9);
    ck_assert_int_eq(unary(FC_OP_NEG, FC_INT64, FC_INT64, a64, o64, 3), FC_OK);
    ck_assert_int_eq(o64[0], -INT64_MAX);
    ck_assert_int_eq(o64[1], INT64_MIN);
    ck_assert_int_eq(unary(FC_OP_ABS, FC_INT64, FC_INT64, a64, o64, 3), FC_OK);
    ck_assert_int_eq(o64[1], INT64_MIN);
    ck_assert_int_eq(unary(FC_OP_SQUARE, FC_INT64, FC_INT64, a64, o64, 3), FC_OK);
    ck_assert_int_eq(o64[0], 1);
}
END_TEST

typedef struct IntCase {
    FcOp op;
    int64_t a, b, want;
} IntCase;

static const IntCase int_cases[] = {
    {FC_OP_FLOORDIV, 7, 2, 3},
    {FC_OP_FLOORDIV, -7, 2, -4},
    {FC_OP_FLOORDIV, 7, -2, -4},
    {FC_OP_FLOORDIV, -7, -2, 3},
    {FC_OP_FLOORDIV, -8, 2, -4},
    {FC_OP_FLOORDIV, 0, -5, 0},
    {FC_OP_FLOORDIV, INT64_MIN, -1, INT64_MIN},
    {FC_OP_FLOORDIV, INT64_MIN, 1, INT64_MIN},
    {FC_OP_MOD, 7, 3, 1},
    {FC_OP_MOD, -7, 3, 2},
    {FC_OP_MOD, 7, -3, -2},
    {FC_OP_MOD, -7, -3, -1},
    {FC_OP_MOD, 6, -3, 0},
    {FC_OP_MOD, INT64_MIN, -1, 0},
    {FC_OP_FMOD, -7, 3, -1},
    {FC_OP_FMOD, 7, -3, 1},
    {FC_OP_FMOD, INT64_MIN, -1, 0},
    {FC_OP_POW, 2, 10, 1024},
    {FC_OP_POW, 3, 0, 1},
    {FC_OP_POW, 2, -1, 0},
    {FC_OP_POW, 1, -5, 1},
    {FC_OP_POW, -1, -3, -1},
    {FC_OP_POW, -1, -2, 1},
    {FC_OP_POW, 2, 63, INT64_MIN},
    {FC_OP_POW, -3, 3, -27},
    {FC_OP_SHL, 1, 3, 8},
    {FC_OP_SHL, 1, 63, INT64_MIN},
    {FC_OP_SHL, 1, 64, 0},
    {FC_OP_SHL, 1, -1, 0},
    {FC_OP_SHR, -8, 1, -4},
    {FC_OP_SHR, -8, 100, -1},
    {FC_OP_SHR, 8, 100, 0},
    {FC_OP_SHR, -8, -1, -1},
    {FC_OP_MIN, -3, 2, -3},
    {FC_OP_MAX, -3, 2, 2},
    {FC_OP_AND, 12, 10, 8},
    {FC_OP_OR, 12, 10, 14},
    {FC_OP_XOR, 12, 10, 6},
};

/* Each case for int64 and (where it fits) int32, at element 300 of a longer input so that the
 * vectorised full-chunk loop is the one checked. */
START_TEST(test_int_binary_table)
{
    const IntCase *c = &int_cases[_i];
    enum { N = 301 };
    int64_t a[N], b[N], o[N];
    for (int i = 0; i < N; i++) {
        a[i] = c->a;
        b[i] = c->b;
    }
    ck_assert_int_eq(binary(c->op, FC_INT64, FC_INT64, a, b, o, N), FC_OK);
    ck_assert_int_eq(o[0], c->want);
    ck_assert_int_eq(o[300], c->want);
    if (c->a >= INT32_MIN && c->a <= INT32_MAX && c->b >= -32 && c->b <= 31 && c->want >= INT32_MIN &&
        c->want <= INT32_MAX && !(c->op == FC_OP_SHL && c->b > 30)) {
        int32_t a32[N], b32[N], o32[N];
        for (int i = 0; i < N; i++) {
            a32[i] = (int32_t)c->a;
            b32[i] = (int32_t)c->b;
        }
        ck_assert_int_eq(binary(c->op, FC_INT32, FC_INT32, a32, b32, o32, N), FC_OK);
        ck_assert_int_eq(o32[0], c->want);
        ck_assert_int_eq(o32[300], c->want);
    }
}
END_TEST

START_TEST(test_int32_edges)
{
    int32_t a[4] = {INT32_MIN, 1, 1, -5}, b[4] = {-1, 31, 32, 40}, o[4];
    ck_assert_int_eq(binary(FC_OP_FLOORDIV, FC_INT32, FC_INT32, a, b, o, 1), FC_OK);
    ck_assert_int_eq(o[0], INT32_MIN);
    ck_assert_int_eq(binary(FC_OP_SHL, FC_INT32, FC_INT32, a, b, o, 4), FC_OK);
    ck_assert_int_eq(o[1], INT32_MIN);
    ck_assert_int_eq(o[2], 0);
    ck_assert_int_eq(binary(FC_OP_SHR, FC_INT32, FC_INT32, a, b, o, 4), FC_OK);
    ck_assert_int_eq(o[3], -1);
    int32_t base[2] = {2, 2}, ex[2] = {31, 32};
    ck_assert_int_eq(binary(FC_OP_POW, FC_INT32, FC_INT32, base, ex, o, 2), FC_OK);
    ck_assert_int_eq(o[0], INT32_MIN);
    ck_assert_int_eq(o[1], 0);
}
END_TEST

static const FcOp zerodiv_ops[] = {FC_OP_FLOORDIV, FC_OP_MOD, FC_OP_FMOD};

START_TEST(test_int_division_by_zero)
{
    int64_t a[600], b[600], o[600];
    for (int i = 0; i < 600; i++) {
        a[i] = i;
        b[i] = i == 555 ? 0 : 3;
    }
    ck_assert_int_eq(binary(zerodiv_ops[_i], FC_INT64, FC_INT64, a, b, o, 600), FC_ERR_RUNTIME);
    ck_assert_str_eq(err.msg, "ZeroDivisionError");
    int32_t a32[2] = {1, 2}, b32[2] = {1, 0}, o32[2];
    ck_assert_int_eq(binary(zerodiv_ops[_i], FC_INT32, FC_INT32, a32, b32, o32, 2), FC_ERR_RUNTIME);
    ck_assert_str_eq(err.msg, "ZeroDivisionError");
}
END_TEST

/* ---- bool ---- */

START_TEST(test_bool_arithmetic)
{
    uint8_t a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1}, o[4];
    ck_assert_int_eq(binary(FC_OP_ADD, FC_BOOL, FC_BOOL, a, b, o, 4), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 1, 1, 1}), 4);
    ck_assert_int_eq(binary(FC_OP_MUL, FC_BOOL, FC_BOOL, a, b, o, 4), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 0, 0, 1}), 4);
    ck_assert_int_eq(binary(FC_OP_XOR, FC_BOOL, FC_BOOL, a, b, o, 4), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 1, 1, 0}), 4);
    ck_assert_int_eq(binary(FC_OP_MAX, FC_BOOL, FC_BOOL, a, b, o, 4), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 1, 1, 1}), 4);
    ck_assert_int_eq(binary(FC_OP_LT, FC_BOOL, FC_BOOL, a, b, o, 4), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 1, 0, 0}), 4);
    ck_assert_int_eq(unary(FC_OP_NOT, FC_BOOL, FC_BOOL, a, o, 4), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){1, 1, 0, 0}), 4);
}
END_TEST

/* ---- floats ---- */

typedef struct FloatCase {
    FcOp op;
    double a, b, want;
} FloatCase;

static const FloatCase float_cases[] = {
    {FC_OP_FLOORDIV, 7, 2, 3},
    {FC_OP_FLOORDIV, -7, 2, -4},
    {FC_OP_FLOORDIV, 7, -2, -4},
    {FC_OP_FLOORDIV, -7, -2, 3},
    {FC_OP_FLOORDIV, 0.0, -1, -0.0},
    {FC_OP_FLOORDIV, -0.0, 1, -0.0},
    {FC_OP_FLOORDIV, 1, 3, 0.0},
    {FC_OP_FLOORDIV, -1, INFINITY, -1},
    {FC_OP_FLOORDIV, 1, 0.0, INFINITY},
    {FC_OP_FLOORDIV, -1, 0.0, -INFINITY},
    {FC_OP_FLOORDIV, 0.0, 0.0, NAN},
    {FC_OP_FLOORDIV, 5.5, 0.5, 11},
    {FC_OP_MOD, -7, 3, 2},
    {FC_OP_MOD, 7, -3, -2},
    {FC_OP_MOD, 5.5, -2, -0.5},
    {FC_OP_MOD, -0.0, 3, -0.0},
    {FC_OP_MOD, 6, -3, 0.0},
    {FC_OP_MOD, 1, 0.0, NAN},
    {FC_OP_FMOD, -7, 3, -1},
    {FC_OP_FMOD, 7, -3, 1},
    {FC_OP_POW, 2, 0.5, 1.4142135623730951},
    {FC_OP_POW, -8, 1.0 / 3, NAN},
    {FC_OP_MIN, NAN, 1, NAN},
    {FC_OP_MIN, 1, NAN, NAN},
    {FC_OP_MAX, NAN, 1, NAN},
    {FC_OP_MAX, 1, NAN, NAN},
    {FC_OP_MAX, -1, 2, 2},
    {FC_OP_MIN, -1, 2, -1},
    {FC_OP_DIV, 1, -0.0, -INFINITY},
    {FC_OP_ATAN2, -1, -1, -2.3561944901923448},   /* (1, 1): SLEEF's float32 is an ulp under pi/4 */
    {FC_OP_COPYSIGN, 2.5, -0.0, -2.5},
    {FC_OP_COPYSIGN, -INFINITY, 1, INFINITY},
    {FC_OP_FMAX, NAN, 1, 1},
    {FC_OP_FMAX, 1, NAN, 1},
    {FC_OP_FMAX, 0.0, -0.0, 0.0},
    {FC_OP_FMAX, -0.0, 0.0, -0.0},
    {FC_OP_FMIN, NAN, -1, -1},
    {FC_OP_FMIN, -0.0, 0.0, -0.0},
    {FC_OP_FMIN, 0.0, -0.0, 0.0},
    {FC_OP_FMAX16, 0.0, -0.0, -0.0},
    {FC_OP_FMIN16, -0.0, 0.0, 0.0},
    {FC_OP_FMAX16, NAN, 2, 2},
    {FC_OP_LOGADDEXP, 0.0, 0.0, 0.69314718055994531},
    {FC_OP_LOGADDEXP, INFINITY, INFINITY, INFINITY},
    {FC_OP_LOGADDEXP, -INFINITY, -INFINITY, -INFINITY},
    {FC_OP_LOGADDEXP, INFINITY, -INFINITY, INFINITY},
    {FC_OP_LOGADDEXP, -NAN, 1, NAN},
    {FC_OP_LOGADDEXP, 1000, 1, 1000},
    {FC_OP_SUB, 0.0, 0.0, 0.0},
};

static float f32_of(double x) { return (float)x; }

START_TEST(test_float_binary_table)
{
    const FloatCase *c = &float_cases[_i];
    enum { N = 257 };
    double a[N], b[N], o[N];
    for (int i = 0; i < N; i++) {
        a[i] = c->a;
        b[i] = c->b;
    }
    ck_assert_int_eq(binary(c->op, FC_FLOAT64, FC_FLOAT64, a, b, o, N), FC_OK);
    ck_assert_same_f64(o[0], c->want);
    ck_assert_same_f64(o[256], c->want);
    float a32[N], b32[N], o32[N];
    for (int i = 0; i < N; i++) {
        a32[i] = f32_of(c->a);
        b32[i] = f32_of(c->b);
    }
    ck_assert_int_eq(binary(c->op, FC_FLOAT32, FC_FLOAT32, a32, b32, o32, N), FC_OK);
    ck_assert_same_f32(o32[0], f32_of(c->want));
    ck_assert_same_f32(o32[200], f32_of(c->want));
}
END_TEST

START_TEST(test_float_compare_nan)
{
    double a[3] = {NAN, 1, 2}, b[3] = {NAN, NAN, 2};
    uint8_t o[3];
    ck_assert_int_eq(binary(FC_OP_EQ, FC_FLOAT64, FC_BOOL, a, b, o, 3), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 0, 1}), 3);
    ck_assert_int_eq(binary(FC_OP_NE, FC_FLOAT64, FC_BOOL, a, b, o, 3), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){1, 1, 0}), 3);
    ck_assert_int_eq(binary(FC_OP_LE, FC_FLOAT64, FC_BOOL, a, b, o, 3), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 0, 1}), 3);
    ck_assert_int_eq(binary(FC_OP_GE, FC_FLOAT64, FC_BOOL, a, b, o, 3), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 0, 1}), 3);
}
END_TEST

typedef struct UnaryCase {
    FcOp op;
    double x, want;
} UnaryCase;

static const UnaryCase unary_cases[] = {
    {FC_OP_NEG, 0.0, -0.0},
    {FC_OP_ABS, -0.0, 0.0},
    {FC_OP_SIGN, -2.5, -1},
    {FC_OP_SIGN, 3, 1},
    {FC_OP_SIGN, NAN, 0},
    {FC_OP_RELU, -1, 0},
    {FC_OP_RELU, -0.0, -0.0},   /* x itself when it equals the bound, as torch's clamp_min */
    {FC_OP_RELU, NAN, NAN},
    {FC_OP_RELU, 2, 2},
    {FC_OP_ROUND, 2.5, 2},
    {FC_OP_ROUND, 3.5, 4},
    {FC_OP_ROUND, -0.5, -0.0},
    {FC_OP_FLOOR, -1.5, -2},
    {FC_OP_CEIL, -1.5, -1},
    {FC_OP_TRUNC, -1.5, -1},
    {FC_OP_SIGMOID, 0, 0.5},
    {FC_OP_RSQRT, 4, 0.5},
    {FC_OP_RECIPROCAL, -0.0, -INFINITY},
    {FC_OP_SQUARE, -3, 9},
    {FC_OP_EXP, 0, 1},
    {FC_OP_LOG, 1, 0},
    {FC_OP_LOG, -1, NAN},
    {FC_OP_SQRT, 9, 3},
    {FC_OP_LOG2, 8, 3},
    {FC_OP_LOG10, 100, 2},
    {FC_OP_LOG10, 0, -INFINITY},
    {FC_OP_ERFC, 0, 1},
    {FC_OP_TANH, 0, 0},
    {FC_OP_ERF, 0, 0},
    {FC_OP_EXPM1, 0, 0},
    {FC_OP_LOG1P, 0, 0},
};

START_TEST(test_float_unary_table)
{
    const UnaryCase *c = &unary_cases[_i];
    enum { N = 256 };
    double x[N], o[N];
    float x32[N], o32[N];
    for (int i = 0; i < N; i++) {
        x[i] = c->x;
        x32[i] = (float)c->x;
    }
    ck_assert_int_eq(unary(c->op, FC_FLOAT64, FC_FLOAT64, x, o, N), FC_OK);
    ck_assert_same_f64(o[0], c->want);
    ck_assert_same_f64(o[255], c->want);
    ck_assert_int_eq(unary(c->op, FC_FLOAT32, FC_FLOAT32, x32, o32, 3), FC_OK);
    ck_assert_same_f32(o32[2], (float)c->want);
}
END_TEST

START_TEST(test_isnan)
{
    float x[3] = {NAN, INFINITY, 0};
    uint8_t o[3];
    ck_assert_int_eq(unary(FC_OP_ISNAN, FC_FLOAT32, FC_BOOL, x, o, 3), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){1, 0, 0}), 3);
    int32_t xi[2] = {1, 2};
    ck_assert_int_eq(unary(FC_OP_ISNAN, FC_INT32, FC_BOOL, xi, o, 2), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 0}), 2);
}
END_TEST

START_TEST(test_int_unary)
{
    int32_t x[5] = {-3, 0, 7, INT32_MIN, INT32_MAX}, o[5];
    ck_assert_int_eq(unary(FC_OP_NOT, FC_INT32, FC_INT32, x, o, 5), FC_OK);
    ck_assert_int_eq(o[0], 2);
    ck_assert_int_eq(o[1], -1);
    ck_assert_int_eq(unary(FC_OP_SIGN, FC_INT32, FC_INT32, x, o, 5), FC_OK);
    ck_assert_mem_eq(o, ((int32_t[]){-1, 0, 1, -1, 1}), sizeof o);
    ck_assert_int_eq(unary(FC_OP_RELU, FC_INT32, FC_INT32, x, o, 5), FC_OK);
    ck_assert_mem_eq(o, ((int32_t[]){0, 0, 7, 0, INT32_MAX}), sizeof o);
    ck_assert_int_eq(unary(FC_OP_ABS, FC_INT32, FC_INT32, x, o, 5), FC_OK);
    ck_assert_mem_eq(o, ((int32_t[]){3, 0, 7, INT32_MIN, INT32_MAX}), sizeof o);
    ck_assert_int_eq(unary(FC_OP_FLOOR, FC_INT32, FC_INT32, x, o, 5), FC_OK);
    ck_assert_mem_eq(o, x, sizeof o);
}
END_TEST

/* ---- where and casts ---- */

START_TEST(test_where_keeps_bits)
{
    uint8_t m[4] = {1, 0, 1, 0};
    double x[4] = {-0.0, 1, NAN, 3}, y[4] = {5, -0.0, 6, NAN}, o[4];
    int64_t n = 4;
    KB b;
    kb_init(&b, 1, &n);
    int c = kb_load(&b, FC_BOOL, m, 0, ONE);
    int a = kb_load(&b, FC_FLOAT64, x, 0, ONE);
    int d = kb_load(&b, FC_FLOAT64, y, 0, ONE);
    kb_store(&b, kb_op(&b, FC_OP_WHERE, FC_FLOAT64, c, a, d), o, FC_FLOAT64, 0, ONE);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_same_f64(o[0], -0.0);
    ck_assert_same_f64(o[1], -0.0);
    ck_assert(isnan(o[2]));
    ck_assert(isnan(o[3]));
}
END_TEST

START_TEST(test_cast_float_to_int)
{
    double x[7] = {NAN, 1e20, -1e20, -3.7, 3.7, INFINITY, -2147483648.0};
    int64_t o64[7];
    int32_t o32[7];
    ck_assert_int_eq(unary(FC_OP_CAST, FC_FLOAT64, FC_INT64, x, o64, 7), FC_OK);
    ck_assert_mem_eq(o64, ((int64_t[]){INT64_MIN, INT64_MIN, INT64_MIN, -3, 3, INT64_MIN, -2147483648LL}), sizeof o64);
    ck_assert_int_eq(unary(FC_OP_CAST, FC_FLOAT64, FC_INT32, x, o32, 7), FC_OK);
    ck_assert_mem_eq(o32, ((int32_t[]){INT32_MIN, INT32_MIN, INT32_MIN, -3, 3, INT32_MIN, INT32_MIN}), sizeof o32);
    float f[3] = {NAN, 3e9f, -2.5f};
    ck_assert_int_eq(unary(FC_OP_CAST, FC_FLOAT32, FC_INT32, f, o32, 3), FC_OK);
    ck_assert_mem_eq(o32, ((int32_t[]){INT32_MIN, INT32_MIN, -2}), 12);
    ck_assert_int_eq(unary(FC_OP_CAST, FC_FLOAT32, FC_INT64, f, o64, 3), FC_OK);
    ck_assert_mem_eq(o64, ((int64_t[]){INT64_MIN, 3000000000LL, -2}), 24);
}
END_TEST

START_TEST(test_cast_other)
{
    double x[4] = {NAN, -0.0, 0.5, 0.0};
    uint8_t ob[4];
    ck_assert_int_eq(unary(FC_OP_CAST, FC_FLOAT64, FC_BOOL, x, ob, 4), FC_OK);
    ck_assert_mem_eq(ob, ((uint8_t[]){1, 0, 1, 0}), 4);
    int64_t w[2] = {(1LL << 32) + 5, -1};
    int32_t o32[2];
    ck_assert_int_eq(unary(FC_OP_CAST, FC_INT64, FC_INT32, w, o32, 2), FC_OK);
    ck_assert_int_eq(o32[0], 5);
    ck_assert_int_eq(o32[1], -1);
    uint8_t bools[2] = {1, 0};
    float of[2];
    ck_assert_int_eq(unary(FC_OP_CAST, FC_BOOL, FC_FLOAT32, bools, of, 2), FC_OK);
    ck_assert_same_f32(of[0], 1.0f);
    ck_assert_same_f32(of[1], 0.0f);
    double d[2] = {1e300, 0.1};
    ck_assert_int_eq(unary(FC_OP_CAST, FC_FLOAT64, FC_FLOAT32, d, of, 2), FC_OK);
    ck_assert_same_f32(of[0], INFINITY);
    ck_assert_same_f32(of[1], 0.1f);
    int64_t big[1] = {(1LL << 53) + 1};
    double od[1];
    ck_assert_int_eq(unary(FC_OP_CAST, FC_INT64, FC_FLOAT64, big, od, 1), FC_OK);
    ck_assert_same_f64(od[0], 9007199254740992.0);
}
END_TEST

/* A store whose output dtype differs from the result register's converts. */
START_TEST(test_store_converts)
{
    int32_t x[3] = {1, -2, 3};
    double o[3];
    int64_t n = 3;
    KB b;
    kb_init(&b, 1, &n);
    kb_store(&b, kb_load(&b, FC_INT32, x, 0, ONE), o, FC_FLOAT64, 0, ONE);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_same_f64(o[1], -2.0);
}
END_TEST

START_TEST(test_unsupported_combination)
{
    int32_t x[2] = {1, 2}, o[2];
    ck_assert_int_eq(binary(FC_OP_DIV, FC_INT32, FC_INT32, x, x, o, 2), FC_ERR_TYPE);
    ck_assert_int_eq(unary(FC_OP_EXP, FC_INT32, FC_INT32, x, o, 2), FC_ERR_TYPE);
}
END_TEST

/* ---- loads ---- */

START_TEST(test_load_strided_reversed_broadcast)
{
    int64_t x[600], n = 300;
    for (int i = 0; i < 600; i++)
        x[i] = i;
    int64_t o[300];
    KB b;
    kb_init(&b, 1, &n);
    int64_t s2 = 2, sm1 = -1, s0 = 0;
    int ev = kb_load(&b, FC_INT64, x, 1, &s2);       /* 1, 3, 5, ... */
    int rev = kb_load(&b, FC_INT64, x, 599, &sm1);  /* 599, 598, ... */
    int bc = kb_load(&b, FC_INT64, x, 7, &s0);      /* 7 (invariant) */
    ck_assert(b.code[bc].invariant);
    int s = kb_op(&b, FC_OP_ADD, FC_INT64, ev, rev, -1);
    kb_store(&b, kb_op(&b, FC_OP_MUL, FC_INT64, s, bc, -1), o, FC_INT64, 0, ONE);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(o[i], 7 * ((1 + 2 * i) + (599 - i)));
}
END_TEST

/* A loop-dependent broadcast: row i of a 2-D output gets x[i] (stride 0 along the inner loop). */
START_TEST(test_load_row_broadcast)
{
    float x[3] = {1, 2, 3}, o[3 * 400];
    int64_t ext[2] = {3, 400}, st[2] = {1, 0}, ost[2] = {400, 1};
    KB b;
    kb_init(&b, 2, ext);
    kb_store(&b, kb_load(&b, FC_FLOAT32, x, 0, st), o, FC_FLOAT32, 0, ost);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 400; j++)
            ck_assert_same_f32(o[i * 400 + j], x[i]);
}
END_TEST

START_TEST(test_gather)
{
    double table[5 * 3];
    for (int i = 0; i < 15; i++)
        table[i] = i * 1.5;
    int64_t index[6] = {4, 0, 2, 2, 1, 3}, n = 6, ext[2] = {6, 3}, st[2] = {1, 0}, tst[2] = {0, 1}, ost[2] = {3, 1};
    double o[18];
    KB b;
    kb_init(&b, 2, ext);
    int ix = kb_load(&b, FC_INT64, index, 0, st);
    int g = kb_load(&b, FC_FLOAT64, table, 0, tst);    /* table[index[i], j] */
    kb_gather(&b, g, ix, 3, 5);
    kb_store(&b, g, o, FC_FLOAT64, 0, ost);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 3; j++)
            ck_assert_same_f64(o[i * 3 + j], table[index[i] * 3 + j]);
}
END_TEST

typedef struct GatherCase {
    int64_t bad;
    int dim;
    const char *msg;
} GatherCase;

static const GatherCase gather_cases[] = {
    {7, 0, "index 7 is out of bounds for dimension 0 with size 5"},
    {-1, 0, "index -1 is out of bounds for dimension 0 with size 5"},
    {5, 1, "index 5 is out of bounds for dimension 1 with size 4"},
};

/* Two gathered dims (5 x 4 table); one index out of range in a long input. */
START_TEST(test_gather_out_of_bounds)
{
    const GatherCase *c = &gather_cases[_i];
    enum { N = 1000 };
    int32_t table[20] = {0};
    int64_t i0[N], i1[N], n = N;
    for (int i = 0; i < N; i++) {
        i0[i] = i % 5;
        i1[i] = i % 4;
    }
    (c->dim == 0 ? i0 : i1)[700] = c->bad;
    int32_t o[N];
    KB b;
    kb_init(&b, 1, &n);
    int r0 = kb_load(&b, FC_INT64, i0, 0, ONE);
    int r1 = kb_load(&b, FC_INT64, i1, 0, ONE);
    int64_t zero = 0;
    int g = kb_load(&b, FC_INT32, table, 0, &zero);
    kb_gather(&b, g, r0, 4, 5);
    kb_gather(&b, g, r1, 1, 4);
    kb_store(&b, g, o, FC_INT32, 0, ONE);
    ck_assert_int_eq(kb_run(&b), FC_ERR_INDEX);
    ck_assert_str_eq(err.msg, c->msg);
}
END_TEST

/* Wrapping gathers (Python's rule: -5 is the first of 5): every index in [-5, 5) of a long input,
 * one gathered dim wrapping and the other not, and an invariant -5; at both index widths. */
START_TEST(test_gather_wrap)
{
    enum { R = 5, C = 4, N = 1000 };
    int32_t table[R * C];
    int64_t i0[N], i1[N], n = N, zero = 0, minus5 = -5;
    for (int k = 0; k < R * C; k++)
        table[k] = 100 + k;
    for (int k = 0; k < N; k++) {
        i0[k] = k % (2 * R) - R;
        i1[k] = k * 7 % C;
    }
    for (int w = 0; w < 2; w++) {
        int32_t o[N], p[N];
        KB b;
        kb_init(&b, 1, &n);
        int r0 = kb_load(&b, FC_INT64, i0, 0, ONE), r1 = kb_load(&b, FC_INT64, i1, 0, ONE);
        int g = kb_load(&b, FC_INT32, table, 0, &zero);
        kb_gather(&b, g, r0, C, R)->wrap = true;
        kb_gather(&b, g, r1, 1, C);
        kb_store(&b, g, o, FC_INT32, 0, ONE);
        b.k.index32 = w == 1;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        for (int k = 0; k < N; k++)
            ck_assert_int_eq(o[k], table[(i0[k] + R) % R * C + i1[k]]);
        kb_init(&b, 1, &n);
        int ri = kb_load(&b, FC_INT64, &minus5, 0, &zero);
        int gi = kb_load(&b, FC_INT32, table, 2, &zero);      /* table[-5][2] */
        kb_gather(&b, gi, ri, C, R)->wrap = true;
        ck_assert(b.code[gi].invariant);
        kb_store(&b, gi, p, FC_INT32, 0, ONE);
        b.k.index32 = w == 1;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        for (int k = 0; k < N; k++)
            ck_assert_int_eq(p[k], table[2]);
    }
}
END_TEST

/* One bad index among valid ones (from [-5, 5) when wrapping, [0, 5) otherwise), for a gathered
 * or scattered dim of extent 5 that messages name dimension 3: the message gives the index as
 * written. Unsigned shortcuts must not let the extremes through. */
typedef struct WrapCase {
    int64_t bad;
    bool wrap;
    const char *msg;
} WrapCase;

static const WrapCase wrap_cases[] = {
    {-6, true, "index -6 is out of bounds for dimension 3 with size 5"},
    {5, true, "index 5 is out of bounds for dimension 3 with size 5"},
    {INT64_MIN, true, "index -9223372036854775808 is out of bounds for dimension 3 with size 5"},
    {INT64_MAX, true, "index 9223372036854775807 is out of bounds for dimension 3 with size 5"},
    {-1, false, "index -1 is out of bounds for dimension 3 with size 5"},
    {-5, false, "index -5 is out of bounds for dimension 3 with size 5"},
};

/* Indices for a WrapCase: n valid ones (-5 among them when wrapping), ix[bad_at] = c->bad. */
static void wrap_indices(const WrapCase *c, int64_t *ix, int n, int bad_at)
{
    for (int k = 0; k < n; k++)
        ix[k] = c->wrap ? k % 10 - 5 : k % 5;
    ix[bad_at] = c->bad;
}

START_TEST(test_gather_wrap_out_of_bounds)
{
    const WrapCase *c = &wrap_cases[_i];
    enum { N = 1000 };
    float table[5] = {1, 2, 3, 4, 5}, o[N];
    int64_t ix[N], n = N, zero = 0;
    wrap_indices(c, ix, N, 700);
    for (int w = 0; w < 2; w++) {
        KB b;
        kb_init(&b, 1, &n);
        int r = kb_load(&b, FC_INT64, ix, 0, ONE);
        int g = kb_load(&b, FC_FLOAT32, table, 0, &zero);
        FcGather *ga = kb_gather(&b, g, r, 1, 5);
        ga->wrap = c->wrap;
        ga->dim = 3;
        kb_store(&b, g, o, FC_FLOAT32, 0, ONE);
        b.k.index32 = w == 1;
        ck_assert_int_eq(kb_run(&b), FC_ERR_INDEX);
        ck_assert_str_eq(err.msg, c->msg);
    }
}
END_TEST

/* ---- loops, iotas, shapes ---- */

START_TEST(test_iota)
{
    int64_t ext[2] = {3, 300}, ost[2] = {300, 1};
    int64_t o[900];
    KB b;
    kb_init(&b, 2, ext);
    int r = kb_iota(&b, 0);
    int c = kb_iota(&b, 1);
    int k = kb_i(&b, FC_INT64, 1000);
    int s = kb_op(&b, FC_OP_MUL, FC_INT64, r, k, -1);
    kb_store(&b, kb_op(&b, FC_OP_ADD, FC_INT64, s, c, -1), o, FC_INT64, 0, ost);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 300; j++)
            ck_assert_int_eq(o[i * 300 + j], i * 1000 + j);
}
END_TEST

/* A transpose with several tiles of rows (the last one partial) and several chunks per row. */
START_TEST(test_transpose_tiles)
{
    int64_t e[2] = {37, 600}, st[2] = {1, 37}, ost[2] = {600, 1};
    int64_t *x = malloc(37 * 600 * 8), *o = malloc(37 * 600 * 8);
    for (int i = 0; i < 37 * 600; i++)
        x[i] = i;
    KB b;
    kb_init(&b, 2, e);
    kb_store(&b, kb_load(&b, FC_INT64, x, 0, st), o, FC_INT64, 0, ost);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    int bad = 0;
    for (int i = 0; i < 37; i++)
        for (int j = 0; j < 600; j++)
            bad += o[i * 600 + j] != x[j * 37 + i];
    ck_assert_int_eq(bad, 0);
    free(x);
    free(o);
}
END_TEST

/* A 3-D permuting copy: out[i][j][l] = x[l][i][j], inner extent short (so the executor may run
 * chunks along another loop). */
static const int64_t perm_shapes[][3] = {{4, 5, 300}, {70, 80, 3}, {2, 3, 2}};

START_TEST(test_permute_3d)
{
    const int64_t *e = perm_shapes[_i];
    int64_t n = e[0] * e[1] * e[2];
    int32_t *x = malloc((size_t)n * 4), *o = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++)
        x[i] = (int32_t)i;
    /* x has shape (e2, e0, e1) C-contiguous */
    int64_t st[3] = {e[1], 1, e[0] * e[1]}, ost[3] = {e[1] * e[2], e[2], 1};
    KB b;
    kb_init(&b, 3, e);
    kb_store(&b, kb_load(&b, FC_INT32, x, 0, st), o, FC_INT32, 0, ost);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int64_t i = 0; i < e[0]; i++)
        for (int64_t j = 0; j < e[1]; j++)
            for (int64_t l = 0; l < e[2]; l++)
                ck_assert_int_eq(o[(i * e[1] + j) * e[2] + l], x[(l * e[0] + i) * e[1] + j]);
    free(x);
    free(o);
}
END_TEST

START_TEST(test_extent_zero_store)
{
    int64_t ext[2] = {5, 0}, st[2] = {0, 1};
    float x[1] = {1}, o[1] = {42};
    KB b;
    kb_init(&b, 2, ext);
    kb_store(&b, kb_load(&b, FC_FLOAT32, x, 0, st), o, FC_FLOAT32, 0, st);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_same_f32(o[0], 42.0f);
}
END_TEST

/* An empty reduced loop still writes the initial value of each output point; nothing is
 * evaluated, so an invariant division by zero does not fail. */
typedef struct EmptyCase {
    FcOp op;
    FcDType in, out;
    int64_t want;
} EmptyCase;

static const EmptyCase empty_cases[] = {
    {FC_OP_SUM, FC_FLOAT32, FC_FLOAT32, 0},
    {FC_OP_PROD, FC_INT64, FC_INT64, 1},
    {FC_OP_ANY, FC_BOOL, FC_BOOL, 0},
    {FC_OP_ALL, FC_BOOL, FC_BOOL, 1},
};

START_TEST(test_extent_zero_reduce)
{
    const EmptyCase *c = &empty_cases[_i];
    int64_t ext[2] = {3, 0}, ost[2] = {1, 0}, st[2] = {0, 1};
    bool red[2] = {false, true};
    uint64_t x[1] = {0};
    union {
        float f[3];
        int64_t i[3];
        uint8_t b[3];
    } o;
    memset(&o, 0x55, sizeof o);
    KB b;
    kb_init(&b, 2, ext);
    int one = kb_i(&b, FC_INT64, 1), zero = kb_i(&b, FC_INT64, 0);
    kb_op(&b, FC_OP_FLOORDIV, FC_INT64, one, zero, -1);
    kb_reduce(&b, c->op, kb_load(&b, c->in, x, 0, st), &o, c->out, red, ost);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < 3; i++) {
        if (c->out == FC_FLOAT32)
            ck_assert_same_f32(o.f[i], (float)c->want);
        else if (c->out == FC_INT64)
            ck_assert_int_eq(o.i[i], c->want);
        else
            ck_assert_int_eq(o.b[i], c->want);
    }
}
END_TEST

START_TEST(test_nloop_zero)
{
    double x = 1.5, y = 2.25, o = 0;
    KB b;
    kb_init(&b, 0, NULL);
    int a = kb_load(&b, FC_FLOAT64, &x, 0, NULL);
    int c = kb_load(&b, FC_FLOAT64, &y, 0, NULL);
    kb_store(&b, kb_op(&b, FC_OP_MUL, FC_FLOAT64, a, c, -1), &o, FC_FLOAT64, 0, NULL);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_same_f64(o, 3.375);
    kb_init(&b, 0, NULL);
    kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_FLOAT64, &x, 0, NULL), &o, FC_FLOAT64, NULL, NULL);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_same_f64(o, 1.5);
}
END_TEST

START_TEST(test_interrupt)
{
    volatile int stop = 1;
    float x[1000], o[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)i;
    int64_t n = 1000;
    KB b;
    kb_init(&b, 1, &n);
    kb_store(&b, kb_load(&b, FC_FLOAT32, x, 0, ONE), o, FC_FLOAT32, 0, ONE);
    b.k.interrupt = &stop;
    ck_assert_int_eq(kb_run(&b), FC_ERR_INTERRUPT);
    ck_assert_str_eq(err.msg, "interrupted");
    stop = 0;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_same_f32(o[999], 999.0f);
}
END_TEST

/* ---- reductions ---- */

/* Sums over a 2-D [R, C] float64 input of small integers (exact in any order), reducing dim 0,
 * dim 1 or both, for shapes that give horizontal, vertical and chunk-loop-switched reductions. */
static const int64_t sum_shapes[][2] = {{3, 1000}, {1000, 3}, {100, 300}, {257, 255}, {1, 1}, {5000, 17}, {3, 2500}};

START_TEST(test_sum_2d)
{
    const int64_t *e = sum_shapes[_i];
    int64_t R = e[0], C = e[1];
    double *x = malloc((size_t)(R * C) * 8), *o = malloc((size_t)(R + C) * 8);
    for (int64_t i = 0; i < R * C; i++)
        x[i] = (double)(i % 7) - 3;
    int64_t st[2] = {C, 1};
    for (int mode = 0; mode < 3; mode++) {
        bool red[2] = {mode != 1, mode != 0};
        int64_t ost[2] = {red[0] ? 0 : 1, red[1] ? 0 : 1};
        KB b;
        kb_init(&b, 2, e);
        kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_FLOAT64, x, 0, st), o, FC_FLOAT64, red, ost);
        ck_assert_int_eq(kb_run(&b), FC_OK);
        int64_t nout = mode == 0 ? C : mode == 1 ? R : 1;
        double *want = calloc((size_t)nout, 8);
        for (int64_t i = 0; i < R * C; i++)
            want[mode == 0 ? i % C : mode == 1 ? i / C : 0] += x[i];
        for (int64_t j = 0; j < nout; j++)
            ck_assert_same_f64(o[j], want[j]);
        free(want);
    }
    free(x);
    free(o);
}
END_TEST

/* Reduce loops 0 and 2 of [4, 5, 300], keeping loop 1; and loop 1 of the same, keeping 0 and 2. */
START_TEST(test_sum_mixed_loops)
{
    int64_t e[3] = {4, 5, 300}, st[3] = {1500, 300, 1};
    int64_t *x = malloc(6000 * 8), o[1200];
    for (int i = 0; i < 6000; i++)
        x[i] = i * 7919 % 1000;
    KB b;
    bool red[3] = {true, false, true};
    int64_t ost[3] = {0, 1, 0};
    kb_init(&b, 3, e);
    kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_INT64, x, 0, st), o, FC_INT64, red, ost);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int j = 0; j < 5; j++) {
        int64_t want = 0;
        for (int i = 0; i < 4; i++)
            for (int l = 0; l < 300; l++)
                want += x[i * 1500 + j * 300 + l];
        ck_assert_int_eq(o[j], want);
    }
    bool red2[3] = {false, true, false};
    int64_t ost2[3] = {300, 0, 1};
    kb_init(&b, 3, e);
    kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_INT64, x, 0, st), o, FC_INT64, red2, ost2);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < 4; i++)
        for (int l = 0; l < 300; l++) {
            int64_t want = 0;
            for (int j = 0; j < 5; j++)
                want += x[i * 1500 + j * 300 + l];
            ck_assert_int_eq(o[i * 300 + l], want);
        }
    free(x);
}
END_TEST

START_TEST(test_sum_int_types)
{
    int64_t n = 1000;
    int32_t x[1000];
    uint8_t bl[1000];
    for (int i = 0; i < n; i++) {
        x[i] = INT32_MAX;
        bl[i] = i % 3 == 0;
    }
    int64_t o = 0, zero = 0;
    bool red = true;
    KB b;
    kb_init(&b, 1, &n);
    kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_INT32, x, 0, ONE), &o, FC_INT64, &red, &zero);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, 1000LL * INT32_MAX);
    kb_init(&b, 1, &n);
    kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_BOOL, bl, 0, ONE), &o, FC_INT64, &red, &zero);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, 334);
    int64_t big[2] = {INT64_MAX, 2}, two = 2;
    kb_init(&b, 1, &two);
    kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_INT64, big, 0, ONE), &o, FC_INT64, &red, &zero);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, INT64_MIN + 1);
}
END_TEST

START_TEST(test_prod_float)
{
    int64_t n = 300, zero = 0;
    float x[300], o = 0;
    for (int i = 0; i < n; i++)
        x[i] = i % 10 == 0 ? 2.0f : 1.0f;
    bool red = true;
    KB b;
    kb_init(&b, 1, &n);
    kb_reduce(&b, FC_OP_PROD, kb_load(&b, FC_FLOAT32, x, 0, ONE), &o, FC_FLOAT32, &red, &zero);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_same_f32(o, 1073741824.0f);
}
END_TEST

/* amax/amin/argmax/argmin over the rows of an [R, C] float32 input (reduce dim 1, horizontal),
 * and over its columns (reduce dim 0, vertical), against a direct scan. */
static void extreme_ref(const float *x, int64_t n, int64_t stride, bool is_max, float *val, int64_t *idx)
{
    *idx = 0;
    *val = x[0];
    for (int64_t i = 1; i < n; i++) {
        float v = x[i * stride], c = *val;
        bool better = isnan(v) ? !isnan(c) : (is_max ? v > c : v < c);
        if (better) {
            *val = v;
            *idx = i;
        }
    }
}

static const int64_t ext_shapes[][2] = {{3, 1000}, {600, 40}, {2, 3}, {300, 2}, {3, 2100}};

START_TEST(test_extremes_2d)
{
    const int64_t *e = ext_shapes[_i];
    int64_t R = e[0], C = e[1];
    float *x = malloc((size_t)(R * C) * 4);
    uint64_t s = 12345;
    for (int64_t i = 0; i < R * C; i++)
        x[i] = (float)(rng_next(&s) % 50);   /* many ties */
    x[C + 1 < R * C ? C + 1 : 0] = NAN;
    x[R * C - 1] = NAN;
    int64_t st[2] = {C, 1};
    for (int dim = 0; dim < 2; dim++) {
        int64_t nout = dim == 0 ? C : R, len = dim == 0 ? R : C;
        bool red[2] = {dim == 0, dim == 1};
        int64_t ost[2] = {dim == 0 ? 0 : 1, dim == 0 ? 1 : 0};
        for (int op = 0; op < 4; op++) {
            FcOp rop = (FcOp[]){FC_OP_AMAX, FC_OP_AMIN, FC_OP_ARGMAX, FC_OP_ARGMIN}[op];
            bool arg = op >= 2, is_max = op % 2 == 0;
            static union {
                float f[4096];
                int64_t i[4096];
            } o;
            KB b;
            kb_init(&b, 2, e);
            kb_reduce(&b, rop, kb_load(&b, FC_FLOAT32, x, 0, st), &o, arg ? FC_INT64 : FC_FLOAT32, red, ost);
            ck_assert_int_eq(kb_run(&b), FC_OK);
            for (int64_t j = 0; j < nout; j++) {
                float v;
                int64_t ix;
                extreme_ref(x + (dim == 0 ? j : j * C), len, dim == 0 ? C : 1, is_max, &v, &ix);
                if (arg)
                    ck_assert_int_eq(o.i[j], ix);
                else
                    ck_assert_same_f32(o.f[j], v);
            }
        }
    }
    free(x);
}
END_TEST

START_TEST(test_argmax_first_nan_and_ties)
{
    double x[6] = {1, 5, NAN, 5, NAN, 0};
    int64_t n = 6, zero = 0, o;
    bool red = true;
    KB b;
    kb_init(&b, 1, &n);
    kb_reduce(&b, FC_OP_ARGMAX, kb_load(&b, FC_FLOAT64, x, 0, ONE), &o, FC_INT64, &red, &zero);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, 2);
    b.k.reduce = FC_OP_ARGMIN;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, 2);
    int64_t y[5] = {3, 7, 7, -1, -1};
    n = 5;
    kb_init(&b, 1, &n);
    kb_reduce(&b, FC_OP_ARGMAX, kb_load(&b, FC_INT64, y, 0, ONE), &o, FC_INT64, &red, &zero);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, 1);
    b.k.reduce = FC_OP_ARGMIN;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, 3);
}
END_TEST

/* Over full chunks (the vectorised path): ties keep the first index, the first NaN wins. */
START_TEST(test_argmax_long_ties)
{
    enum { N = 700 };
    float x[N];
    int64_t n = N, zero = 0, o;
    bool red = true;
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 97);
    x[10] = x[500] = 1000.0f;
    x[20] = x[650] = -5.0f;
    KB b;
    kb_init(&b, 1, &n);
    kb_reduce(&b, FC_OP_ARGMAX, kb_load(&b, FC_FLOAT32, x, 0, ONE), &o, FC_INT64, &red, &zero);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, 10);
    b.k.reduce = FC_OP_ARGMIN;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, 20);
    x[300] = x[400] = NAN;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, 300);
    b.k.reduce = FC_OP_ARGMAX;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(o, 300);
}
END_TEST

START_TEST(test_amax_nan_and_ints)
{
    float x[3] = {1, NAN, 2}, o;
    int64_t n = 3, zero = 0;
    bool red = true;
    KB b;
    kb_init(&b, 1, &n);
    kb_reduce(&b, FC_OP_AMIN, kb_load(&b, FC_FLOAT32, x, 0, ONE), &o, FC_FLOAT32, &red, &zero);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert(isnan(o));
    int32_t y[3] = {INT32_MIN, -5, INT32_MAX}, oi;
    kb_init(&b, 1, &n);
    kb_reduce(&b, FC_OP_AMIN, kb_load(&b, FC_INT32, y, 0, ONE), &oi, FC_INT32, &red, &zero);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(oi, INT32_MIN);
    b.k.reduce = FC_OP_AMAX;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_int_eq(oi, INT32_MAX);
}
END_TEST

START_TEST(test_any_all)
{
    int64_t e[2] = {4, 300}, st[2] = {300, 1}, ost[2] = {1, 0};
    bool red[2] = {false, true};
    uint8_t x[1200] = {0}, o[4];
    for (int j = 0; j < 300; j++) {
        x[300 + j] = 1;           /* row 1 all true */
        x[600 + j] = j == 299;    /* row 2 one true */
        x[900 + j] = j != 5;      /* row 3 all but one */
    }
    KB b;
    kb_init(&b, 2, e);
    kb_reduce(&b, FC_OP_ANY, kb_load(&b, FC_BOOL, x, 0, st), o, FC_BOOL, red, ost);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 1, 1, 1}), 4);
    b.k.reduce = FC_OP_ALL;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_mem_eq(o, ((uint8_t[]){0, 1, 0, 0}), 4);
}
END_TEST

/* A reduction of a fused expression with a strided, offset output. */
START_TEST(test_reduce_fused_output_strides)
{
    int64_t e[2] = {50, 400}, st[2] = {400, 1}, ost[2] = {3, 0};
    bool red[2] = {false, true};
    float *x = malloc(20000 * 4);
    double o[160];
    for (int i = 0; i < 20000; i++)
        x[i] = (float)(i % 13);
    for (int i = 0; i < 160; i++)
        o[i] = -7;
    KB b;
    kb_init(&b, 2, e);
    int a = kb_load(&b, FC_FLOAT32, x, 0, st);
    int sq = kb_op(&b, FC_OP_MUL, FC_FLOAT32, a, a, -1);
    int d = kb_op(&b, FC_OP_CAST, FC_FLOAT64, sq, -1, -1);
    kb_reduce(&b, FC_OP_SUM, d, o, FC_FLOAT64, red, ost);
    b.k.out_offset = 2;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int r = 0; r < 50; r++) {
        double want = 0;
        for (int j = 0; j < 400; j++)
            want += (double)x[r * 400 + j] * x[r * 400 + j];
        ck_assert_same_f64(o[2 + 3 * r], want);
        ck_assert_same_f64(o[3 + 3 * r], -7.0);
    }
    free(x);
}
END_TEST

/* ---- index widths ----
 * FcKernel.index32 lets the executor compute offsets within a chunk in int32. The same kernels
 * (strided, reversed, broadcast, transposing loads and stores, gathers, both reduction shapes)
 * give the same bytes with it off and on, and what a naive loop gives. Values are small
 * integers in every dtype, so sums are exact in any order. */

/* Element k of a test input of dtype dt, and reading any dtype back as a double. */
static void width_fill(FcDType dt, void *x, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        int64_t v = k * 7919 % 1000 - 500;
        switch (dt) {
        case FC_BOOL: ((uint8_t *)x)[k] = k % 3 == 0; break;
        case FC_INT32: ((int32_t *)x)[k] = (int32_t)v; break;
        case FC_INT64: ((int64_t *)x)[k] = v; break;
        case FC_FLOAT32: ((float *)x)[k] = (float)v; break;
        default: ((double *)x)[k] = (double)v; break;
        }
    }
}

static double width_get(FcDType dt, const void *x, int64_t k)
{
    switch (dt) {
    case FC_BOOL: return ((const uint8_t *)x)[k];
    case FC_INT32: return ((const int32_t *)x)[k];
    case FC_INT64: return (double)((const int64_t *)x)[k];
    case FC_FLOAT32: return ((const float *)x)[k];
    default: return ((const double *)x)[k];
    }
}

/* out = a (+ b) over the loop nest, stored or reduced (SUM / ARGMAX) into out. */
typedef struct WidthCase {
    FcDType dt;
    int nloop;
    int64_t ext[3];
    int64_t a_off, a_str[3];
    bool has_b;                 /* b added to a (the same buffer, other geometry) */
    int64_t b_off, b_str[3];
    int64_t o_off, o_str[3];
    FcOp reduce;                /* FC_OP_NONE: a store */
    bool red[3];
} WidthCase;

#define BIG ((int64_t)1 << 40)
static const WidthCase width_cases[] = {
    /* stride 3, several chunks */
    {FC_FLOAT32, 1, {1000}, 0, {3}, false, 0, {0}, 0, {1}, FC_OP_NONE, {false}},
    /* reversed, plus an invariant broadcast, into a reversed output */
    {FC_FLOAT64, 1, {1000}, 1999, {-2}, true, 5, {0}, 999, {-1}, FC_OP_NONE, {false}},
    /* transposing load (tiles), and transposing store */
    {FC_INT32, 2, {67, 300}, 0, {1, 67}, false, 0, {0}, 0, {300, 1}, FC_OP_NONE, {false}},
    {FC_INT64, 2, {300, 67}, 0, {67, 1}, false, 0, {0}, 0, {1, 300}, FC_OP_NONE, {false}},
    /* bool 3-d permutation */
    {FC_BOOL, 3, {4, 5, 300}, 0, {5, 1, 20}, false, 0, {0}, 0, {1500, 300, 1}, FC_OP_NONE, {false}},
    /* a row broadcast plus a strided operand */
    {FC_INT32, 2, {3, 400}, 0, {1, 0}, true, 2, {400, 3}, 0, {400, 1}, FC_OP_NONE, {false}},
    /* a short inner loop: chunks run along loop 0 */
    {FC_FLOAT32, 2, {300, 3}, 0, {1, 300}, false, 0, {0}, 0, {3, 1}, FC_OP_NONE, {false}},
    /* a loop of extent 1 with strides far beyond int32 (never multiplied by anything but 0) */
    {FC_INT64, 2, {1, 500}, 0, {BIG, 3}, false, 0, {0}, 0, {BIG, 1}, FC_OP_NONE, {false}},
    /* horizontal sum along a strided loop; vertical sum with a strided chunk loop */
    {FC_FLOAT32, 2, {16, 1000}, 0, {1, 16}, false, 0, {0}, 0, {1, 0}, FC_OP_SUM, {false, true}},
    {FC_INT32, 2, {500, 70}, 0, {1, 500}, true, 3, {0, 2}, 0, {0, 1}, FC_OP_SUM, {true, false}},
    /* argmax along a strided loop */
    {FC_FLOAT64, 2, {40, 300}, 0, {1, 40}, false, 0, {0}, 0, {1, 0}, FC_OP_ARGMAX, {false, true}},
};
#undef BIG

/* Elements an access needs: one past its highest address (its lowest is >= 0 in every case). */
static int64_t width_extent(const WidthCase *c, int64_t off, const int64_t *str)
{
    int64_t hi = off;
    for (int l = 0; l < c->nloop; l++)
        if (str[l] > 0 && c->ext[l] > 1)
            hi += str[l] * (c->ext[l] - 1);
    return hi + 1;
}

/* Builds case c reading x and writing out, with the given index width. */
static void width_build(KB *b, const WidthCase *c, const void *x, void *out, FcDType out_dt, bool index32)
{
    kb_init(b, c->nloop, c->ext);
    int r = kb_load(b, c->dt, x, c->a_off, c->a_str);
    if (c->has_b)
        r = kb_op(b, FC_OP_ADD, c->dt, r, kb_load(b, c->dt, x, c->b_off, c->b_str), -1);
    if (c->reduce == FC_OP_NONE)
        kb_store(b, r, out, c->dt, c->o_off, c->o_str);
    else
        kb_reduce(b, c->reduce, r, out, out_dt, c->red, c->o_str);
    b->k.index32 = index32;
}

START_TEST(test_index_widths_agree)
{
    const WidthCase *c = &width_cases[_i];
    size_t es = fc_dtype_size(c->dt);
    int64_t nx = width_extent(c, c->a_off, c->a_str);
    if (c->has_b && width_extent(c, c->b_off, c->b_str) > nx)
        nx = width_extent(c, c->b_off, c->b_str);
    int64_t no = width_extent(c, c->o_off, c->o_str);
    FcDType out_dt = c->reduce == FC_OP_ARGMAX ? FC_INT64
                     : c->reduce == FC_OP_SUM && !fc_dtype_is_float(c->dt) ? FC_INT64 : c->dt;
    size_t oes = fc_dtype_size(out_dt);
    void *x = malloc((size_t)nx * es);
    char *o32 = malloc((size_t)no * oes), *o64 = malloc((size_t)no * oes);
    double *want = calloc((size_t)no, sizeof *want), *best = calloc((size_t)no, sizeof *best);
    width_fill(c->dt, x, nx);
    memset(o32, 0x55, (size_t)no * oes);
    memset(o64, 0x55, (size_t)no * oes);
    KB b;
    width_build(&b, c, x, o64, out_dt, false);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    width_build(&b, c, x, o32, out_dt, true);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_mem_eq(o32, o64, (size_t)no * oes);

    /* The naive loop nest (ARGMAX: the one reduced loop is the last). */
    int64_t total = 1, idx[3] = {0, 0, 0};
    bool *seen = calloc((size_t)no, 1);
    for (int l = 0; l < c->nloop; l++)
        total *= c->ext[l];
    for (int64_t p = 0; p < total; p++) {
        int64_t v = p, a = c->a_off, bo = c->b_off, o = c->o_off;
        for (int l = c->nloop - 1; l >= 0; l--) {
            idx[l] = v % c->ext[l];
            v /= c->ext[l];
        }
        for (int l = 0; l < c->nloop; l++) {
            a += c->a_str[l] * idx[l];
            bo += c->b_str[l] * idx[l];
            o += c->o_str[l] * idx[l];
        }
        double val = width_get(c->dt, x, a) + (c->has_b ? width_get(c->dt, x, bo) : 0);
        if (c->reduce == FC_OP_NONE)
            want[o] = val;
        else if (c->reduce == FC_OP_SUM)
            want[o] += val;
        else if (!seen[o] || val > best[o]) {
            best[o] = val;
            want[o] = (double)idx[c->nloop - 1];
        }
        seen[o] = true;
    }
    for (int64_t k = 0; k < no; k++)
        if (seen[k])
            ck_assert_msg(width_get(out_dt, o32, k) == want[k], "out[%lld] = %g, expected %g", (long long)k,
                          width_get(out_dt, o32, k), want[k]);
        else
            ck_assert_int_eq(((uint8_t *)o32)[k * (int64_t)oes], 0x55);
    free(seen);
    free(x);
    free(o32);
    free(o64);
    free(want);
    free(best);
}
END_TEST

/* Gathers at both widths: two gathered dims plus a strided one, an invariant gathered index,
 * and an index out of range reported the same way. */
START_TEST(test_index_widths_gather)
{
    enum { R = 50, C = 8, N = 700 };
    float table[R * C];
    int64_t i0[N], i1[N], n = N, zero = 0, ext[2] = {N, 2}, st[2] = {1, 0}, tst[2] = {0, 3};
    for (int k = 0; k < R * C; k++)
        table[k] = (float)k;
    for (int k = 0; k < N; k++) {
        i0[k] = k * 31 % R;
        i1[k] = k % 2;
    }
    float o[2][N * 2], p[2][N], scratch[N];
    for (int w = 0; w < 2; w++) {
        KB b;
        kb_init(&b, 2, ext);
        int r0 = kb_load(&b, FC_INT64, i0, 0, st), r1 = kb_load(&b, FC_INT64, i1, 0, st);
        int g = kb_load(&b, FC_FLOAT32, table, 1, tst);      /* table[i0][i1 + 3 j + 1] */
        kb_gather(&b, g, r0, C, R);
        kb_gather(&b, g, r1, 1, 2);
        int64_t ost[2] = {2, 1};
        kb_store(&b, g, o[w], FC_FLOAT32, 0, ost);
        b.k.index32 = w == 1;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        /* an invariant index: table[i0[7]][k] for every k < C, broadcast over n */
        kb_init(&b, 1, &n);
        int ri = kb_load(&b, FC_INT64, i0, 7, &zero);
        int gi = kb_load(&b, FC_FLOAT32, table, 0, &zero);
        kb_gather(&b, gi, ri, C, R);
        ck_assert(b.code[gi].invariant);
        kb_store(&b, gi, p[w], FC_FLOAT32, 0, ONE);
        b.k.index32 = w == 1;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        /* out of range */
        i0[600] = R;
        kb_init(&b, 1, &n);
        ri = kb_load(&b, FC_INT64, i0, 0, ONE);
        gi = kb_load(&b, FC_FLOAT32, table, 0, &zero);
        kb_gather(&b, gi, ri, C, R);
        kb_store(&b, gi, scratch, FC_FLOAT32, 0, ONE);
        b.k.index32 = w == 1;
        ck_assert_int_eq(kb_run(&b), FC_ERR_INDEX);
        ck_assert_str_eq(err.msg, "index 50 is out of bounds for dimension 0 with size 50");
        i0[600] = 600 * 31 % R;
    }
    for (int k = 0; k < N; k++)
        for (int j = 0; j < 2; j++)
            ck_assert_same_f32(o[1][k * 2 + j], table[i0[k] * C + i1[k] + 3 * j + 1]);
    ck_assert_mem_eq(o[0], o[1], sizeof o[0]);
    for (int k = 0; k < N; k++) {
        ck_assert_same_f32(p[0][k], table[i0[7] * C]);
        ck_assert_same_f32(p[1][k], table[i0[7] * C]);
    }
}
END_TEST

/* Addresses past 2^31 and 2^32 elements, on the 64-bit path: a 16 GiB stretch of address space
 * reserved without backing (MAP_NORESERVE), only the pages the kernels touch ever allocated.
 * Every kernel also runs with index32 claimed: the executor sees that the accesses span more
 * than 2^31 elements and stays at 64 bits. Skipped where the address space cannot be had. */
START_TEST(test_addresses_beyond_int32)
{
    const int64_t n = ((int64_t)1 << 32) + (1 << 16), S = ((int64_t)1 << 31) + 3, F = ((int64_t)1 << 32) + 4096;
    int32_t *x = mmap(NULL, (size_t)n * 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    if (x == MAP_FAILED)
        return;
    for (int64_t k = 0; k < 3; k++)
        for (int j = 0; j < 40; j++)
            x[k * S + j] = (int32_t)(1000 * k + j);
    for (int j = 0; j < 600; j++)
        x[F + j] = -j;
    for (int64_t j = 0; j < 40; j++)
        for (int i = 0; i < 8; i++)
            x[(j << 26) + i] = (int32_t)(100 * j + i);
    for (int w = 0; w < 2; w++) {
        KB b;
        int32_t o[320];
        int64_t e3 = 3, e300 = 300, two = 2, zero = 0;
        bool red = true;
        /* strided load: stride S */
        kb_init(&b, 1, &e3);
        kb_store(&b, kb_load(&b, FC_INT32, x, 5, &S), o, FC_INT32, 0, ONE);
        b.k.index32 = w;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        for (int k = 0; k < 3; k++)
            ck_assert_int_eq(o[k], 1000 * k + 5);
        /* offset past 2^32, contiguous and strided */
        kb_init(&b, 1, &e300);
        int a = kb_load(&b, FC_INT32, x, F, ONE);
        kb_store(&b, kb_op(&b, FC_OP_ADD, FC_INT32, a, kb_load(&b, FC_INT32, x, F + 1, &two), -1), o, FC_INT32,
                 0, ONE);
        b.k.index32 = w;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        for (int j = 0; j < 300; j++)
            ck_assert_int_eq(o[j], -j - (1 + 2 * j));
        /* a transpose whose rows are 2^26 elements apart: tiles, chunks along the strided loop */
        int64_t et[2] = {8, 40}, tst[2] = {1, (int64_t)1 << 26}, tost[2] = {40, 1};
        kb_init(&b, 2, et);
        kb_store(&b, kb_load(&b, FC_INT32, x, 0, tst), o, FC_INT32, 0, tost);
        b.k.index32 = w;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 40; j++)
                ck_assert_int_eq(o[i * 40 + j], 100 * j + i);
        /* gather: index * S */
        int64_t ix[3] = {2, 0, 1};
        kb_init(&b, 1, &e3);
        int ri = kb_load(&b, FC_INT64, ix, 0, ONE), g = kb_load(&b, FC_INT32, x, 13, &zero);
        kb_gather(&b, g, ri, S, 3);
        kb_store(&b, g, o, FC_INT32, 0, ONE);
        b.k.index32 = w;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        for (int k = 0; k < 3; k++)
            ck_assert_int_eq(o[k], 1000 * ix[k] + 13);
        /* horizontal and vertical sums across the stretch */
        int64_t sum[20];
        kb_init(&b, 1, &e3);
        kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_INT32, x, 17, &S), sum, FC_INT64, &red, &zero);
        b.k.index32 = w;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        ck_assert_int_eq(sum[0], 3000 + 3 * 17);
        int64_t ev[2] = {3, 20}, sv[2] = {S, 1}, ov[2] = {0, 1};
        bool rv[2] = {true, false};
        kb_init(&b, 2, ev);
        kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_INT32, x, 19, sv), sum, FC_INT64, rv, ov);
        b.k.index32 = w;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        for (int j = 0; j < 20; j++)
            ck_assert_int_eq(sum[j], 3000 + 3 * (19 + j));
        /* strided store: stride S, into the stretch */
        int32_t v[3] = {-7, -8, -9};
        kb_init(&b, 1, &e3);
        kb_store(&b, kb_load(&b, FC_INT32, v, 0, ONE), x, FC_INT32, 11, &S);
        b.k.index32 = w;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        for (int k = 0; k < 3; k++) {
            ck_assert_int_eq(x[11 + k * S], v[k]);
            ck_assert_int_eq(x[12 + k * S], 1000 * k + 12);
            x[11 + k * S] = (int32_t)(1000 * k + 11);
        }
    }
    munmap(x, (size_t)n * 4);
}
END_TEST

/* A loop longer than 2^31 (stride 0: its addresses fit in int32, so index32 may be set) keeps
 * 64-bit loop counters: sum and argmax over 2^31 + 300 elements. */
START_TEST(test_extent_beyond_int32)
{
    const int64_t n = ((int64_t)1 << 31) + 300;
    float one = 1.0f;
    double sum = 0;
    int64_t zero = 0;
    bool red = true;
    KB b;
    kb_init(&b, 1, &n);
    kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_FLOAT32, &one, 0, &zero), &sum, FC_FLOAT64, &red, &zero);
    b.k.index32 = true;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_same_f64(sum, (double)n);
}
END_TEST

/* ---- thread-count independence ---- */

/* Runs kernel k on a backend with `threads` threads. */
static FcStatus run_with(KB *b, int threads)
{
    FcBackend *bk = fc_cpu_backend_new(threads);
    ck_assert_ptr_nonnull(bk);
    b->k.nthreads = threads;
    FcStatus st = bk->run(bk, &b->k, &err);
    bk->destroy(bk);
    return st;
}

/* A float32 full sum, a float32 column sum with few columns (split into blocks), and an argmax
 * over many elements give the same bits with 1, 2 and 4 threads. */
START_TEST(test_deterministic_reductions)
{
    enum { N = 1 << 18 };
    float *x = malloc((size_t)N * 4);
    uint64_t s = 99;
    for (int i = 0; i < N; i++)
        x[i] = rng_float(&s) * 1000.0f;
    x[N - 3] = 5000.0f;
    float full[3], cols[3][32];
    int64_t arg[3];
    int threads[3] = {1, 2, 4};
    for (int t = 0; t < 3; t++) {
        int64_t n = N, zero = 0;
        bool red = true;
        KB b;
        kb_init(&b, 1, &n);
        kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_FLOAT32, x, 0, ONE), &full[t], FC_FLOAT32, &red, &zero);
        ck_assert_int_eq(run_with(&b, threads[t]), FC_OK);
        b.k.reduce = FC_OP_ARGMAX;
        b.k.out = &arg[t];
        b.k.out_dtype = FC_INT64;
        ck_assert_int_eq(run_with(&b, threads[t]), FC_OK);
        int64_t e[2] = {N / 32, 32}, st[2] = {32, 1}, ost[2] = {0, 1};
        bool red2[2] = {true, false};
        kb_init(&b, 2, e);
        kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_FLOAT32, x, 0, st), cols[t], FC_FLOAT32, red2, ost);
        ck_assert_int_eq(run_with(&b, threads[t]), FC_OK);
    }
    double want = 0;
    for (int i = 0; i < N; i++)
        want += x[i];
    ck_assert_msg(fabs(full[0] - want) <= 1e-3 * fabs(want) + 1, "sum %g, expected %g", full[0], want);
    ck_assert_int_eq(arg[0], N - 3);
    for (int t = 1; t < 3; t++) {
        ck_assert_mem_eq(&full[t], &full[0], sizeof full[0]);
        ck_assert_mem_eq(cols[t], cols[0], sizeof cols[0]);
        ck_assert_int_eq(arg[t], arg[0]);
    }
    free(x);
}
END_TEST

/* Column sums and argmaxes of a wide input with few output units: the reduced loop is cut
 * into blocks, each unit spanning several chunks. Exact (small integers), same with 1 and 4
 * threads. */
START_TEST(test_split_vertical)
{
    enum { R = 600, C = 2300 };
    double *x = malloc((size_t)R * C * 8), sums[2][C], want[C];
    int64_t args[2][C];
    for (int i = 0; i < R * C; i++)
        x[i] = (double)((i * 7919LL) % 101);
    for (int j = 0; j < C; j++) {
        want[j] = 0;
        for (int i = 0; i < R; i++)
            want[j] += x[i * C + j];
    }
    for (int t = 0; t < 2; t++) {
        int64_t e[2] = {R, C}, st[2] = {C, 1}, ost[2] = {0, 1};
        bool red[2] = {true, false};
        KB b;
        kb_init(&b, 2, e);
        kb_reduce(&b, FC_OP_SUM, kb_load(&b, FC_FLOAT64, x, 0, st), sums[t], FC_FLOAT64, red, ost);
        ck_assert_int_eq(run_with(&b, t ? 4 : 1), FC_OK);
        b.k.reduce = FC_OP_ARGMAX;
        b.k.out = args[t];
        b.k.out_dtype = FC_INT64;
        ck_assert_int_eq(run_with(&b, t ? 4 : 1), FC_OK);
    }
    for (int j = 0; j < C; j++) {
        ck_assert_same_f64(sums[0][j], want[j]);
        int64_t best = 0;
        for (int i = 1; i < R; i++)
            if (x[i * C + j] > x[best * C + j])
                best = i;
        ck_assert_int_eq(args[0][j], best);
    }
    ck_assert_mem_eq(sums[1], sums[0], sizeof sums[0]);
    ck_assert_mem_eq(args[1], args[0], sizeof args[0]);
    free(x);
}
END_TEST

/* A large elementwise kernel on several threads writes every element. */
START_TEST(test_parallel_store)
{
    enum { N = 1 << 17 };
    int32_t *x = malloc((size_t)N * 4), *o = malloc((size_t)N * 4);
    for (int i = 0; i < N; i++) {
        x[i] = i;
        o[i] = -1;
    }
    int64_t n = N;
    KB b;
    kb_init(&b, 1, &n);
    int a = kb_load(&b, FC_INT32, x, 0, ONE);
    kb_store(&b, kb_op(&b, FC_OP_ADD, FC_INT32, a, a, -1), o, FC_INT32, 0, ONE);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += o[i] != 2 * i;
    ck_assert_int_eq(bad, 0);
    free(x);
    free(o);
}
END_TEST

/* An error in a parallel kernel is reported, and the same one with any thread count. */
START_TEST(test_parallel_error)
{
    enum { N = 1 << 17 };
    int64_t *x = malloc((size_t)N * 8), *o = malloc((size_t)N * 8);
    for (int i = 0; i < N; i++)
        x[i] = i % 1000 + 1;
    x[100000] = 0;
    int64_t n = N;
    KB b;
    kb_init(&b, 1, &n);
    int k = kb_i(&b, FC_INT64, 7);
    kb_store(&b, kb_op(&b, FC_OP_MOD, FC_INT64, k, kb_load(&b, FC_INT64, x, 0, ONE), -1), o, FC_INT64, 0, ONE);
    ck_assert_int_eq(run_with(&b, 4), FC_ERR_RUNTIME);
    ck_assert_str_eq(err.msg, "ZeroDivisionError");
    ck_assert_int_eq(run_with(&b, 1), FC_ERR_RUNTIME);
    free(x);
    free(o);
}
END_TEST

/* ---- scattered stores ----
 * The element at loop indices (i, ...) goes to out + offset + its strides + each scatter index
 * times its stride. Expected results come from the sequential loop nest in C order, which fixes
 * which duplicate stays (plain stores) and the order duplicates are summed in (accumulate). */

/* A plain scattered store into every third element of the output (the others untouched): a
 * permutation, the same permutation as negative indices that wrap (-n included), and one with
 * many duplicates, of which the last in loop order stays; 150k elements with 1 and 4 threads. */
START_TEST(test_scatter_store)
{
    enum { N = 150000 };
    int64_t n = N, zero = 0;
    double *x = malloc((size_t)N * 8), *o = malloc((size_t)3 * N * 8), *want = malloc((size_t)3 * N * 8);
    int64_t *perm = malloc((size_t)N * 8), *ix = malloc((size_t)N * 8);
    uint64_t s = 5;
    for (int k = 0; k < N; k++) {
        x[k] = k * 0.5;
        perm[k] = k;
    }
    for (int k = N - 1; k > 0; k--) {
        int j = (int)(rng_next(&s) % (uint64_t)(k + 1));
        int64_t t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
    }
    for (int c = 0; c < 3; c++) {
        for (int k = 0; k < N; k++)
            ix[k] = c == 0 ? perm[k] : c == 1 ? perm[k] - N : perm[k] % 1000;
        for (int k = 0; k < 3 * N; k++)
            want[k] = -1.0;
        for (int k = 0; k < N; k++)
            want[1 + 3 * (ix[k] < 0 ? ix[k] + N : ix[k])] = x[k];
        for (int threads = 1; threads <= 4; threads += 3) {
            for (int k = 0; k < 3 * N; k++)
                o[k] = -1.0;
            KB b;
            kb_init(&b, 1, &n);
            int v = kb_load(&b, FC_FLOAT64, x, 0, ONE);
            kb_scatter(&b, kb_load(&b, FC_INT64, ix, 0, ONE), 3, N)->wrap = c == 1;
            kb_store(&b, v, o, FC_FLOAT64, 1, &zero);
            ck_assert_int_eq(run_with(&b, threads), FC_OK);
            ck_assert_mem_eq(o, want, (size_t)3 * N * 8);
        }
    }
    free(x);
    free(o);
    free(want);
    free(perm);
    free(ix);
}
END_TEST

/* The next float32 value to add to a sum now at acc: 1e8 against the sign of acc, or a small one.
 * Added in this order the sum stays within 1e8 of 0, where a small value is sometimes rounded
 * away (float32 steps of 8 near 1e8) and sometimes not; any other order of the same values lets
 * the sum drift, so the bits depend on the order. */
static float order_val(float acc, uint64_t *s)
{
    static const float small[] = {1.0f, 3.0f, 0.25f, -1.0f};
    uint64_t r = rng_next(s);
    return r % 3 == 0 ? (acc > 0 ? -1e8f : 1e8f) : small[r / 3 % 4];
}

/* Accumulating into 13 slots from an R x C loop nest whose index varies along both loops: the
 * float32 sums are those of the sequential loop, bit for bit, with 1 and 4 threads (which shows
 * the order only if a reversed loop gives other bits, checked first). Shapes big enough for a
 * plain store to take several threads (1.6M elements: enough tasks that the workers join in),
 * and where it would run chunks along the outer loop (a short inner one) or in tiles (a
 * transposed load). */
typedef struct AccCase {
    int64_t r, c;
    bool transposed;            /* the values are read column by column */
} AccCase;

static const AccCase acc_cases[] = {{4000, 400, false}, {40000, 4, false}, {400, 400, true}};

START_TEST(test_scatter_accumulate_f32)
{
    const AccCase *c = &acc_cases[_i];
    enum { M = 13 };
    int64_t n = c->r * c->c, e[2] = {c->r, c->c}, ist[2] = {c->c, 1}, ost[2] = {0, 0};
    int64_t xst[2] = {c->transposed ? 1 : c->c, c->transposed ? c->r : 1};
    float *x = malloc((size_t)n * 4), want[M], back[M], o[M];
    int64_t *ix = malloc((size_t)n * 8);
    uint64_t s = 7;
    for (int j = 0; j < M; j++)
        want[j] = back[j] = (float)j;
    for (int64_t i = 0; i < c->r; i++)
        for (int64_t j = 0; j < c->c; j++) {
            int64_t *slot = &ix[i * c->c + j];
            float *v = &x[i * xst[0] + j * xst[1]];
            *slot = (int64_t)(rng_next(&s) % M);
            *v = order_val(want[*slot], &s);
            want[*slot] += *v;
        }
    for (int64_t i = c->r - 1; i >= 0; i--)
        for (int64_t j = c->c - 1; j >= 0; j--)
            back[ix[i * c->c + j]] += x[i * xst[0] + j * xst[1]];
    ck_assert(memcmp(want, back, sizeof want) != 0);
    for (int threads = 1; threads <= 4; threads += 3) {
        for (int j = 0; j < M; j++)
            o[j] = (float)j;
        KB b;
        kb_init(&b, 2, e);
        int v = kb_load(&b, FC_FLOAT32, x, 0, xst);
        kb_scatter(&b, kb_load(&b, FC_INT64, ix, 0, ist), 1, M);
        kb_store(&b, v, o, FC_FLOAT32, 0, ost);
        b.k.accumulate = true;
        ck_assert_int_eq(run_with(&b, threads), FC_OK);
        for (int j = 0; j < M; j++)
            ck_assert_same_f32(o[j], want[j]);
    }
    free(x);
    free(ix);
}
END_TEST

/* Accumulating with no scatter index (a stride-0 loop: out[c] += x[r][c] for every row r) sums
 * row by row in float32, as the sequential loop does, with 1 and 4 threads (200k elements). */
START_TEST(test_accumulate_unscattered)
{
    enum { R = 1000, C = 200 };
    int64_t e[2] = {R, C}, st[2] = {C, 1}, ost[2] = {0, 1};
    float *x = malloc((size_t)R * C * 4), want[C], o[C];
    uint64_t s = 11;
    for (int c = 0; c < C; c++)
        want[c] = (float)c;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            x[r * C + c] = order_val(want[c], &s);
            want[c] += x[r * C + c];
        }
    for (int threads = 1; threads <= 4; threads += 3) {
        for (int c = 0; c < C; c++)
            o[c] = (float)c;
        KB b;
        kb_init(&b, 2, e);
        kb_store(&b, kb_load(&b, FC_FLOAT32, x, 0, st), o, FC_FLOAT32, 0, ost);
        b.k.accumulate = true;
        ck_assert_int_eq(run_with(&b, threads), FC_OK);
        for (int c = 0; c < C; c++)
            ck_assert_same_f32(o[c], want[c]);
    }
    free(x);
}
END_TEST

/* out[idx[i]] = x[i] (accumulate: out[idx[i]] += x[i]) for i < n: x of dtype xdt stored as odt,
 * idx in [0, m). */
static FcStatus scatter_1d(FcDType xdt, const void *x, const int64_t *idx, int64_t n, void *out, FcDType odt,
                           int64_t m, bool acc)
{
    KB b;
    int64_t zero = 0;
    kb_init(&b, 1, &n);
    int v = kb_load(&b, xdt, x, 0, ONE);
    kb_scatter(&b, kb_load(&b, FC_INT64, idx, 0, ONE), 1, m);
    kb_store(&b, v, out, odt, 0, &zero);
    b.k.accumulate = acc;
    return kb_run(&b);
}

/* Each output dtype, the value converted to it first: integers wrap, bools or (plain: the last
 * stays), float32 adds in float32 (a value converted before it is added; duplicates rounded at
 * each step, where a double sum would give 16777218). */
START_TEST(test_scatter_dtypes)
{
    int32_t xi[3] = {1, 5, 1};
    int64_t ix_a[3] = {0, 1, 0}, o64[2] = {INT64_MAX, 10};
    ck_assert_int_eq(scatter_1d(FC_INT32, xi, ix_a, 3, o64, FC_INT64, 2, true), FC_OK);
    ck_assert_int_eq(o64[0], INT64_MIN + 1);
    ck_assert_int_eq(o64[1], 15);

    int64_t xl[3] = {1, ((int64_t)1 << 32) + 2, 7}, ix_b[3] = {0, 0, 1};
    int32_t o32[2] = {INT32_MAX, -7};
    ck_assert_int_eq(scatter_1d(FC_INT64, xl, ix_b, 3, o32, FC_INT32, 2, true), FC_OK);
    ck_assert_int_eq(o32[0], INT32_MIN + 2);
    ck_assert_int_eq(o32[1], 0);

    int64_t xb[5] = {0, 3, 0, 0, -2}, ix_c[5] = {0, 1, 1, 2, 1};
    uint8_t ob[3] = {1, 0, 0};
    ck_assert_int_eq(scatter_1d(FC_INT64, xb, ix_c, 5, ob, FC_BOOL, 3, true), FC_OK);
    ck_assert_int_eq(ob[0], 1);
    ck_assert_int_eq(ob[1], 1);
    ck_assert_int_eq(ob[2], 0);
    ob[0] = 1;
    ob[1] = 0;
    ck_assert_int_eq(scatter_1d(FC_INT64, xb, ix_c, 4, ob, FC_BOOL, 3, false), FC_OK);
    ck_assert_int_eq(ob[0], 0);
    ck_assert_int_eq(ob[1], 0);
    ck_assert_int_eq(ob[2], 0);

    double xd[2] = {0.1, 1e40};
    int64_t ix_d[2] = {1, 0};
    float of[2] = {5, 5};
    ck_assert_int_eq(scatter_1d(FC_FLOAT64, xd, ix_d, 2, of, FC_FLOAT32, 2, false), FC_OK);
    ck_assert_same_f32(of[0], INFINITY);
    ck_assert_same_f32(of[1], (float)0.1);

    double xs[3] = {0x1p-24 + 0x1p-50, 1.0, 1.0};
    int64_t ix_e[3] = {0, 1, 1};
    float os[2] = {1.0f, 16777216.0f};
    ck_assert_int_eq(scatter_1d(FC_FLOAT64, xs, ix_e, 3, os, FC_FLOAT32, 2, true), FC_OK);
    ck_assert_same_f32(os[0], 1.0f);
    ck_assert_same_f32(os[1], 16777216.0f);
}
END_TEST

/* A bad scatter index (the cases of the gathers above) stops the kernel before any element of
 * its chunk is written: out[ix[i]][i], stored or accumulated, keeps its old value at i = 699 in
 * the chunk of the bad i = 700. */
START_TEST(test_scatter_out_of_bounds)
{
    const WrapCase *c = &wrap_cases[_i];
    enum { N = 1000 };
    int32_t x[N], o[5 * N];
    int64_t ix[N], n = N;
    wrap_indices(c, ix, N, 700);
    ck_assert_int_eq(699 / FC_CHUNK, 700 / FC_CHUNK);
    for (int k = 0; k < N; k++)
        x[k] = k + 1;
    for (int acc = 0; acc < 2; acc++) {
        for (int k = 0; k < 5 * N; k++)
            o[k] = -1;
        KB b;
        kb_init(&b, 1, &n);
        int v = kb_load(&b, FC_INT32, x, 0, ONE);
        FcGather *sc = kb_scatter(&b, kb_load(&b, FC_INT64, ix, 0, ONE), N, 5);
        sc->wrap = c->wrap;
        sc->dim = 3;
        kb_store(&b, v, o, FC_INT32, 0, ONE);
        b.k.accumulate = acc;
        ck_assert_int_eq(kb_run(&b), FC_ERR_INDEX);
        ck_assert_str_eq(err.msg, c->msg);
        ck_assert_int_eq(o[(ix[699] + 5) % 5 * N + 699], -1);
    }
}
END_TEST

/* Invariant scatter indices: a constant -2 (wrapping: row 3) sends a whole row there; a load
 * that does not vary, accumulating, sums every value into one point in loop order; a constant
 * out of range is reported. */
START_TEST(test_scatter_invariant_index)
{
    enum { N = 1000, M = 5 };
    int64_t n = N, zero = 0, minus2 = -2, x[N], o[M * N];
    float y[N], sum[M] = {0}, want = 0;
    uint64_t s = 3;
    for (int k = 0; k < N; k++) {
        x[k] = (int64_t)k * k;
        y[k] = order_val(want, &s);
        want += y[k];
    }
    for (int k = 0; k < M * N; k++)
        o[k] = -1;
    KB b;
    kb_init(&b, 1, &n);
    int v = kb_load(&b, FC_INT64, x, 0, ONE);
    int r = kb_i(&b, FC_INT64, -2);
    kb_scatter(&b, r, N, M)->wrap = true;
    kb_store(&b, v, o, FC_INT64, 0, ONE);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < N; k++)
            ck_assert_int_eq(o[i * N + k], i == 3 ? x[k] : -1);
    b.code[r].konst.i = 5;
    ck_assert_int_eq(kb_run(&b), FC_ERR_INDEX);
    ck_assert_str_eq(err.msg, "index 5 is out of bounds for dimension 0 with size 5");

    kb_init(&b, 1, &n);
    v = kb_load(&b, FC_FLOAT32, y, 0, ONE);
    r = kb_load(&b, FC_INT64, &minus2, 0, &zero);
    ck_assert(b.code[r].invariant);
    kb_scatter(&b, r, 1, M)->wrap = true;
    kb_store(&b, v, sum, FC_FLOAT32, 0, &zero);
    b.k.accumulate = true;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int i = 0; i < M; i++)
        ck_assert_same_f32(sum[i], i == 3 ? want : 0.0f);
}
END_TEST

/* Two scattered dims (the first wrapping) plus a strided loop dim: out[i0[r]][i1[r]][c] at
 * element strides (70, 14, 2) from offset 1, over a 300 x 7 loop nest; the (i0, i1) pairs
 * repeat, so rows overwrite each other (plain) or add up (accumulate). */
START_TEST(test_scatter_two_dims)
{
    enum { R = 300, C = 7, M0 = 6, M1 = 5, OUT = M0 * M1 * C * 2 };
    int64_t i0[R], i1[R], x[R * C], o[OUT], want[OUT];
    int64_t e[2] = {R, C}, ist[2] = {1, 0}, xst[2] = {C, 1}, ost[2] = {0, 2};
    for (int r = 0; r < R; r++) {
        i0[r] = r * 7 % M0 - (r % 2 ? M0 : 0);
        i1[r] = r * 3 % M1;
    }
    for (int k = 0; k < R * C; k++)
        x[k] = k + 1;
    for (int acc = 0; acc < 2; acc++) {
        for (int k = 0; k < OUT; k++)
            o[k] = want[k] = 1000;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                int64_t a = 1 + (i0[r] + M0) % M0 * (M1 * C * 2) + i1[r] * (C * 2) + c * 2;
                want[a] = (acc ? want[a] : 0) + x[r * C + c];
            }
        KB b;
        kb_init(&b, 2, e);
        int v = kb_load(&b, FC_INT64, x, 0, xst);
        kb_scatter(&b, kb_load(&b, FC_INT64, i0, 0, ist), M1 * C * 2, M0)->wrap = true;
        kb_scatter(&b, kb_load(&b, FC_INT64, i1, 0, ist), C * 2, M1);
        kb_store(&b, v, o, FC_INT64, 1, ost);
        b.k.accumulate = acc;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        ck_assert_mem_eq(o, want, sizeof o);
    }
}
END_TEST

/* A kernel with no loops scatters its one element: index -1 of 4 (stride 2, offset 1) is element
 * 7; stored, then added; an index out of range writes nothing. */
START_TEST(test_scatter_nloop_zero)
{
    double x = 2.5, o[9] = {0};
    int64_t ix = -1;
    KB b;
    kb_init(&b, 0, NULL);
    int v = kb_load(&b, FC_FLOAT64, &x, 0, NULL);
    kb_scatter(&b, kb_load(&b, FC_INT64, &ix, 0, NULL), 2, 4)->wrap = true;
    kb_store(&b, v, o, FC_FLOAT64, 1, NULL);
    ck_assert_int_eq(kb_run(&b), FC_OK);
    for (int k = 0; k < 9; k++)
        ck_assert_same_f64(o[k], k == 7 ? 2.5 : 0.0);
    b.k.accumulate = true;
    ck_assert_int_eq(kb_run(&b), FC_OK);
    ck_assert_same_f64(o[7], 5.0);
    ix = 4;
    ck_assert_int_eq(kb_run(&b), FC_ERR_INDEX);
    ck_assert_str_eq(err.msg, "index 4 is out of bounds for dimension 0 with size 4");
    ck_assert_same_f64(o[7], 5.0);
}
END_TEST

/* Malformed scatters are refused before anything is written: with a reduction, reading a float
 * or a register that does not exist, missing, too many, of negative extent. */
START_TEST(test_scatter_malformed)
{
    float x[4] = {1, 2, 3, 4}, o[4] = {0};
    int64_t ix[4] = {0, 1, 2, 3}, n = 4, zero = 0;
    bool red = true;
    KB b;
    kb_init(&b, 1, &n);
    int v = kb_load(&b, FC_FLOAT32, x, 0, ONE);
    FcGather *sc = kb_scatter(&b, kb_load(&b, FC_INT64, ix, 0, ONE), 1, 4);
    kb_store(&b, v, o, FC_FLOAT32, 0, &zero);
    switch (_i) {
    case 0: kb_reduce(&b, FC_OP_SUM, v, o, FC_FLOAT32, &red, &zero); break;
    case 1: sc->reg = v; break;
    case 2: sc->reg = 40; break;
    case 3: b.k.scatter = NULL; break;
    case 4: b.k.nscatter = FC_MAX_DIMS + 1; break;
    default: sc->extent = -1; break;
    }
    ck_assert_int_eq(kb_run(&b), FC_ERR_VALUE);
    ck_assert_msg(strncmp(err.msg, "cpu kernel: ", 12) == 0, "%s", err.msg);
    for (int k = 0; k < 4; k++)
        ck_assert_same_f32(o[k], 0.0f);
}
END_TEST

/* One validator (fcdim's kernel plan) for both backends, with the stricter rule of the two they
 * had: an inner arg reduction owns no loop (the CUDA generator took one), and a negative extent
 * is refused by both with the same message. */
START_TEST(test_one_validator)
{
    static const char *const want[] = {"loop 1 has a bad owner", "loop 0 has a negative extent"};
    float x[12] = {0}, o[3] = {0};
    int64_t e[2] = {3, 4}, st[2] = {4, 1}, ost[2] = {1, 0};
    KB b;
    if (_i == 1)
        e[0] = -3;
    kb_init(&b, 2, e);
    int v = kb_load(&b, FC_FLOAT32, x, 0, st);
    int r = kb_add(&b, _i == 0 ? FC_OP_ARGMAX : FC_OP_AMAX, _i == 0 ? FC_INT64 : FC_FLOAT32, FC_FLOAT32, v, -1, -1, false);
    b.k.owner[1] = r;
    kb_store(&b, r, o, b.code[r].dtype, 0, ost);
    char msg[128];
    snprintf(msg, sizeof msg, "cpu kernel: %s", want[_i]);
    ck_assert_int_eq(kb_run(&b), FC_ERR_VALUE);
    ck_assert_str_eq(err.msg, msg);
    char *dump = fc_cuda_kernel_dump(&b.k);
    snprintf(msg, sizeof msg, "// cuda: cuda kernel: %s\n", want[_i]);
    ck_assert_ptr_nonnull(dump);
    ck_assert_str_eq(dump, msg);
    free(dump);
}
END_TEST

/* The shared plan's precomputation and live ranges (fcdim's fc_kplan_pre, fc_kplan_live), on
 * out[i, j] = sum over k of w[i, k] * x[j, k] with w = (i + k) * 0.5: w misses j, so it and the
 * iotas it reads are precomputed over their own loops, and so are the load of x and the product
 * (they cannot fail); the sum is not (a reduction), nor is the result. Only the product is read
 * by what is not precomputed (the sum). A veto on i's iota, a table limit below w's 32 points or
 * the unhoisted schedule leave w to the kernel. i's iota, read inside the sum's body, lives until
 * the sum; the body runs before the sum; the result lives to the end. */
START_TEST(test_plan_pre_and_live)
{
    float x[64] = {0}, o[128];
    int64_t e[3] = {8, 16, 4}, sx[3] = {0, 4, 1}, ost[3] = {16, 1, 0};
    KB b;
    kb_init(&b, 3, e);
    int ii = kb_iota(&b, 0), ik = kb_iota(&b, 2);
    int s = kb_op(&b, FC_OP_ADD, FC_INT64, ii, ik, -1);
    int sf = kb_op(&b, FC_OP_CAST, FC_FLOAT32, s, -1, -1);
    int h = kb_f(&b, FC_FLOAT32, 0.5);
    int w = kb_op(&b, FC_OP_MUL, FC_FLOAT32, sf, h, -1);
    int xv = kb_load(&b, FC_FLOAT32, x, 0, sx);
    int pr = kb_op(&b, FC_OP_MUL, FC_FLOAT32, w, xv, -1);
    int r = kb_add(&b, FC_OP_SUM, FC_FLOAT32, FC_FLOAT32, pr, -1, -1, false);
    b.k.owner[2] = r;
    kb_store(&b, r, o, FC_FLOAT32, 0, ost);
    FcPlan *p = NULL;
    ck_assert_int_eq(fc_kplan_new(&b.k, "cpu", &p, &err), FC_OK);
    int n = b.k.ncode;
    bool pre[KB_CODE], kept[KB_CODE], veto[KB_CODE] = {false};
    size_t off[KB_CODE];
    FcTarget t = *be->target;
    size_t bytes = fc_kplan_pre(p, &b.k, &t, p->opv, NULL, pre, off, kept);
    const bool want_pre[] = {[0] = true, [1] = true, [2] = true, [3] = true, [4] = false, [5] = true, [6] = true,
                             [7] = true, [8] = false};
    for (int i = 0; i < n; i++) {
        ck_assert_msg(pre[i] == want_pre[i], "instruction %d: pre %d", i, pre[i]);
        ck_assert_msg(kept[i] == (i == pr), "instruction %d: kept %d", i, kept[i]);
        ck_assert_int_eq(off[i] % 64, 0);
    }
    ck_assert_uint_eq(off[w], 64 + 64 + 256 + 128);     /* after i, k, i + k and its cast, in the plan's order */
    ck_assert_uint_ge(bytes, off[pr] + 8 * 16 * 4 * 4);
    veto[ii] = true;
    fc_kplan_pre(p, &b.k, &t, p->opv, veto, pre, off, kept);
    ck_assert(!pre[ii] && !pre[s] && !pre[w] && pre[ik]);
    t.pre_points = 31;
    fc_kplan_pre(p, &b.k, &t, p->opv, NULL, pre, off, kept);
    ck_assert(pre[ii] && pre[ik] && !pre[s] && !pre[w]);
    b.k.no_hoist = true;
    ck_assert_uint_eq(fc_kplan_pre(p, &b.k, be->target, p->opv, NULL, pre, off, kept), 0);
    ck_assert(!pre[w]);
    /* live ranges over the plan's own reads: operands, no gathers or bounds here */
    int first[KB_CODE + 1], reads[3 * KB_CODE], last[KB_CODE];
    first[0] = 0;
    for (int i = 0; i < n; i++) {
        first[i + 1] = first[i];
        for (int q = 0; q < 3; q++)
            reads[first[i + 1]++] = p->opv[3 * i + q];
    }
    fc_kplan_live(p, &b.k, first, reads, last);
    ck_assert_int_eq(last[ii], p->epos[r]);     /* read by w, inside the sum's body */
    ck_assert_int_eq(last[w], p->epos[pr]);
    ck_assert_int_eq(last[pr], p->epos[r]);
    ck_assert_int_eq(last[r], n);
    ck_assert_int_lt(p->epos[pr], p->epos[r]);
    for (int q = 0; q < n; q++)
        ck_assert_int_eq(p->epos[p->seq[q]], q);
    fc_kplan_free(p);
    b.k.no_hoist = false;
    ck_assert_int_eq(kb_run(&b), FC_OK);
}
END_TEST

/* The CPU target's table limits (fc_cpu_target: fc_kplan_pre's pre_points, pre_bytes) admit
 * roi_align ADAPTIVE's backward geometry: a sample's coordinates and weights over (box, bin,
 * sample), 512 x 14 x 5 = 35840 points, read by each of 256 channels, a chain of a dozen values
 * of 143 KB each. Precomputed, each is a table filled once before the kernel runs rather than
 * a memoised value checked and restored at every point of the loop nest. The kernel is planned,
 * not run. */
START_TEST(test_plan_pre_roi_domain)
{
    static float x[256];
    int64_t e[4] = {512, 14, 5, 256}, sx[4] = {0, 0, 0, 1}, ost[4] = {14 * 5 * 256, 5 * 256, 256, 1};
    KB b;
    kb_init(&b, 4, e);
    int i0 = kb_iota(&b, 0), i1 = kb_iota(&b, 1), i2 = kb_iota(&b, 2);
    int s01 = kb_op(&b, FC_OP_ADD, FC_INT64, i0, i1, -1);
    int s = kb_op(&b, FC_OP_ADD, FC_INT64, s01, i2, -1);
    int v = kb_op(&b, FC_OP_CAST, FC_FLOAT32, s, -1, -1);
    int h = kb_f(&b, FC_FLOAT32, 0.5);
    int chain[12];
    for (int j = 0; j < 12; j++)
        v = chain[j] = kb_op(&b, j % 2 ? FC_OP_ADD : FC_OP_MUL, FC_FLOAT32, v, h, -1);
    int xv = kb_load(&b, FC_FLOAT32, x, 0, sx);
    int r = kb_op(&b, FC_OP_MUL, FC_FLOAT32, v, xv, -1);
    kb_store(&b, r, NULL, FC_FLOAT32, 0, ost);
    FcPlan *p = NULL;
    ck_assert_int_eq(fc_kplan_new(&b.k, "cpu", &p, &err), FC_OK);
    bool pre[KB_CODE], kept[KB_CODE];
    size_t off[KB_CODE];
    size_t bytes = fc_kplan_pre(p, &b.k, be->target, p->opv, NULL, pre, off, kept);
    for (int j = 0; j < 12; j++)
        ck_assert_msg(pre[chain[j]], "value %d of the chain over (box, bin, sample) is not precomputed", j);
    ck_assert(pre[s] && !pre[r]);
    ck_assert_uint_ge(bytes, 12 * 35840 * sizeof(float));
    fc_kplan_free(p);
}
END_TEST

/* The registry opens each backend by device type; each says what it is (its target) and whether
 * it computes an instruction, with the message it would refuse a kernel holding it with (the
 * CUDA generator's: test_cuda.c's cuda_supports). */
START_TEST(test_registry_supports)
{
    FcBackend *cpu = NULL, *fake = NULL;
    FcError e;
    ck_assert_int_eq(fc_backend_open(FC_DEV_CPU, 0, 2, false, &cpu, &e), FC_OK);
    ck_assert_int_eq(fc_backend_open(FC_DEV_CUDA, 0, 2, true, &fake, &e), FC_OK);
    ck_assert_int_eq(fake->device, FC_DEV_CUDA);
    ck_assert_str_eq(cpu->target->name, "cpu");
    ck_assert_str_eq(fake->target->name, "cpu");   /* the CPU executor stands in */
    ck_assert_int_eq(cpu->target->chunk, FC_CHUNK);
    FcInstr in = {.op = FC_OP_AND, .dtype = FC_FLOAT32, .src_dtype = FC_FLOAT32, .a = 0, .b = 1, .c = -1};
    ck_assert_int_eq(cpu->supports(cpu, &in, FC_FLOAT32, &e), FC_ERR_TYPE);
    ck_assert_str_eq(e.msg, "cpu kernel: bitwise_and is not supported for float32");
    in.dtype = FC_BOOL;
    in.src_dtype = FC_BOOL;
    ck_assert_int_eq(cpu->supports(cpu, &in, FC_BOOL, &e), FC_OK);
    in = (FcInstr){.op = FC_OP_SUM, .dtype = FC_FLOAT64, .src_dtype = FC_FLOAT32, .a = 0, .b = -1, .c = -1};
    ck_assert_int_eq(cpu->supports(cpu, &in, FC_FLOAT32, &e), FC_OK);
    fake->destroy(fake);
    cpu->destroy(cpu);
}
END_TEST

/* ---- indices that hold along the chunk loop ----
 * Over an FR x FC loop nest whose inner loop is the chunk loop, an index that holds along each
 * row (x[idx], z[idx] = x) makes a flat gather or scatter: checked once per chunk, then a whole
 * run read or written. Each kernel is also run with its indices plus iota * 0 (kb_vary): the
 * same values, which the executor cannot tell hold, so the same kernel goes element by element;
 * the two must give the same bits and the same errors. */

enum { FR = 70, FC = 600, FM0 = 5, FM1 = 3 };   /* rows, row length (chunks 256, 256, 88), table */

/* r + iota(inner loop) * 0. */
static int kb_vary(KB *b, int r)
{
    int zero = kb_op(b, FC_OP_MUL, FC_INT64, kb_iota(b, 1), kb_i(b, FC_INT64, 0), -1);
    return kb_op(b, FC_OP_ADD, FC_INT64, r, zero, -1);
}

/* ix[i] along row i; varied when vary. */
static int kb_row_index(KB *b, const int64_t *ix, bool vary)
{
    static const int64_t st[2] = {1, 0};
    int r = kb_load(b, FC_INT64, ix, 0, st);
    return vary ? kb_vary(b, r) : r;
}

/* Element (a, b, j) of an FM0 x FM1 x FC table at strides (sa, sb, sj) from offset off. */
typedef struct FlatLayout {
    int64_t sa, sb, sj, off;
} FlatLayout;

static const FlatLayout flat_layouts[] = {
    {FM1 * FC, FC, 1, 0},                   /* contiguous: read in place */
    {FM1 * FC, FC, -1, FC - 1},             /* reversed */
    {FM1 * 3 * FC, 3 * FC, 3, 0},           /* a near stride: through a table of offsets at 32 bits */
    {FM1, 1, FM0 * FM1, 0},                 /* a far stride (j outermost): a stepping pointer */
    {FM1, 1, 0, 0},                         /* one value per (a, b), broadcast along the row */
};

/* out[i][j] = table[i0[i]][i % FM1][j]: the first index loaded (wrapping), the second an op
 * over an iota of the rows; every layout, flat and element by element, at both widths. */
START_TEST(test_flat_gather)
{
    const FlatLayout *lay = &flat_layouts[_i];
    int64_t e[2] = {FR, FC}, ost[2] = {FC, 1}, tst[2] = {0, lay->sj}, i0[FR];
    size_t nt = (size_t)FM0 * FM1 * 3 * FC;
    float *table = malloc(nt * 4), *o[4];
    for (size_t k = 0; k < nt; k++)
        table[k] = (float)k;
    for (int i = 0; i < FR; i++)
        i0[i] = i * 7 % (2 * FM0) - FM0;
    for (int run = 0; run < 4; run++) {
        bool vary = run & 1;
        o[run] = malloc((size_t)FR * FC * 4);
        KB b;
        kb_init(&b, 2, e);
        int r0 = kb_row_index(&b, i0, vary);
        int r1 = kb_op(&b, FC_OP_MOD, FC_INT64, kb_iota(&b, 0), kb_i(&b, FC_INT64, FM1), -1);
        if (vary)
            r1 = kb_vary(&b, r1);
        int g = kb_load(&b, FC_FLOAT32, table, lay->off, tst);
        kb_gather(&b, g, r0, lay->sa, FM0)->wrap = true;
        kb_gather(&b, g, r1, lay->sb, FM1);
        kb_store(&b, g, o[run], FC_FLOAT32, 0, ost);
        b.k.index32 = run >= 2;
        ck_assert_int_eq(kb_run(&b), FC_OK);
    }
    for (int i = 0; i < FR; i++)
        for (int j = 0; j < FC; j++) {
            int64_t a = (i0[i] + FM0) % FM0, at = lay->off + a * lay->sa + i % FM1 * lay->sb + j * lay->sj;
            ck_assert_same_f32(o[0][i * FC + j], table[at]);
        }
    for (int run = 1; run < 4; run++)
        ck_assert_mem_eq(o[run], o[0], (size_t)FR * FC * 4);
    for (int run = 0; run < 4; run++)
        free(o[run]);
    free(table);
}
END_TEST

/* One bad index (row 40 of a 42000-element store that runs on several threads): the flat
 * gather reports it as element by element does, at both widths, before reading (the extremes
 * would read far outside the table). */
START_TEST(test_flat_gather_out_of_bounds)
{
    const WrapCase *c = &wrap_cases[_i];
    int64_t e[2] = {FR, FC}, ost[2] = {FC, 1}, tst[2] = {0, 1}, ix[FR];
    float *table = calloc(5 * FC, 4), *o = malloc((size_t)FR * FC * 4);
    wrap_indices(c, ix, FR, 40);
    for (int run = 0; run < 4; run++) {
        KB b;
        kb_init(&b, 2, e);
        int r = kb_row_index(&b, ix, run & 1);
        int g = kb_load(&b, FC_FLOAT32, table, 0, tst);
        FcGather *ga = kb_gather(&b, g, r, FC, 5);
        ga->wrap = c->wrap;
        ga->dim = 3;
        kb_store(&b, g, o, FC_FLOAT32, 0, ost);
        b.k.index32 = run >= 2;
        ck_assert_int_eq(kb_run(&b), FC_ERR_INDEX);
        ck_assert_str_eq(err.msg, c->msg);
    }
    free(table);
    free(o);
}
END_TEST

/* x[idx] reduced, with small integers in float32 (every order sums them exactly): in full, as
 * fcdim schedules (x[idx]).sum() (idx's loop innermost, so that the gather varies along the
 * innermost loop and the executor takes the row elements as its chunk loop instead), by
 * columns (vertical) and by rows (horizontal); at both widths, on 1 and 4 threads. */
START_TEST(test_flat_gather_reduce)
{
    enum { R = 300, C = 600, M = 50 };
    float *x = malloc((size_t)M * C * 4), col[C], row[R], full;
    int64_t idx[R], wcol[C] = {0}, wrow[R] = {0}, wfull = 0;
    for (int k = 0; k < M * C; k++)
        x[k] = (float)(k % 17 - 8);
    for (int i = 0; i < R; i++) {
        idx[i] = i * 13 % M - (i % 3 == 0 ? M : 0);
        for (int j = 0; j < C; j++) {
            int64_t v = (((idx[i] + M) % M) * C + j) % 17 - 8;
            wcol[j] += v;
            wrow[i] += v;
            wfull += v;
        }
    }
    bool both[2] = {true, true}, by_col[2] = {true, false}, by_row[2] = {false, true};
    int64_t ext_full[2] = {C, R}, ext[2] = {R, C}, zero2[2] = {0, 0}, ocol[2] = {0, 1}, orow[2] = {1, 0};
    int64_t ist_full[2] = {0, 1}, xst_full[2] = {1, 0}, ist[2] = {1, 0}, xst[2] = {0, 1};
    for (int run = 0; run < 4; run++) {
        int threads = run & 1 ? 4 : 1;
        KB b;
        kb_init(&b, 2, ext_full);
        int r = kb_load(&b, FC_INT64, idx, 0, ist_full);
        int g = kb_load(&b, FC_FLOAT32, x, 0, xst_full);
        kb_gather(&b, g, r, C, M)->wrap = true;
        kb_reduce(&b, FC_OP_SUM, g, &full, FC_FLOAT32, both, zero2);
        b.k.index32 = run >= 2;
        ck_assert_int_eq(run_with(&b, threads), FC_OK);
        ck_assert_same_f32(full, (float)wfull);
        for (int shape = 0; shape < 2; shape++) {
            kb_init(&b, 2, ext);
            r = kb_load(&b, FC_INT64, idx, 0, ist);
            g = kb_load(&b, FC_FLOAT32, x, 0, xst);
            kb_gather(&b, g, r, C, M)->wrap = true;
            kb_reduce(&b, FC_OP_SUM, g, shape ? row : col, FC_FLOAT32, shape ? by_row : by_col, shape ? orow : ocol);
            b.k.index32 = run >= 2;
            ck_assert_int_eq(run_with(&b, threads), FC_OK);
        }
        for (int j = 0; j < C; j++)
            ck_assert_same_f32(col[j], (float)wcol[j]);
        for (int i = 0; i < R; i++)
            ck_assert_same_f32(row[i], (float)wrow[i]);
    }
    free(x);
}
END_TEST

/* The output along the chunk loop of a scattered store: a step of ostr, scattered rows span
 * elements apart, from offset off. */
typedef struct ScatterLayout {
    int64_t ostr, span, off;
} ScatterLayout;

static const ScatterLayout scatter_layouts[] = {
    {1, FC, 0},                 /* a run: one copy, or a vector add */
    {2, 2 * FC, 1},             /* strided */
    {-1, FC, FC - 1},           /* reversed */
    {0, 1, 0},                  /* a whole row onto one element: the last stays, or all add up */
};

enum { SM = 20 };               /* rows of a scattered output: FR rows land there, duplicated */

static void put_int(void *p, FcDType dt, int64_t k, int64_t v)
{
    if (dt == FC_INT64)
        ((int64_t *)p)[k] = v;
    else
        ((int32_t *)p)[k] = (int32_t)v;
}

/* Rows of x (int32) stored onto SM rows with duplicates (wrapping indices): every layout, with
 * values read in place (runs held back and copied as one), computed (x * 3) and converted
 * (stored as int64); flat and element by element, at both widths, against the sequential loop:
 * of duplicates the last row stays. */
START_TEST(test_flat_scatter)
{
    const ScatterLayout *lay = &scatter_layouts[_i / 3];
    int kind = _i % 3;
    FcDType odt = kind == 2 ? FC_INT64 : FC_INT32;
    size_t es = fc_dtype_size(odt), nout = (size_t)SM * lay->span + 1;
    int64_t e[2] = {FR, FC}, xst[2] = {FC, 1}, ost[2] = {0, lay->ostr}, ix[FR];
    int32_t *x = malloc((size_t)FR * FC * 4);
    char *want = malloc(nout * es), *o = malloc(nout * es);
    for (int k = 0; k < FR * FC; k++)
        x[k] = k * 7 + 1;
    for (int i = 0; i < FR; i++)
        ix[i] = i * 7 % SM - (i % 2 ? SM : 0);
    memset(want, 0x5a, nout * es);
    for (int i = 0; i < FR; i++)
        for (int j = 0; j < FC; j++)
            put_int(want, odt, lay->off + (ix[i] + SM) % SM * lay->span + lay->ostr * j,
                    (int64_t)x[i * FC + j] * (kind == 1 ? 3 : 1));
    for (int run = 0; run < 4; run++) {
        memset(o, 0x5a, nout * es);
        KB b;
        kb_init(&b, 2, e);
        int v = kb_load(&b, FC_INT32, x, 0, xst);
        if (kind == 1)
            v = kb_op(&b, FC_OP_MUL, FC_INT32, v, kb_i(&b, FC_INT32, 3), -1);
        kb_scatter(&b, kb_row_index(&b, ix, run & 1), lay->span, SM)->wrap = true;
        kb_store(&b, v, o, odt, lay->off, ost);
        b.k.index32 = run >= 2;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        ck_assert_mem_eq(o, want, nout * es);
    }
    free(x);
    free(want);
    free(o);
}
END_TEST

/* z[idx] = z: rows moved within the storage the store reads (a permutation with two rows onto
 * themselves, many rows read after they were written over). The flat path holds nothing back
 * and gives what the element-by-element path and a sequential loop give. */
START_TEST(test_flat_scatter_reads_output)
{
    int64_t e[2] = {FR, FC}, xst[2] = {FC, 1}, ost[2] = {0, 1}, ix[FR];
    size_t n = (size_t)FR * FC;
    int32_t *z = malloc(n * 4), *want = malloc(n * 4);
    for (int i = 0; i < FR; i++)
        ix[i] = i * 3 % FR;
    for (size_t k = 0; k < n; k++)
        want[k] = (int32_t)k;
    for (int i = 0; i < FR; i++)
        for (int j = 0; j < FC; j++)
            want[ix[i] * FC + j] = want[i * FC + j];
    for (int run = 0; run < 4; run++) {
        for (size_t k = 0; k < n; k++)
            z[k] = (int32_t)k;
        KB b;
        kb_init(&b, 2, e);
        int v = kb_load(&b, FC_INT32, z, 0, xst);
        kb_scatter(&b, kb_row_index(&b, ix, run & 1), FC, FR);
        kb_store(&b, v, z, FC_INT32, 0, ost);
        b.k.index32 = run >= 2;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        ck_assert_mem_eq(z, want, n * 4);
    }
    free(z);
    free(want);
}
END_TEST

/* Rows of float32 values added onto SM rows with duplicates, the values chosen so that the sums
 * depend on their order (order_val): flat chunks, added as a vector (a unit step), by steps or
 * all onto one element, give the bits of the sequential loop, as element by element does, at
 * both widths. */
START_TEST(test_flat_scatter_accumulate)
{
    const ScatterLayout *lay = &scatter_layouts[_i];
    size_t nout = (size_t)SM * lay->span + 1;
    int64_t e[2] = {FR, FC}, xst[2] = {FC, 1}, ost[2] = {0, lay->ostr}, ix[FR];
    float *x = malloc((size_t)FR * FC * 4), *want = malloc(nout * 4), *o = malloc(nout * 4);
    uint64_t s = 13;
    for (size_t k = 0; k < nout; k++)
        want[k] = (float)k;
    for (int i = 0; i < FR; i++) {
        ix[i] = i * 7 % SM - (i % 2 ? SM : 0);
        for (int j = 0; j < FC; j++) {
            float *slot = &want[lay->off + (ix[i] + SM) % SM * lay->span + lay->ostr * j];
            x[i * FC + j] = order_val(*slot, &s);
            *slot += x[i * FC + j];
        }
    }
    for (int run = 0; run < 4; run++) {
        for (size_t k = 0; k < nout; k++)
            o[k] = (float)k;
        KB b;
        kb_init(&b, 2, e);
        int v = kb_load(&b, FC_FLOAT32, x, 0, xst);
        kb_scatter(&b, kb_row_index(&b, ix, run & 1), lay->span, SM)->wrap = true;
        kb_store(&b, v, o, FC_FLOAT32, lay->off, ost);
        b.k.accumulate = true;
        b.k.index32 = run >= 2;
        ck_assert_int_eq(kb_run(&b), FC_OK);
        for (size_t k = 0; k < nout; k++)
            ck_assert_same_f32(o[k], want[k]);
    }
    free(x);
    free(want);
    free(o);
}
END_TEST

/* Every output dtype of a flat accumulating scatter (int64 values converted first: integers
 * wrap, bools or), with a unit step and with every element of a row onto one: the bits of the
 * element-by-element path. */
START_TEST(test_flat_accumulate_dtypes)
{
    static const FcDType dts[] = {FC_BOOL, FC_INT32, FC_INT64, FC_FLOAT32, FC_FLOAT64};
    int64_t e[2] = {FR, FC}, xst[2] = {FC, 1}, ix[FR];
    int64_t *x = malloc((size_t)FR * FC * 8);
    uint64_t s = 21;
    for (int k = 0; k < FR * FC; k++)
        x[k] = (int64_t)rng_next(&s) >> (k % 3 == 0 ? 0 : 40);
    for (int i = 0; i < FR; i++)
        ix[i] = i * 7 % SM;
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
        for (int step = 0; step < 2; step++) {
            size_t es = fc_dtype_size(dts[d]), span = step ? FC : 1, nout = SM * span;
            int64_t ost[2] = {0, step};
            char *o[2];
            for (int vary = 0; vary < 2; vary++) {
                o[vary] = calloc(nout, es);
                KB b;
                kb_init(&b, 2, e);
                int v = kb_load(&b, FC_INT64, x, 0, xst);
                kb_scatter(&b, kb_row_index(&b, ix, vary), (int64_t)span, SM);
                kb_store(&b, v, o[vary], dts[d], 0, ost);
                b.k.accumulate = true;
                ck_assert_int_eq(kb_run(&b), FC_OK);
            }
            ck_assert_mem_eq(o[0], o[1], nout * es);
            free(o[0]);
            free(o[1]);
        }
    free(x);
}
END_TEST

/* A bad index in row 40 of a flat scattered store, stored (runs held back) or accumulated, at
 * both widths: the message names it, rows 0 to 39 are written and nothing of row 40 or after. */
START_TEST(test_flat_scatter_out_of_bounds)
{
    const WrapCase *c = &wrap_cases[_i];
    int64_t e[2] = {FR, FC}, xst[2] = {FC, 1}, ost[2] = {0, 1}, ix[FR];
    int32_t *x = malloc((size_t)FR * FC * 4), o[5 * FC], want[2][5 * FC];
    wrap_indices(c, ix, FR, 40);
    for (int k = 0; k < FR * FC; k++)
        x[k] = k + 1;
    for (int acc = 0; acc < 2; acc++) {
        for (int k = 0; k < 5 * FC; k++)
            want[acc][k] = -1;
        for (int i = 0; i < 40; i++)
            for (int j = 0; j < FC; j++) {
                int32_t *slot = &want[acc][(ix[i] + 5) % 5 * FC + j];
                *slot = acc ? *slot + x[i * FC + j] : x[i * FC + j];
            }
    }
    for (int run = 0; run < 4; run++) {
        int acc = run & 1;
        for (int k = 0; k < 5 * FC; k++)
            o[k] = -1;
        KB b;
        kb_init(&b, 2, e);
        int v = kb_load(&b, FC_INT32, x, 0, xst);
        FcGather *sc = kb_scatter(&b, kb_row_index(&b, ix, false), FC, 5);
        sc->wrap = c->wrap;
        sc->dim = 3;
        kb_store(&b, v, o, FC_INT32, 0, ost);
        b.k.accumulate = acc;
        b.k.index32 = run >= 2;
        ck_assert_int_eq(kb_run(&b), FC_ERR_INDEX);
        ck_assert_str_eq(err.msg, c->msg);
        ck_assert_mem_eq(o, want[acc], sizeof o);
    }
    free(x);
}
END_TEST

/* ---- matmul ---- */

typedef struct MmCase {
    int64_t m, n, k;
    bool ta, tb;                /* A / B stored transposed */
    int nbatch;
    int64_t batch[2];
    bool bcast_a;               /* A's first batch dim broadcast (stride 0) */
} MmCase;

static const MmCase mm_cases[] = {
    {1, 1, 1, false, false, 0, {0}, false},
    {5, 7, 3, false, false, 0, {0}, false},
    {5, 7, 3, true, false, 0, {0}, false},
    {5, 7, 3, false, true, 0, {0}, false},
    {64, 64, 64, false, false, 0, {0}, false},
    {67, 130, 300, true, true, 0, {0}, false},
    {3, 5, 0, false, false, 0, {0}, false},
    {300, 1, 257, false, false, 0, {0}, false},
    {1, 300, 1100, false, true, 0, {0}, false},
    {9, 10, 11, false, false, 2, {2, 3}, false},
    {9, 10, 11, true, false, 2, {2, 3}, true},
    {0, 4, 4, false, false, 0, {0}, false},
    /* several row blocks share one packed B: two column blocks (the last not a multiple of the
     * micro-kernel's width), several K blocks, two batch items */
    {80, 270, 300, false, true, 2, {2, 1}, false},
};

static const FcDType mm_dtypes[] = {FC_FLOAT32, FC_FLOAT64, FC_INT32, FC_INT64};

static double mm_get(const void *p, FcDType dt, int64_t i)
{
    switch (dt) {
    case FC_FLOAT32: return ((const float *)p)[i];
    case FC_FLOAT64: return ((const double *)p)[i];
    case FC_INT32: return ((const int32_t *)p)[i];
    default: return (double)((const int64_t *)p)[i];
    }
}

static void mm_set(void *p, FcDType dt, int64_t i, double v)
{
    switch (dt) {
    case FC_FLOAT32: ((float *)p)[i] = (float)v; break;
    case FC_FLOAT64: ((double *)p)[i] = v; break;
    case FC_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    default: ((int64_t *)p)[i] = (int64_t)v; break;
    }
}

/* Small integer inputs: every product and sum is exact in every dtype, so the blocked result
 * must equal the naive one exactly. */
START_TEST(test_matmul_reference)
{
    const MmCase *c = &mm_cases[_i / 4];
    FcDType dt = mm_dtypes[_i % 4];
    size_t es = fc_dtype_size(dt);
    int64_t nb = 1;
    for (int d = 0; d < c->nbatch; d++)
        nb *= c->batch[d];
    int64_t asz = c->m * c->k, bsz = c->k * c->n, csz = c->m * c->n;
    char *a = malloc((size_t)(nb * asz + 1) * es), *b = malloc((size_t)(nb * bsz + 1) * es);
    char *out = malloc((size_t)(nb * csz + 1) * es);
    uint64_t s = 7;
    for (int64_t i = 0; i < nb * asz; i++)
        mm_set(a, dt, i, (double)(int)(rng_next(&s) % 17) - 8);
    for (int64_t i = 0; i < nb * bsz; i++)
        mm_set(b, dt, i, (double)(int)(rng_next(&s) % 17) - 8);
    for (int64_t i = 0; i < nb * csz; i++)
        mm_set(out, dt, i, 12345);
    FcMatmul m = {.dtype = dt, .nbatch = c->nbatch, .m = c->m, .n = c->n, .k = c->k, .nthreads = 4};
    m.a = a;
    m.b = b;
    m.c = out;
    m.a_rs = c->ta ? 1 : c->k;
    m.a_cs = c->ta ? c->m : 1;
    m.b_rs = c->tb ? 1 : c->n;
    m.b_cs = c->tb ? c->k : 1;
    m.c_rs = c->n;
    m.c_cs = 1;
    for (int d = c->nbatch - 1, sa = 1, sb = 1, sc = 1; d >= 0; d--) {
        m.batch[d] = c->batch[d];
        m.a_bstride[d] = c->bcast_a && d == 0 ? 0 : sa * asz;
        m.b_bstride[d] = sb * bsz;
        m.c_bstride[d] = sc * csz;
        sa *= (int)c->batch[d];
        sb *= (int)c->batch[d];
        sc *= (int)c->batch[d];
    }
    ck_assert_int_eq(be->matmul(be, &m, &err), FC_OK);
    for (int64_t bi = 0; bi < nb; bi++) {
        int64_t ao = 0, bo = 0, co = 0, rest = bi;
        for (int d = c->nbatch - 1; d >= 0; d--) {
            int64_t i = rest % c->batch[d];
            rest /= c->batch[d];
            ao += i * m.a_bstride[d];
            bo += i * m.b_bstride[d];
            co += i * m.c_bstride[d];
        }
        for (int64_t i = 0; i < c->m; i++)
            for (int64_t j = 0; j < c->n; j++) {
                double want = 0;
                for (int64_t p = 0; p < c->k; p++)
                    want += mm_get(a, dt, ao + i * m.a_rs + p * m.a_cs) * mm_get(b, dt, bo + p * m.b_rs + j * m.b_cs);
                double got = mm_get(out, dt, co + i * c->n + j);
                ck_assert_msg(got == want, "case %d %s C[%lld][%lld][%lld] = %g, expected %g", _i / 4,
                              fc_dtype_name(dt), (long long)bi, (long long)i, (long long)j, got, want);
            }
    }
    free(a);
    free(b);
    free(out);
}
END_TEST

/* A strided, offset C (every other column of a wider buffer) and wrapping int32 products. */
START_TEST(test_matmul_strided_c_and_wrap)
{
    int32_t a[2 * 2] = {65536, 1, 2, 3}, b[2 * 2] = {65536, 0, 0, 1}, c[2 * 5];
    for (int i = 0; i < 10; i++)
        c[i] = -9;
    FcMatmul m = {.dtype = FC_INT32, .m = 2, .n = 2, .k = 2, .nthreads = 1, .a = a, .b = b, .c = c};
    m.a_rs = 2;
    m.a_cs = 1;
    m.b_rs = 2;
    m.b_cs = 1;
    m.c_offset = 1;
    m.c_rs = 5;
    m.c_cs = 2;
    ck_assert_int_eq(be->matmul(be, &m, &err), FC_OK);
    ck_assert_mem_eq(c, ((int32_t[]){-9, 0, -9, 1, -9, -9, 131072, -9, 3, -9}), sizeof c);
}
END_TEST

/* Float products are one chain per element in k's order from 0, each product rounded and then
 * added (PyTorch's cpublas::gemm loops), across the blocks of K (1024 bytes of K: 256 float32,
 * 128 float64): the exact bits, for inputs whose products round, whichever micro-kernel and tile
 * runs (the second shape: row panels with a partial last one, two column blocks, the last of 3
 * (float32) or 6 (float64) column panels with a partial one, several K blocks). */
START_TEST(test_matmul_chain_bits)
{
    static const int shapes[][3] = {{7, 19, 300}, {29, 300, 600}};
    const int M = shapes[_i / 2][0], N = shapes[_i / 2][1], K = shapes[_i / 2][2];
    bool f64 = _i % 2 == 1;
    double *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b);
    void *ab = malloc(M * K * 8), *bb = malloc(K * N * 8), *out = malloc(M * N * 8);
    uint64_t s = 11;
    for (int i = 0; i < M * K; i++) {
        a[i] = f64 ? (double)rng_float(&s) * 1.37 + (double)rng_float(&s) * 1e-9 : rng_float(&s);
        if (f64) ((double *)ab)[i] = a[i]; else ((float *)ab)[i] = (float)a[i];
    }
    for (int i = 0; i < K * N; i++) {
        b[i] = f64 ? (double)rng_float(&s) * 0.71 + (double)rng_float(&s) * 1e-9 : rng_float(&s);
        if (f64) ((double *)bb)[i] = b[i]; else ((float *)bb)[i] = (float)b[i];
    }
    FcMatmul m = {.dtype = f64 ? FC_FLOAT64 : FC_FLOAT32, .m = M, .n = N, .k = K, .nthreads = 2};
    m.a = ab;
    m.b = bb;
    m.c = out;
    m.a_rs = K, m.a_cs = 1, m.b_rs = N, m.b_cs = 1, m.c_rs = N, m.c_cs = 1;
    ck_assert_int_eq(be->matmul(be, &m, &err), FC_OK);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            if (f64) {
                double total = 0;
                for (int64_t p = 0; p < K; p++) {
                    const double x = a[i * K + p] * b[p * N + j];
                    total = total + x;
                }
                ck_assert_msg(((double *)out)[i * N + j] == total, "float64 C[%d][%d] = %.17g, expected %.17g",
                              i, j, ((double *)out)[i * N + j], total);
            } else {
                float total = 0;
                for (int64_t p = 0; p < K; p++) {
                    const float x = (float)a[i * K + p] * (float)b[p * N + j];
                    total = total + x;
                }
                ck_assert_msg(((float *)out)[i * N + j] == total, "float32 C[%d][%d] = %.9g, expected %.9g",
                              i, j, (double)((float *)out)[i * N + j], (double)total);
            }
        }
    free(a);
    free(b);
    free(ab);
    free(bb);
    free(out);
}
END_TEST

START_TEST(test_matmul_threads_bitwise)
{
    enum { M = 130, N = 70, K = 500 };
    float *a = malloc(M * K * 4), *b = malloc(K * N * 4), *c1 = malloc(M * N * 4), *c4 = malloc(M * N * 4);
    uint64_t s = 3;
    for (int i = 0; i < M * K; i++)
        a[i] = rng_float(&s);
    for (int i = 0; i < K * N; i++)
        b[i] = rng_float(&s);
    FcMatmul m = {.dtype = FC_FLOAT32, .m = M, .n = N, .k = K, .a = a, .b = b, .a_rs = K, .a_cs = 1, .b_rs = N,
                  .b_cs = 1, .c_rs = N, .c_cs = 1};
    m.c = c1;
    m.nthreads = 1;
    ck_assert_int_eq(be->matmul(be, &m, &err), FC_OK);
    m.c = c4;
    m.nthreads = 4;
    ck_assert_int_eq(be->matmul(be, &m, &err), FC_OK);
    ck_assert_mem_eq(c1, c4, M * N * 4);
    double want = 0;
    for (int p = 0; p < K; p++)
        want += (double)a[5 * K + p] * b[p * N + 9];
    ck_assert_msg(fabs(c1[5 * N + 9] - want) < 1e-3, "%g vs %g", c1[5 * N + 9], want);
    free(a);
    free(b);
    free(c1);
    free(c4);
}
END_TEST

/* Operands read through index arithmetic (FcMatmul.a_ix / b_ix, implicit GEMM): each element at
 * offset + batch stride + the sub-indices of its row and column times their strides, 0 where a
 * bound fails. The product has the bits of the plain product of the operands materialised, at
 * any thread count (B gathered and split by columns: N spans two column blocks). The second and
 * third runs pack B's rows by ranges of valid columns over contiguous runs of its columns. */

/* Element (bi, i, j) of operand o (rows x cols) of src; batch stride bst. */
static float gathered_at(const float *src, const FcMmOperand *o, int64_t off, int64_t bst, int64_t bi, int64_t i,
                         int64_t j)
{
    int64_t ri[FC_MAX_DIMS], ci[FC_MAX_DIMS];
    for (int d = o->nrdim - 1; d >= 0; d--) {
        ri[d] = i % o->rsize[d];
        i /= o->rsize[d];
    }
    for (int d = o->ncdim - 1; d >= 0; d--) {
        ci[d] = j % o->csize[d];
        j /= o->csize[d];
    }
    int64_t at = off + bi * bst;
    for (int d = 0; d < o->nrdim; d++)
        at += ri[d] * o->rstride[d];
    for (int d = 0; d < o->ncdim; d++)
        at += ci[d] * o->cstride[d];
    for (int q = 0; q < o->nbound; q++) {
        int64_t v = bi * o->bound[q].bcoef[0];
        for (int d = 0; d < o->nrdim; d++)
            v += ri[d] * o->bound[q].rcoef[d];
        for (int d = 0; d < o->ncdim; d++)
            v += ci[d] * o->bound[q].ccoef[d];
        if (v < o->bound[q].lo || v >= o->bound[q].hi)
            return 0.0f;
    }
    return src[at];
}

START_TEST(test_matmul_gathered)
{
    enum { NB = 2, M = 35, K = 320, N = 300, SRC = 80000 };
    /* A: rows (5, 7), columns (4, 80); B: rows (4, 80), columns (3, 100) */
    FcMmOperand ao = {.nrdim = 2, .ncdim = 2, .nbound = 2, .rsize = {5, 7}, .csize = {4, 80},
                      .rstride = {700, 3}, .cstride = {90, 1}};
    ao.bound[0] = (FcMmBound){.lo = 1, .hi = 9, .rcoef = {0, 1}, .ccoef = {2, 0}};       /* 1 <= r1 + 2 c0 < 9 */
    ao.bound[1] = (FcMmBound){.lo = 0, .hi = 7, .bcoef = {5}, .rcoef = {1, 0}};          /* 5 b + r0 < 7 */
    FcMmOperand bo = {.nrdim = 2, .ncdim = 2, .nbound = 1, .rsize = {4, 80}, .csize = {3, 100},
                      .rstride = {7, 300}, .cstride = {24000, 2}};
    bo.bound[0] = (FcMmBound){.lo = -20, .hi = 40, .rcoef = {0, 1}, .ccoef = {0, -1}};   /* -20 <= r1 - c1 < 40 */
    if (_i == 1) {
        /* B's columns contiguous along c1, and bounds that step by 3, by -2 and not at all
         * along it (the last by the batch item) */
        bo.cstride[1] = 1;
        bo.nbound = 4;
        bo.bound[1] = (FcMmBound){.lo = -100, .hi = 150, .rcoef = {0, -1}, .ccoef = {0, 3}};
        bo.bound[2] = (FcMmBound){.lo = -150, .hi = 30, .rcoef = {0, 1}, .ccoef = {5, -2}};
        bo.bound[3] = (FcMmBound){.lo = 0, .hi = 3, .bcoef = {1}, .ccoef = {1, 0}};
    } else if (_i == 2) {
        bo.cstride[1] = 1;                                                      /* and by 1 */
        bo.nbound = 2;
        bo.bound[1] = (FcMmBound){.lo = -60, .hi = 20, .rcoef = {0, -1}, .ccoef = {0, 1}};
    }
    float *asrc = malloc(SRC * 4), *bsrc = malloc(3 * SRC * 4);
    float *am = malloc(NB * M * K * 4), *bm = malloc(NB * K * N * 4);
    float *c1 = malloc(NB * M * N * 4), *c2 = malloc(NB * M * N * 4);
    uint64_t s = 29;
    for (int i = 0; i < SRC; i++)
        asrc[i] = rng_float(&s);
    for (int i = 0; i < 3 * SRC; i++)
        bsrc[i] = rng_float(&s);
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < M; i++)
            for (int p = 0; p < K; p++)
                am[(b * M + i) * K + p] = gathered_at(asrc, &ao, 11, 4000, b, i, p);
    for (int b = 0; b < NB; b++)
        for (int p = 0; p < K; p++)
            for (int j = 0; j < N; j++)
                bm[(b * K + p) * N + j] = gathered_at(bsrc, &bo, 5, 1, b, p, j);
    FcMatmul plain = {.dtype = FC_FLOAT32, .nbatch = 1, .batch = {NB}, .a_bstride = {M * K}, .b_bstride = {K * N},
                      .c_bstride = {M * N}, .m = M, .n = N, .k = K, .a = am, .a_rs = K, .a_cs = 1, .b = bm,
                      .b_rs = N, .b_cs = 1, .c = c1, .c_rs = N, .c_cs = 1, .nthreads = 1};
    ck_assert_int_eq(be->matmul(be, &plain, &err), FC_OK);
    FcMatmul g = {.dtype = FC_FLOAT32, .nbatch = 1, .batch = {NB}, .a_bstride = {4000}, .b_bstride = {1},
                  .c_bstride = {M * N}, .m = M, .n = N, .k = K, .a = asrc, .a_offset = 11, .b = bsrc, .b_offset = 5,
                  .c = c2, .c_rs = N, .c_cs = 1, .a_ix = &ao, .b_ix = &bo};
    int nonzero = 0;
    for (int i = 0; i < NB * M * K; i++)
        nonzero += am[i] != 0;
    ck_assert_msg(nonzero > NB * M * K / 4 && nonzero < NB * M * K, "the bounds mask some of A, not all");
    nonzero = 0;
    for (int i = 0; i < NB * K * N; i++)
        nonzero += bm[i] != 0;
    ck_assert_msg(nonzero > NB * K * N / 8 && nonzero < NB * K * N, "the bounds mask some of B, not all");
    for (int th = 1; th <= 3; th += 2) {
        g.nthreads = th;
        memset(c2, 0xff, NB * M * N * 4);
        ck_assert_int_eq(be->matmul(be, &g, &err), FC_OK);
        ck_assert_msg(memcmp(c1, c2, NB * M * N * 4) == 0, "%d threads: the gathered product's bits differ", th);
    }
    free(asrc);
    free(bsrc);
    free(am);
    free(bm);
    free(c1);
    free(c2);
}
END_TEST

/* C[i][j] of a float32 product as the packed GEMM sums it from A's row i (a, acs apart) and B's
 * column j (b, brs apart): one chain in k's order, each product rounded and then added
 * (test_matmul_chain_bits). */
static float chain_f32(const float *a, int64_t acs, const float *b, int64_t brs, int64_t k)
{
    float total = 0;
    for (int64_t p = 0; p < k; p++) {
        const float x = a[p * acs] * b[p * brs];
        total = total + x;
    }
    return total;
}

/* An operand the same for every batch item (batch strides 0 on the dims of more than one item,
 * as a convolution's weights; a dim of one item may have any stride) is packed once for all
 * items: A (_i 0: a convolution in the contiguous layout), B (_i 1: channels_last), B gathered
 * with no batch coefficient (_i 2). The bits are the fused multiply-add chains', at 1 and 3
 * threads. */
START_TEST(test_matmul_shared_operands)
{
    enum { M = 80, N = 40, K = 300, NB = 6 };
    float *a = malloc(NB * M * K * 4), *b = malloc(NB * K * N * 4), *c = malloc(NB * M * N * 4);
    uint64_t s = 41;
    for (int i = 0; i < NB * M * K; i++)
        a[i] = rng_float(&s);
    for (int i = 0; i < NB * K * N; i++)
        b[i] = rng_float(&s);
    FcMatmul m = {.dtype = FC_FLOAT32, .nbatch = 3, .batch = {2, 1, 3}, .m = M, .n = N, .k = K, .a = a,
                  .a_rs = K, .a_cs = 1, .b = b, .b_rs = N, .b_cs = 1, .c = c, .c_rs = N, .c_cs = 1,
                  .c_bstride = {3 * M * N, 5, M * N}};
    int64_t ast[3] = {3 * M * K, 7, M * K}, bst[3] = {3 * K * N, 9, K * N};
    FcMmOperand bo = {.nrdim = 1, .ncdim = 1, .nbound = 1, .rsize = {K}, .csize = {N}, .rstride = {N},
                      .cstride = {1}};
    bo.bound[0] = (FcMmBound){.lo = 10, .hi = 290, .bcoef = {0, 4, 0}, .rcoef = {1}, .ccoef = {1}};
    for (int d = 0; d < 3; d++) {
        m.a_bstride[d] = _i == 0 ? (d == 1 ? 7 : 0) : ast[d];
        m.b_bstride[d] = _i != 0 ? (d == 1 ? 9 : 0) : bst[d];
    }
    if (_i == 2)
        m.b_ix = &bo;
    for (int th = 1; th <= 3; th += 2) {
        m.nthreads = th;
        memset(c, 0xff, NB * M * N * 4);
        ck_assert_int_eq(be->matmul(be, &m, &err), FC_OK);
        for (int bi = 0; bi < NB; bi++)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    const float *ap = a + (bi / 3) * m.a_bstride[0] + (bi % 3) * m.a_bstride[2] + i * K;
                    const float *bp = b + (bi / 3) * m.b_bstride[0] + (bi % 3) * m.b_bstride[2] + j;
                    float want;
                    if (_i == 2) {      /* B[p][j] = b[p * N + j] where 10 <= p + j < 290 */
                        want = 0;
                        for (int64_t p = 0; p < K; p++) {
                            const float x = ap[p] * (p + j >= 10 && p + j < 290 ? bp[p * N] : 0.0f);
                            want = want + x;
                        }
                    } else
                        want = chain_f32(ap, 1, bp, N, K);
                    float got = c[bi * M * N + i * N + j];
                    ck_assert_msg(got == want, "case %d, %d threads: C[%d][%d][%d] = %.9g, expected %.9g", _i, th,
                                  bi, i, j, (double)got, (double)want);
                }
    }
    free(a);
    free(b);
    free(c);
}
END_TEST

/* A gathered B with more rows than a few row blocks is packed for a few batch items at a time,
 * not whole (it would be the im2col matrix, 9.8 MB here): the product runs under a memory limit
 * of 8 MB, with the bits of the product of the materialised operand. */
START_TEST(test_matmul_gathered_bounded)
{
    enum { NB = 300, M = 300, K = 256, N = 30, SRC = NB + K + N };
    /* B[b][p][j] = src[b + p + j] where 5 <= p + j < 270: a 1-D convolution's patch */
    FcMmOperand bo = {.nrdim = 1, .ncdim = 1, .nbound = 1, .rsize = {K}, .csize = {N}, .rstride = {1},
                      .cstride = {1}};
    bo.bound[0] = (FcMmBound){.lo = 5, .hi = 270, .rcoef = {1}, .ccoef = {1}};
    float *a = malloc(M * K * 4), *src = malloc(SRC * 4), *bm = malloc((size_t)NB * K * N * 4);
    float *c1 = malloc((size_t)NB * M * N * 4), *c2 = malloc((size_t)NB * M * N * 4);
    uint64_t s = 43;
    for (int i = 0; i < M * K; i++)
        a[i] = rng_float(&s);
    for (int i = 0; i < SRC; i++)
        src[i] = rng_float(&s);
    for (int b = 0; b < NB; b++)
        for (int p = 0; p < K; p++)
            for (int j = 0; j < N; j++)
                bm[((size_t)b * K + p) * N + j] = p + j >= 5 && p + j < 270 ? src[b + p + j] : 0.0f;
    FcMatmul plain = {.dtype = FC_FLOAT32, .nbatch = 1, .batch = {NB}, .a_bstride = {0}, .b_bstride = {K * N},
                      .c_bstride = {M * N}, .m = M, .n = N, .k = K, .a = a, .a_rs = K, .a_cs = 1, .b = bm,
                      .b_rs = N, .b_cs = 1, .c = c1, .c_rs = N, .c_cs = 1, .nthreads = 1};
    ck_assert_int_eq(be->matmul(be, &plain, &err), FC_OK);
    FcMatmul g = plain;
    g.b = src;
    g.b_bstride[0] = 1;
    g.b_ix = &bo;
    g.c = c2;
    MemAccount acct = {.limit = 8 << 20};
    MemAccount *prev = mem_scope_begin(&acct);
    FcStatus st = be->matmul(be, &g, &err);
    mem_scope_end(&prev);
    ck_assert_msg(st == FC_OK, "the gathered product under 8 MB: %s", err.msg);
    ck_assert_msg(memcmp(c1, c2, (size_t)NB * M * N * 4) == 0, "the gathered product's bits differ");
    free(a);
    free(src);
    free(bm);
    free(c1);
    free(c2);
}
END_TEST

START_TEST(test_matmul_interrupt_and_dtype)
{
    volatile int stop = 1;
    float a[4] = {1, 2, 3, 4}, c[4];
    FcMatmul m = {.dtype = FC_FLOAT32, .m = 2, .n = 2, .k = 2, .a = a, .b = a, .c = c, .a_rs = 2, .a_cs = 1,
                  .b_rs = 2, .b_cs = 1, .c_rs = 2, .c_cs = 1, .nthreads = 1, .interrupt = &stop};
    ck_assert_int_eq(be->matmul(be, &m, &err), FC_ERR_INTERRUPT);
    ck_assert_str_eq(err.msg, "interrupted");
    m.interrupt = NULL;
    m.dtype = FC_BOOL;
    ck_assert_int_eq(be->matmul(be, &m, &err), FC_ERR_RUNTIME);
}
END_TEST

/* ---- benchmark (run by hand: TDL_CPU_BENCH=1 CK_FORK=no CK_RUN_SUITE=cpu_backend check_tdl) ----
 * where(a > 0, a * b + c, c * 0.5).sum() over 16M float32 on 1 and 2 threads, against the same
 * expression as a plain C loop and against a vectorised a + b + c sum (the bandwidth it can
 * reach). Prints timings; asserts only that the sums agree. */

static double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

START_TEST(bench_fused_sum)
{
    enum { N = 16 << 20, REPS = 20 };
    float *x = aligned_alloc(64, (size_t)N * 4), *y = aligned_alloc(64, (size_t)N * 4);
    float *z = aligned_alloc(64, (size_t)N * 4), out = 0;
    uint64_t s = 1;
    for (int i = 0; i < N; i++) {
        x[i] = rng_float(&s);
        y[i] = rng_float(&s) + 1.0f;
        z[i] = rng_float(&s) * 2.0f;
    }
    int64_t n = N, zero = 0;
    bool red = true;
    KB b;
    kb_init(&b, 1, &n);
    int a = kb_load(&b, FC_FLOAT32, x, 0, ONE), bb = kb_load(&b, FC_FLOAT32, y, 0, ONE);
    int c = kb_load(&b, FC_FLOAT32, z, 0, ONE);
    int gt = kb_op(&b, FC_OP_GT, FC_BOOL, a, kb_f(&b, FC_FLOAT32, 0), -1);
    int t = kb_op(&b, FC_OP_ADD, FC_FLOAT32, kb_op(&b, FC_OP_MUL, FC_FLOAT32, a, bb, -1), c, -1);
    int e = kb_op(&b, FC_OP_MUL, FC_FLOAT32, c, kb_f(&b, FC_FLOAT32, 0.5), -1);
    kb_reduce(&b, FC_OP_SUM, kb_op(&b, FC_OP_WHERE, FC_FLOAT32, gt, t, e), &out, FC_FLOAT32, &red, &zero);
    FcBackend *b2 = fc_cpu_backend_new(2);
    double gb = 3.0 * N * 4 / 1e9;
    for (int th = 1; th <= 2; th++) {
        b.k.nthreads = th;
        double best = 1e9;
        for (int r = 0; r < REPS; r++) {
            double t0 = bench_now();
            ck_assert_int_eq(b2->run(b2, &b.k, &err), FC_OK);
            best = fmin(best, bench_now() - t0);
        }
        fprintf(stderr, "tdl kernel, %d thread(s): %6.2f ms  %5.1f GB/s\n", th, best * 1e3, gb / best);
    }
    b2->destroy(b2);
    double best = 1e9, plain = 0, bw = 0;
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now(), acc = 0;
        for (int i = 0; i < N; i++)
            acc += x[i] > 0 ? x[i] * y[i] + z[i] : z[i] * 0.5f;
        best = fmin(best, bench_now() - t0);
        plain = acc;
    }
    fprintf(stderr, "plain C loop, 1 thread:  %6.2f ms  %5.1f GB/s\n", best * 1e3, gb / best);
    best = 1e9;
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now();
        float l[8] = {0};
        for (int i = 0; i < N; i += 8)
            for (int j = 0; j < 8; j++)
                l[j] += x[i + j] + y[i + j] + z[i + j];
        best = fmin(best, bench_now() - t0);
        bw = l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
    }
    fprintf(stderr, "a+b+c sum, 1 thread:     %6.2f ms  %5.1f GB/s (bandwidth reference; %g)\n", best * 1e3,
            gb / best, bw);
    ck_assert_msg(fabs(out - plain) <= 1e-4 * fabs(plain) + 1e-2, "%g vs %g", out, plain);
    free(x);
    free(y);
    free(z);
}
END_TEST

/* ---- weighted rows from fcdim's MULADD ---- */

/* What the CPU plans for the kernels with MULADDs that a program runs: the MULADDs (those with
 * no x apart), the steps of weighted rows that run (passes) and their terms, and whether every
 * such step is a MULADD. */
typedef struct RowsSeen {
    int muladd, xless, passes, terms;
    bool all_muladd;
    char bad[200];
} RowsSeen;

static void rows_on_kernel(void *ud, const FcKernel *k, FcDevice dev)
{
    RowsSeen *r = ud;
    int m = 0, x = 0;
    for (int i = 0; i < k->ncode; i++)
        if (k->code[i].op == FC_OP_MULADD) {
            m++;
            x += k->code[i].a < 0;
        }
    if (dev.type != FC_DEV_CPU || m == 0 || r->bad[0])
        return;
    Plan p;
    FcError err;
    if (cpu_plan_kernel(&p, k, &err) != FC_OK) {
        snprintf(r->bad, sizeof r->bad, "planning a kernel: %.150s", err.msg);
    } else {
        int passes = 0;
        for (int j = 0; j < p.nsteps; j++) {
            const Step *s = &p.steps[j];
            if (!s->nterm || s->dead)
                continue;
            passes++;
            r->terms += s->nterm;
            r->all_muladd = r->all_muladd && s->in->op == FC_OP_MULADD;
        }
        if (passes) {
            r->muladd += m;
            r->xless += x;
            r->passes += passes;
        }
    }
    cpu_plan_free(&p);
}

/* roi_align's bilinear sum of four taps (16 channels, short enough that a chunk spans the
 * sample's rows of channels) reaches the CPU as a chain of MULADDs made by fcdim (the first tap
 * one with no x), and the CPU runs the chain as one pass of weighted rows: one step of four
 * terms, each weight a product computed in it, the rows read where they lie. */
START_TEST(test_roi_align_rows_from_muladd)
{
    RowsSeen r = {.all_muladd = true};
    tdl_interp *T = open_watching(rows_on_kernel, &r);
    ck_assert_int_eq(tdl_run_string(T,
                                    "import vision\n"
                                    "x = (arange(16 * 32 * 32.0) * 0.37).sin().reshape(1, 16, 32, 32)\n"
                                    "i = arange(32.0)\n"
                                    "boxes = stack([i * 0, (i * 0.77) % 20, (i * 1.3) % 17,\n"
                                    "               (i * 0.77) % 20 + 2 + i * 0.6, (i * 1.3) % 17 + 3 + i * 0.5], 1)\n"
                                    "y = vision.roi_align(x, boxes, (7, 7), 1.0, 2, False)\n"
                                    "y.stride()\n",
                                    "<t>"),
                     TDL_OK);
    tdl_close(T);
    ck_assert_msg(!r.bad[0], "%s", r.bad);
    ck_assert_int_eq(r.passes, 1);
    ck_assert_int_eq(r.terms, 4);
    ck_assert(r.all_muladd);
    ck_assert_int_ge(r.muladd, 4);
    ck_assert_int_ge(r.xless, 1);
}
END_TEST

/* ---- loads by runs in a span ----
 * A contiguous depthwise convolution is one kernel over (n, c, oh, ow) whose chunks span (oh,
 * ow) (its rows are short), each tap a view of the padded input: rows of ow inside rows two
 * wider, so not one run over the chunk. Each tap is read as runs of ow values (Step.prun), one
 * copy per row, not element by element through a table of offsets. */
typedef struct RunsSeen {
    int span, loads, runs;
    char bad[200];
} RunsSeen;

static void runs_on_kernel(void *ud, const FcKernel *k, FcDevice dev)
{
    RunsSeen *r = ud;
    int m = 0;
    for (int i = 0; i < k->ncode; i++)
        m += k->code[i].op == FC_OP_MULADD;
    if (dev.type != FC_DEV_CPU || m == 0 || r->bad[0])
        return;
    Plan p;
    FcError err;
    if (cpu_plan_kernel(&p, k, &err) != FC_OK) {
        snprintf(r->bad, sizeof r->bad, "planning a kernel: %.150s", err.msg);
    } else {
        r->span = p.span;
        for (int j = 0; j < p.nsteps; j++) {
            const Step *s = &p.steps[j];
            if (s->in->op != FC_OP_LOAD || !s->wide)
                continue;
            r->loads++;
            r->runs += s->prun == 28;
        }
    }
    cpu_plan_free(&p);
}

START_TEST(test_depthwise_taps_by_runs)
{
    RunsSeen r = {0};
    tdl_interp *T = open_watching(runs_on_kernel, &r);
    ck_assert_int_eq(tdl_run_string(T,
                                    "import nn\n"
                                    "x = (arange(2 * 8 * 28 * 28.0) * 0.37).sin().reshape(2, 8, 28, 28)\n"
                                    "w = (arange(8 * 9.0) * 0.21).cos().reshape(8, 1, 3, 3)\n"
                                    "y = nn.relu(nn.conv2d(x, w, padding=1, groups=8))\n"
                                    "y.stride()\n",
                                    "<t>"),
                     TDL_OK);
    tdl_close(T);
    ck_assert_msg(!r.bad[0], "%s", r.bad);
    ck_assert_int_eq(r.span, 28 * 28);
    ck_assert_int_eq(r.loads, 9);
    ck_assert_int_eq(r.runs, 9);
}
END_TEST

/* ---- sums in PyTorch's order (cascade_sum) ---- */

/* FcOrderedSum.tile over an array in memory: its elements from begin. Counts the calls. */
static int tiles_asked;
static FcStatus tile_from(void *ud, int64_t begin, int64_t end, const void **at, FcError *e)
{
    (void)end, (void)e;
    tiles_asked++;
    *at = (const char *)ud + begin * (int64_t)sizeof(float);
    return FC_OK;
}

/* Long sums that the backend splits over threads (by spans of a lone row, by ranges of outputs)
 * give the same bits at 1, 2 and 4 threads, in each of cascade_sum's loops; their values against
 * PyTorch's are tests/scripts/tdiff_sum_order's. */
START_TEST(test_cascade_sum_threads)
{
    enum { N = 1 << 21 };
    float *x = malloc(N * sizeof *x);
    uint16_t *h = malloc(N * sizeof *h);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(h);
    for (int i = 0; i < N; i++) {
        x[i] = ((float)fmod((double)i * 0.37f, 19.7) - 9.85f) * 3.3f;
        h[i] = fc_f32_to_bf16(x[i]);
    }
    /* shape, strides, summed dims, dtype */
    static const struct {
        int nd;
        int64_t shape[3], strides[3];
        uint64_t reduced;
        FcDType dt;
    } cases[] = {
        {1, {N}, {1}, 1, FC_FLOAT32},                           /* one row: spans */
        {1, {N / 3}, {3}, 1, FC_FLOAT32},                       /* strided row: spans */
        {2, {4, N / 4}, {N / 4, 1}, 2, FC_FLOAT32},             /* rows: outputs */
        {2, {N / 40, 40}, {40, 1}, 1, FC_FLOAT32},              /* columns: 32, 8, then one by one */
        {2, {1024, 2048}, {1, 1024}, 2, FC_FLOAT32},            /* strided columns */
        {3, {16, 256, 512}, {131072, 512, 1}, 5, FC_FLOAT32},   /* blocks into one output each */
        {1, {N / 2}, {1}, 1, FC_FLOAT64},
        {1, {N}, {1}, 1, FC_BFLOAT16},
        {2, {N / 16, 16}, {16, 1}, 1, FC_BFLOAT16},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        double want[2048], got[2048];
        int64_t onum = 1;
        for (int d = 0; d < cases[c].nd; d++)
            onum *= (cases[c].reduced >> d) & 1 ? 1 : cases[c].shape[d];
        ck_assert_int_le(onum, 2048);
        for (int th = 1; th <= 4; th *= 2) {
            FcBackend *b = fc_cpu_backend_new(th);
            ck_assert_ptr_nonnull(b);
            FcOrderedSum cs = {.order = FC_SUM_CASCADE, .in = cases[c].dt == FC_BFLOAT16 ? (const void *)h : (const void *)x,
                               .dtype = cases[c].dt, .ndim = cases[c].nd, .reduced = cases[c].reduced,
                               .out = th == 1 ? want : got, .out_dtype = cases[c].dt};
            memcpy(cs.shape, cases[c].shape, (size_t)cases[c].nd * sizeof *cs.shape);
            memcpy(cs.strides, cases[c].strides, (size_t)cases[c].nd * sizeof *cs.strides);
            double *dx = NULL;
            if (cases[c].dt == FC_FLOAT64) {
                dx = malloc(N / 2 * sizeof *dx);
                ck_assert_ptr_nonnull(dx);
                for (int i = 0; i < N / 2; i++)
                    dx[i] = (double)x[i] * 1.000001;
                cs.in = dx;
            }
            ck_assert_int_eq(b->ordered_sum(b, &cs, &err), FC_OK);
            if (th > 1)
                ck_assert_msg(memcmp(want, got, (size_t)onum * fc_dtype_size(cases[c].dt)) == 0,
                              "case %zu: %d threads give other bits than one", c, th);
            if (c == 0) {
                /* the same sum streamed a tile at a time (the scheduler's tiled expression) */
                float streamed = 0;
                tiles_asked = 0;
                cs.tile = tile_from;
                cs.tile_ud = x;
                cs.in = NULL;
                cs.out = &streamed;
                ck_assert_int_eq(b->ordered_sum(b, &cs, &err), FC_OK);
                ck_assert_int_gt(tiles_asked, 2);
                float whole;
                memcpy(&whole, want, sizeof whole);
                ck_assert_msg(memcmp(&streamed, &whole, sizeof streamed) == 0, "%d threads: streamed %.9g, in memory %.9g",
                              th, (double)streamed, (double)whole);
            }
            free(dx);
            b->destroy(b);
        }
    }
    free(x);
    free(h);
}
END_TEST

/* ---- the sums of PyTorch's softmax kernels (FC_SUM_LANES, FC_SUM_SERIAL) ---- */

/* vec::reduce_all's order over a float row of n (8 lanes, then ((0+4)+(2+6))+((1+5)+(3+7))), the
 * products x * y added by fma when y: a restatement, for the backend's to be held to. */
static float lanes_f32(const float *x, const float *y, int64_t sd, int64_t n)
{
    if (n < 8) {
        float s = 0;
        for (int64_t i = 0; i < n; i++)
            s = i == 0 ? (y ? x[0] * y[0] : x[0]) : s + (y ? x[i * sd] * y[i * sd] : x[i * sd]);
        return s;
    }
    float a[8];
    for (int l = 0; l < 8; l++)
        a[l] = y ? x[l * sd] * y[l * sd] : x[l * sd];
    for (int64_t i = 8; i < n; i++)
        a[i % 8] = y ? fmaf(x[i * sd], y[i * sd], a[i % 8]) : a[i % 8] + x[i * sd];
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

/* Rows (LANES) and columns (SERIAL), of one tensor or of products (fma), float32 and float64:
 * the values as the orders say, and the same bits at 1, 2 and 4 threads. Against PyTorch's
 * kernels: tests/scripts/tdiff_softmax_order. */
START_TEST(test_vec_sum_orders)
{
    enum { R = 96, C = 1031 };          /* C: lanes and a partial vector; R * C: threads engage */
    float *x = malloc(R * C * sizeof *x), *y = malloc(R * C * sizeof *y);
    double *dx = malloc(R * C * sizeof *dx);
    ck_assert(x && y && dx);
    for (int i = 0; i < R * C; i++) {
        x[i] = ((float)fmod((double)i * 0.37, 7.3) - 3.1f) * 1.7f;
        y[i] = (float)fmod((double)i * 0.71, 3.3) - 1.2f;
        dx[i] = (double)x[i] * 1.000001;
    }
    static float want[C], got[C];
    static double dwant[C], dgot[C];
    for (int c = 0; c < 6; c++) {
        FcSumOrder order = c < 3 ? FC_SUM_LANES : FC_SUM_SERIAL;
        bool prod = c % 3 == 1, f64 = c % 3 == 2;
        /* LANES sums rows (dim 1 of [R, C]); SERIAL sums columns (dim 0) */
        int64_t onum = order == FC_SUM_LANES ? R : C;
        for (int th = 1; th <= 4; th *= 2) {
            FcBackend *b = fc_cpu_backend_new(th);
            ck_assert_ptr_nonnull(b);
            FcOrderedSum cs = {.order = order, .in = f64 ? (const void *)dx : (const void *)x, .in2 = prod ? y : NULL,
                               .dtype = f64 ? FC_FLOAT64 : FC_FLOAT32, .ndim = 2, .shape = {R, C}, .strides = {C, 1},
                               .strides2 = {C, 1}, .reduced = order == FC_SUM_LANES ? 2 : 1,
                               .out = th == 1 ? (f64 ? (void *)dwant : (void *)want) : (f64 ? (void *)dgot : (void *)got),
                               .out_dtype = f64 ? FC_FLOAT64 : FC_FLOAT32};
            ck_assert_int_eq(b->ordered_sum(b, &cs, &err), FC_OK);
            b->destroy(b);
            if (th > 1) {
                ck_assert_msg(f64 ? memcmp(dwant, dgot, (size_t)onum * 8) == 0 : memcmp(want, got, (size_t)onum * 4) == 0,
                              "case %d: %d threads give other bits than one", c, th);
                continue;
            }
            for (int64_t o = 0; o < onum; o++) {
                if (f64 && order == FC_SUM_LANES) {
                    /* 4 lanes, added in turn */
                    const double *r = dx + o * C;
                    double a[4] = {r[0], r[1], r[2], r[3]};
                    for (int64_t i = 4; i < C; i++)
                        a[i % 4] = a[i % 4] + r[i];
                    ck_assert_msg(dwant[o] == ((a[0] + a[1]) + a[2]) + a[3], "f64 row %d", (int)o);
                } else if (f64) {
                    double s = 0;
                    for (int64_t i = 0; i < R; i++)
                        s = s + dx[i * C + o];
                    ck_assert_msg(dwant[o] == s, "f64 column %d", (int)o);
                } else if (order == FC_SUM_LANES) {
                    float w = lanes_f32(x + o * C, prod ? y + o * C : NULL, 1, C);
                    ck_assert_msg(memcmp(&w, &want[o], 4) == 0, "case %d row %d: %.9g, want %.9g", c, (int)o,
                                  (double)want[o], (double)w);
                } else {
                    float s = 0;
                    for (int64_t i = 0; i < R; i++)
                        s = prod ? fmaf(x[i * C + o], y[i * C + o], s) : s + x[i * C + o];
                    ck_assert_msg(memcmp(&s, &want[o], 4) == 0, "case %d column %d", c, (int)o);
                }
            }
        }
    }
    /* rows shorter than the lanes are added in turn; an empty one is 0 */
    FcBackend *b = fc_cpu_backend_new(1);
    ck_assert_ptr_nonnull(b);
    for (int64_t n = 0; n < 8; n++) {
        float out = -1;
        FcOrderedSum cs = {.order = FC_SUM_LANES, .in = x, .dtype = FC_FLOAT32, .ndim = 1, .shape = {n},
                           .strides = {1}, .reduced = 1, .out = &out, .out_dtype = FC_FLOAT32};
        ck_assert_int_eq(b->ordered_sum(b, &cs, &err), FC_OK);
        float w = lanes_f32(x, NULL, 1, n);
        ck_assert_msg(memcmp(&w, &out, 4) == 0, "row of %d", (int)n);
    }
    b->destroy(b);
    free(x);
    free(y);
    free(dx);
}
END_TEST

/* One output's m2 as WelfordOps: the elements in order, as doubles, m2 by one fma. */
static double welford_m2(const float *x, int64_t stride, int64_t n)
{
    double mean = 0, m2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = x[i * stride], delta = v - mean;
        mean = mean + delta / (double)(i + 1);
        m2 = fma(delta, v - mean, m2);
    }
    return m2;
}

/* var's Welford m2 (FC_SUM_WELFORD): each output's elements in TensorIterator's order (the
 * summed dims by ascending stride) with one fma per update; the same bits at 1, 2 and 4 threads.
 * Fails when the m2 update is an add of a rounded product, or when two summed dims are walked
 * in the other order. */
START_TEST(test_welford_m2)
{
    enum { A = 48, B = 37, C = 29 };
    float *x = malloc(A * B * C * sizeof *x);
    ck_assert(x);
    for (int i = 0; i < A * B * C; i++)
        x[i] = (((float)fmod((double)i * 0.37, 7.3) - 3.1f) * 1.37f) + 100.0f;
    static double want[A * C], got[A * C];
    /* over dim 1 of [A, B, C] (outputs A x C), then over dims 0 and 2 (outputs B) */
    for (int c = 0; c < 2; c++) {
        int64_t onum = c == 0 ? A * C : B;
        for (int th = 1; th <= 4; th *= 2) {
            FcBackend *b = fc_cpu_backend_new(th);
            ck_assert_ptr_nonnull(b);
            FcOrderedSum cs = {.order = FC_SUM_WELFORD, .in = x, .dtype = FC_FLOAT32, .ndim = 3, .shape = {A, B, C},
                               .strides = {B * C, C, 1}, .reduced = c == 0 ? 2 : 5, .out = th == 1 ? want : got,
                               .out_dtype = FC_FLOAT64};
            ck_assert_int_eq(b->ordered_sum(b, &cs, &err), FC_OK);
            b->destroy(b);
            if (th > 1) {
                ck_assert_msg(memcmp(want, got, (size_t)onum * 8) == 0, "case %d: %d threads give other bits", c, th);
                continue;
            }
        }
        if (c == 0) {
            for (int64_t a = 0; a < A; a++)
                for (int64_t k = 0; k < C; k++) {
                    double w = welford_m2(x + a * B * C + k, C, B);
                    ck_assert_msg(want[a * C + k] == w, "output (%d, %d): %.17g, want %.17g", (int)a, (int)k,
                                  want[a * C + k], w);
                }
        } else {
            /* dim 2 (stride 1) fastest, then dim 0 */
            static float line[A * C];
            for (int64_t j = 0; j < B; j++) {
                for (int64_t a = 0; a < A; a++)
                    for (int64_t k = 0; k < C; k++)
                        line[a * C + k] = x[a * B * C + j * C + k];
                double w = welford_m2(line, 1, A * C);
                ck_assert_msg(want[j] == w, "output %d: %.17g, want %.17g", (int)j, want[j], w);
            }
        }
    }
    free(x);
}
END_TEST

/* The 2-norm's sum of squares as PyTorch's norm kernel: a contiguous float32 row by 8 fma lanes
 * added in turn, then its last n % 8 (the first 4 squares rounded when 4 or more, the rest by
 * fma); other layouts each output's elements in order by fma (NormTwoOps); SERIAL over two dims
 * in TensorIterator's order. The same bits at 1, 2 and 4 threads. Fails when the tail is all fma
 * or all rounded, or the lanes are added as a tree. */
static float norm2_row_ref(const float *x, int64_t n)
{
    float a[8] = {0}, b;
    int64_t d = 0;
    for (; d + 8 <= n; d += 8)
        for (int l = 0; l < 8; l++)
            a[l] = fmaf(x[d + l], x[d + l], a[l]);
    b = a[0];
    for (int l = 1; l < 8; l++)
        b = b + a[l];
    for (int64_t i = 0; d < n; d++, i++) {
        if (n % 8 >= 4 && i < 4) {
            float sq = x[d] * x[d];
            b = b + sq;
        } else {
            b = fmaf(x[d], x[d], b);
        }
    }
    return b;
}

START_TEST(test_norm2_and_serial_sums)
{
    enum { R = 400, C = 29 };       /* C: 3 lanes' vectors and a tail of 5 */
    float *x = malloc(R * C * sizeof *x);
    ck_assert(x);
    for (int i = 0; i < R * C; i++)
        x[i] = ((float)fmod((double)i * 0.37, 7.3) - 3.1f) * 1.37f;
    static float want[R], got[R];
    for (int c = 0; c < 3; c++) {
        /* c 0: NORM2 along the rows (its fast path), 1: NORM2 down the columns (serial fma),
         * 2: SERIAL over both dims of [R, C] read transposed (dim 0 fastest, then dim 1) */
        int64_t onum = c == 0 ? R : c == 1 ? C : 1;
        for (int th = 1; th <= 4; th *= 2) {
            FcBackend *b = fc_cpu_backend_new(th);
            ck_assert_ptr_nonnull(b);
            FcOrderedSum cs = {.order = c < 2 ? FC_SUM_NORM2 : FC_SUM_SERIAL, .in = x, .dtype = FC_FLOAT32, .ndim = 2,
                               .shape = {R, C}, .strides = {C, 1}, .reduced = c == 0 ? 2 : c == 1 ? 1 : 3,
                               .out = th == 1 ? want : got, .out_dtype = FC_FLOAT32};
            if (c == 2) {
                cs.shape[0] = C;
                cs.shape[1] = R;
                cs.strides[0] = 1;
                cs.strides[1] = C;
            }
            ck_assert_int_eq(b->ordered_sum(b, &cs, &err), FC_OK);
            b->destroy(b);
            if (th > 1)
                ck_assert_msg(memcmp(want, got, (size_t)onum * 4) == 0, "case %d: %d threads give other bits", c, th);
        }
        for (int64_t o = 0; o < onum; o++) {
            float w = 0;
            if (c == 0) {
                w = norm2_row_ref(x + o * C, C);
            } else if (c == 1) {
                for (int64_t i = 0; i < R; i++)
                    w = fmaf(x[i * C + o], x[i * C + o], w);
            } else {
                for (int64_t i = 0; i < R * C; i++)     /* memory order: the stride-1 dim first */
                    w = w + x[i];
            }
            ck_assert_msg(memcmp(&w, &want[o], 4) == 0, "case %d output %d: %.9g, want %.9g", c, (int)o,
                          (double)want[o], (double)w);
        }
    }
    /* every tail length, and rows shorter than the lanes */
    FcBackend *b = fc_cpu_backend_new(1);
    ck_assert_ptr_nonnull(b);
    for (int64_t n = 0; n <= 24; n++) {
        float out = -1;
        FcOrderedSum cs = {.order = FC_SUM_NORM2, .in = x, .dtype = FC_FLOAT32, .ndim = 1, .shape = {n},
                           .strides = {1}, .reduced = 1, .out = &out, .out_dtype = FC_FLOAT32};
        ck_assert_int_eq(b->ordered_sum(b, &cs, &err), FC_OK);
        float w = norm2_row_ref(x, n);
        ck_assert_msg(memcmp(&w, &out, 4) == 0, "row of %d: %.9g, want %.9g", (int)n, (double)out, (double)w);
    }
    b->destroy(b);
    free(x);
}
END_TEST

/* prod's order (PROD_VEC, binary_kernel_reduce_vec): a contiguous row by 4 vectors of 8 lanes
 * from its first element, (v0 * v1) * (v2 * v3), the lanes in turn, then the tail; columns 32
 * at a time down the rows; the bits of the restatement below. Fails when the lanes are combined
 * in another order or the tail goes into the lanes. */
START_TEST(test_vec_prod)
{
    enum { R = 45, C = 77 };
    float *x = malloc(R * C * sizeof *x);
    ck_assert(x);
    for (int i = 0; i < R * C; i++)
        x[i] = (((float)fmod((double)i * 0.37, 7.3) - 3.1f) * 0.037f) + 1.0f;
    static float got[C];
    FcBackend *b = fc_cpu_backend_new(2);
    ck_assert_ptr_nonnull(b);
    for (int c = 0; c < 2; c++) {
        /* c 0: along the rows (dim 1, contiguous); 1: down the columns (dim 0) */
        FcOrderedSum cs = {.order = FC_PROD_VEC, .in = x, .dtype = FC_FLOAT32, .ndim = 2, .shape = {R, C},
                           .strides = {C, 1}, .reduced = c == 0 ? 2 : 1, .out = got, .out_dtype = FC_FLOAT32};
        ck_assert_int_eq(b->ordered_sum(b, &cs, &err), FC_OK);
        for (int64_t o = 0; o < (c == 0 ? R : C); o++) {
            float w = 1;
            if (c == 0) {
                const float *r = x + o * C;
                float acc[32];
                for (int k = 0; k < 32; k++)
                    acc[k] = r[k];
                for (int i = 1; i < C / 32; i++)
                    for (int k = 0; k < 32; k++)
                        acc[k] = acc[k] * r[i * 32 + k];
                float l0 = (acc[0] * acc[8]) * (acc[16] * acc[24]);
                for (int l = 1; l < 8; l++) {
                    float a = (acc[l] * acc[8 + l]) * (acc[16 + l] * acc[24 + l]);
                    l0 = l0 * a;
                }
                w = l0;
                for (int i = C / 32 * 32; i < C; i++)
                    w = w * r[i];
            } else {
                for (int i = 0; i < R; i++)
                    w = w * x[i * C + o];
            }
            ck_assert_msg(memcmp(&w, &got[o], 4) == 0, "case %d output %d: %.9g, want %.9g", c, (int)o,
                          (double)got[o], (double)w);
        }
    }
    b->destroy(b);
    free(x);
}
END_TEST

Suite *cpu_backend_suite(void)
{
    Suite *s = suite_create("cpu_backend");
    TCase *tc = tcase_create("memory");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_alloc_aligned_and_unique);
    tcase_add_test(tc, test_alloc_failure);
    tcase_add_test(tc, test_alloc_cache);
    tcase_add_test(tc, test_copies);
    suite_add_tcase(s, tc);

    tc = tcase_create("elementwise");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_add_f32_sizes, 0, sizeof chunk_sizes / sizeof *chunk_sizes);
    tcase_add_test(tc, test_fused_strided_output);
    tcase_add_test(tc, test_invariant_chain);
    tcase_add_test(tc, test_register_reuse);
    tcase_add_test(tc, test_int_wraps);
    tcase_add_loop_test(tc, test_int_binary_table, 0, sizeof int_cases / sizeof *int_cases);
    tcase_add_test(tc, test_int32_edges);
    tcase_add_loop_test(tc, test_int_division_by_zero, 0, sizeof zerodiv_ops / sizeof *zerodiv_ops);
    tcase_add_test(tc, test_bool_arithmetic);
    tcase_add_loop_test(tc, test_float_binary_table, 0, sizeof float_cases / sizeof *float_cases);
    tcase_add_test(tc, test_float_compare_nan);
    tcase_add_loop_test(tc, test_float_unary_table, 0, sizeof unary_cases / sizeof *unary_cases);
    tcase_add_test(tc, test_isnan);
    tcase_add_test(tc, test_int_unary);
    tcase_add_test(tc, test_where_keeps_bits);
    tcase_add_test(tc, test_cast_float_to_int);
    tcase_add_test(tc, test_cast_other);
    tcase_add_test(tc, test_store_converts);
    tcase_add_test(tc, test_unsupported_combination);
    suite_add_tcase(s, tc);

    tc = tcase_create("loops");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_load_strided_reversed_broadcast);
    tcase_add_test(tc, test_load_row_broadcast);
    tcase_add_test(tc, test_gather);
    tcase_add_loop_test(tc, test_gather_out_of_bounds, 0, sizeof gather_cases / sizeof *gather_cases);
    tcase_add_test(tc, test_gather_wrap);
    tcase_add_loop_test(tc, test_gather_wrap_out_of_bounds, 0, sizeof wrap_cases / sizeof *wrap_cases);
    tcase_add_test(tc, test_iota);
    tcase_add_test(tc, test_transpose_tiles);
    tcase_add_loop_test(tc, test_permute_3d, 0, sizeof perm_shapes / sizeof *perm_shapes);
    tcase_add_test(tc, test_extent_zero_store);
    tcase_add_loop_test(tc, test_extent_zero_reduce, 0, sizeof empty_cases / sizeof *empty_cases);
    tcase_add_test(tc, test_nloop_zero);
    tcase_add_test(tc, test_interrupt);
    suite_add_tcase(s, tc);

    tc = tcase_create("reductions");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_sum_2d, 0, sizeof sum_shapes / sizeof *sum_shapes);
    tcase_add_test(tc, test_sum_mixed_loops);
    tcase_add_test(tc, test_sum_int_types);
    tcase_add_test(tc, test_prod_float);
    tcase_add_loop_test(tc, test_extremes_2d, 0, sizeof ext_shapes / sizeof *ext_shapes);
    tcase_add_test(tc, test_argmax_first_nan_and_ties);
    tcase_add_test(tc, test_argmax_long_ties);
    tcase_add_test(tc, test_amax_nan_and_ints);
    tcase_add_test(tc, test_any_all);
    tcase_add_test(tc, test_reduce_fused_output_strides);
    suite_add_tcase(s, tc);

    tc = tcase_create("index widths");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_index_widths_agree, 0, sizeof width_cases / sizeof *width_cases);
    tcase_add_test(tc, test_index_widths_gather);
    tcase_add_test(tc, test_addresses_beyond_int32);
    tcase_add_test(tc, test_extent_beyond_int32);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_deterministic_reductions);
    tcase_add_test(tc, test_split_vertical);
    tcase_add_test(tc, test_parallel_store);
    tcase_add_test(tc, test_parallel_error);
    suite_add_tcase(s, tc);

    tc = tcase_create("scatter");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_scatter_store);
    tcase_add_loop_test(tc, test_scatter_accumulate_f32, 0, sizeof acc_cases / sizeof *acc_cases);
    tcase_add_test(tc, test_accumulate_unscattered);
    tcase_add_test(tc, test_scatter_dtypes);
    tcase_add_loop_test(tc, test_scatter_out_of_bounds, 0, sizeof wrap_cases / sizeof *wrap_cases);
    tcase_add_test(tc, test_scatter_invariant_index);
    tcase_add_test(tc, test_scatter_two_dims);
    tcase_add_test(tc, test_scatter_nloop_zero);
    tcase_add_loop_test(tc, test_scatter_malformed, 0, 6);
    tcase_add_loop_test(tc, test_one_validator, 0, 2);
    tcase_add_test(tc, test_plan_pre_and_live);
    tcase_add_test(tc, test_plan_pre_roi_domain);
    tcase_add_test(tc, test_registry_supports);
    suite_add_tcase(s, tc);

    tc = tcase_create("flat");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_flat_gather, 0, sizeof flat_layouts / sizeof *flat_layouts);
    tcase_add_loop_test(tc, test_flat_gather_out_of_bounds, 0, sizeof wrap_cases / sizeof *wrap_cases);
    tcase_add_test(tc, test_flat_gather_reduce);
    tcase_add_loop_test(tc, test_flat_scatter, 0, 3 * (int)(sizeof scatter_layouts / sizeof *scatter_layouts));
    tcase_add_test(tc, test_flat_scatter_reads_output);
    tcase_add_loop_test(tc, test_flat_scatter_accumulate, 0, sizeof scatter_layouts / sizeof *scatter_layouts);
    tcase_add_test(tc, test_flat_accumulate_dtypes);
    tcase_add_loop_test(tc, test_flat_scatter_out_of_bounds, 0, sizeof wrap_cases / sizeof *wrap_cases);
    suite_add_tcase(s, tc);

    tc = tcase_create("rows");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_roi_align_rows_from_muladd);
    tcase_add_test(tc, test_depthwise_taps_by_runs);
    suite_add_tcase(s, tc);

    tc = tcase_create("matmul");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_matmul_reference, 0, 4 * (int)(sizeof mm_cases / sizeof *mm_cases));
    tcase_add_test(tc, test_matmul_strided_c_and_wrap);
    tcase_add_test(tc, test_matmul_threads_bitwise);
    tcase_add_loop_test(tc, test_matmul_chain_bits, 0, 4);
    tcase_add_loop_test(tc, test_matmul_gathered, 0, 3);
    tcase_add_loop_test(tc, test_matmul_shared_operands, 0, 3);
    tcase_add_test(tc, test_matmul_gathered_bounded);
    tcase_add_test(tc, test_matmul_interrupt_and_dtype);
    suite_add_tcase(s, tc);

    tc = tcase_create("cascade_sum");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cascade_sum_threads);
    tcase_add_test(tc, test_vec_sum_orders);
    tcase_add_test(tc, test_welford_m2);
    tcase_add_test(tc, test_norm2_and_serial_sums);
    tcase_add_test(tc, test_vec_prod);
    suite_add_tcase(s, tc);

    if (getenv("TDL_CPU_BENCH")) {
        tc = tcase_create("bench");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, bench_fused_sum);
        suite_add_tcase(s, tc);
    }
    return s;
}
