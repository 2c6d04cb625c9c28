#!/usr/bin/python3
"""torch_index.py — PyTorch eager on bench/index.sh's workloads.

usage: /usr/bin/python3 torch_index.py DIR THREADS [REPEATS]
Loads the inputs that make_data.py wrote, sets torch.set_num_threads(THREADS), and for each
workload warms up three times and then times REPEATS runs (default 10) with time.perf_counter().
Prints one line per workload, "NAME BEST Y", as bench/index/index.tdl does: reads are
materialised with .item(); writes go into a z zeroed before the clock starts."""
import os
import sys
import time

import numpy as np
import torch


def main():
    d, threads = sys.argv[1], int(sys.argv[2])
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    torch.set_num_threads(threads)
    names = ("x", "w", "idx", "j", "jz", "v", "wz")
    x, w, idx, j, jz, v, wz = (torch.from_numpy(np.load(os.path.join(d, n + ".npy"))) for n in names)
    z = torch.zeros_like(x)
    zz = torch.zeros_like(wz)

    def scatter_rows():
        z[idx] = x

    def index_put_acc():
        zz.index_put_((jz,), v, accumulate=True)

    workloads = [
        ("gather_rows", lambda: (x[idx] * 2 + 1).sum().item(), None, None),
        ("gather_elems", lambda: x.reshape(-1)[j].sum().item(), None, None),
        ("scatter_rows", scatter_rows, z, lambda: (z.sum(1) * w).sum().item()),
        ("index_put_acc", index_put_acc, zz, lambda: (zz * wz).sum().item()),
        ("mask_select", lambda: x[x > 0].sum().item(), None, None),
    ]
    for name, fn, target, check in workloads:
        best = float("inf")
        y = None
        for r in range(-3, repeats):
            if target is not None:
                target.zero_()
            t0 = time.perf_counter()
            y = fn()
            dt = time.perf_counter() - t0
            if r >= 0:
                best = min(best, dt)
        if check is not None:
            y = check()
        print("%s %.9g %.9g" % (name, best, y))


if __name__ == "__main__":
    main()
