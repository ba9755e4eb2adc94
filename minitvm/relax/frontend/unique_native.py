"""Relax's native ``unique`` of a 1-D tensor, shared by the ONNX and torch importers: a
``call_tir`` of ``schedule.unique_sort`` (a radix sort and one scan) writing the
first-occurrence indices, inverse indices and counts as one int32 table, then sliced to the
data-dependent number of values (a ``match_cast`` binds it). ``ctx`` is the importer's context
(``bb``, ``emit``, ``shape``, ``dtype``)."""

from __future__ import annotations

import numpy as np

from ...schedule.unique_sort import unique_prim_func
from ...tir import expr as E
from .. import op as _op
from ..expr import ShapeExpr, const
from ..struct_info import TensorStructInfo

__all__ = ["unique_flat", "unique_inverse", "unique_outputs", "unique_table"]


def unique_table(ctx, flat, n, is_sorted: bool, name: str = "onnx_unique"):
    """The kernel's [first | inverse | counts | count] int32 table of 1-D ``flat`` of ``n``."""
    dim = n if isinstance(n, int) else E.Var("n", "int64")
    gv = ctx.bb.add_func(unique_prim_func(dim, ctx.dtype(flat), is_sorted), name)
    return ctx.emit(_op.call_tir(gv, [flat], TensorStructInfo([n * 3 + 1], "int32")))


def unique_flat(ctx, x, is_sorted: bool, name: str = "onnx_unique") -> list:
    """[values, first, inverse, counts] of ``x`` flattened."""
    shape = ctx.shape(x)
    n = 1
    for d in shape:
        n = n * d
    flat = x if len(shape) == 1 else ctx.emit(_op.reshape(x, ShapeExpr([n])))
    return unique_outputs(ctx, unique_table(ctx, flat, n, is_sorted, name), n, flat, 0)


def unique_inverse(ctx, table, n):
    """The table's ``n`` int32 inverse indices."""
    return ctx.emit(_op.strided_slice(table, [0], [n], [n * 2]))


def unique_outputs(ctx, table, n, source, axis: int) -> list:
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
    inverse = unique_inverse(ctx, table, n)
    values = ctx.emit(_op.take(source, first, axis))
    return [values] + [ctx.emit(_op.astype(t, "int64")) for t in (first, inverse, counts)]
