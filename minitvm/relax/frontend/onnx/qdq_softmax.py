"""Relax's form of onnxruntime's integer softmax (``frontend_common.onnx_qsoftmax``): for
com.microsoft.QLinearSoftmax, and for a QuantizeLinear of a Softmax of a DequantizeLinear'd
8-bit activation (what ORT's QDQ fusion runs as a QLinearSoftmax), so both give ORT's
integers instead of a float softmax's."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_qsoftmax import (
    QSoftmaxPlan,
    nan_rows,
    noted_softmax_plan,
    qsoftmax_plan,
    softmax_axis,
)
from ... import op as _op
from ...expr import const
from .context import Context


def int_softmax(ctx: Context, q, plan: QSoftmaxPlan, axis: int):
    """The 8-bit softmax of 8-bit ``q`` along ``axis`` as ``plan`` computes it."""
    qi = ctx.emit(_op.astype(q, "int32"))
    idx = ctx.emit(_op.add(_op.subtract(qi, _op.max(qi, axis=axis, keepdims=True)),
                           const(np.int32(255))))
    e = ctx.emit(_op.take(const(plan.table), idx))
    total = ctx.emit(_op.sum(e, axis=axis, keepdims=True))
    v = _op.round(_op.divide(_op.multiply(e, const(plan.y_mult)), total))
    if plan.y_zp:
        v = _op.add(v, const(np.float32(plan.y_zp)))
    if plan.wraps:
        v = ctx.emit(_op.minimum(v, const(np.float32(255))))
        v = _op.where(_op.greater(v, const(np.float32(127))),
                      _op.subtract(v, const(np.float32(256))), v)
    else:
        v = _op.clip(v, *plan.saturate_bounds())
    return ctx.emit(_op.astype(ctx.emit(v), plan.out_dtype))


def _known_scalar(ctx: Context, v):
    """The value of ``v`` when known at import (numpy), else None."""
    k = ctx.known(v)
    return None if k is None or k.dtype == object else k


def quantized_softmax(ctx: Context, scale, zp, out_dtype: str):
    """The current QuantizeLinear as ORT's integer softmax where it quantizes a noted Softmax
    (``onnx_qsoftmax.noted_softmax_plan``); else None."""
    found = noted_softmax_plan(ctx, scale, zp, out_dtype, lambda v: _known_scalar(ctx, v))
    return None if found is None else int_softmax(ctx, *found)


def qlinear_softmax(ctx: Context, x, x_scale, y_scale, y_zp, attrs: dict):
    """com.microsoft.QLinearSoftmax as ORT's integer kernel, or None where a parameter is not
    a known scalar or it normalizes over several axes (the float form then)."""
    axis = softmax_axis(ctx.shape(x), attrs, int(attrs.get("opset", 13)))
    out_dtype = ctx.dtype(y_zp) if y_zp is not None else "uint8"
    if nan_rows(_known_scalar(ctx, x_scale)):  # (ORT's results are all NaN, cast to 0)
        return ctx.emit(_op.zeros_like(ctx.expr(x), out_dtype))
    zv = None if y_zp is None else _known_scalar(ctx, y_zp)
    if axis is None or (y_zp is not None and zv is None):
        return None
    plan = qsoftmax_plan(ctx.dtype(x), _known_scalar(ctx, x_scale), out_dtype,
                         _known_scalar(ctx, y_scale), zv, ctx.shape(x)[axis])
    return None if plan is None else int_softmax(ctx, ctx.expr(x), plan, axis)
