/* main.c — the `tdl` command: runs a script, a -c string or stdin, or starts the REPL.
 *
 * A client of the public API only (tdl.h), the way lua.c is a client of lua.h: everything it does
 * a host program could do too. Besides tdl.h it uses libc and libedit's readline-compatible API.
 * The REPL keeps no parsing knowledge of its own: it accumulates lines and asks the library, which
 * answers TDL_INCOMPLETE while a block or bracket is still open.
 */
#include "tdl.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

#define HISTORY_MAX 1000

static const char usage_text[] =
    "usage: tdl [options] [script.tdl | -c code | -] [args...]\n"
    "  script.tdl        run a file; args are in the program's argv\n"
    "  -c code           run code given as a string\n"
    "  -                 run the program read from standard input\n"
    "  (nothing)         start the REPL (or run stdin when it is not a terminal)\n"
    "options:\n"
    "  --dump-ir         print the IR of each materialised expression and its scheduled kernel\n"
    "                    (loops, the domain each value is computed over, hoisting, bounds)\n"
    "  --dump-kernels    print only the scheduled kernels\n"
    "  --dump-cuda       print each kernel as the CUDA C source the GPU backend compiles\n"
    "  --verbose         say which path runs library operations (cuDNN or generated kernels) and why\n"
    "  --no-opt=PASSES   turn scheduler passes off (fuse,hoist,bounds): same results, slower\n"
    "  --fused-sums      fuse float sums into their operand's kernel (faster; not PyTorch's last bits)\n"
    "  --device DEV      run tensor work on DEV: cpu or cuda (cuda:N)\n"
    "  --max-memory N    MemoryError past N bytes of host memory (suffix k, M or G: KiB, MiB, GiB)\n"
    "  -h, --help        print this help and exit\n"
    "  --version         print the version and exit\n"
    "  --                end of options\n"
    "environment:\n"
    "  TDL_PATH          extra module search path (':'-separated)\n"
    "  TDL_HISTORY       REPL history file (default ~/.tdl_history)\n";

static const char help_text[] =
    "tdl is a Python-shaped language for tensor programs with first-class dimensions.\n"
    "  x = arange(12).reshape(3, 4)        tensors with PyTorch's methods and printing\n"
    "  i, j = dims(2); x[i, j].sum(j)      first-class dims, as in functorch.dim\n"
    "  def f(a, b=1): ...                  def, lambda, closures, if/elif/else, for, while\n"
    "  import vision                       modules from the stdlib and $TDL_PATH\n"
    "Expression values are echoed. A block (def, if, ...) ends with a blank line.\n"
    "  :help     this help\n"
    "  :quit     leave (so does Ctrl-D); Ctrl-C discards the current input\n";

typedef enum mode { MODE_REPL, MODE_FILE, MODE_STRING, MODE_STDIN } mode;

/* What the command line asked for. */
typedef struct options {
    mode mode;
    const char *source;     /* MODE_FILE: the path; MODE_STRING: the code */
    const char *arg0;       /* argv[0] as the program sees it */
    int nargs;              /* the program's further arguments */
    char **args;
    bool dump_ir;           /* tdl_config.flags TDL_DUMP_IR / TDL_DUMP_KERNELS */
    bool dump_kernels;
    bool dump_cuda;         /* TDL_DUMP_CUDA */
    bool verbose;           /* TDL_VERBOSE */
    int no_opt;             /* TDL_NO_FUSE | TDL_NO_HOIST | TDL_NO_BOUNDS */
    bool fused_sums;        /* TDL_FUSED_SUMS */
    const char *device;     /* "cpu", "cuda", "cuda:N", or NULL for the default */
    size_t max_memory;      /* tdl_config.max_memory (0: none) */
} options;

/* "N", "Nk", "NM", "NG" (binary units) as bytes into *out; false for anything else or zero. */
static bool parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9') return false;
    unsigned long long n = strtoull(s, &end, 10);
    int shift = *end == 'k' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift) end++;
    if (errno || *end || n == 0 || n > (SIZE_MAX >> shift)) return false;
    *out = (size_t)n << shift;
    return true;
}

