"""ONNX's ``NonMaxSuppression`` on Relax: a ``call_tir`` of the native kernel
(``schedule.all_class_nms``: ONNX Runtime's greedy selection and float32 IoU, centre boxes
included) writing the padded rows and their count, then a ``dynamic_strided_slice`` to the
count: the result's length is a run-time dim. The batch and box counts may be symbolic."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_roi import check_iou_threshold
from ....schedule.all_class_nms import nms_prim_func
from ....tir import expr as E
from ... import op as _op
from ...expr import ShapeExpr, const
from ...struct_info import TensorStructInfo
from .context import Context, register


def _one(ctx: Context, ins, k: int, dtype: str, default, floor=None):
    """Optional scalar input ``k`` as a [1] tensor of ``dtype`` (``default`` when absent;
    known values are read at import, ``floor`` bounds them from below)."""
    v = ins[k] if len(ins) > k and ins[k] is not None else None
    if v is None:
        return ctx.expr(np.asarray([default], dtype))
    known = ctx.known(v)
    if known is not None:
        value = np.asarray(known, dtype).reshape(-1)[:1]
        return ctx.expr(value if floor is None else np.maximum(value, floor).astype(dtype))
    e = ctx.emit(_op.reshape(ctx.expr(v), ShapeExpr([1])))
    if ctx.dtype(v) != dtype:
        e = ctx.emit(_op.astype(e, dtype))
    return e if floor is None else ctx.emit(_op.maximum(e, const(np.asarray(floor, dtype))))


@register("NonMaxSuppression")
def _non_max_suppression(ctx: Context, ins, attrs):
    boxes, scores = ctx.expr(ins[0]), ctx.expr(ins[1])
    bs, ss = ctx.shape(boxes), ctx.shape(scores)
    if len(bs) != 3 or len(ss) != 3 or (isinstance(bs[2], int) and bs[2] != 4):
        raise ctx.fail(f"boxes [B, N, 4] and scores [B, C, N] expected, got {bs} and {ss}")
    if not isinstance(ss[1], int):
        raise ctx.fail(f"the number of classes must be static, got {ss[1]}")
    if ctx.dtype(boxes) != "float32" or ctx.dtype(scores) != "float32":
        raise ctx.fail(f"float32 boxes and scores expected, got {ctx.dtype(boxes)} and "
                       f"{ctx.dtype(scores)}")
    center = int(attrs.get("center_point_box", 0))
    if center not in (0, 1):
        raise ctx.fail(f"center_point_box must be 0 or 1, got {center}")
    # absent or negative: no boxes (ONNX Runtime); the kernel reads a negative limit as none
    if len(ins) > 3 and ins[3] is not None:
        check_iou_threshold(ctx.known(ins[3]), ctx.fail)
    args = [boxes, scores, _one(ctx, ins, 2, "int64", 0, floor=0),
            _one(ctx, ins, 3, "float32", 0.0)]
    has_score = len(ins) > 4 and ins[4] is not None
    if has_score:
        args.append(_one(ctx, ins, 4, "float32", 0.0))
    b, n = (d if isinstance(d, int) else E.Var(name, "int64")
            for d, name in ((ss[0], "batch"), (ss[2], "boxes")))
    prim = nms_prim_func(b, ss[1], n, bool(center), has_score)
    gv = ctx.bb.add_func(prim, "onnx_non_max_suppression")
    rows = ss[0] * ss[1] * ss[2]
    table = ctx.emit(_op.call_tir(gv, args, TensorStructInfo([rows + 1, 3], "int64")))
    count = ctx.emit(_op.strided_slice(table, [0, 1], [rows, 0], [rows + 1, 1]))
    end = ctx.emit(_op.concat([ctx.emit(_op.reshape(count, ShapeExpr([1]))),
                               const(np.asarray([3], "int64"))], 0))
    return ctx.emit(_op.dynamic_strided_slice(table, const(np.asarray([0, 0], "int64")), end,
                                              const(np.asarray([1, 1], "int64"))))
