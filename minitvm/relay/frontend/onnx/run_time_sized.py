"""The run-time forms of ONNX ops whose output sizes an input's values give: OneHot's depth,
Pad's pads, Split's sizes, Trilu's k and ConstantOfShape's shape, computed at run time (from a
dynamic batch's ``Shape``, or from data in an import with run-time sizes). Each builds the
``dyn.*`` op TVM's importer builds (``dyn.one_hot``, ``dyn.nn.pad``, ``dyn.full``) or the
index arithmetic over ``shape_of`` a slice needs; the output's run-time sizes are
``relay.Any()``, and the Relay VM computes them at each call."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ...op import dyn as _dyn
from .dynamic_dim import DynamicDim
from .registry import Context
from .shape_values import SizeOf

__all__ = ["one_hot", "pad", "split", "split_evenly", "trilu_mask", "full"]


def _i64(ctx: Context, v: int):
    return ctx.const(np.array(v, "int64"))


def _scalar(ctx: Context, e, dtype: str = "int64"):
    """The one element of the scalar or 1-element tensor ``e`` (folded), as ``dtype``."""
    return _op.cast(_op.reshape(ctx.fold(e), ()), dtype)


def _size(x, axis: int):
    """Axis ``axis`` of ``x``'s run-time shape, an int64 scalar."""
    return _op.take(_op.shape_of(x, "int64"), _expr.const(np.array(axis, "int64")))


def one_hot(ctx: Context, idx, depth, on, off, axis: int, dtype: str):
    """``dyn.one_hot`` of ``idx`` with a run-time ``depth``: negative indices count from it
    (ONNX), the new axis' size is ``relay.Any()``."""
    d = _scalar(ctx, depth, ctx.dtype(idx))
    zero = ctx.const(np.array(0, ctx.dtype(idx)))
    idx = _op.where(_op.less(idx, zero), _op.add(idx, d), idx)
    return _dyn.one_hot(idx, on, off, _op.cast(d, "int64"), axis, dtype)


def _nonnegative(ctx: Context, pads) -> bool:
    """Whether every element of ``pads`` is known to be >= 0: a constant, or an axis' run-time
    size as it is (no arithmetic on it)."""
    elems = ctx.elements(pads)
    if elems is None:
        return False
    return all(v.tensor is not None if isinstance(v, SizeOf) else int(v) >= 0
               for v in elems.ravel())


def pad(ctx: Context, x, pads, value, axes: list[int], mode: str):
    """Pad ``x`` by ``pads`` (ONNX's [begin per axis..., end per axis...] over ``axes``)
    computed at run time: ``dyn.nn.pad`` by the non-negative part, after a crop by the negative
    part (a ``strided_slice`` to ``shape_of(x)``) unless the pads are known non-negative;
    ``wrap`` gathers each axis at ``arange(-begin, n + end) mod n``."""
    nd = len(ctx.shape(x))
    k = len(axes)
    given = _op.transpose(_op.reshape(_op.cast(ctx.fold(pads), "int64"), [2, k]))  # (k, 2)
    if axes == list(range(nd)):
        width = given
    else:  # (one row per axis: the given ones where ``axes`` says, zeros elsewhere)
        zeros = ctx.const(np.zeros((1, 2), "int64"))
        rows = [zeros] * nd
        for i, a in enumerate(axes):
            rows[a] = _op.take(given, ctx.const(np.array([i], "int64")), axis=0)
        width = _op.concatenate(rows, axis=0)
    zero = _i64(ctx, 0)
    if not _nonnegative(ctx, pads):
        crop = _op.maximum(_op.negative(width), zero)
        begin = _op.take(crop, _i64(ctx, 0), axis=1)
        end = _op.subtract(_op.shape_of(x, "int64"), _op.take(crop, _i64(ctx, 1), axis=1))
        x = _op.strided_slice(x, begin, end, [1] * nd)
        width = _op.maximum(width, zero)
    if mode == "wrap":
        return _wrap(ctx, x, width, nd)
    return _dyn.nn.pad(x, width, value, pad_mode=mode)


def _wrap(ctx: Context, x, width, nd: int):
    """Circular padding by run-time widths: each axis gathered at ``arange(-b, n + e) mod n``
    (an axis padded by nothing gathers ``arange(n)``, itself)."""
    for a in range(nd):
        row = _op.take(width, _i64(ctx, a), axis=0)
        b, e = (_op.take(row, _i64(ctx, j)) for j in (0, 1))
        n = _size(x, a)
        at = _op.arange(_op.negative(b), _op.add(n, e), dtype="int64")
        x = _op.take(x, _op.floor_mod(at, n), axis=a)
    return x


def _part(ctx: Context, x, axis: int, begin, end):
    """``x[begin:end]`` along ``axis`` (int64 scalars at run time): a take of
    ``arange(begin, end)``, which keeps every other axis' size in the type."""
    return _op.take(x, _op.arange(begin, _op.maximum(end, begin), dtype="int64"), axis=axis)


def split(ctx: Context, x, sizes, axis: int, n: int) -> list:
    """Split ``x`` along ``axis`` into ``n`` parts of ``sizes`` (a 1-D tensor computed at run
    time): part i from the sum of the sizes before it."""
    sizes = _op.cast(_op.reshape(ctx.fold(sizes), [-1]), "int64")
    begin, out = _i64(ctx, 0), []
    for i in range(n):
        end = _op.add(begin, _op.take(sizes, _i64(ctx, i)))
        out.append(_part(ctx, x, axis, begin, end))
        begin = end
    return out


def split_evenly(ctx: Context, x, axis: int, n: int) -> list:
    """Split the run-time-sized ``axis`` of ``x`` into ``n`` parts of ceil(size / n), the last
    one smaller (ONNX's ``num_outputs``; without it the size must divide evenly)."""
    size = _size(x, axis)
    chunk = _op.floor_divide(_op.add(size, _i64(ctx, n - 1)), _i64(ctx, n))
    return [_part(ctx, x, axis, _op.minimum(_op.multiply(chunk, _i64(ctx, i)), size),
                  _op.minimum(_op.multiply(chunk, _i64(ctx, i + 1)), size))
            for i in range(n)]


def trilu_mask(ctx: Context, x, k, upper: bool):
    """The boolean mask of Trilu's kept elements over ``x``'s last two axes, ``k`` an int64
    scalar expression: column - row >= k (upper) or <= k (lower); the sizes read at run time
    where they are ``relay.Any()``."""
    shape = ctx.shape(x)
    h, w = shape[-2:]
    if isinstance(h, DynamicDim) or isinstance(w, DynamicDim):
        nd = len(shape)
        rows = _op.expand_dims(_op.arange(_size(x, nd - 2), dtype="int64"), 1)
        cols = _op.expand_dims(_op.arange(_size(x, nd - 1), dtype="int64"), 0)
        diff = _op.subtract(cols, rows)
    else:
        diff = ctx.const(np.arange(w, dtype="int64")[None, :] - np.arange(h, dtype="int64")[:, None])
    return _op.greater_equal(diff, k) if upper else _op.less_equal(diff, k)


def full(ctx: Context, value: np.generic, shape):
    """``dyn.full`` of ``value`` to ``shape`` (a 1-D integer tensor computed at run time)."""
    return _dyn.full(ctx.const(np.asarray(value)), _op.cast(ctx.fold(shape), "int64"),
                     str(np.asarray(value).dtype))
