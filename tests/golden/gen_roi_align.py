#!/usr/bin/python3
"""gen_roi_align.py: writes tests/golden/roi_align/, torchvision's roi_align on small inputs, which
tdl's vision.roi_align (stdlib/vision.tdl) must match (tests/test_vision.c); with --check, runs a
tdl binary on every case and prints its worst errors.

Run from the repository root with the Debian python3 (torch and torchvision):
    /usr/bin/python3 tests/golden/gen_roi_align.py                write the golden files
    /usr/bin/python3 tests/golden/gen_roi_align.py --check TDL    compare TDL's results (nothing
                                                                  is written; exit 1 on a failure)

The folder holds inputs (in_*.npy: N x C x H x W, standard normal), boxes (CASE.boxes.npy: K x 5
rows (batch index, x1, y1, x2, y2) of the input's dtype; or CASE.boxes0.npy, CASE.boxes1.npy, ...:
one K_i x 4 tensor per image, the list form torchvision also takes), torchvision's results
(CASE.out.npy: K x C x ph x pw) and cases.txt, one case per line, tab-separated:

    name  dtype  output_size  spatial_scale  sampling_ratio  aligned  input  boxes  output

output_size and spatial_scale are tdl literals ("(3, 5)", "7", "0.0625"), aligned is True or False,
boxes is one file or a list "[a.npy, b.npy]" (the list form). Files are relative to the folder.

Agreement (the rule the C test applies): |tdl - torch| <= tol * (|torch| + amax(|input|)),
elementwise, tol 1e-5 for float32 and 1e-12 for float64. Each output is a weighted mean of input
values (weights in [0, 1] summing to at most 1), so amax(|input|) is the size of its terms: the
absolute part covers results that cancel to near zero, where a purely relative bound means nothing.
--check also prints the largest plain relative error |a - b| / |b| over elements with
|b| >= 1e-3 * amax(|input|).

Coverage: aligned on and off; sampling_ratio -1, 0 (both adaptive) and 1, 2, 3; spatial_scale 1,
0.5, 0.25, 1/16; outputs 1x1 to 14x14, non-square ((3, 5), (5, 3)) and an int; several images with
boxes on each batch index in any order; boxes partly and wholly outside the image (y < -1, y >
height, x likewise) and samples exactly on -1, 0, height - 1 and height; zero-size and inverted
boxes; boxes much larger than the image (an adaptive grid larger than the image); K = 0; non-square
images; 256 channels; float32 and float64; the list-of-boxes form, with an image that has none.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision
from torchvision.ops import roi_align

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "roi_align")
TOL = {"float32": 1e-5, "float64": 1e-12}
rng = np.random.default_rng(20240907)

# The inputs: name -> (dtype, N, C, H, W).
INPUTS = {
    "a32": ("float32", 2, 3, 12, 16),
    "a64": ("float64", 2, 3, 12, 16),
    "b32": ("float32", 1, 4, 10, 10),
    "c32": ("float32", 3, 2, 9, 13),
    "c64": ("float64", 3, 2, 9, 13),
    "e64": ("float64", 2, 5, 16, 11),
    "ch256": ("float32", 1, 256, 6, 8),
}


def make_inputs():
    return {k: rng.standard_normal((n, c, h, w)).astype(dt) for k, (dt, n, c, h, w) in INPUTS.items()}


# ---- boxes, in image coordinates (feature coordinates / spatial_scale) ----

def random_boxes(k, n, h, w, scale, margin=0.1):
    """k boxes mostly inside an h x w feature map seen at `scale`, on random images of n."""
    H, W = h / scale, w / scale
    x1 = rng.uniform(-margin * W, 0.8 * W, k)
    y1 = rng.uniform(-margin * H, 0.8 * H, k)
    x2 = x1 + rng.uniform(0.05 * W, 0.7 * W, k)
    y2 = y1 + rng.uniform(0.05 * H, 0.7 * H, k)
    b = rng.integers(0, n, k)
    return np.stack([b, x1, y1, x2, y2], 1)


def partly_outside(n, h, w, scale):
    H, W = h / scale, w / scale
    rows = [
        (0, -0.3 * W, 0.2 * H, 0.4 * W, 0.6 * H),      # left edge
        (n - 1, 0.6 * W, -0.4 * H, 1.3 * W, 0.5 * H),  # top right corner
        (0, 0.1 * W, 0.7 * H, 0.5 * W, 1.6 * H),       # bottom
        (n - 1, -0.5 * W, -0.5 * H, 1.5 * W, 1.5 * H), # around the whole image
        (0, 0.9 * W, 0.9 * H, 1.2 * W, 1.1 * H),       # bottom right corner, mostly out
        (n - 1, -1.5 / scale, 2.0 / scale, 3.0 / scale, 5.0 / scale),  # straddles x = -1
    ]
    return np.array(rows, float)


def wholly_outside(n, h, w, scale):
    H, W = h / scale, w / scale
    rows = [
        (0, 0.2 * W, -6.0 / scale, 0.6 * W, -1.5 / scale),     # above: y < -1
        (n - 1, 0.2 * W, H + 1.2 / scale, 0.6 * W, H + 5.0 / scale),  # below: y > height
        (0, -7.0 / scale, 0.2 * H, -1.2 / scale, 0.7 * H),     # left: x < -1
        (n - 1, W + 1.5 / scale, 0.1 * H, W + 4.0 / scale, 0.5 * H),  # right: x > width
        (0, -5.0 / scale, -5.0 / scale, -1.1 / scale, -1.1 / scale),  # above left
        (n - 1, 0.3 * W, -0.99 / scale, 0.5 * W, -0.2 / scale),  # just inside y = -1
    ]
    return np.array(rows, float)


def zero_size(n, h, w, scale):
    H, W = h / scale, w / scale
    rows = [
        (0, 0.3 * W, 0.4 * H, 0.3 * W, 0.4 * H),       # a point
        (n - 1, 0.2 * W, 0.5 * H, 0.7 * W, 0.5 * H),   # zero height
        (0, 0.5 * W, 0.1 * H, 0.5 * W, 0.8 * H),       # zero width
        (n - 1, 0.0, 0.0, 0.0, 0.0),                   # the origin
        (0, W, H, W, H),                               # the far corner
    ]
    return np.array(rows, float)


def inverted(n, h, w, scale, both_only=False):
    """Boxes with x2 < x1 or y2 < y1. both_only: only those inverted in both axes or in none
    (torchvision's CPU kernel fails on the others when aligned and adaptive: its grid
    ceil(roi / bins) is negative in one axis only, and it sizes a vector by the product)."""
    H, W = h / scale, w / scale
    rows = [
        (0, 0.7 * W, 0.2 * H, 0.2 * W, 0.6 * H),       # x2 < x1
        (n - 1, 0.2 * W, 0.8 * H, 0.6 * W, 0.3 * H),   # y2 < y1
        (0, 0.9 * W, 0.9 * H, 0.1 * W, 0.1 * H),       # both
        (n - 1, 0.5 * W, 0.5 * H, 0.5 * W - 0.4 / scale, 0.5 * H - 0.3 / scale),  # slightly
    ]
    return np.array(rows[2:] if both_only else rows, float)


def big(n, h, w, scale):
    """Boxes many times the image: the adaptive grid (ceil(roi / bins)) exceeds the image's size."""
    H, W = h / scale, w / scale
    rows = [
        (0, -3.0 * W, -2.0 * H, 4.0 * W, 3.0 * H),
        (n - 1, -0.5 * W, 0.1 * H, 0.5 * W, 5.0 * H),
        (0, 0.2 * W, -4.0 * H, 6.0 * W, 0.9 * H),
    ]
    return np.array(rows, float)


