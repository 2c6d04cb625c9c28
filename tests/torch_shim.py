#!/usr/bin/python3
"""torch_shim.py — runs a tdl script under PyTorch, printing what tdl should print.

usage: /usr/bin/python3 tests/torch_shim.py SCRIPT.tdl [ARGS...]

This is how tests/run_scripts.sh --torch writes the expected output of the `# torch-diff`
scripts: a tdl script that stays inside the Python subset runs here as Python, with PyTorch's
names visible without `torch.` (tdl's surface is PyTorch's with the prefix deleted), and with a
print that writes values the way tdl prints them:
  - a tensor as repr(tensor) with "torch." taken out of the dtype suffix
    (tensor([1, 2], dtype=int32)); tdl's printer keeps torch's line wrapping;
  - a dtype by its bare name (float32), a shape (torch.Size) as the tuple it is in tdl ((2, 3)),
    the (values, indices) pair of max/min/... as a plain tuple;
  - tuples and lists element by element as Python does, with these rules inside them.
Python's builtins keep their names where torch has the same one (abs, max, min, sum, round, all,
any, pow, ...), as they do in tdl. `argv` is [SCRIPT, ARGS...]. load/save read and write .npy
through numpy. rand/randn with seed= cannot reproduce tdl's generator and raise; keep them out
of differential scripts.
"""
import builtins
import os
import sys

import torch

_py_print = builtins.print


def _tensor_text(t):
    # repr(t) of a tensor that requires no grad and lives on the cpu: only the dtype suffix
    # names torch.
    return repr(t).replace("dtype=torch.", "dtype=")


def fmt(v, top=True):
    """The text tdl's print gives for v (str() at the top level, repr() inside containers)."""
    if isinstance(v, torch.Tensor):
        return _tensor_text(v)
    if isinstance(v, torch.dtype):
        return str(v)[len("torch."):]
    if isinstance(v, torch.Size):
        return fmt(tuple(v), top)
    if isinstance(v, tuple):
        items = [fmt(e, False) for e in v]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(fmt(e, False) for e in v) + "]"
    if isinstance(v, torch.device):
        return str(v) if top else repr(str(v))
    return str(v) if top else repr(v)


def tdl_print(*args, sep=" ", end="\n"):
    sys.stdout.write(sep.join(fmt(a) for a in args) + end)


def _load(path):
    import numpy as np
    return torch.from_numpy(np.load(path))


def _save(path, t):
    import numpy as np
    np.save(path, t.detach().cpu().numpy())


def _no_seeded_random(*args, **kwargs):
    raise RuntimeError("rand/randn/randint in a torch-diff script: torch cannot reproduce tdl's generator")


def namespace(script, args):
    py = set(dir(builtins))
    ns = {n: getattr(torch, n) for n in dir(torch) if not n.startswith("_") and n not in py}
    ns.update({
        "__name__": "__main__",
        "__file__": script,
        "print": tdl_print,
        "argv": [script] + list(args),
        "load": _load,
        "save": _save,
        "rand": _no_seeded_random,
        "randn": _no_seeded_random,
        "randint": _no_seeded_random,
    })
    return ns


def main():
    if len(sys.argv) < 2:
        _py_print("usage: torch_shim.py SCRIPT.tdl [ARGS...]", file=sys.stderr)
        return 2
    script = sys.argv[1]
    with open(script) as f:
        src = f.read()
    torch.set_printoptions(profile="default")
    code = compile(src, os.path.basename(script), "exec")
    exec(code, namespace(os.path.basename(script), sys.argv[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
