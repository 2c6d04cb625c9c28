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

#endif
