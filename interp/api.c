/* api.c — the public API of tdl.h for interpreters: opening and closing them, running code,
 * reading and raising errors; also module import (search path, cache, cycles) and program output.
 * Values, C builtins and tensors across the boundary are in embed.c. */
#include "interp.h"
#include "mem.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TDL_STDLIB_DIR
#define TDL_STDLIB_DIR "/usr/local/share/tdl/stdlib"
#endif

const char *tdl_version(void) { return "0.1.0"; }

void interp_write(Interp *I, const char *s, size_t len)
{
    if (I->cfg.write) I->cfg.write(I->cfg.write_ud, s, len);
    else fwrite(s, 1, len, stdout);
}

bool interp_files_allowed(Interp *I, const char *fn, bool write)
{
    int flags = I->cfg.flags;
    if (flags & TDL_NO_FILES)
        return err_raise(I, TDL_ERR_IO, "%s(): programs may not access files in this interpreter (TDL_NO_FILES)", fn);
    if (!write && (flags & TDL_NO_FILE_READ))
        return err_raise(I, TDL_ERR_IO, "%s(): programs may not read files in this interpreter (TDL_NO_FILE_READ)",
                         fn);
    if (write && (flags & TDL_NO_FILE_WRITE))
        return err_raise(I, TDL_ERR_IO, "%s(): programs may not write files in this interpreter (TDL_NO_FILE_WRITE)",
                         fn);
    return true;
}

static bool set_global(Interp *I, Module *m, const char *name, Value v)
{
    int32_t k = module_slot(m, name);
    if (k < 0) return err_nomem(I);
    Value old = m->vals[k];
    val_incref(v);
    m->vals[k] = v;
    val_decref(I, old);
    return true;
}

static bool set_global_str(Interp *I, Module *m, const char *name, const char *s)
{
    Value v;
    if (!str_from_cstr(I, s, &v)) return false;
    bool ok = set_global(I, m, name, v);
    val_decref(I, v);
    return ok;
}

static bool init_builtins(Interp *I)
{
    for (const BuiltinDef *d = builtin_functions; d->name; d++) {
        Value v;
        if (!builtin_bind(I, d, v_undef(), &v)) return false;
        bool ok = set_global(I, I->builtins, d->name, v);
        val_decref(I, v);
        if (!ok) return false;
    }
    Value h;
    if (!builtin_bind(I, &help_builtin, v_undef(), &h)) return false;
    bool bound = set_global(I, I->builtins, help_builtin.name, h);
    val_decref(I, h);
    if (!bound) return false;
    static const struct { const char *name; TypeId t; } types[] = {
        {"int", T_INT}, {"float", T_FLOAT}, {"str", T_STR}, {"bool", T_BOOL}, {"list", T_LIST},
        {"tuple", T_TUPLE}, {"range", T_RANGE}, {"type", T_TYPE}, {"dict", T_DICT}, {"set", T_SET},
        {"frozenset", T_FROZENSET}, {"slice", T_SLICE},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        Value v = {.tag = V_TYPE, .i = types[i].t};
        if (!set_global(I, I->builtins, types[i].name, v)) return false;
    }
    /* the exception classes, by their kinds' names; OSError is IOError, as in Python 3 */
    for (int k = TDL_ERR_NONE + 1; k < TDL_ERR__COUNT; k++)
        if (!set_global(I, I->builtins, tdl_error_kind_name((tdl_error_kind)k), v_exctype((tdl_error_kind)k))) return false;
    if (!set_global(I, I->builtins, "OSError", v_exctype(TDL_ERR_IO))) return false;
    return class_init(I, I->builtins) && tensor_init(I, I->builtins);
}

/* The lock of every interpreter's DLPack bookkeeping (tdl_interp in interp.h): one for the
 * process, not one per interpreter, because a storage released under it can hold an import of
 * another interpreter's export, whose deleter takes the lock too: with a lock per interpreter, two
 * threads doing that across two interpreters in opposite directions waited on each other for
 * ever. Recursive: the release can run one of the same interpreter's deleters on this thread. */
