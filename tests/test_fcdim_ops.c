/* test_fcdim_ops.c — fcdim's shape operations (shape.c), creation functions (create.c) and composite
 * operations (compose.c) against PyTorch 1.13.
 *
 * The golden cases (tests/golden/fcdim_ops/cases.txt, written by gen_fcdim_ops.py with torch) give
 * each call's inputs as strided views of listed storages, and torch's result: an error with its
 * exact message, or the results' dtype, shape, strides, storage offset, values and whether they
 * view the input's storage. Every case runs as given, and again (where the layout of the input
 * cannot change the answer) with the input made lazy, which must give the same values. Values
 * are compared bit for bit, except for reductions and exp/log, which get the case's relative
 * tolerance. philox.txt holds values of tdl's random generator computed by an independent Python
 * implementation. Torch is not needed to run these tests; the files are read relative to the
 * repository root, where `make test` runs. */
#include "tests.h"

#include "fcdim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_DIR "tests/golden/fcdim_ops/"

/* ---- the golden file ---- */

typedef struct GStorage {
    char *name;
    FcDType dtype;
    int64_t n;
    void *data;
} GStorage;

typedef struct GCase {
    char *name, *op, *args, *inputs, *expected;
    double tol;
} GCase;

static GStorage *storages;
static int n_storages;
static GCase *cases;
static int n_cases;
static char load_error[256];

/* Splits s at sep into at most max fields, in place; returns the count. */
static int split(char *s, char sep, char **fields, int max)
{
    int n = 0;
    fields[n++] = s;
    for (char *p = s; *p && n < max; p++)
        if (*p == sep) {
            *p = '\0';
            fields[n++] = p + 1;
        }
    return n;
}

/* Writes element i of a buffer of dt from the text of a value. */
static void put_value(FcDType dt, void *data, int64_t i, const char *tok)
{
    switch (dt) {
    case FC_FLOAT32: ((float *)data)[i] = (float)strtod(tok, NULL); break;
    case FC_FLOAT64: ((double *)data)[i] = strtod(tok, NULL); break;
    case FC_INT32: ((int32_t *)data)[i] = (int32_t)strtoll(tok, NULL, 10); break;
    case FC_INT64: ((int64_t *)data)[i] = strtoll(tok, NULL, 10); break;
    default: ((unsigned char *)data)[i] = (unsigned char)(strtol(tok, NULL, 10) != 0); break;
    }
}

/* Space-separated values ("-": none) into a new buffer; *n gets the count. */
static void *parse_values(FcDType dt, const char *text, int64_t *n)
{
    int64_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ' ';
    void *data = calloc((size_t)cap, fc_dtype_size(dt) ? fc_dtype_size(dt) : 1);
    *n = 0;
    if (strcmp(text, "-") == 0)
        return data;
    char *copy = strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        put_value(dt, data, (*n)++, tok);
    free(copy);
    return data;
}

static void load_golden(void)
{
    FILE *fp = fopen(GOLDEN_DIR "cases.txt", "r");
    if (!fp) {
        snprintf(load_error, sizeof load_error, "cannot open %scases.txt (run from the repository root)", GOLDEN_DIR);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, cap_cases = 0, cap_st = 0;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        char *f[6];
        int nf = split(line, '\t', f, 6);
        if (line[0] == '@') {
            GStorage s;
            if (nf != 3 || !fc_dtype_from_name(f[1], &s.dtype)) {
                snprintf(load_error, sizeof load_error, "cases.txt:%d: malformed storage", lineno);
                break;
            }
            s.name = strdup(f[0]);
            s.data = parse_values(s.dtype, f[2], &s.n);
            if (n_storages == cap_st) {
                cap_st = cap_st ? 2 * cap_st : 64;
                storages = realloc(storages, (size_t)cap_st * sizeof *storages);
            }
            storages[n_storages++] = s;
            continue;
        }
        if (nf != 6) {
            snprintf(load_error, sizeof load_error, "cases.txt:%d: malformed case", lineno);
            break;
        }
        if (n_cases == cap_cases) {
            cap_cases = cap_cases ? 2 * cap_cases : 1024;
            cases = realloc(cases, (size_t)cap_cases * sizeof *cases);
        }
        GCase *c = &cases[n_cases++];
        c->name = strdup(f[0]);
        c->op = strdup(f[1]);
        c->args = strdup(f[2]);
        c->inputs = strdup(f[3]);
        c->tol = strtod(f[4], NULL);
        c->expected = strdup(f[5]);
    }
    free(line);
    fclose(fp);
}

static const GStorage *find_storage(const char *name)
{
    for (int i = 0; i < n_storages; i++)
        if (strcmp(storages[i].name, name) == 0)
            return &storages[i];
    return NULL;
}

