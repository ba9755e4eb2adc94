"""Core-ATen order statistics and scans onto ``relax.op``: ``median`` / ``nanmedian`` (a stable
argsort and a gather at the middle), ``cummax`` / ``cummin`` and ``logcumsumexp`` (log-step
scans; a symbolic shape's logcumsumexp: a masked log-sum-exp over each prefix), ``mode`` (all-pairs equality counts), ``histc`` (bin numbers against every bin)
and ``_pdist_forward`` (``torch.pdist``: takes of constant row pairs), built by
``frontend_common.torch_order`` from ops with native computes."""

from __future__ import annotations

import numpy as np

from ....frontend_common import torch_order
from ... import op as _op
from ...expr import const
from ..common import RelaxBuilder
from .context import AtenContext, register


class _RelaxOrder(RelaxBuilder):
    """``torch_order``'s builder for Relax: values bound through the importer's context."""

    def emit(self, e):
        return self.ctx.emit(e)

    @staticmethod
    def argsort(x, axis: int):
        return _op.argsort(x, axis, False, "int64")

    @staticmethod
    def gather(x, indices, axis: int):
        return _op.gather_elements(x, indices, axis)


def _static_shape(ctx: AtenContext, x) -> list[int]:
    shape = ctx.shape(x)
    if not all(isinstance(s, int) for s in shape):
        raise ctx.fail(f"needs a static input shape, got {shape}")
    return [int(s) for s in shape]


def _op_name(ctx: AtenContext) -> str:
    return ctx.node.target.__name__.split(".")[0]


@register("median.default", "median.dim", "nanmedian.default", "nanmedian.dim")
def _median(ctx: AtenContext, args):
    """median(input) -> the lower middle of all entries; median.dim(input, dim, keepdim) ->
    (values, int64 indices). NaN: ``median`` gives NaN for a slice holding one, ``nanmedian``
    skips them."""
    x = args[0]
    ignore_nan = _op_name(ctx) == "nanmedian"
    shape, dtype = _static_shape(ctx, x), ctx.dtype(x)
    b = _RelaxOrder(ctx)
    if len(args) < 2:  # over every entry: a 0-d value
        size = int(np.prod(shape)) if shape else 1
        flat = ctx.emit(_op.reshape(x, [size]))
        val, _ = torch_order.median(b, flat, [size], dtype, 0, ignore_nan)
        return ctx.emit(_op.reshape(val, []))
    if not shape:
        return x, const(np.array(0, "int64"))
    dim = int(args[1]) % len(shape)
    val, idx = torch_order.median(b, x, shape, dtype, dim, ignore_nan)
    if not (len(args) > 2 and bool(args[2])):
        val, idx = ctx.emit(_op.squeeze(val, [dim])), ctx.emit(_op.squeeze(idx, [dim]))
    return val, idx


@register("cummax.default", "cummin.default")
def _cumulative_extreme(ctx: AtenContext, args):
    """cummax / cummin(input, dim) -> (values, int64 indices); a static size along ``dim``,
    any other size may be symbolic."""
    x = args[0]
    shape, dtype = ctx.shape(x), ctx.dtype(x)
    if dtype == "bool":
        raise ctx.fail("a bool input is not supported")
    if not shape:
        return x, const(np.array(0, "int64"))
    axis = int(args[1]) % len(shape)
    if not isinstance(shape[axis], int):  # (the other sizes may be symbolic: a batch)
        raise ctx.fail(f"needs a static size along dim {axis} (the scan's steps), got {shape}")
    return torch_order.cumulative_extreme(_RelaxOrder(ctx), x, shape, dtype, axis,
                                          largest=_op_name(ctx) == "cummax")


