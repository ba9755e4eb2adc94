"""ONNX ops of exported real-world models beyond the core set: QuantizeLinear /
DequantizeLinear (QDQ models), GroupNormalization, LpNormalization,
MeanVarianceNormalization, Swish and CumProd."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from .registry import onnx_dtype, register

_QRANGE = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535),
           "int16": (-32768, 32767), "int32": (-2**31, 2**31 - 1)}


def _scalar(ctx, x, value):
    return ctx.const(np.array(value, dtype=ctx.dtype(x)))


def _along(ctx, param, ndim: int, axis: int, x_shape=None, block: int = 0):
    """A per-axis (1-D) quantization parameter reshaped to broadcast along ``axis``; a
    blocked one (``block`` > 0, one value per ``block`` elements) repeated to ``x_shape``."""
    if block:
        d = x_shape[axis % ndim]
        return _op.take(param, ctx.const(np.arange(d, dtype="int64") // block), axis=axis % ndim)
    if len(ctx.shape(param)) != 1 or ndim == 0:
        return param
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return _op.reshape(param, shape)


@register("QuantizeLinear")
def _quantize_linear(ctx, ins, attrs):
    x, scale = ins[0], ins[1]
    zp = ins[2] if len(ins) > 2 else None
    out_dtype = ctx.dtype(zp) if zp is not None else "uint8"
    if attrs.get("output_dtype"):
        out_dtype = onnx_dtype(int(attrs["output_dtype"]))
    if out_dtype not in _QRANGE:
        raise ctx.fail(f"quantizing to {out_dtype} is not supported")
    shape, bs = ctx.shape(x), int(attrs.get("block_size", 0))
    nd, axis, dt = len(shape), int(attrs.get("axis", 1)), ctx.dtype(x)
    y = _op.round(_op.divide(x, _op.cast(_along(ctx, scale, nd, axis, shape, bs), dt)))
    if zp is not None:  # (round is half to even, as ONNX asks)
        y = _op.add(y, _op.cast(_along(ctx, zp, nd, axis, shape, bs), dt))
    lo, hi = _QRANGE[out_dtype]
    return _op.cast(_op.clip(y, float(lo), float(hi)), out_dtype)  # integer outputs saturate


@register("DequantizeLinear")
def _dequantize_linear(ctx, ins, attrs):
    x, scale = ins[0], ins[1]
    zp = ins[2] if len(ins) > 2 else None
    shape, bs = ctx.shape(x), int(attrs.get("block_size", 0))
    nd, axis = len(shape), int(attrs.get("axis", 1))
    fdt = ctx.dtype(scale)
    wide = "float64" if ctx.dtype(x) == "int32" else fdt  # int32 exceeds float32's mantissa
    y = _op.cast(x, wide)
    if zp is not None:
        y = _op.subtract(y, _op.cast(_along(ctx, zp, nd, axis, shape, bs), wide))
    if wide != fdt:
        y = _op.cast(y, fdt)
    return _op.multiply(y, _along(ctx, scale, nd, axis, shape, bs))


@register("GroupNormalization")
def _group_norm(ctx, ins, attrs):
    x, scale, bias = ins[0], ins[1], ins[2]
    shape = ctx.shape(x)
    groups, eps = int(attrs["num_groups"]), float(attrs.get("epsilon", 1e-5))
    c = shape[1]
    g = _op.reshape(x, [shape[0], groups, -1])
    mean = _op.mean(g, [2], keepdims=True)
    cent = _op.subtract(g, mean)
    var = _op.mean(_op.multiply(cent, cent), [2], keepdims=True)
    y = _op.reshape(_op.divide(cent, _op.sqrt(_op.add(var, _scalar(ctx, x, eps)))), shape)
    if ctx.shape(scale)[0] != c:  # opset 18's per-group scale and bias
        scale, bias = _op.repeat(scale, c // groups, 0), _op.repeat(bias, c // groups, 0)
    per = [c] + [1] * (len(shape) - 2)
    return _op.add(_op.multiply(y, _op.reshape(scale, per)), _op.reshape(bias, per))


@register("LpNormalization")
def _lp_norm(ctx, ins, attrs):
    x = ins[0]
    axis, p = int(attrs.get("axis", -1)), int(attrs.get("p", 2))
    if p == 1:
        n = _op.sum(_op.abs(x), [axis], keepdims=True)
    elif p == 2:
        n = _op.sqrt(_op.sum(_op.multiply(x, x), [axis], keepdims=True))
    else:
        raise ctx.fail(f"p={p} is not supported (1 or 2)")
    # a zero norm gives 0 (the spec's 0/0 = 0), not NaN
    zero = _scalar(ctx, x, 0)
    is_zero = _op.equal(n, zero)
    safe = _op.where(is_zero, _scalar(ctx, x, 1), n)
    return _op.where(is_zero, zero, _op.divide(x, safe))


@register("MeanVarianceNormalization")
def _mvn(ctx, ins, attrs):
    x = ins[0]
    axes = [int(a) for a in attrs.get("axes", [0, 2, 3])]
    cent = _op.subtract(x, _op.mean(x, axes, keepdims=True))
    var = _op.mean(_op.multiply(cent, cent), axes, keepdims=True)
    return _op.divide(cent, _op.sqrt(_op.add(var, _scalar(ctx, x, 1e-9))))


@register("Swish")
def _swish(ctx, ins, attrs):
    x = ins[0]
    alpha = float(attrs.get("alpha", 1.0))
    return _op.multiply(x, _op.sigmoid(_op.multiply(x, _scalar(ctx, x, alpha))))


@register("CumProd")
def _cumprod(ctx, ins, attrs):
    x = ins[0]
    axis = int(np.asarray(ctx.value(ins[1], "CumProd's axis")).reshape(-1)[0])
    exclusive = bool(attrs.get("exclusive", 0))
    if attrs.get("reverse", 0):  # the scan of the flipped input, flipped back
        return _op.reverse(_op.cumprod(_op.reverse(x, axis), axis, exclusive=exclusive), axis)
    return _op.cumprod(x, axis, exclusive=exclusive)
