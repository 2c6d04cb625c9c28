/* class.c — user classes (the `class` statement) with CPython's semantics for what they cover:
 * class objects with a C3 method resolution order, instances with their own attributes, bound
 * methods, staticmethod / classmethod / property, super(), and the dunder methods through which
 * ops.c, format.c, dict.c and the evaluator give instances Python's operators and protocols.
 *
 * Every hook here is asked only for values of the tags this file makes (V_CLASS, V_INSTANCE,
 * V_METHOD, V_DESCR, V_SUPER); it knows nothing of tensors (a tensor operand on the other side of
 * an operator reaches the instance's reflected method because ops.c asks here first). */
#include "interp.h"
#include "mem.h"

#include <stdio.h>
#include <string.h>

#define BUILTIN_ARGS Interp *I, Value self, const Value *args, int nargs, const char *const *kwnames, int nkw, Value *out

/* ---- lookup ---- */

/* The value of attribute name in dict d (borrowed), or V_UNDEF. */
static bool dict_get_str(Interp *I, DictObj *d, const char *name, Value *out)
{
    Value key;
    DictEntry *e;
    *out = v_undef();
    if (!d || !str_from_cstr(I, name, &key)) return d == NULL;
    bool ok = dict_find(I, d, key, &e);
    val_decref(I, key);
    if (ok && e) *out = e->val;
    return ok;
}

bool dict_set_str(Interp *I, DictObj *d, const char *name, Value v)
{
    Value key;
    if (!str_from_cstr(I, name, &key)) return false;
    bool ok = dict_set(I, d, key, v);
    val_decref(I, key);
    return ok;
}

/* c's attribute name from c or the classes of its MRO (borrowed; V_UNDEF when none has it);
 * *owner: the class that has it. */
static bool class_find(Interp *I, ClassObj *c, const char *name, Value *out, ClassObj **owner)
{
    if (!dict_get_str(I, c->dict, name, out)) return false;
    if (out->tag != V_UNDEF) {
        if (owner) *owner = c;
        return true;
    }
    TupleObj *mro = as_tuple(c->mro);
    for (size_t k = 0; k < mro->n; k++) {
        ClassObj *b = (ClassObj *)mro->items[k].o;
        if (!dict_get_str(I, b->dict, name, out)) return false;
        if (out->tag != V_UNDEF) {
            if (owner) *owner = b;
            return true;
        }
    }
    return true;
}

bool class_is_subclass(const ClassObj *c, const ClassObj *base)
{
    if (c == base) return true;
    TupleObj *mro = as_tuple(c->mro);
    for (size_t k = 0; k < mro->n; k++)
        if (mro->items[k].o == &base->h) return true;
    return false;
}

ClassObj *class_of(Value v)
{
    if (v.tag == V_INSTANCE) return ((InstObj *)v.o)->cls;
    if (v.tag == V_EXC) return ((ExcObj *)v.o)->cls;
    return NULL;
}

/* ---- making classes ---- */

/* C3 linearisation: the MRO of a class with these bases (after the class itself), as a new tuple
 * in *out; TypeError as CPython's when there is none. */
static bool c3_mro(Interp *I, ClassObj **bases, int nbases, Value *out)
{
    /* seqs: each base's [base] + base->mro, then the list of bases; heads advance as they merge */
    int nseq = nbases + 1;
    size_t total = 0;
    for (int k = 0; k < nbases; k++) total += 1 + as_tuple(bases[k]->mro)->n;
    ClassObj **buf = mem_malloc((total + (size_t)nbases + 1) * sizeof *buf);
    size_t *start = mem_malloc((size_t)(nseq + 1) * sizeof *start);
    size_t *head = mem_malloc((size_t)nseq * sizeof *head);
    ListObj *res = list_alloc(I, 0);
    bool ok = buf && start && head && res;
    if (!ok) {
        if (res) val_decref(I, v_obj(V_LIST, &res->h));
        else err_nomem(I);
        if (!buf || !start || !head) err_nomem(I);
        mem_free(buf);
        mem_free(start);
        mem_free(head);
        return false;
    }
    size_t w = 0;
    for (int k = 0; k < nbases; k++) {
        start[k] = w;
        buf[w++] = bases[k];
        TupleObj *m = as_tuple(bases[k]->mro);
        for (size_t j = 0; j < m->n; j++) buf[w++] = (ClassObj *)m->items[j].o;
    }
    start[nbases] = w;
    for (int k = 0; k < nbases; k++) buf[w++] = bases[k];
    start[nseq] = w;
    for (int k = 0; k < nseq; k++) head[k] = start[k];
    for (;;) {
        ClassObj *pick = NULL;
        bool left = false;
        for (int k = 0; k < nseq && !pick; k++) {
            if (head[k] == start[k + 1]) continue;
            left = true;
            ClassObj *cand = buf[head[k]];
            bool in_tail = false;       /* a good head is in no other list's tail */
            for (int j = 0; j < nseq && !in_tail; j++)
                for (size_t q = head[j] + 1; q < start[j + 1] && !in_tail; q++) in_tail = buf[q] == cand;
            if (!in_tail) pick = cand;
        }
        if (!left) break;
        if (!pick) {
            Buf b = {0};
            for (int k = 0; k < nbases; k++) buf_printf(&b, "%s%s", k ? ", " : "", bases[k]->name);
            ok = b.nomem ? err_nomem(I)
                         : err_raise(I, TDL_ERR_TYPE, "Cannot create a consistent method resolution\norder (MRO) for bases %s",
                                     b.p);
            buf_free(&b);
            break;
        }
        if (!(ok = list_append(I, res, v_obj(V_CLASS, &pick->h)))) break;
        for (int k = 0; k < nseq; k++)
            if (head[k] < start[k + 1] && buf[head[k]] == pick) head[k]++;
    }
    mem_free(buf);
    mem_free(start);
    mem_free(head);
    if (!ok) {
        val_decref(I, v_obj(V_LIST, &res->h));
        return false;
    }
    return tuple_from_list(I, res, out);
}

/* Functions defined in the class learn it, for super() without arguments (CPython's __class__
 * cell); a function already owned by another class keeps that one. */
static void adopt(ClassObj *c, Value v)
{
    if (v.tag == V_DESCR) {
        adopt(c, ((DescrObj *)v.o)->f);
        adopt(c, ((DescrObj *)v.o)->fset);
        return;
    }
    if (v.tag != V_FUNC || as_func(v)->klass) return;
    as_func(v)->klass = c;
    c->h.refcnt++;
}

static bool descr_new(Interp *I, DescrKind kind, Value f, Value fset, Value *out);

/* __slots__ of a new class c (its dict's, if any): c->slots becomes the names its instances may
 * have, its own and its bases', unless a base's instances have a __dict__ (a base without
 * __slots__) or '__dict__' is one of them. CPython's errors for items that are not strings and for
 * a name that is also a class variable. */
static bool class_slots(Interp *I, ClassObj *c, const ClassObj *const *bases, int nbases)
{
    Value sv;
    if (!dict_get_str(I, c->dict, "__slots__", &sv)) return false;
    if (sv.tag == V_UNDEF || c->exc != TDL_ERR_NONE) return true;
    ListObj *names;
    if (sv.tag == V_STR) {
        if (!(names = list_alloc(I, 0)) || !list_append(I, names, sv)) {
            if (names) val_decref(I, v_obj(V_LIST, &names->h));
            return false;
        }
    } else if (!list_from_iterable(I, sv, &names)) {
        return false;
    }
    Value nv = v_obj(V_LIST, &names->h);
    bool ok = true, has_dict = false;
    for (int k = 0; k < nbases; k++) has_dict |= !bases[k]->slots;
    DictObj *set = has_dict ? NULL : dict_alloc(I, V_SET);
    if (!has_dict && !set) ok = false;
    for (size_t k = 0; ok && k < names->n; k++) {
        Value n = names->items[k];
        if (n.tag != V_STR) {
            ok = err_raise(I, TDL_ERR_TYPE, "__slots__ items must be strings, not '%s'", val_type_name(n));
            break;
        }
        Value cv;
        if (!(ok = dict_get_str(I, c->dict, as_str(n)->data, &cv))) break;
        if (cv.tag != V_UNDEF) {
            ok = err_raise(I, TDL_ERR_VALUE, "'%s' in __slots__ conflicts with class variable", as_str(n)->data);
            break;
        }
        if (strcmp(as_str(n)->data, "__dict__") == 0) has_dict = true;
        if (set) ok = dict_set(I, set, n, v_undef());
    }
    for (int k = 0; ok && set && k < nbases; k++) {
        DictEntry *e;
        for (size_t pos = 0; ok && (e = dict_next(bases[k]->slots, &pos));) ok = dict_set(I, set, e->key, v_undef());
    }
    val_decref(I, nv);
    if (ok && set && !has_dict) c->slots = set;
    else if (set) val_decref(I, v_obj(V_SET, &set->h));
    return ok;
}

