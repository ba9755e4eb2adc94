"""torchvision's ``roi_align``, ``roi_pool`` and ``nms`` (``torch.ops.torchvision``: one node
each in an FX graph or exported program) on Relay: ONNX RoiAlign's and MaxRoiPool's native
kernels, which compute the same (``frontend_common.onnx_roi``), and
``vision.all_class_non_max_suppression`` under torchvision's rules (``batched_nms`` reaches it
as boxes offset per class) sliced to the data-dependent count: such a model runs on the Relay
VM. roi_pool's second output (the argmax) is not computed."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_roi import torchvision_roi_align_spec, torchvision_roi_pool_facts
from ... import expr as _expr
from ... import op as _op
from ..common import ImportError_
from .aten import register


def _fail(msg: str) -> ImportError_:
    return ImportError_(f"torchvision: {msg}")


@register("torchvision::roi_align")
def _roi_align(ctx, args):
    x, rois, scale, ph, pw, ratio, aligned = args[:7]
    s = torchvision_roi_align_spec(ctx.shape(x), ctx.shape(rois), scale, ph, pw, ratio, aligned,
                                   _fail)
    boxes = _op.strided_slice(rois, [1], [5], axes=[1])
    batch = _op.reshape(_op.strided_slice(rois, [0], [1], axes=[1]), [-1])
    return _op.vision.onnx_roi_align(x, boxes, batch, s.out_h, s.out_w, s.grid, s.scale,
                                     s.half_pixel, s.mode)


@register("torchvision::roi_pool")
def _roi_pool(ctx, args):
    x, rois, scale, ph, pw = args[:5]
    torchvision_roi_pool_facts(ctx.shape(x), ctx.shape(rois), _fail)
    return [_op.vision.roi_pool_rounding_away(x, rois, (int(ph), int(pw)), float(scale)), None]


@register("torchvision::nms")
def _nms(ctx, args):
    """nms(boxes [N, 4] x1 y1 x2 y2, scores [N], iou_threshold) -> kept boxes [K] int64."""
    boxes, scores, thr = args[:3]
    bs, ss = ctx.shape(boxes), ctx.shape(scores)
    if len(bs) != 2 or bs[1] != 4 or len(ss) != 1:
        raise _fail(f"nms: boxes [N, 4] and scores [N] expected, got {list(bs)} and "
                    f"{list(ss)}")
    if ctx.dtype(boxes) != "float32" or ctx.dtype(scores) != "float32":
        raise _fail(f"nms: float32 boxes and scores expected, got {ctx.dtype(boxes)} and "
                    f"{ctx.dtype(scores)}")

    def const(v, dtype):
        return _expr.const(np.asarray(v, dtype), dtype)

    rows, count = _op.vision.all_class_non_max_suppression(
        _op.reshape(boxes, [1, -1, 4]), _op.reshape(scores, [1, 1, -1]), const(-1, "int64"),
        const(float(thr), "float64"), const(np.zeros(0), "float32"), rules="torchvision")
    end = _op.concatenate([count, const([3], "int64")], 0)
    kept = _op.strided_slice(rows, const([0, 2], "int64"), end)
    return _op.reshape(kept, [-1])
