/* resolve.c — scope analysis: binds every name in a parsed unit to a local slot, a cell, a free
 * variable of a closure, or a module global, with Python's rules (a name assigned anywhere in a
 * function is local to it unless declared global/nonlocal; inner functions capture the variables
 * of enclosing functions as cells). Also reports the static errors Python reports at compile time
 * ('return' outside function, 'break' outside loop, bad nonlocal). Results are written into the
 * tree (Node.scope/slot/builtin, LangFunc's slot tables) in the unit's arena. */
#include "interp.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Names { const char **v; int n, cap; } Names;

typedef struct Scope {
    struct Scope *parent;       /* enclosing function scope; NULL at module level */
    LangFunc *fn;               /* NULL for the module */
    Names locals;               /* parameters first */
    Names globals, nonlocals;
    Names free;
    int32_t *free_from;         /* parallel to free */
    uint8_t *is_cell;           /* parallel to locals (allocated at the end) */
    int cell_cap;
} Scope;

typedef struct Resolver {
    Interp *I;
    Module *m;
    LangUnit *u;
    bool failed;
    int loops;                  /* enclosing loops in the current function */
} Resolver;

static bool fail(Resolver *r, uint32_t pos, const char *fmt, const char *name)
{
    if (!r->failed) {
        err_raise(r->I, TDL_ERR_SYNTAX, fmt, name);
        r->I->err.syntax = true;
        r->I->err.need_loc = false;
        err_trace(r->I, r->u->src, pos, "<module>");
    }
    r->failed = true;
    return false;
}

static int names_find(const Names *ns, const char *s)
{
    for (int i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], s) == 0) return i;
    return -1;
}

static int names_add(Resolver *r, Names *ns, const char *s)
{
    int k = names_find(ns, s);
    if (k >= 0) return k;
    if (ns->n == ns->cap) {
        int cap = ns->cap ? ns->cap * 2 : 8;
        const char **v = mem_realloc(ns->v, (size_t)cap * sizeof *v);
        if (!v) {
            if (!r->failed) err_nomem(r->I);
            r->failed = true;
            return -1;
        }
        ns->v = v;
        ns->cap = cap;
    }
    ns->v[ns->n] = s;
    return ns->n++;
}

static void scope_free(Scope *s)
{
    mem_free(s->locals.v);
    mem_free(s->globals.v);
    mem_free(s->nonlocals.v);
    mem_free(s->free.v);
    mem_free(s->free_from);
    mem_free(s->is_cell);
}

/* ---- pass 1: which names does a function bind? ---- */

static void bind_target(Resolver *r, Scope *s, Node *t)
{
    if (!t) return;
    if (t->kind == N_NAME) {
        if (names_find(&s->globals, t->str) < 0 && names_find(&s->nonlocals, t->str) < 0)
            names_add(r, &s->locals, t->str);
    } else if (t->kind == N_TUPLE || t->kind == N_LIST) {
        for (Node *e = t->a; e; e = e->next) bind_target(r, s, e);
    }
}

/* Collects the locals of s from a statement list (not entering nested functions). */
static void collect(Resolver *r, Scope *s, Node *st)
{
    for (; st; st = st->next) {
        switch (st->kind) {
        case N_ASSIGN:
            for (Node *t = st->a; t; t = t->next) bind_target(r, s, t);
            break;
        case N_AUGASSIGN: bind_target(r, s, st->a); break;
        case N_FOR: bind_target(r, s, st->a); collect(r, s, st->c); collect(r, s, st->d); break;
        case N_IF: case N_WHILE: collect(r, s, st->b); collect(r, s, st->c); break;
        case N_WITH:
            for (Node *w = st->a; w; w = w->next) bind_target(r, s, w->b);
            collect(r, s, st->b);
            break;
        case N_TRY:
            collect(r, s, st->a);
            for (Node *h = st->b; h; h = h->next) {
                bind_target(r, s, h->c);
                collect(r, s, h->b);
            }
            collect(r, s, st->c);
            collect(r, s, st->d);
            break;
        case N_DEF: case N_IMPORT: case N_DEL: case N_CLASS: bind_target(r, s, st->a); break;
        case N_GLOBAL: case N_NONLOCAL:
            for (Node *n = st->a; n; n = n->next) {
                if (names_find(&s->locals, n->str) >= 0) {
                    fail(r, n->pos, st->kind == N_GLOBAL ? "name '%s' is assigned to before global declaration"
                                                         : "name '%s' is assigned to before nonlocal declaration", n->str);
                    return;
                }
                names_add(r, st->kind == N_GLOBAL ? &s->globals : &s->nonlocals, n->str);
            }
            break;
        default: break;
        }
    }
}

