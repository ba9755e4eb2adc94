"""torchvision ``nms`` / ``batched_nms`` modules and inputs both PyTorch importers' tests use:
boxes on a coarse grid (many overlaps, zero sizes), scores with ties and NaN."""

from __future__ import annotations

import numpy as np
import torch


class Nms(torch.nn.Module):
    def __init__(self, iou: float):
        super().__init__()
        self.iou = iou

    def forward(self, boxes, scores):
        import torchvision

        return torchvision.ops.nms(boxes, scores, self.iou)


class BatchedNms(Nms):
    def forward(self, boxes, scores, idxs):
        import torchvision

        return torchvision.ops.batched_nms(boxes, scores, idxs, self.iou)


class OffsetNms(Nms):
    """batched_nms written out as its coordinate trick (what ``batched_nms`` runs for small
    inputs), for a tracer that keeps no ``torch.jit`` scripted branch."""

    def forward(self, boxes, scores, idxs):
        import torchvision

        offsets = idxs.to(boxes) * (boxes.max() + 1)
        return torchvision.ops.nms(boxes + offsets[:, None], scores, self.iou)


def nms_data(n: int, seed: int, nan: float | None = None):
    """(boxes [n, 4], scores [n], class ids [n]); NaN scores every 7th box unless ``nan``
    replaces them."""
    rng = np.random.default_rng(seed)
    xy = rng.integers(0, 6, (n, 2)).astype("float32") * 0.5
    wh = rng.integers(0, 5, (n, 2)).astype("float32") * 0.5
    boxes = np.concatenate([xy, xy + wh], 1).astype("float32")
    scores = (rng.integers(0, 6, n) / 6).astype("float32")
    scores[::7] = np.nan if nan is None else nan
    return boxes, scores, rng.integers(0, 3, n).astype("int64")
