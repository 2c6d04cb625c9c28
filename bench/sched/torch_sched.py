#!/usr/bin/python3
"""torch_sched.py — PyTorch eager on bench/sched.sh's workloads.

usage: /usr/bin/python3 torch_sched.py DIR THREADS [REPEATS]
Loads the inputs that make_data.py wrote, sets torch.set_num_threads(THREADS), and for each
workload warms up three times and then times REPEATS evaluations (default 10) with
time.perf_counter(). Prints one line per workload, "NAME BEST Y", as bench/sched/sched.tdl does:
Y is the checksum v^T result w, in float64, of the last evaluation (computed untimed).
    softmax     torch.softmax(x, 1)
    contract    A @ B"""
import os
import sys
import time

import numpy as np
import torch


def main():
    d, threads = sys.argv[1], int(sys.argv[2])
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    torch.set_num_threads(threads)
    names = ("x", "A", "B", "sv", "sw", "cv", "cw")
    x, a, b, sv, sw, cv, cw = (torch.from_numpy(np.load(os.path.join(d, n + ".npy"))) for n in names)
    workloads = [
        ("softmax", lambda: torch.softmax(x, 1), sv, sw),
        ("contract", lambda: a @ b, cv, cw),
    ]
    for name, fn, v, w in workloads:
        best = float("inf")
        y = None
        for r in range(-3, repeats):
            t0 = time.perf_counter()
            y = fn()
            dt = time.perf_counter() - t0
            if r >= 0:
                best = min(best, dt)
        print("%s %.9g %.17g" % (name, best, (v @ y.double() @ w).item()))


if __name__ == "__main__":
    main()