/* A growable byte buffer; always NUL-terminated once anything was appended. */
typedef struct buffer {
    char *p;
    size_t len, cap;
} buffer;

/* Appends n bytes of s. Returns false (buffer unchanged) when out of memory. */
static bool buf_append(buffer *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return false;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

/* Prints msg and arg, the usage line and a pointer to --help to stderr; returns the exit status
 * for usage errors. */
static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "tdl: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
    fprintf(stderr, "%.*s", (int)(strchr(usage_text, '\n') + 1 - usage_text), usage_text);
    fputs("Try 'tdl --help' for more information.\n", stderr);
    return 2;
}

/* True for the device names --device accepts: cpu, cuda, cuda:N. */
static bool valid_device(const char *s)
{
    if (strcmp(s, "cpu") == 0 || strcmp(s, "cuda") == 0)
        return true;
    if (strncmp(s, "cuda:", 5) != 0 || !s[5])
        return false;
    for (s += 5; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Fills *o from the command line. Returns -1 to go on, or the status to exit with at once
 * (after --help, --version, or a usage error). Options end at the first non-option argument,
 * at -c CODE, at `-` and after `--`; what follows belongs to the program. */
static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->mode = MODE_REPL;
    o->arg0 = "";
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (a[0] != '-' || strcmp(a, "-") == 0) {
            break;
        } else if (strcmp(a, "-c") == 0) {
            if (i + 1 >= argc)
                return usage_error("option -c needs an argument", NULL);
            o->mode = MODE_STRING;
            o->source = argv[i + 1];
            o->arg0 = "-c";
            o->nargs = argc - (i + 2);
            o->args = argv + i + 2;
            return -1;
        } else if (strcmp(a, "--dump-ir") == 0) {
            o->dump_ir = true;
        } else if (strcmp(a, "--dump-kernels") == 0) {
            o->dump_kernels = true;
        } else if (strcmp(a, "--dump-cuda") == 0) {
            o->dump_cuda = true;
        } else if (strcmp(a, "--verbose") == 0) {
            o->verbose = true;
        } else if (strcmp(a, "--fused-sums") == 0) {
            o->fused_sums = true;
        } else if (strncmp(a, "--no-opt=", 9) == 0) {
            for (const char *q = a + 9; *q;) {
                size_t len = strcspn(q, ",");
                if (len == 4 && strncmp(q, "fuse", 4) == 0)
                    o->no_opt |= TDL_NO_FUSE;
                else if (len == 5 && strncmp(q, "hoist", 5) == 0)
                    o->no_opt |= TDL_NO_HOIST;
                else if (len == 6 && strncmp(q, "bounds", 6) == 0)
                    o->no_opt |= TDL_NO_BOUNDS;
                else
                    return usage_error("unknown scheduler pass in --no-opt (use fuse, hoist, bounds):", a + 9);
                q += len + (q[len] == ',');
            }
        } else if (strcmp(a, "--device") == 0 || strncmp(a, "--device=", 9) == 0) {
            const char *dev = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!dev)
                return usage_error("option --device needs an argument", NULL);
            if (!valid_device(dev))
                return usage_error("unknown device (use cpu or cuda):", dev);
            o->device = dev;
        } else if (strcmp(a, "--max-memory") == 0 || strncmp(a, "--max-memory=", 13) == 0) {
            const char *n = a[12] == '=' ? a + 13 : (i + 1 < argc ? argv[++i] : NULL);
            if (!n)
                return usage_error("option --max-memory needs an argument", NULL);
            if (!parse_size(n, &o->max_memory))
                return usage_error("bad size for --max-memory (bytes, or with k, M or G):", n);
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("tdl %s\n", tdl_version());
            return 0;
        } else {
            return usage_error("unknown option", a);
        }
    }
    if (i < argc) {
        bool dash = strcmp(argv[i], "-") == 0;
        o->mode = dash ? MODE_STDIN : MODE_FILE;
        o->source = argv[i];
        o->arg0 = argv[i];
        i++;
    } else if (!isatty(STDIN_FILENO)) {
        o->mode = MODE_STDIN;       /* `tdl < prog.tdl`: argv[0] is "", as in Python */
    }
    o->nargs = argc - i;
    o->args = argv + i;
    return -1;
}

