"""Programs calling torchvision's roi_align / roi_pool for both PyTorch importers' tests."""

from __future__ import annotations

import numpy as np
import torch

X = np.random.default_rng(5).standard_normal((2, 6, 9, 11)).astype("float32")
# (batch, x1, y1, x2, y2): inside, across the edges, halves (rounding), reversed, tiny
ROIS = np.array([[0, 1.0, 1.0, 9.0, 7.0], [1, -2.0, -1.0, 5.0, 4.0], [1, 2.5, 1.5, 4.5, 6.5],
                 [0, 8.0, 6.0, 3.0, 2.0], [1, 4.0, 4.0, 4.2, 4.1]], "float32")

# (spatial_scale, pooled h, pooled w, sampling_ratio, aligned)
ALIGN = {"aligned_fixed": (0.5, 3, 2, 2, True), "unaligned_adaptive": (1.0, 2, 3, -1, False),
         "aligned_adaptive": (0.75, 2, 2, 0, True)}


class RoiAlign(torch.nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args

    def forward(self, x, rois):
        return torch.ops.torchvision.roi_align(x, rois, *self.args)


class RoiPool(torch.nn.Module):
    def forward(self, x, rois):
        return torch.ops.torchvision.roi_pool(x, rois, 0.5, 3, 2)[0]
