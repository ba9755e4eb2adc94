"""relax.frontend.torch.from_exported_program on what the thirteenth round of new-user models
brought: Hugging Face's static KV cache (``index_copy_`` at ``cache_position`` and
``v_cache[:, :, cache_position] = v``, index puts through sliced leading axes,
``frontend_common.index_put_plan``), AWQ's 4-bit unpacking ``(q >> 4) & 0xF``
(``frontend_common.bit_shift``, out-of-range amounts as torch), and the ``_assert_async``
check ``F.one_hot`` records (a Mixtral router's). Built and run on the Relax VM against eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402

from .exported_program_run import run_exported as _run  # noqa: E402


def _randn(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def _ints(*shape, lo=-1000, hi=1000, dtype=torch.int32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g, dtype=dtype)


def test_static_cache_writes():
    def write(k_cache, v_cache, k, v, pos):
        k_cache = k_cache.clone()
        k_cache.index_copy_(2, pos, k)
        v_cache = v_cache.clone()
        v_cache[:, :, pos] = v
        return k_cache * 2.0 + v_cache

    text = _run(write, _randn(1, 2, 8, 4), _randn(1, 2, 8, 4, seed=1), _randn(1, 2, 3, 4, seed=2),
                _randn(1, 2, 3, 4, seed=3), torch.tensor([5, 1, 6]))
    assert "permute_dims" in text and "index_put" in text


def test_put_on_axes_apart_and_index_copy_of_axis_1():
    def put(x, v, src):
        x = x.clone()
        x[:, torch.tensor([2, 0]), :, torch.tensor([1, 3])] = v
        return x + x.index_copy(1, torch.tensor([1]), src)

    _run(put, _randn(2, 3, 4, 5), _randn(2, 2, 4, seed=1), _randn(2, 1, 4, 5, seed=2))


def test_awq_nibbles_and_out_of_range_shifts():
    def unpack(q, x, s):
        w = torch.stack([q & 0xF, q >> 4, q << 1], -1).flatten(1).float()
        return torch.cat([w.sum(-1), (x >> s).float().sum(-1), (x << s).float().sum(-1),
                          torch.bitwise_right_shift(x, 3).float().sum(-1)])

    s = torch.tensor([[0, 1, 31, 32], [-1, 40, 4, 7]], dtype=torch.int32)
    _run(unpack, _ints(2, 6, lo=0, hi=256, dtype=torch.uint8), _ints(2, 4), s)


def test_one_hot_assertion_is_dropped():
    def route(logits):
        choice = logits.argmax(-1)
        return F.one_hot(choice, 5).cumsum(0) * 2

    _run(route, _randn(7, 5))


def test_bfloat16_table_widened():
    """A bfloat16 table widened with ``.float()`` (``frontend_common.torch_arrays``)."""
    from .exported_program_run import run_exported_module

    class Table(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("w", (0.5 * torch.randn(10, 4)).to(torch.bfloat16))

        def forward(self, idx):
            return F.embedding(idx, self.w).float() * 2.0

    run_exported_module(Table(), torch.tensor([[3, 0, 9], [1, 1, 4]]))


def test_writes_through_partial_views():
    """``x[:, 1:3] = v`` and kin: torch.export's slice_scatter / select_scatter / copy / fill."""

    def writes(x, v):
        x = x.clone()
        x[:, 1:3] = v
        x[:, 0::2] *= 2.0
        x[1, 1:3] += v[0]
        x[:, -1] = 7.0
        x[0].zero_()
        return x + 1.0

    _run(writes, _randn(3, 5), _randn(3, 2, seed=1))
