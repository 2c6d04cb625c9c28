/* builtins.c — the builtin functions (print, len, range, min, sorted, ...), the builtin types
 * called as constructors (int(x), float(s), list(it), ...), and the methods of list, str and tuple.
 *
 * Python's behaviour is the specification, down to the wording of error messages. This file
 * depends only on interp.h: values are made with its constructors, compared and combined with the
 * val_* operations and walked with iter_*; the only tdl code it runs is through call_value (a
 * key= function). Reference rule as in interp.h: arguments are borrowed, *out is a new reference,
 * and every error path releases what it holds. Integer results never wrap: they raise
 * OverflowError instead, because tdl ints are 64-bit where Python's are unbounded.
 *
 * Argument counts and keyword names are checked by the caller through builtin_check_args before
 * a BuiltinFn runs, so each function may index args[0 .. def->min_args) without checking.
 */
#include "interp.h"
#include "mem.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* 128-bit arithmetic for exact integer rounding and modular products (a GNU C extension). */
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

#define LISTV(l) v_obj(V_LIST, &(l)->h)
#define TUPLEV(t) v_obj(V_TUPLE, &(t)->h)

#define BUILTIN_ARGS Interp *I, Value self, const Value *args, int nargs, \
                     const char *const *kwnames, int nkw, Value *out

static Value mk_type(TypeId t)
{
    Value v = {.tag = V_TYPE, .i = t};
    return v;
}

/* ---- small helpers -------------------------------------------------------------------------- */

static int kw_index(const char *const *kwnames, int nkw, const char *name)
{
    for (int k = 0; k < nkw; k++)
        if (kwnames && strcmp(kwnames[k], name) == 0) return k;
    return -1;
}

/* The parameter at position pos (or -1 for keyword-only) that may also be passed as keyword
 * `name`. *given tells whether it was passed; *v is borrowed. */
static bool get_param(Interp *I, const char *fname, const Value *args, int nargs,
                      const char *const *kwnames, int nkw, int pos, const char *name, Value *v,
                      bool *given)
{
    int k = kw_index(kwnames, nkw, name);
    *given = false;
    if (pos >= 0 && pos < nargs) {
        if (k >= 0)
            return err_raise(I, TDL_ERR_TYPE, "argument for %s() given by name ('%s') and position (%d)",
                             fname, name, pos + 1);
        *v = args[pos];
        *given = true;
    } else if (k >= 0) {
        *v = args[nargs + k];
        *given = true;
    }
    return true;
}

/* An argument used as an integer (Python's PyNumber_Index): an int, a bool or a one-element
 * integer tensor. */
static bool as_index(Interp *I, Value v, int64_t *out)
{
    if (!has_index(v))
        return err_raise(I, TDL_ERR_TYPE, "'%s' object cannot be interpreted as an integer",
                         val_type_name(v));
    return val_index(I, v, out);
}

static bool overflow(Interp *I)
{
    return err_raise(I, TDL_ERR_OVERFLOW, "integer overflow");
}

static bool int_too_large(Interp *I)
{
    return err_raise(I, TDL_ERR_OVERFLOW, "int too large to convert (tdl ints are 64-bit)");
}

/* Turns a Buf into a str value and frees the Buf. */
static bool buf_to_str(Interp *I, Buf *b, Value *out)
{
    bool ok = b->nomem ? err_nomem(I) : str_new(I, b->p ? b->p : "", b->n, out);
    buf_free(b);
    return ok;
}

/* Python's repr of a str, cut to at most 200 code points (Python's "%.200R" in messages),
 * into a NUL-terminated Buf the caller frees. */
static void repr_for_msg(Value s, Buf *b)
{
    format_str_repr(as_str(s)->data, as_str(s)->len, b);
    if (b->nomem || !b->p) return;
    size_t chars = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (((unsigned char)b->p[i] & 0xC0) != 0x80 && ++chars > 200) {
            b->n = i;
            b->p[i] = '\0';
            break;
        }
    }
}

/* Identity first, then ==, as Python's list.index / count / remove do. */
static bool same_or_equal(Interp *I, Value a, Value b, bool *eq)
{
    if (IS_OBJ(a) && IS_OBJ(b) && a.o == b.o) {
        *eq = true;
        return true;
    }
    return val_equal(I, a, b, eq);
}


/* ---- UTF-8 and string positions ------------------------------------------------------------- */

/* Bytes of the character starting at s[i] (1 for a stray byte). */
static size_t char_len(const char *s, size_t n, size_t i)
{
    uint32_t cp;
    size_t k = fmt_utf8_decode((const unsigned char *)s + i, n - i, &cp);
    return k ? k : 1;
}

/* Start of the character that ends at s[hi) (hi > lo). */
static size_t char_start_before(const char *s, size_t lo, size_t hi)
{
    size_t p = hi - 1;
    while (p > lo && hi - p < 4 && ((unsigned char)s[p] & 0xC0) == 0x80) p--;
    return p;
}

/* Bytes of the character at s[i] when Python's str.isspace() holds for it, else 0. */
static size_t space_len(const char *s, size_t n, size_t i)
{
    unsigned c = (unsigned char)s[i];
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    uint32_t cp;
    size_t k = fmt_utf8_decode((const unsigned char *)s + i, n - i, &cp);
    if (!k) return 0;
    if (cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
        cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000)
        return k;
    return 0;
}

/* Byte offset of code point index cp (0 <= cp <= nchars). */
static size_t cp_to_byte(const StrObj *s, int64_t cp)
{
    if (s->len == s->nchars) return (size_t)cp;
    size_t i = 0;
    for (int64_t k = 0; k < cp && i < s->len; k++) i += char_len(s->data, s->len, i);
    return i;
}

/* Code point index of byte offset b (at a character boundary). */
static int64_t byte_to_cp(const StrObj *s, size_t b)
{
    if (s->len == s->nchars) return (int64_t)b;
    int64_t n = 0;
    for (size_t i = 0; i < b; i++)
        if (((unsigned char)s->data[i] & 0xC0) != 0x80) n++;
    return n;
}

