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
    the (values, indices) of max/min/sort/topk as torch.return_types.NAME(values=..., indices=...);
  - tuples and lists element by element as Python does, with these rules inside them.
Python's builtins keep their names where torch has the same one (abs, max, min, sum, round, all,
any, pow, ...), as they do in tdl. `argv` is [SCRIPT, ARGS...]. load/save read and write .npy
through numpy. rand/randn with seed= cannot reproduce tdl's generator and raise; keep them out
of differential scripts.

First-class dimensions (tests/golden/gen_dims.py) run under functorch.dim, imported on the first
call of dims() so that a script without dims never sees functorch's patches of torch.Tensor:
  - dims(n=None, sizes=None) names its dims after the assignment's targets, as tdl does
    (`i, j = dims(2)`, `d = dims()`, `a, b = dims(sizes=[3, None])`): functorch's own inference
    reads bytecode this Python no longer has, so the targets are read from the calling statement's
    source line (one statement per line; see register_source for code that has no file);
  - stack(tensors, new_dim, dim) and softmax(t, dim=d) are functorch's when a first-class dim
    is involved, torch's otherwise;
  - print writes a tensor with dims as functorch's repr does ("tensor(...)\nwith dims=(i, 0)
    sizes=(2, 3)", dtype suffix without "torch."), a dim by its name.
"""
import ast
import builtins
import linecache
import os
import sys

import torch

_py_print = builtins.print


def _tensor_text(t):
    # repr(t) of a tensor that requires no grad and lives on the cpu: only the dtype suffix
    # names torch.
    return repr(t).replace("dtype=torch.", "dtype=")


def _fcdim():
    """functorch.dim once some script has imported it (through dims()), else None."""
    return sys.modules.get("functorch.dim")


def fmt(v, top=True):
    """The text tdl's print gives for v (str() at the top level, repr() inside containers)."""
    if isinstance(v, torch.Tensor):
        return _tensor_text(v)
    fd = _fcdim()
    if fd is not None:
        if isinstance(v, fd.Dim):
            return repr(v)
        if isinstance(v, fd.Tensor):
            return _tensor_text(v)
    if isinstance(v, torch.dtype):
        return str(v)[len("torch."):]
    if isinstance(v, torch.Size):
        return fmt(tuple(v), top)
    if type(v).__module__ == "torch.return_types":
        # the (values, indices) of max/min/sort/topk, as torch prints them
        fields = type(v).__match_args__
        return "torch.return_types.%s(\n%s)" % (
            type(v).__name__, ",\n".join("%s=%s" % (f, fmt(getattr(v, f), False)) for f in fields))
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


# ---- first-class dimensions -------------------------------------------------------------------------

def register_source(filename, src):
    """Makes src the text of filename for linecache, so that dims() can read its calling line in
    code compiled from a string with that file name."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)


def _target_names(frame):
    """The names assigned by the statement on the frame's current line: `i, j = dims(2)` gives
    (('i', 'j'), False), `d = dims()` gives (('d',), True) (True: a single name, not a tuple);
    None when the line is not such an assignment."""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno, frame.f_globals).strip()
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign) or len(tree.body[0].targets) != 1:
        return None
    target = tree.body[0].targets[0]
    elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
    if not all(isinstance(e, ast.Name) for e in elts):
        return None
    return tuple(e.id for e in elts), isinstance(target, ast.Name)


def dims(n=None, sizes=None):
    """tdl's dims(): n fresh functorch dims (one Dim when there is one target, else a tuple),
    named after the assignment's targets, with the sizes given (None: unbound)."""
    import functorch.dim as fd
    names, single = _target_names(sys._getframe(1)) or ((), False)
    if n is None:
        n = len(sizes) if sizes is not None else len(names) or 1
    if sizes is not None and len(sizes) != n:
        raise ValueError("dims: %d sizes for %d dims" % (len(sizes), n))
    if len(names) != n:    # `ds = dims(3)`: ds0, ds1, ds2
        names = tuple("%s%d" % (names[0] if single else "d", k) for k in range(n))
    ds = tuple(fd.Dim(name) for name in names)
    for d, size in zip(ds, sizes or ()):
        if size is not None:
            d.size = size
    return ds[0] if single and n == 1 else ds


def _has_dims(*vals):
    fd = _fcdim()
    if fd is None:
        return False
    for v in vals:
        if isinstance(v, (fd.Dim, fd.Tensor)):
            return True
        if isinstance(v, (tuple, list)) and _has_dims(*v):
            return True
    return False


def _stack(tensors, *args, **kwargs):
    """torch.stack(tensors, dim=0), or functorch.dim.stack(tensors, new_dim, dim=0) when the
    second argument is a first-class dim."""
    new_dim = args[0] if args else kwargs.get("new_dim")
    if _has_dims(new_dim) or "new_dim" in kwargs:
        import functorch.dim as fd
        return fd.stack(tensors, *args, **kwargs)
    return torch.stack(tensors, *args, **kwargs)


def _softmax(input, *args, **kwargs):
    """torch.softmax, or functorch.dim.softmax when a first-class dim is involved."""
    if _has_dims(input, *args, *kwargs.values()):
        return _fcdim().softmax(input, *args, **kwargs)
    return torch.softmax(input, *args, **kwargs)


def _grad(outputs, inputs, grad_outputs=None, retain_graph=None):
    """torch.autograd.grad, returning a list as tdl's grad() does."""
    return list(torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph=retain_graph))


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
        "dims": dims,
        "stack": _stack,
        "softmax": _softmax,
        "grad": _grad,
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
    sys.modules.setdefault("nn", torch.nn.functional)     # `import nn`: tdl's stdlib nn has its names
    if "import vision" in src:      # tdl's stdlib vision: torchvision.ops's names
        import torchvision.ops
        sys.modules.setdefault("vision", torchvision.ops)
    register_source(os.path.basename(script), src)
    code = compile(src, os.path.basename(script), "exec")
    exec(code, namespace(os.path.basename(script), sys.argv[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
