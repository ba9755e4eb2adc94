"""Annotated regions (TVM's AnnotatedRegionSet) for the BYOC passes.

A region is a connected piece of dataflow between ``compiler_begin`` and ``compiler_end``
annotations of one compiler: its ``ins`` are the begins, its ``outs`` the ends. Regions are
found with a union-find over one iterative walk; ``parents`` are the regions whose ends feed
this region's begins.
"""

from __future__ import annotations

from ...ir.op import Op
from ..expr import Call, Tuple, TupleGetItem
from ..expr_functor import dataflow_children, dataflow_post_order

BEGIN = "annotation.compiler_begin"
END = "annotation.compiler_end"


def is_annotation(e, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _inputs(e) -> tuple:
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    return ()


class Region:
    __slots__ = ("id", "target", "nodes", "ins", "outs")

    def __init__(self, rid: int, target: str):
        self.id = rid
        self.target = target
        self.nodes: list = []
        self.ins: list = []
        self.outs: list = []

    def __repr__(self):
        return f"Region({self.id}, {self.target!r}, ins={len(self.ins)}, outs={len(self.outs)})"


class RegionSet:
    """The annotated regions of an expression (its dataflow, not into function bodies)."""

    def __init__(self, body):
        self.order = dataflow_post_order(body)
        self._parent: dict[int, int] = {}
        self._node: dict[int, object] = {}
        for e in self.order:
            if is_annotation(e, BEGIN):
                self._make(e)
            elif is_annotation(e, END):
                if id(e.args[0]) in self._parent:
                    self._make(e)
                    self._union(e, e.args[0])
                else:
                    raise ValueError(f"compiler_end({e.attrs.compiler!r}) closes an expression "
                                     "that no compiler_begin opened")
            else:
                ins = [a for a in _inputs(e) if id(a) in self._parent
                       and not is_annotation(a, END)]
                if ins:
                    self._make(e)
                    for a in ins:
                        self._union(e, a)
        self.regions: list[Region] = []
        self._region: dict[int, Region] = {}
        for e in self.order:
            if id(e) not in self._parent:
                continue
            root = self._find(id(e))
            r = self._region.get(root)
            if r is None:
                r = Region(len(self.regions), "")
                self.regions.append(r)
                self._region[root] = r
            r.nodes.append(e)
            if is_annotation(e, BEGIN):
                r.ins.append(e)
                self._set_target(r, e)
            elif is_annotation(e, END):
                r.outs.append(e)
                self._set_target(r, e)

    @staticmethod
    def _set_target(r: Region, ann) -> None:
        t = str(ann.attrs.compiler)
        if r.target and r.target != t:
            raise ValueError(f"a region mixes the compilers {r.target!r} and {t!r}: every "
                             "compiler_begin/compiler_end pair around one piece of dataflow "
                             "must name the same compiler")
        r.target = t

    def _make(self, e) -> None:
        self._parent.setdefault(id(e), id(e))
        self._node[id(e)] = e

    def _find(self, i: int) -> int:
        p = self._parent
        root = i
        while p[root] != root:
            root = p[root]
        while p[i] != root:
            p[i], i = root, p[i]
        return root

    def _union(self, a, b) -> None:
        ra, rb = self._find(id(a)), self._find(id(b))
        if ra != rb:
            self._parent[ra] = rb

    def region_of(self, e) -> Region | None:
        if id(e) not in self._parent:
            return None
        return self._region[self._find(id(e))]

    def parents(self, r: Region) -> list[Region]:
        """Regions whose compiler_end feeds a compiler_begin of ``r`` (in first-use order)."""
        out, seen = [], set()
        for b in r.ins:
            src = b.args[0]
            if is_annotation(src, END):
                p = self.region_of(src)
                if p is not None and p is not r and p.id not in seen:
                    seen.add(p.id)
                    out.append(p)
        return out

    def upstream_outside(self, r: Region) -> list[Region]:
        """Regions that feed ``r`` through nodes in no region (an If, a tuple built outside):
        ``r`` may never merge with them, or the merged region would wait on its own output."""
        out, seen, visited = [], set(), set()
        stack = [b.args[0] for b in r.ins if not is_annotation(b.args[0], END)
                 and self.region_of(b.args[0]) is None]
        while stack:
            e = stack.pop()
            if id(e) in visited:
                continue
            visited.add(id(e))
            p = self.region_of(e)
            if p is not None:
                if p is not r and p.id not in seen:
                    seen.add(p.id)
                    out.append(p)
                continue
            stack.extend(dataflow_children(e))
        return out