static pthread_once_t exports_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t exports_mutex;
static bool exports_ok;

static void exports_init(void)
{
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) != 0) return;
    exports_ok = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE) == 0 &&
                 pthread_mutex_init(&exports_mutex, &attr) == 0;
    pthread_mutexattr_destroy(&attr);
}

bool exports_lock_ready(void)
{
    pthread_once(&exports_once, exports_init);
    return exports_ok;
}

void exports_lock(void) { pthread_mutex_lock(&exports_mutex); }
void exports_unlock(void) { pthread_mutex_unlock(&exports_mutex); }

/* Tells the host of cfg (when its struct has open_error) why tdl_open fails: "Kind: message". */
static void open_failed(const tdl_config *cfg, tdl_error_kind kind, const char *msg)
{
    if (!cfg || cfg->size < offsetof(tdl_config, open_error_ud) + sizeof cfg->open_error_ud || !cfg->open_error)
        return;
    char text[512];
    int n = snprintf(text, sizeof text, "%s: %s", tdl_error_kind_name(kind), msg);
    cfg->open_error(cfg->open_error_ud, text, n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
}

tdl_interp *tdl_open(const tdl_config *cfg)
{
    tdl_interp *T = mem_calloc(1, sizeof *T);
    if (!T) {
        open_failed(cfg, TDL_ERR_MEMORY, "out of memory");
        return NULL;
    }
    if (!exports_lock_ready()) {
        mem_free(T);
        open_failed(cfg, TDL_ERR_RUNTIME, "the lock of DLPack exports could not be made");
        return NULL;
    }
    T->owner = pthread_self();
    Interp *I = &T->I;
    if (cfg) {
        /* tdl.h's ABI rule: the host's struct is cfg->size bytes long (0: tdl 0.1's members). */
        size_t n = cfg->size ? cfg->size : TDL_CONFIG_SIZE_0_1;
        memcpy(&I->cfg, cfg, n < sizeof I->cfg ? n : sizeof I->cfg);
    }
    I->cfg.size = sizeof I->cfg;
    T->mem.limit = I->cfg.max_memory > INT64_MAX ? INT64_MAX : (int64_t)I->cfg.max_memory;
    API_MEM_SCOPE(T);
    const char *device = I->cfg.device;
    I->cfg.device = NULL;       /* used here only: the host's string need not outlive this call */
    if (I->cfg.path) I->cfg.path = mem_strdup(I->cfg.path);
    I->objects.next = I->objects.prev = &I->objects;
    /* room for a traceback's first entries before any error: see err_clear */
    I->err.trace = mem_malloc(8 * sizeof *I->err.trace);
    I->err.cap = I->err.trace ? 8 : 0;
    I->builtins = module_new(I, "builtins", NULL);
    I->main = module_new(I, "__main__", NULL);
    if (!I->builtins || !I->main || !init_builtins(I) || !set_global_str(I, I->main, "__name__", "__main__")
        || (device && !tensor_set_device(I, device))) {
        bool raised = I->err.kind != TDL_ERR_NONE;
        open_failed(cfg, raised ? I->err.kind : TDL_ERR_MEMORY, raised ? err_message(I) : "out of memory");
        tdl_close(T);
        return NULL;
    }
    return T;
}

void tdl_close(tdl_interp *T)
{
    if (!T || T->closed || T->nest > 0) return;
    API_MEM_SCOPE(T);
    api_enter(T);
    Interp *I = &T->I;
    embed_drop_handles(T);
    gen_close_all(I);       /* while the modules their unwinding may use are still there */
    err_clear(I);
    mem_free(I->err.trace);
    I->err.trace = NULL;
    I->err.cap = 0;
    val_decref(I, I->ret);
    I->ret = v_undef();
    for (size_t i = 0; i < I->nmods; i++)
        if (I->mods[i]) val_decref(I, v_obj(V_MODULE, &I->mods[i]->h));
    mem_free(I->mods);
    I->mods = NULL;
    I->nmods = 0;
    namemap_free(&I->modmap);
    warnings_free(I);
    if (I->main) val_decref(I, v_obj(V_MODULE, &I->main->h));
    if (I->builtins) val_decref(I, v_obj(V_MODULE, &I->builtins->h));
    I->main = I->builtins = NULL;
    objects_free_all(I);
    embed_free_host(T);
    mem_free((char *)I->cfg.path);
    mem_free(I->script_dir);
    I->cfg.path = I->script_dir = NULL;
    /* From here on a deleter on another thread may release storages itself: under the lock. */
    exports_lock();
    T->closed = true;
    for (size_t k = 0; k < T->npending; k++) fc_storage_release(T->pending[k]);
    T->nexports -= T->npending;
    T->npending = 0;
    if (T->nexports > 0) {
        T->kept_fc = I->fc;     /* exported storages are freed by its backend */
        I->fc = NULL;
    }
    tensor_fini(I);             /* after every tensor value is gone */
    bool last = T->nhandles == 0 && T->nexports == 0;
    exports_unlock();
    if (last) embed_free_shell(T);
}

void embed_free_shell(tdl_interp *T)
{
    mem_free(T->pending);
    mem_free(T);
}

bool api_enter(tdl_interp *T)
{
    if (!T || T->closed) return false;
    exports_lock();
    T->owner = pthread_self();
    for (size_t k = 0; k < T->npending; k++) fc_storage_release(T->pending[k]);
    T->nexports -= T->npending;
    T->npending = 0;
    exports_unlock();
    return true;
}

/* Records where the C stack is, so deep recursion becomes a RecursionError, not a crash. */
static void stack_guard(Interp *I, char *here)
{
    I->stack_base = here;
    I->stack_budget = 0;
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            size_t used_below = (size_t)(here - (char *)addr);
            size_t margin = 256 * 1024;
            I->stack_budget = used_below > 2 * margin ? used_below - margin : used_below / 2;
        }
        pthread_attr_destroy(&attr);
    }
    if (!I->stack_budget) I->stack_base = NULL;
}

