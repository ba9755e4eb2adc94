"""Node base class and source spans shared by every IR in minitvm.

Each node class declares its structure once, with three class attributes that structural
equality, hashing and generic walkers read (no table keyed on class names anywhere):

- ``_node_fields``: the structurally significant fields, in order (``None``: every slot except
  bookkeeping ones such as ``span`` and the cached type);
- ``_node_binders``: the fields whose variables are binding occurrences (function parameters,
  let variables, loop variables, ...);
- ``_node_compare``: ``"fields"`` (compare the fields), ``"var"`` (equal when bound at the same
  place; the declared fields are compared where the variable is defined), ``"name"`` (equal by
  name: ops, global variables, constructors) or ``"value"`` (compare ``_node_value()``);
- ``_node_operands``: the sub-nodes a walk visits, in evaluation order (``"*args"`` names a
  sequence field), read through ``node_operands``;
- ``_node_shared``: True for nodes every dialect uses (``Op``, ``GlobalVar``, ``tir.PrimFunc``):
  they never decide which dialect's hook applies to their context.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from keyword import iskeyword
from operator import attrgetter
from typing import ClassVar

from ..runtime.object import Object

# slots that never take part in structure: caches, source locations, names of bound things
_BOOKKEEPING = frozenset({"span", "_checked_type", "__weakref__", "_gvars", "_tvars", "source_map",
                          "vid", "name_hint", "name", "description", "support_level", "tag"})


class Node(Object):
    """Base of every IR node: plain ``__slots__`` objects, equal by identity."""

    __slots__ = ("__weakref__",)

    _node_fields: ClassVar[tuple[str, ...] | None] = None
    _node_binders: ClassVar[frozenset[str]] = frozenset()
    _node_compare: ClassVar[str] = "fields"
    _node_operands: ClassVar[tuple[str, ...]] = ()
    _node_shared: ClassVar[bool] = False

    def same_as(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:  # overridden by printable nodes
        return f"{type(self).__name__}(...)"


_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(cls: type) -> tuple[str, ...]:
    """The structural fields of a node class: its declaration, or its non-bookkeeping slots."""
    f = _FIELDS.get(cls)
    if f is None:
        declared = cls.__dict__.get("_node_fields")
        if declared is None:
            declared = next((c.__dict__["_node_fields"] for c in cls.__mro__
                             if c.__dict__.get("_node_fields") is not None), None)
        if declared is not None:
            f = tuple(declared)
        else:
            names: list[str] = []
            for base in reversed(cls.__mro__):
                for s in getattr(base, "__slots__", ()):
                    if s not in _BOOKKEEPING and s not in names:
                        names.append(s)
            f = tuple(names)
        _FIELDS[cls] = f
    return f


def node_children(node) -> list:
    """The values of ``node``'s structural fields with sequences flattened (for generic walks)."""
    out = []
    for name in node_fields(type(node)):
        v = getattr(node, name, None)
        if isinstance(v, list | tuple):
            out.extend(v)
        elif v is not None:
            out.append(v)
    return out


_OPERANDS: dict[type, Callable] = {}


def _operand_getter(names: tuple[str, ...]) -> Callable:
    """``fn(node) -> tuple`` of the fields ``names`` (``"*args"``: a sequence, spliced)."""
    parts = [(n.startswith("*"), n.lstrip("*")) for n in names]
    if not parts:
        return lambda node: ()
    if not any(seq for seq, _ in parts):
        get = attrgetter(*(name for _, name in parts))
        return get if len(parts) > 1 else (lambda node: (get(node),))
    if len(parts) == 1:
        name = parts[0][1]
        return lambda node: tuple(getattr(node, name))
    if all(name.isidentifier() and not iskeyword(name) for _, name in parts):
        # one tuple display, ``(n.op, *n.args)``: a node walk asks for operands millions of
        # times, and a loop over the parts cost twice as long
        body = ", ".join(("*n." if seq else "n.") + name for seq, name in parts)
        return eval(f"lambda n: ({body},)")  # noqa: S307 (field names checked above)

    def get_parts(node) -> tuple:
        out: list = []
        for seq, name in parts:
            v = getattr(node, name)
            if seq:
                out.extend(v)
            else:
                out.append(v)
        return tuple(out)

    return get_parts


def operand_getter(cls: type) -> Callable:
    """``fn(node) -> tuple`` of the operands ``cls`` declares (``_node_operands``), cached."""
    g = _OPERANDS.get(cls)
    if g is None:
        g = _OPERANDS[cls] = _operand_getter(tuple(cls._node_operands))
    return g


def node_operands(node) -> tuple:
    """The sub-nodes of ``node`` a walk visits, in evaluation order (its ``_node_operands``)."""
    return operand_getter(type(node))(node)


@dataclass(frozen=True)
class SourceName:
    """The name of a source file or text, as spans refer to it."""

    name: str


@dataclass(frozen=True)
class Span:
    """A source location: file, line and column range (1-based lines); TVM's argument order
    ``Span(source_name, line, end_line, column, end_column)``."""

    source_name: SourceName | str
    line: int
    end_line: int = 0
    column: int = 0
    end_column: int = 0

    def __str__(self) -> str:
        name = self.source_name.name if isinstance(self.source_name, SourceName) else self.source_name
        return f"{name}:{self.line}:{self.column}"


@dataclass(frozen=True)
class SequentialSpan:
    """The spans of several source expressions that a transform merged into one node."""

    spans: tuple

    def __init__(self, spans):
        object.__setattr__(self, "spans", tuple(spans))

    def __str__(self) -> str:
        return "; ".join(str(s) for s in self.spans)
