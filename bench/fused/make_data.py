#!/usr/bin/python3
"""make_data.py — writes the inputs of bench/fused.sh: a.npy, b.npy, c.npy in DIR, each 2**24
float32 values drawn from the standard normal distribution (numpy, seeds 0, 1, 2), so that the
C loops, PyTorch and tdl all compute on the very same numbers.

usage: python3 make_data.py DIR [N]"""
import os
import sys

import numpy as np


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2 ** 24
    for seed, name in enumerate("abc"):
        x = np.random.default_rng(seed).standard_normal(n, dtype=np.float32)
        np.save(os.path.join(out, name + ".npy"), x)


if __name__ == "__main__":
    main()
