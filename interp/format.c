/* format.c — text output: the growable Buf, Python's repr()/str() of every host value, and the
 * two pieces of text layout the rest of the interpreter shares (a double's repr, a string's repr).
 *
 * Depends only on interp.h. It never calls tdl code and never writes output itself: it appends
 * to a Buf and the caller decides where the text goes. A Buf that fails to grow records `nomem`
 * and ignores further text, so callers check once at the end instead of after every append.
 */
#include "interp.h"
#include "mem.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Buf ------------------------------------------------------------------------------------ */

/* Makes room for n more bytes plus a NUL; false (and nomem set) when that is impossible. */
static bool buf_reserve(Buf *b, size_t n)
{
    if (b->nomem) return false;
    if (n > SIZE_MAX / 2 - b->n - 1) {
        b->nomem = true;
        return false;
    }
    size_t need = b->n + n + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    char *p = mem_realloc(b->p, cap);
    if (!p) {
        b->nomem = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void buf_put(Buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n)) return;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void buf_puts(Buf *b, const char *s)
{
    buf_put(b, s, strlen(s));
}

void buf_printf(Buf *b, const char *fmt, ...)
{
    if (b->nomem) return;
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        buf_put(b, small, (size_t)n);
        return;
    }
    if (!buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void buf_free(Buf *b)
{
    if (!b) return;
    mem_free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
    b->nomem = false;
}

/* ---- doubles -------------------------------------------------------------------------------- */

/* CPython's repr(float): the shortest digit string that reads back as d (the correctly rounded
 * %.Ne with the fewest digits that round-trips is also the closest such string), laid out in
 * fixed notation when -4 < decpt <= 16 (value = 0.DIGITS x 10^decpt), else in scientific. */
/* Reads "%.*e" output "D[.DDD]e[+-]XX" into a digit string and a decimal exponent. */
static void split_e(const char *tmp, char *digits, int *nd, int *exp10)
{
    const char *p = tmp;
    *nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[(*nd)++] = *p;
    *exp10 = atoi(p + 1);
}

/* Does the decimal digits[0..nd) x 10^(exp10 - nd + 1) read back as d? */
static bool reads_back(double d, const char *digits, int nd, int exp10, long double *dist)
{
    char tmp[48];
    snprintf(tmp, sizeof tmp, "%c.%.*se%d", digits[0], nd - 1, digits + 1, exp10);
    if (strtod(tmp, NULL) != d) return false;
    long double v = strtold(tmp, NULL);
    *dist = fabsl(v - (long double)d);
    return true;
}

/* The shortest digit string that reads back as d (d > 0, finite), and the closest of those to
 * d, as CPython's repr (dtoa mode 0). At each length the correctly rounded string is tried first;
 * next to a power of two the rounding interval is lopsided, so its neighbours are tried too. */
static void shortest_digits(double d, char *digits, int *nd, int *exp10)
{
    char tmp[48];
    for (int prec = 0; prec <= 16; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec, d);
        split_e(tmp, digits, nd, exp10);
        long double dist;
        if (reads_back(d, digits, *nd, *exp10, &dist)) return;
        char up[24], down[24];
        int eu = *exp10, ed = *exp10;
        memcpy(up, digits, (size_t)*nd);
        memcpy(down, digits, (size_t)*nd);
        int k = *nd - 1;
        while (k >= 0 && up[k] == '9') up[k--] = '0';
        if (k >= 0) up[k]++;
        else { up[0] = '1'; eu++; }            /* 9.99 -> 1.00e+1 */
        k = *nd - 1;
        while (k >= 0 && down[k] == '0') down[k--] = '9';
        bool down_ok = k >= 0;
        if (k >= 0) down[k]--;
        if (down[0] == '0') {                  /* 1.00 -> 9.99e-1 */
            memmove(down, down + 1, (size_t)(*nd - 1));
            down[*nd - 1] = '9';
            ed--;
        }
        long double du = 0, dd = 0;
        bool u = reads_back(d, up, *nd, eu, &du);
        bool w = down_ok && reads_back(d, down, *nd, ed, &dd);
        if (u || w) {
            if (u && (!w || du <= dd)) { memcpy(digits, up, (size_t)*nd); *exp10 = eu; }
            else { memcpy(digits, down, (size_t)*nd); *exp10 = ed; }
            return;
        }
    }
    snprintf(tmp, sizeof tmp, "%.16e", d);
    split_e(tmp, digits, nd, exp10);
}

int format_double(double d, char *buf)
{
    if (isnan(d)) return sprintf(buf, "nan");
    if (isinf(d)) return sprintf(buf, d < 0 ? "-inf" : "inf");

    char *o = buf;
    if (signbit(d)) {
        *o++ = '-';
        d = -d;
    }
    char digits[24];
    int nd = 0, exp10 = 0;
    shortest_digits(d, digits, &nd, &exp10);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int decpt = exp10 + 1;

    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -decpt; i++) *o++ = '0';
            memcpy(o, digits, (size_t)nd);
            o += nd;
        } else if (decpt < nd) {
            memcpy(o, digits, (size_t)decpt);
            o += decpt;
            *o++ = '.';
            memcpy(o, digits + decpt, (size_t)(nd - decpt));
            o += nd - decpt;
        } else {
            memcpy(o, digits, (size_t)nd);
            o += nd;
            for (int i = nd; i < decpt; i++) *o++ = '0';
            *o++ = '.';
            *o++ = '0';
        }
    } else {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(nd - 1));
            o += nd - 1;
        }
        o += sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
    *o = '\0';
    return (int)(o - buf);
}

