"""``tvm.ir.base``: the node base, source locations, JSON serialization, structural comparison
(with ``get_first_structural_mismatch``) and ``EnvFunc``, under TVM's module path."""

from __future__ import annotations

from ..runtime.object import Object
from ..runtime.registry import get_global_func
from .node import Node, SequentialSpan, SourceName, Span
from .serialization import load_json, save_json
from .structural import (
    StructuralMismatch,
    _compare,
    assert_structural_equal,
    structural_equal,
    structural_hash,
)

__all__ = ["Object", "Node", "SourceName", "Span", "SequentialSpan", "load_json", "save_json",
           "structural_equal", "assert_structural_equal", "structural_hash", "EnvFunc",
           "ObjectPathPair", "get_first_structural_mismatch"]


class ObjectPathPair(Object):
    """Where two structures first differ: ``lhs_path`` and ``rhs_path`` (``root.body.args[0]``)
    and the reason."""

    __slots__ = ("lhs_path", "rhs_path", "reason")

    def __init__(self, lhs_path: str, rhs_path: str, reason: str = ""):
        self.lhs_path = lhs_path
        self.rhs_path = rhs_path
        self.reason = reason

    def __repr__(self):
        return f"ObjectPathPair({self.lhs_path}, {self.rhs_path}: {self.reason})"


def get_first_structural_mismatch(lhs, rhs, map_free_vars: bool = False) -> ObjectPathPair | None:
    """None when ``lhs`` and ``rhs`` are structurally equal, else the paths (the same in both:
    the comparison walks them in step) of the first difference."""
    try:
        _compare(lhs, rhs, map_free_vars)
    except StructuralMismatch as e:
        return ObjectPathPair(e.path, e.path, e.reason)
    return None


class EnvFunc(Object):
    """A global function referred to by its registered name (so it serializes as the name)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    @staticmethod
    def get(name: str) -> EnvFunc:
        """The EnvFunc of the function registered as ``name`` (it must exist)."""
        get_global_func(name)
        return EnvFunc(name)

    @property
    def func(self):
        return get_global_func(self.name)

    def __call__(self, *args):
        return self.func(*args)