static int parse_dims(const char *s, int64_t *out)
{
    if (strcmp(s, "-") == 0)
        return 0;
    int n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        out[n++] = strtoll(tok, NULL, 10);
    free(copy);
    return n;
}

/* ---- running a case ---- */

static FcCtx *ctx;

static void ctx_setup(void)
{
    FcError err;
    ck_assert_int_eq(fc_ctx_new(&ctx, &err), FC_OK);
}

static void ctx_teardown(void)
{
    fc_ctx_free(ctx);
    ctx = NULL;
}

/* One input tensor from its spec (NULL for "none"); lazy: an equal lazy tensor (-(-x), ~~x). */
static FcTensor *make_input(char *spec, bool lazy)
{
    if (strcmp(spec, "none") == 0)
        return NULL;
    char *f[5];
    ck_assert_int_eq(split(spec, '|', f, 5), 5);
    const GStorage *s = find_storage(f[0]);
    ck_assert_msg(s != NULL, "unknown storage %s", f[0]);
    int64_t shape[FC_MAX_DIMS], strides[FC_MAX_DIMS];
    int nd = parse_dims(f[1], shape);
    ck_assert_int_eq(parse_dims(f[2], strides), nd);
    int64_t offset = strtoll(f[3], NULL, 10);
    FcError err;
    FcTensor *t = NULL;
    if (strcmp(f[4], "w") == 0) {
        FcScalar v;
        switch (s->dtype) {
        case FC_FLOAT32: v.f = ((float *)s->data)[offset]; break;
        case FC_FLOAT64: v.f = ((double *)s->data)[offset]; break;
        case FC_INT32: v.i = ((int32_t *)s->data)[offset]; break;
        case FC_INT64: v.i = ((int64_t *)s->data)[offset]; break;
        default: v.i = ((unsigned char *)s->data)[offset]; break;
        }
        ck_assert_int_eq(fc_scalar(ctx, s->dtype, v, true, &t, &err), FC_OK);
        return t;
    }
    FcView v;
    memset(&v, 0, sizeof v);
    v.dtype = s->dtype;
    v.ndim = 1;
    v.shape[0] = s->n;
    v.strides[0] = 1;
    v.data = s->data;
    FcTensor *base = NULL;
    ck_assert_int_eq(fc_from_view(ctx, &v, fc_cpu(), &base, &err), FC_OK);
    ck_assert_int_eq(fc_as_strided(ctx, base, nd, shape, strides, offset, &t, &err), FC_OK);
    fc_tensor_release(base);
    if (lazy) {
        FcOp op = s->dtype == FC_BOOL ? FC_OP_NOT : FC_OP_NEG;
        FcTensor *a = NULL, *b = NULL;
        ck_assert_int_eq(fc_unary(ctx, op, t, &a, &err), FC_OK);
        ck_assert_int_eq(fc_unary(ctx, op, a, &b, &err), FC_OK);
        ck_assert(fc_tensor_is_lazy(b));
        fc_tensor_release(a);
        fc_tensor_release(t);
        t = b;
    }
    return t;
}

static bool parse_mf(const char *s, FcMemoryFormat *mf)
{
    static const char *const names[] = {"preserve", "contiguous", "channels_last", "channels_last_3d"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *mf = (FcMemoryFormat)i;
            return true;
        }
    return false;
}

static FcDType dtype_arg(const char *s)
{
    FcDType t = FC_DTYPE__COUNT;
    ck_assert_msg(fc_dtype_from_name(s, &t), "bad dtype %s", s);
    return t;
}

static const char *status_kind(FcStatus st)
{
    switch (st) {
    case FC_OK: return "OK";
    case FC_ERR_IO: return "IO";
    case FC_ERR_VALUE: return "VALUE";
    case FC_ERR_NOMEM: return "NOMEM";
    case FC_ERR_TYPE: return "TYPE";
    case FC_ERR_RUNTIME: return "RUNTIME";
    case FC_ERR_INDEX: return "INDEX";
    case FC_ERR_DEVICE: return "DEVICE";
    default: return "INTERRUPT";
    }
}

/* What a call gave: a status, and up to two tensors, a bool or a scalar. */
typedef struct Outcome {
    FcStatus st;
    FcError err;
    FcTensor *r[2];
    int nr;
    bool has_bool, b;
    bool has_scalar;
    FcDType sdtype;
    FcScalar s;
} Outcome;

