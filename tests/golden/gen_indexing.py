#!/usr/bin/python3
"""gen_indexing.py: writes tests/golden/indexing/cases.txt, the conformance cases of tensor indexing
(tests/test_indexing.c): reads and writes with every index kind, on ranks 0 to 4, five dtypes and
non-contiguous bases, index_put_/index_select/gather/scatter_add, and the errors, all with the
results PyTorch gives.

Run from the repository root with Debian's python3 (torch and numpy installed):
    /usr/bin/python3 tests/golden/gen_indexing.py
The output is committed; the C test suite does not need torch.

Each case is a small program in the Python subset tdl shares with Python, run here under PyTorch
with its names visible without `torch.` and tdl's print (tests/torch_shim.py). One case per line,
three tab-separated fields:
    name  program  expected
name      category/what, unique; the category is the part before the '/'.
program   the source, newlines written as the two characters \\n (a program holds no tab and no
          backslash; the generator checks).
expected  "OK " + everything the program prints, or "ERR Kind message" when it raises: Kind is
          the Python exception class (IndexError, TypeError, ValueError, RuntimeError), which is
          also tdl's error kind name, and message the exact text. The failing statement is the
          program's last line (the generator checks that the lines before it run), so what an
          error case prints before failing is not compared.
In both text fields a backslash is written \\\\, a tab \\t and a newline \\n.

Where tdl deliberately differs from PyTorch, a case says so in one of two ways only:
  numpy_ref=  a second program that prints what tdl must print, computed by other means. Used for
              negative slice steps (a NumPy extension of tdl; PyTorch refuses them), for int32
              index tensors (tdl accepts them, as PyTorch 2 does; PyTorch 1.13 refuses them) and
              for writes whose value overlaps the memory written (tdl reads the value first;
              PyTorch 1.13 raises "unsupported operation"): the reference clones the value.
              When PyTorch runs the program itself, its output must equal the reference's.
  a message   tdl keeps PyTorch's error kind and words the message its own way: MESSAGES below
              (by exact match on torch's message), and per case tdl_msg=(torch's, tdl's), which
              checks torch's text too, so a change in torch shows up here.
"""
import contextlib
import io
import os
import re
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))   # tests/, for torch_shim
import torch_shim  # noqa: E402

OUT = os.path.join(HERE, "indexing", "cases.txt")
KINDS = ("IndexError", "TypeError", "ValueError", "RuntimeError")

# torch's message -> tdl's, wherever torch raises it. Keep this short.
MESSAGES = {
    # tdl has no C++ API to point at.
    "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to "
    "convert a 0-dim tensor to a number":
        "invalid index of a 0-dim tensor. Use `tensor.item()` to convert a 0-dim tensor to a number",
    # tdl accepts int32 index tensors (as PyTorch 2 does), so it names them among the valid kinds.
    "tensors used as indices must be long, byte or bool tensors":
        "tensors used as indices must be long, int, byte or bool tensors",
}

# index_select's out-of-range message in torch 1.13 names no index ("index out of range in self");
# tdl says which index and where, as subscripts do. Per case (tdl_msg=), with each case's values.
# (Cases where torch's kernel says "INDICES element is out of DATA bounds" as a RuntimeError,
# index_select along an inner dim of some layouts, are left out: the kind depends on the kernel.)
def select_oob(torch_msg, index, dim, size):
    return (torch_msg, "index %d is out of bounds for dimension %d with size %d" % (index, dim, size))


cases = []
names = set()


def case(name, program, numpy_ref=None, tdl_msg=None, error=False):
    """A case that runs (error=False) or fails on its last line (error=True: see err)."""
    assert name not in names, name
    assert "/" in name and " " not in name and "\t" not in name, name
    names.add(name)
    cases.append((name, program.strip("\n"), numpy_ref, tdl_msg, error))


def read(name, base, key):
    """print(x[key]) on the base made by the statement `base` (which binds x)."""
    case(name, "%s\nprint(x[%s])" % (base, key))


def write(name, base, key, value, show="x"):
    case(name, "%s\nx[%s] = %s\nprint(%s)" % (base, key, value, show))


def neg(name, base, key, np_key=None):
    """print(x[key]) with a negative slice step, which torch refuses: NumPy's answer,
    x.numpy()[np_key] copied into a tensor."""
    case(name, "%s\nprint(x[%s])" % (base, key),
         numpy_ref="import numpy as np\n%s\nprint(from_numpy(np.array(x.numpy()[%s])))" % (base, np_key or key))


def int32_ref(program):
    """The same program with every int32 tensor(...) made int64, which torch 1.13 accepts as an
    index (the base is made by arange and keeps its dtype)."""
    return re.sub(r"(tensor\([^()]*, dtype=int32\))", r"\1.long()", program)


def err(name, program, tdl_msg=None):
    case(name, program, tdl_msg=tdl_msg, error=True)


# ---- bases ----------------------------------------------------------------------------------------
# Every base statement binds x. Shapes: R0* (), R1* (6,), R2* (3, 4), R3* (2, 3, 4), R4* (2, 3, 4, 5).
R0F = "x = tensor(5.)"
R0I = "x = tensor(7)"
R0B = "x = tensor(True)"
R1 = "x = arange(6)"
R1F = "x = arange(6.)"
R1B = "x = tensor([True, False, True, True, False, True])"
R1I32 = "x = arange(6, dtype=int32)"
R1D = "x = arange(6, dtype=float64) / 4"
R2 = "x = arange(12).reshape(3, 4)"
R2F = "x = arange(12.).reshape(3, 4)"
R2D = "x = arange(12, dtype=float64).reshape(3, 4) / 8"
R2I32 = "x = arange(12, dtype=int32).reshape(3, 4)"
R2B = "x = (arange(12) % 3 == 0).reshape(3, 4)"
# non-contiguous (3, 4) bases: transposed, stepped slices (rows 0 2 4 of 5, columns 1 3 5 7 of 8),
# expanded along rows (stride 0), expanded along columns
R2T = "x = arange(12).reshape(4, 3).t()"
R2FT = "x = (arange(12.) / 4).reshape(4, 3).t()"
R2S = "x = arange(40).reshape(5, 8)[::2, 1::2]"
R2E = "x = arange(4).reshape(1, 4).expand(3, 4)"
R2EC = "x = arange(3.).reshape(3, 1).expand(3, 4)"
R3 = "x = arange(24).reshape(2, 3, 4)"
R3F = "x = arange(24.).reshape(2, 3, 4)"
R3P = "x = arange(24).reshape(4, 2, 3).permute(1, 2, 0)"
R3T = "x = arange(24.).reshape(2, 4, 3).transpose(1, 2)"
R3E = "x = arange(8).reshape(2, 1, 4).expand(2, 3, 4)"
R3S = "x = arange(96).reshape(4, 6, 4)[::2, ::2, :]"
R4 = "x = arange(120).reshape(2, 3, 4, 5)"
R4F = "x = (arange(120.) / 2).reshape(2, 3, 4, 5)"
R4P = "x = arange(120).reshape(5, 4, 3, 2).permute(3, 2, 1, 0)"
R4E = "x = arange(20).reshape(1, 1, 4, 5).expand(2, 3, 4, 5)"

