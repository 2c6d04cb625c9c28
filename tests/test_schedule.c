/* test_schedule.c — the scheduler's passes: fused reductions, hoisting by domain, data-dependent
 * loop bounds. Each program runs with every pass on, with each one off (tdl_config.flags
 * TDL_NO_FUSE / TDL_NO_HOIST / TDL_NO_BOUNDS, the --no-opt= of the tdl command) and with all
 * off; its results, saved as .npy, must be the same bytes every time. The kernel dumps show that
 * the passes did happen (one kernel for softmax, values hoisted, loops bounded). */
#include "tdl.h"
#include "tests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct Text { char *buf; size_t n; } Text;

static void append(void *ud, const char *s, size_t len)
{
    Text *t = ud;
    char *q = realloc(t->buf, t->n + len + 1);
    ck_assert_ptr_nonnull(q);
    memcpy(q + t->n, s, len);
    t->n += len;
    q[t->n] = 0;
    t->buf = q;
}

/* Data shared by the programs: d is where they save. */
static const char prelude[] =
    "x = ((arange(64 * 300.0) * 0.37).sin() * 5).reshape(64, 300)\n"
    "x64 = x.double() * 1.0001\n";

static const char *const programs[] = {
    /* softmax and friends: the reductions fused into their consumer */
    "save(d + '/a', x.softmax(1))\n"
    "save(d + '/b', x64.log_softmax(-1))\n"
    "save(d + '/c', x - x.mean(1, keepdim=True))\n"
    "save(d + '/e', (x - x.amax(1, keepdim=True)).exp().sum(1))\n",
    /* masked reductions: float and int bounds, &-joined masks, amax, the mask inside */
    "i, j = dims(2)\n"
    "v = x[i, j]\n"
    "e = x[i, 0].abs() * 40\n"
    "save(d + '/a', where(j < e, v, 0).sum(j).order(i))\n"
    "save(d + '/b', where((j < e) & (j <= x[i, 2].abs() * 50), v, 0).amax(j).order(i))\n"
    "save(d + '/c', (where(j < e, v, 0) * where(j < e, v, 0)).sum(j).order(i))\n"
    "save(d + '/e', where(j < (x[i, 1].abs() * 40).long(), x64[i, j], 0).sum(j).order(i))\n"
    "save(d + '/f', (where(e > j, v, 0).sum(j) / e.clamp(min=1)).order(i))\n",
    /* roi_align's shape: a gather through indices over (n, k), hoisted off c, a bounded sum */
    "feats = ((arange(4 * 16 * 20.0) * 0.13).cos()).reshape(4, 16, 20)\n"
    "b = tensor([0, 3, 1, 2, 3, 0])\n"
    "start = tensor([0.5, 3.2, 7.9, 1.1, 12.4, 5.0])\n"
    "n, c, k = dims(3)\n"
    "k.size = 8\n"
    "cnt = (start[n] * 0.7).ceil()\n"
    "xs = (start[n] + k * 1.3).clamp(max=19.0)\n"
    "xl = xs.floor().long()\n"
    "w = xs - xl\n"
    "val = feats[b[n]][c][xl] * (1 - w) + feats[b[n]][c][(xl + 1).clamp(max=19)] * w\n"
    "save(d + '/a', (where(k < cnt, val, 0).sum(k) / cnt.clamp(min=1)).order(n, c))\n",
    /* memo tables: y over (n, p, iy) sits inside the loop over q, x over (n, q, ix) inside the
     * loop over p, the sample loops cycle inside both; c (300) runs in two chunks */
    "img = ((arange(4 * 300 * 12 * 14.0) * 0.011).sin()).reshape(4, 300, 12, 14)\n"
    "n, c, p, q, iy, ix = dims(6)\n"
    "p.size, q.size, iy.size, ix.size = 5, 6, 3, 2\n"
    "off = tensor([0.3, 2.7, 1.1, 4.9])\n"
    "y = (off[n] + p * 1.3 + iy * 0.45).clamp(max=10.5)\n"
    "x = (off[n] * 0.5 + q * 1.7 + ix * 0.8).clamp(max=12.5)\n"
    "yl = y.floor().long()\n"
    "xl = x.floor().long()\n"
    "wy = y - yl\n"
    "wx = x - xl\n"
    "v = img[n][c][yl][xl] * (1 - wy) * (1 - wx) + img[n][c][yl + 1][xl + 1] * wy * wx\n"
    "save(d + '/a', v.sum((iy, ix)).order(n, c, p, q))\n"
    "save(d + '/b', where(ix < (off[n] + 0.5).long(), v, 0).sum((iy, ix)).order(n, p, q, c))\n"
    "save(d + '/c', v.sum((iy, ix)).order(c, n, p, q))\n",
    /* chunks that span several loops (c, 16, is short): coordinates over (h) and (w) widened
     * to (h, w), taps gathered by rows of c (a run; strided through offsets in chw), stores in
     * another order than the chunk's, a result that does not vary along a loop of its chunk,
     * a bound that keeps n out of the chunk. Unhoisted, the chunk is c's alone. */
    "img = ((arange(3 * 20 * 24 * 16.0) * 0.013).sin()).reshape(3, 20, 24, 16)\n"
    "chw = ((arange(3 * 16 * 20 * 24.0) * 0.029).cos()).reshape(3, 16, 20, 24)\n"
    "n, h, w, c, k = dims(5)\n"
    "h.size, w.size, k.size = 5, 4, 3\n"
    "base = tensor([0.5, 7.25, 13.0])\n"
    "yy = (base[n] + h * 2.1 + k * 0.4).clamp(max=18.5)\n"
    "xx = (base[n] * 0.5 + w * 3.3).clamp(max=22.5)\n"
    "yl = yy.long()\n"
    "xl = xx.long()\n"
    "t1 = img[n][yl][xl][c] * (yy - yl) + img[n][yl + 1][xl][c] * (xx - xl)\n"
    "save(d + '/a', t1.sum(k).order(n, c, h, w))\n"
    "t2 = chw[n][c][yl][xl] * (1 - (yy - yl)) + chw[n][c][yl][-1 - xl] * xx\n"
    "save(d + '/b', t2.sum(k).order(n, h, w, c))\n"
    "save(d + '/c', xx.order(n, w)[:, None, :].expand(3, 5, 4).contiguous())\n"
    "save(d + '/e', (yl * 100 + xl + c + (yy > xx)).order(n, h, k, w, c))\n"
    "cnt = (base[n] * 0.2 + 1).ceil()\n"
    "save(d + '/f', where(k < cnt, where(yy > xx, t1, yy * c), 0).sum(k).order(n, w, h, c))\n",
    /* weighted rows (the CPU executor's steps of weighted rows): bilinear taps read by rows of
     * channels, each times a weight over the rows' (n, h, w), summed (the four terms in one
     * step, each weight a product computed in it: over (h) times over (w), the other way
     * round, and the weight of g's second term over (h, w) times over (h), not an outer
     * product); rows of 16 float32 and 12 float64 (whole vectors), of 20 float32 (element by
     * element), the weight on either side, and a product read by no sum. f: two sample loops
     * (one bounded), the coordinates over (h, k) kept across k2 and those over (w, k2) in a
     * table over k2 (wide values memoised). g: five terms, one more than a step takes (rows
     * over (h, w): n does not fit in the chunk), the image read as NCHW from channels_last
     * memory as roi_align reads it, the result stored NCHW from a chunk over (h, w, c20): a
     * transposing store (20 x 20: 8 x 8 blocks and edges).
     * Unhoisted, nothing spans, fuses or is memoised. */
    "img = ((arange(3 * 20 * 24 * 16.0) * 0.013).sin()).reshape(3, 20, 24, 16)\n"
    "img20 = ((arange(3 * 20 * 24 * 20.0) * 0.007).cos()).reshape(3, 20, 24, 20)\n"
    "n, h, w, c, c20, c12, k, k2 = dims(8)\n"
    "h.size, w.size, k.size, k2.size = 5, 4, 3, 2\n"
    "base = tensor([0.5, 7.25, 13.0])\n"
    "yy = (base[n] + h * 2.1 + k * 0.4).clamp(max=18.5)\n"
    "xx = (base[n] * 0.5 + w * 3.3).clamp(max=22.5)\n"
    "def taps(t, c, yy, xx):\n"
    "    yl = yy.long()\n"
    "    xl = xx.long()\n"
    "    wy = yy - yl\n"
    "    wx = xx - xl\n"
    "    return (t[n][yl][xl][c] * ((1 - wy) * (1 - wx)) + t[n][yl + 1][xl][c] * (wy * (1 - wx))\n"
    "            + ((1 - wy) * wx) * t[n][yl][xl + 1][c] + t[n][yl + 1][xl + 1][c] * (wy * wx))\n"
    "save(d + '/a', taps(img, c, yy, xx).sum(k).order(n, c, h, w))\n"
    "save(d + '/b', taps(img20, c20, yy, xx).sum(k).order(n, c20, h, w))\n"
    "save(d + '/c', taps(img.double()[..., :12].contiguous(), c12, yy, xx).sum(k).order(n, h, w, c12))\n"
    "save(d + '/e', (img[n][yy.long()][xx.long()][c] * ((yy - yy.long()) * xx)).sum(k).order(n, c, h, w))\n"
    "xk = (base[n] * 0.5 + w * 3.3 + k2 * 0.6).clamp(max=22.5)\n"
    "cnt = (base[n] * 0.2 + 1).ceil()\n"
    "save(d + '/f', where(k2 < cnt, taps(img, c, yy, xk), 0).sum((k, k2)).order(n, c, h, w))\n"
    "yl = yy.long()\n"
    "xl = xx.long()\n"
    "wy = yy - yl\n"
    "wx = xx - xl\n"
    "t = img20.permute(0, 3, 1, 2)[n][c20]\n"
    "g5 = (t[yl, xl] * (wx * (1 - wy)) + ((wy * wx) * wy) * t[yl + 1, xl + 1] + t[yl, xl + 1] * (wy * (1 - wx))\n"
    "      + t[yl + 1, xl] * ((1 - wy) * (1 - wx)) + (wx * wy) * t[yl, xl])\n"
    "g5 = g5.sum(k).order(n, c20, h, w)\n"
    "g5.stride()\n"
    "save(d + '/g', g5)\n",
    /* precomputed values (the CPU executor's tables, filled before the run): coordinates over
     * (n, p), one value per chunk of c, in a chain longer than the tables' budget, so that its
     * first steps are precomputed (a load over (p, n) among them) and the rest computed per
     * chunk from them; an integer floor division and remainder (which can fail) read them and
     * are never precomputed; b sums the chain over p up to a bound, precomputed past it too. */
    "feats = ((arange(50 * 32 * 9.0) * 0.07).sin()).reshape(50, 32, 9)\n"
    "n, c, p = dims(3)\n"
    "p.size = 14\n"
    "st = (arange(1000.0) * 0.37).sin() * 3 + 3\n"
    "adj = ((arange(14 * 1000.0) * 0.01).cos() * 0.2).reshape(14, 1000)\n"
    "adj.stride()\n"
    "y = st[n] + p * 0.4 + adj[p, n]\n"
    "for i in range(12):\n"
    "    y = where(y > 4.0, y * 0.75 + 0.5, (y + 0.3) * 1.1)\n"
    "yl = y.clamp(0, 7.5).long()\n"
    "b = (yl * 7 + n) // 3 % 50\n"
    "save(d + '/a', (feats[b][c][yl] * (y - yl)).order(n, p, c))\n"
    "cnt = (st[n] * 3).ceil()\n"
    "save(d + '/b', where(p < cnt, feats[b][c][yl + 1] * (y - yl), 0).sum(p).order(n, c))\n",
};

