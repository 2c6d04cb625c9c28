#!/usr/bin/python3
"""torch_var.py — PyTorch's side of bench/var.sh.

usage: /usr/bin/python3 torch_var.py DIR THREADS REPEATS CASE OUT
As var.tdl, with torch.set_num_threads(THREADS); saves the last result to OUT (.npy) and prints
the best time in seconds."""
import sys
import time

import numpy as np
import torch


def main():
    d, threads, repeats, case, out = sys.argv[1:6]
    torch.set_num_threads(int(threads))
    x = torch.from_numpy(np.load(d + "/x_" + ("nchw" if case == "bn" else "mat") + ".npy"))
    g = torch.from_numpy(np.load(d + "/g_rows.npy"))

    def evaluate():
        if case == "rows":
            return x.var(1)
        if case == "columns":
            return x.var(0)
        if case == "bn":
            return x.var((0, 2, 3))
        x.requires_grad_()
        (x.std(1) * g).sum().backward()
        r = x.grad
        x.grad = None
        x.requires_grad_(False)
        return r

    best = float("inf")
    r = None
    for k in range(-2, int(repeats)):
        t0 = time.perf_counter()
        r = evaluate()
        dt = time.perf_counter() - t0
        if k >= 0:
            best = min(best, dt)
    np.save(out, r.detach().numpy())
    print("%.6f" % best)


main()
