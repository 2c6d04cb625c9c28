/* cpu_internal.h — what the files of the CPU backend share: the backend struct with its thread
 * pool, the parallel-for every executor uses, and the chunk operation tables.
 *
 * Private to backend/cpu/: nothing outside this folder includes it. Depends on backend.h (and so
 * on fcdim.h's kernel types) and pthreads, never on the interpreter. */
#ifndef TDL_CPU_INTERNAL_H
#define TDL_CPU_INTERNAL_H

#include "backend.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* ---- the pool's parallel-for (cpu_pool.c) ----
 *
 * A job is ntasks tasks numbered 0..ntasks-1, claimed in increasing order through an atomic
 * counter by nthreads threads (the caller is thread 0). A task function returns false to stop the
 * job: no task is claimed after that, the ones already claimed finish. Between tasks the job
 * checks *interrupt. */
typedef bool (*CpuTaskFn)(void *arg, int tid, int64_t task);

typedef struct CpuJob {
    CpuTaskFn fn;
    void *arg;
    int64_t ntasks;
    volatile int *interrupt;
    atomic_llong next;          /* next unclaimed task */
    atomic_int stop;            /* set by a failing task or an interrupt */
    atomic_int interrupted;
} CpuJob;

enum { CPU_CACHE_BLOCKS = 8 };

typedef struct CpuBackend {
    FcBackend base;             /* first: an FcBackend * is a CpuBackend * */
    int nthreads;               /* the most threads a job may use, the caller included */
    /* The pool: nthreads - 1 workers, started by the first job that wants more than one thread. */
    pthread_mutex_t mu;
    pthread_cond_t wake;        /* workers wait here for a new generation */
    pthread_cond_t done;        /* the caller waits here for active to drop to 0 */
    pthread_mutex_t busy;       /* held while a job uses the pool (a second caller runs alone) */
    pthread_t *workers;
    int nworkers;               /* started so far */
    bool pool_tried;
    bool quit;
    uint64_t gen;               /* bumped for each job */
    CpuJob *job;                /* the current job, until its caller has claimed its last task */
    int job_workers;            /* workers 0..job_workers-1 may take part in it */
    int active;                 /* workers working on it: the caller waits for these only (one
                                   that wakes after the job is closed never touches it) */
    /* Large blocks freed lately, kept for the next allocation of about their size (cpu_alloc):
     * memory fresh from the kernel is zeroed page by page as it is first touched. */
    pthread_mutex_t cache_mu;
    int ncache;
    void *cache[CPU_CACHE_BLOCKS];      /* oldest first */
    size_t cache_size[CPU_CACHE_BLOCKS];
    long cache_hits;
    /* Small blocks (a small op's result) freed lately, the same way: the allocator would first
     * merge every small chunk freed since its last large request (malloc_consolidate). */
    int nsmall;
    void *small[CPU_CACHE_BLOCKS];
    size_t small_size[CPU_CACHE_BLOCKS];
} CpuBackend;

/* Runs fn over ntasks tasks on up to nthreads threads (clamped to the pool). Returns false when
 * the job was interrupted (*interrupt became nonzero); a task that fails records its own error. */
bool fc_cpu_parallel_for(CpuBackend *be, int nthreads, int64_t ntasks, CpuTaskFn fn, void *arg,
                      volatile int *interrupt);

/* Stops and joins the pool's workers (destroy; none started is fine). */
void fc_cpu_pool_stop(CpuBackend *be);

/* The threads a kernel may really use: k's request clamped to [1, pool size]. */
int fc_cpu_clamp_threads(const CpuBackend *be, int nthreads);

/* 64-byte aligned allocation for scratch memory (NULL on failure; size 0 is fine). */
void *fc_cpu_aligned_alloc(size_t nbytes);

/* Runs the statement for i in [0, n): with the constant trip count FC_CHUNK for full chunks, so
 * that GCC vectorises it even at -O2 (its "very cheap" cost model takes only loops that need no
 * scalar epilogue); shorter ones (the chunks at the ends of rows) as a plain loop; longer ones
 * (chunks that span several loops) as a loop over a multiple of 32 positions, which it
 * vectorises too, and a plain loop over the rest. (Vectorising the short ones that way made
 * the elementwise chain of bench/fused.sh 40% slower.) */
