"""ATen converters for torch's fake quantization (a QAT model exported before conversion):
``fake_quantize_per_tensor_affine`` (a float / int or tensor scale and zero point),
``fake_quantize_per_channel_affine`` and the ``_cachemask`` forms torch.export keeps, built as
float arithmetic by ``frontend_common.torch_fake_quant``."""

from __future__ import annotations

import numpy as np

from ....frontend_common.torch_fake_quant import channel_shape, fake_quantize
from ... import expr as _expr
from ... import op as _op
from .aten import _is_expr, register


def _float_operand(ctx, v, dt):
    """A scale or zero point as an expression of ``x``'s float dtype."""
    if _is_expr(v):
        return v if ctx.dtype(v) == dt else _op.cast(v, dt)
    return _expr.const(np.array(v, dtype=dt), dt)


def _inverse(ctx, scale, dt):
    """``1 / scale`` in ``dt``, folded here for a Python number (torch's ``1.0f / scale``)."""
    if _is_expr(scale):
        return _op.divide(_expr.const(np.array(1.0, dtype=dt), dt), scale)
    return _expr.const(np.array(1.0, dtype=dt) / np.array(scale, dtype=dt), dt)


def _check_float(ctx, x):
    dt = ctx.dtype(x)
    if not dt.startswith("float"):
        raise ctx.fail(f"fake quantization takes a float tensor, got {dt}")
    return dt


def _scalar(dt):
    return lambda v: _expr.const(np.array(v, dtype=dt), dt)


@register("fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine_cachemask")
def _fake_quantize_per_tensor(ctx, args):
    x, scale, zero_point, qmin, qmax = args[:5]
    dt = _check_float(ctx, x)
    out, mask = fake_quantize(_op, x, _inverse(ctx, scale, dt), _float_operand(ctx, scale, dt),
                              _float_operand(ctx, zero_point, dt), int(qmin), int(qmax),
                              _scalar(dt))
    return (out, mask) if ctx.op_name.endswith("_cachemask") else out


@register("fake_quantize_per_channel_affine", "fake_quantize_per_channel_affine_cachemask")
def _fake_quantize_per_channel(ctx, args):
    x, scale, zero_point, axis, qmin, qmax = args[:6]
    dt = _check_float(ctx, x)
    shape = channel_shape(len(ctx.shape(x)), int(axis), int(ctx.shape(scale)[0]))
    scale = _op.reshape(_float_operand(ctx, scale, dt), shape)
    zero_point = _op.reshape(_float_operand(ctx, zero_point, dt), shape)
    out, mask = fake_quantize(_op, x, _inverse(ctx, scale, dt), scale, zero_point, int(qmin),
                              int(qmax), _scalar(dt))
    return (out, mask) if ctx.op_name.endswith("_cachemask") else out