/* ---- strings -------------------------------------------------------------------------------- */

/* Decodes one UTF-8 sequence at s[0..n); *cp gets the code point, the result is its length in
 * bytes, or 0 for a malformed sequence. Shared with builtins.c (declared there until interp.h
 * has it). */
size_t fmt_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
size_t fmt_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    size_t len;
    uint32_t v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        v = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        v = c & 0x07;
    } else {
        return 0;
    }
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF))) return 0;
    *cp = v;
    return len;
}

/* Whether Python's str.isprintable() is false for a non-ASCII code point. Covers the control,
 * format, separator, surrogate and private-use ranges; unassigned code points print as is. */
bool unicode_unprintable(uint32_t c)
{
    static const uint32_t ranges[][2] = {
        {0x80, 0xA0}, {0xAD, 0xAD}, {0x600, 0x605}, {0x61C, 0x61C}, {0x6DD, 0x6DD},
        {0x70F, 0x70F}, {0x890, 0x891}, {0x8E2, 0x8E2}, {0x1680, 0x1680}, {0x180E, 0x180E},
        {0x2000, 0x200F}, {0x2028, 0x202F}, {0x205F, 0x2064}, {0x2066, 0x206F},
        {0x3000, 0x3000}, {0xD800, 0xF8FF}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB},
        {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3},
        {0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F}, {0xF0000, 0x10FFFF},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (c >= ranges[i][0] && c <= ranges[i][1]) return true;
    return false;
}

void format_str_repr(const char *s, size_t len, Buf *b)
{
    const unsigned char *u = (const unsigned char *)s;
    bool has_sq = memchr(s, '\'', len) != NULL;
    bool has_dq = memchr(s, '"', len) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    buf_put(b, &q, 1);
    size_t run = 0;     /* start of the pending run of bytes copied verbatim */
    for (size_t i = 0; i < len;) {
        unsigned c = u[i];
        const char *esc = NULL;
        char hex[12];
        size_t adv = 1;
        if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c == (unsigned char)q) esc = q == '\'' ? "\\'" : "\\\"";
        else if (c < 0x20 || c == 0x7F) {
            snprintf(hex, sizeof hex, "\\x%02x", c);
            esc = hex;
        } else if (c >= 0x80) {
            uint32_t cp;
            adv = fmt_utf8_decode(u + i, len - i, &cp);
            if (adv == 0) {
                /* Not UTF-8: show the byte rather than pass a broken sequence on. */
                adv = 1;
                snprintf(hex, sizeof hex, "\\x%02x", c);
                esc = hex;
            } else if (unicode_unprintable(cp)) {
                if (cp <= 0xFF) snprintf(hex, sizeof hex, "\\x%02x", (unsigned)cp);
                else if (cp <= 0xFFFF) snprintf(hex, sizeof hex, "\\u%04x", (unsigned)cp);
                else snprintf(hex, sizeof hex, "\\U%08x", (unsigned)cp);
                esc = hex;
            }
        }
        if (esc) {
            buf_put(b, s + run, i - run);
            buf_puts(b, esc);
            run = i + adv;
        }
        i += adv;
    }
    buf_put(b, s + run, len - run);
    buf_put(b, &q, 1);
}

