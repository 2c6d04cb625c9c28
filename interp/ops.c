/* ops.c — Python semantics of the host values: arithmetic with 64-bit overflow checks, comparison,
 * truth, membership, indexing and slicing, attributes, iteration. Shared by the evaluator and the
 * builtins. A tensor operand hands the operation to tensor.c (Python's dunder methods of torch's
 * Tensor), so every operator below has one entry point whatever the operand types. */
#include "interp.h"
#include "mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- truth and length ---- */

bool val_truthy(Interp *I, Value v, bool *out)
{
    switch (v.tag) {
    case V_NONE: *out = false; return true;
    case V_BOOL: *out = v.b; return true;
    case V_INT: *out = v.i != 0; return true;
    case V_FLOAT: *out = v.f != 0.0; return true;
    case V_STR: *out = as_str(v)->len != 0; return true;
    case V_TUPLE: *out = as_tuple(v)->n != 0; return true;
    case V_LIST: *out = as_list(v)->n != 0; return true;
    case V_RANGE: *out = range_len(as_range(v)) != 0; return true;
    case V_DICT: case V_SET: case V_FROZENSET: *out = as_dict(v)->used != 0; return true;
    case V_DICTVIEW: *out = ((DictViewObj *)v.o)->d->used != 0; return true;
    case V_TENSOR: case V_DIM: return tensor_truthy(I, v, out);
    case V_INSTANCE: return class_truthy(I, v, out);
    default: *out = true; return true;
    }
}

bool val_len(Interp *I, Value v, int64_t *out)
{
    switch (v.tag) {
    case V_STR: *out = (int64_t)as_str(v)->nchars; return true;
    case V_TUPLE: *out = (int64_t)as_tuple(v)->n; return true;
    case V_LIST: *out = (int64_t)as_list(v)->n; return true;
    case V_RANGE: *out = range_len(as_range(v)); return true;
    case V_DICT: case V_SET: case V_FROZENSET: *out = (int64_t)as_dict(v)->used; return true;
    case V_DICTVIEW: *out = (int64_t)((DictViewObj *)v.o)->d->used; return true;
    case V_TENSOR: return tensor_len(I, v, out);
    case V_INSTANCE: return class_len(I, v, out);
    default: return err_raise(I, TDL_ERR_TYPE, "object of type '%s' has no len()", val_type_name(v));
    }
}

bool val_index(Interp *I, Value v, int64_t *out)
{
    if (v.tag == V_TENSOR) return tensor_index(I, v, out);
    *out = as_i(v);
    return true;
}

/* ---- numbers ---- */

static inline bool is_num(Value v) { return v.tag == V_INT || v.tag == V_BOOL || v.tag == V_FLOAT; }
static inline double as_f(Value v) { return v.tag == V_FLOAT ? v.f : (double)as_i(v); }

static bool overflow(Interp *I, LangOp op, int64_t a, int64_t b)
{
    return err_raise(I, TDL_ERR_OVERFLOW, "integer overflow: %lld %s %lld does not fit in 64 bits",
                     (long long)a, lang_op_text[op], (long long)b);
}

static bool int_pow(Interp *I, int64_t a, int64_t b, Value *out)
{
    int64_t r = 1, base = a;
    int64_t e = b;
    while (e > 0) {
        if (e & 1 && __builtin_mul_overflow(r, base, &r)) return overflow(I, OP_POW, a, b);
        e >>= 1;
        if (e && __builtin_mul_overflow(base, base, &base)) return overflow(I, OP_POW, a, b);
    }
    *out = v_int(r);
    return true;
}

/* Python's float floor division and modulo (Objects/floatobject.c: float_divmod). */
static void float_divmod(double vx, double wx, double *div, double *mod)
{
    double m = fmod(vx, wx);
    double d = (vx - m) / wx;
    if (m != 0.0) {
        if ((wx < 0) != (m < 0)) {
            m += wx;
            d -= 1.0;
        }
    } else {
        m = copysign(0.0, wx);
    }
    double fd;
    if (d != 0.0) {
        fd = floor(d);
        if (d - fd > 0.5) fd += 1.0;
    } else {
        fd = copysign(0.0, vx / wx);
    }
    *div = fd;
    *mod = m;
}

static bool float_pow(Interp *I, double a, double b, Value *out)
{
    if (a == 0.0 && b < 0.0)
        return err_raise(I, TDL_ERR_ZERO_DIVISION, "0.0 cannot be raised to a negative power");
    if (a < 0.0 && b != floor(b) && isfinite(a) && isfinite(b))
        return err_raise(I, TDL_ERR_VALUE,
                         "negative number cannot be raised to a fractional power (no complex numbers in tdl)");
    double r = pow(a, b);
    if (isinf(r) && isfinite(a) && isfinite(b))
        return err_raise(I, TDL_ERR_OVERFLOW, "(34, 'Numerical result out of range')");
    *out = v_float(r);
    return true;
}

static bool num_binop(Interp *I, LangOp op, Value x, Value y, Value *out)
{
    if (is_intlike(x) && is_intlike(y)) {
        int64_t a = as_i(x), b = as_i(y), r;
        switch (op) {
        case OP_ADD: if (__builtin_add_overflow(a, b, &r)) return overflow(I, op, a, b); break;
        case OP_SUB: if (__builtin_sub_overflow(a, b, &r)) return overflow(I, op, a, b); break;
        case OP_MUL: if (__builtin_mul_overflow(a, b, &r)) return overflow(I, op, a, b); break;
        case OP_DIV:
            if (b == 0) return err_raise(I, TDL_ERR_ZERO_DIVISION, "division by zero");
            *out = v_float((double)a / (double)b);
            return true;
        case OP_FLOORDIV:
        case OP_MOD: {
            if (b == 0)
                return err_raise(I, TDL_ERR_ZERO_DIVISION, op == OP_MOD ? "integer modulo by zero"
                                                                       : "integer division or modulo by zero");
            if (a == INT64_MIN && b == -1) {
                if (op == OP_MOD) { r = 0; break; }
                return overflow(I, op, a, b);
            }
            int64_t q = a / b, m = a % b;
            if (m != 0 && ((m < 0) != (b < 0))) { q -= 1; m += b; }
            r = op == OP_MOD ? m : q;
            break;
        }
        case OP_POW:
            if (b < 0) {
                if (a == 0) return err_raise(I, TDL_ERR_ZERO_DIVISION, "0.0 cannot be raised to a negative power");
                *out = v_float(pow((double)a, (double)b));
                return true;
            }
            return int_pow(I, a, b, out);
        case OP_BITAND: case OP_BITOR: case OP_BITXOR:
            r = op == OP_BITAND ? (a & b) : op == OP_BITOR ? (a | b) : (a ^ b);
            if (x.tag == V_BOOL && y.tag == V_BOOL) { *out = v_bool(r != 0); return true; }
            break;
        case OP_LSHIFT:
            if (b < 0) return err_raise(I, TDL_ERR_VALUE, "negative shift count");
            if (a == 0) { r = 0; break; }
            if (b >= 63 || (a > 0 ? a > (INT64_MAX >> b) : a < (INT64_MIN >> b))) return overflow(I, op, a, b);
            r = (int64_t)((uint64_t)a << b);
            break;
        case OP_RSHIFT:
            if (b < 0) return err_raise(I, TDL_ERR_VALUE, "negative shift count");
            r = b >= 63 ? (a < 0 ? -1 : 0) : a >> b;
            break;
        default:
            return false;
        }
        *out = v_int(r);
        return true;
    }
    double a = as_f(x), b = as_f(y);
    switch (op) {
    case OP_ADD: *out = v_float(a + b); return true;
    case OP_SUB: *out = v_float(a - b); return true;
    case OP_MUL: *out = v_float(a * b); return true;
    case OP_DIV:
        if (b == 0.0) return err_raise(I, TDL_ERR_ZERO_DIVISION, "float division by zero");
        *out = v_float(a / b);
        return true;
    case OP_FLOORDIV:
    case OP_MOD: {
        if (b == 0.0)
            return err_raise(I, TDL_ERR_ZERO_DIVISION, op == OP_MOD ? "float modulo" : "float floor division by zero");
        double d, m;
        float_divmod(a, b, &d, &m);
        *out = v_float(op == OP_MOD ? m : d);
        return true;
    }
    case OP_POW: return float_pow(I, a, b, out);
    default: return false;
    }
}