def edge_samples(n, h, w):
    """With spatial_scale 1, aligned False, sampling_ratio 1 and a 1x1 output, the one sample is the
    box's centre: these put it exactly on -1, 0, height - 1, height (and x likewise), and just
    past -1 and height, where torchvision's inclusive bounds decide."""
    rows = []
    for i, (y, x) in enumerate([(-1, 3), (0, 3), (h - 1, 3), (h, 3), (3, -1), (3, 0), (3, w - 1),
                                (3, w), (-1, -1), (h, w), (-1.0625, 3), (h + 0.0625, 3), (3, w + 0.0625)]):
        rows.append((i % n, x - 1.0, y - 1.0, x + 1.0, y + 1.0))
    return np.array(rows, float)


def mixed(n, h, w, scale):
    return np.concatenate([random_boxes(3, n, h, w, scale), partly_outside(n, h, w, scale)[:2],
                           wholly_outside(n, h, w, scale)[:2], zero_size(n, h, w, scale)[:2],
                           inverted(n, h, w, scale, both_only=True)])


# ---- the cases ----

def cases():
    """(name, input, boxes (K x 5, image coordinates), output_size, spatial_scale, sampling_ratio,
    aligned, list_form)."""
    out = []

    def add(name, inp, boxes, osz, ss=1.0, sr=-1, al=False, as_list=False):
        out.append((name, inp, boxes, osz, ss, sr, al, as_list))

    def shape(inp):
        return INPUTS[inp][1], INPUTS[inp][3], INPUTS[inp][4]

    n, h, w = shape("a32")
    add("basic", "a32", random_boxes(6, n, h, w, 1.0), (2, 2))
    add("basic_aligned", "a32", random_boxes(6, n, h, w, 1.0), (2, 2), al=True)
    add("sr0", "a32", random_boxes(5, n, h, w, 1.0), (3, 3), sr=0)
    add("sr0_aligned", "a32", random_boxes(5, n, h, w, 1.0), (3, 3), sr=0, al=True)
    add("sr1", "a32", random_boxes(5, n, h, w, 1.0), (4, 4), sr=1)
    add("sr1_aligned", "a32", random_boxes(5, n, h, w, 1.0), (4, 4), sr=1, al=True)
    add("sr2_aligned", "a32", random_boxes(5, n, h, w, 1.0), (5, 5), sr=2, al=True)
    add("sr3", "a32", random_boxes(5, n, h, w, 1.0), (7, 7), sr=3)
    add("scale_half", "a32", random_boxes(5, n, h, w, 0.5), (3, 3), ss=0.5, sr=2, al=True)
    add("scale_half_adaptive", "a32", random_boxes(5, n, h, w, 0.5), (2, 3), ss=0.5)
    add("scale_quarter", "a32", random_boxes(5, n, h, w, 0.25), (3, 3), ss=0.25)
    add("scale_quarter_aligned", "a32", random_boxes(5, n, h, w, 0.25), (4, 4), ss=0.25, sr=1, al=True)
    add("scale_16", "a32", random_boxes(5, n, h, w, 1 / 16), (3, 3), ss=1 / 16, sr=0, al=True)
    add("scale_16_sr2", "a32", random_boxes(5, n, h, w, 1 / 16), (2, 2), ss=1 / 16, sr=2)
    add("out_1x1", "a32", random_boxes(6, n, h, w, 1.0), (1, 1))
    add("out_1x1_aligned_sr2", "a32", random_boxes(6, n, h, w, 1.0), (1, 1), sr=2, al=True)
    add("out_14x14", "a32", random_boxes(3, n, h, w, 1.0), (14, 14), al=True)
    add("out_14x14_sr2", "a32", random_boxes(3, n, h, w, 1.0), (14, 14), sr=2)
    add("out_3x5", "a32", random_boxes(5, n, h, w, 1.0), (3, 5))
    add("out_5x3_aligned_sr1", "a32", random_boxes(5, n, h, w, 1.0), (5, 3), sr=1, al=True)
    add("out_int", "a32", random_boxes(4, n, h, w, 1.0), 4)
    add("out_int7_aligned_sr2", "a32", random_boxes(4, n, h, w, 1.0), 7, sr=2, al=True)
    add("outside_partly", "a32", partly_outside(n, h, w, 1.0), (3, 3))
    add("outside_partly_aligned_sr2", "a32", partly_outside(n, h, w, 0.5), (3, 3), ss=0.5, sr=2, al=True)
    add("outside_whole_aligned", "a32", wholly_outside(n, h, w, 1.0), (2, 2), al=True)
    add("outside_whole_sr2", "a32", wholly_outside(n, h, w, 0.25), (3, 2), ss=0.25, sr=2)
    add("zero_size", "a32", zero_size(n, h, w, 1.0), (2, 2))
    add("zero_size_aligned", "a32", zero_size(n, h, w, 1.0), (2, 2), al=True)
    add("zero_size_aligned_sr2", "a32", zero_size(n, h, w, 1.0), (2, 2), sr=2, al=True)
    add("inverted", "a32", inverted(n, h, w, 1.0), (2, 2))
    add("inverted_aligned", "a32", inverted(n, h, w, 1.0, both_only=True), (2, 2), al=True)
    add("inverted_aligned_sr2", "a32", inverted(n, h, w, 1.0), (3, 2), sr=2, al=True)
    add("big_adaptive", "a32", big(n, h, w, 1.0), (1, 1))
    add("big_adaptive_aligned", "a32", big(n, h, w, 0.5), (2, 1), ss=0.5, al=True)
    add("edges", "a32", edge_samples(n, h, w), (1, 1), sr=1)
    add("empty", "a32", np.zeros((0, 5)), (7, 7))
    add("empty_aligned_int", "a32", np.zeros((0, 5)), 3, sr=2, al=True)
    add("list", "a32", random_boxes(5, n, h, w, 1.0), (3, 3), sr=2, as_list=True)
    add("list_aligned", "a32", random_boxes(4, n, h, w, 0.5), (2, 2), ss=0.5, al=True, as_list=True)
    n, h, w = shape("b32")
    add("square_sr3_aligned", "b32", random_boxes(5, n, h, w, 1.0), (3, 3), sr=3, al=True)
    add("square_mixed", "b32", mixed(n, h, w, 1.0), (2, 2), sr=0)
    n, h, w = shape("c32")
    add("three_images", "c32", random_boxes(8, n, h, w, 1.0), (3, 3), sr=2)
    add("three_images_aligned", "c32", random_boxes(8, n, h, w, 0.5), (2, 4), ss=0.5, al=True)
    add("three_images_list", "c32", np.concatenate([random_boxes(2, 1, h, w, 1.0) + [i, 0, 0, 0, 0]
                                                    for i in (0, 2)]),
        (2, 2), sr=2, as_list=True)   # image 1 has no boxes: its tensor is 0 x 4
    n, h, w = shape("ch256")
    add("ch256", "ch256", random_boxes(3, n, h, w, 0.5), (7, 7), ss=0.5, sr=2, al=True)

    # float64
    n, h, w = shape("a64")
    add("f64_basic", "a64", random_boxes(6, n, h, w, 1.0), (2, 2))
    add("f64_sr0_aligned_3x5", "a64", random_boxes(5, n, h, w, 1.0), (3, 5), sr=0, al=True)
    add("f64_scale_quarter_sr2", "a64", random_boxes(5, n, h, w, 0.25), (3, 3), ss=0.25, sr=2)
    add("f64_scale_16_aligned", "a64", random_boxes(5, n, h, w, 1 / 16), (2, 2), ss=1 / 16, al=True)
    add("f64_scale_half_sr1", "a64", random_boxes(5, n, h, w, 0.5), (4, 3), ss=0.5, sr=1)
    add("f64_mixed_aligned", "a64", mixed(n, h, w, 1.0), (2, 2), al=True)
    add("f64_mixed_sr2", "a64", mixed(n, h, w, 0.5), (3, 3), ss=0.5, sr=2)
    add("f64_14x14_sr3", "a64", random_boxes(2, n, h, w, 1.0), (14, 14), sr=3)
    add("f64_out_1x1", "a64", random_boxes(4, n, h, w, 1.0), (1, 1), al=True)
    add("f64_int", "a64", random_boxes(4, n, h, w, 1.0), 2, sr=2)
    add("f64_big_adaptive", "a64", big(n, h, w, 1.0), (1, 2))
    add("f64_edges", "a64", edge_samples(n, h, w), (1, 1), sr=1)
    add("f64_empty", "a64", np.zeros((0, 5)), (2, 2), al=True)
    add("f64_list", "a64", random_boxes(5, n, h, w, 1.0), (2, 2), as_list=True)
    n, h, w = shape("c64")
    add("f64_three_images", "c64", random_boxes(8, n, h, w, 1.0), (3, 3), sr=2, al=True)
    n, h, w = shape("e64")
    add("f64_tall", "e64", random_boxes(6, n, h, w, 1.0), (3, 3))
    add("f64_tall_outside_sr2", "e64", np.concatenate([partly_outside(n, h, w, 0.25),
                                                        wholly_outside(n, h, w, 0.25)]),
        (2, 3), ss=0.25, sr=2, al=True)
    return out