/* Appends code point cp as UTF-8 to p; returns the length. */
static int utf8_encode(uint32_t cp, char *p)
{
    if (cp < 0x80) {
        p[0] = (char)cp;
        return 1;
    } else if (cp < 0x800) {
        p[0] = (char)(0xC0 | (cp >> 6));
        p[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    } else if (cp < 0x10000) {
        p[0] = (char)(0xE0 | (cp >> 12));
        p[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        p[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    p[0] = (char)(0xF0 | (cp >> 18));
    p[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    p[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    p[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ---- sorting -------------------------------------------------------------------------------- */

typedef struct SortItem { Value key, val; } SortItem;

static bool sort_lt(Interp *I, Value a, Value b, bool *lt)
{
    if (a.tag == V_INT && b.tag == V_INT) {
        *lt = a.i < b.i;
        return true;
    }
    return val_compare(I, OP_LT, a, b, lt);
}

/* Stable merge sort on keys with `<` only, as Python's sort. On error the array is still a
 * permutation of its input, so the caller can release the keys it holds. */
static bool merge_sort(Interp *I, SortItem *a, SortItem *tmp, size_t n)
{
    bool lt;
    if (n < 2) return true;
    if (n <= 8) {
        for (size_t i = 1; i < n; i++) {
            SortItem x = a[i];
            size_t j = i;
            while (j > 0) {
                if (!sort_lt(I, x.key, a[j - 1].key, &lt)) {
                    a[j] = x;
                    return false;
                }
                if (!lt) break;
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
        return true;
    }
    size_t mid = n / 2;
    if (!merge_sort(I, a, tmp, mid) || !merge_sort(I, a + mid, tmp, n - mid)) return false;
    if (!sort_lt(I, a[mid].key, a[mid - 1].key, &lt)) return false;
    if (!lt) return true;       /* already in order */
    memcpy(tmp, a, mid * sizeof *a);
    size_t i = 0, j = mid, k = 0;
    while (i < mid && j < n) {
        if (!sort_lt(I, a[j].key, tmp[i].key, &lt)) {
            /* The gap a[k..j) is exactly as long as what is left of tmp. */
            memcpy(a + k, tmp + i, (mid - i) * sizeof *a);
            return false;
        }
        a[k++] = lt ? a[j++] : tmp[i++];
    }
    while (i < mid) a[k++] = tmp[i++];
    return true;
}

static void reverse_values(Value *v, size_t n)
{
    for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
        Value t = v[i];
        v[i] = v[j - 1];
        v[j - 1] = t;
    }
}

static void reverse_items(SortItem *v, size_t n)
{
    for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
        SortItem t = v[i];
        v[i] = v[j - 1];
        v[j - 1] = t;
    }
}

/* Sorts vals[0..n) in place (a permutation; ownership unchanged). key: None or a callable. */
static bool sort_values(Interp *I, Value *vals, size_t n, Value key, bool reverse)
{
    if (n < 2 && key.tag == V_NONE) return true;
    bool haskey = key.tag != V_NONE;
    SortItem *a = mem_malloc((n ? n : 1) * sizeof *a);
    SortItem *tmp = mem_malloc((n / 2 + 1) * sizeof *tmp);
    if (!a || !tmp) {
        mem_free(a);
        mem_free(tmp);
        return err_nomem(I);
    }
    size_t nkeys = 0;
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        a[i].val = vals[i];
        if (haskey) {
            if (!call_value(I, key, &vals[i], 1, NULL, 0, &a[i].key)) {
                ok = false;
                break;
            }
            nkeys++;
        } else {
            a[i].key = vals[i];
        }
    }
    if (ok) {
        if (reverse) reverse_items(a, n);
        ok = merge_sort(I, a, tmp, n);
        if (ok) {
            if (reverse) reverse_items(a, n);
            for (size_t i = 0; i < n; i++) vals[i] = a[i].val;
        }
    }
    /* After a failed key call the keys are a[0..nkeys); once all are made, sorting only
     * permutes a[0..n). */
    for (size_t i = 0; i < nkeys; i++) val_decref(I, a[i].key);
    mem_free(a);
    mem_free(tmp);
    return ok;
}

/* key=None, reverse=False keywords of sorted() and list.sort(). */
static bool sort_options(Interp *I, const Value *args, int nargs, const char *const *kwnames,
                         int nkw, Value *key, bool *reverse)
{
    *key = v_none();
    *reverse = false;
    for (int k = 0; k < nkw; k++) {
        Value v = args[nargs + k];
        if (strcmp(kwnames[k], "key") == 0) {
            *key = v;
        } else if (strcmp(kwnames[k], "reverse") == 0) {
            if (v.tag == V_BOOL) *reverse = v.b;
            else if (v.tag == V_INT) *reverse = v.i != 0;
            else
                return err_raise(I, TDL_ERR_TYPE, "'%s' object cannot be interpreted as an integer",
                                 val_type_name(v));
        }
    }
    return true;
}

/* ---- builtin functions ---------------------------------------------------------------------- */

static bool bi_print(BUILTIN_ARGS)
{
    const char *sep = " ", *end = "\n";
    size_t seplen = 1, endlen = 1;
    bool flush = false;
    for (int k = 0; k < nkw; k++) {
        Value v = args[nargs + k];
        bool is_sep = strcmp(kwnames[k], "sep") == 0;
        if (!is_sep && strcmp(kwnames[k], "end") != 0) {                /* flush */
            if (!val_truthy(I, v, &flush)) return false;
            continue;
        }
        if (v.tag == V_NONE) continue;
        if (v.tag != V_STR)
            return err_raise(I, TDL_ERR_TYPE, "%s must be None or a string, not %s",
                             is_sep ? "sep" : "end", val_type_name(v));
        if (is_sep) {
            sep = as_str(v)->data;
            seplen = as_str(v)->len;
        } else {
            end = as_str(v)->data;
            endlen = as_str(v)->len;
        }
    }
    Buf b = {0};
    for (int i = 0; i < nargs; i++) {
        if (i) buf_put(&b, sep, seplen);
        if (!val_str(I, args[i], &b)) {
            buf_free(&b);
            return false;
        }
    }
    buf_put(&b, end, endlen);
    if (b.nomem) {
        buf_free(&b);
        return err_nomem(I);
    }
    interp_write(I, b.p ? b.p : "", b.n);
    buf_free(&b);
    if (flush && !I->cfg.write) fflush(stdout);     /* a host's write callback has no buffer of ours */
    *out = v_none();
    return true;
}

static bool bi_len(BUILTIN_ARGS)
{
    int64_t n;
    if (!val_len(I, args[0], &n)) return false;
    *out = v_int(n);
    return true;
}

static bool bi_range(BUILTIN_ARGS)
{
    int64_t a[3] = {0, 0, 1};
    for (int i = 0; i < nargs; i++)
        if (!as_index(I, args[i], &a[i])) return false;
    if (nargs == 1) {
        a[1] = a[0];
        a[0] = 0;
    }
    if (a[2] == 0) return err_raise(I, TDL_ERR_VALUE, "range() arg 3 must not be zero");
    return range_new(I, a[0], a[1], a[2], out);
}

/* min() and max(): several arguments or one iterable; key= and default= keywords. */
static bool min_max(Interp *I, const Value *args, int nargs, const char *const *kwnames, int nkw,
                    Value *out, LangOp op, const char *name)
{
    Value key = v_none(), dflt = v_undef();
    for (int k = 0; k < nkw; k++) {
        if (strcmp(kwnames[k], "key") == 0) key = args[nargs + k];
        else if (strcmp(kwnames[k], "default") == 0) dflt = args[nargs + k];
    }
    if (nargs > 1 && dflt.tag != V_UNDEF)
        return err_raise(I, TDL_ERR_TYPE,
                         "Cannot specify a default for %s() with multiple positional arguments", name);
    ListObj *owned = NULL;
    const Value *items;
    size_t n;
    if (nargs > 1) {
        items = args;
        n = (size_t)nargs;
    } else {
        if (!list_from_iterable(I, args[0], &owned)) return false;
        items = owned->items;
        n = owned->n;
    }
    /* items is either the argument array or our own copy of the iterable, so a key function
     * cannot change it under us. */
    Value best = v_undef(), bestkey = v_undef();
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        Value x = items[i], kx = x;
        if (key.tag != V_NONE) {
            if (!call_value(I, key, &x, 1, NULL, 0, &kx)) {
                ok = false;
                break;
            }
        } else {
            val_incref(kx);
        }
        bool better = best.tag == V_UNDEF;
        if (!better && !val_compare(I, op, kx, bestkey, &better)) {
            val_decref(I, kx);
            ok = false;
            break;
        }
        if (better) {
            val_decref(I, bestkey);
            bestkey = kx;
            best = x;
        } else {
            val_decref(I, kx);
        }
    }
    if (ok) {
        if (best.tag != V_UNDEF) {
            val_incref(best);
            *out = best;
        } else if (dflt.tag != V_UNDEF) {
            val_incref(dflt);
            *out = dflt;
        } else {
            ok = err_raise(I, TDL_ERR_VALUE, "%s() iterable argument is empty", name);
        }
    }
    val_decref(I, bestkey);
    if (owned) val_decref(I, LISTV(owned));
    return ok;
}

static bool bi_min(BUILTIN_ARGS)
{
    return min_max(I, args, nargs, kwnames, nkw, out, OP_LT, "min");
}

static bool bi_max(BUILTIN_ARGS)
{
    return min_max(I, args, nargs, kwnames, nkw, out, OP_GT, "max");
}

static bool bi_abs(BUILTIN_ARGS)
{
    Value x = args[0];
    switch (x.tag) {
    case V_BOOL:
        *out = v_int(x.b);
        return true;
    case V_INT:
        if (x.i == INT64_MIN) return overflow(I);
        *out = v_int(x.i < 0 ? -x.i : x.i);
        return true;
    case V_FLOAT:
        *out = v_float(fabs(x.f));
        return true;
    default:
        return err_raise(I, TDL_ERR_TYPE, "bad operand type for abs(): '%s'", val_type_name(x));
    }
}

/* A float rounded to an int, ties to even (round(x)). */
static bool float_round_to_int(Interp *I, double x, Value *out)
{
    if (isnan(x)) return err_raise(I, TDL_ERR_VALUE, "cannot convert float NaN to integer");
    if (isinf(x)) return err_raise(I, TDL_ERR_OVERFLOW, "cannot convert float infinity to integer");
    double r = round(x);
    if (fabs(x - r) == 0.5) r = 2.0 * round(x / 2.0);
    if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0)) return int_too_large(I);
    *out = v_int((int64_t)r);
    return true;
}

/* round(x, n) for a float: the correctly rounded decimal (ties to even on the exact binary
 * value), read back as a double — what CPython does with dtoa. glibc's printf is exact, so
 * %.nf gives that decimal for n >= 0; n < 0 rounds the exact integer digits by hand. */
static bool float_round_digits(Interp *I, double x, int64_t nd, Value *out)
{
    if (nd > 323 || !isfinite(x) || x == 0.0) {
        *out = v_float(x);
        return true;
    }
    if (nd < -308) {
        *out = v_float(0.0 * x);
        return true;
    }
    char buf[720];
    if (nd >= 0) {
        snprintf(buf, sizeof buf, "%.*f", (int)nd, x);
        *out = v_float(strtod(buf, NULL));
        return true;
    }
    int m = (int)-nd;
    double ip = trunc(fabs(x));
    bool frac = fabs(x) != ip;
    char digits[400];
    int len = snprintf(digits, sizeof digits, "%.0f", ip);
    if (ip == 0.0) len = 0;
    if (m > len) {
        *out = v_float(copysign(0.0, x));
        return true;
    }
    int keep = len - m;
    bool up;
    char first = digits[keep];
    if (first != '5') {
        up = first > '5';
    } else {
        bool rest = frac;
        for (int i = keep + 1; i < len && !rest; i++) rest = digits[i] != '0';
        up = rest || (keep > 0 && (digits[keep - 1] - '0') % 2 == 1);
    }
    char *o = buf;
    if (x < 0) *o++ = '-';
    if (up) {
        /* Increment digits[0..keep) as a decimal number. */
        int i = keep - 1;
        while (i >= 0 && digits[i] == '9') digits[i--] = '0';
        if (i < 0) *o++ = '1';
        else digits[i]++;
    }
    if (keep > 0) {
        memcpy(o, digits, (size_t)keep);
        o += keep;
    } else if (!up) {
        *o++ = '0';
    }
    sprintf(o, "e%d", m);
    double r = strtod(buf, NULL);
    if (isinf(r)) return err_raise(I, TDL_ERR_OVERFLOW, "rounded value too large to represent");
    *out = v_float(r);
    return true;
}

static bool bi_round(BUILTIN_ARGS)
{
    Value x = args[0], nv = v_none();
    bool given;
    if (!get_param(I, "round", args, nargs, kwnames, nkw, 1, "ndigits", &nv, &given)) return false;
    if (x.tag != V_INT && x.tag != V_BOOL && x.tag != V_FLOAT)
        return err_raise(I, TDL_ERR_TYPE, "type %s doesn't define __round__ method",
                         val_type_name(x));
    if (nv.tag == V_NONE) {
        if (x.tag == V_FLOAT) return float_round_to_int(I, x.f, out);
        *out = v_int(x.tag == V_INT ? x.i : x.b);
        return true;
    }
    int64_t nd = 0;
    if (!as_index(I, nv, &nd)) return false;
    if (x.tag == V_FLOAT) return float_round_digits(I, x.f, nd, out);
    int64_t v = x.tag == V_INT ? x.i : x.b;
    if (nd >= 0 || v == 0) {
        *out = v_int(v);
        return true;
    }
    if (nd < -19) {     /* 10^20 / 2 is beyond every int64 */
        *out = v_int(0);
        return true;
    }
    i128 p = 1;
    for (int64_t i = 0; i < -nd; i++) p *= 10;
    i128 a = v < 0 ? -(i128)v : v;
    i128 q = a / p, r = a % p;
    if (2 * r > p || (2 * r == p && (q & 1))) q++;
    i128 res = q * p;
    if (v < 0) res = -res;
    if (res > INT64_MAX || res < INT64_MIN) return overflow(I);
    *out = v_int((int64_t)res);
    return true;
}

static bool bi_sum(BUILTIN_ARGS)
{
    Value start = v_int(0);
    bool given;
    if (!get_param(I, "sum", args, nargs, kwnames, nkw, 1, "start", &start, &given)) return false;
    if (start.tag == V_STR)
        return err_raise(I, TDL_ERR_TYPE, "sum() can't sum strings [use ''.join(seq) instead]");
    ListObj *l;
    if (!list_from_iterable(I, args[0], &l)) return false;
    Value acc = start;
    val_incref(acc);
    bool ok = true;
    for (size_t i = 0; i < l->n; i++) {
        Value x = l->items[i], r;
        if (acc.tag == V_INT && x.tag == V_INT) {
            int64_t s;
            if (__builtin_add_overflow(acc.i, x.i, &s)) {
                ok = overflow(I);
                break;
            }
            acc = v_int(s);
            continue;
        }
        if (!val_binop(I, OP_ADD, acc, x, &r)) {
            ok = false;
            break;
        }
        val_decref(I, acc);
        acc = r;
    }
    val_decref(I, LISTV(l));
    if (!ok) {
        val_decref(I, acc);
        return false;
    }
    *out = acc;
    return true;
}

static bool bi_sorted(BUILTIN_ARGS)
{
    Value key;
    bool reverse;
    if (!sort_options(I, args, nargs, kwnames, nkw, &key, &reverse)) return false;
    ListObj *l;
    if (!list_from_iterable(I, args[0], &l)) return false;
    if (!sort_values(I, l->items, l->n, key, reverse)) {
        val_decref(I, LISTV(l));
        return false;
    }
    *out = LISTV(l);
    return true;
}

static bool bi_reversed(BUILTIN_ARGS)
{
    Value x = args[0];
    if (x.tag != V_LIST && x.tag != V_TUPLE && x.tag != V_STR && x.tag != V_RANGE)
        return err_raise(I, TDL_ERR_TYPE, "'%s' object is not reversible", val_type_name(x));
    ListObj *l;
    if (!list_from_iterable(I, x, &l)) return false;
    reverse_values(l->items, l->n);
    *out = LISTV(l);
    return true;
}

static bool iterobj_new(Interp *I, IterKind kind, Value fn, const Value *its, int n, Value *out);

/* enumerate and zip are lazy, as Python's: an infinite generator can be enumerated or zipped. */
static bool bi_enumerate(BUILTIN_ARGS)
{
    Value sv = v_int(0);
    bool given;
    int64_t start = 0;
    if (!get_param(I, "enumerate", args, nargs, kwnames, nkw, 1, "start", &sv, &given) ||
        !as_index(I, sv, &start))
        return false;
    return iterobj_new(I, IK_ENUM, v_int(start), args, 1, out);
}

static bool bi_zip(BUILTIN_ARGS)
{
    return iterobj_new(I, IK_ZIP, v_undef(), args, nargs, out);
}

/* isinstance's test against one type or a (nested) tuple of types. */
static bool isinstance_of(Interp *I, Value v, Value cls, bool *res, int depth)
{
    TypeId t = val_type(v);
    if (cls.tag == V_EXCTYPE) {
        *res = v.tag == V_EXC && exc_is_subclass(((ExcObj *)v.o)->kind, (tdl_error_kind)cls.i);
        return true;
    }
    if (cls.tag == V_CLASS) {
        ClassObj *c = v.tag == V_CLASS ? ((ClassObj *)v.o)->meta : class_of(v);
        *res = c && class_is_subclass(c, (ClassObj *)cls.o);
        return true;
    }
    if (cls.tag == V_TYPE && cls.i == T_OBJECT) {
        *res = true;
        return true;
    }
    if (cls.tag == V_TYPE && cls.i == T_TYPE) {
        *res = v.tag == V_TYPE || v.tag == V_EXCTYPE || v.tag == V_CLASS;
        return true;
    }
    if (cls.tag == V_TYPE) {
        *res = (TypeId)cls.i == t || ((TypeId)cls.i == T_INT && t == T_BOOL);
        return true;
    }
    if (cls.tag == V_TUPLE && depth < 100) {
        TupleObj *tu = as_tuple(cls);
        for (size_t i = 0; i < tu->n; i++) {
            if (!isinstance_of(I, v, tu->items[i], res, depth + 1)) return false;
            if (*res) return true;
        }
        *res = false;
        return true;
    }
    return err_raise(I, TDL_ERR_TYPE,
                     "isinstance() arg 2 must be a type, a tuple of types, or a union");
}

static bool bi_isinstance(BUILTIN_ARGS)
{
    bool r;
    if (!isinstance_of(I, args[0], args[1], &r, 0)) return false;
    *out = v_bool(r);
    return true;
}

/* exit(n): not an error but a clean unwind, which the evaluator recognises by I->exiting. */
static bool bi_exit(BUILTIN_ARGS)
{
    int64_t code = 0;
    if (nargs > 0) {
        Value v = args[0];
        if (v.tag == V_INT) code = v.i;
        else if (v.tag == V_BOOL) code = v.b;
        else if (v.tag != V_NONE) code = 1;     /* Python prints the object and exits with 1 */
    }
    I->exiting = true;
    I->exit_code = (int)code;
    return false;
}

/* perf_counter(): seconds on a monotonic clock, for timing (Python's time.perf_counter). */
static bool bi_perf_counter(BUILTIN_ARGS)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *out = v_float((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
    return true;
}

/* The str that put (val_repr, val_ascii) writes for v. */
static bool put_to_str(Interp *I, bool (*put)(Interp *, Value, Buf *), Value v, Value *out)
{
    Buf b = {0};
    if (!put(I, v, &b)) {
        buf_free(&b);
        return false;
    }
    return buf_to_str(I, &b, out);
}

static bool bi_repr(BUILTIN_ARGS) { return put_to_str(I, val_repr, args[0], out); }
static bool bi_ascii(BUILTIN_ARGS) { return put_to_str(I, val_ascii, args[0], out); }

static bool format_value(Interp *I, Value v, const char *spec, size_t n, Buf *b);

/* format(value, format_spec=''): value.__format__(format_spec), as in an f-string's field. */
static bool bi_format(BUILTIN_ARGS)
{
    if (nargs > 1 && args[1].tag != V_STR)
        return err_raise(I, TDL_ERR_TYPE, "format() argument 2 must be str, not %s", val_type_name(args[1]));
    const StrObj *spec = nargs > 1 ? as_str(args[1]) : NULL;
    Buf b = {0};
    if (!format_value(I, args[0], spec ? spec->data : "", spec ? spec->len : 0, &b)) {
        buf_free(&b);
        return false;
    }
    return buf_to_str(I, &b, out);
}

static bool bi_chr(BUILTIN_ARGS)
{
    int64_t c = 0;
    if (!as_index(I, args[0], &c)) return false;
    if (c < 0 || c > 0x10FFFF) return err_raise(I, TDL_ERR_VALUE, "chr() arg not in range(0x110000)");
    char buf[4];
    int n = utf8_encode((uint32_t)c, buf);
    return str_new(I, buf, (size_t)n, out);
}

static bool bi_ord(BUILTIN_ARGS)
{
    Value s = args[0];
    if (s.tag != V_STR)
        return err_raise(I, TDL_ERR_TYPE, "ord() expected string of length 1, but %s found",
                         val_type_name(s));
    StrObj *so = as_str(s);
    if (so->nchars != 1)
        return err_raise(I, TDL_ERR_TYPE, "ord() expected a character, but string of length %zu found",
                         so->nchars);
    uint32_t cp;
    if (!fmt_utf8_decode((const unsigned char *)so->data, so->len, &cp))
        cp = (unsigned char)so->data[0];
    *out = v_int(cp);
    return true;
}

static bool is_number(Value v)
{
    return v.tag == V_INT || v.tag == V_BOOL || v.tag == V_FLOAT;
}

static bool bi_divmod(BUILTIN_ARGS)
{
    Value q, r;
    if (!is_number(args[0]) || !is_number(args[1]))
        return err_raise(I, TDL_ERR_TYPE, "unsupported operand type(s) for divmod(): '%s' and '%s'",
                         val_type_name(args[0]), val_type_name(args[1]));
    if ((args[0].tag == V_FLOAT || args[1].tag == V_FLOAT) &&
        (args[1].tag == V_FLOAT ? args[1].f == 0.0 : args[1].tag == V_INT ? args[1].i == 0 : !args[1].b))
        return err_raise(I, TDL_ERR_ZERO_DIVISION, "float divmod()");
    if (!val_binop(I, OP_FLOORDIV, args[0], args[1], &q)) return false;
    if (!val_binop(I, OP_MOD, args[0], args[1], &r)) {
        val_decref(I, q);
        return false;
    }
    TupleObj *t = tuple_alloc(I, 2);
    if (!t) {
        val_decref(I, q);
        val_decref(I, r);
        return false;
    }
    t->items[0] = q;
    t->items[1] = r;
    *out = TUPLEV(t);
    return true;
}

static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m)
{
    return (uint64_t)((u128)a * b % m);
}

static bool bi_pow(BUILTIN_ARGS)
{
    Value mv = v_none();
    bool given;
    if (!get_param(I, "pow", args, nargs, kwnames, nkw, 2, "mod", &mv, &given)) return false;
    if (mv.tag == V_NONE) return val_binop(I, OP_POW, args[0], args[1], out);
    Value bv = args[0], ev = args[1];
    bool ints = (bv.tag == V_INT || bv.tag == V_BOOL) && (ev.tag == V_INT || ev.tag == V_BOOL) &&
                (mv.tag == V_INT || mv.tag == V_BOOL);
    if (!ints)
        return err_raise(I, TDL_ERR_TYPE,
                         "pow() 3rd argument not allowed unless all arguments are integers");
    int64_t base, e, m;
    as_index(I, bv, &base);
    as_index(I, ev, &e);
    as_index(I, mv, &m);
    if (m == 0) return err_raise(I, TDL_ERR_VALUE, "pow() 3rd argument cannot be 0");
    uint64_t um = m < 0 ? (uint64_t)0 - (uint64_t)m : (uint64_t)m;
    /* base mod |m| in [0, |m|) */
    int64_t bm = (int64_t)(base % (int64_t)(um > INT64_MAX ? 1 : um));
    uint64_t b;
    if (um > (uint64_t)INT64_MAX) {     /* m == INT64_MIN */
        b = base < 0 ? (uint64_t)base + um : (uint64_t)base;
    } else {
        b = (uint64_t)(bm < 0 ? bm + (int64_t)um : bm);
    }
    uint64_t ue;
    if (e < 0) {
        /* Modular inverse by the extended Euclidean algorithm, in 128-bit to stay exact. */
        i128 r0 = (i128)um, r1 = (i128)b, t0 = 0, t1 = 1;
        while (r1 != 0) {
            i128 q = r0 / r1, tr = r0 - q * r1, tt = t0 - q * t1;
            r0 = r1;
            r1 = tr;
            t0 = t1;
            t1 = tt;
        }
        if (r0 != 1 && um != 1)
            return err_raise(I, TDL_ERR_VALUE, "base is not invertible for the given modulus");
        if (t0 < 0) t0 += (i128)um;
        b = (uint64_t)(t0 % (i128)um);
        ue = e == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-e;
    } else {
        ue = (uint64_t)e;
    }
    uint64_t r = 1 % um;
    b %= um;
    while (ue) {
        if (ue & 1) r = mulmod(r, b, um);
        b = mulmod(b, b, um);
        ue >>= 1;
    }
    /* The result takes the sign of the modulus. */
    int64_t res = m < 0 && r != 0 ? (int64_t)(r - um) : (int64_t)r;
    *out = v_int(res);
    return true;
}

static bool bi_callable(BUILTIN_ARGS)
{
    uint8_t t = args[0].tag;
    bool r = t == V_FUNC || t == V_BUILTIN || t == V_TYPE || t == V_EXCTYPE || t == V_CLASS || t == V_METHOD;
    if (t == V_INSTANCE) {
        Value c;
        if (!val_getattr(I, args[0], "__call__", &c)) {
            if (I->err.kind != TDL_ERR_ATTRIBUTE) return false;
            err_clear(I);
        } else {
            val_decref(I, c);
            r = true;
        }
    }
    *out = v_bool(r);
    return true;
}

static bool any_all(Interp *I, Value seq, bool want, Value *out)
{
    Iter it;
    if (!iter_begin(I, seq, &it)) return false;
    bool res = !want;
    for (;;) {
        Value x = v_undef();
        bool done = false, t;
        if (!iter_next(I, &it, &x, &done)) {
            iter_end(I, &it);
            return false;
        }
        if (done) break;
        bool ok = val_truthy(I, x, &t);
        val_decref(I, x);
        if (!ok) {
            iter_end(I, &it);
            return false;
        }
        if (t == want) {
            res = want;
            break;
        }
    }
    iter_end(I, &it);
    *out = v_bool(res);
    return true;
}

static bool bi_any(BUILTIN_ARGS)
{
    return any_all(I, args[0], true, out);
}

static bool bi_all(BUILTIN_ARGS)
{
    return any_all(I, args[0], false, out);
}

/* An IterObj of kind over iterables its[0..n) calling fn. */
static bool iterobj_new(Interp *I, IterKind kind, Value fn, const Value *its, int n, Value *out)
{
    IterObj *o = obj_alloc(I, sizeof *o + (size_t)n * sizeof(Iter), V_ITER, true);
    if (!o) return false;
    o->kind = kind;
    val_incref(fn);
    o->fn = fn;
    Value ov = v_obj(V_ITER, &o->h);
    for (int k = 0; k < n; k++) {
        if (!iter_begin(I, its[k], &o->its[k])) {
            val_decref(I, ov);
            return false;
        }
        o->n = k + 1;
    }
    *out = ov;
    return true;
}

static bool is_iterator(Value v) { return v.tag == V_GEN || v.tag == V_ITER; }

static bool bi_iter(BUILTIN_ARGS)
{
    if (nargs == 2)
        return err_raise(I, TDL_ERR_NOT_IMPLEMENTED, "iter(callable, sentinel) is not supported");
    if (is_iterator(args[0])) {
        val_incref(args[0]);
        *out = args[0];
        return true;
    }
    return iterobj_new(I, IK_SEQ, v_undef(), args, 1, out);
}

/* Raises StopIteration carrying a generator's return value v (none when v is None). */
static bool stop_iteration(Interp *I, Value v)
{
    Value e;
    if (!exc_new(I, TDL_ERR_STOP_ITERATION, &v, v.tag == V_NONE ? 0 : 1, &e)) return false;
    exc_raise(I, e);
    val_decref(I, e);
    return false;
}

static bool gen_method_send(BUILTIN_ARGS)
{
    bool done;
    if (!gen_send(I, (GenObj *)self.o, args[0], out, &done)) return false;
    if (!done) return true;
    bool ok = stop_iteration(I, *out);
    val_decref(I, *out);
    return ok;
}

static bool gen_method_throw(BUILTIN_ARGS)
{
    bool done;
    if (!gen_throw(I, (GenObj *)self.o, args[0], nargs > 1 ? args[1] : v_undef(), out, &done)) return false;
    if (!done) return true;
    bool ok = stop_iteration(I, *out);
    val_decref(I, *out);
    return ok;
}

static bool gen_method_close(BUILTIN_ARGS)
{
    if (!gen_close(I, (GenObj *)self.o)) return false;
    *out = v_none();
    return true;
}

static const BuiltinDef generator_methods[] = {
    {"send", gen_method_send, 1, 1, NULL},
    {"close", gen_method_close, 0, 0, NULL},
    {"throw", gen_method_throw, 1, 3, NULL},
    {NULL, NULL, 0, 0, NULL},
};

static bool bi_next(BUILTIN_ARGS)
{
    Value it = args[0];
    bool done = false, found = false;
    Value y = v_undef();
    bool ok;
    if (it.tag == V_INSTANCE) {
        /* __next__ raising StopIteration is the end */
        ok = class_call_dunder(I, it, "__next__", NULL, 0, out, &found);
        if (ok && !found) return err_raise(I, TDL_ERR_TYPE, "'%s' object is not an iterator", val_type_name(it));
        if (!ok && I->err.kind == TDL_ERR_STOP_ITERATION && nargs > 1) {
            err_clear(I);
            ok = done = true;
        }
    } else if (!is_iterator(it)) {
        return err_raise(I, TDL_ERR_TYPE, "'%s' object is not an iterator", val_type_name(it));
    } else if (it.tag == V_GEN && ((GenObj *)it.o)->co) {
        /* a generator function: its return value is the StopIteration's */
        if (!gen_send(I, (GenObj *)it.o, v_none(), out, &done)) return false;
        if (!done) return true;
        if (nargs > 1) {
            val_decref(I, *out);
            *out = args[1];
            val_incref(*out);
            return true;
        }
        ok = stop_iteration(I, *out);
        val_decref(I, *out);
        return ok;
    } else {
        ok = it.tag == V_GEN ? gen_next(I, (GenObj *)it.o, out, &y, &done)
                             : iterobj_next(I, (IterObj *)it.o, out, &done);
    }
    val_decref(I, y);
    if (!ok) return false;
    if (!done) return true;
    if (nargs > 1) {
        *out = args[1];
        val_incref(*out);
        return true;
    }
    err_raise(I, TDL_ERR_STOP_ITERATION, "%s", "");
    mem_free(I->err.msg);       /* StopIteration has no message: its report is the bare kind */
    I->err.msg = NULL;
    return false;
}

static bool bi_map(BUILTIN_ARGS)
{
    return iterobj_new(I, IK_MAP, args[0], args + 1, nargs - 1, out);
}

static bool bi_filter(BUILTIN_ARGS)
{
    return iterobj_new(I, IK_FILTER, args[0], args + 1, 1, out);
}

static bool bi_hash(BUILTIN_ARGS)
{
    uint64_t h;
    if (!val_hash(I, args[0], &h)) return false;
    *out = v_int((int64_t)h);
    return true;
}

/* A parsed format spec: [[fill]align][sign][#][0][width][grouping][.precision][type]. */
typedef struct FmtSpec {
    char fill[5];
    size_t filllen;
    char align;         /* '<' '>' '^' '=' or 0 (default) */
    char sign;          /* '+' '-' ' ' or 0 */
    bool alt;
    int64_t width;      /* -1: none */
    char group;         /* ',' '_' or 0 */
    int64_t prec;       /* -1: none */
    char type;          /* 0: none */
} FmtSpec;

static bool format_int_spec(Interp *I, int64_t v, const FmtSpec *sp, Buf *b, const char *tname);

/* hex(), oct(), bin(): the '#x', '#o', '#b' formats of an integer (PyNumber_Index: an int, a bool
 * or a one-element integer tensor). */
static bool int_in_base(Interp *I, Value x, char type, Value *out)
{
    int64_t v;
    if (!as_index(I, x, &v)) return false;
    FmtSpec sp = {.fill = " ", .filllen = 1, .alt = true, .width = -1, .prec = -1, .type = type};
    Buf b = {0};
    if (!format_int_spec(I, v, &sp, &b, "int")) {
        buf_free(&b);
        return false;
    }
    return buf_to_str(I, &b, out);
}

static bool bi_hex(BUILTIN_ARGS) { return int_in_base(I, args[0], 'x', out); }
static bool bi_oct(BUILTIN_ARGS) { return int_in_base(I, args[0], 'o', out); }
static bool bi_bin(BUILTIN_ARGS) { return int_in_base(I, args[0], 'b', out); }

const BuiltinDef builtin_functions[] = {
    {"iter", bi_iter, 1, 2, NULL},
    {"next", bi_next, 1, 2, NULL},
    {"map", bi_map, 2, -1, NULL},
    {"filter", bi_filter, 2, 2, NULL},
    {"hash", bi_hash, 1, 1, NULL},
    {"hex", bi_hex, 1, 1, NULL},
    {"oct", bi_oct, 1, 1, NULL},
    {"bin", bi_bin, 1, 1, NULL},
    {"print", bi_print, 0, -1, "sep end flush"},
    {"len", bi_len, 1, 1, NULL},
    {"dims", builtin_dims, 0, 2, "n sizes"},
    {"dimlists", builtin_dimlists, 0, 2, "n sizes"},
    {"range", bi_range, 1, 3, NULL},
    {"min", bi_min, 1, -1, "key default"},
    {"max", bi_max, 1, -1, "key default"},
    {"abs", bi_abs, 1, 1, NULL},
    {"round", bi_round, 1, 2, "ndigits"},
    {"sum", bi_sum, 1, 2, "start"},
    {"sorted", bi_sorted, 1, 1, "key reverse"},
    {"reversed", bi_reversed, 1, 1, NULL},
    {"enumerate", bi_enumerate, 1, 2, "start"},
    {"zip", bi_zip, 0, -1, NULL},
    {"isinstance", bi_isinstance, 2, 2, NULL},
    {"exit", bi_exit, 0, 1, NULL},
    {"perf_counter", bi_perf_counter, 0, 0, NULL},
    {"repr", bi_repr, 1, 1, NULL},
    {"ascii", bi_ascii, 1, 1, NULL},
    {"format", bi_format, 1, 2, NULL},
    {"chr", bi_chr, 1, 1, NULL},
    {"ord", bi_ord, 1, 1, NULL},
    {"divmod", bi_divmod, 2, 2, NULL},
    {"pow", bi_pow, 2, 3, "mod"},
    {"callable", bi_callable, 1, 1, NULL},
    {"any", bi_any, 1, 1, NULL},
    {"all", bi_all, 1, 1, NULL},
    {NULL, NULL, 0, 0, NULL},
};

/* ---- types as constructors ------------------------------------------------------------------ */

/* Python's int() of a string: surrounding whitespace, a sign, a base prefix (0x/0o/0b, required
 * to match base when given, inferred when base is 0), digits with single underscores between
 * them. Returns 0 ok, 1 not a literal, 2 too large. */
static int parse_int_text(const char *s, size_t len, int base, int64_t *out)
{
    size_t i = 0, k;
    while (i < len && (k = space_len(s, len, i))) i += k;
    while (len > i) {
        size_t st = char_start_before(s, i, len);
        if (!space_len(s, len, st)) break;
        len = st;
    }
    bool neg = false;
    if (i < len && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    bool prefixed = false;
    if (i + 1 < len && s[i] == '0') {
        char p = (char)(s[i + 1] | 0x20);
        int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
        if (pb && (base == 0 || base == pb)) {
            base = pb;
            i += 2;
            prefixed = true;
        }
    }
    bool zero_lead = false;
    if (base == 0) {
        base = 10;
        zero_lead = i < len && s[i] == '0';    /* "010" is not a base-0 literal; "000" is */
    }
    if (i >= len) return 1;
    if (s[i] == '_') {
        if (!prefixed) return 1;
        i++;
    }
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    bool big = false, any = false, prev_us = false;
    for (; i < len; i++) {
        char c = s[i];
        if (c == '_') {
            if (prev_us || !any) return 1;
            prev_us = true;
            continue;
        }
        int d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10 : 99;
        if (d >= base) return 1;
        prev_us = false;
        any = true;
        if (zero_lead && d != 0) return 1;
        if (!big && (v > (lim - (uint64_t)d) / (uint64_t)base)) big = true;
        if (!big) v = v * (uint64_t)base + (uint64_t)d;
    }
    if (!any || prev_us) return 1;
    if (big) return 2;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* Python's float() of a string; Python's own grammar (no hex floats, no "nan(...)"), checked here
 * before strtod sees the digits. Returns false when it is not a float literal. */
static bool parse_float_text(const char *s, size_t len, double *out)
{
    size_t i = 0, k;
    while (i < len && (k = space_len(s, len, i))) i += k;
    while (len > i) {
        size_t st = char_start_before(s, i, len);
        if (!space_len(s, len, st)) break;
        len = st;
    }
    bool neg = false;
    if (i < len && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    size_t rest = len - i;
    if ((rest == 3 && strncasecmp(s + i, "inf", 3) == 0) ||
        (rest == 8 && strncasecmp(s + i, "infinity", 8) == 0)) {
        *out = neg ? -INFINITY : INFINITY;
        return true;
    }
    if (rest == 3 && strncasecmp(s + i, "nan", 3) == 0) {
        *out = neg ? -NAN : NAN;
        return true;
    }
    char small[128];
    char *buf = rest + 2 <= sizeof small ? small : mem_malloc(rest + 2);
    if (!buf) return false;     /* treated as not convertible; only for huge strings */
    size_t o = 0;
    buf[o++] = neg ? '-' : '+';
    bool ok = true;
    int ndig = 0;
    /* digits with single underscores between digits */
#define DIGITS(count) do { \
        count = 0; \
        while (i < len) { \
            if (s[i] >= '0' && s[i] <= '9') { buf[o++] = s[i++]; count++; } \
            else if (s[i] == '_' && count && i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9') i++; \
            else break; \
        } \
    } while (0)
    int intd, fracd = 0, expd;
    DIGITS(intd);
    if (i < len && s[i] == '.') {
        buf[o++] = s[i++];
        DIGITS(fracd);
    }
    ndig = intd + fracd;
    if (ndig == 0) ok = false;
    if (ok && i < len && (s[i] == 'e' || s[i] == 'E')) {
        buf[o++] = s[i++];
        if (i < len && (s[i] == '+' || s[i] == '-')) buf[o++] = s[i++];
        DIGITS(expd);
        if (expd == 0) ok = false;
    }
#undef DIGITS
    if (i != len) ok = false;
    if (ok) {
        buf[o] = '\0';
        *out = strtod(buf, NULL);
    }
    if (buf != small) mem_free(buf);
    return ok;
}

/* Python's int() and float() read any Unicode decimal digit and space. For a non-ASCII string
 * this makes an ASCII copy (digits to '0'..'9', spaces to ' ', anything else to '?' so that it
 * stays invalid) in *buf, which the caller frees; ASCII text is used as it is. */
static bool ascii_digits(const StrObj *s, char **text, size_t *len, char **buf)
{
    static const uint32_t zeros[] = {
        0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
        0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
        0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
        0xFF10, 0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0,
        0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0,
        0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
    };
    *buf = NULL;
    *text = (char *)s->data;
    *len = s->len;
    if (s->len == s->nchars) return true;
    char *o = mem_malloc(s->len + 1);
    if (!o) return false;
    size_t n = 0;
    for (size_t i = 0; i < s->len;) {
        size_t k = char_len(s->data, s->len, i);
        uint32_t cp = (unsigned char)s->data[i];
        if (k > 1) fmt_utf8_decode((const unsigned char *)s->data + i, s->len - i, &cp);
        char c = cp < 0x80 ? (char)cp : space_len(s->data, s->len, i) ? ' ' : '?';
        for (size_t z = 0; c == '?' && z < sizeof zeros / sizeof zeros[0]; z++)
            if (cp >= zeros[z] && cp < zeros[z] + 10) c = (char)('0' + (cp - zeros[z]));
        o[n++] = c;
        i += k;
    }
    o[n] = '\0';
    *text = *buf = o;
    *len = n;
    return true;
}

static bool int_from_str(Interp *I, Value s, int base, Value *out)
{
    int64_t v;
    char *text, *tmp;
    size_t len;
    if (!ascii_digits(as_str(s), &text, &len, &tmp)) return err_nomem(I);
    int r = parse_int_text(text, len, base, &v);
    mem_free(tmp);
    if (r == 0) {
        *out = v_int(v);
        return true;
    }
    if (r == 2) return int_too_large(I);
    Buf b = {0};
    repr_for_msg(s, &b);
    bool ok = b.nomem ? err_nomem(I)
                      : err_raise(I, TDL_ERR_VALUE, "invalid literal for int() with base %d: %s",
                                  base, b.p);
    buf_free(&b);
    return ok;
}

static bool int_from_float(Interp *I, double d, Value *out)
{
    if (isnan(d)) return err_raise(I, TDL_ERR_VALUE, "cannot convert float NaN to integer");
    if (isinf(d)) return err_raise(I, TDL_ERR_OVERFLOW, "cannot convert float infinity to integer");
    double t = trunc(d);
    if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) return int_too_large(I);
    *out = v_int((int64_t)t);
    return true;
}

static bool type_int(Interp *I, const Value *args, int nargs, const char *const *kwnames, int nkw,
                     Value *out)
{
    for (int k = 0; k < nkw; k++)
        if (strcmp(kwnames[k], "base") != 0)
            return err_raise(I, TDL_ERR_TYPE, "int() got an unexpected keyword argument '%s'",
                             kwnames[k]);
    if (nargs > 2) return err_raise(I, TDL_ERR_TYPE, "int() takes at most 2 arguments (%d given)", nargs);
    Value bv;
    bool has_base;
    if (!get_param(I, "int", args, nargs, kwnames, nkw, 1, "base", &bv, &has_base)) return false;
    if (nargs == 0) {
        if (has_base) return err_raise(I, TDL_ERR_TYPE, "int() missing string argument");
        *out = v_int(0);
        return true;
    }
    Value x = args[0];
    if (has_base) {
        int64_t base = 10;
        if (!as_index(I, bv, &base)) return false;
        if (x.tag != V_STR)
            return err_raise(I, TDL_ERR_TYPE, "int() can't convert non-string with explicit base");
        if (base != 0 && (base < 2 || base > 36))
            return err_raise(I, TDL_ERR_VALUE, "int() base must be >= 2 and <= 36, or 0");
        return int_from_str(I, x, (int)base, out);
    }
    switch (x.tag) {
    case V_INT:
        *out = x;
        return true;
    case V_BOOL:
        *out = v_int(x.b);
        return true;
    case V_FLOAT:
        return int_from_float(I, x.f, out);
    case V_STR:
        return int_from_str(I, x, 10, out);
    case V_TENSOR:
        return tensor_to_number(I, x, T_INT, out);
    default:
        return err_raise(I, TDL_ERR_TYPE,
                         "int() argument must be a string, a bytes-like object or a real number, not '%s'",
                         val_type_name(x));
    }
}

static bool type_float(Interp *I, Value x, Value *out)
{
    switch (x.tag) {
    case V_FLOAT:
        *out = x;
        return true;
    case V_INT:
        *out = v_float((double)x.i);
        return true;
    case V_BOOL:
        *out = v_float(x.b);
        return true;
    case V_TENSOR:
        return tensor_to_number(I, x, T_FLOAT, out);
    case V_STR: {
        double d;
        char *text, *tmp;
        size_t len;
        if (!ascii_digits(as_str(x), &text, &len, &tmp)) return err_nomem(I);
        bool ok = parse_float_text(text, len, &d);
        mem_free(tmp);
        if (ok) {
            *out = v_float(d);
            return true;
        }
        Buf b = {0};
        format_str_repr(as_str(x)->data, as_str(x)->len, &b);   /* in full, as Python */
        ok = b.nomem ? err_nomem(I)
                     : err_raise(I, TDL_ERR_VALUE, "could not convert string to float: %s", b.p);
        buf_free(&b);
        return ok;
    }
    default:
        return err_raise(I, TDL_ERR_TYPE,
                         "float() argument must be a string or a real number, not '%s'",
                         val_type_name(x));
    }
}

static const BuiltinDef range_type_def = {"range", bi_range, 1, 3, NULL};

bool type_call(Interp *I, TypeId t, const Value *args, int nargs, const char *const *kwnames,
               int nkw, Value *out)
{
    const char *name = type_name(t);
    if (t == T_INT) return type_int(I, args, nargs, kwnames, nkw, out);
    if (t == T_RANGE) {
        if (!builtin_check_args(I, &range_type_def, nargs, kwnames, nkw)) return false;
        return bi_range(I, v_undef(), args, nargs, kwnames, nkw, out);
    }
    if (t == T_DEVICE) return tensor_device_new(I, args, nargs, nkw, out);
    if (t == T_DICT || t == T_SET || t == T_FROZENSET) return dict_type_call(I, t, args, nargs, kwnames, nkw, out);
    if (nkw > 0) return err_raise(I, TDL_ERR_TYPE, "%s() takes no keyword arguments", name);
    if (t == T_SLICE) {     /* slice(stop), slice(start, stop[, step]) */
        if (nargs < 1 || nargs > 3)
            return err_raise(I, TDL_ERR_TYPE, "slice expected at %s, got %d",
                             nargs < 1 ? "least 1 argument" : "most 3 arguments", nargs);
        if (nargs == 1) return slice_new(I, v_none(), args[0], v_none(), out);
        return slice_new(I, args[0], args[1], nargs == 3 ? args[2] : v_none(), out);
    }
    if (t == T_TYPE) {
        if (nargs == 1) {
            ClassObj *c = args[0].tag == V_CLASS ? ((ClassObj *)args[0].o)->meta : class_of(args[0]);
            if (c) {
                *out = v_obj(V_CLASS, &c->h);
                val_incref(*out);
                return true;
            }
            *out = args[0].tag == V_EXC ? v_exctype(((ExcObj *)args[0].o)->kind) : mk_type(val_type(args[0]));
            return true;
        }
        if (nargs == 3) return class_meta_call(I, NULL, args, nargs, kwnames, nkw, out);
        return err_raise(I, TDL_ERR_TYPE, "type() takes 1 or 3 arguments");
    }
    switch (t) {
    case T_FLOAT: case T_BOOL: case T_LIST: case T_TUPLE: case T_STR:
        break;
    case T_NONETYPE:
        if (nargs) return err_raise(I, TDL_ERR_TYPE, "NoneType takes no arguments");
        *out = v_none();
        return true;
    default:
        return err_raise(I, TDL_ERR_TYPE, "cannot create '%s' instances", name);
    }
    if (nargs > 1) {
        if (t == T_STR)
            return err_raise(I, TDL_ERR_TYPE, "str() takes at most 1 argument (%d given)", nargs);
        return err_raise(I, TDL_ERR_TYPE, "%s expected at most 1 argument, got %d", name, nargs);
    }
    if (nargs == 0) {
        switch (t) {
        case T_FLOAT: *out = v_float(0.0); return true;
        case T_BOOL: *out = v_bool(false); return true;
        case T_STR: return str_new(I, "", 0, out);
        case T_LIST: {
            ListObj *l = list_alloc(I, 0);
            if (!l) return false;
            *out = LISTV(l);
            return true;
        }
        default: {
            TupleObj *tu = tuple_alloc(I, 0);
            if (!tu) return false;
            *out = TUPLEV(tu);
            return true;
        }
        }
    }
    Value x = args[0];
    switch (t) {
    case T_FLOAT:
        return type_float(I, x, out);
    case T_BOOL: {
        bool b;
        if (!val_truthy(I, x, &b)) return false;
        *out = v_bool(b);
        return true;
    }
    case T_STR: {
        if (x.tag == V_STR) {
            val_incref(x);
            *out = x;
            return true;
        }
        Buf b = {0};
        if (!val_str(I, x, &b)) {
            buf_free(&b);
            return false;
        }
        return buf_to_str(I, &b, out);
    }
    case T_LIST: {
        ListObj *l;
        if (!list_from_iterable(I, x, &l)) return false;
        *out = LISTV(l);
        return true;
    }
    default: {  /* T_TUPLE */
        if (x.tag == V_TUPLE) {
            val_incref(x);
            *out = x;
            return true;
        }
        ListObj *l;
        return list_from_iterable(I, x, &l) && tuple_from_list(I, l, out);
    }
    }
}

/* ---- list methods --------------------------------------------------------------------------- */

static bool m_list_append(BUILTIN_ARGS)
{
    if (!list_append(I, as_list(self), args[0])) return false;
    *out = v_none();
    return true;
}

static bool m_list_extend(BUILTIN_ARGS)
{
    if (!list_extend_from_iterable(I, as_list(self), args[0])) return false;
    *out = v_none();
    return true;
}

static bool m_list_pop(BUILTIN_ARGS)
{
    ListObj *l = as_list(self);
    int64_t i = -1;
    if (nargs > 0 && !as_index(I, args[0], &i)) return false;
    if (l->n == 0) return err_raise(I, TDL_ERR_INDEX, "pop from empty list");
    if (i < 0) i += (int64_t)l->n;
    if (i < 0 || i >= (int64_t)l->n) return err_raise(I, TDL_ERR_INDEX, "pop index out of range");
    *out = l->items[i];
    memmove(l->items + i, l->items + i + 1, (l->n - (size_t)i - 1) * sizeof *l->items);
    l->n--;
    return true;
}

static bool m_list_insert(BUILTIN_ARGS)
{
    ListObj *l = as_list(self);
    int64_t i = 0;
    if (!as_index(I, args[0], &i)) return false;
    int64_t n = (int64_t)l->n;
    if (i < 0) {
        i += n;
        if (i < 0) i = 0;
    } else if (i > n) {
        i = n;
    }
    if (!list_append(I, l, args[1])) return false;
    Value v = l->items[n];
    memmove(l->items + i + 1, l->items + i, (size_t)(n - i) * sizeof *l->items);
    l->items[i] = v;
    *out = v_none();
    return true;
}

/* Python's clamping of optional start/stop arguments for index(); len is the sequence length. */
static bool seq_bounds(Interp *I, const Value *args, int nargs, int first, int64_t len,
                       int64_t *start, int64_t *stop)
{
    *start = 0;
    *stop = len;
    if (nargs > first && !as_index(I, args[first], start)) return false;
    if (nargs > first + 1 && !as_index(I, args[first + 1], stop)) return false;
    if (*start < 0) {
        *start += len;
        if (*start < 0) *start = 0;
    }
    if (*stop < 0) {
        *stop += len;
        if (*stop < 0) *stop = 0;
    }
    return true;
}

/* index() of a list or tuple; items are re-read each time (== cannot run tdl code, but the
 * length is checked anyway). */
static bool seq_index(Interp *I, Value self, const Value *args, int nargs, Value *out)
{
    bool is_list = self.tag == V_LIST;
    size_t n = is_list ? as_list(self)->n : as_tuple(self)->n;
    int64_t start, stop;
    if (!seq_bounds(I, args, nargs, 1, (int64_t)n, &start, &stop)) return false;
    for (int64_t i = start; i < stop; i++) {
        size_t cur = is_list ? as_list(self)->n : as_tuple(self)->n;
        if ((size_t)i >= cur) break;
        Value x = is_list ? as_list(self)->items[i] : as_tuple(self)->items[i];
        bool eq;
        if (!same_or_equal(I, x, args[0], &eq)) return false;
        if (eq) {
            *out = v_int(i);
            return true;
        }
    }
    return err_raise(I, TDL_ERR_VALUE, is_list ? "list.index(x): x not in list"
                                               : "tuple.index(x): x not in tuple");
}

static bool seq_count(Interp *I, Value self, Value x, Value *out)
{
    bool is_list = self.tag == V_LIST;
    int64_t c = 0;
    for (size_t i = 0; i < (is_list ? as_list(self)->n : as_tuple(self)->n); i++) {
        Value y = is_list ? as_list(self)->items[i] : as_tuple(self)->items[i];
        bool eq;
        if (!same_or_equal(I, y, x, &eq)) return false;
        c += eq;
    }
    *out = v_int(c);
    return true;
}

static bool m_list_index(BUILTIN_ARGS)
{
    return seq_index(I, self, args, nargs, out);
}

static bool m_list_count(BUILTIN_ARGS)
{
    return seq_count(I, self, args[0], out);
}

static bool m_list_remove(BUILTIN_ARGS)
{
    ListObj *l = as_list(self);
    for (size_t i = 0; i < l->n; i++) {
        bool eq;
        if (!same_or_equal(I, l->items[i], args[0], &eq)) return false;
        if (eq) {
            Value v = l->items[i];
            memmove(l->items + i, l->items + i + 1, (l->n - i - 1) * sizeof *l->items);
            l->n--;
            val_decref(I, v);
            *out = v_none();
            return true;
        }
    }
    return err_raise(I, TDL_ERR_VALUE, "list.remove(x): x not in list");
}

static bool m_list_reverse(BUILTIN_ARGS)
{
    reverse_values(as_list(self)->items, as_list(self)->n);
    *out = v_none();
    return true;
}

static bool m_list_copy(BUILTIN_ARGS)
{
    ListObj *l;
    if (!list_from_iterable(I, self, &l)) return false;
    *out = LISTV(l);
    return true;
}

static bool m_list_clear(BUILTIN_ARGS)
{
    ListObj *l = as_list(self);
    size_t n = l->n;
    l->n = 0;   /* empty before releasing, so the list is consistent whatever a free does */
    for (size_t i = 0; i < n; i++) val_decref(I, l->items[i]);
    *out = v_none();
    return true;
}

/* list.sort(key=None, reverse=False): sorts a snapshot and puts it back, so a key function that
 * changes the list is caught rather than corrupting it. */
static bool m_list_sort(BUILTIN_ARGS)
{
    ListObj *l = as_list(self);
    Value key;
    bool reverse;
    if (!sort_options(I, args, nargs, kwnames, nkw, &key, &reverse)) return false;
    size_t n = l->n;
    if (n < 2 && key.tag == V_NONE) {
        *out = v_none();
        return true;
    }
    Value *tmp = mem_malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp) return err_nomem(I);
    for (size_t i = 0; i < n; i++) {
        tmp[i] = l->items[i];
        val_incref(tmp[i]);
    }
    bool ok = sort_values(I, tmp, n, key, reverse);
    if (ok && l->n != n) ok = err_raise(I, TDL_ERR_VALUE, "list modified during sort");
    if (ok) {
        for (size_t i = 0; i < n; i++) {
            Value old = l->items[i];
            l->items[i] = tmp[i];
            tmp[i] = old;
        }
    }
    for (size_t i = 0; i < n; i++) val_decref(I, tmp[i]);
    mem_free(tmp);
    if (!ok) return false;
    *out = v_none();
    return true;
}

static const BuiltinDef list_methods[] = {
    {"append", m_list_append, 1, 1, NULL},
    {"pop", m_list_pop, 0, 1, NULL},
    {"extend", m_list_extend, 1, 1, NULL},
    {"insert", m_list_insert, 2, 2, NULL},
    {"index", m_list_index, 1, 3, NULL},
    {"count", m_list_count, 1, 1, NULL},
    {"reverse", m_list_reverse, 0, 0, NULL},
    {"copy", m_list_copy, 0, 0, NULL},
    {"clear", m_list_clear, 0, 0, NULL},
    {"remove", m_list_remove, 1, 1, NULL},
    {"sort", m_list_sort, 0, 0, "key reverse"},
    {NULL, NULL, 0, 0, NULL},
};

/* ---- tuple methods -------------------------------------------------------------------------- */

static bool m_tuple_index(BUILTIN_ARGS)
{
    return seq_index(I, self, args, nargs, out);
}

static bool m_tuple_count(BUILTIN_ARGS)
{
    return seq_count(I, self, args[0], out);
}

static const BuiltinDef tuple_methods[] = {
    {"index", m_tuple_index, 1, 3, NULL},
    {"count", m_tuple_count, 1, 1, NULL},
    {NULL, NULL, 0, 0, NULL},
};

/* ---- slice methods -------------------------------------------------------------------------- */

/* slice.indices' start or stop: None gives dflt; an index below 0 counts from the end (len) and
 * is clamped to lower, one above upper to upper. */
static bool slice_bound(Interp *I, Value v, int64_t len, int64_t dflt, int64_t lower, int64_t upper,
                        int64_t *out)
{
    if (v.tag == V_NONE) {
        *out = dflt;
        return true;
    }
    if (!slice_index(I, v, out)) return false;
    if (*out < 0) {
        *out += len;
        if (*out < lower) *out = lower;
    } else if (*out > upper) {
        *out = upper;
    }
    return true;
}

/* slice.indices(length): (start, stop, step) for a sequence of that length, CPython's
 * _PySlice_GetLongIndices (a negative step's bounds run from len - 1 down to -1, and an omitted
 * stop is -1, not the None that subscripts read as "past the start"). */
static bool m_slice_indices(BUILTIN_ARGS)
{
    SliceObj *s = as_slice(self);
    int64_t len = 0, start, stop, step = 1;
    if (!as_index(I, args[0], &len)) return false;
    if (len < 0) return err_raise(I, TDL_ERR_VALUE, "length should not be negative");
    if (s->step.tag != V_NONE) {
        if (!slice_index(I, s->step, &step)) return false;
        if (step == 0) return err_raise(I, TDL_ERR_VALUE, "slice step cannot be zero");
    }
    int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? len - 1 : len;
    if (!slice_bound(I, s->start, len, step < 0 ? upper : lower, lower, upper, &start) ||
        !slice_bound(I, s->stop, len, step < 0 ? lower : upper, lower, upper, &stop))
        return false;
    TupleObj *t = tuple_alloc(I, 3);
    if (!t) return false;
    t->items[0] = v_int(start);
    t->items[1] = v_int(stop);
    t->items[2] = v_int(step);
    *out = TUPLEV(t);
    return true;
}

static const BuiltinDef slice_methods[] = {
    {"indices", m_slice_indices, 1, 1, NULL},
    {NULL, NULL, 0, 0, NULL},
};

/* ---- int and float methods ------------------------------------------------------------------- */

/* int.bit_length(), int.bit_count(): of |self| (a bool is an int). */
static bool m_int_bit_length(BUILTIN_ARGS)
{
    int64_t v = as_i(self);
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    *out = v_int(a ? 64 - __builtin_clzll(a) : 0);
    return true;
}

static bool m_int_bit_count(BUILTIN_ARGS)
{
    int64_t v = as_i(self);
    *out = v_int(__builtin_popcountll(v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v));
    return true;
}

static const BuiltinDef int_methods[] = {
    {"bit_length", m_int_bit_length, 0, 0, NULL},
    {"bit_count", m_int_bit_count, 0, 0, NULL},
    {NULL, NULL, 0, 0, NULL},
};

static bool m_float_is_integer(BUILTIN_ARGS)
{
    *out = v_bool(isfinite(self.f) && floor(self.f) == self.f);
    return true;
}

/* float.hex(): [-]0x<1 or 0>.<13 hex digits>p<exponent>, as CPython writes it. */
static bool m_float_hex(BUILTIN_ARGS)
{
    double x = self.f;
    if (isnan(x)) return str_printf(I, out, "nan");
    if (isinf(x)) return str_printf(I, out, "%sinf", x < 0 ? "-" : "");
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    const char *sign = bits >> 63 ? "-" : "";
    int e = (int)(bits >> 52 & 0x7FF);
    uint64_t m = bits & ((UINT64_C(1) << 52) - 1);
    if (e == 0 && m == 0) return str_printf(I, out, "%s0x0.0p+0", sign);
    int lead = e != 0, exp = e ? e - 1023 : -1022;
    return str_printf(I, out, "%s0x%d.%013" PRIx64 "p%+d", sign, lead, m, exp);
}

static const BuiltinDef float_methods[] = {
    {"is_integer", m_float_is_integer, 0, 0, NULL},
    {"hex", m_float_hex, 0, 0, NULL},
    {NULL, NULL, 0, 0, NULL},
};

/* ---- str methods ---------------------------------------------------------------------------- */

static bool push_str(Interp *I, ListObj *l, const char *s, size_t n)
{
    Value v;
    if (!str_new(I, s, n, &v)) return false;
    bool ok = list_append(I, l, v);
    val_decref(I, v);
    return ok;
}

static bool m_str_join(BUILTIN_ARGS)
{
    StrObj *sep = as_str(self);
    ListObj *l;
    if (!list_from_iterable(I, args[0], &l)) return false;
    Buf b = {0};
    for (size_t i = 0; i < l->n; i++) {
        Value x = l->items[i];
        if (x.tag != V_STR) {
            buf_free(&b);
            val_decref(I, LISTV(l));
            return err_raise(I, TDL_ERR_TYPE, "sequence item %zu: expected str instance, %s found",
                             i, val_type_name(x));
        }
        if (i) buf_put(&b, sep->data, sep->len);
        buf_put(&b, as_str(x)->data, as_str(x)->len);
    }
    val_decref(I, LISTV(l));
    return buf_to_str(I, &b, out);
}

/* split() and rsplit(): sep=None splits on runs of whitespace; maxsplit=-1 is no limit. */
static bool str_split(Interp *I, Value self, const Value *args, int nargs,
                      const char *const *kwnames, int nkw, Value *out, bool right)
{
    const char *fname = right ? "rsplit" : "split";
    Value sepv = v_none(), msv = v_int(-1);
    bool given;
    int64_t maxsplit = -1;
    if (!get_param(I, fname, args, nargs, kwnames, nkw, 0, "sep", &sepv, &given) ||
        !get_param(I, fname, args, nargs, kwnames, nkw, 1, "maxsplit", &msv, &given) ||
        !as_index(I, msv, &maxsplit))
        return false;
    if (sepv.tag != V_NONE && sepv.tag != V_STR)
        return err_raise(I, TDL_ERR_TYPE, "must be str or None, not %s", val_type_name(sepv));
    if (sepv.tag == V_STR && as_str(sepv)->len == 0)
        return err_raise(I, TDL_ERR_VALUE, "empty separator");
    const char *d = as_str(self)->data;
    size_t len = as_str(self)->len;
    ListObj *l = list_alloc(I, 0);
    if (!l) return false;
    bool ok = true;
    if (sepv.tag == V_NONE) {
        if (!right) {
            size_t i = 0, k;
            for (;;) {
                while (i < len && (k = space_len(d, len, i))) i += k;
                if (i >= len) break;
                if (maxsplit == 0) {
                    ok = push_str(I, l, d + i, len - i);
                    break;
                }
                size_t j = i;
                while (j < len && !space_len(d, len, j)) j += char_len(d, len, j);
                if (!(ok = push_str(I, l, d + i, j - i))) break;
                i = j;
                if (maxsplit > 0) maxsplit--;
            }
        } else {
            size_t i = len;
            for (;;) {
                while (i > 0) {
                    size_t st = char_start_before(d, 0, i);
                    if (!space_len(d, len, st)) break;
                    i = st;
                }
                if (i == 0) break;
                if (maxsplit == 0) {
                    ok = push_str(I, l, d, i);
                    break;
                }
                size_t j = i;
                while (j > 0) {
                    size_t st = char_start_before(d, 0, j);
                    if (space_len(d, len, st)) break;
                    j = st;
                }
                if (!(ok = push_str(I, l, d + j, i - j))) break;
                i = j;
                if (maxsplit > 0) maxsplit--;
            }
        }
    } else {
        const char *sep = as_str(sepv)->data;
        size_t sl = as_str(sepv)->len;
        if (!right) {
            size_t i = 0;
            while (ok && maxsplit != 0) {
                const char *p = memmem(d + i, len - i, sep, sl);
                if (!p) break;
                ok = push_str(I, l, d + i, (size_t)(p - d) - i);
                i = (size_t)(p - d) + sl;
                if (maxsplit > 0) maxsplit--;
            }
            if (ok) ok = push_str(I, l, d + i, len - i);
        } else {
            size_t end = len;
            while (ok && maxsplit != 0 && end >= sl) {
                size_t p = end - sl;
                bool found = false;
                for (;; p--) {
                    if (memcmp(d + p, sep, sl) == 0) {
                        found = true;
                        break;
                    }
                    if (p == 0) break;
                }
                if (!found) break;
                ok = push_str(I, l, d + p + sl, end - p - sl);
                end = p;
                if (maxsplit > 0) maxsplit--;
            }
            if (ok) ok = push_str(I, l, d, end);
        }
    }
    if (!ok) {
        val_decref(I, LISTV(l));
        return false;
    }
    if (right) reverse_values(l->items, l->n);
    *out = LISTV(l);
    return true;
}

static bool m_str_split(BUILTIN_ARGS)
{
    return str_split(I, self, args, nargs, kwnames, nkw, out, false);
}

static bool m_str_rsplit(BUILTIN_ARGS)
{
    return str_split(I, self, args, nargs, kwnames, nkw, out, true);
}

/* strip / lstrip / rstrip: which = 1 left, 2 right, 3 both. */
static bool str_strip(Interp *I, Value self, const Value *args, int nargs, Value *out, int which,
                      const char *name)
{
    const char *d = as_str(self)->data;
    size_t len = as_str(self)->len, lo = 0, hi = len;
    Value chars = nargs > 0 ? args[0] : v_none();
    if (chars.tag == V_NONE) {
        size_t k;
        if (which & 1)
            while (lo < hi && (k = space_len(d, hi, lo))) lo += k;
        if (which & 2) {
            while (hi > lo) {
                size_t st = char_start_before(d, lo, hi);
                if (!space_len(d, hi, st)) break;
                hi = st;
            }
        }
    } else if (chars.tag == V_STR) {
        const char *cs = as_str(chars)->data;
        size_t cl = as_str(chars)->len;
        if (which & 1) {
            while (lo < hi) {
                size_t k = char_len(d, hi, lo);
                if (!memmem(cs, cl, d + lo, k)) break;
                lo += k;
            }
        }
        if (which & 2) {
            while (hi > lo) {
                size_t st = char_start_before(d, lo, hi);
                if (!memmem(cs, cl, d + st, hi - st)) break;
                hi = st;
            }
        }
    } else {
        return err_raise(I, TDL_ERR_TYPE, "%s arg must be None or str", name);
    }
    if (lo == 0 && hi == len) {
        val_incref(self);
        *out = self;
        return true;
    }
    return str_new(I, d + lo, hi - lo, out);
}

static bool m_str_strip(BUILTIN_ARGS)
{
    return str_strip(I, self, args, nargs, out, 3, "strip");
}

static bool m_str_lstrip(BUILTIN_ARGS)
{
    return str_strip(I, self, args, nargs, out, 1, "lstrip");
}

static bool m_str_rstrip(BUILTIN_ARGS)
{
    return str_strip(I, self, args, nargs, out, 2, "rstrip");
}

/* Simple case mapping of one code point for the scripts a program is likely to hold: ASCII,
 * Latin-1, Latin Extended-A and Additional, Greek, Cyrillic, Armenian and fullwidth Latin (with
 * Python's special cases ß -> SS, İ -> i̇, ŉ -> ʼN). Writes up to 3 code points to o; returns the
 * count. Other characters map to themselves. */
static int case_map(uint32_t c, bool upper, uint32_t *o)
{
    /* the digraphs DŽ Dž dž, LJ Lj lj, NJ Nj nj, DZ Dz dz: upper, title and lower forms */
    static const uint32_t digraph[] = {0x1C4, 0x1C7, 0x1CA, 0x1F1};
    for (size_t j = 0; j < sizeof digraph / sizeof *digraph; j++)
        if (c >= digraph[j] && c <= digraph[j] + 2) {
            o[0] = upper ? digraph[j] : digraph[j] + 2;
            return 1;
        }
    /* Ranges of (upper, lower) pairs at adjacent code points: upper is even, or odd (odd=1). */
    static const struct { uint32_t lo, hi; int odd; } pairs[] = {
        {0x100, 0x12F, 0}, {0x132, 0x137, 0}, {0x139, 0x148, 1}, {0x14A, 0x177, 0}, {0x179, 0x17E, 1},
        {0x460, 0x481, 0}, {0x48A, 0x4BF, 0}, {0x4C1, 0x4CE, 1}, {0x4D0, 0x52F, 0},
        {0x1E00, 0x1E95, 0}, {0x1EA0, 0x1EFF, 0},
    };
    /* Ranges shifted by a constant: [ulo, uhi] upper <-> upper + delta lower. */
    static const struct { uint32_t ulo, uhi; int32_t delta; } shifts[] = {
        {'A', 'Z', 32}, {0xC0, 0xD6, 32}, {0xD8, 0xDE, 32}, {0x388, 0x38A, 37}, {0x38E, 0x38F, 63},
        {0x391, 0x3A1, 32}, {0x3A3, 0x3AB, 32}, {0x400, 0x40F, 80}, {0x410, 0x42F, 32},
        {0x531, 0x556, 48}, {0xFF21, 0xFF3A, 32},
    };
    if (upper) {
        if (c < 0x80) {
            o[0] = c >= 'a' && c <= 'z' ? c - 32 : c;
            return 1;
        }
        switch (c) {
        case 0xDF: o[0] = 'S'; o[1] = 'S'; return 2;
        case 0x149: o[0] = 0x2BC; o[1] = 'N'; return 2;
        case 0xB5: o[0] = 0x39C; return 1;
        case 0xFF: o[0] = 0x178; return 1;
        case 0x131: o[0] = 'I'; return 1;
        case 0x17F: o[0] = 'S'; return 1;
        case 0x3AC: o[0] = 0x386; return 1;
        case 0x3CC: o[0] = 0x38C; return 1;
        case 0x3C2: o[0] = 0x3A3; return 1;
        }
        for (size_t k = 0; k < sizeof shifts / sizeof shifts[0]; k++)
            if (c >= shifts[k].ulo + (uint32_t)shifts[k].delta && c <= shifts[k].uhi + (uint32_t)shifts[k].delta) {
                o[0] = c - (uint32_t)shifts[k].delta;
                return 1;
            }
    } else {
        if (c < 0x80) {
            o[0] = c >= 'A' && c <= 'Z' ? c + 32 : c;
            return 1;
        }
        switch (c) {
        case 0x130: o[0] = 'i'; o[1] = 0x307; return 2;
        case 0x178: o[0] = 0xFF; return 1;
        case 0x386: o[0] = 0x3AC; return 1;
        case 0x38C: o[0] = 0x3CC; return 1;
        }
        for (size_t k = 0; k < sizeof shifts / sizeof shifts[0]; k++)
            if (c >= shifts[k].ulo && c <= shifts[k].uhi) {
                o[0] = c + (uint32_t)shifts[k].delta;
                return 1;
            }
    }
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        if (c < pairs[k].lo || c > pairs[k].hi) continue;
        bool is_upper = (c & 1) == (uint32_t)pairs[k].odd;
        if (upper && !is_upper) c--;
        else if (!upper && is_upper) c++;
        break;
    }
    o[0] = c;
    return 1;
}

static bool is_cased(uint32_t c)
{
    uint32_t u[3], l[3];
    int nu = case_map(c, true, u), nl = case_map(c, false, l);
    return nu != 1 || nl != 1 || u[0] != c || l[0] != c;
}

/* Python's Final_Sigma: Σ (at d[i], k bytes) lowers to ς after a cased letter and not before
 * one, else to σ. */
static uint32_t sigma_lower(const unsigned char *d, size_t len, size_t i, size_t k)
{
    bool before = false, after = false;
    if (i > 0) {
        size_t st = char_start_before((const char *)d, 0, i);
        uint32_t pc;
        before = fmt_utf8_decode(d + st, len - st, &pc) && is_cased(pc);
    }
    if (i + k < len) {
        uint32_t nc;
        after = fmt_utf8_decode(d + i + k, len - i - k, &nc) && is_cased(nc);
    }
    return before && !after ? 0x3C2 : 0x3C3;
}

static bool str_case(Interp *I, Value self, Value *out, bool upper)
{
    StrObj *s = as_str(self);
    Buf b = {0};
    const unsigned char *d = (const unsigned char *)s->data;
    for (size_t i = 0; i < s->len;) {
        uint32_t c, m[3];
        size_t k = fmt_utf8_decode(d + i, s->len - i, &c);
        if (!k) {
            buf_put(&b, s->data + i, 1);
            i++;
            continue;
        }
        int n;
        if (!upper && c == 0x3A3) {
            m[0] = sigma_lower(d, s->len, i, k);
            n = 1;
        } else {
            n = case_map(c, upper, m);
        }
        for (int j = 0; j < n; j++) {
            char enc[4];
            buf_put(&b, enc, (size_t)utf8_encode(m[j], enc));
        }
        i += k;
    }
    return buf_to_str(I, &b, out);
}

static bool m_str_upper(BUILTIN_ARGS)
{
    return str_case(I, self, out, true);
}

static bool m_str_lower(BUILTIN_ARGS)
{
    return str_case(I, self, out, false);
}

/* Python's ADJUST_INDICES for the optional start/end arguments args[first], args[first+1]
 * (None = absent), in code points. start is not clamped above: callers compare with end. */
static bool str_bounds(Interp *I, const StrObj *s, const Value *args, int nargs, int first,
                       int64_t *start, int64_t *end)
{
    int64_t len = (int64_t)s->nchars;
    *start = 0;
    *end = len;
    for (int k = 0; k < 2; k++) {
        if (nargs <= first + k || args[first + k].tag == V_NONE) continue;
        if (!slice_index(I, args[first + k], k ? end : start)) return false;
    }
    if (*end > len) *end = len;
    else if (*end < 0) {
        *end += len;
        if (*end < 0) *end = 0;
    }
    if (*start < 0) {
        *start += len;
        if (*start < 0) *start = 0;
    }
    return true;
}

/* A str argument, or Python's TypeError for the substring methods. */
static bool need_str_arg(Interp *I, Value v)
{
    if (v.tag == V_STR) return true;
    return err_raise(I, TDL_ERR_TYPE, "must be str, not %s", val_type_name(v));
}

/* Python's tailmatch: does sub occur at the start (or end) of s[start:end]? */
static bool tailmatch(const StrObj *s, const StrObj *sub, int64_t start, int64_t end, bool at_end)
{
    end -= (int64_t)sub->nchars;
    if (end < start) return false;
    if (sub->len == 0) return true;
    size_t b = cp_to_byte(s, at_end ? end : start);
    return b + sub->len <= s->len && memcmp(s->data + b, sub->data, sub->len) == 0;
}

static bool str_startsends(Interp *I, Value self, const Value *args, int nargs, Value *out,
                           bool at_end)
{
    const char *name = at_end ? "endswith" : "startswith";
    StrObj *s = as_str(self);
    int64_t start, end;
    if (!str_bounds(I, s, args, nargs, 1, &start, &end)) return false;
    Value p = args[0];
    if (p.tag == V_STR) {
        *out = v_bool(tailmatch(s, as_str(p), start, end, at_end));
        return true;
    }
    if (p.tag != V_TUPLE)
        return err_raise(I, TDL_ERR_TYPE, "%s first arg must be str or a tuple of str, not %s",
                         name, val_type_name(p));
    for (size_t i = 0; i < as_tuple(p)->n; i++) {
        Value x = as_tuple(p)->items[i];
        if (x.tag != V_STR)
            return err_raise(I, TDL_ERR_TYPE, "tuple for %s must only contain str, not %s", name,
                             val_type_name(x));
        if (tailmatch(s, as_str(x), start, end, at_end)) {
            *out = v_bool(true);
            return true;
        }
    }
    *out = v_bool(false);
    return true;
}

static bool m_str_startswith(BUILTIN_ARGS)
{
    return str_startsends(I, self, args, nargs, out, false);
}

static bool m_str_endswith(BUILTIN_ARGS)
{
    return str_startsends(I, self, args, nargs, out, true);
}

/* find / rfind / index / rindex: the code point index of sub in s[start:end], or -1. */
static bool str_find(Interp *I, Value self, const Value *args, int nargs, bool right,
                     int64_t *pos)
{
    StrObj *s = as_str(self);
    if (!need_str_arg(I, args[0])) return false;
    StrObj *sub = as_str(args[0]);
    int64_t start, end;
    if (!str_bounds(I, s, args, nargs, 1, &start, &end)) return false;
    *pos = -1;
    if (end - start < (int64_t)sub->nchars) return true;
    size_t bs = cp_to_byte(s, start), be = cp_to_byte(s, end);
    if (sub->len == 0) {
        *pos = right ? end : start;
        return true;
    }
    if (!right) {
        const char *p = memmem(s->data + bs, be - bs, sub->data, sub->len);
        if (p) *pos = byte_to_cp(s, (size_t)(p - s->data));
        return true;
    }
    if (be - bs < sub->len) return true;
    for (size_t p = be - sub->len;; p--) {
        if (memcmp(s->data + p, sub->data, sub->len) == 0) {
            *pos = byte_to_cp(s, p);
            return true;
        }
        if (p == bs) break;
    }
    return true;
}

static bool m_str_find(BUILTIN_ARGS)
{
    int64_t pos;
    if (!str_find(I, self, args, nargs, false, &pos)) return false;
    *out = v_int(pos);
    return true;
}

static bool m_str_rfind(BUILTIN_ARGS)
{
    int64_t pos;
    if (!str_find(I, self, args, nargs, true, &pos)) return false;
    *out = v_int(pos);
    return true;
}

static bool m_str_index(BUILTIN_ARGS)
{
    int64_t pos;
    if (!str_find(I, self, args, nargs, false, &pos)) return false;
    if (pos < 0) return err_raise(I, TDL_ERR_VALUE, "substring not found");
    *out = v_int(pos);
    return true;
}

static bool m_str_rindex(BUILTIN_ARGS)
{
    int64_t pos;
    if (!str_find(I, self, args, nargs, true, &pos)) return false;
    if (pos < 0) return err_raise(I, TDL_ERR_VALUE, "substring not found");
    *out = v_int(pos);
    return true;
}

static bool m_str_count(BUILTIN_ARGS)
{
    StrObj *s = as_str(self);
    if (!need_str_arg(I, args[0])) return false;
    StrObj *sub = as_str(args[0]);
    int64_t start, end;
    if (!str_bounds(I, s, args, nargs, 1, &start, &end)) return false;
    if (end - start < (int64_t)sub->nchars) {
        *out = v_int(0);
        return true;
    }
    if (sub->len == 0) {
        *out = v_int(end - start + 1);
        return true;
    }
    size_t i = cp_to_byte(s, start), be = cp_to_byte(s, end);
    int64_t c = 0;
    const char *p;
    while (i < be && (p = memmem(s->data + i, be - i, sub->data, sub->len))) {
        c++;
        i = (size_t)(p - s->data) + sub->len;
    }
    *out = v_int(c);
    return true;
}

static bool m_str_replace(BUILTIN_ARGS)
{
    Value cv = v_int(-1);
    bool given;
    int64_t count = -1;
    if (!get_param(I, "replace", args, nargs, kwnames, nkw, 2, "count", &cv, &given) ||
        !as_index(I, cv, &count))
        return false;
    for (int k = 0; k < 2; k++)
        if (args[k].tag != V_STR)
            return err_raise(I, TDL_ERR_TYPE, "replace() argument %d must be str, not %s", k + 1,
                             val_type_name(args[k]));
    StrObj *s = as_str(self), *old = as_str(args[0]), *new = as_str(args[1]);
    Buf b = {0};
    if (old->len == 0) {
        size_t i = 0;
        while (count != 0) {
            buf_put(&b, new->data, new->len);
            if (count > 0) count--;
            if (i >= s->len) break;
            size_t k = char_len(s->data, s->len, i);
            buf_put(&b, s->data + i, k);
            i += k;
        }
        buf_put(&b, s->data + i, s->len - i);
    } else {
        size_t i = 0;
        const char *p;
        while (count != 0 && (p = memmem(s->data + i, s->len - i, old->data, old->len))) {
            buf_put(&b, s->data + i, (size_t)(p - s->data) - i);
            buf_put(&b, new->data, new->len);
            i = (size_t)(p - s->data) + old->len;
            if (count > 0) count--;
        }
        buf_put(&b, s->data + i, s->len - i);
    }
    return buf_to_str(I, &b, out);
}

/* ---- str.format ------------------------------------------------------------------------------ */

static bool parse_spec(Interp *I, const char *s, size_t n, Value v, FmtSpec *sp)
{
    memset(sp, 0, sizeof *sp);
    sp->width = sp->prec = -1;
    size_t i = 0;
    size_t k = n ? char_len(s, n, 0) : 0;
    bool fill_given = false;
    if (n > k && strchr("<>=^", s[k])) {
        memcpy(sp->fill, s, k);
        sp->filllen = k;
        sp->align = s[k];
        fill_given = true;
        i = k + 1;
    } else if (n > 0 && strchr("<>=^", s[0])) {
        sp->align = s[0];
        i = 1;
    }
    if (i < n && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) sp->sign = s[i++];
    if (i < n && s[i] == '#') {
        sp->alt = true;
        i++;
    }
    if (i < n && s[i] == '0') {
        if (!fill_given) {
            sp->fill[0] = '0';
            sp->filllen = 1;
            fill_given = true;
            if (!sp->align && v.tag != V_STR) sp->align = '=';
        }
        i++;
    }
    if (i < n && s[i] >= '0' && s[i] <= '9') {
        sp->width = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (sp->width > 100000000) return err_raise(I, TDL_ERR_VALUE, "Too many decimal digits in format string");
            sp->width = sp->width * 10 + (s[i++] - '0');
        }
    }
    if (i < n && (s[i] == ',' || s[i] == '_')) sp->group = s[i++];
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || s[i] < '0' || s[i] > '9')
            return err_raise(I, TDL_ERR_VALUE, "Format specifier missing precision");
        sp->prec = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (sp->prec > 100000000) return err_raise(I, TDL_ERR_VALUE, "Too many decimal digits in format string");
            sp->prec = sp->prec * 10 + (s[i++] - '0');
        }
    }
    if (i < n) sp->type = s[i++];
    if (i < n)
        return err_raise(I, TDL_ERR_VALUE, "Invalid format specifier '%.*s' for object of type '%s'",
                         (int)n, s, val_type_name(v));
    if (!fill_given) {
        sp->fill[0] = ' ';
        sp->filllen = 1;
    }
    return true;
}

static size_t count_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) c++;
    return c;
}

