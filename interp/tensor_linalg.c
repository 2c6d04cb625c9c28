/* tensor_linalg.c — the IMPL functions of products and matrices (tensor_ops.def's "statistics,
 * scans, sorting" section): einsum, outer/mm/mv, diag/diagflat/diag_embed/trace, kron, block_diag,
 * cartesian_prod, tensordot, inner, vdot, cross, cov, corrcoef.
 *
 * Each is built from fcdim's lazy operations (a product summed is fc_contract's, so matmul's
 * path and bits), with PyTorch 1.13's checks and messages. Depends on tensor_impl.h.
 */
#include "tensor_impl.h"
#include "mem.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- einsum -------------------------------------------------------------------------------- */

enum { EIN_LABELS = 52 + FC_MAX_DIMS };     /* a-z, A-Z, then the dims an ellipsis covers */

static int label_of(char c) { return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? c - 'A' + 26 : -1; }
static char label_char(int l) { return (char)(l < 26 ? 'a' + l : 'A' + l - 26); }

typedef struct EinTerm {
    int n;                      /* labels written (without the ellipsis) */
    int lab[FC_MAX_DIMS];
    int ell;                    /* position of the ellipsis among the labels, or -1 */
} EinTerm;

/* Parses one term (p up to end); false with torch's message. */
static bool ein_term(Interp *I, const char *eq, const char *p, const char *end, EinTerm *t)
{
    t->n = 0;
    t->ell = -1;
    for (; p < end; p++) {
        if (*p == ' ') continue;
        if (*p == '.') {
            if (t->ell >= 0 || end - p < 3 || p[1] != '.' || p[2] != '.')
                return err_raise(I, TDL_ERR_RUNTIME, "einsum(): found '.' for operand that is not part of any ellipsis");
            t->ell = t->n;
            p += 2;
            continue;
        }
        int l = label_of(*p);
        if (l < 0)
            return err_raise(I, TDL_ERR_RUNTIME,
                             "einsum(): invalid subscript given at index %d in the equation string, subscripts must be "
                             "in [a-zA-Z]", (int)(p - eq));
        if (t->n == FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "einsum(): too many subscripts");
        t->lab[t->n++] = l;
    }
    return true;
}

/* einsum(equation, *operands): each operand laid out over all the labels (output labels first,
 * in the output's order, then the summed ones), multiplied, summed over the summed labels. A
 * label repeated in one operand takes its diagonal. */
