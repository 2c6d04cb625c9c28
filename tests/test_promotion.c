/* test_promotion.c — fcdim's type promotion (fc_result_type, fc_div_result_type) against PyTorch.
 *
 * tests/golden/promotion.txt, written by torch through tests/golden/gen_promotion.py, holds for
 * every ordered pair of the 13 operand kinds (1-D and 0-dim tensors of the five dtypes, Python
 * bool/int/float) torch.result_type and the dtypes of a + b, a / b and a < b; the dtype of
 * torch.where(cond, a, b) for every pair; and the dtype of torch.clamp(a, b, c) for the triples
 * clamp takes. Each test reads the whole file and reports every disagreeing line at once, so one
 * run tells the complete story. Where torch has no division to ask (two Python scalars, three
 * operands) fc_div_result_type is held to the rule the generator checked on every other pair:
 * the result type made floating. A short table of named cases (one operand, triples that mix
 * Python scalars with tensors) states the rules readably. The file is found relative to the
 * repository root, where the runner is started. Torch is not needed to run this. */
#include "tests.h"

#include "fcdim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROMOTION_PATH "tests/golden/promotion.txt"
#define MAX_WORDS 12

/* Collected mismatches: the file's lines, each with what fcdim gave. */
typedef struct Report {
    char text[8192];
    size_t len;
    int n;
} Report;

static void report(Report *r, int lineno, const char *line, const char *what, FcDType got)
{
    r->n++;
    if (r->len < sizeof r->text - 1) {
        int k = snprintf(r->text + r->len, sizeof r->text - r->len, "  promotion.txt:%d: %s -> %s gives %s\n",
                         lineno, line, what, fc_dtype_name(got));
        if (k > 0)
            r->len += (size_t)k < sizeof r->text - r->len ? (size_t)k : sizeof r->text - r->len - 1;
    }
}

static bool parse_operand(const char *kind, const char *dt, FcOperand *op)
{
    if (strcmp(kind, "tensor") == 0)
        op->kind = FC_OPERAND_TENSOR;
    else if (strcmp(kind, "zero_dim") == 0)
        op->kind = FC_OPERAND_ZERO_DIM;
    else if (strcmp(kind, "scalar") == 0)
        op->kind = FC_OPERAND_SCALAR;
    else
        return false;
    return fc_dtype_from_name(dt, &op->dtype);
}

/* One record of the file: its tag, operands and the dtype words after them ("-" kept as is). */
typedef struct Record {
    int lineno;
    char line[256];             /* without the newline, for messages */
    char tag[16];
    int nops;
    FcOperand ops[3];
    int nres;
    char res[4][16];
} Record;

/* Reads every record tagged `tag`; returns how many, *out malloc'd (the caller frees). */
static int read_records(const char *tag, Record **out)
{
    FILE *f = fopen(PROMOTION_PATH, "r");
    ck_assert_msg(f != NULL, "cannot open %s (run the tests from the repository root)", PROMOTION_PATH);
    int n = 0, cap = 256, lineno = 0;
    Record *recs = malloc(cap * sizeof *recs);
    ck_assert_ptr_nonnull(recs);
    char buf[256];
    while (fgets(buf, sizeof buf, f)) {
        lineno++;
        buf[strcspn(buf, "\n")] = 0;
        if (buf[0] == '#' || buf[0] == 0)
            continue;
        char w[MAX_WORDS][16];
        int nw = sscanf(buf, "%7s %15s %15s %15s %15s %15s %15s %15s %15s %15s %15s", w[0], w[1], w[2], w[3],
                        w[4], w[5], w[6], w[7], w[8], w[9], w[10]);
        if (strcmp(w[0], tag) != 0)
            continue;
        int nops = strcmp(tag, "clamp") == 0 ? 3 : 2;
        int nres = strcmp(tag, "pair") == 0 ? 4 : 1;
        ck_assert_msg(nw == 1 + 2 * nops + nres, "promotion.txt:%d: bad line: %s", lineno, buf);
        if (n == cap) {
            cap *= 2;
            recs = realloc(recs, cap * sizeof *recs);
            ck_assert_ptr_nonnull(recs);
        }
        Record *r = &recs[n++];
        r->lineno = lineno;
        snprintf(r->line, sizeof r->line, "%s", buf);
        snprintf(r->tag, sizeof r->tag, "%s", w[0]);
        r->nops = nops;
        for (int i = 0; i < nops; i++)
            ck_assert_msg(parse_operand(w[1 + 2 * i], w[2 + 2 * i], &r->ops[i]), "promotion.txt:%d: bad operand: %s",
                          lineno, buf);
        r->nres = nres;
        for (int i = 0; i < nres; i++)
            snprintf(r->res[i], sizeof r->res[i], "%s", w[1 + 2 * nops + i]);
    }
    fclose(f);
    *out = recs;
    return n;
}

