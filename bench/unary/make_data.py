#!/usr/bin/python3
"""make_data.py — the inputs of bench/unary.sh: 4M float32 (and float64) values per domain, saved
to DIR: x_wide (uniform over [-10, 10]), x_pos (over (0, 100]), x_unit (over [-1, 1]).

usage: /usr/bin/python3 make_data.py DIR"""
import sys

import numpy as np


def main():
    d = sys.argv[1]
    rng = np.random.default_rng(20261128)
    n = 1 << 22
    for dt in ("float32", "float64"):
        np.save("%s/x_wide_%s.npy" % (d, dt), rng.uniform(-10, 10, n).astype(dt))
        np.save("%s/x_pos_%s.npy" % (d, dt), rng.uniform(1e-3, 100, n).astype(dt))
        np.save("%s/x_unit_%s.npy" % (d, dt), rng.uniform(-1, 1, n).astype(dt))


main()
