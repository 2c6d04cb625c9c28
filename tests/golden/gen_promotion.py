#!/usr/bin/python3
"""gen_promotion.py — writes tests/golden/promotion.txt, the golden data of tests/test_promotion.c.

Run from the repository root with Debian's python3 (torch installed):
    /usr/bin/python3 tests/golden/gen_promotion.py
The output is committed; the C test suite does not need torch.

The operands are the 13 kinds that PyTorch's promotion tells apart: a 1-D tensor and a 0-dim
tensor of each of bool, int32, int64, float32, float64, and the Python scalars bool, int, float.
Every line is blank-separated words; '#' starts a comment line. A KIND DTYPE pair names an
operand: KIND is tensor, zero_dim or scalar; a scalar's DTYPE is bool, int64 (int) or float64
(float), as fcdim.h's FcOperand spells them.

pair  KA DA KB DB  RESULT ADD DIV LT
        for every ordered pair (a, b) of the 13 kinds: torch.result_type(a, b), and the dtypes
        of a + b, a / b (true division) and a < b. For two Python scalars only result_type is a
        tensor question (a + b is plain Python there); the other three are '-'.
        Before writing LT the generator checks, with values that tell the candidates apart,
        that torch compares a and b in RESULT (the comparison's common dtype): a < b and a == b
        must equal the comparison of a and b both cast to RESULT.
        It also checks that DIV is RESULT made floating (a bool or integer RESULT gives the
        default float, float32): the C test leans on that rule where torch has no division to
        ask, two Python scalars and three operands.
where KA DA KB DB  DTYPE
        torch.where(bool_tensor, a, b).dtype for every ordered pair (a, b) of the 13 kinds
        (PyTorch 1.13 promotes the two value operands; the condition takes no part).
clamp KA DA KB DB KC DC  DTYPE
        torch.clamp(a, b, c).dtype: three-operand promotion. a is a tensor or a 0-dim tensor;
        b and c are both tensors/0-dim tensors (clamp.Tensor) or both Python scalars
        (clamp.Scalar): Python's argument parser turns a 0-dim tensor next to a number into a
        Scalar, so mixed triples would not test what they say. Triples clamp does not
        implement (bool) are left out.
"""
import itertools
import os

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "promotion.txt")
DTYPES = ["bool", "int32", "int64", "float32", "float64"]
TORCH = {"bool": torch.bool, "int32": torch.int32, "int64": torch.int64,
         "float32": torch.float32, "float64": torch.float64}
NAME = {v: k for k, v in TORCH.items()}
SCALAR = {"bool": True, "int64": 3, "float64": 2.5}

# Values that make the candidate common dtypes give different comparison results: a float with
# a fraction (lost in ints), 2**24 + 1 (lost in float32), 2**32 (wraps in int32), 2**53 + 1 (lost
# in float64), 2 (is True as a bool). No value overflows any candidate's conversion. Pairs whose
# candidates agree on every value (bool with bool, say) cannot be told apart and need not be.
VALUES = {
    "bool": [False, True],
    "int32": [-1, 0, 1, 2, 16777216, 16777217],
    "int64": [-1, 0, 1, 2, 16777216, 16777217, 2 ** 32, 2 ** 53, 2 ** 53 + 1],
    "float32": [-0.5, 0.5, 1.0, 2.0, 16777216.0],
    "float64": [-0.5, 0.5, 1.0, 2.0, 16777216.0, 16777217.0, 2.0 ** 32, 2.0 ** 53, 2.0 ** 53 + 2],
}


def operand(kind, dtype):
    if kind == "tensor":
        return torch.ones(2, dtype=TORCH[dtype])
    if kind == "zero_dim":
        return torch.ones((), dtype=TORCH[dtype])
    return SCALAR[dtype]


def operands():
    for kind in ("tensor", "zero_dim"):
        for d in DTYPES:
            yield kind, d
    for d in ("bool", "int64", "float64"):
        yield "scalar", d


def value_operands(kind, dtype, col):
    """Operands of this kind holding the discriminating values: one 2-D tensor (a column or a
    row, so that a < b compares every value with every other), else one operand per value."""
    vals = VALUES[dtype]
    if kind == "tensor":
        t = torch.tensor(vals, dtype=TORCH[dtype])
        return [t[:, None] if col else t[None, :]]
    if kind == "zero_dim":
        return [torch.tensor(v, dtype=TORCH[dtype]) for v in vals]
    conv = {"bool": bool, "int64": int, "float64": float}[dtype]
    return [conv(v) for v in vals]


def cast(x, dt):
    if isinstance(x, torch.Tensor):
        return x.to(dt)
    # A Python number, converted as a C cast would (the way a wrapped scalar is cast).
    src = torch.float64 if isinstance(x, float) else torch.bool if isinstance(x, bool) else torch.int64
    return torch.tensor(x, dtype=src).to(dt)


def check_compare_dtype(ka, da, kb, db, rt):
    """Fails unless torch compares a and b in rt: for every discriminating value pair,
    a < b and a == b equal the comparison of both operands cast to rt."""
    for a in value_operands(ka, da, True):
        for b in value_operands(kb, db, False):
            for op in (torch.lt, torch.eq):
                if isinstance(a, torch.Tensor):
                    got = op(a, b)
                else:
                    # a is a Python number: ask the reflected question of b.
                    got = torch.gt(b, a) if op is torch.lt else torch.eq(b, a)
                want = op(cast(a, rt), cast(b, rt))
                if not torch.equal(got, want):
                    raise SystemExit(f"gen_promotion.py: {ka} {da} < {kb} {db} is not computed in {NAME[rt]}")


def pair_line(ka, da, kb, db):
    a, b = operand(ka, da), operand(kb, db)
    rt = torch.result_type(a, b)
    if ka == kb == "scalar":
        return f"pair {ka} {da} {kb} {db} {NAME[rt]} - - -"
    add = (a + b).dtype
    div = (a / b).dtype
    if div != (rt if rt.is_floating_point else torch.float32):
        raise SystemExit(f"gen_promotion.py: {ka} {da} / {kb} {db} gives {NAME[div]}, not {NAME[rt]} made floating")
    lt = (a < b).dtype
    check_compare_dtype(ka, da, kb, db, rt)
    return f"pair {ka} {da} {kb} {db} {NAME[rt]} {NAME[add]} {NAME[div]} {NAME[lt]}"


def main():
    ops = list(operands())
    lines = ["# generated by tests/golden/gen_promotion.py from torch %s; do not edit" % torch.__version__,
             "# pair KA DA KB DB RESULT_TYPE ADD DIV LT"]
    for (ka, da), (kb, db) in itertools.product(ops, ops):
        lines.append(pair_line(ka, da, kb, db))
    lines.append("# where KA DA KB DB DTYPE: torch.where(bool tensor, a, b)")
    cond = torch.tensor([True, False])
    for (ka, da), (kb, db) in itertools.product(ops, ops):
        d = torch.where(cond, operand(ka, da), operand(kb, db)).dtype
        lines.append(f"where {ka} {da} {kb} {db} {NAME[d]}")
    lines.append("# clamp KA DA KB DB KC DC DTYPE: torch.clamp(a, b, c)")
    tensors = [o for o in ops if o[0] != "scalar"]
    scalars = [o for o in ops if o[0] == "scalar"]
    for a in tensors:
        for group in (tensors, scalars):
            for b, c in itertools.product(group, group):
                try:
                    d = torch.clamp(operand(*a), operand(*b), operand(*c)).dtype
                except RuntimeError:
                    continue
                lines.append("clamp %s %s %s %s %s %s %s" % (*a, *b, *c, NAME[d]))
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
