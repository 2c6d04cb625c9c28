/* test_fcdim_print.c — fc_format_tensor against PyTorch 1.13's repr(tensor), and its edge cases.
 *
 * The golden cases (tests/golden/fcdim_print/cases.txt, written by gen_fcdim_print.py with torch)
 * give raw element bytes, a view over them (shape, strides that may be zero or negative, offset)
 * and the exact text torch prints for the same logical tensor. Each case is checked as given, and
 * again after copying its elements into a different physical layout (reversed, column-major,
 * with gaps), which must not change the text. Torch is not needed to run these tests; the file is
 * read relative to the repository root, where `make test` runs. */
#include "tests.h"

#include "fcdim.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_PATH "tests/golden/fcdim_print/cases.txt"

typedef struct GoldenCase {
    char *name;
    FcDType dtype;
    int ndim;
    int64_t shape[FC_MAX_DIMS];
    int64_t strides[FC_MAX_DIMS];
    int64_t offset;
    unsigned char *storage;     /* shared with the previous case when the file says "=" */
    size_t storage_len;
    char *device;               /* NULL for cpu */
    char *expected;
} GoldenCase;

/* Loaded once by the suite function; lives until the process exits. */
static GoldenCase *golden;
static int n_golden;
static char golden_error[256];

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* "2,3" or "-" (no dimensions) into out; returns the count or -1. */
static int parse_dims(const char *s, int64_t *out)
{
    if (strcmp(s, "-") == 0)
        return 0;
    int n = 0;
    while (*s) {
        char *end;
        if (n == FC_MAX_DIMS)
            return -1;
        out[n++] = strtoll(s, &end, 10);
        if (end == s)
            return -1;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return n;
}

/* Splits line at tabs into at most max fields (in place); returns the count. */
static int split_tabs(char *line, char **fields, int max)
{
    int n = 0;
    fields[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') {
            *p = '\0';
            fields[n++] = p + 1;
        }
    return n;
}

/* "\n" (two characters) back into a newline, in place. */
static void unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] == 'n') {
            *w++ = '\n';
            r++;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

static bool parse_case(char *line, GoldenCase *c, const GoldenCase *prev)
{
    char *f[8];
    if (split_tabs(line, f, 8) != 8)
        return false;
    memset(c, 0, sizeof *c);
    c->name = strdup(f[0]);
    if (!fc_dtype_from_name(f[1], &c->dtype))
        return false;
    if (strcmp(f[2], "=") == 0) {
        if (!prev)
            return false;
        c->storage = prev->storage;
        c->storage_len = prev->storage_len;
    } else if (strcmp(f[2], "-") != 0) {
        size_t n = strlen(f[2]);
        if (n % 2)
            return false;
        c->storage_len = n / 2;
        c->storage = malloc(c->storage_len);
        for (size_t i = 0; i < c->storage_len; i++) {
            int hi = hexval(f[2][2 * i]), lo = hexval(f[2][2 * i + 1]);
            if (hi < 0 || lo < 0)
                return false;
            c->storage[i] = (unsigned char)(hi * 16 + lo);
        }
    }
    c->ndim = parse_dims(f[3], c->shape);
    if (c->ndim < 0 || parse_dims(f[4], c->strides) != c->ndim)
        return false;
    c->offset = strtoll(f[5], NULL, 10);
    c->device = strcmp(f[6], "-") == 0 ? NULL : strdup(f[6]);
    unescape(f[7]);
    c->expected = strdup(f[7]);
    return true;
}

static void load_golden(void)
{
    FILE *fp = fopen(GOLDEN_PATH, "r");
    if (!fp) {
        snprintf(golden_error, sizeof golden_error,
                 "cannot open %s (run the tests from the repository root)", GOLDEN_PATH);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, alloc = 0;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        if (n_golden == alloc) {
            alloc = alloc ? 2 * alloc : 256;
            golden = realloc(golden, (size_t)alloc * sizeof *golden);
        }
        if (!parse_case(line, &golden[n_golden], n_golden ? &golden[n_golden - 1] : NULL)) {
            snprintf(golden_error, sizeof golden_error, "%s:%d: malformed case", GOLDEN_PATH,
                     lineno);
            break;
        }
        n_golden++;
    }
    free(line);
    fclose(fp);
}

static FcView case_view(const GoldenCase *c)
{
    FcView v;
    memset(&v, 0, sizeof v);
    v.dtype = c->dtype;
    v.ndim = c->ndim;
    memcpy(v.shape, c->shape, sizeof v.shape);
    memcpy(v.strides, c->strides, sizeof v.strides);
    v.offset = c->offset;
    v.data = c->storage;
    return v;
}

/* The repr of v, or a description of the failure (caller frees either). */
static char *format(const FcView *v, const char *device)
{
    char *out = NULL;
    FcError err;
    FcStatus st = fc_format_tensor(v, device, &out, &err);
    if (st != FC_OK) {
        ck_assert_ptr_null(out);
        char *msg = malloc(sizeof err.msg + 32);
        snprintf(msg, sizeof err.msg + 32, "<status %d: %s>", (int)st, err.msg);
        return msg;
    }
    return out;
}

static void check_case(int i, const char *how, const FcView *v)
{
    const GoldenCase *c = &golden[i];
    char *got = format(v, c->device);
    ck_assert_msg(strcmp(got, c->expected) == 0, "case %d (%s)%s:\nexpected:\n%s\ngot:\n%s", i,
                  c->name, how, c->expected, got);
    free(got);
}

START_TEST(golden_file_loads)
{
    ck_assert_msg(golden_error[0] == '\0', "%s", golden_error);
    ck_assert_int_ge(n_golden, 150);
}
END_TEST

START_TEST(golden_cases)
{
    FcView v = case_view(&golden[_i]);
    check_case(_i, "", &v);
}
END_TEST

/* Copies the logical elements of the case into a fresh buffer whose layout reverses every other
 * dimension (negative strides), orders the dimensions column-major and leaves a one-element gap
 * after each innermost run: the printed text must be the same. */
START_TEST(golden_cases_relaid)
{
    const GoldenCase *c = &golden[_i];
    FcView src = case_view(c);
    size_t esize = fc_dtype_size(c->dtype);
    int64_t numel = 1;
    for (int d = 0; d < c->ndim; d++)
        numel *= c->shape[d];
    if (numel > 100000)
        return;     /* the zero-stride million-by-million case: nothing to re-lay */

    FcView dst = src;
    int64_t span = 1;
    for (int d = 0; d < c->ndim; d++) {     /* column-major: dimension 0 varies fastest */
        dst.strides[d] = span;
        span *= c->shape[d] + (d == 0 ? 1 : 0);
    }
    dst.offset = 0;
    for (int d = 0; d < c->ndim; d += 2)
        if (c->shape[d] > 0) {
            dst.offset += (c->shape[d] - 1) * dst.strides[d];
            dst.strides[d] = -dst.strides[d];
        }
    unsigned char *buf = calloc((size_t)(span > 0 ? span : 1), esize);
    dst.data = buf;

    int64_t idx[FC_MAX_DIMS] = {0};
    for (int64_t k = 0; k < numel; k++) {
        int64_t so = src.offset, dof = dst.offset;
        for (int d = 0; d < c->ndim; d++) {
            so += idx[d] * src.strides[d];
            dof += idx[d] * dst.strides[d];
        }
        memcpy(buf + dof * (int64_t)esize, c->storage + so * (int64_t)esize, esize);
        for (int d = c->ndim - 1; d >= 0; d--) {
            if (++idx[d] < c->shape[d])
                break;
            idx[d] = 0;
        }
    }
    check_case(_i, " re-laid out", &dst);
    free(buf);
}
END_TEST

/* ---- named edge cases ---- */

static FcView make_view(FcDType t, void *data, int ndim, const int64_t *shape)
{
    FcView v;
    memset(&v, 0, sizeof v);
    v.dtype = t;
    v.ndim = ndim;
    if (ndim > 0)
        memcpy(v.shape, shape, (size_t)ndim * sizeof *shape);
    fc_contiguous_strides(ndim, shape, v.strides);
    v.data = data;
    return v;
}

static void assert_repr(const FcView *v, const char *device, const char *want)
{
    char *got = format(v, device);
    ck_assert_str_eq(got, want);
    free(got);
}

START_TEST(scalar_and_suffixes)
{
    float f = 3.0f;
    int32_t i = -7;
    FcView v = make_view(FC_FLOAT32, &f, 0, NULL);
    assert_repr(&v, NULL, "tensor(3.)");
    assert_repr(&v, "cuda:1", "tensor(3., device='cuda:1')");
    v = make_view(FC_INT32, &i, 0, NULL);
    assert_repr(&v, "cuda:0", "tensor(-7, device='cuda:0', dtype=int32)");
}
END_TEST

/* Long device names move the dtype, then the device too, to lines of their own. The dtype is
 * placed as torch places "dtype=torch.float64": in the first case "dtype=float64" would still
 * have fitted. Expected texts: torch._tensor_str._add_suffixes on the same suffixes. */
START_TEST(long_suffix_wraps)
{
    double d[2] = {1.5, -2.0};
    FcView v = make_view(FC_FLOAT64, d, 1, (int64_t[]){2});
    assert_repr(&v, "cuda:01234567890123456789",
                "tensor([ 1.5000, -2.0000], device='cuda:01234567890123456789',\n"
                "       dtype=float64)");
    assert_repr(&v, "cuda:0123456789012345678901234567890123456789",
                "tensor([ 1.5000, -2.0000],\n"
                "       device='cuda:0123456789012345678901234567890123456789',\n"
                "       dtype=float64)");
}
END_TEST

START_TEST(bool_bytes_other_than_one)
{
    unsigned char b[3] = {0, 2, 255};
    FcView v = make_view(FC_BOOL, b, 1, (int64_t[]){3});
    assert_repr(&v, NULL, "tensor([False,  True,  True])");
}
END_TEST

START_TEST(empty_sizes)
{
    FcView v = make_view(FC_INT64, NULL, 3, (int64_t[]){4, 0, 2});
    assert_repr(&v, NULL, "tensor([], size=(4, 0, 2), dtype=int64)");
    v = make_view(FC_FLOAT32, NULL, 1, (int64_t[]){0});
    assert_repr(&v, NULL, "tensor([])");
}
END_TEST

/* 64 dimensions of size 1: one element inside 64 brackets, no line breaks. */
START_TEST(max_dims)
{
    float f = 1.0f;
    int64_t shape[FC_MAX_DIMS];
    for (int d = 0; d < FC_MAX_DIMS; d++)
        shape[d] = 1;
    FcView v = make_view(FC_FLOAT32, &f, FC_MAX_DIMS, shape);
    char want[256] = "tensor(";
    for (int d = 0; d < FC_MAX_DIMS; d++)
        strcat(want, "[");
    strcat(want, "1.");
    for (int d = 0; d < FC_MAX_DIMS; d++)
        strcat(want, "]");
    strcat(want, ")");
    assert_repr(&v, NULL, want);
}
END_TEST

/* Sizes whose product overflows int64, all strides zero: the summary must look exactly like that
 * of an 11x11x11 expanded tensor, and be computed without touching more than the shown elements. */
START_TEST(huge_expanded_summary)
{
    float f = -7.5f;
    FcView small = make_view(FC_FLOAT32, &f, 3, (int64_t[]){11, 11, 11});
    memset(small.strides, 0, sizeof small.strides);
    FcView big = small;
    for (int d = 0; d < 3; d++)
        big.shape[d] = INT64_C(1) << 40;
    char *a = format(&big, NULL), *b = format(&small, NULL);
    ck_assert_str_eq(a, b);
    ck_assert_ptr_nonnull(strstr(a, "-7.5000,  ..., -7.5000"));
    free(a);
    free(b);
}
END_TEST

START_TEST(body_only)
{
    float f[4] = {1, 2, 3, 4};
    FcView v = make_view(FC_FLOAT32, f, 2, (int64_t[]){2, 2});
    char *out;
    FcError err;
    ck_assert_int_eq(fc_format_tensor_body(&v, 0, &out, &err), FC_OK);
    ck_assert_str_eq(out, "[[1., 2.],\n [3., 4.]]");
    free(out);
    ck_assert_int_eq(fc_format_tensor_body(&v, 10, &out, &err), FC_OK);
    ck_assert_str_eq(out, "[[1., 2.],\n           [3., 4.]]");
    free(out);
    v.shape[1] = 0;
    ck_assert_int_eq(fc_format_tensor_body(&v, 7, &out, &err), FC_OK);
    ck_assert_str_eq(out, "[]");
    free(out);
}
END_TEST

START_TEST(invalid_views)
{
    float f = 0;
    char *out = (char *)"untouched";
    FcError err;
    FcView v = make_view(FC_FLOAT32, &f, 2, (int64_t[]){2, -1});
    ck_assert_int_eq(fc_format_tensor(&v, NULL, &out, &err), FC_ERR_VALUE);
    ck_assert_ptr_null(out);
    ck_assert_str_eq(err.msg, "cannot format a tensor: negative size -1 in dimension 1");

    v = make_view(FC_FLOAT32, NULL, 1, (int64_t[]){3});
    ck_assert_int_eq(fc_format_tensor(&v, NULL, &out, &err), FC_ERR_VALUE);
    ck_assert_str_eq(err.msg, "cannot format a tensor: no data");

    v = make_view(FC_FLOAT32, &f, 0, NULL);
    v.dtype = FC_DTYPE__COUNT;
    ck_assert_int_eq(fc_format_tensor(&v, NULL, &out, &err), FC_ERR_VALUE);
    ck_assert_str_eq(err.msg, "cannot format a tensor: invalid view");
    v.dtype = FC_FLOAT32;
    v.ndim = FC_MAX_DIMS + 1;
    ck_assert_int_eq(fc_format_tensor_body(&v, 7, &out, &err), FC_ERR_VALUE);
    ck_assert_int_eq(fc_format_tensor(NULL, NULL, &out, &err), FC_ERR_VALUE);
}
END_TEST

Suite *fcdim_print_suite(void)
{
    if (!golden && !golden_error[0])
        load_golden();
    Suite *s = suite_create("fcdim_print");
    TCase *tc = tcase_create("golden");
    tcase_add_test(tc, golden_file_loads);
    tcase_add_loop_test(tc, golden_cases, 0, n_golden);
    tcase_add_loop_test(tc, golden_cases_relaid, 0, n_golden);
    suite_add_tcase(s, tc);

    tc = tcase_create("edges");
    tcase_add_test(tc, scalar_and_suffixes);
    tcase_add_test(tc, long_suffix_wraps);
    tcase_add_test(tc, bool_bytes_other_than_one);
    tcase_add_test(tc, empty_sizes);
    tcase_add_test(tc, max_dims);
    tcase_add_test(tc, huge_expanded_summary);
    tcase_add_test(tc, body_only);
    tcase_add_test(tc, invalid_views);
    suite_add_tcase(s, tc);
    return s;
}
