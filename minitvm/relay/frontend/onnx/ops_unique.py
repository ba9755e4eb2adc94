"""ONNX's ``Unique`` on Relay, as TVM imports it: Relay's ``unique`` (flattened, or a 1-D
input; sorted or in order of first occurrence) gives outputs padded to the input's length and
the count, then each is sliced to the count. The result's length depends on the data, so the
model runs on the Relay VM, as in TVM; ``unique`` is a native kernel for float32 / int32 / int64
(``schedule.unique_sort``: a radix sort and one scan). Along an axis of a larger rank (a minitvm
addition; TVM's importer refuses it) the slices, as (n, m) rows, are ranked column by column
with the same op (each step the dense rank of ``rank * n + column rank``, int64), and the last
step's call gives the outputs, the values a ``take`` of the slices."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from .registry import register


@register("Unique")
def _unique(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    axis = attrs.get("axis")
    is_sorted = bool(attrs.get("sorted", 1))
    if axis is not None and len(shape) > 1:
        if not -len(shape) <= int(axis) < len(shape):
            raise ctx.fail(f"axis {axis} is out of range for a rank-{len(shape)} input")
        return _unique_slices(ctx, x, shape, int(axis) % len(shape), is_sorted)
    flat = _op.reshape(x, [-1]) if len(shape) != 1 else x
    return _outputs(ctx, _op.unique(flat, is_sorted, True))


def _outputs(ctx, result, source=None, axis: int = 0) -> list:
    """ONNX's four outputs from Relay's padded ``unique`` result, each sliced to the count; the
    values ``unique``'s own, or the slices of ``source`` along ``axis`` at the first indices."""
    values, first, inverse, count, counts = result

    def head(t):
        return _op.strided_slice(t, ctx.const(np.asarray([0], "int32")), count)

    first = head(first)
    values = head(values) if source is None else _op.take(source, first, axis=axis)
    return [values, _op.cast(first, "int64"), _op.cast(inverse, "int64"),
            _op.cast(head(counts), "int64")]


def _unique_slices(ctx, x, shape, axis: int, is_sorted: bool) -> list:
    n = shape[axis]
    if not all(isinstance(d, int) for d in shape):
        raise ctx.fail(f"Unique along an axis needs a static shape, got {shape}")
    m = int(np.prod([d for k, d in enumerate(shape) if k != axis]))
    perm = [axis] + [k for k in range(len(shape)) if k != axis]
    rows = _op.reshape(_op.transpose(x, perm) if axis else x, [n, m])
    rank = None
    for j in range(m):
        col = _op.take(rows, ctx.const(np.asarray(j, "int64")), axis=1)
        if rank is None:
            key = col
        else:
            col_rank = _op.cast(_op.unique(col, True, True)[2], "int64")
            key = _op.add(_op.multiply(rank, ctx.const(np.asarray(n, "int64"))), col_rank)
        if j == m - 1:
            return _outputs(ctx, _op.unique(key, is_sorted, True), x, axis)
        rank = _op.cast(_op.unique(key, True, True)[2], "int64")
    raise ctx.fail(f"Unique along axis {axis} of an input with empty slices: {shape}")