static FcDType want_dtype(const Record *r, int i)
{
    FcDType d;
    ck_assert_msg(fc_dtype_from_name(r->res[i], &d), "promotion.txt:%d: bad dtype %s", r->lineno, r->res[i]);
    return d;
}

/* True division's dtype: the result type, with bool and integers going to the default float.
 * gen_promotion.py checks this against torch's a / b for every pair that is a tensor question. */
static FcDType made_floating(FcDType t)
{
    return fc_dtype_is_float(t) ? t : FC_FLOAT32;
}

/* pair KA DA KB DB RESULT_TYPE ADD DIV LT */
START_TEST(pairs_match_torch)
{
    Record *recs;
    int n = read_records("pair", &recs);
    ck_assert_int_eq(n, 13 * 13);
    Report rep = {.len = 0, .n = 0};
    int tensor_ops = 0;
    for (int i = 0; i < n; i++) {
        const Record *r = &recs[i];
        FcDType rt = fc_result_type(r->ops, 2);
        FcDType div = fc_div_result_type(r->ops, 2);
        if (rt != want_dtype(r, 0))
            report(&rep, r->lineno, r->line, "result_type", rt);
        if (strcmp(r->res[1], "-") == 0) {
            /* two Python scalars: only result_type is a tensor question; division follows it */
            ck_assert(r->ops[0].kind == FC_OPERAND_SCALAR && r->ops[1].kind == FC_OPERAND_SCALAR);
            if (div != made_floating(want_dtype(r, 0)))
                report(&rep, r->lineno, r->line, "a / b (result type made floating)", div);
            continue;
        }
        tensor_ops++;
        if (rt != want_dtype(r, 1))
            report(&rep, r->lineno, r->line, "a + b", rt);
        if (div != want_dtype(r, 2))
            report(&rep, r->lineno, r->line, "a / b", div);
        /* A comparison's result is bool by definition; what promotion decides is the common
         * dtype the operands are compared in, which the generator checked to be torch's
         * result_type (fc_binary compares in fc_result_type). */
        ck_assert_str_eq(r->res[3], "bool");
        if (rt != want_dtype(r, 0))
            report(&rep, r->lineno, r->line, "a < b compared in", rt);
    }
    free(recs);
    ck_assert_int_eq(tensor_ops, 13 * 13 - 9);
    ck_assert_msg(rep.n == 0, "%d disagreements with torch:\n%s", rep.n, rep.text);
}
END_TEST

/* where KA DA KB DB DTYPE: the two value operands promote; the condition takes no part. */
START_TEST(where_matches_torch)
{
    Record *recs;
    int n = read_records("where", &recs);
    ck_assert_int_eq(n, 13 * 13);
    Report rep = {.len = 0, .n = 0};
    for (int i = 0; i < n; i++) {
        FcDType got = fc_result_type(recs[i].ops, 2);
        if (got != want_dtype(&recs[i], 0))
            report(&rep, recs[i].lineno, recs[i].line, "where", got);
    }
    free(recs);
    ck_assert_msg(rep.n == 0, "%d disagreements with torch:\n%s", rep.n, rep.text);
}
END_TEST

/* clamp KA DA KB DB KC DC DTYPE: three operands in one promotion; true division of the same
 * three would take the result type made floating. */
START_TEST(clamp_triples_match_torch)
{
    Record *recs;
    int n = read_records("clamp", &recs);
    ck_assert_int_gt(n, 1000);
    Report rep = {.len = 0, .n = 0};
    for (int i = 0; i < n; i++) {
        FcDType want = want_dtype(&recs[i], 0);
        FcDType got = fc_result_type(recs[i].ops, 3);
        if (got != want)
            report(&rep, recs[i].lineno, recs[i].line, "clamp", got);
        FcDType div = fc_div_result_type(recs[i].ops, 3);
        if (div != made_floating(want))
            report(&rep, recs[i].lineno, recs[i].line, "division (result type made floating)", div);
    }
    free(recs);
    ck_assert_msg(rep.n == 0, "%d disagreements with torch:\n%s", rep.n, rep.text);
}
END_TEST

