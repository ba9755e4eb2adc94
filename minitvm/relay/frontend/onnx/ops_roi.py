"""ONNX's ``RoiAlign`` and ``MaxRoiPool`` on Relay: ``vision.onnx_roi_align`` (ONNX's
half-pixel boxes, max mode and adaptive grid) and ``vision.roi_pool`` (its corners rounded as
ONNX Runtime does), both native kernels (``schedule.roi_ops``)."""

from __future__ import annotations

from ....frontend_common.onnx_roi import max_roi_pool_facts, roi_align_spec
from ... import op as _op
from .registry import register


@register("RoiAlign")
def _roi_align(ctx, ins, attrs):
    x, rois, idx = ins[:3]
    s = roi_align_spec(ctx.shape(x), ctx.shape(rois), attrs, ctx.opset, ctx.fail)
    return _op.vision.onnx_roi_align(x, rois, idx, s.out_h, s.out_w, s.grid, s.scale,
                                     s.half_pixel, s.mode)


@register("MaxRoiPool")
def _max_roi_pool(ctx, ins, attrs):
    x, rois = ins[:2]
    pooled, scale = max_roi_pool_facts(ctx.shape(x), ctx.shape(rois), attrs, ctx.fail)
    return _op.vision.roi_pool_rounding_away(x, rois, pooled, scale)
