/* golden_cases.h — the case files of the conformance suites written by tests/golden/gen_*.py
 * (indexing/cases.txt, dims/cases.txt): one case per line, "name<TAB>program<TAB>expected",
 * expected "OK output" or "ERR Kind text", with \\ \t \n escaped; lines starting with # are
 * comments. And running one program in a fresh interpreter, as each case does. */
#ifndef TDL_GOLDEN_CASES_H
#define TDL_GOLDEN_CASES_H

#include "tdl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct GoldenCase {
    char *name, *program;
    bool ok;                    /* OK: the program runs and prints `text` */
    char *kind, *text;          /* ERR: it raises `kind`; text is the rest of the line (the suite says
                                   what it means: the message, or words it must contain) */
} GoldenCase;

/* The cases of `file` (relative to the repository root). On failure *err says why (a missing
 * file, "file:line: malformed case") and the cases read so far are kept. */
int golden_cases_load(const char *file, GoldenCase **cases, char *err, size_t errcap);
void golden_cases_free(GoldenCase *cases, int n);

/* What a program did in a fresh interpreter. */
typedef struct GoldenRun {
    tdl_status status;
    char *printed;              /* everything it printed ("" when nothing) */
    char *kind, *msg;           /* the error's kind name and message ("" when none) */
} GoldenRun;

void golden_run(const char *program, const char *name, GoldenRun *r);
void golden_run_free(GoldenRun *r);

/* The device the golden suites run on: $TDL_TEST_DEVICE ("cuda", "cuda:1"; with TDL_FAKE_CUDA=1
 * host memory standing in for it), or NULL for the CPU. golden_run opens its interpreters with it
 * as the default device (make check-device, make check-gpu). */
const char *golden_device(void);
/* Whether printed output got is want: the same text, or on another device the same after the
 * device suffix PyTorch prints (", device='cuda:0'") is taken out and whitespace runs, line
 * breaks included, count as one space (the suffix moves the line wrapping). */
bool golden_same_output(const char *got, const char *want);

/* The value of environment variable name, kept for env_restore (NULL: unset). */
char *env_save(const char *name);
/* Sets name back to what env_save kept (unset when NULL) and frees it. */
void env_restore(const char *name, char *saved);

/* ---- the suites that compare a tdl global with PyTorch's .npy (nn, vision, grad) ---- */

/* A fresh interpreter that finds the repository's stdlib/ (import nn, vision), prints nowhere,
 * flags as tdl_config.flags, on golden_device(). */
tdl_interp *golden_open(int flags);
/* Appends printf-style text to the NUL-terminated buffer b of capacity cap (truncating). */
void golden_put(char *b, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The program of a case into prog (capacity cap): `import module`, then program; on
 * golden_device() (make check-device, check-gpu) every .npy it loads is moved there, and each global
 * named in results ("name=spec name=spec ...", or NULL) must have been computed there (or be None)
 * and comes back to the CPU, where it is compared. */
void golden_case_program(const char *module, const char *program, const char *results, char *prog, size_t cap);
/* Element i of a buffer of dtype dt as a double (exact for these suites' integers). */
double golden_value_at(const void *data, tdl_dtype dt, int64_t i);
/* Compares global var of T with PyTorch's result in the .npy file path: the same dtype and shape,
 * and |tdl - torch| <= tol x (|torch| + mag) at every element (tol 1e-5 for float32, 1e-12 for
 * float64, 0 otherwise; mag < 0: the largest |torch|); and, unless strides is "-", the strides
 * "s0,s1,..." on the dims of size > 1. Appends what differs to why. */
void golden_compare_npy(tdl_interp *T, const char *var, const char *path, double mag, const char *strides, char *why,
                        size_t cap);

/* Text an interpreter writes (a tdl_config's dump or write callback), appended while it fits. */
typedef struct Lines {
    char text[16384];
} Lines;
void lines_collect(void *ud, const char *text, size_t len);

#endif
