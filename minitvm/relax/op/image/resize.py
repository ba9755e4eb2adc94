"""``image.resize2d``: resize the H and W dims of an image tensor to a given size (TVM's
signature and ``Resize2DAttrs``). The size is an argument (a shape), not an attribute."""

from __future__ import annotations

from collections.abc import Sequence

from ....ir.op import Op, OpPattern
from ....ir.prim_expr import FloatImm, IntImm, PrimExpr
from ...expr import Call, Expr, ShapeExpr
from ...struct_info import ShapeStructInfo, StructInfo
from .._common import arg_sinfo, check_num_args, fail, fmt_sinfo, is_void, make_tensor, tensor_arg
from ..base import register_op_rule
from ..nn._layout import dims_per_layout, from_canonical, layout_perm, to_canonical
from ..op_attrs import _attrs as _make_attrs

__all__ = ["resize2d", "Resize2DAttrs"]

Resize2DAttrs = _make_attrs(
    "Resize2DAttrs",
    [("roi", (0.0, 0.0, 0.0, 0.0)), ("layout", "NCHW"), ("method", "linear"),
     ("coordinate_transformation_mode", "half_pixel"), ("rounding_method", "round"),
     ("cubic_alpha", -0.5), ("cubic_exclude", 0), ("extrapolation_value", 0.0),
     ("out_dtype", "void")],
    "Attributes of image.resize2d.")
Resize2DAttrs.__module__ = __name__

METHODS = ("nearest_neighbor", "linear", "cubic")
MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
         "tf_half_pixel_for_nn", "tf_crop_and_resize")
ROUNDINGS = ("round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "")


def _infer_resize2d(call: Call, ctx) -> StructInfo:
    check_num_args(call, 2)
    data = tensor_arg(call, 0, "data")
    size = arg_sinfo(call, 1)
    if not isinstance(size, ShapeStructInfo):
        fail(call, f"expects the output image size to be a shape, got {fmt_sinfo(size)}",
             type_error=True)
    if size.ndim not in (-1, 2):
        fail(call, f"expects the output image size to be a 2-dim shape, got "
                   f"{fmt_sinfo(size)}")
    a = call.attrs
    perm = layout_perm(call, a.layout, "NCHW", "data")
    dtype = data.dtype if is_void(str(a.out_dtype)) else str(a.out_dtype)
    dims = dims_per_layout(call, data, a.layout, "data")
    size_arg = call.args[1]
    if dims is None or not isinstance(size_arg, ShapeExpr):
        return make_tensor(None, dtype, 4, data.vdevice)
    n, c, _, _ = to_canonical(dims, perm)
    h, w = size_arg.values
    return make_tensor(from_canonical([n, c, h, w], perm), dtype, vdevice=data.vdevice)


register_op_rule("relax.image.resize2d", _infer_resize2d, pattern=OpPattern.INJECTIVE,
                 num_inputs=2, arguments=("data", "size"), attrs_type=Resize2DAttrs)


def _size(size) -> Expr:
    if isinstance(size, Expr):
        return size
    if isinstance(size, int | PrimExpr):
        size = (size, size)
    size = list(size)
    if len(size) == 1:
        size = size * 2
    if len(size) != 2:
        raise ValueError(f"resize2d: size must have 1 or 2 values, got {size}")
    return ShapeExpr([IntImm("int64", v) if isinstance(v, int) else v for v in size])


def resize2d(data: Expr, size: Expr | int | PrimExpr | Sequence[int | PrimExpr],
             roi: float | Sequence[float] | None = None, layout: str = "NCHW",
             method: str = "linear", coordinate_transformation_mode: str = "half_pixel",
             rounding_method: str = "round", cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype: str | None = None) -> Call:
    """Resize the H and W dims of ``data`` to ``size`` by ``method`` (nearest_neighbor,
    linear, cubic) under ONNX's ``coordinate_transformation_mode``."""
    if method not in METHODS:
        raise ValueError(f"resize2d: method must be one of {METHODS}, got {method!r}")
    if coordinate_transformation_mode not in MODES:
        raise ValueError(f"resize2d: coordinate_transformation_mode must be one of {MODES}, "
                         f"got {coordinate_transformation_mode!r}")
    if rounding_method not in ROUNDINGS:
        raise ValueError(f"resize2d: rounding_method must be one of {ROUNDINGS[:-1]}, got "
                         f"{rounding_method!r}")
    if roi is None:
        roi = (0.0, 0.0, 0.0, 0.0)
    elif isinstance(roi, int | float | FloatImm):
        roi = (float(roi),) * 4
    roi = tuple(float(v) for v in roi)
    if len(roi) != 4:
        raise ValueError(f"resize2d: roi must have 4 values, got {roi}")
    attrs = Resize2DAttrs(roi=roi, layout=layout, method=method,
                          coordinate_transformation_mode=coordinate_transformation_mode,
                          rounding_method=rounding_method, cubic_alpha=float(cubic_alpha),
                          cubic_exclude=int(cubic_exclude),
                          extrapolation_value=float(extrapolation_value),
                          out_dtype="void" if out_dtype is None else str(out_dtype))
    return Call(Op.get("relax.image.resize2d"), [data, _size(size)], attrs)
