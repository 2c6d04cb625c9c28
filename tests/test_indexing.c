/* test_indexing.c — the indexing conformance suite: tensor subscripts (reads and writes, every
 * index kind, ranks 0 to 4, five dtypes, non-contiguous bases), index_put_, index_select, gather
 * and scatter_add, and their errors, against PyTorch 1.13.
 *
 * The cases (tests/golden/indexing/cases.txt, written by gen_indexing.py with torch) are small
 * programs with what they print or the error they raise (kind and exact message); the generator
 * documents the format and the few places where tdl deliberately differs from torch. Each case
 * runs in a fresh interpreter, so no case sees another's variables. The file is read relative to
 * the repository root, where `make test` runs; torch is not needed here. */
#include "tests.h"
#include "golden_cases.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CASES_FILE "tests/golden/indexing/cases.txt"
/* The issue asks for at least 200; a file that lost cases must not pass quietly. */
#define MIN_CASES 250

static GoldenCase *cases;
static int n_cases;
static char load_error[256];

START_TEST(cases_load)
{
    ck_assert_msg(load_error[0] == '\0', "%s", load_error);
    ck_assert_msg(n_cases >= MIN_CASES, "%s holds %d cases, fewer than %d", CASES_FILE, n_cases, MIN_CASES);
}
END_TEST

/* The failure report of the last case that failed: kept until the next case or the end (a failed
 * check leaves the test at once, and `make test` runs the suites without forking). */
static char *report;

static void free_report(void)
{
    free(report);
    report = NULL;
}

/* One case in a fresh interpreter. The verdict and its report are made before the interpreter is
 * closed (the report quotes its error), so that nothing else is left behind on failure. */
START_TEST(indexing_case)
{
    free_report();
    const GoldenCase *c = &cases[_i];
    GoldenRun r;
    golden_run(c->program, c->name, &r);
    bool raised = r.status == TDL_ERROR;
    bool pass = c->ok ? r.status == TDL_OK && golden_same_output(r.printed, c->text)
                      : raised && strcmp(r.kind, c->kind) == 0 && golden_same_output(r.msg, c->text);
    if (!pass) {
        char status[48];
        snprintf(status, sizeof status, "status %d, no error", (int)r.status);
        if (asprintf(&report, "%s\n--- program:\n%s\n--- expected %s%s%s\n--- got %s%s%s\n--- printed:\n%s", c->name,
                     c->program, c->ok ? "output:\n" : c->kind, c->ok ? "" : ": ", c->text, raised ? r.kind : status,
                     raised ? ": " : "", r.msg, r.printed) < 0)
            report = NULL;
    }
    golden_run_free(&r);
    ck_assert_msg(pass, "case %s", report ? report : c->name);
}
END_TEST

/* ---- random index expressions: never a crash, never a read out of bounds ---- */

static uint64_t rng_state;

static int rnd(int n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng_state >> 33) % (uint64_t)n);
}

static void put(char *b, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *b, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(b);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + n, cap - n, fmt, ap);
    va_end(ap);
}

/* One random index item: ints, slices (negative steps too), None, ..., bools, index tensors and
 * lists with values around the sizes (out of range too), bool masks of random shapes. */
static void random_item(char *b, size_t cap)
{
    switch (rnd(9)) {
    case 0: put(b, cap, "%d", rnd(13) - 6); break;
    case 1: {
        static const char *const steps[] = {"", ":2", ":3", ":-1", ":-2"};
        char lo[8] = "", hi[8] = "";
        if (rnd(2)) snprintf(lo, sizeof lo, "%d", rnd(15) - 7);
        if (rnd(2)) snprintf(hi, sizeof hi, "%d", rnd(15) - 7);
        put(b, cap, "%s:%s%s", lo, hi, steps[rnd(5)]);
        break;
    }
    case 2: put(b, cap, "None"); break;
    case 3: put(b, cap, "..."); break;
    case 4: put(b, cap, rnd(2) ? "True" : "False"); break;
    case 5: case 6: {
        char items[64] = "";
        int n = rnd(4);
        for (int k = 0; k < n; k++) put(items, sizeof items, "%s%d", k ? ", " : "", rnd(15) - 7);
        put(b, cap, rnd(2) ? "tensor([%s], dtype=int64)" : "[%s]", items);
        break;
    }
    case 7: put(b, cap, "tensor(%d)", rnd(9) - 4); break;
    default: {
        int n = 1 + rnd(4);
        put(b, cap, "tensor([");
        for (int k = 0; k < n; k++) put(b, cap, "%s%s", k ? ", " : "", rnd(2) ? "True" : "False");
        put(b, cap, "])");
        break;
    }
    }
}

