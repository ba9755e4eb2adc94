"""relax.frontend.torch.from_exported_program on the ops the sixteenth round of new-user
models found missing: ``take_along_dim`` (a Mixture-of-Depths router's row pick, indices
broadcast against the input as torch does), ``rot90`` (test-time augmentation over rotated
inputs), ``count_nonzero`` (SASRec's sequence lengths) and ``masked_scatter`` (a VLM's
image-feature merge, from a probe of ops near the round's); built and run on the Relax VM against PyTorch eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import run_exported as _run  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def _ints(high, *shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, high, shape))


@pytest.mark.parametrize("fn", [
    lambda x, i: torch.take_along_dim(x, i, 2),
    lambda x, i: torch.take_along_dim(x, i[:, :1, :3], -1),
    lambda x, i: torch.take_along_dim(x[:, :1], i, 2),
    lambda x, i: torch.take_along_dim(x, i[..., :1] * 2 - 3, 1),
    lambda x, i: torch.take_along_dim(x, i[0] * 5 + 7),
], ids=["same-shape", "broadcast-indices", "broadcast-input", "negative", "flattened"])
def test_take_along_dim(fn):
    _run(fn, _rand(2, 6, 8), _ints(4, 2, 6, 8))


@pytest.mark.parametrize("k,dims", [(1, (0, 1)), (2, (1, 2)), (3, (2, 1)), (-1, (-2, -1)),
                                    (4, (0, 2))])
def test_rot90(k, dims):
    _run(lambda x: torch.rot90(x, k, dims), _rand(2, 3, 4))


@pytest.mark.parametrize("fn", [
    lambda x: torch.count_nonzero(x),
    lambda x: torch.count_nonzero(x, 1),
    lambda x: torch.count_nonzero(x, (0, 2)),
    lambda x: torch.count_nonzero(x > 0, -1),
], ids=["all", "dim", "dims", "bool"])
def test_count_nonzero(fn):
    _run(fn, torch.relu(_rand(3, 4, 5)))


def test_masked_scatter():
    ids = _ints(5, 2, 7)
    ids[0, 1:4] = 3
    n = int((ids == 3).sum())
    _run(lambda e, i, f: e.masked_scatter((i == 3)[..., None], f), _rand(2, 7, 4), ids,
         _rand(n + 2, 4, seed=1))
    _run(lambda x: x.masked_scatter(x > 0, x.flip(0) * 10), _rand(3, 4, 5))
