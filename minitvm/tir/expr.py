"""Scalar expressions of the loop-level IR (PrimExpr): immediates, variables and arithmetic.

Relay uses them for tensor dimensions (``relay.Any()`` and symbolic ``SizeVar``s); TIR builds
its loops and indices from them.
"""

from __future__ import annotations

from ..ir.node import Node


def _to_expr(value, dtype: str | None = None) -> "PrimExpr":
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        return IntImm("bool", int(value))
    if isinstance(value, int):
        return IntImm(dtype or "int32", value)
    if isinstance(value, float):
        return FloatImm(dtype or "float32", value)
    raise TypeError(f"cannot convert {value!r} to a PrimExpr")


class PrimExpr(Node):
    """A scalar expression with a dtype."""

    __slots__ = ("dtype",)

    def _bin(self, cls, other, swap=False):
        other = _to_expr(other, self.dtype if not isinstance(other, PrimExpr) else None)
        return cls(other, self) if swap else cls(self, other)

    def __add__(self, o):
        return self._bin(Add, o)

    def __radd__(self, o):
        return self._bin(Add, o, True)

    def __sub__(self, o):
        return self._bin(Sub, o)

    def __rsub__(self, o):
        return self._bin(Sub, o, True)

    def __mul__(self, o):
        return self._bin(Mul, o)

    def __rmul__(self, o):
        return self._bin(Mul, o, True)

    def __floordiv__(self, o):
        return self._bin(FloorDiv, o)

    def __rfloordiv__(self, o):
        return self._bin(FloorDiv, o, True)

    def __truediv__(self, o):
        return self._bin(Div, o)

    def __rtruediv__(self, o):
        return self._bin(Div, o, True)

    def __mod__(self, o):
        return self._bin(FloorMod, o)

    def __rmod__(self, o):
        return self._bin(FloorMod, o, True)

    def __neg__(self):
        return Mul(self, _to_expr(-1, self.dtype))

    def __lt__(self, o):
        return self._bin(LT, o)

    def __le__(self, o):
        return self._bin(LE, o)

    def __gt__(self, o):
        return self._bin(GT, o)

    def __ge__(self, o):
        return self._bin(GE, o)

    __hash__ = Node.__hash__


class IntImm(PrimExpr):
    """An integer constant. Compares and hashes like the Python int it holds."""

    __slots__ = ("value",)

    def __init__(self, dtype: str, value: int):
        self.dtype = dtype
        self.value = int(value)

    def __int__(self):
        return self.value

    def __index__(self):
        return self.value

    def __bool__(self):
        return self.value != 0

    def __eq__(self, other):
        if isinstance(other, IntImm):
            return self.value == other.value and self.dtype == other.dtype
        if isinstance(other, int):
            return self.value == other
        return NotImplemented

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return str(self.value) if self.dtype == "int32" else f"T.{self.dtype}({self.value})"


class FloatImm(PrimExpr):
    __slots__ = ("value",)

    def __init__(self, dtype: str, value: float):
        self.dtype = dtype
        self.value = float(value)

    def __float__(self):
        return self.value

    def __eq__(self, other):
        if isinstance(other, FloatImm):
            return self.value == other.value and self.dtype == other.dtype
        if isinstance(other, (int, float)):
            return self.value == other
        return NotImplemented

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"T.{self.dtype}({self.value})"


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


class Any(PrimExpr):
    """An unknown dimension, printed ``?`` (``relay.Any()``)."""

    __slots__ = ()

    def __init__(self, span=None):
        self.dtype = "int32"

    def __repr__(self):
        return "?"


class BinaryOp(PrimExpr):
    __slots__ = ("a", "b")
    op_sym = "?"

    def __init__(self, a, b, span=None):
        a = _to_expr(a)
        b = _to_expr(b, a.dtype)
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
