"""Relax utilities under TVM's names (``tvm.relax.utils``)."""

from __future__ import annotations

from ..tir import expr as T
from .expr import DataflowVar, Expr, Function, Var
from .expr_functor import ExprMutator

__all__ = ["copy_with_new_vars"]


class _FreshVars(ExprMutator):
    """Rebinds every parameter and binding variable to a new variable of the same name and
    struct info (uses follow through the mutator's var remap)."""

    def visit_var_def_(self, var: Var) -> Var:
        return Var(var.name_hint, var.struct_info_, var.span)

    def visit_dataflow_var_def_(self, var: DataflowVar) -> DataflowVar:
        return DataflowVar(var.name_hint, var.struct_info_, var.span)


def copy_with_new_vars(func: Function) -> Function:
    """A copy of ``func`` in which every Relax variable it binds and every symbolic variable it
    defines is new, so the copy may sit in the same module as the original (a variable
    belongs to one function)."""
    from .transform.bind_symbolic_vars import function_bind_symbolic_vars
    from .transform.utils import defined_symbolic_vars

    if not isinstance(func, Function):
        raise TypeError(f"copy_with_new_vars expects a relax.Function, got "
                        f"{type(func).__name__}")
    syms = defined_symbolic_vars(func)
    if syms:
        func = function_bind_symbolic_vars(func, {v: T.Var(v.name, v.dtype) for v in syms})
    return _FreshVars().visit_expr(func)


def convert_to_expr(value) -> Expr:
    """A Python value as a Relax expression, as TVM's ``relax.utils.convert_to_expr``: an Expr
    as it is, a number, numpy array or NDArray as a constant, a PrimExpr as a PrimValue, a str
    as a StringImm, a list or tuple as a Tuple of converted fields."""
    import numpy as np

    from ..ir.prim_expr import PrimExpr
    from ..runtime.ndarray import NDArray
    from .expr import PrimValue, StringImm, Tuple, const

    if isinstance(value, Expr):
        return value
    if isinstance(value, bool | int | float | np.ndarray | np.number | NDArray):
        return const(value)
    if isinstance(value, PrimExpr):
        return PrimValue(value)
    if isinstance(value, str):
        return StringImm(value)
    if isinstance(value, list | tuple):
        return Tuple([convert_to_expr(v) for v in value])
    raise TypeError(f"convert_to_expr: cannot convert {type(value).__name__} {value!r} to a "
                    "Relax expression")
