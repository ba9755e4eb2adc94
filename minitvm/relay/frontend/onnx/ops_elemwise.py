"""ONNX elementwise operators: unary math, activations, broadcasting binary ops, Cast/Where."""

from __future__ import annotations

import math

import numpy as np

from ....frontend_common.bit_shift import shift
from ... import op as _op
from ...op import nn as _nn
from .registry import onnx_dtype, register

_UNARY = {
    "Abs": _op.abs, "Neg": _op.negative, "Exp": _op.exp, "Log": _op.log, "Sqrt": _op.sqrt,
    "Floor": _op.floor, "Ceil": _op.ceil, "Sin": _op.sin, "Cos": _op.cos,
    "Tan": _op.tan, "Asin": _op.asin, "Acos": _op.acos, "Atan": _op.atan, "Sinh": _op.sinh,
    "Cosh": _op.cosh, "Asinh": _op.asinh, "Acosh": _op.acosh, "Atanh": _op.atanh,
    "Sigmoid": _op.sigmoid, "Tanh": _op.tanh, "Erf": _op.erf, "Relu": _nn.relu,
    "Not": _op.logical_not, "IsNaN": _op.isnan, "BitwiseNot": _op.bitwise_not,
}


def _unary(fn):
    return lambda ctx, ins, attrs: fn(ins[0])


for _name, _fn in _UNARY.items():
    register(_name)(_unary(_fn))


def _scalar(ctx, x, value):
    """A scalar constant of ``x``'s dtype."""
    return ctx.const(np.array(value, dtype=ctx.dtype(x)))


@register("Sign")
def _sign(ctx, ins, attrs):
    """-1, 0 or 1, as ONNX Runtime's kernels: NaN stays NaN in float32 / float64 (Relay's
    ``sign``, numpy's rule) and is 0 in float16 (ORT computes half by comparisons)."""
    x = ins[0]
    if ctx.dtype(x) != "float16":
        return _op.sign(x)
    return _op.where(_op.isnan(x), _scalar(ctx, x, 0), _op.sign(x))


@register("Round")
def _round(ctx, ins, attrs):
    # ONNX rounds half to even, like numpy; relay.round follows numpy's rounding too
    return _op.round(ins[0])


@register("Reciprocal")
def _reciprocal(ctx, ins, attrs):
    return _op.divide(_scalar(ctx, ins[0], 1), ins[0])


@register("IsInf")
def _isinf(ctx, ins, attrs):
    x = ins[0]
    pos, neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    inf = _op.isinf(x)
    zero = _scalar(ctx, x, 0)
    if pos and neg:
        return inf
    if pos:
        return _op.logical_and(inf, _op.greater(x, zero))
    if neg:
        return _op.logical_and(inf, _op.less(x, zero))
    return _op.logical_and(inf, _op.logical_not(inf))


_BINARY = {
    "Add": _op.add, "Sub": _op.subtract, "Mul": _op.multiply, "Div": _op.divide,
    "Equal": _op.equal, "Less": _op.less, "Greater": _op.greater,
    "LessOrEqual": _op.less_equal, "GreaterOrEqual": _op.greater_equal,
    "And": _op.logical_and, "Or": _op.logical_or, "Xor": _op.logical_xor,
    "BitwiseAnd": _op.bitwise_and, "BitwiseOr": _op.bitwise_or, "BitwiseXor": _op.bitwise_xor,
}


def _binary(fn):
    return lambda ctx, ins, attrs: fn(ins[0], ins[1])


for _name, _fn in _BINARY.items():
    register(_name)(_binary(_fn))


@register("Pow")
def _pow(ctx, ins, attrs):
    x, y = ins
    if ctx.dtype(y) != ctx.dtype(x):
        y = _op.cast(y, ctx.dtype(x))
    return _op.power(x, y)


@register("Mod")
def _mod(ctx, ins, attrs):
    fmod = attrs.get("fmod", 0)
    return _op.mod(*ins) if fmod else _op.floor_mod(*ins)


@register("BitShift")
def _bitshift(ctx, ins, attrs):
    """Amounts outside [0, bits) shift every bit out (``frontend_common.bit_shift``)."""
    x, y = ins
    dt = ctx.dtype(x)
    return shift(_op, x, y, attrs.get("direction", "LEFT") == "LEFT", dt, ctx.maybe_value(y),
                 lambda v: ctx.const(np.array(v, dt)))


def _variadic(fn):
    def convert(ctx, ins, attrs):
        out = ins[0]
        for x in ins[1:]:
            out = fn(out, x)
        return out

    return convert


register("Sum")(_variadic(_op.add))
register("Max")(_variadic(_op.maximum))
register("Min")(_variadic(_op.minimum))


@register("Mean")
def _mean(ctx, ins, attrs):
    out = _variadic(_op.add)(ctx, ins, attrs)
    return _op.divide(out, _scalar(ctx, ins[0], len(ins)))


@register("Cast")
def _cast(ctx, ins, attrs):
    return _op.cast(ins[0], onnx_dtype(attrs["to"]))


@register("CastLike")
def _cast_like(ctx, ins, attrs):
    return _op.cast(ins[0], ctx.dtype(ins[1]))


@register("Where")
def _where(ctx, ins, attrs):
    return _op.where(*ins)


