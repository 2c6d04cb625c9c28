/* cpu_plan.c — turns a scheduled kernel (FcKernel, with the FcPlan of fcdim/kplan.c) into the
 * CPU executor's Plan: the chunk loop and spans, what holds along a chunk, the memoised and
 * precomputed steps, the fused selects and weighted rows, the buffers, the units of work, the
 * offsets' width (see cpu_plan.h for how the executor works). Nothing here touches a kernel's
 * data: cpu_exec.c runs the Plan.
 * Depends on cpu_plan.h (cpu_internal.h, backend.h, fcdim.h) only. */
#include "cpu_plan.h"
#include "mem.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

FcStatus cpu_errorf(FcError *err, FcStatus st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return st;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* ---- plan ---- */

void cpu_plan_free(Plan *p)
{
    cpu_threads_free(p->th, p->nth);
    fc_kplan_free(p->made_plan);
    mem_free(p->fills);
    mem_free(p->steps);
    mem_free(p->gphys);
    mem_free(p->shared);
    mem_free(p->ramps);
    mem_free(p->rlist);
    mem_free(p->otab);
    mem_free(p->gxs);
    mem_free(p->pool);
    mem_free(p->pfill);
    if (p->pscale)
        for (int i = 0; i < p->npscale; i++)
            mem_free(p->pscale[i].sc);
    mem_free(p->pscale);
    mem_free(p->pinv);
    mem_free(p->plist);
    mem_free(p->ptl);
    mem_free(p->pretab);
    mem_free(p->prex);
    mem_free(p->tunit);
    mem_free(p->tjump);
    mem_free(p->tpx);
    mem_free(p->tpf);
    mem_free(p->tpn);
    for (int i = 0; i < p->nwiden; i++)
        mem_free(p->widen[i].tab);
    mem_free(p->widen);
}

/* A WHERE_CMP step (fcdim's fused where(x <cmp> k, y, z)): its select function, which compares
 * as it selects (CpuSelFn: no chunk of bools written and read back), and the constant in the
 * compared dtype, as the function reads it. */
static void plan_select(Step *s, const FcInstr *in)
{
    s->sel = fc_cpu_sel_fn(in->cmp, in->src_dtype, in->dtype);
    FcScalar v = in->konst;
    switch (in->src_dtype) {
    case FC_INT32: {
        int32_t q = (int32_t)(uint32_t)(uint64_t)v.i;
        memcpy(s->selk, &q, sizeof q);
        break;
    }
    case FC_FLOAT32: {
        float q = (float)v.f;
        memcpy(s->selk, &q, sizeof q);
        break;
    }
    case FC_INT64:
        memcpy(s->selk, &v.i, sizeof v.i);
        break;
    default:
        memcpy(s->selk, &v.f, sizeof v.f);
        break;
    }
}

const FcTarget fc_cpu_target = {"cpu", FC_CHUNK, CPU_LANES, FC_SHORT_CHUNK_LOOP, FC_LONG_CHUNK_LOOP, PRE_POS, PRE_BYTES};

FcStatus fc_cpu_supports(const FcInstr *in, FcDType a_dt, FcError *err)
{
    CpuReducer red;
    if (fc_op_is_reduce(in->op)) {
        if (!fc_cpu_reducer_init(&red, in->op, in->src_dtype, in->dtype))
            return cpu_errorf(err, FC_ERR_TYPE, "cpu kernel: %s of %s into %s is not supported", fc_op_name(in->op),
                          fc_dtype_name(in->src_dtype), fc_dtype_name(in->dtype));
        return FC_OK;
    }
    if (in->op == FC_OP_LOAD || in->op == FC_OP_CONST || in->op == FC_OP_IOTA ||
        (in->op == FC_OP_WHERE_CMP ? fc_cpu_sel_fn(in->cmp, in->src_dtype, in->dtype) != NULL
                                   : fc_cpu_op_fn(in->op, in->dtype, a_dt) != NULL))
        return FC_OK;
    bool by_src = in->op == FC_OP_CAST || in->op == FC_OP_ISNAN || fc_op_is_compare(in->op) || in->op == FC_OP_WHERE_CMP;
    return cpu_errorf(err, FC_ERR_TYPE, "cpu kernel: %s is not supported for %s", fc_op_name(in->op),
                  fc_dtype_name(by_src ? a_dt : in->dtype));
}

/* Orders the code into steps by the kernel's plan (fcdim's kplan): the invariant ones (they vary
 * along no loop), the top list (the rest of what the root evaluates), and the body of each inner
 * reduction, each by domain; operands become step numbers. Then what is the CPU's own: each
 * step's op function, select or fold (a kernel of an op or dtype it has none for is
 * FC_ERR_TYPE). Buffers are given by plan_buffers once the chunk loop is known. */
static FcStatus plan_code(Plan *p, const FcKernel *k, FcError *err)
{
    const FcPlan *kp = p->kp;
    int n = k->ncode, L = k->nloop;
    int ngath = 0;
    for (int i = 0; i < n; i++)
        ngath += k->code[i].op == FC_OP_LOAD ? k->code[i].ngather : 0;
    const int *val = kp->opv;
    p->steps = mem_calloc((size_t)(n + 1), sizeof *p->steps);
    p->gphys = mem_malloc((size_t)(ngath + 1) * sizeof *p->gphys);
    p->gxs = mem_calloc((size_t)(ngath + 1), sizeof *p->gxs);
    size_t nl = L > 0 ? (size_t)L : 1;
    size_t per = (nl * (sizeof(struct TabLoop) + 2 * sizeof(int) + sizeof(FcDType)) + 15) & ~(size_t)15;
    p->pool = mem_malloc((size_t)(n + 1) * per);
    Step *sorted = mem_malloc((size_t)(n + 1) * sizeof *sorted);
    FcStatus st = FC_OK;
    if (!p->steps || !p->gphys || !p->gxs || !p->pool || !sorted) {
        st = cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
        goto done;
    }
    int gused = 0;
    for (int i = 0; i < n; i++) {
        const FcInstr *in = &k->code[i];
        char *q = (char *)p->pool + (size_t)i * per;
        Step *s = &p->steps[i];
        s->tl = (struct TabLoop *)(void *)q;
        s->in = in;
        s->esize = fc_dtype_size(in->dtype);
        s->deps = kp->deps[i];
        FcDType a_dt = in->a >= 0 ? k->code[kp->opv[3 * i]].dtype : in->dtype;
        st = fc_cpu_supports(in, a_dt, err);
        if (st != FC_OK)
            goto done;
        /* Each kind's fields only (they share storage: Step's union) */
        if (in->op == FC_OP_LOAD) {
            int ng = in->ngather;
            s->g = ng > 0 ? &p->gphys[gused] : NULL;
            s->gx = ng > 0 ? &p->gxs[gused] : NULL;
            gused += ng;
            s->strides = k->nloop > 0 ? in->strides : p->zero;
        } else if (fc_op_is_reduce(in->op)) {
            s->rl = (int *)(void *)(q + nl * sizeof(struct TabLoop));
            s->bvals = s->rl + nl;
            s->bdt = (FcDType *)(void *)(s->bvals + nl);
            fc_cpu_reducer_init(&s->red, in->op, in->src_dtype, in->dtype);
        } else if (in->op == FC_OP_WHERE_CMP) {
            plan_select(s, in);
        } else if (in->op != FC_OP_CONST && in->op != FC_OP_IOTA) {
            s->fn = fc_cpu_op_fn(in->op, in->dtype, a_dt);
        }
    }
    p->ninv = kp->ninv;
    p->ntop = kp->ntop;
    const int *pos = kp->pos;
    for (int r = 0; r < n; r++)
        if (fc_op_is_reduce(k->code[r].op)) {
            p->steps[r].body0 = kp->body0[r];
            p->steps[r].body1 = kp->body1[r];
            p->steps[r].racc = p->nracc++;
        }
    for (int i = 0; i < n; i++) {
        Step s = p->steps[i];
        const FcInstr *in = s.in;
        s.d = -1;       /* plan_buffers */
        s.parent = kp->list[i] >= 0 ? pos[kp->list[i]] : -1;
        s.a = val[i * 3] >= 0 ? pos[val[i * 3]] : -1;
        s.b = val[i * 3 + 1] >= 0 ? pos[val[i * 3 + 1]] : -1;
        s.c = val[i * 3 + 2] >= 0 ? pos[val[i * 3 + 2]] : -1;
        for (int g = 0; in->op == FC_OP_LOAD && g < in->ngather; g++)
            s.g[g] = pos[kp->gopv[kp->goff[i] + g]];
        for (int b = 0; fc_op_is_reduce(in->op) && b < in->nbound; b++) {
            s.bvals[b] = pos[kp->bopv[kp->boff[i] + b]];
            s.bdt[b] = k->code[kp->bopv[kp->boff[i] + b]].dtype;
        }
        sorted[pos[i]] = s;
    }
    p->res = pos[kp->res];
    for (int g = 0; g < k->nscatter; g++)
        p->sphys[g] = pos[kp->sres[g]];
    p->res_dt = k->code[kp->res].dtype;
    mem_free(p->steps);
    p->steps = sorted;
    sorted = NULL;
    p->nsteps = n;
done:
    mem_free(sorted);
    return st;
}

/* ---- values that hold along a chunk ---- */

/* What walk_one marks on an instruction. */
enum {
    HOLDS = 1,      /* its register holds one value over each chunk */
    FLAT = 2,       /* a load whose gathered indices all hold */
};

/* The values step s reads: a, b, c, its gathered indices, its bounds' values, its terms'
 * weights and rows (steps, or after plan_buffers physical buffers; -1 for an absent a, b, c or
 * second factor of a weight). */
static int step_operands(const Step *s)
{
    return 3 + (s->in->op == FC_OP_LOAD ? s->in->ngather : 0) + (fc_op_is_reduce(s->in->op) ? s->in->nbound : 0) +
           3 * s->nterm;
}

static int step_operand(const Step *s, int o)
{
    int ng = s->in->op == FC_OP_LOAD ? s->in->ngather : 0, nb = fc_op_is_reduce(s->in->op) ? s->in->nbound : 0;
    if (o < 3)
        return o == 0 ? s->a : o == 1 ? s->b : s->c;
    if ((o -= 3) < ng)
        return s->g[o];
    if ((o -= ng) < nb)
        return s->bvals[o];
    const RowTerm *q = &s->term[(o - nb) / 3];
    o = (o - nb) % 3;
    return o == 0 ? q->w : o == 1 ? q->v : q->r;
}

/* Whether register r (-1: no operand) holds, as far as walk_one has got. */
static bool held(const uint8_t *mark, const int *def, int r) { return r < 0 || (mark[def[r]] & HOLDS); }

/* Walks the code as if loop cl were the chunk loop, marking each instruction i in mark[i], with
 * def[r] the instruction that last wrote register r. HOLDS, for a register that has one value
 * at every position of its chunk (as an invariant's buffer does): constants, invariants, iotas
 * of other loops, loads that move along cl neither by a stride nor by an index, ops over such
 * operands, and anything at all when cl has one index. FLAT, for a load each of whose chunks
 * is an ordinary strided run from an offset that its indices move. Returns the gathered loads
 * that are not flat. */
static int walk_one(const Plan *p, int cl, uint8_t *mark, int *def)
{
    const FcKernel *k = p->k;
    int rough = 0;
    for (int i = 0; i < k->ncode; i++) {
        const FcInstr *in = &k->code[i];
        bool holds = in->invariant || p->ext[cl] <= 1, flat = true;
        switch (in->op) {
        case FC_OP_CONST:
            holds = true;
            break;
        case FC_OP_IOTA:
            holds = holds || in->loop != cl;
            break;
        case FC_OP_LOAD:
            for (int g = 0; g < in->ngather; g++)
                flat = flat && held(mark, def, in->gathers[g].reg);
            rough += in->ngather > 0 && !flat;
            holds = holds || (flat && in->strides[cl] == 0);
            break;
        default:
            holds = holds || (held(mark, def, in->a) && held(mark, def, in->b) && held(mark, def, in->c));
            break;
        }
        mark[i] = (uint8_t)((holds ? HOLDS : 0) | (flat ? FLAT : 0));
        def[in->dst] = i;
    }
    return rough;
}

/* Whether every access (the output and each load, its gathers flat) steps along loop l by at
 * most one element. */
static bool steady(const Plan *p, int l, uint8_t *mark, int *def)
{
    if (llabs(p->ostr[l]) > 1 || walk_one(p, l, mark, def) > 0)
        return false;
    for (int i = 0; i < p->k->ncode; i++) {
        const FcInstr *in = &p->k->code[i];
        if (in->op == FC_OP_LOAD && llabs(in->strides[l]) > 1)
            return false;
    }
    return true;
}

static FcStatus plan_marks(Plan *p, FcError *err);
static void plan_term(Plan *p);
static bool spans_fit(const Plan *p);

/* ---- chunks that span several loops ----
 *
 * A short chunk loop leaves each chunk too little work for what it costs to run a step (roi_align
 * on 16 channels: twenty steps of 16 positions per sample). When the root stores, such a chunk
 * takes whole loops too, the innermost root loops first, up to SPAN_CAP positions: the chunk
 * spans loops ck[] (outermost first, the chunk loop last), which then do not cycle. A value over
 * the chunk holds one entry per point of the chunk's loops it varies along (its shape), row-major
 * in ck's order, so that a coordinate over (bin row) is computed at 7 positions and a tap over
 * (bin row, bin column, channel) at 784; an operand with a smaller shape than its reader's is
 * widened through a table of positions (plan_widen). Offsets within such a chunk are 32-bit. */

/* str[l] for each loop l of shape: its step between positions (row-major); 0 elsewhere. */
static void shape_strides(const Plan *p, uint64_t shape, int64_t *str)
{
    int loops[FC_MAX_DIMS], nl = cpu_shape_loops(p, shape, loops);
    int64_t s = 1;
    memset(str, 0, (size_t)p->L * sizeof *str);
    for (int j = nl - 1; j >= 0; j--) {
        str[loops[j]] = s;
        s *= p->ext[loops[j]];
    }
}

/* Whether coef[l] * index of l, summed over the loops of shape, is the position itself (0, 1,
 * ...): an access over the shape that is one run in its order. */
static bool row_major(const Plan *p, uint64_t shape, const int64_t *coef)
{
    int64_t str[FC_MAX_DIMS];
    shape_strides(p, shape, str);
    for (uint64_t d = shape; d; d &= d - 1) {
        int l = __builtin_ctzll(d);
        if (p->ext[l] > 1 && coef[l] != str[l])
            return false;
    }
    return true;
}

/* out[i] for the first (at most limit) positions i of shape: the sum of coef[l] times the index
 * of loop l there. */
static void shape_table(const Plan *p, uint64_t shape, const int64_t *coef, int32_t *out, int64_t limit)
{
    int loops[FC_MAX_DIMS], nl = cpu_shape_loops(p, shape, loops);
    int64_t idx[FC_MAX_DIMS] = {0}, v = 0, n = cpu_shape_size(p, shape);
    if (n > limit)
        n = limit;
    for (int64_t i = 0; i < n; i++) {
        out[i] = (int32_t)v;
        for (int j = nl - 1; j >= 0; j--) {
            int l = loops[j];
            v += coef[l];
            if (++idx[j] < p->ext[l])
                break;
            v -= coef[l] * p->ext[l];
            idx[j] = 0;
        }
    }
}

/* Makes the chunk span several loops when it should (see above); else it is the chunk loop's. */
static void plan_span(Plan *p)
{
    const FcKernel *k = p->k;
    int cl = p->cl;
    p->nck = 1;
    p->ck[0] = cl;
    p->ckmask = (uint64_t)1 << cl;
    p->span = 0;
    p->cap = FC_CHUNK;
    p->cbytes = CHUNK_BYTES;
    if (p->reduce || p->scatter || k->no_hoist || k->nloop == 0 || p->ext[cl] < 1 || p->ext[cl] >= SPAN_LOOP ||
        !p->idx32)
        return;
    /* Not the loops a reduction's bound varies along: the scheduler keeps a bound's mask only
     * where the bound varies along the chunk loop, so the bound must hold over the chunk. */
    uint64_t bounded = 0;
    for (int j = 0; j < p->nsteps; j++) {
        const Step *s = &p->steps[j];
        for (int b = 0; fc_op_is_reduce(s->in->op) && b < s->in->nbound; b++)
            bounded |= p->steps[s->bvals[b]].deps;
    }
    int64_t size = p->ext[cl];
    int add[FC_MAX_DIMS], na = 0;
    for (int l = p->L - 1; l >= 0; l--) {
        if (l == cl || k->owner[l] >= 0 || p->ext[l] <= 1 || (bounded >> l & 1))
            continue;
        if (p->ext[l] > SPAN_CAP / size)
            break;
        size *= p->ext[l];
        add[na++] = l;
    }
    if (na == 0)
        return;
    p->nck = 0;
    for (int j = na - 1; j >= 0; j--) {
        p->ck[p->nck++] = add[j];
        p->ckmask |= (uint64_t)1 << add[j];
    }
    p->ck[p->nck++] = cl;
    p->span = (int)size;
    p->cap = (int)((size > FC_CHUNK ? size : FC_CHUNK) + 31) & ~31;
    p->cbytes = (size_t)p->cap * 8;
}

/* The loops of the chunk of a list whose chunk loop is cx. */
static uint64_t chunk_mask(const Plan *p, int cx)
{
    return cx < 0 ? 0 : cx == p->cl ? p->ckmask : (uint64_t)1 << cx;
}

/* The table that widens a value of shape `from` to shape `to` (kept in the plan, one per pair),
 * or NULL when out of memory. */
static const int32_t *plan_widen(Plan *p, uint64_t from, uint64_t to)
{
    for (int i = 0; i < p->nwiden; i++)
        if (p->widen[i].from == from && p->widen[i].to == to)
            return p->widen[i].tab;
    Widen *w = mem_realloc(p->widen, (size_t)(p->nwiden + 1) * sizeof *w);
    if (!w)
        return NULL;
    p->widen = w;
    int64_t coef[FC_MAX_DIMS];
    shape_strides(p, from, coef);
    int32_t *tab = mem_malloc((size_t)cpu_shape_size(p, to) * sizeof *tab);
    if (!tab)
        return NULL;
    shape_table(p, to, coef, tab, INT64_MAX);
    p->widen[p->nwiden++] = (Widen){from, to, tab};
    return tab;
}

/* How many times widening from `from` to `to` repeats each value in a row, when it does so (the
 * loops it adds all come after from's in to's order), else 0. */
static int widen_rep(const Plan *p, uint64_t from, uint64_t to)
{
    int loops[FC_MAX_DIMS], nl = cpu_shape_loops(p, to, loops);
    bool added = false;
    for (int j = 0; j < nl; j++) {
        bool f = from >> loops[j] & 1;
        if (f && added)
            return 0;
        added |= !f;
    }
    return (int)cpu_shape_size(p, to & ~from);
}

/* How many values widening from `from` to `to` repeats in order, over and over, when it does so
 * (the loops it adds all come before from's in to's order), else 0. */
static int widen_cycle(const Plan *p, uint64_t from, uint64_t to)
{
    int loops[FC_MAX_DIMS], nl = cpu_shape_loops(p, to, loops);
    bool seen = false;
    for (int j = 0; j < nl; j++) {
        bool f = from >> loops[j] & 1;
        if (!f && seen)
            return 0;
        seen |= f;
    }
    return (int)cpu_shape_size(p, from);
}

/* Whether the scattered store of p is split over owner loops (Plan.own), from the shape alone (so
 * that the order of the units does not depend on the thread count), only for work enough to be
 * threaded and for a store that cannot fail (FcKernel.checked: a part may run past another's
 * failure): kept owner loops move to the front of kl, so that units run with them outermost
 * and the others in their order inside (an element, whose owner indices are fixed, still gets
 * its contributions in the nest's order). */
static void plan_owner(Plan *p)
{
    if (!p->scatter || !p->k->checked || p->span || p->work < SMALL_WORK)
        return;
    uint64_t own = fc_store_owner_loops(p->k);
    p->own_cl = own >> p->cl & 1;
    int kl[FC_MAX_DIMS], n = 0;
    for (int j = 0; j < p->nkl; j++)
        if (own >> p->kl[j] & 1)
            kl[n++] = p->kl[j];
    p->nkown = n;
    p->inner = 1;
    for (int j = 0; j < p->nkl; j++)
        if (!(own >> p->kl[j] & 1)) {
            kl[n++] = p->kl[j];
            p->inner = sat_mul(p->inner, p->ext[p->kl[j]]);
        }
    if (p->nkown == 0 && !p->own_cl)
        return;
    memcpy(p->kl, kl, sizeof kl);
    p->own = true;
}

/* Whether the owner split of p may go by bands of destination rows (Plan.band): with no kept
 * owner loop, rows given by scatter indices that vary along neither cl nor the term level, and
 * whose loops are the first of kl's (a prefix of the nest's order, of at most BAND_POINTS
 * points). After plan_owner and the term level's check. */
static void plan_band(Plan *p)
{
    const FcKernel *k = p->k;
    if (!p->own || p->nkown != 0 || !p->flat_scatter || k->nscatter > FC_MAX_DIMS)
        return;
    uint64_t allowed = 0;
    for (int g = 0; g < k->nscatter; g++) {
        uint64_t deps = p->steps[p->sstep[g]].deps;
        if (!(deps >> p->cl & 1) && !(p->term >= 0 && (deps >> p->term & 1)))
            allowed |= (uint64_t)1 << g;
    }
    uint64_t rows;
    int64_t nkeys;
    int64_t unit = allowed ? fc_store_band_rows(k, allowed, BAND_KEYS, &rows, &nkeys) : 0;
    if (unit <= 0)
        return;
    uint64_t deps = 0;
    int end = 0;
    for (int g = 0; g < k->nscatter; g++)
        if (rows >> g & 1) {
            deps |= p->steps[p->sstep[g]].deps;
            end = p->sstep[g] + 1 > end ? p->sstep[g] + 1 : end;
        }
    int d = 0;
    for (int j = 0; j < p->nkl; j++)
        if (deps >> p->kl[j] & 1)
            d = j + 1;
    uint64_t prefix = 0;
    int64_t pts = 1;
    for (int j = 0; j < d; j++) {
        prefix |= (uint64_t)1 << p->kl[j];
        pts = sat_mul(pts, p->ext[p->kl[j]]);
    }
    if (d == 0 || (deps & ~prefix) != 0 || (p->term >= 0 && (prefix >> p->term & 1)) || pts < 2 ||
        pts > BAND_POINTS || end <= p->ninv || end > p->ntop || p->inner % pts != 0 ||
        p->inner > INT64_MAX / 4 / p->ext[p->cl])
        return;
    p->band = rows;
    p->band_unit = unit;
    p->band_keys = nkeys;
    p->band_pts = pts;
    p->band_d = d;
    p->band_end = end;
}

static FcStatus plan_chunk_loop(Plan *p, FcError *err)
{
    const FcKernel *k = p->k;
    /* A scattered store keeps the last loop innermost: its units then run in the order of the
     * loop nest, the order in which duplicates must land. Only root loops are chunk loops. */
    if (k->chunk_loop >= 0) {     /* checked by the plan */
        p->cl = k->chunk_loop;
        plan_span(p);
        return plan_marks(p, err);
    }
    int cl = fc_target_chunk_loop(&fc_cpu_target, p->L, p->ext, k->nloop ? k->owner : NULL, p->scatter);
    if (cl < 0)
        cl = 0;
    uint8_t *mark = mem_malloc((size_t)k->ncode + 1);
    int *def = mem_malloc(((size_t)k->nreg + 1) * sizeof *def);
    if (!mark || !def) {
        mem_free(mark);
        mem_free(def);
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    }
    /* A chunk loop along which some load gathers element by element gives way to a long loop
     * along which every access is a run: (x[idx] * 2).sum() has its loops in the order of its
     * first load, idx's, and would otherwise read one element of each row of x per step. */
    if (!p->scatter && walk_one(p, cl, mark, def) > 0) {
        int best = cl;
        for (int l = 0; l < p->L; l++)
            if (l != cl && (k->nloop == 0 || k->owner[l] < 0) && p->ext[l] >= FC_LONG_CHUNK_LOOP &&
                (best == cl || p->ext[l] > p->ext[best]) && steady(p, l, mark, def))
                best = l;
        cl = best;
    }
    mem_free(mark);
    mem_free(def);
    p->cl = cl;
    plan_span(p);
    return plan_marks(p, err);
}

/* With the chunk loop known: each list's chunk loop (a reduction of one value per chunk runs
 * along a loop of its own), which steps are computed over the chunk (wide), which hold one value
 * and are kept while their loops stay (memo: the hoisting), which of those are read beyond
 * position 0 (fill), and how loads address (flat gathers, narrow loads). Then the buffers. */
static FcStatus plan_buffers(Plan *p, FcError *err);

/* The most positions a chunk along loop cx holds (1 for a reduction of one value that runs no
 * loop of its own along the chunk). */
static int chunk_width(const Plan *p, int cx)
{
    return cx < 0 ? 1 : cx == p->cl && p->span ? p->span : p->ext[cx] < FC_CHUNK ? (int)p->ext[cx] : FC_CHUNK;
}

/* The positions wide step s is computed over. */
static int positions(const Plan *p, const Step *s)
{
    return s->m > 0 ? s->m : chunk_width(p, s->cx);
}

/* Whether loop l cycles while a list whose chunk loop is cx is evaluated: a loop of the root
 * chunk, or cx, when it has more than one chunk; any other loop of more than one index. */
static bool cycles(const Plan *p, int cx, int l)
{
    if (p->ckmask >> l & 1)
        return p->span == 0 && p->ext[l] > FC_CHUNK;
    return p->ext[l] > (l == cx ? FC_CHUNK : 1);
}

/* w: the positions a reader takes; at least position 0 is written, which every other reader
 * reads (a reader in the body of a reduction over an empty loop takes none). */
static void mark_fill(Step *s, int w)
{
    s->fill = true;
    if (w < 1)
        w = 1;
    if (w > s->fillw)
        s->fillw = w;
}

/* Which factor (1 or 2) of wide step s, a float MULADD, is a value of one per chunk while the
 * other is wide, so that s reads it at position 0 instead of its broadcast (muladd_one); else
 * 0. Not in a span (weighted rows take the MULADDs there, wide weights included) nor a
 * scattered store (its gating and one-pass product read their own operands). ops: s's
 * operands' steps. */
static int muladd_one(const Plan *p, const Step *s, const int *ops)
{
    if (s->in->op != FC_OP_MULADD || p->span || p->scatter ||
        (s->in->dtype != FC_FLOAT32 && s->in->dtype != FC_FLOAT64))
        return 0;
    for (int o = 2; o >= 1; o--) {
        int other = 3 - o;
        if (ops[o] >= 0 && ops[other] >= 0 && !p->steps[ops[o]].wide && p->steps[ops[other]].wide)
            return o;
    }
    return 0;
}

/* Whether a value of one step s could be kept for a later evaluation: some loop that cycles
 * while its list is evaluated (a root loop, a loop of a reduction whose body holds it; a chunk
 * loop cycles when it has more than one chunk) leaves it alone. A value that varies along all
 * of them is computed afresh every time. */
static bool may_hold(const Plan *p, const Step *s)
{
    uint64_t loops = 0;
    for (int l = 0; l < p->L; l++)
        if (p->k->nloop == 0 || p->k->owner[l] < 0)
            loops |= (uint64_t)1 << l;
    for (int r = s->parent; r >= 0; r = p->steps[r].parent)
        for (int l = 0; l < p->L; l++)
            if (p->k->owner[l] == (int)(p->steps[r].in - p->k->code))
                loops |= (uint64_t)1 << l;
    for (uint64_t d = loops & ~s->deps; d; d &= d - 1)
        if (cycles(p, s->cx, __builtin_ctzll(d)))
            return true;
    return false;
}

/* Whether wide step s may be memoised like a value of one: in a span (its positions, s->m, the
 * same at every evaluation), a short one (the coordinates that vary along one loop of the
 * chunk and along a reduction's loop, recomputed for every point of the reduction otherwise),
 * whose buffer holds its values (not weighted rows' whereabouts), not a reduction. */
static bool memo_wide(const Step *s)
{
    return s->m > 0 && s->m <= MEMO_WIDE && !s->rowdefer && !s->nterm && !fc_op_is_reduce(s->in->op);
}

/* Whether MULADD step s (x + w * r, fcdim's fused multiply-add) is a term of weighted rows (see
 * "weighted rows"): one of its factors a load of its positions by contiguous rows that only it
 * reads and that it reads as is, the other a value with one entry per row, repeated along each
 * (their steps at *w and *g), and its x, if any, read as is. reads[]: how many times each step is
 * read. */
static bool row_product(const Plan *p, const Step *s, const int *reads, int *w, int *g)
{
    if (s->in->op != FC_OP_MULADD || !s->wide || s->m == 0 || s->dead ||
        (s->in->dtype != FC_FLOAT32 && s->in->dtype != FC_FLOAT64))
        return false;
    if (s->a >= 0) {
        const Step *x = &p->steps[s->a];
        if (s->x[0] || x->in->dtype != s->in->dtype || !x->wide || x->shape != s->shape)
            return false;
    }
    for (int o = 1; o <= 2; o++) {
        int gi = o == 1 ? s->b : s->c, wi = o == 1 ? s->c : s->b, wo = 3 - o;
        if (gi < 0 || wi < 0)
            continue;
        const Step *ld = &p->steps[gi], *ws = &p->steps[wi];
        if (ld->in->op != FC_OP_LOAD || ld->rows <= 0 || reads[gi] != 1 || ld->shape != s->shape || s->x[o] ||
            gi < p->ninv || !row_major(p, ld->shape & ~ld->outer, ld->strides))
            continue;
        if (!ws->wide || ws->shape != ld->outer || ws->in->dtype != s->in->dtype || !s->x[wo] || s->xrep[wo] != ld->rlen)
            continue;
        *w = wi;
        *g = gi;
        return true;
    }
    return false;
}

/* Weighted rows (see above) from fcdim's MULADDs: a MULADD whose product is of weighted rows
 * becomes a step of one term (weight, rows) added to its x (a; none for a MULADD without x);
 * one that is not stays an op (x + w * r by its function). Then a step whose x is such a step
 * that only it reads takes that step's terms before its own (up to ROW_TERMS), the other dead:
 * a chain of MULADDs (a sum of taps) is one pass. Last, a weight that is a product only its
 * term reads, recomputed at every evaluation anyway (not memoised), is computed row by row in
 * that pass from its factors (bilinear weights: hy * hx): how the weights' widening tables
 * factor is the CPU's layout. Outside a span, the MULADDs with a factor of one value per chunk
 * (Step.one) that make a chain (one_term) become terms the same way, and a chain one step.
 * Runs after the marks, before memoisation and buffers (which see the new operands). False
 * when out of memory. */
static void row_term(Plan *p, Step *s, int x, int w, int g)
{
    p->steps[g].rowdefer = p->span != 0;
    s->nterm = 1;
    s->term[0] = (RowTerm){.w = w, .v = -1, .r = g};
    s->rowg = g;
    s->a = x;
    s->b = -1;
    s->c = -1;
    s->one = 0;
}

/* Outside a span, whether step s, a MULADD with a factor of one value per chunk (Step.one),
 * adds to an x that is another such step only it reads, or is that x (a chain of them: the
 * four taps of roi_align's sample over a chunk of channels, w0 * r0 + w1 * r1 + ...): made a
 * term (the value at *w, the wide factor at *g), the chain becomes one step of terms, one pass
 * over the chunk instead of one per tap (eval_terms_one). reads[]: as for row_product. */
static bool one_term(const Plan *p, const Step *s, const int *reads, int *w, int *g)
{
    if (!s->one || s->dead || s->widens)
        return false;
    bool chained = false;
    if (s->a >= 0) {
        const Step *x = &p->steps[s->a];
        chained = (x->one || x->nterm) && reads[s->a] == 1 && x->parent == s->parent && !x->widens;
    }
    for (int j = 0; j < p->nsteps && !chained; j++) {
        const Step *r = &p->steps[j];
        chained = r->one && r->a >= 0 && &p->steps[r->a] == s && reads[r->a] == 1 && r->parent == s->parent &&
                  !r->widens;
    }
    if (!chained)
        return false;
    *w = s->one == 1 ? s->b : s->c;
    *g = s->one == 1 ? s->c : s->b;
    return true;
}

static bool plan_rowops(Plan *p)
{
    if (!p->span && (!p->muladd_one || p->scatter))
        return true;
    int *reads = mem_calloc((size_t)p->nsteps + 1, sizeof *reads);
    if (!reads)
        return false;
    for (int j = 0; j < p->nsteps; j++)
        for (int o = 0; o < step_operands(&p->steps[j]); o++) {
            int v = step_operand(&p->steps[j], o);
            if (v >= 0)
                reads[v]++;
        }
    reads[p->res]++;
    for (int g = 0; g < p->k->nscatter; g++)
        reads[p->sphys[g]]++;
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        int w, g;
        if (p->span ? row_product(p, s, reads, &w, &g) : one_term(p, s, reads, &w, &g))
            row_term(p, s, s->a, w, g);
    }
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        Step *x = s->nterm && s->a >= 0 ? &p->steps[s->a] : NULL;
        if (!x || !x->nterm || reads[s->a] != 1 || x->parent != s->parent || x->nterm + s->nterm > ROW_TERMS ||
            (p->span && (p->steps[x->rowg].rows != p->steps[s->rowg].rows ||
                         p->steps[x->rowg].rlen != p->steps[s->rowg].rlen)))
            continue;
        RowTerm term[ROW_TERMS];
        int n = 0;
        for (int k = 0; k < x->nterm; k++)
            term[n++] = x->term[k];
        for (int k = 0; k < s->nterm; k++)
            term[n++] = s->term[k];
        memcpy(s->term, term, sizeof term);
        s->nterm = (uint8_t)n;
        s->a = x->a;
        s->rowg = x->rowg;
        x->dead = true;
        x->nterm = 0;
        x->a = -1;
    }
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        for (int k = 0; k < s->nterm; k++) {
            RowTerm *tm = &s->term[k];
            Step *w = &p->steps[tm->w];
            if (w->in->op != FC_OP_MUL || w->dead || w->nterm || !w->wide || w->m == 0 || tm->w < p->ninv ||
                reads[tm->w] != 1 || w->parent != s->parent || w->in->dtype != s->in->dtype || w->a < 0 || w->b < 0 ||
                (memo_wide(w) && may_hold(p, w)))
                continue;
            int outer = w->xrep[0] > 0 && w->xcyc[1] == w->xrep[0]   ? w->xrep[0]
                        : w->xcyc[0] > 0 && w->xrep[1] == w->xcyc[0] ? -w->xcyc[0]
                                                                     : 0;
            *tm = (RowTerm){.w = w->a, .v = w->b, .r = tm->r, .wx = w->x[0], .vx = w->x[1], .outer = outer};
            w->dead = true;
        }
    }
    mem_free(reads);
    return true;
}

