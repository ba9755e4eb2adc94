"""The FakeQuantizationToInteger rules of the average pools (``nn.avg_pool2d``,
``nn.global_avg_pool2d``, ``nn.adaptive_avg_pool1d``), apart from the other rules
(``fake_quantization_to_integer_rules``) for what they share: an integer mean that rounds.

Inside a region (dequantize -> pool -> ... -> quantize) the pool's result is an integer in the
region's output parameters: the window's int32 sum of the values less the zero point, divided
by the window's size rounding to nearest, ties to even -- what ONNX Runtime's
QLinearAveragePool and torch's quantized pools give (round the real mean / scale) --, done in
integers so that no float rounding moves a tie. (A truncating integer mean, TVM's
``avg_pool2d`` of int32, is half a step low on average: a QAT CNN's head pooled so was 0.17
off relative to eager.)

A windowed pool's windows may differ in size (uncounted padding, ceil mode's last window,
dilation): each sums the taps inside the input (padding holds the zero point: 0 less it) and
divides by the float program's own divisor (``topi.pooling.window_pool``'s: the taps inside the
input, or inside the padded input with ``count_include_pad``, never a ceil-mode overhang), a
per-pixel constant (``_WindowPlan``).

That holds where the region's output parameters are the pool's input's (dequantize -> pool
-> quantize of one quantization). Where they differ -- the pool feeds more ops of the region,
a dense head whose output is quantized --, and in QAT mode (``use_qat=True``: one pool of a
dequantized tensor, nothing quantizing its result), the pool's result is instead the exact
sum of the values less the zero point with the scale divided by the window's size -- no
rounding at all; its consumer requantizes or scales it once --, stored as int16 where the
sums provably fit (so a dense head reading them is the int16 x int8 ``qnn.dense``,
``fake_quantization_to_integer_rules.dense``), else int32 (read by an int32 ``qnn.dense``
where its sums provably fit). Windows of different divisors give each sum times
``L / divisor`` with the scale divided by ``L``, their least common multiple (36 for a 3x3
pool with uncounted padding): the mean exactly still, under one scale. (TVM gives such a pool the
region's output parameters: the pooled activations requantized into, say, a linear head's
output scale, a QAT MobileNet's 7.4e-3 from eager became 5.1e-2.)"""

from __future__ import annotations

import numpy as np

from ...ir.affine_type import TensorAffineType
from ..expr import Constant, const
from ..op import op as _reg
from ..op import reduce as _reduce
from ..op import tensor as _t
from ..op.nn import nn as _nn
from .fake_quantization_to_integer_rules import (
    _same_params,
    _to_int32,
    fold_constant,
    get_zeros,
    infer_shape,
)

register = _reg.register_fake_quantization_to_integer

__all__ = ["rounded_mean", "QAT_SUM_DTYPES", "MAX_FLOAT_WINDOW"]

# windows up to this many elements: the float32 mean of a window of 8-bit values (an input in
# the output's parameters, one quantization) times its size lands within 0.5 of the integer
# sum (|sum| < 2**22), which rounding recovers exactly
MAX_FLOAT_WINDOW = (1 << 22) // 256

#: storage dtypes of a QAT global pool's exact sums, narrowest first
QAT_SUM_DTYPES = ("int16", "int32")


def _scalar_int(e) -> int | None:
    """A scalar integer constant's value (a folded zero point), else None."""
    e = fold_constant(e)
    if isinstance(e, Constant) and e.data.numpy().size == 1:
        return int(e.data.numpy().reshape(()))
    return None


def rounded_mean(total, count):
    """``total / count`` of int32 sums rounded to nearest, ties to even, in int32 arithmetic:
    ``q = floor(total / count)``, ``r = total - q * count``, one more where ``2r > count`` or
    ``2r == count`` and ``q`` is odd (a division by a constant: a multiply and shifts once
    compiled). ``count`` an int, or an int array broadcasting against ``total`` (windows of
    different sizes): then ``_float_rounded_mean``."""
    if not isinstance(count, int | np.integer):
        return _float_rounded_mean(total, np.asarray(count))
    c = const(np.int32(count), "int32")
    q = _t.floor_divide(total, c)
    twice = _t.multiply(_t.subtract(total, _t.multiply(q, c)), const(np.int32(2), "int32"))
    odd = _t.equal(_t.floor_mod(q, const(np.int32(2), "int32")), const(np.int32(1), "int32"))
    up = _t.logical_or(_t.greater(twice, c), _t.logical_and(_t.equal(twice, c), odd))
    return _t.add(q, _t.cast(up, "int32"))


def _float_rounded_mean(total, count: np.ndarray):
    """``rounded_mean`` by a per-pixel divisor grid in float32, where an integer division by
    a tensor would cost a hardware divide per element: ``round(float(total) / count)``. Exact
    for ``|total| < 2**22`` (what the windowed pools' float sums need too): both operands are
    exact in float32 and the division is correctly rounded, so a tie ``k + 0.5`` is exact
    (then rounded to even), and any other quotient is at least ``1 / (2 count)`` from a half
    while its rounding moves it less than half an ulp, below that since ``|q| count < 2**22``.
    (Fast-math builds may divide by a reciprocal: not exact there.)"""
    q = _t.divide(_t.cast(total, "float32"), const(count.astype(np.float32), "float32"))
    return _t.cast(_t.round(q), "int32")