#define CHUNK_LOOP(n, ...)                                                                         \
    do {                                                                                           \
        if ((n) == FC_CHUNK) {                                                                     \
            for (int i = 0; i < FC_CHUNK; i++) {                                                   \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
        } else if ((n) < FC_CHUNK) {                                                               \
            for (int i = 0; i < (n); i++) {                                                        \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
        } else {                                                                                   \
            int n32_ = (n) & ~31;                                                                  \
            for (int i = 0; i < n32_; i++) {                                                       \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
            for (int i = n32_; i < (n); i++) {                                                     \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* d[i] = *src for i < n, by element size, in loops GCC vectorises: a value that holds along a
 * row (s[idx] in x[idx] * s[idx]) is broadcast for every chunk of the row. A span (n over
 * FC_CHUNK) is written as whole chunks first: CHUNK_LOOP's loop over a multiple of 32 positions
 * stayed scalar here. */
#define BROADCAST_LOOP(T)                                                                          \
    do {                                                                                           \
        T v_, *q_ = d;                                                                             \
        memcpy(&v_, src, sizeof v_);                                                               \
        for (; n > FC_CHUNK; n -= FC_CHUNK, q_ += FC_CHUNK)                                        \
            CHUNK_LOOP(FC_CHUNK, q_[i] = v_);                                                      \
        CHUNK_LOOP(n, q_[i] = v_);                                                                 \
    } while (0)
static inline void fc_cpu_broadcast(void *d, const void *src, size_t es, int n)
{
    switch (es) {
    case 1:
        memset(d, *(const uint8_t *)src, (size_t)n);
        break;
    case 2:
        BROADCAST_LOOP(uint16_t);
        break;
    case 4:
        BROADCAST_LOOP(uint32_t);
        break;
    default:
        BROADCAST_LOOP(uint64_t);
        break;
    }
}
#undef BROADCAST_LOOP

/* dst[off[j]] = src[j] for j < n, elements of es bytes, in order: of duplicates the last stays. */
static inline void fc_cpu_scatter_elems(void *restrict dst, const void *restrict src, const int64_t *off, int n,
                                        size_t es)
{
#define SCATTER_(T)                                                                                \
    do {                                                                                           \
        T *d_ = dst;                                                                               \
        const T *s_ = src;                                                                         \
        for (int j = 0; j < n; j++)                                                                \
            d_[off[j]] = s_[j];                                                                    \
    } while (0)
    switch (es) {
    case 1: SCATTER_(uint8_t); break;
    case 2: SCATTER_(uint16_t); break;
    case 4: SCATTER_(uint32_t); break;
    default: SCATTER_(uint64_t); break;
    }
#undef SCATTER_
}

/* The chunk loops are compiled twice where the toolchain can dispatch at load time (GNU ifunc
 * on x86-64 Linux): for the baseline ISA and for AVX2, picked by the CPU the library runs on.
 * Both give the same bits (the same IEEE operations in the same order; without FMA, and ISO C
 * mode keeps GCC from contracting a * b + c anyway). Not under ThreadSanitizer: it instruments
 * the ifunc resolvers, which run before its runtime is set up. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CPU_NO_CLONES
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CPU_NO_CLONES
#endif
#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute) && !defined(CPU_NO_CLONES)
#if __has_attribute(target_clones)
#define CPU_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef CPU_CLONES
#define CPU_CLONES
#endif

/* The dtype of each type suffix used in generated function names. */
#define DT_b FC_BOOL
#define DT_i32 FC_INT32
#define DT_i64 FC_INT64
#define DT_f32 FC_FLOAT32
#define DT_f64 FC_FLOAT64
#define DT_u8 FC_UINT8
#define DT_i8 FC_INT8
#define DT_i16 FC_INT16
#define DT_f16 FC_FLOAT16
#define DT_bf16 FC_BFLOAT16

/* ---- chunk operations (cpu_ops.c) ----
 *
 * d[i] = op(a[i], b[i], c[i]) for i in [0, n), n <= FC_CHUNK; d never aliases an operand.
 * Returns 0, or CPU_EZERODIV for an integer division by zero. */
enum { CPU_OK = 0, CPU_EZERODIV = 1 };
typedef int (*CpuOpFn)(void *restrict d, const void *restrict a, const void *restrict b,
                       const void *restrict c, int n);

/* The function for an instruction's op and dtypes, or NULL when the backend does not take that
 * combination. Covers the unary, binary, comparison, WHERE and CAST ops. */
CpuOpFn fc_cpu_op_fn(FcOp op, FcDType dtype, FcDType src_dtype);

/* where(a[i] <cmp> *k, b[i], c[i]) for i in [0, n): a comparison with one value fused into the
 * select that reads it (the executor's rewrite of where(x > 0, ...)), *k of the compared dtype. */
typedef int (*CpuSelFn)(void *restrict d, const void *restrict a, const void *restrict b,
                        const void *restrict c, const void *k, int n);

/* The fused select for comparison cmp of src_dtype values choosing dtype values, or NULL. */
CpuSelFn fc_cpu_sel_fn(FcOp cmp, FcDType src_dtype, FcDType dtype);

/* Fills n values of dtype with a scalar (konst.f for floats, konst.i otherwise). */
void fc_cpu_fill(void *d, FcDType dtype, FcScalar v, int n);

/* Safe float-to-integer conversions: C's when in range, INT*_MIN otherwise and for NaN (what
 * x86's cvtt* instructions give). */
static inline int64_t cpu_f64_to_i64(double x)
{
    return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN;
}
static inline int32_t cpu_f64_to_i32(double x)
{
    return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN;
}

/* ---- reductions (cpu_reduce.c) ----
 *
 * Accumulators are doubles (float sums and products, float min/max) or int64 (integer sums and
 * products, which wrap, integer min/max, any/all), 8 bytes either way. A horizontal fold
 * combines a chunk into CPU_LANES accumulators (element i into lane i % CPU_LANES, so that the
 * loop vectorises and the order of the additions is fixed by the data alone); a vertical fold
 * combines a chunk elementwise into n accumulators. Arg reductions keep a value and an index. */
#define CPU_LANES 8

typedef enum CpuAccKind { CPU_ACC_F, CPU_ACC_I } CpuAccKind;

typedef struct CpuReducer {
    FcOp op;
    CpuAccKind kind;
    bool arg;                                   /* ARGMAX / ARGMIN */
    union { double f; int64_t i; } init;        /* the value of an empty reduction */
    /* acc[i % CPU_LANES] (hfold) or acc[i] (vfold) combined with x[i], i < n */
    void (*hfold)(void *restrict acc, const void *restrict x, int n);
    void (*vfold)(void *restrict acc, const void *restrict x, int n);
    /* acc[i] combined with other[i] (a later partial, or another lane) */
    void (*comb)(void *restrict acc, const void *restrict other, int n);
    /* Arg reductions: harg scans x[0..n) whose indices are index + i into one (val, idx);
     * varg updates (val[i], idx[i]) with x[i] at the same index; argcomb takes the later
     * partial's (val, idx) where it is strictly better. idx < 0: nothing seen yet. */
    void (*harg)(void *restrict val, int64_t *restrict idx, const void *restrict x, int n, int64_t index);
    void (*varg)(void *restrict val, int64_t *restrict idx, const void *restrict x, int n, int64_t index);
    void (*argcomb)(void *restrict val, int64_t *restrict idx, const void *restrict oval,
                    const int64_t *restrict oidx, int n);
    /* n accumulators (or, for arg reductions, indices) converted to the output dtype */
    void (*fin)(void *restrict out, const void *restrict acc, int n);
} CpuReducer;

/* Fills r for reduce op over values of dtype in giving dtype out; false when the backend does
 * not take that combination. */
bool fc_cpu_reducer_init(CpuReducer *r, FcOp op, FcDType in, FcDType out);
/* Sets n accumulators (and for arg reductions n indices) to the empty reduction. */
void fc_cpu_reducer_reset(const CpuReducer *r, void *acc, int64_t *idx, int n);

/* ---- executors ---- */

FcStatus fc_cpu_run_kernel(CpuBackend *be, const FcKernel *k, FcError *err);
/* A kernel planned once and run many times (FcBackend.prepare): fc_cpu_prepare checks and plans
 * k (its code must outlive the handle); fc_cpu_run_prepared runs the plan with the buffers,
 * output and interrupt of k, a kernel equal to the planned one but for those. */
FcStatus fc_cpu_prepare(CpuBackend *be, const FcKernel *k, void **handle, FcError *err);
FcStatus fc_cpu_run_prepared(CpuBackend *be, void *handle, const FcKernel *k, FcError *err);
void fc_cpu_release(void *handle);
FcStatus fc_cpu_matmul(CpuBackend *be, const FcMatmul *m, FcError *err);
/* A sum in PyTorch's at::sum order (cpu_cascade_sum.c). */
FcStatus fc_cpu_cascade_sum(CpuBackend *be, const FcOrderedSum *s, FcError *err);
/* TensorIterator's view of an ordered sum's operands (its reorder_dimensions over the output,
 * C-contiguous over the kept dims, the input and in2; then coalesce_dimensions): nd dims,
 * fastest first, the summed ones (output stride 0) before the kept ones (cpu_cascade_sum.c). */
typedef struct CpuSumIter {
    int nd;
    int64_t shape[FC_MAX_DIMS];
    int64_t ost[FC_MAX_DIMS], ist[FC_MAX_DIMS], ist2[FC_MAX_DIMS];     /* output, input, in2
                                                                           strides in elements */
} CpuSumIter;
void fc_cpu_sum_iter(const FcOrderedSum *s, CpuSumIter *it);
/* The reductions of one output at a time in TensorIterator's order: SERIAL sums, the general
 * path of NORM2, WELFORD (cpu_serial_sums.c). */
FcStatus fc_cpu_serial_sum(CpuBackend *be, const FcOrderedSum *s, FcError *err);
/* The sums of PyTorch's vectorised kernels: LANES along one dim, NORM2 where its kernel
 * vectorises (else fc_cpu_serial_sum), and the product PROD_VEC (cpu_vec_sums.c). */
FcStatus fc_cpu_vec_sum(CpuBackend *be, const FcOrderedSum *s, FcError *err);

/* The CPU backend's FcTarget: FC_CHUNK values per step, CPU_LANES accumulators. */
extern const FcTarget fc_cpu_target;
/* FcBackend.supports: whether the executor has an op function or fold for instruction in (a of
 * dtype a_dtype); FC_ERR_TYPE with the message a kernel holding it is refused with. */
FcStatus fc_cpu_supports(const FcInstr *in, FcDType a_dtype, FcError *err);

#endif