/* Named cases, readable on their own. Beyond the file they cover one operand and triples that
 * mix Python scalars with tensors, which no torch operator takes as three promoted operands
 * (torch._prims_common.elementwise_dtypes agrees with every line). */
#define T(d) {FC_OPERAND_TENSOR, FC_##d}
#define Z(d) {FC_OPERAND_ZERO_DIM, FC_##d}
#define S(d) {FC_OPERAND_SCALAR, FC_##d}
static const struct {
    FcOperand ops[3];
    int n;
    FcDType want, want_div;
} rules[] = {
    {{T(INT32), T(INT64)}, 2, FC_INT64, FC_FLOAT32},
    {{T(INT64), T(FLOAT32)}, 2, FC_FLOAT32, FC_FLOAT32},
    {{T(BOOL), T(INT32)}, 2, FC_INT32, FC_FLOAT32},
    {{Z(FLOAT32), T(INT64)}, 2, FC_FLOAT32, FC_FLOAT32},
    {{Z(FLOAT64), T(FLOAT32)}, 2, FC_FLOAT32, FC_FLOAT32},
    {{Z(INT64), T(INT32)}, 2, FC_INT32, FC_FLOAT32},
    {{T(INT32), S(FLOAT64)}, 2, FC_FLOAT32, FC_FLOAT32},
    {{T(BOOL), S(INT64)}, 2, FC_INT64, FC_FLOAT32},
    {{T(INT32), S(INT64)}, 2, FC_INT32, FC_FLOAT32},
    {{T(FLOAT64), S(FLOAT64)}, 2, FC_FLOAT64, FC_FLOAT64},
    {{T(INT32), Z(FLOAT64)}, 2, FC_FLOAT64, FC_FLOAT64},     /* 0-dim float keeps its size */
    {{S(INT64), S(FLOAT64)}, 2, FC_FLOAT32, FC_FLOAT32},
    {{S(BOOL), S(BOOL)}, 2, FC_BOOL, FC_FLOAT32},
    {{T(FLOAT64)}, 1, FC_FLOAT64, FC_FLOAT64},
    {{T(INT32), Z(FLOAT64), S(FLOAT64)}, 3, FC_FLOAT64, FC_FLOAT64},
    {{T(BOOL), Z(INT32), S(INT64)}, 3, FC_INT32, FC_FLOAT32},
    {{T(BOOL), S(FLOAT64), Z(INT64)}, 3, FC_FLOAT32, FC_FLOAT32},   /* 0-dim int64 meets the float scalar first */
    {{Z(INT32), Z(INT64), S(FLOAT64)}, 3, FC_FLOAT32, FC_FLOAT32},
    {{T(FLOAT32), Z(FLOAT64), S(FLOAT64)}, 3, FC_FLOAT32, FC_FLOAT32},
    {{S(BOOL), S(INT64), Z(BOOL)}, 3, FC_INT64, FC_FLOAT32},       /* a bool class always promotes */
    /* the narrow dtypes (torch.result_type) */
    {{T(UINT8), S(FLOAT64)}, 2, FC_FLOAT32, FC_FLOAT32},
    {{T(FLOAT16), S(FLOAT64)}, 2, FC_FLOAT16, FC_FLOAT16},
    {{T(UINT8), Z(INT64)}, 2, FC_UINT8, FC_FLOAT32},
    {{T(FLOAT16), Z(FLOAT64)}, 2, FC_FLOAT16, FC_FLOAT16},
    {{T(INT8), Z(FLOAT16)}, 2, FC_FLOAT16, FC_FLOAT16},
    {{T(INT16), Z(FLOAT16)}, 2, FC_FLOAT16, FC_FLOAT16},
    {{Z(UINT8), S(INT64)}, 2, FC_UINT8, FC_FLOAT32},
    {{Z(UINT8), Z(INT8)}, 2, FC_INT16, FC_FLOAT32},
    {{T(BOOL), Z(BFLOAT16)}, 2, FC_BFLOAT16, FC_BFLOAT16},
};
#undef T
#undef Z
#undef S