def _centered(arg, t: TensorAffineType, out_t: TensorAffineType):
    """``arg`` (of type ``t``) as int32 values of ``out_t``'s scale less its zero point, and
    that zero point (a scalar: a per-channel one raises, leaving the region float)."""
    zp = _scalar_int(out_t.zero_point)
    if zp is None:
        raise ValueError("an integer average pool needs a scalar constant zero point")
    x = _to_int32(arg, t, out_t)
    return (x if zp == 0 else _t.subtract(x, const(np.int32(zp), "int32"))), zp


def _uncentered(mean, zp: int, out_t: TensorAffineType):
    """The rounded mean back in ``out_t``'s parameters and dtype (saturated)."""
    out = mean if zp == 0 else _t.add(mean, const(np.int32(zp), "int32"))
    if out_t.dtype != "int32":
        info = np.iinfo(out_t.dtype)
        out = _t.cast(_t.clip(out, int(info.min), int(info.max)), out_t.dtype)
    return [out, TensorAffineType(out_t.scale, out_t.zero_point, out_t.dtype, out_t.axis)]


def _taps(size: int, out: int, k: int, st: int, dl: int, before: int, lo: int, hi: int):
    """Per output position along one axis, how many of the window's taps lie in ``[lo, hi)``
    (``topi.pooling.window_pool``'s divisor along it)."""
    o = np.arange(out)[:, None] * st - before + np.arange(k)[None, :] * dl
    return ((o >= lo) & (o < hi)).sum(axis=1).astype(np.int64)


class _WindowPlan:
    """An ``nn.avg_pool2d``'s windows (4-D input of static ``shape``): per output pixel the
    taps inside the input (``inside``: what its sum adds) and the float program's divisor
    (``divisor``: the taps inside the padded input with ``count_include_pad``, inside the
    input otherwise, never a ceil-mode overhang; at least 1), each an int when every window
    has it, else an int64 array shaped to broadcast against the output."""

    def __init__(self, attrs, shape, out_shape):
        layout = str(attrs.layout)
        axes = [layout.index("H"), layout.index("W")]
        pads = [int(p) for p in attrs.padding]
        pads = pads * 2 if len(pads) == 2 else pads
        ks = [int(k) for k in attrs.pool_size]
        st, dl = [int(v) for v in attrs.strides], [int(v) for v in attrs.dilation]
        inside, divisor = [], []
        for q, a in enumerate(axes):
            size, out = int(shape[a]), int(out_shape[a])
            args = (size, out, ks[q], st[q], dl[q], pads[q])
            inside.append(_taps(*args, 0, size))
            divisor.append(_taps(*args, -pads[q], size + pads[q + 2])
                           if bool(attrs.count_include_pad) else inside[-1])
        bshape = [1] * len(shape)
        bshape[axes[0]], bshape[axes[1]] = int(out_shape[axes[0]]), int(out_shape[axes[1]])

        def grid(per_axis):
            g = np.outer(per_axis[0], per_axis[1]).reshape(bshape)
            return int(g.reshape(-1)[0]) if np.all(g == g.reshape(-1)[0]) else g

        self.inside, self.divisor = grid(inside), grid(divisor)
        if not isinstance(self.divisor, int):
            self.divisor = np.maximum(self.divisor, 1)
        elif self.divisor < 1:
            self.divisor = 1
        self.max_inside = int(np.max(self.inside))


def _float_window_sum(x, attrs, plan: _WindowPlan):
    """The int32 sums of the int32 ``x`` over each window's taps inside the input: the float32
    mean over those taps (``count_include_pad=False``) times their number, rounded (exact for
    sums below 2**22: ``MAX_FLOAT_WINDOW``)."""
    a = attrs
    mean = _nn.avg_pool2d(_t.cast(x, "float32"), a.pool_size, a.strides, a.dilation, a.padding,
                          a.layout, a.out_layout, a.ceil_mode, False)
    n = plan.inside
    count = const(np.float32(n), "float32") if isinstance(n, int) else \
        const(n.astype(np.float32), "float32")
    return _t.cast(_t.round(_t.multiply(mean, count)), "int32")


def _spatial_sum(x, attrs, shape):
    """The int32 sum of ``x`` over H and W (kept as size-1 axes) and the window's size."""
    layout = str(attrs.layout)
    axes = [layout.index("H"), layout.index("W")]
    return _reduce.sum(x, axes, keepdims=True), int(shape[axes[0]]) * int(shape[axes[1]])


