"""Requantization of the integer products' sums as TFLite does it: ``quantize_multiplier``,
the exact ``fixed_point_multiply``, the float32 form with TFLite's double-rounding offset
(8-bit products) and LiteRT's 64-bit form of the 16x8 products (``_wide_requantize``)."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ..common import infer_dtype
from ..onnx.ops_extra import add_to_product
from . import (
    fixed_point,
    products16,
)
from .importer import (
    _per_axis,
)
from .quantized_tensor import QTensor, _activation_bounds, _clamp_fused, _saturate
from .tensor_data import infer_shape


def quantize_multiplier(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's QuantizeMultiplier, elementwise: ``m = m0 * 2**(shift - 31)`` with ``m0`` an
    int32 in [2**30, 2**31) (the fraction rounded half away from zero), as int64 arrays."""
    q, shift = np.frexp(np.asarray(m, "float64"))
    m0 = np.floor(q * 2.0**31 + 0.5).astype("int64")
    top = m0 == 2**31
    m0, shift = np.where(top, m0 // 2, m0), np.where(top, shift + 1, shift).astype("int64")
    tiny = shift < -31
    return np.where(tiny, 0, m0), np.where(tiny, 0, shift)


def fixed_point_multiply(acc, mult: np.ndarray, axis: int, nd: int, half_up=False):
    """TFLite's MultiplyByQuantizedMultiplier of the integers ``acc`` (int32, or float32
    holding integers) by ``mult`` (per tensor or along ``axis``), in int64: the doubling high
    multiply by m0 (rounding half up, (p + 2**30) >> 31), then the rounding right shift
    (half away from zero: + 2**(s-1) - 1 for negatives, >> s; where ``half_up`` (True, or a
    bool per multiplier), as NEON's rounding shift: + 2**(s-1), >> s)."""
    m0, shift = quantize_multiplier(mult)
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)

    def c(v):
        return _per_axis(np.asarray(v, "int64"), axis, nd, "int64")

    v = _op.cast(acc, "int64")
    if left.any():
        v = _op.left_shift(v, c(left))
    h = _op.right_shift(_op.add(_op.multiply(v, c(m0)), c(2**30)), c(31))
    if not right.any():
        return h
    half = np.where(right > 0, np.left_shift(1, np.maximum(right - 1, 0)), 0)
    away = (right > 0) & np.logical_not(np.broadcast_to(half_up, right.shape))
    if not away.any():
        return _op.right_shift(_op.add(h, c(half)), c(right))
    sign = _op.right_shift(h, c(63))  # -1 for negatives, else 0
    if not away.all():  # (no rounding where the shift is 0; half up where asked)
        sign = _op.multiply(sign, c(away.astype("int64")))
    return _op.right_shift(_op.add(_op.add(h, c(half)), sign), c(right))


def _requantize_acc(ctx, acc, acc_dt: str, bias, mult: np.ndarray, axis: int, q_out: QTensor,
                    ties_away: bool = False):
    """round((acc + bias) * mult) + zero point, clamped to the fused activation's range;
    ``mult`` per tensor or per channel along ``axis``. float32 and Relay's round (half to
    even), not TFLite's fixed point (``fixed_point_multiply``): that costs 1.47x on a uint8
    MobileNetV2 (int64 products in every conv's epilogue) for one-step differences."""
    nd = len(infer_shape(acc))
    if bias is not None:
        b = _per_axis(bias.astype(acc_dt), axis, nd, acc_dt)
        acc = add_to_product(acc, b, b.data.numpy())
    v = _op.cast(acc, "float32") if acc_dt != "float32" else acc
    v = _op.multiply(v, _per_axis(mult.astype("float32"), axis, nd, "float32"))
    bounds = _activation_bounds(ctx)
    if DOUBLE_ROUNDING:
        e = _per_axis(double_rounding_offset(mult), axis, nd, "float32")
        if ties_away:  # (gemmlowp's second rounding: half away from zero, so - e below 0)
            e = _op.where(_op.less(v, _expr.const(np.array(0.0, "float32"))), _op.negative(e), e)
        v = _op.add(v, e)
    return _saturate(_op.round(v), q_out, *bounds)


# add TFLite's double-rounding offset before the conv requantization's round (see below)
DOUBLE_ROUNDING = True


# 16x8 convs requantize their int32 sums in int32 (``fixed_point.multiply_wide_int32_expr``)
# where the bounds allow, else in float64 (False: always float64; the benchmark's baseline)
INT32_REQUANTIZE = True


