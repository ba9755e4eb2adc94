"""Core-ATen pooling onto ``relax.op``: 2-D and 3-D max pools (with the indices when the
program reads them), average pools, and adaptive average and max pools (2-D and 3-D: a 3D U-Net's or a video net's)."""

from __future__ import annotations

import operator

from ....frontend_common.torch_pool import ceil_mode_sizes
from ... import op as _op
from ..pool_indices import maxpool_indices
from .context import AtenContext, register


def _torch_ceil(ctx: AtenContext, x, y, kernel, stride, pads, dil, ceil):
    """``y`` without a ceil-mode last window that torch drops (``torch_pool``)."""
    n = len(kernel)
    sizes = ceil_mode_sizes(ctx.shape(x)[-n:], kernel, stride, pads, dil) if ceil else None
    if sizes is None:
        return y
    rank = len(ctx.shape(x))
    return ctx.emit(_op.strided_slice(y, list(range(rank - n, rank)), [0] * n, sizes))


def _per_axis(v, n: int) -> list[int]:
    """A pooling argument (an int or one value per spatial axis) as ``n`` ints."""
    v = [int(p) for p in (v if isinstance(v, list | tuple) else [v])]
    return v * n if len(v) == 1 else v


@register("max_pool2d_with_indices.default", "max_pool2d.default",
          "max_pool3d_with_indices.default", "max_pool3d.default")
def _max_pool(ctx: AtenContext, args):
    """2-D and 3-D max pooling (the number of kernel sizes says which); the ``_with_indices``
    form's indices (each output's flat position in its N, C plane) only when the program reads
    them (decomposition turns every max pool into the ``_with_indices`` form)."""
    x, kernel, stride, padding, dilation, ceil = args
    kernel = [int(k) for k in kernel]
    n = len(kernel)
    stride = [int(s) for s in stride] or kernel
    pads, dil = _per_axis(padding, n), _per_axis(dilation, n)
    fn = {2: _op.nn.max_pool2d, 3: _op.nn.max_pool3d}[n]
    y = _torch_ceil(ctx, x, ctx.emit(fn(x, kernel, stride, pads * 2, dil, bool(ceil))), kernel,
                    stride, pads, dil, ceil)
    if "indices" not in ctx.node.target.__name__:
        return y
    if not any(u.target is operator.getitem and u.args[1] == 1 for u in ctx.node.users):
        return (y, None)
    shape = ctx.shape(x)
    if len(shape) != n + 2 or not all(isinstance(d, int) for d in shape[2:]):
        raise ctx.fail(f"max-pool indices need a batched input of static spatial dims, got "
                       f"{shape}")  # (indices count within a plane: N and C may be symbolic)
    idx = maxpool_indices(ctx.emit, shape, ctx.dtype(x), x, ctx.shape(y)[2:], kernel, stride,
                          dil, pads, pads, per_plane=True)
    return (y, idx)


@register("avg_pool2d.default", "avg_pool3d.default")
def _avg_pool(ctx: AtenContext, args):
    x, kernel, stride, padding, ceil, include, divisor = args
    if divisor is not None:
        raise ctx.fail("divisor_override is not supported")
    kernel = [int(k) for k in kernel]
    n = len(kernel)
    stride = [int(s) for s in stride] or kernel
    fn = {2: _op.nn.avg_pool2d, 3: _op.nn.avg_pool3d}[n]
    pads = _per_axis(padding, n)
    y = ctx.emit(fn(x, kernel, stride, pads * 2, [1] * n, bool(ceil), bool(include)))
    return _torch_ceil(ctx, x, y, kernel, stride, pads, [1] * n, ceil)


@register("_adaptive_avg_pool2d.default", "adaptive_avg_pool2d.default")
def _adaptive_avg_pool2d(ctx: AtenContext, args):
    x, size = args
    size = [int(s) for s in size]
    if size == [1, 1]:
        return ctx.emit(_op.mean(x, [2, 3], True))
    return ctx.emit(_op.nn.adaptive_avg_pool2d(x, size))


@register("adaptive_max_pool2d.default")
def _adaptive_max_pool2d(ctx: AtenContext, args):
    """Adaptive max pooling: a plain max_pool2d when the sizes divide, else one max per cell."""
    x, size = args[0], [int(s) for s in args[1]]
    h, w = ctx.shape(x)[2:]
    if not isinstance(h, int) or not isinstance(w, int):
        raise ctx.fail("adaptive max pooling needs static spatial dims")
    if h % size[0] == 0 and w % size[1] == 0:
        k = [h // size[0], w // size[1]]
        return (ctx.emit(_op.nn.max_pool2d(x, k, k)), None)
    if size[0] * size[1] > 256:
        raise ctx.fail(f"adaptive max pooling {h}x{w} -> {size} (not divisible) has too many "
                       "cells to unroll")

    def cell(i, n, out):  # torch's window [floor(i*n/out), ceil((i+1)*n/out))
        return i * n // out, -(-(i + 1) * n // out)

    rows = []
    for i in range(size[0]):
        h0, h1 = cell(i, h, size[0])
        cols = []
        for j in range(size[1]):
            w0, w1 = cell(j, w, size[1])
            part = _op.strided_slice(x, [2, 3], [h0, w0], [h1, w1])
            cols.append(ctx.emit(_op.max(part, [2, 3], True)))
        rows.append(ctx.emit(_op.concat(cols, 3)) if len(cols) > 1 else cols[0])
    return (ctx.emit(_op.concat(rows, 2)) if len(rows) > 1 else rows[0], None)


@register("adaptive_max_pool3d.default")
def _adaptive_max_pool3d(ctx: AtenContext, args):
    """(max, None): a plain ``max_pool3d`` where the sizes divide, else one max per cell over
    torch's windows ``[floor(i n / out), ceil((i + 1) n / out))``, unrolled up to 512 cells."""
    x, size = args[0], [int(s) for s in args[1]]
    dims = ctx.shape(x)[-3:]
    if not all(isinstance(d, int) for d in dims):
        raise ctx.fail("adaptive_max_pool3d needs static spatial dims")
    if all(d % s == 0 for d, s in zip(dims, size, strict=True)):
        k = [d // s for d, s in zip(dims, size, strict=True)]
        return ctx.emit(_op.nn.max_pool3d(x, k, k)), None
    cells = size[0] * size[1] * size[2]
    if cells > 512:
        raise ctx.fail(f"adaptive_max_pool3d {tuple(dims)} -> {tuple(size)} (not divisible) has "
                       f"{cells} cells to unroll (at most 512)")
    nd = len(ctx.shape(x))
    axes = [nd - 3, nd - 2, nd - 1]

    def window(i, n, out):
        return i * n // out, -(-(i + 1) * n // out)

    def merge(parts, axis):
        return ctx.emit(_op.concat(parts, axis)) if len(parts) > 1 else parts[0]

    planes = []
    for a in range(size[0]):
        d0, d1 = window(a, dims[0], size[0])
        rows = []
        for b in range(size[1]):
            h0, h1 = window(b, dims[1], size[1])
            cols = []
            for c in range(size[2]):
                w0, w1 = window(c, dims[2], size[2])
                part = _op.strided_slice(x, axes, [d0, h0, w0], [d1, h1, w1])
                cols.append(ctx.emit(_op.max(part, axes, True)))
            rows.append(merge(cols, axes[2]))
        planes.append(merge(rows, axes[1]))
    return merge(planes, axes[0]), None
