#!/usr/bin/python3
"""torch_fused.py — PyTorch eager on bench/fused.sh's expression.

usage: /usr/bin/python3 torch_fused.py DIR THREADS [REPEATS]
Loads DIR/{a,b,c}.npy, sets torch.set_num_threads(THREADS), evaluates
y = torch.where(a > 0, a*b + c, c*0.5).sum() three times to warm up and then REPEATS times
(default 10), materialising each result with .item(). Prints one line: the best time in seconds
and y."""
import os
import sys
import time

import numpy as np
import torch


def main():
    d, threads = sys.argv[1], int(sys.argv[2])
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    torch.set_num_threads(threads)
    a, b, c = (torch.from_numpy(np.load(os.path.join(d, n + ".npy"))) for n in "abc")
    best = float("inf")
    y = None
    for r in range(-3, repeats):
        t0 = time.perf_counter()
        y = torch.where(a > 0, a * b + c, c * 0.5).sum().item()
        dt = time.perf_counter() - t0
        if r >= 0:
            best = min(best, dt)
    print("%.6f %.9g" % (best, y))


if __name__ == "__main__":
    main()
