"""Affine types (tvm.ir.TensorAffineType / TupleAffineType): how an integer tensor maps to
real values, ``real = (q - zero_point) * scale``; FakeQuantizationToInteger threads them
through the ops it rewrites."""

from __future__ import annotations

from .node import Node


class AffineType(Node):
    """Base of the affine types; compared structurally, equal (``==``) by identity as in TVM."""

    __slots__ = ()


class TensorAffineType(AffineType):
    """A quantized tensor: ``scale`` and ``zero_point`` (Relay expressions, scalar or per-channel
    along ``axis``) and the integer storage ``dtype``."""

    __slots__ = ("scale", "zero_point", "dtype", "axis")
    _node_fields = ("scale", "zero_point", "dtype", "axis")

    def __init__(self, scale, zero_point, dtype: str, axis: int = -1):
        self.scale = scale
        self.zero_point = zero_point
        self.dtype = str(dtype)
        self.axis = int(axis)

    def __repr__(self) -> str:
        return (f"TensorAffineType(scale={self.scale!r}, zero_point={self.zero_point!r}, "
                f"dtype={self.dtype}, axis={self.axis})")


class TupleAffineType(AffineType):
    """The affine types of a tuple's fields."""

    __slots__ = ("types",)
    _node_fields = ("types",)

    def __init__(self, types):
        self.types = tuple(types)
        for t in self.types:
            if not isinstance(t, TensorAffineType):
                raise TypeError(f"TupleAffineType: fields must be TensorAffineType, got "
                                f"{type(t).__name__}")

    def __repr__(self) -> str:
        return f"TupleAffineType({list(self.types)!r})"


__all__ = ["AffineType", "TensorAffineType", "TupleAffineType"]
