/* ir.c — the loop-free IR: nodes, and the operations that build them from tensors (pointwise
 * math with PyTorch's broadcasting and type promotion, casts, where, reductions).
 *
 * Every operation here is lazy: it returns a tensor whose node is an expression over its dims,
 * with loads of stored tensors at the leaves. Reductions stay in the DAG of their consumers (the
 * scheduler fuses them, or realises them where fusing would recompute them); arg reductions, and
 * operands whose DAG has grown past ctx->max_fused nodes, are realised first. Depends on fcdim.h and internal.h only. */
#include "internal.h"
#include "mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_LEAF, K_UNARY, K_BINARY, K_COMPARE, K_TERNARY, K_FUSED, K_REDUCE };

static const struct {
    const char *name;
    unsigned char kind;
} op_info[] = {
#define OP(NAME, name, kind) {name, K_##kind},
#include "ops.def"
};
_Static_assert(sizeof op_info / sizeof op_info[0] == FC_OP__COUNT, "ops.def: one op_info row per FcOp");

/* The executors test comparisons and reductions as the ranges EQ..GE and SUM..ALL: count the ops
 * whose kind and place disagree, so that a row of ops.def out of place fails the build. */
#define IN(NAME, lo, hi) (FC_OP_##NAME >= FC_OP_##lo && FC_OP_##NAME <= FC_OP_##hi)
enum {
    MISPLACED_COMPARE = 0
#define OP(NAME, name, kind) + ((K_##kind == K_COMPARE) != IN(NAME, EQ, GE))
#include "ops.def"
    , MISPLACED_REDUCE = 0
#define OP(NAME, name, kind) + ((K_##kind == K_REDUCE) != IN(NAME, SUM, ALL))
#include "ops.def"
};
#undef IN
_Static_assert(MISPLACED_COMPARE == 0, "ops.def: the comparisons must be the rows EQ..GE");
_Static_assert(MISPLACED_REDUCE == 0, "ops.def: the reductions must be the rows SUM..ALL");

static bool op_valid(FcOp op) { return (unsigned)op < FC_OP__COUNT && op_info[op].name; }
const char *fc_op_name(FcOp op) { return op_valid(op) ? op_info[op].name : "<invalid op>"; }
bool fc_op_is_unary(FcOp op) { return op_valid(op) && op_info[op].kind == K_UNARY; }
bool fc_op_is_binary(FcOp op) { return op_valid(op) && (op_info[op].kind == K_BINARY || op_info[op].kind == K_COMPARE); }

/* ---- nodes ---- */

uint64_t fc_walk_stamp(void)
{
    static _Thread_local uint64_t stamp;
    return ++stamp;
}

/* The number of distinct nodes reachable from root: a depth-first walk that marks the nodes it
 * has seen with a stamp of its own (FcNode.mark, fc_walk_stamp). Past 4096 (far beyond any
 * fusion cap) or out of memory it gives up and returns upper, the per-path count. */
static uint32_t dag_size(FcNode *root, uint32_t upper)
{
    enum { GIVE_UP = 4096, LOCAL = 256 };
    uint64_t mark = fc_walk_stamp();
    FcNode *local[LOCAL], **stack = local;
    size_t cap = LOCAL, top = 0;
    uint32_t count = 1;
    root->mark = mark;
    stack[top++] = root;
    while (top) {
        FcNode *n = stack[--top];
        for (int k = 0; k < n->nin; k++) {
            FcNode *c = n->in[k];
            if (c->mark == mark)
                continue;
            if (++count > GIVE_UP)
                goto give_up;
            c->mark = mark;
            if (top == cap) {
                FcNode **more = mem_malloc(2 * cap * sizeof *more);
                if (!more)
                    goto give_up;
                memcpy(more, stack, top * sizeof *stack);
                if (stack != local)
                    mem_free(stack);
                stack = more;
                cap *= 2;
            }
            stack[top++] = c;
        }
    }
    if (stack != local)
        mem_free(stack);
    return count;
give_up:
    if (stack != local)
        mem_free(stack);
    return upper;
}

/* Whether n's DAG holds more than cap nodes. A node counts its DAG per path (1 + its operands'
 * counts), which is exact for a tree but grows exponentially with a DAG that reuses its values
 * (roi_align's coordinates feed four taps and two masks); past cap the distinct nodes are counted
 * once (dag_size), and kept. */
bool fc_node_bigger(FcNode *n, uint32_t cap)
{
    if (n->count <= cap)
        return false;
    if (n->exact)
        return n->count > cap;
    /* A node of one operand holds one node more than it: a chain of them (the relayouts that
     * each use of a big value gets) is counted below its end, once, and up the chain from there. */
    FcNode *end = n;
    uint32_t k = 0;
    for (; !end->exact && end->nin == 1; end = end->in[0])
        k++;
    if (!end->exact) {
        end->count = dag_size(end, end->count);
        end->exact = true;
    }
    for (FcNode *c = n; c != end; c = c->in[0], k--) {
        c->count = end->count > UINT32_MAX - k ? UINT32_MAX : end->count + k;
        c->exact = true;
    }
    return n->count > cap;
}

