"""The Relay forms of ``frontend_common.onnx_quant.VnniConvPlan`` and ``MatmulVnniPlan``: an
integer conv (or matmul) of an 8-bit input (less its zero point) and a constant 8-bit weight
(less its zero points) as the int32 ``nn.conv2d`` (``nn.dense``) of the uint8 input and the
int8 weight that ``schedule/conv_vnni`` (``gemm_vnni``) runs on VNNI, with the zero points'
shares subtracted after. Shared by the importers that find them: ONNX's (QLinearConv,
ConvInteger, MatMulInteger, a QDQ model's Conv / MatMul: ``onnx/qdq_weight``) and
TorchScript's (a QAT model's fake-quantized conv / linear: ``pytorch/aten_fake_quant_conv``).

``ctx`` is any importer context with ``dtype(expr)`` and ``shape(expr)``."""

from __future__ import annotations

import numpy as np

from ...frontend_common.onnx_quant import MatmulVnniPlan, VnniConvPlan
from .. import expr as _expr
from .. import op as _op

__all__ = ["vnni_int_conv", "vnni_int_matmul", "window_sums", "shifted_uint8"]


def _const(value, dtype: str):
    arr = np.asarray(value, dtype=dtype)
    return _expr.const(arr, dtype)


def shifted_uint8(x):
    """An int8 tensor as the uint8 ``x + 128`` (through int16)."""
    return _op.cast(_op.add(_op.cast(x, "int16"), _const(128, "int16")), "uint8")


def window_sums(x, kernel, strides, dil, pads):
    """The int32 sums of the uint8 ``x`` (NCHW) over each output pixel's window (all input
    channels x the filter's taps; the conv's zero ``pads``): ``[N, 1, OH, OW]``, what a
    weight zero point multiplies (``VnniConvPlan.window_weight``). The channels are summed
    first, then the taps by a one-channel int32 conv of ones."""
    sums = _op.sum(_op.cast(x, "int32"), axis=[1], keepdims=True)
    if list(kernel) == [1, 1] and list(strides) == [1, 1] and not any(pads):
        return sums
    ones = _const(np.ones((1, 1, *kernel)), "int32")
    return _op.nn.conv2d(sums, ones, strides=strides, padding=tuple(pads), dilation=dil,
                         channels=1, kernel_size=kernel, out_dtype="int32")


def _geometry(shape, strides, dil):
    """``VnniConvPlan``'s geometry of an NCHW input of static ``shape``, else None."""
    hw = list(shape[2:])
    if len(hw) != 2 or not all(isinstance(d, int | np.integer) for d in hw):
        return None
    return [int(d) for d in hw], [int(v) for v in strides], [int(v) for v in dil]


def vnni_int_conv(ctx, x, x_zv, w, wv, strides, dil, begin, end, groups, kernel,
                  w_dtype: str = "int8", w_zv=None):
    """``onnx_quant.vnni_conv``'s form (``VnniConvPlan``): the int32 conv of the uint8 input,
    padded with its zero point ``x_zv`` (``nn.pad``; by the conv itself when that is 0, or
    when the plan subtracts the zero point's share per output element), and
    the int8 weight (``w``, value ``wv``; a constant made from the plan's weight when ``w`` is
    None or the weight has zero points ``w_zv``, of ``w_dtype``), less ``x_zp * sum(w)`` per
    output channel, and the weight's zero points times the input's window sums. An int8 input
    is shifted into uint8 first (``x + 128``, with its zero point: the difference is the
    same)."""
    plan = VnniConvPlan(ctx.dtype(x), x_zv, wv, (begin[0], begin[1], end[0], end[1]),
                        w_dtype, w_zv, _geometry(ctx.shape(x), strides, dil))
    if w is None or w_dtype != "int8" or w_zv is not None:
        w = _expr.const(plan.weight, "int8")
    if plan.shift:
        x = shifted_uint8(x)
    if plan.pad_value is not None:
        t, left, b, r = plan.pads
        x = _op.nn.pad(x, ((0, 0), (0, 0), (t, b), (left, r)),
                       pad_value=_const(plan.pad_value, "uint8"))
    y = _op.nn.conv2d(x, w, strides=strides, padding=plan.conv_pads, dilation=dil, groups=groups,
                      channels=plan.weight.shape[0], kernel_size=kernel, out_dtype="int32")
    if plan.window_weight is not None:
        sums = window_sums(x, kernel, strides, dil, plan.conv_pads)
        y = _op.subtract(y, _op.multiply(sums, _expr.const(plan.window_weight, "int32")))
    sums = plan.zero_point_sums
    return y if sums is None else _op.subtract(y, _expr.const(sums, "int32"))


def vnni_int_matmul(ctx, a, a_zp, a_zv, bv, b_dtype: str = "int8", b_zv=None):
    """``onnx_quant.vnni_matmul``'s form (``MatmulVnniPlan``): ``nn.dense`` (int32) of the
    uint8 rows ``a`` (an int8 A shifted into uint8) and the constant weight ``bv`` ((K, N),
    numpy, of ``b_dtype``; a uint8 one shifted into int8), less the zero point ``a_zp``
    (value ``a_zv``: ``UNKNOWN`` when known only at run time) times the weight's column sums
    (``schedule/gemm_vnni`` applies it in its stores), and the weight's zero point ``b_zv``
    (value) times the rows' sums."""
    plan = MatmulVnniPlan(ctx.dtype(a), a_zv, bv, b_dtype, b_zv)
    if plan.shift:
        a = shifted_uint8(a)
    y = _op.nn.dense(a, _expr.const(plan.weight_t, "int8"), units=int(bv.shape[1]),
                     out_dtype="int32")
    if plan.row_sum_weight is not None:
        sums = _op.sum(_op.cast(a, "int32"), axis=[-1], keepdims=True)
        y = _op.subtract(y, _op.multiply(sums, _expr.const(plan.row_sum_weight, "int32")))
    if plan.constant_correction is not None:
        return _op.subtract(y, _expr.const(plan.constant_correction, "int32"))
    if not plan.runtime_zero_point:
        return y
    zp = _op.reshape(_op.cast(a_zp, "int32"), ())
    if plan.zero_point_offset:
        zp = _op.add(zp, _const(plan.zero_point_offset, "int32"))
    return _op.subtract(y, _op.multiply(zp, _expr.const(plan.column_sums, "int32")))
