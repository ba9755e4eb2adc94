"""``torch.lgamma`` and ``torch.digamma`` (``frontend_common.torch_special``: Stirling's series
after the recurrence, reflection below 1/2, evaluated in float64) through from_pytorch, the
Relay torch.export importer and the Relax one (OpNotImplemented in all three before: a DeepAR
negative-binomial likelihood, Dirichlet / Beta log densities use them). Built native and
compared with eager on random values, a sweep over both signs, tiny and huge magnitudes, the
poles and the special values (measured: lgamma 1.1e-7 relative, digamma 6e-7 absolute, where
torch's own float32 digamma is that far from its float64 one)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import eager_and_imports  # noqa: E402


def _arguments():
    rng = np.random.default_rng(0)
    return torch.cat([
        torch.from_numpy((rng.standard_normal(300) * 5).astype("float32")),
        torch.linspace(-30, 60, 451), torch.logspace(-30, 30, 31), -torch.logspace(-30, 7, 31),
        torch.tensor([0.0, -0.0, -1.0, -2.0, -7.0, 1.0, 2.0, 0.5, -0.5, 1e-45, 3.4e38, -3.4e38,
                      float("inf"), float("-inf"), float("nan")])])


def _outputs(fn, x):
    """Eager's output and those of from_pytorch, the Relay and the Relax torch.export imports."""
    return eager_and_imports(fn, x, relax=True)


@pytest.mark.parametrize("fn, rtol, atol", [(torch.lgamma, 3e-7, 3e-7),
                                            (torch.digamma, 1e-6, 1e-6)],
                         ids=["lgamma", "digamma"])
def test_gamma_function_matches_eager(fn, rtol, atol):
    """Equal to eager within float32 rounding, the infinities (signs included) and NaNs at
    the same places: lgamma inf at 0, the negative integers and both infinities; digamma -inf
    at 0, inf at -0, NaN at the negative integers."""
    x = _arguments()
    ref, outs = _outputs(fn, x)
    for out in outs:
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, equal_nan=True)


def test_lgamma_of_integers_is_float():
    """An integer operand promotes to float32, as torch's lgamma does: log((n - 1)!) (at 1
    and 2, 6e-14 for torch's exact 0: the float64 recurrence's rounding)."""
    ref, outs = _outputs(torch.lgamma, torch.arange(1, 30))
    for out in outs:
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, ref, rtol=3e-7, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3], ids=["trigamma", "n2", "n3"])
def test_polygamma_matches_eager(n):
    """``torch.polygamma(n, x)`` (``frontend_common.torch_polygamma``: the Hurwitz zeta sum
    with an Euler-Maclaurin tail, reflection below 1/2) equal to eager within float32 rounding
    over both signs (away from the poles, where torch's float32 trigamma has its own 1e-4
    error: compared with torch's float64 there) and at the poles and infinities."""
    rng = np.random.default_rng(n)
    positive = torch.from_numpy(np.concatenate([rng.uniform(0.5, 40, 200),
                                                np.logspace(-6, 8, 15)]).astype("float32"))
    negative = torch.from_numpy((rng.uniform(-12, 0.5, 120)).astype("float32"))
    edges = torch.tensor([0.0, -0.0, -1.0, -3.0, float("inf"), float("-inf"), float("nan")])
    fn = lambda x: torch.polygamma(n, x)  # noqa: E731
    x = torch.cat([positive, negative, edges])
    ref, outs = _outputs(fn, x)
    ref64 = torch.polygamma(n, negative.double()).float().numpy()
    split, end = len(positive), len(positive) + len(negative)
    for out in outs:
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_allclose(out[:split], ref[:split], rtol=5e-7, atol=0)
        np.testing.assert_allclose(out[split:end], ref64, rtol=2e-6, atol=0)
        # (torch's float32 trigamma is about 1e15, not inf, at the negative integers)
        kept = [0, 1, 4, 5, 6] if n == 1 else slice(None)
        np.testing.assert_array_equal(out[end:][kept], ref[end:][kept])


@pytest.mark.parametrize("fn", [torch.special.gammainc, torch.special.gammaincc],
                         ids=["igamma", "igammac"])
def test_incomplete_gamma_matches_eager(fn):
    """``P(a, x)`` / ``Q(a, x)`` (``frontend_common.torch_igamma``: series below ``x = a + 1``,
    continued fraction above, Temme's expansion near ``x = a`` past ``a = 20``) on small and
    large shapes around ``x = a`` up to ``a = 1e4`` (the unrolled series and fraction alone were
    2.6e-3 off at ``a`` in [200, 1000], 0.3 by 1e4), compared with torch's float64 (its float32
    is 4e-6 relative off at ``a`` near 200; these are within 3e-7), and torch's values at zeros,
    infinities, negative and NaN operands."""
    rng = np.random.default_rng(3)
    large = np.exp(rng.uniform(np.log(200), np.log(1e4), 200))
    a = np.concatenate([rng.uniform(0.01, 5, 150), rng.uniform(5, 200, 150), large])
    x = np.concatenate([rng.uniform(0, 8, 150), a[150:300] * rng.uniform(0.7, 1.3, 150),
                        large[:100] * rng.uniform(0.5, 2.0, 100),
                        large[100:] + np.sqrt(large[100:]) * rng.normal(0, 3, 100)])
    edges = [(0, 2), (0, 0), (1, 0), (2, np.inf), (np.inf, 3), (np.inf, np.inf), (-1, 1),
             (3, -1), (3, np.nan), (0.5, 1e-30)]
    a = np.concatenate([a, [e[0] for e in edges]]).astype("float32")
    x = np.concatenate([x, [e[1] for e in edges]]).astype("float32")
    ref, outs = _outputs(lambda t: fn(t[0], t[1]), torch.from_numpy(np.stack([a, x])))
    ref64 = fn(torch.from_numpy(a).double(), torch.from_numpy(x).double()).float().numpy()
    for out in outs:
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_allclose(out[:-10], ref64[:-10], rtol=3e-7, atol=1e-38)
        np.testing.assert_allclose(out[-10:], ref[-10:], rtol=3e-7, atol=0)
