"""Grid sampling's pixel rows are materialized once (``relay.frontend.spatial``): RT-DETR's
multi-scale deformable attention samples a head-split slice of its value tensor
(``v[:, start:end].permute(0, 2, 3, 1).reshape(b * heads, hd, h, w)``), and fused into the
gathers each tap of each channel recomputed its position through those transposes (1.6x slower
than with the rows computed once). Numerics through both Relay PyTorch importers, and the
barrier in the imported IR."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import check_both_importers  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402

from minitvm.relay.expr import Call  # noqa: E402
from minitvm.relay.expr_functor import post_order_visit  # noqa: E402


class HeadSplitSample(nn.Module):
    """Two levels of a flattened value tensor, each split into heads and sampled."""

    def __init__(self, heads=2, shapes=((4, 5), (2, 3))):
        super().__init__()
        self.heads, self.shapes = heads, shapes

    def forward(self, value, grid):
        b, _, d = value.shape
        hd, start, outs = d // self.heads, 0, []
        for lvl, (h, w) in enumerate(self.shapes):
            v = value[:, start:start + h * w].view(b, h * w, self.heads, hd)
            v = v.permute(0, 2, 3, 1).reshape(b * self.heads, hd, h, w)
            start += h * w
            outs.append(F.grid_sample(v, grid[:, lvl], mode="bilinear", padding_mode="zeros",
                                      align_corners=False))
        return torch.stack(outs, -1)


def test_head_split_deformable_sampling():
    grid = 1.2 * torch.tanh(_randn(2, 2, 6, 3, 2, seed=1))  # some taps outside the image
    mod = check_both_importers(HeadSplitSample(), _randn(1, 26, 8), grid, rtol=1e-5, atol=1e-5)
    barriers = []

    def visit(e):
        if isinstance(e, Call) and getattr(e.op, "name", "") == "annotation.stop_fusion":
            arg = e.args[0]
            if isinstance(arg, Call) and arg.op.name == "reshape":
                barriers.append(tuple(int(d) for d in arg.checked_type.shape))

    post_order_visit(mod["main"].body, visit)
    # (batch * heads * H * W, head channels) of each level
    assert sorted(barriers) == [(12, 4), (40, 4)]
