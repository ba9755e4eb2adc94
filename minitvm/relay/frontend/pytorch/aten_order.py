"""ATen's order statistics and scans onto Relay: ``topk``, ``median`` / ``nanmedian`` (a stable
argsort and a gather at the middle), ``quantile`` / ``nanquantile`` (gathers at the ranks around
``q (n - 1)``, mixed as torch's lerp), ``cummax`` / ``cummin`` and ``logcumsumexp`` (log-step
scans), ``mode`` (all-pairs equality counts), ``histc`` (bin numbers against every bin) and
``pdist`` (takes of constant row pairs), the last six built by ``frontend_common.torch_order``
from ops with native computes."""

from __future__ import annotations

import numpy as np

from ....frontend_common import torch_order
from ... import expr as _expr
from ... import op as _op
from ..common import RelayBuilder
from .aten import _norm_dim, register
from .aten_extra import _opt


class _RelayOrder(RelayBuilder):
    """``torch_order``'s builder for Relay: a stable argsort and a gather added."""

    @staticmethod
    def argsort(x, axis: int):
        return _op.argsort(x, axis=axis, is_ascend=True, dtype="int64")

    @staticmethod
    def gather(x, indices, axis: int):
        return _op.gather(x, axis, indices)


def _static_shape(ctx, x) -> list[int]:
    shape = ctx.shape(x)
    if not all(isinstance(s, int) for s in shape):
        raise ctx.fail(f"needs a static input shape, got {shape}")
    return [int(s) for s in shape]


@register("median", "nanmedian")
def _median(ctx, args):
    """median(input) -> the lower middle of all entries; median(input, dim, keepdim) ->
    (values, int64 indices). NaN: ``median`` gives NaN for a slice holding one, ``nanmedian``
    skips them."""
    x = args[0]
    ignore_nan = ctx.op_name == "nanmedian"
    shape, dtype = _static_shape(ctx, x), ctx.dtype(x)
    if len(args) < 2 or args[1] is None:  # over every entry: a 0-d value
        flat = _op.reshape(x, (-1,))
        size = int(np.prod(shape)) if shape else 1
        val, _ = torch_order.median(_RelayOrder, flat, [size], dtype, 0, ignore_nan)
        return _op.reshape(val, ())
    if not shape:
        return x, _expr.const(np.array(0, "int64"))
    dim = _norm_dim(int(args[1]), len(shape))
    val, idx = torch_order.median(_RelayOrder, x, shape, dtype, dim, ignore_nan)
    if not bool(_opt(args, 2, False)):
        val, idx = _op.squeeze(val, [dim]), _op.squeeze(idx, [dim])
    return val, idx


@register("quantile", "nanquantile")
def _quantile(ctx, args):
    """quantile / nanquantile(input, q, dim=None, keepdim=False, interpolation='linear'): q a
    number, a 0-d or a 1-D tensor (its values may be runtime data, e.g. a buffer); a 1-D q puts
    its axis first, as torch does."""
    x, q = args[0], args[1]
    dim, keepdim = _opt(args, 2, None), bool(_opt(args, 3, False))
    interpolation = str(_opt(args, 4, "linear"))
    if interpolation not in torch_order.QUANTILE_INTERPOLATIONS:
        raise ctx.fail(f"interpolation must be one of {torch_order.QUANTILE_INTERPOLATIONS}, "
                       f"got {interpolation!r}")
    shape, dtype = _static_shape(ctx, x), ctx.dtype(x)
    if not dtype.startswith("float"):
        raise ctx.fail(f"expects a floating-point input, got {dtype}")
    if isinstance(q, int | float):
        if not 0 <= q <= 1:
            raise ctx.fail(f"q must be in [0, 1], got {q}")
        qs, q_axis = [_expr.const(np.array(q, dtype))], False
    else:
        q_shape = _static_shape(ctx, q)
        if len(q_shape) > 1:
            raise ctx.fail(f"q must be a number, a 0-d or a 1-D tensor, got shape {q_shape}")
        if ctx.dtype(q) != dtype:
            raise ctx.fail(f"q ({ctx.dtype(q)}) must have the input's dtype {dtype}")
        q_axis = len(q_shape) == 1
        qs = [_op.take(q, _expr.const(i, "int64")) for i in range(q_shape[0])] if q_axis \
            else [q]
    if dim is None:
        flat = _op.reshape(x, (-1,))
        size = int(np.prod(shape)) if shape else 1
        vals = torch_order.quantile(_RelayOrder, flat, [size], dtype, 0, qs, interpolation,
                                    ctx.op_name == "nanquantile")
        vals = [_op.reshape(v, [1] * len(shape) if keepdim else ()) for v in vals]
    else:
        if not shape:
            raise ctx.fail("a 0-d input has no dim to reduce")
        axis = _norm_dim(int(dim), len(shape))
        vals = torch_order.quantile(_RelayOrder, x, shape, dtype, axis, qs, interpolation,
                                    ctx.op_name == "nanquantile")
        if not keepdim:
            vals = [_op.squeeze(v, [axis]) for v in vals]
    return _op.stack(vals, 0) if q_axis else vals[0]