# ---- reads: keys for a (3, 4) tensor ------------------------------------------------------------
K2 = [
    # ints
    ("int/one", "1"), ("int/neg", "-1"), ("int/two", "1, 2"), ("int/two_neg", "-3, -4"),
    ("int/col", ":, 2"), ("int/col_neg", ":, -4"), ("int/tuple1", "(2,)"),
    # slices (positive steps; clamped bounds; empty results)
    ("slice/start", "1:"), ("slice/stop", ":2"), ("slice/step", "::2"), ("slice/both", "1:3, 1::2"),
    ("slice/neg_start", "-2:"), ("slice/neg_stop", ":-1"), ("slice/past_end", "5:"),
    ("slice/empty", "2:1"), ("slice/clamped", "-10:10"), ("slice/col_step3", ":, ::3"),
    ("slice/all", ":"), ("slice/col_inner", ":, 1:-1"), ("slice/big_step", "::5, ::3"),
    ("slice/int_slice", "1, 1:3"),
    # None and ...
    ("none/lead", "None"), ("none/two", "None, None"), ("none/mid", ":, None"),
    ("none/mid_int", ":, None, 1"), ("none/trail", "..., None"), ("none/around", "None, ..., None, 0"),
    ("ellipsis/alone", "..."), ("ellipsis/int_after", "..., 1"), ("ellipsis/int_before", "1, ..."),
    ("ellipsis/slice", "..., 1:3"), ("ellipsis/empty_middle", "0, ..., 1"),
    # Python bools: a new dim of size 1 (True) or 0 (False)
    ("bool/true", "True"), ("bool/false", "False"), ("bool/true_int", "True, 1"),
    ("bool/int_true", "1, True"), ("bool/none_true", "None, True"),
    # integer tensors
    ("itensor/1d", "tensor([2, 0])"), ("itensor/neg", "tensor([-1, 0, -1])"),
    ("itensor/2d", "tensor([[0, 1], [2, 0]])"), ("itensor/col", ":, tensor([3, 0])"),
    ("itensor/pair", "tensor([0, 2]), tensor([1, 3])"), ("itensor/0d", "tensor(1)"),
    ("itensor/0d_pair", "tensor(1), tensor([0, 2])"), ("itensor/empty", "tensor([], dtype=int64)"),
    ("itensor/then_int", "tensor([2, 0]), 1"), ("itensor/int_then", "1, tensor([2, 0])"),
    ("itensor/0d_0d", "tensor(2), tensor(-1)"),
    # lists, nested lists
    ("list/ints", "[0, 2]"), ("list/neg", "[-1, -3]"), ("list/bools", "[True, False, True]"),
    ("list/pair", "[0, 2], [1, 3]"), ("list/nested_slice", "[[0, 1], [2, 0]], :"),
    ("list/nested_pair", "[[0], [2]], [[1, 3]]"), ("list/col", ":, [3, 1, 3]"),
    ("list/single", "[1]"),
    # torch treats a list holding a sequence as a tuple of indices (NumPy's old rule): x[0, [1, 2]]
    ("list/seq_as_tuple", "[0, [1, 2]]"), ("list/nested_as_tuple", "[[0, 1], [1, 2]]"),
    # bool tensors (masks)
    ("mask/rows", "tensor([True, False, True])"), ("mask/full", "x > 5"),
    ("mask/cols", ":, tensor([True, False, False, True])"), ("mask/0d_true", "tensor(True)"),
    ("mask/0d_false", "tensor(False)"), ("mask/none_set", "x < 0"), ("mask/all_set", "x >= 0"),
    ("mask/2d_literal", "tensor([[True, False, True, False], [False, False, False, False], [True, True, True, True]])"),
    ("mask/rows_int", "tensor([False, True, True]), 2"),
    # broadcasting index tensors
    ("broadcast/col_row", "tensor([[0], [2]]), tensor([1, 3])"),
    ("broadcast/0d_1d", "tensor([0, 2, 1]), tensor(3)"),
    ("broadcast/2d_1d", "tensor([[0, 1], [2, 2]]), tensor([3, 0])"),
    ("broadcast/lists", "[[1], [2]], [0, 1, 3]"),
    # advanced indices with slices, None, ...
    ("mixed/adv_slice", "[0, 2], 1:"), ("mixed/slice_adv", "1:, [0, 3]"),
    ("mixed/none_adv", "None, [0, 2]"), ("mixed/adv_none", "[0, 2], None"),
    ("mixed/ellipsis_adv", "..., [1, 2]"), ("mixed/adv_ellipsis", "[2, 1], ..."),
    ("mixed/sep_by_none", "tensor([0, 2]), None, tensor([1, 3])"),
    ("mixed/sep_by_ellipsis", "tensor([0, 2]), ..., tensor([1, 3])"),
    ("mixed/mask_slice", "tensor([True, False, True]), ::2"),
    ("mixed/bool_adv", "True, [2, 0]"), ("mixed/adv_bool", "[2, 0], True"),
]
for n, k in K2:
    read(n + "_r2", R2, k)

# the same index kinds on other dtypes and on non-contiguous bases
SUBSET_LAYOUT = ["int/one", "int/col", "int/two_neg", "slice/both", "slice/col_step3", "none/mid_int",
                 "ellipsis/int_after", "bool/true_int", "itensor/col", "itensor/pair", "itensor/0d",
                 "list/nested_slice", "mask/cols", "mask/full", "mask/2d_literal",
                 "broadcast/col_row", "mixed/slice_adv", "mixed/sep_by_none", "mixed/adv_slice",
                 "list/nested_as_tuple"]
SUBSET_DTYPE = ["int/one", "slice/both", "itensor/pair", "mask/full", "mixed/slice_adv",
                "broadcast/col_row"]
K2D = dict(K2)
for n in SUBSET_LAYOUT:
    read(n + "_r2t", R2T, K2D[n])
    read(n + "_r2s", R2S, K2D[n])
for n in SUBSET_LAYOUT[::2]:
    read(n + "_r2ft", R2FT, K2D[n])
for n in ["int/one", "int/col", "slice/both", "none/mid", "itensor/2d", "itensor/pair", "mask/full",
          "mixed/slice_adv", "mixed/sep_by_ellipsis", "ellipsis/alone"]:
    read(n + "_r2e", R2E, K2D[n])
for n in ["int/col", "slice/step", "itensor/col", "broadcast/col_row", "mask/rows"]:
    read(n + "_r2ec", R2EC, K2D[n])
for n in SUBSET_DTYPE:
    read(n + "_r2f", R2F, K2D[n])
    read(n + "_r2d", R2D, K2D[n])
    read(n + "_r2i32", R2I32, K2D[n])
read("mask/self_r2b", R2B, "x")
for n in ["int/one", "slice/both", "itensor/pair", "mixed/slice_adv", "broadcast/col_row"]:
    read(n + "_r2b", R2B, K2D[n])

# ---- reads: rank 0 and 1 ----------------------------------------------------------------------------
for n, k in [("none", "None"), ("ellipsis", "..."), ("empty_tuple", "()"), ("true", "True"),
             ("false", "False"), ("mask_true", "tensor(True)"), ("mask_false", "tensor(False)"),
             ("none_none", "None, None"), ("ellipsis_none", "..., None"), ("none_ellipsis", "None, ..."),
             ("true_none", "True, None")]:
    read("rank0/" + n + "_f", R0F, k)
for n, k in [("none", "None"), ("ellipsis", "..."), ("mask_true", "tensor(True)"), ("true", "True")]:
    read("rank0/" + n + "_i", R0I, k)
    read("rank0/" + n + "_b", R0B, k)

K1 = [
    ("int", "3"), ("int_neg", "-6"), ("slice", "1:5:2"), ("slice_empty", "4:2"), ("slice_clamped", "-100:100:4"),
    ("none", "None"), ("none_after", ":, None"), ("ellipsis", "..."), ("none_ellipsis", "None, ..."),
    ("itensor", "tensor([5, 0, 5])"), ("itensor_2d", "tensor([[0, 1], [4, 5]])"), ("itensor_0d", "tensor(-1)"),
    ("itensor_empty", "tensor([], dtype=int64)"), ("list", "[1, 3]"),
    ("list_bools", "[True, False, True, False, False, True]"), ("true", "True"), ("false", "False"),
    ("mask", "tensor([True, False, True, True, False, True])"), ("tuple1", "(4,)"), ("nested", "[[5, 4], [0, 1]], ..."),
]
for n, k in K1:
    read("rank1/" + n, R1, k)
for n in ["int", "slice", "itensor", "mask", "none_after"]:
    k = dict(K1)[n]
    read("rank1/" + n + "_f", R1F, k)
    read("rank1/" + n + "_b", R1B, k)
    read("rank1/" + n + "_i32", R1I32, k)
    read("rank1/" + n + "_d", R1D, k)
read("rank1/mask_self_b", R1B, "x")
read("rank1/mask_cmp_f", R1F, "x > 2.5")

