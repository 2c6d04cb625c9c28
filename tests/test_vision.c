/* test_vision.c — the stdlib's vision module (stdlib/vision.tdl): roi_align against torchvision.
 *
 * The golden cases (tests/golden/roi_align/cases.txt and its .npy files, written by
 * gen_roi_align.py with torchvision 0.14) cover aligned on and off, adaptive and fixed sampling
 * ratios, spatial scales 1 to 1/16, outputs 1x1 to 14x14, non-square and int output sizes, several
 * images, boxes outside the image, zero-size, inverted and oversized boxes, K = 0, 256 channels,
 * float32 and float64, and the list-of-boxes form; the generator documents them. Each case runs in
 * a fresh interpreter whose module path is the repository's stdlib/: a program loads the inputs,
 * calls vision.roi_align, and the result is read through tdl.h and compared here with torchvision's
 * (read with fcdim's .npy reader) by the generator's rule: |tdl - torch| <= tol * (|torch| +
 * amax|input|) elementwise, tol 1e-5 for float32 and 1e-12 for float64 (each output is a weighted
 * mean of input values, so amax|input| is the size of its terms).
 *
 * Then the mistakes (wrong input rank, boxes not K x 5 or a list of K_i x 4, a batch index out of
 * range, boxes of another dtype than the input, an output_size of three values): each must be a
 * TDL_ERROR of its kind (ValueError for a malformed argument, IndexError for a batch index,
 * TypeError for a dtype) whose message names what is wrong (key words, not the whole text), and
 * the interpreter must still run a golden case afterwards. Files are read relative to the
 * repository root, where `make test` runs; torch is not needed here. */
#include "tests.h"

#include "fcdim.h"
#include "golden_cases.h"
#include "tdl.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DIR "tests/golden/roi_align/"
#define CASES_FILE DIR "cases.txt"
/* The issue asks for at least 40; a file that lost cases must not pass quietly. */
#define MIN_CASES 60

enum { F_NAME, F_DTYPE, F_OSIZE, F_SCALE, F_RATIO, F_ALIGNED, F_INPUT, F_BOXES, F_OUTPUT, F_COUNT };

typedef struct RoiCase {
    char *line;                 /* owns the text the fields point into */
    char *f[F_COUNT];
} RoiCase;

static RoiCase *cases;
static int n_cases;
static char load_error[256];

/* Splits one line of cases.txt at its tabs into c; false when it does not have F_COUNT fields. */
static bool parse_case(char *line, RoiCase *c)
{
    c->line = line;
    char *p = line;
    for (int k = 0; k < F_COUNT; k++) {
        c->f[k] = p;
        char *tab = strchr(p, '\t');
        if ((tab == NULL) != (k == F_COUNT - 1))
            return false;
        if (tab) {
            *tab = '\0';
            p = tab + 1;
        }
    }
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
            cap_cases = cap_cases ? 2 * cap_cases : 64;
            RoiCase *grown = realloc(cases, (size_t)cap_cases * sizeof *cases);
            if (!grown) {
                snprintf(load_error, sizeof load_error, "out of memory reading %s", CASES_FILE);
                break;
            }
            cases = grown;
        }
        char *own = strdup(line);
        if (!own || !parse_case(own, &cases[n_cases])) {
            free(own);
            snprintf(load_error, sizeof load_error, "%s:%d: malformed case", CASES_FILE, lineno);
            break;
        }
        n_cases++;
    }
    free(line);
    fclose(fp);
}

/* The failure report of the last case that failed, kept until the next case or the end (a failed
 * check leaves the test at once, and `make test` runs the suites without forking). */
static char *report;

static void free_report(void)
{
    free(report);
    report = NULL;
}

static void teardown(void)
{
    free_report();
    for (int k = 0; k < n_cases; k++)
        free(cases[k].line);
    free(cases);
    cases = NULL;
    n_cases = 0;
}

START_TEST(cases_load)
{
    ck_assert_msg(load_error[0] == '\0', "%s", load_error);
    ck_assert_msg(n_cases >= MIN_CASES, "%s holds %d cases, fewer than %d", CASES_FILE, n_cases, MIN_CASES);
}
END_TEST

