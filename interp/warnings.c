/* warnings.c — Python's warnings: `import warnings` gives a module with warn(), simplefilter() and
 * resetwarnings(), and C code (the tensor operations) warns through interp_warn.
 *
 * A warning is printed to stderr as CPython's default hook prints it ("file:line: Category: text"
 * then the source line), once per location and text under the "default" action; the filters
 * simplefilter() installs (newest first, matched by category) may make it "always", "once",
 * "ignore" or "error" (raised as an exception of its category). */
#include "interp.h"

#include <stdio.h>
#include <string.h>

#define BUILTIN_ARGS Interp *I, Value self, const Value *args, int nargs, const char *const *kwnames, int nkw, Value *out

typedef enum WarnAction { WA_DEFAULT, WA_ALWAYS, WA_ONCE, WA_IGNORE, WA_ERROR } WarnAction;

static const char *const action_names[] = {"default", "always", "once", "ignore", "error", "module"};

typedef struct WarnFilter { WarnAction action; tdl_error_kind category; } WarnFilter;

#define MAX_FILTERS 64

struct WarnState {
    WarnFilter filters[MAX_FILTERS];    /* newest first */
    int nfilters;
    NameMap seen;                       /* "file:line:category:text" (and "category:text" for once) */
};

void warnings_free(Interp *I)
{
    if (!I->warn) return;
    namemap_free(&I->warn->seen);
    mem_free(I->warn);
    I->warn = NULL;
}

static struct WarnState *state(Interp *I)
{
    if (!I->warn) I->warn = mem_calloc(1, sizeof *I->warn);
    return I->warn;
}

/* Whether key was seen before (and records it); false with *nomem on out-of-memory. */
static bool seen_before(struct WarnState *w, const char *key, bool *nomem)
{
    if (namemap_get(&w->seen, key) >= 0) return true;
    if (!namemap_put(&w->seen, key, 1)) *nomem = true;
    return false;
}

/* Shows or raises a warning of kind (its class's name cls_name; cls the user class or V_UNDEF) at
 * the statement running now (depth 0) or at the call site `up` levels out. */
/* once: under the default action, shown once per text wherever it comes from (C++'s
 * TORCH_WARN_ONCE), as the "once" action shows it. */
static bool warn_at(Interp *I, tdl_error_kind kind, Value cls, const char *cls_name, const char *msg, int up,
                    bool once)
{
    struct WarnState *w = state(I);
    if (!w) return err_nomem(I);
    WarnAction action = WA_DEFAULT;
    for (int i = 0; i < w->nfilters; i++)
        if (exc_is_subclass(kind, w->filters[i].category)) {
            action = w->filters[i].action;
            break;
        }
    if (action == WA_IGNORE) return true;
    if (action == WA_ERROR) {
        Value m, e;
        if (!str_from_cstr(I, msg, &m)) return false;
        bool ok = cls.tag == V_CLASS ? class_call(I, cls, &m, 1, NULL, 0, &e) : exc_new(I, kind, &m, 1, &e);
        val_decref(I, m);
        if (!ok) return false;
        exc_raise(I, e);
        val_decref(I, e);
        return false;
    }
    LangSource *src = I->stmt_src;
    uint32_t pos = I->stmt_pos;
    const CallSite *cs = I->callsite;
    for (int k = 0; k < up && src; k++) {
        src = cs ? cs->src : NULL;
        pos = cs ? cs->pos : 0;
        cs = cs ? cs->up : NULL;
    }
    int line = 1, col = 1;
    if (src) lang_source_linecol(src, pos, &line, &col);
    const char *file = src ? src->name : "sys";
    Buf key = {0};
    bool nomem = false;
    if (action == WA_ONCE || (once && action == WA_DEFAULT)) buf_printf(&key, "%s:%s", cls_name, msg);
    else buf_printf(&key, "%s:%d:%s:%s", file, line, cls_name, msg);
    if (key.nomem) return err_nomem(I);
    bool seen = action != WA_ALWAYS && seen_before(w, key.p, &nomem);
    buf_free(&key);
    if (nomem) return err_nomem(I);
    if (seen) return true;
    Buf b = {0};
    buf_printf(&b, "%s:%d: %s: %s\n", file, line, cls_name, msg);
    const char *text;
    size_t len;
    if (src && lang_source_line(src, line, &text, &len)) {
        while (len && (*text == ' ' || *text == '\t')) text++, len--;
        buf_printf(&b, "  %.*s\n", (int)len, text);
    }
    if (b.nomem) return err_nomem(I);
    fflush(stdout);     /* in order with what the program printed before */
    fputs(b.p, stderr);
    fflush(stderr);
    buf_free(&b);
    return true;
}

bool interp_warn(Interp *I, tdl_error_kind category, const char *msg)
{
    return warn_at(I, category, v_undef(), tdl_error_kind_name(category), msg, 0, false);
}

bool interp_warn_once(Interp *I, tdl_error_kind category, const char *msg)
{
    return warn_at(I, category, v_undef(), tdl_error_kind_name(category), msg, 0, true);
}

/* A warning category: a builtin warning class or a user class deriving from one. */
static bool warning_category(Interp *I, Value c, tdl_error_kind *kind)
{
    if (c.tag == V_EXCTYPE && exc_is_subclass((tdl_error_kind)c.i, TDL_ERR_WARNING)) {
        *kind = (tdl_error_kind)c.i;
        return true;
    }
    if (c.tag == V_CLASS && exc_is_subclass(((ClassObj *)c.o)->exc, TDL_ERR_WARNING)) {
        *kind = ((ClassObj *)c.o)->exc;
        return true;
    }
    return err_raise(I, TDL_ERR_TYPE, "category must be a Warning subclass, not '%s'", val_type_name(c));
}

