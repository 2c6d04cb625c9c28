/* test_fcdim_io.c — fcdim's dtypes and NumPy .npy/.npz files.
 *
 * The .npy/.npz fixtures in tests/golden/fcdim_io/ were written by numpy through
 * tests/golden/gen_fcdim_io.py and manifest.txt lists their expected contents. Error cases
 * build .npy images in memory and compare whole messages. Loads of every prefix and of random
 * corruptions of valid files must fail cleanly (run the suite under ASan to make that mean
 * "never out of bounds"). Paths are relative to the repository root, where the runner is
 * started. Type promotion is tested in test_promotion.c. */
#include "tests.h"

#include "fcdim.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GOLDEN "tests/golden/fcdim_io/"

/* ---- helpers ---- */

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n ? (size_t)n : 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static char tmpdir[64];

static void make_tmpdir(void)
{
    strcpy(tmpdir, "/tmp/tdl_fcdim_io_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(tmpdir);
}

static const char *tmppath(const char *name)
{
    static char p[256];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return p;
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* Pointer to element i (C-order linear index) of v. */
static const void *elem(const FcView *v, int64_t i)
{
    int64_t off = v->offset;
    for (int k = v->ndim - 1; k >= 0; k--) {
        off += (i % v->shape[k]) * v->strides[k];
        i /= v->shape[k];
    }
    return (const char *)v->data + off * (int64_t)fc_dtype_size(v->dtype);
}

/* Element i of v rendered as the manifest spells it (ints in decimal, floats as %a). */
static void elem_text(const FcView *v, int64_t i, char *out, size_t cap)
{
    const void *p = elem(v, i);
    switch (v->dtype) {
    case FC_BOOL: snprintf(out, cap, "%d", *(const unsigned char *)p); break;
    case FC_INT32: snprintf(out, cap, "%d", *(const int32_t *)p); break;
    case FC_INT64: snprintf(out, cap, "%lld", (long long)*(const int64_t *)p); break;
    case FC_FLOAT32: snprintf(out, cap, "%a", (double)*(const float *)p); break;
    default: snprintf(out, cap, "%a", *(const double *)p); break;
    }
}

/* Manifest values are float.hex(); normalise by reading them back through strtod. */
static void norm_value(FcDType t, const char *tok, char *out, size_t cap)
{
    if (t == FC_FLOAT32)
        snprintf(out, cap, "%a", (double)(float)strtod(tok, NULL));
    else if (t == FC_FLOAT64)
        snprintf(out, cap, "%a", strtod(tok, NULL));
    else
        snprintf(out, cap, "%s", tok);
}

static void expect_strides(const FcView *v, bool fortran)
{
    int64_t s = 1;
    for (int j = 0; j < v->ndim; j++) {
        int k = fortran ? j : v->ndim - 1 - j;
        ck_assert_int_eq(v->strides[k], s);
        s *= v->shape[k] > 1 ? v->shape[k] : 1;
    }
}

/* Checks v against one manifest line (its fields after FILE MEMBER). */
static void check_against_manifest(const FcView *v, char *rest, const char *what)
{
    char *save = NULL;
    const char *dt = strtok_r(rest, " \n", &save), *order = strtok_r(NULL, " \n", &save),
               *shape = strtok_r(NULL, " \n", &save);
    ck_assert_str_eq(fc_dtype_name(v->dtype), dt);
    char got[256] = "";
    size_t w = 0;
    for (int k = 0; k < v->ndim; k++)
        w += (size_t)snprintf(got + w, sizeof got - w, "%s%lld", k ? "," : "", (long long)v->shape[k]);
    ck_assert_msg(strcmp(v->ndim ? got : "-", shape) == 0, "%s: shape %s, want %s", what, got, shape);
    expect_strides(v, order[0] == 'F');
    ck_assert_int_eq(v->offset, 0);
    int64_t n = fc_view_numel(v);
    for (int64_t i = 0; i < n; i++) {
        const char *tok = strtok_r(NULL, " \n", &save);
        ck_assert_msg(tok != NULL, "%s: manifest has too few values", what);
        char want[64], have[64];
        norm_value(v->dtype, tok, want, sizeof want);
        elem_text(v, i, have, sizeof have);
        ck_assert_msg(strcmp(want, have) == 0, "%s[%lld]: got %s, want %s", what, (long long)i, have, want);
    }
    ck_assert_msg(strtok_r(NULL, " \n", &save) == NULL, "%s: manifest has extra values", what);
}

/* Builds a .npy image: magic, version major.0, the dict text padded with spaces to a 64-byte
 * preamble and a newline, then data. */
static unsigned char *make_npy(int major, const char *dict, const void *data, size_t dlen, size_t *len)
{
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = ((pre + dl + 1 + 63) / 64) * 64;
    unsigned char *b = malloc(total + dlen + 1);
    ck_assert_ptr_nonnull(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    size_t hl = total - pre;
    for (size_t i = 0; i < pre - 8; i++)
        b[8 + i] = (unsigned char)(hl >> (8 * i));
    memcpy(b + pre, dict, dl);
    memset(b + pre + dl, ' ', total - pre - dl - 1);
    b[total - 1] = '\n';
    if (dlen)
        memcpy(b + total, data, dlen);
    *len = total + dlen;
    return b;
}

/* ---- dtypes ---- */

static const struct {
    FcDType t;
    const char *name;
    size_t size;
    bool is_float, is_int;
} dtypes[] = {
    {FC_BOOL, "bool", 1, false, false},
    {FC_INT32, "int32", 4, false, true},
    {FC_INT64, "int64", 8, false, true},
    {FC_FLOAT32, "float32", 4, true, false},
    {FC_FLOAT64, "float64", 8, true, false},
    {FC_UINT8, "uint8", 1, false, true},
    {FC_INT8, "int8", 1, false, true},
    {FC_INT16, "int16", 2, false, true},
    {FC_FLOAT16, "float16", 2, true, false},
    {FC_BFLOAT16, "bfloat16", 2, true, false},
};

START_TEST(dtype_properties)
{
    ck_assert_uint_eq(fc_dtype_size(dtypes[_i].t), dtypes[_i].size);
    ck_assert_str_eq(fc_dtype_name(dtypes[_i].t), dtypes[_i].name);
    ck_assert(fc_dtype_is_float(dtypes[_i].t) == dtypes[_i].is_float);
    ck_assert(fc_dtype_is_int(dtypes[_i].t) == dtypes[_i].is_int);
    FcDType t = FC_DTYPE__COUNT;
    ck_assert(fc_dtype_from_name(dtypes[_i].name, &t));
    ck_assert_int_eq(t, dtypes[_i].t);
}
END_TEST

/* torch.can_cast(from, to) over bool, int32, int64, float32, float64, uint8, int8, int16,
 * float16, bfloat16 (PyTorch 1.13). */
START_TEST(dtype_can_cast_matches_torch)
{
    static const bool want[FC_DTYPE__COUNT][FC_DTYPE__COUNT] = {
        {true, true, true, true, true, true, true, true, true, true},
        {false, true, true, true, true, true, true, true, true, true},
        {false, true, true, true, true, true, true, true, true, true},
        {false, false, false, true, true, false, false, false, true, true},
        {false, false, false, true, true, false, false, false, true, true},
        {false, true, true, true, true, true, true, true, true, true},
        {false, true, true, true, true, true, true, true, true, true},
        {false, true, true, true, true, true, true, true, true, true},
        {false, false, false, true, true, false, false, false, true, true},
        {false, false, false, true, true, false, false, false, true, true},
    };
    for (int a = 0; a < FC_DTYPE__COUNT; a++)
        for (int b = 0; b < FC_DTYPE__COUNT; b++)
            ck_assert_msg(fc_dtype_can_cast((FcDType)a, (FcDType)b) == want[a][b], "can_cast(%s, %s)",
                          fc_dtype_name((FcDType)a), fc_dtype_name((FcDType)b));
}
END_TEST

START_TEST(dtype_from_name_rejects_unknown)
{
    static const char *const bad[] = {"float", "int", "half", "Float32", "", "bool ", "int8 ", "uint16"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FcDType t = FC_INT32;
        ck_assert(!fc_dtype_from_name(bad[i], &t));
        ck_assert_int_eq(t, FC_INT32);
    }
    ck_assert(!fc_dtype_from_name(NULL, NULL));
}
END_TEST

static const struct {
    int ndim;
    int64_t shape[4], strides[4], numel;
} shapes[] = {
    {0, {0}, {0}, 1},
    {1, {5}, {1}, 5},
    {2, {2, 3}, {3, 1}, 6},
    {2, {0, 3}, {3, 1}, 0},
    {2, {2, 0}, {1, 1}, 0},
    {4, {2, 3, 4, 5}, {60, 20, 5, 1}, 120},
    {3, {4, 1, 2}, {2, 2, 1}, 8},
};

START_TEST(view_numel_and_contiguous_strides)
{
    FcView v = {.dtype = FC_FLOAT32, .ndim = shapes[_i].ndim};
    memcpy(v.shape, shapes[_i].shape, sizeof shapes[_i].shape);
    ck_assert_int_eq(fc_view_numel(&v), shapes[_i].numel);
    int64_t st[4] = {-7, -7, -7, -7};
    fc_contiguous_strides(shapes[_i].ndim, shapes[_i].shape, st);
    for (int k = 0; k < shapes[_i].ndim; k++)
        ck_assert_int_eq(st[k], shapes[_i].strides[k]);
}
END_TEST

/* ---- .npy fixtures ---- */

/* Copies the manifest lines whose FILE ends in ext into lines; returns how many. */
static int manifest_lines(const char *ext, char lines[][4096], int cap)
{
    FILE *f = fopen(GOLDEN "manifest.txt", "r");
    ck_assert_ptr_nonnull(f);
    int n = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char file[64];
        if (line[0] == '#' || sscanf(line, "%63s", file) != 1)
            continue;
        size_t fl = strlen(file), el = strlen(ext);
        if (fl >= el && strcmp(file + fl - el, ext) == 0) {
            ck_assert_int_lt(n, cap);
            strcpy(lines[n++], line);
        }
    }
    fclose(f);
    return n;
}

START_TEST(npy_load_numpy_fixtures)
{
    static char lines[64][4096];
    int n = manifest_lines(".npy", lines, 64);
    ck_assert_int_eq(n, 16);
    for (int i = 0; i < n; i++) {
        char file[64], member[64];
        int used;
        ck_assert(sscanf(lines[i], "%63s %63s %n", file, member, &used) == 2);
        char path[256];
        snprintf(path, sizeof path, GOLDEN "%s", file);
        FcView v;
        FcError err = {""};
        ck_assert_msg(fc_npy_load(path, &v, &err) == FC_OK, "%s", err.msg);
        ck_assert_ptr_nonnull(v.data);
        check_against_manifest(&v, lines[i] + used, file);
        free(v.data);
    }
}
END_TEST

START_TEST(npy_load_mem_matches_load)
{
    size_t len;
    unsigned char *b = slurp(GOLDEN "int32_4d.npy", &len);
    FcView a, m;
    FcError err;
    ck_assert_int_eq(fc_npy_load(GOLDEN "int32_4d.npy", &a, &err), FC_OK);
    ck_assert_int_eq(fc_npy_load_mem(b, len, "x", &m, &err), FC_OK);
    ck_assert_int_eq(a.ndim, 4);
    ck_assert_int_eq(m.ndim, 4);
    ck_assert_int_eq(memcmp(a.data, m.data, 120 * 4), 0);
    ck_assert_int_eq(memcmp(a.data, b + len - 480, 480), 0);
    free(a.data);
    free(m.data);
    free(b);
}
END_TEST

/* Saving what numpy wrote reproduces numpy's bytes exactly (header text, padding, data); a
 * Fortran-order load saves as the C-order file. */
static const char *const resave[][2] = {
    {"bool_c.npy", "bool_c.npy"},       {"int32_c.npy", "int32_c.npy"},     {"int64_c.npy", "int64_c.npy"},
    {"float32_c.npy", "float32_c.npy"}, {"float64_c.npy", "float64_c.npy"}, {"bool_f.npy", "bool_c.npy"},
    {"int32_f.npy", "int32_c.npy"},     {"int64_f.npy", "int64_c.npy"},     {"float32_f.npy", "float32_c.npy"},
    {"float64_f.npy", "float64_c.npy"}, {"scalar_0d.npy", "scalar_0d.npy"}, {"empty_0x3.npy", "empty_0x3.npy"},
    {"int32_4d.npy", "int32_4d.npy"},   {"vector_1d.npy", "vector_1d.npy"}, {"version_2_0.npy", "float32_c.npy"},
};

START_TEST(npy_save_matches_numpy_bytes)
{
    char src[256], want[256];
    snprintf(src, sizeof src, GOLDEN "%s", resave[_i][0]);
    snprintf(want, sizeof want, GOLDEN "%s", resave[_i][1]);
    FcView v;
    FcError err = {""};
    ck_assert_int_eq(fc_npy_load(src, &v, &err), FC_OK);
    if (strcmp(resave[_i][0], "version_2_0.npy") == 0) {
        /* Same shape and dtype as float32_c but other values: compare only the header. */
        ck_assert_int_eq(fc_npy_save(tmppath("out.npy"), &v, &err), FC_OK);
        size_t a, b;
        unsigned char *x = slurp(tmppath("out.npy"), &a), *y = slurp(want, &b);
        ck_assert_uint_eq(a, b);
        ck_assert_int_eq(memcmp(x, y, 128), 0);
        free(x);
        free(y);
    } else {
        ck_assert_msg(fc_npy_save(tmppath("out.npy"), &v, &err) == FC_OK, "%s", err.msg);
        size_t a, b;
        unsigned char *x = slurp(tmppath("out.npy"), &a), *y = slurp(want, &b);
        ck_assert_uint_eq(a, b);
        ck_assert_msg(memcmp(x, y, a) == 0, "%s differs from numpy's %s", resave[_i][0], resave[_i][1]);
        free(x);
        free(y);
    }
    free(v.data);
    ck_assert_int_eq(count_files(tmpdir), 1);      /* no temporary file left behind */
}
END_TEST

/* ---- saving strided views ---- */

START_TEST(npy_save_strided_views)
{
    /* base: 0..23 as float64, viewed several ways; each saved and reloaded in C order. */
    double base[24];
    for (int i = 0; i < 24; i++)
        base[i] = i;
    static const struct {
        int ndim;
        int64_t shape[3], strides[3], offset;
        double want[24];
    } cases[] = {
        {2, {3, 4}, {1, 3}, 0, {0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}},      /* transposed */
        {1, {4}, {-2, 0, 0}, 7, {7, 5, 3, 1}},                                /* negative stride */
        {2, {2, 3}, {0, 1}, 5, {5, 6, 7, 5, 6, 7}},                           /* expanded */
        {3, {2, 2, 2}, {12, 4, 1}, 1, {1, 2, 5, 6, 13, 14, 17, 18}},          /* sliced */
        {0, {0}, {0}, 9, {9}},                                                /* 0-d with offset */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        FcView v = {.dtype = FC_FLOAT64, .ndim = cases[c].ndim, .offset = cases[c].offset, .data = base};
        memcpy(v.shape, cases[c].shape, sizeof cases[c].shape);
        memcpy(v.strides, cases[c].strides, sizeof cases[c].strides);
        FcError err = {""};
        ck_assert_msg(fc_npy_save(tmppath("s.npy"), &v, &err) == FC_OK, "%s", err.msg);
        FcView r;
        ck_assert_int_eq(fc_npy_load(tmppath("s.npy"), &r, &err), FC_OK);
        ck_assert_int_eq(r.ndim, v.ndim);
        int64_t n = fc_view_numel(&v);
        for (int64_t i = 0; i < n; i++)
            ck_assert_double_eq(((double *)r.data)[i], cases[c].want[i]);
        free(r.data);
    }
}
END_TEST

START_TEST(npy_round_trip_every_dtype)
{
    unsigned char raw[6 * 8];
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = (unsigned char)(i * 37 + 1);
    FcView v = {.dtype = dtypes[_i].t, .ndim = 2, .shape = {2, 3}, .data = raw};
    fc_contiguous_strides(2, v.shape, v.strides);
    FcError err;
    if (v.dtype == FC_BFLOAT16) {       /* NumPy has no bfloat16 (torch's .numpy() refuses too) */
        ck_assert_int_eq(fc_npy_save(tmppath("r.npy"), &v, &err), FC_ERR_TYPE);
        ck_assert_msg(strstr(err.msg, "NumPy has no bfloat16 dtype") != NULL, "%s", err.msg);
        return;
    }
    ck_assert_int_eq(fc_npy_save(tmppath("r.npy"), &v, &err), FC_OK);
    FcView r;
    ck_assert_int_eq(fc_npy_load(tmppath("r.npy"), &r, &err), FC_OK);
    ck_assert_int_eq(r.dtype, v.dtype);
    if (v.dtype == FC_BOOL) {
        for (int i = 0; i < 6; i++)       /* saved as 0 or 1 */
            ck_assert_int_eq(((unsigned char *)r.data)[i], raw[i] != 0);
    } else {
        ck_assert_int_eq(memcmp(r.data, raw, 6 * fc_dtype_size(v.dtype)), 0);
    }
    free(r.data);
}
END_TEST

START_TEST(npy_save_replaces_existing_file)
{
    FILE *f = fopen(tmppath("x.npy"), "w");
    fputs("old contents", f);
    fclose(f);
    int32_t d = 42;
    FcView v = {.dtype = FC_INT32, .ndim = 0, .data = &d};
    FcError err;
    ck_assert_int_eq(fc_npy_save(tmppath("x.npy"), &v, &err), FC_OK);
    FcView r;
    ck_assert_int_eq(fc_npy_load(tmppath("x.npy"), &r, &err), FC_OK);
    ck_assert_int_eq(*(int32_t *)r.data, 42);
    free(r.data);
    ck_assert_int_eq(count_files(tmpdir), 1);
}
END_TEST

START_TEST(npy_save_errors)
{
    FcError err;
    int32_t d = 1;
    FcView v = {.dtype = FC_INT32, .ndim = 1, .shape = {1}, .strides = {1}, .data = &d};
    ck_assert_int_eq(fc_npy_save("/nonexistent-dir/x.npy", &v, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, "/nonexistent-dir/x.npy: cannot create: No such file or directory");
    v.shape[0] = -1;
    ck_assert_int_eq(fc_npy_save(tmppath("e.npy"), &v, &err), FC_ERR_VALUE);
    ck_assert_str_eq(strstr(err.msg, ": ") + 2, "cannot save: negative dimension -1");
    v.shape[0] = 1;
    v.dtype = (FcDType)99;
    ck_assert_int_eq(fc_npy_save(tmppath("e.npy"), &v, &err), FC_ERR_VALUE);
    ck_assert_str_eq(strstr(err.msg, ": ") + 2, "cannot save: invalid dtype");
    v.dtype = FC_INT32;
    v.data = NULL;
    ck_assert_int_eq(fc_npy_save(tmppath("e.npy"), &v, &err), FC_ERR_VALUE);
    ck_assert_str_eq(strstr(err.msg, ": ") + 2, "cannot save: view has no data");
    ck_assert_int_eq(count_files(tmpdir), 0);
}
END_TEST

/* ---- .npy header acceptance and errors ---- */

static const struct {
    const char *test;
    int major;
    const char *dict;
    size_t data_bytes;
    FcDType dtype;
    int ndim;
    int64_t shape0;
    bool fortran;
} accepted[] = {
    {"little f4", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, FC_FLOAT32, 1, 2, false},
    {"native f8", 1, "{'descr': '=f8', 'fortran_order': False, 'shape': (1,), }", 8, FC_FLOAT64, 1, 1, false},
    {"native i4", 1, "{'descr': '=i4', 'fortran_order': False, 'shape': (3,), }", 12, FC_INT32, 1, 3, false},
    {"bool |", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", 4, FC_BOOL, 1, 4, false},
    {"bool <", 1, "{'descr': '<b1', 'fortran_order': False, 'shape': (4,), }", 4, FC_BOOL, 1, 4, false},
    {"bool >", 1, "{'descr': '>b1', 'fortran_order': False, 'shape': (4,), }", 4, FC_BOOL, 1, 4, false},
    {"key order", 1, "{'shape': (2, 1), 'fortran_order': True, 'descr': '<i8'}", 16, FC_INT64, 2, 2, true},
    {"double quotes", 1, "{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (1,)}", 8, FC_INT64, 1, 1, false},
    {"0-d", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8, FC_FLOAT64, 0, 0, false},
    {"empty", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", 0, FC_FLOAT32, 2, 0, false},
    {"no trailing comma", 1, "{'descr':'<f4','fortran_order':False,'shape':(2,3)}", 24, FC_FLOAT32, 2, 2, false},
    {"python 2 longs", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", 24, FC_FLOAT32, 2, 2, false},
    {"version 2", 2, "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }", 20, FC_INT32, 1, 5, false},
    {"version 3", 3, "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }", 20, FC_INT32, 1, 5, false},
    {"huge dim, zero size", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 9223372036854775807), }", 0,
     FC_FLOAT64, 2, 0, false},
};

START_TEST(npy_header_accepted)
{
    unsigned char zeros[64] = {0};
    size_t len;
    unsigned char *b = make_npy(accepted[_i].major, accepted[_i].dict, zeros, accepted[_i].data_bytes, &len);
    FcView v;
    FcError err = {""};
    ck_assert_msg(fc_npy_load_mem(b, len, "t.npy", &v, &err) == FC_OK, "%s: %s", accepted[_i].test, err.msg);
    ck_assert_int_eq(v.dtype, accepted[_i].dtype);
    ck_assert_int_eq(v.ndim, accepted[_i].ndim);
    if (v.ndim)
        ck_assert_int_eq(v.shape[0], accepted[_i].shape0);
    expect_strides(&v, accepted[_i].fortran);
    ck_assert_ptr_nonnull(v.data);
    free(v.data);
    free(b);
}
END_TEST

/* Shapes with no element whose other extents' product overflows int64: accepted whatever the
 * order of the dims, with PyTorch's strides (its products wrap in 64 bits:
 * torch.zeros(0, 2**62, 4).stride() is (0, 4, 1), torch.zeros(0, 3, 2**62).stride() is
 * (-2**62, 2**62, 1)). Under UBSan this also checks that no stride computation overflows. */
static const struct {
    const char *dict;
    int64_t shape[3], strides[3];
} empty_huge[] = {
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4), }",
     {0, INT64_C(4611686018427387904), 4}, {0, 4, 1}},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4, 0), }",
     {INT64_C(4611686018427387904), 4, 0}, {4, 1, 1}},
    {"{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3, 4611686018427387904), }",
     {0, 3, INT64_C(4611686018427387904)}, {-INT64_C(4611686018427387904), INT64_C(4611686018427387904), 1}},
    {"{'descr': '<i8', 'fortran_order': True, 'shape': (0, 4611686018427387904, 4), }",
     {0, INT64_C(4611686018427387904), 4}, {1, 1, INT64_C(4611686018427387904)}},
    {"{'descr': '|b1', 'fortran_order': True, 'shape': (4611686018427387904, 4, 0), }",
     {INT64_C(4611686018427387904), 4, 0}, {1, INT64_C(4611686018427387904), 0}},
};

