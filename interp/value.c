/* value.c — objects and their lifetime, the name map, modules, and the error record.
 *
 * Every heap object comes from obj_alloc (the one allocation choke point) and is freed by
 * obj_free when its count reaches zero. Containers are linked into I->objects so that tdl_close
 * can free objects kept alive only by reference cycles. */
#include "interp.h"
#include "hash.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- types ---- */

static const char *const type_names[T__COUNT] = {
    [T_NONETYPE] = "NoneType", [T_BOOL] = "bool", [T_INT] = "int", [T_FLOAT] = "float",
    [T_STR] = "str", [T_TUPLE] = "tuple", [T_LIST] = "list", [T_RANGE] = "range",
    [T_FUNCTION] = "function", [T_BUILTIN] = "builtin_function_or_method", [T_MODULE] = "module",
    [T_TYPE] = "type", [T_CELL] = "cell", [T_ELLIPSIS] = "ellipsis", [T_SLICE] = "slice",
    [T_TENSOR] = "Tensor", [T_DTYPE] = "dtype", [T_DEVICE] = "device", [T_MEMFMT] = "memory_format",
    [T_DIM] = "Dim", [T_DIMLIST] = "DimList", [T_DICT] = "dict", [T_SET] = "set",
    [T_FROZENSET] = "frozenset", [T_DICT_KEYS] = "dict_keys", [T_DICT_VALUES] = "dict_values",
    [T_DICT_ITEMS] = "dict_items", [T_GENERATOR] = "generator", [T_MAP] = "map", [T_FILTER] = "filter",
    [T_LIST_ITERATOR] = "list_iterator", [T_TUPLE_ITERATOR] = "tuple_iterator",
    [T_STR_ITERATOR] = "str_iterator", [T_RANGE_ITERATOR] = "range_iterator",
    [T_DICT_KEYITERATOR] = "dict_keyiterator", [T_DICT_VALUEITERATOR] = "dict_valueiterator",
    [T_DICT_ITEMITERATOR] = "dict_itemiterator", [T_SET_ITERATOR] = "set_iterator",
    [T_ITERATOR] = "iterator", [T_EXCEPTION] = "Exception", [T_CTXMGR] = "context_manager",
    [T_ZIP] = "zip", [T_ENUMERATE] = "enumerate", [T_OBJECT] = "object", [T_METHOD] = "method", [T_STATICMETHOD] = "staticmethod",
    [T_CLASSMETHOD] = "classmethod", [T_PROPERTY] = "property", [T_SUPER] = "super",
    [T_NOTIMPL] = "NotImplementedType",
};

const char *type_name(TypeId t) { return t < T__COUNT ? type_names[t] : "?"; }

const char *val_type_name(Value v)
{
    if (v.tag == V_EXC) return ((ExcObj *)v.o)->cls ? ((ExcObj *)v.o)->cls->name : tdl_error_kind_name(((ExcObj *)v.o)->kind);
    if (v.tag == V_INSTANCE) return ((InstObj *)v.o)->cls->name;
    return type_name(val_type(v));
}

/* Python's class tree of the error kinds; tdl's own kinds hang where PyTorch's errors would
 * (ShapeError and DeviceError are RuntimeErrors, as torch raises RuntimeError for those). */
static tdl_error_kind exc_parent(tdl_error_kind k)
{
    switch (k) {
    case TDL_ERR_BASE_EXCEPTION: return TDL_ERR_NONE;
    case TDL_ERR_INTERRUPT: case TDL_ERR_EXCEPTION: case TDL_ERR_GENERATOR_EXIT: return TDL_ERR_BASE_EXCEPTION;
    case TDL_ERR_ZERO_DIVISION: case TDL_ERR_OVERFLOW: return TDL_ERR_ARITHMETIC;
    case TDL_ERR_INDEX: case TDL_ERR_KEY: return TDL_ERR_LOOKUP;
    case TDL_ERR_UNBOUND_LOCAL: return TDL_ERR_NAME;
    case TDL_ERR_INDENTATION: return TDL_ERR_SYNTAX;
    case TDL_ERR_TAB: return TDL_ERR_INDENTATION;
    case TDL_ERR_USER_WARNING: case TDL_ERR_DEPRECATION_WARNING: case TDL_ERR_FUTURE_WARNING:
    case TDL_ERR_RUNTIME_WARNING:
        return TDL_ERR_WARNING;
    case TDL_ERR_RECURSION: case TDL_ERR_NOT_IMPLEMENTED: case TDL_ERR_SHAPE: case TDL_ERR_DEVICE:
        return TDL_ERR_RUNTIME;
    default: return TDL_ERR_EXCEPTION;
    }
}

bool exc_is_subclass(tdl_error_kind k, tdl_error_kind base)
{
    for (int guard = 0; k != TDL_ERR_NONE && guard < 8; guard++, k = exc_parent(k))
        if (k == base) return true;
    return false;
}