FcNode *fc_node_new(FcOp op, FcDType dt, int nlev, const int64_t *size, int nin, FcNode *const *in)
{
    size_t nmap = 0;
    for (int k = 0; k < nin; k++)
        nmap += (size_t)in[k]->nlev;
    bool load = op == FC_OP_LOAD;
    /* A load's strides, shape and index_dim arrays: three 8-byte slots per operand (index_dim's
     * ints in 8-byte slots keep the pointer arrays after them aligned). */
    size_t bytes = sizeof(FcNode) + (size_t)nlev * sizeof(int64_t) + (load ? 3 * (size_t)nin * sizeof(int64_t) : 0) +
                   (size_t)nin * (sizeof(FcNode *) + sizeof(int8_t *)) + nmap;
    FcNode *n = fc_zalloc(bytes);
    if (!n)
        return NULL;
    char *p = (char *)(n + 1);
    n->refcnt = 1;
    n->op = op;
    n->nograd = fc_grad_off;
    n->dtype = dt;
    n->src_dtype = dt;
    n->nlev = nlev;
    n->size = (int64_t *)p;
    p += (size_t)nlev * sizeof(int64_t);
    if (nlev)
        memcpy(n->size, size, (size_t)nlev * sizeof *size);
    if (load) {
        n->strides = (int64_t *)p;
        p += (size_t)nin * sizeof(int64_t);
        n->shape = (int64_t *)p;
        p += (size_t)nin * sizeof(int64_t);
        n->index_dim = (int *)p;
        p += (size_t)nin * sizeof(int64_t);
        for (int k = 0; k < nin; k++)
            n->index_dim[k] = k;
    }
    n->nin = nin;
    n->in = (FcNode **)p;
    p += (size_t)nin * sizeof(FcNode *);
    n->lev_map = (int8_t **)p;
    p += (size_t)nin * sizeof(int8_t *);
    uint64_t count = 1;
    for (int k = 0; k < nin; k++) {
        n->in[k] = fc_node_retain(in[k]);
        n->lev_map[k] = (int8_t *)p;
        memset(p, FC_LEV_BCAST, (size_t)in[k]->nlev);
        p += in[k]->nlev;
        count += in[k]->count;
    }
    n->count = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
    return n;
}

FcNode *fc_node_retain(FcNode *n)
{
    if (n)
        n->refcnt++;
    return n;
}

void fc_node_release(FcNode *n)
{
    if (!n || --n->refcnt > 0)
        return;
    if (n->product)
        fc_products_live--;
    mem_free(n->merge);
    for (int k = 0; k < n->nin; k++)
        fc_node_release(n->in[k]);
    fc_storage_release(n->storage);
    fc_retained_release(n->retain);
    fc_vjp_free(n->vjp);
    mem_free(n);
}

FcNode *fc_tensor_node(FcTensor *t)
{
    if (t->node)
        return fc_node_retain(t->node);
    FcNode *idx[FC_MAX_DIMS];
    for (int k = 0; k < t->ndim; k++) {
        idx[k] = fc_node_new(FC_OP_IOTA, FC_INT64, 1, &t->shape[k], 0, NULL);
        if (!idx[k]) {
            while (k-- > 0)
                fc_node_release(idx[k]);
            return NULL;
        }
    }
    FcNode *n = fc_node_new(FC_OP_LOAD, t->dtype, t->ndim, t->shape, t->ndim, idx);
    for (int k = 0; k < t->ndim; k++)
        fc_node_release(idx[k]);
    if (!n)
        return NULL;
    for (int k = 0; k < t->ndim; k++) {
        n->lev_map[k][0] = (int8_t)k;
        n->strides[k] = t->strides[k];
        n->shape[k] = t->shape[k];
    }
    n->storage = fc_storage_retain(t->storage);
    n->offset = t->offset;
    return n;
}

FcNode *fc_node_place(FcNode *n, FcDType dt, int nlev, const int64_t *size, int end)
{
    FcNode *c = fc_node_new(FC_OP_CAST, dt, nlev, size, 1, &n);
    if (!c)
        return NULL;
    c->src_dtype = n->dtype;
    for (int j = 0; j < n->nlev; j++) {
        int l = end - n->nlev + j;
        c->lev_map[0][j] = (int8_t)(n->size[j] == 1 && size[l] != 1 ? FC_LEV_BCAST : l);
    }
    return c;
}

/* ---- scalars ---- */

/* x wrapped into integer dtype t (two's complement, as a C conversion to its type does). */
static int64_t wrap_int(int64_t x, FcDType t)
{
    switch (t) {
    case FC_INT32: return (int32_t)(uint32_t)(uint64_t)x;
    case FC_INT16: return (int16_t)(uint16_t)(uint64_t)x;
    case FC_INT8: return (int8_t)(uint8_t)(uint64_t)x;
    case FC_UINT8: return (uint8_t)(uint64_t)x;
    default: return x;
    }
}

/* x (already a float32 value) rounded to float16 or bfloat16 and back. */
static double round_narrow(float x, FcDType t)
{
    return t == FC_FLOAT16 ? fc_f16_to_f32(fc_f32_to_f16(x)) : fc_bf16_to_f32(fc_f32_to_bf16(x));
}