START_TEST(npy_header_empty_huge_dims)
{
    size_t len;
    unsigned char *b = make_npy(1, empty_huge[_i].dict, NULL, 0, &len);
    FcView v;
    FcError err = {""};
    ck_assert_msg(fc_npy_load_mem(b, len, "t.npy", &v, &err) == FC_OK, "%s: %s", empty_huge[_i].dict, err.msg);
    ck_assert_int_eq(v.ndim, 3);
    ck_assert_int_eq(fc_view_numel(&v), 0);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(v.shape[k], empty_huge[_i].shape[k]);
        ck_assert_int_eq(v.strides[k], empty_huge[_i].strides[k]);
    }
    free(v.data);
    free(b);
}
END_TEST

static const struct {
    const char *dict;       /* NULL: use raw instead */
    size_t data_bytes;
    const char *msg;        /* after "t.npy: " */
} rejected[] = {
    {"{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", 4,
     "unsupported dtype '<u2' (tdl has bool, uint8, int8, int16, int32, int64, float16, float32, float64)"},
    {"{'descr': '|i2', 'fortran_order': False, 'shape': (2,), }", 4,
     "unsupported dtype '|i2' (tdl has bool, uint8, int8, int16, int32, int64, float16, float32, float64)"},
    {"{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }", 16,
     "unsupported dtype '<u8' (tdl has bool, uint8, int8, int16, int32, int64, float16, float32, float64)"},
    {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16,
     "unsupported dtype '<c8' (tdl has bool, uint8, int8, int16, int32, int64, float16, float32, float64)"},
    {"{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", 8,
     "unsupported dtype '|f4' (tdl has bool, uint8, int8, int16, int32, int64, float16, float32, float64)"},
    {"{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", 24,
     "unsupported dtype '<U3' (tdl has bool, uint8, int8, int16, int32, int64, float16, float32, float64)"},
    {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "big-endian data is not supported (descr '>f4')"},
    {"{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", 16, "big-endian data is not supported (descr '>i8')"},
    {"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16, "object arrays are not supported (descr '|O')"},
    {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8, "structured dtypes are not supported"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 16,
     "file is truncated: header says 24 bytes of data, found 16"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 12, "4 bytes of unexpected data after the array"},
    {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0,
     "shape is too large (its byte size overflows)"},
    {"{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976,), }", 0,
     "shape is too large (its byte size overflows)"},
    {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0,
     "shape is too large (a dimension overflows 64 bits)"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0, "corrupt header: bad dimension in 'shape'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", 8, "corrupt header: 'shape' is not a tuple"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", 8, "corrupt header: 'shape' is not a tuple"},
    {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 8,
     "corrupt header: 'fortran_order' is not True or False"},
    {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,), }", 8,
     "corrupt header: 'fortran_order' is not True or False"},
    {"{'descr': '<f4', 'shape': (2,), }", 8, "corrupt header: missing key 'fortran_order'"},
    {"{'fortran_order': False, 'shape': (2,), }", 8, "corrupt header: missing key 'descr'"},
    {"{'descr': '<f4', 'fortran_order': False}", 8, "corrupt header: missing key 'shape'"},
    {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8,
     "corrupt header: duplicate key 'descr'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", 8, "corrupt header: unexpected key 'extra'"},
    {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }", 8, "corrupt header: expected ',' or '}'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", 8,
     "corrupt header: text after the closing '}'"},
    {"['descr', '<f4']", 8, "corrupt header: expected '{'"},
    {"{descr: '<f4'}", 8, "corrupt header: expected a quoted key"},
    {"{'descr' '<f4'}", 8, "corrupt header: expected ':' after 'descr'"},
    {"{'descr': <f4}", 8, "corrupt header: 'descr' is not a string"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", 8,
     "corrupt header: expected ',' or ')' in 'shape'"},
    {"{'descr': '<f4\\n', 'fortran_order': False, 'shape': (2,), }", 8, "corrupt header: 'descr' is not a string"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
     "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }",
     4, "shape has more than 64 dimensions"},
};

