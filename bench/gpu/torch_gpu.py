#!/usr/bin/python3
"""torch_gpu.py — PyTorch's side of bench/gpu.sh, on cuda.

usage: python3 torch_gpu.py bw
       python3 torch_gpu.py chain N REPEATS WARMUP
       python3 torch_gpu.py small CALLS
bw     the device's bandwidth: a 1 GiB device-to-device copy, bytes read and written / time, best
       of 20 after 3; prints "bw BYTES_PER_SECOND".
chain  where(a > 0, a*b + c, c*0.5).sum() on a, b, c made as bench/gpu/chain.tdl makes them
       (from arange(N), float32), eager and torch.compile'd, each evaluation ending in .item(),
       best of REPEATS after WARMUP; prints "eager N BEST Y", "compile N BEST Y", and "ref N Y S":
       the sum computed in float64 from the same float32 a, b, c, and the sum of its terms'
       magnitudes (the scale for the agreement check).
small  CALLS evaluations of x + 1.0 on a 1000-element cuda tensor, then one synchronize;
       prints "small CALLS SECONDS_PER_CALL"."""
import sys
import time

import torch


def best_of(f, repeats, warmup):
    best, y = float("inf"), None
    for r in range(-warmup, repeats):
        t0 = time.perf_counter()
        y = f()
        dt = time.perf_counter() - t0
        if r >= 0:
            best = min(best, dt)
    return best, y


def chain(a, b, c):
    return torch.where(a > 0, a * b + c, c * 0.5).sum()


def main():
    what = sys.argv[1]
    dev = torch.device("cuda")
    if what == "bw":
        x = torch.empty(1 << 28, dtype=torch.float32, device=dev)
        y = torch.empty_like(x)

        def copy():
            y.copy_(x)
            torch.cuda.synchronize()
        t, _ = best_of(copy, 20, 3)
        print("bw %.6g" % (2 * x.numel() * 4 / t))
    elif what == "chain":
        n, repeats, warmup = (int(s) for s in sys.argv[2:5])
        i = torch.arange(n, device=dev)
        a = (i * 0.001).sin()
        b = (i * 0.0007).cos()
        c = (i * 0.0003).sin() - 0.2
        del i
        t, y = best_of(lambda: chain(a, b, c).item(), repeats, warmup)
        print("eager %d %.9g %.17g" % (n, t, y), flush=True)
        compiled = torch.compile(chain)
        t, y = best_of(lambda: compiled(a, b, c).item(), repeats, max(warmup, 3))
        print("compile %d %.9g %.17g" % (n, t, y), flush=True)
        ad, bd, cd = a.double(), b.double(), c.double()
        terms = torch.where(ad > 0, ad * bd + cd, cd * 0.5)
        print("ref %d %.17g %.17g" % (n, terms.sum().item(), terms.abs().sum().item()), flush=True)
    elif what == "small":
        calls = int(sys.argv[2])
        x = torch.rand(1000, device=dev)
        for _ in range(20):
            x + 1.0
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            x + 1.0
        torch.cuda.synchronize()
        print("small %d %.9g" % (calls, (time.perf_counter() - t0) / calls))
    else:
        sys.exit("torch_gpu.py: unknown run " + what)


if __name__ == "__main__":
    main()
