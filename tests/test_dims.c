/* test_dims.c — the first-class dimensions conformance suite: dims and their sizes, indexing with
 * dims (mixed with ints, slices, None, ...), dim packs, diagonals, gathers through int tensors with
 * dims, pointwise ops that broadcast by dim identity, dims as values, reductions, contractions,
 * order/expand/index/stack, printing, and the errors, against functorch.dim (PyTorch 1.13).
 *
 * The cases (tests/golden/dims/cases.txt, written by gen_dims.py with functorch.dim) are small
 * programs with what they print, or the error they raise: for an error, the kind (functorch's
 * exception class name) is compared exactly, and the message must contain each of the case's
 * words (the names of the dims involved, mostly), since tdl words the errors of dims its own way;
 * the generator documents the format and how the words are chosen. Each case runs in a fresh
 * interpreter, so no case sees another's dims. The file is read relative to the repository root,
 * where `make test` runs; torch is not needed here. */
#include "tests.h"
#include "golden_cases.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CASES_FILE "tests/golden/dims/cases.txt"
/* The issue asks for at least 60 programs and this suite for 80 cases; a file that lost cases must
 * not pass quietly. */
#define MIN_CASES 80
#define MAX_WORDS 8

static GoldenCase *cases;
static int n_cases;
static char load_error[256];

/* An error case's text is the words its message must contain, comma-separated (none: ""). Splits
 * a copy into buf; the number of words, or -1 when the list is malformed (an empty word, too many). */
static int split_words(const char *text, char *buf, size_t cap, const char **words)
{
    snprintf(buf, cap, "%s", text);
    int n = 0;
    for (char *w = buf; *w;) {
        char *comma = strchr(w, ',');
        if (comma)
            *comma = '\0';
        if (!*w || n == MAX_WORDS)
            return -1;
        words[n++] = w;
        if (!comma)
            break;
        w = comma + 1;
    }
    return n;
}

/* Every error case's words must parse, or the file is malformed. */
static void check_words(void)
{
    char buf[512];
    const char *words[MAX_WORDS];
    for (int k = 0; k < n_cases && !load_error[0]; k++)
        if (!cases[k].ok && split_words(cases[k].text, buf, sizeof buf, words) < 0)
            snprintf(load_error, sizeof load_error, "%s: case %s: malformed words", CASES_FILE, cases[k].name);
}

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
START_TEST(dims_case)
{
    free_report();
    const GoldenCase *c = &cases[_i];
    char buf[512];
    const char *words[MAX_WORDS];
    int nwords = c->ok ? 0 : split_words(c->text, buf, sizeof buf, words);
    GoldenRun r;
    golden_run(c->program, c->name, &r);
    bool raised = r.status == TDL_ERROR;
    const char *missing = NULL;
    for (int k = 0; raised && k < nwords && !missing; k++)
        if (!strstr(r.msg, words[k])) missing = words[k];
    bool pass = c->ok ? r.status == TDL_OK && golden_same_output(r.printed, c->text)
                      : raised && strcmp(r.kind, c->kind) == 0 && !missing;
    if (!pass) {
        /* what was expected: the output, or the kind and the words */
        char status[48], want[256] = "", lacks[96] = "";
        snprintf(status, sizeof status, "status %d, no error", (int)r.status);
        if (!c->ok) {
            size_t n = (size_t)snprintf(want, sizeof want, "%s, with the words:", c->kind);
            for (int k = 0; k < nwords && n < sizeof want; k++)
                n += (size_t)snprintf(want + n, sizeof want - n, " \"%s\"", words[k]);
            if (nwords == 0 && n < sizeof want)
                snprintf(want + n, sizeof want - n, " (none)");
            if (missing)
                snprintf(lacks, sizeof lacks, " (lacks \"%s\")", missing);
        }
        if (asprintf(&report, "%s\n--- program:\n%s\n--- expected %s%s\n--- got %s%s%s%s\n--- printed:\n%s", c->name,
                     c->program, c->ok ? "output:\n" : want, c->ok ? c->text : "", raised ? r.kind : status,
                     raised ? ": " : "", r.msg, lacks, r.printed) < 0)
            report = NULL;
    }
    golden_run_free(&r);
    ck_assert_msg(pass, "case %s", report ? report : c->name);
}
END_TEST

static void teardown(void)
{
    free_report();
    golden_cases_free(cases, n_cases);
    cases = NULL;
    n_cases = 0;
}

Suite *dims_suite(void)
{
    n_cases = golden_cases_load(CASES_FILE, &cases, load_error, sizeof load_error);
    check_words();
    Suite *s = suite_create("dims");
    TCase *tc = tcase_create("golden");
    tcase_set_timeout(tc, 60);
    tcase_add_unchecked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, cases_load);
    if (load_error[0] == '\0')
        tcase_add_loop_test(tc, dims_case, 0, n_cases);
    suite_add_tcase(s, tc);
    return s;
}