/* ---- precomputed values ----
 *
 * A value that varies along few of the chunk's positions (a coordinate over a bin row, one per
 * box) is computed many times over few positions: roi_align's sixty coordinate steps, seven
 * positions each, once per box and sample, cost more in dispatch than in arithmetic. When its
 * loops hold few points, it is computed once for all of them before the units run, into a table
 * (a value per point, the loops outside the chunk first, those of the chunk last, each in
 * cpu_shape_loops' order), as one pass per step over the whole table; during the run each chunk
 * points at its slice. Only what cannot fail is precomputed (loads that gather nothing, iotas,
 * ops but integer division): a body that runs to a bound would otherwise fail on points it
 * never reaches. A step is precomputed when it is not computed over the whole chunk (one value,
 * or at most MEMO_WIDE positions of a span), its operands are invariant or precomputed and its
 * table fits (PRE_POS, PRE_BYTES); the unhoisted schedule precomputes nothing. */

/* Whether the CPU's layout rules step j out of precomputation (fc_kplan_pre's veto; the
 * plan's rule does the rest): a step fused into another (dead, weighted rows and the rows they
 * read in place), one of a list that runs along another loop than the chunk loop, and one
 * computed over the whole chunk (wide, but for at most MEMO_WIDE positions of a span). */
static bool pre_veto(const Plan *p, int j)
{
    const Step *s = &p->steps[j];
    return s->dead || s->nterm || s->rowdefer || s->cx != p->cl || (s->wide && (s->m == 0 || s->m > MEMO_WIDE));
}