static void put_fill(Buf *b, const FmtSpec *sp, int64_t n)
{
    for (int64_t i = 0; i < n; i++) buf_put(b, sp->fill, sp->filllen);
}

/* Pads prefix (sign, 0x) + body to the width: '=' puts the fill between them. */
static void put_padded(Buf *b, const FmtSpec *sp, const char *prefix, size_t plen,
                       const char *body, size_t blen, char default_align)
{
    int64_t len = (int64_t)(count_chars(prefix, plen) + count_chars(body, blen));
    int64_t pad = sp->width > len ? sp->width - len : 0;
    char align = sp->align ? sp->align : default_align;
    int64_t left = align == '>' ? pad : align == '^' ? pad / 2 : 0;
    int64_t right = align == '<' ? pad : align == '^' ? pad - pad / 2 : 0;
    if (align == '=') {
        buf_put(b, prefix, plen);
        put_fill(b, sp, pad);
        buf_put(b, body, blen);
        return;
    }
    put_fill(b, sp, left);
    buf_put(b, prefix, plen);
    buf_put(b, body, blen);
    put_fill(b, sp, right);
}

/* Inserts the grouping character into the digit run at the start of body (every 3 digits, or 4
 * for hex/octal/binary), into b. When zero-padding to a width, zeros join the groups. */
