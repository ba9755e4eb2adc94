"""torch's regularized incomplete gamma functions ``igamma`` / ``special.gammainc`` (``P(a,
x)``) and ``igammac`` / ``special.gammaincc`` (``Q(a, x) = 1 - P``), composed for the importers
of both dialects: the power series of ``P`` below ``x = a + 1`` and Legendre's continued
fraction of ``Q`` (modified Lentz) above, each unrolled a fixed number of steps, the other
function as ``1 - `` it; and, for ``a > TEMME_ABOVE`` where ``x`` is near ``a`` (``|eta| <
TEMME_ETA``: the series and the fraction would need about ``sqrt(a)`` steps there), Temme's
uniform asymptotic expansion

    Q = erfc(eta sqrt(a / 2)) / 2 + exp(-a eta^2 / 2) / sqrt(2 pi a) sum_k C_k(eta) a^-k,
    eta^2 / 2 = s - log(1 + s), s = (x - a) / a, eta of the sign of s,

whose coefficients ``C_k`` (power series in ``eta``) are derived exactly at first use
(``temme_coefficients``): ``C_0 = 1 / mu - 1 / eta`` with ``mu = s`` as a series in ``eta``,
``C_k = C_{k-1}' / eta + (-1)^k g_k / mu`` with ``g_k`` the coefficients of Stirling's series
of ``Gamma(a) / (sqrt(2 pi / a) (a / e)^a)``, and its ``erfc`` to float64's precision
(``_erfc_pair``). Measured against mpmath / scipy in float64: see ``tests/frontend_common/
test_torch_igamma.py`` (before the expansion: 2.6e-3 relative at ``a`` in [200, 1000] and 0.3
up to 1e4).
torch's special values: NaN for a negative ``a`` or ``x``, ``P(0, x > 0) = 1``, ``P(a, 0) =
0``, ``P(a, inf) = 1``, ``P(inf, x) = 0``.

Give it float64 operands (``torch_special.GAMMA_WORKING_DTYPE``); ``ops`` / ``scalar`` /
``emit`` as in torch_special.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .torch_special import lgamma, log1p

__all__ = ["TEMME_ABOVE", "TEMME_ETA", "igamma", "igammac", "temme_coefficients"]

_SERIES_TERMS = 96
_FRACTION_STEPS = 40
_TINY = 1e-300
TEMME_ABOVE = 20.0  # (a^-k shrinks fast enough past it: 4e-13 at 20 with 8 terms)
TEMME_ETA = 1.0  # (|eta| < 1: x in about [0.24 a, 2.8 a]; the series in eta converge to 3.5)
_TEMME_TERMS = 8  # C_0 .. C_7
_TEMME_POWERS = 20  # eta^0 .. eta^19 in each
_LOG1PMX_SERIES_BELOW = 0.05
# erfc to float64's precision (torch_special's is float32's): below ERFC_SERIES_BELOW, 1 - erf
# with erf = 2 / sqrt(pi) e^-z^2 sum_n 2^n z^(2n+1) / (2n+1)!! (positive terms), above it
# e^-z^2 / sqrt(pi) / (z + 1/2 / (z + 1 / (z + 3/2 / (z + ...)))) from a fixed depth;
# measured 5.5e-14 relative against mpmath on [-6, 80]
_ERFC_SERIES_BELOW = 1.8
_ERFC_SERIES_TERMS = 40
_ERFC_FRACTION_DEPTH = 60


def _series_mul(a: list, b: list, n: int) -> list:
    out = [Fraction(0)] * n
    for i, x in enumerate(a[:n]):
        if x:
            for j, y in enumerate(b[:n - i]):
                out[i + j] += x * y
    return out


def _series_inverse(a: list, n: int) -> list:
    """``1 / a`` to ``n`` terms (``a[0] != 0``)."""
    out = [Fraction(0)] * n
    out[0] = 1 / a[0]
    for k in range(1, n):
        out[k] = -sum(a[j] * out[k - j] for j in range(1, min(k, len(a) - 1) + 1)) / a[0]
    return out


def _stirling_gamma_star(count: int) -> list:
    """``g_k``: ``Gamma(a) / (sqrt(2 pi / a) (a / e)^a) ~ sum_k g_k a^-k``, from ``log`` of it,
    ``sum_m B_2m / (2m (2m - 1) a^(2m - 1))`` (Bernoulli numbers ``B``), exponentiated."""
    bernoulli = [Fraction(1)]
    for m in range(1, 2 * count + 1):
        bernoulli.append(-sum(math.comb(m + 1, k) * bernoulli[k] for k in range(m)) / (m + 1))
    log_series = [Fraction(0)] * count
    for m in range(1, count):
        if 2 * m - 1 < count:
            log_series[2 * m - 1] = bernoulli[2 * m] / (2 * m * (2 * m - 1))
    g = [Fraction(1)] + [Fraction(0)] * (count - 1)
    for k in range(1, count):  # g' = (log g)' g
        g[k] = sum(j * log_series[j] * g[k - j] for j in range(1, k + 1)) / k
    return g


@functools.cache
def temme_coefficients(terms: int = _TEMME_TERMS,
                       powers: int = _TEMME_POWERS) -> tuple[tuple[float, ...], ...]:
    """``d[k][n]``: ``C_k(eta) = sum_n d[k][n] eta^n`` of Temme's expansion (see the module),
    exact rationals rounded to float (``d[0][:2]`` is ``-1/3, 1/12``)."""
    size = powers + 2 * terms + 3  # (each C_k is two powers shorter than C_{k-1})
    # eta / mu = sqrt(2 (mu - log(1 + mu)) / mu^2) = sqrt(sum_k 2 (-1)^k mu^k / (k + 2))
    inner = [Fraction(2 * (-1) ** k, k + 2) for k in range(size + 1)]
    root = [Fraction(1)] + [Fraction(0)] * size
    for k in range(1, size + 1):
        root[k] = (inner[k] - sum(root[j] * root[k - j] for j in range(1, k))) / 2
    # mu(eta) by Lagrange inversion: [eta^n] mu = [mu^(n-1)] (mu / eta)^n / n
    ratio = _series_inverse(root, size + 1)
    mu, power = [Fraction(0)] * (size + 1), [Fraction(1)] + [Fraction(0)] * size
    for n in range(1, size + 1):
        power = _series_mul(power, ratio, size + 1)
        mu[n] = power[n - 1] / n
    eta_over_mu = _series_inverse(mu[1:], size)  # T: 1 / mu = T / eta, T[0] = 1
    c = eta_over_mu[1:]  # C_0 = (T - 1) / eta
    g = _stirling_gamma_star(terms)
    rows = [c[:powers]]
    for k in range(1, terms):
        sign = (-1) ** k
        # (the 1 / eta terms of C_{k-1}' / eta and of (-1)^k g_k / mu cancel)
        c = [(p + 2) * c[p + 2] + sign * g[k] * eta_over_mu[p + 1] for p in range(len(c) - 2)]
        rows.append(c[:powers])
    return tuple(tuple(float(v) for v in row) for row in rows)


def _log_prefactor(ops: Any, a, x, scalar: Callable, emit: Callable):
    """``a log x - x - lgamma(a)``: the log of ``x^a e^-x / Gamma(a)``."""
    return emit(ops.subtract(ops.subtract(ops.multiply(a, ops.log(x)), x),
                             lgamma(ops, a, scalar, emit)))


def _series_p(ops: Any, a, x, log_prefactor, scalar: Callable, emit: Callable):
    """``P = x^a e^-x / Gamma(a + 1) * sum_k x^k / ((a + 1) ... (a + k))``."""
    term = emit(ops.divide(scalar(1.0), a))
    total = term
    for k in range(1, _SERIES_TERMS):
        term = emit(ops.divide(ops.multiply(term, x), ops.add(a, scalar(float(k)))))
        total = ops.add(total, term)
    return ops.multiply(ops.exp(log_prefactor), total)


def _fraction_q(ops: Any, a, x, log_prefactor, scalar: Callable, emit: Callable):
    """``Q = x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...))``."""
    tiny = scalar(_TINY)

    def guarded(v):
        return emit(ops.where(ops.less(ops.abs(v), tiny), tiny, v))

    b = emit(ops.add(ops.subtract(x, a), scalar(1.0)))
    c = scalar(1.0 / _TINY)
    d = guarded(b)
    d = emit(ops.divide(scalar(1.0), d))
    h = d
    for i in range(1, _FRACTION_STEPS):
        an = ops.multiply(scalar(float(-i)), ops.subtract(scalar(float(i)), a))
        an = emit(an)
        b = emit(ops.add(b, scalar(2.0)))
        d = guarded(ops.add(ops.multiply(an, d), b))
        c = guarded(ops.add(b, ops.divide(an, c)))
        d = emit(ops.divide(scalar(1.0), d))
        h = emit(ops.multiply(h, ops.multiply(d, c)))
    return ops.multiply(ops.exp(log_prefactor), h)


def _erfc_pair(ops: Any, z, scalar: Callable, emit: Callable):
    """``(erfc(z), erfc(-z))`` to float64's precision (see ``_ERFC_SERIES_BELOW``), each from
    ``erfc(|z|)`` without cancelling its digits: float64 operands."""
    z = emit(z)
    az = emit(ops.abs(z))
    twice_square = emit(ops.multiply(ops.multiply(az, az), scalar(2.0)))
    term, total = az, az
    for n in range(1, _ERFC_SERIES_TERMS):
        term = emit(ops.divide(ops.multiply(term, twice_square), scalar(2.0 * n + 1.0)))
        total = ops.add(total, term)
    gauss = emit(ops.exp(ops.negative(ops.multiply(az, az))))
    series = ops.subtract(scalar(1.0), ops.multiply(ops.multiply(gauss, total),
                                                    scalar(2.0 / math.sqrt(math.pi))))
    # (the fraction divides by az: 1 where the series is taken, so that no 0 is divided by)
    fz = emit(ops.where(ops.less(az, scalar(_ERFC_SERIES_BELOW)), scalar(1.0), az))
    fraction = fz
    for k in range(_ERFC_FRACTION_DEPTH, 0, -1):
        fraction = emit(ops.add(fz, ops.divide(scalar(k / 2.0), fraction)))
    tail = ops.divide(ops.multiply(gauss, scalar(1.0 / math.sqrt(math.pi))), fraction)
    right = emit(ops.where(ops.less(az, scalar(_ERFC_SERIES_BELOW)), series, tail))
    left = emit(ops.subtract(scalar(2.0), right))
    negative = emit(ops.less(z, scalar(0.0)))
    return ops.where(negative, left, right), ops.where(negative, right, left)


def _temme(ops: Any, a, x, scalar: Callable, emit: Callable):
    """``(P, Q, |eta| < TEMME_ETA and a > TEMME_ABOVE)`` by Temme's expansion (the module)."""
    sigma = emit(ops.divide(ops.subtract(x, a), a))
    # sigma - log(1 + sigma) >= 0: a series where it cancels
    powers, small = sigma, scalar(0.0)
    for k in range(2, 18):
        powers = ops.multiply(powers, sigma)
        small = ops.add(small, ops.multiply(powers, scalar((-1) ** k / k)))
    large = ops.subtract(sigma, log1p(ops, sigma, scalar, emit))
    near = ops.less(ops.abs(sigma), scalar(_LOG1PMX_SERIES_BELOW))
    half_eta_sq = emit(ops.maximum(ops.where(near, small, large), scalar(0.0)))
    eta = emit(ops.multiply(ops.sign(sigma), ops.sqrt(ops.multiply(half_eta_sq, scalar(2.0)))))
    inverse_a = emit(ops.divide(scalar(1.0), a))
    total = None
    for row in reversed(temme_coefficients()):
        ck = scalar(row[-1])
        for d in reversed(row[:-1]):
            ck = ops.add(ops.multiply(ck, eta), scalar(d))
        total = ck if total is None else ops.add(ops.multiply(total, inverse_a), ck)
    correction = emit(ops.divide(ops.multiply(ops.exp(ops.negative(ops.multiply(a, half_eta_sq))),
                                              total),
                                 ops.sqrt(ops.multiply(a, scalar(2 * math.pi)))))
    z = emit(ops.multiply(eta, ops.sqrt(ops.multiply(a, scalar(0.5)))))
    upper, lower = _erfc_pair(ops, z, scalar, emit)
    q = ops.add(ops.multiply(scalar(0.5), upper), correction)
    p = ops.subtract(ops.multiply(scalar(0.5), lower), correction)
    window = ops.logical_and(ops.greater(a, scalar(TEMME_ABOVE)),
                             ops.less(ops.abs(eta), scalar(TEMME_ETA)))
    return p, q, emit(window)