/* Marks the precomputed steps (fcdim's fc_kplan_pre, with the operands as the CPU reads them
 * after its fusion of weighted rows) and plans their tables (see above), the ones no other step reads dead.
 * Before memoisation and buffers. */
static FcStatus plan_pre(Plan *p, FcError *err)
{
    if (p->k->no_hoist)
        return FC_OK;
    const FcKernel *k = p->k;
    int n = p->nsteps;
    int *opv = mem_malloc((size_t)(3 * n + 1) * sizeof *opv);
    bool *veto = mem_malloc((size_t)n + 1), *pre = mem_malloc((size_t)n + 1);
    size_t *off = mem_malloc((size_t)(n + 1) * sizeof *off);
    FcStatus st = FC_OK;
    size_t bytes = 0;
    int64_t most = 0;
    if (!opv || !veto || !pre || !off) {
        st = cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int j = 0; j < n; j++) {
        const Step *s = &p->steps[j];
        int i = (int)(s->in - k->code);
        for (int o = 0; o < 3; o++) {
            int v = step_operand(s, o);
            opv[3 * i + o] = v >= 0 ? (int)(p->steps[v].in - k->code) : -1;
        }
        veto[i] = pre_veto(p, j);
    }
    bytes = fc_kplan_pre(p->kp, k, &fc_cpu_target, opv, veto, pre, off, NULL);
    for (int j = p->ninv; j < n; j++) {
        Step *s = &p->steps[j];
        int i = (int)(s->in - k->code);
        if (!pre[i])
            continue;
        s->pre = true;
        s->pre0 = off[i];
        p->npfill++;
        int64_t m = cpu_shape_size(p, s->deps);
        most = m > most ? m : most;
    }
done:
    mem_free(opv);
    mem_free(veto);
    mem_free(pre);
    mem_free(off);
    if (st != FC_OK)
        return st;
    if (p->npfill == 0)
        return FC_OK;
    /* the invariants they read, each repeated over the largest table once */
    bool *read = mem_calloc((size_t)p->nsteps + 1, sizeof *read);
    p->pinv = mem_malloc((size_t)(p->ninv + 1) * sizeof *p->pinv);
    if (!read || !p->pinv) {
        mem_free(read);
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    }
    for (int j = p->ninv; j < p->nsteps; j++)
        for (int o = 0; o < 3 && p->steps[j].pre; o++) {
            int v = step_operand(&p->steps[j], o);
            if (v >= 0 && v < p->ninv && !read[v]) {
                read[v] = true;
                p->pinv[p->npinv++] = v;
                p->steps[v].pre0 = bytes;
                bytes += ((size_t)most * p->steps[v].esize + 63) & ~(size_t)63;
            }
        }
    memset(read, 0, (size_t)p->nsteps * sizeof *read);
    p->pmost = (int)most;
    p->pfill = mem_calloc((size_t)p->npfill, sizeof *p->pfill);
    p->pretab = fc_cpu_aligned_alloc(bytes);
    p->prex = fc_cpu_aligned_alloc(3 * (size_t)most * 8);
    if (!p->pfill || !p->pretab || !p->prex) {
        mem_free(read);
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    }
    int nf = 0;
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->pre) {
            PreFill *f = &p->pfill[nf++];
            f->step = j;
            f->n = (int)cpu_shape_size(p, s->deps);
            for (int o = 0; o < 3; o++) {
                int v = step_operand(s, o);
                const Step *q = v >= 0 ? &p->steps[v] : NULL;
                f->op[o] = v;
                if (!q || !q->pre || q->deps == s->deps)
                    continue;
                if (!(f->x[o] = plan_widen(p, q->deps, s->deps))) {
                    mem_free(read);
                    return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
                }
                f->xrep[o] = widen_rep(p, q->deps, s->deps);
                f->xcyc[o] = widen_cycle(p, q->deps, s->deps);
            }
        } else if (!s->dead) {
            for (int o = 0; o < step_operands(s); o++) {
                int v = step_operand(s, o);
                if (v >= 0)
                    read[v] = true;
            }
        }
    }
    for (int g = 0; g < k->nscatter; g++)    /* steps still: the store reads them */
        read[p->sphys[g]] = true;
    for (int j = p->ninv; j < p->nsteps; j++)
        if (p->steps[j].pre && !read[j])
            p->steps[j].dead = true;
    mem_free(read);
    /* with 32-bit offsets, the precomputed indices that gathers read element by element, each
     * scaled once for all the gathers that read it alike (a tap's y is read by two taps) */
    int most_scaled = 0;
    for (int j = p->ninv; j < p->nsteps && p->idx32; j++)
        most_scaled += p->steps[j].per_element ? p->steps[j].in->ngather : 0;
    if (most_scaled > 0 && !(p->pscale = mem_calloc((size_t)most_scaled, sizeof *p->pscale)))
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    for (int j = p->ninv; j < p->nsteps && p->idx32; j++) {
        Step *s = &p->steps[j];
        for (int g = 0; s->per_element && !s->pre && !s->dead && g < s->in->ngather; g++) {
            const Step *q = &p->steps[s->g[g]];
            const FcGather *ga = &s->in->gathers[g];
            if (!s->gx[g].wide || !q->pre)
                continue;
            PreScale *c = p->pscale;
            for (; c < p->pscale + p->npscale; c++)
                if (c->q == s->g[g] && c->ga->stride == ga->stride && c->ga->extent == ga->extent &&
                    c->ga->wrap == ga->wrap)
                    break;
            if (c == p->pscale + p->npscale) {
                *c = (PreScale){.ga = ga, .q = s->g[g]};
                /* eight more: gather_32 reads eight from any entry (the outer sum) */
                if (!(c->sc = mem_calloc((size_t)cpu_shape_size(p, q->deps) + 8, sizeof *c->sc)))
                    return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
                p->npscale++;
            }
            s->gx[g].sc = c->sc;
            s->gx[g].ix0 = (const int64_t *)(const void *)(p->pretab + q->pre0);
            s->gx[g].ok = &c->ok;
        }
    }
    return FC_OK;
}

