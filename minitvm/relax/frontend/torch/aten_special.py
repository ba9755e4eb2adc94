"""Core-ATen special functions onto ``relax.op``: ``erfc``, ``special.erfcx``,
``special.ndtr``, ``special.log_ndtr``, ``special.ndtri``, ``erfinv``, ``i0``, ``special.i0e``,
``frexp``, ``lgamma``, ``digamma``, ``polygamma``, ``igamma`` / ``igammac``
and an accurate ``log1p``, composed by ``frontend_common.torch_special``, which the Relay
importer shares."""

from __future__ import annotations

import numpy as np

from ....frontend_common import torch_igamma, torch_polygamma, torch_special
from ....frontend_common.torch_promote import true_divide_dtype
from ... import op as _op
from ...expr import Expr, const
from .context import AtenContext, register


def _float_unary(ctx: AtenContext, x):
    """``x`` as a float tensor (integers promoted as torch's unary float functions do) and a
    constant maker of its dtype."""
    dt = true_divide_dtype(ctx.dtype(x))
    if dt != ctx.dtype(x):
        x = ctx.emit(_op.astype(x, dt))
    return x, lambda v: const(np.array(v, dtype=dt), dt)


def _special_unary(compose):
    """A converter of one float operand through ``frontend_common.torch_special``."""
    def convert(ctx: AtenContext, args):
        x, scalar = _float_unary(ctx, args[0])
        return ctx.emit(compose(_op, x, scalar, ctx.emit))
    return convert


register("erfc.default", "special_erfc.default")(_special_unary(torch_special.erfc))
register("special_erfcx.default")(_special_unary(torch_special.erfcx))
register("special_log_ndtr.default")(_special_unary(torch_special.log_ndtr))
register("i0.default", "special_i0.default")(_special_unary(torch_special.i0))
register("special_i0e.default")(_special_unary(torch_special.i0e))


def _wide_unary(compose, wide: str):
    """A converter evaluating ``compose(ops, x, scalar, emit)`` on its operand cast to ``wide``
    (float64: the rational and series approximations cancel in float32), cast back to the
    operand's float dtype."""
    def convert(ctx: AtenContext, args):
        x, _ = _float_unary(ctx, args[0])
        out = compose(_op, ctx.emit(_op.astype(x, wide)),
                      lambda v: const(np.array(v, dtype=wide), wide), ctx.emit)
        return ctx.emit(_op.astype(ctx.emit(out), ctx.dtype(x)))
    return convert


# ndtr in float64: the left tail's exp(-z^2) magnifies the rounding of z = -x / sqrt(2)
register("special_ndtr.default")(
    _wide_unary(torch_special.ndtr, torch_special.NDTR_WORKING_DTYPE))
# ndtri in float64: its rationals cancel in float32; erfinv goes through ndtri
register("special_ndtri.default")(
    _wide_unary(torch_special.ndtri, torch_special.NDTRI_WORKING_DTYPE))
register("erfinv.default", "special_erfinv.default")(
    _wide_unary(torch_special.erfinv, torch_special.NDTRI_WORKING_DTYPE))


def _gamma_function(compose):
    """A converter evaluating ``compose`` (lgamma / digamma / polygamma) in
    ``torch_special.GAMMA_WORKING_DTYPE``."""
    return _wide_unary(compose, torch_special.GAMMA_WORKING_DTYPE)


register("lgamma.default", "special_gammaln.default")(_gamma_function(torch_special.lgamma))
register("digamma.default", "special_digamma.default", "special_psi.default")(
    _gamma_function(torch_special.digamma))


def _incomplete_gamma(compose):
    """A converter of ``(a, x)`` through ``frontend_common.torch_igamma`` in float64, cast back
    to the operands' promoted float dtype."""
    def convert(ctx: AtenContext, args):
        a, x = (ctx.tensor(v, like=args[0] if isinstance(args[0], Expr) else args[1])
                for v in args[:2])
        floats = sorted(d for d in (ctx.dtype(a), ctx.dtype(x)) if d.startswith("float"))
        dt = floats[-1] if floats else true_divide_dtype(ctx.dtype(a))  # (float64 > float32)
        wide = torch_special.GAMMA_WORKING_DTYPE
        a, x = (ctx.emit(_op.astype(v, wide)) for v in (a, x))
        out = compose(_op, a, x, lambda v: const(np.array(v, dtype=wide), wide), ctx.emit)
        return ctx.emit(_op.astype(ctx.emit(out), dt))
    return convert


register("igamma.default", "special_gammainc.default")(_incomplete_gamma(torch_igamma.igamma))
register("igammac.default", "special_gammaincc.default")(
    _incomplete_gamma(torch_igamma.igammac))


@register("polygamma.default", "special_polygamma.default")
def _polygamma(ctx: AtenContext, args):
    """``polygamma(n, x)`` for a static ``n`` (``frontend_common.torch_polygamma``; 0 is
    digamma), in float64 as the other gamma functions."""
    n, x = args[0], args[1]
    if not isinstance(n, int) or n < 0:
        raise ctx.fail(f"polygamma: the order must be a non-negative int, got {n!r}")
    if n == 0:
        return _gamma_function(torch_special.digamma)(ctx, [x])
    return _gamma_function(lambda ops, v, scalar, emit: torch_polygamma.polygamma(
        ops, n, v, scalar, emit))(ctx, [x])


@register("frexp.Tensor")
def _frexp(ctx: AtenContext, args):
    """(mantissa in the input's float dtype, int32 exponent)."""
    x = args[0]
    dt = ctx.dtype(x)
    if not dt.startswith("float"):
        raise ctx.fail(f"torch.frexp takes a float tensor, got {dt}")
    mantissa, exponent = torch_special.frexp(_op, x, lambda v: const(np.array(v, dtype=dt), dt),
                                             emit=ctx.emit)
    return ctx.emit(mantissa), ctx.emit(exponent)


@register("log1p.default")
def _log1p(ctx: AtenContext, args):
    """Full precision for tiny operands (``log(1 + x)`` rounds 1 + x first: log_ndtr's
    decomposition takes ``log1p(-erfc(x) / 2)`` of values below float32's epsilon)."""
    x, scalar = _float_unary(ctx, args[0])
    return ctx.emit(torch_special.log1p(_op, x, scalar, ctx.emit))
