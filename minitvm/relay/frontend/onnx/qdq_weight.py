"""A QDQ model's conv weight as its int8 values and their scale: ``DequantizeLinear`` of a
constant int8 weight (no zero point, or zero ones; one scale, or one per output channel) is
``q * scale``, and ``conv(x, q * scale) == conv(x, q) * scale`` per output channel. The Conv
converter passes ``q`` to conv2d as int8 (the schedules widen it as they load it: a quarter
of the weight bytes to stream) and scales the result, where the dequantized weight would be
folded into float32 values (only rounding differs: the scale is applied to the sum rather
than to each weight).

``remember`` is called by the DequantizeLinear converter (``ops_extra``), ``int8_weight_and_
scale`` by Conv's (``ops_nn``); the context's ``int8_weights`` holds what one tells the
other, by ONNX tensor name."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import keeps_int8_weight


def remember(ctx, q, scale, zp, axis: int, block: int) -> None:
    """Note the output of the current DequantizeLinear node when it dequantizes a constant
    int8 tensor with constant float32 scales (one, or one along ``axis``) and no zero point or
    zero ones."""
    if block or ctx.dtype(q) != "int8" or ctx.maybe_value(q) is None:
        return
    sv = ctx.maybe_value(scale)
    zv = ctx.maybe_value(zp) if zp is not None else np.zeros(())
    if sv is None or sv.dtype != np.float32 or zv is None or np.any(zv):
        return
    nd = ctx.ndim(q)
    if sv.size != 1 and (sv.ndim != 1 or nd == 0 or axis % nd != 0):
        return  # (per-channel scales: only along the output channels of a weight)
    ctx.int8_weights[ctx.node.output[0]] = (q, sv)


def int8_weight_and_scale(ctx, groups: int, kernel) -> tuple | None:
    """``(q, scale)`` when the current Conv node's weight is a DequantizeLinear output that
    ``remember`` noted and ``keeps_int8_weight`` lets a conv read as it is: ``q`` the int8
    expression, ``scale`` a float32 constant of shape ``()`` or ``(1, O, 1, 1)`` to multiply
    the conv's output with. Else None."""
    found = ctx.int8_weights.get(ctx.node.input[1]) if len(ctx.node.input) > 1 else None
    if found is None:
        return None
    q, sv = found
    if not keeps_int8_weight("int8", ctx.maybe_value(q), None, groups, kernel):
        return None
    o = ctx.shape(q)[0]
    if sv.size not in (1, o):
        return None
    return q, ctx.const(sv.reshape(()) if sv.size == 1 else sv.reshape(1, o, 1, 1))