/* The runs of each list's steps that are not evaluated one by one, dead or precomputed: the
 * first step of each jumps past it (Step.skip), with a list of the run's precomputed steps that
 * others read (Plan.plist), pointed at their tables. Once the buffers are known. */
static FcStatus plan_runs(Plan *p, FcError *err)
{
    int nx = 0;
    for (int j = p->ninv; j < p->nsteps; j++)
        nx += p->steps[j].pre && !p->steps[j].dead;
    p->plist = mem_malloc((size_t)(nx + 1) * sizeof *p->plist);
    p->ptl = mem_malloc((size_t)(nx + 1) * (size_t)p->L * sizeof *p->ptl);
    int *lend = mem_malloc((size_t)(p->nsteps + 1) * sizeof *lend);   /* the end of each step's list */
    if (!p->plist || !p->ptl || !lend) {
        mem_free(lend);
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    }
    for (int j = 0; j < p->nsteps; j++)
        lend[j] = j < p->ninv ? p->ninv : p->ntop;
    for (int r = 0; r < p->nsteps; r++)
        if (fc_op_is_reduce(p->steps[r].in->op))
            for (int j = p->steps[r].body0; j < p->steps[r].body1; j++)
                lend[j] = p->steps[r].body1;
    int n = 0;
    for (int j = 0; j < p->nsteps;) {
        Step *h = &p->steps[j];
        if (!h->dead && !h->pre) {
            j++;
            continue;
        }
        int e = j + 1;
        while (e < lend[j] && (p->steps[e].dead || p->steps[e].pre))
            e++;
        h->skip = e;
        h->pfirst = n;
        const PreX *prev = NULL;
        for (int q = j; q < e; q++) {
            const Step *s = &p->steps[q];
            if (!s->pre || s->dead)
                continue;
            PreX *x = &p->plist[n];
            struct TabLoop *tl = p->ptl + (size_t)n * (size_t)p->L;
            int64_t str[FC_MAX_DIMS];
            shape_strides(p, s->deps, str);
            /* a value read at position 0 alone (a Step.one factor) is pointed at where it lies */
            *x = (PreX){.step = q, .d = s->d, .w = !s->wide && s->fill && s->fillw > 1 ? s->fillw : 0, .esize = (int)s->esize, .tl = tl,
                        .pre0 = s->pre0, .tvar = p->term >= 0 && (s->deps >> p->term & 1)};
            x->tstr = x->tvar ? str[p->term] : 0;
            for (uint64_t d = s->deps & ~p->ckmask; d; d &= d - 1) {
                int l = __builtin_ctzll(d);
                tl[x->nl++] = (struct TabLoop){l, str[l]};
            }
            if (prev && prev->nl == x->nl && memcmp(prev->tl, tl, (size_t)x->nl * sizeof *tl) == 0)
                x->tl = prev->tl;       /* the same entry: pre_point computes it once */
            prev = x;
            n++;
        }
        h->pcount = n - h->pfirst;
        j = e;
    }
    p->nplist = n;
    mem_free(lend);
    return FC_OK;
}

static FcStatus plan_marks(Plan *p, FcError *err)
{
    const FcKernel *k = p->k;
    bool hoist = !k->no_hoist;
    /* Each list's chunk loop, by the plan's rule (fc_kplan_chunks): a reduction of one value per
     * chunk runs along a loop of its own, and so does its body. */
    int *cx = mem_malloc(((size_t)k->ncode + 1) * sizeof *cx);
    if (!cx)
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    fc_kplan_chunks(k->ncode, k->nloop, p->kp->deps, p->kp->own, p->kp->list, p->cl, p->ckmask, cx);
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        int i = (int)(s->in - k->code);
        s->cx = cx[i];
        s->wide = j >= p->ninv && (s->deps & chunk_mask(p, s->cx));
        if (fc_op_is_reduce(s->in->op)) {
            uint64_t own = p->kp->own[i];
            s->rcl = -1;
            if (!s->wide)
                for (int l = 0; l < p->L; l++)
                    if (own >> l & 1)
                        s->rcl = l;
            s->nrl = 0;
            for (int l = 0; l < p->L; l++)
                if ((own >> l & 1) && l != s->rcl)
                    s->rl[s->nrl++] = l;
        } else if (!hoist && j >= p->ninv) {
            s->wide = true;         /* the unhoisted schedule: everything at every point */
        }
        s->shape = s->wide ? s->deps & chunk_mask(p, s->cx) : 0;
        s->m = s->wide && p->span && s->cx == p->cl ? (int)cpu_shape_size(p, s->shape) : 0;
    }
    mem_free(cx);
    /* Fills: one value read beyond position 0, by readers whose chunks are at most as long as
     * their lists' chunk loops. Widening: a wide value read by a step of a larger shape. */
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        const FcInstr *in = s->in;
        bool flat = true;
        for (int g = 0; in->op == FC_OP_LOAD && g < in->ngather; g++)
            flat = flat && !p->steps[s->g[g]].wide;
        s->per_element = in->op == FC_OP_LOAD && in->ngather > 0 && !flat;
        int ops[3] = {s->a, s->b, s->c}, nops = 0;
        if (in->op == FC_OP_LOAD) {
            s->outer = s->shape;
            if (s->per_element && s->m > 0) {
                /* rows: the inner loops of its shape that no index varies along go by runs */
                uint64_t vary = 0, inner = 0;
                for (int g = 0; g < in->ngather; g++)
                    vary |= p->steps[s->g[g]].wide ? p->steps[s->g[g]].shape : 0;
                for (int q = p->nck - 1; q >= 0 && !(vary >> p->ck[q] & 1); q--)
                    inner |= s->shape & (uint64_t)1 << p->ck[q];
                if (inner && inner != s->shape) {
                    s->outer = s->shape & ~inner;
                    s->rows = (int)cpu_shape_size(p, s->outer);
                    s->rlen = (int)cpu_shape_size(p, inner);
                }
            }
            for (int g = 0; s->per_element && g < in->ngather; g++) {
                const Step *q = &p->steps[s->g[g]];
                GatherX *gx = &s->gx[g];
                gx->wide = q->wide;
                gx->m = q->m;
                bool widen = s->m > 0 && q->wide && q->shape != s->outer;
                gx->x = widen ? plan_widen(p, q->shape, s->outer) : NULL;
                if (widen && !gx->x)
                    return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
                gx->xrep = widen ? widen_rep(p, q->shape, s->outer) : 0;
                gx->xcyc = widen ? widen_cycle(p, q->shape, s->outer) : 0;
            }
        } else if (fc_op_is_reduce(in->op)) {
            if (s->a >= 0)
                mark_fill(&p->steps[s->a], s->wide ? positions(p, s) : chunk_width(p, s->rcl));
            nops = s->wide ? 1 : 0;
        } else if (s->wide) {
            s->one = muladd_one(p, s, ops);
            p->muladd_one |= s->one != 0;
            for (int o = 0; o < 3; o++)
                if (ops[o] >= 0)
                    mark_fill(&p->steps[ops[o]], s->one && o == s->one ? 1 : positions(p, s));
            nops = 3;
        }
        for (int o = 0; o < nops; o++) {
            const Step *q = ops[o] >= 0 ? &p->steps[ops[o]] : NULL;
            if (!q || !q->wide || q->shape == s->shape || s->m == 0)
                continue;
            if ((q->shape & ~s->shape) || !(s->x[o] = plan_widen(p, q->shape, s->shape)))
                return cpu_errorf(err, (q->shape & ~s->shape) ? FC_ERR_VALUE : FC_ERR_NOMEM,
                              (q->shape & ~s->shape) ? "cpu kernel: an operand varies where its reader does not"
                                                     : "out of memory");
            s->xes[o] = (int)q->esize;
            s->xrep[o] = widen_rep(p, q->shape, s->shape);
            s->xcyc[o] = widen_cycle(p, q->shape, s->shape);
            s->widens = true;
        }
    }
    mark_fill(&p->steps[p->res], chunk_width(p, p->cl));
    const Step *rs = &p->steps[p->res];
    if (p->span && rs->wide && rs->shape != p->ckmask) {
        if (!(p->xres = plan_widen(p, rs->shape, p->ckmask)))
            return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
        p->xrep = widen_rep(p, rs->shape, p->ckmask);
        p->xcyc = widen_cycle(p, rs->shape, p->ckmask);
    }
    p->flat_scatter = true;
    for (int g = 0; g < k->nscatter; g++)
        p->flat_scatter = p->flat_scatter && !p->steps[p->sphys[g]].wide;
    for (int g = 0; g < k->nscatter && !p->flat_scatter; g++)
        mark_fill(&p->steps[p->sphys[g]], chunk_width(p, p->cl));
    if (!plan_rowops(p))
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    FcStatus st = plan_pre(p, err);
    if (st != FC_OK)
        return st;
    p->nmemo = 0;
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        s->memo = j >= p->ninv && (!s->wide || memo_wide(s)) && !s->dead && !s->pre && hoist && may_hold(p, s)
                      ? p->nmemo++
                      : -1;
        const Step *q = j > p->ninv ? &p->steps[j - 1] : NULL;
        s->memo_as_prev = s->memo >= 0 && q && q->memo >= 0 && q->parent == s->parent && q->deps == s->deps;
        s->narrow = s->in->op == FC_OP_LOAD && !s->wide && !s->fill;
        s->chain = !s->memo_as_prev ? s->memo : q->chain;
    }
    /* A memoised value read only inside its own chain is never copied back from its table:
     * whenever the chain runs, it is computed. */
    for (int j = p->ninv; j < p->nsteps; j++) {
        const Step *s = &p->steps[j];
        for (int o = 0; o < step_operands(s); o++) {
            int v = step_operand(s, o);
            if (v < 0)
                continue;
            Step *q = &p->steps[v];
            if (q->memo >= 0 && !(s->memo >= 0 && s->chain == q->chain))
                q->restore = true;
        }
    }
    p->steps[p->res].restore = true;
    for (int g = 0; g < k->nscatter; g++)
        p->steps[p->sphys[g]].restore = true;
    /* A bound is read at position 0 where its reduction starts: one that varies along the
     * chunk (a per-position bound of a wide reduction) is not used (FC_BOOL marks it); the body
     * then still holds its mask (the scheduler drops a mask only when its bounds do not vary
     * along the chunk). Whether it varies is its loops', not its wide mark: unhoisted, every
     * value is computed over the chunk but a bound that does not vary is still one value. */
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        for (int b = 0; fc_op_is_reduce(s->in->op) && b < s->in->nbound; b++)
            if (p->steps[s->bvals[b]].deps & chunk_mask(p, s->cx))
                s->bdt[b] = FC_BOOL;
    }
    size_t nfill = 0;
    for (int j = 0; j < p->nsteps; j++)
        if (fc_op_is_reduce(p->steps[j].in->op) && p->steps[j].in->nbound > 0)
            nfill++;
    if (nfill) {
        p->fills = fc_cpu_aligned_alloc(nfill * p->cbytes);
        if (!p->fills)
            return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
        char *f = p->fills;
        for (int j = 0; j < p->nsteps; j++) {
            Step *s = &p->steps[j];
            if (!fc_op_is_reduce(s->in->op) || s->in->nbound == 0)
                continue;
            fc_cpu_fill(f, s->in->src_dtype, s->in->fill, p->cap);
            s->fillv = f;
            f += p->cbytes;
        }
    }
    /* A scattered run held back is written late (defer_run): never when a load reads the
     * output's storage (a later chunk would read it before the write), nor from converted
     * values (they sit in a thread buffer that the next chunk overwrites). */
    p->defer = p->scatter && p->flat_scatter && !k->accumulate && !p->store_cast;
    for (int b = 0; b < k->nbufs; b++)
        p->defer = p->defer && k->bufs[b] != k->out;
    for (int g = 0; g < k->nscatter && g < FC_MAX_DIMS; g++)
        p->sstep[g] = p->sphys[g];
    plan_term(p);
    return plan_buffers(p, err);
}