FcScalar fc_scalar_convert(FcScalar v, FcDType from, FcDType to)
{
    FcScalar r;
    if (fc_dtype_is_float(from)) {
        double x = from == FC_FLOAT32 ? (double)(float)v.f : from == FC_FLOAT64 ? v.f : round_narrow((float)v.f, from);
        switch (to) {
        case FC_FLOAT64: r.f = x; break;
        case FC_FLOAT32: r.f = (double)(float)x; break;
        case FC_FLOAT16: case FC_BFLOAT16: r.f = round_narrow((float)x, to); break;
        case FC_BOOL: r.i = x != 0; break;
        case FC_INT64: r.i = (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN; break;
        /* The narrow integers convert through int32, as PyTorch's CPU casts do (300.0 -> uint8 44). */
        default: r.i = wrap_int((x > -2147483649.0 && x < 2147483648.0) ? (int64_t)(int32_t)x : INT32_MIN, to); break;
        }
        return r;
    }
    int64_t x = from == FC_BOOL ? v.i != 0 : wrap_int(v.i, from);
    switch (to) {
    case FC_FLOAT64: r.f = (double)x; break;
    case FC_FLOAT32: r.f = (double)(float)x; break;
    case FC_FLOAT16: case FC_BFLOAT16: r.f = round_narrow((float)x, to); break;
    case FC_BOOL: r.i = x != 0; break;
    default: r.i = wrap_int(x, to); break;
    }
    return r;
}

/* ---- operands ---- */

static FcOperand operand_of(const FcTensor *t)
{
    FcOperand o = {FC_OPERAND_TENSOR, t->dtype};
    if (t->wrapped_number)
        o.kind = FC_OPERAND_SCALAR;
    else if (t->ndim == 0)
        o.kind = FC_OPERAND_ZERO_DIM;
    return o;
}

/* Whether an operand with node n is realised before it is used: an arg reduction (its index is
 * only produced at a kernel's root), any reduction when fusion is off, a DAG too big to fuse. */
static bool realise_first(const FcCtx *ctx, FcNode *n)
{
    if (n->op == FC_OP_ARGMAX || n->op == FC_OP_ARGMIN)
        return true;
    return (fc_op_is_reduce(n->op) && (ctx->sched_off & FC_SCHED_FUSE)) || fc_node_bigger(n, ctx->max_fused);
}

/* n (consumed) cast to dtype dt over the same levels (a constant converted in place); NULL
 * when out of memory. */
static FcNode *cast_node(FcNode *n, FcDType dt)
{
    if (n->dtype == dt)
        return n;
    FcNode *c;
    if (n->op == FC_OP_CONST) {
        c = fc_node_new(FC_OP_CONST, dt, n->nlev, n->size, 0, NULL);
        if (c)
            c->konst = fc_scalar_convert(n->konst, n->dtype, dt);
    } else {
        c = fc_node_new(FC_OP_CAST, dt, n->nlev, n->size, 1, &n);
        if (c) {
            c->src_dtype = n->dtype;
            for (int j = 0; j < c->nlev; j++)
                c->lev_map[0][j] = (int8_t)j;
        }
    }
    fc_node_release(n);
    return c;
}

/* Whether load, t->load, still reads stored t as it is now (its storage, offset, shape and
 * strides may have been set since) in this gradient mode, and no gradient is recorded (whose
 * walks tell loads apart). */
static bool load_holds(const FcTensor *t, const FcNode *load)
{
    if (!load || fc_grad_live || load->nograd != fc_grad_off || load->storage != t->storage ||
        load->offset != t->offset || load->dtype != t->dtype || load->nlev != t->ndim)
        return false;
    for (int k = 0; k < t->ndim; k++)
        if (load->shape[k] != t->shape[k] || load->strides[k] != t->strides[k])
            return false;
    return true;
}

/* t's node as an operand of a new node of dtype dt: realised first when realise_first says so;
 * constants convert in place, others get a CAST. A stored t's LOAD (two nodes or more to make and
 * free) is kept in t->load for its next use: nothing here changes an operand's node, and a DAG
 * may share a node. */
static FcStatus operand_node(FcCtx *ctx, FcTensor *t, FcDType dt, FcNode **out, FcError *err)
{
    *out = NULL;
    if (t->node && realise_first(ctx, t->node)) {
        FcStatus st = fc_realize(ctx, t, err);
        if (st)
            return st;
    }
    FcNode *n;
    if (t->node) {
        n = fc_tensor_node(t);
    } else if (load_holds(t, t->load)) {
        n = fc_node_retain(t->load);
    } else {
        n = fc_tensor_node(t);
        fc_node_release(t->load);
        t->load = n && !fc_grad_live ? fc_node_retain(n) : NULL;
    }
    if (!n)
        return fc_nomem(err);
    if (!(n = cast_node(n, dt)))
        return fc_nomem(err);
    *out = n;
    return FC_OK;
}

void fc_tensor_place(FcTensor *t, FcDevice dev)
{
    if (t->unplaced) {
        t->device = dev;
        t->unplaced = false;
    }
}

FcStatus fc_common_device(FcTensor *const *ts, int n, FcDevice *out, FcError *err)
{
    FcDevice dev = fc_cpu();
    bool have = false;
    for (int i = 0; i < n; i++) {
        if (fc_tensor_goes_anywhere(ts[i]))
            continue;
        if (!have) {
            dev = ts[i]->device;
            have = true;
        } else if (!fc_device_eq(dev, ts[i]->device)) {
            char a[24], b[24];
            return fc_errf(err, FC_ERR_DEVICE,
                           "Expected all tensors to be on the same device, but found at least two devices, %s and %s!",
                           fc_device_name(dev, a), fc_device_name(ts[i]->device, b));
        }
    }
    for (int i = 0; i < n && !have; i++)
        if (!ts[i]->wrapped_number) {
            dev = ts[i]->device;
            have = true;
        }
    *out = dev;
    return FC_OK;
}

FcStatus fc_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out,
                             FcError *err)
{
    int n = na > nb ? na : nb;
    for (int i = n - 1, ia = na - 1, ib = nb - 1; i >= 0; i--, ia--, ib--) {
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa == sb || sb == 1)
            out[i] = sa;
        else if (sa == 1)
            out[i] = sb;
        else
            return fc_errf(err, FC_ERR_RUNTIME,
                           "The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton "
                           "dimension %d",
                           (long long)sa, (long long)sb, i);
    }
    *nout = n;
    return FC_OK;
}


FcNode *fc_node_widen(FcNode *n)
{
    if (!n || n->op == FC_OP_CAST || n->op == FC_OP_WHERE || n->op == FC_OP_LOAD || n->op == FC_OP_CONST ||
        n->op == FC_OP_IOTA)
        return n;
    FcDType dt = n->dtype, cdt = fc_dtype_compute(dt), csrc = fc_dtype_compute(n->src_dtype);
    if (cdt == dt && csrc == n->src_dtype)
        return n;
    /* Fresh (held by the caller alone): its operands are widened in place, over the same levels. */
    for (int k = 0; k < n->nin; k++) {
        FcNode *w = cast_node(fc_node_retain(n->in[k]), csrc);
        if (!w) {
            fc_node_release(n);
            return NULL;
        }
        fc_node_release(n->in[k]);
        n->in[k] = w;
    }
    n->dtype = cdt;
    n->src_dtype = csrc;
    if (cdt == dt)
        return n;
    FcNode *c = cast_node(n, dt);
    if (c)
        c->narrows = true;
    return c;
}

/* A node of op over the broadcast shape of the operands (already of the right dtypes), with the
 * operands' levels aligned from the right. Consumes the operand references. */
static FcStatus broadcast_node(FcOp op, FcDType dt, int nin, FcNode **ins, int nd, const int64_t *shape,
                               FcNode **out, FcError *err)
{
    FcNode *n = fc_node_new(op, dt, nd, shape, nin, ins);
    for (int k = 0; k < nin; k++)
        fc_node_release(ins[k]);
    if (!n)
        return fc_nomem(err);
    for (int k = 0; k < nin; k++) {
        int nk = n->in[k]->nlev;
        for (int j = 0; j < nk; j++) {
            int l = j + nd - nk;
            n->lev_map[k][j] = (int8_t)(n->in[k]->size[j] == 1 && shape[l] != 1 ? FC_LEV_BCAST : l);
        }
    }
    *out = n;
    return FC_OK;
}

