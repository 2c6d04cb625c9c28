#!/usr/bin/python3
"""gen_dims.py: writes tests/golden/dims/cases.txt, the conformance cases of first-class dimensions
(tests/test_dims.c) against functorch.dim itself: dims and their sizes, indexing with dims mixed
with ints, slices, None and ..., dim packs, diagonals, gathers through int tensors with dims,
pointwise ops that broadcast by dim identity, dims used as values, reductions, contractions,
order/expand/index/stack, printing, and the errors, all with the results functorch.dim gives.

Run from the repository root with Debian's python3 (torch 1.13 with functorch.dim installed):
    /usr/bin/python3 tests/golden/gen_dims.py
The output is committed; the C test suite does not need torch.

Each case is a small program in the Python subset tdl shares with Python, run here under
functorch.dim with torch's names visible without `torch.` and tdl's print (tests/torch_shim.py:
its dims() names dims after the assignment's targets as tdl does, `i, j = dims(2)`; its print
writes a tensor with dims as functorch's repr does, "with dims=(i, 0) sizes=(3, 4)", and a dim by
its name). One statement per line. Each case runs in a forked child of this process, so that no
case sees another's dims and a case on which functorch crashes or hangs is reported instead of
stopping the generator. One case per line of the output, three tab-separated fields:
    name  program  expected
name      category/what, unique; the category is the part before the '/'.
program   the source, newlines written as the two characters \\n (a program holds no tab and no
          backslash; the generator checks).
expected  "OK " + everything the program prints, or "ERR Kind words" when it raises.
In both text fields a backslash is written \\\\, a tab \\t and a newline \\n.

Errors. tdl words the errors of dims its own way (it says where each size came from), so an error
case does not hold functorch's message. Kind is exactly the class name of the exception functorch
raises (DimensionBindError, ValueError, IndexError, TypeError, RuntimeError), which is also tdl's
error kind name. words is a comma-separated list (possibly empty: "ERR ValueError ") of words that
tdl's message must contain, declared per case in this file (err(..., must_name=("row",))). The
rule for choosing them, which the generator enforces: each word must appear in functorch's own
message for that case, OR be the name of a dim the program makes (an assignment target of dims()).
So a word is either something both implementations say or a dim the message must name. Words
hold no comma. The failing statement is the program's last line: the generator checks that the
lines before it run cleanly, so what an error case prints before failing is not compared.

Programs use only exact inputs (arange, tensor, zeros, ones and integer-valued floats: no random
numbers), so the values print identically in tdl.

Left out, because functorch.dim 1.13 itself crashes, hangs or gives an internal result on them
(tdl need not copy that):
  - a pointwise op whose left operand has first-class dims and fewer positional dims than a
    right operand that has some (x[i] + x for a (3, 4) x): functorch aborts the process
    (INTERNAL ASSERT "last == 0 || last + 1 == l.position()" in from_positional); the mirrored
    x + x[i] is kept;
  - stack() of tensors that have no positional dims (stack([a[i], b[i]], n, 0)): functorch loops
    forever; stack of a tensor with dims and one without aborts the process like the above;
  - stack(..., n, dim) with dim equal to the number of positional dims (stacking after the last
    one): functorch places the new dim first, as for dim=0, unlike torch.stack;
  - t.index(d, i) with a positional d out of range, t.index(j, 0) with a dim j the tensor lacks
    and t.order(1) with an int: functorch returns a result instead of an error;
  - d.ndim of a dim d: functorch says 1 (the C Dim's own property), though a dim as a value has
    no positional dim; d.dims is kept;
  - t.sum((i, i)): torch's "dim 0 appears multiple times" names an internal dim;
  - a reduction by int over a positional dim other than the first, on a tensor with first-class
    dims and two or more positional dims (x[:, i].sum(1), x[..., i].amax(1), x[i].sum(-1) for a
    (2, 3, 4) x): functorch aborts the process (INTERNAL ASSERT "last == 0 || last == -1" in
    from_positional); reductions over positional dim 0 are kept;
  - iterating over a tensor with dims (for r in x[i]): functorch yields its internal
    BatchedTensor objects; len(x[i]) is kept;
  - a tuple of dims given to max, min, argmax, argmin, all, any or softmax: torch 1.13's argument
    parser refuses the tuple (TypeError), which says nothing about dims (sum, mean, prod, amax,
    amin and logsumexp take one and are kept);
  - d.size = -1: functorch accepts it.
"""
import ast
import contextlib
import io
import os
import select
import signal
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))   # tests/, for torch_shim
import torch_shim  # noqa: E402

OUT = os.path.join(HERE, "dims", "cases.txt")
KINDS = ("DimensionBindError", "ValueError", "IndexError", "TypeError", "RuntimeError")
TIMEOUT_S = 60

cases = []
names = set()


def case(name, program):
    """A case that runs and prints."""
    _add(name, program, None)