def _regularized(ops: Any, a, x, scalar: Callable, emit: Callable, lower: bool):
    a, x = emit(a), emit(x)
    log_prefactor = _log_prefactor(ops, a, x, scalar, emit)
    series = emit(_series_p(ops, a, x, log_prefactor, scalar, emit))
    fraction = emit(_fraction_q(ops, a, x, log_prefactor, scalar, emit))
    temme_p, temme_q, in_window = _temme(ops, a, x, scalar, emit)
    one = scalar(1.0)
    use_series = emit(ops.less(x, ops.add(a, one)))
    if lower:
        out = ops.where(use_series, series, ops.subtract(one, fraction))
        out = ops.where(in_window, temme_p, out)
        at_zero_a, at_zero_x, at_inf_x, at_inf_a = one, scalar(0.0), one, scalar(0.0)
    else:
        out = ops.where(use_series, ops.subtract(one, series), fraction)
        out = ops.where(in_window, temme_q, out)
        at_zero_a, at_zero_x, at_inf_x, at_inf_a = scalar(0.0), one, scalar(0.0), one
    zero = scalar(0.0)
    out = ops.where(ops.equal(a, zero), at_zero_a, out)
    out = ops.where(ops.equal(x, zero), at_zero_x, out)
    out = ops.where(ops.equal(a, scalar(math.inf)), at_inf_a, out)
    out = ops.where(ops.equal(x, scalar(math.inf)), at_inf_x, out)
    invalid = ops.logical_or(ops.less(a, zero), ops.less(x, zero))
    # (both 0 or both infinite: torch's NaN)
    both_zero = ops.logical_and(ops.equal(a, zero), ops.equal(x, zero))
    both_inf = ops.logical_and(ops.equal(a, scalar(math.inf)), ops.equal(x, scalar(math.inf)))
    invalid = ops.logical_or(invalid, ops.logical_or(both_zero, both_inf))
    return ops.where(invalid, scalar(math.nan), out)


def igamma(ops: Any, a, x, scalar: Callable, emit: Callable = lambda e: e):
    """The regularized lower incomplete gamma ``P(a, x)`` (float64 operands)."""
    return _regularized(ops, a, x, scalar, emit, lower=True)


def igammac(ops: Any, a, x, scalar: Callable, emit: Callable = lambda e: e):
    """The regularized upper incomplete gamma ``Q(a, x) = 1 - P(a, x)`` (float64 operands)."""
    return _regularized(ops, a, x, scalar, emit, lower=False)
