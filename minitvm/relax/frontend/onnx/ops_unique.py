"""ONNX's ``Unique`` on Relax. Flattened (or a 1-D input) of float32 / int32 / int64: a
``call_tir`` of the native kernel (``schedule.unique_sort``: a radix sort and one scan) writing
the first-occurrence indices, inverse indices and counts, sliced to the data-dependent number of
values (a ``match_cast`` binds it), the values a ``take`` at the first occurrences. Along an
axis (static shapes): the slices ranked column by column with the same kernel (each step the
dense rank of ``previous rank * n + column rank``, so the last step's keys order the slices
lexicographically), whose last call gives the outputs, for many narrow slices. Other types,
symbolic shapes, few or wide slices (where numpy's sort is faster): ``relax.unique``, which runs as the runtime's
packed function (numpy), as TVM's does. All four
outputs; the indices int64, the values in the input's type."""

from __future__ import annotations

import numpy as np

from ....topi.unique import UNIQUE_DTYPES
from ... import op as _op
from ...expr import ShapeExpr, TupleGetItem, const
from ..unique_native import unique_flat, unique_inverse, unique_outputs, unique_table
from .context import Context, register


def _native_axis(ctx: Context, x, axis: int, is_sorted: bool) -> list:
    """Unique slices along ``axis``: the input as (n, m) rows, each row's lexicographic rank
    built column by column (the dense rank of ``rank * n + column rank``: below ``n ** 2``,
    int64), the last step's table (in the requested order) gives the outputs."""
    shape = ctx.shape(x)
    n = shape[axis]
    m = 1
    for k, d in enumerate(shape):
        m = m * d if k != axis else m
    perm = [axis] + [k for k in range(len(shape)) if k != axis]
    rows = x if axis == 0 else ctx.emit(_op.permute_dims(x, perm))
    rows = ctx.emit(_op.reshape(rows, ShapeExpr([n, m])))
    rank = None
    for j in range(m):
        col = ctx.emit(_op.take(rows, const(np.asarray(j, "int64")), 1))
        last = j == m - 1
        if rank is None:
            key = col
        else:
            col_table = unique_table(ctx, col, n, True)
            col_rank = ctx.emit(_op.astype(unique_inverse(ctx, col_table, n), "int64"))
            key = ctx.emit(_op.add(_op.multiply(rank, const(np.asarray(n, "int64"))), col_rank))
        table = unique_table(ctx, key, n, is_sorted if last else True)
        if last:
            return unique_outputs(ctx, table, n, x, axis)
        rank = ctx.emit(_op.astype(unique_inverse(ctx, table, n), "int64"))
    raise ctx.fail("an axis of no slices")  # (m == 0: not reached, zero-size inputs fail)


#: where ranking column by column (2 m - 1 kernel calls over n slices of m) beats numpy's sort
#: of the slices, one thread: 20000 x 6 rows 22.2 -> 4.3 ms, 1000 x 3 0.64 -> 0.26 ms; fewer
#: or wider slices lose to it (200 x 8: 0.21 -> 0.27 ms, 2000 x 40: 2.6 -> 3.5 ms)
RANKED_MAX_COLUMNS, RANKED_MIN_SLICES = 8, 512


def _ranking_pays(shape, axis: int) -> bool:
    """Static shape, and many narrow slices (``RANKED_*``) along ``axis``."""
    if not all(isinstance(d, int) and d > 0 for d in shape):
        return False
    m = 1
    for k, d in enumerate(shape):
        m = m * d if k != axis else m
    return m <= RANKED_MAX_COLUMNS and shape[axis] >= RANKED_MIN_SLICES


@register("Unique")
def _unique(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    axis = attrs.get("axis")
    rank = ctx.ndim(x)
    if axis is not None:
        if not -rank <= int(axis) < rank:
            raise ctx.fail(f"axis {axis} is out of range for a rank-{rank} input")
        axis = int(axis) % rank
    is_sorted = bool(attrs.get("sorted", 1))
    if (axis is None or rank == 1) and ctx.dtype(x) in UNIQUE_DTYPES:
        return unique_flat(ctx, x, is_sorted)
    if ctx.dtype(x) in UNIQUE_DTYPES and _ranking_pays(ctx.shape(x), axis):
        return _native_axis(ctx, x, axis, is_sorted)
    out = ctx.emit(_op.unique(x, is_sorted, True, True, True, axis))
    return [ctx.emit(TupleGetItem(out, k)) for k in range(4)]