def err(name, program, must_name=()):
    """A case whose last line raises; must_name: the words tdl's message must contain (see the
    module's docstring for the rule)."""
    assert isinstance(must_name, tuple), name
    _add(name, program, must_name)


def _add(name, program, words):
    assert name not in names, name
    assert "/" in name and " " not in name and "\t" not in name, name
    names.add(name)
    cases.append((name, program.strip("\n"), words))


# ---- bases ------------------------------------------------------------------------------------------
X34 = "x = arange(12.).reshape(3, 4)"
X234 = "x = arange(24.).reshape(2, 3, 4)"
AB = "A = arange(6.).reshape(2, 3)\nB = arange(12.).reshape(3, 4)"

# ---- dims and their sizes ---------------------------------------------------------------------------
case("bind/size_then_read", "d = dims()\nprint(d.is_bound)\nd.size = 5\nprint(d.size, d.is_bound)")
case("bind/sizes_kw", "a, b = dims(sizes=[3, None])\nprint(a.size, a.is_bound, b.is_bound)")
case("bind/sizes_kw_all", "a, b = dims(sizes=[2, 4])\nprint(a.size + b.size)")
case("bind/inferred_by_index", "i, j = dims(2)\n" + X34 + "\nprint(i.is_bound, j.is_bound)\nt = x[i, j]\nprint(i.size, j.size, i.is_bound)")
case("bind/inferred_then_used", "i, j = dims(2)\n" + X34 + "\nt = x[i]\nprint(i.size)\nprint(arange(3.)[i])")
case("bind/same_size_again", "i = dims()\ni.size = 3\ni.size = 3\nprint(i.size)")
case("bind/size_then_index", "i = dims()\ni.size = 3\n" + X34 + "\nprint(x[i])")
case("bind/sizes_kw_then_index", "a, b = dims(sizes=[3, None])\n" + X34 + "\nprint(x[a, b])\nprint(b.size)")
case("bind/one_dim_two_tensors", "i = dims()\nprint(arange(3.)[i] + (arange(3.) * 10)[i])")
case("bind/index_binds_for_later_value", "i = dims()\ny = arange(5.)[i]\nprint(i * 2)")
case("bind/size_is_int", "d = dims()\nd.size = 4\nprint(d.size * 2, d.size - 1)\nprint(zeros(d.size))")

# ---- printing ---------------------------------------------------------------------------------------
case("print/dim", "i, j = dims(2)\nprint(i)\nprint(j, i)")
case("print/dims_in_containers", "i, j, k = dims(3)\nprint((i, j))\nprint([k, i])\nprint((k,))")
case("print/single_dim_name", "batch = dims()\nprint(batch)")
case("print/tensor_with_dims", "i, j = dims(2)\n" + X34 + "\nt = x[i, j]\nprint(t)")
case("print/int_tensor", "i = dims()\nx = arange(12).reshape(3, 4)\nprint(x[i])")
case("print/int32_suffix", "i = dims()\nx = arange(6, dtype=int32).reshape(2, 3)\nprint(x[i])")
case("print/float64_suffix", "i = dims()\nx = arange(6, dtype=float64).reshape(2, 3) / 8\nprint(x[i])")
case("print/bool_tensor", "i = dims()\n" + X34 + "\nprint(x[i] > 5)")
case("print/one_dim_only", "i = dims()\nprint(arange(4.)[i])")
case("print/meta", "i, j = dims(2)\n" + X234 + "\nt = x[i, :, j]\nprint(t.dims)\nprint(t.ndim, t.shape)")
case("print/meta_no_positional", "i, j = dims(2)\n" + X34 + "\nt = x[i, j]\nprint(t.dims, t.ndim, t.shape)")
case("print/meta_one_dim", "i = dims()\n" + X34 + "\nt = x[i]\nprint(t.dims, t.ndim, t.shape)")
case("print/with_text", "i = dims()\nt = arange(3.)[i]\nprint('t is', t)")
case("print/no_dims_left_is_plain", "i, j = dims(2)\n" + X34 + "\nprint(x[i, j].order(i, j))")
case("print/sci_notation", "i = dims()\n" + X34 + "\nprint(exp(x[i]))")
case("print/len", "i, j = dims(2)\n" + X34 + "\nprint(len(x[i]), len(x[:, j]), len(x[i, 1:]))")

