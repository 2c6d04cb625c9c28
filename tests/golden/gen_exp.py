#!/usr/bin/python3
"""gen_exp.py: writes tests/golden/exp/, PyTorch's CPU exp, softmax and sigmoid of float32 and
float64 inputs, which tdl's (backend/cpu/cpu_math.h) must match bit for bit; with --check, also
compares tdl itself with torch over a large sweep.

Run from the repository root with the Debian python3-torch:
    /usr/bin/python3 tests/golden/gen_exp.py                 write the golden files
    /usr/bin/python3 tests/golden/gen_exp.py --check TDL [STRIDE]
                                                            the sweep (nothing is written)

Torch computes these with Vectorized<T>::exp(), SLEEF's Sleef_expf8_u10 / Sleef_expd4_u10 (on a
CPU with AVX2, their FMA builds); torch.exp's vml path runs it on every element, tails included.
The files (.npy, C order):
    exp_float32.npy, exp_float64.npy   (2, n): row 0 the inputs, row 1 torch.exp of them. Inputs:
        values spread evenly over the range where exp is finite and nonzero and evenly over the
        float's bit patterns in it (tiny magnitudes), the thresholds of overflow, of denormal
        results and of underflow to 0 with their neighbours, and -0, +-inf, NaNs with payloads.
    softmax_float32.npy, softmax_float64.npy   (2, rows, cols): inputs and torch.softmax(x, -1).
        Each row's maximum is alone in making its sum: every other element is so far below it
        that its exp is under 2^-(mantissa + 8) / cols, so the sum rounds to exactly 1 in any
        order and in any precision, and torch's exp(x - max) * (1 / sum) and tdl's
        exp(x - max) / sum are both exp(x - max), bit for bit. The rows reach the denormal and
        zero results of exp (and -inf inputs), which is where softmax's exp works.
    sigmoid_float32.npy, sigmoid_float64.npy   (2, n): inputs and torch.sigmoid. n is a multiple of
        twice the vector width and under torch's grain size, so every element goes through the
        vector kernel 1 / (exp(0 - x) + 1) (torch's scalar tail uses libm's exp instead).
--check runs TDL on sweeps (every STRIDE-th float32 bit pattern whose exp is finite and nonzero,
default 64; a few million float64s) and compares its exp with torch's, printing the count of
values compared and of differences; exit status 1 on any difference. check_exp_sleef.c, beside
this file, compares cpu_math.h with the SLEEF library itself on all 2^32 float32 values.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exp")
rng = np.random.default_rng(20240611)

# Per dtype: the float type, its integer bit type, the range where exp is finite and nonzero (as
# SLEEF tests it: exp(x) is +inf above hi and +0 below lo), and where results become denormal.
DT = {
    "float32": (np.float32, np.uint32, -104.0, 100.0, -87.33654),
    "float64": (np.float64, np.uint64, -1000.0, 709.78271114955742909217217426, -708.3964185322641),
}


def torch_exp(x):
    return torch.exp(torch.from_numpy(x)).numpy()


def neighbours(ft, v, k=3):
    """v and the k floats on either side of it."""
    out, a, b = [ft(v)], ft(v), ft(v)
    for _ in range(k):
        a, b = np.nextafter(a, ft(-np.inf)), np.nextafter(b, ft(np.inf))
        out += [a, b]
    return out


def exp_inputs(name, n):
    """n inputs (a multiple of 8): the specials, then the sweeps."""
    ft, it, lo, hi, den = DT[name]
    special = [ft(v) for v in (0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, np.log(2), -np.log(2))]
    ln_max = np.log(np.finfo(ft).max)
    for v in (lo, hi, ln_max, den, np.log(np.finfo(ft).smallest_subnormal), -ln_max, 88.0, -88.0):
        special += neighbours(ft, v)
    special += [np.finfo(ft).smallest_subnormal, -np.finfo(ft).smallest_subnormal, np.finfo(ft).tiny,
                np.finfo(ft).max, -np.finfo(ft).max]
    # NaNs: quiet and signalling, both signs, with payloads (torch returns the input, quietened)
    if ft == np.float32:
        nans = [0x7fc00000, 0xffc00000, 0x7fc12345, 0xffd00001, 0x7f800001, 0xff812345]
    else:
        nans = [0x7ff8000000000000, 0xfff8000000000000, 0x7ff8000012345678, 0xfff4000000000001,
                0x7ff0000000000001, 0xfff0000012345678]
    special = np.concatenate([np.array(special, ft), np.array(nans, it).view(ft)])
    m = n - len(special)
    even = np.linspace(lo - 4, hi + 4, m - 2 * (m // 4)).astype(ft)
    # evenly over the bit patterns of [lo, hi]: negatives and positives by their magnitude's bits
    neg = np.linspace(0, int(np.array(-lo, ft).view(it)), m // 4).astype(it).view(ft) * ft(-1)
    pos = np.linspace(0, int(np.array(hi, ft).view(it)), m // 4).astype(it).view(ft)
    return np.concatenate([special, even, neg, pos])


def softmax_inputs(name, rows, cols):
    ft, it, lo, hi, den = DT[name]
    mant = 24 if ft == np.float32 else 53
    # exp(x - max) < 2^-(mant + 8) / cols for every other element: x - max < that log
    top = np.log(2.0 ** -(mant + 8) / cols)
    x = np.empty((rows, cols), ft)
    for r in range(rows):
        m = ft(rng.uniform(-20, 20))
        row = m + rng.uniform(lo - 8, top, cols)
        if r % 4 == 1:
            row = m + rng.uniform(den - 30, top, cols)        # around the denormal results
        if r % 4 == 2:
            row[rng.integers(0, cols, 5)] = -np.inf
        row = row.astype(ft)
        row[rng.integers(0, cols)] = m
        x[r] = row
    return x


def sigmoid_inputs(name, n):
    ft = DT[name][0]
    x = np.concatenate([rng.uniform(-120, 120, n // 2), rng.uniform(-20, 20, n // 2)]).astype(ft)
    x[:8] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 745.5, -745.5, 1e-30], ft)
    return x


def write():
    os.makedirs(OUT, exist_ok=True)
    for name in DT:
        ft = DT[name][0]
        x = exp_inputs(name, 4096 if ft == np.float32 else 2048)
        np.save(os.path.join(OUT, "exp_%s.npy" % name), np.stack([x, torch_exp(x)]))
        x = softmax_inputs(name, 8, 300)
        y = torch.softmax(torch.from_numpy(x), -1).numpy()
        m = x.max(-1, keepdims=True)
        assert (y.view(DT[name][1]) == torch_exp(x - m).view(DT[name][1])).all(), "softmax rows: sum is not 1"
        np.save(os.path.join(OUT, "softmax_%s.npy" % name), np.stack([x, y]))
        x = sigmoid_inputs(name, 1024)
        np.save(os.path.join(OUT, "sigmoid_%s.npy" % name), np.stack([x, torch.sigmoid(torch.from_numpy(x)).numpy()]))
    with open(os.path.join(OUT, "README"), "w") as f:
        f.write("generated by tests/golden/gen_exp.py from PyTorch %s (CPU capability %s); do not edit\n"
                % (torch.__version__, cpu_capability()))


def cpu_capability():
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            return line.split(":")[1].strip()
    return "?"


def check(tdl, stride):
    """Runs tdl's exp over sweeps and compares it with torch's, bit for bit."""
    sweeps = []
    # float32: every stride-th bit pattern of [-104, 100] (both signs), and the specials
    ft, it, lo, hi = np.float32, np.uint32, -104.0, 100.0
    pos = np.arange(0, int(np.array(hi, ft).view(it)) + 1, stride, dtype=it).view(ft)
    neg = np.arange(0x80000000, int(np.array(lo, ft).view(it)) + 1, stride, dtype=it).view(ft)
    sweeps.append(("float32", np.concatenate([neg, pos, exp_inputs("float32", 4096)])))
    sweeps.append(("float32 even", np.linspace(-110, 110, 8_000_000).astype(ft)))
    sweeps.append(("float64", np.concatenate([rng.uniform(-1010, 720, 4_000_000), rng.uniform(-1, 1, 1_000_000),
                                              exp_inputs("float64", 2048)])))
    sweeps.append(("float64 bits", rng.integers(0, 2 ** 64, 2_000_000, dtype=np.uint64).view(np.float64)))
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "exp.tdl")
        with open(script, "w") as f:
            f.write("save(argv[2], load(argv[1]).exp())\n")
        for label, x in sweeps:
            src, dst = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
            np.save(src, x)
            subprocess.run([tdl, script, src, dst], check=True)
            got, want = np.load(dst), torch_exp(x)
            it = np.uint32 if x.dtype == np.float32 else np.uint64
            diff = np.nonzero(got.view(it) != want.view(it))[0]
            print("%-13s %9d values, %d differ" % (label, len(x), len(diff)))
            for i in diff[:5]:
                print("    exp(%r) = %r, torch %r" % (x[i], got[i], want[i]))
            bad += len(diff)
    return bad


if __name__ == "__main__":
    print("torch %s, CPU capability %s" % (torch.__version__, cpu_capability()), file=sys.stderr)
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        sys.exit(1 if check(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 64) else 0)
    write()
