"""``vision.all_class_non_max_suppression`` (output format "onnx") as one native stage: the
selection table [B * C * N + 1, 3] int64 that ``schedule.all_class_nms`` writes (rows
(batch, class, box) in ONNX's order, zero past them, the count in the last row; its te body only
gives it a shape), and the op's two outputs as slices of it: the rows [B * C * N, 3] and the
count [1]."""

from __future__ import annotations

from .. import te
from ..tir import expr as E

__all__ = ["NMS_TABLE_TAG", "all_class_nms_table", "all_class_nms_onnx",
           "all_class_nms_tensorflow", "has_no_elements"]

NMS_TABLE_TAG = "all_class_nms"


def has_no_elements(t) -> bool:
    """An optional operand given as an empty tensor (ONNX's left-out input)."""
    return t is None or any(isinstance(d, int | E.IntImm) and int(d) == 0 for d in t.shape)


def all_class_nms_table(boxes, scores, max_out, iou, score_threshold, center_point_box=False,
                        rules: str = "onnxruntime", output: str = "onnx"):
    """The selection table stage; ``score_threshold`` None or empty: no threshold (every box
    a candidate, NaN and -inf scores included); ``rules`` and ``output`` as
    ``schedule.all_class_nms`` (the table [B * C * N + 1, 3] or [B, C * N + 1, 2])."""
    b, c, n = scores.shape
    thr = None if has_no_elements(score_threshold) else score_threshold
    operands = (boxes, scores, max_out, iou) + (() if thr is None else (thr,))
    shape = (b, c * n + 1, 2) if output == "tensorflow" else (b * c * n + 1, 3)
    return te.compute(shape, lambda *_: E.const(0, "int64"), name="T_nms_table",
                      tag=NMS_TABLE_TAG, attrs={"operands": operands, "rules": rules,
                                                "output": output,
                                                "center_point_box": bool(center_point_box)})


def all_class_nms_onnx(boxes, scores, max_out, iou, score_threshold, center_point_box=False,
                       rules: str = "onnxruntime") -> list:
    """[selected rows [B * C * N, 3] int64, count [1] int64] (TVM's "onnx" output format)."""
    table = all_class_nms_table(boxes, scores, max_out, iou, score_threshold, center_point_box,
                                rules)
    rows = table.shape[0] - 1
    sel = te.compute((rows, 3), lambda i, k: table[i, k], name="T_nms_selected")
    count = te.compute((1,), lambda i: table[rows, E.IntImm("int32", 0)], name="T_nms_count")
    return [sel, count]


def all_class_nms_tensorflow(boxes, scores, max_out, iou, score_threshold,
                             center_point_box=False, rules: str = "onnxruntime") -> list:
    """[selected (class, box) [B, C * N, 2] int64, their scores [B, C * N], counts [B] int64]
    (TVM's "tensorflow" output format): each batch's rows across classes, best score first
    (stable, NaN last), zero past the count."""
    table = all_class_nms_table(boxes, scores, max_out, iou, score_threshold, center_point_box,
                                rules, output="tensorflow")
    b, c, n = scores.shape
    cn = table.shape[1] - 1
    sel = te.compute((b, cn, 2), lambda i, k, f: table[i, k, f], name="T_nms_selected")

    def score(i, k):
        cls = E.Cast("int32", table[i, k, E.IntImm("int32", 0)])
        box = E.Cast("int32", table[i, k, E.IntImm("int32", 1)])
        kept = E.LT(E.Cast("int64", k), table[i, cn, E.IntImm("int32", 0)])
        return E.Select(kept, scores[i, cls, box], E.const(0, scores.dtype))

    sc = te.compute((b, cn), score, name="T_nms_scores")
    count = te.compute((b,), lambda i: table[i, cn, E.IntImm("int32", 0)], name="T_nms_counts")
    return [sel, sc, count]