static void run_op(const GCase *c, FcTensor **in, int nin, Outcome *o)
{
    char argbuf[512];
    snprintf(argbuf, sizeof argbuf, "%s", c->args);
    char *a[FC_MAX_DIMS + 4];
    int na = strcmp(argbuf, "-") == 0 ? 0 : split(argbuf, ',', a, FC_MAX_DIMS + 4);
    int64_t iv[FC_MAX_DIMS + 4];
    for (int i = 0; i < na; i++)
        iv[i] = strtoll(a[i], NULL, 0);
    const char *op = c->op;
    FcError *err = &o->err;
    memset(o, 0, sizeof *o);
    o->nr = 1;
    FcMemoryFormat mf = FC_MF_PRESERVE;
    if (strcmp(op, "reshape") == 0)
        o->st = fc_reshape(ctx, in[0], na, iv, &o->r[0], err);
    else if (strcmp(op, "view") == 0)
        o->st = fc_view(ctx, in[0], na, iv, &o->r[0], err);
    else if (strcmp(op, "permute") == 0)
        o->st = fc_permute(ctx, in[0], na, iv, &o->r[0], err);
    else if (strcmp(op, "expand") == 0)
        o->st = fc_expand(ctx, in[0], na, iv, &o->r[0], err);
    else if (strcmp(op, "transpose") == 0)
        o->st = fc_transpose(ctx, in[0], iv[0], iv[1], &o->r[0], err);
    else if (strcmp(op, "squeeze") == 0)
        o->st = fc_squeeze(ctx, in[0], strtoull(a[0], NULL, 0), &o->r[0], err);
    else if (strcmp(op, "unsqueeze") == 0)
        o->st = fc_unsqueeze(ctx, in[0], iv[0], &o->r[0], err);
    else if (strcmp(op, "flatten") == 0)
        o->st = fc_flatten(ctx, in[0], iv[0], iv[1], &o->r[0], err);
    else if (strcmp(op, "contiguous") == 0 && parse_mf(a[0], &mf))
        o->st = fc_contiguous(ctx, in[0], mf, &o->r[0], err);
    else if (strcmp(op, "clone") == 0 && parse_mf(a[0], &mf))
        o->st = fc_clone(ctx, in[0], mf, &o->r[0], err);
    else if (strcmp(op, "is_contiguous") == 0 && parse_mf(a[0], &mf)) {
        o->nr = 0;
        o->has_bool = true;
        o->st = fc_is_contiguous(ctx, in[0], mf, &o->b, err);
    } else if (strcmp(op, "cat") == 0)
        o->st = fc_cat(ctx, nin, in, iv[0], &o->r[0], err);
    else if (strcmp(op, "stack") == 0)
        o->st = fc_stack(ctx, nin, in, iv[0], &o->r[0], err);
    else if (strcmp(op, "to") == 0)
        o->st = fc_to(ctx, in[0], dtype_arg(a[0]), fc_cpu(), &o->r[0], err);
    else if (strcmp(op, "arange") == 0)
        o->st = fc_arange(ctx, strtod(a[0], NULL), strtod(a[1], NULL), strtod(a[2], NULL), dtype_arg(a[3]), fc_cpu(),
                          &o->r[0], err);
    else if (strcmp(op, "linspace") == 0)
        o->st = fc_linspace(ctx, strtod(a[0], NULL), strtod(a[1], NULL), iv[2], dtype_arg(a[3]), fc_cpu(), &o->r[0],
                            err);
    else if (strcmp(op, "eye") == 0)
        o->st = fc_eye(ctx, iv[0], iv[1], dtype_arg(a[2]), fc_cpu(), &o->r[0], err);
    else if (strcmp(op, "mean") == 0)
        o->st = fc_mean(ctx, in[0], (uint64_t)iv[0], iv[1] != 0, &o->r[0], err);
    else if (strcmp(op, "logsumexp") == 0)
        o->st = fc_logsumexp(ctx, in[0], (uint64_t)iv[0], iv[1] != 0, &o->r[0], err);
    else if (strcmp(op, "max_dim") == 0) {
        o->nr = 2;
        o->st = fc_max_dim(ctx, in[0], iv[0], iv[1] != 0, iv[2] != 0, &o->r[0], &o->r[1], err);
    } else if (strcmp(op, "softmax") == 0)
        o->st = fc_softmax(ctx, in[0], iv[0], iv[1] != 0, &o->r[0], err);
    else if (strcmp(op, "clamp") == 0)
        o->st = fc_clamp(ctx, in[0], in[1], in[2], &o->r[0], err);
    else if (strcmp(op, "item") == 0) {
        o->nr = 0;
        o->has_scalar = true;
        o->sdtype = in[0]->dtype;
        o->st = fc_item(ctx, in[0], &o->s, err);
    } else if (strcmp(op, "wrap_dim") == 0) {
        int w = -1;
        o->nr = 0;
        o->has_scalar = true;
        o->sdtype = FC_INT64;
        o->st = fc_wrap_dim(iv[0], (int)iv[1], &w, err);
        o->s.i = w;
    } else
        ck_abort_msg("%s: unknown op %s", c->name, op);
    if (o->st != FC_OK || o->nr == 0)
        o->nr = 0;
}