/* CPython makes a class's __new__ a staticmethod and its __init_subclass__ a classmethod. */
static bool implicit_descriptors(Interp *I, DictObj *dict)
{
    static const struct { const char *name; DescrKind kind; } implicit[] = {
        {"__new__", D_STATICMETHOD}, {"__init_subclass__", D_CLASSMETHOD},
    };
    for (size_t k = 0; k < sizeof implicit / sizeof implicit[0]; k++) {
        Value f, d;
        if (!dict_get_str(I, dict, implicit[k].name, &f)) return false;
        if (f.tag != V_FUNC) continue;
        if (!descr_new(I, implicit[k].kind, f, v_none(), &d)) return false;
        bool ok = dict_set_str(I, dict, implicit[k].name, d);
        val_decref(I, d);
        if (!ok) return false;
    }
    return true;
}

bool class_new(Interp *I, const char *name, const char *qualname, const char *module, const Value *bases,
               int nbases, DictObj *dict, Value *out)
{
    ClassObj *cb[MAX_ARGS];
    int nb = 0;
    tdl_error_kind exc = TDL_ERR_NONE;
    for (int k = 0; k < nbases; k++) {
        Value b = bases[k];
        if (b.tag == V_CLASS) {
            cb[nb++] = (ClassObj *)b.o;
            if (((ClassObj *)b.o)->exc != TDL_ERR_NONE) {
                if (exc != TDL_ERR_NONE && exc != ((ClassObj *)b.o)->exc)
                    return err_raise(I, TDL_ERR_TYPE, "multiple bases have instance lay-out conflict");
                exc = ((ClassObj *)b.o)->exc;
            }
        } else if (b.tag == V_EXCTYPE) {
            if (exc != TDL_ERR_NONE && exc != (tdl_error_kind)b.i)
                return err_raise(I, TDL_ERR_TYPE, "multiple bases have instance lay-out conflict");
            exc = (tdl_error_kind)b.i;
        } else if (!(b.tag == V_TYPE && (b.i == T_OBJECT || b.i == T_TYPE))) {
            if (b.tag == V_TYPE)
                return err_raise(I, TDL_ERR_TYPE, "subclassing the builtin type '%s' is not supported in tdl",
                                 type_name((TypeId)b.i));
            return err_raise(I, TDL_ERR_TYPE, "bases must be types");
        }
    }
    for (int k = 0; k < nbases; k++)
        for (int j = 0; j < k; j++)
            if (bases[k].tag == bases[j].tag && bases[k].i == bases[j].i)
                return err_raise(I, TDL_ERR_TYPE, "duplicate base class %s",
                                 bases[k].tag == V_CLASS ? ((ClassObj *)bases[k].o)->name : val_type_name(bases[k]));
    ClassObj *c = obj_alloc(I, sizeof *c, V_CLASS, true);
    if (!c) return false;
    Value cv = v_obj(V_CLASS, &c->h);
    c->bases = c->mro = v_none();
    c->exc = exc;
    for (int k = 0; k < nbases; k++)
        c->is_meta |= (bases[k].tag == V_TYPE && bases[k].i == T_TYPE) || (bases[k].tag == V_CLASS && ((ClassObj *)bases[k].o)->is_meta);
    c->name = mem_strdup(name);
    c->qualname = mem_strdup(qualname);
    c->module = mem_strdup(module);
    TupleObj *bt = tuple_alloc(I, (size_t)nbases);
    if (!c->name || !c->qualname || !c->module || !bt) {
        if (bt) val_decref(I, v_obj(V_TUPLE, &bt->h));
        val_decref(I, cv);
        return bt ? err_nomem(I) : false;
    }
    for (int k = 0; k < nbases; k++) {
        bt->items[k] = bases[k];
        val_incref(bases[k]);
    }
    c->bases = v_obj(V_TUPLE, &bt->h);
    if (!c3_mro(I, cb, nb, &c->mro)) {
        c->mro = v_none();
        val_decref(I, cv);
        return false;
    }
    c->dict = dict;
    dict->h.refcnt++;
    if (!implicit_descriptors(I, dict) || !class_slots(I, c, (const ClassObj *const *)cb, nb)) {
        val_decref(I, cv);
        return false;
    }
    DictEntry *e;
    for (size_t pos = 0; (e = dict_next(dict, &pos));) adopt(c, e->val);
    *out = cv;
    return true;
}

bool class_init_subclass(Interp *I, Value cls, const Value *kwargs, const char *const *kwnames, int nkw)
{
    Value s, f, r;
    if (!super_new(I, cls, cls, &s)) return false;
    bool ok = val_getattr(I, s, "__init_subclass__", &f);
    val_decref(I, s);
    if (!ok) return false;
    ok = call_value(I, f, kwargs, 0, kwnames, nkw, &r);
    val_decref(I, f);
    if (ok) val_decref(I, r);
    return ok;
}

/* ---- binding ---- */

static bool method_new(Interp *I, Value func, Value self, Value *out)
{
    MethodObj *m = obj_alloc(I, sizeof *m, V_METHOD, true);
    if (!m) return false;
    m->func = func;
    m->self = self;
    val_incref(func);
    val_incref(self);
    *out = v_obj(V_METHOD, &m->h);
    return true;
}

/* What attribute v of a class gives when read through inst (an instance, or V_UNDEF when read
 * from the class cls itself): functions bind, descriptors do what theirs do. */
static bool bind_attr(Interp *I, Value v, Value inst, ClassObj *cls, Value *out)
{
    if (v.tag == V_FUNC && inst.tag != V_UNDEF) return method_new(I, v, inst, out);
    if (v.tag == V_DESCR) {
        DescrObj *d = (DescrObj *)v.o;
        if (d->kind == D_CLASSMETHOD) return method_new(I, d->f, v_obj(V_CLASS, &cls->h), out);
        if (d->kind == D_STATICMETHOD) {
            val_incref(d->f);
            *out = d->f;
            return true;
        }
        if (inst.tag != V_UNDEF) {
            if (d->f.tag == V_NONE) return err_raise(I, TDL_ERR_ATTRIBUTE, "property has no getter");
            return call_value(I, d->f, &inst, 1, NULL, 0, out);
        }
    }
    val_incref(v);
    *out = v;
    return true;
}

/* Looks up dunder method name on the class of self (not on the instance, as CPython) and calls it
 * with args; *found false when the class has none (then nothing is called). */
bool class_call_dunder(Interp *I, Value self, const char *name, const Value *args, int nargs, Value *out,
                       bool *found)
{
    ClassObj *c = self.tag == V_CLASS ? NULL : class_of(self);
    Value f = v_undef();
    *found = false;
    if (!c) return true;
    if (!class_find(I, c, name, &f, NULL)) return false;
    if (f.tag == V_UNDEF || f.tag == V_NONE) return true;
    *found = true;
    if (f.tag == V_FUNC) {
        Value a[4];
        a[0] = self;
        for (int k = 0; k < nargs && k < 3; k++) a[k + 1] = args[k];
        return call_value(I, f, a, nargs + 1, NULL, 0, out);
    }
    Value bound;
    if (!bind_attr(I, f, self, c, &bound)) return false;
    bool ok = call_value(I, bound, args, nargs, NULL, 0, out);
    val_decref(I, bound);
    return ok;
}

/* ---- attributes ---- */

static bool no_attr(Interp *I, Value obj, const char *name)
{
    if (obj.tag == V_CLASS)
        return err_raise(I, TDL_ERR_ATTRIBUTE, "type object '%s' has no attribute '%s'", ((ClassObj *)obj.o)->name, name);
    return err_raise(I, TDL_ERR_ATTRIBUTE, "'%s' object has no attribute '%s'", val_type_name(obj), name);
}