/* Prints the last error's report to stderr, ending with a newline. Flushes stdout first so that
 * the program's output and the error appear in order. */
static void print_error(const tdl_interp *T)
{
    fflush(stdout);
    const char *r = tdl_error_report(T);
    if (!r[0])
        r = tdl_error_message(T);
    if (!r[0])
        r = "error (no message)";
    size_t n = strlen(r);
    fputs(r, stderr);
    if (r[n - 1] != '\n')
        fputc('\n', stderr);
    fflush(stderr);
}

/* Reads all of f into a new NUL-terminated buffer (the caller frees it). NULL on a read error or
 * out of memory, with errno telling which. */
static char *read_all(FILE *f, size_t *len)
{
    buffer b = {0};
    char chunk[8192];
    size_t n;
    if (!buf_append(&b, "", 0))
        return NULL;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (!buf_append(&b, chunk, n)) {
            free(b.p);
            errno = ENOMEM;
            return NULL;
        }
    }
    if (ferror(f)) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

/* Sets the program's argv to [arg0, args...]. Returns the tdl status. */
static tdl_status set_argv(tdl_interp *T, const char *arg0, int nargs, char **args)
{
    const char **v = malloc((size_t)(nargs + 1) * sizeof *v);
    if (!v) {
        fputs("tdl: out of memory\n", stderr);
        return TDL_ERROR;
    }
    v[0] = arg0;
    for (int k = 0; k < nargs; k++)
        v[k + 1] = args[k];
    tdl_status st = tdl_set_argv(T, nargs + 1, v);
    free(v);
    if (st == TDL_ERROR)
        print_error(T);
    return st;
}

/* The interpreter that Ctrl-C interrupts while it runs code (signal handlers can only reach it
 * through a static). */
static tdl_interp *volatile running;

static void on_sigint_running(int sig)
{
    (void)sig;
    if (running)
        tdl_interrupt(running);
}

/* From here until stop_catching_sigint, Ctrl-C stops the code running in T with a
 * KeyboardInterrupt (traceback and all) instead of killing the process. A batch run leaves an
 * ignored SIGINT ignored (a background job of a shell script), as CPython does; the REPL always
 * catches it. *old is for stop_catching_sigint. */
static void catch_sigint(tdl_interp *T, bool unless_ignored, struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint_running;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, NULL, old);
    if (unless_ignored && old->sa_handler == SIG_IGN)
        return;
    running = T;
    sigaction(SIGINT, &sa, NULL);
}

static void stop_catching_sigint(const struct sigaction *old)
{
    sigaction(SIGINT, old, NULL);
    running = NULL;
}

/* Turns the status of a batch run into the process's exit status, reporting errors. */
static int batch_exit_status(tdl_interp *T, tdl_status st, const char *name)
{
    switch (st) {
    case TDL_OK:
        return 0;
    case TDL_EXIT:
        return tdl_exit_code(T);
    case TDL_INCOMPLETE:    /* not expected without TDL_RUN_INTERACTIVE, but be safe */
        if (!tdl_error_report(T)[0]) {
            fflush(stdout);
            fprintf(stderr, "%s: unexpected end of input\n", name);
            return 1;
        }
        /* fall through */
    case TDL_ERROR:
    default:
        print_error(T);
        /* 128 + SIGINT, what a shell reports for a program that Ctrl-C stopped (CPython too) */
        return tdl_error_kind_of(T) == TDL_ERR_INTERRUPT ? 130 : 1;
    }
}

