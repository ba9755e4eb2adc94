"""Variables of a Relax expression: free, bound, all (TVM's ``relax.analysis.free_vars`` ...)."""

from __future__ import annotations

from ...ir.node import node_operands
from ..expr import Binding, Function, Var

__all__ = ["free_vars", "bound_vars", "all_vars", "all_global_vars"]


def _walk(expr):
    """Every node under ``expr`` once, parents first (iterative)."""
    seen, stack = set(), [expr]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack.extend(reversed(node_operands(e)))


def bound_vars(expr) -> list[Var]:
    """Variables defined inside ``expr`` (parameters and bindings), in definition order."""
    out = []
    for e in _walk(expr):
        if isinstance(e, Function):
            out.extend(e.params)
        elif isinstance(e, Binding):
            out.append(e.var)
    return _unique(out)


def all_vars(expr) -> list[Var]:
    """Every variable under ``expr``, defined or used."""
    return _unique([e for e in _walk(expr) if isinstance(e, Var)])


def free_vars(expr) -> list[Var]:
    """Variables used in ``expr`` but not defined in it, in order of first use."""
    bound = {id(v) for v in bound_vars(expr)}
    return [v for v in all_vars(expr) if id(v) not in bound]


def all_global_vars(expr) -> list:
    """Global variables referenced under ``expr``."""
    from ...ir.expr import GlobalVar

    return _unique([e for e in _walk(expr) if isinstance(e, GlobalVar)])


def _unique(xs):
    seen, out = set(), []
    for x in xs:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out