/* Collects the names bound by `x := v` in the expressions of s's own code (not of nested
 * functions; into comprehensions, whose walrus binds in the function around them, as in Python).
 * In a function they are locals; in a comprehension's scope nonlocal, so that they resolve to the
 * enclosing function's local (or, at module level, the global). */
static void collect_walrus(Resolver *r, Scope *s, Node *n)
{
    for (; n && !r->failed; n = n->next) {
        switch (n->kind) {
        case N_NAMEDEXPR:
            if (s->fn && s->fn->is_comp) names_add(r, &s->nonlocals, n->a->str);
            else bind_target(r, s, n->a);
            collect_walrus(r, s, n->b);
            break;
        case N_LAMBDA: case N_DEF:
            for (Node *p = n->func->params; p; p = p->next) collect_walrus(r, s, p->a);
            break;
        case N_COMP:
            collect_walrus(r, s, n->a);
            collect_walrus(r, s, n->func->body);
            break;
        case N_NAME: case N_INT: case N_FLOAT: case N_STR:
            break;
        default:
            collect_walrus(r, s, n->a);
            collect_walrus(r, s, n->b);
            collect_walrus(r, s, n->c);
            collect_walrus(r, s, n->d);
            break;
        }
    }
}

/* ---- pass 2: resolve references ---- */

/* Finds name as seen from function scope s; returns its free index in s (adding it), or -1 when
 * no enclosing function binds it (a global). */
static int capture(Resolver *r, Scope *s, const char *name)
{
    int k = names_find(&s->free, name);
    if (k >= 0) return k;
    Scope *p = s->parent;
    if (!p || !p->fn) return -1;
    int32_t from;
    /* a class body's names are not visible in the functions inside it (Python's rule): its
     * scope only passes the enclosing function's variables through */
    int slot = p->fn->is_class ? -1 : names_find(&p->locals, name);
    if (slot >= 0 && names_find(&p->globals, name) < 0) {
        p->is_cell[slot] = 1;
        from = slot;
    } else if (names_find(&p->globals, name) >= 0) {
        return -1;
    } else {
        int pk = capture(r, p, name);
        if (pk < 0) return -1;
        from = -1 - pk;
    }
    k = names_add(r, &s->free, name);
    if (k < 0) return -1;
    int32_t *ff = mem_realloc(s->free_from, (size_t)s->free.cap * sizeof *ff);
    if (!ff) {
        if (!r->failed) err_nomem(r->I);
        r->failed = true;
        return -1;
    }
    s->free_from = ff;
    ff[k] = from;
    return k;
}

static void resolve_name(Resolver *r, Scope *s, Node *n)
{
    if (s->fn && names_find(&s->globals, n->str) < 0) {
        int slot = names_find(&s->locals, n->str);
        if (slot >= 0) {
            n->scope = SCOPE_LOCAL;     /* becomes SCOPE_CELL in fixup if captured */
            n->slot = slot;
            return;
        }
        int k = capture(r, s, n->str);
        if (k >= 0) {
            n->scope = SCOPE_FREE;
            n->slot = k;
            return;
        }
    }
    int32_t g = module_slot(r->m, n->str);
    if (g < 0) {
        if (!r->failed) err_nomem(r->I);
        r->failed = true;
        return;
    }
    n->scope = SCOPE_GLOBAL;
    n->slot = g;
    n->builtin = namemap_get(&r->I->builtins->names, n->str);
}

