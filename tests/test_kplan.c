/* test_kplan.c — the kernel plan (fcdim/kplan.c) as the scheduler and the backends share it: the
 * scheduler's analysis of its code is the plan's (one set of functions, no copy to drift), on
 * every kernel that representative programs schedule, seen through FcCtx.on_kernel. */
#include "tdl.h"
#include "tests.h"

#include "backend.h"
#include "interp.h"                 /* an interpreter's FcCtx, for its on_kernel hook */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sink(void *ud, const char *text, size_t len)
{
    (void)ud;
    (void)text;
    (void)len;
}

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
    tdl_config cfg = {0};
    cfg.write = sink;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    s.ctx = T->I.fc;
    T->I.fc->on_kernel = agree_on_kernel;
    T->I.fc->on_kernel_ud = &s;
    ck_assert_int_eq(tdl_run_string(T, agree_programs[_i], "<t>"), TDL_OK);
    tdl_close(T);
    ck_assert_msg(!s.bad[0], "%s", s.bad);
    ck_assert_int_gt(s.kernels, 0);
    ck_assert_int_gt(s.inner, _i == 3 ? -1 : 0);
}
END_TEST

Suite *kplan_suite(void)
{
    Suite *s = suite_create("kplan");
    TCase *tc = tcase_create("plan");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, scheduler_agrees, 0, (int)(sizeof agree_programs / sizeof *agree_programs));
    suite_add_tcase(s, tc);
    return s;
}
