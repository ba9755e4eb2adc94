"""ATen converters for torch's fake quantization (a QAT model exported before conversion):
``fake_quantize_per_tensor_affine`` (a float / int or tensor scale and zero point),
``fake_quantize_per_channel_affine`` and the ``_cachemask`` forms torch.export keeps, built as
float arithmetic by ``frontend_common.torch_fake_quant`` -- equal to eager. A conv2d of an 8-bit
fake-quantized input and a constant fake-quantized weight runs as the integer conv of their
8-bit values, scaled after (``aten_fake_quant_conv``; float rounding apart, eager's values).

The integer path: ``from_pytorch(..., fake_quantize_as_qnn=True)`` (a minitvm option) writes
each fake quantization over an 8-bit range as ``qnn.dequantize(qnn.quantize(x))`` (a narrower
range clips the integers between them), as TVM's ONNX importer writes a QDQ pair, so that
``relay.transform.FakeQuantizationToInteger`` turns the convs, adds and pools between the
pairs into integer ops (VNNI int8 convs on a host that has them). Its numerics are the
integer program's, not eager's: each conv's sum is requantized once from int32 (as ONNX
Runtime's integer kernels do) where eager rounds the float conv of dequantized values;
``qnn.quantize`` divides by the scale where torch multiplies by its float32 reciprocal. The
same path goes through the model's ONNX export: ``from_onnx(..., convert_config=
{"qdq_as_qnn": True})``."""

from __future__ import annotations

import numpy as np

from ....frontend_common.torch_fake_quant import (
    channel_shape,
    fake_quantize_parts,
    fused_observer_fake_quant,
)
from ... import expr as _expr
from ... import op as _op
from ..common import const_value
from .aten import _is_expr, register
from .aten_fake_quant_conv import note_activation, note_weight


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


def _qnn_pair(ctx, x, scale, zero_point, axis: int, qmin: int, qmax: int):
    """``fake_quantize_as_qnn``'s ``qnn.dequantize(qnn.quantize(x))`` where the range fits
    uint8 or int8, else None (the float form stays)."""
    if not getattr(ctx, "fake_quantize_as_qnn", False) or ctx.op_name.endswith("_cachemask"):
        return None
    dtype = "uint8" if 0 <= qmin and qmax <= 255 else "int8" if -128 <= qmin and qmax <= 127 \
        else None
    if dtype is None:
        return None
    from ...qnn import op as _qnn

    if _is_expr(scale):
        scale = scale if ctx.dtype(scale) == "float32" else _op.cast(scale, "float32")
    else:
        scale = _expr.const(np.float32(scale))
    zero_point = _op.cast(zero_point, "int32") if _is_expr(zero_point) else \
        _expr.const(np.int32(zero_point))
    q = _qnn.quantize(x, scale, zero_point, axis=axis, out_dtype=dtype)
    info = np.iinfo(dtype)
    if (qmin, qmax) != (info.min, info.max):
        q = _op.clip(q, qmin, qmax)
    return _qnn.dequantize(q, scale, zero_point, axis=axis)


@register("fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine_cachemask")
def _fake_quantize_per_tensor(ctx, args):
    x, scale, zero_point, qmin, qmax = args[:5]
    dt = _check_float(ctx, x)
    pair = None if dt != "float32" else _qnn_pair(ctx, x, scale, zero_point, 1, int(qmin),
                                                   int(qmax))
    if pair is not None:
        return pair
    out, mask, clamped = fake_quantize_parts(_op, x, _inverse(ctx, scale, dt),
                                             _float_operand(ctx, scale, dt),
                                             _float_operand(ctx, zero_point, dt), int(qmin),
                                             int(qmax), _scalar(dt))
    if dt == "float32":  # (a conv may read the 8-bit integers, or a constant weight's)
        out = note_weight(ctx, x, out, scale, zero_point, None, int(qmin), int(qmax))
        note_activation(ctx, out, clamped, scale, zero_point, int(qmin), int(qmax))
    return (out, mask) if ctx.op_name.endswith("_cachemask") else out


@register("fake_quantize_per_channel_affine", "fake_quantize_per_channel_affine_cachemask")
def _fake_quantize_per_channel(ctx, args):
    x, scale, zero_point, axis, qmin, qmax = args[:6]
    dt = _check_float(ctx, x)
    pair = None if dt != "float32" else _qnn_pair(ctx, x, scale, zero_point,
                                                   int(axis) % len(ctx.shape(x)), int(qmin),
                                                   int(qmax))
    if pair is not None:
        return pair
    shape = channel_shape(len(ctx.shape(x)), int(axis), int(ctx.shape(scale)[0]))
    s = _op.reshape(_float_operand(ctx, scale, dt), shape)
    z = _op.reshape(_float_operand(ctx, zero_point, dt), shape)
    out, mask, _ = fake_quantize_parts(_op, x, _inverse(ctx, s, dt), s, z, int(qmin), int(qmax),
                                       _scalar(dt))
    if dt == "float32":  # (a conv may read a constant weight's 8-bit integers)
        out = note_weight(ctx, x, out, scale, zero_point, int(axis), int(qmin), int(qmax))
    return (out, mask) if ctx.op_name.endswith("_cachemask") else out


@register("fused_moving_avg_obs_fake_quant")
def _fused_moving_avg_obs_fake_quant(ctx, args):
    """torch.ao's default QAT FakeQuantize (``FusedMovingAvgObsFakeQuantize``) in one op: with
    its observer off (``disable_observer``: a trained model, as it is exported) it is the
    fake quantization by its scale and zero point buffers -- per tensor, or per channel along
    ``ch_axis`` (``per_row_fake_quant``) --, or ``x`` itself where fake quantization is off.
    With the observer on the scale would follow each input's range (training), refused."""
    x, fake_quant_on, scale, zero_point, qmin, qmax, ch_axis, per_row = \
        fused_observer_fake_quant(
            args, lambda v: const_value(ctx.fold(v)) if _is_expr(v) else np.asarray(v),
            ctx.fail, "constants", "tracing")
    if not fake_quant_on:
        return x
    if per_row:
        return _fake_quantize_per_channel(ctx, [x, scale, zero_point, ch_axis, qmin, qmax])
    return _fake_quantize_per_tensor(ctx, [x, ctx.fold(_op.reshape(scale, ())),
                                           ctx.fold(_op.reshape(zero_point, ())), qmin, qmax])