static const int flag_sets[] = {0, TDL_NO_FUSE, TDL_NO_HOIST, TDL_NO_BOUNDS,
                                TDL_NO_FUSE | TDL_NO_HOIST | TDL_NO_BOUNDS};
static const char *const outputs[] = {"a", "b", "c", "e", "f", "g"};

/* Runs program p with flags into dir; returns the kernel dump. The sums in PyTorch's orders are
 * the backend's, computed apart from the passes under test: every sum is fused here. */
static char *run(int p, int flags, const char *dir)
{
    Text dump = {0}, out = {0};
    tdl_config cfg = {0};
    cfg.flags = flags | TDL_DUMP_KERNELS | TDL_FUSED_SUMS;
    cfg.dump = append;
    cfg.dump_ud = &dump;
    cfg.write = append;
    cfg.write_ud = &out;
    tdl_interp *U = tdl_open(&cfg);
    ck_assert_ptr_nonnull(U);
    char head[512];
    snprintf(head, sizeof head, "d = '%.400s'\n", dir);
    ck_assert_int_eq(tdl_run_string(U, head, "<dir>"), TDL_OK);
    ck_assert_int_eq(tdl_run_string(U, prelude, "<prelude>"), TDL_OK);
    int st = tdl_run_string(U, programs[p], "<program>");
    ck_assert_msg(st == TDL_OK, "program %d flags %d: %s", p, flags, tdl_error_message(U));
    tdl_close(U);
    free(out.buf);
    return dump.buf ? dump.buf : strdup("");
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n + 4096 > cap) {
            cap = cap * 2 + 4096;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        size_t r = fread(buf + *n, 1, 4096, f);
        *n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    return buf;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *q = s; (q = strstr(q, what)); q++)
        n++;
    return n;
}

