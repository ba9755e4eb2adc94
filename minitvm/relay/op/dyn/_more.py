"""dyn.topk, dyn.squeeze, dyn.sparse_to_dense, dyn.nn.upsampling, dyn.nn.upsampling3d and
dyn.image.resize2d: the static ops with their size parameters given as run-time tensors (the
static attrs types; the matching fields are left unset). Numpy references:
``minitvm.topi.reference.dyn_more``."""

from __future__ import annotations

from ....ir.op import OpPattern
from ....ir.type import TensorType, TupleType
from ....tir.expr import Any
from ....topi.shape import spatial_axes
from ...expr import Call, Expr, TupleWrapper, const
from ..algorithm import TopKAttrs
from ..image import Resize2DAttrs
from ..indexing import SparseToDenseAttrs
from ..nn._pool_nd import UpSampling3DAttrs
from ..nn.attrs import UpSamplingAttrs
from ..op import Op, define_op
from ..transform import SqueezeAttrs
from ..type_relations import check_num_args, normalize_axis, tensor_arg, type_str
from ._shape_arg import any_shape, shape_arg_len

__all__ = ["topk", "squeeze", "sparse_to_dense", "upsampling", "upsampling3d", "resize2d"]


def _scalar_arg(arg_types, i, op_name, what):
    t = tensor_arg(arg_types, i, op_name)
    if len(t.shape) > 1 or (len(t.shape) == 1 and t.shape[0] != 1):
        raise TypeError(f"{op_name}: {what} must be a scalar tensor, got {type_str(t)}")
    return t


def _topk_rel(arg_types, attrs):
    op_name = "dyn.topk"
    check_num_args(op_name, arg_types, 2)
    x = tensor_arg(arg_types, 0, op_name)
    k = _scalar_arg(arg_types, 1, op_name, "k")
    if not k.dtype.startswith(("int", "uint")):
        raise TypeError(f"{op_name}: k must be an integer, got {type_str(k)}")
    axis = normalize_axis(int(attrs.axis), len(x.shape), op_name)
    shape = list(x.shape)
    shape[axis] = Any()
    values, indices = TensorType(shape, x.dtype), TensorType(shape, attrs.dtype)
    if attrs.ret_type not in ("both", "values", "indices"):
        raise TypeError(f"{op_name}: ret_type must be both, values or indices, got "
                        f"{attrs.ret_type!r}")
    return {"both": TupleType([values, indices]), "values": values,
            "indices": indices}[attrs.ret_type]


def _squeeze_rel(arg_types, attrs):
    op_name = "dyn.squeeze"
    check_num_args(op_name, arg_types, 2)
    x = tensor_arg(arg_types, 0, op_name)
    n = shape_arg_len(arg_types, 1, op_name, "axis")
    if n > len(x.shape):
        raise TypeError(f"{op_name}: {n} axes to squeeze from {type_str(x)}")
    return any_shape(len(x.shape) - n, x.dtype)


def _sparse_to_dense_rel(arg_types, attrs):
    op_name = "dyn.sparse_to_dense"
    check_num_args(op_name, arg_types, 4)
    idx = tensor_arg(arg_types, 0, op_name)
    values = tensor_arg(arg_types, 1, op_name)
    default = tensor_arg(arg_types, 2, op_name)
    if len(idx.shape) > 2 or len(values.shape) > 1 or default.shape:
        raise TypeError(f"{op_name}: indices must have rank <= 2, values rank <= 1 and the "
                        f"default a scalar, got {type_str(idx)}, {type_str(values)} and "
                        f"{type_str(default)}")
    return any_shape(shape_arg_len(arg_types, 3, op_name, "output_shape"), values.dtype)


def _dyn_spatial_rel(op_name, spatial, n_scales):
    def rel(arg_types, attrs):
        check_num_args(op_name, arg_types, 1 + n_scales)
        x = tensor_arg(arg_types, 0, op_name)
        for i in range(n_scales):
            _scalar_arg(arg_types, 1 + i, op_name, "scale")
        shape = list(x.shape)
        for a in spatial_axes(attrs.layout, len(shape), spatial, op_name):
            shape[a] = Any()
        return TensorType(shape, x.dtype)

    rel.__name__ = f"dyn_rel[{op_name}]"
    return rel


def _resize2d_rel(arg_types, attrs):
    op_name = "dyn.image.resize2d"
    check_num_args(op_name, arg_types, 3)
    x = tensor_arg(arg_types, 0, op_name)
    # TVM accepts a float size tensor (its DynamicToStatic test passes one)
    if shape_arg_len(arg_types, 1, op_name, "size", integer=False) != 2:
        raise TypeError(f"{op_name}: size must hold 2 values, got {type_str(arg_types[1])}")
    roi = tensor_arg(arg_types, 2, op_name)
    if tuple(roi.shape) != (4,):
        raise TypeError(f"{op_name}: roi must hold 4 values, got {type_str(roi)}")
    shape = list(x.shape)
    for a in spatial_axes(attrs.layout, len(shape), "HW", op_name):
        shape[a] = Any()
    return TensorType(shape, attrs.out_dtype or x.dtype)


