#!/usr/bin/python3
"""gen_fcdim_print.py: writes tests/golden/fcdim_print/cases.txt, the expected text of
fc_format_tensor (fcdim/print.c) for about 150 tensors and views of them, taken from PyTorch 1.13's
own printing code (torch/_tensor_str.py) with its default print options.

Run from the repository root with the Debian python3-torch:  /usr/bin/python3 tests/golden/gen_fcdim_print.py

tdl prints dtypes with its own names ("dtype=int32", not "dtype=torch.int32"); the expected text
is repr(tensor) with "torch." taken out of the dtype suffix, and nothing else changed: where the
suffix went to a line of its own because torch's longer name would pass column 80, tdl's does too,
so that torch stays an oracle by plain string replacement. Device suffixes ("cuda:0") are made by
torch's _tensor_str and _add_suffixes on the suffix list _str_intern builds for a plain strided
tensor (this machine need not have a GPU); every cpu case checks that construction against
repr(tensor) first.

One line per view, tab-separated:
    name  dtype  storage  shape  strides  offset  device  expected
storage: the little-endian bytes of the base tensor in hex, or "=" for the previous line's;
shape/strides: comma-separated, "-" for a 0-d tensor; strides in elements (may be 0 or negative);
device: "-" for cpu; expected: the text, with each newline written as the two characters "\\n".
"""
import math
import os
import struct
import sys

import torch
from torch._tensor_str import _add_suffixes, _tensor_str

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fcdim_print", "cases.txt")
DEFAULT_DTYPES = (torch.float32, torch.int64, torch.bool)


def expected_repr(t, device=None, torch_names=False):
    """_str_intern's path for a plain strided tensor without grad."""
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    name = str(t.dtype) if torch_names else str(t.dtype).replace("torch.", "")
    if device is not None:
        suffixes.append("device='" + device + "'")
    if t.numel() == 0:
        if t.dim() != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype != torch.get_default_dtype():
            suffixes.append("dtype=" + name)
        body = "[]"
    else:
        if t.dtype not in DEFAULT_DTYPES:
            suffixes.append("dtype=" + name)
        body = _tensor_str(t, indent)
    return _add_suffixes(prefix + body, suffixes, indent, force_newline=False)


lines = []
stats = {"views": 0, "wrap_differs": 0}
prev_storage = [None]


def emit(name, base, shape, strides, offset, shown, device=None):
    """One line: the C view (shape, strides, offset) over base's storage prints as torch prints
    `shown`, the same logical tensor made by torch."""
    assert list(shape) == list(shown.shape), name
    torch_text = expected_repr(shown, device, torch_names=True)
    if device is None:
        assert torch_text == repr(shown), (name, torch_text, repr(shown))
        if torch_text.replace("dtype=torch.", "dtype=") != expected_repr(shown):
            stats["wrap_differs"] += 1
    text = torch_text.replace("dtype=torch.", "dtype=")
    assert "\t" not in text and "\\" not in text
    storage = base.contiguous().numpy().tobytes().hex()
    if storage == "":
        field = "-"
    elif storage == prev_storage[0]:
        field = "="
    else:
        field = storage
    prev_storage[0] = storage
    dims = lambda xs: ",".join(str(int(x)) for x in xs) if len(xs) else "-"
    lines.append("\t".join([name, str(base.dtype).replace("torch.", ""), field, dims(shape),
                            dims(strides), str(offset), device or "-",
                            text.replace("\n", "\\n")]))
    stats["views"] += 1