bool impl_einsum(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    const char *eq = a[0].str;
    int nops = a[1].n;
    FcTensor **ops = a[1].ts;
    (void)sig;
    if (nops == 0) return err_raise(I, TDL_ERR_RUNTIME, "einsum(): must provide at least one operand");
    const char *arrow = strstr(eq, "->"), *lhs_end = arrow ? arrow : eq + strlen(eq);
    EinTerm terms[16], outt;
    int nterms = 0;
    for (const char *p = eq;;) {
        const char *c = memchr(p, ',', (size_t)(lhs_end - p));
        const char *e = c ? c : lhs_end;
        if (nterms == nops)
            return err_raise(I, TDL_ERR_RUNTIME, "einsum(): fewer operands were provided than specified in the equation");
        if (nterms == 16) return err_raise(I, TDL_ERR_RUNTIME, "einsum(): at most 16 operands are supported");
        if (!ein_term(I, eq, p, e, &terms[nterms++])) return false;
        if (!c) break;
        p = c + 1;
    }
    if (nterms < nops)
        return err_raise(I, TDL_ERR_RUNTIME, "einsum(): more operands were provided than specified in the equation");
    /* the ellipsis: each operand's covers ndim - n dims, right-aligned with the others' */
    int nell = 0;
    for (int k = 0; k < nops; k++) {
        EinTerm *t = &terms[k];
        if (t->ell < 0 && t->n != ops[k]->ndim)
            return err_raise(I, TDL_ERR_RUNTIME,
                             "einsum(): the number of subscripts in the equation (%d) does not match the number of "
                             "dimensions (%d) for operand %d and no ellipsis was given", t->n, ops[k]->ndim, k);
        if (t->ell >= 0 && t->n > ops[k]->ndim)
            return err_raise(I, TDL_ERR_RUNTIME,
                             "einsum(): the number of subscripts in the equation (%d) is more than the number of "
                             "dimensions (%d) for operand %d", t->n, ops[k]->ndim, k);
        if (t->ell >= 0 && ops[k]->ndim - t->n > nell) nell = ops[k]->ndim - t->n;
    }
    int count[EIN_LABELS] = {0};
    int64_t size[EIN_LABELS];
    for (int k = 0; k < nops; k++)
        for (int j = 0; j < terms[k].n; j++) count[terms[k].lab[j]]++;
    /* the result's labels */
    int order[EIN_LABELS], nord = 0;
    bool in_out[EIN_LABELS] = {false};
    if (arrow) {
        if (!ein_term(I, eq, arrow + 2, arrow + strlen(arrow), &outt)) return false;
        for (int j = 0; j <= outt.n; j++) {
            if (j == outt.ell)
                for (int q = 0; q < nell; q++) order[nord++] = 52 + q, in_out[52 + q] = true;
            if (j == outt.n) break;
            int l = outt.lab[j];
            if (in_out[l])
                return err_raise(I, TDL_ERR_RUNTIME, "einsum(): output subscript %c appears more than once in the output",
                                 label_char(l));
            if (!count[l])
                return err_raise(I, TDL_ERR_RUNTIME,
                                 "einsum(): output subscript %c does not appear in the equation for any input operand",
                                 label_char(l));
            in_out[l] = true;
            order[nord++] = l;
        }
    } else {
        for (int q = 0; q < nell; q++) order[nord++] = 52 + q, in_out[52 + q] = true;
        for (int l = 0; l < 52; l++)
            if (count[l] == 1) order[nord++] = l, in_out[l] = true;
    }
    int nout = nord;
    for (int k = 0; k < nops; k++)
        for (int j = 0; j < terms[k].n; j++) {
            int l = terms[k].lab[j];
            bool seen = false;
            for (int q = 0; q < nord && !seen; q++) seen = order[q] == l;
            if (!seen) order[nord++] = l;
        }
    for (int q = 0; q < nell; q++)      /* ellipsis dims left out of the output are summed */
        if (!in_out[52 + q]) order[nord++] = 52 + q;
    if (nord > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "einsum(): too many subscripts");
    for (int k = 1; k < nops; k++)
        if (ops[k]->dtype != ops[0]->dtype)
            return err_raise(I, TDL_ERR_RUNTIME, "expected scalar type %s but found %s",
                             fc_dtype_torch_name(ops[0]->dtype), fc_dtype_torch_name(ops[k]->dtype));
    for (int l = 0; l < EIN_LABELS; l++) size[l] = -1;
    FcTensor *prod = NULL, *tmp;
    FcError e;
    FcStatus st = FC_OK;
    for (int k = 0; k < nops && st == FC_OK; k++) {
        FcTensor *x = ops[k];
        EinTerm *t = &terms[k];
        /* the label of each dim of x */
        int lab[FC_MAX_DIMS], nd = x->ndim, ne = t->ell >= 0 ? nd - t->n : 0;
        for (int j = 0, q = 0; q < nd; j++) {
            if (j == t->ell)
                for (int z = 0; z < ne; z++) lab[q++] = 52 + nell - ne + z;
            if (j < t->n) lab[q++] = t->lab[j];
        }
        /* sizes, and the diagonal of a repeated label: one dim of stride the sum */
        int64_t shp[FC_MAX_DIMS], str[FC_MAX_DIMS];
        int ul[FC_MAX_DIMS], nu = 0;
        bool repeated = false;
        for (int q = 0; q < nd; q++)
            for (int z = 0; z < q; z++) repeated |= lab[z] == lab[q];
        FcTensor *y = fc_tensor_retain(x);
        if (repeated) st = fc_realize(I->fc, y, &e);
        for (int q = 0; q < nd && st == FC_OK; q++) {
            int z = 0;
            while (z < nu && ul[z] != lab[q]) z++;
            if (z < nu) {
                if (shp[z] != x->shape[q])
                    st = ferr(&e, FC_ERR_RUNTIME,
                                        "einsum(): subscript %c is repeated for operand %d but the sizes don't match, "
                                        "%lld != %lld", label_char(lab[q]), k, (long long)shp[z], (long long)x->shape[q]);
                else if (repeated) str[z] += y->strides[q];
                continue;
            }
            ul[nu] = lab[q];
            shp[nu] = x->shape[q];
            if (repeated) str[nu] = y->strides[q];
            nu++;
        }
        if (st == FC_OK && repeated) st = step(fc_as_strided(I->fc, y, nu, shp, str, y->offset, &tmp, &e), &y, &tmp);
        for (int z = 0; z < nu && st == FC_OK; z++) {
            int l = ul[z];
            if (size[l] >= 0 && size[l] != shp[z] && size[l] != 1 && shp[z] != 1) {
                char name[8];
                if (l < 52) snprintf(name, sizeof name, "%c", label_char(l));
                else snprintf(name, sizeof name, "...");
                st = ferr(&e, FC_ERR_RUNTIME,
                                    "einsum(): subscript %s has size %lld for operand %d which does not broadcast with "
                                    "previously seen size %lld", name, (long long)shp[z], k, (long long)size[l]);
            } else if (size[l] < 0 || size[l] == 1) {
                size[l] = shp[z];
            }
        }
        /* permute into the global order, then the missing labels as size-1 dims */
        int64_t perm[FC_MAX_DIMS], full[FC_MAX_DIMS];
        int np = 0;
        for (int q = 0; q < nord; q++) {
            full[q] = 1;
            for (int z = 0; z < nu; z++)
                if (ul[z] == order[q]) {
                    perm[np++] = z;
                    full[q] = shp[z];
                }
        }
        if (st == FC_OK) st = step(fc_permute(I->fc, y, nu, perm, &tmp, &e), &y, &tmp);
        if (st == FC_OK) st = step(fc_reshape(I->fc, y, nord, full, &tmp, &e), &y, &tmp);
        if (st == FC_OK && prod) st = step(fc_binary(I->fc, FC_OP_MUL, prod, y, &tmp, &e), &prod, &tmp);
        else if (st == FC_OK) prod = fc_tensor_retain(y);
        fc_tensor_release(y);
    }
    if (st == FC_OK && nord > nout) {
        uint64_t mask = 0;
        for (int q = nout; q < nord; q++) mask |= UINT64_C(1) << q;
        FcDType dt = prod->dtype;
        st = step(fc_reduce(I->fc, FC_OP_SUM, prod, mask, false, &tmp, &e), &prod, &tmp);
        if (st == FC_OK && prod->dtype != dt) st = step(fc_cast(I->fc, prod, dt, &tmp, &e), &prod, &tmp);
    }
    if (st != FC_OK) fc_tensor_release(prod);
    return result(I, st, &e, prod, out);
}

/* outer(vec2) / ger: a column of self times a row of vec2. */
bool impl_outer(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *col = NULL, *r = NULL;
    FcError e;
    (void)sig;
    if (x->ndim != 1) return err_raise(I, TDL_ERR_RUNTIME, "outer: Expected 1-D argument self, but got %d-D", x->ndim);
    if (y->ndim != 1) return err_raise(I, TDL_ERR_RUNTIME, "outer: Expected 1-D argument vec2, but got %d-D", y->ndim);
    FcStatus st = fc_unsqueeze(I->fc, x, 1, &col, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, col, y, &r, &e);
    fc_tensor_release(col);
    return chain_result(I, st, &e, r, out);
}

