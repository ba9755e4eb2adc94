"""1-D and 3-D pooling beyond nn.max_pool1d/avg_pool1d: nn.max_pool3d, nn.avg_pool3d, adaptive
and global 1-D/3-D pools, and nn.upsampling3d, with TVM's attrs and constructors.

As in TVM, ``relay.nn.global_max_pool1d`` (and the 3-D ones) build the adaptive op with
``output_size=[1]``; the ``nn.global_*`` ops are registered too, for programs naming them.
Numpy references: ``minitvm.topi.reference.pool_nd``.
"""

from __future__ import annotations

import numpy as np

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ....tir.expr import Any, IntImm
from ....topi.shape import spatial_axes
from ...expr import Call, Constant, Expr
from ..op import define_op
from ..type_relations import check_num_args, is_static_dim, tensor_arg
from ._pool import pool_rel
from ._utils import arith
from .attrs import REQUIRED

__all__ = ["max_pool3d", "avg_pool3d", "adaptive_max_pool1d", "adaptive_avg_pool1d",
           "adaptive_max_pool3d", "adaptive_avg_pool3d", "global_max_pool1d",
           "global_avg_pool1d", "global_max_pool3d", "global_avg_pool3d", "upsampling3d"]


def _pool_fields(avg: bool):
    fields = (("pool_size", REQUIRED), ("strides", (1, 1, 1)), ("dilation", (1, 1, 1)),
              ("padding", (0, 0, 0)), ("layout", "NCDHW"), ("out_layout", ""),
              ("ceil_mode", False))
    return fields + (("count_include_pad", False),) if avg else fields


class MaxPool3DAttrs(Attrs):
    __slots__ = ()
    _fields = _pool_fields(False)


class AvgPool3DAttrs(Attrs):
    __slots__ = ()
    _fields = _pool_fields(True)


class AdaptivePool1DAttrs(Attrs):
    __slots__ = ()
    _fields = (("output_size", ()), ("layout", "NCW"), ("out_layout", ""))


class AdaptivePool3DAttrs(Attrs):
    __slots__ = ()
    _fields = (("output_size", ()), ("layout", "NCDHW"), ("out_layout", ""))


class UpSampling3DAttrs(Attrs):
    __slots__ = ()
    _fields = (("scale_d", REQUIRED), ("scale_h", REQUIRED), ("scale_w", REQUIRED),
               ("layout", "NCDHW"), ("method", "nearest_neighbor"),
               ("coordinate_transformation_mode", "half_pixel"))


_SPATIAL = {1: "W", 3: "DHW"}
_UPSAMPLING_METHODS = ("nearest_neighbor", "trilinear")
_MODES = ("half_pixel", "align_corners", "asymmetric")


def adaptive_nd_rel(arg_types, attrs, op_name: str, nd: int, is_global: bool) -> TensorType:
    """Output type of adaptive (or global: size 1) pooling over the layout's spatial axes."""
    check_num_args(op_name, arg_types, 1)
    data = tensor_arg(arg_types, 0, op_name)
    idx = spatial_axes(attrs.layout, len(data.shape), _SPATIAL[nd], op_name)
    shape = list(data.shape)
    size = (1,) * nd if is_global else tuple(attrs.output_size or ())
    if len(size) == 1:
        size = size * nd
    if size and len(size) != nd:
        raise ValueError(f"{op_name}: output_size must have 1 or {nd} values, got {list(size)}")
    for i, s in zip(idx, size):
        if s is not None:
            if is_static_dim(s) and int(s) < 1:
                raise ValueError(f"{op_name}: output_size must be positive, got {list(size)}")
            shape[i] = int(s)
    return TensorType(shape, data.dtype)


def _upsampling3d_rel(arg_types, attrs):
    op_name = "nn.upsampling3d"
    check_num_args(op_name, arg_types, 1)
    data = tensor_arg(arg_types, 0, op_name)
    if attrs.method not in _UPSAMPLING_METHODS:
        raise ValueError(f"{op_name}: method must be one of {', '.join(_UPSAMPLING_METHODS)}, "
                         f"got {attrs.method!r}")
    if attrs.coordinate_transformation_mode not in _MODES:
        raise ValueError(f"{op_name}: coordinate_transformation_mode must be one of "
                         f"{', '.join(_MODES)}, got {attrs.coordinate_transformation_mode!r}")
    idx = spatial_axes(attrs.layout, len(data.shape), "DHW", op_name)
    shape = list(data.shape)
    for i, scale in zip(idx, (attrs.scale_d, attrs.scale_h, attrs.scale_w)):
        if float(scale) <= 0:
            raise ValueError(f"{op_name}: scales must be positive, got {float(scale)}")
        d, sc = shape[i], float(scale)
        if isinstance(d, Any) or is_static_dim(d):
            shape[i] = arith(lambda s, sc=sc: int(np.round(s * sc)), d)
        elif sc.is_integer():  # (a symbolic size times a whole scale)
            shape[i] = d * IntImm(d.dtype, int(sc))
        else:  # (a fractional scale rounds half to even: left to each shape)
            shape[i] = Any()
    return TensorType(shape, data.dtype)


def _def_pool(name, attrs_type):
    def rel(arg_types, attrs):
        return pool_rel(arg_types, attrs, name, "DHW")

    rel.__name__ = f"pool_rel[{name}]"
    define_op(name, rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE, attrs_type=attrs_type,
              num_inputs=1, describe=f"{name[3:6]} pooling over DHW.")