/* ---- repr / str ----------------------------------------------------------------------------- */

/* The containers being printed, innermost first: a container met again prints as [...] / (...). */
typedef struct ReprFrame {
    const Obj *o;
    const struct ReprFrame *up;
    int depth;
} ReprFrame;

#define REPR_MAX_DEPTH 1000

static bool repr_rec(Interp *I, Value v, Buf *b, const ReprFrame *up);

static bool repr_items(Interp *I, const Value *items, size_t n, Buf *b, const ReprFrame *fr)
{
    for (size_t i = 0; i < n; i++) {
        if (i) buf_put(b, ", ", 2);
        if (!repr_rec(I, items[i], b, fr)) return false;
        if (b->nomem) return err_nomem(I);
    }
    return true;
}

/* The item printer dict_repr calls back, with the frame of the dict being printed. */
static bool repr_dict_item(Interp *I, Value v, Buf *b, const void *fr)
{
    return repr_rec(I, v, b, fr);
}

static bool repr_container(Interp *I, Value v, Buf *b, const ReprFrame *up)
{
    int depth = up ? up->depth + 1 : 1;
    for (const ReprFrame *f = up; f; f = f->up) {
        if (f->o == v.o) {
            buf_puts(b, v.tag == V_LIST ? "[...]" : v.tag == V_TUPLE ? "(...)" : "{...}");
            return true;
        }
    }
    if (depth > REPR_MAX_DEPTH)
        return err_raise(I, TDL_ERR_RECURSION,
                         "maximum recursion depth exceeded while getting the repr of an object");
    ReprFrame fr = {v.o, up, depth};
    if (v.tag == V_DICT || v.tag == V_SET || v.tag == V_FROZENSET || v.tag == V_DICTVIEW) {
        /* a view prints its dict's items: the dict is what may contain itself */
        if (v.tag == V_DICTVIEW) fr.o = &((DictViewObj *)v.o)->d->h;
        if (!dict_repr(I, v, b, repr_dict_item, &fr)) return false;
    } else if (v.tag == V_LIST) {
        /* Items are re-read by index each time: nothing here can run tdl code, but being
         * defensive about n costs nothing. */
        ListObj *l = as_list(v);
        buf_put(b, "[", 1);
        for (size_t i = 0; i < l->n; i++) {
            if (i) buf_put(b, ", ", 2);
            if (!repr_rec(I, l->items[i], b, &fr)) return false;
            if (b->nomem) return err_nomem(I);
        }
        buf_put(b, "]", 1);
    } else {
        TupleObj *t = as_tuple(v);
        if (t->fields) {
            buf_printf(b, "%s(", t->fields->type);
            for (size_t i = 0; i < t->n; i++) {
                buf_printf(b, "\n%s=", t->fields->names[i]);
                if (!repr_rec(I, t->items[i], b, &fr)) return false;
                if (b->nomem) return err_nomem(I);
                if (i + 1 < t->n) buf_put(b, ",", 1);
            }
            buf_put(b, ")", 1);
            return true;
        }
        buf_put(b, "(", 1);
        if (!repr_items(I, t->items, t->n, b, &fr)) return false;
        buf_puts(b, t->n == 1 ? ",)" : ")");
    }
    return true;
}