static void put_grouped(Buf *b, const char *digits, size_t nd, const char *rest, size_t nrest,
                        char group, int every, int64_t zero_width)
{
    /* Zero padding: add leading zeros (with their separators) until the width is reached. */
    size_t nz = 0;
    if (zero_width > 0) {
        for (;;) {
            size_t total = nd + nz;
            size_t len = total + (total - 1) / (size_t)every + nrest;
            if ((int64_t)len >= zero_width) break;
            nz++;
        }
    }
    size_t total = nd + nz;
    for (size_t i = 0; i < total; i++) {
        if (i && (total - i) % (size_t)every == 0) buf_put(b, &group, 1);
        char c = i < nz ? '0' : digits[i - nz];
        buf_put(b, &c, 1);
    }
    buf_put(b, rest, nrest);
}

static bool format_int_spec(Interp *I, int64_t v, const FmtSpec *sp, Buf *b, const char *tname)
{
    char type = sp->type ? sp->type : 'd';
    if (sp->prec >= 0) return err_raise(I, TDL_ERR_VALUE, "Precision not allowed in integer format specifier");
    char digits[80];
    size_t nd = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char prefix[8];
    size_t plen = 0;
    if (v < 0) prefix[plen++] = '-';
    else if (sp->sign == '+' || sp->sign == ' ') prefix[plen++] = sp->sign;
    int base = 10;
    switch (type) {
    case 'd': case 'n': base = 10; break;
    case 'x': case 'X': base = 16; break;
    case 'o': base = 8; break;
    case 'b': base = 2; break;
    case 'c': {
        if (sp->sign) return err_raise(I, TDL_ERR_VALUE, "Sign not allowed with integer format specifier 'c'");
        if (v < 0 || v > 0x10FFFF) return err_raise(I, TDL_ERR_OVERFLOW, "%%c arg not in range(0x110000)");
        char c[4];
        int n = utf8_encode((uint32_t)v, c);
        put_padded(b, sp, "", 0, c, (size_t)n, '>');
        return true;
    }
    default:
        return err_raise(I, TDL_ERR_VALUE, "Unknown format code '%c' for object of type '%s'", type,
                         tname);
    }
    if (sp->group == ',' && base != 10)
        return err_raise(I, TDL_ERR_VALUE, "Cannot specify ',' with '%c'.", type);
    if (sp->alt && base != 10) {
        prefix[plen++] = '0';
        prefix[plen++] = type == 'X' ? 'X' : type;
    }
    const char *dig = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    char rev[80];
    size_t nr = 0;
    do {
        rev[nr++] = dig[u % (uint64_t)base];
        u /= (uint64_t)base;
    } while (u);
    while (nr) digits[nd++] = rev[--nr];
    if (sp->group) {
        Buf body = {0};
        int64_t zw = sp->align == '=' && sp->fill[0] == '0' && sp->width > 0
                         ? sp->width - (int64_t)plen : 0;
        put_grouped(&body, digits, nd, "", 0, sp->group, base == 10 ? 3 : 4, zw);
        if (body.nomem) {
            buf_free(&body);
            b->nomem = true;
            return true;
        }
        put_padded(b, sp, prefix, plen, body.p, body.n, '>');
        buf_free(&body);
    } else {
        put_padded(b, sp, prefix, plen, digits, nd, '>');
    }
    return true;
}

