/* eval.c — the evaluator: walks the resolved syntax tree.
 *
 * Expressions produce new references (eval); statements return a Flow. Locals live in a C array
 * per call (Frame.slots); captured locals are cells. An error travels up as `false`/F_ERROR; the
 * innermost node that sees it attaches its position (Error.need_loc), and every tdl call on the
 * way up adds the caller's position, which builds the traceback. */
#include "interp.h"
#include "mem.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

typedef enum Flow { F_NORMAL, F_RETURN, F_BREAK, F_CONTINUE, F_ERROR } Flow;

typedef struct Frame {
    Value *slots;
    CellObj **free;
    Module *mod;
    LangUnit *unit;
    const char *name;
    bool echo;                  /* interactive top level: print expression statement values */
    FuncObj *fobj;              /* the function running (for super()), or NULL */
} Frame;

/* A new reference in *out; on failure false, with the error set and *out not written. */
static bool eval(Interp *I, Frame *F, Node *n, Value *out);
static Flow exec(Interp *I, Frame *F, Node *st);

/* Whether the C stack is nearly used up (see stack_guard in api.c): deep recursion, of tdl calls or
 * of the walk of a deep expression inside them, then raises RecursionError instead of crashing. */
static inline bool stack_exhausted(Interp *I)
{
    char here;
    return I->stack_base && (size_t)(I->stack_base - &here) > I->stack_budget;
}

/* Attaches the innermost position to an error that has none yet. */
static void locate(Interp *I, Frame *F, uint32_t pos)
{
    if (I->err.need_loc && I->err.kind != TDL_ERR_NONE) {
        I->err.need_loc = false;
        err_trace(I, F->unit->src, pos, F->name);
    }
}

/* ---- names ---- */

static bool load_name(Interp *I, Frame *F, Node *n, Value *out)
{
    Value v;
    switch (n->scope) {
    case SCOPE_LOCAL:
        v = F->slots[n->slot];
        if (v.tag == V_UNDEF) goto unbound;
        break;
    case SCOPE_CELL:
        v = ((CellObj *)F->slots[n->slot].o)->v;
        if (v.tag == V_UNDEF) goto unbound;
        break;
    case SCOPE_FREE:
        v = F->free[n->slot]->v;
        if (v.tag == V_UNDEF)
            return err_raise(I, TDL_ERR_NAME,
                             "cannot access free variable '%s' where it is not associated with a value in enclosing scope",
                             n->str);
        break;
    case SCOPE_GLOBAL:
        v = F->mod->vals[n->slot];
        if (v.tag == V_UNDEF) {
            if (n->builtin >= 0) v = I->builtins->vals[n->builtin];
            else return err_raise(I, TDL_ERR_NAME, "name '%s' is not defined", n->str);
        }
        break;
    default:
        return err_raise(I, TDL_ERR_RUNTIME, "internal error: unresolved name '%s'", n->str);
    }
    val_incref(v);
    *out = v;
    return true;
unbound:
    return err_raise(I, TDL_ERR_UNBOUND_LOCAL,
                     "cannot access local variable '%s' where it is not associated with a value", n->str);
}

static inline void replace(Interp *I, Value *slot, Value v)
{
    Value old = *slot;
    val_incref(v);
    *slot = v;
    val_decref(I, old);
}

static bool store_name(Interp *I, Frame *F, Node *n, Value v)
{
    switch (n->scope) {
    case SCOPE_LOCAL: replace(I, &F->slots[n->slot], v); return true;
    case SCOPE_CELL: replace(I, &((CellObj *)F->slots[n->slot].o)->v, v); return true;
    case SCOPE_FREE: replace(I, &F->free[n->slot]->v, v); return true;
    case SCOPE_GLOBAL: replace(I, &F->mod->vals[n->slot], v); return true;
    default: return err_raise(I, TDL_ERR_RUNTIME, "internal error: unresolved name '%s'", n->str);
    }
}

/* ---- assignment ---- */

static bool assign(Interp *I, Frame *F, Node *t, Value v);

static bool unpack(Interp *I, Frame *F, Node *t, Value v)
{
    Value tmp = v_undef();
    const Value *items;
    size_t n;
    if (v.tag == V_TUPLE) {
        items = as_tuple(v)->items;
        n = as_tuple(v)->n;
    } else if (v.tag == V_LIST) {
        items = as_list(v)->items;
        n = as_list(v)->n;
    } else {
        /* Anything iterable: collect it first. */
        ListObj *l;
        if (!list_from_iterable(I, v, &l)) {
            if (I->err.kind == TDL_ERR_TYPE)
                err_raise(I, TDL_ERR_TYPE, "cannot unpack non-iterable %s object", val_type_name(v));
            return false;
        }
        tmp = v_obj(V_LIST, &l->h);
        items = l->items;
        n = l->n;
    }
    bool ok = true;
    int star = -1, k0 = 0;
    for (Node *e = t->a; e; e = e->next, k0++)
        if (e->kind == N_STARRED) star = k0;
    if (star >= 0) {
        /* a, *b, c = v: b takes a list of what the others leave */
        size_t fixed = (size_t)t->count - 1;
        if (n < fixed) {
            ok = err_raise(I, TDL_ERR_VALUE, "not enough values to unpack (expected at least %zu, got %zu)", fixed, n);
        } else {
            val_incref(v);
            size_t k = 0;
            for (Node *e = t->a; e && ok; e = e->next) {
                if (e->kind != N_STARRED) {
                    ok = assign(I, F, e, items[k++]);
                    continue;
                }
                size_t m = n - fixed;
                ListObj *l = list_alloc(I, m);
                ok = l != NULL;
                for (size_t j = 0; ok && j < m; j++) {
                    l->items[j] = items[k + j];
                    val_incref(items[k + j]);
                }
                if (ok) {
                    ok = assign(I, F, e->a, v_obj(V_LIST, &l->h));
                    val_decref(I, v_obj(V_LIST, &l->h));
                }
                k += m;
            }
            val_decref(I, v);
        }
    } else if (n != (size_t)t->count) {
        ok = n > (size_t)t->count
                 ? err_raise(I, TDL_ERR_VALUE, "too many values to unpack (expected %d)", t->count)
                 : err_raise(I, TDL_ERR_VALUE, "not enough values to unpack (expected %d, got %zu)", t->count, n);
    } else {
        /* Hold the source: assigning may drop the last other reference to it. */
        val_incref(v);
        size_t k = 0;
        for (Node *e = t->a; e && ok; e = e->next, k++) ok = assign(I, F, e, items[k]);
        val_decref(I, v);
    }
    val_decref(I, tmp);
    return ok;
}

static bool eval_index(Interp *I, Frame *F, Node *n, Value *out);

/* The object and index of a subscript t[i] (reading, writing or updating it), as new references. */
static bool eval_subscript_parts(Interp *I, Frame *F, Node *n, Value *obj, Value *idx)
{
    if (!eval(I, F, n->a, obj)) return false;
    if (!eval_index(I, F, n->b, idx)) {
        val_decref(I, *obj);
        return false;
    }
    return true;
}

/* A dim or dim list made without a name takes the name of the variable it is first stored in
 * (`i, j = dims(2)`), as functorch.dim names dims after the variables they are assigned to. */
static bool name_dims(Interp *I, Node *t, Value v)
{
    if (v.tag == V_DIM && !as_dim(v)->named && !fc_dim_set_name(as_dim(v), t->str)) return err_nomem(I);
    if (v.tag == V_DIMLIST && !as_dimlist(v)->named) {
        char *s = mem_strdup(t->str);
        if (!s) return err_nomem(I);
        mem_free(as_dimlist(v)->name);
        as_dimlist(v)->name = s;
        as_dimlist(v)->named = true;
    }
    return true;
}

static bool assign(Interp *I, Frame *F, Node *t, Value v)
{
    switch (t->kind) {
    case N_NAME:
        return name_dims(I, t, v) && store_name(I, F, t, v);
    case N_TUPLE: case N_LIST:
        return unpack(I, F, t, v);
    case N_SUBSCRIPT: {
        Value obj, idx;
        if (!eval_subscript_parts(I, F, t, &obj, &idx)) return false;
        bool ok = val_setitem(I, obj, idx, v);
        val_decref(I, obj);
        val_decref(I, idx);
        if (!ok) locate(I, F, t->pos);
        return ok;
    }
    case N_ATTR: {
        Value obj;
        if (!eval(I, F, t->a, &obj)) return false;
        bool ok = val_setattr(I, obj, t->str, v);
        val_decref(I, obj);
        if (!ok) locate(I, F, t->pos);
        return ok;
    }
    default:
        return err_raise(I, TDL_ERR_SYNTAX, "cannot assign to %s", lang_node_kind_name(t->kind));
    }
}

/* del t: names become unbound, items and attributes are deleted, left to right. */
static bool delete(Interp *I, Frame *F, Node *t)
{
    switch (t->kind) {
    case N_NAME: {
        Value v;
        if (!load_name(I, F, t, &v)) {
            locate(I, F, t->pos);
            return false;
        }
        val_decref(I, v);
        if (t->scope == SCOPE_GLOBAL && F->mod->vals[t->slot].tag == V_UNDEF) {
            /* only the builtin of that name exists: Python's del says the name is not defined */
            err_raise(I, TDL_ERR_NAME, "name '%s' is not defined", t->str);
            locate(I, F, t->pos);
            return false;
        }
        Value *slot = t->scope == SCOPE_LOCAL ? &F->slots[t->slot]
                    : t->scope == SCOPE_CELL ? &((CellObj *)F->slots[t->slot].o)->v
                    : t->scope == SCOPE_FREE ? &F->free[t->slot]->v : &F->mod->vals[t->slot];
        Value old = *slot;
        *slot = v_undef();
        val_decref(I, old);
        return true;
    }
    case N_TUPLE: case N_LIST:
        for (Node *e = t->a; e; e = e->next)
            if (!delete(I, F, e)) return false;
        return true;
    case N_SUBSCRIPT: {
        Value obj, idx;
        if (!eval_subscript_parts(I, F, t, &obj, &idx)) return false;
        bool ok = val_delitem(I, obj, idx);
        val_decref(I, obj);
        val_decref(I, idx);
        if (!ok) locate(I, F, t->pos);
        return ok;
    }
    case N_ATTR: {
        Value obj;
        if (!eval(I, F, t->a, &obj)) return false;
        bool ok = val_delattr(I, obj, t->str);
        val_decref(I, obj);
        if (!ok) locate(I, F, t->pos);
        return ok;
    }
    default:
        return err_raise(I, TDL_ERR_SYNTAX, "cannot delete %s", lang_node_kind_name(t->kind));
    }
}

/* ---- calls ---- */

/* The error paths of bind_args are not inlined into it (nor it into call_func): their buffers
 * would sit in every tdl call's C frame, and deep recursion would hit the stack guard sooner. */

/* TypeError "f() missing 2 required keyword-only arguments: 'c' and 'e'" for the unset slots
 * [from, to) of a call's frame. */
__attribute__((noinline))
static bool missing_args(Interp *I, LangFunc *fn, const Value *slots, int from, int to, const char *what)
{
    int missing = 0, k = 0;
    for (int i = from; i < to; i++) missing += slots[i].tag == V_UNDEF;
    Buf b = {0};
    for (int i = from; i < to; i++) {
        if (slots[i].tag != V_UNDEF) continue;
        k++;
        buf_printf(&b, "%s'%s'", k == 1 ? "" : k == missing ? (missing > 2 ? ", and " : " and ") : ", ",
                   fn->slot_names[i]);
    }
    if (b.nomem) err_nomem(I);
    else err_raise(I, TDL_ERR_TYPE, "%s() missing %d required %s argument%s: %s", fn->qualname, missing, what,
                   missing == 1 ? "" : "s", b.p ? b.p : "");
    buf_free(&b);
    return false;
}

/* TypeError "f() takes 2 positional arguments but 3 were given", CPython's wording. */
__attribute__((noinline))
static bool too_many_positional(Interp *I, LangFunc *fn, const Value *slots, int nargs)
{
    int np = fn->nparams, npdefaults = 0, d = 0, kwgiven = 0;
    for (Node *p = fn->params; p && d < np; p = p->next, d++) npdefaults += p->a != NULL;
    for (int i = np; i < np + fn->nkwonly; i++) kwgiven += slots[i].tag != V_UNDEF;
    char sig[64], kwsig[96] = "";
    if (npdefaults) snprintf(sig, sizeof sig, "from %d to %d", np - npdefaults, np);
    else snprintf(sig, sizeof sig, "%d", np);
    if (kwgiven)
        snprintf(kwsig, sizeof kwsig, " positional argument%s (and %d keyword-only argument%s)",
                 nargs != 1 ? "s" : "", kwgiven, kwgiven != 1 ? "s" : "");
    return err_raise(I, TDL_ERR_TYPE, "%s() takes %s positional argument%s but %d%s %s given", fn->qualname, sig,
                     npdefaults || np != 1 ? "s" : "", nargs, kwsig, nargs == 1 && !kwgiven ? "was" : "were");
}