def _exact_sum(arg, t: TensorAffineType, window, count, float_sum: bool, inside=None):
    """``[sums, type]``: the window sums of ``arg``'s 8- or 16-bit values less their (scalar)
    zero point (``window(x)``), with the scale divided by ``count`` -- the mean exactly, no
    rounding --, stored as the narrowest of ``QAT_SUM_DTYPES`` that holds them. Where the
    windows' divisors differ (``count`` an array; ``inside``: the taps each sum adds), each
    sum is multiplied by ``L / count`` and the scale divided by ``L``, the divisors' least
    common multiple: still the mean exactly, one scale."""
    zp = _scalar_int(t.zero_point)
    if zp is None or t.dtype not in ("int8", "uint8", "int16", "uint16"):
        raise ValueError("an exact integer pool needs 8- or 16-bit values and a scalar "
                         "constant zero point")
    info = np.iinfo(t.dtype)
    span = max(int(info.max) - zp, zp - int(info.min))
    inside = count if inside is None else inside
    multiple = None
    if not isinstance(count, int):
        lcm = int(np.lcm.reduce(np.unique(count)))
        multiple = (lcm // count).astype(np.int64)
        count = lcm
    bound = int(np.max(inside * (1 if multiple is None else multiple))) * span
    if float_sum and int(np.max(inside)) * span >= 1 << 22:
        raise ValueError("the window sums may be too large for an exact float32 sum")
    dtype = next((d for d in QAT_SUM_DTYPES if bound <= np.iinfo(d).max), None)
    if dtype is None:
        raise ValueError("the window sums may overflow int32")
    x = _t.cast(arg, "int32")
    total = window(x if zp == 0 else _t.subtract(x, const(np.int32(zp), "int32")))
    if multiple is not None:
        total = _t.multiply(total, const(multiple.astype(np.int32), "int32"))
    scale = fold_constant(_t.divide(t.scale, const(np.float32(count), "float32")))
    out = total if dtype == "int32" else _t.cast(total, dtype)
    return [out, TensorAffineType(scale, get_zeros(scale), dtype, t.axis)]


def _pool(arg, t, out_t, window, count, float_sum: bool, inside=None):
    """The pool's integer form: with the region's output parameters the same as its input's,
    the rounded mean (one rounding, as quantize rounds the float mean); otherwise (other
    parameters, or QAT mode: ``out_t`` None) the exact sums (``_exact_sum``), which the
    consumer requantizes or scales once; an input of wider values (a conv's int32 sums)
    requantized into the output's parameters, then the rounded mean."""
    if out_t is not None and _same_params(t, out_t) or \
            out_t is not None and t.dtype not in ("int8", "uint8", "int16", "uint16"):
        x, zp = _centered(arg, t, out_t)
        return _uncentered(rounded_mean(window(x), count), zp, out_t)
    return _exact_sum(arg, t, window, count, float_sum, inside)


@register("nn.avg_pool2d")
def avgpool2d(expr, type_map):
    """Any 2-D average pool (uncounted padding, ceil mode, dilation): each window's sum of
    the taps inside the input, then the rounded mean by the float program's divisor per
    window, or the exact sums (``_exact_sum``: multiples of the divisors' least common
    multiple where they differ)."""
    arg = expr.args[0]
    a = expr.attrs
    shape = infer_shape(arg)
    if len(shape) != 4:
        raise ValueError("nn.avg_pool2d: a 4-D input has an integer form here")
    out_shape = infer_shape(_nn.avg_pool2d(_t.cast(arg, "float32"), a.pool_size, a.strides,
                                           a.dilation, a.padding, a.layout, a.out_layout,
                                           a.ceil_mode, a.count_include_pad))
    plan = _WindowPlan(a, shape, out_shape)
    if plan.max_inside > MAX_FLOAT_WINDOW:
        raise ValueError("nn.avg_pool2d: windows too large for exact float32 sums")
    return _pool(arg, type_map[arg], type_map.get(expr),
                 lambda x: _float_window_sum(x, a, plan), plan.divisor, True, plan.inside)


@register("nn.global_avg_pool2d")
def global_avgpool2d(expr, type_map):
    arg = expr.args[0]
    _, count = _spatial_sum(arg, expr.attrs, infer_shape(arg))
    return _pool(arg, type_map[arg], type_map.get(expr),
                 lambda x: _spatial_sum(x, expr.attrs, infer_shape(arg))[0], count, False)


@register("nn.adaptive_avg_pool1d")
def adaptive_avgpool1d(expr, type_map):
    """The rounded mean where every output averages the same number of inputs (the input's
    length a multiple of the output's), else no integer form (the region stays float)."""
    arg = expr.args[0]
    out_t = type_map.get(expr)
    a = expr.attrs
    shape = infer_shape(arg)
    length = int(shape[str(a.layout).index("W")])
    size = list(a.output_size or [1])
    if out_t is None or len(shape) != 3 or length % int(size[0]) or \
            length // int(size[0]) > MAX_FLOAT_WINDOW:
        raise ValueError("nn.adaptive_avg_pool1d: no exact integer form here")
    count = length // int(size[0])
    x, zp = _centered(arg, type_map[arg], out_t)
    mean = _nn.adaptive_avg_pool1d(_t.cast(x, "float32"), a.output_size, a.layout,
                                   a.out_layout)
    total = _t.cast(_t.round(_t.multiply(mean, const(np.float32(count), "float32"))), "int32")
    return _uncentered(rounded_mean(total, count), zp, out_t)