/* printf into a new heap string (NULL when out of memory). */
static char *alloc_printf(const char *fmt, int prec, double v)
{
    int need = snprintf(NULL, 0, fmt, prec, v);
    if (need < 0) return NULL;
    char *p = mem_malloc((size_t)need + 3);      /* room for ".0" or "%" appended later */
    if (p) snprintf(p, (size_t)need + 1, fmt, prec, v);
    return p;
}

static bool format_float_spec(Interp *I, double x, const FmtSpec *sp, Buf *b, const char *tname)
{
    char type = sp->type;
    if (!strchr("eEfFgGn%", type ? type : 'g'))
        return err_raise(I, TDL_ERR_VALUE, "Unknown format code '%c' for object of type '%s'", type,
                         tname);
    if (sp->prec > 100000) return err_raise(I, TDL_ERR_VALUE, "precision too big");
    char prefix[4];
    size_t plen = 0;
    bool neg = signbit(x) && !isnan(x);
    if (neg) prefix[plen++] = '-';
    else if (sp->sign == '+' || sp->sign == ' ') prefix[plen++] = sp->sign;
    double a = fabs(x);
    char *body = NULL;
    char small[40];
    int prec = sp->prec < 0 ? 6 : (int)sp->prec;
    bool upper = type == 'E' || type == 'F' || type == 'G';
    if (!isfinite(a)) {
        snprintf(small, sizeof small, "%s%s", isnan(a) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf"),
                 type == '%' ? "%" : "");
    } else if (!type && sp->prec < 0) {
        format_double(a, small);
    } else if (!type) {
        /* Like 'g', but scientific from exp >= prec - 1 on, and at least one digit after the
         * point in fixed notation ('#' keeps trailing zeros, as for 'g'). */
        int p = prec ? prec : 1;
        if (!(body = alloc_printf("%.*e", p - 1, a))) return err_nomem(I);
        char *ep = strchr(body, 'e');
        int exp10 = atoi(ep + 1);
        if (exp10 < -4 || exp10 >= p - 1) {
            char *m = ep;
            bool dot = memchr(body, '.', (size_t)(ep - body)) != NULL;
            if (dot && !sp->alt) {
                while (m[-1] == '0') m--;
                if (m[-1] == '.') m--;
            } else if (!dot && sp->alt) {
                *m++ = '.';     /* "1.e+00"; the buffer has room for one more byte */
            }
            sprintf(m, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
        } else {
            mem_free(body);
            if (!(body = alloc_printf("%.*f", p - 1 - exp10, a))) return err_nomem(I);
            size_t n = strlen(body);
            if (!strchr(body, '.')) {
                strcpy(body + n, ".0");     /* only when no digits follow: n + 2 fits */
            } else if (!sp->alt) {
                while (body[n - 1] == '0') body[--n] = '\0';
                if (body[n - 1] == '.') body[n++] = '0', body[n] = '\0';
            }
        }
    } else {
        char cf[16];
        char t = type == 'n' ? 'g' : type == '%' ? 'f' : type;
        snprintf(cf, sizeof cf, "%%%s.*%c", sp->alt ? "#" : "", t);
        if (!(body = alloc_printf(cf, prec, type == '%' ? a * 100.0 : a))) return err_nomem(I);
        if (type == '%') strcat(body, "%");
    }
    if (!body) body = small;
    size_t blen = strlen(body);
    if (sp->group && isfinite(a)) {
        size_t nd = 0;
        while (nd < blen && body[nd] >= '0' && body[nd] <= '9') nd++;
        Buf g = {0};
        int64_t zw = sp->align == '=' && sp->fill[0] == '0' && sp->width > 0
                         ? sp->width - (int64_t)plen : 0;
        put_grouped(&g, body, nd, body + nd, blen - nd, sp->group, 3, zw);
        if (g.nomem) b->nomem = true;
        else put_padded(b, sp, prefix, plen, g.p, g.n, '>');
        buf_free(&g);
    } else {
        put_padded(b, sp, prefix, plen, body, blen, '>');
    }
    if (body != small) mem_free(body);
    return true;
}

/* format(v, spec) into b. */
static bool format_value(Interp *I, Value v, const char *spec, size_t n, Buf *b)
{
    if (v.tag == V_TENSOR && fc_tensor_npos(as_tensor(v)) == 0 && fc_tensor_numel(as_tensor(v)) == 1) {
        /* torch's Tensor.__format__: a 0-d tensor formats as its item() (f"{loss:.4f}"), with
         * an empty spec too (f"{loss}" is 0.12345600128173828, where print(loss) shows the tensor) */
        const BuiltinDef *item = tensor_method("item");
        Value x;
        if (!item || !builtin_call(I, item, v, NULL, 0, NULL, 0, &x)) return item ? false : err_nomem(I);
        bool ok = format_value(I, x, spec, n, b);
        val_decref(I, x);
        return ok;
    }
    if (n == 0) return val_str(I, v, b);
    FmtSpec sp;
    if (!parse_spec(I, spec, n, v, &sp)) return false;
    if (v.tag == V_INT || v.tag == V_BOOL) {
        int64_t iv = v.tag == V_INT ? v.i : v.b;
        if (sp.type && strchr("eEfFgG%", sp.type))
            return format_float_spec(I, (double)iv, &sp, b, val_type_name(v));
        return format_int_spec(I, iv, &sp, b, val_type_name(v));
    }
    if (v.tag == V_FLOAT) return format_float_spec(I, v.f, &sp, b, "float");
    if (v.tag != V_STR)
        return err_raise(I, TDL_ERR_TYPE, "unsupported format string passed to %s.__format__",
                         val_type_name(v));
    if (sp.type && sp.type != 's')
        return err_raise(I, TDL_ERR_VALUE, "Unknown format code '%c' for object of type 'str'", sp.type);
    if (sp.sign) return err_raise(I, TDL_ERR_VALUE, "Sign not allowed in string format specifier");
    if (sp.alt) return err_raise(I, TDL_ERR_VALUE, "Alternate form (#) not allowed in string format specifier");
    if (sp.group) return err_raise(I, TDL_ERR_VALUE, "Cannot specify '%c' with 's'.", sp.group);
    if (sp.align == '=') return err_raise(I, TDL_ERR_VALUE, "'=' alignment not allowed in string format specifier");
    StrObj *s = as_str(v);
    size_t len = s->len;
    if (sp.prec >= 0 && (size_t)sp.prec < s->nchars) len = cp_to_byte(s, sp.prec);
    put_padded(b, &sp, "", 0, s->data, len, '<');
    return true;
}

bool val_format(Interp *I, Value v, char conv, const char *spec, size_t slen, Buf *b)
{
    bool ok;
    if (conv == 'r' || conv == 'a' || (conv == 's' && v.tag != V_STR)) {
        Buf r = {0};
        ok = conv == 'a' ? val_ascii(I, v, &r) : conv == 'r' ? val_repr(I, v, &r) : val_str(I, v, &r);
        if (ok && r.nomem) ok = err_nomem(I);
        Value rs;
        if (ok) ok = str_new(I, r.p ? r.p : "", r.n, &rs);
        buf_free(&r);
        if (ok) {
            ok = format_value(I, rs, spec, slen, b);
            val_decref(I, rs);
        }
    } else {
        ok = format_value(I, v, spec, slen, b);
    }
    return ok;
}

/* ---- printf-style formatting: str % args ------------------------------------------------------- */

/* The next argument of a % format: from the tuple, or the one non-tuple value. */
static bool pct_next_arg(Interp *I, Value args, size_t *k, Value *out)
{
    if (args.tag == V_TUPLE) {
        if (*k >= as_tuple(args)->n) return err_raise(I, TDL_ERR_TYPE, "not enough arguments for format string");
        *out = as_tuple(args)->items[(*k)++];
        return true;
    }
    if ((*k)++ > 0) return err_raise(I, TDL_ERR_TYPE, "not enough arguments for format string");
    *out = args;
    return true;
}

/* An int or float for a numeric conversion (ints truncate floats for d/i/u, as Python). */
static bool pct_number(Interp *I, Value v, char type, Value *out)
{
    bool intconv = strchr("diuoxXc", type) != NULL;
    if (is_intlike(v)) {
        *out = v_int(as_i(v));
        return true;
    }
    if (v.tag == V_FLOAT && !(type == 'o' || type == 'x' || type == 'X' || type == 'c')) {
        if (intconv) {
            if (!isfinite(v.f)) return err_raise(I, isnan(v.f) ? TDL_ERR_VALUE : TDL_ERR_OVERFLOW,
                                                 isnan(v.f) ? "cannot convert float NaN to integer"
                                                            : "cannot convert float infinity to integer");
            if (fabs(v.f) >= 9223372036854775808.0) return int_too_large(I);
            *out = v_int((int64_t)v.f);
        } else {
            *out = v;
        }
        return true;
    }
    if (type == 'o' || type == 'x' || type == 'X' || type == 'c')
        return err_raise(I, TDL_ERR_TYPE, "%%%c format: an integer is required, not %s", type, val_type_name(v));
    return err_raise(I, TDL_ERR_TYPE, "%%%c format: a real number is required, not %s", type, val_type_name(v));
}

/* fmt % args, as Python's str.__mod__ (without the %(name)s mapping form's length modifiers). */
bool str_percent(Interp *I, Value fmtv, Value args, Value *out)
{
    StrObj *f = as_str(fmtv);
    const char *z = f->data;
    size_t n = f->len, k = 0;
    bool mapping = args.tag == V_DICT, used_mapping = false;
    Buf b = {0};
    for (size_t i = 0; i < n;) {
        if (z[i] != '%') {
            size_t j = i;
            while (j < n && z[j] != '%') j++;
            buf_put(&b, z + i, j - i);
            i = j;
            continue;
        }
        i++;
        Value arg = v_undef();
        Value keyed = v_undef();        /* a reference, from %(name) */
        if (i < n && z[i] == '(') {
            if (!mapping) {
                buf_free(&b);
                return err_raise(I, TDL_ERR_TYPE, "format requires a mapping");
            }
            size_t j = ++i;
            int depth = 1;
            while (j < n && depth) {
                if (z[j] == '(') depth++;
                else if (z[j] == ')') depth--;
                if (depth) j++;
            }
            if (j >= n) {
                buf_free(&b);
                return err_raise(I, TDL_ERR_VALUE, "incomplete format key");
            }
            Value key;
            if (!str_new(I, z + i, j - i, &key)) {
                buf_free(&b);
                return false;
            }
            bool ok = val_getitem(I, args, key, &keyed);
            val_decref(I, key);
            if (!ok) {
                buf_free(&b);
                return false;
            }
            arg = keyed;
            used_mapping = true;
            i = j + 1;
        }
        char flags[8];
        int nf = 0;
        while (i < n && strchr("-+ #0", z[i])) {
            if (nf < 6 && !memchr(flags, z[i], (size_t)nf)) flags[nf++] = z[i];
            i++;
        }
        flags[nf] = '\0';
        int64_t width = -1, prec = -1;
        bool ok = true;
        for (int part = 0; part < 2 && ok; part++) {
            int64_t *dst = part ? &prec : &width;
            if (part) {
                if (i >= n || z[i] != '.') break;
                i++;
                prec = 0;
            }
            if (i < n && z[i] == '*') {
                Value w;
                i++;
                ok = pct_next_arg(I, args, &k, &w);
                if (ok && !is_intlike(w)) ok = err_raise(I, TDL_ERR_TYPE, "* wants int");
                if (ok) *dst = as_i(w);
                if (ok && !part && *dst < 0) {     /* a negative * width left-aligns */
                    *dst = -*dst;
                    if (nf < 6) flags[nf++] = '-', flags[nf] = '\0';
                }
            } else {
                while (i < n && z[i] >= '0' && z[i] <= '9') {
                    if (*dst < 0) *dst = 0;
                    if (*dst > 100000000) ok = err_raise(I, TDL_ERR_VALUE, "width too big");
                    *dst = *dst * 10 + (z[i++] - '0');
                }
            }
        }
        while (ok && i < n && strchr("hlL", z[i])) i++;
        if (ok && i >= n) ok = err_raise(I, TDL_ERR_VALUE, "incomplete format");
        if (!ok) {
            val_decref(I, keyed);
            buf_free(&b);
            return false;
        }
        char type = z[i++];
        if (type == '%') {
            buf_put(&b, "%", 1);
            val_decref(I, keyed);
            continue;
        }
        if (!strchr("diouxXeEfFgGcrsa", type)) {
            val_decref(I, keyed);
            buf_free(&b);
            return err_raise(I, TDL_ERR_VALUE, "unsupported format character '%c' (0x%x) at index %zu", type,
                             (unsigned)(unsigned char)type, i - 1);
        }
        if (arg.tag == V_UNDEF && !(ok = pct_next_arg(I, args, &k, &arg))) {
            buf_free(&b);
            return false;
        }
        bool left = strchr(flags, '-') != NULL;
        FmtSpec sp = {.fill = " ", .filllen = 1, .align = left ? '<' : '>', .width = width, .prec = -1};
        Buf t = {0};
        if (strchr("rsa", type)) {
            ok = type == 's' ? val_str(I, arg, &t) : type == 'a' ? val_ascii(I, arg, &t) : val_repr(I, arg, &t);
            if (ok && t.nomem) ok = err_nomem(I);
            if (ok) {
                size_t len = t.n;
                if (prec >= 0) {        /* precision counts characters */
                    size_t c = 0, bi = 0;
                    for (; bi < t.n; bi++)
                        if (((unsigned char)t.p[bi] & 0xC0) != 0x80 && c++ == (size_t)prec) break;
                    len = bi;
                }
                put_padded(&b, &sp, "", 0, t.p ? t.p : "", len, '>');
            }
            buf_free(&t);
        } else if (type == 'c') {
            char cb[8];
            int cl = 0;
            if (arg.tag == V_STR) {
                if (as_str(arg)->nchars != 1)
                    ok = err_raise(I, TDL_ERR_TYPE, "%%c requires int or char");
                else
                    memcpy(cb, as_str(arg)->data, (size_t)(cl = (int)as_str(arg)->len));
            } else if (is_intlike(arg)) {
                int64_t c = as_i(arg);
                if (c < 0 || c > 0x10FFFF) ok = err_raise(I, TDL_ERR_OVERFLOW, "%%c arg not in range(0x110000)");
                else cl = utf8_encode((uint32_t)c, cb);
            } else {
                ok = err_raise(I, TDL_ERR_TYPE, "%%c requires int or char");
            }
            if (ok) put_padded(&b, &sp, "", 0, cb, (size_t)cl, '>');
        } else {
            Value num = v_none();
            ok = pct_number(I, arg, type, &num);
            if (ok && num.tag == V_INT) {
                /* ints by hand: C's %#o and %#x of 0 differ from Python's */
                int64_t v = num.i;
                uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
                char digits[72], body[160], prefix[8];
                int base = type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
                int nd = 0;
                do {
                    int d = (int)(a % (uint64_t)base);
                    digits[nd++] = (char)(d < 10 ? '0' + d : (type == 'X' ? 'A' : 'a') + d - 10);
                    a /= (uint64_t)base;
                } while (a);
                int64_t zeros = prec > nd ? prec - nd : 0;
                if (zeros > 100) zeros = 100;
                int bl = 0;
                for (int64_t z0 = 0; z0 < zeros; z0++) body[bl++] = '0';
                while (nd) body[bl++] = digits[--nd];
                int pl = 0;
                if (v < 0) prefix[pl++] = '-';
                else if (strchr(flags, '+')) prefix[pl++] = '+';
                else if (strchr(flags, ' ')) prefix[pl++] = ' ';
                if (strchr(flags, '#') && base != 10) {
                    prefix[pl++] = '0';
                    prefix[pl++] = type == 'o' ? 'o' : type;
                }
                if (!left && strchr(flags, '0')) {
                    sp.fill[0] = '0';
                    sp.align = '=';
                }
                put_padded(&b, &sp, prefix, (size_t)pl, body, (size_t)bl, '>');
            } else if (ok) {
                char cf[40];
                int w = snprintf(cf, sizeof cf, "%%%s", flags);
                if (width >= 0) w += snprintf(cf + w, sizeof cf - (size_t)w, "%lld", (long long)width);
                if (prec >= 0) w += snprintf(cf + w, sizeof cf - (size_t)w, ".%lld", (long long)prec);
                snprintf(cf + w, sizeof cf - (size_t)w, "%c", type);
                int need = snprintf(NULL, 0, cf, num.f);
                char *tmp = need >= 0 ? mem_malloc((size_t)need + 1) : NULL;
                if (!tmp) {
                    ok = err_nomem(I);
                } else {
                    snprintf(tmp, (size_t)need + 1, cf, num.f);
                    buf_puts(&b, tmp);
                    mem_free(tmp);
                }
            }
        }
        val_decref(I, keyed);
        if (!ok) {
            buf_free(&b);
            return false;
        }
    }
    if (!mapping && ((args.tag == V_TUPLE && k < as_tuple(args)->n) || (args.tag != V_TUPLE && k == 0 && !used_mapping))) {
        /* Python lets a non-tuple, non-mapping argument go unused only when it is... never */
        buf_free(&b);
        return err_raise(I, TDL_ERR_TYPE, "not all arguments converted during string formatting");
    }
    return buf_to_str(I, &b, out);
}

typedef struct FmtState {
    const Value *args;
    int nargs;
    const char *const *kwnames;
    const Value *kwvals;
    int nkw;
    int next_auto;      /* -1: manual numbering in use */
    bool used_auto;
} FmtState;

static bool format_text(Interp *I, const char *f, size_t n, FmtState *st, Buf *b, int depth);

/* One replacement field's text (between the braces). */
static bool format_field(Interp *I, const char *f, size_t n, FmtState *st, Buf *b, int depth)
{
    size_t i = 0;
    while (i < n && f[i] != '.' && f[i] != '[' && f[i] != '!' && f[i] != ':') i++;
    Value v;
    if (i == 0 || (f[0] >= '0' && f[0] <= '9')) {
        int64_t idx = 0;
        if (i == 0) {
            if (st->next_auto < 0)
                return err_raise(I, TDL_ERR_VALUE,
                                 "cannot switch from manual field specification to automatic field numbering");
            idx = st->next_auto++;
            st->used_auto = true;
        } else {
            if (st->used_auto)
                return err_raise(I, TDL_ERR_VALUE,
                                 "cannot switch from automatic field numbering to manual field specification");
            st->next_auto = -1;
            for (size_t k = 0; k < i; k++) {
                if (f[k] < '0' || f[k] > '9' || idx > 100000000)
                    return err_raise(I, TDL_ERR_KEY, "'%.*s'", (int)i, f);
                idx = idx * 10 + (f[k] - '0');
            }
        }
        if (idx >= st->nargs)
            return err_raise(I, TDL_ERR_INDEX,
                             "Replacement index %" PRId64 " out of range for positional args tuple", idx);
        v = st->args[idx];
    } else {
        int k;
        for (k = 0; k < st->nkw; k++)
            if (strlen(st->kwnames[k]) == i && memcmp(st->kwnames[k], f, i) == 0) break;
        if (k == st->nkw) return err_raise(I, TDL_ERR_KEY, "'%.*s'", (int)i, f);
        v = st->kwvals[k];
    }
    val_incref(v);
    /* .attr and [index] accessors */
    while (i < n && (f[i] == '.' || f[i] == '[')) {
        Value next;
        bool ok;
        if (f[i] == '.') {
            size_t j = ++i;
            while (i < n && f[i] != '.' && f[i] != '[' && f[i] != '!' && f[i] != ':') i++;
            if (i == j) {
                val_decref(I, v);
                return err_raise(I, TDL_ERR_VALUE, "Empty attribute in format string");
            }
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(i - j), f + j);
            ok = val_getattr(I, v, name, &next);
        } else {
            size_t j = ++i;
            while (i < n && f[i] != ']') i++;
            if (i >= n) {
                val_decref(I, v);
                return err_raise(I, TDL_ERR_VALUE, "Missing ']' in format string");
            }
            if (i == j) {
                val_decref(I, v);
                return err_raise(I, TDL_ERR_VALUE, "Empty attribute in format string");
            }
            bool digits = true;
            int64_t idx = 0;
            for (size_t k = j; k < i; k++) {
                if (f[k] < '0' || f[k] > '9' || idx > 100000000) digits = false;
                else idx = idx * 10 + (f[k] - '0');
            }
            Value key;
            if (digits) key = v_int(idx);
            else if (!str_new(I, f + j, i - j, &key)) {
                val_decref(I, v);
                return false;
            }
            ok = val_getitem(I, v, key, &next);
            val_decref(I, key);
            i++;
        }
        val_decref(I, v);
        if (!ok) return false;
        v = next;
    }
    char conv = 0;
    if (i < n && f[i] == '!') {
        if (i + 1 >= n) {
            val_decref(I, v);
            return err_raise(I, TDL_ERR_VALUE, "end of string while looking for conversion specifier");
        }
        conv = f[i + 1];
        i += 2;
        if (i < n && f[i] != ':') {
            val_decref(I, v);
            return err_raise(I, TDL_ERR_VALUE, "expected ':' after conversion specifier");
        }
        if (conv != 'r' && conv != 's' && conv != 'a') {
            val_decref(I, v);
            return err_raise(I, TDL_ERR_VALUE, "Unknown conversion specifier %c", conv);
        }
    }
    const char *spec = "";
    size_t slen = 0;
    Buf nested = {0};
    if (i < n && f[i] == ':') {
        spec = f + i + 1;
        slen = n - i - 1;
        if (memchr(spec, '{', slen)) {
            /* A nested field in the spec ({:{width}}) is formatted first. */
            if (depth >= 1) {
                val_decref(I, v);
                return err_raise(I, TDL_ERR_VALUE, "Max string recursion exceeded");
            }
            if (!format_text(I, spec, slen, st, &nested, depth + 1)) {
                val_decref(I, v);
                buf_free(&nested);
                return false;
            }
            spec = nested.p ? nested.p : "";
            slen = nested.n;
        }
    }
    bool ok = val_format(I, v, conv, spec, slen, b);
    buf_free(&nested);
    val_decref(I, v);
    return ok;
}

