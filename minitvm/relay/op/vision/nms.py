"""vision.get_valid_counts, vision.non_max_suppression and vision.all_class_non_max_suppression
with TVM's attrs, type relations and constructors (numpy references:
``minitvm.topi.reference.vision``)."""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType, TupleType
from ....topi.all_class_nms import all_class_nms_onnx, all_class_nms_tensorflow
from ....topi.box_nms import box_nms, valid_counts
from ...expr import Call, Expr, TupleWrapper, const
from ..op import define_op, register_compute
from ..type_relations import check_num_args, is_static_dim, tensor_arg, type_str

__all__ = ["get_valid_counts", "non_max_suppression", "all_class_non_max_suppression"]


class GetValidCountsAttrs(Attrs):
    __slots__ = ()
    _fields = (("id_index", 0), ("score_index", 1))


class NonMaximumSuppressionAttrs(Attrs):
    __slots__ = ()
    _fields = (("force_suppress", False), ("top_k", -1), ("coord_start", 2),
               ("score_index", 1), ("id_index", 0), ("return_indices", True),
               ("invalid_to_bottom", False))


class AllClassNonMaximumSuppressionAttrs(Attrs):
    """TVM's ``output_format``; two minitvm additions whose defaults are TVM's behaviour:
    ``center_point_box`` 1 reads boxes as [x_center, y_center, width, height] with ONNX
    Runtime's area ``width * height`` (which corners computed beforehand would round
    differently); ``rules`` "torchvision" computes as ``torchvision.ops.nms`` (boxes [x1, y1,
    x2, y2], NaN scores first, the overlap ratio against a float64 iou_threshold), see
    ``schedule.all_class_nms``."""

    __slots__ = ()
    _fields = (("output_format", "onnx"), ("center_point_box", 0), ("rules", "onnxruntime"))


def _boxes3d(arg_types, i, op_name, what="data"):
    t = tensor_arg(arg_types, i, op_name)
    if len(t.shape) != 3:
        raise TypeError(f"{op_name}: {what} must be 3-D (batch, num_boxes, elements), got "
                        f"{type_str(t)}")
    return t


def _scalar(arg_types, i, op_name, what):
    t = tensor_arg(arg_types, i, op_name)
    if len(t.shape) > 1 or (t.shape and is_static_dim(t.shape[0]) and t.shape[0] != 1):
        raise TypeError(f"{op_name}: {what} must be a scalar, got {type_str(t)}")
    return t


def _valid_counts_rel(arg_types, attrs):
    op_name = "vision.get_valid_counts"
    check_num_args(op_name, arg_types, 2)
    data = _boxes3d(arg_types, 0, op_name)
    _scalar(arg_types, 1, op_name, "score_threshold")
    b, n, k = data.shape
    if is_static_dim(k) and not (int(attrs.score_index) < k and int(attrs.id_index) < k):
        raise TypeError(f"{op_name}: score_index {attrs.score_index} / id_index "
                        f"{attrs.id_index} out of range for boxes of {k} elements")
    return TupleType([TensorType((b,), "int32"), TensorType(data.shape, data.dtype),
                      TensorType((b, n), "int32")])


def _nms_rel(arg_types, attrs):
    op_name = "vision.non_max_suppression"
    check_num_args(op_name, arg_types, 5)
    data = _boxes3d(arg_types, 0, op_name)
    vc = tensor_arg(arg_types, 1, op_name)
    idx = tensor_arg(arg_types, 2, op_name)
    b, n, k = data.shape
    if len(vc.shape) != 1 or len(idx.shape) != 2:
        raise TypeError(f"{op_name}: valid_count must be (batch,) and indices (batch, "
                        f"num_boxes), got {type_str(vc)} and {type_str(idx)}")
    for got, want in ((vc.shape[0], b), (idx.shape[0], b), (idx.shape[1], n)):
        if is_static_dim(got) and is_static_dim(want) and got != want:
            raise TypeError(f"{op_name}: valid_count {type_str(vc)} and indices "
                            f"{type_str(idx)} must be (batch={b},) and (batch={b}, "
                            f"num_boxes={n})")
    _scalar(arg_types, 3, op_name, "max_output_size")
    _scalar(arg_types, 4, op_name, "iou_threshold")
    if is_static_dim(k) and int(attrs.coord_start) + 4 > k:
        raise TypeError(f"{op_name}: coord_start {attrs.coord_start} leaves no 4 coordinates "
                        f"in boxes of {k} elements")
    if attrs.return_indices:
        return TupleType([TensorType((b, n), "int32"), TensorType((b, 1), "int32")])
    return TensorType(data.shape, data.dtype)


