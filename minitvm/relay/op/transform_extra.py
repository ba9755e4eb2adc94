"""meshgrid, argwhere, unique, adv_index, sliding_window and strided_set with TVM's attrs, type
relations and constructors. Numpy references: ``minitvm.topi.reference.transform_extra``."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType, TupleType
from ...tir.expr import Any, FloorDiv, IntImm
from ...topi.shape_conditions import at_most
from ..expr import Call, Expr, Tuple, TupleWrapper, const
from .op import define_op, register_numpy_only
from .type_relations import (
    broadcast_shapes,
    check_num_args,
    is_static_dim,
    normalize_axis,
    tensor_arg,
    type_str,
)

__all__ = ["MeshgridAttrs", "UniqueAttrs", "SlidingWindowAttrs", "meshgrid", "argwhere",
           "unique", "adv_index", "sliding_window", "strided_set"]


class MeshgridAttrs(Attrs):
    __slots__ = ()
    _fields = (("indexing", "ij"),)


class UniqueAttrs(Attrs):
    __slots__ = ()
    # equal_nan (a minitvm addition, numpy's name): False keeps each NaN its own value (torch)
    # consecutive (a minitvm addition): the runs of equal elements (torch.unique_consecutive)
    _fields = (("sorted", True), ("return_counts", False), ("equal_nan", True),
               ("consecutive", False))


class SlidingWindowAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", 0), ("window_shape", ()), ("strides", ()))


def _tuple_arg(arg_types, op_name):
    check_num_args(op_name, arg_types, 1)
    tup = arg_types[0]
    if not isinstance(tup, TupleType) or not tup.fields:
        raise TypeError(f"{op_name}: expects a non-empty tuple of tensors, got {type_str(tup)}")
    return [tensor_arg(tup.fields, i, op_name) for i in range(len(tup.fields))]


def _meshgrid_rel(arg_types, attrs):
    fields = _tuple_arg(arg_types, "meshgrid")
    if attrs.indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {attrs.indexing!r}")
    lengths = []
    for f in fields:
        if len(f.shape) > 1:
            raise TypeError(f"meshgrid: inputs must be scalars or 1-D, got {type_str(f)}")
        lengths.append(f.shape[0] if f.shape else 1)
    if attrs.indexing == "xy" and len(lengths) >= 2:
        lengths[0], lengths[1] = lengths[1], lengths[0]
    return TupleType([TensorType(tuple(lengths), f.dtype) for f in fields])


def _argwhere_rel(arg_types, attrs):
    check_num_args("argwhere", arg_types, 1)
    x = tensor_arg(arg_types, 0, "argwhere")
    if not x.shape:
        raise TypeError(f"argwhere: expects a tensor of rank >= 1, got {type_str(x)}")
    return TensorType((Any(), len(x.shape)), "int32")


def _unique_rel(arg_types, attrs):
    check_num_args("unique", arg_types, 1)
    x = tensor_arg(arg_types, 0, "unique")
    if len(x.shape) != 1:
        raise TypeError(f"unique: expects a 1-D tensor, got {type_str(x)}")
    n = x.shape[0]
    fields = [TensorType((n,), x.dtype), TensorType((n,), "int32"), TensorType((n,), "int32"),
              TensorType((1,), "int32")]
    if attrs.return_counts:
        fields.append(TensorType((n,), "int32"))
    return TupleType(fields)


def _adv_index_rel(arg_types, attrs):
    fields = _tuple_arg(arg_types, "adv_index")
    data, indices = fields[0], fields[1:]
    if len(indices) > len(data.shape):
        raise TypeError(f"adv_index: {len(indices)} index tensors for data of rank "
                        f"{len(data.shape)} ({type_str(data)})")
    shape: tuple = ()
    for i, t in enumerate(indices):
        if not t.dtype.startswith(("int", "uint")):
            raise TypeError(f"adv_index: index {i} must be an integer tensor, got {type_str(t)}")
        shape = broadcast_shapes(shape, tuple(t.shape), "adv_index")
    return TensorType(tuple(shape) + tuple(data.shape[len(indices):]), data.dtype)


def _sliding_window_rel(arg_types, attrs):
    check_num_args("sliding_window", arg_types, 1)
    x = tensor_arg(arg_types, 0, "sliding_window")
    axis = normalize_axis(int(attrs.axis), len(x.shape), "sliding_window")
    win = [int(w) for w in attrs.window_shape]
    strides = [int(s) for s in attrs.strides]
    rest = len(x.shape) - axis
    if len(win) != rest or len(strides) != rest:
        raise ValueError(f"sliding_window: window_shape and strides must have ndim - axis = "
                         f"{rest} values, got {win} and {strides}")
    if any(s < 1 for s in strides) or any(w < 1 for w in win):
        raise ValueError(f"sliding_window: window_shape and strides must be positive, got {win} "
                         f"and {strides}")
    counts = []
    for d, w, s in zip(x.shape[axis:], win, strides):
        if is_static_dim(d):
            if w > d:
                raise TypeError(f"sliding_window: window {win} does not fit the data "
                                f"{type_str(x)} from axis {axis}")
            counts.append((d - w) // s + 1)
        elif isinstance(d, Any):
            counts.append(Any())
        else:  # (a symbolic size: the window count as its expression; the window must fit)
            at_most(w, d)
            counts.append(FloorDiv(d - IntImm(d.dtype, w), IntImm(d.dtype, s)) +
                          IntImm(d.dtype, 1))
    return TensorType(tuple(x.shape[:axis]) + tuple(counts) + tuple(win), x.dtype)


def _strided_set_rel(arg_types, attrs):
    check_num_args("strided_set", arg_types, 5)
    data = tensor_arg(arg_types, 0, "strided_set")
    v = tensor_arg(arg_types, 1, "strided_set")
    if v.dtype != data.dtype:
        raise TypeError(f"strided_set: value dtype {v.dtype} differs from data dtype "
                        f"{data.dtype}")
    for i, what in ((2, "begin"), (3, "end"), (4, "strides")):
        t = tensor_arg(arg_types, i, "strided_set")
        if len(t.shape) != 1 or not t.dtype.startswith(("int", "uint")):
            raise TypeError(f"strided_set: {what} must be a 1-D integer tensor, got "
                            f"{type_str(t)}")
    return TensorType(data.shape, data.dtype)


define_op("meshgrid", _meshgrid_rel, pattern=OpPattern.INJECTIVE, attrs_type=MeshgridAttrs,
          num_inputs=1, describe="Coordinate grids of 1-D inputs.")
define_op("argwhere", _argwhere_rel, pattern=OpPattern.OPAQUE, num_inputs=1,
          describe="Indices of the non-zero elements (a dynamic number of rows).")
define_op("unique", _unique_rel, pattern=OpPattern.OPAQUE, attrs_type=UniqueAttrs,
          num_inputs=1, describe="Unique elements of a 1-D tensor, padded to its length.")
define_op("adv_index", _adv_index_rel, pattern=OpPattern.INJECTIVE, num_inputs=1,
          describe="numpy-style advanced indexing by integer tensors.")
define_op("sliding_window", _sliding_window_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=SlidingWindowAttrs, num_inputs=1,
          describe="Windows slid over the trailing axes from ``axis``.")
define_op("strided_set", _strided_set_rel, pattern=OpPattern.INJECTIVE, num_inputs=5,
          describe="Set a strided slice of data to a value.")


def meshgrid(data, indexing: str = "ij") -> TupleWrapper:
    data = list(data)
    call = Call(Op.get("meshgrid"), [Tuple(data)], MeshgridAttrs(indexing=indexing))
    return TupleWrapper(call, len(data))


def argwhere(condition: Expr) -> Call:
    return Call(Op.get("argwhere"), [condition])


def unique(data: Expr, is_sorted: bool = True, return_counts: bool = False,
           equal_nan: bool = True, consecutive: bool = False) -> TupleWrapper:
    """TVM's ``unique``; ``equal_nan=False`` (a minitvm addition) makes each NaN its own value,
    as torch's ``unique`` does (numpy's and ORT's group them); ``consecutive=True`` (also an
    addition) groups only runs of equal neighbours (``==``: each NaN its own run), in order."""
    attrs = dict(sorted=bool(is_sorted), return_counts=bool(return_counts))
    if not equal_nan:
        attrs["equal_nan"] = False
    if consecutive:
        attrs["consecutive"] = True
    call = Call(Op.get("unique"), [data], UniqueAttrs(**attrs))
    return TupleWrapper(call, 5 if return_counts else 4)


def adv_index(inputs) -> Call:
    return Call(Op.get("adv_index"), [Tuple(list(inputs))])


def sliding_window(data: Expr, axis: int, window_shape, strides) -> Call:
    attrs = SlidingWindowAttrs(axis=int(axis), window_shape=tuple(int(w) for w in window_shape),
                               strides=tuple(int(s) for s in strides))
    return Call(Op.get("sliding_window"), [data], attrs)


def _index_tensor(v):
    return v if isinstance(v, Expr) else const([int(x) for x in v], "int32")


def strided_set(data: Expr, v: Expr, begin, end, strides=None) -> Call:
    strides = strides if strides is not None else const([1], "int32")
    return Call(Op.get("strided_set"), [data, v, _index_tensor(begin), _index_tensor(end),
                                        _index_tensor(strides)])

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("unique", "the number of unique elements depends on the data")
