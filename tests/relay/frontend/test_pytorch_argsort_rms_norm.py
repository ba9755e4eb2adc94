"""The Relay PyTorch importers (TorchScript and torch.export) on two ops the tenth round of
new-user models found missing (benchmarks/new_user_models_tenth.py): ``argsort`` (ToMe ranks
its token pairs by similarity) and ``rms_norm`` (``nn.RMSNorm``, the Differential
Transformer's). Each built native and compared with eager, plus the imported IR's form."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402


@pytest.mark.parametrize("dim,descending", [(-1, False), (-1, True), (0, True), (1, False)])
def test_argsort(dim, descending):
    mod = _check(Fn(lambda x: x.argsort(dim=dim, descending=descending)), _randn(3, 5, 4))
    text = mod.astext()
    assert "argsort(" in text and 'dtype="int64"' in text


@pytest.mark.parametrize("descending", [False, True])
def test_argsort_stable_keeps_ties_in_order(descending):
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 1.0, 3.0], [0.0, 3.0, 1.0, 1.0, 1.0, 3.0]])
    _check(Fn(lambda x: torch.argsort(x, dim=-1, descending=descending, stable=True)), x)


def test_argsort_then_gather_as_tome_does():
    """Rank rows by their best score, keep the indices of the top two, gather those rows."""

    def merge(x):
        order = x.amax(-1).argsort(-1, descending=True)[..., None]
        return x.gather(1, order[:, :2].expand(-1, -1, x.shape[-1]))

    _check(Fn(merge), _randn(2, 6, 5))


@pytest.mark.parametrize("shape,affine,eps", [((16,), True, 1e-5), ((16,), False, None),
                                              ((6, 16), True, 1e-6)])
def test_rms_norm(shape, affine, eps):
    torch.manual_seed(1)
    m = nn.RMSNorm(shape, eps=eps, elementwise_affine=affine)
    if affine:
        nn.init.uniform_(m.weight, 0.5, 1.5)
    mod = _check(m, _randn(2, 6, 16) * 3.0, rtol=1e-5, atol=1e-5)
    text = mod.astext()
    assert "rsqrt(" in text and "mean(" in text and ("multiply(%" in text)


class _NormThenLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(torch.nn.functional.rms_norm(x, (8,)))


def test_rms_norm_functional_in_a_block():
    torch.manual_seed(2)
    _check(_NormThenLinear(), _randn(1, 4, 8))