# ---- reads: rank 3 and 4 ----------------------------------------------------------------------------
K3 = [
    ("int", "1"), ("int3", "1, 2, 3"), ("int_neg", "-1, -1"), ("slices", ":, 1:, ::2"),
    ("ellipsis_int", "..., 2"), ("int_ellipsis_int", "0, ..., 1"), ("nones", ":, None, :, None"),
    ("adv_adjacent", ":, [0, 2], [1, 3]"), ("adv_separated", "[0, 1], :, [1, 3]"),
    # an int is not an advanced index in torch: it selects first, so [1, 2] is alone and stays put
    ("int_slice_adv", "0, :, [1, 2]"), ("adv_slice_int", "[1, 0], 1:, 0"),
    ("adv_int_adv", "[1, 0], 2, [0, 3]"),
    ("mask_inner", ":, tensor([[True, False, True, False], [False, True, False, True], [True, True, False, False]])"),
    ("mask_full", "x % 5 == 0"), ("mask_lead", "tensor([[True, False, True], [False, True, False]])"),
    ("mask_lead_adv", "tensor([[True, False, True], [False, True, False]]), tensor([0, 1, 3])"),
    ("broadcast_separated", "tensor([[1, 0]]), :, tensor([[0], [3]])"),
    ("broadcast_adjacent", "0, tensor([[0], [2]]), tensor([1, 3])"),
    ("nested_int", "[[1, 0], [0, 1]], 2"), ("true_adv", "True, [1, 0]"),
    ("none_adv_none", "None, [1, 0], None"), ("ellipsis_adv", "..., [3, 0]"),
    ("itensor_0d_slice", "tensor(1), 1:, tensor([0, 3])"),
]
for n, k in K3:
    read("rank3/" + n, R3, k)
for n in ["int", "slices", "adv_adjacent", "adv_separated", "int_slice_adv", "mask_inner", "mask_lead",
          "broadcast_separated", "ellipsis_adv"]:
    k = dict(K3)[n]
    read("rank3/" + n + "_perm", R3P, k)
    read("rank3/" + n + "_step", R3S, k)
for n in ["int3", "slices", "adv_separated", "mask_full", "none_adv_none"]:
    read("rank3/" + n + "_transposed", R3T, dict(K3)[n])
for n in ["int", "adv_adjacent", "mask_lead", "nones"]:
    read("rank3/" + n + "_expanded", R3E, dict(K3)[n])
read("rank3/float_adv", R3F, "[1], :, [2]")

K4 = [
    ("int2", "1, 2"), ("int_neg4", "-1, -2, -3, -4"), ("ellipsis_step", "..., ::2"),
    ("slices", ":, 1:, :, 1:4:2"), ("ellipsis_mid", "0, ..., 0"), ("nones", "None, 1, ..., None, 2"),
    ("adv_adjacent", ":, [0, 2], [1, 3]"), ("adv_separated", ":, [0, 2], :, [1, 3]"),
    ("adv_outer", "[1, 0], :, :, [4, 0]"), ("mask_dim2", ":, :, tensor([True, False, True, False])"),
    ("broadcast_int", "tensor([[0], [1]]), :, tensor([[1, 2, 3]]), 4"), ("itensor_0d", "tensor(1), tensor(2)"),
    ("ellipsis_adv_slice", "..., [0, 3], 1:3"), ("three_adv", "[0, 1], [2, 0], :, [4, 4]"),
]
for n, k in K4:
    read("rank4/" + n, R4, k)
for n in ["int2", "slices", "adv_adjacent", "adv_separated", "mask_dim2", "broadcast_int"]:
    read("rank4/" + n + "_perm", R4P, dict(K4)[n])
for n in ["ellipsis_mid", "adv_outer", "three_adv"]:
    read("rank4/" + n + "_float", R4F, dict(K4)[n])
for n in ["int2", "adv_separated"]:
    read("rank4/" + n + "_expanded", R4E, dict(K4)[n])

# A mask of two or more dims followed by more indices. A following index tensor is broadcast
# with the mask's nonzero() tensors, as NumPy does. But torch 1.13 moves on by one dim after any
# mask, so a following int, slice or None lands on the mask's second dim: these errors are torch's
# (NumPy would give x[mask][:, 3] and so on), kept as they are, like every other torch result.
M23 = "tensor([[True, False, True], [False, True, False]])"
M34 = "tensor([[True, False, True, False], [False, False, True, True], [True, True, False, False]])"
read("mask_nd/then_itensor_rank3", R3, M23 + ", tensor([0, 1, 3])")
read("mask_nd/then_list_rank4", R4, M23 + ", [1, 2, 0]")
read("mask_nd/after_slice_then_itensor_rank4", R4, ":, " + M34 + ", tensor([4, 0, 1, 2, 3, 4])")
err("mask_nd/then_int_rank3", R3 + "\nprint(x[%s, 3])" % M23)
err("mask_nd/then_slice_rank3", R3 + "\nprint(x[%s, 1:])" % M23)
err("mask_nd/then_int_rank4", R4 + "\nprint(x[:, %s, 0])" % M34)
err("mask_nd/then_none_rank4", R4 + "\nprint(x[%s, None, ::2])" % M23)
err("mask_nd/write_then_int", R3 + "\nx[%s, 0] = -1" % M23)

# ---- views: what a read shares with its base ----------------------------------------------------------
case("view/slice_then_write", R2 + "\nv = x[1:]\nv[0] = 7\nprint(x)")
case("view/int_then_write", R2 + "\nv = x[1]\nv[2] = -1\nprint(x)")
case("view/itensor_0d_is_view", R2 + "\nv = x[tensor(1)]\nv[0] = 99\nprint(x)")
case("view/none_then_write", R2F + "\nv = x[None]\nv[0, 0] = 3\nprint(x)")
case("view/ellipsis_then_write", R2F + "\nv = x[...]\nv[2, 3] = 0.5\nprint(x)")
case("view/step_then_fill", R2 + "\nv = x[::2]\nv[:] = -1\nprint(x)")
case("view/transpose_then_write", R2F + "\nv = x.t()\nv[0, 1] = 50\nprint(x)")
case("view/col_then_index_put", R2 + "\nv = x[:, 1]\nv[tensor([0, 2])] = 0\nprint(x)")
case("view/row_then_mask_write", R2 + "\nv = x[1]\nv[v > 5] = 0\nprint(x)")
case("view/reshape_then_write", R2 + "\nv = x.reshape(4, 3)\nv[1:3, 0] = 0\nprint(x)")
case("view/slice2_then_adv_write", R2F + "\nv = x[1:, ::2]\nv[[0, 1], [1, 0]] = 9\nprint(x)")
case("view/slice_then_index_put_", R2F + "\nv = x[..., 1:3]\nv.index_put_((tensor([0, 1]), tensor([1, 0])), tensor([100., 200.]))\nprint(x)")
case("view/chain_of_views", R3 + "\nv = x[1][:, 1:][::2]\nv[...] = 0\nprint(x)")
case("view/sees_later_write", R2 + "\nv = x[0]\nx[0] = 5\nprint(v)")
case("view/sees_later_adv_write", R2 + "\nv = x[:, 1:3]\nx[[0, 2], [1, 2]] = -7\nprint(v)")
case("copy/adv_read_is_copy", R2 + "\ny = x[tensor([0, 1])]\nx[0] = 99\nprint(y)\nprint(x)")
case("copy/mask_read_is_copy", R2 + "\ny = x[x > 5]\nx[...] = 0\nprint(y)")
case("copy/list_read_is_copy", R2 + "\ny = x[[1]]\ny[0, 0] = 42\nprint(x)")
case("copy/math_before_write", R2 + "\ny = x[1:]\nz = y * 2\nx[1] = 0\nprint(z)\nprint(y)")
case("copy/sum_before_write", R2F + "\ns = x[:, 0].sum()\nx[:, 0] = 100\nprint(s)")
case("copy/gather_before_write", R2 + "\ng = x.gather(1, tensor([[0], [1], [2]]))\nx[...] = -1\nprint(g)")
case("copy/write_then_read_chain", R1 + "\nx[0] = 10\ny = x[:3]\nx[1] = 20\nz = y + 1\nx[2] = 30\nprint(z)\nprint(y)")

