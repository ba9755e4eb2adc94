"""A QDQ model's conv weight as its int8 values and their scale: ``DequantizeLinear`` of a
constant int8 weight (no zero point, or zero ones; one scale, or one per output channel) is
``q * scale``, and ``conv(x, q * scale) == conv(x, q) * scale`` per output channel. The Conv
converter passes ``q`` to conv2d as int8 (the schedules widen it as they load it: a quarter
of the weight bytes to stream) and scales the result, where the dequantized weight would be
folded into float32 values (only rounding differs: the scale is applied to the sum rather
than to each weight).

``remember`` is called by the DequantizeLinear converter (``ops_extra``), ``int8_weight_and_
scale`` by Conv's (``ops_nn``); the context's ``int8_weights`` holds what one tells the
other, by ONNX tensor name. (The checks are ``frontend_common.onnx_quant``'s, shared with the
Relax importer.)"""

from __future__ import annotations

from ....frontend_common.onnx_quant import (
    UNKNOWN,
    conv_output_scale,
    dequantized_weight_scale,
    keeps_int8_weight,
)


def remember(ctx, q, scale, zp, axis: int, block: int) -> None:
    """Note the output of the current DequantizeLinear node when a Conv may read ``q`` itself
    (``onnx_quant.dequantized_weight_scale``)."""
    zv = None if zp is None else ctx.maybe_value(zp)
    s = dequantized_weight_scale(ctx.maybe_value(q), ctx.dtype(q), ctx.maybe_value(scale),
                                 UNKNOWN if zp is not None and zv is None else zv, axis, block)
    if s is not None:
        ctx.int8_weights[ctx.node.output[0]] = (q, s)


def int8_weight_and_scale(ctx, groups: int, kernel) -> tuple | None:
    """``(q, scale)`` when the current Conv node's weight is a DequantizeLinear output that
    ``remember`` noted and ``keeps_int8_weight`` lets a conv read as it is: ``q`` the int8
    expression, ``scale`` a float32 constant of shape ``()`` or ``(1, O, 1, 1)`` to multiply
    the conv's output with. Else None."""
    found = ctx.int8_weights.get(ctx.node.input[1]) if len(ctx.node.input) > 1 else None
    if found is None:
        return None
    q, s = found
    if not keeps_int8_weight("int8", ctx.maybe_value(q), None, groups, kernel):
        return None
    return q, ctx.const(conv_output_scale(s, ctx.shape(q)[0]))
