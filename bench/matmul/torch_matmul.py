#!/usr/bin/python3
"""torch_matmul.py — PyTorch's side of bench/matmul.sh (eager, CPU, no grad): torch.matmul of each
product (Debian's torch does it with the BLAS libblas.so.3 points at, BLAS_INFO) and
torch.nn.functional.conv2d (oneDNN) of the mask head's first convolution.

usage: /usr/bin/python3 torch_matmul.py DIR THREADS REPEATS NAME...
NAME as matmul.tdl's. torch.set_num_threads(THREADS); each workload warms up once (products) or
twice (convolutions), then REPEATS evaluations are timed with time.perf_counter(); prints "NAME
BEST" and saves the result to DIR/torch_NAME.npy."""
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

d, threads, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
with torch.no_grad():
    for name in sys.argv[4:]:
        if name.startswith("conv"):
            x, w, bias = (torch.from_numpy(np.load(os.path.join(d, f + ".npy"))) for f in ("x", "w", "bias"))
            if name == "conv_channels_last":
                x = x.contiguous(memory_format=torch.channels_last)
                w = w.contiguous(memory_format=torch.channels_last)
            run, warm = (lambda: F.conv2d(x, w, bias, padding=1)), 2
        else:
            a = torch.from_numpy(np.load(os.path.join(d, "a_" + name + ".npy")))
            b = torch.from_numpy(np.load(os.path.join(d, "b_" + name + ".npy")))
            run, warm = (lambda: a @ b), 1
        best = None
        for r in range(repeats + warm):
            t0 = time.perf_counter()
            y = run()
            t = time.perf_counter() - t0
            if r >= warm and (best is None or t < best):
                best = t
        np.save(os.path.join(d, "torch_" + name + ".npy"), y.contiguous().numpy())
        print(name, best, flush=True)
