"""Quantized averaging and resampling operators with LiteRT's own integer results
(AVERAGE_POOL_2D, MEAN, SUM, RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR on int8 / uint8;
AVERAGE_POOL_2D on int16 too).

Each follows the arithmetic of the kernel LiteRT runs on x86 (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``):

- AVERAGE_POOL_2D: the window's sum of the raw 8-bit values (zero point included) over its
  in-bounds taps, divided rounding half away from zero; the output's parameters only clamp
  (LiteRT neither requantizes nor checks that they match the input's);
- MEAN over H and W of a 4-D tensor with kept dims: the raw sum times a multiplier for
  in_scale / (count * out_scale) plus a bias, the blocks of 16 channels rounding their final
  shift half up (the NEON path), the rest half away; any other MEAN: the sum less count * zero
  point, times in_scale / out_scale folded with 1 / count into one fixed-point multiplier;
- SUM: float32, ``round(sum * scale + bias)`` with TFLite's own constants;
- RESIZE_BILINEAR: int8 in 10-bit fixed point (``ResizeBilinearInteger``), uint8 in float32
  weights (TFLite's per-position products, + 0.5, truncated); both on the raw values, the
  output's parameters ignored; RESIZE_NEAREST_NEIGHBOR copies raw values too.

Over sizes known only when the model runs (``shape_dict`` -1), the same arithmetic: the
count-dependent multipliers of MEAN / SUM and the resize taps computed then by LiteRT's own
formulas (float32 steps rounded as LiteRT rounds them, frexp exact by comparisons).

Through float (dequantize, the float op, quantize) they were 1-3 steps off LiteRT on 1-33% of
the values (``benchmarks``-free measurements: ``tests/relay/frontend/test_tflite_exact_ops.py``)."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import QRANGE
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from . import fixed_point as fp
from .tensor_data import infer_shape

FLOAT32_WINDOW = 2048  # the largest pool window whose float32 average still rounds exactly


def _c(v, dtype: str):
    return _expr.const(np.asarray(v, dtype), dtype)


def _saturate(v, dtype: str, qlo: int, qhi: int):
    return _op.cast(_op.clip(v, float(qlo), float(qhi)), dtype)


# ------------------------------------------------------------------ AVERAGE_POOL_2D
def average_pool(x, dtype: str, layout: str, window, strides, pads, qlo: int, qhi: int):
    """TFLite's quantized average pool of the raw values ``x``: (sum + count / 2) / count for a
    positive sum, (sum - count / 2) / count (C's truncating division) for a negative one, over
    the in-bounds taps.

    Computed as the float average ``q`` (``avg_pool2d`` without the padding) rounded as
    ``sign(q) * floor(|q| + 1/2 + e)``, ``e = 1 / (4 * window)``: the float error (a few units
    of the last place of |q| < 256: below 2**-14 in float32) is smaller than ``e``, so exact
    halves round away from zero, and a quotient off a half by at least 1 / (2 * count) stays on
    its side. float64 beyond ``FLOAT32_WINDOW`` taps, and for int16 (|q| < 2**15: float32's
    error there reaches 2**-9)."""
    taps = int(window[0]) * int(window[1])
    ft = pool_float(taps, dtype)
    q = _nn.avg_pool2d(_op.cast(x, ft), tuple(window), tuple(strides), (1, 1), tuple(pads),
                       layout=layout, count_include_pad=False)
    return round_average(q, taps, dtype, qlo, qhi)


def pool_float(taps: int, dtype: str) -> str:
    """The float type ``average_pool`` averages in (see there)."""
    return "float32" if taps <= FLOAT32_WINDOW and dtype != "int16" else "float64"


def round_average(q, taps: int, dtype: str, qlo: int, qhi: int):
    """The float window averages ``q`` (of ``taps``-tap windows, in ``pool_float``) rounded
    as TFLite's integer average pool does (``average_pool``), saturated."""
    ft = pool_float(taps, dtype)
    half = _c(0.5 + 1.0 / (4 * taps), ft)
    if QRANGE[dtype][0] == 0:  # (uint8: never negative)
        r = _op.floor(_op.add(q, half))
    else:
        r = _op.multiply(_op.sign(q), _op.floor(_op.add(_op.abs(q), half)))
    return _saturate(r, dtype, qlo, qhi)


# ------------------------------------------------------------------ MEAN and SUM
def _normalize(axes, ndim: int) -> list[int]:
    return sorted({int(a) % ndim for a in axes})


def is_fast_mean(tfl_shape, tfl_axes, keep: bool) -> bool:
    """Does LiteRT take its optimized 4-D path (kept dims, axes exactly H and W of NHWC)?"""
    return keep and len(tfl_shape) == 4 and _normalize(tfl_axes, 4) == [1, 2]


def _int_sum(x, axes, keep: bool):
    return _op.sum(_op.cast(x, "int32"), axes, keepdims=keep)


def mean(x, axes, keep: bool, dtype: str, qi, qo, fast: bool, channel_axis: int,
         channels: int):
    """TFLite's quantized MEAN of ``x`` over ``axes`` (of its layout); ``fast``: LiteRT's
    optimized 4-D H/W path (``is_fast_mean``), whose channels lie along ``channel_axis``.
    ``qi`` / ``qo``: (scale, zero point)."""
    f32 = np.float32
    shape = infer_shape(x)
    count = None if any(shape[a] is None for a in axes) else \
        int(np.prod([shape[a] for a in axes]))
    acc = _op.cast(_int_sum(x, axes, keep), "int64")
    si, so = f32(qi[0]), f32(qo[0])
    if fast:
        t = f32(f32(f32(qi[1]) * si) / so)
        t = t + f32(0.5) if t > 0 else t - f32(0.5)
        bias = qo[1] - int(t)
        blocks = (np.arange(channels) < channels // 16 * 16).astype("int64")
        mask_shape = [1] * len(infer_shape(acc))
        mask_shape[channel_axis] = channels
        mask = _c(blocks.reshape(mask_shape), "int64")
        if count is None:  # the multiplier of the count the model runs with
            m0, shift = _f32_quantize_multiplier(_op.divide(_c(si, "float32"), _op.multiply(
                _op.cast(_run_time_count(x, axes), "float32"), _c(so, "float32"))))
            v = fp.multiply_run_time_expr(acc, m0, shift, mask)
        else:
            m0, shift = fp.quantize_multiplier(float(si / (f32(count) * so)))
            v = fp.multiply_expr(acc, m0, shift, mask)
    else:
        m0, shift = fp.quantize_multiplier(float(np.float64(si) / np.float64(so)))
        if count is None:
            n = _run_time_count(x, axes)
            k = _op.minimum(_floor_log2(n), _i64(min(32, 31 + shift)))  # (bit_length - 1)
            m1 = _op.floor_divide(_op.left_shift(_i64(m0), k), n)
            acc = _op.subtract(acc, _op.multiply(n, _i64(qi[1])))
            v = fp.multiply_run_time_expr(acc, m1, _op.subtract(_i64(shift), k))
        else:
            k = min(count.bit_length() - 1, 32, 31 + shift)
            m1 = (m0 << k) // count
            acc = _op.subtract(acc, _c(qi[1] * count, "int64"))
            v = fp.multiply_expr(acc, m1, shift - k)
        bias = qo[1]
    return _saturate(_op.add(v, _c(bias, "int64")), dtype, *QRANGE[dtype])


def _run_time_count(x, axes):
    """The number of values each output of a reduction over ``axes`` sums, read from ``x``'s
    shape when the model runs (int64; an empty axis counts 1: the sum is 0 and the result the
    output's offset, where LiteRT would divide by zero)."""
    shape = _op.shape_of(x, "int64")
    n = None
    for a in axes:
        d = _op.take(shape, _c(a, "int64"), axis=0)
        n = d if n is None else _op.multiply(n, d)
    return _op.maximum(n, _c(1, "int64"))


def _floor_log2(n):
    """floor(log2(n)) of positive int64 values, by a binary search over shifts (six steps);
    0 for 0."""
    k = _c(0, "int64")
    for step in (32, 16, 8, 4, 2, 1):
        shifted = _op.right_shift(n, _c(step, "int64"))
        big = _op.greater(shifted, _c(0, "int64"))
        n = _op.where(big, shifted, n)
        k = _op.add(k, _op.multiply(_op.cast(big, "int64"), _c(step, "int64")))
    return k


def _f32_quantize_multiplier(m):
    """TFLite's QuantizeMultiplier of a positive float32 expression ``m`` (as a double):
    with ``t = floor(m * 2**32)`` (exact: a power-of-two product, then C's truncation),
    ``floor(log2 m) = floor(log2 t) - 32``; frexp's exponent is one more, and the Q31
    significand ``m * 2**(62 - floor(log2 t))`` is exact (a 24-bit significand in
    [2**30, 2**31): no rounding, never 2**31); below 2**-32 (shift < -31) (0, 0). Integer
    and float products only, so it lowers natively (a bit cast runs in numpy); multipliers of
    2**31 and more are out of its range (LiteRT saturates them). Returns int64 (m0, shift)."""
    mf = _op.cast(m, "float64")
    t = _op.cast(_op.multiply(mf, _c(2.0**32, "float64")), "int64")
    lg = _floor_log2(t)
    shift = _op.subtract(lg, _c(31, "int64"))
    tiny = _op.less(t, _c(1, "int64"))
    zero = _c(0, "int64")
    scale = _op.cast(_op.left_shift(_c(1, "int64"), _op.subtract(_c(62, "int64"), lg)),
                     "float64")
    m0 = _op.cast(_op.multiply(mf, scale), "int64")
    return _op.where(tiny, zero, m0), _op.where(tiny, zero, shift)


def reduce_sum(x, axes, keep: bool, dtype: str, qi, qo):
    """TFLite's quantized SUM: float32 ``round(sum * scale + bias) + out zero point``, scale =
    in_scale / out_scale, bias = -in zero point * scale * count (TFLite's order), rounding half
    away from zero, saturated."""
    f32 = np.float32
    shape = infer_shape(x)
    scale = f32(f32(qi[0]) / f32(qo[0]))
    if any(shape[a] is None for a in axes):  # the count the model runs with, as TFLite's
        # float32 product (rounded once: not fused into the add below)
        count = _op.cast(_run_time_count(x, axes), "float32")
        bias = _f32_product(_c(f32(f32(-qi[1]) * scale), "float32"), count)
    else:
        count = int(np.prod([shape[a] for a in axes]))
        bias = _c(f32(f32(f32(-qi[1]) * scale) * f32(count)), "float32")
    s = _op.cast(_int_sum(x, axes, keep), "float64")
    # the float32 product rounded once (exact in float64: a sum below 2**24 times 24 bits); a
    # float32 multiply feeding the add would be contracted into a fused multiply-add (5-8 of
    # 99 sums a step off)
    p = _op.cast(_op.multiply(s, _c(np.float64(scale), "float64")), "float32")
    v = _op.add(p, bias)
    r = _op.multiply(_op.sign(v), _op.floor(_op.add(_op.abs(v), _c(0.5, "float32"))))
    return _saturate(_op.add(r, _c(qo[1], "float32")), dtype, *QRANGE[dtype])


# ------------------------------------------------------------------ RESIZE_BILINEAR
def _float_taps(n_in: int, n_out: int, align: bool, half: bool):
    """TFLite's ComputeInterpolationValues (float32) per output position: lower and upper
    source index and the fraction ``input - lower``."""
    f32 = np.float32
    scale = f32(n_in - 1) / f32(n_out - 1) if align and n_out > 1 else f32(n_in) / f32(n_out)
    lo, hi, frac = [], [], []
    for o in range(n_out):
        v = f32(f32(f32(o) + f32(0.5)) * scale - f32(0.5)) if half else f32(f32(o) * scale)
        a = max(int(np.floor(v)), 0)
        lo.append(a)
        hi.append(min(int(np.ceil(v)), n_in - 1))
        frac.append(f32(v - f32(a)))
    return np.array(lo), np.array(hi), np.array(frac, "float32")


def _integer_taps(n_in: int, n_out: int, align: bool, half: bool):
    """TFLite's ComputeInterpolationValuesInteger: positions in 1/1024ths of a source pixel;
    lower and upper index and the 10-bit fraction (negative before the first pixel's
    centre)."""
    if align and n_out > 1:
        scale = ((1 << 10) * (n_in - 1) + (n_out - 1) // 2) // (n_out - 1)
    else:
        scale = ((1 << 10) * n_in + n_out // 2) // n_out
    o = np.arange(n_out, dtype="int64")
    v = o * scale + scale // 2 - (1 << 9) if half else o * scale
    lo = np.maximum(np.trunc(v / 1024).astype("int64"), 0)
    hi = np.minimum(np.trunc((v + 1023) / 1024).astype("int64"), n_in - 1)
    return lo, hi, v - 1024 * lo


def _corners(x, rows, cols):
    """x[:, r, c] for the (row, column) index pairs: two takes per corner (NHWC)."""
    by_row = {k: _op.take(x, _c(r.astype("int32"), "int32"), axis=1, mode="fast")
              for k, r in rows.items()}
    return {(kr, kc): _op.take(by_row[kr], _c(c.astype("int32"), "int32"), axis=2, mode="fast")
            for kr in rows for kc, c in cols.items()}


def resize_bilinear(x, dtype: str, size, align: bool, half: bool):
    """TFLite's quantized RESIZE_BILINEAR of the raw NHWC values ``x`` to ``size`` (int8: the
    integer kernel; uint8: the float32 one)."""
    _, h, w, _ = infer_shape(x)
    oh, ow = size
    if dtype == "int8":
        (y0, y1, dy), (x0, x1, dx) = (_integer_taps(h, oh, align, half),
                                      _integer_taps(w, ow, align, half))
        g = _corners(_op.cast(x, "int32"), {0: y0, 1: y1}, {0: x0, 1: x1})
        wy = {0: 1024 - dy, 1: dy}
        wx = {0: 1024 - dx, 1: dx}

        def along(v, wt, axis):
            shape = [1, 1, 1, 1]
            shape[axis] = -1
            return _op.multiply(v, _c(wt.reshape(shape).astype("int32"), "int32"))

        return _integer_blend(g, wy, wx, along, dtype)
    f32 = np.float32
    (y0, y1, fy), (x0, x1, fx) = _float_taps(h, oh, align, half), _float_taps(w, ow, align, half)
    g = _corners(_op.cast(x, "float64"), {0: y0, 1: y1}, {0: x0, 1: x1})
    wy = {0: f32(1) - fy, 1: fy}
    wx = {0: f32(1) - fx, 1: fx}
    acc = None
    for ky, kx in ((0, 0), (0, 1), (1, 0), (1, 1)):  # TFLite's order of the four terms
        wt = (wy[ky][:, None] * wx[kx][None, :]).astype("float32").reshape(1, oh, ow, 1)
        # the float32 product as TFLite rounds it: exact in float64 (8 x 24 bits), then
        # rounded once; a float32 multiply feeding the add would be contracted into a fused
        # multiply-add (the codegen's "contract" flag) that skips this rounding (1 of 320
        # values a step off)
        p = _op.cast(_op.multiply(g[ky, kx], _c(wt.astype("float64"), "float64")), "float32")
        acc = p if acc is None else _op.add(acc, p)
    v = _op.floor(_op.add(acc, _c(0.5, "float32")))  # (C's truncation: >= -1/2 here)
    return _saturate(v, dtype, *QRANGE[dtype])


# ------------------------------------------------------------------ RESIZE_BILINEAR, run-time sizes
def _i64(v):
    return _c(v, "int64")


def _run_time_integer_taps(n_in, n_out, align: bool, half: bool):
    """``_integer_taps`` on run-time sizes (int64 scalars): the same integer formulas, the
    output positions an ``arange`` over ``n_out``."""
    one = _i64(1)
    base = _op.floor_divide(_op.add(_op.multiply(_i64(1 << 10), n_in), _op.floor_divide(
        n_out, _i64(2))), n_out)
    if align:  # (n_out > 1 only; one output position takes the plain scale)
        d = _op.maximum(_op.subtract(n_out, one), one)
        corner = _op.floor_divide(_op.add(_op.multiply(_i64(1 << 10), _op.subtract(n_in, one)),
                                          _op.floor_divide(d, _i64(2))), d)
        scale = _op.where(_op.greater(n_out, one), corner, base)
    else:
        scale = base
    o = _op.arange(_i64(0), n_out, one, dtype="int64")
    v = _op.multiply(o, scale)
    if half:
        v = _op.subtract(_op.add(v, _op.floor_divide(scale, _i64(2))), _i64(1 << 9))
    # v >= -512: floor and C's truncating division agree once clamped at 0
    lo = _op.maximum(_op.floor_divide(v, _i64(1024)), _i64(0))
    hi = _op.minimum(_op.floor_divide(_op.add(v, _i64(1023)), _i64(1024)),
                     _op.subtract(n_in, one))
    return lo, hi, _op.subtract(v, _op.multiply(lo, _i64(1024)))


def _f32_product(a, b):
    """a * b of two float32 values rounded once to float32: exact in float64 first, so the
    code generator cannot contract it into a fused multiply-add with what follows."""
    return _op.cast(_op.multiply(_op.cast(a, "float64"), _op.cast(b, "float64")), "float32")


def _run_time_float_taps(n_in, n_out, align: bool, half: bool):
    """``_float_taps`` on run-time sizes: TFLite's float32 ComputeInterpolationValues, each
    float32 operation rounded as its own."""
    f_in, f_out = _op.cast(n_in, "float32"), _op.cast(n_out, "float32")
    one = _c(1.0, "float32")
    base = _op.divide(f_in, f_out)
    if align:
        corner = _op.divide(_op.subtract(f_in, one),
                            _op.maximum(_op.subtract(f_out, one), one))
        scale = _op.where(_op.greater(n_out, _i64(1)), corner, base)
    else:
        scale = base
    o = _op.cast(_op.arange(_i64(0), n_out, _i64(1), dtype="int64"), "float32")
    if half:
        v = _op.subtract(_f32_product(_op.add(o, _c(0.5, "float32")), scale),
                         _c(0.5, "float32"))
    else:
        v = _f32_product(o, scale)
    a = _op.maximum(_op.floor(v), _c(0.0, "float32"))
    hi = _op.minimum(_op.cast(_op.ceil(v), "int64"), _op.subtract(n_in, _i64(1)))
    return _op.cast(a, "int64"), hi, _op.subtract(v, a)


def _integer_blend(g, wy, wx, along, dtype: str):
    """TFLite's 8-bit bilinear blend of the four corners ``g[(row, col)]`` (int32) by the
    weights in 1/1024ths ``wy`` / ``wx`` (``along(v, weights, axis)`` multiplies them in): the
    four products in int32 (|v| * 1536**2 at most), rows first, then columns (the same integer
    as TFLite's four-term sum), divided by 2**20 rounding half away from zero, saturated."""
    rows = {kc: _op.add(along(g[0, kc], wy[0], 1), along(g[1, kc], wy[1], 1)) for kc in (0, 1)}
    v = _op.add(along(rows[0], wx[0], 2), along(rows[1], wx[1], 2))
    half_unit = _c(1 << 19, "int32")
    pos = _op.right_shift(_op.add(v, half_unit), _c(20, "int32"))
    neg = _op.negative(_op.right_shift(_op.subtract(half_unit, v), _c(20, "int32")))
    out = _op.where(_op.greater_equal(v, _c(0, "int32")), pos, neg)
    return _saturate(out, dtype, *QRANGE[dtype])


def _along(v, wt, axis: int):
    """``v`` times the per-position weights ``wt`` (1-D) broadcast along ``axis`` of NHWC."""
    shape = [1, 1, 1, 1]
    shape[axis] = -1
    return _op.multiply(v, _op.reshape(wt, shape))


def resize_bilinear_at_run_time(x, dtype: str, size, align: bool, half: bool):
    """``resize_bilinear`` where the input's H / W or the output ``size`` (an int expression of
    2 values, or a pair of ints) are known only when the model runs: the taps computed then by
    the same integer / float32 formulas, gathered by ``take``; the same results."""
    shape = _op.shape_of(x, "int64")
    if not isinstance(size, _expr.Expr):
        size = _c(np.asarray(size, "int64"), "int64")
    size = _op.cast(size, "int64")
    n_in = [_op.take(shape, _i64(a), axis=0) for a in (1, 2)]
    n_out = [_op.take(size, _i64(a), axis=0) for a in (0, 1)]
    if dtype == "int8":
        (y0, y1, dy), (x0, x1, dx) = [_run_time_integer_taps(i, o, align, half)
                                      for i, o in zip(n_in, n_out, strict=True)]
        xi = _op.cast(x, "int32")
        rows = {0: _op.take(xi, y0, axis=1, mode="fast"), 1: _op.take(xi, y1, axis=1, mode="fast")}
        g = {(r, c): _op.take(rows[r], idx, axis=2, mode="fast")
             for r in (0, 1) for c, idx in ((0, x0), (1, x1))}
        dy, dx = _op.cast(dy, "int32"), _op.cast(dx, "int32")
        unit = _c(1024, "int32")
        wy = {0: _op.subtract(unit, dy), 1: dy}
        wx = {0: _op.subtract(unit, dx), 1: dx}
        return _integer_blend(g, wy, wx, _along, dtype)
    (y0, y1, fy), (x0, x1, fx) = [_run_time_float_taps(i, o, align, half)
                                  for i, o in zip(n_in, n_out, strict=True)]
    xf = _op.cast(x, "float64")
    rows = {0: _op.take(xf, y0, axis=1, mode="fast"), 1: _op.take(xf, y1, axis=1, mode="fast")}
    g = {(r, c): _op.take(rows[r], idx, axis=2, mode="fast")
         for r in (0, 1) for c, idx in ((0, x0), (1, x1))}
    one = _c(1.0, "float32")
    wy = {0: _op.subtract(one, fy), 1: fy}
    wx = {0: _op.subtract(one, fx), 1: fx}
    acc = None
    for ky, kx in ((0, 0), (0, 1), (1, 0), (1, 1)):  # TFLite's order of the four terms
        wt = _f32_product(_op.reshape(wy[ky], (1, -1, 1, 1)), _op.reshape(wx[kx], (1, 1, -1, 1)))
        p = _op.cast(_op.multiply(g[ky, kx], _op.cast(wt, "float64")), "float32")
        acc = p if acc is None else _op.add(acc, p)
    v = _op.floor(_op.add(acc, _c(0.5, "float32")))
    return _saturate(v, dtype, *QRANGE[dtype])
