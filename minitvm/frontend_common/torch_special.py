"""torch's special functions that neither dialect has as one operator: ``erfc`` / ``erfcx``,
``special.ndtr``, ``special.log_ndtr``, ``special.ndtri``, ``erfinv``, ``i0``, ``frexp``,
``lgamma`` and ``digamma`` (plus a full-precision ``log1p``), composed for the importers of both dialects
from the operators they share, with float32 numerics matching torch's over the whole input
range (far tails included). The approximations are sized for float32: float64 operands get
float32-grade results (measured relative error against torch's double: log_ndtr 1.2e-7, i0
3.3e-9, ndtri 1.1e-9; frexp exact).

``ops`` is the dialect's operator namespace (``relay.op`` or ``relax.op``); ``scalar(v)`` makes
a constant of the operand's float dtype; ``emit`` binds a value used more than once (Relax's
``ctx.emit``; the identity for Relay). Inputs are float tensors (callers promote integers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["GAMMA_WORKING_DTYPE", "NDTRI_WORKING_DTYPE", "NDTR_WORKING_DTYPE", "digamma", "erfc", "erfcx", "erfinv",
           "frexp", "i0", "lgamma", "log1p", "log_ndtr", "ndtr", "ndtri"]

_Emit = Callable[[Any], Any]

# erfc(z) = t * exp(-z^2 + P(t)) with t = 1 / (1 + z / 2) for z >= 0: a Chebyshev-fitted
# exponent (Numerical Recipes' ``erfcc``), fractional error below 1.2e-7 for every z >= 0
_ERFC_EXPONENT = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
                  -1.13520398, 1.48851587, -0.82215223, 0.17087277)

# the inverse normal CDF as rationals (P. J. Acklam's): one in r = (p - 1/2)^2 for the centre,
# one in q = sqrt(-2 log p) for a tail; relative error below 1.2e-9
_NDTRI_CENTRE_NUM = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                     1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_NDTRI_CENTRE_DEN = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                     6.680131188771972e+01, -1.328068155288572e+01, 1.0)
_NDTRI_TAIL_NUM = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                   -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_NDTRI_TAIL_DEN = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                   3.754408661907416e+00, 1.0)
_NDTRI_TAIL_BELOW = 0.02425
NDTRI_WORKING_DTYPE = "float64"

# I0(x) = sum_k (x^2 / 4)^k / (k!)^2 up to |x| = 12, in s = x^2 / 144 so that no coefficient
# leaves float32's normal range (terms past k = 24 are below 1e-9 of the sum there); above,
# I0(x) ~ e^x / sqrt(2 pi x) * sum_k a_k / x^k, a_k = a_{k-1} (2k - 1)^2 / (8k), whose terms
# past k = 9 are below 1e-8 of the first for x > 12
_I0_SERIES_UP_TO = 12.0
_I0_SERIES = tuple((_I0_SERIES_UP_TO ** 2 / 4) ** k / math.factorial(k) ** 2 for k in range(25))


def _asymptotic_i0_terms(n: int) -> tuple[float, ...]:
    terms = [1.0]
    for k in range(1, n):
        terms.append(terms[-1] * (2 * k - 1) ** 2 / (8 * k))
    return tuple(terms)


_I0_ASYMPTOTIC = _asymptotic_i0_terms(10)


def _horner(ops: Any, x, coefficients: Sequence[float], scalar: Callable):
    """``sum c_k x^k`` with ``coefficients`` listed from the highest power down."""
    out = scalar(coefficients[0])
    for c in coefficients[1:]:
        out = ops.add(ops.multiply(out, x), scalar(c))
    return out


def log1p(ops: Any, x, scalar: Callable, emit: _Emit = lambda e: e):
    """``log(1 + x)`` to full precision: ``log(u) * x / (u - 1)`` with ``u = 1 + x`` (``x``
    itself where ``u`` rounds to 1), which cancels the rounding of ``u``; ``u`` infinite gives
    ``log(u)``."""
    x = emit(x)
    one = scalar(1.0)
    u = emit(ops.add(one, x))
    log_u = emit(ops.log(u))
    corrected = ops.divide(ops.multiply(log_u, x), ops.subtract(u, one))
    exact_u = ops.logical_or(ops.equal(u, one), ops.isinf(u))
    return ops.where(ops.equal(u, one), x, ops.where(exact_u, log_u, corrected))


def _erfc_parts(ops: Any, z, scalar: Callable, emit: _Emit):
    """For ``z >= 0`` (z a bound value): ``(t, P(t))`` with ``erfc(z) = t exp(-z^2 + P(t))``."""
    t = emit(ops.divide(scalar(1.0), ops.add(scalar(1.0), ops.multiply(scalar(0.5), z))))
    return t, emit(_horner(ops, t, _ERFC_EXPONENT[::-1], scalar))


def _exp_neg_square(ops: Any, z, scalar: Callable, emit: _Emit):
    """``exp(-z^2)`` without float32's rounding of ``z^2`` (which exp would magnify to 1e-5 at
    z = 9): z split as ``h + (z - h)``, h on a 1/16 grid so that ``h^2`` is exact."""
    z = emit(ops.minimum(z, scalar(30.0)))  # exp(-900) is 0 already; inf would give NaN
    h = emit(ops.divide(ops.trunc(ops.multiply(z, scalar(16.0))), scalar(16.0)))
    rest = ops.multiply(ops.subtract(z, h), ops.add(z, h))
    return ops.multiply(ops.exp(ops.negative(ops.multiply(h, h))), ops.exp(ops.negative(rest)))


def erfc(ops: Any, x, scalar: Callable, emit: _Emit = lambda e: e):
    """``1 - erf(x)`` with full relative precision in the right tail (down to float32's
    denormals near x = 10); ``2 - erfc(-x)`` for negative x."""
    x = emit(x)
    z = emit(ops.abs(x))
    t, exponent = _erfc_parts(ops, z, scalar, emit)
    right = emit(ops.multiply(ops.multiply(t, ops.exp(exponent)),
                              _exp_neg_square(ops, z, scalar, emit)))
    return ops.where(ops.less(x, scalar(0.0)), ops.subtract(scalar(2.0), right), right)


def erfcx(ops: Any, x, scalar: Callable, emit: _Emit = lambda e: e):
    """The scaled ``exp(x^2) erfc(x)``: ``t exp(P(t))`` for x >= 0 (finite for every x, ~
    ``1 / (x sqrt(pi))`` far out), ``2 exp(x^2) - erfcx(-x)`` below 0 (inf past about -9.4,
    as torch's)."""
    x = emit(x)
    z = emit(ops.abs(x))
    t, exponent = _erfc_parts(ops, z, scalar, emit)
    right = emit(ops.multiply(t, ops.exp(exponent)))
    left = ops.subtract(ops.multiply(scalar(2.0), ops.exp(ops.multiply(x, x))), right)
    return ops.where(ops.less(x, scalar(0.0)), left, right)


NDTR_WORKING_DTYPE = "float64"


def ndtr(ops: Any, x, scalar: Callable, emit: _Emit = lambda e: e):
    """``Phi(x)``, the standard normal CDF, as ``erfc(-x / sqrt(2)) / 2``: relative precision
    down the left tail to underflow, where torch's ``(1 + erf(x / sqrt(2))) / 2`` rounds to 0
    from about x = -5.4 (float32) or -8.3 (float64) on; ``1 - erfc(x / sqrt(2)) / 2`` on the
    right by ``erfc``'s own reflection. Give it ``NDTR_WORKING_DTYPE`` operands: in float32
    the rounding of ``x / sqrt(2)`` alone costs 2 z^2 ulps (1e-5 at x = -10)."""
    return ops.multiply(erfc(ops, ops.multiply(x, scalar(-1.0 / math.sqrt(2.0))), scalar, emit),
                        scalar(0.5))


def log_ndtr(ops: Any, x, scalar: Callable, emit: _Emit = lambda e: e):
    """``log(Phi(x))``, Phi the standard normal CDF: ``log(erfcx(z) / 2) - z^2`` with
    ``z = -x / sqrt(2)`` below x = -1 (no underflow however far the left tail: about
    ``-x^2 / 2``), ``log1p(-erfc(x / sqrt(2)) / 2)`` from there on (full precision where
    Phi(x) rounds to 1)."""
    x = emit(x)
    z = emit(ops.multiply(x, scalar(-1.0 / math.sqrt(2.0))))
    # left tail: z > 0.7 here (the branch's value elsewhere is not selected)
    zl = emit(ops.maximum(z, scalar(0.5)))
    t, exponent = _erfc_parts(ops, zl, scalar, emit)
    tail = ops.subtract(ops.add(ops.log(t), ops.add(exponent, scalar(-math.log(2.0)))),
                        ops.multiply(zl, zl))
    upper = erfc(ops, ops.negative(z), scalar, emit)
    body = log1p(ops, ops.multiply(upper, scalar(-0.5)), scalar, emit)
    return ops.where(ops.less(x, scalar(-1.0)), tail, body)


def ndtri(ops: Any, p, scalar: Callable, emit: _Emit = lambda e: e):
    """The x with ``Phi(x) = p``: -inf at 0, inf at 1, NaN outside [0, 1] (as torch's);
    Acklam's centre rational in ``(p - 1/2)^2`` for p in [0.02425, 0.97575], the tail
    rational in ``sqrt(-2 log(min(p, 1 - p)))`` (sign by side) beyond. Give it float64
    operands (``NDTRI_WORKING_DTYPE``): near the centre's edges its denominator cancels to
    1/1000 of its terms, 1e-4 relative error if evaluated in float32."""
    p = emit(p)
    half = scalar(0.5)
    q = emit(ops.subtract(p, half))
    r = emit(ops.multiply(q, q))
    centre = ops.divide(ops.multiply(_horner(ops, r, _NDTRI_CENTRE_NUM, scalar), q),
                        _horner(ops, r, _NDTRI_CENTRE_DEN, scalar))
    upper = ops.greater(p, half)
    near = emit(ops.where(upper, ops.subtract(scalar(1.0), p), p))
    # near is 0 only at p = 0 or 1, below 0 only outside [0, 1]: both replaced below
    s = emit(ops.sqrt(ops.multiply(scalar(-2.0), ops.log(near))))
    tail = emit(ops.divide(_horner(ops, s, _NDTRI_TAIL_NUM, scalar),
                           _horner(ops, s, _NDTRI_TAIL_DEN, scalar)))
    out = ops.where(ops.less(near, scalar(_NDTRI_TAIL_BELOW)),
                    ops.where(upper, ops.negative(tail), tail), centre)
    out = ops.where(ops.equal(p, scalar(0.0)), scalar(-math.inf),
                    ops.where(ops.equal(p, scalar(1.0)), scalar(math.inf), out))
    outside = ops.logical_or(ops.less(p, scalar(0.0)), ops.greater(p, scalar(1.0)))
    return ops.where(outside, scalar(math.nan), out)


# below this |y|, erfinv's Maclaurin series (sqrt(pi) / 2) (y + pi y^3 / 12) is exact to
# float64 rounding, where (1 + y) / 2 would round y away
_ERFINV_SERIES_BELOW = 1e-4


def erfinv(ops: Any, y, scalar: Callable, emit: _Emit = lambda e: e):
    """The x with ``erf(x) = y``: ``ndtri((1 + y) / 2) / sqrt(2)``, so inf at 1, -inf at -1,
    NaN outside [-1, 1] (as torch's); the series near 0. Float64 operands
    (``NDTRI_WORKING_DTYPE``), as ``ndtri``'s."""
    y = emit(y)
    p = ops.multiply(ops.add(y, scalar(1.0)), scalar(0.5))
    via_ndtri = ops.multiply(ndtri(ops, p, scalar, emit), scalar(math.sqrt(0.5)))
    series = ops.multiply(ops.multiply(y, scalar(math.sqrt(math.pi) / 2)), ops.add(
        scalar(1.0), ops.multiply(ops.multiply(y, y), scalar(math.pi / 12))))
    return ops.where(ops.less(ops.abs(y), scalar(_ERFINV_SERIES_BELOW)), series, via_ndtri)


def i0(ops: Any, x, scalar: Callable, emit: _Emit = lambda e: e):
    """The modified Bessel function of order 0 (even in x): the power series in ``x^2`` up to
    |x| = 12, the asymptotic series beyond, scaled by ``e^|x|`` (so inf where that overflows,
    past |x| = 88.7 in float32, as torch's)."""
    a = emit(ops.abs(x))
    s = emit(ops.multiply(ops.multiply(a, a), scalar(1.0 / _I0_SERIES_UP_TO ** 2)))
    series = _horner(ops, s, _I0_SERIES[::-1], scalar)
    big = emit(ops.maximum(a, scalar(_I0_SERIES_UP_TO)))
    correction = _horner(ops, ops.divide(scalar(1.0), big), _I0_ASYMPTOTIC[::-1], scalar)
    scale = ops.divide(correction, ops.sqrt(ops.multiply(big, scalar(2.0 * math.pi))))
    asymptotic = ops.multiply(ops.exp(big), scale)
    return ops.where(ops.less_equal(a, scalar(_I0_SERIES_UP_TO)), series, asymptotic)


def i0e(ops: Any, x, scalar: Callable, emit: _Emit = lambda e: e):
    """The exponentially scaled ``e^-|x| I0(x)`` (finite for every x: the asymptotic branch
    drops ``i0``'s ``e^|x|`` instead of multiplying by it and dividing again)."""
    a = emit(ops.abs(x))
    s = emit(ops.multiply(ops.multiply(a, a), scalar(1.0 / _I0_SERIES_UP_TO ** 2)))
    series = ops.multiply(_horner(ops, s, _I0_SERIES[::-1], scalar), ops.exp(ops.negative(a)))
    big = emit(ops.maximum(a, scalar(_I0_SERIES_UP_TO)))
    correction = _horner(ops, ops.divide(scalar(1.0), big), _I0_ASYMPTOTIC[::-1], scalar)
    scaled = ops.divide(correction, ops.sqrt(ops.multiply(big, scalar(2.0 * math.pi))))
    return ops.where(ops.less_equal(a, scalar(_I0_SERIES_UP_TO)), series, scaled)


def frexp(ops: Any, x, scalar: Callable, exponent_dtype: str = "int32",
          emit: _Emit = lambda e: e):
    """``(mantissa, exponent)`` with ``x = mantissa * 2**exponent`` and ``0.5 <= |mantissa| <
    1``; zero, infinities and NaN give ``(x, 0)``, as torch's. The exponent from ``log|x|``
    is set right by one step either way; the division by ``2**e`` goes in two halves, so that
    neither power leaves the dtype's range (denormal x included)."""
    x = emit(x)
    a = emit(ops.abs(x))
    regular = emit(ops.logical_and(ops.isfinite(x), ops.not_equal(x, scalar(0.0))))
    safe = ops.where(regular, a, scalar(1.0))
    e = emit(ops.add(ops.floor(ops.multiply(ops.log(safe), scalar(1.0 / math.log(2.0)))),
                     scalar(1.0)))
    low = emit(ops.floor(ops.multiply(e, scalar(0.5))))
    m = ops.divide(ops.divide(ops.where(regular, x, scalar(1.0)), ops.power(scalar(2.0), low)),
                   ops.power(scalar(2.0), ops.subtract(e, low)))
    m = emit(m)
    too_big = emit(ops.greater_equal(ops.abs(m), scalar(1.0)))
    m = emit(ops.where(too_big, ops.multiply(m, scalar(0.5)), m))
    e = emit(ops.where(too_big, ops.add(e, scalar(1.0)), e))
    too_small = emit(ops.less(ops.abs(m), scalar(0.5)))
    m = ops.where(too_small, ops.multiply(m, scalar(2.0)), m)
    e = ops.where(too_small, ops.subtract(e, scalar(1.0)), e)
    mantissa = ops.where(regular, m, x)
    exponent = ops.where(regular, e, scalar(0.0))
    return mantissa, _astype(ops, exponent, exponent_dtype)


# lgamma / digamma: arguments below GAMMA_SHIFT_BELOW are raised by the recurrence
# Gamma(x + 1) = x Gamma(x), GAMMA_SHIFT steps, into the range of the asymptotic (Stirling)
# series, whose first omitted term is below 1e-12 from 8 on; reflection covers x < 1/2
GAMMA_WORKING_DTYPE = "float64"
_GAMMA_SHIFT = 8
_GAMMA_SHIFT_BELOW = 8.0
# (B_2k / (2k (2k - 1))): lgamma(z) ~ (z - 1/2) log z - z + log(2 pi) / 2 + sum c_k / z^(2k-1)
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188)
# (B_2k / 2k): digamma(z) ~ log z - 1 / (2z) - sum c_k / z^(2k)
_DIGAMMA_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132)


