"""torchvision's ``roi_align``, ``roi_pool`` and ``nms`` (``torch.ops.torchvision``: one node
each in an exported program) on Relax: calls of ONNX RoiAlign's and MaxRoiPool's native kernels
(``schedule.roi_ops``), which compute the same (``frontend_common.onnx_roi``), and of the NMS
kernel under torchvision's rules (``schedule.all_class_nms``; ``batched_nms`` reaches it as
boxes offset per class, so it is exact too), sliced to the data-dependent count. roi_pool's
second output (the argmax) is not computed."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_roi import torchvision_roi_align_spec, torchvision_roi_pool_facts
from ....schedule.all_class_nms import nms_prim_func
from ....schedule.roi_ops import roi_align_prim_func, roi_pool_prim_func
from ....tir import expr as E
from ... import op as _op
from ...expr import ShapeExpr, const
from ...struct_info import TensorStructInfo
from .context import AtenContext, register


def _dims(ctx: AtenContext, x, rois) -> tuple[list, list, list]:
    xs, rs = ctx.shape(x), ctx.shape(rois)
    prim = [d if isinstance(d, int) else E.Var(nm, "int64") for d, nm in
            ((xs[0], "n"), (rs[0], "num_rois"))]
    return xs, rs, prim


def _call(ctx, name, prim, args, shape, dtype):
    gv = ctx.bb.add_func(prim, name)
    return ctx.emit(_op.call_tir(gv, args, TensorStructInfo(shape, dtype)))


@register("torchvision::roi_align.default")
def _roi_align(ctx: AtenContext, args):
    x, rois, scale, ph, pw, ratio, aligned = args[:7]
    xs, rs, (n, r) = _dims(ctx, x, rois)
    s = torchvision_roi_align_spec(xs, rs, scale, ph, pw, ratio, aligned, ctx.fail)
    dt = ctx.dtype(x)
    boxes = ctx.emit(_op.strided_slice(rois, [1], [1], [5]))
    batch = ctx.emit(_op.reshape(ctx.emit(_op.strided_slice(rois, [1], [0], [1])),
                                 ctx.shape_expr([rs[0]])))
    prim = roi_align_prim_func(s, (n, *xs[1:]), r, dt, ctx.dtype(rois))
    return _call(ctx, "torchvision_roi_align", prim, [x, boxes, batch],
                 [rs[0], xs[1], s.out_h, s.out_w], dt)


@register("torchvision::roi_pool.default")
def _roi_pool(ctx: AtenContext, args):
    x, rois, scale, ph, pw = args[:5]
    xs, rs, (n, r) = _dims(ctx, x, rois)
    torchvision_roi_pool_facts(xs, rs, ctx.fail)
    pooled = (int(ph), int(pw))
    prim = roi_pool_prim_func(pooled, float(scale), (n, *xs[1:]), r, ctx.dtype(x))
    out = _call(ctx, "torchvision_roi_pool", prim, [x, rois], [rs[0], xs[1], *pooled],
                ctx.dtype(x))
    return [out, None]


@register("torchvision::nms.default")
def _nms(ctx: AtenContext, args):
    """nms(boxes [N, 4] x1 y1 x2 y2, scores [N], iou_threshold) -> kept boxes [K] int64, best
    first: the kernel on one batch and class, then the rows' box column up to the count."""
    boxes, scores, thr = args[:3]
    bs, ss = ctx.shape(boxes), ctx.shape(scores)
    if len(bs) != 2 or bs[1] != 4 or len(ss) != 1:
        raise ctx.fail(f"torchvision nms: boxes [N, 4] and scores [N] expected, got {bs} and "
                       f"{ss}")
    if ctx.dtype(boxes) != "float32" or ctx.dtype(scores) != "float32":
        raise ctx.fail(f"torchvision nms: float32 boxes and scores expected, got "
                       f"{ctx.dtype(boxes)} and {ctx.dtype(scores)}")
    n = bs[0] if isinstance(bs[0], int) else E.Var("boxes", "int64")
    prim = nms_prim_func(1, 1, n, False, False, rules="torchvision", iou=float(thr))
    gv = ctx.bb.add_func(prim, "torchvision_nms")
    b3 = ctx.emit(_op.reshape(boxes, ctx.shape_expr([1, bs[0], 4])))
    s3 = ctx.emit(_op.reshape(scores, ctx.shape_expr([1, 1, bs[0]])))
    table = ctx.emit(_op.call_tir(gv, [b3, s3, const(np.asarray([-1], "int64"))],
                                  TensorStructInfo([bs[0] + 1, 3], "int64")))
    count = ctx.emit(_op.strided_slice(table, [0, 1], [bs[0], 0], [bs[0] + 1, 1]))
    end = ctx.emit(_op.concat([ctx.emit(_op.reshape(count, ShapeExpr([1]))),
                               const(np.asarray([3], "int64"))], 0))
    rows = ctx.emit(_op.dynamic_strided_slice(
        table, const(np.asarray([0, 2], "int64")), end, const(np.asarray([1, 1], "int64"))))
    kept = E.Var("kept", "int64")  # the data-dependent count, bound by a match_cast
    rows = ctx.bb.match_cast(rows, TensorStructInfo([kept, 1], "int64"))
    return ctx.emit(_op.reshape(rows, ShapeExpr([kept])))
