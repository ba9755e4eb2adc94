"""TFLite's (gemmlowp's) fixed-point primitives in numpy int64, step for step as its kernels
compute them, for the importer to evaluate TFLite's integer kernels at import (lookup tables,
constants) and for tests to check them.

Two roundings of the final right shift occur in LiteRT on x86: gemmlowp's ``RoundingDivideByPOT``
(half away from zero, the scalar kernels) and NEON's rounding shift ``vrshl`` (half up; LiteRT's
x86 build runs its NEON paths through NEON_2_SSE), which some vectorized kernels (MEAN) apply to
whole blocks of 16 channels."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from .exact_binary import quantize_multiplier

__all__ = ["quantize_multiplier", "multiply", "rounding_divide_by_pot",
           "rounding_doubling_high_mul16", "doubling_high_mul16", "saturating_left_shift16",
           "downscale_multiplier16", "multiply_expr", "inv_sqrt_multiplier_exp",
           "multiply_run_time_expr", "reduced_multiplier", "multiply_wide", "multiply_wide_expr", "checked_log2",
           "NEON_BLOCK"]

NEON_BLOCK = 16  # the 8-bit lanes of LiteRT's vectorized (NEON) requantizing loops

I16 = (-32768, 32767)


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLite's CheckedLog2 in float32: (is ``x`` a power of two within 1e-3 of its
    log2, that log2 rounded half away from zero)."""
    f = np.float32
    lg = f(np.log(f(x))) * (f(1.0) / f(np.log(f(2.0))))
    rounded = f(np.sign(lg) * np.floor(np.abs(lg) + f(0.5)))
    return bool(abs(lg - rounded) < f(1e-3)), int(rounded)


def rounding_divide_by_pot(x, exponent: int, half_up=False) -> np.ndarray:
    """``x / 2**exponent`` rounded half away from zero (gemmlowp), or half up (NEON's rounding
    shift) where ``half_up`` (a bool or a mask broadcasting against ``x``)."""
    x = np.asarray(x, "int64")
    if exponent <= 0:
        return x
    away = np.logical_not(half_up) & (x < 0)
    return (x + (1 << (exponent - 1)) - away) >> exponent


def multiply(x, m0: int, shift: int, half_up=False) -> np.ndarray:
    """MultiplyByQuantizedMultiplier of int64 ``x`` by the Q31 significand ``m0`` (any int32,
    not necessarily normalized) and exponent ``shift``: left shift, the doubling high multiply
    (``(x * m0 + 2**30) >> 31``: rounds half up, as gemmlowp's nudge and truncation do), then
    the rounding right shift (``rounding_divide_by_pot``)."""
    left, right = max(shift, 0), max(-shift, 0)
    high = ((np.asarray(x, "int64") << left) * m0 + 2**30) >> 31
    return rounding_divide_by_pot(high, right, half_up)


