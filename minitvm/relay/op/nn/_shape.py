"""Shape-changing nn ops: nn.pad, nn.batch_flatten, nn.upsampling (numpy references:
``minitvm.topi.reference.nn``)."""

from __future__ import annotations

from ....ir.op import OpPattern
from ....ir.type import TensorType
from ....tir.expr import Any
from ....topi.shape import hw_axes
from ..op import define_op
from ..type_relations import check_num_args, dims_product, is_static_dim, shape_str, tensor_arg
from . import attrs as A
from ._utils import arith

_PAD_MODES = ("constant", "edge", "reflect")


def pad_rel(arg_types, attrs, op_name: str = "nn.pad"):
    """``(data, pad_value)``: each dim grows by its (before, after) widths."""
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    value = tensor_arg(arg_types, 1, op_name)
    if len(value.shape) != 0:
        raise TypeError(f"{op_name}: pad_value must be a scalar, got {shape_str(value.shape)}")
    widths = attrs.pad_width
    if len(widths) != len(data.shape):
        raise TypeError(f"{op_name}: pad_width has {len(widths)} entries but the data has rank "
                        f"{len(data.shape)} {shape_str(data.shape)}")
    if attrs.pad_mode not in _PAD_MODES:
        raise ValueError(f"{op_name}: pad_mode must be one of {_PAD_MODES}, got "
                         f"{attrs.pad_mode!r}")
    shape = []
    for i, (d, w) in enumerate(zip(data.shape, widths)):
        if len(w) != 2:
            raise ValueError(f"{op_name}: pad_width[{i}] must be a (before, after) pair, got {w}")
        before, after = int(w[0]), int(w[1])
        if before < 0 or after < 0:
            raise ValueError(f"{op_name}: pad widths must be non-negative, got {list(w)} at "
                             f"axis {i}")
        shape.append(arith(lambda x, b=before, a=after: x + b + a, d) if before or after else d)
    return TensorType(shape, data.dtype)


def _batch_flatten_rel(arg_types, attrs):
    check_num_args("nn.batch_flatten", arg_types, 1)
    data = tensor_arg(arg_types, 0, "nn.batch_flatten")
    if len(data.shape) == 0:
        raise TypeError("nn.batch_flatten: the data must have at least one dimension")
    return TensorType((data.shape[0], dims_product(data.shape[1:])), data.dtype)


def _scaled(d, scale):
    if is_static_dim(d):
        return int(round(d * float(scale)))
    if float(scale).is_integer() and not isinstance(d, Any):
        return d * int(scale)
    return Any()


def upsampling_rel(arg_types, attrs, op_name: str = "nn.upsampling"):
    check_num_args(op_name, arg_types, 1)
    data = tensor_arg(arg_types, 0, op_name)
    h, w = hw_axes(attrs.layout, len(data.shape), op_name)
    if attrs.method not in ("nearest_neighbor", "bilinear", "bicubic"):
        raise ValueError(f"{op_name}: unknown method {attrs.method!r}")
    shape = list(data.shape)
    shape[h] = _scaled(shape[h], attrs.scale_h)
    shape[w] = _scaled(shape[w], attrs.scale_w)
    return TensorType(shape, data.dtype)


define_op("nn.pad", pad_rel, pattern=OpPattern.INJECTIVE, attrs_type=A.PadAttrs, num_inputs=2,
          describe="Pad a tensor with a constant, its edge values or a reflection.")
define_op("nn.batch_flatten", _batch_flatten_rel, pattern=OpPattern.INJECTIVE, num_inputs=1,
          describe="Flatten all dims but the first.")
define_op("nn.upsampling", upsampling_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=A.UpSamplingAttrs, num_inputs=1, describe="Upsample H and W by scale factors.")

__all__ = ["pad_rel", "upsampling_rel"]