def flipped(v, dims):
    """Shape, strides, offset of v reversed along dims, as a view with negative strides."""
    strides = list(v.stride())
    offset = v.storage_offset()
    for d in dims:
        if v.shape[d] > 0:
            offset += (v.shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    return list(v.shape), strides, offset, v.flip(dims)


def add(name, t, views=(), devices=()):
    """t itself, then each of views: a function of t giving a torch view of t's storage, or
    ("flip", dims, f) for f(t) reversed along dims by negative strides."""
    t = t.contiguous()
    emit(name, t, t.shape, t.stride(), 0, t)
    for i, view in enumerate(views):
        if isinstance(view, tuple):
            _, dims, f = view
            v = f(t)
            shape, strides, offset, shown = flipped(v, dims)
            emit("%s/flip%d" % (name, i), t, shape, strides, offset, shown)
        else:
            v = view(t)
            assert v.data_ptr() == t.data_ptr() + v.storage_offset() * t.element_size() or v.numel() == 0
            emit("%s/view%d" % (name, i), t, v.shape, v.stride(), v.storage_offset(), v)
    for dev in devices:
        emit("%s@%s" % (name, dev), t, t.shape, t.stride(), 0, t, device=dev)


T = lambda x, dt=torch.float32: torch.tensor(x, dtype=dt)
F32, F64, I32, I64, B = torch.float32, torch.float64, torch.int32, torch.int64, torch.bool
ALL = (F32, F64, I32, I64, B)
tr = lambda t: t.t()
ident = lambda t: t
torch.manual_seed(0)
nan, inf = math.nan, math.inf

# ---- 0-d ----
for dt in ALL:
    add("scalar_%s" % str(dt)[6:], T(3, dt), devices=("cuda:0",) if dt in (F32, I32) else ())
for v in (-0.0, 0.0, 0.5, -2.5, nan, inf, -inf, 1e10, 1.2345678, 1e-5, 123456.0, 99999.99, 1e8, 1.5e8):
    add("scalar_f32_%r" % v, T(v))
for v in (math.pi, 1e300, 5e-324, -1.0 / 3.0, 2.0 ** 53):
    add("scalar_f64_%r" % v, T(v, F64))
add("scalar_false", T(False, B))
add("scalar_i64_min", T(-2 ** 63, I64))
add("scalar_i32_neg", T(-7, I32))

# ---- empty ----
for dt in ALL:
    add("empty_%s" % str(dt)[6:], torch.zeros(0, dtype=dt))
    add("empty_0x3_%s" % str(dt)[6:], torch.zeros(0, 3, dtype=dt))
add("empty_2x0x3", torch.zeros(2, 0, 3))
add("empty_3x0_i32", torch.zeros(3, 0, dtype=I32), devices=("cuda:1",))
add("empty_slice", torch.arange(6.0).reshape(2, 3), views=(lambda t: t[:, 3:], lambda t: t[2:]))

# ---- float32 formatter modes ----
f32_1d = {
    "int_mode": [1.0, 2.0, 3.0],
    "fixed": [1.5, 2.25, -3.125],
    "zeros_negzero": [0.0, -0.0],
    "negzero_mixed": [-0.0, 1.5, 0.0],
    "negzero_int": [-0.0, 1.0, -2.0],
    "nan_fixed": [nan, 1.5],
    "nan_int": [nan, 1.0, 20.0],
    "all_special": [nan, inf, -inf],
    "special_fixed": [nan, inf, -inf, 0.25],
    "special_int": [nan, inf, -inf, 100.0],
    "special_sci": [nan, inf, -inf, 1e-7, 1.0],
    "inf_zero": [-inf, 0.0],
    "tiny": [1e-5, 1.0],
    "tiny_only": [3e-5, 5e-5],
    "huge_int": [1e9, 1.0],
    "huge_frac": [1e9 + 0.5, 1.5],
    "eq_1e8": [1e8, 1e8],
    "ratio_big_int": [1e8, 1.0],
    "ratio_1000": [1000.0, 1.0],
    "ratio_1001": [1001.0, 1.0],
    "ratio_frac_1000": [1000.0, 1.0, 0.5],
    "min_1e-4": [1e-4, 1.0],
    "near_1e-4": [1.0001e-4, 0.5],
    "mixed": [123.456, -0.001, 7.0],
    "widths": [1.0, -10.0, 100.5],
    "widths_int": [1.0, -10.0, 1000.0],
    "round_half": [0.00005, 0.00015, 0.5],
    "round_up": [9.99995, 0.12345, 99.99996],
    "neg_sci": [-1.5e10, 2.0, -3e-3],
    "sci_exp3": [1e-30, 1e30],
    "neg_round_zero": [-0.00004, 1.0, 2.0],
    "large_fixed": [12345678.0, 0.5, 99999.5],
}
for k, v in f32_1d.items():
    add("f32_" + k, T(v), views=(("flip", (0,), ident),) if k in ("fixed", "special_sci") else ())

add("f32_randn10", torch.randn(10))
add("f32_arange30_wrap", torch.arange(30.0), views=(lambda t: t[::2], ("flip", (0,), ident)))
add("f32_randn30_wrap", torch.randn(30), views=(lambda t: t[1::3], ("flip", (0,), lambda t: t[::4])))
add("f32_randn_x1000_wrap", torch.randn(40) * 1000)
add("f32_sci_wrap", torch.randn(25) * 1e-6)
add("f32_intbig_wrap", torch.arange(0.0, 1e6, 1e6 / 40).round())
add("f32_2x3", T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
    views=(tr, ("flip", (0, 1), ident), ("flip", (1,), tr), lambda t: t[:, None, :].expand(2, 3, 3)))
add("f32_2x2_frac", T([[1.5, -2.0], [3.25, 4.0]]), devices=("cuda:0",))
add("f32_randn_3x4", torch.randn(3, 4),
    views=(tr, lambda t: t[:, ::2], lambda t: t[1:], ("flip", (0,), tr), lambda t: t[1]))
add("f32_randn_4x5", torch.randn(4, 5) * 100, views=(tr, lambda t: t[::2, 1::2]))
add("f32_randn_2x20_wrap", torch.randn(2, 20), views=(tr,))
add("f32_2x3x4_arange", torch.arange(24.0).reshape(2, 3, 4),
    views=(lambda t: t.permute(2, 0, 1), lambda t: t[:, 1], ("flip", (2,), ident)))
add("f32_randn_2x3x4", torch.randn(2, 3, 4), views=(lambda t: t.transpose(0, 2),))
add("f32_randn_2x2x15_wrap", torch.randn(2, 2, 15))
add("f32_randn_2x2x2x3", torch.randn(2, 2, 2, 3), views=(lambda t: t.permute(3, 1, 0, 2),),
    devices=("cuda:0",))
add("f32_4d_int", torch.arange(-8.0, 8.0).reshape(2, 2, 2, 2))
add("f32_sci_2d", T([[1e-8, 1.0], [2.5e5, -3.0]]), views=(tr,))
add("f32_nan_2d", T([[nan, 1.0], [inf, -0.0]]))
add("f32_col_1", torch.randn(5, 1), views=(tr,))
add("f32_expand_row", T([1.5, -2.0, 3.0]), views=(lambda t: t.expand(4, 3), lambda t: t[:, None].expand(3, 3)))
add("f32_expand_scalar", T([7.0]), views=(lambda t: t.expand(5), lambda t: t.expand(2000),
                                          lambda t: t[:, None, None].expand(3, 2, 2)))
# the dtype suffix moves to its own line because "dtype=torch.float64" would pass column 80,
# though "dtype=float64" would not: tdl follows torch's layout
add("f64_suffix_wraps_as_torch", T([1.0 / 3] * 15 + [1.5], F64))

# NaN with the sign bit set: Python, and so torch, prints no sign on a NaN
add("f32_negnan", torch.frombuffer(bytearray(struct.pack("<3f", -nan, 1.5, nan)), dtype=F32).clone())
add("f64_negnan", torch.frombuffer(bytearray(struct.pack("<2d", -nan, 2.0)), dtype=F64).clone())
add("f32_rank8", torch.arange(6.0).reshape(1, 2, 1, 3, 1, 1, 1, 1))

# ---- summarised (more than 1000 elements) ----
add("sum_f32_1001", torch.randn(1001), views=(("flip", (0,), ident),))
add("sum_f32_arange2000", torch.arange(2000.0), views=(lambda t: t[::2], lambda t: t.reshape(40, 50).t()))
add("sum_f32_40x40", torch.randn(40, 40), views=(tr, lambda t: t[::3, ::3], lambda t: t[:, :6],
                                                ("flip", (0, 1), ident)))
add("sum_f32_3x400", torch.randn(3, 400), views=(tr,))
add("sum_f32_1x1001", torch.randn(1, 1001))
add("sum_f32_2000x1", torch.randn(2000, 1))
add("sum_f32_10x10x11", torch.randn(10, 10, 11), views=(lambda t: t.permute(2, 0, 1), lambda t: t[:6]))
add("sum_f32_5x5x5x10", torch.randn(5, 5, 5, 10))
add("sum_f32_7x7x7x7", torch.arange(2401.0).reshape(7, 7, 7, 7))
add("sum_f32_sci", torch.randn(1200) * 1e-6)
add("sum_f32_expand", T([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.5]]), views=(lambda t: t.expand(200, 8),))
add("sum_f32_hidden_values", torch.cat([T([1.0, 2.0, 3.0]), torch.full((1000,), 0.5),
                                        T([4.0, 5.0, 6.0])]))
