/* embed.c — the value side of tdl.h: tdl_value handles, globals, calls into tdl, C functions
 * registered as builtins (with their signatures checked on each call), tensors made from host
 * memory (copied or borrowed), and DLPack import and export.
 *
 * A handle is a small heap block holding one reference to a Value, linked into its interpreter's
 * list so that tdl_close can drop what the host still holds (which runs the release callbacks of
 * borrowed buffers at close at the latest). The argument handles of a C builtin live on the C
 * stack for the call and are flagged `arg`. Borrowed host buffers and imported DLPack tensors
 * become FcStorages with a release callback; a tensor viewing one is made by fc_as_strided from
 * a stack carrier tensor, so fcdim needs nothing new. Exports keep a reference to the storage
 * and follow the locking rules described at struct tdl_interp (interp.h).
 *
 * Depends on interp.h (and so fcdim.h) and dlpack/dlpack.h; nothing else.
 */
#include "interp.h"
#include "mem.h"

#include <dlpack/dlpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tdl_value {
    uint32_t magic;             /* VALUE_MAGIC while the handle is valid */
    bool arg;                   /* an argument handle of a C builtin call (on the C stack) */
    bool dead;                  /* its interpreter was closed: the value is gone */
    tdl_interp *T;
    Value v;                    /* a reference (none when dead; borrowed when arg) */
    tdl_value *prev, *next;     /* T->handles */
};

#define VALUE_MAGIC 0x7464c176u

#define ENTER(T) API_MEM_SCOPE(T); do { if (!api_enter(T)) return TDL_MISUSE; } while (0)

static tdl_status status(bool ok) { return ok ? TDL_OK : TDL_ERROR; }

/* ---- handles ------------------------------------------------------------------------------ */

/* A new handle holding v (a reference taken over, released on failure too). */
static bool new_handle(tdl_interp *T, Value v, tdl_value **out)
{
    tdl_value *h = mem_malloc(sizeof *h);
    if (!h) {
        val_decref(&T->I, v);
        *out = NULL;
        return err_nomem(&T->I);
    }
    *h = (tdl_value){.magic = VALUE_MAGIC, .T = T, .v = v, .next = T->handles};
    if (T->handles) T->handles->prev = h;
    T->handles = h;
    T->nhandles++;
    *out = h;
    return true;
}

/* The Value of handle h for a call of fn on T, or false with a ValueError. */
static bool value_of(tdl_interp *T, const char *fn, const char *what, const tdl_value *h, Value *out)
{
    Interp *I = &T->I;
    if (!h) return err_raise(I, TDL_ERR_VALUE, "%s: %s is NULL", fn, what);
    if (h->magic != VALUE_MAGIC) return err_raise(I, TDL_ERR_VALUE, "%s: %s is not a live tdl_value", fn, what);
    if (h->dead) return err_raise(I, TDL_ERR_VALUE, "%s: %s belongs to an interpreter that was closed", fn, what);
    if (h->T != T) return err_raise(I, TDL_ERR_VALUE, "%s: %s belongs to another interpreter", fn, what);
    *out = h->v;
    return true;
}

static bool need_out(Interp *I, const char *fn, const void *out)
{
    return out ? true : err_raise(I, TDL_ERR_VALUE, "%s: the out-parameter is NULL", fn);
}

void tdl_value_free(tdl_value *v)
{
    if (!v || v->magic != VALUE_MAGIC || v->arg) return;
    tdl_interp *T = v->T;
    API_MEM_SCOPE(T);
    v->magic = 0;
    if (v->dead) {
        exports_lock();
        bool last = --T->nhandles == 0 && T->nexports == 0 && T->closed;
        exports_unlock();
        mem_free(v);
        if (last) embed_free_shell(T);
        return;
    }
    api_enter(T);
    if (v->prev) v->prev->next = v->next;
    else T->handles = v->next;
    if (v->next) v->next->prev = v->prev;
    T->nhandles--;
    Value x = v->v;
    mem_free(v);
    val_decref(&T->I, x);
}

void embed_drop_handles(tdl_interp *T)
{
    /* Detach and mark them all first: dropping a value may run a host callback. */
    tdl_value *list = T->handles;
    T->handles = NULL;
    for (tdl_value *h = list; h; h = h->next) h->dead = true;
    while (list) {
        tdl_value *h = list;
        list = h->next;
        Value x = h->v;
        h->v = v_undef();
        h->prev = h->next = NULL;
        val_decref(&T->I, x);
    }
}

tdl_status tdl_dup(tdl_interp *T, tdl_value *v, tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Value x;
    if (!need_out(&T->I, "tdl_dup", out) || !value_of(T, "tdl_dup", "v", v, &x)) return TDL_ERROR;
    val_incref(x);
    return status(new_handle(T, x, out));
}

static bool handle_ok(tdl_interp *T, const tdl_value *v)
{
    return T && !T->closed && v && v->magic == VALUE_MAGIC && !v->dead && v->T == T;
}

tdl_type tdl_typeof(tdl_interp *T, const tdl_value *v)
{
    if (!handle_ok(T, v)) return TDL_TINVALID;
    switch (v->v.tag) {
    case V_NONE: return TDL_TNONE;
    case V_BOOL: return TDL_TBOOL;
    case V_INT: return TDL_TINT;
    case V_FLOAT: return TDL_TFLOAT;
    case V_STR: return TDL_TSTR;
    case V_TUPLE: return TDL_TTUPLE;
    case V_LIST: return TDL_TLIST;
    case V_TENSOR: return TDL_TTENSOR;
    case V_FUNC: case V_BUILTIN: case V_TYPE: return TDL_TCALLABLE;
    default: return TDL_TOTHER;
    }
}

const char *tdl_type_name(tdl_interp *T, const tdl_value *v)
{
    return handle_ok(T, v) ? val_type_name(v->v) : "";
}

/* ---- making and reading values ------------------------------------------------------------ */

static tdl_status make_immediate(tdl_interp *T, const char *fn, Value v, tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    return status(need_out(&T->I, fn, out) && new_handle(T, v, out));
}

tdl_status tdl_none(tdl_interp *T, tdl_value **out) { return make_immediate(T, "tdl_none", v_none(), out); }
tdl_status tdl_bool(tdl_interp *T, bool b, tdl_value **out) { return make_immediate(T, "tdl_bool", v_bool(b), out); }
tdl_status tdl_int(tdl_interp *T, int64_t i, tdl_value **out) { return make_immediate(T, "tdl_int", v_int(i), out); }
tdl_status tdl_float(tdl_interp *T, double d, tdl_value **out) { return make_immediate(T, "tdl_float", v_float(d), out); }

tdl_status tdl_str_len(tdl_interp *T, const char *s, size_t len, tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    if (!need_out(I, "tdl_str", out)) return TDL_ERROR;
    if (!s && len > 0) return err_raise(I, TDL_ERR_VALUE, "tdl_str: s is NULL"), TDL_ERROR;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = fmt_utf8_decode((const unsigned char *)s + i, len - i, &cp);
        if (k == 0)
            return err_raise(I, TDL_ERR_VALUE, "tdl_str: the text is not UTF-8 (byte %zu)", i), TDL_ERROR;
        i += k;
    }
    Value v;
    return status(str_new(I, s ? s : "", len, &v) && new_handle(T, v, out));
}

tdl_status tdl_str(tdl_interp *T, const char *s, tdl_value **out)
{
    if (!s) {
        if (out) *out = NULL;
        ENTER(T);
        return err_raise(&T->I, TDL_ERR_VALUE, "tdl_str: s is NULL"), TDL_ERROR;
    }
    return tdl_str_len(T, s, strlen(s), out);
}

