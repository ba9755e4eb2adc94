"""The Relay PyTorch importers (TorchScript and torch.export) on a binary op of an integer tensor and a Python float, which the twelfth round of
new-user models found wrong: YOLOv8's anchor centres ``torch.arange(w) + 0.5`` took the
tensor's int64 dtype for 0.5 (``[0, 1, ...]``, not ``[0.5, 1.5, ...]``), so every decoded box
was off by half a stride. torch lifts the tensor to float32 (``frontend_common.torch_promote``),
and divides integers as floats. The Relax importer's test is
``tests/relax/frontend/test_relax_torch_scalar_promotion.py``."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import check_both_importers  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402


class Anchors(nn.Module):
    """YOLOv8's anchor points and strides added to a prediction."""

    def forward(self, x):
        ys, xs = torch.meshgrid(torch.arange(4) + 0.5, torch.arange(3) + 0.5, indexing="ij")
        return x + torch.stack([xs, ys], -1).view(-1, 2) * torch.full((12, 1), 8.0)


class Mixed(nn.Module):
    """Integer tensors against Python floats in each binary op, and true division."""

    def forward(self, x):
        i = torch.arange(x.shape[0]).view(-1, 1)
        return (x * (i - 0.25) + (2.5 - i) * (i / 4) + (i > 1.5) + i * 1.5
                + (i == 2.0) * 0.5 + (i < 3))


class BoolLift(nn.Module):
    """A bool tensor and a Python int: int64, summed into a float."""

    def forward(self, x):
        return x + ((x > 0) * 3 + (x < 0) - 1)


@pytest.mark.parametrize("model,shape", [(Anchors, (12, 2)), (Mixed, (5, 3)),
                                         (BoolLift, (4, 6))])
def test_relay_importers(model, shape):
    check_both_importers(model(), _randn(*shape))