@register("Clip")
def _clip(ctx, ins, attrs):
    x = ins[0]
    lo = ins[1] if len(ins) > 1 else None
    hi = ins[2] if len(ins) > 2 else None
    lo_v = ctx.maybe_value(lo) if lo is not None else attrs.get("min")
    hi_v = ctx.maybe_value(hi) if hi is not None else attrs.get("max")
    if (lo is None or lo_v is not None) and (hi is None or hi_v is not None) and \
            ctx.dtype(x).startswith("float"):
        big = float(np.finfo(ctx.dtype(x)).max)
        a_min = float(lo_v) if lo_v is not None else -big
        a_max = float(hi_v) if hi_v is not None else big
        return _op.clip(x, a_min, a_max)
    out = x
    if lo is not None or lo_v is not None:
        out = _op.maximum(out, lo if lo is not None else _scalar(ctx, x, lo_v))
    if hi is not None or hi_v is not None:
        out = _op.minimum(out, hi if hi is not None else _scalar(ctx, x, hi_v))
    return out


# ------------------------------------------------------------------ activations
@register("LeakyRelu")
def _leaky_relu(ctx, ins, attrs):
    return _nn.leaky_relu(ins[0], float(attrs.get("alpha", 0.01)))


@register("PRelu")
def _prelu(ctx, ins, attrs):
    x, slope = ins
    zero = _scalar(ctx, x, 0)
    return _op.where(_op.less(x, zero), _op.multiply(x, slope), x)


@register("Elu")
def _elu(ctx, ins, attrs):
    x = ins[0]
    alpha = _scalar(ctx, x, attrs.get("alpha", 1.0))
    one, zero = _scalar(ctx, x, 1), _scalar(ctx, x, 0)
    return _op.where(_op.greater(x, zero), x, _op.multiply(alpha, _op.subtract(_op.exp(x), one)))


@register("Celu")
def _celu(ctx, ins, attrs):
    x = ins[0]
    a = float(attrs.get("alpha", 1.0))
    zero, one, alpha = _scalar(ctx, x, 0), _scalar(ctx, x, 1), _scalar(ctx, x, a)
    neg = _op.multiply(alpha, _op.subtract(_op.exp(_op.divide(x, alpha)), one))
    return _op.add(_op.maximum(x, zero), _op.minimum(zero, neg))


@register("Selu")
def _selu(ctx, ins, attrs):
    x = ins[0]
    alpha = attrs.get("alpha", 1.67326319217681884765625)
    gamma = attrs.get("gamma", 1.05070102214813232421875)
    zero, one = _scalar(ctx, x, 0), _scalar(ctx, x, 1)
    neg = _op.multiply(_scalar(ctx, x, alpha), _op.subtract(_op.exp(x), one))
    return _op.multiply(_scalar(ctx, x, gamma), _op.where(_op.greater(x, zero), x, neg))


@register("ThresholdedRelu")
def _thresholded_relu(ctx, ins, attrs):
    x = ins[0]
    alpha = _scalar(ctx, x, attrs.get("alpha", 1.0))
    return _op.where(_op.greater(x, alpha), x, _scalar(ctx, x, 0))


@register("HardSigmoid")
def _hard_sigmoid(ctx, ins, attrs):
    x = ins[0]
    alpha, beta = attrs.get("alpha", 0.2), attrs.get("beta", 0.5)
    y = _op.add(_op.multiply(x, _scalar(ctx, x, alpha)), _scalar(ctx, x, beta))
    return _op.clip(y, 0.0, 1.0)


@register("HardSwish")
def _hard_swish(ctx, ins, attrs):
    x = ins[0]
    y = _op.add(_op.multiply(x, _scalar(ctx, x, 1.0 / 6.0)), _scalar(ctx, x, 0.5))
    return _op.multiply(x, _op.clip(y, 0.0, 1.0))


@register("Softplus")
def _softplus(ctx, ins, attrs):
    x = ins[0]
    return _op.log(_op.add(_op.exp(x), _scalar(ctx, x, 1)))


@register("Softsign")
def _softsign(ctx, ins, attrs):
    x = ins[0]
    return _op.divide(x, _op.add(_op.abs(x), _scalar(ctx, x, 1)))


@register("Mish")
def _mish(ctx, ins, attrs):
    x = ins[0]
    return _op.multiply(x, _op.tanh(_softplus(ctx, ins, attrs)))


@register("Gelu")
def _gelu(ctx, ins, attrs):
    x = ins[0]
    half, one = _scalar(ctx, x, 0.5), _scalar(ctx, x, 1.0)
    if attrs.get("approximate", "none") == "tanh":
        inner = _op.multiply(_scalar(ctx, x, math.sqrt(2.0 / math.pi)),
                             _op.add(x, _op.multiply(_scalar(ctx, x, 0.044715),
                                                     _op.power(x, _scalar(ctx, x, 3.0)))))
        return _op.multiply(_op.multiply(half, x), _op.add(one, _op.tanh(inner)))
    erf = _op.erf(_op.multiply(x, _scalar(ctx, x, 1.0 / math.sqrt(2.0))))
    return _op.multiply(_op.multiply(half, x), _op.add(one, erf))


@register("Shrink")
def _shrink(ctx, ins, attrs):
    x = ins[0]
    lambd, bias = attrs.get("lambd", 0.5), attrs.get("bias", 0.0)
    lo = _op.add(x, _scalar(ctx, x, bias))
    hi = _op.subtract(x, _scalar(ctx, x, bias))
    zero = _scalar(ctx, x, 0)
    return _op.where(_op.less(x, _scalar(ctx, x, -lambd)), lo,
                     _op.where(_op.greater(x, _scalar(ctx, x, lambd)), hi, zero))
