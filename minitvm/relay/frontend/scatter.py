"""Relay's ``scatter_elements`` as the importers (ONNX ScatterElements, PyTorch's scatter family)
build it: a scatter along one axis whose index is known at import (an edge list held in a
buffer or an initializer) becomes a gather and a reduction (``frontend_common.scatter_plan``),
one along the leading axis whose index is a broadcast of one index per row (torch's
``index_add``, ``scatter_add`` of ``idx[:, None].expand(..)``: a graph network's message
passing and per-graph readout) a ``scatter_nd`` of whole rows, a small one with a runtime index
a comparison of every position with every update; all lower natively in time linear in the
updates. Only what is left keeps the ``scatter_elements`` op.
``ctx`` is the importer's context: ``fold``, ``shape``, ``dtype``."""

from __future__ import annotations

import numpy as np

from ...frontend_common.scatter_plan import broadcasts_one_index_per_row, identity, plan_scatter
from .. import expr as _expr
from .. import op as _op

__all__ = ["scatter_elements", "wrap_index", "bool_reduced"]

_REDUCERS = {"add": _op.sum, "mul": _op.prod, "max": _op.max, "min": _op.min}
_COMBINE = {"add": _op.add, "mul": _op.multiply, "max": _op.maximum, "min": _op.minimum}


# the largest (positions x updates) comparison a runtime-index scatter is expanded into
_MAX_COMPARED = 1 << 18


def scatter_elements(ctx, x, index, upd, axis: int, red: str):
    """scatter_elements, as a gather plus a reduction when the index is known at import, as a
    comparison of every position with every update along the axis when that is small (a
    mixture of experts' top-k routing), else the scatter itself (its compute runs as numpy).
    A bool ``x`` reduces in int32, read back as ``!= 0`` (``bool_reduced``)."""
    if ctx.dtype(x) == "bool" and red != "update":
        return bool_reduced(lambda a, b: scatter_elements(ctx, a, index, b, axis, red), x, upd)
    if not all(isinstance(d, int) for d in (*ctx.shape(x), *ctx.shape(index))):
        return _run_time_sized(ctx, x, index, upd, axis, red)
    shape = tuple(int(d) for d in ctx.shape(x))
    folded = ctx.fold(index)
    if isinstance(folded, _expr.Constant):
        plan = plan_scatter(folded.data.numpy(), shape, axis, red)
        if plan is not None:
            return _gathered(ctx, x, upd, axis, red, plan, shape)
    ishape = tuple(int(d) for d in ctx.shape(index))
    same_off_axis = len(ishape) == len(shape) and all(
        ishape[d] == shape[d] for d in range(len(shape)) if d != axis)
    rows = _row_index(ctx, index, axis, ishape) if same_off_axis else None
    if rows is not None:
        return _op.scatter_nd(x, _op.reshape(rows, (1, ishape[0])), upd, red)
    if same_off_axis and int(np.prod(shape, dtype=np.int64)) * ishape[axis] <= _MAX_COMPARED:
        return _compared(ctx, x, index, upd, axis, red, shape, ishape)
    return _op.scatter_elements(x, index, upd, axis, red)


def bool_reduced(reduce, x, values):
    """``reduce(x, values)`` (an accumulating scatter) of a bool ``x`` done in int32 and read
    back as ``!= 0``: bool's add and max are or, its mul and min and. (In bool the kernels add
    in one bit, True + True was False, and a padding slot has no integer extreme.)"""
    out = reduce(_op.cast(x, "int32"), _op.cast(values, "int32"))
    return _op.not_equal(out, _expr.const(np.array(0, "int32"), "int32"))