static int kw_find(const char *const *kwnames, int nkw, const char *name)
{
    for (int k = 0; k < nkw; k++)
        if (strcmp(kwnames[k], name) == 0) return k;
    return -1;
}

/* warn(message, category=None, stacklevel=1): message a str, or a Warning instance (whose class
 * is then the category). */
static bool w_warn(BUILTIN_ARGS)
{
    int kc = kw_find(kwnames, nkw, "category"), ks = kw_find(kwnames, nkw, "stacklevel");
    if ((kc >= 0 && nargs > 1) || (ks >= 0 && nargs > 2))
        return err_raise(I, TDL_ERR_TYPE, "warn() got multiple values for argument '%s'",
                         kc >= 0 && nargs > 1 ? "category" : "stacklevel");
    Value cat = nargs > 1 ? args[1] : kc >= 0 ? args[nargs + kc] : v_none();
    Value lvl = nargs > 2 ? args[2] : ks >= 0 ? args[nargs + ks] : v_int(1);
    if (lvl.tag != V_INT && lvl.tag != V_BOOL)
        return err_raise(I, TDL_ERR_TYPE, "'%s' object cannot be interpreted as an integer", val_type_name(lvl));
    int64_t level = lvl.tag == V_BOOL ? lvl.b : lvl.i;
    Value msg = args[0];
    tdl_error_kind kind = TDL_ERR_USER_WARNING;
    Value cls = v_undef();
    const char *name = "UserWarning";
    if (msg.tag == V_EXC && exc_is_subclass(((ExcObj *)msg.o)->kind, TDL_ERR_WARNING)) {
        /* an instance: its class is the category, its str() the text */
        ExcObj *e = (ExcObj *)msg.o;
        kind = e->kind;
        if (e->cls) cls = v_obj(V_CLASS, &e->cls->h);
        name = val_type_name(msg);
    } else if (cat.tag != V_NONE) {
        if (!warning_category(I, cat, &kind)) return false;
        if (cat.tag == V_CLASS) {
            cls = cat;
            name = ((ClassObj *)cat.o)->name;
        } else {
            name = tdl_error_kind_name(kind);
        }
    }
    Buf text = {0};
    if (!val_str(I, msg, &text)) {
        buf_free(&text);
        return false;
    }
    if (text.nomem) return err_nomem(I);
    bool ok = warn_at(I, kind, cls, name, text.p ? text.p : "", level < 1 ? 0 : (int)(level > 1000 ? 1000 : level - 1), false);
    buf_free(&text);
    if (ok) *out = v_none();
    return ok;
}

/* simplefilter(action, category=Warning): action for warnings of that category from now on. */
static bool w_simplefilter(BUILTIN_ARGS)
{
    int kc = kw_find(kwnames, nkw, "category");
    Value cat = nargs > 1 ? args[1] : kc >= 0 ? args[nargs + kc] : v_exctype(TDL_ERR_WARNING);
    if (args[0].tag != V_STR) return err_raise(I, TDL_ERR_TYPE, "action must be a string, not '%s'", val_type_name(args[0]));
    const char *a = as_str(args[0])->data;
    int action = -1;
    for (int i = 0; i < (int)(sizeof action_names / sizeof action_names[0]); i++)
        if (strcmp(a, action_names[i]) == 0) action = i == 5 ? WA_DEFAULT : i;
    if (action < 0) {
        Buf r = {0};
        bool ok = val_repr(I, args[0], &r);
        if (ok && !r.nomem) err_raise(I, TDL_ERR_ASSERTION, "invalid action: %s", r.p);
        else if (ok) err_nomem(I);
        buf_free(&r);
        return false;
    }
    tdl_error_kind kind;
    if (!warning_category(I, cat, &kind)) return false;
    struct WarnState *w = state(I);
    if (!w) return err_nomem(I);
    /* the same filter again moves to the front; the oldest falls off a full list */
    int n = w->nfilters, i = 0;
    while (i < n && !(w->filters[i].action == (WarnAction)action && w->filters[i].category == kind)) i++;
    if (i == n && n == MAX_FILTERS) i = n - 1;
    else if (i == n) w->nfilters++;
    memmove(&w->filters[1], &w->filters[0], (size_t)i * sizeof w->filters[0]);
    w->filters[0] = (WarnFilter){(WarnAction)action, kind};
    *out = v_none();
    return true;
}

static bool w_resetwarnings(BUILTIN_ARGS)
{
    if (I->warn) I->warn->nfilters = 0;
    *out = v_none();
    return true;
}

static const BuiltinDef warnings_functions[] = {
    {"warn", w_warn, 1, 3, "category stacklevel"},
    {"simplefilter", w_simplefilter, 1, 2, "category"},
    {"resetwarnings", w_resetwarnings, 0, 0, NULL},
    {NULL, NULL, 0, 0, NULL},
};

Module *warnings_module_new(Interp *I)
{
    Module *m = module_new(I, "warnings", NULL);
    if (!m) return NULL;
    for (const BuiltinDef *d = warnings_functions; d->name; d++) {
        Value v;
        int32_t k = module_slot(m, d->name);
        if (k < 0) {
            err_nomem(I);
            goto fail;
        }
        if (!builtin_bind(I, d, v_undef(), &v)) goto fail;
        m->vals[k] = v;
    }
    return m;
fail:
    val_decref(I, v_obj(V_MODULE, &m->h));
    return NULL;
}
