"""ONNX's ``Unique`` on Relax. Flattened (or a 1-D input) of float32 / int32 / int64: a
``call_tir`` of the native kernel (``schedule.unique_sort``: a radix sort and one scan) writing
the first-occurrence indices, inverse indices and counts, sliced to the data-dependent number of
values (a ``match_cast`` binds it), the values a ``take`` at the first occurrences. Along an
axis, or of other types: ``relax.unique``, which runs as the runtime's packed function, as
TVM's does. All four outputs; the indices int64, the values in the input's type."""

from __future__ import annotations

import numpy as np

from ....schedule.unique_sort import unique_prim_func
from ....tir import expr as E
from ....topi.unique import UNIQUE_DTYPES
from ... import op as _op
from ...expr import ShapeExpr, TupleGetItem, const
from ...struct_info import TensorStructInfo
from .context import Context, register


def _native(ctx: Context, x, is_sorted: bool) -> list:
    shape = ctx.shape(x)
    n = 1
    for d in shape:
        n = n * d
    flat = x if len(shape) == 1 else ctx.emit(_op.reshape(x, ShapeExpr([n])))
    dim = n if isinstance(n, int) else E.Var("n", "int64")
    gv = ctx.bb.add_func(unique_prim_func(dim, ctx.dtype(x), is_sorted), "onnx_unique")
    table = ctx.emit(_op.call_tir(gv, [flat], TensorStructInfo([n * 3 + 1], "int32")))
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
    inverse = ctx.emit(_op.strided_slice(table, [0], [n], [n * 2]))
    values = ctx.emit(_op.take(flat, first, 0))
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
    out = ctx.emit(_op.unique(x, is_sorted, True, True, True, axis))
    return [ctx.emit(TupleGetItem(out, k)) for k in range(4)]