/* mm(mat2): two matrices; mv(vec): a matrix and a vector (torch's checks), then matmul. */
bool impl_mm(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *r = NULL;
    FcError e;
    (void)sig;
    if (x->ndim != 2) return err_raise(I, TDL_ERR_RUNTIME, "self must be a matrix");
    if (y->ndim != 2) return err_raise(I, TDL_ERR_RUNTIME, "mat2 must be a matrix");
    FcStatus st = fc_matmul(I->fc, x, y, &r, &e);
    return chain_result(I, st, &e, r, out);
}

bool impl_mv(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *v = a[1].t, *r = NULL;
    FcError e;
    (void)sig;
    if (x->ndim != 2 || v->ndim != 1)
        return err_raise(I, TDL_ERR_RUNTIME, "vector + matrix @ vector expected, got 1, %d, %d", x->ndim, v->ndim);
    if (x->shape[1] != v->shape[0])
        return err_raise(I, TDL_ERR_RUNTIME, "size mismatch, got %lld, %lldx%lld,%lld", (long long)x->shape[0],
                         (long long)x->shape[0], (long long)x->shape[1], (long long)v->shape[0]);
    FcStatus st = fc_matmul(I->fc, x, v, &r, &e);
    return chain_result(I, st, &e, r, out);
}

/* A tensor of t's shape with its last dim n replaced by two of n + |offset| at d1 and d2 (of the
 * result's dims), zero but for the offset diagonal, which holds t's last dim (zeros with that
 * diagonal written: the write is recorded, so the gradient reaches t). */
static FcStatus embed_diagonal(FcCtx *ctx, FcTensor *t, int64_t offset, int d1, int d2, FcTensor **out, FcError *e)
{
    int nd = t->ndim + 1;
    int64_t n = t->ndim ? t->shape[t->ndim - 1] : 1, m = n + (offset < 0 ? -offset : offset), shape[FC_MAX_DIMS];
    for (int k = 0, j = 0; k < nd; k++) shape[k] = k == d1 || k == d2 ? m : t->shape[j++];
    FcTensor *z = NULL, *diag = NULL;
    FcStatus st = fc_full(ctx, t->dtype, t->device, nd, shape, (FcScalar){.i = 0}, &z, e);
    if (st == FC_OK) st = fc_diagonal(ctx, z, offset, d1, d2, &diag, e);
    if (st == FC_OK) st = fc_assign(ctx, diag, t, e);
    fc_tensor_release(diag);
    if (st != FC_OK) fc_tensor_release(z);
    *out = st == FC_OK ? z : NULL;
    return st;
}

bool impl_diag_embed(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *r = NULL;
    FcError e;
    int d1, d2;
    (void)sig;
    if (!tensor_check(I, fc_wrap_dim(a[2].i, t->ndim + 1, &d1, &e), &e) ||
        !tensor_check(I, fc_wrap_dim(a[3].i, t->ndim + 1, &d2, &e), &e))
        return false;
    if (d1 == d2)
        return err_raise(I, TDL_ERR_RUNTIME, "diagonal dimensions cannot be identical %lld, %lld", (long long)a[2].i,
                         (long long)a[3].i);
    FcStatus st = embed_diagonal(I->fc, t, a[1].i, d1, d2, &r, &e);
    return result(I, st, &e, r, out);
}

/* diag(offset): a vector's square matrix, a matrix's diagonal (a copy). */
static FcStatus diag_of(FcCtx *ctx, FcTensor *t, int64_t offset, FcTensor **out, FcError *e)
{
    *out = NULL;
    if (t->ndim == 1) return embed_diagonal(ctx, t, offset, 0, 1, out, e);
    if (t->ndim != 2) return ferr(e, FC_ERR_RUNTIME, "matrix or a vector expected");
    /* torch 1.13's diag_out resizes its result to this length, which fails when it is negative */
    int64_t len = offset >= 0 ? (t->shape[0] < t->shape[1] - offset ? t->shape[0] : t->shape[1] - offset)
                              : (t->shape[0] + offset < t->shape[1] ? t->shape[0] + offset : t->shape[1]);
    if (len < 0) return ferr(e, FC_ERR_RUNTIME, "numel: integer multiplication overflow");
    FcTensor *v = NULL;
    FcStatus st = fc_diagonal(ctx, t, offset, 0, 1, &v, e);
    if (st == FC_OK) st = fc_clone(ctx, v, FC_MF_CONTIGUOUS, out, e);
    fc_tensor_release(v);
    return st;
}

bool impl_diag(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r = NULL;
    FcError e;
    (void)sig;
    FcStatus st = diag_of(I->fc, a[0].t, a[1].i, &r, &e);
    return result(I, st, &e, r, out);
}

bool impl_diagflat(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *f = NULL, *r = NULL;
    FcError e;
    (void)sig;
    FcStatus st = fc_flatten(I->fc, a[0].t, 0, -1, &f, &e);
    if (st == FC_OK && f->ndim == 0) {
        int64_t one = 1;
        st = step(fc_reshape(I->fc, f, 1, &one, &r, &e), &f, &r);
    }
    if (st == FC_OK) st = diag_of(I->fc, f, a[1].i, &r, &e);
    fc_tensor_release(f);
    return result(I, st, &e, r, out);
}

/* trace: the diagonal's sum (ints and bools give int64, as sum). */
bool impl_trace(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *v = NULL, *r = NULL;
    FcError e;
    (void)sig;
    if (t->ndim != 2) return err_raise(I, TDL_ERR_RUNTIME, "trace: expected a matrix, but got tensor with dim %d", t->ndim);
    if (t->dtype == FC_BOOL || t->dtype == FC_FLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"trace\" not implemented for '%s'", fc_dtype_torch_name(t->dtype));
    FcStatus st = fc_diagonal(I->fc, t, 0, 0, 1, &v, &e);
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_SUM, v, 0, false, &r, &e);
    fc_tensor_release(v);
    return result(I, st, &e, r, out);
}

