"""ONNX's ``RoiAlign`` on Relay as interpolation matrices and dense products
(``frontend_common.onnx_roi``), which compile natively for any box count; Relay's own
``vision.roi_align`` has neither ONNX's half-pixel boxes nor its max mode."""

from __future__ import annotations

from ....frontend_common.onnx_roi import roi_align, roi_align_plan
from ... import op as _op
from .ops_nn import matmul
from .registry import register


class _Ops:
    """``onnx_roi.RoiOps`` on Relay."""

    def __init__(self, ctx):
        self.ctx = ctx

    def const(self, value):
        return self.ctx.const(value)

    def binary(self, name, a, b):
        return getattr(_op, name)(a, b)

    def floor(self, x):
        return _op.floor(x)

    def where(self, cond, a, b):
        return _op.where(cond, a, b)

    def column(self, x, k):
        return _op.strided_slice(x, [k], [k + 1], axes=[1])

    def reshape(self, x, shape):
        return _op.reshape(x, shape)

    def sum(self, x, axis):
        return _op.sum(x, axis=axis)

    def max(self, x, axes):
        return _op.max(x, axis=list(axes))

    def take(self, x, idx, axis):
        return _op.take(x, idx, axis=axis)

    def matmul(self, a, b):
        return matmul(self.ctx, a, b)

    def transpose(self, x, perm):
        return _op.transpose(x, perm)

    def channels(self, x):
        return self.ctx.shape(x)[1]


@register("RoiAlign")
def _roi_align(ctx, ins, attrs):
    x, rois, idx = ins[:3]
    plan = roi_align_plan(ctx.shape(x), attrs, ctx.opset, ctx.fail)
    if ctx.shape(rois)[-1] != 4:
        raise ctx.fail(f"rois must be [num_rois, 4], got {list(ctx.shape(rois))}")
    return roi_align(_Ops(ctx), plan, x, rois, idx, ctx.dtype(x))
