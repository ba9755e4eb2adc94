"""ATen's 1-D and 2-D pools: max (with the indices ``max_unpool`` scatters by), average and
adaptive ones (the 3-D pools are in ``aten_extra``)."""

from __future__ import annotations

from ....frontend_common.torch_pool import ceil_mode_sizes
from ... import op as _op
from ...op import nn as _nn
from ..pool_indices import maxpool_indices
from .aten import register


def _torch_ceil(ctx, x, out, kernel, stride, padding, dilation, ceil):
    """``out`` without a ceil-mode last window that torch drops (``torch_pool``)."""
    n = len(kernel)
    sizes = ceil_mode_sizes(ctx.shape(x)[-n:], kernel, stride, padding[:n], dilation) \
        if ceil else None
    if sizes is None:
        return out
    rank = len(ctx.shape(x))
    return _op.strided_slice(out, [0] * n, sizes, axes=list(range(rank - n, rank)))


def _pool_args(ctx, args):
    x, kernel = args[0], list(args[1])
    stride = list(args[2]) if len(args) > 2 and args[2] else kernel
    padding = list(args[3]) if len(args) > 3 else [0]
    if len(kernel) == 1:
        kernel = kernel * 2
    if len(stride) == 1:
        stride = stride * 2
    if len(padding) == 1:
        padding = padding * 2
    return x, kernel, stride, padding


@register("max_pool2d", "max_pool2d_with_indices")
def _max_pool2d(ctx, args):
    x, kernel, stride, padding = _pool_args(ctx, args)
    dilation = list(args[4]) if len(args) > 4 else [1, 1]
    dilation = dilation * 2 if len(dilation) == 1 else dilation
    ceil = bool(args[5]) if len(args) > 5 else False
    out = _nn.max_pool2d(x, kernel, stride, dilation, padding, ceil_mode=ceil)
    out = _torch_ceil(ctx, x, out, kernel, stride, padding, dilation, ceil)
    if ctx.op_name == "max_pool2d":
        return out
    return out, _pool_indices(ctx, x, out, kernel, stride, padding, dilation)


def _pool_indices(ctx, x, out, kernel, stride, padding, dilation):
    """The indices output of ``max_pool*d_with_indices``: each output's flat position within
    its N, C plane (``frontend_common.onnx_pool``; SegNet's ``max_unpool2d`` scatters by
    them). Relay keeps only what an output reaches, so unused indices cost nothing."""
    n = len(kernel)
    if len(ctx.shape(x)) != n + 2:
        raise ctx.fail(f"the indices of an unbatched {n}-D max pool are not supported")
    idx = maxpool_indices(x, ctx.shape(out)[2:], kernel, stride, dilation, padding, padding,
                          per_plane=True)
    ctx.pool_geometry[idx] = tuple([int(v) for v in p] for p in (kernel, stride, padding,
                                                                  dilation))
    return idx


@register("avg_pool2d")
def _avg_pool2d(ctx, args):
    x, kernel, stride, padding = _pool_args(ctx, args)
    ceil = bool(args[4]) if len(args) > 4 else False
    include = bool(args[5]) if len(args) > 5 else True
    if len(args) > 6 and args[6] is not None:
        raise ctx.fail("avg_pool2d with divisor_override is not supported")
    out = _nn.avg_pool2d(x, kernel, stride, (1, 1), padding, ceil_mode=ceil,
                         count_include_pad=include)
    return _torch_ceil(ctx, x, out, kernel, stride, padding, [1, 1], ceil)


@register("adaptive_avg_pool2d", "_adaptive_avg_pool2d")
def _adaptive_avg_pool2d(ctx, args):
    size = list(args[1]) if isinstance(args[1], list | tuple) else [args[1]] * 2
    if size == [1, 1]:
        return _nn.global_avg_pool2d(args[0])
    return _nn.adaptive_avg_pool2d(args[0], size)


@register("adaptive_max_pool2d")
def _adaptive_max_pool2d(ctx, args):
    size = list(args[1]) if isinstance(args[1], list | tuple) else [args[1]] * 2
    return (_nn.adaptive_max_pool2d(args[0], size), None)


def _one(v, default):
    v = default if v is None or (isinstance(v, list | tuple) and not v) else v
    return [int(v[0])] if isinstance(v, list | tuple) else [int(v)]


@register("max_pool1d", "max_pool1d_with_indices")
def _max_pool1d(ctx, args):
    x, k = args[0], _one(args[1], 1)
    stride = _one(args[2] if len(args) > 2 else None, k)
    pad = _one(args[3] if len(args) > 3 else None, 0)
    dil = _one(args[4] if len(args) > 4 else None, 1)
    ceil = bool(args[5]) if len(args) > 5 else False
    out = _nn.max_pool1d(x, k, stride, dil, pad, ceil_mode=ceil)
    out = _torch_ceil(ctx, x, out, k, stride, pad, dil, ceil)
    if ctx.op_name == "max_pool1d":
        return out
    return out, _pool_indices(ctx, x, out, k, stride, pad, dil)


@register("avg_pool1d")
def _avg_pool1d(ctx, args):
    x, k = args[0], _one(args[1], 1)
    stride = _one(args[2] if len(args) > 2 else None, k)
    pad = _one(args[3] if len(args) > 3 else None, 0)
    ceil = bool(args[4]) if len(args) > 4 else False
    include = bool(args[5]) if len(args) > 5 else True
    out = _nn.avg_pool1d(x, k, stride, (1,), pad, ceil_mode=ceil, count_include_pad=include)
    return _torch_ceil(ctx, x, out, k, stride, pad, [1], ceil)


@register("adaptive_avg_pool1d")
def _adaptive_avg_pool1d(ctx, args):
    return _nn.adaptive_avg_pool1d(args[0], _one(args[1], 1))


@register("adaptive_max_pool1d")
def _adaptive_max_pool1d(ctx, args):
    return (_nn.adaptive_max_pool1d(args[0], _one(args[1], 1)), None)
