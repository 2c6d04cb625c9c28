#!/usr/bin/python3
"""make_data.py — bench/softmax.sh's inputs: DIR/x_last.npy (4096 x 1024) and DIR/x_inner.npy
(64 x 256 x 256), standard normal times 3, float32, and gradients g_last.npy, g_inner.npy of the
same shapes (standard normal). usage: make_data.py DIR"""
import os
import sys

import numpy as np


def main():
    d = sys.argv[1]
    rng = np.random.default_rng(7)
    for name, shape in (("last", (4096, 1024)), ("inner", (64, 256, 256))):
        np.save(os.path.join(d, "x_" + name + ".npy"), (rng.standard_normal(shape) * 3).astype(np.float32))
        np.save(os.path.join(d, "g_" + name + ".npy"), rng.standard_normal(shape).astype(np.float32))


main()
