"""Core-ATen arithmetic onto ``relax.op``: the binary operators and comparisons with torch's
type promotion (a Python number on either side; two numbers are size arithmetic), the unary
functions, ``pow`` / ``rsub`` / ``div`` with a rounding mode, ``remainder`` / ``fmod``, and
``atan2`` / ``hypot`` / ``copysign`` / ``lerp`` composed by ``frontend_common.torch_math``; the
float functions ``tan``, the inverse trigonometric and the hyperbolic ones, ``trunc``, and those
composed: ``log2`` / ``log10`` (in float64, so exact powers come out exact), ``exp2``,
``signbit``, ``isinf`` and ``rrelu`` in eval mode (integer operands promote to float, as
torch's float functions do)."""

from __future__ import annotations

import math

import numpy as np

from ....frontend_common import torch_math
from ....frontend_common.torch_promote import tensors_dtype, true_divide_dtype, with_number_dtype
from ... import op as _op
from ...expr import Expr, const
from .context import AtenContext, register


def _promote(ctx: AtenContext, x, y):
    """torch's type promotion for two tensors of different dtypes
    (``frontend_common.torch_promote``: the higher category wins, then the wider, a 0-dim
    tensor never widening one with dimensions)."""
    dx, dy = ctx.dtype(x), ctx.dtype(y)
    if dx == dy:
        return x, y
    target = tensors_dtype(dx, dy, ctx.ndim(x) == 0, ctx.ndim(y) == 0)
    return (x if dx == target else ctx.emit(_op.astype(x, target))), \
        (y if dy == target else ctx.emit(_op.astype(y, target)))


def _operands(ctx: AtenContext, a, b):
    """Two operands (tensors or Python numbers, one at least a tensor) as Relax tensors of the
    dtype torch gives their result: a float number lifts an integer tensor to float32."""
    like = a if isinstance(a, Expr) else b
    number = b if like is a else a
    if isinstance(number, bool | int | float):
        target = with_number_dtype(ctx.dtype(like), number)
        if target != ctx.dtype(like):
            like = ctx.emit(_op.astype(like, target))
            a, b = (like, b) if isinstance(a, Expr) else (a, like)
    return _promote(ctx, ctx.tensor(a, like), ctx.tensor(b, like))


def _binary(rop, pyop):
    def convert(ctx: AtenContext, args):
        a, b = args[0], args[1]
        if not isinstance(a, Expr) and not isinstance(b, Expr):
            return ctx.simplify(pyop(a, b))  # size arithmetic
        x, y = _operands(ctx, a, b)
        if rop is _op.divide and true_divide_dtype(ctx.dtype(x)) != ctx.dtype(x):
            x, y = (ctx.emit(_op.astype(v, true_divide_dtype(ctx.dtype(x)))) for v in (x, y))
        if len(args) > 2 and args[2] not in (None, 1):  # alpha of add / sub
            y = ctx.emit(_op.multiply(y, ctx.tensor(args[2], y)))
        if rop is _op.add and ctx.dtype(x) == "bool":  # torch adds bools as ``or``
            return ctx.emit(_op.logical_or(x, y))
        return ctx.emit(rop(x, y))

    return convert


for _names, _rop, _py in [
    (("add.Tensor", "add.Scalar"), _op.add, lambda a, b: a + b),
    (("sub.Tensor", "sub.Scalar"), _op.subtract, lambda a, b: a - b),
    (("mul.Tensor", "mul.Scalar"), _op.multiply, lambda a, b: a * b),
    (("div.Tensor", "div.Scalar"), _op.divide, lambda a, b: a / b),
    (("pow.Tensor_Scalar", "pow.Tensor_Tensor"), _op.power, lambda a, b: a**b),
    (("maximum.default",), _op.maximum, max), (("minimum.default",), _op.minimum, min),
    (("eq.Tensor", "eq.Scalar"), _op.equal, lambda a, b: a == b),
    (("ne.Tensor", "ne.Scalar"), _op.not_equal, lambda a, b: a != b),
    (("lt.Tensor", "lt.Scalar"), _op.less, lambda a, b: a < b),
    (("le.Tensor", "le.Scalar"), _op.less_equal, lambda a, b: a <= b),
    (("gt.Tensor", "gt.Scalar"), _op.greater, lambda a, b: a > b),
    (("ge.Tensor", "ge.Scalar"), _op.greater_equal, lambda a, b: a >= b),
]:
    register(*_names)(_binary(_rop, _py))


