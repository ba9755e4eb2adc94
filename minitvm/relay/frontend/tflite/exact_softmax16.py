"""int16 SOFTMAX as LiteRT's integer kernel (``SoftmaxInt16``), row by row along the last
axis:

1. each value's difference from the row's largest, rescaled by in_scale * beta / (10 / 65535)
   in fixed point (MultiplyByQuantizedMultiplier) so that [-10, 0] spans 65535 steps, recentred
   by 32767 and saturated to int16;
2. exp of that through LiteRT's interpolated 16-bit table (513 anchors of exp over [-10, 0]
   in double, looked up as ``exact_lut16.interpolate``), summed per row;
3. the sum normalized by its leading zeros (the row's ``clz``), 14 bits dropped rounding half
   up, less 1.5 * 2**16, and 1 / (1 + x) of that through a second interpolated table;
4. each exp times that reciprocal, shifted right by 31 - clz rounding half up, clamped to
   [0, 32767] (the output is quantized 1 / 32768, zero point 0).

Both tables are 65536 results built at import; the op is two ``take``s, integer arithmetic and
two row reductions. Through float it was up to 145 steps off LiteRT on 9% of values."""

from __future__ import annotations

import math

import numpy as np

from ... import expr as _expr
from ... import op as _op
from . import exact_lut16
from . import fixed_point as fp
from .exact_binary import quantize_multiplier


def _anchors(fn, lo: float, hi: float) -> np.ndarray:
    """513 anchors of ``fn`` over [lo, hi] in double (LiteRT's softmax tables: outputs in
    [-1, 1] as 65536 steps), each sample biased by half its interval's midpoint error as
    ``exact_lut16.populate`` (in float32 there) does; the last one unbiased."""
    def rnd(v):  # (half away from zero)
        return float(np.sign(v) * np.floor(abs(v) + 0.5))

    step, inv = (hi - lo) / 512, 65536.0 / 2.0
    lut = np.empty(513, "int64")
    for i in range(512):
        val, mid, nxt = fn(lo + i * step), fn(lo + i * step + step / 2), fn(lo + (i + 1) * step)
        interp = rnd((nxt * inv + rnd(val * inv)) / 2)
        lut[i] = min(max(rnd(val * inv) - rnd((interp - rnd(mid * inv)) / 2), -32768), 32767)
    lut[512] = min(max(rnd(fn(hi) * inv), -32768), 32767)
    return lut


def exp_table() -> np.ndarray:
    """exp over [-10, 0] at each int16 step (output 2 / 65535 per step), interpolated as
    LiteRT looks it up."""
    return exact_lut16.interpolate(_anchors(math.exp, -10.0, 0.0))


def reciprocal_table() -> np.ndarray:
    """1 / (1 + x) over [0, 1] at each int16 step. (Its anchors in double: two of 513 differ
    from float32's, which put 2 of 8286 outputs a step off LiteRT.)"""
    return exact_lut16.interpolate(_anchors(lambda v: 1.0 / (1.0 + v), 0.0, 1.0))


def _i64(v):
    return _expr.const(np.asarray(v, "int64"), "int64")


def _lookup(index, table: np.ndarray):
    """``table[index + 32768]`` of int64 ``index`` in int16's range, as int64."""
    i = _op.cast(_op.add(index, _i64(32768)), "int32")
    return _op.take(_expr.const(table.astype("int64"), "int64"), i, axis=0, mode="fast")


def softmax(x, in_scale: float, beta: float):
    """LiteRT's int16 softmax of ``x`` (int16, zero point 0) along its last axis: int16 values
    in 1 / 32768."""
    m0, shift = quantize_multiplier(np.float64(np.float32(in_scale)) *
                                    np.float64(np.float32(beta)) / (10.0 / 65535.0))
    v = _op.cast(x, "int64")
    diff = _op.subtract(v, _op.max(v, axis=[-1], keepdims=True))
    scaled = fp.multiply_expr(diff, m0, shift)
    exps = _lookup(_op.clip(_op.add(scaled, _i64(32767)), -32768.0, 32767.0), exp_table())
    total = _op.sum(exps, axis=[-1], keepdims=True)
    # the sum's bit length (32 - CountLeadingZeros): one compare per bit, per row
    bits = _op.sum(_op.cast(_op.greater_equal(_op.expand_dims(total, -1), _i64(
        np.left_shift(1, np.arange(32)))), "int64"), axis=[-1])
    headroom_plus_one = _op.subtract(_i64(32), bits)
    shifted = _op.right_shift(_op.add(_op.left_shift(total, _op.subtract(
        headroom_plus_one, _i64(1))), _i64(1 << 13)), _i64(14))
    recip = _lookup(_op.clip(_op.subtract(shifted, _i64((1 << 15) + (1 << 16))),
                             -32768.0, 32767.0), reciprocal_table())
    right = _op.subtract(bits, _i64(1))  # (31 - headroom_plus_one)
    half = _op.left_shift(_i64(1), _op.subtract(right, _i64(1)))
    out = _op.right_shift(_op.add(_op.multiply(exps, recip), half), right)
    return _op.cast(_op.clip(out, 0.0, 32767.0), "int16")
