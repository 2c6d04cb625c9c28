#!/usr/bin/python3
"""gen_grad.py: writes tests/golden/grad/, PyTorch autograd's gradients, which tdl's reverse mode
(fcdim/autograd.c) must match (tests/test_grad.c).

Run from the repository root with the Debian python3 (torch 1.13 and torchvision):
    /usr/bin/python3 tests/golden/gen_grad.py

Each case is a program in the subset tdl and PyTorch share (tdl's surface is PyTorch's without
`torch.`): it loads its inputs (NAME.IN.npy, standard normal unless said otherwise), makes some of
them require grad, runs a computation and a backward (or grad()), and leaves gradients in globals.
Here it runs under PyTorch (tests/torch_shim.py's namespace; `vision.roi_align` is torchvision's);
the globals named by the case are written as NAME.VAR.out.npy. cases.txt holds one case per line,
"name<TAB>program<TAB>OK var=file ..." (program with \\ \t \n escaped, golden_cases.h). The C test
runs each program in a fresh interpreter (with `import vision`) and compares every named global
("var=None": it must be None):
same shape and dtype, |tdl - torch| <= tol * (|torch| + amax|torch|), tol 1e-5 for float32 and
1e-12 for float64.

Coverage: every differentiable unary and binary op (pow with tensor and scalar exponents, where,
clamp with ties at the bounds, minimum/maximum with ties, casts between float types),
broadcasting back to each input's shape, the reductions (sum, mean, prod, amax/amin with ties split
evenly, max/min with indices, logsumexp, softmax, log_softmax), views and shape ops (reshape, view,
permute, transpose, expand, stepped slices, squeeze/unsqueeze, flatten, channels_last copies),
reads through indexing (basic, advanced with repeats, bool masks, index_select, gather), writes
(cat, stack, setitem, index_put_ with and without accumulate, scatter_add, in-place updates of
non-leaves), matmul in its 1-D, 2-D and batched broadcast forms, grad() with grad_outputs, gradients
accumulating over two backward calls, first-class dims (binding and order, sums over dims, dims as
values, gathers through index tensors with dims, masked sums), and vision.roi_align's input
gradient against torchvision's backward on every non-empty case of tests/golden/roi_align
(aligned or not, adaptive and fixed sampling, scales 1 to 1/16, boxes outside the image, zero-size
and inverted boxes, several images, 256 channels, float32 and float64).
"""
import os
import shutil
import sys

import numpy as np
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "grad")
REL = "tests/golden/grad/"
sys.path.insert(0, os.path.join(ROOT, "tests"))
import torch_shim  # noqa: E402

rng = np.random.default_rng(20261126)


class Vision:
    roi_align = staticmethod(torchvision.ops.roi_align)


CASES = []


def case(name, inputs, program, outs):
    """inputs: name -> numpy array (saved as NAME.IN.npy); program: lines; outs: globals to check."""
    CASES.append((name, inputs, program, outs))


def rn(*shape, dt="float64", pos=False):
    a = rng.standard_normal(shape)
    if pos:
        a = np.abs(a) + 0.5
    return a.astype(dt)


def ld(name, inp, rg=True):
    return "%s = load('%s%s.%s.npy')%s" % (inp, REL, name, inp, ".requires_grad_()" if rg else "")


def unary_cases():
    ops = {
        "exp": "x.exp()", "log": "x.log()", "sqrt": "x.sqrt()", "rsqrt": "x.rsqrt()", "sin": "x.sin()",
        "cos": "x.cos()", "tan": "x.tan()", "tanh": "x.tanh()", "sigmoid": "x.sigmoid()", "relu": "x.relu()",
        "abs": "x.abs()", "neg": "-x", "reciprocal": "x.reciprocal()", "log2": "x.log2()",
        "log1p": "x.log1p()", "expm1": "x.expm1()", "asin": "(x * 0.3).asin()", "acos": "(x * 0.3).acos()",
        "atan": "x.atan()", "sinh": "x.sinh()", "cosh": "x.cosh()", "erf": "x.erf()", "square": "x.square()",
        "floor": "x.floor()", "ceil": "x.ceil()", "round": "x.round()", "trunc": "x.trunc()", "sign": "x.sign()",
    }
    positive = {"log", "sqrt", "rsqrt", "log2", "log1p", "reciprocal"}
    for op, expr in ops.items():
        for dt in ("float32", "float64"):
            name = "unary_%s_%s" % (op, dt[5:])
            x = rn(3, 4, dt=dt, pos=op in positive)
            if op == "tan":
                x = (x * 0.4).astype(dt)
            g = rn(3, 4, dt=dt)
            case(name, {"x": x, "g": g}, [ld(name, "x"), ld(name, "g", False), "y = %s" % expr,
                                          "y.backward(g)", "gx = x.grad"], ["gx"])