/* Copies n item handles into vals (borrowed Values). */
static bool items_of(tdl_interp *T, const char *fn, size_t n, tdl_value *const *items, Value *vals)
{
    if (n > 0 && !items) return err_raise(&T->I, TDL_ERR_VALUE, "%s: items is NULL", fn);
    for (size_t k = 0; k < n; k++) {
        char what[32];
        snprintf(what, sizeof what, "item %zu", k);
        if (!value_of(T, fn, what, items[k], &vals[k])) return false;
    }
    return true;
}

static tdl_status make_seq(tdl_interp *T, const char *fn, bool tuple, size_t n, tdl_value *const *items,
                           tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    if (!need_out(I, fn, out)) return TDL_ERROR;
    if (n > SIZE_MAX / sizeof(Value) / 2) return err_nomem(I), TDL_ERROR;
    Value *vals = mem_malloc((n ? n : 1) * sizeof *vals);
    if (!vals) return err_nomem(I), TDL_ERROR;
    bool ok = items_of(T, fn, n, items, vals);
    Value v = v_undef();
    Value *dst = NULL;
    if (ok && tuple) {
        TupleObj *t = tuple_alloc(I, n);
        ok = t != NULL;
        if (ok) v = v_obj(V_TUPLE, &t->h), dst = t->items;
    } else if (ok) {
        ListObj *l = list_alloc(I, n);
        ok = l != NULL;
        if (ok) v = v_obj(V_LIST, &l->h), dst = l->items;
    }
    for (size_t k = 0; ok && k < n; k++) {
        val_incref(vals[k]);
        dst[k] = vals[k];
    }
    mem_free(vals);
    return status(ok && new_handle(T, v, out));
}

tdl_status tdl_tuple(tdl_interp *T, size_t n, tdl_value *const *items, tdl_value **out)
{
    return make_seq(T, "tdl_tuple", true, n, items, out);
}

tdl_status tdl_list(tdl_interp *T, size_t n, tdl_value *const *items, tdl_value **out)
{
    return make_seq(T, "tdl_list", false, n, items, out);
}

tdl_status tdl_list_append(tdl_interp *T, tdl_value *list, tdl_value *item)
{
    ENTER(T);
    Interp *I = &T->I;
    Value l, x;
    if (!value_of(T, "tdl_list_append", "list", list, &l) || !value_of(T, "tdl_list_append", "item", item, &x))
        return TDL_ERROR;
    if (l.tag != V_LIST)
        return err_raise(I, TDL_ERR_TYPE, "tdl_list_append: expected a list, got %s", val_type_name(l)), TDL_ERROR;
    return status(list_append(I, as_list(l), x));
}

/* The Value of v for a reader, checked against T; a TypeError unless ok_tag(v). */
static bool read_value(tdl_interp *T, const char *fn, const tdl_value *h, const char *want, bool (*ok_tag)(Value),
                       Value *out)
{
    if (!value_of(T, fn, "v", h, out)) return false;
    if (!ok_tag(*out)) return err_raise(&T->I, TDL_ERR_TYPE, "%s: expected %s, got %s", fn, want, val_type_name(*out));
    return true;
}

static bool is_bool(Value v) { return v.tag == V_BOOL; }
static bool is_int(Value v) { return v.tag == V_INT || v.tag == V_BOOL; }
static bool is_num(Value v) { return v.tag == V_INT || v.tag == V_BOOL || v.tag == V_FLOAT; }
static bool is_str(Value v) { return v.tag == V_STR; }
static bool is_seq(Value v) { return v.tag == V_TUPLE || v.tag == V_LIST; }

tdl_status tdl_to_bool(tdl_interp *T, const tdl_value *v, bool *out)
{
    if (out) *out = false;
    ENTER(T);
    Value x;
    if (!need_out(&T->I, "tdl_to_bool", out) || !read_value(T, "tdl_to_bool", v, "bool", is_bool, &x))
        return TDL_ERROR;
    *out = x.b;
    return TDL_OK;
}

tdl_status tdl_to_int(tdl_interp *T, const tdl_value *v, int64_t *out)
{
    if (out) *out = 0;
    ENTER(T);
    Value x;
    if (!need_out(&T->I, "tdl_to_int", out) || !read_value(T, "tdl_to_int", v, "int", is_int, &x))
        return TDL_ERROR;
    *out = as_i(x);
    return TDL_OK;
}

tdl_status tdl_to_float(tdl_interp *T, const tdl_value *v, double *out)
{
    if (out) *out = 0;
    ENTER(T);
    Value x;
    if (!need_out(&T->I, "tdl_to_float", out) || !read_value(T, "tdl_to_float", v, "float", is_num, &x))
        return TDL_ERROR;
    *out = x.tag == V_FLOAT ? x.f : (double)as_i(x);
    return TDL_OK;
}

tdl_status tdl_to_str(tdl_interp *T, const tdl_value *v, const char **s, size_t *len)
{
    if (s) *s = NULL;
    if (len) *len = 0;
    ENTER(T);
    Value x;
    if (!need_out(&T->I, "tdl_to_str", s) || !read_value(T, "tdl_to_str", v, "str", is_str, &x)) return TDL_ERROR;
    *s = as_str(x)->data;
    if (len) *len = as_str(x)->len;
    return TDL_OK;
}

tdl_status tdl_seq_len(tdl_interp *T, const tdl_value *v, size_t *out)
{
    if (out) *out = 0;
    ENTER(T);
    Value x;
    if (!need_out(&T->I, "tdl_seq_len", out) || !read_value(T, "tdl_seq_len", v, "a tuple or list", is_seq, &x))
        return TDL_ERROR;
    *out = x.tag == V_TUPLE ? as_tuple(x)->n : as_list(x)->n;
    return TDL_OK;
}

tdl_status tdl_seq_get(tdl_interp *T, const tdl_value *v, size_t i, tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    Value x;
    if (!need_out(I, "tdl_seq_get", out) || !read_value(T, "tdl_seq_get", v, "a tuple or list", is_seq, &x))
        return TDL_ERROR;
    size_t n = x.tag == V_TUPLE ? as_tuple(x)->n : as_list(x)->n;
    if (i >= n)
        return err_raise(I, TDL_ERR_INDEX, "tdl_seq_get: index %zu is out of range for a %s of %zu", i,
                         val_type_name(x), n), TDL_ERROR;
    Value item = x.tag == V_TUPLE ? as_tuple(x)->items[i] : as_list(x)->items[i];
    val_incref(item);
    return status(new_handle(T, item, out));
}

tdl_status tdl_repr(tdl_interp *T, tdl_value *v, tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    Value x, s;
    if (!need_out(I, "tdl_repr", out) || !value_of(T, "tdl_repr", "v", v, &x)) return TDL_ERROR;
    Buf b = {0};
    bool ok = val_repr(I, x, &b);
    if (ok && b.nomem) ok = err_nomem(I);
    ok = ok && str_new(I, b.p ? b.p : "", b.n, &s);
    buf_free(&b);
    return status(ok && new_handle(T, s, out));
}

tdl_status tdl_get_attr(tdl_interp *T, tdl_value *v, const char *name, tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    Value x, r;
    if (!need_out(I, "tdl_get_attr", out) || !value_of(T, "tdl_get_attr", "v", v, &x)) return TDL_ERROR;
    if (!name) return err_raise(I, TDL_ERR_VALUE, "tdl_get_attr: name is NULL"), TDL_ERROR;
    return status(val_getattr(I, x, name, &r) && new_handle(T, r, out));
}

/* ---- globals, imports, calls ------------------------------------------------------------- */

static bool bind_global(Interp *I, Module *m, const char *name, Value v)
{
    int32_t k = module_slot(m, name);
    if (k < 0) return err_nomem(I);
    Value old = m->vals[k];
    val_incref(v);
    m->vals[k] = v;
    val_decref(I, old);
    return true;
}

