"""Legalization of the indexing ops: take, strided_slice."""

from __future__ import annotations

from ....topi import manipulation as topi_manip
from ...op.index import canon_index_expr
from .common import arg_shape, call_topi, out_shape, register_legalize

__all__: list[str] = []


@register_legalize("relax.take")
def _take(bb, call):
    axis = call.attrs.axis
    axis = None if axis is None else int(axis)
    mode = call.attrs.mode or "fast"
    return call_topi(bb, lambda x, i: topi_manip.take(x, i, axis, mode), call.args[0],
                     call.args[1], name="take")


@register_legalize("relax.strided_slice")
def _strided_slice(bb, call):
    a = call.attrs
    axes = [int(v) for v in a.axes]
    strides = [1] * len(axes) if a.strides is None else [int(v) for v in a.strides]
    dims = arg_shape(call, 0)
    # a symbolic begin may count from the end or lie outside the axis: the position it reads,
    # as struct-info inference computed the length from (assume_inbound: taken as given)
    begin = [int(b) if isinstance(b, int) else b if a.assume_inbound else
             canon_index_expr(b, dims[int(ax) % len(dims)], s)
             for b, ax, s in zip(a.begin, axes, strides, strict=True)]
    shape = out_shape(call)
    return call_topi(bb, lambda x: topi_manip.strided_slice(x, axes, begin, strides, shape),
                     call.args[0], name="strided_slice")