static bool format_text(Interp *I, const char *f, size_t n, FmtState *st, Buf *b, int depth)
{
    size_t i = 0, run = 0;
    while (i < n) {
        char c = f[i];
        if (c != '{' && c != '}') {
            i++;
            continue;
        }
        buf_put(b, f + run, i - run);
        if (c == '}') {
            if (i + 1 < n && f[i + 1] == '}') {
                buf_put(b, "}", 1);
                i += 2;
                run = i;
                continue;
            }
            return err_raise(I, TDL_ERR_VALUE, "Single '}' encountered in format string");
        }
        if (i + 1 < n && f[i + 1] == '{') {
            buf_put(b, "{", 1);
            i += 2;
            run = i;
            continue;
        }
        /* Find the matching '}', allowing one level of nested braces in the spec. */
        size_t j = i + 1;
        int level = 1;
        while (j < n) {
            if (f[j] == '{') level++;
            else if (f[j] == '}' && --level == 0) break;
            j++;
        }
        if (j >= n) {
            if (i + 1 >= n) return err_raise(I, TDL_ERR_VALUE, "Single '{' encountered in format string");
            return err_raise(I, TDL_ERR_VALUE, "expected '}' before end of string");
        }
        if (!format_field(I, f + i + 1, j - i - 1, st, b, depth)) return false;
        i = j + 1;
        run = i;
    }
    buf_put(b, f + run, n - run);
    if (b->nomem) return err_nomem(I);
    return true;
}

