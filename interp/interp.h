/* interp.h — the interpreter's internal interface: values, objects, errors, the evaluator.
 *
 * Not installed; tdl.h is the public face. Depends on lang/ (the syntax tree) and fcdim/ (the
 * tensor value, through fcdim.h only).
 *
 * Values. A Value is 16 bytes passed by value: None, bool, int (64-bit) and float (double) are
 * immediate; everything else points to a reference-counted Obj.
 *
 * Ownership (QuickJS's rule): a function that produces a Value gives the caller a new reference;
 * Values passed as arguments are borrowed; a function that takes over a reference says so in its
 * name (`_steal`). val_incref/val_decref do nothing for immediates. Container objects (lists,
 * tuples, functions, cells, modules) are also linked into the interpreter's object list so that
 * tdl_close frees reference cycles too.
 *
 * Errors. Fallible functions return bool (true = ok) or a Status and put results in out-parameters.
 * An error is raised with err_raise(I, kind, fmt, ...), which records it in I->err; callers
 * propagate `false` upward. The evaluator attaches source positions as the error travels up.
 */
#ifndef TDL_INTERP_H
#define TDL_INTERP_H

#include "fcdim.h"
#include "lang.h"
#include "mem.h"
#include "tdl.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Interp Interp;
typedef struct Obj Obj;

typedef enum ValueTag {
    V_UNDEF = 0,        /* an unset variable; never seen by programs */
    V_NONE, V_BOOL, V_INT, V_FLOAT,
    V_TYPE,             /* a builtin type (int, str, list, ...): i holds a TypeId */
    V_ELLIPSIS,         /* `...` (repr "Ellipsis") */
    V_DTYPE,            /* a tensor dtype: i holds an FcDType (repr "float32") */
    V_DEVICE,           /* a device: i packs an FcDevice (v_device, device_of) (repr "device(type='cpu')") */
    V_MEMFMT,           /* a memory format: i holds an FcMemoryFormat (repr "channels_last") */
    V_EXCTYPE,          /* an exception class (ValueError, Exception, ...): i holds a tdl_error_kind */
    V_NOTIMPL,          /* NotImplemented (what an operator method returns to decline) */
    /* reference-counted objects from here on */
    V_STR, V_TUPLE, V_LIST, V_RANGE, V_FUNC, V_BUILTIN, V_MODULE, V_CELL,
    V_SLICE,            /* a:b:c inside a subscript (repr "slice(1, None, None)") */
    V_TENSOR,           /* a TensorObj */
    V_DIM,              /* a DimObj: a first-class dim (repr: its name) */
    V_DIMLIST,          /* a DimListObj: a list of dims whose length binds when it indexes */
    V_DICT, V_SET, V_FROZENSET,     /* DictObj (dict.c) */
    V_DICTVIEW,         /* d.keys(), d.values(), d.items(): a DictViewObj */
    V_GEN,              /* a generator expression: a GenObj */
    V_ITER,             /* iter(x), map(...), filter(...): an IterObj */
    V_EXC,              /* an exception: an ExcObj */
    V_CTXMGR,           /* a context manager made in C: a CtxMgrObj */
    V_CLASS,            /* a class made by `class`: a ClassObj (class.c) */
    V_INSTANCE,         /* an instance of one: an InstObj */
    V_METHOD,           /* a bound method: a MethodObj */
    V_DESCR,            /* staticmethod, classmethod, property: a DescrObj */
    V_SUPER,            /* super(): a SuperObj */
    V__COUNT
} ValueTag;

typedef struct Value {
    uint8_t tag;
    union {
        bool b;
        int64_t i;
        double f;
        Obj *o;
    };
} Value;

#define IS_OBJ(v) ((v).tag >= V_STR)

static inline Value v_undef(void) { Value v = {.tag = V_UNDEF, .i = 0}; return v; }
static inline Value v_none(void) { Value v = {.tag = V_NONE, .i = 0}; return v; }
static inline Value v_bool(bool b) { Value v = {.tag = V_BOOL, .i = 0}; v.b = b; return v; }
static inline Value v_int(int64_t i) { Value v = {.tag = V_INT, .i = i}; return v; }
static inline Value v_float(double f) { Value v = {.tag = V_FLOAT, .f = f}; return v; }
static inline Value v_obj(uint8_t tag, Obj *o) { Value v = {.tag = tag, .o = o}; return v; }
static inline Value v_dtype(FcDType t) { Value v = {.tag = V_DTYPE, .i = t}; return v; }
static inline Value v_memfmt(FcMemoryFormat m) { Value v = {.tag = V_MEMFMT, .i = m}; return v; }
static inline Value v_device(FcDevice d)
{
    Value v = {.tag = V_DEVICE, .i = (int64_t)d.type << 32 | (uint32_t)d.index};
    return v;
}
static inline FcDevice device_of(Value v)
{
    FcDevice d = {(FcDeviceType)(v.i >> 32), (int)(uint32_t)v.i};
    return d;
}

/* Types a program can see; type(x) returns one. */
typedef enum TypeId {
    T_NONETYPE, T_BOOL, T_INT, T_FLOAT, T_STR, T_TUPLE, T_LIST, T_RANGE, T_FUNCTION,
    T_BUILTIN, T_MODULE, T_TYPE, T_CELL, T_ELLIPSIS, T_SLICE,
    T_TENSOR, T_DTYPE, T_DEVICE, T_MEMFMT, T_DIM, T_DIMLIST,
    T_DICT, T_SET, T_FROZENSET, T_DICT_KEYS, T_DICT_VALUES, T_DICT_ITEMS,
    T_GENERATOR, T_MAP, T_FILTER, T_LIST_ITERATOR, T_TUPLE_ITERATOR, T_STR_ITERATOR,
    T_RANGE_ITERATOR, T_DICT_KEYITERATOR, T_DICT_VALUEITERATOR, T_DICT_ITEMITERATOR,
    T_SET_ITERATOR, T_ITERATOR, T_EXCEPTION, T_CTXMGR,
    T_ZIP, T_ENUMERATE, T_OBJECT, T_METHOD, T_STATICMETHOD, T_CLASSMETHOD, T_PROPERTY, T_SUPER, T_NOTIMPL,
    T__COUNT
} TypeId;
TypeId val_type(Value v);
const char *type_name(TypeId t);                     /* "int", "NoneType", ... */
/* The name of v's type ("int", "ValueError"). */
const char *val_type_name(Value v);

