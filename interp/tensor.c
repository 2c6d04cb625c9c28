/* tensor.c — tensors in the interpreter: the FcCtx an interpreter owns, the signatures of the
 * operator table (tensor_ops.def) parsed at tdl_open, binding tdl arguments to a row's parameters
 * (overloads, defaults, keyword-only parameters, Python scalars as wrapped numbers), the generic
 * lowerings, and what the host operations of ops.c and format.c do with tensors, dtypes and
 * devices (Python's dunder methods on torch.Tensor: + - < bool() len() float() t[i] repr()).
 *
 * Depends on interp.h and fcdim.h only; the operators themselves are rows of tensor_ops.def with
 * their non-generic implementations in tensor_ops.c. Argument errors are TypeErrors in PyTorch's
 * words ("reshape(): argument 'shape' (position 1) must be tuple of ints, not str"); errors of
 * fcdim keep their message and map onto tdl's kinds (tensor_fail).
 */
#include "tensor.h"
#include "hash.h"
#include "mem.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROW_SLOTS = 1024 };     /* find_row's index of the table's names */

/* ---- errors ------------------------------------------------------------------------------ */

bool tensor_fail(Interp *I, FcStatus st, const FcError *e)
{
    static const tdl_error_kind kinds[] = {
        [FC_OK] = TDL_ERR_RUNTIME, [FC_ERR_IO] = TDL_ERR_IO, [FC_ERR_VALUE] = TDL_ERR_VALUE,
        [FC_ERR_NOMEM] = TDL_ERR_MEMORY, [FC_ERR_TYPE] = TDL_ERR_TYPE, [FC_ERR_RUNTIME] = TDL_ERR_RUNTIME,
        [FC_ERR_INDEX] = TDL_ERR_INDEX, [FC_ERR_DEVICE] = TDL_ERR_DEVICE, [FC_ERR_INTERRUPT] = TDL_ERR_INTERRUPT,
        [FC_ERR_DIM_BIND] = TDL_ERR_DIMENSION_BIND,
    };
    /* The host's memory exhausted: said without allocating. A device's has its own message
     * (which device, how much was asked for), and the host memory to say it. */
    if (st == FC_ERR_NOMEM && (!e || !e->msg[0] || strcmp(e->msg, "out of memory") == 0)) return err_nomem(I);
    if (st == FC_ERR_INTERRUPT) {
        I->interrupt = 0;
        return err_raise(I, TDL_ERR_INTERRUPT, "%s", "");
    }
    tdl_error_kind k = (unsigned)st < sizeof kinds / sizeof kinds[0] ? kinds[st] : TDL_ERR_RUNTIME;
    return err_raise(I, k, "%s", e->msg);
}

bool tensor_check(Interp *I, FcStatus st, const FcError *e)
{
    return st == FC_OK || tensor_fail(I, st, e);
}

/* ---- the context ------------------------------------------------------------------------- */

static void dump_text(void *ud, const char *text)
{
    Interp *I = ud;
    size_t n = strlen(text);
    bool nl = n > 0 && text[n - 1] == '\n';
    if (I->cfg.dump) {
        I->cfg.dump(I->cfg.dump_ud, text, n);
        if (!nl) I->cfg.dump(I->cfg.dump_ud, "\n", 1);
    } else {
        fputs(text, stderr);
        if (!nl) fputc('\n', stderr);
    }
}

static bool parse_sig(const TensorOpRow *row, TensorSig *s, char *why, size_t whylen);

/* Binds v as global `name` of m; keep: leave a name that is already bound alone. */
static bool set_name(Interp *I, Module *m, const char *name, Value v, bool keep)
{
    int32_t k = module_slot(m, name);
    if (k < 0) return err_nomem(I);
    if (keep && m->vals[k].tag != V_UNDEF) return true;
    Value old = m->vals[k];
    val_incref(v);
    m->vals[k] = v;
    val_decref(I, old);
    return true;
}

/* The tensor function each binary operator calls (tensor_binop). */
static const char *const binop_names[OP__COUNT] = {
    [OP_ADD] = "add", [OP_SUB] = "sub", [OP_MUL] = "mul", [OP_DIV] = "div", [OP_FLOORDIV] = "floor_divide",
    [OP_MOD] = "remainder", [OP_POW] = "pow", [OP_MATMUL] = "matmul", [OP_BITAND] = "bitwise_and",
    [OP_BITOR] = "bitwise_or", [OP_BITXOR] = "bitwise_xor", [OP_LSHIFT] = "bitwise_left_shift",
    [OP_RSHIFT] = "bitwise_right_shift", [OP_LT] = "lt", [OP_LE] = "le", [OP_GT] = "gt", [OP_GE] = "ge",
    [OP_EQ] = "eq", [OP_NE] = "ne",
};

bool tensor_init(Interp *I, Module *m)
{
    FcError e;
    FcStatus st = fc_ctx_new(&I->fc, &e);
    if (st != FC_OK) {
        I->fc = NULL;
        return tensor_fail(I, st, &e);
    }
    _Static_assert(sizeof(sig_atomic_t) == sizeof(int), "FcCtx.interrupt points at Interp.interrupt");
    I->fc->interrupt = (volatile int *)&I->interrupt;    /* Ctrl-C stops running kernels too */
    I->fc->locate = dims_locate;
    I->fc->locate_ud = I;
    I->fc->sched_off |= (I->cfg.flags & TDL_NO_FUSE ? FC_SCHED_FUSE : 0) | (I->cfg.flags & TDL_NO_HOIST ? FC_SCHED_HOIST : 0) |
                       (I->cfg.flags & TDL_NO_BOUNDS ? FC_SCHED_BOUNDS : 0);
    I->fc->fused_sums = I->cfg.flags & TDL_FUSED_SUMS;
    int flags = (I->cfg.flags & TDL_DUMP_IR ? FC_DUMP_IR : 0) | (I->cfg.flags & TDL_DUMP_KERNELS ? FC_DUMP_KERNELS : 0) |
                (I->cfg.flags & TDL_DUMP_CUDA ? FC_DUMP_CUDA : 0) | (I->cfg.flags & TDL_VERBOSE ? FC_DUMP_VERBOSE : 0);
    if (flags) {
        I->fc->dump_flags = flags;
        I->fc->dump = dump_text;
        I->fc->dump_ud = I;
    }
    I->device = fc_cpu();
    I->tsigs = mem_calloc((size_t)tensor_nops, sizeof *I->tsigs);
    if (!I->tsigs) return err_nomem(I);
    for (int r = 0; r < tensor_nops; r++) {
        char why[160];
        const TensorOpRow *row = &tensor_ops[r];
        if (!parse_sig(row, &I->tsigs[r], why, sizeof why))
            return err_raise(I, TDL_ERR_RUNTIME, "tensor_ops.def: %s%s%s: %s", row->name,
                             row->overload[0] ? "." : "", row->overload, why);
    }
    if (tensor_nops > ROW_SLOTS / 2)
        return err_raise(I, TDL_ERR_RUNTIME, "tensor_ops.def: %d rows; find_row's index holds %d", tensor_nops, ROW_SLOTS / 2);
    for (int op = 0; op < OP__COUNT; op++)
        I->binop_row[op] = (int16_t)(binop_names[op] ? tensor_row(binop_names[op], TV_FUNCTION) : -1);
    /* Overloads are consecutive rows: each row knows where its group ends. */
    for (int r = tensor_nops - 1; r >= 0; r--) {
        bool same = r + 1 < tensor_nops && strcmp(tensor_ops[r].name, tensor_ops[r + 1].name) == 0;
        I->tsigs[r].group_end = same ? I->tsigs[r + 1].group_end : r + 1;
        for (int q = I->tsigs[r].group_end; q < tensor_nops && !same; q++)
            if (strcmp(tensor_ops[q].name, tensor_ops[r].name) == 0)
                return err_raise(I, TDL_ERR_RUNTIME, "tensor_ops.def: the overloads of %s are not consecutive",
                                 tensor_ops[r].name);
    }
    /* Functions, unless a host builtin has the name (which then passes tensors on: builtin_call). */
    for (int r = 0; r < tensor_nops; r++) {
        if (!(tensor_ops[r].variants & TV_FUNCTION) || tensor_function(tensor_ops[r].name) != &tensor_ops[r].def)
            continue;
        Value v;
        if (!builtin_bind(I, &tensor_ops[r].def, v_undef(), &v)) return false;
        bool ok = set_name(I, m, tensor_ops[r].name, v, true);
        val_decref(I, v);
        if (!ok) return false;
    }
    static const struct { const char *name; FcDType t; } dtypes[] = {
        {"float32", FC_FLOAT32}, {"float64", FC_FLOAT64}, {"int32", FC_INT32},     {"int64", FC_INT64},
        {"uint8", FC_UINT8},     {"int8", FC_INT8},       {"int16", FC_INT16},       {"float16", FC_FLOAT16},
        {"bfloat16", FC_BFLOAT16},
    };
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++)
        if (!set_name(I, m, dtypes[k].name, v_dtype(dtypes[k].t), false)) return false;
    static const struct { const char *name; FcMemoryFormat mf; } formats[] = {
        {"preserve_format", FC_MF_PRESERVE}, {"contiguous_format", FC_MF_CONTIGUOUS},
        {"channels_last", FC_MF_CHANNELS_LAST}, {"channels_last_3d", FC_MF_CHANNELS_LAST_3D},
    };
    for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++)
        if (!set_name(I, m, formats[k].name, v_memfmt(formats[k].mf), false)) return false;
    static const struct { const char *name; TypeId t; } types[] = {
        {"Tensor", T_TENSOR}, {"dtype", T_DTYPE}, {"device", T_DEVICE},
    };
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        Value v = {.tag = V_TYPE, .i = types[k].t};
        if (!set_name(I, m, types[k].name, v, false)) return false;
    }
    return true;
}

void tensor_fini(Interp *I)
{
    if (I->fc) fc_ctx_free(I->fc);
    I->fc = NULL;
    mem_free(I->tsigs);
    I->tsigs = NULL;
}

/* Parses a device name; false (with the error raised) when it is not one. */
static bool parse_device(Interp *I, const char *name, FcDevice *d)
{
    if (fc_device_parse(name, d)) return true;
    return err_raise(I, TDL_ERR_RUNTIME,
                     "Expected one of cpu, cuda device type at start of device string: %s", name);
}

