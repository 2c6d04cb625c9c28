"""gen.py — random tdl programs that are also valid Python under tests/torch_shim.py.

A program is a list of lines, one statement each (the shim's dims() reads the calling line).
The generator runs inside a process that has torch (and the shim) imported: every candidate
expression is evaluated by torch as it is built, so the generator knows each value's shape,
dtype and first-class dims without modelling PyTorch's rules, and a candidate torch refuses is
dropped, or (sometimes) kept as the program's failing statement, so that errors are compared
too. Call generate() in a forked child: dims() imports functorch.dim, which patches
torch.Tensor for the rest of the process.

What the programs hold: tensors of float32, float64, int32, int64, bool, uint8, int8, int16,
float16 and bfloat16 with extents 0, 1 and more (sometimes large enough that tdl runs them on
several threads), broadcasting pointwise operators and functions, where, casts, reductions (with
dims, tuples of dims, keepdim) chained into further reductions and pointwise ops (so that tdl fuses
them), softmax of softmax, matmul, shape operations (with view_as, reshape_as, ravel, unflatten,
diagonal, mT, type_as, unfold, as_strided), gather, scatter_add, index_put (with and
without accumulate), running sums and products, flip, roll, repeat, narrow, tril/triu, masked_fill,
var/std/norm, diff, sort, topk, outer, pow, atan2, minimum/maximum, indexing (ints, slices with
steps, None, ..., bool masks, index tensors and lists), index writes (`t[idx] = v`, `t[idx] += v`, also through
views), first-class dims (functorch.dim's: `i, j = dims(2)`, `x[i, j]`, reductions over dims,
`order`), and prints of the values (the tensor as printed, and full precision through tolist()).

Gradient programs (about one in three, most of them with no failing statement): most float32
and float64 variables made from literals are leaves that require grad (`requires_grad=True`, or
`.requires_grad_()` on a computed literal), so that the statements build a graph (pointwise,
reductions, shape ops, indexing, index writes through views of non-leaves, first-class dims...),
and the program ends with a weighted sum of a value that requires grad, its backward() (or grad()
of the leaves) and the leaves' gradients printed in full, compared with torch's autograd like
every other output. torch's refusals are kept as the failing statement as elsewhere (an in-place
write into a leaf), but for those where tdl documents that it differs (NOT_COMPARABLE).
"""
import sys

import torch

import torch_shim

FILENAME = "prog.tdl"
DTYPES = ("float32", "float64", "int32", "int64", "bool", "uint8", "int8", "int16", "float16", "bfloat16")
FLOAT = ("float32", "float64", "float16", "bfloat16")
GRAD_DTYPES = ("float32", "float64")     # the leaves of gradient programs
DIM_NAMES = ("i", "j", "k", "l", "m", "n", "p", "q", "s", "u")

# Errors torch raises where tdl is documented to differ (docs/language.md, "Differences from
# PyTorch"), or where the generator's state may be off: a statement torch refuses with one of
# these is dropped, never kept as the failing statement.
NOT_COMPARABLE = (
    "unsupported operation",            # overlapping writes: tdl reads the value first
    "step must be greater than zero",   # tdl allows negative steps
    "tensors used as indices must be long",   # tdl accepts int32 index tensors
    "index out of range in self",       # index_select: tdl names index, dim and size
    "INTERNAL ASSERT",                  # functorch's own failures
    "is not implemented for",           # torch kernels missing for a dtype (tdl has more)
    "not implemented for",
    "Expected object of scalar type",
    "expected scalar type",
    "expected both vectors to have same dtype",
    "Deprecated",
    "doesn't define __round__",         # tdl's round(t) is the tensor function
    # tdl recomputes values where torch saves them: it refuses a backward only where it reads an
    # overwritten value, and frees a graph only where the backward reads forward values
    "modified by an inplace operation",
    "backward through the graph a second time",
    "derivative for aten::floor_divide is not implemented",     # tdl's is zero
)


class Reject(Exception):
    """A candidate that cannot be built (no operand fits)."""


def dtype_name(t):
    return str(t.dtype)[len("torch."):]