/* ---- running a case ---- */

/* The program of case c: x, b and y = vision.roi_align(x, b, ...) as globals. */
static void case_program(const RoiCase *c, char *prog, size_t cap)
{
    prog[0] = '\0';
    /* On another device (make check-device, check-gpu) the inputs go there and y comes back. */
    const char *dev = golden_device();
    char to[64] = "";
    if (dev)
        snprintf(to, sizeof to, ".to('%s')", dev);
    golden_put(prog, cap, "import vision\nx = load('" DIR "%s')%s\n", c->f[F_INPUT], to);
    const char *boxes = c->f[F_BOXES];
    if (boxes[0] == '[') {
        /* "[a.npy, b.npy]": one load per file */
        golden_put(prog, cap, "b = [");
        const char *p = boxes + 1;
        for (int k = 0; *p && *p != ']'; k++) {
            size_t n = strcspn(p, ",]");
            golden_put(prog, cap, "%sload('" DIR "%.*s')%s", k ? ", " : "", (int)n, p, to);
            p += n;
            if (*p == ',')
                p++;
            while (*p == ' ')
                p++;
        }
        golden_put(prog, cap, "]\n");
    } else {
        golden_put(prog, cap, "b = load('" DIR "%s')%s\n", boxes, to);
    }
    golden_put(prog, cap, "y = vision.roi_align(x, b, %s, spatial_scale=%s, sampling_ratio=%s, aligned=%s)\n",
        c->f[F_OSIZE], c->f[F_SCALE], c->f[F_RATIO], c->f[F_ALIGNED]);
    if (dev)
        golden_put(prog, cap, "assert y.device == x.device, y.device\nx = x.cpu()\ny = y.cpu()\n");
}

/* Global `name` of T as a C-contiguous tensor of dtype dt (*v to free, *info describing it); false,
 * with the error in why, when it cannot be read so. */
static bool read_global(tdl_interp *T, const char *name, tdl_dtype dt, tdl_value **v, tdl_tensor_info *info,
                        char *why, size_t cap)
{
    tdl_value *g = NULL;
    *v = NULL;
    if (tdl_get_global(T, name, &g) != TDL_OK || tdl_tensor_contiguous(T, g, v) != TDL_OK ||
        tdl_tensor_read(T, *v, dt, info) != TDL_OK) {
        snprintf(why, cap, "reading %s: %s: %s", name, tdl_error_kind_name(tdl_error_kind_of(T)), tdl_error_message(T));
        tdl_value_free(g);
        tdl_value_free(*v);
        *v = NULL;
        return false;
    }
    tdl_value_free(g);
    return true;
}

/* Runs case c in T and compares y with torchvision's result. Returns NULL when it agrees, else
 * a malloc'd report. */
