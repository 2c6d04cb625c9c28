#!/usr/bin/python3
"""gen_fcdim_ops.py: writes tests/golden/fcdim_ops/cases.txt, the expected results of fcdim's shape
operations (shape.c), creation functions (create.c) and composite operations (compose.c), taken
from PyTorch 1.13 itself.

Run from the repository root with the Debian python3-torch:  /usr/bin/python3 tests/golden/gen_fcdim_ops.py

One case per line, six tab-separated fields:
    name  op  args  inputs  tol  expected
op      the fcdim function without its fc_ prefix (max_dim, is_contiguous, ...).
args    comma-separated integers or float.hex() numbers in the order of the C function's own
        arguments after the tensors ("-" for none); dtypes by tdl's name, memory formats as
        preserve/contiguous/channels_last/channels_last_3d; reduction dims as a bit mask.
inputs  ';'-separated tensors, "-" for none, "none" for an absent optional one (clamp). A tensor
        is  @storage|shape|strides|offset|flags : a view with the given geometry of a
        one-dimensional storage, as torch.as_strided makes it; flags "w" for a Python number (a
        wrapped 0-dim tensor), else "-". Storages are lines of three tab-separated fields,
            @name  dtype  values
        written before the first case that uses them.
tol     0: values must be identical (NaN matching NaN, the sign of zero included); else the
        largest difference allowed relative to max(|value|, 1) (reductions and exp/log, whose
        order of summation and libm differ from torch's).
expected
        E KIND message           the call fails with FC_ERR_KIND and exactly this message;
        B 0|1                    a bool result (is_contiguous);
        S dtype value            a scalar (item);
        R r1;r2                  tensor results, each  dtype|shape|strides|offset|values|share :
                                 values are the logical elements in C order; strides/offset "*"
                                 when the layout is not checked; share 1 when the result views the
                                 first input's storage, 0 when it must not, "*" when either is fine.
Shapes and strides are comma-separated ("-" for none); values are space-separated, floats as
float.hex(), bools 0/1, an empty list as "-".

A second file, philox.txt, holds values of tdl's own generator (not torch's), computed here by an
independent Python implementation of the rule create.c documents:
    kind dtype seed offset value...
"""
import math
import os
import struct
import sys

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fcdim_ops")
F32, F64, I32, I64, B = torch.float32, torch.float64, torch.int32, torch.int64, torch.bool
NAME = {F32: "float32", F64: "float64", I32: "int32", I64: "int64", B: "bool"}
MF = {"preserve": torch.preserve_format, "contiguous": torch.contiguous_format,
      "channels_last": torch.channels_last, "channels_last_3d": torch.channels_last_3d}
KIND = {RuntimeError: "RUNTIME", IndexError: "INDEX", ValueError: "VALUE", TypeError: "TYPE"}
nan, inf = float("nan"), float("inf")

lines = []
names = set()


def num(x, dtype):
    if dtype in (F32, F64):
        x = float(x)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        h = x.hex()
        if "." in h:    # 0x1.8000000000000p+1 -> 0x1.8p+1 (strtod reads either)
            m, e = h.split("p")
            h = m.rstrip("0").rstrip(".") + "p" + e
        return h
    if dtype == B:
        return "1" if x else "0"
    return str(int(x))


def dims(xs):
    return ",".join(str(int(x)) for x in xs) if len(xs) else "-"


def values(t):
    flat = t.reshape(-1).tolist() if t.dim() else [t.item()]
    return " ".join(num(v, t.dtype) for v in flat) if flat else "-"


class Inp:
    """A tensor input: a view (shape, strides, offset) of a one-dimensional storage."""

    def __init__(self, storage, shape=None, strides=None, offset=0, wrapped=False):
        self.storage = storage.contiguous().reshape(-1)
        if shape is None:
            shape = tuple(storage.shape)
            strides = storage.contiguous().stride()
        self.shape, self.strides, self.offset, self.wrapped = tuple(shape), tuple(strides), offset, wrapped

    def torch(self):
        if self.wrapped:
            return self.storage[self.offset].item()
        return torch.as_strided(self.storage, self.shape, self.strides, self.offset)

    def spec(self):
        return "|".join([storage_ref(self.storage), dims(self.shape), dims(self.strides), str(self.offset),
                         "w" if self.wrapped else "-"])