TypeId val_type(Value v)
{
    switch (v.tag) {
    case V_NONE: return T_NONETYPE;
    case V_BOOL: return T_BOOL;
    case V_INT: return T_INT;
    case V_FLOAT: return T_FLOAT;
    case V_TYPE: return T_TYPE;
    case V_STR: return T_STR;
    case V_TUPLE: return T_TUPLE;
    case V_LIST: return T_LIST;
    case V_RANGE: return T_RANGE;
    case V_FUNC: return T_FUNCTION;
    case V_BUILTIN: return T_BUILTIN;
    case V_MODULE: return T_MODULE;
    case V_CELL: return T_CELL;
    case V_ELLIPSIS: return T_ELLIPSIS;
    case V_SLICE: return T_SLICE;
    case V_TENSOR: return T_TENSOR;
    case V_DTYPE: return T_DTYPE;
    case V_DEVICE: return T_DEVICE;
    case V_MEMFMT: return T_MEMFMT;
    case V_DIM: return T_DIM;
    case V_DIMLIST: return T_DIMLIST;
    case V_DICT: return T_DICT;
    case V_SET: return T_SET;
    case V_FROZENSET: return T_FROZENSET;
    case V_DICTVIEW: {
        DictViewKind k = ((DictViewObj *)v.o)->kind;
        return k == DV_KEYS ? T_DICT_KEYS : k == DV_VALUES ? T_DICT_VALUES : T_DICT_ITEMS;
    }
    case V_GEN: return T_GENERATOR;
    case V_EXC: return T_EXCEPTION;
    case V_CTXMGR: return T_CTXMGR;
    case V_EXCTYPE: case V_CLASS: return T_TYPE;
    case V_INSTANCE: return T_OBJECT;
    case V_METHOD: return T_METHOD;
    case V_SUPER: return T_SUPER;
    case V_NOTIMPL: return T_NOTIMPL;
    case V_DESCR: {
        DescrKind k = ((DescrObj *)v.o)->kind;
        return k == D_STATICMETHOD ? T_STATICMETHOD : k == D_CLASSMETHOD ? T_CLASSMETHOD : T_PROPERTY;
    }
    case V_ITER: {
        IterObj *it = (IterObj *)v.o;
        if (it->kind == IK_MAP) return T_MAP;
        if (it->kind == IK_FILTER) return T_FILTER;
        if (it->kind == IK_ZIP) return T_ZIP;
        if (it->kind == IK_ENUM) return T_ENUMERATE;
        Value s = it->its[0].seq;
        switch (s.tag) {
        case V_LIST: return T_LIST_ITERATOR;
        case V_TUPLE: return T_TUPLE_ITERATOR;
        case V_STR: return T_STR_ITERATOR;
        case V_RANGE: return T_RANGE_ITERATOR;
        case V_DICT: return T_DICT_KEYITERATOR;
        case V_SET: case V_FROZENSET: return T_SET_ITERATOR;
        case V_DICTVIEW: {
            DictViewKind k = ((DictViewObj *)s.o)->kind;
            return k == DV_KEYS ? T_DICT_KEYITERATOR : k == DV_VALUES ? T_DICT_VALUEITERATOR : T_DICT_ITEMITERATOR;
        }
        default: return T_ITERATOR;
        }
    }
    default: return T_NONETYPE;
    }
}

/* ---- allocation ---- */

void *obj_alloc(Interp *I, size_t size, uint8_t tag, bool track)
{
    Obj *o = mem_malloc(size);      /* not calloc: glibc's skips its per-thread cache */
    if (!o) {
        err_nomem(I);
        return NULL;
    }
    memset(o, 0, size);
    o->refcnt = 1;
    o->tag = tag;
    if (track) {
        o->tracked = 1;
        o->next = I->objects.next;
        o->prev = &I->objects;
        I->objects.next->prev = o;
        I->objects.next = o;
    }
    return o;
}

static void untrack(Obj *o)
{
    if (!o->tracked) return;
    o->prev->next = o->next;
    o->next->prev = o->prev;
    o->tracked = 0;
}

/* Releases n values (the caller has already detached the array from its owner) and the array. */
static void drop_values(Interp *I, Value *vals, size_t n)
{
    for (size_t i = 0; i < n; i++) val_decref(I, vals[i]);
    mem_free(vals);
}

/* Frees what an emptied object owns besides values (syntax tree, names, a tensor). */
static void release_extras(Obj *o)
{
    if (o->tag == V_FUNC) lang_unit_release(((FuncObj *)o)->unit);
    if (o->tag == V_GEN) {
        lang_unit_release(((GenObj *)o)->unit);
        mem_free(((GenObj *)o)->co);
    }
    if (o->tag == V_CTXMGR && ((CtxMgrObj *)o)->free_ud) ((CtxMgrObj *)o)->free_ud(((CtxMgrObj *)o)->ud);
    if (o->tag == V_TENSOR) {
        fc_tensor_release(((TensorObj *)o)->t);
        fc_tensor_release(((TensorObj *)o)->fa);
        fc_tensor_release(((TensorObj *)o)->fb);
    }
    if (o->tag == V_DIM) fc_dim_release(((DimObj *)o)->d);
    if (o->tag == V_DIMLIST) {
        DimListObj *l = (DimListObj *)o;
        for (int k = 0; l->dims && k < l->n; k++) fc_dim_release(l->dims[k]);
        mem_free(l->dims);
        mem_free(l->name);
    }
    if (o->tag == V_CLASS) {
        ClassObj *c = (ClassObj *)o;
        mem_free(c->name);
        mem_free(c->qualname);
        mem_free(c->module);
    }
    if (o->tag == V_MODULE) {
        Module *m = (Module *)o;
        namemap_free(&m->names);
        mem_free(m->val_names);
        mem_free(m->name);
        mem_free(m->path);
    }
}

