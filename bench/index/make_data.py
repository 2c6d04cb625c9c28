#!/usr/bin/python3
"""make_data.py — writes the inputs of bench/index.sh into DIR, and the reference results.

usage: python3 make_data.py DIR R C N M

    x.npy    float32 (R, C), standard normal (seed 0)
    w.npy    float32 (R,), standard normal (seed 6): row weights that check a scatter of rows
    idx.npy  int64 (R,), a permutation of the rows (seed 1)
    j.npy    int64 (N,), uniform in [0, R*C): elements of x to gather (seed 2)
    jz.npy   int64 (N,), uniform in [0, M): where index_put_ adds (duplicates; seed 3)
    v.npy    float32 (N,), standard normal (seed 4): the values it adds
    wz.npy   float32 (M,), standard normal (seed 5): weights that check its result
    ref.txt  one line per workload, "NAME Y SCALE": the checked value in double, each term
             rounded to float32 first where PyTorch computes it in float32, and the sum of the
             |terms| (a scale for rounding tolerances)

Every implementation reads the same numbers; what each workload computes is in bench/index.sh."""
import os
import sys

import numpy as np


def rng(seed):
    return np.random.default_rng(seed)


def main():
    out = sys.argv[1]
    r, c, n, m = (int(a) for a in sys.argv[2:6])
    x = rng(0).standard_normal((r, c), dtype=np.float32)
    w = rng(6).standard_normal(r, dtype=np.float32)
    idx = rng(1).permutation(r).astype(np.int64)
    j = rng(2).integers(0, r * c, n, dtype=np.int64)
    jz = rng(3).integers(0, m, n, dtype=np.int64)
    v = rng(4).standard_normal(n, dtype=np.float32)
    wz = rng(5).standard_normal(m, dtype=np.float32)
    for name, a in (("x", x), ("w", w), ("idx", idx), ("j", j), ("jz", jz), ("v", v), ("wz", wz)):
        np.save(os.path.join(out, name + ".npy"), a)

    refs = []
    # (x[idx] * 2 + 1).sum()
    t = x[idx] * np.float32(2) + np.float32(1)
    refs.append(("gather_rows", t.sum(dtype=np.float64), np.abs(t).sum(dtype=np.float64)))
    # x.reshape(-1)[j].sum()
    t = x.reshape(-1)[j].astype(np.float64)
    refs.append(("gather_elems", t.sum(), np.abs(t).sum()))
    # z[idx] = x, checked as (z.sum(1) * w).sum()
    z = np.empty_like(x, dtype=np.float64)
    z[idx] = x
    refs.append(("scatter_rows", (z.sum(1) * w).sum(), (np.abs(z).sum(1) * np.abs(w)).sum()))
    # z.index_put_((jz,), v, accumulate=True) into zeros(M), checked as (z * wz).sum()
    z = np.bincount(jz, weights=v.astype(np.float64), minlength=m)
    a = np.bincount(jz, weights=np.abs(v).astype(np.float64), minlength=m)
    refs.append(("index_put_acc", (z * wz).sum(), (a * np.abs(wz)).sum()))
    # x[x > 0].sum()
    t = x[x > 0].astype(np.float64)
    refs.append(("mask_select", t.sum(), t.sum()))
    with open(os.path.join(out, "ref.txt"), "w") as f:
        for name, y, s in refs:
            f.write("%s %.17g %.17g\n" % (name, y, s))


if __name__ == "__main__":
    main()
