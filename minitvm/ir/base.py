"""``tvm.ir.base``: the node base, source locations, JSON serialization, structural comparison
(with ``get_first_structural_mismatch``) and ``EnvFunc``, under TVM's module path."""

from __future__ import annotations

import ast

from ..runtime.object import Object
from ..runtime.object_path import ObjectPath, ObjectPathPair
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
           "ObjectPath", "ObjectPathPair", "get_first_structural_mismatch"]


def _object_path(raw) -> ObjectPath:
    """The ObjectPath of a linked ``(parent, segment)`` path of the structural comparison
    (segments ``.field``, ``[3]``, ``['key']``, ``.keys[2]``)."""
    segs = []
    while isinstance(raw, tuple):
        raw, seg = raw
        segs.append(seg)
    path = ObjectPath.root()
    for seg in reversed(segs):
        if seg.startswith("."):
            name, bracket, rest = seg[1:].partition("[")
            path = path.attr(name)
            if bracket:
                path = path.array_index(int(rest.rstrip("]")))
            continue
        inner = seg[1:-1]
        if inner.lstrip("-").isdigit():
            path = path.array_index(int(inner))
        else:
            try:
                key = ast.literal_eval(inner)
            except (ValueError, SyntaxError):
                key = inner
            path = path.map_value(key)
    return path


def get_first_structural_mismatch(lhs, rhs, map_free_vars: bool = False) -> ObjectPathPair | None:
    """None when ``lhs`` and ``rhs`` are structurally equal, else the paths of the first
    difference in each (``<root>.body.args[0]``); where one side lacks an array element or a
    map entry, its path ends in ``[<missing element #i>]`` / ``[<missing entry>]``."""
    try:
        _compare(lhs, rhs, map_free_vars)
    except StructuralMismatch as e:
        base = _object_path(e.raw_path)
        lp = rp = base
        if e.reason.startswith("lengths differ") and hasattr(e.lhs, "__len__"):
            n = min(len(e.lhs), len(e.rhs))
            longer_left = len(e.lhs) > len(e.rhs)
            lp = base.array_index(n) if longer_left else base.missing_array_element(n)
            rp = base.missing_array_element(n) if longer_left else base.array_index(n)
        elif e.reason == "different keys":
            only_l = [k for k in e.lhs if k not in e.rhs]
            key = only_l[0] if only_l else next(k for k in e.rhs if k not in e.lhs)
            lp = base.map_value(key) if only_l else base.missing_map_entry()
            rp = base.missing_map_entry() if only_l else base.map_value(key)
        return ObjectPathPair(lp, rp, e.reason)
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
