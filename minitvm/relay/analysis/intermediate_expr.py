"""extract_intermdeiate_expr (TVM's spelling): one intermediate expression of ``main`` as a module
of its own, picked by the number TVM gives it — calls, tuples and tuple projections counted in
post-order, which for a dataflow graph is the ``%N`` of ``print(mod["main"])``."""

from __future__ import annotations

from ...ir.module import IRModule
from ..expr import Call, Tuple, TupleGetItem
from ..expr_functor import post_order_visit

__all__ = ["extract_intermdeiate_expr"]


def extract_intermdeiate_expr(mod: IRModule, expr_id: int) -> IRModule:
    """A module whose ``main`` computes expression number ``expr_id`` of ``mod["main"]`` (its
    free variables become the parameters)."""
    if "main" not in mod._gvars:
        raise ValueError("extract_intermdeiate_expr: the module has no @main")
    numbered: list = []
    post_order_visit(mod["main"], lambda e: numbered.append(e)
                     if isinstance(e, Call | Tuple | TupleGetItem) else None)
    if not 0 <= int(expr_id) < len(numbered):
        raise ValueError(f"extract_intermdeiate_expr: expression id {expr_id} is out of range; "
                         f"@main has {len(numbered)} (ids 0..{len(numbered) - 1})")
    return IRModule.from_expr(numbered[int(expr_id)])
