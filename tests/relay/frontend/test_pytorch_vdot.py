"""relay.frontend.pytorch: ``torch.vdot`` of real vectors (``dot``, the first operand's
conjugate being itself), through TorchScript and torch.export, the latter as the parametrized
``spectral_norm`` records it (sigma = vdot(u, W v)) in an eval-mode forward."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn, check_both_importers, seeded_module  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402


def test_vdot_real_vectors_as_dot():
    check_both_importers(Fn(lambda a, b: torch.vdot(a, b).reshape(1) * a), _randn(7),
                         _randn(7, seed=1), rtol=1e-5, atol=1e-6)


def test_spectral_norm_parametrization_eval_forward():
    from torch.nn.utils.parametrizations import spectral_norm

    lin = seeded_module(lambda: spectral_norm(torch.nn.Linear(6, 5)))
    check_both_importers(lin.eval(), _randn(3, 6), rtol=1e-5, atol=1e-6)
