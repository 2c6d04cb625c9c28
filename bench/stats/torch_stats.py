#!/usr/bin/python3
"""torch_stats.py — PyTorch's side of bench/stats.sh.

usage: /usr/bin/python3 torch_stats.py DIR THREADS REPEATS CASE OUT
As stats.tdl, with torch.set_num_threads(THREADS); saves the last result to OUT (.npy) and prints
the best time in seconds."""
import sys
import time

import numpy as np
import torch


def main():
    d, threads, repeats, case, out = sys.argv[1:6]
    torch.set_num_threads(int(threads))
    x = torch.from_numpy(np.load(d + "/x_" + ("nchw" if case == "var_bn" else "mat") + ".npy"))
    g = torch.from_numpy(np.load(d + "/g_rows.npy"))

    def evaluate():
        if case == "var_rows":
            return x.var(1)
        if case == "var_cols":
            return x.var(0)
        if case == "var_bn":
            return x.var((0, 2, 3))
        if case == "norm_rows":
            return x.norm(dim=1)
        if case == "norm_cols":
            return x.norm(dim=0)
        if case == "norm_all":
            return x.norm()
        x.requires_grad_()
        ((x.std(1) if case == "std_bwd" else x.norm(dim=1)) * g).sum().backward()
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
