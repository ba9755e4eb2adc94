"""Indexing and tensor-creating transform ops: take, gather, one_hot, arange, shape_of,
ndarray_size (re-exported by ``relay.op.transform``)."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ...tir.expr import Any
from ..expr import Call, Constant, Expr, const
from .op import define_op
from .type_relations import check_num_args, normalize_axis, tensor_arg, type_str

__all__ = [
    "TakeAttrs", "GatherAttrs", "OneHotAttrs", "ArangeAttrs", "ShapeOfAttrs", "NdarraySizeAttrs",
    "take", "gather", "one_hot", "arange", "shape_of", "ndarray_size",
]


class TakeAttrs(Attrs):
    __slots__ = ()
    _fields = (("batch_dims", 0), ("axis", None), ("mode", "clip"))


class GatherAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", None),)


class OneHotAttrs(Attrs):
    __slots__ = ()
    _fields = (("depth", 1), ("axis", -1), ("dtype", None))


class ArangeAttrs(Attrs):
    __slots__ = ()
    _fields = (("start", None), ("stop", None), ("step", None), ("dtype", None))


class ShapeOfAttrs(Attrs):
    __slots__ = ()
    _fields = (("dtype", None),)


class NdarraySizeAttrs(Attrs):
    __slots__ = ()
    _fields = (("dtype", None),)


def _call(name: str, args, attrs=None) -> Call:
    return Call(Op.get(name), list(args), attrs)


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


# --------------------------------------------------------------------------- take
def _take_rel(arg_types, attrs):
    check_num_args("take", arg_types, 2)
    data = tensor_arg(arg_types, 0, "take")
    idx = tensor_arg(arg_types, 1, "take")
    if not _is_int(idx.dtype):
        raise TypeError(f"take: indices must be integers, got {type_str(idx)}")
    if attrs.mode not in ("clip", "wrap", "fast"):
        raise ValueError(f"take: mode must be clip, wrap or fast, got {attrs.mode!r}")
    if attrs.axis is None:
        return TensorType(idx.shape, data.dtype)
    ndim = len(data.shape)
    axis = normalize_axis(attrs.axis, ndim, "take")
    bd = int(attrs.batch_dims)
    bd = bd + len(idx.shape) if bd < 0 else bd
    if bd > axis or bd > len(idx.shape):
        raise ValueError(f"take: batch_dims {attrs.batch_dims} must be <= axis {axis} and the "
                         "rank of the indices")
    shape = tuple(data.shape[:axis]) + tuple(idx.shape[bd:]) + tuple(data.shape[axis + 1:])
    return TensorType(shape, data.dtype)


def _take_1(data, idx, axis, mode):
    n = data.shape[axis]
    if mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    elif mode == "wrap":
        idx = np.mod(idx, n)
    elif np.any((idx < -n) | (idx >= n)):
        raise IndexError(f"take: an index is out of bounds for axis {axis} of size {n} "
                         "(mode='fast')")
    return np.take(data, idx, axis=axis)


def _take_impl(attrs, args, out_type):
    data, idx = np.asarray(args[0]), np.asarray(args[1])
    if attrs.axis is None:
        return _take_1(data.reshape(-1), idx, 0, attrs.mode)
    axis = normalize_axis(attrs.axis, data.ndim, "take")
    bd = int(attrs.batch_dims)
    bd = bd + idx.ndim if bd < 0 else bd
    if bd == 0:
        return _take_1(data, idx, axis, attrs.mode)
    out = np.empty(data.shape[:axis] + idx.shape[bd:] + data.shape[axis + 1:], data.dtype)
    for b in np.ndindex(*idx.shape[:bd]):
        out[b] = _take_1(data[b], idx[b], axis - bd, attrs.mode)
    return out


define_op("take", _take_rel, _take_impl, OpPattern.INJECTIVE, TakeAttrs, 2,
          "Take elements of the data along an axis (clip, wrap or fast indices).")


def take(data, indices, axis=None, batch_dims: int = 0, mode: str = "clip") -> Call:
    """Take elements from ``data`` at ``indices`` along ``axis`` (flattened when None)."""
    if not isinstance(indices, Expr):
        indices = const(np.asarray(indices, dtype="int32"))
    return _call("take", [data, indices],
                 TakeAttrs(batch_dims=int(batch_dims),
                           axis=None if axis is None else int(axis), mode=mode))


# --------------------------------------------------------------------------- gather
def _gather_rel(arg_types, attrs):
    check_num_args("gather", arg_types, 2)
    data = tensor_arg(arg_types, 0, "gather")
    idx = tensor_arg(arg_types, 1, "gather")
    if len(idx.shape) != len(data.shape):
        raise TypeError(f"gather: indices {type_str(idx)} must have the rank of the data "
                        f"{type_str(data)}")
    normalize_axis(attrs.axis, len(data.shape), "gather")
    return TensorType(idx.shape, data.dtype)


define_op("gather", _gather_rel,
          lambda attrs, a, t: np.take_along_axis(a[0], a[1].astype("int64"), int(attrs.axis)),
          OpPattern.INJECTIVE, GatherAttrs, 2, "Gather values along an axis at indices.")


def gather(data, axis: int, indices) -> Call:
    """``out[i][j] = data[indices[i][j]][j]`` style gather along ``axis``."""
    return _call("gather", [data, indices], GatherAttrs(axis=int(axis)))


# --------------------------------------------------------------------------- one_hot
def _one_hot_rel(arg_types, attrs):
    check_num_args("one_hot", arg_types, 3)
    idx = tensor_arg(arg_types, 0, "one_hot")
    for i in (1, 2):
        v = tensor_arg(arg_types, i, "one_hot")
        if v.shape != ():
            raise TypeError(f"one_hot: on_value/off_value must be scalars, got {type_str(v)}")
    ndim = len(idx.shape)
    axis = ndim if attrs.axis == -1 else normalize_axis(attrs.axis, ndim, "one_hot", extra=1)
    shape = tuple(idx.shape[:axis]) + (int(attrs.depth),) + tuple(idx.shape[axis:])
    return TensorType(shape, attrs.dtype or arg_types[1].dtype)


def _one_hot_impl(attrs, args, out_type):
    idx = np.asarray(args[0])
    depth = int(attrs.depth)
    axis = idx.ndim if attrs.axis == -1 else attrs.axis % (idx.ndim + 1)
    hot = np.expand_dims(idx, axis) == np.arange(depth).reshape(
        (1,) * axis + (depth,) + (1,) * (idx.ndim - axis))
    return np.where(hot, args[1], args[2]).astype(out_type.dtype)


define_op("one_hot", _one_hot_rel, _one_hot_impl, OpPattern.OUT_ELEMWISE_FUSABLE, OneHotAttrs,
          3, "One-hot encoding of integer indices.")


def one_hot(indices, on_value, off_value, depth: int, axis: int, dtype: str) -> Call:
    """One-hot tensor: ``on_value`` at ``indices`` along a new ``axis``, else ``off_value``."""
    on_value = on_value if isinstance(on_value, Expr) else const(on_value, dtype)
    off_value = off_value if isinstance(off_value, Expr) else const(off_value, dtype)
    return _call("one_hot", [indices, on_value, off_value],
                 OneHotAttrs(depth=int(depth), axis=int(axis), dtype=str(dtype)))


# --------------------------------------------------------------------------- arange
def _scalar_value(e):
    if isinstance(e, Constant):
        return e.data.numpy().item()
    return None


def _arange_rel(arg_types, attrs):
    check_num_args("arange", arg_types, 3)
    for i in range(3):
        t = tensor_arg(arg_types, i, "arange")
        if t.shape != ():
            raise TypeError(f"arange: start, stop and step must be scalars, got {type_str(t)}")
    vals = [_scalar_value(attrs.start), _scalar_value(attrs.stop), _scalar_value(attrs.step)]
    if any(v is None for v in vals):
        return TensorType((Any(),), attrs.dtype)
    start, stop, step = vals
    if step == 0:
        raise ValueError("arange: step cannot be zero")
    n = int(np.ceil((stop - start) / step))
    return TensorType((max(n, 0),), attrs.dtype)


def _arange_impl(attrs, args, out_type):
    start, stop, step = (np.asarray(a).item() for a in args)
    return np.arange(start, stop, step).astype(out_type.dtype)


define_op("arange", _arange_rel, _arange_impl, OpPattern.OPAQUE, ArangeAttrs, 3,
          "Evenly spaced values in [start, stop) with the given step.")


def arange(start, stop=None, step=None, dtype: str = "float32") -> Call:
    """Evenly spaced values in ``[start, stop)``; one argument means ``[0, start)``."""
    def wrap(v):
        return v if isinstance(v, Expr) else const(v, dtype)

    if step is None:
        step = const(1, dtype)
    if stop is None:
        stop = start
        start = const(0, dtype)
    start, stop, step = wrap(start), wrap(stop), wrap(step)
    return _call("arange", [start, stop, step],
                 ArangeAttrs(start=start, stop=stop, step=step, dtype=str(dtype)))


# --------------------------------------------------------------------------- shape_of / size
def _shape_of_rel(arg_types, attrs):
    check_num_args("shape_of", arg_types, 1)
    t = tensor_arg(arg_types, 0, "shape_of")
    return TensorType((len(t.shape),), attrs.dtype or "int32")


define_op("shape_of", _shape_of_rel,
          lambda attrs, a, t: np.array(np.shape(a[0]), dtype=t.dtype).reshape(-1),
          OpPattern.OPAQUE, ShapeOfAttrs, 1, "The shape of a tensor, as a 1-D tensor.")


def shape_of(data, dtype: str = "int32") -> Call:
    """The shape of ``data`` as a 1-D tensor of ``dtype``."""
    return _call("shape_of", [data], ShapeOfAttrs(dtype=str(dtype)))


def _ndarray_size_rel(arg_types, attrs):
    check_num_args("ndarray_size", arg_types, 1)
    tensor_arg(arg_types, 0, "ndarray_size")
    return TensorType((), attrs.dtype or "int32")


define_op("ndarray_size", _ndarray_size_rel,
          lambda attrs, a, t: np.array(np.size(a[0]), dtype=t.dtype), OpPattern.INJECTIVE,
          NdarraySizeAttrs, 1, "The number of elements of a tensor, as a scalar.")


def ndarray_size(data, dtype: str = "int32") -> Call:
    """The number of elements of ``data`` as a scalar of ``dtype``."""
    return _call("ndarray_size", [data], NdarraySizeAttrs(dtype=str(dtype)))

