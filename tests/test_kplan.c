/* test_kplan.c — the kernel plan (fcdim/kplan.c) as the scheduler and the backends share it: the
 * scheduler's analysis of its code is the plan's (one set of functions, no copy to drift), on
 * every kernel that representative programs schedule, seen through FcCtx.on_kernel. */
#include "tdl.h"
#include "tests.h"
#include "watch.h"

#include "backend.h"
#include "interp.h"                 /* an interpreter's FcCtx, for its on_kernel hook */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the hook saw: kernels, and the first disagreement (a message) when there was one. */
typedef struct Seen {
    FcCtx *ctx;
    int kernels, inner;
    char bad[256];
} Seen;

/* Every kernel: the plan the scheduler made is its code's, and the scheduler's own analysis of
 * that code (fc_kplan_domains, what FcInstr.deps shows) gives the plan's deps, loops and lists;
 * a kernel with inner reductions has the vector loop fc_kplan_chunk_loop fixes for it. */
static void agree_on_kernel(void *ud, const FcKernel *k, FcDevice dev)
{
    Seen *s = ud;
    const FcPlan *p = k->plan;
    int n = k->ncode;
    s->kernels++;
    if (s->bad[0])
        return;
    if (!p || p->n != n) {
        snprintf(s->bad, sizeof s->bad, "kernel %d: no plan of its %d instructions", s->kernels, n);
        return;
    }
    uint64_t *deps = malloc((size_t)n * sizeof *deps), *own = malloc((size_t)n * sizeof *own);
    int *list = malloc((size_t)n * sizeof *list);
    ck_assert(deps && own && list);
    fc_kplan_domains(k->code, n, k->nloop, k->extent, k->owner, deps, own, list);
    bool inner = false;
    for (int l = 0; l < k->nloop; l++)
        inner = inner || k->owner[l] >= 0;
    for (int i = 0; i < n && !s->bad[0]; i++)
        if (deps[i] != p->deps[i] || k->code[i].deps != p->deps[i] || own[i] != p->own[i] || list[i] != p->list[i])
            snprintf(s->bad, sizeof s->bad, "kernel %d, instruction %d: deps %#llx / %#llx / plan %#llx, list %d / %d",
                     s->kernels, i, (unsigned long long)deps[i], (unsigned long long)k->code[i].deps,
                     (unsigned long long)p->deps[i], list[i], p->list[i]);
    if (inner && !s->bad[0]) {
        s->inner++;
        FcBackend *be = NULL;
        FcError err;
        ck_assert_int_eq(fc_ctx_backend(s->ctx, dev, &be, &err), FC_OK);
        int cl = fc_kplan_chunk_loop(be->target, k->nloop, k->extent, k->owner, k->nscatter > 0, n, p->deps);
        if (cl != k->chunk_loop)
            snprintf(s->bad, sizeof s->bad, "kernel %d: vector loop %d, the plan's rule gives %d", s->kernels,
                     k->chunk_loop, cl);
    }
    free(deps);
    free(own);
    free(list);
}

static const char *const agree_programs[] = {
    /* softmax: a max and a sum inside the pointwise kernel */
    "x = ((arange(64 * 300.0) * 0.37).sin() * 5).reshape(64, 300)\n"
    "print(x.softmax(1).sum())\n",
    /* a bounded masked sum: the mask goes, the bound stays */
    "x = ((arange(64 * 300.0) * 0.37).sin() * 5).reshape(64, 300)\n"
    "i, j = dims(2)\n"
    "v = x[i, j]\n"
    "e = x[i, 0].abs() * 40\n"
    "print(where(j < e, v, 0).sum(j).order(i).sum())\n",
    /* roi_align's shape: a gather hoisted off c, a bounded sum over samples */
    "feats = ((arange(4 * 16 * 20.0) * 0.13).cos()).reshape(4, 16, 20)\n"
    "b = tensor([0, 3, 1, 2, 3, 0])\n"
    "start = tensor([0.5, 3.2, 7.9, 1.1, 12.4, 5.0])\n"
    "n, c, k = dims(3)\n"
    "k.size = 8\n"
    "cnt = (start[n] * 0.7).ceil()\n"
    "xs = (start[n] + k * 1.3).clamp(max=19.0)\n"
    "xl = xs.floor().long()\n"
    "w = xs - xl\n"
    "val = feats[b[n]][c][xl] * (1 - w) + feats[b[n]][c][(xl + 1).clamp(max=19)] * w\n"
    "print((where(k < cnt, val, 0).sum(k) / cnt.clamp(min=1)).order(n, c).sum())\n",
    /* a scattered accumulation and a plain reduction */
    "z = zeros(10)\n"
    "z.index_put_((tensor([1, 3, 1]),), tensor([1.0, 2.0, 3.0]), accumulate=True)\n"
    "print(z.sum(), arange(100000.0).reshape(10, 10000).sum(1)[:2])\n",
};

