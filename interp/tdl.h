/* tdl.h — the public C API of tdl: a tensor language with first-class dimensions.
 *
 * Everything a host program (and tdl's own REPL) may use; docs/embedding.md is the guide. An
 * interpreter is an opaque tdl_interp; there is no global state, so two interpreters in one
 * process are independent, and two threads may each use their own interpreter at the same time
 * (one interpreter is used by one thread at a time). Nothing in the library exits, aborts or
 * prints on its own: output of the program's print() goes through the write callback of
 * tdl_config (stdout by default).
 *
 * Statuses. Every call that can fail returns a tdl_status and passes results through
 * out-parameters (set to NULL / 0 when the call fails). After TDL_ERROR the error can be read with
 * tdl_error_*(); it keeps until the next call that runs code (tdl_run_*, tdl_call*, tdl_import)
 * or the next failing call. TDL_MISUSE means the call could not even record an error: a NULL
 * interpreter, or one that was closed.
 *
 * Values. tdl values cross the boundary as tdl_value handles (after QuickJS's rule): a handle a
 * call gives you through an out-parameter is yours and you free it with tdl_value_free; handles
 * you pass in are borrowed (the callee takes its own reference when it keeps the value). A handle
 * belongs to the interpreter that made it. tdl_close drops the values of the handles still
 * alive, so buffers and callbacks they hold are released at close; the handles themselves stay
 * valid to free (every other call on them says TDL_MISUSE).
 *
 * Link with `pkg-config --cflags --libs tdl` (-ltdl; statically also -lz -lm -lpthread -ldl).
 */
#ifndef TDL_H
#define TDL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TDL_PRINTF(f, a) __attribute__((format(printf, f, a)))
/* The library is compiled with hidden visibility: what this header declares is all it exports. */
#pragma GCC visibility push(default)
#else
#define TDL_PRINTF(f, a)
#endif

typedef struct tdl_interp tdl_interp;
typedef struct tdl_value tdl_value;

/* DLPack's exchange structs (dlpack/dlpack.h); tdl.h does not need that header. */
struct DLManagedTensor;
struct DLManagedTensorVersioned;

typedef enum tdl_status {
    TDL_OK = 0,
    TDL_ERROR = 1,      /* an error was raised: see tdl_error_kind_of() and friends */
    TDL_INCOMPLETE = 2, /* the code ended early (open bracket, block without its body, ...):
                           a REPL reads another line and tries again */
    TDL_EXIT = 3,       /* the program called exit(n): see tdl_exit_code() */
    TDL_MISUSE = 4,     /* the interpreter is NULL or closed (or a handle's interpreter is
                           closed): nothing ran and no error was recorded */
} tdl_status;

/* Error kinds, named after Python's (and functorch.dim's) exceptions. */
typedef enum tdl_error_kind {
    TDL_ERR_NONE = 0,
    TDL_ERR_SYNTAX, TDL_ERR_INDENTATION, TDL_ERR_NAME, TDL_ERR_UNBOUND_LOCAL, TDL_ERR_TYPE,
    TDL_ERR_VALUE, TDL_ERR_INDEX, TDL_ERR_KEY, TDL_ERR_ATTRIBUTE, TDL_ERR_ZERO_DIVISION,
    TDL_ERR_OVERFLOW, TDL_ERR_ASSERTION, TDL_ERR_RECURSION, TDL_ERR_IMPORT, TDL_ERR_IO,
    TDL_ERR_RUNTIME, TDL_ERR_MEMORY, TDL_ERR_NOT_IMPLEMENTED, TDL_ERR_DIMENSION_BIND,
    TDL_ERR_SHAPE, TDL_ERR_DEVICE, TDL_ERR_INTERRUPT, TDL_ERR_STOP_ITERATION,
    /* the base classes of the kinds above, for a program's `raise Exception(...)` */
    TDL_ERR_EXCEPTION, TDL_ERR_BASE_EXCEPTION, TDL_ERR_ARITHMETIC, TDL_ERR_LOOKUP,
    TDL_ERR_TAB,        /* TabError: an IndentationError */
    TDL_ERR_GENERATOR_EXIT, /* GeneratorExit: a BaseException, raised at a closed generator's yield */
    /* the warning categories (warnings.warn; raised under the "error" filter) */
    TDL_ERR_WARNING, TDL_ERR_USER_WARNING, TDL_ERR_DEPRECATION_WARNING, TDL_ERR_FUTURE_WARNING,
    TDL_ERR_RUNTIME_WARNING,
    TDL_ERR__COUNT
} tdl_error_kind;

