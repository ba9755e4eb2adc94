"""ATen ops whose result shape depends on the data, onto Relay (the model then runs on the
Relay VM, as in TVM): ``_unique2`` (``torch.unique``, flattened: Relay's ``unique``, a native
kernel for float32 / int32 / int64, its padded outputs sliced to the count) and ``nonzero``
(Relay's ``argwhere``, int64)."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from .aten import register


@register("_unique2")
def _unique2(ctx, args):
    """_unique2(input, sorted, return_inverse, return_counts) -> (values, inverse, counts),
    the values sorted (torch sorts them on CPU whatever ``sorted`` says), inverse in the
    input's shape, the indices int64."""
    x = args[0]
    shape = ctx.shape(x)
    flat = x if len(shape) == 1 else _op.reshape(x, (-1,))
    values, _, inverse, count, counts = _op.unique(flat, True, True)
    start = _expr.const(np.asarray([0], "int32"))
    values = _op.strided_slice(values, start, count)
    counts = _op.cast(_op.strided_slice(counts, start, count), "int64")
    inverse = _op.cast(inverse, "int64")
    if len(shape) != 1:
        inverse = _op.reshape(inverse, [int(s) for s in shape])
    return values, inverse, counts


@register("nonzero")
def _nonzero(ctx, args):
    """The int64 ``[count, ndim]`` indices of the non-zero entries, in row-major order."""
    x = args[0]
    if not ctx.shape(x):
        raise ctx.fail("nonzero of a 0-d tensor is not supported")
    return _op.cast(_op.argwhere(x), "int64")