/* Buffers by liveness (fcdim's fc_kplan_live, over the values the steps read after the CPU's
 * fusion of weighted rows: they read their weights and rows), in the order
 * the steps run (the plan's seq: a reduction's body before the reduction): invariant values get
 * shared buffers, memoised ones buffers of their own; the rest are reused. */
/* Whether step j of the top list holds along the term level (Plan.term): its value, computed for
 * a point's first term, is read again for the others, so its buffer is never reused. */
static bool term_held(const Plan *p, int j)
{
    return p->term >= 0 && j >= p->ninv && j < p->ntop && !(p->steps[j].deps >> p->term & 1);
}

/* The term level (Plan.term), as far as the loops tell before the buffers: a gradient's
 * scatter-add (accumulating, checked: it cannot fail, so no error's place depends on the order
 * of evaluation), flat, whose innermost root loop but the chunk loop has stride 0 in the store
 * and more than one index, some scatter index varying along it and no load: its index only
 * chooses among the terms (autograd.c's select_terms), as roi_align's taps. plan_loops drops it
 * where the units do not run its indices one after the other. */
static void plan_term(Plan *p)
{
    const FcKernel *k = p->k;
    p->term = -1;
    if (!p->scatter || !k->accumulate || !k->checked || k->nloop == 0 || p->span || !p->flat_scatter ||
        p->ostr[p->cl] == 0)
        return;
    int l = p->L - 1;
    while (l >= 0 && (l == p->cl || k->owner[l] >= 0))
        l--;
    if (l < 0 || p->ostr[l] != 0 || p->ext[l] < 2)
        return;
    for (int j = 0; j < p->nsteps; j++)
        if (p->steps[j].in->op == FC_OP_LOAD && (p->steps[j].deps >> l & 1))
            return;     /* a loop of the data (x[idx]'s rows), not a choice among terms */
    for (int g = 0; g < k->nscatter; g++)
        if (p->steps[p->sphys[g]].deps >> l & 1)
            p->term = l;
}

/* The steps a point's later terms may leave out (Plan.tunit, tjump): after plan_runs. */
static FcStatus plan_term_units(Plan *p, FcError *err)
{
    if (p->term < 0)
        return FC_OK;
    p->tunit = mem_calloc((size_t)p->nsteps + 1, 1);
    p->tjump = mem_malloc(((size_t)p->nsteps + 1) * sizeof *p->tjump);
    p->tpx = mem_malloc(((size_t)p->nplist + 1) * sizeof *p->tpx);
    p->tpf = mem_calloc((size_t)p->nsteps + 1, sizeof *p->tpf);
    p->tpn = mem_calloc((size_t)p->nsteps + 1, sizeof *p->tpn);
    if (!p->tunit || !p->tjump || !p->tpx || !p->tpf || !p->tpn)
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    int ntp = 0;
    for (int j = 0; j < p->nsteps; j++) {
        const Step *s = &p->steps[j];
        p->tjump[j] = j + 1;
        if (j < p->ninv || j >= p->ntop || s->memo_as_prev)
            continue;
        if (s->skip) {
            bool held = true;
            p->tpf[j] = ntp;
            for (int x = s->pfirst; x < s->pfirst + s->pcount; x++)
                if (p->plist[x].tvar) {
                    held = false;
                    p->tpx[ntp++] = x;
                }
            p->tpn[j] = ntp - p->tpf[j];
            p->tunit[j] = held;
            p->tjump[j] = s->skip;
        } else if (!(s->deps >> p->term & 1)) {
            p->tunit[j] = 1;
            if (s->memo >= 0)
                p->tjump[j] = s->chain_end;
        }
    }
    return FC_OK;
}