/* Host hooks, options and limits; any member may be 0/NULL (the default).
 *
 * ABI: members are only ever added at the end, and a host says how much of the struct it knows
 * by setting size to sizeof(tdl_config) as its header has it (`tdl_config cfg = {.size = sizeof cfg};`).
 * tdl_open reads the first size bytes and takes the default for every member past them, so a
 * host built against an older tdl.h keeps working with a newer library (and a newer host's
 * members an older library does not know are ignored). size 0 reads the members up to and
 * including device (those of tdl 0.1, before size and the limits): a host that leaves size 0
 * gets no max_memory. */
typedef struct tdl_config {
    size_t size;
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
     * the results are the same bits, only slower; for testing the passes. TDL_NO_FILES: programs
     * may not read or write files (load, save, loadz, savez, savez_compressed raise IOError);
     * TDL_NO_FILE_READ only not read them (load, loadz), TDL_NO_FILE_WRITE only not write them
     * (save, savez, savez_compressed). Imports and tdl_run_file, which the host controls, still
     * work. */
    int flags;
    /* Where that text goes. Default: stderr. */
    void (*dump)(void *ud, const char *text, size_t len);
    void *dump_ud;
    /* The device new tensors go to when a program names none ("cpu", "cuda", "cuda:N"; default
     * "cpu"). tdl_open fails (NULL) when it is not available: tdl_set_device says why. */
    const char *device;
    /* ---- since 0.2 ---- */
    /* Most bytes of host memory the interpreter may hold (its values, tensors' storage and the
     * compiled kernels, counted as the allocator's usable size of each block), 0: no limit. An
     * allocation past it raises MemoryError at the statement that made it (the memory of what
     * failed is freed and the interpreter stays usable). Memory the host gave (tdl_tensor_borrow,
     * DLPack imports) is not counted; device (CUDA) memory is not counted. */
    size_t max_memory;
    /* Why tdl_open failed, when it returns NULL: called once, before it returns, with one line
     * (NUL-terminated, len bytes): "MemoryError: out of memory", the DeviceError of an unavailable
     * device, or the RuntimeError of a library built with a malformed operator table (naming the
     * operator). Default: not told. */
    void (*open_error)(void *ud, const char *text, size_t len);
    void *open_error_ud;
} tdl_config;

/* The bytes of tdl_config that tdl 0.1 hosts (size 0) give. */
#define TDL_CONFIG_SIZE_0_1 (offsetof(tdl_config, device) + sizeof(const char *))

/* Flags of tdl_config.flags. */
enum {
    TDL_DUMP_IR = 1,
    TDL_DUMP_KERNELS = 2,
    TDL_NO_FUSE = 4,
    TDL_NO_HOIST = 8,
    TDL_NO_BOUNDS = 16,
    TDL_NO_FILES = 32,
    TDL_DUMP_CUDA = 64,     /* the CUDA C source of every kernel, whatever its device (--dump-cuda) */
    TDL_NO_FILE_READ = 128,
    TDL_NO_FILE_WRITE = 256,
    TDL_VERBOSE = 512,      /* one line on dump for each choice of a library path (cuDNN), and why (--verbose) */
    /* A float tensor's sum fuses into its operand's kernel and accumulates as the backend's kernels
     * do (in double on the CPU: correctly rounded nearly always), instead of being computed apart,
     * its operand stored first, with PyTorch's bits (--fused-sums) */
    TDL_FUSED_SUMS = 1024,
};

/* ==== interpreters and running code ==== */

/* Opens an interpreter. cfg may be NULL; it is copied (strings too). Returns NULL only when out
 * of memory, when cfg->device is not available, or when the library's operator table is malformed
 * (a build error); cfg->open_error says which. */
tdl_interp *tdl_open(const tdl_config *cfg);
/* Closes it: frees everything it holds, drops the values of live handles (which runs the release
 * callbacks of borrowed buffers and DLPack deleters no longer referenced), and makes every later
 * call on T or its handles TDL_MISUSE while handles or exported DLPack tensors remain; T itself
 * is freed with the last of them. NULL is allowed; a second close, or a close from inside a C
 * builtin or callback of T, does nothing. */
void tdl_close(tdl_interp *T);

/* Flags for tdl_run_string_ex. */
enum {
    TDL_RUN_INTERACTIVE = 1,  /* REPL mode: echo the value of expression statements, and report
                                 an open block without a following blank line as TDL_INCOMPLETE */
};

/* What Tab completes in a REPL: text is a name prefix ("pri") or a dotted name and an attribute
 * prefix ("x.su"); emit gets each whole candidate ("print", "x.sum"): keywords, globals and
 * builtins, or a module's names, a tensor's methods and attributes. Runs no code but attribute
 * reads of the dotted name. */