/* Runs a script, a -c string or stdin. Returns the exit status. */
static int run_batch(tdl_interp *T, const options *o)
{
    if (set_argv(T, o->arg0, o->nargs, o->args) != TDL_OK)
        return 1;
    const char *name = o->mode == MODE_FILE ? o->source : o->mode == MODE_STRING ? "<string>" : "<stdin>";
    char *code = NULL;
    size_t len = 0;
    if (o->mode == MODE_STDIN && !(code = read_all(stdin, &len))) {
        fprintf(stderr, "tdl: cannot read standard input: %s\n", strerror(errno));
        return 1;
    }
    struct sigaction old;
    catch_sigint(T, true, &old);
    tdl_status st;
    if (o->mode == MODE_FILE)
        st = tdl_run_file(T, o->source);
    else if (o->mode == MODE_STRING)
        st = tdl_run_string_ex(T, o->source, strlen(o->source), name, 0);
    else
        st = tdl_run_string_ex(T, code, len, name, 0);
    stop_catching_sigint(&old);
    free(code);
    int status = batch_exit_status(T, st, name);
    fflush(stdout);
    return status;
}

/* ---- the REPL ------------------------------------------------------------------------------ */

/* Set by SIGINT while the REPL waits for a line. A signal handler can only talk to the program
 * through a static flag of this type; it is the one piece of global state here. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Runs one REPL entry; Ctrl-C meanwhile stops the code with a KeyboardInterrupt, not the REPL. */
static tdl_status run_interruptible(tdl_interp *T, const char *code, size_t len)
{
    struct sigaction old;
    catch_sigint(T, false, &old);
    tdl_status st = tdl_run_string_ex(T, code, len, "<stdin>", TDL_RUN_INTERACTIVE);
    stop_catching_sigint(&old);
    return st;
}

/* Reads one line with libedit. Returns a malloc'd line without its newline, or NULL at end of
 * input. Sets *intr (and returns NULL) when Ctrl-C was pressed: SIGINT is caught only while
 * reading, without SA_RESTART, so the blocked read fails and readline() returns. */
static char *read_line(const char *prompt, bool *intr)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    interrupted = 0;
    sigaction(SIGINT, &sa, &old);
    fflush(stdout);
    char *line = readline(prompt);
    sigaction(SIGINT, &old, NULL);
    *intr = interrupted != 0;
    if (*intr) {
        free(line);
        line = NULL;
    }
    return line;
}

/* ---- Tab completion (tdl_complete) ---- */

static tdl_interp *complete_interp;     /* the REPL's interpreter, for the generator below */

typedef struct candidates {
    char **p;
    size_t n, cap;
} candidates;

static void add_candidate(void *ud, const char *s)
{
    candidates *c = ud;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 32;
        char **p = realloc(c->p, cap * sizeof *p);
        if (!p)
            return;
        c->p = p;
        c->cap = cap;
    }
    char *d = strdup(s);
    if (d)
        c->p[c->n++] = d;
}

/* readline's generator: state 0 collects the candidates for text, each call hands one out (the
 * caller frees it). */
static char *complete_name(const char *text, int state)
{
    static candidates c;
    static size_t next;
    if (state == 0) {
        for (size_t k = next; k < c.n; k++)
            free(c.p[k]);
        c.n = 0;
        next = 0;
        if (complete_interp)
            tdl_complete(complete_interp, text, add_candidate, &c);
    }
    return next < c.n ? c.p[next++] : NULL;
}

/* The history file: $TDL_HISTORY, else ~/.tdl_history, written into buf (size n). Returns NULL
 * when there is none (no HOME, or the name does not fit). */
static const char *history_path(char *buf, size_t n)
{
    const char *env = getenv("TDL_HISTORY");
    if (env && env[0])
        return env;
    const char *home = getenv("HOME");
    if (!home || !home[0])
        return NULL;
    int k = snprintf(buf, n, "%s/.tdl_history", home);
    return k > 0 && (size_t)k < n ? buf : NULL;
}

/* Adds a complete entry (a command or a whole block) to the history and saves the history file
 * at once, so that nothing is lost when Ctrl-C ends a runaway program. Write failures (read-only
 * home, ...) are ignored. libedit's append_history() is not used: it duplicates entries. */
static void remember(const char *entry, const char *hist)
{
    add_history(entry);
    if (hist)
        write_history(hist);
}

/* True when s is empty or only blanks. */
static bool is_blank(const char *s)
{
    return s[strspn(s, " \t\r\f\v")] == '\0';
}