/* ---- kron, block_diag, cartesian_prod, tensordot, inner, cross ---- */

/* kron(other): self's dims interleaved with size-1 ones, times other's the other way round (both
 * padded on the left to the same rank), the product's pairs of dims merged by a view: PyTorch's
 * KronImpl, whose view refuses a product laid out in a transposed operand's order. */
bool impl_kron(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *xv = NULL, *yv = NULL, *p = NULL, *r = NULL;
    FcError e;
    (void)sig;
    int nd = x->ndim > y->ndim ? x->ndim : y->ndim, px = nd - x->ndim, py = nd - y->ndim;
    if (2 * nd > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "kron: tdl supports at most %d dims", FC_MAX_DIMS / 2);
    int64_t xs[FC_MAX_DIMS], ys[FC_MAX_DIMS], rs[FC_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        xs[2 * i] = i >= px ? x->shape[i - px] : 1;
        xs[2 * i + 1] = 1;
        ys[2 * i] = 1;
        ys[2 * i + 1] = i >= py ? y->shape[i - py] : 1;
        rs[i] = xs[2 * i] * ys[2 * i + 1];
    }
    FcStatus st = fc_view(I->fc, x, 2 * nd, xs, &xv, &e);
    if (st == FC_OK) st = fc_view(I->fc, y, 2 * nd, ys, &yv, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, xv, yv, &p, &e);
    if (st == FC_OK) st = fc_view(I->fc, p, nd, rs, &r, &e);
    fc_tensor_release(xv);
    fc_tensor_release(yv);
    fc_tensor_release(p);
    return result(I, st, &e, r, out);
}

/* block_diag(*tensors): zeros of the operands' result type, each operand (0-dim: 1 x 1, 1-D: a
 * row) written at its place on the diagonal (recorded writes: the gradient reaches each). */