/* Drops the reference *p (to an object of any tag; NULL: none) and clears it. */
static void drop_obj(Interp *I, Obj **p)
{
    Obj *o = *p;
    *p = NULL;
    if (o && --o->refcnt == 0) obj_free(I, o);
}

/* Drops the references an object holds, leaving it empty but allocated. */
static void obj_clear(Interp *I, Obj *o)
{
    switch (o->tag) {
    case V_TUPLE: {
        TupleObj *t = (TupleObj *)o;
        for (size_t i = 0; i < t->n; i++) {
            Value v = t->items[i];
            t->items[i] = v_none();
            val_decref(I, v);
        }
        break;
    }
    case V_LIST: {
        ListObj *l = (ListObj *)o;
        Value *items = l->items;
        size_t n = l->n;
        l->items = NULL;
        l->n = l->cap = 0;
        drop_values(I, items, n);
        break;
    }
    case V_CELL: {
        CellObj *c = (CellObj *)o;
        Value v = c->v;
        c->v = v_undef();
        val_decref(I, v);
        break;
    }
    case V_FUNC: {
        FuncObj *f = (FuncObj *)o;
        if (f->defaults) {
            for (int i = 0; i < f->fn->ndefaults; i++) val_decref(I, f->defaults[i]);
            mem_free(f->defaults);
            f->defaults = NULL;
        }
        if (f->cells) {
            for (int i = 0; i < f->fn->nfree; i++)
                if (f->cells[i]) val_decref(I, v_obj(V_CELL, &f->cells[i]->h));
            mem_free(f->cells);
            f->cells = NULL;
        }
        if (f->module) {
            Module *m = f->module;
            f->module = NULL;
            val_decref(I, v_obj(V_MODULE, &m->h));
        }
        drop_obj(I, (Obj **)&f->klass);
        break;
    }
    case V_SLICE: {
        SliceObj *s = (SliceObj *)o;
        Value a = s->start, b = s->stop, c = s->step;
        s->start = s->stop = s->step = v_none();
        val_decref(I, a);
        val_decref(I, b);
        val_decref(I, c);
        break;
    }
    case V_DICT: case V_SET: case V_FROZENSET:
        dict_clear(I, (DictObj *)o);
        break;
    case V_GEN: {
        GenObj *g = (GenObj *)o;
        gen_free_co(I, g);      /* a suspended generator function unwinds first */
        for (int k = 0; k < g->nloops; k++) iter_end(I, &g->its[k]);
        g->nloops = 0;
        g->done = true;
        if (g->slots) {
            Value *slots = g->slots;
            int n = g->fn->nslots;
            g->slots = NULL;
            for (int i = 0; i < n; i++) val_decref(I, slots[i]);
            mem_free(slots);
        }
        if (g->cells) {
            CellObj **cells = g->cells;
            g->cells = NULL;
            for (int i = 0; i < g->fn->nfree; i++)
                if (cells[i]) val_decref(I, v_obj(V_CELL, &cells[i]->h));
            mem_free(cells);
        }
        mem_free(g->loops);
        mem_free(g->its);
        g->loops = NULL;
        g->its = NULL;
        if (g->module) {
            Module *m = g->module;
            g->module = NULL;
            val_decref(I, v_obj(V_MODULE, &m->h));
        }
        break;
    }
    case V_EXC: {
        ExcObj *e = (ExcObj *)o;
        Value a = e->args, m = e->msg, c = e->cause;
        e->args = e->msg = e->cause = v_none();
        val_decref(I, a);
        val_decref(I, m);
        val_decref(I, c);
        drop_obj(I, (Obj **)&e->cls);
        drop_obj(I, (Obj **)&e->dict);
        break;
    }
    case V_CLASS: {
        ClassObj *c = (ClassObj *)o;
        Value b = c->bases, m = c->mro;
        c->bases = c->mro = v_none();
        val_decref(I, b);
        val_decref(I, m);
        drop_obj(I, (Obj **)&c->dict);
        drop_obj(I, (Obj **)&c->slots);
        drop_obj(I, (Obj **)&c->meta);
        break;
    }
    case V_INSTANCE:
        drop_obj(I, (Obj **)&((InstObj *)o)->cls);
        drop_obj(I, (Obj **)&((InstObj *)o)->dict);
        break;
    case V_METHOD: case V_DESCR: case V_SUPER: {
        Value *a = o->tag == V_METHOD ? &((MethodObj *)o)->func : o->tag == V_DESCR ? &((DescrObj *)o)->f : &((SuperObj *)o)->self;
        Value *b = o->tag == V_METHOD ? &((MethodObj *)o)->self : o->tag == V_DESCR ? &((DescrObj *)o)->fset : NULL;
        Value x = *a, y = b ? *b : v_none();
        *a = v_none();
        if (b) *b = v_none();
        val_decref(I, x);
        val_decref(I, y);
        if (o->tag == V_SUPER) drop_obj(I, (Obj **)&((SuperObj *)o)->cls);
        break;
    }
    case V_ITER: {
        IterObj *it = (IterObj *)o;
        for (int k = 0; k < it->n; k++) iter_end(I, &it->its[k]);
        it->n = 0;
        Value f = it->fn;
        it->fn = v_undef();
        val_decref(I, f);
        break;
    }
    case V_DICTVIEW: {
        DictViewObj *dv = (DictViewObj *)o;
        DictObj *d = dv->d;
        dv->d = NULL;
        if (d) val_decref(I, v_obj(d->h.tag, &d->h));
        break;
    }
    case V_BUILTIN: {
        BuiltinObj *b = (BuiltinObj *)o;
        Value v = b->self;
        b->self = v_undef();
        val_decref(I, v);
        break;
    }
    case V_MODULE: {
        Module *m = (Module *)o;
        Value *vals = m->vals;
        size_t n = m->nvals;
        m->vals = NULL;
        m->nvals = m->cap = 0;
        drop_values(I, vals, n);
        break;
    }
    default:
        break;
    }
}