tdl_status tdl_complete(tdl_interp *T, const char *text, void (*emit)(void *ud, const char *candidate), void *ud);

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

/* ==== errors ==== */

/* The last error: its kind, "ZeroDivisionError"-style name, message, and the whole report
 * (traceback, file:line:col, source line with a caret) as the batch driver prints it. The strings
 * stay valid until the error is replaced or cleared. With no error (or a NULL/closed T):
 * TDL_ERR_NONE and "". */
tdl_error_kind tdl_error_kind_of(const tdl_interp *T);
const char *tdl_error_kind_name(tdl_error_kind kind);
const char *tdl_error_message(const tdl_interp *T);
const char *tdl_error_report(const tdl_interp *T);
/* The status passed to exit(n) after TDL_EXIT. */
int tdl_exit_code(const tdl_interp *T);
/* Records an error of that kind with a printf-style message and returns TDL_ERROR, so that a C
 * builtin can `return tdl_raise(T, TDL_ERR_VALUE, "k must be positive, got %d", k);`; the script
 * then sees it as an error raised at the call, with the traceback. An invalid kind becomes
 * TDL_ERR_RUNTIME. TDL_MISUSE for a NULL or closed T. */
tdl_status tdl_raise(tdl_interp *T, tdl_error_kind kind, const char *fmt, ...) TDL_PRINTF(3, 4);

/* Version string, e.g. "0.1.0". */
const char *tdl_version(void);

/* ==== values ==== */

/* What a value is. TDL_TCALLABLE: a tdl function, a builtin (C builtins too) or a type;
 * TDL_TOTHER: anything else a program can hold (module, range, dtype, dim, ...), which the host
 * can pass around, call methods of (tdl_get_attr) and print (tdl_repr) but not read directly. */
typedef enum tdl_type {
    TDL_TINVALID = -1,  /* a NULL or freed handle, or one of a closed interpreter */
    TDL_TNONE = 0, TDL_TBOOL, TDL_TINT, TDL_TFLOAT, TDL_TSTR, TDL_TTUPLE, TDL_TLIST, TDL_TTENSOR,
    TDL_TCALLABLE, TDL_TOTHER,
} tdl_type;

/* Frees a handle (its value lives on where tdl still references it). NULL is allowed; so is a
 * handle of a closed interpreter (that is how its memory goes). The argument handles of a C
 * builtin belong to the call: freeing one does nothing. */
void tdl_value_free(tdl_value *v);
/* A second handle to the same value (tensors and lists are shared, not copied). */
tdl_status tdl_dup(tdl_interp *T, tdl_value *v, tdl_value **out);
/* The kind of value v holds; TDL_TINVALID for a NULL/freed handle or one of another or a closed
 * interpreter. */
tdl_type tdl_typeof(tdl_interp *T, const tdl_value *v);
/* tdl's name of v's type, as type(v) prints it: "int", "Tensor", "function", ... ("" if invalid). */
const char *tdl_type_name(tdl_interp *T, const tdl_value *v);

/* Making values; each gives a new handle in *out. tdl_str copies NUL-terminated UTF-8 (a
 * ValueError when it is not UTF-8); tdl_str_len copies len bytes. tdl_tuple and tdl_list take n
 * items (borrowed; items may be NULL when n is 0). */
tdl_status tdl_none(tdl_interp *T, tdl_value **out);
tdl_status tdl_bool(tdl_interp *T, bool b, tdl_value **out);
tdl_status tdl_int(tdl_interp *T, int64_t i, tdl_value **out);
tdl_status tdl_float(tdl_interp *T, double d, tdl_value **out);
tdl_status tdl_str(tdl_interp *T, const char *s, tdl_value **out);
tdl_status tdl_str_len(tdl_interp *T, const char *s, size_t len, tdl_value **out);
tdl_status tdl_tuple(tdl_interp *T, size_t n, tdl_value *const *items, tdl_value **out);
tdl_status tdl_list(tdl_interp *T, size_t n, tdl_value *const *items, tdl_value **out);
/* Appends item to the list v. */
tdl_status tdl_list_append(tdl_interp *T, tdl_value *list, tdl_value *item);

/* Reading values. Each is a TypeError naming what it got when v is not of that type:
 * tdl_to_bool takes a bool; tdl_to_int an int or bool; tdl_to_float a float, int or bool;
 * tdl_to_str a str (*s is NUL-terminated UTF-8 valid while v lives; len may be NULL). */