# ---- writes ------------------------------------------------------------------------------------------
W_SCALAR = [
    ("int", "1"), ("col", ":, 0"), ("slices", "1:, ::2"), ("ellipsis", "..."), ("none", "None"),
    ("true", "True"), ("list", "[0, 2]"), ("pair", "tensor([2, 0]), tensor([1, 3])"), ("mask", "x > 5"),
    ("mask_cols", ":, tensor([True, False, False, True])"), ("itensor_0d", "tensor(1)"),
    ("broadcast", "[[0], [2]], [1, 3]"), ("adv_slice", "[0, 2], 1:3"), ("false", "False"),
    ("mask_0d", "tensor(True)"), ("two_ints", "-1, -1"), ("empty_slice", "2:1"),
]
for n, k in W_SCALAR:
    write("write_scalar/" + n + "_int_into_f", R2F, k, "9")
for n in ["int", "slices", "pair", "mask", "broadcast"]:
    write("write_scalar/" + n + "_float_into_f", R2F, dict(W_SCALAR)[n], "2.5")
    write("write_scalar/" + n + "_float_into_i", R2, dict(W_SCALAR)[n], "2.7")
    write("write_scalar/" + n + "_into_d", R2D, dict(W_SCALAR)[n], "-0.125")
    write("write_scalar/" + n + "_into_i32", R2I32, dict(W_SCALAR)[n], "-3")
write("write_scalar/bool_into_b", R2B, "0", "True")
write("write_scalar/mask_self_b", R2B, "x", "False")
write("write_scalar/int_into_b", R2B, ":, 1", "1")
write("write_scalar/adv_into_b", R2B, "[1, 2], [0, 3]", "True")
write("write_scalar/bool_into_i", R2, "1:, 1:", "True")
write("write_scalar/rank0_ellipsis", R0F, "...", "3")
write("write_scalar/rank0_empty_tuple", R0I, "()", "4")
write("write_scalar/rank0_none", R0F, "None", "1.5")
write("write_scalar/rank0_true", R0I, "True", "2")
write("write_scalar/rank0_mask", R0F, "tensor(True)", "8")
write("write_scalar/rank0_mask_false", R0F, "tensor(False)", "8")
write("write_scalar/rank1_step", R1, "::2", "0")
write("write_scalar/rank1_neg", R1, "-1", "100")
write("write_scalar/rank1_mask", R1, "x > 2", "-1")
write("write_scalar/rank1_list_bools", R1, "[True, False, True, False, False, True]", "0")
write("write_scalar/rank1_dup_same_value", R1, "tensor([1, 1, 4])", "7")
write("write_scalar/rank3_adv", R3F, ":, [0, 2], 1:", "0")
write("write_scalar/rank3_mask", R3, "x % 5 == 0", "0")
write("write_scalar/rank3_sep", R3, "[0, 1], :, [0, 3]", "-1")
write("write_scalar/rank4_mixed", R4, ":, 1, ..., ::2", "0", show="x[:, 1]")
write("write_scalar/rank4_adv", R4, "tensor([0, 1]), tensor([1, 2]), 0, 0", "-1", show="x[:, :, 0, 0]")
write("write_scalar/rank4_mask", R4F, ":, :, tensor([True, False, False, True])", "-0.5", show="x[1, 2]")

W_TENSOR = [
    ("row", "1", "tensor([1., 2., 3., 4.])"),
    ("col", ":, 1", "tensor([7., 8., 9.])"),
    ("rows_broadcast", "0:2", "tensor([1., 2., 3., 4.])"),
    ("cols_broadcast", ":, 1:3", "tensor([[1.], [2.], [3.]])"),
    ("leading_ones", "0", "ones(1, 1, 4)"),
    ("leading_ones_adv", "tensor([0, 2])", "ones(1, 1, 4) * 3"),
    ("adv_rows", "tensor([0, 2])", "tensor([5., 6., 7., 8.])"),
    ("adv_pair", "tensor([0, 2]), tensor([1, 3])", "tensor([5., 6.])"),
    ("adv_pair_0d_value", "tensor([0, 2]), tensor([1, 3])", "tensor(-2.)"),
    ("mask_exact", "x > 5", "tensor([1., 2., 3., 4., 5., 6.])"),
    ("mask_0d_value", "x > 5", "tensor(0.)"),
    ("adv_slice", "[0, 2], 1:", "tensor([[1., 2., 3.]])"),
    ("slice_adv", "1:, [0, 3]", "zeros(2, 1)"),
    ("ellipsis", "...", "arange(4.)"),
    ("none", "None", "arange(4.)"),
    ("true", "True", "zeros(3, 4)"),
    ("scalar_tensor", "0, 0", "tensor(9.)"),
    ("int_tensor_into_f", "1", "tensor([1, 2, 3, 4])"),
    ("double_into_f", "2", "tensor([0.5, 0.25, 0.125, 1.0], dtype=float64)"),
    ("bool_into_f", ":, 0", "tensor([True, False, True])"),
    ("float_into_i", "0", "tensor([1.5, -2.5, 3.9, 0.1])"),
    ("broadcast_adv", "[[0], [2]], [1, 3]", "tensor([[10., 20.], [30., 40.]])"),
    ("broadcast_adv_value", "[[0], [2]], [1, 3]", "tensor([10., 20.])"),
    ("mask_rows", "tensor([True, False, True])", "tensor([[-1.], [-2.]])"),
    ("mask_cols_ellipsis", "..., tensor([False, True, True, False])", "tensor([3., 4.])"),
    ("from_other_row", "0", "x[1]"),
    ("from_other_col", ":, 0", "x[:, 3]"),
    ("from_self_math", "...", "x * 2"),
    ("same_tensor", "...", "x"),
    ("separated_none", "tensor([0, 2]), None, tensor([1, 3])", "tensor([[1.], [2.]])"),
]
for n, k, v in W_TENSOR:
    write("write_tensor/" + n, R2 if n == "float_into_i" else R2F, k, v)
for n in ["row", "col", "adv_pair", "mask_exact", "slice_adv", "cols_broadcast"]:
    k, v = [(k, v) for (m, k, v) in W_TENSOR if m == n][0]
    case("write_tensor/" + n + "_transposed",
         "b = arange(12.).reshape(4, 3)\nx = b.t()\nx[%s] = %s\nprint(x)\nprint(b)" % (k, v))
write("write_tensor/i32_adv", R2I32, "tensor([0])", "tensor([[1, 2, 3, 4]], dtype=int32)")
write("write_tensor/b_col", R2B, ":, 1", "tensor([True, False, True])")
write("write_tensor/d_slice", R2D, "1:, 2:", "tensor([[1.5, 2.5], [3.5, 4.5]], dtype=float64)")
write("write_tensor/rank1_adv", R1, "tensor([5, 0])", "tensor([10, 20])")
write("write_tensor/rank3_int_slice_adv", R3, "0, :, [1, 2]", "tensor([[1, 2], [3, 4], [5, 6]])")
write("write_tensor/rank3_separated", R3F, "[0, 1], :, [0, 3]", "tensor([[1.], [2.]])")
write("write_tensor/rank3_ellipsis_bcast", R3F, "..., 1", "arange(3.)")
write("write_tensor/rank3_permuted", R3P, "0, 1", "tensor([-1, -2, -3, -4])")
write("write_tensor/rank3_permuted_adv", R3P, ":, :, [0, 3]", "tensor([100, 200])")
write("write_tensor/rank4_swap", R4, "..., tensor([0, 4])", "x[..., tensor([4, 0])]", show="x[1, 2]")
write("write_tensor/rank4_mask2d", R4, "0, tensor([[True, False, False, False], [False, True, False, False], [False, False, True, True]])",
      "tensor([-1, -2, -3, -4, -5])", show="x[0]")

# ---- overlapping self-assignment ----------------------------------------------------------------------
# A write whose value reads the memory it writes reads all of the value first in tdl (NumPy's
# meaning); torch 1.13 raises "unsupported operation: some elements of the input tensor and the
# written-to tensor refer to a single memory location" for these. Reference: the value cloned.
def overlap(name, program, clone_of):
    case(name, program, numpy_ref=program.replace(clone_of, clone_of + ".clone()", 1))


