"""ATen's spatial-transformer ops: ``affine_grid_generator`` (F.affine_grid) and
``grid_sampler`` (F.grid_sample), onto the sampling the ONNX importer shares
(``relay.frontend.spatial``)."""

from __future__ import annotations

from ..spatial import affine_grid_2d, grid_sample
from .aten import register

_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


@register("affine_grid_generator")
def _affine_grid(ctx, args):
    """affine_grid_generator(theta (N, 2, 3), size [N, C, H, W], align_corners) -> (N, H, W, 2):
    grid[n, h, w] = theta[n] @ (x_w, y_h, 1)."""
    theta, size, align = args[0], [int(s) for s in args[1]], bool(args[2])
    if len(size) != 4:
        raise ctx.fail(f"affine_grid: only 2-D grids (a size of 4 dims) are supported, got "
                       f"size {size}")
    _, _, h, w = size
    return affine_grid_2d(theta, h, w, align, ctx.dtype(theta))


@register("grid_sampler", "grid_sampler_2d", "grid_sampler_3d")
def _grid_sampler(ctx, args):
    """grid_sampler(input, grid (N, Ho, Wo, 2) holding (x, y), mode, padding, align_corners)."""
    data, grid = args[0], args[1]
    shape = ctx.shape(data)
    if len(shape) not in (4, 5):
        raise ctx.fail(f"grid_sample: expects 4-D or 5-D input, got {len(shape)}-D")
    return grid_sample(data, grid, shape, ctx.dtype(data), _MODES[int(args[2])],
                       _PADDING[int(args[3])], bool(args[4]))
