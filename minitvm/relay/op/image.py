"""``relay.image``: ``resize2d`` in TVM's signature (reference: ``topi.reference.image``)."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ..expr import Call, Constant, Expr, const
from .op import define_op
from .type_relations import check_num_args, tensor_arg, type_str

__all__ = ["resize2d"]

_METHODS = ("nearest_neighbor", "linear", "cubic")
_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
          "tf_half_pixel_for_nn", "tf_crop_and_resize")


class Resize2DAttrs(Attrs):
    __slots__ = ()
    _fields = (("size", None), ("roi", None), ("layout", "NCHW"), ("method", "linear"),
               ("coordinate_transformation_mode", "half_pixel"), ("rounding_method", ""),
               ("cubic_alpha", -0.5), ("cubic_exclude", 0), ("extrapolation_value", 0.0),
               ("out_dtype", None))


def _resize2d_rel(arg_types, attrs):
    check_num_args("image.resize2d", arg_types, 1)
    x = tensor_arg(arg_types, 0, "image.resize2d")
    if attrs.layout not in ("NCHW", "NHWC") or len(x.shape) != 4:
        raise TypeError(f"image.resize2d: expects 4-D NCHW or NHWC data, got "
                        f"{type_str(x)} with layout {attrs.layout!r}")
    if attrs.method not in _METHODS:
        raise TypeError(f"image.resize2d: method must be one of {', '.join(_METHODS)}, got "
                        f"{attrs.method!r}")
    if attrs.coordinate_transformation_mode not in _MODES:
        raise TypeError(f"image.resize2d: unknown coordinate_transformation_mode "
                        f"{attrs.coordinate_transformation_mode!r}")
    h, w = (int(s) for s in attrs.size)
    if h < 1 or w < 1:
        raise TypeError(f"image.resize2d: size must be positive, got {list(attrs.size)}")
    shape = list(x.shape)
    if attrs.layout == "NCHW":
        shape[2], shape[3] = h, w
    else:
        shape[1], shape[2] = h, w
    return TensorType(tuple(shape), attrs.out_dtype or x.dtype)


define_op("image.resize2d", _resize2d_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=Resize2DAttrs, num_inputs=1,
          describe="Resize images (nearest, linear or cubic).")


def resize2d(data, size, roi=None, layout: str = "NCHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "",
             cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype=None) -> Call:
    """Resize the spatial dims; a non-constant ``size`` or ``roi`` expression builds
    ``dyn.image.resize2d`` (constants are read as values, as in TVM)."""
    if isinstance(size, Constant):
        size = [int(s) for s in size.data.numpy().astype("int32").reshape(-1)]
    if isinstance(roi, Constant):
        roi = [float(r) for r in roi.data.numpy().astype("float32").reshape(-1)]
    if isinstance(size, Expr) or isinstance(roi, Expr):
        from .dyn import _more as _dyn

        if not isinstance(size, Expr):
            size = const([int(s) for s in size], "int64")
        if not isinstance(roi, Expr):
            roi = const([float(r) for r in (roi if roi is not None else (0.0,) * 4)],
                        "float32")
        return _dyn.resize2d(data, size, roi, layout, method, coordinate_transformation_mode,
                             rounding_method, cubic_alpha, cubic_exclude, extrapolation_value,
                             out_dtype)
    size = (int(size), int(size)) if isinstance(size, int) else tuple(int(s) for s in size)
    roi = tuple(float(r) for r in roi) if roi is not None else (0.0,) * 4  # TVM's default
    return Call(Op.get("image.resize2d"), [data], Resize2DAttrs(
        size=size, roi=roi, layout=layout, method=method,
        coordinate_transformation_mode=coordinate_transformation_mode,
        rounding_method=rounding_method, cubic_alpha=float(cubic_alpha),
        cubic_exclude=int(cubic_exclude), extrapolation_value=float(extrapolation_value),
        out_dtype=out_dtype))


from .image_nd import (  # noqa: E402,F401  (TVM's other image ops, in relay.image)
    affine_grid,
    crop_and_resize,
    dilation2d,
    grid_sample,
    resize1d,
    resize3d,
)
