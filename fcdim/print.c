/* print.c — the text of a tensor, exactly as PyTorch 1.13 prints it (torch/_tensor_str.py) with
 * its default options: precision 4, threshold 1000, edgeitems 3, linewidth 80, sci_mode None.
 *
 * The layout follows _tensor_str.py function by function: one formatter chooses a number style
 * and a common width from the elements that will be shown (_Formatter over get_summarized_data),
 * then the nested brackets are written with "..." in place of the middle of any dimension longer
 * than 2 * edgeitems once the tensor has more than threshold elements, 1-d rows wrapped at the
 * line width, and the suffixes (device, size of an empty tensor, dtype) go on the last line or,
 * when they would pass column 80, on lines of their own. Dtypes carry tdl's names ("int32"), but
 * the suffix is placed where torch places its longer "dtype=torch.int32", so that the text is
 * always torch's with "torch." taken out.
 *
 * Python formats a float with "{:.4f}", "{:.4e}" and "{:.0f}"; C's printf with the same
 * conversions rounds the exact binary value the same way, except that Python never prints a
 * sign on a NaN, so NaN and the infinities are written by hand.
 *
 * Works on a materialised FcView only; depends on nothing but fcdim.h and the C library. */
#include "fcdim.h"
#include "mem.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    PRINT_PRECISION = 4,
    PRINT_THRESHOLD = 1000,
    PRINT_EDGEITEMS = 3,
    PRINT_LINEWIDTH = 80,
    /* enough for "%.4f" of DBL_MAX, though the formatter never asks for more than ~20 chars */
    NUM_CAP = 352,
    /* one suffix: "size=(...)" of FC_MAX_DIMS sizes at most, or a device name */
    SUFFIX_CAP = FC_MAX_DIMS * 22 + 16
};

/* ---- a growing string; an allocation failure is remembered and reported once at the end ---- */

typedef struct StrBuf {
    char *p;
    size_t len, cap;
    bool failed;
} StrBuf;

