#!/usr/bin/python3
"""check_math_binary.py: compares tdl's copysign, fmax, fmin, gcd, lcm, signbit, sgn, logaddexp,
asinh, acosh, atanh and exp2 with PyTorch's CPU kernels, bit for bit, over about a million operand pairs per op
and dtype: random bit patterns (NaNs with payloads, infinities, denormals, both zeros), values
drawn from a small set so that ties and equal magnitudes of both signs are common, and for ints
the extremes (MIN, -1, 0); logaddexp also over pairs near each other, the unary functions over
[-100, 100] (the "near" rows). bfloat16 and float16 travel as float32 (.npy has no bfloat16) and are
converted on both sides; bfloat16 NaN results are compared as NaNs (their bits depend on which of
PyTorch's conversions rounds them). Prints the counts; exit status 1 on any difference.

    /usr/bin/python3 tests/golden/check_math_binary.py TDL
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

rng = np.random.default_rng(20261128)
N = 1 << 20


def floats(dt):
    it = {np.float32: np.uint32, np.float64: np.uint64}[dt]
    bits = rng.integers(0, np.iinfo(it).max, N // 2, dtype=it, endpoint=True).view(dt)
    small = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40,
                      3.0e38, -3.0e38, 0.1, -0.1], dtype=dt)
    return np.concatenate([bits, small[rng.integers(0, len(small), N - N // 2)]])


def ints(dt):
    info = np.iinfo(dt)
    bits = rng.integers(info.min, info.max, N // 2, dtype=dt, endpoint=True)
    small = np.array([0, 1, -1, 2, -2, 6, -4, 12, 360, -360, info.min, info.max, info.min + 1, 7, 1 << 20,
                      -(1 << 20)], dtype=dt)
    return np.concatenate([bits, small[rng.integers(0, len(small), N - N // 2)]])


CASES = [  # (tdl expression of a and b, torch function, operand dtypes, narrow)
    ("copysign(a, b)", torch.copysign, ["float32", "float64", "bfloat16", "float16", "int32"]),
    ("fmax(a, b)", torch.fmax, ["float32", "float64", "bfloat16", "float16", "int32", "int64"]),
    ("fmin(a, b)", torch.fmin, ["float32", "float64", "bfloat16", "float16", "int32", "int64"]),
    ("logaddexp(a, b)", torch.logaddexp, ["float32", "float64", "bfloat16"]),
    ("near logaddexp(a, b)", torch.logaddexp, ["float32", "float64", "bfloat16"]),
    ("gcd(a, b)", torch.gcd, ["int32", "int64"]),
    ("lcm(a, b)", torch.lcm, ["int32", "int64"]),
    ("asinh(a)", lambda a, b: torch.asinh(a), ["float32", "float64", "bfloat16"]),
    ("acosh(a)", lambda a, b: torch.acosh(a), ["float32", "float64", "bfloat16"]),
    ("atanh(a)", lambda a, b: torch.atanh(a), ["float32", "float64", "bfloat16"]),
    ("exp2(a)", lambda a, b: torch.exp2(a), ["float32", "float64", "bfloat16", "float16"]),
    ("near asinh(a)", lambda a, b: torch.asinh(a), ["float32", "float64"]),
    ("near acosh(a)", lambda a, b: torch.acosh(a), ["float32", "float64"]),
    ("near atanh(a)", lambda a, b: torch.atanh(a), ["float32", "float64"]),
    ("near exp2(a)", lambda a, b: torch.exp2(a), ["float32", "float64"]),
    ("signbit(a)", lambda a, b: torch.signbit(a), ["float32", "float64", "bfloat16", "float16", "int32"]),
    ("sgn(a)", lambda a, b: torch.sgn(a), ["float32", "float64", "bfloat16", "int64"]),
]


def check(tdl):
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for expr, fn, dts in CASES:
            for dt in dts:
                narrow = dt in ("bfloat16", "float16")
                carrier = np.float32 if narrow else getattr(np, dt)
                gen = floats if np.issubdtype(carrier, np.floating) else ints
                a, b = gen(carrier), gen(carrier)
                if expr.startswith("near") and expr.endswith("(a)"):  # the working range
                    a = rng.uniform(-1, 1, N).astype(carrier) * rng.choice([1, 3, 10, 100], N).astype(carrier)
                elif expr.startswith("near"):  # b near a, where log(1 + exp(-|a - b|)) counts
                    a = rng.uniform(-100, 100, N).astype(carrier)
                    b = (a + rng.normal(0, 4, N)).astype(carrier)
                    b[::7] = a[::7]
                if expr.startswith("lcm"):  # PyTorch's MIN / gcd traps where gcd is -1 (SIGFPE)
                    a[a == np.iinfo(carrier).min] += 1
                if narrow:  # values of the narrow dtype, as float32
                    a = torch.from_numpy(a).to(getattr(torch, dt)).float().numpy()
                    b = torch.from_numpy(b).to(getattr(torch, dt)).float().numpy()
                conv = ".%s()" % {"bfloat16": "bfloat16", "float16": "half"}[dt] if narrow else ""
                back = ".float()" if narrow else ""
                script = os.path.join(d, "t.tdl")
                with open(script, "w") as f:
                    f.write("a = load(argv[1])%s\nb = load(argv[2])%s\nr = %s\n" % (conv, conv, expr[5:] if expr.startswith("near") else expr))
                    f.write("save(argv[3], r%s)\n" % ("" if expr.startswith("signbit") else back))
                pa, pb, po = (os.path.join(d, n) for n in ("a.npy", "b.npy", "o.npy"))
                np.save(pa, a)
                np.save(pb, b)
                subprocess.run([tdl, script, pa, pb, po], check=True)
                got = np.load(po)
                ta, tb = torch.from_numpy(a), torch.from_numpy(b)
                if narrow:
                    ta, tb = ta.to(getattr(torch, dt)), tb.to(getattr(torch, dt))
                want = fn(ta, tb)
                want = (want.float() if narrow and want.dtype != torch.bool else want).numpy()
                ok = got.dtype == want.dtype
                if ok:
                    gb = got.view(np.uint8).reshape(len(got), -1)
                    wb = want.view(np.uint8).reshape(len(want), -1)
                    same = ~(gb != wb).any(axis=1)
                    if dt == "bfloat16" and got.dtype.kind == "f":
                        # NaN's bits: PyTorch's scalar float-to-bfloat16 rounding gives 0x7FC0, its
                        # vector one (and fcdim.h's) 0xFFFF; a NaN is compared as a NaN here
                        same |= np.isnan(got) & np.isnan(want)
                    diff = np.nonzero(~same)[0]
                else:
                    diff = np.arange(len(got))
                print("%-12s %-9s %8d values, %d differ%s" % (expr, dt, len(a), len(diff),
                                                           "" if ok else " (dtype %s, torch %s)" % (got.dtype, want.dtype)))
                for i in diff[:5]:
                    print("    a=%r b=%r: tdl %r, torch %r" % (a[i], b[i], got[i], want[i]))
                bad += len(diff)
    return bad


if __name__ == "__main__":
    # one thread: logaddexp's vector code then runs on every element (N is a multiple of its
    # width), where several would leave scalar tails (libm's exp and log) inside the tensor
    torch.set_num_threads(1)
    sys.exit(1 if check(sys.argv[1]) else 0)
