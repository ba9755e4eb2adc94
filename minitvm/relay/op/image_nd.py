"""``relay.image``'s other ops: resize1d, resize3d, crop_and_resize, grid_sample, affine_grid and
dilation2d, with TVM's attrs, type relations and constructors (re-exported by ``image``).
Numpy references: ``minitvm.topi.reference.image_nd``."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ...topi.shape import spatial_axes
from ...topi.shape_conditions import agree
from ...topi.utils import pad_tuple
from ..expr import Call, Expr
from .op import define_op
from .type_relations import check_num_args, is_static_dim, tensor_arg, type_str

__all__ = ["resize1d", "resize3d", "crop_and_resize", "grid_sample", "affine_grid",
           "dilation2d"]

_METHODS = ("nearest_neighbor", "linear", "cubic")
_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
          "tf_half_pixel_for_nn", "tf_crop_and_resize")


def _resize_fields(layout):
    return (("size", None), ("roi", None), ("layout", layout), ("method", "linear"),
            ("coordinate_transformation_mode", "half_pixel"), ("rounding_method", ""),
            ("cubic_alpha", -0.5), ("cubic_exclude", 0), ("extrapolation_value", 0.0),
            ("out_dtype", None))


class Resize1DAttrs(Attrs):
    __slots__ = ()
    _fields = _resize_fields("NCW")


class Resize3DAttrs(Attrs):
    __slots__ = ()
    _fields = _resize_fields("NCDHW")


class CropAndResizeAttrs(Attrs):
    __slots__ = ()
    _fields = (("crop_size", None), ("layout", "NCHW"), ("method", "bilinear"),
               ("extrapolation_value", 0.0), ("out_dtype", None))


class GridSampleAttrs(Attrs):
    __slots__ = ()
    _fields = (("method", "bilinear"), ("layout", "NCHW"), ("padding_mode", "zeros"),
               ("align_corners", True))


class AffineGridAttrs(Attrs):
    __slots__ = ()
    _fields = (("target_shape", None),)


class Dilation2DAttrs(Attrs):
    __slots__ = ()
    _fields = (("strides", (1, 1)), ("padding", (0, 0)), ("dilations", (1, 1)),
               ("data_layout", "NCHW"), ("kernel_layout", "IHW"), ("out_dtype", ""))


# --------------------------------------------------------------------------- type relations
def _resize_rel(op_name, spatial):
    def rel(arg_types, attrs):
        check_num_args(op_name, arg_types, 1)
        x = tensor_arg(arg_types, 0, op_name)
        axes = spatial_axes(attrs.layout, len(x.shape), spatial, op_name)
        if attrs.method not in _METHODS:
            raise TypeError(f"{op_name}: method must be one of {', '.join(_METHODS)}, got "
                            f"{attrs.method!r}")
        if attrs.coordinate_transformation_mode not in _MODES:
            raise TypeError(f"{op_name}: unknown coordinate_transformation_mode "
                            f"{attrs.coordinate_transformation_mode!r}")
        size = tuple(int(s) for s in attrs.size)
        if len(size) != len(spatial) or any(s < 1 for s in size):
            raise TypeError(f"{op_name}: size must be {len(spatial)} positive values, got "
                            f"{list(size)}")
        shape = list(x.shape)
        for a, s in zip(axes, size):
            shape[a] = s
        return TensorType(tuple(shape), attrs.out_dtype or x.dtype)

    rel.__name__ = f"resize_rel[{op_name}]"
    return rel


def _crop_and_resize_rel(arg_types, attrs):
    op_name = "image.crop_and_resize"
    check_num_args(op_name, arg_types, 3)
    x = tensor_arg(arg_types, 0, op_name)
    boxes = tensor_arg(arg_types, 1, op_name)
    idx = tensor_arg(arg_types, 2, op_name)
    if attrs.layout not in ("NCHW", "NHWC") or len(x.shape) != 4:
        raise TypeError(f"{op_name}: expects 4-D NCHW or NHWC data, got {type_str(x)} with "
                        f"layout {attrs.layout!r}")
    if len(boxes.shape) != 2 or (is_static_dim(boxes.shape[1]) and boxes.shape[1] != 4):
        raise TypeError(f"{op_name}: boxes must have shape (num_boxes, 4), got "
                        f"{type_str(boxes)}")
    if len(idx.shape) != 1 or not idx.dtype.startswith(("int", "uint")):
        raise TypeError(f"{op_name}: box_indices must be a 1-D integer tensor, got "
                        f"{type_str(idx)}")
    if attrs.method not in ("bilinear", "nearest_neighbor"):
        raise TypeError(f"{op_name}: method must be bilinear or nearest_neighbor, got "
                        f"{attrs.method!r}")
    ch, cw = (int(s) for s in attrs.crop_size)
    c = x.shape[1] if attrs.layout == "NCHW" else x.shape[3]
    shape = (boxes.shape[0], c, ch, cw) if attrs.layout == "NCHW" else (boxes.shape[0], ch, cw,
                                                                          c)
    return TensorType(shape, attrs.out_dtype or x.dtype)


def _grid_sample_rel(arg_types, attrs):
    op_name = "image.grid_sample"
    check_num_args(op_name, arg_types, 2)
    x = tensor_arg(arg_types, 0, op_name)
    grid = tensor_arg(arg_types, 1, op_name)
    layouts = {"NCHW": 2, "NCDHW": 3}
    if attrs.layout not in layouts or len(x.shape) != layouts[attrs.layout] + 2:
        raise TypeError(f"{op_name}: expects NCHW or NCDHW data matching its layout, got "
                        f"{type_str(x)} with layout {attrs.layout!r}")
    nd = layouts[attrs.layout]
    if len(grid.shape) != nd + 2 or not agree(grid.shape[1], nd):
        raise TypeError(f"{op_name}: grid must have shape (N, {nd}, ...) with {nd} spatial "
                        f"axes, got {type_str(grid)}")
    methods = ("nearest", "bilinear", "bicubic") if nd == 2 else ("nearest", "bilinear")
    if attrs.method not in methods:
        raise TypeError(f"{op_name}: method must be one of {', '.join(methods)}, got "
                        f"{attrs.method!r}")
    if not agree(grid.shape[0], x.shape[0]):
        raise TypeError(f"{op_name}: the grid {type_str(grid)} and the data {type_str(x)} differ "
                        "in batch")
    if attrs.padding_mode not in ("zeros", "border", "reflection"):
        raise TypeError(f"{op_name}: padding_mode must be zeros, border or reflection, got "
                        f"{attrs.padding_mode!r}")
    return TensorType((x.shape[0], x.shape[1]) + tuple(grid.shape[2:]), x.dtype)


def _affine_grid_rel(arg_types, attrs):
    op_name = "image.affine_grid"
    check_num_args(op_name, arg_types, 1)
    theta = tensor_arg(arg_types, 0, op_name)
    if len(theta.shape) != 3 or not (agree(theta.shape[1], 2) and agree(theta.shape[2], 3)):
        raise TypeError(f"{op_name}: expects affine matrices of shape (N, 2, 3), got "
                        f"{type_str(theta)}")
    if attrs.target_shape is None or len(tuple(attrs.target_shape)) != 2:
        raise TypeError(f"{op_name}: target_shape must be (height, width), got "
                        f"{attrs.target_shape}")
    h, w = (int(s) for s in attrs.target_shape)
    return TensorType((theta.shape[0], 2, h, w), theta.dtype)


def _dilation2d_rel(arg_types, attrs):
    op_name = "image.dilation2d"
    check_num_args(op_name, arg_types, 2)
    x = tensor_arg(arg_types, 0, op_name)
    w = tensor_arg(arg_types, 1, op_name)
    if (attrs.data_layout, attrs.kernel_layout) not in (("NCHW", "IHW"), ("NHWC", "HWI")):
        raise TypeError(f"{op_name}: supports NCHW data with IHW kernels or NHWC with HWI, got "
                        f"{attrs.data_layout} and {attrs.kernel_layout}")
    if len(x.shape) != 4 or len(w.shape) != 3:
        raise TypeError(f"{op_name}: expects 4-D data and a 3-D kernel, got {type_str(x)} and "
                        f"{type_str(w)}")
    nchw = attrs.data_layout == "NCHW"
    n, c, h, wd = x.shape if nchw else (x.shape[0], x.shape[3], x.shape[1], x.shape[2])
    ci, kh, kw = w.shape if nchw else (w.shape[2], w.shape[0], w.shape[1])
    if not agree(c, ci):
        raise TypeError(f"{op_name}: data channels {c} do not match kernel channels {ci}")
    pt, pl, pb, pr = pad_tuple(attrs.padding, 2, op_name)
    sh, sw = (int(s) for s in attrs.strides)
    dh, dw = (int(d) for d in attrs.dilations)
    oh = (h + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    ow = (wd + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    if oh < 1 or ow < 1:
        raise TypeError(f"{op_name}: the computed output size ({oh}, {ow}) is not positive")
    shape = (n, c, oh, ow) if nchw else (n, oh, ow, c)
    return TensorType(shape, attrs.out_dtype or x.dtype)


define_op("image.resize1d", _resize_rel("image.resize1d", "W"), pattern=OpPattern.INJECTIVE,
          attrs_type=Resize1DAttrs, num_inputs=1, describe="Resize the W axis.")
define_op("image.resize3d", _resize_rel("image.resize3d", "DHW"), pattern=OpPattern.INJECTIVE,
          attrs_type=Resize3DAttrs, num_inputs=1, describe="Resize the D, H and W axes.")
define_op("image.crop_and_resize", _crop_and_resize_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=CropAndResizeAttrs, num_inputs=3,
          describe="Crop boxes out of images and resize them to one size.")
define_op("image.grid_sample", _grid_sample_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=GridSampleAttrs, num_inputs=2,
          describe="Sample data at the normalized positions of a grid.")
define_op("image.affine_grid", _affine_grid_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=AffineGridAttrs, num_inputs=1,
          describe="The sampling grid of affine transformations.")
define_op("image.dilation2d", _dilation2d_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
          attrs_type=Dilation2DAttrs, num_inputs=2,
          describe="Grey-scale morphological dilation.")


# --------------------------------------------------------------------------- constructors
def _sizes(size, n):
    return (int(size),) * n if isinstance(size, int) else tuple(int(s) for s in size)


def _resize(op_name, attrs_type, n, data, size, roi, layout, method, mode, rounding_method,
            cubic_alpha, cubic_exclude, extrapolation_value, out_dtype) -> Call:
    roi = tuple(float(r) for r in roi) if roi is not None else None
    return Call(Op.get(op_name), [data], attrs_type(
        size=_sizes(size, n), roi=roi, layout=layout, method=method,
        coordinate_transformation_mode=mode, rounding_method=rounding_method,
        cubic_alpha=float(cubic_alpha), cubic_exclude=int(cubic_exclude),
        extrapolation_value=float(extrapolation_value), out_dtype=out_dtype))


def resize1d(data: Expr, size, roi=None, layout: str = "NCW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "",
             cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype=None) -> Call:
    return _resize("image.resize1d", Resize1DAttrs, 1, data, size, roi, layout, method,
                   coordinate_transformation_mode, rounding_method, cubic_alpha, cubic_exclude,
                   extrapolation_value, out_dtype)


def resize3d(data: Expr, size, roi=None, layout: str = "NCDHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "",
             cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype=None) -> Call:
    return _resize("image.resize3d", Resize3DAttrs, 3, data, size, roi, layout, method,
                   coordinate_transformation_mode, rounding_method, cubic_alpha, cubic_exclude,
                   extrapolation_value, out_dtype)


def crop_and_resize(data: Expr, boxes: Expr, box_indices: Expr, crop_size,
                    layout: str = "NCHW", method: str = "bilinear",
                    extrapolation_value: float = 0, out_dtype=None) -> Call:
    attrs = CropAndResizeAttrs(crop_size=_sizes(crop_size, 2), layout=layout, method=method,
                               extrapolation_value=float(extrapolation_value),
                               out_dtype=out_dtype)
    return Call(Op.get("image.crop_and_resize"), [data, boxes, box_indices], attrs)


def grid_sample(data: Expr, grid: Expr, method: str = "bilinear", layout: str = "NCHW",
                padding_mode: str = "zeros", align_corners: bool = True) -> Call:
    attrs = GridSampleAttrs(method=method, layout=layout, padding_mode=padding_mode,
                            align_corners=bool(align_corners))
    return Call(Op.get("image.grid_sample"), [data, grid], attrs)


def affine_grid(data: Expr, target_shape=None) -> Call:
    shape = tuple(int(s) for s in target_shape) if target_shape is not None else None
    return Call(Op.get("image.affine_grid"), [data], AffineGridAttrs(target_shape=shape))


def dilation2d(data: Expr, weight: Expr, strides=(1, 1), padding=(0, 0), dilations=(1, 1),
               data_layout: str = "NCHW", kernel_layout: str = "IHW",
               out_dtype: str = "") -> Call:
    attrs = Dilation2DAttrs(strides=_sizes(strides, 2), padding=_sizes(padding, 2),
                            dilations=_sizes(dilations, 2), data_layout=data_layout,
                            kernel_layout=kernel_layout, out_dtype=out_dtype)
    return Call(Op.get("image.dilation2d"), [data, weight], attrs)