bool impl_block_diag(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor **ts = a[0].ts, *r = NULL;
    int n = a[0].n;
    FcError e;
    (void)sig;
    if (n == 0) {
        int64_t shape[2] = {1, 0};
        FcStatus st = fc_empty(I->fc, FC_FLOAT32, fc_cpu(), 2, shape, NULL, &r, &e);
        return result(I, st, &e, r, out);
    }
    for (int k = 0; k < n; k++)
        if (!fc_device_eq(ts[k]->device, ts[0]->device)) {
            char d0[32], dk[32];
            return err_raise(I, TDL_ERR_RUNTIME, "torch.block_diag: input tensors must all be on the same device. Input 0 "
                             "is on device %s and input %d is on device %s.", fc_device_name(ts[0]->device, d0), k,
                             fc_device_name(ts[k]->device, dk));
        }
    FcOperand *ops = mem_calloc((size_t)n, sizeof *ops);
    if (!ops) return err_nomem(I);
    int64_t shape[2] = {0, 0};
    for (int k = 0; k < n; k++) {
        ops[k] = tensor_operand(ts[k]);
        if (ts[k]->ndim > 2) {
            mem_free(ops);
            return err_raise(I, TDL_ERR_RUNTIME, "torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                             "Input %d has %d dimensions", k, ts[k]->ndim);
        }
        shape[0] += ts[k]->ndim == 2 ? ts[k]->shape[0] : 1;
        shape[1] += ts[k]->ndim == 2 ? ts[k]->shape[1] : ts[k]->ndim == 1 ? ts[k]->shape[0] : 1;
    }
    FcDType dt = fc_result_type(ops, n);
    mem_free(ops);
    FcStatus st = fc_full(I->fc, dt, ts[0]->device, 2, shape, (FcScalar){.i = 0}, &r, &e);
    int64_t at[2] = {0, 0};
    for (int k = 0; k < n && st == FC_OK; k++) {
        FcTensor *t = ts[k], *rows = NULL, *block = NULL;
        int64_t h = t->ndim == 2 ? t->shape[0] : 1, w = t->ndim == 2 ? t->shape[1] : t->ndim == 1 ? t->shape[0] : 1;
        st = narrow(I->fc, r, 0, at[0], h, &rows, &e);
        if (st == FC_OK) st = narrow(I->fc, rows, 1, at[1], w, &block, &e);
        if (st == FC_OK) st = fc_assign(I->fc, block, t, &e);
        fc_tensor_release(rows);
        fc_tensor_release(block);
        at[0] += h;
        at[1] += w;
    }
    return chain_result(I, st, &e, r, out);
}

/* cartesian_prod(*tensors): 1-D tensors' meshgrid (ij), each grid flattened, stacked as columns;
 * one tensor is returned itself, as PyTorch does. */
bool impl_cartesian_prod(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor **ts = a[0].ts, *cols[FC_MAX_DIMS] = {0}, *r = NULL;
    int n = a[0].n;
    FcError e;
    (void)sig;
    for (int k = 0; k < n; k++)
        if (ts[k]->ndim != 1) {
            char buf[256];
            return err_raise(I, TDL_ERR_RUNTIME, "Expect a 1D vector, but got shape %s",
                             ints_text(ts[k]->ndim, ts[k]->shape, buf, sizeof buf));
        }
    if (n == 1) return tensor_value_steal(I, fc_tensor_retain(ts[0]), out);
    if (n == 0) return err_raise(I, TDL_ERR_RUNTIME, "meshgrid expects a non-empty TensorList");
    for (int k = 0; k + 1 < n; k++) {
        if (ts[k]->dtype != ts[k + 1]->dtype)
            return err_raise(I, TDL_ERR_RUNTIME, "meshgrid expects all tensors to have the same dtype");
        if (!fc_device_eq(ts[k]->device, ts[k + 1]->device))
            return err_raise(I, TDL_ERR_RUNTIME, "meshgrid expects all tensors to have the same device");
    }
    if (n > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "cartesian_prod: too many tensors (%d)", n);
    int64_t shape[FC_MAX_DIMS], view[FC_MAX_DIMS];
    for (int k = 0; k < n; k++) {
        shape[k] = ts[k]->shape[0];
        view[k] = 1;
    }
    FcStatus st = FC_OK;
    for (int k = 0; k < n && st == FC_OK; k++) {
        FcTensor *v = NULL, *g = NULL;
        view[k] = -1;
        st = fc_view(I->fc, ts[k], n, view, &v, &e);
        view[k] = 1;
        if (st == FC_OK) st = fc_expand(I->fc, v, n, shape, &g, &e);
        if (st == FC_OK) st = fc_flatten(I->fc, g, 0, -1, &cols[k], &e);
        fc_tensor_release(v);
        fc_tensor_release(g);
    }
    if (st == FC_OK) st = fc_stack(I->fc, n, cols, 1, &r, &e);
    for (int k = 0; k < n; k++) fc_tensor_release(cols[k]);
    return result(I, st, &e, r, out);
}

/* tensordot over dims d1 of x and d2 of y (PyTorch's at::tensordot): a size-1 dim facing a larger
 * one is summed first; x's free dims then its contracted ones, by y's contracted then free ones,
 * as one mm, reshaped to the free dims (the mm refuses operands of two dtypes, 1.13 itself does not). */
static bool tensordot_over(Interp *I, FcTensor *x, FcTensor *y, int n, const int64_t *d1, const int64_t *d2, Value *out)
{
    FcError e;
    FcTensor *t1 = fc_tensor_retain(x), *t2 = fc_tensor_retain(y), *tmp, *m1 = NULL, *m2 = NULL, *p = NULL, *r = NULL;
    FcStatus st = FC_OK;
    int64_t csize = 1;
    for (int i = 0; i < n && st == FC_OK; i++) {
        int w1, w2;
        st = fc_wrap_dim(d1[i], x->ndim, &w1, &e);
        if (st == FC_OK) st = fc_wrap_dim(d2[i], y->ndim, &w2, &e);
        if (st != FC_OK) break;
        int64_t s1 = x->ndim ? x->shape[w1] : 1, s2 = y->ndim ? y->shape[w2] : 1;
        if (s2 == 1) st = step(fc_reduce(I->fc, FC_OP_SUM, t1, 1ull << w1, true, &tmp, &e), &t1, &tmp);
        else if (s1 == 1) st = step(fc_reduce(I->fc, FC_OP_SUM, t2, 1ull << w2, true, &tmp, &e), &t2, &tmp);
        else if (s1 != s2)
            st = ferr(&e, FC_ERR_RUNTIME, "contracted dimensions need to match, but first has size %lld in dim %lld and "
                      "second has size %lld in dim %lld", (long long)s1, (long long)d1[i], (long long)s2, (long long)d2[i]);
        else csize *= s1;
    }
    bool seen1[FC_MAX_DIMS] = {0}, seen2[FC_MAX_DIMS] = {0};
    for (int k = 0; k < 2 && st == FC_OK; k++) {
        const FcTensor *t = k ? y : x;
        const int64_t *d = k ? d2 : d1;
        bool *seen = k ? seen2 : seen1;
        for (int i = 0; i < n && st == FC_OK; i++) {
            int w;
            st = fc_wrap_dim(d[i], t->ndim, &w, &e);
            if (st == FC_OK && seen[w]) st = ferr(&e, FC_ERR_RUNTIME, "dim %d appears multiple times in the list of dims", w);
            if (st == FC_OK) seen[w] = true;
        }
    }
    int64_t p1[FC_MAX_DIMS], p2[FC_MAX_DIMS], rs[FC_MAX_DIMS], size1 = 1, size2 = 1;
    int n1 = 0, n2 = 0, nr = 0;
    if (st == FC_OK) {
        for (int i = 0; i < x->ndim; i++)
            if (!seen1[i]) {
                p1[n1++] = i;
                size1 *= t1->shape[i];
                rs[nr++] = t1->shape[i];
            }
        for (int i = 0; i < n; i++) p1[n1++] = d1[i];
        for (int i = 0; i < n; i++) p2[n2++] = d2[i];
        for (int i = 0; i < y->ndim; i++)
            if (!seen2[i]) {
                p2[n2++] = i;
                size2 *= t2->shape[i];
                rs[nr++] = t2->shape[i];
            }
        tmp = NULL;
        st = fc_permute(I->fc, t1, n1, p1, &tmp, &e);
        if (st == FC_OK) st = fc_reshape(I->fc, tmp, 2, (int64_t[]){size1, csize}, &m1, &e);
        fc_tensor_release(tmp);
    }
    if (st == FC_OK) {
        tmp = NULL;
        st = fc_permute(I->fc, t2, n2, p2, &tmp, &e);
        if (st == FC_OK) st = fc_reshape(I->fc, tmp, 2, (int64_t[]){csize, size2}, &m2, &e);
        fc_tensor_release(tmp);
    }
    if (st == FC_OK) st = fc_matmul(I->fc, m1, m2, &p, &e);
    if (st == FC_OK) st = fc_reshape(I->fc, p, nr, rs, &r, &e);
    fc_tensor_release(t1);
    fc_tensor_release(t2);
    fc_tensor_release(m1);
    fc_tensor_release(m2);
    fc_tensor_release(p);
    return result(I, st, &e, r, out);
}

/* The ints of a dims list of tensordot's pair (a list or tuple of ints). */
static bool dims_list(Interp *I, Value v, int64_t *d, int *n)
{
    if (v.tag != V_LIST && v.tag != V_TUPLE)
        return err_raise(I, TDL_ERR_TYPE, "tensordot(): argument 'dims_a' must be tuple of ints, not %s", val_type_name(v));
    size_t len = v.tag == V_LIST ? as_list(v)->n : as_tuple(v)->n;
    const Value *it = v.tag == V_LIST ? as_list(v)->items : as_tuple(v)->items;
    if (len > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "tensordot: too many dims (%zu)", len);
    for (size_t k = 0; k < len; k++) {
        if (!is_intlike(it[k]))
            return err_raise(I, TDL_ERR_TYPE, "tensordot(): argument 'dims_a' must be tuple of ints, but found element "
                             "of type %s at pos %zu", val_type_name(it[k]), k);
        d[k] = it[k].i;
    }
    *n = (int)len;
    return true;
}

/* tensordot(a, b, dims): dims an int (a's last dims with b's first) or a pair of lists, as
 * torch.functional.tensordot reads them. */
bool impl_tensordot(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    TensorArg *dims = ARG("dims");
    int64_t d1[FC_MAX_DIMS], d2[FC_MAX_DIMS];
    int n1 = 0, n2 = 0;
    Value v = dims->v;
    if (v.tag == V_UNDEF || is_intlike(v)) {
        int64_t k = v.tag == V_UNDEF ? 2 : v.i;
        if (k < 0) return err_raise(I, TDL_ERR_RUNTIME, "tensordot expects dims >= 0, but got dims=%lld", (long long)k);
        if (k > FC_MAX_DIMS) return err_raise(I, TDL_ERR_RUNTIME, "tensordot: too many dims (%lld)", (long long)k);
        for (int64_t i = 0; i < k; i++) {
            d1[i] = i - k;
            d2[i] = i;
        }
        n1 = n2 = (int)k;
    } else if (v.tag == V_LIST || v.tag == V_TUPLE) {
        size_t len = v.tag == V_LIST ? as_list(v)->n : as_tuple(v)->n;
        const Value *it = v.tag == V_LIST ? as_list(v)->items : as_tuple(v)->items;
        if (len > 2) return err_raise(I, TDL_ERR_VALUE, "too many values to unpack (expected 2)");
        if (len < 2) return err_raise(I, TDL_ERR_VALUE, "not enough values to unpack (expected 2, got %zu)", len);
        if (!dims_list(I, it[0], d1, &n1) || !dims_list(I, it[1], d2, &n2)) return false;
    } else {
        Buf b = {0};
        bool ok = val_str(I, v, &b);
        if (ok)
            err_raise(I, TDL_ERR_RUNTIME, "tensordot expects dims to be int or Tuple[List[int], List[int]] or "
                      "List[List[int]] containing two lists, but got dims=%.*s", (int)b.n, b.p ? b.p : "");
        buf_free(&b);
        return false;
    }
    if (n1 != n2) return err_raise(I, TDL_ERR_RUNTIME, "both dimension lists should have same length");
    return tensordot_over(I, a[0].t, a[1].t, n1, d1, d2, out);
}

/* inner(other): a product when either is 0-dim, else tensordot over both last dims. */
bool impl_inner(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *r = NULL;
    FcError e;
    (void)sig;
    if (x->ndim == 0 || y->ndim == 0) {
        FcStatus st = fc_binary(I->fc, FC_OP_MUL, x, y, &r, &e);
        return result(I, st, &e, r, out);
    }
    if (x->shape[x->ndim - 1] != y->shape[y->ndim - 1]) {
        char bx[256], by[256];
        return err_raise(I, TDL_ERR_RUNTIME, "inner() the last dimension must match on both input tensors but got shapes "
                         "%s and %s", ints_text(x->ndim, x->shape, bx, sizeof bx), ints_text(y->ndim, y->shape, by, sizeof by));
    }
    int64_t last = -1;
    return tensordot_over(I, x, y, 1, &last, &last, out);
}

/* cross(other, dim): self and other broadcast, r_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1} along dim
 * (indices mod 3); floats as PyTorch's CPU kernel rounds it, one FMA of a_{i+1} b_{i+2} less the
 * rounded a_{i+2} b_{i+1}. dim None: self's first dim of size 3 (1.13 gives no warning). */
bool impl_cross(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *y = a[1].t, *xb = NULL, *yb = NULL, *i1 = NULL, *i2 = NULL, *a1 = NULL, *a2 = NULL,
             *b1 = NULL, *b2 = NULL, *p = NULL, *q = NULL, *r = NULL;
    TensorArg *dim = ARG("dim");
    FcError e;
    int64_t d = dim->none ? -1 : dim->i;
    if (dim->none) {
        for (int k = 0; k < x->ndim && d < 0; k++)
            if (x->shape[k] == 3) d = k;
        if (d < 0) return err_raise(I, TDL_ERR_RUNTIME, "no dimension of size 3 in input");
    }
    if (x->ndim != y->ndim)
        return err_raise(I, TDL_ERR_RUNTIME, "linalg.cross: inputs must have the same number of dimensions.");
    int w;
    if (!tensor_check(I, fc_wrap_dim(d, x->ndim, &w, &e), &e)) return false;
    int64_t sx = x->ndim ? x->shape[w] : 1, sy = y->ndim ? y->shape[w] : 1;
    if (sx != 3 || sy != 3)
        return err_raise(I, TDL_ERR_RUNTIME, "linalg.cross: inputs dimension %lld must have length 3. Got %lld and %lld",
                         (long long)d, (long long)sx, (long long)sy);
    int64_t shape[FC_MAX_DIMS];
    int n;
    FcStatus st = fc_broadcast_shapes(x->ndim, x->shape, y->ndim, y->shape, &n, shape, &e);
    if (st != FC_OK) return tensor_check(I, st, &e);
    if (x->dtype != y->dtype)
        return err_raise(I, TDL_ERR_RUNTIME, "expected scalar type %s but found %s", fc_dtype_torch_name(x->dtype),
                         fc_dtype_torch_name(y->dtype));
    if (x->dtype == FC_BOOL || x->dtype == FC_FLOAT16 || x->dtype == FC_BFLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"cross\" not implemented for '%s'", fc_dtype_torch_name(x->dtype));
    st = fc_expand(I->fc, x, n, shape, &xb, &e);
    if (st == FC_OK) st = fc_expand(I->fc, y, n, shape, &yb, &e);
    if (st == FC_OK) st = index_expr(I->fc, 3, 1, 1, 3, &i1, &e);
    if (st == FC_OK) st = index_expr(I->fc, 3, 1, 2, 3, &i2, &e);
    if (st == FC_OK) st = select_by(I->fc, xb, w, i1, &a1, &e);
    if (st == FC_OK) st = select_by(I->fc, xb, w, i2, &a2, &e);
    if (st == FC_OK) st = select_by(I->fc, yb, w, i1, &b1, &e);
    if (st == FC_OK) st = select_by(I->fc, yb, w, i2, &b2, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, a2, b1, &p, &e);
    if (fc_dtype_is_float(x->dtype)) {
        if (st == FC_OK) st = fc_unary(I->fc, FC_OP_NEG, p, &q, &e);
        if (st == FC_OK) st = fc_fma(I->fc, q, a1, b2, &r, &e);
    } else {
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_MUL, a1, b2, &q, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, q, p, &r, &e);
    }
    FcTensor *tmp[] = {xb, yb, i1, i2, a1, a2, b1, b2, p, q};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) fc_tensor_release(tmp[k]);
    return result(I, st, &e, r, out);
}