# ---- indexing ---------------------------------------------------------------------------------------
case("index/all_dims", "i, k = dims(2)\n" + X34 + "\nprint(x[i, k])")
case("index/transposed_dims", "i, j = dims(2)\n" + X34 + "\nprint(x[j, i])")
case("index/leading_dim", "i = dims()\n" + X34 + "\nprint(x[i])")
case("index/dim_slice", "i = dims()\n" + X34 + "\nprint(x[i, 1:3])")
case("index/int_dim", "j = dims()\n" + X34 + "\nprint(x[1, j])")
case("index/neg_int_dim", "j = dims()\n" + X34 + "\nprint(x[-1, j])")
case("index/dim_neg_int", "i = dims()\n" + X34 + "\nprint(x[i, -2])")
case("index/none_dim", "i = dims()\n" + X34 + "\nprint(x[None, i])")
case("index/ellipsis_dim", "j = dims()\n" + X34 + "\nprint(x[..., j])")
case("index/slice_dim", "j = dims()\n" + X34 + "\nprint(x[:, j])")
case("index/chained", "i, j = dims(2)\n" + X34 + "\nprint(x[i][j])")
case("index/rank3_dim_slice_dim", "i, j = dims(2)\n" + X234 + "\nprint(x[i, :, j])")
case("index/rank3_middle", "i = dims()\n" + X234 + "\nprint(x[:, i, 2])")
case("index/rank3_ellipsis_middle", "i = dims()\n" + X234 + "\nprint(x[..., i, :])")
case("index/rank3_int_then_dim", "i = dims()\n" + X234 + "\nprint(x[1][i])")
case("index/rank3_none_between", "i, j = dims(2)\n" + X234 + "\nprint(x[i, None, j])")
case("index/rank3_steps", "i = dims()\n" + X234 + "\nprint(x[i, 1:, ::2])")
case("index/of_dims_tensor_slice", "i = dims()\n" + X34 + "\ny = x[i]\nprint(y[1:3])")
case("index/of_dims_tensor_none", "i = dims()\n" + X34 + "\ny = x[i]\nprint(y[None])")
case("index/of_dims_tensor_int", "i = dims()\n" + X34 + "\ny = x[i]\nprint(y[2])")
case("index/of_dims_tensor_dim", "i, j = dims(2)\n" + X34 + "\ny = x[i]\nprint(y[..., j])\nprint(y[j].dims)")
case("index/int_tensor_base", "i, j = dims(2)\nx = arange(12).reshape(3, 4)\nprint(x[j, i])")
case("index/transposed_base", "i = dims()\nx = arange(12.).reshape(4, 3).t()\nprint(x[i])")
case("index/stepped_base", "i, j = dims(2)\nx = arange(40.).reshape(5, 8)[::2, 1::2]\nprint(x[i, j])")

# ---- dim packs: one index position split into several dims ------------------------------------------
case("pack/two_dims_then_dim", "a, b, k = dims(3)\na.size = 2\nx = arange(24.).reshape(6, 4)\nprint(x[(a, b), k])\nprint(b.size)")
case("pack/rank1", "a, b = dims(2)\na.size = 3\nx = arange(12.)\nprint(x[(a, b),])\nprint(b.size)")
case("pack/inner_bound", "a, b = dims(2)\nb.size = 2\nx = arange(6.)\nprint(x[(a, b),])")
case("pack/three", "a, b, c = dims(3)\na.size = 2\nc.size = 2\nx = arange(12.)\nprint(x[(a, b, c),])")
case("pack/second_position", "a, b = dims(2)\na.size = 2\nx = arange(24.).reshape(2, 12)\nprint(x[:, (a, b)])")
case("pack/sizes_kw", "a, b = dims(sizes=[None, 4])\nx = arange(24.).reshape(2, 12)\nprint(x[0, (a, b)])\nprint(a.size)")
case("pack/then_order", "a, b, k = dims(3)\na.size = 2\nx = arange(24.).reshape(6, 4)\nprint(x[(a, b), k].order(b, a, k))")
case("pack/then_sum", "a, b = dims(2)\na.size = 3\nx = arange(12.)\nprint(x[(a, b),].sum(a))")
case("pack/both_bound", "hi, lo = dims(2)\nhi.size = 2\nlo.size = 6\nx = arange(12.)\nprint(x[(hi, lo),])")

# ---- a dim used twice: the diagonal -------------------------------------------------------------------
S = "S = arange(16.).reshape(4, 4)"
case("diag/square", "i = dims()\n" + S + "\nprint(S[i, i])")
case("diag/trace", "i = dims()\n" + S + "\nprint(S[i, i].sum(i))")
case("diag/chained", "i = dims()\n" + S + "\nprint(S[i][i])")
case("diag/rank3_outer", "i = dims()\nx = arange(18.).reshape(3, 2, 3)\nprint(x[i, :, i])")
case("diag/rank3_two_dims", "i, j = dims(2)\nx = arange(27.).reshape(3, 3, 3)\nprint(x[i, j, i])")