/* Text of element i (C order) of a host view, or of a scalar, in the golden file's spelling. */
static double elem_double(const FcView *v, int64_t i, int64_t *ival)
{
    int64_t off = v->offset;
    for (int k = v->ndim - 1; k >= 0; k--) {
        off += (i % v->shape[k]) * v->strides[k];
        i /= v->shape[k];
    }
    const char *p = (const char *)v->data + off * (int64_t)fc_dtype_size(v->dtype);
    switch (v->dtype) {
    case FC_FLOAT32: return *(const float *)p;
    case FC_FLOAT64: return *(const double *)p;
    case FC_INT32: *ival = *(const int32_t *)p; return 0;
    case FC_INT64: *ival = *(const int64_t *)p; return 0;
    default: *ival = *(const unsigned char *)p; return 0;
    }
}

static bool float_matches(double got, double want, double tol, FcDType dt)
{
    if (want != want)
        return got != got;
    if (tol == 0) {
        if (dt == FC_FLOAT32)
            want = (float)want;
        return got == want && signbit(got) == signbit(want);
    }
    if (isinf(want) || isinf(got))
        return got == want;
    /* Relative to the value, or absolute below 1 (a sum that cancels to a small result). */
    double scale = fmax(fmax(fabs(got), fabs(want)), 1.0);
    return fabs(got - want) <= tol * scale;
}

static void check_tensor(const GCase *c, const char *how, int k, FcTensor *r, char *spec, FcTensor *first,
                         bool check_layout)
{
    char *f[6];
    ck_assert_int_eq(split(spec, '|', f, 6), 6);
    ck_assert_msg(strcmp(fc_dtype_name(r->dtype), f[0]) == 0, "%s%s: result %d dtype %s, want %s", c->name, how, k,
                  fc_dtype_name(r->dtype), f[0]);
    int64_t shape[FC_MAX_DIMS], strides[FC_MAX_DIMS];
    int nd = parse_dims(f[1], shape);
    bool same = nd == r->ndim;
    for (int d = 0; d < nd && same; d++)
        same = shape[d] == r->shape[d];
    ck_assert_msg(same, "%s%s: result %d shape differs (ndim %d, want %s)", c->name, how, k, r->ndim, f[1]);
    FcError err;
    FcView v;
    ck_assert_int_eq(fc_host_view(ctx, r, &v, &err), FC_OK);
    if (check_layout && strcmp(f[2], "*") != 0) {
        ck_assert_int_eq(parse_dims(f[2], strides), nd);
        for (int d = 0; d < nd; d++)
            ck_assert_msg(strides[d] == r->strides[d], "%s%s: result %d stride %d is %lld, want %lld (%s)", c->name, how,
                          k, d, (long long)r->strides[d], (long long)strides[d], f[2]);
    }
    if (check_layout && strcmp(f[3], "*") != 0)
        ck_assert_msg(r->offset == strtoll(f[3], NULL, 10), "%s%s: offset %lld, want %s", c->name, how,
                      (long long)r->offset, f[3]);
    if (check_layout && first && strcmp(f[5], "*") != 0)
        ck_assert_msg((r->storage == first->storage) == (f[5][0] == '1'), "%s%s: result %s the input's storage",
                      c->name, how, r->storage == first->storage ? "shares" : "does not share");
    int64_t n = fc_tensor_numel(r), got_n;
    void *want = parse_values(r->dtype, f[4], &got_n);
    ck_assert_msg(got_n == n, "%s%s: %lld values listed for %lld elements", c->name, how, (long long)got_n,
                  (long long)n);
    for (int64_t i = 0; i < n; i++) {
        int64_t iv = 0;
        double gv = elem_double(&v, i, &iv);
        if (fc_dtype_is_float(r->dtype)) {
            double wv = r->dtype == FC_FLOAT32 ? ((float *)want)[i] : ((double *)want)[i];
            ck_assert_msg(float_matches(gv, wv, c->tol, r->dtype), "%s%s: result %d [%lld] = %a, want %a", c->name,
                          how, k, (long long)i, gv, wv);
        } else {
            int64_t wi = r->dtype == FC_INT32 ? ((int32_t *)want)[i]
                         : r->dtype == FC_INT64 ? ((int64_t *)want)[i]
                                                : ((unsigned char *)want)[i];
            ck_assert_msg(iv == wi, "%s%s: result %d [%lld] = %lld, want %lld", c->name, how, k, (long long)i,
                          (long long)iv, (long long)wi);
        }
    }
    free(want);
}