START_TEST(named_rules)
{
    ck_assert_str_eq(fc_dtype_name(fc_result_type(rules[_i].ops, rules[_i].n)), fc_dtype_name(rules[_i].want));
    ck_assert_str_eq(fc_dtype_name(fc_div_result_type(rules[_i].ops, rules[_i].n)), fc_dtype_name(rules[_i].want_div));
}
END_TEST

/* Operand order never matters: promotion is a function of the multiset of operands. */
START_TEST(order_independent)
{
    static const FcOperandKind kinds[] = {FC_OPERAND_TENSOR, FC_OPERAND_ZERO_DIM, FC_OPERAND_SCALAR};
    FcOperand all[3 * FC_DTYPE__COUNT];
    int n = 0;
    for (int k = 0; k < 3; k++)
        for (int d = 0; d < FC_DTYPE__COUNT; d++) {
            if (kinds[k] == FC_OPERAND_SCALAR && (d == FC_INT32 || d == FC_FLOAT32))
                continue;
            all[n].kind = kinds[k];
            all[n].dtype = (FcDType)d;
            n++;
        }
    ck_assert_int_eq(n, 3 * FC_DTYPE__COUNT - 2);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            for (int c = 0; c < n; c++) {
                FcOperand abc[3] = {all[a], all[b], all[c]}, cba[3] = {all[c], all[b], all[a]},
                          bac[3] = {all[b], all[a], all[c]};
                FcDType t = fc_result_type(abc, 3);
                ck_assert_int_eq(fc_result_type(cba, 3), t);
                ck_assert_int_eq(fc_result_type(bac, 3), t);
            }
}
END_TEST

/* torch.promote_types over bool, int32, int64, float32, float64, uint8, int8, int16, float16,
 * bfloat16 (PyTorch 1.13; the entries index that list): uint8 with int8 gives int16, float16
 * with bfloat16 float32, an integer with a narrow float the narrow float. */
START_TEST(promote_types_table)
{
    static const int want[FC_DTYPE__COUNT][FC_DTYPE__COUNT] = {
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 2, 3, 4, 1, 1, 1, 8, 9}, {2, 2, 2, 3, 4, 2, 2, 2, 8, 9},
        {3, 3, 3, 3, 4, 3, 3, 3, 3, 3}, {4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, {5, 1, 2, 3, 4, 5, 7, 7, 8, 9},
        {6, 1, 2, 3, 4, 7, 6, 7, 8, 9}, {7, 1, 2, 3, 4, 7, 7, 7, 8, 9}, {8, 8, 8, 3, 4, 8, 8, 8, 8, 3},
        {9, 9, 9, 3, 4, 9, 9, 9, 3, 9},
    };
    static const FcDType order[FC_DTYPE__COUNT] = {FC_BOOL,  FC_INT32, FC_INT64, FC_FLOAT32,  FC_FLOAT64,
                                                   FC_UINT8, FC_INT8,  FC_INT16, FC_FLOAT16, FC_BFLOAT16};
    for (int a = 0; a < FC_DTYPE__COUNT; a++)
        for (int b = 0; b < FC_DTYPE__COUNT; b++) {
            ck_assert_str_eq(fc_dtype_name(fc_promote_types(order[a], order[b])), fc_dtype_name(order[want[a][b]]));
            FcOperand ops[2] = {{FC_OPERAND_TENSOR, order[a]}, {FC_OPERAND_TENSOR, order[b]}};
            ck_assert_str_eq(fc_dtype_name(fc_result_type(ops, 2)), fc_dtype_name(order[want[a][b]]));
        }
}
END_TEST

Suite *promotion_suite(void)
{
    Suite *s = suite_create("promotion");
    TCase *tc = tcase_create("torch");
    tcase_add_test(tc, pairs_match_torch);
    tcase_add_test(tc, where_matches_torch);
    tcase_add_test(tc, clamp_triples_match_torch);
    tcase_add_test(tc, order_independent);
    tcase_add_test(tc, promote_types_table);
    tcase_add_loop_test(tc, named_rules, 0, (int)(sizeof rules / sizeof rules[0]));
    suite_add_tcase(s, tc);
    return s;
}
