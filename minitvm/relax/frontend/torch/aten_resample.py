"""Core-ATen resampling onto ``relax.op``: nearest and bilinear 2-D upsampling
(``image.resize2d``) and ``grid_sampler`` (``F.grid_sample``: pixel-row gathers, else the shared
native kernel)."""

from __future__ import annotations

from ... import op as _op
from ..spatial import grid_sample_2d, grid_sample_kernel
from .context import AtenContext, register


@register("upsample_nearest2d.vec")
def _upsample_nearest(ctx: AtenContext, args):
    x, size, scales = args
    dims = ctx.shape(x)
    if size is None:
        if not all(isinstance(d, int) for d in dims[2:]):
            raise ctx.fail("upsampling by scale needs static spatial dims")
        size = [int(d * s) for d, s in zip(dims[2:], scales, strict=True)]
    return ctx.emit(_op.image.resize2d(x, list(size), [0.0] * 4, "NCHW", "nearest_neighbor",
                                       "asymmetric", "floor"))


@register("grid_sampler_2d.default", "grid_sampler_3d.default")
def _grid_sampler(ctx: AtenContext, args):
    """F.grid_sample: input, grid (N, *out, nd), mode (0 bilinear, 1 nearest, 2 bicubic),
    padding (0 zeros, 1 border, 2 reflection), align_corners. 2-D bilinear / nearest with
    zeros or border padding decompose into pixel-row gathers; the rest (bicubic, reflection,
    3-D) call the shared native kernel."""
    x, grid, mode, padding, align = args[:5]
    mode, padding = int(mode), int(padding)
    nd = ctx.ndim(x) - 2
    if mode not in (0, 1, 2) or padding not in (0, 1, 2) or (mode == 2 and nd != 2):
        raise ctx.fail(f"grid_sample mode {mode} / padding {padding} of a {nd + 2}-D input is "
                       "not supported (bilinear, nearest or 2-D bicubic; zeros, border or "
                       "reflection padding)")
    pad = ("zeros", "border", "reflection")[padding]
    if nd == 2 and mode in (0, 1) and padding in (0, 1):
        return grid_sample_2d(ctx, x, grid, mode == 0, pad, bool(align))
    method = ("bilinear", "nearest", "bicubic")[mode]
    return grid_sample_kernel(ctx, x, grid, method, pad, bool(align))


@register("upsample_bilinear2d.vec")
def _upsample_bilinear(ctx: AtenContext, args):
    x, size, align, scales = args
    dims = ctx.shape(x)
    if size is None:
        if not all(isinstance(d, int) for d in dims[2:]):
            raise ctx.fail("upsampling by scale needs static spatial dims")
        size = [int(d * s) for d, s in zip(dims[2:], scales, strict=True)]
    mode = "align_corners" if align else "half_pixel"
    return ctx.emit(_op.image.resize2d(x, list(size), [0.0] * 4, "NCHW", "linear", mode))