def lit(v):
    """v as a tdl literal."""
    if isinstance(v, tuple):
        return "(%s)" % ", ".join(lit(x) for x in v)
    return repr(v)


def build(inputs):
    """Each case's files (name -> array) and manifest line, and torchvision's result."""
    for name, inp, boxes, osz, ss, sr, al, as_list in cases():
        x = inputs[inp]
        n = x.shape[0]
        boxes = boxes.astype(x.dtype)
        files = {}
        if as_list:
            per = [boxes[boxes[:, 0] == i, 1:] for i in range(n)]
            y = roi_align(torch.from_numpy(x), [torch.from_numpy(np.ascontiguousarray(b)) for b in per],
                          osz, ss, sr, al)
            names = []
            for i, b in enumerate(per):
                names.append("%s.boxes%d.npy" % (name, i))
                files[names[-1]] = np.ascontiguousarray(b)
            boxes_field = "[%s]" % ", ".join(names)
        else:
            y = roi_align(torch.from_numpy(x), torch.from_numpy(boxes), osz, ss, sr, al)
            boxes_field = "%s.boxes.npy" % name
            files[boxes_field] = boxes
        y = y.numpy()
        files["%s.out.npy" % name] = y
        line = "\t".join([name, str(x.dtype), lit(osz), lit(float(ss)), str(sr), str(al), "in_%s.npy" % inp,
                          boxes_field, "%s.out.npy" % name])
        yield name, inp, files, line, y