START_TEST(test_same_bits)
{
    int p = _i;
    char base[] = "/tmp/tdl-sched-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(base));
    char *dumps[5];
    char dirs[5][600];
    for (int f = 0; f < 5; f++) {
        snprintf(dirs[f], sizeof dirs[f], "%s/%d", base, f);
        ck_assert_int_eq(mkdir(dirs[f], 0700), 0);
        dumps[f] = run(p, flag_sets[f], dirs[f]);
    }
    int compared = 0;
    for (size_t o = 0; o < sizeof outputs / sizeof *outputs; o++) {
        char path[700];
        size_t n0, n1;
        snprintf(path, sizeof path, "%s/%s.npy", dirs[0], outputs[o]);
        char *want = slurp(path, &n0);
        if (!want)
            continue;
        for (int f = 1; f < 5; f++) {
            snprintf(path, sizeof path, "%.600s/%.32s.npy", dirs[f], outputs[o]);
            char *got = slurp(path, &n1);
            ck_assert_msg(got && n1 == n0 && memcmp(got, want, n0) == 0,
                          "program %d output %s: flags %d give other bits than all passes on", p,
                          outputs[o], flag_sets[f]);
            free(got);
        }
        compared++;
        for (int f = 0; f < 5; f++) {
            snprintf(path, sizeof path, "%.600s/%.32s.npy", dirs[f], outputs[o]);
            remove(path);
        }
        free(want);
    }
    ck_assert_int_ge(compared, 1);
    /* The passes happened with every pass on, and not with them off. */
    if (p == 0) {
        /* x once, then one kernel per result */
        ck_assert_msg(count(dumps[0], "kernel:") == 5, "softmax etc. fuse into one kernel each:\n%s", dumps[0]);
        ck_assert_int_gt(count(dumps[1], "kernel:"), 5);
        ck_assert_ptr_nonnull(strstr(dumps[0], "(hoisted)"));
    } else {
        ck_assert_msg(strstr(dumps[0], "(bound <") != NULL, "%s", dumps[0]);
        ck_assert_ptr_null(strstr(dumps[3], "(bound"));
    }
    if (p == 1)
        ck_assert_ptr_nonnull(strstr(dumps[0], "(bound <= r"));
    if (p == 2) {
        /* the coordinates do not vary along c: computed once per (n, k) */
        ck_assert_ptr_nonnull(strstr(dumps[0], "(hoisted)"));
        ck_assert_ptr_nonnull(strstr(dumps[2], ", unhoisted"));
        /* where(k < cnt, val, 0) under its bound is val: the mask is not computed */
        ck_assert_msg(count(dumps[0], "= where") < count(dumps[3], "= where"), "%s", dumps[0]);
    }
    for (int f = 0; f < 5; f++) {
        rmdir(dirs[f]);
        free(dumps[f]);
    }
    rmdir(base);
}
END_TEST