/* Global `name` of the main module, else the builtin (borrowed), else V_UNDEF. */
static Value lookup_global(Interp *I, const char *name)
{
    int32_t k = namemap_get(&I->main->names, name);
    if (k >= 0 && I->main->vals[k].tag != V_UNDEF) return I->main->vals[k];
    k = namemap_get(&I->builtins->names, name);
    return k >= 0 ? I->builtins->vals[k] : v_undef();
}

tdl_status tdl_get_global(tdl_interp *T, const char *name, tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    if (!need_out(I, "tdl_get_global", out)) return TDL_ERROR;
    if (!name) return err_raise(I, TDL_ERR_VALUE, "tdl_get_global: name is NULL"), TDL_ERROR;
    Value v = lookup_global(I, name);
    if (v.tag == V_UNDEF) return err_raise(I, TDL_ERR_NAME, "name '%s' is not defined", name), TDL_ERROR;
    val_incref(v);
    return status(new_handle(T, v, out));
}

tdl_status tdl_set_global(tdl_interp *T, const char *name, tdl_value *v)
{
    ENTER(T);
    Interp *I = &T->I;
    Value x;
    if (!value_of(T, "tdl_set_global", "v", v, &x)) return TDL_ERROR;
    if (!name || !*name) return err_raise(I, TDL_ERR_VALUE, "tdl_set_global: the name is empty"), TDL_ERROR;
    return status(bind_global(I, I->main, name, x));
}

/* How a call that ran code ended: TDL_EXIT when the program called exit(). */
static tdl_status ran(Interp *I, bool ok) { return ok ? TDL_OK : I->exiting ? TDL_EXIT : TDL_ERROR; }

static bool import_one(Interp *I, const char *name, Value *out)
{
    if (strchr(name, '.'))
        return err_raise(I, TDL_ERR_IMPORT, "dotted module names are not supported: '%s'", name);
    return import_module(I, name, out);
}

tdl_status tdl_import(tdl_interp *T, const char *name, tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    if (!need_out(I, "tdl_import", out)) return TDL_ERROR;
    if (!name) return err_raise(I, TDL_ERR_VALUE, "tdl_import: name is NULL"), TDL_ERROR;
    char here;
    ApiRun r;
    api_run_begin(T, &r, &here);
    Value m;
    bool ok = import_one(I, name, &m);
    api_run_end(T, &r);
    return ok ? status(new_handle(T, m, out)) : ran(I, false);
}

/* "vision.roi_align": the first name a global (or builtin), else a module to import, then
 * attributes. *out is a new reference. */
static bool resolve_path(Interp *I, const char *path, Value *out)
{
    size_t n = strcspn(path, ".");
    char first[256];
    if (n == 0 || n >= sizeof first) return err_raise(I, TDL_ERR_VALUE, "tdl_call_name: bad name '%s'", path);
    memcpy(first, path, n);
    first[n] = '\0';
    Value v = lookup_global(I, first);
    if (v.tag != V_UNDEF) val_incref(v);
    else if (!path[n]) return err_raise(I, TDL_ERR_NAME, "name '%s' is not defined", first);
    else if (!import_one(I, first, &v)) return false;
    for (const char *p = path + n; *p == '.';) {
        p++;
        size_t k = strcspn(p, ".");
        char attr[256];
        if (k == 0 || k >= sizeof attr) {
            val_decref(I, v);
            return err_raise(I, TDL_ERR_VALUE, "tdl_call_name: bad name '%s'", path);
        }
        memcpy(attr, p, k);
        attr[k] = '\0';
        Value a;
        bool ok = val_getattr(I, v, attr, &a);
        val_decref(I, v);
        if (!ok) return false;
        v = a;
        p += k;
    }
    *out = v;
    return true;
}

/* Calls f with the host's argument handles; the caller brackets it with api_run_begin/end. */
static bool call_handles(tdl_interp *T, const char *fn, Value f, int nargs, tdl_value *const *args, int nkw,
                         const char *const *kwnames, tdl_value *const *kwargs, tdl_value **out)
{
    Interp *I = &T->I;
    if (nargs < 0 || nkw < 0 || nargs + nkw > MAX_ARGS)
        return err_raise(I, TDL_ERR_VALUE, "%s: %d positional and %d keyword arguments (at most %d in all)", fn,
                         nargs, nkw, MAX_ARGS);
    if ((nargs > 0 && !args) || (nkw > 0 && (!kwnames || !kwargs)))
        return err_raise(I, TDL_ERR_VALUE, "%s: an argument array is NULL", fn);
    Value vals[MAX_ARGS + 1];
    for (int k = 0; k < nargs + nkw; k++) {
        char what[48];
        if (k < nargs) snprintf(what, sizeof what, "argument %d", k);
        else snprintf(what, sizeof what, "keyword argument %d", k - nargs);
        if (!value_of(T, fn, what, k < nargs ? args[k] : kwargs[k - nargs], &vals[k])) return false;
        if (k >= nargs && !kwnames[k - nargs])
            return err_raise(I, TDL_ERR_VALUE, "%s: the name of keyword argument %d is NULL", fn, k - nargs);
    }
    Value r;
    if (!call_value(I, f, vals, nargs, kwnames, nkw, &r)) return false;
    if (!out) {
        val_decref(I, r);
        return true;
    }
    return new_handle(T, r, out);
}

tdl_status tdl_call(tdl_interp *T, tdl_value *f, int nargs, tdl_value *const *args, int nkw,
                    const char *const *kwnames, tdl_value *const *kwargs, tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Value fv;
    if (!value_of(T, "tdl_call", "f", f, &fv)) return TDL_ERROR;
    char here;
    ApiRun r;
    api_run_begin(T, &r, &here);
    val_incref(fv);         /* the call may rebind whatever held it */
    bool ok = call_handles(T, "tdl_call", fv, nargs, args, nkw, kwnames, kwargs, out);
    val_decref(&T->I, fv);
    api_run_end(T, &r);
    return ran(&T->I, ok);
}

tdl_status tdl_call_name(tdl_interp *T, const char *name, int nargs, tdl_value *const *args, int nkw,
                         const char *const *kwnames, tdl_value *const *kwargs, tdl_value **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    if (!name) return err_raise(I, TDL_ERR_VALUE, "tdl_call_name: name is NULL"), TDL_ERROR;
    char here;
    ApiRun r;
    api_run_begin(T, &r, &here);
    Value f;
    bool ok = resolve_path(I, name, &f);
    if (ok) {
        ok = call_handles(T, "tdl_call_name", f, nargs, args, nkw, kwnames, kwargs, out);
        val_decref(I, f);
    }
    api_run_end(T, &r);
    return ran(I, ok);
}

/* ---- C builtins -------------------------------------------------------------------------- */

#define MAX_PARAMS 32

typedef enum ParamType {
    PT_ANY, PT_NONE, PT_BOOL, PT_INT, PT_FLOAT, PT_STR, PT_TUPLE, PT_LIST, PT_TENSOR, PT_CALLABLE, PT__COUNT
} ParamType;

static const char *const ptype_names[PT__COUNT] = {
    "any", "none", "bool", "int", "float", "str", "tuple", "list", "tensor", "callable",
};
/* As messages name them ("must be int, not str"). */
static const char *const ptype_shown[PT__COUNT] = {
    "object", "None", "bool", "int", "float", "str", "tuple", "list", "Tensor", "callable",
};

typedef struct Param {
    char name[32];
    ParamType type;
    bool optional;              /* `?`: None accepted too */
    bool kwonly;
    bool has_default;
    Value dflt;                 /* a reference (a str default is an object) */
} Param;

