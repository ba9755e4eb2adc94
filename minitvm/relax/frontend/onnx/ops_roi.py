"""ONNX's ``RoiAlign`` and ``MaxRoiPool`` on Relax: each a ``call_tir`` of its native kernel
(``schedule.roi_ops``); the number of boxes and the batch may be symbolic."""

from __future__ import annotations

from ....frontend_common.onnx_roi import max_roi_pool_facts, roi_align_spec
from ....schedule.roi_ops import roi_align_prim_func, roi_pool_prim_func
from ....tir import expr as E
from ... import op as _op
from ...struct_info import TensorStructInfo
from .context import Context, register


def _prim_dims(dims, names) -> list:
    """Static dims as ints, symbolic ones as fresh int64 tir Vars (the PrimFunc's own)."""
    return [d if isinstance(d, int) else E.Var(n, "int64") for d, n in zip(dims, names,
                                                                           strict=True)]


def _kernel(ctx: Context, name: str, prim, args, out_shape, dtype: str):
    gv = ctx.bb.add_func(prim, name)
    return ctx.emit(_op.call_tir(gv, args, TensorStructInfo(out_shape, dtype)))


@register("RoiAlign")
def _roi_align(ctx: Context, ins, attrs):
    x, rois, idx = (ctx.expr(v) for v in ins[:3])
    xs, rs = ctx.shape(x), ctx.shape(rois)
    s = roi_align_spec(xs, rs, attrs, ctx.opset, ctx.fail)
    n, r = _prim_dims([xs[0], rs[0]], ["n", "num_rois"])
    prim = roi_align_prim_func(s, (n, *xs[1:]), r, ctx.dtype(x), ctx.dtype(idx))
    return _kernel(ctx, "onnx_roi_align", prim, [x, rois, idx],
                   [rs[0], xs[1], s.out_h, s.out_w], ctx.dtype(x))


@register("MaxRoiPool")
def _max_roi_pool(ctx: Context, ins, attrs):
    x, rois = (ctx.expr(v) for v in ins[:2])
    xs, rs = ctx.shape(x), ctx.shape(rois)
    pooled, scale = max_roi_pool_facts(xs, rs, attrs, ctx.fail)
    n, r = _prim_dims([xs[0], rs[0]], ["n", "num_rois"])
    prim = roi_pool_prim_func(pooled, scale, (n, *xs[1:]), r, ctx.dtype(x))
    return _kernel(ctx, "onnx_max_roi_pool", prim, [x, rois], [rs[0], xs[1], *pooled],
                   ctx.dtype(x))