/* The lazy result of op over ts (n of them, computed in dtype `in_dt`, giving `dt`). */
static FcStatus pointwise(FcCtx *ctx, FcOp op, FcDType dt, FcDType in_dt, FcTensor *const *ts, int n,
                          const FcDType *operand_dts, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcDevice dev;
    FcStatus st = fc_common_device(ts, n, &dev, err);
    if (st)
        return st;
    int nd = 0;
    int64_t shape[FC_MAX_DIMS];
    for (int k = 0; k < n; k++) {
        int64_t tmp[FC_MAX_DIMS];
        int ntmp;
        if (k == 0) {
            nd = ts[0]->ndim;
            memcpy(shape, ts[0]->shape, (size_t)nd * sizeof *shape);
            continue;
        }
        st = fc_broadcast_shapes(nd, shape, ts[k]->ndim, ts[k]->shape, &ntmp, tmp, err);
        if (st)
            return st;
        nd = ntmp;
        memcpy(shape, tmp, (size_t)nd * sizeof *shape);
    }
    /* (2**62, 1) + (1, 4) of bools: a shape whose bytes overflow. */
    if (n > 1 && (st = fc_check_nbytes(nd, shape, dt, err)) != FC_OK)
        return st;
    /* A narrow dtype computes in its compute dtype and the result is cast back (rounded or
     * wrapped after every op, as PyTorch's kernels do): the operands are first converted to the
     * narrow dtype (a scalar 3.3 becomes float16's 3.3008, an int16 2049 float16's 2048, 300
     * uint8's 44), then widened exactly. A cast or select moves values as they are. */
    FcDType store_dt = dt, narrow_in = in_dt;
    if (op != FC_OP_CAST && op != FC_OP_WHERE) {
        in_dt = fc_dtype_compute(in_dt);
        dt = fc_dtype_compute(dt);
    }
    FcNode *ins[3] = {NULL, NULL, NULL};
    for (int k = 0; k < n; k++) {
        st = operand_node(ctx, ts[k], operand_dts ? operand_dts[k] : narrow_in, &ins[k], err);
        if (!st && !operand_dts && narrow_in != in_dt && !(ins[k] = cast_node(ins[k], in_dt)))
            st = fc_nomem(err);
        if (st) {
            for (int j = 0; j < k; j++)
                fc_node_release(ins[j]);
            return st;
        }
    }
    FcNode *node = NULL;
    st = broadcast_node(op, dt, n, ins, nd, shape, &node, err);
    if (st)
        return st;
    node->src_dtype = in_dt;
    if (store_dt != dt && !(node = cast_node(node, store_dt)))
        return fc_nomem(err);
    if (store_dt != dt)
        node->narrows = true;
    *out = fc_tensor_from_node(node, dev, ts, n);
    return *out ? FC_OK : fc_nomem(err);
}

/* ---- unary ---- */

/* Whether op computes an int or bool operand as float32 (ops.def's TO_FLOAT rows). */
static bool unary_needs_float(FcOp op)
{
    switch (op) {
#define TO_FLOAT(NAME) case FC_OP_##NAME:
#include "ops.def"
        return true;
    default:
        return false;
    }
}

/* The kernel of PyTorch 1.13's CPU build that has no float16 version, for unary op (that
 * float16 refuses with its name), or NULL (ops.def's NO_HALF rows). */
static const char *half_missing(FcOp op)
{
    switch (op) {
#define NO_HALF(NAME, kernel) case FC_OP_##NAME: return kernel;
#include "ops.def"
    default:
        return NULL;
    }
}

