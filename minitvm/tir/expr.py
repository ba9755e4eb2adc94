"""Scalar expressions of the loop-level IR (PrimExpr): immediates, variables and arithmetic.

Relay uses them for tensor dimensions (``relay.Any()`` and symbolic ``SizeVar``s); TIR builds
its loops and indices from them.
"""

from __future__ import annotations

import re

from ..ir.node import Node
from ..ir.prim_expr import Any, FloatImm, IntImm, PrimExpr, register_prim_operators  # noqa: F401


def _to_expr(value, dtype: str | None = None) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        return IntImm("bool", int(value))
    if isinstance(value, int):
        if dtype is not None and dtype.startswith(("float", "bfloat")):
            return FloatImm(dtype, float(value))
        return IntImm(dtype or "int32", value)
    if isinstance(value, float):
        if dtype is not None and not dtype.startswith(("float", "bfloat")):
            dtype = None
        return FloatImm(dtype or "float32", value)
    if isinstance(value, IterVar):
        return value.var
    if hasattr(value, "dtype") and hasattr(value, "item"):  # numpy scalar
        return _to_expr(value.item(), str(value.dtype))
    raise TypeError(f"cannot convert {value!r} to a PrimExpr")


def _int_bits(dtype: str) -> int:
    digits = "".join(ch for ch in dtype if ch.isdigit())
    return int(digits) if digits else 32


def _unify(a, b) -> tuple[PrimExpr, PrimExpr]:
    """Convert two operands to PrimExprs of one dtype (constants follow the other side)."""
    if not isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
        return _to_expr(a, b.dtype), b
    a = _to_expr(a)
    b = _to_expr(b, a.dtype)
    if a.dtype == b.dtype:
        return a, b
    if isinstance(b, (IntImm, FloatImm)) and not isinstance(a, (IntImm, FloatImm)):
        return a, _to_expr(b.value, a.dtype)
    if isinstance(a, (IntImm, FloatImm)):
        return _to_expr(a.value, b.dtype), b
    ints = ("int", "uint")
    if a.dtype.startswith(ints) and b.dtype.startswith(ints):
        if _int_bits(a.dtype) < _int_bits(b.dtype):
            return Cast(b.dtype, a), b
        return a, Cast(a.dtype, b)
    return a, b


class StringImm(PrimExpr):
    __slots__ = ("value",)

    def __init__(self, value: str):
        self.dtype = "handle"
        self.value = value

    def __repr__(self):
        return repr(self.value)


class Var(PrimExpr):
    """A scalar variable; identity is the variable."""

    __slots__ = ("name", "type_annotation")
    _node_compare = "var"
    _node_fields = ("dtype",)

    def __init__(self, name: str, dtype="int32", span=None):
        self.name = name
        self.dtype = dtype if isinstance(dtype, str) else str(dtype)
        self.type_annotation = None

    @property
    def name_hint(self) -> str:
        return self.name

    def __repr__(self):
        return self.name


class SizeVar(Var):
    """A variable known to be non-negative (a symbolic dimension)."""

    __slots__ = ()


class BinaryOp(PrimExpr):
    __slots__ = ("a", "b")
    op_sym = "?"

    def __init__(self, a, b, span=None):
        a, b = _unify(a, b)
        self.a = a
        self.b = b
        self.dtype = a.dtype

    def __repr__(self):
        return f"({self.a!r} {self.op_sym} {self.b!r})"


class Add(BinaryOp):
    __slots__ = ()
    op_sym = "+"


class Sub(BinaryOp):
    __slots__ = ()
    op_sym = "-"


class Mul(BinaryOp):
    __slots__ = ()
    op_sym = "*"


class Div(BinaryOp):
    __slots__ = ()
    op_sym = "/"


class Mod(BinaryOp):
    __slots__ = ()
    op_sym = "%"


class FloorDiv(BinaryOp):
    __slots__ = ()
    op_sym = "//"


