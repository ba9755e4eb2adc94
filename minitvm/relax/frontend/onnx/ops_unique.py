"""ONNX's ``Unique`` on Relax. Flattened (or a 1-D input) of float32 / int32 / int64: a
``call_tir`` of the native kernel (``schedule.unique_sort``: a radix sort and one scan; narrower
integers widened) writing the first-occurrence indices, inverse indices and counts, sliced to
the data-dependent number of values (a ``match_cast`` binds it), the values a ``take`` at the
first occurrences. Along an axis (static shapes): the slices ranked column by column with the
same kernel (``frontend_common.unique_plan``), for many narrow slices. Other types,
symbolic shapes, few or wide slices (where numpy's sort is faster): ``relax.unique``, which runs as the runtime's
packed function (numpy), as TVM's does. All four
outputs; the indices int64, the values in the input's type."""

from __future__ import annotations

from ....frontend_common import unique_plan
from ... import op as _op
from ...expr import TupleGetItem
from ..unique_native import RelaxUnique, unique_flat
from .context import Context, register

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
    native = unique_plan.key_dtype(ctx.dtype(x)) is not None
    if (axis is None or rank == 1) and native:
        return unique_flat(ctx, x, is_sorted)
    if native and _ranking_pays(ctx.shape(x), axis):
        return list(unique_plan.unique_slices(RelaxUnique(ctx, "onnx_unique"), x, ctx.shape(x),
                                              ctx.dtype(x), axis, is_sorted, True))
    out = ctx.emit(_op.unique(x, is_sorted, True, True, True, axis))
    return [ctx.emit(TupleGetItem(out, k)) for k in range(4)]