void api_run_begin(tdl_interp *T, ApiRun *r, char *here)
{
    Interp *I = &T->I;
    r->stmt_src = I->stmt_src;
    r->stmt_pos = I->stmt_pos;
    err_clear(I);
    I->exiting = false;
    if (T->nest++ == 0) {
        I->interrupt = 0;
        stack_guard(I, here);
    }
}

void api_run_end(tdl_interp *T, const ApiRun *r)
{
    T->nest--;
    T->I.stmt_src = r->stmt_src;
    T->I.stmt_pos = r->stmt_pos;
}

static tdl_status run(tdl_interp *T, const char *code, size_t len, const char *name, bool interactive)
{
    char here;
    Interp *I = &T->I;
    ApiRun r;
    api_run_begin(T, &r, &here);
    LangSource *src = lang_source_new(name ? name : "<string>", code, len);
    tdl_status st = TDL_ERROR;
    if (!src) err_nomem(I);
    else st = interp_run_source(I, I->main, src, interactive);
    lang_source_release(src);
    api_run_end(T, &r);
    return st;
}

tdl_status tdl_complete(tdl_interp *T, const char *text, void (*emit)(void *ud, const char *candidate), void *ud)
{
    API_MEM_SCOPE(T);
    if (!api_enter(T)) return TDL_MISUSE;
    if (!text || !emit) return err_raise(&T->I, TDL_ERR_VALUE, "tdl_complete: text or emit is NULL"), TDL_ERROR;
    help_complete(&T->I, text, emit, ud);
    return TDL_OK;
}

