/* kplan.c — the kernel plan: the analysis of a scheduled kernel (FcKernel) that every backend
 * needs before it can run or compile it, written once so that the CPU executor, the CUDA code
 * generator and the scheduler cannot drift apart on it (they each had a copy: two validators that
 * differed on which reductions may own loops and where a negative extent was refused, two rules
 * for which loop a reduction's body runs along).
 *
 * What it holds: the one validator of a kernel's code; each operand linked to the instruction
 * that wrote it (registers may be reused: a read names the last write before it); the loops each
 * value varies along (deps) and the list each instruction belongs to (the innermost inner
 * reduction whose loops it varies along), by the rules the scheduler also applies to its code
 * while it is not final (fc_kplan_domains); the vector loop the scheduler fixes for a kernel with
 * inner reductions, from the target's thresholds (fc_kplan_chunk_loop); the order
 * of evaluation (invariants, the top list, each reduction's body, each list by domain); and, from
 * the vector loop a backend picks for the top list, the vector loop of every other list
 * (fc_kplan_chunks); the order of execution (a reduction's body before it) and, over the reads a
 * backend gives (its fusions may change them), each value's last use (fc_kplan_live); and which
 * values are precomputed over their own domain before the kernel runs (fc_kplan_pre: what the
 * CPU fills its tables with and the CUDA generator's tdl_pre computes); and the fused ops of
 * ops.def (fc_kplan_fuse: a select that compares with a constant, a multiply-add), made on the
 * scheduled code where the kernel's backend takes them, which both backends then read as ops.
 * Each value's domain (its deps) is the level it is hoisted to; how a backend keeps a value
 * across the points of its domain (the CPU's memo tables, the GPU's nest levels) is its own
 * layout. What is particular to one backend (its op tables, its buffers, how it runs a fused op,
 * such as the CPU reading a multiply-add's gathered rows in place, its launch shape) stays in it.
 * Depends on fcdim.h, internal.h only. */
#include "internal.h"
#include "mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_arg(FcOp op) { return op == FC_OP_ARGMAX || op == FC_OP_ARGMIN; }

/* The dtype operand `which` of in must have, given the dtype of its a (casts and comparisons
 * take any a; the others read their own dtype, WHERE's condition bool, WHERE_CMP's compared
 * value its src_dtype). */
static FcDType operand_dtype(const FcInstr *in, int which, FcDType a_dt)
{
    if (in->op == FC_OP_CAST || in->op == FC_OP_ISNAN || fc_op_is_compare(in->op))
        return a_dt;
    if (in->op == FC_OP_WHERE && which == 0)
        return FC_BOOL;
    if (in->op == FC_OP_WHERE_CMP && which == 0)
        return in->src_dtype;
    return in->dtype;
}

/* The loops instruction in varies along over loops of these extents (those of extent 1 left out;
 * one of extent 0 counts, so that nothing read under an empty loop is hoisted out of it and
 * computed), given what each register it reads varies along (rdeps, by register) and, for a
 * reduction, its own loops own (its body's variation along them stays inside it). */
static uint64_t instr_deps(const FcInstr *in, int nloop, const int64_t *extent, const uint64_t *rdeps,
                           uint64_t own)
{
    uint64_t d = 0, body = in->a >= 0 ? rdeps[in->a] : 0;
    if (in->op == FC_OP_LOAD) {
        for (int l = 0; l < nloop; l++)
            if (in->strides[l] != 0 && extent[l] != 1)
                d |= (uint64_t)1 << l;
        for (int g = 0; g < in->ngather; g++)
            d |= rdeps[in->gathers[g].reg];
    } else if (in->op == FC_OP_IOTA) {
        if (nloop > 0 && extent[in->loop] != 1)
            d |= (uint64_t)1 << in->loop;
    }
    if (in->b >= 0)
        d |= rdeps[in->b];
    if (in->c >= 0)
        d |= rdeps[in->c];
    if (!fc_op_is_reduce(in->op))
        return d | body;
    for (int b = 0; b < in->nbound; b++)
        d |= rdeps[in->bounds[b].reg];
    return d | (body & ~own);
}

/* own[i]: the loops instruction i iterates (owner[l] == i), for n instructions. */
static void own_loops(int nloop, const int *owner, int n, uint64_t *own)
{
    memset(own, 0, (size_t)n * sizeof *own);
    for (int l = 0; l < nloop; l++)
        if (owner[l] >= 0)
            own[owner[l]] |= (uint64_t)1 << l;
}