START_TEST(npy_header_rejected)
{
    unsigned char zeros[64] = {0};
    size_t len;
    unsigned char *b = make_npy(1, rejected[_i].dict, zeros, rejected[_i].data_bytes, &len);
    FcView v;
    FcError err = {""};
    ck_assert_int_eq(fc_npy_load_mem(b, len, "t.npy", &v, &err), FC_ERR_IO);
    char want[600];
    snprintf(want, sizeof want, "t.npy: %s", rejected[_i].msg);
    ck_assert_str_eq(err.msg, want);
    free(b);
}
END_TEST

/* Damaged preambles, written out byte by byte. */
static const struct {
    const char *bytes;
    size_t len;
    const char *msg;
} bad_preamble[] = {
    {"", 0, "t.npy: not a .npy file (bad magic)"},
    {"\x93NUMPX\x01\x00", 8, "t.npy: not a .npy file (bad magic)"},
    {"PK\x03\x04\x14\x00\x00\x00", 8, "t.npy: not a .npy file (bad magic)"},
    {"\x93NUMPY\x01", 7, "t.npy: file is truncated: no format version"},
    {"\x93NUMPY\x04\x00\x00\x00", 10, "t.npy: unsupported .npy format version 4.0"},
    {"\x93NUMPY\x01\x01\x00\x00", 10, "t.npy: unsupported .npy format version 1.1"},
    {"\x93NUMPY\x01\x00\x05", 9, "t.npy: file is truncated: no header length"},
    {"\x93NUMPY\x02\x00\x05\x00\x00", 11, "t.npy: file is truncated: no header length"},
    {"\x93NUMPY\x01\x00\x10\x00{}\n", 13, "t.npy: file is truncated: header says 16 bytes of header, found 3"},
    {"\x93NUMPY\x01\x00\x00\x00", 10, "t.npy: corrupt header: it does not end with a newline"},
    {"\x93NUMPY\x01\x00\x03\x00{} ", 13, "t.npy: corrupt header: it does not end with a newline"},
    {"\x93NUMPY\x01\x00\x03\x00{\0\n", 13, "t.npy: corrupt header: it contains a NUL byte"},
    {"\x93NUMPY\x01\x00\x03\x00{}\n", 13, "t.npy: corrupt header: missing key 'descr'"},
};

