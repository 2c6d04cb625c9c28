/* fuzz_interp.c — libFuzzer harness: the input is a tdl program, run by tdl_run_string_ex on a
 * fresh interpreter (files off, output dropped), then run again on the same interpreter in REPL
 * mode, which echoes expression values and meets the first run's globals.
 *
 * An optional first line "#!FLAGS" turns on interpreter flags, one letter each: d (dump the IR),
 * k (dump kernels), c (dump CUDA C), f/h/b (scheduler passes off: fuse, hoist, bounds). Inputs
 * over FUZZ_MAX_LEN bytes are skipped: they only slow the search. Runs are bounded by the watchdog
 * of fuzz_common.h. Seeds: the .tdl files of tests/scripts, examples and stdlib; dictionary: tdl.dict. */
#include "fuzz_common.h"

#define FUZZ_MAX_LEN 4096

static int pragma_flags(const uint8_t *data, size_t size)
{
    if (size < 2 || data[0] != '#' || data[1] != '!')
        return 0;
    int flags = 0;
    for (size_t i = 2; i < size && data[i] != '\n'; i++) {
        switch (data[i]) {
        case 'd': flags |= TDL_DUMP_IR; break;
        case 'k': flags |= TDL_DUMP_KERNELS; break;
        case 'c': flags |= TDL_DUMP_CUDA; break;
        case 'f': flags |= TDL_NO_FUSE; break;
        case 'h': flags |= TDL_NO_HOIST; break;
        case 'b': flags |= TDL_NO_BOUNDS; break;
        default: break;
        }
    }
    return flags;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_env();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_LEN)
        return -1;      /* not added to the corpus */
    tdl_interp *T = fuzz_open(pragma_flags(data, size));
    if (!T)
        abort();
    static const char *const argv[] = {"fuzz.tdl", "a"};
    tdl_set_argv(T, 2, argv);
    for (int pass = 0; pass < 2; pass++) {
        fuzz_arm(T);
        tdl_status st = tdl_run_string_ex(T, (const char *)data, size, "<fuzz>", pass ? TDL_RUN_INTERACTIVE : 0);
        fuzz_disarm();
        fuzz_check_status(T, st);
        if (st == TDL_EXIT)
            break;
    }
    tdl_close(T);
    return 0;
}
