"""Relax's entries in the core's dialect hooks that need no printer: modules from expressions,
calls of global functions. (Printing is registered by ``minitvm.script``, which sits above.)"""

from __future__ import annotations

from ..ir.dialect import register_hook
from ..ir.expr import GlobalVar
from ..ir.module import IRModule
from .expr import Call, Expr, Function


def _from_expr(expr, functions=None, type_defs=None) -> IRModule:
    """``main`` is ``expr``; a bare expression becomes a function of its free variables."""
    mod = IRModule(functions, type_defs)
    if not isinstance(expr, Function):
        from .analysis.var_analysis import free_vars
        from .expr import SeqExpr

        body = expr if isinstance(expr, SeqExpr) else SeqExpr([], expr)
        expr = Function(free_vars(expr), body, expr._struct_info)
    mod._add(mod._gvars.get("main") or GlobalVar("main"), expr, update=True)
    return mod


register_hook("from_expr", Expr, _from_expr)
register_hook("call", Expr, lambda callee, args: Call(callee, args))