/* The scheduler's analysis is the plan's: on every kernel of these programs (with inner
 * reductions, bounds, gathers, scatters) fc_kplan_domains over the final code gives the plan's
 * deps, loops and lists, FcInstr.deps shows the same, and the fixed vector loop is the plan's. */
START_TEST(scheduler_agrees)
{
    Seen s = {0};
    tdl_interp *T = open_watching(agree_on_kernel, &s);
    s.ctx = T->I.fc;
    ck_assert_int_eq(tdl_run_string(T, agree_programs[_i], "<t>"), TDL_OK);
    tdl_close(T);
    ck_assert_msg(!s.bad[0], "%s", s.bad);
    ck_assert_int_gt(s.kernels, 0);
    ck_assert_int_gt(s.inner, _i == 3 ? -1 : 0);
}
END_TEST

/* ---- the fusion pass (fc_kplan_fuse) ---- */

/* A backend that takes every fused instruction, or none. */
static bool takes_all(void *ud, const FcInstr *in)
{
    (void)in;
    return *(const bool *)ud;
}

/* Code over one loop of 8: x = float(i), then where(<cond>, x, 1.0) with cond x > 0.5 (shape 0),
 * 0.5 < x (1), x > 0.5 also read as a value by a second select (2), or 1.0 > 0.5, which does not
 * vary along the select's loop (3). Returns the instruction count; *res the result. */
static int fuse_code(FcInstr *code, int shape, int *res)
{
    memset(code, 0, 8 * sizeof *code);
    for (int i = 0; i < 8; i++) {
        code[i].dst = i;
        code[i].a = code[i].b = code[i].c = -1;
        code[i].dtype = code[i].src_dtype = FC_FLOAT32;
    }
    code[0] = (FcInstr){.op = FC_OP_IOTA, .dtype = FC_INT64, .src_dtype = FC_INT64, .dst = 0, .a = -1, .b = -1, .c = -1};
    code[1].op = FC_OP_CAST;
    code[1].a = 0;
    code[1].src_dtype = FC_INT64;
    code[2].op = FC_OP_CONST;
    code[2].konst.f = 0.5;
    code[3].op = FC_OP_CONST;
    code[3].konst.f = 1.0;
    code[4].op = shape == 1 ? FC_OP_LT : FC_OP_GT;
    code[4].dtype = FC_BOOL;
    code[4].a = shape == 1 ? 2 : shape == 3 ? 3 : 1;
    code[4].b = shape == 1 ? 1 : 2;
    code[5].op = FC_OP_WHERE;
    code[5].a = 4;
    code[5].b = 1;
    code[5].c = 3;
    *res = 5;
    if (shape != 2)
        return 6;
    code[6].op = FC_OP_WHERE;       /* where(cond, x, 1.0) * cond: the comparison read as a value too */
    code[6].dtype = FC_BOOL;
    code[6].a = 4;
    code[6].b = 4;
    code[6].c = 4;
    *res = 6;
    return 7;
}

/* A select whose condition compares with a constant, either way round, becomes one WHERE_CMP
 * (the comparison as its attribute, the constant its konst, a the compared value) when the
 * backend takes it; not when the backend does not, when the comparison is read otherwise, or
 * when the comparison does not vary along the select's loops. */
START_TEST(fuse_where_cmp)
{
    FcInstr code[8];
    int64_t ext[1] = {8};
    int owner[1] = {-1}, res;
    bool yes = true, no = false;
    for (int shape = 0; shape < 4; shape++) {
        int n = fuse_code(code, shape, &res);
        int nf = fc_kplan_fuse(code, n, 1, ext, owner, res, NULL, 0, takes_all, &yes);
        ck_assert_msg(nf == (shape < 2), "shape %d: %d fused", shape, nf);
        if (shape >= 2)
            continue;
        ck_assert_int_eq(code[5].op, FC_OP_WHERE_CMP);
        ck_assert_int_eq(code[5].cmp, FC_OP_GT);    /* 0.5 < x is x > 0.5 */
        ck_assert_int_eq(code[5].a, 1);
        ck_assert_int_eq(code[5].b, 1);
        ck_assert_int_eq(code[5].c, 3);
        ck_assert_int_eq(code[5].src_dtype, FC_FLOAT32);
        ck_assert(code[5].konst.f == 0.5);
        n = fuse_code(code, shape, &res);
        ck_assert_int_eq(fc_kplan_fuse(code, n, 1, ext, owner, res, NULL, 0, takes_all, &no), 0);
        ck_assert_int_eq(code[5].op, FC_OP_WHERE);
    }
}
END_TEST