def _gamma_parts(ops: Any, x, scalar: Callable, emit: _Emit):
    """(reflected, the nonpositive-integer poles, the argument at least 1/2, whether it is
    shifted, z = the shifted argument >= 8, x - 2 round(x / 2)): ``x`` below 1/2 reflects to
    ``1 - x``; the reflection's sine and cosine take ``x`` less its nearest even integer,
    exact in floating point and in [-1, 1], so that a large ``x`` keeps its phase and a tiny
    one its digits."""
    reflect = emit(ops.less(x, scalar(0.5)))
    pole = emit(ops.logical_and(ops.less_equal(x, scalar(0.0)), ops.equal(x, ops.floor(x))))
    pos = emit(ops.where(reflect, ops.subtract(scalar(1.0), x), x))
    small = emit(ops.less(pos, scalar(_GAMMA_SHIFT_BELOW)))
    z = emit(ops.where(small, ops.add(pos, scalar(float(_GAMMA_SHIFT))), pos))
    phase = emit(ops.subtract(x, ops.multiply(ops.round(ops.multiply(x, scalar(0.5))),
                                              scalar(2.0))))
    return reflect, pole, pos, small, z, phase


def lgamma(ops: Any, x, scalar: Callable, emit: _Emit = lambda e: e):
    """``log|Gamma(x)|``: inf at 0, the negative integers and both infinities, NaN kept (as
    torch's). Stirling's series at ``z >= 8``, less the log of the product of the recurrence's
    factors for smaller arguments, and ``log(pi / |sin(pi x)|) - lgamma(1 - x)`` below 1/2.
    Give it float64 operands (``GAMMA_WORKING_DTYPE``): the recurrence subtracts logs of about
    10 near lgamma's zeros at 1 and 2, 1e-6 absolute error in float32."""
    x = emit(x)
    reflect, pole, pos, small, z, phase = _gamma_parts(ops, x, scalar, emit)
    sine = ops.sin(ops.multiply(phase, scalar(math.pi)))
    product = pos
    for k in range(1, _GAMMA_SHIFT):
        product = ops.multiply(product, ops.add(pos, scalar(float(k))))
    shifted_by = ops.where(small, ops.log(ops.where(small, product, scalar(1.0))), scalar(0.0))
    inv = emit(ops.divide(scalar(1.0), z))
    series = ops.multiply(_horner(ops, emit(ops.multiply(inv, inv)), _STIRLING[::-1], scalar), inv)
    stirling = ops.add(ops.subtract(ops.multiply(ops.subtract(z, scalar(0.5)), ops.log(z)), z),
                       ops.add(scalar(0.5 * math.log(2 * math.pi)), series))
    positive = emit(ops.subtract(stirling, shifted_by))
    safe_sine = ops.where(pole, scalar(1.0), ops.abs(sine))
    reflected = ops.subtract(ops.subtract(scalar(math.log(math.pi)), ops.log(safe_sine)),
                             positive)
    out = ops.where(reflect, reflected, positive)
    return ops.where(ops.logical_or(pole, ops.isinf(x)), scalar(math.inf), out)


