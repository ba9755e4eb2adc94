"""Legalization of ``matmul`` (batched, broadcast, 1-D operands): one ``matmul`` stage over
``i0, i1...`` with reduction axis ``k``, as TVM writes it."""

from __future__ import annotations

from ....topi import nn_te
from .common import call_topi, out_dtype, out_shape, register_legalize

__all__: list[str] = []


@register_legalize("relax.matmul")
def _matmul(bb, call):
    shape, dtype = out_shape(call), out_dtype(call)
    return call_topi(bb, lambda a, b: nn_te.matmul(a, b, dtype, shape), call.args[0],
                     call.args[1], name="matmul")
