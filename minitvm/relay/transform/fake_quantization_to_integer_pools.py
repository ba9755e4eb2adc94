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

That holds where the region's output parameters are the pool's input's (dequantize -> pool
-> quantize of one quantization). Where they differ -- the pool feeds more ops of the region,
a dense head whose output is quantized --, and in QAT mode (``use_qat=True``: one pool of a
dequantized tensor, nothing quantizing its result), the pool's result is instead the exact
sum of the values less the zero point with the scale divided by the window's size -- no
rounding at all; its consumer requantizes or scales it once --, stored as int16 where the
sums provably fit (so a dense head reading them is the int16 x int8 ``qnn.dense``,
``fake_quantization_to_integer_rules.dense``), else int32. (TVM gives such a pool the
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


def rounded_mean(total, count: int):
    """``total / count`` of int32 sums rounded to nearest, ties to even, in int32 arithmetic:
    ``q = floor(total / count)``, ``r = total - q * count``, one more where ``2r > count`` or
    ``2r == count`` and ``q`` is odd."""
    c = const(np.int32(count), "int32")
    q = _t.floor_divide(total, c)
    twice = _t.multiply(_t.subtract(total, _t.multiply(q, c)), const(np.int32(2), "int32"))
    odd = _t.equal(_t.floor_mod(q, const(np.int32(2), "int32")), const(np.int32(1), "int32"))
    up = _t.logical_or(_t.greater(twice, c), _t.logical_and(_t.equal(twice, c), odd))
    return _t.add(q, _t.cast(up, "int32"))


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


def _window(attrs, ndim: int) -> int | None:
    """The size of every window of a 2-D avg pool (``attrs``), when all have it: no padding
    or padding counted, no ceil mode, no dilation; else None."""
    pads = [int(p) for p in attrs.padding]
    if bool(attrs.ceil_mode) or any(int(d) != 1 for d in attrs.dilation) or \
            (any(pads) and not bool(attrs.count_include_pad)) or ndim != 4:
        return None
    return int(np.prod([int(k) for k in attrs.pool_size]))


def _float_window_sum(x, attrs, count: int):
    """The int32 window sums of the int32 ``x`` (every window ``count`` elements): the float32
    mean times ``count``, rounded (exact for sums below 2**22: ``MAX_FLOAT_WINDOW``)."""
    a = attrs
    mean = _nn.avg_pool2d(_t.cast(x, "float32"), a.pool_size, a.strides, a.dilation, a.padding,
                          a.layout, a.out_layout, a.ceil_mode, a.count_include_pad)
    return _t.cast(_t.round(_t.multiply(mean, const(np.float32(count), "float32"))), "int32")


def _spatial_sum(x, attrs, shape):
    """The int32 sum of ``x`` over H and W (kept as size-1 axes) and the window's size."""
    layout = str(attrs.layout)
    axes = [layout.index("H"), layout.index("W")]
    return _reduce.sum(x, axes, keepdims=True), int(shape[axes[0]]) * int(shape[axes[1]])


def _exact_sum(arg, t: TensorAffineType, window, count: int, float_sum: bool):
    """``[sums, type]``: the window sums of ``arg``'s 8- or 16-bit values less their (scalar)
    zero point (``window(x)``), with the scale divided by ``count`` -- the mean exactly, no
    rounding --, stored as the narrowest of ``QAT_SUM_DTYPES`` that holds them."""
    zp = _scalar_int(t.zero_point)
    if zp is None or t.dtype not in ("int8", "uint8", "int16", "uint16"):
        raise ValueError("an exact integer pool needs 8- or 16-bit values and a scalar "
                         "constant zero point")
    info = np.iinfo(t.dtype)
    bound = count * max(int(info.max) - zp, zp - int(info.min))
    if float_sum and bound >= 1 << 22:
        raise ValueError("the window sums may be too large for an exact float32 sum")
    dtype = next((d for d in QAT_SUM_DTYPES if bound <= np.iinfo(d).max), None)
    if dtype is None:
        raise ValueError("the window sums may overflow int32")
    x = _t.cast(arg, "int32")
    total = window(x if zp == 0 else _t.subtract(x, const(np.int32(zp), "int32")))
    scale = fold_constant(_t.divide(t.scale, const(np.float32(count), "float32")))
    out = total if dtype == "int32" else _t.cast(total, dtype)
    return [out, TensorAffineType(scale, get_zeros(scale), dtype, t.axis)]


def _pool(arg, t, out_t, window, count: int, float_sum: bool):
    """The pool's integer form: with the region's output parameters the same as its input's,
    the rounded mean (one rounding, as quantize rounds the float mean); otherwise (other
    parameters, or QAT mode: ``out_t`` None) the exact sums (``_exact_sum``), which the
    consumer requantizes or scales once; an input of wider values (a conv's int32 sums)
    requantized into the output's parameters, then the rounded mean."""
    if out_t is not None and _same_params(t, out_t) or \
            out_t is not None and t.dtype not in ("int8", "uint8", "int16", "uint16"):
        x, zp = _centered(arg, t, out_t)
        return _uncentered(rounded_mean(window(x), count), zp, out_t)
    return _exact_sum(arg, t, window, count, float_sum)


@register("nn.avg_pool2d")
def avgpool2d(expr, type_map):
    arg = expr.args[0]
    count = _window(expr.attrs, len(infer_shape(arg)))
    if count is None or count > MAX_FLOAT_WINDOW:
        raise ValueError("nn.avg_pool2d: windows of different sizes have no integer form here")
    return _pool(arg, type_map[arg], type_map.get(expr),
                 lambda x: _float_window_sum(x, expr.attrs, count), count, True)


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