tdl_status tdl_run_string(tdl_interp *T, const char *code, const char *name)
{
    API_MEM_SCOPE(T);
    if (!api_enter(T)) return TDL_MISUSE;
    if (!code) return err_raise(&T->I, TDL_ERR_VALUE, "tdl_run_string: code is NULL"), TDL_ERROR;
    return run(T, code, strlen(code), name, false);
}

tdl_status tdl_run_string_ex(tdl_interp *T, const char *code, size_t len, const char *name, int flags)
{
    API_MEM_SCOPE(T);
    if (!api_enter(T)) return TDL_MISUSE;
    if (!code) return err_raise(&T->I, TDL_ERR_VALUE, "tdl_run_string_ex: code is NULL"), TDL_ERROR;
    return run(T, code, len, name, (flags & TDL_RUN_INTERACTIVE) != 0);
}

/* Reads a whole file; NULL with errno set on failure. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = mem_malloc(cap);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        char *nb = mem_realloc(buf, cap * 2);
        if (!nb) { mem_free(buf); buf = NULL; errno = ENOMEM; break; }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { mem_free(buf); errno = EIO; return NULL; }
    *len = n;
    return buf;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return mem_strdup(".");
    if (slash == path) return mem_strdup("/");
    return mem_strndup(path, (size_t)(slash - path));
}

tdl_status tdl_run_file(tdl_interp *T, const char *path)
{
    API_MEM_SCOPE(T);
    if (!api_enter(T)) return TDL_MISUSE;
    Interp *I = &T->I;
    err_clear(I);
    if (!path) return err_raise(I, TDL_ERR_VALUE, "tdl_run_file: path is NULL"), TDL_ERROR;
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        int e = errno;
        if (e == ENOMEM) return err_nomem(I), TDL_ERROR;
        err_raise(I, TDL_ERR_IO, "can't open file '%s': [Errno %d] %s", path, e, strerror(e));
        return TDL_ERROR;
    }
    if (!I->script_dir && !(I->script_dir = dir_of(path))) {
        mem_free(text);
        return err_nomem(I), TDL_ERROR;
    }
    tdl_status st = run(T, text, len, path, false);
    mem_free(text);
    return st;
}

tdl_status tdl_set_argv(tdl_interp *T, int argc, const char *const *argv)
{
    API_MEM_SCOPE(T);
    if (!api_enter(T)) return TDL_MISUSE;
    Interp *I = &T->I;
    err_clear(I);
    if (argc < 0 || (argc > 0 && !argv))
        return err_raise(I, TDL_ERR_VALUE, "tdl_set_argv: argc is %d and argv is %s", argc, argv ? "set" : "NULL"),
               TDL_ERROR;
    ListObj *l = list_alloc(I, 0);
    if (!l) return TDL_ERROR;
    Value lv = v_obj(V_LIST, &l->h);
    for (int i = 0; i < argc; i++) {
        Value s;
        if (!str_from_cstr(I, argv[i] ? argv[i] : "", &s)) {
            val_decref(I, lv);
            return TDL_ERROR;
        }
        bool ok = list_append(I, l, s);
        val_decref(I, s);
        if (!ok) {
            val_decref(I, lv);
            return TDL_ERROR;
        }
    }
    /* a builtin, so that imported modules see it too (as Python's sys.argv) */
    bool ok = set_global(I, I->builtins, "argv", lv);
    val_decref(I, lv);
    return ok ? TDL_OK : TDL_ERROR;
}

tdl_status tdl_set_device(tdl_interp *T, const char *device)
{
    API_MEM_SCOPE(T);
    if (!api_enter(T)) return TDL_MISUSE;
    err_clear(&T->I);
    if (!device) return err_raise(&T->I, TDL_ERR_VALUE, "tdl_set_device: device is NULL"), TDL_ERROR;
    return tensor_set_device(&T->I, device) ? TDL_OK : TDL_ERROR;
}

