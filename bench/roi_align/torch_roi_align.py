#!/usr/bin/python3
"""torch_roi_align.py — torchvision's roi_align (PyTorch eager, CPU) on bench/roi_align.sh's
workloads.

usage: /usr/bin/python3 torch_roi_align.py DIR THREADS [REPEATS [WARMUP [NAMES]]]
Loads the inputs that make_data.py wrote, sets torch.set_num_threads(THREADS), and for each
workload (those in NAMES, comma-separated, or all) runs WARMUP evaluations (default 2) and then
times REPEATS (default 5) with
time.perf_counter(). Prints one line per workload, "NAME BEST Y", as bench/roi_align/roi_align.tdl
does: Y is the checksum sum y[k, c, p, q] wk[k] wc[c] wp[p] wq[q] in float64 of the last
evaluation (computed untimed). The previous result is dropped before each evaluation, so that
at most one is alive.
    small        roi_align(x_small, boxes_small, (7, 7), 1.0, 2, False)
    maskrcnn     roi_align(x_big, boxes_big, (7, 7), 0.25, 2, True)
    maskrcnn_cl  the same on x_big.contiguous(memory_format=torch.channels_last) (made once,
                 untimed; torchvision's CPU kernel makes it contiguous again on every call)
    adaptive     roi_align(x_big, boxes_big, (14, 14), 0.25, 0, True)
With ROI_DEVICE=cuda (bench/gpu.sh) the inputs are moved to the GPU once, untimed, and each timed
evaluation ends with torch.cuda.synchronize(); THREADS is then ignored."""
import os
import sys
import time

import numpy as np
import torch
from torchvision.ops import roi_align

WORKLOADS = [
    # name, input, boxes, output_size, spatial_scale, sampling_ratio, aligned, channels_last, weights
    ("small", "small", "small", (7, 7), 1.0, 2, False, False, "small"),
    ("maskrcnn", "big", "big", (7, 7), 0.25, 2, True, False, "maskrcnn"),
    ("maskrcnn_cl", "big", "big", (7, 7), 0.25, 2, True, True, "maskrcnn"),
    ("adaptive", "big", "big", (14, 14), 0.25, 0, True, False, "adaptive"),
]


def main():
    d, threads = sys.argv[1], int(sys.argv[2])
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    warmup = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    names = sys.argv[5].split(",") if len(sys.argv) > 5 else [w[0] for w in WORKLOADS]
    torch.set_num_threads(threads)
    dev = torch.device(os.environ.get("ROI_DEVICE", "cpu"))
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def load(name):
        return torch.from_numpy(np.load(os.path.join(d, name + ".npy")))

    xs = {"small": load("x_small").to(dev), "big": load("x_big").to(dev)}
    bs = {"small": load("boxes_small").to(dev), "big": load("boxes_big").to(dev)}
    for name, xn, bn, osz, scale, ratio, aligned, cl, wn in WORKLOADS:
        if name not in names:
            continue
        x = xs[xn].contiguous(memory_format=torch.channels_last) if cl else xs[xn]
        b = bs[bn]
        best = float("inf")
        y = None
        for r in range(-warmup, repeats):
            y = None
            t0 = time.perf_counter()
            y = roi_align(x, b, osz, scale, ratio, aligned)
            sync()
            dt = time.perf_counter() - t0
            if r >= 0:
                best = min(best, dt)
        wk, wc, wp, wq = (load("w%s_%s" % (a, wn)) for a in "kcpq")
        y = y.cpu()
        check = (y.double() * wk[:, None, None, None] * wc[None, :, None, None] * wp[None, None, :, None]
                 * wq[None, None, None, :]).sum().item()
        print("%s %.9g %.17g" % (name, best, check), flush=True)


if __name__ == "__main__":
    main()
