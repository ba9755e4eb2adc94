"""relax.frontend.torch.from_exported_program on ``torch.sort`` (values and int64 indices, the
stable overload, sparsemax's sort-cumsum-gather threshold) and ``&`` / ``|`` / ``^`` of masks
(logical) and integers (bitwise), as the seventh round's sparsemax attention and KAN layer
use them: built and run on the Relax VM against PyTorch eager, dtype included."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import run_exported as _run  # noqa: E402

nn = torch.nn


def _distinct(*shape, seed=0):
    """Values without ties (so the sort's indices are unique)."""
    n = int(np.prod(shape))
    v = np.random.default_rng(seed).permutation(n).astype("float32") / n - 0.5
    return torch.from_numpy(v.reshape(shape))


@pytest.mark.parametrize("name,fn", [
    ("values_last", lambda x: torch.sort(x).values),
    ("values_desc_dim0", lambda x: torch.sort(x, dim=0, descending=True)[0]),
    ("indices", lambda x: torch.sort(x, dim=1, descending=True).indices),
    ("stable", lambda x: torch.sort(x, dim=-1, stable=True)[1] * 2),
    ("stable_desc_dim0", lambda x: torch.sort(x, dim=0, descending=True, stable=True)[0]),
])
def test_sort(name, fn):
    text = _run(fn, _distinct(4, 7))
    assert "sort(" in text


def test_sparsemax():
    def sparsemax(z):
        zs = torch.sort(z, dim=-1, descending=True).values
        rng = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
        cs = zs.cumsum(-1)
        k = (1 + rng * zs > cs).to(z.dtype).sum(-1, keepdim=True)
        tau = (cs.gather(-1, k.long() - 1) - 1) / k
        return torch.clamp(z - tau, min=0)

    z = _distinct(3, 5, 9) * 6
    _run(sparsemax, z)
    assert torch.allclose(sparsemax(z).sum(-1), torch.ones(3, 5))  # (a distribution)


def _mask(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).random(shape) > 0.5)


@pytest.mark.parametrize("name,fn,op", [
    ("and_masks", lambda a, b: (a & b).float(), "logical_and"),
    ("or_masks", lambda a, b: (a | b).float(), "logical_or"),
    ("xor_masks", lambda a, b: (a ^ b).float(), "logical_xor"),
    ("and_ints", lambda a, b: (a.int() * 7 + 3) & (b.int() * 5 + 6), "bitwise_and"),
    ("or_int_scalar", lambda a, b: (a.long() * 6) | 9 + b.long(), "bitwise_or"),
    ("xor_ints", lambda a, b: (a.int() * 12) ^ (b.int() * 10), "bitwise_xor"),
])
def test_bitwise(name, fn, op):
    text = _run(fn, _mask(3, 8), _mask(3, 8, seed=1))
    assert op in text


def test_knot_interval_indicator():
    """A KAN's cubic B-spline order 0: ``(x >= g[:-1]) & (x < g[1:])``."""
    g = torch.linspace(-1, 1, 9)
    x = torch.from_numpy(np.random.default_rng(2).uniform(-1.2, 1.2, (5, 4)).astype("float32"))
    _run(lambda x: ((x[..., None] >= g[:-1]) & (x[..., None] < g[1:])).float().sum(-1) + x, x)