static bool usable(const tdl_interp *T) { return T && !T->closed; }

tdl_error_kind tdl_error_kind_of(const tdl_interp *T) { return usable(T) ? T->I.err.kind : TDL_ERR_NONE; }

const char *tdl_error_message(const tdl_interp *T)
{
    if (!usable(T) || T->I.err.kind == TDL_ERR_NONE) return "";
    return err_message(&T->I);
}

const char *tdl_error_report(const tdl_interp *T)
{
    if (!usable(T)) return "";
    API_MEM_SCOPE(T);
    return err_report((Interp *)&T->I);
}

tdl_status tdl_raise(tdl_interp *T, tdl_error_kind kind, const char *fmt, ...)
{
    if (!usable(T)) return TDL_MISUSE;
    API_MEM_SCOPE(T);
    Interp *I = &T->I;
    if (kind <= TDL_ERR_NONE || kind >= TDL_ERR__COUNT) kind = TDL_ERR_RUNTIME;
    if (kind == TDL_ERR_MEMORY && !fmt) return err_nomem(I), TDL_ERROR;
    char *msg = NULL;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        if (mem_vasprintf(&msg, fmt, ap) < 0) msg = NULL;
        va_end(ap);
        if (!msg) return err_nomem(I), TDL_ERROR;
    }
    err_raise(I, kind, "%s", msg ? msg : "");
    mem_free(msg);
    return TDL_ERROR;
}

void tdl_interrupt(tdl_interp *T)
{
    if (T) T->I.interrupt = 1;
}

int tdl_exit_code(const tdl_interp *T) { return usable(T) ? T->I.exit_code : 0; }

/* ---- imports ---- */

/* Tries dir/name.tdl; on success *text, *len and *path are set (caller frees). Out of memory
 * (reading it or making its name) sets *nomem and is false: the search stops there. */
static bool try_dir(const char *dir, size_t dlen, const char *name, char **text, size_t *len, char **path,
                    bool *nomem)
{
    if (dlen == 0 || *nomem) return false;
    char *p = NULL;
    int r = dlen == 1 && dir[0] == '.' ? mem_asprintf(&p, "%s.tdl", name)     /* "x.tdl", not "./x.tdl" */
                                       : mem_asprintf(&p, "%.*s/%s.tdl", (int)dlen, dir, name);
    if (r < 0) return *nomem = true, false;
    *text = read_file(p, len);
    if (!*text) {
        if (errno == ENOMEM) *nomem = true;
        mem_free(p);
        return false;
    }
    *path = p;
    return true;
}

static bool try_path_list(const char *list, const char *name, char **text, size_t *len, char **path, bool *nomem)
{
    if (!list) return false;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ":");
        if (try_dir(p, n, name, text, len, path, nomem)) return true;
        p += n;
        if (*p == ':') p++;
    }
    return false;
}

/* Tries rel under the folder holding file (a path of a program or library), e.g.
 * "/opt/tdl/lib/libtdl.so" + "../share/tdl/stdlib". */
static bool try_beside(const char *file, const char *rel, const char *name, char **text, size_t *len, char **path,
                       bool *nomem)
{
    const char *slash = file ? strrchr(file, '/') : NULL;
    if (!slash) return false;
    char dir[PATH_MAX + 32];
    int n = snprintf(dir, sizeof dir, "%.*s/%s", (int)(slash - file), file, rel);
    return n > 0 && (size_t)n < sizeof dir && try_dir(dir, (size_t)n, name, text, len, path, nomem);
}

/* The search path: the main script's folder, the host's path, $TDL_PATH, the stdlib of this
 * installed copy (share/tdl/stdlib beside the lib/ or bin/ folder of the library or program
 * holding this code: right for a copy installed with DESTDIR or moved, and not another copy's),
 * the stdlib where `make install` put it, and the stdlib beside the running binary (a build tree:
 * build/tdl -> stdlib/). Out of memory on the way stops the search with *nomem set. */