/* list[i] for n instructions: the first reduction after i whose loops (own) i varies along. */
static void lists(int n, const uint64_t *deps, const uint64_t *own, int *list)
{
    for (int i = 0; i < n; i++) {
        list[i] = -1;
        for (int r = i + 1; r < n && list[i] < 0; r++)
            if (deps[i] & own[r])
                list[i] = r;
    }
}

void fc_kplan_domains(const FcInstr *code, int n, int nloop, const int64_t *extent, const int *owner,
                      uint64_t *deps, uint64_t *own, int *list)
{
    own_loops(nloop, owner, n, own);
    for (int i = 0; i < n; i++)
        deps[i] = instr_deps(&code[i], nloop, extent, deps, own[i]);
    lists(n, deps, own, list);
}

void fc_kplan_chunks(int n, int nloop, const uint64_t *deps, const uint64_t *own, const int *list, int cl,
                     uint64_t clmask, int *cx)
{
    /* A list comes after its members in the code (list[i] > i), so backwards every list's own
     * vector loop is known before its members'. */
    for (int i = n - 1; i >= 0; i--) {
        int r = list[i];
        if (r < 0) {
            cx[i] = cl;
            continue;
        }
        uint64_t mask = cx[r] < 0 ? 0 : cx[r] == cl ? clmask : (uint64_t)1 << cx[r];
        int last = -1;
        for (int l = 0; l < nloop; l++)
            if (own[r] >> l & 1)
                last = l;
        cx[i] = (deps[r] & mask) || last < 0 ? cx[r] : last;
    }
}

int fc_target_chunk_loop(const FcTarget *t, int nloop, const int64_t *extent, const int *owner, bool scatter)
{
    int cl = -1;
    for (int l = 0; l < nloop; l++)
        if (!owner || owner[l] < 0)
            cl = l;
    if (cl < 0 || scatter || extent[cl] >= t->short_loop)
        return cl;
    int best = cl;
    for (int l = 0; l < nloop; l++)
        if ((!owner || owner[l] < 0) && extent[l] >= extent[best])
            best = l;
    return extent[best] >= t->long_loop && extent[best] >= 4 * extent[cl] ? best : cl;
}

/* A root loop shorter than this is not taken for a kernel's fixed vector loop unless it is the
 * natural one: the scheduler's own threshold for a loop that fills chunks, not the target's
 * short_loop (which decides when the innermost loop gives way to a longer one). The two differ
 * on purpose: with short_loop (32) here, roi_align over 16 channels would run along a 7-long bin
 * loop instead of the channels, every coordinate and weight then computed per element rather
 * than once per chunk of channels (bench/roi_align.sh's small workload, measured: several times
 * slower). It is as low as 4 so that few channels (4 to 15) still count as such a loop: above
 * it, roi_align over 4 channels ran along its box loop, each sample's geometry computed again
 * for every channel (bench/grad.sh's 4-channel step). */
enum { FIXED_MIN_LOOP = 4 };

int fc_kplan_chunk_loop(const FcTarget *t, int nloop, const int64_t *extent, const int *owner, bool scatter, int n,
                        const uint64_t *deps)
{
    int cl = fc_target_chunk_loop(t, nloop, extent, owner, scatter);
    bool inner = false;
    for (int l = 0; l < nloop; l++)
        inner = inner || owner[l] >= 0;
    if (cl < 0 || scatter || !inner)
        return cl;
    int best = cl, best_wide = INT32_MAX;
    for (int l = nloop - 1; l >= 0; l--) {
        if (owner[l] >= 0 || (l != cl && extent[l] < FIXED_MIN_LOOP))
            continue;
        int wide = 0;
        for (int i = 0; i < n; i++)
            wide += (int)(deps[i] >> l & 1);
        if (wide < best_wide || (wide == best_wide && l == cl)) {
            best = l;
            best_wide = wide;
        }
    }
    return best;
}

void fc_kplan_free(FcPlan *p)
{
    if (!p)
        return;
    mem_free(p->block);
    mem_free(p);
}

/* Records the first error: "<who> kernel: <message>". */
static FcStatus bad(FcError *err, FcStatus st, const char *who, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static FcStatus bad(FcError *err, FcStatus st, const char *who, const char *fmt, ...)
{
    int n = snprintf(err->msg, sizeof err->msg, "%s kernel: ", who);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof err->msg)
        vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return st;
}