# ---- gathers: an int tensor with dims as an index --------------------------------------------------------
G = "X = arange(12.).reshape(4, 3)\nidx = tensor([2, 0, 3])"
case("gather/rows", "n = dims()\n" + G + "\nprint(X[idx[n]])")
case("gather/rows_dim", "n, k = dims(2)\n" + G + "\nprint(X[idx[n], k])")
case("gather/rows_then_dim", "n, k = dims(2)\n" + G + "\nprint(X[idx[n]][k])")
case("gather/cols", "n = dims()\nX = arange(12.).reshape(4, 3)\nidx = tensor([2, 0, 1, 1])\nprint(X[:, idx[n]])")
case("gather/neg_index", "n = dims()\nX = arange(12.).reshape(4, 3)\nidx = tensor([-1, 0])\nprint(X[idx[n]])")
case("gather/two_indices_one_dim", "n = dims()\nX = arange(12.).reshape(4, 3)\nr = tensor([3, 0, 1])\nc = tensor([2, 2, 0])\nprint(X[r[n], c[n]])")
case("gather/2d_index", "n, m = dims(2)\nX = arange(12.).reshape(4, 3)\nidx = tensor([[0, 3], [1, 2]])\nprint(X[idx[n, m]])\nprint(X[idx[n, m], 1])")
case("gather/dim_arith_index", "i = dims()\ni.size = 2\nX = arange(12.).reshape(4, 3)\nprint(X[i * 2])")
case("gather/then_sum", "n, k = dims(2)\n" + G + "\nprint(X[idx[n], k].sum(k))")
case("gather/int_base", "n = dims()\nX = arange(12).reshape(4, 3)\nidx = tensor([1, 1, 3])\nprint(X[idx[n]] * 2)")
case("gather/index_with_positional", "n = dims()\nX = arange(12.).reshape(4, 3)\nidx = tensor([[0, 3], [1, 2], [2, 2]])\nprint(X[idx[n]])")
case("gather/then_slice", "n = dims()\nX = arange(12.).reshape(4, 3)\nidx = tensor([2, 0])\nprint(X[idx[n], 1:])")
case("gather/of_dims_tensor", "i, n = dims(2)\nX = arange(12.).reshape(4, 3)\nidx = tensor([2, 0])\nprint(X[i][idx[n]])")

# ---- pointwise ops: broadcasting by dim identity -------------------------------------------------------
case("pointwise/outer_sum", "i, j = dims(2)\nA = arange(4.)\nB = arange(3.)\nprint(A[i] + B[j])\nprint((A[i] + B[j]).dims)")
case("pointwise/outer_sum_reversed", "i, j = dims(2)\nA = arange(4.)\nB = arange(3.)\nprint(B[j] + A[i])")
case("pointwise/outer_product", "i, j = dims(2)\nA = arange(4.)\nB = arange(3.) + 1\nprint(A[i] * B[j])")
case("pointwise/same_dim", "i = dims()\n" + X34 + "\nprint(x[i] - x[i] * 2)")
case("pointwise/positional_plus_dims", "i = dims()\n" + X34 + "\nprint(arange(4.) + x[i])")
case("pointwise/dims_plus_positional", "i = dims()\n" + X34 + "\nprint(x[i] + arange(4.))")
case("pointwise/positional2d_plus_dims", "i = dims()\n" + X34 + "\nprint(x + x[i])")
case("pointwise/positional_none_plus_dims", "i = dims()\n" + X34 + "\nprint(x[:, None] + x[i])")
case("pointwise/dims_minus_row", "i = dims()\n" + X34 + "\nprint(x[i] - x[0])\nprint(x[0] - x[i])")
# `*` with a plain left operand: functorch puts the right operand's levels first (Python falls
# back to the dims tensor's __rmul__), so the dims come first here, unlike + above.
case("pointwise/mul_plain_left", "i = dims()\n" + X34 + "\nprint(arange(4.) * x[i])")
case("pointwise/mul_plain2d_left", "i = dims()\n" + X34 + "\nprint(x * x[i])")
case("pointwise/mixed_positional_and_dims", "i, j = dims(2)\n" + X34 + "\ny = arange(16.).reshape(4, 4)\nprint(x[i] + y[:, j])\nprint(y[:, j] + x[i])")
case("pointwise/scalar", "i = dims()\n" + X34 + "\nprint(x[i] + 1)\nprint(10 - x[i])")
case("pointwise/compare", "i, j = dims(2)\n" + X34 + "\nt = x[i, j]\nprint(t == 5)\nprint(t >= 6)")
case("pointwise/where", "i, j = dims(2)\n" + X34 + "\nt = x[i, j]\nprint(where(t > 5, t, -1.))")
case("pointwise/where_two_dims", "i, j = dims(2)\nA = arange(3.)\nB = arange(4.)\nprint(where(A[i] > 0, A[i], B[j]))")
case("pointwise/clamp", "i, j = dims(2)\n" + X34 + "\nt = x[i, j]\nprint(t.clamp(2, 8))\nprint(t.clamp(min=3))")
case("pointwise/minimum", "i, j = dims(2)\nA = arange(3.)\nB = 3 - arange(4.)\nprint(minimum(A[i], B[j]))")
case("pointwise/math", "i = dims()\nx = arange(6.).reshape(2, 3)\nprint(x[i].sqrt())\nprint(tanh(x[i] / 4))")
case("pointwise/int_ops", "i = dims()\nx = arange(12).reshape(3, 4)\ny = x[i]\nprint(y // 3)\nprint(y % 3)\nprint(-y)")
case("pointwise/int_true_div", "i = dims()\nx = arange(12).reshape(3, 4)\nprint(x[i] / 2)")
case("pointwise/casts", "i = dims()\nx = arange(6.).reshape(2, 3)\nprint(x[i].long())\nprint((x[i] > 2).float())")
case("pointwise/abs_pow", "i = dims()\n" + X34 + "\nprint(abs(x[i] - 5))\nprint(x[i] ** 2)")
case("pointwise/bool_and", "i, j = dims(2)\nA = arange(3.)\nB = arange(4.)\nprint((A[i] > 0) & (B[j] < 3))")
case("pointwise/three_operands", "i, j, k = dims(3)\nA = arange(2.)\nB = arange(3.)\nC = arange(2.) * 10\nprint(A[i] + B[j] + C[k])")

