"""torchvision's ``roi_align`` and ``roi_pool`` (``torch.ops.torchvision``: one node each in an
exported program) on Relax: calls of ONNX RoiAlign's and MaxRoiPool's native kernels
(``schedule.roi_ops``), which compute the same (``frontend_common.onnx_roi``). roi_pool's
second output (the argmax) is not computed."""

from __future__ import annotations

from ....frontend_common.onnx_roi import torchvision_roi_align_spec, torchvision_roi_pool_facts
from ....schedule.roi_ops import roi_align_prim_func, roi_pool_prim_func
from ....tir import expr as E
from ... import op as _op
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