def binary_cases():
    pairs = {
        "add": "x + y", "sub": "x - y", "mul": "x * y", "div": "x / y", "pow": "x.abs().pow(y)",
        "atan2": "atan2(x, y)", "minimum": "minimum(x, y)", "maximum": "maximum(x, y)",
        "fmod": "fmod(x, y)", "remainder": "remainder(x, y)", "add_alpha": "add(x, y, alpha=2.5)",
        "sub_alpha": "sub(x, y, alpha=-1.5)",
    }
    shapes = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 5)), ((2, 3, 4), (3, 1))]
    for op, expr in pairs.items():
        for si, (sx, sy) in enumerate(shapes):
            dt = "float64" if si % 2 == 0 else "float32"
            name = "binary_%s_%d" % (op, si)
            x, y = rn(*sx, dt=dt), rn(*sy, dt=dt)
            if op in ("div", "fmod", "remainder"):
                y = (np.sign(y) * (np.abs(y) + 0.5)).astype(dt)
            if op in ("minimum", "maximum"):
                # ties: some equal elements (the gradient is split in half)
                x.reshape(-1)[:2] = 0.25
                y.reshape(-1)[:2] = 0.25
            case(name, {"x": x, "y": y}, [ld(name, "x"), ld(name, "y"), "z = %s" % expr,
                                          "(z * z.detach().cos()).sum().backward()", "gx = x.grad", "gy = y.grad"],
                 ["gx", "gy"])
    # scalars on either side
    for nm, expr in {"pow_scalar": "x.pow(3)", "pow_half": "x.abs().pow(0.5)", "rpow": "pow(2.0, x)",
                     "scalar_div": "3.0 / x", "sub_scalar": "1.5 - x", "mul_scalar": "x * -2.0",
                     "pow_zero_base": "(x * 0.0).pow(y)", "pow_zero_exp": "x.pow(y * 0.0)"}.items():
        name = "binary_%s" % nm
        x, y = rn(4, 3, pos=True), rn(4, 3)
        case(name, {"x": x, "y": y}, [ld(name, "x"), ld(name, "y"), "z = %s" % expr, "z.sum().backward()",
                                      "gx = x.grad"], ["gx"])


def misc_pointwise_cases():
    name = "where"
    x, y, c = rn(3, 4), rn(4), rn(3, 4)
    case(name, {"x": x, "y": y, "c": c}, [ld(name, "x"), ld(name, "y"), ld(name, "c", False),
                                          "z = where(c > 0, x * 2, y.exp())", "(z * c).sum().backward()",
                                          "gx = x.grad", "gy = y.grad"], ["gx", "gy"])
    name = "clamp"
    x = np.array([[-2.0, -1.0, -0.5, 0.0], [0.5, 1.0, 1.5, 2.0]])
    case(name, {"x": x}, [ld(name, "x"), "a = x.clamp(-1.0, 1.0)", "b = x.clamp(min=0.0)", "c = clip(x, max=0.5)",
                          "(a * 2 + b * 3 + c * 5).sum().backward()", "gx = x.grad"], ["gx"])
    name = "clamp_tensor"
    x, lo, hi = rn(3, 4), rn(3, 4) - 1, rn(4) + 1
    lo.reshape(-1)[0] = x.reshape(-1)[0]
    case(name, {"x": x, "lo": lo, "hi": hi}, [ld(name, "x"), ld(name, "lo"), ld(name, "hi"),
                                              "z = x.clamp(lo, hi)", "(z * z).sum().backward()",
                                              "gx = x.grad", "glo = lo.grad", "ghi = hi.grad"], ["gx", "glo", "ghi"])
    name = "cast"
    x = rn(3, 4, dt="float32")
    case(name, {"x": x}, [ld(name, "x"), "z = (x.double() * 1.1).exp().float().sin() + x.to(float64).cos()",
                          "z.sum().backward()", "gx = x.grad"], ["gx"])
    name = "chain"
    x, w = rn(5, 3), rn(3)
    case(name, {"x": x, "w": w}, [ld(name, "x"), ld(name, "w"),
                                  "h = (x * w).tanh() + (x - w).sigmoid() * x.sin()",
                                  "l = (h * h).mean() + h.abs().sum() / 7", "l.backward()",
                                  "gx = x.grad", "gw = w.grad"], ["gx", "gw"])


