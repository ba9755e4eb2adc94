"""Indexing ops: ``take`` (gather along an axis, numpy.take) and ``strided_slice``."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

from ...ir.op import Op, OpPattern
from ...ir.prim_expr import IntImm
from ...tir import expr as T
from ..expr import Call, Expr
from ..struct_info import StructInfo, as_dim
from ._common import (
    UNKNOWN_NDIM,
    _ctx_analyzer,
    fail,
    fmt_sinfo,
    int_attr,
    is_int,
    is_uint,
    is_void,
    make_tensor,
    normalize_axes,
    normalize_axis,
    shape_expr_values,
    simplify,
    tensor_args,
)
from .base import register_op_rule
from .op_attrs import StridedSliceAttrs, TakeAttrs

__all__ = ["take", "strided_slice"]

# an end index at least this large means "to the end of the axis"
_TO_END = 2**31 - 1


def _infer_take(call: Call, ctx) -> StructInfo:
    x, idx = tensor_args(call, ["x", "indices"])
    if not is_void(idx.dtype) and not (is_int(idx.dtype) or is_uint(idx.dtype)):
        fail(call, f"requires integer indices, got {fmt_sinfo(idx)}")
    axis = call.attrs.axis
    if axis is None and x.ndim != 1:
        fail(call, f"without an axis the input must be 1-dimensional, got {fmt_sinfo(x)}")
    if x.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
    axis = normalize_axis(call, x.ndim, 0 if axis is None else axis)
    if idx.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
    ndim = x.ndim - 1 + idx.ndim
    xd, idd = shape_expr_values(x), shape_expr_values(idx)
    if xd is None or idd is None:
        return make_tensor(None, x.dtype, ndim, x.vdevice)
    return make_tensor(list(xd[:axis]) + list(idd) + list(xd[axis + 1:]), x.dtype,
                       vdevice=x.vdevice)


register_op_rule("relax.take", _infer_take, pattern=OpPattern.INJECTIVE, num_inputs=2,
                 arguments=("x", "indices"), attrs_type=TakeAttrs)


def take(x: Expr, indices: Expr, axis: int | None = None, mode: str = "fast") -> Call:
    """Take elements of ``x`` at ``indices`` along ``axis`` (numpy.take)."""
    if mode not in ("fast", "clip", "wrap", "nan"):
        raise ValueError(f"take: mode must be fast, clip, wrap or nan, got {mode!r}")
    return Call(Op.get("relax.take"), [x, indices],
                TakeAttrs(axis=None if axis is None else int_attr(axis, "relax.take's axis"),
                          mode=mode))


def _canon_index(i: int, n):
    """Index ``i`` of a symbolic axis of length ``n >= 0`` clamped into [0, n]."""
    if i >= _TO_END:
        return n
    if i == 0:
        return IntImm(n.dtype, 0)
    if i > 0:
        return T.Min(IntImm(n.dtype, i), n)
    return T.Max(T.Add(n, IntImm(n.dtype, i)), IntImm(n.dtype, 0))


def _slice_len(b, e, s, n, ctx):
    if isinstance(n, IntImm):
        return IntImm(n.dtype, len(range(*slice(b, e, s).indices(n.value))))
    if s < 0:  # a reversed slice: bounds canonicalized into [-1, n - 1], as TVM's topi does
        return _symbolic_slice_len(b, e, s, n, False, ctx)
    lo, hi = _canon_index(b, n), _canon_index(e, n)
    diff = T.Sub(hi, lo) if not (isinstance(lo, IntImm) and lo.value == 0) else hi
    if s != 1:
        diff = T.FloorDiv(T.Add(diff, IntImm(n.dtype, s - 1)), IntImm(n.dtype, s))
    return simplify(diff, ctx)


def _inbound_len(b: int, e: int, s: int, n):
    """The length of ``b:e:s`` taken as given (``assume_inbound``) on a symbolic axis ``n``:
    ceil((e - b) / s) when both bounds are non-negative and the stride positive (``x[:1]`` of
    a batch the exporter proved at least 2 has length 1, not ``min(n, 1)``); None otherwise
    (a negative bound still counts from the end)."""
    if isinstance(n, IntImm) or s <= 0 or b < 0 or e < 0:
        return None
    return IntImm(as_dim(n).dtype, max(0, -(-(e - b) // s)))


def canon_index_expr(i, n, s: int, ctx=None):
    """A symbolic index ``i`` into an axis of length ``n`` as the position it reads: negative
    counts from the end, then clamped into [0, n] (stride ``s`` > 0) or [-1, n - 1] (``s`` < 0),
    as TVM's topi canonicalizes slice bounds."""
    i, n = as_dim(i), as_dim(n)
    if i.dtype != n.dtype:
        i = T.Cast(n.dtype, i)
    zero = IntImm(n.dtype, 0)
    wrapped = T.Select(T.LT(i, zero), T.Add(i, n), i)
    lo, hi = (zero, n) if s > 0 else (IntImm(n.dtype, -1), T.Sub(n, IntImm(n.dtype, 1)))
    with _dim_scope(n, ctx):
        return simplify(T.Min(T.Max(wrapped, lo), hi), ctx)


