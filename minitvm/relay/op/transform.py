"""Shape-manipulating operators: reshape, transpose, expand_dims, squeeze, concatenate, stack,
split, strided_slice, layout_transform, tile, repeat, reverse, reverse_reshape.

Indexing, broadcasting and creating ops (take, gather, broadcast_to, arange, ...) live in
``transform_index``; both are re-exported from here as TVM's ``relay.op.transform``.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType, TupleType
from ...tir.expr import Any, FloorDiv, IntImm, Mul
from ...topi.utils import slice_params
from ..expr import Call, Constant, Expr, Tuple, TupleWrapper
from .layout import Layout, transform_array
from .layout import _layout_shape as _layout_forward_shape
from .op import define_op
from .type_relations import (
    check_num_args,
    dims_equal,
    dims_product,
    is_static_dim,
    normalize_axis,
    same_dtype,
    shape_str,
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
    if isinstance(value, Constant):
        value = value.data.numpy()
    if isinstance(value, Expr):
        raise ValueError(f"{what}: dynamic (non-constant) values are not supported")
    if isinstance(value, int | np.integer | IntImm):
        return (int(value),)
    return tuple(int(v) for v in np.asarray(value).reshape(-1))


def _static_out(rel, attrs, arrays) -> tuple:
    """The concrete output shape for the actual input arrays (resolves Any in the type)."""
    types = [TensorType(a.shape, str(a.dtype)) for a in arrays]
    return rel(types, attrs).concrete_shape


def _factor(d):
    """A dim as (static multiplier, [symbolic factors])."""
    if is_static_dim(d):
        return d, []
    if isinstance(d, IntImm):
        return d.value, []
    if isinstance(d, Mul):
        sa, fa = _factor(d.a)
        sb, fb = _factor(d.b)
        return sa * sb, fa + fb
    return 1, [d]


def _div_dim(num, den):
    """Exact division of dims, cancelling shared symbolic factors (``n*12 / 12 = n``)."""
    if isinstance(num, Any) or isinstance(den, Any):
        return Any()
    ns, nf = _factor(num)
    ds, df = _factor(den)
    rest = list(nf)
    for f in df:
        for i, g in enumerate(rest):
            if dims_equal(f, g):
                del rest[i]
                break
        else:
            return FloorDiv(num if not is_static_dim(num) else IntImm("int32", num),
                            den if not is_static_dim(den) else IntImm("int32", den))
    if ds == 0 or ns % ds:
        if not rest and ds:
            raise ValueError(f"cannot split {num} elements evenly by {den}")
        return FloorDiv(dims_product([ns] + rest), ds)
    return dims_product([ns // ds] + rest)


# --------------------------------------------------------------------------- reshape
def infer_reshape(shape, newshape, allowzero: bool = False) -> tuple:
    """Output shape of ``reshape`` with TVM's special codes 0, -1, -2, -3, -4."""
    oshape: list = []
    used_in: set[int] = set()
    used_out: set[int] = set()
    infer_idx = -1
    src = 0
    i = 0
    ndim = len(shape)

    def need(k):
        if src + k > ndim:
            raise ValueError(f"reshape: newshape {list(newshape)} refers to more dimensions than "
                             f"the input shape {shape_str(shape)} has")

    while i < len(newshape):
        v = int(newshape[i])
        if v > 0 or (v == 0 and allowzero):
            oshape.append(v)
            src += 1
        elif v == 0:
            need(1)
            used_in.add(src)
            used_out.add(len(oshape))
            oshape.append(shape[src])
            src += 1
        elif v == -1:
            if infer_idx >= 0:
                raise ValueError("reshape: one and only one dim can be inferred (-1)")
            infer_idx = len(oshape)
            oshape.append(1)
            src += 1
        elif v == -2:
            while src < ndim:
                used_in.add(src)
                used_out.add(len(oshape))
                oshape.append(shape[src])
                src += 1
        elif v == -3:
            need(2)
            used_in.update((src, src + 1))
            used_out.add(len(oshape))
            oshape.append(dims_product([shape[src], shape[src + 1]]))
            src += 2
        elif v == -4:
            need(1)
            if i + 2 >= len(newshape):
                raise ValueError("reshape: -4 must be followed by two dims")
            d0 = shape[src]
            d1, d2 = int(newshape[i + 1]), int(newshape[i + 2])
            if d1 == -1 and d2 == -1:
                raise ValueError("reshape: -4 may infer only one of its two dims")
            if d1 == -1:
                d1 = _div_dim(d0, d2)
            elif d2 == -1:
                d2 = _div_dim(d0, d1)
            elif is_static_dim(d0) and d0 != d1 * d2:
                raise ValueError(f"reshape: -4 splits dim {d0} into {d1} x {d2}, which differ "
                                 "in size")
            used_in.add(src)
            used_out.update((len(oshape), len(oshape) + 1))
            oshape += [d1, d2]
            src += 1
            i += 2
        else:
            raise ValueError(f"reshape: unsupported special value {v} in newshape")
        i += 1

    if infer_idx >= 0:
        in_rest = dims_product([d for k, d in enumerate(shape) if k not in used_in])
        out_rest = dims_product([d for k, d in enumerate(oshape)
                                 if k not in used_out and k != infer_idx])
        if is_static_dim(out_rest) and out_rest == 0:
            raise ValueError("reshape: cannot infer a -1 dim next to a zero-sized dim")
        if is_static_dim(in_rest) and is_static_dim(out_rest) and in_rest % out_rest:
            raise ValueError(f"reshape: cannot reshape {shape_str(shape)} into "
                             f"{list(newshape)}: {in_rest} is not divisible by {out_rest}")
        oshape[infer_idx] = _div_dim(in_rest, out_rest)
    else:
        a, b = dims_product(shape), dims_product(oshape)
        if is_static_dim(a) and is_static_dim(b) and a != b:
            raise ValueError(f"reshape: cannot reshape {shape_str(shape)} ({a} elements) into "
                             f"{shape_str(oshape)} ({b} elements)")
    return tuple(oshape)