@register("cummax", "cummin")
def _cumulative_extreme(ctx, args):
    """cummax / cummin(input, dim) -> (values, int64 indices)."""
    x = args[0]
    shape, dtype = _static_shape(ctx, x), ctx.dtype(x)
    if dtype == "bool":
        raise ctx.fail("a bool input is not supported")
    if not shape:
        return x, _expr.const(np.array(0, "int64"))
    dim = _norm_dim(int(args[1]), len(shape))
    return torch_order.cumulative_extreme(_RelayOrder, x, shape, dtype, dim,
                                          largest=ctx.op_name == "cummax")


@register("logcumsumexp")
def _logcumsumexp(ctx, args):
    x = args[0]
    shape, dtype = _static_shape(ctx, x), ctx.dtype(x)
    if not dtype.startswith("float"):
        raise ctx.fail(f"expects a floating-point input, got {dtype}")
    if not shape:
        return x
    return torch_order.logcumsumexp(_RelayOrder, x, shape, dtype, _norm_dim(int(args[1]),
                                                                           len(shape)))


@register("pdist", "_pdist_forward")
def _pdist(ctx, args):
    """pdist(input [N, M], p=2) -> [N (N - 1) / 2]: the distance of every row pair i < j."""
    x = args[0]
    shape, dtype = _static_shape(ctx, x), ctx.dtype(x)
    if len(shape) != 2:
        raise ctx.fail(f"expects a 2-D input, got {len(shape)}-D")
    p = float(_opt(args, 1, 2.0))
    if p < 0:
        raise ctx.fail(f"p must be non-negative, got {p}")
    return torch_order.pdist(_RelayOrder, x, shape[0], dtype, p,
                             lambda t, i: _op.take(t, i, axis=0))


@register("mode")
def _mode(ctx, args):
    """mode(input, dim=-1, keepdim=False) -> (the most frequent value, the int64 index of its
    last occurrence); equally frequent values give the smallest."""
    x = args[0]
    shape, dtype = _static_shape(ctx, x), ctx.dtype(x)
    if not shape:
        return x, _expr.const(np.array(0, "int64"))
    dim = _norm_dim(int(_opt(args, 1, -1)), len(shape))
    val, idx = torch_order.mode(_RelayOrder, x, shape, dtype, dim)
    if not bool(_opt(args, 2, False)):
        val, idx = _op.squeeze(val, [dim]), _op.squeeze(idx, [dim])
    return val, idx


@register("histc")
def _histc(ctx, args):
    """histc(input, bins=100, min=0, max=0): counts of the flattened input in equal bins."""
    x = args[0]
    dtype = ctx.dtype(x)
    if not dtype.startswith("float"):
        raise ctx.fail(f"expects a floating-point input, got {dtype}")
    bins, lo, hi = int(_opt(args, 1, 100)), float(_opt(args, 2, 0.0)), float(_opt(args, 3, 0.0))
    if bins <= 0 or lo > hi:
        raise ctx.fail(f"needs bins > 0 and min <= max, got bins={bins}, min={lo}, max={hi}")
    flat = _op.reshape(x, (-1,))
    return torch_order.histc(_RelayOrder, flat, dtype, bins, lo, hi)


@register("topk")
def _topk(ctx, args):
    x, k = args[0], int(args[1])
    dim = args[2] if len(args) > 2 else -1
    largest = bool(args[3]) if len(args) > 3 else True
    out = _op.topk(x, k, axis=_norm_dim(dim, len(ctx.shape(x))), ret_type="both",
                   is_ascend=not largest, dtype="int64")
    return out[0], out[1]
