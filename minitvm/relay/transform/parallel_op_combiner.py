"""Shared machinery of the CombineParallel* passes: group calls of one op that read the same
input and have compatible attributes, replace each group by one wider call, and give every
branch its slice of the result."""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import TensorType
from ..expr import Call
from ..expr_functor import ExprMutator, ExprVisitor


class ParallelOpCombiner:
    """Subclasses say which calls qualify, how to key compatible ones and how to combine them."""

    op_name = ""

    def __init__(self, min_num_branches: int):
        self.min_num_branches = min_num_branches
        self.combined = 0

    def is_supported(self, call) -> bool:
        return True

    def key(self, call):
        """Calls with equal keys (and the same first argument) can be combined."""
        raise NotImplementedError

    def combine(self, calls, visit):
        """Build the combined expression; return one expression per branch, in order."""
        raise NotImplementedError

    def groups(self, expr) -> list[list[Call]]:
        op = Op.get(self.op_name)
        found: dict = {}
        combiner = self

        class _Collect(ExprVisitor):
            def visit_call(self, call):
                super().visit_call(call)
                if call.op is op and all(isinstance(a._checked_type, TensorType)
                                         for a in call.args) and combiner.is_supported(call):
                    found.setdefault((call.args[0], combiner.key(call)), []).append(call)

        _Collect().visit(expr)
        return [g for g in found.values() if len(g) >= self.min_num_branches]

    def run(self, expr):
        replacement: dict = {}
        pending = {}
        for g in self.groups(expr):
            for c in g:
                pending[c] = g
        combiner = self

        class _Rewrite(ExprMutator):
            def visit_call(self, call):
                group = pending.get(call)
                if group is None:
                    return super().visit_call(call)
                if call not in replacement:
                    outs = combiner.combine(group, self.visit)
                    replacement.update(zip(group, outs, strict=True))
                    combiner.combined += 1
                return replacement[call]

        return _Rewrite().visit(expr)