static void resolve_function(Resolver *r, Scope *parent, LangFunc *fn);
static void resolve_stmts(Resolver *r, Scope *s, Node *st);

static void resolve_expr(Resolver *r, Scope *s, Node *e)
{
    for (; e && !r->failed; e = NULL) {
        switch (e->kind) {
        case N_NAME: resolve_name(r, s, e); break;
        case N_INT: case N_FLOAT: case N_STR: case N_TRUE: case N_FALSE: case N_NONE: case N_ELLIPSIS:
            break;
        case N_TUPLE: case N_LIST: case N_SET: case N_DICT: case N_FSTRING:
            for (Node *x = e->a; x; x = x->next) resolve_expr(r, s, x);
            break;
        case N_COMPARE:
            resolve_expr(r, s, e->a);
            for (Node *x = e->b; x; x = x->next) resolve_expr(r, s, x->a);
            break;
        case N_CALL:
            resolve_expr(r, s, e->a);
            for (Node *x = e->b; x; x = x->next) resolve_expr(r, s, x->kind == N_KWARG ? x->a : x);
            break;
        case N_LAMBDA:
            for (Node *p = e->func->params; p; p = p->next) resolve_expr(r, s, p->a);
            resolve_function(r, s, e->func);
            break;
        case N_YIELD:
            if (!s->fn || s->fn->is_class) {
                fail(r, e->pos, "'yield' outside function%s", "");
                return;
            }
            if (s->fn->is_comp) {
                const char *n = s->fn->name;
                fail(r, e->pos, "'yield' inside %s", strcmp(n, "<genexpr>") == 0 ? "generator expression"
                                                     : strcmp(n, "<listcomp>") == 0 ? "list comprehension"
                                                     : strcmp(n, "<setcomp>") == 0 ? "set comprehension" : "dict comprehension");
                return;
            }
            s->fn->is_gen = true;
            resolve_expr(r, s, e->a);
            break;
        case N_COMP:    /* the first iterable here; the rest in the comprehension's own scope */
            resolve_expr(r, s, e->a);
            resolve_function(r, s, e->func);
            break;
        default:
            resolve_expr(r, s, e->a);
            resolve_expr(r, s, e->b);
            resolve_expr(r, s, e->c);
            break;
        }
    }
}

