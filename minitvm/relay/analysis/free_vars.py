"""Variable analyses: free, bound and all variables of an expression, in post-DFS order."""

from __future__ import annotations

from ..adt import pattern_vars
from ..expr_functor import ExprVisitor


class _VarCollector(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.bound: dict = {}
        self.used: dict = {}

    def visit_var(self, v):
        self.used.setdefault(v, None)

    def visit_function(self, fn):
        for p in fn.params:
            self.bound.setdefault(p, None)
        super().visit_function(fn)

    def visit_let(self, let):
        node = let
        while type(node).__name__ == "Let":
            self.bound.setdefault(node.var, None)
            node = node.body
        super().visit_let(let)

    def visit_match(self, m):
        for c in m.clauses:
            for v in pattern_vars(c.lhs):
                self.bound.setdefault(v, None)
        super().visit_match(m)


def _collect(expr) -> _VarCollector:
    c = _VarCollector()
    c.visit(expr)
    return c


def free_vars(expr) -> list:
    """Variables used in ``expr`` but not bound in it, in post-DFS order."""
    c = _collect(expr)
    return [v for v in c.used if v not in c.bound]


def bound_vars(expr) -> list:
    """Variables bound in ``expr`` (function params, let vars, pattern vars)."""
    return list(_collect(expr).bound)


def all_vars(expr) -> list:
    c = _collect(expr)
    out = dict(c.bound)
    out.update(c.used)
    return list(out)


def _type_vars(expr):
    from ..expr import Function

    found = {}
    bound = {}

    class _V(ExprVisitor):
        def visit_function(self, fn):
            for t in fn.type_params:
                bound.setdefault(t, None)
            super().visit_function(fn)

    _V().visit(expr)
    if isinstance(expr, Function):
        for t in expr.type_params:
            found.setdefault(t, None)
    return found, bound


def free_type_vars(expr, mod=None) -> list:
    found, bound = _type_vars(expr)
    return [t for t in found if t not in bound]


def bound_type_vars(expr, mod=None) -> list:
    return list(_type_vars(expr)[1])


def all_type_vars(expr, mod=None) -> list:
    found, bound = _type_vars(expr)
    out = dict(bound)
    out.update(found)
    return list(out)