bool tensor_set_device(Interp *I, const char *name)
{
    FcDevice d;
    FcBackend *be;
    FcError e;
    if (!fc_device_parse(name, &d))
        return err_raise(I, TDL_ERR_DEVICE, "unknown device '%s' (use cpu, cuda or cuda:N)", name);
    FcStatus st = fc_ctx_backend(I->fc, d, &be, &e);
    if (st != FC_OK) return tensor_fail(I, st, &e);
    I->device = d;
    return true;
}

/* ---- signatures -------------------------------------------------------------------------- */

static const struct { const char *name; TensorType type; const char *shown; } type_table[] = {
    {"Tensor", TT_TENSOR, "Tensor"}, {"Scalar", TT_SCALAR, "Number"}, {"int", TT_INT, "int"},
    {"float", TT_FLOAT, "float"}, {"bool", TT_BOOL, "bool"}, {"str", TT_STR, "str"},
    {"ScalarType", TT_DTYPE, "dtype"}, {"Device", TT_DEVICE, "device"},
    {"MemoryFormat", TT_MEMFMT, "memory_format"}, {"object", TT_OBJECT, "object"},
};

/* How a message names a parameter's type ("tuple of ints", "Tensor", ...). */
static const char *type_shown(TensorType t)
{
    if (t == TT_INTLIST) return "tuple of ints";
    if (t == TT_TENSORLIST) return "tuple of Tensors";
    for (size_t k = 0; k < sizeof type_table / sizeof type_table[0]; k++)
        if (type_table[k].type == t) return type_table[k].shown;
    return "?";
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ') p++;
    return p;
}

/* An identifier at p into buf; returns the end, or NULL if there is none or it is too long. */
static const char *ident(const char *p, char *buf, size_t n)
{
    size_t k = 0;
    while (isalnum((unsigned char)p[k]) || p[k] == '_') k++;
    if (k == 0 || k >= n) return NULL;
    memcpy(buf, p, k);
    buf[k] = '\0';
    return p + k;
}

static bool memfmt_named(const char *s, FcMemoryFormat *mf)
{
    static const char *const names[] = {"preserve_format", "contiguous_format", "channels_last", "channels_last_3d"};
    for (int k = 0; k < 4; k++)
        if (strcmp(s, names[k]) == 0) {
            *mf = (FcMemoryFormat)k;
            return true;
        }
    return false;
}

static const char *parse_default(const char *p, TensorParam *pr)
{
    TensorDefault *d = &pr->dflt;
    char word[32];
    if (*p == '[') {
        p = skip_ws(p + 1);
        if (*p != ']') return NULL;
        d->kind = TD_EMPTY_LIST;
        return p + 1;
    }
    if (*p == '\'') {
        const char *q = strchr(p + 1, '\'');
        if (!q || (size_t)(q - p - 1) >= sizeof d->s) return NULL;
        memcpy(d->s, p + 1, (size_t)(q - p - 1));
        d->s[q - p - 1] = '\0';
        d->kind = TD_STR;
        return q + 1;
    }
    if (*p == '-' || isdigit((unsigned char)*p)) {
        char *end;
        d->f = strtod(p, &end);
        d->i = strtoll(p, NULL, 10);
        bool isfloat = false;
        for (const char *q = p; q < end; q++) isfloat |= *q == '.' || *q == 'e';
        d->kind = isfloat ? TD_FLOAT : TD_INT;
        return end;
    }
    const char *q = ident(p, word, sizeof word);
    if (!q) return NULL;
    FcMemoryFormat mf;
    if (strcmp(word, "None") == 0) d->kind = TD_NONE;
    else if (strcmp(word, "True") == 0 || strcmp(word, "False") == 0) {
        d->kind = TD_BOOL;
        d->i = word[0] == 'T';
    } else if (memfmt_named(word, &mf)) {
        d->kind = TD_MEMFMT;
        d->i = mf;
    } else {
        return NULL;
    }
    return q;
}

static bool parse_sig(const TensorOpRow *row, TensorSig *s, char *why, size_t whylen)
{
    memset(s, 0, sizeof *s);
    s->row = row;
    s->varargs = s->varkw = -1;
    const char *p = skip_ws(row->sig);
    bool kwonly = false;
#define BAD(msg) do { snprintf(why, whylen, "%s at '%.20s'", msg, p); return false; } while (0)
    if (*p++ != '(') BAD("expected '('");
    for (p = skip_ws(p); *p != ')';) {
        const char *start = p;
        bool star = false, star2 = false;
        if (p[0] == '*' && p[1] == '*') {
            star2 = true;
            p = skip_ws(p + 2);
        } else if (p[0] == '*') {
            p = skip_ws(p + 1);
            if (*p == ',' || *p == ')') {
                kwonly = true;
                goto next;
            }
            star = true;
        }
        if (s->nparams == TENSOR_MAX_PARAMS) BAD("more parameters than TENSOR_MAX_PARAMS");
        TensorParam *pr = &s->params[s->nparams];
        char tname[24];
        const char *q = ident(p, tname, sizeof tname);
        if (!q) BAD("expected a type");
        size_t k = 0;
        while (k < sizeof type_table / sizeof type_table[0] && strcmp(type_table[k].name, tname) != 0) k++;
        if (k == sizeof type_table / sizeof type_table[0]) BAD("unknown type");
        pr->type = type_table[k].type;
        p = q;
        if (*p == '[') {
            while (isdigit((unsigned char)*++p)) {}
            if (*p++ != ']') BAD("expected ']'");
            if (pr->type == TT_INT) pr->type = TT_INTLIST;
            else if (pr->type == TT_TENSOR) pr->type = TT_TENSORLIST;
            else BAD("only int[] and Tensor[] are lists");
        }
        if (*p == '?') {
            pr->optional = true;
            p++;
        }
        p = skip_ws(p);
        if (!(q = ident(p, pr->name, sizeof pr->name))) BAD("expected a name");
        p = skip_ws(q);
        pr->required = true;
        if (*p == '=') {
            if (!(q = parse_default(skip_ws(p + 1), pr))) BAD("bad default");
            if (pr->dflt.kind == TD_NONE && !pr->optional) BAD("default None for a parameter without '?'");
            pr->required = false;
            p = q;
        }
        pr->kwonly = kwonly;
        pr->varargs = star;
        pr->varkw = star2;
        if (star || star2) {
            if (pr->type != TT_TENSOR) BAD("only Tensor varargs are supported");
            pr->required = false;
            if (star) s->varargs = s->nparams;
            else s->varkw = s->nparams;
            kwonly = true;
        } else if (!kwonly) {
            s->npos++;
        }
        pr->text = start;
        pr->textlen = (int)(p - start);
        while (pr->textlen > 0 && start[pr->textlen - 1] == ' ') pr->textlen--;
        s->nparams++;
    next:
        p = skip_ws(p);
        if (*p == ',') p = skip_ws(p + 1);
        else if (*p != ')') BAD("expected ',' or ')'");
    }
    p = skip_ws(p + 1);
    if (*p && strncmp(p, "->", 2) != 0) BAD("expected '->'");
    if ((row->variants & (TV_METHOD | TV_ATTR)) &&
        (s->nparams == 0 || strcmp(s->params[0].name, "self") != 0 || s->params[0].type != TT_TENSOR))
        BAD("a method's first parameter must be Tensor self");
    if (row->lower != TL_IMPL && (s->nparams == 0 || s->params[0].type != TT_TENSOR))
        BAD("a generic lowering needs a Tensor first");
#undef BAD
    s->requires_grad = -1;
    for (int k = 0; k < s->nparams; k++)
        /* the creation functions' keyword (requires_grad_'s is its own, positional) */
        if (strcmp(s->params[k].name, "requires_grad") == 0 && s->params[k].kwonly) s->requires_grad = k;
    return true;
}

TensorArg *tensor_arg(const TensorSig *sig, TensorArg *a, const char *name)
{
    for (int k = 0; k < sig->nparams; k++)
        if (strcmp(sig->params[k].name, name) == 0) return &a[k];
    return NULL;
}

/* ---- binding arguments ------------------------------------------------------------------- */

typedef enum BindStatus { BIND_OK, BIND_MISMATCH, BIND_ERROR } BindStatus;

typedef struct Call {
    Value self;                 /* the receiver of a method call, V_UNDEF for a function call */
    const Value *args;
    int nargs;
    const char *const *kwnames;
    int nkw;
} Call;

static bool is_number(Value v) { return v.tag == V_BOOL || v.tag == V_INT || v.tag == V_FLOAT; }

/* The Scalar of a Python bool, int or float, and its type (bool, int64 or float64). */
static FcScalar number_scalar(Value v, FcDType *dt)
{
    FcScalar s;
    if (v.tag == V_BOOL) {
        *dt = FC_BOOL;
        s.i = v.b;
    } else if (v.tag == V_INT) {
        *dt = FC_INT64;
        s.i = v.i;
    } else {
        *dt = FC_FLOAT64;
        s.f = v.f;
    }
    return s;
}

/* The wrapped-number tensor of a Python bool, int or float. */
static bool tensor_from_number(Interp *I, Value v, FcTensor **out)
{
    FcDType dt;
    FcScalar s = number_scalar(v, &dt);
    FcError e;
    return tensor_check(I, fc_scalar(I->fc, dt, s, true, out, &e), &e);
}

FcScalar tensor_scalar_as(FcScalar s, FcDType sdt, FcDType dt)
{
    FcScalar r;
    bool from_float = fc_dtype_is_float(sdt);
    if (fc_dtype_compute(dt) != dt)     /* the narrow dtypes: wrapped or rounded as a cast does */
        return fc_scalar_convert(s, from_float ? FC_FLOAT64 : sdt == FC_BOOL ? FC_BOOL : FC_INT64, dt);
    if (fc_dtype_is_float(dt)) r.f = from_float ? s.f : (double)s.i;
    else if (dt == FC_BOOL) r.i = from_float ? s.f != 0.0 : s.i != 0;
    else r.i = from_float ? (int64_t)s.f : s.i;
    if (dt == FC_FLOAT32) r.f = (float)r.f;
    if (dt == FC_INT32) r.i = (int32_t)r.i;
    return r;
}

bool tensor_scalar_fits(Interp *I, FcScalar s, FcDType sdt, FcDType dt, bool cxx_name)
{
    FcDType from = fc_dtype_is_float(sdt) ? FC_FLOAT64 : sdt == FC_BOOL ? FC_BOOL : FC_INT64;
    if (fc_scalar_fits(s, from, dt)) return true;
    return err_raise(I, TDL_ERR_RUNTIME, "value cannot be converted to type %s without overflow",
                     cxx_name ? fc_dtype_cxx_name(dt) : fc_dtype_name(dt));
}

/* A 0-dim tensor written where torch takes its item() as a number (fill_, masked_fill_, setitem's
 * fill): the number's range checked against dt, as tensor_scalar_fits. */