static void obj_destroy(Interp *I, Obj *o);

/* Freeing a deeply nested structure must not recurse once per level: past a small depth the
 * object is queued and freed by the outermost obj_free (Python's "trashcan"). */
void obj_free(Interp *I, Obj *o)
{
    if (I->free_depth >= 32) {
        untrack(o);
        o->next = I->deferred;
        I->deferred = o;
        return;
    }
    I->free_depth++;
    obj_destroy(I, o);
    if (I->free_depth == 1) {
        while (I->deferred) {
            Obj *d = I->deferred;
            I->deferred = d->next;
            obj_destroy(I, d);
        }
    }
    I->free_depth--;
}

static void obj_destroy(Interp *I, Obj *o)
{
    o->refcnt = 1;          /* keep it alive while its children go */
    obj_clear(I, o);
    untrack(o);
    release_extras(o);
    mem_free(o);
}

void gen_close_all(Interp *I)
{
    /* a generator's unwinding may make others (and free some): start over after each */
    for (bool again = true; again;) {
        again = false;
        for (Obj *o = I->objects.next; o != &I->objects; o = o->next) {
            GenObj *g = (GenObj *)o;
            if (o->tag != V_GEN || !g->co || g->done || !gen_started(g)) continue;
            o->refcnt++;
            gen_free_co(I, g);
            if (--o->refcnt == 0) obj_free(I, o);
            again = true;
            break;
        }
    }
}

/* Frees every tracked object, cycles included (tdl_close). */
void objects_free_all(Interp *I)
{
    /* First empty every container, which breaks all cycles, then free what is left. */
    for (Obj *o = I->objects.next; o != &I->objects; o = o->next) o->refcnt++;
    for (Obj *o = I->objects.next; o != &I->objects; o = o->next) obj_clear(I, o);
    while (I->objects.next != &I->objects) {
        Obj *o = I->objects.next;
        untrack(o);
        release_extras(o);
        mem_free(o);
    }
}

/* ---- constructors ---- */

bool str_new(Interp *I, const char *s, size_t len, Value *out)
{
    StrObj *o = obj_alloc(I, sizeof *o + len + 1, V_STR, false);
    if (!o) return false;
    o->len = len;
    o->hash = 0;
    memcpy(o->data, s, len);
    o->data[len] = '\0';
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
    o->nchars = n;
    *out = v_obj(V_STR, &o->h);
    return true;
}

bool str_from_cstr(Interp *I, const char *s, Value *out) { return str_new(I, s, strlen(s), out); }

bool str_printf(Interp *I, Value *out, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return err_raise(I, TDL_ERR_RUNTIME, "bad format");
    if ((size_t)n < sizeof small) return str_new(I, small, (size_t)n, out);
    char *big = mem_malloc((size_t)n + 1);
    if (!big) return err_nomem(I);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    bool ok = str_new(I, big, (size_t)n, out);
    mem_free(big);
    return ok;
}

TupleObj *tuple_alloc(Interp *I, size_t n)
{
    if (n > (SIZE_MAX - sizeof(TupleObj)) / sizeof(Value)) {
        err_nomem(I);
        return NULL;
    }
    TupleObj *t = obj_alloc(I, sizeof *t + n * sizeof(Value), V_TUPLE, n > 0);
    if (!t) return NULL;
    t->n = n;
    t->fields = NULL;
    for (size_t i = 0; i < n; i++) t->items[i] = v_none();
    return t;
}

ListObj *list_alloc(Interp *I, size_t n)
{
    ListObj *l = obj_alloc(I, sizeof *l, V_LIST, true);
    if (!l) return NULL;
    if (n) {
        l->items = n <= SIZE_MAX / sizeof(Value) ? mem_malloc(n * sizeof(Value)) : NULL;
        if (!l->items) {
            untrack(&l->h);
            mem_free(l);
            err_nomem(I);
            return NULL;
        }
        for (size_t i = 0; i < n; i++) l->items[i] = v_none();
    }
    l->n = l->cap = n;
    return l;
}

bool list_append(Interp *I, ListObj *l, Value v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        Value *p = cap <= SIZE_MAX / sizeof(Value) ? mem_realloc(l->items, cap * sizeof(Value)) : NULL;
        if (!p) return err_nomem(I);
        l->items = p;
        l->cap = cap;
    }
    val_incref(v);
    l->items[l->n++] = v;
    return true;
}

bool range_new(Interp *I, int64_t start, int64_t stop, int64_t step, Value *out)
{
    RangeObj *r = obj_alloc(I, sizeof *r, V_RANGE, false);
    if (!r) return false;
    r->start = start;
    r->stop = stop;
    r->step = step;
    *out = v_obj(V_RANGE, &r->h);
    return true;
}