def reduction_cases():
    exprs = {
        "sum_all": "x.sum()", "sum_dim": "(x.sum(1) * x.sum(1).detach()).sum()",
        "sum_dims_keep": "(x.sum((0, 2), keepdim=True) ** 2).sum()",
        "mean_all": "x.mean()", "mean_dim": "(x.mean(-1) ** 2).sum()",
        "prod_all": "x.prod()", "prod_dim": "x.prod(1).sum()",
        "amax_dim": "(x.amax(1) * x.amax(1).detach()).sum()", "amin_dims": "x.amin((0, 2)).sum()",
        "max_all": "x.max()", "min_all": "x.min()",
        "max_dim": "(x.max(1)[0] * 3).sum()", "min_dim_keep": "(x.min(2, keepdim=True)[0] ** 2).sum()",
        "logsumexp": "(x.logsumexp(1) ** 2).sum()", "logsumexp_keep": "x.logsumexp((0, 2), keepdim=True).sum()",
        "softmax": "(x.softmax(1) * x.detach().cos()).sum()",
        "softmax_last": "(x.softmax(-1) ** 2).sum()",
        "log_softmax": "(x.log_softmax(2) * x.detach().sin()).sum()",
    }
    for nm, expr in exprs.items():
        name = "reduce_" + nm
        x = rn(3, 4, 5, dt="float32" if "dim" in nm else "float64")
        if "max" in nm or "min" in nm:
            x = np.round(x * 2) / 2        # ties
        if "prod" in nm:
            x = (np.sign(x) * (np.abs(x) + 0.5)).astype(x.dtype)
        case(name, {"x": x}, [ld(name, "x"), "l = %s" % expr, "l.backward()", "gx = x.grad"], ["gx"])


def view_cases():
    exprs = {
        "reshape": "x.reshape(6, 4)[1:5:2].exp()", "view": "x.view(2, 12).sin()",
        "permute": "x.permute(2, 0, 1)[1] * 3", "transpose": "x.transpose(0, 2).tanh()",
        "t": "x[0].t() @ x[1]", "expand": "x[:, :1].expand(2, 5, 4) * x",
        "slice_steps": "x[1:, 1::2, ::3] * 2", "squeeze": "x[:, :1].squeeze(1).unsqueeze(0).cos()",
        "flatten": "x.flatten(1).sin()", "channels_last": "x.unsqueeze(0).contiguous(memory_format=channels_last).sin()",
        "contiguous_T": "x.transpose(1, 2).contiguous().view(2, -1).exp()",
        "reshape_copy": "x.transpose(0, 1).reshape(3, 8).sin()", "clone": "x.clone().exp()",
        "index_int": "x[1, 2] * x[0, :, 1].sum()", "diag_view": "x[0, :3, :3].diagonal() if False else x[0, 1:3, 2:4]",
    }
    for nm, expr in exprs.items():
        name = "view_" + nm
        x = rn(2, 3, 4, dt="float64" if len(nm) % 2 else "float32")
        if nm in ("expand",):
            x = rn(2, 5, 4)
        if nm in ("reshape",):
            x = rn(2, 3, 4)
        case(name, {"x": x}, [ld(name, "x"), "y = %s" % expr, "(y * y).sum().backward()", "gx = x.grad"], ["gx"])


def gather_cases():
    exprs = {
        "adv_repeat": "x[tensor([0, 2, 2, 1])]", "adv_two": "x[tensor([0, 2, 2]), tensor([1, 1, 3])]",
        "adv_mid": "x[:, tensor([[3, 0], [0, 0]])]", "bool_mask": "x[x > 0]",
        "index_select": "x.index_select(1, tensor([3, 1, 3]))", "gather": "x.gather(1, tensor([[0, 0, 3], [1, 2, 2], [3, 3, 3]]))",
        "neg_index": "x[tensor([-1, 0, -1])]",
    }
    for nm, expr in exprs.items():
        name = "gather_" + nm
        x = rn(3, 4)
        case(name, {"x": x}, [ld(name, "x"), "y = %s" % expr, "(y * y.detach().sin()).sum().backward()",
                              "gx = x.grad"], ["gx"])


