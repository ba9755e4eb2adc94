"""ONNX's ``RoiAlign`` and ``MaxRoiPool`` on Relay: ``vision.onnx_roi_align`` (ONNX's
half-pixel boxes, max mode and adaptive grid) and ``vision.roi_pool``, both native kernels
(``schedule.roi_ops``)."""

from __future__ import annotations

import numpy as np

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
    """``vision.roi_pool`` rounds the scaled corners half to even (TVM's); ONNX Runtime rounds
    halves away from zero, so the corners arrive scaled and rounded that way (scale 1)."""
    x, rois = ins[:2]
    pooled, scale = max_roi_pool_facts(ctx.shape(x), ctx.shape(rois), attrs, ctx.fail)
    v = _op.multiply(_op.strided_slice(rois, [1], [5], axes=[1]),
                     ctx.const(np.asarray(scale, ctx.dtype(rois))))
    t = _op.trunc(v)
    half = _op.greater_equal(_op.abs(_op.subtract(v, t)),
                             ctx.const(np.asarray(0.5, ctx.dtype(rois))))
    corners = _op.where(half, _op.add(t, _op.sign(v)), t)
    rois = _op.concatenate([_op.strided_slice(rois, [0], [1], axes=[1]), corners], 1)
    return _op.vision.roi_pool(x, rois, pooled, 1.0)
