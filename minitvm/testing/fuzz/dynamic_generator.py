"""A seeded generator of random Relay programs with ``relay.Any()`` dimensions, for the VM.

``generator`` makes static programs; the Relay VM's dynamic machinery (symbolic kernels for
``Any`` batches, per-shape and per-shape-value specializations, ``BoundCall`` per call site,
native entries planned per call shape, liveness-based register dropping, while loops and the
in-place ``vm.update_row``) is only reached when ONE compiled program runs at several sizes.
Here every tensor dimension is a *size key*: an int (static), or a string naming a run-time size
(``"n"``, the batch; ``"m"``, a second batch that is ``n`` or 1 at each run and broadcasts
against ``n``; derived keys such as ``"(n+3)"`` or ``"2*n"``; fresh keys for value-dependent
sizes). Two dimensions with the same key have the same size at every run, so an operator
combines values only where the keys say it is legal; the operator's own type relation still
decides that the call types.

Families: elementwise and broadcasting binary ops, reductions, softmax, shape ops
(transpose, reshape by ``-1`` or by ``shape_of``, concatenate, slice, take by an ``argsort``,
repeat, pad...), dense / conv2d / pools / layer_norm / batch_matmul, scans, sort, top-k,
``unique``, ``argwhere``, reshapes and slices whose shape / begin / end are *shape-valued
inputs* (other values at the same shapes), RoI pools and all-class NMS over an ``Any`` number of
boxes, ``If``, and ``relay.loops.while_loop`` loops (a recurrence over a run-time count, or rows
written by ``vm.update_row``). ``DynamicProgram.inputs(n)`` gives valid arguments at batch ``n``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

import numpy as np

from ...ir.module import IRModule
from ...ir.type import TensorType
from ...relay import expr as rx
from ...relay import op as rop
from .generator import ProgramGenerator

__all__ = ["DynamicProgram", "DynamicProgramGenerator", "Param", "generate_dynamic_program",
           "size_schedule"]

Key = int | str


@dataclass
class Param:
    """A parameter: its name, size keys, dtype and how to make a value (``kind``)."""

    name: str
    dims: tuple
    dtype: str
    kind: str = "tensor"  # tensor | reshape | slice_begin | slice_end | rois | boxes | scores
    info: dict = field(default_factory=dict)


@dataclass
class DynamicProgram:
    """A module with ``Any`` dimensions and what is needed to run it at a batch ``n``."""

    mod: IRModule
    seed: int
    params: list  # [Param]
    features: set = field(default_factory=set)
    min_size: int = 0  # the smallest legal batch (top-k along the batch needs n >= k)

    def sizes(self, n: int, rng) -> dict:
        """The run-time sizes of the parameter keys at batch ``n`` (``m`` is n or 1)."""
        return {"n": n, "m": n if rng.random() < 0.6 else 1}

    def inputs(self, n: int, seed: int = 0) -> list[np.ndarray]:
        """Valid arguments at batch ``n`` (shape-valued inputs drawn among legal values)."""
        rng = np.random.default_rng([self.seed, n, seed])
        sizes = self.sizes(n, rng)
        out = []
        for p in self.params:
            shape = tuple(sizes[d] if isinstance(d, str) else d for d in p.dims)
            out.append(_value(rng, p, shape, sizes, out))
        return out


def _value(rng, p: Param, shape: tuple, sizes: dict, done: list) -> np.ndarray:
    if p.kind == "reshape":  # a new shape for a tensor of dims p.info["of"]: a factorization
        total = 1
        for d in p.info["of"]:
            total *= _extent(d, sizes)
        rank = p.info["rank"]
        if total == 0:
            dims = [0] + [int(rng.integers(1, 4)) for _ in range(rank - 1)]
            rng.shuffle(dims)
            return np.array(dims, "int64")
        dims = []
        rest = total
        for _ in range(rank - 1):
            divs = [d for d in range(1, rest + 1) if rest % d == 0]
            d = int(rng.choice(divs))
            dims.append(d)
            rest //= d
        dims.append(rest)
        rng.shuffle(dims)
        if rng.random() < 0.3:  # TVM's -1: inferred
            dims[int(rng.integers(rank))] = -1
        return np.array(dims, "int64")
    if p.kind == "slice_begin":  # a slice of the axis' run-time extent (maybe empty)
        size = p.info["size"]
        extent = _extent(size, sizes)
        lo = int(rng.integers(0, extent + 1))
        return np.array([lo], p.dtype)
    if p.kind == "slice_end":
        extent = _extent(p.info["size"], sizes)
        lo = int(done[p.info["pair"]][0])
        return np.array([int(rng.integers(lo, extent + 1))], p.dtype)
    if p.kind == "rois":  # (rows, 5): batch index, then x1 y1 x2 y2 inside the image
        h, w = p.info["hw"]
        rows = shape[0]
        x1 = rng.uniform(0, w - 1, rows)
        y1 = rng.uniform(0, h - 1, rows)
        x2 = np.minimum(x1 + rng.uniform(0.5, w, rows), w - 1)
        y2 = np.minimum(y1 + rng.uniform(0.5, h, rows), h - 1)
        return np.stack([np.zeros(rows), x1, y1, x2, y2], axis=1).astype(p.dtype)
    if p.kind == "boxes":
        b, n = shape[0], shape[1]
        lo = rng.uniform(0, 8, (b, n, 2))
        return np.concatenate([lo, lo + rng.uniform(0.5, 4, (b, n, 2))], axis=2).astype(p.dtype)
    if p.kind == "scores":
        return np.round(rng.uniform(0, 1, shape), 3).astype(p.dtype)  # few exact ties
    dt = np.dtype(p.dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -4, 5, size=shape).astype(dt)
    return rng.uniform(-2.0, 2.0, size=shape).astype(dt)


def _evaluable(key: Key) -> bool:
    """Whether the size of ``key`` follows from the batch sizes (not from values)."""
    return isinstance(key, int) or (re.fullmatch(r"[nm0-9()+*,min]*", key) is not None and
                                    not re.search(r"[a-z]\d", key.replace("min", "")))


def _extent(key: Key, sizes: dict) -> int:
    """The run-time size of an evaluable key at these batch sizes."""
    if isinstance(key, int):
        return key
    return int(eval(key, {"__builtins__": {}, "min": min}, dict(sizes)))  # noqa: S307


def size_schedule(rng: random.Random, min_size: int = 0, count: int = 10) -> list[int]:
    """Batch sizes for one compiled program: repeats (so call shapes get planned and call
    sites bound), changes back and forth, 1, and 0 where legal."""
    base = [s for s in (3, 1, 5, 2, 0, 4, 7) if s >= min_size]
    first = rng.choice([s for s in base if s > 0] or [max(min_size, 1)])
    out = [first, first, first]
    while len(out) < count:
        r = rng.random()
        if r < 0.35:
            out.append(first)
        elif r < 0.55:
            out.append(out[-1])
        else:
            out.append(rng.choice(base))
    return out


def _join(a: Key, b: Key) -> Key | None:
    """The broadcast of two size keys, or None when they may differ at run time."""
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if {a, b} == {"n", "m"}:
        return "n"
    return None


def _add_keys(a: Key, b: Key) -> Key:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return f"({a}+{b})"


def _mul_keys(a: Key, b: Key) -> Key:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 1:
        return b
    if b == 1:
        return a
    return f"({a}*{b})"


#: What ``DynamicProgram.features`` names, and the text that shows it in the program.
FEATURES = {
    "while": ("%while_loop",), "update_row": ("vm.update_row",),
    "unique": ("unique(",), "argwhere": ("argwhere(",), "topk": ("topk(",),
    "sort": ("sort(",), "scan": ("cumsum(", "cumprod("), "nms": ("non_max_suppression",),
    "roi": ("roi_align(", "roi_pool("), "dyn.reshape": ("dyn.reshape(", "reshape(%p"),
    "slice-by-value": ("dyn.strided_slice(", "strided_slice(%"),
    "conv/pool": ("conv2d(", "pool2d("), "dense/matmul": ("dense(", "batch_matmul("),
}


#: ``focus``: families drawn more often (a factor on their weight), to reach one feature more.
FOCI = {
    "loops": {"loop": 6, "if": 2},
    "shape-values": {"shape_valued": 6, "unique": 2, "vision": 2},
    "selection": {"scan": 4, "unique": 3, "argwhere": 2, "vision": 3},
}


class _V:
    __slots__ = ("expr", "dims", "dtype")

    def __init__(self, expr, dims: tuple, dtype: str):
        self.expr, self.dims, self.dtype = expr, tuple(dims), dtype

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def symbolic(self) -> bool:
        return any(isinstance(d, str) for d in self.dims)


def _f(v: _V) -> bool:
    return v.dtype.startswith("float")


class DynamicProgramGenerator:
    """``DynamicProgramGenerator(seed).generate()`` -> DynamicProgram; deterministic per seed.

    A seeded draw lets the batch be 0 at run time (then no reduction of a possibly empty axis
    by max / min / argmax, whose empty case has no value); ``loops`` mixes in while loops,
    ``shape_values`` shape-valued inputs, ``vision`` RoI pools and NMS; ``focus`` (a key of
    ``FOCI``) draws some families more often."""

    def __init__(self, seed: int, max_ops: int = 10, loops: bool = True,
                 shape_values: bool = True, vision: bool = True, focus: str | None = None):
        if focus is not None and focus not in FOCI:
            raise ValueError(f"focus must be one of {sorted(FOCI)}, got {focus!r}")
        self.focus = focus
        self.seed = seed
        self.rng = random.Random(seed)
        self.max_ops = max_ops
        self.loops = loops
        self.shape_values = shape_values
        self.vision = vision
        self.zero = self.rng.random() < 0.6
        self.min_size = 0 if self.zero else 1
        self.pool: list[_V] = []
        self.params: list[tuple] = []  # (Var, Param)
        self.features: set = set()
        self.used: set = set()
        self._fresh = 0
        self._anys: dict = {}

    # ------------------------------------------------------------------ helpers
    def _key(self, prefix: str) -> str:
        self._fresh += 1
        return f"{prefix}{self._fresh}"

    def _any(self, key: str):
        """The ``Any`` of a parameter dimension: shared by the parameters of one key or one per
        parameter (both are legal; the symbolic kernels see one variable or several)."""
        from ...relay import Any

        if self.rng.random() < 0.5:
            return Any()
        if key not in self._anys:
            self._anys[key] = Any()
        return self._anys[key]

    def _param(self, dims, dtype: str, kind: str = "tensor", **info) -> _V:
        name = f"p{len(self.params)}"
        shape = [self._any(d) if isinstance(d, str) else d for d in dims]
        var = rx.Var(name, TensorType(shape, dtype))
        self.params.append((var, Param(name, tuple(dims), dtype, kind, info)))
        return _V(var, dims, dtype)

    def _pick(self, pred=None, recent: bool = True) -> _V | None:
        cands = [v for v in self.pool if pred is None or pred(v)]
        if not cands:
            return None
        if recent and self.rng.random() < 0.6:
            cands = cands[-3:]
        return self.rng.choice(cands)

    def _typed(self, e):
        """``e`` with its type from the operators' relations, or None when it does not type."""
        return e if ProgramGenerator._type_of(e) is not None else None

    def _emit(self, e, dims, dtype: str, check: bool = True) -> _V | None:
        if e is None:
            return None
        t = ProgramGenerator._type_of(e)
        if t is None or not isinstance(t, TensorType):
            return None
        if check:
            for d, k in zip(t.shape, dims, strict=True):
                if isinstance(k, int) and hasattr(d, "value") and int(d.value) != k:
                    raise AssertionError(f"size key {k} typed as {d} in {e.op}")
        for a in getattr(e, "args", ()):
            self.used.add(id(a))
        v = _V(e, dims, dtype)
        self.pool.append(v)
        return v

    def _const(self, shape, dtype: str, lo: float = -2.0, hi: float = 2.0):
        rng = np.random.default_rng(self.rng.randrange(1 << 30))
        if dtype.startswith(("int", "uint")):
            return rx.const(rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype))
        return rx.const(rng.uniform(lo, hi, size=shape).astype(dtype))

    # ------------------------------------------------------------------ families
    def _unary(self):
        v = self._pick()
        if v is None:
            return None
        x = v.expr
        if not _f(v):
            if v.dtype == "bool":
                return self._emit(rop.logical_not(x), v.dims, v.dtype)
            name = self.rng.choice(["abs", "negative", "cast"])
            if name == "cast":
                return self._emit(rop.cast(x, "float32"), v.dims, "float32")
            return self._emit(getattr(rop, name)(x), v.dims, v.dtype)
        one = rx.const(1.0, v.dtype)
        name = self.rng.choice(["exp", "tanh", "sigmoid", "relu", "abs", "negative", "log",
                                "sqrt", "floor", "round", "erf", "sin", "copy", "clip",
                                "cast_int"])
        if name == "exp":
            e = rop.exp(rop.clip(x, -6.0, 6.0))
        elif name in ("log", "sqrt"):
            e = getattr(rop, name)(rop.add(rop.abs(x), one))
        elif name == "relu":
            e = rop.nn.relu(x)
        elif name == "clip":
            e = rop.clip(x, -1.5, 1.0)
        elif name == "cast_int":
            return self._emit(rop.cast(rop.round(rop.clip(x, -9.0, 9.0)), "int32"), v.dims,
                              "int32")
        else:
            e = getattr(rop, name)(x)
        return self._emit(e, v.dims, v.dtype)

    def _binary(self):
        a = self._pick(lambda v: v.dtype != "bool")
        if a is None:
            return None

        def partner(v: _V) -> bool:
            if v.dtype != a.dtype or v is a and self.rng.random() < 0.5:
                return False
            for x, y in zip(reversed(a.dims), reversed(v.dims), strict=False):
                if _join(x, y) is None:
                    return False
            return True

        b = self._pick(partner, recent=False)
        if b is None or self.rng.random() < 0.2:
            tail = []
            for d in reversed(a.dims):
                if not isinstance(d, int) or self.rng.random() < 0.3:
                    break
                tail.append(d)
            shape = tuple(reversed(tail))
            b = _V(self._const(shape, a.dtype), shape, a.dtype)
        if self.rng.random() < 0.5:
            a, b = b, a
        ra, rb = a.dims, b.dims
        rank = max(len(ra), len(rb))
        ra = (1,) * (rank - len(ra)) + ra
        rb = (1,) * (rank - len(rb)) + rb
        dims = tuple(_join(x, y) for x, y in zip(ra, rb, strict=True))
        name = self.rng.choice(["add", "subtract", "multiply", "divide", "maximum", "minimum",
                                "greater", "equal"])
        y = b.expr
        if name == "divide":
            if not _f(a):
                name = "add"
            else:
                y = rop.add(rop.abs(y), rx.const(1.0, a.dtype))
        if name == "multiply" and not _f(a):
            y = rop.clip(y, -3, 3)
        dtype = "bool" if name in ("greater", "equal") else a.dtype
        return self._emit(getattr(rop, name)(a.expr, y), dims, dtype)

    def _reduce(self):
        v = self._pick(lambda v: v.rank >= 1 and v.dtype != "bool")
        if v is None:
            return None
        axes = sorted(self.rng.sample(range(v.rank), self.rng.randint(1, v.rank)))
        keep = self.rng.random() < 0.4
        names = ["sum", "mean", "prod", "logsumexp", "max", "min", "argmax", "argmin"]
        if not _f(v):
            names = ["sum", "max", "min", "argmax"]
        name = self.rng.choice(names)
        # max / min / argmax / argmin (and logsumexp, built on max) over an axis that may be
        # empty: there both the interpreter and the VM must raise (no identity value)
        x = v.expr
        if name == "prod":
            x = rop.clip(x, -1.5, 1.5)
        dims = tuple(1 if i in axes else d for i, d in enumerate(v.dims)) if keep else \
            tuple(d for i, d in enumerate(v.dims) if i not in axes)
        dtype = v.dtype
        if name in ("argmax", "argmin"):
            axes = [axes[0]]
            dims = tuple(1 if i == axes[0] else d for i, d in enumerate(v.dims)) if keep else \
                tuple(d for i, d in enumerate(v.dims) if i != axes[0])
            dtype = "int32"
        return self._emit(getattr(rop, name)(x, axis=axes, keepdims=keep), dims, dtype)

    def _softmax(self):
        v = self._pick(lambda v: _f(v) and v.rank >= 1)
        if v is None:
            return None
        name = self.rng.choice(["softmax", "log_softmax"])
        return self._emit(getattr(rop.nn, name)(v.expr, axis=self.rng.randrange(v.rank)),
                          v.dims, v.dtype)

    def _shape(self):
        v = self._pick()
        if v is None:
            return None
        x, dims, r = v.expr, v.dims, v.rank
        name = self.rng.choice(["transpose", "expand_dims", "squeeze", "reshape", "dyn_reshape",
                                "concatenate", "stack", "slice", "take", "take_sorted",
                                "reverse", "repeat", "pad", "flatten", "tile"])
        if name == "transpose" and r >= 2:
            perm = list(range(r))
            self.rng.shuffle(perm)
            return self._emit(rop.transpose(x, perm), [dims[p] for p in perm], v.dtype)
        if name == "expand_dims" and r < 4:
            ax = self.rng.randint(0, r)
            return self._emit(rop.expand_dims(x, ax), dims[:ax] + (1,) + dims[ax:], v.dtype)
        if name == "squeeze" and 1 in dims:
            ax = dims.index(1)
            return self._emit(rop.squeeze(x, [ax]), dims[:ax] + dims[ax + 1:], v.dtype)
        if name == "reshape" and r >= 2:  # merge two neighbours (at most one symbolic dim)
            i = self.rng.randrange(r - 1)
            new = dims[:i] + (_mul_keys(dims[i], dims[i + 1]),) + dims[i + 2:]
            if sum(isinstance(d, str) for d in new) > 1:
                return None
            shape = [-1 if isinstance(d, str) else d for d in new]
            return self._emit(rop.reshape(x, shape), new, v.dtype, check=False)
        if name == "dyn_reshape" and r >= 2 and isinstance(dims[0], str):
            # (batch, rest...) -> (batch, prod(rest)) with the batch read by shape_of
            rest = 1
            for d in dims[1:]:
                if not isinstance(d, int):
                    return None
                rest *= d
            b = rop.take(rop.shape_of(x, "int64"), rx.const(0, "int64"))
            newshape = rop.concatenate([rop.reshape(b, [1]),
                                        rx.const(np.array([rest], "int64"))], 0)
            self.features.add("dyn.reshape")
            return self._emit(rop.reshape(x, newshape), (dims[0], rest), v.dtype, check=False)
        if name in ("concatenate", "stack") and r >= 1:
            ax = self.rng.randrange(r)

            def fits(u: _V) -> bool:
                if u.dtype != v.dtype or u.rank != r:
                    return False
                return all(a == b for i, (a, b) in enumerate(zip(dims, u.dims, strict=True))
                           if name == "stack" or i != ax)

            u = self._pick(fits, recent=False)
            if u is None:
                return None
            if name == "stack":
                if r >= 4:
                    return None
                return self._emit(rop.stack([x, u.expr], axis=ax), dims[:ax] + (2,) + dims[ax:],
                                  v.dtype)
            new = dims[:ax] + (_add_keys(dims[ax], u.dims[ax]),) + dims[ax + 1:]
            return self._emit(rop.concatenate([x, u.expr], ax), new, v.dtype, check=False)
        if name == "slice" and r >= 1:
            ax = self.rng.randrange(r)
            d = dims[ax]
            if isinstance(d, int):
                if d < 2:
                    return None
                begin, end, new = 1, d, d - 1
            else:
                begin, end, new = 0, 2, f"min({d},2)"
            b = [0] * r
            e = [int(np.iinfo("int32").max)] * r
            b[ax], e[ax] = begin, end
            st = [1] * r
            return self._emit(rop.strided_slice(x, b, e, st),
                              dims[:ax] + (new,) + dims[ax + 1:], v.dtype, check=False)
        if name == "take" and r >= 1:
            ax = self.rng.randrange(r)
            d = dims[ax]
            if not isinstance(d, int) or d < 1:
                return None
            idx = [self.rng.randrange(d) for _ in range(self.rng.randint(1, 3))]
            return self._emit(rop.take(x, rx.const(np.array(idx, "int32")), axis=ax),
                              dims[:ax] + (len(idx),) + dims[ax + 1:], v.dtype)
        if name == "take_sorted" and r >= 1:  # gather by the order of another value
            ax = self.rng.randrange(r)
            key = self._pick(lambda u: u.rank == 1 and u.dims[0] == dims[ax] and
                             u.dtype != "bool", recent=False)
            if key is None:
                return None
            self.features.add("argsort")
            order = rop.argsort(key.expr, axis=0, is_ascend=self.rng.random() < 0.5)
            return self._emit(rop.take(x, order, axis=ax), dims, v.dtype, check=False)
        if name == "reverse" and r >= 1:
            return self._emit(rop.reverse(x, self.rng.randrange(r)), dims, v.dtype)
        if name == "repeat" and r >= 1:
            ax = self.rng.randrange(r)
            return self._emit(rop.repeat(x, 2, ax),
                              dims[:ax] + (_mul_keys(2, dims[ax]),) + dims[ax + 1:], v.dtype,
                              check=False)
        if name == "tile" and r >= 1:
            reps = [self.rng.choice([1, 2]) for _ in range(r)]
            return self._emit(rop.tile(x, reps), [_mul_keys(k, d) for k, d in
                                                  zip(reps, dims, strict=True)], v.dtype,
                              check=False)
        if name == "pad" and r >= 1 and v.dtype != "bool":
            pads = [(self.rng.randint(0, 1), self.rng.randint(0, 1)) for _ in range(r)]
            new = [_add_keys(d, a + b) if a + b else d for d, (a, b) in
                   zip(dims, pads, strict=True)]
            return self._emit(rop.nn.pad(x, pads), new, v.dtype, check=False)
        if name == "flatten" and r >= 2:
            rest = 1
            for d in dims[1:]:
                rest = _mul_keys(rest, d)
            return self._emit(rop.nn.batch_flatten(x), (dims[0], rest), v.dtype, check=False)
        return None

    def _nn(self):
        name = self.rng.choice(["dense", "dense", "conv2d", "max_pool2d", "avg_pool2d",
                                "global_avg_pool2d", "layer_norm", "batch_matmul", "bias_add"])
        f32 = lambda v: v.dtype == "float32"  # noqa: E731
        if name == "dense":
            v = self._pick(lambda v: f32(v) and v.rank == 2 and isinstance(v.dims[1], int))
            if v is None:
                return None
            units = self.rng.choice([1, 3, 5])
            w = self._const((units, v.dims[1]), "float32")
            return self._emit(rop.nn.dense(v.expr, w), (v.dims[0], units), "float32")
        if name == "batch_matmul":
            v = self._pick(lambda v: f32(v) and v.rank == 3)
            if v is None:
                return None
            u = self._pick(lambda u: f32(u) and u.rank == 3 and u.dims[0] == v.dims[0] and
                           u.dims[2] == v.dims[2], recent=False) or v
            return self._emit(rop.nn.batch_matmul(v.expr, u.expr),
                              (v.dims[0], v.dims[1], u.dims[1]), "float32", check=False)
        if name == "layer_norm":
            v = self._pick(lambda v: f32(v) and v.rank >= 1 and isinstance(v.dims[-1], int))
            if v is None:
                return None
            c = v.dims[-1]
            return self._emit(rop.nn.layer_norm(v.expr, self._const((c,), "float32"),
                                                self._const((c,), "float32"), axis=-1),
                              v.dims, "float32")
        v = self._pick(lambda v: f32(v) and v.rank == 4 and
                       all(isinstance(d, int) for d in v.dims[1:]))
        if v is None:
            return None
        n, c, h, w = v.dims
        if name == "conv2d":
            k = self.rng.choice([1, 3])
            oc = self.rng.choice([1, 2, 4])
            weight = self._const((oc, c, k, k), "float32")
            return self._emit(rop.nn.conv2d(v.expr, weight, padding=(k // 2, k // 2),
                                            channels=oc, kernel_size=(k, k)),
                              (n, oc, h, w), "float32")
        if name in ("max_pool2d", "avg_pool2d"):
            ph, pw = min(2, h), min(2, w)
            return self._emit(getattr(rop.nn, name)(v.expr, pool_size=(ph, pw), strides=(1, 1)),
                              (n, c, h - ph + 1, w - pw + 1), "float32")
        if name == "global_avg_pool2d":
            return self._emit(rop.nn.global_avg_pool2d(v.expr), (n, c, 1, 1), "float32")
        return self._emit(rop.nn.bias_add(v.expr, self._const((c,), "float32")), v.dims,
                          "float32")

    def _scan(self):
        v = self._pick(lambda v: v.rank >= 1 and v.dtype != "bool")
        if v is None:
            return None
        ax = self.rng.randrange(v.rank)
        name = self.rng.choice(["cumsum", "cumprod", "sort", "argsort", "topk"])
        self.features.add(name)
        x = v.expr
        if name == "cumsum":
            return self._emit(rop.cumsum(x, axis=ax, exclusive=self.rng.random() < 0.3),
                              v.dims, v.dtype)
        if name == "cumprod":
            if not _f(v):
                return None
            return self._emit(rop.cumprod(rop.clip(x, -1.2, 1.2), axis=ax), v.dims, v.dtype)
        asc = self.rng.random() < 0.5
        if name == "sort":
            return self._emit(rop.sort(x, axis=ax, is_ascend=asc), v.dims, v.dtype)
        if name == "argsort":
            return self._emit(rop.argsort(x, axis=ax, is_ascend=asc), v.dims, "int32")
        d = v.dims[ax]
        limit = d if isinstance(d, int) else (self.min_size if d in ("n", "m") else 0)
        if limit < 1:
            return None
        k = self.rng.randint(1, min(limit, 3))
        ret = self.rng.choice(["values", "indices", "both"])
        t = rop.topk(x, k=k, axis=ax, ret_type=ret, is_ascend=asc)
        dims = v.dims[:ax] + (k,) + v.dims[ax + 1:]
        if ret == "both":
            tup = t.astuple()
            if self._typed(tup) is None:
                return None
            idx = self.rng.randrange(2)
            return self._emit(rx.TupleGetItem(tup, idx), dims, v.dtype if idx == 0 else "int32")
        return self._emit(t, dims, v.dtype if ret == "values" else "int32")

    def _unique(self):
        v = self._pick(lambda v: v.rank == 1 and not _f(v) and v.dtype != "bool")
        if v is None:
            v = self._pick(lambda v: v.rank == 1 and _f(v))
            if v is None:
                return None
            x = rop.cast(rop.round(rop.clip(v.expr, -3.0, 3.0)), "int32")
        else:
            x = v.expr
        self.features.add("unique")
        counts = self.rng.random() < 0.5
        u = rop.unique(x, is_sorted=self.rng.random() < 0.7, return_counts=counts)
        tup = u.astuple()
        if self._typed(tup) is None:
            return None
        # output, indices, inverse: (n,); num_unique (1,); counts (n,). The padding past
        # num_unique is unspecified, so only the first num_unique entries are compared: keep
        # what a program may read (the inverse indices, or everything masked by num_unique)
        num = rx.TupleGetItem(tup, 3)
        which = self.rng.choice([0, 1, 2] + ([4] if counts else []))
        field_ = rx.TupleGetItem(tup, which)
        if which == 2:
            return self._emit(field_, v.dims, "int32", check=False)
        size = rop.take(rop.shape_of(x, "int32"), rx.const(0, "int32"))
        pos = rop.arange(rx.const(0, "int32"), size, rx.const(1, "int32"), dtype="int32")
        keep = rop.less(pos, rop.cast(num, "int32"))
        masked = rop.where(keep, rop.cast(field_, "int32"), rx.const(-7, "int32"))
        return self._emit(masked, v.dims, "int32", check=False)

    def _argwhere(self):
        v = self._pick(lambda v: 1 <= v.rank <= 3)
        if v is None:
            return None
        cond = v.expr if v.dtype == "bool" else rop.greater(v.expr, rx.const(0, v.dtype))
        self.features.add("argwhere")
        return self._emit(rop.argwhere(cond), (self._key("w"), v.rank), "int32", check=False)

    def _shape_valued(self):
        """A reshape to, or a slice by, values of parameters: the same shapes can come with
        other values at each run (kernels specialize per value)."""
        if not self.shape_values:
            return None
        v = self._pick(lambda v: v.rank >= 1)
        if v is None:
            return None
        if self.rng.random() < 0.5:
            if not all(_evaluable(d) for d in v.dims):
                return None
            rank = self.rng.randint(1, 3)
            s = self._param((rank,), "int64", "reshape", of=v.dims, rank=rank)
            self.features.add("reshape-by-value")
            dims = tuple(self._key("s") for _ in range(rank))
            return self._emit(rop.reshape(v.expr, s.expr), dims, v.dtype, check=False)
        ax = self.rng.randrange(v.rank)
        if not _evaluable(v.dims[ax]):
            return None
        dtype = self.rng.choice(["int32", "int64"])
        b = self._param((1,), dtype, "slice_begin", size=v.dims[ax])
        e = self._param((1,), dtype, "slice_end", size=v.dims[ax])
        self.params[-1][1].info["pair"] = len(self.params) - 2
        self.features.add("slice-by-value")
        x = v.expr
        if ax:  # the slice is along axis 0: move the axis there
            perm = [ax] + [i for i in range(v.rank) if i != ax]
            x = rop.transpose(x, perm)
            dims = tuple(v.dims[p] for p in perm)
        else:
            dims = v.dims
        return self._emit(rop.strided_slice(x, b.expr, e.expr),
                          (self._key("z"),) + dims[1:], v.dtype, check=False)

    def _vision(self):
        if not self.vision:
            return None
        if self.rng.random() < 0.5:
            c, h, w = self.rng.choice([1, 2]), self.rng.choice([4, 5]), self.rng.choice([4, 6])
            data = self._pick(lambda v: v.dtype == "float32" and v.dims[1:] == (c, h, w) and
                              v.dims[0] == 1)
            data = data.expr if data is not None else self._const((1, c, h, w), "float32")
            rois = self._param(("n", 5), "float32", "rois", hw=(h, w))
            ph, pw = self.rng.choice([(1, 1), (2, 2), (2, 3)])
            if self.rng.random() < 0.5:
                e = rop.vision.roi_align(data, rois.expr, (ph, pw), spatial_scale=1.0,
                                         sample_ratio=self.rng.choice([-1, 2]))
            else:
                e = rop.vision.roi_pool(data, rois.expr, (ph, pw), spatial_scale=1.0)
            self.features.add("roi")
            return self._emit(e, ("n", c, ph, pw), "float32", check=False)
        classes = self.rng.choice([1, 2])
        boxes = self._param((1, "n", 4), "float32", "boxes")
        scores = self._param((1, classes, "n"), "float32", "scores")
        out = rop.vision.all_class_non_max_suppression(
            boxes.expr, scores.expr, self.rng.choice([1, 2, 5]), self.rng.choice([0.3, 0.6]),
            self.rng.choice([0.0, 0.2]))
        tup = out.astuple()
        if self._typed(tup) is None:
            return None
        self.features.add("nms")
        key = self._key("k")
        # onnx format: (selected indices (?, 3), count (1,)): the rows past count are padding
        sel = rx.TupleGetItem(tup, 0)
        num = rx.TupleGetItem(tup, 1)
        rows = rop.strided_slice(sel, rx.const(np.array([0], "int64")),
                                 rop.cast(num, "int64"))
        return self._emit(rows, (key, 3), "int64", check=False)

    def _if(self):
        v = self._pick(_f)
        if v is None:
            return None
        cond = rop.greater(rop.sum(v.expr), rx.const(0.0, v.dtype))
        if self._typed(cond) is None:
            return None
        other = self._pick(lambda u: u.dims == v.dims and u.dtype == v.dtype, recent=False)
        then = rop.negative(v.expr) if other is None else other.expr
        self.features.add("if")
        e = rx.If(cond, then, rop.multiply(v.expr, rx.const(2.0, v.dtype)))
        t = ProgramGenerator._type_of(then) or ProgramGenerator._type_of(
            rop.multiply(v.expr, rx.const(2.0, v.dtype)))
        if t is None:
            return None
        e._checked_type = t
        self.pool.append(_V(e, v.dims, v.dtype))
        return self.pool[-1]

    def _loop(self):
        """A ``while_loop``: a recurrence over a run-time count, or rows written in place."""
        if not self.loops:
            return None
        from ...relay import Any
        from ...relay.loops import while_loop

        v = self._pick(lambda v: _f(v) and v.rank >= 1)
        if v is None:
            return None
        t_any = TensorType([Any() if isinstance(d, str) else d for d in v.dims], v.dtype)
        ty = ProgramGenerator._type_of(v.expr)
        if ty is None:
            return None
        i = rx.Var("i", TensorType((), "int64"))
        cnt = rx.Var("count", TensorType((), "int64"))
        x = rx.Var("x", ty if self.rng.random() < 0.5 else t_any)
        cap = self._pick(lambda u: u.dtype == v.dtype and all(
            _join(a, b) == a for a, b in zip(reversed(v.dims), reversed(u.dims),
                                             strict=False)) and u.rank <= v.rank,
            recent=False)
        one = rx.const(1, "int64")
        if self.rng.random() < 0.5 and isinstance(v.dims[0], str):
            # rows t = f(src[t]) written into a buffer by vm.update_row, t < rows
            self.features.add("update_row")
            buf = rx.Var("buf", t_any)
            c = rx.const(self.rng.choice([0.5, 2.0, -1.0]), v.dtype)

            def body(i, cnt, x, buf):
                row = rop.take(x, i, axis=0)
                row = rop.tanh(rop.multiply(row, c)) if self.rng.random() < 0.5 else \
                    rop.add(row, c)
                return [rop.add(i, one), cnt, x, rop.vm.update_row(buf, row, i)]

            loop = while_loop(lambda i, cnt, *_: rop.less(i, cnt), [i, cnt, x, buf], body)
            rows = rop.take(rop.shape_of(v.expr, "int64"), rx.const(0, "int64"))
            start = rop.zeros_like(v.expr) if self.rng.random() < 0.7 else \
                rop.copy(v.expr)
            call = rx.Call(loop, [rx.const(0, "int64"), rows, v.expr, start])
            res = rx.TupleGetItem(call, 3)
        else:
            self.features.add("while")
            k = self.rng.choice([0.5, 0.25])

            def body(i, cnt, x):
                y = rop.multiply(x, rx.const(k, v.dtype))
                y = rop.add(y, cap.expr) if cap is not None else rop.add(y, rx.const(
                    0.5, v.dtype))
                return [rop.add(i, one), cnt, rop.tanh(y)]

            loop = while_loop(lambda i, cnt, _: rop.less(i, cnt), [i, cnt, x], body)
            d = next((j for j, dd in enumerate(v.dims) if isinstance(dd, str)), None)
            if d is not None and self.rng.random() < 0.7:  # as many steps as the batch
                count = rop.take(rop.shape_of(v.expr, "int64"), rx.const(d, "int64"))
            else:
                count = rx.const(self.rng.choice([0, 1, 3]), "int64")
            res = rx.TupleGetItem(rx.Call(loop, [rx.const(0, "int64"), count, v.expr]), 2)
        res._checked_type = ty  # (the recursion types once the module is inferred)
        self.pool.append(_V(res, v.dims, v.dtype))
        self.used.add(id(v.expr))
        return self.pool[-1]

    # ------------------------------------------------------------------ driver
    def _start(self) -> None:
        rng = self.rng
        for _ in range(rng.randint(1, 3)):
            rank = rng.choice([1, 2, 2, 3, 4])
            dims = ["n"] + [rng.choice([1, 2, 3, 4]) for _ in range(rank - 1)]
            if rng.random() < 0.25:  # the batch elsewhere than first
                j = rng.randrange(rank)
                dims[0], dims[j] = dims[j], dims[0]
            if rng.random() < 0.2:
                dims[dims.index("n")] = "m"
            dtype = "float32" if rng.random() < 0.8 else rng.choice(["int32", "int64",
                                                                        "float64"])
            self.pool.append(self._param(tuple(dims), dtype))
        if rng.random() < 0.3:
            self.pool.append(self._param(("n", rng.choice([1, 2]), rng.choice([3, 4]),
                                          rng.choice([3, 4])), "float32"))
        if not any(_f(v) for v in self.pool):
            self.pool.append(self._param(("n", 3), "float32"))

    def generate(self) -> DynamicProgram:
        self._start()
        nparams = len(self.pool)
        families = [(self._unary, 5), (self._binary, 5), (self._reduce, 2), (self._softmax, 1),
                    (self._shape, 5), (self._nn, 2), (self._scan, 2), (self._unique, 1),
                    (self._argwhere, 1), (self._shape_valued, 1), (self._vision, 1),
                    (self._if, 1), (self._loop, 1)]
        boost = FOCI.get(self.focus, {})
        fns = [f for f, _ in families]
        weights = [w * boost.get(f.__name__.strip("_"), 1) for f, w in families]
        n_ops = self.rng.randint(2, self.max_ops)
        made = tries = 0
        while made < n_ops and tries < n_ops * 8:
            tries += 1
            if self.rng.choices(fns, weights)[0]() is not None:
                made += 1
        return self._finish(nparams)

    def _finish(self, nparams: int) -> DynamicProgram:
        pool = self.pool[nparams:] or self.pool
        outs = [pool[-1]]
        extra = [v for v in pool[:-1] if id(v.expr) not in self.used]
        self.rng.shuffle(extra)
        outs += extra[:self.rng.randint(1, 3)]  # values nobody used: most of the program runs
        r = self.rng.random()
        if r < 0.1:  # a parameter returned as it is
            outs.append(self.pool[0])
        elif r < 0.2:  # one value twice
            outs.append(outs[0])
        body = outs[0].expr if len(outs) == 1 else rx.Tuple([o.expr for o in outs])
        mod = IRModule()
        mod["main"] = rx.Function([v for v, _ in self.params], body)
        from ...relay.transform import InferType

        mod = InferType()(mod)
        text = mod["main"].astext()
        features = {f for f, marks in FEATURES.items() if any(m in text for m in marks)}
        features |= self.features & {"if"}
        params = [p for _, p in self.params]
        return DynamicProgram(mod, self.seed, params, features, self.min_size)


def generate_dynamic_program(seed: int, **options) -> DynamicProgram:
    """The dynamic-shape program of ``seed`` (see DynamicProgramGenerator for the options)."""
    return DynamicProgramGenerator(seed, **options).generate()

