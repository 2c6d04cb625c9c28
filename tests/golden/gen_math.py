#!/usr/bin/python3
"""gen_math.py: writes tests/golden/math/, PyTorch's CPU exp, softmax, sigmoid, tanh, log, log1p and
expm1 of float32 and float64 inputs, which tdl's (backend/cpu/cpu_math.h) must match bit for bit; with --check,
also compares tdl itself with torch over a large sweep.

Run from the repository root with the Debian python3-torch:
    /usr/bin/python3 tests/golden/gen_math.py                write the golden files
    /usr/bin/python3 tests/golden/gen_math.py --check TDL [STRIDE [FN]]
                                                            the sweep (nothing is written)

Torch computes exp, tanh, log, log1p and expm1 with Vectorized<T>'s functions of those names,
SLEEF's u10 ones (Sleef_expf8_u10 / Sleef_expd4_u10 and so on; on a CPU with AVX2, their FMA
builds); the vml path of torch.exp, torch.tanh, torch.log, torch.log1p and torch.expm1 runs them
on every element, tails included.
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
    tanh_float32.npy, tanh_float64.npy   (2, n): inputs and torch.tanh. Inputs: -0, +-inf, NaNs
        with payloads, tiny and denormal values, the threshold past which SLEEF gives 1 with its
        neighbours, values spread evenly over [-24, 24] and evenly over the bit patterns of
        magnitudes up to 24; about one in a hundred is a value where SLEEF's result is not the
        correctly rounded one (libm's).
    log_float32.npy, log_float64.npy   (2, n): inputs and torch.log. Inputs: +-0, +-inf, negative
        values, NaNs with payloads, denormals, the smallest normal, the ends of the reduced range
        [0.75, 1.5) with their neighbours, values spread evenly over [0, 100] and [0.5, 2] and
        evenly over the bit patterns of the positive finite floats.
    log1p_float32.npy, log1p_float64.npy, expm1_float32.npy, expm1_float64.npy   (2, n): inputs and
        torch.log1p / torch.expm1. Inputs: +-0, +-inf, NaNs with payloads, denormals, -1 and the
        values below it (log1p), the thresholds where expm1 becomes inf or -1 with their
        neighbours, values spread evenly over the working range and over its bit patterns.
--check runs TDL on sweeps (for exp every STRIDE-th float32 bit pattern whose exp is finite and
nonzero, default 64, for tanh every STRIDE-th of those of magnitude up to 10, for log every
STRIDE-th positive one, for log1p and expm1 every STRIDE-th over their working range; a few
million float64s) and compares its exp, tanh, log, log1p and expm1 (FN: one of them; all by
default) with torch's,
printing the count of values compared and of differences; exit status 1 on any difference.
check_math_sleef.c, beside this file, compares cpu_math.h with the SLEEF library itself on all
2^32 float32 values.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "math")
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


def nans(ft):
    """NaNs: quiet and signalling, both signs, with payloads."""
    if ft == np.float32:
        return np.array([0x7fc00000, 0xffc00000, 0x7fc12345, 0xffd00001, 0x7f800001, 0xff812345], np.uint32).view(ft)
    return np.array([0x7ff8000000000000, 0xfff8000000000000, 0x7ff8000012345678, 0xfff4000000000001,
                     0x7ff0000000000001, 0xfff0000012345678], np.uint64).view(ft)


def exp_inputs(name, n):
    """n inputs (a multiple of 8): the specials, then the sweeps."""
    ft, it, lo, hi, den = DT[name]
    special = [ft(v) for v in (0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, np.log(2), -np.log(2))]
    ln_max = np.log(np.finfo(ft).max)
    for v in (lo, hi, ln_max, den, np.log(np.finfo(ft).smallest_subnormal), -ln_max, 88.0, -88.0):
        special += neighbours(ft, v)
    special += [np.finfo(ft).smallest_subnormal, -np.finfo(ft).smallest_subnormal, np.finfo(ft).tiny,
                np.finfo(ft).max, -np.finfo(ft).max]
    special = np.concatenate([np.array(special, ft), nans(ft)])   # torch returns the input, quietened
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


# Per dtype: where SLEEF's tanh becomes exactly 1 (|x| above it).
TANH_ONE = {"float32": 8.664339742, "float64": 18.714973875}


def tanh_inputs(name, n):
    """n inputs: the specials, then the sweeps (both signs)."""
    ft, it = DT[name][0], DT[name][1]
    fi = np.finfo(ft)
    special = [ft(v) for v in (0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, 1e-30, 1e-8, fi.max, -fi.max)]
    for v in (TANH_ONE[name], -TANH_ONE[name], fi.smallest_subnormal, fi.tiny, 0.625, 2.0 ** -12):
        special += neighbours(ft, v)
    special = np.concatenate([np.array(special, ft), nans(ft)])
    m = n - len(special)
    even = np.linspace(-24, 24, m // 2).astype(ft)
    bits = np.linspace(0, int(np.array(24.0, ft).view(it)), m - m // 2).astype(it).view(ft)
    bits[1::2] *= ft(-1)
    return np.concatenate([special, even, bits])


def log_inputs(name, n):
    """n inputs: the specials, then the sweeps."""
    ft, it = DT[name][0], DT[name][1]
    fi = np.finfo(ft)
    special = [ft(v) for v in (0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.75, 1.5, 2.0, 0.5, np.e, fi.max, -fi.tiny)]
    for v in (fi.smallest_subnormal, fi.tiny, 1.0, 0.75, 1.5, fi.max / 2):
        special += neighbours(ft, v)
    special = np.concatenate([np.array(special, ft), nans(ft)])
    m = n - len(special)
    even = np.linspace(0, 100, m // 4).astype(ft)
    near1 = np.linspace(0.5, 2, m // 4).astype(ft)
    bits = np.linspace(0, int(np.array(np.inf, ft).view(it)) - 1, m - 2 * (m // 4)).astype(it).view(ft)
    return np.concatenate([special, even, near1, bits])


def log1p_inputs(name, n):
    """n inputs: the specials, then the sweeps."""
    ft, it = DT[name][0], DT[name][1]
    fi = np.finfo(ft)
    special = [ft(v) for v in (0.0, -0.0, np.inf, -np.inf, -1.0, -2.0, 1.0, -0.5, 1e-30, -1e-30, 1e38, 1e307 if ft == np.float64 else 1e38,
                               fi.max, fi.smallest_subnormal, -fi.smallest_subnormal)]
    for v in (-1.0, fi.tiny - 1 if ft == np.float64 else ft(-1) + fi.eps / 2, 1e38, 0.5, -0.25):
        special += neighbours(ft, v)
    special = np.concatenate([np.array(special, ft), nans(ft)])
    m = n - len(special)
    even = np.linspace(-1, 10, m // 4).astype(ft)
    small = np.linspace(-1e-3, 1e-3, m // 4).astype(ft)
    r = m - 2 * (m // 4)
    bits = np.linspace(0, int(np.array(np.inf, ft).view(it)) - 1, r - r // 3).astype(it).view(ft)
    # and over the bit patterns of (-1, 0]
    neg = -np.linspace(0, int(np.array(1.0, ft).view(it)) - 1, r // 3).astype(it).view(ft)
    return np.concatenate([special, even, small, bits, neg])


def expm1_inputs(name, n):
    """n inputs: the specials, then the sweeps."""
    ft, it = DT[name][0], DT[name][1]
    fi = np.finfo(ft)
    hi, lo = (88.72283172607421875, -16.635532333438687426013570) if ft == np.float32 else \
        (709.782712893383996732223, -36.736800569677101399113302437)
    special = [ft(v) for v in (0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 1e-30, -1e-30, fi.max, -fi.max,
                               fi.smallest_subnormal, -fi.smallest_subnormal)]
    for v in (hi, lo, 0.5, -0.5):
        special += neighbours(ft, v)
    special = np.concatenate([np.array(special, ft), nans(ft)])
    m = n - len(special)
    even = np.linspace(lo - 4, hi + 4, m // 2).astype(ft)
    bits = np.linspace(0, int(np.array(hi, ft).view(it)), m - m // 2).astype(it).view(ft)
    bits[1::2] *= ft(-1)
    return np.concatenate([special, even, bits])


def grouped(ft, *classes):
    """The classes of inputs one after another, each padded (with its first value) to a multiple
    of 8 elements: torch's vector functions take 8 (or 4) elements at a time from the start of the
    array, and SLEEF's trigonometric ones pick one argument reduction for the whole vector (the
    fast one only when every element allows it), so that no vector mixes two classes."""
    out = []
    for c in classes:
        c = np.asarray(c, ft)
        pad = (-len(c)) % 8
        out.append(np.concatenate([c, np.full(pad, c[0], ft)]))
    return np.concatenate(out)


def spread_inputs(name, n, lo, hi, edges, extra=()):
    """n inputs (about) for a function on [lo, hi]: specials and the edges of SLEEF's intervals
    with their neighbours, values spread evenly over [lo, hi] and over the bit patterns of the
    magnitudes up to max(|lo|, |hi|), both signs."""
    ft, it = DT[name][0], DT[name][1]
    fi = np.finfo(ft)
    special = [ft(v) for v in (0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, -0.5, 1e-30, -1e-30, fi.max, -fi.max,
                               fi.smallest_subnormal, -fi.smallest_subnormal, fi.tiny) + tuple(extra)]
    for v in edges:
        special += neighbours(ft, v) + neighbours(ft, -v)
    special = np.concatenate([np.array(special, ft), nans(ft)])
    m = n - len(special)
    even = np.linspace(lo, hi, m // 2).astype(ft)
    top = max(abs(lo), abs(hi))
    bits = np.linspace(0, int(np.array(top, ft).view(it)), m - m // 2).astype(it).view(ft)
    bits[1::2] *= ft(-1)
    return np.concatenate([special, even, bits])


# SLEEF's u10 trigonometric functions reduce |x| below these by Cody-Waite (float: 125; double:
# 15, and by a longer Cody-Waite below 1e14) and above by Payne-Hanek.
TRIG_FAST = {"float32": (125.0,), "float64": (15.0, 1e14)}


def trig_inputs(name, n):
    """n inputs (about): the fast range (specials, values spread over [-124, 124] and near
    multiples of pi/2), then, in vectors of their own, the larger ones (up to the float's
    maximum, with inf and NaN)."""
    ft, it = DT[name][0], DT[name][1]
    fi = np.finfo(ft)
    fast = TRIG_FAST[name][0]
    k = np.arange(-int(fast / (np.pi / 2)), int(fast / (np.pi / 2)) + 1)
    near = np.concatenate([neighbours(ft, v, 2) for v in k * (np.pi / 2)])
    near = near[np.abs(near) < fast]
    small = np.concatenate([np.array([0.0, -0.0, 1e-30, -1e-30, fi.smallest_subnormal, fi.tiny], ft), near,
                            np.linspace(-fast, fast, n // 2).astype(ft)[1:-1],
                            np.linspace(0, int(np.array(fast, ft).view(it)) - 1, n // 8).astype(it).view(ft)])
    edges = [neighbours(ft, v)[1:] for v in TRIG_FAST[name]]
    big = np.concatenate([np.array([np.inf, -np.inf, fi.max, -fi.max], ft), nans(ft), np.concatenate(edges),
                          np.geomspace(fast, float(fi.max) / 2, n // 8).astype(ft),
                          -np.geomspace(fast, 1e6, n // 8).astype(ft)])
    big = big[~(np.abs(big) < fast)]
    return grouped(ft, small, big)


# name: the torch function and its inputs, float32 and float64 (n the count).
FUNCS = {
    "log2": lambda name, n: log_inputs(name, n),
    "log10": lambda name, n: log_inputs(name, n),
    "erf": lambda name, n: spread_inputs(name, n, -6.0, 6.0, (1.1, 2.4, 4.0, 6.0)),
    "erfc": lambda name, n: spread_inputs(name, n, -6.0, 30.0, (1.0, 2.2, 4.3, 10.1, 27.3, 28.0)),
    "asin": lambda name, n: spread_inputs(name, n, -1.0, 1.0, (0.5, 1.0), (2.0, -2.0)),
    "acos": lambda name, n: spread_inputs(name, n, -1.0, 1.0, (0.5, 1.0), (2.0, -2.0)),
    "atan": lambda name, n: spread_inputs(name, n, -40.0, 40.0, (1.0, 1e8, 1e30)),
    "sin": lambda name, n: trig_inputs(name, n),
    "cos": lambda name, n: trig_inputs(name, n),
    "tan": lambda name, n: trig_inputs(name, n),
}


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
        x = tanh_inputs(name, 4096 if ft == np.float32 else 2048)
        np.save(os.path.join(OUT, "tanh_%s.npy" % name), np.stack([x, torch.tanh(torch.from_numpy(x)).numpy()]))
        x = log_inputs(name, 4096 if ft == np.float32 else 2048)
        np.save(os.path.join(OUT, "log_%s.npy" % name), np.stack([x, torch.log(torch.from_numpy(x)).numpy()]))
        for fn, inputs in (("log1p", log1p_inputs), ("expm1", expm1_inputs)):
            x = inputs(name, 4096 if ft == np.float32 else 2048)
            np.save(os.path.join(OUT, "%s_%s.npy" % (fn, name)), np.stack([x, getattr(torch, fn)(torch.from_numpy(x)).numpy()]))
        for fn, inputs in FUNCS.items():
            x = inputs(name, 4096 if ft == np.float32 else 2048)
            np.save(os.path.join(OUT, "%s_%s.npy" % (fn, name)), np.stack([x, getattr(torch, fn)(torch.from_numpy(x)).numpy()]))
    with open(os.path.join(OUT, "README"), "w") as f:
        f.write("generated by tests/golden/gen_math.py from PyTorch %s (CPU capability %s); do not edit\n"
                % (torch.__version__, cpu_capability()))


def cpu_capability():
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            return line.split(":")[1].strip()
    return "?"


def sweeps(fn):
    """(label, inputs) of fn's sweep."""
    ft, it = np.float32, np.uint32
    if fn == "exp":
        # float32: every stride-th bit pattern of [-104, 100] (both signs), and the specials
        lo, hi, evenly, f64 = -104.0, 100.0, (-110, 110), (-1010, 720)
        specials = exp_inputs("float32", 4096), exp_inputs("float64", 2048)
    elif fn == "tanh":
        lo, hi, evenly, f64 = -10.0, 10.0, (-25, 25), (-25, 25)
        specials = tanh_inputs("float32", 4096), tanh_inputs("float64", 2048)
    elif fn == "log":
        # every stride-th positive float32 (and as many negatives, which give NaN)
        lo, hi, evenly, f64 = -1e-30, float(np.finfo(ft).max), (0, 1000), (0, 1e6)
        specials = log_inputs("float32", 4096), log_inputs("float64", 2048)
    elif fn == "log1p":
        lo, hi, evenly, f64 = -1.0, float(np.finfo(ft).max), (-1, 1000), (-1, 1e6)
        specials = log1p_inputs("float32", 4096), log1p_inputs("float64", 2048)
    else:
        lo, hi, evenly, f64 = -20.0, 90.0, (-20, 90), (-40, 720)
        specials = expm1_inputs("float32", 4096), expm1_inputs("float64", 2048)
    pos = np.arange(0, int(np.array(hi, ft).view(it)) + 1, STRIDE, dtype=it).view(ft)
    neg = np.arange(0x80000000, int(np.array(lo, ft).view(it)) + 1, STRIDE, dtype=it).view(ft)
    return [("float32", np.concatenate([neg, pos, specials[0]])),
            ("float32 even", np.linspace(*evenly, 8_000_000).astype(ft)),
            ("float64", np.concatenate([rng.uniform(*f64, 4_000_000), rng.uniform(-1, 1, 1_000_000), specials[1]])),
            ("float64 bits", rng.integers(0, 2 ** 64, 2_000_000, dtype=np.uint64).view(np.float64))]


