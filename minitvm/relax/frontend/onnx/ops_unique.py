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

from ....schedule.unique_sort import unique_prim_func
from ....tir import expr as E
from ....topi.unique import UNIQUE_DTYPES
from ... import op as _op
from ...expr import ShapeExpr, TupleGetItem, const
from ...struct_info import TensorStructInfo
from .context import Context, register


def _table(ctx: Context, flat, n, is_sorted: bool):
    """The kernel's [first | inverse | counts | count] int32 table of 1-D ``flat`` of ``n``."""
    dim = n if isinstance(n, int) else E.Var("n", "int64")
    gv = ctx.bb.add_func(unique_prim_func(dim, ctx.dtype(flat), is_sorted), "onnx_unique")
    return ctx.emit(_op.call_tir(gv, [flat], TensorStructInfo([n * 3 + 1], "int32")))


def _native(ctx: Context, x, is_sorted: bool) -> list:
    shape = ctx.shape(x)
    n = 1
    for d in shape:
        n = n * d
    flat = x if len(shape) == 1 else ctx.emit(_op.reshape(x, ShapeExpr([n])))
    return _outputs(ctx, _table(ctx, flat, n, is_sorted), n, flat, 0)


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
            col_rank = ctx.emit(_op.astype(_inverse(ctx, _table(ctx, col, n, True), n), "int64"))
            key = ctx.emit(_op.add(_op.multiply(rank, const(np.asarray(n, "int64"))), col_rank))
        table = _table(ctx, key, n, is_sorted if last else True)
        if last:
            return _outputs(ctx, table, n, x, axis)
        rank = ctx.emit(_op.astype(_inverse(ctx, table, n), "int64"))
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


def _inverse(ctx: Context, table, n):
    return ctx.emit(_op.strided_slice(table, [0], [n], [n * 2]))


def _outputs(ctx: Context, table, n, source, axis: int) -> list:
    """[values, first, inverse, counts] from ``table``; values taken from ``source``."""
    count = ctx.emit(_op.astype(ctx.emit(_op.strided_slice(table, [0], [n * 3], [n * 3 + 1])),
                                "int64"))
    k = E.Var("num_unique", "int64")

    def part(start):
        """The ``k`` entries of ``table`` from ``start`` (an int or a dim of the input)."""
        begin = const(np.asarray([start], "int64")) if isinstance(start, int) else \
            ctx.emit(_op.shape_to_tensor(ShapeExpr([start])))
        rows = ctx.emit(_op.dynamic_strided_slice(table, begin, ctx.emit(_op.add(begin, count)),
                                                  const(np.asarray([1], "int64"))))
        return ctx.bb.match_cast(rows, TensorStructInfo([k], "int32"))

    first, counts = part(0), part(n * 2)
    inverse = _inverse(ctx, table, n)
    values = ctx.emit(_op.take(source, first, axis))
    return [values] + [ctx.emit(_op.astype(t, "int64")) for t in (first, inverse, counts)]


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
        return _native(ctx, x, is_sorted)
    if ctx.dtype(x) in UNIQUE_DTYPES and _ranking_pays(ctx.shape(x), axis):
        return _native_axis(ctx, x, axis, is_sorted)
    out = ctx.emit(_op.unique(x, is_sorted, True, True, True, axis))
    return [ctx.emit(TupleGetItem(out, k)) for k in range(4)]
