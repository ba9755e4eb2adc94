"""relax.frontend.torch.from_exported_program on the fifth round's patterns: ``~mask``
(bitwise_not of bool and integer tensors), scatter_add of graph messages, and torch's int64
accumulation of ``mask.sum()`` / ``cumsum`` (a RoBERTa-style position id and masked mean),
built and run on the Relax VM against PyTorch eager, dtype included."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import Fn  # noqa: E402
from .exported_program_run import run_exported_module as _run  # noqa: E402

nn = torch.nn


def _mask(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).random(shape) > 0.4)


@pytest.mark.parametrize("name,fn", [
    ("not_bool", lambda m: (~m).float()),
    ("not_int", lambda m: ~(m.int() * 5 - 2)),
    ("sum_bool", lambda m: m.sum(1, keepdim=True)),
    ("sum_bool_all", lambda m: m.sum()),
    ("sum_dtype", lambda m: m.int().sum(1, dtype=torch.float32)),
    ("cumsum_int32", lambda m: torch.cumsum(m.int(), 1)),
    ("count_clamped", lambda m: m.sum(-1).clamp(min=1)),
])
def test_mask_ops(name, fn):
    _run(Fn(fn), _mask(3, 9))


def test_scatter_add_messages():
    g = torch.Generator().manual_seed(1)
    dst = torch.randint(0, 10, (30,), generator=g)

    def messages(x):
        idx = dst.view(1, -1, 1).expand(x.shape[0], -1, x.shape[2])
        msg = x.index_select(1, dst.flip(0))
        return torch.zeros_like(x).scatter_add(1, idx, msg)

    _run(Fn(messages), torch.randn(2, 10, 4, generator=g))


def test_roberta_positions_and_masked_mean():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.tok, self.pos = nn.Embedding(50, 8, padding_idx=1), nn.Embedding(20, 8)

        def forward(self, ids):
            real = ids.ne(1)
            pos = torch.cumsum(real.int(), 1) * real.int()
            pos = torch.where(real, pos + 1, torch.full_like(pos, 1)).long()
            x = (self.tok(ids) + self.pos(pos)).masked_fill(~real[..., None], 0.0)
            return x.sum(1) / real.sum(1, keepdim=True).clamp(min=1).float()

    ids = torch.from_numpy(np.random.default_rng(3).integers(2, 50, (3, 12)))
    ids[1, 8:] = 1
    ids[2, :] = 1
    _run(Model(), ids)
