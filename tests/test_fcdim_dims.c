/* test_fcdim_dims.c — the machinery under first-class dims (fcdim/dims.c, interp/dims.c), through
 * the public API: what moves data and what does not (binding dims relabels, a gather through a
 * tensor carrying dims and the math after it are one kernel), contractions giving matmul's bits,
 * the cases where tdl is saner than functorch.dim (positional levels out of order), and that a
 * failed statement leaves dims and the interpreter usable. Values against functorch.dim itself
 * are the conformance suite's (test_dims.c). */
#include "tests.h"
#include "capture.h"
#include "tdl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A dump callback: counts the kernels run (each dump starts with "kernel:"). */
static void count_kernels(void *ud, const char *s, size_t len)
{
    if (len >= 7 && strncmp(s, "kernel:", 7) == 0) ++*(int *)ud;
}

static Out out;
static int kernels;
static tdl_interp *T;

static void setup(void)
{
    memset(&out, 0, sizeof out);
    kernels = 0;
    tdl_config cfg = {0};
    cfg.write = capture;
    cfg.write_ud = &out;
    cfg.flags = TDL_DUMP_KERNELS;
    cfg.dump = count_kernels;
    cfg.dump_ud = &kernels;
    T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
}

static void teardown(void)
{
    tdl_close(T);
    T = NULL;
}

static void run(const char *code)
{
    tdl_status st = tdl_run_string(T, code, "<test>");
    ck_assert_msg(st == TDL_OK, "%s\n%s", code, tdl_error_message(T));
}

static void expect_out(const char *code, const char *want)
{
    out.n = 0;
    out.buf[0] = '\0';
    run(code);
    ck_assert_str_eq(out.buf, want);
}

/* Binding dims, order and expand move no data: nothing runs until the value is printed. */
START_TEST(test_binding_runs_nothing)
{
    run("A = arange(12.).reshape(3, 4)\nprint(A.sum())\ni, j, d, e = dims(4)\nd.size = 2");
    kernels = 0;
    run("B = A[i, j]\nC = B.order(j)\nD = A[i].expand(d)\nE = (A * 2)[i]\nF = E.order(i)\nG = A[:, (d, e)]");
    ck_assert_int_eq(kernels, 0);
    expect_out("print(F.order(0).sum(), j.size, e.size, G.dims)", "tensor(132.) 4 2 (d, e)\n");
}
END_TEST

/* A gather by a tensor carrying a dim, the dim binding after it and the math: one kernel. */
START_TEST(test_gather_with_dims_is_one_kernel)
{
    run("x = arange(24.).reshape(2, 3, 4)\nidx = tensor([1, 0, 1])\nprint(idx.sum())\nn, c = dims(2)");
    kernels = 0;
    expect_out("print(((x[idx[n]][c] * 2 + 1).sum(c)).order(n))",
               "tensor([[ 99., 105., 111., 117.],\n        [ 27.,  33.,  39.,  45.],\n"
               "        [ 99., 105., 111., 117.]])\n");
    ck_assert_int_eq(kernels, 1);
}
END_TEST

/* (A[i, k] * B[k, j]).sum(k) is A @ B, to the bit, with and without batch dims. */
START_TEST(test_contraction_is_matmul)
{
    run("A = rand(37, 53, seed=1)\nB = rand(53, 41, seed=2)\ni, j, k, b = dims(4)\n"
        "C = (A[i, k] * B[k, j]).sum(k).order(i, j)\nP = A @ B\n"
        "X = rand(3, 37, 53, seed=3)\nY = rand(3, 53, 41, seed=4)\n"
        "Z = (X[b, i, k] * Y[b, k, j]).sum(k).order(b, i, j)\nQ = X @ Y");
    expect_out("print(C.shape, bool((C == P).all()), Z.shape, bool((Z == Q).all()))", "(37, 41) True (3, 37, 41) True\n");
    /* an outer product stays pointwise (nothing summed) */
    expect_out("print((A[i, 0] * B[0, j]).order(i, j).shape)", "(37, 41)\n");
}
END_TEST