/* ---- cov, corrcoef ---- */

/* Whether every element of t is >= 0 (t not empty). */
static bool all_nonnegative(Interp *I, FcTensor *t, bool *yes)
{
    FcTensor *ge = NULL, *all = NULL;
    FcScalar v = {0};
    FcError e;
    FcStatus st = binary_scalar(I->fc, FC_OP_GE, t, 0.0, &ge, &e);
    if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_ALL, ge, 0, false, &all, &e);
    if (st == FC_OK) st = fc_item(I->fc, all, &v, &e);
    fc_tensor_release(ge);
    fc_tensor_release(all);
    *yes = v.i != 0;
    return tensor_check(I, st, &e);
}

/* The checks of one of cov's weights (fweights: integral, aweights: floating). */
static bool cov_weights(Interp *I, FcTensor *w, const char *name, bool integral, int64_t nobs)
{
    bool ok;
    if (w->ndim > 1)
        return err_raise(I, TDL_ERR_RUNTIME, "cov(): expected %s to have one or fewer dimensions but got %s with %d "
                         "dimensions", name, name, w->ndim);
    if (integral ? !fc_dtype_is_int(w->dtype) : !fc_dtype_is_float(w->dtype))
        return err_raise(I, TDL_ERR_RUNTIME, "cov(): expected %s to have %s dtype but got %s with %s dtype", name,
                         integral ? "integral" : "floating point", name, fc_dtype_torch_name(w->dtype));
    if (fc_tensor_numel(w) != nobs)
        return err_raise(I, TDL_ERR_RUNTIME, "cov(): expected %s to have the same numel as there are observations in "
                         "the input but got %lld != %lld", name, (long long)fc_tensor_numel(w), (long long)nobs);
    if (nobs != 0 && !all_nonnegative(I, w, &ok)) return false;
    if (nobs != 0 && !ok) return err_raise(I, TDL_ERR_RUNTIME, "cov(): %s cannot be negative", name);
    return true;
}