# ---- a dim used as a value: its index ------------------------------------------------------------------
case("value/times_two", "i = dims()\ni.size = 3\nprint(i * 2)")
case("value/sum_of_dims", "i, j = dims(2)\ni.size = 3\nj.size = 4\nprint(i + j)")
case("value/compare_dims", "i, j = dims(2)\ni.size = 3\nj.size = 4\nprint(i < j)")
case("value/where_dims", "i, j = dims(2)\ni.size = 3\nj.size = 4\nprint(where(i < j, i, j))")
case("value/iota_grid", "i, j = dims(2)\ni.size = 3\nj.size = 4\nprint((i * 4 + j).order(i, j))")
case("value/difference", "i, j = dims(2)\ni.size = 3\nj.size = 4\nprint(j - i)")
case("value/times_tensor", "i, j = dims(2)\n" + X34 + "\nj.size = 2\nprint(x[i] * j)")
case("value/mask", "i = dims()\n" + X34 + "\nt = x[i]\nprint(where(i < 2, t, 0.))")
case("value/float_scale", "i = dims()\ni.size = 4\nprint(i * 0.5 + 1)")
case("value/bound_by_index", "i = dims()\n" + X34 + "\nt = x[i]\nprint(t + i)")
case("value/float_offset", "i = dims()\n" + X34 + "\nprint((x[i] + i * 0.5).order(i))")
case("value/dims_of_dim", "i = dims()\ni.size = 3\nprint(i.dims)")

# ---- reductions -----------------------------------------------------------------------------------------
T = "i, j = dims(2)\n" + X34 + "\nt = x[i, j]"
case("reduce/sum", T + "\nprint(t.sum(j))\nprint(t.sum(i))")
case("reduce/sum_tuple_to_plain", T + "\nprint(t.sum((i, j)))")
case("reduce/mean", T + "\nprint(t.mean(i))\nprint(t.mean((i, j)))")
case("reduce/prod", T + "\nprint(t.prod(j))")
case("reduce/amax_amin", T + "\nprint(t.amax(j))\nprint(t.amin(i))\nprint(t.amax((i, j)))")
case("reduce/max_pair", T + "\nprint(t.max(j))")
case("reduce/min_pair", T + "\nprint(t.min(i))")
case("reduce/max_unpack", T + "\nv, ix = t.max(j)\nprint(v)\nprint(ix)")
case("reduce/argmax_argmin", T + "\nprint(t.argmax(j))\nprint(t.argmin(i))")
case("reduce/any_all", T + "\nprint((t > 4).any(j))\nprint((t > 4).all(i))")
case("reduce/softmax_method", T + "\nprint(t.softmax(j))")
case("reduce/softmax_function", T + "\nprint(softmax(t, dim=j))")
case("reduce/softmax_other_dim", T + "\nprint(t.softmax(i))")
case("reduce/logsumexp", T + "\nprint(t.logsumexp(j))\nprint(t.logsumexp((i, j)))")
case("reduce/masked_sum", T + "\nm = t > 4\nprint(where(m, t, 0).sum(j))")
case("reduce/masked_sum_by_value", T + "\nprint(where(j < 2, t, 0.).sum(j))")
case("reduce/int_dim_with_dims", "i = dims()\n" + X34 + "\nprint(x[i].sum(0))\nprint(x[i].amax(0))")
case("reduce/no_dim_positional_only", "i = dims()\n" + X34 + "\nprint(x[i].sum())\nprint(x[i].mean())")
case("reduce/keepdim_int", "i = dims()\n" + X34 + "\nprint(x[i].sum(0, keepdim=True))")
case("reduce/int_tensor", "i = dims()\nx = arange(12).reshape(3, 4)\nprint(x[i].sum(i))\nprint((x[i] > 4).sum(0))")
case("reduce/int_max_pair", "i, j = dims(2)\nx = arange(12).reshape(3, 4)\nprint(x[i, j].max(j))")
case("reduce/over_positional_and_dim", "i = dims()\n" + X234 + "\nt = x[:, i]\nprint(t.sum(i))\nprint(t.sum(0))")
case("reduce/dim_beside_positional", "j = dims()\n" + X34 + "\nprint(x[:, j].sum(j))\nprint(x[:, j].amax(j))")
case("reduce/positional_before_dim", "i = dims()\n" + X234 + "\nt = x[..., i]\nprint(t.sum(0))\nprint(t.amax(0))")
case("reduce/of_outer", "i, j = dims(2)\nA = arange(4.)\nB = arange(3.)\nprint((A[i] * B[j]).sum(i))")
case("reduce/then_compare", T + "\nprint(t.sum(j) > 10)")

