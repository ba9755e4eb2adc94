"""ONNX ops of onnxruntime's QOperator format (quantize_static(quant_format=QOperator)):
QLinearConv and QLinearMatMul (ONNX) and com.microsoft's QGemm, QLinearAdd, QLinearMul,
QLinearGlobalAveragePool, QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu and
QLinearConcat.

Conv / MatMul / Gemm take the integer products (exactly, see ``ops_extra.int_conv``), add the
int32 bias and requantize in float32 with the multiplier x_scale * w_scale / y_scale, as
onnxruntime does. The others dequantize their inputs, run the float op's own converter and
quantize its result (round half to even, saturating)."""

from __future__ import annotations

import numpy as np

from ....frontend_common import onnx_model as _om
from ....frontend_common.onnx_qsoftmax import nan_rows, qsoftmax_plan, softmax_axis
from ....frontend_common.onnx_quant import QLINEAR_FLOAT_OPS, qlinear_float_attrs
from ... import op as _op
from .ops_extra import add_to_product, as_row_conv, int_conv, int_matmul
from .qdq_softmax import int_softmax
from .qdq_weight import vnni_zp_int_conv
from .registry import CONVERTERS, register


def _deq(ctx, x, scale, zp):
    return CONVERTERS["DequantizeLinear"](ctx, [x, scale] + ([zp] if zp is not None else []),
                                          {})


def _q(ctx, y, scale, zp):
    return CONVERTERS["QuantizeLinear"](ctx, [y, scale] + ([zp] if zp is not None else []), {})


def _opt(ins, i):
    return ins[i] if len(ins) > i else None


def _along(ctx, param, ndim: int, axis: int):
    """A 1-D (per-channel) parameter shaped to broadcast along ``axis``; a scalar as it is."""
    if len(ctx.shape(param)) != 1 or ctx.shape(param)[0] == 1:
        return _op.reshape(param, ()) if ctx.shape(param) else param
    shape = [1] * ndim
    shape[_om.axis_attr(axis, ndim, "the quantization axis")] = -1
    return _op.reshape(param, shape)


def _requantize(ctx, acc, acc_dt, bias, x_s, w_s, w_axis, y_s, y_zp):
    """round(float(acc + bias) * (x_scale * w_scale / y_scale)) + y_zero_point, saturated to
    y_zero_point's dtype (uint8 without one); a float result (x_scale * w_scale * acc) when
    there is no y_scale."""
    nd = ctx.ndim(acc)
    if bias is not None:
        b = _op.cast(bias, acc_dt)
        b = _along(ctx, b, nd, w_axis) if w_axis == 1 else b
        acc = add_to_product(acc, b, ctx.maybe_value(b) if acc_dt == "int32" else None)
    v = _op.cast(acc, "float32") if acc_dt != "float32" else acc
    mult = _op.multiply(_op.cast(x_s, "float32"), _op.cast(w_s, "float32"))
    if y_s is None:
        return _op.multiply(v, _along(ctx, mult, nd, w_axis))
    mult = _op.divide(mult, _op.cast(y_s, "float32"))
    y = _op.round(_op.multiply(v, _along(ctx, mult, nd, w_axis)))
    out_dtype = ctx.dtype(y_zp) if y_zp is not None else "uint8"
    if y_zp is not None:
        y = _op.add(y, _op.cast(y_zp, "float32"))
    lo, hi = (0.0, 255.0) if out_dtype == "uint8" else (-128.0, 127.0)
    return _op.cast(_op.clip(y, lo, hi), out_dtype)


@register("QLinearConv")
def _qlinear_conv(ctx, ins, attrs):
    x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp = ins[:8]
    row = ctx.ndim(x) == 3  # (1-D: requantized before the row is squeezed away, so fused)
    if row:
        x, w, attrs = as_row_conv(ctx, x, w, attrs)
    acc = vnni_zp_int_conv(ctx, x, x_zp, w, w_zp, attrs)  # (a weight zero point, on VNNI)
    acc, acc_dt = int_conv(ctx, x, x_zp, w, w_zp, attrs) if acc is None else (acc, "int32")
    y = _requantize(ctx, acc, acc_dt, _opt(ins, 8), x_s, w_s, 1, y_s, y_zp)
    return _op.squeeze(y, [2]) if row else y


