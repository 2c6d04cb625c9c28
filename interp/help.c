/* help.c — what the REPL offers a user who types: the `help` builtin (its repr points at the REPL's
 * :help; help(x) shows the signatures of a builtin or tensor operator from tensor_ops.def) and the
 * names Tab completes (tdl_complete: globals, builtins, keywords, and the attributes of a dotted
 * name: a module's names, a tensor's methods).
 *
 * Depends on interp.h and tensor.h (the operator table); writes through interp_write.
 */
#include "tensor.h"
#include "mem.h"

#include <stdio.h>
#include <string.h>

static bool bi_help(Interp *I, Value self, const Value *args, int nargs, const char *const *kwnames, int nkw,
                    Value *out);

const BuiltinDef help_builtin = {"help", bi_help, 0, 1, NULL};

const char help_hint[] = "Type :help for help on the REPL, or help(object) for the signature of a function or method.";

/* One row as "name(params) -> result", a method's self left out ("Tensor.sum(...)"). */
static void row_text(const TensorOpRow *r, bool method, Buf *b)
{
    const char *sig = r->sig;
    buf_printf(b, "%s%s", method ? "Tensor." : "", r->name);
    if (method && strncmp(sig, "(Tensor self", 12) == 0) {
        sig += 12;
        if (sig[0] == ',') sig += 2;
        buf_puts(b, "(");
    }
    buf_puts(b, sig);
    buf_puts(b, "\n");
}

/* The rows of operator `name` with variant (TV_*; 0: any) into b; false when there is none. */
static bool op_rows(const char *name, unsigned variant, Buf *b)
{
    bool any = false;
    for (int r = 0; r < tensor_nops; r++) {
        const TensorOpRow *row = &tensor_ops[r];
        if (strcmp(row->name, name) != 0 || (variant && !(row->variants & variant))) continue;
        bool method = variant ? variant == TV_METHOD || variant == TV_ATTR : !(row->variants & TV_FUNCTION);
        row_text(row, method, b);
        any = true;
    }
    return any;
}

static bool is_table_def(const BuiltinDef *d)
{
    return d >= &tensor_ops[0].def && d <= &tensor_ops[tensor_nops - 1].def;
}

static bool bi_help(Interp *I, Value self, const Value *args, int nargs, const char *const *kwnames, int nkw,
                    Value *out)
{
    (void)self, (void)kwnames, (void)nkw;
    Buf b = {0};
    if (nargs == 0) {
        buf_printf(&b, "%s\n", help_hint);
    } else {
        Value v = args[0];
        const char *name = NULL;
        unsigned variant = 0;
        if (v.tag == V_STR) {
            name = as_str(v)->data;
        } else if (v.tag == V_BUILTIN) {
            BuiltinObj *bo = as_builtin(v);
            name = bo->def->name;
            if (is_table_def(bo->def)) variant = bo->self.tag == V_UNDEF ? TV_FUNCTION : TV_METHOD;
        }
        bool table = v.tag == V_STR || (v.tag == V_BUILTIN && is_table_def(as_builtin(v)->def));
        if (table && op_rows(name, variant, &b)) {
            /* the table's rows say it all */
        } else if (v.tag == V_BUILTIN) {
            BuiltinObj *bo = as_builtin(v);
            buf_printf(&b, "built-in %s %s: %d to ", bo->self.tag == V_UNDEF ? "function" : "method", name,
                       bo->def->min_args);
            if (bo->def->max_args < 0) buf_puts(&b, "any number of");
            else buf_printf(&b, "%d", bo->def->max_args);
            buf_printf(&b, " positional arguments%s%s\n", bo->def->kwargs ? ", keywords: " : "",
                       bo->def->kwargs ? bo->def->kwargs : "");
            if (tensor_function(name)) {
                buf_puts(&b, "with a tensor first:\n");
                op_rows(name, TV_FUNCTION, &b);
            }
        } else if (v.tag == V_FUNC) {
            FuncObj *f = as_func(v);
            buf_printf(&b, "function %s\n", f->fn && f->fn->name ? f->fn->name : "?");
        } else if (v.tag == V_TENSOR) {
            buf_puts(&b, "Tensor; methods:");
            const char *last = "";
            for (int r = 0; r < tensor_nops; r++)
                if ((tensor_ops[r].variants & (TV_METHOD | TV_ATTR)) && strcmp(tensor_ops[r].name, last) != 0) {
                    last = tensor_ops[r].name;
                    buf_printf(&b, " %s", last);
                }
            buf_puts(&b, "\nhelp(\"name\") or help(t.name) shows one's signatures\n");
        } else if (name) {
            buf_printf(&b, "no builtin or tensor operator named '%s'\n", name);
        } else {
            buf_printf(&b, "a value of type %s\n", val_type_name(v));
        }
    }
    if (b.nomem) {
        buf_free(&b);
        return err_nomem(I);
    }
    interp_write(I, b.p, b.n);
    buf_free(&b);
    *out = v_none();
    return true;
}

