"""ATen ops whose result shape depends on the data, onto Relay (the model then runs on the
Relay VM, as in TVM): ``_unique2`` / ``unique_dim`` / ``unique_consecutive`` (``torch.unique``
flattened or along ``dim``, ``torch.unique_consecutive``: ``frontend_common.unique_plan`` on
Relay's ``unique``, a native kernel, its padded outputs sliced to the count), ``nonzero``
(Relay's ``argwhere``, int64) and ``bincount`` (an add-scatter into zeros of the run-time
length)."""

from __future__ import annotations

import numpy as np

from ....frontend_common import unique_plan
from ... import expr as _expr
from ... import op as _op
from ..unique_native import RelayUnique
from .aten import register


def _plan_failure(ctx, fn, *args):
    try:
        return fn(RelayUnique, *args)
    except ValueError as e:
        raise ctx.fail(str(e)) from None


@register("_unique2")
def _unique2(ctx, args):
    """_unique2(input, sorted, return_inverse, return_counts) -> (values, inverse, counts),
    the values sorted (torch sorts them on CPU whatever ``sorted`` says), each NaN its own
    value (after +inf), inverse in the input's shape, the indices int64."""
    x = args[0]
    shape = ctx.shape(x)
    flat = x if len(shape) == 1 else _op.reshape(x, (-1,))
    n = int(np.prod(shape, dtype="int64"))
    values, _, inverse, counts = _plan_failure(ctx, unique_plan.unique_elements, flat, n,
                                               ctx.dtype(x), True, False)
    if len(shape) != 1:
        inverse = _op.reshape(inverse, [int(s) for s in shape])
    return values, inverse, counts


@register("unique_dim")
def _unique_dim(ctx, args):
    """unique_dim(input, dim, sorted, return_inverse, return_counts) -> (values, inverse,
    counts): the unique slices along ``dim`` in lexicographic order (torch sorts them whatever
    ``sorted`` says), a slice holding a NaN unequal to every other."""
    x = args[0]
    values, _, inverse, counts = _plan_failure(ctx, unique_plan.unique_slices, x, ctx.shape(x),
                                               ctx.dtype(x), args[1], True, False)
    return values, inverse, counts


@register("unique_consecutive")
def _unique_consecutive(ctx, args):
    """unique_consecutive(input, return_inverse, return_counts, dim=None) -> (values, inverse,
    counts): runs of equal elements (flattened; inverse in the input's shape) or of equal
    slices along ``dim``."""
    x = args[0]
    shape = ctx.shape(x)
    dim = args[3] if len(args) > 3 else None
    if dim is not None:
        values, _, inverse, counts = _plan_failure(ctx, unique_plan.unique_consecutive, x,
                                                   shape, dim)
        return values, inverse, counts
    flat = x if len(shape) == 1 else _op.reshape(x, (-1,))
    n = int(np.prod(shape, dtype="int64"))
    values, _, inverse, counts = _plan_failure(ctx, unique_plan.unique_consecutive, flat, [n], 0)
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


@register("bincount")
def _bincount(ctx, args):
    """bincount(input [n] non-negative ints, weights=None, minlength=0): the count (int64) or
    the summed weights (their dtype) of each value ``0 .. max(max(input) + 1, minlength) - 1``;
    an add-scatter into zeros of that run-time length (an ``arange`` up to it)."""
    x = args[0]
    weights = args[1] if len(args) > 1 and isinstance(args[1], _expr.Expr) else None
    minlength = int(args[2]) if len(args) > 2 and args[2] is not None else 0
    shape = ctx.shape(x)
    if len(shape) != 1 or not ctx.dtype(x).startswith(("int", "uint")):
        raise ctx.fail(f"expects a 1-D integer input, got shape {shape} of {ctx.dtype(x)}")
    if shape[0] == 0:
        raise ctx.fail("an empty input is not supported")
    dtype = "int64" if weights is None else ctx.dtype(weights)
    index = _op.cast(x, "int64")
    top = _op.add(_op.max(index), _expr.const(1, "int64"))
    length = _op.maximum(top, _expr.const(minlength, "int64"))
    zeros = _op.zeros_like(_op.cast(_op.arange(_expr.const(0, "int64"), length,
                                               _expr.const(1, "int64"), "int64"),
                                    dtype))
    updates = weights if weights is not None else _op.ones_like(_op.cast(x, dtype))
    return _op.scatter_elements(zeros, index, updates, 0, "add")
