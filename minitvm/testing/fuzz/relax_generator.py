"""A seeded generator of random well-formed Relax programs (issue 15, the Relax side).

A program is a ``main`` function over a few tensor parameters, static or with a symbolic first
dimension ``n``. It grows in dataflow blocks: each step picks an operator family, takes
operands from the pool of values built so far (recent ones more often, any of them sometimes,
so values are shared by several users), emits the call through a ``BlockBuilder`` (whose struct
info inference decides the result's shape) and adds the result to the pool. Between blocks an
``If`` on a boolean parameter, a tuple with a ``TupleGetItem`` and a ``match_cast`` are mixed in.

``bounded=True`` keeps values finite and moderate (log of ``abs(x) + 1``, division by
``abs(y) + 1``, exp of a clipped value, a clip whenever a value could grow past ~1e3) so
numeric comparisons are meaningful; ``bounded=False`` applies the operators raw, zero-size
dimensions appear and ``inputs(special=True)`` feeds inf, nan, huge and zero values.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from ...ir.module import IRModule
from ...relax import BlockBuilder, Tuple, TupleGetItem, Var, const
from ...relax import op as R
from ...relax.expr import If
from ...relax.op import StructInfoError
from ...relax.struct_info import TensorStructInfo
from ...tir import IntImm
from ...tir import Var as TirVar

__all__ = ["RelaxProgram", "RelaxProgramGenerator", "generate_relax_program", "SYM_VALUES"]

FLOAT_DTYPES = ("float32", "float32", "float32", "float32", "float16")
INT_DTYPES = ("int32", "int32", "int64", "int8")
#: The two values every symbolic dimension takes at run time (one build, two shapes).
SYM_VALUES = (2, 5)


@dataclass
class RelaxProgram:
    """A generated module and what is needed to run it."""

    mod: IRModule
    seed: int
    params: list  # [(name, [int | "n"], dtype)]
    symbolic: bool = False
    bounded: bool = True
    features: set = field(default_factory=set)

    def inputs(self, n: int = SYM_VALUES[0], seed: int | None = None,
               special: bool = False) -> list[np.ndarray]:
        """Random arguments of ``main`` with the symbolic dimension set to ``n``."""
        rng = np.random.default_rng(self.seed if seed is None else seed)
        out = []
        for _, dims, dtype in self.params:
            shape = tuple(n if d == "n" else d for d in dims)
            out.append(random_array(rng, shape, dtype, special))
        return out

    def script(self) -> str:
        """The program as TVMScript, constants included."""
        return self.mod.script(show_meta=True)


def random_array(rng, shape: tuple, dtype: str, special: bool = False) -> np.ndarray:
    """Values in [-2, 2] (ints in [-6, 6]); ``special``: inf, nan, huge, zero sprinkled in."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if dt.kind in "iu":
        arr = rng.integers(0 if dt.kind == "u" else -6, 7, size=shape).astype(dt)
        if special and arr.size:
            info = np.iinfo(dt)
            flat = arr.reshape(-1)
            picks = np.array([info.min, info.max, 0, -1], dtype="int64").astype(dt)
            mask = rng.random(flat.size) < 0.3
            flat[mask] = picks[rng.integers(0, 4, size=flat.size)][mask]
        return arr
    arr = rng.uniform(-2.0, 2.0, size=shape).astype(dt)
    if special and arr.size:
        flat = arr.reshape(-1)
        big = float(np.finfo(dt).max)
        picks = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 89.0, -104.0, big, -big, 1e-30])
        mask = rng.random(flat.size) < 0.35
        with np.errstate(over="ignore"):
            flat[mask] = picks[rng.integers(0, picks.size, size=flat.size)][mask].astype(dt)
    return arr


