/* cpu_matmul.c — batched strided matrix products C[b] = A[b] @ B[b] for float32, float64, int32
 * and int64 (and bfloat16 rounded at every step: mm_bf16_steps), the way a BLAS does them: blocks
 * of B (KC x NC) and A (MC x KC) packed into contiguous panels, a register-blocked MR x NR
 * micro-kernel accumulating over the packed K dimension (on a machine with AVX-512, MR x 4 NR
 * tiles of 64-byte vectors over the same panels),
 * the C block kept in a contiguous buffer and written out through C's strides once.
 *
 * float32 accumulates in float32 and float64 in float64, each element of C by a product rounded
 * and then added, k in order from 0 (PyTorch's cpublas::gemm loops: the bits of PyTorch 1.13
 * without a BLAS, and of the CUDA generator's product); integers accumulate in unsigned
 * arithmetic, so overflow wraps without undefined behaviour. Operands may have any strides (0 for broadcast
 * batch dims, transposed or non-contiguous matrices). Work is split over (batch, block of rows)
 * tasks; every element of C is computed by one thread in an order fixed by KC alone, so results
 * do not depend on the thread count.
 * Depends on cpu_internal.h only. */
#include "cpu_internal.h"
#include "mem.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define MM_AVX 1                /* the AVX2 and AVX-512 float micro-kernels exist */
#else
#define MM_AVX 0
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    MM_MR = 6,                  /* rows of the micro-kernel */
    MM_MC = 72,                 /* rows per task (at most; a multiple of MM_MR, as packed) */
    MM_NR_BYTES = 64,           /* bytes of a row of the micro-kernel */
    MM_SMALL = 64 * 1024,       /* multiply-adds below which the product runs on one thread */
};
#define MM_SHARED_B_MAX (64.0 * 1024 * 1024)    /* bytes of B (or A) packed once for all tasks, at most */
#define MM_GATHER_B_MAX (4.0 * 1024 * 1024)     /* the same for a gathered B (at least one item's) */
/* Columns of the micro-kernel (64 bytes of a row: two AVX2 registers) and the K and N block sizes
 * per dtype, so that a packed B block stays in L2 and an A panel with its B panel in L1. */
#define MM_NR(T) ((int)(MM_NR_BYTES / sizeof(T)))
#define MM_KC(T) ((int64_t)(1024 / sizeof(T)))
#define MM_NC(T) ((int64_t)256)

typedef struct MmRun {
    const FcMatmul *m;
    int64_t nbatch;             /* product of the batch dims */
    int64_t mblk;               /* rows per task */
    int64_t nmb;                /* row blocks per batch item */
    int64_t ncol, nnt;          /* columns per task (whole NC blocks), column tasks per row block */
    char **scratch;             /* per thread: packed A, packed B, C block, the epilogue's */
    int64_t **ixs;              /* per thread: the index arithmetic's (ix_words), in scratch */
    void *bshared;              /* B packed once (pack_task) for items item0.. (one item when
                                   bcast_b), or NULL: each task packs its own */
    int64_t npad;               /* columns of bshared per batch item: n, each NC block rounded to NR */
    int64_t item0, task0;       /* the group of batch items running: its first, its first task */
    int64_t bpack_tasks;        /* pack_task's tasks that pack B (the rest pack A) */
    bool bcast_b;               /* B is the same for every batch item: bshared holds one */
    void *ashared;              /* A packed once for all batch items (it is the same for each), or
                                   NULL; row block i0's K block pc at i0 * k + pc * its rows padded */
    size_t a_bytes, b_bytes, c_bytes;
    bool avx2;                  /* the float micro-kernels may use AVX2 */
    /* The kc blocks' products by the AVX-512 kernels (block512), or NULL: ukernel's */
    void (*block)(int64_t kc, const void *ap, int64_t mc, const void *bp, int64_t nc, void *c, int64_t ldc);
} MmRun;

/* Element offsets of batch item bi in A, B and C. */
static void batch_offsets(const FcMatmul *m, int64_t bi, int64_t *ao, int64_t *bo, int64_t *co)
{
    *ao = m->a_offset;
    *bo = m->b_offset;
    *co = m->c_offset;
    for (int d = m->nbatch - 1; d >= 0; d--) {
        int64_t e = m->batch[d], i = bi % e;
        bi /= e;
        *ao += i * m->a_bstride[d];
        *bo += i * m->b_bstride[d];
        *co += i * m->c_bstride[d];
    }
}

/* The micro-kernels: an MR x NR block of C (+=) from kc steps of packed A and B, the block kept
 * in registers as two 32-byte vectors per row (12 of AVX2's 16 registers).
 *
 * Floats: each element of C goes on from its value so far, a product rounded and then added per
 * k, in k's order, on every machine (AVX2 intrinsics, or plain C, which ISO C mode and the
 * FP_CONTRACT pragma keep from contracting into a fused multiply-add): over all the kc blocks,
 * one chain per element from 0, as PyTorch's gemm loops add. Integers wrap in unsigned
 * arithmetic: GCC/Clang vector extensions (plain C loops leave the accumulators in memory),
 * compiled for AVX2 and the baseline. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF      /* GCC contracts nothing in ISO C mode */
#endif
#define DEF_UKERNEL_INT(s, A)                                                                      \
    typedef A vec_##s __attribute__((vector_size(32)));                                            \
    CPU_CLONES static void ukernel_##s(bool use_avx2, int64_t kc, const A *restrict ap,            \
                                       const A *restrict bp, A *restrict c, int64_t ldc, int mr,   \
                                       int nr)                                                     \
    {                                                                                              \
        enum { VL = 32 / sizeof(A), NR = 2 * VL };                                                 \
        (void)use_avx2;                                                                            \
        vec_##s acc[MM_MR][2];                                                                     \
        memset(acc, 0, sizeof acc);                                                                \
        for (int64_t p = 0; p < kc; p++) {                                                         \
            vec_##s b0, b1;                                                                        \
            memcpy(&b0, bp + p * NR, sizeof b0);                                                   \
            memcpy(&b1, bp + p * NR + VL, sizeof b1);                                              \
            for (int i = 0; i < MM_MR; i++) {                                                      \
                A a = ap[p * MM_MR + i];                                                           \
                acc[i][0] += a * b0;                                                               \
                acc[i][1] += a * b1;                                                               \
            }                                                                                      \
        }                                                                                          \
        A out[MM_MR][NR];                                                                          \
        memcpy(out, acc, sizeof out);                                                              \
        for (int i = 0; i < mr; i++)                                                               \
            for (int j = 0; j < nr; j++)                                                           \
                c[i * ldc + j] += out[i][j];                                                       \
    }
DEF_UKERNEL_INT(i32, uint32_t)
DEF_UKERNEL_INT(i64, uint64_t)

