"""The numpy reference of per-class greedy NMS (all_class_non_max_suppression, the TFLite
detection head's regular form) is vectorized; it keeps exactly the boxes of the plain greedy
loop over ``iou``: random boxes, duplicates (IoU 1), degenerate boxes, limits, thresholds."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm.topi.reference import vision


def _greedy(boxes, scores, max_out, iou_thr, score_thr):
    """The definition: candidates best first (stable), each kept unless it overlaps a kept
    box by more than the threshold."""
    kept = []
    for j in np.argsort(-scores, kind="stable"):
        if scores[j] <= score_thr:
            continue
        if 0 <= max_out <= len(kept):
            break
        if all(vision.iou(boxes[j], boxes[k]) <= iou_thr for k in kept):
            kept.append(int(j))
    return kept


@pytest.mark.parametrize("seed", range(6))
def test_vectorized_nms_keeps_the_greedy_boxes(seed):
    rng = np.random.default_rng(seed)
    n = 200
    xy = rng.uniform(0, 1, (n, 2))
    wh = rng.uniform(0.0, 0.3, (n, 2))
    boxes = np.concatenate([xy, xy + wh], 1).astype("float32")
    boxes[::17] = boxes[1::17][: len(boxes[::17])]  # duplicates
    boxes[5, 2:] = boxes[5, :2]  # a degenerate (zero-area) box
    boxes[7] = boxes[7][[2, 3, 0, 1]]  # corners given in the other order
    scores = rng.uniform(0, 1, n).astype("float32")
    scores[::23] = 0.5  # ties
    for max_out, iou_thr, score_thr in [(-1, 0.5, 0.0), (10, 0.3, 0.2), (200, 0.0, -1.0),
                                        (5, 1.0, 0.6), (0, 0.5, 0.0), (40, 0.05, 0.0)]:
        got = vision._nms_class(boxes, scores, max_out, iou_thr, score_thr)
        assert got == _greedy(boxes, scores, max_out, iou_thr, score_thr), (max_out, iou_thr)
