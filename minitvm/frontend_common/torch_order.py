"""torch's order statistics and scans that neither dialect has as one operator: ``median`` /
``nanmedian`` (a stable sort and a gather at the middle position), ``quantile`` /
``nanquantile`` (the same sort, gathers at the ranks below and above ``q (n - 1)``),
``cummax`` / ``cummin`` and ``logcumsumexp`` (an inclusive scan in ``ceil(log2 n)``
shift-and-combine steps, so each stays native and ``O(n log n)``), ``mode`` (an all-pairs
equality count), ``histc`` (bin numbers compared with every bin) and ``pdist`` (the distances
of the row pairs ``i < j``).

``b`` is the dialect's builder (see ``OrderBuilder``): elementwise maths go through ``b.ops``
(``relay.op`` or ``relax.op``, whose elementwise names agree); the few ops whose signatures
differ (slices, concatenation, sort, gather, constants) are its methods.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

__all__ = ["OrderBuilder", "cumulative_extreme", "histc", "logcumsumexp", "median", "mode", "pdist",
           "quantile"]


class OrderBuilder(Protocol):
    """What the helpers need from a dialect's importer."""

    ops: Any

    def const(self, value: np.ndarray) -> Any: ...
    def emit(self, e) -> Any: ...
    def slice_axis(self, x, axis: int, begin: int, end: int) -> Any: ...
    def concat(self, parts: list, axis: int) -> Any: ...
    def argsort(self, x, axis: int) -> Any: ...  # ascending, stable, int64
    def gather(self, x, indices, axis: int) -> Any: ...
    def cast(self, x, dtype: str) -> Any: ...


def _fill(b: OrderBuilder, shape, axis: int, width: int, value, dtype: str):
    block = list(shape)
    block[axis] = width
    return b.const(np.full(block, value, dtype=dtype))


def _static(shape) -> bool:
    return all(isinstance(d, int | np.integer) for d in shape)


def _shift(b: OrderBuilder, t, shape, axis: int, step: int, value, dtype: str):
    """``t`` moved ``step`` places up along ``axis``, the first ``step`` entries ``value``: a
    constant head for a static shape, else one filled like ``t``'s first ``step`` entries
    (a symbolic size off ``axis``, e.g. a dynamic batch)."""
    if _static(shape):
        head = _fill(b, shape, axis, step, value, dtype)
    else:
        head = b.ops.full_like(b.slice_axis(t, axis, 0, step),
                               b.const(np.array(value, dtype=dtype)))
    return b.emit(b.concat([head, b.slice_axis(t, axis, 0, shape[axis] - step)], axis))


def _lowest(dtype: str, largest: bool):
    if dtype.startswith("float"):
        return -np.inf if largest else np.inf
    info = np.iinfo(dtype)
    return info.min if largest else info.max


def cumulative_extreme(b: OrderBuilder, x, shape, dtype: str, axis: int, largest: bool):
    """torch.cummax (``largest``) / cummin along ``axis``: the running extreme and the int64
    index where it was last reached (a later equal entry takes over, as torch's does); a NaN
    takes over and then stays, its index moving on with each later NaN. ``shape[axis]`` must
    be an int (it sets the number of steps); the other sizes may be symbolic."""
    ops = b.ops
    n = shape[axis]
    index_shape = [1] * len(shape)
    index_shape[axis] = n
    positions = b.const(np.arange(n, dtype="int64").reshape(index_shape))
    zeros = (b.const(np.zeros(shape, "int64")) if _static(shape) else
             ops.full_like(b.cast(x, "int64"), b.const(np.array(0, "int64"))))
    idx = b.emit(ops.add(zeros, positions))
    val = b.emit(x)
    floor = _lowest(dtype, largest)
    step = 1
    while step < n:
        prev_val = _shift(b, val, shape, axis, step, floor, dtype)
        prev_idx = _shift(b, idx, shape, axis, step, 0, "int64")
        beats = (ops.greater_equal if largest else ops.less_equal)(val, prev_val)
        if dtype.startswith("float"):
            beats = ops.logical_or(ops.isnan(val), beats)
        beats = b.emit(beats)
        val = b.emit(ops.where(beats, val, prev_val))
        idx = b.emit(ops.where(beats, idx, prev_idx))
        step *= 2
    return val, idx


def logcumsumexp(b: OrderBuilder, x, shape, dtype: str, axis: int):
    """``log(cumsum(exp(x)))`` along ``axis`` without overflow or underflow: a scan of
    ``logaddexp(a, c) = max + log(1 + exp(min - max))`` (``-inf`` with ``-inf`` stays ``-inf``)."""
    ops = b.ops
    n = shape[axis]
    acc = b.emit(x)
    neg_inf = b.const(np.array(-np.inf, dtype))
    one = b.const(np.array(1.0, dtype))
    step = 1
    while step < n:
        prev = _shift(b, acc, shape, axis, step, -np.inf, dtype)
        hi = b.emit(ops.maximum(acc, prev))
        lo = ops.minimum(acc, prev)
        both = ops.add(hi, ops.log(ops.add(one, ops.exp(ops.subtract(lo, hi)))))
        acc = b.emit(ops.where(ops.equal(hi, neg_inf), hi, both))
        step *= 2
    return acc


