"""ONNX's ``Unique`` on Relay, as TVM imports it: Relay's ``unique`` (flattened, or a 1-D
input; sorted or in order of first occurrence) gives outputs padded to the input's length and
the count, then each is sliced to the count. The result's length depends on the data, so the
model runs on the Relay VM, as in TVM; ``unique`` is a native kernel for float32 / int32 / int64
(``schedule.unique_sort``: a radix sort and one scan; narrower integers are widened). Along an
axis of a larger rank (a minitvm addition; TVM's importer refuses it) the slices are ranked
column by column with the same op (``frontend_common.unique_plan``), the values a ``take`` of
the slices."""

from __future__ import annotations

from ....frontend_common import unique_plan
from ... import op as _op
from ..unique_native import RelayUnique
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
        plan = unique_plan.unique_slices
        args = (x, shape, ctx.dtype(x), int(axis) % len(shape), is_sorted, True)
    else:
        plan = unique_plan.unique_elements
        args = (_op.reshape(x, [-1]) if len(shape) != 1 else x, None, ctx.dtype(x), is_sorted,
                True)
    try:
        return list(plan(RelayUnique, *args))
    except ValueError as e:  # a symbolic or empty shape along an axis
        raise ctx.fail(str(e)) from None
