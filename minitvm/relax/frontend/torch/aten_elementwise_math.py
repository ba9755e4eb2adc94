"""Core-ATen unary functions ``relax.op`` has as operators but ``aten_ops``' table leaves out
(``tan``, the inverse trigonometric and the hyperbolic functions, ``trunc``), and those it
composes: ``log2`` / ``log10`` (in float64, so exact powers come out exact), ``exp2``,
``signbit``, ``isinf`` and ``rrelu`` in eval mode. Integer operands promote to float, as
torch's float functions do."""

from __future__ import annotations

import math

import numpy as np

from ....frontend_common.torch_promote import true_divide_dtype
from ... import op as _op
from ...expr import const
from .context import AtenContext, register


def _as_float(ctx: AtenContext, x):
    dt = true_divide_dtype(ctx.dtype(x))
    return x if dt == ctx.dtype(x) else ctx.emit(_op.astype(x, dt))


def _unary(rop):
    def convert(ctx: AtenContext, args):
        return ctx.emit(rop(_as_float(ctx, args[0])))
    return convert


for _name, _rop in {"tan": _op.tan, "asin": _op.asin, "acos": _op.acos, "atan": _op.atan,
                    "sinh": _op.sinh, "cosh": _op.cosh, "asinh": _op.asinh,
                    "acosh": _op.acosh, "atanh": _op.atanh}.items():
    register(f"{_name}.default")(_unary(_rop))


@register("trunc.default")
def _trunc(ctx: AtenContext, args):
    x = args[0]
    return x if not ctx.dtype(x).startswith("float") else ctx.emit(_op.trunc(x))


def _log_base(base: float):
    """``log(x) / log(base)`` evaluated in float64 and cast back."""
    def convert(ctx: AtenContext, args):
        x = _as_float(ctx, args[0])
        dt = ctx.dtype(x)
        wide = ctx.emit(_op.astype(x, "float64"))
        out = _op.multiply(_op.log(wide), const(np.array(1.0 / math.log(base)), "float64"))
        return ctx.emit(_op.astype(ctx.emit(out), dt))
    return convert


register("log2.default")(_log_base(2.0))
register("log10.default")(_log_base(10.0))


@register("exp2.default", "special_exp2.default")
def _exp2(ctx: AtenContext, args):
    x = _as_float(ctx, args[0])
    return ctx.emit(_op.power(ctx.tensor(2.0, x), x))


@register("signbit.default")
def _signbit(ctx: AtenContext, args):
    """True below zero and at -0.0 (whose reciprocal is -inf); NaN reads False."""
    x = args[0]
    zero = ctx.tensor(0, x)
    below = ctx.emit(_op.less(x, zero))
    if not ctx.dtype(x).startswith("float"):
        return below
    negative_zero = _op.logical_and(_op.equal(x, zero),
                                    _op.less(_op.divide(ctx.tensor(1.0, x), x), zero))
    return ctx.emit(_op.logical_or(below, ctx.emit(negative_zero)))


@register("rrelu_with_noise_functional.default")
def _rrelu(ctx: AtenContext, args):
    """(out, noise): in eval mode a leaky ReLU of slope (lower + upper) / 2; a training-mode
    rrelu draws random slopes, which an inference import refuses."""
    x, noise = args[0], args[1]
    lower = float(args[2]) if len(args) > 2 else 1.0 / 8
    upper = float(args[3]) if len(args) > 3 else 1.0 / 3
    training = bool(args[4]) if len(args) > 4 else False
    if training:
        raise ctx.fail("rrelu in training mode draws random slopes; export the model in eval "
                       "mode (model.eval())")
    return ctx.emit(_op.nn.leakyrelu(x, (lower + upper) / 2)), noise


@register("isinf.default")
def _isinf(ctx: AtenContext, args):
    """Infinite entries of a float tensor; none of an integer one."""
    x = args[0]
    if ctx.dtype(x).startswith("float"):
        return ctx.emit(_op.isinf(x))
    return ctx.emit(_op.not_equal(x, x))