FcStatus fc_unary(FcCtx *ctx, FcOp op, FcTensor *a, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (!fc_op_is_unary(op) || op == FC_OP_CAST)
        return fc_errf(err, FC_ERR_VALUE, "fc_unary: %s is not a unary operation", fc_op_name(op));
    FcDType dt = a->dtype;
    if (unary_needs_float(op) && !fc_dtype_is_float(dt))
        dt = FC_FLOAT32;
    if (dt == FC_FLOAT16 && half_missing(op))
        return fc_errf(err, FC_ERR_RUNTIME, "\"%s\" not implemented for 'Half'", half_missing(op));
    switch (op) {
    case FC_OP_NEG:
        if (dt == FC_BOOL)
            return fc_errf(err, FC_ERR_RUNTIME,
                           "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.");
        break;
    case FC_OP_NOT:
        if (fc_dtype_is_float(dt))
            return fc_errf(err, FC_ERR_TYPE, "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
        break;
    case FC_OP_FLOOR: case FC_OP_CEIL: case FC_OP_ROUND: case FC_OP_TRUNC:
        if (!fc_dtype_is_float(dt)) {
            /* Integers are already whole: a copy (PyTorch returns a new tensor too). */
            FcTensor *ts[1] = {a};
            return pointwise(ctx, FC_OP_CAST, dt, dt, ts, 1, NULL, out, err);
        }
        break;
    case FC_OP_ABS: case FC_OP_SIGN: case FC_OP_RELU: case FC_OP_SQUARE:
        if (dt == FC_BOOL && op == FC_OP_SQUARE)
            dt = FC_INT64;
        if (dt == FC_BOOL && op == FC_OP_ABS)
            return fc_errf(err, FC_ERR_RUNTIME, "\"abs_cpu\" not implemented for 'Bool'");
        break;
    default:
        break;
    }
    FcTensor *ts[1] = {a};
    FcDType rt = op == FC_OP_ISNAN ? FC_BOOL : dt;
    FcDType in = op == FC_OP_ISNAN ? a->dtype : dt;
    return pointwise(ctx, op, rt, in, ts, 1, NULL, out, err);
}

FcStatus fc_cast(FcCtx *ctx, FcTensor *a, FcDType dt, FcTensor **out, FcError *err)
{
    if (a->dtype == dt) {
        *out = fc_tensor_retain(a);
        return FC_OK;
    }
    FcTensor *ts[1] = {a};
    FcDType src = a->dtype;
    /* The node is CAST of a node of the source dtype; operand_node adds nothing. */
    FcStatus st = pointwise(ctx, FC_OP_CAST, dt, src, ts, 1, NULL, out, err);
    if (st == FC_OK)
        (*out)->wrapped_number = false;
    return st;
}

/* ---- binary ---- */

static bool is_const(const FcTensor *t, double *v)
{
    if (!t->node || t->node->op != FC_OP_CONST)
        return false;
    *v = fc_dtype_is_float(t->dtype) ? t->node->konst.f : (double)t->node->konst.i;
    return true;
}

/* x ** c for the exponents PyTorch's pow_tensor_scalar computes without pow (so the bits match):
 * 2 -> x*x, 3 -> x*x*x, 0.5 -> sqrt, -0.5 -> rsqrt, -1 -> 1/x, -2 -> 1/(x*x). *done is false
 * when c is none of them. */
static FcStatus pow_special(FcCtx *ctx, FcTensor *x, double c, FcDType dt, FcTensor **out, bool *done,
                            FcError *err)
{
    *done = true;
    FcTensor *xs = NULL, *sq = NULL;
    if (dt == FC_BFLOAT16 && (c == 3 || c == -2)) {
        /* bfloat16's x*x*x and 1/(x*x) round each step (Vectorized<BFloat16>'s operators) */
        FcStatus st = fc_cast(ctx, x, dt, &xs, err);
        if (!st)
            st = pow_special(ctx, xs, 2, dt, &sq, done, err);
        if (!st)
            st = c == 3 ? fc_binary(ctx, FC_OP_MUL, sq, xs, out, err) : fc_unary(ctx, FC_OP_RECIPROCAL, sq, out, err);
        fc_tensor_release(sq);
        fc_tensor_release(xs);
        return st;
    }
    if (fc_dtype_compute(dt) != dt && (c == 0.5 || c == -0.5 || c == -1 || c == 2 || c == 3 || c == -2)) {
        /* float16 (and bfloat16 but for 3 and -2): pow's kernel computes in float32 and rounds once. */
        FcTensor *r = NULL;
        FcStatus st = pow_special(ctx, x, c, fc_dtype_compute(dt), &r, done, err);
        if (!st)
            st = fc_cast(ctx, r, dt, out, err);
        fc_tensor_release(r);
        return st;
    }
    FcStatus st = fc_cast(ctx, x, dt, &xs, err);
    if (st)
        return st;
    if (c == 0.5)
        st = fc_unary(ctx, FC_OP_SQRT, xs, out, err);
    else if (c == -0.5)
        st = fc_unary(ctx, FC_OP_RSQRT, xs, out, err);
    else if (c == -1)
        st = fc_unary(ctx, FC_OP_RECIPROCAL, xs, out, err);
    else if (c == 2 || c == 3 || c == -2) {
        st = fc_unary(ctx, FC_OP_SQUARE, xs, &sq, err);
        if (!st && c == 2) {
            *out = sq;
            sq = NULL;
        } else if (!st && c == 3)
            st = fc_binary(ctx, FC_OP_MUL, sq, xs, out, err);
        else if (!st)
            st = fc_unary(ctx, FC_OP_RECIPROCAL, sq, out, err);
    } else
        *done = false;
    fc_tensor_release(sq);
    fc_tensor_release(xs);
    return st;
}

FcStatus fc_binary(FcCtx *ctx, FcOp op, FcTensor *a, FcTensor *b, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (!fc_op_is_binary(op))
        return fc_errf(err, FC_ERR_VALUE, "fc_binary: %s is not a binary operation", fc_op_name(op));
    FcOperand ops[2] = {operand_of(a), operand_of(b)};
    FcDType common = fc_result_type(ops, 2);
    FcDType dt = common;
    switch (op) {
    case FC_OP_SUB:
        if (a->dtype == FC_BOOL && b->dtype == FC_BOOL)
            return fc_errf(err, FC_ERR_RUNTIME,
                           "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.");
        if (a->dtype == FC_BOOL || b->dtype == FC_BOOL)
            return fc_errf(err, FC_ERR_RUNTIME,
                           "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.");
        break;
    case FC_OP_DIV:
        common = dt = fc_div_result_type(ops, 2);
        break;
    case FC_OP_ATAN2:
        if (!fc_dtype_is_float(common))
            common = dt = FC_FLOAT32;
        if (common == FC_FLOAT16)
            return fc_errf(err, FC_ERR_RUNTIME, "\"atan2_cpu\" not implemented for 'Half'");
        break;
    case FC_OP_COPYSIGN:
        if (!fc_dtype_is_float(common))
            common = dt = FC_FLOAT32;
        break;
    case FC_OP_FMAX: case FC_OP_FMIN:
        if (common == FC_FLOAT16 || common == FC_BFLOAT16)
            op = op == FC_OP_FMAX ? FC_OP_FMAX16 : FC_OP_FMIN16;   /* ops.def */
        break;
    case FC_OP_LOGADDEXP:
        if (!fc_dtype_is_float(common) || common == FC_FLOAT16)
            return fc_errf(err, FC_ERR_RUNTIME, "\"logaddexp_cpu\" not implemented for '%s'",
                           fc_dtype_torch_name(common));
        break;
    case FC_OP_GCD: case FC_OP_LCM:
        if (!fc_dtype_is_int(common))
            return fc_errf(err, FC_ERR_RUNTIME, "\"%s_cpu\" not implemented for '%s'", fc_op_name(op),
                           fc_dtype_torch_name(common));
        break;
    case FC_OP_AND: case FC_OP_OR: case FC_OP_XOR: case FC_OP_SHL: case FC_OP_SHR:
        if (fc_dtype_is_float(common))
            return fc_errf(err, FC_ERR_RUNTIME, "\"%s_cpu\" not implemented for '%s'", fc_op_name(op),
                           fc_dtype_torch_name(common));
        if (common == FC_BOOL && (op == FC_OP_SHL || op == FC_OP_SHR))
            return fc_errf(err, FC_ERR_RUNTIME, "\"%s_cpu\" not implemented for 'Bool'",
                           op == FC_OP_SHL ? "lshift" : "rshift");
        break;
    case FC_OP_FLOORDIV: case FC_OP_MOD: case FC_OP_FMOD:
        if (common == FC_BOOL)
            return fc_errf(err, FC_ERR_RUNTIME, "\"%s_cpu\" not implemented for 'Bool'",
                           op == FC_OP_FLOORDIV ? "div_floor" : op == FC_OP_MOD ? "remainder" : "fmod");
        break;
    case FC_OP_POW: {
        double c;
        if (common == FC_BOOL)
            return fc_errf(err, FC_ERR_RUNTIME, "\"pow\" not implemented for 'Bool'");
        if (fc_dtype_is_int(common) && b->wrapped_number && is_const(b, &c) && c < 0)
            return fc_errf(err, FC_ERR_RUNTIME, "Integers to negative integer powers are not allowed.");
        if (fc_dtype_is_float(common) && b->wrapped_number && is_const(b, &c)) {
            bool done;
            FcStatus st = pow_special(ctx, a, (double)fc_scalar_convert((FcScalar){.f = c}, FC_FLOAT64, common).f,
                                      common, out, &done, err);
            if (st || done) {
                if (st == FC_OK && (*out)->dtype != dt) {
                    FcTensor *r;
                    st = fc_cast(ctx, *out, dt, &r, err);
                    fc_tensor_release(*out);
                    *out = st ? NULL : r;
                }
                if (st == FC_OK && b->ndim == 0 && a->ndim == 0 && a->wrapped_number && b->wrapped_number)
                    (*out)->wrapped_number = true;
                return st;
            }
        }
        break;
    }
    default:
        break;
    }
    if (fc_op_is_compare(op))
        dt = FC_BOOL;
    FcTensor *ts[2] = {a, b};
    FcStatus st = pointwise(ctx, op, dt, common, ts, 2, NULL, out, err);
    if (st == FC_OK && a->wrapped_number && b->wrapped_number)
        (*out)->wrapped_number = true;
    return st;
}

FcStatus fc_check_wrapped(const FcTensor *t, FcDType dt, FcError *err)
{
    if (!t || !t->wrapped_number || !t->node || t->node->op != FC_OP_CONST ||
        fc_scalar_fits(t->node->konst, t->dtype, dt))
        return FC_OK;
    return fc_errf(err, FC_ERR_RUNTIME, "value cannot be converted to type %s without overflow", fc_dtype_cxx_name(dt));
}

FcStatus fc_where(FcCtx *ctx, FcTensor *cond, FcTensor *a, FcTensor *b, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (cond->dtype != FC_BOOL)
        return fc_errf(err, FC_ERR_RUNTIME, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
                       fc_dtype_torch_name(cond->dtype));
    FcOperand ops[2] = {operand_of(a), operand_of(b)};
    FcDType dt = fc_result_type(ops, 2);
    FcStatus st = fc_check_wrapped(a, dt, err);
    if (st || (st = fc_check_wrapped(b, dt, err)))
        return st;
    FcTensor *ts[3] = {cond, a, b};
    FcDType dts[3] = {FC_BOOL, dt, dt};
    return pointwise(ctx, FC_OP_WHERE, dt, dt, ts, 3, dts, out, err);
}

FcStatus fc_fma(FcCtx *ctx, FcTensor *x, FcTensor *y, FcTensor *z, FcTensor **out, FcError *err)
{
    *out = NULL;
    FcOperand ops[3] = {operand_of(x), operand_of(y), operand_of(z)};
    FcDType dt = fc_result_type(ops, 3);
    if (!fc_dtype_is_float(dt)) {
        FcTensor *p = NULL;
        FcStatus st = fc_binary(ctx, FC_OP_MUL, y, z, &p, err);
        if (!st)
            st = fc_binary(ctx, FC_OP_ADD, x, p, out, err);
        fc_tensor_release(p);
        return st;
    }
    FcStatus st = fc_check_wrapped(x, dt, err);
    if (st || (st = fc_check_wrapped(y, dt, err)) || (st = fc_check_wrapped(z, dt, err)))
        return st;
    FcTensor *ts[3] = {x, y, z};
    return pointwise(ctx, FC_OP_FMA, dt, dt, ts, 3, NULL, out, err);
}

/* ---- reductions ---- */

FcStatus fc_reduce(FcCtx *ctx, FcOp op, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out,
                   FcError *err)
{
    *out = NULL;
    if (!fc_op_is_reduce(op))
        return fc_errf(err, FC_ERR_VALUE, "fc_reduce: %s is not a reduction", fc_op_name(op));
    int nd = a->ndim;
    uint64_t all = nd >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << nd) - 1);
    bool full = dim_mask == 0;
    uint64_t mask = full ? all : (dim_mask & all);
    int nred = 0;
    for (int d = 0; d < nd; d++)
        nred += (int)((mask >> d) & 1);
    bool is_arg = op == FC_OP_ARGMAX || op == FC_OP_ARGMIN;
    if (op == FC_OP_AMAX || op == FC_OP_AMIN || is_arg) {
        if (full && fc_tensor_numel(a) == 0)
            return is_arg ? fc_errf(err, FC_ERR_INDEX,
                                    "%s(): Expected reduction dim to be specified for input.numel() == 0.",
                                    fc_op_name(op))
                          : fc_errf(err, FC_ERR_RUNTIME,
                                    "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                                    "Specify the reduction dim with the 'dim' argument.",
                                    fc_op_name(op));
        for (int d = 0; d < nd; d++)
            if (((mask >> d) & 1) && a->shape[d] == 0)
                return fc_errf(err, FC_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.",
                               fc_op_name(op), d);
    }
    if (is_arg && nred > 1) {
        /* Index into the flattened reduced dims: move them last, merge them, reduce that one. */
        int64_t perm[FC_MAX_DIMS], shape[FC_MAX_DIMS];
        int np = 0, nkept = 0;
        for (int d = 0; d < nd; d++)
            if (!((mask >> d) & 1)) {
                perm[np++] = d;
                shape[nkept++] = a->shape[d];
            }
        for (int d = 0; d < nd; d++)
            if ((mask >> d) & 1)
                perm[np++] = d;
        shape[nkept] = -1;
        FcTensor *p = NULL, *r = NULL, *res = NULL;
        FcStatus st = fc_permute(ctx, a, nd, perm, &p, err);
        if (!st)
            st = fc_reshape(ctx, p, nkept + 1, shape, &r, err);
        if (!st)
            st = fc_reduce(ctx, op, r, (uint64_t)1 << nkept, false, &res, err);
        fc_tensor_release(p);
        fc_tensor_release(r);
        if (st)
            return st;
        if (keepdim) {
            int64_t kshape[FC_MAX_DIMS];
            for (int d = 0; d < nd; d++)
                kshape[d] = ((mask >> d) & 1) ? 1 : a->shape[d];
            st = fc_reshape(ctx, res, nd, kshape, out, err);
            fc_tensor_release(res);
            return st;
        }
        *out = res;
        return FC_OK;
    }
    FcDType in_dt = a->dtype, dt = a->dtype;
    /* (torch dispatches no kernel for an empty input) */
    if (op == FC_OP_PROD && fc_dtype_compute(in_dt) != in_dt && fc_dtype_is_float(in_dt) && fc_tensor_numel(a) > 0)
        return fc_errf(err, FC_ERR_RUNTIME, "\"prod_cpu\" not implemented for '%s'", fc_dtype_torch_name(in_dt));
    switch (op) {
    case FC_OP_SUM: case FC_OP_PROD:
        if (!fc_dtype_is_float(in_dt))
            in_dt = dt = FC_INT64;
        break;
    case FC_OP_ANY: case FC_OP_ALL:
        in_dt = dt = FC_BOOL;
        break;
    case FC_OP_ARGMAX: case FC_OP_ARGMIN:
        dt = FC_INT64;
        break;
    default:
        break;
    }
    int64_t shape[FC_MAX_DIMS];
    int8_t map[FC_MAX_DIMS];
    int no = 0;
    for (int d = 0; d < nd; d++) {
        if ((mask >> d) & 1) {
            map[d] = FC_LEV_REDUCED;
            if (keepdim)
                shape[no++] = 1;
        } else {
            map[d] = (int8_t)no;
            shape[no++] = a->shape[d];
        }
    }
    /* zeros(0, 2**62, 4).sum(0) would hold 2**64 elements: PyTorch's error. */
    FcStatus st = fc_check_nbytes(no, shape, dt, err);
    if (st)
        return st;
    /* Narrow dtypes reduce in their compute dtype (float16 sums accumulate in float32, as
     * PyTorch's do) and round or wrap the result once. */
    FcDType store_dt = dt, narrow_in = in_dt;
    in_dt = fc_dtype_compute(in_dt);
    dt = fc_dtype_compute(dt);
    FcNode *in;
    st = operand_node(ctx, a, narrow_in, &in, err);
    if (st)
        return st;
    if (!(in = cast_node(in, in_dt)))
        return fc_nomem(err);
    FcNode *n = fc_node_new(op, dt, no, shape, 1, &in);
    fc_node_release(in);
    if (!n)
        return fc_nomem(err);
    n->src_dtype = in_dt;
    memcpy(n->lev_map[0], map, (size_t)nd);
    if (store_dt != dt && !(n = cast_node(n, store_dt)))
        return fc_nomem(err);
    if (store_dt != dt)
        n->narrows = true;
    FcTensor *ts[1] = {a};
    *out = fc_tensor_from_node(n, a->device, ts, 1);
    return *out ? FC_OK : fc_nomem(err);
}