/* The shape checks of k that come before its code is read: counts, loops, owners, extents. */
static FcStatus check_loops(const FcKernel *k, const char *who, FcError *err)
{
    int n = k->ncode, L = k->nloop;
    if (n < 1 || !k->code || k->nreg < 1)
        return bad(err, FC_ERR_VALUE, who, "no code");
    if (L < 0 || L > FC_MAX_DIMS)
        return bad(err, FC_ERR_VALUE, who, "%d loops", L);
    for (int l = 0; l < L; l++) {
        int o = k->owner[l];
        /* An inner arg reduction would have to carry an index beside its value through the
         * folds of its body: the scheduler never makes one, and no backend folds one. */
        if (o < -1 || o >= n || (o >= 0 && (!fc_op_is_reduce(k->code[o].op) || is_arg(k->code[o].op))))
            return bad(err, FC_ERR_VALUE, who, "loop %d has a bad owner", l);
        /* The unsigned bounds and the chunk counts would take a negative extent for a huge one. */
        if (k->extent[l] < 0)
            return bad(err, FC_ERR_VALUE, who, "loop %d has a negative extent", l);
    }
    if (k->chunk_loop >= 0 && (k->chunk_loop >= (L > 0 ? L : 1) || (L > 0 && k->owner[k->chunk_loop] >= 0)))
        return bad(err, FC_ERR_VALUE, who, "bad chunk loop %d", k->chunk_loop);
    if (k->nscatter < 0 || k->nscatter > FC_MAX_DIMS || (k->nscatter > 0 && !k->scatter))
        return bad(err, FC_ERR_VALUE, who, "bad scatters");
    for (int g = 0; g < k->nscatter; g++)
        if (k->scatter[g].extent < 0)
            return bad(err, FC_ERR_VALUE, who, "scatter %d has a negative extent", g);
    for (int i = 0; i < n; i++) {
        const FcInstr *in = &k->code[i];
        if (in->op == FC_OP_LOAD && (in->ngather < 0 || in->ngather > FC_MAX_DIMS || (in->ngather && !in->gathers)))
            return bad(err, FC_ERR_VALUE, who, "instruction %d: bad gathers or bounds", i);
        for (int g = 0; in->op == FC_OP_LOAD && g < in->ngather; g++)
            if (in->gathers[g].extent < 0)
                return bad(err, FC_ERR_VALUE, who, "instruction %d: bad gathers or bounds", i);
        if (fc_op_is_reduce(in->op) && (in->nbound < 0 || in->nbound > L || (in->nbound && !in->bounds)))
            return bad(err, FC_ERR_VALUE, who, "instruction %d: bad gathers or bounds", i);
    }
    return FC_OK;
}

/* Places the instructions of list r (but the invariants) at positions m on: by the loops they
 * vary along, fewer loops first, then in code order. Any operand varies along a subset of its
 * reader's loops, so this is an order in which values are written before they are read; and
 * the instructions of each domain come together, which a backend that hoists by domain checks
 * as one run (roi_align's y coordinate, its clamps and weights: one run over (box, bin row,
 * sample row)). idx: room for n. */
static int by_deps(const void *x, const void *y, void *deps)
{
    int i = *(const int *)x, j = *(const int *)y;
    uint64_t a = ((const uint64_t *)deps)[i], b = ((const uint64_t *)deps)[j];
    int pa = __builtin_popcountll(a), pb = __builtin_popcountll(b);
    if (pa != pb)
        return pa < pb ? -1 : 1;
    if (a != b)
        return a < b ? -1 : 1;
    return i < j ? -1 : i > j;
}

static int place_list(int *pos, int *idx, int m, const uint64_t *deps, const int *list, int r, int n)
{
    int cnt = 0;
    for (int i = 0; i < n; i++)
        if (list[i] == r && (r >= 0 || deps[i] != 0))
            idx[cnt++] = i;
    qsort_r(idx, (size_t)cnt, sizeof *idx, by_deps, (void *)deps);
    for (int q = 0; q < cnt; q++)
        pos[idx[q]] = m++;
    return m;
}

/* Links the operands of instruction i, checks their dtypes, and sets the loops i varies along
 * (p->deps[i], and rdeps of the register it writes). def: the instruction that last wrote each
 * register; rdeps: what each register varies along. */