def _reshape_rel(arg_types, attrs):
    check_num_args("reshape", arg_types, 1)
    t = tensor_arg(arg_types, 0, "reshape")
    return TensorType(infer_reshape(t.shape, attrs.newshape, attrs.allowzero), t.dtype)


define_op("reshape", _reshape_rel,
          lambda attrs, a, t: np.reshape(a[0], _static_out(_reshape_rel, attrs, a)),
          OpPattern.INJECTIVE, ReshapeAttrs, 1, "Reshape the data (codes 0, -1, -2, -3, -4).")


def reshape(data, newshape, allowzero: bool = False) -> Call:
    """Reshape ``data``; ``newshape`` may use TVM's special codes 0, -1, -2, -3, -4."""
    return _call("reshape", [data],
                 ReshapeAttrs(newshape=_ints(newshape, "reshape"), allowzero=bool(allowzero)))


def _reshape_like_rel(arg_types, attrs):
    check_num_args("reshape_like", arg_types, 2)
    data = tensor_arg(arg_types, 0, "reshape_like")
    like = tensor_arg(arg_types, 1, "reshape_like")
    ls, rs = data.shape, like.shape
    le = len(ls) if attrs.lhs_end is None else attrs.lhs_end
    re = len(rs) if attrs.rhs_end is None else attrs.rhs_end
    lb, rb = attrs.lhs_begin, attrs.rhs_begin
    lb, le = (x + len(ls) if x < 0 else x for x in (lb, le))
    rb, re = (x + len(rs) if x < 0 else x for x in (rb, re))
    out = tuple(ls[:lb]) + tuple(rs[rb:re]) + tuple(ls[le:])
    a, b = dims_product(ls), dims_product(out)
    if is_static_dim(a) and is_static_dim(b) and a != b:
        raise TypeError(f"reshape_like: cannot reshape {type_str(data)} like {type_str(like)}: "
                        f"{a} vs {b} elements")
    return TensorType(out, data.dtype)


define_op("reshape_like", _reshape_like_rel,
          lambda attrs, a, t: np.reshape(a[0], _static_out(_reshape_like_rel, attrs, a)),
          OpPattern.INJECTIVE, ReshapeLikeAttrs, 2, "Reshape the data to the shape of another.")


