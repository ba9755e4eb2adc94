"""relax.frontend.torch.from_exported_program on what the thirty-second round of new-user models
found missing: ``index_reduce`` (a point cloud's voxel max pooling; every reduction, with and
without ``self``), ``ldexp`` (octave Fourier features) and ``special.i0e``; built and run on the Relax VM
against eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import run_exported as _run  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
def test_index_reduce(include_self):
    idx = torch.tensor([3, 0, 3, 1, 0, 3, 4])                 # repeats; row 2 untouched

    def every(x, s):
        return torch.stack([x.index_reduce(0, idx, s, r, include_self=include_self)
                            for r in ("prod", "mean", "amax", "amin")])
    _run(every, _rand(6, 3, seed=1), _rand(7, 3, seed=2))


def test_index_reduce_inner_axis_int():
    idx = torch.tensor([1, 1, 3, 0, 1, 2])
    x = torch.arange(24).view(2, 4, 3) * 5 - 40
    s = torch.arange(36).view(2, 6, 3) * 3 - 50
    _run(lambda a, b: a.index_reduce(1, idx, b, "mean") + a.index_reduce(1, idx, b, "amin",
                                                                         include_self=False),
         x, s)


def test_ldexp():
    _run(lambda a, k: torch.ldexp(a, k), _rand(4, 6, seed=3), torch.arange(24).view(4, 6) - 12)


def test_special_i0e():
    _run(torch.special.i0e, torch.cat([torch.linspace(-15, 15, 31),
                                       torch.tensor([-300.0, 95.0, 1e4])]))
