#!/usr/bin/python3
"""gen_nn.py: writes tests/golden/nn/, torch.nn.functional's layers on small inputs, which tdl's
stdlib/nn.tdl must match (tests/test_nn.c); with --check TDL, runs a tdl binary on every case and
prints the failures (nothing is written).

Run from the repository root with the Debian python3 (torch):
    /usr/bin/python3 tests/golden/gen_nn.py              write the golden files
    /usr/bin/python3 tests/golden/gen_nn.py --check TDL  compare TDL's results

cases.txt holds one case per line, tab-separated:

    name  program  expected

program is tdl code (statements separated by "; ") run after `import nn`; it loads its inputs from
the folder (NAME.x.npy, NAME.w.npy, ...) and leaves its results in globals. expected is either
"OK" followed by one check per result, space-separated, VAR=FILE|MAG|STRIDES (FILE: torch's result,
MAG: the size of the terms the result is made of, STRIDES: torch's strides, comma-separated, or -
for an empty result), or "ERR Kind: message", PyTorch's error.

Agreement (the rule the C test applies): |tdl - torch| <= tol * (|torch| + MAG) elementwise, tol
1e-5 for float32 and 1e-12 for float64, exact for int64 (pooling indices) and bool; the same shape
and dtype; and the same strides on every dim of size > 1 (a size-1 dim's stride is not part of a
memory format). MAG is, for the convolutions and linear, the largest value of the layer applied
to |input|, |weight|, |bias| (the sum of the absolute terms); for pooling, interpolation and the
activations amax|input|; for the norms amax|result| + 1.

Memory formats: each layer runs on a contiguous and on a channels_last input (both dtypes); the
expected strides are PyTorch 1.13's, except conv_transpose2d's, where 1.13's CPU kernel returns a
contiguous result for a channels_last input and later PyTorch (and tdl, by the suggest_memory_format
rule) a channels_last one: there the strides are those of torch's result laid out as the input.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn")
REL = "tests/golden/nn/"
rng = np.random.default_rng(20261125)
CL = torch.channels_last


def lit(v):
    """v as a tdl literal."""
    if isinstance(v, tuple):
        return "(" + ", ".join(lit(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(lit(x) for x in v) + "]"
    return repr(v)


class Case:
    def __init__(self, name):
        self.name = name
        self.files = {}
        self.prog = []
        self.inputs = {}

    def input(self, var, shape, dtype, fmt=None, positive=False, scale=1.0):
        a = rng.standard_normal(shape) * scale
        if positive:
            a = np.abs(a) + 0.5
        a = a.astype(dtype)
        f = "%s.%s.npy" % (self.name, var)
        self.files[f] = a
        t = torch.from_numpy(a.copy())
        load = "load('%s%s')" % (REL, f)
        if fmt == "cl":
            t = t.contiguous(memory_format=CL)
            load += ".contiguous(memory_format=channels_last)"
        self.prog.append("%s = %s" % (var, load))
        self.inputs[var] = t
        return t


cases = []


def strides_of(t):
    if t.numel() == 0:
        return "-"
    return ",".join(str(s) for s in t.stride())


def ok(c, results):
    """results: list of (var, torch tensor, mag, strides or None (torch's))."""
    checks = []
    for var, t, mag, st in results:
        f = "%s.%s.out.npy" % (c.name, var)
        c.files[f] = t.detach().contiguous().numpy()
        checks.append("%s=%s|%r|%s" % (var, f, float(mag), st if st is not None else strides_of(t)))
    cases.append((c, "OK " + " ".join(checks)))


def err(c, fn):
    try:
        fn()
    except Exception as e:
        msg = str(e).split("\n")[0]
        cases.append((c, "ERR %s: %s" % (type(e).__name__, msg)))
        return
    raise SystemExit("case %s: torch raised nothing" % c.name)


def channels_last(t):
    """c10's is_channels_last_strides_2d: what suggest_memory_format() says of a 4-D tensor."""
    if t.dim() != 4:
        return False
    lo = 0
    for d in (1, 3, 2, 0):
        if t.size(d) == 0 or t.stride(d) < lo:
            return False
        if d == 0 and lo == t.stride(1):
            return False
        lo = t.stride(d) * (t.size(d) if t.size(d) > 1 else 1)
    return True


def amax(t):
    return float(t.abs().max()) if t.numel() else 0.0


def kw(d):
    return ", ".join("%s=%s" % (k, lit(v)) for k, v in d.items())


def call(fn, args, kwargs):
    parts = list(args) + (["%s=%s" % (k, lit(v)) for k, v in kwargs.items()])
    return "%s(%s)" % (fn, ", ".join(parts))


DTYPES = [("f32", "float32"), ("f64", "float64")]
FMTS = ["nchw", "cl"]

# ---- conv2d ----
CONV = [
    # name, x shape, w shape, bias, kwargs
    ("basic", (2, 3, 7, 8), (4, 3, 3, 3), True, {"padding": 1}),
    ("nobias", (2, 3, 6, 5), (5, 3, 3, 3), False, {}),
    ("stride2", (2, 3, 9, 8), (4, 3, 3, 3), True, {"stride": 2, "padding": 1}),
    ("stride21_pad10", (1, 2, 7, 9), (3, 2, 3, 3), True, {"stride": (2, 1), "padding": (1, 0)}),
    ("stride_gt_kernel", (2, 3, 10, 11), (4, 3, 2, 2), True, {"stride": 3}),
    ("dilation2", (2, 3, 9, 9), (4, 3, 3, 3), True, {"dilation": 2, "padding": 2}),
    ("dilation21", (1, 3, 9, 10), (2, 3, 3, 2), False, {"dilation": (2, 1), "padding": (1, 2)}),
    ("groups2", (2, 4, 6, 7), (6, 2, 3, 3), True, {"groups": 2, "padding": 1}),
    ("depthwise", (2, 5, 7, 6), (5, 1, 3, 3), True, {"groups": 5, "padding": 1}),
    ("depthwise_mult", (1, 3, 6, 6), (6, 1, 3, 3), False, {"groups": 3, "stride": 2}),
    ("k1", (2, 6, 5, 4), (3, 6, 1, 1), True, {}),
    ("k1_stride2", (2, 6, 5, 4), (3, 6, 1, 1), True, {"stride": 2}),
    ("k1_pad1", (1, 4, 3, 3), (2, 4, 1, 1), True, {"padding": 1}),
    ("k3x5", (2, 3, 8, 9), (4, 3, 3, 5), True, {"padding": (1, 2)}),
    ("same_k4", (2, 3, 6, 7), (4, 3, 4, 4), True, {"padding": "same"}),
    ("same_dil", (1, 3, 8, 8), (2, 3, 3, 2), True, {"padding": "same", "dilation": (2, 3)}),
    ("valid", (2, 3, 6, 7), (4, 3, 3, 3), True, {"padding": "valid"}),
    ("input1x1", (3, 4, 1, 1), (5, 4, 1, 1), True, {}),
    ("input1x1_pad", (2, 4, 1, 1), (5, 4, 3, 3), True, {"padding": 1}),
    ("out1x1", (2, 3, 3, 3), (4, 3, 3, 3), True, {}),
    ("channels16", (2, 16, 8, 8), (8, 16, 3, 3), True, {"padding": 1}),
    ("empty_batch", (0, 3, 5, 5), (4, 3, 3, 3), True, {"padding": 1}),
]


def conv_ref(fn, x, w, b, kwargs):
    y = fn(x, w, b, **kwargs)
    mag = amax(fn(x.abs(), w.abs(), b.abs() if b is not None else None, **kwargs))
    return y, mag


for name, xs, ws, bias, kwa in CONV:
    for dn, dt in DTYPES:
        for fmt in FMTS:
            c = Case("conv2d_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", xs, dt, fmt if len(xs) == 4 else None)
            w = c.input("w", ws, dt)
            b = c.input("b", (ws[0],), dt) if bias else None
            c.prog.append("y = " + call("nn.conv2d", ["x", "w", "b" if bias else "None"], kwa))
            y, mag = conv_ref(F.conv2d, x, w, b, kwa)
            ok(c, [("y", y, mag, None)])
# the weight's format decides too; 3-D (unbatched) input
for dn, dt in DTYPES:
    c = Case("conv2d_weight_cl_%s" % dn)
    x = c.input("x", (2, 3, 6, 6), dt)
    w = c.input("w", (4, 3, 3, 3), dt, "cl")
    c.prog.append("y = nn.conv2d(x, w, padding=1)")
    y, mag = conv_ref(F.conv2d, x, w, None, {"padding": 1})
    ok(c, [("y", y, mag, None)])
    c = Case("conv2d_unbatched_%s" % dn)
    x = c.input("x", (3, 6, 5), dt)
    w = c.input("w", (4, 3, 3, 3), dt)
    b = c.input("b", (4,), dt)
    c.prog.append("y = nn.conv2d(x, w, b, stride=(1, 2))")
    y, mag = conv_ref(F.conv2d, x, w, b, {"stride": (1, 2)})
    ok(c, [("y", y, mag, None)])

# ---- conv_transpose2d ----
CONVT = [
    ("basic", (2, 3, 5, 6), (3, 4, 3, 3), True, {}),
    ("k2s2", (2, 4, 5, 5), (4, 3, 2, 2), True, {"stride": 2}),
    ("s2p1op1", (2, 3, 4, 5), (3, 2, 3, 3), True, {"stride": 2, "padding": 1, "output_padding": 1}),
    ("s3_gt_kernel", (1, 3, 4, 4), (3, 2, 2, 2), False, {"stride": 3}),
    ("s21_p10", (2, 2, 4, 5), (2, 3, 3, 3), True, {"stride": (2, 1), "padding": (1, 0)}),
    ("groups2", (2, 4, 4, 5), (4, 3, 3, 3), True, {"groups": 2, "stride": 2}),
    ("depthwise", (2, 5, 4, 4), (5, 1, 3, 3), True, {"groups": 5, "padding": 1}),
    ("dilation2", (1, 3, 4, 5), (3, 2, 3, 3), True, {"dilation": 2}),
    ("dil2_op1", (1, 2, 4, 4), (2, 2, 3, 3), False, {"dilation": 2, "stride": 2, "output_padding": 1}),
    ("input1x1", (3, 4, 1, 1), (4, 5, 2, 2), True, {"stride": 2}),
    ("k1", (2, 6, 3, 4), (6, 3, 1, 1), True, {}),
    ("empty_batch", (0, 3, 4, 4), (3, 2, 2, 2), True, {"stride": 2}),
]
for name, xs, ws, bias, kwa in CONVT:
    for dn, dt in DTYPES:
        for fmt in FMTS:
            c = Case("conv_transpose2d_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", xs, dt, fmt)
            w = c.input("w", ws, dt)
            b = c.input("b", (ws[1] * kwa.get("groups", 1),), dt) if bias else None
            c.prog.append("y = " + call("nn.conv_transpose2d", ["x", "w", "b" if bias else "None"], kwa))
            y, mag = conv_ref(F.conv_transpose2d, x, w, b, kwa)
            st = None
            if channels_last(x) or channels_last(w):
                st = strides_of(torch.empty_like(y).contiguous(memory_format=CL))
            ok(c, [("y", y, mag, st)])

# ---- pooling ----
MAXP = [
    ("k2", (2, 3, 6, 8), {"kernel_size": 2}),
    ("k3s2p1", (2, 3, 7, 9), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("k3s2_ceil", (2, 2, 8, 7), {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
    ("k3s2p1_ceil", (1, 3, 8, 10), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("dilation2", (2, 2, 9, 9), {"kernel_size": 3, "dilation": 2, "padding": 1}),
    ("k23_s12", (2, 3, 7, 8), {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 1)}),
    ("stride_gt_kernel", (2, 3, 10, 11), {"kernel_size": 2, "stride": 3}),
    ("input1x1", (2, 4, 1, 1), {"kernel_size": 1}),
    ("global", (2, 3, 5, 6), {"kernel_size": (5, 6)}),
    ("empty_batch", (0, 3, 4, 4), {"kernel_size": 2}),
]
for name, xs, kwa in MAXP:
    for dn, dt in DTYPES:
        for fmt in FMTS:
            c = Case("max_pool2d_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", xs, dt, fmt)
            c.prog.append("y, i = " + call("nn.max_pool2d", ["x"], dict(kwa, return_indices=True)))
            y, i = F.max_pool2d(x, **kwa, return_indices=True)
            ok(c, [("y", y, amax(x), None), ("i", i, 0, None)])
for dn, dt in DTYPES:
    c = Case("max_pool2d_unbatched_%s" % dn)
    x = c.input("x", (3, 7, 6), dt)
    c.prog.append("y = nn.max_pool2d(x, 3, stride=2, padding=1)")
    ok(c, [("y", F.max_pool2d(x, 3, stride=2, padding=1), amax(x), None)])
    c = Case("max_pool2d_ties_%s" % dn)     # equal values: the first in the window wins
    c.prog.append("x = (arange(2 * 3 * 6 * 6) %% 4).reshape(2, 3, 6, 6).to(%s)" % dt)
    x = (torch.arange(2 * 3 * 6 * 6) % 4).reshape(2, 3, 6, 6).to(getattr(torch, dt))
    c.prog.append("y, i = nn.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)")
    y, i = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    ok(c, [("y", y, 4, None), ("i", i, 0, None)])

for dn, dt in DTYPES:
    for fmt in FMTS:
        # NaN: the maximum is NaN, and its index the window's last NaN (ATen keeps val > max || isnan)
        c = Case("max_pool2d_nan_%s_%s" % (dn, fmt))
        x = c.input("x", (1, 2, 6, 6), dt, fmt)
        nan = np.zeros((1, 2, 6, 6), bool)
        nan[0, 0, 1, 1] = nan[0, 0, 2, 2] = nan[0, 0, 2, 3] = nan[0, 1, 0, 0] = nan[0, 1, 5, 4] = True
        x.masked_fill_(torch.from_numpy(nan), float("nan"))
        f = "%s.x.npy" % c.name
        c.files[f] = x.contiguous().numpy()
        c.prog.append("y, i = nn.max_pool2d(x, 2, return_indices=True); ya, ia = nn.adaptive_max_pool2d(x, (2, 3), "
                      "return_indices=True)")
        y, i = F.max_pool2d(x, 2, return_indices=True)
        ya, ia = F.adaptive_max_pool2d(x, (2, 3), return_indices=True)
        ok(c, [("y", y, 3, None), ("i", i, 0, None), ("ya", ya, 3, None), ("ia", ia, 0, None)])

AVGP = [
    ("k2", (2, 3, 6, 8), {"kernel_size": 2}),
    ("k3s2p1", (2, 3, 7, 9), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("k3s2p1_nopad", (2, 3, 7, 9), {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}),
    ("ceil", (2, 2, 8, 7), {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
    ("ceil_pad", (1, 3, 8, 10), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("ceil_pad_nopad", (1, 3, 8, 10), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                                       "count_include_pad": False}),
    ("divisor", (2, 3, 6, 6), {"kernel_size": 3, "padding": 1, "divisor_override": 5}),
    ("k23", (2, 3, 7, 8), {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 0)}),
    ("stride_gt_kernel", (2, 3, 10, 11), {"kernel_size": 2, "stride": 3}),
    ("input1x1", (2, 4, 1, 1), {"kernel_size": 1}),
    ("empty_batch", (0, 3, 4, 4), {"kernel_size": 2}),
]
for name, xs, kwa in AVGP:
    for dn, dt in DTYPES:
        for fmt in FMTS:
            c = Case("avg_pool2d_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", xs, dt, fmt)
            c.prog.append("y = " + call("nn.avg_pool2d", ["x"], kwa))
            ok(c, [("y", F.avg_pool2d(x, **kwa), amax(x), None)])

ADAP = [
    ("down", (2, 3, 7, 9), (3, 4)),
    ("up", (2, 3, 3, 4), (5, 7)),
    ("one", (2, 3, 5, 6), 1),
    ("int", (1, 4, 8, 8), 3),
    ("none", (2, 3, 6, 7), (None, 3)),
    ("same", (2, 2, 4, 5), (4, 5)),
    ("input1x1", (2, 4, 1, 1), (2, 2)),
    ("empty_batch", (0, 3, 4, 4), 2),
]
for name, xs, osz in ADAP:
    for dn, dt in DTYPES:
        for fmt in FMTS:
            c = Case("adaptive_avg_pool2d_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", xs, dt, fmt)
            c.prog.append("y = nn.adaptive_avg_pool2d(x, %s)" % lit(osz))
            ok(c, [("y", F.adaptive_avg_pool2d(x, osz), amax(x), None)])
            c = Case("adaptive_max_pool2d_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", xs, dt, fmt)
            c.prog.append("y, i = nn.adaptive_max_pool2d(x, %s, return_indices=True)" % lit(osz))
            y, i = F.adaptive_max_pool2d(x, osz, return_indices=True)
            ok(c, [("y", y, amax(x), None), ("i", i, 0, None)])

# ---- linear and activations ----
for dn, dt in DTYPES:
    for name, xs, ws, bias in [("2d", (5, 4), (3, 4), True), ("3d", (2, 3, 4), (6, 4), True),
                               ("nobias", (5, 7), (2, 7), False), ("1d", (4,), (3, 4), True)]:
        c = Case("linear_%s_%s" % (name, dn))
        x = c.input("x", xs, dt)
        w = c.input("w", ws, dt)
        b = c.input("b", (ws[0],), dt) if bias else None
        c.prog.append("y = nn.linear(x, w%s)" % (", b" if bias else ""))
        ok(c, [("y", F.linear(x, w, b), amax(F.linear(x.abs(), w.abs(), b.abs() if bias else None)), None)])
    for fmt in FMTS:
        for name, prog, fn in [("relu", "nn.relu(x)", F.relu), ("gelu", "nn.gelu(x)", F.gelu),
                               ("gelu_tanh", "nn.gelu(x, approximate='tanh')", lambda t: F.gelu(t, approximate="tanh")),
                               ("silu", "nn.silu(x)", F.silu)]:
            c = Case("%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", (2, 3, 4, 5), dt, fmt, scale=3.0)
            c.prog.append("y = " + prog)
            ok(c, [("y", fn(x), amax(x), None)])

# ---- norms ----
for dn, dt in DTYPES:
    for fmt in FMTS:
        for name, training, affine, kwa in [("eval", False, True, {}), ("eval_noaffine", False, False, {"eps": 1e-3}),
                                            ("train", True, True, {}), ("train_momentum", True, False, {"momentum": 0.3}),
                                            ("train_nostats", True, True, None)]:
            c = Case("batch_norm_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", (3, 4, 5, 6), dt, fmt, scale=2.0)
            stats = kwa is not None
            rm = c.input("rm", (4,), dt) if stats else None
            rv = c.input("rv", (4,), dt, positive=True) if stats else None
            w = c.input("w", (4,), dt) if affine else None
            b = c.input("b", (4,), dt) if affine else None
            kk = dict(kwa or {}, training=training)
            c.prog.append("y = " + call("nn.batch_norm", ["x", "rm" if stats else "None", "rv" if stats else "None",
                                                         "w" if affine else "None", "b" if affine else "None"], kk))
            y = F.batch_norm(x, rm, rv, w, b, **kk)
            res = [("y", y, amax(y) + 1, None)]
            if stats and training:
                res += [("rm", rm, amax(rm) + 1, None), ("rv", rv, amax(rv) + 1, None)]
            ok(c, res)
    for name, xs in [("2d", (6, 4)), ("3d", (3, 4, 5))]:
        c = Case("batch_norm_train_%s_%s" % (name, dn))
        x = c.input("x", xs, dt)
        rm = c.input("rm", (4,), dt)
        rv = c.input("rv", (4,), dt, positive=True)
        c.prog.append("y = nn.batch_norm(x, rm, rv, training=True)")
        y = F.batch_norm(x, rm, rv, training=True)
        ok(c, [("y", y, amax(y) + 1, None), ("rm", rm, amax(rm) + 1, None), ("rv", rv, amax(rv) + 1, None)])
    for fmt in FMTS:
        for name, shape, affine, eps in [("last", (5,), True, 1e-5), ("last2", (4, 5), True, 1e-5),
                                         ("last3_noaffine", (3, 4, 5), False, 1e-3)]:
            c = Case("layer_norm_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", (2, 3, 4, 5), dt, fmt, scale=2.0)
            w = c.input("w", shape, dt) if affine else None
            b = c.input("b", shape, dt) if affine else None
            c.prog.append("y = nn.layer_norm(x, %s%s, eps=%r)" % (lit(shape), ", w, b" if affine else "", eps))
            y = F.layer_norm(x, shape, w, b, eps)
            ok(c, [("y", y, amax(y) + 1, None)])
        for name, groups, affine in [("g2", 2, True), ("g1", 1, False), ("gc", 6, True)]:
            c = Case("group_norm_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", (2, 6, 4, 5), dt, fmt, scale=2.0)
            w = c.input("w", (6,), dt) if affine else None
            b = c.input("b", (6,), dt) if affine else None
            c.prog.append("y = nn.group_norm(x, %d%s)" % (groups, ", w, b" if affine else ""))
            y = F.group_norm(x, groups, w, b)
            ok(c, [("y", y, amax(y) + 1, None)])
    c = Case("layer_norm_2d_%s" % dn)
    x = c.input("x", (4, 7), dt)
    c.prog.append("y = nn.layer_norm(x, 7)")
    y = F.layer_norm(x, (7,))
    ok(c, [("y", y, amax(y) + 1, None)])
    c = Case("group_norm_3d_%s" % dn)
    x = c.input("x", (2, 4, 7), dt)
    w = c.input("w", (4,), dt)
    b = c.input("b", (4,), dt)
    c.prog.append("y = nn.group_norm(x, 2, w, b, eps=1e-3)")
    y = F.group_norm(x, 2, w, b, eps=1e-3)
    ok(c, [("y", y, amax(y) + 1, None)])

# ---- interpolate ----
INTERP = [
    ("nearest_size", (2, 3, 4, 5), {"size": (7, 9)}),
    ("nearest_x2", (2, 3, 4, 5), {"scale_factor": 2}),
    ("nearest_x1_5", (2, 3, 4, 5), {"scale_factor": 1.5}),
    ("nearest_down", (2, 3, 9, 7), {"size": (4, 3)}),
    ("nearest_int", (1, 2, 5, 5), {"size": 3}),
    ("nearest_recompute", (2, 3, 4, 5), {"scale_factor": 1.7, "recompute_scale_factor": True}),
    ("bilinear_size", (2, 3, 4, 5), {"size": (7, 9), "mode": "bilinear"}),
    ("bilinear_x2", (2, 3, 4, 5), {"scale_factor": 2, "mode": "bilinear"}),
    ("bilinear_x2_ac", (2, 3, 4, 5), {"scale_factor": 2, "mode": "bilinear", "align_corners": True}),
    ("bilinear_size_ac", (2, 3, 4, 5), {"size": (6, 11), "mode": "bilinear", "align_corners": True}),
    ("bilinear_down", (2, 3, 9, 8), {"size": (4, 3), "mode": "bilinear"}),
    ("bilinear_x0_6", (2, 3, 9, 8), {"scale_factor": (0.6, 0.75), "mode": "bilinear"}),
    ("bilinear_to1_ac", (1, 2, 4, 5), {"size": (1, 3), "mode": "bilinear", "align_corners": True}),
    ("bilinear_from1", (2, 3, 1, 1), {"size": (3, 4), "mode": "bilinear"}),
]
for name, xs, kwa in INTERP:
    for dn, dt in DTYPES:
        for fmt in FMTS:
            c = Case("interpolate_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", xs, dt, fmt)
            c.prog.append("y = " + call("nn.interpolate", ["x"], kwa))
            ok(c, [("y", F.interpolate(x, **kwa), amax(x), None)])
for dn, dt in DTYPES:
    c = Case("interpolate_nearest_3d_%s" % dn)
    x = c.input("x", (2, 3, 5), dt)
    c.prog.append("y = nn.interpolate(x, scale_factor=2)")
    ok(c, [("y", F.interpolate(x, scale_factor=2), amax(x), None)])

# ---- mistakes: PyTorch's kind and message ----
def errcase(name, setup, prog, fn):
    c = Case("err_" + name)
    for var, shape in setup:
        c.input(var, shape, "float32")
    c.prog.append(prog)
    err(c, lambda: fn(c.inputs))


X = [("x", (2, 4, 5, 6))]
XW = X + [("w", (6, 4, 3, 3))]
errcase("conv_input_2d", [("x", (2, 3)), ("w", (6, 4, 3, 3))], "y = nn.conv2d(x, w)", lambda t: F.conv2d(t["x"], t["w"]))
errcase("conv_channels", [("x", (2, 5, 5, 6)), ("w", (6, 4, 3, 3))], "y = nn.conv2d(x, w)", lambda t: F.conv2d(t["x"], t["w"]))
errcase("conv_kernel_too_big", [("x", (2, 4, 2, 2)), ("w", (6, 4, 3, 3))], "y = nn.conv2d(x, w)", lambda t: F.conv2d(t["x"], t["w"]))
errcase("conv_negative_padding", XW, "y = nn.conv2d(x, w, padding=-1)", lambda t: F.conv2d(t["x"], t["w"], padding=-1))
errcase("conv_stride0", XW, "y = nn.conv2d(x, w, stride=0)", lambda t: F.conv2d(t["x"], t["w"], stride=0))
errcase("conv_dilation0", XW, "y = nn.conv2d(x, w, dilation=0)", lambda t: F.conv2d(t["x"], t["w"], dilation=0))
errcase("conv_groups0", XW, "y = nn.conv2d(x, w, groups=0)", lambda t: F.conv2d(t["x"], t["w"], groups=0))
errcase("conv_same_strided", XW, "y = nn.conv2d(x, w, stride=2, padding='same')",
        lambda t: F.conv2d(t["x"], t["w"], stride=2, padding="same"))
errcase("conv_padding_string", XW, "y = nn.conv2d(x, w, padding='foo')", lambda t: F.conv2d(t["x"], t["w"], padding="foo"))
errcase("conv_bias_size", XW + [("b", (5,))], "y = nn.conv2d(x, w, b)", lambda t: F.conv2d(t["x"], t["w"], t["b"]))
errcase("conv_bias_dtype", XW + [("b", (6,))], "y = nn.conv2d(x, w, b.double())",
        lambda t: F.conv2d(t["x"], t["w"], t["b"].double()))
errcase("conv_weight_dtype", XW, "y = nn.conv2d(x, w.double())", lambda t: F.conv2d(t["x"], t["w"].double()))
errcase("conv_weight_3d", X + [("w", (6, 4, 3))], "y = nn.conv2d(x, w, stride=2)",
        lambda t: F.conv2d(t["x"], t["w"], stride=2))
errcase("conv_stride3", XW, "y = nn.conv2d(x, w, stride=(1, 1, 1))", lambda t: F.conv2d(t["x"], t["w"], stride=(1, 1, 1)))
errcase("convt_output_padding", [("x", (2, 4, 5, 6)), ("w", (4, 3, 2, 2))],
        "y = nn.conv_transpose2d(x, w, stride=2, output_padding=2)",
        lambda t: F.conv_transpose2d(t["x"], t["w"], stride=2, output_padding=2))
errcase("convt_channels", [("x", (2, 4, 5, 6)), ("w", (5, 3, 2, 2))], "y = nn.conv_transpose2d(x, w)",
        lambda t: F.conv_transpose2d(t["x"], t["w"]))
errcase("convt_negative_padding", [("x", (2, 4, 5, 6)), ("w", (4, 3, 2, 2))], "y = nn.conv_transpose2d(x, w, padding=-1)",
        lambda t: F.conv_transpose2d(t["x"], t["w"], padding=-1))
errcase("convt_too_small", [("x", (2, 4, 5, 6)), ("w", (4, 3, 2, 2))], "y = nn.conv_transpose2d(x, w, padding=3)",
        lambda t: F.conv_transpose2d(t["x"], t["w"], padding=3))
errcase("maxpool_pad", X, "y = nn.max_pool2d(x, 2, padding=2)", lambda t: F.max_pool2d(t["x"], 2, padding=2))
errcase("maxpool_kernel0", X, "y = nn.max_pool2d(x, 0)", lambda t: F.max_pool2d(t["x"], 0))
errcase("maxpool_stride0", X, "y = nn.max_pool2d(x, 2, stride=0)", lambda t: F.max_pool2d(t["x"], 2, stride=0))
errcase("maxpool_too_small", X, "y = nn.max_pool2d(x, 7)", lambda t: F.max_pool2d(t["x"], 7))
errcase("maxpool_kernel3", X, "y = nn.max_pool2d(x, (1, 2, 3))", lambda t: F.max_pool2d(t["x"], (1, 2, 3)))
errcase("maxpool_empty", [("x", (2, 3, 0, 4))], "y = nn.max_pool2d(x, 2)", lambda t: F.max_pool2d(t["x"], 2))
errcase("avgpool_pad", X, "y = nn.avg_pool2d(x, 2, padding=2)", lambda t: F.avg_pool2d(t["x"], 2, padding=2))
errcase("avgpool_too_small", X, "y = nn.avg_pool2d(x, 7)", lambda t: F.avg_pool2d(t["x"], 7))
errcase("avgpool_divisor0", X, "y = nn.avg_pool2d(x, 2, divisor_override=0)",
        lambda t: F.avg_pool2d(t["x"], 2, divisor_override=0))
errcase("adaptive_1d", [("x", (5,))], "y = nn.adaptive_avg_pool2d(x, 2)", lambda t: F.adaptive_avg_pool2d(t["x"], 2))
errcase("adaptive_empty", [("x", (2, 3, 0, 4))], "y = nn.adaptive_avg_pool2d(x, 2)",
        lambda t: F.adaptive_avg_pool2d(t["x"], 2))
errcase("linear_shapes", [("x", (3, 4)), ("w", (5, 3))], "y = nn.linear(x, w)", lambda t: F.linear(t["x"], t["w"]))
errcase("bn_running_mean", X + [("rm", (3,)), ("rv", (3,))], "y = nn.batch_norm(x, rm, rv)",
        lambda t: F.batch_norm(t["x"], t["rm"], t["rv"]))
errcase("bn_weight", X + [("rm", (4,)), ("rv", (4,)), ("w", (3,))], "y = nn.batch_norm(x, rm, rv, w)",
        lambda t: F.batch_norm(t["x"], t["rm"], t["rv"].abs(), t["w"]))
errcase("bn_one_value", [("x", (1, 4, 1, 1))], "y = nn.batch_norm(x, None, None, training=True)",
        lambda t: F.batch_norm(t["x"], None, None, training=True))
errcase("ln_shape", X, "y = nn.layer_norm(x, (5,))", lambda t: F.layer_norm(t["x"], (5,)))
errcase("gn_groups", X, "y = nn.group_norm(x, 3)", lambda t: F.group_norm(t["x"], 3))
errcase("interp_both", X, "y = nn.interpolate(x, size=3, scale_factor=2)",
        lambda t: F.interpolate(t["x"], size=3, scale_factor=2))
errcase("interp_neither", X, "y = nn.interpolate(x)", lambda t: F.interpolate(t["x"]))
errcase("interp_align_nearest", X, "y = nn.interpolate(x, size=3, align_corners=True)",
        lambda t: F.interpolate(t["x"], size=3, align_corners=True))
errcase("interp_size3", X, "y = nn.interpolate(x, size=(1, 2, 3))", lambda t: F.interpolate(t["x"], size=(1, 2, 3)))
errcase("interp_size0", X, "y = nn.interpolate(x, size=0)", lambda t: F.interpolate(t["x"], size=0))
errcase("interp_bilinear_3d", [("x", (2, 4, 5))], "y = nn.interpolate(x, size=3, mode='bilinear')",
        lambda t: F.interpolate(t["x"], size=3, mode="bilinear"))
errcase("interp_linear_4d", X, "y = nn.interpolate(x, size=3, mode='linear')",
        lambda t: F.interpolate(t["x"], size=3, mode="linear"))
errcase("interp_mode", X, "y = nn.interpolate(x, size=3, mode='foo')", lambda t: F.interpolate(t["x"], size=3, mode="foo"))
errcase("interp_2d", [("x", (3, 4))], "y = nn.interpolate(x, size=3)", lambda t: F.interpolate(t["x"], size=3))
errcase("dropout_p", X, "y = nn.dropout(x, p=1.5)", lambda t: F.dropout(t["x"], p=1.5))
errcase("gelu_approximate", X, "y = nn.gelu(x, approximate='foo')", lambda t: F.gelu(t["x"], approximate="foo"))


# ---- mixed memory formats and the grouped layouts (appended: the cases above keep their data) ----
# the weight made channels_last, the input either format: conv_transpose2d's stride == kernel path
# (its product written into the output through its strides), its col2im path, grouped and
# depthwise conv2d (a (C, 1, kH, kW) weight stays contiguous-strided under channels_last, so
# there the input's format decides, in PyTorch as in tdl)
MIXED = [
    ("conv_transpose2d", "k2s2", (2, 4, 5, 5), (4, 3, 2, 2), True, {"stride": 2}),
    ("conv_transpose2d", "k2s2_groups2", (2, 4, 3, 5), (4, 3, 2, 2), True, {"stride": 2, "groups": 2}),
    ("conv_transpose2d", "k3s3_depthwise", (1, 3, 4, 3), (3, 1, 3, 3), False, {"stride": 3, "groups": 3}),
    ("conv_transpose2d", "s2p1op1", (2, 3, 4, 5), (3, 2, 3, 3), True, {"stride": 2, "padding": 1, "output_padding": 1}),
    ("conv2d", "groups2", (2, 4, 6, 7), (6, 2, 3, 3), True, {"groups": 2, "padding": 1}),
    ("conv2d", "depthwise", (2, 5, 7, 6), (5, 1, 3, 3), True, {"groups": 5, "padding": 1}),
    ("conv2d", "depthwise_mult_s2", (1, 3, 7, 6), (6, 1, 3, 3), True, {"groups": 3, "stride": 2, "padding": 1}),
    ("conv2d", "depthwise_k1", (2, 4, 3, 5), (4, 1, 1, 1), True, {"groups": 4}),
]
for fn, name, xs, ws, bias, kwa in MIXED:
    for dn, dt in DTYPES:
        for fmt in FMTS:
            c = Case("%s_wcl_%s_%s_%s" % (fn, name, dn, fmt))
            x = c.input("x", xs, dt, fmt)
            w = c.input("w", ws, dt, "cl")
            nb = ws[1] * kwa.get("groups", 1) if fn == "conv_transpose2d" else ws[0]
            b = c.input("b", (nb,), dt) if bias else None
            c.prog.append("y = " + call("nn." + fn, ["x", "w", "b" if bias else "None"], kwa))
            y, mag = conv_ref(getattr(F, fn), x, w, b, kwa)
            st = None       # torch's, but conv_transpose2d's as above
            if fn == "conv_transpose2d" and (channels_last(x) or channels_last(w)):
                st = strides_of(torch.empty_like(y).contiguous(memory_format=CL))
            ok(c, [("y", y, mag, st)])

# ---- max pools without indices: the cases a pooling library (cuDNN) takes or declines for its own
# reasons (ceil_mode adding a window, dilation), its path checked by the nn_cudnn suite. Last, with
# a generator of their own, so that the cases above keep their data. ----
rng = np.random.default_rng(20261126)
for name, xs, kwa in [m for m in MAXP if m[0] in ("k2", "k3s2p1", "k3s2_ceil", "dilation2", "stride_gt_kernel")]:
    for dn, dt in DTYPES:
        for fmt in FMTS:
            c = Case("max_pool2d_noidx_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", xs, dt, fmt)
            c.prog.append("y = " + call("nn.max_pool2d", ["x"], kwa))
            ok(c, [("y", F.max_pool2d(x, **kwa), amax(x), None)])

# ---- grouped and depthwise convolutions with the activation after them (the activation runs in
# the convolution's kernel: the GEMM's epilogue for a grouped one, the taps' kernel for a depthwise
# one with a channel multiplier). Last, with a generator of their own, so that the cases above keep
# their data. ----
rng = np.random.default_rng(20261127)
ACT_CONV = [
    # name, x shape, w shape, bias, kwargs, activation
    ("groups4_relu", (2, 8, 7, 6), (8, 2, 3, 3), True, {"groups": 4, "padding": 1}, "relu"),
    ("groups2_stride2_silu", (2, 6, 9, 8), (4, 3, 3, 3), True, {"groups": 2, "stride": 2, "padding": 1}, "silu"),
    ("groups8_k1_gelu", (2, 16, 5, 4), (16, 2, 1, 1), False, {"groups": 8}, "gelu"),
    ("dwmult2_relu", (2, 3, 7, 6), (6, 1, 3, 3), True, {"groups": 3, "padding": 1}, "relu"),
    ("dwmult2_stride2_silu", (1, 4, 9, 7), (8, 1, 3, 3), False, {"groups": 4, "stride": 2}, "silu"),
    ("dwmult3_dil2_gelu", (2, 2, 8, 9), (6, 1, 3, 2), True, {"groups": 2, "padding": (2, 1), "dilation": 2}, "gelu"),
]
for name, xs, ws, bias, kwa, act in ACT_CONV:
    for dn, dt in DTYPES:
        for fmt in FMTS:
            c = Case("conv2d_act_%s_%s_%s" % (name, dn, fmt))
            x = c.input("x", xs, dt, fmt)
            w = c.input("w", ws, dt)
            b = c.input("b", (ws[0],), dt) if bias else None
            c.prog.append("y = nn.%s(%s)" % (act, call("nn.conv2d", ["x", "w", "b" if bias else "None"], kwa)))
            y, mag = conv_ref(F.conv2d, x, w, b, kwa)
            ok(c, [("y", getattr(F, act)(y), mag, None)])

HEADER = "# generated by tests/golden/gen_nn.py from torch %s; do not edit\n# name\tprogram\texpected\n"


def write():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    lines = []
    names = set()
    for c, exp in cases:
        assert c.name not in names, c.name
        names.add(c.name)
        for f, a in c.files.items():
            np.save(os.path.join(OUT, f), a)
        lines.append("\t".join([c.name, "; ".join(c.prog), exp]))
    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write(HEADER % torch.__version__)
        f.write("\n".join(lines) + "\n")
    size = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print("%d cases, %d files, %d bytes in %s" % (len(lines), len(os.listdir(OUT)), size, OUT))


def check(tdl):
    """Runs every case in its own tdl process and compares as the C test does (without the strides
    of size-1 dims)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, TDL_PATH=os.path.join(root, "stdlib"))
    tmp = tempfile.mkdtemp()
    failed = 0
    try:
        with open(os.path.join(OUT, "cases.txt")) as f:
            rows = [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]
        for name, prog, exp in rows:
            lines = ["import nn"] + prog.split("; ")
            checks = exp.split(" ")[1:] if exp.startswith("OK") else []
            for ck in checks:
                var = ck.split("=")[0]
                lines.append("save(%r, %s.contiguous())" % (os.path.join(tmp, name + "." + var + ".npy"), var))
                lines.append("print(%r, %s.stride())" % (var, var))
            src = os.path.join(tmp, name + ".tdl")
            with open(src, "w") as f:
                f.write("\n".join(lines) + "\n")
            r = subprocess.run([tdl, src], env=env, capture_output=True, text=True, cwd=root)
            errs = [l for l in r.stderr.splitlines() if l.strip()]
            if exp.startswith("ERR"):
                got = errs[-1].split(": ", 1)[1] if r.returncode and errs else "no error"
                if got != exp[4:]:
                    failed += 1
                    print("FAIL %s: got %s\n     want %s" % (name, got, exp[4:]))
                continue
            if r.returncode != 0:
                failed += 1
                print("FAIL %s: %s" % (name, errs[-1] if errs else "exit %d" % r.returncode))
                continue
            strides = {}
            for l in r.stdout.splitlines():
                v, s = l.split(" ", 1)
                strides[v] = s
            for ck in checks:
                var, rest = ck.split("=", 1)
                f, mag, st = rest.split("|")
                want = np.load(os.path.join(OUT, f))
                got = np.load(os.path.join(tmp, name + "." + var + ".npy"))
                why = ""
                if got.shape != want.shape or got.dtype != want.dtype:
                    why = "shape/dtype %s %s, want %s %s" % (got.shape, got.dtype, want.shape, want.dtype)
                else:
                    tol = {"float32": 1e-5, "float64": 1e-12}.get(str(want.dtype), 0.0)
                    e = np.abs(got.astype(float) - want.astype(float)) - tol * (np.abs(want.astype(float)) + float(mag))
                    e[np.isnan(got.astype(float)) & np.isnan(want.astype(float))] = 0
                    if e.size and not (e <= 0).all():
                        at = np.unravel_index(np.argmax(np.where(np.isnan(e), np.inf, e)), e.shape)
                        why = "value at %s: %r, want %r" % (at, got[at], want[at])
                    elif st != "-":
                        gs = [int(s) for s in strides[var].strip("(),").split(",") if s.strip()]
                        ws = [int(s) for s in st.split(",")]
                        if any(g != w for g, w, n in zip(gs, ws, want.shape) if n > 1):
                            why = "strides %s, want (%s)" % (strides[var], st)
                if why:
                    failed += 1
                    print("FAIL %s %s: %s" % (name, var, why))
    finally:
        shutil.rmtree(tmp)
    print("%d cases, %d failed" % (len(rows), failed))
    return failed == 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(0 if check(sys.argv[2]) else 1)
    write()
