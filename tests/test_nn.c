/* test_nn.c — the stdlib's nn module (stdlib/nn.tdl): torch.nn.functional's layers against PyTorch.
 *
 * The golden cases (tests/golden/nn/cases.txt and its .npy files, written by gen_nn.py with
 * PyTorch 1.13) cover conv2d, conv_transpose2d, max_pool2d, avg_pool2d, the adaptive pools,
 * linear, the activations, batch_norm, layer_norm, group_norm and interpolate with their options,
 * float32 and float64, contiguous and channels_last inputs; the generator documents them. A case is
 * a program (after `import nn`) that loads its inputs and leaves its results in globals; each
 * result is compared with PyTorch's: the same shape and dtype, |tdl - torch| <= tol * (|torch| +
 * MAG) elementwise (tol 1e-5 for float32, 1e-12 for float64, exact for integers; MAG, from the
 * case, is the size of the terms the result is made of), and the same strides on every dim of size
 * greater than 1 (the memory format PyTorch gives). A case "ERR Kind: message" must raise
 * PyTorch's error, kind and message, and leave the interpreter able to run the first case. Files
 * are read relative to the repository root, where `make test` runs; torch is not needed here. With
 * TDL_TEST_DEVICE (make check-device, check-gpu) the inputs go to that device and the results come
 * back from it. */
#include "tests.h"

#include "fcdim.h"
#include "golden_cases.h"
#include "tdl.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIR "tests/golden/nn/"
#define CASES_FILE DIR "cases.txt"
#define MASK_DIR "tests/golden/mask_head/"
/* A file that lost cases must not pass quietly. */
#define MIN_CASES 400

typedef struct NnCase {
    char *line;                 /* owns the text the fields point into */
    char *name, *program, *expected;
} NnCase;

static NnCase *cases;
static int n_cases;
static char load_error[256];

static void load_cases(void)
{
    FILE *fp = fopen(CASES_FILE, "r");
    if (!fp) {
        snprintf(load_error, sizeof load_error, "cannot open %s (run from the repository root)", CASES_FILE);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, cap_cases = 0;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        char *a = strchr(line, '\t'), *b = a ? strchr(a + 1, '\t') : NULL;
        if (!b || strchr(b + 1, '\t') || (strncmp(b + 1, "OK", 2) != 0 && strncmp(b + 1, "ERR ", 4) != 0)) {
            snprintf(load_error, sizeof load_error, "%s:%d: malformed case", CASES_FILE, lineno);
            break;
        }
        if (n_cases == cap_cases) {
            cap_cases = cap_cases ? 2 * cap_cases : 256;
            NnCase *grown = realloc(cases, (size_t)cap_cases * sizeof *cases);
            if (!grown) {
                snprintf(load_error, sizeof load_error, "out of memory");
                break;
            }
            cases = grown;
        }
        *a = *b = '\0';
        cases[n_cases++] = (NnCase){line, line, a + 1, b + 1};
        line = NULL;
        cap = 0;
    }
    free(line);
    fclose(fp);
}

static char *report;

static void free_report(void)
{
    free(report);
    report = NULL;
}

static void teardown(void)
{
    free_report();
    for (int k = 0; k < n_cases; k++)
        free(cases[k].line);
    free(cases);
    cases = NULL;
    n_cases = 0;
}

START_TEST(cases_load)
{
    ck_assert_msg(load_error[0] == '\0', "%s", load_error);
    ck_assert_msg(n_cases >= MIN_CASES, "%s holds %d cases, fewer than %d", CASES_FILE, n_cases, MIN_CASES);
}
END_TEST

/* Compares global `var` of T with one check of a case, "FILE|MAG|STRIDES" (spec is cut up). */
static void check_result(tdl_interp *T, const char *var, char *spec, char *why, size_t cap)
{
    char *mag_s = strchr(spec, '|'), *st_s = mag_s ? strchr(mag_s + 1, '|') : NULL;
    if (!st_s) {
        golden_put(why, cap, "%s: malformed check", var);
        return;
    }
    *mag_s++ = '\0';
    *st_s++ = '\0';
    char path[512];
    snprintf(path, sizeof path, DIR "%s", spec);
    golden_compare_npy(T, var, path, strtod(mag_s, NULL), st_s, why, cap);
}

/* Runs case c in T. Returns NULL when it agrees with PyTorch, else a malloc'd report. */
static char *run_case(tdl_interp *T, const NnCase *c)
{
    char prog[8192], why[2048] = "";
    golden_case_program("nn", c->program, strncmp(c->expected, "OK ", 3) == 0 ? c->expected + 3 : NULL, prog,
                        sizeof prog);
    tdl_status st = tdl_run_string(T, prog, c->name);
    const char *kind = tdl_error_kind_name(tdl_error_kind_of(T)), *msg = tdl_error_message(T);
    if (strncmp(c->expected, "ERR ", 4) == 0) {
        const char *want = c->expected + 4;
        size_t kn = strlen(kind);
        if (st != TDL_ERROR)
            golden_put(why, sizeof why, "no error; want %s", want);
        else if (strncmp(want, kind, kn) != 0 || strncmp(want + kn, ": ", 2) != 0 || strcmp(want + kn + 2, msg) != 0)
            golden_put(why, sizeof why, "raised %s: %s\n    want %s", kind, msg, want);
    } else if (st != TDL_OK) {
        golden_put(why, sizeof why, "raised %s: %s", kind, msg);
    } else {
        char *spec = strdup(c->expected + 2), *save = NULL;
        for (char *tok = spec ? strtok_r(spec, " ", &save) : NULL; tok && !why[0]; tok = strtok_r(NULL, " ", &save)) {
            char *eq = strchr(tok, '=');
            if (!eq) {
                golden_put(why, sizeof why, "malformed check %s", tok);
                break;
            }
            *eq = '\0';
            check_result(T, tok, eq + 1, why, sizeof why);
        }
        free(spec);
    }
    if (why[0] == '\0')
        return NULL;
    char *r = NULL;
    if (asprintf(&r, "%s: %s\n--- program:\n%s", c->name, why, prog) < 0)
        r = NULL;
    return r;
}