def _def_adaptive(name, attrs_type, nd, is_global):
    def rel(arg_types, attrs):
        return adaptive_nd_rel(arg_types, attrs, name, nd, is_global)

    rel.__name__ = f"adaptive_rel[{name}]"
    define_op(name, rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE, attrs_type=attrs_type,
              num_inputs=1, describe="Adaptive pooling to a fixed output size."
              if not is_global else "Pooling of every spatial axis to size 1.")


_def_pool("nn.max_pool3d", MaxPool3DAttrs)
_def_pool("nn.avg_pool3d", AvgPool3DAttrs)
for _nd, _attrs in ((1, AdaptivePool1DAttrs), (3, AdaptivePool3DAttrs)):
    for _kind in ("max", "avg"):
        _def_adaptive(f"nn.adaptive_{_kind}_pool{_nd}d", _attrs, _nd, False)
        _def_adaptive(f"nn.global_{_kind}_pool{_nd}d", _attrs, _nd, True)
define_op("nn.upsampling3d", _upsampling3d_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=UpSampling3DAttrs, num_inputs=1,
          describe="Upsample the D, H and W axes (nearest or trilinear).")


# --------------------------------------------------------------------------- constructors
def _tup(value, n: int) -> tuple:
    if isinstance(value, int | np.integer):
        return (int(value),) * n
    return tuple(value)


def _output_size(output_size) -> tuple:
    if output_size is None:
        return ()
    if isinstance(output_size, int | np.integer):
        return (int(output_size),)
    return tuple(output_size)


def max_pool3d(data: Expr, pool_size=(1, 1, 1), strides=(1, 1, 1), dilation=(1, 1, 1),
               padding=(0, 0, 0), layout: str = "NCDHW", out_layout: str = "",
               ceil_mode: bool = False) -> Call:
    attrs = MaxPool3DAttrs(pool_size=_tup(pool_size, 3), strides=_tup(strides, 3),
                           dilation=_tup(dilation, 3), padding=_tup(padding, 3), layout=layout,
                           out_layout=out_layout, ceil_mode=ceil_mode)
    return Call(Op.get("nn.max_pool3d"), [data], attrs)


def avg_pool3d(data: Expr, pool_size=(1, 1, 1), strides=(1, 1, 1), dilation=(1, 1, 1),
               padding=(0, 0, 0), layout: str = "NCDHW", out_layout: str = "",
               ceil_mode: bool = False, count_include_pad: bool = False) -> Call:
    attrs = AvgPool3DAttrs(pool_size=_tup(pool_size, 3), strides=_tup(strides, 3),
                           dilation=_tup(dilation, 3), padding=_tup(padding, 3), layout=layout,
                           out_layout=out_layout, ceil_mode=ceil_mode,
                           count_include_pad=count_include_pad)
    return Call(Op.get("nn.avg_pool3d"), [data], attrs)


def _adaptive(kind, nd, data, output_size, layout, out_layout) -> Call:
    attrs_type = AdaptivePool1DAttrs if nd == 1 else AdaptivePool3DAttrs
    attrs = attrs_type(output_size=_output_size(output_size), layout=layout,
                       out_layout=out_layout)
    return Call(Op.get(f"nn.adaptive_{kind}_pool{nd}d"), [data], attrs)


def adaptive_max_pool1d(data: Expr, output_size=None, layout: str = "NCW",
                        out_layout: str = "") -> Call:
    return _adaptive("max", 1, data, output_size, layout, out_layout)


def adaptive_avg_pool1d(data: Expr, output_size=None, layout: str = "NCW",
                        out_layout: str = "") -> Call:
    return _adaptive("avg", 1, data, output_size, layout, out_layout)


def adaptive_max_pool3d(data: Expr, output_size=None, layout: str = "NCDHW",
                        out_layout: str = "") -> Call:
    return _adaptive("max", 3, data, output_size, layout, out_layout)


def adaptive_avg_pool3d(data: Expr, output_size=None, layout: str = "NCDHW",
                        out_layout: str = "") -> Call:
    return _adaptive("avg", 3, data, output_size, layout, out_layout)


def global_max_pool1d(data: Expr, layout: str = "NCW", out_layout: str = "") -> Call:
    return _adaptive("max", 1, data, (1,), layout, out_layout)


def global_avg_pool1d(data: Expr, layout: str = "NCW", out_layout: str = "") -> Call:
    return _adaptive("avg", 1, data, (1,), layout, out_layout)


def global_max_pool3d(data: Expr, layout: str = "NCDHW", out_layout: str = "") -> Call:
    return _adaptive("max", 3, data, (1, 1, 1), layout, out_layout)


def global_avg_pool3d(data: Expr, layout: str = "NCDHW", out_layout: str = "") -> Call:
    return _adaptive("avg", 3, data, (1, 1, 1), layout, out_layout)


def upsampling3d(data: Expr, scale_d=1, scale_h=1, scale_w=1, layout: str = "NCDHW",
                 method: str = "nearest_neighbor",
                 coordinate_transformation_mode: str = "half_pixel") -> Call:
    """Upsample D, H and W; a non-constant scale expression builds ``dyn.nn.upsampling3d``."""
    scales = [s.data.numpy().item() if isinstance(s, Constant) else s
              for s in (scale_d, scale_h, scale_w)]
    if any(isinstance(s, Expr) for s in scales):
        from ..dyn import _more as _dyn

        return _dyn.upsampling3d(data, *scales, layout=layout, method=method,
                                 coordinate_transformation_mode=coordinate_transformation_mode)
    scale_d, scale_h, scale_w = scales
    attrs = UpSampling3DAttrs(scale_d=float(scale_d), scale_h=float(scale_h),
                              scale_w=float(scale_w), layout=layout, method=method,
                              coordinate_transformation_mode=coordinate_transformation_mode)
    return Call(Op.get("nn.upsampling3d"), [data], attrs)