# ---- contractions ------------------------------------------------------------------------------------------
case("contract/matmul", "i, j, k = dims(3)\n" + AB + "\nC = (A[i, k] * B[k, j]).sum(k)\nprint(C)\nprint(C.order(i, j))\nprint(A @ B)")
case("contract/matmul_reversed_operands", "i, j, k = dims(3)\n" + AB + "\nprint((B[k, j] * A[i, k]).sum(k))")
case("contract/sum_other_dim", "i, j, k = dims(3)\n" + AB + "\nprint((A[i, k] * B[k, j]).sum(i))")
case("contract/two_dims", "i, j, k = dims(3)\n" + AB + "\nprint((A[i, k] * B[k, j]).sum((i, k)))")
case("contract/all", "i, j, k = dims(3)\n" + AB + "\nprint((A[i, k] * B[k, j]).sum((i, j, k)))")
case("contract/dot", "k = dims()\na = arange(4.)\nb = arange(4.) + 1\nprint((a[k] * b[k]).sum(k))\nprint(dot(a, b))")
case("contract/batched", "b, i, j, k = dims(4)\nP = arange(12.).reshape(2, 2, 3)\nQ = arange(12.).reshape(2, 3, 2)\nprint((P[b, i, k] * Q[b, k, j]).sum(k).order(b, i, j))\nprint(bmm(P, Q))")
case("contract/matvec_positional", "i, k = dims(2)\n" + AB + "\nprint((A[i, k] * B[k]).sum(k))")

# ---- order: first-class dims back to positional ---------------------------------------------------------------
case("order/both", T + "\nprint(t.order(i, j))")
case("order/swapped", T + "\nprint(t.order(j, i))")
case("order/partial", T + "\nu = t.order(j)\nprint(u)\nprint(u.dims, u.ndim, u.shape)")
case("order/with_positional", "i = dims()\n" + X234 + "\nt = x[:, i]\nprint(t)\nprint(t.order(i))")
case("order/then_positional_math", T + "\nprint(t.order(i, j) - x)")
case("order/three", "i, j, k = dims(3)\n" + X234 + "\nprint(x[i, j, k].order(k, i, j))")
case("order/outer_then_order", "i, j = dims(2)\nA = arange(4.)\nB = arange(3.)\nprint((A[i] + B[j]).order(j, i))")
case("order/of_value", "i = dims()\ni.size = 4\nprint((i * 3).order(i))")
case("order/partial_with_positional", "i, j = dims(2)\n" + X234 + "\nt = x[i, :, j]\nprint(t.order(j))")

# ---- expand, index, stack ------------------------------------------------------------------------------------------
case("expand/dims_tensor", "i, j = dims(2)\n" + X34 + "\nj.size = 2\nprint(x[i].expand(j))")
case("expand/plain_tensor", "j = dims()\nj.size = 2\n" + X34 + "\nprint(x.expand(j))")
case("expand/then_reduce", "j = dims()\nj.size = 3\nx = arange(4.)\nprint(x.expand(j).sum(j))")
case("index_method/first", "i = dims()\n" + X34 + "\nprint(x.index(0, i))")
case("index_method/second", "j = dims()\n" + X34 + "\nprint(x.index(1, j))")
case("index_method/on_dims_tensor", "i, j = dims(2)\n" + X34 + "\nprint(x[i].index(0, j))")
case("index_method/tuple", "i, j = dims(2)\n" + X34 + "\nprint(x.index((0, 1), (i, j)))")
case("index_method/then_reduce", "i = dims()\n" + X34 + "\nt = x.index(0, i)\nprint(t.sum(i))")
case("index_method/select_dim", "i = dims()\n" + X34 + "\nt = x[i]\nprint(t.index(i, 0))\nprint(t.index(i, 2))")
case("index_method/rename_dim", "i, j = dims(2)\n" + X34 + "\nt = x[i]\nprint(t.index(i, j))")
case("index_method/dim_and_positional", "i, j = dims(2)\n" + X34 + "\nt = x[i]\nprint(t.index((i, 0), (1, j)))")
case("stack/plain_rank1", "n = dims()\na = arange(3.)\nb = arange(3.) * 10\nprint(stack([a, b], n, 0))")
case("stack/plain_rank2_dim0", "n = dims()\nx = arange(6.).reshape(2, 3)\nprint(stack([x, x * 10], n, 0))")
case("stack/plain_rank2_dim1", "n = dims()\nx = arange(6.).reshape(2, 3)\nprint(stack([x, x * 10], n, 1))")
case("stack/dims_tensors", "i, n = dims(2)\n" + X34 + "\nprint(stack([x[i], x[i] * 10], n, 0))")
case("stack/then_reduce", "n = dims()\na = arange(3.)\nb = arange(3.) * 10\nprint(stack([a, b], n, 0).sum(n))")
case("stack/three", "n = dims()\na = arange(2.)\nprint(stack([a, a + 1, a + 2], n, 0))\nprint(n.size)")

