"""8-bit quantized DIV as LiteRT's integer kernel computes it: its result depends on the two
8-bit inputs only, so all 256 x 256 results are computed at import, step for step in numpy
int64, and the op becomes one ``take`` from that table.

LiteRT's kernel: both signs flipped where the divisor (less its zero point) is negative, the
divisor becomes a Q31 reciprocal (GetReciprocal:
gemmlowp's Newton iteration for 1 / (1 + x), three steps in 2-integer-bit fixed point) and a
shift; the dividend less its zero point is scaled up by its headroom (leading sign bits) and
multiplied by it (a rounding doubling high multiply), then rescaled by in1_scale / (in2_scale
* out_scale) and shifted right by the shifts combined: for a dividend within one of its zero
point that shift passes 31, past gemmlowp's range, and LiteRT's x86 build then saturates
(``_rounding_divide_by_pot``). Through float 284 of the 65536 pairs differed, up to 155
steps."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import QRANGE
from ... import expr as _expr
from ... import op as _op
from . import fixed_point as fp

I32 = (-(2**31), 2**31 - 1)


def _wrap32(v):
    """int64 values taken modulo 2**32 into int32's range (C's wrapping)."""
    return (np.asarray(v, "int64") + 2**31) % 2**32 - 2**31


def _sat_shift_left(v, bits: int):
    return np.clip(np.asarray(v, "int64") << bits, *I32)


def _leading_sign_bits(v: np.ndarray) -> np.ndarray:
    """CountLeadingSignBits of int32 values: the bits after the sign bit equal to it."""
    v = np.asarray(v, "int64")
    m = np.where(v >= 0, v, ~v)
    bits = np.zeros(m.shape, "int64")
    for b in range(32):
        bits = np.where(m >> b != 0, b + 1, bits)
    return 31 - bits


def reciprocal(x: int) -> tuple[int, int]:
    """TFLite's GetReciprocal(x, 31): (Q31 significand of 1 / x's scaled form, the bits of x
    above one) for a positive int32 ``x``."""
    headroom_plus_one = 32 - x.bit_length()
    bits_over_unit = 31 - headroom_plus_one
    a = ((x << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)  # (in [0, 2**31))
    half_den = (a + I32[1] + 1) // 2  # (RoundingHalfSum of a and F0's one, a sum >= 0)
    r = _wrap32(1515870810 + fp.srdhm32(half_den, -1010580540))  # 48/17 - 32/17 * d
    for _ in range(3):
        one_minus = _wrap32((1 << 29) - fp.srdhm32(half_den, r))
        r = _wrap32(r + _sat_shift_left(fp.srdhm32(r, one_minus), 2))
    return int(_sat_shift_left(r, 1)), bits_over_unit


def _rounding_divide_by_pot(v: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT (half away from zero) by per-element exponents as LiteRT
    runs it on x86 past its range too: the mask ``(1 << e) - 1`` in 64 bits truncated to
    int32 (all ones from e = 32), the shift of ``v`` taken modulo 32; no shift where an
    exponent is not positive."""
    e = np.maximum(exponent, 0)
    mask = _wrap32(np.left_shift(np.int64(1), np.minimum(e, 62)) - 1)
    threshold = (mask >> 1) + (v < 0)
    return (v >> (e & 31)) + ((v & mask) > threshold)


def table(dtype: str, q1, q2, qo, qlo: int, qhi: int) -> np.ndarray:
    """LiteRT's DIV of every pair ``[x1 - lo, x2 - lo]`` of ``dtype`` values; ``q*`` are (scale,
    zero point), ``qlo..qhi`` the output's (activation) range. A divisor at its zero point
    (LiteRT stops there) gives the output's zero point."""
    lo, hi = QRANGE[dtype]
    f32 = np.float32
    m0, out_shift = fp.quantize_multiplier(float(f32(q1[0]) / (f32(q2[0]) * f32(qo[0]))))
    d = np.arange(lo, hi + 1, dtype="int64") - q2[1]
    inv, bits = np.zeros(d.size, "int64"), np.zeros(d.size, "int64")
    for j, dj in enumerate(d.tolist()):
        if dj:
            inv[j], bits[j] = reciprocal(abs(dj))
    out = np.empty((d.size, d.size), "int64")
    for i, x1 in enumerate(range(lo, hi + 1)):
        n = np.where(d < 0, q1[1] - x1, x1 - q1[1])  # (both signs flipped below zero)
        headroom = _leading_sign_bits(n)
        unscaled = fp.srdhm32(_wrap32(n << headroom), inv)
        shift = out_shift - bits - headroom
        out[i] = qo[1] + _rounding_divide_by_pot(fp.srdhm32(unscaled, m0), -shift)
    out[:, d == 0] = qo[1]
    return np.clip(out, qlo, qhi).astype(dtype)


def lookup(x1, x2, values: np.ndarray, dtype: str):
    """``values[x1 - lo, x2 - lo]`` elementwise (broadcasting): one ``take`` of the flattened
    256 x 256 table."""
    lo = QRANGE[dtype][0]

    def index(x):
        i = _op.cast(x, "int32")
        return _op.subtract(i, _expr.const(np.array(lo, "int32"), "int32")) if lo else i

    flat = _op.add(_op.multiply(index(x1), _expr.const(np.array(256, "int32"), "int32")),
                   index(x2))
    return _op.take(_expr.const(values.reshape(-1)), flat, axis=0, mode="fast")