storages = {}


def storage_ref(st):
    """The name of a storage line (written before the first case that uses it)."""
    key = (NAME[st.dtype], values(st))
    if key not in storages:
        storages[key] = "@s%d" % len(storages)
        lines.append("\t".join([storages[key], key[0], key[1]]))
    return storages[key]


def view_of(t):
    """The Inp for a torch view t of its own storage."""
    base = torch.empty(0, dtype=t.dtype).set_(t.storage())
    return Inp(base, t.shape, t.stride(), t.storage_offset())


def scalar(v, dtype):
    return Inp(torch.tensor([v], dtype=dtype), (), (), 0, wrapped=True)


NONE = "none"


def result_spec(r, first, geo, share):
    if share == "auto":
        share = "*"
        # (an empty storage has no memory to share or not: data_ptr() is 0 for all of them)
        if first is not None and geo and first.storage().data_ptr():
            share = "1" if r.storage().data_ptr() == first.storage().data_ptr() else "0"
    return "|".join([NAME[r.dtype], dims(r.shape), dims(r.stride()) if geo else "*",
                     str(r.storage_offset()) if geo else "*", values(r), share])


def case(name, op, args, inputs, fn, tol=0, geo=True, share="auto"):
    """fn gets the torch forms of the inputs; its value (or exception) is the expected result."""
    assert name not in names, name
    names.add(name)
    tins = [None if i is NONE else i.torch() for i in inputs]
    first = tins[0] if tins and isinstance(tins[0], torch.Tensor) else None
    try:
        r = fn(*tins)
        if isinstance(r, bool):
            exp = "B " + ("1" if r else "0")
        elif isinstance(r, tuple) and len(r) == 3 and r[0] == "scalar":
            exp = "S " + NAME[r[1]] + " " + num(r[2], r[1])
        else:
            rs = list(r) if isinstance(r, (tuple, list)) else [r]
            exp = "R " + ";".join(result_spec(x, first, geo, share) for x in rs)
    except (RuntimeError, IndexError, ValueError, TypeError) as e:
        msg = str(e)
        assert "\n" not in msg and "\t" not in msg, msg
        exp = "E " + KIND[type(e)] + " " + msg
    a = ",".join(str(x) for x in args) if args else "-"
    ins = ";".join(NONE if i is NONE else i.spec() for i in inputs) if inputs else "-"
    lines.append("\t".join([name, op, a, ins, repr(tol) if tol else "0", exp]))


def fhex(x):
    return float(x).hex()


# ---- inputs ----

def ar(n, dtype=F32, start=0):
    return torch.arange(start, start + n).to(dtype)


base24 = ar(24)
INPUTS = {
    "c234": Inp(base24, (2, 3, 4), (12, 4, 1)),
    "t234": Inp(base24, (4, 3, 2), (1, 4, 12)),                # permuted (dense)
    "s234": Inp(ar(48), (2, 3, 4), (24, 8, 2), 1),             # every other element, offset
    "x34": Inp(ar(4), (3, 4), (0, 1)),                         # expanded rows
    "one": Inp(ar(6), (2, 1, 3), (3, 7, 1)),                   # size-1 dim with an odd stride
    "z": Inp(torch.tensor([5.5]), (), (), 0),                   # 0-dim
    "e03": Inp(ar(0), (0, 3), (3, 1)),
    "e0": Inp(ar(0), (0,), (1,)),
    "cl": view_of(ar(36).reshape(2, 3, 2, 3).contiguous(memory_format=torch.channels_last)),
    "cl3": view_of(ar(24).reshape(2, 3, 1, 2, 2).contiguous(memory_format=torch.channels_last_3d)),
    "i64": Inp(ar(12, I64, -5), (3, 4), (4, 1)),
    "i32t": Inp(ar(12, I32, -5), (4, 3), (1, 4)),
    "b": Inp(torch.tensor([True, False, True, True, False, False]), (2, 3), (3, 1)),
    "f64": Inp(torch.linspace(-2, 3, 10, dtype=F64), (2, 5), (5, 1)),
}
ALL = list(INPUTS)


def each(names_, ops):
    for n in names_:
        for tag, args, fn in ops:
            yield n, INPUTS[n], tag, args, fn


