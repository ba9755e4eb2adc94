"""ATen writes through views: ``copy_`` / ``fill_`` / ``zero_`` (what ``x[:, 1:3] = v`` and
``x[:, -1] = 7.0`` trace to after the slice or select), their functional forms and
``slice_scatter`` / ``select_scatter`` (torch.export's spelling of the same writes). The
TorchScript importer writes an in-place result back into the view's source with
``written_into``; torch.export hands the scatter ops over already functional.

A write into positions ``p`` of axis ``a`` (static) is a ``take`` of the written values at
each position's place and a select against the source: both native, no scatter.
"""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from .aten import _is_expr, _scalar_like, register

__all__ = ["written_into"]


def written_into(ctx, source, view, axis: int, positions, dropped: bool):
    """``source`` with its ``positions`` along ``axis`` replaced by ``view`` (which lacks the
    axis when ``dropped``: a select)."""
    size = int(ctx.shape(source)[axis])
    if dropped:
        view = _op.expand_dims(view, axis)
    positions = np.asarray(positions, dtype="int64")
    if not len(positions):  # (an empty slice: nothing is written)
        return source
    if len(positions) == size and (positions == np.arange(size)).all():
        return view
    place = np.zeros(size, "int64")
    place[positions] = np.arange(len(positions))
    inside = np.zeros(size, bool)
    inside[positions] = True
    keep = [size if d == axis else 1 for d in range(len(ctx.shape(source)))]
    taken = _op.take(view, _expr.const(place, "int64"), axis=axis)
    return _op.where(_expr.const(inside.reshape(keep), "bool"), taken, source)


def _like(ctx, dst, src):
    """``src`` (a tensor or a number) in ``dst``'s dtype, broadcast to its shape."""
    shape = tuple(int(d) for d in ctx.shape(dst))
    if not _is_expr(src):
        return _op.full(_scalar_like(ctx, src, dst), shape, ctx.dtype(dst))
    if ctx.dtype(src) != ctx.dtype(dst):
        src = _op.cast(src, ctx.dtype(dst))
    return _op.broadcast_to(src, shape)


@register("copy_", "copy")
def _copy(ctx, args):
    """``dst.copy_(src)``: src in dst's dtype, broadcast to its shape."""
    return _like(ctx, args[0], args[1])


@register("fill_", "fill", "zero_", "zero")
def _fill(ctx, args):
    """``x.fill_(v)`` / ``x.zero_()``: a tensor of x's shape and dtype holding v."""
    value = 0 if ctx.op_name.startswith("zero") else args[1]
    if _is_expr(value):
        value = _op.reshape(value, ())
    return _like(ctx, args[0], value)


@register("slice_scatter")
def _slice_scatter(ctx, args):
    """slice_scatter(self, src, dim=0, start=None, end=None, step=1)."""
    x, src = args[0], args[1]
    dim = args[2] if len(args) > 2 and args[2] is not None else 0
    start, end = (args[3] if len(args) > 3 else None), (args[4] if len(args) > 4 else None)
    step = args[5] if len(args) > 5 and args[5] is not None else 1
    axis = int(dim) % len(ctx.shape(x))
    size = int(ctx.shape(x)[axis])
    return written_into(ctx, x, _like_view(ctx, x, src), axis,
                        np.arange(size)[slice(start, end, step)], False)


@register("select_scatter")
def _select_scatter(ctx, args):
    """select_scatter(self, src, dim, index)."""
    x, src, dim, index = args[:4]
    axis = int(dim) % len(ctx.shape(x))
    size = int(ctx.shape(x)[axis])
    return written_into(ctx, x, _like_view(ctx, x, src), axis, [int(index) % size], True)


def _like_view(ctx, x, src):
    return src if ctx.dtype(src) == ctx.dtype(x) else _op.cast(src, ctx.dtype(x))