/* Reads and writes with random indices on random bases of rank 0 to 4 (contiguous, transposed,
 * stepped): each must succeed or raise one of indexing's error kinds; under AddressSanitizer
 * (make check) a read or write out of bounds fails the test. */
START_TEST(random_indices)
{
    static const char *const bases[] = {
        "x = tensor(5.)", "x = arange(5)", "x = arange(12.).reshape(3, 4)", "x = arange(12).reshape(3, 4).t()",
        "x = arange(24.).reshape(2, 3, 4)[:, ::2]", "x = arange(48).reshape(2, 3, 2, 4).permute(3, 1, 0, 2)",
        "x = (arange(6) > 2).reshape(2, 3)",
    };
    static const char *const kinds[] = {"IndexError", "TypeError", "ValueError", "RuntimeError"};
    rng_state = 12345;
    int ok = 0, failed = 0;
    tdl_interp *T = tdl_open(NULL);
    ck_assert_ptr_nonnull(T);
    for (int iter = 0; iter < 3000; iter++) {
        char prog[1024] = "";
        put(prog, sizeof prog, "%s\n", bases[rnd(7)]);
        char ix[512] = "";
        int n = rnd(5);
        for (int k = 0; k < n; k++) {
            if (k) put(ix, sizeof ix, ", ");
            random_item(ix, sizeof ix);
        }
        if (n == 0) random_item(ix, sizeof ix);
        switch (rnd(4)) {
        case 0: put(prog, sizeof prog, "x[%s] = 7", ix); break;
        case 1: put(prog, sizeof prog, "x[%s] = x[%s]", ix, ix); break;
        case 2: put(prog, sizeof prog, "x.index_put_((tensor([%d]),), tensor(1).to(x.dtype), accumulate=True)\n"
                                       "y = x[%s].sum()", rnd(11) - 5, ix); break;
        default: put(prog, sizeof prog, "y = (x[%s] * 2).tolist()", ix); break;
        }
        tdl_status st = tdl_run_string(T, prog, "<random>");
        if (st == TDL_OK) {
            ok++;
            continue;
        }
        ck_assert_msg(st == TDL_ERROR, "%s: status %d", prog, (int)st);
        const char *kind = tdl_error_kind_name(tdl_error_kind_of(T));
        bool known = false;
        for (int k = 0; k < 4; k++)
            known |= strcmp(kind, kinds[k]) == 0;
        ck_assert_msg(known && tdl_error_message(T)[0], "%s: %s: %s", prog, kind, tdl_error_message(T));
        failed++;
    }
    tdl_close(T);
    /* The generator must reach both outcomes often, or it tests little. */
    ck_assert_msg(ok > 600 && failed > 600, "%d succeeded, %d failed", ok, failed);
}
END_TEST

static void teardown(void)
{
    free_report();
    golden_cases_free(cases, n_cases);
    cases = NULL;
    n_cases = 0;
}

Suite *indexing_suite(void)
{
    n_cases = golden_cases_load(CASES_FILE, &cases, load_error, sizeof load_error);
    Suite *s = suite_create("indexing");
    TCase *tc = tcase_create("golden");
    tcase_set_timeout(tc, 60);
    tcase_add_unchecked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, cases_load);
    if (load_error[0] == '\0')
        tcase_add_loop_test(tc, indexing_case, 0, n_cases);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("random");
    tcase_set_timeout(tr, 120);
    tcase_add_test(tr, random_indices);
    suite_add_tcase(s, tr);
    return s;
}
