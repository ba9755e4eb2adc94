"""dyn.reshape, dyn.broadcast_to, dyn.tile, dyn.strided_slice, dyn.expand_dims, dyn.one_hot:
the shape-changing ops with their shape parameters given as run-time tensors."""

from __future__ import annotations

import numpy as np

from ....ir.attrs import Attrs
from ....ir.op import OpPattern
from ....ir.type import TensorType
from ....tir.expr import Any
from ....topi.reference import get_reference
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


def _ints(a) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _static(name):
    ref = get_reference(name)
    if ref is None:
        raise ValueError(f"dyn ops: the shared library has no numpy reference for {name}")
    return ref


# ------------------------------------------------------------------ reshape / broadcast / tile
def _reshape_rel(arg_types, attrs):
    check_num_args("dyn.reshape", arg_types, 2)
    data = tensor_arg(arg_types, 0, "dyn.reshape")
    return any_shape(shape_arg_len(arg_types, 1, "dyn.reshape", "the new shape"), data.dtype)


def _reshape_ref(attrs, args, out_type):
    data, shape = args
    static = ReshapeAttrs(newshape=tuple(_ints(shape)), allowzero=bool(attrs.allowzero))
    return _static("reshape")(static, [data], out_type)


def _broadcast_rel(arg_types, attrs):
    check_num_args("dyn.broadcast_to", arg_types, 2)
    data = tensor_arg(arg_types, 0, "dyn.broadcast_to")
    return any_shape(shape_arg_len(arg_types, 1, "dyn.broadcast_to", "the shape"), data.dtype)


def _broadcast_ref(attrs, args, out_type):
    return np.broadcast_to(np.asarray(args[0]), tuple(_ints(args[1]))).copy()


def _tile_rel(arg_types, attrs):
    check_num_args("dyn.tile", arg_types, 2)
    data = tensor_arg(arg_types, 0, "dyn.tile")
    reps = shape_arg_len(arg_types, 1, "dyn.tile", "the repetitions")
    return any_shape(max(len(data.shape), reps), data.dtype)


def _tile_ref(attrs, args, out_type):
    return np.tile(np.asarray(args[0]), tuple(_ints(args[1])))


# ------------------------------------------------------------------ strided_slice
def _strided_slice_rel(arg_types, attrs):
    if len(arg_types) not in (3, 4):
        raise TypeError(f"dyn.strided_slice takes 3 or 4 arguments, got {len(arg_types)}")
    data = tensor_arg(arg_types, 0, "dyn.strided_slice")
    for i, what in ((1, "begin"), (2, "end"), (3, "strides")[:2] if len(arg_types) > 3 else ()):
        shape_arg_len(arg_types, i, "dyn.strided_slice", what)
    return any_shape(len(data.shape), data.dtype)


def _strided_slice_ref(attrs, args, out_type):
    strides = _ints(args[3]) if len(args) > 3 else None
    static = StridedSliceAttrs(begin=tuple(_ints(args[1])), end=tuple(_ints(args[2])),
                               strides=tuple(strides) if strides else None,
                               slice_mode=attrs.slice_mode, axes=None)
    return _static("strided_slice")(static, [args[0]], out_type)


# ------------------------------------------------------------------ expand_dims / one_hot
def _expand_dims_rel(arg_types, attrs):
    check_num_args("dyn.expand_dims", arg_types, 2)
    data = tensor_arg(arg_types, 0, "dyn.expand_dims")
    axis = tensor_arg(arg_types, 1, "dyn.expand_dims")
    if axis.shape:
        raise TypeError(f"dyn.expand_dims: the axis must be a scalar, got shape {axis.shape}")
    return any_shape(len(data.shape) + int(attrs.num_newaxis), data.dtype)


def _expand_dims_ref(attrs, args, out_type):
    data = np.asarray(args[0])
    axis = int(np.asarray(args[1]))
    axis = axis + data.ndim + 1 if axis < 0 else axis
    shape = list(data.shape)
    shape[axis:axis] = [1] * int(attrs.num_newaxis)
    return data.reshape(shape)


def _one_hot_rel(arg_types, attrs):
    check_num_args("dyn.one_hot", arg_types, 4)
    idx = tensor_arg(arg_types, 0, "dyn.one_hot")
    on = tensor_arg(arg_types, 1, "dyn.one_hot")
    shape = list(idx.shape)
    axis = int(attrs.axis)
    axis = len(shape) if axis == -1 else axis
    shape.insert(axis, Any())
    return TensorType(shape, attrs.dtype or on.dtype)


def _one_hot_ref(attrs, args, out_type):
    idx, on, off, depth = (np.asarray(a) for a in args)
    static = OneHotAttrs(depth=int(depth), axis=attrs.axis, dtype=out_type.dtype)
    return _static("one_hot")(static, [idx, on, off], out_type)


define_op("dyn.reshape", _reshape_rel, _reshape_ref, pattern=OpPattern.INJECTIVE,
          attrs_type=ReshapeAttrs, num_inputs=2, describe="Reshape to a run-time shape.")
define_op("dyn.broadcast_to", _broadcast_rel, _broadcast_ref, pattern=OpPattern.BROADCAST,
          num_inputs=2, describe="Broadcast to a run-time shape.")
define_op("dyn.tile", _tile_rel, _tile_ref, pattern=OpPattern.INJECTIVE, num_inputs=2,
          describe="Tile by run-time repetitions.")
define_op("dyn.strided_slice", _strided_slice_rel, _strided_slice_ref,
          pattern=OpPattern.INJECTIVE, attrs_type=StridedSliceAttrs, num_inputs=4,
          describe="Strided slice with run-time begin, end and strides.")
define_op("dyn.expand_dims", _expand_dims_rel, _expand_dims_ref, pattern=OpPattern.INJECTIVE,
          attrs_type=DynExpandDimsAttrs, num_inputs=2, describe="Insert axes at a run-time axis.")
define_op("dyn.one_hot", _one_hot_rel, _one_hot_ref, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
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