static void resolve_stmts(Resolver *r, Scope *s, Node *st)
{
    for (; st && !r->failed; st = st->next) {
        switch (st->kind) {
        case N_EXPR_STMT: resolve_expr(r, s, st->a); break;
        case N_ASSIGN:
            for (Node *t = st->a; t; t = t->next) resolve_expr(r, s, t);
            resolve_expr(r, s, st->b);
            break;
        case N_DEL: resolve_expr(r, s, st->a); break;
        case N_RAISE:
            resolve_expr(r, s, st->a);
            resolve_expr(r, s, st->b);
            break;
        case N_WITH:
            for (Node *w = st->a; w && !r->failed; w = w->next) {
                resolve_expr(r, s, w->a);
                resolve_expr(r, s, w->b);
            }
            resolve_stmts(r, s, st->b);
            break;
        case N_TRY:
            resolve_stmts(r, s, st->a);
            for (Node *h = st->b; h && !r->failed; h = h->next) {
                resolve_expr(r, s, h->a);
                resolve_expr(r, s, h->c);
                resolve_stmts(r, s, h->b);
            }
            resolve_stmts(r, s, st->c);
            resolve_stmts(r, s, st->d);
            break;
        case N_COMP_EMIT:
            resolve_expr(r, s, st->a);
            resolve_expr(r, s, st->b);
            break;
        case N_AUGASSIGN: case N_ASSERT:
            resolve_expr(r, s, st->a);
            resolve_expr(r, s, st->b);
            break;
        case N_RETURN:
            if (!s->fn || s->fn->is_class) { fail(r, st->pos, "'return' outside function%s", ""); return; }
            resolve_expr(r, s, st->a);
            break;
        case N_BREAK: case N_CONTINUE:
            if (r->loops == 0) {
                fail(r, st->pos, "'%s' outside loop", st->kind == N_BREAK ? "break" : "continue");
                return;
            }
            break;
        case N_IF:
            resolve_expr(r, s, st->a);
            resolve_stmts(r, s, st->b);
            resolve_stmts(r, s, st->c);
            break;
        case N_WHILE:
            resolve_expr(r, s, st->a);
            r->loops++;
            resolve_stmts(r, s, st->b);
            r->loops--;
            resolve_stmts(r, s, st->c);
            break;
        case N_FOR:
            resolve_expr(r, s, st->a);
            resolve_expr(r, s, st->b);
            r->loops++;
            resolve_stmts(r, s, st->c);
            r->loops--;
            resolve_stmts(r, s, st->d);
            break;
        case N_DEF:
            for (Node *d = st->d; d; d = d->next) resolve_expr(r, s, d);
            for (Node *p = st->func->params; p; p = p->next) resolve_expr(r, s, p->a);
            resolve_expr(r, s, st->a);
            resolve_function(r, s, st->func);
            break;
        case N_CLASS:
            for (Node *d = st->d; d; d = d->next) resolve_expr(r, s, d);
            for (Node *b = st->b; b; b = b->next) resolve_expr(r, s, b->kind == N_KWARG ? b->a : b);
            resolve_expr(r, s, st->a);
            resolve_function(r, s, st->func);
            break;
        case N_IMPORT: resolve_expr(r, s, st->a); break;
        case N_GLOBAL:
            if (!s->fn) break;      /* harmless at module level, as in Python */
            break;
        case N_NONLOCAL:
            if (!s->fn) { fail(r, st->pos, "nonlocal declaration not allowed at module level%s", ""); return; }
            for (Node *n = st->a; n; n = n->next)
                if (capture(r, s, n->str) < 0) {
                    fail(r, n->pos, "no binding for nonlocal '%s' found", n->str);
                    return;
                }
            break;
        default: break;
        }
    }
}

/* Sets SCOPE_CELL on the names of s that refer to captured slots (s's own body only). */
static void fixup(Scope *s, Node *n);
static void fixup_list(Scope *s, Node *n)
{
    for (; n; n = n->next) fixup(s, n);
}

static void fixup(Scope *s, Node *n)
{
    if (!n) return;
    switch (n->kind) {
    case N_NAME:
        if (n->scope == SCOPE_LOCAL && s->is_cell[n->slot]) n->scope = SCOPE_CELL;
        return;
    case N_LAMBDA:
        for (Node *p = n->func->params; p; p = p->next) fixup(s, p->a);
        return;
    case N_DEF:
        for (Node *p = n->func->params; p; p = p->next) fixup(s, p->a);
        fixup(s, n->a);
        fixup_list(s, n->d);
        return;
    case N_CLASS:
        fixup(s, n->a);
        fixup_list(s, n->b);
        fixup_list(s, n->d);
        return;
    case N_TUPLE: case N_LIST: case N_GLOBAL: case N_NONLOCAL: case N_SET: case N_DICT: case N_FSTRING:
        fixup_list(s, n->a);
        return;
    case N_COMPARE:
        fixup(s, n->a);
        fixup_list(s, n->b);
        return;
    case N_CALL: case N_ASSIGN:
        fixup_list(s, n->a);
        if (n->kind == N_CALL) fixup_list(s, n->b); else fixup(s, n->b);
        return;
    case N_IF: case N_WHILE:
        fixup(s, n->a);
        fixup_list(s, n->b);
        fixup_list(s, n->c);
        return;
    case N_WITH:
        for (Node *w = n->a; w; w = w->next) {
            fixup(s, w->a);
            fixup(s, w->b);
        }
        fixup_list(s, n->b);
        return;
    case N_TRY:
        fixup_list(s, n->a);
        for (Node *h = n->b; h; h = h->next) {
            fixup(s, h->a);
            fixup(s, h->c);
            fixup_list(s, h->b);
        }
        fixup_list(s, n->c);
        fixup_list(s, n->d);
        return;
    case N_FOR:
        fixup(s, n->a);
        fixup(s, n->b);
        fixup_list(s, n->c);
        fixup_list(s, n->d);
        return;
    default:
        fixup(s, n->a);
        fixup(s, n->b);
        fixup(s, n->c);
        return;
    }
}