#if MM_AVX
/* V: the 32-byte vector type, VS: its intrinsics' suffix (ps, pd). */
#define DEF_UKERNEL_AVX2(s, A, V, VS)                                                              \
    __attribute__((target("avx2"))) static void ukernel_avx2_##s(                                  \
        int64_t kc, const A *restrict ap, const A *restrict bp, A *restrict c, int64_t ldc, int mr, \
        int nr)                                                                                    \
    {                                                                                              \
        enum { VL = 32 / sizeof(A), NR = 2 * VL };                                                 \
        V acc[MM_MR][2];                                                                           \
        A in[MM_MR][NR];                                                                           \
        bool whole = mr == MM_MR && nr == NR;                                                      \
        if (!whole) {                                                                              \
            memset(in, 0, sizeof in);                                                              \
            for (int i = 0; i < mr; i++)                                                           \
                for (int j = 0; j < nr; j++)                                                       \
                    in[i][j] = c[i * ldc + j];                                                     \
        }                                                                                          \
        _Pragma("GCC unroll 8")                                                                    \
        for (int i = 0; i < MM_MR; i++) {                                                          \
            const A *from = whole ? c + i * ldc : in[i];                                           \
            acc[i][0] = _mm256_loadu_##VS(from);                                                   \
            acc[i][1] = _mm256_loadu_##VS(from + VL);                                              \
        }                                                                                          \
        for (int64_t p = 0; p < kc; p++) {                                                         \
            V b0 = _mm256_loadu_##VS(bp + p * NR), b1 = _mm256_loadu_##VS(bp + p * NR + VL);       \
            _Pragma("GCC unroll 8")         /* all rows: the accumulators stay in registers */     \
            for (int i = 0; i < MM_MR; i++) {                                                      \
                V a = _mm256_set1_##VS(ap[p * MM_MR + i]);                                         \
                acc[i][0] = _mm256_add_##VS(acc[i][0], _mm256_mul_##VS(a, b0));                    \
                acc[i][1] = _mm256_add_##VS(acc[i][1], _mm256_mul_##VS(a, b1));                    \
            }                                                                                      \
        }                                                                                          \
        if (whole) {                                                                               \
            _Pragma("GCC unroll 8")                                                                \
            for (int i = 0; i < MM_MR; i++) {                                                      \
                _mm256_storeu_##VS(c + i * ldc, acc[i][0]);                                        \
                _mm256_storeu_##VS(c + i * ldc + VL, acc[i][1]);                                   \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        _Pragma("GCC unroll 8")                                                                    \
        for (int i = 0; i < MM_MR; i++) {                                                          \
            _mm256_storeu_##VS(in[i], acc[i][0]);                                                  \
            _mm256_storeu_##VS(in[i] + VL, acc[i][1]);                                             \
        }                                                                                          \
        for (int i = 0; i < mr; i++)                                                               \
            for (int j = 0; j < nr; j++)                                                           \
                c[i * ldc + j] = in[i][j];                                                         \
    }
DEF_UKERNEL_AVX2(f32, float, __m256, ps)
DEF_UKERNEL_AVX2(f64, double, __m256d, pd)

/* The AVX-512 kernels (a machine with AVX-512F; MmRun.block): one call does a whole kc block of
 * the packed panels, in tiles of MM_MR rows by up to MM_NB column panels (one 64-byte vector of
 * NR each), the MM_MR * MM_NB accumulators in registers (24 of AVX-512's 32). Each element of C
 * is the same chain as ukernel_avx2's: from its value so far, a product rounded and then added
 * per k in k's order, so the bits are those of the AVX2 and plain C kernels. */
enum { MM_NB = 4 };
#define DEF_BLOCK512(s, A, V, VS)                                                                  \
    /* One tile: nb column panels (bp, bs apart) of rows below mr into c; nb is a constant         \
     * where it is inlined. */                                                                     \
    __attribute__((target("avx512f"), always_inline)) static inline void tile512_##s(              \
        int nb, int64_t kc, const A *restrict ap, const A *restrict bp, int64_t bs, A *restrict c, \
        int64_t ldc, int mr)                                                                       \
    {                                                                                              \
        enum { NR = 64 / sizeof(A) };                                                              \
        V acc[MM_MR][MM_NB];                                                                       \
        _Pragma("GCC unroll 8") for (int i = 0; i < MM_MR; i++)                                    \
        _Pragma("GCC unroll 8") for (int j = 0; j < nb; j++)                                       \
            acc[i][j] = i < mr ? _mm512_loadu_##VS(c + i * ldc + j * NR) : _mm512_setzero_##VS();  \
        for (int64_t p = 0; p < kc; p++) {                                                         \
            V b[MM_NB];                                                                            \
            _Pragma("GCC unroll 8") for (int j = 0; j < nb; j++)                                   \
                b[j] = _mm512_loadu_##VS(bp + j * bs + p * NR);                                    \
            _Pragma("GCC unroll 8") for (int i = 0; i < MM_MR; i++) {                              \
                V x = _mm512_set1_##VS(ap[p * MM_MR + i]);                                         \
                _Pragma("GCC unroll 8") for (int j = 0; j < nb; j++)                               \
                    acc[i][j] = _mm512_add_##VS(acc[i][j], _mm512_mul_##VS(x, b[j]));              \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 8") for (int i = 0; i < MM_MR && i < mr; i++)                          \
        _Pragma("GCC unroll 8") for (int j = 0; j < nb; j++)                                       \
            _mm512_storeu_##VS(c + i * ldc + j * NR, acc[i][j]);                                   \
    }                                                                                              \
    /* c (mc x nc of a block of C, ldc apart, padded to whole panels) += the packed A (mc x kc,    \
     * panels of MM_MR) times the packed B (kc x nc, panels of NR). */                             \
    __attribute__((target("avx512f"))) static void block512_##s(                                   \
        int64_t kc, const void *apv, int64_t mc, const void *bpv, int64_t nc, void *cv,            \
        int64_t ldc)                                                                               \
    {                                                                                              \
        enum { NR = 64 / sizeof(A) };                                                              \
        const A *ap = apv, *bp = bpv;                                                              \
        A *c = cv;                                                                                 \
        int64_t npanel = (nc + NR - 1) / NR;                                                       \
        for (int64_t ir = 0; ir < mc; ir += MM_MR) {                                               \
            int mr = mc - ir < MM_MR ? (int)(mc - ir) : MM_MR;                                     \
            for (int64_t jp = 0; jp < npanel; jp += MM_NB) {                                       \
                const A *a = ap + ir * kc, *b = bp + jp * NR * kc;                                 \
                A *cc = c + ir * ldc + jp * NR;                                                    \
                switch (npanel - jp < MM_NB ? npanel - jp : MM_NB) {                               \
                case 1: tile512_##s(1, kc, a, b, NR * kc, cc, ldc, mr); break;                     \
                case 2: tile512_##s(2, kc, a, b, NR * kc, cc, ldc, mr); break;                     \
                case 3: tile512_##s(3, kc, a, b, NR * kc, cc, ldc, mr); break;                     \
                default: tile512_##s(4, kc, a, b, NR * kc, cc, ldc, mr); break;                    \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEF_BLOCK512(f32, float, __m512, ps)
DEF_BLOCK512(f64, double, __m512d, pd)
#define CALL_AVX2(s) ukernel_avx2_##s(kc, ap, bp, c, ldc, mr, nr)
#else
#define CALL_AVX2(s) (void)0
#endif

#define DEF_UKERNEL_FLOAT(s, A)                                                                    \
    static void ukernel_##s(bool use_avx2, int64_t kc, const A *restrict ap, const A *restrict bp, \
                            A *restrict c, int64_t ldc, int mr, int nr)                            \
    {                                                                                              \
        enum { NR = 64 / sizeof(A) };                                                              \
        if (use_avx2) {                                                                            \
            CALL_AVX2(s);                                                                          \
            return;                                                                                \
        }                                                                                          \
        A acc[MM_MR][NR];                                                                          \
        memset(acc, 0, sizeof acc);                                                                \
        for (int i = 0; i < mr; i++)                                                               \
            for (int j = 0; j < nr; j++)                                                           \
                acc[i][j] = c[i * ldc + j];                                                        \
        for (int64_t p = 0; p < kc; p++)                                                           \
            for (int i = 0; i < MM_MR; i++)                                                        \
                for (int j = 0; j < NR; j++) {                                                     \
                    const A x = ap[p * MM_MR + i] * bp[p * NR + j];                                \
                    acc[i][j] = acc[i][j] + x;                                                     \
                }                                                                                  \
        for (int i = 0; i < mr; i++)                                                               \
            for (int j = 0; j < nr; j++)                                                           \
                c[i * ldc + j] = acc[i][j];                                                        \
    }
DEF_UKERNEL_FLOAT(f32, float)
DEF_UKERNEL_FLOAT(f64, double)

/* ---- the epilogue (FcMatmul.epi) ----
 * A block of C (rows i0.., columns jc..) is written as the epilogue's expression of it: each
 * row in chunks of FC_CHUNK, each instruction by the executor's own function for its op
 * (fc_cpu_op_fn), so that the values are the bits the unfused kernels give. */

/* The offset of index x of a flattening of n sub-dims (sizes size, strides stride). */
static int64_t sub_offset(int64_t x, int n, const int64_t *size, const int64_t *stride)
{
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        off += x % size[d] * stride[d];
        x /= size[d];
    }
    return off;
}

/* dst[j] = src[off[j]] for j < len, elements of es bytes. */
static void gather_elems(void *restrict dst, const void *restrict src, const int64_t *off, int len, size_t es)
{
#define GATHER(T)                                                                                  \
    do {                                                                                           \
        T *d = dst;                                                                                \
        const T *sv = src;                                                                         \
        for (int j = 0; j < len; j++)                                                              \
            d[j] = sv[off[j]];                                                                     \
    } while (0)
    switch (es) {
    case 1: GATHER(uint8_t); break;
    case 2: GATHER(uint16_t); break;
    case 4: GATHER(uint32_t); break;
    default: GATHER(uint64_t); break;
    }
#undef GATHER
}

/* Bytes of a thread's scratch the epilogue needs: a chunk per instruction, column offsets per
 * load and for the output. */
static size_t epi_bytes(const FcEpilogue *e, int64_t nc)
{
    return ((size_t)e->n * FC_CHUNK * 8 + (size_t)(e->n + 1) * (size_t)nc * sizeof(int64_t) + 63) & ~(size_t)63;
}

/* Whether m's epilogue is one epi_block runs: a float product, instructions that read earlier
 * ones, ops this backend has a function for. */
static bool epi_valid(const FcMatmul *m)
{
    const FcEpilogue *e = m->epi;
    if ((m->dtype != FC_FLOAT32 && m->dtype != FC_FLOAT64) || e->n < 1 || e->n > FC_EPI_MAX ||
        e->nrdim < 0 || e->nrdim > FC_MAX_DIMS || e->ncdim < 0 || e->ncdim > FC_MAX_DIMS ||
        e->out_dtype != e->code[e->n - 1].dtype)
        return false;
    for (int r = 0; r < e->n; r++) {
        const FcEpiInstr *in = &e->code[r];
        if (in->op == FC_OP_NONE) {
            if (in->dtype != m->dtype)
                return false;
        } else if (in->op == FC_OP_LOAD) {
            if (!in->data)
                return false;
        } else if (in->op != FC_OP_CONST) {
            if (in->a < 0 || in->a >= r || in->b >= r || in->c >= r ||
                !fc_cpu_op_fn(in->op, in->dtype, in->src_dtype))
                return false;
        }
    }
    return true;
}

/* Writes the block cbuf (mc x nc, ldc apart, of the product's dtype) of batch item bi through
 * m->epi; scratch: epi_bytes of it. */
static void epi_block(const FcMatmul *m, int64_t bi, int64_t i0, int64_t jc, int64_t mc, int64_t nc,
                      const void *cbuf, int64_t ldc, char *scratch)
{
    const FcEpilogue *e = m->epi;
    int n = e->n;
    char *regs = scratch;
    int64_t *coff = (int64_t *)(void *)(scratch + (size_t)n * FC_CHUNK * 8);   /* [n + 1][nc] */
    int64_t base[FC_EPI_MAX + 1];       /* per load, then the output: the batch item's offset */
    bool contig[FC_EPI_MAX + 1], flat[FC_EPI_MAX + 1];
    CpuOpFn fn[FC_EPI_MAX];
    size_t es[FC_EPI_MAX + 1];
    int64_t ao, bo;
    batch_offsets(m, bi, &ao, &bo, &base[n]);
    es[n] = fc_dtype_size(e->out_dtype);
    for (int r = 0; r <= n; r++) {
        const FcEpiInstr *in = r < n ? &e->code[r] : NULL;
        if (in) {
            es[r] = fc_dtype_size(in->dtype);
            fn[r] = in->op == FC_OP_NONE || in->op == FC_OP_CONST || in->op == FC_OP_LOAD
                        ? NULL : fc_cpu_op_fn(in->op, in->dtype, in->src_dtype);
            if (in->op == FC_OP_CONST)
                fc_cpu_fill(regs + (size_t)r * FC_CHUNK * 8, in->dtype, in->konst, FC_CHUNK);
            if (in->op != FC_OP_LOAD)
                continue;
            base[r] = in->offset;
            for (int64_t x = bi, d = m->nbatch - 1; d >= 0; d--) {
                base[r] += x % m->batch[d] * in->bstride[d];
                x /= m->batch[d];
            }
        }
        const int64_t *cst = in ? in->cstride : e->out_cstride;
        int64_t *co = coff + (size_t)r * (size_t)nc;
        contig[r] = flat[r] = true;
        for (int64_t j = 0; j < nc; j++) {
            co[j] = sub_offset(jc + j, e->ncdim, e->csize, cst);
            contig[r] = contig[r] && co[j] == co[0] + j;
            flat[r] = flat[r] && co[j] == co[0];
        }
    }
    const void *ptr[FC_EPI_MAX];
    for (int64_t i = 0; i < mc; i++) {
        int64_t row = i0 + i;
        for (int64_t j0 = 0; j0 < nc; j0 += FC_CHUNK) {
            int len = nc - j0 < FC_CHUNK ? (int)(nc - j0) : FC_CHUNK;
            for (int r = 0; r < n; r++) {
                const FcEpiInstr *in = &e->code[r];
                char *reg = regs + (size_t)r * FC_CHUNK * 8;
                const int64_t *co = coff + (size_t)r * (size_t)nc + j0;
                switch (in->op) {
                case FC_OP_NONE:
                    ptr[r] = (const char *)cbuf + (size_t)(i * ldc + j0) * es[r];
                    break;
                case FC_OP_CONST:
                    ptr[r] = reg;
                    break;
                case FC_OP_LOAD: {
                    const char *src = (const char *)in->data +
                                      (base[r] + sub_offset(row, e->nrdim, e->rsize, in->rstride)) * (int64_t)es[r];
                    if (contig[r]) {
                        ptr[r] = src + co[0] * (int64_t)es[r];
                        break;
                    }
                    if (flat[r])
                        fc_cpu_broadcast(reg, src + co[0] * (int64_t)es[r], es[r], len);
                    else
                        gather_elems(reg, src, co, len, es[r]);
                    ptr[r] = reg;
                    break;
                }
                default:
                    fn[r](reg, ptr[in->a], in->b >= 0 ? ptr[in->b] : NULL, in->c >= 0 ? ptr[in->c] : NULL, len);
                    ptr[r] = reg;
                    break;
                }
            }
            char *dst = (char *)m->c + (base[n] + sub_offset(row, e->nrdim, e->rsize, e->out_rstride)) * (int64_t)es[n];
            const int64_t *co = coff + (size_t)n * (size_t)nc + j0;
            if (contig[n])
                memcpy(dst + co[0] * (int64_t)es[n], ptr[n - 1], (size_t)len * es[n]);
            else
                fc_cpu_scatter_elems(dst, ptr[n - 1], co, len, es[n]);
        }
    }
}

/* ---- operands read through index arithmetic (FcMatmul.a_ix / b_ix: implicit GEMM) ----
 * The panels are packed straight from the source: each element's offset is the sum of its row's
 * and its column's (and the batch item's), and it is 0 unless each bound's value, likewise a sum
 * of the three parts, is in [lo, hi). The products are those the materialised matrix gives, in
 * the same order over k: only where A and B come from changes. */

/* Offsets off[x] and bound parts part[q * n + x] of indices x0..x0 + n of o's rows (cols false)
 * or columns: the sub-indices of x times the strides and the bounds' coefficients. */
static void ix_span(const FcMmOperand *o, bool cols, int64_t x0, int64_t n, int64_t *off, int64_t *part)
{
    int nd = cols ? o->ncdim : o->nrdim;
    const int64_t *size = cols ? o->csize : o->rsize, *stride = cols ? o->cstride : o->rstride;
    int64_t idx[FC_MAX_DIMS], x = x0;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = x % size[d];
        x /= size[d];
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t v = 0;
        for (int d = 0; d < nd; d++)
            v += stride[d] * idx[d];
        off[i] = v;
        for (int q = 0; q < o->nbound; q++) {
            const int64_t *c = cols ? o->bound[q].ccoef : o->bound[q].rcoef;
            v = 0;
            for (int d = 0; d < nd; d++)
                v += c[d] * idx[d];
            part[q * n + i] = v;
        }
        for (int d = nd - 1; d >= 0 && ++idx[d] == size[d]; d--)
            idx[d] = 0;
    }
}

/* The batch item's parts of o's bounds, bpart[q]: batch item bi's sub-indices times the bounds'
 * coefficients (once per packed block, not per row: it takes a division per batch dim). */
static void ix_batch_parts(const FcMatmul *m, const FcMmOperand *o, int64_t bi, int64_t *bpart)
{
    for (int q = 0; q < o->nbound; q++) {
        int64_t v = 0, b = bi;
        for (int d = m->nbatch - 1; d >= 0; d--) {
            v += b % m->batch[d] * o->bound[q].bcoef[d];
            b /= m->batch[d];
        }
        bpart[q] = v;
    }
}

/* The bounds of o for the batch item whose parts are bpart (ix_batch_parts) and one row (or
 * column) whose parts are part[q * n + x]: the other part must be in [lo[q], lo[q] + span[q])
 * (span 0: nowhere), saturated. */
static void ix_limits(const FcMmOperand *o, const int64_t *bpart, const int64_t *part, int64_t n, int64_t x,
                      int64_t *lo, uint64_t *span)
{
    for (int q = 0; q < o->nbound; q++) {
        int64_t v = part[q * n + x] + bpart[q], l, h;
        if (__builtin_sub_overflow(o->bound[q].lo, v, &l))
            l = v > 0 ? INT64_MIN : INT64_MAX;
        if (__builtin_sub_overflow(o->bound[q].hi, v, &h))
            h = v > 0 ? INT64_MIN : INT64_MAX;
        lo[q] = l;
        span[q] = h > l ? (uint64_t)h - (uint64_t)l : 0;
    }
}

/* Whether the element whose other parts are part[q * n + y] is inside o's bounds: one unsigned
 * comparison per bound, no branch. */
static inline bool ix_inside(int nb, const int64_t *lo, const uint64_t *span, const int64_t *part, int64_t n, int64_t y)
{
    bool in = true;
    for (int q = 0; q < nb; q++)
        in &= (uint64_t)part[q * n + y] - (uint64_t)lo[q] < span[q];
    return in;
}

/* int64s of a thread's scratch that ix_span needs for o's panels: offsets and bound parts of
 * up to rows + cols indices, and pack_a's runs of k (ix_runs) or pack_b's runs of columns
 * (ix_segments, cols + 1 of them: rows >= 1). */
static size_t ix_words(const FcMmOperand *o, int64_t rows, int64_t cols)
{
    return o ? (size_t)(2 + o->nbound) * (size_t)(rows + cols) : 0;
}

/* run[p]: how many indices from p on (of n) have the bound parts of p: a run that is inside the
 * bounds or outside as a whole (a convolution's patch along ci, for one tap). */
static void ix_runs(int nb, const int64_t *part, int64_t n, int64_t *run)
{
    if (n <= 0)
        return;
    run[n - 1] = 1;
    for (int64_t p = n - 2; p >= 0; p--) {
        bool same = true;
        for (int q = 0; q < nb; q++)
            same &= part[q * n + p] == part[q * n + p + 1];
        run[p] = same ? run[p + 1] + 1 : 1;
    }
}

/* Bound parts and offsets up to this size are summed and compared exactly in int64 (ix_interval):
 * the unsigned test of ix_inside then agrees with the arithmetic one. */
#define IX_SMALL ((int64_t)1 << 60)

static inline bool ix_small(int64_t v)
{
    return v >= -IX_SMALL && v <= IX_SMALL;
}

/* Splits indices 0..n-1 (offsets off[x], bound parts part[q * n + x]) into runs seg[g]..seg[g +
 * 1] - 1, g < the count returned, along which the offset and every part step by their own
 * constants and the parts stay ix_small (a convolution's output row, for one tap's bounds), or
 * single indices where not; seg: n + 1 words. */
static int64_t ix_segments(int nb, const int64_t *off, const int64_t *part, int64_t n, int64_t *seg)
{
    int64_t ns = 0;
    for (int64_t j = 0; j < n;) {
        bool small = true;
        for (int q = 0; q < nb; q++)
            small &= ix_small(part[q * n + j]);
        int64_t e = j + 1;
        for (; small && e < n; e++) {
            bool same = off[e] - off[e - 1] == off[j + 1] - off[j];
            for (int q = 0; q < nb; q++) {
                const int64_t *pq = part + q * n;
                same &= ix_small(pq[e]) && pq[e] - pq[e - 1] == pq[j + 1] - pq[j];
            }
            if (!same)
                break;
        }
        seg[ns++] = j;
        j = e;
    }
    seg[ns] = n;
    return ns;
}

static int64_t floor_div(int64_t a, int64_t b)       /* b > 0 */
{
    return a / b - (a % b != 0 && a < 0);
}

/* The indices t of [0, len) of a segment (parts part[q * n + j0 + t], ix_segments's) inside the
 * bounds (lo, span: ix_limits's, each ix_small) as [*t0, *t1): where 0 <= c + d t - lo < span
 * for every bound, c the part at t = 0 and d its step. */
static inline void ix_interval(int nb, const int64_t *lo, const uint64_t *span, const int64_t *part, int64_t n,
                               int64_t j0, int64_t len, int64_t *t0, int64_t *t1)
{
    int64_t a = 0, b = len;
    for (int q = 0; q < nb && a < b; q++) {
        const int64_t *pq = part + q * n + j0;
        int64_t x = pq[0] - lo[q], sp = (int64_t)span[q], d = len > 1 ? pq[1] - pq[0] : 0, l, h;
        if (d == 0) {
            l = 0;
            h = x >= 0 && x < sp ? len : 0;
        } else if (d == 1) {            /* a convolution's patch along a spatial dim */
            l = -x;
            h = sp - x;
        } else if (d == -1) {
            l = x - sp + 1;
            h = x + 1;
        } else if (d > 0) {             /* -x <= d t < sp - x */
            l = -floor_div(x, d);
            h = -floor_div(x - sp, d);
        } else {                        /* x - sp < e t <= x, e = -d */
            l = floor_div(x - sp, -d) + 1;
            h = floor_div(x, -d) + 1;
        }
        a = l > a ? l : a;
        b = h < b ? h : b;
    }
    *t0 = a;
    *t1 = b > a ? b : a;
}

/* Whether an operand (batch strides bstride, index arithmetic o or NULL) is the same for every
 * batch item of m: it moves with no batch dim of more than one item. */
static bool same_for_items(const FcMatmul *m, const int64_t *bstride, const FcMmOperand *o)
{
    for (int d = 0; d < m->nbatch; d++) {
        if (m->batch[d] <= 1)
            continue;
        if (bstride[d] != 0)
            return false;
        for (int q = 0; o && q < o->nbound; q++)
            if (o->bound[q].bcoef[d] != 0)
                return false;
    }
    return true;
}

/* Whether o (NULL: plain strides) describes a rows x cols operand this file can pack. */
static bool ix_valid(const FcMmOperand *o, int64_t rows, int64_t cols, int nbatch)
{
    if (!o)
        return true;
    if (o->nrdim < 0 || o->nrdim > FC_MAX_DIMS || o->ncdim < 0 || o->ncdim > FC_MAX_DIMS || o->nbound < 0 ||
        o->nbound > FC_MM_MAX_BOUNDS || nbatch > FC_MAX_DIMS)
        return false;
    int64_t r = 1, c = 1;
    for (int d = 0; d < o->nrdim; d++)
        if (o->rsize[d] <= 0 || __builtin_mul_overflow(r, o->rsize[d], &r))
            return false;
    for (int d = 0; d < o->ncdim; d++)
        if (o->csize[d] <= 0 || __builtin_mul_overflow(c, o->csize[d], &c))
            return false;
    return (r == rows || rows == 0) && (c == cols || cols == 0);
}

/* Copies n <= 64 bytes by moves of fixed sizes, largest first: a run of a gathered panel row is
 * short (at most a panel's MM_NR_BYTES, a convolution's output row cut at the panels' edges), and
 * a call to memcpy for each (what a copy loop compiles to) costs more than the copy. */
static inline void copy_run(void *restrict d, const void *restrict s, size_t n)
{
    char *dp = d;
    const char *sp = s;
    if (n == 64) {
        memcpy(dp, sp, 64);
        return;
    }
    if (n & 32) {
        memcpy(dp, sp, 32);
        dp += 32, sp += 32;
    }
    if (n & 16) {
        memcpy(dp, sp, 16);
        dp += 16, sp += 16;
    }
    if (n & 8) {
        memcpy(dp, sp, 8);
        dp += 8, sp += 8;
    }
    if (n & 4) {
        memcpy(dp, sp, 4);
        dp += 4, sp += 4;
    }
    for (size_t i = 0; i < (n & 3); i++)
        dp[i] = sp[i];
}

/* B[pc.., jc..] of batch item b (kc x nc) as column panels of NR, zero-padded: dst[jr][p][j]. */
#define DEF_PACK_B(s, T, A)                                                                        \
    /* bo: the batch item's offset from m->b; ixs: ix_words of scratch when m->b_ix */            \
    static void pack_b_##s(const FcMatmul *m, int64_t bi, int64_t bo, int64_t pc, int64_t kc,      \
                           int64_t jc, int64_t nc, A *restrict bpack, int64_t *ixs)               \
    {                                                                                              \
        const int NR = MM_NR(T);                                                                   \
        const FcMmOperand *o = m->b_ix;                                                            \
        if (o) {                                                                                   \
            int nb = o->nbound;                                                                    \
            int64_t *koff = ixs, *kpart = koff + kc, *coff = kpart + nb * kc, *cpart = coff + nc;  \
            int64_t lo[FC_MM_MAX_BOUNDS];                                                          \
            uint64_t span[FC_MM_MAX_BOUNDS];                                                       \
            int64_t *seg = cpart + nb * nc, bpart[FC_MM_MAX_BOUNDS];                               \
            ix_batch_parts(m, o, bi, bpart);                                                       \
            ix_span(o, false, pc, kc, koff, kpart);                                                \
            ix_span(o, true, jc, nc, coff, cpart);                                                 \
            int64_t nseg = ix_segments(nb, coff, cpart, nc, seg);                                  \
            const T *src = (const T *)m->b;                                                        \
            for (int64_t p = 0; p < kc; p++) {                                                     \
                ix_limits(o, bpart, kpart, kc, p, lo, span);                                       \
                bool small = true;                                                                 \
                for (int q = 0; q < nb; q++)                                                       \
                    small &= ix_small(lo[q]) && span[q] <= (uint64_t)IX_SMALL;                     \
                int64_t base = bo + koff[p];                                                       \
                for (int64_t jr = 0; jr < nc; jr += NR)                                            \
                    memset(bpack + jr * kc + p * NR, 0, NR * sizeof(A));                           \
                /* each segment's valid columns from its bounds' steps, or column by column */     \
                for (int64_t g = 0; g < nseg; g++) {                                               \
                    int64_t j0 = seg[g], len = seg[g + 1] - j0, t0 = 0, t1 = len;                  \
                    bool ranged = small && len > 1;                                                \
                    if (ranged)                                                                    \
                        ix_interval(nb, lo, span, cpart, nc, j0, len, &t0, &t1);                   \
                    if (ranged && coff[j0 + 1] - coff[j0] == 1)  /* contiguous: by panel rows */   \
                        for (int64_t j = j0 + t0, r; j < j0 + t1; j += r) {                        \
                            r = NR - j % NR < j0 + t1 - j ? NR - j % NR : j0 + t1 - j;             \
                            A *d = bpack + j / NR * NR * kc + p * NR + j % NR;                     \
                            const T *sv = src + base + coff[j];                                    \
                            if (sizeof(T) == sizeof(A))                                            \
                                copy_run(d, sv, (size_t)r * sizeof(A));                      \
                            else                                                                   \
                                for (int64_t e = 0; e < r; e++)                                    \
                                    d[e] = (A)sv[e];                                               \
                        }                                                                          \
                    else                                                                           \
                        for (int64_t j = j0 + t0; j < j0 + t1; j++)                                \
                            if (ranged || ix_inside(nb, lo, span, cpart, nc, j))                   \
                                bpack[j / NR * NR * kc + p * NR + j % NR] =                        \
                                    (A)src[base + coff[j]];                                        \
                }                                                                                  \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        const T *b = (const T *)m->b + bo;                                                         \
        for (int64_t jr = 0; jr < nc; jr += NR) {                                                  \
            A *dst = bpack + jr * kc;                                                              \
            int nr = nc - jr < NR ? (int)(nc - jr) : NR;                                           \
            for (int64_t p = 0; p < kc; p++) {                                                     \
                const T *src = b + (pc + p) * m->b_rs + (jc + jr) * m->b_cs;                       \
                int j = 0;                                                                         \
                if (m->b_cs == 1)                                                                  \
                    for (; j < nr; j++)                                                            \
                        dst[p * NR + j] = (A)src[j];                                               \
                else                                                                               \
                    for (; j < nr; j++)                                                            \
                        dst[p * NR + j] = (A)src[j * m->b_cs];                                     \
                for (; j < NR; j++)                                                                \
                    dst[p * NR + j] = 0;                                                           \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    /* A[i0.., pc..] of batch item bi (mc x kc) as row panels of MM_MR, zero-padded:              \
     * dst[ir][p][i]; ao, ixs as pack_b's. */                                                      \
    static void pack_a_##s(const FcMatmul *m, int64_t bi, int64_t ao, int64_t i0, int64_t mc,      \
                           int64_t pc, int64_t kc, A *restrict apack, int64_t *ixs)                \
    {                                                                                              \
        const FcMmOperand *o = m->a_ix;                                                            \
        int64_t *roff = ixs, *rpart = NULL, *koff = NULL, *kpart = NULL, *krun = NULL;             \
        int nb = 0;                                                                                \
        int64_t bpart[FC_MM_MAX_BOUNDS];                                                           \
        if (o) {                                                                                   \
            nb = o->nbound;                                                                        \
            ix_batch_parts(m, o, bi, bpart);                                                       \
            rpart = roff + mc;                                                                     \
            koff = rpart + nb * mc;                                                                \
            kpart = koff + kc;                                                                     \
            krun = kpart + nb * kc;                                                                \
            ix_span(o, false, i0, mc, roff, rpart);                                                \
            ix_span(o, true, pc, kc, koff, kpart);                                                 \
            ix_runs(nb, kpart, kc, krun);                                                          \
        }                                                                                          \
        for (int64_t ir = 0; ir < mc; ir += MM_MR) {                                               \
            A *dst = apack + ir * kc;                                                              \
            int mr = mc - ir < MM_MR ? (int)(mc - ir) : MM_MR;                                     \
            if (mr == MM_MR && o) {                                                                \
                /* a whole panel, run by run: the rows inside a run's bounds together, so that     \
                 * the panel is written in order */                                                \
                int64_t lo[MM_MR][FC_MM_MAX_BOUNDS];                                               \
                uint64_t span[MM_MR][FC_MM_MAX_BOUNDS];                                            \
                const T *src[MM_MR];                                                               \
                for (int i = 0; i < MM_MR; i++) {                                                  \
                    ix_limits(o, bpart, rpart, mc, ir + i, lo[i], span[i]);                        \
                    src[i] = (const T *)m->a + ao + roff[ir + i];                                  \
                }                                                                                  \
                for (int64_t p = 0, r; p < kc; p += r) {                                           \
                    r = krun[p];                                                                   \
                    int in = 0;                                                                    \
                    for (int i = 0; i < MM_MR; i++)                                                \
                        in |= ix_inside(nb, lo[i], span[i], kpart, kc, p) << i;                    \
                    if (in == (1 << MM_MR) - 1)                                                    \
                        for (int64_t t = p; t < p + r; t++) {                                      \
                            int64_t x = koff[t];                                                   \
                            _Pragma("GCC unroll 8") for (int i = 0; i < MM_MR; i++)                \
                                dst[t * MM_MR + i] = (A)src[i][x];                                 \
                        }                                                                          \
                    else                                                                           \
                        for (int64_t t = p; t < p + r; t++)                                        \
                            for (int i = 0; i < MM_MR; i++)                                        \
                                dst[t * MM_MR + i] = in >> i & 1 ? (A)src[i][koff[t]] : (A)0;      \
                }                                                                                  \
                continue;                                                                          \
            }                                                                                      \
            if (mr == MM_MR) {              /* a whole panel of plain rows, written in order */    \
                const T *src = (const T *)m->a + ao + (i0 + ir) * m->a_rs + pc * m->a_cs;          \
                for (int64_t p = 0; p < kc; p++)                                                   \
                    _Pragma("GCC unroll 8") for (int i = 0; i < MM_MR; i++)                        \
                        dst[p * MM_MR + i] = (A)src[i * m->a_rs + p * m->a_cs];                    \
                continue;                                                                          \
            }                                                                                      \
            for (int i = 0; i < MM_MR; i++) {                                                      \
                if (i >= mr) {                                                                     \
                    for (int64_t p = 0; p < kc; p++)                                               \
                        dst[p * MM_MR + i] = 0;                                                    \
                } else if (o) {                                                                    \
                    int64_t lo[FC_MM_MAX_BOUNDS];                                                  \
                    uint64_t span[FC_MM_MAX_BOUNDS];                                               \
                    ix_limits(o, bpart, rpart, mc, ir + i, lo, span);                              \
                    const T *src = (const T *)m->a;                                                \
                    int64_t base = ao + roff[ir + i];                                              \
                    for (int64_t p = 0, r; p < kc; p += r) {                                       \
                        r = krun[p];                                                               \
                        if (ix_inside(nb, lo, span, kpart, kc, p))                                 \
                            for (int64_t t = p; t < p + r; t++)                                    \
                                dst[t * MM_MR + i] = (A)src[base + koff[t]];                       \
                        else                                                                       \
                            for (int64_t t = p; t < p + r; t++)                                    \
                                dst[t * MM_MR + i] = 0;                                            \
                    }                                                                              \
                } else {                                                                           \
                    const T *src = (const T *)m->a + ao + (i0 + ir + i) * m->a_rs + pc * m->a_cs;  \
                    for (int64_t p = 0; p < kc; p++)                                               \
                        dst[p * MM_MR + i] = (A)src[p * m->a_cs];                                  \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    /* Task < bpack_tasks: all of B of batch item item0 + task / nnb, its column block task % nnb, \
     * into run->bshared (the block of columns jc.. of the item at (bi - item0) * k * npad + jc *  \
     * k, K block pc at pc * ldc); after them: row block task - bpack_tasks of A (of item 0, the   \
     * same for all) into run->ashared. */                                                         \
    static bool pack_task_##s(void *arg, int tid, int64_t task)                                    \
    {                                                                                              \
        const MmRun *run = arg;                                                                    \
        const FcMatmul *m = run->m;                                                                \
        const int NR = MM_NR(T);                                                                   \
        const int64_t KC = MM_KC(T), NC = MM_NC(T);                                                \
        int64_t ao, bo, co;                                                                        \
        if (task >= run->bpack_tasks) {                                                            \
            int64_t i0 = (task - run->bpack_tasks) * run->mblk;                                    \
            int64_t mc = m->m - i0 < run->mblk ? m->m - i0 : run->mblk;                            \
            batch_offsets(m, 0, &ao, &bo, &co);                                                    \
            for (int64_t pc = 0; pc < m->k; pc += KC) {                                            \
                if (m->interrupt && *m->interrupt)                                                 \
                    return false;                                                                  \
                int64_t mpad = (mc + MM_MR - 1) / MM_MR * MM_MR;                                   \
                pack_a_##s(m, 0, ao, i0, mc, pc, m->k - pc < KC ? m->k - pc : KC,                  \
                           (A *)run->ashared + i0 * m->k + pc * mpad, run->ixs[tid]);              \
            }                                                                                      \
            return true;                                                                           \
        }                                                                                          \
        int64_t nnb = (m->n + NC - 1) / NC, bi = run->item0 + task / nnb, jc = task % nnb * NC;    \
        int64_t nc = m->n - jc < NC ? m->n - jc : NC, ldc = (nc + NR - 1) / NR * NR;               \
        batch_offsets(m, bi, &ao, &bo, &co);                                                       \
        A *base = (A *)run->bshared + (run->bcast_b ? 0 : bi - run->item0) * m->k * run->npad +    \
                  jc * m->k;                                                                       \
        for (int64_t pc = 0; pc < m->k; pc += KC) {                                                \
            if (m->interrupt && *m->interrupt)                                                     \
                return false;                                                                      \
            pack_b_##s(m, bi, bo, pc, m->k - pc < KC ? m->k - pc : KC, jc, nc, base + pc * ldc,    \
                       run->ixs[tid]);                                                             \
        }                                                                                          \
        return true;                                                                               \
    }

/* One task: rows [i0, i0 + mc) of batch item bi. T is the element type, A the arithmetic type. */
#define DEF_MATMUL(s, T, A)                                                                        \
    static bool mm_task_##s(void *arg, int tid, int64_t task)                                      \
    {                                                                                              \
        const MmRun *run = arg;                                                                    \
        const FcMatmul *m = run->m;                                                                \
        const int NR = MM_NR(T);                                                                   \
        const int64_t KC = MM_KC(T), NC = MM_NC(T);                                                \
        task += run->task0;                                                                        \
        int64_t bi = task / (run->nmb * run->nnt), rb = task % (run->nmb * run->nnt);            \
        int64_t i0 = rb / run->nnt * run->mblk, j0 = rb % run->nnt * run->ncol;                    \
        int64_t j1 = m->n - j0 < run->ncol ? m->n : j0 + run->ncol;                                \
        int64_t mc = m->m - i0 < run->mblk ? m->m - i0 : run->mblk;                                \
        int64_t ao, bo, co;                                                                        \
        batch_offsets(m, bi, &ao, &bo, &co);                                                       \
        T *c = (T *)m->c + co + i0 * m->c_rs;                                                      \
        A *apack = (A *)(void *)run->scratch[tid];                                                 \
        A *bpack = (A *)(void *)(run->scratch[tid] + run->a_bytes);                                \
        const A *bshared = run->bshared;                                                           \
        int64_t bo_pack = (run->bcast_b ? 0 : bi - run->item0) * m->k * run->npad;                 \
        A *cbuf = (A *)(void *)(run->scratch[tid] + run->a_bytes + run->b_bytes);                  \
        for (int64_t jc = j0; jc < j1; jc += NC) {                                                 \
            int64_t nc = m->n - jc < NC ? m->n - jc : NC;                                          \
            int64_t ldc = (nc + NR - 1) / NR * NR;                                                 \
            memset(cbuf, 0, (size_t)(mc * ldc) * sizeof(A));                                       \
            for (int64_t pc = 0; pc < m->k; pc += KC) {                                            \
                int64_t kc = m->k - pc < KC ? m->k - pc : KC;                                      \
                if (m->interrupt && *m->interrupt)                                                 \
                    return false;                                                                  \
                /* B[pc.., jc..] as column panels of NR: packed once for all tasks, or here */    \
                const A *bp = bshared ? bshared + bo_pack + jc * m->k + pc * ldc : bpack;          \
                if (!bshared)                                                                      \
                    pack_b_##s(m, bi, bo, pc, kc, jc, nc, bpack, run->ixs[tid]);                   \
                const A *ap = apack;                                                               \
                if (run->ashared)                                                                  \
                    ap = (const A *)run->ashared + i0 * m->k +                                     \
                         pc * ((mc + MM_MR - 1) / MM_MR * MM_MR);                                  \
                else                                                                               \
                    pack_a_##s(m, bi, ao, i0, mc, pc, kc, apack, run->ixs[tid]);                   \
                if (run->block) {                                                                  \
                    run->block(kc, ap, mc, bp, nc, cbuf, ldc);                                     \
                    continue;                                                                      \
                }                                                                                  \
                for (int64_t ir = 0; ir < mc; ir += MM_MR) {                                       \
                    int mr = mc - ir < MM_MR ? (int)(mc - ir) : MM_MR;                             \
                    for (int64_t jr = 0; jr < nc; jr += NR) {                                      \
                        int nr = nc - jr < NR ? (int)(nc - jr) : NR;                               \
                        ukernel_##s(run->avx2, kc, ap + ir * kc, bp + jr * kc,                     \
                                    cbuf + ir * ldc + jr, ldc, mr, nr);                            \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            if (m->epi)                                                                            \
                epi_block(m, bi, i0, jc, mc, nc, cbuf, ldc,                                        \
                          run->scratch[tid] + run->a_bytes + run->b_bytes + run->c_bytes);         \
            else                                                                                   \
                for (int64_t i = 0; i < mc; i++) {                                                 \
                    T *dst = c + i * m->c_rs + jc * m->c_cs;                                       \
                    const A *src = cbuf + i * ldc;                                                 \
                    for (int64_t j = 0; j < nc; j++)                                               \
                        dst[j * m->c_cs] = (T)src[j];                                              \
                }                                                                                  \
        }                                                                                          \
        return true;                                                                               \
    }

#define DEF_GEMM(s, T, A) DEF_PACK_B(s, T, A) DEF_MATMUL(s, T, A)
DEF_GEMM(f32, float, float)
DEF_GEMM(f64, double, double)
DEF_GEMM(i32, int32_t, uint32_t)
DEF_GEMM(i64, int64_t, uint64_t)

/* c10::BFloat16(float) on the host (round_to_nearest_even): a NaN is 0x7FC0. */
static inline uint16_t bf16_scalar(float f)
{
    return f != f ? 0x7FC0 : fc_f32_to_bf16(f);
}

/* A bfloat16 product with round_steps, as PyTorch 1.13's scalar CPU kernels for small products
 * compute it in c10::BFloat16 (cpublas gemm_notrans_, gemm_transb_ and gemm_transab_, gemv,
 * dot_naive, baddbmm_cpu_kernel): from +0, each product and each partial sum rounded, in order of
 * k. Only products of at most 4096 multiply-adds in all come here (fc_matmul), so one plain loop. */
static void mm_bf16_steps(const FcMatmul *m, int64_t nbatch)
{
    const uint16_t *a = m->a, *b = m->b;
    uint16_t *c = m->c;
    for (int64_t bi = 0; bi < nbatch; bi++) {
        int64_t ao, bo, co;
        batch_offsets(m, bi, &ao, &bo, &co);
        for (int64_t i = 0; i < m->m; i++)
            for (int64_t j = 0; j < m->n; j++) {
                uint16_t acc = 0;
                for (int64_t l = 0; l < m->k; l++) {
                    float x = fc_bf16_to_f32(a[ao + i * m->a_rs + l * m->a_cs]);
                    float y = fc_bf16_to_f32(b[bo + l * m->b_rs + j * m->b_cs]);
                    acc = bf16_scalar(fc_bf16_to_f32(acc) + fc_bf16_to_f32(bf16_scalar(x * y)));
                }
                c[co + i * m->c_rs + j * m->c_cs] = acc;
            }
    }
}

FcStatus fc_cpu_matmul(CpuBackend *be, const FcMatmul *m, FcError *err)
{
    CpuTaskFn fn, pack;
    size_t es;
    if (m->round_steps) {
        if (m->dtype != FC_BFLOAT16 || m->epi || m->a_ix || m->b_ix || m->nbatch < 0 || m->nbatch > FC_MAX_DIMS ||
            m->m < 0 || m->n < 0 || m->k < 0) {
            snprintf(err->msg, sizeof err->msg, "cpu matmul: malformed product");
            return FC_ERR_VALUE;
        }
        int64_t nbatch = 1;
        for (int d = 0; d < m->nbatch; d++)
            nbatch *= m->batch[d];
        mm_bf16_steps(m, nbatch);
        return FC_OK;
    }
    switch (m->dtype) {
    case FC_FLOAT32: fn = mm_task_f32; pack = pack_task_f32; es = sizeof(float); break;
    case FC_FLOAT64: fn = mm_task_f64; pack = pack_task_f64; es = sizeof(double); break;
    case FC_INT32: fn = mm_task_i32; pack = pack_task_i32; es = sizeof(int32_t); break;
    case FC_INT64: fn = mm_task_i64; pack = pack_task_i64; es = sizeof(int64_t); break;
    default:
        snprintf(err->msg, sizeof err->msg, "\"addmm_impl_cpu_\" not implemented for '%s'", fc_dtype_name(m->dtype));
        return FC_ERR_RUNTIME;
    }
    if (m->nbatch < 0 || m->nbatch > FC_MAX_DIMS || m->m < 0 || m->n < 0 || m->k < 0) {
        snprintf(err->msg, sizeof err->msg, "cpu matmul: malformed product");
        return FC_ERR_VALUE;
    }
    if (!ix_valid(m->a_ix, m->m, m->k, m->nbatch) || !ix_valid(m->b_ix, m->k, m->n, m->nbatch)) {
        snprintf(err->msg, sizeof err->msg, "cpu matmul: malformed operand");
        return FC_ERR_VALUE;
    }
    if (m->epi && !epi_valid(m)) {
        snprintf(err->msg, sizeof err->msg, "cpu matmul: malformed epilogue");
        return FC_ERR_VALUE;
    }
    MmRun run = {.m = m, .nbatch = 1,
#if MM_AVX
                 .avx2 = __builtin_cpu_supports("avx2"),
#endif
    };
#if MM_AVX
    if (__builtin_cpu_supports("avx512f"))
        run.block = m->dtype == FC_FLOAT32 ? block512_f32 : m->dtype == FC_FLOAT64 ? block512_f64 : NULL;
#endif
    for (int d = 0; d < m->nbatch; d++)
        run.nbatch *= m->batch[d];
    if (run.nbatch <= 0 || m->m == 0 || m->n == 0)
        return FC_OK;
    int nr = (int)(MM_NR_BYTES / es);
    int64_t kc = 1024 / (int64_t)es, nc = 256;
    /* Work per thread decides the thread count; rows per task shrink until there are a few
     * tasks per thread (results do not depend on it: each element's sum runs in K order). */
    double madds = (double)run.nbatch * (double)m->m * (double)m->n * (double)(m->k > 0 ? m->k : 1);
    int nth = madds < MM_SMALL ? 1 : fc_cpu_clamp_threads(be, m->nthreads);
    run.mblk = MM_MC;
    /* Batch items enough for the threads and a few row blocks each: one task per item, which
     * packs its B once (per-image products, as a convolution's). */
    if (m->m <= 4 * MM_MC && run.nbatch >= 4 * (int64_t)nth)
        run.mblk = (m->m + MM_MR - 1) / MM_MR * MM_MR;
    else if (nth > 1) {
        int64_t want = 4 * (int64_t)nth;
        int64_t per_batch = (want + run.nbatch - 1) / run.nbatch;
        int64_t rows = (m->m + per_batch - 1) / per_batch;
        rows = (rows + MM_MR - 1) / MM_MR * MM_MR;
        if (rows < run.mblk)
            run.mblk = rows;
    }
    if (run.mblk > m->m)
        run.mblk = (m->m + MM_MR - 1) / MM_MR * MM_MR;
    run.nmb = (m->m + run.mblk - 1) / run.mblk;
    int64_t nnb = (m->n + nc - 1) / nc;
    run.ncol = nnb * nc;
    run.nnt = 1;
    if (m->b_ix && run.nmb >= 2 && m->m <= 4 * MM_MC) {
        /* A gathered B (a convolution's patch, as ATen's per-image product) is not packed once
         * for all row blocks, which would write it whole as the im2col matrix did: the tasks
         * take all the rows and split the columns instead, each packing its columns of B once. */
        int64_t per_batch = (4 * (int64_t)nth + run.nbatch - 1) / run.nbatch;
        int64_t blocks = (nnb + per_batch - 1) / per_batch;
        run.mblk = (m->m + MM_MR - 1) / MM_MR * MM_MR;
        run.nmb = 1;
        run.ncol = blocks * nc;
        run.nnt = (nnb + blocks - 1) / blocks;
    }
    int64_t ntasks = run.nbatch * run.nmb * run.nnt;
    if (ntasks < nth)
        nth = (int)ntasks;
    int64_t kmax = m->k < kc ? m->k : kc, nmax = m->n < nc ? m->n : nc;
    int64_t ldc = (nmax + nr - 1) / nr * nr;
    run.a_bytes = ((size_t)(run.mblk * (kmax > 0 ? kmax : 1)) * es + 63) & ~(size_t)63;
    run.b_bytes = ((size_t)(ldc * (kmax > 0 ? kmax : 1)) * es + 63) & ~(size_t)63;
    run.c_bytes = ((size_t)(run.mblk * ldc) * es + 63) & ~(size_t)63;
    size_t e_bytes = m->epi ? epi_bytes(m->epi, nmax) : 0;
    size_t ix_a = ix_words(m->a_ix, run.mblk, kmax), ix_b = ix_words(m->b_ix, kmax, nmax);
    size_t x_bytes = (ix_a > ix_b ? ix_a : ix_b) * sizeof(int64_t);
    run.scratch = mem_calloc((size_t)nth, sizeof *run.scratch);
    run.ixs = mem_calloc((size_t)nth, sizeof *run.ixs);
    FcStatus st = FC_OK;
    if (!run.scratch || !run.ixs)
        goto nomem;
    for (int i = 0; i < nth; i++) {
        size_t before = run.a_bytes + run.b_bytes + run.c_bytes + e_bytes;
        if (!(run.scratch[i] = fc_cpu_aligned_alloc(before + x_bytes)))
            goto nomem;
        run.ixs[i] = (int64_t *)(void *)(run.scratch[i] + before);
    }
    /* B is packed once when several tasks would each pack it again: an item's row blocks, or all
     * items when B is the same for each (a convolution's weights). Items run in groups whose
     * packed B fits MM_SHARED_B_MAX (a gathered B, which packed whole is the im2col matrix that
     * implicit GEMM avoids: MM_GATHER_B_MAX), so that the copy stays bounded. An A that is the
     * same for every item is packed once too: the tasks then pack nothing of it. */
    run.npad = (nnb - 1) * nc + ((m->n - (nnb - 1) * nc) + nr - 1) / nr * nr;
    run.bcast_b = same_for_items(m, m->b_bstride, m->b_ix);
    double per_item = (double)m->k * (double)run.npad * (double)es;
    double cap = m->b_ix ? MM_GATHER_B_MAX : MM_SHARED_B_MAX;
    int64_t group = run.nbatch;
    if (m->k > 0 && per_item <= cap && (run.nmb >= 2 || (run.bcast_b && run.nbatch >= 2))) {
        if (!run.bcast_b && (double)run.nbatch * per_item > cap)
            group = (int64_t)(cap / per_item);
        if (!(run.bshared = fc_cpu_aligned_alloc((size_t)(per_item * (double)(run.bcast_b ? 1 : group)))))
            goto nomem;
    }
    double apacked = (double)run.nmb * (double)run.mblk * (double)m->k * (double)es;
    if (run.nbatch >= 2 && m->k > 0 && apacked <= MM_SHARED_B_MAX && same_for_items(m, m->a_bstride, m->a_ix) &&
        !(run.ashared = fc_cpu_aligned_alloc((size_t)apacked)))
        goto nomem;
    for (int64_t g0 = 0; g0 < run.nbatch; g0 += group) {
        int64_t gn = run.nbatch - g0 < group ? run.nbatch - g0 : group;
        run.item0 = g0;
        run.task0 = g0 * run.nmb * run.nnt;
        run.bpack_tasks = run.bshared && (!run.bcast_b || g0 == 0) ? (run.bcast_b ? 1 : gn) * nnb : 0;
        int64_t npack = run.bpack_tasks + (run.ashared && g0 == 0 ? run.nmb : 0);
        int pth = npack < nth ? (int)npack : nth;
        if (npack > 0 && (!fc_cpu_parallel_for(be, pth, npack, pack, &run, m->interrupt) ||
                          (m->interrupt && *m->interrupt)))
            goto interrupted;
        /* A task stops early (returns false) only when interrupted. */
        int64_t gtasks = gn * run.nmb * run.nnt;
        pth = gtasks < nth ? (int)gtasks : nth;
        if (!fc_cpu_parallel_for(be, pth, gtasks, fn, &run, m->interrupt) || (m->interrupt && *m->interrupt))
            goto interrupted;
    }
    goto done;
interrupted:
    snprintf(err->msg, sizeof err->msg, "interrupted");
    st = FC_ERR_INTERRUPT;
    goto done;
nomem:
    snprintf(err->msg, sizeof err->msg, "out of memory");
    st = FC_ERR_NOMEM;
done:
    if (run.scratch)
        for (int i = 0; i < nth; i++)
            mem_free(run.scratch[i]);
    mem_free(run.scratch);
    mem_free(run.ixs);
    mem_free(run.bshared);
    mem_free(run.ashared);
    return st;
}
