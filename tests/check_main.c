/* check_main.c — runs every Check suite; exits non-zero if any test fails. */
#include "tests.h"

#include <stdlib.h>

int main(void)
{
    SRunner *sr = srunner_create(lexer_suite());
    srunner_add_suite(sr, parser_suite());
    srunner_add_suite(sr, eval_suite());
    srunner_add_suite(sr, fcdim_io_suite());
    srunner_add_suite(sr, fcdim_print_suite());
    srunner_add_suite(sr, fcdim_ops_suite());
    srunner_add_suite(sr, cpu_backend_suite());
    srunner_add_suite(sr, fcdim_core_suite());
    srunner_add_suite(sr, promotion_suite());
    srunner_add_suite(sr, tensor_suite());
    srunner_add_suite(sr, indexing_suite());
    srunner_add_suite(sr, dims_suite());
    srunner_add_suite(sr, fcdim_dims_suite());
    srunner_add_suite(sr, schedule_suite());
    srunner_add_suite(sr, kplan_suite());
    srunner_add_suite(sr, cuda_suite());
    srunner_add_suite(sr, embed_suite());
    srunner_add_suite(sr, cpu_math_suite());
    srunner_add_suite(sr, vision_suite());
    srunner_add_suite(sr, oom_suite());
    srunner_add_suite(sr, limits_suite());
    srunner_add_suite(sr, nn_suite());
    srunner_add_suite(sr, nn_cudnn_suite());
    srunner_add_suite(sr, cudnn_suite());
    srunner_add_suite(sr, grad_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
