"""Float converters of the elementwise ops: binary arithmetic and comparisons with a fused
activation, the unary functions, the activations (RELU6, HARD_SWISH, GELU, ELU, PRELU, ...),
CAST, SELECT and ADD_N."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from .op_context import _activation, _fconst, _out_dtype, register


def _binary(fn):
    def convert(ctx):
        opt = ctx.options()
        out = fn(ctx.inputs[0], ctx.inputs[1])
        act = opt.FusedActivationFunction() if opt is not None and hasattr(
            opt, "FusedActivationFunction") else 0
        return _activation(ctx, out, act)

    return convert


register("ADD")(_binary(_op.add))
register("SUB")(_binary(_op.subtract))
register("MUL")(_binary(_op.multiply))
register("DIV")(_binary(_op.divide))
register("MAXIMUM")(_binary(_op.maximum))
register("MINIMUM")(_binary(_op.minimum))
register("SQUARED_DIFFERENCE")(_binary(lambda a, b: _op.multiply(_op.subtract(a, b),
                                                                 _op.subtract(a, b))))

_UNARY = {"RELU": _nn.relu, "LOGISTIC": _op.sigmoid, "TANH": _op.tanh, "EXP": _op.exp,
          "SQRT": _op.sqrt, "RSQRT": _op.rsqrt, "ABS": _op.abs, "NEG": _op.negative,
          "LOG": _op.log, "SIN": _op.sin, "COS": _op.cos, "FLOOR": _op.floor,
          "CEIL": _op.ceil}
for _n, _f in _UNARY.items():
    register(_n)(lambda ctx, _f=_f: _f(ctx.inputs[0]))


@register("SIGN")
def _sign(ctx):
    """-1, 0 or 1; 0 at NaN, as TFLite's kernel (``x > 0 ? 1 : x < 0 ? -1 : 0``); Relay's
    ``sign`` keeps NaN, numpy's rule."""
    x = ctx.inputs[0]
    dtype = _out_dtype(ctx)
    if not dtype.startswith("float"):
        return _op.sign(x)
    return _op.where(_op.isnan(x), _fconst(0.0, dtype), _op.sign(x))


@register("RELU6")
def _relu6(ctx):
    return _op.clip(ctx.inputs[0], 0.0, 6.0)


@register("RELU_N1_TO_1")
def _relu_n1(ctx):
    return _op.clip(ctx.inputs[0], -1.0, 1.0)


@register("SQUARE")
def _square(ctx):
    return _op.multiply(ctx.inputs[0], ctx.inputs[0])


@register("HARD_SWISH")
def _hard_swish(ctx):
    x = ctx.inputs[0]
    six = _expr.const(np.array(6.0, "float32"))
    return _op.multiply(x, _op.divide(_op.clip(_op.add(x, _expr.const(np.array(
        3.0, "float32"))), 0.0, 6.0), six))


@register("LEAKY_RELU")
def _leaky_relu(ctx):
    return _nn.leaky_relu(ctx.inputs[0], float(ctx.options().Alpha()))


@register("GELU")
def _gelu(ctx):
    x = ctx.inputs[0]
    c = lambda v: _expr.const(np.array(v, "float32"))  # noqa: E731
    opt = ctx.options()
    if opt is not None and opt.Approximate():
        inner = _op.multiply(c(np.sqrt(2 / np.pi)), _op.add(x, _op.multiply(
            c(0.044715), _op.multiply(x, _op.multiply(x, x)))))
        return _op.multiply(_op.multiply(c(0.5), x), _op.add(c(1.0), _op.tanh(inner)))
    return _op.multiply(_op.multiply(c(0.5), x), _op.add(
        c(1.0), _op.erf(_op.multiply(x, c(1 / np.sqrt(2))))))


for _n, _f in {"POW": _op.power, "FLOOR_DIV": _op.floor_divide, "FLOOR_MOD": _op.floor_mod,
               "LESS": _op.less, "GREATER": _op.greater, "EQUAL": _op.equal,
               "NOT_EQUAL": _op.not_equal, "LESS_EQUAL": _op.less_equal,
               "GREATER_EQUAL": _op.greater_equal, "LOGICAL_AND": _op.logical_and,
               "ATAN2": _op.atan2,
               "LOGICAL_OR": _op.logical_or}.items():
    register(_n)(_binary(_f))

for _n, _f in {"ROUND": _op.round, "LOGICAL_NOT": _op.logical_not,
               "ZEROS_LIKE": _op.zeros_like}.items():
    register(_n)(lambda ctx, _f=_f: _f(ctx.inputs[0]))


@register("RELU_0_TO_1")
def _relu_0_1(ctx):
    return _op.clip(ctx.inputs[0], 0.0, 1.0)


@register("ELU")
def _elu(ctx):
    x = ctx.inputs[0]
    return _op.where(_op.greater(x, _fconst(0.0)), x, _op.subtract(_op.exp(x), _fconst(1.0)))


@register("PRELU")
def _prelu(ctx):
    x, alpha = ctx.inputs[0], ctx.inputs[1]  # alpha broadcasts against x
    return _op.where(_op.greater(x, _fconst(0.0)), x, _op.multiply(alpha, x))


@register("CAST")
def _cast(ctx):
    return _op.cast(ctx.inputs[0], _out_dtype(ctx))


@register("SELECT", "SELECT_V2")
def _select(ctx):
    return _op.where(ctx.inputs[0], ctx.inputs[1], ctx.inputs[2])


@register("ADD_N")
def _add_n(ctx):
    out = ctx.inputs[0]
    for e in ctx.inputs[1:]:
        out = _op.add(out, e)
    return out
