#!/usr/bin/python3
"""torch_unary.py — PyTorch's side of bench/unary.sh.

usage: /usr/bin/python3 torch_unary.py DIR THREADS REPEATS FN DTYPE OUT
As unary.tdl, with torch.set_num_threads(THREADS); saves the last result to OUT (.npy) and prints
the best time in seconds."""
import sys
import time

import numpy as np
import torch


def main():
    d, threads, repeats, fn, dt, out = sys.argv[1:7]
    torch.set_num_threads(int(threads))
    dom = "pos" if fn in ("log", "log2", "log10") else ("unit" if fn == "asin" else "wide")
    x = torch.from_numpy(np.load("%s/x_%s_%s.npy" % (d, dom, dt)))
    f = getattr(torch, fn)
    best = float("inf")
    r = None
    for k in range(-2, int(repeats)):
        t0 = time.perf_counter()
        r = f(x)
        dt_ = time.perf_counter() - t0
        if k >= 0:
            best = min(best, dt_)
    np.save(out, r.numpy())
    print("%.6f" % best)


main()