static bool repr_rec(Interp *I, Value v, Buf *b, const ReprFrame *up)
{
    char num[40];
    switch ((ValueTag)v.tag) {
    case V_UNDEF:
        buf_puts(b, "<undefined>");
        break;
    case V_NONE:
        buf_puts(b, "None");
        break;
    case V_BOOL:
        buf_puts(b, v.b ? "True" : "False");
        break;
    case V_INT:
        buf_printf(b, "%" PRId64, v.i);
        break;
    case V_FLOAT:
        buf_put(b, num, (size_t)format_double(v.f, num));
        break;
    case V_TYPE:
        buf_printf(b, "<class '%s'>", type_name((TypeId)v.i));
        break;
    case V_STR:
        format_str_repr(as_str(v)->data, as_str(v)->len, b);
        break;
    case V_TUPLE:
    case V_LIST:
    case V_DICT: case V_SET: case V_FROZENSET: case V_DICTVIEW:
        if (!repr_container(I, v, b, up)) return false;
        break;
    case V_SLICE: {
        SliceObj *sl = as_slice(v);
        buf_puts(b, "slice(");
        if (!repr_rec(I, sl->start, b, up)) return false;
        buf_puts(b, ", ");
        if (!repr_rec(I, sl->stop, b, up)) return false;
        buf_puts(b, ", ");
        if (!repr_rec(I, sl->step, b, up)) return false;
        buf_puts(b, ")");
        break;
    }
    case V_RANGE: {
        RangeObj *r = as_range(v);
        if (r->step == 1) buf_printf(b, "range(%" PRId64 ", %" PRId64 ")", r->start, r->stop);
        else
            buf_printf(b, "range(%" PRId64 ", %" PRId64 ", %" PRId64 ")", r->start, r->stop,
                       r->step);
        break;
    }
    case V_FUNC: {
        FuncObj *f = as_func(v);
        buf_printf(b, "<function %s at %p>", f->fn && f->fn->name ? f->fn->name : "?",
                   (void *)f);
        break;
    }
    case V_BUILTIN: {
        BuiltinObj *bo = as_builtin(v);
        const char *name = bo->def && bo->def->name ? bo->def->name : "?";
        if (bo->def == &help_builtin) {
            buf_puts(b, help_hint);     /* as Python's help: `help` alone says how to get help */
        } else if (bo->unbound) {
            buf_printf(b, "<method '%s' of '%s' objects>", name, type_name((TypeId)bo->self.i));
        } else if (bo->self.tag == V_UNDEF) {
            buf_printf(b, "<built-in function %s>", name);
        } else if (IS_OBJ(bo->self)) {
            buf_printf(b, "<built-in method %s of %s object at %p>", name,
                       val_type_name(bo->self), (void *)bo->self.o);
        } else {
            buf_printf(b, "<built-in method %s of %s object>", name, val_type_name(bo->self));
        }
        break;
    }
    case V_MODULE: {
        Module *m = as_module(v);
        const char *name = m->name ? m->name : "?";
        if (m->path) buf_printf(b, "<module '%s' from '%s'>", name, m->path);
        else buf_printf(b, "<module '%s'>", name);
        break;
    }
    case V_CELL:
        buf_printf(b, "<cell at %p>", (void *)v.o);
        break;
    case V_CTXMGR:
        buf_printf(b, "<%s object at %p>", ((CtxMgrObj *)v.o)->name ? ((CtxMgrObj *)v.o)->name : "context_manager",
                   (void *)v.o);
        break;
    case V_EXCTYPE:
        buf_printf(b, "<class '%s'>", tdl_error_kind_name((tdl_error_kind)v.i));
        break;
    case V_CLASS: case V_INSTANCE: case V_METHOD: case V_DESCR: case V_SUPER:
        if (!class_repr(I, v, b, false)) return false;
        break;
    case V_NOTIMPL:
        buf_puts(b, "NotImplemented");
        break;
    case V_EXC: {
        ExcObj *e = (ExcObj *)v.o;
        TupleObj *t = as_tuple(e->args);
        if (e->cls) {   /* a user exception class may have its own __repr__ */
            Value r;
            bool found;
            if (!class_call_dunder(I, v, "__repr__", NULL, 0, &r, &found)) return false;
            if (found) {
                bool ok = r.tag == V_STR || err_raise(I, TDL_ERR_TYPE, "__repr__ returned non-string (type %s)", val_type_name(r));
                if (ok) buf_put(b, as_str(r)->data, as_str(r)->len);
                val_decref(I, r);
                if (!ok) return false;
                break;
            }
        }
        buf_printf(b, "%s(", val_type_name(v));
        for (size_t k = 0; k < t->n; k++) {
            if (k) buf_puts(b, ", ");
            if (!repr_rec(I, t->items[k], b, up)) return false;
        }
        buf_puts(b, ")");
        break;
    }
    case V_GEN:
        buf_printf(b, "<generator object %s at %p>", ((GenObj *)v.o)->fn->name, (void *)v.o);
        break;
    case V_ITER:
        buf_printf(b, "<%s object at %p>", val_type_name(v), (void *)v.o);
        break;
    case V_TENSOR:
        if (!tensor_repr(I, v, b)) return false;
        break;
    case V_DIM:
        buf_puts(b, as_dim(v)->name);
        break;
    case V_DIMLIST: {
        DimListObj *l = as_dimlist(v);
        if (!l->bound) {
            buf_printf(b, "*%s", l->name);
            break;
        }
        buf_puts(b, "(");
        for (int k = 0; k < l->n; k++) buf_printf(b, "%s%s", k ? ", " : "", l->dims[k]->name);
        buf_puts(b, l->n == 1 ? ",)" : ")");
        break;
    }
    case V_DTYPE:
        buf_puts(b, fc_dtype_name((FcDType)v.i));
        break;
    case V_DEVICE: {
        FcDevice d = device_of(v);
        if (d.type == FC_DEV_CPU) buf_puts(b, "device(type='cpu')");
        else buf_printf(b, "device(type='cuda', index=%d)", d.index);
        break;
    }
    case V_MEMFMT: {
        static const char *const names[] = {
            [FC_MF_PRESERVE] = "preserve_format", [FC_MF_CONTIGUOUS] = "contiguous_format",
            [FC_MF_CHANNELS_LAST] = "channels_last", [FC_MF_CHANNELS_LAST_3D] = "channels_last_3d",
        };
        buf_puts(b, (uint64_t)v.i < sizeof names / sizeof names[0] ? names[v.i] : "?");
        break;
    }
    default:
        buf_printf(b, "<%s object>", val_type_name(v));
        break;
    }
    if (b->nomem) return err_nomem(I);
    return true;
}