def digamma(ops: Any, x, scalar: Callable, emit: _Emit = lambda e: e):
    """``d/dx log Gamma(x)``: -inf at 0 (inf at -0), NaN at the negative integers and at -inf,
    inf at inf (as torch's). The asymptotic series at ``z >= 8``, less ``sum 1 / (x + k)`` for
    shifted arguments, and ``digamma(1 - x) - pi / tan(pi x)`` below 1/2. Float64 operands
    (``GAMMA_WORKING_DTYPE``), as ``lgamma``'s."""
    x = emit(x)
    reflect, pole, pos, small, z, phase = _gamma_parts(ops, x, scalar, emit)
    harmonic = ops.divide(scalar(1.0), pos)
    for k in range(1, _GAMMA_SHIFT):
        harmonic = ops.add(harmonic, ops.divide(scalar(1.0), ops.add(pos, scalar(float(k)))))
    shifted_by = ops.where(small, harmonic, scalar(0.0))
    inv = emit(ops.divide(scalar(1.0), z))
    inv2 = emit(ops.multiply(inv, inv))
    series = ops.multiply(_horner(ops, inv2, _DIGAMMA_ASYMPTOTIC[::-1], scalar), inv2)
    asymptotic = ops.subtract(ops.subtract(ops.log(z), ops.multiply(inv, scalar(0.5))), series)
    positive = emit(ops.subtract(asymptotic, shifted_by))
    # pi / tan(pi x) = pi cos(pi x) / sin(pi x), both of the reduced phase
    angle = emit(ops.multiply(phase, scalar(math.pi)))
    cosine = ops.cos(angle)
    safe_sine = ops.where(pole, scalar(1.0), ops.sin(angle))
    reflected = ops.subtract(positive, ops.divide(ops.multiply(cosine, scalar(math.pi)),
                                                  safe_sine))
    out = ops.where(reflect, reflected, positive)
    out = ops.where(pole, scalar(math.nan), out)
    below_zero = ops.less(ops.divide(scalar(1.0), x), scalar(0.0))  # (-0.0 gives +inf)
    out = ops.where(ops.equal(x, scalar(0.0)),
                    ops.where(below_zero, scalar(math.inf), scalar(-math.inf)), out)
    out = ops.where(ops.equal(x, scalar(math.inf)), scalar(math.inf), out)
    return ops.where(ops.equal(x, scalar(-math.inf)), scalar(math.nan), out)


def _astype(ops: Any, x, dtype: str):
    """The dialect's cast (``relay.op.cast`` / ``relax.op.astype``)."""
    return ops.astype(x, dtype) if hasattr(ops, "astype") else ops.cast(x, dtype)
