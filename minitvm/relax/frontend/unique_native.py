"""Relax's native ``unique`` of a 1-D tensor, shared by the ONNX and torch importers: a
``call_tir`` of ``schedule.unique_sort`` (a radix sort and one scan) writing the
first-occurrence indices, inverse indices and counts as one int32 table, then sliced to the
data-dependent number of values (a ``match_cast`` binds it). ``ctx`` is the importer's context
(``bb``, ``emit``, ``shape``, ``dtype``). ``RelaxUnique`` is ``frontend_common.unique_plan``'s
builder on these."""

from __future__ import annotations

import numpy as np

from ...frontend_common import unique_plan
from ...schedule.unique_runs import unique_runs_outputs_prim_func
from ...schedule.unique_sort import unique_prim_func
from ...tir import expr as E
from ...topi.unique import UNIQUE_DTYPES
from .. import op as _op
from ..expr import Call, ShapeExpr, TupleGetItem, const
from ..struct_info import TensorStructInfo
from .common import RelaxBuilder

__all__ = ["RelaxUnique", "unique_flat", "unique_inverse", "unique_outputs", "unique_runs",
           "unique_table"]


def unique_table(ctx, flat, n, is_sorted: bool, name: str = "onnx_unique",
                 equal_nan: bool = True, consecutive: bool = False):
    """The kernel's [first | inverse | counts | count] int32 table of 1-D ``flat`` of ``n``
    (``equal_nan`` False: each NaN its own value, as torch's; ``consecutive``: the runs of
    equal neighbours, ``schedule.unique_runs``)."""
    dim = n if isinstance(n, int) else E.Var("n", "int64")
    gv = ctx.bb.add_func(unique_prim_func(dim, ctx.dtype(flat), is_sorted, equal_nan,
                                          consecutive), name)
    return ctx.emit(_op.call_tir(gv, [flat], TensorStructInfo([n * 3 + 1], "int32")))


def unique_runs(ctx, flat, n, name: str = "torch_unique_consecutive") -> list:
    """[first, inverse, counts] int64 of the runs of equal neighbours of 1-D ``flat`` of ``n``:
    one ``call_tir`` writing them into buffers of their own (``inverse`` whole, the others
    padded to ``n``) and the number of runs, then leading slices of its length (``num_runs``,
    bound by a match_cast) of ``first`` and ``counts``; nothing is cast or copied otherwise."""
    dim = n if isinstance(n, int) else E.Var("n", "int64")
    gv = ctx.bb.add_func(unique_runs_outputs_prim_func(dim, ctx.dtype(flat)), name)
    sinfo = [TensorStructInfo([n], "int64")] * 3 + [TensorStructInfo([1], "int64")]
    runs = ctx.emit(_op.call_tir(gv, [flat], sinfo))
    first, inverse, counts, count = (ctx.emit(TupleGetItem(runs, k)) for k in range(4))
    k = E.Var("num_runs", "int64")
    zero, one = (const(np.asarray([v], "int64")) for v in (0, 1))

    def leading(t):
        rows = ctx.emit(_op.dynamic_strided_slice(t, zero, count, one))
        return ctx.bb.match_cast(rows, TensorStructInfo([k], "int64"))

    return [leading(first), inverse, leading(counts)]


def unique_flat(ctx, x, is_sorted: bool, name: str = "onnx_unique",
                equal_nan: bool = True) -> list:
    """[values, first, inverse, counts] of ``x`` flattened (its type one the kernel's key holds,
    ``unique_plan.key_dtype``)."""
    shape = ctx.shape(x)
    n = 1
    for d in shape:
        n = n * d
    flat = x if len(shape) == 1 else ctx.emit(_op.reshape(x, ShapeExpr([n])))
    return list(unique_plan.unique_elements(RelaxUnique(ctx, name), flat, n, ctx.dtype(x),
                                            is_sorted, equal_nan))


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


class RelaxUnique(RelaxBuilder):
    """``frontend_common.unique_plan``'s builder: values bound through the importer's ``ctx``; a
    handle is the kernel's table and its length."""

    def __init__(self, ctx, name: str):
        super().__init__(ctx)
        self.name = name

    def emit(self, e):
        """``e`` bound to a variable (a variable or constant stays as it is)."""
        return self.ctx.emit(e) if isinstance(e, Call) else e

    @staticmethod
    def take(x, indices, axis: int):
        return _op.take(x, indices, axis)

    def rows(self, x, shape, axis: int):
        n = int(shape[axis])
        m = 1
        for k, d in enumerate(shape):
            m = m * int(d) if k != axis else m
        perm = [axis] + [k for k in range(len(shape)) if k != axis]
        moved = x if axis == 0 else self.ctx.emit(_op.permute_dims(x, perm))
        return self.ctx.emit(_op.reshape(moved, ShapeExpr([n, m])))

    def unique(self, key, n: int, is_sorted: bool, equal_nan: bool, consecutive: bool = False):
        key = self.emit(key)
        if consecutive:  # a handle of the runs' own outputs (``unique_runs``)
            return "runs", unique_runs(self.ctx, key, n, self.name), n
        if not consecutive and self.ctx.dtype(key) not in UNIQUE_DTYPES:
            raise ValueError(f"unique of {self.ctx.dtype(key)}: the native kernel takes "
                             f"{', '.join(UNIQUE_DTYPES)} (and the integer and 16-bit float "
                             "types it widens)")
        return unique_table(self.ctx, key, n, is_sorted, self.name,
                            equal_nan, consecutive), n

    def unique_inverse(self, handle):
        if handle[0] == "runs":
            return handle[1][1]
        table, n = handle
        return self.ctx.emit(_op.astype(unique_inverse(self.ctx, table, n), "int64"))

    def unique_outputs(self, handle, source, axis: int) -> tuple:
        if handle[0] == "runs":
            first, inverse, counts = handle[1]
            return self.ctx.emit(_op.take(self.emit(source), first, axis)), first, inverse, counts
        table, n = handle
        return tuple(unique_outputs(self.ctx, table, n, self.emit(source), axis))