def median(b: OrderBuilder, x, shape, dtype: str, axis: int, ignore_nan: bool):
    """torch.median (``ignore_nan`` False: the lower middle of the sorted slice, NaN when the
    slice holds one) or torch.nanmedian (the lower middle of the slice's numbers) along
    ``axis``, with its int64 index; keeps ``axis`` with size 1."""
    ops = b.ops
    n = shape[axis]
    is_float = dtype.startswith("float")
    if is_float:
        # NaN last, after +inf too: stably by NaN-ness, then stably by value with NaN as +inf
        nan = b.emit(ops.isnan(x))
        by_nan = b.emit(b.argsort(b.cast(nan, "int32"), axis))
        key = b.gather(ops.where(nan, b.const(np.array(np.inf, dtype)), x), by_nan, axis)
        order = b.emit(b.gather(by_nan, b.emit(b.argsort(b.emit(key), axis)), axis))
    else:
        order = b.emit(b.argsort(x, axis))
    kept = list(shape)
    kept[axis] = 1
    if is_float and ignore_nan:
        count = ops.sum(b.cast(ops.logical_not(nan), "int64"), axis=axis, keepdims=True)
        two = b.const(np.array(2, "int64"))
        middle = ops.maximum(ops.floor_divide(ops.subtract(count, b.const(np.array(1, "int64"))),
                                              two), b.const(np.array(0, "int64")))
    else:
        middle = b.const(np.full(kept, (n - 1) // 2, "int64"))
        if is_float:
            has_nan = ops.max(b.cast(nan, "int64"), axis=axis, keepdims=True)
            middle = ops.where(ops.greater(has_nan, b.const(np.array(0, "int64"))),
                               b.const(np.full(kept, n - 1, "int64")), middle)
    index = b.emit(b.gather(order, b.emit(middle), axis))
    return b.emit(b.gather(x, index, axis)), index


QUANTILE_INTERPOLATIONS = ("linear", "lower", "higher", "nearest", "midpoint")


def _nan_last_order(b: OrderBuilder, x, nan, dtype: str, axis: int):
    """The stable ascending order of ``x`` along ``axis`` with every NaN after +inf."""
    ops = b.ops
    by_nan = b.emit(b.argsort(b.cast(nan, "int32"), axis))
    key = b.gather(ops.where(nan, b.const(np.array(np.inf, dtype)), x), by_nan, axis)
    return b.emit(b.gather(by_nan, b.emit(b.argsort(b.emit(key), axis)), axis))


def quantile(b: OrderBuilder, x, shape, dtype: str, axis: int, qs: list, interpolation: str,
             ignore_nan: bool) -> list:
    """torch.quantile (``ignore_nan`` False) / torch.nanquantile of a float ``x`` along
    ``axis``, one result per scalar ``q`` expression in ``qs``, each keeping ``axis`` with size
    1. As torch computes it: the slice sorted with NaN last, the rank ``q (n - 1)`` (n the
    count of numbers for nanquantile; the last position, a NaN, where quantile's slice holds
    one), rounded per ``interpolation``, and the values at the ranks below and above mixed by
    torch's lerp (``a + w (b - a)`` below a weight of 0.5, ``b - (b - a)(1 - w)`` from it)."""
    if interpolation not in QUANTILE_INTERPOLATIONS:
        raise ValueError(f"quantile interpolation must be one of {QUANTILE_INTERPOLATIONS}, "
                         f"got {interpolation!r}")
    ops = b.ops
    n = shape[axis]
    kept = list(shape)
    kept[axis] = 1
    nan = b.emit(ops.isnan(x))
    ordered = b.emit(b.gather(x, _nan_last_order(b, x, nan, dtype, axis), axis))
    zero, half, one = (b.const(np.array(v, dtype)) for v in (0.0, 0.5, 1.0))
    if ignore_nan:
        count = ops.sum(b.cast(ops.logical_not(nan), dtype), axis=axis, keepdims=True)
        last = b.emit(ops.subtract(count, one))
    else:
        has_nan = b.emit(ops.greater(ops.max(b.cast(nan, "int32"), axis=axis, keepdims=True),
                                     b.const(np.array(0, "int32"))))
        last = b.const(np.full(kept, n - 1, dtype))
    out = []
    for q in qs:
        rank = ops.multiply(q, last)
        if ignore_nan:
            rank = ops.maximum(rank, zero)
        else:
            rank = ops.where(has_nan, last, rank)
        rank = b.emit(rank)
        rounding = {"lower": ops.floor, "higher": ops.ceil, "nearest": ops.round}.get(
            interpolation)
        if rounding is not None:
            rank = b.emit(rounding(rank))
        below = b.emit(b.gather(ordered, b.emit(b.cast(rank, "int64")), axis))
        if interpolation not in ("linear", "midpoint"):
            out.append(below)
            continue
        floor = b.cast(b.cast(rank, "int64"), dtype)
        weight = half if interpolation == "midpoint" else b.emit(ops.subtract(rank, floor))
        above = b.emit(b.gather(ordered, b.emit(b.cast(ops.ceil(rank), "int64")), axis))
        step = b.emit(ops.subtract(above, below))
        low_side = ops.add(below, ops.multiply(weight, step))
        high_side = ops.subtract(above, ops.multiply(step, ops.subtract(one, weight)))
        out.append(b.emit(ops.where(ops.less(ops.abs(weight), half), low_side, high_side)))
    return out


def pair_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The row pairs ``i < j`` of ``n`` rows in torch.pdist's order (row-major)."""
    i, j = np.triu_indices(n, 1)
    return i.astype("int64"), j.astype("int64")


def pdist(b: OrderBuilder, x, n: int, dtype: str, p: float, take):
    """torch.pdist of ``x`` [n, m]: the ``p``-norm distance of every row pair ``i < j``
    (``n (n - 1) / 2`` of them); ``take(x, indices)`` picks rows. p = 0 counts differing
    entries, p = inf is the largest difference."""
    ops = b.ops
    i, j = pair_indices(n)
    diff = b.emit(ops.abs(ops.subtract(take(x, b.const(i)), take(x, b.const(j)))))
    if p == 0:
        zero = b.const(np.array(0, dtype))
        return ops.sum(b.cast(ops.not_equal(diff, zero), dtype), axis=1)
    if math.isinf(p):
        return ops.max(diff, axis=1)
    if p == 1:
        return ops.sum(diff, axis=1)
    if p == 2:
        return ops.sqrt(ops.sum(ops.multiply(diff, diff), axis=1))
    power = b.const(np.array(p, dtype))
    total = ops.sum(ops.power(diff, power), axis=1)
    return ops.power(total, b.const(np.array(1.0 / p, dtype)))


def mode(b: OrderBuilder, x, shape, dtype: str, axis: int):
    """torch.mode along ``axis``: the most frequent value (the smallest of equally frequent
    ones) and the int64 index of its last occurrence, ``axis`` kept with size 1. Counts every
    pair of the slice (``n * n`` comparisons per slice)."""
    ops = b.ops
    n = shape[axis]
    same = ops.equal(ops.expand_dims(x, axis + 1), ops.expand_dims(x, axis))
    count = b.emit(ops.sum(b.cast(same, "int32"), axis=axis + 1))
    top = ops.max(count, axis=axis, keepdims=True)
    ceiling = b.const(np.array(_lowest(dtype, largest=False), dtype))
    value = b.emit(ops.min(ops.where(ops.equal(count, top), x, ceiling), axis=axis,
                           keepdims=True))
    index_shape = [1] * len(shape)
    index_shape[axis] = n
    position = b.const(np.arange(n, dtype="int64").reshape(index_shape))
    index = ops.max(ops.where(ops.equal(x, value), position, b.const(np.array(-1, "int64"))),
                    axis=axis, keepdims=True)
    return value, b.emit(index)


def histc(b: OrderBuilder, x, dtype: str, bins: int, lo: float, hi: float):
    """torch.histc of the 1-D ``x``: counts (in ``dtype``) in ``bins`` equal bins over
    ``[lo, hi]``, the top edge in the last bin, entries outside and NaN skipped. ``lo == hi``
    takes the data's minimum and maximum, widened by one each way when those are equal too."""
    ops = b.ops

    def scalar(v):
        return b.const(np.array(v, dtype))

    if lo == hi:
        low, high = b.emit(ops.min(x)), b.emit(ops.max(x))
        flat = b.emit(ops.equal(low, high))
        low = b.emit(ops.where(flat, ops.subtract(low, scalar(1.0)), low))
        high = b.emit(ops.where(flat, ops.add(high, scalar(1.0)), high))
    else:
        low, high = scalar(lo), scalar(hi)
    inside = ops.logical_and(ops.greater_equal(x, low), ops.less_equal(x, high))
    scaled = ops.divide(ops.multiply(ops.subtract(x, low), scalar(float(bins))),
                        ops.subtract(high, low))
    top = b.const(np.array(bins - 1, "int64"))
    number = ops.minimum(b.cast(ops.floor(scaled), "int64"), top)
    number = ops.where(inside, number, b.const(np.array(-1, "int64")))  # NaN: not inside
    hits = ops.equal(ops.expand_dims(b.emit(number), 1),
                     b.const(np.arange(bins, dtype="int64")))
    return ops.sum(b.cast(hits, dtype), axis=0)