static void run_case(const GCase *c, bool lazy)
{
    const char *how = lazy ? " (lazy input)" : "";
    char *inbuf = strdup(c->inputs);
    char *specs[8];
    int nin = strcmp(inbuf, "-") == 0 ? 0 : split(inbuf, ';', specs, 8);
    FcTensor *in[8] = {NULL};
    for (int i = 0; i < nin; i++)
        in[i] = make_input(specs[i], lazy);
    Outcome o;
    run_op(c, in, nin, &o);
    char *exp = strdup(c->expected);
    if (exp[0] == 'E') {
        char *kind = exp + 2, *msg = strchr(kind, ' ');
        ck_assert_ptr_nonnull(msg);
        *msg++ = '\0';
        ck_assert_msg(o.st != FC_OK, "%s%s: succeeded, want error %s: %s", c->name, how, kind, msg);
        ck_assert_msg(strcmp(status_kind(o.st), kind) == 0, "%s%s: status %s, want %s (%s)", c->name, how,
                      status_kind(o.st), kind, o.err.msg);
        ck_assert_msg(strcmp(o.err.msg, msg) == 0, "%s%s: message\n  %s\nwant\n  %s", c->name, how, o.err.msg, msg);
    } else {
        ck_assert_msg(o.st == FC_OK, "%s%s: failed (%s): %s", c->name, how, status_kind(o.st), o.err.msg);
        if (exp[0] == 'B') {
            ck_assert(o.has_bool);
            ck_assert_msg(o.b == (exp[2] == '1'), "%s%s: got %d, want %s", c->name, how, o.b, exp + 2);
        } else if (exp[0] == 'S') {
            char *f[2];
            ck_assert_int_eq(split(exp + 2, ' ', f, 2), 2);
            ck_assert(o.has_scalar);
            ck_assert_str_eq(fc_dtype_name(o.sdtype), f[0]);
            if (fc_dtype_is_float(o.sdtype))
                ck_assert_msg(float_matches(o.s.f, strtod(f[1], NULL), 0, FC_FLOAT64), "%s: got %a, want %s", c->name,
                              o.s.f, f[1]);
            else
                ck_assert_msg(o.s.i == strtoll(f[1], NULL, 10), "%s: got %lld, want %s", c->name, (long long)o.s.i,
                              f[1]);
        } else {
            char *res[2];
            int nres = split(exp + 2, ';', res, 2);
            ck_assert_int_eq(nres, o.nr);
            for (int k = 0; k < nres; k++)
                check_tensor(c, how, k, o.r[k], res[k], nin ? in[0] : NULL, !lazy);
        }
    }
    for (int k = 0; k < 2; k++)
        fc_tensor_release(o.r[k]);
    for (int i = 0; i < nin; i++)
        fc_tensor_release(in[i]);
    free(exp);
    free(inbuf);
}

START_TEST(golden_file_loads)
{
    ck_assert_msg(load_error[0] == '\0', "%s", load_error);
    ck_assert_int_ge(n_cases, 3000);
}
END_TEST

START_TEST(golden_cases)
{
    run_case(&cases[_i], false);
}
END_TEST

/* The same call on a lazy input: views realise it, copies evaluate it in place, composites
 * fuse it. Skipped where the input's layout decides the answer (view, is_contiguous, and
 * contiguous(preserve)'s refusal) and where there is no tensor input. */
START_TEST(golden_cases_lazy)
{
    const GCase *c = &cases[_i];
    if (strcmp(c->inputs, "-") == 0 || strcmp(c->op, "view") == 0 || strcmp(c->op, "is_contiguous") == 0 ||
        (strcmp(c->op, "contiguous") == 0 && c->expected[0] == 'E'))
        return;
    run_case(c, true);
}
END_TEST

/* ---- tdl's random generator ---- */

START_TEST(philox_values)
{
    FILE *fp = fopen(GOLDEN_DIR "philox.txt", "r");
    ck_assert_ptr_nonnull(fp);
    char line[4096];
    int n = 0;
    FcError err;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *f[32];
        int nf = split(line, ' ', f, 32);
        ck_assert_int_ge(nf, 5);
        bool normal = strcmp(f[0], "randn") == 0;
        FcDType dt = dtype_arg(f[1]);
        uint64_t seed = strtoull(f[2], NULL, 10), offset = strtoull(f[3], NULL, 10);
        int64_t count = nf - 4;
        /* The context's generator at that offset (an explicit seed always starts at 0). */
        ctx->seed = seed;
        ctx->rng_offset = offset;
        FcTensor *t = NULL;
        ck_assert_int_eq((normal ? fc_randn : fc_rand)(ctx, dt, 1, &count, -1, fc_cpu(), &t, &err), FC_OK);
        ck_assert_uint_eq(ctx->rng_offset, offset + (uint64_t)count);
        FcView v;
        ck_assert_int_eq(fc_host_view(ctx, t, &v, &err), FC_OK);
        for (int64_t i = 0; i < count; i++) {
            int64_t iv;
            double got = elem_double(&v, i, &iv), want = strtod(f[4 + i], NULL);
            ck_assert_msg(float_matches(got, want, 0, dt), "%s %s seed %s offset %s [%lld]: %a, want %a", f[0], f[1],
                          f[2], f[3], (long long)i, got, want);
        }
        fc_tensor_release(t);
        n++;
    }
    fclose(fp);
    ck_assert_int_ge(n, 20);
}
END_TEST