static void check_case(int i, int flags)
{
    free_report();
    tdl_interp *T = golden_open(flags);
    ck_assert_ptr_nonnull(T);
    report = run_case(T, &cases[i]);
    /* after an error the interpreter goes on: the first case still passes in it */
    if (!report && strncmp(cases[i].expected, "ERR", 3) == 0) {
        char *after = run_case(T, &cases[0]);
        if (after && asprintf(&report, "%s: after the error, %s", cases[i].name, after) < 0)
            report = NULL;
        free(after);
    }
    tdl_close(T);
    ck_assert_msg(report == NULL, "case %s%s", flags ? "(scheduler passes off) " : "", report ? report : "");
}

START_TEST(nn_case)
{
    check_case(_i, 0);
}
END_TEST

/* The same with the scheduler's fusion, hoisting and data-dependent bounds off: the same results. */
START_TEST(nn_case_no_opt)
{
    check_case(_i, TDL_NO_FUSE | TDL_NO_HOIST | TDL_NO_BOUNDS);
}
END_TEST

/* examples/mask_head.tdl on tests/golden/mask_head/ (gen_mask_head.py): roi_align, torchvision's
 * MaskRCNNHeads and MaskRCNNPredictor with the weights of weights.npz must give torchvision's mask
 * logits, within 1e-5 x (|torch| + amax|torch|) (gen_mask_head.py says why). */
START_TEST(mask_head)
{
    free_report();
    tdl_interp *T = golden_open(0);
    ck_assert_ptr_nonnull(T);
    const char *argv[] = {"examples/mask_head.tdl"};
    char why[2048] = "";
    /* on another device (make check-device) the example runs there; the logits come back */
    if (tdl_set_argv(T, 1, argv) != TDL_OK || tdl_run_file(T, argv[0]) != TDL_OK ||
        tdl_run_string(T, "logits = logits.cpu()", "mask_head") != TDL_OK) {
        golden_put(why, sizeof why, "raised %s: %s", tdl_error_kind_name(tdl_error_kind_of(T)), tdl_error_message(T));
    } else {
        golden_compare_npy(T, "logits", MASK_DIR "logits.npy", -1.0, "-", why, sizeof why);
    }
    tdl_close(T);
    if (why[0] && asprintf(&report, "mask_head: %s", why) < 0)
        report = NULL;
    ck_assert_msg(report == NULL, "%s", report ? report : "");
}
END_TEST

/* ---- convolutions, pooling and batch norm through the device's library path (suite nn_cudnn) ----
 * Every conv2d, conv_transpose2d, max_pool2d, avg_pool2d and batch_norm golden case on
 * golden_device() with --verbose's lines (TDL_VERBOSE) collected: the
 * values must agree with PyTorch whichever path ran, and the lines must say the path the device
 * promises. On the stand-in device (TDL_FAKE_CUDA=1, make check-device): the generated kernels,
 * "this device has no library path". On a GPU (make check-gpu): cuDNN for at least one case when
 * cuDNN loads (the cases it declines say why); with TDL_CUDNN=0 the generated kernels, "turned
 * off". Without a device (make test) it has nothing to do and says so. */

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* ---- the convolution's epilogue on the CPU ----
 * conv2d's matrix product with its bias and what the caller applies to the result (an
 * activation, batch-norm's affine map in evaluation) runs as one product whose epilogue computes
 * them (FcMatmul.epi): under TDL_DUMP_KERNELS one "product" line ending in the epilogue's ops and
 * no kernel after it, so the product is never written and read again. The result has the bits
 * of the unfused path (TDL_NO_FUSE: the product realised first, the rest a kernel of its own). */

static const char epi_setup[] =
    "import nn\n"
    "manual_seed(0)\n"
    "x = randn(2, 3, 7, 6)\n"
    "w = randn(5, 3, 3, 3)\n"
    "w1 = randn(5, 3, 1, 1, dtype=float64)\n"
    "b = randn(5)\n"
    "rm, rv, g, bb = randn(5), rand(5) + 0.5, randn(5), randn(5)\n"
    "per = (1, 5, 1, 1)\n"
    "scale = (rsqrt(rv + 1e-5) * g).reshape(per)\n"
    "xl = x.contiguous(memory_format=channels_last)\n"
    "wl = w.contiguous(memory_format=channels_last)\n"
    "wt = randn(3, 4, 2, 2)\n"
    "wtl = wt.contiguous(memory_format=channels_last)\n"
    "wtg = randn(3, 2, 3, 1, dtype=float64)\n"
    "bt = randn(4)\n"
    "btg = randn(6, dtype=float64)\n"
    "xg = randn(2, 6, 7, 6)\n"
    "xgl = xg.contiguous(memory_format=channels_last)\n"
    "wg = randn(6, 3, 3, 3)\n"
    "bg, rg, vg = randn(6), randn(6), rand(6) + 0.5\n";

