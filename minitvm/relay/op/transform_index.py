"""Indexing, broadcasting and tensor-creating transform ops: take, gather, gather_nd, one_hot,
arange, shape_of, ndarray_size, broadcast_to, collapse_sum_* (re-exported by ``relay.op.transform``).
Their numpy references (``FNumpy``) come from ``minitvm.topi.reference.transform_index``.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ...tir.expr import Any
from ...topi.shape import slice_like_axes
from ...topi.shape_conditions import agree, assume_equal, at_most
from ...topi.utils import arith
from ..expr import Call, Constant, Expr, const
from .op import define_op
from .type_relations import (
    broadcast_shapes,
    check_num_args,
    is_static_dim,
    normalize_axis,
    shape_str,
    tensor_arg,
    type_str,
)

__all__ = [
    "TakeAttrs", "GatherAttrs", "OneHotAttrs", "ArangeAttrs", "ShapeOfAttrs", "NdarraySizeAttrs",
    "take", "gather", "one_hot", "arange", "shape_of", "ndarray_size", "broadcast_to",
    "broadcast_to_like", "collapse_sum_like", "collapse_sum_to",
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


def _shape_ints(shape) -> tuple:
    if isinstance(shape, Constant):
        shape = shape.data.numpy()
    if isinstance(shape, Expr):
        raise ValueError("dynamic (non-constant) shapes are not supported")
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return tuple(int(v) for v in np.asarray(shape).reshape(-1))


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
    if not all(agree(i, d) for i, d in zip(idx.shape[:bd], data.shape[:bd], strict=True)):
        raise TypeError(f"take: the batch dims of the indices {type_str(idx)} do not match the "
                        f"data's {type_str(data)} (batch_dims={bd})")
    shape = tuple(data.shape[:axis]) + tuple(idx.shape[bd:]) + tuple(data.shape[axis + 1:])
    return TensorType(shape, data.dtype)


define_op("take", _take_rel, pattern=OpPattern.INJECTIVE, attrs_type=TakeAttrs, num_inputs=2,
          describe="Take elements of the data along an axis (clip, wrap or fast indices).")


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
    axis = normalize_axis(attrs.axis, len(data.shape), "gather")
    for k, (i, d) in enumerate(zip(idx.shape, data.shape, strict=True)):
        if k != axis and not at_most(i, d):  # (the kernel reads data at each index position)
            raise TypeError(f"gather: dim {k} of the indices {type_str(idx)} exceeds the "
                            f"data's {type_str(data)}")
    return TensorType(idx.shape, data.dtype)


define_op("gather", _gather_rel, pattern=OpPattern.INJECTIVE, attrs_type=GatherAttrs,
          num_inputs=2, describe="Gather values along an axis at indices.")


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


define_op("one_hot", _one_hot_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
          attrs_type=OneHotAttrs, num_inputs=3, describe="One-hot encoding of integer indices.")


def one_hot(indices, on_value, off_value, depth: int, axis: int, dtype: str) -> Call:
    """One-hot tensor: ``on_value`` at ``indices`` along a new ``axis``, else ``off_value``.
    A non-constant ``depth`` expression builds ``dyn.one_hot`` (as TVM)."""
    if isinstance(depth, Constant):
        depth = depth.data.numpy().item()
    if isinstance(depth, Expr):
        from .dyn import _transform as _dyn

        return _dyn.one_hot(indices, on_value, off_value, depth, int(axis), str(dtype))
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


define_op("arange", _arange_rel, pattern=OpPattern.OPAQUE, attrs_type=ArangeAttrs, num_inputs=3,
          describe="Evenly spaced values in [start, stop) with the given step.")


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
    # the attrs keep the constant operands only (all the type relation reads): a computed one
    # (a shape_of's take) printed as a relay.Call metadata entry that no parser rebuilds, so a
    # saved VM executable with such an arange did not load (fuzz seeds 100026, 100048)
    def known(v):
        return v if isinstance(v, Constant) else None

    return _call("arange", [start, stop, step],
                 ArangeAttrs(start=known(start), stop=known(stop), step=known(step),
                             dtype=str(dtype)))


# --------------------------------------------------------------------------- shape_of / size
def _shape_of_rel(arg_types, attrs):
    check_num_args("shape_of", arg_types, 1)
    t = tensor_arg(arg_types, 0, "shape_of")
    return TensorType((len(t.shape),), attrs.dtype or "int32")


define_op("shape_of", _shape_of_rel, pattern=OpPattern.OPAQUE, attrs_type=ShapeOfAttrs,
          num_inputs=1, describe="The shape of a tensor, as a 1-D tensor.")


def shape_of(data, dtype: str = "int32") -> Call:
    """The shape of ``data`` as a 1-D tensor of ``dtype``."""
    return _call("shape_of", [data], ShapeOfAttrs(dtype=str(dtype)))


def _ndarray_size_rel(arg_types, attrs):
    check_num_args("ndarray_size", arg_types, 1)
    tensor_arg(arg_types, 0, "ndarray_size")
    return TensorType((), attrs.dtype or "int32")


define_op("ndarray_size", _ndarray_size_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=NdarraySizeAttrs, num_inputs=1,
          describe="The number of elements of a tensor, as a scalar.")


def ndarray_size(data, dtype: str = "int32") -> Call:
    """The number of elements of ``data`` as a scalar of ``dtype``."""
    return _call("ndarray_size", [data], NdarraySizeAttrs(dtype=str(dtype)))



# --------------------------------------------------------------------------- broadcast_to & co
def _broadcast_to_rel(arg_types, attrs):
    check_num_args("broadcast_to", arg_types, 1)
    t = tensor_arg(arg_types, 0, "broadcast_to")
    target = tuple(attrs.shape)
    out = broadcast_shapes(t.shape, target, "broadcast_to")
    if len(out) != len(target):
        raise TypeError(f"broadcast_to: cannot broadcast {type_str(t)} to {shape_str(target)}")
    return TensorType(target, t.dtype)


define_op("broadcast_to", _broadcast_to_rel, pattern=OpPattern.BROADCAST, num_inputs=1,
          describe="Broadcast the data to a shape.")


def _broadcasts_onto(op_name: str, small, big) -> None:
    """Raise unless shape ``small`` broadcasts onto ``big`` (the result is ``big`` itself)."""
    out = broadcast_shapes(small, big, op_name)
    if len(out) != len(big) or not all([agree(o, b) for o, b in zip(out, big, strict=True)]):
        raise TypeError(f"{op_name}: {shape_str(small)} does not broadcast to {shape_str(big)}")


def _broadcast_to_like_rel(arg_types, attrs=None):
    check_num_args("broadcast_to_like", arg_types, 2)
    t = tensor_arg(arg_types, 0, "broadcast_to_like")
    like = tensor_arg(arg_types, 1, "broadcast_to_like")
    _broadcasts_onto("broadcast_to_like", t.shape, like.shape)
    return TensorType(like.shape, t.dtype)


define_op("broadcast_to_like", _broadcast_to_like_rel, pattern=OpPattern.BROADCAST,
          num_inputs=2, describe="Broadcast the data to the shape of another tensor.")


def _collapse_like_rel(arg_types, attrs=None):
    check_num_args("collapse_sum_like", arg_types, 2)
    t = tensor_arg(arg_types, 0, "collapse_sum_like")
    like = tensor_arg(arg_types, 1, "collapse_sum_like")
    lead = len(t.shape) - len(like.shape)
    pairs = list(zip(like.shape, t.shape[max(lead, 0):]))
    if lead < 0 or all(is_static_dim(m) and is_static_dim(n) for m, n in pairs):
        _broadcasts_onto("collapse_sum_like", like.shape, t.shape)
    else:  # (a symbolic size m collapses n only as 1 or n: m * (n - m + 1) == n, stated)
        for m, n in pairs:
            if is_static_dim(m) and is_static_dim(n):
                if m not in (1, n):
                    raise TypeError(f"collapse_sum_like: {shape_str(like.shape)} does not "
                                    f"broadcast to {shape_str(t.shape)}")
            elif not isinstance(m, Any) and not isinstance(n, Any):
                assume_equal(arith(lambda a, b: a * (b - a + 1), m, n), n)
    return TensorType(like.shape, t.dtype)


def _collapse_to_rel(arg_types, attrs):
    check_num_args("collapse_sum_to", arg_types, 1)
    t = tensor_arg(arg_types, 0, "collapse_sum_to")
    _broadcasts_onto("collapse_sum_to", tuple(attrs.shape), t.shape)
    return TensorType(tuple(attrs.shape), t.dtype)


define_op("collapse_sum_like", _collapse_like_rel, pattern=OpPattern.COMM_REDUCE, num_inputs=2,
          describe="Sum the data down to the shape of another tensor.")
define_op("collapse_sum_to", _collapse_to_rel, pattern=OpPattern.COMM_REDUCE, num_inputs=1,
          describe="Sum the data down to a broadcast-compatible shape.")


def _init_attrs(shape):
    from .tensor import InitOpAttrs

    return InitOpAttrs(shape=_shape_ints(shape))


def broadcast_to(data, shape) -> Call:
    """Broadcast ``data`` to ``shape`` (numpy rules); a shape expression: ``dyn.broadcast_to``."""
    if isinstance(shape, Expr) and not isinstance(shape, Constant):
        from .dyn import _transform as _dyn

        return _dyn.broadcast_to(data, shape)
    return _call("broadcast_to", [data], _init_attrs(shape))


def broadcast_to_like(data, broadcast_type) -> Call:
    """Broadcast ``data`` to the shape of ``broadcast_type``."""
    return _call("broadcast_to_like", [data, broadcast_type])


def collapse_sum_like(data, collapse_type) -> Call:
    """Sum ``data`` down to the shape of ``collapse_type`` (the reverse of broadcasting)."""
    return _call("collapse_sum_like", [data, collapse_type])


def collapse_sum_to(data, shape) -> Call:
    """Sum ``data`` down to ``shape``."""
    return _call("collapse_sum_to", [data], _init_attrs(shape))


# --------------------------------------------------------------------------- more indexing ops
class SliceLikeAttrs(Attrs):
    __slots__ = ()
    _fields = (("axes", None),)


class GatherNDAttrs(Attrs):
    __slots__ = ()
    _fields = (("batch_dims", 0), ("index_rank", None))


class SequenceMaskAttrs(Attrs):
    __slots__ = ()
    _fields = (("mask_value", 0.0), ("axis", 0))


class ReverseSequenceAttrs(Attrs):
    __slots__ = ()
    _fields = (("seq_axis", 1), ("batch_axis", 0))


def _slice_like_rel(arg_types, attrs):
    check_num_args("slice_like", arg_types, 2)
    data = tensor_arg(arg_types, 0, "slice_like")
    like = tensor_arg(arg_types, 1, "slice_like")
    shape = list(data.shape)
    for a in slice_like_axes(data, like, attrs.axes):
        if a >= len(like.shape):
            raise TypeError(f"slice_like: axis {a} is out of range for {type_str(like)}")
        if not at_most(like.shape[a], data.shape[a]):
            raise TypeError(f"slice_like: axis {a} of {type_str(like)} is longer than the "
                            f"data {type_str(data)}")
        shape[a] = like.shape[a]
    return TensorType(shape, data.dtype)


define_op("slice_like", _slice_like_rel, pattern=OpPattern.INJECTIVE, attrs_type=SliceLikeAttrs,
          num_inputs=2, describe="Slice the data to the shape of another tensor on the given axes.")


def slice_like(data, shape_like, axes=None) -> Call:
    """Slice ``data`` (from 0) to the dims of ``shape_like`` on ``axes`` (all when None)."""
    axes = None if axes is None else tuple(int(a) for a in axes)
    return _call("slice_like", [data, shape_like], SliceLikeAttrs(axes=axes))


def _gather_nd_rel(arg_types, attrs):
    check_num_args("gather_nd", arg_types, 2)
    data = tensor_arg(arg_types, 0, "gather_nd")
    idx = tensor_arg(arg_types, 1, "gather_nd")
    if not idx.shape:
        raise TypeError("gather_nd: indices must have at least one dimension")
    bd = int(attrs.batch_dims)
    m = attrs.index_rank if attrs.index_rank is not None else idx.shape[0]
    if not is_static_dim(m) and len(data.shape) - bd == 1:
        m = 1  # (the only index rank the data allows: stated of the run-time size below)
    if not is_static_dim(m):
        top = len(data.shape) - bd
        raise TypeError(f"gather_nd: the index rank (indices.shape[0] = {m}) is a run-time "
                        "size, which leaves the result's rank unknown: pass index_rank, "
                        "gather_nd(data, indices, index_rank=K) with K the number of data dims "
                        f"each index tuple addresses (1 to {top} here), the size indices.shape[0] "
                        "must have when it runs")
    m = int(m)
    if not agree(idx.shape[0], m):
        raise TypeError(f"gather_nd: indices {type_str(idx)} hold index tuples of "
                        f"{idx.shape[0]} along their first dim, not index_rank {m}")
    if bd + m > len(data.shape):
        raise TypeError(f"gather_nd: indices {type_str(idx)} index more dims than the data "
                        f"{type_str(data)} has")
    return TensorType(tuple(idx.shape[1:]) + tuple(data.shape[bd + m:]), data.dtype)


define_op("gather_nd", _gather_nd_rel, pattern=OpPattern.INJECTIVE, attrs_type=GatherNDAttrs,
          num_inputs=2,
          describe="Gather slices of the data at n-dimensional indices (first index axis).")


def gather_nd(data, indices, batch_dims: int = 0, index_rank=None) -> Call:
    """Gather from ``data`` at the n-d indices stored along ``indices``' first axis."""
    return _call("gather_nd", [data, indices],
                 GatherNDAttrs(batch_dims=int(batch_dims), index_rank=index_rank))


