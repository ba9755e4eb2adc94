"""ONNX's ``NonMaxSuppression`` on Relay, as TVM imports it:
``vision.all_class_non_max_suppression`` (a native kernel, ``schedule.all_class_nms``: ONNX Runtime's greedy selection and float32 IoU)
gives the padded rows and their count, then a slice by the count. The result's length depends on
the data, so the model runs on the Relay VM (``relay.create_executor("vm")`` /
``relay.vm.compile``), as in TVM; the graph executor needs static shapes."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from .registry import register


def _optional(ctx, ins, k: int, default, dtype: str):
    v = ins[k] if len(ins) > k and ins[k] is not None else None
    return ctx.const(np.asarray(default, dtype)) if v is None else v


@register("NonMaxSuppression")
def _non_max_suppression(ctx, ins, attrs):
    boxes, scores = ins[:2]
    bs, ss = ctx.shape(boxes), ctx.shape(scores)
    if len(bs) != 3 or bs[2] != 4 or len(ss) != 3 or ss[0] != bs[0] or ss[2] != bs[1]:
        raise ctx.fail(f"boxes [B, N, 4] and scores [B, C, N] expected, got {list(bs)} and "
                       f"{list(ss)}")
    center = int(attrs.get("center_point_box", 0))
    if center not in (0, 1):
        raise ctx.fail(f"center_point_box must be 0 or 1, got {center}")
    if center:  # [x_c, y_c, w, h] -> [y1, x1, y2, x2], the corners ONNX Runtime derives
        half = ctx.const(np.asarray(2.0, "float32"))
        xc, yc, w, h = (_op.strided_slice(boxes, [k], [k + 1], axes=[2]) for k in range(4))
        hw, hh = _op.divide(w, half), _op.divide(h, half)
        boxes = _op.concatenate([_op.subtract(yc, hh), _op.subtract(xc, hw),
                                 _op.add(yc, hh), _op.add(xc, hw)], 2)
    # absent: no boxes (ONNX's default 0); negative: none either (ONNX Runtime), where TVM's op
    # reads a negative limit as none at all
    max_out = _op.maximum(_optional(ctx, ins, 2, 0, "int64"),
                          ctx.const(np.asarray(0, "int64")))
    iou = _optional(ctx, ins, 3, 0.0, "float32")
    score = _optional(ctx, ins, 4, -np.inf, "float32")
    rows, count = _op.vision.all_class_non_max_suppression(boxes, scores, max_out, iou, score)
    end = _op.concatenate([count, ctx.const(np.asarray([3], "int64"))], 0)
    return _op.strided_slice(rows, ctx.const(np.asarray([0, 0], "int64")), end)