overlap("overlap/shift_right", "t = arange(5)\nt[1:] = t[:-1]\nprint(t)", "t[:-1]")
overlap("overlap/shift_left", "t = arange(5)\nt[:-1] = t[1:]\nprint(t)", "t[1:]")
overlap("overlap/transpose_into_self", "x = arange(9).reshape(3, 3)\nx[...] = x.t()\nprint(x)", "x.t()")
overlap("overlap/rows_shift", R2 + "\nx[1:] = x[:2]\nprint(x)", "x[:2]")
overlap("overlap/view_value_adv_write", R2F + "\nx[tensor([1, 2])] = x[0:2]\nprint(x)", "x[0:2]")
overlap("overlap/view_value_index_put", R2F + "\nx.index_put_((tensor([1, 2]),), x[0:2], accumulate=True)\nprint(x)", "x[0:2]")
overlap("overlap/named_view", R1 + "\nv = x[1:]\nx[:-1] = v\nprint(x)\nprint(v)", "= v")
# torch reads the value of an advanced read before writing (a gather makes a new tensor)
case("overlap/adv_shift", "t = arange(5)\nt[tensor([1, 2, 3])] = t[tensor([0, 1, 2])]\nprint(t)")
case("overlap/adv_reverse", "t = arange(5.)\nt[[0, 1, 2, 3, 4]] = t[[4, 3, 2, 1, 0]]\nprint(t)")
case("overlap/adv_rows", R2 + "\nx[[0, 1]] = x[[1, 2]]\nprint(x)")
case("overlap/shift_right_clone", "t = arange(5)\nt[1:] = t[:-1].clone()\nprint(t)")
case("overlap/disjoint_halves", "t = arange(6)\nt[:3] = t[3:]\nprint(t)")
case("overlap/same_tensor", R2 + "\nx[...] = x\nprint(x)")

# ---- augmented assignment: t[idx] op= v is t[idx] = t[idx] op v, in place ------------------------------
case("augassign/int_add", R2 + "\nx[1] += 5\nprint(x)")
case("augassign/adv_dups_once", R2 + "\nx[tensor([0, 0, 2])] += 1\nprint(x)")
case("augassign/mask_mul", R2F + "\nx[x > 5] *= 2\nprint(x)")
case("augassign/col_sub_col", R2 + "\nx[:, 1] -= x[:, 0]\nprint(x)")
case("augassign/through_view", R2 + "\nv = x[:, ::2]\nv[1:] += 100\nprint(x)")
case("augassign/pair_div", R2F + "\nx[[0, 2], [1, 3]] /= 4\nprint(x)")
case("augassign/rank3_ellipsis", R3 + "\nx[..., 0] -= 1\nprint(x)")
case("augassign/rank0", R0F + "\nx[...] += 1\nprint(x)")

# ---- index_put_ -----------------------------------------------------------------------------------------
case("index_put/accumulate_dups", "x = zeros(5)\nx.index_put_((tensor([0, 1, 1, 3]),), tensor([1., 2., 3., 4.]), accumulate=True)\nprint(x)")
case("index_put/accumulate_2d_scalar", "x = zeros(3, 4)\nx.index_put_((tensor([0, 0, 2]), tensor([1, 1, 3])), tensor(1.), accumulate=True)\nprint(x)")
case("index_put/accumulate_rows", R2F + "\nx.index_put_((tensor([0, 2, 0]),), tensor([1., 2., 3., 4.]), accumulate=True)\nprint(x)")
case("index_put/accumulate_int", R1 + "\nx.index_put_((tensor([5, 5, 5]),), tensor([1, 1, 1]), accumulate=True)\nprint(x)")
case("index_put/accumulate_neg_dups", "x = zeros(5, dtype=float64)\nx.index_put_((tensor([-1, 4, 0]),), tensor([0.5, 0.25, 1.], dtype=float64), accumulate=True)\nprint(x)")
case("index_put/accumulate_mask", R1F + "\nx.index_put_((x > 2,), tensor(10.), accumulate=True)\nprint(x)")
case("index_put/accumulate_3d", R3 + "\nx.index_put_((tensor([1, 1]), tensor([0, 0])), tensor([100, 200, 300, 400]), accumulate=True)\nprint(x)")
case("index_put/accumulate_i32", R2I32 + "\nx.index_put_((tensor([0, 0]), tensor([3, 3])), tensor([5, 6], dtype=int32), accumulate=True)\nprint(x)")
case("index_put/accumulate_transposed", "b = zeros(4, 3)\nx = b.t()\nx.index_put_((tensor([0, 0, 2]), tensor([3, 3, 1])), tensor([1., 2., 4.]), accumulate=True)\nprint(b)")
case("index_put/replace", R2F + "\nx.index_put_((tensor([0, 2]), tensor([3, 1])), tensor([7., 8.]))\nprint(x)")
case("index_put/replace_false_kw", R2F + "\nx.index_put_((tensor([1]),), tensor([1., 2., 3., 4.]), accumulate=False)\nprint(x)")
case("index_put/replace_mask", R2F + "\nx.index_put_((tensor([True, False, True]),), tensor(0.))\nprint(x)")
case("index_put/returns_self", R1 + "\nprint(x.index_put_((tensor([0, 2]),), tensor([-1, -2])))\nprint(x)")
case("index_put/one_index_3d", R3F + "\nx.index_put_((tensor([1]),), tensor([[0.5], [1.5], [2.5]]))\nprint(x)")
case("index_put/bool_values", R2B + "\nx.index_put_((tensor([0, 1]), tensor([0, 1])), tensor([False, True]))\nprint(x)")
case("index_put/function", R2 + "\nprint(index_put(x, (tensor([0, 2]),), tensor(-1)))\nprint(x)")
case("index_put/nonzero_tuple", R2 + "\nprint(x[nonzero(x > 5, as_tuple=True)])")
case("index_put/i32_indices", R2F + "\nx.index_put_((tensor([0, 0], dtype=int32),), tensor([1., 1., 1., 1.]), accumulate=True)\nprint(x)",
     numpy_ref=int32_ref(R2F + "\nx.index_put_((tensor([0, 0], dtype=int32),), tensor([1., 1., 1., 1.]), accumulate=True)\nprint(x)"))

# ---- index_select, gather, scatter_add ------------------------------------------------------------------
case("index_select/method", R2 + "\nprint(x.index_select(0, tensor([2, 0, 2])))")
case("index_select/function", R2 + "\nprint(index_select(x, 1, tensor([3, 1])))")
case("index_select/neg_dim", R2F + "\nprint(x.index_select(-1, tensor([0])))")
case("index_select/transposed", R2T + "\nprint(x.index_select(1, tensor([1, 1, 0])))")
case("index_select/rank1", R1 + "\nprint(x.index_select(0, tensor([5, 4, 0])))")
case("index_select/rank3", R3 + "\nprint(x.index_select(1, tensor([2, 0])))")
case("index_select/empty", R2 + "\nprint(x.index_select(0, tensor([], dtype=int64)))")
case("index_select/index_0d", R2 + "\nprint(x.index_select(0, tensor(1)))")
case("index_select/index_i32", R2 + "\nprint(x.index_select(1, tensor([3, 1], dtype=int32)))")
case("index_select/bool", R2B + "\nprint(index_select(x, 0, tensor([1, 0])))")
case("index_select/expanded", R2E + "\nprint(x.index_select(1, tensor([3, 0])))")
case("index_select/is_copy", R2 + "\ny = x.index_select(0, tensor([0]))\ny[0, 0] = 50\nprint(x)")
case("gather/method", R2 + "\nprint(x.gather(1, tensor([[0, 0], [1, 0], [3, 2]])))")
case("gather/function", R2 + "\nprint(gather(x, 0, tensor([[2, 1, 0, 0]])))")
case("gather/neg_dim", R2F + "\nprint(x.gather(-1, tensor([[3], [2], [1]])))")
case("gather/smaller_index", R2 + "\nprint(x.gather(0, tensor([[1, 2], [0, 0]])))")
case("gather/rank3", R3 + "\nprint(x.gather(1, tensor([[[2, 1, 0, 0]], [[0, 0, 1, 2]]])))")
case("gather/transposed", R2T + "\nprint(x.gather(1, tensor([[1], [2], [3]])))")
case("gather/rank1", R1 + "\nprint(x.gather(0, tensor([5, 5, 0])))")
case("gather/then_math", R2 + "\nprint(x.gather(1, tensor([[0], [1], [2]])) * 2 + 1)")
case("scatter_add/method", "x = zeros(3, 4)\nprint(x.scatter_add(0, tensor([[0, 1, 2, 0], [0, 0, 0, 0]]), ones(2, 4)))\nprint(x)")
case("scatter_add/function", "x = zeros(3, 4)\nprint(scatter_add(x, 1, tensor([[0, 0], [3, 3], [1, 2]]), tensor([[1., 2.], [3., 4.], [5., 6.]])))")
case("scatter_add/inplace", "x = ones(3, 4)\nx.scatter_add_(0, tensor([[2, 2, 2, 2]]), tensor([[1., 2., 3., 4.]]))\nprint(x)")
case("scatter_add/inplace_returns", R1 + "\nprint(x.scatter_add_(0, tensor([0, 0, 5]), tensor([10, 20, 30])))\nprint(x)")
case("scatter_add/src_larger", "x = zeros(3, 3, dtype=int64)\nprint(x.scatter_add(1, tensor([[2, 2], [0, 1]]), arange(12).reshape(3, 4)))")
case("scatter_add/rank3", "x = zeros(2, 2, 3)\nprint(x.scatter_add(2, tensor([[[0, 0, 2]], [[1, 1, 1]]]), ones(2, 1, 3)))")
case("scatter_add/neg_dim", "x = zeros(2, 3, dtype=float64)\nprint(x.scatter_add(-1, tensor([[2, 2, 2]]), tensor([[0.5, 0.25, 0.125]], dtype=float64)))")
case("scatter_add/transposed", "b = zeros(4, 3)\nx = b.t()\nx.scatter_add_(1, tensor([[0, 3], [1, 1], [2, 2]]), ones(3, 2))\nprint(b)")