/* ---- objects ---- */

struct Obj {
    int32_t refcnt;
    uint8_t tag;        /* the ValueTag of the Values that point here */
    uint8_t tracked;    /* linked into Interp's object list */
    Obj *prev, *next;   /* the object list (containers only) */
};

typedef struct StrObj {
    Obj h;
    size_t len;         /* bytes */
    size_t nchars;      /* code points */
    uint64_t hash;      /* 0 = not computed */
    char data[];        /* UTF-8, NUL-terminated */
} StrObj;

/* A tuple whose items also have names, as torch.return_types' results ((values, indices) of
 * max(dim), sort, topk): it prints as "type(\nname=item,\n...)" and item k is attribute names[k]. */
/* a named tuple's type and field names; grad: the grad_fn PyTorch names for its first item (a
 * torch.return_types result's values), or NULL */
typedef struct TupleFields { const char *type; const char *const *names; const char *grad; } TupleFields;
typedef struct TupleObj { Obj h; const TupleFields *fields; size_t n; Value items[]; } TupleObj;
typedef struct ListObj { Obj h; size_t n, cap; Value *items; } ListObj;
typedef struct RangeObj { Obj h; int64_t start, stop, step; } RangeObj;
typedef struct CellObj { Obj h; Value v; } CellObj;
typedef struct SliceObj { Obj h; Value start, stop, step; } SliceObj;   /* each None or int */
/* t: a reference. fa, fb: when t is a product of two float tensors with only first-class dims,
 * its factors (references), so that summing it over dims is a matmul (dims.c), else NULL. */
typedef struct TensorObj { Obj h; FcTensor *t, *fa, *fb; } TensorObj;
typedef struct DimObj { Obj h; FcDim *d; } DimObj;                      /* d: a reference */
/* dims: n references once bound (bind_len), NULL before; name: for the dims it makes ("batch0"). */
typedef struct DimListObj { Obj h; char *name; bool named, bound; int n; FcDim **dims; } DimListObj;

/* dict, set and frozenset (dict.c). A dict keeps its entries in insertion order in ent[0..fill)
 * (a deleted one has key V_UNDEF) and finds them through idx, an open-addressing table of entry
 * indices with mask + 1 slots. A set or frozenset has no idx: ent itself is the table (mask + 1
 * slots, probed as CPython's setobject.c probes), so that a set iterates and prints in CPython's
 * order; there fill counts live and dummy slots. mask is 0 before the first insertion. */
typedef struct DictEntry { Value key, val; uint64_t hash; } DictEntry;
typedef struct DictObj {
    Obj h;
    size_t used;        /* live entries */
    size_t fill;
    size_t mask;
    size_t capent;      /* dict: entries allocated in ent */
    DictEntry *ent;
    int64_t *idx;       /* dict only */
} DictObj;
typedef enum DictViewKind { DV_KEYS, DV_VALUES, DV_ITEMS } DictViewKind;
typedef struct DictViewObj { Obj h; DictObj *d; DictViewKind kind; } DictViewObj;   /* d: a reference */

typedef struct Module Module;

typedef struct ClassObj ClassObj;

typedef struct FuncObj {
    Obj h;
    LangFunc *fn;
    ClassObj *klass;    /* the class whose body defined it (a reference, for super()), or NULL */
    LangUnit *unit;     /* keeps the syntax tree alive */
    Module *module;     /* globals (a reference) */
    Value *defaults;    /* fn->ndefaults values */
    CellObj **cells;    /* fn->nfree captured cells */
} FuncObj;

/* A C function callable from tdl. args holds nargs positional values followed by nkw keyword
 * values whose names are kwnames[0..nkw). self is the receiver of a method (V_UNDEF for plain
 * functions). On success *out is a new reference. */
typedef bool (*BuiltinFn)(Interp *I, Value self, const Value *args, int nargs,
                          const char *const *kwnames, int nkw, Value *out);

typedef struct BuiltinDef {
    const char *name;
    BuiltinFn fn;
    int min_args, max_args;     /* positional; max -1 = any number */
    const char *kwargs;         /* accepted keywords, space separated ("sep end"), or NULL */
} BuiltinDef;

typedef struct BuiltinObj {
    Obj h;
    const BuiltinDef *def;
    Value self;                 /* bound receiver (a reference), or V_UNDEF */
    bool unbound;               /* a method taken from its type (str.lower): self is the type, and
                                   a call takes the receiver as its first argument */
} BuiltinObj;

/* A string -> index map for globals and module attributes (open addressing). */
typedef struct NameMap {
    size_t cap, n;
    const char **keys;          /* owned copies */
    int32_t *vals;
} NameMap;
int32_t namemap_get(const NameMap *m, const char *key);          /* -1 if absent */
/* Sets key -> val; returns the map's own copy of key, or NULL on out-of-memory. */
const char *namemap_put(NameMap *m, const char *key, int32_t val);
void namemap_free(NameMap *m);

typedef enum ModuleState { MOD_LOADING, MOD_LOADED } ModuleState;

struct Module {
    Obj h;
    char *name;
    char *path;                 /* the file it came from, or NULL */
    ModuleState state;
    NameMap names;              /* global name -> index in vals */
    Value *vals;
    const char **val_names;     /* index -> name (points into names' keys) */
    size_t nvals, cap;
};
/* Index of global `name` in m, created (unset) if absent; -1 on out-of-memory. */
int32_t module_slot(Module *m, const char *name);

/* ---- reference counting and construction ---- */

void obj_free(Interp *I, Obj *o);     /* called when the count reaches zero */
static inline void val_incref(Value v) { if (IS_OBJ(v)) v.o->refcnt++; }
#define val_decref(I, v) do { Value v__ = (v); if (IS_OBJ(v__) && --v__.o->refcnt == 0) obj_free((I), v__.o); } while (0)

/* A new object of size bytes (zeroed, count 1) for Values of tag; track: a container that can be
 * part of a cycle (linked into the object list). NULL with MemoryError raised. */
