"""relax.frontend.torch.from_exported_program on what the thirty-first round of new-user models
found missing: ``F.scaled_dot_product_attention(..., enable_gqa=True)`` with fewer key / value
heads than query heads (a Qwen3-style decoder); built and run on the Relax VM against eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402

from .exported_program_run import run_exported as _run  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


@pytest.mark.parametrize("causal", [True, False])
def test_sdpa_enable_gqa(causal):
    text = _run(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=causal, enable_gqa=True),
        _rand(2, 8, 5, 4, seed=1), _rand(2, 2, 5, 4, seed=2), _rand(2, 2, 5, 4, seed=3))
    assert "R.repeat(" in text
