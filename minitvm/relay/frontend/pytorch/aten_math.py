"""ATen arithmetic onto Relay: the binary operators and comparisons with torch's type promotion
(``add`` ... ``minimum``), ``div`` with its rounding modes, ``rsub``, ``remainder`` / ``fmod``,
the unary functions, ``reciprocal``, ``isnan`` and ``nan_to_num``; and converters for
``torch.atan2``, ``torch.hypot`` and ``torch.lerp`` (PointPillars' polar point features,
StyleGAN's truncation trick), built by ``frontend_common.torch_math``, which the Relax importer
shares, and for ``logaddexp``, ``xlogy``, ``special.entr``, ``logit``, ``sinc`` and ``copysign``
(with torch's special values at 0, infinities and NaN), and for ``erfc``, ``special.erfcx``,
``special.ndtr``, ``special.log_ndtr``, ``special.ndtri``, ``erfinv``, ``i0``, ``frexp``,
``lgamma``, ``mvlgamma``
and ``digamma`` (``frontend_common.torch_special``, shared with Relax as well), ``polygamma``
(``frontend_common.torch_polygamma``), ``igamma`` / ``igammac`` (``torch_igamma``), and the unary
float functions both dialects have as operators (``tan``, the inverse trigonometric and the
hyperbolic functions, ``log2``, ``log10``) or compose (``exp2``, ``deg2rad``, ``rad2deg``,
``signbit``, ``sgn``, ``positive``). Integer operands divide into floats as torch's ``atan2``
does; two Python numbers fold at import."""

from __future__ import annotations

import math
import operator

import numpy as np

from ....frontend_common import torch_igamma, torch_math, torch_polygamma, torch_special
from ....frontend_common.torch_promote import true_divide_dtype
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from .aten import _binary, _is_expr, _pair, _scalar_like, register
from .aten_extra import _log1p_expr


def _float_pair(ctx, a, b):
    """``a`` and ``b`` as expressions of one float dtype (integers promoted as torch does)."""
    a, b = _pair(ctx, a, b)
    dt = ctx.dtype(a)
    target = true_divide_dtype(dt)
    if target != dt:
        a, b = _op.cast(a, target), _op.cast(b, target)
    return a, b, target


def _const(dtype):
    return lambda v: _expr.const(np.array(v, dtype=dtype), dtype)


@register("atan2", "arctan2", "atan2_")
def _atan2(ctx, args):
    y, x = args[0], args[1]
    if not _is_expr(y) and not _is_expr(x):
        return math.atan2(y, x)
    y, x, dt = _float_pair(ctx, y, x)
    return torch_math.atan2(_op, y, x, _const(dt))


@register("hypot", "hypot_")
def _hypot(ctx, args):
    a, b = args[0], args[1]
    if not _is_expr(a) and not _is_expr(b):
        return math.hypot(a, b)
    a, b, _ = _float_pair(ctx, a, b)
    return torch_math.hypot(_op, a, b)


@register("lerp", "lerp_")
def _lerp(ctx, args):
    start, end, weight = args[0], args[1], args[2]
    start, end = _pair(ctx, start, end)
    dt = ctx.dtype(start)
    if _is_expr(weight) and ctx.dtype(weight) != dt:
        weight = _op.cast(weight, dt)
    return torch_math.lerp(_op, start, end, weight, _const(dt))


def _float_operand(ctx, x):
    """A tensor operand as a float tensor (integers promoted as torch's true division does)."""
    dt = ctx.dtype(x)
    target = true_divide_dtype(dt)
    return (x if target == dt else _op.cast(x, target)), target


@register("logaddexp")
def _logaddexp(ctx, args):
    """``max(a, b) + log1p(exp(-|a - b|))``; equal infinities give themselves, as torch's."""
    a, b, dt = _float_pair(ctx, args[0], args[1])
    gap = _op.negative(_op.abs(_op.subtract(a, b)))
    out = _op.add(_op.maximum(a, b), _log1p_expr(ctx, _op.exp(gap)))
    same_inf = _op.logical_and(_op.equal(a, b), _op.isinf(a))
    return _op.where(same_inf, a, out)


@register("xlogy", "special_xlogy")
def _xlogy(ctx, args):
    """``x log y``: NaN where y is NaN, else 0 where x is 0 (a VAE's or an entropy's 0 log 0)."""
    x, y, dt = _float_pair(ctx, args[0], args[1])
    c = _const(dt)
    out = _op.where(_op.equal(x, c(0.0)), c(0.0), _op.multiply(x, _op.log(y)))
    return _op.where(_op.isnan(y), c(np.nan), out)


