"""torchvision's ``roi_align`` and ``roi_pool`` (``torch.ops.torchvision``: one node each in an
FX graph or exported program) on Relay: ONNX RoiAlign's and MaxRoiPool's native kernels, which
compute the same (``frontend_common.onnx_roi``). roi_pool's second output (the argmax) is not
computed."""

from __future__ import annotations

from ....frontend_common.onnx_roi import torchvision_roi_align_spec, torchvision_roi_pool_facts
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