static void resolve_function(Resolver *r, Scope *parent, LangFunc *fn)
{
    if (r->failed) return;
    Scope s = {0};
    s.parent = parent;
    s.fn = fn;
    if (parent && parent->fn) {
        /* "outer.<locals>.inner", as CPython's __qualname__ */
        size_t n = strlen(parent->fn->qualname) + strlen(fn->name) + sizeof ".<locals>.";
        char *q = lang_arena_alloc(r->u->arena, n);
        if (!q) {
            if (!r->failed) err_nomem(r->I);
            r->failed = true;
            return;
        }
        /* a class's functions are "A.m"; a function's are "f.<locals>.g" */
        snprintf(q, n, parent->fn->is_class ? "%s.%s" : "%s.<locals>.%s", parent->fn->qualname, fn->name);
        fn->qualname = q;
    }
    for (Node *p = fn->params; p; p = p->next) names_add(r, &s.locals, p->str);
    collect(r, &s, fn->body);
    collect_walrus(r, &s, fn->body);
    /* Nonlocal names must come from an enclosing function. */
    s.is_cell = mem_calloc((size_t)(s.locals.n ? s.locals.n : 1), 1);
    if (!s.is_cell) {
        if (!r->failed) err_nomem(r->I);
        r->failed = true;
    }
    int saved_loops = r->loops;
    r->loops = 0;
    if (!r->failed) resolve_stmts(r, &s, fn->body);
    r->loops = saved_loops;
    if (!r->failed) {
        fixup_list(&s, fn->body);
        LangArena *a = r->u->arena;
        fn->nslots = s.locals.n;
        fn->slot_is_cell = lang_arena_alloc(a, (size_t)(s.locals.n ? s.locals.n : 1));
        fn->slot_names = lang_arena_alloc(a, (size_t)(s.locals.n ? s.locals.n : 1) * sizeof(char *));
        fn->nfree = s.free.n;
        fn->free_from = lang_arena_alloc(a, (size_t)(s.free.n ? s.free.n : 1) * sizeof(int32_t));
        if (!fn->slot_is_cell || !fn->slot_names || !fn->free_from) {
            err_nomem(r->I);
            r->failed = true;
        } else {
            if (s.locals.n) {
                memcpy(fn->slot_is_cell, s.is_cell, (size_t)s.locals.n);
                memcpy(fn->slot_names, s.locals.v, (size_t)s.locals.n * sizeof(char *));
            }
            if (s.free.n) memcpy(fn->free_from, s.free_from, (size_t)s.free.n * sizeof(int32_t));
            fn->resolved = true;
        }
    }
    scope_free(&s);
}

bool resolve_unit(Interp *I, Module *m, LangUnit *u)
{
    Resolver r = {I, m, u, false, 0};
    Scope top = {0};
    resolve_stmts(&r, &top, u->body);
    scope_free(&top);
    return !r.failed;
}