START_TEST(npy_preamble_rejected)
{
    /* An exact-size heap copy, so ASan sees any read past the end. */
    unsigned char *b = malloc(bad_preamble[_i].len + 1);
    memcpy(b, bad_preamble[_i].bytes, bad_preamble[_i].len);
    FcView v;
    FcError err = {""};
    ck_assert_int_eq(fc_npy_load_mem(b, bad_preamble[_i].len, "t.npy", &v, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, bad_preamble[_i].msg);
    free(b);
}
END_TEST

START_TEST(npy_load_missing_file)
{
    FcView v;
    FcError err;
    ck_assert_int_eq(fc_npy_load("/nonexistent-dir/x.npy", &v, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, "/nonexistent-dir/x.npy: cannot open: No such file or directory");
    ck_assert_int_eq(fc_npy_load("/tmp", &v, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, "/tmp: not a regular file");
}
END_TEST

START_TEST(npy_load_file_message_names_path)
{
    FILE *f = fopen(tmppath("short.npy"), "wb");
    size_t len;
    unsigned char *b = slurp(GOLDEN "float32_c.npy", &len);
    fwrite(b, 1, len - 8, f);
    fclose(f);
    free(b);
    FcView v;
    FcError err;
    ck_assert_int_eq(fc_npy_load(tmppath("short.npy"), &v, &err), FC_ERR_IO);
    char want[600];
    snprintf(want, sizeof want, "%s: file is truncated: header says 24 bytes of data, found 16", tmppath("short.npy"));
    ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(npy_bool_bytes_normalised)
{
    unsigned char data[4] = {0, 1, 2, 255};
    size_t len;
    unsigned char *b = make_npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", data, 4, &len);
    FcView v;
    FcError err;
    ck_assert_int_eq(fc_npy_load_mem(b, len, "t.npy", &v, &err), FC_OK);
    ck_assert_int_eq(memcmp(v.data, "\0\1\1\1", 4), 0);
    free(v.data);
    free(b);
}
END_TEST

/* Every prefix of every fixture is rejected as FC_ERR_IO (never crashes, never reads past
 * the prefix: each is an exact-size heap copy). */
static const char *const fixtures[] = {"bool_c.npy", "float64_f.npy", "scalar_0d.npy", "empty_0x3.npy",
                                       "int32_4d.npy", "version_2_0.npy", "version_3_0.npy"};

START_TEST(npy_every_truncation_rejected)
{
    char path[256];
    snprintf(path, sizeof path, GOLDEN "%s", fixtures[_i]);
    size_t len;
    unsigned char *full = slurp(path, &len);
    for (size_t k = 0; k < len; k++) {
        unsigned char *b = malloc(k ? k : 1);
        memcpy(b, full, k);
        FcView v;
        FcError err = {""};
        ck_assert_msg(fc_npy_load_mem(b, k, "t.npy", &v, &err) == FC_ERR_IO, "%s cut at %zu loaded", fixtures[_i], k);
        ck_assert_msg(strncmp(err.msg, "t.npy: ", 7) == 0, "%s", err.msg);
        free(b);
    }
    free(full);
}
END_TEST

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

START_TEST(npy_random_corruptions_are_safe)
{
    char path[256];
    snprintf(path, sizeof path, GOLDEN "%s", fixtures[_i]);
    size_t len;
    unsigned char *full = slurp(path, &len);
    uint32_t seed = 12345u + (uint32_t)_i;
    for (int trial = 0; trial < 2000; trial++) {
        unsigned char *b = malloc(len);
        memcpy(b, full, len);
        int flips = 1 + (int)(lcg(&seed) % 4);
        for (int j = 0; j < flips; j++) {
            /* Mostly the header, where the parsing is. */
            size_t at = lcg(&seed) % (len < 128 ? len : 128);
            b[at] = (unsigned char)lcg(&seed);
        }
        FcView v;
        FcError err = {""};
        FcStatus st = fc_npy_load_mem(b, len, "t.npy", &v, &err);
        if (st == FC_OK)
            free(v.data);
        else
            ck_assert_msg(st == FC_ERR_IO && strncmp(err.msg, "t.npy: ", 7) == 0, "%d %s", st, err.msg);
        free(b);
    }
    free(full);
}
END_TEST

/* ---- .npz ---- */

/* zip64.npz has ZIP64 extra fields for every size and offset in its central directory. */
static const char *const npz_fixtures[] = {"stored.npz", "deflated.npz", "zip64.npz"};

START_TEST(npz_load_numpy_fixtures)
{
    static char lines[64][4096];
    int n = manifest_lines(".npz", lines, 64);
    char path[256];
    snprintf(path, sizeof path, GOLDEN "%s", npz_fixtures[_i]);
    FcNamedView *arrays;
    int na;
    FcError err = {""};
    ck_assert_msg(fc_npz_load(path, &arrays, &na, &err) == FC_OK, "%s", err.msg);
    ck_assert_int_eq(na, 6);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        char file[64], member[64];
        int used;
        ck_assert(sscanf(lines[i], "%63s %63s %n", file, member, &used) == 2);
        if (strcmp(file, npz_fixtures[_i]) != 0)
            continue;
        /* numpy keeps the order of the keyword arguments, as the manifest does. */
        ck_assert_str_eq(arrays[checked].name, member);
        check_against_manifest(&arrays[checked].view, lines[i] + used, member);
        checked++;
    }
    ck_assert_int_eq(checked, 6);
    fc_npz_free(arrays, na);
}
END_TEST

START_TEST(npz_round_trip)
{
    float w[6] = {1, 2, 3, 4, 5, 6};
    int64_t idx[3] = {7, 8, 9};
    unsigned char m[2] = {1, 0};
    double s = 0.25;
    FcNamedView in[4] = {
        {"weights", {.dtype = FC_FLOAT32, .ndim = 2, .shape = {3, 2}, .strides = {1, 3}, .data = w}},
        {"index", {.dtype = FC_INT64, .ndim = 1, .shape = {3}, .strides = {1}, .data = idx}},
        {"mask", {.dtype = FC_BOOL, .ndim = 1, .shape = {2}, .strides = {1}, .data = m}},
        {"scale", {.dtype = FC_FLOAT64, .ndim = 0, .data = &s}},
    };
    FcError err = {""};
    ck_assert_msg(fc_npz_save(tmppath("a.npz"), in, 4, _i == 1, &err) == FC_OK, "%s", err.msg);
    FcNamedView *out;
    int n;
    ck_assert_msg(fc_npz_load(tmppath("a.npz"), &out, &n, &err) == FC_OK, "%s", err.msg);
    ck_assert_int_eq(n, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(out[i].name, in[i].name);
        ck_assert_int_eq(out[i].view.dtype, in[i].view.dtype);
        ck_assert_int_eq(out[i].view.ndim, in[i].view.ndim);
        int64_t numel = fc_view_numel(&in[i].view);
        size_t es = fc_dtype_size(in[i].view.dtype);
        for (int64_t e = 0; e < numel; e++)
            ck_assert_int_eq(memcmp(elem(&out[i].view, e), elem(&in[i].view, e), es), 0);
    }
    fc_npz_free(out, n);
    ck_assert_int_eq(count_files(tmpdir), 1);
}
END_TEST

START_TEST(npz_save_empty_archive)
{
    FcError err;
    ck_assert_int_eq(fc_npz_save(tmppath("e.npz"), NULL, 0, false, &err), FC_OK);
    FcNamedView *out;
    int n = -1;
    ck_assert_int_eq(fc_npz_load(tmppath("e.npz"), &out, &n, &err), FC_OK);
    ck_assert_int_eq(n, 0);
    fc_npz_free(out, n);
    fc_npz_free(NULL, 0);
}
END_TEST

START_TEST(npz_save_errors)
{
    int32_t d = 1;
    FcNamedView a[2] = {{"x", {.dtype = FC_INT32, .ndim = 0, .data = &d}},
                        {"x", {.dtype = FC_INT32, .ndim = 0, .data = &d}}};
    FcError err;
    ck_assert_int_eq(fc_npz_save(tmppath("e.npz"), a, 2, false, &err), FC_ERR_VALUE);
    ck_assert_str_eq(strstr(err.msg, ": ") + 2, "duplicate array name 'x'");
    a[1].name = "";
    ck_assert_int_eq(fc_npz_save(tmppath("e.npz"), a, 2, false, &err), FC_ERR_VALUE);
    ck_assert_str_eq(strstr(err.msg, ": ") + 2, "array 1 needs a name (1 to 60000 bytes)");
    ck_assert_int_eq(fc_npz_save("/nonexistent-dir/e.npz", a, 1, true, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, "/nonexistent-dir/e.npz: cannot create: No such file or directory");
    ck_assert_int_eq(count_files(tmpdir), 0);
}
END_TEST

/* Offset of the first occurrence of needle in b[0..len); the test fails if there is none. */
static size_t find(const unsigned char *b, size_t len, const char *needle, size_t nlen)
{
    for (size_t i = 0; i + nlen <= len; i++)
        if (memcmp(b + i, needle, nlen) == 0)
            return i;
    ck_abort_msg("needle not found");
    return 0;
}

START_TEST(npz_crc_mismatch_rejected)
{
    size_t len;
    unsigned char *b = slurp(GOLDEN "stored.npz", &len);
    /* Flip the last byte of the first member's data (weights.npy, 176 bytes, stored). */
    size_t at = find(b, len, "\x93NUMPY", 6);
    b[at + 175] ^= 0x40;
    FcNamedView *out;
    int n;
    FcError err;
    ck_assert_int_eq(fc_npz_load_mem(b, len, "s.npz", &out, &n, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, "s.npz: member 'weights.npy' fails its CRC-32 check (archive is corrupt)");
    ck_assert_ptr_null(out);
    ck_assert_int_eq(n, 0);
    free(b);
}
END_TEST

/* Edits to the central directory entry of the first member. */
static const struct {
    size_t field;           /* offset within the central directory entry */
    unsigned value;         /* little-endian 16-bit value written there */
    const char *msg;
} cd_edits[] = {
    {10, 12, "s.npz: member 'weights.npy' uses compression method 12 (only stored and deflate)"},
    {8, 1, "s.npz: member 'weights.npy' is encrypted"},
    {42, 0x1234, "s.npz: corrupt ZIP archive: bad local header for 'weights.npy'"},
    {0, 0, "s.npz: corrupt ZIP archive: bad central directory entry 0"},
    {28, 0xFFFF, "s.npz: corrupt ZIP archive: central directory entry 0 overruns"},
};

START_TEST(npz_directory_errors)
{
    size_t len;
    unsigned char *b = slurp(GOLDEN "stored.npz", &len);
    size_t cd = find(b, len, "PK\x01\x02", 4);
    b[cd + cd_edits[_i].field] = (unsigned char)cd_edits[_i].value;
    b[cd + cd_edits[_i].field + 1] = (unsigned char)(cd_edits[_i].value >> 8);
    FcNamedView *out;
    int n;
    FcError err;
    ck_assert_int_eq(fc_npz_load_mem(b, len, "s.npz", &out, &n, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, cd_edits[_i].msg);
    free(b);
}
END_TEST

START_TEST(npz_non_npy_member_rejected)
{
    size_t len;
    unsigned char *b = slurp(GOLDEN "stored.npz", &len);
    size_t cd = find(b, len, "PK\x01\x02", 4);
    memcpy(b + cd + 46 + 8, "txt", 3);      /* "weights.npy" -> "weights.txt" */
    FcNamedView *out;
    int n;
    FcError err;
    ck_assert_int_eq(fc_npz_load_mem(b, len, "s.npz", &out, &n, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, "s.npz: member 'weights.txt' is not a .npy file");
    free(b);
}
END_TEST

START_TEST(npz_bad_member_reports_member)
{
    /* A valid archive whose one member is a big-endian .npy: our writer's stored archive with
     * the member's descr patched to '>i4' and both CRC-32 fields recomputed by hand, so only
     * the member's own parse can fail, and its message must name the member. */
    unsigned char be[8] = {0};
    size_t len;
    unsigned char *npy = make_npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", be, 8, &len);
    FcView v;
    FcError err;
    ck_assert_int_eq(fc_npy_load_mem(npy, len, "m", &v, &err), FC_ERR_IO);
    free(npy);
    /* Build the archive by hand: one stored member. */
    int32_t d = 5;
    FcNamedView a[1] = {{"arr", {.dtype = FC_INT32, .ndim = 1, .shape = {1}, .strides = {1}, .data = &d}}};
    ck_assert_int_eq(fc_npz_save(tmppath("b.npz"), a, 1, false, &err), FC_OK);
    unsigned char *z = slurp(tmppath("b.npz"), &len);
    size_t at = find(z, len, "'<i4'", 5);
    z[at + 1] = '>';
    /* Patch both CRC fields so only the member itself is wrong. */
    size_t data = find(z, len, "\x93NUMPY", 6), mlen = 128 + 4;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < mlen; i++) {
        crc ^= z[data + i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    }
    crc = ~crc;
    size_t cd = find(z, len, "PK\x01\x02", 4);
    for (int k = 0; k < 4; k++)
        z[14 + k] = z[cd + 16 + k] = (unsigned char)(crc >> (8 * k));
    FcNamedView *out;
    int n;
    ck_assert_int_eq(fc_npz_load_mem(z, len, "b.npz", &out, &n, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, "b.npz: member 'arr.npy': big-endian data is not supported (descr '>i4')");
    free(z);
}
END_TEST

/* With the classic end record's fields saturated, the ZIP64 end record must be followed. */
START_TEST(npz_zip64_end_record_used)
{
    size_t len;
    unsigned char *b = slurp(GOLDEN "zip64.npz", &len);
    size_t e = len - 22;
    ck_assert_int_eq(memcmp(b + e, "PK\x05\x06", 4), 0);
    memset(b + e + 8, 0xFF, 4);          /* entry counts */
    memset(b + e + 12, 0xFF, 8);         /* directory size and offset */
    FcNamedView *out;
    int n;
    FcError err = {""};
    ck_assert_msg(fc_npz_load_mem(b, len, "z.npz", &out, &n, &err) == FC_OK, "%s", err.msg);
    ck_assert_int_eq(n, 6);
    ck_assert_str_eq(out[5].name, "fortran");
    fc_npz_free(out, n);
    /* Without the locator in front of it the saturated record is an error. */
    b[e - 20] ^= 0xFF;
    ck_assert_int_eq(fc_npz_load_mem(b, len, "z.npz", &out, &n, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, "z.npz: corrupt ZIP archive: missing ZIP64 end-of-directory locator");
    free(b);
}
END_TEST

START_TEST(npz_not_a_zip)
{
    FcNamedView *out;
    int n;
    FcError err;
    ck_assert_int_eq(fc_npz_load(GOLDEN "float32_c.npy", &out, &n, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, GOLDEN "float32_c.npy: not a .npz file (no ZIP end-of-central-directory record)");
    ck_assert_int_eq(fc_npz_load_mem("PK", 2, "x.npz", &out, &n, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, "x.npz: not a .npz file (too short for a ZIP archive)");
    ck_assert_int_eq(fc_npz_load("/nonexistent-dir/x.npz", &out, &n, &err), FC_ERR_IO);
    ck_assert_str_eq(err.msg, "/nonexistent-dir/x.npz: cannot open: No such file or directory");
}
END_TEST

START_TEST(npz_every_truncation_rejected)
{
    char path[256];
    snprintf(path, sizeof path, GOLDEN "%s", npz_fixtures[_i]);
    size_t len;
    unsigned char *full = slurp(path, &len);
    for (size_t k = 0; k < len; k++) {
        unsigned char *b = malloc(k ? k : 1);
        memcpy(b, full, k);
        FcNamedView *out;
        int n;
        FcError err = {""};
        ck_assert_msg(fc_npz_load_mem(b, k, "t.npz", &out, &n, &err) == FC_ERR_IO, "%s cut at %zu loaded",
                      npz_fixtures[_i], k);
        ck_assert_msg(strncmp(err.msg, "t.npz: ", 7) == 0, "%s", err.msg);
        free(b);
    }
    free(full);
}
END_TEST

START_TEST(npz_random_corruptions_are_safe)
{
    char path[256];
    snprintf(path, sizeof path, GOLDEN "%s", npz_fixtures[_i]);
    size_t len;
    unsigned char *full = slurp(path, &len);
    uint32_t seed = 777u + (uint32_t)_i;
    for (int trial = 0; trial < 3000; trial++) {
        unsigned char *b = malloc(len);
        memcpy(b, full, len);
        int flips = 1 + (int)(lcg(&seed) % 3);
        for (int j = 0; j < flips; j++)
            b[lcg(&seed) % len] = (unsigned char)lcg(&seed);
        FcNamedView *out;
        int n;
        FcError err = {""};
        FcStatus st = fc_npz_load_mem(b, len, "t.npz", &out, &n, &err);
        if (st == FC_OK)
            fc_npz_free(out, n);
        else
            ck_assert_msg(st == FC_ERR_IO && strncmp(err.msg, "t.npz: ", 7) == 0, "%d %s", st, err.msg);
        free(b);
    }
    free(full);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

Suite *fcdim_io_suite(void)
{
    Suite *s = suite_create("fcdim_io");
    TCase *tc = tcase_create("dtype");
    tcase_add_loop_test(tc, dtype_properties, 0, N(dtypes));
    tcase_add_test(tc, dtype_from_name_rejects_unknown);
    tcase_add_test(tc, dtype_can_cast_matches_torch);
    tcase_add_loop_test(tc, view_numel_and_contiguous_strides, 0, N(shapes));
    suite_add_tcase(s, tc);

    tc = tcase_create("npy");
    tcase_add_checked_fixture(tc, make_tmpdir, remove_tmpdir);
    tcase_add_test(tc, npy_load_numpy_fixtures);
    tcase_add_test(tc, npy_load_mem_matches_load);
    tcase_add_loop_test(tc, npy_save_matches_numpy_bytes, 0, N(resave));
    tcase_add_test(tc, npy_save_strided_views);
    tcase_add_loop_test(tc, npy_round_trip_every_dtype, 0, N(dtypes));
    tcase_add_test(tc, npy_save_replaces_existing_file);
    tcase_add_test(tc, npy_save_errors);
    tcase_add_loop_test(tc, npy_header_accepted, 0, N(accepted));
    tcase_add_loop_test(tc, npy_header_empty_huge_dims, 0, N(empty_huge));
    tcase_add_loop_test(tc, npy_header_rejected, 0, N(rejected));
    tcase_add_loop_test(tc, npy_preamble_rejected, 0, N(bad_preamble));
    tcase_add_test(tc, npy_load_missing_file);
    tcase_add_test(tc, npy_load_file_message_names_path);
    tcase_add_test(tc, npy_bool_bytes_normalised);
    tcase_add_loop_test(tc, npy_every_truncation_rejected, 0, N(fixtures));
    tcase_add_loop_test(tc, npy_random_corruptions_are_safe, 0, N(fixtures));
    suite_add_tcase(s, tc);

    tc = tcase_create("npz");
    tcase_add_checked_fixture(tc, make_tmpdir, remove_tmpdir);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, npz_load_numpy_fixtures, 0, N(npz_fixtures));
    tcase_add_loop_test(tc, npz_round_trip, 0, 2);
    tcase_add_test(tc, npz_save_empty_archive);
    tcase_add_test(tc, npz_save_errors);
    tcase_add_test(tc, npz_crc_mismatch_rejected);
    tcase_add_loop_test(tc, npz_directory_errors, 0, N(cd_edits));
    tcase_add_test(tc, npz_non_npy_member_rejected);
    tcase_add_test(tc, npz_bad_member_reports_member);
    tcase_add_test(tc, npz_zip64_end_record_used);
    tcase_add_test(tc, npz_not_a_zip);
    tcase_add_loop_test(tc, npz_every_truncation_rejected, 0, N(npz_fixtures));
    tcase_add_loop_test(tc, npz_random_corruptions_are_safe, 0, N(npz_fixtures));
    suite_add_tcase(s, tc);
    return s;
}