static const struct {
    const char *name, *program, *epilogue;
} epi_cases[] = {
    {"conv3x3 + bias + relu", "y = nn.relu(nn.conv2d(x, w, b, padding=1))", " P load add relu\n"},
    {"channels_last", "y = nn.relu(nn.conv2d(x.contiguous(memory_format=channels_last), w, b, padding=1))",
     " P load add relu\n"},
    {"float64 1x1, stride 2, gelu", "y = nn.gelu(nn.conv2d(x.double(), w1, b.double(), stride=2))",
     " P load cast add const mul const const mul erf add mul\n"},
    {"batch-norm's affine map + silu",
     "y = nn.silu((nn.conv2d(x, w, padding=(0, 1)) - rm.reshape(per)) * scale + bb.reshape(per))",
     " P load sub load mul load add sigmoid mul\n"},
    /* batch_norm reads the convolution's memory format without realising it (_product_strides) */
    {"nn.batch_norm in evaluation + relu", "y = nn.relu(nn.batch_norm(nn.conv2d(x, w, b, padding=1), rm, rv, g, bb))",
     " P load add load sub load mul load mul load add relu\n"},
    {"channels_last, nn.batch_norm in evaluation + relu",
     "y = nn.relu(nn.batch_norm(nn.conv2d(xl, wl, b, padding=1), rm, rv, g, bb))",
     " P load add load sub load mul load mul load add relu\n"},
    /* conv_transpose2d with stride == kernel: each output element one product's, so the GEMM's
     * epilogue adds the bias and writes the output through its strides, in its memory format (no
     * column matrix, no col2im kernel, no layout pass) */
    {"conv_transpose2d 2x2 stride 2", "y = nn.conv_transpose2d(x, wt, bt, stride=2)", " P load add\n"},
    {"channels_last conv_transpose2d 2x2 stride 2", "y = nn.conv_transpose2d(xl, wt, bt, stride=2)", " P load add\n"},
    {"conv_transpose2d, channels_last weight", "y = nn.conv_transpose2d(x, wtl, bt, stride=2)", " P load add\n"},
    /* one image: the assigned value's leading dim of size 1 is dropped without realising it */
    {"conv_transpose2d 2x2 stride 2, one image", "y = nn.conv_transpose2d(x[:1], wt, bt, stride=2)", " P load add\n"},
    {"float64 conv_transpose2d 3x1 stride (3, 1), groups 3",
     "y = nn.conv_transpose2d(xl.double(), wtg, btg, stride=(3, 1), groups=3)", " P load add\n"},
    /* what the caller applies to a result whose dims merge the product's ((iy, kh) and (ix, kw)
     * for the transposed convolution's rows and columns, (g, oc) for a grouped one's channels):
     * the product stays lazy with its levels merged, and the activation is in its epilogue (no
     * pass of its own) */
    {"conv_transpose2d 2x2 stride 2 + relu", "y = nn.relu(nn.conv_transpose2d(x, wt, bt, stride=2))",
     " P load add relu\n"},
    {"channels_last conv_transpose2d 2x2 stride 2 + relu", "y = nn.relu(nn.conv_transpose2d(xl, wtl, bt, stride=2))",
     " P load add relu\n"},
    {"float64 conv_transpose2d groups 3 + silu",
     "y = nn.silu(nn.conv_transpose2d(xl.double(), wtg, btg, stride=(3, 1), groups=3))",
     " P load add sigmoid mul\n"},
    {"grouped conv2d + relu", "y = nn.relu(nn.conv2d(xg, wg, bg, padding=1, groups=2))", " P load add relu\n"},
    {"channels_last grouped conv2d + relu", "y = nn.relu(nn.conv2d(xgl, wg, bg, padding=1, groups=2))",
     " P load add relu\n"},
    {"grouped conv2d + nn.batch_norm in evaluation + relu",
     "y = nn.relu(nn.batch_norm(nn.conv2d(xg, wg, bg, stride=2, groups=2), rg, vg))",
     " P load add load sub load mul relu\n"},
};

/* Runs setup, then program (which sets y) under flags with kernel dumps collected into dump, and
 * saves y to path: NULL, or the error raised (a message to free). */
static char *run_saving(const char *setup, const char *name, const char *program, int flags, const char *path,
                        Lines *dump)
{
    tdl_config cfg = {0};
    cfg.path = "stdlib";
    cfg.flags = flags | TDL_DUMP_KERNELS;
    cfg.dump = lines_collect;
    cfg.dump_ud = dump;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    char prog[1024], *r = NULL;
    snprintf(prog, sizeof prog, "%s\ny.stride()\n", program);
    bool ok = tdl_run_string(T, setup, "setup") == TDL_OK;
    dump->text[0] = '\0';
    ok = ok && tdl_run_string(T, prog, name) == TDL_OK;
    snprintf(prog, sizeof prog, "save('%s', y)\n", path);
    ok = ok && tdl_run_string(T, prog, "save") == TDL_OK;
    if (!ok && asprintf(&r, "%s: raised %s: %s", name, tdl_error_kind_name(tdl_error_kind_of(T)),
                        tdl_error_message(T)) < 0)
        r = NULL;
    tdl_close(T);
    return r;
}

