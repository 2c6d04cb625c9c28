#!/usr/bin/python3
"""run.py — the differential tester against PyTorch (`make fuzz-torch`).

usage: /usr/bin/python3 tests/fuzz_torch/run.py [-n N] [--seed S] [--tdl build/tdl]
                                                 [--found DIR] [--max-minimise K] [-v]

Generates N random tdl programs (gen.py) that are also valid under tests/torch_shim.py, runs
each under PyTorch (through the shim: torch's names without `torch.`, printing as tdl prints;
first-class dims through functorch.dim) and under tdl three ways: TDL_NUM_THREADS=1,
TDL_NUM_THREADS=2, and TDL_NUM_THREADS=1 with --no-opt=fuse. Then it compares:
  - stdout: equal text passes; otherwise the two outputs are split into numbers and the text
    between them: the text must be equal but for whitespace, integers (no '.', no
    exponent) equal, and floats equal within tolerance (|a-b| <= 1e-5 * max(|a|, |b|) + one
    unit of the last printed digit, at least 1e-5: tdl accumulates float sums in double, torch
    in float, so sums of non-integer floats may differ in the last bits; every program also
    prints small float tensors in full through tolist()). Such a program passes "approx".
    Whether a printed tensor requires grad is compared, not how: `grad_fn=<...>` and
    `requires_grad=True` read the same (tdl names the grad_fn of every view AsStridedBackward0 and
    of a product SumBackward0, and takes a view with its leaf's shape and strides, such as x.T of
    a 1x1 x, for that leaf).
  - errors: when torch raises, tdl must fail with the same error kind (the exception's class
    name, tdl's `Kind:` on its last stderr line) after printing the same output; when torch does
    not raise, tdl must not fail. A tdl that dies by a signal, exits with another status or runs
    past the time limit fails.
  - threads: tdl's outputs at one and two threads must be the same text (tdl promises the same
    bits at every thread count).
Each failing program is minimised (statements removed, then sub-expressions put in the place
of their expressions, tensor literals shrunk) while it still fails the same way on the same
variant, and written as DIR/fuzz_torch_NNN.tdl (a `# torch-diff` script; to make it a script
test, move it into tests/scripts and run `sh tests/run_scripts.sh --torch build/tdl NAME`), with
DIR/fuzz_torch_NNN.txt holding torch's and tdl's outputs and DIR/fuzz_torch_NNN.out torch's
output (when torch does not raise). A minimised program equal to an
earlier one (or with the same operations and the same failure) counts as the same finding.

Programs run under torch in forked children of this process (torch imported once), each from
the same state; a child that crashes or hangs (functorch.dim aborts on a few inputs) is
skipped, as is a program whose backward tdl refuses where torch does not ("modified by an inplace
operation": tdl reads again a value that torch saved; docs/language.md). Program i of seed S is the same on every run: `--seed S --only i --show` reruns it and
prints it with both outputs. Ctrl-C (or SIGTERM) stops the run and prints the summary so far.

Judging: a float result that is within tolerance can still feed an operation that is not
continuous (floor, //, %, a comparison, argmax of a tie), and then differ by a whole step; the
generator keeps most values integers (small integer-valued float literals) so that this is rare,
but a reproducer whose inputs are not exact (softmax, mean, exp, 0.1) should be read with that
in mind.
"""
import argparse
import ast
import contextlib
import io
import os
import pickle
import re
import select
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))   # tests/, for torch_shim
sys.path.insert(0, HERE)

import torch  # noqa: E402

import torch_shim  # noqa: E402
import gen  # noqa: E402

TORCH_TIMEOUT_S = 30
TDL_TIMEOUT_S = 30
VARIANTS = (
    ("t1", {"TDL_NUM_THREADS": "1"}, []),
    ("t2", {"TDL_NUM_THREADS": "2"}, []),
    ("nofuse", {"TDL_NUM_THREADS": "1"}, ["--no-opt=fuse"]),
)


# ---- running in a forked child ----------------------------------------------------------------