/* The attributes every class has (__name__, __mro__, ...); *found false for other names. */
static bool class_special(Interp *I, ClassObj *c, const char *name, Value *out, bool *found)
{
    *found = true;
    if (strcmp(name, "__name__") == 0) return str_from_cstr(I, c->name, out);
    if (strcmp(name, "__qualname__") == 0) return str_from_cstr(I, c->qualname, out);
    if (strcmp(name, "__module__") == 0) return str_from_cstr(I, c->module, out);
    if (strcmp(name, "__bases__") == 0 || strcmp(name, "__mro__") == 0) {
        Value src = strcmp(name, "__bases__") == 0 ? c->bases : c->mro;
        TupleObj *s = as_tuple(src);
        bool mro = name[2] == 'm';
        TupleObj *t = tuple_alloc(I, s->n + (mro ? 2 : 0) + (!mro && s->n == 0));
        if (!t) return false;
        size_t k = 0;
        if (mro) t->items[k++] = v_obj(V_CLASS, &c->h), val_incref(t->items[0]);
        for (size_t j = 0; j < s->n; j++, k++) {
            t->items[k] = s->items[j];
            val_incref(t->items[k]);
        }
        if (mro || s->n == 0) {
            /* object ends every MRO; an exception class's builtin bases come before it */
            Value obj = {.tag = V_TYPE, .i = T_OBJECT};
            t->items[k] = obj;
        }
        *out = v_obj(V_TUPLE, &t->h);
        return true;
    }
    if (strcmp(name, "__dict__") == 0) {
        DictObj *d = dict_alloc(I, V_DICT);
        if (!d) return false;
        DictEntry *e;
        bool ok = true;
        for (size_t pos = 0; ok && (e = dict_next(c->dict, &pos));) ok = dict_set(I, d, e->key, e->val);
        *out = v_obj(V_DICT, &d->h);
        if (!ok) val_decref(I, *out);
        return ok;
    }
    *found = false;
    return true;
}

bool class_getattr(Interp *I, Value obj, const char *name, Value *out, bool *found)
{
    *found = true;
    switch (obj.tag) {
    case V_INSTANCE: case V_EXC: {
        ClassObj *c = class_of(obj);
        DictObj *d = obj.tag == V_INSTANCE ? ((InstObj *)obj.o)->dict : ((ExcObj *)obj.o)->dict;
        if (!c) {
            *found = false;
            return true;
        }
        Value v;
        /* a property on the class wins over the instance's dict (a data descriptor) */
        if (!class_find(I, c, name, &v, NULL)) return false;
        if (v.tag == V_DESCR && ((DescrObj *)v.o)->kind == D_PROPERTY) return bind_attr(I, v, obj, c, out);
        Value own;
        if (!dict_get_str(I, d, name, &own)) return false;
        if (own.tag != V_UNDEF) {
            val_incref(own);
            *out = own;
            return true;
        }
        if (v.tag != V_UNDEF) return bind_attr(I, v, obj, c, out);
        if (strcmp(name, "__class__") == 0) {
            val_incref(v_obj(V_CLASS, &c->h));
            *out = v_obj(V_CLASS, &c->h);
            return true;
        }
        if (strcmp(name, "__dict__") == 0 && d && !c->slots) {
            val_incref(v_obj(V_DICT, &d->h));
            *out = v_obj(V_DICT, &d->h);
            return true;
        }
        if (obj.tag == V_EXC) {
            *found = false;     /* args, __cause__: the exception's own (ops.c) */
            return true;
        }
        Value ga;
        if (!class_find(I, c, "__getattr__", &ga, NULL)) return false;
        if (ga.tag != V_UNDEF) {
            Value s;
            if (!str_from_cstr(I, name, &s)) return false;
            bool f2, ok = class_call_dunder(I, obj, "__getattr__", &s, 1, out, &f2);
            val_decref(I, s);
            return ok;
        }
        return no_attr(I, obj, name);
    }
    case V_CLASS: {
        ClassObj *c = (ClassObj *)obj.o;
        Value v;
        if (!class_find(I, c, name, &v, NULL)) return false;
        if (v.tag != V_UNDEF) return bind_attr(I, v, v_undef(), c, out);
        bool sp;
        if (!class_special(I, c, name, out, &sp)) return false;
        if (sp) return true;
        /* then its metaclass's attributes, bound to the class (an instance of it) */
        if (c->meta && !class_find(I, c->meta, name, &v, NULL)) return false;
        if (c->meta && v.tag != V_UNDEF) return bind_attr(I, v, obj, c->meta, out);
        return no_attr(I, obj, name);
    }
    case V_METHOD: {
        MethodObj *m = (MethodObj *)obj.o;
        if (strcmp(name, "__self__") == 0 || strcmp(name, "__func__") == 0) {
            *out = name[2] == 's' ? m->self : m->func;
            val_incref(*out);
            return true;
        }
        return val_getattr(I, m->func, name, out);
    }
    case V_SUPER: {
        SuperObj *s = (SuperObj *)obj.o;
        ClassObj *c = s->self.tag == V_CLASS ? (ClassObj *)s->self.o : class_of(s->self);
        /* in a metaclass's method self is a class, an instance of the metaclass */
        bool meta_inst = s->self.tag == V_CLASS && s->cls->is_meta && c->meta && class_is_subclass(c->meta, s->cls);
        if (meta_inst) c = c->meta;
        Value inst = s->self.tag == V_CLASS && !meta_inst ? v_undef() : s->self;
        /* the MRO of self's class after s->cls */
        TupleObj *mro = as_tuple(c->mro);
        size_t k = 0;
        if (c != s->cls) {
            while (k < mro->n && mro->items[k].o != &s->cls->h) k++;
            k++;
        }
        for (; k < mro->n; k++) {
            ClassObj *b = (ClassObj *)mro->items[k].o;
            Value v;
            if (!dict_get_str(I, b->dict, name, &v)) return false;
            if (v.tag != V_UNDEF) return bind_attr(I, v, inst, c, out);
        }
        if (meta_inst && (strcmp(name, "__init__") == 0 || strcmp(name, "__call__") == 0))
            return builtin_bind(I, name[2] == 'i' ? &type_init_builtin : &type_call_builtin, s->self, out);
        if (strcmp(name, "__init__") == 0 && s->self.tag != V_CLASS)
            return builtin_bind(I, c->exc != TDL_ERR_NONE ? &exc_init_builtin : &object_init_builtin, s->self, out);
        if (strcmp(name, "__new__") == 0)
            return builtin_bind(I, s->cls->is_meta ? &type_new_builtin : &object_new_builtin, v_undef(), out);
        if (strcmp(name, "__init_subclass__") == 0 && s->self.tag == V_CLASS)
            return builtin_bind(I, &object_init_subclass_builtin, s->self, out);
        return err_raise(I, TDL_ERR_ATTRIBUTE, "'super' object has no attribute '%s'", name);
    }
    case V_DESCR: {
        DescrObj *d = (DescrObj *)obj.o;
        if (d->kind == D_PROPERTY && (strcmp(name, "setter") == 0 || strcmp(name, "getter") == 0))
            return builtin_bind(I, name[0] == 's' ? &property_setter_builtin : &property_getter_builtin, obj, out);
        if (strcmp(name, "__func__") == 0 || strcmp(name, "fget") == 0) {
            *out = d->f;
            val_incref(*out);
            return true;
        }
        return no_attr(I, obj, name);
    }
    default:
        *found = false;
        return true;
    }
}

bool class_setattr(Interp *I, Value obj, const char *name, Value v, bool *found)
{
    *found = true;
    if (obj.tag == V_CLASS) return dict_set_str(I, ((ClassObj *)obj.o)->dict, name, v);
    ClassObj *c = class_of(obj);
    if (!c) {
        *found = false;
        return true;
    }
    Value p;
    if (!class_find(I, c, name, &p, NULL)) return false;
    if (p.tag == V_DESCR && ((DescrObj *)p.o)->kind == D_PROPERTY) {
        DescrObj *d = (DescrObj *)p.o;
        if (d->fset.tag == V_NONE)
            return err_raise(I, TDL_ERR_ATTRIBUTE, "property '%s' of '%s' object has no setter", name, c->name);
        Value a[2] = {obj, v}, r;
        if (!call_value(I, d->fset, a, 2, NULL, 0, &r)) return false;
        val_decref(I, r);
        return true;
    }
    if (c->slots) {     /* no __dict__: only the names of __slots__ */
        Value key;
        DictEntry *e;
        if (!str_from_cstr(I, name, &key)) return false;
        bool ok = dict_find(I, c->slots, key, &e);
        val_decref(I, key);
        if (!ok) return false;
        if (!e) return no_attr(I, obj, name);
    }
    DictObj **dp = obj.tag == V_INSTANCE ? &((InstObj *)obj.o)->dict : &((ExcObj *)obj.o)->dict;
    if (!*dp && !(*dp = dict_alloc(I, V_DICT))) return false;
    return dict_set_str(I, *dp, name, v);
}