static char *file_bytes(const char *path, long *n)
{
    FILE *fp = fopen(path, "rb");
    char *b = NULL;
    *n = -1;
    if (fp && fseek(fp, 0, SEEK_END) == 0 && (*n = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0 &&
        (b = malloc((size_t)*n + 1)) && fread(b, 1, (size_t)*n, fp) != (size_t)*n) {
        free(b);
        b = NULL;
    }
    if (fp)
        fclose(fp);
    return b;
}

/* Runs program fused and under TDL_NO_FUSE (run_saving, the dumps into *fused and *unfused),
 * asserting that both ran; whether they saved the same bytes. */
static bool same_bytes_unfused(const char *setup, const char *name, const char *program, Lines *fused,
                               Lines *unfused)
{
    char pf[64], pu[64];
    snprintf(pf, sizeof pf, "/tmp/tdl-nn-%d-fused.npy", (int)getpid());
    snprintf(pu, sizeof pu, "/tmp/tdl-nn-%d-unfused.npy", (int)getpid());
    free_report();
    report = run_saving(setup, name, program, 0, pf, fused);
    if (!report)
        report = run_saving(setup, name, program, TDL_NO_FUSE, pu, unfused);
    long nf, nu;
    char *bf = report ? NULL : file_bytes(pf, &nf), *bu = report ? NULL : file_bytes(pu, &nu);
    remove(pf);
    remove(pu);
    bool same = bf && bu && nf == nu && memcmp(bf, bu, (size_t)nf) == 0;
    free(bf);
    free(bu);
    ck_assert_msg(report == NULL, "%s", report ? report : "");
    return same;
}

START_TEST(conv_epilogue)
{
    static Lines fused, unfused;
    bool same = same_bytes_unfused(epi_setup, epi_cases[_i].name, epi_cases[_i].program, &fused, &unfused);
    const char *line = strstr(fused.text, "product ");
    const char *ops = line ? strstr(line, "epilogue:") : NULL;
    ck_assert_msg(ops && count_of(fused.text, "product ") == 1, "%s: not one product:\n%s", epi_cases[_i].name,
                  fused.text);
    const char *eol = strchr(ops, '\n');
    ck_assert_msg(eol && strncmp(ops + 9, epi_cases[_i].epilogue, (size_t)(eol + 1 - ops - 9)) == 0 &&
                      strlen(epi_cases[_i].epilogue) == (size_t)(eol + 1 - ops - 9),
                  "%s: epilogue%.*s, want%s", epi_cases[_i].name, eol ? (int)(eol + 1 - ops - 9) : 0, ops + 9,
                  epi_cases[_i].epilogue);
    ck_assert_msg(!strstr(eol, "kernel:"), "%s: a kernel runs after the product:\n%s", epi_cases[_i].name, fused.text);
    /* unfused: the product alone, its consumer a kernel */
    ck_assert_msg(strstr(unfused.text, "epilogue: P\n") && strstr(strstr(unfused.text, "epilogue: P\n"), "kernel:"),
                  "%s: unfused:\n%s", epi_cases[_i].name, unfused.text);
    ck_assert_msg(same, "%s: the fused result's bits differ", epi_cases[_i].name);
}
END_TEST

/* A merged product (a result whose dims merge the product's) read by what is not its epilogue:
 * by a reduction, through a view, by a scattered store, twice. The scheduler realises it apart
 * (its levels mean nothing to a kernel) and reads that; the unfused path's bits. Each
 * realisation that reads a lazy product computes it (a plain conv2d's result read by two is
 * computed twice too). (These pass on the code before merged products too: they guard the
 * paths that realise one.) */
static const struct {
    const char *name, *program;
    int products;
} apart_cases[] = {
    {"a reduction of it", "y = nn.conv2d(xg, wg, bg, padding=1, groups=2).amax((1, 3))", 1},
    {"a strided view of it", "y = nn.relu(nn.conv_transpose2d(xl, wtl, bt, stride=2)[:, 1:, ::3, 1::2])", 1},
    {"a scattered store of it",
     "y = zeros(2, 4, 14, 12)\ny[tensor([1, 0])] = nn.conv_transpose2d(x, wt, bt, stride=2)", 1},
    {"read twice in one kernel", "t = nn.conv_transpose2d(x, wt, bt, stride=2)\ny = nn.relu(t) * t", 1},
    {"read by two realisations", "t = nn.conv_transpose2d(x, wt, bt, stride=2)\ny = nn.relu(t) + t.sum()", 2},
    {"a masked store of it", "t = nn.conv2d(xgl, wg, bg, groups=2)\ny = zeros(2, 6, 5, 4)\ny[t > 0] = t[t > 0]",
     2},
};

START_TEST(merged_apart)
{
    static Lines fused, unfused;
    bool same = same_bytes_unfused(epi_setup, apart_cases[_i].name, apart_cases[_i].program, &fused, &unfused);
    ck_assert_msg(count_of(fused.text, "product ") == apart_cases[_i].products, "%s: not %d products:\n%s",
                  apart_cases[_i].name, apart_cases[_i].products, fused.text);
    ck_assert_msg(same, "%s: the bits differ from the unfused path's", apart_cases[_i].name);
}
END_TEST

/* conv_transpose2d's other strides: the product writes its column matrix into a zero-padded
 * buffer (a few fills of its border first), then col2im is one pointwise kernel per output phase
 * (rows ry::2, columns rx::2: four for stride 2), the sum of the phase's taps, each a strided
 * view of the buffer, with the bias, written in the output's memory format: no reduction, no
 * gather; the unfused path's bits. The strides' `//` and `%` run no kernel testing them for
 * zero. */
START_TEST(conv_transpose_col2im)
{
    static Lines fused, unfused;
    static const char name[] = "channels_last conv_transpose2d 3x3 stride 2 padding 1 output_padding 1";
    bool same = same_bytes_unfused(epi_setup, name,
                                   "y = nn.conv_transpose2d(xl, w.transpose(0, 1), b, stride=2, padding=1, "
                                   "output_padding=1)",
                                   &fused, &unfused);
    const char *p = strstr(fused.text, "product ");
    ck_assert_msg(p && count_of(fused.text, "product ") == 1 && count_of(p, "kernel:") == 4 && !strstr(p, " in r"),
                  "%s: not one product and four kernels without a reduction after it:\n%s", name, fused.text);
    /* before it: the weight's copy (not a matrix as transposed) and the padding's two fills
     * (the phases read one row and one column past the matrix's end) */
    ck_assert_msg(count_of(fused.text, "kernel:") == 7, "%s: kernels before the product:\n%s", name, fused.text);
    ck_assert_msg(same, "%s: the fused result's bits differ", name);
}
END_TEST

/* ---- depthwise convolutions ----
 * One input channel per group: no matrix product (one column per group would run the GEMM at a
 * fraction of its speed) but one pointwise kernel over the kernel's taps, each a strided view of
 * the input (zero-padded first where there is padding: its border and its interior, five small
 * kernels; channels_last with stride 1: the weight and the bias repeated along ow first, two
 * more), with the bias and the activation in it; the unfused path's bits. */

static const struct {
    const char *name, *program;
    int kernels;
} dw_cases[] = {
    {"channels_last depthwise 3x3 stride 2 + bias + relu", "y = nn.relu(nn.conv2d(xl, wd, b[:3], stride=2, groups=3))", 1},
    {"depthwise 3x3 padding 1 + bias + relu", "y = nn.relu(nn.conv2d(x, wd, b[:3], padding=1, groups=3))", 6},
    {"channels_last depthwise 3x3 padding 1 + bias + relu",
     "y = nn.relu(nn.conv2d(xl, wd, b[:3], padding=1, groups=3))", 8},
    /* a channel multiplier, channels_last: the padded copy holds each input channel m times (one
     * kernel broadcasting the input into it), then the taps as for m == 1 over out_c groups: the
     * activation in the taps' kernel, no pass of its own. Contiguous: the taps' kernel over (n,
     * g, oc, oh, ow) reading the input once per group, assigned into the output, and the
     * activation a pass of its own (that kernel is the faster one there) */
    {"float64 depthwise multiplier 2, 2x3 'same', dilation 2",
     "y = nn.conv2d(xl.double(), wdm, padding='same', dilation=2, groups=3)", 8},
    {"depthwise multiplier 2, padding 1 + bias + relu", "y = nn.relu(nn.conv2d(x, wm, bm, padding=1, groups=3))",
     7},
    {"channels_last depthwise multiplier 2, padding 1 + bias + gelu",
     "y = nn.gelu(nn.conv2d(xl, wm, bm, padding=1, groups=3))", 8},
    {"channels_last depthwise multiplier 2 stride 2 + silu", "y = nn.silu(nn.conv2d(xl, wm, stride=2, groups=3))", 2},
    /* two input channels per group: no product. Channels_last: one padded copy per input
     * channel of a group (five kernels each; the input's conversion and the weight's repeat
     * along ow too), the taps of both summed in one kernel with the activation; contiguous: one
     * padded copy, the taps' kernel over (n, g, oc, oh, ow) as above (the bias sliced first) */
    {"2 channels per group, padding 1 + bias + relu", "y = nn.relu(nn.conv2d(x4, w42, bm[:4], padding=1, groups=2))",
     8},
    {"channels_last 2 channels per group, multiplier 2, padding 1 + relu",
     "y = nn.relu(nn.conv2d(x4.contiguous(memory_format=channels_last), w82, padding=1, groups=2))", 13},
};

START_TEST(conv_depthwise)
{
    static Lines fused, unfused;
    static const char setup[] = "import nn\n"
                                "manual_seed(2)\n"
                                "x = randn(2, 3, 9, 8)\n"
                                "xl = x.contiguous(memory_format=channels_last)\n"
                                "wd = randn(3, 1, 3, 3)\n"
                                "wdm = randn(6, 1, 2, 3, dtype=float64)\n"
                                "b = randn(5)\n"
                                "wm = randn(6, 1, 3, 3)\n"
                                "bm = randn(6)\n"
                                "x4 = randn(2, 4, 9, 8)\n"
                                "w42 = randn(4, 2, 3, 3)\n"
                                "w82 = randn(8, 2, 3, 3)\n";
    bool same = same_bytes_unfused(setup, dw_cases[_i].name, dw_cases[_i].program, &fused, &unfused);
    ck_assert_msg(!strstr(fused.text, "product ") && count_of(fused.text, "kernel:") == dw_cases[_i].kernels,
                  "%s: a product, or not %d kernels:\n%s", dw_cases[_i].name, dw_cases[_i].kernels, fused.text);
    ck_assert_msg(same, "%s: the fused result's bits differ", dw_cases[_i].name);
}
END_TEST

/* ---- the convolution without its im2col matrix (implicit GEMM) ----
 * conv2d's patch, a gather of the input masked to 0 in the padding, is not written on the CPU:
 * the GEMM packs its panels straight from the input (FcMatmul.a_ix / b_ix, FcMmOperand). Under
 * TDL_DUMP_KERNELS the convolution is one "product" line that names the gathered operand and
 * no kernel at all (the materialised path, TDL_NO_FUSE, writes the patch by a kernel first); the
 * result has the materialised path's bits. */

static const char imp_setup[] =
    "import nn\n"
    "manual_seed(1)\n"
    "x = randn(2, 5, 11, 9)\n"
    "xl = x.contiguous(memory_format=channels_last)\n"
    "xd = randn(2, 5, 11, 9, dtype=float64).contiguous(memory_format=channels_last)\n"
    "w = randn(6, 5, 3, 3)\n"
    "wd = randn(6, 5, 3, 3, dtype=float64)\n"
    "w1 = randn(6, 5, 1, 1)\n"
    "w2 = randn(6, 5, 2, 2)\n"
    "b = randn(6)\n"
    "bd = randn(6, dtype=float64)\n"
    "xg = randn(2, 6, 10, 7).contiguous(memory_format=channels_last)\n"
    "wg = randn(4, 3, 3, 3).contiguous(memory_format=channels_last)\n"
    "xgc = xg.contiguous()\n"
    "wgc = wg.contiguous()\n"
    "wl = w.contiguous(memory_format=channels_last)\n"
    "wdl = wd.contiguous(memory_format=channels_last)\n"
    "w2l = w2.contiguous(memory_format=channels_last)\n"
    "xb = randn(4, 16, 12, 12)\n"
    "wb = randn(20, 16, 3, 3)\n"
    "xbl = xb.contiguous(memory_format=channels_last)\n"
    "wbl = wb.contiguous(memory_format=channels_last)\n";

static const struct {
    const char *name, *program, *gathered;
} imp_cases[] = {
    {"3x3 pad 1 stride 2 dilation 2", "y = nn.conv2d(x, w, padding=1, stride=2, dilation=2)",
     "B gathered (2 bounds)"},
    {"channels_last 3x3 pad 1 stride 2 dilation 2", "y = nn.conv2d(xl, wl, padding=1, stride=2, dilation=2)",
     "A gathered (2 bounds)"},
    {"bias + relu", "y = nn.relu(nn.conv2d(x, w, b, padding=1))", "B gathered (2 bounds)"},
    {"channels_last float64, padding (2, 0), dilation (1, 2)",
     "y = nn.conv2d(xd, wdl, bd, padding=(2, 0), dilation=(1, 2))", "A gathered (1 bounds)"},
    {"1x1 stride 2", "y = nn.conv2d(x, w1, stride=2)", "B gathered (0 bounds)"},
    {"2x2 'same' (padded at one end)", "y = nn.conv2d(xl, w2l, padding='same')", "A gathered (2 bounds)"},
    /* grouped: the product written into the output's (n, (g, oc), oh, ow) through its strides, no
     * layout pass after it */
    {"groups 2, channels_last, stride 2", "y = nn.conv2d(xg, wg, padding=1, stride=2, groups=2)",
     "A gathered (2 bounds)"},
    {"groups 2, contiguous, bias", "y = nn.conv2d(xgc, wgc, b[:4], padding=1, groups=2)",
     "B gathered (2 bounds)"},
    /* products big enough for several threads: the weights packed once for the batch */
    {"4 images, 3x3 pad 1", "y = nn.relu(nn.conv2d(xb, wb, padding=1))", "B gathered (2 bounds)"},
    {"4 images, channels_last, 3x3 pad 1", "y = nn.conv2d(xbl, wbl, padding=1)", "A gathered (2 bounds)"},
};

/* Sets TDL_NUM_THREADS (value NULL: unsets it) for the interpreters opened next; returns the
 * value it had, to restore (a copy to free, or NULL). */
static char *set_threads_env(const char *value)
{
    const char *had = getenv("TDL_NUM_THREADS");
    char *saved = had ? strdup(had) : NULL;
    if (value)
        setenv("TDL_NUM_THREADS", value, 1);
    else
        unsetenv("TDL_NUM_THREADS");
    return saved;
}

START_TEST(conv_implicit)
{
    static Lines fused, unfused;
    /* the product's bits do not depend on its tasks: one thread, and three (the tasks split,
     * the operands shared by the batch items packed by one of them) */
    char *saved = set_threads_env("3");
    bool same3 = same_bytes_unfused(imp_setup, imp_cases[_i].name, imp_cases[_i].program, &fused, &unfused);
    free(set_threads_env("1"));
    bool same = same_bytes_unfused(imp_setup, imp_cases[_i].name, imp_cases[_i].program, &fused, &unfused);
    free(set_threads_env(saved));
    free(saved);
    ck_assert_msg(same3, "%s: at 3 threads the bits differ from the materialised path's", imp_cases[_i].name);
    ck_assert_msg(count_of(fused.text, "product ") == 1 && count_of(fused.text, imp_cases[_i].gathered) == 1 &&
                      !strstr(fused.text, "kernel:"),
                  "%s: not one product with \"%s\" and no kernel:\n%s", imp_cases[_i].name, imp_cases[_i].gathered,
                  fused.text);
    /* the materialised path: the patch written by a kernel, then a plain product */
    const char *k = strstr(unfused.text, "kernel:"), *p = strstr(unfused.text, "product ");
    ck_assert_msg(k && p && k < p && !strstr(unfused.text, "gathered"), "%s: materialised:\n%s", imp_cases[_i].name,
                  unfused.text);
    ck_assert_msg(same, "%s: the bits differ from the materialised path's", imp_cases[_i].name);
}
END_TEST

/* The memory a convolution needs: a 3x3 convolution of a 64 x 64 x 64 input, whose im2col
 * matrix is 9.4 MB (the input, weight and result 2.2 MB), runs under an 8 MiB max_memory; the
 * materialised path (TDL_NO_FUSE) does not. Two threads, whatever the machine: each has its
 * packing buffers. */
START_TEST(conv_implicit_memory)
{
    static const char prog[] = "import nn\n"
                               "manual_seed(0)\n"
                               "x = randn(1, 64, 64, 64)\n"
                               "w = randn(64, 64, 3, 3)\n"
                               "b = randn(64)\n"
                               "y = nn.relu(nn.conv2d(x, w, b, padding=1))\n"
                               "s = float(y.sum())\n";
    const char *had = getenv("TDL_NUM_THREADS");
    char *saved = had ? strdup(had) : NULL;
    char why[2][512] = {"", ""};
    bool ok[2] = {false, false};
    setenv("TDL_NUM_THREADS", "2", 1);
    for (int pass = 0; pass < 2; pass++) {
        tdl_config cfg = {.size = sizeof cfg};
        cfg.path = "stdlib";
        cfg.flags = pass ? TDL_NO_FUSE : 0;
        cfg.max_memory = 8 << 20;
        tdl_interp *T = tdl_open(&cfg);
        if (!T)
            continue;
        ok[pass] = tdl_run_string(T, prog, "conv") == TDL_OK;
        snprintf(why[pass], sizeof why[pass], "%s: %s", ok[pass] ? "ran" : tdl_error_kind_name(tdl_error_kind_of(T)),
                 ok[pass] ? "" : tdl_error_message(T));
        tdl_close(T);
    }
    if (saved)
        setenv("TDL_NUM_THREADS", saved, 1);
    else
        unsetenv("TDL_NUM_THREADS");
    free(saved);
    ck_assert_msg(ok[0], "implicit: %s", why[0]);
    ck_assert_msg(!ok[1] && strncmp(why[1], "MemoryError:", 12) == 0, "materialised: the limit did not bite (%s)",
                  why[1]);
}
END_TEST

/* Whether prog runs under a max_memory of limit bytes with flags, at two threads whatever the
 * machine (each has its packing buffers); why: "ran" or the error raised. */
static bool runs_within(const char *prog, size_t limit, int flags, char *why, size_t cap)
{
    char *saved = set_threads_env("2");
    tdl_config cfg = {.size = sizeof cfg};
    cfg.path = "stdlib";
    cfg.flags = flags;
    cfg.max_memory = limit;
    tdl_interp *T = tdl_open(&cfg);
    bool ok = T && tdl_run_string(T, prog, "limited") == TDL_OK;
    snprintf(why, cap, "%s: %s", ok ? "ran" : T ? tdl_error_kind_name(tdl_error_kind_of(T)) : "no interpreter",
             ok || !T ? "" : tdl_error_message(T));
    if (T)
        tdl_close(T);
    free(set_threads_env(saved));
    free(saved);
    return ok;
}

/* The activation after a result whose dims merge the product's is in the product's epilogue,
 * so the result is never written before it: conv_transpose2d 2x2 stride 2 + ReLU of a 8 x 64 x
 * 28 x 28 input (1.6 MB; the result 6.4 MB) runs under 13 MiB, and a grouped 3x3 convolution +
 * ReLU of a 8 x 64 x 56 x 56 one (6.4 MB in and out) under 17 MiB; when the result was assigned
 * into the output and the ReLU was a pass of its own, they needed one result more (16 and 20
 * MiB), as the unfused path (TDL_NO_FUSE) still does. */
START_TEST(conv_merged_memory)
{
    static const struct {
        const char *prog;
        size_t limit;
    } progs[] = {
        {"import nn\n"
         "manual_seed(0)\n"
         "x = randn(8, 64, 28, 28)\n"
         "y = nn.relu(nn.conv_transpose2d(x, randn(64, 64, 2, 2), randn(64), stride=2))\n"
         "y.stride()\n",
         (size_t)13 << 20},
        {"import nn\n"
         "manual_seed(0)\n"
         "x = randn(8, 64, 56, 56)\n"
         "y = nn.relu(nn.conv2d(x, randn(64, 16, 3, 3), randn(64), padding=1, groups=4))\n"
         "y.stride()\n",
         (size_t)17 << 20},
    };
    for (int i = 0; i < 2; i++) {
        char why[512];
        ck_assert_msg(runs_within(progs[i].prog, progs[i].limit, 0, why, sizeof why), "%s\n%s", progs[i].prog, why);
        ck_assert_msg(!runs_within(progs[i].prog, progs[i].limit, TDL_NO_FUSE, why, sizeof why) &&
                          strncmp(why, "MemoryError:", 12) == 0,
                      "%s\nunfused: the limit did not bite (%s)", progs[i].prog, why);
    }
}
END_TEST

START_TEST(conv2d_library_path)
{
    const char *dev = golden_device();
    if (!dev) {
        fprintf(stderr, "nn_cudnn: no device (TDL_TEST_DEVICE): nothing to check\n");
        return;
    }
    const char *fake = getenv("TDL_FAKE_CUDA"), *off = getenv("TDL_CUDNN");
    bool is_fake = fake && strcmp(fake, "1") == 0, is_off = off && (strcmp(off, "0") == 0 || strcmp(off, "off") == 0);
    /* the adaptive pools' cases whose windows are a plain pool's say max_pool2d / avg_pool2d */
    static const char *const ops[] = {"conv", "max_pool2d", "avg_pool2d", "batch_norm"};
    static const char *const also[] = {"adaptive_avg_pool2d", "adaptive_max_pool2d"};
    enum { NOPS = sizeof ops / sizeof ops[0] };
    int ran = 0, lines = 0, through = 0, wrong = 0, of_op[NOPS] = {0};
    free_report();
    for (int i = 0; i < n_cases && !report; i++) {
        bool library_op = false;
        for (int k = 0; k < NOPS; k++)
            library_op |= strncmp(cases[i].name, ops[k], strlen(ops[k])) == 0;
        for (int k = 0; k < 2; k++)
            library_op |= strncmp(cases[i].name, also[k], strlen(also[k])) == 0;
        if (!library_op || strncmp(cases[i].expected, "OK", 2) != 0)
            continue;
        static Lines l;
        l.text[0] = '\0';
        tdl_config cfg = {0};
        cfg.path = "stdlib";
        cfg.flags = TDL_VERBOSE;
        cfg.dump = lines_collect;
        cfg.dump_ud = &l;
        cfg.device = dev;
        tdl_interp *T = tdl_open(&cfg);
        ck_assert_ptr_nonnull(T);
        report = run_case(T, &cases[i]);
        tdl_close(T);
        ran++;
        int n = 0, cudnn = count_of(l.text, ": cuDNN (");
        for (int k = 0; k < NOPS; k++) {
            char line[40];
            snprintf(line, sizeof line, "tdl: %s", ops[k]);
            int m = count_of(l.text, line);
            of_op[k] += m;
            n += m;
        }
        lines += n;
        through += cudnn;
        const char *want = is_fake ? "generated kernels (this device has no library path)"
                         : is_off  ? "generated kernels (cuDNN: turned off (TDL_CUDNN="
                                   : NULL;
        if (want && count_of(l.text, want) != n) {
            wrong++;
            if (!report && asprintf(&report, "%s: the path is not \"%s\":\n%s", cases[i].name, want, l.text) < 0)
                report = NULL;
        }
        if (!want && n > cudnn)
            fprintf(stderr, "nn_cudnn: %s did not run on cuDNN:\n%s", cases[i].name, l.text);
    }
    ck_assert_msg(report == NULL, "%s", report ? report : "");
    fprintf(stderr,
            "nn_cudnn on %s%s%s: %d conv2d, conv_transpose2d, pooling and batch_norm cases agree with PyTorch; %d "
            "library calls (%d convolutions, %d max_pool2d, %d avg_pool2d, %d batch_norm), %d through cuDNN\n",
            dev, is_fake ? " (stand-in)" : "", is_off ? " (TDL_CUDNN=0)" : "", ran, lines, of_op[0], of_op[1], of_op[2],
            of_op[3], through);
    ck_assert_int_gt(ran, 20);
    /* each operation reaches the library path (or says why not) */
    for (int k = 0; k < NOPS; k++)
        ck_assert_msg(of_op[k] > 0, "no %s case asked the library path", ops[k]);
    ck_assert_int_eq(wrong, 0);
    if (!is_fake && !is_off) {
        const char *why = getenv("TDL_TEST_CUDNN_ABSENT");
        /* a GPU without cuDNN says so (TDL_TEST_CUDNN_ABSENT=1 accepts it) */
        ck_assert_msg(through > 0 || (why && strcmp(why, "1") == 0),
                      "no convolution ran through cuDNN on %s (the lines of the last case say why)", dev);
    }
}
END_TEST

/* The nn suite's teardown frees the cases when it ran first. */
static void ensure_loaded(void)
{
    if (!cases && !load_error[0])
        load_cases();
}

Suite *nn_cudnn_suite(void)
{
    Suite *s = suite_create("nn_cudnn");
    TCase *tc = tcase_create("library");
    tcase_set_timeout(tc, 300);
    tcase_add_unchecked_fixture(tc, ensure_loaded, teardown);
    tcase_add_test(tc, conv2d_library_path);
    suite_add_tcase(s, tc);
    return s;
}

Suite *nn_suite(void)
{
    load_cases();
    Suite *s = suite_create("nn");
    TCase *tc = tcase_create("functional");
    tcase_set_timeout(tc, 60);
    tcase_add_unchecked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, cases_load);
    if (load_error[0] == '\0') {
        tcase_add_loop_test(tc, nn_case, 0, n_cases);
        tcase_add_loop_test(tc, nn_case_no_opt, 0, n_cases);
    }
    tcase_add_test(tc, mask_head);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("epilogue");
    tcase_add_loop_test(te, conv_epilogue, 0, (int)(sizeof epi_cases / sizeof *epi_cases));
    tcase_add_test(te, conv_transpose_col2im);
    tcase_add_test(te, conv_merged_memory);
    tcase_add_loop_test(te, merged_apart, 0, (int)(sizeof apart_cases / sizeof *apart_cases));
    suite_add_tcase(s, te);
    TCase *td = tcase_create("depthwise");
    tcase_add_loop_test(td, conv_depthwise, 0, (int)(sizeof dw_cases / sizeof *dw_cases));
    suite_add_tcase(s, td);
    TCase *ti = tcase_create("implicit");
    tcase_add_loop_test(ti, conv_implicit, 0, (int)(sizeof imp_cases / sizeof *imp_cases));
    tcase_add_test(ti, conv_implicit_memory);
    suite_add_tcase(s, ti);
    return s;
}