/* Host copy of a 1-D float tensor's values as doubles. */
static double *values_of(FcTensor *t)
{
    FcError err;
    FcView v;
    ck_assert_int_eq(fc_host_view(ctx, t, &v, &err), FC_OK);
    int64_t n = fc_tensor_numel(t);
    double *out = malloc((size_t)(n ? n : 1) * sizeof *out);
    for (int64_t i = 0; i < n; i++) {
        int64_t iv;
        out[i] = elem_double(&v, i, &iv);
    }
    return out;
}

/* Successive draws continue one stream; an explicit seed neither reads nor moves it. */
START_TEST(random_streams)
{
    FcError err;
    for (int normal = 0; normal < 2; normal++)
        for (int f64 = 0; f64 < 2; f64++) {
            FcDType dt = f64 ? FC_FLOAT64 : FC_FLOAT32;
            FcStatus (*draw)(FcCtx *, FcDType, int, const int64_t *, int64_t, FcDevice, FcTensor **, FcError *) =
                normal ? fc_randn : fc_rand;
            int64_t n_all = 37, n_a = 13, shape_b[2] = {4, 6};
            FcTensor *all, *a, *b, *s1, *s2;
            ctx->seed = 99;
            ctx->rng_offset = 0;
            ck_assert_int_eq(draw(ctx, dt, 1, &n_all, -1, fc_cpu(), &all, &err), FC_OK);
            ctx->rng_offset = 0;
            ck_assert_int_eq(draw(ctx, dt, 1, &n_a, -1, fc_cpu(), &a, &err), FC_OK);
            ck_assert_int_eq(draw(ctx, dt, 1, &n_a, 7, fc_cpu(), &s1, &err), FC_OK);
            ck_assert_uint_eq(ctx->rng_offset, 13);
            ck_assert_int_eq(draw(ctx, dt, 2, shape_b, -1, fc_cpu(), &b, &err), FC_OK);
            ck_assert_uint_eq(ctx->rng_offset, 37);
            ck_assert_int_eq(draw(ctx, dt, 1, &n_a, 7, fc_cpu(), &s2, &err), FC_OK);
            double *va = values_of(a), *vb = values_of(b), *vall = values_of(all), *v1 = values_of(s1),
                   *v2 = values_of(s2);
            for (int i = 0; i < 13; i++) {
                ck_assert(va[i] == vall[i]);
                ck_assert(v1[i] == v2[i]);
            }
            for (int i = 0; i < 24; i++)
                ck_assert(vb[i] == vall[13 + i]);
            free(va), free(vb), free(vall), free(v1), free(v2);
            fc_tensor_release(all), fc_tensor_release(a), fc_tensor_release(b), fc_tensor_release(s1),
                fc_tensor_release(s2);
        }
}
END_TEST

/* Uniform in [0, 1) with mean 1/2 and variance 1/12; normal with mean 0 and variance 1. */
START_TEST(random_moments)
{
    FcError err;
    int64_t n = 200000;
    for (int normal = 0; normal < 2; normal++)
        for (int f64 = 0; f64 < 2; f64++) {
            FcTensor *t;
            ck_assert_int_eq((normal ? fc_randn : fc_rand)(ctx, f64 ? FC_FLOAT64 : FC_FLOAT32, 1, &n, 3, fc_cpu(), &t,
                                                          &err),
                             FC_OK);
            double *v = values_of(t), s = 0, s2 = 0;
            for (int64_t i = 0; i < n; i++) {
                if (!normal)
                    ck_assert(v[i] >= 0 && v[i] < 1);
                ck_assert(isfinite(v[i]));
                s += v[i];
                s2 += v[i] * v[i];
            }
            double mean = s / (double)n, var = s2 / (double)n - mean * mean;
            ck_assert_msg(fabs(mean - (normal ? 0.0 : 0.5)) < 0.01, "mean %g", mean);
            ck_assert_msg(fabs(var - (normal ? 1.0 : 1.0 / 12)) < (normal ? 0.02 : 0.002), "variance %g", var);
            free(v);
            fc_tensor_release(t);
        }
    int64_t two[2] = {2, 2};
    FcTensor *t = NULL;
    ck_assert_int_eq(fc_rand(ctx, FC_INT64, 2, two, 0, fc_cpu(), &t, &err), FC_ERR_RUNTIME);
    ck_assert_str_eq(err.msg, "\"check_uniform_bounds\" not implemented for 'Long'");
    ck_assert_int_eq(fc_randn(ctx, FC_BOOL, 2, two, 0, fc_cpu(), &t, &err), FC_ERR_RUNTIME);
    ck_assert_str_eq(err.msg, "\"normal_kernel_cpu\" not implemented for 'Bool'");
    int64_t neg = -1;
    ck_assert_int_eq(fc_rand(ctx, FC_FLOAT32, 1, &neg, 0, fc_cpu(), &t, &err), FC_ERR_RUNTIME);
    ck_assert_str_eq(err.msg, "Trying to create tensor with negative dimension -1: [-1]");
    ck_assert_ptr_null(t);
}
END_TEST