/* A backend that takes MULADD only with an x (one that cannot run a weighted gather alone). */
static bool takes_with_x(void *ud, const FcInstr *in)
{
    (void)ud;
    return in->op != FC_OP_MULADD || in->a >= 0;
}

/* Code over one loop of 8 (float32): v = float(i), g = a load gathered by i, two taps v * v and
 * g * 2 (a weighted gather), and ((v * v + g * 2) + v * 2) + <last>, where the last term is 2 * 2,
 * which does not vary along the loop (shape 0), or the same v * 2 again, read twice (1).
 * Returns the instruction count; *res the result. */
static int muladd_code(FcInstr *code, int shape, int *res, FcGather *ga)
{
    memset(code, 0, 12 * sizeof *code);
    for (int i = 0; i < 12; i++) {
        code[i].dst = i;
        code[i].a = code[i].b = code[i].c = -1;
        code[i].dtype = code[i].src_dtype = FC_FLOAT32;
    }
    static int64_t strides[1] = {0};
    *ga = (FcGather){.reg = 0, .stride = 1, .extent = 8, .dim = 0};
    code[0] = (FcInstr){.op = FC_OP_IOTA, .dtype = FC_INT64, .src_dtype = FC_INT64, .dst = 0, .a = -1, .b = -1, .c = -1};
    code[1].op = FC_OP_CAST;                /* v */
    code[1].a = 0;
    code[1].src_dtype = FC_INT64;
    code[2].op = FC_OP_CONST;
    code[2].konst.f = 2.0;
    code[3] = (FcInstr){.op = FC_OP_LOAD, .dtype = FC_FLOAT32, .src_dtype = FC_FLOAT32, .dst = 3, .a = -1, .b = -1,
                        .c = -1, .strides = strides, .ngather = 1, .gathers = ga};
    code[4].op = FC_OP_MUL;                 /* v * v */
    code[4].a = code[4].b = 1;
    code[5].op = FC_OP_MUL;                 /* g * 2 */
    code[5].a = 3;
    code[5].b = 2;
    code[6].op = FC_OP_ADD;
    code[6].a = 4;
    code[6].b = 5;
    code[7].op = FC_OP_MUL;                 /* v * 2 */
    code[7].a = 1;
    code[7].b = 2;
    code[8].op = FC_OP_ADD;
    code[8].a = 6;
    code[8].b = 7;
    code[9].op = FC_OP_MUL;
    code[9].a = 2;
    code[9].b = 2;
    code[10].op = FC_OP_ADD;
    code[10].a = 8;
    code[10].b = shape == 0 ? 9 : 7;
    *res = 10;
    return 11;
}

/* A float ADD of a product that only it reads, over the same loops, becomes MULADD(x, w, r), the
 * weighted gather taken as the product first; a weighted gather left over becomes a MULADD with
 * no x, so that the sum of taps is one chain; a product that does not vary along the sum's loops
 * or that is read twice stays a MUL, and a backend that does not take an op keeps the plain ops. */
START_TEST(fuse_muladd)
{
    FcInstr code[12];
    FcGather ga;
    int64_t ext[1] = {8};
    int owner[1] = {-1}, res;
    bool yes = true, no = false;
    int n = muladd_code(code, 0, &res, &ga);
    ck_assert_int_eq(fc_kplan_fuse(code, n, 1, ext, owner, res, NULL, 0, takes_all, &yes), 2);
    /* (v * v + g * 2): the gather is the product, v * v its x */
    ck_assert_int_eq(code[6].op, FC_OP_MULADD);
    ck_assert_int_eq(code[6].a, 4);
    ck_assert_int_eq(code[6].b, 3);
    ck_assert_int_eq(code[6].c, 2);
    ck_assert_int_eq(code[4].op, FC_OP_MUL);        /* its x: no gather */
    ck_assert_int_eq(code[8].op, FC_OP_MULADD);     /* + v * 2 */
    ck_assert_int_eq(code[8].a, 6);
    ck_assert_int_eq(code[8].b, 1);
    ck_assert_int_eq(code[8].c, 2);
    ck_assert_int_eq(code[10].op, FC_OP_ADD);       /* + 2 * 2: not over the sum's loop */
    ck_assert_int_eq(code[9].op, FC_OP_MUL);

    /* v * 2 read by two sums: both stay ADDs, the product a MUL */
    n = muladd_code(code, 1, &res, &ga);
    ck_assert_int_eq(fc_kplan_fuse(code, n, 1, ext, owner, res, NULL, 0, takes_all, &yes), 1);
    ck_assert_int_eq(code[6].op, FC_OP_MULADD);
    ck_assert_int_eq(code[7].op, FC_OP_MUL);
    ck_assert_int_eq(code[8].op, FC_OP_ADD);
    ck_assert_int_eq(code[10].op, FC_OP_ADD);

    /* a weighted gather alone (read by the store): a MULADD with no x, where the backend takes one */
    muladd_code(code, 0, &res, &ga);
    ck_assert_int_eq(fc_kplan_fuse(code, 6, 1, ext, owner, 5, NULL, 0, takes_all, &yes), 1);
    ck_assert_int_eq(code[5].op, FC_OP_MULADD);
    ck_assert_int_eq(code[5].a, -1);
    ck_assert_int_eq(code[5].b, 3);
    ck_assert_int_eq(code[5].c, 2);
    muladd_code(code, 0, &res, &ga);
    ck_assert_int_eq(fc_kplan_fuse(code, 6, 1, ext, owner, 5, NULL, 0, takes_with_x, NULL), 0);
    ck_assert_int_eq(code[5].op, FC_OP_MUL);

    n = muladd_code(code, 0, &res, &ga);
    ck_assert_int_eq(fc_kplan_fuse(code, n, 1, ext, owner, res, NULL, 0, takes_all, &no), 0);
    for (int i = 0; i < n; i++)
        ck_assert_int_ne(code[i].op, FC_OP_MULADD);
}
END_TEST