def reshape_like(data, shape_like, lhs_begin: int = 0, lhs_end=None, rhs_begin: int = 0,
                 rhs_end=None) -> Call:
    """Reshape ``data[lhs_begin:lhs_end]`` to ``shape_like.shape[rhs_begin:rhs_end]``."""
    return _call("reshape_like", [data, shape_like],
                 ReshapeLikeAttrs(lhs_begin=lhs_begin, lhs_end=lhs_end, rhs_begin=rhs_begin,
                                  rhs_end=rhs_end))


# --------------------------------------------------------------------------- transpose & co
def _transpose_axes(ndim, axes):
    if axes is None or len(axes) == 0:
        return tuple(reversed(range(ndim)))
    if len(axes) != ndim:
        raise ValueError(f"transpose: axes {list(axes)} must name each of the {ndim} dims once")
    norm = tuple(normalize_axis(a, ndim, "transpose") for a in axes)
    if sorted(norm) != list(range(ndim)):
        raise ValueError(f"transpose: axes {list(axes)} is not a permutation of {ndim} dims")
    return norm


def _transpose_rel(arg_types, attrs):
    check_num_args("transpose", arg_types, 1)
    t = tensor_arg(arg_types, 0, "transpose")
    perm = _transpose_axes(len(t.shape), attrs.axes)
    return TensorType(tuple(t.shape[p] for p in perm), t.dtype)


define_op("transpose", _transpose_rel,
          lambda attrs, a, t: np.transpose(a[0], _transpose_axes(a[0].ndim, attrs.axes)),
          OpPattern.INJECTIVE, TransposeAttrs, 1, "Permute the dimensions of the data.")


def transpose(data, axes=None) -> Call:
    """Permute the dims of ``data`` (reverse them when ``axes`` is None)."""
    axes = None if axes is None else tuple(int(a) for a in axes)
    return _call("transpose", [data], TransposeAttrs(axes=axes))


def _expand_dims_rel(arg_types, attrs):
    check_num_args("expand_dims", arg_types, 1)
    t = tensor_arg(arg_types, 0, "expand_dims")
    ndim, n = len(t.shape), int(attrs.num_newaxis)
    if n < 0:
        raise ValueError(f"expand_dims: num_newaxis must be >= 0, got {n}")
    axis = int(attrs.axis)
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"expand_dims: axis {axis} is out of range [{-ndim - 1}, {ndim}] for "
                         f"{type_str(t)}")
    pivot = axis if axis >= 0 else axis + ndim + 1
    shape = t.shape[:pivot] + (1,) * n + t.shape[pivot:]
    return TensorType(shape, t.dtype)


define_op("expand_dims", _expand_dims_rel,
          lambda attrs, a, t: np.reshape(a[0], _static_out(_expand_dims_rel, attrs, a)),
          OpPattern.BROADCAST, ExpandDimsAttrs, 1, "Insert num_newaxis unit dims at axis.")


def expand_dims(data, axis: int, num_newaxis: int = 1) -> Call:
    """Insert ``num_newaxis`` dims of size 1 at ``axis``."""
    return _call("expand_dims", [data],
                 ExpandDimsAttrs(axis=int(axis), num_newaxis=int(num_newaxis)))


def _squeeze_axes(shape, axis):
    ndim = len(shape)
    if axis is None:
        return [i for i, d in enumerate(shape) if is_static_dim(d) and d == 1]
    out = []
    for a in axis:
        k = normalize_axis(a, ndim, "squeeze")
        d = shape[k]
        if is_static_dim(d) and d != 1:
            raise ValueError(f"squeeze: cannot squeeze axis {a} of shape {shape_str(shape)}: "
                             f"its dimension is {d}, not 1")
        out.append(k)
    return out


def _squeeze_rel(arg_types, attrs):
    check_num_args("squeeze", arg_types, 1)
    t = tensor_arg(arg_types, 0, "squeeze")
    drop = set(_squeeze_axes(t.shape, attrs.axis))
    return TensorType(tuple(d for i, d in enumerate(t.shape) if i not in drop), t.dtype)