def rounding_doubling_high_mul16(a, b) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul of int16 values: ``a * b / 2**15`` rounded
    half up (a nudge of 2**14, 1 - 2**14 below zero, then C's truncating division), saturating
    the one overflow (-32768 * -32768)."""
    a, b = np.asarray(a, "int64"), np.asarray(b, "int64")
    ab = a * b
    num = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    out = np.sign(num) * (np.abs(num) >> 15)
    return np.where((a == b) & (a == I16[0]), I16[1], out)


def doubling_high_mul16(a, b) -> np.ndarray:
    """TFLite's SaturatingDoublingHighMul of int16 values: ``a * b / 2**15`` truncated toward
    zero (no rounding), saturating -32768 * -32768."""
    a, b = np.asarray(a, "int64"), np.asarray(b, "int64")
    ab = a * b
    out = np.sign(ab) * (np.abs(ab) >> 15)
    return np.where((a == b) & (a == I16[0]), I16[1], out)


def saturating_left_shift16(x, amount: int) -> np.ndarray:
    """``x * 2**amount`` saturated to int16."""
    return np.clip(np.asarray(x, "int64") << amount, *I16)


def downscale_multiplier16(m0: int) -> int:
    """DownScaleInt32ToInt16Multiplier: a Q31 significand rounded to Q15 (saturating)."""
    if m0 >= 2**31 - 1 - (1 << 15):
        return I16[1]
    return (m0 + (1 << 15)) >> 16


def srdhm32(a, b) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul of int32 values: ``a * b / 2**31`` rounded
    half up (a nudge of 2**30, 1 - 2**30 below zero, then truncation), saturating
    -2**31 * -2**31."""
    a, b = np.asarray(a, "int64"), np.asarray(b, "int64")
    num = a * b + np.where(a * b >= 0, 1 << 30, 1 - (1 << 30))
    out = np.sign(num) * (np.abs(num) >> 31)
    return np.where((a == b) & (a == -(2**31)), 2**31 - 1, out)


def _saturating_left32(x, bits: int) -> np.ndarray:
    return np.clip(np.asarray(x, "int64") << bits, -(2**31), 2**31 - 1)


def inv_sqrt_multiplier_exp(value: int) -> tuple[int, int]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp of a positive int32 with its shift reversed
    (a left shift, as MultiplyByQuantizedMultiplier takes it): 1 / sqrt(value) as a Q31
    multiplier and exponent. ``value`` is scaled into [2**27, 2**29) by pairs of bits, five
    Newton steps run in gemmlowp's 3-integer-bit fixed point, the result times sqrt(2) / 2."""
    if value <= 1:
        return 2**31 - 1, 0
    v, shift = int(value), 11
    while v >= 1 << 29:
        v //= 4
        shift += 1
    pairs = (32 - v.bit_length() - 1) // 2 - 1  # (leading zeros of the uint32, less one)
    shift -= pairs
    v <<= 2 * pairs
    x_in = v >> 1
    half_in = (x_in + 1) >> 1
    x = 1 << 28
    for _ in range(5):
        x3 = _saturating_left32(srdhm32(srdhm32(x, x), x), 6)
        x = _saturating_left32(srdhm32((1 << 28) + (1 << 27), x) - srdhm32(half_in, x3), 3)
    x = int(srdhm32(x, 1518500250))  # (sqrt(2) / 2 in Q31)
    if shift < 0:
        x, shift = x << -shift, 0
    return x, -shift


def _i64(v):
    return _expr.const(np.asarray(v, "int64"), "int64")


def multiply_expr(acc, m0: int, shift: int, half_up=None):
    """``multiply`` on the int64 Relay expression ``acc``: half away from zero (``half_up``
    None), half up (True), or half up where the int64 0/1 expression ``half_up`` is 1."""
    left, right = max(shift, 0), max(-shift, 0)
    v = acc if not left else _op.left_shift(acc, _i64(left))
    h = _op.right_shift(_op.add(_op.multiply(v, _i64(m0)), _i64(2**30)), _i64(31))
    if not right:
        return h
    rounded = _op.add(h, _i64(1 << (right - 1)))
    if half_up is not True:
        away = _op.right_shift(h, _i64(63))  # -1 below zero, else 0
        if half_up is not None:
            away = _op.multiply(away, _op.subtract(_i64(1), half_up))
        rounded = _op.add(rounded, away)
    return _op.right_shift(rounded, _i64(right))


def multiply_run_time_expr(acc, m0, shift, half_up=None):
    """``multiply_expr`` by a multiplier known only when the model runs: ``m0`` and ``shift``
    int64 scalar expressions (the shifts, the rounding nudge and its sign term chosen then)."""
    zero = _i64(0)
    left, right = _op.maximum(shift, zero), _op.maximum(_op.negative(shift), zero)
    h = _op.right_shift(_op.add(_op.multiply(_op.left_shift(acc, left), m0), _i64(2**30)),
                        _i64(31))
    shifts = _op.cast(_op.greater(right, zero), "int64")  # 0: no rounding shift at all
    nudge = _op.multiply(_op.left_shift(_i64(1), _op.maximum(_op.subtract(right, _i64(1)),
                                                             zero)), shifts)
    rounded = _op.add(h, nudge)
    if half_up is not True:
        away = _op.multiply(_op.right_shift(h, _i64(63)), shifts)  # -1 below zero, else 0
        if half_up is not None:
            away = _op.multiply(away, _op.subtract(_i64(1), half_up))
        rounded = _op.add(rounded, away)
    return _op.right_shift(rounded, right)


def reduced_multiplier(m0, shift) -> tuple[np.ndarray, np.ndarray]:
    """The 64-bit MultiplyByQuantizedMultiplier's form of Q31 multipliers (int64 arrays
    ``m0``, ``shift``): the significand rounded to Q15 (half up, 0x7FFF at the top) and the
    right shift of the product, ``15 - shift``."""
    m0 = np.asarray(m0, "int64")
    return np.where(m0 < 0x7FFF0000, (m0 + (1 << 15)) >> 16, 0x7FFF), \
        15 - np.asarray(shift, "int64")


def multiply_wide(x, m0, shift) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier of an int64 accumulator (its 16x8 convs and
    fully connected layers): ``(x * reduced + 2**(total - 1)) >> total`` with the Q15
    significand and total shift of ``reduced_multiplier``: one rounding, half up."""
    reduced, total = reduced_multiplier(m0, shift)
    return (np.asarray(x, "int64") * reduced + (1 << (total - 1))) >> total


def multiply_wide_expr(acc, m0, shift, axis: int, ndim: int):
    """``multiply_wide`` on the int64 Relay expression ``acc``, the multiplier per tensor or
    per channel along ``axis`` of its ``ndim`` dimensions."""
    reduced, total = reduced_multiplier(np.asarray(m0).reshape(-1),
                                        np.asarray(shift).reshape(-1))

    def c(v):
        if v.size == 1 or np.all(v == v[0]):
            return _i64(v[0])
        shape = [1] * ndim
        shape[axis] = v.size
        return _expr.const(v.astype("int64").reshape(shape), "int64")

    v = _op.add(_op.multiply(acc, c(reduced)), c(np.left_shift(1, total - 1)))
    return _op.right_shift(v, c(total))


# the total shifts ``multiply_wide_int32_expr`` takes: from 17 (the product's low 16 bits are
# shifted out whole) to 46 (its rounding term 2**(total - 17) stays below 2**30)
INT32_SHIFTS = (17, 46)


def int32_shifts(m0, shift) -> bool:
    """Are the total shifts of these Q31 multipliers all within ``INT32_SHIFTS``?"""
    _, total = reduced_multiplier(np.asarray(m0).reshape(-1), np.asarray(shift).reshape(-1))
    return INT32_SHIFTS[0] <= int(total.min(initial=INT32_SHIFTS[0])) and \
        int(total.max(initial=INT32_SHIFTS[1])) <= INT32_SHIFTS[1]


def multiply_wide_int32_expr(acc, m0, shift, axis: int, ndim: int):
    """``multiply_wide`` of the int32 Relay expression ``acc`` in int32 alone (no int64: twice
    the lanes a vector), total shifts within ``INT32_SHIFTS`` (``int32_shifts``).
    With ``acc = h * 2**16 + l`` (``l`` its low 16 bits, 0..65535) and the Q15 significand
    ``r < 2**15``, ``floor((acc * r + 2**(t-1)) / 2**t)`` is ``(h * r + (l * r >> 16) +
    2**(t-17)) >> (t-16)`` (floors of floors of powers of two; each term within int32)."""
    if not int32_shifts(m0, shift):
        raise ValueError("multiply_wide_int32_expr: a total shift is outside "
                         f"{INT32_SHIFTS}")
    reduced, total = reduced_multiplier(np.asarray(m0).reshape(-1),
                                        np.asarray(shift).reshape(-1))

    def c(v):
        v = np.asarray(v, "int64")
        if v.size == 1 or np.all(v == v[0]):
            return _expr.const(np.array(v.reshape(-1)[0], "int32"), "int32")
        shape = [1] * ndim
        shape[axis] = v.size
        return _expr.const(v.astype("int32").reshape(shape), "int32")

    high = _op.right_shift(acc, c(16))
    low = _op.bitwise_and(acc, c(0xFFFF))
    v = _op.add(_op.multiply(high, c(reduced)),
                _op.right_shift(_op.multiply(low, c(reduced)), c(16)))
    v = _op.add(v, c(np.left_shift(1, total - 17)))
    return _op.right_shift(v, c(total - 16))
