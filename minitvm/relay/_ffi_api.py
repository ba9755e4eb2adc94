"""``relay._ffi_api``: the Relay node constructors under the names TVM registers them with
(``_ffi_api.Var(name, type_annotation)``, ``_ffi_api.Call(op, args, attrs, type_args)``, ...),
and the ``*WithFields`` copies."""

from __future__ import annotations

from ..ir.type import TensorType, TupleType
from .adt import (
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    TypeData,
)
from .expr import (
    Call,
    Constant,
    Function,
    If,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)

__all__ = ["Call", "Constant", "Function", "If", "Let", "RefCreate", "RefRead", "RefWrite",
           "Tuple", "TupleGetItem", "Var", "Clause", "Constructor", "Match", "PatternConstructor",
           "PatternTuple", "PatternVar", "PatternWildcard", "TypeData", "TensorType",
           "TupleType", "pretty_print", "AsText"]


def _with_fields(cls: type):
    def with_fields(node, *args, **kwargs):
        if not isinstance(node, cls):
            raise TypeError(f"{cls.__name__}WithFields: expected a {cls.__name__}, got "
                            f"{type(node).__name__}")
        return node.with_fields(*args, **kwargs)

    with_fields.__name__ = f"{cls.__name__}WithFields"
    return with_fields


for _cls in (Call, Constant, Function, If, Let, RefCreate, RefRead, RefWrite, Tuple,
             TupleGetItem, Var, Match, Clause):
    if hasattr(_cls, "with_fields"):
        globals()[f"{_cls.__name__}WithFields"] = _with_fields(_cls)
        __all__.append(f"{_cls.__name__}WithFields")


def pretty_print(node) -> str:
    """The Relay text of ``node``."""
    from .printer import astext

    return astext(node)


def AsText(node, show_meta_data: bool = True, annotate=None) -> str:  # noqa: N802 (TVM's name)
    """The Relay text of ``node`` (with the metadata section when asked)."""
    from .printer import astext

    return astext(node, show_meta_data, annotate)