/* cov of x (variables as rows, observations as columns) as PyTorch 1.13 composes it. */
static bool covariance(Interp *I, FcTensor *x, int64_t correction, FcTensor *fw, FcTensor *aw, FcTensor **out)
{
    FcTensor *in = NULL, *w = NULL, *ws = NULL, *wx = NULL, *s = NULL, *avg = NULL, *nf = NULL, *t = NULL, *u = NULL,
             *c = NULL, *ct = NULL, *r = NULL, *tmp;
    FcError e;
    FcScalar v = {0};
    *out = NULL;
    if (x->ndim > 2)
        return err_raise(I, TDL_ERR_RUNTIME, "cov(): expected input to have two or fewer dimensions but got an input "
                         "with %d dimensions", x->ndim);
    if (x->dtype == FC_BOOL) return err_raise(I, TDL_ERR_RUNTIME, "cov(): bool dtype is not supported for input");
    FcStatus st = x->ndim < 2 ? fc_view(I->fc, x, 2, (int64_t[]){1, -1}, &in, &e) : (in = fc_tensor_retain(x), FC_OK);
    if (!tensor_check(I, st, &e)) return false;
    int64_t nobs = in->shape[1];
    bool ok = (!fw || cov_weights(I, fw, "fweights", true, nobs)) && (!aw || cov_weights(I, aw, "aweights", false, nobs));
    if (ok) {
        st = fw && aw ? fc_binary(I->fc, FC_OP_MUL, fw, aw, &w, &e) : FC_OK;
        if (!w && (fw || aw)) w = fc_tensor_retain(fw ? fw : aw);
        if (st == FC_OK) st = w ? fc_reduce(I->fc, FC_OP_SUM, w, 0, false, &ws, &e) : int_scalar(I->fc, FC_INT64, nobs, &ws, &e);
        if (st == FC_OK && w) {
            st = binary_scalar(I->fc, FC_OP_NE, ws, 0.0, &t, &e);
            if (st == FC_OK) st = fc_item(I->fc, t, &v, &e);
            fc_tensor_release(t);
            t = NULL;
            if (st == FC_OK && !v.i) {
                ok = err_raise(I, TDL_ERR_RUNTIME, "cov(): weights sum to zero, can't be normalized");
                st = FC_ERR_RUNTIME;
            }
        }
    }
    if (ok && st == FC_OK) {
        st = w ? fc_binary(I->fc, FC_OP_MUL, in, w, &wx, &e) : (wx = fc_tensor_retain(in), FC_OK);
        if (st == FC_OK) st = fc_reduce(I->fc, FC_OP_SUM, wx, UINT64_C(1) << 1, false, &s, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_DIV, s, ws, &avg, &e);
        if (st == FC_OK && w && correction != 0 && aw) {
            st = fc_binary(I->fc, FC_OP_MUL, w, aw, &t, &e);
            if (st == FC_OK) st = step(fc_reduce(I->fc, FC_OP_SUM, t, 0, false, &tmp, &e), &t, &tmp);
            if (st == FC_OK) st = step(binary_scalar(I->fc, FC_OP_MUL, t, (double)correction, &tmp, &e), &t, &tmp);
            if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_DIV, t, ws, &tmp, &e), &t, &tmp);
            if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, ws, t, &nf, &e);
            fc_tensor_release(t);
            t = NULL;
        } else if (st == FC_OK) {
            FcTensor *k = NULL;
            st = fc_scalar(I->fc, FC_INT64, (FcScalar){.i = correction}, true, &k, &e);
            if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, ws, k, &nf, &e);
            fc_tensor_release(k);
        }
        if (st == FC_OK) st = binary_scalar(I->fc, FC_OP_LE, nf, 0.0, &u, &e);
        if (st == FC_OK) st = fc_item(I->fc, u, &v, &e);
        if (st == FC_OK && v.i) {
            ok = interp_warn(I, TDL_ERR_USER_WARNING, "cov(): degrees of freedom is <= 0 (Triggered internally at  "
                             "./aten/src/ATen/native/Correlation.cpp:100.)");
            if (ok) st = step(int_scalar(I->fc, nf->dtype, 0, &tmp, &e), &nf, &tmp);
        }
    }
    if (ok && st == FC_OK) {
        FcTensor *col = NULL;
        st = fc_unsqueeze(I->fc, avg, 1, &col, &e);
        if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_SUB, in, col, &tmp, &e), &in, &tmp);
        fc_tensor_release(col);
        if (st == FC_OK) st = w ? fc_binary(I->fc, FC_OP_MUL, in, w, &t, &e) : (t = fc_tensor_retain(in), FC_OK);
        if (st == FC_OK) st = fc_transpose(I->fc, t, 0, 1, &ct, &e);
        if (st == FC_OK) st = fc_matmul(I->fc, in, ct, &c, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_DIV, c, nf, &r, &e);
        uint64_t ones = 0;
        for (int k = 0; st == FC_OK && k < r->ndim; k++)
            if (r->shape[k] == 1) ones |= UINT64_C(1) << k;
        if (st == FC_OK && ones) st = step(fc_squeeze(I->fc, r, ones, &tmp, &e), &r, &tmp);
    }
    FcTensor *rel[] = {in, w, ws, wx, s, avg, nf, t, u, c, ct};
    for (size_t k = 0; k < sizeof rel / sizeof *rel; k++) fc_tensor_release(rel[k]);
    if (!ok) {
        fc_tensor_release(r);
        return false;
    }
    *out = st == FC_OK ? r : NULL;
    return tensor_check(I, st, &e);
}