FcStatus fc_sum(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err)
{
    FcStatus st = fc_reduce(ctx, FC_OP_SUM, a, dim_mask, keepdim, out, err);
    /* a sum over first-class dims stays fused in its consumer (roi_align's masked sums); a
     * constant never stored (ones(n, m)) is summed by a kernel, not stored first */
    if (st || !fc_dtype_is_float(a->dtype) || fc_tensor_has_dims(a) ||
        (a->node && a->node->op == FC_OP_CONST))
        return st;
    FcNode *n = (*out)->node;
    bool narrow = n && n->op == FC_OP_CAST && n->narrows;
    if (narrow)
        n = n->in[0];
    if (n && n->op == FC_OP_SUM) {
        n->order = FC_SUM_CASCADE;      /* made just now: no other DAG holds it yet */
        n->cascade_narrow = narrow;
    }
    return FC_OK;
}

FcStatus fc_prod(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err)
{
    FcStatus st = fc_reduce(ctx, FC_OP_PROD, a, dim_mask, keepdim, out, err);
    FcNode *n = st ? NULL : (*out)->node;
    if (n && n->op == FC_OP_PROD && n->refcnt == 1 && (a->dtype == FC_FLOAT32 || a->dtype == FC_FLOAT64) &&
        !fc_tensor_has_dims(a) && !(a->node && a->node->op == FC_OP_CONST))
        n->order = FC_PROD_VEC;     /* made just now: no other DAG holds it yet */
    return st;
}