@register("pow.Scalar")
def _pow_scalar(ctx: AtenContext, args):
    """``base ** tensor`` with a Python-number base (RoPE's ``10000 ** (-2i / d)``): promoted as
    any binary op, so a float base over an integer exponent gives float32 and an integer base
    over a bool exponent int64, as in torch."""
    return ctx.emit(_op.power(*_operands(ctx, args[0], args[1])))


@register("rsub.Scalar")
def _rsub(ctx: AtenContext, args):
    x = args[0]
    return ctx.emit(_op.subtract(ctx.tensor(args[1], x), x))


@register("div.Tensor_mode")
def _div_mode(ctx: AtenContext, args):
    """``div(x, y, rounding_mode)``, operands promoted as for any binary op (``mask // 2`` is
    int64, ``ints // floats`` float); integers divide exactly: ``floor_divide`` rounds toward
    -inf, and a truncating quotient is the floored one plus 1 where the remainder is nonzero and
    the signs differ."""
    a, b, mode = args[0], args[1], args[2]
    if mode is None:
        return _binary(_op.divide, None)(ctx, [a, b])
    x, y = _operands(ctx, a, b)
    if ctx.dtype(x).startswith("float"):
        q = ctx.emit(_op.divide(x, y))
        return ctx.emit(_op.floor(q) if mode == "floor" else _op.trunc(q))
    q = ctx.emit(_op.floor_divide(x, y))
    if mode == "trunc":
        zero = ctx.tensor(0, x)
        inexact = ctx.emit(_op.not_equal(ctx.emit(_op.subtract(x, ctx.emit(
            _op.multiply(q, y)))), zero))
        signs = ctx.emit(_op.not_equal(ctx.emit(_op.less(x, zero)), ctx.emit(_op.less(y, zero))))
        fix = ctx.emit(_op.astype(ctx.emit(_op.logical_and(inexact, signs)), ctx.dtype(x)))
        q = ctx.emit(_op.add(q, fix))
    return q


_UNARY = {
    "relu": _op.nn.relu, "sigmoid": _op.sigmoid, "tanh": _op.tanh, "erf": _op.erf,
    "exp": _op.exp, "log": _op.log, "sqrt": _op.sqrt, "rsqrt": _op.rsqrt, "neg": _op.negative,
    "abs": _op.abs, "sin": _op.sin, "cos": _op.cos, "floor": _op.floor, "ceil": _op.ceil,
    "round": _op.round, "silu": _op.nn.silu, "reciprocal": None,
}
# functions whose value is a float: an integer or bool operand is promoted first, as in torch
_FLOAT_VALUED = {"sigmoid", "tanh", "erf", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "silu"}


def _float_operand(ctx: AtenContext, x):
    """``x`` as a float tensor (integers and bools promoted to float32, as torch's float
    functions and true division do)."""
    dt = true_divide_dtype(ctx.dtype(x))
    return x if dt == ctx.dtype(x) else ctx.emit(_op.astype(x, dt))


def _unary(rop, float_valued: bool = False):
    def convert(ctx: AtenContext, args):
        return ctx.emit(rop(_float_operand(ctx, args[0]) if float_valued else args[0]))

    return convert


for _name, _rop in _UNARY.items():
    if _rop is not None:
        register(f"{_name}.default")(_unary(_rop, _name in _FLOAT_VALUED))


@register("sign.default")
def _sign(ctx: AtenContext, args):
    """-1, 0 or 1; 0 at NaN, as torch's (Relax's ``sign`` keeps NaN)."""
    x = args[0]
    if not ctx.dtype(x).startswith("float"):
        return ctx.emit(_op.sign(x))
    return ctx.emit(_op.where(ctx.emit(_op.isnan(x)), ctx.tensor(0.0, x), ctx.emit(_op.sign(x))))