bool class_delattr(Interp *I, Value obj, const char *name, bool *found)
{
    *found = true;
    DictObj *d = obj.tag == V_CLASS ? ((ClassObj *)obj.o)->dict
               : obj.tag == V_INSTANCE ? ((InstObj *)obj.o)->dict
               : obj.tag == V_EXC && class_of(obj) ? ((ExcObj *)obj.o)->dict : NULL;
    if (!d && obj.tag != V_EXC) {
        *found = false;
        return true;
    }
    bool had = false;
    if (d) {
        Value key;
        if (!str_from_cstr(I, name, &key)) return false;
        bool ok = dict_del(I, d, key, &had);
        val_decref(I, key);
        if (!ok) return false;
    }
    if (!had) {
        if (obj.tag == V_CLASS) return err_raise(I, TDL_ERR_ATTRIBUTE, "type object '%s' has no attribute '%s'",
                                                 ((ClassObj *)obj.o)->name, name);
        return err_raise(I, TDL_ERR_ATTRIBUTE, "'%s' object has no attribute '%s'", val_type_name(obj), name);
    }
    return true;
}

/* ---- calls ---- */

/* A new instance of c whose __init__ has not run (object.__new__(c)). */
static bool instance_alloc(Interp *I, ClassObj *c, Value *out)
{
    if (c->exc != TDL_ERR_NONE) {
        if (!exc_new(I, c->exc, NULL, 0, out)) return false;
        ExcObj *e = (ExcObj *)out->o;
        e->cls = c;
        c->h.refcnt++;
        return true;
    }
    InstObj *o = obj_alloc(I, sizeof *o, V_INSTANCE, true);
    if (!o) return false;
    o->cls = c;
    c->h.refcnt++;
    *out = v_obj(V_INSTANCE, &o->h);
    if (!(o->dict = dict_alloc(I, V_DICT))) {
        val_decref(I, *out);
        return false;
    }
    return true;
}

/* Runs c's __init__ on self with the call's arguments; new_given: the class has its own __new__,
 * which takes them when there is no __init__ (CPython's object.__init__ rule). */
static bool call_init(Interp *I, Value self, ClassObj *c, const Value *args, int nargs, const char *const *kwnames,
                      int nkw, bool new_given)
{
    Value init;
    if (!class_find(I, c, "__init__", &init, NULL)) return false;
    if (init.tag == V_UNDEF) {
        if (c->exc != TDL_ERR_NONE) {
            if (nkw) return err_raise(I, TDL_ERR_TYPE, "%s() takes no keyword arguments", c->name);
            return exc_set_args(I, self, args, nargs);
        }
        if ((nargs || nkw) && !new_given) return err_raise(I, TDL_ERR_TYPE, "%s() takes no arguments", c->name);
        return true;
    }
    Value bound, r;
    if (!bind_attr(I, init, self, c, &bound)) return false;
    bool ok = call_value(I, bound, args, nargs, kwnames, nkw, &r);
    val_decref(I, bound);
    if (!ok) return false;
    if (r.tag != V_NONE) {
        ok = err_raise(I, TDL_ERR_TYPE, "__init__() should return None, not '%s'", val_type_name(r));
        val_decref(I, r);
    }
    return ok;
}

static bool instance_call(Interp *I, ClassObj *c, const Value *args, int nargs, const char *const *kwnames, int nkw,
                          Value *out);

bool class_call(Interp *I, Value f, const Value *args, int nargs, const char *const *kwnames, int nkw, Value *out)
{
    if (f.tag == V_METHOD) {
        MethodObj *m = (MethodObj *)f.o;
        if (nargs + nkw + 1 > MAX_ARGS + 1) return err_raise(I, TDL_ERR_TYPE, "too many arguments (at most %d)", MAX_ARGS);
        Value a[nargs + nkw + 1];
        a[0] = m->self;
        if (nargs + nkw) memcpy(a + 1, args, (size_t)(nargs + nkw) * sizeof *a);
        return call_value(I, m->func, a, nargs + 1, kwnames, nkw, out);
    }
    if (f.tag == V_INSTANCE) {
        Value c;
        ClassObj *cls = class_of(f);
        if (!class_find(I, cls, "__call__", &c, NULL)) return false;
        if (c.tag == V_UNDEF) return err_raise(I, TDL_ERR_TYPE, "'%s' object is not callable", cls->name);
        Value bound;
        if (!bind_attr(I, c, f, cls, &bound)) return false;
        bool ok = call_value(I, bound, args, nargs, kwnames, nkw, out);
        val_decref(I, bound);
        return ok;
    }
    if (f.tag == V_DESCR && ((DescrObj *)f.o)->kind == D_STATICMETHOD)
        return call_value(I, ((DescrObj *)f.o)->f, args, nargs, kwnames, nkw, out);
    if (f.tag != V_CLASS) return err_raise(I, TDL_ERR_TYPE, "'%s' object is not callable", val_type_name(f));
    ClassObj *c = (ClassObj *)f.o;
    if (c->is_meta) return class_meta_call(I, c, args, nargs, kwnames, nkw, out);
    if (c->meta) {      /* the metaclass's __call__, when it has one, makes the instance */
        Value call;
        if (!class_find(I, c->meta, "__call__", &call, NULL)) return false;
        if (call.tag != V_UNDEF) {
            Value bound;
            if (!bind_attr(I, call, f, c->meta, &bound)) return false;
            bool ok = call_value(I, bound, args, nargs, kwnames, nkw, out);
            val_decref(I, bound);
            return ok;
        }
    }
    return instance_call(I, c, args, nargs, kwnames, nkw, out);
}

/* type.__call__(c, ...): c.__new__ (its own, or object's) and then c.__init__. */
static bool instance_call(Interp *I, ClassObj *c, const Value *args, int nargs, const char *const *kwnames, int nkw,
                          Value *out)
{
    Value f = v_obj(V_CLASS, &c->h);
    Value self, new_f;
    if (!class_find(I, c, "__new__", &new_f, NULL)) return false;
    if (new_f.tag != V_UNDEF && c->exc == TDL_ERR_NONE) {
        /* cls.__new__(cls, *args): its __init__ runs when it returns an instance of cls */
        if (new_f.tag == V_DESCR && ((DescrObj *)new_f.o)->kind == D_STATICMETHOD) new_f = ((DescrObj *)new_f.o)->f;
        if (nargs + nkw + 1 > MAX_ARGS + 1) return err_raise(I, TDL_ERR_TYPE, "too many arguments (at most %d)", MAX_ARGS);
        Value a[nargs + nkw + 1];
        a[0] = f;
        if (nargs + nkw) memcpy(a + 1, args, (size_t)(nargs + nkw) * sizeof *a);
        if (!call_value(I, new_f, a, nargs + 1, kwnames, nkw, &self)) return false;
        ClassObj *sc = class_of(self);
        if (!sc || !class_is_subclass(sc, c)) {
            *out = self;
            return true;
        }
        if (!call_init(I, self, sc, args, nargs, kwnames, nkw, true)) {
            val_decref(I, self);
            return false;
        }
        *out = self;
        return true;
    }
    if (!instance_alloc(I, c, &self)) return false;
    if (!call_init(I, self, c, args, nargs, kwnames, nkw, false)) {
        val_decref(I, self);
        return false;
    }
    *out = self;
    return true;
}

/* ---- metaclasses ---- */

bool class_metaclass(Interp *I, Value explicit_meta, const Value *bases, int nbases, ClassObj **out)
{
    ClassObj *win = NULL;
    if (explicit_meta.tag == V_CLASS && ((ClassObj *)explicit_meta.o)->is_meta) win = (ClassObj *)explicit_meta.o;
    else if (explicit_meta.tag != V_UNDEF && !(explicit_meta.tag == V_TYPE && explicit_meta.i == T_TYPE))
        return err_raise(I, TDL_ERR_TYPE, "metaclass must be type or a subclass of type in tdl, not '%s'",
                         val_type_name(explicit_meta));
    bool explicit_type = explicit_meta.tag == V_TYPE;
    for (int k = 0; k < nbases; k++) {
        ClassObj *m = bases[k].tag == V_CLASS ? ((ClassObj *)bases[k].o)->meta : NULL;
        if (!m || (win && class_is_subclass(win, m))) continue;
        if (!win && !explicit_type) {
            win = m;
            continue;
        }
        if (win && class_is_subclass(m, win)) {
            win = m;
            continue;
        }
        return err_raise(I, TDL_ERR_TYPE, "metaclass conflict: the metaclass of a derived class must be a (non-strict) "
                                          "subclass of the metaclasses of all its bases");
    }
    *out = win;
    return true;
}

/* type.__new__(meta, name, bases, ns, **kwargs): a class of metaclass meta (NULL: type) with a copy
 * of ns for its attributes (its '__qualname__' taken out), then __init_subclass__(**kwargs). */
