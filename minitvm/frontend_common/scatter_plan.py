"""A scatter whose indices are known at import (a graph network's edge list, a fixed routing)
rewritten as a gather: for each output position along the axis, the update slices that land
there, padded to the largest count with a slice holding the reduction's identity. Then
``scatter_elements(x, idx, upd, axis, red)`` is ``combine(x, reduce(take(pad(upd), table),
axis + 1))``: a gather and a reduction, which lower natively and run in time linear in the
updates, where a scatter's compute compares every output with every update. Both dialects'
importers use the plan; numpy only."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# how much larger than the updates the padded table may grow (skewed counts fall back)
MAX_BLOWUP = 4


@dataclass(frozen=True)
class GatherPlan:
    """``table`` [extent, depth] of update slice numbers (``sentinel`` pads: the appended
    identity slice); for ``update``, ``hit`` [extent] marks the positions written."""

    table: np.ndarray
    sentinel: int
    hit: np.ndarray | None


def plan_scatter(index: np.ndarray, x_shape, axis: int, reduction: str) -> GatherPlan | None:
    """The gather plan of a scatter along ``axis`` by a known ``index``, or None when the index
    varies off the axis (it must be one 1-D index broadcast over the other axes), its shape
    differs from ``x``'s off the axis, or the padding would blow the work up."""
    index = np.asarray(index).astype(np.int64)
    if index.ndim != len(x_shape) or index.size == 0:
        return None
    if any(int(index.shape[d]) != int(x_shape[d]) for d in range(index.ndim) if d != axis):
        return None
    lead = tuple(0 if d != axis else slice(None) for d in range(index.ndim))
    idx1 = index[lead]
    shape1 = [1] * index.ndim
    shape1[axis] = idx1.shape[0]
    if not np.array_equal(np.broadcast_to(idx1.reshape(shape1), index.shape), index):
        return None
    extent = int(x_shape[axis])
    idx1 = np.where(idx1 < 0, idx1 + extent, idx1)
    if ((idx1 < 0) | (idx1 >= extent)).any():
        raise IndexError(f"scatter: an index is out of range for an axis of {extent}")
    n = idx1.shape[0]
    if reduction == "update":  # the last write wins, as a sequential scatter
        last = np.full(extent, n, np.int64)
        last[idx1] = np.arange(n)  # numpy assigns in order: the last duplicate stays
        return GatherPlan(last.reshape(extent, 1), n, last < n)
    counts = np.bincount(idx1, minlength=extent)
    depth = max(int(counts.max()), 1)
    if extent * depth > MAX_BLOWUP * (n + extent):
        return None
    order = np.argsort(idx1, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(n) - starts[idx1[order]]
    table = np.full((extent, depth), n, np.int64)
    table[idx1[order], slot] = order
    return GatherPlan(table, n, None)


def identity(reduction: str, dtype: str):
    """The value a padding slot holds: it leaves the reduction unchanged."""
    dt = np.dtype(dtype)
    big = np.inf if dt.kind == "f" else np.iinfo(dt).max
    small = -np.inf if dt.kind == "f" else np.iinfo(dt).min
    return {"add": 0, "mul": 1, "max": small, "min": big}[reduction]


def broadcasts_one_index_per_row(source_shape, index_shape, data_shape, axis: int) -> bool:
    """Whether a scatter along ``axis`` whose index is ``source`` broadcast to ``index_shape``
    moves whole rows: the axis is the leading one, ``source`` (its shape padded on the left
    with 1s) holds one index per row and 1s past it, and the index covers ``data``'s trailing
    dims (torch's ``scatter_add`` of ``idx[:, None].expand(..)``). Such a scatter is a
    ``scatter_nd`` of rows by ``source`` flattened. Dims are ints or symbolic sizes (the same
    object counts as equal)."""
    if axis != 0 or len(index_shape) < 2 or len(index_shape) != len(data_shape):
        return False
    if len(source_shape) > len(index_shape):
        return False
    padded = (1,) * (len(index_shape) - len(source_shape)) + tuple(source_shape)
    return (_same_dim(padded[0], index_shape[0])
            and all(_same_dim(d, 1) for d in padded[1:])
            and all(_same_dim(a, b) for a, b in zip(index_shape[1:], data_shape[1:])))


def _same_dim(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, int | np.integer) and isinstance(b, int | np.integer):
        return int(a) == int(b)
    return False