@register("special_entr")
def _entr(ctx, args):
    """``-x log x`` for x > 0, 0 at 0, -inf below 0, NaN kept."""
    x, dt = _float_operand(ctx, args[0])
    c = _const(dt)
    pos = _op.greater(x, c(0.0))
    safe = _op.where(pos, x, c(1.0))
    out = _op.where(pos, _op.negative(_op.multiply(x, _op.log(safe))),
                    _op.where(_op.equal(x, c(0.0)), c(0.0), c(-np.inf)))
    return _op.where(_op.isnan(x), x, out)


@register("logit", "logit_", "special_logit")
def _logit(ctx, args):
    """``log(z / (1 - z))`` with z the input clamped to [eps, 1 - eps] when eps is given."""
    x, dt = _float_operand(ctx, args[0])
    eps = args[1] if len(args) > 1 else None
    if eps is not None:
        x = _op.clip(x, float(eps), 1.0 - float(eps))
    return _op.log(_op.divide(x, _op.subtract(_const(dt)(1.0), x)))


@register("sinc", "special_sinc")
def _sinc(ctx, args):
    """``sin(pi x) / (pi x)``, 1 at 0."""
    x, dt = _float_operand(ctx, args[0])
    c = _const(dt)
    product = _op.multiply(x, c(math.pi))
    zero = _op.equal(x, c(0.0))
    safe = _op.where(zero, c(1.0), product)
    return _op.where(zero, c(1.0), _op.divide(_op.sin(safe), safe))


@register("copysign")
def _copysign(ctx, args):
    a, b, dt = _float_pair(ctx, args[0], args[1])
    return torch_math.copysign(_op, a, b, _const(dt))


def _special_unary(compose):
    """A converter of one float operand (integers promoted) through ``torch_special``."""
    def convert(ctx, args):
        x, dt = _float_operand(ctx, args[0])
        return compose(_op, x, _const(dt))
    return convert


register("erfc", "erfc_", "special_erfc")(_special_unary(torch_special.erfc))
register("special_erfcx")(_special_unary(torch_special.erfcx))
register("special_log_ndtr")(_special_unary(torch_special.log_ndtr))


register("i0", "i0_", "special_i0")(_special_unary(torch_special.i0))
register("special_i0e")(_special_unary(torch_special.i0e))


def _wide_unary(compose, wide: str):
    """A converter evaluating ``compose(ops, x, scalar)`` on its operand cast to ``wide``
    (float64: the rational and series approximations cancel in float32), cast back to the
    operand's float dtype."""
    def convert(ctx, args):
        x, dt = _float_operand(ctx, args[0])
        return _op.cast(compose(_op, _op.cast(x, wide), _const(wide)), dt)
    return convert


# ndtr in float64: the left tail's exp(-z^2) magnifies the rounding of z = -x / sqrt(2)
register("special_ndtr")(_wide_unary(torch_special.ndtr, torch_special.NDTR_WORKING_DTYPE))
# ndtri in float64: its rationals cancel in float32; erfinv goes through ndtri
register("special_ndtri")(_wide_unary(torch_special.ndtri, torch_special.NDTRI_WORKING_DTYPE))
register("erfinv", "erfinv_", "special_erfinv")(
    _wide_unary(torch_special.erfinv, torch_special.NDTRI_WORKING_DTYPE))


def _gamma_function(compose):
    """A converter evaluating ``compose`` (lgamma / digamma / polygamma) in
    ``torch_special.GAMMA_WORKING_DTYPE``."""
    return _wide_unary(compose, torch_special.GAMMA_WORKING_DTYPE)


register("lgamma", "lgamma_", "special_gammaln")(_gamma_function(torch_special.lgamma))
register("digamma", "digamma_", "special_digamma", "special_psi")(
    _gamma_function(torch_special.digamma))


def _incomplete_gamma(compose):
    """A converter of ``(a, x)`` through ``frontend_common.torch_igamma`` in float64, cast back
    to the operands' promoted float dtype."""
    def convert(ctx, args):
        a, x, dt = _float_pair(ctx, args[0], args[1])
        wide = torch_special.GAMMA_WORKING_DTYPE
        return _op.cast(compose(_op, _op.cast(a, wide), _op.cast(x, wide), _const(wide)), dt)
    return convert


register("igamma", "igamma_", "special_gammainc")(_incomplete_gamma(torch_igamma.igamma))
register("igammac", "igammac_", "special_gammaincc")(_incomplete_gamma(torch_igamma.igammac))