class FloorMod(BinaryOp):
    __slots__ = ()
    op_sym = "%"


class Min(BinaryOp):
    __slots__ = ()
    op_sym = "min"

    def __repr__(self):
        return f"T.min({self.a!r}, {self.b!r})"


class Max(BinaryOp):
    __slots__ = ()
    op_sym = "max"

    def __repr__(self):
        return f"T.max({self.a!r}, {self.b!r})"


class CmpOp(BinaryOp):
    __slots__ = ()

    def __init__(self, a, b, span=None):
        super().__init__(a, b)
        self.dtype = "bool"


class EQ(CmpOp):
    __slots__ = ()
    op_sym = "=="


class NE(CmpOp):
    __slots__ = ()
    op_sym = "!="


class LT(CmpOp):
    __slots__ = ()
    op_sym = "<"


class LE(CmpOp):
    __slots__ = ()
    op_sym = "<="


class GT(CmpOp):
    __slots__ = ()
    op_sym = ">"


class GE(CmpOp):
    __slots__ = ()
    op_sym = ">="


class And(CmpOp):
    __slots__ = ()
    op_sym = "and"


class Or(CmpOp):
    __slots__ = ()
    op_sym = "or"


def const(value, dtype: str | None = None) -> PrimExpr:
    """A scalar immediate of the given dtype (int32 / float32 by default)."""
    if dtype is not None and dtype.startswith("float"):
        return FloatImm(dtype, float(value))
    return _to_expr(value, dtype)


def as_index(v, dtype: str) -> PrimExpr:
    """Index ``v`` (an int or an integer expression) as an expression of ``dtype``: an
    immediate, the expression itself, or its cast (loop bounds of one index type)."""
    if isinstance(v, int):
        return IntImm(dtype, v)
    return v if v.dtype == dtype else Cast(dtype, v)


# --------------------------------------------------------------------------- loop-level nodes
def _printed(node) -> str:
    from .printer import expr_to_str

    return expr_to_str(node)


def _astype(self, dtype: str) -> PrimExpr:
    return self if self.dtype == dtype else Cast(dtype, self)




class Cast(PrimExpr):
    """Convert ``value`` to ``dtype``."""

    __slots__ = ("value",)

    def __init__(self, dtype: str, value, span=None):
        self.dtype = str(dtype)
        self.value = _to_expr(value)

    __repr__ = _printed


class Not(PrimExpr):
    """Logical negation of a boolean."""

    __slots__ = ("a",)

    def __init__(self, a, span=None):
        self.a = _to_expr(a)
        self.dtype = "bool"

    __repr__ = _printed


class Select(PrimExpr):
    """``condition ? true_value : false_value``; both sides are evaluated."""

    __slots__ = ("condition", "true_value", "false_value")

    def __init__(self, condition, true_value, false_value, span=None):
        self.condition = _to_expr(condition)
        self.true_value, self.false_value = _unify(true_value, false_value)
        self.dtype = self.true_value.dtype

    __repr__ = _printed


class Call(PrimExpr):
    """A call of an intrinsic op (``tir.exp``, ``tir.if_then_else``, ``tir.call_extern``, ...)."""

    __slots__ = ("op", "args")

    def __init__(self, dtype: str, op, args, span=None):
        self.dtype = str(dtype)
        self.op = op
        self.args = tuple(_to_expr(a) if not isinstance(a, str) else StringImm(a) for a in args)

    @property
    def op_name(self) -> str:
        op = self.op
        return op if isinstance(op, str) else op.name

    __repr__ = _printed


class Let(PrimExpr):
    """``let var = value in body`` as an expression."""

    __slots__ = ("var", "value", "body")
    _node_binders = frozenset({"var"})

    def __init__(self, var: Var, value, body, span=None):
        self.var = var
        self.value = _to_expr(value, var.dtype)
        self.body = _to_expr(body)
        self.dtype = self.body.dtype

    __repr__ = _printed


