"""``vision.all_class_non_max_suppression`` (output format "onnx") as one native stage: the
selection table [B * C * N + 1, 3] int64 that ``schedule.all_class_nms`` writes (rows
(batch, class, box) in ONNX's order, zero past them, the count in the last row; its te body only
gives it a shape), and the op's two outputs as slices of it: the rows [B * C * N, 3] and the
count [1]."""

from __future__ import annotations

from .. import te
from ..tir import expr as E

__all__ = ["NMS_TABLE_TAG", "all_class_nms_table", "all_class_nms_onnx", "has_no_elements"]

NMS_TABLE_TAG = "all_class_nms"


def has_no_elements(t) -> bool:
    """An optional operand given as an empty tensor (ONNX's left-out input)."""
    return t is None or any(isinstance(d, int | E.IntImm) and int(d) == 0 for d in t.shape)


def all_class_nms_table(boxes, scores, max_out, iou, score_threshold, center_point_box=False,
                        rules: str = "onnxruntime"):
    """The selection table stage; ``score_threshold`` None or empty: no threshold (every box
    a candidate, NaN and -inf scores included); ``rules`` as ``schedule.all_class_nms``."""
    b, c, n = scores.shape
    thr = None if has_no_elements(score_threshold) else score_threshold
    operands = (boxes, scores, max_out, iou) + (() if thr is None else (thr,))
    return te.compute((b * c * n + 1, 3), lambda *_: E.const(0, "int64"), name="T_nms_table",
                      tag=NMS_TABLE_TAG, attrs={"operands": operands, "rules": rules,
                                                "center_point_box": bool(center_point_box)})


def all_class_nms_onnx(boxes, scores, max_out, iou, score_threshold,
                       center_point_box=False) -> list:
    """[selected rows [B * C * N, 3] int64, count [1] int64] (TVM's "onnx" output format)."""
    table = all_class_nms_table(boxes, scores, max_out, iou, score_threshold, center_point_box)
    rows = table.shape[0] - 1
    sel = te.compute((rows, 3), lambda i, k: table[i, k], name="T_nms_selected")
    count = te.compute((1,), lambda i: table[rows, E.IntImm("int32", 0)], name="T_nms_count")
    return [sel, count]