/* TypeError "f() got some positional-only arguments passed as keyword arguments: 'a, b'" when
 * some of the keywords name positional-only parameters (f has no **kwargs), as CPython: whether
 * it raised. */
__attribute__((noinline))
static bool posonly_as_keyword(Interp *I, LangFunc *fn, const char *const *kwnames, int nkw)
{
    Buf b = {0};
    int n = 0;
    for (int i = 0; i < fn->nposonly; i++)
        for (int k = 0; k < nkw; k++)
            if (strcmp(fn->slot_names[i], kwnames[k]) == 0) {
                buf_printf(&b, "%s%s", n++ ? ", " : "", kwnames[k]);
                break;
            }
    if (b.nomem) err_nomem(I);
    else if (n)
        err_raise(I, TDL_ERR_TYPE, "%s() got some positional-only arguments passed as keyword arguments: '%s'",
                  fn->qualname, b.p);
    buf_free(&b);
    return b.nomem || n;
}

/* Binds a call's arguments to the parameters' slots (all V_UNDEF on entry; the caller releases
 * them, failure or not) in CPython's order, with its messages: positional ones, the rest into
 * *args, keywords by name (unknown ones into **kwargs), then defaults. */
static bool bind_args(Interp *I, FuncObj *f, Value *slots, const Value *args, int nargs,
                      const char *const *kwnames, int nkw)
{
    LangFunc *fn = f->fn;
    int np = fn->nparams, nnamed = np + fn->nkwonly;
    DictObj *kwd = NULL;
    if (fn->varkw) {
        if (!(kwd = dict_alloc(I, V_DICT))) return false;
        slots[nnamed + fn->varargs] = v_obj(V_DICT, &kwd->h);
    }
    int n = nargs < np ? nargs : np;
    for (int i = 0; i < n; i++) {
        val_incref(args[i]);
        slots[i] = args[i];
    }
    if (fn->varargs) {
        TupleObj *t = tuple_alloc(I, (size_t)(nargs - n));
        if (!t) return false;
        for (int i = n; i < nargs; i++) {
            val_incref(args[i]);
            t->items[i - n] = args[i];
        }
        slots[nnamed] = v_obj(V_TUPLE, &t->h);
    }
    for (int k = 0; k < nkw; k++) {
        int i = fn->nposonly;
        while (i < nnamed && strcmp(fn->slot_names[i], kwnames[k]) != 0) i++;
        if (i == nnamed) {
            if (!kwd && (!fn->nposonly || !posonly_as_keyword(I, fn, kwnames, nkw)))
                return err_raise(I, TDL_ERR_TYPE, "%s() got an unexpected keyword argument '%s'", fn->qualname, kwnames[k]);
            if (!kwd) return false;
            Value key;
            if (!str_from_cstr(I, kwnames[k], &key)) return false;
            bool ok = dict_set(I, kwd, key, args[nargs + k]);
            val_decref(I, key);
            if (!ok) return false;
            continue;
        }
        if (slots[i].tag != V_UNDEF)
            return err_raise(I, TDL_ERR_TYPE, "%s() got multiple values for argument '%s'", fn->qualname, kwnames[k]);
        val_incref(args[nargs + k]);
        slots[i] = args[nargs + k];
    }
    if (nargs > np && !fn->varargs) return too_many_positional(I, fn, slots, nargs);
    int i = 0, k = 0;
    for (Node *p = fn->params; p && i < nnamed; p = p->next, i++) {
        if (!p->a) continue;
        if (slots[i].tag == V_UNDEF) {
            slots[i] = f->defaults[k];
            val_incref(slots[i]);
        }
        k++;
    }
    for (i = 0; i < np && slots[i].tag != V_UNDEF; i++) {}
    if (i < np) return missing_args(I, fn, slots, 0, np, "positional");
    for (i = np; i < nnamed && slots[i].tag != V_UNDEF; i++) {}
    if (i < nnamed) return missing_args(I, fn, slots, np, nnamed, "keyword-only");
    return true;
}

static bool gen_function_new(Interp *I, FuncObj *f, Value *slots, Value *out);

static bool call_func(Interp *I, FuncObj *f, const Value *args, int nargs, const char *const *kwnames,
                      int nkw, Value *out)
{
    LangFunc *fn = f->fn;
    int limit = I->cfg.recursion_limit > 0 ? I->cfg.recursion_limit : 1000;
    if (!interp_check_interrupt(I)) return false;
    if (I->depth >= limit || stack_exhausted(I))
        return err_raise(I, TDL_ERR_RECURSION, "maximum recursion depth exceeded");
    Value slots[fn->nslots + 1];
    for (int i = 0; i < fn->nslots; i++) slots[i] = v_undef();
    bool ok = bind_args(I, f, slots, args, nargs, kwnames, nkw);
    for (int i = 0; ok && i < fn->nslots; i++) {
        if (!fn->slot_is_cell[i]) continue;
        CellObj *c = cell_new(I, slots[i]);
        if (!c) {
            ok = false;
            break;
        }
        val_decref(I, slots[i]);
        slots[i] = v_obj(V_CELL, &c->h);
    }
    if (ok && fn->is_gen) {
        ok = gen_function_new(I, f, slots, out);     /* takes the slots' references on success */
    } else if (ok) {
        Frame fr = {slots, f->cells, f->module, f->unit, fn->name, false, f};
        LangSource *stmt_src = I->stmt_src;
        uint32_t stmt_pos = I->stmt_pos;
        CallSite site = {stmt_src, stmt_pos, I->callsite};
        I->callsite = &site;
        I->depth++;
        Flow fl = exec(I, &fr, fn->body);
        I->depth--;
        I->callsite = site.up;
        I->stmt_src = stmt_src;
        I->stmt_pos = stmt_pos;
        if (fl == F_ERROR) {
            ok = false;
        } else if (fl == F_RETURN) {
            *out = I->ret;
            I->ret = v_undef();
        } else {
            *out = v_none();
        }
        if (!ok) I->err.need_loc = true;    /* the call site adds its own line */
    }
    for (int i = 0; i < fn->nslots; i++) val_decref(I, slots[i]);
    return ok;
}

bool call_value(Interp *I, Value f, const Value *args, int nargs, const char *const *kwnames, int nkw,
                Value *out)
{
    switch (f.tag) {
    case V_FUNC:
        return call_func(I, as_func(f), args, nargs, kwnames, nkw, out);
    case V_BUILTIN: {
        const BuiltinObj *b = as_builtin(f);
        if (!b->unbound) return builtin_call(I, b->def, b->self, args, nargs, kwnames, nkw, out);
        /* str.lower(s): s.lower(), s checked as CPython's method descriptor checks it */
        const char *tn = type_name((TypeId)b->self.i);
        if (nargs == 0)
            return err_raise(I, TDL_ERR_TYPE, "unbound method %s.%s() needs an argument", tn, b->def->name);
        TypeId rt = val_type(args[0]);
        if (rt != (TypeId)b->self.i && !(rt == T_BOOL && (TypeId)b->self.i == T_INT))    /* bool is an int */
            return err_raise(I, TDL_ERR_TYPE, "descriptor '%s' for '%s' objects doesn't apply to a '%s' object",
                             b->def->name, tn, val_type_name(args[0]));
        return builtin_call(I, b->def, args[0], args + 1, nargs - 1, kwnames, nkw, out);
    }
    case V_TYPE:
        return type_call(I, (TypeId)f.i, args, nargs, kwnames, nkw, out);
    case V_EXCTYPE:
        if (nkw) return err_raise(I, TDL_ERR_TYPE, "%s() takes no keyword arguments", tdl_error_kind_name((tdl_error_kind)f.i));
        return exc_new(I, (tdl_error_kind)f.i, args, nargs, out);
    case V_CLASS: case V_METHOD: case V_INSTANCE: case V_DESCR:
        return class_call(I, f, args, nargs, kwnames, nkw, out);
    default:
        return err_raise(I, TDL_ERR_TYPE, "'%s' object is not callable", val_type_name(f));
    }
}

/* Appends what CPython's call errors name the callee by (_PyObject_FunctionStr): "mod.qualname()"
 * for functions and classes, "type.name()" for methods of builtin types, "name()" for builtins,
 * builtin types and exception classes, the repr of anything else. method: a builtin type's method
 * called on self (f unset). Builtins of modules (math.floor) go by their name alone. */
static void callee_str(Interp *I, Value f, const BuiltinDef *method, Value self, Buf *b)
{
    if (method) {
        buf_printf(b, "%s.%s()", val_type_name(self), method->name);
        return;
    }
    switch (f.tag) {
    case V_FUNC:
        buf_printf(b, "%s.%s()", as_func(f)->module->name, as_func(f)->fn->qualname);
        return;
    case V_METHOD:
        callee_str(I, ((MethodObj *)f.o)->func, NULL, v_undef(), b);
        return;
    case V_BUILTIN:
        if (as_builtin(f)->unbound)
            buf_printf(b, "%s.", type_name((TypeId)as_builtin(f)->self.i));
        else if (as_builtin(f)->self.tag != V_UNDEF)
            buf_printf(b, "%s.", val_type_name(as_builtin(f)->self));
        buf_printf(b, "%s()", as_builtin(f)->def->name);
        return;
    case V_CLASS:
        buf_printf(b, "%s.%s()", ((ClassObj *)f.o)->module, ((ClassObj *)f.o)->qualname);
        return;
    case V_TYPE:
        buf_printf(b, "%s()", type_name((TypeId)f.i));
        return;
    case V_EXCTYPE:
        buf_printf(b, "%s()", tdl_error_kind_name((tdl_error_kind)f.i));
        return;
    case V_INSTANCE:    /* object.__repr__'s form: a user __repr__ is not run with an error pending */
        buf_printf(b, "<%s.%s object at %p>", ((InstObj *)f.o)->cls->module, ((InstObj *)f.o)->cls->qualname, f.o);
        return;
    default:
        if (!val_repr(I, f, b))
            err_clear(I);
    }
}

