"""8-bit L2_NORMALIZATION as LiteRT's integer kernels compute it (through float it was a step
off on 28 of 2688 uint8 values, and on 3% of int8 rows of 9000): per row, the sum of squares of x - zero point; its inverse square
root as a Q31 multiplier and a right shift (GetInvSqrtQuantizedMultiplierExp: the sum
normalized into [2**27, 2**29) by pairs of bits, five Newton steps in gemmlowp's 3-integer-bit
fixed point, times sqrt(2) / 2); each value's x - zero point rescaled by it (``l2_normalize``),
saturated.

Everything runs on the per-row sums (int64 Relay ops, shifts chosen per row with ``where``
steps whose count is fixed at import)."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from .tensor_data import infer_shape

I32 = (-(2**31), 2**31 - 1)
HALF_SQRT2_Q31 = 1518500250  # round(sqrt(2) / 2 * 2**31)


def _c(v):
    return _expr.const(np.asarray(v, "int64"), "int64")


def _srdhm(a, b):
    """gemmlowp's SaturatingRoundingDoublingHighMul of int32 values held in int64 (rounding
    half up: a nudge of 2**30, 1 - 2**30 below zero, then truncation)."""
    ab = _op.multiply(a, b)
    nonneg = _op.greater_equal(ab, _c(0))
    num = _op.add(ab, _op.where(nonneg, _c(1 << 30), _c(1 - (1 << 30))))
    pos = _op.right_shift(num, _c(31))
    neg = _op.negative(_op.right_shift(_op.negative(num), _c(31)))
    return _op.where(_op.greater_equal(num, _c(0)), pos, neg)


def _saturating_shift_left(x, bits: int):
    return _op.clip(_op.left_shift(x, _c(bits)), float(I32[0]), float(I32[1]))


def _inverse_sqrt(total, max_total: int):
    """(Q31 multiplier, right shift) of 1 / sqrt(total) per element of the int64 ``total``
    (sums of squares, at most ``max_total``)."""
    v, shift = total, _c(11)
    big = 0
    while (max_total >> (2 * big)) >= 1 << 29:
        big += 1
    for _ in range(big):  # (v /= 4 while v >= 2**29)
        cond = _op.greater_equal(v, _c(1 << 29))
        v = _op.where(cond, _op.right_shift(v, _c(2)), v)
        shift = _op.add(shift, _op.cast(cond, "int64"))
    for _ in range(13):  # (left by pairs of bits into [2**27, 2**29))
        cond = _op.logical_and(_op.less(v, _c(1 << 27)), _op.greater(v, _c(1)))
        v = _op.where(cond, _op.left_shift(v, _c(2)), v)
        shift = _op.subtract(shift, _op.cast(cond, "int64"))
    x_in = _op.right_shift(v, _c(1))
    half_in = _op.right_shift(_op.add(x_in, _c(1)), _c(1))  # (x_in >= 0: rounding half up)
    three_halves = _c((1 << 28) + (1 << 27))
    x = _c(1 << 28)
    for _ in range(5):
        x3 = _saturating_shift_left(_srdhm(_srdhm(x, x), x), 6)
        x = _saturating_shift_left(
            _op.subtract(_srdhm(three_halves, x), _srdhm(half_in, x3)), 3)
    x = _srdhm(x, _c(HALF_SQRT2_Q31))
    neg = _op.less(shift, _c(0))
    x = _op.where(neg, _op.left_shift(x, _op.negative(_op.minimum(shift, _c(0)))), x)
    shift = _op.maximum(shift, _c(0))
    small = _op.less_equal(total, _c(1))  # (0 and 1: the largest multiplier, no shift)
    return _op.where(small, _c(I32[1]), x), _op.where(small, _c(0), shift)


def _rounding_shift_right(h, right):
    """gemmlowp's RoundingDivideByPOT by the per-row int64 amounts ``right`` (>= 0)."""
    has_shift = _op.greater(right, _c(0))
    half = _op.where(has_shift, _op.left_shift(_c(1), _op.maximum(
        _op.subtract(right, _c(1)), _c(0))), _c(0))
    away = _op.where(has_shift, _op.right_shift(h, _c(63)), _c(0))  # (-1 below zero)
    return _op.right_shift(_op.add(_op.add(h, half), away), right)


def l2_normalize(x, zero_point: int, dtype: str):
    """LiteRT's 8-bit L2_NORMALIZATION of ``x`` over its last axis (output scale 1/128, zero
    point 128 for uint8, 0 for int8, as TFLite requires). uint8 rescales 128 * (x - zero
    point) and shifts right; int8 takes MultiplyByQuantizedMultiplier with the shift less 7
    (a left shift before the high multiply where that is positive)."""
    depth = int(infer_shape(x)[-1])
    d = _op.subtract(_op.cast(x, "int64"), _c(zero_point))
    total = _op.sum(_op.multiply(d, d), axis=[-1], keepdims=True)
    lo = -128 if dtype == "int8" else 0
    worst = max(zero_point - lo, lo + 255 - zero_point)
    mult, right = _inverse_sqrt(total, depth * worst * worst)
    if dtype == "uint8":
        r = _rounding_shift_right(_srdhm(_op.multiply(d, _c(128)), mult), right)
        return _op.cast(_op.clip(_op.add(r, _c(128)), 0.0, 255.0), "uint8")
    left = _op.maximum(_op.subtract(_c(7), right), _c(0))
    h = _srdhm(_op.left_shift(d, left), mult)
    r = _rounding_shift_right(h, _op.maximum(_op.subtract(right, _c(7)), _c(0)))
    return _op.cast(_op.clip(r, -128.0, 127.0), "int8")