# ---- dims in functions -----------------------------------------------------------------------------------------
case("func/dim_argument", "def total(t, d):\n    return t.sum(d)\ni, j = dims(2)\n" + X34 + "\nprint(total(x[i, j], j))")
case("func/dims_inside", "def outer(a, b):\n    i, j = dims(2)\n    return (a[i] * b[j]).order(i, j)\nprint(outer(arange(3.), arange(2.) + 1))")
case("func/fresh_dims_per_call", "def rowsum(t):\n    r = dims()\n    return t[r].sum(0)\nprint(rowsum(arange(6.).reshape(2, 3)))\nprint(rowsum(arange(12.).reshape(4, 3)))")

# ---- errors ----------------------------------------------------------------------------------------------------------
# Dim names of two letters or more, so that a word means the dim and not a letter of the text.
err("error/bind_size_twice", "row = dims()\nrow.size = 3\nrow.size = 4", must_name=("row",))
err("error/bind_size_then_index", "row = dims()\nrow.size = 3\nx = arange(8.).reshape(4, 2)\ny = x[row]", must_name=("row",))
err("error/bind_index_then_index", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row]\nz = arange(3.)[row]", must_name=("row",))
err("error/bind_two_positions", "row, col = dims(2)\nx = arange(8.).reshape(4, 2)\ny = x[row, col]\nz = x[col, row]", must_name=("col",))
err("error/bind_diagonal_not_square", "row = dims()\nx = arange(12.).reshape(3, 4)\ny = x[row, row]", must_name=("row",))
err("error/bind_expand_then_index", "row = dims()\nrow.size = 2\nx = arange(8.).reshape(4, 2)\ny = x.expand(row)[row]", must_name=("row",))
err("error/bind_stack_size", "nn = dims()\nnn.size = 3\na = arange(3.)\ny = stack([a, a], nn, 0)", must_name=("nn",))
err("error/expand_existing_dim", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row].expand(row)", must_name=("row",))
err("error/pack_same_dim_twice", "hi = dims()\nx = arange(12.)\ny = x[(hi, hi),]", must_name=("hi",))
err("error/pack_two_unbound", "hi, lo = dims(2)\nx = arange(12.)\ny = x[(hi, lo),]", must_name=("hi", "lo"))
err("error/pack_not_dividing", "hi, lo = dims(2)\nhi.size = 5\nx = arange(12.)\ny = x[(hi, lo),]", must_name=("hi",))
err("error/pack_sizes_mismatch", "hi, lo = dims(2)\nhi.size = 2\nlo.size = 5\nx = arange(12.)\ny = x[(hi, lo),]", must_name=("hi", "lo"))
err("error/too_many_indices", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row, 0, 0]", must_name=("indices",))
err("error/too_many_indices_chained", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row][0, 0]", must_name=("indices",))
err("error/two_ellipses", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row, ..., ...]")
err("error/unbound_value", "row = dims()\ny = row + 1", must_name=("row", "unbound"))
err("error/unbound_size", "row = dims()\nprint(row.size)", must_name=("row", "unbound"))
err("error/unbound_expand", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x.expand(row)", must_name=("row", "unbound"))
err("error/reduce_missing_dim", "row, col = dims(2)\nx = arange(8.).reshape(4, 2)\ny = x[row].sum(col)", must_name=("col",))
err("error/max_missing_dim", "row, col = dims(2)\nx = arange(8.).reshape(4, 2)\ny = x[row].max(col)", must_name=("col",))
err("error/softmax_missing_dim", "row, col = dims(2)\nx = arange(8.).reshape(4, 2)\ny = x[row].softmax(col)", must_name=("col",))
err("error/order_missing_dim", "row, col = dims(2)\ncol.size = 4\nx = arange(8.).reshape(4, 2)\ny = x[row].order(col)", must_name=("col",))
err("error/order_twice", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row].order(row, row)", must_name=("row",))
err("error/int_out_of_range", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row, 2]", must_name=("index 2", "size 2"))
err("error/int_out_of_range_chained", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row][3]", must_name=("index 3", "size 2"))
err("error/gather_out_of_range", "nn = dims()\nx = arange(8.).reshape(4, 2)\nidx = tensor([0, 5])\ny = x[idx[nn]]", must_name=("index 5", "size 4"))
err("error/gather_float_index", "nn = dims()\nx = arange(8.).reshape(4, 2)\nidx = tensor([0., 1.])\ny = x[idx[nn]]", must_name=("long",))
err("error/broadcast_positional", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row] + arange(3.)", must_name=("2", "3"))
err("error/if_on_dims_reduced", "row = dims()\nx = arange(8.).reshape(4, 2)\nif x[row].sum() > 0: print('positive')")
err("error/if_on_dims_scalar_per_index", "row, col = dims(2)\nx = arange(8.).reshape(4, 2)\ny = 1 if x[row, col] > 0 else 0")
err("error/and_on_dims", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row, 0] > 2 and True")
err("error/chained_compare_on_dims", "row, col = dims(2)\nx = arange(8.).reshape(4, 2)\ny = x[row, col] < 3 < 4")
err("error/if_on_many_elements", "x = arange(8.).reshape(4, 2)\nif x > 0: print('positive')")
err("error/keepdim_with_dim", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row].sum(row, keepdim=True)", must_name=("keepdim",))
err("error/keepdim_with_dim_tuple", "row, col = dims(2)\nx = arange(8.).reshape(4, 2)\ny = x[row, col].mean((row, col), keepdim=True)", must_name=("keepdim",))
err("error/item_with_dims", "row = dims()\nx = arange(8.).reshape(4, 2)\ny = x[row, 0].item()")


# ---- running under functorch.dim ---------------------------------------------------------------------------------------

def run_here(program):
    """('OK', printed) or ('ERR', kind, message) of the program under functorch.dim, printing as
    tdl does. Runs in this process: call it in a child (run)."""
    filename = "<case>"
    torch_shim.register_source(filename, program)
    ns = torch_shim.namespace(filename, [])
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(program, filename, "exec"), ns)
    except Exception as e:  # noqa: BLE001 - every error of a case is a result
        return ("ERR", type(e).__name__, str(e))
    return ("OK", buf.getvalue())


