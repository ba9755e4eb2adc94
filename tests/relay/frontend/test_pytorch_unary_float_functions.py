"""from_pytorch and the Relay torch.export importer on torch's unary float functions that
TorchScript keeps as ATen calls: ``tan``, ``asin`` / ``acos`` / ``atan``, the hyperbolic
functions and their inverses (``arc*`` spellings included), ``log2``, ``log10``, ``exp2``,
``deg2rad``, ``rad2deg``, ``signbit``, ``sgn`` and ``positive`` (OpNotImplemented before: an
audio model's ``10 * log10`` power in dB, a pose head's ``atan``), and ``sign`` at NaN. Inputs cover each function's
domain edges, out-of-domain values (NaN), infinities, -0.0 and integer operands (promoted to
float32, as torch's); built native, equal to eager."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 1e-30, 1e4, -1e4, float("inf"), float("-inf"),
             float("nan")]

FUNCTIONS = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
             "arcsin", "arctanh", "log2", "log10", "exp2", "deg2rad", "rad2deg"]


def _inputs():
    return torch.cat([_randn(48) * 2, torch.tensor(_SPECIALS)])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_float_function_matches_eager(name):
    fn = getattr(torch, name)
    _check(Fn(fn), _inputs(), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["atan", "log10", "exp2", "cosh"])
def test_integer_operand_promotes_to_float(name):
    _check(Fn(getattr(torch, name)), torch.arange(1, 9), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["signbit", "sgn", "sign", "positive"])
def test_sign_functions(name):
    """signbit is True at -0.0 and -inf, False at NaN (a bool result); sign and sgn give 0 at
    NaN, as torch's (Relay's sign op keeps the NaN: aten::sign gave NaN before)."""
    _check(Fn(getattr(torch, name)), _inputs())


def test_power_in_decibels():
    """``10 * log10(|X|^2 + eps)`` of a spectrogram's magnitudes."""
    _check(Fn(lambda s: 10 * torch.log10(s.pow(2) + 1e-10)), _randn(2, 16, 9).abs(), rtol=2e-6,
           atol=1e-5)