static bool find_module(Interp *I, const char *name, char **text, size_t *len, char **path, bool *nomem)
{
    const char *sd = I->script_dir ? I->script_dir : ".";
    if (try_dir(sd, strlen(sd), name, text, len, path, nomem)) return true;
    if (try_path_list(I->cfg.path, name, text, len, path, nomem)) return true;
    if (try_path_list(getenv("TDL_PATH"), name, text, len, path, nomem)) return true;
    Dl_info info;
    if (dladdr((void *)find_module, &info)
        && try_beside(info.dli_fname, "../share/tdl/stdlib", name, text, len, path, nomem))
        return true;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = '\0';
    if (n > 0 && try_beside(exe, "../share/tdl/stdlib", name, text, len, path, nomem)) return true;
    if (try_dir(TDL_STDLIB_DIR, strlen(TDL_STDLIB_DIR), name, text, len, path, nomem)) return true;
    return n > 0 && try_beside(exe, "../stdlib", name, text, len, path, nomem);
}

bool import_module(Interp *I, const char *name, Value *out)
{
    int32_t k = namemap_get(&I->modmap, name);
    if (k >= 0 && I->mods[k]) {
        Module *m = I->mods[k];
        if (m->state == MOD_LOADING)
            return err_raise(I, TDL_ERR_IMPORT, "circular import: module '%s' is still being loaded", name);
        m->h.refcnt++;
        *out = v_obj(V_MODULE, &m->h);
        return true;
    }
    char *text = NULL, *path = NULL;
    size_t len = 0;
    bool nomem = false;
    bool native = false;
    if (!find_module(I, name, &text, &len, &path, &nomem)) {
        if (nomem || strcmp(name, "warnings") != 0)
            return nomem ? err_nomem(I) : err_raise(I, TDL_ERR_IMPORT, "No module named '%s'", name);
        native = true;      /* a module of C functions, unless the path has a warnings.tdl */
    }
    Module *m = native ? warnings_module_new(I) : module_new(I, name, path);
    if (native && !m) return false;
    LangSource *src = m && !native ? lang_source_new(path, text, len) : NULL;
    mem_free(text);
    mem_free(path);
    if (!m || (!src && !native)) {
        if (m) val_decref(I, v_obj(V_MODULE, &m->h));
        return m ? err_nomem(I) : false;
    }
    if (I->nmods == I->capmods) {
        size_t cap = I->capmods ? I->capmods * 2 : 8;
        Module **mods = mem_realloc(I->mods, cap * sizeof *mods);
        if (!mods) {
            lang_source_release(src);
            val_decref(I, v_obj(V_MODULE, &m->h));
            return err_nomem(I);
        }
        I->mods = mods;
        I->capmods = cap;
    }
    k = (int32_t)I->nmods;
    if (!namemap_put(&I->modmap, name, k)) {
        lang_source_release(src);
        val_decref(I, v_obj(V_MODULE, &m->h));
        return err_nomem(I);
    }
    I->mods[I->nmods++] = m;        /* the table's reference */
    if (native) {
        m->state = MOD_LOADED;
        m->h.refcnt++;
        *out = v_obj(V_MODULE, &m->h);
        return true;
    }
    m->state = MOD_LOADING;
    tdl_status st = set_global_str(I, m, "__name__", name) ? interp_run_source(I, m, src, false) : TDL_ERROR;
    lang_source_release(src);
    if (st != TDL_OK) {
        /* A module that failed to load is forgotten, as Python forgets it. */
        I->mods[k] = NULL;
        val_decref(I, v_obj(V_MODULE, &m->h));
        if (!I->err.syntax) I->err.need_loc = true;    /* the import statement adds its line */
        return false;
    }
    m->state = MOD_LOADED;
    m->h.refcnt++;
    *out = v_obj(V_MODULE, &m->h);
    return true;
}
