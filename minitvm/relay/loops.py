"""``tvm.relay.loops``: loops written as recursive local functions (``while_loop``)."""

from __future__ import annotations

from .expr import Function, Let, Tuple, Var
from .scope_builder import ScopeBuilder

__all__ = ["while_loop"]


def while_loop(cond, loop_vars, loop_bodies):
    """A recursive loop: while ``cond(*vars)`` holds, ``vars = loop_bodies(*vars)``.

    Returns ``let %while_loop = fn (vars) { if (cond) { %while_loop(bodies) } else { vars } };
    %while_loop`` — a function to call with the initial values, giving the final values as a
    tuple (TVM's construction).

    Parameters
    ----------
    cond : Callable[..., relay.Expr]
        The condition, on fresh variables standing for the loop variables.
    loop_vars : List[relay.Expr]
        The loop variables (typed vars or expressions whose type is known).
    loop_bodies : Callable[..., List[relay.Expr]]
        The next values of the loop variables.
    """
    sb = ScopeBuilder()
    loop = Var("while_loop")
    fresh = []
    for i, v in enumerate(loop_vars):
        name = v.name_hint if isinstance(v, Var) else f"arg{i}"
        ty = v.type_annotation if isinstance(v, Var) else sb.type_of(v)
        fresh.append(Var(name, ty, getattr(v, "span", None)))
    with sb.if_scope(cond(*fresh)):
        sb.ret(loop(*loop_bodies(*fresh)))
    with sb.else_scope():
        sb.ret(Tuple(fresh))
    return Let(loop, Function(fresh, sb.get()), loop)
