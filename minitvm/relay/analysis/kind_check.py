"""check_kind: the kind of a type (Type, ShapeVar, AdtHandle, Constraint...), checking it is
well kinded: tuple fields, function arguments and results, reference contents and ADT arguments
must be types, and an ADT must be applied to as many arguments as it has parameters."""

from __future__ import annotations

from ...ir.type import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    PrimType,
    RelayRefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeKind,
    TypeRelation,
    TypeVar,
)
from ..adt import TypeData

__all__ = ["check_kind", "KindCheckError"]


class KindCheckError(TypeError):
    """A type is not well kinded."""


def _kind(t, mod, checks: list) -> TypeKind:
    if isinstance(t, TensorType | PrimType):
        return TypeKind.Type
    if isinstance(t, GlobalTypeVar):
        return TypeKind.AdtHandle
    if isinstance(t, TypeVar | IncompleteType):
        return t.kind
    if isinstance(t, TupleType):
        checks.extend((f, f"field {i} of the tuple type {t}") for i, f in enumerate(t.fields))
        return TypeKind.Type
    if isinstance(t, RelayRefType):
        checks.append((t.value, f"the content of the reference type {t}"))
        return TypeKind.Type
    if isinstance(t, FuncType):
        checks.extend((a, f"argument {i} of the function type {t}")
                      for i, a in enumerate(t.arg_types))
        checks.append((t.ret_type, f"the result of the function type {t}"))
        for c in t.type_constraints:
            if _kind(c, mod, checks) != TypeKind.Constraint:
                raise KindCheckError(f"the constraint {c} of {t} is not a type constraint")
        return TypeKind.Type
    if isinstance(t, TypeRelation):
        checks.extend((a, f"argument {i} of the type relation") for i, a in enumerate(t.args))
        return TypeKind.Constraint
    if isinstance(t, TypeCall):
        if _kind(t.func, mod, []) != TypeKind.AdtHandle:
            raise KindCheckError(f"{t}: {t.func} is not an ADT (kind AdtHandle)")
        if mod is not None and isinstance(t.func, GlobalTypeVar) and t.func in mod.type_definitions:
            want = len(mod.type_definitions[t.func].type_vars)
            if len(t.args) != want:
                raise KindCheckError(f"{t}: {t.func.name_hint} takes {want} type arguments, "
                                     f"got {len(t.args)}")
        checks.extend((a, f"argument {i} of {t}") for i, a in enumerate(t.args))
        return TypeKind.Type
    if isinstance(t, TypeData):
        return TypeKind.TypeData
    raise KindCheckError(f"check_kind: {t!r} is not a type")


def check_kind(t, mod=None) -> TypeKind:
    """Check that the type is well kinded and return the kind.
    For example, this means type cannot has tensor of tensor, or is a tuple type
    of 2 shapes.

    Parameters
    ----------
    t : tvm.relay.Type
        The type to check
    mod : Optional[tvm.IRModule]
        The global module.

    Returns
    -------
    kind : Kind
        the kind of t
    """
    checks: list = []
    kind = _kind(t, mod, checks)
    while checks:
        sub, where = checks.pop()
        k = _kind(sub, mod, checks)
        if k != TypeKind.Type:
            raise KindCheckError(f"{where} has kind {k.name}, expected Type")
    return kind