STRIDE = 64


def check(tdl, fns):
    """Runs tdl's fns over their sweeps and compares them with torch's, bit for bit."""
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for fn in fns:
            script = os.path.join(d, fn + ".tdl")
            with open(script, "w") as f:
                f.write("save(argv[2], load(argv[1]).%s())\n" % fn)
            for label, x in sweeps(fn):
                src, dst = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
                np.save(src, x)
                subprocess.run([tdl, script, src, dst], check=True)
                got, want = np.load(dst), getattr(torch, fn)(torch.from_numpy(x)).numpy()
                it = np.uint32 if x.dtype == np.float32 else np.uint64
                diff = np.nonzero(got.view(it) != want.view(it))[0]
                print("%-4s %-13s %9d values, %d differ" % (fn, label, len(x), len(diff)))
                for i in diff[:5]:
                    print("    %s(%r) = %r, torch %r" % (fn, x[i], got[i], want[i]))
                bad += len(diff)
    return bad


if __name__ == "__main__":
    print("torch %s, CPU capability %s" % (torch.__version__, cpu_capability()), file=sys.stderr)
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        STRIDE = int(sys.argv[3]) if len(sys.argv) > 3 else STRIDE
        sys.exit(1 if check(sys.argv[2], sys.argv[4:5] or ["exp", "tanh", "log", "log1p", "expm1"]) else 0)
    write()