bool tensor_item_fits(Interp *I, FcTensor *t, FcDType dt)
{
    FcScalar s;
    FcError e;
    return tensor_check(I, fc_item(I->fc, t, &s, &e), &e) && tensor_scalar_fits(I, s, t->dtype, dt, true);
}

/* The value of a 0-dim tensor passed where a number is expected (int / Scalar parameters). */
static bool zero_dim_item(Interp *I, Value v, FcScalar *s, FcDType *dt)
{
    FcError e;
    FcTensor *t = as_tensor(v);
    if (!tensor_check(I, fc_item(I->fc, t, s, &e), &e)) return false;
    *dt = fc_dtype_is_float(t->dtype) ? FC_FLOAT64 : t->dtype == FC_BOOL ? FC_BOOL : FC_INT64;
    return true;
}

/* The name of parameter k as a message shows it: torch calls a function's self "input". */
static const char *param_shown(const TensorSig *sig, int k, bool method)
{
    return k == 0 && !method && strcmp(sig->params[0].name, "self") == 0 ? "input" : sig->params[k].name;
}

static void release_args(const TensorSig *sig, TensorArg *a)
{
    for (int k = 0; k < sig->nparams; k++) {
        fc_tensor_release(a[k].t);
        if (a[k].ts) {
            for (int j = 0; j < a[k].n; j++) fc_tensor_release(a[k].ts[j]);
            mem_free(a[k].ts);
        }
        mem_free(a[k].names);
    }
}

/* One int[] element (an int, or a 0-dim integer tensor when lenient). */
static BindStatus intlist_item(Interp *I, Value x, bool lenient, int64_t *out, bool *ok)
{
    *ok = true;
    if (x.tag == V_INT) {
        *out = x.i;
        return BIND_OK;
    }
    if (lenient && x.tag == V_TENSOR && as_tensor(x)->ndim == 0 && fc_dtype_is_int(as_tensor(x)->dtype)) {
        FcScalar s;
        FcDType dt;
        if (!zero_dim_item(I, x, &s, &dt)) return BIND_ERROR;
        *out = s.i;
        return BIND_OK;
    }
    *ok = false;
    return BIND_MISMATCH;
}

/* Converts v for parameter k. pos: its 1-based position as the caller wrote it, 0 by keyword. */
static BindStatus convert(Interp *I, const TensorSig *sig, int k, bool method, Value v, int pos,
                          bool lenient, TensorArg *a, char *why, size_t whylen)
{
    const TensorParam *p = &sig->params[k];
    const char *fname = sig->row->name;
    a->v = v;
    if (v.tag == V_NONE && p->optional) {
        a->none = true;
        return BIND_OK;
    }
    if ((p->type == TT_INT || p->type == TT_INTLIST) && strcmp(p->name, "dim") == 0 && dims_in_arg(v) &&
        dims_row_takes_dims(sig->row)) {
        a->fdim = true;         /* dims.c reads them from v */
        return BIND_OK;
    }
    switch (p->type) {
    case TT_TENSOR:
        if (v.tag == V_TENSOR) {
            a->t = fc_tensor_retain(as_tensor(v));
            return BIND_OK;
        }
        if (lenient && is_number(v)) return tensor_from_number(I, v, &a->t) ? BIND_OK : BIND_ERROR;
        if (lenient && v.tag == V_DIM) return dims_tensor_of(I, v, &a->t) ? BIND_OK : BIND_ERROR;
        break;
    case TT_SCALAR:
        if (v.tag == V_BOOL || v.tag == V_INT) {
            a->s.i = v.tag == V_BOOL ? v.b : v.i;
            a->sdt = v.tag == V_BOOL ? FC_BOOL : FC_INT64;
            return BIND_OK;
        }
        if (v.tag == V_FLOAT) {
            a->s.f = v.f;
            a->sdt = FC_FLOAT64;
            return BIND_OK;
        }
        if (lenient && v.tag == V_TENSOR && as_tensor(v)->ndim == 0)
            return zero_dim_item(I, v, &a->s, &a->sdt) ? BIND_OK : BIND_ERROR;
        break;
    case TT_INT: {
        bool ok;
        BindStatus st = intlist_item(I, v, lenient, &a->i, &ok);
        if (ok) {
            a->n = 1;       /* an int dim reads like a one-element int[] (reductions) */
            a->ints[0] = a->i;
        }
        if (st != BIND_MISMATCH) return st;
        break;
    }
    case TT_FLOAT:
        if (v.tag == V_FLOAT || v.tag == V_INT) {
            a->f = v.tag == V_FLOAT ? v.f : (double)v.i;
            return BIND_OK;
        }
        break;
    case TT_BOOL:
        if (v.tag == V_BOOL) {
            a->b = v.b;
            return BIND_OK;
        }
        break;
    case TT_STR:
        if (v.tag == V_STR) {
            a->str = as_str(v)->data;
            return BIND_OK;
        }
        break;
    case TT_DTYPE:
        if (v.tag == V_DTYPE) {
            a->dtype = (FcDType)v.i;
            return BIND_OK;
        }
        if (v.tag == V_TYPE && (v.i == T_FLOAT || v.i == T_INT || v.i == T_BOOL)) {
            /* as torch: dtype=float is float64, int is int64 */
            a->dtype = v.i == T_FLOAT ? FC_FLOAT64 : v.i == T_INT ? FC_INT64 : FC_BOOL;
            return BIND_OK;
        }
        break;
    case TT_DEVICE:
        if (v.tag == V_DEVICE) {
            a->device = device_of(v);
            return BIND_OK;
        }
        if (v.tag == V_STR) return parse_device(I, as_str(v)->data, &a->device) ? BIND_OK : BIND_ERROR;
        if (v.tag == V_INT && v.i >= 0 && v.i <= INT32_MAX) {
            a->device.type = FC_DEV_CUDA;
            a->device.index = (int)v.i;
            return BIND_OK;
        }
        break;
    case TT_MEMFMT:
        if (v.tag == V_MEMFMT) {
            a->mf = (FcMemoryFormat)v.i;
            return BIND_OK;
        }
        break;
    case TT_OBJECT:
        return BIND_OK;
    case TT_INTLIST: {
        if (v.tag == V_INT) {
            a->n = 1;
            a->ints[0] = v.i;
            return BIND_OK;
        }
        if (v.tag != V_TUPLE && v.tag != V_LIST) break;
        size_t n = v.tag == V_TUPLE ? as_tuple(v)->n : as_list(v)->n;
        const Value *items = v.tag == V_TUPLE ? as_tuple(v)->items : as_list(v)->items;
        if (n > FC_MAX_DIMS) {
            snprintf(why, whylen, "%s(): argument '%s' has %zu elements, more than the %d dims a tensor may have",
                     fname, param_shown(sig, k, method), n, FC_MAX_DIMS);
            return BIND_MISMATCH;
        }
        for (size_t j = 0; j < n; j++) {
            bool ok;
            BindStatus st = intlist_item(I, items[j], lenient, &a->ints[j], &ok);
            if (st == BIND_ERROR) return st;
            if (!ok) {
                snprintf(why, whylen, "%s(): argument '%s' must be tuple of ints, but found element of type %s at pos %zu",
                         fname, param_shown(sig, k, method), val_type_name(items[j]), j + 1);
                return BIND_MISMATCH;
            }
        }
        a->n = (int)n;
        return BIND_OK;
    }
    case TT_TENSORLIST: {
        if (v.tag != V_TUPLE && v.tag != V_LIST) break;
        size_t n = v.tag == V_TUPLE ? as_tuple(v)->n : as_list(v)->n;
        const Value *items = v.tag == V_TUPLE ? as_tuple(v)->items : as_list(v)->items;
        for (size_t j = 0; j < n; j++)
            if (items[j].tag != V_TENSOR) {
                snprintf(why, whylen, "%s(): expected Tensor as element %zu in argument '%s', but got %s", fname, j,
                         param_shown(sig, k, method), val_type_name(items[j]));
                return BIND_MISMATCH;
            }
        a->ts = mem_malloc((n ? n : 1) * sizeof *a->ts);
        if (!a->ts) return err_nomem(I), BIND_ERROR;
        for (size_t j = 0; j < n; j++) a->ts[j] = fc_tensor_retain(as_tensor(items[j]));
        a->n = (int)n;
        return BIND_OK;
    }
    }
    if (pos > 0)
        snprintf(why, whylen, "%s(): argument '%s' (position %d) must be %s, not %s", fname,
                 param_shown(sig, k, method), pos, type_shown(p->type), val_type_name(v));
    else
        snprintf(why, whylen, "%s(): argument '%s' must be %s, not %s", fname, param_shown(sig, k, method),
                 type_shown(p->type), val_type_name(v));
    return BIND_MISMATCH;
}

static void apply_default(const TensorParam *p, TensorArg *a)
{
    const TensorDefault *d = &p->dflt;
    a->v = v_undef();
    switch (d->kind) {
    case TD_NONE: a->none = true; break;
    case TD_BOOL: a->b = d->i != 0; break;
    case TD_INT:
        a->i = d->i;
        a->f = (double)d->i;
        a->s.i = d->i;
        a->sdt = FC_INT64;
        if (p->type == TT_INT || p->type == TT_INTLIST) {
            a->n = 1;
            a->ints[0] = d->i;
        }
        break;
    case TD_FLOAT:
        a->f = d->f;
        a->s.f = d->f;
        a->sdt = FC_FLOAT64;
        break;
    case TD_EMPTY_LIST: a->n = 0; break;
    case TD_STR: a->str = d->s; break;
    case TD_MEMFMT: a->mf = (FcMemoryFormat)d->i; break;
    }
}

/* Collects the Tensor arguments of a `*` or `**` parameter. */
static BindStatus collect(Interp *I, const TensorSig *sig, int k, const Value *vals, const char *const *names,
                          int n, TensorArg *a, char *why, size_t whylen)
{
    a->ts = mem_malloc((size_t)(n ? n : 1) * sizeof *a->ts);
    a->names = names ? mem_malloc((size_t)(n ? n : 1) * sizeof *a->names) : NULL;
    if (!a->ts || (names && !a->names)) return err_nomem(I), BIND_ERROR;
    for (int j = 0; j < n; j++) {
        if (vals[j].tag != V_TENSOR) {
            snprintf(why, whylen, "%s(): argument '%s' must be Tensor, not %s", sig->row->name,
                     names ? names[j] : sig->params[k].name, val_type_name(vals[j]));
            return BIND_MISMATCH;
        }
        a->ts[a->n++] = fc_tensor_retain(as_tensor(vals[j]));
        if (names) a->names[j] = names[j];
    }
    return BIND_OK;
}

