/* watch.h — an interpreter for the suites that look at the kernels a program schedules: its output
 * dropped, FcCtx.on_kernel set to on_kernel with ud. The caller runs code in it and closes it. */
#ifndef TDL_TESTS_WATCH_H
#define TDL_TESTS_WATCH_H

#include "fcdim.h"
#include "tdl.h"

tdl_interp *open_watching(void (*on_kernel)(void *ud, const FcKernel *k, FcDevice dev), void *ud);

#endif
