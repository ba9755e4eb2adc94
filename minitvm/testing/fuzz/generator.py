"""A seeded generator of random well-typed Relay programs (NNSmith-style, type-directed).

A program grows from a few parameters: each step picks an operator family, takes operands from
the pool of values built so far (recent ones more often, any of them sometimes, so values are
shared by several users), asks the operator's own type relation for the result type, and adds
the call to the pool. Tuples, ``let``, ``if``, closures and an ADT ``match`` are mixed in. The
program's result is a tuple of values nobody used (or the last value).

``bounded=True`` keeps values finite (log of ``abs(x) + 1``, division by ``abs(y) + 1``, exp of a
clipped value...) so numeric comparisons are meaningful; ``bounded=False`` applies the operators
raw, and ``special_inputs`` feeds inf, nan, huge and zero values: that mode checks IEEE agreement.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from ...ir.module import IRModule
from ...ir.type import TensorType, TupleType
from ...relay import expr as rx
from ...relay import op as rop
from ...relay.adt import Clause, Constructor, Match, PatternConstructor, PatternVar, TypeData

FLOAT_DTYPES = ("float32", "float32", "float32", "float32", "float16", "float64")
INT_DTYPES = ("int32", "int32", "int64", "int8", "uint8")


@dataclass
class GeneratedProgram:
    """A module and what is needed to run it."""

    mod: IRModule
    seed: int
    input_types: list  # [(name, TensorType)]
    features: set = field(default_factory=set)  # "if", "let", "closure", "adt", "tuple"
    bounded: bool = True

    @property
    def graph_compatible(self) -> bool:
        """True when relay.build's graph executor can run it (no control flow, closures or
        ADTs; let-bound values are fine)."""
        return not self.features & {"if", "closure", "adt"}

    def inputs(self, seed: int | None = None, special: bool = False) -> list[np.ndarray]:
        """Random inputs of the parameter types (``special``: inf/nan/huge/zero sprinkled in)."""
        rng = np.random.default_rng(self.seed if seed is None else seed)
        return [random_array(rng, t, special) for _, t in self.input_types]


def random_array(rng, t: TensorType, special: bool = False) -> np.ndarray:
    shape = tuple(int(d) for d in t.shape)
    dt = np.dtype(t.dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -6
        arr = rng.integers(lo, 7, size=shape).astype(dt)
        if special and arr.size:
            info = np.iinfo(dt)
            flat = arr.reshape(-1)
            picks = rng.choice([info.min, info.max, 0, -1 if dt.kind == "i" else 1],
                               size=flat.size)
            mask = rng.random(flat.size) < 0.3
            flat[mask] = picks[mask].astype(dt)
        return arr
    arr = rng.uniform(-2.0, 2.0, size=shape).astype(dt)
    if special and arr.size:
        flat = arr.reshape(-1)
        big = float(np.finfo(dt).max)
        picks = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 89.0, -104.0, big, -big, 1e-30],
                         dtype="float64")
        idx = rng.integers(0, picks.size, size=flat.size)
        mask = rng.random(flat.size) < 0.35
        with np.errstate(over="ignore"):
            flat[mask] = picks[idx][mask].astype(dt)
    return arr


def _is_float(t) -> bool:
    return isinstance(t, TensorType) and t.dtype.startswith("float")


def _is_int(t) -> bool:
    return isinstance(t, TensorType) and t.dtype.startswith(("int", "uint"))


def _rank(t) -> int:
    return len(t.shape) if isinstance(t, TensorType) else -1


def _shape(t) -> tuple:
    return tuple(int(d) for d in t.shape)


class ProgramGenerator:
    """``ProgramGenerator(seed).generate()`` -> GeneratedProgram; deterministic per seed."""

    def __init__(self, seed: int, max_ops: int = 14, bounded: bool = True,
                 control_flow: bool = True, closures: bool = True, adts: bool = True,
                 dtypes: bool = True, max_rank: int = 4, lets: bool = True):
        self.seed = seed
        self.rng = random.Random(seed)
        self.max_ops = max_ops
        self.bounded = bounded
        self.control_flow = control_flow
        self.closures = closures
        self.adts = adts
        self.dtypes = dtypes
        self.max_rank = max_rank
        self.use_lets = lets
        self.pool: list[tuple] = []  # (expr, type)
        self.used: set = set()
        self.lets: list[tuple] = []  # (var, value) in creation order
        self.features: set = set()
        self.adt = None
        self._names = 0

    # ------------------------------------------------------------------ helpers
    def _name(self, prefix: str) -> str:
        self._names += 1
        return f"{prefix}{self._names}"

    def _rand_shape(self, rank: int | None = None) -> tuple:
        rank = self.rng.choice([0, 1, 2, 2, 3, 3, 4][: self.max_rank + 3]) if rank is None \
            else rank
        return tuple(self.rng.choice([1, 2, 3, 4]) for _ in range(min(rank, self.max_rank)))

    def _pick(self, pred=None, recent: bool = True):
        """A pool value satisfying ``pred``: usually a recent one, sometimes any (sharing)."""
        cands = [p for p in self.pool if pred is None or pred(p[1])]
        if not cands:
            return None
        if recent and self.rng.random() < 0.6:
            cands = cands[-3:]
        return self.rng.choice(cands)

    def _add(self, e, t=None):
        if t is None:
            t = self._type_of(e)
        if t is None:
            return None
        if isinstance(t, TensorType) and any(int(d) > 64 for d in t.shape):
            return None  # keep programs small
        if self.rng.random() < 0.12 and self.use_lets:  # bind it with let
            v = rx.Var(self._name("v"), t)
            self.lets.append((v, e))
            self.features.add("let")
            e = v
        self.pool.append((e, t))
        return e

    @classmethod
    def _type_of(cls, e):
        """The type of a (small) expression built here: calls from their operator's relation,
        so a candidate that does not type-check is dropped before it enters the program."""
        if isinstance(e, rx.TupleWrapper):
            e = e.astuple()
        t = getattr(e, "_checked_type", None)
        if t is not None:
            return t
        if isinstance(e, rx.Constant):
            t = TensorType(e.data.shape, str(e.data.dtype))
        elif isinstance(e, rx.Var):
            t = e.type_annotation
        elif isinstance(e, rx.Tuple):
            fields = [cls._type_of(f) for f in e.fields]
            t = None if any(f is None for f in fields) else TupleType(fields)
        elif isinstance(e, rx.TupleGetItem):
            tt = cls._type_of(e.tuple_value)
            t = tt.fields[e.index] if isinstance(tt, TupleType) else None
        elif isinstance(e, rx.Call) and hasattr(e.op, "get_attr"):
            rel = e.op.get_attr("FTypeRelation")
            arg_types = [cls._type_of(a) for a in e.args]
            if rel is None or any(a is None for a in arg_types):
                return None
            try:
                t = rel(arg_types, e.attrs)
            except Exception:  # noqa: BLE001 - not applicable to these operands: skip
                return None
        if t is not None and not isinstance(e, rx.Var):
            e._checked_type = t
        return t

    def _typed(self, e, t):
        e._checked_type = t
        return e

    # ------------------------------------------------------------------ operator families
    def _unary_float(self):
        p = self._pick(_is_float)
        if p is None:
            return None
        x, t = p
        b = self.bounded
        name = self.rng.choice(["exp", "log", "sqrt", "tanh", "sigmoid", "abs", "negative",
                                "floor", "ceil", "round", "trunc", "relu", "sin", "cos", "erf",
                                "clip", "leaky_relu", "rsqrt", "sign", "atan", "copy",
                                "log_softmax", "softmax", "isfinite_where"])
        one = rx.const(1.0, t.dtype)
        if name == "exp":
            arg = rop.clip(x, -10.0, 10.0) if b else x
            return rop.exp(arg)
        if name in ("log", "sqrt", "rsqrt"):
            arg = rop.add(rop.abs(x), one) if b else x
            return getattr(rop, name)(arg)
        if name == "relu":
            return rop.nn.relu(x)
        if name == "clip":
            return rop.clip(x, -1.5, 1.0)
        if name == "leaky_relu":
            return rop.nn.leaky_relu(x, 0.125)
        if name in ("softmax", "log_softmax"):
            if _rank(t) == 0:
                return None
            return getattr(rop.nn, name)(x, axis=self.rng.randrange(-_rank(t), _rank(t)))
        if name == "isfinite_where":
            return rop.where(rop.isfinite(x), x, rx.const(0.0, t.dtype))
        return getattr(rop, name)(x)

    def _binary(self):
        p = self._pick(lambda t: isinstance(t, TensorType) and t.dtype != "bool")
        if p is None:
            return None
        a, ta = p
        q = self._pick(lambda t: isinstance(t, TensorType) and t.dtype == ta.dtype and
                       self._broadcastable(ta, t), recent=False)
        if q is None or self.rng.random() < 0.25:
            shape = _shape(ta)
            if shape and self.rng.random() < 0.5:
                shape = shape[self.rng.randrange(len(shape)):]  # a trailing sub-shape
            q = (self._const(shape, ta.dtype), TensorType(shape, ta.dtype))
        b, tb = q
        name = self.rng.choice(["add", "subtract", "multiply", "divide", "maximum", "minimum",
                                "floor_divide", "floor_mod", "mod", "power", "greater",
                                "less_equal", "equal", "not_equal"])
        if name in ("divide", "floor_divide", "floor_mod", "mod"):
            if self.bounded:
                if ta.dtype.startswith("uint"):
                    b = rop.add(b, rx.const(1, ta.dtype))
                else:
                    b = rop.add(rop.abs(b), rx.const(1, ta.dtype))
            return getattr(rop, name)(a, b)
        if name == "power":
            if not _is_float(ta):
                return None
            if self.bounded:
                a = rop.add(rop.abs(a), rx.const(0.5, ta.dtype))
                b = rop.clip(b, -2.0, 2.0)
            return rop.power(a, b)
        if name == "multiply" and _is_int(ta) and self.bounded:
            b = rop.clip(b, -3, 3) if not ta.dtype.startswith("uint") else b
        return getattr(rop, name)(a, b)

    @staticmethod
    def _broadcastable(ta, tb) -> bool:
        sa, sb = _shape(ta), _shape(tb)
        for x, y in zip(reversed(sa), reversed(sb), strict=False):
            if x != y and 1 not in (x, y):
                return False
        return True

    def _const(self, shape, dtype):
        rng = np.random.default_rng(self.rng.randrange(1 << 30))
        arr = random_array(rng, TensorType(shape, dtype), special=not self.bounded and
                           self.rng.random() < 0.3)
        return rx.const(arr, dtype)

    def _reduce(self):
        p = self._pick(lambda t: isinstance(t, TensorType) and _rank(t) >= 1
                       and t.dtype != "bool")
        if p is None:
            return None
        x, t = p
        r = _rank(t)
        name = self.rng.choice(["sum", "mean", "max", "min", "prod", "argmax", "argmin",
                                "variance", "logsumexp"])
        if name in ("mean", "variance", "logsumexp") and not _is_float(t):
            name = "sum"
        axis = None if self.rng.random() < 0.25 else \
            sorted(self.rng.sample(range(r), self.rng.randint(1, r)))
        keep = self.rng.random() < 0.4
        if name == "prod" and self.bounded:
            x = rop.clip(x, -1.5, 1.5) if _is_float(t) or not t.dtype.startswith("uint") \
                else x
        if name == "logsumexp":
            return rop.logsumexp(x, axis=axis, keepdims=keep)
        if name in ("argmax", "argmin"):
            return getattr(rop, name)(x, axis=None if axis is None else [axis[0]],
                                      keepdims=keep)
        return getattr(rop, name)(x, axis=axis, keepdims=keep)

    def _shape_op(self):
        p = self._pick(lambda t: isinstance(t, TensorType))
        if p is None:
            return None
        x, t = p
        shape, r = _shape(t), _rank(t)
        name = self.rng.choice(["reshape", "transpose", "expand_dims", "squeeze", "concatenate",
                                "split", "strided_slice", "take", "broadcast_to", "tile",
                                "repeat", "reverse", "flatten", "cast", "stack", "pad"])
        if name == "reshape":
            n = int(np.prod(shape)) if shape else 1
            dims = [d for d in (1, 2, 3, 4, 6, 8) if n % d == 0]
            first = self.rng.choice(dims)
            return rop.reshape(x, (first, -1) if n else (0,))
        if name == "transpose" and r >= 2:
            perm = list(range(r))
            self.rng.shuffle(perm)
            return rop.transpose(x, perm)
        if name == "expand_dims" and r < self.max_rank:
            return rop.expand_dims(x, self.rng.randint(-r - 1, r))
        if name == "squeeze" and 1 in shape:
            return rop.squeeze(x, [shape.index(1)])
        if name in ("concatenate", "stack"):
            q = self._pick(lambda u: isinstance(u, TensorType) and u.dtype == t.dtype and
                           _rank(u) == r and r >= 1, recent=False)
            if q is None:
                return None
            if name == "stack":
                if _shape(q[1]) != shape or r >= self.max_rank:
                    return None
                return rop.stack([x, q[0]], axis=self.rng.randint(0, r))
            axis = self.rng.randrange(r)
            if any(a != b for i, (a, b) in enumerate(zip(shape, _shape(q[1]), strict=True))
                   if i != axis):
                return None
            return rop.concatenate([x, q[0]], axis)
        if name == "split" and r >= 1:
            axis = self.rng.randrange(r)
            if shape[axis] < 2:
                return None
            parts = rop.split(x, 2 if shape[axis] % 2 == 0 else [1], axis=axis)
            self.features.add("tuple")
            tup = parts.astuple()
            tt = self._type_of(tup)
            if tt is None:
                return None
            return rx.TupleGetItem(self._typed(tup, tt), self.rng.randrange(len(tt.fields)))
        if name == "strided_slice" and r >= 1:
            axis = self.rng.randrange(r)
            if shape[axis] < 2:
                return None
            begin = [0] * r
            end = list(shape)
            begin[axis] = 1
            return rop.strided_slice(x, begin, end)
        if name == "take" and r >= 1:
            axis = self.rng.randrange(r)
            idx = rx.const(np.array([self.rng.randrange(shape[axis])
                                     for _ in range(self.rng.randint(1, 3))], "int32"))
            return rop.take(x, idx, axis=axis)
        if name == "broadcast_to":
            target = tuple(self.rng.choice([2, 3]) if d == 1 else d for d in shape)
            return rop.broadcast_to(x, target)
        if name == "tile" and r >= 1:
            return rop.tile(x, [self.rng.choice([1, 2]) for _ in range(r)])
        if name == "repeat" and r >= 1:
            return rop.repeat(x, 2, self.rng.randrange(r))
        if name == "reverse" and r >= 1:
            return rop.reverse(x, self.rng.randrange(r))
        if name == "flatten" and r >= 2:
            return rop.nn.batch_flatten(x)
        if name == "cast" and self.dtypes:
            to = self.rng.choice(FLOAT_DTYPES + INT_DTYPES + ("bool",))
            if self.bounded and _is_float(t) and to.startswith(("int", "uint")):
                x = rop.clip(x, -100.0, 100.0)  # float -> int of out-of-range values is UB
                if to.startswith("uint"):
                    x = rop.abs(x)
            return rop.cast(x, to)
        if name == "pad" and r >= 1 and t.dtype != "bool":
            return rop.nn.pad(x, [(self.rng.randint(0, 1), self.rng.randint(0, 1))
                                  for _ in range(r)])
        return None

    def _nn(self):
        name = self.rng.choice(["dense", "conv2d", "max_pool2d", "avg_pool2d",
                                "global_avg_pool2d", "batch_matmul", "bias_add", "batch_norm",
                                "layer_norm"])
        f32 = lambda t: isinstance(t, TensorType) and t.dtype == "float32"  # noqa: E731
        if name == "dense":
            p = self._pick(lambda t: f32(t) and _rank(t) == 2)
            if p is None:
                return None
            k = _shape(p[1])[1]
            w = self._const((self.rng.choice([1, 3, 5]), k), "float32")
            return rop.nn.dense(p[0], w)
        if name == "batch_matmul":
            p = self._pick(lambda t: f32(t) and _rank(t) == 3)
            if p is None:
                return None
            b, _, k = _shape(p[1])
            w = self._const((b, self.rng.choice([2, 3]), k), "float32")
            return rop.nn.batch_matmul(p[0], w)
        p = self._pick(lambda t: f32(t) and _rank(t) == 4)
        if p is None:
            return None
        x, t = p
        n, c, h, w = _shape(t)
        if name == "conv2d":
            k = self.rng.choice([1, 3])
            oc = self.rng.choice([1, 2, 4])
            weight = self._const((oc, c, k, k), "float32")
            return rop.nn.conv2d(x, weight, padding=(k // 2, k // 2), channels=oc,
                                 kernel_size=(k, k))
        if name in ("max_pool2d", "avg_pool2d"):
            size = (min(2, h), min(2, w))
            return getattr(rop.nn, name)(x, pool_size=size, strides=(1, 1))
        if name == "global_avg_pool2d":
            return rop.nn.global_avg_pool2d(x)
        if name == "bias_add":
            return rop.nn.bias_add(x, self._const((c,), "float32"))
        if name == "batch_norm":
            gamma, beta = self._const((c,), "float32"), self._const((c,), "float32")
            mean = self._const((c,), "float32")
            var = rx.const(np.abs(np.random.default_rng(self.seed).standard_normal(c))
                           .astype("float32") + 0.5)
            bn = rop.nn.batch_norm(x, gamma, beta, mean, var).astuple()
            tt = self._type_of(bn)
            if tt is None:
                return None
            self.features.add("tuple")
            return rx.TupleGetItem(self._typed(bn, tt), 0)
        if name == "layer_norm":
            return rop.nn.layer_norm(x, self._const((w,), "float32"),
                                     self._const((w,), "float32"), axis=-1)
        return None

    def _where(self):
        p = self._pick(lambda t: isinstance(t, TensorType) and t.dtype != "bool")
        if p is None:
            return None
        x, t = p
        c = self._pick(lambda u: isinstance(u, TensorType) and u.dtype == "bool" and
                       self._broadcastable(u, t))
        cond = c[0] if c is not None else rop.greater(x, rx.const(0, t.dtype))
        if c is None:
            self._type_of(cond)
        return rop.where(cond, x, rop.negative(x) if not t.dtype.startswith("uint") else x)

    def _tuple(self):
        items = [self._pick(lambda t: isinstance(t, TensorType), recent=False)
                 for _ in range(self.rng.randint(2, 3))]
        if any(i is None for i in items):
            return None
        tup = rx.Tuple([i[0] for i in items])
        tt = TupleType([i[1] for i in items])
        self.features.add("tuple")
        if self.rng.random() < 0.5 and self.use_lets:
            v = rx.Var(self._name("t"), tt)
            self.lets.append((v, self._typed(tup, tt)))
            self.features.add("let")
            tup = v
        else:
            self._typed(tup, tt)
        k = self.rng.randrange(len(items))
        return self._typed(rx.TupleGetItem(tup, k), items[k][1])

    def _if(self):
        p = self._pick(lambda t: _is_float(t))
        if p is None:
            return None
        x, t = p
        cond = rop.greater(rop.sum(x), rx.const(0.0, t.dtype))
        self._type_of(cond.args[0])
        self._type_of(cond)
        then = rop.negative(x)
        other = rop.multiply(x, rx.const(2.0, t.dtype))
        self.features.add("if")
        return self._typed(rx.If(cond, then, other), t)

    def _closure(self):
        p = self._pick(_is_float)
        if p is None:
            return None
        x, t = p
        cap = self._pick(lambda u: u == t, recent=False)
        param = rx.Var(self._name("p"), t)
        body = rop.tanh(param) if cap is None else rop.add(param, rop.tanh(cap[0]))
        fn = rx.Function([param], body, t)
        self.features.add("closure")
        if self.rng.random() < 0.5:  # let-bound and called twice
            fv = rx.Var(self._name("f"), None)
            inner = rx.Call(fv, [rx.Call(fv, [x])])
            return self._typed(rx.Let(fv, fn, inner), t)
        return self._typed(rx.Call(fn, [x]), t)

    def _adt(self):
        p = self._pick(_is_float)
        if p is None:
            return None
        x, t = p
        if self.adt is None:
            from ...ir.type import GlobalTypeVar, TypeVar

            gtv = GlobalTypeVar("Opt")
            a = TypeVar("A")
            some = Constructor("Some", [a], gtv)
            none = Constructor("Nothing", [], gtv)
            self.adt = (gtv, TypeData(gtv, [a], [some, none]), some, none)
        gtv, _, some, none = self.adt
        u = rx.Var(self._name("u"), t)
        val = rx.Call(some, [x]) if self.rng.random() < 0.7 else rx.Call(none, [])
        clauses = [Clause(PatternConstructor(some, [PatternVar(u)]), rop.sigmoid(u)),
                   Clause(PatternConstructor(none, []), rop.zeros_like(x))]
        self.features.add("adt")
        return self._typed(Match(val, clauses), t)

    # ------------------------------------------------------------------ driver
    def generate(self) -> GeneratedProgram:
        rng = self.rng
        params = []
        for i in range(rng.randint(1, 3)):
            dtype = "float32"
            if self.dtypes and rng.random() < 0.25:
                dtype = rng.choice(FLOAT_DTYPES + INT_DTYPES + ("bool",))
            t = TensorType(self._rand_shape(), dtype)
            v = rx.Var(f"x{i}", t)
            params.append(v)
            self.pool.append((v, t))
        if not any(_is_float(t) for _, t in self.pool):
            t = TensorType(self._rand_shape(), "float32")
            v = rx.Var(f"x{len(params)}", t)
            params.append(v)
            self.pool.append((v, t))
        if rng.random() < 0.3:  # an NCHW input so conv/pool get used
            t = TensorType((1, rng.choice([1, 2, 3]), rng.choice([3, 4]), rng.choice([3, 4])),
                           "float32")
            v = rx.Var(f"x{len(params)}", t)
            params.append(v)
            self.pool.append((v, t))
        families = [(self._unary_float, 5), (self._binary, 5), (self._reduce, 2),
                    (self._shape_op, 4), (self._nn, 2), (self._where, 1), (self._tuple, 1)]
        if self.control_flow:
            families.append((self._if, 1))
        if self.closures:
            families.append((self._closure, 1))
        if self.adts:
            families.append((self._adt, 1))
        fns = [f for f, _ in families]
        weights = [w for _, w in families]
        n_ops = rng.randint(2, self.max_ops)
        made, tries = 0, 0
        while made < n_ops and tries < n_ops * 8:
            tries += 1
            e = rng.choices(fns, weights)[0]()
            if e is None:
                continue
            args = getattr(e, "args", ())
            for a in args:
                self.used.add(id(a))
            if self._add(e) is not None:
                made += 1
        return self._finish(params)

    def _finish(self, params) -> GeneratedProgram:
        pool = self.pool[len(params):] or self.pool
        last = pool[-1]
        outs = [last]
        extra = [p for p in pool[:-1] if id(p[0]) not in self.used and
                 isinstance(p[1], TensorType)]
        if extra and self.rng.random() < 0.5:
            outs.append(self.rng.choice(extra))
        body = outs[0][0] if len(outs) == 1 else rx.Tuple([o[0] for o in outs])
        for v, val in reversed(self.lets):
            body = rx.Let(v, val, body)
        mod = IRModule()
        if self.adt is not None:
            mod[self.adt[0]] = self.adt[1]
        from ...relay.analysis.free_vars import free_vars

        fn = rx.Function(params, body)
        free = [v for v in free_vars(fn)]
        if free:  # cannot happen by construction; keep the program closed anyway
            fn = rx.Function(params + free, body)
        mod["main"] = fn
        from ...relay.transform import InferType

        # untyped copy: clear the types set while generating (InferType recomputes them)
        mod = InferType()(mod)
        names = [(p.name_hint, p.type_annotation) for p in mod["main"].params]
        return GeneratedProgram(mod, self.seed, names, set(self.features), self.bounded)


def generate_program(seed: int, **options) -> GeneratedProgram:
    """The program of ``seed`` (see ProgramGenerator for the options)."""
    return ProgramGenerator(seed, **options).generate()
