#!/usr/bin/python3
"""make_data.py — bench/matmul.sh's inputs: standard normal float32 operands (numpy, seed 0).

usage: python3 make_data.py DIR
Writes DIR/a_NAME.npy (M x K) and DIR/b_NAME.npy (K x N) for each product NAME = MxKxN of
SHAPES, and the convolution's DIR/x.npy (64 x 256 x 14 x 14), DIR/w.npy (256 x 256 x 3 x 3) and
DIR/bias.npy (256): the first 3x3 convolution of the mask head (bench/mask_head.sh) on 64 boxes,
whose implicit GEMM is a 12544 x 2304 x 256 product. Prints "NAME M K N" per workload."""
import os
import sys

import numpy as np

SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (12544, 2304, 256)]

d = sys.argv[1]
rng = np.random.default_rng(0)
for m, k, n in SHAPES:
    name = "%dx%dx%d" % (m, k, n)
    np.save(os.path.join(d, "a_" + name + ".npy"), rng.standard_normal((m, k), dtype=np.float32))
    np.save(os.path.join(d, "b_" + name + ".npy"), rng.standard_normal((k, n), dtype=np.float32))
    print(name, m, k, n)
np.save(os.path.join(d, "x.npy"), rng.standard_normal((64, 256, 14, 14), dtype=np.float32))
np.save(os.path.join(d, "w.npy"), (rng.standard_normal((256, 256, 3, 3)) / 48).astype(np.float32))
np.save(os.path.join(d, "bias.npy"), rng.standard_normal(256, dtype=np.float32))
print("conv", 64 * 14 * 14, 256 * 9, 256)
