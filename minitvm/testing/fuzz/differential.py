"""Differential checks of passes and of the compiler on generated programs.

For one pass on one program: the pass runs without error, its output is well formed and type
checks, the interpreter gives the same values before and after (NaN-aware), a second run gives a
structurally equal result (determinism), the input module is not modified, and the output's text
parses back to a structurally equal module. For the compiler: ``relay.optimize`` at opt levels
0-3 keeps the values, and ``relay.build``'s code gives the interpreter's values.

Every problem is a ``Finding`` (what, which pass, the seed, the program's text), so a failure
is a reproducible test case; ``shrink`` reduces the program to a minimal one that still fails.

Two kinds of compiled-vs-interpreter difference on inf/nan/huge inputs are reported but are not
wrong answers (``TOLERATED_KINDS``); every other difference is a mismatch:

* "order-dependent": the back end contracts ``a * b + c`` into one FMA outside FastMath (as
  clang's default ``-ffp-contract=on``) and reassociates reductions, and numpy/BLAS sum in their
  own order, so whether an intermediate of a sum of products overflows (inf, or inf - inf = NaN)
  depends on the order. Kept rather than switched off: exact, unfused multiply-adds would slow
  every conv and dense. The verdict is tight: every differing element must lie in an output an
  accumulating operator feeds and have inf or NaN on one side (a finite value off by more than
  rounding is always a mismatch), and with the huge finite inputs replaced by 1 the program
  must give exactly the interpreter's values.
* "rewrite-dependent": TVM defines inference batch_norm by SimplifyInference's fold
  ``x * scale + (beta - mean * scale)`` (its interpreter runs SimplifyInference before it
  evaluates; PyTorch's and ONNX Runtime's CPU kernels compute the same fold), while our
  interpreter evaluates ``(x - mean) / sqrt(var + eps) * gamma + beta``. The two are equal in
  real arithmetic and differ only where an intermediate overflows (``mean * scale`` for a mean
  near 3.4e38, ``x * inf``). The verdict requires the compiled values to equal, NaN for NaN,
  the interpreter's on the program after SimplifyInference: every other pass and every kernel
  is still held to the IEEE result of that program, and SimplifyInference itself is checked on
  finite inputs like any pass. Where the compiled code fused the fold's ``x * scale + shift``
  into an FMA, an element may differ from that program only where its separately rounded
  product overflowed (the reference side inf or NaN) in an output batch_norm feeds.
* "boundary-dependent" (the dynamic checker): the order an ``argsort`` / ``sort`` / ``topk`` gives
  to elements of a computed float key that are equal within the tolerance (``boundaries``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ... import transform as _transform
from ...ir.snapshot import snapshot
from ...ir.structural import structural_equal
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
#: Passes whose output returns the input's results followed by more (gradients): the leading
#: values are compared.
RESULT_EXTENDING = {"FirstOrderGradient"}
#: Passes that require a normal form TVM's pipeline establishes first: run after these.
PREREQUISITES: dict[str, tuple[str, ...]] = {
    "AnnotateUsedMemory": ("FuseOps", "ToANormalForm"),
    "ManifestLifetimes": ("ToANormalForm", "LambdaLift"),
}
#: Programs outside a pass's documented domain (as in TVM, which aborts on them): the pass must
#: refuse them with this exception type and a message matching the pattern, never crash.
DOMAIN_ERRORS: dict[str, tuple[type, str]] = {
    "AnnotateUsedMemory": (ValueError, r"^AnnotateUsedMemory: .* is not primitive"),
    "FirstOrderGradient": (TypeError, r"^gradient\(mode='first_order'\) (supports ops, tuples "
                           r"and lets only|does not support closures)"),
}
DEFAULT_RTOL = {"bfloat16": 4e-2, "float16": 2e-2, "float32": 2e-4, "float64": 1e-9}


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
    the_pass = entry.factory(*args, **kwargs)
    if name in PREREQUISITES:
        return _transform.Sequential([make_pass(p) for p in PREREQUISITES[name]] + [the_pass])
    return the_pass


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

    before = snapshot(mod)
    make = pass_factory or (lambda: make_pass(name))
    try:
        with _transform.PassContext(opt_level=3):
            out = make()(mod)
    except Exception as err:  # noqa: BLE001
        domain = DOMAIN_ERRORS.get(name)
        if domain and isinstance(err, domain[0]) and re.search(domain[1], str(err)):
            return []  # refused, clearly, a program outside its documented domain
        return [finding("exception", f"{type(err).__name__}: {str(err)[:500]}")]
    found = []
    if before.changed() is not None or _untyped(_text(mod)) != _untyped(text):
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
        if name in RESULT_EXTENDING:
            got = got[:len(ref)]
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
    # not accumulations but as sensitive: a periodic function of a huge argument (|x| >= 2**24
    # in float32: neighbouring floats are more than pi/2 apart) turns a 1-ulp difference of the
    # argument (an exp within its error bound, seed 503045) into any value in [-1, 1]; the
    # run with huge values tamed must still agree
    "sin", "cos", "tan",
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


def _tamed_module(mod):
    """``mod`` with every huge finite float (|x| >= 1e30) in its constants replaced by 1, or
    None when it has none (a constant operand overflows under one evaluation order as an
    input does)."""
    from ...relay.expr import const
    from ...relay.expr_functor import ExprMutator

    class _Tame(ExprMutator):
        changed = False

        def visit_constant(self, c):
            data = c.data.numpy()
            if data.dtype.kind != "f":
                return c
            with np.errstate(invalid="ignore"):
                huge = np.isfinite(data) & (np.abs(data.astype("float64")) >= 1e30)
            if not huge.any():
                return c
            self.changed = True
            data = data.copy()
            data[huge] = 1
            return const(data, str(data.dtype))

    tamer = _Tame()
    main = tamer.visit(mod["main"])
    if not tamer.changed:
        return None
    out = mod.shallow_copy()
    out["main"] = main
    return out


#: Finding kinds that are reported but are not wrong answers (see the module docstring).
TOLERATED_KINDS = frozenset({"order-dependent", "rewrite-dependent", "boundary-dependent"})
#: Ops SimplifyInference rewrites into TVM's inference arithmetic (relay.build always runs it).
_INFERENCE_OPS = frozenset({"nn.batch_norm", "nn.layer_norm", "nn.group_norm",
                            "nn.instance_norm", "nn.l2_normalize", "nn.dropout"})


def differing_elements(a: np.ndarray, b: np.ndarray, floor: str | None = None) -> np.ndarray:
    """The positions where ``compare_values`` finds ``a`` and ``b`` different (same shape)."""
    if a.dtype.kind != "f":
        return a != b
    with np.errstate(invalid="ignore"):
        na, nb = np.isnan(a), np.isnan(b)
        bad = na != nb
        inf = np.isinf(a) | np.isinf(b)
        bad |= inf & ~na & ~nb & (a != b)
        fin = np.isfinite(a) & np.isfinite(b)
        r = DEFAULT_RTOL.get(str(a.dtype), 1e-4)
        if floor is not None:
            r = max(r, DEFAULT_RTOL.get(floor, r))
        x, y = a.astype("float64"), b.astype("float64")
        scale = max(1.0, float(np.abs(x[np.isfinite(x)]).max())) if np.isfinite(x).any() else 1.0
        bad |= fin & (np.abs(x - y) > r * scale + r * np.abs(x))
    return bad


def _overflow_scale(x: np.ndarray) -> np.ndarray:
    """Elements that are inf/NaN or huge (|x| >= 1e30): where a sum's order can show (an
    intermediate that overflowed in one order also shows through max/min/where as a
    different huge finite value, seed 502738)."""
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(x) | (np.abs(x.astype("float64")) >= 1e30)


def absorbed(ref: list, got: list, accumulates: list[bool], floor: str | None) -> bool:
    """True when every differing output is a float computed from an accumulation (a sum with
    huge operands: +3.4e38 and -3.4e38 cancel before or after a small term is absorbed, so a
    normal-sized total depends on the order, seed 503785); the caller also requires the run
    with the huge values tamed to agree."""
    for a, b, acc in zip(ref, got, accumulates, strict=True):
        if differing_elements(a, b, floor).any() and (not acc or a.dtype.kind != "f"):
            return False
    return True


def overflow_explains(ref: list, got: list, accumulates: list[bool],
                      floor: str | None = None, unfused_reference: bool = False) -> bool:
    """True when every difference is one an evaluation order can make: it is in an output
    computed from an accumulating operator, and at each differing element one side is inf,
    NaN or huge (an intermediate overflowed in one order and not in the other). A
    normal-sized finite value that differs beyond rounding, or a difference in an output no
    accumulation feeds, is a wrong answer. With ``unfused_reference`` (the reference rounds every product, the compiled code
    may fuse it into an FMA) the reference side must be the non-finite one: a fused
    multiply-add only ever avoids an overflow of the separately rounded product."""
    for a, b, acc in zip(ref, got, accumulates, strict=True):
        bad = differing_elements(a, b, floor)
        if not bad.any():
            continue
        if not acc or a.dtype.kind != "f":
            return False
        if unfused_reference:
            if not np.all(~np.isfinite(a[bad])):
                return False
        elif not np.all(_overflow_scale(a[bad]) | _overflow_scale(b[bad])):
            return False
    return True


def accumulations_overflow_apart(mod, inputs: list, opt_level: int, floor) -> bool:
    """True when the program's accumulating operators themselves (sums, matmuls, means...)
    give values that differ between the interpreter and ``relay.build`` only where one side
    overflowed (inf, NaN or huge): a differing output computed from such a value (``x /
    mean(x)`` giving 24 against 0, seed 502738) is then explained by the summation order."""
    from ...ir.module import IRModule
    from ...relay.build_module import build
    from ...relay.expr import Call, Function, Let, Tuple
    from ...relay.expr_functor import post_order_visit
    from ...relay.transform import InferType
    from ...runtime.graph_executor import GraphModule as _GM

    main = mod["main"]
    accs: list = []

    def visit(e):
        if isinstance(e, Call) and getattr(e.op, "name", None) in ACCUMULATING_OPS and \
                isinstance(e.checked_type, TensorType) and e.checked_type.dtype.startswith("float"):
            accs.append(e)

    post_order_visit(main.body, visit)
    if not accs:
        return False
    lets, body = [], main.body
    while isinstance(body, Let):
        lets.append((body.var, body.value))
        body = body.body
    new_body = Tuple(accs)
    for var, value in reversed(lets):
        new_body = Let(var, value, new_body)
    probe = InferType()(IRModule.from_expr(Function(list(main.params), new_body)))
    ref = run_interpreter(probe, inputs)
    with _transform.PassContext(opt_level=opt_level):
        m = _GM(build(probe, target="llvm")["default"]())
    for p, x in zip(main.params, inputs, strict=True):
        m.set_input(p.name_hint, x)
    m.run()
    got = [m.get_output(k).numpy() for k in range(m.get_num_outputs())]
    return compare_values(ref, got, floor=floor) is not None and \
        overflow_explains(ref, got, [True] * len(ref), floor)


def accumulating_outputs(mod) -> list[bool]:
    """For each flattened output of ``@main``: whether an accumulating operator feeds it."""
    from ...relay.expr import Let, Tuple, Var
    from ...relay.expr_functor import dataflow_children

    bound: dict = {}
    body = mod["main"].body
    while isinstance(body, Let):
        bound[body.var] = body.value
        body = body.body

    def feeds(e) -> bool:
        seen, stack = set(), [e]
        while stack:
            x = stack.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            if isinstance(x, Var):
                if x in bound:
                    stack.append(bound[x])
                continue
            if isinstance(x, Let):
                bound[x.var] = x.value
                stack.extend((x.value, x.body))
                continue
            op = getattr(x, "op", None)
            if getattr(op, "name", None) in ACCUMULATING_OPS:
                return True
            stack.extend(dataflow_children(x))
        return False

    out: list[bool] = []
    stack = [body]
    while stack:  # the outputs in flatten()'s order
        e = stack.pop()
        while isinstance(e, Var) and e in bound:
            e = bound[e]
        if isinstance(e, Tuple):
            stack.extend(reversed(e.fields))
            continue
        t = e.checked_type if e._checked_type is not None else None
        n = len(_tensor_leaves(t)) if t is not None else 1
        out.extend([feeds(e)] * n)
    return out


def _tensor_leaves(t) -> list:
    out, stack = [], [t]
    while stack:
        u = stack.pop()
        if isinstance(u, TensorType):
            out.append(u)
        else:
            stack.extend(reversed(getattr(u, "fields", ())))
    return out


def inference_reference(mod, inputs: list) -> list | None:
    """The interpreter on ``mod`` after SimplifyInference -- TVM's own interpreter runs that
    pass before evaluating, so this is batch_norm's value as TVM defines it
    (``x * scale + (beta - mean * scale)``) -- or None when no op of ``mod`` is rewritten."""
    from ...relay.analysis import list_op_freqs
    from ...relay.transform import InferType, SimplifyInference

    if not _INFERENCE_OPS & set(list_op_freqs(mod)):
        return None
    return run_interpreter(SimplifyInference()(InferType()(mod)), inputs)


def check_build(prog: GeneratedProgram, inputs: list, ref: list | None = None,
                opt_level: int = 3) -> list[Finding]:
    """``relay.build`` + the graph executor give the interpreter's values. Two differences on
    special inputs are classified, not counted as wrong answers (see the module docstring):
    "rewrite-dependent" when the compiled values equal the interpreter's on the program after
    SimplifyInference, and "order-dependent" when an accumulation's evaluation order explains
    every differing element (``overflow_explains``, or the accumulations themselves differ only
    by overflow: ``accumulations_overflow_apart``) and the values agree once huge finite inputs
    and constants are replaced by 1."""
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
    try:
        rewritten = inference_reference(prog.mod, inputs)
    except Exception:  # noqa: BLE001 - the mismatch below is reported either way
        rewritten = None
    accumulates = accumulating_outputs(prog.mod)
    if rewritten is not None and (compare_values(rewritten, got, floor=floor) is None
                                  or overflow_explains(rewritten, got, accumulates, floor,
                                                       unfused_reference=True)):
        return [Finding("rewrite-dependent", where, prog.seed,
                        "SimplifyInference's fold decides this on special values: " + diff, text)]
    tamed = _tamed(inputs)
    tamed_mod = _tamed_module(prog.mod)
    def overflow_apart() -> bool:
        try:
            return accumulations_overflow_apart(prog.mod, inputs, opt_level, floor)
        except Exception:  # noqa: BLE001 - then it is reported as the mismatch below
            return False

    if (overflow_explains(ref, got, accumulates, floor) or absorbed(ref, got, accumulates, floor)
            or (any(accumulates) and overflow_apart())) and (tamed_mod is not None or any(
            not np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
            for a, b in zip(tamed, inputs, strict=True))):
        # the same program agrees once the huge finite inputs and constants are gone: an
        # accumulation's order (FMA contraction, reassociation) decided where they overflow
        try:
            mod2, m2 = prog.mod, m
            if tamed_mod is not None:
                mod2 = tamed_mod
                with _transform.PassContext(opt_level=opt_level):
                    m2 = GraphModule(build(mod2, target="llvm")["default"]())
            if compare_values(run_interpreter(mod2, tamed), run(m2, tamed),
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