int64_t range_len(const RangeObj *r)
{
    /* Computed in unsigned arithmetic: stop - start may not fit in int64. */
    if (r->step > 0) {
        if (r->stop <= r->start) return 0;
        uint64_t span = (uint64_t)r->stop - (uint64_t)r->start;
        return (int64_t)((span - 1) / (uint64_t)r->step + 1);
    }
    if (r->stop >= r->start) return 0;
    uint64_t span = (uint64_t)r->start - (uint64_t)r->stop;
    return (int64_t)((span - 1) / ((uint64_t)-(r->step + 1) + 1) + 1);
}

CellObj *cell_new(Interp *I, Value v)
{
    CellObj *c = obj_alloc(I, sizeof *c, V_CELL, true);
    if (!c) return NULL;
    val_incref(v);
    c->v = v;
    return c;
}

bool slice_new(Interp *I, Value start, Value stop, Value step, Value *out)
{
    SliceObj *s = obj_alloc(I, sizeof *s, V_SLICE, false);
    if (!s) return false;
    val_incref(start);
    val_incref(stop);
    val_incref(step);
    s->start = start;
    s->stop = stop;
    s->step = step;
    *out = v_obj(V_SLICE, &s->h);
    return true;
}

bool builtin_bind(Interp *I, const BuiltinDef *def, Value self, Value *out)
{
    BuiltinObj *b = obj_alloc(I, sizeof *b, V_BUILTIN, IS_OBJ(self));
    if (!b) return false;
    b->def = def;
    val_incref(self);
    b->self = self;
    b->unbound = false;
    *out = v_obj(V_BUILTIN, &b->h);
    return true;
}

bool builtin_unbound(Interp *I, const BuiltinDef *def, TypeId t, Value *out)
{
    Value type = {.tag = V_TYPE, .i = t};
    if (!builtin_bind(I, def, type, out)) return false;
    as_builtin(*out)->unbound = true;
    return true;
}

bool tensor_value_steal(Interp *I, FcTensor *t, Value *out)
{
    TensorObj *o = obj_alloc(I, sizeof *o, V_TENSOR, false);
    if (!o) {
        fc_tensor_release(t);
        return false;
    }
    o->t = t;
    *out = v_obj(V_TENSOR, &o->h);
    return true;
}

bool dim_value_steal(Interp *I, FcDim *d, Value *out)
{
    DimObj *o = obj_alloc(I, sizeof *o, V_DIM, false);
    if (!o) {
        fc_dim_release(d);
        return false;
    }
    o->d = d;
    *out = v_obj(V_DIM, &o->h);
    return true;
}

bool dimlist_new(Interp *I, const char *name, bool named, Value *out)
{
    DimListObj *o = obj_alloc(I, sizeof *o, V_DIMLIST, false);
    if (!o) return false;
    o->name = mem_strdup(name);
    o->named = named;
    if (!o->name) {
        val_decref(I, v_obj(V_DIMLIST, &o->h));
        return err_nomem(I);
    }
    *out = v_obj(V_DIMLIST, &o->h);
    return true;
}

FuncObj *func_alloc(Interp *I, LangFunc *fn, LangUnit *unit, Module *m)
{
    FuncObj *f = obj_alloc(I, sizeof *f, V_FUNC, true);
    if (!f) return NULL;
    f->fn = fn;
    f->unit = lang_unit_retain(unit);
    f->module = m;
    m->h.refcnt++;
    if (fn->ndefaults) f->defaults = mem_calloc((size_t)fn->ndefaults, sizeof(Value));
    if (fn->nfree) f->cells = mem_calloc((size_t)fn->nfree, sizeof(CellObj *));
    if ((fn->ndefaults && !f->defaults) || (fn->nfree && !f->cells)) {
        obj_free(I, &f->h);
        err_nomem(I);
        return NULL;
    }
    return f;
}

Module *module_new(Interp *I, const char *name, const char *path)
{
    Module *m = obj_alloc(I, sizeof *m, V_MODULE, true);
    if (!m) return NULL;
    memset((char *)m + sizeof(Obj), 0, sizeof *m - sizeof(Obj));
    m->name = mem_strdup(name);
    m->path = path ? mem_strdup(path) : NULL;
    if (!m->name || (path && !m->path)) {
        obj_free(I, &m->h);
        err_nomem(I);
        return NULL;
    }
    return m;
}

int32_t module_slot(Module *m, const char *name)
{
    int32_t k = namemap_get(&m->names, name);
    if (k >= 0) return k;
    if (m->nvals == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        Value *v = mem_realloc(m->vals, cap * sizeof *v);
        if (!v) return -1;
        m->vals = v;
        const char **nm = mem_realloc(m->val_names, cap * sizeof *nm);
        if (!nm) return -1;
        m->val_names = nm;
        m->cap = cap;
    }
    k = (int32_t)m->nvals;
    const char *key = namemap_put(&m->names, name, k);
    if (!key) return -1;
    m->vals[k] = v_undef();
    m->val_names[k] = key;
    m->nvals++;
    return k;
}

/* ---- name map: open addressing, FNV-1a ---- */

static uint64_t hash_str(const char *s) { return fnv1a_str(FNV1A_SEED, s); }

int32_t namemap_get(const NameMap *m, const char *key)
{
    if (!m->cap) return -1;
    size_t mask = m->cap - 1;
    for (size_t i = hash_str(key) & mask;; i = (i + 1) & mask) {
        if (!m->keys[i]) return -1;
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
    }
}