define_op("squeeze", _squeeze_rel,
          lambda attrs, a, t: np.reshape(a[0], _static_out(_squeeze_rel, attrs, a)),
          OpPattern.INJECTIVE, SqueezeAttrs, 1, "Remove unit dims (all, or those in axis).")


def squeeze(data, axis=None) -> Call:
    """Remove dims of size 1 (those listed in ``axis``, or all)."""
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
        for d in known[1:]:
            if not dims_equal(d, known[0]):
                raise TypeError(f"concatenate: dimension {k} differs between inputs: "
                                f"{', '.join(type_str(f) for f in fields)}")
        out.append(known[0] if known else Any())
    return TensorType(tuple(out), fields[0].dtype)


def _tuple_arrays(args):
    return list(args[0]) if len(args) == 1 and isinstance(args[0], list | tuple) else list(args)


define_op("concatenate", _concatenate_rel,
          lambda attrs, a, t: np.concatenate(_tuple_arrays(a), axis=int(attrs.axis)),
          OpPattern.INJECTIVE, ConcatenateAttrs, 1, "Join a tuple of tensors along an axis.")


def _as_tuple(data, name):
    if isinstance(data, Expr):
        return data
    data = list(data)
    if not data:
        raise ValueError(f"relay.{name} requires data to be non-empty.")
    return Tuple(data)


def concatenate(data, axis: int) -> Call:
    """Concatenate a list/tuple of tensors along ``axis``."""
    if not isinstance(axis, int):
        raise ValueError("For now, we only support integer axis")
    return _call("concatenate", [_as_tuple(data, "concatenate")], ConcatenateAttrs(axis=axis))


def _stack_rel(arg_types, attrs):
    fields = _tuple_fields(arg_types, "stack")
    first = fields[0]
    for f in fields[1:]:
        if len(f.shape) != len(first.shape) or not all(
                isinstance(a, Any) or isinstance(b, Any) or dims_equal(a, b)
                for a, b in zip(f.shape, first.shape)):
            raise TypeError(f"stack: all inputs must have the same shape, got {type_str(first)} "
                            f"and {type_str(f)}")
    axis = normalize_axis(attrs.axis, len(first.shape), "stack", extra=1)
    shape = first.shape[:axis] + (len(fields),) + first.shape[axis:]
    return TensorType(shape, first.dtype)


define_op("stack", _stack_rel,
          lambda attrs, a, t: np.stack(_tuple_arrays(a), axis=int(attrs.axis)),
          OpPattern.INJECTIVE, StackAttrs, 1, "Stack a tuple of tensors along a new axis.")


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
            pieces = [_div_dim(d, ios)] * ios
    else:
        begin = 0
        for idx in ios:
            pieces.append(idx - begin)
            begin = idx
        pieces.append(d - begin if is_static_dim(d) else Any())
        if any(is_static_dim(p) and p < 0 for p in pieces):
            raise ValueError(f"split: indices {list(ios)} must be sorted and within axis size {d}")
    fields = []
    for p in pieces:
        shape = list(t.shape)
        shape[axis] = p
        fields.append(TensorType(shape, t.dtype))
    return TupleType(fields)


def _split_impl(attrs, args, out_type):
    ios = attrs.indices_or_sections
    return tuple(np.split(args[0], ios if isinstance(ios, int) else list(ios),
                          axis=int(attrs.axis)))


define_op("split", _split_rel, _split_impl, OpPattern.INJECTIVE, SplitAttrs, 1,
          "Split the data into sections (or at indices) along an axis.")


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
        return Any()
    return len(range(*slice(b, e, s).indices(d)))


def _strided_slice_rel(arg_types, attrs):
    check_num_args("strided_slice", arg_types, 1)
    t = tensor_arg(arg_types, 0, "strided_slice")
    params = slice_params(t.shape, attrs)
    shape = [(_slice_dim(d, *params[i]) if i in params else d) for i, d in enumerate(t.shape)]
    return TensorType(shape, t.dtype)


def _strided_slice_impl(attrs, args, out_type):
    x = args[0]
    params = slice_params(x.shape, attrs)
    index = tuple(slice(*params[i]) if i in params else slice(None) for i in range(x.ndim))
    return np.ascontiguousarray(x[index])