def write_cases():
    progs = {
        "cat": ["z = cat([x * 2, y, x[:1]], 0)", "l = (z * z).sum()"],
        "cat_dim1": ["z = cat([x, x.sin()], 1)", "l = (z.cos()).sum()"],
        "stack": ["z = stack([x, x * x, x.exp()], 1)", "l = (z * z.detach()).sum()"],
        "setitem_basic": ["z = x * 1", "z[1] = y[0] * 3", "z[:, 2] = 0.0", "l = (z * z).sum()"],
        "setitem_adv": ["z = x * 2", "z[tensor([0, 2]), tensor([1, 3])] = y[1, :2]", "l = (z * z).sum()"],
        "index_put": ["z = x * 2", "z.index_put_([tensor([0, 0, 2])], y, accumulate=False)", "l = (z.sin()).sum()"],
        "index_put_acc": ["z = x * 2", "z.index_put_([tensor([0, 0, 2])], y, accumulate=True)", "l = (z * z).sum()"],
        "scatter_add": ["z = x.scatter_add(1, tensor([[0, 0, 1, 3], [2, 2, 2, 2], [3, 1, 0, 0]]), y * 2)",
                        "l = (z * z).sum()"],
        "scatter_add_": ["z = x * 1", "z.scatter_add_(0, tensor([[0, 1, 0, 2], [2, 2, 0, 0], [1, 1, 1, 1]]), y.exp())",
                         "l = (z * z).sum()"],
        "inplace_add": ["z = x.sin()", "z += y", "z *= 2", "l = (z * z).sum()"],
        "inplace_view": ["z = x * 1", "z[1:] += y[:2] * 3", "l = (z.exp()).sum()"],
        "copy_zeros": ["z = zeros(3, 4, dtype=float64)", "z[0] = x[1]", "z[2] = y[2] * x[0]", "l = (z * z).sum()"],
    }
    for nm, lines in progs.items():
        name = "write_" + nm
        x, y = rn(3, 4), rn(3, 4)
        case(name, {"x": x, "y": y}, [ld(name, "x"), ld(name, "y")] + lines + ["l.backward()", "gx = x.grad",
                                                                               "gy = y.grad"], ["gx", "gy"])


def matmul_cases():
    shapes = {"vv": ((4,), (4,)), "mv": ((3, 4), (4,)), "vm": ((4,), (4, 5)), "mm": ((3, 4), (4, 5)),
              "bmm": ((2, 3, 4), (2, 4, 5)), "bcast": ((2, 1, 3, 4), (3, 4, 5)), "bm": ((2, 3, 4), (4, 5)),
              "mb": ((3, 4), (2, 4, 5))}
    for nm, (sa, sb) in shapes.items():
        for dt in ("float32", "float64"):
            name = "matmul_%s_%s" % (nm, dt[5:])
            a, b = rn(*sa, dt=dt), rn(*sb, dt=dt)
            case(name, {"a": a, "b": b}, [ld(name, "a"), ld(name, "b"), "c = a @ b",
                                          "(c * c.detach().cos()).sum().backward()", "ga = a.grad", "gb = b.grad"],
                 ["ga", "gb"])
    name = "matmul_chain"
    x, w1, w2 = rn(5, 3), rn(3, 4), rn(4, 2)
    case(name, {"x": x, "w1": w1, "w2": w2}, [ld(name, "x", False), ld(name, "w1"), ld(name, "w2"),
                                              "h = (x @ w1).relu()", "l = (h @ w2).log_softmax(1)[:, 0].mean()",
                                              "l.backward()", "g1 = w1.grad", "g2 = w2.grad"], ["g1", "g2"])


def api_cases():
    name = "api_grad"
    x, y, g = rn(3, 4), rn(4), rn(3, 4)
    case(name, {"x": x, "y": y, "g": g}, [ld(name, "x"), ld(name, "y"), ld(name, "g", False),
                                          "z = (x * y).sin()", "gx, gy = grad(z, [x, y], g)",
                                          "hx = grad((x * x).sum(), x)[0]"], ["gx", "gy", "hx"])
    name = "api_accumulate"
    x = rn(2, 3)
    case(name, {"x": x}, [ld(name, "x"), "(x * x).sum().backward()", "x.sin().sum().backward()", "gx = x.grad",
                          "x.grad = None", "(x * 3).sum().backward()", "hx = x.grad"], ["gx", "hx"])
    name = "api_detach"
    x = rn(2, 3)
    case(name, {"x": x}, [ld(name, "x"), "d = x.detach() * x", "(d * d).sum().backward()", "gx = x.grad"], ["gx"])
    name = "api_nograd"
    x = rn(2, 3)
    case(name, {"x": x}, [ld(name, "x"), "set_grad_enabled(False)", "c = x * x", "set_grad_enabled(True)",
                          "(c * x).sum().backward()", "gx = x.grad"], ["gx"])
    name = "api_retain"
    x = rn(2, 3)
    case(name, {"x": x}, [ld(name, "x"), "y = (x * x).exp()", "l = y.sum() * 2", "l.backward(retain_graph=True)",
                          "l.backward()", "gx = x.grad"], ["gx"])


