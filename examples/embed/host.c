/* host.c — a C program that embeds tdl (docs/embedding.md walks through it).
 *
 * It lends tdl an image it owns (no copy), defines a tdl function of its own (box_mean: the mean
 * of the image over boxes, loop-free), registers a C function that tdl code calls, reads the
 * results straight from tdl's memory, checks them against plain C, shows what an error looks
 * like, and finally calls the standard library's vision.roi_align on the same buffers when the
 * installed tdl has it.
 *
 * Build against an installed tdl:  cc -o host host.c $(pkg-config --cflags --libs tdl)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <tdl.h>

enum { H = 8, W = 8, K = 2 };

static const char *const program =
    "def box_mean(img, boxes):\n"
    "    # mean of img[y0:y1, x0:x1] for each box (x0, y0, x1, y1), as one fused expression\n"
    "    ys = arange(img.shape[0]).reshape(1, -1, 1)\n"
    "    xs = arange(img.shape[1]).reshape(1, 1, -1)\n"
    "    b = boxes.reshape(-1, 4, 1, 1)\n"
    "    inside = (xs >= b[:, 0]) & (xs < b[:, 2]) & (ys >= b[:, 1]) & (ys < b[:, 3])\n"
    "    area = inside.sum((1, 2))\n"
    "    host_note('box areas', area)\n"
    "    return where(inside, img, 0.0).sum((1, 2)) / area\n";

/* host_note(what: str, t: tensor): called from tdl; prints an int64 tensor from C. */
static tdl_status host_note(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    const char *what;
    tdl_tensor_info t;
    if (tdl_to_str(T, args[0], &what, NULL) != TDL_OK) return TDL_ERROR;
    if (tdl_tensor_read(T, args[1], TDL_DTYPE_INT64, &t) != TDL_OK) return TDL_ERROR;
    (void)nargs, (void)result;  /* always 2 (the signature says so); *result left NULL: None */
    printf("%s:", what);
    for (int64_t k = 0; k < t.numel; k++) printf(" %lld", (long long)((const int64_t *)t.data)[k * t.strides[0]]);
    printf("\n");
    ++*(int *)ud;
    return TDL_OK;
}

static void image_freed(void *ud, void *data)
{
    (void)ud, (void)data;
    printf("tdl released the image\n");
}

static int fail(tdl_interp *T, const char *what)
{
    fprintf(stderr, "%s failed:\n%s", what, tdl_error_report(T));
    tdl_close(T);
    return 1;
}

/* vision.roi_align on the image, when the installed stdlib has it. The image is linear in y and
 * x, so each output bin is the image's value at the bin's center: easy to check. */
static int roi_align(tdl_interp *T, tdl_value *img4)
{
    float rois[K][5] = {{0, 1, 1, 5, 5}, {0, 2, 0, 6, 4}};     /* batch index, x1, y1, x2, y2 */
    int64_t rshape[] = {K, 5};
    tdl_value *boxes, *size, *out, *two;
    if (tdl_tensor_from_host(T, TDL_DTYPE_FLOAT32, 2, rshape, NULL, rois, &boxes) != TDL_OK) return fail(T, "boxes");
    tdl_int(T, 2, &two);
    tdl_value *pair[] = {two, two};
    tdl_tuple(T, 2, pair, &size);
    tdl_value *args[] = {img4, boxes, size};
    const char *kw[] = {"sampling_ratio"};
    tdl_status st = tdl_call_name(T, "vision.roi_align", 3, args, 1, kw, &two, &out);
    tdl_value_free(boxes);
    tdl_value_free(size);
    tdl_value_free(two);
    if (st != TDL_OK && tdl_error_kind_of(T) == TDL_ERR_IMPORT) {
        printf("vision.roi_align: not in this tdl's stdlib\n");
        return 0;
    }
    if (st != TDL_OK) return fail(T, "vision.roi_align");
    tdl_tensor_info r;
    if (tdl_tensor_read(T, out, TDL_DTYPE_FLOAT32, &r) != TDL_OK) return fail(T, "reading roi_align");
    double worst = 0;
    for (int k = 0; k < K; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                double cy = rois[k][2] + (i + 0.5) * (rois[k][4] - rois[k][2]) / 2;
                double cx = rois[k][1] + (j + 0.5) * (rois[k][3] - rois[k][1]) / 2;
                float got = ((const float *)r.data)[k * r.strides[0] + i * r.strides[2] + j * r.strides[3]];
                worst = fmax(worst, fabs(got - (10 * cy + cx)));
            }
    printf("vision.roi_align: output [%lld, %lld, %lld, %lld], %s\n", (long long)r.shape[0], (long long)r.shape[1],
           (long long)r.shape[2], (long long)r.shape[3], worst < 1e-4 ? "matches C" : "DIFFERS from C");
    tdl_value_free(out);
    return worst < 1e-4 ? 0 : 1;
}