static FcStatus plan_buffers(Plan *p, FcError *err)
{
    const FcKernel *k = p->k;
    const FcPlan *kp = p->kp;
    int n = p->nsteps, nreads = 0;
    for (int j = 0; j < n; j++)
        nreads += step_operands(&p->steps[j]);
    int *seq = mem_malloc((size_t)(n + 1) * sizeof *seq), *first = mem_malloc((size_t)(n + 2) * sizeof *first);
    int *reads = mem_malloc((size_t)(nreads + 1) * sizeof *reads), *last = mem_malloc((size_t)(n + 1) * sizeof *last);
    int *ilast = mem_malloc((size_t)(n + 1) * sizeof *ilast);
    int *phys = mem_malloc((size_t)(n + 1) * sizeof *phys), *freel = mem_malloc((size_t)(n + 1) * sizeof *freel);
    FcStatus st = FC_OK;
    if (!seq || !first || !reads || !last || !ilast || !phys || !freel) {
        st = cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* the reads by instruction (steps are in the plan's order: step kp->pos[i] is instruction i) */
    first[0] = 0;
    for (int i = 0; i < n; i++) {
        const Step *s = &p->steps[kp->pos[i]];
        first[i + 1] = first[i];
        for (int o = 0; o < step_operands(s); o++) {
            int v = step_operand(s, o);
            reads[first[i + 1]++] = v >= 0 ? (int)(p->steps[v].in - k->code) : -1;
        }
    }
    fc_kplan_live(kp, k, first, reads, ilast);
    for (int q = 0; q < n; q++)
        seq[q] = kp->pos[kp->seq[q]];
    for (int i = 0; i < n; i++)
        last[kp->pos[i]] = ilast[i];
    int nfree = 0, nlocal = 0, nshared = 0;
    for (int q = 0; q < n; q++) {
        int j = seq[q];
        Step *s = &p->steps[j];
        bool inv = j < p->ninv, sticky = inv || s->memo >= 0 || term_held(p, j);
        phys[j] = inv ? -(nshared++ + 2) : !sticky && nfree > 0 ? freel[--nfree] : nlocal++;
        /* Free what is read for the last time here (after choosing phys[j]: no aliasing), and
         * a value nothing reads. */
        for (int o = -1; o < step_operands(s); o++) {
            int v = o < 0 ? j : step_operand(s, o);
            if (v < 0 || last[v] != q || v < p->ninv || p->steps[v].memo >= 0 || term_held(p, v))
                continue;
            freel[nfree++] = phys[v];
            last[v] = -1;       /* freed once */
        }
    }
    p->nshared = nshared;
    p->nphys = nshared + nlocal;
#define FINAL(x) ((x) < 0 ? p->nphys : phys[x] <= -2 ? -phys[x] - 2 : nshared + phys[x])
    for (int j = 0; j < n; j++) {
        Step *s = &p->steps[j];
        const FcInstr *in = s->in;
        s->d = FINAL(j);
        s->a = FINAL(s->a);
        s->b = FINAL(s->b);
        s->c = FINAL(s->c);
        for (int g = 0; in->op == FC_OP_LOAD && g < in->ngather; g++)
            s->g[g] = FINAL(s->g[g]);
        for (int b = 0; fc_op_is_reduce(in->op) && b < in->nbound; b++)
            s->bvals[b] = FINAL(s->bvals[b]);
        for (int q = 0; q < s->nterm; q++) {
            s->term[q].w = FINAL(s->term[q].w);
            s->term[q].v = FINAL(s->term[q].v);
            s->term[q].r = FINAL(s->term[q].r);
        }
    }
    p->res = FINAL(p->res);
    for (int g = 0; g < p->k->nscatter; g++)
        p->sphys[g] = FINAL(p->sphys[g]);
#undef FINAL
    if (nshared > 0) {
        p->shared = fc_cpu_aligned_alloc((size_t)nshared * p->cbytes);
        if (!p->shared)
            st = cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    }
done:
    mem_free(seq);
    mem_free(first);
    mem_free(reads);
    mem_free(last);
    mem_free(ilast);
    mem_free(phys);
    mem_free(freel);
    return st;
}

/* The step of operand o (0: a, 1: b, 2: c) of step j as the kernel's plan gives it, or -1. */
static int operand_step(const Plan *p, int j, int o)
{
    int v = p->kp->opv[3 * (p->steps[j].in - p->k->code) + o];
    return v >= 0 ? p->kp->pos[v] : -1;
}

/* Whether step j is a product of two factors, a MUL or a MULADD without x (kplan's lone weighted
 * gather): the operand positions of its factors in *o0 and *o1. */
static bool step_product(const Plan *p, int j, int *o0, int *o1)
{
    const FcInstr *in = p->steps[j].in;
    bool mul = in->op == FC_OP_MUL, muladd = in->op == FC_OP_MULADD && in->a < 0;
    *o0 = muladd ? 1 : 0;
    *o1 = muladd ? 2 : 1;
    return mul || muladd;
}

/* Gating (eval_gated). A gradient's scatter-add of a masked value, where(cond, v, 0) or
 * where(cond, v, 0) * w with cond and w one value per chunk (roi_align's samples past a box's
 * grid, ADAPTIVE's padded sample loops), adds zeros wherever cond is false: those chunks are
 * not stored, nor is what only the store needs computed (the product, the scatter indices).
 * Exactly what adding them gives, bar the sign of a zero sum: x + 0 is x, and 0 * w is a zero
 * for a finite w (a w that is not finite is multiplied and added, giving the NaN PyTorch
 * gives). torchvision's backward never visits those samples either. Only a store that cannot
 * fail (FcKernel.checked: the indices are those its forward read): an index out of range at a
 * skipped point would go unreported. The split points are wide steps, so no memo chain or run
 * of precomputed steps straddles them, and cond and w are live there (the where and the product
 * read them). After plan_loops (buffers). */
static void plan_gate(Plan *p)
{
    const FcKernel *k = p->k;
    if (!p->scatter || !k->accumulate || !k->checked || p->span || p->reduce)
        return;
    int r = p->kp->pos[p->kp->res];
    if (r < p->ninv || r >= p->ntop || !p->steps[r].wide)
        r = -1;
    int where = -1, mul = 0, w = -1, o0, o1;
    if (r >= 0 && p->steps[r].in->op == FC_OP_WHERE) {
        where = r;
    } else if (r >= 0 && step_product(p, r, &o0, &o1) && !p->steps[r].nterm && !p->steps[r].widens) {
        int a = operand_step(p, r, o0), b = operand_step(p, r, o1);
        for (int o = 0; o < 2 && where < 0; o++) {
            int x = o ? b : a, y = o ? a : b;
            if (x >= p->ninv && y >= 0 && p->steps[x].in->op == FC_OP_WHERE && !p->steps[y].wide)
                where = x, w = y;
        }
        mul = r;
        FcDType dt = w >= 0 ? p->steps[w].in->dtype : FC_BOOL;
        if (dt != FC_FLOAT32 && dt != FC_FLOAT64)
            where = -1;
    }
    if (where < p->ninv || !p->steps[where].wide || p->steps[where].widens)
        return;
    const FcInstr *in = p->steps[where].in;
    int c = operand_step(p, where, 0), z = operand_step(p, where, 2);
    if (c < 0 || z < 0 || p->steps[c].wide || p->steps[c].dead || p->steps[c].in->dtype != FC_BOOL ||
        p->steps[z].in->op != FC_OP_CONST || (in->dtype != FC_FLOAT32 && in->dtype != FC_FLOAT64) ||
        p->steps[z].in->konst.f != 0.0)
        return;
    /* the product is the where's only reader (the where is then left out where cond is false) */
    for (int j = p->ninv; mul && j < p->nsteps; j++) {
        const FcInstr *q = p->steps[j].in;
        int i = (int)(q - k->code), wc = (int)(p->steps[where].in - k->code);
        for (int o = 0; o < 3; o++)
            if (j != mul && operand_step(p, j, o) == where)
                return;
        for (int g = 0; q->op == FC_OP_LOAD && g < q->ngather; g++)
            if (p->kp->gopv[p->kp->goff[i] + g] == wc)
                return;
        for (int b = 0; fc_op_is_reduce(q->op) && b < q->nbound; b++)
            if (p->kp->bopv[p->kp->boff[i] + b] == wc)
                return;
    }
    /* A narrow pass leaves out the wide steps before the product: not when one could fail (a
     * gather's index out of range, an integer division by zero, in a reduction's body), which
     * must be reported whether or not cond holds. */
    p->gate_narrow = true;
    for (int j = p->ninv; j < (mul ? mul : where); j++) {
        const FcInstr *q = p->steps[j].in;
        if (p->steps[j].wide && (fc_instr_may_fail(q) || fc_op_is_reduce(q->op)))
            p->gate_narrow = false;
    }
    p->gate_where = where;
    p->gate_zero = z;
    p->gate_mul = mul;
    p->gate_cond = c;
    p->gate_w = w;
}

/* Whether step j is an index along a loop, or a float cast of one (monotone: a larger index is
 * never a smaller value): its loop, else -1. */
static int index_loop(const Plan *p, int j)
{
    const FcInstr *in = j >= 0 ? p->steps[j].in : NULL;
    if (in && in->op == FC_OP_CAST && (in->dtype == FC_FLOAT32 || in->dtype == FC_FLOAT64)) {
        j = operand_step(p, j, 0);
        in = j >= 0 ? p->steps[j].in : NULL;
    }
    return in && in->op == FC_OP_IOTA && p->L > 0 ? in->loop : -1;
}

/* The leaves of a gated store's cond that bound a kept loop (Plan.gb): cond an AND of
 * comparisons, a leaf iota(l) < b or <= b (b > iota(l), b >= iota(l)), precomputed (its value
 * read from its table), b varying along neither l nor the kept loops inside it nor cl. A point
 * where such a leaf is false is a zero (cond false) at every point of l's run after it: the
 * index only grows, b stays. Skipping them leaves out their narrow passes, so it is taken only
 * when nothing before the product may fail there (a gather or integer division varying inside
 * l, a reduction): one that does not vary there gave the same value, without failing, at the
 * point that found the leaf false; and w must be finite at the points skipped, which
 * Plan.gw lets the executor check once per run over the tables w comes from (gate_bounded).
 * After plan_gate (and plan_owner's kl). */
static void plan_gate_bounds(Plan *p)
{
    p->ngb = 0;
    if (!p->gate_where)
        return;
    uint64_t fails = 0;
    for (int j = p->ninv; j < (p->gate_mul ? p->gate_mul : p->gate_where); j++) {
        const Step *s = &p->steps[j];
        if (fc_op_is_reduce(s->in->op))
            return;
        if (!s->pre && !s->dead && fc_instr_may_fail(s->in))
            fails |= s->deps | (s->wide ? 1ull << p->cl : 0);
    }
    int w = p->gate_w, o0, o1;
    p->ngw = 0;
    if (p->gate_mul && p->steps[w].pre) {
        p->gw[p->ngw++] = w;
    } else if (p->gate_mul && step_product(p, w, &o0, &o1)) {
        p->gw[0] = operand_step(p, w, o0);
        p->gw[1] = operand_step(p, w, o1);
        p->ngw = 2;
        if (p->gw[0] < 0 || p->gw[1] < 0 || !p->steps[p->gw[0]].pre || !p->steps[p->gw[1]].pre)
            return;
    } else if (p->gate_mul) {
        return;
    }
    int todo[2 * GATE_BOUNDS], n = 0;
    todo[n++] = p->gate_cond;
    while (n > 0) {
        int j = todo[--n];
        const FcInstr *in = p->steps[j].in;
        if (in->op == FC_OP_AND && in->dtype == FC_BOOL) {
            int a = operand_step(p, j, 0), b = operand_step(p, j, 1);
            if (a < 0 || b < 0 || n + 2 > 2 * GATE_BOUNDS)
                return;
            todo[n++] = b;
            todo[n++] = a;
            continue;
        }
        int lo = in->op == FC_OP_LT || in->op == FC_OP_LE ? 0 : in->op == FC_OP_GT || in->op == FC_OP_GE ? 1 : -1;
        int l = lo >= 0 ? index_loop(p, operand_step(p, j, lo)) : -1, b = lo >= 0 ? operand_step(p, j, !lo) : -1;
        if (l < 0 || b < 0 || !p->steps[j].pre || p->steps[j].wide || p->ngb == GATE_BOUNDS)
            continue;
        int kpos = 0;
        while (kpos < p->nkl && p->kl[kpos] != l)
            kpos++;
        uint64_t inside = 1ull << p->cl;
        for (int q = kpos; q < p->nkl; q++)
            inside |= 1ull << p->kl[q];
        if (kpos == p->nkl || (p->steps[b].deps & inside) || (fails & inside))
            continue;
        p->gb[p->ngb++] = (struct GateBound){j, kpos};
    }
}

/* Whether step r is the only reader of step w's value: not an operand of another step, a
 * gathered index, a bound, weighted rows, the result or a scatter index. */
static bool sole_reader(const Plan *p, int w, int r)
{
    const FcKernel *k = p->k;
    const Step *s = &p->steps[w];
    int wc = (int)(s->in - k->code);
    if (w == p->kp->pos[p->kp->res])   /* (its buffer may be the result's after w is read) */
        return false;
    for (int g = 0; g < k->nscatter; g++)
        if (p->sphys[g] == s->d)
            return false;
    for (int j = 0; j < p->nsteps; j++) {
        const Step *q = &p->steps[j];
        int i = (int)(q->in - k->code);
        if (q->nterm)
            return false;
        for (int o = 0; o < 3 && j != r; o++)
            if (operand_step(p, j, o) == w)
                return false;
        for (int g = 0; q->in->op == FC_OP_LOAD && g < q->in->ngather; g++)
            if (p->kp->gopv[p->kp->goff[i] + g] == wc)
                return false;
        for (int b = 0; fc_op_is_reduce(q->in->op) && b < q->in->nbound; b++)
            if (p->kp->bopv[p->kp->boff[i] + b] == wc)
                return false;
    }
    return true;
}

/* Step w, one value over the chunk, is read at position 0 alone: it is no longer broadcast over
 * the chunk when it is computed, restored from its memo chain, or pointed at in its table
 * (pre_point). Returns whether it was (false: already one position, or computed over the chunk).
 * After plan_runs (Plan.plist) and plan_memo. */
static bool fill_one(Plan *p, int w)
{
    Step *s = &p->steps[w];
    if (s->wide || !s->fill || s->fillw <= 1)
        return false;
    s->fillw = 1;
    for (int x = 0; x < p->nplist; x++)
        if (p->plist[x].step == w)
            p->plist[x].w = 0;
    for (int j = 0; j < p->nsteps; j++)
        for (int q = p->steps[j].rfirst; q < p->steps[j].rfirst + p->steps[j].rcount; q++)
            if (p->rlist[q].memo == s->memo && p->rlist[q].d == s->d && p->rlist[q].w > 1)
                p->rlist[q].w = 1;
    return true;
}

/* A gated store's where with cond true: cond holds one value, so it holds over the chunk and
 * the where is v itself, bit for bit; the product may read v where it lies (a load read in
 * place: roi_align's staged cotangent row), or in v's buffer unless a step up to the product
 * writes that buffer (eval_gated). After plan_index (in-place loads) and plan_memo. */
static void plan_gate_v(Plan *p)
{
    p->gate_v = -1;
    int where = p->gate_where, mul = p->gate_mul;
    if (!where || !mul || p->steps[where].memo >= 0)
        return;
    int v = operand_step(p, where, 1);
    if (v < p->ninv || !p->steps[v].wide || p->steps[v].in->dtype != p->steps[where].in->dtype)
        return;
    for (int j = where + 1; j <= mul && !p->steps[v].inplace; j++)
        if (p->steps[j].d == p->steps[v].d)
            return;
    p->gate_v = v;
    /* the where is then never evaluated (eval_gated): cond is read at position 0 alone */
    if (sole_reader(p, p->gate_cond, where))
        fill_one(p, p->gate_cond);
}

/* Whether the result is added into the output as a product in one pass (Plan.mul_add): a flat
 * accumulating store, unit stride along the chunk, of a float product v * w that is the top
 * list's last step, v over the whole chunk and w one value, neither read through a table, and no
 * load of the output (v never overlaps it). A gradient's scatter-add is such a product (roi_align's
 * taps: the cotangent row times the tap's weight). q + v * w rounds as the product's step and the
 * add did (the product rounded first: ISO C mode contracts nothing), without the pass that wrote
 * the product and read it back. After plan_buffers. */
static void plan_mul_add(Plan *p)
{
    const FcKernel *k = p->k;
    int r = p->ntop - 1;
    p->mul_add = false;
    if (!p->scatter || !p->flat_scatter || !k->accumulate || p->store_cast || p->span || p->xres ||
        r < p->ninv || p->kp->pos[p->kp->res] != r || p->ostr[p->cl] != 1)
        return;
    const Step *s = &p->steps[r];
    int o0, o1;
    if (!step_product(p, r, &o0, &o1) || (s->in->dtype != FC_FLOAT32 && s->in->dtype != FC_FLOAT64) || s->nterm ||
        s->sel || s->widens || s->memo >= 0 || !s->wide || s->m != 0)
        return;
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b] == k->out)
            return;
    int a = operand_step(p, r, o0), b = operand_step(p, r, o1);
    if (a < 0 || b < 0 || p->steps[a].in->dtype != s->in->dtype || p->steps[b].in->dtype != s->in->dtype)
        return;
    int pa = o0 ? s->b : s->a, pb = o0 ? s->c : s->b;      /* their buffers */
    if (p->steps[b].wide && !p->steps[a].wide) {
        int x = a;
        a = b;
        b = x;
    }
    if (!p->steps[a].wide || p->steps[a].m != 0 || p->steps[b].wide)
        return;
    p->mul_add = true;
    p->mul_v = pa == p->steps[a].d ? pa : pb;
    p->mul_w = pa == p->steps[a].d ? pb : pa;
    /* w is read at position 0 alone (flat_write) when the product is its only reader:
     * roi_align's tap weight, at every point of a tap's kernel, not broadcast over the chunk
     * (computed, restored or, precomputed, pointed at in its table) */
    if (sole_reader(p, b, r) && fill_one(p, b))
        p->mul_w_one = true;
}