/* True when the line, without surrounding blanks, is the REPL command cmd (":quit", ...). */
static bool is_command(const char *line, const char *cmd)
{
    line += strspn(line, " \t");
    size_t n = strlen(cmd);
    return strncmp(line, cmd, n) == 0 && is_blank(line + n);
}

/* The read-eval-print loop on a terminal. Returns the exit status: 0 after :quit or Ctrl-D, the
 * program's code after exit(n). Errors are reported and never end the session. */
static int repl(tdl_interp *T)
{
    static const char *const argv0[] = {""};
    if (tdl_set_argv(T, 1, argv0) == TDL_ERROR)
        print_error(T);

    char pathbuf[4096];
    const char *hist = history_path(pathbuf, sizeof pathbuf);
    using_history();
    stifle_history(HISTORY_MAX);
    if (hist)
        read_history(hist);     /* a missing or unreadable file just means no history */

    complete_interp = T;
    rl_completion_entry_function = complete_name;
    /* a dotted name is one word to complete ("x.su" -> "x.sum") */
    rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{(,[+-*/%~^!:";
    printf("tdl %s — type :help for help, :quit or Ctrl-D to leave\n", tdl_version());

    buffer buf = {0};
    int status = 0;
    for (;;) {
        bool intr;
        char *line = read_line(buf.len ? "... " : ">>> ", &intr);
        if (intr) {                 /* Ctrl-C: drop what was typed so far */
            fputs("\n", stdout);
            buf.len = 0;
            continue;
        }
        if (!line) {                /* Ctrl-D */
            fputs("\n", stdout);
            break;
        }
        if (buf.len == 0 && is_blank(line)) {
            free(line);
            continue;
        }
        if (buf.len == 0 && (is_command(line, ":help") || is_command(line, ":quit"))) {
            bool quit = is_command(line, ":quit");
            remember(line, hist);
            free(line);
            if (quit)
                break;
            fputs(help_text, stdout);
            continue;
        }
        bool ok = buf_append(&buf, line, strlen(line)) && buf_append(&buf, "\n", 1);
        free(line);
        if (!ok) {
            fputs("tdl: out of memory; input discarded\n", stderr);
            buf.len = 0;
            continue;
        }
        tdl_status st = run_interruptible(T, buf.p, buf.len);
        if (st == TDL_INCOMPLETE)
            continue;
        while (buf.len > 0 && buf.p[buf.len - 1] == '\n')
            buf.p[--buf.len] = '\0';   /* the whole entry, without the newlines that end it */
        remember(buf.p, hist);
        buf.len = 0;
        if (st == TDL_ERROR) {
            print_error(T);
        } else if (st == TDL_EXIT) {
            status = tdl_exit_code(T);
            break;
        }
    }
    free(buf.p);
    fflush(stdout);
    return status;
}

/* tdl_config.open_error: why the interpreter could not be made. */
static void open_error(void *ud, const char *text, size_t len)
{
    fprintf(stderr, "tdl: %.*s\n", (int)len, text);
}

int main(int argc, char **argv)
{
    options o;
    int status = parse_args(argc, argv, &o);
    if (status >= 0)
        return status;
    tdl_config cfg = {.size = sizeof cfg};
    cfg.max_memory = o.max_memory;
    cfg.flags = (o.dump_ir ? TDL_DUMP_IR : 0) | (o.dump_kernels ? TDL_DUMP_KERNELS : 0) |
                (o.dump_cuda ? TDL_DUMP_CUDA : 0) | (o.verbose ? TDL_VERBOSE : 0) | o.no_opt |
                (o.fused_sums ? TDL_FUSED_SUMS : 0);
    cfg.open_error = open_error;
    tdl_interp *T = tdl_open(&cfg);
    if (!T)
        return 1;       /* open_error said why */
    if (o.device && tdl_set_device(T, o.device) != TDL_OK) {
        print_error(T);
        tdl_close(T);
        return 1;
    }
    status = o.mode == MODE_REPL ? repl(T) : run_batch(T, &o);
    tdl_close(T);
    return status;
}
