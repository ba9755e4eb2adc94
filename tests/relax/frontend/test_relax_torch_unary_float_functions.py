"""The Relax torch.export importer on core-ATen unary functions it left out: ``tan``,
``asin`` / ``acos`` / ``atan``, the hyperbolic functions and their inverses, ``trunc``,
``log2`` / ``log10`` (float64 inside: exact at powers), ``exp2``, ``signbit`` and ``rrelu`` in
eval mode (OpNotImplemented before). Domain edges, NaN, infinities, -0.0 and integers (promoted
to float32); compared with eager."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the Relax torch.export importer needs `torch`")
import torch.nn.functional as F  # noqa: E402

from .exported_program_run import run_exported  # noqa: E402

_SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 1e-30, 1e4, -1e4, float("inf"), float("-inf"),
             float("nan")]


def _inputs():
    g = torch.Generator().manual_seed(0)
    return torch.cat([torch.randn(48, generator=g) * 2, torch.tensor(_SPECIALS)])


@pytest.mark.parametrize("name", ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
                                  "acosh", "atanh", "trunc", "log2", "log10", "exp2",
                                  "signbit"])
def test_unary_matches_eager(name):
    run_exported(getattr(torch, name), _inputs())


def test_log2_log10_exact_at_powers():
    run_exported(lambda v: torch.stack([torch.log2(v), torch.log10(v)]),
                 torch.tensor([1.0, 8.0, 1024.0, 2.0 ** -20, 10.0, 1000.0, 1e-5, 1e30]))


@pytest.mark.parametrize("name", ["atan", "log10", "exp2", "trunc"])
def test_integer_operands(name):
    run_exported(getattr(torch, name), torch.arange(-3, 9) if name != "log10" else
                 torch.arange(1, 12))


def test_rrelu_eval_is_a_leaky_relu():
    run_exported(lambda v: F.rrelu(v, 0.1, 0.3, training=False), _inputs())


def test_logaddexp2_through_isinf():
    """torch decomposes logaddexp2 with an isinf test (equal infinities)."""
    a, b = _inputs(), torch.flip(_inputs(), [0])
    run_exported(torch.logaddexp2, a, b)
    run_exported(lambda v: torch.isinf(v), a)