struct HostFn {
    BuiltinDef def;             /* name, host_call, any arguments: the signature checks them */
    char *name;
    tdl_cfunction fn;
    void *ud;
    int nparams;
    int npos;                   /* parameters that may be given by position */
    Param params[MAX_PARAMS];
};

static bool type_accepts(const Param *p, Value v)
{
    if (p->optional && v.tag == V_NONE) return true;
    switch (p->type) {
    case PT_ANY: return true;
    case PT_NONE: return v.tag == V_NONE;
    case PT_BOOL: return v.tag == V_BOOL;
    case PT_INT: return is_int(v);
    case PT_FLOAT: return is_num(v);
    case PT_STR: return v.tag == V_STR;
    case PT_TUPLE: return v.tag == V_TUPLE;
    case PT_LIST: return v.tag == V_LIST;
    case PT_TENSOR: return v.tag == V_TENSOR;
    case PT_CALLABLE: return v.tag == V_FUNC || v.tag == V_BUILTIN || v.tag == V_TYPE;
    default: return false;
    }
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    return p;
}

static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

/* Parses a default value at p into pr->dflt; returns the end, or NULL (why set). */
static const char *parse_default(Interp *I, const char *p, Param *pr, const char **why)
{
    static const struct { const char *word; int kind; } words[] = {{"None", 0}, {"True", 1}, {"False", 2}};
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        size_t n = strlen(words[k].word);
        if (strncmp(p, words[k].word, n) == 0 && !ident_char(p[n])) {
            pr->dflt = words[k].kind == 0 ? v_none() : v_bool(words[k].kind == 1);
            return p + n;
        }
    }
    if (*p == '\'' || *p == '"') {
        const char *end = strchr(p + 1, *p);
        if (!end) return *why = "unterminated string", NULL;
        if (!str_new(I, p + 1, (size_t)(end - p - 1), &pr->dflt)) return *why = "out of memory", NULL;
        return end + 1;
    }
    char *end;
    long long i = strtoll(p, &end, 10);
    if (end != p && *end != '.' && *end != 'e' && *end != 'E') {
        pr->dflt = v_int(i);
        return end;
    }
    double d = strtod(p, &end);
    if (end == p) return *why = "expected a default value (None, True, False, a number or a string)", NULL;
    pr->dflt = v_float(d);
    return end;
}

/* Parses signature into h's parameters; false with a ValueError saying where. */
static bool parse_signature(Interp *I, HostFn *h, const char *sig)
{
    const char *why = NULL;
    const char *p = skip_ws(sig);
    bool kwonly = false, star_last = false, seen_default = false;
    while (*p && !why) {
        if (*p == '*') {
            if (kwonly) {
                why = "a second '*'";
                break;
            }
            kwonly = star_last = true;
            p = skip_ws(p + 1);
        } else {
            if (h->nparams == MAX_PARAMS) {
                why = "more than 32 parameters";
                break;
            }
            Param *pr = &h->params[h->nparams];
            *pr = (Param){.type = PT_ANY, .kwonly = kwonly, .dflt = v_undef()};
            star_last = false;
            if (!ident_start(*p)) {
                why = "expected a parameter name";
                break;
            }
            size_t n = 0;
            while (ident_char(p[n])) n++;
            if (n >= sizeof pr->name) {
                why = "a parameter name longer than 31 characters";
                break;
            }
            memcpy(pr->name, p, n);
            pr->name[n] = '\0';
            for (int k = 0; k < h->nparams; k++)
                if (strcmp(h->params[k].name, pr->name) == 0) why = "a parameter named twice";
            if (why) break;
            h->nparams++;
            p = skip_ws(p + n);
            if (*p == ':') {
                p = skip_ws(p + 1);
                size_t m = 0;
                while (ident_char(p[m])) m++;
                int t = -1;
                for (int k = 0; k < PT__COUNT; k++)
                    if (strlen(ptype_names[k]) == m && strncmp(p, ptype_names[k], m) == 0) t = k;
                if (t < 0) {
                    why = "unknown type (any, none, bool, int, float, str, tuple, list, tensor, callable)";
                    break;
                }
                pr->type = (ParamType)t;
                p += m;
                if (*p == '?') pr->optional = true, p++;
                p = skip_ws(p);
            }
            if (*p == '=') {
                const char *at = skip_ws(p + 1);
                p = parse_default(I, at, pr, &why);
                if (!p) {
                    p = at;
                    break;
                }
                pr->has_default = true;
                if (!type_accepts(pr, pr->dflt)) {
                    why = "a default value of the wrong type";
                    break;
                }
                p = skip_ws(p);
            }
            if (!kwonly) {
                if (pr->has_default) seen_default = true;
                else if (seen_default) {
                    why = "a parameter without a default after one with a default";
                    break;
                }
                h->npos++;
            }
        }
        if (*p == ',') p = skip_ws(p + 1);
        else if (*p) why = "expected ',' between parameters";
    }
    if (!why && star_last) why = "a '*' must be followed by a parameter";
    if (!why) return true;
    if (strcmp(why, "out of memory") == 0) return err_nomem(I);
    return err_raise(I, TDL_ERR_VALUE, "tdl_register: the signature of '%s' at column %d: %s", h->name,
                     (int)(p - sig) + 1, why);
}

static void hostfn_free(Interp *I, HostFn *h)
{
    if (!h) return;
    for (int k = 0; k < h->nparams; k++) val_decref(I, h->params[k].dflt);
    mem_free(h->name);
    mem_free(h);
}

/* Binds a call's arguments to h's parameters (Python's rules), defaults filled in; bound values
 * are borrowed. */
