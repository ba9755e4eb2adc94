"""``partition(pattern, expr, attrs, check)``: replace every match by a call of a function.

Each non-overlapping match (see ``grouping``) becomes ``fn(FunctionVar_i_j...) {matched
region}`` with the ``PartitionedFromPattern`` attribute (the matched ops, '_'-joined) plus
``attrs``, called with the expressions the match's inputs bound to.
"""

from __future__ import annotations

from ...ir.gc_pause import gc_paused
from ..expr import Call
from ..expr_functor import ExprMutator, dataflow_children, dataflow_worklist
from .grouping import PatternGrouper
from .patterns import DFPattern

__all__ = ["partition", "PatternPartitioner"]


class PatternPartitioner(ExprMutator):
    """Rewrite the roots of groups into calls of their functions."""

    def __init__(self, groups, attrs: dict | None = None):
        super().__init__()
        self.groups = {id(g.root): g for g in groups}
        self.attrs = dict(attrs or {})

    def visit(self, expr):
        g = self.groups.get(id(expr))
        if g is None or expr in self.memo_map:
            return super().visit(expr)
        if _is_dataflow(expr):
            self._visit_dataflow(expr)
        else:
            self.memo_map[expr] = self._emit(g)
        return self.memo_map[expr]

    def _emit(self, g):
        fn = g.function.with_attrs(self.attrs) if self.attrs else g.function
        return Call(fn, [self.visit(a) for a in g.args])

    def _visit_dataflow(self, root):
        # like ExprMutator's worklist, but a group root waits for its group's inputs only
        groups = self.groups

        def children(node):
            g = groups.get(id(node))
            return g.args if g is not None else dataflow_children(node)

        def finish(node):
            g = groups.get(id(node))
            return self._emit(g) if g is not None else getattr(self, _method(node))(node)

        dataflow_worklist(self.memo_map, root, finish, children)


def _is_dataflow(e) -> bool:
    from ..expr_functor import _DATAFLOW

    return type(e) in _DATAFLOW


def _method(e) -> str:
    from ..expr_functor import _method_name

    return _method_name(type(e))


@gc_paused
def partition(pattern: DFPattern, expr, attrs: dict | None = None, check=None):
    """Partition every match of ``pattern`` in ``expr`` into a function.

    Parameters
    ----------
    pattern : DFPattern
        The pattern to match.
    expr : relay.Expr
        The expression to partition.
    attrs : dict, optional
        Attributes added to every partitioned function (e.g. ``{"Composite": name}``).
    check : Callable[[relay.Expr], bool], optional
        Called with the root of each match; only matches it accepts are partitioned.
    """
    groups = PatternGrouper(pattern, check).group(expr)
    if not groups:
        return expr
    return PatternPartitioner(groups, attrs).visit(expr)