static FcStatus link_instr(FcPlan *p, const FcKernel *k, int i, const int *def, uint64_t *rdeps, int *gused,
                           int *bused, const char *who, FcError *err)
{
    const FcInstr *in = &k->code[i];
    int nreg = k->nreg, L = k->nloop;
    bool red = fc_op_is_reduce(in->op), wcmp = in->op == FC_OP_WHERE_CMP;
    if ((unsigned)in->op >= FC_OP__COUNT || in->op == FC_OP_NONE || is_arg(in->op) ||
        (unsigned)in->dtype >= FC_DTYPE__COUNT || ((red || wcmp) && (unsigned)in->src_dtype >= FC_DTYPE__COUNT))
        return bad(err, FC_ERR_VALUE, who, "instruction %d: bad op or dtype", i);
    if (wcmp && (!fc_op_is_compare(in->cmp) || in->a < 0 || in->b < 0 || in->c < 0))
        return bad(err, FC_ERR_VALUE, who, "instruction %d: bad where_cmp", i);
    if (in->op == FC_OP_MULADD && (in->b < 0 || in->c < 0))
        return bad(err, FC_ERR_VALUE, who, "instruction %d: bad muladd", i);
    if (in->dst < 0 || in->dst >= nreg)
        return bad(err, FC_ERR_VALUE, who, "instruction %d writes no register", i);
    if (red && in->a < 0)
        return bad(err, FC_ERR_VALUE, who, "reduction %d has no body", i);
    int ng = in->op == FC_OP_LOAD ? in->ngather : 0, nb = red ? in->nbound : 0;
    int ops[3] = {in->a, in->b, in->c};
    FcDType a_dt = in->dtype;
    p->goff[i] = *gused;
    p->boff[i] = *bused;
    for (int o = 0; o < 3 + ng + nb; o++) {
        int r = o < 3 ? ops[o] : o < 3 + ng ? in->gathers[o - 3].reg : in->bounds[o - 3 - ng].reg;
        if (r < 0 && o < 3) {
            p->opv[3 * i + o] = -1;
            continue;
        }
        if (r < 0 || r >= nreg || def[r] == -1)
            return bad(err, FC_ERR_VALUE, who, "instruction %d reads register %d before it is written", i, r);
        int v = def[r];
        FcDType want = o >= 3 + ng ? k->code[v].dtype
                       : o >= 3    ? FC_INT64
                       : red       ? in->src_dtype
                                   : operand_dtype(in, o, o == 0 ? k->code[v].dtype : a_dt);
        if (o == 0)
            a_dt = k->code[v].dtype;
        if (k->code[v].dtype != want ||
            (o >= 3 + ng && want != FC_INT64 && want != FC_FLOAT32 && want != FC_FLOAT64))
            return bad(err, FC_ERR_VALUE, who, "instruction %d (%s) reads r%d of dtype %s, expected %s", i,
                       fc_op_name(in->op), r, fc_dtype_name(k->code[v].dtype), fc_dtype_name(want));
        if (o < 3)
            p->opv[3 * i + o] = v;
        else if (o < 3 + ng)
            p->gopv[*gused + o - 3] = v;
        else
            p->bopv[*bused + o - 3 - ng] = v;
    }
    *gused += ng;
    *bused += nb;
    switch (in->op) {
    case FC_OP_LOAD:
        if (in->buf < 0 || in->buf >= k->nbufs || !k->bufs || (L > 0 && !in->strides))
            return bad(err, FC_ERR_VALUE, who, "instruction %d: bad load", i);
        break;
    case FC_OP_IOTA:
        if (in->dtype != FC_INT64 || (L > 0 && (in->loop < 0 || in->loop >= L)))
            return bad(err, FC_ERR_VALUE, who, "instruction %d: bad iota", i);
        break;
    default:
        for (int b = 0; b < nb; b++) {
            const FcBound *bd = &in->bounds[b];
            if (bd->loop < 0 || bd->loop >= L || k->owner[bd->loop] != i || (bd->cmp != FC_OP_LT && bd->cmp != FC_OP_LE))
                return bad(err, FC_ERR_VALUE, who, "instruction %d: bad bound", i);
        }
        break;
    }
    uint64_t d = instr_deps(in, L, k->extent, rdeps, p->own[i]);
    if (in->invariant && d != 0)
        return bad(err, FC_ERR_VALUE, who, "invariant instruction %d reads loop-dependent values", i);
    p->deps[i] = rdeps[in->dst] = d;
    return FC_OK;
}

/* Whether every value instruction i reads lies in its list or an enclosing one (a reduction
 * also reads its body, in the list it heads). */