# ---- views and shapes ----

def shapes_for(inp):
    n = math.prod(inp.shape)
    out = [(-1,), (n,), (1, -1), (-1, 1)]
    for a in range(2, n + 1):
        if n % a == 0:
            out.append((a, -1))
            out.append((n // a, a))
    out += [(n + 1,), (-1, -1), (-2, n), (0, -1), (-1, 0)]
    return out[:14]


for n in ALL:
    inp = INPUTS[n]
    for shp in dict.fromkeys(shapes_for(inp) + [(), (1,), (1, 1, 1)]):
        sname = "x".join(str(s) for s in shp) or "scalar"
        case(f"reshape_{n}_{sname}", "reshape", shp, [inp], lambda t, s=shp: t.reshape(s))
        case(f"view_{n}_{sname}", "view", shp, [inp], lambda t, s=shp: t.view(s))
# viewable splits and merges of non-contiguous layouts
case("view_split_dense_t", "view", (2, 2, 3, 2), [INPUTS["t234"]], lambda t: t.view(2, 2, 3, 2))
case("view_merge_s", "view", (6, 4), [INPUTS["s234"]], lambda t: t.view(6, 4))
case("view_merge_s_bad", "view", (2, 12), [INPUTS["s234"]], lambda t: t.view(2, 12))
case("view_expanded_split", "view", (3, 2, 2), [INPUTS["x34"]], lambda t: t.view(3, 2, 2))
case("view_expanded_merge", "view", (12,), [INPUTS["x34"]], lambda t: t.view(12))
case("reshape_expanded_merge", "reshape", (12,), [INPUTS["x34"]], lambda t: t.reshape(12))
case("view_empty_same", "view", (0, 3), [Inp(ar(0), (0, 3), (7, 2))], lambda t: t.view(0, 3))
case("view_empty_other", "view", (3, 0, 2), [Inp(ar(0), (0, 3), (7, 2))], lambda t: t.view(3, 0, 2))
case("view_size1_strides", "view", (3, 2), [INPUTS["one"]], lambda t: t.view(3, 2))
case("view_cl_flat", "view", (2, 18), [INPUTS["cl"]], lambda t: t.view(2, 18))
case("view_cl_nhwc", "view", (2, 3, 6), [INPUTS["cl"]], lambda t: t.view(2, 3, 6))

PERMS = [(1, 0, 2), (2, 0, 1), (-1, 0, 1), (0, 1), (0, 0, 1), (0, 1, 3), (0, 1, 2, 3), (3, 1, 2, 0), ()]
for n in ALL:
    for p in PERMS:
        pn = "_".join(str(x) for x in p) or "none"
        case(f"permute_{n}_{pn}", "permute", p, [INPUTS[n]], lambda t, p=p: t.permute(*p) if p else t.permute([]))
    for d0, d1 in [(0, 1), (1, -1), (0, 0), (-1, 0), (2, 0), (0, 3), (-4, 0)]:
        case(f"transpose_{n}_{d0}_{d1}", "transpose", (d0, d1), [INPUTS[n]], lambda t, a=d0, b=d1: t.transpose(a, b))
    for d in [0, 1, -1, 2, 3, -3, -4, 5]:
        case(f"unsqueeze_{n}_{d}", "unsqueeze", (d,), [INPUTS[n]], lambda t, d=d: t.unsqueeze(d))
    for a, b in [(0, -1), (1, 2), (0, 1), (1, 1), (1, 0), (-1, -1), (0, 3), (2, -1)]:
        case(f"flatten_{n}_{a}_{b}", "flatten", (a, b), [INPUTS[n]], lambda t, a=a, b=b: t.flatten(a, b))


def squeeze_mask(t, mask):
    if mask == 0:
        return t.squeeze()
    for d in sorted((d for d in range(64) if mask >> d & 1), reverse=True):
        t = t.squeeze(d)
    return t


SQ = [Inp(ar(6), (1, 2, 1, 3, 1), (6, 3, 3, 1, 1)), Inp(ar(1), (1, 1), (5, 9)), INPUTS["z"], INPUTS["one"],
      INPUTS["e03"], Inp(ar(0), (1, 0, 1), (0, 1, 1))]
for i, inp in enumerate(SQ):
    for mask in [0, 1, 2, 4, 5, 0b10101, 0b11111]:
        case(f"squeeze_{i}_{mask}", "squeeze", (mask,), [inp], lambda t, m=mask: squeeze_mask(t, m))
case("squeeze_out_of_range", "squeeze", (1 << 5,), [INPUTS["c234"]], lambda t: t.squeeze(5))
case("squeeze_scalar_1", "squeeze", (2,), [INPUTS["z"]], lambda t: t.squeeze(1))

EXPANDS = [(2, 3, 4), (-1, -1, -1), (5, 2, 3, 4), (2, -1, 3, 4), (-1, 2, 3, 4), (3, 4), (2, 3, 1), (2, 3, 8),
           (3, 12, 4), (4, 3, 2), (2, 1, 3), (2, 2, 1, 3), (0, 2, 1, 3), (2, 0, 3), (3, 4, 0), (1,), (5,), (),
           (2, 1, 3, 4), (7, 3, 4), (2, -2, 4), (-2, 4), (1, 1), (2, 5)]
for n in ALL:
    for shp in EXPANDS:
        sname = "x".join(str(s) for s in shp) or "scalar"
        case(f"expand_{n}_{sname}", "expand", shp, [INPUTS[n]], lambda t, s=shp: t.expand(*s) if s else t.expand([]))
case("expand_x34", "expand", (2, 3, 4), [INPUTS["x34"]], lambda t: t.expand(2, 3, 4))
case("expand_size1", "expand", (-1, 5, 3), [INPUTS["one"]], lambda t: t.expand(-1, 5, 3))
case("expand_neg_new", "expand", (-3, 3, 4), [Inp(ar(12), (3, 4), (4, 1))],
     lambda t: t.expand(-3, 3, 4))
case("expand_neg_size1", "expand", (-2,), [Inp(ar(1), (1,), (1,))], lambda t: t.expand(-2))

# memory formats
FMT_INPUTS = dict(INPUTS)
FMT_INPUTS.update({
    "c2345": view_of(ar(36).reshape(2, 3, 2, 3)),
    "cl_t": view_of(ar(36).reshape(2, 3, 2, 3).contiguous(memory_format=torch.channels_last).transpose(2, 3)),
    "cl_n1": view_of(ar(20).reshape(1, 4, 5, 1).contiguous(memory_format=torch.channels_last)),
    "c_n111": view_of(ar(3).reshape(3, 1, 1, 1)),
    "n11w": view_of(ar(12).reshape(3, 1, 1, 4)[..., :1]),
    "cl_slice": view_of(ar(48).reshape(2, 3, 4, 2).contiguous(memory_format=torch.channels_last)[:, :, ::2]),
    "cl_empty": view_of(torch.empty(0, 3, 2, 2).contiguous(memory_format=torch.channels_last)),
    "e0322": view_of(torch.empty(0, 3, 2, 2)),
    "c23456": view_of(ar(72).reshape(2, 3, 2, 2, 3)),
    "cl3_slice": view_of(ar(48).reshape(2, 3, 2, 2, 2).contiguous(memory_format=torch.channels_last_3d)[..., 1:]),
    "strided5": Inp(ar(100), (3, 2, 2, 3, 2), (6, 0, 24, 0, 1)),
    "gaps": Inp(ar(100), (2, 3, 2), (2, 4, 12)),
    "gaps2": Inp(ar(100), (4, 2, 2), (1, 8, 4)),
    "eq_strides": Inp(ar(10), (2, 3), (1, 1)),
    "big_size1": Inp(ar(10), (1, 3), (40, 2), 4),
})
for n, inp in FMT_INPUTS.items():
    for mf in MF:
        case(f"is_contiguous_{n}_{mf}", "is_contiguous", (mf,), [inp],
             lambda t, mf=mf: t.is_contiguous(memory_format=MF[mf]))
        case(f"contiguous_{n}_{mf}", "contiguous", (mf,), [inp], lambda t, mf=mf: t.contiguous(memory_format=MF[mf]))
        case(f"clone_{n}_{mf}", "clone", (mf,), [inp], lambda t, mf=mf: t.clone(memory_format=MF[mf]))

# cat and stack
CAT = {
    "2x3_2x3": [Inp(ar(6), (2, 3), (3, 1)), Inp(ar(6, F32, 10), (2, 3), (3, 1))],
    "2x3_2x1": [Inp(ar(6), (2, 3), (3, 1)), Inp(ar(2, F32, 10), (2, 1), (1, 1))],
    "2x3_4x3t": [Inp(ar(6), (2, 3), (3, 1)), Inp(ar(12, F32, 10), (4, 3), (1, 4))],
    "2x3_2x2_bad": [Inp(ar(6), (2, 3), (3, 1)), Inp(ar(9), (3, 3), (3, 1))],
    "mixed_dtypes": [Inp(ar(6, I32), (2, 3), (3, 1)), Inp(ar(6, F64, 10), (2, 3), (3, 1)),
                     Inp(torch.tensor([True, False, True, False, True, True]), (2, 3), (3, 1))],
    "int_bool": [Inp(torch.tensor([True, False]), (1, 2), (2, 1)), Inp(ar(4, I64), (2, 2), (2, 1))],
    "legacy_empty": [Inp(ar(0), (0,), (1,)), Inp(ar(6), (2, 3), (3, 1)), Inp(ar(0, F64), (0,), (1,))],
    "all_legacy_empty": [Inp(ar(0), (0,), (1,)), Inp(ar(0, I64), (0,), (1,))],
    "empty_rows": [Inp(ar(0), (0, 3), (3, 1)), Inp(ar(6), (2, 3), (3, 1))],
    "zero_dim": [Inp(ar(6), (2, 3), (3, 1)), INPUTS["z"]],
    "rank_mismatch": [Inp(ar(6), (2, 3), (3, 1)), Inp(ar(2), (2,), (1,))],
    "one": [Inp(ar(6), (2, 3), (3, 1))],
    "none": [],
    "cl_cl": [INPUTS["cl"], INPUTS["cl"]],
    "cl_c": [INPUTS["cl"], FMT_INPUTS["c2345"]],
    "c_cl": [FMT_INPUTS["c2345"], INPUTS["cl"]],
    "cl3_cl3": [INPUTS["cl3"], INPUTS["cl3"]],
    "expanded": [INPUTS["x34"], Inp(ar(12), (3, 4), (4, 1))],
    "overlap_views": [Inp(base24, (2, 3), (3, 1), 2), Inp(base24, (2, 3), (1, 2), 5)],
    "scalars": [INPUTS["z"], Inp(torch.tensor([2.0]), (), (), 0)],
}
for cn, ins in CAT.items():
    for d in [0, 1, -1, 2, 3, -3, 4]:
        case(f"cat_{cn}_{d}", "cat", (d,), ins, lambda *ts, d=d: torch.cat(list(ts), d), share="0")
        case(f"stack_{cn}_{d}", "stack", (d,), ins, lambda *ts, d=d: torch.stack(list(ts), d), share="0")

# dtype changes
for n in ALL:
    for dt in (F32, F64, I32, I64, B):
        case(f"to_{n}_{NAME[dt]}", "to", (NAME[dt],), [INPUTS[n]], lambda t, dt=dt: t.to(dt), geo=False)
case("to_specials_int", "to", ("int32",), [Inp(torch.tensor([1.5, -2.5, 0.0, -0.0, 7.99]))], lambda t: t.to(I32),
     geo=False)

# ---- creation ----

ARANGE = [(0, 10, 1), (0, 10, 0.1), (0, 1, 0.01), (-3.3, 7.7, 0.37), (1, 2, 1 / 3), (0.1, 100.1, 0.7), (10, 0, -0.3),
          (0, 300, 0.77), (5, 5, 1), (3, 3, -1), (0, 5, 0), (1, 0, 1), (0, 1, -1), (0, inf, 1), (-inf, 0, 1),
          (0, nan, 1), (0, 5, nan), (0, 10, inf), (0.5, 3, 1), (0, 3, 0.5), (-2.5, 3, 1.5), (-1.5, 2, 1),
          (2 ** 40, 2 ** 40 + 5, 1), (0, 3e9, 1e9), (0, 1e30, 1e29), (0, 1e300, 1e-300), (1e20, 2e20, 1e19),
          (-5, 5, 3), (0, 17, 1), (0, 33, 1), (0.3, 40.3, 1.1), (100, -100, -7.3)]
for i, (a, b, s) in enumerate(ARANGE):
    for dt in (F32, F64, I32, I64, B):
        case(f"arange_{i}_{NAME[dt]}", "arange", (fhex(a), fhex(b), fhex(s), NAME[dt]), [],
             lambda a=a, b=b, s=s, dt=dt: torch.arange(a, b, s, dtype=dt))

LINSPACE = [(0, 1, 5), (0, 1, 50), (-3.3, 7.7, 37), (1, 2, 3), (0.1, 100.1, 301), (10, 0, 17), (0, 1, 2),
            (5, 5, 10), (0, 1, 1), (2.7, 1, 1), (-2.7, 1, 1), (0, 1, 0), (0, 1, -1), (-2.7, 1, 3), (nan, 1, 3),
            (inf, 1, 3), (0, inf, 4), (0, 2 ** 40, 3), (-100, 100, 33), (1e-3, 1e3, 64), (3, -3, 16), (0, 1, 15),
            (0, 7, 8), (-1e10, 1e10, 21), (0.5, 1, 1)]
for i, (a, b, n) in enumerate(LINSPACE):
    for dt in (F32, F64, I32, I64, B):
        case(f"linspace_{i}_{NAME[dt]}", "linspace", (fhex(a), fhex(b), n, NAME[dt]), [],
             lambda a=a, b=b, n=n, dt=dt: torch.linspace(a, b, n, dtype=dt))

for n, m in [(3, 3), (2, 4), (4, 2), (0, 3), (1, 1), (0, 0), (-1, 2), (2, -1)]:
    for dt in (F32, I32, B):
        case(f"eye_{n}_{m}_{NAME[dt]}", "eye", (n, m, NAME[dt]), [], lambda n=n, m=m, dt=dt: torch.eye(n, m, dtype=dt))

# ---- composite operations ----

torch.manual_seed(0)
RED = {
    "r234": Inp(torch.randn(24), (2, 3, 4), (12, 4, 1)),
    "r234t": Inp(torch.randn(24), (2, 3, 4), (1, 2, 6)),
    "r64": Inp(torch.randn(20, dtype=F64) * 10, (4, 5), (5, 1)),
    "special": Inp(torch.tensor([1.0, nan, -inf, inf, 2.0, -0.0, 3.0, -1.0]), (2, 4), (4, 1)),
    "infs": Inp(torch.tensor([inf, 1.0, -inf, -inf, 2.0, 2.0]), (3, 2), (2, 1)),
    "z": INPUTS["z"],
    "zinf": Inp(torch.tensor([-inf]), (), (), 0),
    "e03": INPUTS["e03"],
    "e30": Inp(ar(0), (3, 0), (1, 1)),
    "i64": INPUTS["i64"],
    "i32": INPUTS["i32t"],
    "b": INPUTS["b"],
    "big": Inp(torch.randn(600) * 3, (3, 200), (200, 1)),
    "ties": Inp(torch.tensor([1.0, 3.0, 3.0, 2.0, 3.0, 1.0]), (2, 3), (3, 1)),
    "xp": Inp(torch.randn(30), (3, 1, 5), (10, 7, 2)),
}


def mask_dims(mask, nd):
    return tuple(d for d in range(nd) if mask >> d & 1)


for n, inp in RED.items():
    nd = len(inp.shape)
    masks = [0] + [1 << d for d in range(nd)] + ([3, (1 << nd) - 1, 5] if nd >= 2 else [])
    for mask in sorted(set(masks)):
        dd = mask_dims(mask, nd)
        for kd in (False, True):
            tag = f"{n}_{mask}_{int(kd)}"

            def mean(t, dd=dd, kd=kd, mask=mask):
                return t.mean(dd, keepdim=kd) if mask else (t.mean() if not kd else t.mean(tuple(range(t.dim())), keepdim=True))

            case(f"mean_{tag}", "mean", (mask, int(kd)), [inp], mean, tol=1e-6, geo=False)

            def lse(t, dd=dd, kd=kd, mask=mask):
                d = dd if mask else (tuple(range(t.dim())) if t.dim() else 0)
                return torch.logsumexp(t, d, keepdim=kd)

            case(f"logsumexp_{tag}", "logsumexp", (mask, int(kd)), [inp], lse, tol=2e-6, geo=False)
    for d in list(range(-nd - 1, nd + 1)) if nd else [-2, -1, 0, 1]:
        for kd in (False, True):
            for is_min in (False, True):
                case(f"max_dim_{n}_{d}_{int(kd)}_{int(is_min)}", "max_dim", (d, int(kd), int(is_min)), [inp],
                     lambda t, d=d, kd=kd, m=is_min: tuple(torch.min(t, d, kd) if m else torch.max(t, d, kd)),
                     geo=False)
        for log in (False, True):
            case(f"softmax_{n}_{d}_{int(log)}", "softmax", (d, int(log)), [inp],
                 lambda t, d=d, log=log: torch.log_softmax(t, d) if log else torch.softmax(t, d), tol=2e-6, geo=False)
case("mean_f64_all", "mean", (0, 0), [RED["r64"]], lambda t: t.mean(), tol=1e-14, geo=False)
case("softmax_f64", "softmax", (1, 0), [RED["r64"]], lambda t: torch.softmax(t, 1), tol=1e-13, geo=False)
case("log_softmax_f64", "softmax", (0, 1), [RED["r64"]], lambda t: torch.log_softmax(t, 0), tol=1e-13, geo=False)

# clamp: a, min, max
CL_A = {"f": Inp(torch.tensor([-2.0, -0.5, 0.0, 0.5, 1.5, nan, inf, -inf]), (8,), (1,)),
        "i": Inp(ar(6, I64, -3), (2, 3), (3, 1)),
        "i32": Inp(ar(6, I32, -3), (6,), (1,)),
        "b": Inp(torch.tensor([True, False]), (2,), (1,)),
        "z": INPUTS["z"],
        "f64": Inp(torch.tensor([-1.0, 0.25, 3.0], dtype=F64), (3,), (1,)),
        # signed zeros: a tie with a bound keeps a (torch's scalar path, used for small tensors)
        "zeros": Inp(torch.tensor([-0.0, 0.0, -0.0, 0.0]), (4,), (1,))}
CL_B = {"none": NONE,
        "s0": scalar(0, I64), "s1": scalar(1, I64), "sf": scalar(0.5, F64), "sneg": scalar(-1.25, F64),
        "snan": scalar(nan, F64), "strue": scalar(True, B),
        "t0f": Inp(torch.tensor([0.25]), (), (), 0), "t0d": Inp(torch.tensor([0.5], dtype=F64), (), (), 0),
        "t0i": Inp(torch.tensor([1]), (), (), 0), "t0b": Inp(torch.tensor([True]), (), (), 0),
        "t0nan": Inp(torch.tensor([nan]), (), (), 0),
        "tvec": Inp(torch.tensor([0.0, 1.0, -1.0]), (3,), (1,)),
        "tcol": Inp(torch.tensor([0, 1], dtype=I64), (2, 1), (1, 1)),
        "tvecd": Inp(torch.tensor([0.0, 0.5], dtype=F64), (2,), (1,)),
        "tvecb": Inp(torch.tensor([True, False]), (2,), (1,)),
        "s0f": scalar(0.0, F64), "snz": scalar(-0.0, F64),
        "tz": Inp(torch.tensor([0.0, -0.0, 0.0, -0.0]), (4,), (1,))}
LO_HI = [("none", "none"), ("s0", "none"), ("none", "s1"), ("s0", "s1"), ("sf", "none"), ("sneg", "sf"),
         ("s1", "s0"), ("snan", "none"), ("none", "snan"), ("snan", "s1"), ("s0", "snan"), ("strue", "none"),
         ("none", "strue"), ("strue", "strue"), ("t0f", "none"), ("t0d", "none"), ("t0i", "t0i"), ("t0b", "none"),
         ("none", "t0b"), ("t0b", "t0b"), ("t0nan", "none"), ("t0nan", "sf"), ("sf", "t0i"), ("tvec", "none"),
         ("none", "tvec"), ("tcol", "none"), ("tvecd", "t0f"), ("tvecb", "none"), ("tvecb", "tvecb"),
         ("tvec", "t0nan"), ("s0f", "none"), ("none", "snz"), ("snz", "s0f"), ("s0f", "snz"), ("tz", "none"),
         ("none", "tz"), ("tz", "tz")]


for an, a in CL_A.items():
    for lo, hi in LO_HI:
        case(f"clamp_{an}_{lo}_{hi}", "clamp", (), [a, CL_B[lo], CL_B[hi]],
             lambda t, l, h: torch.clamp(t, min=l, max=h), geo=False)

# item
for n, inp in [("z", INPUTS["z"]), ("i64", Inp(torch.tensor([-7]), (1, 1), (5, 3))),
               ("b", Inp(torch.tensor([False, True]), (1,), (1,), 1)), ("i32", Inp(torch.tensor([9], dtype=I32), (), (), 0)),
               ("f64", Inp(torch.tensor([0.1], dtype=F64), (1,), (1,))), ("two", INPUTS["b"]), ("empty", INPUTS["e0"])]:
    case(f"item_{n}", "item", (), [inp], lambda t: ("scalar", t.dtype, t.item()))

# wrap_dim: maybe_wrap_dim, as sum(dim) reports it
for nd in (0, 1, 3):
    for d in (-4, -3, -2, -1, 0, 1, 2, 3):
        try:
            torch.zeros((2,) * nd).sum(d)
            exp = "S int64 %d" % (d + max(nd, 1) if d < 0 else d)
        except IndexError as e:
            exp = "E INDEX " + str(e)
        lines.append("\t".join([f"wrap_dim_{nd}_{d}", "wrap_dim", f"{d},{nd}", "-", "0", exp]))


# ---- Philox: tdl's own generator, computed independently ----

M = 0xFFFFFFFF


def philox(block, stream, seed):
    c = [block & M, block >> 32 & M, stream, 0]
    k = [seed & M, seed >> 32 & M]
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & M, (k[1] + 0xBB67AE85) & M]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & M, (p0 >> 32) ^ c[3] ^ k[1], p0 & M]
    return c


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def draw(kind, dtype, seed, offset, n):
    out = []
    for i in range(n):
        idx = offset + i
        if kind == "rand":
            if dtype == "float32":
                w = philox(idx // 4, 0, seed)[idx % 4]
                out.append((w >> 8) / 2.0 ** 24)
            else:
                w = philox(idx // 2, 1, seed)
                out.append((((w[2 * (idx % 2)] << 32) | w[2 * (idx % 2) + 1]) >> 11) / 2.0 ** 53)
        else:
            w = philox(idx // 2, 2 if dtype == "float32" else 3, seed)
            if dtype == "float32":
                u1, u2 = 1.0 - (w[0] >> 8) / 2.0 ** 24, (w[1] >> 8) / 2.0 ** 24
            else:
                u1 = 1.0 - (((w[0] << 32) | w[1]) >> 11) / 2.0 ** 53
                u2 = (((w[2] << 32) | w[3]) >> 11) / 2.0 ** 53
            r, th = math.sqrt(-2.0 * math.log(u1)), 2.0 * math.pi * u2
            out.append(r * math.cos(th) if idx % 2 == 0 else r * math.sin(th))
        if dtype == "float32":
            out[-1] = f32(out[-1])
    return out


philox_lines = []
for kind in ("rand", "randn"):
    for dtype in ("float32", "float64"):
        for seed, offset in [(0, 0), (1, 0), (1234567, 5), (2 ** 40 + 3, 1), (2 ** 63 - 1, 7)]:
            vals = draw(kind, dtype, seed, offset, 11)
            philox_lines.append(" ".join([kind, dtype, str(seed), str(offset)] + [v.hex() for v in vals]))

os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "cases.txt"), "w") as f:
    f.write("# generated by tests/golden/gen_fcdim_ops.py from PyTorch %s; do not edit\n" % torch.__version__)
    for line in lines:
        f.write(line + "\n")
with open(os.path.join(OUT, "philox.txt"), "w") as f:
    f.write("# generated by tests/golden/gen_fcdim_ops.py (tdl's Philox 4x32-10 rule, not torch's); do not edit\n")
    for line in philox_lines:
        f.write(line + "\n")
print("%d cases, %d bytes" % (len(lines), os.path.getsize(os.path.join(OUT, "cases.txt"))), file=sys.stderr)