def dims_cases():
    progs = {
        "order": ["i, j = dims(2)", "y = x[i, j].exp()", "z = y.order(j, i)", "l = (z * z).sum()"],
        "sum_dims": ["i, j = dims(2)", "y = x[i, j]", "s = (y * y).sum(j)", "l = (s.order(i) ** 3).sum()"],
        "dims_values": ["i, j = dims(2)", "y = x[i, j] * (i + 2 * j)", "l = y.sum(i).order(j).sin().sum()"],
        "dims_gather": ["i, j = dims(2)", "idx = tensor([2, 0, 1])", "y = x[idx[i], j]",
                        "l = (y.order(i, j) * w).sum()"],
        "dims_masked": ["i, j = dims(2)", "y = x[i, j]", "n = tensor([1, 3, 4])",
                        "m = where(j < n[i], y, 0.0)", "l = (m.sum(j).order(i) ** 2).sum()"],
        "dims_contract": ["i, j, k = dims(3)", "a = x[i, j]", "b = w[k, j]", "c = (a * b).sum(j)",
                          "l = (c.order(i, k) ** 2).sum()"],
    }
    for nm, lines in progs.items():
        name = "dims_" + nm
        x, w = rn(3, 4), rn(3, 4)
        case(name, {"x": x, "w": w}, [ld(name, "x"), ld(name, "w")] + lines + ["l.backward()", "gx = x.grad",
                                                                               "gw = w.grad if w.grad is not None else zeros(1)"],
             ["gx", "gw"])


def roi_cases():
    src = os.path.join(HERE, "roi_align")
    with open(os.path.join(src, "cases.txt")) as f:
        rows = [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]
    n = 0
    for name, dt, osz, scale, sr, aligned, inp, boxes, out in rows:
        if "empty" in name:         # K = 0: tdl's result is a constant with no gradient
            continue
        bl = boxes.strip("[]").split(", ")
        bexpr = "[%s]" % ", ".join("load('tests/golden/roi_align/%s')" % b for b in bl) if boxes.startswith("[") \
            else "load('tests/golden/roi_align/%s')" % boxes
        prog = ["x = load('tests/golden/roi_align/%s').requires_grad_()" % inp, "b = %s" % bexpr,
                "y = vision.roi_align(x, b, %s, %s, %s, %s)" % (osz, scale, sr, aligned),
                "g = (arange(y.numel(), dtype=y.dtype) * 0.37).cos().reshape(y.shape)",
                "(y * g).sum().backward()", "gx = x.grad"]
        CASES.append(("roi_" + name, {}, prog, ["gx"]))
        n += 1
    assert n >= 24, n


def esc(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def main():
    unary_cases()
    binary_cases()
    misc_pointwise_cases()
    reduction_cases()
    view_cases()
    gather_cases()
    write_cases()
    matmul_cases()
    api_cases()
    dims_cases()
    roi_cases()
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    lines = ["# generated by tests/golden/gen_grad.py from torch %s; do not edit" % torch.__version__,
             "# name\tprogram\tOK var=file ..."]
    for name, inputs, program, outs in CASES:
        for inp, arr in inputs.items():
            np.save(os.path.join(OUT, "%s.%s.npy" % (name, inp)), arr)
        src = "\n".join(program)
        ns = torch_shim.namespace("case", [])
        ns["vision"] = Vision
        torch_shim.register_source("case", src)
        exec(compile(src, "case", "exec"), ns)
        checks = []
        for o in outs:
            v = ns[o]
            if v is None:           # no gradient reached it: tdl's must be None too
                checks.append("%s=None" % o)
                continue
            np.save(os.path.join(OUT, "%s.%s.out.npy" % (name, o)), v.detach().numpy())
            checks.append("%s=%s.%s.out.npy" % (o, name, o))
        lines.append("%s\t%s\tOK %s" % (name, esc(src), " ".join(checks)))
    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d cases in %s" % (len(CASES), OUT))


if __name__ == "__main__":
    main()