static bool m_str_format(BUILTIN_ARGS)
{
    FmtState st = {args, nargs, kwnames, args + nargs, nkw, 0, false};
    Buf b = {0};
    if (!format_text(I, as_str(self)->data, as_str(self)->len, &st, &b, 0)) {
        buf_free(&b);
        return false;
    }
    return buf_to_str(I, &b, out);
}

/* ---- padding, partition, line splitting, predicates, casing ---- */

/* ljust / rjust / center / zfill: self padded to width code points; left is the count of fill
 * characters put before it, given the padding (Python's pad()). */
static bool str_pad(Interp *I, Value self, const Value *args, int nargs, Value *out, int how)
{
    StrObj *s = as_str(self);
    int64_t width = 0;
    if (!as_index(I, args[0], &width)) return false;
    const char *fill = how == 3 ? "0" : " ";
    size_t fl = 1;
    if (nargs > 1) {
        Value f = args[1];
        if (f.tag != V_STR)
            return err_raise(I, TDL_ERR_TYPE, "The fill character must be a unicode character, not %s", val_type_name(f));
        if (as_str(f)->nchars != 1)
            return err_raise(I, TDL_ERR_TYPE, "The fill character must be exactly one character long");
        fill = as_str(f)->data;
        fl = as_str(f)->len;
    }
    if (width <= (int64_t)s->nchars) {
        val_incref(self);
        *out = self;
        return true;
    }
    int64_t pad = width - (int64_t)s->nchars;
    int64_t left = how == 0 ? 0 : how == 1 || how == 3 ? pad : pad / 2 + (pad & width & 1);
    Buf b = {0};
    size_t sign = how == 3 && s->len && (s->data[0] == '+' || s->data[0] == '-');
    buf_put(&b, s->data, sign);
    for (int64_t i = 0; i < left; i++) buf_put(&b, fill, fl);
    buf_put(&b, s->data + sign, s->len - sign);
    for (int64_t i = left; i < pad; i++) buf_put(&b, fill, fl);
    return buf_to_str(I, &b, out);
}

static bool m_str_ljust(BUILTIN_ARGS) { return str_pad(I, self, args, nargs, out, 0); }
static bool m_str_rjust(BUILTIN_ARGS) { return str_pad(I, self, args, nargs, out, 1); }
static bool m_str_center(BUILTIN_ARGS) { return str_pad(I, self, args, nargs, out, 2); }
static bool m_str_zfill(BUILTIN_ARGS) { return str_pad(I, self, args, nargs, out, 3); }

/* partition / rpartition: (head, sep, tail) around the first (last) sep; without it, (self, "",
 * "") or ("", "", self). */
static bool str_partition(Interp *I, Value self, Value sepv, Value *out, bool right)
{
    if (!need_str_arg(I, sepv)) return false;
    StrObj *s = as_str(self), *sep = as_str(sepv);
    if (sep->len == 0) return err_raise(I, TDL_ERR_VALUE, "empty separator");
    const char *p = NULL;
    for (const char *q = s->data; (q = memmem(q, s->len - (size_t)(q - s->data), sep->data, sep->len));
         q++) {
        p = q;
        if (!right) break;
    }
    size_t at = p ? (size_t)(p - s->data) : right ? 0 : s->len, sl = p ? sep->len : 0;
    TupleObj *t = tuple_alloc(I, 3);
    if (!t) return false;
    bool ok;
    if (!p) {
        val_incref(self);
        t->items[right ? 2 : 0] = self;
        ok = str_new(I, "", 0, &t->items[1]) && str_new(I, "", 0, &t->items[right ? 0 : 2]);
    } else {
        val_incref(sepv);
        t->items[1] = sepv;
        ok = str_new(I, s->data, at, &t->items[0]) &&
             str_new(I, s->data + at + sl, s->len - at - sl, &t->items[2]);
    }
    if (!ok) {
        val_decref(I, TUPLEV(t));
        return false;
    }
    *out = TUPLEV(t);
    return true;
}

static bool m_str_partition(BUILTIN_ARGS) { return str_partition(I, self, args[0], out, false); }
static bool m_str_rpartition(BUILTIN_ARGS) { return str_partition(I, self, args[0], out, true); }

/* removeprefix / removesuffix */
static bool str_remove(Interp *I, Value self, Value a, Value *out, bool suffix)
{
    if (a.tag != V_STR)
        return err_raise(I, TDL_ERR_TYPE, "%s() argument must be str, not %s",
                         suffix ? "removesuffix" : "removeprefix", val_type_name(a));
    StrObj *s = as_str(self), *x = as_str(a);
    if (x->len == 0 || x->len > s->len ||
        memcmp(s->data + (suffix ? s->len - x->len : 0), x->data, x->len) != 0) {
        val_incref(self);
        *out = self;
        return true;
    }
    return str_new(I, s->data + (suffix ? 0 : x->len), s->len - x->len, out);
}

static bool m_str_removeprefix(BUILTIN_ARGS) { return str_remove(I, self, args[0], out, false); }
static bool m_str_removesuffix(BUILTIN_ARGS) { return str_remove(I, self, args[0], out, true); }

/* Bytes of the line boundary at s[i] (Python's: \n \r \r\n \v \f \x1c-\x1e \x85 \u2028 \u2029),
 * else 0. */
static size_t line_break_len(const char *s, size_t n, size_t i)
{
    unsigned c = (unsigned char)s[i];
    if (c == '\r') return i + 1 < n && s[i + 1] == '\n' ? 2 : 1;
    if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E)) return 1;
    uint32_t cp;
    size_t k = c >= 0x80 ? fmt_utf8_decode((const unsigned char *)s + i, n - i, &cp) : 0;
    return k && (cp == 0x85 || cp == 0x2028 || cp == 0x2029) ? k : 0;
}

static bool m_str_splitlines(BUILTIN_ARGS)
{
    Value kv = v_bool(false);
    bool given;
    if (!get_param(I, "splitlines", args, nargs, kwnames, nkw, 0, "keepends", &kv, &given)) return false;
    bool keep;
    if (kv.tag == V_BOOL) keep = kv.b;
    else if (kv.tag == V_INT) keep = kv.i != 0;
    else return err_raise(I, TDL_ERR_TYPE, "'%s' object cannot be interpreted as an integer", val_type_name(kv));
    StrObj *s = as_str(self);
    ListObj *l = list_alloc(I, 0);
    if (!l) return false;
    bool ok = true;
    size_t start = 0;
    for (size_t i = 0; ok && i < s->len;) {
        size_t k = line_break_len(s->data, s->len, i);
        if (!k) {
            i += char_len(s->data, s->len, i);
            continue;
        }
        ok = push_str(I, l, s->data + start, i - start + (keep ? k : 0));
        start = i += k;
    }
    if (ok && start < s->len) ok = push_str(I, l, s->data + start, s->len - start);
    if (!ok) {
        val_decref(I, LISTV(l));
        return false;
    }
    *out = LISTV(l);
    return true;
}

/* isdigit / isdecimal / isnumeric / isalpha / isalnum: true for a non-empty str of ASCII
 * characters of the class; Python's Unicode classes beyond ASCII are not tabled here, so a
 * non-ASCII character is an error rather than a guess. */
static bool str_is_class(Interp *I, Value self, Value *out, int cls, const char *name)
{
    StrObj *s = as_str(self);
    bool r = s->len > 0;
    for (size_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)s->data[i];
        if (c >= 0x80)
            return err_raise(I, TDL_ERR_NOT_IMPLEMENTED, "str.%s() of non-ASCII text is not supported", name);
        bool digit = c >= '0' && c <= '9', alpha = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
        r = r && (cls == 0 ? digit : cls == 1 ? alpha : digit || alpha);
    }
    *out = v_bool(r);
    return true;
}