def _all_class_rel(arg_types, attrs):
    op_name = "vision.all_class_non_max_suppression"
    check_num_args(op_name, arg_types, 5)
    boxes = _boxes3d(arg_types, 0, op_name, "boxes")
    scores = _boxes3d(arg_types, 1, op_name, "scores")
    b, n, four = boxes.shape
    if is_static_dim(four) and four != 4:
        raise TypeError(f"{op_name}: boxes must be (batch, num_boxes, 4), got "
                        f"{type_str(boxes)}")
    c = scores.shape[1]
    if is_static_dim(scores.shape[0]) and is_static_dim(b) and scores.shape[0] != b:
        raise TypeError(f"{op_name}: scores {type_str(scores)} must be (batch={b}, classes, "
                        "num_boxes)")
    if is_static_dim(scores.shape[2]) and is_static_dim(n) and scores.shape[2] != n:
        raise TypeError(f"{op_name}: scores {type_str(scores)} must be (batch, classes, "
                        f"num_boxes={n})")
    for i, what in ((2, "max_output_boxes_per_class"), (3, "iou_threshold")):
        _scalar(arg_types, i, op_name, what)
    thr = tensor_arg(arg_types, 4, op_name)
    if not (len(thr.shape) == 1 and is_static_dim(thr.shape[0]) and thr.shape[0] == 0):
        _scalar(arg_types, 4, op_name, "score_threshold (or an empty tensor: none)")
    if attrs.output_format == "onnx":
        return TupleType([TensorType((b * c * n, 3), "int64"), TensorType((1,), "int64")])
    if attrs.output_format == "tensorflow":
        return TupleType([TensorType((b, c * n, 2), "int64"),
                          TensorType((b, c * n), scores.dtype), TensorType((b,), "int64")])
    raise ValueError(f"{op_name}: output_format must be onnx or tensorflow, got "
                     f"{attrs.output_format!r}")


define_op("vision.get_valid_counts", _valid_counts_rel, pattern=OpPattern.OPAQUE,
          attrs_type=GetValidCountsAttrs, num_inputs=2,
          describe="Pack the boxes scoring above a threshold first.")
define_op("vision.non_max_suppression", _nms_rel, pattern=OpPattern.OPAQUE,
          attrs_type=NonMaximumSuppressionAttrs, num_inputs=5,
          describe="Greedy non-maximum suppression of scored boxes.")
define_op("vision.all_class_non_max_suppression", _all_class_rel, pattern=OpPattern.OPAQUE,
          attrs_type=AllClassNonMaximumSuppressionAttrs, num_inputs=5,
          describe="Non-maximum suppression per batch and class (ONNX / TF formats).")


def _expr(v, dtype):
    return v if isinstance(v, Expr) else const(v, dtype)


def get_valid_counts(data: Expr, score_threshold, id_index: int = 0,
                     score_index: int = 1) -> TupleWrapper:
    call = Call(Op.get("vision.get_valid_counts"), [data, _expr(score_threshold, "float32")],
                GetValidCountsAttrs(id_index=int(id_index), score_index=int(score_index)))
    return TupleWrapper(call, 3)


def non_max_suppression(data: Expr, valid_count: Expr, indices: Expr, max_output_size=-1,
                        iou_threshold=0.5, force_suppress: bool = False, top_k: int = -1,
                        coord_start: int = 2, score_index: int = 1, id_index: int = 0,
                        return_indices: bool = True, invalid_to_bottom: bool = False):
    attrs = NonMaximumSuppressionAttrs(
        force_suppress=bool(force_suppress), top_k=int(top_k), coord_start=int(coord_start),
        score_index=int(score_index), id_index=int(id_index),
        return_indices=bool(return_indices), invalid_to_bottom=bool(invalid_to_bottom))
    call = Call(Op.get("vision.non_max_suppression"),
                [data, valid_count, indices, _expr(max_output_size, "int32"),
                 _expr(iou_threshold, "float32")], attrs)
    return TupleWrapper(call, 2) if return_indices else call


def all_class_non_max_suppression(boxes: Expr, scores: Expr, max_output_boxes_per_class=-1,
                                  iou_threshold=-1.0, score_threshold=-1.0,
                                  output_format: str = "onnx",
                                  center_point_box: int = 0,
                                  rules: str = "onnxruntime") -> TupleWrapper:
    """TVM's op; ``score_threshold`` an empty tensor: no threshold (ONNX's left-out input:
    every box a candidate, NaN and -inf scores included)."""
    call = Call(Op.get("vision.all_class_non_max_suppression"),
                [boxes, scores, _expr(max_output_boxes_per_class, "int64"),
                 _expr(iou_threshold, "float32"), _expr(score_threshold, "float32")],
                AllClassNonMaximumSuppressionAttrs(output_format=output_format,
                                                   center_point_box=int(center_point_box),
                                                   rules=str(rules)))
    return TupleWrapper(call, 2 if output_format == "onnx" else 3)


def _valid_counts_compute(attrs, inputs, out_type):
    """One native stage (``topi.box_nms``: ``schedule.box_nms``) and gathers of it."""
    return valid_counts(*inputs, id_index=int(attrs.id_index),
                        score_index=int(attrs.score_index))


def _nms_compute(attrs, inputs, out_type):
    """One native stage (``topi.box_nms``: ``schedule.box_nms``) and gathers of it."""
    return box_nms(*inputs, force_suppress=bool(attrs.force_suppress), top_k=int(attrs.top_k),
                   coord_start=int(attrs.coord_start), score_index=int(attrs.score_index),
                   id_index=int(attrs.id_index), return_indices=bool(attrs.return_indices),
                   invalid_to_bottom=bool(attrs.invalid_to_bottom))


register_compute("vision.get_valid_counts", _valid_counts_compute)
register_compute("vision.non_max_suppression", _nms_compute)


def _all_class_nms_compute(attrs, inputs, out_type):
    """Either output format is one native stage (``topi.all_class_nms``) and slices of it;
    "tensorflow" sorts each batch's rows by score across its classes in the kernel."""
    center = bool(attrs.center_point_box)
    if attrs.output_format == "tensorflow":
        return all_class_nms_tensorflow(*inputs, center_point_box=center, rules=attrs.rules)
    return all_class_nms_onnx(*inputs, center_point_box=center, rules=attrs.rules)


register_compute("vision.all_class_non_max_suppression", _all_class_nms_compute)