def run(name, program):
    """run_here in a forked child, so that each case starts from the same state and a crash or a
    hang of functorch is reported as such."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:    # the child: no exception may escape into the parent's code
        try:
            os.close(rd)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)    # functorch's abort message: the parent reports the crash
            data = repr(run_here(program)).encode()
            while data:
                data = data[os.write(wr, data):]
        finally:
            os._exit(0)
    os.close(wr)
    chunks, deadline = [], time.monotonic() + TIMEOUT_S
    while True:
        ready, _, _ = select.select([rd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(rd)
            sys.exit("%s: functorch hangs (more than %d s): leave the case out" % (name, TIMEOUT_S))
        chunk = os.read(rd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(rd)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not chunks:
        sys.exit("%s: functorch crashes (wait status %d): leave the case out" % (name, status))
    return ast.literal_eval(b"".join(chunks).decode())


def dim_names(program):
    """The names of the dims the program makes: the targets of its `... = dims(...)` lines."""
    out = set()
    for node in ast.walk(ast.parse(program)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                isinstance(node.value.func, ast.Name) and node.value.func.id == "dims":
            for t in node.targets:
                for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                    if isinstance(e, ast.Name):
                        out.add(e.id)
    return out


def encode(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def expected(name, program, words):
    assert "\t" not in program and "\\" not in program, name
    r = run(name, program)
    assert (r[0] == "ERR") == (words is not None), (name, r)
    if r[0] == "OK":
        assert r[1], name + ": prints nothing"
        return "OK " + r[1]
    kind, msg = r[1], r[2]
    assert kind in KINDS, (name, kind, msg)
    # The failing statement is the last line: everything before it runs.
    before = program.rsplit("\n", 1)[0] if "\n" in program else ""
    assert run(name, before)[0] == "OK", name + ": fails before its last line"
    known = dim_names(program)
    for w in words:
        assert w and "," not in w and w.strip() == w, (name, w)
        assert w in msg or w in known, (name, "word %r is neither in functorch's message nor a dim name" % w, msg)
    return "ERR %s %s" % (kind, ",".join(words))


def main():
    torch.set_printoptions(profile="default")
    torch.set_num_threads(1)    # children are forked: no thread pool to inherit
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    lines = [
        "# generated by tests/golden/gen_dims.py from PyTorch %s (functorch.dim); do not edit" % torch.__version__,
        "# name<TAB>program<TAB>expected: 'OK output' or 'ERR Kind word,word,...' (words tdl's message must"
        " contain); \\n \\t \\\\ escaped",
    ]
    counts = {}
    for name, program, words in cases:
        exp = expected(name, program, words)
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