# ---- nonzero: the coordinates masks stand for, in C order of the logical tensor ----------------------------
NZ = "x = arange(24.).reshape(2, 3, 4) - 11"
case("nonzero/rank3", NZ + "\nprint(nonzero(x > 0))")
case("nonzero/transposed", NZ + "\nprint(nonzero(x.transpose(0, 2) > 3))")
case("nonzero/stepped", NZ + "\nprint(nonzero(x[:, ::2] < -5))")
case("nonzero/permuted_float", NZ + "\nprint(nonzero(x.permute(2, 0, 1).clamp(min=0)))")
case("nonzero/as_tuple", NZ + "\nprint(x.nonzero(as_tuple=True))")
case("nonzero/rank0", "print(nonzero(tensor(0.)), nonzero(tensor(-0.0)), nonzero(tensor(2)), tensor(3).nonzero(as_tuple=True))")
case("nonzero/int32_bool", "print(nonzero(tensor([0, 5, 0, -1], dtype=int32)), nonzero(tensor([[True, False], [False, True]])))")
case("nonzero/empty", "print(nonzero(zeros(0, 3)), nonzero(zeros(2, 3)))")

# ---- indexing inside expressions -----------------------------------------------------------------------
case("math/adv_affine", R2 + "\ni = tensor([2, 0])\nprint(x[i] * 2 + 1)")
case("math/rows_sum", R2 + "\nprint((x[[0, 2]] + x[1]).sum())")
case("math/mask_sum", R2F + "\nprint(x[x > 5].sum())")
case("math/cols_mean", R2 + "\nprint(x[:, tensor([0, 3])].float().mean(0))")
case("math/diff", R2 + "\nprint(x[1:] - x[:-1])")
case("math/matmul", R2F + "\ny = x[tensor([2, 0])]\nprint(y @ y.t())")
case("math/mask_where", R2F + "\nm = x > 4\nprint(where(m, x[m].sum(), x))")
case("math/index_of_expr", R2 + "\nprint((x * 10)[1:, tensor([0, 2])])")
case("math/gather_chain", R3 + "\nprint(x[1][tensor([0, 2])][:, 1:3])")
case("math/write_expr_value", R2F + "\nx[tensor([0, 1])] = x[tensor([1, 2])] * 0.5 + 0.25\nprint(x)")
case("math/item", R2 + "\nprint(x[2, 3].item() + 1)")
case("math/shape_of_index", R4 + "\nprint(x[None, ..., [0, 1], :, None].shape)")

# ---- negative slice steps: NumPy's answer (tdl's extension; torch refuses them) -----------------------
neg("negstep/rank1_reverse", R1, "::-1")
neg("negstep/rank1_range", R1, "4:1:-1")
neg("negstep/rank1_from_end_by2", R1, "-1::-2")
neg("negstep/rank1_empty", R1, "1:4:-1")
neg("negstep/rank1_clamped", R1, "100:-100:-3")
neg("negstep/rank2_both", R2, "::-1, ::-1")
neg("negstep/rank2_int_row", R2, "1, ::-2")
neg("negstep/rank2_adv", R2, "::-1, [0, 2]")
neg("negstep/rank2_none_ellipsis", R2, "None, ::-1, ...")
neg("negstep/rank2_transposed", R2T, "::-1")
neg("negstep/rank2_stepped", R2S, ":, ::-3")
neg("negstep/rank3", R3, ":, ::-1, 1:")
neg("negstep/rank3_mask", R3, "::-1, tensor([True, False, True])", "::-1, [True, False, True]")
neg("negstep/rank4", R4, "..., -2::-2")
neg("negstep/i32", R1I32, "::-3")
neg("negstep/bool", R1B, "-2::-1")
case("negstep/write_scalar", R2 + "\nx[:, ::-2] = 0\nprint(x)",
     numpy_ref="import numpy as np\n" + R2 + "\na = x.numpy()\na[:, ::-2] = 0\nprint(x)")
case("negstep/write_tensor", R1 + "\nx[::-1] = arange(6) * 10\nprint(x)",
     numpy_ref="import numpy as np\n" + R1 + "\na = x.numpy()\na[::-1] = (arange(6) * 10).numpy()\nprint(x)")
case("negstep/view_write", R1F + "\nv = x[::-1]\nv[0] = 100\nprint(x)",
     numpy_ref="import numpy as np\n" + R1F + "\nv = x.numpy()[::-1]\nv[0] = 100\nprint(x)")

# ---- int32 index tensors: accepted, as int64 ---------------------------------------------------------------
for n, k in [("rows", "tensor([2, 0], dtype=int32)"), ("cols_2d", ":, tensor([[0, 3]], dtype=int32)"),
             ("pair", "tensor([0, 2], dtype=int32), tensor([1, 1], dtype=int32)"),
             ("mixed_i64", "tensor([0, 2], dtype=int32), tensor([1, 1])")]:
    p = "%s\nprint(x[%s])" % (R2, k)
    case("int32_index/" + n, p, numpy_ref=int32_ref(p))
case("int32_index/0d", R2 + "\nprint(x[tensor(1, dtype=int32)])")
p = R2F + "\nx[tensor([0, 2], dtype=int32), tensor([1, 1], dtype=int32)] = 5\nprint(x)"
case("int32_index/write", p, numpy_ref=int32_ref(p))