def in_child(fn, timeout):
    """fn() in a forked child: ('ok', result), ('crash', wait status) or ('timeout',)."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rd)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            data = pickle.dumps(fn())
            while data:
                data = data[os.write(wr, data):]
        finally:
            os._exit(0)
    os.close(wr)
    chunks, deadline = [], time.monotonic() + timeout
    while True:
        ready, _, _ = select.select([rd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(rd)
            return ("timeout",)
        chunk = os.read(rd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(rd)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not chunks:
        return ("crash", status)
    return ("ok", pickle.loads(b"".join(chunks)))


def _read_exact(fd, n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _send(fd, obj):
    data = pickle.dumps(obj)
    data = len(data).to_bytes(8, "little") + data
    while data:
        data = data[os.write(fd, data):]


def _recv(fd):
    return pickle.loads(_read_exact(fd, int.from_bytes(_read_exact(fd, 8), "little")))


class Zygote:
    """A child of this process that has imported functorch.dim once (half a second) and forks a
    grandchild per call: the generator runs there. Programs themselves run in children of this
    process, which never loads functorch.dim: once loaded, its C part changes torch's indexing
    (and reloads its Python part, which patches torch.Tensor's expand, index and split), while
    the shim loads it on a program's first dims(), so that the lines before see torch alone."""

    def __init__(self):
        self.pid = None

    def _start(self):
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(w1)
                os.close(r2)
                import functorch.dim  # noqa: F401 - loaded once for the generator
                while True:
                    try:
                        fn, args, timeout = _recv(r1)
                    except EOFError:
                        break
                    _send(w2, in_child(lambda: fn(*args), timeout))
            finally:
                os._exit(0)
        os.close(r1)
        os.close(w2)
        self.pid, self.wr, self.rd = pid, w1, r2

    def call(self, fn, args, timeout):
        """in_child(lambda: fn(*args), timeout), run from the zygote."""
        if self.pid is None:
            self._start()
        try:
            _send(self.wr, (fn, args, timeout))
            return _recv(self.rd)
        except (EOFError, OSError):
            self.close()
            return ("crash", -1)

    def close(self):
        if self.pid is not None:
            os.close(self.wr)
            os.close(self.rd)
            os.waitpid(self.pid, 0)
            self.pid = None


ZYGOTE = Zygote()


def torch_run_here(src):
    """(stdout, error kind or None, error message) of src under the shim, in this process."""
    torch_shim.register_source(gen.FILENAME, src)
    ns = torch_shim.namespace(gen.FILENAME, [])
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(src, gen.FILENAME, "exec"), ns)
    except Exception as e:  # noqa: BLE001 - the error is the result
        return (buf.getvalue(), type(e).__name__, str(e).strip().split("\n")[0])
    return (buf.getvalue(), None, "")


def torch_run(src):
    """torch_run_here in a child: the triple, or None when torch crashes or hangs."""
    r = in_child(lambda: torch_run_here(src), TORCH_TIMEOUT_S)
    return r[1] if r[0] == "ok" else None


ERR_LINE = re.compile(r"^\S+:\d+:\d+: ([A-Za-z_]\w*): (.*)$")


