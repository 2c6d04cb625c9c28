#!/usr/bin/python3
"""make_data.py — writes the inputs of bench/sched.sh into DIR, and the reference results.

usage: python3 make_data.py DIR R C N

    x.npy    float32 (R, C), standard normal (seed 0): softmax's input
    A.npy    float32 (N, N), standard normal (seed 1)  } the contraction's operands
    B.npy    float32 (N, N), standard normal (seed 2)  }
    sv.npy   float64 (R,), standard normal (seed 3)    } weights of softmax's checksum
    sw.npy   float64 (C,), standard normal (seed 4)    }   sv^T y sw
    cv.npy   float64 (N,), standard normal (seed 5)    } weights of the contraction's checksum
    cw.npy   float64 (N,), standard normal (seed 6)    }   cv^T C cw
    ref.txt  one line per workload, "NAME Y SCALE": the checksum of the exact result (computed
             in double from the float32 inputs), and the 2-norm of its terms v_i y_ij w_j, the
             size the checksum of a wrong result would have (a scale for the tolerance)

Random weights on both rows and columns make a value in a wrong place (a transposed or shifted
result, a row normalised by another row's sum) move the checksum by about SCALE, while rounding
moves it by about 1e-7 x SCALE. (The sum of the |terms|, the scale bench/index.sh uses, grows as
the number of terms while the checksum grows as its square root: at these sizes and tolerances it
would pass a wrong result.) Every implementation reads the same numbers; what each workload
computes is in bench/sched.sh."""
import os
import sys

import numpy as np


def rng(seed):
    return np.random.default_rng(seed)


def main():
    out = sys.argv[1]
    r, c, n = (int(a) for a in sys.argv[2:5])
    x = rng(0).standard_normal((r, c), dtype=np.float32)
    a = rng(1).standard_normal((n, n), dtype=np.float32)
    b = rng(2).standard_normal((n, n), dtype=np.float32)
    sv = rng(3).standard_normal(r)
    sw = rng(4).standard_normal(c)
    cv = rng(5).standard_normal(n)
    cw = rng(6).standard_normal(n)
    for name, t in (("x", x), ("A", a), ("B", b), ("sv", sv), ("sw", sw), ("cv", cv), ("cw", cw)):
        np.save(os.path.join(out, name + ".npy"), t)

    refs = []
    # softmax(x, 1), exactly (in double)
    y = x.astype(np.float64)
    y -= y.max(axis=1, keepdims=True)
    np.exp(y, out=y)
    y /= y.sum(axis=1, keepdims=True)
    check = sv @ y @ sw
    np.square(y, out=y)
    refs.append(("softmax", check, np.sqrt(np.square(sv) @ y @ np.square(sw))))
    del y
    # A @ B, exactly (in double: products of float32 are exact, the sums round at 1e-16)
    m = a.astype(np.float64) @ b.astype(np.float64)
    check = cv @ m @ cw
    np.square(m, out=m)
    refs.append(("contract", check, np.sqrt(np.square(cv) @ m @ np.square(cw))))
    with open(os.path.join(out, "ref.txt"), "w") as f:
        for name, y, s in refs:
            f.write("%s %.17g %.17g\n" % (name, y, s))


if __name__ == "__main__":
    main()
