"""Relay's form of onnxruntime's integer softmax (``frontend_common.onnx_qsoftmax``): for
com.microsoft.QLinearSoftmax, and for a QuantizeLinear of a Softmax of a DequantizeLinear'd
8-bit activation (what ORT's QDQ fusion runs as a QLinearSoftmax), so both give ORT's
integers instead of a float softmax's."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_qsoftmax import QSoftmaxPlan, noted_softmax_plan
from ... import op as _op


def int_softmax(ctx, q, plan: QSoftmaxPlan, axis: int):
    """The 8-bit softmax of 8-bit ``q`` along ``axis`` as ``plan`` computes it."""
    qi = _op.cast(q, "int32")
    idx = _op.add(_op.subtract(qi, _op.max(qi, axis=axis, keepdims=True)),
                  ctx.const(np.int32(255)))
    e = _op.take(ctx.const(plan.table), idx)
    total = _op.sum(e, axis=axis, keepdims=True)
    v = _op.round(_op.divide(_op.multiply(e, ctx.const(plan.y_mult)), total))
    if plan.y_zp:
        v = _op.add(v, ctx.const(np.float32(plan.y_zp)))
    if plan.wraps:
        v = _op.minimum(v, ctx.const(np.float32(255)))
        v = _op.where(_op.greater(v, ctx.const(np.float32(127))),
                      _op.subtract(v, ctx.const(np.float32(256))), v)
    else:
        v = _op.clip(v, *plan.saturate_bounds())
    return _op.cast(v, plan.out_dtype)


def quantized_softmax(ctx, scale, zp, out_dtype: str):
    """The current QuantizeLinear as ORT's integer softmax where it quantizes a noted Softmax
    (``onnx_qsoftmax.noted_softmax_plan``); else None."""
    found = noted_softmax_plan(ctx, scale, zp, out_dtype, ctx.maybe_value)
    return None if found is None else int_softmax(ctx, *found)
