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


def _annotation_name(e) -> str | None:
    """BEGIN or END when ``e`` is that annotation call, else None."""
    if isinstance(e, Call):
        op = e.op
        if isinstance(op, Op) and (op.name == BEGIN or op.name == END):
            return op.name
    return None


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
        parent: dict[int, int] = {}
        kind: dict[int, str] = {}  # id -> BEGIN / END, for the annotations inside regions
        find = self._find
        self._parent = parent
        self._kind = kind
        for e in self.order:
            ann = _annotation_name(e)
            i = id(e)
            if ann == BEGIN:
                parent[i] = i
                kind[i] = BEGIN
            elif ann == END:
                src = id(e.args[0])
                if src not in parent:
                    raise ValueError(f"compiler_end({e.attrs.compiler!r}) closes an expression "
                                     "that no compiler_begin opened")
                parent[i] = find(src)  # a new node joins its operand's region
                kind[i] = END
            else:
                root = None
                for a in _inputs(e):
                    j = id(a)
                    if j not in parent or kind.get(j) == END:
                        continue
                    if root is None:
                        root = parent[i] = find(j)
                    else:
                        rj = find(j)
                        if rj != root:
                            parent[rj] = root
        self.regions: list[Region] = []
        region_of_root: dict[int, Region] = {}
        self._of: dict[int, Region] = {}  # id(node) -> its region
        for e in self.order:
            i = id(e)
            if i not in parent:
                continue
            root = find(i)
            r = region_of_root.get(root)
            if r is None:
                r = Region(len(self.regions), "")
                self.regions.append(r)
                region_of_root[root] = r
            self._of[i] = r
            r.nodes.append(e)
            k = kind.get(i)
            if k is BEGIN:
                r.ins.append(e)
                self._set_target(r, e)
            elif k is END:
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

    def _find(self, i: int) -> int:
        p = self._parent
        root = i
        while p[root] != root:
            root = p[root]
        while p[i] != root:
            p[i], i = root, p[i]
        return root

    def region_of(self, e) -> Region | None:
        return self._of.get(id(e))

    def parents(self, r: Region) -> list[Region]:
        """Regions whose compiler_end feeds a compiler_begin of ``r`` (in first-use order)."""
        out, seen = [], set()
        kind, of = self._kind, self._of
        for b in r.ins:
            src = b.args[0]
            if kind.get(id(src)) is END:
                p = of[id(src)]
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