def tdl_run(tdl, path, variant):
    """(stdout, error kind or None, message, problem or None) of tdl on path."""
    name, env_add, flags = variant
    env = dict(os.environ)
    env.update(env_add)
    try:
        p = subprocess.run([tdl] + flags + [os.path.basename(path)], cwd=os.path.dirname(path),
                           env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=TDL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return ("", None, "", "timeout (%d s)" % TDL_TIMEOUT_S)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode == 0:
        if err.strip() and "Warning" not in err:
            return (out, None, "", "exit 0 with stderr: " + err.strip()[-300:])
        return (out, None, "", None)
    if p.returncode < 0:
        return (out, None, "", "killed by signal %d: %s" % (-p.returncode, err.strip()[-300:]))
    last = err.strip().split("\n")[-1] if err.strip() else ""
    m = ERR_LINE.match(last)
    if p.returncode != 1 or not m:
        return (out, None, "", "exit %d: %s" % (p.returncode, err.strip()[-300:]))
    return (out, m.group(1), m.group(2), None)


# ---- comparing outputs --------------------------------------------------------------------------

NUM = re.compile(r"-?(?:\d+\.?\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?|inf|nan)")


def _tokens(s):
    s = re.sub(r"\s+", " ", s).strip()
    out, pos = [], 0
    for m in NUM.finditer(s):
        out.append(("t", s[pos:m.start()]))
        out.append(("n", m.group()))
        pos = m.end()
    out.append(("t", s[pos:]))
    return out


def _num_close(a, b):
    if a == b:
        return True
    if "." not in a + b and "e" not in a + b and "inf" not in a + b and "nan" not in a + b:
        return False    # integers: exact
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if x != x or y != y:
        return x != x and y != y
    if x in (float("inf"), float("-inf")) or y in (float("inf"), float("-inf")):
        return x == y
    ulp = 0.0
    for t in (a, b):
        mant = t.split("e")[0]
        if "." in mant:
            dec = len(mant.split(".")[1])
            e = int(t.split("e")[1]) if "e" in t else 0
            ulp = max(ulp, 10.0 ** (e - dec) if dec else 10.0 ** e)
    return abs(x - y) <= 1e-5 * max(abs(x), abs(y)) + max(ulp, 1e-5)


GRAD_MARK = re.compile(r"grad_fn=<\w+>|requires_grad=True")


def compare_text(want, got):
    """'exact', 'approx' or None (different)."""
    if want == got:
        return "exact"
    want, got = GRAD_MARK.sub("grad", want), GRAD_MARK.sub("grad", got)
    if want == got:
        return "exact"
    a, b = _tokens(want), _tokens(got)
    if len(a) != len(b):
        return None
    for (ka, va), (kb, vb) in zip(a, b):
        if ka != kb:
            return None
        if ka == "t" and va.replace(" ", "") != vb.replace(" ", ""):
            return None     # (a sign's column is a space in a positive number's place)
        if ka == "n" and not _num_close(va, vb):
            return None
    return "approx"


def judge(src, tdl, tmpdir, variants=VARIANTS):
    """Runs src under torch and tdl: (verdict, details). verdict: 'exact', 'approx', 'skip'
    (torch crashes or hangs on it, or tdl refuses a backward where torch saved the value it reads
    again) or a failure signature ('class:variant,...')."""
    t = torch_run(src)
    if t is None:
        return "skip", {}
    path = os.path.join(tmpdir, gen.FILENAME)
    with open(path, "w") as f:
        f.write(src)
    res = {v[0]: tdl_run(tdl, path, v) for v in variants}
    details = {"torch": t, "tdl": res}
    if t[1] is None and any("modified by an inplace operation" in r[2] for r in res.values()):
        return "skip", details  # a refusal documented in language.md (gen.NOT_COMPARABLE)
    fails = []
    worst = "exact"
    tout, tkind, tmsg = t
    for name, (out, kind, msg, problem) in res.items():
        if problem:
            fails.append(("crash", name))
            continue
        if tkind is None and kind is not None:
            fails.append(("tdl-raises", name))
            continue
        if tkind is not None and kind is None:
            fails.append(("tdl-no-error", name))
            continue
        if tkind is not None and kind != tkind:
            fails.append(("error-kind", name))
            continue
        c = compare_text(tout, out)
        if c is None:
            fails.append(("output", name))
        elif c == "approx":
            worst = "approx"
    if "t1" in res and "t2" in res and not res["t1"][3] and not res["t2"][3]:
        if res["t1"][:2] != res["t2"][:2]:
            fails.append(("threads", "t2"))
    if fails:
        classes = sorted(set(c for c, _ in fails))
        return "%s:%s" % ("+".join(classes), ",".join(sorted(set(v for _, v in fails)))), details
    return worst, details


# ---- minimising ---------------------------------------------------------------------------------

def _children(node):
    """Expressions that may stand in node's place."""
    out = []
    if isinstance(node, ast.BinOp):
        out += [node.left, node.right]
    elif isinstance(node, ast.UnaryOp):
        out.append(node.operand)
    elif isinstance(node, ast.Compare):
        out += [node.left] + list(node.comparators)
    elif isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            out.append(node.func.value)
        out += [a for a in node.args if not isinstance(a, (ast.Constant, ast.List, ast.Tuple))
                or isinstance(a, ast.List)]
    elif isinstance(node, ast.Subscript):
        out.append(node.value)
    elif isinstance(node, ast.Attribute) and node.attr == "T":
        out.append(node.value)
    return out


def _list_depth_shape(node):
    """The shape of a rectangular nested ast.List of constants, or None."""
    if not isinstance(node, ast.List):
        return ()
    if not node.elts:
        return (0,)
    subs = [_list_depth_shape(e) for e in node.elts]
    if any(s is None for s in subs) or len(set(subs)) != 1:
        return None
    return (len(node.elts),) + subs[0]


def _drop_along(node, axis, k):
    """node (a nested ast.List) with index k of the given axis removed, in place."""
    if axis == 0:
        del node.elts[k]
    else:
        for e in node.elts:
            _drop_along(e, axis - 1, k)


def _nodes(tree):
    """The nodes line_variants may change, in a fixed order (see there)."""
    stmt = tree.body[0]
    root = stmt.value if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr)) else stmt
    nodes = list(ast.walk(root))
    if isinstance(stmt, (ast.Assign, ast.AugAssign)):
        for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
            if isinstance(t, ast.Subscript):
                nodes += [n for n in ast.walk(t.slice)]
    return nodes