add("sum_f32_hidden_nan", torch.cat([torch.ones(500), T([nan, 1e-9]), torch.ones(500) * 2]))
add("sum_f64_1100", torch.randn(1100, dtype=F64) * 10)
add("sum_f64_3x20x20", torch.randn(3, 20, 20, dtype=F64))
add("sum_i32_2000", torch.arange(2000, dtype=I32))
add("sum_i32_33x33", torch.arange(-500, 589, dtype=I32).reshape(33, 33), views=(tr,))
add("sum_i64_10x10x12", torch.arange(1200).reshape(10, 10, 12))
add("sum_i64_big", torch.randint(-10 ** 12, 10 ** 12, (1001,)))
add("sum_bool_1001", torch.rand(1001) > 0.5)
add("sum_bool_2x3x200", torch.rand(2, 3, 200) > 0.5)
add("sum_expand_huge", T([[7.0]]), views=(lambda t: t.expand(10 ** 6, 10 ** 6),))
add("sum_expand_11x11x11", T([[[-7.5]]]), views=(lambda t: t.expand(11, 11, 11),))
add("sum_bool_true", torch.ones(1500, dtype=B))

# ---- float64 ----
add("f64_thirds", T([1.0 / 3, 2.0 / 3], F64))
add("f64_tenths", T([0.1, 0.2, 0.3], F64), views=(("flip", (0,), ident),))
add("f64_many_digits", T([1.23456789012345678, 98765.4321098765, -0.000123456789], F64))
add("f64_int_mode", T([1.0, 2.0, 2.0 ** 40], F64))
add("f64_int_big_nosci", T([12345678.0, 99999999.0, 100000000.0], F64))
add("f64_huge", T([1e300, -1e-300], F64))
add("f64_denormal", T([5e-324, 1.0], F64))
add("f64_1e-4", T([1e-4, 1.0], F64))
add("f64_specials", T([nan, -inf, 2.5, -0.0], F64))
add("f64_randn_2x3", torch.randn(2, 3, dtype=F64), views=(tr,), devices=("cuda:0",))
add("f64_randn_3x3x3", torch.randn(3, 3, 3, dtype=F64) * 1e5, views=(lambda t: t.permute(1, 2, 0),))
add("f64_wrap", torch.randn(25, dtype=F64), views=(("flip", (0,), ident),))
add("f64_allzero", torch.zeros(2, 2, dtype=F64))
add("f64_round_even", T([0.5, 1.5, 2.5, 0.125, 0.00005], F64))
add("f64_round_ties_4", T([1.00005, 2.00015, 0.12345], F64))

