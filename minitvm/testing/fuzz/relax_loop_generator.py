"""A seeded generator of Relax programs with loops, and their checker (the Relax sizes fuzzer
does not reach recursion, ``vm.builtin.update_row`` nor saved executables).

A loop is a private recursive Relax function ``f(t, n, x, state...)``: while ``t < n`` one step
(dataflow ops on the row ``x[t]`` and the state), then ``f(t + 1, ...)``; else the state (the
Relax VM runs the recursion in a list of frames). Loop kinds: *rows*, writing a function of each
row into a ``[n, d]`` buffer made before the loop by ``R.call_inplace_packed(
"vm.builtin.update_row")`` (the in-place write, O(row) a step); *recurrence*, a state
``h = tanh(h * a + x[t] * b)``; *running*, a state updated by a reduction of the row (max or sum)
and the buffer of rows; and *closure*, a local function capturing a value of ``main``, called
twice (lifted by the build). A program has one to three loops over the same ``x`` (``n`` steps, a
symbolic length), some with identical initial buffers (``R.zeros`` of one shape: passes may make
them one tensor, which one loop must not write under the other), results combined after the
loops. ``LoopProgram.reference`` computes the outputs with numpy, step by step.

``check_relax_loops`` builds once (``relax.build``; optionally exported and loaded back) and runs
the VM at a schedule of lengths (repeats, back and forth, 0) against the reference.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass, field

import numpy as np

from .differential import Finding, compare_values

__all__ = ["LoopProgram", "check_relax_loops", "generate_loop_program"]


@dataclass
class LoopProgram:
    """A module with loops over a ``[n, d]`` input and how to compute its outputs."""

    mod: object
    seed: int
    width: int
    loops: list  # [(kind, params dict)]
    combine: str
    features: set = field(default_factory=set)

    def inputs(self, n: int, k: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, n, k])
        return [rng.uniform(-1.5, 1.5, (n, self.width)).astype("float32")]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        """The outputs, step by step in float32 (the loops' order of operations)."""
        outs = []
        for kind, p in self.loops:
            outs.append(_reference_loop(kind, p, x))
        return _combined(self.combine, outs)


def _row_fn(p: dict, row: np.ndarray) -> np.ndarray:
    a = np.float32(p["a"])
    if p["row"] == "tanh":
        return np.tanh(row * a)
    if p["row"] == "square":
        return row * row + a
    return np.abs(row) - a


def _reference_loop(kind: str, p: dict, x: np.ndarray) -> list[np.ndarray]:
    n, d = x.shape
    if kind == "closure":  # f(v) = tanh(v * a) + w, w = x * b captured; f(f(x))
        w = x * np.float32(p["b"])
        y = x
        for _ in range(2):
            y = np.tanh(y * np.float32(p["a"])) + w
        return [y]
    if kind == "rows":
        buf = np.zeros((n, d), "float32")
        for t in range(n):
            buf[t] = _row_fn(p, x[t])
        return [buf]
    if kind == "recurrence":
        h = np.full((d,), np.float32(p["h0"]), "float32")
        for t in range(n):
            h = np.tanh(h * np.float32(p["a"]) + x[t] * np.float32(p["b"]))
        return [h]
    # running: s = s + max(row) (or sum), rows scaled by the running value
    s = np.zeros((1,), "float32")
    buf = np.zeros((n, d), "float32")
    for t in range(n):
        red = x[t].max(keepdims=True) if p["red"] == "max" else x[t].sum(keepdims=True,
                                                                          dtype="float32")
        s = s + red
        buf[t] = x[t] * s
    return [s, buf]


def _combined(combine: str, outs: list) -> list[np.ndarray]:
    flat = [o for group in outs for o in group]
    if combine == "all":
        return flat
    # "sum": the [n, d] results added after the loops, the others kept
    rows = [o for o in flat if o.ndim == 2]
    rest = [o for o in flat if o.ndim != 2]
    if len(rows) > 1:
        acc = rows[0]
        for r in rows[1:]:
            acc = acc + r
        rows = [acc]
    return rows + rest


class _Builder:
    """Emits the loops of one program into a module (the BlockBuilder API, as importers do)."""

    def __init__(self, seed: int, width: int):
        from ...relax.block_builder import BlockBuilder
        from ...tir import Var as TirVar

        self.rng = random.Random(seed)
        self.width = width
        self.root = BlockBuilder()
        self.n = TirVar("n", "int64")

    def _loop_func(self, kind: str, p: dict):
        """A private recursive function for one loop; returns its GlobalVar."""
        from ...ir.module import GlobalVar
        from ...relax import op as R
        from ...relax.block_builder import BlockBuilder
        from ...relax.expr import Call, If, SeqExpr, Tuple, Var, const
        from ...relax.op.call_inplace import call_inplace_packed
        from ...relax.struct_info import FuncStructInfo, TensorStructInfo, TupleStructInfo
        from ...tir import Var as TirVar

        d = self.width
        steps = TirVar("steps", "int64")
        t = Var("t", TensorStructInfo([], "int64"))
        n = Var("n", TensorStructInfo([], "int64"))
        x = Var("x", TensorStructInfo([steps, d], "float32"))
        if kind == "rows":
            state = [Var("buf", TensorStructInfo([steps, d], "float32"))]
        elif kind == "recurrence":
            state = [Var("h", TensorStructInfo([d], "float32"))]
        else:
            state = [Var("s", TensorStructInfo([1], "float32")),
                     Var("buf", TensorStructInfo([steps, d], "float32"))]
        params = [t, n, x, *state]
        ret = TupleStructInfo([s.struct_info for s in state])
        gv = GlobalVar(self.root._global_names.fresh(f"{kind}_loop"))
        gv._checked_type = FuncStructInfo([v.struct_info for v in params], ret)
        fb = BlockBuilder()
        one = const(np.array(1, "int64"))
        with fb.function(gv.name_hint, params, private=True):
            go = fb.emit(R.less(t, n))
            fb.begin_dataflow_block()
            row = fb.emit(R.take(x, t, 0))
            a = const(np.array(p.get("a", 1.0), "float32"))
            if kind == "rows":
                if p["row"] == "tanh":
                    y = fb.emit(R.tanh(fb.emit(R.multiply(row, a))))
                elif p["row"] == "square":
                    y = fb.emit(R.add(fb.emit(R.multiply(row, row)), a))
                else:
                    y = fb.emit(R.subtract(fb.emit(R.abs(row)), a))
                new = [fb.emit(call_inplace_packed("vm.builtin.update_row", state[0], y, t,
                                                   inplace_indices=[0],
                                                   sinfo_args=state[0].struct_info))]
            elif kind == "recurrence":
                b = const(np.array(p["b"], "float32"))
                new = [fb.emit(R.tanh(fb.emit(R.add(fb.emit(R.multiply(state[0], a)),
                                                    fb.emit(R.multiply(row, b))))))]
            else:
                red = R.max(row, axis=[0], keepdims=True) if p["red"] == "max" else \
                    R.sum(row, axis=[0], keepdims=True)
                s = fb.emit(R.add(state[0], fb.emit(red)))
                y = fb.emit(R.multiply(row, s))
                new = [s, fb.emit(call_inplace_packed("vm.builtin.update_row", state[1], y, t,
                                                      inplace_indices=[0],
                                                      sinfo_args=state[1].struct_info))]
            nxt = [fb.emit(R.add(t, one)), n, x, *new]
            nxt = [v if any(v is q for q in params) else fb.emit_output(v) for v in nxt]
            step = fb.end_block()
            fb.begin_binding_block()
            again = fb.emit(Call(gv, nxt))
            then = SeqExpr([step, fb.end_block()], again)
            done = SeqExpr([], Tuple(list(state)))
            fgv = fb.emit_func_output(fb.emit(If(go, then, done)))
        func = fb.get()[fgv]
        self.root.update_func(gv, func)
        return gv

    def _closure(self, bb, x, p: dict):
        """A local function capturing ``w = x * b`` (lifted by the build), called twice."""
        from ...relax import op as R
        from ...relax.expr import BindingBlock, Call, Function, SeqExpr, Var, VarBinding, const

        sinfo = x.struct_info
        w = bb.emit(R.multiply(x, const(np.array(p["b"], "float32"))))
        v = Var("v", sinfo)
        t0, t1, t2 = Var("t0", sinfo), Var("t1", sinfo), Var("t2", sinfo)
        norm = bb.normalize  # (struct info on each call: the body is built by hand)
        body = [VarBinding(t0, norm(R.multiply(v, const(np.array(p["a"], "float32"))))),
                VarBinding(t1, norm(R.tanh(t0))), VarBinding(t2, norm(R.add(t1, w)))]
        f = bb.emit(Function([v], SeqExpr([BindingBlock(body)], t2), sinfo))
        return bb.emit(Call(f, [bb.emit(Call(f, [x]))]))

    def build(self, loops: list, combine: str):
        from ...relax import op as R
        from ...relax.expr import Call, ShapeExpr, Tuple, TupleGetItem, Var, const
        from ...relax.struct_info import TensorStructInfo

        d = self.width
        x = Var("x", TensorStructInfo([self.n, d], "float32"))
        gvs = [self._loop_func(kind, p) if kind != "closure" else None for kind, p in loops]
        bb = self.root
        with bb.function("main", [x]):
            length = bb.emit(R.take(bb.emit(R.shape_to_tensor(R.shape_of(x))),
                                    const(np.array(0, "int64")), 0))
            results = []
            for (kind, p), gv in zip(loops, gvs, strict=True):
                if kind == "closure":
                    results.append(self._closure(bb, x, p))
                    continue
                zero = const(np.array(0, "int64"))
                if kind == "rows":
                    init = [bb.emit(R.zeros(ShapeExpr([self.n, d]), "float32"))]
                elif kind == "recurrence":
                    init = [bb.emit(R.full(ShapeExpr([d]), const(np.array(p["h0"], "float32")),
                                           "float32"))]
                else:
                    init = [bb.emit(R.zeros(ShapeExpr([1]), "float32")),
                            bb.emit(R.zeros(ShapeExpr([self.n, d]), "float32"))]
                res = bb.emit(Call(gv, [zero, length, x, *init]))
                for k in range(len(init)):
                    out = bb.emit(TupleGetItem(res, k))
                    if init[k].struct_info.ndim == 2:
                        out = bb.match_cast(out, TensorStructInfo([self.n, d], "float32"))
                    results.append(out)
            if combine == "sum":
                rows = [r for r in results if r.struct_info.ndim == 2]
                rest = [r for r in results if r.struct_info.ndim != 2]
                if len(rows) > 1:
                    acc = rows[0]
                    for r in rows[1:]:
                        acc = bb.emit(R.add(acc, r))
                    rows = [acc]
                results = rows + rest
            bb.emit_func_output(bb.emit(Tuple(results)))
        return bb.get()


def generate_loop_program(seed: int) -> LoopProgram:
    """One to three loops over a ``[n, width]`` input (kinds and constants by ``seed``)."""
    rng = random.Random(seed)
    width = rng.choice([1, 3, 4])
    loops = []
    for _ in range(rng.choice([1, 2, 2, 3])):
        kind = rng.choice(["rows", "rows", "recurrence", "running", "closure"])
        p = {"a": rng.choice([0.5, 1.0, 2.0]), "b": rng.choice([0.5, -1.0]),
             "h0": rng.choice([0.0, 0.25]), "row": rng.choice(["tanh", "square", "abs"]),
             "red": rng.choice(["max", "sum"])}
        loops.append((kind, p))
    combine = rng.choice(["all", "sum"])
    mod = _Builder(seed, width).build(loops, combine)
    features = {kind for kind, _ in loops}
    if sum(1 for kind, _ in loops if kind in ("rows", "running")) > 1:
        features.add("shared-zeros")
    return LoopProgram(mod, seed, width, loops, combine, features)


#: passes that may run before the build (each with probability 1/2, in this order)
_PRE_PASSES = ("CanonicalizeBindings", "EliminateCommonSubexpr", "FoldConstant",
               "DeadCodeElimination")


def check_relax_loops(prog: LoopProgram, sizes: list[int] | None = None,
                      saved: bool | None = None, passes: list | None = None) -> list[Finding]:
    """``passes`` (names of ``relax.transform``; by default drawn from ``_PRE_PASSES`` by the
    seed), then ``relax.build`` once (exported and loaded back when ``saved``; by default every
    other seed), then the VM at each length of ``sizes`` against ``prog.reference``."""
    import minitvm as tvm
    from minitvm import relax

    from .dynamic_generator import size_schedule
    from .relax_differential import _script, exported_and_loaded

    rng = random.Random(prog.seed)
    if sizes is None:
        sizes = size_schedule(rng, 0)
    if saved is None:
        saved = prog.seed % 2 == 1
    # passes of a pure IR before the build (by seed): CSE may make two loops' zeros one tensor
    names = [nm for nm in _PRE_PASSES if rng.random() < 0.5] if passes is None else passes
    where = "relax loops" + (" saved" if saved else "") + (f" after {'+'.join(names)}"
                                                            if names else "")
    text = _script(prog.mod)
    try:
        mod = prog.mod
        for nm in names:
            mod = getattr(relax.transform, nm)()(mod)
        ex = relax.build(mod, target="llvm")
        if saved:
            with tempfile.TemporaryDirectory() as folder:
                ex = exported_and_loaded(ex, folder)
        vm = relax.VirtualMachine(ex, tvm.cpu())
    except Exception as err:  # noqa: BLE001 - what the fuzzer looks for
        return [Finding("exception", where, prog.seed, f"build: {type(err).__name__}: "
                        f"{str(err)[:500]}", text)]
    for k, n in enumerate(sizes):
        (x,) = prog.inputs(n, k)
        want = prog.reference(x)
        x_before = x.copy()
        at = f"run {k} (n={n}, sizes {sizes[:k + 1]})"
        try:
            out = vm["main"](x)
        except Exception as err:  # noqa: BLE001
            return [Finding("exception", where, prog.seed, f"{at}: {type(err).__name__}: "
                            f"{str(err)[:400]}", text)]
        got = [np.asarray(o.numpy() if hasattr(o, "numpy") else o)
               for o in (out if isinstance(out, tuple | list) else [out])]
        diff = compare_values(want, got)
        if diff:
            return [Finding("mismatch", where, prog.seed, f"{at}: {diff}", text)]
        if not np.array_equal(x, x_before):
            return [Finding("mismatch", where, prog.seed, f"{at}: the input was written",
                            text)]
    return []