/* Chooses the chunk loop and the shape of the iteration. */
static FcStatus plan_loops(Plan *p, const FcKernel *k, FcError *err)
{
    p->L = k->nloop > 0 ? k->nloop : 1;
    p->total = 1;
    p->work = 1;
    for (int l = 0; l < p->L; l++) {
        p->ext[l] = k->nloop > 0 ? k->extent[l] : 1;
        p->red[l] = k->nloop > 0 && p->reduce && k->reduced[l];
        p->ostr[l] = k->nloop > 0 && !p->red[l] ? k->out_strides[l] : 0;
        if (k->nloop == 0 || k->owner[l] < 0)
            p->total = sat_mul(p->total, p->ext[l]);
        p->work = sat_mul(p->work, p->ext[l]);
    }
    p->idx32 = spans_fit(p);
    FcStatus st = plan_chunk_loop(p, err);
    if (st != FC_OK)
        return st;
    int cl = p->cl;
    p->hor = p->red[cl];
    p->argloop = -1;
    int nred_loops = 0;
    for (int l = 0; l < p->L; l++) {
        if (p->red[l]) {
            nred_loops++;
            p->argloop = l;
        }
        if ((p->ckmask >> l & 1) || (k->nloop > 0 && k->owner[l] >= 0))
            continue;
        if (p->red[l])
            p->rl[p->nrl++] = l;
        else
            p->kl[p->nkl++] = l;
    }
    if (p->r.arg && nred_loops > 1)
        return cpu_errorf(err, FC_ERR_VALUE, "cpu kernel: %s over %d loops", fc_op_name(k->reduce), nred_loops);
    plan_owner(p);
    p->nchunk = p->span ? 1 : p->ext[cl] / FC_CHUNK + (p->ext[cl] % FC_CHUNK != 0);   /* no overflow */
    /* The term level is the last kept loop, inside the owner loops; units that are not owner
     * parts run a point's terms together only when it has one chunk (task_units). */
    if (p->term >= 0 && (p->nkl == 0 || p->kl[p->nkl - 1] != p->term || p->nkl - 1 < p->nkown ||
                         (!p->own && p->nchunk != 1)))
        p->term = -1;
    plan_band(p);
    p->group = p->reduce && !p->hor ? VERT_GROUP : 1;
    p->ngroup = (p->nchunk + p->group - 1) / p->group;
    p->lk = !p->hor && p->nkl > 0 ? p->kl[p->nkl - 1] : -1;
    p->tile = 1;
    /* A store that reads (or writes) along lk where it strides along cl, as a transpose does:
     * tiles of lk make the chunks of neighbouring units share cache lines and pages. A
     * scattered store takes no tiles, so that its units run in the order of the loop nest. */
    if (!p->reduce && p->lk >= 0 && !p->scatter && !p->span) {
        bool across = llabs(p->ostr[cl]) > 1 && llabs(p->ostr[p->lk]) == 1;
        for (int j = p->ninv; j < p->nsteps; j++) {
            const Step *s = &p->steps[j];
            if (s->in->op == FC_OP_LOAD && !s->per_element)
                across |= llabs(s->strides[cl]) > 1 && llabs(s->strides[p->lk]) == 1;
        }
        if (across)
            p->tile = TILE;
        const Step *s = p->ntop == p->ninv + 1 && p->nsteps == p->ntop ? &p->steps[p->ninv] : NULL;
        bool copy = across && s && s->d == p->res && s->in->op == FC_OP_LOAD && s->in->ngather == 0 && s->wide &&
                    !p->store_cast && p->out_es == 4 && p->group == 1 && p->ext[p->lk] >= 8 &&
                    k->bufs[s->in->buf] != k->out;
        p->tcopy = copy && ((p->ostr[cl] == 1 && s->strides[p->lk] == 1 && llabs(s->strides[cl]) > 1) ||
                            (p->ostr[p->lk] == 1 && s->strides[cl] == 1 && llabs(p->ostr[cl]) > 1));
        /* Tile by tile over all the chunks, each tile reads a line of every input row a stride
         * apart (a pixel's 256 channels, 1 KiB) and takes sixteen passes over the whole input;
         * chunk by chunk, the chunk's rows are read whole, one line after the other, while they
         * are in the caches (copy_tile fetches the next tile's). */
        p->tchunk = p->tcopy && p->ostr[cl] == 1 && p->nchunk > 1;
        p->tsrc = p->ninv;
    }
    int64_t kept = 1, reduced = 1;
    for (int j = 0; j < p->nkl; j++)
        kept = sat_mul(kept, p->ext[p->kl[j]]);
    for (int j = 0; j < p->nrl; j++)
        reduced = sat_mul(reduced, p->ext[p->rl[j]]);
    p->nunits = p->hor ? kept : sat_mul(kept, p->ngroup);
    if (p->own)
        p->outer = p->inner > 0 ? kept / p->inner : 0;
    p->nred = p->hor ? sat_mul(reduced, p->nchunk) : reduced;
    if (p->nunits == INT64_MAX || p->nred == INT64_MAX)
        return cpu_errorf(err, FC_ERR_VALUE, "cpu kernel: the loop nest is too large");
    return FC_OK;
}

/* The memo tables. A memoised step is computed once per point of its loops while they hold; a
 * loop it does not vary along that cycles outside some of its loops (roi_align's y over (box,
 * bin row, sample row) sits in the loop over the bin column, and the sample rows cycle inside
 * that) would make it recompute at every turn, so the loops inside the first such loop get a
 * table: one entry per point, kept for as long as the loops outside it (its key) stay. The order
 * is that of the iteration: kept root loops, the root chunk loop, reduced root loops, then each
 * inner reduction's loops. The steps of a chain share the check, so the first one's table is
 * theirs. */
static FcStatus plan_memo(Plan *p, FcError *err)
{
    int order[FC_MAX_DIMS], no = 0;
    for (int j = 0; j < p->nkl; j++)
        order[no++] = p->kl[j];
    for (int j = 0; j < p->nck; j++)
        order[no++] = p->ck[j];
    for (int j = 0; j < p->nrl; j++)
        order[no++] = p->rl[j];
    for (int j = p->ninv; j < p->nsteps; j++) {
        const Step *s = &p->steps[j];
        for (int i = 0; fc_op_is_reduce(s->in->op) && i < s->nrl && no < FC_MAX_DIMS; i++)
            order[no++] = s->rl[i];
        if (fc_op_is_reduce(s->in->op) && s->rcl >= 0 && no < FC_MAX_DIMS)
            order[no++] = s->rcl;
    }
    size_t entries = 0;
    int64_t tsize = 1;          /* entries of the current chain's table */
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->memo < 0)
            continue;
        if (!s->memo_as_prev) {     /* the chain's first step: its table */
            int i = 0;
            for (; i < no; i++) {
                int l = order[i];
                if (cycles(p, s->cx, l) && !(s->deps >> l & 1))
                    break;
            }
            size_t len = 0;     /* the chain's steps that restore, each a table of values */
            for (int q = 0; q == 0 || (j + q < p->nsteps && s[q].memo_as_prev); q++)
                len += s[q].restore;
            len = len * (size_t)(s->wide ? s->m : 1) + 1;   /* and the stamps */
            s->tab = 0;
            s->ntl = 0;
            int64_t size = 1;
            for (int q = no - 1; q > i; q--) {
                int l = order[q];
                if (!(s->deps >> l & 1) || p->ext[l] <= 1)
                    continue;
                if (p->ext[l] > MEMO_TABLE / size || entries + (size_t)(size * p->ext[l]) * (len + 1) > MEMO_ENTRIES)
                    break;      /* the loops further out stay in the key */
                s->tab |= (uint64_t)1 << l;
                s->tl[s->ntl].loop = l;
                s->tl[s->ntl++].str = size;
                size *= p->ext[l];
            }
            s->tsize = size;
            s->key = s->deps & ~s->tab & ~chunk_mask(p, s->cx);
            s->stamp0 = p->nstamps;
            p->nstamps += (size_t)size;
            entries += (size_t)size;
            tsize = size;
        }
        if (!s->restore)        /* computed whenever its chain runs: never kept */
            continue;
        s->val0 = p->nvals;     /* a value per entry of its chain's table */
        p->nvals += (size_t)tsize * (size_t)(s->wide ? s->m : 1);
        entries += (size_t)tsize * (size_t)(s->wide ? s->m : 1);
    }
    /* a chain that holds is skipped: only its steps that restore are visited */
    p->rlist = mem_malloc((size_t)(p->nsteps + 1) * sizeof *p->rlist);
    if (!p->rlist)
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    int nr = 0;
    for (int j = p->ninv; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->memo < 0 || s->memo_as_prev)
            continue;
        s->rfirst = nr;
        int q = j;
        for (; q < p->nsteps && (q == j || p->steps[q].memo_as_prev); q++)
            if (p->steps[q].restore) {
                const Step *r = &p->steps[q];
                p->rlist[nr++] = (Restore){.memo = r->memo, .d = r->d, .w = r->wide ? 0 : r->fill ? r->fillw : 1,
                                           .esize = (int)r->esize, .val0 = r->val0, .m = r->m};
            }
        s->rcount = nr - s->rfirst;
        s->chain_end = q;
    }
    return FC_OK;
}

/* Adds to *span the distance that index i in [0, ext) moves an access with this stride; false
 * when the total reaches 2^31 elements. */
static bool span_add(uint64_t *span, int64_t stride, int64_t ext)
{
    uint64_t a = stride < 0 ? -(uint64_t)stride : (uint64_t)stride;
    if (a == 0 || ext <= 1)
        return true;
    if (a > INT32_MAX || (uint64_t)(ext - 1) > INT32_MAX)
        return false;
    *span += a * (uint64_t)(ext - 1);
    return *span <= INT32_MAX;
}

/* Whether every access (the output over its loops, each load with its gathers) spans fewer
 * than 2^31 elements, and the kernel says its addresses fit in int32 (FcKernel.index32). */
static bool spans_fit(const Plan *p)
{
    uint64_t span = 0;
    bool ok = p->k->index32;
    for (int l = 0; l < p->L && ok; l++)
        ok = span_add(&span, p->ostr[l], p->ext[l]);
    for (int j = 0; j < p->nsteps && ok; j++) {
        const Step *s = &p->steps[j];
        const FcInstr *in = s->in;
        if (in->op != FC_OP_LOAD)
            continue;
        span = 0;
        for (int l = 0; l < p->L && ok; l++)
            ok = span_add(&span, s->strides[l], p->ext[l]);
        for (int g = 0; g < in->ngather && ok; g++)
            ok = span_add(&span, in->gathers[g].stride, in->gathers[g].extent);
    }
    return ok;
}

/* Whether a load reads through a table of 32-bit offsets (Step.ramp): gathers element by
 * element always (flat ones read as the strided loads they are), and wide loads over several
 * loops of a chunk (unless the table is 0, 1, ...: Step.inplace); strided loads when
 * neighbouring elements share cache lines (about 10% faster than a stepping pointer
 * at stride 2 to 4 floats). Where each element is a line of its own, as in a transpose, the
 * table costs a load per element: measured 7-10% slower on 256^2 and 512^2 float transposes
 * held in cache, 2% at 1024^2, and only at 4096^2 (a TLB miss per element) 7% faster. */
static bool needs_ramp(const Step *s)
{
    int64_t stride = s->cstride, near = NEAR_STRIDE_BYTES / (int64_t)s->esize;
    if (s->per_element)
        return true;
    if (!s->wide)
        return false;
    if (s->shape & (s->shape - 1))
        return !s->inplace;
    return stride != 0 && stride != 1 && stride >= -near && stride <= near;
}

/* Chooses the width of the offsets within a chunk. An offset is the distance between two
 * elements of one access (a load over the loop nest and its gathered indices, or the output
 * over the loops it is written along), so it fits in int32 when each access spans fewer than
 * 2^31 elements. The kernel's index32 (all addresses fit in int32, which implies this for
 * addresses into real buffers) asks for 32 bits; the spans are checked here all the same, so a
 * kernel that claims it wrongly runs on the 64-bit path instead of overflowing. Then each load's
 * stride along its chunk, its table of offsets, and (a span) the output's. */
/* Whether a span's store is a transpose: its loops split into outer ones A and inner ones B,
 * with A's positions at output offsets 0, 1, ... and B's at multiples of a stride (its
 * positions taken row-major within each part), as a reduction over bins of channels_last
 * taps written NCHW is. Sets trr, trc, trld. */
static bool plan_transpose(Plan *p)
{
    for (int j = 1; j < p->nck; j++) {
        uint64_t a = 0, b = 0;
        for (int q = 0; q < p->nck; q++)
            *(q < j ? &a : &b) |= (uint64_t)1 << p->ck[q];
        int64_t ld = p->ostr[p->ck[p->nck - 1]], str[FC_MAX_DIMS];
        shape_strides(p, b, str);
        bool ok = row_major(p, a, p->ostr) && ld >= cpu_shape_size(p, a);
        for (int q = j; q < p->nck && ok; q++)
            ok = p->ostr[p->ck[q]] == ld * str[p->ck[q]];
        if (ok) {
            p->trr = (int)cpu_shape_size(p, a);
            p->trc = (int)cpu_shape_size(p, b);
            p->trld = ld;
            return true;
        }
    }
    return false;
}

