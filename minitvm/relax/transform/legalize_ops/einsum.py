"""Legalization of ``einsum`` onto ``topi.einsum`` (one ``T_einsum`` stage)."""

from __future__ import annotations

from ....topi import einsum as topi_einsum
from .common import call_topi, out_shape, register_legalize

__all__: list[str] = []


@register_legalize("relax.einsum")
def _einsum(bb, call):
    subscripts = str(call.attrs.subscripts)
    shape = out_shape(call)
    operands = call.args[0]
    return call_topi(bb, lambda *xs: topi_einsum.einsum(subscripts, *xs, out_shape=shape),
                     *_fields(bb, operands), name="einsum")


def _fields(bb, operands):
    from ...expr import Tuple, TupleGetItem

    if isinstance(operands, Tuple):
        return list(operands.fields)
    n = len(operands.struct_info.fields)
    return [bb.emit(TupleGetItem(operands, k)) for k in range(n)]