/* ---- named cases: aliasing and laziness ---- */

static FcTensor *arange_f32(int64_t n, int nd, const int64_t *shape)
{
    FcError err;
    FcTensor *a = NULL, *r = NULL;
    ck_assert_int_eq(fc_arange(ctx, 0, (double)n, 1, FC_FLOAT32, fc_cpu(), &a, &err), FC_OK);
    ck_assert_int_eq(fc_reshape(ctx, a, nd, shape, &r, &err), FC_OK);
    fc_tensor_release(a);
    return r;
}

static float elem_f32(FcTensor *t, int64_t i)
{
    FcError err;
    FcView v;
    ck_assert_int_eq(fc_host_view(ctx, t, &v, &err), FC_OK);
    int64_t iv;
    return (float)elem_double(&v, i, &iv);
}

/* Writing through a view (transpose, expand, reshape, flatten) writes the base; a clone and a
 * reshape that had to copy do not see it. */
START_TEST(views_write_through)
{
    FcError err;
    int64_t shape[2] = {3, 4};
    FcTensor *x = arange_f32(12, 2, shape), *tr = NULL, *flat = NULL, *cl = NULL, *cp = NULL, *seven = NULL;
    ck_assert_int_eq(fc_transpose(ctx, x, 0, 1, &tr, &err), FC_OK);
    ck_assert_int_eq(fc_flatten(ctx, x, 0, -1, &flat, &err), FC_OK);
    ck_assert_int_eq(fc_clone(ctx, x, FC_MF_PRESERVE, &cl, &err), FC_OK);
    int64_t twelve = 12;
    ck_assert_int_eq(fc_reshape(ctx, tr, 1, &twelve, &cp, &err), FC_OK);   /* not viewable: a copy */
    ck_assert_ptr_ne(cp->storage, x->storage);
    ck_assert_int_eq(fc_scalar(ctx, FC_FLOAT64, (FcScalar){.f = 7.0}, true, &seven, &err), FC_OK);
    /* tr[1] = 7 writes column 1 of x */
    int64_t rowshape[1] = {3}, rowstride[1] = {tr->strides[1]};
    FcTensor *row = NULL;
    ck_assert_int_eq(fc_as_strided(ctx, tr, 1, rowshape, rowstride, tr->offset + tr->strides[0], &row, &err), FC_OK);
    ck_assert_int_eq(fc_assign(ctx, row, seven, &err), FC_OK);
    ck_assert(elem_f32(x, 1) == 7.0f && elem_f32(x, 5) == 7.0f && elem_f32(x, 9) == 7.0f);
    ck_assert(elem_f32(flat, 5) == 7.0f);
    ck_assert(elem_f32(cl, 5) == 5.0f);
    ck_assert(elem_f32(cp, 1) == 4.0f);     /* tr's old order: 0 4 8 1 5 9 ... */
    fc_tensor_release(row);
    fc_tensor_release(seven);
    fc_tensor_release(cp);
    fc_tensor_release(cl);
    fc_tensor_release(flat);
    fc_tensor_release(tr);
    fc_tensor_release(x);
}
END_TEST

/* A lazy tensor read by a pending computation keeps its old values when a view of its base is
 * written afterwards (the storage's readers are realised first). */
START_TEST(lazy_reader_before_write)
{
    FcError err;
    int64_t shape[2] = {2, 3};
    FcTensor *x = arange_f32(6, 2, shape), *y = NULL, *v = NULL, *zero = NULL, *m = NULL;
    ck_assert_int_eq(fc_softmax(ctx, x, 1, false, &y, &err), FC_OK);
    ck_assert_int_eq(fc_mean(ctx, x, 0, false, &m, &err), FC_OK);
    ck_assert_int_eq(fc_expand(ctx, x, 2, shape, &v, &err), FC_OK);
    ck_assert_int_eq(fc_scalar(ctx, FC_FLOAT64, (FcScalar){.f = 0.0}, true, &zero, &err), FC_OK);
    ck_assert_int_eq(fc_assign(ctx, v, zero, &err), FC_OK);
    FcScalar s;
    ck_assert_int_eq(fc_item(ctx, m, &s, &err), FC_OK);
    ck_assert(s.f == 2.5);
    ck_assert(fabs(elem_f32(y, 2) - 0.66524096f) < 1e-6);
    ck_assert(elem_f32(x, 4) == 0.0f);
    fc_tensor_release(zero);
    fc_tensor_release(v);
    fc_tensor_release(m);
    fc_tensor_release(y);
    fc_tensor_release(x);
}
END_TEST

