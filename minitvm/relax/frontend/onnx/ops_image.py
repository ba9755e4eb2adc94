"""ONNX's spatial-transformer ops on Relax: AffineGrid (opset 20) and 2-D GridSample (opset 16
and 20 mode names) with linear or nearest sampling and zeros or border padding, onto the
decomposition the torch importer shares (``relax.frontend.spatial``). The batch may be
symbolic."""

from __future__ import annotations

from ..spatial import affine_grid_2d, grid_sample_2d
from .context import Context, register

_LINEAR, _NEAREST = ("linear", "bilinear"), ("nearest",)


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


@register("AffineGrid")
def _affine_grid(ctx: Context, ins, attrs):
    """theta (N, 2, 3), size [N, C, H, W] -> (N, H, W, 2): theta[n] @ (x_w, y_h, 1)."""
    theta = ctx.expr(ins[0])
    size = ctx.ints(ins[1], "AffineGrid's size")
    if len(size) != 4:
        raise ctx.fail(f"only 2-D grids (a size of 4 dims) are supported, got {size}")
    h, w = size[2], size[3]
    if not (isinstance(h, int) and isinstance(w, int)):
        raise ctx.fail(f"the grid's height and width must be known at import, got {size}")
    align = bool(attrs.get("align_corners", 0))
    return affine_grid_2d(ctx, theta, h, w, align)


@register("GridSample")
def _grid_sample(ctx: Context, ins, attrs):
    x, grid = ctx.expr(ins[0]), ctx.expr(ins[1])
    mode = _text(attrs.get("mode", "linear" if ctx.opset >= 20 else "bilinear"))
    padding = _text(attrs.get("padding_mode", "zeros"))
    align = bool(attrs.get("align_corners", 0))
    if ctx.ndim(x) != 4:
        raise ctx.fail(f"only 2-D sampling (4-D input) is supported, got {ctx.ndim(x)}-D")
    if mode not in _LINEAR + _NEAREST or padding not in ("zeros", "border"):
        raise ctx.fail(f"mode {mode!r} with padding {padding!r} is not supported (linear or "
                       f"nearest, with zeros or border padding)")
    return grid_sample_2d(ctx, x, grid, mode in _LINEAR, padding, align)
