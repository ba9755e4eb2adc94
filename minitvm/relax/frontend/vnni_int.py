"""The Relax forms of ``frontend_common.onnx_quant.VnniConvPlan`` and ``MatmulVnniPlan``: an
integer conv (or matmul) of an 8-bit input (less its zero point) and a constant 8-bit weight
(less its zero points) as the int32 ``nn.conv2d`` (``matmul``) of the uint8 input and the int8
weight that ``schedule/conv_vnni`` (``gemm_vnni``) runs on VNNI, the zero points' shares
subtracted after. Shared by the importers that find them: ONNX's (QLinearConv, ConvInteger,
MatMulInteger, a QDQ model's Conv / MatMul: ``onnx/qdq_vnni``) and torch's (a QAT model's
fake-quantized conv / linear: ``torch/aten_fake_quant_conv``). ``ctx`` is either importer's
context (``emit``, ``shape``, ``dtype``)."""

from __future__ import annotations

import numpy as np

from ...frontend_common.onnx_quant import MatmulVnniPlan, VnniConvPlan
from .. import op as _op
from ..expr import const

__all__ = ["int_conv", "int_matmul", "window_sums"]


def window_sums(ctx, x, kernel, strides, pads, dil):
    """The int32 sums of the uint8 ``x`` (NCHW) over each output pixel's window (all input
    channels x the filter's taps; the conv's zero ``pads``, ONNX-ordered): ``[N, 1, OH, OW]``,
    what a weight zero point multiplies (``VnniConvPlan.window_weight``). The channels are
    summed first, then the taps by a one-channel int32 conv of ones."""
    sums = ctx.emit(_op.sum(_op.astype(x, "int32"), axis=[1], keepdims=True))
    if list(kernel) == [1, 1] and list(strides) == [1, 1] and not any(pads):
        return sums
    ones = const(np.ones((1, 1, *kernel), "int32"))
    return ctx.emit(_op.nn.conv2d(sums, ones, strides, list(pads), dil, 1, out_dtype="int32"))


def int_conv(ctx, x, x_zv, wv, strides, pads, dil, w_dtype: str = "int8",
             w_zv=None):
    """``onnx_quant.vnni_conv``'s form (``VnniConvPlan``): the int32 conv of the uint8 input
    ``x`` (an int8 one shifted into uint8), padded with its zero point ``x_zv`` where that is
    not 0 (or, a small output, by the conv with zero bytes, the zero point's share subtracted
    per output element), and the constant 8-bit weight ``wv`` (numpy, of ``w_dtype``, zero points ``w_zv``:
    the plan's int8 weight), less ``x_zp * sum(w)`` per output channel and the weight's zero
    points times the input's window sums. ``pads`` ONNX's (top, left, bottom, right)."""
    hw = ctx.shape(x)[2:]
    geometry = ([int(d) for d in hw], [int(v) for v in strides], [int(v) for v in dil]) \
        if all(isinstance(d, (int, np.integer)) for d in hw) else None
    plan = VnniConvPlan(ctx.dtype(x), x_zv, wv, pads, w_dtype, w_zv, geometry)
    if plan.shift:
        x = ctx.emit(_op.astype(_op.add(_op.astype(x, "int16"), const(np.array(128, "int16"))),
                                "uint8"))
    if plan.pad_value is not None:
        t, left, b, r = plan.pads
        x = ctx.emit(_op.nn.pad(x, [0, 0, 0, 0, t, b, left, r], float(plan.pad_value)))
    y = ctx.emit(_op.nn.conv2d(x, const(plan.weight), strides, list(plan.conv_pads), dil, 1,
                               out_dtype="int32"))
    if plan.window_weight is not None:
        sums = window_sums(ctx, x, np.shape(wv)[2:], strides, plan.conv_pads, dil)
        y = ctx.emit(_op.subtract(y, _op.multiply(sums, const(plan.window_weight))))
    sums = plan.zero_point_sums
    return y if sums is None else ctx.emit(_op.subtract(y, const(sums)))


def int_matmul(ctx, a, a_zp, a_zv, bv, b_dtype: str = "int8", b_zv=None):
    """``onnx_quant.vnni_matmul``'s form (``MatmulVnniPlan``): the int32 matmul of the uint8
    rows ``a`` (an int8 A shifted into uint8) and the constant weight ``bv`` ((K, N), numpy,
    of ``b_dtype``; a uint8 one shifted into int8), less the zero point ``a_zp`` (value
    ``a_zv``, ``UNKNOWN`` when known only at run time: ``ctx.expr(a_zp)`` reads it, the ONNX
    importer's) times the weight's column sums, and the weight's zero point ``b_zv`` (value)
    times the rows' sums."""
    plan = MatmulVnniPlan(ctx.dtype(a), a_zv, bv, b_dtype, b_zv)
    if plan.shift:
        a = ctx.emit(_op.astype(_op.add(_op.astype(a, "int16"), const(np.array(128, "int16"))),
                                "uint8"))
    y = ctx.emit(_op.matmul(a, const(plan.weight), out_dtype="int32"))
    if plan.row_sum_weight is not None:
        sums = ctx.emit(_op.sum(_op.astype(a, "int32"), axis=[-1], keepdims=True))
        y = ctx.emit(_op.subtract(y, _op.multiply(sums, const(plan.row_sum_weight))))
    if plan.constant_correction is not None:
        return ctx.emit(_op.subtract(y, const(plan.constant_correction)))
    if not plan.runtime_zero_point:
        return y
    zp = _op.reshape(_op.astype(ctx.expr(a_zp), "int32"), ctx.shape_expr([]))
    if plan.zero_point_offset:
        zp = _op.add(zp, const(np.array(plan.zero_point_offset, "int32")))
    return ctx.emit(_op.subtract(y, _op.multiply(ctx.emit(zp), const(plan.column_sums))))
