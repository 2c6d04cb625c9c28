# op_call.py — torch eager's side of bench/host.sh's per-call host cost (op_call.tdl: the same
# workloads, on the CPU, one thread). Prints "NAME MICROSECONDS" per workload.
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.rand(1000)
z = torch.rand(1000)


def bench(f):
    best = 1e9
    for r in range(20):
        t0 = time.perf_counter()
        f()
        t1 = time.perf_counter()
        best = min(best, (t1 - t0) * 1e6 / 1000)
    return best


def add_scalar():
    for i in range(1000):
        y = x + 1.0


def add_tensor():
    for i in range(1000):
        y = x + z


def add_new_scalar():
    for i in range(1000):
        y = x + float(i)


def chain():
    for i in range(1000):
        y = (x * 2.0 + z).relu()


def add_inplace():
    w = x.clone()
    for i in range(1000):
        w.add_(1.0)


def sum_item():
    for i in range(1000):
        s = x.sum().item()


for f in [add_scalar, add_tensor, add_new_scalar, chain, add_inplace, sum_item]:
    print(f.__name__, "%.3f" % bench(f))