FcStatus fc_nansum(FcCtx *ctx, FcTensor *a, uint64_t dim_mask, bool keepdim, FcTensor **out, FcError *err)
{
    *out = NULL;
    if (!fc_dtype_is_float(a->dtype))
        return fc_sum(ctx, a, dim_mask, keepdim, out, err);
    FcTensor *nan = NULL, *zero = NULL, *w = NULL;
    FcStatus st = fc_binary(ctx, FC_OP_NE, a, a, &nan, err);
    if (!st)
        st = fc_scalar(ctx, a->dtype, (FcScalar){.f = 0}, true, &zero, err);
    if (!st)
        st = fc_where(ctx, nan, zero, a, &w, err);
    if (!st)
        st = fc_sum(ctx, w, dim_mask, keepdim, out, err);
    FcNode *n = st ? NULL : (*out)->node;
    if (n && n->op == FC_OP_CAST && n->narrows)
        n = n->in[0];
    if (n && n->op == FC_OP_SUM && n->order == FC_SUM_CASCADE)
        n->cascade_nan = true;
    fc_tensor_release(nan);
    fc_tensor_release(zero);
    fc_tensor_release(w);
    return st;
}

FcStatus fc_sum_ordered(FcCtx *ctx, FcTensor *a, FcTensor *b, uint64_t dim_mask, bool keepdim, FcSumOrder order,
                        FcTensor **out, FcError *err)
{
    *out = NULL;
    FcTensor *p = NULL, *once = NULL;
    FcStatus st = FC_OK;
    if (b == a) {
        /* a * a of one node (a stored tensor gives a new load at every use) */
        FcNode *n = fc_tensor_node(a);
        once = n ? fc_tensor_from_node(n, a->device, &a, 1) : NULL;
        st = once ? FC_OK : fc_nomem(err);
        a = b = once;
    }
    if (!st && b)
        st = fc_binary(ctx, FC_OP_MUL, a, b, &p, err);
    if (!st)
        st = fc_reduce(ctx, FC_OP_SUM, b ? p : a, dim_mask, keepdim, out, err);
    FcNode *n = st ? NULL : (*out)->node;
    if (n && n->op == FC_OP_SUM && n->refcnt == 1 && (a->dtype == FC_FLOAT32 || a->dtype == FC_FLOAT64) &&
        !fc_tensor_has_dims(a) && !(b && fc_tensor_has_dims(b))) {
        n->order = (uint8_t)order;
        n->order_fma = b != NULL;
    }
    fc_tensor_release(p);
    fc_tensor_release(once);
    return st;
}