def _run_time_sized(ctx, x, index, upd, axis: int, red: str):
    """scatter_elements of tensors with run-time sizes (the ONNX importer's dynamic batch:
    ``ctx.shape`` gives them as non-ints): the comparison of every position with every update
    when the scattered axis and the index's are static, the other axes the same sizes and one
    batch element's comparison small; else the scatter itself."""
    shape, ishape = tuple(ctx.shape(x)), tuple(ctx.shape(index))
    static = [d for d in shape if isinstance(d, int)]
    if len(ishape) == len(shape) and isinstance(shape[axis], int) and \
            isinstance(ishape[axis], int) and \
            all(ishape[d] == shape[d] for d in range(len(shape)) if d != axis) and \
            int(np.prod(static, dtype=np.int64)) * ishape[axis] <= _MAX_COMPARED:
        return _compared(ctx, x, index, upd, axis, red, shape, ishape)
    return _op.scatter_elements(x, index, upd, axis, red)


def _row_index(ctx, index, axis: int, ishape: tuple):
    """The one index per row that ``index`` broadcasts over its trailing dims, as a ``[rows]``
    tensor, when the scatter is along axis 0 and ``index`` is a ``broadcast_to`` of a tensor
    whose dims past the first are 1; else None. Such a scatter_elements moves whole rows: a
    ``scatter_nd`` on the leading dim reads each row's index once and combines a contiguous
    row (the element form reads and bounds-checks an index per element)."""
    if not isinstance(index, _expr.Call) or getattr(index.op, "name", None) != "broadcast_to":
        return None
    src = index.args[0]
    sshape = tuple(int(d) for d in ctx.shape(src))
    if not broadcasts_one_index_per_row(sshape, ishape, ishape, axis):
        return None
    return _op.reshape(src, (ishape[0],))


def _compared(ctx, x, index, upd, axis, red, shape, ishape):
    """out[.., p, ..] combines the updates j with index[.., j, ..] == p: a [.., P, J, ..]
    comparison reduced over J (for ``update``, the last such j)."""
    rank, n, j = len(shape), shape[axis], ishape[axis]
    idt = ctx.dtype(index)
    wrapped = wrap_index(ctx, index, n)
    pos = _expr.const(np.arange(n, dtype=idt).reshape([1] * axis + [n, 1] +
                                                      [1] * (rank - 1 - axis)), idt)
    hit = _op.equal(_op.expand_dims(wrapped, axis), pos)
    src = _op.expand_dims(upd, axis)
    dt = ctx.dtype(x)
    if red == "update":
        jpos = _expr.const(np.arange(j, dtype="int64").reshape(
            [j if d == axis else 1 for d in range(rank)]), "int64")
        jpos = _op.expand_dims(jpos, axis)
        none = _expr.const(np.array(-1, "int64"), "int64")
        last = _op.max(_op.where(hit, jpos, none), axis=axis + 1, keepdims=True)
        pick = _op.logical_and(hit, _op.equal(jpos, last))
        val = _op.sum(_op.where(pick, src, _expr.const(np.zeros((), dt), dt)), axis=axis + 1)
        return _op.where(_op.greater_equal(_op.squeeze(last, [axis + 1]), _expr.const(
            np.array(0, "int64"), "int64")), val, x)
    ident = _expr.const(np.array(identity(red, dt), dt), dt)
    return _COMBINE[red](x, _REDUCERS[red](_op.where(hit, src, ident), axis=axis + 1))



def _gathered(ctx, x, upd, axis, red, plan, shape):
    dt = ctx.dtype(x)
    pad_shape = list(int(d) for d in ctx.shape(upd))
    pad_shape[axis] = 1
    fill = 0 if red == "update" else identity(red, dt)
    src = _op.concatenate([upd, _expr.const(np.full(pad_shape, fill, dt), dt)], axis)
    g = _op.take(src, _expr.const(plan.table.astype("int64"), "int64"), axis=axis)
    if red == "update":
        hit = plan.hit.reshape([shape[axis] if d == axis else 1 for d in range(len(shape))])
        return _op.where(_expr.const(hit), _op.squeeze(g, [axis + 1]), x)
    return _COMBINE[red](x, _REDUCERS[red](g, axis=axis + 1))


def wrap_index(ctx, index, extent):
    """index + extent where negative."""
    dt = ctx.dtype(index)
    zero = _expr.const(np.array(0, dt), dt)
    return _op.where(_op.less(index, zero), _op.add(index, _expr.const(np.array(extent, dt), dt)),
                     index)