@contextmanager
def _dim_scope(n, ctx):
    """Simplify knowing that the axis length ``n`` is not negative (``x[m:n]`` then reads
    up to ``n``, not a clamped select)."""
    an = _ctx_analyzer(ctx)
    if an is None or not hasattr(an, "constraint_scope"):
        yield
        return
    with an.constraint_scope(T.GE(n, IntImm(n.dtype, 0))):
        yield


def _symbolic_slice_len(b, e, s: int, n, assume_inbound: bool, ctx):
    """Length of ``b:e:s`` on an axis of length ``n`` when ``b`` or ``e`` is a PrimExpr:
    ceil((end - begin) / stride) of the canonicalized bounds, at least 0 (``assume_inbound``:
    the bounds are taken as given, as TVM does)."""
    n = as_dim(n)
    if assume_inbound:
        lo, hi = as_dim(b), as_dim(e)
    else:
        lo, hi = canon_index_expr(b, n, s, ctx), canon_index_expr(e, n, s, ctx)
    span, step = (T.Sub(hi, lo), s) if s > 0 else (T.Sub(lo, hi), -s)
    if span.dtype != n.dtype:
        span = T.Cast(n.dtype, span)
    if step != 1:
        span = T.FloorDiv(T.Add(span, IntImm(n.dtype, step - 1)), IntImm(n.dtype, step))
    with _dim_scope(n, ctx):
        return simplify(span if assume_inbound else T.Max(span, IntImm(n.dtype, 0)), ctx)


def _infer_strided_slice(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["x"])
    a = call.attrs
    if not a.axes:
        return x
    if x.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
    axes = normalize_axes(call, x.ndim, a.axes)
    dims = shape_expr_values(x)
    if dims is None:
        return make_tensor(None, x.dtype, x.ndim, x.vdevice)
    strides = a.strides if a.strides is not None else (1,) * len(axes)
    out = list(dims)
    for k, ax in enumerate(axes):
        b, e, s = a.begin[k], a.end[k], strides[k]
        if not isinstance(s, int):  # a symbolic stride: its sign, and so the length, unknown
            return make_tensor(None, x.dtype, x.ndim, x.vdevice)
        if s == 0:
            fail(call, "strides must be non-zero")
        if isinstance(b, int) and isinstance(e, int):
            length = _inbound_len(b, e, s, dims[ax]) if a.assume_inbound else None
            if length is None:
                length = _slice_len(b, e, s, dims[ax], ctx)
        else:
            length = _symbolic_slice_len(b, e, s, dims[ax], a.assume_inbound, ctx)
        if length is None:
            return make_tensor(None, x.dtype, x.ndim, x.vdevice)
        out[ax] = length
    return make_tensor(out, x.dtype, vdevice=x.vdevice)


register_op_rule("relax.strided_slice", _infer_strided_slice, pattern=OpPattern.INJECTIVE,
                 num_inputs=1, arguments=("x",), attrs_type=StridedSliceAttrs)


def _index_values(vals, what: str) -> tuple:
    out = []
    for v in vals:
        d = as_dim(v)
        out.append(d.value if isinstance(d, IntImm) else d)
    return tuple(out)


def strided_slice(x: Expr, axes: Sequence[int], begin: Sequence, end: Sequence,
                  strides: Sequence | None = None, assume_inbound: bool = False) -> Call:
    """Slice ``x`` along ``axes`` from ``begin`` (inclusive) to ``end`` by ``strides``."""
    axes = tuple(int(v) for v in axes)
    begin, end = _index_values(begin, "begin"), _index_values(end, "end")
    for name, vals in (("begin", begin), ("end", end), ("strides", strides)):
        if vals is not None and len(vals) != len(axes):
            raise ValueError(f"strided_slice: {name} must have one value per axis "
                             f"({len(axes)}), got {len(vals)}")
    if strides is not None:
        strides = _index_values(strides, "strides")
    return Call(Op.get("relax.strided_slice"), [x],
                StridedSliceAttrs(axes=axes, begin=begin, end=end, strides=strides,
                                  assume_inbound=bool(assume_inbound)))