def double_rounding_offset(mult: np.ndarray) -> np.ndarray:
    """e (float32, per multiplier) with ``round(acc * m + e)`` TFLite's requantization of the
    integer ``acc`` but for float32's own error at the boundary and exact ties.

    TFLite's int8 conv and fully connected kernels (ruy's multiplier) round twice, both times
    half up: for the multiplier m0 * 2**-(31+r), h = floor(acc * m0 / 2**31 + 1/2), then
    floor((h + 2**(r-1)) / 2**r); nested floors of integers make that floor(acc * m + 1/2 +
    e), e = 2**-(r+1). (BATCH_MATMUL's gemmlowp rounding shift rounds half away from zero:
    floor(acc * m + 1/2 - e) below zero.) So a value up to e under a half rounds up where one
    rounding (``round(acc * m)``) rounds it down: 12404 of 4.4M conv outputs and 5461 of 2.3M depthwise outputs a step off on an int8
    MobileNetV2 against LiteRT's kernels, 448 and 1 with e (one more add in the epilogue)."""
    _, shift = quantize_multiplier(np.asarray(mult).reshape(-1))
    return np.where(shift < 0, np.ldexp(1.0, np.minimum(shift, 0) - 1), 0.0).astype("float32")


def _wide_requantize(ctx, acc, bias, qx: QTensor, qw: QTensor, qo: QTensor, axis: int,
                     nd: int, w: np.ndarray):
    """A 16x8 product's exact sums ``acc`` (float64; a conv's int32) + the bias as LiteRT's
    int16 kernels finish them, per channel along ``axis``: the convs through the 64-bit
    MultiplyByQuantizedMultiplier (a Q15 multiplier, one rounding half up:
    ``fixed_point.multiply_wide``), FULLY_CONNECTED in double (the sum times the real
    multiplier, rounded half away from zero: 0 of 1.44M values off LiteRT; the Q15 form was
    off on 5%, Q31 fixed point on 0.15%); + the zero point, clamped to the fused activation's
    range. (float32, as the 8-bit products take it, was a step off on 2-4% of the outputs.)

    In float64, exactly: the Q15 multiplier times 2**-shift is a float64, and its product
    with a sum below 2**38 (bounded here from the weights ``w``, output channels first) is
    exact, so ``floor(acc * m + 1/2)`` is the integer form's result (a 16x8 MobileNetV2 1.07
    -> 1.00 ms against int64); past the bound, int64. A conv's int32 sums (``products16``)
    bounded below 2**31 with the bias take the integer form in int32 alone
    (``fixed_point.multiply_wide_int32_expr``: 16 lanes a vector where float64 has 8)."""
    mult = (np.float64(qx.s) * qw.scale.astype("float64") / np.float64(qo.s)).reshape(-1)
    bound = products16.channel_weight_span(w, qw.zp) * (32768 + abs(qx.z)) + (
        0 if bias is None else int(np.abs(bias).max(initial=0)))
    if infer_dtype(acc) == "int32":  # (a conv's int32 sums: ``products16``)
        m0, shift = quantize_multiplier(mult)
        if INT32_REQUANTIZE and ctx.name != "FULLY_CONNECTED" and bound < 2**31 and \
                fixed_point.int32_shifts(m0, shift):
            if bias is not None:
                acc = _op.add(acc, _per_axis(bias.astype("int32"), axis, nd, "int32"))
            v = fixed_point.multiply_wide_int32_expr(acc, m0, shift, axis, nd)
            if qo.z:
                v = _op.add(v, _expr.const(np.array(qo.z, "int32"), "int32"))
            return _clamp_fused(ctx, v, qo)
        acc = _op.cast(acc, "float64")
    if bias is not None:
        acc = _op.add(acc, _per_axis(bias.astype("float64"), axis, nd, "float64"))
    if ctx.name == "FULLY_CONNECTED":
        v = _op.multiply(acc, _per_axis(mult, axis, nd, "float64"))
        v = _op.multiply(_op.sign(v), _op.floor(_op.add(
            _op.abs(v), _expr.const(np.array(0.5, "float64"), "float64"))))
    elif bound < 2**38:
        reduced, total = fixed_point.reduced_multiplier(*quantize_multiplier(mult))
        m = np.ldexp(reduced.astype("float64"), -total)
        v = _op.floor(_op.add(_op.multiply(acc, _per_axis(m, axis, nd, "float64")),
                              _expr.const(np.array(0.5, "float64"), "float64")))
    else:
        v = fixed_point.multiply_wide_expr(_op.cast(acc, "int64"), *quantize_multiplier(mult),
                                           axis, nd)
        v = _op.cast(v, "float64")
    if qo.z:
        v = _op.add(v, _expr.const(np.array(qo.z, "float64"), "float64"))
    return _clamp_fused(ctx, v, qo)
