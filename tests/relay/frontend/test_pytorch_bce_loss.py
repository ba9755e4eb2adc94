"""relay.frontend.from_pytorch (and from_exported_program) on the binary cross-entropy losses,
which round 17's VAE reached for (its reconstruction term ``binary_cross_entropy_with_logits``):
every reduction, ``weight`` and ``pos_weight``, logits large enough that a naive
``log(1 + exp(-x))`` overflows, logits tiny enough that ``log(1 + u)`` loses u (the log1p
form), and probabilities at 0 and 1 where torch clamps each log at -100; built native and
compared with eager."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


def _logits():
    x = _randn(3, 6) * 40
    x[0, :3] = torch.tensor([1e-9, -1e-8, 0.0])
    return x


def _targets():
    return torch.rand(3, 6, generator=torch.Generator().manual_seed(1))


def test_bce_with_logits_weight_pos_weight_reductions():
    w = torch.rand(6, generator=torch.Generator().manual_seed(2))
    pw = 3 * torch.rand(6, generator=torch.Generator().manual_seed(3))

    def fn(x, t):
        a = F.binary_cross_entropy_with_logits(x, t, reduction="none")
        b = F.binary_cross_entropy_with_logits(x, t, w, reduction="sum", pos_weight=pw)
        c = F.binary_cross_entropy_with_logits(x, t, pos_weight=pw)
        return a + b + c

    text = _check(Fn(fn), _logits(), _targets(), rtol=1e-5, atol=1e-6).astext()
    assert "exp(" in text and "where(" in text


def test_bce_with_logits_small_logits_keep_precision():
    """x near 0 from above and below where softplus(-x) = log 2 -/+ x / 2 (the log1p form);
    far logits where the plain formula gives inf."""
    x = torch.tensor([[1e-7, -1e-7, 3e-4, -3e-4, 90.0, -90.0]])
    _check(Fn(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction="none")),
           x, torch.tensor([[0.0, 1.0, 0.5, 0.25, 0.0, 1.0]]), rtol=1e-6, atol=1e-7)


def test_bce_on_probabilities_clamps_logs():
    w = torch.rand(3, 1, generator=torch.Generator().manual_seed(4))

    def fn(x, t):
        p = torch.sigmoid(x)          # saturates to exactly 0 and 1 at |x| = 40
        return F.binary_cross_entropy(p, t, reduction="none") + \
            F.binary_cross_entropy(p, t, w, reduction="sum") + F.binary_cross_entropy(p, t)

    _check(Fn(fn), _logits(), _targets(), rtol=1e-5, atol=1e-5)


def test_integer_logits_are_refused():
    traced = torch.jit.trace(
        Fn(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction="none")),
        (_randn(2, 3), _randn(2, 3)))
    with pytest.raises(ImportError_, match="expects floating-point logits, got int32"):
        relay.frontend.from_pytorch(traced, [("x", ((2, 3), "int32")),
                                             ("t", ((2, 3), "float32"))])
