/* tdl.h — the public C API of tdl: a tensor language with first-class dimensions.
 *
 * Everything a host program (and tdl's own REPL) may use. An interpreter is an opaque tdl_interp;
 * there is no global state, so two interpreters in one process are independent. Every call that
 * can fail returns a tdl_status; after TDL_ERROR the error can be read with tdl_error_*() until the
 * next call that runs code. Nothing in the library exits, aborts or prints on its own: output of
 * the program's print() goes through the write callback of tdl_config (stdout by default).
 *
 * Link with -ltdl (or `pkg-config --cflags --libs tdl`).
 */
#ifndef TDL_H
#define TDL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tdl_interp tdl_interp;

typedef enum tdl_status {
    TDL_OK = 0,
    TDL_ERROR = 1,      /* an error was raised: see tdl_error_kind() and friends */
    TDL_INCOMPLETE = 2, /* the code ended early (open bracket, block without its body, ...):
                           a REPL reads another line and tries again */
    TDL_EXIT = 3,       /* the program called exit(n): see tdl_exit_code() */
} tdl_status;

/* Error kinds, named after Python's (and functorch.dim's) exceptions. */
typedef enum tdl_error_kind {
    TDL_ERR_NONE = 0,
    TDL_ERR_SYNTAX, TDL_ERR_INDENTATION, TDL_ERR_NAME, TDL_ERR_UNBOUND_LOCAL, TDL_ERR_TYPE,
    TDL_ERR_VALUE, TDL_ERR_INDEX, TDL_ERR_KEY, TDL_ERR_ATTRIBUTE, TDL_ERR_ZERO_DIVISION,
    TDL_ERR_OVERFLOW, TDL_ERR_ASSERTION, TDL_ERR_RECURSION, TDL_ERR_IMPORT, TDL_ERR_IO,
    TDL_ERR_RUNTIME, TDL_ERR_MEMORY, TDL_ERR_NOT_IMPLEMENTED, TDL_ERR_DIMENSION_BIND,
    TDL_ERR_SHAPE, TDL_ERR_DEVICE, TDL_ERR_INTERRUPT,
    TDL_ERR__COUNT
} tdl_error_kind;

/* Host hooks; any member may be NULL (the default). */
typedef struct tdl_config {
    /* Program output (print, REPL echo). Default: fwrite to stdout. */
    void (*write)(void *ud, const char *text, size_t len);
    void *write_ud;
    /* Extra module search path (':'-separated), searched after the importing script's folder and
     * before $TDL_PATH and the installed stdlib. */
    const char *path;
    /* Maximum depth of tdl calls before a RecursionError (default 1000). */
    int recursion_limit;
    /* TDL_DUMP_IR / TDL_DUMP_KERNELS: show the IR DAG and the scheduled kernel / the scheduled
     * kernel of every tensor materialisation (the --dump-ir / --dump-kernels flags of the tdl
     * command). TDL_NO_FUSE / TDL_NO_HOIST / TDL_NO_BOUNDS turn a scheduler pass off (--no-opt=):
     * the results are the same bits, only slower; for testing the passes. */
    int flags;
    /* Where that text goes. Default: stderr. */
    void (*dump)(void *ud, const char *text, size_t len);
    void *dump_ud;
} tdl_config;

/* Flags of tdl_config.flags. */
enum {
    TDL_DUMP_IR = 1,
    TDL_DUMP_KERNELS = 2,
    TDL_NO_FUSE = 4,
    TDL_NO_HOIST = 8,
    TDL_NO_BOUNDS = 16,
};

/* Opens an interpreter. cfg may be NULL. Returns NULL only when out of memory. */
tdl_interp *tdl_open(const tdl_config *cfg);
/* Closes it and frees everything it holds. NULL is allowed. */
void tdl_close(tdl_interp *T);

/* Flags for tdl_run_string_ex. */
enum {
    TDL_RUN_INTERACTIVE = 1,  /* REPL mode: echo the value of expression statements, and report
                                 an open block without a following blank line as TDL_INCOMPLETE */
};

/* Runs code as the main module; name is used in messages ("<string>" when NULL). */
tdl_status tdl_run_string(tdl_interp *T, const char *code, const char *name);
tdl_status tdl_run_string_ex(tdl_interp *T, const char *code, size_t len, const char *name, int flags);
/* Reads and runs a file as the main module. An unreadable file is a TDL_ERR_IO error. */
tdl_status tdl_run_file(tdl_interp *T, const char *path);
/* Asks running code to stop: the next loop iteration or call raises KeyboardInterrupt
 * (TDL_ERR_INTERRUPT). Safe to call from a signal handler or another thread. */
void tdl_interrupt(tdl_interp *T);
/* Sets the device new tensors go to when a program names none: "cpu" (the default), "cuda",
 * "cuda:N". TDL_ERROR with a DeviceError when there is no such device here. */
tdl_status tdl_set_device(tdl_interp *T, const char *device);
/* Sets `argv` (a list of str) in the main module. */
tdl_status tdl_set_argv(tdl_interp *T, int argc, const char *const *argv);

/* The last error: its kind, "ZeroDivisionError"-style name, message, and the whole report
 * (traceback, file:line:col, source line with a caret) as the batch driver prints it. The strings
 * stay valid until the next call that runs code. With no error: TDL_ERR_NONE and "". */
tdl_error_kind tdl_error_kind_of(const tdl_interp *T);
const char *tdl_error_kind_name(tdl_error_kind kind);
const char *tdl_error_message(const tdl_interp *T);
const char *tdl_error_report(const tdl_interp *T);
/* The status passed to exit(n) after TDL_EXIT. */
int tdl_exit_code(const tdl_interp *T);

/* Version string, e.g. "0.1.0". */
const char *tdl_version(void);

#ifdef __cplusplus
}
#endif
#endif
