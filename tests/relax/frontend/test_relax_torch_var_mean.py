"""relax.frontend.torch.from_exported_program on ``torch.var_mean`` / ``torch.std_mean``,
which the sixteenth round of new-user models found missing (ECAPA-TDNN's attentive statistics
pooling): both results, every overload torch.export emits (``.correction``; ``.dim`` with the
unbiased flag), keepdim or squeezed, against PyTorch eager on the Relax VM."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import run_exported as _run  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


@pytest.mark.parametrize("which", ["var_mean", "std_mean"])
@pytest.mark.parametrize("call", [
    lambda f, x: f(x, -1, keepdim=True, correction=0),
    lambda f, x: f(x, (0, 2), unbiased=True),
    lambda f, x: f(x, 1, correction=2),
    lambda f, x: f(x),
], ids=["correction0-keep", "dims-unbiased", "correction2", "all"])
def test_spread_and_mean(which, call):
    def fn(x):
        spread, mean = call(getattr(torch, which), x)
        return torch.cat([spread.reshape(-1), mean.reshape(-1)])

    text = _run(fn, _rand(3, 5, 4) * 2 + 1)
    assert text.count("R.mean(") == 1