def line_variants(line):
    """Simpler versions of one statement."""
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return
    if len(tree.body) != 1 or "dims(" in line:
        return      # a dims() line names its dims after its targets: keep it whole
    # only the value side and a target's index: `t[i] += v` must not become `t += v` (which
    # rebinds t in tdl, and adds in place in Python)
    nodes = _nodes(tree)
    for idx, node in enumerate(nodes):
        # an expression replaced by one of its operands
        for ci, _ in enumerate(_children(node)):
            t2 = ast.parse(line)
            n2 = _nodes(t2)[idx]
            child = _children(n2)[ci]
            for parent in ast.walk(t2):
                for field, value in ast.iter_fields(parent):
                    if value is n2:
                        setattr(parent, field, child)
                    elif isinstance(value, list) and any(v is n2 for v in value):
                        setattr(parent, field, [child if v is n2 else v for v in value])
            yield ast.unparse(t2)
        # call arguments, keywords, tuple items, print arguments dropped
        if isinstance(node, ast.Call):
            for field in ("args", "keywords"):
                for k in range(len(getattr(node, field))):
                    t2 = ast.parse(line)
                    n2 = _nodes(t2)[idx]
                    lst = getattr(n2, field)
                    del lst[k]
                    yield ast.unparse(t2)
        if isinstance(node, ast.Tuple) and len(node.elts) > 1:
            for k in range(len(node.elts)):
                t2 = ast.parse(line)
                n2 = _nodes(t2)[idx]
                del n2.elts[k]
                yield ast.unparse(t2)
        # a tensor literal shrunk by one index along one axis, or its numbers made small
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "tensor" and node.args \
                and isinstance(node.args[0], ast.List):
            sh = _list_depth_shape(node.args[0])
            for axis, n in enumerate(sh or ()):
                for k in range(n if n > 1 else 0):
                    t2 = ast.parse(line)
                    _drop_along(_nodes(t2)[idx].args[0], axis, k)
                    yield ast.unparse(t2)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool) and node.value not in (0, 1):
            for rep in (0, 1):
                t2 = ast.parse(line)
                n2 = _nodes(t2)[idx]
                n2.value = type(node.value)(rep)
                yield ast.unparse(t2)


def minimise(lines, same, budget):
    """A smaller list of lines for which same(src) still holds; budget: tries at most."""
    tries = [0]

    def ok(ls):
        if tries[0] >= budget:
            return False
        tries[0] += 1
        return same("\n".join(ls) + "\n")

    # statements: chunks, then single lines
    n = max(1, len(lines) // 2)
    while n >= 1:
        i = 0
        while i < len(lines):
            cand = lines[:i] + lines[i + n:]
            if cand and ok(cand):
                lines = cand
            else:
                i += n
        n //= 2
    # sub-expressions, until nothing changes
    changed = True
    while changed and tries[0] < budget:
        changed = False
        for i in range(len(lines)):
            for v in line_variants(lines[i]):
                if v == lines[i] or len(v) > len(lines[i]):
                    continue
                cand = lines[:i] + [v] + lines[i + 1:]
                if ok(cand):
                    lines = cand
                    changed = True
                    break
        if not changed:
            for i in range(len(lines)):
                cand = lines[:i] + lines[i + 1:]
                if cand and ok(cand):
                    lines = cand
                    changed = True
                    break
    # a last pass over the statements, past the budget: what the budget left unused
    for i in reversed(range(len(lines))):
        cand = lines[:i] + lines[i + 1:]
        if cand and same("\n".join(cand) + "\n"):
            lines = cand
    return lines


def op_names(src):
    """The operations a program uses (names called, methods, operators): a finding's identity."""
    out = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "?"))
        elif isinstance(node, (ast.BinOp, ast.UnaryOp)):
            out.add(type(node.op).__name__)
        elif isinstance(node, ast.Compare):
            out.update(type(o).__name__ for o in node.ops)
        elif isinstance(node, ast.Subscript):
            out.add("[]")
        elif isinstance(node, ast.AugAssign):
            out.add("+=")
    out.discard("print")
    out.discard("tolist")
    return tuple(sorted(out))


