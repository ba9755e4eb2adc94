"""The Relay PyTorch importers (TorchScript and torch.export) on ``torch.var_mean`` and
``torch.std_mean``, which the sixteenth round of new-user models found missing (ECAPA-TDNN's
attentive statistics pooling takes the frame mean and spread in one call): both results of
every schema (unbiased flag, dims with unbiased, dims with correction; keepdim or not) checked
against eager with every kernel native, and the IR sharing one mean between them."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402


@pytest.mark.parametrize("which", ["var_mean", "std_mean"])
@pytest.mark.parametrize("call", [
    lambda f, x: f(x, dim=-1, keepdim=True, correction=0),
    lambda f, x: f(x, (0, 2), unbiased=True),
    lambda f, x: f(x, 1, correction=2, keepdim=False),
    lambda f, x: f(x, unbiased=False),
], ids=["correction0-keep", "dims-unbiased", "correction2", "all-biased"])
def test_spread_and_mean_match_eager(which, call):
    def fn(x):
        spread, mean = call(getattr(torch, which), x)
        return torch.cat([spread.reshape(-1), mean.reshape(-1)])

    _check(Fn(fn), _randn(3, 5, 4) * 2 + 1, rtol=1e-5, atol=1e-5)


def test_attentive_stats_pooling_shares_one_mean():
    def fn(h):
        var, mean = torch.var_mean(h, -1, keepdim=True, correction=0)
        return torch.cat([mean, var.clamp(min=1e-4).sqrt()], 1).squeeze(-1)

    mod = _check(Fn(fn), _randn(2, 6, 9))
    assert mod.astext().count("mean(") == 1
