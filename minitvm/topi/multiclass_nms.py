"""``vision.multiclass_nms``: the best ``max_detections`` of a greedy non-maximum suppression
run per class (TFLite's regular NMS, TFLite_Detection_PostProcess with use_regular_nms).

Boxes (1, N, 4) as two corners (ymin, xmin, ymax, xmax, in any order), scores (1, N, K) whose
classes are columns ``class_offset`` to K (a background column first is skipped). Per class,
the boxes scoring at least ``score_threshold`` best first (ties: the lower box), each kept
unless a kept box of its class overlaps it by IoU > ``iou_threshold``, at most
``detections_per_class`` a class; of all classes' kept boxes the ``max_detections`` best
(ties: the lower class, then the earlier kept). The output (1, max_detections) int32 holds each
detection as ``class * N + box``, best first, -1 past the count.

Only the best ``max_detections`` are wanted, so no class is suppressed whole: candidates are
taken best first across all classes, each checked against the kept boxes of its class, until
``max_detections`` are kept. A class's decisions depend only on its own better candidates, which
come first, so this keeps the same boxes as per-class NMS followed by the merge (and a kept box
past ``max_detections`` in its own class could never be among the best). The stage is
sequential and data dependent: ``schedule/multiclass_nms.py`` computes it (its te body only
gives it a shape); ``multiclass_nms_np`` is the reference."""

from __future__ import annotations

import numpy as np

from .. import te
from ..arith import Analyzer
from ..tir import expr as E
from .utils import compute, reference

__all__ = ["MULTICLASS_NMS_TAG", "multiclass_nms", "multiclass_nms_np", "iou_np"]

MULTICLASS_NMS_TAG = "multiclass_nms"


def _static(dims, what: str) -> list[int]:
    if not all(isinstance(d, int | E.IntImm) for d in dims):
        raise ValueError(f"vision.multiclass_nms: the {what} needs a static shape, got {dims}")
    return [int(d) if isinstance(d, int) else d.value for d in dims]


def multiclass_nms(boxes, scores, max_detections: int, detections_per_class: int,
                   iou_threshold: float, score_threshold: float, class_offset: int = 0):
    """The (1, max_detections) int32 stage (see the module), for ``schedule.multiclass_nms``;
    the box count may be a symbolic size (the same for boxes and scores: a Relay VM kernel for
    every count, which checks at each call that they agree)."""
    shape_b, shape_s = list(boxes.shape), list(scores.shape)
    if len(shape_b) == 3 and len(shape_s) == 3 and not isinstance(shape_b[1], int | E.IntImm) \
            and not isinstance(shape_s[1], int | E.IntImm):
        if not Analyzer().can_prove_equal(shape_b[1], shape_s[1]):
            raise ValueError(f"vision.multiclass_nms: box counts {shape_b[1]} and "
                             f"{shape_s[1]} of boxes and scores differ")
        shape_b[1] = shape_s[1] = E.IntImm("int64", 1)  # (the static checks below)
    _, n, four = _static(shape_b, "boxes")
    _, n2, k = _static(shape_s, "scores")
    if four != 4 or n2 != n or not 0 <= class_offset < k:
        raise ValueError(f"vision.multiclass_nms: boxes {(1, n, four)} and scores {(1, n2, k)} "
                         f"with class offset {class_offset} do not describe {n} boxes")
    attrs = {"operands": (boxes, scores), "max_detections": int(max_detections),
             "detections_per_class": int(detections_per_class),
             "iou_threshold": float(iou_threshold), "score_threshold": float(score_threshold),
             "class_offset": int(class_offset)}
    return te.compute((1, int(max_detections)), lambda *_: E.IntImm("int32", -1),
                      name="T_multiclass_nms", tag=MULTICLASS_NMS_TAG, attrs=attrs)


@compute("vision.multiclass_nms")
def _multiclass_nms_compute(attrs, inputs, out_type):
    boxes, scores = inputs
    return [multiclass_nms(boxes, scores, int(attrs.max_detections),
                           int(attrs.detections_per_class), float(attrs.iou_threshold),
                           float(attrs.score_threshold), int(attrs.class_offset))]


def iou_np(a: np.ndarray, b: np.ndarray) -> np.float32:
    """IoU of two (ymin, xmin, ymax, xmax) boxes (corners in any order) in float32, as the
    kernel computes it: 0 where either box is empty."""
    a, b = a.astype("float32"), b.astype("float32")
    ay0, ay1 = min(a[0], a[2]), max(a[0], a[2])
    ax0, ax1 = min(a[1], a[3]), max(a[1], a[3])
    by0, by1 = min(b[0], b[2]), max(b[0], b[2])
    bx0, bx1 = min(b[1], b[3]), max(b[1], b[3])
    area_a, area_b = (ay1 - ay0) * (ax1 - ax0), (by1 - by0) * (bx1 - bx0)
    if area_a <= 0 or area_b <= 0:
        return np.float32(0)
    zero = np.float32(0)
    inter = max(min(ay1, by1) - max(ay0, by0), zero) * max(min(ax1, bx1) - max(ax0, bx0), zero)
    return np.float32(inter / (area_a + area_b - inter))


def multiclass_nms_np(boxes, scores, max_detections: int, detections_per_class: int,
                      iou_threshold: float, score_threshold: float,
                      class_offset: int = 0) -> np.ndarray:
    """The reference: per-class greedy NMS, then the best ``max_detections`` of all classes."""
    bx = np.asarray(boxes, "float32")[0]
    sc = np.asarray(scores, "float32")[0, :, class_offset:]
    n, c = sc.shape
    thr, iou_thr = np.float32(score_threshold), np.float32(iou_threshold)
    found = []
    limit = min(detections_per_class, max_detections)  # (no class gives more to the best)
    for cls in range(c):
        s = sc[:, cls]
        order = [int(i) for i in np.argsort(-s, kind="stable") if s[i] >= thr]
        kept: list[int] = []
        for i in order:
            if len(kept) >= limit:
                break
            if all(iou_np(bx[i], bx[j]) <= iou_thr for j in kept):
                kept.append(i)
        found += [(float(s[i]), cls * n + i) for i in kept]
    found.sort(key=lambda t: -t[0])  # (stable: class, then kept order)
    out = np.full((1, max_detections), -1, "int32")
    for r, (_, flat) in enumerate(found[:max_detections]):
        out[0, r] = flat
    return out


@reference("vision.multiclass_nms")
def _multiclass_nms_ref(attrs, args, out_type):
    boxes, scores = args
    return multiclass_nms_np(boxes, scores, int(attrs.max_detections),
                             int(attrs.detections_per_class), float(attrs.iou_threshold),
                             float(attrs.score_threshold), int(attrs.class_offset))