def _sequence_mask_rel(arg_types, attrs):
    check_num_args("sequence_mask", arg_types, 2)
    data = tensor_arg(arg_types, 0, "sequence_mask")
    lengths = tensor_arg(arg_types, 1, "sequence_mask")
    if attrs.axis not in (0, 1):
        raise ValueError(f"sequence_mask: axis must be 0 or 1, got {attrs.axis}")
    if len(data.shape) < 2 or len(lengths.shape) != 1 or \
            not agree(lengths.shape[0], data.shape[1 - attrs.axis]):
        raise TypeError(f"sequence_mask: valid_length {type_str(lengths)} must hold one length "
                        f"per batch entry (axis {1 - attrs.axis}) of {type_str(data)}")
    return data


define_op("sequence_mask", _sequence_mask_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=SequenceMaskAttrs, num_inputs=2,
          describe="Mask positions past each sequence's valid length.")


def sequence_mask(data, valid_length, mask_value: float = 0, axis: int = 0) -> Call:
    """Replace elements past ``valid_length`` along ``axis`` (0 or 1) with ``mask_value``."""
    return _call("sequence_mask", [data, valid_length],
                 SequenceMaskAttrs(mask_value=float(mask_value), axis=int(axis)))


def _reverse_sequence_rel(arg_types, attrs):
    check_num_args("reverse_sequence", arg_types, 2)
    data = tensor_arg(arg_types, 0, "reverse_sequence")
    lengths = tensor_arg(arg_types, 1, "reverse_sequence")
    if len(lengths.shape) != 1:
        raise TypeError(f"reverse_sequence: seq_lengths must be 1-D, got {type_str(lengths)}")
    normalize_axis(attrs.seq_axis, len(data.shape), "reverse_sequence")
    batch = normalize_axis(attrs.batch_axis, len(data.shape), "reverse_sequence")
    if not agree(lengths.shape[0], data.shape[batch]):
        raise TypeError(f"reverse_sequence: seq_lengths {type_str(lengths)} must hold one length "
                        f"per batch entry (axis {batch}) of {type_str(data)}")
    return data


define_op("reverse_sequence", _reverse_sequence_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=ReverseSequenceAttrs, num_inputs=2,
          describe="Reverse each batch entry's first seq_lengths[b] elements along seq_axis.")


def reverse_sequence(data, seq_lengths, seq_axis: int = 1, batch_axis: int = 0) -> Call:
    """Reverse the first ``seq_lengths[b]`` elements of each batch entry along ``seq_axis``."""
    return _call("reverse_sequence", [data, seq_lengths],
                 ReverseSequenceAttrs(seq_axis=int(seq_axis), batch_axis=int(batch_axis)))


__all__ += ["SliceLikeAttrs", "GatherNDAttrs", "SequenceMaskAttrs", "ReverseSequenceAttrs",
            "slice_like", "gather_nd", "sequence_mask", "reverse_sequence"]


def _attach_broadcast_to_attrs() -> None:
    """broadcast_to carries InitOpAttrs (its target ``shape``), as in TVM: declaring the attrs
    type lets the text parser rebuild ``broadcast_to(%x, shape=[...])``."""
    from .tensor import InitOpAttrs

    Op.get("broadcast_to").attrs_type = InitOpAttrs


_attach_broadcast_to_attrs()