# ---- the driver ---------------------------------------------------------------------------------

def report_text(src, verdict, details):
    t = details["torch"]
    parts = ["failure: %s" % verdict, "", "program:", src.rstrip(), "",
             "torch:", t[0].rstrip() if t[0] else "(no output)"]
    if t[1]:
        parts.append("raises %s: %s" % (t[1], t[2]))
    for name, (out, kind, msg, problem) in details["tdl"].items():
        parts += ["", "tdl %s:" % name, out.rstrip() if out else "(no output)"]
        if kind:
            parts.append("raises %s: %s" % (kind, msg))
        if problem:
            parts.append("problem: %s" % problem)
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=int(os.environ.get("FUZZ_TORCH_N", "2000")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_TORCH_SEED", "1")))
    ap.add_argument("--only", type=int, default=None, help="run program ONLY of the seed alone")
    ap.add_argument("--tdl", default="build/tdl")
    ap.add_argument("--found", default=os.path.join(HERE, "found"))
    ap.add_argument("--max-minimise", type=int, default=int(os.environ.get("FUZZ_TORCH_MAX_MIN", "30")))
    ap.add_argument("--max-per-class", type=int, default=int(os.environ.get("FUZZ_TORCH_MAX_PER_CLASS", "4")),
                    help="minimise at most this many programs failing the same way (class and variants)")
    ap.add_argument("--budget", type=int, default=200, help="tries per minimisation")
    ap.add_argument("--show", action="store_true", help="print each program and its verdict")
    ap.add_argument("-v", action="store_true", help="print progress")
    a = ap.parse_args()
    tdl = os.path.abspath(a.tdl)
    if not os.access(tdl, os.X_OK):
        sys.exit("run.py: %s is not an executable (make first)" % tdl)
    torch.set_num_threads(1)    # children are forked: no thread pool to inherit
    torch.set_printoptions(profile="default")
    os.makedirs(a.found, exist_ok=True)
    known = {}
    for f in sorted(os.listdir(a.found)):
        if f.endswith(".tdl"):
            with open(os.path.join(a.found, f)) as fh:
                known[_body(fh.read())] = f
    counts = {"exact": 0, "approx": 0, "skip": 0, "fail": 0}
    findings = {}          # identity -> [file, count, verdict]
    new_files = []
    minimised = 0
    per_class = {}        # failure signature -> failing programs
    raised = 0            # programs whose torch run raises (their error kinds compared)
    tmpdir = tempfile.mkdtemp(prefix="fuzz_torch.")
    t0 = time.monotonic()
    ids = [a.only] if a.only is not None else range(a.n)
    ran = 0
    interrupted = False
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        for i in ids:
            lines = None
            for attempt in range(3):
                g = ZYGOTE.call(gen.generate_seeded, ("%d:%d:%d" % (a.seed, i, attempt),), TORCH_TIMEOUT_S * 2)
                if g[0] == "ok" and g[1]:
                    lines = g[1]
                    break
            if lines is None:
                counts["skip"] += 1
                ran += 1
                continue
            src = "\n".join(lines) + "\n"
            verdict, details = judge(src, tdl, tmpdir)
            if a.show:
                if verdict in ("exact", "approx", "skip"):
                    print("---- program %d: %s\n%s" % (i, verdict, src), flush=True)
                else:
                    print("---- program %d: %s" % (i, report_text(src, verdict, details)), flush=True)
            if details and details["torch"][1]:
                raised += 1
            if verdict in ("exact", "approx", "skip"):
                counts[verdict] += 1
            else:
                counts["fail"] += 1
                cls = verdict
                per_class[cls] = per_class.get(cls, 0) + 1
                if minimised < a.max_minimise and per_class[cls] <= a.max_per_class:
                    minimised += 1
                    variants = [v for v in VARIANTS if v[0] in cls.split(":")[1].split(",") or v[0] == "t1"]
                    if "threads" in cls:
                        variants = [v for v in VARIANTS if v[0] in ("t1", "t2")]

                    def same(s, cls=cls, variants=variants):
                        vv, _ = judge(s, tdl, tmpdir, variants)
                        return vv == cls
                    small = minimise(list(lines), same, a.budget)
                    ssrc = "\n".join(small) + "\n"
                    sv, sd = judge(ssrc, tdl, tmpdir)
                    ident = (sv.split(":")[0], op_names(ssrc))
                    if _body(ssrc) in known:
                        ident = ("file", known[_body(ssrc)])
                    if ident not in findings:
                        if ident[0] == "file":
                            fname = ident[1]
                        else:
                            fname = _write_finding(a.found, ssrc, sv, sd, a.seed, i)
                            known[_body(ssrc)] = fname
                            new_files.append(fname)
                        findings[ident] = [fname, 0, sv]
                    findings[ident][1] += 1
                    if a.v:
                        print("program %d: %s -> %s" % (i, verdict, findings[ident][0]), flush=True)
                elif a.v:
                    print("program %d: %s (not minimised: limit reached)" % (i, verdict), flush=True)
            ran += 1
            if a.v and (i + 1) % 100 == 0:
                print("... %d programs, %d failed (%.0f s)" % (i + 1, counts["fail"], time.monotonic() - t0),
                      flush=True)
    except KeyboardInterrupt:
        interrupted = True      # Ctrl-C or SIGTERM: the summary of what ran
    passed = counts["exact"] + counts["approx"]
    print("fuzz-torch: seed %d, %d programs%s in %.0f s: %d exact, %d within float tolerance, %d skipped "
          "(torch crashes or hangs, tdl's documented refusals)" % (a.seed, ran, " (interrupted)" if interrupted else "",
                                       time.monotonic() - t0, counts["exact"],
                                       counts["approx"], counts["skip"]))
    print("  %d programs end in an error under torch (tdl must raise the same kind)" % raised)
    for cls, n in sorted(per_class.items()):
        print("  failing %-40s %d program%s" % (cls, n, "s" if n > 1 else ""))
    for ident, (fname, n, sv) in sorted(findings.items(), key=lambda kv: kv[1][0]):
        print("  %s  %-40s (%d program%s)%s" % (fname, sv, n, "s" if n > 1 else "",
                                               "  new" if fname in new_files else ""))
    left = counts["fail"] - sum(f[1] for f in findings.values())
    if left:
        print("  (%d failing programs not minimised: --max-minimise, --max-per-class)" % left)
    print("%d passed, %d failed" % (passed, counts["fail"]))
    return 1 if counts["fail"] else 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _body(src):
    return "\n".join(l for l in src.strip().split("\n") if not l.startswith("#"))


def _write_finding(folder, src, verdict, details, seed, i):
    nums = [int(m.group(1)) for m in (re.match(r"fuzz_torch_(\d+)\.tdl$", f) for f in os.listdir(folder)) if m]
    n = max(nums, default=0) + 1
    name = "fuzz_torch_%03d" % n
    header = ("# torch-diff\n# found by tests/fuzz_torch/run.py (seed %d, program %d), minimised: %s\n"
              % (seed, i, verdict))
    with open(os.path.join(folder, name + ".tdl"), "w") as f:
        f.write(header + src)
    with open(os.path.join(folder, name + ".txt"), "w") as f:
        f.write(report_text(src, verdict, details))
    if not details["torch"][1]:     # torch's output is the script test's .out
        with open(os.path.join(folder, name + ".out"), "w") as f:
            f.write(details["torch"][0])
    return name + ".tdl"


if __name__ == "__main__":
    sys.exit(main())