# ---- errors ------------------------------------------------------------------------------------------------
err("error/int_oob", R2 + "\nx[3]")
err("error/int_oob_neg", R2 + "\nx[-4]")
err("error/int_oob_dim1", R2 + "\nx[1, 4]")
err("error/int_oob_dim2", R3 + "\nprint(x[0, 0, 5])")
err("error/int_oob_rank1", R1 + "\ny = x[6]")
err("error/int_oob_write", R2F + "\nx[3] = 1")
err("error/int_oob_transposed", R2T + "\nx[0, -5]")
err("error/itensor_oob", R2 + "\nx[tensor([0, 3])]")
err("error/itensor_oob_neg", R2 + "\nx[tensor([-4])]")
# torch names the position among the index tensors, not the tensor's dimension
err("error/itensor_oob_after_slice", R2 + "\nx[:, tensor([4])]")
err("error/itensor_oob_neg_after_slice", R2 + "\nx[1:, tensor([-5])]")
err("error/itensor_oob_second", R3 + "\nx[tensor([0]), :, tensor([4])]")
# The dimension named counts a mask's coordinates among the advanced indices.
err("error/itensor_oob_after_mask", R3 + "\nx[tensor([True, False]), :, tensor([7])]")
err("error/itensor_oob_broadcast_order", R2 + "\nx[tensor([[0], [9]]), tensor([9, 0])]")
err("error/list_oob", R2 + "\nx[[0, 5]]")
err("error/itensor_oob_write", R2F + "\nx[tensor([5])] = 1")
err("error/index_put_oob", R2F + "\nx.index_put_((tensor([0]), tensor([9])), tensor(1.), accumulate=True)")
err("error/too_many", R2 + "\nx[0, 0, 0]")
err("error/too_many_ellipsis", R2 + "\nx[..., 0, 0, 0]")
err("error/too_many_none", R2 + "\nx[None, 0, 0, 0]")
err("error/too_many_mask", R2 + "\nx[x > 5, 0]")
err("error/too_many_index_put", R2F + "\nx.index_put_((tensor([0]), tensor([0]), tensor([0])), tensor(1.))")
err("error/mask_shape", R2 + "\nx[tensor([True, False])]")
err("error/mask_shape_2d", R2 + "\nx[tensor([[True, False], [False, True]])]")
err("error/mask_shape_dim1", R2 + "\nx[:, tensor([True, False, True])]")
err("error/mask_list_shape", R2 + "\nx[[True, False, True, True]]")
err("error/mask_shape_write", R2F + "\nx[tensor([True, False])] = 0")
err("error/float_index", R2 + "\nx[1.5]")
err("error/float_index_in_tuple", R2 + "\nx[0, 1.5]")
err("error/float_tensor_index", R2 + "\nx[tensor([1.])]")
err("error/float_tensor_index_write", R2F + "\nx[tensor([[0.]])] = 1")
err("error/no_broadcast", R2 + "\nx[tensor([0, 1]), tensor([0, 1, 2])]")
err("error/no_broadcast_lists", R2 + "\nx[[0, 1], [0, 1, 2]]")
err("error/no_broadcast_false", R2 + "\nx[[0, 2], False]")
err("error/value_no_broadcast", "x = zeros(3, 4)\nx[0:2] = tensor([1., 2, 3])")
err("error/value_no_broadcast_adv", "x = zeros(3, 4)\nx[tensor([0])] = ones(2, 2, 4)")
err("error/value_no_broadcast_adv2", "x = zeros(3, 4)\nx[tensor([0, 1])] = tensor([1., 2.])")
err("error/value_no_broadcast_mask", R2F + "\nx[x > 5] = tensor([1., 2.])")
err("error/value_too_many_dims", "x = zeros(3, 4)\nx[0] = ones(2, 4)")
err("error/value_too_many_dims_bool", "x = zeros(3, 4, dtype=bool)\nx[0] = ones(2, 4, dtype=bool)")
err("error/value_no_broadcast_slice2", "x = zeros(3, 4)\nx[0:2] = ones(3, 1)")
err("error/index_put_value_shape", R2F + "\nx.index_put_((tensor([0, 0]),), ones(3, 4), accumulate=True)")
err("error/put_dtype", R2F + "\nx[tensor([0])] = tensor([1, 2, 3, 4])")
err("error/put_dtype_double", R2F + "\nx[tensor([0, 1])] = tensor([1, 2, 3, 4.], dtype=float64)")
err("error/index_put_dtype", R2F + "\nx.index_put_((tensor([0]),), tensor(1), accumulate=True)")
case("write_tensor/mask_int_0d_value", R2F + "\nx[x > 5] = tensor(1)\nprint(x)")
err("error/step_zero", R2 + "\nx[::0]")
err("error/step_zero_dim1", R2 + "\nx[1, 0:2:0]")
err("error/step_zero_write", R2 + "\nx[::0] = 1")
err("error/rank0_int", R0F + "\nx[0]")
err("error/rank0_int_write", R0I + "\nx[0] = 1")
err("error/rank0_itensor", R0F + "\nx[tensor([0])]")
err("error/rank0_itensor_0d", R0F + "\nx[tensor(0)]")
err("error/rank0_slice", R0I + "\nx[0:1]")
err("error/index_select_oob", R2 + "\nx.index_select(0, tensor([5]))",
    tdl_msg=select_oob("index out of range in self", 5, 0, 3))
err("error/index_select_oob_neg", R2 + "\nindex_select(x, 0, tensor([-1]))",
    tdl_msg=select_oob("index out of range in self", -1, 0, 3))
err("error/index_select_oob_dim2", R3 + "\nx.index_select(2, tensor([1, 4]))",
    tdl_msg=select_oob("index out of range in self", 4, 2, 4))
err("error/index_select_oob_transposed", R2T + "\nx.index_select(0, tensor([3]))",
    tdl_msg=select_oob("index out of range in self", 3, 0, 3))
err("error/index_select_float", R2 + "\nx.index_select(0, tensor([0.]))")
err("error/index_select_2d", R2 + "\nx.index_select(0, tensor([[0]]))")
err("error/gather_oob", R2F + "\nx.gather(1, tensor([[5]]))")
err("error/gather_oob_neg", R2F + "\nx.gather(1, tensor([[-1]]))")
err("error/gather_float", R2F + "\nx.gather(1, tensor([[0.]]))")
err("error/gather_dim", R2F + "\nx.gather(2, tensor([[0]]))")
err("error/scatter_add_oob", "x = zeros(3, 4)\nx.scatter_add(0, tensor([[5]]), ones(1, 1))")
err("error/scatter_add_inplace_oob", "x = zeros(3, 4)\nx.scatter_add_(1, tensor([[4]]), ones(1, 1))")
err("error/scatter_add_dtype", "x = zeros(3, 4)\nx.scatter_add(0, tensor([[0]]), ones(1, 1, dtype=float64))")
err("error/str_value", R2F + "\nx[0] = 'a'")


# ---- chains: reading the result of an advanced read ---------------------------------------------------------
# x[i][...] where x[i] is a lazy gather: a read with an advanced part composes with it (one gather
# of x, nothing stored in between); a basic one makes a view of x[i], which is realised for it. The
# values, the errors (the second index is checked against x[i]'s shape, naming its position among
# the second index's tensors) and what shares memory are PyTorch's either way.
CI = "\ni = tensor([2, 0, -1, 2])"      # rows of a (3, 4) base: x[i] is (4, 4)
CHAIN = [
    ("itensor", "tensor([1, -1, 0])"), ("itensor_2d_neg", "tensor([[-4, 3], [0, -1]])"),
    ("cols", ":, tensor([3, -4, 1])"), ("pair", "tensor([0, 3]), tensor([-1, 2])"),
    ("itensor_int", "tensor([3, 1]), 2"), ("int_itensor", "-1, tensor([0, 3])"),
    ("step_itensor", "::2, tensor([1, 0])"), ("itensor_step", "tensor([1, 3]), 1::2"),
    ("neg_slice_itensor", "-3:-1, tensor([2])"), ("clamped_slice_itensor", "-10:10:3, tensor([[0], [3]])"),
    ("none_ellipsis", "None, tensor([1, 2]), ..., None"), ("ellipsis_itensor", "..., tensor([0, 0, 3])"),
    ("mask_rows", "tensor([True, False, True, True])"), ("mask_cols", ":, tensor([False, True, True, False])"),
    ("mask_2d", "tensor([[True, False, False, True]] * 2 + [[False] * 4] * 2)"),
    ("mask_then_itensor", "tensor([False, True, True, False]), tensor([3, 0])"),
    ("bool_true", "True, tensor([1])"), ("bool_false", "False"), ("mask_0d", "tensor(True)"),
    ("empty", "tensor([], dtype=int64)"), ("list", "[3, 0]"), ("list_pair", "[[1], [2]], [0, 3]"),
]
for base_name, base in [("r2", R2), ("r2t", R2T), ("r2s", R2S), ("r2e", R2E)]:
    for n, k in CHAIN:
        case("chain/%s_%s" % (n, base_name), "%s%s\nprint(x[i][%s])" % (base, CI, k))