FcStatus fc_inner_below(FcCtx *ctx, int ndim, const int64_t *shape, int d, int64_t cut, FcDevice dev, FcTensor **out,
                        FcError *err)
{
    *out = NULL;
    int64_t inner = 1;
    for (int k = d + 1; k < ndim; k++)
        inner *= shape[k];
    FcTensor *pos = NULL, *pv = NULL, *lim = NULL;
    FcStatus st = fc_iota(ctx, inner, &pos, err);
    if (!st) {
        fc_tensor_place(pos, dev);      /* the reshape realises it */
        st = fc_reshape(ctx, pos, ndim - d - 1, shape + d + 1, &pv, err);
    }
    if (!st)
        st = fc_scalar(ctx, FC_INT64, (FcScalar){.i = cut}, true, &lim, err);
    if (!st)
        st = fc_binary(ctx, FC_OP_LT, pv, lim, out, err);
    fc_tensor_release(pos);
    fc_tensor_release(pv);
    fc_tensor_release(lim);
    return st;
}

/* ---- text ---- */

typedef struct DumpBuf { char *p; size_t n, cap; bool nomem; } DumpBuf;

static void dump_printf(DumpBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dump_printf(DumpBuf *b, const char *fmt, ...)
{
    if (b->nomem)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->nomem = true;
            return;
        }
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap <= b->n + (size_t)k)
            cap *= 2;
        char *p = mem_realloc(b->p, cap);
        if (!p) {
            b->nomem = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

static int dump_node(const FcNode *n, const FcNode **seen, int *nseen, int cap, DumpBuf *b)
{
    for (int i = 0; i < *nseen; i++)
        if (seen[i] == n)
            return i;
    int ids[FC_MAX_DIMS];
    int nin = n->nin < FC_MAX_DIMS ? n->nin : FC_MAX_DIMS;
    for (int k = 0; k < nin; k++)
        ids[k] = dump_node(n->in[k], seen, nseen, cap, b);
    if (*nseen >= cap)
        return -1;
    int id = (*nseen)++;
    seen[id] = n;
    dump_printf(b, "%%%d = %s", id, fc_op_name(n->op));
    if (n->op == FC_OP_CAST)
        dump_printf(b, "<%s>", fc_dtype_name(n->src_dtype));
    if ((n->op == FC_OP_SUM || n->op == FC_OP_PROD) && n->order != FC_SUM_FUSED) {
        static const char *const orders[] = {"fused", "cascade", "lanes", "serial", "welford", "norm2", "vec"};
        dump_printf(b, "<%s%s>", orders[n->order], n->order_fma ? ", fma" : "");
    }
    if (n->op == FC_OP_CONST) {
        if (fc_dtype_is_float(n->dtype))
            dump_printf(b, " %.17g", n->konst.f);
        else
            dump_printf(b, " %lld", (long long)n->konst.i);
    }
    if (n->op == FC_OP_LOAD)
        dump_printf(b, " @%p+%lld", (void *)n->storage, (long long)n->offset);
    for (int k = 0; k < nin; k++) {
        dump_printf(b, "%s%%%d", k ? ", " : " ", ids[k]);
        if (n->op == FC_OP_LOAD)
            dump_printf(b, "*%lld", (long long)n->strides[k]);
        dump_printf(b, "[");
        for (int j = 0; j < n->in[k]->nlev; j++) {
            int m = n->lev_map[k][j];
            if (m == FC_LEV_BCAST)
                dump_printf(b, "%s_", j ? " " : "");
            else if (m == FC_LEV_REDUCED)
                dump_printf(b, "%sr", j ? " " : "");
            else
                dump_printf(b, "%s%d", j ? " " : "", m);
        }
        dump_printf(b, "]");
    }
    dump_printf(b, " : %s[", fc_dtype_name(n->dtype));
    for (int j = 0; j < n->nlev; j++)
        dump_printf(b, "%s%lld", j ? ", " : "", (long long)n->size[j]);
    dump_printf(b, "]\n");
    return id;
}

char *fc_node_dump(const FcNode *n)
{
    DumpBuf b = {0};
    enum { CAP = 4096 };
    const FcNode **seen = mem_malloc(CAP * sizeof *seen);
    if (!seen)
        return NULL;
    int nseen = 0;
    dump_node(n, seen, &nseen, CAP, &b);
    mem_free(seen);
    if (b.nomem) {
        mem_free(b.p);
        return NULL;
    }
    if (!b.p)
        b.p = mem_calloc(1, 1);
    return b.p;
}