/* A reduction's loops follow its operand that varies along the most of them, not the first one
 * in the code: start[n] (over the rows) is loaded before img (rows x columns), so ordering by it
 * put the rows innermost, reading img down its columns and turning a per-row memo over at every
 * point (roi_align times its cotangent, summed: the box loop innermost). amax: a tensor's sum
 * (fc_sum) is computed apart, its operand stored first, in PyTorch's order (the dump says so), and
 * so are softmax's sums (fc_sum_ordered). */
START_TEST(reduce_loop_order)
{
    static const char prog[] = "start = (arange(40.0) * 0.3).sin()\n"
                               "img = ((arange(40 * 300.0) * 0.011).cos()).reshape(40, 300)\n"
                               "img.stride()\n"
                               "s = float((start[:, None] * img).amax())\n"
                               "s = float((start[:, None] * img).sum())\n";
    Text dump = {0};
    tdl_config cfg = {0};
    cfg.flags = TDL_DUMP_KERNELS;
    cfg.dump = append;
    cfg.dump_ud = &dump;
    tdl_interp *U = tdl_open(&cfg);
    ck_assert_ptr_nonnull(U);
    ck_assert_msg(tdl_run_string(U, prog, "<program>") == TDL_OK, "%s", tdl_error_message(U));
    tdl_close(U);
    ck_assert_ptr_nonnull(dump.buf);
    ck_assert_msg(strstr(dump.buf, "kernel: 2 loops [40r, 300r]") != NULL, "the rows are not outermost:\n%s", dump.buf);
    ck_assert_msg(strstr(dump.buf, "cascade sum float32 [40, 300] strides [300, 1] over dims [0, 1] -> float32") != NULL,
                  "%s", dump.buf);
    free(dump.buf);
    /* a sum of all of a big pointwise expression: its operand a tile at a time, never stored whole */
    dump = (Text){0};
    U = tdl_open(&cfg);
    ck_assert_ptr_nonnull(U);
    ck_assert_msg(tdl_run_string(U, "img = (arange(4096 * 1024.0) * 0.011).reshape(4096, 1024)\n"
                                    "s = float((img * 2 + 1).sum())\n", "<program>") == TDL_OK,
                  "%s", tdl_error_message(U));
    tdl_close(U);
    /* img's kernel, then the tiles' */
    ck_assert_msg(strstr(dump.buf, "kernel: 1 loops [1048576]") && count(dump.buf, "loops [4194304]") == 1 &&
                  strstr(dump.buf, "cascade sum float32 [4096, 1024] strides [1024, 1] over dims [0, 1]"),
                  "%s", dump.buf);
    free(dump.buf);
    /* softmax's sums: a row's in lanes, the gradient's of products by fma, a column's serially */
    dump = (Text){0};
    U = tdl_open(&cfg);
    ck_assert_ptr_nonnull(U);
    ck_assert_msg(tdl_run_string(U, "x = (arange(24.0) * 0.3).reshape(4, 6)\n"
                                    "x.requires_grad_()\n"
                                    "(x.softmax(1) * x.detach()).sum().backward()\n"
                                    "s = float(x.log_softmax(0).sum())\n", "<program>") == TDL_OK,
                  "%s", tdl_error_message(U));
    tdl_close(U);
    ck_assert_msg(strstr(dump.buf, "lanes sum float32 [4, 6] strides [6, 1] over dims [1] -> float32") &&
                  strstr(dump.buf, "lanes sum of products (fma) float32 [4, 6] strides [6, 1] over dims [1]") &&
                  strstr(dump.buf, "serial sum float32 [4, 6] strides [6, 1] over dims [0]"), "%s", dump.buf);
    free(dump.buf);
    /* var over a dim: Welford's m2 from the transposed tensor itself (not its squares), float64 */
    dump = (Text){0};
    U = tdl_open(&cfg);
    ck_assert_ptr_nonnull(U);
    ck_assert_msg(tdl_run_string(U, "x = (arange(24.0) * 0.3).reshape(4, 6)\n"
                                    "s = float(x.t().std(1).sum())\n", "<program>") == TDL_OK,
                  "%s", tdl_error_message(U));
    tdl_close(U);
    ck_assert_msg(strstr(dump.buf, "welford m2 float32 [6, 4] strides [1, 6] over dims [1] -> float64"), "%s", dump.buf);
    free(dump.buf);
}
END_TEST

