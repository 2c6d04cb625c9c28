#!/usr/bin/python3
"""torch_grad.py — torchvision's side of bench/grad.sh: forward + backward (autograd) of
(roi_align(x, ...) * g).sum() on the CPU, with the same g as grad.tdl.

usage: torch_grad.py DIR REPEATS WARMUP NAME THREADS OUT [CHANNELS]
Prints "NAME BEST"; saves the last gradient to OUT. CHANNELS (default all 256) keeps the input's
first ones, as grad.tdl's does. With ROI_DEVICE=cuda (bench/gpu.sh) the inputs
are moved to the GPU once, untimed, and each timed evaluation ends with torch.cuda.synchronize();
THREADS is then ignored."""
import os
import sys
import time

import numpy as np
import torch
from torchvision.ops import roi_align

d, repeats, warmup, name, threads, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6]
C = int(sys.argv[7]) if len(sys.argv) > 7 else 256
torch.set_num_threads(threads)
dev = torch.device(os.environ.get("ROI_DEVICE", "cpu"))
sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
x = torch.from_numpy(np.load(d + "/x_big.npy")[:, :C].copy()).to(dev).requires_grad_()
b = torch.from_numpy(np.load(d + "/boxes_big.npy")).to(dev)
args = ((7, 7), 0.25, 2, True) if name == "maskrcnn" else ((14, 14), 0.25, 0, True)
g = (torch.arange(b.shape[0] * C * args[0][0] * args[0][1], dtype=torch.float32) * 0.37).cos().reshape(
    b.shape[0], C, args[0][0], args[0][1]).to(dev)
best = 1e30
for r in range(warmup + repeats):
    x.grad = None
    t0 = time.perf_counter()
    (roi_align(x, b, args[0], args[1], args[2], args[3]) * g).sum().backward()
    sync()
    t = time.perf_counter() - t0
    if r >= warmup:
        best = min(best, t)
np.save(out, x.grad.cpu().numpy())
print(name, best)
