"""dyn.reshape, dyn.broadcast_to, dyn.tile, dyn.strided_slice, dyn.expand_dims, dyn.one_hot:
the shape-changing ops with their shape parameters given as run-time tensors.

Numpy references: ``minitvm.topi.reference.dyn``.
"""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import OpPattern
from ....ir.type import TensorType
from ....tir.expr import Any
from ...expr import Call
from ..op import Op, define_op
from ..transform import ReshapeAttrs, StridedSliceAttrs
from ..transform_index import OneHotAttrs
from ..type_relations import check_num_args, tensor_arg
from ._shape_arg import any_shape, shape_arg_len

__all__ = ["reshape", "broadcast_to", "tile", "strided_slice", "expand_dims", "one_hot"]


class DynExpandDimsAttrs(Attrs):
    __slots__ = ()
    _fields = (("num_newaxis", 1),)


# ------------------------------------------------------------------ reshape / broadcast / tile
def _reshape_rel(arg_types, attrs):
    check_num_args("dyn.reshape", arg_types, 2)
    data = tensor_arg(arg_types, 0, "dyn.reshape")
    return any_shape(shape_arg_len(arg_types, 1, "dyn.reshape", "the new shape"), data.dtype)


def _broadcast_rel(arg_types, attrs):
    check_num_args("dyn.broadcast_to", arg_types, 2)
    data = tensor_arg(arg_types, 0, "dyn.broadcast_to")
    return any_shape(shape_arg_len(arg_types, 1, "dyn.broadcast_to", "the shape"), data.dtype)


def _tile_rel(arg_types, attrs):
    check_num_args("dyn.tile", arg_types, 2)
    data = tensor_arg(arg_types, 0, "dyn.tile")
    reps = shape_arg_len(arg_types, 1, "dyn.tile", "the repetitions")
    return any_shape(max(len(data.shape), reps), data.dtype)


# ------------------------------------------------------------------ strided_slice
def _strided_slice_rel(arg_types, attrs):
    if len(arg_types) not in (3, 4):
        raise TypeError(f"dyn.strided_slice takes 3 or 4 arguments, got {len(arg_types)}")
    data = tensor_arg(arg_types, 0, "dyn.strided_slice")
    for i, what in enumerate(("begin", "end", "strides")[:len(arg_types) - 1], start=1):
        shape_arg_len(arg_types, i, "dyn.strided_slice", what)
    return any_shape(len(data.shape), data.dtype)


# ------------------------------------------------------------------ expand_dims / one_hot
def _expand_dims_rel(arg_types, attrs):
    check_num_args("dyn.expand_dims", arg_types, 2)
    data = tensor_arg(arg_types, 0, "dyn.expand_dims")
    axis = tensor_arg(arg_types, 1, "dyn.expand_dims")
    if axis.shape:
        raise TypeError(f"dyn.expand_dims: the axis must be a scalar, got shape {axis.shape}")
    return any_shape(len(data.shape) + int(attrs.num_newaxis), data.dtype)


def _one_hot_rel(arg_types, attrs):
    check_num_args("dyn.one_hot", arg_types, 4)
    idx = tensor_arg(arg_types, 0, "dyn.one_hot")
    on = tensor_arg(arg_types, 1, "dyn.one_hot")
    shape = list(idx.shape)
    axis = int(attrs.axis)
    axis = len(shape) if axis == -1 else axis
    shape.insert(axis, Any())
    return TensorType(shape, attrs.dtype or on.dtype)


define_op("dyn.reshape", _reshape_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=ReshapeAttrs, num_inputs=2, describe="Reshape to a run-time shape.")
define_op("dyn.broadcast_to", _broadcast_rel, pattern=OpPattern.BROADCAST,
          num_inputs=2, describe="Broadcast to a run-time shape.")
define_op("dyn.tile", _tile_rel, pattern=OpPattern.INJECTIVE, num_inputs=2,
          describe="Tile by run-time repetitions.")
define_op("dyn.strided_slice", _strided_slice_rel,
          pattern=OpPattern.INJECTIVE, attrs_type=StridedSliceAttrs, num_inputs=4,
          describe="Strided slice with run-time begin, end and strides.")
define_op("dyn.expand_dims", _expand_dims_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=DynExpandDimsAttrs, num_inputs=2, describe="Insert axes at a run-time axis.")
define_op("dyn.one_hot", _one_hot_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
          attrs_type=OneHotAttrs, num_inputs=4, describe="One-hot with a run-time depth.")


def reshape(data, newshape, allowzero: bool = False) -> Call:
    """Reshape ``data`` to the shape held by the 1-D tensor ``newshape``."""
    return Call(Op.get("dyn.reshape"), [data, newshape], ReshapeAttrs(newshape=None,
                                                                     allowzero=allowzero))


def broadcast_to(data, shape) -> Call:
    return Call(Op.get("dyn.broadcast_to"), [data, shape])


def tile(data, reps) -> Call:
    return Call(Op.get("dyn.tile"), [data, reps])


def strided_slice(data, begin, end, strides, slice_mode: str = "end") -> Call:
    return Call(Op.get("dyn.strided_slice"), [data, begin, end, strides],
                StridedSliceAttrs(slice_mode=slice_mode))


def expand_dims(data, axis, num_newaxis: int = 1) -> Call:
    return Call(Op.get("dyn.expand_dims"), [data, axis],
                DynExpandDimsAttrs(num_newaxis=num_newaxis))


def one_hot(indices, on_value, off_value, depth, axis: int = -1, dtype: str = "") -> Call:
    return Call(Op.get("dyn.one_hot"), [indices, on_value, off_value, depth],
                OneHotAttrs(depth=None, axis=axis, dtype=dtype or None))
