"""Legalization of the indexing ops: take, strided_slice."""

from __future__ import annotations

from ....topi import manipulation as topi_manip
from .common import call_topi, out_shape, register_legalize

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
    begin = [v if not isinstance(v, int) else int(v) for v in a.begin]
    strides = [1] * len(axes) if a.strides is None else [int(v) for v in a.strides]
    shape = out_shape(call)
    return call_topi(bb, lambda x: topi_manip.strided_slice(x, axes, begin, strides, shape),
                     call.args[0], name="strided_slice")
