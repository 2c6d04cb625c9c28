/* check_main.c — runs every Check suite; exits non-zero if any test fails. TDL_CHECK_SKIP (names,
 * comma-separated) leaves suites out, so that tests/run_check.sh can run the slowest beside the
 * others (CK_RUN_SUITE runs one alone). */
#include "tests.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;           /* suite_create's */
    Suite *(*make)(void);
} suites[] = {
    {"lexer", lexer_suite},       {"parser", parser_suite},       {"eval", eval_suite},
    {"fcdim_io", fcdim_io_suite}, {"fcdim_print", fcdim_print_suite}, {"fcdim_ops", fcdim_ops_suite},
    {"cpu_backend", cpu_backend_suite}, {"fcdim_core", fcdim_core_suite}, {"promotion", promotion_suite},
    {"tensor", tensor_suite},     {"indexing", indexing_suite},   {"dims", dims_suite},
    {"fcdim_dims", fcdim_dims_suite}, {"schedule", schedule_suite}, {"kplan", kplan_suite},
    {"cuda", cuda_suite},         {"embed", embed_suite},         {"cpu_math", cpu_math_suite},
    {"vision", vision_suite},     {"oom", oom_suite},             {"limits", limits_suite},
    {"nn", nn_suite},             {"nn_cudnn", nn_cudnn_suite},   {"cudnn", cudnn_suite},
    {"grad", grad_suite},
};

/* Whether name is one of the comma-separated names in list. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

int main(void)
{
    const char *skip = getenv("TDL_CHECK_SKIP");
    SRunner *sr = NULL;
    for (size_t i = 0; i < sizeof suites / sizeof *suites; i++) {
        if (skip && listed(skip, suites[i].name))
            continue;
        Suite *s = suites[i].make();
        if (!sr)
            sr = srunner_create(s);
        else
            srunner_add_suite(sr, s);
    }
    if (!sr)
        return EXIT_SUCCESS;
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
