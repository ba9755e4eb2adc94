"""``tvm.relay.ty``: the Relay type classes under TVM's module path, and ``ShapeVar``."""

from __future__ import annotations

from ..ir.prim_expr import Any
from ..ir.type import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RelayRefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeConstraint,
    TypeKind,
    TypeRelation,
    TypeVar,
)

__all__ = ["Any", "FuncType", "GlobalTypeVar", "IncompleteType", "RefType", "RelayRefType",
           "ShapeVar", "TensorType", "TupleType", "Type", "TypeCall", "TypeConstraint",
           "TypeKind", "TypeRelation", "TypeVar", "scalar_type"]

RefType = RelayRefType


def ShapeVar(name: str) -> TypeVar:  # noqa: N802 - TVM's name
    """A type variable standing for a shape (kind ``ShapeVar``)."""
    return TypeVar(name, kind=TypeKind.ShapeVar)


def scalar_type(dtype: str) -> TensorType:
    """The type of a 0-d tensor of ``dtype``."""
    return TensorType((), dtype)
