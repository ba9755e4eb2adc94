"""AnnotatedRegionSet: an expression split into the regions its compiler_begin/compiler_end
annotations delimit, with TVM's Python API (``len``, ``get_region``, ``regions``; a region's
``id``, ``target``, ``args``, ``rets``, ``nodes``). The region finding is the BYOC passes' own."""

from __future__ import annotations

from ...ir.op import Op
from ..expr import Function

__all__ = ["AnnotatedRegion", "AnnotatedRegionSet"]

_BEGIN = "annotation.compiler_begin"
_END = "annotation.compiler_end"


class AnnotatedRegion:
    """One region: its begin annotations (``args``), end annotations (``rets``), every node in
    it (``nodes``, annotations included) and the compiler it is for (``target``)."""

    __slots__ = ("_region", "func_name")

    def __init__(self, region, func_name: str):
        self._region = region
        self.func_name = func_name

    @property
    def id(self) -> int:
        return self._region.id

    @property
    def target(self) -> str:
        return self._region.target

    @property
    def args(self) -> list:
        return list(self._region.ins)

    @property
    def rets(self) -> list:
        return list(self._region.outs)

    @property
    def nodes(self) -> list:
        return list(self._region.nodes)

    def __eq__(self, other):
        return isinstance(other, AnnotatedRegion) and other._region is self._region

    def __hash__(self):
        return id(self._region)

    def __repr__(self):
        return (f"AnnotatedRegion(id={self.id}, target={self.target!r}, args={len(self.args)}, "
                f"rets={len(self.rets)}, nodes={len(self._region.nodes)})")


def _op_name(op) -> str:
    if isinstance(op, Op):
        return op.name
    if isinstance(op, str):
        return op
    raise TypeError(f"AnnotatedRegionSet: region ops must be relay ops, got {type(op).__name__}")


class AnnotatedRegionSet:
    """The regions of ``expr`` (a function's body when ``expr`` is a function) between
    ``region_begin_op`` and ``region_end_op`` annotations.

    Parameters
    ----------
    expr : tvm.relay.Expr
        The annotated expression.
    region_begin_op, region_end_op : tvm.ir.Op
        ``annotation.compiler_begin`` and ``annotation.compiler_end``.
    func_name : str
        A name recorded on every region (TVM's default: "default").
    """

    def __init__(self, expr, region_begin_op, region_end_op, func_name: str = "default"):
        from ..transform._annotated_regions import RegionSet

        begin, end = _op_name(region_begin_op), _op_name(region_end_op)
        if (begin, end) != (_BEGIN, _END):
            raise ValueError(f"AnnotatedRegionSet supports the {_BEGIN} / {_END} annotations, "
                             f"got {begin} / {end}")
        body = expr.body if isinstance(expr, Function) else expr
        self._set = RegionSet(body)
        self.func_name = func_name
        self.regions = [AnnotatedRegion(r, func_name) for r in self._set.regions]

    def __len__(self) -> int:
        return len(self.regions)

    def __iter__(self):
        return iter(self.regions)

    def get_region(self, expr) -> AnnotatedRegion | None:
        """The region ``expr`` belongs to, or None when it is in none."""
        r = self._set.region_of(expr)
        return None if r is None else self.regions[r.id]