/* ---- sequences ---- */

static bool seq_repeat(Interp *I, Value seq, int64_t times, Value *out)
{
    if (times < 0) times = 0;
    if (seq.tag == V_STR) {
        StrObj *s = as_str(seq);
        if (s->len && (uint64_t)times > (uint64_t)(INT32_MAX) / s->len)
            return err_raise(I, TDL_ERR_MEMORY, "repeated string is too long");
        size_t n = s->len * (size_t)times;
        char *p = mem_malloc(n + 1);
        if (!p) return err_nomem(I);
        for (int64_t k = 0; k < times; k++) memcpy(p + (size_t)k * s->len, s->data, s->len);
        bool ok = str_new(I, p, n, out);
        mem_free(p);
        return ok;
    }
    size_t len = seq.tag == V_LIST ? as_list(seq)->n : as_tuple(seq)->n;
    const Value *items = seq.tag == V_LIST ? as_list(seq)->items : as_tuple(seq)->items;
    if (len && (uint64_t)times > (uint64_t)(INT32_MAX) / len)
        return err_raise(I, TDL_ERR_MEMORY, "repeated sequence is too long");
    size_t n = len * (size_t)times;
    Value *dst;
    if (seq.tag == V_LIST) {
        ListObj *l = list_alloc(I, n);
        if (!l) return false;
        dst = l->items;
        *out = v_obj(V_LIST, &l->h);
    } else {
        TupleObj *t = tuple_alloc(I, n);
        if (!t) return false;
        dst = t->items;
        *out = v_obj(V_TUPLE, &t->h);
    }
    for (size_t k = 0; k < n; k++) {
        dst[k] = items[k % len];
        val_incref(dst[k]);
    }
    return true;
}

static bool seq_concat(Interp *I, Value a, Value b, Value *out)
{
    if (a.tag == V_STR) {
        StrObj *x = as_str(a), *y = as_str(b);
        char *p = mem_malloc(x->len + y->len + 1);
        if (!p) return err_nomem(I);
        memcpy(p, x->data, x->len);
        memcpy(p + x->len, y->data, y->len);
        bool ok = str_new(I, p, x->len + y->len, out);
        mem_free(p);
        return ok;
    }
    size_t na = a.tag == V_LIST ? as_list(a)->n : as_tuple(a)->n;
    size_t nb = b.tag == V_LIST ? as_list(b)->n : as_tuple(b)->n;
    const Value *ia = a.tag == V_LIST ? as_list(a)->items : as_tuple(a)->items;
    const Value *ib = b.tag == V_LIST ? as_list(b)->items : as_tuple(b)->items;
    Value *dst;
    if (a.tag == V_LIST) {
        ListObj *l = list_alloc(I, na + nb);
        if (!l) return false;
        dst = l->items;
        *out = v_obj(V_LIST, &l->h);
    } else {
        TupleObj *t = tuple_alloc(I, na + nb);
        if (!t) return false;
        dst = t->items;
        *out = v_obj(V_TUPLE, &t->h);
    }
    for (size_t k = 0; k < na; k++) { dst[k] = ia[k]; val_incref(dst[k]); }
    for (size_t k = 0; k < nb; k++) { dst[na + k] = ib[k]; val_incref(dst[na + k]); }
    return true;
}

static bool unsupported(Interp *I, LangOp op, Value a, Value b)
{
    return err_raise(I, TDL_ERR_TYPE, "unsupported operand type(s) for %s: '%s' and '%s'",
                     op == OP_POW ? "** or pow()" : lang_op_text[op], val_type_name(a), val_type_name(b));
}

/* An instance (or user exception) on either side: its operator methods first, so that a tensor
 * on the left reaches the instance's reflected method, as in PyTorch. */
static inline bool has_class(Value v) { return v.tag == V_INSTANCE || (v.tag == V_EXC && class_of(v)); }

bool val_binop(Interp *I, LangOp op, Value a, Value b, Value *out)
{
    if (has_class(a) || has_class(b)) {
        bool handled;
        if (!class_binop(I, op, a, b, out, &handled)) return false;
        if (handled) return true;
        return unsupported(I, op, a, b);
    }
    bool aseq = a.tag == V_STR || a.tag == V_LIST || a.tag == V_TUPLE;
    bool bseq = b.tag == V_STR || b.tag == V_LIST || b.tag == V_TUPLE;
    if (op == OP_MUL && ((aseq && b.tag == V_TENSOR) || (bseq && a.tag == V_TENSOR))) {
        /* A sequence times a tensor is the sequence repeated (PyTorch's Tensor.__mul__ gives way
         * to the sequence's, which takes the tensor's __index__: one integer, else its TypeError). */
        int64_t times;
        if (!val_index(I, aseq ? b : a, &times)) return false;
        return seq_repeat(I, aseq ? a : b, times, out);
    }
    if (is_tensorlike(a) || is_tensorlike(b)) return tensor_binop(I, op, a, b, out);
    if (is_num(a) && is_num(b)) {
        if (op == OP_MATMUL) return unsupported(I, op, a, b);
        if ((op == OP_BITAND || op == OP_BITOR || op == OP_BITXOR || op == OP_LSHIFT || op == OP_RSHIFT)
            && (a.tag == V_FLOAT || b.tag == V_FLOAT))
            return unsupported(I, op, a, b);
        return num_binop(I, op, a, b, out);
    }
    if (op == OP_ADD && aseq && a.tag == b.tag) return seq_concat(I, a, b, out);
    if (op == OP_ADD && aseq && bseq)
        return err_raise(I, TDL_ERR_TYPE, a.tag == V_STR ? "can only concatenate str (not \"%s\") to str"
                                                          : "can only concatenate %s (not \"%s\") to %s",
                         a.tag == V_STR ? val_type_name(b) : val_type_name(a),
                         a.tag == V_STR ? "" : val_type_name(b), val_type_name(a));
    if (op == OP_ADD && a.tag == V_STR)
        return err_raise(I, TDL_ERR_TYPE, "can only concatenate str (not \"%s\") to str", val_type_name(b));
    if (op == OP_MOD && a.tag == V_STR) return str_percent(I, a, b, out);
    if (op == OP_MUL && aseq && is_intlike(b)) return seq_repeat(I, a, as_i(b), out);
    if (op == OP_MUL && bseq && is_intlike(a)) return seq_repeat(I, b, as_i(a), out);
    if (op == OP_MUL && (aseq || bseq) && (a.tag == V_FLOAT || b.tag == V_FLOAT))
        return err_raise(I, TDL_ERR_TYPE, "can't multiply sequence by non-int of type 'float'");
    bool handled;
    if (!dict_binop(I, op, a, b, out, &handled)) return false;
    if (handled) return true;
    return unsupported(I, op, a, b);
}

