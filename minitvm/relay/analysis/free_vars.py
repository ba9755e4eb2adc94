"""Variable analyses: free, bound and all variables of an expression, in TVM's order.

TVM lists variables in the order a left-to-right depth-first walk first meets them (a call's
operator before its arguments, a function's parameters before its body, a let's variable before
its value); ``relay.Function(free_vars(e), e)`` then has the parameter order TVM gives it.
"""

from __future__ import annotations

from ..adt import Match, pattern_vars
from ..expr import (
    Call,
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
from ..expr_functor import ExprVisitor

_BIND = object()  # a stack marker: the item under it is a list of variables to mark bound


class _VarCollector:
    """Records variables in first-occurrence order: ``all`` (used or bound), ``bound``,
    ``used``. Iterative, so any depth of program is fine."""

    def __init__(self):
        self.bound: dict = {}
        self.used: dict = {}
        self.all: dict = {}

    def _mark_bound(self, vs):
        for v in vs:
            self.bound.setdefault(v, None)
            self.all.setdefault(v, None)

    def run(self, expr) -> None:
        seen: set[int] = set()
        stack: list = [expr]
        while stack:
            e = stack.pop()
            if e is _BIND:
                self._mark_bound(stack.pop())
                continue
            if id(e) in seen:
                continue
            seen.add(id(e))
            if isinstance(e, Var):
                self.used.setdefault(e, None)
                self.all.setdefault(e, None)
                continue
            children = self._children(e)
            stack.extend(reversed(children))

    def _children(self, e) -> list:
        t = type(e)
        if t is Call:
            return [e.op, *e.args]
        if t is Tuple:
            return list(e.fields)
        if t is TupleGetItem:
            return [e.tuple_value]
        if t is Function:
            self._mark_bound(e.params)
            return [e.body]
        if t is Let:
            self._mark_bound([e.var])
            return [e.value, e.body]
        if t is If:
            return [e.cond, e.true_branch, e.false_branch]
        if t is RefCreate:
            return [e.value]
        if t is RefRead:
            return [e.ref]
        if t is RefWrite:
            return [e.ref, e.value]
        if t is Match:
            out = [e.data]
            for c in e.clauses:
                # the clause's pattern variables are bound when the walk reaches the clause
                out.extend([_BIND, pattern_vars(c.lhs), c.rhs])
            return out
        return []


def _collect(expr) -> _VarCollector:
    c = _VarCollector()
    c.run(expr)
    return c


def free_vars(expr) -> list:
    """Variables used in ``expr`` but not bound in it, in post-DFS order."""
    c = _collect(expr)
    return [v for v in c.used if v not in c.bound]


def bound_vars(expr) -> list:
    """Variables bound in ``expr`` (function params, let vars, pattern vars)."""
    return list(_collect(expr).bound)


def all_vars(expr) -> list:
    """Every variable bound or used in ``expr``, in first-occurrence order."""
    return list(_collect(expr).all)


def _type_vars(expr):
    from ..expr import Function

    found = {}
    bound = {}

    class _V(ExprVisitor):
        _expand_scopes = True  # collects into dicts: the order children are visited in is moot

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