static bool bind_params(Interp *I, const HostFn *h, const Value *args, int nargs, const char *const *kwnames,
                        int nkw, Value *bound)
{
    for (int k = 0; k < h->nparams; k++) bound[k] = v_undef();
    if (nargs > h->npos) {
        int required = 0;
        for (int k = 0; k < h->npos; k++) required += !h->params[k].has_default;
        if (required == h->npos)
            return err_raise(I, TDL_ERR_TYPE, "%s() takes %d positional argument%s but %d %s given", h->name, h->npos,
                             h->npos == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
        return err_raise(I, TDL_ERR_TYPE, "%s() takes from %d to %d positional arguments but %d %s given", h->name,
                         required, h->npos, nargs, nargs == 1 ? "was" : "were");
    }
    for (int k = 0; k < nargs; k++) bound[k] = args[k];
    for (int j = 0; j < nkw; j++) {
        int k = 0;
        while (k < h->nparams && strcmp(h->params[k].name, kwnames[j]) != 0) k++;
        if (k == h->nparams)
            return err_raise(I, TDL_ERR_TYPE, "%s() got an unexpected keyword argument '%s'", h->name, kwnames[j]);
        if (bound[k].tag != V_UNDEF)
            return err_raise(I, TDL_ERR_TYPE, "%s() got multiple values for argument '%s'", h->name, kwnames[j]);
        bound[k] = args[nargs + j];
    }
    Buf missing = {0};
    int nmissing = 0;
    bool missing_kwonly = false;
    for (int k = 0; k < h->nparams; k++) {
        const Param *p = &h->params[k];
        if (bound[k].tag != V_UNDEF) continue;
        if (p->has_default) {
            bound[k] = p->dflt;
            continue;
        }
        buf_printf(&missing, "%s'%s'", nmissing ? ", " : "", p->name);
        nmissing++;
        missing_kwonly = p->kwonly;
    }
    if (nmissing && missing.nomem) {
        buf_free(&missing);
        return err_nomem(I);
    }
    if (nmissing) {
        err_raise(I, TDL_ERR_TYPE, "%s() missing %d required %s argument%s: %s", h->name, nmissing,
                  missing_kwonly && nmissing == 1 ? "keyword-only" : "positional", nmissing == 1 ? "" : "s",
                  missing.p ? missing.p : "");
        buf_free(&missing);
        return false;
    }
    for (int k = 0; k < h->nparams; k++) {
        const Param *p = &h->params[k];
        if (type_accepts(p, bound[k])) continue;
        char pos[32] = "";
        if (!p->kwonly) snprintf(pos, sizeof pos, " (position %d)", k + 1);
        return err_raise(I, TDL_ERR_TYPE, "%s(): argument '%s'%s must be %s%s, not %s", h->name, p->name, pos,
                         ptype_shown[p->type], p->optional ? " or None" : "", val_type_name(bound[k]));
    }
    return true;
}

static const char *status_name(tdl_status st)
{
    switch (st) {
    case TDL_OK: return "TDL_OK";
    case TDL_ERROR: return "TDL_ERROR";
    case TDL_INCOMPLETE: return "TDL_INCOMPLETE";
    case TDL_EXIT: return "TDL_EXIT";
    case TDL_MISUSE: return "TDL_MISUSE";
    default: return "an unknown status";
    }
}

/* The BuiltinFn of every C builtin: self is a V_UNDEF carrying the index of its HostFn in
 * T->fns (an immediate, so the BuiltinObj prints and behaves as a plain builtin function). */
static bool host_call(Interp *I, Value self, const Value *args, int nargs, const char *const *kwnames, int nkw,
                      Value *out)
{
    tdl_interp *T = interp_shell(I);
    if (self.i < 0 || self.i >= T->nfns) return err_raise(I, TDL_ERR_RUNTIME, "internal error: a stale C builtin");
    const HostFn *h = T->fns[self.i];
    Value bound[MAX_PARAMS];
    if (!bind_params(I, h, args, nargs, kwnames, nkw, bound)) return false;
    tdl_value hs[MAX_PARAMS];
    tdl_value *hp[MAX_PARAMS];
    for (int k = 0; k < h->nparams; k++) {
        hs[k] = (tdl_value){.magic = VALUE_MAGIC, .arg = true, .T = T, .v = bound[k]};
        hp[k] = &hs[k];
    }
    tdl_value *res = NULL;
    tdl_status st = h->fn(T, hp, h->nparams, &res, h->ud);
    Value rv = v_none();
    bool bad_result = false;
    if (res) {
        if (res->magic != VALUE_MAGIC || res->dead || res->T != T) {
            bad_result = true;
        } else if (res->arg) {
            rv = res->v;
            val_incref(rv);
        } else {
            /* Take the handle's reference over and free the handle. */
            rv = res->v;
            res->v = v_none();
            tdl_value_free(res);
        }
    }
    for (int k = 0; k < h->nparams; k++) hs[k].magic = 0;
    if (st == TDL_OK && !bad_result && !I->exiting) {
        err_clear(I);       /* an error the function handled is not the program's */
        *out = rv;
        return true;
    }
    val_decref(I, rv);
    if (I->exiting) return false;
    if (st == TDL_OK)
        return err_raise(I, TDL_ERR_RUNTIME, "%s(): the C function returned a result that is not a live tdl_value "
                         "of this interpreter", h->name);
    if (st == TDL_ERROR && I->err.kind != TDL_ERR_NONE) {
        /* The call site adds its line, also under an error of code the function ran itself. */
        if (!I->err.syntax) I->err.need_loc = true;
        return false;
    }
    return err_raise(I, TDL_ERR_RUNTIME, "%s(): the C function returned %s without raising an error", h->name,
                     status_name(st));
}

tdl_status tdl_register(tdl_interp *T, const char *name, const char *signature, tdl_cfunction fn, void *ud)
{
    ENTER(T);
    Interp *I = &T->I;
    if (!name || !ident_start(*name))
        return err_raise(I, TDL_ERR_VALUE, "tdl_register: the name %s%s%s is not an identifier", name ? "'" : "",
                         name ? name : "NULL", name ? "'" : ""), TDL_ERROR;
    for (const char *c = name; *c; c++)
        if (!ident_char(*c))
            return err_raise(I, TDL_ERR_VALUE, "tdl_register: the name '%s' is not an identifier", name), TDL_ERROR;
    if (!fn) return err_raise(I, TDL_ERR_VALUE, "tdl_register: the function of '%s' is NULL", name), TDL_ERROR;
    if (!signature)
        return err_raise(I, TDL_ERR_VALUE, "tdl_register: the signature of '%s' is NULL (\"\" for none)", name),
               TDL_ERROR;
    HostFn *h = mem_calloc(1, sizeof *h);
    if (!h) return err_nomem(I), TDL_ERROR;
    h->name = mem_strdup(name);
    h->fn = fn;
    h->ud = ud;
    if (!h->name) {
        hostfn_free(I, h);
        return err_nomem(I), TDL_ERROR;
    }
    if (!parse_signature(I, h, signature)) {
        hostfn_free(I, h);
        return TDL_ERROR;
    }
    h->def = (BuiltinDef){h->name, host_call, 0, -1, "*"};
    if (T->nfns == T->capfns) {
        int cap = T->capfns ? T->capfns * 2 : 8;
        HostFn **fns = mem_realloc(T->fns, (size_t)cap * sizeof *fns);
        if (!fns) {
            hostfn_free(I, h);
            return err_nomem(I), TDL_ERROR;
        }
        T->fns = fns;
        T->capfns = cap;
    }
    Value self = v_undef();
    self.i = T->nfns;
    T->fns[T->nfns++] = h;      /* kept until tdl_close, even if binding fails below */
    Value v;
    if (!builtin_bind(I, &h->def, self, &v)) return TDL_ERROR;
    bool ok = bind_global(I, I->builtins, name, v);
    val_decref(I, v);
    return status(ok);
}

/* ---- tensors from host memory ------------------------------------------------------------ */

static const FcDType api_dtypes[] = {
    [TDL_DTYPE_BOOL] = FC_BOOL, [TDL_DTYPE_INT32] = FC_INT32, [TDL_DTYPE_INT64] = FC_INT64,
    [TDL_DTYPE_FLOAT32] = FC_FLOAT32, [TDL_DTYPE_FLOAT64] = FC_FLOAT64, [TDL_DTYPE_UINT8] = FC_UINT8,
    [TDL_DTYPE_INT8] = FC_INT8, [TDL_DTYPE_INT16] = FC_INT16, [TDL_DTYPE_FLOAT16] = FC_FLOAT16,
    [TDL_DTYPE_BFLOAT16] = FC_BFLOAT16,
};

static bool dtype_in(tdl_dtype dt, FcDType *out)
{
    if (dt < TDL_DTYPE_BOOL || dt > TDL_DTYPE_BFLOAT16) return false;
    *out = api_dtypes[dt];
    return true;
}

static tdl_dtype dtype_out(FcDType dt)
{
    for (int k = TDL_DTYPE_BOOL; k <= TDL_DTYPE_BFLOAT16; k++)
        if (api_dtypes[k] == dt) return (tdl_dtype)k;
    return TDL_DTYPE_ANY;
}

const char *tdl_dtype_name(tdl_dtype dt)
{
    FcDType f;
    return dtype_in(dt, &f) ? fc_dtype_name(f) : NULL;
}

size_t tdl_dtype_size(tdl_dtype dt)
{
    FcDType f;
    return dtype_in(dt, &f) ? fc_dtype_size(f) : 0;
}

/* Validated geometry of host memory: strides filled in, and the span of elements it touches
 * relative to element (0, ..., 0): [lo, hi]. */
typedef struct Geometry {
    FcDType dt;
    int ndim;
    int64_t shape[FC_MAX_DIMS], strides[FC_MAX_DIMS];
    int64_t numel, lo, hi;
} Geometry;

static bool geometry(Interp *I, const char *fn, FcDType dt, int ndim, const int64_t *shape, const int64_t *strides,
                     const void *data, Geometry *g)
{
    g->dt = dt;
    g->ndim = ndim;
    if (ndim < 0 || ndim > FC_MAX_DIMS)
        return err_raise(I, TDL_ERR_VALUE, "%s: ndim is %d, not in [0, %d]", fn, ndim, FC_MAX_DIMS);
    if (ndim > 0 && !shape) return err_raise(I, TDL_ERR_VALUE, "%s: shape is NULL", fn);
    int64_t es = (int64_t)fc_dtype_size(dt);
    g->numel = 1;
    for (int k = 0; k < ndim; k++) {
        if (shape[k] < 0)
            return err_raise(I, TDL_ERR_VALUE, "%s: shape[%d] is negative (%lld)", fn, k, (long long)shape[k]);
        g->shape[k] = shape[k];
        if (__builtin_mul_overflow(g->numel, shape[k], &g->numel) || g->numel > INT64_MAX / es)
            return err_raise(I, TDL_ERR_VALUE, "%s: the shape has too many elements", fn);
    }
    if (strides) memcpy(g->strides, strides, (size_t)ndim * sizeof *strides);
    else fc_contiguous_strides(ndim, g->shape, g->strides);
    g->lo = g->hi = 0;
    if (g->numel == 0) return true;
    if (!data) return err_raise(I, TDL_ERR_VALUE, "%s: data is NULL", fn);
    for (int k = 0; k < ndim; k++) {
        int64_t ext;
        if (__builtin_mul_overflow(g->shape[k] - 1, g->strides[k], &ext)
            || __builtin_add_overflow(ext < 0 ? g->lo : g->hi, ext, ext < 0 ? &g->lo : &g->hi))
            return err_raise(I, TDL_ERR_VALUE, "%s: the strides reach too far", fn);
    }
    int64_t span;
    if (__builtin_sub_overflow(g->hi, g->lo, &span) || span >= INT64_MAX / es)
        return err_raise(I, TDL_ERR_VALUE, "%s: the strides reach too far", fn);
    return true;
}

/* A tensor viewing storage s (the caller keeps its own reference) with that geometry. */
static bool tensor_over(Interp *I, FcStorage *s, const Geometry *g, FcTensor **out)
{
    int64_t none = 0;
    FcTensor carrier = {.refcnt = 1, .dtype = g->dt, .device = s->device, .shape = &none, .strides = &none,
                        .storage = s};
    FcError e;
    FcStatus st = fc_as_strided(I->fc, &carrier, g->ndim, g->shape, g->strides, -g->lo, out, &e);
    return st == FC_OK || tensor_fail(I, st, &e);
}

/* What a storage of borrowed memory calls when its last reference goes. */
typedef struct BorrowHold {
    tdl_release_fn release;
    void *ud;
    void *data;                 /* as the host gave it */
} BorrowHold;

static void borrow_release(void *ud, void *data)
{
    BorrowHold *b = ud;
    if (b->release) b->release(b->ud, b->data);
    mem_free(b);
}

/* A storage over host memory whose element (0, ..., 0) is at data; release(ud) runs when it
 * goes (also when this fails). NULL with the error raised on failure. */
static FcStorage *host_storage(Interp *I, const Geometry *g, void *data, void (*release)(void *, void *), void *ud)
{
    FcStorage *s = mem_calloc(1, sizeof *s);
    if (!s) {
        release(ud, NULL);
        err_nomem(I);
        return NULL;
    }
    size_t es = fc_dtype_size(g->dt);
    s->refcnt = 1;
    s->device = fc_cpu();
    s->data = data && g->numel > 0 ? (char *)data + g->lo * (int64_t)es : NULL;
    s->nbytes = g->numel > 0 ? (size_t)(g->hi - g->lo + 1) * es : 0;
    s->release = release;
    s->release_ud = ud;
    return s;
}

static bool aligned(Interp *I, const char *fn, const Geometry *g, const void *data)
{
    size_t es = fc_dtype_size(g->dt);
    if (g->numel == 0 || (uintptr_t)data % es == 0) return true;
    return err_raise(I, TDL_ERR_VALUE, "%s: data (%p) is not aligned to the %zu bytes of a %s", fn, data, es,
                     fc_dtype_name(g->dt));
}

/* A stored copy of host memory on device dev. */
static bool copy_in(Interp *I, const Geometry *g, const void *data, FcDevice dev, FcTensor **out)
{
    FcError e;
    FcStatus st;
    if (g->numel == 0) {
        st = fc_empty(I->fc, g->dt, dev, g->ndim, g->shape, NULL, out, &e);
    } else {
        FcView view = {.dtype = g->dt, .ndim = g->ndim, .offset = 0, .data = (void *)data};
        memcpy(view.shape, g->shape, (size_t)g->ndim * sizeof *g->shape);
        memcpy(view.strides, g->strides, (size_t)g->ndim * sizeof *g->strides);
        st = fc_from_view(I->fc, &view, dev, out, &e);
    }
    return st == FC_OK || tensor_fail(I, st, &e);
}

static bool wrap_tensor(tdl_interp *T, FcTensor *t, tdl_value **out)
{
    Value v;
    return tensor_value_steal(&T->I, t, &v) && new_handle(T, v, out);
}

tdl_status tdl_tensor_from_host(tdl_interp *T, tdl_dtype dt, int ndim, const int64_t *shape,
                                const int64_t *strides, const void *data, tdl_value **out)
{
    const char *fn = "tdl_tensor_from_host";
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    FcDType fdt = FC_FLOAT32;
    Geometry g;
    FcTensor *t;
    if (!need_out(I, fn, out)) return TDL_ERROR;
    if (!dtype_in(dt, &fdt)) return err_raise(I, TDL_ERR_VALUE, "%s: %d is not a tdl_dtype", fn, (int)dt), TDL_ERROR;
    if (!geometry(I, fn, fdt, ndim, shape, strides, data, &g) || !aligned(I, fn, &g, data)) return TDL_ERROR;
    return status(copy_in(I, &g, data, I->device, &t) && wrap_tensor(T, t, out));
}

tdl_status tdl_tensor_borrow(tdl_interp *T, tdl_dtype dt, int ndim, const int64_t *shape, const int64_t *strides,
                             void *data, tdl_release_fn release, void *ud, tdl_value **out)
{
    const char *fn = "tdl_tensor_borrow";
    if (out) *out = NULL;
    API_MEM_SCOPE(T);
    if (!api_enter(T)) {
        if (release) release(ud, data);
        return TDL_MISUSE;
    }
    Interp *I = &T->I;
    FcDType fdt = FC_FLOAT32;
    Geometry g;
    BorrowHold *b = NULL;
    bool ok = need_out(I, fn, out);
    if (ok && !dtype_in(dt, &fdt)) ok = err_raise(I, TDL_ERR_VALUE, "%s: %d is not a tdl_dtype", fn, (int)dt);
    ok = ok && geometry(I, fn, fdt, ndim, shape, strides, data, &g) && aligned(I, fn, &g, data);
    if (ok && !(b = mem_malloc(sizeof *b))) ok = err_nomem(I);
    if (!ok) {
        if (release) release(ud, data);
        return TDL_ERROR;
    }
    *b = (BorrowHold){release, ud, data};
    FcStorage *s = host_storage(I, &g, data, borrow_release, b);
    if (!s) return TDL_ERROR;
    FcTensor *t;
    ok = tensor_over(I, s, &g, &t);
    fc_storage_release(s);      /* the tensor's reference is the one left (none on failure: released) */
    return status(ok && wrap_tensor(T, t, out));
}

/* v's tensor, computed; false with the error raised when v is not a tensor tdl can describe. */
static bool host_tensor(tdl_interp *T, const char *fn, tdl_value *v, FcTensor **out)
{
    Interp *I = &T->I;
    Value x;
    if (!value_of(T, fn, "v", v, &x)) return false;
    if (x.tag != V_TENSOR) return err_raise(I, TDL_ERR_TYPE, "%s: expected a Tensor, got %s", fn, val_type_name(x));
    FcTensor *t = as_tensor(x);
    if (t->levels)
        return err_raise(I, TDL_ERR_VALUE, "%s: the tensor has first-class dims: order() them into positional dims "
                         "first", fn);
    FcError e;
    FcStatus st = fc_realize(I->fc, t, &e);
    if (st != FC_OK) return tensor_fail(I, st, &e);
    *out = t;
    return true;
}

tdl_status tdl_tensor_read(tdl_interp *T, tdl_value *v, tdl_dtype want, tdl_tensor_info *info)
{
    const char *fn = "tdl_tensor_read";
    if (info) memset(info, 0, sizeof *info);
    ENTER(T);
    Interp *I = &T->I;
    FcTensor *t;
    FcDType w;
    if (!need_out(I, fn, info)) return TDL_ERROR;
    if (want != TDL_DTYPE_ANY && !dtype_in(want, &w))
        return err_raise(I, TDL_ERR_VALUE, "%s: %d is not a tdl_dtype", fn, (int)want), TDL_ERROR;
    if (!host_tensor(T, fn, v, &t)) return TDL_ERROR;
    if (t->device.type != FC_DEV_CPU) {
        char name[24];
        return err_raise(I, TDL_ERR_DEVICE, "%s: the tensor is on %s: copy it with .cpu() first", fn,
                         fc_device_name(t->device, name)), TDL_ERROR;
    }
    if (want != TDL_DTYPE_ANY && w != t->dtype)
        return err_raise(I, TDL_ERR_TYPE, "%s: expected a %s tensor, got %s", fn, fc_dtype_name(w),
                         fc_dtype_name(t->dtype)), TDL_ERROR;
    size_t es = fc_dtype_size(t->dtype);
    info->dtype = dtype_out(t->dtype);
    info->ndim = t->ndim;
    info->shape = t->shape;
    info->strides = t->strides;
    info->data = t->storage->data ? (char *)t->storage->data + t->offset * (int64_t)es : NULL;
    info->numel = fc_tensor_numel(t);
    info->itemsize = es;
    return TDL_OK;
}

tdl_status tdl_tensor_contiguous(tdl_interp *T, tdl_value *v, tdl_value **out)
{
    const char *fn = "tdl_tensor_contiguous";
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    FcTensor *t, *c;
    FcError e;
    if (!need_out(I, fn, out) || !host_tensor(T, fn, v, &t)) return TDL_ERROR;
    FcStatus st = fc_contiguous(I->fc, t, FC_MF_CONTIGUOUS, &c, &e);
    if (st != FC_OK) return tensor_fail(I, st, &e), TDL_ERROR;
    return status(wrap_tensor(T, c, out));
}

/* ---- DLPack ------------------------------------------------------------------------------- */

#ifndef DLPACK_MAJOR_VERSION
/* dlpack.h before 1.0 (Debian's libdlpack-dev 0.6) lacks the versioned struct: this is its
 * layout in DLPack 1.0, which the standard keeps stable. */
typedef struct { uint32_t major, minor; } DLPackVersion;
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0
#endif
#ifndef DLPACK_FLAG_BITMASK_READ_ONLY
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#endif

enum { DL_BOOL = 6 };           /* kDLBool (DLPack 0.8 and later) */

struct ImportHold {
    tdl_interp *T;
    void *mt;                   /* the DLManagedTensor(Versioned) */
    bool versioned;
    bool listed;                /* in T->imports */
    ImportHold *prev, *next;
};

static void call_deleter(void *mt, bool versioned)
{
    if (versioned) {
        DLManagedTensorVersioned *m = mt;
        if (m->deleter) m->deleter(m);
    } else {
        DLManagedTensor *m = mt;
        if (m->deleter) m->deleter(m);
    }
}

static void import_release(void *ud, void *data)
{
    ImportHold *h = ud;
    if (h->listed) {
        if (h->prev) h->prev->next = h->next;
        else h->T->imports = h->next;
        if (h->next) h->next->prev = h->prev;
    }
    call_deleter(h->mt, h->versioned);
    mem_free(h);
}

void embed_free_host(tdl_interp *T)
{
    for (int k = 0; k < T->nfns; k++) hostfn_free(&T->I, T->fns[k]);
    mem_free(T->fns);
    T->fns = NULL;
    T->nfns = T->capfns = 0;
    /* Imports still alive are held by exports; they outlive the list. */
    for (ImportHold *h = T->imports; h; h = h->next) h->listed = false;
    T->imports = NULL;
}

static bool dl_dtype(DLDataType d, FcDType *out)
{
    if (d.lanes != 1) return false;
    if (d.code == kDLFloat && d.bits == 32) *out = FC_FLOAT32;
    else if (d.code == kDLFloat && d.bits == 64) *out = FC_FLOAT64;
    else if (d.code == kDLInt && d.bits == 32) *out = FC_INT32;
    else if (d.code == kDLInt && d.bits == 64) *out = FC_INT64;
    else if (d.code == kDLInt && d.bits == 16) *out = FC_INT16;
    else if (d.code == kDLInt && d.bits == 8) *out = FC_INT8;
    else if (d.code == kDLUInt && d.bits == 8) *out = FC_UINT8;
    else if (d.code == kDLFloat && d.bits == 16) *out = FC_FLOAT16;
    else if (d.code == kDLBfloat && d.bits == 16) *out = FC_BFLOAT16;
    else if (d.code == DL_BOOL && d.bits == 8) *out = FC_BOOL;
    else return false;
    return true;
}

static DLDataType dl_dtype_of(FcDType dt)
{
    DLDataType d = {.bits = (uint8_t)(8 * fc_dtype_size(dt)), .lanes = 1};
    d.code = dt == FC_BFLOAT16 ? kDLBfloat : fc_dtype_is_float(dt) ? kDLFloat : dt == FC_BOOL ? DL_BOOL
             : dt == FC_UINT8 ? kDLUInt : kDLInt;
    return d;
}

/* Why dl cannot be imported (false with the error raised), else its geometry. */
static bool dl_check(Interp *I, const char *fn, const DLTensor *dl, Geometry *g, char **base)
{
    FcDType dt;
    DLDevice dev = dl->device;
    if (dev.device_type == kDLCUDA) {
        FcBackend *be;
        FcError e;
        FcDevice d = {FC_DEV_CUDA, dev.device_id};
        if (fc_ctx_backend(I->fc, d, &be, &e) != FC_OK) return err_raise(I, TDL_ERR_DEVICE, "%s: %s", fn, e.msg);
        /* The CUDA backend knows device memory by its own allocations; foreign blocks would be
         * taken for host memory. */
        return err_raise(I, TDL_ERR_DEVICE, "%s: importing CUDA memory is not supported yet: copy the tensor to the "
                         "host first", fn);
    }
    if (dev.device_type != kDLCPU && dev.device_type != kDLCUDAHost && dev.device_type != kDLCUDAManaged)
        return err_raise(I, TDL_ERR_DEVICE, "%s: DLPack device type %d is not supported (host memory only)", fn,
                         (int)dev.device_type);
    if (!dl_dtype(dl->dtype, &dt))
        return err_raise(I, TDL_ERR_TYPE, "%s: DLPack dtype (code %u, %u bits, %u lanes) is not supported: tdl has "
                         "bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32 and float64", fn,
                         dl->dtype.code, dl->dtype.bits,
                         dl->dtype.lanes);
    *base = dl->data ? (char *)dl->data + dl->byte_offset : NULL;
    return geometry(I, fn, dt, dl->ndim, dl->shape, dl->strides, *base, g) && aligned(I, fn, g, *base);
}

static tdl_status dlpack_import(tdl_interp *T, const char *fn, void *mt, bool versioned, tdl_value **out)
{
    if (out) *out = NULL;
    API_MEM_SCOPE(T);
    if (!api_enter(T)) {
        if (mt) call_deleter(mt, versioned);
        return TDL_MISUSE;
    }
    Interp *I = &T->I;
    if (!mt) return err_raise(I, TDL_ERR_VALUE, "%s: the tensor is NULL", fn), TDL_ERROR;
    for (ImportHold *h = T->imports; h; h = h->next)
        if (h->mt == mt)
            return err_raise(I, TDL_ERR_VALUE, "%s: this DLPack tensor is already imported (tdl calls its deleter "
                             "once, when the first import is released)", fn), TDL_ERROR;
    const DLTensor *dl;
    bool copy = false;
    if (versioned) {
        DLManagedTensorVersioned *m = mt;
        if (m->version.major != DLPACK_MAJOR_VERSION) {
            unsigned major = m->version.major, minor = m->version.minor;
            call_deleter(mt, true);
            return err_raise(I, TDL_ERR_VALUE, "%s: DLPack %u.%u is not supported (tdl reads %d.x)", fn, major, minor,
                             DLPACK_MAJOR_VERSION), TDL_ERROR;
        }
        dl = &m->dl_tensor;
        copy = (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    } else {
        dl = &((DLManagedTensor *)mt)->dl_tensor;
    }
    Geometry g;
    char *base = NULL;
    ImportHold *h = NULL;
    FcTensor *t;
    bool ok = need_out(I, fn, out) && dl_check(I, fn, dl, &g, &base);
    if (ok && copy) {
        /* Read-only memory: tdl tensors are writable, so they get a copy, and mt goes at once. */
        ok = copy_in(I, &g, base, fc_cpu(), &t);
        call_deleter(mt, versioned);
        return status(ok && wrap_tensor(T, t, out));
    }
    if (ok && !(h = mem_calloc(1, sizeof *h))) ok = err_nomem(I);
    if (!ok) {
        call_deleter(mt, versioned);
        return TDL_ERROR;
    }
    *h = (ImportHold){.T = T, .mt = mt, .versioned = versioned, .listed = true, .next = T->imports};
    if (T->imports) T->imports->prev = h;
    T->imports = h;
    /* From here the storage's release (which runs on failure too) unlists h and calls the deleter. */
    FcStorage *s = host_storage(I, &g, base, import_release, h);
    if (!s) return TDL_ERROR;
    ok = tensor_over(I, s, &g, &t);
    fc_storage_release(s);
    return status(ok && wrap_tensor(T, t, out));
}

tdl_status tdl_tensor_from_dlpack(tdl_interp *T, struct DLManagedTensor *mt, tdl_value **out)
{
    return dlpack_import(T, "tdl_tensor_from_dlpack", mt, false, out);
}

tdl_status tdl_tensor_from_dlpack_versioned(tdl_interp *T, struct DLManagedTensorVersioned *mt, tdl_value **out)
{
    return dlpack_import(T, "tdl_tensor_from_dlpack_versioned", mt, true, out);
}

/* What an exported DLPack tensor's manager_ctx points at. */
typedef struct ExportHold {
    union {
        DLManagedTensor mt;
        DLManagedTensorVersioned mtv;
    } u;
    tdl_interp *T;
    FcStorage *s;               /* a reference */
    int64_t dims[];             /* shape, then strides */
} ExportHold;

static void export_release(ExportHold *x)
{
    tdl_interp *T = x->T;
    API_MEM_SCOPE(T);       /* the consumer's thread, outside any call: credit what is freed to T */
    bool last = false;
    exports_lock();
    if (T->closed || pthread_equal(T->owner, pthread_self())) {
        fc_storage_release(x->s);
        T->nexports--;
        if (T->closed && T->nexports == 0) {
            fc_ctx_free(T->kept_fc);
            T->kept_fc = NULL;
            last = T->nhandles == 0;
        }
    } else {
        T->pending[T->npending++] = x->s;   /* room reserved at export */
    }
    exports_unlock();
    mem_free(x);
    if (last) embed_free_shell(T);
}

static void export_deleter(DLManagedTensor *self) { export_release(self->manager_ctx); }
static void export_deleter_versioned(DLManagedTensorVersioned *self) { export_release(self->manager_ctx); }

static tdl_status dlpack_export(tdl_interp *T, const char *fn, tdl_value *v, bool versioned, void **out)
{
    if (out) *out = NULL;
    ENTER(T);
    Interp *I = &T->I;
    FcTensor *t;
    if (!need_out(I, fn, out) || !host_tensor(T, fn, v, &t)) return TDL_ERROR;
    if (t->device.type != FC_DEV_CPU)
        return err_raise(I, TDL_ERR_DEVICE, "%s: exporting device memory is not supported yet: copy the tensor to "
                         "the host with .cpu() first", fn), TDL_ERROR;
    ExportHold *x = mem_calloc(1, sizeof *x + 2 * (size_t)(t->ndim ? t->ndim : 1) * sizeof(int64_t));
    if (!x) return err_nomem(I), TDL_ERROR;
    exports_lock();
    bool room = true;
    if (T->cappending < T->nexports + 1) {
        size_t cap = T->cappending ? 2 * T->cappending : 8;
        FcStorage **p = mem_realloc(T->pending, cap * sizeof *p);
        if (p) T->pending = p, T->cappending = cap;
        else room = false;
    }
    if (room) T->nexports++;
    exports_unlock();
    if (!room) {
        mem_free(x);
        return err_nomem(I), TDL_ERROR;
    }
    x->T = T;
    x->s = fc_storage_retain(t->storage);
    memcpy(x->dims, t->shape, (size_t)t->ndim * sizeof *t->shape);
    memcpy(x->dims + t->ndim, t->strides, (size_t)t->ndim * sizeof *t->strides);
    DLTensor dl = {
        .data = t->storage->data ? (char *)t->storage->data + t->offset * (int64_t)fc_dtype_size(t->dtype) : NULL,
        .device = {kDLCPU, 0},
        .ndim = t->ndim,
        .dtype = dl_dtype_of(t->dtype),
        .shape = x->dims,
        .strides = x->dims + t->ndim,
        .byte_offset = 0,
    };
    if (versioned) {
        x->u.mtv = (DLManagedTensorVersioned){
            .version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION},
            .manager_ctx = x,
            .deleter = export_deleter_versioned,
            .flags = 0,
            .dl_tensor = dl,
        };
        *out = &x->u.mtv;
    } else {
        x->u.mt = (DLManagedTensor){.dl_tensor = dl, .manager_ctx = x, .deleter = export_deleter};
        *out = &x->u.mt;
    }
    return TDL_OK;
}

tdl_status tdl_tensor_to_dlpack(tdl_interp *T, tdl_value *v, struct DLManagedTensor **out)
{
    return dlpack_export(T, "tdl_tensor_to_dlpack", v, false, (void **)out);
}

tdl_status tdl_tensor_to_dlpack_versioned(tdl_interp *T, tdl_value *v, struct DLManagedTensorVersioned **out)
{
    return dlpack_export(T, "tdl_tensor_to_dlpack_versioned", v, true, (void **)out);
}
