"""ONNX search operators on Relay: TopK (K known at import, or computed at run time, from
sizes or, with run-time sizes in the model, from data: ``dyn.topk``, K checked against the
axis at run time), NonZero (its output shape depends on the data, so its input must be
known at import: a constant, or a graph input bound with ``const_inputs``)."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...op import dyn as _dyn
from .registry import Context, register
from .run_time_sized import checked


@register("TopK")
def _topk(ctx: Context, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    axis = int(attrs.get("axis", -1))
    if not -len(shape) <= axis < len(shape):
        raise ctx.fail(f"axis {axis} is out of range for a rank-{len(shape)} input")
    axis %= len(shape)
    largest = bool(attrs.get("largest", 1))
    if ctx.opset >= 10:
        if len(ins) < 2 or ins[1] is None:
            raise ctx.fail("the K input is required")
        if ctx.at_run_time(ins[1]):  # (K = min(batch, 5), or an input: a run-time size)
            return _run_time_k(ctx, x, ins[1], axis, largest)
        k = int(np.asarray(ctx.value(ins[1], "TopK's K")).reshape(-1)[0])
    else:
        k = int(attrs["k"])
    if not 0 <= k <= shape[axis]:
        raise ctx.fail(f"K={k} is outside [0, {shape[axis]}] (the size of axis {axis})")
    if k == 0:  # (Relay's topk takes k < 1 as "all"; ONNX's K = 0 selects none)
        none = _op.strided_slice(x, [0], [0], axes=[axis])
        return [none, _op.cast(none, "int64")]
    values, indices = _op.topk(x, k=k, axis=axis, ret_type="both", is_ascend=not largest,
                               dtype="int64")
    return [values, indices]


def _run_time_k(ctx: Context, x, k, axis: int, largest: bool):
    """TopK with K computed at run time: Relay's ``dyn.topk``, then its first K positions
    along the axis (a take of ``arange(K)``: ``dyn.topk`` reads K = 0 as "all"). A K outside
    [0, the axis' size] raises at run time, as onnxruntime (the take would repeat the last)."""
    k = _op.cast(_op.reshape(ctx.fold(k), ()), "int64")
    size = _op.take(_op.shape_of(x, "int64"), ctx.const(np.array(axis, "int64")))
    ok = _op.logical_and(_op.greater_equal(k, ctx.const(np.array(0, "int64"))),
                         _op.less_equal(k, size))
    k = checked(ctx, k, ok, f"K={{}} is outside [0, {{}}] (the size of axis {axis})", [k, size])
    values, indices = _dyn.topk(x, k, axis=axis, ret_type="both", is_ascend=not largest,
                                dtype="int64")
    first = _op.arange(k, dtype="int64")
    return [_op.take(values, first, axis=axis), _op.take(indices, first, axis=axis)]


@register("NonZero")
def _nonzero(ctx: Context, ins, attrs):
    v = ctx.value(ins[0], "NonZero's input (its output shape depends on the values)")
    return ctx.const(np.array(np.nonzero(v), dtype="int64").reshape(np.ndim(v), -1))
