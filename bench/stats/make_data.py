#!/usr/bin/python3
"""make_data.py — bench/stats.sh's inputs: DIR/x_mat.npy (4096 x 1024), DIR/x_nchw.npy
(32 x 64 x 56 x 56), standard normal times 3 plus 1, float32, and DIR/g_rows.npy (4096, standard
normal). usage: make_data.py DIR"""
import os
import sys

import numpy as np


def main():
    d = sys.argv[1]
    rng = np.random.default_rng(11)
    for name, shape in (("mat", (4096, 1024)), ("nchw", (32, 64, 56, 56))):
        np.save(os.path.join(d, "x_" + name + ".npy"), (rng.standard_normal(shape) * 3 + 1).astype(np.float32))
    np.save(os.path.join(d, "g_rows.npy"), rng.standard_normal(4096).astype(np.float32))


main()