void *obj_alloc(Interp *I, size_t size, uint8_t tag, bool track);
/* Constructors return new references, or raise MemoryError and return false / NULL. */
bool str_new(Interp *I, const char *s, size_t len, Value *out);
bool str_from_cstr(Interp *I, const char *s, Value *out);
bool str_printf(Interp *I, Value *out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
TupleObj *tuple_alloc(Interp *I, size_t n);          /* items set to None */
ListObj *list_alloc(Interp *I, size_t n);            /* n items set to None */
bool list_append(Interp *I, ListObj *l, Value v);    /* borrows v */
bool range_new(Interp *I, int64_t start, int64_t stop, int64_t step, Value *out);
CellObj *cell_new(Interp *I, Value v);               /* borrows v */
bool slice_new(Interp *I, Value start, Value stop, Value step, Value *out);   /* borrows */
bool builtin_bind(Interp *I, const BuiltinDef *def, Value self, Value *out);
/* Method def of builtin type t as its type's attribute (str.lower): called with the receiver,
 * of type t, as the first argument. */
bool builtin_unbound(Interp *I, const BuiltinDef *def, TypeId t, Value *out);
/* Wraps t, taking over its reference (released on failure too). */
bool tensor_value_steal(Interp *I, FcTensor *t, Value *out);
/* Wraps d, taking over its reference (released on failure too). */
bool dim_value_steal(Interp *I, FcDim *d, Value *out);
/* An unbound dim list named name (named: given by the program, else provisional). */
bool dimlist_new(Interp *I, const char *name, bool named, Value *out);
Module *module_new(Interp *I, const char *name, const char *path);
FuncObj *func_alloc(Interp *I, LangFunc *fn, LangUnit *unit, Module *m);   /* defaults/cells zeroed */
void objects_free_all(Interp *I);                    /* tdl_close: frees cycles too */

static inline StrObj *as_str(Value v) { return (StrObj *)v.o; }
static inline TupleObj *as_tuple(Value v) { return (TupleObj *)v.o; }
static inline ListObj *as_list(Value v) { return (ListObj *)v.o; }
static inline RangeObj *as_range(Value v) { return (RangeObj *)v.o; }
static inline FuncObj *as_func(Value v) { return (FuncObj *)v.o; }
static inline BuiltinObj *as_builtin(Value v) { return (BuiltinObj *)v.o; }
static inline Module *as_module(Value v) { return (Module *)v.o; }
static inline SliceObj *as_slice(Value v) { return (SliceObj *)v.o; }
static inline FcTensor *as_tensor(Value v) { return ((TensorObj *)v.o)->t; }
static inline FcDim *as_dim(Value v) { return ((DimObj *)v.o)->d; }
static inline DimListObj *as_dimlist(Value v) { return (DimListObj *)v.o; }
static inline DictObj *as_dict(Value v) { return (DictObj *)v.o; }
static inline bool is_setlike(Value v) { return v.tag == V_SET || v.tag == V_FROZENSET; }
/* A tensor, or a dim (a tensor of its indices wherever a tensor is expected). */
static inline bool is_tensorlike(Value v) { return v.tag == V_TENSOR || v.tag == V_DIM; }
/* An int or a bool (a bool is an int in arithmetic and indices, as in Python). */
static inline bool is_intlike(Value v) { return v.tag == V_INT || v.tag == V_BOOL; }
static inline int64_t as_i(Value v) { return v.tag == V_BOOL ? (int64_t)v.b : v.i; }
/* A value Python would call __index__ on where it wants an integer (a subscript, a slice bound,
 * range()): an int, a bool or a tensor. Anything else gets the TypeError of the place it is in. */
static inline bool has_index(Value v) { return is_intlike(v) || v.tag == V_TENSOR; }
/* The integer of a value has_index accepts (operator.index); a tensor that is not one integer
 * raises Tensor.__index__'s TypeError. */
bool val_index(Interp *I, Value v, int64_t *out);
/* A slice's bound or step (not None) as an int: val_index, with the TypeError of a slice
 * (Python's _PyEval_SliceIndex; ops.c). */
bool slice_index(Interp *I, Value v, int64_t *out);

int64_t range_len(const RangeObj *r);

/* ---- errors ---- */

typedef struct TraceEntry {
    LangSource *src;            /* a reference */
    uint32_t pos;
    char func[64];              /* "<module>" or the function's name: a copy (truncated), since the
                                   tree that named it (a class body's) may be gone by the report */
} TraceEntry;

typedef struct Error Error;
struct Error {
    tdl_error_kind kind;
    char *msg;
    bool need_loc;              /* the innermost position is still to be attached */
    bool syntax;                /* a syntax error: one position, no traceback */
    TraceEntry *trace;          /* innermost first */
    size_t ntrace, cap;
    char *report;               /* formatted on demand */
    char nomem[96];             /* a MemoryError's message when msg is NULL ("": "out of memory") */
    char short_report[256];     /* the report's last line when there is no memory for it all */
    Obj *exc;                   /* the ExcObj raised by `raise`, a reference, or NULL */
    struct Error *context;      /* the error an except block was handling when this one escaped
                                   it (owned; reported first, as CPython's chain), or NULL */
    bool context_is_cause;      /* this error was raised `from` that one */
};
/* Makes ctx (a moved-out error record, heap-allocated; taken over) the context of the error in
 * flight, unless that one is ctx's own exception raised again or has one already. */
void err_set_context(Interp *I, Error *ctx);

/* An exception object (V_EXC): kind is its class; args the tuple it was made with; msg its
 * str() (the message tdl reports); cause its __cause__ (`raise ... from`), or None. */
/* An instance of a user exception class has cls (a reference; kind is its builtin base) and
 * dict, its attributes (a reference, or NULL until one is set). */
/* suppress_context: raised with `from` (Python's __suppress_context__): no "During handling" chain. */
typedef struct ExcObj {
    Obj h;
    tdl_error_kind kind;
    Value args, msg, cause;
    ClassObj *cls;
    DictObj *dict;
    bool suppress_context;
} ExcObj;
static inline Value v_exctype(tdl_error_kind k) { Value v = {.tag = V_EXCTYPE, .i = k}; return v; }
/* Sets an exception's args (and its str()) as BaseException.__init__(*args) does. */
bool exc_set_args(Interp *I, Value exc, const Value *args, int nargs);
/* Whether class k is base or derives from it (Python's tree; see value.c). */
bool exc_is_subclass(tdl_error_kind k, tdl_error_kind base);
/* A new exception of class kind made with args (as ValueError(*args)). */
bool exc_new(Interp *I, tdl_error_kind kind, const Value *args, int nargs, Value *out);
/* The error being raised as an exception object (the one `raise` raised, or a new one made from
 * its kind and message); the error stays recorded. */
bool exc_from_error(Interp *I, Value *out);
/* Raises exception exc (its class and message); returns false. */
bool exc_raise(Interp *I, Value exc);
/* Moves the error record out of I (leaving none), puts one back (replacing I's), or frees one:
 * what try/finally does with the error in flight while the finally block runs. */
void err_move(Interp *I, Error *dst);
void err_put_back(Interp *I, Error *src);
void err_drop(Interp *I, Error *e);

/* Records an error (replacing any earlier one) and returns false. */
bool err_raise(Interp *I, tdl_error_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* MemoryError, raised without allocating: "out of memory", or the interpreter's max_memory
 * when that is what refused the allocation. */
bool err_nomem(Interp *I);
/* The message of the error recorded (never NULL). */
const char *err_message(const Interp *I);
void err_clear(Interp *I);
/* Appends a traceback entry for position pos of src in function func. */
void err_trace(Interp *I, LangSource *src, uint32_t pos, const char *func);
/* The whole report as the batch driver prints it (cached in I->err.report). */
const char *err_report(Interp *I);

/* ---- the interpreter ---- */

#define MAX_ARGS 255

struct Interp {
    tdl_config cfg;
    Error err;
    int exit_code;
    bool exiting;               /* exit(n) was called: unwinding with TDL_EXIT */
    Module *main;               /* the __main__ module */
    Module *builtins;           /* builtin names */
    Obj objects;                /* sentinel of the tracked-object list */
    NameMap modmap;             /* module name -> index in mods */
    Module **mods;
    size_t nmods, capmods;
    int depth;                  /* tdl call depth */
    char *stack_base;           /* C stack guard */
    size_t stack_budget;
    Value ret;                  /* value of a `return` in flight */
    int free_depth;             /* nesting of obj_free; deeper frees are deferred */
    Obj *deferred;              /* objects waiting to be freed (linked by next) */
    int nest;                   /* nesting of recursive compare/repr on containers */
    Value handling;             /* the exception an except block is handling (a reference), or V_UNDEF */
    struct GenCo *co;           /* the generator function whose body runs now (eval.c), or NULL */
    volatile sig_atomic_t interrupt;   /* set by tdl_interrupt */
    char *script_dir;           /* folder of the main script, for imports */
    LangSource *stmt_src;       /* the statement running now (borrowed), for messages that say */
    uint32_t stmt_pos;          /* where a dim's size was bound */
    const struct CallSite *callsite;    /* where the running tdl function was called from */
    struct WarnState *warn;     /* the warnings module's filters and registry (warnings.c), or NULL */
    /* tensors (tensor.c) */
    FcCtx *fc;                  /* the tensor context: backends, random generator, dump hook */
    FcDevice device;            /* where creation ops put tensors by default */
    struct TensorSig *tsigs;    /* the operator table's signatures, parsed at tdl_open */
    int16_t binop_row[OP__COUNT];   /* the function row of each operator's name (tensor_binop), or -1 */
};

/* Raises KeyboardInterrupt if tdl_interrupt was called; checked at loop iterations and calls. */
static inline bool interp_check_interrupt(Interp *I)
{
    if (!I->interrupt) return true;
    I->interrupt = 0;
    return err_raise(I, TDL_ERR_INTERRUPT, "%s", "");
}

/* Writes program output through the host's callback. */
void interp_write(Interp *I, const char *s, size_t len);

/* Parses and runs src in module m. interactive: echo expression statements. Returns TDL_OK,
 * TDL_ERROR, TDL_INCOMPLETE or TDL_EXIT. */
tdl_status interp_run_source(Interp *I, Module *m, LangSource *src, bool interactive);

/* Calls a callable value. args: nargs positional values then nkw keyword values named kwnames. */
bool call_value(Interp *I, Value f, const Value *args, int nargs, const char *const *kwnames,
                int nkw, Value *out);

/* Imports a module by (dotted) name, loading it on first use; *out is a new reference. */
bool import_module(Interp *I, const char *name, Value *out);

/* Resolves names in a parsed unit for module m (module level) — see resolve.c. */
bool resolve_unit(Interp *I, Module *m, LangUnit *u);

/* ---- operations shared by the evaluator and the builtins (ops.c) ---- */

bool val_truthy(Interp *I, Value v, bool *out);
bool val_equal(Interp *I, Value a, Value b, bool *out);
bool val_binop(Interp *I, LangOp op, Value a, Value b, Value *out);
bool val_unary(Interp *I, LangOp op, Value a, Value *out);
bool val_compare(Interp *I, LangOp op, Value a, Value b, bool *out);
/* A comparison as the evaluator needs it: a tensor of bools when either side is a tensor
 * (t < 2), else val_compare's bool. *out is a new reference. */
bool val_compare_value(Interp *I, LangOp op, Value a, Value b, Value *out);
bool val_contains(Interp *I, Value container, Value item, bool *out);
bool val_getitem(Interp *I, Value obj, Value index, Value *out);
bool val_setitem(Interp *I, Value obj, Value index, Value v);
/* del obj[index] (list items and slices, dict keys). */
bool val_delitem(Interp *I, Value obj, Value index);
bool val_getattr(Interp *I, Value obj, const char *name, Value *out);
/* obj.name = v and del obj.name (modules, dims, tensors, classes and instances). */
bool val_setattr(Interp *I, Value obj, const char *name, Value v);
bool val_delattr(Interp *I, Value obj, const char *name);
bool val_len(Interp *I, Value v, int64_t *out);

/* Iteration over tuple, list, str, range (the host `for`). */
typedef struct Iter {
    Value seq;                  /* a reference */
    int64_t i, n;
    size_t byte;                /* str: byte offset of the next character */
} Iter;
bool iter_begin(Interp *I, Value seq, Iter *it);

/* A comprehension or generator expression being run (V_GEN for a generator expression): its
 * scope's slots and cells, and the loops it is inside with their iterators, so that it stops
 * after each element and goes on from there at the next (eval.c). */
typedef struct GenObj {
    Obj h;
    LangFunc *fn;
    LangUnit *unit;             /* a reference */
    Module *module;             /* a reference */
    CellObj **cells;            /* fn->nfree references */
    Value *slots;               /* fn->nslots */
    Node **loops;               /* the N_FOR clauses entered, outermost first */
    Iter *its;                  /* their iterators */
    int nloops, cap;
    bool started, done, running;
    struct GenCo *co;           /* a generator function's coroutine (eval.c), NULL for a generator
                                   expression */
} GenObj;
/* The next element of g (a new reference in *out, and the value in *out2 for a dict
 * comprehension, else V_UNDEF), or *done. */
bool gen_next(Interp *I, GenObj *g, Value *out, Value *out2, bool *done);
/* g.send(v): resumes a generator function's g with v as the value of its yield (None is next());
 * *done at its end, with its return value in *out (a new reference). */
bool gen_send(Interp *I, GenObj *g, Value v, Value *out, bool *done);
/* g.throw(typ, val): the exception typ (a class, with val its argument, or an instance) raised at
 * g's yield (CPython's rules and messages); then as gen_send. val may be V_UNDEF. */
bool gen_throw(Interp *I, GenObj *g, Value typ, Value val, Value *out, bool *done);
/* g.close() (also when g is freed, and for every suspended generator at tdl_close): GeneratorExit
 * is raised at its yield so that its finally blocks and with statements run; the error the
 * unwinding raises, if any, is left in I->err (false). */
bool gen_close(Interp *I, GenObj *g);
/* Frees what a generator function's coroutine holds (closing it first if it is suspended). */
void gen_free_co(Interp *I, GenObj *g);
/* Whether a generator function's body has started (it has a stack to unwind). */
bool gen_started(const GenObj *g);
/* tdl_close: closes every suspended generator while the modules are still there. */
void gen_close_all(Interp *I);

/* iter(x) (IK_SEQ: n = 1), map(f, *its) (IK_MAP), filter(f, it) (IK_FILTER; fn None = truth),
 * zip(*its) (IK_ZIP), enumerate(it, start) (IK_ENUM: fn is the next count). */
typedef enum IterKind { IK_SEQ, IK_MAP, IK_FILTER, IK_ZIP, IK_ENUM } IterKind;
typedef struct IterObj { Obj h; IterKind kind; Value fn; int n; Iter its[]; } IterObj;
bool iterobj_next(Interp *I, IterObj *o, Value *out, bool *done);
/* Next item as a new reference in *out; *done set at the end. */
bool iter_next(Interp *I, Iter *it, Value *out, bool *done);
void iter_end(Interp *I, Iter *it);
/* A new list (*out, a new reference) holding the items of any iterable. */
bool list_from_iterable(Interp *I, Value seq, ListObj **out);
/* A tuple of l's items; consumes the caller's reference to l, on failure too. */
bool tuple_from_list(Interp *I, ListObj *l, Value *out);
/* Whether iter_begin would take v (its type has an iteration protocol), without starting one; false
 * only on an error looking the protocol up. */
bool val_iterable(Interp *I, Value v, bool *yes);
/* Appends the items of any iterable to l (borrows seq; l.extend(l) appends the items l had); on
 * failure l may hold some of them. */
bool list_extend_from_iterable(Interp *I, ListObj *l, Value seq);

/* ---- text (format.c) ---- */

/* A growable byte buffer. */
typedef struct Buf { char *p; size_t n, cap; bool nomem; } Buf;
void buf_put(Buf *b, const char *s, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(Buf *b);

/* Appends Python's repr() / str() of v. false on error (raised). */
bool val_repr(Interp *I, Value v, Buf *b);
bool val_str(Interp *I, Value v, Buf *b);
/* Python's ascii(v): the repr with non-ASCII characters escaped (\xe9, \u20ac, \U0001f600). */
bool val_ascii(Interp *I, Value v, Buf *b);
/* Python's repr of a double ("0.1", "1e+16", "-0.0", "inf", "nan"). Returns length; buf >= 32. */
int format_double(double d, char *buf);
/* Appends the repr of a string's bytes with Python's quoting rules. */
void format_str_repr(const char *s, size_t len, Buf *b);
/* Decodes one UTF-8 sequence of s[0..n): its length in bytes (0 if malformed), the code point in *cp. */
size_t fmt_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* Whether Python's str.isprintable() is false for non-ASCII code point c (format.c). */
bool unicode_unprintable(uint32_t c);

/* ---- dict, set, frozenset (dict.c) ---- */

/* Python's hash(v) (CPython's values for int, float, bool, tuple and frozenset; str hashes are
 * tdl's own, as CPython's are randomised); TypeError for unhashable values (list, dict, set). */
bool val_hash(Interp *I, Value v, uint64_t *out);
/* A new empty dict (tag V_DICT), set or frozenset; NULL with MemoryError raised. */
DictObj *dict_alloc(Interp *I, ValueTag tag);
/* The live entry of key in d (NULL when absent). Raises TypeError for an unhashable key. */
bool dict_find(Interp *I, DictObj *d, Value key, DictEntry **out);
/* d[key] = val (dict) or the set's add(key); borrows both. */
bool dict_set(Interp *I, DictObj *d, Value key, Value val);
/* Removes key; *found says whether it was there (no error when it was not). */
bool dict_del(Interp *I, DictObj *d, Value key, bool *found);
/* Drops every entry (their references too) and the tables: an empty dict or set, as when freed. */
void dict_clear(Interp *I, DictObj *d);
/* The next live entry at or after *pos (advancing *pos past it), or NULL at the end. */
DictEntry *dict_next(DictObj *d, size_t *pos);
/* dict(...), set(...), frozenset(...) */
bool dict_type_call(Interp *I, TypeId t, const Value *args, int nargs, const char *const *kwnames,
                    int nkw, Value *out);
/* Operators between sets (| & - ^) and dicts (|); *handled false when a, b are not such. */
bool dict_binop(Interp *I, LangOp op, Value a, Value b, Value *out, bool *handled);
/* a |= b and friends on a set or dict: in place, as Python; *handled as for dict_binop. */
bool dict_inplace(Interp *I, LangOp op, Value a, Value b, bool *handled);
/* Equality of two dicts, sets or views; the subset order of sets for < <= > >=. */
bool dict_equal(Interp *I, Value a, Value b, bool *out);
bool set_order(Interp *I, LangOp op, Value a, Value b, bool *out);
/* Appends the repr of a dict (with recursion marker: via repr_item), set, frozenset or view. */
bool dict_repr(Interp *I, Value v, Buf *b, bool (*repr_item)(Interp *, Value, Buf *, const void *),
               const void *ctx);
/* The methods of dict, set and frozenset, for builtin_method and its messages. */
extern const BuiltinDef dict_methods[], set_methods[], frozenset_methods[];

/* ---- context managers made in C (the `with` statement) ---- */

/* enter: what `with m as x` binds to x (a new reference in *out; None when it has nothing to
 * give), or false with an error raised (the block does not run, exit is not called).
 * exit: called once after the block, however it ends: exc is the exception in flight (a V_EXC
 * value, borrowed) or None. Set *suppress to swallow exc (Python's __exit__ returning true).
 * Returning false raises the error it raised instead of exc. Neither may keep exc. */
typedef bool (*CtxEnterFn)(Interp *I, void *ud, Value *out);
typedef bool (*CtxExitFn)(Interp *I, void *ud, Value exc, bool *suppress);
typedef struct CtxMgrObj {
    Obj h;
    CtxEnterFn enter;
    CtxExitFn exit;
    void *ud;
    void (*free_ud)(void *ud);  /* called when the manager is freed (NULL: nothing to free) */
    const char *name;           /* for repr: "no_grad" (static) */
} CtxMgrObj;
/* A new context manager value (a new reference in *out) calling enter and exit with ud; it owns
 * ud when free_ud is given (freed with it, also when this fails). */
bool ctxmgr_new(Interp *I, const char *name, CtxEnterFn enter, CtxExitFn exit, void *ud,
                void (*free_ud)(void *ud), Value *out);

/* ---- warnings (warnings.c) ---- */

/* The statement a tdl function was called from (on the caller's C stack), and its caller's. */
typedef struct CallSite { LangSource *src; uint32_t pos; const struct CallSite *up; } CallSite;
/* Python's warnings.warn(msg, category) at the statement running now: printed to stderr once per
 * location, or as the filters say; false with the error raised (the "error" filter, out of memory). */
bool interp_warn(Interp *I, tdl_error_kind category, const char *msg);
/* The same shown once per text under the default action, wherever it comes from (TORCH_WARN_ONCE). */
bool interp_warn_once(Interp *I, tdl_error_kind category, const char *msg);
/* The `warnings` module (import warnings): warn, simplefilter, resetwarnings. NULL with the error. */
Module *warnings_module_new(Interp *I);
void warnings_free(Interp *I);

/* ---- user classes (class.c) ---- */

/* A class made by `class` (V_CLASS). mro: a tuple of the classes after it in its C3 method
 * resolution order (`object` is implied at the end); dict: its attributes (str keys); exc: the
 * builtin exception class it derives from, else TDL_ERR_NONE (its instances are then ExcObj
 * values with cls set, so that raise and except treat them as exceptions of that kind). */
struct ClassObj {
    Obj h;
    char *name, *qualname, *module;
    Value bases, mro;
    DictObj *dict;
    tdl_error_kind exc;
    DictObj *slots;     /* the attributes its instances may have (its and its bases' __slots__, a
                           set), or NULL: instances have a __dict__ */
    ClassObj *meta;     /* its metaclass (a reference), or NULL: type */
    bool is_meta;       /* it derives from type: a metaclass, whose instances are classes */
};
typedef struct InstObj { Obj h; ClassObj *cls; DictObj *dict; } InstObj;     /* references */
typedef struct MethodObj { Obj h; Value func, self; } MethodObj;            /* a bound method */
typedef enum DescrKind { D_STATICMETHOD, D_CLASSMETHOD, D_PROPERTY } DescrKind;
/* f: the function (a property's getter, or None); fset: a property's setter, or None */
typedef struct DescrObj { Obj h; DescrKind kind; Value f, fset; } DescrObj;
typedef struct SuperObj { Obj h; ClassObj *cls; Value self; } SuperObj;    /* super(cls, self) */

/* builtins: object, NotImplemented, staticmethod, classmethod, property, super, getattr,
 * setattr, hasattr, delattr, issubclass; false with the error raised. */
bool class_init(Interp *I, Module *m);
/* A new class named name with these bases (classes, a builtin exception class, `object`) and
 * attributes dict (borrowed: the class keeps a reference). */
bool class_new(Interp *I, const char *name, const char *qualname, const char *module, const Value *bases,
               int nbases, DictObj *dict, Value *out);
/* The user class of an instance or user exception, else NULL. */
ClassObj *class_of(Value v);
bool class_is_subclass(const ClassObj *c, const ClassObj *base);
/* issubclass(c, cls) where cls is a class, builtin type or exception class, or a tuple of them. */
bool class_issubclass(Interp *I, Value c, Value cls, bool *res, int depth);
/* Calls self's dunder method name (looked up on its class) with args; *found false if none. */
bool class_call_dunder(Interp *I, Value self, const char *name, const Value *args, int nargs, Value *out,
                       bool *found);
/* Attributes of classes, instances, user exceptions, bound methods, super and descriptors;
 * *found false when obj is none of those (or, for an exception, the name is the builtin's). */
bool class_getattr(Interp *I, Value obj, const char *name, Value *out, bool *found);
bool class_setattr(Interp *I, Value obj, const char *name, Value v, bool *found);
bool class_delattr(Interp *I, Value obj, const char *name, bool *found);
/* Calls a class (making an instance), a bound method, an instance (__call__) or a staticmethod. */
bool class_call(Interp *I, Value f, const Value *args, int nargs, const char *const *kwnames, int nkw, Value *out);
/* a op b through __op__ / __rop__ (NotImplemented declines); *handled false when neither does. */
bool class_binop(Interp *I, LangOp op, Value a, Value b, Value *out, bool *handled);
/* d[name] = v (v borrowed) for a C string name. */
bool dict_set_str(Interp *I, DictObj *d, const char *name, Value v);
/* After class cls is made: super(cls, cls).__init_subclass__(**kwargs) (the class keywords). */
bool class_init_subclass(Interp *I, Value cls, const Value *kwargs, const char *const *kwnames, int nkw);
/* The metaclass of a class with these bases and the explicit `metaclass=` (V_UNDEF if none): the
 * most derived of them, NULL for type; CPython's TypeError on a conflict. */
bool class_metaclass(Interp *I, Value explicit_meta, const Value *bases, int nbases, ClassObj **out);
/* M(name, bases, ns, **kwargs) for metaclass M (NULL: type(name, bases, ns)): M.__new__ (its own,
 * or type's, which makes the class and runs __init_subclass__ with the keywords), then M.__init__
 * when the result is an instance of M. */
bool class_meta_call(Interp *I, ClassObj *meta, const Value *args, int nargs, const char *const *kwnames, int nkw,
                     Value *out);
/* a op= b through a's __iop__ (__iadd__ ...); *handled false when a has none or it returned
 * NotImplemented (the caller then falls back to a op b, as Python). */
bool class_inplace_binop(Interp *I, LangOp op, Value a, Value b, Value *out, bool *handled);
/* A rich comparison with an instance on either side, with Python's fallbacks (identity for ==
 * and !=, TypeError for orders). */
bool class_compare(Interp *I, LangOp op, Value a, Value b, Value *out);
bool class_unary(Interp *I, LangOp op, Value a, Value *out);
bool class_len(Interp *I, Value v, int64_t *out);
bool class_truthy(Interp *I, Value v, bool *out);
bool class_getitem(Interp *I, Value obj, Value idx, Value *out);
bool class_setitem(Interp *I, Value obj, Value idx, Value v);
bool class_delitem(Interp *I, Value obj, Value idx);
bool class_contains(Interp *I, Value c, Value item, bool *out);
/* __hash__ (*found false: hash by identity); TypeError for a class with __eq__ and no __hash__. */
bool class_hash(Interp *I, Value v, uint64_t *out, bool *found);
/* Iteration of an instance (Iter.seq the iterator; Iter.byte 1 for the __getitem__ protocol). */
bool class_iter_begin(Interp *I, Value v, Iter *it);
bool class_iterable(Interp *I, Value v, bool *yes);     /* has __iter__ or __getitem__ */
bool class_iter_next(Interp *I, Iter *it, Value *out, bool *done);
/* repr() (str: str()) of classes, instances, methods, descriptors and super objects. */
bool class_repr(Interp *I, Value v, Buf *b, bool str);
/* super(cls, obj) */
bool super_new(Interp *I, Value cls, Value obj, Value *out);
extern const BuiltinDef super_builtin, object_init_builtin, exc_init_builtin, property_setter_builtin,
    property_getter_builtin, object_new_builtin, object_init_subclass_builtin, type_new_builtin, type_init_builtin,
    type_call_builtin;

/* ---- builtins (builtins.c) ---- */

extern const BuiltinDef builtin_functions[];        /* terminated by a NULL name */
/* The method `name` of a value of type t, or NULL. */
const BuiltinDef *builtin_method(TypeId t, const char *name);
/* Calls type t as a constructor: int(x), str(x), list(x), ... */
bool type_call(Interp *I, TypeId t, const Value *args, int nargs, const char *const *kwnames,
               int nkw, Value *out);
/* Appends v formatted as Python's format(v, spec) after the conversion conv ('r', 's', 'a' or
 * 0), as a str.format or f-string field does. */
bool val_format(Interp *I, Value v, char conv, const char *spec, size_t slen, Buf *b);
/* fmt % args: Python's printf-style string formatting. */
bool str_percent(Interp *I, Value fmt, Value args, Value *out);
/* Checks positional/keyword counts against def; raises TypeError naming the function. */
bool builtin_check_args(Interp *I, const BuiltinDef *def, int nargs, const char *const *kwnames, int nkw);
/* Calls a builtin (checking its arguments first). A host builtin whose first argument is a
 * tensor runs the tensor function of the same name instead: abs(t), max(t, 1), sum(t, dim=0). */
bool builtin_call(Interp *I, const BuiltinDef *def, Value self, const Value *args, int nargs,
                  const char *const *kwnames, int nkw, Value *out);

/* ---- tensors (tensor.c; the operators themselves are rows of tensor_ops.def) ---- */

/* tdl_open: the FcCtx, the parsed operator table, and the builtin names (functions, dtypes,
 * memory formats) in module m. false with the error raised (tdl_open then fails). */
bool tensor_init(Interp *I, Module *m);
/* tdl_close, after every value is gone. */
void tensor_fini(Interp *I);
/* The default device for new tensors ("cpu", "cuda", "cuda:1"); DeviceError if unavailable. */
bool tensor_set_device(Interp *I, const char *name);
/* Raises the error of a failed fcdim call (its kind mapped onto tdl's) and returns false. */
bool tensor_fail(Interp *I, FcStatus st, const FcError *e);
/* The tensor method / tensor function `name` as a builtin, or NULL. */
const BuiltinDef *tensor_method(const char *name);
/* help.c: the `help` builtin (its repr is help_hint) and the REPL's Tab completion of text (a name
 * or a dotted name's attribute): emit is called with each whole candidate. */
extern const BuiltinDef help_builtin;
extern const char help_hint[];
void help_complete(Interp *I, const char *text, void (*emit)(void *ud, const char *candidate), void *ud);
const BuiltinDef *tensor_function(const char *name);
/* What ops.c and format.c do with tensors, dtypes and devices (Python's dunder methods). */
bool tensor_binop(Interp *I, LangOp op, Value a, Value b, Value *out);
/* a op= b for a tensor a: PyTorch's in-place operator (Tensor.__iadd__ & co.): the result keeps
 * a's shape and dtype (RuntimeError when the broadcast shape differs or the result type can't be
 * cast to a's dtype), is written into a's memory, and *out is a itself. A tensor with first-class
 * dims, and @=, give a new value instead (Python's fallback to a = a op b). */
bool tensor_inplace_binop(Interp *I, LangOp op, Value a, Value b, Value *out);
/* Writes res (self's shape and dtype) into self, PyTorch's in-place rules: a lazy self is
 * computed first (its views then see the write), and a self whose elements share memory (an
 * expanded view) is refused as torch refuses it. */
bool tensor_write_into(Interp *I, FcTensor *self, FcTensor *res);
bool tensor_unary(Interp *I, LangOp op, Value a, Value *out);
bool tensor_truthy(Interp *I, Value v, bool *out);
bool tensor_len(Interp *I, Value v, int64_t *out);
bool tensor_getitem(Interp *I, Value t, Value idx, Value *out);
bool tensor_setitem(Interp *I, Value t, Value idx, Value v);    /* t[idx] = v, in place */
bool tensor_contains(Interp *I, Value t, Value item, bool *out);
/* Attributes of tensors (t.shape) and devices (d.type); *found false when there is none. */
bool tensor_getattr(Interp *I, Value obj, const char *name, Value *out, bool *found);
/* t.grad = g / t.requires_grad = b; *found false for other names (and non-tensors). */
bool tensor_set_attr(Interp *I, Value obj, const char *name, Value v, bool *found);
/* Tensor.__index__: the value of a one-element integer (or bool) tensor without first-class dims;
 * TypeError for any other tensor. */
bool tensor_index(Interp *I, Value t, int64_t *out);
/* float(t), int(t): the value of a one-element tensor as want (T_FLOAT or T_INT). */
bool tensor_to_number(Interp *I, Value v, TypeId want, Value *out);
/* device("cuda:1") */
bool tensor_device_new(Interp *I, const Value *args, int nargs, int nkw, Value *out);
bool tensor_repr(Interp *I, Value v, Buf *b);

/* ---- first-class dims (dims.c) ---- */

/* dims(n=None, sizes=None), dimlists(n=None, sizes=None): builtin functions. */
bool builtin_dims(Interp *I, Value self, const Value *args, int nargs, const char *const *kwnames, int nkw,
                  Value *out);
bool builtin_dimlists(Interp *I, Value self, const Value *args, int nargs, const char *const *kwnames, int nkw,
                      Value *out);
/* Attributes of dims, dim lists, and those dims add to tensors (t.dims, t.order, t.index, t.expand
 * of dims); *found false when obj has no such attribute here. */
bool dims_getattr(Interp *I, Value obj, const char *name, Value *out, bool *found);
/* The tensor methods dims add or extend (order, index, expand), or NULL. */
const BuiltinDef *dims_method(const char *name);
/* d.size = n; *found false for anything else. */
bool dims_set_attr(Interp *I, Value obj, const char *name, Value v, bool *found);

/* ---- the embedding API (api.c, embed.c) ---- */

typedef struct HostFn HostFn;           /* a C builtin (embed.c) */
typedef struct ImportHold ImportHold;   /* a DLPack tensor imported and not yet released (embed.c) */

/* What tdl.h's tdl_interp is: the Interp (first, so an Interp * is its tdl_interp *) and what the
 * embedding API keeps around it. The shell outlives tdl_close while value handles or DLPack
 * exports remain: closed is then set, every call on it is TDL_MISUSE, and the last handle freed or
 * export deleted frees it.
 *
 * Threads: one thread at a time uses an interpreter, but a DLPack consumer may call an export's
 * deleter from any thread. exports_lock() (one for the process: see api.c) guards what such a
 * deleter touches: owner, closed, nexports, nhandles after close, kept_fc and pending. A deleter
 * running on the owner thread (or after close) releases its storage at once, under the lock; on
 * another thread it leaves the storage in pending, which the owner releases at its next call
 * (api_enter). So storage reference counts are only ever changed by one thread at a time. */
struct tdl_interp {
    Interp I;
    pthread_t owner;            /* the thread of the last call (api_enter) */
    bool closed;
    int nest;                   /* calls running code, nested through C builtins */
    struct tdl_value *handles;  /* live handles (doubly linked) */
    size_t nhandles;            /* allocated handles, live or dead */
    size_t nexports;            /* DLPack exports not yet released */
    FcCtx *kept_fc;             /* after close: the context the exports' storages still need */
    FcStorage **pending;        /* storages of exports deleted on other threads, to release */
    size_t npending, cappending;   /* cappending >= nexports, so a deleter never allocates */
    HostFn **fns;               /* C builtins, by the index their BuiltinObj carries */
    int nfns, capfns;
    ImportHold *imports;        /* DLPack tensors imported and not yet released (doubly linked) */
    MemAccount mem;             /* what T's allocations hold, against tdl_config.max_memory */
};

static inline tdl_interp *interp_shell(Interp *I) { return (tdl_interp *)I; }

/* The process's lock of DLPack bookkeeping (api.c); ready: false when it could not be made. */
bool exports_lock_ready(void);
void exports_lock(void);
void exports_unlock(void);

/* T's memory account when it has a limit (else NULL: nothing to count). */
static inline MemAccount *api_account(const tdl_interp *T)
{
    return T && T->mem.limit > 0 ? (MemAccount *)&T->mem : NULL;
}
/* Makes T's memory account current on this thread until the end of the enclosing block, so what
 * is allocated for T, in fcdim/ and the backends too (which do not know the interpreter), is
 * charged to it. Every public entry point starts with it (before api_enter: that releases
 * storages); the previous account comes back on the way out (a C builtin calls back in, a host
 * runs several interpreters on one thread). */
#define API_MEM_SCOPE(T)                                                                           \
    MemAccount *api_mem_prev_ __attribute__((cleanup(mem_scope_end), unused)) = mem_scope_begin(api_account(T))

/* Starts every public call on T: false for a NULL or closed T (the call returns TDL_MISUSE);
 * else records the calling thread as the owner and releases what deleters on other threads left. */
bool api_enter(tdl_interp *T);
/* Brackets a call that runs tdl code (tdl_run_*, tdl_call*, tdl_import): clears the error and the
 * exit flag; at the outermost level also the interrupt flag and the C stack guard; keeps the
 * running statement of an outer call (a C builtin calling back into tdl). here: a local of the
 * caller. */
typedef struct ApiRun { LangSource *stmt_src; uint32_t stmt_pos; } ApiRun;
void api_run_begin(tdl_interp *T, ApiRun *r, char *here);
void api_run_end(tdl_interp *T, const ApiRun *r);
/* tdl_config.flags TDL_NO_FILES, TDL_NO_FILE_READ, TDL_NO_FILE_WRITE: whether fn ("load"), which
 * reads (write false) or writes files, may run; else raises IOError naming fn and returns false.
 * Every builtin that touches a file asks first. */
bool interp_files_allowed(Interp *I, const char *fn, bool write);

/* embed.c, for tdl_close: drops the values of live handles (marking them dead), then, after every
 * object is gone, frees the C builtins and the import records. */
void embed_drop_handles(tdl_interp *T);
void embed_free_host(tdl_interp *T);
/* Frees the shell (the last handle or export of a closed interpreter is gone). */
void embed_free_shell(tdl_interp *T);

#endif