class Gen:
    """One program, grown statement by statement; lines holds the program's text."""

    def __init__(self, rng, allow_error=True, big=False, grad=False):
        self.r = rng
        self.lines = []
        self.ns = torch_shim.namespace(FILENAME, [])
        self.vars = []          # names of tensor variables, in order of definition
        self.dims = []          # dim names made so far
        self.printed = set()
        self.nvar = 0
        self.allow_error = allow_error
        self.big = big
        self.grad = grad        # a gradient program (see the module's docstring)
        self.leaves = []        # its variables that are leaves requiring grad
        self.done = False       # a failing statement was kept: nothing may follow
        self.fd = None

    # ---- running candidates under torch --------------------------------------------------------

    def _code(self, stmt):
        src = "\n".join(self.lines + [stmt]) + "\n"
        torch_shim.register_source(FILENAME, src)
        return compile("\n" * len(self.lines) + stmt, FILENAME, "exec")

    def eval(self, expr):
        """The value of expr under torch, or the exception it raises."""
        try:
            torch_shim.register_source(FILENAME, "\n".join(self.lines + ["_ = " + expr]) + "\n")
            return eval(compile("\n" * len(self.lines) + expr, FILENAME, "eval"), self.ns)
        except Exception as e:  # noqa: BLE001 - a refusal is a result
            return e

    def run(self, stmt):
        """Executes stmt; None, or the exception torch raised."""
        try:
            exec(self._code(stmt), self.ns)
        except Exception as e:  # noqa: BLE001
            return e
        return None

    def emit(self, stmt, intended_error_ok=True):
        """Adds stmt when torch runs it; when torch refuses it, adds it as the failing last
        statement (sometimes, and only for comparable errors), else drops it. True if added."""
        err = self.run(stmt)
        if err is None:
            self.lines.append(stmt)
            return True
        if self.allow_error and intended_error_ok and self.comparable(err) and self.r.random() < 0.3:
            self.lines.append(stmt)
            self.done = True
            return True
        return False

    @staticmethod
    def comparable(err):
        msg = str(err)
        if any(s in msg for s in NOT_COMPARABLE):
            return False
        return type(err).__name__ in ("RuntimeError", "IndexError", "ValueError", "TypeError",
                                      "DimensionBindError", "ZeroDivisionError")

    # ---- values ---------------------------------------------------------------------------------

    def is_dimmed(self, v):
        fd = sys.modules.get("functorch.dim")
        return fd is not None and isinstance(v, fd.Tensor)

    def val(self, name):
        return self.ns[name]

    def plain_vars(self, pred=lambda v: True):
        return [n for n in self.vars if isinstance(self.ns.get(n), torch.Tensor) and pred(self.ns[n])]

    def dim_vars(self):
        return [n for n in self.vars if self.is_dimmed(self.ns.get(n))]

    def fresh(self):
        self.nvar += 1
        return "v%d" % self.nvar

    # ---- literals -------------------------------------------------------------------------------

    def number(self, dt):
        r = self.r
        if dt == "bool":
            return r.choice(("True", "False"))
        if dt in FLOAT:
            x = r.choice((r.randint(-4, 5), r.randint(-4, 5) + 0.5, r.choice((0.1, -0.25, 1.75, 2.0, 3.0, -1.0, 0.0, 7.0 / 3))))
            return repr(float(x))
        return str(r.randint(-5, 9))

    def scalar(self, dt=None):
        """A Python scalar; dt picks its kind (None: any)."""
        r = self.r
        if dt is None:
            dt = r.choice(("int64", "float32", "int64", "bool"))
        if dt == "bool":
            return r.choice(("True", "False"))
        if dt in FLOAT:
            return r.choice(("0.5", "2.0", "-1.5", "0.0", "1.0", "3.25", "-0.125"))
        return str(r.randint(-3, 4))

    def literal(self, shape, dt):
        """A tensor literal (or a zeros/arange form for empty and large shapes) of that shape."""
        r = self.r
        numel = 1
        for s in shape:
            numel *= s
        dts = "" if dt in ("float32", "int64") and r.random() < 0.5 and dt != "bool" else ", dtype=%s" % dt
        if dt == "float32" and not dts:
            # tensor([...]) of float literals is float32, of ints int64: say so unless floats
            pass
        if numel == 0:
            return "zeros(%s, dtype=%s)" % (", ".join(map(str, shape)) or "()", dt)
        if numel > 120:
            mod = r.choice((3, 5, 7, 11, 13))
            body = "arange(%d) %% %d" % (numel, mod)
            if dt == "bool":
                e = "(%s == 0)" % body
            else:
                e = "(%s - %d).to(%s)" % (body, mod // 2, dt)
            return e + ".reshape(%s)" % ", ".join(map(str, shape)) if len(shape) != 1 else e

        def nest(sh):
            if not sh:
                return self.number(dt)
            return "[" + ", ".join(nest(sh[1:]) for _ in range(sh[0])) + "]"
        body = nest(list(shape))
        if dt in FLOAT:
            return "tensor(%s, dtype=%s)" % (body, dt)
        if dt == "bool":
            return "tensor(%s)" % body
        if dt == "int64" and r.random() < 0.5:
            return "tensor(%s)" % body
        return "tensor(%s, dtype=%s)" % (body, dt)

    def shape(self, rank=None):
        r = self.r
        if rank is None:
            rank = r.choice((0, 1, 1, 2, 2, 2, 3, 3, 4))
        ext = []
        for _ in range(rank):
            p = r.random()
            ext.append(0 if p < 0.04 else 1 if p < 0.22 else r.randint(2, 5))
        return tuple(ext)

    def big_shape(self):
        r = self.r
        return r.choice(((2, 20000), (300, 130), (40000,), (64, 3, 200), (3, 17000), (129, 257)))

    # ---- statements -----------------------------------------------------------------------------

    def base(self):
        """Defines a new variable from a literal."""
        r = self.r
        dt = r.choice(GRAD_DTYPES if self.grad and r.random() < 0.6 else DTYPES + FLOAT)
        sh = self.big_shape() if self.big and r.random() < 0.5 else self.shape()
        name = self.fresh()
        lit = self.literal(sh, dt)
        leaf = self.grad and dt in GRAD_DTYPES and r.random() < 0.8
        if leaf:
            made = lit.startswith("tensor(") or lit.startswith("zeros(")
            lit = lit[:-1] + ", requires_grad=True)" if made else lit + ".requires_grad_()"
        if self.emit("%s = %s" % (name, lit), intended_error_ok=False):
            self.vars.append(name)
            if leaf:
                self.leaves.append(name)

    def assign(self):
        """vN = an expression built over the existing variables."""
        if not self.vars:
            return self.base()
        r = self.r
        src = r.choice(self.vars[-4:] + self.vars)
        e, v = src, self.val(src)
        steps = r.choice((1, 1, 2, 2, 3, 4))
        first = None
        if self.dims and r.random() < 0.6:
            # most statements of a program with dims use them
            cands = self.plain_vars(lambda t: t.ndim > 0) if r.random() < 0.7 else []
            if cands:
                src = r.choice(cands)
                e, v = src, self.val(src)
                first = self.dim_index
            elif self.dim_vars():
                src = r.choice(self.dim_vars())
                e, v = src, self.val(src)
        for _ in range(steps):
            got = self.step(e, v, first)
            first = None
            if got is None:
                continue
            if isinstance(got, str):     # a refused candidate kept as the failing statement
                return self.finish_error(got)
            e, v = got
        if e == src:
            return
        name = self.fresh()
        if self.emit("%s = %s" % (name, e)):
            if not self.done:
                self.vars.append(name)

    def finish_error(self, expr):
        """Ends the program with `vN = expr` when torch refuses it comparably."""
        name = self.fresh()
        stmt = "%s = %s" % (name, expr)
        err = self.run(stmt)
        if err is not None and self.comparable(err):
            self.lines.append(stmt)
            self.done = True

    def try_expr(self, expr):
        """(expr, value) when torch computes it; the expr text alone when torch refuses it in a
        way worth comparing and the dice say keep it as the failing statement; else None."""
        v = self.eval(expr)
        if isinstance(v, Exception):
            if self.allow_error and self.comparable(v) and self.r.random() < 0.15:
                return expr
            return None
        if not isinstance(v, torch.Tensor) and not self.is_dimmed(v):
            return None
        return expr, v

    def step(self, e, v, op=None):
        """One operation applied to expression e (value v): a candidate (expr, value), an expr
        text to fail with, or None."""
        r = self.r
        dimmed = self.is_dimmed(v)
        ops = [self.pointwise, self.pointwise, self.unary, self.reduce, self.reduce, self.where]
        if not dimmed:
            ops += [self.shape_op, self.shape_op, self.index, self.matmul, self.chain, self.indexed, self.more,
                    self.newer]
        else:
            ops += [self.dim_reduce, self.dim_reduce, self.order]
        if self.dims and not dimmed and v.ndim > 0:
            ops += [self.dim_index, self.dim_index]
        if dimmed:
            ops += [self.dim_pointwise, self.dim_pointwise]
        else:
            ops.append(self.chain)
        try:
            cand = (op or r.choice(ops))(e, v)
        except Reject:
            return None
        if cand is None:
            return None
        return self.try_expr(cand)

    # ---- operations -----------------------------------------------------------------------------

    @staticmethod
    def paren(e):
        """e, parenthesised unless it is a name or a number."""
        if e.replace("_", "").isalnum() or e.lstrip("-").replace(".", "").isdigit():
            return e if not e.startswith("-") else "(%s)" % e
        return "(%s)" % e

    def operand_for(self, v):
        """An operand text that broadcasts with value v (a tensor, with or without dims)."""
        r = self.r
        dimmed = self.is_dimmed(v)
        choices = ["scalar", "scalar", "same", "var", "literal", "reduced"]
        c = r.choice(choices)
        if c == "scalar":
            return self.scalar()
        if c == "var":
            def fits(u):
                # functorch.dim aborts (or tdl is documented to differ) when operands with
                # first-class dims have positional dims of different ranks
                if self.is_dimmed(u) or dimmed:
                    return u.ndim == v.ndim or (u.ndim == 0 and dimmed)
                try:
                    torch.broadcast_shapes(u.shape, v.shape)
                    return True
                except RuntimeError:
                    return r.random() < 0.05
            cands = [n for n in self.vars if fits(self.ns[n])]
            if cands:
                return r.choice(cands)
            c = "literal"
        if c == "same":
            return None
        if c == "reduced" and not dimmed and v.ndim > 0 and v.numel() > 0:
            d = r.randrange(v.ndim)
            fn = r.choice(("sum", "amax", "amin", "mean") if v.dtype.is_floating_point else ("sum", "amax", "amin"))
            return "%s(%d, keepdim=True)" % ("." + fn, d)     # applied to the operand itself
        # a literal of a suffix of v's positional shape, some extents 1
        sh = list(v.shape)
        k = r.randint(0, len(sh))
        sh = sh[len(sh) - k:]
        sh = [1 if r.random() < 0.3 else s for s in sh]
        if dimmed and sh:
            sh = list(v.shape) if r.random() < 0.5 else []
        dt = r.choice(DTYPES) if r.random() < 0.5 else dtype_name(v)
        return self.literal(tuple(sh), dt)

    def pointwise(self, e, v):
        r = self.r
        op = r.choice(("+", "-", "*", "/", "//", "%", "**", "+", "*", "-", "<", "<=", ">", ">=",
                       "==", "!=", "&", "|", "^", "minimum", "maximum", "+", "*"))
        o = self.operand_for(v)
        if o is None:
            o = e
        elif o.startswith("."):
            o = self.paren(e) + o
        if op == "**":
            if r.random() < 0.7:
                o = r.choice(("2", "0.5", "3", "2.0"))
        if op in ("minimum", "maximum"):
            if not (o[0].isalpha() or o.startswith("(")) or o in ("True", "False"):
                raise Reject
            return "%s(%s, %s)" % (op, e, o)
        # `|` with first-class dims: tdl computes it as `&` and `^` (docs/language.md, where tdl
        # differs from functorch.dim); functorch.dim's __or__ gives NotImplemented (a TypeError)
        if op == "|" and (self.is_dimmed(v) or (o in self.ns and self.is_dimmed(self.ns[o]))):
            raise Reject
        a, b = self.paren(e), self.paren(o)
        if r.random() < 0.3 and not o.startswith("tensor") and not self.is_dimmed(v):
            a, b = b, a
        return "%s %s %s" % (a, op, b)

    def unary(self, e, v):
        r = self.r
        fl = v.dtype.is_floating_point
        fns = ["-", "abs", ".float()", ".double()", ".long()", ".int()", ".bool()", "clamp"]
        if fl:
            fns += ["exp", "sqrt", "floor", "ceil", "round", "sin", "cos", "tanh", "sigmoid",
                    "relu", "log", "log2", "log10", "tan", "atan", "erf", "erfc", "asin"]
        elif v.dtype == torch.bool or r.random() < 0.3:
            fns += ["~"]
        f = r.choice(fns)
        if f == "-":
            return "-" + self.paren(e)
        if f == "~":
            return "~" + self.paren(e)
        if f.startswith("."):
            return self.paren(e) + f
        if f == "clamp":
            kw = r.choice(("min=%s" % self.scalar("int64"), "max=%s" % self.scalar("int64"),
                           "min=-1, max=2", "min=0.5" if fl else "min=0"))
            return "%s.clamp(%s)" % (self.paren(e), kw)
        if f in ("log", "log2", "log10"):
            return "%s(abs(%s) + 1)" % (f, e)
        if f == "asin":      # asin or acos, of a value in [-1, 1]
            return "%s(tanh(%s))" % (r.choice(("asin", "acos")), e)
        if r.random() < 0.5 and f != "round":    # round(t) is Python's builtin under torch
            return "%s(%s)" % (f, e)
        return "%s.%s()" % (self.paren(e), f)

    def dim_arg(self, v, allow_tuple=True):
        r = self.r
        n = v.ndim
        if n == 0:
            return r.choice(("0", "-1"))
        if allow_tuple and n >= 2 and r.random() < 0.3:
            ds = sorted(r.sample(range(n), r.randint(2, n)))
            return "(%s)" % ", ".join(str(d - n if r.random() < 0.3 else d) for d in ds)
        d = r.randrange(n)
        return str(d - n if r.random() < 0.3 else d)

    def reduce(self, e, v):
        r = self.r
        if self.is_dimmed(v):
            return self.dim_reduce(e, v)
        fl = v.dtype.is_floating_point
        fns = ["sum", "amax", "amin", "prod", "max", "min", "argmax", "argmin", "any", "all"]
        if fl:
            fns += ["mean", "softmax", "log_softmax", "logsumexp", "softmax", "mean"]
        f = r.choice(fns)
        if f in ("argmax", "argmin") and v.ndim == 0 and v.dtype == torch.bool:
            # torch 1.13 reads sizes()[dim] of a 0-dim tensor (past its end): whether its kernel
            # is called and refuses bool depends on what lies there
            raise Reject
        if f == "prod" and v.requires_grad and v.numel() > 64:
            # torch's prod backward multiplies partial products that overflow (0 * inf), where
            # tdl's takes the product of the others (language.md)
            raise Reject
        pe = self.paren(e)
        if f in ("softmax", "log_softmax"):
            d = self.dim_arg(v, allow_tuple=False)
            if r.random() < 0.3:
                return "%s(%s, %s)" % (f, e, d) if f == "softmax" else "%s.%s(%s)" % (pe, f, d)
            return "%s.%s(%s)" % (pe, f, d)
        if f == "logsumexp":
            return "%s.logsumexp(%s)" % (pe, self.dim_arg(v))
        tup = f in ("sum", "amax", "amin", "mean", "any", "all") and f not in ("any", "all")
        if r.random() < 0.25 and f not in ("logsumexp",):
            return "%s.%s()" % (pe, f)
        d = self.dim_arg(v, allow_tuple=tup)
        kd = ", keepdim=True" if r.random() < 0.3 else ""
        call = "%s.%s(%s%s)" % (pe, f, d, kd)
        if f in ("max", "min"):
            call += "[%d]" % r.randint(0, 1)
        return call

    def chain(self, e, v):
        """A reduction whose result feeds another reduction or a pointwise op: the fused
        chained reductions."""
        r = self.r
        first = self.reduce(e, v)
        w = self.eval(first)
        if isinstance(w, Exception) or not isinstance(w, torch.Tensor):
            return first
        e2 = first
        if r.random() < 0.75:
            if r.random() < 0.3 and w.dtype.is_floating_point and w.ndim > 0:
                e2 = "%s.softmax(%s)" % (self.paren(first), self.dim_arg(w, allow_tuple=False))
            else:
                e2 = self.reduce(first, w)
        if r.random() < 0.6:
            e2 = "%s %s" % (self.paren(e2), r.choice(("+ 0", "* 1", "- 1", "* 2", "+ 0.5")))
        return e2

    def where(self, e, v):
        r = self.r
        dimmed = self.is_dimmed(v)
        if v.dtype == torch.bool and r.random() < 0.5:
            cond = e
        else:
            cond = "%s %s %s" % (self.paren(e), r.choice(("<", ">", ">=", "==", "!=")), self.scalar("int64"))
        a = e if r.random() < 0.6 else self.scalar()
        b = self.operand_for(v) if not dimmed else self.scalar()
        if b is None:
            b = "0"
        elif b.startswith("."):
            b = self.paren(e) + b
        if r.random() < 0.5:
            a, b = b, a
        return "where(%s, %s, %s)" % (cond, a, b)

    def shape_op(self, e, v):
        r = self.r
        n = v.ndim
        pe = self.paren(e)
        sh = list(v.shape)
        k = r.choice(("reshape", "reshape", "view", "permute", "transpose", "t", "expand", "cat", "stack",
                      "squeeze", "unsqueeze", "flatten", "contiguous", "clone", "T", "view_as", "reshape_as",
                      "ravel", "unflatten", "diagonal", "mT", "type_as", "unfold", "as_strided"))
        if k in ("view_as", "reshape_as"):
            return "%s.%s(zeros(%s))" % (pe, k, ", ".join(map(str, factor(r, v.numel()))))
        if k == "ravel":
            return "%s.ravel()" % pe
        if k == "unflatten":
            if n == 0:
                raise Reject
            d = r.randrange(n)
            sizes = factor(r, sh[d])
            if r.random() < 0.3:
                sizes[r.randrange(len(sizes))] = -1
            return "%s.unflatten(%d, (%s,))" % (pe, r.randrange(-n, n) if r.random() < 0.2 else d,
                                                ", ".join(map(str, sizes)))
        if k == "diagonal":
            if n < 2:
                raise Reject
            a, b = r.sample(range(-n, n) if r.random() < 0.3 else range(n), 2)
            return "%s.diagonal(%d, %d, %d)" % (pe, r.randint(-2, 2), a, b)
        if k == "unfold":
            d = r.randrange(n) if n else 0
            top = sh[d] if n else 1
            size = r.randint(0, top + (1 if r.random() < 0.05 else 0))
            return "%s.unfold(%d, %d, %d)" % (pe, d - n if n and r.random() < 0.2 else d, size, r.randint(1, 3))
        if k == "as_strided":
            # windows over the contiguous values (from their own offset), overlapping or not
            numel = v.numel()
            if numel == 0:
                raise Reject
            rows = r.randint(1, 4)
            step = r.randint(0, 3)
            width = r.randint(1, max(1, min(6, numel - step * (rows - 1))))
            if step * (rows - 1) + width > numel:
                raise Reject
            return "%s.contiguous().as_strided((%d, %d), (%d, 1))" % (pe, rows, width, step)
        if k == "mT":
            if n < 2:
                raise Reject
            return "%s.mT" % pe
        if k == "type_as":
            return "%s.type_as(zeros(1, dtype=%s))" % (pe, r.choice(("float32", "float64", dtype_name(v))))
        if k in ("reshape", "view"):
            numel = v.numel()
            if r.random() < 0.3 or numel == 0:
                new = [-1]
            else:
                new = factor(r, numel)
                if r.random() < 0.3 and new:
                    new[r.randrange(len(new))] = -1
            return "%s.%s(%s)" % (pe, k, ", ".join(map(str, new)))
        if k == "permute":
            p = list(range(n))
            r.shuffle(p)
            return "%s.permute(%s)" % (pe, ", ".join(map(str, p))) if n else "%s.permute()" % pe
        if k == "transpose":
            if n == 0:
                raise Reject
            return "%s.transpose(%d, %d)" % (pe, r.randrange(-n, n), r.randrange(-n, n))
        if k in ("t", "T"):
            if n > 2 or (k == "T" and n != 2):
                raise Reject
            return "%s.%s" % (pe, "t()" if k == "t" else "T")
        if k == "expand":
            new = [s if s != 1 or r.random() < 0.5 else r.randint(2, 3) for s in sh]
            if r.random() < 0.3:
                new = [r.randint(1, 3)] + new
            if r.random() < 0.3 and new:
                new[-1] = -1
            if not new:
                # expand() with no sizes: torch's TypeError, which functorch.dim's patched expand
                # (the shim imports it) accepts: the two peers disagree.
                raise Reject
            return "%s.expand(%s)" % (pe, ", ".join(map(str, new)))
        if k == "cat":
            if n == 0:
                raise Reject
            d = r.randrange(n)
            other = self.cat_partner(e, v, d)
            return "cat([%s, %s], %s)" % (e, other, d if r.random() < 0.7 else "dim=%d" % d)
        if k == "stack":
            d = r.randint(0, n)
            other = r.choice((e, "%s * 2" % pe, "%s + 1" % pe))
            return "stack([%s, %s], %d)" % (e, other, d)
        if k == "squeeze":
            if n and r.random() < 0.5:
                return "%s.squeeze(%d)" % (pe, r.randrange(n))
            return "%s.squeeze()" % pe
        if k == "unsqueeze":
            return "%s.unsqueeze(%d)" % (pe, r.randint(-n - 1, n))
        if k == "flatten":
            if n >= 2 and r.random() < 0.5:
                a = r.randrange(n)
                return "%s.flatten(%d, %d)" % (pe, a, r.randrange(a, n))
            return "%s.flatten()" % pe
        if k == "contiguous":
            return "%s.contiguous()" % pe
        return "%s.clone()" % pe

    def int_literal(self, shape, lo, hi):
        """An int64 tensor literal of that shape with values in [lo, hi)."""
        r = self.r

        def nest(sh):
            if not sh:
                return str(r.randrange(lo, hi))
            return "[" + ", ".join(nest(sh[1:]) for _ in range(sh[0])) + "]"
        return "tensor(%s)" % nest(list(shape))

    def indexed(self, e, v):
        """gather, scatter_add and index_put (with and without accumulate) with literal indices:
        the reads and writes whose gradients are scatters and gathers."""
        r = self.r
        n = v.ndim
        if n == 0 or v.numel() == 0 or v.numel() > 120:
            raise Reject
        pe = self.paren(e)
        sh = list(v.shape)
        d = r.randrange(n)
        k = r.choice(("gather", "gather", "scatter_add", "index_put", "index_put"))
        if k in ("gather", "scatter_add"):
            ish = [r.randint(1, s) for s in sh]
            ish[d] = r.randint(1, sh[d] + 2)
            idx = self.int_literal(ish, 0, sh[d])
            if k == "gather":
                return "%s.gather(%d, %s)" % (pe, d, idx)
            return "%s.scatter_add(%d, %s, %s)" % (pe, d, idx, self.literal(tuple(ish), dtype_name(v)))
        acc = r.random() < 0.6
        m = r.randint(1, sh[0] + 1 if acc else sh[0])
        rows = [r.randrange(-sh[0], sh[0]) for _ in range(m)] if acc else r.sample(range(sh[0]), m)
        idx = "tensor([%s])" % ", ".join(map(str, rows))
        vsh = tuple([m] + sh[1:])
        if r.random() < 0.3 and len(vsh) > 1:
            vsh = vsh[1:]        # broadcast over the indexed rows
        vals = self.literal(vsh, dtype_name(v))
        return "%s.clone().index_put((%s,), %s%s)" % (pe, idx, vals, ", accumulate=True" if acc else "")

    def more(self, e, v):
        """Other differentiable operations: running sums and products, flips, rolls, repeats,
        narrowing, triangles, masked fills, variance, norms, differences, sorts, outer products."""
        r = self.r
        n = v.ndim
        if v.numel() > 4000:
            raise Reject        # (repeat, outer: no huge results)
        pe = self.paren(e)
        fl = v.dtype.is_floating_point
        k = r.choice(("cumsum", "cumprod", "flip", "roll", "repeat", "narrow", "tril", "masked_fill",
                      "var", "std", "norm", "diff", "sort", "topk", "outer", "pow", "atan2", "minimum"))
        d = r.randrange(n) if n else 0
        if k in ("cumsum", "cumprod"):
            if n == 0 or (k == "cumprod" and v.numel() > 32):
                raise Reject
            return "%s.%s(%d)" % (pe, k, d)
        if k == "flip":
            return "%s.flip(%s)" % (pe, ", ".join(str(x) for x in sorted(r.sample(range(n), r.randint(1, n))))) \
                if n else "%s.flip(0)" % pe
        if k == "roll":
            return "%s.roll(%d, %d)" % (pe, r.randint(-3, 3), d) if n else "%s.roll(1)" % pe
        if k == "repeat":
            reps = [r.randint(1, 2) for _ in range(n + r.randint(0, 1))]
            return "%s.repeat(%s)" % (pe, ", ".join(map(str, reps)) or "()")
        if k == "narrow":
            if n == 0 or v.shape[d] == 0:
                raise Reject
            a = r.randrange(v.shape[d])
            return "%s.narrow(%d, %d, %d)" % (pe, d, a, r.randint(0, v.shape[d] - a))
        if k == "tril":
            return "%s.%s(%d)" % (pe, r.choice(("tril", "triu")), r.randint(-1, 1))
        if k == "masked_fill":
            return "%s.masked_fill(%s %s %s, %s)" % (pe, pe, r.choice((">", "<", "==")), self.scalar("int64"),
                                                     self.scalar("float32" if fl else "int64"))
        if k in ("var", "std"):
            if not fl or n == 0:
                raise Reject
            return "%s.%s(%d%s)" % (pe, k, d, r.choice(("", ", keepdim=True", ", unbiased=False")))
        if k == "norm":
            if v.dtype in (torch.float16, torch.bfloat16):
                raise Reject    # (language.md: tdl refuses float16, PyTorch's rounding is its own)
            return "%s.norm()" % pe if r.random() < 0.5 or n == 0 else "%s.norm(dim=%d)" % (pe, d)
        if k == "diff":
            return "%s.diff(dim=%d)" % (pe, d) if n else None
        if k == "sort":
            if n == 0:
                raise Reject
            return "%s.sort(dim=%d%s%s)[%d]" % (pe, d, r.choice(("", ", descending=True")),
                                                r.choice(("", ", stable=True")), r.randint(0, 1))
        if k == "topk":
            if n == 0 or v.shape[d] == 0:
                raise Reject
            return "%s.topk(%d, %d)[0]" % (pe, r.randint(1, v.shape[d]), d)    # (the order of ties' indices is torch's own)
        if k == "outer":
            if n != 1 or v.numel() > 64:
                raise Reject
            return "outer(%s, %s)" % (e, r.choice((e, "%s + 1" % pe, "%s * 2" % pe)))
        if k == "pow":
            return "%s.pow(%s)" % (pe, r.choice(("2", "3", "0.5", "-1", "2.5", "0")))
        if k == "atan2":
            if not fl:
                raise Reject
            return "atan2(%s, %s + 1)" % (e, pe)
        other = self.operand_for(v)
        if other is None or other.startswith(".") or other[0] in "-0123456789TF":
            raise Reject        # (tdl takes a number for a tensor, torch's minimum does not: language.md)
        return "%s(%s, %s)" % (r.choice(("minimum", "maximum")), e, other)

    def newer(self, e, v):
        """The operators of 2026-11 (language.md): lerp, addcmul, addcdiv, add/sub with an alpha (FMAs
        as PyTorch's AVX2 kernels), masked_select, rot90, diag, diag_embed, trace, kthvalue, median,
        nanmedian, mode, msort, cummax, cummin, nansum, nanmean, aminmax, scatter, index_add,
        index_copy, take, take_along_dim, tensor_split, repeat_interleave."""
        r = self.r
        n = v.ndim
        if v.numel() > 2000:
            raise Reject
        pe = self.paren(e)
        fl = v.dtype.is_floating_point
        sh = list(v.shape)
        d = r.randrange(n) if n else 0
        k = r.choice(("lerp", "addcmul", "addcdiv", "alpha", "masked_select", "rot90", "diag", "diag_embed",
                      "trace", "kthvalue", "median", "mode", "msort", "cummax", "nansum", "aminmax", "scatter",
                      "index_add", "take", "take_along_dim", "tensor_split", "repeat_interleave"))
        if k == "lerp":
            if not fl or v.dtype == torch.float16:
                raise Reject
            w = r.choice(("0.3", "0.7", "-0.4", "1.5", "0.5")) if r.random() < 0.6 else "%s * 0.1" % pe
            return "lerp(%s, %s, %s)" % (e, r.choice(("%s * 2 - 1" % pe, "%s.flip(-1)" % pe if n else e)), w)
        if k in ("addcmul", "addcdiv"):
            if v.dtype in (torch.float16, torch.bool) or (k == "addcdiv" and not fl):
                raise Reject
            t2 = "%s + 3" % pe if k == "addcmul" else "(%s.abs() + 0.5)" % pe
            val = r.choice(("", ", value=0.3", ", value=-2", ", value=1.7")) if fl else r.choice(("", ", value=2"))
            return "%s(%s, %s * 0.5 - 1, %s%s)" % (k, e, pe, t2, val)
        if k == "alpha":
            if v.dtype == torch.bool:
                raise Reject
            a = r.choice(("0.3", "-1.7", "2.5")) if fl else r.choice(("2", "-3"))
            return "%s.%s(%s, alpha=%s)" % (pe, r.choice(("add", "sub")), r.choice(("%s * 0.7" % pe, "1.25" if fl else "3")), a)
        if k == "masked_select":
            return "%s.masked_select(%s %s %s)" % (pe, pe, r.choice((">", "<", "!=")), self.scalar("int64"))
        if k == "rot90":
            if n < 2:
                raise Reject
            a, b = r.sample(range(n), 2)
            return "%s.rot90(%d, [%d, %d])" % (pe, r.randint(-2, 5), a, b)
        if k == "diag":
            if n not in (1, 2) or v.numel() > 200:
                raise Reject
            return "%s.diag(%d)" % (pe, r.randint(-2, 2))
        if k == "diag_embed":
            if v.numel() > 200:
                raise Reject
            return "%s.diag_embed(%d)" % (pe, r.randint(-1, 1))
        if k == "trace":
            if n != 2 or v.dtype in (torch.bool, torch.float16) or (v.requires_grad and sh[0] > sh[1] + 1):
                raise Reject    # (language.md: torch 1.13's trace backward fills below the diagonal)
            return "%s.trace()" % pe
        if k in ("kthvalue", "median", "mode", "cummax"):
            if n == 0 or v.shape[d] == 0 or v.dtype in (torch.bool, torch.float16):
                raise Reject
            if k == "kthvalue":
                return "%s.kthvalue(%d, %d)[%d]" % (pe, r.randint(1, v.shape[d]), d, r.randint(0, 1))
            if k == "median":
                if r.random() < 0.3 and not v.requires_grad:
                    return "%s.%s()" % (pe, r.choice(("median", "nanmedian")))
                return "%s.%s(%d)[%d]" % (pe, r.choice(("median", "nanmedian")), d, r.randint(0, 1))
            if k == "cummax":
                return "%s.%s(%d)[%d]" % (pe, r.choice(("cummax", "cummin")), d, r.randint(0, 1))
            return "%s.mode(%d)[%d]" % (pe, d, r.randint(0, 1))
        if k == "msort":
            if n == 0:
                raise Reject
            return "msort(%s)" % e
        if k == "nansum":
            if v.requires_grad:
                raise Reject    # (language.md: the gradient at a NaN is +0 where torch's may be -0)
            f = "nanmean" if fl and r.random() < 0.5 else "nansum"
            return "%s.%s(%s)" % (pe, f, "" if n == 0 or r.random() < 0.4 else d)
        if k == "aminmax":
            if v.requires_grad or v.numel() == 0:
                raise Reject    # (torch 1.13 has no derivative for aminmax)
            return "%s.aminmax(%s)[%d]" % (pe, "" if n == 0 else "dim=%d" % d, r.randint(0, 1))
        if n == 0 or v.numel() == 0 or v.numel() > 120:
            raise Reject
        if k == "scatter":
            ish = [r.randint(1, x) for x in sh]
            idx = self.int_literal(ish, 0, sh[d])
            if r.random() < 0.4:
                return "%s.scatter(%d, %s, %s)" % (pe, d, idx, self.scalar("float32" if fl else "int64"))
            return "%s.scatter(%d, %s, %s)" % (pe, d, idx, self.literal(tuple(ish), dtype_name(v)))
        if k == "index_add":
            m = r.randint(1, sh[d] + 1)
            rows = "tensor([%s])" % ", ".join(str(r.randrange(sh[d])) for _ in range(m))
            ssh = list(sh)
            ssh[d] = m
            f = r.choice(("index_add", "index_copy"))
            alpha = ", alpha=2" if f == "index_add" and r.random() < 0.3 and v.dtype != torch.bool else ""
            return "%s.%s(%d, %s, %s%s)" % (pe, f, d, rows, self.literal(tuple(ssh), dtype_name(v)), alpha)
        if k == "take":
            m = v.numel()
            return "%s.take(%s)" % (pe, self.int_literal([r.randint(0, 6)], -m, m))
        if k == "take_along_dim":
            ish = list(sh)
            ish[d] = r.randint(0, sh[d] + 1)
            return "%s.take_along_dim(%s, %d)" % (pe, self.int_literal(ish, 0, sh[d]), d)
        if k == "tensor_split":
            arg = str(r.randint(1, 4)) if r.random() < 0.5 else "[%s]" % ", ".join(
                str(x) for x in sorted(r.randint(0, sh[d] + 1) for _ in range(r.randint(1, 3))))
            return "%s.tensor_split(%s, %d)[%d]" % (pe, arg, d, 0)
        reps = str(r.randint(0, 3)) if r.random() < 0.5 else self.int_literal([sh[d]], 0, 3)
        return "%s.repeat_interleave(%s, dim=%d)" % (pe, reps, d)

    def cat_partner(self, e, v, d):
        r = self.r
        pe = self.paren(e)
        if r.random() < 0.5:
            return r.choice((e, "%s * 2" % pe, "-%s" % pe))
        sh = list(v.shape)
        sh[d] = r.choice((0, 1, 2))
        dt = dtype_name(v) if r.random() < 0.8 else r.choice(DTYPES)
        return self.literal(tuple(sh), dt)

    def index_item(self, size):
        r = self.r
        c = r.random()
        if c < 0.25:
            if size == 0:
                return ":"
            return str(r.randrange(-size, size))
        if c < 0.55:
            a = r.choice(("", str(r.randint(-size - 1, size))))
            b = r.choice(("", str(r.randint(-size - 1, size + 1))))
            s = r.choice(("", "", ":2", ":3", ":1"))
            return "%s:%s%s" % (a, b, s)
        if c < 0.7:
            if size == 0:
                return "tensor([], dtype=int64)"
            k = r.randint(1, 4)
            vals = [r.randrange(-size, size) for _ in range(k)]
            if r.random() < 0.3:
                return "[%s]" % ", ".join(map(str, vals)) if k > 1 else "tensor(%s)" % vals[0]
            if r.random() < 0.2 and k >= 2:
                return "tensor([[%s], [%s]])" % (vals[0], vals[1])
            return "tensor([%s])" % ", ".join(map(str, vals))
        if c < 0.8:
            return "tensor([%s])" % ", ".join(r.choice(("True", "False")) for _ in range(size))
        return ":"

    def index_expr(self, v):
        """An index for a value of v's shape: text inside the brackets."""
        r = self.r
        n = v.ndim
        if n > 0 and r.random() < 0.1 and v.numel() > 0:
            return "mask"
        items = []
        k = r.randint(1, max(1, n))
        dims_left = list(v.shape)
        ell = False
        i = 0
        while i < k and dims_left:
            c = r.random()
            if c < 0.1:
                items.append("None")
                continue
            if c < 0.18 and not ell:
                ell = True
                items.append("...")
                # the ellipsis stands for the middle: index the last dims next
                dims_left = dims_left[-(k - i - 1):] if k - i - 1 > 0 else []
                continue
            items.append(self.index_item(dims_left.pop(0)))
            i += 1
        if not items:
            items = ["None"] if r.random() < 0.5 else ["..."]
        if len(items) == 1 and r.random() < 0.8:
            return items[0]
        return ", ".join(items)

    def index(self, e, v):
        r = self.r
        ix = self.index_expr(v)
        pe = self.paren(e)
        if ix == "mask":
            return "%s[%s %s %s]" % (pe, pe, r.choice((">", "<", "!=")), self.scalar("int64"))
        return "%s[%s]" % (pe, ix)

    def matmul(self, e, v):
        r = self.r
        pe = self.paren(e)
        n = v.ndim
        if n == 0 or v.dtype == torch.bool:
            # torch has no bool matmul, but skips its dtype checks when an operand is empty
            raise Reject
        if v.dtype == torch.bfloat16 and v.numel() > 1000:
            raise Reject    # which kernel torch takes depends on the CPU (docs/language.md)
        c = r.random()
        rows, cols = (v.shape[-2], v.shape[-1]) if n >= 2 else (1, 1)
        if c < 0.3 and n >= 2 and rows * rows * v.numel() // max(rows * cols, 1) <= 1 << 20:
            return "%s @ %s.transpose(-1, -2)" % (pe, pe)
        if c < 0.45 and n >= 2 and cols * cols * v.numel() // max(rows * cols, 1) <= 1 << 20:
            # (not a product of a few long rows: [2, 20000].T @ itself is 3.2 GB)
            return "%s.transpose(-1, -2) @ %s" % (pe, pe)
        if c < 0.55 and n == 1:
            return "%s @ %s" % (pe, pe)
        # a literal right operand of matching inner size
        k = v.shape[-1]
        m = r.choice((1, 2, 3))
        dt = dtype_name(v)     # torch refuses mixed dtypes, but not when a side is empty
        if r.random() < 0.2:
            return "%s @ %s" % (pe, self.literal((k,), dt))
        if r.random() < 0.2 and n >= 2:
            return "matmul(%s, %s)" % (e, self.literal((2, k, m) if n == 2 else (k, m), dt))
        return "%s @ %s" % (pe, self.literal((k, m), dt))

    def bad(self):
        """A statement that is likely an error (torch decides): an index or dim out of range, a
        shape that does not fit, a dim bound to a second size, a value of many elements as one."""
        r = self.r
        cands = self.plain_vars()
        if not cands:
            return
        x = r.choice(cands)
        v = self.val(x)
        n, sh = v.ndim, list(v.shape)
        k = r.choice(("index", "dim", "reshape", "broadcast", "cat", "matmul", "item", "rebind",
                      "index_tensor", "setitem"))
        if k == "index" and n:
            d = r.randrange(n)
            e = "%s[%s%d]" % (x, ":, " * d, r.choice((sh[d], -sh[d] - 1, sh[d] + 2)))
        elif k == "dim":
            e = "%s.%s(%d)" % (x, r.choice(("sum", "amax", "softmax", "unsqueeze", "squeeze", "flatten")),
                               r.choice((n + 1, -n - 2, n)))
        elif k == "reshape":
            e = "%s.reshape(%d, -1)" % (x, v.numel() + 1) if v.numel() else "%s.reshape(-1, 0)" % x
        elif k == "broadcast" and n:
            bad = list(sh)
            bad[-1] = sh[-1] + 1
            e = "%s + %s" % (x, self.literal(tuple(bad), dtype_name(v)))
        elif k == "cat" and n:
            bad = list(sh)
            d = r.randrange(n)
            bad[(d + 1) % n] += 1
            e = "cat([%s, %s], %d)" % (x, self.literal(tuple(bad), dtype_name(v)), d)
        elif k == "matmul" and n:
            e = "%s @ %s" % (x, self.literal((sh[-1] + 1, 2), dtype_name(v)))
        elif k == "item":
            e = "%s.item()" % x
        elif k == "rebind" and self.dims and n:
            d = r.choice(self.dims)
            if not self.ns[d].is_bound:
                return
            e = "%s[%s]" % (x, d)
        elif k == "index_tensor" and n:
            e = "%s[tensor([0, %d])]" % (x, sh[0] + r.randint(0, 3))
        elif k == "setitem" and n:
            stmt = "%s[%s] = %s" % (x, r.choice(("0", "::2", "..., 0")), self.literal((sh[-1] + 2,), dtype_name(v)))
            err = self.run(stmt)
            if err is not None and self.comparable(err):
                self.lines.append(stmt)
                self.done = True
            return
        else:
            return
        self.finish_error(e)

    # ---- first-class dims -------------------------------------------------------------------------

    def contraction(self):
        """A matrix product written with dims, `(A[i, k] * B[k, j]).sum(k)` (tdl runs it as a
        matmul), or an outer product reduced over one of its dims, then maybe ordered back."""
        r = self.r
        cands = self.plain_vars(lambda t: t.ndim == 2 and t.dtype.is_floating_point)
        free = [d for d in DIM_NAMES if d not in self.dims]
        if not cands or len(free) < 3:
            return
        a = r.choice(cands)
        p, q = self.val(a).shape
        i, j, k = free[:3]
        if not self.emit("%s, %s, %s = dims(3)" % (i, j, k), intended_error_ok=False):
            return
        self.dims += [i, j, k]
        b = self.literal((q, r.choice((1, 2, 3))), dtype_name(self.val(a)))
        if r.random() < 0.7:
            e = "(%s[%s, %s] * %s[%s, %s]).sum(%s)" % (a, i, k, b, k, j, k)
            ds = [i, j]
        else:
            e = "(%s[%s] * %s[%s]).%s(%s)" % (a, i, b, j, r.choice(("sum", "amax", "mean")), j)
            ds = [i]
        if r.random() < 0.6:
            r.shuffle(ds)
            e = "%s.order(%s)" % (e, ", ".join(ds))
        name = self.fresh()
        if self.emit("%s = %s" % (name, e)) and not self.done:
            self.vars.append(name)

    def make_dims(self):
        free = [d for d in DIM_NAMES if d not in self.dims]
        if not free:
            return
        k = min(len(free), self.r.choice((1, 2, 2, 3)))
        names = free[:k]
        stmt = ("%s = dims()" % names[0]) if k == 1 else "%s = dims(%d)" % (", ".join(names), k)
        if self.emit(stmt, intended_error_ok=False):
            self.dims += names

    def dim_index(self, e, v):
        """A positional tensor indexed with dims (maybe mixed with ints and slices)."""
        r = self.r
        n = v.ndim
        items = []
        used = []
        k = r.randint(1, n)
        for p in range(k):
            size = v.shape[p]
            c = r.random()
            if c < 0.65 or p == 0:
                free = [d for d in self.dims if d not in used]
                if not free:
                    break
                d = r.choice(free)
                used.append(d)
                items.append(d)
            elif c < 0.8 and size > 0:
                items.append(str(r.randrange(size)))
            else:
                items.append(r.choice((":", "1:", ":2", "::2")))
        if not used:
            raise Reject
        if r.random() < 0.15 and k < n:
            items = ["..."] + items[-1:]
        return "%s[%s]" % (self.paren(e), ", ".join(items))

    def dims_of(self, v):
        return [str(d) for d in v.dims] if self.is_dimmed(v) else []

    def dim_reduce(self, e, v):
        r = self.r
        ds = self.dims_of(v)
        pe = self.paren(e)
        fl = v.dtype.is_floating_point
        fns = ["sum", "amax", "amin", "prod", "argmax", "max", "any", "all"]
        if fl:
            fns += ["mean", "softmax", "logsumexp", "sum", "softmax"]
        f = r.choice(fns)
        if r.random() < 0.15 and v.ndim > 0 and f not in ("softmax",):
            return "%s.%s(0)" % (pe, f) + ("[0]" if f == "max" else "")
        if not ds:
            raise Reject
        if f in ("sum", "amax", "amin", "mean", "prod", "logsumexp") and len(ds) >= 2 and r.random() < 0.4:
            arg = "(%s)" % ", ".join(r.sample(ds, r.randint(2, len(ds))))
        else:
            arg = r.choice(ds)
        if f == "softmax":
            return "softmax(%s, dim=%s)" % (e, arg)
        if f == "max":
            return "%s.max(%s)[%d]" % (pe, arg, r.randint(0, 1))
        return "%s.%s(%s)" % (pe, f, arg)

    def dim_pointwise(self, e, v):
        """e combined with another tensor with dims, or with a dim used as its index value."""
        r = self.r
        others = [n for n in self.dim_vars() if self.val(n).ndim in (v.ndim, 0)]
        ds = [d for d in self.dims if self.ns[d].is_bound]
        if others and r.random() < 0.6:
            o = r.choice(others)
        elif ds:
            o = "%s%s" % (r.choice(ds), r.choice(("", " * 2", " + 1")))
        else:
            raise Reject
        return "%s %s %s" % (self.paren(e), r.choice(("+", "*", "-", "<", "/")), self.paren(o))

    def order(self, e, v):
        r = self.r
        ds = self.dims_of(v)
        if not ds:
            raise Reject
        if v.ndim > 0 and r.random() < 0.3:
            raise Reject
        r.shuffle(ds)
        k = r.randint(1, len(ds))
        return "%s.order(%s)" % (self.paren(e), ", ".join(ds[:k]))

    # ---- writes ---------------------------------------------------------------------------------

    def setitem(self):
        r = self.r
        cands = self.plain_vars(lambda t: t.ndim > 0)
        if not cands:
            return
        x = r.choice(cands)
        v = self.val(x)
        ix = self.index_expr(v)
        if ix == "mask":
            ix = "%s %s %s" % (x, r.choice((">", "<")), self.scalar("int64"))
        tgt = self.eval("%s[%s]" % (x, ix))
        if isinstance(tgt, Exception):
            self.emit("%s[%s] = %s" % (x, ix, self.scalar()))
            return
        c = r.random()
        if c < 0.35:
            rhs = self.scalar(dtype_name(v) if r.random() < 0.7 else None)
        elif c < 0.7:
            sh = list(tgt.shape)
            sh = sh[r.randint(0, len(sh)):] if sh else sh
            sh = [1 if r.random() < 0.2 else s for s in sh]
            dt = dtype_name(v) if r.random() < 0.8 else r.choice(DTYPES)
            rhs = self.literal(tuple(sh), dt)
        else:
            def fits(u):
                try:
                    return torch.broadcast_shapes(u.shape, tgt.shape) == tgt.shape
                except RuntimeError:
                    return False
            vs = self.plain_vars(fits)
            if not v.dtype.is_floating_point:
                # torch gives an int or bool tensor written from one that requires grad a grad_fn
                # (CopySlices), tdl none: no gradient flows into such a tensor either way
                vs = [w for w in vs if not self.val(w).requires_grad]
            if not vs:
                rhs = self.scalar()
            else:
                w = r.choice(vs)
                rhs = r.choice((w, "%s * 2" % w, "%s.sum() + 0" % w, "%s + 1" % w))
        op = "+=" if r.random() < 0.3 else "="
        self.emit("%s[%s] %s %s" % (x, ix, op, rhs))

    def view_alias(self):
        """w = a view of x, so that later writes through either show in both."""
        cands = self.plain_vars(lambda t: t.ndim > 0)
        if not cands:
            return
        x = self.r.choice(cands)
        v = self.val(x)
        items = []
        for s in v.shape:
            items.append(self.r.choice((":", "1:", "::2", ":-1", str(self.r.randrange(s)) if s else ":")))
        k = self.r.randint(1, len(items))
        e = "%s[%s]" % (x, ", ".join(items[:k]))
        if self.r.random() < 0.3 and v.ndim >= 2:
            e = "%s.transpose(0, 1)" % x
        name = self.fresh()
        if self.emit("%s = %s" % (name, e), intended_error_ok=False):
            self.vars.append(name)

    # ---- printing -------------------------------------------------------------------------------

    def print_var(self, name):
        v = self.val(name)
        self.printed.add(name)
        self.lines.append("print(%s)" % name)
        if isinstance(v, torch.Tensor) and 0 < v.numel() <= 64 and v.dtype.is_floating_point:
            self.lines.append("print(%s.tolist())" % name)
        if isinstance(v, torch.Tensor) and v.numel() > 1000 and self.r.random() < 0.7:
            red = "sum" if v.dtype != torch.bool else "any"
            self.lines.append("print(%s.%s(), %s[0])" % (name, red, name))

    # ---- gradients ------------------------------------------------------------------------------

    def weights(self, v):
        """Weights for a weighted sum of v: a literal of its shape and dtype (an arange form when
        large), so that each element's gradient differs."""
        if v.numel() <= 120:
            return self.literal(tuple(v.shape), dtype_name(v))
        mod = self.r.choice((3, 5, 7))
        return "((arange(%d) %% %d - %d).to(%s).reshape(%s))" % (
            v.numel(), mod, mod // 2, dtype_name(v), ", ".join(map(str, v.shape)) or "()")

    def backward(self):
        """The end of a gradient program: loss = a weighted sum of a value that requires grad,
        its gradient with respect to the leaves (backward() or grad()), and the gradients printed."""
        r = self.r
        outs = self.plain_vars(lambda t: t.requires_grad and t.dtype in (torch.float32, torch.float64))
        if not outs or not self.leaves:
            return
        out = r.choice(outs[-3:])
        v = self.val(out)
        loss = self.fresh()
        e = "%s.sum()" % out if r.random() < 0.2 else "(%s * %s).sum()" % (out, self.weights(v))
        if not self.emit("%s = %s" % (loss, e)) or self.done:
            return
        if r.random() < 0.75:
            if not self.emit("%s.backward()" % loss) or self.done:
                return
            for leaf in self.leaves:
                self.print_grad("%s.grad" % leaf)
        else:
            g = self.fresh()
            if not self.emit("%s = grad(%s, [%s])" % (g, loss, ", ".join(self.leaves))) or self.done:
                return
            for k in range(len(self.leaves)):
                self.print_grad("%s[%d]" % (g, k))

    def print_grad(self, e):
        g = self.eval(e)
        self.lines.append("print(%s)" % e)
        if isinstance(g, torch.Tensor) and 0 < g.numel() <= 64:
            self.lines.append("print(%s.tolist())" % e)

    # ---- the program ----------------------------------------------------------------------------

    def program(self):
        r = self.r
        for _ in range(r.randint(1, 3)):
            self.base()
        if r.random() < 0.25:
            self.make_dims()
        nstmt = r.randint(3, 10)
        for _ in range(nstmt):
            if self.done:
                break
            c = r.random()
            if c < 0.55:
                self.assign()
            elif c < 0.68:
                self.setitem()
            elif c < 0.74:
                self.view_alias()
            elif c < 0.82:
                self.base()
            elif c < 0.85:
                self.make_dims()
            elif c < 0.87:
                self.contraction()
            elif c < 0.91 and self.allow_error:
                self.bad()
            elif self.vars:
                self.print_var(r.choice(self.vars[-3:]))
        if self.grad and not self.done:
            self.backward()
        if not self.done:
            last = [n for n in self.vars[-3:]]
            rest = [n for n in self.vars if n not in self.printed and n not in last and r.random() < 0.4]
            for n in rest + last:
                self.print_var(n)
        else:
            if self.vars and r.random() < 0.5:
                self.lines.append("print(%s)" % self.vars[-1])
        return self.lines


def factor(r, numel):
    """A random shape with numel elements (rank 1 to 4)."""
    out = []
    left = numel
    for _ in range(r.randint(0, 3)):
        ds = [d for d in range(1, left + 1) if left % d == 0]
        d = r.choice(ds)
        out.append(d)
        left //= d
    out.append(left)
    r.shuffle(out)
    return out


def generate(rng, allow_error=True):
    """The lines of one random program (run in a forked child: see the module's docstring)."""
    big = rng.random() < 0.12
    grad = rng.random() < 0.35
    if grad and rng.random() < 0.6:
        allow_error = False     # most gradient programs run to their backward
    g = Gen(rng, allow_error=allow_error, big=big, grad=grad)
    return g.program()


def generate_seeded(seed):
    """generate() with random.Random(seed)."""
    import random
    return generate(random.Random(seed))