static bool type_new(Interp *I, ClassObj *meta, const Value *args, int nargs, const char *const *kwnames, int nkw,
                     Value *out)
{
    if (nargs != 3) return err_raise(I, TDL_ERR_TYPE, "type.__new__() takes exactly 3 arguments (%d given)", nargs);
    if (args[0].tag != V_STR)
        return err_raise(I, TDL_ERR_TYPE, "type.__new__() argument 1 must be str, not %s", val_type_name(args[0]));
    if (args[1].tag != V_TUPLE)
        return err_raise(I, TDL_ERR_TYPE, "type.__new__() argument 2 must be tuple, not %s", val_type_name(args[1]));
    if (args[2].tag != V_DICT)
        return err_raise(I, TDL_ERR_TYPE, "type.__new__() argument 3 must be dict, not %s", val_type_name(args[2]));
    TupleObj *bt = as_tuple(args[1]);
    if (bt->n > MAX_ARGS) return err_raise(I, TDL_ERR_TYPE, "too many bases (at most %d)", MAX_ARGS);
    DictObj *d = dict_alloc(I, V_DICT);
    if (!d) return false;
    DictEntry *e;
    bool ok = true;
    for (size_t pos = 0; ok && (e = dict_next(as_dict(args[2]), &pos));) ok = dict_set(I, d, e->key, e->val);
    Value qn = v_undef(), mod = v_undef(), key;
    if (ok) ok = dict_get_str(I, d, "__qualname__", &qn) && dict_get_str(I, d, "__module__", &mod);
    char *qualname = ok && qn.tag == V_STR ? mem_strdup(as_str(qn)->data) : NULL;
    char *module = ok && mod.tag == V_STR ? mem_strdup(as_str(mod)->data) : NULL;
    if (ok && qn.tag != V_UNDEF && (ok = str_from_cstr(I, "__qualname__", &key))) {
        bool had;
        ok = dict_del(I, d, key, &had);
        val_decref(I, key);
    }
    Value cv = v_undef();
    const char *name = as_str(args[0])->data;
    if (ok) ok = class_new(I, name, qualname ? qualname : name, module ? module : "__main__", bt->items, (int)bt->n, d, &cv);
    mem_free(qualname);
    mem_free(module);
    val_decref(I, v_obj(V_DICT, &d->h));
    if (!ok) return false;
    ClassObj *c = (ClassObj *)cv.o;
    ClassObj *m = meta;
    if (!class_metaclass(I, meta ? v_obj(V_CLASS, &meta->h) : v_undef(), bt->items, (int)bt->n, &m)) {
        val_decref(I, cv);
        return false;
    }
    if (m) {
        c->meta = m;
        m->h.refcnt++;
    }
    if (!class_init_subclass(I, cv, args + nargs, kwnames, nkw)) {
        val_decref(I, cv);
        return false;
    }
    *out = cv;
    return true;
}

bool class_meta_call(Interp *I, ClassObj *meta, const Value *args, int nargs, const char *const *kwnames, int nkw,
                     Value *out)
{
    if (!meta && nargs != 3) return err_raise(I, TDL_ERR_TYPE, "type() takes 1 or 3 arguments");
    Value newf = v_undef(), r;
    if (meta && !class_find(I, meta, "__new__", &newf, NULL)) return false;
    if (newf.tag == V_DESCR && ((DescrObj *)newf.o)->kind == D_STATICMETHOD) newf = ((DescrObj *)newf.o)->f;
    if (newf.tag != V_UNDEF) {
        if (nargs + nkw + 1 > MAX_ARGS + 1) return err_raise(I, TDL_ERR_TYPE, "too many arguments (at most %d)", MAX_ARGS);
        Value a[nargs + nkw + 1];
        a[0] = v_obj(V_CLASS, &meta->h);
        if (nargs + nkw) memcpy(a + 1, args, (size_t)(nargs + nkw) * sizeof *a);
        if (!call_value(I, newf, a, nargs + 1, kwnames, nkw, &r)) return false;
    } else if (!type_new(I, meta, args, nargs, kwnames, nkw, &r)) {
        return false;
    }
    ClassObj *rm = r.tag == V_CLASS ? ((ClassObj *)r.o)->meta : NULL;
    Value init = v_undef();
    if (meta && rm && class_is_subclass(rm, meta) && !class_find(I, rm, "__init__", &init, NULL)) {
        val_decref(I, r);
        return false;
    }
    if (init.tag != V_UNDEF) {
        Value bound, res;
        bool ok = bind_attr(I, init, r, rm, &bound);
        if (ok) {
            ok = call_value(I, bound, args, nargs, kwnames, nkw, &res);
            val_decref(I, bound);
        }
        if (ok && res.tag != V_NONE) {
            ok = err_raise(I, TDL_ERR_TYPE, "__init__() should return None, not '%s'", val_type_name(res));
            val_decref(I, res);
        }
        if (!ok) {
            val_decref(I, r);
            return false;
        }
    }
    *out = r;
    return true;
}

/* type.__new__(mcls, name, bases, ns, **kwargs), reached through super().__new__ in a metaclass. */
static bool bi_type_new(BUILTIN_ARGS)
{
    (void)self;
    if (nargs < 1 || !((args[0].tag == V_CLASS && ((ClassObj *)args[0].o)->is_meta) || (args[0].tag == V_TYPE && args[0].i == T_TYPE)))
        return err_raise(I, TDL_ERR_TYPE, "type.__new__(X): X is not a type object (%s)",
                         nargs < 1 ? "nothing" : val_type_name(args[0]));
    return type_new(I, args[0].tag == V_CLASS ? (ClassObj *)args[0].o : NULL, args + 1, nargs - 1, kwnames, nkw, out);
}

/* type.__init__(cls, ...) does nothing; type.__call__(cls, ...) makes an instance of cls. */
static bool bi_type_init(BUILTIN_ARGS)
{
    (void)I, (void)self, (void)args, (void)nargs, (void)kwnames, (void)nkw;
    *out = v_none();
    return true;
}

static bool bi_type_call(BUILTIN_ARGS)
{
    return instance_call(I, (ClassObj *)self.o, args, nargs, kwnames, nkw, out);
}

const BuiltinDef type_new_builtin = {"__new__", bi_type_new, 0, -1, "*"};
const BuiltinDef type_init_builtin = {"__init__", bi_type_init, 0, -1, "*"};
const BuiltinDef type_call_builtin = {"__call__", bi_type_call, 0, -1, "*"};

/* ---- operators ---- */

static const char *const binop_names[][2] = {
    [OP_ADD] = {"__add__", "__radd__"}, [OP_SUB] = {"__sub__", "__rsub__"}, [OP_MUL] = {"__mul__", "__rmul__"},
    [OP_DIV] = {"__truediv__", "__rtruediv__"}, [OP_FLOORDIV] = {"__floordiv__", "__rfloordiv__"},
    [OP_MOD] = {"__mod__", "__rmod__"}, [OP_POW] = {"__pow__", "__rpow__"},
    [OP_MATMUL] = {"__matmul__", "__rmatmul__"}, [OP_BITAND] = {"__and__", "__rand__"},
    [OP_BITOR] = {"__or__", "__ror__"}, [OP_BITXOR] = {"__xor__", "__rxor__"},
    [OP_LSHIFT] = {"__lshift__", "__rlshift__"}, [OP_RSHIFT] = {"__rshift__", "__rrshift__"},
    [OP_LT] = {"__lt__", "__gt__"}, [OP_LE] = {"__le__", "__ge__"}, [OP_GT] = {"__gt__", "__lt__"},
    [OP_GE] = {"__ge__", "__le__"}, [OP_EQ] = {"__eq__", "__eq__"}, [OP_NE] = {"__ne__", "__ne__"},
};

/* self.name(other): *out V_UNDEF when self has no such method or it returned NotImplemented. */
static bool try_dunder(Interp *I, Value self, const char *name, Value other, Value *out)
{
    bool found;
    *out = v_undef();
    if (self.tag != V_INSTANCE && !(self.tag == V_EXC && class_of(self))) return true;
    Value r;
    if (!class_call_dunder(I, self, name, &other, 1, &r, &found)) return false;
    if (!found) return true;
    if (r.tag == V_NOTIMPL) return true;
    *out = r;
    return true;
}

