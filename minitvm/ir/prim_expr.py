"""PrimExpr, the scalar expression base, and the immediates every IR layer uses.

Relay's and Relax's types hold dimensions as PrimExprs (ints, ``Any``, symbolic vars), and TIR
builds loops from them, so the base and the immediates live here, below both. Arithmetic on a
PrimExpr builds TIR nodes: ``tir`` fills the operator table when it is imported.
"""

from __future__ import annotations

from collections.abc import Callable

from .expr import BaseExpr
from .node import Node

_OPERATORS: dict[str, Callable] = {}

_OPERATOR_NAMES = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__",
    "__rfloordiv__", "__truediv__", "__rtruediv__", "__mod__", "__rmod__", "__neg__", "__lt__",
    "__le__", "__gt__", "__ge__", "__and__", "__or__", "__invert__", "astype", "equal",
)


def register_prim_operators(table: dict[str, Callable]) -> None:
    """Install the implementations of PrimExpr's operators (``tir`` does, on import)."""
    unknown = set(table) - set(_OPERATOR_NAMES)
    if unknown:
        raise ValueError(f"not PrimExpr operators: {sorted(unknown)}")
    _OPERATORS.update(table)


def _operator(name: str):
    def method(self, *args):
        f = _OPERATORS.get(name)
        if f is None:
            raise NotImplementedError(f"PrimExpr.{name} needs minitvm.tir (import it)")
        return f(self, *args)

    method.__name__ = name
    return method


class PrimExpr(BaseExpr):
    """A scalar expression with a dtype."""

    __slots__ = ("dtype",)

    for _name in _OPERATOR_NAMES:
        locals()[_name] = _operator(_name)
    del _name

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


class Any(PrimExpr):
    """An unknown dimension, printed ``?`` (``relay.Any()``)."""

    __slots__ = ()

    def __init__(self, span=None):
        self.dtype = "int32"

    def __repr__(self):
        return "?"
