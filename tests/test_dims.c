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
#include "tdl.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CASES_FILE "tests/golden/dims/cases.txt"
/* The issue asks for at least 60 programs and this suite for 80 cases; a file that lost cases must
 * not pass quietly. */
#define MIN_CASES 80
#define MAX_WORDS 8

/* ---- the cases file ---- */

typedef struct DCase {
    char *name, *program;
    bool ok;              /* OK: the program runs and prints `text` */
    char *text;           /* OK: the output; ERR: the words, comma-separated (freed with the case) */
    char *kind;           /* ERR: the error kind name */
    const char *words[MAX_WORDS]; /* ERR: the words the message must contain (into text) */
    int nwords;
} DCase;

static DCase *cases;
static int n_cases;
static char load_error[256];

/* Undoes the generator's escapes (\\ \t \n) in place. */
static void unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r == '\\' && r[1]) {
            r++;
            *w++ = *r == 'n' ? '\n' : *r == 't' ? '\t' : *r;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* Parses "name<TAB>program<TAB>expected" into *c; false when the line is malformed. expected is
 * "OK output" or "ERR Kind word,word,..." (no words: "ERR Kind "). */
static bool parse_case(char *line, DCase *c)
{
    char *tab1 = strchr(line, '\t');
    char *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
    if (!tab2 || strchr(tab2 + 1, '\t'))
        return false;
    *tab1 = *tab2 = '\0';
    char *exp = tab2 + 1;
    unescape(tab1 + 1);
    unescape(exp);
    memset(c, 0, sizeof *c);
    if (strncmp(exp, "OK ", 3) == 0) {
        c->ok = true;
        c->text = strdup(exp + 3);
    } else if (strncmp(exp, "ERR ", 4) == 0) {
        char *sp = strchr(exp + 4, ' ');
        if (!sp || sp == exp + 4)
            return false;
        c->kind = strndup(exp + 4, (size_t)(sp - (exp + 4)));
        c->text = strdup(sp + 1);
        for (char *w = c->text; *w;) {
            char *comma = strchr(w, ',');
            if (comma)
                *comma = '\0';
            if (!*w || c->nwords == MAX_WORDS) {
                free(c->kind);
                free(c->text);
                return false;
            }
            c->words[c->nwords++] = w;
            if (!comma)
                break;
            w = comma + 1;
        }
    } else {
        return false;
    }
    c->name = strdup(line);
    c->program = strdup(tab1 + 1);
    return true;
}

static void load_cases(void)
{
    FILE *fp = fopen(CASES_FILE, "r");
    if (!fp) {
        snprintf(load_error, sizeof load_error, "cannot open %s (run from the repository root)", CASES_FILE);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, cap_cases = 0;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        if (n_cases == cap_cases) {
            cap_cases = cap_cases ? 2 * cap_cases : 256;
            cases = realloc(cases, (size_t)cap_cases * sizeof *cases);
        }
        if (!parse_case(line, &cases[n_cases])) {
            snprintf(load_error, sizeof load_error, "%s:%d: malformed case", CASES_FILE, lineno);
            break;
        }
        n_cases++;
    }
    free(line);
    fclose(fp);
}

static void free_cases(void)
{
    for (int k = 0; k < n_cases; k++) {
        free(cases[k].name);
        free(cases[k].program);
        free(cases[k].text);
        free(cases[k].kind);
    }
    free(cases);
    cases = NULL;
    n_cases = 0;
}

/* ---- running a case ---- */

/* What the program prints, however long. */
typedef struct Out { char *buf; size_t n, cap; } Out;

static void capture(void *ud, const char *s, size_t len)
{
    Out *o = ud;
    if (o->n + len + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 1024;
        while (o->n + len + 1 > cap)
            cap *= 2;
        char *p = realloc(o->buf, cap);
        ck_assert_ptr_nonnull(p);
        o->buf = p;
        o->cap = cap;
    }
    memcpy(o->buf + o->n, s, len);
    o->n += len;
    o->buf[o->n] = '\0';
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

/* The first of the case's words that msg lacks, or NULL. */
static const char *missing_word(const DCase *c, const char *msg)
{
    for (int k = 0; k < c->nwords; k++)
        if (!strstr(msg, c->words[k]))
            return c->words[k];
    return NULL;
}

/* One case in a fresh interpreter. The verdict and its report are made before the interpreter is
 * closed (the report quotes its error), so that nothing else is left behind on failure. */
START_TEST(dims_case)
{
    free_report();
    const DCase *c = &cases[_i];
    Out out = {0};
    tdl_config cfg = {0};
    cfg.write = capture;
    cfg.write_ud = &out;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    tdl_status st = tdl_run_string(T, c->program, c->name);
    const char *printed = out.buf ? out.buf : "";
    bool raised = st == TDL_ERROR;
    const char *kind = raised ? tdl_error_kind_name(tdl_error_kind_of(T)) : "";
    const char *msg = raised ? tdl_error_message(T) : "";
    const char *missing = raised ? missing_word(c, msg) : NULL;
    bool pass = c->ok ? st == TDL_OK && strcmp(printed, c->text) == 0
                      : raised && strcmp(kind, c->kind) == 0 && !missing;
    if (!pass) {
        /* what was expected: the output, or the kind and the words */
        char status[48], want[256] = "", lacks[96] = "";
        snprintf(status, sizeof status, "status %d, no error", (int)st);
        if (!c->ok) {
            size_t n = (size_t)snprintf(want, sizeof want, "%s, with the words:", c->kind);
            for (int k = 0; k < c->nwords && n < sizeof want; k++)
                n += (size_t)snprintf(want + n, sizeof want - n, " \"%s\"", c->words[k]);
            if (c->nwords == 0 && n < sizeof want)
                snprintf(want + n, sizeof want - n, " (none)");
            if (missing)
                snprintf(lacks, sizeof lacks, " (lacks \"%s\")", missing);
        }
        if (asprintf(&report, "%s\n--- program:\n%s\n--- expected %s%s\n--- got %s%s%s%s\n--- printed:\n%s", c->name,
                     c->program, c->ok ? "output:\n" : want, c->ok ? c->text : "", raised ? kind : status,
                     raised ? ": " : "", msg, lacks, printed) < 0)
            report = NULL;
    }
    tdl_close(T);
    free(out.buf);
    ck_assert_msg(pass, "case %s", report ? report : c->name);
}
END_TEST

static void teardown(void)
{
    free_report();
    free_cases();
}

Suite *dims_suite(void)
{
    load_cases();
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