/* ---- completion ---------------------------------------------------------------------------- */

static const char *const keywords[] = {
    "and", "as", "assert", "break", "class", "continue", "def", "del", "elif", "else", "except", "False",
    "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "None", "nonlocal", "not", "or",
    "pass", "raise", "return", "True", "try", "while", "with", "yield",
    NULL,
};

typedef struct Completer {
    const char *prefix;         /* of the last name */
    size_t plen;
    const char *head;           /* what comes before it ("x." or "") */
    size_t hlen;
    void (*emit)(void *ud, const char *candidate);
    void *ud;
    Buf b;
} Completer;

static void offer(Completer *c, const char *name)
{
    if (strncmp(name, c->prefix, c->plen) != 0 || name[0] == '\0') return;
    if (c->plen == 0 && name[0] == '_') return;     /* private names only when asked for */
    c->b.n = 0;
    buf_put(&c->b, c->head, c->hlen);
    buf_puts(&c->b, name);
    if (!c->b.nomem) c->emit(c->ud, c->b.p);
}

static void offer_module(Completer *c, const Module *m)
{
    for (size_t k = 0; k < m->nvals; k++)
        if (m->val_names[k] && m->vals[k].tag != V_UNDEF) offer(c, m->val_names[k]);
}

/* The value of a dotted name ("x", "vision.ops"): a global or builtin, then attributes. */
static bool resolve(Interp *I, const char *text, size_t len, Value *out)
{
    char name[128];
    size_t k = 0;
    while (k < len && text[k] != '.') k++;
    if (k == 0 || k >= sizeof name) return false;
    memcpy(name, text, k);
    name[k] = '\0';
    Value v = v_undef();
    int32_t s = namemap_get(&I->main->names, name);
    if (s >= 0 && I->main->vals[s].tag != V_UNDEF) v = I->main->vals[s];
    else if ((s = namemap_get(&I->builtins->names, name)) >= 0) v = I->builtins->vals[s];
    if (v.tag == V_UNDEF) return false;
    val_incref(v);
    while (k < len) {
        size_t st = ++k;
        while (k < len && text[k] != '.') k++;
        if (k == st || k - st >= sizeof name) break;
        memcpy(name, text + st, k - st);
        name[k - st] = '\0';
        Value a;
        bool ok = val_getattr(I, v, name, &a);
        val_decref(I, v);
        if (!ok) {
            err_clear(I);
            return false;
        }
        v = a;
    }
    *out = v;
    return true;
}

void help_complete(Interp *I, const char *text, void (*emit)(void *ud, const char *candidate), void *ud)
{
    const char *dot = strrchr(text, '.');
    Completer c = {.emit = emit, .ud = ud};
    c.prefix = dot ? dot + 1 : text;
    c.plen = strlen(c.prefix);
    c.head = text;
    c.hlen = (size_t)(c.prefix - text);
    if (!dot) {
        for (int k = 0; keywords[k]; k++) offer(&c, keywords[k]);
        offer_module(&c, I->main);
        offer_module(&c, I->builtins);
    } else {
        Value v;
        if (!resolve(I, text, (size_t)(dot - text), &v)) goto done;
        if (v.tag == V_MODULE) {
            offer_module(&c, (const Module *)v.o);
        } else if (v.tag == V_TENSOR) {
            const char *last = "";
            for (int r = 0; r < tensor_nops; r++)
                if ((tensor_ops[r].variants & (TV_METHOD | TV_ATTR)) && strcmp(tensor_ops[r].name, last) != 0)
                    offer(&c, last = tensor_ops[r].name);
            static const char *const dim_methods[] = {"order", "index", "dims", NULL};
            for (int k = 0; dim_methods[k]; k++) offer(&c, dim_methods[k]);
        } else if (v.tag == V_DIM) {
            offer(&c, "size");
            offer(&c, "is_bound");
        }
        val_decref(I, v);
    }
done:
    buf_free(&c.b);
}