static bool reads_inside(const FcPlan *p, const FcKernel *k, int i, int *bad_reg)
{
    const FcInstr *in = &k->code[i];
    int ng = in->op == FC_OP_LOAD ? in->ngather : 0, nb = fc_op_is_reduce(in->op) ? in->nbound : 0;
    for (int o = 0; o < 3 + ng + nb; o++) {
        int v = o < 3 ? p->opv[3 * i + o] : o < 3 + ng ? p->gopv[p->goff[i] + o - 3] : p->bopv[p->boff[i] + o - 3 - ng];
        if (v < 0)
            continue;
        bool ok = o == 0 && fc_op_is_reduce(in->op) && p->list[v] == i;
        for (int up = p->list[i]; !ok; up = p->list[up]) {
            ok = p->list[v] == up;
            if (up < 0)
                break;
        }
        if (!ok) {
            *bad_reg = k->code[v].dst;
            return false;
        }
    }
    return true;
}

/* Sets p->seq and p->epos: the lists in the order of pos, each reduction's body just before
 * the reduction (a depth-first walk from the top list). tmp: room for 3n + 2. False when that
 * does not place every instruction once. */
static bool exec_order(FcPlan *p, const FcKernel *k, int *tmp)
{
    int n = p->n, ns = 0, m = 0;
    int *inst = tmp, *stack = tmp + n;  /* the instruction at each place of pos; at most 2n pushed */
    for (int i = 0; i < n; i++)
        inst[p->pos[i]] = i;
    for (int j = p->ntop - 1; j >= 0; j--)
        stack[ns++] = j;
    while (ns > 0 && m < n) {
        int j = stack[--ns], i = inst[j < 0 ? -j - 1 : j];
        if (j >= 0 && fc_op_is_reduce(k->code[i].op)) {
            if (ns + 1 + p->body1[i] - p->body0[i] > 2 * n + 2)
                return false;
            stack[ns++] = -j - 1;
            for (int b = p->body1[i] - 1; b >= p->body0[i]; b--)
                stack[ns++] = b;
            continue;
        }
        p->epos[i] = m;
        p->seq[m++] = i;
    }
    return m == n && ns == 0;
}

FcStatus fc_kplan_new(const FcKernel *k, const char *who, FcPlan **out, FcError *err)
{
    *out = NULL;
    FcStatus st = check_loops(k, who, err);
    if (st)
        return st;
    int n = k->ncode, nreg = k->nreg, ng = 0, nb = 0;
    for (int i = 0; i < n; i++) {
        ng += k->code[i].op == FC_OP_LOAD ? k->code[i].ngather : 0;
        nb += fc_op_is_reduce(k->code[i].op) ? k->code[i].nbound : 0;
    }
    FcPlan *p = mem_calloc(1, sizeof *p);
    /* one block: uint64_t arrays first (alignment), then the int arrays */
    size_t words = 2 * (size_t)n + (size_t)nreg,
           ints = 3 * (size_t)n + 9 * (size_t)n + (size_t)ng + (size_t)nb + (size_t)(nreg > 3 * n + 2 ? nreg : 3 * n + 2) + 2;
    char *blk = p ? mem_malloc(words * sizeof(uint64_t) + ints * sizeof(int)) : NULL;
    if (!blk) {
        mem_free(p);
        return bad(err, FC_ERR_NOMEM, who, "out of memory");
    }
    p->block = blk;
    p->n = n;
    p->L = k->nloop;
    p->deps = (uint64_t *)(void *)blk;
    p->own = p->deps + n;
    uint64_t *rdeps = p->own + n;   /* while linking: what each register varies along */
    int *q = (int *)(void *)(rdeps + nreg);
    p->opv = q, q += 3 * n;
    p->goff = q, q += n;
    p->boff = q, q += n;
    p->list = q, q += n;
    p->pos = q, q += n;
    p->body0 = q, q += n;
    p->body1 = q, q += n;
    p->seq = q, q += n;
    p->epos = q, q += n;
    p->gopv = q, q += ng + 1;
    p->bopv = q, q += nb + 1;
    int *def = q, *idx = q;     /* def while linking, idx while ordering, a stack for seq */
    own_loops(k->nloop, k->owner, n, p->own);
    for (int r = 0; r < nreg; r++)
        def[r] = -1;
    int gused = 0, bused = 0;
    for (int i = 0; i < n && !st; i++) {
        st = link_instr(p, k, i, def, rdeps, &gused, &bused, who, err);
        if (!st)
            def[k->code[i].dst] = i;
    }
    if (!st && (k->result < 0 || k->result >= nreg || def[k->result] == -1))
        st = bad(err, FC_ERR_VALUE, who, "the result register %d is never written", k->result);
    for (int g = 0; !st && g < k->nscatter; g++) {
        int r = k->scatter[g].reg;
        if (r < 0 || r >= nreg || def[r] == -1 || k->code[def[r]].dtype != FC_INT64)
            st = bad(err, FC_ERR_VALUE, who, "scatter %d reads r%d, not a written int64 register", g, r);
        else
            p->sres[g] = def[r];
    }
    if (st) {
        fc_kplan_free(p);
        return st;
    }
    p->res = def[k->result];
    lists(n, p->deps, p->own, p->list);
    for (int i = 0; i < n; i++) {
        int r;
        if (!reads_inside(p, k, i, &r)) {
            fc_kplan_free(p);
            return bad(err, FC_ERR_VALUE, who, "instruction %d reads r%d outside its loops", i, r);
        }
    }
    /* Order: invariants, the top list, then each reduction's body. */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (p->deps[i] == 0 && p->list[i] < 0)
            p->pos[i] = m++;
    p->ninv = m;
    m = place_list(p->pos, idx, m, p->deps, p->list, -1, n);
    p->ntop = m;
    for (int r = 0; r < n; r++) {
        p->body0[r] = p->body1[r] = m;
        if (!fc_op_is_reduce(k->code[r].op))
            continue;
        m = place_list(p->pos, idx, m, p->deps, p->list, r, r);
        p->body1[r] = m;
    }
    if (!exec_order(p, k, idx)) {
        fc_kplan_free(p);
        return bad(err, FC_ERR_VALUE, who, "malformed reduction bodies");
    }
    *out = p;
    return FC_OK;
}

