"""Core-ATen gathers onto ``relax.op``: ``index_select``, ``gather``, ``take_along_dim`` and
indexing by integer tensors ``x[i0, i1, ...]`` (``index.Tensor``)."""

from __future__ import annotations

import numpy as np

from ....frontend_common.torch_take_along import take_along_plan
from ... import op as _op
from ...expr import const
from .context import AtenContext, register


@register("index_select.default")
def _index_select(ctx: AtenContext, args):
    x, dim, index = args
    return ctx.emit(_op.take(x, index, int(dim)))


@register("gather.default")
def _gather(ctx: AtenContext, args):
    x, dim, index = args[0], args[1], args[2]
    return ctx.emit(_op.gather_elements(x, index, int(dim) % ctx.ndim(x)))


@register("take_along_dim.default")
def _take_along_dim(ctx: AtenContext, args):
    """``torch.take_along_dim``: a gather after broadcasting the input and the indices off
    ``dim`` (``frontend_common.torch_take_along``); without ``dim``, a take from the
    flattened input. Negative indices count from the end."""
    x, idx = args[0], args[1]
    dim = args[2] if len(args) > 2 else None
    if dim is None:
        size = int(np.prod([int(d) for d in ctx.shape(x)]))
        flat = ctx.emit(_op.reshape(x, (-1,)))
        return ctx.emit(_op.take(flat, _wrap_negative(ctx, ctx.emit(_op.reshape(idx, (-1,))),
                                                      size), 0))
    plan = take_along_plan(ctx.shape(x), ctx.shape(idx), int(dim), ctx.fail)
    size = int(ctx.shape(x)[plan.axis])
    if plan.input_to is not None:
        x = ctx.emit(_op.broadcast_to(x, plan.input_to))
    if plan.index_to is not None:
        idx = ctx.emit(_op.broadcast_to(idx, plan.index_to))
    return ctx.emit(_op.gather_elements(x, _wrap_negative(ctx, idx, size), plan.axis))


def _wrap_negative(ctx: AtenContext, idx, size: int):
    """Indices below zero moved up by ``size`` (torch's count from the end)."""
    dt = ctx.dtype(idx)
    zero, n = ctx.emit(const(np.array(0, dt), dt)), ctx.emit(const(np.array(size, dt), dt))
    return ctx.emit(_op.where(_op.less(idx, zero), _op.add(idx, n), idx))


def _int64_scalar(ctx: AtenContext, v):
    """An int64 scalar tensor of a size: a constant, or read from a symbolic size at run
    time (a batch axis indexed by ``arange(batch)``)."""
    return const(np.array(v, "int64")) if isinstance(v, int) else ctx.tensor(v)


@register("index.Tensor", "_unsafe_index.Tensor")
def _index(ctx: AtenContext, args):
    """x[i0, i1, ...] with integer index tensors (None = a whole axis), numpy placement.
    Several indexed axes become one take from their flattened block by the linear index;
    symbolic axis sizes enter the index arithmetic as run-time scalars."""
    x, indices = args[0], list(args[1])
    n = ctx.ndim(x)
    pos = [i for i, t in enumerate(indices) if t is not None]
    if not pos:
        return x
    if any(ctx.dtype(indices[i]) == "bool" for i in pos):
        raise ctx.fail("indexing with a boolean mask gives a data-dependent shape; it is not "
                       "supported (use torch.where or masked_fill)")
    if len(pos) == 1:  # one index tensor: a take along that axis (wrap = negative indices)
        return ctx.emit(_op.take(x, indices[pos[0]], pos[0], mode="wrap"))
    shape = ctx.shape(x)
    sizes = [shape[i] for i in pos]
    rest = [d for d in range(n) if d not in pos]
    moved = x if pos == list(range(len(pos))) else _op.permute_dims(x, pos + rest)
    count = 1
    for size in sizes:
        count = count * size
    flat = ctx.emit(_op.reshape(moved, ctx.shape_expr([ctx.simplify(count)] +
                                                      [shape[d] for d in rest])))
    linear, stride = None, 1
    for i, size in reversed(list(zip(pos, sizes, strict=True))):
        t = indices[i]
        t = t if ctx.dtype(t) == "int64" else _op.astype(t, "int64")
        t = _op.floor_mod(t, _int64_scalar(ctx, size))  # negative indices wrap
        t = t if isinstance(stride, int) and stride == 1 else _op.multiply(
            t, _int64_scalar(ctx, stride))
        linear = t if linear is None else _op.add(linear, t)
        stride = ctx.simplify(stride * size)
    linear = ctx.emit(linear)
    out = ctx.emit(_op.take(flat, linear, 0))
    adjacent = pos == list(range(pos[0], pos[0] + len(pos)))
    if adjacent and pos[0] > 0:  # the indexed block stays where the indexed axes were
        k, lead = ctx.ndim(linear), pos[0]
        order = list(range(k, k + lead)) + list(range(k)) + list(range(k + lead, k + len(rest)))
        out = ctx.emit(_op.permute_dims(out, order))
    return out