/* Composites stay lazy until something needs their values. */
START_TEST(composites_are_lazy)
{
    FcError err;
    int64_t shape[2] = {2, 3};
    FcTensor *x = arange_f32(6, 2, shape), *r = NULL, *vals = NULL, *idx = NULL, *lo = NULL;
    ck_assert_int_eq(fc_mean(ctx, x, 2, true, &r, &err), FC_OK);
    ck_assert(fc_tensor_is_lazy(r));
    fc_tensor_release(r);
    ck_assert_int_eq(fc_softmax(ctx, x, -1, true, &r, &err), FC_OK);
    ck_assert(fc_tensor_is_lazy(r));
    fc_tensor_release(r);
    ck_assert_int_eq(fc_logsumexp(ctx, x, 1, false, &r, &err), FC_OK);
    ck_assert(fc_tensor_is_lazy(r));
    fc_tensor_release(r);
    ck_assert_int_eq(fc_max_dim(ctx, x, 0, false, false, &vals, &idx, &err), FC_OK);
    ck_assert(fc_tensor_is_lazy(vals) && fc_tensor_is_lazy(idx));
    ck_assert_int_eq(fc_scalar(ctx, FC_INT64, (FcScalar){.i = 2}, true, &lo, &err), FC_OK);
    ck_assert_int_eq(fc_clamp(ctx, x, lo, NULL, &r, &err), FC_OK);
    ck_assert(fc_tensor_is_lazy(r));
    ck_assert(elem_f32(r, 0) == 2.0f && elem_f32(r, 5) == 5.0f);
    fc_tensor_release(r);
    ck_assert_int_eq(fc_to(ctx, x, FC_FLOAT64, fc_cpu(), &r, &err), FC_OK);
    ck_assert(fc_tensor_is_lazy(r));
    fc_tensor_release(r);
    fc_tensor_release(lo);
    fc_tensor_release(vals);
    fc_tensor_release(idx);
    fc_tensor_release(x);
}
END_TEST

START_TEST(other_devices)
{
    FcError err;
    FcDevice cuda = {FC_DEV_CUDA, 0};
    FcBackend *be = NULL;
    if (fc_ctx_backend(ctx, cuda, &be, &err) == FC_OK)
        return;     /* a build with CUDA: covered by the device tests */
    FcTensor *x = NULL, *r = NULL;
    int64_t n = 4;
    ck_assert_int_eq(fc_arange(ctx, 0, 4, 1, FC_FLOAT32, cuda, &x, &err), FC_ERR_DEVICE);
    ck_assert_int_eq(fc_rand(ctx, FC_FLOAT32, 1, &n, 0, cuda, &x, &err), FC_ERR_DEVICE);
    ck_assert_int_eq(fc_eye(ctx, 2, 2, FC_FLOAT32, cuda, &x, &err), FC_ERR_DEVICE);
    ck_assert_int_eq(fc_arange(ctx, 0, 4, 1, FC_FLOAT32, fc_cpu(), &x, &err), FC_OK);
    ck_assert_int_eq(fc_to(ctx, x, FC_FLOAT32, cuda, &r, &err), FC_ERR_DEVICE);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(fc_to(ctx, x, FC_FLOAT32, fc_cpu(), &r, &err), FC_OK);
    ck_assert_ptr_eq(r, x);
    fc_tensor_release(r);
    fc_tensor_release(x);
}
END_TEST

Suite *fcdim_ops_suite(void)
{
    load_golden();
    Suite *s = suite_create("fcdim_ops");
    TCase *tc = tcase_create("golden");
    tcase_add_unchecked_fixture(tc, ctx_setup, ctx_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, golden_file_loads);
    if (load_error[0] == '\0') {
        tcase_add_loop_test(tc, golden_cases, 0, n_cases);
        tcase_add_loop_test(tc, golden_cases_lazy, 0, n_cases);
    }
    suite_add_tcase(s, tc);
    tc = tcase_create("named");
    tcase_add_unchecked_fixture(tc, ctx_setup, ctx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, philox_values);
    tcase_add_test(tc, random_streams);
    tcase_add_test(tc, random_moments);
    tcase_add_test(tc, views_write_through);
    tcase_add_test(tc, lazy_reader_before_write);
    tcase_add_test(tc, composites_are_lazy);
    tcase_add_test(tc, other_devices);
    suite_add_tcase(s, tc);
    return s;
}