/* Whether instruction i may be precomputed, its operands apart (fc_kplan_pre's rule). A scatter
 * index may be: computing it cannot fail, and the store still checks each value where it reads
 * it (the CPU's fold_indices, CUDA's gix), so an index out of range is reported at the same
 * point as before; roi_align's backward then reads its taps' destinations (y_low + 1 clamped ...)
 * from tables over (box, bin, sample) rather than recomputing them per point. */
static bool pre_able(const FcPlan *p, const FcKernel *k, int i)
{
    const FcInstr *in = &k->code[i];
    if (p->deps[i] == 0 || fc_op_is_reduce(in->op) || i == p->res)
        return false;
    if (in->op == FC_OP_CONST || fc_instr_may_fail(in))
        return false;
    return in->op != FC_OP_LOAD || k->bufs[in->buf] != k->out;
}

size_t fc_kplan_pre(const FcPlan *p, const FcKernel *k, const FcTarget *t, const int *opv, const bool *veto,
                    bool *pre, size_t *off, bool *kept)
{
    int n = p->n;
    for (int i = 0; i < n; i++) {
        pre[i] = false;
        off[i] = 0;
        if (kept)
            kept[i] = false;
    }
    if (k->no_hoist || n == 0)
        return 0;
    /* In the plan's order: each list by domain, smaller domains first, so that within a list an
     * operand is decided before its readers (pos is a permutation: order is its inverse). */
    int *order = mem_malloc((size_t)n * sizeof *order);
    if (!order)
        return 0;       /* nothing precomputed: the same results */
    for (int i = 0; i < n; i++)
        order[p->pos[i]] = i;
    size_t bytes = 0;
    for (int m = 0; m < n; m++) {
        int i = order[m];
        if (!pre_able(p, k, i) || (veto && veto[i]))
            continue;
        bool ok = true;
        for (int o = 0; o < 3 && ok; o++) {
            int v = opv[3 * i + o];
            ok = v < 0 || p->deps[v] == 0 || pre[v];
        }
        int64_t pts = 1;
        for (int l = 0; l < p->L; l++)
            if (p->deps[i] >> l & 1)
                pts = pts > INT64_MAX / (k->extent[l] + 1) ? INT64_MAX : pts * k->extent[l];
        if (!ok || pts > t->pre_points)
            continue;
        size_t b = ((size_t)pts * fc_dtype_size(k->code[i].dtype) + 63) & ~(size_t)63;
        if (bytes + b > t->pre_bytes)
            continue;
        pre[i] = true;
        off[i] = bytes;
        bytes += b;
    }
    mem_free(order);
    if (!kept)
        return bytes;
    for (int g = 0; g < k->nscatter; g++)       /* the store reads them */
        if (pre[p->sres[g]])
            kept[p->sres[g]] = true;
    for (int i = 0; i < n; i++) {
        if (pre[i])
            continue;
        const FcInstr *in = &k->code[i];
        int ng = in->op == FC_OP_LOAD ? in->ngather : 0, nb = fc_op_is_reduce(in->op) ? in->nbound : 0;
        for (int o = 0; o < 3 + ng + nb; o++) {
            int v = o < 3 ? opv[3 * i + o] : o < 3 + ng ? p->gopv[p->goff[i] + o - 3] : p->bopv[p->boff[i] + o - 3 - ng];
            if (v >= 0 && pre[v])
                kept[v] = true;
        }
    }
    return bytes;
}