bool class_binop(Interp *I, LangOp op, Value a, Value b, Value *out, bool *handled)
{
    *handled = true;
    Value r = v_undef();
    ClassObj *ca = class_of(a), *cb = class_of(b);
    /* b's reflected method first when b's class is a proper subclass of a's, as in Python */
    bool sub_first = ca && cb && ca != cb && class_is_subclass(cb, ca);
    if (sub_first && !try_dunder(I, b, binop_names[op][1], a, &r)) return false;
    if (r.tag == V_UNDEF && !try_dunder(I, a, binop_names[op][0], b, &r)) return false;
    if (r.tag == V_UNDEF && !sub_first && ca != cb)
        if (!try_dunder(I, b, binop_names[op][1], a, &r)) return false;
    *handled = r.tag != V_UNDEF;
    if (*handled) *out = r;
    return true;
}

bool class_inplace_binop(Interp *I, LangOp op, Value a, Value b, Value *out, bool *handled)
{
    static const char *const names[] = {
        [OP_ADD] = "__iadd__", [OP_SUB] = "__isub__", [OP_MUL] = "__imul__", [OP_DIV] = "__itruediv__",
        [OP_FLOORDIV] = "__ifloordiv__", [OP_MOD] = "__imod__", [OP_POW] = "__ipow__",
        [OP_MATMUL] = "__imatmul__", [OP_BITAND] = "__iand__", [OP_BITOR] = "__ior__", [OP_BITXOR] = "__ixor__",
        [OP_LSHIFT] = "__ilshift__", [OP_RSHIFT] = "__irshift__",
    };
    Value r = v_undef();
    *handled = false;
    if (op >= sizeof names / sizeof names[0] || !names[op]) return true;
    if (!try_dunder(I, a, names[op], b, &r)) return false;
    *handled = r.tag != V_UNDEF;
    if (*handled) *out = r;
    return true;
}

bool class_compare(Interp *I, LangOp op, Value a, Value b, Value *out)
{
    Value r;
    if (!try_dunder(I, a, binop_names[op][0], b, &r)) return false;
    if (r.tag == V_UNDEF && !try_dunder(I, b, binop_names[op][1], a, &r)) return false;
    if (r.tag != V_UNDEF) {
        *out = r;
        return true;
    }
    if (op == OP_NE) {
        /* object.__ne__: the negation of __eq__ unless that is NotImplemented */
        if (!try_dunder(I, a, "__eq__", b, &r)) return false;
        if (r.tag == V_UNDEF && !try_dunder(I, b, "__eq__", a, &r)) return false;
        if (r.tag != V_UNDEF) {
            bool t;
            bool ok = val_truthy(I, r, &t);
            val_decref(I, r);
            if (ok) *out = v_bool(!t);
            return ok;
        }
    }
    if (op == OP_EQ || op == OP_NE) {
        bool same = a.tag == b.tag && a.o == b.o;
        *out = v_bool(op == OP_EQ ? same : !same);
        return true;
    }
    return err_raise(I, TDL_ERR_TYPE, "'%s' not supported between instances of '%s' and '%s'", lang_op_text[op],
                     val_type_name(a), val_type_name(b));
}

bool class_unary(Interp *I, LangOp op, Value a, Value *out)
{
    const char *name = op == OP_NEG ? "__neg__" : op == OP_POS ? "__pos__" : "__invert__";
    bool found;
    if (!class_call_dunder(I, a, name, NULL, 0, out, &found)) return false;
    if (found) return true;
    return err_raise(I, TDL_ERR_TYPE, "bad operand type for unary %s: '%s'", lang_op_text[op], val_type_name(a));
}

/* ---- protocols ---- */

bool class_len(Interp *I, Value v, int64_t *out)
{
    Value r;
    bool found;
    if (!class_call_dunder(I, v, "__len__", NULL, 0, &r, &found)) return false;
    if (!found) return err_raise(I, TDL_ERR_TYPE, "object of type '%s' has no len()", val_type_name(v));
    bool ok = true;
    if (!is_intlike(r)) ok = err_raise(I, TDL_ERR_TYPE, "'%s' object cannot be interpreted as an integer", val_type_name(r));
    else if (as_i(r) < 0) ok = err_raise(I, TDL_ERR_VALUE, "__len__() should return >= 0");
    else *out = as_i(r);
    val_decref(I, r);
    return ok;
}

bool class_truthy(Interp *I, Value v, bool *out)
{
    Value r;
    bool found;
    if (!class_call_dunder(I, v, "__bool__", NULL, 0, &r, &found)) return false;
    if (found) {
        if (r.tag != V_BOOL) {
            err_raise(I, TDL_ERR_TYPE, "__bool__ should return bool, returned %s", val_type_name(r));
            val_decref(I, r);
            return false;
        }
        *out = r.b;
        return true;
    }
    Value l;
    if (!class_find(I, class_of(v), "__len__", &l, NULL)) return false;
    if (l.tag == V_UNDEF) {
        *out = true;
        return true;
    }
    int64_t n;
    if (!class_len(I, v, &n)) return false;
    *out = n != 0;
    return true;
}

bool class_getitem(Interp *I, Value obj, Value idx, Value *out)
{
    bool found;
    if (obj.tag == V_CLASS) {
        Value f;
        if (!class_find(I, (ClassObj *)obj.o, "__class_getitem__", &f, NULL)) return false;
        if (f.tag != V_UNDEF) {
            Value bound;
            if (!bind_attr(I, f, v_undef(), (ClassObj *)obj.o, &bound)) return false;
            bool ok = call_value(I, bound, &idx, 1, NULL, 0, out);
            val_decref(I, bound);
            return ok;
        }
        return err_raise(I, TDL_ERR_TYPE, "type '%s' is not subscriptable", ((ClassObj *)obj.o)->name);
    }
    if (!class_call_dunder(I, obj, "__getitem__", &idx, 1, out, &found)) return false;
    if (found) return true;
    return err_raise(I, TDL_ERR_TYPE, "'%s' object is not subscriptable", val_type_name(obj));
}

bool class_setitem(Interp *I, Value obj, Value idx, Value v)
{
    Value a[2] = {idx, v}, r;
    bool found;
    if (!class_call_dunder(I, obj, "__setitem__", a, 2, &r, &found)) return false;
    if (!found) return err_raise(I, TDL_ERR_TYPE, "'%s' object does not support item assignment", val_type_name(obj));
    val_decref(I, r);
    return true;
}

bool class_delitem(Interp *I, Value obj, Value idx)
{
    Value r;
    bool found;
    if (!class_call_dunder(I, obj, "__delitem__", &idx, 1, &r, &found)) return false;
    if (!found) return err_raise(I, TDL_ERR_TYPE, "'%s' object doesn't support item deletion", val_type_name(obj));
    val_decref(I, r);
    return true;
}

bool class_contains(Interp *I, Value c, Value item, bool *out)
{
    Value r;
    bool found;
    if (!class_call_dunder(I, c, "__contains__", &item, 1, &r, &found)) return false;
    if (found) {
        bool ok = val_truthy(I, r, out);
        val_decref(I, r);
        return ok;
    }
    /* no __contains__: look through its iteration, as Python does */
    Iter it;
    if (!iter_begin(I, c, &it)) {
        if (I->err.kind == TDL_ERR_TYPE)
            err_raise(I, TDL_ERR_TYPE, "argument of type '%s' is not iterable", val_type_name(c));
        return false;
    }
    bool ok = true;
    *out = false;
    for (bool done = false; ok && !*out;) {
        Value x;
        if (!(ok = iter_next(I, &it, &x, &done)) || done) break;
        ok = val_equal(I, x, item, out);
        val_decref(I, x);
    }
    iter_end(I, &it);
    return ok;
}

bool class_hash(Interp *I, Value v, uint64_t *out, bool *found)
{
    ClassObj *c = class_of(v);
    Value h, eq;
    *found = false;
    if (!c || !class_find(I, c, "__hash__", &h, NULL) || !class_find(I, c, "__eq__", &eq, NULL)) return c == NULL;
    if (h.tag == V_NONE || (h.tag == V_UNDEF && eq.tag != V_UNDEF))
        return err_raise(I, TDL_ERR_TYPE, "unhashable type: '%s'", c->name);
    if (h.tag == V_UNDEF) return true;      /* identity */
    Value r;
    bool f2;
    if (!class_call_dunder(I, v, "__hash__", NULL, 0, &r, &f2)) return false;
    if (!is_intlike(r)) {
        err_raise(I, TDL_ERR_TYPE, "__hash__ method should return an integer");
        val_decref(I, r);
        return false;
    }
    *found = true;
    return val_hash(I, r, out);
}

/* The iteration of an instance: its __iter__'s iterator (an instance with __next__, or any
 * iterator of tdl's own), or, without __iter__, __getitem__ with 0, 1, ... until IndexError. */