static bool namemap_grow(NameMap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    const char **keys = mem_calloc(cap, sizeof *keys);
    int32_t *vals = mem_calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        mem_free(keys);
        mem_free(vals);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = hash_str(m->keys[i]) & (cap - 1);
        while (keys[j]) j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    mem_free(m->keys);
    mem_free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return true;
}

const char *namemap_put(NameMap *m, const char *key, int32_t val)
{
    if ((m->n + 1) * 2 > m->cap && !namemap_grow(m)) return NULL;
    size_t mask = m->cap - 1;
    size_t i = hash_str(key) & mask;
    for (; m->keys[i]; i = (i + 1) & mask)
        if (strcmp(m->keys[i], key) == 0) {
            m->vals[i] = val;
            return m->keys[i];
        }
    char *k = mem_strdup(key);
    if (!k) return NULL;
    m->keys[i] = k;
    m->vals[i] = val;
    m->n++;
    return k;
}

void namemap_free(NameMap *m)
{
    for (size_t i = 0; i < m->cap; i++) mem_free((char *)m->keys[i]);
    mem_free(m->keys);
    mem_free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- errors ---- */

/* Frees an error record made by err_set_context (its own context too). */
static void err_free_context(Interp *I, Error *c)
{
    if (!c) return;
    err_drop(I, c);
    mem_free(c);
}

void err_set_context(Interp *I, Error *ctx)
{
    Error *e = &I->err;
    bool same = e->exc && e->exc == ctx->exc;
    ExcObj *x = e->exc ? (ExcObj *)e->exc : NULL;
    if (e->kind == TDL_ERR_NONE || same || e->context || I->exiting) {
        err_free_context(I, ctx);
        return;
    }
    /* raise X from Y, Y the exception being handled: CPython's "direct cause" */
    e->context_is_cause = x && IS_OBJ(x->cause) && ctx->exc && x->cause.o == ctx->exc;
    if (x && x->suppress_context && !e->context_is_cause) {
        err_free_context(I, ctx);
        return;
    }
    e->context = ctx;
    mem_free(e->report);
    e->report = NULL;
}

void err_clear(Interp *I)
{
    Error *e = &I->err;
    if (e->context) {
        Error *c = e->context;
        e->context = NULL;
        err_free_context(I, c);
    }
    if (e->exc) {
        Obj *x = e->exc;
        e->exc = NULL;
        val_decref(I, v_obj(V_EXC, x));
    }
    for (size_t i = 0; i < e->ntrace; i++) lang_source_release(e->trace[i].src);
    mem_free(e->msg);
    mem_free(e->report);
    /* The trace array stays (tdl_close frees it): a MemoryError must still get its location when
     * nothing more can be allocated. */
    TraceEntry *trace = e->trace;
    size_t cap = e->cap;
    memset(e, 0, sizeof *e);
    e->trace = trace;
    e->cap = cap;
}

bool err_raise(Interp *I, tdl_error_kind kind, const char *fmt, ...)
{
    err_clear(I);
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (mem_vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    if (!msg) return err_nomem(I);     /* no room for the message: the error is that */
    I->err.kind = kind;
    I->err.msg = msg;
    I->err.need_loc = true;
    return false;
}

void err_move(Interp *I, Error *dst)
{
    *dst = I->err;
    memset(&I->err, 0, sizeof I->err);
}

void err_put_back(Interp *I, Error *src)
{
    err_clear(I);
    mem_free(I->err.trace);
    I->err = *src;
    memset(src, 0, sizeof *src);
}

void err_drop(Interp *I, Error *e)
{
    Error cur;
    err_move(I, &cur);
    I->err = *e;
    err_clear(I);
    mem_free(I->err.trace);
    I->err = cur;
    memset(e, 0, sizeof *e);
}

bool ctxmgr_new(Interp *I, const char *name, CtxEnterFn enter, CtxExitFn exit, void *ud,
                void (*free_ud)(void *ud), Value *out)
{
    CtxMgrObj *m = obj_alloc(I, sizeof *m, V_CTXMGR, false);
    if (!m) {
        if (free_ud) free_ud(ud);
        return false;
    }
    m->enter = enter;
    m->exit = exit;
    m->ud = ud;
    m->free_ud = free_ud;
    m->name = name;
    *out = v_obj(V_CTXMGR, &m->h);
    return true;
}

bool exc_new(Interp *I, tdl_error_kind kind, const Value *args, int nargs, Value *out)
{
    ExcObj *e = obj_alloc(I, sizeof *e, V_EXC, true);
    if (!e) return false;
    e->kind = kind;
    e->args = e->msg = e->cause = v_none();
    Value ev = v_obj(V_EXC, &e->h);
    TupleObj *t = tuple_alloc(I, (size_t)nargs);
    if (!t) {
        val_decref(I, ev);
        return false;
    }
    for (int k = 0; k < nargs; k++) {
        val_incref(args[k]);
        t->items[k] = args[k];
    }
    e->args = v_obj(V_TUPLE, &t->h);
    /* str(e): nothing, the one argument (a KeyError's repr), or the tuple */
    Buf b = {0};
    bool ok = nargs == 0 ? true
            : nargs == 1 ? (kind == TDL_ERR_KEY ? val_repr(I, args[0], &b) : val_str(I, args[0], &b))
            : val_repr(I, e->args, &b);
    if (ok && b.nomem) ok = err_nomem(I);
    if (ok) ok = str_new(I, b.p ? b.p : "", b.n, &e->msg);
    buf_free(&b);
    if (!ok) {
        val_decref(I, ev);
        return false;
    }
    *out = ev;
    return true;
}

bool exc_set_args(Interp *I, Value exc, const Value *args, int nargs)
{
    Value tmp;
    if (!exc_new(I, ((ExcObj *)exc.o)->kind, args, nargs, &tmp)) return false;
    ExcObj *e = (ExcObj *)exc.o, *t = (ExcObj *)tmp.o;
    Value a = e->args, m = e->msg;
    e->args = t->args;
    e->msg = t->msg;
    t->args = a;
    t->msg = m;
    val_decref(I, tmp);
    return true;
}

bool exc_from_error(Interp *I, Value *out)
{
    if (I->err.exc) {
        *out = v_obj(V_EXC, I->err.exc);
        val_incref(*out);
        return true;
    }
    Error saved;
    err_move(I, &saved);     /* making the object must not disturb the record */
    const char *msg = saved.msg ? saved.msg : saved.kind == TDL_ERR_MEMORY ? "out of memory" : "";
    Value m;
    bool ok = str_from_cstr(I, msg, &m);
    if (ok) {
        ok = exc_new(I, saved.kind, &m, *msg ? 1 : 0, out);
        val_decref(I, m);
    }
    if (ok && saved.kind == TDL_ERR_KEY) {     /* the message is the key's repr already */
        ExcObj *e = (ExcObj *)out->o;
        Value old = e->msg;
        ok = str_from_cstr(I, msg, &e->msg);
        if (ok) val_decref(I, old);
        else e->msg = old;
    }
    if (ok) {
        err_put_back(I, &saved);
        return true;
    }
    err_drop(I, &saved);
    return false;
}

bool exc_raise(Interp *I, Value exc)
{
    ExcObj *e = (ExcObj *)exc.o;
    if (e->cls) {
        /* an instance of a user exception class reports its str(), which __str__ may make */
        Buf b = {0};
        bool ok = val_str(I, exc, &b);
        if (ok) err_raise(I, e->kind, "%s", b.p ? b.p : "");
        buf_free(&b);
        if (!ok || I->err.kind != e->kind) return false;
        val_incref(exc);
        I->err.exc = &e->h;
        return false;
    }
    err_raise(I, e->kind, "%s", as_str(e->msg)->data);
    if (I->err.kind != e->kind) return false;      /* no memory for the message */
    val_incref(exc);
    I->err.exc = &e->h;
    return false;
}

bool err_nomem(Interp *I)
{
    err_clear(I);
    I->err.kind = TDL_ERR_MEMORY;
    I->err.msg = NULL;      /* err_message says it without allocating */
    I->err.need_loc = true;
    MemAccount *a = &interp_shell(I)->mem;
    if (__atomic_exchange_n(&a->hit, false, __ATOMIC_RELAXED)) {
        snprintf(I->err.nomem, sizeof I->err.nomem, "over the interpreter's memory limit (max_memory = %lld bytes)",
                 (long long)a->limit);
    }
    return false;
}

const char *err_message(const Interp *I)
{
    const Error *e = &I->err;
    if (e->msg) return e->msg;
    if (e->kind != TDL_ERR_MEMORY) return "";
    return e->nomem[0] ? e->nomem : "out of memory";
}

void err_trace(Interp *I, LangSource *src, uint32_t pos, const char *func)
{
    Error *e = &I->err;
    if (e->ntrace == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 8;
        TraceEntry *t = mem_realloc(e->trace, cap * sizeof *t);
        if (!t) return;     /* a shorter traceback, not a second error */
        e->trace = t;
        e->cap = cap;
    }
    e->trace[e->ntrace].src = lang_source_retain(src);
    e->trace[e->ntrace].pos = pos;
    snprintf(e->trace[e->ntrace].func, sizeof e->trace[e->ntrace].func, "%s", func);
    e->ntrace++;
}

static const char *const kind_names[TDL_ERR__COUNT] = {
    [TDL_ERR_NONE] = "", [TDL_ERR_SYNTAX] = "SyntaxError", [TDL_ERR_INDENTATION] = "IndentationError",
    [TDL_ERR_NAME] = "NameError", [TDL_ERR_UNBOUND_LOCAL] = "UnboundLocalError",
    [TDL_ERR_TYPE] = "TypeError", [TDL_ERR_VALUE] = "ValueError", [TDL_ERR_INDEX] = "IndexError",
    [TDL_ERR_KEY] = "KeyError", [TDL_ERR_ATTRIBUTE] = "AttributeError",
    [TDL_ERR_ZERO_DIVISION] = "ZeroDivisionError", [TDL_ERR_OVERFLOW] = "OverflowError",
    [TDL_ERR_ASSERTION] = "AssertionError", [TDL_ERR_RECURSION] = "RecursionError",
    [TDL_ERR_IMPORT] = "ImportError", [TDL_ERR_IO] = "IOError", [TDL_ERR_RUNTIME] = "RuntimeError",
    [TDL_ERR_MEMORY] = "MemoryError", [TDL_ERR_NOT_IMPLEMENTED] = "NotImplementedError",
    [TDL_ERR_DIMENSION_BIND] = "DimensionBindError", [TDL_ERR_SHAPE] = "ShapeError",
    [TDL_ERR_DEVICE] = "DeviceError", [TDL_ERR_INTERRUPT] = "KeyboardInterrupt",
    [TDL_ERR_STOP_ITERATION] = "StopIteration", [TDL_ERR_EXCEPTION] = "Exception",
    [TDL_ERR_BASE_EXCEPTION] = "BaseException", [TDL_ERR_ARITHMETIC] = "ArithmeticError",
    [TDL_ERR_LOOKUP] = "LookupError", [TDL_ERR_TAB] = "TabError",
    [TDL_ERR_GENERATOR_EXIT] = "GeneratorExit", [TDL_ERR_WARNING] = "Warning",
    [TDL_ERR_USER_WARNING] = "UserWarning", [TDL_ERR_DEPRECATION_WARNING] = "DeprecationWarning",
    [TDL_ERR_FUTURE_WARNING] = "FutureWarning", [TDL_ERR_RUNTIME_WARNING] = "RuntimeWarning",
};

const char *tdl_error_kind_name(tdl_error_kind kind)
{
    return kind >= 0 && kind < TDL_ERR__COUNT ? kind_names[kind] : "Error";
}

/* Report layout:
 *   Traceback (most recent call last):        (runtime errors with at least one frame)
 *     file:line:col: in f
 *       source line
 *       ^
 *   file:line:col: Kind: message
 * A syntax error has no traceback: its location line, then the source line and caret. */
const char *err_report(Interp *I)
{
    Error *e = &I->err;
    if (e->kind == TDL_ERR_NONE) return "";
    if (e->report) return e->report;
    Buf b = {0};
    if (e->context && !e->syntax) {
        /* the error being handled first, then this one, as CPython prints a chain */
        Error *ctx = e->context, cur = I->err;
        I->err = *ctx;
        buf_puts(&b, err_report(I));
        *ctx = I->err;      /* keeps its report, cached */
        I->err = cur;
        buf_puts(&b, e->context_is_cause ? "\nThe above exception was the direct cause of the following exception:\n\n"
                                         : "\nDuring handling of the above exception, another exception occurred:\n\n");
    }
    const char *msg = err_message(I);
    char caret[1024];
    if (e->syntax && e->ntrace > 0) {
        TraceEntry *t = &e->trace[0];
        int line, col;
        lang_source_linecol(t->src, t->pos, &line, &col);
        buf_printf(&b, "%s:%d:%d: %s: %s\n", t->src->name, line, col, kind_names[e->kind], msg);
        lang_source_caret(t->src, t->pos, caret, sizeof caret);
        buf_puts(&b, caret);
    } else {
        if (e->ntrace > 0) buf_puts(&b, "Traceback (most recent call last):\n");
        size_t repeats = 0;
        for (size_t k = e->ntrace; k-- > 0;) {
            TraceEntry *t = &e->trace[k];
            /* Like Python, show a run of identical entries (deep recursion) three times. */
            bool same = k + 1 < e->ntrace && e->trace[k + 1].src == t->src && e->trace[k + 1].pos == t->pos
                        && strcmp(e->trace[k + 1].func, t->func) == 0;
            repeats = same ? repeats + 1 : 0;
            if (repeats >= 3) {
                bool last = k == 0 || !(e->trace[k - 1].src == t->src && e->trace[k - 1].pos == t->pos
                                        && strcmp(e->trace[k - 1].func, t->func) == 0);
                if (last)
                    buf_printf(&b, "  [Previous line repeated %zu more time%s]\n", repeats - 2,
                               repeats - 2 == 1 ? "" : "s");
                continue;
            }
            int line, col;
            lang_source_linecol(t->src, t->pos, &line, &col);
            buf_printf(&b, "  %s:%d:%d: in %s\n", t->src->name, line, col, t->func);
            size_t n = lang_source_caret(t->src, t->pos, caret, sizeof caret);
            /* indent the caret block by two more spaces under the entry */
            for (char *p = caret, *q; n && *p; p = q + 1) {
                q = strchr(p, '\n');
                if (!q) break;
                buf_puts(&b, "  ");
                buf_put(&b, p, (size_t)(q - p + 1));
            }
        }
        if (e->ntrace > 0) {
            int line, col;
            lang_source_linecol(e->trace[0].src, e->trace[0].pos, &line, &col);
            buf_printf(&b, "%s:%d:%d: ", e->trace[0].src->name, line, col);
        }
        /* an instance of a user exception class reports its class's name */
        ClassObj *uc = e->exc ? ((ExcObj *)e->exc)->cls : NULL;
        const char *kname = uc ? uc->name : kind_names[e->kind];
        if (*msg) buf_printf(&b, "%s: %s\n", kname, msg);
        else buf_printf(&b, "%s\n", kname);
    }
    if (b.nomem) {
        /* no memory for the whole report: at least where and what, in the error's own buffer */
        buf_free(&b);
        if (e->ntrace == 0) return kind_names[e->kind];
        int line, col;
        lang_source_linecol(e->trace[0].src, e->trace[0].pos, &line, &col);
        snprintf(e->short_report, sizeof e->short_report, "%s:%d:%d: %s%s%s\n", e->trace[0].src->name, line, col,
                 kind_names[e->kind], *msg ? ": " : "", msg);
        return e->short_report;
    }
    e->report = b.p;
    return e->report ? e->report : "";
}
