"""ONNX's ``Unique`` on Relay, as TVM imports it: Relay's ``unique`` (flattened, or a 1-D
input; sorted or in order of first occurrence) gives outputs padded to the input's length and
the count, then each is sliced to the count. The result's length depends on the data, so the
model runs on the Relay VM, as in TVM; ``unique`` is a native kernel for float32 / int32 / int64
(``schedule.unique_sort``: a radix sort and one scan)."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from .registry import register


@register("Unique")
def _unique(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    axis = attrs.get("axis")
    if axis is not None and not (len(shape) == 1 and int(axis) in (0, -1)):
        raise ctx.fail(f"Unique along axis {axis} of a rank-{len(shape)} input: Relay's unique "
                       "takes the flattened input only (the Relax importer takes an axis)")
    flat = _op.reshape(x, [-1]) if len(shape) != 1 else x
    values, first, inverse, count, counts = _op.unique(flat, bool(attrs.get("sorted", 1)), True)

    def head(t):
        return _op.strided_slice(t, ctx.const(np.asarray([0], "int32")), count)

    return [head(values), _op.cast(head(first), "int64"), _op.cast(inverse, "int64"),
            _op.cast(head(counts), "int64")]
