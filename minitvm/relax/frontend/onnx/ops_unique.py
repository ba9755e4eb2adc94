"""ONNX's ``Unique`` on Relax: ``relax.unique`` (flattened or along an axis, sorted or in order
of first occurrence), all four outputs as int64 (the values in the input's type); their
lengths are run-time dims, and the op runs as the runtime's packed function, as TVM's does."""

from __future__ import annotations

from ... import op as _op
from ...expr import TupleGetItem
from .context import Context, register


@register("Unique")
def _unique(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    axis = attrs.get("axis")
    if axis is not None:
        rank = ctx.ndim(x)
        if not -rank <= int(axis) < rank:
            raise ctx.fail(f"axis {axis} is out of range for a rank-{rank} input")
        axis = int(axis) % rank
    out = ctx.emit(_op.unique(x, bool(attrs.get("sorted", 1)), True, True, True, axis))
    return [ctx.emit(TupleGetItem(out, k)) for k in range(4)]
