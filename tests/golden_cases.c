/* golden_cases.c — reading the conformance case files and running one case (golden_cases.h). */
#include "golden_cases.h"

#include "fcdim.h"

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Parses "name<TAB>program<TAB>expected" into *c; false when the line is malformed. */
static bool parse_case(char *line, GoldenCase *c)
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
    } else {
        return false;
    }
    c->name = strdup(line);
    c->program = strdup(tab1 + 1);
    return true;
}

int golden_cases_load(const char *file, GoldenCase **cases, char *err, size_t errcap)
{
    *cases = NULL;
    err[0] = '\0';
    FILE *fp = fopen(file, "r");
    if (!fp) {
        snprintf(err, errcap, "cannot open %s (run from the repository root)", file);
        return 0;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int n = 0, lineno = 0, cap_cases = 0;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        if (n == cap_cases) {
            cap_cases = cap_cases ? 2 * cap_cases : 256;
            *cases = realloc(*cases, (size_t)cap_cases * sizeof **cases);
        }
        if (!parse_case(line, &(*cases)[n])) {
            snprintf(err, errcap, "%s:%d: malformed case", file, lineno);
            break;
        }
        n++;
    }
    free(line);
    fclose(fp);
    return n;
}

void golden_cases_free(GoldenCase *cases, int n)
{
    for (int k = 0; k < n; k++) {
        free(cases[k].name);
        free(cases[k].program);
        free(cases[k].text);
        free(cases[k].kind);
    }
    free(cases);
}

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

const char *golden_device(void)
{
    const char *d = getenv("TDL_TEST_DEVICE");
    return d && *d ? d : NULL;
}

/* s without the device suffix, with whitespace runs as one space, and PyTorch's names of CUDA
 * tensor types as the CPU's ("torch.cuda.FloatTensor", "CUDABoolType" in its messages), malloc'd. */
static char *device_normalised(const char *s)
{
    char *r = malloc(strlen(s) + 1);
    ck_assert_ptr_nonnull(r);
    size_t n = 0;
    while (*s) {
        if (*s == ',') {
            const char *q = s + 1 + strspn(s + 1, " \n\t");
            if (strncmp(q, "device='cuda", 12) == 0 && (q = strchr(q + 12, '\''))) {
                s = q + 1;
                continue;
            }
        }
        if (strncmp(s, "torch.cuda.", 11) == 0) {
            memcpy(r + n, "torch.", 6);
            n += 6;
            s += 11;
            continue;
        }
        if (strncmp(s, "CUDABoolType", 12) == 0) {
            memcpy(r + n, "CPUBoolType", 11);
            n += 11;
            s += 12;
            continue;
        }
        if (*s == ' ' || *s == '\n' || *s == '\t') {
            while (*s == ' ' || *s == '\n' || *s == '\t')
                s++;
            r[n++] = ' ';
            continue;
        }
        r[n++] = *s++;
    }
    r[n] = '\0';
    return r;
}

bool golden_same_output(const char *got, const char *want)
{
    if (!golden_device())
        return strcmp(got, want) == 0;
    char *a = device_normalised(got), *b = device_normalised(want);
    bool same = strcmp(a, b) == 0;
    free(a);
    free(b);
    return same;
}

void golden_run(const char *program, const char *name, GoldenRun *r)
{
    Out out = {0};
    tdl_config cfg = {0};
    cfg.device = golden_device();
    cfg.write = capture;
    cfg.write_ud = &out;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    r->status = tdl_run_string(T, program, name);
    bool raised = r->status == TDL_ERROR;
    r->printed = out.buf ? out.buf : strdup("");
    r->kind = strdup(raised ? tdl_error_kind_name(tdl_error_kind_of(T)) : "");
    r->msg = strdup(raised ? tdl_error_message(T) : "");
    tdl_close(T);
}

void golden_run_free(GoldenRun *r)
{
    free(r->printed);
    free(r->kind);
    free(r->msg);
}

/* ---- the suites that compare with PyTorch's .npy files ---- */

static void discard(void *ud, const char *s, size_t len)
{
    (void)ud;
    (void)s;
    (void)len;
}

char *env_save(const char *name)
{
    const char *v = getenv(name);
    char *saved = v ? strdup(v) : NULL;
    ck_assert(!v || saved);
    return saved;
}

void env_restore(const char *name, char *saved)
{
    if (saved)
        setenv(name, saved, 1);
    else
        unsetenv(name);
    free(saved);
}

tdl_interp *golden_open(int flags)
{
    tdl_config cfg = {0};
    cfg.path = "stdlib";
    cfg.write = discard;
    cfg.flags = flags;
    cfg.device = golden_device();
    return tdl_open(&cfg);
}

void golden_put(char *b, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(b);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + n, cap - n, fmt, ap);
    va_end(ap);
}