@register("QLinearMatMul")
def _qlinear_matmul(ctx, ins, attrs):
    a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp = ins[:8]
    acc, acc_dt = int_matmul(ctx, a, a_zp, b, b_zp)
    return _requantize(ctx, acc, acc_dt, None, a_s, b_s, -1, y_s, y_zp)


@register("com.microsoft.QGemm")
def _qgemm(ctx, ins, attrs):
    """alpha * (A - a_zp) @ (B - b_zp) + C: C int32 (scaled by a_scale * b_scale) with a
    quantized output, float with a float one (no y_scale)."""
    a, a_s, a_zp, b, b_s, b_zp = ins[:6]
    c, y_s, y_zp = _opt(ins, 6), _opt(ins, 7), _opt(ins, 8)
    if attrs.get("transA", 0):
        a = _op.transpose(a, (1, 0))
    if attrs.get("transB", 0):
        b = _op.transpose(b, (1, 0))
    acc, acc_dt = int_matmul(ctx, a, a_zp, b, b_zp)
    alpha = float(attrs.get("alpha", 1.0))
    if alpha != 1.0:
        a_s = _op.multiply(_op.cast(a_s, "float32"), ctx.const(np.float32(alpha)))
    if y_s is None:
        out = _requantize(ctx, acc, acc_dt, None, a_s, b_s, -1, None, None)
        return out if c is None else _op.add(out, c)
    return _requantize(ctx, acc, acc_dt, c, a_s, b_s, -1, y_s, y_zp)


def _float_op(op_type: str, n_in: int):
    """The QLinear form of a float op over ``n_in`` quantized inputs (x, x_scale, x_zp each),
    followed by y_scale, y_zp."""

    def convert(ctx, ins, attrs):
        attrs, error = qlinear_float_attrs(attrs, ctx.ndim(ins[0]))
        if error is not None:
            raise ctx.fail(error)
        xs = [_deq(ctx, ins[3 * i], ins[3 * i + 1], ins[3 * i + 2]) for i in range(n_in)]
        y = CONVERTERS[op_type](ctx, xs, attrs)
        return _q(ctx, y, ins[3 * n_in], _opt(ins, 3 * n_in + 1))

    return convert


for _name, _float, _inputs in QLINEAR_FLOAT_OPS:
    if _name != "com.microsoft.QLinearSoftmax":  # (below: ORT's integer kernel)
        register(_name)(_float_op(_float, _inputs))


@register("com.microsoft.QLinearSoftmax")
def _qlinear_softmax(ctx, ins, attrs):
    """ORT's integer softmax (``qdq_softmax``) where its parameters are known scalars, else
    the float softmax quantized."""
    x, x_s, y_s, y_zp = ins[0], ins[1], ins[3], _opt(ins, 4)
    fl, error = qlinear_float_attrs(attrs, ctx.ndim(x))
    if error is not None:
        raise ctx.fail(error)
    axis = softmax_axis(ctx.shape(x), fl, int(attrs.get("opset", 13)))
    out_dtype = ctx.dtype(y_zp) if y_zp is not None else "uint8"
    if nan_rows(ctx.maybe_value(x_s)):  # (ORT's results are all NaN, cast to 0)
        return _op.cast(_op.zeros_like(x), out_dtype)
    zv = None if y_zp is None else ctx.maybe_value(y_zp)
    plan = None if axis is None or (y_zp is not None and zv is None) else qsoftmax_plan(
        ctx.dtype(x), ctx.maybe_value(x_s), out_dtype, ctx.maybe_value(y_s), zv,
        ctx.shape(x)[axis])
    if plan is None:
        return _FLOAT_SOFTMAX(ctx, ins, attrs)
    return int_softmax(ctx, x, plan, axis)


_FLOAT_SOFTMAX = _float_op("Softmax", 1)


@register("com.microsoft.QLinearConcat")
def _qlinear_concat(ctx, ins, attrs):
    y_s, y_zp = ins[0], ins[1]
    xs = [_deq(ctx, ins[i], ins[i + 1], ins[i + 2]) for i in range(2, len(ins), 3)]
    return _q(ctx, CONVERTERS["Concat"](ctx, xs, attrs), y_s, y_zp)
