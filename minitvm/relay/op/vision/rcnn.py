"""vision.roi_align, vision.roi_pool and the Faster R-CNN vision.proposal with TVM's attrs,
type relations and constructors (numpy references: ``minitvm.topi.reference.vision``)."""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ....topi.shape_conditions import agree
from ...expr import Call, Expr
from ..op import define_op, register_numpy_only
from ..type_relations import check_num_args, is_static_dim, tensor_arg, type_str

__all__ = ["roi_align", "roi_pool", "proposal"]


class ROIAlignAttrs(Attrs):
    __slots__ = ()
    _fields = (("pooled_size", None), ("spatial_scale", None), ("sample_ratio", -1),
               ("layout", "NCHW"), ("mode", "avg"))


class ROIPoolAttrs(Attrs):
    __slots__ = ()
    _fields = (("pooled_size", None), ("spatial_scale", None), ("layout", "NCHW"))


class ProposalAttrs(Attrs):
    __slots__ = ()
    _fields = (("scales", (4.0, 8.0, 16.0, 32.0)), ("ratios", (0.5, 1.0, 2.0)),
               ("feature_stride", 16), ("threshold", 0.7), ("rpn_pre_nms_top_n", 6000),
               ("rpn_post_nms_top_n", 300), ("rpn_min_size", 16), ("iou_loss", False))


def _roi_rel(op_name, modes=None):
    def rel(arg_types, attrs):
        check_num_args(op_name, arg_types, 2)
        data = tensor_arg(arg_types, 0, op_name)
        rois = tensor_arg(arg_types, 1, op_name)
        if attrs.layout not in ("NCHW", "NHWC") or len(data.shape) != 4:
            raise TypeError(f"{op_name}: expects 4-D NCHW or NHWC data, got {type_str(data)} "
                            f"with layout {attrs.layout!r}")
        # (a symbolic kernel reads columns 0..4 of every box: a run-time width is stated
        # equal to 5 and checked at each call, else the kernel reads past a narrower array)
        if len(rois.shape) != 2 or not agree(rois.shape[1], 5):
            raise TypeError(f"{op_name}: rois must be (num_rois, 5) [batch, x1, y1, x2, y2], "
                            f"got {type_str(rois)}")
        if modes is not None and attrs.mode not in modes:
            raise ValueError(f"{op_name}: mode must be avg or max, got {attrs.mode!r}")
        ph, pw = (int(p) for p in attrs.pooled_size)
        c = data.shape[1] if attrs.layout == "NCHW" else data.shape[3]
        r = rois.shape[0]
        shape = (r, c, ph, pw) if attrs.layout == "NCHW" else (r, ph, pw, c)
        return TensorType(shape, data.dtype)

    rel.__name__ = f"roi_rel[{op_name}]"
    return rel


def _proposal_rel(arg_types, attrs):
    op_name = "vision.proposal"
    check_num_args(op_name, arg_types, 3)
    cls = tensor_arg(arg_types, 0, op_name)
    bbox = tensor_arg(arg_types, 1, op_name)
    info = tensor_arg(arg_types, 2, op_name)
    na = len(tuple(attrs.scales)) * len(tuple(attrs.ratios))
    if len(cls.shape) != 4 or len(bbox.shape) != 4:
        raise TypeError(f"{op_name}: cls_prob and bbox_pred must be 4-D NCHW, got "
                        f"{type_str(cls)} and {type_str(bbox)}")
    if is_static_dim(cls.shape[1]) and cls.shape[1] != 2 * na:
        raise TypeError(f"{op_name}: cls_prob must have 2 * num_anchors = {2 * na} channels, "
                        f"got {type_str(cls)}")
    if is_static_dim(bbox.shape[1]) and bbox.shape[1] != 4 * na:
        raise TypeError(f"{op_name}: bbox_pred must have 4 * num_anchors = {4 * na} channels, "
                        f"got {type_str(bbox)}")
    if len(info.shape) != 2 or (is_static_dim(info.shape[1]) and info.shape[1] != 3):
        raise TypeError(f"{op_name}: im_info must be (batch, 3) [height, width, scale], got "
                        f"{type_str(info)}")
    b = cls.shape[0]
    n = int(attrs.rpn_post_nms_top_n)
    rows = b * n if is_static_dim(b) else b
    return TensorType((rows, 5), cls.dtype)


define_op("vision.roi_align", _roi_rel("vision.roi_align", ("avg", "max")),
          pattern=OpPattern.OUT_ELEMWISE_FUSABLE, attrs_type=ROIAlignAttrs, num_inputs=2,
          describe="ROIAlign: bilinear samples averaged (or maxed) per bin.")
define_op("vision.roi_pool", _roi_rel("vision.roi_pool"), pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
          attrs_type=ROIPoolAttrs, num_inputs=2, describe="ROIPool: max per quantized bin.")
define_op("vision.proposal", _proposal_rel, pattern=OpPattern.OPAQUE, attrs_type=ProposalAttrs,
          num_inputs=3, describe="Faster R-CNN region proposals.")


def roi_align(data: Expr, rois: Expr, pooled_size, spatial_scale: float, sample_ratio: int = -1,
              layout: str = "NCHW", mode: str = "avg") -> Call:
    attrs = ROIAlignAttrs(pooled_size=tuple(int(p) for p in pooled_size),
                          spatial_scale=float(spatial_scale), sample_ratio=int(sample_ratio),
                          layout=layout, mode=mode)
    return Call(Op.get("vision.roi_align"), [data, rois], attrs)


def roi_pool(data: Expr, rois: Expr, pooled_size, spatial_scale: float,
             layout: str = "NCHW") -> Call:
    attrs = ROIPoolAttrs(pooled_size=tuple(int(p) for p in pooled_size),
                         spatial_scale=float(spatial_scale), layout=layout)
    return Call(Op.get("vision.roi_pool"), [data, rois], attrs)


def proposal(cls_prob: Expr, bbox_pred: Expr, im_info: Expr, scales, ratios,
             feature_stride: int, threshold: float, rpn_pre_nms_top_n: int,
             rpn_post_nms_top_n: int, rpn_min_size: int, iou_loss: bool) -> Call:
    attrs = ProposalAttrs(scales=tuple(float(s) for s in scales),
                          ratios=tuple(float(r) for r in ratios),
                          feature_stride=int(feature_stride), threshold=float(threshold),
                          rpn_pre_nms_top_n=int(rpn_pre_nms_top_n),
                          rpn_post_nms_top_n=int(rpn_post_nms_top_n),
                          rpn_min_size=int(rpn_min_size), iou_loss=bool(iou_loss))
    return Call(Op.get("vision.proposal"), [cls_prob, bbox_pred, im_info], attrs)

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("vision.proposal", "sorts and suppresses a data-dependent set of boxes")
