"""Free variables of every function in a program at once.

``free_vars(fn)`` walks all of ``fn``; asked for each closure of a program whose closures nest,
it walks the inner closures again at every level (quadratic in the depth). One bottom-up pass
gives every function's free variables together (iterative, so any depth is fine).
"""

from __future__ import annotations

from ..adt import Match, pattern_vars
from ..expr import Function, Let, Var
from ..expr_functor import dataflow_children, scope_children

__all__ = ["free_vars_of_functions"]


def free_vars_of_functions(root) -> dict:
    """Each Function in ``root`` (itself included) -> the list of its free variables, in
    ``free_vars``' order, from one bottom-up pass over ``root``."""
    fvs: dict = {}
    out: dict = {}
    stack = [(root, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in fvs:
            continue
        t = type(e)
        kids = scope_children(e) if t in (Function, Let, Match) else dataflow_children(e)
        if not ready:
            stack.append((e, True))
            stack.extend((c, False) for c in reversed(kids) if id(c) not in fvs)
            continue
        if t is Var:
            fvs[id(e)] = [e]
            continue
        seen: dict = {}
        for c in kids:
            for v in fvs.get(id(c), ()):
                seen.setdefault(v, None)
        if t is Function:
            bound = e.params
        elif t is Let:
            bound = (e.var,)
        elif t is Match:
            bound = [v for c in e.clauses for v in pattern_vars(c.lhs)]
        else:
            bound = ()
        for v in bound:
            seen.pop(v, None)
        fvs[id(e)] = list(seen)
        if t is Function:
            out[e] = fvs[id(e)]
    return out
