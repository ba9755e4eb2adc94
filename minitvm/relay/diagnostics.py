"""How Relay expressions are described in one line in error messages (the ``describe`` hook)."""

from __future__ import annotations

from ..ir.dialect import register_hook
from ..ir.expr import GlobalVar
from ..ir.op import Op
from .expr import ExprWithOp


def describe_expr(e) -> str:
    """A one-line description of an expression (its head and immediate operands)."""
    name = type(e).__name__
    if name == "Var":
        return f"%{e.name_hint}"
    if name == "GlobalVar":
        return f"@{e.name_hint}"
    if name == "Constant":
        return f"constant of shape {tuple(e.data.shape)} and dtype {e.data.dtype}"
    if name == "Op":
        return e.name
    if name == "Constructor":
        return e.name_hint
    if name == "Call":
        args = ", ".join(_short(a) for a in e.args)
        return f"{_short(e.op)}({args})"
    if name == "Tuple":
        return "(" + ", ".join(_short(f) for f in e.fields) + ")"
    if name == "TupleGetItem":
        return f"{_short(e.tuple_value)}.{e.index}"
    if name == "Let":
        return f"let %{e.var.name_hint} = {_short(e.value)}; ..."
    if name == "If":
        return f"if ({_short(e.cond)}) {{...}} else {{...}}"
    if name == "Function":
        return "fn (" + ", ".join(f"%{p.name_hint}" for p in e.params) + ") {...}"
    if name == "Match":
        return f"match ({_short(e.data)}) {{...}}"
    return name


def _short(e) -> str:
    name = type(e).__name__
    if name in ("Var", "GlobalVar", "Op", "Constructor"):
        return describe_expr(e)
    if name == "Constant":
        return "meta[relay.Constant]"
    if name == "Call":
        return f"{_short(e.op)}(...)"
    return name.lower()


for _cls in (ExprWithOp, Op, GlobalVar):
    register_hook("describe", _cls, describe_expr)