tdl_status tdl_to_bool(tdl_interp *T, const tdl_value *v, bool *out);
tdl_status tdl_to_int(tdl_interp *T, const tdl_value *v, int64_t *out);
tdl_status tdl_to_float(tdl_interp *T, const tdl_value *v, double *out);
tdl_status tdl_to_str(tdl_interp *T, const tdl_value *v, const char **s, size_t *len);
/* Tuples and lists: the number of items, and item i (0-based; an IndexError when out of range). */
tdl_status tdl_seq_len(tdl_interp *T, const tdl_value *v, size_t *out);
tdl_status tdl_seq_get(tdl_interp *T, const tdl_value *v, size_t i, tdl_value **out);
/* repr(v) as a str value (read it with tdl_to_str). */
tdl_status tdl_repr(tdl_interp *T, tdl_value *v, tdl_value **out);
/* v.name: a module's global, a tensor's attribute or method (t.shape, t.sum), ... */
tdl_status tdl_get_attr(tdl_interp *T, tdl_value *v, const char *name, tdl_value **out);

/* ==== globals, functions, C builtins ==== */

/* A global of the main module (falling back to the builtins, so "len" works too); a NameError
 * when there is none. */
tdl_status tdl_get_global(tdl_interp *T, const char *name, tdl_value **out);
/* Binds a global of the main module (the interpreter takes its own reference). */
tdl_status tdl_set_global(tdl_interp *T, const char *name, tdl_value *v);
/* `import name`: the module (loaded on first use, searched as tdl_config.path says). */
tdl_status tdl_import(tdl_interp *T, const char *name, tdl_value **out);

/* Calls f(args[0], ..., args[nargs-1], kwnames[0]=kwargs[0], ...). Arguments are borrowed;
 * *out gets the result (out may be NULL to drop it). Errors come back with the traceback through
 * tdl code; TDL_EXIT when the code called exit(). */
tdl_status tdl_call(tdl_interp *T, tdl_value *f, int nargs, tdl_value *const *args, int nkw,
                    const char *const *kwnames, tdl_value *const *kwargs, tdl_value **out);
/* The same for a function named by a global ("f"), a builtin ("len"), or a dotted path through
 * modules and attributes ("vision.roi_align": a name that is not a global is imported). */
tdl_status tdl_call_name(tdl_interp *T, const char *name, int nargs, tdl_value *const *args, int nkw,
                         const char *const *kwnames, tdl_value *const *kwargs, tdl_value **out);

/* A C function callable from tdl. args holds one handle per parameter of the signature it was
 * registered with, in order, defaults filled in (so nargs is always the parameter count); they
 * are borrowed for the call (tdl_dup one to keep it). Return TDL_OK, with *result a new handle
 * (tdl takes it over; leave it NULL for None; returning one of args is fine), or
 * tdl_raise(...)'s TDL_ERROR. An error of a call into tdl made here can be returned as it is. */
typedef tdl_status (*tdl_cfunction)(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result,
                                    void *ud);

/* Registers fn as builtin `name`, visible to every module (and replacing a builtin of that name)
 * in code parsed after this call. signature lists the parameters, checked on every call with
 * Python's rules and a TypeError naming the parameter:
 *
 *     "x: tensor, k: int = 3, *, scale: float = 1.0, out: tensor? = None"
 *
 * param := name [":" type] ["=" default] | "*" (the parameters after it are keyword-only)
 * type  := any | none | bool | int | float | str | tuple | list | tensor | callable, with "?" to
 *          also accept None (no type: any). int accepts bool; float accepts int and bool (the
 *          handle still holds what was passed: read it with tdl_to_float).
 * default := None | True | False | an int | a float | a '...' or "..." string (no escapes)
 * At most 32 parameters. A malformed signature is a ValueError saying where. */
tdl_status tdl_register(tdl_interp *T, const char *name, const char *signature, tdl_cfunction fn, void *ud);

/* ==== tensors ==== */

/* Element types. 0 is never a dtype (a zeroed struct is caught); TDL_DTYPE_ANY is what
 * tdl_tensor_read takes to accept any dtype. TDL_DTYPE_BOOL is one byte per element, 0 or 1. */
typedef enum tdl_dtype {
    TDL_DTYPE_ANY = 0,
    TDL_DTYPE_BOOL = 1, TDL_DTYPE_INT32, TDL_DTYPE_INT64, TDL_DTYPE_FLOAT32, TDL_DTYPE_FLOAT64,
    TDL_DTYPE_UINT8, TDL_DTYPE_INT8, TDL_DTYPE_INT16,
    TDL_DTYPE_FLOAT16,      /* IEEE binary16, its 16 bits */
    TDL_DTYPE_BFLOAT16,     /* the upper 16 bits of a float32 */
} tdl_dtype;

