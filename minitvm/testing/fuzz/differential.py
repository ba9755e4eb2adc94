"""Differential checks of passes and of the compiler on generated programs.

For one pass on one program: the pass runs without error, its output is well formed and type
checks, the interpreter gives the same values before and after (NaN-aware), a second run gives a
structurally equal result (determinism), the input module is not modified, and the output's text
parses back to a structurally equal module. For the compiler: ``relay.optimize`` at opt levels
0-3 keeps the values, and ``relay.build``'s code gives the interpreter's values.

Every problem is a ``Finding`` (what, which pass, the seed, the program's text), so a failure
is a reproducible test case; ``shrink`` reduces the program to a minimal one that still fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ... import transform as _transform
from ...ir.structural import structural_equal, structural_hash
from ...ir.type import TensorType
from .generator import GeneratedProgram

#: Passes that need model-specific arguments: run with these (args, kwargs).
PASS_ARGS: dict[str, tuple] = {
    "ConvertLayout": (({"nn.conv2d": ["NHWC", "default"], "nn.max_pool2d": ["NHWC"],
                        "nn.avg_pool2d": ["NHWC"], "nn.global_avg_pool2d": ["NHWC"]},), {}),
    "ChangeBatch": ((), {"data": {}, "batch_size": 1}),
    "EtaExpand": ((), {"expand_constructor": True, "expand_global_var": True}),
    "MergeComposite": (([],), {}),  # no patterns: nothing merges, every other check applies
    "RewriteAnnotatedOps": ((0,), {}),
}
#: Passes that need the names of particular weights: not applicable to random programs.
NOT_APPLICABLE = {"DenseToSparse": "needs a weight name", "SimplifyFCTranspose":
                  "needs weight names", "AnnotateTarget": "needs an external codegen target"}
#: Passes documented to change numerics: (rtol, atol), or None to skip the value comparison.
NUMERIC_TOLERANCE: dict[str, tuple | None] = {
    "FastMath": None, "ToMixedPrecision": None,
}
#: Passes whose output function takes other arguments than the input (values not comparable).
SIGNATURE_CHANGING = {"ToCPS", "ChangeBatch"}
DEFAULT_RTOL = {"float16": 2e-2, "float32": 2e-4, "float64": 1e-9}


@dataclass
class Finding:
    """One failed check: ``kind`` (exception, ill-formed, mismatch, nondeterministic, mutated,
    round-trip), the pass (or pipeline) and the program that shows it."""

    kind: str
    pass_name: str
    seed: int
    detail: str
    program: str

    def __str__(self):
        return (f"[{self.kind}] {self.pass_name} on seed {self.seed}: {self.detail}\n"
                f"--- program ---\n{self.program}")


def relay_pass_names() -> list[str]:
    """Every registered Relay pass (the Relax ones are checked by Relax's harness)."""
    from ...transform.registry import list_passes

    return sorted(e.name for e in list_passes() if e.module.startswith("minitvm.relay."))


def make_pass(name: str):
    """The registered pass ``name`` with the arguments random programs get."""
    from ...transform.registry import get_pass_entry

    entry = get_pass_entry(name)
    if entry is None:
        raise ValueError(f"no registered pass named {name!r}")
    args, kwargs = PASS_ARGS.get(name, ((), {}))
    return entry.factory(*args, **kwargs)


# ------------------------------------------------------------------------------ values
def flatten(value) -> list[np.ndarray]:
    """Executor results (NDArray, tuple/ADT of them) as a flat list of numpy arrays."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if hasattr(v, "numpy"):
            out.append(np.asarray(v.numpy()))
        elif isinstance(v, np.ndarray | np.generic):
            out.append(np.asarray(v))
        elif isinstance(v, list | tuple):
            stack.extend(reversed(v))
        elif hasattr(v, "fields"):
            stack.extend(reversed(list(v.fields)))
        else:
            out.append(np.asarray(v))
    return out


def run_interpreter(mod, inputs: list) -> list[np.ndarray]:
    from ...relay.build_module import create_executor

    with np.errstate(all="ignore"):
        return flatten(create_executor("debug", mod=mod).evaluate()(*inputs))


def compare_values(ref: list, got: list, rtol: float | None = None,
                   atol: float | None = None, floor: str | None = None) -> str | None:
    """None when equal: same shapes and dtypes, NaN exactly where the reference has NaN,
    infinities equal, finite values close (``rtol`` by the output's dtype, or by ``floor``, the
    least precise float the program computes in, when that is looser); else what differs."""
    if len(ref) != len(got):
        return f"{len(ref)} outputs vs {len(got)}"
    for k, (a, b) in enumerate(zip(ref, got, strict=True)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {k}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if a.dtype.kind != "f":
            if not np.array_equal(a, b):
                bad = np.argwhere(a != b)[:3].tolist()
                return f"output {k}: integer values differ at {bad}"
            continue
        na, nb = np.isnan(a), np.isnan(b)
        if not np.array_equal(na, nb):
            return f"output {k}: NaN at different positions ({na.sum()} vs {nb.sum()})"
        inf_a, inf_b = np.isinf(a), np.isinf(b)
        if not np.array_equal(inf_a, inf_b) or not np.array_equal(a[inf_a], b[inf_b]):
            return f"output {k}: infinities differ"
        fin = np.isfinite(a)
        r = DEFAULT_RTOL.get(str(a.dtype), 1e-4) if rtol is None else rtol
        if rtol is None and floor is not None:
            r = max(r, DEFAULT_RTOL.get(floor, r))
        t = r if atol is None else atol
        x, y = a[fin].astype("float64"), b[fin].astype("float64")
        # relative to the output's scale: cancellation in a sum makes single elements noisy
        scale = max(1.0, float(np.abs(x).max())) if x.size else 1.0
        err = np.abs(x - y)
        bad = err > t * scale + r * np.abs(x)
        if bad.any():
            i = int(np.argmax(err - r * np.abs(x)))
            return f"output {k}: {int(bad.sum())} values differ, e.g. {x[i]!r} vs {y[i]!r}"
    return None


# ------------------------------------------------------------------------------ checks
_TYPE_COMMENT = re.compile(r" /\* ty=[^*]*\*/")


def _untyped(text: str) -> str:
    """Text without ``/* ty=... */``: filling the cached type slot is not a modification."""
    return _TYPE_COMMENT.sub("", text)


def _text(mod) -> str:
    try:
        return mod.astext()
    except Exception as err:  # noqa: BLE001 - reported as part of a finding
        return f"<cannot print: {type(err).__name__}: {err}>"


def check_pass(prog: GeneratedProgram, name: str, inputs: list | None = None,
               reference: list | None = None, round_trip: bool = True,
               pass_factory=None) -> list[Finding]:
    """Run every check of pass ``name`` (or ``pass_factory()``) on ``prog``."""
    from ...relay import parse
    from ...relay.analysis import check_well_formed
    from ...relay.transform import InferType

    mod = prog.mod
    text = _text(mod)

    def finding(kind, detail):
        return Finding(kind, name, prog.seed, detail, text)

    before = structural_hash(mod)
    make = pass_factory or (lambda: make_pass(name))
    try:
        with _transform.PassContext(opt_level=3):
            out = make()(mod)
    except Exception as err:  # noqa: BLE001
        return [finding("exception", f"{type(err).__name__}: {str(err)[:500]}")]
    found = []
    if structural_hash(mod) != before or _untyped(_text(mod)) != _untyped(text):
        found.append(finding("mutated", "the pass modified its input module"))
    problems = check_well_formed(out)
    if problems:
        found.append(finding("ill-formed", "; ".join(problems[:3])))
        return found
    try:
        out = InferType()(out)
    except Exception as err:  # noqa: BLE001
        found.append(finding("ill-typed", f"{type(err).__name__}: {str(err)[:500]}"))
        return found
    try:
        with _transform.PassContext(opt_level=3):
            again = make()(mod)
        if not structural_equal(InferType()(again), out):
            found.append(finding("nondeterministic", "two runs gave different modules"))
    except Exception as err:  # noqa: BLE001
        found.append(finding("nondeterministic", f"second run raised {type(err).__name__}"))
    if round_trip:
        out_text = _text(out)
        try:
            back = parse(out_text)
            if not structural_equal(back, out):
                found.append(finding("round-trip", "parse(astext(output)) differs from output:\n"
                                     + out_text[:2000]))
        except Exception as err:  # noqa: BLE001
            found.append(finding("round-trip", f"{type(err).__name__}: {str(err)[:400]}\n"
                                 + out_text[:2000]))
    tol = NUMERIC_TOLERANCE.get(name, (None, None))
    if tol is not None and name not in SIGNATURE_CHANGING:
        inputs = prog.inputs() if inputs is None else inputs
        try:
            ref = run_interpreter(mod, inputs) if reference is None else reference
        except Exception as err:  # noqa: BLE001
            return found + [finding("exception", f"interpreter on the input program: "
                                    f"{type(err).__name__}: {str(err)[:300]}")]
        try:
            got = run_interpreter(out, inputs)
        except Exception as err:  # noqa: BLE001
            return found + [finding("exception", f"interpreter on the output: "
                                    f"{type(err).__name__}: {str(err)[:300]}")]
        diff = compare_values(ref, got, *tol)
        if diff:
            found.append(finding("mismatch", diff))
    return found


def check_pipeline(prog: GeneratedProgram, opt_levels=(0, 1, 2, 3), build: bool = True,
                   inputs: list | None = None, special: bool = False) -> list[Finding]:
    """``relay.optimize`` at each opt level keeps the values; ``relay.build`` matches the
    interpreter (for programs the graph executor can run)."""
    from ...relay.transform.pipeline import optimize

    inputs = prog.inputs(special=special) if inputs is None else inputs
    text = _text(prog.mod)
    found: list[Finding] = []
    try:
        ref = run_interpreter(prog.mod, inputs)
    except Exception as err:  # noqa: BLE001
        return [Finding("exception", "interpreter", prog.seed,
                        f"{type(err).__name__}: {str(err)[:300]}", text)]
    for level in opt_levels:
        where = f"relay.optimize(opt_level={level})"
        try:
            with _transform.PassContext(opt_level=level):
                out, _ = optimize(prog.mod, target="llvm")
            diff = compare_values(ref, run_interpreter(out, inputs))
        except Exception as err:  # noqa: BLE001
            found.append(Finding("exception", where, prog.seed,
                                 f"{type(err).__name__}: {str(err)[:400]}", text))
            continue
        if diff:
            found.append(Finding("mismatch", where, prog.seed, diff, text))
    if build and prog.graph_compatible:
        found += check_build(prog, inputs, ref)
    return found


#: Operators that accumulate (a sum of products or of values): their compiled loops may contract
#: ``a * b + c`` into one FMA and reassociate the sum (the back end's documented non-FastMath
#: flags, as clang's ``-ffp-contract=on`` and TVM's reduction reassociation), so on inf/huge
#: inputs whether an intermediate overflows -- NaN (inf - inf) or inf -- depends on the order.
ACCUMULATING_OPS = frozenset({
    "nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv1d_transpose", "nn.conv2d_transpose",
    "nn.conv3d_transpose", "nn.dense", "nn.matmul", "nn.batch_matmul", "sum", "mean", "prod",
    "variance", "std", "nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d",
    "nn.global_avg_pool2d", "nn.adaptive_avg_pool1d", "nn.adaptive_avg_pool2d",
    "nn.adaptive_avg_pool3d", "cumsum", "cumprod", "einsum", "nn.softmax", "nn.log_softmax",
    "nn.layer_norm", "nn.batch_norm", "nn.instance_norm", "nn.group_norm", "nn.l2_normalize",
})


def _tamed(inputs: list) -> list:
    """``inputs`` with every huge finite float (|x| >= 1e30) replaced by 1 (inf, nan, zero and
    the exp-overflow probes stay)."""
    out = []
    for x in inputs:
        x = np.array(x, copy=True)
        if x.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                x[np.isfinite(x) & (np.abs(x.astype("float64")) >= 1e30)] = 1
        out.append(x)
    return out


def check_build(prog: GeneratedProgram, inputs: list, ref: list | None = None,
                opt_level: int = 3) -> list[Finding]:
    """``relay.build`` + the graph executor give the interpreter's values. On special inputs a
    program with an accumulating operator that differs only while huge finite inputs are in
    it (and agrees with them replaced by 1) gives a Finding of kind "order-dependent": where
    a sum of products overflows depends on FMA contraction and reassociation."""
    from ...relay.build_module import build
    from ...runtime.graph_executor import GraphModule

    text = _text(prog.mod)
    where = f"relay.build(opt_level={opt_level})"

    def run(m, values):
        for (name, _), x in zip(prog.input_types, values, strict=True):
            m.set_input(name, x)
        m.run()
        return [m.get_output(k).numpy().copy() for k in range(m.get_num_outputs())]

    try:
        ref = run_interpreter(prog.mod, inputs) if ref is None else ref
        with _transform.PassContext(opt_level=opt_level):
            lib = build(prog.mod, target="llvm")
        m = GraphModule(lib["default"]())
        got = run(m, inputs)
    except Exception as err:  # noqa: BLE001
        return [Finding("exception", where, prog.seed, f"{type(err).__name__}: "
                        f"{str(err)[:400]}", text)]
    floor = precision_floor(prog.mod)
    diff = compare_values(ref, got, floor=floor)
    if not diff:
        return []
    tamed = _tamed(inputs)
    if _has_accumulation(prog.mod) and any(
            not np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
            for a, b in zip(tamed, inputs, strict=True)):
        # the same program agrees once the huge finite inputs are gone: an accumulation's
        # order (FMA contraction, reassociation) decided where they overflow
        try:
            if compare_values(run_interpreter(prog.mod, tamed), run(m, tamed),
                              floor=floor) is None:
                return [Finding("order-dependent", where, prog.seed, diff, text)]
        except Exception:  # noqa: BLE001, S110 - reported as the mismatch below
            pass
    return [Finding("mismatch", where, prog.seed, diff, text)]


def precision_floor(mod) -> str | None:
    """The least precise float dtype the program's values have anywhere (a float64 output cast
    from a float32 erf is only float32-accurate: compiled and interpreted erf may differ by an
    ulp of float32)."""
    text = _text(mod)
    for dt in ("float16", "float32", "float64"):
        if dt in text:
            return dt
    return None


def _has_accumulation(mod) -> bool:
    from ...relay.analysis import list_op_freqs

    return bool(ACCUMULATING_OPS & set(list_op_freqs(mod)))


def output_types(mod) -> list:
    t = mod["main"].checked_type.ret_type
    out, stack = [], [t]
    while stack:
        u = stack.pop()
        if isinstance(u, TensorType):
            out.append(u)
        else:
            stack.extend(reversed(getattr(u, "fields", ())))
    return out


# ------------------------------------------------------------------------------ shrinking
def shrink(seed: int, fails, max_ops: int = 14, **options) -> GeneratedProgram | None:
    """The smallest program of ``seed`` (fewest operators) for which ``fails(program)`` holds:
    programs are regenerated with growing ``max_ops``, so the first failing one is minimal in
    the generator's own terms. None when none fails."""
    from .generator import generate_program

    for n in range(2, max_ops + 1):
        prog = generate_program(seed, max_ops=n, **options)
        if fails(prog):
            return prog
    return None


def regression_test_source(finding: Finding, test_name: str | None = None) -> str:
    """A pytest function that replays ``finding`` from its program text."""
    name = test_name or f"test_{finding.pass_name.lower()}_seed{finding.seed}"
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    program = finding.program.replace('"""', '\\"\\"\\"')
    return (
        f"def {name}():\n"
        f"    # found by minitvm.testing.fuzz: [{finding.kind}] {finding.detail[:120]!r}\n"
        f"    from minitvm import relay\n"
        f"    from minitvm.testing.fuzz.differential import check_pass\n"
        f"    from minitvm.testing.fuzz.generator import GeneratedProgram\n"
        f"    mod = relay.parse(\"\"\"{program}\"\"\")\n"
        f"    types = [(p.name_hint, p.type_annotation) for p in mod['main'].params]\n"
        f"    prog = GeneratedProgram(mod, {finding.seed}, types)\n"
        f"    assert check_pass(prog, {finding.pass_name!r}) == []\n")