@register("reciprocal.default")
def _reciprocal(ctx: AtenContext, args):
    """``1 / x``; an integer or bool tensor gives float32, as torch's."""
    x = _float_operand(ctx, args[0])
    return ctx.emit(_op.divide(ctx.tensor(1.0, x), x))


@register("expm1.default")
def _expm1(ctx: AtenContext, args):
    return ctx.emit(_op.subtract(_op.exp(args[0]), ctx.tensor(1.0, args[0])))


register("remainder.Tensor", "remainder.Scalar")(_binary(_op.floor_mod, lambda a, b: a % b))
register("fmod.Tensor", "fmod.Scalar")(_binary(_op.mod, lambda a, b: float(np.fmod(a, b))))


def _float_operands(ctx: AtenContext, a, b):
    """``a`` and ``b`` as Relax tensors of one float dtype (integers promoted as torch's
    ``atan2`` / ``hypot`` do) and a constant maker of that dtype."""
    x, y = _operands(ctx, a, b)
    dt = true_divide_dtype(ctx.dtype(x))
    if dt != ctx.dtype(x):
        x, y = (ctx.emit(_op.astype(v, dt)) for v in (x, y))
    return x, y, lambda v: const(np.array(v, dtype=dt), dt)


@register("atan2.default")
def _atan2(ctx: AtenContext, args):
    """PointPillars' azimuth feature: composed from ``atan`` (Relax has no ``atan2``)."""
    y, x, scalar = _float_operands(ctx, args[0], args[1])
    return ctx.emit(torch_math.atan2(_op, y, x, scalar, ctx.emit))


@register("hypot.default")
def _hypot(ctx: AtenContext, args):
    a, b, _ = _float_operands(ctx, args[0], args[1])
    return ctx.emit(torch_math.hypot(_op, a, b, ctx.emit))


@register("copysign.Tensor", "copysign.Scalar")
def _copysign(ctx: AtenContext, args):
    a, b, scalar = _float_operands(ctx, args[0], args[1])
    return ctx.emit(torch_math.copysign(_op, a, b, scalar, ctx.emit))


@register("ldexp.Tensor", "ldexp.default")
def _ldexp(ctx: AtenContext, args):
    """``x * 2 ** other`` in the operands' promoted float dtype (frexp's inverse)."""
    x, e, scalar = _float_operands(ctx, args[0], args[1])
    return ctx.emit(_op.multiply(x, ctx.emit(_op.power(scalar(2.0), e))))


@register("lerp.Scalar", "lerp.Tensor")
def _lerp(ctx: AtenContext, args):
    """StyleGAN's truncation trick, ``w_avg.lerp(w, psi)``, by torch's two-sided formula."""
    start, end = _operands(ctx, args[0], args[1])
    dt = ctx.dtype(start)
    weight = args[2]
    if isinstance(weight, Expr) and ctx.dtype(weight) != dt:
        weight = ctx.emit(_op.astype(weight, dt))
    return ctx.emit(torch_math.lerp(_op, start, end, weight,
                                    lambda v: const(np.array(v, dtype=dt), dt), ctx.emit))


@register("isnan.default")
def _isnan(ctx: AtenContext, args):
    return ctx.emit(_op.isnan(args[0]))


# ------------------------------------------------------------------ float functions
def _as_float(ctx: AtenContext, x):
    dt = true_divide_dtype(ctx.dtype(x))
    return x if dt == ctx.dtype(x) else ctx.emit(_op.astype(x, dt))


def _float_unary(rop):
    def convert(ctx: AtenContext, args):
        return ctx.emit(rop(_as_float(ctx, args[0])))
    return convert


for _name, _rop in {"tan": _op.tan, "asin": _op.asin, "acos": _op.acos, "atan": _op.atan,
                    "sinh": _op.sinh, "cosh": _op.cosh, "asinh": _op.asinh,
                    "acosh": _op.acosh, "atanh": _op.atanh}.items():
    register(f"{_name}.default")(_float_unary(_rop))


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