int main(void)
{
    tdl_config cfg = {.size = sizeof cfg};  /* size: which members this host's tdl.h has */
    cfg.flags = TDL_NO_FILES;           /* this host's scripts have no business with files */
    cfg.max_memory = 64 << 20;          /* and 64 MiB is plenty for them */
    tdl_interp *T = tdl_open(&cfg);
    if (!T) return 1;

    /* The host's own buffers: an image (lent to tdl) and boxes (copied). */
    float *image = malloc(H * W * sizeof *image);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) image[y * W + x] = (float)(10 * y + x);
    int64_t boxes[K][4] = {{1, 1, 3, 3}, {0, 2, 8, 5}};

    int notes = 0;
    if (tdl_register(T, "host_note", "what: str, t: tensor", host_note, &notes) != TDL_OK) return fail(T, "register");
    if (tdl_run_string(T, program, "<host>") != TDL_OK) return fail(T, "the program");

    int64_t ishape[] = {H, W}, bshape[] = {K, 4};
    tdl_value *img, *bx, *mean;
    if (tdl_tensor_borrow(T, TDL_DTYPE_FLOAT32, 2, ishape, NULL, image, image_freed, NULL, &img) != TDL_OK)
        return fail(T, "borrowing the image");
    if (tdl_tensor_from_host(T, TDL_DTYPE_INT64, 2, bshape, NULL, boxes, &bx) != TDL_OK) return fail(T, "boxes");

    tdl_value *args[] = {img, bx};
    if (tdl_call_name(T, "box_mean", 2, args, 0, NULL, NULL, &mean) != TDL_OK) return fail(T, "box_mean");
    tdl_tensor_info m;
    if (tdl_tensor_read(T, mean, TDL_DTYPE_FLOAT32, &m) != TDL_OK) return fail(T, "reading the result");
    for (int k = 0; k < K; k++) {
        double sum = 0;
        int n = 0;
        for (int64_t y = boxes[k][1]; y < boxes[k][3]; y++)
            for (int64_t x = boxes[k][0]; x < boxes[k][2]; x++) sum += image[y * W + x], n++;
        float got = ((const float *)m.data)[k * m.strides[0]];
        printf("box %d: tdl %.4f, C %.4f\n", k, got, sum / n);
    }
    printf("host_note was called %d time(s)\n", notes);

    /* Errors come back as a status, with a kind, a message and a report. */
    tdl_value *wrong[] = {bx, img};
    if (tdl_call_name(T, "box_mean", 1, wrong, 0, NULL, NULL, NULL) == TDL_ERROR)
        printf("expected error: %s: %s\n", tdl_error_kind_name(tdl_error_kind_of(T)), tdl_error_message(T));

    /* vision.roi_align takes NCHW: a 1x1xHxW view of the same borrowed image. */
    int64_t shape4[] = {1, 1, H, W};
    tdl_value *img4;
    int rc = 1;
    if (tdl_tensor_borrow(T, TDL_DTYPE_FLOAT32, 4, shape4, NULL, image, NULL, NULL, &img4) == TDL_OK) {
        rc = roi_align(T, img4);
        tdl_value_free(img4);
    }
    if (rc != 0) return rc;

    tdl_value_free(mean);
    tdl_value_free(bx);
    tdl_value_free(img);        /* the last reference: image_freed runs here */
    tdl_close(T);
    free(image);
    return 0;
}