@dataclass
class _Val:
    var: Var
    dtype: str
    dims: tuple  # PrimExpr per axis
    mag: float  # a bound on |value| (bounded mode)

    @property
    def rank(self) -> int:
        return len(self.dims)

    def static(self) -> tuple | None:
        if all(isinstance(d, IntImm) for d in self.dims):
            return tuple(int(d.value) for d in self.dims)
        return None


def _key(d) -> object:
    return int(d.value) if isinstance(d, IntImm) else str(d)


def _is_float(v: _Val) -> bool:
    return v.dtype.startswith("float")


def _is_int(v: _Val) -> bool:
    return v.dtype.startswith(("int", "uint"))


class RelaxProgramGenerator:
    """``RelaxProgramGenerator(seed).generate()`` -> RelaxProgram; deterministic per seed."""

    def __init__(self, seed: int, max_ops: int = 12, bounded: bool = True,
                 control_flow: bool = True, symbolic: bool | None = None,
                 dtypes: bool = True):
        self.seed = seed
        self.rng = random.Random(seed)
        self.max_ops = max_ops
        self.bounded = bounded
        self.control_flow = control_flow
        self.symbolic = self.rng.random() < 0.45 if symbolic is None else symbolic
        self.dtypes = dtypes
        self.n = TirVar("n", "int64")
        self.bb = BlockBuilder()
        self.pool: list[_Val] = []
        self.used: set = set()
        self.features: set = set()
        self.block_vals: list[_Val] = []

    # ------------------------------------------------------------------ helpers
    def _dim(self) -> int:
        if not self.bounded and self.rng.random() < 0.08:
            return 0  # zero-size tensors in IEEE mode
        return self.rng.choice([1, 2, 3, 4, 5])

    def _shape(self, rank: int) -> list:
        return [self._dim() for _ in range(rank)]

    def _pick(self, pred=None, recent: bool = True) -> _Val | None:
        cands = [v for v in self.pool if pred is None or pred(v)]
        if not cands:
            return None
        if recent and self.rng.random() < 0.55:
            cands = cands[-3:]
        return self.rng.choice(cands)

    def _emit(self, expr, mag: float = 2.0) -> _Val | None:
        try:
            var = self.bb.emit(expr)
        except StructInfoError:
            if self.bounded:  # only zero-size programs (IEEE mode) may build a refused call
                raise
            return None
        sinfo = var.struct_info
        if not isinstance(sinfo, TensorStructInfo) or sinfo.dims() is None:
            return None
        dims = tuple(sinfo.dims())
        static = [int(d.value) for d in dims if isinstance(d, IntImm)]
        if any(s > 64 for s in static) or int(np.prod(static or [1])) > 4096:
            return None
        v = _Val(var, sinfo.dtype, dims, mag)
        self.pool.append(v)
        self.block_vals.append(v)
        return v

    def _use(self, *vals: _Val) -> None:
        for v in vals:
            self.used.add(v.var)

    def _tame(self, v: _Val, limit: float) -> _Val:
        """``v`` clipped to [-limit, limit] when it could exceed it (bounded mode only)."""
        if not self.bounded or v.mag <= limit or not _is_float(v):
            return v
        self._use(v)
        out = self._emit(R.clip(v.var, -limit, limit), limit)
        return out or v

    def _const(self, shape, dtype: str, lo: float = -2.0, hi: float = 2.0):
        rng = np.random.default_rng(self.rng.randrange(2**31))
        if dtype == "bool":
            return const(rng.random(shape) < 0.5, "bool")
        if dtype.startswith(("int", "uint")):
            return const(rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype), dtype)
        return const(rng.uniform(lo, hi, size=shape).astype(dtype), dtype)

    # ------------------------------------------------------------------ operator families
    def _unary(self):
        v = self._pick()
        if v is None:
            return None
        b = self.bounded
        if v.dtype == "bool":
            self._use(v)
            return self._emit(R.logical_not(v.var), 1)
        if _is_int(v):
            name = self.rng.choice(["abs", "negative", "bitwise_not", "sign", "square"])
            if name == "square" and b and v.mag > 1000:
                name = "abs"
            self._use(v)
            mag = v.mag**2 if name == "square" else v.mag + 1
            return self._emit(getattr(R, name)(v.var), mag)
        name = self.rng.choice(["exp", "log", "sqrt", "tanh", "sigmoid", "abs", "negative",
                                "floor", "ceil", "round", "trunc", "relu", "sin", "cos", "erf",
                                "clip", "leakyrelu", "rsqrt", "sign", "gelu", "silu", "square",
                                "isnan", "isinf", "isfinite", "softmax", "log_softmax", "atan"])
        x = v
        if b and name == "exp":
            x = self._tame(v, 6.0)
        if b and name == "square":
            x = self._tame(v, 30.0)
        if b and name in ("sin", "cos"):
            x = self._tame(v, 100.0)
        self._use(x)
        if b and name in ("log", "sqrt", "rsqrt"):  # of abs(x) + 1
            a = self._emit(R.abs(x.var), x.mag)
            if a is None:
                return None
            self._use(a)
            a = self._emit(R.add(a.var, const(1.0, x.dtype)), x.mag + 1)
            if a is None:
                return None
            self._use(a)
            x = a
        mag = {"exp": float(np.exp(min(x.mag, 80))), "log": float(np.log(x.mag + 1)) + 1,
               "sqrt": float(np.sqrt(x.mag)) + 1, "square": x.mag**2, "gelu": x.mag + 1,
               "silu": x.mag + 1}.get(name, x.mag if x.mag > 1 else 1.0)
        if name in ("tanh", "sigmoid", "sin", "cos", "erf", "softmax", "sign", "rsqrt", "atan"):
            mag = 2.0
        if name == "clip":
            return self._emit(R.clip(x.var, -1.5, 1.0), 1.5)
        if name == "leakyrelu":
            return self._emit(R.nn.leakyrelu(x.var, self.rng.choice([0.01, 0.2])), mag)
        if name in ("relu", "gelu", "silu"):
            return self._emit(getattr(R.nn, name)(x.var), mag)
        if name in ("softmax", "log_softmax"):
            if x.rank == 0:
                return None
            axis = self.rng.randrange(-x.rank, x.rank)
            fn = getattr(R.nn, name)
            return self._emit(fn(self._tame(x, 50.0).var, axis=axis),
                              2.0 if name == "softmax" else x.mag * 2 + 10)
        return self._emit(getattr(R, name)(x.var), mag)

    def _broadcast_partner(self, v: _Val) -> tuple:
        """Another operand of ``v``'s dtype whose shape broadcasts with it: a pool value, a
        constant of a compatible shape, or a scalar constant. (expr, mag, val-or-None)."""
        def compatible(u: _Val) -> bool:
            if u.dtype != v.dtype:
                return False
            for a, c in zip(reversed(u.dims), reversed(v.dims), strict=False):
                ka, kc = _key(a), _key(c)
                if ka != kc and ka != 1 and kc != 1:
                    return False
            return True

        r = self.rng.random()
        if r < 0.55:
            u = self._pick(compatible, recent=False)
            if u is not None:
                return u.var, u.mag, u
        if r < 0.8 and v.static() is not None:
            k = self.rng.randint(0, v.rank)
            shape = [d if self.rng.random() < 0.7 else 1 for d in v.static()[v.rank - k:]]
            if k == v.rank and k < 4 and self.rng.random() < 0.2:
                shape = [self.rng.choice([1, 2])] + shape
            return self._const(shape, v.dtype), 2.0, None
        return self._const([], v.dtype), 2.0, None

    def _binary(self):
        v = self._pick()
        if v is None:
            return None
        other, omag, ov = self._broadcast_partner(v)
        self._use(v)
        if ov is not None:
            self._use(ov)
        b = self.bounded
        if v.dtype == "bool":
            name = self.rng.choice(["logical_and", "logical_or", "logical_xor", "equal",
                                    "not_equal", "bitwise_and", "bitwise_or"])
            return self._emit(getattr(R, name)(v.var, other), 1)
        cmp = ["greater", "less", "equal", "not_equal", "greater_equal", "less_equal"]
        if _is_int(v):
            name = self.rng.choice(["add", "subtract", "multiply", "maximum", "minimum",
                                    "floor_divide", "floor_mod", "bitwise_and", "bitwise_or",
                                    "bitwise_xor"] + cmp)
        else:
            name = self.rng.choice(["add", "subtract", "multiply", "divide", "maximum",
                                    "minimum", "power", "floor_divide", "floor_mod"] + cmp)
        if name in cmp:
            return self._emit(getattr(R, name)(v.var, other), 1)
        lhs = v
        if name in ("divide", "floor_divide", "floor_mod") and (b or _is_int(v)):
            # divide by abs(y) + 1: never by zero (integers: in every mode)
            d = self._emit(R.abs(other), omag)
            if d is None:
                return None
            self._use(d)
            d = self._emit(R.add(d.var, const(1, v.dtype)), omag + 1)
            if d is None:
                return None
            self._use(d)
            other = d.var
            mag = v.mag if name != "floor_mod" else omag + 1
            return self._emit(getattr(R, name)(lhs.var, other), mag + 1)
        if name == "power":
            if not b:
                return self._emit(R.power(v.var, other), 1e38)
            base = self._emit(R.abs(self._tame(v, 4.0).var), min(v.mag, 4.0))
            if base is None:
                return None
            self._use(base)
            base = self._emit(R.add(base.var, const(0.5, v.dtype)), base.mag + 0.5)
            if base is None:
                return None
            self._use(base)
            if ov is not None and omag > 3:
                ex = self._tame(ov, 3.0)
                other, omag = ex.var, ex.mag
                self._use(ex)
            return self._emit(R.power(base.var, other), (base.mag + 1) ** max(omag, 1))
        if name == "multiply":
            if b and _is_float(v):
                lhs = self._tame(v, 30.0)
                if omag > 30 and ov is not None:
                    t = self._tame(ov, 30.0)
                    other, omag = t.var, t.mag
                self._use(lhs)
            return self._emit(R.multiply(lhs.var, other), lhs.mag * omag)
        return self._emit(getattr(R, name)(lhs.var, other), lhs.mag + omag)

    def _matmul(self):
        v = self._pick(lambda u: _is_float(u) and u.rank >= 1)
        if v is None:
            return None
        v = self._tame(v, 20.0)
        self._use(v)
        k = v.dims[-1]
        if isinstance(k, IntImm) and self.rng.random() < 0.7:
            p = self.rng.choice([1, 2, 3, 4, 6])
            wshape = [int(k.value), p]
            if v.rank >= 3 and self.rng.random() < 0.3 and v.static() is not None:
                wshape = [v.static()[-3]] + wshape
            if self.rng.random() < 0.15:
                wshape = [int(k.value)]  # a matrix-vector product
            w = self._const(wshape, v.dtype, -1, 1)
            return self._emit(R.matmul(v.var, w), v.mag * int(k.value) + 1)
        if v.rank < 2:
            return self._emit(R.matmul(v.var, v.var), v.mag * v.mag * 8 + 1)
        perm = list(range(v.rank))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        t = self._emit(R.permute_dims(v.var, perm), v.mag)
        if t is None:
            return None
        self._use(t)
        return self._emit(R.matmul(v.var, t.var), v.mag * v.mag * 8 + 1)

    def _reduce(self):
        v = self._pick(lambda u: u.dtype != "bool" and u.rank >= 1)
        if v is None:
            return None
        names = ["sum", "max", "min", "argmax", "argmin", "prod"]
        if _is_float(v):
            names += ["mean", "variance", "std", "sum", "cumsum"]
        name = self.rng.choice(names)
        keep = self.rng.random() < 0.3
        if name in ("argmax", "argmin"):
            axis = self.rng.choice([None, self.rng.randrange(v.rank)])
            dims = getattr(v.var.struct_info, "shape", None)
            values = getattr(dims, "values", None) or ()
            over = range(len(values)) if axis is None else [axis]
            if any(getattr(values[a], "value", None) == 0 for a in over if a < len(values)):
                return None  # a static empty axis: no index to give (the struct info refuses)
            self._use(v)
            return self._emit(getattr(R, name)(v.var, axis=axis, keepdims=keep), 64)
        if name == "cumsum":
            x = self._tame(v, 100.0)
            self._use(x)
            return self._emit(R.cumsum(x.var, axis=self.rng.randrange(v.rank)), x.mag * 64)
        if name == "prod":
            if _is_int(v):
                return None
            x = self._tame(v, 2.0)
            self._use(x)
            return self._emit(R.prod(x.var, axis=[self.rng.randrange(v.rank)], keepdims=keep),
                              2.0**5)
        axes = sorted(self.rng.sample(range(v.rank), self.rng.randint(1, v.rank)))
        axis = None if self.rng.random() < 0.2 else axes
        x = self._tame(v, 1000.0)
        self._use(x)
        mag = x.mag * 4096 if name == "sum" else x.mag * x.mag if name == "variance" else x.mag
        return self._emit(getattr(R, name)(x.var, axis=axis, keepdims=keep), mag)

    def _shape_op(self):
        v = self._pick()
        if v is None:
            return None
        rng = self.rng
        st = v.static()
        name = rng.choice(["reshape", "permute_dims", "expand_dims", "squeeze", "concat",
                           "split", "strided_slice", "broadcast_to", "flatten", "repeat",
                           "tril", "take", "where", "astype", "astype"])
        self._use(v)
        if name == "reshape" and st is not None and int(np.prod(st)) > 0:
            size = int(np.prod(st))
            dims, left = [], size
            while left > 1 and len(dims) < 3:
                f = [d for d in range(2, left + 1) if left % d == 0]
                d = rng.choice(f)
                dims.append(d)
                left //= d
            if left != 1 or not dims:
                dims.append(left)
            if rng.random() < 0.3 and size:
                dims[rng.randrange(len(dims))] = -1
            return self._emit(R.reshape(v.var, dims), v.mag)
        if name == "permute_dims" and v.rank >= 2:
            perm = list(range(v.rank))
            rng.shuffle(perm)
            return self._emit(R.permute_dims(v.var, perm), v.mag)
        if name == "expand_dims" and v.rank < 4:
            return self._emit(R.expand_dims(v.var, [rng.randint(-v.rank - 1, v.rank)]), v.mag)
        if name == "squeeze":
            ones = [i for i, d in enumerate(v.dims) if _key(d) == 1]
            if ones:
                axis = None if rng.random() < 0.3 else [rng.choice(ones)]
                return self._emit(R.squeeze(v.var, axis), v.mag)
        if name == "concat" and v.rank >= 1:
            axis = rng.randrange(v.rank)
            others = [u for u in self.pool if u.dtype == v.dtype and u.rank == v.rank and all(
                _key(a) == _key(c) for i, (a, c) in enumerate(zip(u.dims, v.dims, strict=True))
                if i != axis)]
            parts = [v] + rng.sample(others, min(len(others), rng.randint(1, 2)))
            self._use(*parts)
            return self._emit(R.concat([p.var for p in parts], axis=axis),
                              max(p.mag for p in parts))
        if name == "split" and v.rank >= 1:
            axis = rng.randrange(v.rank)
            d = v.dims[axis]
            if not isinstance(d, IntImm) or int(d.value) < 2:
                return None
            size = int(d.value)
            if rng.random() < 0.5:
                secs = [s for s in (2, 3, 4, 5) if size % s == 0]
                if not secs:
                    return None
                spec = rng.choice(secs)
            else:
                spec = sorted(rng.sample(range(1, size), rng.randint(1, min(2, size - 1))))
            tup = self.bb.emit(R.split(v.var, spec, axis=axis))
            self.features.add("tuple")
            n = len(tup.struct_info.fields)
            return self._emit(TupleGetItem(tup, rng.randrange(n)), v.mag)
        if name == "strided_slice" and v.rank >= 1:
            axis = rng.randrange(v.rank)
            d = v.dims[axis]
            if not isinstance(d, IntImm) or int(d.value) < 1:
                return None
            size = int(d.value)
            if rng.random() < 0.2:  # backwards
                begin, end, stride = size - 1, rng.choice([-size - 1, 0]), -rng.randint(1, 2)
            else:
                begin = rng.randint(-size, size - 1)
                end = rng.choice([size, size + 3, rng.randint(-size, size)])
                stride = rng.randint(1, 3)
            return self._emit(R.strided_slice(v.var, [axis], [begin], [end], [stride]), v.mag)
        if name == "broadcast_to" and st is not None:
            shape = [d if d != 1 or rng.random() < 0.5 else rng.randint(2, 3) for d in st]
            if len(shape) < 4 and rng.random() < 0.5:
                shape = [rng.randint(1, 3)] + shape
            return self._emit(R.broadcast_to(v.var, shape), v.mag)
        if name == "flatten" and v.rank >= 1:
            return self._emit(R.flatten(v.var), v.mag)
        if name == "repeat" and v.rank >= 1:
            return self._emit(R.repeat(v.var, rng.randint(1, 3),
                                       axis=rng.choice([None, rng.randrange(v.rank)])), v.mag)
        if name == "tril" and v.rank >= 2:
            fn = R.tril if rng.random() < 0.5 else R.triu
            return self._emit(fn(v.var, rng.randint(-2, 2)), v.mag)
        if name == "take" and v.rank >= 1:
            axis = rng.randrange(v.rank)
            d = v.dims[axis]
            if not isinstance(d, IntImm) or int(d.value) < 1:
                return None
            idx = self._const([rng.randint(1, 4)], rng.choice(["int64", "int32"]), 0,
                              int(d.value) - 1)
            return self._emit(R.take(v.var, idx, axis=axis), v.mag)
        if name == "where":
            other, omag, ov = self._broadcast_partner(v)
            cond = self._pick(lambda u: u.dtype == "bool" and u.rank <= v.rank and all(
                _key(a) == _key(c) or _key(a) == 1
                for a, c in zip(reversed(u.dims), reversed(v.dims), strict=False)))
            if cond is None:
                if not _is_float(v) and not _is_int(v):
                    return None
                c = self._emit(R.greater(v.var, const(0, v.dtype)), 1)
                if c is None:
                    return None
                cond = c
            self._use(cond, *([ov] if ov else []))
            return self._emit(R.where(cond.var, v.var, other), max(v.mag, omag))
        if name == "astype" and self.dtypes:
            choices = ["float32", "float16", "int32", "int64", "int8", "bool", "float64"]
            dt = rng.choice(choices)
            if _is_float(v) and dt.startswith("int"):
                if not self.bounded:
                    return None  # float -> int of inf/nan/huge is undefined
                x = self._tame(v, 100.0)
                self._use(x)
                return self._emit(R.astype(x.var, dt), x.mag)
            if dt == "float16" and v.mag > 6e4:
                x = self._tame(v, 6e4)
                self._use(x)
                return self._emit(R.astype(x.var, dt), x.mag)
            if dt == "int8" and _is_int(v):
                return self._emit(R.astype(v.var, dt), 128)
            return self._emit(R.astype(v.var, dt), v.mag)
        return None

    def _nn(self):
        rng = self.rng
        name = rng.choice(["conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
                           "layer_norm", "rms_norm", "conv2d"])
        v = self._pick(lambda u: u.dtype in ("float32", "float16") and u.rank == 4
                       and all(isinstance(d, IntImm) for d in u.dims[1:]))
        if name in ("layer_norm", "rms_norm"):
            v = self._pick(lambda u: u.dtype in ("float32", "float16") and u.rank >= 1
                           and isinstance(u.dims[-1], IntImm))
            if v is None:
                return None
            x = self._tame(v, 1000.0)
            self._use(x)
            last = int(x.dims[-1].value)
            g = self._const([last], x.dtype, 0.5, 1.5)
            if name == "rms_norm":
                return self._emit(R.nn.rms_norm(x.var, g, axes=[-1]), 64)
            return self._emit(R.nn.layer_norm(x.var, g, self._const([last], x.dtype),
                                              axes=[-1]), 64)
        if v is None:  # make a rank-4 value from a parameter-like constant reshape
            return None
        x = self._tame(v, 100.0)
        self._use(x)
        c, h, w = (int(d.value) for d in x.dims[1:])
        if min(c, h, w) < 1:
            return None
        if name == "conv2d":
            groups = rng.choice([g for g in (1, 1, c) if c % g == 0])
            kh, kw = rng.randint(1, 3), rng.randint(1, 3)
            pad = rng.randint(0, 1)
            dil = rng.choice([1, 1, 2])
            if h + 2 * pad < dil * (kh - 1) + 1 or w + 2 * pad < dil * (kw - 1) + 1:
                return None
            o = rng.choice([1, 2, 4]) * groups
            wt = self._const([o, c // groups, kh, kw], x.dtype, -1, 1)
            return self._emit(R.nn.conv2d(x.var, wt, strides=rng.choice([1, 2]), padding=pad,
                                          dilation=dil, groups=groups),
                              x.mag * c * kh * kw + 1)
        if name == "adaptive_avg_pool2d":
            return self._emit(R.nn.adaptive_avg_pool2d(
                x.var, output_size=(rng.randint(1, max(h, 1)), rng.randint(1, max(w, 1)))),
                x.mag)
        k = rng.randint(1, 3)
        pad = rng.randint(0, k // 2)
        if h + 2 * pad < k or w + 2 * pad < k:
            return None
        fn = getattr(R.nn, name)
        kwargs = {"count_include_pad": rng.random() < 0.5} if name == "avg_pool2d" else {}
        return self._emit(fn(x.var, pool_size=k, strides=rng.choice([1, 2]), padding=pad,
                             ceil_mode=rng.random() < 0.3, **kwargs), x.mag)

    # ------------------------------------------------------------------ program structure
    def _params(self) -> list:
        rng = self.rng
        params = []
        for k in range(rng.randint(1, 3)):
            rank = rng.choice([1, 2, 2, 3, 4, 4])
            dims: list = self._shape(rank)
            if k == 0 and rng.random() < 0.3:
                dims = [rng.randint(1, 2), rng.randint(1, 4), rng.randint(3, 6), rng.randint(3, 6)]
            if self.symbolic and (k == 0 or rng.random() < 0.5):
                dims[0] = "n"
            dtype = "float32"
            if self.dtypes and rng.random() < 0.35:
                dtype = rng.choice(FLOAT_DTYPES + INT_DTYPES + ("bool",))
            params.append((f"x{k}", dims, dtype))
        return params

    def _step(self) -> None:
        fam = self.rng.choice([self._unary, self._unary, self._binary, self._binary,
                               self._binary, self._matmul, self._reduce, self._shape_op,
                               self._shape_op, self._nn])
        for _ in range(4):
            if fam() is not None:
                return
            fam = self.rng.choice([self._unary, self._binary, self._shape_op])

    def _dataflow_block(self, ops: int) -> None:
        bb = self.bb
        self.block_vals = []
        with bb.dataflow():
            for _ in range(ops):
                self._step()
            made = list(self.block_vals)
            if not made:
                self._unary()
                made = list(self.block_vals)
            outs = {id(made[-1])} | {id(v) for v in made if v.var not in self.used} \
                | {id(v) for v in made if self.rng.random() < 0.3}
            keep = []
            for v in made:
                if id(v) in outs:
                    keep.append(_Val(bb.emit_output(v.var), v.dtype, v.dims, v.mag))
        # dataflow vars are not visible after the block: only the outputs stay in the pool
        inner = {id(v) for v in made}
        self.pool = [v for v in self.pool if id(v) not in inner] + keep

    def _control(self, cond: Var | None) -> None:
        rng = self.rng
        kind = rng.choice(["if", "tuple", "match_cast"] if cond is not None
                          else ["tuple", "match_cast"])
        v = self._pick()
        if v is None:
            return
        if kind == "if":
            u = self._pick(lambda w: w.dtype == v.dtype and [_key(d) for d in w.dims]
                           == [_key(d) for d in v.dims])
            self._use(v, u)
            t = R.nn.relu(v.var) if _is_float(v) else R.abs(v.var) if _is_int(v) \
                else R.logical_not(v.var)
            f = R.add(v.var, u.var) if v.dtype != "bool" else R.logical_and(v.var, u.var)
            if rng.random() < 0.5:
                t, f = f, t
            self.features.add("if")
            self._emit(If(cond, t, f), v.mag + u.mag)
        elif kind == "tuple":
            u = self._pick()
            self._use(v, u)
            tup = self.bb.emit(Tuple([v.var, u.var]))
            self.features.add("tuple")
            k = rng.randrange(2)
            w = (v, u)[k]
            self._emit(TupleGetItem(tup, k), w.mag)
        else:
            self._use(v)
            self.features.add("match_cast")
            var = self.bb.match_cast(v.var, TensorStructInfo(list(v.dims), v.dtype))
            self.pool.append(_Val(var, v.dtype, v.dims, v.mag))

    def generate(self) -> RelaxProgram:
        params = self._params()
        use_if = self.control_flow and self.rng.random() < 0.35
        bb = self.bb
        pvars = []
        for name, dims, dtype in params:
            shape = [self.n if d == "n" else d for d in dims]
            pvars.append(Var(name, TensorStructInfo(shape, dtype)))
        cond = Var("cond", TensorStructInfo([], "bool")) if use_if else None
        all_params = pvars + ([cond] if cond is not None else [])
        if cond is not None:
            params.append(("cond", [], "bool"))
        with bb.function("main", all_params):
            for (_, _, dtype), v in zip(params, pvars, strict=False):
                self.pool.append(_Val(v, dtype, tuple(v.struct_info.dims()),
                                      2.0 if dtype.startswith("float") else 6.0))
            blocks = 1 if not self.control_flow else self.rng.choice([1, 1, 2, 3])
            per = max(1, self.max_ops // blocks)
            for k in range(blocks):
                self._dataflow_block(self.rng.randint(max(1, per // 2), per))
                if self.control_flow and (k < blocks - 1 or self.rng.random() < 0.4):
                    self._control(cond)
            unused = [v for v in self.pool if v.var not in self.used
                      and v.var not in all_params]
            outs = unused[-3:] or [self.pool[-1]]
            if len(outs) == 1 and self.rng.random() < 0.7:
                bb.emit_func_output(outs[0].var)
            else:
                self.features.add("tuple")
                bb.emit_func_output(Tuple([v.var for v in outs]))
        mod = bb.get()
        return RelaxProgram(mod, self.seed, params, self.symbolic, self.bounded, self.features)


def generate_relax_program(seed: int, **options) -> RelaxProgram:
    """The random Relax program of ``seed`` (see ``RelaxProgramGenerator`` for options)."""
    return RelaxProgramGenerator(seed, **options).generate()