void golden_case_program(const char *module, const char *program, const char *results, char *prog, size_t cap)
{
    const char *dev = golden_device();
    snprintf(prog, cap, "import %s\n", module);
    for (const char *p = program; *p;) {
        const char *q = strstr(p, ".npy')");
        size_t n = q ? (size_t)(q - p) + 6 : strlen(p);
        golden_put(prog, cap, "%.*s", (int)n, p);
        if (q && dev)
            golden_put(prog, cap, ".to('%s')", dev);
        p += n;
    }
    golden_put(prog, cap, "\n");
    for (const char *p = results; dev && p && *p;) {
        int n = (int)strcspn(p, "=");
        golden_put(prog, cap, "assert %.*s is None or %.*s.device == device('%s'), %.*s.device\n", n, p, n, p, dev, n, p);
        golden_put(prog, cap, "%.*s = %.*s.cpu() if %.*s is not None else None\n", n, p, n, p, n, p);
        p += strcspn(p, " ");
        p += *p == ' ';
    }
}

double golden_value_at(const void *data, tdl_dtype dt, int64_t i)
{
    switch (dt) {
    case TDL_DTYPE_FLOAT32: return ((const float *)data)[i];
    case TDL_DTYPE_FLOAT64: return ((const double *)data)[i];
    case TDL_DTYPE_INT64: return (double)((const int64_t *)data)[i];
    case TDL_DTYPE_INT32: return ((const int32_t *)data)[i];
    default: return ((const unsigned char *)data)[i];
    }
}

static tdl_dtype npy_dtype(FcDType dt)
{
    switch (dt) {
    case FC_FLOAT32: return TDL_DTYPE_FLOAT32;
    case FC_FLOAT64: return TDL_DTYPE_FLOAT64;
    case FC_INT64: return TDL_DTYPE_INT64;
    case FC_INT32: return TDL_DTYPE_INT32;
    default: return TDL_DTYPE_BOOL;
    }
}

void golden_compare_npy(tdl_interp *T, const char *var, const char *path, double mag, const char *st_s, char *why,
                        size_t cap)
{
    FcView g;
    FcError ferr;
    if (fc_npy_load(path, &g, &ferr) != FC_OK) {
        golden_put(why, cap, "%s: %s", var, ferr.msg);
        return;
    }
    tdl_value *v = NULL;
    tdl_tensor_info yi;
    tdl_dtype want = npy_dtype(g.dtype);
    if (tdl_get_global(T, var, &v) != TDL_OK || tdl_tensor_read(T, v, TDL_DTYPE_ANY, &yi) != TDL_OK) {
        golden_put(why, cap, "reading %s: %s: %s", var, tdl_error_kind_name(tdl_error_kind_of(T)), tdl_error_message(T));
        goto out;
    }
    bool same = yi.ndim == g.ndim && yi.dtype == want;
    for (int k = 0; same && k < g.ndim; k++)
        same = yi.shape[k] == g.shape[k];
    if (!same) {
        golden_put(why, cap, "%s: %s (", var, tdl_dtype_name(yi.dtype));
        for (int k = 0; k < yi.ndim; k++)
            golden_put(why, cap, "%s%lld", k ? ", " : "", (long long)yi.shape[k]);
        golden_put(why, cap, "), want %s (", tdl_dtype_name(want));
        for (int k = 0; k < g.ndim; k++)
            golden_put(why, cap, "%s%lld", k ? ", " : "", (long long)g.shape[k]);
        golden_put(why, cap, ")");
        goto out;
    }
    if (mag < 0) {
        mag = 0.0;
        for (int64_t i = 0; i < yi.numel; i++)
            mag = fmax(mag, fabs(golden_value_at(g.data, want, i)));
    }
    double tol = want == TDL_DTYPE_FLOAT32 ? 1e-5 : want == TDL_DTYPE_FLOAT64 ? 1e-12 : 0.0;
    int64_t idx[FC_MAX_DIMS] = {0};
    for (int64_t i = 0; i < yi.numel; i++) {
        int64_t off = 0;
        for (int k = 0; k < yi.ndim; k++)
            off += idx[k] * yi.strides[k];
        double a = golden_value_at(yi.data, yi.dtype, off), b = golden_value_at(g.data, want, i);
        if (!(fabs(a - b) <= tol * (fabs(b) + mag)) && !(isnan(a) && isnan(b))) {
            golden_put(why, cap, "%s: at flat index %lld: tdl %.17g, torch %.17g (tolerance %.0e x (|torch| + %g))", var,
                (long long)i, a, b, tol, mag);
            goto out;
        }
        for (int k = yi.ndim - 1; k >= 0 && ++idx[k] == yi.shape[k]; k--)
            idx[k] = 0;
    }
    if (strcmp(st_s, "-") != 0) {
        char *p = (char *)st_s;
        for (int k = 0; k < yi.ndim; k++) {
            long long s = strtoll(p, &p, 10);
            if (*p == ',')
                p++;
            if (yi.shape[k] > 1 && s != yi.strides[k]) {
                golden_put(why, cap, "%s: strides (", var);
                for (int q = 0; q < yi.ndim; q++)
                    golden_put(why, cap, "%s%lld", q ? ", " : "", (long long)yi.strides[q]);
                golden_put(why, cap, "), want (%s) (dims of size 1 aside)", st_s);
                goto out;
            }
        }
    }
out:
    tdl_value_free(v);
    free(g.data);
}


void lines_collect(void *ud, const char *text, size_t len)
{
    Lines *l = ud;
    size_t n = strlen(l->text);
    if (n + len < sizeof l->text) {
        memcpy(l->text + n, text, len);
        l->text[n + len] = '\0';
    }
}