define_op("strided_slice", _strided_slice_rel, _strided_slice_impl, OpPattern.INJECTIVE,
          StridedSliceAttrs, 1, "Slice with begin/end/strides (negative strides reverse).")


def strided_slice(data, begin, end, strides=None, axes=None, slice_mode: str = "end") -> Call:
    """``data[begin:end:strides]`` on each axis (or on ``axes``); ``slice_mode`` end|size."""
    if slice_mode not in ("end", "size"):
        raise ValueError(f"strided_slice: slice_mode must be 'end' or 'size', got {slice_mode!r}")
    strides = strides or [1]
    attrs = StridedSliceAttrs(
        begin=_ints(begin, "strided_slice"), end=_ints(end, "strided_slice"),
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


define_op("layout_transform", _layout_transform_rel,
          lambda attrs, a, t: transform_array(a[0], attrs.src_layout, attrs.dst_layout),
          OpPattern.INJECTIVE, LayoutTransformAttrs, 1,
          "Convert the data between layouts (NCHW <-> NCHW16c, NHWC, ...).")


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


define_op("tile", _tile_rel, lambda attrs, a, t: np.tile(a[0], tuple(attrs.reps)),
          OpPattern.BROADCAST, TileAttrs, 1, "Repeat the whole tensor reps times per axis.")


def tile(data, reps) -> Call:
    """Construct a tensor by repeating ``data`` ``reps`` times along each axis."""
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


define_op("repeat", _repeat_rel,
          lambda attrs, a, t: np.repeat(a[0], int(attrs.repeats), axis=int(attrs.axis)),
          OpPattern.BROADCAST, RepeatAttrs, 1, "Repeat each element along an axis.")


def repeat(data, repeats: int, axis: int) -> Call:
    """Repeat each element of ``data`` ``repeats`` times along ``axis``."""
    return _call("repeat", [data], RepeatAttrs(repeats=int(repeats), axis=int(axis)))


def _reverse_rel(arg_types, attrs):
    check_num_args("reverse", arg_types, 1)
    t = tensor_arg(arg_types, 0, "reverse")
    normalize_axis(attrs.axis, len(t.shape), "reverse")
    return t


define_op("reverse", _reverse_rel, lambda attrs, a, t: np.flip(a[0], int(attrs.axis)).copy(),
          OpPattern.INJECTIVE, ReverseAttrs, 1, "Reverse the order of elements along an axis.")


def reverse(data, axis: int) -> Call:
    """Reverse the elements of ``data`` along ``axis``."""
    return _call("reverse", [data], ReverseAttrs(axis=int(axis)))


from .transform_index import *  # noqa: E402,F403
from .transform_index import __all__ as _index_all  # noqa: E402

__all__ += _index_all


# --------------------------------------------------------------------------- reverse_reshape
def _reverse_reshape_rel(arg_types, attrs):
    check_num_args("contrib_reverse_reshape", arg_types, 1)
    t = tensor_arg(arg_types, 0, "contrib_reverse_reshape")
    out = infer_reshape(tuple(reversed(t.shape)), tuple(reversed(attrs.newshape)),
                        attrs.allowzero)
    return TensorType(tuple(reversed(out)), t.dtype)


define_op("contrib_reverse_reshape", _reverse_reshape_rel,
          lambda attrs, a, t: np.reshape(a[0], _static_out(_reverse_reshape_rel, attrs, a)),
          OpPattern.INJECTIVE, ReshapeAttrs, 1,
          "Reshape with the special codes inferred from right to left.")


def reverse_reshape(data, newshape) -> Call:
    """Like ``reshape`` but special codes are matched from the right (MXNet semantics)."""
    return _call("contrib_reverse_reshape", [data],
                 ReshapeAttrs(newshape=_ints(newshape, "reverse_reshape")))


__all__ += ["reverse_reshape", "infer_reshape"]

# TVM's relay.op.transform also holds these; they are defined with the elementwise ops.
from .tensor import cast, cast_like, full, full_like, reinterpret, where  # noqa: E402,F401