@register("polygamma", "special_polygamma")
def _polygamma(ctx, args):
    """``polygamma(n, x)`` for a static ``n`` (``frontend_common.torch_polygamma``; 0 is
    digamma), in float64 as the other gamma functions."""
    n, x = args[0], args[1]
    if not isinstance(n, int) or n < 0:
        raise ctx.fail(f"polygamma: the order must be a non-negative int, got {n!r}")
    if n == 0:
        return _gamma_function(torch_special.digamma)(ctx, [x])
    return _gamma_function(lambda ops, v, scalar: torch_polygamma.polygamma(ops, n, v, scalar))(
        ctx, [x])


@register("mvlgamma", "mvlgamma_", "special_multigammaln")
def _mvlgamma(ctx, args):
    """The multivariate log-gamma of order ``p``: ``sum_i lgamma(x - i / 2) + p (p - 1) / 4
    log(pi)`` (a Wishart log density's normalizer)."""
    x, dt = _float_operand(ctx, args[0])
    order = int(args[1])
    wide = torch_special.GAMMA_WORKING_DTYPE
    c = _const(wide)
    xw = _op.cast(x, wide)
    total = c(order * (order - 1) / 4 * math.log(math.pi))
    for i in range(order):
        total = _op.add(total, torch_special.lgamma(_op, _op.subtract(xw, c(i / 2)), c))
    return _op.cast(total, dt)


@register("ldexp", "ldexp_")
def _ldexp(ctx, args):
    """``x * 2 ** other`` in the operands' promoted float dtype (frexp's inverse)."""
    x, e, dt = _float_pair(ctx, args[0], args[1])
    return _op.multiply(x, _op.power(_const(dt)(2.0), e))


@register("frexp")
def _frexp(ctx, args):
    """(mantissa in the input's float dtype, int32 exponent)."""
    x = args[0]
    dt = ctx.dtype(x)
    if not dt.startswith("float"):
        raise TypeError(f"frexp: torch.frexp takes a float tensor, got {dt}")
    return torch_special.frexp(_op, x, _const(dt))


register("add", "add_")(_binary(_op.add, operator.add))
register("sub", "sub_")(_binary(_op.subtract, operator.sub))
register("mul", "mul_")(_binary(_op.multiply, operator.mul))
register("floor_divide")(_binary(_op.floor_divide, operator.floordiv))
register("pow")(_binary(_op.power, operator.pow))
register("eq")(_binary(_op.equal, operator.eq))
register("ne")(_binary(_op.not_equal, operator.ne))
register("lt")(_binary(_op.less, operator.lt))
register("gt")(_binary(_op.greater, operator.gt))
register("le")(_binary(_op.less_equal, operator.le))
register("ge")(_binary(_op.greater_equal, operator.ge))
register("maximum")(_binary(_op.maximum, max))
register("minimum")(_binary(_op.minimum, min))


@register("div", "div_")
def _div(ctx, args):
    a, b = args[0], args[1]
    mode = args[2] if len(args) > 2 else None
    if not _is_expr(a) and not _is_expr(b):
        return a // b if mode == "floor" else (int(a / b) if mode == "trunc" else a / b)
    a, b = _pair(ctx, a, b)
    if mode == "floor":
        return _op.floor_divide(a, b)
    dt = ctx.dtype(a)
    if mode is None and true_divide_dtype(dt) != dt:  # integers divide as floats in torch
        a, b = _op.cast(a, true_divide_dtype(dt)), _op.cast(b, true_divide_dtype(dt))
    out = _op.divide(a, b)
    return _op.trunc(out) if mode == "trunc" and ctx.dtype(a).startswith("float") else out


@register("rsub")
def _rsub(ctx, args):
    alpha = args[2] if len(args) > 2 else 1
    return _binary(_op.subtract, operator.sub)(ctx, [args[1], args[0], alpha])


_UNARY = {
    "relu": _nn.relu, "relu_": _nn.relu, "neg": _op.negative, "abs": _op.abs,
    "floor": _op.floor, "ceil": _op.ceil,
}


for _n, _f in _UNARY.items():
    register(_n)(lambda ctx, args, _f=_f: _f(args[0]))


@register("round", "round_")
def _round(ctx, args):
    """Half to even; ``round(x, decimals=d)`` rounds ``x * 10**d`` and divides back (for
    ``d < 0``: ``x / 10**-d``, rounded, times ``10**-d``), as torch's kernel."""
    x = args[0]
    d = int(args[1]) if len(args) > 1 and args[1] is not None else 0
    if d == 0 or not ctx.dtype(x).startswith("float"):
        return _op.round(x)
    scale = _scalar_like(ctx, 10.0 ** abs(d), x)
    if d > 0:
        return _op.divide(_op.round(_op.multiply(x, scale)), scale)
    return _op.multiply(_op.round(_op.divide(x, scale)), scale)