# ---- int32 / int64 ----
add("i32_small", T([1, 2, 3], I32), views=(("flip", (0,), ident),))
add("i32_extremes", T([-2 ** 31, 2 ** 31 - 1, 0], I32))
add("i32_widths", T([[1, -20], [300, 4]], I32), views=(tr,), devices=("cuda:0",))
add("i32_wrap", torch.arange(100, dtype=I32), views=(lambda t: t[::3],))
add("i32_3d", torch.arange(-12, 12, dtype=I32).reshape(2, 3, 4), views=(lambda t: t.transpose(0, 1),))
add("i32_zeros_2x2", torch.zeros(2, 2, dtype=I32))
add("i64_small", T([1, 2, 3], I64), devices=("cuda:0",))
add("i64_extremes", T([-2 ** 63, 2 ** 63 - 1], I64))
add("i64_negatives", T([-1, -22, 333], I64))
add("i64_wrap", torch.randint(-100000, 100000, (40,)), views=(("flip", (0,), ident),))
add("i64_2x5", torch.arange(10).reshape(2, 5), views=(tr, lambda t: t[:, None, :].expand(2, 3, 5)))
add("i64_4d", torch.arange(16).reshape(2, 2, 2, 2), views=(("flip", (1, 3), ident),))
add("i64_wide_wrap_2d", torch.randint(-10 ** 15, 10 ** 15, (3, 7)))

# ---- bool ----
add("bool_tf", T([True, False], B), views=(("flip", (0,), ident),), devices=("cuda:0",))
add("bool_tt", T([True, True], B))
add("bool_ff", T([False, False], B))
add("bool_2d", T([[True, False, True], [False, False, True]], B), views=(tr,))
add("bool_3d", torch.rand(2, 3, 4) > 0.5, views=(lambda t: t.permute(1, 0, 2),))
add("bool_wrap", torch.rand(30) > 0.5)
add("bool_expand", T([True], B), views=(lambda t: t.expand(4),))

os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, "w") as f:
    f.write("# generated by tests/golden/gen_fcdim_print.py from PyTorch %s; do not edit\n"
            % torch.__version__)
    for line in lines:
        f.write(line + "\n")
print("%d lines, %d bytes; %d where torch's long dtype name, not tdl's, wraps the suffix"
      % (stats["views"], os.path.getsize(OUT), stats["wrap_differs"]), file=sys.stderr)