static bool m_str_isdigit(BUILTIN_ARGS) { return str_is_class(I, self, out, 0, "isdigit"); }
static bool m_str_isdecimal(BUILTIN_ARGS) { return str_is_class(I, self, out, 0, "isdecimal"); }
static bool m_str_isnumeric(BUILTIN_ARGS) { return str_is_class(I, self, out, 0, "isnumeric"); }
static bool m_str_isalpha(BUILTIN_ARGS) { return str_is_class(I, self, out, 1, "isalpha"); }
static bool m_str_isalnum(BUILTIN_ARGS) { return str_is_class(I, self, out, 2, "isalnum"); }

static bool m_str_isspace(BUILTIN_ARGS)
{
    StrObj *s = as_str(self);
    size_t i = 0, k;
    while (i < s->len && (k = space_len(s->data, s->len, i))) i += k;
    *out = v_bool(s->len > 0 && i == s->len);
    return true;
}

/* Whether c changes under the case mapping to upper (a lowercase letter) or to lower. */
static bool changes_case(uint32_t c, bool upper)
{
    uint32_t m[3];
    return case_map(c, upper, m) != 1 || m[0] != c;
}

/* islower / isupper: some cased character, and none of the other case. */
static bool str_is_case(Value self, Value *out, bool upper)
{
    StrObj *s = as_str(self);
    const unsigned char *d = (const unsigned char *)s->data;
    bool cased = false;
    for (size_t i = 0; i < s->len;) {
        uint32_t c;
        size_t k = fmt_utf8_decode(d + i, s->len - i, &c);
        if (!k) k = 1, c = 0xFFFD;
        if (changes_case(c, upper)) {
            *out = v_bool(false);
            return true;
        }
        cased |= changes_case(c, !upper);
        i += k;
    }
    *out = v_bool(cased);
    return true;
}

static bool m_str_islower(BUILTIN_ARGS) { return str_is_case(self, out, false); }
static bool m_str_isupper(BUILTIN_ARGS) { return str_is_case(self, out, true); }

/* istitle: some cased character; an uppercase one only after an uncased one, a lowercase one only
 * after a cased one. */
static bool m_str_istitle(BUILTIN_ARGS)
{
    StrObj *s = as_str(self);
    const unsigned char *d = (const unsigned char *)s->data;
    bool cased = false, prev = false;
    for (size_t i = 0; i < s->len;) {
        uint32_t c;
        size_t k = fmt_utf8_decode(d + i, s->len - i, &c);
        if (!k) k = 1, c = 0xFFFD;
        i += k;
        bool upper = changes_case(c, false), lower = changes_case(c, true);
        if ((upper && prev) || (lower && !prev)) {
            *out = v_bool(false);
            return true;
        }
        prev = upper || lower;
        cased |= prev;
    }
    *out = v_bool(cased);
    return true;
}

static bool m_str_isprintable(BUILTIN_ARGS)
{
    StrObj *s = as_str(self);
    const unsigned char *d = (const unsigned char *)s->data;
    for (size_t i = 0; i < s->len;) {
        uint32_t c;
        size_t k = fmt_utf8_decode(d + i, s->len - i, &c);
        if (!k) k = 1, c = 0xFFFD;
        i += k;
        if (c < 0x20 || c == 0x7F || (c >= 0x80 && unicode_unprintable(c))) {
            *out = v_bool(false);
            return true;
        }
    }
    *out = v_bool(true);
    return true;
}

/* isidentifier: a letter or _ then letters, digits and _ (ASCII; Unicode's XID classes are not
 * in tdl). */
static bool m_str_isidentifier(BUILTIN_ARGS)
{
    StrObj *s = as_str(self);
    bool r = s->len > 0;
    for (size_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)s->data[i];
        if (c >= 0x80)
            return err_raise(I, TDL_ERR_NOT_IMPLEMENTED, "str.isidentifier() of non-ASCII text is not supported");
        bool alpha = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
        r = r && (alpha || c == '_' || (i > 0 && c >= '0' && c <= '9'));
    }
    *out = v_bool(r);
    return true;
}

/* expandtabs(tabsize=8): each tab to spaces up to the next multiple of tabsize columns, counted in
 * code points from the last newline or carriage return. */
static bool m_str_expandtabs(BUILTIN_ARGS)
{
    int64_t tab = 8;
    Value tv;
    bool given;
    if (!get_param(I, "expandtabs", args, nargs, kwnames, nkw, 0, "tabsize", &tv, &given)) return false;
    if (given && !as_index(I, tv, &tab)) return false;
    StrObj *s = as_str(self);
    Buf b = {0};
    int64_t col = 0;
    for (size_t i = 0; i < s->len && !b.nomem; i++) {
        char c = s->data[i];
        if (c == '\t') {
            if (tab > 0) {
                int64_t n = tab - col % tab;
                if (n > (int64_t)INT32_MAX - col) {
                    buf_free(&b);
                    return err_raise(I, TDL_ERR_OVERFLOW, "new string is too long");
                }
                for (int64_t j = 0; j < n; j++) buf_put(&b, " ", 1);
                col += n;
            }
            continue;
        }
        buf_put(&b, &c, 1);
        if (c == '\n' || c == '\r') col = 0;
        else if (((unsigned char)c & 0xC0) != 0x80) col++;
    }
    return buf_to_str(I, &b, out);
}

/* The title case of c (the upper case but for the digraphs and ß); the count written to o. */
static int title_map(uint32_t c, uint32_t *o)
{
    static const uint32_t digraph[] = {0x1C4, 0x1C7, 0x1CA, 0x1F1};
    for (size_t j = 0; j < sizeof digraph / sizeof *digraph; j++)
        if (c >= digraph[j] && c <= digraph[j] + 2) {
            o[0] = digraph[j] + 1;
            return 1;
        }
    if (c == 0xDF) {
        o[0] = 'S';
        o[1] = 's';
        return 2;
    }
    return case_map(c, true, o);
}

/* capitalize / title / swapcase: how = 0, 1, 2. capitalize title-cases the first character and
 * lowers the rest; title title-cases a cased character after an uncased one and lowers the
 * others; swapcase swaps each. */
static bool str_recase(Interp *I, Value self, Value *out, int how)
{
    StrObj *s = as_str(self);
    const unsigned char *d = (const unsigned char *)s->data;
    Buf b = {0};
    bool prev_cased = false;
    for (size_t i = 0; i < s->len;) {
        uint32_t c, m[3];
        size_t k = fmt_utf8_decode(d + i, s->len - i, &c);
        if (!k) {
            buf_put(&b, s->data + i, 1);
            i++;
            prev_cased = false;
            continue;
        }
        bool up = how == 0 ? i == 0 : how == 1 ? !prev_cased : changes_case(c, true);
        int n = up && how < 2 ? title_map(c, m) : !up && c == 0x3A3 ? (m[0] = sigma_lower(d, s->len, i, k), 1)
                                                                     : case_map(c, up, m);
        for (int j = 0; j < n; j++) {
            char enc[4];
            buf_put(&b, enc, (size_t)utf8_encode(m[j], enc));
        }
        prev_cased = is_cased(c);
        i += k;
    }
    return buf_to_str(I, &b, out);
}

static bool m_str_capitalize(BUILTIN_ARGS) { return str_recase(I, self, out, 0); }
static bool m_str_title(BUILTIN_ARGS) { return str_recase(I, self, out, 1); }
static bool m_str_swapcase(BUILTIN_ARGS) { return str_recase(I, self, out, 2); }

static const BuiltinDef str_methods[] = {
    {"join", m_str_join, 1, 1, NULL},
    {"split", m_str_split, 0, 2, "sep maxsplit"},
    {"rsplit", m_str_rsplit, 0, 2, "sep maxsplit"},
    {"strip", m_str_strip, 0, 1, NULL},
    {"lstrip", m_str_lstrip, 0, 1, NULL},
    {"rstrip", m_str_rstrip, 0, 1, NULL},
    {"upper", m_str_upper, 0, 0, NULL},
    {"lower", m_str_lower, 0, 0, NULL},
    {"startswith", m_str_startswith, 1, 3, NULL},
    {"endswith", m_str_endswith, 1, 3, NULL},
    {"replace", m_str_replace, 2, 3, "count"},
    {"find", m_str_find, 1, 3, NULL},
    {"rfind", m_str_rfind, 1, 3, NULL},
    {"index", m_str_index, 1, 3, NULL},
    {"rindex", m_str_rindex, 1, 3, NULL},
    {"count", m_str_count, 1, 3, NULL},
    {"format", m_str_format, 0, -1, "*"},
    {"ljust", m_str_ljust, 1, 2, NULL},
    {"rjust", m_str_rjust, 1, 2, NULL},
    {"center", m_str_center, 1, 2, NULL},
    {"zfill", m_str_zfill, 1, 1, NULL},
    {"partition", m_str_partition, 1, 1, NULL},
    {"rpartition", m_str_rpartition, 1, 1, NULL},
    {"removeprefix", m_str_removeprefix, 1, 1, NULL},
    {"removesuffix", m_str_removesuffix, 1, 1, NULL},
    {"splitlines", m_str_splitlines, 0, 1, "keepends"},
    {"isdigit", m_str_isdigit, 0, 0, NULL},
    {"isdecimal", m_str_isdecimal, 0, 0, NULL},
    {"isnumeric", m_str_isnumeric, 0, 0, NULL},
    {"isalpha", m_str_isalpha, 0, 0, NULL},
    {"isalnum", m_str_isalnum, 0, 0, NULL},
    {"isspace", m_str_isspace, 0, 0, NULL},
    {"istitle", m_str_istitle, 0, 0, NULL},
    {"isprintable", m_str_isprintable, 0, 0, NULL},
    {"isidentifier", m_str_isidentifier, 0, 0, NULL},
    {"expandtabs", m_str_expandtabs, 0, 1, "tabsize"},
    {"islower", m_str_islower, 0, 0, NULL},
    {"isupper", m_str_isupper, 0, 0, NULL},
    {"capitalize", m_str_capitalize, 0, 0, NULL},
    {"title", m_str_title, 0, 0, NULL},
    {"swapcase", m_str_swapcase, 0, 0, NULL},
    {NULL, NULL, 0, 0, NULL},
};

/* ---- lookup and argument checks --------------------------------------------------------------- */

const BuiltinDef *builtin_method(TypeId t, const char *name)
{
    if (t == T_TENSOR) {
        const BuiltinDef *d = dims_method(name);
        return d ? d : tensor_method(name);
    }
    const BuiltinDef *tab = t == T_LIST ? list_methods : t == T_STR ? str_methods
                          : t == T_TUPLE ? tuple_methods : t == T_DICT ? dict_methods
                          : t == T_SET ? set_methods : t == T_FROZENSET ? frozenset_methods
                          : t == T_GENERATOR ? generator_methods : t == T_SLICE ? slice_methods
                          : t == T_INT || t == T_BOOL ? int_methods : t == T_FLOAT ? float_methods : NULL;
    if (!tab) return NULL;
    for (; tab->name; tab++)
        if (strcmp(tab->name, name) == 0) return tab;
    return NULL;
}

/* The type a method def belongs to ("list"), or NULL for a plain function. */
static const char *method_owner(const BuiltinDef *def)
{
    static const struct { const BuiltinDef *tab; const char *name; } tabs[] = {
        {list_methods, "list"}, {str_methods, "str"}, {tuple_methods, "tuple"},
        {dict_methods, "dict"}, {set_methods, "set"}, {frozenset_methods, "frozenset"},
        {generator_methods, "generator"}, {slice_methods, "slice"}, {int_methods, "int"}, {float_methods, "float"},
    };
    for (size_t k = 0; k < sizeof tabs / sizeof tabs[0]; k++)
        for (const BuiltinDef *d = tabs[k].tab; d->name; d++)
            if (d == def) return tabs[k].name;
    return NULL;
}

/* Whether `name` is one of the space-separated words of list ("*" accepts any). */
static bool kw_listed(const char *list, const char *name)
{
    if (strcmp(list, "*") == 0) return true;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ' ');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

/* How Python words argument-count errors varies by function; the ones that differ from the
 * default (below) are listed by qualified name. CLINIC: "f() takes at most N arguments (M given)",
 * and for too few either "missing required argument 'p' (pos K)" (params given) or
 * "f() takes at least N argument (M given)". EXPECTED: "f expected N arguments, got M". */
enum { ARGS_CLINIC = 1, ARGS_EXPECTED };
static const struct { const char *qual; int style; const char *params; bool pos; } arg_styles[] = {
    {"round", ARGS_CLINIC, "number", true},
    {"pow", ARGS_CLINIC, "base exp", true},
    {"enumerate", ARGS_CLINIC, "iterable", false},
    {"sum", ARGS_CLINIC, NULL, false},
    {"str.split", ARGS_CLINIC, NULL, false},
    {"str.rsplit", ARGS_CLINIC, NULL, false},
    {"str.startswith", ARGS_CLINIC, NULL, false},
    {"str.endswith", ARGS_CLINIC, NULL, false},
    {"str.find", ARGS_CLINIC, NULL, false},
    {"str.rfind", ARGS_CLINIC, NULL, false},
    {"str.index", ARGS_CLINIC, NULL, false},
    {"str.rindex", ARGS_CLINIC, NULL, false},
    {"str.count", ARGS_CLINIC, NULL, false},
    {"sorted", ARGS_EXPECTED, NULL, false},
};

bool builtin_check_args(Interp *I, const BuiltinDef *def, int nargs, const char *const *kwnames,
                        int nkw)
{
    int lo = def->min_args, hi = def->max_args;
    bool count_ok = nargs >= lo && (hi < 0 || nargs <= hi);
    if (nkw == 0 && count_ok) return true;      /* the common case: no names to build */
    if (nkw > 0 && def->kwargs && count_ok) {
        bool all_ok = true;
        for (int k = 0; k < nkw && all_ok; k++) {
            all_ok = kw_listed(def->kwargs, kwnames[k]);
            for (int j = 0; j < k && all_ok; j++) all_ok = strcmp(kwnames[j], kwnames[k]) != 0;
        }
        if (all_ok) return true;
    }
    const char *owner = method_owner(def);
    char qual[96];
    snprintf(qual, sizeof qual, "%s%s%s", owner ? owner : "", owner ? "." : "", def->name);
    if (nkw > 0) {
        if (!def->kwargs) return err_raise(I, TDL_ERR_TYPE, "%s() takes no keyword arguments", qual);
        for (int k = 0; k < nkw; k++) {
            if (!kw_listed(def->kwargs, kwnames[k]))
                return err_raise(I, TDL_ERR_TYPE, "%s() got an unexpected keyword argument '%s'",
                                 def->name, kwnames[k]);
            for (int j = 0; j < k; j++)
                if (strcmp(kwnames[j], kwnames[k]) == 0)
                    return err_raise(I, TDL_ERR_TYPE, "%s() got multiple values for keyword argument '%s'",
                                     def->name, kwnames[k]);
        }
    }
    if (count_ok) return true;
    int style = 0;
    const char *params = NULL;
    bool pos = false;
    for (size_t k = 0; k < sizeof arg_styles / sizeof arg_styles[0]; k++) {
        if (strcmp(arg_styles[k].qual, qual) == 0) {
            style = arg_styles[k].style;
            params = arg_styles[k].params;
            pos = arg_styles[k].pos;
        }
    }
    if (style == ARGS_CLINIC) {
        if (nargs > hi)
            return err_raise(I, TDL_ERR_TYPE, "%s() takes at most %d argument%s (%d given)",
                             def->name, hi, hi == 1 ? "" : "s", nargs);
        if (params) {
            /* the name of parameter number nargs (0-based) */
            const char *p = params;
            for (int k = 0; k < nargs && strchr(p, ' '); k++) p = strchr(p, ' ') + 1;
            size_t len = strchr(p, ' ') ? (size_t)(strchr(p, ' ') - p) : strlen(p);
            if (pos)
                return err_raise(I, TDL_ERR_TYPE, "%s() missing required argument '%.*s' (pos %d)",
                                 def->name, (int)len, p, nargs + 1);
            return err_raise(I, TDL_ERR_TYPE, "%s() missing required argument '%.*s'", def->name,
                             (int)len, p);
        }
        return err_raise(I, TDL_ERR_TYPE, "%s() takes at least %d %sargument%s (%d given)",
                         def->name, lo, owner ? "" : "positional ", lo == 1 ? "" : "s", nargs);
    }
    if (lo == hi && style != ARGS_EXPECTED) {
        if (lo == 0 && def->kwargs)
            return err_raise(I, TDL_ERR_TYPE, "%s() takes no positional arguments", def->name);
        if (lo == 0) return err_raise(I, TDL_ERR_TYPE, "%s() takes no arguments (%d given)", qual, nargs);
        if (lo == 1)
            return err_raise(I, TDL_ERR_TYPE, "%s() takes exactly one argument (%d given)", qual, nargs);
    }
    if (lo == hi)
        return err_raise(I, TDL_ERR_TYPE, "%s expected %d argument%s, got %d", def->name, lo,
                         lo == 1 ? "" : "s", nargs);
    if (nargs < lo)
        return err_raise(I, TDL_ERR_TYPE, "%s expected at least %d argument%s, got %d", def->name, lo,
                         lo == 1 ? "" : "s", nargs);
    return err_raise(I, TDL_ERR_TYPE, "%s expected at most %d argument%s, got %d", def->name, hi,
                     hi == 1 ? "" : "s", nargs);
}

bool builtin_call(Interp *I, const BuiltinDef *def, Value self, const Value *args, int nargs,
                  const char *const *kwnames, int nkw, Value *out)
{
    size_t nhost = sizeof builtin_functions / sizeof builtin_functions[0];
    if (nargs > 0 && is_tensorlike(args[0]) && def >= builtin_functions && def < builtin_functions + nhost) {
        const BuiltinDef *tdef = tensor_function(def->name);
        if (tdef) def = tdef;
    }
    return builtin_check_args(I, def, nargs, kwnames, nkw) && def->fn(I, self, args, nargs, kwnames, nkw, out);
}
