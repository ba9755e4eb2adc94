"""ONNX Pad as a gather per padded axis, for pads or axis sizes known only at run time
(symbolic dims of a dynamic batch): each axis takes its output positions from
``arange(-begin, size + end)`` mapped into the input as the mode says (``constant``: outside
positions get the value; ``edge``: clamped; ``reflect``: mirrored; ``wrap``: modulo the size),
after a crop by the negative pads in the other modes, as onnxruntime does. ``relax.nn.pad``
takes its widths as integer attributes, so it cannot take these."""

from __future__ import annotations

import numpy as np

from .... import tir
from ....ir.prim_expr import PrimExpr
from ... import op as _op
from ...expr import const
from .context import Context

__all__ = ["pad_by_gather", "needs_gather"]


def needs_gather(shape: list, pads: list, mode: str) -> bool:
    """Whether ``pads`` (begins, then ends) need the gather form: one is symbolic, or a
    ``wrap`` pad is on an axis of symbolic size."""
    nd = len(shape)
    if any(isinstance(p, PrimExpr) for p in pads):
        return True
    return mode == "wrap" and any(
        isinstance(shape[a], PrimExpr) and (pads[a] or pads[nd + a]) for a in range(nd))


def _at_least_0(v):
    """max(v, 0) of an int or a symbolic dim expression."""
    return tir.Max(v, 0) if isinstance(v, PrimExpr) else max(v, 0)


def pad_by_gather(ctx: Context, x, pads: list, value: float, mode: str):
    """``x`` padded by ``pads`` (ONNX's begins, then ends; ints or symbolic dims) in ``mode``,
    one gather per padded axis (the sizes already checked by the caller)."""
    nd = ctx.ndim(x)
    dtype = ctx.dtype(x)
    for a in range(nd):
        b, e = pads[a], pads[nd + a]
        if isinstance(b, int) and isinstance(e, int) and not (b or e):
            continue
        n = ctx.shape(x)[a]
        if mode == "constant":
            x = _constant_axis(ctx, x, a, n, b, e, value, dtype)
            continue
        lo = _at_least_0(-b)  # (other modes crop first, then pad from what is left)
        kept = n - lo - _at_least_0(-e)
        pos = _op.arange(-_at_least_0(b), kept + _at_least_0(e), 1, "int64")
        m = _scalar(ctx, kept)
        if mode == "edge":
            idx = _op.minimum(_op.maximum(pos, _scalar(ctx, 0)),
                              _op.subtract(m, _scalar(ctx, 1)))
        elif mode == "wrap":
            idx = _op.floor_mod(pos, m)
        else:  # reflect: the period 2 (m - 1), folded back at m - 1
            last = _op.subtract(m, _scalar(ctx, 1))
            period = _op.maximum(_op.add(last, last), _scalar(ctx, 1))
            idx = _op.subtract(last, _op.abs(_op.subtract(_op.floor_mod(pos, period), last)))
        x = ctx.emit(_op.take(x, ctx.emit(_op.add(idx, _scalar(ctx, lo))), axis=a))
    return x


def _constant_axis(ctx: Context, x, a: int, n, b, e, value: float, dtype: str):
    """Axis ``a`` of ``x`` padded by ``b`` / ``e`` (a negative one crops, into the padding
    where it reaches past the input, as onnxruntime): positions outside [0, n) take
    ``value``."""
    pos = ctx.emit(_op.arange(-b, n + e, 1, "int64"))
    size = _scalar(ctx, n)
    inside = _op.logical_and(_op.greater_equal(pos, _scalar(ctx, 0)), _op.less(pos, size))
    src = _op.minimum(_op.maximum(pos, _scalar(ctx, 0)),
                      _op.maximum(_op.subtract(size, _scalar(ctx, 1)), _scalar(ctx, 0)))
    taken = ctx.emit(_op.take(x, ctx.emit(src), axis=a))
    shape = [1] * ctx.ndim(x)
    shape[a] = n + b + e
    mask = ctx.emit(_op.reshape(inside, ctx.shape_expr(shape)))
    return ctx.emit(_op.where(mask, taken, ctx.expr(np.array(value, dtype))))


def _scalar(ctx: Context, v):
    """An int64 scalar tensor of an int or a symbolic dim expression."""
    if isinstance(v, PrimExpr):
        return ctx.expr(np.array([v], dtype=object).reshape(()))
    return const(np.array(int(v), "int64"))
