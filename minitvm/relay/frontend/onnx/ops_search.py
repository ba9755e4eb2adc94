"""ONNX search operators on Relay: TopK (k must be known at import), NonZero (its output
shape depends on the data, so its input must be known at import: a constant, or a graph input
bound with ``const_inputs``)."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from .registry import Context, register


@register("TopK")
def _topk(ctx: Context, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    axis = int(attrs.get("axis", -1))
    if not -len(shape) <= axis < len(shape):
        raise ctx.fail(f"axis {axis} is out of range for a rank-{len(shape)} input")
    axis %= len(shape)
    if ctx.opset >= 10:
        if len(ins) < 2 or ins[1] is None:
            raise ctx.fail("the K input is required")
        k = int(np.asarray(ctx.value(ins[1], "TopK's K")).reshape(-1)[0])
    else:
        k = int(attrs["k"])
    if not 0 <= k <= shape[axis]:
        raise ctx.fail(f"K={k} is outside [0, {shape[axis]}] (the size of axis {axis})")
    largest = bool(attrs.get("largest", 1))
    values, indices = _op.topk(x, k=k, axis=axis, ret_type="both", is_ascend=not largest,
                               dtype="int64")
    return [values, indices]


@register("NonZero")
def _nonzero(ctx: Context, ins, attrs):
    v = ctx.value(ins[0], "NonZero's input (its output shape depends on the values)")
    return ctx.const(np.array(np.nonzero(v), dtype="int64").reshape(np.ndim(v), -1))
