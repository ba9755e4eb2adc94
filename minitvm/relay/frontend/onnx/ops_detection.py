"""ONNX's ``NonMaxSuppression`` on Relay, as TVM imports it:
``vision.all_class_non_max_suppression`` (a native kernel, ``schedule.all_class_nms``: ONNX
Runtime's candidate order and float32 IoU, centre boxes included) gives the padded rows and
their count, then a slice by the count. The result's length depends on
the data, so the model runs on the Relay VM (``relay.create_executor("vm")`` /
``relay.vm.compile``), as in TVM; the graph executor needs static shapes."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_roi import check_iou_threshold
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
    # absent: no boxes (ONNX's default 0); negative: none either (ONNX Runtime), where TVM's op
    # reads a negative limit as none at all
    max_out = _op.maximum(_optional(ctx, ins, 2, 0, "int64"),
                          ctx.const(np.asarray(0, "int64")))
    iou = _optional(ctx, ins, 3, 0.0, "float32")
    check_iou_threshold(ctx.maybe_value(iou), ctx.fail)
    # absent: no threshold at all (every box, NaN and -inf scores included), an empty tensor
    # for the op
    score = _optional(ctx, ins, 4, np.zeros((0,), "float32"), "float32")
    rows, count = _op.vision.all_class_non_max_suppression(boxes, scores, max_out, iou, score,
                                                           center_point_box=center)
    end = _op.concatenate([count, ctx.const(np.asarray([3], "int64"))], 0)
    return _op.strided_slice(rows, ctx.const(np.asarray([0, 0], "int64")), end)