/* The declared gradients (logsumexp's, var's, softmax's) with fusion off: their operand is read
 * only through reductions realised first, and its gradient still arrives (found by fuzz-torch:
 * None), with the same bits. */
START_TEST(declared_grads_unfused)
{
    static const char prog[] = "x = ((arange(8 * 30.0) * 0.37).sin() * 3).reshape(8, 30)\n"
                               "g = x.clone().requires_grad_()\n"
                               "(g.logsumexp(1) * x[:, 0]).sum().backward()\n"
                               "a = g.grad\n"
                               "g.grad = None\n"
                               "(g.var(1) * x[:, 1]).sum().backward()\n"
                               "b = g.grad\n"
                               "g.grad = None\n"
                               "(g.log_softmax(0) * x).sum().backward()\n"
                               "print(a.tolist(), b.tolist(), g.grad.tolist())\n";
    Text out[2] = {{0}};
    for (int f = 0; f < 2; f++) {
        tdl_config cfg = {0};
        cfg.flags = f ? TDL_NO_FUSE : 0;
        cfg.write = append;
        cfg.write_ud = &out[f];
        tdl_interp *U = tdl_open(&cfg);
        ck_assert_ptr_nonnull(U);
        ck_assert_msg(tdl_run_string(U, prog, "<program>") == TDL_OK, "%s", tdl_error_message(U));
        tdl_close(U);
        ck_assert_ptr_nonnull(out[f].buf);
    }
    ck_assert_msg(strstr(out[0].buf, "None") == NULL && strcmp(out[0].buf, out[1].buf) == 0, "fused:\n%s\nunfused:\n%s",
                  out[0].buf, out[1].buf);
    free(out[0].buf);
    free(out[1].buf);
}
END_TEST

Suite *schedule_suite(void)
{
    Suite *s = suite_create("schedule");
    TCase *tc = tcase_create("passes");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_same_bits, 0, (int)(sizeof programs / sizeof *programs));
    tcase_add_test(tc, reduce_loop_order);
    tcase_add_test(tc, declared_grads_unfused);
    suite_add_tcase(s, tc);
    return s;
}