def _logcumsumexp_pairwise(ctx: AtenContext, x, shape: list, dtype: str, axis: int):
    """logcumsumexp along ``axis`` for symbolic shapes (a dynamic batch: the log-step scan
    needs ``ceil(log2 n)`` known at import): entry ``i`` is the log-sum-exp of entries
    ``j <= i``, from an ``(n, n)`` lower-triangular mask, so ``O(n^2)`` work and memory along
    the axis; the running maximum is subtracted, as torch's does."""
    rank = len(shape)
    order = [d for d in range(rank) if d != axis] + [axis]
    back = [order.index(d) for d in range(rank)]
    moved = ctx.emit(_op.permute_dims(x, order)) if axis != rank - 1 else x
    n = shape[axis]
    idx = ctx.emit(_op.arange(0, n, 1, "int64"))
    keep = ctx.emit(_op.less_equal(_op.reshape(idx, ctx.shape_expr([1, n])),
                                   _op.reshape(idx, ctx.shape_expr([n, 1]))))   # (i, j): j <= i
    neg_inf = const(np.array(-np.inf, dtype))
    masked = ctx.emit(_op.where(keep, _op.expand_dims(moved, [rank - 1]), neg_inf))
    top = ctx.emit(_op.max(masked, axis=[rank], keepdims=True))
    top = ctx.emit(_op.where(_op.equal(top, neg_inf), const(np.array(0, dtype)), top))
    total = _op.sum(_op.exp(_op.subtract(masked, top)), axis=[rank])
    out = ctx.emit(_op.add(_op.squeeze(top, [rank]), _op.log(total)))
    return ctx.emit(_op.permute_dims(out, back)) if axis != rank - 1 else out


@register("logcumsumexp.default")
def _logcumsumexp(ctx: AtenContext, args):
    x = args[0]
    shape, dtype = ctx.shape(x), ctx.dtype(x)
    if not dtype.startswith("float"):
        raise ctx.fail(f"expects a floating-point input, got {dtype}")
    if not shape:
        return x
    axis = int(args[1]) % len(shape)
    if not all(isinstance(d, int) for d in shape):
        return _logcumsumexp_pairwise(ctx, x, shape, dtype, axis)
    return torch_order.logcumsumexp(_RelaxOrder(ctx), x, [int(d) for d in shape], dtype, axis)


@register("_pdist_forward.default")
def _pdist(ctx: AtenContext, args):
    """_pdist_forward(input [N, M], p=2) -> [N (N - 1) / 2]: the distance of every row pair
    i < j."""
    x = args[0]
    shape, dtype = _static_shape(ctx, x), ctx.dtype(x)
    if len(shape) != 2:
        raise ctx.fail(f"expects a 2-D input, got {len(shape)}-D")
    p = float(args[1]) if len(args) > 1 and args[1] is not None else 2.0
    if p < 0:
        raise ctx.fail(f"p must be non-negative, got {p}")
    b = _RelaxOrder(ctx)
    return ctx.emit(torch_order.pdist(b, x, shape[0], dtype, p,
                                      lambda t, i: b.emit(_op.take(t, i, 0))))


@register("mode.default")
def _mode(ctx: AtenContext, args):
    """mode(input, dim=-1, keepdim=False) -> (the most frequent value, the int64 index of its
    last occurrence); equally frequent values give the smallest."""
    x = args[0]
    shape, dtype = _static_shape(ctx, x), ctx.dtype(x)
    if not shape:
        return x, const(np.array(0, "int64"))
    dim = int(args[1] if len(args) > 1 else -1) % len(shape)
    val, idx = torch_order.mode(_RelaxOrder(ctx), x, shape, dtype, dim)
    if not (len(args) > 2 and bool(args[2])):
        val, idx = ctx.emit(_op.squeeze(val, [dim])), ctx.emit(_op.squeeze(idx, [dim]))
    return val, idx


@register("histc.default")
def _histc(ctx: AtenContext, args):
    """histc(input, bins=100, min=0, max=0): counts of the flattened input in equal bins."""
    x = args[0]
    shape, dtype = _static_shape(ctx, x), ctx.dtype(x)
    if not dtype.startswith("float"):
        raise ctx.fail(f"expects a floating-point input, got {dtype}")
    rest = list(args[1:]) + [None] * 3
    bins = int(100 if rest[0] is None else rest[0])
    lo, hi = (float(0.0 if v is None else v) for v in rest[1:3])
    if bins <= 0 or lo > hi:
        raise ctx.fail(f"needs bins > 0 and min <= max, got bins={bins}, min={lo}, max={hi}")
    size = int(np.prod(shape)) if shape else 1
    flat = ctx.emit(_op.reshape(x, [size]))
    return ctx.emit(torch_order.histc(_RelaxOrder(ctx), flat, dtype, bins, lo, hi))
