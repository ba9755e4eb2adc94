"""``frontend_common.torch_igamma`` evaluated on numpy through a shim of the operator namespace
(the same composition the importers emit): Temme's coefficients derived exactly (their known
leading values, the cancelled poles), and ``P`` / ``Q`` at integer ``a`` from 0.5 to 1e4 against
the finite sum ``Q(n, x) = e^-x sum_{k<n} x^k / k!`` (float32's precision: the expansion's erfc
is torch_special's, 1.2e-7 relative); torch itself is compared in the importers' tests."""

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


def _exact_q(n: int, x: float) -> float:
    """``Q(n, x)`` for a positive integer ``n``: the terms in logs, summed exactly rounded."""
    return math.fsum(math.exp(k * math.log(x) - x - math.lgamma(k + 1)) for k in range(n))


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
    ref_p = np.array([1 - v if v < 0.5 else math.nan for v in ref_q])
    np.testing.assert_allclose(q, ref_q, rtol=3e-7, atol=1e-300)
    fine = ~np.isnan(ref_p)  # (1 - Q loses P's digits where Q > 1/2: P checked as 1 - Q)
    np.testing.assert_allclose(p[fine], ref_p[fine], rtol=3e-7)
    np.testing.assert_allclose(p + q, 1.0, rtol=3e-7)