bool class_iterable(Interp *I, Value v, bool *yes)
{
    Value m;
    if (!class_find(I, class_of(v), "__iter__", &m, NULL)) return false;
    if (m.tag == V_UNDEF && !class_find(I, class_of(v), "__getitem__", &m, NULL)) return false;
    *yes = m.tag != V_UNDEF;
    return true;
}

bool class_iter_begin(Interp *I, Value v, Iter *it)
{
    Value r;
    bool found;
    if (!class_call_dunder(I, v, "__iter__", NULL, 0, &r, &found)) return false;
    if (found) {
        if (r.tag == V_INSTANCE) {
            Value nx;
            if (!class_find(I, class_of(r), "__next__", &nx, NULL)) {
                val_decref(I, r);
                return false;
            }
            if (nx.tag == V_UNDEF) {
                err_raise(I, TDL_ERR_TYPE, "iter() returned non-iterator of type '%s'", val_type_name(r));
                val_decref(I, r);
                return false;
            }
            memset(it, 0, sizeof *it);
            it->seq = r;        /* takes the reference */
            it->byte = 0;
            return true;
        }
        if (r.tag != V_GEN && r.tag != V_ITER) {
            err_raise(I, TDL_ERR_TYPE, "iter() returned non-iterator of type '%s'", val_type_name(r));
            val_decref(I, r);
            return false;
        }
        bool ok = iter_begin(I, r, it);
        val_decref(I, r);
        return ok;
    }
    Value gi;
    if (!class_find(I, class_of(v), "__getitem__", &gi, NULL)) return false;
    if (gi.tag == V_UNDEF) return err_raise(I, TDL_ERR_TYPE, "'%s' object is not iterable", val_type_name(v));
    memset(it, 0, sizeof *it);
    val_incref(v);
    it->seq = v;
    it->byte = 1;
    return true;
}

bool class_iter_next(Interp *I, Iter *it, Value *out, bool *done)
{
    bool found;
    *done = false;
    if (it->byte == 1) {
        if (it->n < 0) {
            *done = true;
            return true;
        }
        Value idx = v_int(it->i);
        if (class_call_dunder(I, it->seq, "__getitem__", &idx, 1, out, &found)) {
            it->i++;
            return true;
        }
        if (I->err.kind != TDL_ERR_INDEX && I->err.kind != TDL_ERR_STOP_ITERATION) return false;
    } else {
        if (it->n < 0) {
            *done = true;
            return true;
        }
        if (class_call_dunder(I, it->seq, "__next__", NULL, 0, out, &found)) return true;
        if (I->err.kind != TDL_ERR_STOP_ITERATION) return false;
    }
    err_clear(I);
    it->n = -1;     /* exhausted: stays so */
    *done = true;
    return true;
}

/* ---- printing ---- */

bool class_repr(Interp *I, Value v, Buf *b, bool str)
{
    Value r;
    bool found;
    if (v.tag == V_CLASS) {
        ClassObj *c = (ClassObj *)v.o;
        Value f = v_undef();
        /* a metaclass's __str__ / __repr__ shows its classes */
        if (c->meta && str && !class_find(I, c->meta, "__str__", &f, NULL)) return false;
        if (c->meta && f.tag == V_UNDEF && !class_find(I, c->meta, "__repr__", &f, NULL)) return false;
        if (f.tag != V_UNDEF) {
            Value bound;
            if (!bind_attr(I, f, v, c->meta, &bound)) return false;
            bool ok = call_value(I, bound, NULL, 0, NULL, 0, &r);
            val_decref(I, bound);
            if (!ok) return false;
            goto got;
        }
        if (strcmp(c->module, "builtins") == 0) buf_printf(b, "<class '%s'>", c->qualname);
        else buf_printf(b, "<class '%s.%s'>", c->module, c->qualname);
        return true;
    }
    if (v.tag == V_METHOD) {
        MethodObj *m = (MethodObj *)v.o;
        buf_printf(b, "<bound method %s of ", m->func.tag == V_FUNC ? as_func(m->func)->fn->qualname : "?");
        if (!val_repr(I, m->self, b)) return false;
        buf_puts(b, ">");
        return true;
    }
    if (v.tag == V_DESCR) {
        DescrObj *d = (DescrObj *)v.o;
        buf_printf(b, "<%s object at %p>", d->kind == D_PROPERTY ? "property" : d->kind == D_STATICMETHOD ? "staticmethod" : "classmethod",
                   (void *)d);
        return true;
    }
    if (v.tag == V_SUPER) {
        SuperObj *s = (SuperObj *)v.o;
        buf_printf(b, "<super: <class '%s'>, <%s object>>", s->cls->name, val_type_name(s->self));
        return true;
    }
    if (I->nest >= 1000) return err_raise(I, TDL_ERR_RECURSION, "maximum recursion depth exceeded while getting the repr of an object");
    I->nest++;
    bool ok = class_call_dunder(I, v, str ? "__str__" : "__repr__", NULL, 0, &r, &found);
    if (ok && !found && str) ok = class_call_dunder(I, v, "__repr__", NULL, 0, &r, &found);
    I->nest--;
    if (!ok) return false;
    if (!found) {
        ClassObj *c = class_of(v);
        if (strcmp(c->module, "builtins") == 0) buf_printf(b, "<%s object at %p>", c->qualname, (void *)v.o);
        else buf_printf(b, "<%s.%s object at %p>", c->module, c->qualname, (void *)v.o);
        return true;
    }
got:
    if (r.tag != V_STR) {
        err_raise(I, TDL_ERR_TYPE, "%s returned non-string (type %s)", str ? "__str__" : "__repr__", val_type_name(r));
        val_decref(I, r);
        return false;
    }
    buf_put(b, as_str(r)->data, as_str(r)->len);
    val_decref(I, r);
    return true;
}

/* ---- builtins ---- */


static bool descr_new(Interp *I, DescrKind kind, Value f, Value fset, Value *out)
{
    DescrObj *d = obj_alloc(I, sizeof *d, V_DESCR, true);
    if (!d) return false;
    d->kind = kind;
    d->f = f;
    d->fset = fset;
    val_incref(f);
    val_incref(fset);
    *out = v_obj(V_DESCR, &d->h);
    return true;
}

static bool bi_staticmethod(BUILTIN_ARGS)
{
    (void)self, (void)kwnames, (void)nkw, (void)nargs;
    return descr_new(I, D_STATICMETHOD, args[0], v_none(), out);
}

static bool bi_classmethod(BUILTIN_ARGS)
{
    (void)self, (void)kwnames, (void)nkw, (void)nargs;
    return descr_new(I, D_CLASSMETHOD, args[0], v_none(), out);
}

static bool bi_property(BUILTIN_ARGS)
{
    (void)self;
    Value get = nargs > 0 ? args[0] : v_none(), set = nargs > 1 ? args[1] : v_none();
    for (int k = 0; k < nkw; k++) {
        if (strcmp(kwnames[k], "fget") == 0) get = args[nargs + k];
        else set = args[nargs + k];
    }
    return descr_new(I, D_PROPERTY, get, set, out);
}

static bool bi_property_setter(BUILTIN_ARGS)
{
    (void)kwnames, (void)nkw, (void)nargs;
    DescrObj *d = (DescrObj *)self.o;
    return descr_new(I, D_PROPERTY, d->f, args[0], out);
}

static bool bi_property_getter(BUILTIN_ARGS)
{
    (void)kwnames, (void)nkw, (void)nargs;
    DescrObj *d = (DescrObj *)self.o;
    return descr_new(I, D_PROPERTY, args[0], d->fset, out);
}

const BuiltinDef property_setter_builtin = {"setter", bi_property_setter, 1, 1, NULL};
const BuiltinDef property_getter_builtin = {"getter", bi_property_getter, 1, 1, NULL};

static bool bi_object_init(BUILTIN_ARGS)
{
    (void)self, (void)args, (void)kwnames, (void)out;
    if (nargs || nkw)
        return err_raise(I, TDL_ERR_TYPE, "object.__init__() takes exactly one argument (the instance to initialize)");
    *out = v_none();
    return true;
}

static bool bi_exc_init(BUILTIN_ARGS)
{
    (void)kwnames;
    if (nkw) return err_raise(I, TDL_ERR_TYPE, "%s() takes no keyword arguments", val_type_name(self));
    if (!exc_set_args(I, self, args, nargs)) return false;
    *out = v_none();
    return true;
}