/* The fused selects of the kernels a program runs: each WHERE_CMP as "<cmp> <const> <dtype>"
 * (a line each), and how many plain WHEREs and comparisons remain. */
typedef struct Fused {
    char text[512];
    int where, compare;
} Fused;

static void fused_on_kernel(void *ud, const FcKernel *k, FcDevice dev)
{
    (void)dev;
    Fused *f = ud;
    for (int i = 0; i < k->ncode; i++) {
        const FcInstr *in = &k->code[i];
        size_t n = strlen(f->text);
        if (in->op == FC_OP_WHERE_CMP)
            snprintf(f->text + n, sizeof f->text - n, "%s %g %s\n", fc_op_name(in->cmp),
                     fc_dtype_is_float(in->src_dtype) ? in->konst.f : (double)in->konst.i, fc_dtype_name(in->src_dtype));
        f->where += in->op == FC_OP_WHERE;
        f->compare += fc_op_is_compare(in->op);
    }
}

static const struct {
    const char *code, *fused;       /* the program; its WHERE_CMPs */
    int where, compare;             /* the plain selects and comparisons left */
} fused_cases[] = {
    /* a comparison with a constant either way round: one op, the comparison gone */
    {"x = (arange(12.0) * 0.37).sin()\nprint(where(x > 0.5, x * 2, x - 1))\n", "gt 0.5 float32\n", 0, 0},
    {"x = (arange(12.0) * 0.37).sin()\nprint(where(0.5 < x, x * 2, x - 1))\n", "gt 0.5 float32\n", 0, 0},
    {"x = arange(12)\nprint(where(x <= 3, x, -x))\n", "le 3 int64\n", 0, 0},
    /* two selects of one comparison: both fuse */
    {"x = (arange(12.0) * 0.37).sin()\nc = x != 0.25\nprint(where(c, x, 1.0) + where(c, 2.0, x))\n",
     "ne 0.25 float32\nne 0.25 float32\n", 0, 0},
    /* the comparison read as a value too, or of two varying values: left as it is */
    {"x = (arange(12.0) * 0.37).sin()\nc = x > 0.5\nprint(where(c, x, 1.0) + c)\n", "", 1, 1},
    {"x = (arange(12.0) * 0.37).sin()\nprint(where(x > x.cos(), x, 1.0))\n", "", 1, 1},
};

/* The fused select is an op of the kernel the CPU runs (the scheduler asks the backend, and the
 * CPU takes it at these dtypes): its comparison, constant and compared dtype in the plan, the
 * comparison no longer an instruction; where the comparison is read otherwise, nothing fuses.
 * The values are those of tests/scripts (where_select_const: PyTorch's). */
START_TEST(where_cmp_in_plan)
{
    Fused f = {0};
    tdl_interp *T = open_watching(fused_on_kernel, &f);
    ck_assert_int_eq(tdl_run_string(T, fused_cases[_i].code, "<t>"), TDL_OK);
    tdl_close(T);
    ck_assert_str_eq(f.text, fused_cases[_i].fused);
    ck_assert_int_eq(f.where, fused_cases[_i].where);
    ck_assert_int_eq(f.compare, fused_cases[_i].compare);
}
END_TEST

Suite *kplan_suite(void)
{
    Suite *s = suite_create("kplan");
    TCase *tc = tcase_create("plan");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, scheduler_agrees, 0, (int)(sizeof agree_programs / sizeof *agree_programs));
    tcase_add_test(tc, fuse_where_cmp);
    tcase_add_test(tc, fuse_muladd);
    tcase_add_loop_test(tc, where_cmp_in_plan, 0, (int)(sizeof fused_cases / sizeof *fused_cases));
    suite_add_tcase(s, tc);
    return s;
}