def _with_lanes(dtype: str, lanes: int) -> str:
    return dtype if lanes == 1 else f"{dtype}x{lanes}"


class Ramp(PrimExpr):
    """The vector ``[base, base + stride, ..., base + (lanes - 1) * stride]``."""

    __slots__ = ("base", "stride", "lanes")

    def __init__(self, base, stride, lanes: int, span=None):
        self.base, self.stride = _unify(base, stride)
        self.lanes = int(lanes)
        self.dtype = _with_lanes(self.base.dtype, self.lanes)

    __repr__ = _printed


class Broadcast(PrimExpr):
    """A scalar repeated ``lanes`` times."""

    __slots__ = ("value", "lanes")

    def __init__(self, value, lanes: int, span=None):
        self.value = _to_expr(value)
        self.lanes = int(lanes)
        self.dtype = _with_lanes(self.value.dtype, self.lanes)

    __repr__ = _printed


class BufferLoad(PrimExpr):
    """Read ``buffer[indices]``."""

    __slots__ = ("buffer", "indices", "predicate")

    def __init__(self, buffer, indices, predicate=None, span=None):
        self.buffer = buffer
        self.indices = tuple(_to_expr(i) for i in indices)
        self.predicate = predicate
        self.dtype = buffer.dtype

    __repr__ = _printed


class ProducerLoad(PrimExpr):
    """Read a TE tensor ``producer[indices]`` (becomes a BufferLoad in a PrimFunc)."""

    __slots__ = ("producer", "indices")

    def __init__(self, producer, indices, span=None):
        self.producer = producer
        self.indices = tuple(_to_expr(i) for i in indices)
        self.dtype = producer.dtype

    __repr__ = _printed


class Range(Node):
    """The half-open interval ``[min, min + extent)``; ``Range(begin, end)`` as in ``tvm.ir``."""

    __slots__ = ("min", "extent", "span")

    def __init__(self, begin, end=None, span=None):
        if end is None:
            begin, end = 0, begin
        begin, end = _unify(begin, end)
        self.min = begin
        self.extent = end if isinstance(begin, IntImm) and begin.value == 0 else end - begin
        if isinstance(begin, IntImm) and isinstance(end, IntImm):
            self.extent = IntImm(end.dtype, end.value - begin.value)
        self.span = span

    @staticmethod
    def from_min_extent(min_value, extent, span=None) -> Range:
        r = Range.__new__(Range)
        r.min, r.extent = _unify(min_value, extent)
        r.span = span
        return r

    def __repr__(self):
        return f"Range({self.min!r}, {self.extent!r})"


class IterVar(Node):
    """A variable with a domain and a kind (data parallel, reduction, ...)."""

    __slots__ = ("dom", "var", "iter_type", "thread_tag")
    _node_binders = frozenset({"var"})
    DataPar = 0
    ThreadIndex = 1
    CommReduce = 2
    Ordered = 3
    DimInfo = 4
    Unrolled = 5
    Vectorized = 6
    Parallelized = 7
    Tensorized = 8

    def __init__(self, dom, var, iter_type: int, thread_tag: str = "", span=None):
        if dom is not None and not isinstance(dom, Range):
            dom = Range(*dom) if isinstance(dom, (tuple, list)) else Range(0, dom)
        if isinstance(var, str):
            var = Var(var, dom.extent.dtype if dom is not None else "int32")
        self.dom = dom
        self.var = var
        self.iter_type = int(iter_type)
        self.thread_tag = thread_tag

    def __repr__(self):
        return f"IterVar({self.var.name}, {self.dom!r}, {self.iter_type})"


def _delegate(name: str):
    def f(self, *args):
        return getattr(self.var, name)(*args)

    f.__name__ = name
    return f


for _op in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__",
            "__rfloordiv__", "__mod__", "__rmod__", "__neg__", "__lt__", "__le__", "__gt__",
            "__ge__", "astype", "equal"):
    setattr(IterVar, _op, _delegate(_op))
