"""The PyTorch importers on what the thirty-first round of new-user models found missing:
``F.scaled_dot_product_attention(..., enable_gqa=True)`` (a Qwen3-style decoder's grouped-query
attention, the key / value heads fewer than the query heads), through torch.jit.trace ->
``from_pytorch`` and torch.export -> ``from_exported_program``, built native and checked against
eager."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import check_both_importers  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402


class GQA(nn.Module):
    def __init__(self, causal: bool, mask: bool):
        super().__init__()
        self.causal, self.mask = causal, mask

    def forward(self, q, k, v):
        m = None
        if self.mask:  # a bool mask broadcast over the heads: keys past 4 hidden from query 0
            m = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool)
            m[0, 4:] = False
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=self.causal,
                                              enable_gqa=True)


@pytest.mark.parametrize("causal,mask", [(True, False), (False, True)])
def test_sdpa_enable_gqa(causal, mask):
    q, k, v = _randn(2, 6, 5, 8, seed=1), _randn(2, 2, 5, 8, seed=2), _randn(2, 2, 5, 8, seed=3)
    check_both_importers(GQA(causal, mask), q, k, v, rtol=1e-5, atol=1e-6)


def test_sdpa_enable_gqa_equal_heads_unchanged():
    """With as many key / value heads as query heads ``enable_gqa`` is a no-op."""
    q, k, v = _randn(1, 3, 4, 8, seed=4), _randn(1, 3, 4, 8, seed=5), _randn(1, 3, 4, 8, seed=6)
    check_both_importers(GQA(True, False), q, k, v, exported=False)