/* "float32", ...; NULL for what is not a dtype. */
const char *tdl_dtype_name(tdl_dtype dt);
/* Bytes per element; 0 for what is not a dtype. */
size_t tdl_dtype_size(tdl_dtype dt);

/* A tensor copied from host memory: ndim dims of sizes shape[k] (ndim 0: one element; at most
 * 64), element (i0, i1, ...) at data + (sum i_k * strides[k]) * element size. strides are in
 * elements and may be zero or negative (data points at element (0, ..., 0)); NULL means
 * C-contiguous. data may be NULL only when there are no elements. */
tdl_status tdl_tensor_from_host(tdl_interp *T, tdl_dtype dt, int ndim, const int64_t *shape,
                                const int64_t *strides, const void *data, tdl_value **out);

/* Called exactly once when tdl no longer references a borrowed buffer. */
typedef void (*tdl_release_fn)(void *ud, void *data);

/* A tensor viewing host memory without a copy (same geometry rules as tdl_tensor_from_host;
 * data must be aligned to the element size). tdl may read it whenever a result that depends on
 * it is computed (tensors are lazy: possibly after the call that used it returned) and programs
 * may write into it (t[0] = 1, add_): keep it valid, and change it only while no result depends
 * on it. release(ud, data) is called exactly once with the data pointer given here, on the
 * thread that drops the last reference, when no tensor of the interpreter (nor a DLPack export
 * of one) views the buffer any more, at the latest in tdl_close, and also when this call fails
 * (then before it returns). release may be NULL. It must not call into tdl. */
tdl_status tdl_tensor_borrow(tdl_interp *T, tdl_dtype dt, int ndim, const int64_t *shape, const int64_t *strides,
                             void *data, tdl_release_fn release, void *ud, tdl_value **out);

/* A tensor's geometry and memory, after computing it if it is still lazy. */
typedef struct tdl_tensor_info {
    tdl_dtype dtype;
    int ndim;
    const int64_t *shape;       /* [ndim] */
    const int64_t *strides;     /* [ndim], in elements */
    void *data;                 /* element (0, ..., 0) (any address when numel is 0) */
    int64_t numel;
    size_t itemsize;            /* bytes per element */
} tdl_tensor_info;

/* Computes v if needed and describes it; the pointers stay valid while v lives (the memory is the
 * tensor's: writing into it changes the tensor). want: the dtype the host expects (a TypeError
 * when v has another) or TDL_DTYPE_ANY. A TypeError when v is not a tensor, a ValueError when it
 * has first-class dims (order() them first), a DeviceError when it is not in host memory. */
tdl_status tdl_tensor_read(tdl_interp *T, tdl_value *v, tdl_dtype want, tdl_tensor_info *info);
/* v itself (a new handle) when it is C-contiguous, else a C-contiguous copy. */
tdl_status tdl_tensor_contiguous(tdl_interp *T, tdl_value *v, tdl_value **out);

/* DLPack import: a tensor viewing mt's memory without a copy. tdl takes over mt: its deleter is
 * called exactly once when tdl no longer needs the memory (at the latest in tdl_close), and also
 * when this call fails, except when mt is already imported into T (a ValueError: the first import
 * owns it). Host memory (kDLCPU, kDLCUDAHost, kDLCUDAManaged) of bool, uint8, int8, int16,
 * int32, int64, float16, bfloat16 (kDLBfloat), float32 or float64 (one lane) is accepted; a tensor in CUDA device memory is a DeviceError for now. A
 * versioned tensor flagged read-only is copied (tdl tensors are writable); one of another major
 * version is refused. */
tdl_status tdl_tensor_from_dlpack(tdl_interp *T, struct DLManagedTensor *mt, tdl_value **out);
tdl_status tdl_tensor_from_dlpack_versioned(tdl_interp *T, struct DLManagedTensorVersioned *mt, tdl_value **out);
/* DLPack export: the tensor v (computed first if lazy) as a new DLManagedTensor sharing its
 * memory (no copy). The consumer calls its deleter exactly once, from any thread, also after
 * tdl_close. A ValueError for a tensor with first-class dims; a DeviceError, for now, for one in
 * device memory (copy it with .cpu() first). */
tdl_status tdl_tensor_to_dlpack(tdl_interp *T, tdl_value *v, struct DLManagedTensor **out);
tdl_status tdl_tensor_to_dlpack_versioned(tdl_interp *T, tdl_value *v, struct DLManagedTensorVersioned **out);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif
