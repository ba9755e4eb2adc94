"""ONNX scatter operators on Relay: ScatterElements (and the deprecated Scatter), ScatterND.
Negative indices are wrapped; ONNX's reductions map onto Relay's scatter modes; a
ScatterElements whose index is constant becomes a gather and a reduction (``..scatter``)."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ..scatter import bool_reduced, scatter_elements
from .dynamic_dim import has_dynamic
from .ops_tensor import _normalize_indices
from .registry import Context, register

# ONNX ``reduction`` -> Relay ``reduction`` / ``mode``
_REDUCTION = {"none": "update", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _reduction(ctx: Context, attrs) -> str:
    red = attrs.get("reduction", "none")
    if red not in _REDUCTION:
        raise ctx.fail(f"reduction={red!r} is not one of {', '.join(_REDUCTION)}")
    return _REDUCTION[red]


@register("ScatterElements", "Scatter")
def _scatter_elements(ctx: Context, ins, attrs):
    data, idx, upd = ins
    shape = ctx.shape(data)
    axis = int(attrs.get("axis", 0))
    if not -len(shape) <= axis < len(shape):
        raise ctx.fail(f"axis {axis} is out of range for a rank-{len(shape)} input")
    axis %= len(shape)
    # an index known here (a graph network's edge list) imports as a gather and a reduction
    return scatter_elements(ctx, data, idx, upd, axis, _reduction(ctx, attrs))


def _nd_indices(ctx: Context, idx, data, dims):
    """ScatterND's index tuples (last axis) into ``data``'s leading ``dims`` with negative
    components counted from the end: by the static sizes, or, where one is dynamic (a
    ``DynamicDim``), by ``data``'s sizes read at run time (``shape_of``); constant indices that
    are all non-negative stay as they are."""
    dtype = ctx.dtype(idx)
    if not has_dynamic(dims):
        return _normalize_indices(ctx, idx, np.array(dims, dtype))
    v = ctx.maybe_value(idx)
    if v is not None and not (v < 0).any():
        return ctx.const(v)
    sizes = _op.strided_slice(_op.shape_of(data, dtype), [0], [len(dims)])
    return _op.where(_op.less(idx, ctx.const(np.array(0, dtype))), _op.add(idx, sizes), idx)


@register("ScatterND")
def _scatter_nd(ctx: Context, ins, attrs):
    data, idx, upd = ins
    shape = ctx.shape(data)
    ishape = ctx.shape(idx)
    k = ishape[-1]
    if k > len(shape):
        raise ctx.fail(f"indices' last dimension {k} exceeds the data's rank {len(shape)}")
    idx = _nd_indices(ctx, idx, data, shape[:k])
    # Relay (as TVM) puts the index tuple first: (k, ...) instead of ONNX's (..., k)
    nd = len(ishape)
    idx = _op.transpose(idx, [nd - 1] + list(range(nd - 1)))
    red = _reduction(ctx, attrs)
    if ctx.dtype(data) == "bool" and red != "update":
        return bool_reduced(lambda a, b: _op.scatter_nd(a, idx, b, mode=red), data, upd)
    return _op.scatter_nd(data, idx, upd, mode=red)