/* Binds a call to one signature. On anything but BIND_OK, a holds nothing. */
static BindStatus bind(Interp *I, const TensorSig *sig, const Call *c, bool lenient, TensorArg *a, char *why,
                       size_t whylen)
{
    const char *fname = sig->row->name;
    bool method = c->self.tag != V_UNDEF;
    Value given[TENSOR_MAX_PARAMS];
    int pos[TENSOR_MAX_PARAMS];
    memset(a, 0, (size_t)sig->nparams * sizeof *a);
    for (int k = 0; k < sig->nparams; k++) {
        given[k] = v_undef();
        pos[k] = 0;
    }
    int p0 = method ? 1 : 0;
    if (method) given[0] = c->self;
    int navail = sig->npos - p0;
    bool spread = navail == 1 && sig->params[p0].type == TT_INTLIST && c->nargs >= 1 && c->args[0].tag == V_INT;
    int nextra = 0;
    const Value *extra = NULL;
    BindStatus st = BIND_OK;
    if (!spread) {
        if (c->nargs > navail && sig->varargs < 0) {
            snprintf(why, whylen, "%s() takes %d positional argument%s but %d %s given", fname, navail,
                     navail == 1 ? "" : "s", c->nargs, c->nargs == 1 ? "was" : "were");
            return BIND_MISMATCH;
        }
        for (int j = 0; j < c->nargs && j < navail; j++) {
            given[p0 + j] = c->args[j];
            pos[p0 + j] = j + 1;
        }
        if (c->nargs > navail) {
            extra = c->args + navail;
            nextra = c->nargs - navail;
        }
    }
    const char *kwn[MAX_ARGS + 1];
    Value kwv[MAX_ARGS + 1];
    int nkwextra = 0;
    for (int j = 0; j < c->nkw; j++) {
        const char *name = c->kwnames[j];
        int k = -1;
        for (int q = p0; q < sig->nparams && k < 0; q++)
            if (!sig->params[q].varargs && !sig->params[q].varkw && strcmp(name, param_shown(sig, q, method)) == 0)
                k = q;
        if (k < 0) {
            if (sig->varkw < 0) {
                snprintf(why, whylen, "%s() got an unexpected keyword argument '%s'", fname, name);
                return BIND_MISMATCH;
            }
            kwn[nkwextra] = name;
            kwv[nkwextra++] = c->args[c->nargs + j];
            continue;
        }
        if (given[k].tag != V_UNDEF || (spread && k == p0)) {
            snprintf(why, whylen, "%s() got multiple values for argument '%s'", fname, name);
            return BIND_MISMATCH;
        }
        given[k] = c->args[c->nargs + j];
    }
    int missing = 0, nmissing = 0;
    char names[160] = "";
    for (int k = 0; k < sig->nparams; k++)
        nmissing += given[k].tag == V_UNDEF && sig->params[k].required && !(spread && k == p0);
    for (int k = 0; k < sig->nparams; k++) {
        if (given[k].tag != V_UNDEF || !sig->params[k].required || (spread && k == p0)) continue;
        size_t len = strlen(names);
        missing++;
        /* Python's wording: 'a', 'a' and 'b', 'a', 'b', and 'c' */
        const char *sep = missing == 1 ? "" : missing < nmissing ? ", " : nmissing > 2 ? ", and " : " and ";
        snprintf(names + len, sizeof names - len, "%s'%s'", sep, param_shown(sig, k, method));
    }
    if (missing) {
        snprintf(why, whylen, "%s() missing %d required positional argument%s: %s", fname, missing,
                 missing == 1 ? "" : "s", names);
        return BIND_MISMATCH;
    }
    for (int k = 0; k < sig->nparams && st == BIND_OK; k++) {
        const TensorParam *p = &sig->params[k];
        if (spread && k == p0) {
            if (c->nargs > FC_MAX_DIMS) {
                snprintf(why, whylen, "%s(): too many sizes (%d; at most %d dims)", fname, c->nargs, FC_MAX_DIMS);
                st = BIND_MISMATCH;
                break;
            }
            a[k].v = c->args[0];
            for (int j = 0; j < c->nargs && st == BIND_OK; j++) {
                bool ok;
                st = intlist_item(I, c->args[j], lenient, &a[k].ints[j], &ok);
                if (st == BIND_MISMATCH)
                    snprintf(why, whylen, "%s(): argument '%s' must be tuple of ints, but found element of type %s at pos %d",
                             fname, p->name, val_type_name(c->args[j]), j + 1);
            }
            a[k].n = c->nargs;
        } else if (p->varargs) {
            st = collect(I, sig, k, extra, NULL, nextra, &a[k], why, whylen);
        } else if (p->varkw) {
            st = collect(I, sig, k, kwv, kwn, nkwextra, &a[k], why, whylen);
        } else if (given[k].tag != V_UNDEF) {
            st = convert(I, sig, k, method, given[k], method && k == 0 ? 0 : pos[k], lenient, &a[k], why, whylen);
        } else {
            apply_default(p, &a[k]);
        }
    }
    if (st != BIND_OK) release_args(sig, a);
    return st;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

bool tensor_dim_mask(Interp *I, const FcTensor *t, const TensorArg *dim, uint64_t *mask)
{
    *mask = 0;
    if (!dim || dim->none) return true;
    for (int k = 0; k < dim->n; k++) {
        int d;
        FcError e;
        if (!tensor_check(I, fc_wrap_dim(dim->ints[k], t->ndim, &d, &e), &e)) return false;
        if (t->ndim == 0) continue;     /* a 0-dim tensor reduces over nothing */
        if (*mask & (UINT64_C(1) << d))
            return err_raise(I, TDL_ERR_RUNTIME, "dim %d appears multiple times in the list of dims", d);
        *mask |= UINT64_C(1) << d;
    }
    return true;
}

static bool run_reduce(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    const TensorOpRow *r = sig->row;
    TensorArg *dim = tensor_arg(sig, a, "dim"), *keep = tensor_arg(sig, a, "keepdim"), *dt = tensor_arg(sig, a, "dtype");
    FcTensor *x = fc_tensor_retain(a[0].t), *res = NULL, *y;
    FcError e;
    FcStatus st = FC_OK;
    uint64_t mask;
    bool cast = dt && !dt->none;
    FcDType want = cast ? dt->dtype : (r->op == FC_OP_ANY || r->op == FC_OP_ALL) ? FC_BOOL : x->dtype;
    if (want != x->dtype) {
        st = fc_to(I->fc, x, want, x->device, &y, &e);
        fc_tensor_release(x);
        x = st == FC_OK ? y : NULL;
    }
    bool ok = tensor_check(I, st, &e) && tensor_dim_mask(I, x, dim, &mask);
    if (ok) {
        /* max() and min(): amax and amin under another name, with max()'s gradient and messages */
        bool max_all = (r->op == FC_OP_AMAX || r->op == FC_OP_AMIN) && strcmp(fc_op_name(r->op), r->name) != 0;
        st = max_all ? fc_max_all(I->fc, x, 0, r->op == FC_OP_AMIN, &res, &e)
                     : r->op == FC_OP_SUM  ? fc_sum(I->fc, x, mask, keep && keep->b, &res, &e)
                     : r->op == FC_OP_PROD ? fc_prod(I->fc, x, mask, keep && keep->b, &res, &e)
                     : fc_reduce(I->fc, r->op, x, mask, keep && keep->b, &res, &e);
        /* any/all of uint8 give uint8 in PyTorch 1.13 (its legacy behaviour) */
        if (st == FC_OK && !cast && (r->op == FC_OP_ANY || r->op == FC_OP_ALL) && a[0].t->dtype == FC_UINT8) {
            st = fc_cast(I->fc, res, FC_UINT8, &y, &e);
            fc_tensor_release(res);
            res = st == FC_OK ? y : NULL;
        }
        ok = tensor_check(I, st, &e);
    }
    /* torch's CPU argmax/argmin kernel takes no bool, but it is not called for a reduced dim of
     * size 1 or an empty result (a flattened one always calls it); emptiness is checked first. */
    if (ok && (r->op == FC_OP_ARGMAX || r->op == FC_OP_ARGMIN) && x->dtype == FC_BOOL) {
        int64_t n = fc_tensor_numel(res);
        if (mask == 0 || (n > 0 && fc_tensor_numel(x) / n > 1)) {
            ok = err_raise(I, TDL_ERR_RUNTIME, "\"%s_cpu\" not implemented for 'Bool'", r->name);
            fc_tensor_release(res);
            res = NULL;
        }
    }
    if (ok && cast && res->dtype != want) {     /* sum(dtype=int32) stays int32 */
        ok = tensor_check(I, fc_to(I->fc, res, want, res->device, &y, &e), &e);
        fc_tensor_release(res);
        res = ok ? y : NULL;
    }
    fc_tensor_release(x);
    return ok && tensor_value_steal(I, res, out);
}

/* The dtypes torch's kernels refuse for the named functions (fcdim would compute them: floor of a
 * bool is a copy). Returns false with torch's error. `~` on a float tensor is a TypeError instead
 * (tensor_unary), as torch's operator raises it before any kernel. */
static bool torch_kernel_accepts(Interp *I, const TensorOpRow *r, const FcTensor *t)
{
    if (r->lower != TL_UNARY && r->lower != TL_REDUCE) return true;
    switch (r->op) {
    case FC_OP_FLOOR: case FC_OP_CEIL: case FC_OP_ROUND: case FC_OP_TRUNC:
        if (t->dtype == FC_BOOL)
            return err_raise(I, TDL_ERR_RUNTIME, "\"%s_vml_cpu\" not implemented for 'Bool'", r->name);
        return true;
    case FC_OP_RELU:
        if (t->dtype == FC_BOOL) return err_raise(I, TDL_ERR_RUNTIME, "Boolean inputs not supported for relu");
        return true;
    case FC_OP_NOT:
        if (fc_dtype_is_float(t->dtype))
            return err_raise(I, TDL_ERR_RUNTIME, "\"bitwise_not_cpu\" not implemented for '%s'",
                             fc_dtype_torch_name(t->dtype));
        return true;
    default:
        return true;
    }
}

/* PyTorch's grad_fn names of the rows whose IR would name another op (mean's DivBackward0, a
 * gather's IndexBackward0, a view's AsStridedBackward0): name0, or name1 when a `dim` argument is
 * given (sum(dim): SumBackward1). Rows of one name take the entry without an overload unless one
 * names theirs. In-place rows keep their records' names. */
static const struct GradName {
    const char *row, *overload, *name0, *name1;
} grad_names[] = {
    {"sum", "", "SumBackward0", "SumBackward1"}, {"mean", "", "MeanBackward0", "MeanBackward1"},
    {"prod", "", "ProdBackward0", "ProdBackward1"}, {"max", "", "MaxBackward1", NULL},
    {"min", "", "MinBackward1", NULL}, {"std", NULL, "StdBackward0", "StdBackward0"},
    {"var", NULL, "VarBackward0", "VarBackward0"}, {"norm", "", "NormBackward1", "NormBackward1"},
    {"logsumexp", "", "LogsumexpBackward0", "LogsumexpBackward0"}, {"softmax", "", "SoftmaxBackward0", NULL},
    {"log_softmax", "", "LogSoftmaxBackward0", NULL}, {"cumsum", "", "CumsumBackward0", "CumsumBackward0"},
    {"cumprod", "", "CumprodBackward0", "CumprodBackward0"}, {"gather", "", "GatherBackward0", "GatherBackward0"},
    {"index_select", "", "IndexSelectBackward0", "IndexSelectBackward0"}, {"take", "", "TakeBackward0", NULL},
    {"masked_select", "", "MaskedSelectBackward0", NULL}, {"diag", "", "DiagBackward0", NULL},
    {"diagflat", "", "DiagBackward0", NULL}, {"diag_embed", "", "DiagEmbedBackward0", NULL},
    {"rot90", "", "Rot90Backward0", NULL}, {"flip", "", "FlipBackward0", NULL}, {"roll", "", "RollBackward0", NULL},
    {"repeat", "", "RepeatBackward0", NULL}, {"tile", "", "RepeatBackward0", NULL},
    {"trace", "", "TraceBackward0", NULL}, {"tril", "", "TrilBackward0", NULL}, {"triu", "", "TriuBackward0", NULL},
    {"index_fill", NULL, "IndexFillBackward0", "IndexFillBackward0"},
    {"masked_fill", NULL, "MaskedFillBackward0", NULL}, {"nansum", "", "NansumBackward0", "NansumBackward0"},
    {"repeat_interleave", "", "IndexSelectBackward0", "IndexSelectBackward0"},
    {"unfold", "", "UnfoldBackward0", NULL}, {"narrow", "", "SliceBackward0", "SliceBackward0"},
    {"select", "", "SelectBackward0", "SelectBackward0"}, {"t", "", "TBackward0", NULL},
    {"T", "", "PermuteBackward0", NULL}, {"permute", "", "PermuteBackward0", NULL},
    {"movedim", "", "PermuteBackward0", NULL}, {"transpose", "", "TransposeBackward0", NULL},
    {"view", "", "ViewBackward0", NULL}, {"unsqueeze", "", "UnsqueezeBackward0", "UnsqueezeBackward0"},
    {"squeeze", "", "SqueezeBackward0", "SqueezeBackward1"}, {"expand", "", "ExpandBackward0", NULL},
    {"cat", "", "CatBackward0", "CatBackward0"}, {"stack", "", "StackBackward0", "StackBackward0"},
    {"chunk", "", "SplitBackward0", "SplitBackward0"}, {"split", "", "SplitBackward0", "SplitBackward0"},
    {"unbind", "", "UnbindBackward0", "UnbindBackward0"}, {"diagonal", "", "DiagonalBackward0", NULL},
    {"contiguous", "", "CloneBackward0", NULL}, {"clone", "", "CloneBackward0", NULL},
    {"dot", "", "DotBackward0", NULL}, {"frac", "", "FracBackward0", NULL},
    {"nan_to_num", "", "NanToNumBackward0", NULL}, {"xlogy", "", "XlogyBackward0", NULL},
    {"logit", "", "LogitBackward0", NULL}, {"sinc", "", "SincBackward0", NULL},
    {"deg2rad", "", "Deg2RadBackward0", NULL}, {"square", "", "PowBackward0", NULL},
    {"clamp_min", "", "ClampMinBackward0", NULL}, {"clamp_max", "", "ClampMaxBackward0", NULL},
    {"scatter", "", "ScatterBackward0", "ScatterBackward0"}, {"scatter", "value", "ScatterBackward1", "ScatterBackward1"},
    {"scatter_add", "", "ScatterAddBackward0", "ScatterAddBackward0"},
    {"index_add", "", "IndexAddBackward0", "IndexAddBackward0"},
    {"index_copy", "", "IndexCopyBackward0", "IndexCopyBackward0"},
    {"repeat_interleave", NULL, "IndexSelectBackward0", "IndexSelectBackward0"},
    {"mT", "", "TransposeBackward0", NULL}, {"swapaxes", "", "TransposeBackward0", NULL},
    {"swapdims", "", "TransposeBackward0", NULL}, {"expand_as", "", "ExpandBackward0", NULL},
    {"broadcast_to", "", "ExpandBackward0", NULL}, {"unflatten", "", "ViewBackward0", "ViewBackward0"},
    {"view_as", "", "ViewBackward0", NULL}, {"ravel", "", "ViewBackward0", NULL},
    {"mm", "", "MmBackward0", NULL}, {"mv", "", "MvBackward0", NULL}, {"hstack", "", "CatBackward0", NULL},
    {"vstack", "", "CatBackward0", NULL}, {"row_stack", "", "CatBackward0", NULL},
    {"kron", "", "UnsafeViewBackward0", NULL}, {"block_diag", "", "BlockDiagBackward0", NULL},
    {"cartesian_prod", "", "StackBackward0", NULL}, {"vdot", "", "VdotBackward0", NULL},
    {"cross", "", "LinalgCrossBackward0", "LinalgCrossBackward0"}, {"dist", "", "DistBackward0", NULL},
    {"vander", "", "FlipBackward0", NULL}, {"cumulative_trapezoid", NULL, "CumsumBackward0", "CumsumBackward0"},
    {"sgn", "", "SgnBackward0", NULL}, {"take_along_dim", "", "GatherBackward0", "GatherBackward0"},
    {"tensor_split", NULL, "SliceBackward0", "SliceBackward0"}, {"meshgrid", NULL, "ExpandBackward0", NULL},
    {"msort", "", "SortBackward0", NULL}, {"median", "", "MedianBackward0", NULL},
    {"nanmedian", "", "NanmedianBackward0", NULL},
};

/* Whether v is one of the call's tensor arguments (a row that gives back its input, such as
 * contiguous() of a contiguous tensor, names nothing). */
static bool is_argument(const TensorSig *sig, const TensorArg *a, const FcTensor *v)
{
    for (int k = 0; k < sig->nparams; k++)
        if (sig->params[k].type == TT_TENSOR && a[k].t == v)
            return true;
    return false;
}

/* Names the grad_fn of a row's new results (a tensor, or each tensor of a tuple or list). */
static void name_results(const TensorSig *sig, TensorArg *a, Value out)
{
    const TensorOpRow *r = sig->row;
    const char *name = NULL;
    TensorArg *dim = tensor_arg(sig, a, "dim");
    bool with_dim = dim && !dim->none && dim->v.tag != V_UNDEF;
    if (strcmp(r->name, "clamp") == 0 || strcmp(r->name, "clip") == 0) {
        /* clamp(Scalar min, Scalar max): ClampBackward1; a tensor bound: ClampBackward0 */
        bool tensors = (!a[1].none && !a[1].t->wrapped_number) || (!a[2].none && !a[2].t->wrapped_number);
        name = tensors ? "ClampBackward0" : "ClampBackward1";
    } else if (strcmp(r->name, "norm") == 0 && (a[1].v.tag == V_STR || a[1].v.tag == V_UNDEF)) {
        /* nuc: a sum of singular values; fro over two dims: sqrt(sum(x * x)) */
        const TensorArg *dim = tensor_arg(sig, a, "dim");
        bool nuc = a[1].v.tag == V_STR && strcmp(as_str(a[1].v)->data, "nuc") == 0;
        name = nuc ? "SumBackward1" : dim && !dim->none && dim->n == 2 ? "SqrtBackward0" : "NormBackward1";
    } else if (strcmp(r->name, "pow") == 0 && !strcmp(r->overload, "")) {
        name = a[1].t->wrapped_number ? "PowBackward0" : "PowBackward1";
    } else if (strcmp(r->name, "matmul") == 0) {
        /* the products matmul folds to (others: as the IR names them) */
        int m = a[0].t->ndim, k = a[1].t->ndim;
        name = m == 2 && k == 2 ? "MmBackward0" : m == 1 && k == 1 ? "DotBackward0" : m == 2 && k == 1 ? "MvBackward0" : NULL;
        if (!name) return;
    } else if ((strcmp(r->name, "reshape") == 0 || strcmp(r->name, "reshape_as") == 0 ||
                strcmp(r->name, "flatten") == 0) && out.tag == V_TENSOR) {
        /* _reshape_alias where it is a view (of a stored tensor, or of a lazy one, which PyTorch
         * would hold contiguous), else a copy viewed (_unsafe_view) */
        const FcTensor *x = a[0].t, *y = as_tensor(out);
        name = !x->storage || (y->storage == x->storage) ? "ReshapeAliasBackward0" : "UnsafeViewBackward0";
    }
    for (size_t i = 0; !name && i < sizeof grad_names / sizeof *grad_names; i++) {
        const struct GradName *g = &grad_names[i];
        if (strcmp(g->row, r->name) == 0 && (!g->overload || strcmp(g->overload, r->overload) == 0))
            name = with_dim && g->name1 ? g->name1 : g->name0;
    }
    if (!name) return;
    if (out.tag == V_TENSOR) {
        if (!is_argument(sig, a, as_tensor(out))) fc_grad_name(as_tensor(out), name);
        return;
    }
    const Value *items = NULL;
    size_t n = 0;
    if (out.tag == V_TUPLE) items = ((TupleObj *)out.o)->items, n = ((TupleObj *)out.o)->n;
    else if (out.tag == V_LIST) items = ((ListObj *)out.o)->items, n = ((ListObj *)out.o)->n;
    for (size_t i = 0; i < n; i++)
        if (items[i].tag == V_TENSOR && !is_argument(sig, a, as_tensor(items[i]))) fc_grad_name(as_tensor(items[i]), name);
}

static bool run_row(Interp *I, const TensorSig *sig, TensorArg *a, Value *out);

bool tensor_run_row(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    if (!run_row(I, sig, a, out)) return false;
    if (sig->row->name[strlen(sig->row->name) - 1] != '_') name_results(sig, a, *out);
    return true;
}

static bool run_row(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    const TensorOpRow *r = sig->row;
    FcTensor *res = NULL, *x = NULL, *y = NULL;
    FcError e;
    FcStatus st;
    if (!torch_kernel_accepts(I, r, a[0].t)) return false;
    switch (r->lower) {
    case TL_UNARY:
        st = fc_unary(I->fc, r->op, a[0].t, &res, &e);
        break;
    case TL_BINARY:
        if (!tensor_check_divisor(I, r->op, a[0].t, a[1].t)) return false;
        st = fc_binary(I->fc, r->op, a[0].t, a[1].t, &res, &e);
        break;
    case TL_LOGICAL:
        st = fc_to(I->fc, a[0].t, FC_BOOL, a[0].t->device, &x, &e);
        if (st == FC_OK && r->op == FC_OP_NOT) {
            st = fc_unary(I->fc, r->op, x, &res, &e);
        } else if (st == FC_OK) {
            st = fc_to(I->fc, a[1].t, FC_BOOL, a[1].t->device, &y, &e);
            if (st == FC_OK) st = fc_binary(I->fc, r->op, x, y, &res, &e);
        }
        fc_tensor_release(x);
        fc_tensor_release(y);
        break;
    case TL_REDUCE:
        return run_reduce(I, sig, a, out);
    case TL_CAST:
        st = fc_to(I->fc, a[0].t, r->dtype, a[0].t->device, &res, &e);
        break;
    case TL_IMPL:
    default: {
        if (!r->impl(I, sig, a, out)) return false;
        /* requires_grad=True on a creation function (or method: new_zeros): the result is a leaf. */
        TensorArg *rg = sig->requires_grad >= 0 ? &a[sig->requires_grad] : NULL;
        if (rg && !rg->none && rg->b && out->tag == V_TENSOR) {
            st = fc_set_requires_grad(I->fc, as_tensor(*out), true, &e);
            if (st) {
                val_decref(I, *out);
                *out = v_none();
                return tensor_check(I, st, &e);
            }
        }
        return true;
    }
    }
    return tensor_check(I, st, &e) && tensor_value_steal(I, res, out);
}

/* "(Tensor self, int dim, bool keepdim=False)" for a message; a method's self is left out. */
static void sig_text(const TensorSig *sig, bool method, Buf *b)
{
    buf_puts(b, "(");
    bool first = true, kwmark = false;
    for (int k = method ? 1 : 0; k < sig->nparams; k++) {
        const TensorParam *p = &sig->params[k];
        if (!first) buf_puts(b, ", ");
        if (p->kwonly && !p->varargs && !p->varkw && !kwmark) {
            buf_puts(b, "*, ");
            kwmark = true;
        }
        buf_put(b, p->text, (size_t)p->textlen);
        first = false;
    }
    buf_puts(b, ")");
}

/* Runs the call on the first of rows [row, group end) of the wanted variant that binds. */
static bool dispatch(Interp *I, int row, unsigned variant, const Call *c, Value *out)
{
    int end = I->tsigs[row].group_end, nc = 0;
    int cand[16];
    for (int r = row; r < end && nc < 16; r++)
        if (tensor_ops[r].variants & variant) cand[nc++] = r;
    TensorArg a[TENSOR_MAX_PARAMS];
    char why[320], tmp[320];    /* not cleared: every call would pay for it */
    why[0] = 0;
    bool method = c->self.tag != V_UNDEF;
    /* With overloads, exact types decide first: max(t, 1) is max.dim and max(t, tensor(1)) is
     * max.other (a 0-dim tensor is also an int, a Python number also a Tensor, but only when
     * no overload takes the argument as it is). */
    for (int pass = nc > 1 ? 0 : 1; pass < 2; pass++) {
        for (int j = 0; j < nc; j++) {
            const TensorSig *sig = &I->tsigs[cand[j]];
            BindStatus st = bind(I, sig, c, pass == 1, a, tmp, sizeof tmp);
            if (st == BIND_ERROR) return false;
            if (st == BIND_MISMATCH) {
                if (!why[0]) memcpy(why, tmp, sizeof why);
                continue;
            }
            bool ok = dims_involved(sig, a) ? dims_run(I, sig, a, out) : tensor_run_row(I, sig, a, out);
            release_args(sig, a);
            return ok;
        }
    }
    const char *name = tensor_ops[row].name;
    if (nc == 1) return err_raise(I, TDL_ERR_TYPE, "%s", why);
    /* A keyword that no overload takes is the clearest thing to say. */
    for (int j = 0; j < c->nkw; j++) {
        bool known = false;
        for (int q = 0; q < nc && !known; q++) {
            const TensorSig *sig = &I->tsigs[cand[q]];
            known = sig->varkw >= 0;
            for (int k = method ? 1 : 0; k < sig->nparams && !known; k++)
                known = strcmp(c->kwnames[j], param_shown(sig, k, method)) == 0;
        }
        if (!known)
            return err_raise(I, TDL_ERR_TYPE, "%s() got an unexpected keyword argument '%s'", name, c->kwnames[j]);
    }
    Buf b = {0};
    buf_printf(&b, "%s() received an invalid combination of arguments - got (", name);
    for (int j = 0; j < c->nargs + c->nkw; j++) {
        if (j) buf_puts(&b, ", ");
        if (j >= c->nargs) buf_printf(&b, "%s=", c->kwnames[j - c->nargs]);
        buf_puts(&b, val_type_name(c->args[j]));
    }
    buf_puts(&b, "), but expected one of:");
    for (int j = 0; j < nc; j++) {
        buf_puts(&b, "\n * ");
        sig_text(&I->tsigs[cand[j]], method, &b);
    }
    bool ok = b.nomem ? err_nomem(I) : err_raise(I, TDL_ERR_TYPE, "%s", b.p);
    buf_free(&b);
    return ok;
}

/* The row behind a builtin def of the table. */
static int row_of(const BuiltinDef *def)
{
    return (int)((const TensorOpRow *)((const char *)def - offsetof(TensorOpRow, def)) - tensor_ops);
}

bool tensor_dispatch(Interp *I, int row, Value self, const Value *args, int nargs, const char *const *kwnames,
                     int nkw, Value *out)
{
    Call c = {self, args, nargs, kwnames, nkw};
    return dispatch(I, row, self.tag == V_UNDEF ? TV_FUNCTION : TV_METHOD, &c, out);
}

/* The table's names, hashed (FNV-1a) into open-addressed slots that hold each name's first row
 * plus one (0: empty); a name's overloads are consecutive rows (interp_tensor_init checks). Built
 * once per process: operators and methods look their rows up by name at every call. */
static int16_t row_slot[ROW_SLOTS];
static pthread_once_t row_once = PTHREAD_ONCE_INIT;

static uint32_t name_hash(const char *s) { return (uint32_t)fnv1a_str(FNV1A_SEED, s); }

static void index_rows(void)
{
    for (int r = 0; r < tensor_nops; r++) {
        if (r > 0 && strcmp(tensor_ops[r].name, tensor_ops[r - 1].name) == 0) continue;
        uint32_t h = name_hash(tensor_ops[r].name) & (ROW_SLOTS - 1);
        while (row_slot[h]) h = (h + 1) & (ROW_SLOTS - 1);
        row_slot[h] = (int16_t)(r + 1);
    }
}

static const BuiltinDef *find_row(const char *name, unsigned variant)
{
    pthread_once(&row_once, index_rows);
    for (uint32_t h = name_hash(name) & (ROW_SLOTS - 1); row_slot[h]; h = (h + 1) & (ROW_SLOTS - 1)) {
        int r = row_slot[h] - 1;
        if (strcmp(tensor_ops[r].name, name) != 0) continue;
        /* the overloads: equal names, most often the very same string */
        const char *first = tensor_ops[r].name;
        for (; r < tensor_nops && (tensor_ops[r].name == first || strcmp(tensor_ops[r].name, first) == 0); r++)
            if (tensor_ops[r].variants & variant) return &tensor_ops[r].def;
        return NULL;
    }
    return NULL;
}

const BuiltinDef *tensor_method(const char *name) { return find_row(name, TV_METHOD); }

int tensor_row(const char *name, unsigned variant)
{
    const BuiltinDef *def = find_row(name, variant);
    return def ? row_of(def) : -1;
}
const BuiltinDef *tensor_function(const char *name) { return find_row(name, TV_FUNCTION); }

/* Calls the function (or, with self, the method) `name` on positional args, as tdl code would. */
static bool tensor_call_name(Interp *I, const char *name, Value self, const Value *args, int nargs, Value *out)
{
    const BuiltinDef *def = find_row(name, self.tag == V_UNDEF ? TV_FUNCTION : TV_METHOD);
    if (!def) return err_raise(I, TDL_ERR_RUNTIME, "internal error: no tensor operator '%s'", name);
    return tensor_dispatch(I, row_of(def), self, args, nargs, NULL, 0, out);
}

/* ---- what the host operations do with tensors --------------------------------------------- */

bool tensor_binop(Interp *I, LangOp op, Value a, Value b, Value *out)
{
    Value other = is_tensorlike(a) ? b : a;
    const char *name = (unsigned)op < OP__COUNT ? binop_names[op] : NULL;
    if (!name || (!is_tensorlike(other) && !is_number(other))) {
        if (op == OP_EQ || op == OP_NE) {   /* Python's fallback: identity (a tensor is not a str) */
            *out = v_bool(op == OP_NE);
            return true;
        }
        if (op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE)
            return err_raise(I, TDL_ERR_TYPE, "'%s' not supported between instances of '%s' and '%s'",
                             lang_op_text[op], val_type_name(a), val_type_name(b));
        return err_raise(I, TDL_ERR_TYPE, "unsupported operand type(s) for %s: '%s' and '%s'",
                         op == OP_POW ? "** or pow()" : lang_op_text[op], val_type_name(a), val_type_name(b));
    }
    if (op == OP_DIV && is_number(a) && b.tag == V_TENSOR) {
        /* number / t is t.reciprocal() * number in PyTorch (Tensor.__rtruediv__): two roundings,
         * which differ from one division in the last bit of about a third of float32 results */
        Value r;
        if (!tensor_call_name(I, "reciprocal", b, NULL, 0, &r)) return false;
        bool ok = tensor_binop(I, OP_MUL, r, a, out);
        val_decref(I, r);
        return ok;
    }
    Value args[2] = {a, b};
    if (I->binop_row[op] < 0) return err_raise(I, TDL_ERR_RUNTIME, "internal error: no tensor operator '%s'", name);
    return tensor_dispatch(I, I->binop_row[op], v_undef(), args, 2, NULL, 0, out);
}

bool tensor_inplace_binop(Interp *I, LangOp op, Value a, Value b, Value *out)
{
    /* Tensor has no __imatmul__ (Python falls back to a = a @ b). A tensor with first-class dims
     * writes through them with the in-place method (add_ ...), as functorch.dim's __iadd__ does;
     * the bitwise operators, which have none here, give a new tensor. */
    static const char *const methods[OP__COUNT] = {
        [OP_ADD] = "add_", [OP_SUB] = "sub_", [OP_MUL] = "mul_", [OP_DIV] = "div_",
        [OP_FLOORDIV] = "floor_divide_", [OP_MOD] = "remainder_", [OP_POW] = "pow_",
    };
    if (a.tag == V_TENSOR && as_tensor(a)->levels && (unsigned)op < OP__COUNT && methods[op])
        return tensor_call_name(I, methods[op], a, &b, 1, out);
    if (a.tag != V_TENSOR || as_tensor(a)->levels || op == OP_MATMUL) return tensor_binop(I, op, a, b, out);
    if (fc_is_grad_enabled() && fc_requires_grad(as_tensor(a)) && fc_is_leaf(as_tensor(a)))
        return err_raise(I, TDL_ERR_RUNTIME, "a leaf Variable that requires grad is being used in an in-place operation.");
    Value r;
    if (!tensor_binop(I, op, a, b, &r)) return false;
    FcTensor *self = as_tensor(a), *rt = as_tensor(r), *res = NULL;
    /* pow_(Scalar) checks the dtype itself, with its own message (pow_(Tensor) does not). */
    if (op == OP_POW && is_number(b) && rt->dtype != self->dtype) {
        FcDType want = rt->dtype;
        val_decref(I, r);
        return err_raise(I, TDL_ERR_RUNTIME, "Found dtype %s but expected %s", fc_dtype_torch_name(self->dtype),
                         fc_dtype_torch_name(want));
    }
    FcError e;
    FcStatus st = fc_inplace_result(I->fc, self, rt, &res, &e);
    val_decref(I, r);
    /* written into self, which is the result: other names of it see the change */
    bool ok = tensor_check(I, st, &e) && tensor_write_into(I, self, res);
    fc_tensor_release(res);
    if (!ok) return false;
    val_incref(a);
    *out = a;
    return true;
}

bool tensor_unary(Interp *I, LangOp op, Value a, Value *out)
{
    if (op == OP_POS) {         /* +t is t itself, as torch.positive */
        val_incref(a);
        *out = a;
        return true;
    }
    /* torch's operator checks this before its kernel does (which would be a RuntimeError) */
    if (op == OP_INVERT && a.tag == V_TENSOR && fc_dtype_is_float(as_tensor(a)->dtype))
        return err_raise(I, TDL_ERR_TYPE, "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
    return tensor_call_name(I, op == OP_NEG ? "neg" : "bitwise_not", v_undef(), &a, 1, out);
}

bool tensor_truthy(Interp *I, Value v, bool *out)
{
    if (v.tag == V_DIM || as_tensor(v)->levels) {
        FcLevels lv;
        char buf[512];
        FcTensor *t;
        if (!dims_tensor_of(I, v, &t)) return false;
        fc_tensor_levels(t, &lv);
        fc_tensor_release(t);
        return err_raise(I, TDL_ERR_RUNTIME,
                         "a tensor with first-class dims %s has a value per index, and host control flow needs one: "
                         "use where(cond, a, b) to choose per element, or reduce over the dims first",
                         fc_levels_str(buf, sizeof buf, &lv));
    }
    FcTensor *t = as_tensor(v);
    int64_t n = fc_tensor_numel(t);
    if (n != 1)
        return err_raise(I, TDL_ERR_RUNTIME,
                         "Boolean value of Tensor with %s value%s is ambiguous (use where(cond, a, b) to choose per "
                         "element, or any() / all())",
                         n == 0 ? "no" : "more than one", n == 0 ? "s" : "");
    FcScalar s;
    FcError e;
    if (!tensor_check(I, fc_item(I->fc, t, &s, &e), &e)) return false;
    *out = fc_dtype_is_float(t->dtype) ? s.f != 0.0 : s.i != 0;
    return true;
}

bool tensor_len(Interp *I, Value v, int64_t *out)
{
    FcTensor *t = as_tensor(v);
    if (fc_tensor_npos(t) == 0) return err_raise(I, TDL_ERR_TYPE, "len() of a 0-d tensor");
    *out = t->shape[fc_level_of_pos(t, 0)];
    return true;
}

/* ---- indexing ---- */

/* PyTorch's treatSequenceAsTuple: a list used as an index is a tuple of indices when it is short
 * and holds a tensor, a sequence, a slice, ... or None (NumPy's old rule); else one index. */
static bool list_is_tuple(Value idx)
{
    ListObj *l = as_list(idx);
    if (l->n >= 32) return false;
    for (size_t k = 0; k < l->n; k++) {
        ValueTag t = l->items[k].tag;
        if (t == V_TENSOR || t == V_LIST || t == V_TUPLE || t == V_SLICE || t == V_ELLIPSIS || t == V_NONE)
            return true;
    }
    return false;
}

bool tensor_index(Interp *I, Value v, int64_t *out)
{
    FcTensor *t = as_tensor(v);
    FcScalar s;
    FcError e;
    if (t->levels || !(fc_dtype_is_int(t->dtype) || t->dtype == FC_BOOL) || fc_tensor_numel(t) != 1)
        return err_raise(I, TDL_ERR_TYPE, "only integer tensors of a single element can be converted to an index");
    if (!tensor_check(I, fc_item(I->fc, t, &s, &e), &e)) return false;
    *out = s.i;
    return true;
}

static bool slice_part(Interp *I, Value v, bool *has, int64_t *out)
{
    *has = v.tag != V_NONE;
    if (!*has) return true;
    return slice_index(I, v, out);
}

/* One element of an index as fcdim's FcIndex; a tensor made from a list is kept in *owned. */
bool tensor_index_item(Interp *I, Value v, FcIndex *x, FcTensor **owned)
{
    memset(x, 0, sizeof *x);
    switch (v.tag) {
    case V_INT: x->kind = FC_IX_INT; x->i = v.i; return true;
    case V_BOOL: x->kind = FC_IX_BOOL; x->i = v.b; return true;
    case V_NONE: x->kind = FC_IX_NONE; return true;
    case V_ELLIPSIS: x->kind = FC_IX_ELLIPSIS; return true;
    case V_TENSOR: x->kind = FC_IX_TENSOR; x->t = as_tensor(v); return true;
    case V_SLICE: {
        SliceObj *s = as_slice(v);
        bool has_step;
        x->kind = FC_IX_SLICE;
        x->step = 1;
        return slice_part(I, s->start, &x->has_start, &x->start) && slice_part(I, s->stop, &x->has_stop, &x->stop) &&
               slice_part(I, s->step, &has_step, &x->step);
    }
    case V_LIST: case V_TUPLE: {
        /* A sequence is an index tensor: int64 unless it holds bools (indexing_tensor_from_data). */
        FcTensor *t = NULL, *c = NULL;
        FcError e;
        if (!tensor_from_data(I, v, NULL, I->device, &t)) return false;
        if (t->dtype != FC_BOOL && t->dtype != FC_INT64) {
            FcStatus st = fc_cast(I->fc, t, FC_INT64, &c, &e);
            fc_tensor_release(t);
            if (!tensor_check(I, st, &e)) return false;
            t = c;
        }
        *owned = t;
        x->kind = FC_IX_TENSOR;
        x->t = t;
        return true;
    }
    default:
        return err_raise(I, TDL_ERR_INDEX,
                         "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                         "indices (got %s)", val_type_name(v));
    }
}

typedef struct Index {
    int n;
    FcIndex *ix;
    FcTensor **owned;
} Index;

static void index_free(Index *x)
{
    for (int k = 0; k < x->n; k++)
        fc_tensor_release(x->owned[k]);
    mem_free(x->ix);
    mem_free(x->owned);
}

/* The index of t[idx] (a tuple is several; a list may be, see list_is_tuple). */
static bool index_of(Interp *I, Value idx, Index *x)
{
    const Value *items = &idx;
    size_t n = 1;
    if (idx.tag == V_TUPLE) {
        items = as_tuple(idx)->items;
        n = as_tuple(idx)->n;
    } else if (idx.tag == V_LIST && list_is_tuple(idx)) {
        items = as_list(idx)->items;
        n = as_list(idx)->n;
    }
    x->n = 0;
    x->ix = mem_calloc(n ? n : 1, sizeof *x->ix);
    x->owned = mem_calloc(n ? n : 1, sizeof *x->owned);
    if (!x->ix || !x->owned) {
        index_free(x);
        return err_nomem(I);
    }
    for (; x->n < (int)n; x->n++)
        if (!tensor_index_item(I, items[x->n], &x->ix[x->n], &x->owned[x->n])) {
            index_free(x);
            return false;
        }
    return true;
}

/* PyTorch 1.13's deprecation warning (its text) for a uint8 tensor indexing as a mask; fill: the
 * write of a 0-dim value through one mask, which torch runs as masked_fill_. */
static bool warn_uint8_index(Interp *I, const Index *x, bool fill)
{
    for (int k = 0; k < x->n; k++)
        if (x->ix[k].kind == FC_IX_TENSOR && x->ix[k].t->dtype == FC_UINT8)
            return interp_warn(I, TDL_ERR_USER_WARNING, fill && x->n == 1
                ? "masked_fill_ received a mask with dtype torch.uint8, this behavior is now deprecated,please use a "
                  "mask with dtype torch.bool instead. (Triggered internally at  "
                  "./aten/src/ATen/native/TensorAdvancedIndexing.cpp:1646.)"
                : "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead. "
                  "(Triggered internally at  ./aten/src/ATen/native/IndexingUtils.h:27.)");
    return true;
}

/* PyTorch's grad_fn name for t[x] when every index is basic, else NULL: its applySlicing takes
 * the indices in turn (an int selects, a slice slices, whole or not, None unsqueezes); the last
 * one applied names the result, an alias when none was (t[...]). */
static const char *basic_index_name(const Index *x)
{
    const char *name = "AliasBackward0";
    for (int k = 0; k < x->n; k++)
        switch (x->ix[k].kind) {
        case FC_IX_INT: name = "SelectBackward0"; break;
        case FC_IX_SLICE: name = "SliceBackward0"; break;
        case FC_IX_NONE: name = "UnsqueezeBackward0"; break;
        case FC_IX_ELLIPSIS: break;
        default: return NULL;
        }
    return name;
}

bool tensor_getitem(Interp *I, Value v, Value idx, Value *out)
{
    Index x;
    FcTensor *r = NULL;
    FcError e;
    bool done;
    if (!dims_getitem(I, v, idx, out, &done)) return false;
    if (done) return true;
    if (!index_of(I, idx, &x)) return false;
    if (!warn_uint8_index(I, &x, false)) {
        index_free(&x);
        return false;
    }
    const char *name = basic_index_name(&x);
    FcStatus st = fc_index(I->fc, as_tensor(v), x.n, x.ix, &r, &e);
    index_free(&x);
    if (st == FC_OK && name) fc_grad_name(r, name);
    return tensor_check(I, st, &e) && tensor_value_steal(I, r, out);
}

/* Whether t[x] = a 0-dim value is torch's copy_to fill_(value), which takes the value's item as a
 * number and checks its range: no index is advanced (a 0-dim integer tensor selects, as an int)
 * and the view written is not 0-dim itself (that one is a copy_). */
static bool setitem_fills(const FcTensor *t, const Index *x)
{
    int ndim = t->ndim;
    for (int k = 0; k < x->n; k++) {
        const FcIndex *ix = &x->ix[k];
        if (ix->kind == FC_IX_INT || (ix->kind == FC_IX_TENSOR && ix->t->ndim == 0 &&
                                      !fc_dtype_is_float(ix->t->dtype) && ix->t->dtype != FC_BOOL &&
                                      ix->t->dtype != FC_UINT8))
            ndim--;
        else if (ix->kind == FC_IX_NONE)
            ndim++;
        else if (ix->kind == FC_IX_TENSOR || ix->kind == FC_IX_BOOL)
            return false;
    }
    return ndim != 0;
}

/* Whether the 0-dim CPU value of a setitem that fills (setitem_fills) fits t's dtype, its error
 * raised if not; torch indexes first, so an IndexError of the (basic) index comes before the
 * value's range check. */
static bool setitem_fill_fits(Interp *I, FcTensor *t, const Index *x, FcTensor *val)
{
    FcTensor *view;
    FcError e;
    if (!tensor_check(I, fc_index(I->fc, t, x->n, x->ix, &view, &e), &e)) return false;
    fc_tensor_release(view);
    return tensor_item_fits(I, val, t->dtype);
}

bool tensor_setitem(Interp *I, Value v, Value idx, Value value)
{
    FcTensor *t = as_tensor(v), *val = NULL;
    FcError e;
    bool dims = t->levels || (value.tag == V_TENSOR && as_tensor(value)->levels) || value.tag == V_DIM;
    for (int k = 0; !dims && k < (idx.tag == V_TUPLE ? (int)as_tuple(idx)->n : 1); k++) {
        Value x = idx.tag == V_TUPLE ? as_tuple(idx)->items[k] : idx;
        dims = x.tag == V_DIM || x.tag == V_DIMLIST || dims_in_arg(x) || (x.tag == V_TENSOR && as_tensor(x)->levels);
    }
    if (dims && value.tag == V_DIM) {
        if (!dims_tensor_of(I, value, &val)) return false;
        bool ok = dims_setitem(I, v, idx, val);
        fc_tensor_release(val);
        return ok;
    }
    if (value.tag == V_TENSOR) {
        val = fc_tensor_retain(as_tensor(value));
    } else if (is_number(value)) {
        if (!tensor_from_number(I, value, &val)) return false;
    } else {
        return err_raise(I, TDL_ERR_TYPE, "can't assign a %s to a torch.%sTensor", val_type_name(value),
                         fc_dtype_torch_name(t->dtype));
    }
    if (dims) {
        bool ok = dims_setitem(I, v, idx, val);
        fc_tensor_release(val);
        return ok;
    }
    /* Without dims torch makes a number a tensor of t's dtype (scalar_tensor's fill_), which checks
     * its range; functorch.dim's setitem casts it instead. */
    if (is_number(value)) {
        FcDType sdt;
        FcScalar s = number_scalar(value, &sdt);
        if (!tensor_scalar_fits(I, s, sdt, t->dtype, true)) {
            fc_tensor_release(val);
            return false;
        }
    }
    /* A lone bool is not an advanced index here (torch's setitem): t[False] = v does nothing and
     * t[True] = v is t[None] = v, a copy that converts the dtype. Inside a tuple it is a mask. */
    if (idx.tag == V_BOOL && !idx.b) {
        fc_tensor_release(val);
        return true;
    }
    Index x;
    if (!index_of(I, idx.tag == V_BOOL ? v_none() : idx, &x)) {
        fc_tensor_release(val);
        return false;
    }
    bool ok = warn_uint8_index(I, &x, val->ndim == 0);
    /* torch takes a CPU value's item() when it fills (copy_to's fill_, index_put_'s masked_fill_),
     * which checks its range */
    if (ok && !is_number(value) && val->device.type == FC_DEV_CPU &&
        ((val->ndim == 0 && setitem_fills(t, &x)) || fc_index_put_fills(x.n, x.ix, val)))
        ok = setitem_fill_fits(I, t, &x, val);
    if (ok) {
        FcStatus st = fc_index_put(I->fc, t, x.n, x.ix, val, false, &e);
        ok = tensor_check(I, st, &e);
    }
    index_free(&x);
    fc_tensor_release(val);
    return ok;
}

bool tensor_contains(Interp *I, Value v, Value item, bool *out)
{
    if (item.tag != V_TENSOR && !is_number(item))
        return err_raise(I, TDL_ERR_RUNTIME, "Tensor.__contains__ only supports Tensor or scalar, but you passed in a %s",
                         val_type_name(item));
    Value args[2] = {v, item}, eq, any;
    if (!tensor_call_name(I, "eq", v_undef(), args, 2, &eq)) return false;
    bool ok = tensor_call_name(I, "any", v_undef(), &eq, 1, &any);
    val_decref(I, eq);
    if (!ok) return false;
    ok = tensor_truthy(I, any, out);
    val_decref(I, any);
    return ok;
}

bool tensor_getattr(Interp *I, Value obj, const char *name, Value *out, bool *found)
{
    *found = false;
    if (obj.tag == V_DEVICE) {
        FcDevice d = device_of(obj);
        if (strcmp(name, "type") == 0) {
            *found = true;
            return str_from_cstr(I, d.type == FC_DEV_CPU ? "cpu" : "cuda", out);
        }
        if (strcmp(name, "index") == 0) {
            *found = true;
            *out = d.type == FC_DEV_CPU ? v_none() : v_int(d.index);
        }
        return true;
    }
    const BuiltinDef *def = find_row(name, TV_ATTR);
    if (!def) return true;
    *found = true;
    Call c = {obj, NULL, 0, NULL, 0};
    return dispatch(I, row_of(def), TV_ATTR, &c, out);
}

bool tensor_to_number(Interp *I, Value v, TypeId want, Value *out)
{
    FcTensor *t = as_tensor(v);
    FcScalar s;
    FcError e;
    if (fc_tensor_numel(t) != 1)
        return err_raise(I, TDL_ERR_VALUE, "only one element tensors can be converted to Python scalars");
    if (!tensor_check(I, fc_item(I->fc, t, &s, &e), &e)) return false;
    bool isf = fc_dtype_is_float(t->dtype);
    if (want == T_FLOAT) {
        *out = v_float(isf ? s.f : (double)s.i);
        return true;
    }
    if (!isf) {
        *out = v_int(s.i);
        return true;
    }
    if (isnan(s.f)) return err_raise(I, TDL_ERR_VALUE, "cannot convert float NaN to integer");
    if (isinf(s.f)) return err_raise(I, TDL_ERR_OVERFLOW, "cannot convert float infinity to integer");
    double tr = trunc(s.f);
    if (!(tr >= -9223372036854775808.0 && tr < 9223372036854775808.0))
        return err_raise(I, TDL_ERR_OVERFLOW, "int too large to convert (tdl ints are 64-bit)");
    *out = v_int((int64_t)tr);
    return true;
}

bool tensor_device_new(Interp *I, const Value *args, int nargs, int nkw, Value *out)
{
    FcDevice d;
    if (nkw) return err_raise(I, TDL_ERR_TYPE, "device() takes no keyword arguments");
    if (nargs == 1 && args[0].tag == V_DEVICE) {
        *out = args[0];
        return true;
    }
    if (nargs < 1 || nargs > 2 || args[0].tag != V_STR || (nargs == 2 && args[1].tag != V_INT))
        return err_raise(I, TDL_ERR_TYPE, "device() takes a name (\"cpu\", \"cuda:1\") or a type and an index");
    if (!parse_device(I, as_str(args[0])->data, &d)) return false;
    if (nargs == 2) {
        if (d.type == FC_DEV_CPU && args[1].i != 0)
            return err_raise(I, TDL_ERR_RUNTIME, "CPU device index must be -1 or zero, got %lld", (long long)args[1].i);
        if (args[1].i < 0 || args[1].i > INT32_MAX)
            return err_raise(I, TDL_ERR_RUNTIME, "Device index must not be negative");
        d.index = (int)args[1].i;
    }
    *out = v_device(d);
    return true;
}

bool tensor_repr(Interp *I, Value v, Buf *b)
{
    dims_forget_product(v);
    FcTensor *t = as_tensor(v), *host = fc_tensor_retain(t);
    FcError e;
    FcView view;
    char *text = NULL, dev[24], gbuf[96], fnbuf[64];
    const char *grad = NULL;
    FcStatus st = FC_OK;
    /* PyTorch's last suffix: a leaf that requires grad, or the function that made a result. */
    if (fc_requires_grad(t)) {
        const char *fn = fc_grad_fn_name(t, fnbuf, sizeof fnbuf);
        if (fn) snprintf(gbuf, sizeof gbuf, "grad_fn=<%s>", fn);
        else snprintf(gbuf, sizeof gbuf, "requires_grad=True");
        grad = gbuf;
    }
    if (t->device.type != FC_DEV_CPU) {
        fc_tensor_release(host);
        st = fc_to(I->fc, t, t->dtype, fc_cpu(), &host, &e);
    }
    if (st == FC_OK) st = fc_host_view(I->fc, host, &view, &e);
    if (st == FC_OK)
        st = fc_format_tensor_grad(&view, t->device.type == FC_DEV_CPU ? NULL : fc_device_name(t->device, dev), grad,
                                   &text, &e);
    fc_tensor_release(host);
    if (st != FC_OK) return tensor_fail(I, st, &e);
    buf_puts(b, text);
    mem_free(text);
    if (t->levels) dims_repr_suffix(I, t, b);
    return b->nomem ? err_nomem(I) : true;
}
