/* internal.h — what the files of fcdim/ share among themselves and nobody else: allocation of
 * tensors and IR nodes, the operand-to-node conversion, error formatting. Not for other folders
 * (they use fcdim.h). */
#ifndef TDL_FCDIM_INTERNAL_H
#define TDL_FCDIM_INTERNAL_H

#include "fcdim.h"
#include "mem.h"

#include <stdlib.h>
#include <string.h>

/* calloc for the small objects made on every operation (nodes, tensors): glibc's calloc skips
 * its per-thread cache and takes the arena's slow path, malloc does not. (The empty asm keeps
 * GCC from turning malloc + memset back into calloc.) */
static inline void *fc_zalloc(size_t bytes)
{
    void *p = mem_malloc(bytes);
    if (p) {
        __asm__ volatile("" : : "r"(p) : "memory");
        memset(p, 0, bytes);
    }
    return p;
}

/* Writes the message and returns status (for `return fc_errf(err, FC_ERR_VALUE, "...", ...)`). */
FcStatus fc_errf(FcError *err, FcStatus status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
FcStatus fc_nomem(FcError *err);
/* FC_OK when a tensor of this shape and dtype has a byte size that fits int64 (fc_shape_nbytes),
 * else PyTorch's RuntimeError "Storage size calculation overflowed with sizes=[...]": for the
 * results of operations whose shape is not a view's (a reduction, a broadcast). */
FcStatus fc_check_nbytes(int ndim, const int64_t *shape, FcDType dt, FcError *err);
/* PyTorch's RuntimeError for a view's shape whose element count overflows int64 (reshape,
 * expand, flatten): "numel: integer multiplication overflow". */
FcStatus fc_numel_overflow(FcError *err);
/* a * b wrapped in 64 bits, as PyTorch's stride products are (they overflow only for tensors
 * with no element, whose strides address nothing). */
static inline int64_t fc_mul_wrap(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
/* "[2, 3]" (as c10 prints an IntArrayRef) into buf (truncated to cap); returns buf. */
const char *fc_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape);

/* A tensor with refcnt 1, shape/strides arrays for ndim dims (zeroed), no storage, no node. */
FcTensor *fc_tensor_alloc(int ndim);
/* A stored tensor with t's dtype, device, shape, strides and offset over storage s (the view
 * retains s; the caller keeps its own reference), without t's levels or node: t again (a view
 * with other levels), over memory shared with t's, or over a copy of it. NULL on out-of-memory. */
FcTensor *fc_tensor_view_over(FcTensor *t, FcStorage *s);
/* Room for t's levels ([ndim], zeroed) in fc_tensor_alloc's block: t->levels points here when
 * set (so it is never freed on its own). */
FcDim **fc_tensor_level_room(FcTensor *t);

/* A node with refcnt 1 and arrays for nlev levels and the nin operands (each operand's lev_map
 * sized by in[k]->nlev; filled with FC_LEV_BCAST). Takes a reference to each operand. LOAD
 * nodes also get strides/shape arrays of nin entries. NULL on out-of-memory. */
FcNode *fc_node_new(FcOp op, FcDType dt, int nlev, const int64_t *size, int nin, FcNode *const *in);
/* Whether n's DAG holds more than cap distinct nodes (counted once when its per-path count
 * passes cap, and kept in n). */
bool fc_node_bigger(FcNode *n, uint32_t cap);
/* A stamp no walk of this thread's has used: a walk marks the nodes it has seen with it
 * (FcNode.mark). Nodes belong to one thread, as their reference counts do. */
uint64_t fc_walk_stamp(void);

/* The IR node that reads t over its own dims (level k = dim k): t's node when lazy, else a LOAD
 * of its storage. New reference, or NULL on out-of-memory. */
FcNode *fc_tensor_node(FcTensor *t);

/* n cast to dt over a domain of nlev levels (sizes size), n's levels going to the levels that
 * end at `end` (right-aligned; end = nlev: broadcast from the right), broadcast where n has size
 * 1. n is borrowed; a CAST to n's own dtype emits no instruction. NULL on out-of-memory. */
FcNode *fc_node_place(FcNode *n, FcDType dt, int nlev, const int64_t *size, int end);
/* A lazy tensor of node's shape and dtype, taking over the reference to node; registers it as a
 * reader of every storage that node's DAG loads (the union of the operands' reads and the
 * storages of the stored operands, passed as `from`). NULL on out-of-memory (node released). */
FcTensor *fc_tensor_from_node(FcNode *node, FcDevice dev, FcTensor *const *from, int nfrom);
/* n (fresh, consumed) computed as the narrow dtypes are (fc_dtype_compute): when its dtype or its
 * operands' is uint8, int8, int16, float16 or bfloat16, its operands are widened, it runs in the
 * compute dtype and a CAST rounds the result back. Nodes that only move values (CAST, WHERE,
 * LOAD, CONST, IOTA) are returned as they are; NULL when out of memory. */
FcNode *fc_node_widen(FcNode *n);
/* A Python number t (a wrapped number) that a kernel of dtype dt converts with
 * c10::checked_convert (where, clamp's bounds): FC_ERR_RUNTIME with torch's message when it
 * overflows dt (300 for uint8); FC_OK for anything else. */
FcStatus fc_check_wrapped(const FcTensor *t, FcDType dt, FcError *err);


/* Allocates a storage of nbytes on dev's backend. */
FcStatus fc_storage_new(FcCtx *ctx, FcDevice dev, size_t nbytes, FcStorage **out, FcError *err);

/* t's values as a stored tensor on device dev (t itself, a new reference, when it is stored
 * there): realised on its own device (and made dense there when it is not), then its bytes
 * copied with the backends' to_host/from_host (through host memory between two devices). */
FcStatus fc_move_device(FcCtx *ctx, FcTensor *t, FcDevice dev, FcTensor **out, FcError *err);

/* Unregisters a lazy tensor from the storages it reads (before its node is dropped). */
void fc_tensor_drop_reads(FcTensor *t);

/* The strides that view (oldshape, oldstride) as newshape (ATen's computeStride, as view and
 * reshape use it), or false when no view can: reshape then copies. */
bool fc_compute_stride(int on, const int64_t *oldshape, const int64_t *oldstride, int nn, const int64_t *newshape,
                       int64_t *newstride);
/* fc_expand's checks with its messages, without realising t (only its shape is read). */
FcStatus fc_expand_check(const FcTensor *t, int ndim, const int64_t *shape, FcError *err);
/* A scattered store (fcdim.h, FcKernel.scatter): index[g] is an int64 node over the levels of
 * the value stored; at[g] gives its stride, extent, wrap and message dim (reg unused). */
typedef struct FcScatter {
    int n;
    FcNode *index[FC_MAX_DIMS];
    FcGather at[FC_MAX_DIMS];
    bool accumulate;
    bool checked;               /* FcKernel.checked: cannot fail (a gradient's scatter-add) */
} FcScatter;
/* Writes value (a node of dst's dtype) into dst at offset + sum strides[l] * i_l (one stride per
 * level of value) plus the scattered indices, in the order of value's levels (duplicates: the
 * last one wins, or all are summed). Lazy readers of dst are realised first; a value or index
 * that reads dst is computed before anything is written. Nodes are borrowed. */
FcStatus fc_store_scattered(FcCtx *ctx, FcStorage *dst, int64_t offset, const int64_t *strides, FcNode *value,
                            const FcScatter *sc, FcError *err);

/* ---- gradients (autograd.c) ---- */
/* Whether the sums of PyTorch's orders (FcNode.order) are computed so, alone, on backend be: it
 * has ordered_sum and ctx does not fuse every sum (schedule.c). */
bool fc_sums_ordered(const FcCtx *ctx, const FcBackend *be);
extern _Thread_local bool fc_grad_off;      /* fc_set_grad_enabled(false) */
extern _Thread_local long fc_grad_live;     /* records alive: no walk for gradients while 0 */
extern _Thread_local long fc_products_live; /* nodes marked product alive: no walk for them while 0 */
/* Before a write into s: a leaf's contents may not be overwritten with gradients on (PyTorch's
 * message); counts the version. fc_grad_check_write: the test alone, its message naming a view
 * of the leaf when the write goes through one (view). */
FcStatus fc_grad_before_write(FcStorage *s, FcError *err);
FcStatus fc_grad_check_write(const FcStorage *s, bool view, FcError *err);
/* Realises the lazy tensors that read s (fc_storage_prepare_write without its autograd checks:
 * for a change of what s's contents mean, not of the contents). */
FcStatus fc_storage_realize_readers(FcCtx *ctx, FcStorage *s, FcError *err);
/* After value (over nlev levels with strides, plus scatters sc, or NULL) was written into dst at
 * offset: records the write when it needs a gradient. */
FcStatus fc_grad_after_write(FcCtx *ctx, FcStorage *dst, int64_t offset, const int64_t *strides, FcNode *value,
                             const FcScatter *sc, FcError *err);
/* The same whatever the gradient mode (a lazy tensor realised keeps the gradient it was made with). */
FcStatus fc_grad_record(FcCtx *ctx, FcStorage *dst, int64_t offset, const int64_t *strides, FcNode *value,
                        const FcScatter *sc, FcError *err);
/* A convolution a device's library computed (conv.c) while an operand needs a gradient: its
 * geometry (c: shapes, strides, paddings, stride, dilation, groups, transposed; no pointers),
 * its operands x and w (stored; references) and the memory format of its result. */
typedef struct FcLibConv {
    FcConv c;
    FcTensor *x, *w;
    FcMemoryFormat fmt;
    const char *op;             /* "conv2d", "conv_transpose2d" (--verbose) */
} FcLibConv;
/* Records y (stored, written by the library) as the library op lc (autograd.c's REC_LIB record;
 * lc's references are taken): its backward asks the library for the gradients of lc's operands
 * (fc_conv_library_grad) and, for one it declines, differentiates ref instead: the lazy tdl
 * reference of the same convolution (the stdlib's), whose levels are y's with the channel dim
 * split (n, groups, channels per group, h, w). Nothing is recorded with gradients off. */
FcStatus fc_grad_library(FcCtx *ctx, FcTensor *y, FcTensor *ref, const FcLibConv *lc, FcError *err);
/* dst, just copied from stored src on another device (fc_move_device), gets the gradient back there
 * when src requires grad and gradients are on (PyTorch's ToCopyBackward0). */
FcStatus fc_grad_move(FcCtx *ctx, FcTensor *src, FcTensor *dst, FcError *err);
/* The gradient of lc's operand x (which 0) or w (which 1) from dy (the cotangent of the
 * convolution's result, stored and dense) through the library of dy's device: *out a new stored
 * tensor of the operand's shape, or NULL when the library declines (a --verbose line says which
 * path runs that gradient and why either way). */
FcStatus fc_conv_library_grad(FcCtx *ctx, const FcLibConv *lc, FcTensor *dy, int which, FcTensor **out,
                              FcError *err);
/* ---- composed reads (index.c) ---- */
/* t[ix...] as a new tensor, never a view: what fc_index reads, with its checks and messages, but
 * a basic index too gives a lazy LOAD (of t's storage, or composed into t's node when t is lazy
 * and that node is a LOAD: no realisation), so the result shares no storage with t and a write
 * into either does not show in the other. For callers that want values, not PyTorch's views. */
FcStatus fc_index_read(FcCtx *ctx, FcTensor *t, int n, const FcIndex *ix, FcTensor **out, FcError *err);
/* ---- the kernel cache (kernel_cache.c) ---- */

/* What the scheduler reads of a DAG, the output's geometry and the context's settings, as words;
 * the storages loaded, in order of first appearance; and the values of its floating-point
 * constants (the kernel's parameters: not in the words unless scheduling reads them, see
 * kernel_cache.c), in walk order, with their nodes (borrowed from the DAG). */
typedef struct FcKey {
    uint64_t *w;
    size_t n, cap;
    uint64_t hash;
    FcStorage **st;
    int nst, capst;
    FcScalar *kv;
    const FcNode **kn;
    int nkv, capkv;
} FcKey;

/* A kept kernel's instruction that holds a parameter: its konst is slot `slot` of the key's kv. */
typedef struct FcKonstRef {
    int instr, slot;
} FcKonstRef;

/* A kept kernel: its code (owned; bufs, out and interrupt are each run's, and so are the
 * parameters' values, written into the code by run_kept) and its plan (owned: k.plan), the key's
 * storage each of its buffers loads, the instructions that hold parameters, the output strides
 * the scheduler chose (when it chose them), and the backend's prepared handle of it (or NULL). */
typedef struct FcCached {
    FcKey key;
    FcKernel k;
    FcPlan *plan;
    int *buf_of;
    FcKonstRef *kref;
    int nkref;
    int64_t strides[FC_MAX_DIMS];
    FcGather scatter[FC_MAX_DIMS];  /* k's scattered dims (k.scatter points here while it runs) */
    FcBackend *be;
    void *prep;
    uint64_t used;
} FcCached;

typedef struct FcKernelCache FcKernelCache;
typedef struct FcKernelCacheStats {
    int kept;
    uint64_t hits;
} FcKernelCacheStats;

/* The key of scheduling root on dev into out (NULL: a fresh storage) with out_strides at
 * out_offset (out_strides NULL: strides the scheduler chooses), scattered by sc (or NULL). False
 * on out-of-memory or a DAG too big to keep (*key is then empty). */
bool fc_key_make(FcKey *key, FcCtx *ctx, FcNode *root, const FcScatter *sc, FcDevice dev, const FcStorage *out,
                 const int64_t *out_strides, int64_t out_offset);
void fc_key_free(FcKey *key);
/* Frees key, or keeps its arrays for the context's next fc_key_make; *key is then empty. */
void fc_key_release(FcCtx *ctx, FcKey *key);
/* The kept kernel of key (now the most recently used), or NULL. */
FcCached *fc_kcache_find(FcCtx *ctx, const FcKey *key);
/* Keeps a copy of k, scheduled for key (taken when kept, and so is k->plan, which the copy
 * keeps and the backend prepares it with): bufs are the storages k loads, node_of the node each
 * instruction computes (its parameters are found by them), strides the output's when the
 * scheduler chose them (else NULL); be plans it when it can. The entry, or NULL when it could not
 * be kept (out of memory; key is then left to the caller). */
FcCached *fc_kcache_add(FcCtx *ctx, FcKey *key, const FcKernel *k, FcStorage *const *bufs,
                        const FcNode *const *node_of, const int64_t *strides, FcBackend *be);
void fc_kcache_free(FcCtx *ctx);
FcKernelCacheStats fc_kcache_stats(const FcCtx *ctx);

/* ---- lazy products (matmul.c) ---- */

/* The DAG root as one matrix product and its epilogue (FcMatmul.epi) when it is a pointwise
 * expression of one lazy product (FcNode.product, read once, covering the root's levels) and of
 * plain loads and constants, and be takes epilogues: run into out_storage at out_offset with
 * out_strides, or (out_strides NULL) into a new storage laid out as the product's levels are
 * (*new_storage, *new_strides); *done then. *done false: not that form, nothing done. */
FcStatus fc_product_root(FcCtx *ctx, FcBackend *be, const FcNode *root, FcDevice dev, FcStorage *out_storage,
                         int64_t out_offset, const int64_t *out_strides, FcStorage **new_storage, int64_t *new_strides,
                         bool *done, FcError *err);
/* Whether n, read at its own levels, is an operand the backend's GEMM can read through index
 * arithmetic (FcMmOperand): a load whose indices are affine in the levels (k + sum c * level),
 * under WHERE(mask, ., +0.0) whose masks are conjunctions of comparisons of such expressions,
 * each index of the load in its range wherever the masks hold. fc_contract keeps such an operand
 * lazy, so that the gather (a convolution's im2col matrix) is never written. */
bool fc_product_gather(const FcNode *n);
/* Lazy t (levels all ordered) as a product whose levels are merges of t's: consecutive runs of
 * group_len[0..ngroups) levels each flattened row-major into one positional dim of shape[g], as
 * fc_order's flatten of them gives, without realising it (FcNode.merge): the product's epilogue
 * then writes through the merged dims, so a pointwise expression of the result (an activation)
 * still runs in it. *out NULL when t is not a lazy product read through a level-moving node at
 * most (nor merged already), or it needs a gradient (the autograd reads no merged node). */
FcStatus fc_product_merge(FcCtx *ctx, FcTensor *t, int ngroups, const int *group_len, const int64_t *shape,
                          FcTensor **out, FcError *err);
/* The product nodes under root other than root itself (each once, the first cap into out): how
 * many, or -1 when the DAG is too deep to walk here. 0 at once while none is alive. */
int fc_products_under(FcNode *root, FcNode **out, int cap);

#endif
