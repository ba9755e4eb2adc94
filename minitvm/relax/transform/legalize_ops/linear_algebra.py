"""Legalization of ``matmul`` (batched, broadcast, 1-D operands): one ``matmul`` stage over
``i0, i1...`` with reduction axis ``k``, as TVM writes it."""

from __future__ import annotations

from ....ir.prim_expr import IntImm
from ....topi import nn_te
from .common import call_topi, out_dtype, out_shape, register_legalize, tie_dim

__all__: list[str] = []


@register_legalize("relax.matmul")
def _matmul(bb, call):
    shape, dtype = out_shape(call), out_dtype(call)
    a, b = _same_reduction(bb, *call.args)
    return call_topi(bb, lambda a, b: nn_te.matmul(a, b, dtype, shape), a, b, name="matmul")


def _same_reduction(bb, a, b) -> tuple:
    """The operands with their reduction lengths one size: where the struct info cannot prove
    them equal (two size variables, or one and a constant), the symbolic one is cast to the
    other's, checked when it runs (the kernel loops over ``a``'s length and reads ``b`` by it)."""
    sa, sb = a.struct_info, b.struct_info
    if getattr(sa, "shape", None) is None or getattr(sb, "shape", None) is None:
        return a, b
    ka, axis_b = sa.shape.values[-1], 0 if sb.ndim == 1 else sb.ndim - 2
    kb = sb.shape.values[axis_b]
    if isinstance(kb, IntImm) and not isinstance(ka, IntImm):
        return tie_dim(bb, a, sa.ndim - 1, kb), b
    return a, tie_dim(bb, b, axis_b, ka)
