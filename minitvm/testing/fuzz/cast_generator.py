"""Programs of casts between float32 / float16 / int8 / uint8 / int32 / bool, fed values at the
casts' jumps.

``boundaries`` excuses a difference where a *computed* float lands within rounding of a jump
(a float -> int cast, floor / round, a comparison): the two sides may round it apart. These
programs are built so that nothing can: every float operation between two casts is exact or
correctly rounded in each dtype on both sides (a constant added, a power of two multiplied, an
abs / negative / round / floor / ceil / clip / maximum / minimum; no chain an FMA could
contract or SimplifyExpr reassociate, no transcendental), so at every jump -- k + 0.5, the integer types' ends, float16's
largest finite value and its rounding to inf, subnormals, -0.0, NaN and the infinities (whose
integer value ``topi.reference.tensor.float_to_int`` fixes) -- both sides must agree exactly.

Even seeds build a Relay program (the interpreter against relay.build + the graph executor and
relay.vm.compile + the VM, at the seed's opt level); odd seeds the same kind of program in Relax
(the numpy reference against relax.build + the VM).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from .differential import Finding, compare_values, flatten

#: The dtypes the programs cast between.
CAST_DTYPES = ("float32", "float16", "int8", "uint8", "int32", "bool")

#: Float values at the casts' jumps: half-integers (round's ties), the ends of int8 / uint8 /
#: int32, float16's largest finite value and the values that round to it or to inf, float16
#: subnormals, signed zeros, NaN and the infinities.
CAST_JUMPS = (
    0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 1.0, -1.0, 127.0, 127.5, 128.0,
    -128.0, -128.5, -129.0, 254.5, 255.0, 255.5, 256.0, 255.99998, -0.0, 0.0, 65504.0,
    65519.996, 65520.0, 70000.0, -65520.0, 6e-8, 3e-8, -6e-8, 6.1e-5, 2.0 ** 31, -(2.0 ** 31),
    2.0 ** 31 - 128, 3e38, -3e38, float("nan"), float("inf"), float("-inf"), 1e-45, 0.99999994,
    1.0000001, 32767.5, 2048.5, 4097.0,
)

_FLOAT = ("float32", "float16")
_UNARY_FLOAT = ("round", "floor", "ceil", "abs", "negative")
_UNARY_INT = ("abs", "negative")


@dataclass
class CastProgram:
    """One generated cast program: the abstract steps, and the module of its dialect."""

    seed: int
    dialect: str  # "relay" or "relax"
    steps: list  # (result dtype, op, operands (step indices), attrs)
    outputs: list[int]
    length: int
    mod: object = None
    features: set = field(default_factory=set)

    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        pool = np.array(CAST_JUMPS, "float64")
        x = np.where(rng.random(self.length) < 0.8, rng.choice(pool, self.length),
                     rng.uniform(-300, 300, self.length))
        return [x.astype("float32")]


def _draw_steps(rng: random.Random) -> tuple[list, list[int]]:
    """The steps: step 0 is the float32 input; each later step casts a value, applies an exact
    unary op, combines two values of one dtype, or compares / selects."""
    steps: list = [("float32", "input", (), {})]
    for _ in range(rng.randint(3, 9)):
        k = rng.randrange(len(steps))
        dt = steps[k][0]
        r = rng.random()
        if r < 0.45:
            to = rng.choice([d for d in CAST_DTYPES if d != dt])
            steps.append((to, "cast", (k,), {}))
        elif r < 0.65 and dt != "bool":
            ops = _UNARY_FLOAT if dt in _FLOAT else _UNARY_INT
            steps.append((dt, rng.choice(ops), (k,), {}))
        elif r < 0.75 and dt != "bool" and steps[k][1] in ("add", "multiply") and \
                dt in _FLOAT:
            # no constant chain: SimplifyExpr folds (x + a) + b into x + (a + b) and
            # (x * a) * b into x * (a * b), as TVM's SimplifyConsecutiveAdd does -- a rewrite
            # that changes float results (-2**31 - 1 - 128), not what this fuzzer tests
            steps.append((dt, rng.choice(_UNARY_FLOAT), (k,), {}))
        elif r < 0.75 and dt != "bool":
            op = "add" if rng.random() < 0.5 else "multiply"
            if op == "add":
                c = rng.choice([0.5, 1.0, -1.0, 2.0, 127.0, -128.0, 0.25, 256.0])
            else:
                c = rng.choice([2.0, 0.5, -1.0, 4.0])
            if dt not in _FLOAT:  # an integer constant of the type (wrapping is the test)
                lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
                c = float(min(max(int(c), lo), hi)) if int(c) == c and c != 0 else 2.0
            steps.append((dt, op, (k,), {"c": c}))
        elif r < 0.82 and dt != "bool":
            # on an integer type too: bounds outside its range or between its integers
            # (truncated, then saturated: ``topi.reference.tensor.clip_range``)
            bounds = [-128.0, -1.0, 0.0, 0.5, 127.0, 255.0, 300.0]
            lo, hi = sorted(rng.sample(bounds, 2))
            steps.append((dt, "clip", (k,), {"lo": lo, "hi": hi}))
        else:
            same = [j for j, s in enumerate(steps) if s[0] == dt]
            j = rng.choice(same)
            if dt == "bool":
                op = rng.choice(["logical_and", "logical_or", "logical_xor"])
                steps.append(("bool", op, (k, j), {}))
            elif rng.random() < 0.4:
                op = rng.choice(["less", "greater_equal", "equal"])
                steps.append(("bool", op, (k, j), {}))
                bools = len(steps) - 1
                steps.append((dt, "where", (bools, k, j), {}))
            else:
                steps.append((dt, rng.choice(["maximum", "minimum"]), (k, j), {}))
    n = len(steps)
    outs = sorted({n - 1} | {rng.randrange(1, n) for _ in range(rng.randint(0, 2))})
    return steps, outs


def generate_cast_program(seed: int) -> CastProgram:
    """The cast program of ``seed``: Relay on even seeds, Relax on odd."""
    rng = random.Random(seed * 31337 + 5)
    steps, outs = _draw_steps(rng)
    length = rng.choice([1, 3, 8, 17, 33])
    prog = CastProgram(seed, "relay" if seed % 2 == 0 else "relax", steps, outs, length)
    prog.features = {s[1] for s in steps[1:]} | {
        f"{steps[s[2][0]][0]}->{s[0]}" for s in steps[1:] if s[1] == "cast"}
    prog.mod = _relay_module(prog) if prog.dialect == "relay" else _relax_module(prog)
    return prog


def _emit_steps(prog: CastProgram, x, ns, const, emit=lambda v: v) -> list:
    """The output values of ``prog``'s steps, built from input ``x`` with the dialect's op
    namespace ``ns`` (``relay`` or ``relax.op``), its ``const`` and its ``emit`` (a Relax
    block builder binds each value)."""
    cast = getattr(ns, "cast", None) or ns.astype
    vals: list = []
    for dt, op, args, attrs in prog.steps:
        a = [vals[i] for i in args]
        if op == "input":
            vals.append(x)
            continue
        if op == "cast":
            v = cast(a[0], dt)
        elif op in ("add", "multiply"):
            v = getattr(ns, op)(a[0], const(attrs["c"], dt))
        elif op == "clip":
            v = ns.clip(a[0], attrs["lo"], attrs["hi"])
        else:
            v = getattr(ns, op)(*a)
        vals.append(emit(v))
    return [vals[i] for i in prog.outputs]


def _relay_module(prog: CastProgram):
    import minitvm as tvm
    from minitvm import relay

    x = relay.var("x", shape=(prog.length,), dtype="float32")
    outs = _emit_steps(prog, x, relay, relay.const)
    body = outs[0] if len(outs) == 1 else relay.Tuple(outs)
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))


def _relax_module(prog: CastProgram):
    from minitvm import relax
    from minitvm.relax import op as R

    x = relax.Var("x", relax.TensorStructInfo([prog.length], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            outs = _emit_steps(prog, x, R, relax.const, bb.emit)
            res = bb.emit_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
        bb.emit_func_output(res)
    return bb.get()


def _text(prog: CastProgram) -> str:
    return prog.mod.astext() if prog.dialect == "relay" else prog.mod.script()


#: Ops whose result's sign of zero is unspecified (IEEE 754-2008 maxNum / minNum, C's fmax /
#: fmin: max(-0, +0) may be either zero), so outputs of programs with them compare zeros by
#: value only.
_UNSIGNED_ZERO = frozenset({"maximum", "minimum", "clip"})


def _exact(ref: list, got: list, signed_zero: bool = True) -> str | None:
    """None when ``got`` equals ``ref`` exactly (NaN for NaN, and with ``signed_zero`` the sign
    of zero)."""
    diff = compare_values(ref, got, rtol=0.0, atol=0.0)
    if diff or not signed_zero:
        return diff
    for k, (a, b) in enumerate(zip(ref, got, strict=True)):
        if a.dtype.kind != "f":
            continue
        zeros = (a == 0) & (b == 0)  # (a NaN's sign bit is no value's: not compared)
        if (np.signbit(a[zeros]) != np.signbit(b[zeros])).any():
            at = np.flatnonzero(zeros & (np.signbit(a) != np.signbit(b)))[:3].tolist()
            return f"output {k}: the sign of zero differs at {at}"
    return None


def _relay_results(prog: CastProgram, inputs: list) -> dict:
    import minitvm as tvm
    from minitvm import relay

    from ...runtime import vm as runtime_vm
    from ...runtime.graph_executor import GraphModule
    from .differential import run_interpreter

    level = random.Random(prog.seed).randrange(4)
    out = {"interpreter": run_interpreter(prog.mod, inputs)}
    with tvm.transform.PassContext(opt_level=level):
        lib = relay.build(prog.mod, target="llvm")
        exe = relay.vm.compile(prog.mod, target="llvm")
    m = GraphModule(lib["default"]())
    m.set_input("x", inputs[0])
    m.run()
    out[f"relay.build+graph O{level}"] = [m.get_output(k).numpy()
                                          for k in range(m.get_num_outputs())]
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    out[f"relay.vm.compile O{level}"] = flatten(vm.run(*inputs))
    return out


def _relax_results(prog: CastProgram, inputs: list) -> dict:
    import minitvm as tvm
    from minitvm import relax

    from .relax_reference import evaluate

    out = {"reference": flatten(evaluate(prog.mod, inputs))}
    vm = relax.VirtualMachine(relax.build(prog.mod, target="llvm"), tvm.cpu())
    out["relax.build"] = flatten(vm["main"](*inputs))
    return out


def check_cast_program(prog: CastProgram) -> list[Finding]:
    """Every executor of ``prog``'s dialect gives its reference's values exactly."""
    inputs = prog.inputs()
    try:
        with np.errstate(all="ignore"):
            results = (_relay_results if prog.dialect == "relay" else _relax_results)(
                prog, inputs)
    except Exception as err:  # noqa: BLE001
        return [Finding("exception", f"casts ({prog.dialect})", prog.seed,
                        f"{type(err).__name__}: {str(err)[:400]}", _text(prog))]
    names = list(results)
    ref = results[names[0]]
    found = []
    signed = not any(step[1] in _UNSIGNED_ZERO for step in prog.steps)
    for name in names[1:]:
        diff = _exact(ref, results[name], signed)
        if diff:
            found.append(Finding("mismatch", name, prog.seed,
                                 f"input {inputs[0].tolist()}: {diff}", _text(prog)))
    return found