static char *run_case(tdl_interp *T, const RoiCase *c)
{
    char prog[4096], why[1024] = "";
    case_program(c, prog, sizeof prog);
    tdl_dtype dt = strcmp(c->f[F_DTYPE], "float32") == 0 ? TDL_DTYPE_FLOAT32 : TDL_DTYPE_FLOAT64;
    double tol = dt == TDL_DTYPE_FLOAT32 ? 1e-5 : 1e-12;
    double worst = 0.0;     /* |a - b| / (|b| + amax|x|) */

    char path[512];
    snprintf(path, sizeof path, DIR "%s", c->f[F_OUTPUT]);
    FcView g;
    FcError ferr;
    if (fc_npy_load(path, &g, &ferr) != FC_OK) {
        char *r = NULL;
        if (asprintf(&r, "%s: %s", c->f[F_NAME], ferr.msg) < 0)
            r = NULL;
        return r;
    }

    tdl_value *xv = NULL, *yv = NULL;
    tdl_tensor_info xi, yi;
    if (tdl_run_string(T, prog, c->f[F_NAME]) != TDL_OK) {
        snprintf(why, sizeof why, "raised %s: %s", tdl_error_kind_name(tdl_error_kind_of(T)), tdl_error_message(T));
    } else if (read_global(T, "x", TDL_DTYPE_ANY, &xv, &xi, why, sizeof why) &&
               read_global(T, "y", dt, &yv, &yi, why, sizeof why)) {
        bool same = yi.ndim == g.ndim && g.dtype == (dt == TDL_DTYPE_FLOAT32 ? FC_FLOAT32 : FC_FLOAT64);
        for (int k = 0; same && k < g.ndim; k++)
            same = yi.shape[k] == g.shape[k];
        if (!same) {
            golden_put(why, sizeof why, "shape (");
            for (int k = 0; k < yi.ndim; k++)
                golden_put(why, sizeof why, "%s%lld", k ? ", " : "", (long long)yi.shape[k]);
            golden_put(why, sizeof why, "), want (");
            for (int k = 0; k < g.ndim; k++)
                golden_put(why, sizeof why, "%s%lld", k ? ", " : "", (long long)g.shape[k]);
            golden_put(why, sizeof why, ")");
        } else {
            double amax = 0.0;
            for (int64_t i = 0; i < xi.numel; i++)
                amax = fmax(amax, fabs(golden_value_at(xi.data, xi.dtype, i)));
            int64_t at = -1;
            for (int64_t i = 0; i < yi.numel; i++) {
                double a = golden_value_at(yi.data, dt, i), b = golden_value_at(g.data, dt, i);
                double e = fabs(a - b) / (fabs(b) + amax);
                if (!(e <= worst)) {    /* NaN counts as worst */
                    worst = isnan(e) ? INFINITY : e;
                    at = i;
                }
            }
            if (worst > tol)
                snprintf(why, sizeof why, "error %.3g (tolerance %.0e) at flat index %lld: tdl %.17g, torchvision %.17g",
                         worst, tol, (long long)at, golden_value_at(yi.data, dt, at), golden_value_at(g.data, dt, at));
        }
    }
    tdl_value_free(xv);
    tdl_value_free(yv);
    free(g.data);
    if (why[0] == '\0')
        return NULL;
    char *r = NULL;
    if (asprintf(&r, "%s: %s\n--- program:\n%s", c->f[F_NAME], why, prog) < 0)
        r = NULL;
    return r;
}

static void check_case(int i, int flags)
{
    free_report();
    tdl_interp *T = golden_open(flags);
    ck_assert_ptr_nonnull(T);
    report = run_case(T, &cases[i]);
    tdl_close(T);
    ck_assert_msg(report == NULL, "case %s%s", flags ? "(scheduler passes off) " : "", report ? report : "");
}

START_TEST(roi_case)
{
    check_case(_i, 0);
}
END_TEST

/* The same with the scheduler's fusion, hoisting and data-dependent bounds off (--no-opt): the
 * same results, and no sample that the masks leave out may fail when it is computed anyway (an
 * empty adaptive grid divides by zero: its taps must still be valid indices). */
START_TEST(roi_case_no_opt)
{
    check_case(_i, TDL_NO_FUSE | TDL_NO_HOIST | TDL_NO_BOUNDS);
}
END_TEST

/* ---- mistakes ---- */

typedef struct ErrCase {
    const char *name;
    const char *code;           /* after `import vision`; it must fail, at the call or when y is used */
    const char *kind;
    const char *words[3];       /* what its message must contain (case-insensitive) */
} ErrCase;

