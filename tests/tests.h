/* tests.h — the Check suites of tdl's one test runner (tests/check_main.c). One file per area. */
#ifndef TDL_TESTS_H
#define TDL_TESTS_H
#include <check.h>

Suite *lexer_suite(void);
Suite *parser_suite(void);
Suite *eval_suite(void);
Suite *fcdim_io_suite(void);
Suite *fcdim_print_suite(void);
Suite *fcdim_ops_suite(void);
Suite *cpu_backend_suite(void);
Suite *fcdim_core_suite(void);
Suite *promotion_suite(void);
Suite *indexing_suite(void);
Suite *dims_suite(void);
Suite *fcdim_dims_suite(void);
Suite *schedule_suite(void);
Suite *kplan_suite(void);
Suite *cuda_suite(void);
Suite *embed_suite(void);
Suite *cpu_math_suite(void);
Suite *vision_suite(void);
Suite *oom_suite(void);
Suite *limits_suite(void);
Suite *nn_suite(void);
Suite *nn_cudnn_suite(void);
Suite *cudnn_suite(void);
/* cudnn_header_check.c: the folder of the cudnn_graph.h it was compiled against, or NULL. */
const char *cudnn_header_checked(void);
Suite *grad_suite(void);

Suite *tensor_suite(void);
#endif
