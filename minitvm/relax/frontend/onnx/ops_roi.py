"""ONNX's ``RoiAlign`` on Relax as interpolation matrices and matmuls
(``frontend_common.onnx_roi``); the number of boxes may be symbolic."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_roi import roi_align, roi_align_plan
from ... import op as _op
from ...expr import const
from .context import Context, register


class _Ops:
    """``onnx_roi.RoiOps`` on Relax: every op is emitted."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.emit = ctx.emit

    def const(self, value):
        value = np.asarray(value)
        return const(value, str(value.dtype))

    def binary(self, name, a, b):
        return self.emit(getattr(_op, name)(a, b))

    def floor(self, x):
        return self.emit(_op.floor(x))

    def where(self, cond, a, b):
        return self.emit(_op.where(cond, a, b))

    def column(self, x, k):
        return self.emit(_op.strided_slice(x, [1], [k], [k + 1]))

    def reshape(self, x, shape):
        lead = self.ctx.shape(x)[0]
        dims = [lead if d == -1 else d for d in shape]
        return self.emit(_op.reshape(x, self.ctx.shape_expr(dims)))

    def sum(self, x, axis):
        return self.emit(_op.sum(x, axis))

    def max(self, x, axes):
        return self.emit(_op.max(x, list(axes)))

    def take(self, x, idx, axis):
        return self.emit(_op.take(x, idx, axis=axis))

    def matmul(self, a, b):
        return self.emit(_op.matmul(a, b))

    def transpose(self, x, perm):
        return self.emit(_op.permute_dims(x, list(perm)))

    def channels(self, x):
        return self.ctx.shape(x)[1]


@register("RoiAlign")
def _roi_align(ctx: Context, ins, attrs):
    x, rois, idx = (ctx.expr(v) for v in ins[:3])
    plan = roi_align_plan(ctx.shape(x), attrs, ctx.opset, ctx.fail)
    if ctx.shape(rois)[-1] != 4:
        raise ctx.fail(f"rois must be [num_rois, 4], got {ctx.shape(rois)}")
    return roi_align(_Ops(ctx), plan, x, rois, idx, ctx.dtype(x))