bool val_unary(Interp *I, LangOp op, Value a, Value *out)
{
    if (is_tensorlike(a)) return tensor_unary(I, op, a, out);
    if (a.tag == V_INSTANCE) return class_unary(I, op, a, out);
    if (is_intlike(a)) {
        int64_t x = as_i(a);
        if (op == OP_NEG) {
            if (x == INT64_MIN)
                return err_raise(I, TDL_ERR_OVERFLOW, "integer overflow: -(%lld) does not fit in 64 bits", (long long)x);
            *out = v_int(-x);
        } else if (op == OP_POS) {
            *out = v_int(x);
        } else {
            *out = v_int(~x);
        }
        return true;
    }
    if (a.tag == V_FLOAT && op != OP_INVERT) {
        *out = v_float(op == OP_NEG ? -a.f : a.f);
        return true;
    }
    return err_raise(I, TDL_ERR_TYPE, "bad operand type for unary %s: '%s'", lang_op_text[op], val_type_name(a));
}

/* ---- comparison ---- */

/* Exact comparison of an int with a float, as Python does: -1, 0, 1, or 2 when unordered (nan). */
static int cmp_int_float(int64_t i, double f)
{
    if (isnan(f)) return 2;
    if (f >= 9223372036854775808.0) return -1;
    if (f < -9223372036854775808.0) return 1;
    double t = trunc(f);
    int64_t ti = (int64_t)t;
    if (i != ti) return i < ti ? -1 : 1;
    double frac = f - t;
    return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

static int cmp_num(Value a, Value b)
{
    if (is_intlike(a) && is_intlike(b)) {
        int64_t x = as_i(a), y = as_i(b);
        return x < y ? -1 : x > y;
    }
    if (is_intlike(a)) return cmp_int_float(as_i(a), b.f);
    if (is_intlike(b)) {
        int c = cmp_int_float(as_i(b), a.f);
        return c == 2 ? 2 : -c;
    }
    if (isnan(a.f) || isnan(b.f)) return 2;
    return a.f < b.f ? -1 : a.f > b.f;
}

static bool seq_items(Value v, const Value **items, size_t *n)
{
    if (v.tag == V_LIST) { *items = as_list(v)->items; *n = as_list(v)->n; return true; }
    if (v.tag == V_TUPLE) { *items = as_tuple(v)->items; *n = as_tuple(v)->n; return true; }
    return false;
}

/* A comparison involving a tensor, in a bool context: Python's bool(a OP b), which is the value of
 * a one-element result and an error for more. */
static bool tensor_compare_bool(Interp *I, LangOp op, Value a, Value b, bool *out)
{
    Value r;
    if (!tensor_binop(I, op, a, b, &r)) return false;
    bool ok = val_truthy(I, r, out);
    val_decref(I, r);
    return ok;
}

bool val_equal(Interp *I, Value a, Value b, bool *out)
{
    if (has_class(a) || has_class(b)) {
        Value r;
        if (!class_compare(I, OP_EQ, a, b, &r)) return false;
        bool ok = val_truthy(I, r, out);
        val_decref(I, r);
        return ok;
    }
    if (is_num(a) && is_num(b)) {
        *out = cmp_num(a, b) == 0;
        return true;
    }
    if (a.tag == V_TENSOR || b.tag == V_TENSOR) {
        if (a.tag == b.tag && a.o == b.o) {     /* identity first, as Python's containers do */
            *out = true;
            return true;
        }
        return tensor_compare_bool(I, OP_EQ, a, b, out);
    }
    if (is_setlike(a) && is_setlike(b)) return dict_equal(I, a, b, out);
    if (a.tag != b.tag) {
        *out = false;
        return true;
    }
    switch (a.tag) {
    case V_NONE: case V_ELLIPSIS: *out = true; return true;
    case V_DICT: return dict_equal(I, a, b, out);
    case V_TYPE: case V_DTYPE: case V_DEVICE: case V_MEMFMT: *out = a.i == b.i; return true;
    case V_STR: {
        StrObj *x = as_str(a), *y = as_str(b);
        *out = x->len == y->len && memcmp(x->data, y->data, x->len) == 0;
        return true;
    }
    case V_LIST: case V_TUPLE: {
        const Value *xa = NULL, *xb = NULL;
        size_t na = 0, nb = 0;
        seq_items(a, &xa, &na);
        seq_items(b, &xb, &nb);
        if (na != nb) { *out = false; return true; }
        if (a.o == b.o) { *out = true; return true; }
        if (I->nest >= 1000) return err_raise(I, TDL_ERR_RECURSION, "maximum recursion depth exceeded in comparison");
        I->nest++;
        bool ok = true;
        *out = true;
        for (size_t k = 0; k < na && ok; k++) {
            bool e;
            ok = val_equal(I, xa[k], xb[k], &e);
            if (ok && !e) { *out = false; break; }
        }
        I->nest--;
        return ok;
    }
    case V_SLICE: {     /* as the tuples (start, stop, step) */
        SliceObj *x = as_slice(a), *y = as_slice(b);
        Value xs[3] = {x->start, x->stop, x->step}, ys[3] = {y->start, y->stop, y->step};
        *out = true;
        for (int k = 0; k < 3 && *out; k++)
            if (!val_equal(I, xs[k], ys[k], out)) return false;
        return true;
    }
    case V_RANGE: {
        RangeObj *x = as_range(a), *y = as_range(b);
        int64_t nx = range_len(x), ny = range_len(y);
        *out = nx == ny && (nx == 0 || (x->start == y->start && (nx == 1 || x->step == y->step)));
        return true;
    }
    default:
        *out = a.o == b.o;
        return true;
    }
}

static bool order_error(Interp *I, LangOp op, Value a, Value b)
{
    return err_raise(I, TDL_ERR_TYPE, "'%s' not supported between instances of '%s' and '%s'",
                     lang_op_text[op], val_type_name(a), val_type_name(b));
}

/* Three-way order for <, <=, >, >=: -1, 0, 1, or 2 for unordered (nan). */
static bool val_order(Interp *I, LangOp op, Value a, Value b, int *out)
{
    if (is_num(a) && is_num(b)) {
        *out = cmp_num(a, b);
        return true;
    }
    if (a.tag == V_STR && b.tag == V_STR) {
        StrObj *x = as_str(a), *y = as_str(b);
        size_t n = x->len < y->len ? x->len : y->len;
        int c = memcmp(x->data, y->data, n);
        *out = c < 0 ? -1 : c > 0 ? 1 : x->len < y->len ? -1 : x->len > y->len;
        return true;
    }
    if ((a.tag == V_LIST || a.tag == V_TUPLE) && a.tag == b.tag) {
        const Value *xa = NULL, *xb = NULL;
        size_t na = 0, nb = 0;
        seq_items(a, &xa, &na);
        seq_items(b, &xb, &nb);
        if (I->nest >= 1000) return err_raise(I, TDL_ERR_RECURSION, "maximum recursion depth exceeded in comparison");
        I->nest++;
        bool ok = true, decided = false;
        for (size_t k = 0; k < na && k < nb && ok; k++) {
            bool e;
            ok = val_equal(I, xa[k], xb[k], &e);
            if (ok && !e) {
                ok = val_order(I, op, xa[k], xb[k], out);
                decided = true;
                break;
            }
        }
        I->nest--;
        if (ok && !decided) *out = na < nb ? -1 : na > nb;
        return ok;
    }
    return order_error(I, op, a, b);
}

bool val_compare(Interp *I, LangOp op, Value a, Value b, bool *out)
{
    switch (op) {
    case OP_EQ: return val_equal(I, a, b, out);
    case OP_NE:
        if (!val_equal(I, a, b, out)) return false;
        *out = !*out;
        return true;
    case OP_IS: case OP_ISNOT: {
        bool same = a.tag == b.tag &&
                    (IS_OBJ(a) ? a.o == b.o : a.tag == V_BOOL ? a.b == b.b : a.i == b.i);
        *out = op == OP_IS ? same : !same;
        return true;
    }
    case OP_IN: return val_contains(I, b, a, out);
    case OP_NOTIN:
        if (!val_contains(I, b, a, out)) return false;
        *out = !*out;
        return true;
    default: {
        int c;
        if (has_class(a) || has_class(b)) {
            Value r;
            if (!class_compare(I, op, a, b, &r)) return false;
            bool ok = val_truthy(I, r, out);
            val_decref(I, r);
            return ok;
        }
        if (is_tensorlike(a) || is_tensorlike(b)) return tensor_compare_bool(I, op, a, b, out);
        if (is_setlike(a) && is_setlike(b)) return set_order(I, op, a, b, out);
        if (!val_order(I, op, a, b, &c)) return false;
        if (c == 2) *out = false;
        else *out = op == OP_LT ? c < 0 : op == OP_LE ? c <= 0 : op == OP_GT ? c > 0 : c >= 0;
        return true;
    }
    }
}

bool val_compare_value(Interp *I, LangOp op, Value a, Value b, Value *out)
{
    bool r;
    if ((has_class(a) || has_class(b)) && op != OP_IS && op != OP_ISNOT && op != OP_IN && op != OP_NOTIN)
        return class_compare(I, op, a, b, out);
    if ((is_tensorlike(a) || is_tensorlike(b)) && op != OP_IS && op != OP_ISNOT && op != OP_IN &&
        op != OP_NOTIN)
        return tensor_binop(I, op, a, b, out);
    if (!val_compare(I, op, a, b, &r)) return false;
    *out = v_bool(r);
    return true;
}

bool val_contains(Interp *I, Value c, Value item, bool *out)
{
    switch (c.tag) {
    case V_INSTANCE: return class_contains(I, c, item, out);
    case V_TENSOR: return tensor_contains(I, c, item, out);
    case V_DICT: case V_SET: case V_FROZENSET: {
        DictEntry *e;
        if (!dict_find(I, as_dict(c), item, &e)) return false;
        *out = e != NULL;
        return true;
    }
    case V_DICTVIEW: {
        DictViewObj *dv = (DictViewObj *)c.o;
        DictEntry *e = NULL;
        *out = false;
        if (dv->kind == DV_KEYS) {
            if (!dict_find(I, dv->d, item, &e)) return false;
            *out = e != NULL;
        } else if (dv->kind == DV_ITEMS) {
            /* (k, v) in d.items(): k is a key whose value equals v */
            if (item.tag != V_TUPLE || as_tuple(item)->n != 2) return true;
            if (!dict_find(I, dv->d, as_tuple(item)->items[0], &e)) return false;
            if (e) return val_equal(I, e->val, as_tuple(item)->items[1], out);
        } else {
            for (size_t pos = 0; (e = dict_next(dv->d, &pos));) {
                if (!val_equal(I, e->val, item, out)) return false;
                if (*out) return true;
            }
        }
        return true;
    }
    case V_STR: {
        if (item.tag != V_STR)
            return err_raise(I, TDL_ERR_TYPE, "'in <string>' requires string as left operand, not %s",
                             val_type_name(item));
        *out = memmem(as_str(c)->data, as_str(c)->len, as_str(item)->data, as_str(item)->len) != NULL;
        return true;
    }
    case V_LIST: case V_TUPLE: {
        const Value *items = NULL;
        size_t n = 0;
        seq_items(c, &items, &n);
        for (size_t k = 0; k < n; k++) {
            bool e;
            if (!val_equal(I, items[k], item, &e)) return false;
            if (e) { *out = true; return true; }
        }
        *out = false;
        return true;
    }
    case V_RANGE: {
        RangeObj *r = as_range(c);
        *out = false;
        if (is_intlike(item)) {
            int64_t x = as_i(item);
            bool inside = r->step > 0 ? (x >= r->start && x < r->stop) : (x <= r->start && x > r->stop);
            *out = inside && ((uint64_t)x - (uint64_t)r->start) % (uint64_t)(r->step > 0 ? r->step : -r->step) == 0;
        } else if (item.tag == V_FLOAT && item.f == floor(item.f) && fabs(item.f) < 9.2e18) {
            Value iv = v_int((int64_t)item.f);
            return val_contains(I, c, iv, out);
        }
        return true;
    }
    default:
        return err_raise(I, TDL_ERR_TYPE, "argument of type '%s' is not iterable", val_type_name(c));
    }
}

/* ---- indexing ---- */

bool slice_index(Interp *I, Value v, int64_t *out)
{
    if (!has_index(v))
        return err_raise(I, TDL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
    return val_index(I, v, out);
}

/* Python's PySlice_GetIndicesEx: clamps a slice to a sequence of length len. The step is read
 * first, then start and stop, as CPython reads them (which error a bad slice gets). */
static bool slice_adjust(Interp *I, SliceObj *s, int64_t len, int64_t *start, int64_t *stop,
                         int64_t *step, int64_t *count)
{
    int64_t st = 1, lo = 0, hi = 0;
    if (s->step.tag != V_NONE) {
        if (!slice_index(I, s->step, &st)) return false;
        if (st == 0) return err_raise(I, TDL_ERR_VALUE, "slice step cannot be zero");
        if (st < -INT64_MAX) st = -INT64_MAX;       /* so that -st is a step too */
    }
    if ((s->start.tag != V_NONE && !slice_index(I, s->start, &lo)) ||
        (s->stop.tag != V_NONE && !slice_index(I, s->stop, &hi)))
        return false;
    if (st > 0) {
        if (s->start.tag == V_NONE) lo = 0;
        if (s->stop.tag == V_NONE) hi = len;
        if (lo < 0) { lo += len; if (lo < 0) lo = 0; } else if (lo > len) lo = len;
        if (hi < 0) { hi += len; if (hi < 0) hi = 0; } else if (hi > len) hi = len;
        *count = hi > lo ? (hi - lo - 1) / st + 1 : 0;
    } else {
        if (s->start.tag == V_NONE) lo = len - 1;
        if (s->stop.tag == V_NONE) hi = -1;
        if (lo < 0) { lo += len; if (lo < 0) lo = -1; } else if (lo >= len) lo = len - 1;
        if (s->stop.tag != V_NONE) { if (hi < 0) { hi += len; if (hi < 0) hi = -1; } else if (hi >= len) hi = len - 1; }
        *count = lo > hi ? (lo - hi - 1) / (-st) + 1 : 0;
    }
    *start = lo;
    *stop = hi;
    *step = st;
    return true;
}

static bool norm_index(Interp *I, Value idx, int64_t len, const char *what, int64_t *out)
{
    int64_t i;
    if (!has_index(idx))
        return err_raise(I, TDL_ERR_TYPE, "%s indices must be integers or slices, not %s", what,
                         val_type_name(idx));
    if (!val_index(I, idx, &i)) return false;
    if (i < 0) i += len;
    if (i < 0 || i >= len) return err_raise(I, TDL_ERR_INDEX, "%s index out of range", what);
    *out = i;
    return true;
}

/* Byte offset of character k of s. */
static size_t str_offset(const StrObj *s, int64_t k)
{
    if (s->nchars == s->len) return (size_t)k;
    size_t b = 0;
    for (int64_t c = 0; b < s->len; b++) {
        if (((unsigned char)s->data[b] & 0xC0) != 0x80) {
            if (c == k) return b;
            c++;
        }
    }
    return s->len;
}

static bool str_char(Interp *I, const StrObj *s, int64_t k, Value *out)
{
    size_t b = str_offset(s, k);
    size_t e = b + 1;
    while (e < s->len && ((unsigned char)s->data[e] & 0xC0) == 0x80) e++;
    return str_new(I, s->data + b, e - b, out);
}

bool val_getitem(Interp *I, Value obj, Value idx, Value *out)
{
    int64_t len;
    const char *what;
    if (obj.tag == V_INSTANCE || obj.tag == V_CLASS) return class_getitem(I, obj, idx, out);
    switch (obj.tag) {
    case V_LIST: len = (int64_t)as_list(obj)->n; what = "list"; break;
    case V_TUPLE: len = (int64_t)as_tuple(obj)->n; what = "tuple"; break;
    case V_STR: len = (int64_t)as_str(obj)->nchars; what = "string"; break;
    case V_RANGE: len = range_len(as_range(obj)); what = "range object"; break;
    case V_TENSOR: return tensor_getitem(I, obj, idx, out);
    case V_DICT: {
        DictEntry *e;
        if (!dict_find(I, as_dict(obj), idx, &e)) return false;
        if (!e) {
            Buf b = {0};
            bool ok = val_repr(I, idx, &b);
            if (ok && b.nomem) ok = err_nomem(I);
            if (ok) err_raise(I, TDL_ERR_KEY, "%s", b.p ? b.p : "");
            buf_free(&b);
            return false;
        }
        *out = e->val;
        val_incref(*out);
        return true;
    }
    default:
        return err_raise(I, TDL_ERR_TYPE, "'%s' object is not subscriptable", val_type_name(obj));
    }
    if (idx.tag == V_SLICE) {
        int64_t start, stop, step, n;
        if (!slice_adjust(I, as_slice(idx), len, &start, &stop, &step, &n)) return false;
        if (obj.tag == V_STR) {
            StrObj *s = as_str(obj);
            Buf b = {0};
            for (int64_t k = 0; k < n; k++) {
                size_t o = str_offset(s, start + k * step), e = o + 1;
                while (e < s->len && ((unsigned char)s->data[e] & 0xC0) == 0x80) e++;
                buf_put(&b, s->data + o, e - o);
            }
            if (b.nomem) { buf_free(&b); return err_nomem(I); }
            bool ok = str_new(I, b.p ? b.p : "", b.n, out);
            buf_free(&b);
            return ok;
        }
        if (obj.tag == V_RANGE) {
            RangeObj *r = as_range(obj);
            /* CPython's: the slice's start, stop and step (its indices()) through the range;
             * past int64 an OverflowError (CPython's ints do not end) */
            int64_t a, b, c;
            if (__builtin_mul_overflow(start, r->step, &a) || __builtin_add_overflow(a, r->start, &a) ||
                __builtin_mul_overflow(stop, r->step, &b) || __builtin_add_overflow(b, r->start, &b) ||
                __builtin_mul_overflow(r->step, step, &c))
                return err_raise(I, TDL_ERR_OVERFLOW, "Python int too large to convert to C ssize_t");
            return range_new(I, a, b, c, out);
        }
        const Value *items = NULL;
        size_t cnt = 0;
        seq_items(obj, &items, &cnt);
        Value *dst;
        if (obj.tag == V_LIST) {
            ListObj *l = list_alloc(I, (size_t)n);
            if (!l) return false;
            dst = l->items;
            *out = v_obj(V_LIST, &l->h);
        } else {
            TupleObj *t = tuple_alloc(I, (size_t)n);
            if (!t) return false;
            dst = t->items;
            *out = v_obj(V_TUPLE, &t->h);
        }
        for (int64_t k = 0; k < n; k++) {     /* (start + n * step may pass int64) */
            dst[k] = items[start + k * step];
            val_incref(dst[k]);
        }
        return true;
    }
    int64_t i;
    if (!norm_index(I, idx, len, what, &i)) return false;
    switch (obj.tag) {
    case V_LIST: *out = as_list(obj)->items[i]; val_incref(*out); return true;
    case V_TUPLE: *out = as_tuple(obj)->items[i]; val_incref(*out); return true;
    case V_STR: return str_char(I, as_str(obj), i, out);
    default: *out = v_int(as_range(obj)->start + i * as_range(obj)->step); return true;
    }
}

bool val_setitem(Interp *I, Value obj, Value idx, Value v)
{
    if (obj.tag == V_INSTANCE) return class_setitem(I, obj, idx, v);
    if (obj.tag == V_TENSOR)
        return tensor_setitem(I, obj, idx, v);
    if (obj.tag == V_DICT) return dict_set(I, as_dict(obj), idx, v);
    if (obj.tag != V_LIST) {
        if (obj.tag == V_TUPLE || obj.tag == V_STR || obj.tag == V_RANGE || is_setlike(obj))
            return err_raise(I, TDL_ERR_TYPE, "'%s' object does not support item assignment", val_type_name(obj));
        return err_raise(I, TDL_ERR_TYPE, "'%s' object is not subscriptable", val_type_name(obj));
    }
    ListObj *l = as_list(obj);
    if (idx.tag != V_SLICE) {
        int64_t i;
        if (!norm_index(I, idx, (int64_t)l->n, "list assignment", &i)) return false;
        Value old = l->items[i];
        val_incref(v);
        l->items[i] = v;
        val_decref(I, old);
        return true;
    }
    int64_t start, stop, step, n;
    if (!slice_adjust(I, as_slice(idx), (int64_t)l->n, &start, &stop, &step, &n)) return false;
    /* Take a snapshot of the new items first: v may be l itself. */
    ListObj *src = NULL;
    bool ok = list_from_iterable(I, v, &src);
    if (!ok) {
        if (I->err.kind == TDL_ERR_TYPE) err_raise(I, TDL_ERR_TYPE, "can only assign an iterable");
        return false;
    }
    if (step != 1) {
        if ((int64_t)src->n != n) {
            ok = err_raise(I, TDL_ERR_VALUE, "attempt to assign sequence of size %zu to extended slice of size %lld",
                           src->n, (long long)n);
            goto out;
        }
        for (int64_t k = 0; k < n; k++) {
            int64_t i = start + k * step;
            Value old = l->items[i];
            l->items[i] = src->items[k];
            val_incref(l->items[i]);
            val_decref(I, old);
        }
        goto out;
    }
    if (stop < start) stop = start;
    size_t keep_tail = l->n - (size_t)stop;
    size_t newn = (size_t)start + src->n + keep_tail;
    Value *items = mem_malloc((newn ? newn : 1) * sizeof *items);
    if (!items) { ok = err_nomem(I); goto out; }
    memcpy(items, l->items, (size_t)start * sizeof *items);
    for (size_t k = 0; k < src->n; k++) { items[start + (int64_t)k] = src->items[k]; val_incref(src->items[k]); }
    memcpy(items + start + (int64_t)src->n, l->items + stop, keep_tail * sizeof *items);
    Value *old = l->items;
    size_t oldn = (size_t)(stop - start);
    Value *dropped = old + start;
    l->items = items;
    l->n = l->cap = newn;
    for (size_t k = 0; k < oldn; k++) val_decref(I, dropped[k]);
    mem_free(old);
out:
    if (src) val_decref(I, v_obj(V_LIST, &src->h));
    return ok;
}

bool val_delitem(Interp *I, Value obj, Value idx)
{
    if (obj.tag == V_INSTANCE) return class_delitem(I, obj, idx);
    if (obj.tag == V_DICT) {
        bool found;
        if (!dict_del(I, as_dict(obj), idx, &found)) return false;
        if (found) return true;
        Buf b = {0};
        bool ok = val_repr(I, idx, &b);
        if (ok && b.nomem) ok = err_nomem(I);
        if (ok) err_raise(I, TDL_ERR_KEY, "%s", b.p ? b.p : "");
        buf_free(&b);
        return false;
    }
    if (obj.tag != V_LIST) {
        if (obj.tag == V_TUPLE || obj.tag == V_STR || obj.tag == V_RANGE || obj.tag == V_TENSOR || is_setlike(obj))
            return err_raise(I, TDL_ERR_TYPE, "'%s' object doesn't support item deletion", val_type_name(obj));
        return err_raise(I, TDL_ERR_TYPE, "'%s' object is not subscriptable", val_type_name(obj));
    }
    ListObj *l = as_list(obj);
    int64_t start, stop, step, n;
    if (idx.tag == V_SLICE) {
        if (!slice_adjust(I, as_slice(idx), (int64_t)l->n, &start, &stop, &step, &n)) return false;
    } else {
        if (!norm_index(I, idx, (int64_t)l->n, "list assignment", &start)) return false;
        step = 1;
        n = 1;
    }
    if (n <= 0) return true;
    /* Detach the removed items first: dropping them may free anything, l included. */
    Value *gone = mem_malloc((size_t)n * sizeof *gone);
    if (!gone) return err_nomem(I);
    if (step < 0) {     /* the same items, walked upwards */
        start += (n - 1) * step;
        step = -step;
    }
    size_t w = (size_t)start, k = 0;
    for (size_t r = (size_t)start; r < l->n; r++) {
        if (k < (size_t)n && r == (size_t)start + k * (size_t)step) gone[k++] = l->items[r];
        else l->items[w++] = l->items[r];
    }
    l->n = w;
    for (size_t j = 0; j < k; j++) val_decref(I, gone[j]);
    mem_free(gone);
    return true;
}

/* ---- attributes ---- */

bool val_getattr(Interp *I, Value obj, const char *name, Value *out)
{
    if (obj.tag == V_MODULE) {
        Module *m = as_module(obj);
        int32_t k = namemap_get(&m->names, name);
        if (k >= 0 && m->vals[k].tag != V_UNDEF) {
            *out = m->vals[k];
            val_incref(*out);
            return true;
        }
        return err_raise(I, TDL_ERR_ATTRIBUTE, "module '%s' has no attribute '%s'", m->name, name);
    }
    if (obj.tag == V_TENSOR || obj.tag == V_DIM || obj.tag == V_DIMLIST) {
        bool found;
        if (!dims_getattr(I, obj, name, out, &found)) return false;
        if (found) return true;
    }
    if (obj.tag >= V_CLASS || obj.tag == V_EXC) {
        bool found;
        if (!class_getattr(I, obj, name, out, &found)) return false;
        if (found) return true;
    }
    const BuiltinDef *def = builtin_method(val_type(obj), name);
    if (def) return builtin_bind(I, def, obj, out);
    if (obj.tag == V_TENSOR || obj.tag == V_DEVICE) {
        bool found;
        if (!tensor_getattr(I, obj, name, out, &found)) return false;
        if (found) return true;
    }
    if (obj.tag == V_SLICE) {
        SliceObj *s = as_slice(obj);
        Value *f = strcmp(name, "start") == 0 ? &s->start : strcmp(name, "stop") == 0 ? &s->stop
                 : strcmp(name, "step") == 0 ? &s->step : NULL;
        if (f) { *out = *f; val_incref(*out); return true; }
    }
    if (obj.tag == V_FUNC && strcmp(name, "__name__") == 0) return str_from_cstr(I, as_func(obj)->fn->name, out);
    if (obj.tag == V_BUILTIN && strcmp(name, "__name__") == 0) return str_from_cstr(I, as_builtin(obj)->def->name, out);
    if (obj.tag == V_FUNC && strcmp(name, "__qualname__") == 0) return str_from_cstr(I, as_func(obj)->fn->qualname, out);
    if (obj.tag == V_TYPE && strcmp(name, "__name__") == 0) return str_from_cstr(I, type_name((TypeId)obj.i), out);
    if (obj.tag == V_TYPE && (TypeId)obj.i != T_TENSOR) {
        const BuiltinDef *m = builtin_method((TypeId)obj.i, name);
        if (m) return builtin_unbound(I, m, (TypeId)obj.i, out);
    }
    if (obj.tag == V_TYPE && obj.i == T_OBJECT && strcmp(name, "__new__") == 0)
        return builtin_bind(I, &object_new_builtin, v_undef(), out);
    if (obj.tag == V_EXCTYPE && strcmp(name, "__name__") == 0)
        return str_from_cstr(I, tdl_error_kind_name((tdl_error_kind)obj.i), out);
    if (obj.tag == V_TUPLE && as_tuple(obj)->fields) {
        TupleObj *t = as_tuple(obj);
        for (size_t i = 0; i < t->n; i++)
            if (strcmp(name, t->fields->names[i]) == 0) {
                *out = t->items[i];
                val_incref(*out);
                return true;
            }
    }
    if (obj.tag == V_EXC) {
        ExcObj *e = (ExcObj *)obj.o;
        Value *f = strcmp(name, "args") == 0 ? &e->args : strcmp(name, "__cause__") == 0 ? &e->cause : NULL;
        if (f) {
            *out = *f;
            val_incref(*out);
            return true;
        }
        if (exc_is_subclass(e->kind, TDL_ERR_STOP_ITERATION) && strcmp(name, "value") == 0) {
            /* StopIteration.value: its first argument (a generator's return value), or None */
            *out = e->args.tag == V_TUPLE && as_tuple(e->args)->n ? as_tuple(e->args)->items[0] : v_none();
            val_incref(*out);
            return true;
        }
    }
    if (obj.tag == V_TYPE)
        return err_raise(I, TDL_ERR_ATTRIBUTE, "type object '%s' has no attribute '%s'", type_name((TypeId)obj.i), name);
    return err_raise(I, TDL_ERR_ATTRIBUTE, "'%s' object has no attribute '%s'", val_type_name(obj), name);
}

bool val_setattr(Interp *I, Value obj, const char *name, Value v)
{
    bool found = false;
    if (obj.tag == V_MODULE) {
        int32_t k = module_slot(as_module(obj), name);
        if (k < 0) return err_nomem(I);
        Value old = as_module(obj)->vals[k];
        val_incref(v);
        as_module(obj)->vals[k] = v;
        val_decref(I, old);
        return true;
    }
    if (!dims_set_attr(I, obj, name, v, &found)) return false;         /* d.size = n */
    if (!found && !tensor_set_attr(I, obj, name, v, &found)) return false;   /* t.grad = g */
    if (!found && !class_setattr(I, obj, name, v, &found)) return false;
    if (found) return true;
    return err_raise(I, TDL_ERR_ATTRIBUTE, "'%s' object attribute '%s' is read-only", val_type_name(obj), name);
}

bool val_delattr(Interp *I, Value obj, const char *name)
{
    if (obj.tag == V_MODULE) {
        int32_t k = namemap_get(&as_module(obj)->names, name);
        if (k < 0 || as_module(obj)->vals[k].tag == V_UNDEF)
            return err_raise(I, TDL_ERR_ATTRIBUTE, "module '%s' has no attribute '%s'", as_module(obj)->name, name);
        Value old = as_module(obj)->vals[k];
        as_module(obj)->vals[k] = v_undef();
        val_decref(I, old);
        return true;
    }
    bool found;
    if (!class_delattr(I, obj, name, &found)) return false;
    if (found) return true;
    Value v;
    if (!val_getattr(I, obj, name, &v)) return false;
    val_decref(I, v);
    return err_raise(I, TDL_ERR_ATTRIBUTE, "'%s' object attribute '%s' is read-only", val_type_name(obj), name);
}

/* ---- iteration ---- */

bool list_from_iterable(Interp *I, Value seq, ListObj **out)
{
    ListObj *l;
    if (seq.tag == V_LIST || seq.tag == V_TUPLE) {
        size_t n = seq.tag == V_LIST ? as_list(seq)->n : as_tuple(seq)->n;
        const Value *items = seq.tag == V_LIST ? as_list(seq)->items : as_tuple(seq)->items;
        if (!(l = list_alloc(I, n))) return false;
        for (size_t i = 0; i < n; i++) {
            l->items[i] = items[i];
            val_incref(items[i]);
        }
        *out = l;
        return true;
    }
    if (!(l = list_alloc(I, 0))) return false;
    Iter it;
    if (!iter_begin(I, seq, &it)) goto fail;
    for (;;) {
        Value x = v_undef();
        bool done = false;
        if (!iter_next(I, &it, &x, &done)) {
            iter_end(I, &it);
            goto fail;
        }
        if (done) break;
        bool ok = list_append(I, l, x);
        val_decref(I, x);
        if (!ok) {
            iter_end(I, &it);
            goto fail;
        }
    }
    iter_end(I, &it);
    *out = l;
    return true;
fail:
    val_decref(I, v_obj(V_LIST, &l->h));
    return false;
}

bool tuple_from_list(Interp *I, ListObj *l, Value *out)
{
    TupleObj *t = tuple_alloc(I, l->n);
    if (t) {
        for (size_t k = 0; k < l->n; k++) {
            t->items[k] = l->items[k];
            val_incref(t->items[k]);
        }
        *out = v_obj(V_TUPLE, &t->h);
    }
    val_decref(I, v_obj(V_LIST, &l->h));
    return t != NULL;
}

bool list_extend_from_iterable(Interp *I, ListObj *l, Value seq)
{
    if (seq.tag == V_LIST || seq.tag == V_TUPLE) {
        /* Count first: l.extend(l) appends the items it had. */
        size_t n = seq.tag == V_LIST ? as_list(seq)->n : as_tuple(seq)->n;
        for (size_t i = 0; i < n; i++)
            if (!list_append(I, l, seq.tag == V_LIST ? as_list(seq)->items[i] : as_tuple(seq)->items[i]))
                return false;
        return true;
    }
    /* Any other iterable is read to its end before l changes. */
    ListObj *m;
    if (!list_from_iterable(I, seq, &m)) return false;
    bool ok = true;
    for (size_t i = 0; ok && i < m->n; i++) ok = list_append(I, l, m->items[i]);
    val_decref(I, v_obj(V_LIST, &m->h));
    return ok;
}

bool val_iterable(Interp *I, Value v, bool *yes)
{
    switch (v.tag) {
    case V_LIST: case V_TUPLE: case V_STR: case V_RANGE: case V_DICT: case V_SET: case V_FROZENSET:
    case V_DICTVIEW: case V_GEN: case V_ITER: case V_TENSOR:
        *yes = true;
        return true;
    case V_INSTANCE:
        return class_iterable(I, v, yes);
    default:
        *yes = false;
        return true;
    }
}

bool iter_begin(Interp *I, Value seq, Iter *it)
{
    memset(it, 0, sizeof *it);
    switch (seq.tag) {
    case V_LIST: case V_TUPLE: case V_STR: case V_RANGE:
        break;
    case V_DICT: case V_SET: case V_FROZENSET:
        it->n = (int64_t)as_dict(seq)->used;
        break;
    case V_DICTVIEW:
        it->n = (int64_t)((DictViewObj *)seq.o)->d->used;
        break;
    case V_GEN: case V_ITER:    /* iterators: iterating one consumes it */
        break;
    case V_TENSOR:      /* over (positional) dim 0, as torch */
        if (fc_tensor_npos(as_tensor(seq)) == 0) return err_raise(I, TDL_ERR_TYPE, "iteration over a 0-d tensor");
        break;
    case V_INSTANCE:
        return class_iter_begin(I, seq, it);
    default:
        return err_raise(I, TDL_ERR_TYPE, "'%s' object is not iterable", val_type_name(seq));
    }
    val_incref(seq);
    it->seq = seq;
    it->i = 0;
    if (seq.tag == V_RANGE) it->n = range_len(as_range(seq));
    else if (seq.tag == V_TENSOR) it->n = as_tensor(seq)->shape[fc_level_of_pos(as_tensor(seq), 0)];
    else if (seq.tag == V_TUPLE) it->n = (int64_t)as_tuple(seq)->n;
    else if (seq.tag == V_STR) it->n = (int64_t)as_str(seq)->nchars;
    return true;
}

bool iterobj_next(Interp *I, IterObj *o, Value *out, bool *done)
{
    *done = true;
    if (o->n == 0) return true;
    if (o->kind == IK_SEQ) return iter_next(I, &o->its[0], out, done);
    if (o->kind == IK_FILTER) {
        for (;;) {
            Value x, r;
            bool end, t;
            if (!iter_next(I, &o->its[0], &x, &end)) return false;
            if (end) return true;
            if (o->fn.tag == V_NONE) {
                r = x;
                val_incref(r);
            } else if (!call_value(I, o->fn, &x, 1, NULL, 0, &r)) {
                val_decref(I, x);
                return false;
            }
            bool ok = val_truthy(I, r, &t);
            val_decref(I, r);
            if (!ok || t) {
                if (ok) {
                    *out = x;
                    *done = false;
                } else {
                    val_decref(I, x);
                }
                return ok;
            }
            val_decref(I, x);
        }
    }
    if (o->kind == IK_ENUM) {
        Value x;
        bool end;
        if (!iter_next(I, &o->its[0], &x, &end)) return false;
        if (end) return true;
        TupleObj *t = tuple_alloc(I, 2);
        if (!t) {
            val_decref(I, x);
            return false;
        }
        t->items[0] = o->fn;
        t->items[1] = x;
        if (__builtin_add_overflow(o->fn.i, 1, &o->fn.i)) {
            val_decref(I, v_obj(V_TUPLE, &t->h));
            return err_raise(I, TDL_ERR_OVERFLOW, "enumerate() count does not fit in 64 bits");
        }
        *out = v_obj(V_TUPLE, &t->h);
        *done = false;
        return true;
    }
    /* IK_MAP and IK_ZIP: one item of each iterable, until the shortest ends */
    Value args[MAX_ARGS + 1] = {0};   /* map's iterables came as the arguments of one call */
    int k = 0;
    bool ok = true, end = false;
    for (; k < o->n; k++) {
        if (!(ok = iter_next(I, &o->its[k], &args[k], &end)) || end) break;
    }
    if (ok && !end && o->kind == IK_ZIP) {
        TupleObj *t = tuple_alloc(I, (size_t)o->n);
        if ((ok = t != NULL)) {
            for (int j = 0; j < o->n; j++) {
                t->items[j] = args[j];
                args[j] = v_undef();
            }
            *out = v_obj(V_TUPLE, &t->h);
            *done = false;
        }
    } else if (ok && !end) {
        ok = call_value(I, o->fn, args, o->n, NULL, 0, out);
        if (ok) *done = false;
    }
    for (int j = 0; j < k; j++) val_decref(I, args[j]);
    return ok;
}

/* The next entry of a dict, set or view being iterated (it->i is the table position, it->n the
 * size it must keep): RuntimeError when the size changed, as in Python. */
static bool iter_dict_next(Interp *I, Iter *it, Value *out, bool *done)
{
    Value s = it->seq;
    DictViewObj *dv = s.tag == V_DICTVIEW ? (DictViewObj *)s.o : NULL;
    DictObj *d = dv ? dv->d : as_dict(s);
    if ((int64_t)d->used != it->n) {
        it->n = -1;     /* stays broken, as CPython's iterator does */
        return err_raise(I, TDL_ERR_RUNTIME, "%s changed size during iteration",
                         d->h.tag == V_DICT ? "dictionary" : "Set");
    }
    size_t pos = (size_t)it->i;
    DictEntry *e = dict_next(d, &pos);
    it->i = (int64_t)pos;
    if (!e) {
        *done = true;
        return true;
    }
    *done = false;
    if (!dv || dv->kind == DV_KEYS) *out = e->key;
    else if (dv->kind == DV_VALUES) *out = e->val;
    else {
        TupleObj *t = tuple_alloc(I, 2);
        if (!t) return false;
        t->items[0] = e->key;
        t->items[1] = e->val;
        val_incref(e->key);
        val_incref(e->val);
        *out = v_obj(V_TUPLE, &t->h);
        return true;
    }
    val_incref(*out);
    return true;
}

bool iter_next(Interp *I, Iter *it, Value *out, bool *done)
{
    Value s = it->seq;
    switch (s.tag) {
    case V_DICT: case V_SET: case V_FROZENSET: case V_DICTVIEW:
        return iter_dict_next(I, it, out, done);
    case V_GEN: {
        Value y = v_undef();
        if (!gen_next(I, (GenObj *)s.o, out, &y, done)) return false;
        val_decref(I, y);
        return true;
    }
    case V_ITER:
        return iterobj_next(I, (IterObj *)s.o, out, done);
    case V_INSTANCE:
        return class_iter_next(I, it, out, done);
    case V_LIST:        /* the list may grow or shrink while we walk it, as in Python */
        if ((size_t)it->i >= as_list(s)->n) { *done = true; return true; }
        *out = as_list(s)->items[it->i++];
        val_incref(*out);
        break;
    case V_TUPLE:
        if (it->i >= it->n) { *done = true; return true; }
        *out = as_tuple(s)->items[it->i++];
        val_incref(*out);
        break;
    case V_RANGE:
        if (it->i >= it->n) { *done = true; return true; }
        *out = v_int(as_range(s)->start + it->i++ * as_range(s)->step);
        break;
    case V_TENSOR:
        if (it->i >= it->n) { *done = true; return true; }
        if (!tensor_getitem(I, s, v_int(it->i), out)) return false;
        it->i++;
        break;
    case V_STR: {
        StrObj *str = as_str(s);
        if (it->byte >= str->len) { *done = true; return true; }
        size_t e = it->byte + 1;
        while (e < str->len && ((unsigned char)str->data[e] & 0xC0) == 0x80) e++;
        if (!str_new(I, str->data + it->byte, e - it->byte, out)) return false;
        it->byte = e;
        it->i++;
        break;
    }
    default:
        *done = true;
        return true;
    }
    *done = false;
    return true;
}

void iter_end(Interp *I, Iter *it)
{
    val_decref(I, it->seq);
    it->seq = v_undef();
}