@register("reciprocal")
def _reciprocal(ctx, args):
    """``1 / x``; an integer or bool tensor gives float32, as torch's."""
    if not _is_expr(args[0]):
        return 1.0 / args[0]
    x = _float_operand(ctx, args[0])[0]
    return _op.divide(_scalar_like(ctx, 1.0, x), x)


@register("isnan")
def _isnan(ctx, args):
    return _op.isnan(args[0])


register("remainder")(_binary(_op.floor_mod, operator.mod))
register("fmod")(_binary(_op.mod, math.fmod))


@register("nan_to_num", "nan_to_num_")
def _nan_to_num(ctx, args):
    x = args[0]
    dt = ctx.dtype(x)
    if not dt.startswith("float"):
        return x
    info = np.finfo(dt)
    nan = 0.0 if len(args) < 2 or args[1] is None else float(args[1])
    pos = float(info.max) if len(args) < 3 or args[2] is None else float(args[2])
    neg = float(info.min) if len(args) < 4 or args[3] is None else float(args[3])
    inf = _scalar_like(ctx, np.inf, x)
    out = _op.where(_op.equal(x, inf), _scalar_like(ctx, pos, x), x)
    out = _op.where(_op.equal(x, _op.negative(inf)), _scalar_like(ctx, neg, x), out)
    return _op.where(_op.isnan(x), _scalar_like(ctx, nan, x), out)


_FLOAT_UNARY = {"sigmoid": _op.sigmoid, "tanh": _op.tanh, "exp": _op.exp, "log": _op.log,
                "sqrt": _op.sqrt, "rsqrt": _op.rsqrt, "erf": _op.erf, "sin": _op.sin,
                "cos": _op.cos, "tan": _op.tan, "asin": _op.asin, "acos": _op.acos, "atan": _op.atan,
                "sinh": _op.sinh, "cosh": _op.cosh, "asinh": _op.asinh, "acosh": _op.acosh,
                "atanh": _op.atanh, "log2": _op.log2, "log10": _op.log10}
_ALIASES = {"asin": ("arcsin",), "acos": ("arccos",), "atan": ("arctan",),
            "asinh": ("arcsinh",), "acosh": ("arccosh",), "atanh": ("arctanh",)}


def _float_unary(fn):
    """A converter of one operand (integers promoted to float, as torch's float functions)."""
    def convert(ctx, args):
        return fn(_float_operand(ctx, args[0])[0])
    return convert


for _name, _fn in _FLOAT_UNARY.items():
    _names = (_name, *_ALIASES.get(_name, ()))
    register(*_names, *(n + "_" for n in _names))(_float_unary(_fn))


@register("exp2", "exp2_", "special_exp2")
def _exp2(ctx, args):
    x, dt = _float_operand(ctx, args[0])
    return _op.power(_const(dt)(2.0), x)


@register("deg2rad", "deg2rad_")
def _deg2rad(ctx, args):
    x, dt = _float_operand(ctx, args[0])
    return _op.multiply(x, _const(dt)(math.pi / 180.0))


@register("rad2deg", "rad2deg_")
def _rad2deg(ctx, args):
    x, dt = _float_operand(ctx, args[0])
    return _op.multiply(x, _const(dt)(180.0 / math.pi))


@register("signbit")
def _signbit(ctx, args):
    """True below zero and at -0.0 (whose reciprocal is -inf); NaN reads False."""
    x = args[0]
    dt = ctx.dtype(x)
    if not dt.startswith("float"):
        return _op.less(x, _expr.const(np.array(0, dtype=dt), dt))
    zero = _const(dt)(0.0)
    negative_zero = _op.logical_and(_op.equal(x, zero),
                                    _op.less(_op.divide(_const(dt)(1.0), x), zero))
    return _op.logical_or(_op.less(x, zero), negative_zero)


@register("sgn", "sgn_")
def _sgn(ctx, args):
    """``sign`` of a real tensor (complex tensors do not reach the Relay importer)."""
    return _sign_of(ctx, args[0])


def _sign_of(ctx, x):
    """-1, 0 or 1; 0 at NaN, as torch's ``(0 < x) - (x < 0)`` (Relay's ``sign`` keeps NaN)."""
    if not ctx.dtype(x).startswith("float"):
        return _op.sign(x)
    return _op.where(_op.isnan(x), _const(ctx.dtype(x))(0.0), _op.sign(x))


@register("positive")
def _positive(ctx, args):
    return args[0]
