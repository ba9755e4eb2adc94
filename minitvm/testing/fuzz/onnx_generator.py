"""Random ONNX graphs with their inputs, for the importers' differential fuzzer.

A graph grows from one to three inputs (float32 mostly; float16, int8, uint8, int32, int64 and
bool too): each step picks an operator family and operands from the values built so far, with
random attributes -- elementwise and broadcasting ops, comparisons and ``Where``, casts,
reductions (axes as attribute or input by opset), ``ArgMax`` / ``ArgMin`` with ties,
softmax, ``Gather`` / ``Slice`` / ``Concat`` / ``Reshape`` / ``Transpose`` / ``Squeeze`` /
``Unsqueeze`` / ``Flatten`` / ``Tile`` / ``Expand`` / ``Pad`` / ``Split``, ``MatMul``, ``Gemm``,
``Conv`` and pools -- at an opset drawn from 13, 15, 17 and 18. The second operand of a binary
op broadcasts (a value of the pool whose shape fits, a new input or an initializer).

Values stay finite and moderate (a clip before growth, logs and roots of ``abs(x) + 1``,
division by non-zero constants), so the importers' results must match ONNX Runtime's within a
float tolerance. Float inputs are multiples of 1/4 (exact in float16): a value that only moved,
was negated, clipped or compared is *exact*, and only exact floats reach the ops that jump
(floor, round, sign, comparisons, casts to integers, arg-max), so a tie there (``Round`` of
k + 0.5, equal maxima) is a real one, the same on both sides.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

__all__ = ["OnnxProgram", "Val", "generate_onnx_program", "OPSETS"]

OPSETS = (13, 15, 17, 18)
FLOATS = ("float32", "float16")
INTS = ("int8", "uint8", "int32", "int64")
#: Input dtypes, float32 most often.
INPUT_DTYPES = ("float32",) * 6 + ("float16", "int8", "uint8", "int32", "int64", "bool")
#: The most elements a value may have.
MAX_SIZE = 256
#: Above this magnitude a value is clipped before an op that could make it grow.
GROWTH_BOUND = 64.0

_UNARY = ("Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Erf",
          "Softplus", "Softsign", "LeakyRelu", "Elu", "Selu", "HardSigmoid", "HardSwish",
          "Sin", "Cos", "Atan", "Clip", "Floor", "Ceil", "Round", "Sign", "Identity")
#: Unary ops whose value jumps: only exact inputs.
_JUMPS = {"Floor", "Ceil", "Round", "Sign"}
#: Unary ops that keep a value exact (it moves or flips sign).
_EXACT_UNARY = {"Relu", "Abs", "Neg", "Clip", "Floor", "Ceil", "Round", "Sign", "Identity"}
_COMPARE = ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")


@dataclass
class Val:
    """A value of the graph: its name, numpy dtype, static shape, whether it is exact (see the
    module docstring) and a bound on its magnitude."""

    name: str
    dtype: str
    shape: tuple
    exact: bool = True
    bound: float = 4.0


@dataclass
class OnnxProgram:
    """A generated model, its feeds (by input name), ONNX Runtime's outputs and the families
    of operators it uses."""

    seed: int
    model: object
    feeds: dict
    expected: list
    opset: int
    features: set = field(default_factory=set)


def _proto(dtype: str) -> int:
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _values(rng: np.random.Generator, dtype: str, shape: tuple) -> np.ndarray:
    """Random values of ``dtype``: floats on the 1/4 grid in [-4, 4], small integers, bools."""
    if dtype in FLOATS:
        return np.asarray(rng.integers(-16, 17, shape) / 4, dtype)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    lo = 0 if dtype == "uint8" else -10
    return np.asarray(rng.integers(lo, 21 if dtype == "uint8" else 11, shape), dtype)


class _Builder:
    """The graph under construction: nodes, inputs, initializers and the pool of values."""

    def __init__(self, seed: int, opset: int):
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.opset = opset
        self.nodes, self.inputs, self.inits, self.feeds = [], [], {}, {}
        self.pool: list[Val] = []
        self.features: set = set()
        self.count = 0

    # -------------------------------------------------------------- values
    def fresh(self, prefix: str = "v") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def new_input(self, dtype: str, shape: tuple) -> Val:
        v = Val(self.fresh("in"), dtype, tuple(shape))
        self.inputs.append(v)
        self.feeds[v.name] = _values(self.np_rng, dtype, v.shape)
        self.pool.append(v)
        return v

    def const(self, array: np.ndarray, exact: bool = True) -> Val:
        """An initializer holding ``array``."""
        array = np.asarray(array)
        v = Val(self.fresh("c"), str(array.dtype), array.shape, exact,
                float(np.abs(array.astype("float64")).max()) if array.size else 0.0)
        self.inits[v.name] = array
        return v

    def new_operand(self, dtype: str, shape: tuple) -> Val:
        """A new graph input or initializer of ``dtype`` and ``shape``."""
        if self.rng.random() < 0.5:
            return self.new_input(dtype, shape)
        return self.const(_values(self.np_rng, dtype, shape))

    def node(self, op: str, ins: list, dtype: str, shape: tuple, exact: bool = False,
             bound: float = 4.0, n_out: int = 1, **attrs) -> Val | list[Val]:
        from onnx import helper

        outs = [Val(self.fresh(), dtype, tuple(shape), exact, bound) for _ in range(n_out)]
        names = [i.name if isinstance(i, Val) else i for i in ins]
        self.nodes.append(helper.make_node(op, names, [o.name for o in outs], **attrs))
        self.pool.extend(outs)
        self.features.add(op)
        return outs[0] if n_out == 1 else outs

    def ints(self, values) -> Val:
        return self.const(np.asarray(list(values), "int64"))

    # -------------------------------------------------------------- choices
    def pick(self, pred=None) -> Val | None:
        """A value of the pool (recent ones more often) satisfying ``pred``."""
        cands = [v for v in self.pool if pred is None or pred(v)]
        if not cands:
            return None
        if self.rng.random() < 0.6:
            return cands[-1 - min(int(self.rng.expovariate(0.7)), len(cands) - 1)]
        return self.rng.choice(cands)

    def tamed(self, v: Val, limit: float = GROWTH_BOUND) -> Val:
        """``v`` clipped to [-limit, limit] when its bound is larger (floats only)."""
        if v.dtype not in FLOATS or v.bound <= limit:
            return v
        lo, hi = self.const(np.array(-limit, v.dtype)), self.const(np.array(limit, v.dtype))
        return self.node("Clip", [v, lo, hi], v.dtype, v.shape, v.exact, limit)

    def exact_float(self) -> Val:
        v = self.pick(lambda u: u.dtype in FLOATS and u.exact)
        return v if v is not None else self.new_input("float32", self.shape())

    def shape(self, rank: int | None = None) -> tuple:
        rank = self.rng.choice([1, 2, 2, 3, 3, 4]) if rank is None else rank
        dims = [self.rng.choice([1, 2, 3, 4, 5]) for _ in range(rank)]
        while int(np.prod(dims)) > MAX_SIZE:
            dims[dims.index(max(dims))] //= 2
        return tuple(dims)

    def partner_shape(self, shape: tuple) -> tuple:
        """A shape that broadcasts with ``shape`` (fewer leading dims, some 1s, or one more
        leading dim, so either side may be the one broadcast)."""
        r = self.rng.random()
        dims = list(shape)
        if r < 0.3:
            return tuple(dims)
        if r < 0.5 and dims:
            dims = dims[self.rng.randint(1, len(dims)):]
        full = len(dims) == len(shape)
        dims = [1 if self.rng.random() < 0.3 else d for d in dims]
        if full and self.rng.random() < 0.15 and len(dims) < 4 \
                and int(np.prod(shape)) * 3 <= MAX_SIZE:
            dims = [self.rng.choice([2, 3])] + dims
        return tuple(dims)

    def operand_like(self, a: Val, dtype: str | None = None) -> Val:
        """A second operand for ``a``: a pool value whose shape broadcasts with it (dtype
        ``dtype`` or ``a``'s), else a new one."""
        dtype = dtype or a.dtype

        def fits(v):
            if v.dtype != dtype or v is a:
                return False
            try:
                out = np.broadcast_shapes(a.shape, v.shape)
            except ValueError:
                return False
            return int(np.prod(out)) <= MAX_SIZE
        v = self.pick(fits) if self.rng.random() < 0.5 else None
        return v if v is not None else self.new_operand(dtype, self.partner_shape(a.shape))

    # -------------------------------------------------------------- families
    def unary(self) -> None:
        a = self.pick(lambda v: v.dtype != "bool") or self.new_input("float32", self.shape())
        if a.dtype not in FLOATS:
            op = self.rng.choice(["Abs", "Neg", "Sign", "Clip", "Identity"])
            if op == "Neg" and a.dtype == "uint8":
                op = "Abs"
            if op == "Clip":
                lo, hi = sorted(self.rng.sample(range(-5, 15), 2))
                if a.dtype == "uint8":
                    lo, hi = abs(lo), abs(lo) + abs(hi) + 1
                ins = [a, self.const(np.array(lo, a.dtype)), self.const(np.array(hi, a.dtype))]
                self.node("Clip", ins, a.dtype, a.shape, True, a.bound)
            else:
                self.node(op, [a], a.dtype, a.shape, True, a.bound)
            self.features.add(f"{op} {a.dtype}")
            return
        op = self.rng.choice(_UNARY)
        if op in _JUMPS:
            a = self.exact_float()
        attrs: dict = {}
        ins: list = [a]
        bound = a.bound
        if op == "Exp":
            ins = [self.tamed(a, 8.0)]
            bound = float(np.exp(min(a.bound, 8.0)))
        elif op in ("Log", "Sqrt", "Reciprocal"):
            one = self.const(np.array(1.0, a.dtype))
            ins = [self.node("Add", [self.node("Abs", [a], a.dtype, a.shape, a.exact, a.bound),
                                     one], a.dtype, a.shape, False, a.bound + 1)]
            bound = 1.0 if op == "Reciprocal" else a.bound + 1
        elif op in ("Sigmoid", "Tanh", "Erf", "Softsign", "HardSigmoid", "Sin", "Cos", "Atan"):
            bound = 2.0
        elif op == "LeakyRelu":
            attrs["alpha"] = self.rng.choice([0.01, 0.1, 0.25])
        elif op in ("Elu", "Selu"):
            if self.rng.random() < 0.5:
                attrs["alpha"] = self.rng.choice([0.5, 1.0, 1.5])
            bound = 2 * a.bound + 2
        elif op == "HardSigmoid":
            attrs.update(alpha=self.rng.choice([0.2, 0.5]), beta=self.rng.choice([0.5, 0.25]))
        elif op == "Clip":
            lo, hi = sorted(self.rng.sample([-3.0, -1.5, -0.25, 0.0, 0.5, 1.0, 2.75], 2))
            ins = [a, self.const(np.array(lo, a.dtype)) if self.rng.random() < 0.8 else "",
                   self.const(np.array(hi, a.dtype))]
            bound = min(a.bound, max(abs(lo), abs(hi)))
        elif op == "Softplus":  # (ONNX Runtime's float16 exp overflows past 11: inf)
            ins = [self.tamed(a, 8.0)]
            bound = min(a.bound, 8.0) + 1
        self.node(op, ins, a.dtype, a.shape, a.exact and op in _EXACT_UNARY, bound, **attrs)
        self.features.add(f"{op} {a.dtype}" if a.dtype == "float16" else op)

    def binary(self) -> None:
        a = self.pick() or self.new_input("float32", self.shape())
        dt = a.dtype
        if dt == "bool":
            op = self.rng.choice(["And", "Or", "Xor", "Equal", "Not"])
            if op == "Not":
                self.node("Not", [a], "bool", a.shape, True, 1.0)
                return
            b = self.operand_like(a)
            self.node(op, [a, b], "bool", np.broadcast_shapes(a.shape, b.shape), True, 1.0)
            return
        ops = ["Add", "Sub", "Mul", "Div", "Max", "Min", "Mod", "Compare"]
        if dt in FLOATS:
            ops += ["Pow", "PRelu"]
        if dt == "uint8" and self.opset >= 11:
            ops.append("BitShift")
        if dt in INTS and self.opset >= 18:
            ops.append("Bitwise")
        op = self.rng.choice(ops)
        if op in ("Compare", "Mod") and dt in FLOATS:
            a = self.exact_float()
            dt = a.dtype
        if op in ("Add", "Sub", "Mul", "Pow", "PRelu"):
            a = self.tamed(a)
        if op == "Div" or op == "Mod":
            # a non-zero constant divisor (no -1: int8 -128 / -1 overflows)
            shape = self.partner_shape(a.shape)
            mags = self.np_rng.integers(1, 8, shape)
            signs = 1 if dt == "uint8" else self.np_rng.choice([-1, 1], shape)
            div = np.where(mags == 1, 1, mags * signs).astype(dt)
            if dt in FLOATS and op == "Div":
                div = (div / 2).astype(dt)
            b = self.const(div)
            attrs = {}
            if op == "Mod":
                fmod = 1 if dt in FLOATS else self.rng.randint(0, 1)
                attrs["fmod"] = fmod
                self.features.add(f"Mod fmod={fmod} {dt}")
            out = np.broadcast_shapes(a.shape, b.shape)
            self.node(op, [a, b], dt, out, a.exact and op == "Mod", a.bound * 2, **attrs)
            self.features.add(f"Div {dt}" if op == "Div" else "Mod")
            return
        if op == "Pow":
            base = self.node("Abs", [a], dt, a.shape, a.exact, a.bound)
            base = self.node("Add", [base, self.const(np.array(0.5, dt))], dt, a.shape, False,
                             a.bound + 0.5)
            e = self.const(np.array(self.rng.choice([0.5, 2.0, 3.0, -1.0, 1.5]), dt))
            self.node("Pow", [self.tamed(base, 8.0), e], dt, a.shape, False, 8.0 ** 3)
            return
        if op == "PRelu":
            # the slope broadcasts unidirectionally to the input
            shape = tuple(1 if self.rng.random() < 0.5 else d for d in a.shape)
            shape = shape[self.rng.randint(0, len(shape)):] if shape else shape
            slope = self.const((self.np_rng.integers(-4, 5, shape) / 4).astype(dt))
            self.node("PRelu", [a, slope], dt, a.shape, False, a.bound)
            return
        if op == "BitShift":
            b = self.const(self.np_rng.integers(0, 8, self.partner_shape(a.shape)).astype(dt))
            direction = self.rng.choice(["LEFT", "RIGHT"])
            self.node("BitShift", [a, b], dt, np.broadcast_shapes(a.shape, b.shape), True,
                      255.0, direction=direction)
            self.features.add(f"BitShift {direction}")
            return
        b = self.operand_like(a)
        out = np.broadcast_shapes(a.shape, b.shape)
        if op == "Bitwise":
            op = self.rng.choice(["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
            self.node(op, [a, b], dt, out, True, max(a.bound, b.bound) * 2)
            return
        if op == "Compare":
            op = self.rng.choice(_COMPARE)
            if dt in FLOATS and not b.exact:
                b = self.new_operand(dt, self.partner_shape(a.shape))
                out = np.broadcast_shapes(a.shape, b.shape)
            self.node(op, [a, b], "bool", out, True, 1.0)
            self.features.add(op)
            return
        if op in ("Add", "Sub", "Mul"):
            b = self.tamed(b)
        exact = a.exact and b.exact and (op in ("Max", "Min") or dt not in FLOATS)
        bound = a.bound * b.bound if op == "Mul" else a.bound + b.bound
        self.node(op, [a, b], dt, out, exact, bound)
        self.features.add(f"{op} {dt}" if dt != "float32" else op)

    def where(self) -> None:
        cond = self.pick(lambda v: v.dtype == "bool")
        if cond is None:
            x = self.exact_float()
            cond = self.node("Greater", [x, self.const(np.array(0, x.dtype))], "bool", x.shape,
                             True, 1.0)
        a = self.pick(lambda v: v.dtype != "bool") or self.new_input("float32", self.shape())
        b = self.operand_like(a)
        c_shape = cond.shape
        try:
            out = np.broadcast_shapes(cond.shape, a.shape, b.shape)
        except ValueError:
            c_shape = tuple(1 if self.rng.random() < 0.5 else d for d in a.shape)
            cond = self.const(self.np_rng.random(c_shape) < 0.5)
            out = np.broadcast_shapes(cond.shape, a.shape, b.shape)
        if int(np.prod(out)) > MAX_SIZE:
            return
        self.node("Where", [cond, a, b], a.dtype, out, a.exact and b.exact,
                  max(a.bound, b.bound))

    def cast(self) -> None:
        a = self.pick() or self.new_input("float32", self.shape())
        to = self.rng.choice(FLOATS + INTS + ("bool", "float64"))
        if a.dtype in FLOATS and to in INTS:
            if not a.exact:
                a = self.exact_float()
            lo, hi = (0, 200) if to == "uint8" else (-100, 100)
            ins = [a, self.const(np.array(lo, a.dtype)), self.const(np.array(hi, a.dtype))]
            a = self.node("Clip", ins, a.dtype, a.shape, True, 200.0)
        if a.dtype in FLOATS and to == "bool" and not a.exact:
            a = self.exact_float()
        exact = a.exact or to == "bool"
        self.node("Cast", [a], to, a.shape, exact, a.bound, to=_proto(to))
        self.features.add(f"Cast {a.dtype}->{to}")

    def reduce(self) -> None:
        a = self.pick(lambda v: v.dtype in FLOATS + ("int32", "int64") and len(v.shape) >= 1)
        a = a or self.new_input("float32", self.shape())
        ops = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"]
        if a.dtype in FLOATS:
            ops += ["ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare", "ReduceLogSum"]
        op = self.rng.choice(ops)
        if op == "ReduceProd" and a.dtype not in FLOATS and \
                a.bound ** max(1, int(np.prod(a.shape))) > 2 ** 31:
            # (an overflowing int product: ONNX Runtime gave INT_MIN, not the wrapped value)
            op = "ReduceMax"
        a = self.tamed(a, 4.0 if op in ("ReduceProd", "ReduceLogSumExp") else GROWTH_BOUND)
        if op == "ReduceLogSum":
            a = self.node("Abs", [a], a.dtype, a.shape, a.exact, a.bound)
            a = self.node("Add", [a, self.const(np.array(1, a.dtype))], a.dtype, a.shape,
                          False, a.bound + 1)
        rank = len(a.shape)
        axes = sorted(self.rng.sample(range(rank), self.rng.randint(0, rank)))
        axes_out = axes if axes else list(range(rank))
        keep = self.rng.randint(0, 1)
        shape = tuple(1 if i in axes_out else d for i, d in enumerate(a.shape)) if keep else \
            tuple(d for i, d in enumerate(a.shape) if i not in axes_out)
        given = [ax - rank if self.rng.random() < 0.3 else ax for ax in axes]
        as_input = self.opset >= 18 or op == "ReduceSum"
        attrs = {"keepdims": keep}
        ins: list = [a]
        if axes and as_input:
            ins.append(self.ints(given))
        elif axes:
            attrs["axes"] = given
        bound = a.bound * max(1, int(np.prod(a.shape)))
        if op == "ReduceProd":
            bound = a.bound ** max(1, int(np.prod(a.shape)))
        exact = a.exact and op in ("ReduceMax", "ReduceMin")
        self.node(op, ins, a.dtype, shape, exact, min(bound, 1e30), **attrs)
        self.features.add(f"{op} {'all' if not axes else 'axes'} keepdims={keep}")

    def argmax(self) -> None:
        a = self.pick(lambda v: v.shape and v.exact and v.dtype in FLOATS + INTS)
        a = a or self.new_input(self.rng.choice(["float32", "int32", "int8"]), self.shape())
        op = self.rng.choice(["ArgMax", "ArgMin"])
        axis = self.rng.randrange(len(a.shape))
        keep, last = self.rng.randint(0, 1), self.rng.randint(0, 1)
        shape = tuple(1 if i == axis else d for i, d in enumerate(a.shape)) if keep else \
            tuple(d for i, d in enumerate(a.shape) if i != axis)
        self.node(op, [a], "int64", shape, True, float(a.shape[axis]),
                  axis=axis - len(a.shape) if self.rng.random() < 0.3 else axis,
                  keepdims=keep, select_last_index=last)
        self.features.add(f"{op} select_last_index={last}")

    def softmax(self) -> None:
        a = self.pick(lambda v: v.dtype in FLOATS and v.shape)
        a = self.tamed(a or self.new_input("float32", self.shape()))
        op = self.rng.choice(["Softmax", "LogSoftmax"])
        axis = self.rng.randrange(-len(a.shape), len(a.shape))
        self.node(op, [a], a.dtype, a.shape, False, 1.0 if op == "Softmax" else a.bound * 2 + 6,
                  axis=axis)

    def movement(self) -> None:
        """A data-movement op: the value keeps its exactness and bound."""
        a = self.pick(lambda v: len(v.shape) >= 1) or self.new_input("float32", self.shape())
        rank, rng = len(a.shape), self.rng
        kind = rng.choice(["Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat",
                           "Slice", "Gather", "Tile", "Expand", "Pad", "Split",
                           "GatherElements"])

        def out(op, ins, shape, n_out=1, **attrs):
            return self.node(op, ins, a.dtype, shape, a.exact, a.bound, n_out, **attrs)

        if kind == "Transpose":
            perm = list(range(rank))
            rng.shuffle(perm)
            if rng.random() < 0.2:
                out("Transpose", [a], a.shape[::-1])
            else:
                out("Transpose", [a], tuple(a.shape[p] for p in perm), perm=perm)
        elif kind == "Reshape":
            size = int(np.prod(a.shape))
            if size == 0:  # (-1 is ambiguous there)
                return
            dims = _factorize(size, rng)
            given = list(dims)
            if given and rng.random() < 0.4:
                given[rng.randrange(len(given))] = -1
            if rng.random() < 0.3:  # 0 copies the input's dim
                k = rng.randrange(min(len(given), rank)) if given else 0
                if given and dims[k] == a.shape[k]:
                    given[k] = 0
            out("Reshape", [a, self.ints(given)], tuple(dims))
        elif kind == "Flatten":
            axis = rng.randint(0, rank)
            shape = (int(np.prod(a.shape[:axis])), int(np.prod(a.shape[axis:])))
            out("Flatten", [a], shape,
                axis=axis - rank if axis < rank and rng.random() < 0.3 else axis)
        elif kind == "Squeeze":
            ones = [i for i, d in enumerate(a.shape) if d == 1]
            axes = sorted(rng.sample(ones, rng.randint(0, len(ones)))) if ones else []
            drop = axes if axes else ones
            shape = tuple(d for i, d in enumerate(a.shape) if i not in drop)
            out("Squeeze", [a, self.ints(axes)] if axes else [a], shape)
        elif kind == "Unsqueeze":
            if rank >= 4:
                return
            k = rng.randint(0, rank)
            shape = a.shape[:k] + (1,) + a.shape[k:]
            out("Unsqueeze", [a, self.ints([k - rank - 1 if rng.random() < 0.3 else k])], shape)
        elif kind == "Concat":
            axis = rng.randrange(rank)
            others = [v for v in self.pool if v.dtype == a.dtype and len(v.shape) == rank
                      and all(d == e for i, (d, e) in enumerate(zip(v.shape, a.shape))
                              if i != axis)]
            parts = [a] + rng.sample(others, min(len(others), rng.randint(0, 2)))
            if len(parts) == 1:
                shape = list(a.shape)
                shape[axis] = rng.randint(1, 3)
                parts.append(self.new_operand(a.dtype, tuple(shape)))
            rng.shuffle(parts)
            shape = list(a.shape)
            shape[axis] = sum(p.shape[axis] for p in parts)
            if int(np.prod(shape)) > MAX_SIZE:
                return
            exact = all(p.exact for p in parts)
            self.node("Concat", parts, a.dtype, tuple(shape), exact,
                      max(p.bound for p in parts), axis=axis - rank if rng.random() < 0.3
                      else axis)
        elif kind == "Slice":
            axes = sorted(rng.sample(range(rank), rng.randint(1, rank)))
            starts, ends, steps, shape = [], [], [], list(a.shape)
            for ax in axes:
                d = a.shape[ax]
                step = rng.choice([1, 1, 2, -1, -2, 3])
                s = rng.randint(-d - 2, d + 2)
                e = rng.choice([rng.randint(-d - 2, d + 2), 2 ** 62, -2 ** 62])
                starts.append(s)
                ends.append(e)
                steps.append(step)
                shape[ax] = _slice_len(d, s, e, step)
            given_axes = [ax - rank if rng.random() < 0.3 else ax for ax in axes]
            ins = [a, self.ints(starts), self.ints(ends), self.ints(given_axes)]
            if any(s != 1 for s in steps) or rng.random() < 0.5:
                ins.append(self.ints(steps))
            out("Slice", ins, tuple(shape))
            self.features.add("Slice step" if any(s != 1 for s in steps) else "Slice")
        elif kind == "Gather":
            axis = rng.randrange(rank)
            d = a.shape[axis]
            if d == 0:
                return
            ishape = self.shape(rng.randint(0, 2))
            idx = self.np_rng.integers(-d, d, ishape).astype(rng.choice(["int64", "int32"]))
            shape = a.shape[:axis] + ishape + a.shape[axis + 1:]
            if int(np.prod(shape)) > MAX_SIZE:
                return
            out("Gather", [a, self.const(idx)], shape, axis=axis)
            self.features.add(f"Gather rank-{len(ishape)} indices")
        elif kind == "GatherElements":
            axis = rng.randrange(rank)
            d = a.shape[axis]
            if d == 0:
                return
            ishape = tuple(rng.randint(1, d + 1) if i == axis else rng.randint(min(e, 1), e)
                           for i, e in enumerate(a.shape))
            idx = self.np_rng.integers(-d, d, ishape).astype("int64")
            out("GatherElements", [a, self.const(idx)], ishape, axis=axis)
        elif kind == "Tile":
            reps = [rng.choice([1, 1, 2, 3]) for _ in range(rank)]
            shape = tuple(d * r for d, r in zip(a.shape, reps, strict=True))
            if int(np.prod(shape)) > MAX_SIZE:
                return
            out("Tile", [a, self.ints(reps)], shape)
        elif kind == "Expand":
            target = [rng.choice([2, 3]) if d == 1 and rng.random() < 0.6 else d
                      for d in a.shape]
            if rng.random() < 0.3 and rank < 4:
                target = [rng.choice([1, 2])] + target
            given = [1 if rng.random() < 0.3 and i >= len(target) - rank
                     and a.shape[i - len(target) + rank] != 1 else t
                     for i, t in enumerate(target)]
            shape = np.broadcast_shapes(a.shape, tuple(given))
            if int(np.prod(shape)) > MAX_SIZE:
                return
            out("Expand", [a, self.ints(given)], shape)
        elif kind == "Pad":
            mode = rng.choice(["constant", "constant", "reflect", "edge"])
            pads = [rng.randint(0, 2) for _ in range(2 * rank)]
            if mode == "reflect":  # reflect needs pads smaller than the dim
                pads = [min(p, a.shape[i % rank] - 1) for i, p in enumerate(pads)]
            shape = tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(a.shape))
            if int(np.prod(shape)) > MAX_SIZE:
                return
            ins: list = [a, self.ints(pads)]
            if mode == "constant" and rng.random() < 0.5 and a.dtype != "bool":
                ins.append(self.const(np.array(rng.choice([0, 1, 3]), a.dtype)))
            out("Pad", ins, shape, mode=mode)
            self.features.add(f"Pad {mode}")
        elif kind == "Split":
            axis = rng.randrange(rank)
            d = a.shape[axis]
            if d < 2:
                return
            cut = sorted(rng.sample(range(1, d), rng.randint(1, min(2, d - 1))))
            sizes = [e - s for s, e in zip([0] + cut, cut + [d], strict=True)]
            parts = out("Split", [a, self.ints(sizes)], a.shape, len(sizes), axis=axis)
            parts = parts if isinstance(parts, list) else [parts]
            for p, s in zip(parts, sizes, strict=True):
                p.shape = a.shape[:axis] + (s,) + a.shape[axis + 1:]

    def matmul(self) -> None:
        a = self.pick(lambda v: v.dtype in FLOATS and 1 <= len(v.shape) <= 4)
        a = self.tamed(a or self.new_input("float32", self.shape()))
        k = a.shape[-1]
        if len(a.shape) == 1 or self.rng.random() < 0.15:
            bshape = (k,)
        else:
            batch = tuple(1 if self.rng.random() < 0.3 else d for d in a.shape[:-2])
            batch = batch[self.rng.randint(0, len(batch)):] if batch else batch
            bshape = batch + (k, self.rng.randint(1, 5))
        b = self.pick(lambda v: v.dtype == a.dtype and v.shape == bshape and v is not a)
        b = self.tamed(b or self.new_operand(a.dtype, bshape))
        if len(a.shape) == 1 and len(bshape) == 1:
            shape = ()
        elif len(bshape) == 1:
            shape = a.shape[:-1]
        elif len(a.shape) == 1:
            shape = bshape[:-2] + bshape[-1:]
        else:
            shape = np.broadcast_shapes(a.shape[:-2], bshape[:-2]) + (a.shape[-2], bshape[-1])
        if int(np.prod(shape)) > MAX_SIZE:
            return
        self.node("MatMul", [a, b], a.dtype, shape, False, a.bound * b.bound * k)
        self.features.add(f"MatMul {len(a.shape)}x{len(bshape)}")

    def gemm(self) -> None:
        a = self.pick(lambda v: v.dtype == "float32" and len(v.shape) == 2)
        a = self.tamed(a or self.new_input("float32", self.shape(2)))
        ta, tb = self.rng.randint(0, 1), self.rng.randint(0, 1)
        m, k = a.shape[::-1] if ta else a.shape
        n = self.rng.randint(1, 5)
        b = self.new_operand("float32", (n, k) if tb else (k, n))
        attrs = {"transA": ta, "transB": tb}
        if self.rng.random() < 0.5:
            attrs["alpha"] = self.rng.choice([0.5, 2.0])
        ins = [a, b]
        if self.rng.random() < 0.7:
            ins.append(self.new_operand("float32", self.rng.choice([(n,), (1, n), (m, n), (m, 1),
                                                                   ()])))
            if self.rng.random() < 0.5:
                attrs["beta"] = self.rng.choice([0.5, 3.0])
        self.node("Gemm", ins, "float32", (m, n), False, a.bound * 4 * k * 2 + 12, **attrs)
        self.features.add(f"Gemm transA={ta} transB={tb}")

    def conv(self) -> None:
        """``Conv`` or a pool over an NC[H]W value (one reshaped into that layout if need be)."""
        rng = self.rng
        a = self.pick(lambda v: v.dtype == "float32" and len(v.shape) in (3, 4)
                      and min(v.shape[2:]) >= 2 and 0 not in v.shape)
        if a is None:
            a = self.new_input("float32", (rng.randint(1, 2), rng.randint(1, 4))
                               + tuple(rng.randint(3, 6) for _ in range(rng.randint(1, 2))))
        a = self.tamed(a)
        n, c, *spatial = a.shape
        sd = len(spatial)
        kind = rng.choice(["Conv", "Conv", "MaxPool", "AveragePool", "GlobalAveragePool",
                           "GlobalMaxPool"])
        if kind.startswith("Global"):
            self.node(kind, [a], "float32", (n, c) + (1,) * sd, False, a.bound)
            return
        kernel = [rng.randint(1, min(3, d)) for d in spatial]
        strides = [rng.choice([1, 1, 2]) for _ in spatial]
        dil = [rng.choice([1, 1, 2]) if (kernel[i] - 1) * 2 + 1 <= spatial[i] else 1
               for i in range(sd)]
        pads = [rng.randint(0, kernel[i % sd] - 1) for i in range(2 * sd)]
        attrs: dict = {"kernel_shape": kernel, "strides": strides}
        auto = rng.choice(["NOTSET"] * 4 + ["SAME_UPPER", "SAME_LOWER", "VALID"])
        if kind == "AveragePool" and self.opset < 19:
            dil = [1] * sd
        if auto != "NOTSET":
            attrs["auto_pad"] = auto
            dil = [1] * sd  # (ONNX Runtime has no dilated SAME padding)
            if auto == "VALID":
                pads = [0] * (2 * sd)
            else:
                pads = []
                for i in range(sd):
                    o = -(-spatial[i] // strides[i])
                    total = max(0, (o - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1
                                - spatial[i])
                    small, big = total // 2, total - total // 2
                    pads.append((small, big) if auto == "SAME_UPPER" else (big, small))
                pads = [p[0] for p in pads] + [p[1] for p in pads]
        else:
            attrs["pads"] = pads
        if any(d != 1 for d in dil):
            attrs["dilations"] = dil
        ceil = kind != "Conv" and auto == "NOTSET" and rng.random() < 0.3
        out_sp = []
        for i in range(sd):
            span = spatial[i] + pads[i] + pads[i + sd] - (kernel[i] - 1) * dil[i] - 1
            # (ONNX Runtime keeps a last window that starts in the end padding)
            out_sp.append((-(-span // strides[i]) if ceil else span // strides[i]) + 1)
        if min(out_sp) < 1:
            return
        if kind == "Conv":
            group = rng.choice([g for g in (1, 2, c) if c % g == 0])
            oc = group * rng.randint(1, 3)
            w = self.const((self.np_rng.integers(-8, 9, (oc, c // group, *kernel)) / 8)
                           .astype("float32"))
            ins = [a, w]
            if rng.random() < 0.5:
                ins.append(self.const((self.np_rng.integers(-8, 9, oc) / 4).astype("float32")))
            attrs["group"] = group
            bound = a.bound * (c // group) * int(np.prod(kernel)) + 2
            self.node("Conv", ins, "float32", (n, oc, *out_sp), False, bound, **attrs)
            self.features.add(f"Conv{sd}d group={'1' if group == 1 else 'c' if group == c else 'g'}"
                              + (f" {auto}" if auto != "NOTSET" else ""))
            return
        if ceil:
            attrs["ceil_mode"] = 1
        if kind == "AveragePool" and rng.random() < 0.5:
            attrs["count_include_pad"] = 1
        self.node(kind, [a], "float32", (n, c, *out_sp), kind == "MaxPool" and a.exact,
                  a.bound, **attrs)
        self.features.add(f"{kind}{sd}d" + (" ceil" if ceil else "")
                          + (" count_include_pad" if "count_include_pad" in attrs else ""))


def _more(b: _Builder) -> None:
    """One of ``onnx_more_ops``' families."""
    from .onnx_more_ops import MORE_FAMILIES

    name = b.rng.choice(sorted(MORE_FAMILIES))
    MORE_FAMILIES[name](b)


def _slice_len(d: int, start: int, end: int, step: int) -> int:
    """The length of ONNX ``Slice`` over a dim of ``d``: negative starts / ends count from the
    end, then clamp to [0, d] (stepping up) or start to [0, d - 1], end to [-1, d - 1] (down);
    unlike Python's slices, a start before the first element stepping down clamps to 0."""
    start, end = start + d if start < 0 else start, end + d if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), d), min(max(end, 0), d)
        return max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
    return max(0, -(-(start - end) // -step))


def _factorize(size: int, rng: random.Random) -> list[int]:
    """``size`` as a product of 1-4 random factors."""
    dims, rest = [], size
    for _ in range(rng.randint(0, 3)):
        divs = [d for d in range(1, rest + 1) if rest % d == 0]
        d = rng.choice(divs)
        dims.append(d)
        rest //= d
    return dims + [rest]


#: Families and their weights.
_FAMILIES = (("unary", 5), ("binary", 6), ("where", 1), ("cast", 2), ("reduce", 2),
             ("argmax", 1), ("softmax", 1), ("movement", 6), ("matmul", 2), ("gemm", 1),
             ("conv", 2), ("more", 5))


def _build(seed: int) -> tuple[object, dict, int, set]:
    """The model of ``seed`` (not yet checked by ONNX Runtime), its feeds, opset, features."""
    from onnx import helper, numpy_helper

    rng = random.Random(seed * 7919 + 3)
    opset = rng.choice(OPSETS)
    b = _Builder(seed, opset)
    for _ in range(rng.randint(1, 3)):
        b.new_input(rng.choice(INPUT_DTYPES), b.shape())
    names, weights = zip(*_FAMILIES, strict=True)
    for _ in range(rng.randint(2, 8)):
        family = rng.choices(names, weights)[0]
        _more(b) if family == "more" else getattr(b, family)()
    computed = [v for v in b.pool if v.name.startswith("v")]
    if not computed:
        b.unary()
        computed = [v for v in b.pool if v.name.startswith("v")]
    outs = [computed[-1]] + rng.sample(computed[:-1], min(len(computed) - 1, rng.randint(0, 2)))
    used = {i for n in b.nodes for i in n.input} | {v.name for v in outs}
    inputs = [v for v in b.inputs if v.name in used]  # (an input no node reads is dropped)
    graph = helper.make_graph(
        b.nodes, f"fuzz{seed}",
        [helper.make_tensor_value_info(v.name, _proto(v.dtype), v.shape) for v in inputs],
        [helper.make_tensor_value_info(v.name, _proto(v.dtype), v.shape) for v in outs],
        initializer=[numpy_helper.from_array(x, k) for k, x in b.inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    feeds = {v.name: b.feeds[v.name] for v in inputs}
    b.features.add(f"opset {opset}")
    return model, feeds, opset, b.features


def generate_onnx_program(seed: int, tries: int = 8) -> OnnxProgram:
    """The program of ``seed`` with ONNX Runtime's outputs; a graph ONNX Runtime rejects (an
    op it lacks for a dtype) is replaced by the next one drawn from the seed."""
    import onnxruntime as ort

    last = None
    for k in range(tries):
        model, feeds, opset, features = _build(seed * 101 + k)
        try:
            opts = ort.SessionOptions()
            opts.log_severity_level = 3
            sess = ort.InferenceSession(model.SerializeToString(), opts,
                                        providers=["CPUExecutionProvider"])
            expected = [np.asarray(x) for x in sess.run(None, feeds)]
        except Exception as err:  # noqa: BLE001 - the next draw
            last = err
            continue
        return OnnxProgram(seed, model, feeds, expected, opset, features)
    raise RuntimeError(f"no graph of seed {seed} that ONNX Runtime runs: {last}")
