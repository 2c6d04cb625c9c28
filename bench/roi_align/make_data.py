#!/usr/bin/python3
"""make_data.py — writes the inputs of bench/roi_align.sh into DIR, the reference results and the
bytes each workload must move.

usage: python3 make_data.py DIR

Workloads (float32; boxes are K x 5 rows (batch index, x1, y1, x2, y2) in image coordinates):
    small     x_small: 1 x 16 x 32 x 32, standard normal (seed 0); 32 boxes with sides 2..24 px
              inside the image (seed 1); output 7x7, spatial_scale 1, sampling_ratio 2, aligned False
    maskrcnn  x_big: 2 x 256 x 200 x 304, standard normal (seed 2), the P2 level of Mask R-CNN's
              FPN on an 800 x 1216 image; 512 boxes over the image with sides 16..256 px
              (log-uniform, seed 3), on both images; output 7x7, spatial_scale 0.25,
              sampling_ratio 2, aligned True
    adaptive  as maskrcnn with sampling_ratio 0 (ceil(roi / bins) samples per bin) and output 14x14
(maskrcnn_cl is maskrcnn on x_big laid out channels_last: the same numbers.)

Files:
    x_small.npy, x_big.npy, boxes_small.npy, boxes_big.npy
    wk_W.npy, wc_W.npy, wp_W.npy, wq_W.npy   float64 standard normal weights of workload W's
             checksum sum_kcpq y[k, c, p, q] wk[k] wc[c] wp[p] wq[q]
    ref.txt  one line per workload, "NAME Y SCALE IN_TAPS IN_ALL OUT_BYTES":
             Y      the checksum of the reference result, computed here with numpy as
                    torchvision computes it: the sample coordinates in float32 (each operation
                    rounded, in torchvision's order), the bilinear weights, their means and the
                    sums in double from the float32 inputs (each box's result is Ay x[b] Ax^T,
                    bilinear sampling being separable in y and x)
             SCALE  the 2-norm of its terms, the size by which a value in a wrong place moves it
             IN_TAPS  distinct input elements (n, c, y, x) read by a tap with nonzero weight of a
                    sample inside the image, over all samples of all boxes: what any implementation
                    must read (the memory bound counts these, 4 bytes each)
             IN_ALL distinct elements under any of the four taps of an inside sample, weight zero
                    or not (what a kernel that always reads four taps touches)
             OUT_BYTES  the result's bytes (K x C x ph x pw x 4)
Coordinates are float32 in the reference because they are in the implementations: in double,
a sample moves by up to ~1e-5 px, and with O(1) input gradients the checksum by ~1e-5 of its
scale; with the implementations' coordinates it differs from theirs by ~1e-7 (the rounding of
the values alone), and roi_align.sh's tolerance is 1e-5."""
import os
import sys

import numpy as np

WORKLOADS = {
    # name: (input, boxes, output_size, spatial_scale, sampling_ratio, aligned)
    "small": ("small", "small", 7, 1.0, 2, False),
    "maskrcnn": ("big", "big", 7, 0.25, 2, True),
    "adaptive": ("big", "big", 14, 0.25, 0, True),
}


def rng(seed):
    return np.random.default_rng(seed)


def boxes(seed, k, n, height, width, lo, hi, log):
    """k boxes inside a height x width image with sides in [lo, hi], on images 0..n-1."""
    r = rng(seed)
    if log:
        w = np.exp(r.uniform(np.log(lo), np.log(hi), k))
        h = np.exp(r.uniform(np.log(lo), np.log(hi), k))
    else:
        w = r.uniform(lo, hi, k)
        h = r.uniform(lo, hi, k)
    x1 = r.uniform(0, width - w)
    y1 = r.uniform(0, height - h)
    b = r.integers(0, n, k)
    return np.stack([b, x1, y1, x1 + w, y1 + h], 1).astype(np.float32)


