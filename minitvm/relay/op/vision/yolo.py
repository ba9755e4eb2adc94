"""vision.yolo_reorg (Darknet's reorg layer) with TVM's attrs, type relation and constructor
(numpy reference: ``minitvm.topi.reference.vision``)."""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ....topi.shape_conditions import divides
from ....topi.utils import arith
from ...expr import Call, Expr
from ..op import define_op
from ..type_relations import check_num_args, tensor_arg, type_str

__all__ = ["yolo_reorg"]


class YoloReorgAttrs(Attrs):
    __slots__ = ()
    _fields = (("stride", 1),)


def _reorg_rel(arg_types, attrs):
    op_name = "vision.yolo_reorg"
    check_num_args(op_name, arg_types, 1)
    x = tensor_arg(arg_types, 0, op_name)
    s = int(attrs.stride)
    if len(x.shape) != 4 or s < 1:
        raise TypeError(f"{op_name}: expects 4-D NCHW data and a positive stride, got "
                        f"{type_str(x)} and stride {s}")
    n, c, h, w = x.shape
    for what, d, m in (("channels", c, s * s), ("height", h, s), ("width", w, s)):
        if not divides(d, m):  # (a symbolic size: its divisibility checked at each call)
            raise TypeError(f"{op_name}: {what} {d} of {type_str(x)} is not divisible by {m}")
    return TensorType((n, arith(lambda d: d * (s * s), c), arith(lambda d: d // s, h),
                       arith(lambda d: d // s, w)), x.dtype)


define_op("vision.yolo_reorg", _reorg_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=YoloReorgAttrs, num_inputs=1,
          describe="YOLO's reorg: move spatial blocks into channels.")


def yolo_reorg(data: Expr, stride: int) -> Call:
    return Call(Op.get("vision.yolo_reorg"), [data], YoloReorgAttrs(stride=int(stride)))