/* x + T[i] with x of lower rank: functorch.dim fails an internal assert; tdl aligns the
 * positional dims from the right as broadcasting does. */
START_TEST(test_positional_levels_out_of_order)
{
    run("i = dims()\nx = arange(4.)\nT = arange(60.).reshape(3, 5, 4)");
    expect_out("r = x + T[i]\nprint(r.shape, r.dims, bool((r.order(i) == x + T).all()))", "(5, 4) (i,) True\n");
}
END_TEST

/* A failed binding changes nothing: the dim keeps its size, the interpreter goes on. */
START_TEST(test_errors_leave_dims_usable)
{
    run("i, j = dims(2)\nA = arange(12.).reshape(3, 4)\nx = A[i]");
    ck_assert_int_eq(tdl_run_string(T, "y = arange(5.)[i]", "<test>"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_DIMENSION_BIND);
    ck_assert_ptr_nonnull(strstr(tdl_error_message(T), "'i'"));
    ck_assert_ptr_nonnull(strstr(tdl_error_message(T), "size 3"));
    ck_assert_ptr_nonnull(strstr(tdl_error_message(T), "size 5"));
    ck_assert_int_eq(tdl_run_string(T, "p, q = dims(2)\nA[:, (p, q)]", "<test>"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_DIMENSION_BIND);
    ck_assert_int_eq(tdl_run_string(T, "A[i].sum(j)", "<test>"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_VALUE);
    ck_assert_int_eq(tdl_run_string(T, "if A[i].sum() > 0:\n    pass", "<test>"), TDL_ERROR);
    ck_assert_ptr_nonnull(strstr(tdl_error_message(T), "where("));
    expect_out("print(i.size, j.is_bound, A[i, j].order(j, i).shape)", "3 False (4, 3)\n");
}
END_TEST

/* Operators that are not pointwise run batched over the dims (functorch's vmap fallback). */
START_TEST(test_batched_rows)
{
    run("i = dims()\nA = arange(24.).reshape(2, 3, 4)\nv = arange(4.)\nM = arange(12.).reshape(4, 3)");
    expect_out("print(A[i].reshape(12).order(i).shape, A[i].t().order(i).shape, A[i].T.order(i).shape)",
               "(2, 12) (2, 4, 3) (2, 4, 3)\n");
    expect_out("print(bool((A[i].transpose(0, 1).order(i) == A.transpose(1, 2)).all()))", "True\n");
    expect_out("print(bool(((A[i] @ v).order(i) == A @ v).all()), bool(((v @ M) + A[i, 0, 0]).order(i).shape == (2, 3)))",
               "True True\n");
    expect_out("print(bool(((A[i, 0] @ M).order(i) == A[:, 0] @ M).all()))", "True\n");
    expect_out("print(A[i].shape, A[i].size(1), A[i].numel(), A[i].dim(), A[i].flatten().order(i).shape)",
               "(3, 4) 4 12 2 (2, 12)\n");
    expect_out("print(cat([A[i], A[i]], 1).order(i).shape, A[i].unsqueeze(0).order(i).shape)", "(2, 3, 8) (2, 1, 3, 4)\n");
}
END_TEST

Suite *fcdim_dims_suite(void)
{
    Suite *s = suite_create("fcdim_dims");
    TCase *tc = tcase_create("dims");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_binding_runs_nothing);
    tcase_add_test(tc, test_gather_with_dims_is_one_kernel);
    tcase_add_test(tc, test_contraction_is_matmul);
    tcase_add_test(tc, test_positional_levels_out_of_order);
    tcase_add_test(tc, test_errors_leave_dims_usable);
    tcase_add_test(tc, test_batched_rows);
    suite_add_tcase(s, tc);
    return s;
}