void fc_kplan_live(const FcPlan *p, const FcKernel *k, const int *first, const int *reads, int *last)
{
    int n = p->n;
    for (int v = 0; v < n; v++)
        last[v] = p->epos[v];
    for (int j = 0; j < n; j++)
        for (int e = first[j]; e < first[j + 1]; e++) {
            int v = reads[e], u = j;
            if (v < 0)
                continue;
            if (p->list[v] != j)    /* not a reduction's own body: the reader's ancestor in v's list */
                while (p->list[u] != p->list[v] && p->list[u] >= 0)
                    u = p->list[u];
            if (p->epos[u] > last[v])
                last[v] = p->epos[u];
        }
    last[p->res] = n;
    for (int g = 0; g < k->nscatter; g++)
        last[p->sres[g]] = n;
}

/* ---- fused ops (ops.def's FUSED rows) ---- */

/* The comparison that gives the same result with its operands swapped (k < x is x > k). */
static FcOp swapped(FcOp op)
{
    return op == FC_OP_LT ? FC_OP_GT : op == FC_OP_GT ? FC_OP_LT : op == FC_OP_LE ? FC_OP_GE : op == FC_OP_GE ? FC_OP_LE : op;
}

/* The WHERE_CMP that select i would become (a comparison of one value with a constant, either
 * way round), in *f; false when its condition is no such comparison. */
static bool where_cmp_of(const FcInstr *code, int i, FcInstr *f)
{
    const FcInstr *in = &code[i];
    if (in->op != FC_OP_WHERE || in->a < 0 || !fc_op_is_compare(code[in->a].op))
        return false;
    const FcInstr *cmp = &code[in->a];
    int x = cmp->a, kk = cmp->b;
    FcOp op = cmp->op;
    if (x >= 0 && code[x].op == FC_OP_CONST) {     /* k <cmp> x: x <swapped cmp> k */
        x = cmp->b;
        kk = cmp->a;
        op = swapped(op);
    }
    if (x < 0 || kk < 0 || code[kk].op != FC_OP_CONST)
        return false;
    *f = *in;
    f->op = FC_OP_WHERE_CMP;
    f->cmp = op;
    f->a = x;
    f->src_dtype = cmp->src_dtype;
    f->konst = code[kk].konst;
    return true;
}

/* Whether in computes at a dtype MULADD takes (float32, float64). */
static bool muladd_dtype(const FcInstr *in)
{
    return in->dtype == FC_FLOAT32 || in->dtype == FC_FLOAT64;
}

/* Whether MUL m is a weighted gather: one of its factors a load through indices (a gather) that
 * only it reads. */
static bool weighted_gather(const FcInstr *code, int m, const int *reads)
{
    const FcInstr *in = &code[m];
    int f[2] = {in->a, in->b};
    for (int o = 0; o < 2; o++)
        if (f[o] >= 0 && code[f[o]].op == FC_OP_LOAD && code[f[o]].ngather > 0 && reads[f[o]] == 1)
            return true;
    return false;
}

/* The MULADD that ADD i would become (x + w * r: the product an operand MUL that only the ADD
 * reads, over the same loops), in *f. A weighted gather is taken as the product first (a
 * backend may read its gathered factor in place only as a product), then the first operand.
 * reads, deps: by instruction. */
static bool muladd_of(const FcInstr *code, int i, const int *reads, const uint64_t *deps, FcInstr *f)
{
    const FcInstr *in = &code[i];
    if (in->op != FC_OP_ADD || !muladd_dtype(in) || in->a < 0 || in->b < 0)
        return false;
    for (int pass = 0; pass < 2; pass++)
        for (int o = 0; o < 2; o++) {
            int m = o ? in->b : in->a, x = o ? in->a : in->b;
            const FcInstr *mul = &code[m];
            if (mul->op != FC_OP_MUL || mul->dtype != in->dtype || reads[m] != 1 || deps[m] != deps[i] ||
                mul->a < 0 || mul->b < 0 || (pass == 0 && !weighted_gather(code, m, reads)))
                continue;
            *f = *in;
            f->op = FC_OP_MULADD;
            f->a = x;
            f->b = mul->a;
            f->c = mul->b;
            return true;
        }
    return false;
}