bool impl_cov(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    TensorArg *fw = ARG("fweights"), *aw = ARG("aweights");
    FcTensor *r;
    return covariance(I, a[0].t, ARG("correction")->i, fw->none ? NULL : fw->t, aw->none ? NULL : aw->t, &r) &&
           tensor_value_steal(I, r, out);
}

/* corrcoef: cov normalised by the standard deviations (rows then columns), clipped to [-1, 1];
 * a single variable's c / c. */
bool impl_corrcoef(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *x = a[0].t, *c = NULL, *d = NULL, *sd = NULL, *col = NULL, *row = NULL, *r = NULL, *lo = NULL, *hi = NULL, *tmp;
    FcError e;
    (void)sig;
    if (x->ndim > 2)
        return err_raise(I, TDL_ERR_RUNTIME, "corrcoef(): expected input to have two or fewer dimensions but got an "
                         "input with %d dimensions", x->ndim);
    if (!covariance(I, x, 1, NULL, NULL, &c)) return false;
    FcStatus st;
    if (c->ndim == 0) {
        st = fc_binary(I->fc, FC_OP_DIV, c, c, &r, &e);
        fc_tensor_release(c);
        return result(I, st, &e, r, out);
    }
    int64_t n = c->shape[0];
    st = fc_diagonal(I->fc, c, 0, 0, 1, &d, &e);
    if (st == FC_OK) st = fc_unary(I->fc, FC_OP_SQRT, d, &sd, &e);
    if (st == FC_OK) st = fc_view(I->fc, sd, 2, (int64_t[]){n, 1}, &col, &e);
    if (st == FC_OK) st = fc_view(I->fc, sd, 2, (int64_t[]){1, n}, &row, &e);
    if (st == FC_OK) st = fc_binary(I->fc, FC_OP_DIV, c, col, &r, &e);
    if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_DIV, r, row, &tmp, &e), &r, &tmp);
    if (st == FC_OK) st = fc_scalar(I->fc, FC_INT64, (FcScalar){.i = -1}, true, &lo, &e);
    if (st == FC_OK) st = fc_scalar(I->fc, FC_INT64, (FcScalar){.i = 1}, true, &hi, &e);
    if (st == FC_OK) st = step(fc_clamp(I->fc, r, lo, hi, &tmp, &e), &r, &tmp);
    FcTensor *rel[] = {c, d, sd, col, row, lo, hi};
    for (size_t k = 0; k < sizeof rel / sizeof *rel; k++) fc_tensor_release(rel[k]);
    return chain_result(I, st, &e, r, out);
}
