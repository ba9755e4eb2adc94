"""vision.multiclass_nms: the best ``max_detections`` of a greedy NMS per class (TFLite's
regular NMS; ``minitvm.topi.multiclass_nms`` has the semantics, its native schedule and numpy
reference). minitvm's own operator: TVM computes TFLite's regular NMS in numpy-like loops of
``all_class_non_max_suppression`` over every class's every box."""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ...expr import Call, Expr
from ..op import define_op
from ..type_relations import check_num_args, is_static_dim, tensor_arg, type_str

__all__ = ["multiclass_nms"]

_NAME = "vision.multiclass_nms"


class MulticlassNMSAttrs(Attrs):
    __slots__ = ()
    _fields = (("max_detections", 10), ("detections_per_class", 100), ("iou_threshold", 0.5),
               ("score_threshold", 0.0), ("class_offset", 0))


def _rel(arg_types, attrs):
    check_num_args(_NAME, arg_types, 2)
    boxes, scores = tensor_arg(arg_types, 0, _NAME), tensor_arg(arg_types, 1, _NAME)
    if len(boxes.shape) != 3 or len(scores.shape) != 3:
        raise TypeError(f"{_NAME}: boxes (1, N, 4) and scores (1, N, classes) expected, got "
                        f"{type_str(boxes)} and {type_str(scores)}")
    dims = [*boxes.shape, *scores.shape]
    if all(is_static_dim(d) for d in dims):
        b, n, four, b2, n2, k = (int(d) for d in dims)
        if b != 1 or b2 != 1 or four != 4 or n2 != n or not 0 <= int(attrs.class_offset) < k:
            raise TypeError(f"{_NAME}: boxes {type_str(boxes)} and scores {type_str(scores)} "
                            f"(class offset {attrs.class_offset}) do not describe one batch "
                            "of N boxes")
    if boxes.dtype != "float32" or scores.dtype != "float32":
        raise TypeError(f"{_NAME}: float32 boxes and scores expected, got {type_str(boxes)} "
                        f"and {type_str(scores)}")
    if int(attrs.max_detections) < 1 or int(attrs.detections_per_class) < 1:
        raise TypeError(f"{_NAME}: max_detections and detections_per_class must be positive, "
                        f"got {attrs.max_detections} and {attrs.detections_per_class}")
    return TensorType((1, int(attrs.max_detections)), "int32")


define_op(_NAME, _rel, pattern=OpPattern.OPAQUE, attrs_type=MulticlassNMSAttrs, num_inputs=2,
          describe="The best detections of a greedy NMS per class, as class * N + box.")


def multiclass_nms(boxes: Expr, scores: Expr, max_detections: int, detections_per_class: int,
                   iou_threshold: float, score_threshold: float, class_offset: int = 0) -> Call:
    """(1, max_detections) int32: each detection as ``class * N + box``, best first, -1 past
    the count (``topi.multiclass_nms``)."""
    return Call(Op.get(_NAME), [boxes, scores], MulticlassNMSAttrs(
        max_detections=int(max_detections), detections_per_class=int(detections_per_class),
        iou_threshold=float(iou_threshold), score_threshold=float(score_threshold),
        class_offset=int(class_offset)))