define_op("dyn.topk", _topk_rel, pattern=OpPattern.OPAQUE, attrs_type=TopKAttrs,
          num_inputs=2, describe="topk with a run-time k.")
define_op("dyn.squeeze", _squeeze_rel, pattern=OpPattern.INJECTIVE, attrs_type=SqueezeAttrs,
          num_inputs=2, describe="Squeeze run-time axes.")
define_op("dyn.sparse_to_dense", _sparse_to_dense_rel, pattern=OpPattern.OPAQUE,
          attrs_type=SparseToDenseAttrs, num_inputs=4,
          describe="sparse_to_dense with a run-time output shape.")
define_op("dyn.nn.upsampling", _dyn_spatial_rel("dyn.nn.upsampling", "HW", 2),
          pattern=OpPattern.INJECTIVE, attrs_type=UpSamplingAttrs, num_inputs=3,
          describe="Upsampling by run-time scales.")
define_op("dyn.nn.upsampling3d", _dyn_spatial_rel("dyn.nn.upsampling3d", "DHW", 3),
          pattern=OpPattern.INJECTIVE, attrs_type=UpSampling3DAttrs, num_inputs=4,
          describe="3-D upsampling by run-time scales.")
define_op("dyn.image.resize2d", _resize2d_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=Resize2DAttrs, num_inputs=3, describe="resize2d to a run-time size.")


def _tensor(v, dtype):
    return v if isinstance(v, Expr) else const(v, dtype)


def topk(data: Expr, k: Expr, axis: int = -1, ret_type: str = "both", is_ascend: bool = False,
         dtype: str = "int32"):
    call = Call(Op.get("dyn.topk"), [data, _tensor(k, "int32")],
                TopKAttrs(k=None, axis=int(axis), ret_type=ret_type, is_ascend=bool(is_ascend),
                          dtype=dtype))
    return TupleWrapper(call, 2) if ret_type == "both" else call


def squeeze(data: Expr, axis: Expr) -> Call:
    return Call(Op.get("dyn.squeeze"), [data, _tensor(axis, "int32")], SqueezeAttrs(axis=None))


def sparse_to_dense(sparse_indices: Expr, output_shape: Expr, sparse_values: Expr,
                    default_value=0) -> Call:
    return Call(Op.get("dyn.sparse_to_dense"),
                [sparse_indices, sparse_values, _tensor(default_value, "float32")
                 if not isinstance(default_value, Expr) else default_value, output_shape],
                SparseToDenseAttrs())


def upsampling(data: Expr, scale_h: Expr, scale_w: Expr, layout: str = "NCHW",
               method: str = "nearest_neighbor", align_corners: bool = False) -> Call:
    attrs = UpSamplingAttrs(scale_h=None, scale_w=None, layout=layout, method=method,
                            align_corners=bool(align_corners))
    return Call(Op.get("dyn.nn.upsampling"), [data, _tensor(scale_h, "float64"),
                                              _tensor(scale_w, "float64")], attrs)


def upsampling3d(data: Expr, scale_d: Expr, scale_h: Expr, scale_w: Expr,
                 layout: str = "NCDHW", method: str = "nearest_neighbor",
                 coordinate_transformation_mode: str = "half_pixel") -> Call:
    attrs = UpSampling3DAttrs(scale_d=None, scale_h=None, scale_w=None, layout=layout,
                              method=method,
                              coordinate_transformation_mode=coordinate_transformation_mode)
    return Call(Op.get("dyn.nn.upsampling3d"),
                [data] + [_tensor(s, "float64") for s in (scale_d, scale_h, scale_w)], attrs)


def resize2d(data: Expr, size: Expr, roi=None, layout: str = "NCHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "",
             cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype=None) -> Call:
    roi = roi if isinstance(roi, Expr) else const([float(r) for r in (roi or (0.0,) * 4)],
                                                  "float32")
    attrs = Resize2DAttrs(size=None, roi=None, layout=layout, method=method,
                          coordinate_transformation_mode=coordinate_transformation_mode,
                          rounding_method=rounding_method, cubic_alpha=float(cubic_alpha),
                          cubic_exclude=int(cubic_exclude),
                          extrapolation_value=float(extrapolation_value), out_dtype=out_dtype)
    return Call(Op.get("dyn.image.resize2d"), [data, size, roi], attrs)