/* Raises TypeError "<callee> <message>" (callee_str names the callee, as CPython's messages do). */
static bool call_arg_error(Interp *I, Value f, const BuiltinDef *method, Value self, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static bool call_arg_error(Interp *I, Value f, const BuiltinDef *method, Value self, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    Buf b = {0};
    callee_str(I, f, method, self, &b);
    bool r = err_raise(I, TDL_ERR_TYPE, "%s %s", b.p && !b.nomem ? b.p : "", msg);
    buf_free(&b);
    return r;
}

/* The arguments of a call with *it or **d in it: positional ones in args[0..*nargs), keyword
 * ones after them (names in kwnames; a **d's names are its keys, kept alive in keep). f, method
 * and self: the callee, for the errors' wording (callee_str). */
/* Not inlined: its MAX_ARGS buffer would otherwise sit in eval_call's frame at every level of a
 * nested call, starred or not, and deep call chains (f()()()..., recursion) would run out of C
 * stack thousands of levels sooner (as in the clang build). */
__attribute__((noinline))
static bool eval_star_args(Interp *I, Frame *F, Node *n, Value f, const BuiltinDef *method, Value self, Value *args,
                           const char **kwnames, int *nargs, int *nkw, Value *keep, int *nkeep)
{
    Value kwv[MAX_ARGS + 1];
    int np = 0, nk = 0;
    bool ok = true;
    for (Node *a = n->b; a && ok; a = a->next) {
        Value v;
        if (!(ok = eval(I, F, a->kind == N_KWARG || a->kind == N_STARRED ? a->a : a, &v))) break;
        if (a->kind == N_KWARG) {
            if (np + nk >= MAX_ARGS) ok = err_raise(I, TDL_ERR_TYPE, "too many arguments (at most %d)", MAX_ARGS);
            if (ok) kwnames[nk] = a->str, kwv[nk++] = v;
            else val_decref(I, v);
        } else if (a->kind == N_STARRED && a->op == 2) {
            if (v.tag != V_DICT) {
                ok = call_arg_error(I, f, method, self, "argument after ** must be a mapping, not %s", val_type_name(v));
            } else {
                DictEntry *e;
                for (size_t pos = 0; ok && (e = dict_next(as_dict(v), &pos));) {
                    if (e->key.tag != V_STR) ok = err_raise(I, TDL_ERR_TYPE, "keywords must be strings");
                    else if (np + nk >= MAX_ARGS) ok = err_raise(I, TDL_ERR_TYPE, "too many arguments (at most %d)", MAX_ARGS);
                    if (!ok) break;
                    for (int j = 0; j < nk && ok; j++)
                        if (strcmp(kwnames[j], as_str(e->key)->data) == 0)
                            ok = call_arg_error(I, f, method, self, "got multiple values for keyword argument '%s'", kwnames[j]);
                    if (!ok) break;
                    val_incref(e->key);
                    keep[(*nkeep)++] = e->key;
                    kwnames[nk] = as_str(e->key)->data;
                    val_incref(e->val);
                    kwv[nk++] = e->val;
                }
            }
            val_decref(I, v);
        } else if (a->kind == N_STARRED) {
            ListObj *l;
            if (!(ok = list_from_iterable(I, v, &l))) {
                if (I->err.kind == TDL_ERR_TYPE)
                    call_arg_error(I, f, method, self, "argument after * must be an iterable, not %s", val_type_name(v));
            } else {
                if (np + nk + l->n > MAX_ARGS) ok = err_raise(I, TDL_ERR_TYPE, "too many arguments (at most %d)", MAX_ARGS);
                for (size_t k = 0; ok && k < l->n; k++) {
                    val_incref(l->items[k]);
                    args[np++] = l->items[k];
                }
                val_decref(I, v_obj(V_LIST, &l->h));
            }
            val_decref(I, v);
        } else {
            if (np + nk >= MAX_ARGS) {
                ok = err_raise(I, TDL_ERR_TYPE, "too many arguments (at most %d)", MAX_ARGS);
                val_decref(I, v);
            } else {
                args[np++] = v;
            }
        }
        if (!ok) locate(I, F, a->pos);
    }
    for (int k = 0; k < nk; k++) args[np + k] = kwv[k];
    *nargs = np;
    *nkw = nk;
    return ok;
}

/* super() in a method: super(the class that defined it, its first argument), as CPython finds
 * them through the __class__ cell and the frame. */
__attribute__((noinline))
static bool super_noargs(Interp *I, Frame *F, Value *out)
{
    FuncObj *f = F->fobj;
    if (!f || !f->klass) return err_raise(I, TDL_ERR_RUNTIME, "super(): __class__ cell not found");
    if (f->fn->nslots == 0 || f->fn->nparams + f->fn->varargs == 0)
        return err_raise(I, TDL_ERR_RUNTIME, "super(): no arguments");
    Value self = F->slots[0];
    if (f->fn->slot_is_cell[0]) self = ((CellObj *)self.o)->v;
    if (self.tag == V_UNDEF) return err_raise(I, TDL_ERR_RUNTIME, "super(): arg[0] deleted");
    if (f->fn->nparams == 0) {      /* def m(*args): the first of args */
        if (self.tag != V_TUPLE || as_tuple(self)->n == 0) return err_raise(I, TDL_ERR_RUNTIME, "super(): no arguments");
        self = as_tuple(self)->items[0];
    }
    return super_new(I, v_obj(V_CLASS, &f->klass->h), self, out);
}

static bool eval_call(Interp *I, Frame *F, Node *n, Value *out)
{
    if (n->count > MAX_ARGS) return err_raise(I, TDL_ERR_SYNTAX, "too many arguments (at most %d)", MAX_ARGS);
    bool star = false;
    for (Node *a = n->b; a; a = a->next) star |= a->kind == N_STARRED;
    int cap = star ? MAX_ARGS + 1 : n->count + 1;
    Value args[cap];
    const char *kwnames[cap];
    Value keep[star ? MAX_ARGS + 1 : 1];
    int nargs = 0, nkw = 0, nkeep = 0;
    Value self = v_undef(), f = v_undef();
    const BuiltinDef *method = NULL;
    bool ok;

    /* obj.method(...) on a builtin type calls the method without making a bound object. */
    if (n->a->kind == N_ATTR) {
        if (!eval(I, F, n->a->a, &self)) return false;
        if (self.tag != V_MODULE) method = builtin_method(val_type(self), n->a->str);
        if (!method) {
            ok = val_getattr(I, self, n->a->str, &f);
            val_decref(I, self);
            self = v_undef();
            if (!ok) {
                locate(I, F, n->a->pos);
                return false;
            }
        }
    } else if (!eval(I, F, n->a, &f)) {
        return false;
    }
    ok = true;
    if (star) ok = eval_star_args(I, F, n, f, method, self, args, kwnames, &nargs, &nkw, keep, &nkeep);
    for (Node *a = star ? NULL : n->b; a; a = a->next) {
        if (a->kind == N_KWARG) {
            if (!(ok = eval(I, F, a->a, &args[nargs + nkw]))) break;
            kwnames[nkw++] = a->str;
        } else {
            if (!(ok = eval(I, F, a, &args[nargs]))) break;
            nargs++;
        }
    }
    if (ok) {
        if (method) {
            ok = builtin_call(I, method, self, args, nargs, kwnames, nkw, out);
        } else if (f.tag == V_BUILTIN && as_builtin(f)->def == &super_builtin && nargs == 0 && nkw == 0) {
            ok = super_noargs(I, F, out);
        } else {
            ok = call_value(I, f, args, nargs, kwnames, nkw, out);
        }
    }
    for (int i = 0; i < nargs + nkw; i++) val_decref(I, args[i]);
    for (int i = 0; i < nkeep; i++) val_decref(I, keep[i]);
    val_decref(I, f);
    val_decref(I, self);
    return ok;
}

/* ---- functions ---- */

/* The cells of fn's free variables, taken from frame F (its locals' cells, or its own free
 * cells) into cells[], each a new reference: what a closure or a generator expression holds. */
static void capture_cells(Frame *F, const LangFunc *fn, CellObj **cells)
{
    for (int i = 0; i < fn->nfree; i++) {
        int32_t from = fn->free_from[i];
        CellObj *c = from >= 0 ? (CellObj *)F->slots[from].o : F->free[-1 - from];
        c->h.refcnt++;
        cells[i] = c;
    }
}

static bool make_function(Interp *I, Frame *F, LangFunc *fn, Value *out)
{
    FuncObj *f = func_alloc(I, fn, F->unit, F->mod);
    if (!f) return false;
    Value fv = v_obj(V_FUNC, &f->h);
    int k = 0;
    for (Node *p = fn->params; p; p = p->next) {
        if (!p->a) continue;
        if (!eval(I, F, p->a, &f->defaults[k])) {
            for (int j = k; j < fn->ndefaults; j++) f->defaults[j] = v_none();
            val_decref(I, fv);
            return false;
        }
        k++;
    }
    capture_cells(F, fn, f->cells);
    *out = fv;
    return true;
}

/* Runs the body of class statement st and makes the class (a new reference in *out). Neither it
 * nor exec_definition is inlined into exec, whose C frame every tdl call nests. */
__attribute__((noinline))
static bool make_class(Interp *I, Frame *F, Node *st, Value *out)
{
    LangFunc *fn = st->func;
    if (st->count > MAX_ARGS) return err_raise(I, TDL_ERR_SYNTAX, "too many bases (at most %d)", MAX_ARGS);
    Value bases[st->count + 1], kwv[st->count + 1];
    const char *kwnames[st->count + 1];
    int nb = 0, nkw = 0;
    bool ok = true;
    for (Node *b = st->b; b && ok; b = b->next) {
        if (b->kind == N_KWARG) {
            if ((ok = eval(I, F, b->a, &kwv[nkw]))) kwnames[nkw++] = b->str;
        } else if ((ok = eval(I, F, b, &bases[nb]))) {
            nb++;
        }
    }
    Value slots[fn->nslots + 1];
    CellObj *cells[fn->nfree + 1];
    for (int i = 0; i < fn->nslots; i++) slots[i] = v_undef();
    capture_cells(F, fn, cells);
    for (int i = 0; ok && i < fn->nslots; i++) {
        CellObj *c = fn->slot_is_cell[i] ? cell_new(I, v_undef()) : NULL;
        if (c) slots[i] = v_obj(V_CELL, &c->h);
        else if (fn->slot_is_cell[i]) ok = false;
    }
    int limit = I->cfg.recursion_limit > 0 ? I->cfg.recursion_limit : 1000;
    if (ok && (I->depth >= limit || stack_exhausted(I)))
        ok = err_raise(I, TDL_ERR_RECURSION, "maximum recursion depth exceeded");
    if (ok) {
        Frame fr = {slots, cells, F->mod, F->unit, fn->name, false, NULL};
        LangSource *stmt_src = I->stmt_src;
        uint32_t stmt_pos = I->stmt_pos;
        I->depth++;
        ok = exec(I, &fr, fn->body) != F_ERROR;
        I->depth--;
        I->stmt_src = stmt_src;
        I->stmt_pos = stmt_pos;
        if (!ok) I->err.need_loc = true;    /* the class statement adds its own line */
    }
    DictObj *d = ok ? dict_alloc(I, V_DICT) : NULL;
    ok = d != NULL;
    for (int i = 0; ok && i < fn->nslots; i++) {
        /* the class body's variables, in the order it first binds them, become its attributes */
        Value v = fn->slot_is_cell[i] ? ((CellObj *)slots[i].o)->v : slots[i];
        Value key;
        if (v.tag == V_UNDEF) continue;
        if (!(ok = str_from_cstr(I, fn->slot_names[i], &key))) break;
        ok = dict_set(I, d, key, v);
        val_decref(I, key);
    }
    /* metaclass= is the class's, the other keywords go to __init_subclass__ */
    Value explicit_meta = v_undef();
    for (int i = 0; i < nkw; i++)
        if (strcmp(kwnames[i], "metaclass") == 0) {
            explicit_meta = kwv[i];
            for (int j = i; j + 1 < nkw; j++) kwv[j] = kwv[j + 1], kwnames[j] = kwnames[j + 1];
            nkw--;
            break;
        }
    ClassObj *meta = NULL;
    const char *modname = F->mod->name ? F->mod->name : "__main__";
    /* a metaclass= that is not a class deriving from type is just called, as CPython does */
    bool meta_callable = explicit_meta.tag != V_UNDEF && !(explicit_meta.tag == V_TYPE && explicit_meta.i == T_TYPE) &&
                         !(explicit_meta.tag == V_CLASS && ((ClassObj *)explicit_meta.o)->is_meta);
    if (ok && !meta_callable) ok = class_metaclass(I, explicit_meta, bases, nb, &meta);
    if (ok && (meta || meta_callable)) {
        /* meta(name, bases, namespace, **keywords), the namespace starting with __module__ and
         * __qualname__ as CPython's */
        DictObj *ns = dict_alloc(I, V_DICT);
        TupleObj *bt = ns ? tuple_alloc(I, (size_t)nb) : NULL;
        Value a[3 + st->count + 1], mv, qv;
        a[0] = a[1] = a[2] = v_undef();
        ok = bt != NULL;
        if (ns) a[2] = v_obj(V_DICT, &ns->h);
        if (bt) {
            a[1] = v_obj(V_TUPLE, &bt->h);
            for (int i = 0; i < nb; i++) bt->items[i] = bases[i], val_incref(bases[i]);
        }
        if (ok && (ok = str_from_cstr(I, modname, &mv))) {
            ok = dict_set_str(I, ns, "__module__", mv);
            val_decref(I, mv);
        }
        if (ok && (ok = str_from_cstr(I, fn->qualname, &qv))) {
            ok = dict_set_str(I, ns, "__qualname__", qv);
            val_decref(I, qv);
        }
        DictEntry *de;
        for (size_t pos = 0; ok && (de = dict_next(d, &pos));) ok = dict_set(I, ns, de->key, de->val);
        if (ok) ok = str_from_cstr(I, fn->name, &a[0]);
        for (int i = 0; ok && i < nkw; i++) a[3 + i] = kwv[i];
        if (ok && meta_callable) ok = call_value(I, explicit_meta, a, 3, kwnames, nkw, out);
        else if (ok) ok = class_meta_call(I, meta, a, 3, kwnames, nkw, out);
        for (int i = 0; i < 3; i++) val_decref(I, a[i]);
    } else if (ok) {
        ok = class_new(I, fn->name, fn->qualname, modname, bases, nb, d, out);
        if (ok && !(ok = class_init_subclass(I, *out, kwv, kwnames, nkw))) val_decref(I, *out);
    }
    if (explicit_meta.tag != V_UNDEF) val_decref(I, explicit_meta);
    for (int i = 0; i < nkw; i++) val_decref(I, kwv[i]);
    if (d) val_decref(I, v_obj(V_DICT, &d->h));
    for (int i = 0; i < fn->nslots; i++) val_decref(I, slots[i]);
    for (int i = 0; i < fn->nfree; i++) val_decref(I, v_obj(V_CELL, &cells[i]->h));
    for (int i = 0; i < nb; i++) val_decref(I, bases[i]);
    return ok;
}

/* A def or class statement's value: its decorators are evaluated first (outermost first), then
 * the function or class is made and they are applied innermost first, as in Python. */
__attribute__((noinline))
static bool exec_definition(Interp *I, Frame *F, Node *st, Value *out)
{
    int nd = 0;
    for (Node *d = st->d; d; d = d->next) nd++;
    Value decos[nd + 1];
    int k = 0;
    bool ok = true;
    for (Node *d = st->d; d && ok; d = d->next)
        if ((ok = eval(I, F, d, &decos[k]))) k++;
    Value v = v_undef();
    if (ok) ok = st->kind == N_CLASS ? make_class(I, F, st, &v) : make_function(I, F, st->func, &v);
    for (int j = k - 1; ok && j >= 0; j--) {
        Value r;
        ok = call_value(I, decos[j], &v, 1, NULL, 0, &r);
        val_decref(I, v);
        v = ok ? r : v_undef();
    }
    for (int j = 0; j < k; j++) val_decref(I, decos[j]);
    if (ok) *out = v;
    return ok;
}

/* ---- expressions ---- */

/* The items of a starred x in a display or an index ([*x], (*x,), {*x}, t[*x]) appended to l, with
 * CPython's error when x has no iteration protocol. */
static bool splice_starred(Interp *I, ListObj *l, Value x)
{
    bool yes;
    if (!val_iterable(I, x, &yes)) return false;
    if (!yes) return err_raise(I, TDL_ERR_TYPE, "Value after * must be an iterable, not %s", val_type_name(x));
    return list_extend_from_iterable(I, l, x);
}

/* t[i, *rest]: the index tuple with the items of each *rest spliced in (Python 3.11); not inlined
 * into eval_index, which every subscript in a nested expression runs. */
__attribute__((noinline))
static bool eval_star_index(Interp *I, Frame *F, Node *n, Value *out)
{
    ListObj *l = list_alloc(I, 0);
    if (!l) return false;
    Value lv = v_obj(V_LIST, &l->h);
    bool ok = true;
    for (Node *e = n->a; e && ok; e = e->next) {
        Value x;
        if (!(ok = e->kind == N_STARRED ? eval(I, F, e->a, &x) : eval_index(I, F, e, &x))) break;
        if (e->kind != N_STARRED) {
            ok = list_append(I, l, x);
        } else if (!(ok = splice_starred(I, l, x))) {
            locate(I, F, e->pos);
        }
        val_decref(I, x);
    }
    if (!ok) {
        val_decref(I, lv);
        return false;
    }
    return tuple_from_list(I, l, out);
}

/* A subscript's index: slices become slice objects, a:b inside a tuple too. */
static bool eval_index(Interp *I, Frame *F, Node *n, Value *out)
{
    if (n->kind == N_SLICE) {
        Value parts[3] = {v_none(), v_none(), v_none()};
        Node *ns[3] = {n->a, n->b, n->c};
        for (int k = 0; k < 3; k++) {
            if (ns[k] && !eval(I, F, ns[k], &parts[k])) {
                for (int j = 0; j < k; j++) val_decref(I, parts[j]);
                return false;
            }
        }
        bool ok = slice_new(I, parts[0], parts[1], parts[2], out);
        for (int k = 0; k < 3; k++) val_decref(I, parts[k]);
        return ok;
    }
    if (n->kind == N_TUPLE && !n->parens) {
        for (Node *e = n->a; e; e = e->next)
            if (e->kind == N_STARRED) return eval_star_index(I, F, n, out);
        TupleObj *t = tuple_alloc(I, (size_t)n->count);
        if (!t) return false;
        size_t k = 0;
        for (Node *e = n->a; e; e = e->next, k++) {
            if (!eval_index(I, F, e, &t->items[k])) {
                t->items[k] = v_none();
                val_decref(I, v_obj(V_TUPLE, &t->h));
                return false;
            }
        }
        *out = v_obj(V_TUPLE, &t->h);
        return true;
    }
    return eval(I, F, n, out);
}

/* A list or tuple display. Like every evaluator here, it sets *out only on success: a caller
 * may be filling a slot of a container it frees on failure (a[0, [y]]). */
static bool eval_seq(Interp *I, Frame *F, Node *n, Value *out)
{
    bool star = false;
    for (Node *e = n->a; e; e = e->next) star |= e->kind == N_STARRED;
    if (star) {     /* [a, *b]: built as a list, items of each *b spliced in */
        ListObj *l = list_alloc(I, 0);
        if (!l) return false;
        Value lv = v_obj(V_LIST, &l->h);
        for (Node *e = n->a; e; e = e->next) {
            Value x;
            if (!eval(I, F, e->kind == N_STARRED ? e->a : e, &x)) {
                val_decref(I, lv);
                return false;
            }
            bool ok = e->kind != N_STARRED ? list_append(I, l, x) : splice_starred(I, l, x);
            val_decref(I, x);
            if (!ok) {
                locate(I, F, e->pos);
                val_decref(I, lv);
                return false;
            }
        }
        if (n->kind == N_LIST) {
            *out = lv;
            return true;
        }
        return tuple_from_list(I, l, out);
    }
    Value seq;
    Value *dst;
    if (n->kind == N_LIST) {
        ListObj *l = list_alloc(I, (size_t)n->count);
        if (!l) return false;
        seq = v_obj(V_LIST, &l->h);
        dst = l->items;
    } else {
        TupleObj *t = tuple_alloc(I, (size_t)n->count);
        if (!t) return false;
        seq = v_obj(V_TUPLE, &t->h);
        dst = t->items;
    }
    size_t k = 0;
    for (Node *e = n->a; e; e = e->next, k++) {
        if (!eval(I, F, e, &dst[k])) {
            dst[k] = v_none();          /* whatever a failed evaluator left there is not ours */
            val_decref(I, seq);
            return false;
        }
    }
    *out = seq;
    return true;
}

/* A dict or set display: items are evaluated left to right (a dict's key before its value) and
 * inserted as they come, so a repeated key keeps its first position and its last value. */
static bool eval_dict(Interp *I, Frame *F, Node *n, Value *out)
{
    DictObj *d = dict_alloc(I, n->kind == N_DICT ? V_DICT : V_SET);
    if (!d) return false;
    Value dv = v_obj(d->h.tag, &d->h);
    for (Node *e = n->a; e; e = e->next) {
        Value k, v = v_undef();
        if (e->kind == N_STARRED && e->op == 2) {  /* {**m}: m's items, in its order */
            if (!eval(I, F, e->a, &k)) goto fail;
            bool ok = k.tag == V_DICT;
            if (!ok) err_raise(I, TDL_ERR_TYPE, "'%s' object is not a mapping", val_type_name(k));
            DictEntry *de;
            for (size_t pos = 0; ok && (de = dict_next(as_dict(k), &pos));) ok = dict_set(I, d, de->key, de->val);
            val_decref(I, k);
            if (!ok) {
                locate(I, F, e->a->pos);
                goto fail;
            }
            continue;
        }
        if (e->kind == N_STARRED) {     /* {*it}: its items */
            if (!eval(I, F, e->a, &k)) goto fail;
            ListObj *m = NULL;
            bool ok = list_from_iterable(I, k, &m);
            val_decref(I, k);
            for (size_t j = 0; ok && j < m->n; j++) ok = dict_set(I, d, m->items[j], v_undef());
            if (m) val_decref(I, v_obj(V_LIST, &m->h));
            if (!ok) {
                locate(I, F, e->pos);
                goto fail;
            }
            continue;
        }
        if (!eval(I, F, n->kind == N_DICT ? e->a : e, &k)) goto fail;
        if (n->kind == N_DICT && !eval(I, F, e->b, &v)) {
            val_decref(I, k);
            goto fail;
        }
        bool ok = dict_set(I, d, k, v);
        val_decref(I, k);
        val_decref(I, v);
        if (!ok) {
            locate(I, F, n->kind == N_DICT ? e->a->pos : e->pos);
            goto fail;
        }
    }
    *out = dv;
    return true;
fail:
    val_decref(I, dv);
    return false;
}

/* ---- f-strings ---- */

/* Appends the text of f-string n (its parts in order) to b. */
static bool fstring_text(Interp *I, Frame *F, Node *n, Buf *b)
{
    for (Node *part = n->a; part; part = part->next) {
        if (part->kind == N_STR) {
            buf_put(b, part->str, part->len);
            continue;
        }
        Value v;
        if (!eval(I, F, part->a, &v)) return false;
        Buf spec = {0};
        bool ok = !part->b || fstring_text(I, F, part->b, &spec);
        if (ok && spec.nomem) ok = err_nomem(I);
        if (ok) ok = val_format(I, v, (char)part->op, spec.p ? spec.p : "", spec.n, b);
        buf_free(&spec);
        val_decref(I, v);
        if (!ok) {
            locate(I, F, part->a->pos);
            return false;
        }
    }
    if (b->nomem) return err_nomem(I);
    return true;
}

/* ---- comprehensions and generator expressions ---- */

static bool truthy(Interp *I, Value v, bool *out);

/* The running state of a comprehension: a GenObj whose slot `.0` holds the first iterable, with
 * the cells it captures from F and cells for its own captured locals. */
static GenObj *gen_new(Interp *I, Frame *F, LangFunc *fn, Value iterable)
{
    GenObj *g = obj_alloc(I, sizeof *g, V_GEN, true);
    if (!g) return NULL;
    g->fn = fn;
    g->unit = lang_unit_retain(F->unit);
    g->module = F->mod;
    F->mod->h.refcnt++;
    g->slots = mem_malloc((size_t)(fn->nslots ? fn->nslots : 1) * sizeof *g->slots);
    if (fn->nfree) g->cells = mem_calloc((size_t)fn->nfree, sizeof *g->cells);
    if (!g->slots || (fn->nfree && !g->cells)) {
        mem_free(g->slots);
        g->slots = NULL;
        val_decref(I, v_obj(V_GEN, &g->h));
        err_nomem(I);
        return NULL;
    }
    for (int i = 0; i < fn->nslots; i++) g->slots[i] = v_undef();
    val_incref(iterable);
    g->slots[0] = iterable;
    for (int i = 1; i < fn->nslots; i++) {
        if (!fn->slot_is_cell[i]) continue;
        CellObj *c = cell_new(I, v_undef());
        if (!c) {
            val_decref(I, v_obj(V_GEN, &g->h));
            return NULL;
        }
        g->slots[i] = v_obj(V_CELL, &c->h);
    }
    capture_cells(F, fn, g->cells);
    return g;
}

/* Enters the N_FOR clause f: its iterator becomes the innermost loop's. */
static bool gen_enter(Interp *I, Frame *F, GenObj *g, Node *f)
{
    if (g->nloops == g->cap) {
        int cap = g->cap ? g->cap * 2 : 4;
        Node **loops = mem_realloc(g->loops, (size_t)cap * sizeof *loops);
        if (loops) g->loops = loops;
        Iter *its = loops ? mem_realloc(g->its, (size_t)cap * sizeof *its) : NULL;
        if (!its) return err_nomem(I);
        g->its = its;
        g->cap = cap;
    }
    Value seq;
    if (!eval(I, F, f->b, &seq)) return false;
    bool ok = iter_begin(I, seq, &g->its[g->nloops]);
    val_decref(I, seq);
    if (!ok) {
        locate(I, F, f->b->pos);
        return false;
    }
    g->loops[g->nloops++] = f;
    return true;
}

/* Runs g's clauses up to its next element: entering loops and testing conditions from the
 * statement `n` on, or (n NULL) going on with the innermost loop's next item. */
static bool gen_step(Interp *I, Frame *F, GenObj *g, Value *out, Value *out2, bool *done)
{
    Node *n = g->started ? NULL : g->fn->body;
    g->started = true;
    for (;;) {
        if (!n) {
            if (g->nloops == 0) {
                *done = true;
                return true;
            }
            Iter *it = &g->its[g->nloops - 1];
            Value x;
            bool end;
            if (!interp_check_interrupt(I) || !iter_next(I, it, &x, &end)) {
                locate(I, F, g->loops[g->nloops - 1]->b->pos);
                return false;
            }
            if (end) {
                iter_end(I, it);
                g->nloops--;
                continue;
            }
            Node *f = g->loops[g->nloops - 1];
            bool ok = assign(I, F, f->a, x);
            val_decref(I, x);
            if (!ok) {
                locate(I, F, f->a->pos);
                return false;
            }
            n = f->c;
            continue;
        }
        switch (n->kind) {
        case N_FOR:
            if (!gen_enter(I, F, g, n)) return false;
            n = NULL;
            break;
        case N_IF: {
            Value c;
            bool t;
            if (!eval(I, F, n->a, &c)) return false;
            bool ok = truthy(I, c, &t);
            val_decref(I, c);
            if (!ok) {
                locate(I, F, n->a->pos);
                return false;
            }
            n = t ? n->b : NULL;
            break;
        }
        default:    /* N_COMP_EMIT */
            if (!eval(I, F, n->a, out)) return false;
            *out2 = v_undef();
            if (n->b && !eval(I, F, n->b, out2)) {
                val_decref(I, *out);
                return false;
            }
            *done = false;
            return true;
        }
    }
}

/* ---- generator functions ----
 *
 * A generator function's body runs on its own C stack (a ucontext coroutine), so that the
 * evaluator stays one recursive tree walker: `yield` saves nothing but switches back to whoever
 * resumed the generator, with every frame of the body (loops' iterators, try and with blocks)
 * waiting on that stack. Generator expressions keep their own cheaper scheme (gen_step): their
 * body is only loops and conditions, which GenObj records explicitly. A generator that is freed
 * while suspended is closed: GeneratorExit is raised at its yield and the stack unwinds through
 * its finally blocks, dropping every reference it holds, before the stack is unmapped. */

#define GEN_STACK_SIZE ((size_t)4 << 20)    /* reserved, not committed: pages come as touched */
#define GEN_STACK_MARGIN ((size_t)512 << 10)   /* left to C code below the evaluator's guard */

typedef struct GenCo {
    Interp *I;
    ucontext_t ctx, back;       /* the body's context; the resumer's */
    char *stack;                /* mmap'd, lowest page a guard; NULL before the first resume */
    FuncObj *func;              /* a reference: its frame's function (super() needs it) */
    Value out;                  /* the value yielded, then the return value (a reference) */
    Value sent;                 /* what the yield evaluates to on resumption (a reference) */
    Value handling;             /* the body's exception being handled while it is suspended */
    Value throwing;             /* g.throw(e): the exception its yield raises on resumption */
    bool finished, failed, closing;
    void *fake_stack;           /* AddressSanitizer's bookkeeping of the stack switch */
    const void *back_bottom;
    size_t back_size;
} GenCo;

/* Saves the running context in *from and continues *to; returns when *from is continued. Made of
 * getcontext and setcontext rather than swapcontext, whose AddressSanitizer interceptor warns on
 * stderr; `resumed` lives in this frame, which waits intact on its stack meanwhile. */
__attribute__((noinline))
static void co_swap(ucontext_t *from, const ucontext_t *to)
{
    volatile bool resumed = false;
    getcontext(from);
    if (resumed) return;
    resumed = true;
    setcontext(to);
}

/* Switches from *from to *to (whose stack is [bottom, bottom + size)), telling AddressSanitizer
 * about the change of stacks; dying: *from will never run again. */
static void co_switch(GenCo *co, ucontext_t *from, ucontext_t *to, const void *bottom, size_t size, bool dying)
{
#if defined(__SANITIZE_ADDRESS__)
    void *fake = NULL;
    __sanitizer_start_switch_fiber(dying ? NULL : &fake, bottom, size);
    co_swap(from, to);
    __sanitizer_finish_switch_fiber(fake, &co->back_bottom, &co->back_size);
#else
    (void)co, (void)bottom, (void)size, (void)dying;
    co_swap(from, to);
#endif
}

static void co_entry(unsigned lo, unsigned hi)
{
    GenObj *g = (GenObj *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
    GenCo *co = g->co;
    Interp *I = co->I;
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(NULL, &co->back_bottom, &co->back_size);
#endif
    Flow fl;
    if (co->closing) {
        fl = F_NORMAL;      /* closed before it started: nothing to unwind */
    } else {
        Frame fr = {g->slots, g->cells, g->module, g->unit, g->fn->name, false, co->func};
        fl = exec(I, &fr, g->fn->body);
    }
    if (fl == F_ERROR) {
        co->failed = true;
        if (I->err.kind == TDL_ERR_STOP_ITERATION && !co->closing) {
            /* PEP 479: a StopIteration escaping the body would end the consumer's loop silently */
            err_raise(I, TDL_ERR_RUNTIME, "generator raised StopIteration");
            I->err.need_loc = true;
        }
    } else if (fl == F_RETURN) {
        co->out = I->ret;
        I->ret = v_undef();
    } else {
        co->out = v_none();
    }
    co->finished = true;
    co_switch(co, &co->ctx, &co->back, co->back_bottom, co->back_size, true);
}

/* Calling generator function f: a generator holding its bound frame (slots: its parameters, whose
 * references it takes; they are V_UNDEF afterwards, failure or not). */
static bool gen_function_new(Interp *I, FuncObj *f, Value *slots, Value *out)
{
    LangFunc *fn = f->fn;
    GenObj *g = obj_alloc(I, sizeof *g, V_GEN, true);
    if (!g) return false;
    Value gv = v_obj(V_GEN, &g->h);
    g->fn = fn;
    g->unit = lang_unit_retain(f->unit);
    g->module = f->module;
    f->module->h.refcnt++;
    g->slots = mem_malloc((size_t)(fn->nslots ? fn->nslots : 1) * sizeof *g->slots);
    if (fn->nfree) g->cells = mem_calloc((size_t)fn->nfree, sizeof *g->cells);
    g->co = mem_calloc(1, sizeof *g->co);
    if (!g->slots || (fn->nfree && !g->cells) || !g->co) {
        mem_free(g->slots);
        g->slots = NULL;
        val_decref(I, gv);
        return err_nomem(I);
    }
    for (int i = 0; i < fn->nslots; i++) {
        g->slots[i] = slots[i];
        slots[i] = v_undef();
    }
    for (int i = 0; i < fn->nfree; i++) {
        g->cells[i] = f->cells[i];
        f->cells[i]->h.refcnt++;
    }
    GenCo *co = g->co;
    co->I = I;
    co->func = f;
    f->h.refcnt++;
    co->out = co->sent = v_undef();
    co->handling = co->throwing = v_undef();
    g->started = true;
    *out = gv;
    return true;
}

/* Whether g may run now (a generator expression or a generator function's body): not already
 * running, and room on the recursion limit and the C stack; else the error is raised. */
static bool gen_may_resume(Interp *I, const GenObj *g)
{
    if (g->running) return err_raise(I, TDL_ERR_VALUE, "generator already executing");
    int limit = I->cfg.recursion_limit > 0 ? I->cfg.recursion_limit : 1000;
    if (I->depth >= limit || stack_exhausted(I))
        return err_raise(I, TDL_ERR_RECURSION, "maximum recursion depth exceeded");
    return true;
}

/* Resumes g's body with sent as its yield's value until it yields (*out, *done false) or ends
 * (*done, its return value in *out). */
static bool co_resume(Interp *I, GenObj *g, Value sent, Value *out, bool *done)
{
    GenCo *co = g->co;
    *done = false;
    if (g->done) {
        *done = true;
        *out = v_none();
        return true;
    }
    if (!gen_may_resume(I, g)) return false;
    if (!co->stack) {
        void *st = mmap(NULL, GEN_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (st == MAP_FAILED) return err_raise(I, TDL_ERR_MEMORY, "cannot map a generator's stack");
        mprotect(st, 4096, PROT_NONE);      /* an overflow faults instead of writing below */
#if defined(__SANITIZE_ADDRESS__)
        /* a dead coroutine's frames may have left poison where this stack is mapped again */
        __asan_unpoison_memory_region(st, GEN_STACK_SIZE);
#endif
        co->stack = st;
        if (getcontext(&co->ctx) != 0) return err_raise(I, TDL_ERR_RUNTIME, "getcontext failed");
        co->ctx.uc_stack.ss_sp = co->stack;
        co->ctx.uc_stack.ss_size = GEN_STACK_SIZE;
        co->ctx.uc_link = NULL;
        uintptr_t p = (uintptr_t)g;
        makecontext(&co->ctx, (void (*)(void))co_entry, 2, (unsigned)(p & 0xffffffffu), (unsigned)(p >> 32));
    }
    val_incref(sent);
    co->sent = sent;
    /* what belongs to the running code: the resumer's is put aside while the body runs */
    GenCo *prev_co = I->co;
    char *stack_base = I->stack_base;
    size_t stack_budget = I->stack_budget;
    LangSource *stmt_src = I->stmt_src;
    uint32_t stmt_pos = I->stmt_pos;
    Value handling = I->handling;
    I->co = co;
    I->handling = co->handling;
    I->stack_base = co->stack + GEN_STACK_SIZE;
    I->stack_budget = GEN_STACK_SIZE - GEN_STACK_MARGIN;
    I->depth++;
    g->running = true;
    co_switch(co, &co->back, &co->ctx, co->stack, GEN_STACK_SIZE, false);
    g->running = false;
    I->depth--;
    co->handling = I->handling;
    I->handling = handling;
    I->co = prev_co;
    I->stack_base = stack_base;
    I->stack_budget = stack_budget;
    I->stmt_src = stmt_src;
    I->stmt_pos = stmt_pos;
    if (!co->finished) {
        *out = co->out;
        co->out = v_undef();
        return true;
    }
    g->done = true;
    munmap(co->stack, GEN_STACK_SIZE);
    co->stack = NULL;
    if (co->failed) {
        I->err.need_loc = true;     /* the consumer adds its own line */
        return false;
    }
    *done = true;
    *out = co->out;
    co->out = v_none();
    return true;
}

/* yield v in the body of the running generator: gives v (a reference it takes) to the resumer and
 * waits; *sent is what it is resumed with (a new reference). An exception thrown in by g.throw()
 * is raised here, or, with thrown non-NULL, handed back in *thrown (a reference; *sent is then
 * undefined) for `yield from` to pass on. */
static bool co_yield(Interp *I, Value v, Value *sent, Value *thrown)
{
    GenCo *co = I->co;
    co->out = v;
    co_switch(co, &co->ctx, &co->back, co->back_bottom, co->back_size, false);
    if (co->closing) {
        err_raise(I, TDL_ERR_GENERATOR_EXIT, "%s", "");
        mem_free(I->err.msg);       /* GeneratorExit has no message */
        I->err.msg = NULL;
        return false;
    }
    *sent = v_undef();
    if (co->throwing.tag != V_UNDEF) {
        Value e = co->throwing;
        co->throwing = v_undef();
        if (thrown) {
            *thrown = e;
            return true;
        }
        exc_raise(I, e);
        val_decref(I, e);
        return false;
    }
    *sent = co->sent;
    co->sent = v_undef();
    return true;
}

bool gen_send(Interp *I, GenObj *g, Value v, Value *out, bool *done)
{
    if (!g->co) return err_raise(I, TDL_ERR_TYPE, "a generator expression has no send()");
    if (!g->co->stack && !g->done && v.tag != V_NONE)
        return err_raise(I, TDL_ERR_TYPE, "can't send non-None value to a just-started generator");
    return co_resume(I, g, v, out, done);
}

/* g.throw(exc) with exc an exception object: raised at g's yield; a generator that has not
 * started, has finished, or is a generator expression (which has no handler to catch it) raises it
 * here and is done. Then as gen_send. */
static bool gen_throw_exc(Interp *I, GenObj *g, Value exc, Value *out, bool *done)
{
    *done = false;
    if (!gen_may_resume(I, g)) return false;
    if (!g->co || !g->co->stack || g->done) {
        if (!g->co) {
            for (int k = 0; k < g->nloops; k++) iter_end(I, &g->its[k]);
            g->nloops = 0;
        }
        g->done = true;
        exc_raise(I, exc);
        return false;
    }
    val_incref(exc);
    g->co->throwing = exc;
    return co_resume(I, g, v_none(), out, done);
}

static bool as_exception(Interp *I, Value v, Value *out);

bool gen_throw(Interp *I, GenObj *g, Value typ, Value val, Value *out, bool *done)
{
    Value exc;
    bool is_type = typ.tag == V_EXCTYPE || (typ.tag == V_CLASS && ((ClassObj *)typ.o)->exc != TDL_ERR_NONE);
    if (!is_type && typ.tag != V_EXC)
        return err_raise(I, TDL_ERR_TYPE, "exceptions must be classes or instances deriving from BaseException, not %s",
                         val_type_name(typ));
    if (!is_type && val.tag != V_NONE && val.tag != V_UNDEF)
        return err_raise(I, TDL_ERR_TYPE, "instance exception may not have a separate value");
    if (is_type && val.tag != V_NONE && val.tag != V_UNDEF) {
        /* throw(E, v): E(v), or v itself when it is an E already (CPython's rule) */
        if (val.tag == V_EXC && (typ.tag == V_EXCTYPE ? exc_is_subclass(((ExcObj *)val.o)->kind, (tdl_error_kind)typ.i)
                                                      : ((ExcObj *)val.o)->cls
                                                            && class_is_subclass(((ExcObj *)val.o)->cls, (ClassObj *)typ.o))) {
            val_incref(val);
            exc = val;
        } else {
            bool ok = val.tag == V_TUPLE ? (typ.tag == V_EXCTYPE ? exc_new(I, (tdl_error_kind)typ.i, as_tuple(val)->items, (int)as_tuple(val)->n, &exc)
                                                                 : class_call(I, typ, as_tuple(val)->items, (int)as_tuple(val)->n, NULL, 0, &exc))
                                         : (typ.tag == V_EXCTYPE ? exc_new(I, (tdl_error_kind)typ.i, &val, 1, &exc)
                                                                 : class_call(I, typ, &val, 1, NULL, 0, &exc));
            if (!ok) return false;
        }
    } else if (!as_exception(I, typ, &exc)) {
        return false;
    }
    bool ok = gen_throw_exc(I, g, exc, out, done);
    val_decref(I, exc);
    return ok;
}

bool gen_close(Interp *I, GenObj *g)
{
    GenCo *co = g->co;
    if (!co || g->done) return true;
    if (!co->stack) {       /* never started: it just ends */
        g->done = true;
        return true;
    }
    co->closing = true;
    Value v;
    bool done, ok = co_resume(I, g, v_none(), &v, &done);
    if (ok && !done) {
        val_decref(I, v);
        /* it yielded again: its next yield raises GeneratorExit too, until it ends */
        ok = err_raise(I, TDL_ERR_RUNTIME, "generator ignored GeneratorExit");
        while (!g->done) {
            Error saved;
            err_move(I, &saved);
            bool ok2 = co_resume(I, g, v_none(), &v, &done);
            if (ok2) val_decref(I, v);
            if (!ok2) err_clear(I);
            err_put_back(I, &saved);
        }
    } else if (ok) {
        val_decref(I, v);
    } else if (I->err.kind == TDL_ERR_GENERATOR_EXIT) {
        err_clear(I);
        ok = true;
    }
    return ok;
}

bool gen_started(const GenObj *g) { return g->co && g->co->stack; }

void gen_free_co(Interp *I, GenObj *g)
{
    GenCo *co = g->co;
    if (!co) return;
    if (co->stack && !g->done) {
        /* suspended: unwind it first; what the unwinding raises is nobody's to see */
        Error saved;
        err_move(I, &saved);
        gen_close(I, g);
        err_clear(I);
        err_put_back(I, &saved);
    }
    if (co->stack) munmap(co->stack, GEN_STACK_SIZE);
    co->stack = NULL;
    Value out = co->out, sent = co->sent, thrown = co->throwing;
    co->out = co->sent = co->throwing = v_undef();
    val_decref(I, out);
    val_decref(I, sent);
    val_decref(I, thrown);
    if (co->func) {
        FuncObj *f = co->func;
        co->func = NULL;
        val_decref(I, v_obj(V_FUNC, &f->h));
    }
}

/* yield from it: each item of it goes to the resumer (sent values go on to a generator function),
 * and the value is what it returned. */
static bool yield_from(Interp *I, Frame *F, Node *n, Value *out)
{
    Value src;
    if (!eval(I, F, n->a, &src)) return false;
    if (src.tag == V_GEN && ((GenObj *)src.o)->co) {
        GenObj *sub = (GenObj *)src.o;
        Value sent = v_none(), thrown = v_undef();
        bool ok = true;
        for (;;) {
            Value x;
            bool done;
            if (thrown.tag != V_UNDEF) {
                /* g.throw(e) while delegating goes on to the inner generator, as CPython does */
                ok = gen_throw_exc(I, sub, thrown, &x, &done);
                val_decref(I, thrown);
                thrown = v_undef();
            } else {
                ok = co_resume(I, sub, sent, &x, &done);
            }
            val_decref(I, sent);
            sent = v_undef();
            if (!ok) {
                locate(I, F, n->pos);
                break;
            }
            if (done) {
                *out = x;
                break;
            }
            if (!(ok = co_yield(I, x, &sent, &thrown))) {
                if (I->err.kind == TDL_ERR_GENERATOR_EXIT) {
                    /* closing: close the inner generator first, as CPython does */
                    Error saved;
                    err_move(I, &saved);
                    bool closed = gen_close(I, sub);
                    if (closed) err_put_back(I, &saved);
                    else err_drop(I, &saved);
                }
                break;
            }
        }
        val_decref(I, src);
        return ok;
    }
    Iter it;
    bool ok = iter_begin(I, src, &it);
    val_decref(I, src);
    if (!ok) {
        locate(I, F, n->a->pos);
        return false;
    }
    for (;;) {
        Value x, sent;
        bool done;
        if (!(ok = iter_next(I, &it, &x, &done))) {
            locate(I, F, n->pos);
            break;
        }
        if (done) {
            *out = v_none();
            break;
        }
        if (!(ok = co_yield(I, x, &sent, NULL))) break;
        val_decref(I, sent);
    }
    iter_end(I, &it);
    return ok;
}

/* yield and yield from (not inlined into eval, whose C frame every level of an expression nests). */
__attribute__((noinline))
static bool eval_yield(Interp *I, Frame *F, Node *n, Value *out)
{
    if (n->op == 1) return yield_from(I, F, n, out);
    Value v = v_none();
    if (n->a && !eval(I, F, n->a, &v)) return false;
    return co_yield(I, v, out, NULL);
}

bool gen_next(Interp *I, GenObj *g, Value *out, Value *out2, bool *done)
{
    *out2 = v_undef();
    if (g->co) {
        bool ok = co_resume(I, g, v_none(), out, done);
        if (ok && *done) val_decref(I, *out);
        return ok;
    }
    if (g->done) {
        *done = true;
        return true;
    }
    if (!gen_may_resume(I, g)) return false;
    Frame fr = {g->slots, g->cells, g->module, g->unit, g->fn->name, false, NULL};
    LangSource *stmt_src = I->stmt_src;
    uint32_t stmt_pos = I->stmt_pos;
    I->depth++;
    g->running = true;
    bool ok = gen_step(I, &fr, g, out, out2, done);
    g->running = false;
    I->depth--;
    I->stmt_src = stmt_src;
    I->stmt_pos = stmt_pos;
    if (!ok || *done) {
        /* finished or failed: a generator that raised is done, as in Python */
        for (int k = 0; k < g->nloops; k++) iter_end(I, &g->its[k]);
        g->nloops = 0;
        g->done = true;
    }
    if (!ok) I->err.need_loc = true;    /* the consumer adds its own line */
    return ok;
}

/* [e for ...], {e for ...}, {k: v for ...} run to the end; (e for ...) makes a generator. */
static bool eval_comp(Interp *I, Frame *F, Node *n, Value *out)
{
    Value seq;
    if (!eval(I, F, n->a, &seq)) return false;
    Iter probe;         /* Python takes iter() of the first iterable here, in the enclosing scope */
    if (seq.tag != V_GEN && seq.tag != V_ITER) {
        if (!iter_begin(I, seq, &probe)) {
            val_decref(I, seq);
            locate(I, F, n->a->pos);
            return false;
        }
        iter_end(I, &probe);
    }
    GenObj *g = gen_new(I, F, n->func, seq);
    val_decref(I, seq);
    if (!g) return false;
    Value gv = v_obj(V_GEN, &g->h);
    if (n->op == COMP_GEN) {
        *out = gv;
        return true;
    }
    Value acc = v_undef();
    bool ok = true;
    if (n->op == COMP_LIST) {
        ListObj *l = list_alloc(I, 0);
        ok = l != NULL;
        if (ok) acc = v_obj(V_LIST, &l->h);
    } else {
        DictObj *d = dict_alloc(I, n->op == COMP_DICT ? V_DICT : V_SET);
        ok = d != NULL;
        if (ok) acc = v_obj(d->h.tag, &d->h);
    }
    while (ok) {
        Value x, y;
        bool done;
        if (!(ok = gen_next(I, g, &x, &y, &done)) || done) break;
        if (n->op == COMP_LIST) ok = list_append(I, as_list(acc), x);
        else ok = dict_set(I, as_dict(acc), x, y);
        val_decref(I, x);
        val_decref(I, y);
    }
    val_decref(I, gv);
    if (!ok) {
        if (acc.tag != V_UNDEF) val_decref(I, acc);
        return false;
    }
    *out = acc;
    return true;
}

static bool truthy(Interp *I, Value v, bool *out)
{
    if (v.tag == V_BOOL) {
        *out = v.b;
        return true;
    }
    return val_truthy(I, v, out);
}

/* Fast paths for int arithmetic; everything else goes to val_binop. */
static inline bool binop(Interp *I, LangOp op, Value a, Value b, Value *out)
{
    if (a.tag == V_INT && b.tag == V_INT) {
        int64_t r;
        switch (op) {
        case OP_ADD: if (!__builtin_add_overflow(a.i, b.i, &r)) { *out = v_int(r); return true; } break;
        case OP_SUB: if (!__builtin_sub_overflow(a.i, b.i, &r)) { *out = v_int(r); return true; } break;
        case OP_MUL: if (!__builtin_mul_overflow(a.i, b.i, &r)) { *out = v_int(r); return true; } break;
        case OP_MOD:
            if (b.i > 0 && a.i >= 0) { *out = v_int(a.i % b.i); return true; }
            break;
        default: break;
        }
    } else if (a.tag == V_FLOAT && b.tag == V_FLOAT) {
        switch (op) {
        case OP_ADD: *out = v_float(a.f + b.f); return true;
        case OP_SUB: *out = v_float(a.f - b.f); return true;
        case OP_MUL: *out = v_float(a.f * b.f); return true;
        default: break;
        }
    }
    return val_binop(I, op, a, b, out);
}

static inline bool compare(Interp *I, LangOp op, Value a, Value b, bool *out)
{
    if (a.tag == V_INT && b.tag == V_INT) {
        switch (op) {
        case OP_LT: *out = a.i < b.i; return true;
        case OP_LE: *out = a.i <= b.i; return true;
        case OP_GT: *out = a.i > b.i; return true;
        case OP_GE: *out = a.i >= b.i; return true;
        case OP_EQ: *out = a.i == b.i; return true;
        case OP_NE: *out = a.i != b.i; return true;
        default: break;
        }
    }
    return val_compare(I, op, a, b, out);
}

static bool eval(Interp *I, Frame *F, Node *n, Value *out)
{
    bool ok = true;
    if (stack_exhausted(I)) {
        err_raise(I, TDL_ERR_RECURSION, "maximum recursion depth exceeded");
        locate(I, F, n->pos);
        return false;
    }
    switch (n->kind) {
    case N_NAME:
        if (n->scope == SCOPE_LOCAL && F->slots[n->slot].tag != V_UNDEF) {   /* the common case */
            *out = F->slots[n->slot];
            val_incref(*out);
            return true;
        }
        ok = load_name(I, F, n, out);
        break;
    case N_INT: *out = v_int(n->ival); return true;
    case N_FLOAT: *out = v_float(n->fval); return true;
    case N_TRUE: *out = v_bool(true); return true;
    case N_FALSE: *out = v_bool(false); return true;
    case N_NONE: *out = v_none(); return true;
    case N_ELLIPSIS: out->tag = V_ELLIPSIS; out->i = 0; return true;
    case N_STR:
        ok = str_new(I, n->str, n->len, out);
        break;
    case N_TUPLE: case N_LIST:
        return eval_seq(I, F, n, out);
    case N_DICT: case N_SET:
        return eval_dict(I, F, n, out);
    case N_COMP:
        ok = eval_comp(I, F, n, out);
        break;
    case N_FSTRING: {
        Buf b = {0};
        ok = fstring_text(I, F, n, &b);
        if (ok) ok = str_new(I, b.p ? b.p : "", b.n, out);
        buf_free(&b);
        break;
    }
    case N_BINOP: {
        Value a, b;
        if (!eval(I, F, n->a, &a)) return false;
        if (!eval(I, F, n->b, &b)) {
            val_decref(I, a);
            return false;
        }
        ok = binop(I, (LangOp)n->op, a, b, out);
        val_decref(I, a);
        val_decref(I, b);
        break;
    }
    case N_UNARY: {
        Value a;
        if (!eval(I, F, n->a, &a)) return false;
        ok = val_unary(I, (LangOp)n->op, a, out);
        val_decref(I, a);
        break;
    }
    case N_NOT: {
        Value a;
        bool t;
        if (!eval(I, F, n->a, &a)) return false;
        ok = truthy(I, a, &t);
        val_decref(I, a);
        if (ok) *out = v_bool(!t);
        break;
    }
    case N_AND: case N_OR: {
        Value a;
        bool t;
        if (!eval(I, F, n->a, &a)) return false;
        if (!truthy(I, a, &t)) {
            val_decref(I, a);
            ok = false;
            break;
        }
        if (t == (n->kind == N_OR)) {
            *out = a;
            return true;
        }
        val_decref(I, a);
        return eval(I, F, n->b, out);
    }
    case N_COMPARE: {
        /* a < b < c is (a < b) and (b < c), b evaluated once; a comparison with a tensor gives a
         * tensor, whose truth decides whether the chain goes on (Python's rule). */
        Value left, res = v_bool(true);
        if (!eval(I, F, n->a, &left)) return false;
        for (Node *item = n->b; item; item = item->next) {
            Value right;
            bool r = true;
            if (!eval(I, F, item->a, &right)) {
                val_decref(I, left);
                val_decref(I, res);
                return false;
            }
            val_decref(I, res);
            res = v_bool(false);
            if (is_tensorlike(left) || is_tensorlike(right) || left.tag == V_INSTANCE || right.tag == V_INSTANCE) {
                ok = val_compare_value(I, (LangOp)item->op, left, right, &res);
                if (ok && item->next) ok = truthy(I, res, &r);
            } else {
                ok = compare(I, (LangOp)item->op, left, right, &r);
                res = v_bool(r);
            }
            val_decref(I, left);
            left = right;
            if (!ok) {
                locate(I, F, item->pos);
                val_decref(I, left);
                val_decref(I, res);
                return false;
            }
            if (!r) break;
        }
        val_decref(I, left);
        *out = res;
        return true;
    }
    case N_IFEXP: {
        Value c;
        bool t;
        if (!eval(I, F, n->a, &c)) return false;
        ok = truthy(I, c, &t);
        val_decref(I, c);
        if (!ok) break;
        return eval(I, F, t ? n->b : n->c, out);
    }
    case N_LAMBDA:
        ok = make_function(I, F, n->func, out);
        break;
    case N_CALL:
        ok = eval_call(I, F, n, out);
        break;
    case N_ATTR: {
        Value obj;
        if (!eval(I, F, n->a, &obj)) return false;
        ok = val_getattr(I, obj, n->str, out);
        val_decref(I, obj);
        break;
    }
    case N_SUBSCRIPT: {
        Value obj, idx;
        if (!eval_subscript_parts(I, F, n, &obj, &idx)) return false;
        /* where a dim this binds was bound, for later DimensionBindErrors (dims_locate) */
        uint32_t stmt_pos = I->stmt_pos;
        I->stmt_pos = n->pos;
        ok = val_getitem(I, obj, idx, out);
        I->stmt_pos = stmt_pos;
        val_decref(I, obj);
        val_decref(I, idx);
        break;
    }
    case N_SLICE:
        ok = eval_index(I, F, n, out);
        break;
    case N_YIELD:
        ok = eval_yield(I, F, n, out);
        break;
    case N_NAMEDEXPR:
        if (!eval(I, F, n->b, out)) return false;
        if (!(ok = assign(I, F, n->a, *out))) val_decref(I, *out);
        break;
    default:
        ok = err_raise(I, TDL_ERR_RUNTIME, "internal error: cannot evaluate a '%s' node", lang_node_kind_name(n->kind));
    }
    if (!ok) locate(I, F, n->pos);
    return ok;
}

/* ---- statements ---- */

static bool echo(Interp *I, Value v)
{
    if (v.tag == V_NONE) return true;
    Buf b = {0};
    bool ok = val_repr(I, v, &b);
    if (ok && !b.nomem) {
        buf_put(&b, "\n", 1);
        interp_write(I, b.p, b.n);
    }
    if (b.nomem) ok = err_nomem(I);
    buf_free(&b);
    return ok;
}

/* The TypeError "unsupported operand type(s) for +: ..." of the binop behind `a += b` names `+=`,
 * as CPython's does. */
static void aug_op_message(Interp *I, LangOp op)
{
    char head[64];
    snprintf(head, sizeof head, "unsupported operand type(s) for %s:", op == OP_POW ? "** or pow()" : lang_op_text[op]);
    size_t n = strlen(head);
    if (I->err.kind != TDL_ERR_TYPE || !I->err.msg || strncmp(I->err.msg, head, n) != 0) return;
    char *m = mem_malloc(strlen(I->err.msg) + 2);
    if (!m) return;
    snprintf(m, strlen(I->err.msg) + 2, "unsupported operand type(s) for %s=%s", lang_op_text[op], I->err.msg + n - 1);
    mem_free(I->err.msg);
    I->err.msg = m;
}

static bool aug_assign(Interp *I, Frame *F, Node *st)
{
    Node *t = st->a;
    LangOp op = (LangOp)st->op;
    Value obj = v_undef(), idx = v_undef(), cur, rhs, res;
    bool ok, handled = false;
    if (t->kind == N_NAME && t->scope == SCOPE_LOCAL && F->slots[t->slot].tag == V_INT) {
        /* i += 1 on a local int: no list semantics to honour */
        if (!eval(I, F, st->b, &rhs)) return false;
        ok = binop(I, op, F->slots[t->slot], rhs, &res);
        val_decref(I, rhs);
        if (!ok) {
            aug_op_message(I, op);
            locate(I, F, st->pos);
            return false;
        }
        replace(I, &F->slots[t->slot], res);
        val_decref(I, res);
        return true;
    }
    if (t->kind == N_SUBSCRIPT) {
        if (!eval_subscript_parts(I, F, t, &obj, &idx)) return false;
        ok = val_getitem(I, obj, idx, &cur);
    } else if (t->kind == N_ATTR) {
        if (!eval(I, F, t->a, &obj)) return false;
        ok = val_getattr(I, obj, t->str, &cur);
    } else {
        ok = load_name(I, F, t, &cur);
    }
    if (!ok) {
        locate(I, F, t->pos);
        goto out;
    }
    if (!eval(I, F, st->b, &rhs)) {
        val_decref(I, cur);
        ok = false;
        goto out;
    }
    if (op == OP_ADD && cur.tag == V_LIST) {
        /* list += iterable extends in place, as in Python. */
        Iter it;
        ok = iter_begin(I, rhs, &it);
        if (ok) {
            ListObj *l = as_list(cur);
            int64_t n = rhs.o == cur.o ? (int64_t)l->n : -1;    /* x += x */
            for (bool done = false; ok && n != 0;) {
                Value x;
                if (!(ok = iter_next(I, &it, &x, &done)) || done) break;
                ok = list_append(I, l, x);
                val_decref(I, x);
                if (n > 0) n--;
            }
            iter_end(I, &it);
        }
        res = cur;
        val_incref(res);
    } else if (op == OP_MUL && cur.tag == V_LIST && has_index(rhs)) {
        /* list *= n repeats in place (n: an int, a bool, a tensor's __index__). */
        ListObj *l = as_list(cur);
        int64_t times = 0;
        size_t len = l->n;
        ok = val_index(I, rhs, &times);
        if (ok && times <= 0) {
            while (l->n > 0) {
                Value x = l->items[--l->n];
                val_decref(I, x);
            }
        } else if (ok && len && (uint64_t)times > (uint64_t)INT32_MAX / len) {
            ok = err_raise(I, TDL_ERR_MEMORY, "repeated sequence is too long");
        } else {
            for (int64_t k = 1; k < times && ok; k++)
                for (size_t i = 0; i < len && ok; i++) ok = list_append(I, l, l->items[i]);
        }
        res = cur;
        val_incref(res);
    } else if (!(ok = dict_inplace(I, op, cur, rhs, &handled)) || handled) {
        /* set |= s and friends, dict |= d: in place, as in Python */
        if (ok) {
            res = cur;
            val_incref(res);
        }
    } else if (cur.tag == V_TENSOR) {
        /* Python's tmp = t[idx]; tmp += v; t[idx] = tmp, with Tensor's __iadd__ & co.: the
         * value written keeps tmp's shape and dtype. */
        ok = tensor_inplace_binop(I, op, cur, rhs, &res);
    } else if (cur.tag == V_INSTANCE && (!(ok = class_inplace_binop(I, op, cur, rhs, &res, &handled)) || handled)) {
        /* x.__iadd__(v) and friends; without one (or NotImplemented), x = x + v below */
    } else {
        ok = binop(I, op, cur, rhs, &res);
    }
    val_decref(I, cur);
    val_decref(I, rhs);
    if (!ok) {
        aug_op_message(I, op);
        locate(I, F, st->pos);
        goto out;
    }
    if (t->kind == N_SUBSCRIPT) ok = val_setitem(I, obj, idx, res);
    else if (t->kind == N_ATTR) ok = assign(I, F, t, res);
    else ok = store_name(I, F, t, res);
    val_decref(I, res);
    if (!ok) locate(I, F, st->pos);
out:
    val_decref(I, obj);
    val_decref(I, idx);
    return ok;
}

static Flow exec_for(Interp *I, Frame *F, Node *st)
{
    Value seq;
    if (!eval(I, F, st->b, &seq)) return F_ERROR;
    Flow fl = F_NORMAL;
    bool broke = false;
    if (seq.tag == V_RANGE && st->a->kind == N_NAME) {
        RangeObj *r = as_range(seq);
        int64_t n = range_len(r), step = r->step;
        for (int64_t k = 0; k < n; k++) {
            int64_t v = r->start + k * step;     /* (the value after the last may pass int64) */
            if (!interp_check_interrupt(I) || !store_name(I, F, st->a, v_int(v))) { fl = F_ERROR; break; }
            fl = exec(I, F, st->c);
            if (fl == F_BREAK) { broke = true; fl = F_NORMAL; break; }
            if (fl == F_CONTINUE) fl = F_NORMAL;
            if (fl != F_NORMAL) break;
        }
    } else {
        Iter it;
        if (!iter_begin(I, seq, &it)) {
            val_decref(I, seq);
            locate(I, F, st->b->pos);
            return F_ERROR;
        }
        for (;;) {
            Value x;
            bool done;
            if (!interp_check_interrupt(I) || !iter_next(I, &it, &x, &done)) {
                locate(I, F, st->b->pos);
                fl = F_ERROR;
                break;
            }
            if (done) break;
            bool ok = assign(I, F, st->a, x);
            val_decref(I, x);
            if (!ok) { locate(I, F, st->a->pos); fl = F_ERROR; break; }
            fl = exec(I, F, st->c);
            if (fl == F_BREAK) { broke = true; fl = F_NORMAL; break; }
            if (fl == F_CONTINUE) fl = F_NORMAL;
            if (fl != F_NORMAL) break;
        }
        iter_end(I, &it);
    }
    val_decref(I, seq);
    if (fl == F_NORMAL && !broke && st->d) fl = exec(I, F, st->d);
    return fl;
}

static Flow exec_while(Interp *I, Frame *F, Node *st)
{
    for (;;) {
        Value c;
        bool t;
        if (!interp_check_interrupt(I)) {
            locate(I, F, st->pos);
            return F_ERROR;
        }
        if (!eval(I, F, st->a, &c)) return F_ERROR;
        bool ok = truthy(I, c, &t);
        val_decref(I, c);
        if (!ok) {
            locate(I, F, st->a->pos);
            return F_ERROR;
        }
        if (!t) break;
        Flow fl = exec(I, F, st->b);
        if (fl == F_BREAK) return F_NORMAL;
        if (fl == F_CONTINUE) continue;
        if (fl != F_NORMAL) return fl;
    }
    return st->c ? exec(I, F, st->c) : F_NORMAL;
}

/* ---- exceptions ---- */

/* An exception object from what `raise` was given: an exception, or a class to call. */
static bool as_exception(Interp *I, Value v, Value *out)
{
    if (v.tag == V_EXC) {
        val_incref(v);
        *out = v;
        return true;
    }
    if (v.tag == V_EXCTYPE) return exc_new(I, (tdl_error_kind)v.i, NULL, 0, out);
    if (v.tag == V_CLASS && ((ClassObj *)v.o)->exc != TDL_ERR_NONE) {
        if (!class_call(I, v, NULL, 0, NULL, 0, out)) return false;
        if (out->tag == V_EXC) return true;
        val_decref(I, *out);
    }
    return err_raise(I, TDL_ERR_TYPE, "exceptions must derive from BaseException");
}

static bool exec_raise(Interp *I, Frame *F, Node *st)
{
    if (!st->a) {
        if (I->handling.tag == V_UNDEF) return err_raise(I, TDL_ERR_RUNTIME, "No active exception to reraise");
        return exc_raise(I, I->handling);
    }
    Value v, exc, cause = v_none();
    if (!eval(I, F, st->a, &v)) return false;
    bool ok = as_exception(I, v, &exc);
    val_decref(I, v);
    if (!ok) return false;
    if (st->b) {
        if (!eval(I, F, st->b, &v)) {
            val_decref(I, exc);
            return false;
        }
        ok = v.tag == V_NONE ? (val_incref(v), cause = v, true) : as_exception(I, v, &cause);
        val_decref(I, v);
        if (!ok) {
            if (I->err.kind == TDL_ERR_TYPE) err_raise(I, TDL_ERR_TYPE, "exception causes must derive from BaseException");
            val_decref(I, exc);
            return false;
        }
        ExcObj *e = (ExcObj *)exc.o;
        Value old = e->cause;
        e->cause = cause;
        e->suppress_context = true;
        val_decref(I, old);
    }
    exc_raise(I, exc);
    val_decref(I, exc);
    return false;
}

/* Whether error e is caught by `except cls` (a class or a tuple of them). */
static bool exc_matches(Interp *I, const Error *e, Value cls, bool *out, int depth)
{
    if (cls.tag == V_EXCTYPE) {
        *out = exc_is_subclass(e->kind, (tdl_error_kind)cls.i);
        return true;
    }
    if (cls.tag == V_CLASS && ((ClassObj *)cls.o)->exc != TDL_ERR_NONE) {
        ClassObj *c = e->exc ? ((ExcObj *)e->exc)->cls : NULL;
        *out = c && class_is_subclass(c, (ClassObj *)cls.o);
        return true;
    }
    if (cls.tag == V_TUPLE && depth < 100) {
        *out = false;
        for (size_t k = 0; k < as_tuple(cls)->n && !*out; k++)
            if (!exc_matches(I, e, as_tuple(cls)->items[k], out, depth + 1)) return false;
        return true;
    }
    return err_raise(I, TDL_ERR_TYPE, "catching classes that do not inherit from BaseException is not allowed");
}

/* Unbinds the name of `except ... as name` after its block, as Python does. */
static void unbind(Interp *I, Frame *F, Node *n)
{
    Value *slot = n->scope == SCOPE_LOCAL ? &F->slots[n->slot]
                : n->scope == SCOPE_CELL ? &((CellObj *)F->slots[n->slot].o)->v
                : n->scope == SCOPE_FREE ? &F->free[n->slot]->v : &F->mod->vals[n->slot];
    Value old = *slot;
    *slot = v_undef();
    val_decref(I, old);
}

/* Whether m is an instance whose class has __enter__ and __exit__ (false with no error when not). */
static bool ctx_is_class(Interp *I, Value m)
{
    if (m.tag != V_INSTANCE) return false;
    Value a, b;
    if (!val_getattr(I, m, "__enter__", &a)) {
        err_clear(I);
        return false;
    }
    val_decref(I, a);
    if (!val_getattr(I, m, "__exit__", &b)) {
        err_clear(I);
        return false;
    }
    val_decref(I, b);
    return true;
}

/* A manager's enter and exit: the C hooks of a CtxMgrObj, or an instance's __enter__() and
 * __exit__(type, value, traceback) (traceback is None in tdl), whose true result suppresses. */
static bool ctx_enter(Interp *I, Value m, Value *out)
{
    if (m.tag == V_CTXMGR) return ((CtxMgrObj *)m.o)->enter(I, ((CtxMgrObj *)m.o)->ud, out);
    bool found;
    return class_call_dunder(I, m, "__enter__", NULL, 0, out, &found);
}

static bool ctx_exit(Interp *I, Value m, Value exc, bool *suppress)
{
    if (m.tag == V_CTXMGR) return ((CtxMgrObj *)m.o)->exit(I, ((CtxMgrObj *)m.o)->ud, exc, suppress);
    Value args[3] = {v_none(), exc, v_none()}, r;
    if (exc.tag == V_EXC) {
        ClassObj *c = class_of(exc);
        args[0] = c ? v_obj(V_CLASS, &c->h) : v_exctype(((ExcObj *)exc.o)->kind);
    }
    bool found;
    if (!class_call_dunder(I, m, "__exit__", args, 3, &r, &found)) return false;
    bool ok = val_truthy(I, r, suppress);
    val_decref(I, r);
    if (exc.tag != V_EXC) *suppress = false;
    return ok;
}

/* The with statement over its items from w on: Python's nesting of one `with` per item. */
static Flow exec_with(Interp *I, Frame *F, Node *w, Node *body)
{
    Value m;
    if (!eval(I, F, w->a, &m)) return F_ERROR;
    if (m.tag != V_CTXMGR && !ctx_is_class(I, m)) {
        if (!I->err.kind)
            err_raise(I, TDL_ERR_TYPE, "'%s' object does not support the context manager protocol", val_type_name(m));
        val_decref(I, m);
        locate(I, F, w->a->pos);
        return F_ERROR;
    }
    Value v;
    if (!ctx_enter(I, m, &v)) {
        val_decref(I, m);
        locate(I, F, w->a->pos);
        return F_ERROR;
    }
    bool ok = !w->b || assign(I, F, w->b, v);
    val_decref(I, v);
    Flow fl = !ok ? F_ERROR : w->next ? exec_with(I, F, w->next, body) : exec(I, F, body);
    bool suppress = false;
    if (fl == F_ERROR && !I->exiting) {
        Value exc;
        if (!exc_from_error(I, &exc)) {
            val_decref(I, m);
            return F_ERROR;
        }
        Error saved;
        err_move(I, &saved);
        ok = ctx_exit(I, m, exc, &suppress);
        val_decref(I, exc);
        if (!ok) {
            err_drop(I, &saved);
            locate(I, F, w->a->pos);
        } else if (suppress) {
            err_drop(I, &saved);
            fl = F_NORMAL;
        } else {
            err_put_back(I, &saved);
        }
    } else {
        Value ret = fl == F_RETURN ? I->ret : v_undef();
        I->ret = v_undef();
        ok = ctx_exit(I, m, v_none(), &suppress);
        if (fl == F_RETURN) I->ret = ret;
        if (!ok) {
            if (fl == F_RETURN) {
                val_decref(I, I->ret);
                I->ret = v_undef();
            }
            locate(I, F, w->a->pos);
            fl = F_ERROR;
        }
    }
    val_decref(I, m);
    return fl;
}

static Flow exec_try(Interp *I, Frame *F, Node *st)
{
    Flow fl = exec(I, F, st->a);
    if (fl == F_ERROR && st->b && !I->exiting) {
        for (Node *h = st->b; h; h = h->next) {
            bool match = true;
            if (h->a) {
                /* the class expression runs with the error put aside; its own error replaces it */
                Error saved;
                err_move(I, &saved);
                Value cls;
                bool ok = eval(I, F, h->a, &cls);
                if (ok) {
                    ok = exc_matches(I, &saved, cls, &match, 0);
                    val_decref(I, cls);
                    if (!ok) locate(I, F, h->a->pos);
                }
                if (!ok) {
                    err_drop(I, &saved);
                    return F_ERROR;
                }
                err_put_back(I, &saved);
            }
            if (!match) continue;
            Value exc;
            if (!exc_from_error(I, &exc)) return F_ERROR;
            /* kept (not formatted) in case another error escapes the handler: its context */
            Error *ctx = mem_malloc(sizeof *ctx);
            if (ctx) err_move(I, ctx);
            else err_clear(I);
            Value prev = I->handling;
            I->handling = exc;
            bool ok = !h->c || store_name(I, F, h->c, exc);
            fl = ok ? exec(I, F, h->b) : F_ERROR;
            if (h->c) unbind(I, F, h->c);
            I->handling = prev;
            if (ctx && fl == F_ERROR) {
                if (!ctx->exc) {    /* the handled exception is the one made here */
                    ctx->exc = exc.o;
                    val_incref(exc);
                }
                err_set_context(I, ctx);
            } else if (ctx) {
                err_drop(I, ctx);
                mem_free(ctx);
            }
            val_decref(I, exc);
            break;
        }
    } else if (fl == F_NORMAL && st->c) {
        fl = exec(I, F, st->c);
    }
    if (!st->d) return fl;
    /* finally: runs whatever happened; the flow (an error, a return value) in flight waits */
    Error saved = {0};
    Value ret = v_undef();
    if (fl == F_ERROR) err_move(I, &saved);
    if (fl == F_RETURN) {
        ret = I->ret;
        I->ret = v_undef();
    }
    Flow f2 = exec(I, F, st->d);
    if (f2 == F_NORMAL) {
        if (fl == F_ERROR) err_put_back(I, &saved);
        if (fl == F_RETURN) I->ret = ret;
        return fl;
    }
    if (fl == F_ERROR) err_drop(I, &saved);
    val_decref(I, ret);
    return f2;
}

static Flow exec(Interp *I, Frame *F, Node *st)
{
    for (; st; st = st->next) {
        bool ok = true;
        I->stmt_src = F->unit->src;
        I->stmt_pos = st->pos;
        switch (st->kind) {
        case N_EXPR_STMT: {
            Value v;
            if (!eval(I, F, st->a, &v)) return F_ERROR;
            if (F->echo) ok = echo(I, v);
            val_decref(I, v);
            break;
        }
        case N_ASSIGN: {
            Value v;
            if (!eval(I, F, st->b, &v)) return F_ERROR;
            if (st->count == 1 && st->a->kind == N_NAME && st->a->scope == SCOPE_LOCAL) {
                if ((v.tag == V_DIM || v.tag == V_DIMLIST) && !name_dims(I, st->a, v)) {
                    val_decref(I, v);
                    locate(I, F, st->pos);
                    return F_ERROR;
                }
                Value old = F->slots[st->a->slot];     /* x = e on a local: takes v's reference */
                F->slots[st->a->slot] = v;
                val_decref(I, old);
                break;
            }
            for (Node *t = st->a; t && ok; t = t->next) ok = assign(I, F, t, v);
            val_decref(I, v);
            break;
        }
        case N_AUGASSIGN:
            ok = aug_assign(I, F, st);
            break;
        case N_IF: {
            Node *s = st;
            for (;;) {
                Value c;
                bool t;
                if (!eval(I, F, s->a, &c)) return F_ERROR;
                ok = truthy(I, c, &t);
                val_decref(I, c);
                if (!ok) {
                    locate(I, F, s->a->pos);
                    return F_ERROR;
                }
                if (t) {
                    Flow fl = exec(I, F, s->b);
                    if (fl != F_NORMAL) return fl;
                    break;
                }
                /* An elif is an N_IF alone in the else body. */
                if (s->c && s->c->kind == N_IF && !s->c->next) {
                    s = s->c;
                    continue;
                }
                if (s->c) {
                    Flow fl = exec(I, F, s->c);
                    if (fl != F_NORMAL) return fl;
                }
                break;
            }
            break;
        }
        case N_WHILE: {
            Flow fl = exec_while(I, F, st);
            if (fl != F_NORMAL) return fl;
            break;
        }
        case N_FOR: {
            Flow fl = exec_for(I, F, st);
            if (fl != F_NORMAL) return fl;
            break;
        }
        case N_DEF: case N_CLASS: {
            Value f;
            if (!exec_definition(I, F, st, &f)) {
                locate(I, F, st->pos);
                return F_ERROR;
            }
            ok = store_name(I, F, st->a, f);
            val_decref(I, f);
            break;
        }
        case N_RETURN:
            if (st->a) {
                Value v;        /* not straight into I->ret: a call inside uses it too */
                if (!eval(I, F, st->a, &v)) return F_ERROR;
                I->ret = v;
            } else {
                I->ret = v_none();
            }
            return F_RETURN;
        case N_BREAK: return F_BREAK;
        case N_CONTINUE: return F_CONTINUE;
        case N_PASS: case N_GLOBAL: case N_NONLOCAL: break;
        case N_DEL:
            if (!delete(I, F, st->a)) return F_ERROR;
            break;
        case N_ASSERT: {
            Value c;
            bool t;
            if (!eval(I, F, st->a, &c)) return F_ERROR;
            ok = truthy(I, c, &t);
            val_decref(I, c);
            if (ok && !t) {
                if (st->b) {
                    Value m;
                    if (!eval(I, F, st->b, &m)) return F_ERROR;
                    Buf b = {0};
                    ok = val_str(I, m, &b);
                    val_decref(I, m);
                    if (ok) ok = err_raise(I, TDL_ERR_ASSERTION, "%s", b.p ? b.p : "");
                    buf_free(&b);
                } else {
                    ok = err_raise(I, TDL_ERR_ASSERTION, "%s", "");
                    mem_free(I->err.msg);
                    I->err.msg = NULL;
                }
            }
            break;
        }
        case N_RAISE:
            ok = exec_raise(I, F, st);
            break;
        case N_TRY: {
            Flow fl = exec_try(I, F, st);
            if (fl != F_NORMAL) return fl;
            break;
        }
        case N_WITH: {
            Flow fl = exec_with(I, F, st->a, st->b);
            if (fl != F_NORMAL) return fl;
            break;
        }
        case N_IMPORT: {
            Value m;
            if (strchr(st->str, '.')) {
                ok = err_raise(I, TDL_ERR_IMPORT, "dotted module names are not supported: '%s'", st->str);
                break;
            }
            if (!import_module(I, st->str, &m)) {
                locate(I, F, st->pos);
                return F_ERROR;
            }
            ok = store_name(I, F, st->a, m);
            val_decref(I, m);
            break;
        }
        default:
            ok = err_raise(I, TDL_ERR_RUNTIME, "internal error: cannot execute a '%s' node",
                           lang_node_kind_name(st->kind));
        }
        if (!ok) {
            locate(I, F, st->pos);
            return F_ERROR;
        }
    }
    return F_NORMAL;
}

/* ---- running a unit ---- */

static void syntax_error(Interp *I, LangSource *src, const LangError *e)
{
    err_raise(I, e->kind == LANG_INDENTATION_ERROR ? TDL_ERR_INDENTATION
                 : e->kind == LANG_TAB_ERROR ? TDL_ERR_TAB : TDL_ERR_SYNTAX, "%s", e->msg);
    I->err.syntax = true;
    I->err.need_loc = false;
    err_trace(I, src, e->pos, "<module>");
}

tdl_status interp_run_source(Interp *I, Module *m, LangSource *src, bool interactive)
{
    LangUnit *u;
    LangError e;
    LangStatus st = lang_parse(src, interactive, &u, &e);
    if (st == LANG_INCOMPLETE && interactive) return TDL_INCOMPLETE;
    if (st == LANG_NOMEM) {
        err_nomem(I);
        return TDL_ERROR;
    }
    if (st != LANG_OK) {
        syntax_error(I, src, &e);
        return TDL_ERROR;
    }
    if (!resolve_unit(I, m, u)) {
        lang_unit_release(u);
        return TDL_ERROR;
    }
    Frame fr = {NULL, NULL, m, u, "<module>", interactive, NULL};
    Flow fl = exec(I, &fr, u->body);
    lang_unit_release(u);
    if (I->exiting) return TDL_EXIT;
    return fl == F_ERROR ? TDL_ERROR : TDL_OK;
}
