"""SSD's vision.multibox_prior and vision.multibox_transform_loc with TVM's attrs, type
relations and constructors (numpy references: ``minitvm.topi.reference.vision``)."""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType, TupleType
from ...expr import Call, Expr, TupleWrapper
from ..op import define_op, register_numpy_only
from ..type_relations import check_num_args, is_static_dim, tensor_arg, type_str

__all__ = ["multibox_prior", "multibox_transform_loc"]


class MultiBoxPriorAttrs(Attrs):
    __slots__ = ()
    _fields = (("sizes", (1.0,)), ("ratios", (1.0,)), ("steps", (-1.0, -1.0)),
               ("offsets", (0.5, 0.5)), ("clip", False))


class MultiBoxTransformLocAttrs(Attrs):
    __slots__ = ()
    _fields = (("clip", True), ("threshold", 0.01), ("variances", (0.1, 0.1, 0.2, 0.2)),
               ("keep_background", False))


def _prior_rel(arg_types, attrs):
    op_name = "vision.multibox_prior"
    check_num_args(op_name, arg_types, 1)
    data = tensor_arg(arg_types, 0, op_name)
    if len(data.shape) != 4:
        raise TypeError(f"{op_name}: expects 4-D NCHW data, got {type_str(data)}")
    sizes, ratios = tuple(attrs.sizes), tuple(attrs.ratios)
    if not sizes or not ratios or len(tuple(attrs.steps)) != 2 or \
            len(tuple(attrs.offsets)) != 2:
        raise ValueError(f"{op_name}: needs sizes and ratios, 2 steps and 2 offsets, got "
                         f"sizes={list(sizes)} ratios={list(ratios)} steps={list(attrs.steps)} "
                         f"offsets={list(attrs.offsets)}")
    per = len(sizes) + len(ratios) - 1
    return TensorType((1, data.shape[2] * data.shape[3] * per, 4), data.dtype)


def _transform_rel(arg_types, attrs):
    op_name = "vision.multibox_transform_loc"
    check_num_args(op_name, arg_types, 3)
    cls = tensor_arg(arg_types, 0, op_name)
    loc = tensor_arg(arg_types, 1, op_name)
    anchor = tensor_arg(arg_types, 2, op_name)
    if len(cls.shape) != 3 or len(loc.shape) != 2 or len(anchor.shape) != 3:
        raise TypeError(f"{op_name}: expects cls_prob (B, classes, N), loc_pred (B, N*4) and "
                        f"anchor (1, N, 4), got {type_str(cls)}, {type_str(loc)} and "
                        f"{type_str(anchor)}")
    n = cls.shape[2]
    if is_static_dim(n) and ((is_static_dim(loc.shape[1]) and loc.shape[1] != 4 * n)
                             or (is_static_dim(anchor.shape[1]) and anchor.shape[1] != n)):
        raise TypeError(f"{op_name}: {n} anchors need loc_pred (B, {4 * n}) and anchor "
                        f"(1, {n}, 4), got {type_str(loc)} and {type_str(anchor)}")
    if len(tuple(attrs.variances)) != 4:
        raise ValueError(f"{op_name}: variances must have 4 values, got {list(attrs.variances)}")
    b = cls.shape[0]
    return TupleType([TensorType((b, n, 6), cls.dtype), TensorType((b,), "int32")])


define_op("vision.multibox_prior", _prior_rel, pattern=OpPattern.OPAQUE,
          attrs_type=MultiBoxPriorAttrs, num_inputs=1, describe="SSD prior (anchor) boxes.")
define_op("vision.multibox_transform_loc", _transform_rel, pattern=OpPattern.OPAQUE,
          attrs_type=MultiBoxTransformLocAttrs, num_inputs=3,
          describe="Decode SSD box predictions against anchors, with class and score.")


def multibox_prior(data: Expr, sizes=(1.0,), ratios=(1.0,), steps=(-1.0, -1.0),
                   offsets=(0.5, 0.5), clip: bool = False) -> Call:
    attrs = MultiBoxPriorAttrs(sizes=tuple(float(s) for s in sizes),
                               ratios=tuple(float(r) for r in ratios),
                               steps=tuple(float(s) for s in steps),
                               offsets=tuple(float(o) for o in offsets), clip=bool(clip))
    return Call(Op.get("vision.multibox_prior"), [data], attrs)


def multibox_transform_loc(cls_prob: Expr, loc_pred: Expr, anchor: Expr, clip: bool = True,
                           threshold: float = 0.01, variances=(0.1, 0.1, 0.2, 0.2),
                           keep_background: bool = False) -> TupleWrapper:
    attrs = MultiBoxTransformLocAttrs(clip=bool(clip), threshold=float(threshold),
                                      variances=tuple(float(v) for v in variances),
                                      keep_background=bool(keep_background))
    return TupleWrapper(Call(Op.get("vision.multibox_transform_loc"),
                             [cls_prob, loc_pred, anchor], attrs), 2)

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("vision.multibox_transform_loc", "thresholds and compacts a data-dependent set of boxes")