/* Plan.tload: in a store taken in tiles along lk (plan_loops), the first wide load of the top
 * list that reads 4-byte elements one after another along lk and a stride apart along the
 * chunk loop, and is nothing else (no gather, memo, rows or offsets table of its own): eight
 * consecutive units read it from one block of eight rows transposed in registers instead of
 * element by element. Only the way the values get to the chunk changes. */
static void plan_tload(Plan *p)
{
    p->tload = -1;
    if (p->tile <= 1 || p->tcopy || p->group != 1 || p->reduce || p->scatter || p->span || p->gate_where ||
        p->mul_add || p->lk < 0 || p->ext[p->lk] < 8)
        return;
    for (int j = p->ninv; j < p->ntop; j++) {
        const Step *s = &p->steps[j];
        if (s->in->op == FC_OP_LOAD && s->wide && !s->per_element && s->in->ngather == 0 && s->memo < 0 &&
            !s->dead && !s->rowdefer && s->rows == 0 && s->esize == 4 && s->shape == (uint64_t)1 << p->cl &&
            s->strides[p->lk] == 1 && s->strides[p->cl] > 1) {
            p->tload = j;
            return;
        }
    }
}

/* Plan.stream: a store whose value is invariant (a fill: a gradient buffer's zeros), written
 * along its chunks contiguously, of STREAM_BYTES or more (Plan.tstream: a transposing copy of as
 * many bytes). Written through the caches, each
 * line is read before it is overwritten and then evicts a line that another kernel wrote and
 * is still to write back or to read (the staged cotangent that the gradient's scatters read
 * next): the fill paid for both. Bypassing them writes the bytes once. */
static void plan_stream(Plan *p)
{
    int64_t bytes;
    p->stream = !p->reduce && !p->scatter && p->ntop == p->ninv && !p->trc && !p->otab && !p->store_cast &&
                !p->xres && (p->span || p->ostr[p->cl] == 1) && !__builtin_mul_overflow(p->total, (int64_t)p->out_es, &bytes) &&
                bytes >= STREAM_BYTES;
    p->tstream = p->tcopy && !__builtin_mul_overflow(p->total, (int64_t)p->out_es, &bytes) && bytes >= STREAM_BYTES;
}

static FcStatus plan_index(Plan *p, const FcKernel *k, FcError *err)
{
    const int64_t *ext = p->ext;
    int cl = p->cl;
    int nramp = 0;
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->in->op != FC_OP_LOAD)
            continue;
        bool one = s->shape != 0 && !(s->shape & (s->shape - 1));
        s->cstride = one ? s->strides[__builtin_ctzll(s->shape)] : 0;
        s->inplace = s->wide && !s->per_element && s->shape && row_major(p, s->shape, s->strides);
        bool run = s->rows > 0 && row_major(p, s->shape & ~s->outer, s->strides);
        s->rampz = true;
        for (uint64_t d = s->rows > 0 ? s->outer : s->shape; d; d &= d - 1)
            s->rampz = s->rampz && s->strides[__builtin_ctzll(d)] == 0;
        /* Two wide indices, one repeated and one cycled as widely, nothing else moving: the
         * offsets are their outer sum (bilinear taps: y's row offset plus x's). */
        int wide[3], nw = 0;
        for (int g = 0; s->per_element && g < s->in->ngather && nw < 3; g++)
            if (s->gx[g].wide)
                wide[nw++] = g;
        s->osum = 0;
        if (p->idx32 && s->rampz && nw == 2) {
            const GatherX *x0 = &s->gx[wide[0]], *x1 = &s->gx[wide[1]];
            int r = x0->xrep > 0 && x0->xrep == x1->xcyc ? 0 : x1->xrep > 0 && x1->xrep == x0->xcyc ? 1 : -1;
            if (r >= 0 && x0->x && x1->x) {
                s->og[0] = wide[r];
                s->og[1] = wide[1 - r];
                s->osum = s->gx[s->og[0]].xrep;
            }
        }
        nramp += needs_ramp(s) + (s->rows > 0 && !run);
        /* Contiguous runs of a strided view (a tap of a padded image: rows of the output's width
         * inside wider rows) are copied whole, not element by element through the table. */
        s->prun = 0;
        if (needs_ramp(s) && !s->per_element && s->rows == 0) {
            int loops[FC_MAX_DIMS], nl = cpu_shape_loops(p, s->shape, loops);
            if (nl > 1 && s->strides[loops[nl - 1]] == 1 && ext[loops[nl - 1]] >= PRUN_MIN)
                s->prun = (int)ext[loops[nl - 1]];
        }
    }
    if (!p->idx32)
        return FC_OK;
    p->ostr32 = ext[cl] > 1 ? (int32_t)p->ostr[cl] : 0;
    if (p->span && !row_major(p, p->ckmask, p->ostr) && !plan_transpose(p)) {
        p->otab = mem_malloc((size_t)p->span * sizeof *p->otab);
        if (!p->otab)
            return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
        shape_table(p, p->ckmask, p->ostr, p->otab, p->span);
    }
    if (nramp == 0)
        return FC_OK;
    p->ramps = mem_malloc((size_t)nramp * (size_t)p->cap * sizeof *p->ramps);
    if (!p->ramps)
        return cpu_errorf(err, FC_ERR_NOMEM, "out of memory");
    /* Only the first positions(s) entries are ever read; the rest stay 0 rather than overflow. */
    int32_t *r = p->ramps;
    for (int j = 0; j < p->nsteps; j++) {
        Step *s = &p->steps[j];
        if (s->in->op != FC_OP_LOAD || !needs_ramp(s))
            continue;
        memset(r, 0, (size_t)p->cap * sizeof *r);
        if (s->prun) {
            int loops[FC_MAX_DIMS], nl = cpu_shape_loops(p, s->shape, loops);
            shape_table(p, s->shape & ~((uint64_t)1 << loops[nl - 1]), s->strides, r, p->cap);
        } else if (s->outer) {
            shape_table(p, s->outer, s->strides, r, p->cap);
        }
        s->ramp = r;
        r += p->cap;
        if (s->rows > 0 && !row_major(p, s->shape & ~s->outer, s->strides)) {
            shape_table(p, s->shape & ~s->outer, s->strides, r, p->cap);     /* within a row */
            s->iramp = r;
            r += p->cap;
        }
    }
    return FC_OK;
}

/* The physical buffer b as step j reads it: the step before j that last writes it, when no
 * step after that one writes it again (so that it still holds once all the steps ran), else -1. */
static int sole_writer(const Plan *p, int b, int j)
{
    int w = -1;
    for (int i = 0; i < p->nsteps; i++)
        if (p->steps[i].d == b) {
            if (i >= j && w >= 0)
                return -1;
            if (i < j)
                w = i;
        }
    return w;
}

/* A transposing store of a scaled value (Plan.nscale): the steps after the invariants are one
 * wide LOAD, steps of one value per chunk that vary along neither lk nor cl and cannot fail,
 * and a chain of float32 MUL and DIV of the load by such values ending in the result. A tile
 * evaluates the one-value steps narrow once (they hold over the tile), copies as a tcopy does
 * and applies the chain to each transposed block in registers: each element gets the same
 * operations, with its operands in the same order, as the unit by unit store. */
static void plan_tscale(Plan *p)
{
    const FcKernel *k = p->k;
    if (p->tcopy || p->tile != TILE || p->reduce || p->scatter || p->span || p->lk < 0 || p->group != 1 ||
        p->store_cast || p->out_es != 4 || p->ext[p->lk] < 8 || p->nsteps != p->ntop || p->term >= 0 ||
        p->gate_where || p->mul_add || p->res_dt != FC_FLOAT32)
        return;
    uint64_t along = 1ull << p->lk | 1ull << p->cl;
    int src = -1, cur = -1, last = -1, ns = 0;
    for (int j = p->ninv; j < p->nsteps; j++) {
        const Step *s = &p->steps[j];
        const FcInstr *in = s->in;
        if (!s->wide) {
            if ((in->deps & along) || fc_instr_may_fail(in) || fc_op_is_reduce(in->op))
                return;
            continue;
        }
        if (s->memo >= 0 || s->pre || s->skip || s->m != 0 || s->dead || s->nterm || s->sel || s->one || s->rowdefer)
            return;
        if (src < 0) {
            if (in->op != FC_OP_LOAD || in->ngather != 0 || s->per_element || k->bufs[in->buf] == k->out)
                return;
            src = j;
            cur = s->d;
            continue;
        }
        if ((in->op != FC_OP_MUL && in->op != FC_OP_DIV) || in->dtype != FC_FLOAT32 || ns == TSCALE_MAX)
            return;
        bool second = s->b == cur && s->a != cur;
        if (!second && (s->a != cur || s->b == cur))
            return;
        int other = second ? s->a : s->b;
        int w = sole_writer(p, other, j);
        if (w < 0 || p->steps[w].wide || p->steps[w].dead || p->steps[w].in->dtype != FC_FLOAT32)
            return;
        p->scale[ns].buf = other;
        p->scale[ns].div = in->op == FC_OP_DIV;
        p->scale[ns].second = second;
        ns++;
        cur = s->d;
        last = j;
    }
    if (src < 0 || ns == 0 || cur != p->res || sole_writer(p, cur, p->nsteps) != last)
        return;
    const Step *s = &p->steps[src];
    int cl = p->cl;
    if (!((p->ostr[cl] == 1 && s->strides[p->lk] == 1 && llabs(s->strides[cl]) > 1) ||
          (p->ostr[p->lk] == 1 && s->strides[cl] == 1 && llabs(p->ostr[cl]) > 1)))
        return;
    p->tcopy = true;
    p->tchunk = p->ostr[cl] == 1 && p->nchunk > 1;
    p->tsrc = src;
    p->nscale = ns;
}

/* Checks and plans k into *p, which cpu_plan_free frees whatever the result. A kernel with nothing
 * to evaluate is planned as idle. */
FcStatus cpu_plan_kernel(Plan *p, const FcKernel *k, FcError *err)
{
    *p = (Plan){.k = k};
    if (!k || k->nloop < 0 || k->nloop > FC_MAX_DIMS || k->ncode < 0 || k->nreg < 0 || (k->ncode > 0 && !k->code))
        return cpu_errorf(err, FC_ERR_VALUE, "cpu kernel: malformed kernel");
    if ((unsigned)k->out_dtype >= FC_DTYPE__COUNT)
        return cpu_errorf(err, FC_ERR_VALUE, "cpu kernel: bad output dtype");
    p->kp = k->plan;
    if (!p->kp) {
        FcStatus st = fc_kplan_new(k, "cpu", &p->made_plan, err);
        if (st != FC_OK)
            return st;
        p->kp = p->made_plan;
    }
    p->reduce = k->reduce != FC_OP_NONE;
    p->scatter = k->nscatter > 0 || k->accumulate;
    p->out_es = fc_dtype_size(k->out_dtype);
    p->tload = -1;
    p->term = -1;
    if (p->scatter && p->reduce)
        return cpu_errorf(err, FC_ERR_VALUE, "cpu kernel: a scattered or accumulating store cannot reduce");
    FcStatus st = plan_code(p, k, err);
    if (st != FC_OK)
        return st;
    if (p->reduce) {
        if (!fc_op_is_reduce(k->reduce))
            return cpu_errorf(err, FC_ERR_VALUE, "cpu kernel: %s is not a reduction", fc_op_name(k->reduce));
        if (!fc_cpu_reducer_init(&p->r, k->reduce, p->res_dt, k->out_dtype))
            return cpu_errorf(err, FC_ERR_TYPE, "cpu kernel: %s of %s into %s is not supported", fc_op_name(k->reduce),
                          fc_dtype_name(p->res_dt), fc_dtype_name(k->out_dtype));
    } else if (p->res_dt != k->out_dtype) {
        p->store_cast = fc_cpu_op_fn(FC_OP_CAST, k->out_dtype, p->res_dt);
        if (!p->store_cast)
            return cpu_errorf(err, FC_ERR_TYPE, "cpu kernel: cannot store %s as %s", fc_dtype_name(p->res_dt),
                          fc_dtype_name(k->out_dtype));
    }
    st = plan_loops(p, k, err);
    if (st != FC_OK || p->nunits == 0) {
        p->idle = true;
        return st;
    }
    plan_gate(p);
    plan_gate_bounds(p);
    st = plan_memo(p, err);
    if (st == FC_OK)
        st = plan_runs(p, err);
    if (st == FC_OK)
        st = plan_term_units(p, err);
    if (st != FC_OK)
        return st;
    st = plan_index(p, k, err);
    plan_gate_v(p);
    plan_mul_add(p);
    plan_tscale(p);
    plan_tload(p);
    plan_stream(p);
    if (st == FC_OK && p->total == 0 && !p->reduce)
        p->idle = true;
    return st;
}
