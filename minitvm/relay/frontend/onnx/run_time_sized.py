"""The run-time forms of ONNX ops whose output sizes an input's values give: OneHot's depth,
Pad's pads (and axes), Split's sizes, Trilu's k and ConstantOfShape's shape, computed at run time (from a
dynamic batch's ``Shape``, or from data in an import with run-time sizes). Each builds the
``dyn.*`` op TVM's importer builds (``dyn.one_hot``, ``dyn.nn.pad``, ``dyn.full``) or the
index arithmetic over ``shape_of`` a slice needs; the output's run-time sizes are
``relay.Any()``, and the Relay VM computes them at each call. Sizes ONNX rejects (split sizes
not adding up to the axis, a depth <= 0, a pad past the input, a negative shape) are checked
where they are read (``checked``: a ``run_time_check`` naming the node and the values) rather
than clipped or repeated into a silent answer, as onnxruntime raises."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ...op import dyn as _dyn
from .dynamic_dim import DynamicDim
from .registry import Context
from .shape_values import SizeOf

__all__ = ["checked", "one_hot", "pad", "split", "split_evenly", "trilu_mask", "full",
           "non_negative_shape"]


def _i64(ctx: Context, v: int):
    return ctx.const(np.array(v, "int64"))


def _scalar(ctx: Context, e, dtype: str = "int64"):
    """The one element of the scalar or 1-element tensor ``e`` (folded), as ``dtype``."""
    return _op.cast(_op.reshape(ctx.fold(e), ()), dtype)


def checked(ctx: Context, value, ok, message: str, shown: list):
    """``value`` once ``ok`` (a bool scalar) holds at run time; else a ValueError of
    ``message`` (its ``{}``s filled by ``shown``'s values) naming the node."""
    where = ctx.where().replace("{", "{{").replace("}", "}}")
    return _op.run_time_check(value, ok, f"{where}: {message}", shown)


def _size(x, axis: int):
    """Axis ``axis`` of ``x``'s run-time shape, an int64 scalar."""
    return _op.take(_op.shape_of(x, "int64"), _expr.const(np.array(axis, "int64")))


def one_hot(ctx: Context, idx, depth, on, off, axis: int, dtype: str):
    """``dyn.one_hot`` of ``idx`` with a run-time ``depth``: negative indices count from it
    (ONNX), the new axis' size is ``relay.Any()``."""
    d = _scalar(ctx, depth, ctx.dtype(idx))
    zero = ctx.const(np.array(0, ctx.dtype(idx)))
    d = checked(ctx, d, _op.greater(d, zero), "depth {} must be positive", [d])
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


def pad(ctx: Context, x, pads, value, axes, mode: str):
    """Pad ``x`` by ``pads`` (ONNX's [begin per axis..., end per axis...] over ``axes``: a list,
    or a 1-D tensor read at run time) computed at run time: ``dyn.nn.pad`` by the non-negative part and a ``strided_slice`` by
    the negative part (constant: pad, then crop, so a crop reaching into the padding keeps it,
    as onnxruntime; other modes: crop, then pad from what is left); ``wrap`` gathers each axis
    at ``arange(-begin, n + end) mod n``. Pads onnxruntime rejects raise (``_pads_checked``)."""
    nd = len(ctx.shape(x))
    k = len(axes) if isinstance(axes, list) else _axes_count(ctx, axes)
    given = _op.transpose(_op.reshape(_op.cast(ctx.fold(pads), "int64"), [2, k]))  # (k, 2)
    if not isinstance(axes, list):
        width = _rows_at_run_time(ctx, given, axes, nd)
    elif axes == list(range(nd)):
        width = given
    else:  # (one row per axis: the given ones where ``axes`` says, zeros elsewhere)
        zeros = ctx.const(np.zeros((1, 2), "int64"))
        rows = [zeros] * nd
        for i, a in enumerate(axes):
            rows[a] = _op.take(given, ctx.const(np.array([i], "int64")), axis=0)
        width = _op.concatenate(rows, axis=0)
    zero = _i64(ctx, 0)
    nonnegative = _nonnegative(ctx, pads)
    if not (nonnegative and mode == "constant"):
        width = _pads_checked(ctx, x, width, mode)
    if nonnegative:
        return _wrap(ctx, x, width, nd) if mode == "wrap" else \
            _dyn.nn.pad(x, width, value, pad_mode=mode)
    crop = _op.maximum(_op.negative(width), zero)
    grow = _op.maximum(width, zero)
    if mode == "constant":
        x = _dyn.nn.pad(x, grow, value, pad_mode=mode)
    x = _crop(ctx, x, crop, nd)
    if mode == "constant":
        return x
    return _wrap(ctx, x, grow, nd) if mode == "wrap" else \
        _dyn.nn.pad(x, grow, value, pad_mode=mode)


def _axes_count(ctx: Context, axes) -> int:
    """How many axes the 1-D ``axes`` tensor holds (its length must be static)."""
    shape = ctx.shape(axes)
    if len(shape) != 1 or isinstance(shape[0], DynamicDim):
        raise ctx.fail(f"Pad's axes {ctx.node.input[3]!r} read at run time must be a 1-D "
                       f"tensor of static length (its pads' count), got shape {shape}")
    return int(shape[0])


def _rows_at_run_time(ctx: Context, given, axes, nd: int):
    """The (nd, 2) pads of every axis from ``given`` (k rows) at ``axes`` read at run time
    (negatives counted from nd): each axis' row is the sum of the given rows naming it, zeros
    where none does. Axes outside [-nd, nd), or repeated, raise naming the node."""
    ax = _op.cast(_op.reshape(ctx.fold(axes), [-1]), "int64")
    ax = _op.where(_op.less(ax, _i64(ctx, 0)), _op.add(ax, _i64(ctx, nd)), ax)
    hits = _op.equal(_op.expand_dims(ctx.const(np.arange(nd, dtype="int64")), 1),
                     _op.expand_dims(ax, 0))  # (nd, k)
    ok = _op.logical_and(
        _op.all(_op.logical_and(_op.greater_equal(ax, _i64(ctx, 0)),
                                _op.less(ax, _i64(ctx, nd)))),
        _op.all(_op.less_equal(_op.sum(_op.cast(hits, "int64"), axis=1), _i64(ctx, 1))))
    given = checked(ctx, given, ok, f"the axes {{}} must be distinct, each in [{-nd}, {nd})",
                    [_op.cast(_op.reshape(ctx.fold(axes), [-1]), "int64")])
    return _op.sum(_op.multiply(_op.expand_dims(_op.cast(hits, "int64"), 2),
                                _op.expand_dims(given, 0)), axis=1)


def _crop(ctx: Context, x, crop, nd: int):
    """``x`` less ``crop`` (an (nd, 2) int64 tensor of non-negative begin / end counts)."""
    begin = _op.take(crop, _i64(ctx, 0), axis=1)
    end = _op.subtract(_op.shape_of(x, "int64"), _op.take(crop, _i64(ctx, 1), axis=1))
    return _op.strided_slice(x, begin, end, [1] * nd)


def _pads_checked(ctx: Context, x, width, mode: str):
    """``width`` (nd rows of begin, end) once its pads are valid for ``x`` at run time, as
    onnxruntime has them: no output size below 0; in the other modes no axis padded or
    cropped down to nothing, and for reflect no pad past the (cropped) size - 1."""
    zero = _i64(ctx, 0)
    n = _op.shape_of(x, "int64")
    b, e = (_op.take(width, _i64(ctx, j), axis=1) for j in (0, 1))
    ok = _op.greater_equal(_op.add(n, _op.add(b, e)), zero)
    rule = "an axis' output size is negative"
    if mode != "constant":
        kept = _op.add(n, _op.add(_op.minimum(b, zero), _op.minimum(e, zero)))
        idle = _op.logical_and(_op.equal(b, zero), _op.equal(e, zero))
        fits = _op.greater(kept, zero)
        rule += ", or an axis is padded with nothing left of it after the crop"
        if mode == "reflect":
            fits = _op.logical_and(fits, _op.logical_and(_op.less(b, kept), _op.less(e, kept)))
            rule += ", or a reflect pad is not below the axis' size (after the crop)"
        ok = _op.logical_and(ok, _op.logical_or(idle, fits))
    return checked(ctx, width, _op.all(ok), f"{mode} pads {{}} (begin, end per axis) do not "
                   f"fit the input of shape {{}}: {rule}", [width, n])


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
    time): part i from the sum of the sizes before it. Sizes that are not ``n`` values >= 0
    adding up to the axis' size raise at run time (a take of ``arange`` would clip or repeat
    rows)."""
    known = ctx.maybe_value(sizes)
    if known is not None:
        return _split_by_constants(ctx, x, [int(v) for v in np.ravel(known)], axis, n)
    sizes = _op.cast(_op.reshape(ctx.fold(sizes), [-1]), "int64")
    count = ctx.shape(sizes)[0]
    if not isinstance(count, DynamicDim) and count != n:
        raise ctx.fail(f"{count} split sizes for {n} outputs")
    total = _size(x, axis)
    ok = _op.logical_and(_op.equal(_op.sum(sizes), total),
                         _op.all(_op.greater_equal(sizes, _i64(ctx, 0))))
    if isinstance(count, DynamicDim):
        ok = _op.logical_and(ok, _op.equal(_size(sizes, 0), _i64(ctx, n)))
    sizes = checked(ctx, sizes, ok, f"the split sizes {{}} must be {n} values >= 0 adding up "
                    f"to {{}}, the size of axis {axis}", [sizes, total])
    begin, out = _i64(ctx, 0), []
    for i in range(n):
        end = _op.add(begin, _op.take(sizes, _i64(ctx, i)))
        out.append(_part(ctx, x, axis, begin, end))
        begin = end
    return out


def _split_by_constants(ctx: Context, x, sizes: list[int], axis: int, n: int) -> list:
    """Split the run-time-sized ``axis`` of ``x`` into parts of the constant ``sizes``: takes
    of constant positions (the parts' sizes stay in the type), each checked at run time
    against the axis' size."""
    if len(sizes) != n or min(sizes) < 0:
        raise ctx.fail(f"the split sizes {sizes} must be {n} values >= 0")
    total = _size(x, axis)
    ok = _op.equal(total, _i64(ctx, sum(sizes)))
    bounds = np.cumsum([0] + sizes)
    return [_op.take(x, checked(ctx, ctx.const(np.arange(b, e, dtype="int64")), ok,
                                f"the split sizes {sizes} add up to {sum(sizes)}, not to {{}}, "
                                f"the size of axis {axis}", [total]), axis=axis)
            for b, e in zip(bounds[:-1], bounds[1:], strict=True)]


def split_evenly(ctx: Context, x, axis: int, n: int, exact: bool = False) -> list:
    """Split the run-time-sized ``axis`` of ``x`` into ``n`` parts of ceil(size / n), the last
    one smaller (ONNX's ``num_outputs``); ``exact`` (no ``num_outputs``): the size must divide
    evenly, checked at run time, as onnxruntime."""
    size = _size(x, axis)
    if exact:
        ok = _op.equal(_op.floor_mod(size, _i64(ctx, n)), _i64(ctx, 0))
        size = checked(ctx, size, ok, f"the size {{}} of axis {axis} does not split evenly "
                       f"into {n} outputs", [size])
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
    """``dyn.full`` of ``value`` to ``shape`` (a 1-D integer tensor computed at run time); a
    negative size raises at run time."""
    shape = non_negative_shape(ctx, _op.cast(ctx.fold(shape), "int64"))
    return _dyn.full(ctx.const(np.asarray(value)), shape, str(np.asarray(value).dtype))


def non_negative_shape(ctx: Context, shape):
    """The int64 ``shape`` once none of its sizes is negative at run time (ConstantOfShape)."""
    ok = _op.all(_op.greater_equal(shape, _i64(ctx, 0)))
    return checked(ctx, shape, ok, "the shape {} has a negative size", [shape])
