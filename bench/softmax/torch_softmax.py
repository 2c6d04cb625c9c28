#!/usr/bin/python3
"""torch_softmax.py — PyTorch's side of bench/softmax.sh.

usage: /usr/bin/python3 torch_softmax.py DIR THREADS REPEATS WORKLOAD CASE OUT
As softmax.tdl, with torch.set_num_threads(THREADS); saves the last result to OUT (.npy) and
prints the best time in seconds."""
import sys
import time

import numpy as np
import torch


def main():
    d, threads, repeats, w, case, out = sys.argv[1:7]
    torch.set_num_threads(int(threads))
    x = torch.from_numpy(np.load(d + "/x_" + w + ".npy"))
    g = torch.from_numpy(np.load(d + "/g_" + w + ".npy"))

    def evaluate():
        if case == "softmax":
            return x.softmax(1)
        if case == "log_softmax":
            return x.log_softmax(1)
        x.requires_grad_()
        (x.softmax(1) * g).sum().backward()
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
