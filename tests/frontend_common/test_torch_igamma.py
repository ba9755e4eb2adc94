"""``frontend_common.torch_igamma`` evaluated on numpy through a shim of the operator namespace
(the same composition the importers emit): Temme's coefficients derived exactly (their known
leading values, the cancelled poles), and ``P`` / ``Q`` at integer ``a`` from 1 to 1e4 against
the Poisson sums ``Q(n, x) = e^-x sum_{k<n} x^k / k!`` (``P``: over ``k >= n``) to 1e-9
relative (the sums' terms are exact to about ``x`` ulps; measured against mpmath the
composition is within 2e-12 up to ``a = 1e4``); torch is compared in the importers' tests."""

import math

import numpy as np
import pytest

from minitvm.frontend_common import torch_igamma


class _NumpyOps:
    """The operators the composition calls, as numpy functions (errors of state ignored)."""

    def __getattr__(self, name):
        fn = {"less": np.less, "equal": np.equal, "where": np.where, "sign": np.sign,
              "logical_or": np.logical_or, "logical_and": np.logical_and, "trunc": np.trunc,
              "less_equal": np.less_equal, "greater": np.greater, "isinf": np.isinf,
              "minimum": np.minimum, "maximum": np.maximum}.get(name) or getattr(np, name)

        def call(*args):
            with np.errstate(all="ignore"):
                return fn(*args)

        return call


def _poisson_terms(x: float, ks) -> float:
    """``sum_k e^-x x^k / k!`` over ``ks``: the terms in logs, summed exactly rounded."""
    return math.fsum(math.exp(k * math.log(x) - x - math.lgamma(k + 1)) for k in ks)


def _exact_q(n: int, x: float) -> float:
    """``Q(n, x)`` for a positive integer ``n``: the Poisson probability of fewer than ``n``."""
    return _poisson_terms(x, range(n))


def _exact_p(n: int, x: float) -> float:
    """``P(n, x)``: of at least ``n`` (the terms past ``x + 40 sqrt(x) + 100`` are below
    1e-300 of the largest)."""
    return _poisson_terms(x, range(n, int(max(n, x) + 40 * math.sqrt(x) + 100)))


def test_temme_coefficients_are_the_known_rationals():
    d = torch_igamma.temme_coefficients()
    assert len(d) == 8 and all(len(row) == 20 for row in d)
    np.testing.assert_allclose(d[0][:4], [-1 / 3, 1 / 12, -2 / 135, 1 / 864], rtol=1e-15)
    np.testing.assert_allclose([d[1][0], d[1][1], d[2][0]], [-1 / 540, -1 / 288, 25 / 6048],
                               rtol=1e-15)


@pytest.mark.parametrize("n", [1, 7, 25, 300, 2000, 10000])
def test_p_and_q_match_the_finite_sum(n):
    root = math.sqrt(n)
    xs = np.array([n * 0.3, n * 0.6, n - 3 * root, n - root, n - 0.5, n, n + 0.5, n + root,
                   n + 3 * root, n * 1.5, n * 3])
    xs = xs[xs > 0]
    a = np.full(xs.shape, float(n))
    p = torch_igamma.igamma(_NumpyOps(), a, xs, np.float64)
    q = torch_igamma.igammac(_NumpyOps(), a, xs, np.float64)
    ref_q = np.array([_exact_q(n, x) for x in xs])
    ref_p = np.array([_exact_p(n, x) for x in xs])
    np.testing.assert_allclose(q, ref_q, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(p, ref_p, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(p + q, 1.0, rtol=1e-12)