static void sb_append(StrBuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *p = mem_realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(StrBuf *b, const char *s) { sb_append(b, s, strlen(s)); }

static void sb_repeat(StrBuf *b, char c, int n)
{
    char chunk[64];
    memset(chunk, c, sizeof chunk);
    while (n > 0) {
        int k = n < (int)sizeof chunk ? n : (int)sizeof chunk;
        sb_append(b, chunk, (size_t)k);
        n -= k;
    }
}

/* Hands the text to the caller (*out, to free) or frees it and reports the failed allocation. */
static FcStatus sb_finish(StrBuf *b, char **out, FcError *err)
{
    if (!b->failed && !b->p)
        sb_append(b, "", 0);
    if (b->failed) {
        mem_free(b->p);
        snprintf(err->msg, sizeof err->msg, "out of memory formatting a tensor");
        return FC_ERR_NOMEM;
    }
    *out = b->p;
    return FC_OK;
}

/* ---- elements ---- */

static const char *elem_at(const FcView *v, int64_t off)
{
    return (const char *)v->data + off * (int64_t)fc_dtype_size(v->dtype);
}

/* float16 and bfloat16 print as their float32 values (_tensor_str converts them with .float()). */
static double elem_double(FcDType t, const char *p) { return fc_scalar_load(t, p).f; }

static int64_t elem_int(FcDType t, const char *p) { return fc_scalar_load(t, p).i; }

typedef void (*ElemFn)(void *ctx, FcDType t, const char *p);

/* Calls fn on every element that will be shown, in order: all of them, or when summarize, only
 * the first and last PRINT_EDGEITEMS of each dimension longer than twice that (the elements of
 * get_summarized_data). */
static void visit_shown(const FcView *v, int dim, int64_t off, bool summarize, ElemFn fn, void *ctx)
{
    if (dim == v->ndim) {
        fn(ctx, v->dtype, elem_at(v, off));
        return;
    }
    int64_t n = v->shape[dim];
    for (int64_t i = 0; i < n; i++) {
        if (summarize && n > 2 * PRINT_EDGEITEMS && i == PRINT_EDGEITEMS)
            i = n - PRINT_EDGEITEMS;
        visit_shown(v, dim + 1, off + i * v->strides[dim], summarize, fn, ctx);
    }
}

/* ---- the formatter (_Formatter) ---- */

typedef struct Formatter {
    bool floating;
    bool int_mode;      /* every finite float is integral: "3." */
    bool sci_mode;      /* "1.0000e+08" */
    int max_width;
} Formatter;

/* What the first pass over the shown floats learns: the range of the nonzero finite values. */
typedef struct FloatScan {
    int64_t count;
    double min_abs, max_abs;
    bool integral;
} FloatScan;

static void scan_float(void *ctx, FcDType t, const char *p)
{
    FloatScan *s = ctx;
    double x = elem_double(t, p);
    if (!isfinite(x) || x == 0)
        return;
    double a = fabs(x);
    if (s->count == 0 || a < s->min_abs)
        s->min_abs = a;
    if (s->count == 0 || a > s->max_abs)
        s->max_abs = a;
    if (x != ceil(x))
        s->integral = false;
    s->count++;
}

/* The text of one element without padding; returns its length. */
static int format_number(const Formatter *f, FcDType t, const char *p, char *buf)
{
    if (!f->floating) {
        if (t == FC_BOOL)
            return snprintf(buf, NUM_CAP, "%s", elem_int(t, p) ? "True" : "False");
        return snprintf(buf, NUM_CAP, "%" PRId64, elem_int(t, p));
    }
    double x = elem_double(t, p);
    if (isnan(x))
        return snprintf(buf, NUM_CAP, "nan");
    if (isinf(x))
        return snprintf(buf, NUM_CAP, "%s", x < 0 ? "-inf" : "inf");
    if (f->sci_mode)
        return snprintf(buf, NUM_CAP, "%.*e", PRINT_PRECISION, x);
    if (f->int_mode)
        return snprintf(buf, NUM_CAP, "%.0f.", x);
    return snprintf(buf, NUM_CAP, "%.*f", PRINT_PRECISION, x);
}

/* The width pass: torch measures only the nonzero finite floats (and every int or bool). */
static void measure(void *ctx, FcDType t, const char *p)
{
    Formatter *f = ctx;
    if (f->floating) {
        double x = elem_double(t, p);
        if (!isfinite(x) || x == 0)
            return;
    }
    char buf[NUM_CAP];
    int n = format_number(f, t, p, buf);
    if (n > f->max_width)
        f->max_width = n;
}

static void formatter_init(Formatter *f, const FcView *v, bool summarize)
{
    f->floating = fc_dtype_is_float(v->dtype);
    f->int_mode = true;
    f->sci_mode = false;
    f->max_width = 1;
    if (f->floating) {
        FloatScan s = {0, 0, 0, true};
        visit_shown(v, 0, v->offset, summarize, scan_float, &s);
        if (s.count == 0)
            return;     /* only zeros, NaNs and infinities: int mode, width 1 */
        f->int_mode = s.integral;
        f->sci_mode = s.max_abs / s.min_abs > 1000.0 || s.max_abs > 1.0e8 ||
                      (!f->int_mode && s.min_abs < 1.0e-4);
    }
    visit_shown(v, 0, v->offset, summarize, measure, f);
}

/* One element right-aligned to the formatter's width (wider elements are not cut). */
static void put_elem(StrBuf *b, const Formatter *f, FcDType t, const char *p)
{
    char buf[NUM_CAP];
    int n = format_number(f, t, p, buf);
    sb_repeat(b, ' ', f->max_width - n);
    sb_append(b, buf, (size_t)n);
}

/* ---- layout (_vector_str, _tensor_str_with_formatter) ---- */

static void put_vector(StrBuf *b, const FcView *v, const Formatter *f, int64_t off, int indent,
                       bool summarize)
{
    int dim = v->ndim - 1;
    int64_t n = v->shape[dim];
    int element_length = f->max_width + 2;
    int room = PRINT_LINEWIDTH - indent;
    int per_line = room >= 0 ? room / element_length : -1;
    if (per_line < 1)
        per_line = 1;
    bool cut = summarize && n > 2 * PRINT_EDGEITEMS;

    sb_puts(b, "[");
    int64_t item = 0;   /* position in the row of items, " ..." counting as one */
    for (int64_t i = 0; i < n; i++, item++) {
        if (item > 0) {
            if (item % per_line == 0) {
                sb_puts(b, ",\n");
                sb_repeat(b, ' ', indent + 1);
            } else {
                sb_puts(b, ", ");
            }
        }
        if (cut && i == PRINT_EDGEITEMS) {
            sb_puts(b, " ...");
            i = n - PRINT_EDGEITEMS - 1;
            continue;
        }
        put_elem(b, f, v->dtype, elem_at(v, off + i * v->strides[dim]));
    }
    sb_puts(b, "]");
}

static void put_tensor(StrBuf *b, const FcView *v, const Formatter *f, int dim, int64_t off,
                       int indent, bool summarize)
{
    int rank = v->ndim - dim;
    if (rank == 0) {
        put_elem(b, f, v->dtype, elem_at(v, off));
        return;
    }
    if (rank == 1) {
        put_vector(b, v, f, off, indent, summarize);
        return;
    }
    int64_t n = v->shape[dim];
    bool cut = summarize && n > 2 * PRINT_EDGEITEMS;
    sb_puts(b, "[");
    for (int64_t i = 0; i < n; i++) {
        if (i > 0) {
            /* slices of a k-d tensor are separated by k - 1 newlines */
            sb_puts(b, ",");
            sb_repeat(b, '\n', rank - 1);
            sb_repeat(b, ' ', indent + 1);
        }
        if (cut && i == PRINT_EDGEITEMS) {
            sb_puts(b, "...");
            i = n - PRINT_EDGEITEMS - 1;
            continue;
        }
        put_tensor(b, v, f, dim + 1, off + i * v->strides[dim], indent + 1, summarize);
    }
    sb_puts(b, "]");
}

/* ---- entry points ---- */

/* Checks what the printer relies on; *numel gets the element count, capped just above the
 * threshold so that no product can overflow. */
static FcStatus check_view(const FcView *v, int64_t *numel, FcError *err)
{
    if (!v || (unsigned)v->dtype >= FC_DTYPE__COUNT || v->ndim < 0 || v->ndim > FC_MAX_DIMS) {
        snprintf(err->msg, sizeof err->msg, "cannot format a tensor: invalid view");
        return FC_ERR_VALUE;
    }
    int64_t count = 1;
    bool empty = false;
    for (int d = 0; d < v->ndim; d++) {
        if (v->shape[d] < 0) {
            snprintf(err->msg, sizeof err->msg,
                     "cannot format a tensor: negative size %" PRId64 " in dimension %d",
                     v->shape[d], d);
            return FC_ERR_VALUE;
        }
        if (v->shape[d] == 0)
            empty = true;
        else if (count <= PRINT_THRESHOLD)
            count = v->shape[d] > PRINT_THRESHOLD ? PRINT_THRESHOLD + 1 : count * v->shape[d];
    }
    *numel = empty ? 0 : count;
    if (*numel > 0 && !v->data) {
        snprintf(err->msg, sizeof err->msg, "cannot format a tensor: no data");
        return FC_ERR_VALUE;
    }
    return FC_OK;
}

static void put_body(StrBuf *b, const FcView *v, int64_t numel, int indent)
{
    if (numel == 0) {
        sb_puts(b, "[]");
        return;
    }
    bool summarize = numel > PRINT_THRESHOLD;
    Formatter f;
    formatter_init(&f, v, summarize);
    put_tensor(b, v, &f, 0, v->offset, indent, summarize);
}

FcStatus fc_format_tensor_body(const FcView *v, int indent, char **out, FcError *err)
{
    *out = NULL;
    int64_t numel;
    FcStatus st = check_view(v, &numel, err);
    if (st != FC_OK)
        return st;
    StrBuf b = {0};
    put_body(&b, v, numel, indent);
    return sb_finish(&b, out, err);
}

/* A suffix and its length as torch measures it: tdl writes "dtype=int32" where torch writes
 * "dtype=torch.int32", and places it as if it were the longer text, so that the layout is
 * torch's own with "torch." taken out. */
typedef struct Suffix {
    char text[SUFFIX_CAP];
    size_t torch_len;
} Suffix;

/* _add_suffixes: each suffix goes after ", " on the last line unless that line (counted, as torch
 * counts it, two longer than it is) would then pass the line width. */
static void put_suffixes(StrBuf *b, const Suffix *suffixes, int n, int indent)
{
    const char *nl = b->p ? strrchr(b->p, '\n') : NULL;
    size_t last_line_len = nl ? (size_t)(b->p + b->len - nl) + 1 : b->len + 2;
    for (int i = 0; i < n; i++) {
        size_t len = suffixes[i].torch_len;
        if (last_line_len + len + 2 > PRINT_LINEWIDTH) {
            sb_puts(b, ",\n");
            sb_repeat(b, ' ', indent);
            last_line_len = (size_t)indent + len;
        } else {
            sb_puts(b, ", ");
            last_line_len += len + 2;
        }
        sb_puts(b, suffixes[i].text);
    }
    sb_puts(b, ")");
}

FcStatus fc_format_tensor(const FcView *v, const char *device, char **out, FcError *err)
{
    return fc_format_tensor_grad(v, device, NULL, out, err);
}

FcStatus fc_format_tensor_grad(const FcView *v, const char *device, const char *grad, char **out, FcError *err)
{
    *out = NULL;
    int64_t numel;
    FcStatus st = check_view(v, &numel, err);
    if (st != FC_OK)
        return st;
    if ((device && strlen(device) > SUFFIX_CAP - 16) || (grad && strlen(grad) > SUFFIX_CAP - 16)) {
        snprintf(err->msg, sizeof err->msg, "cannot format a tensor: device name too long");
        return FC_ERR_VALUE;
    }

    static const char prefix[] = "tensor(";
    int indent = (int)strlen(prefix);
    StrBuf b = {0};
    sb_puts(&b, prefix);
    put_body(&b, v, numel, indent);

    /* the size of an empty tensor (unless 1-d) and a dtype that is not implied by the values */
    Suffix suffixes[4];
    int n = 0;
    if (device)
        snprintf(suffixes[n++].text, SUFFIX_CAP, "device='%s'", device);
    bool show_dtype;
    if (numel == 0) {
        if (v->ndim != 1) {
            /* Python's tuple: "(0, 3)"; a 1-tuple cannot occur, a 1-d size is not shown */
            char *t = suffixes[n++].text;
            int w = snprintf(t, SUFFIX_CAP, "size=(");
            for (int d = 0; d < v->ndim; d++)
                w += snprintf(t + w, SUFFIX_CAP - (size_t)w, "%s%" PRId64, d ? ", " : "",
                              v->shape[d]);
            snprintf(t + w, SUFFIX_CAP - (size_t)w, ")");
        }
        show_dtype = v->dtype != FC_FLOAT32;
    } else {
        show_dtype = v->dtype != FC_FLOAT32 && v->dtype != FC_INT64 && v->dtype != FC_BOOL;
    }
    for (int i = 0; i < n; i++)
        suffixes[i].torch_len = strlen(suffixes[i].text);
    if (show_dtype) {
        snprintf(suffixes[n].text, SUFFIX_CAP, "dtype=%s", fc_dtype_name(v->dtype));
        suffixes[n].torch_len = strlen(suffixes[n].text) + strlen("torch.");
        n++;
    }
    if (grad) {
        snprintf(suffixes[n].text, SUFFIX_CAP, "%s", grad);
        suffixes[n].torch_len = strlen(grad);
        n++;
    }
    put_suffixes(&b, suffixes, n, indent);
    return sb_finish(&b, out, err);
}