/* object.__new__(cls): a bare instance; more arguments are CPython's error. */
static bool bi_object_new(BUILTIN_ARGS)
{
    (void)self, (void)kwnames;
    if (nargs < 1) return err_raise(I, TDL_ERR_TYPE, "object.__new__(): not enough arguments");
    if (args[0].tag != V_CLASS)
        return err_raise(I, TDL_ERR_TYPE, "object.__new__(X): X is not a type object (%s)", val_type_name(args[0]));
    ClassObj *c = (ClassObj *)args[0].o;
    if (nargs > 1 || nkw) {
        Value nf;
        if (!class_find(I, c, "__new__", &nf, NULL)) return false;
        if (nf.tag != V_UNDEF)
            return err_raise(I, TDL_ERR_TYPE, "object.__new__() takes exactly one argument (the type to instantiate)");
        return err_raise(I, TDL_ERR_TYPE, "%s() takes no arguments", c->name);
    }
    return instance_alloc(I, c, out);
}

/* object.__init_subclass__ (bound to the new class): takes no keyword arguments. */
static bool bi_object_init_subclass(BUILTIN_ARGS)
{
    (void)args, (void)kwnames;
    if (nargs || nkw)
        return err_raise(I, TDL_ERR_TYPE, "%s.__init_subclass__() takes no keyword arguments",
                         self.tag == V_CLASS ? ((ClassObj *)self.o)->name : "object");
    *out = v_none();
    return true;
}

const BuiltinDef object_new_builtin = {"__new__", bi_object_new, 0, -1, "*"};
const BuiltinDef object_init_subclass_builtin = {"__init_subclass__", bi_object_init_subclass, 0, -1, "*"};
const BuiltinDef object_init_builtin = {"__init__", bi_object_init, 0, -1, NULL};
const BuiltinDef exc_init_builtin = {"__init__", bi_exc_init, 0, -1, NULL};

bool super_new(Interp *I, Value cls, Value obj, Value *out)
{
    if (cls.tag != V_CLASS) return err_raise(I, TDL_ERR_TYPE, "super() argument 1 must be a type, not %s", val_type_name(cls));
    ClassObj *c = (ClassObj *)cls.o;
    ClassObj *oc = obj.tag == V_CLASS ? (ClassObj *)obj.o : class_of(obj);
    if (oc && !class_is_subclass(oc, c) && obj.tag == V_CLASS && oc->meta && class_is_subclass(oc->meta, c))
        oc = oc->meta;      /* super(M, C) in a metaclass M's method, C an instance of M */
    if (!oc || !class_is_subclass(oc, c))
        return err_raise(I, TDL_ERR_TYPE, "super(type, obj): obj must be an instance or subtype of type");
    SuperObj *s = obj_alloc(I, sizeof *s, V_SUPER, true);
    if (!s) return false;
    s->cls = c;
    c->h.refcnt++;
    s->self = obj;
    val_incref(obj);
    *out = v_obj(V_SUPER, &s->h);
    return true;
}

static bool bi_super(BUILTIN_ARGS)
{
    (void)self, (void)kwnames, (void)nkw;
    if (nargs != 2) return err_raise(I, TDL_ERR_RUNTIME, "super(): no arguments");
    return super_new(I, args[0], args[1], out);
}

const BuiltinDef super_builtin = {"super", bi_super, 0, 2, NULL};

static bool attr_name(Interp *I, Value v, const char *fn)
{
    if (v.tag == V_STR) return true;
    return err_raise(I, TDL_ERR_TYPE, "%s(): attribute name must be string, not '%s'", fn, val_type_name(v));
}

static bool bi_getattr(BUILTIN_ARGS)
{
    (void)self, (void)kwnames, (void)nkw;
    if (!attr_name(I, args[1], "getattr")) return false;
    if (val_getattr(I, args[0], as_str(args[1])->data, out)) return true;
    if (nargs < 3 || I->err.kind != TDL_ERR_ATTRIBUTE) return false;
    err_clear(I);
    *out = args[2];
    val_incref(*out);
    return true;
}

static bool bi_hasattr(BUILTIN_ARGS)
{
    (void)self, (void)kwnames, (void)nkw, (void)nargs;
    if (!attr_name(I, args[1], "hasattr")) return false;
    Value v;
    if (val_getattr(I, args[0], as_str(args[1])->data, &v)) {
        val_decref(I, v);
        *out = v_bool(true);
        return true;
    }
    if (I->err.kind != TDL_ERR_ATTRIBUTE) return false;
    err_clear(I);
    *out = v_bool(false);
    return true;
}

static bool bi_setattr(BUILTIN_ARGS)
{
    (void)self, (void)kwnames, (void)nkw, (void)nargs;
    if (!attr_name(I, args[1], "setattr")) return false;
    if (!val_setattr(I, args[0], as_str(args[1])->data, args[2])) return false;
    *out = v_none();
    return true;
}

static bool bi_delattr(BUILTIN_ARGS)
{
    (void)self, (void)kwnames, (void)nkw, (void)nargs;
    if (!attr_name(I, args[1], "delattr")) return false;
    if (!val_delattr(I, args[0], as_str(args[1])->data)) return false;
    *out = v_none();
    return true;
}

static bool bi_issubclass(BUILTIN_ARGS)
{
    (void)self, (void)kwnames, (void)nkw, (void)nargs;
    bool r;
    if (!class_issubclass(I, args[0], args[1], &r, 0)) return false;
    *out = v_bool(r);
    return true;
}

static const BuiltinDef class_builtins[] = {
    {"staticmethod", bi_staticmethod, 1, 1, NULL},
    {"classmethod", bi_classmethod, 1, 1, NULL},
    {"property", bi_property, 0, 2, "fget fset"},
    {"getattr", bi_getattr, 2, 3, NULL},
    {"hasattr", bi_hasattr, 2, 2, NULL},
    {"setattr", bi_setattr, 3, 3, NULL},
    {"delattr", bi_delattr, 2, 2, NULL},
    {"issubclass", bi_issubclass, 2, 2, NULL},
    {NULL, NULL, 0, 0, NULL},
};

/* Whether class value c derives from cls (a class, builtin exception class, `object`, or a tuple
 * of those), for issubclass and isinstance. */
bool class_issubclass(Interp *I, Value c, Value cls, bool *res, int depth)
{
    if (cls.tag == V_TUPLE && depth < 100) {
        TupleObj *t = as_tuple(cls);
        *res = false;
        for (size_t k = 0; k < t->n && !*res; k++)
            if (!class_issubclass(I, c, t->items[k], res, depth + 1)) return false;
        return true;
    }
    if (c.tag != V_CLASS && c.tag != V_TYPE && c.tag != V_EXCTYPE)
        return err_raise(I, TDL_ERR_TYPE, "issubclass() arg 1 must be a class");
    if (cls.tag == V_TYPE && cls.i == T_OBJECT) {
        *res = true;
        return true;
    }
    if (cls.tag == V_CLASS) {
        *res = c.tag == V_CLASS && class_is_subclass((ClassObj *)c.o, (ClassObj *)cls.o);
        return true;
    }
    if (cls.tag == V_EXCTYPE) {
        tdl_error_kind k = c.tag == V_CLASS ? ((ClassObj *)c.o)->exc : c.tag == V_EXCTYPE ? (tdl_error_kind)c.i : TDL_ERR_NONE;
        *res = k != TDL_ERR_NONE && exc_is_subclass(k, (tdl_error_kind)cls.i);
        return true;
    }
    if (cls.tag == V_TYPE) {
        *res = c.tag == V_TYPE && (c.i == cls.i || (cls.i == T_INT && c.i == T_BOOL));
        return true;
    }
    return err_raise(I, TDL_ERR_TYPE, "issubclass() arg 2 must be a class, a tuple of classes, or a union");
}

bool class_init(Interp *I, Module *m)
{
    for (const BuiltinDef *d = class_builtins; d->name; d++) {
        Value v;
        if (!builtin_bind(I, d, v_undef(), &v)) return false;
        int32_t k = module_slot(m, d->name);
        if (k < 0) {
            val_decref(I, v);
            return err_nomem(I);
        }
        m->vals[k] = v;
    }
    Value v;
    if (!builtin_bind(I, &super_builtin, v_undef(), &v)) return false;
    int32_t k = module_slot(m, "super");
    if (k < 0) {
        val_decref(I, v);
        return err_nomem(I);
    }
    m->vals[k] = v;
    Value obj = {.tag = V_TYPE, .i = T_OBJECT}, ni = {.tag = V_NOTIMPL, .i = 0};
    int32_t ko = module_slot(m, "object"), kn = module_slot(m, "NotImplemented");
    if (ko < 0 || kn < 0) return err_nomem(I);
    m->vals[ko] = obj;
    m->vals[kn] = ni;
    return true;
}