bool val_repr(Interp *I, Value v, Buf *b)
{
    return repr_rec(I, v, b, NULL);
}

bool val_ascii(Interp *I, Value v, Buf *b)
{
    Buf r = {0};
    if (!val_repr(I, v, &r)) {
        buf_free(&r);
        return false;
    }
    for (size_t i = 0; i < r.n;) {
        unsigned char c = (unsigned char)r.p[i];
        uint32_t cp;
        size_t k = c < 0x80 ? 0 : fmt_utf8_decode((const unsigned char *)r.p + i, r.n - i, &cp);
        if (k == 0) {
            buf_put(b, r.p + i, 1);
            i++;
            continue;
        }
        if (cp < 0x100) buf_printf(b, "\\x%02x", (unsigned)cp);
        else if (cp < 0x10000) buf_printf(b, "\\u%04x", (unsigned)cp);
        else buf_printf(b, "\\U%08x", (unsigned)cp);
        i += k;
    }
    buf_free(&r);
    if (b->nomem || r.nomem) return err_nomem(I);
    return true;
}

bool val_str(Interp *I, Value v, Buf *b)
{
    if (v.tag == V_STR) {
        buf_put(b, as_str(v)->data, as_str(v)->len);
        if (b->nomem) return err_nomem(I);
        return true;
    }
    if (v.tag == V_INSTANCE) {
        if (!class_repr(I, v, b, true)) return false;
        if (b->nomem) return err_nomem(I);
        return true;
    }
    if (v.tag == V_EXC && ((ExcObj *)v.o)->cls) {
        Value r;
        bool found;
        if (!class_call_dunder(I, v, "__str__", NULL, 0, &r, &found)) return false;
        if (found) {
            bool ok = r.tag == V_STR || err_raise(I, TDL_ERR_TYPE, "__str__ returned non-string (type %s)", val_type_name(r));
            if (ok) buf_put(b, as_str(r)->data, as_str(r)->len);
            val_decref(I, r);
            if (ok && b->nomem) return err_nomem(I);
            return ok;
        }
    }
    if (v.tag == V_EXC) {
        StrObj *m = as_str(((ExcObj *)v.o)->msg);
        buf_put(b, m->data, m->len);
        if (b->nomem) return err_nomem(I);
        return true;
    }
    if (v.tag == V_DEVICE) {    /* str(device) is its name, as torch: "cpu", "cuda:0" */
        char name[24];
        buf_puts(b, fc_device_name(device_of(v), name));
        if (b->nomem) return err_nomem(I);
        return true;
    }
    return repr_rec(I, v, b, NULL);
}