HEADER = """# generated by tests/golden/gen_roi_align.py from torch %s, torchvision %s; do not edit
# name\tdtype\toutput_size\tspatial_scale\tsampling_ratio\taligned\tinput\tboxes\toutput
"""


def write():
    inputs = make_inputs()
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    for k, x in inputs.items():
        np.save(os.path.join(OUT, "in_%s.npy" % k), x)
    lines = []
    for name, inp, files, line, y in build(inputs):
        for f, a in files.items():
            np.save(os.path.join(OUT, f), a)
        lines.append(line)
    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write(HEADER % (torch.__version__, torchvision.__version__))
        f.write("\n".join(lines) + "\n")
    size = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print("%d cases, %d files, %d bytes in %s" % (len(lines), len(os.listdir(OUT)), size, OUT))


def read_cases():
    with open(os.path.join(OUT, "cases.txt")) as f:
        return [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]


def check(tdl):
    """Runs tdl on each case (one process per case) and compares with the committed results."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, TDL_PATH=os.path.join(root, "stdlib"))
    worst = {"float32": [0.0, 0.0, "", 0, 0], "float64": [0.0, 0.0, "", 0, 0]}
    failed = 0
    tmp = tempfile.mkdtemp()
    try:
        for name, dt, osz, ss, sr, al, inp, boxes, outf in read_cases():
            d = lambda f: repr(os.path.join(OUT, f))
            if boxes.startswith("["):
                bexpr = "[%s]" % ", ".join("load(%s)" % d(f.strip()) for f in boxes[1:-1].split(","))
            else:
                bexpr = "load(%s)" % d(boxes)
            res = os.path.join(tmp, name + ".npy")
            prog = ("import vision\nx = load(%s)\nb = %s\n"
                    "y = vision.roi_align(x, b, %s, spatial_scale=%s, sampling_ratio=%s, aligned=%s)\n"
                    "save(%r, y)\n" % (d(inp), bexpr, osz, ss, sr, al, res))
            src = os.path.join(tmp, name + ".tdl")
            with open(src, "w") as f:
                f.write(prog)
            r = subprocess.run([tdl, src], env=env, capture_output=True, text=True)
            if r.returncode != 0:
                failed += 1
                err = [l for l in r.stderr.splitlines() if l.strip()]
                print("FAIL %s: %s" % (name, err[-1] if err else "exit %d" % r.returncode))
                continue
            a = np.load(res)
            b = np.load(os.path.join(OUT, outf))
            x = np.load(os.path.join(OUT, inp))
            if a.shape != b.shape or a.dtype != b.dtype:
                failed += 1
                print("FAIL %s: got %s %s, want %s %s" % (name, a.dtype, a.shape, b.dtype, b.shape))
                continue
            if b.size == 0:
                continue
            amax = float(np.abs(x).max())
            diff = np.abs(a.astype(np.float64) - b)
            mixed = float((diff / (np.abs(b) + amax)).max())
            big = np.abs(b) >= 1e-3 * amax
            rel = float((diff[big] / np.abs(b[big])).max()) if big.any() else 0.0
            if not mixed <= TOL[dt]:
                failed += 1
                i = np.unravel_index(np.argmax(diff / (np.abs(b) + amax)), b.shape)
                print("FAIL %s: error %.3g at %s: tdl %.17g, torchvision %.17g" % (name, mixed, i, a[i], b[i]))
                continue
            w = worst[dt]
            if mixed > w[0]:
                w[0], w[2] = mixed, name
            w[1] = max(w[1], rel)
            w[3] += int((diff > TOL[dt] * np.maximum(np.abs(b), 1e-30)).sum())
            w[4] += b.size
    finally:
        shutil.rmtree(tmp)
    for dt, (mixed, rel, name, nrel, n) in worst.items():
        print("%s, cases that pass: worst |a - b| / (|b| + amax|x|) %.3g (%s); "
              "worst |a - b| / |b| where |b| >= 1e-3 amax|x|: %.3g; "
              "%d of %d elements have |a - b| > %g |b|"
              % (dt, mixed, name or "-", rel, nrel, n, TOL[dt]))
    print("%d cases, %d failed" % (len(read_cases()), failed))
    return failed == 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        sys.exit(0 if check(os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "build/tdl")) else 1)
    write()
