"""vision.onnx_roi_align: ONNX's RoiAlign (boxes [R, 4] with their images' indices [R],
half-pixel boxes, ONNX Runtime's max mode, an adaptive grid); ``minitvm.topi.roi_align`` has
its stage and numpy reference, ``minitvm.schedule.roi_ops`` its native kernel. minitvm's own
operator: TVM's ``vision.roi_align`` has neither half-pixel boxes nor that max mode, and its
importer shifts the boxes and approximates."""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ...expr import Call, Expr, const
from ..op import define_op
from ..type_relations import check_num_args, is_static_dim, tensor_arg, type_str

__all__ = ["onnx_roi_align", "roi_pool_rounding_away"]

_NAME = "vision.onnx_roi_align"


class OnnxRoiAlignAttrs(Attrs):
    __slots__ = ()
    _fields = (("output_height", 1), ("output_width", 1), ("sampling_ratio", 0),
               ("spatial_scale", 1.0), ("half_pixel", True), ("mode", "avg"))


def _rel(arg_types, attrs):
    check_num_args(_NAME, arg_types, 3)
    x, rois, idx = (tensor_arg(arg_types, k, _NAME) for k in range(3))
    if len(x.shape) != 4 or len(rois.shape) != 2 or len(idx.shape) != 1 or \
            (is_static_dim(rois.shape[1]) and rois.shape[1] != 4):
        raise TypeError(f"{_NAME}: x [N, C, H, W], rois [R, 4] and batch_indices [R] expected, "
                        f"got {type_str(x)}, {type_str(rois)} and {type_str(idx)}")
    r, k = rois.shape[0], idx.shape[0]
    if is_static_dim(r) and is_static_dim(k) and int(r) != int(k):
        raise TypeError(f"{_NAME}: batch_indices {type_str(idx)} must have one index per box "
                        f"of rois {type_str(rois)}")
    if attrs.mode not in ("avg", "max") or int(attrs.sampling_ratio) < 0:
        raise ValueError(f"{_NAME}: mode must be avg or max and sampling_ratio >= 0, got "
                         f"{attrs.mode!r} and {attrs.sampling_ratio}")
    return TensorType((rois.shape[0], x.shape[1], int(attrs.output_height),
                       int(attrs.output_width)), x.dtype)


define_op(_NAME, _rel, pattern=OpPattern.OPAQUE, attrs_type=OnnxRoiAlignAttrs, num_inputs=3,
          describe="ONNX RoiAlign: bilinear samples averaged (or maxed) per bin of each box.")


def onnx_roi_align(x: Expr, rois: Expr, batch_indices: Expr, output_height: int,
                   output_width: int, sampling_ratio: int, spatial_scale: float,
                   half_pixel: bool, mode: str = "avg") -> Call:
    """[R, C, output_height, output_width]: ONNX RoiAlign of ``x`` (NCHW) over ``rois`` (x1, y1,
    x2, y2) of images ``batch_indices``; ``sampling_ratio`` 0 is adaptive."""
    return Call(Op.get(_NAME), [x, rois, batch_indices], OnnxRoiAlignAttrs(
        output_height=int(output_height), output_width=int(output_width),
        sampling_ratio=int(sampling_ratio), spatial_scale=float(spatial_scale),
        half_pixel=bool(half_pixel), mode=str(mode)))


def roi_pool_rounding_away(data: Expr, rois: Expr, pooled_size, spatial_scale: float) -> Expr:
    """``vision.roi_pool`` with the scaled corners rounded halves away from zero (C's
    ``round``: ONNX Runtime's MaxRoiPool, torchvision's ``roi_pool``) where the op rounds them
    half to even (TVM's): the corners arrive scaled and rounded (exactly: no ``+ 0.5``)."""
    from .. import tensor as _t
    from .. import transform as _tr
    from .rcnn import roi_pool

    dt = "float32"
    v = _t.multiply(_tr.strided_slice(rois, [1], [5], axes=[1]), const(spatial_scale, dt))
    t = _t.trunc(v)
    half = _t.greater_equal(_t.abs(_t.subtract(v, t)), const(0.5, dt))
    corners = _tr.where(half, _t.add(t, _t.sign(v)), t)
    rounded = _tr.concatenate([_tr.strided_slice(rois, [0], [1], axes=[1]), corners], 1)
    return roi_pool(data, rounded, pooled_size, 1.0)