case("chain/self_mask", R2F + CI + "\nprint(x[i][x[i] > 4])")
case("chain/three", R2 + CI + "\nprint(x[i][tensor([3, 1, 0])][tensor([-1, 0]), tensor([2, 3])])")
case("chain/four", R2 + CI + "\nprint(x[i][:, tensor([3, 2, 1, 0])][tensor([1, 0])][:, tensor([-1, -1])])")
case("chain/then_math", R2F + CI + "\nprint(x[i][tensor([1, 2])] * 2 + 1)")
case("chain/then_sum", R2F + CI + "\nprint(x[i][:, tensor([0, 2])].sum(1))")
case("chain/index_is_gather", R2 + CI + "\nprint(x[i][i[tensor([1, 3])] + 1])")
case("chain/self_index", "x = tensor([2, 0, 1, 1])\nprint(x[x][x[x]])")
case("chain/view_between", R2 + CI + "\nprint(x[i][1:][tensor([0, -1])])")
case("chain/rank3_sep_by_slice", R3 + "\nprint(x[tensor([1, 0, -1])][tensor([0, 2]), 1:, tensor([3])])")
case("chain/rank3_middle", R3 + "\nprint(x[:, tensor([2, 0])][tensor([1]), :, tensor([3, 0])])")
case("chain/rank3_permuted", R3P + "\nprint(x[tensor([1, 0, 1])][..., tensor([2, 1]), 1:][tensor([2]), 0])")
case("chain/rank4", R4 + "\nprint(x[tensor([1]), :, tensor([3, 0])][:, tensor([2, 0]), None, ::2])")
case("chain/of_index_select", R2 + "\nprint(x.index_select(1, tensor([3, 0, 2]))[tensor([-1, 0]), 1:])")
# a gather with an index smaller than x: x.gather(...) is (2, 2), its row -1 is row 1
case("chain/of_gather", R2 + "\nprint(x.gather(1, tensor([[3, 0], [1, 1]]))[tensor([-1]), tensor([[0], [1]])])")
case("chain/of_literal", "x = tensor([[1., 2.], [3., 4.], [5., 6.]])\nprint(x[tensor([2, 0])][tensor([-1]), -1])")
# index_select and gather of x[i] compose the same way
case("chain/index_select_of", R2 + CI + "\nprint(x[i].index_select(1, tensor([3, 0, -0])), x[i].index_select(0, tensor([3, 3])))")
case("chain/index_select_of_t", R2T + CI + "\nprint(index_select(x[i], 1, tensor([2, 1])))")
case("chain/gather_of", R2 + CI + "\nprint(x[i].gather(1, tensor([[0], [3], [1], [2]])), x[i].gather(0, tensor([[3, 0, 0, 1]])))")
case("chain/gather_of_self", "x = tensor([2, 0, 1, 1])\nprint(x[x].gather(0, x[x]), x[x].index_select(0, x))")
case("chain/gather_then_index", R2F + CI + "\nprint(x[i].gather(1, tensor([[0, 1], [3, 2]]))[tensor([-1]), tensor([1, 0])] * 10)")
err("chain_error/index_select_oob", R2 + CI + "\nx[i].index_select(0, tensor([4]))",
    tdl_msg=select_oob("index out of range in self", 4, 0, 4))
err("chain_error/gather_oob", R2 + CI + "\nx[i].gather(0, tensor([[4]]))")
err("chain_error/gather_oob_neg", R2 + CI + "\nx[i].gather(1, tensor([[-1]]))")
# what shares memory: a view of x[i] writes through to it; advanced reads are copies
case("chain_view/int_then_write", R2 + CI + "\nt = x[i]\nt[0][1] = 100\nprint(t)\nprint(x)")
case("chain_view/slice_then_write", R2 + CI + "\nt = x[i]\nv = t[:, 1:3]\nv[0] = -1\nprint(t)")
case("chain_view/sees_later_write", R2 + CI + "\nt = x[i]\nv = t[1]\nt[1, 0] = 5\nprint(v)")
case("chain_view/strides", R2 + CI + "\nt = x[i]\nv = t[:, 1:3]\nprint(v.stride(), v.is_contiguous(), t[2].stride())")
case("chain_copy/read_is_copy", R2 + CI + "\nt = x[i]\ny = t[tensor([0, 1])]\nt[0] = 0\ny[1] = 7\nprint(y)\nprint(t)\nprint(x)")
case("chain_copy/base_written_after", R2 + CI + "\ny = x[i][tensor([1, 0])]\nx[...] = 0\nprint(y)")
case("chain_copy/indices_written_after", R2 + CI + "\nj = tensor([1, 0])\ny = x[i][j, ::3]\nj[0] = 3\ni[0] = 1\nprint(y)")
case("chain_copy/first_realised_later", R2 + CI + "\nt = x[i]\ny = t[:, tensor([0])]\nprint(t.sum())\nt[...] = 1\nprint(y, t)")
case("chain_copy/written_into", R2F + CI + "\ny = x[i][tensor([1, 0])]\ny[0, tensor([0, 3])] = -1.\nprint(y)\nprint(x)")
# errors: the second index is checked against x[i]
err("chain_error/itensor_oob", R2 + CI + "\nx[i][tensor([4])]")
err("chain_error/itensor_oob_neg", R2 + CI + "\nx[i][tensor([-5])]")
err("chain_error/second_itensor_oob", R2 + CI + "\nx[i][tensor([0]), tensor([4])]")
err("chain_error/after_slice", R2 + CI + "\nx[i][:, tensor([-5])]")
err("chain_error/after_mask", R2 + CI + "\nx[i][tensor([True, False, True, False]), tensor([9])]")
err("chain_error/int_oob", R2 + CI + "\nx[i][4, tensor([0])]")
err("chain_error/third_oob", R2 + CI + "\nx[i][tensor([1, 2])][tensor([2])]")
err("chain_error/mask_shape", R2 + CI + "\nx[i][tensor([True, False, True])]")
err("chain_error/too_many", R2 + CI + "\nx[i][0, 0, tensor([0])]")
err("chain_error/no_broadcast", R2 + CI + "\nx[i][tensor([0, 1]), tensor([0, 1, 2])]")
err("chain_error/float_index", R2 + CI + "\nx[i][tensor([1.])]")
err("chain_error/first_oob", R2 + "\nx[tensor([3])][tensor([0])]")

# ---- running under torch --------------------------------------------------------------------------------

def run(program):
    """('OK', printed) or ('ERR', kind, message) of the program under PyTorch, printing as tdl does."""
    ns = torch_shim.namespace("<case>", [])
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(program, "<case>", "exec"), ns)
    except Exception as e:  # noqa: BLE001 - every error of a case is a result
        return ("ERR", type(e).__name__, str(e))
    return ("OK", buf.getvalue())


def encode(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def expected(name, program, numpy_ref, tdl_msg, error):
    assert "\t" not in program and "\\" not in program, name
    r = run(program)
    if numpy_ref is not None:
        ref = run(numpy_ref)
        assert ref[0] == "OK", (name, ref)
        if r[0] == "OK":    # torch runs it too: then both must agree
            assert r == ref, (name, r, ref)
        r = ref
    assert (r[0] == "ERR") == error, (name, r)
    if r[0] == "OK":
        assert tdl_msg is None, name
        assert r[1], name + ": prints nothing"
        return "OK " + r[1]
    kind, msg = r[1], r[2]
    assert kind in KINDS, (name, kind, msg)
    # The failing statement is the last line: everything before it runs.
    before = program.rsplit("\n", 1)[0] if "\n" in program else ""
    assert run(before)[0] == "OK", name + ": fails before its last line"
    if tdl_msg is not None:
        assert msg == tdl_msg[0], (name, "torch's message changed", msg)
        msg = tdl_msg[1]
    elif msg in MESSAGES:
        msg = MESSAGES[msg]
    return "ERR %s %s" % (kind, msg)


def main():
    torch.set_printoptions(profile="default")
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    lines = [
        "# generated by tests/golden/gen_indexing.py from PyTorch %s; do not edit" % torch.__version__,
        "# name<TAB>program<TAB>expected: 'OK output' or 'ERR Kind message'; \\n \\t \\\\ escaped",
    ]
    counts = {}
    for name, program, numpy_ref, tdl_msg, error in cases:
        exp = expected(name, program, numpy_ref, tdl_msg, error)
        lines.append("%s\t%s\t%s" % (name, encode(program), encode(exp)))
        cat = name.split("/")[0]
        counts[cat] = counts.get(cat, 0) + 1
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    for cat, n in counts.items():
        print("%-14s %d" % (cat, n))
    print("%d cases -> %s" % (len(cases), os.path.relpath(OUT)))


if __name__ == "__main__":
    main()