/* The MULADDs (see fc_kplan_fuse) made where takes says so: ADDs first, in order, so that a
 * sum of products becomes a chain; then each weighted gather left (a sum's first product, or
 * one read by no sum) becomes one with no x. reads: by instruction (a product an ADD takes is
 * read by nothing after). Returns how many. */
static int fuse_muladds(FcInstr *code, int n, int *reads, const uint64_t *deps,
                        bool (*takes)(void *ud, const FcInstr *in), void *ud)
{
    FcInstr f;
    int nf = 0;
    for (int i = 0; i < n; i++)
        if (muladd_of(code, i, reads, deps, &f) && takes(ud, &f)) {
            reads[code[i].a == f.a ? code[i].b : code[i].a] = 0;
            code[i] = f;
            nf++;
        }
    for (int m = 0; m < n; m++) {
        if (code[m].op != FC_OP_MUL || !muladd_dtype(&code[m]) || reads[m] == 0 || code[m].a < 0 ||
            code[m].b < 0 || !weighted_gather(code, m, reads))
            continue;
        f = code[m];
        f.op = FC_OP_MULADD;
        f.c = f.b;
        f.b = f.a;
        f.a = -1;
        if (takes(ud, &f)) {
            code[m] = f;
            nf++;
        }
    }
    return nf;
}

int fc_kplan_fuse(FcInstr *code, int n, int nloop, const int64_t *extent, const int *owner, int result,
                  const int *sregs, int ns, bool (*takes)(void *ud, const FcInstr *in), void *ud)
{
    FcInstr f;
    bool any = false;
    for (int i = 0; i < n && !any; i++)
        any = where_cmp_of(code, i, &f) ||
              ((code[i].op == FC_OP_ADD || code[i].op == FC_OP_MUL) && muladd_dtype(&code[i]));
    if (!any)
        return 0;
    uint64_t *deps = mem_malloc((size_t)n * sizeof *deps), *own = mem_malloc((size_t)n * sizeof *own);
    int *list = mem_malloc((size_t)n * sizeof *list), *reads = mem_calloc((size_t)n, sizeof *reads);
    int *sels = mem_calloc((size_t)n, sizeof *sels), nf = 0;
    if (!deps || !own || !list || !reads || !sels)
        goto done;      /* nothing fused: the same results */
    fc_kplan_domains(code, n, nloop, extent, owner, deps, own, list);
    /* A comparison goes when every read of it is a select over the same loops that fuses: then
     * no chunk of bools is written and read back. sels: such selects, -1 once one cannot fuse. */
    for (int i = 0; i < n; i++) {
        const FcInstr *in = &code[i];
        int ops[3] = {in->a, in->b, in->c};
        for (int o = 0; o < 3; o++)
            if (ops[o] >= 0)
                reads[ops[o]]++;
        for (int g = 0; in->op == FC_OP_LOAD && g < in->ngather; g++)
            reads[in->gathers[g].reg]++;
        for (int b = 0; fc_op_is_reduce(in->op) && b < in->nbound; b++)
            reads[in->bounds[b].reg]++;
        if (in->op == FC_OP_WHERE && in->a >= 0 && fc_op_is_compare(code[in->a].op) && deps[in->a] == deps[i])
            sels[in->a]++;
    }
    reads[result]++;
    for (int g = 0; g < ns; g++)
        reads[sregs[g]]++;
    for (int i = 0; i < n; i++) {
        int c = code[i].a;
        if (code[i].op == FC_OP_WHERE && c >= 0 && sels[c] > 0 && sels[c] == reads[c] &&
            (!where_cmp_of(code, i, &f) || !takes(ud, &f)))
            sels[c] = -1;
    }
    for (int i = 0; i < n; i++) {
        int c = code[i].a;
        if (code[i].op == FC_OP_WHERE && c >= 0 && sels[c] > 0 && sels[c] == reads[c] && where_cmp_of(code, i, &f)) {
            code[i] = f;
            nf++;
        }
    }
    /* reads still counts what the fused comparisons read: a MUL one of them read stays a MUL,
     * which gives the same results. */
    nf += fuse_muladds(code, n, reads, deps, takes, ud);
done:
    mem_free(deps);
    mem_free(own);
    mem_free(list);
    mem_free(reads);
    mem_free(sels);
    return nf;
}
