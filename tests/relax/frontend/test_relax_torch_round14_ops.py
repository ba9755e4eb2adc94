"""relax.frontend.torch.from_exported_program on the ops the fourteenth round of new-user
models found missing: ``atan2`` (composed from ``atan``, as Relax has no ``atan2``), ``hypot``,
``lerp`` (torch's two-sided formula), ``kthvalue`` and ``searchsorted`` (row-wise, a top-p
sampler's inverse-CDF draw); built and run on the Relax VM against PyTorch eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import run_exported as _run  # noqa: E402

_GRID = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0])
_Y, _X = (g.reshape(-1) for g in torch.meshgrid(_GRID, _GRID, indexing="ij"))


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def test_atan2_every_quadrant_and_axis():
    text = _run(torch.atan2, _Y, _X)
    assert "R.atan(" in text


def test_atan2_random_and_integer_operands():
    _run(torch.atan2, _rand(3, 5), _rand(3, 5, seed=1))
    _run(torch.atan2, _Y.long() * 3 - 1, _X.long() * 2)


def test_hypot():
    _run(torch.hypot, _Y * 3.0, _X - 1.0)


def test_lerp_scalar_weights():
    _run(lambda a, b: torch.stack([torch.lerp(a, b, w) for w in (0.3, 0.5, 1.0, -0.25)]),
         _rand(2, 6), _rand(2, 6, seed=1))


def test_lerp_tensor_weight():
    _run(torch.lerp, _rand(2, 6), _rand(2, 6, seed=1), torch.linspace(-0.5, 1.5, 12).view(2, 6))


def test_kthvalue_values_and_indices():
    x = torch.from_numpy(np.random.default_rng(3).permutation(28).astype("float32")).view(4, 7)

    def fn(x):
        parts = [torch.kthvalue(x, 1, -1), torch.kthvalue(x, 3, 1, True), torch.kthvalue(x, 2, 0)]
        return torch.cat([torch.cat([v.flatten(), i.flatten().float()]) for v, i in parts])

    _run(fn, x)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_rows_of_a_cdf(side):
    """An inverse-CDF draw per batch row (a top-p sampler): ties with the sequence's entries
    in the values, both sides."""
    cdf = torch.tensor([[0.1, 0.2, 0.2, 0.7, 1.0], [0.0, 0.5, 0.5, 0.9, 1.0]])
    u = torch.tensor([[0.2, 0.05, 0.95], [0.5, 0.0, 1.0]])
    _run(lambda c, u: torch.searchsorted(c, u, side=side), cdf, u)


def test_searchsorted_one_d_sequence_int32():
    seq = torch.tensor([-1.0, 0.0, 0.5, 2.0])
    _run(lambda s, x: torch.searchsorted(s, x, out_int32=True, right=True), seq,
         _rand(3, 4))
