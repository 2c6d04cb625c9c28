/* golden_cases.h — the case files of the conformance suites written by tests/golden/gen_*.py
 * (indexing/cases.txt, dims/cases.txt): one case per line, "name<TAB>program<TAB>expected",
 * expected "OK output" or "ERR Kind text", with \\ \t \n escaped; lines starting with # are
 * comments. And running one program in a fresh interpreter, as each case does. */
#ifndef TDL_GOLDEN_CASES_H
#define TDL_GOLDEN_CASES_H

#include "tdl.h"

#include <stdbool.h>
#include <stddef.h>

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

#endif
