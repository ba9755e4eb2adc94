"""relax.frontend.torch.from_exported_program on ``prod`` (``prod.dim_int`` and
``prod.default``), which the tenth round of new-user models found missing: an Instant-NGP hash
grid multiplies its three trilinear factors per corner with ``Tensor.prod(-1)``. Built and run
on the Relax VM against eager, dtype included (integer products accumulate in int64)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import run_exported as _run  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(
        "float32"))


@pytest.mark.parametrize("dim,keep", [(-1, False), (0, True), (1, False)])
def test_prod_dim(dim, keep):
    text = _run(lambda x: x.prod(dim, keepdim=keep), _rand(3, 4, 5))
    assert "R.prod(" in text


def test_prod_all():
    assert "R.prod(" in _run(lambda x: x.prod(), _rand(2, 3))


def test_prod_int_accumulates_in_int64():
    x = torch.from_numpy(np.random.default_rng(1).integers(-3, 4, (2, 5)).astype("int32"))
    text = _run(lambda x: x.prod(1), x)
    assert "int64" in text


def test_prod_trilinear_weights():
    """Instant-NGP's corner weights: per corner, the product over x/y/z of frac or 1 - frac."""
    corners = torch.tensor([[(c >> 2) & 1, (c >> 1) & 1, c & 1] for c in range(8)]).bool()

    def weights(frac):
        return torch.where(corners, frac[:, None], 1 - frac[:, None]).prod(-1)

    _run(weights, _rand(16, 3) - 0.5)
