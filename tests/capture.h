/* capture.h — what an interpreter prints, collected for the suites that compare it: pass capture
 * as a tdl_config write (or dump) callback with an Out as its user data. Output past the buffer
 * is dropped; buf always holds a string. */
#ifndef TDL_TESTS_CAPTURE_H
#define TDL_TESTS_CAPTURE_H

#include <stddef.h>

typedef struct Out { char buf[65536]; size_t n; } Out;

void capture(void *ud, const char *s, size_t len);

#endif
