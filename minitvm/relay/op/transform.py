"""Shape-manipulating operators: reshape, transpose, expand_dims, squeeze, concatenate, stack,
split, strided_slice, layout_transform, tile, repeat, reverse, reverse_reshape.

Indexing, broadcasting and creating ops (take, gather, broadcast_to, arange, ...) live in
``transform_index``; both are re-exported from here as TVM's ``relay.op.transform``. The numpy
references (``FNumpy``) and the shape rules they share with the type relations (``infer_reshape``,
...) come from ``minitvm.topi.reference.transform`` and ``minitvm.topi.shape``.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType, TupleType
from ...tir.expr import Any, IntImm
from ...topi.shape import (  # shape rules shared with topi's numpy references
    div_dim,
    expand_dims_type,
    infer_reshape,
    reshape_like_type,
    reshape_type,
    reverse_reshape_type,
    slice_extent,
    squeeze_type,
    transpose_axes,
)
from ...topi.shape_conditions import at_most, taken_equal
from ...topi.utils import slice_params
from ..expr import Call, Constant, Expr, Tuple, TupleWrapper
from .layout import Layout
from .layout import _layout_shape as _layout_forward_shape
from .op import define_op
from .type_relations import (
    check_num_args,
    dims_product,
    is_static_dim,
    normalize_axis,
    same_dtype,
    tensor_arg,
    type_str,
)

__all__ = [
    "ReshapeAttrs", "ReshapeLikeAttrs", "TransposeAttrs", "ExpandDimsAttrs", "SqueezeAttrs",
    "ConcatenateAttrs", "StackAttrs", "SplitAttrs", "StridedSliceAttrs", "LayoutTransformAttrs",
    "TileAttrs", "RepeatAttrs", "ReverseAttrs",
    "reshape", "reshape_like", "transpose", "expand_dims", "squeeze", "concatenate", "stack",
    "split", "strided_slice", "layout_transform",
    "tile", "repeat", "reverse",
]


class ReshapeAttrs(Attrs):
    __slots__ = ()
    _fields = (("newshape", None), ("allowzero", False))


class ReshapeLikeAttrs(Attrs):
    __slots__ = ()
    _fields = (("lhs_begin", 0), ("lhs_end", None), ("rhs_begin", 0), ("rhs_end", None))


class TransposeAttrs(Attrs):
    __slots__ = ()
    _fields = (("axes", None),)


class ExpandDimsAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", None), ("num_newaxis", 1))


class SqueezeAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", None),)


class ConcatenateAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", 0),)


class StackAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", 0),)


class SplitAttrs(Attrs):
    __slots__ = ()
    _fields = (("indices_or_sections", None), ("axis", 0))


class StridedSliceAttrs(Attrs):
    __slots__ = ()
    _fields = (("begin", None), ("end", None), ("strides", None), ("slice_mode", "end"),
               ("axes", None))


class LayoutTransformAttrs(Attrs):
    __slots__ = ()
    _fields = (("src_layout", None), ("dst_layout", None))


class TileAttrs(Attrs):
    __slots__ = ()
    _fields = (("reps", None),)


class RepeatAttrs(Attrs):
    __slots__ = ()
    _fields = (("repeats", None), ("axis", None))


class ReverseAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", None),)


# --------------------------------------------------------------------------- helpers
def _call(name: str, args, attrs=None) -> Call:
    return Call(Op.get(name), list(args), attrs)


def _ints(value, what: str) -> tuple:
    """A constant int list from ints, lists, numpy arrays or a Relay constant."""
    t = type(value)
    if t is tuple or t is list:  # the common case, a list of Python ints: no numpy round trip
        for v in value:
            if type(v) is not int:
                break
        else:
            return tuple(value)
    elif t is int:
        return (value,)
    if isinstance(value, Constant):
        value = value.data.numpy()
    if isinstance(value, Expr):
        raise ValueError(f"{what}: dynamic (non-constant) values are not supported")
    if isinstance(value, int | np.integer | IntImm):
        return (int(value),)
    try:
        arr = np.asarray([int(v) if isinstance(v, IntImm) else v for v in value]
                         if isinstance(value, list | tuple) else value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: expected integers, got {value!r} ({e})") from None
    if arr.dtype.kind not in "iub" and not (arr.dtype.kind == "f" and np.all(arr == np.round(arr))):
        raise TypeError(f"{what}: expected integers, got {value!r}")  # ('ab', 2.5: not sizes)
    return tuple(int(v) for v in arr.reshape(-1))


def _ints_or_none(value, what: str) -> tuple:
    """As ``_ints``, but a list may hold None (strided_slice's begin/end: "from the start" /
    "to the end" of that axis, as TVM's attributes allow)."""
    if isinstance(value, list | tuple) and any(v is None for v in value):
        return tuple(None if v is None else _ints(v, what)[0] for v in value)
    return _ints(value, what)


def _dynamic(value) -> bool:
    """A Relay expression that is not a constant: the op's ``dyn.*`` twin takes it."""
    return isinstance(value, Expr) and not isinstance(value, Constant)


# --------------------------------------------------------------------------- reshape
def _reshape_rel(arg_types, attrs):
    check_num_args("reshape", arg_types, 1)
    return reshape_type(tensor_arg(arg_types, 0, "reshape"), attrs)


define_op("reshape", _reshape_rel, pattern=OpPattern.INJECTIVE, attrs_type=ReshapeAttrs,
          num_inputs=1, describe="Reshape the data (codes 0, -1, -2, -3, -4).")


def reshape(data, newshape, allowzero: bool = False) -> Call:
    """Reshape ``data``; ``newshape`` may use TVM's special codes 0, -1, -2, -3, -4.
    A non-constant ``newshape`` expression builds ``dyn.reshape`` (as TVM)."""
    if _dynamic(newshape):
        from .dyn import _transform as _dyn

        return _dyn.reshape(data, newshape, bool(allowzero))
    return _call("reshape", [data],
                 ReshapeAttrs(newshape=_ints(newshape, "reshape"), allowzero=bool(allowzero)))


def _reshape_like_rel(arg_types, attrs):
    check_num_args("reshape_like", arg_types, 2)
    data = tensor_arg(arg_types, 0, "reshape_like")
    like = tensor_arg(arg_types, 1, "reshape_like")
    return reshape_like_type(data, like, attrs)


define_op("reshape_like", _reshape_like_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=ReshapeLikeAttrs, num_inputs=2,
          describe="Reshape the data to the shape of another.")


def reshape_like(data, shape_like, lhs_begin: int = 0, lhs_end=None, rhs_begin: int = 0,
                 rhs_end=None) -> Call:
    """Reshape ``data[lhs_begin:lhs_end]`` to ``shape_like.shape[rhs_begin:rhs_end]``."""
    return _call("reshape_like", [data, shape_like],
                 ReshapeLikeAttrs(lhs_begin=lhs_begin, lhs_end=lhs_end, rhs_begin=rhs_begin,
                                  rhs_end=rhs_end))


# --------------------------------------------------------------------------- transpose & co
def _transpose_rel(arg_types, attrs):
    check_num_args("transpose", arg_types, 1)
    t = tensor_arg(arg_types, 0, "transpose")
    perm = transpose_axes(len(t.shape), attrs.axes)
    return TensorType(tuple(t.shape[p] for p in perm), t.dtype)


define_op("transpose", _transpose_rel, pattern=OpPattern.INJECTIVE, attrs_type=TransposeAttrs,
          num_inputs=1, describe="Permute the dimensions of the data.")


def transpose(data, axes=None) -> Call:
    """Permute the dims of ``data`` (reverse them when ``axes`` is None)."""
    axes = None if axes is None else tuple(int(a) for a in axes)
    return _call("transpose", [data], TransposeAttrs(axes=axes))


def _expand_dims_rel(arg_types, attrs):
    check_num_args("expand_dims", arg_types, 1)
    return expand_dims_type(tensor_arg(arg_types, 0, "expand_dims"), attrs)


define_op("expand_dims", _expand_dims_rel, pattern=OpPattern.BROADCAST,
          attrs_type=ExpandDimsAttrs, num_inputs=1,
          describe="Insert num_newaxis unit dims at axis.")


def expand_dims(data, axis: int, num_newaxis: int = 1) -> Call:
    """Insert ``num_newaxis`` dims of size 1 at ``axis`` (an expression: ``dyn.expand_dims``)."""
    if isinstance(axis, Constant):
        axis = int(axis.data.numpy())
    if isinstance(axis, Expr):
        from .dyn import _transform as _dyn

        return _dyn.expand_dims(data, axis, int(num_newaxis))
    return _call("expand_dims", [data],
                 ExpandDimsAttrs(axis=int(axis), num_newaxis=int(num_newaxis)))


def _squeeze_rel(arg_types, attrs):
    check_num_args("squeeze", arg_types, 1)
    return squeeze_type(tensor_arg(arg_types, 0, "squeeze"), attrs)


define_op("squeeze", _squeeze_rel, pattern=OpPattern.INJECTIVE, attrs_type=SqueezeAttrs,
          num_inputs=1, describe="Remove unit dims (all, or those in axis).")


def squeeze(data, axis=None) -> Call:
    """Remove dims of size 1 (those listed in ``axis``, or all); a non-constant ``axis``
    expression builds ``dyn.squeeze`` (as TVM)."""
    if isinstance(axis, Constant):
        axis = [int(a) for a in axis.data.numpy().reshape(-1)]
    if isinstance(axis, Expr):
        from .dyn import _more as _dyn

        return _dyn.squeeze(data, axis)
    if isinstance(axis, int):
        axis = [axis]
    axis = None if axis is None else tuple(int(a) for a in axis)
    return _call("squeeze", [data], SqueezeAttrs(axis=axis))


# --------------------------------------------------------------------------- concat / stack / split
def _tuple_fields(arg_types, name):
    check_num_args(name, arg_types, 1)
    tup = arg_types[0]
    if not isinstance(tup, TupleType):
        raise TypeError(f"{name}: expects a tuple of tensors, got {type_str(tup)}")
    if not tup.fields:
        raise TypeError(f"{name}: the input tuple is empty")
    fields = [tensor_arg(tup.fields, i, name) for i in range(len(tup.fields))]
    same_dtype(name, fields)
    return fields


def _concatenate_rel(arg_types, attrs):
    fields = _tuple_fields(arg_types, "concatenate")
    ndim = len(fields[0].shape)
    for f in fields[1:]:
        if len(f.shape) != ndim:
            raise TypeError(f"concatenate: all inputs must have the same rank, got "
                            f"{type_str(fields[0])} and {type_str(f)}")
    axis = normalize_axis(attrs.axis, ndim, "concatenate")
    out = []
    for k in range(ndim):
        dims = [f.shape[k] for f in fields]
        if k == axis:
            if any(isinstance(d, Any) for d in dims):
                out.append(Any())
            else:
                total = dims[0]
                for d in dims[1:]:
                    total = total + d
                out.append(total)
            continue
        known = [d for d in dims if not isinstance(d, Any)]
        known.sort(key=lambda d: not is_static_dim(d))  # (a static one names the result's)
        for d in known[1:]:
            if not taken_equal(d, known[0]):
                raise TypeError(f"concatenate: dimension {k} differs between inputs: "
                                f"{', '.join(type_str(f) for f in fields)}")
        out.append(known[0] if known else dims[0])  # (all equal when it runs: any one says it)
    return TensorType(tuple(out), fields[0].dtype)


define_op("concatenate", _concatenate_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=ConcatenateAttrs, num_inputs=1,
          describe="Join a tuple of tensors along an axis.")


def _as_tuple(data, name):
    if isinstance(data, Expr):
        return data
    data = list(data)
    if not data:
        raise ValueError(f"relay.{name} requires data to be non-empty.")
    return Tuple(data)


def concatenate(data, axis: int) -> Call:
    """Concatenate a list/tuple of tensors along ``axis``."""
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise TypeError(f"concatenate: axis must be an integer, got {type(axis).__name__} "
                        f"{axis!r}")
    return _call("concatenate", [_as_tuple(data, "concatenate")], ConcatenateAttrs(axis=axis))


def _stack_rel(arg_types, attrs):
    fields = _tuple_fields(arg_types, "stack")
    first = fields[0]
    for f in fields[1:]:
        if len(f.shape) != len(first.shape) or not all(
                isinstance(a, Any) or isinstance(b, Any) or taken_equal(a, b)
                for a, b in zip(f.shape, first.shape)):
            raise TypeError(f"stack: all inputs must have the same shape, got {type_str(first)} "
                            f"and {type_str(f)}")
    axis = normalize_axis(attrs.axis, len(first.shape), "stack", extra=1)
    shape = first.shape[:axis] + (len(fields),) + first.shape[axis:]
    return TensorType(shape, first.dtype)


define_op("stack", _stack_rel, pattern=OpPattern.INJECTIVE, attrs_type=StackAttrs,
          num_inputs=1, describe="Stack a tuple of tensors along a new axis.")


def stack(data, axis: int) -> Call:
    """Join a list of same-shaped tensors along a new ``axis``."""
    return _call("stack", [_as_tuple(data, "stack")], StackAttrs(axis=int(axis)))


def _split_rel(arg_types, attrs):
    check_num_args("split", arg_types, 1)
    t = tensor_arg(arg_types, 0, "split")
    axis = normalize_axis(attrs.axis, len(t.shape), "split")
    d = t.shape[axis]
    ios = attrs.indices_or_sections
    pieces = []
    if isinstance(ios, int):
        if ios <= 0:
            raise ValueError(f"split: the number of sections must be positive, got {ios}")
        if is_static_dim(d):
            if d % ios:
                raise ValueError(f"split: axis {axis} of {type_str(t)} (size {d}) cannot be "
                                 f"split into {ios} equal sections")
            pieces = [d // ios] * ios
        else:
            pieces = [div_dim(d, ios)] * ios
    else:
        begin = 0
        for idx in ios:
            pieces.append(idx - begin)
            begin = idx
        if is_static_dim(d) or isinstance(d, Any):
            pieces.append(d - begin if is_static_dim(d) else Any())
        else:  # (a symbolic size: the rest past the last index, which it must reach)
            at_most(begin, d)
            pieces.append(d - begin if begin else d)
        if any(is_static_dim(p) and p < 0 for p in pieces):
            raise ValueError(f"split: indices {list(ios)} must be sorted and within axis size {d}")
    fields = []
    for p in pieces:
        shape = list(t.shape)
        shape[axis] = p
        fields.append(TensorType(shape, t.dtype))
    return TupleType(fields)


define_op("split", _split_rel, pattern=OpPattern.INJECTIVE, attrs_type=SplitAttrs, num_inputs=1,
          describe="Split the data into sections (or at indices) along an axis.")


def split(data, indices_or_sections, axis: int = 0) -> TupleWrapper:
    """Split ``data`` into equal sections or at the given indices; returns a TupleWrapper."""
    if isinstance(indices_or_sections, int | np.integer):
        ios = int(indices_or_sections)
        n = ios
    else:
        ios = tuple(int(i) for i in indices_or_sections)
        n = len(ios) + 1
    return TupleWrapper(_call("split", [data], SplitAttrs(indices_or_sections=ios, axis=axis)), n)


# --------------------------------------------------------------------------- strided_slice
def _slice_dim(d, b, e, s):
    if not is_static_dim(d):
        if s == 1 and b in (0, None) and (e is None or e >= 2**31 - 1):
            return d
        if isinstance(d, Any):
            return Any()
        return slice_extent(d, b, e, s)  # (a symbolic size: the slice's length as its expr)
    return len(range(*slice(b, e, s).indices(d)))


def _strided_slice_rel(arg_types, attrs):
    check_num_args("strided_slice", arg_types, 1)
    t = tensor_arg(arg_types, 0, "strided_slice")
    params = slice_params(t.shape, attrs)
    shape = [(_slice_dim(d, *params[i]) if i in params else d) for i, d in enumerate(t.shape)]
    return TensorType(shape, t.dtype)


define_op("strided_slice", _strided_slice_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=StridedSliceAttrs, num_inputs=1,
          describe="Slice with begin/end/strides (negative strides reverse).")


def _spread_over_axes(data, begin, end, strides, axes):
    """Run-time ``begin`` / ``end`` / ``strides`` of the named ``axes`` as bounds of every axis
    up to the last one named (what ``dyn.strided_slice`` reads; the axes after it stay whole):
    an axis not named from 0 to its run-time length, stride 1. TVM refuses axes here; the
    axes must be non-negative, the data's rank being unknown when the call is built."""
    from ..expr import const
    from .transform_index import shape_of, take

    axes = _ints(axes, "strided_slice")
    if any(a < 0 for a in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"strided_slice: the axes {axes} of run-time begin/end/strides must be "
                         "distinct and non-negative")
    dims = shape_of(data, "int64")

    def spread(v, default):
        parts = []
        for a in range(max(axes) + 1):
            if a in axes:
                j = axes.index(a)
                part = _call("strided_slice", [v], StridedSliceAttrs(
                    begin=[j], end=[j + 1], strides=[1], slice_mode="end", axes=None))
                parts.append(cast(part, "int64"))
            else:
                parts.append(default(a))
        return concatenate(parts, 0)

    one = const(np.array([1], "int64"), "int64")
    zero = const(np.array([0], "int64"), "int64")
    return (spread(begin, lambda a: zero),
            spread(end, lambda a: reshape(take(dims, const(np.array(a, "int64"), "int64")), [1])),
            spread(strides, lambda a: one))


def _dynamic_strided_slice(data, begin, end, strides, axes, slice_mode):
    """``dyn.strided_slice`` as TVM builds it: a negative begin counts from the end and a begin
    past the end is clamped, both computed from ``shape_of(data)`` in the graph."""
    from ..expr import const
    from .dyn import _transform as _dyn
    from .transform_index import shape_of, slice_like

    if axes is not None and not isinstance(strides, Expr):  # (the strides not given: 1)
        strides = list(strides) + [1] * (len(axes) - len(strides))
    begin, end, strides = (v if isinstance(v, Expr) else const([int(i) for i in v])
                           for v in (begin, end, strides))
    if axes is not None:
        begin, end, strides = _spread_over_axes(data, begin, end, strides, axes)
    dims = slice_like(cast_like(shape_of(data), begin), begin)
    begin = where(_call("less", [begin, cast_like(const(0), begin)]),
                  _call("add", [begin, dims]), begin)
    begin = where(_call("greater_equal", [begin, dims]), dims, begin)
    return _dyn.strided_slice(data, begin, end, strides, slice_mode)


def strided_slice(data, begin, end, strides=None, axes=None, slice_mode: str = "end") -> Call:
    """``data[begin:end:strides]`` on each axis (or on ``axes``); ``slice_mode`` end|size."""
    if slice_mode not in ("end", "size"):
        raise ValueError(f"strided_slice: slice_mode must be 'end' or 'size', got {slice_mode!r}")
    strides = strides if strides is not None else [1]
    begin, end, strides = (list(v.data.numpy().reshape(-1)) if isinstance(v, Constant) else v
                           for v in (begin, end, strides))
    if any(isinstance(v, Expr) for v in (begin, end, strides)):
        return _dynamic_strided_slice(data, begin, end, strides, axes, slice_mode)
    attrs = StridedSliceAttrs(
        begin=_ints_or_none(begin, "strided_slice"), end=_ints_or_none(end, "strided_slice"),
        strides=_ints(strides, "strided_slice"), slice_mode=slice_mode,
        axes=None if axes is None else _ints(axes, "strided_slice"))
    return _call("strided_slice", [data], attrs)


# --------------------------------------------------------------------------- layout_transform
def _layout_transform_rel(arg_types, attrs):
    check_num_args("layout_transform", arg_types, 1)
    t = tensor_arg(arg_types, 0, "layout_transform")
    src, dst = Layout(attrs.src_layout), Layout(attrs.dst_layout)
    try:
        shape = _layout_forward_shape(src, dst, t.shape)
    except ValueError as err:
        raise TypeError(f"layout_transform of {type_str(t)}: {err}") from None
    return TensorType(shape, t.dtype)


define_op("layout_transform", _layout_transform_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=LayoutTransformAttrs, num_inputs=1,
          describe="Convert the data between layouts (NCHW <-> NCHW16c, NHWC, ...).")


def layout_transform(data, src_layout: str, dst_layout: str) -> Call:
    """Relayout ``data`` from ``src_layout`` to ``dst_layout``."""
    return _call("layout_transform", [data],
                 LayoutTransformAttrs(src_layout=str(src_layout), dst_layout=str(dst_layout)))


# --------------------------------------------------------------------------- tile / repeat / reverse
def _tile_rel(arg_types, attrs):
    check_num_args("tile", arg_types, 1)
    t = tensor_arg(arg_types, 0, "tile")
    reps = tuple(attrs.reps)
    if any(r <= 0 for r in reps):
        raise ValueError(f"tile: reps {list(reps)} must be positive")
    n = max(len(reps), len(t.shape))
    shape = (1,) * (n - len(t.shape)) + tuple(t.shape)
    reps = (1,) * (n - len(reps)) + reps
    return TensorType([dims_product([d, r]) for d, r in zip(shape, reps)], t.dtype)


define_op("tile", _tile_rel, pattern=OpPattern.BROADCAST, attrs_type=TileAttrs, num_inputs=1,
          describe="Repeat the whole tensor reps times per axis.")


def tile(data, reps) -> Call:
    """Construct a tensor by repeating ``data`` ``reps`` times along each axis."""
    if _dynamic(reps):
        from .dyn import _transform as _dyn

        return _dyn.tile(data, reps)
    return _call("tile", [data], TileAttrs(reps=_ints(reps, "tile")))


def _repeat_rel(arg_types, attrs):
    check_num_args("repeat", arg_types, 1)
    t = tensor_arg(arg_types, 0, "repeat")
    if attrs.repeats < 1:
        raise ValueError(f"repeat: repeats must be >= 1, got {attrs.repeats}")
    axis = normalize_axis(attrs.axis, len(t.shape), "repeat")
    shape = list(t.shape)
    shape[axis] = dims_product([shape[axis], attrs.repeats])
    return TensorType(shape, t.dtype)


define_op("repeat", _repeat_rel, pattern=OpPattern.BROADCAST, attrs_type=RepeatAttrs,
          num_inputs=1, describe="Repeat each element along an axis.")


def repeat(data, repeats: int, axis: int) -> Call:
    """Repeat each element of ``data`` ``repeats`` times along ``axis``."""
    return _call("repeat", [data], RepeatAttrs(repeats=int(repeats), axis=int(axis)))


def _reverse_rel(arg_types, attrs):
    check_num_args("reverse", arg_types, 1)
    t = tensor_arg(arg_types, 0, "reverse")
    normalize_axis(attrs.axis, len(t.shape), "reverse")
    return t


define_op("reverse", _reverse_rel, pattern=OpPattern.INJECTIVE, attrs_type=ReverseAttrs,
          num_inputs=1, describe="Reverse the order of elements along an axis.")


def reverse(data, axis: int) -> Call:
    """Reverse the elements of ``data`` along ``axis``."""
    return _call("reverse", [data], ReverseAttrs(axis=int(axis)))


from .transform_index import *  # noqa: E402,F403
from .transform_index import __all__ as _index_all  # noqa: E402

__all__ += _index_all


# --------------------------------------------------------------------------- reverse_reshape
def _reverse_reshape_rel(arg_types, attrs):
    check_num_args("contrib_reverse_reshape", arg_types, 1)
    return reverse_reshape_type(tensor_arg(arg_types, 0, "contrib_reverse_reshape"), attrs)


define_op("contrib_reverse_reshape", _reverse_reshape_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=ReshapeAttrs, num_inputs=1,
          describe="Reshape with the special codes inferred from right to left.")


def reverse_reshape(data, newshape) -> Call:
    """Like ``reshape`` but special codes are matched from the right (MXNet semantics)."""
    return _call("contrib_reverse_reshape", [data],
                 ReshapeAttrs(newshape=_ints(newshape, "reverse_reshape")))


__all__ += ["reverse_reshape", "infer_reshape"]

# TVM's relay.op.transform also holds these; they are defined with the elementwise ops.
from .tensor import cast, cast_like, full, full_like, reinterpret, where  # noqa: E402,F401