#define BOX "tensor([[0., 1., 1., 5., 5.]])"
static const ErrCase err_cases[] = {
    {"input_rank_3", "x = randn(3, 8, 8, seed=1)\ny = vision.roi_align(x, " BOX ", (2, 2))",
     "ValueError", {"input", "4"}},
    {"input_rank_5", "x = randn(1, 1, 3, 8, 8, seed=1)\ny = vision.roi_align(x, " BOX ", (2, 2))",
     "ValueError", {"input", "4"}},
    {"boxes_kx4", "x = randn(1, 3, 8, 8, seed=1)\ny = vision.roi_align(x, tensor([[1., 1., 5., 5.]]), (2, 2))",
     "ValueError", {"boxes", "5"}},
    {"boxes_1d", "x = randn(1, 3, 8, 8, seed=1)\ny = vision.roi_align(x, tensor([0., 1., 1., 5., 5.]), (2, 2))",
     "ValueError", {"boxes", "5"}},
    {"boxes_list_kx5", "x = randn(1, 3, 8, 8, seed=1)\ny = vision.roi_align(x, [" BOX "], (2, 2))",
     "ValueError", {"boxes", "4"}},
    {"batch_index_high", "x = randn(2, 3, 8, 8, seed=1)\n"
                         "y = vision.roi_align(x, tensor([[2., 1., 1., 5., 5.]]), (2, 2))\ns = y.sum().item()",
     "IndexError", {"index 2 is out of bounds", "size 2"}},
    {"batch_index_negative", "x = randn(2, 3, 8, 8, seed=1)\n"
                             "y = vision.roi_align(x, tensor([[-1., 1., 1., 5., 5.]]), (2, 2))\ns = y.sum().item()",
     "IndexError", {"index -3 is out of bounds", "size 2"}},
    {"dtype_mismatch", "x = randn(1, 3, 8, 8, seed=1)\n"
                       "y = vision.roi_align(x, " BOX ".double(), (2, 2))\ns = y.sum().item()",
     "TypeError", {"float32", "float64"}},
    {"output_size_3", "x = randn(1, 3, 8, 8, seed=1)\ny = vision.roi_align(x, " BOX ", (2, 2, 2))",
     "ValueError", {"output_size"}},
};
#define N_ERR_CASES (int)(sizeof err_cases / sizeof err_cases[0])

static bool has_word(const char *msg, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = msg; *p; p++)
        if (strncasecmp(p, word, n) == 0)
            return true;
    return false;
}

/* The mistake must raise its kind with its words; then the interpreter runs the first
 * golden case as if nothing had happened. */
START_TEST(roi_error)
{
    free_report();
    const ErrCase *e = &err_cases[_i];
    char prog[1024];
    snprintf(prog, sizeof prog, "import vision\n%s\n", e->code);
    tdl_interp *T = golden_open(0);
    ck_assert_ptr_nonnull(T);
    tdl_status st = tdl_run_string(T, prog, e->name);
    const char *kind = tdl_error_kind_name(tdl_error_kind_of(T)), *msg = tdl_error_message(T);
    bool pass = st == TDL_ERROR && strcmp(kind, e->kind) == 0;
    for (int k = 0; pass && k < 3 && e->words[k]; k++)
        pass = has_word(msg, e->words[k]);
    if (!pass) {
        if (asprintf(&report, "%s: want %s with \"%s\" \"%s\"; got status %d, %s: %s\n--- program:\n%s", e->name,
                     e->kind, e->words[0], e->words[1] ? e->words[1] : "", (int)st, st == TDL_ERROR ? kind : "-",
                     st == TDL_ERROR ? msg : "", prog) < 0)
            report = NULL;
    } else if (n_cases > 0) {
        char *after = run_case(T, &cases[0]);
        if (after) {
            if (asprintf(&report, "%s: after the error, %s", e->name, after) < 0)
                report = NULL;
            free(after);
        }
    }
    tdl_close(T);
    ck_assert_msg(report == NULL, "%s", report ? report : "");
}
END_TEST

Suite *vision_suite(void)
{
    load_cases();
    Suite *s = suite_create("vision");
    TCase *tc = tcase_create("roi_align");
    tcase_set_timeout(tc, 60);
    tcase_add_unchecked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, cases_load);
    if (load_error[0] == '\0') {
        tcase_add_loop_test(tc, roi_case, 0, n_cases);
        tcase_add_loop_test(tc, roi_case_no_opt, 0, n_cases);
    }
    tcase_add_loop_test(tc, roi_error, 0, N_ERR_CASES);
    suite_add_tcase(s, tc);
    return s;
}
