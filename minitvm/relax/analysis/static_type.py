"""Relax's static types (TVM's ``relax.ObjectType``, ``ShapeType``, ``TensorType``,
``PackedFuncType``): what struct info erases to, without shapes (``get_static_type``).

Tuples, functions and scalars use the core's ``TupleType``, ``FuncType`` and ``PrimType``.
"""

from __future__ import annotations

from ...ir.type import Type

__all__ = ["ObjectType", "ShapeType", "TensorType", "PackedFuncType"]


class ObjectType(Type):
    """Any Relax value."""

    __slots__ = ()

    def __init__(self, span=None):
        self.span = span

    def _key(self):
        return ()

    def __repr__(self):
        return "ObjectType()"


class ShapeType(Type):
    """A shape value of ``ndim`` dimensions (-1: unknown)."""

    __slots__ = ("ndim",)

    def __init__(self, ndim: int = -1, span=None):
        self.ndim = int(ndim)
        self.span = span

    def _key(self):
        return (self.ndim,)

    def __repr__(self):
        return f"ShapeType(ndim={self.ndim})"


class TensorType(Type):
    """A tensor of rank ``ndim`` (-1: unknown) and ``dtype`` ("void": unknown)."""

    __slots__ = ("ndim", "dtype")

    def __init__(self, ndim: int = -1, dtype: str = "void", span=None):
        self.ndim = int(ndim)
        self.dtype = str(dtype)
        self.span = span

    def _key(self):
        return (self.ndim, self.dtype)

    def __repr__(self):
        return f"TensorType(ndim={self.ndim}, dtype={self.dtype!r})"


class PackedFuncType(Type):
    """An opaque (packed) function."""

    __slots__ = ()

    def __init__(self, span=None):
        self.span = span

    def _key(self):
        return ()

    def __repr__(self):
        return "PackedFuncType()"