IterVar.__hash__ = Node.__hash__
IterVar.dtype = property(lambda self: self.var.dtype)


class CommReducer(Node):
    """A commutative reducer: ``result(lhs, rhs)`` with ``identity_element``."""

    __slots__ = ("lhs", "rhs", "result", "identity_element")

    def __init__(self, lhs, rhs, result, identity_element, span=None):
        self.lhs = list(lhs)
        self.rhs = list(rhs)
        self.result = list(result)
        self.identity_element = list(identity_element)

    def __call__(self, a, b) -> PrimExpr:
        from .stmt_functor import substitute

        return substitute(self.result[0], {self.lhs[0]: a, self.rhs[0]: b})


class Reduce(PrimExpr):
    """A reduction of ``source`` over the reduction axes ``axis`` (only inside ``te.compute``)."""

    __slots__ = ("combiner", "source", "axis", "condition", "value_index", "init")

    def __init__(self, combiner, src, rdom, condition=None, value_index=0, init=None, span=None):
        self.combiner = combiner
        self.source = list(src)
        self.axis = list(rdom)
        self.condition = _to_expr(True) if condition is None else _to_expr(condition)
        self.value_index = value_index
        self.init = list(init or [])
        self.dtype = self.source[value_index].dtype

    __repr__ = _printed


# --------------------------------------------------------------------------- PrimExpr operators
def _binary(cls, swap: bool = False):
    fold = _INT_FOLDS.get(cls)

    def op(self, other):
        other = _to_expr(other, self.dtype if not isinstance(other, PrimExpr) else None)
        a, b = (other, self) if swap else (self, other)
        if fold is not None and type(a) is IntImm and type(b) is IntImm and a.dtype == b.dtype:
            folded = _fold_ints(fold, a, b)
            if folded is not None:
                return folded
        return cls(a, b)

    return op


def _floordiv(a: int, b: int) -> int | None:
    return a // b if b else None


def _floormod(a: int, b: int) -> int | None:
    return a % b if b else None


# integer constants combine into a constant, as TVM's operators fold them (``IntImm(5) * 2``
# is ``IntImm(10)``); a result outside the dtype's range stays an expression
_INT_FOLDS = {Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b,
              FloorDiv: _floordiv, FloorMod: _floormod}


def _fold_ints(fold, a: IntImm, b: IntImm) -> IntImm | None:
    kind = _INT_DTYPE.fullmatch(a.dtype)  # scalar integers only (not bool, not vectors)
    value = fold(a.value, b.value) if kind else None
    if value is None:
        return None
    bits = int(kind.group(2))
    lo, hi = (0, 2 ** bits) if kind.group(1) else (-2 ** (bits - 1), 2 ** (bits - 1))
    return IntImm(a.dtype, value) if lo <= value < hi else None


_INT_DTYPE = re.compile(r"(u?)int(\d+)")


_MUL = _binary(Mul)

register_prim_operators({
    "__add__": _binary(Add), "__radd__": _binary(Add, True),
    "__sub__": _binary(Sub), "__rsub__": _binary(Sub, True),
    "__mul__": _binary(Mul), "__rmul__": _binary(Mul, True),
    "__floordiv__": _binary(FloorDiv), "__rfloordiv__": _binary(FloorDiv, True),
    "__truediv__": _binary(Div), "__rtruediv__": _binary(Div, True),
    "__mod__": _binary(FloorMod), "__rmod__": _binary(FloorMod, True),
    "__neg__": lambda self: _MUL(self, _to_expr(-1, self.dtype)),  # (-IntImm(1) is IntImm(-1))
    "__lt__": _binary(LT), "__le__": _binary(LE), "__gt__": _binary(GT), "__ge__": _binary(GE),
    "__and__": lambda self, other: And(self, other),
    "__or__": lambda self, other: Or(self, other),
    "__invert__": lambda self: Not(self),
    "astype": _astype,
    "equal": lambda self, other: EQ(self, other),
})