def axis(start, size_roi, bins, ratio, length):
    """torchvision's sampling along one axis of one box, in double: the (bins x length) matrix A
    with A[p, i] the weight of input row i in bin p (the mean over the bin's samples of their
    bilinear weights; zero for samples outside [-1, length]), and the taps that any inside sample
    reads whatever their weight (a bool mask over the length)."""
    f = np.float32
    bin_size = f(size_roi) / f(bins)
    grid = ratio if ratio > 0 else int(np.ceil(bin_size))
    a = np.zeros((bins, length))
    touched = np.zeros(length, bool)
    if grid <= 0:
        return a, touched, max(grid, 0)
    p = np.arange(bins)[:, None]
    # torchvision's arithmetic, in float32 (numpy rounds each operation: no fused multiply-add)
    y = (f(start) + p.astype(f) * bin_size) + (np.arange(grid, dtype=f)[None, :] + f(0.5)) * bin_size / f(grid)
    y = y.astype(np.float64)
    inside = (y >= -1.0) & (y <= length)
    y = np.where(y <= 0, 0.0, y)
    lo = y.astype(np.int64)
    top = lo >= length - 1
    hi = np.where(top, length - 1, lo + 1)
    lo = np.where(top, length - 1, lo)
    y = np.where(top, lo, y)
    ly = y - lo
    hy = 1.0 - ly
    pp = np.broadcast_to(p, y.shape)
    np.add.at(a, (pp[inside], lo[inside]), hy[inside])
    np.add.at(a, (pp[inside], hi[inside]), ly[inside])
    touched[lo[inside]] = True
    touched[hi[inside]] = True
    return a / grid, touched, grid


def roi_align_ref(x, bx, osz, scale, ratio, aligned):
    """The result in double (K x C x ph x pw), and the masks of input pixels read (per image:
    nonzero-weight taps, and all four taps)."""
    n, c, height, width = x.shape
    k = bx.shape[0]
    out = np.zeros((k, c, osz, osz))
    taps = np.zeros((n, height, width), bool)
    alls = np.zeros((n, height, width), bool)
    off = 0.5 if aligned else 0.0
    for r in range(k):
        b = int(bx[r, 0])
        f = np.float32
        sx, sy, ex, ey = (v * f(scale) - f(off) for v in bx[r, 1:])
        rw, rh = ex - sx, ey - sy
        if not aligned:
            rw, rh = max(rw, f(1.0)), max(rh, f(1.0))
        ay, ty, gh = axis(sy, rh, osz, ratio, height)
        ax, tx, gw = axis(sx, rw, osz, ratio, width)
        rows, cols = np.nonzero(ay.any(0))[0], np.nonzero(ax.any(0))[0]
        taps[b][np.ix_(rows, cols)] = True
        alls[b][np.ix_(ty, tx)] = True
        win = x[b][:, rows][:, :, cols].astype(np.float64)          # C x R x S
        out[r] = np.einsum("pr,crs,qs->cpq", ay[:, rows], win, ax[:, cols], optimize=True)
        # count = max(gh * gw, 1): axis() divided by gh and gw, which are >= 1 for these boxes
        assert gh >= 1 and gw >= 1
    return out, taps.sum() * c, alls.sum() * c


def main():
    out = sys.argv[1]
    xs = {
        "small": rng(0).standard_normal((1, 16, 32, 32), dtype=np.float32),
        "big": rng(2).standard_normal((2, 256, 200, 304), dtype=np.float32),
    }
    bs = {
        "small": boxes(1, 32, 1, 32, 32, 2.0, 24.0, False),
        "big": boxes(3, 512, 2, 800, 1216, 16.0, 256.0, True),
    }
    for name, t in xs.items():
        np.save(os.path.join(out, "x_%s.npy" % name), t)
    for name, t in bs.items():
        np.save(os.path.join(out, "boxes_%s.npy" % name), t)
    with open(os.path.join(out, "ref.txt"), "w") as f:
        for seed, (name, (xn, bn, osz, scale, ratio, aligned)) in enumerate(WORKLOADS.items()):
            y, taps, alls = roi_align_ref(xs[xn], bs[bn], osz, scale, ratio, aligned)
            ws = [rng(10 + 4 * seed + i).standard_normal(n) for i, n in enumerate(y.shape)]
            for w, axis_name in zip(ws, "kcpq"):
                np.save(os.path.join(out, "w%s_%s.npy" % (axis_name, name)), w)
            t = y * ws[0][:, None, None, None] * ws[1][None, :, None, None] * ws[2][None, None, :, None] \
                * ws[3][None, None, None, :]
            f.write("%s %.17g %.17g %d %d %d\n" % (name, t.sum(), np.sqrt(np.square(t).sum()), taps, alls,
                                                   y.size * 4))


if __name__ == "__main__":
    main()
