"""ONNX's spatial-transformer ops on Relax: AffineGrid (opset 20) and GridSample (opset 16 and
20 mode names). 2-D linear or nearest sampling with zeros or border padding goes onto the
decomposition the torch importer shares (``relax.frontend.spatial``: pixel-row gathers, faster
than one kernel there); cubic sampling, reflection padding and volumetric (5-D) inputs call
Relay's native kernel (``topi.grid_sample``, one PrimFunc). The batch may be symbolic."""

from __future__ import annotations

from ..spatial import affine_grid_2d, grid_sample_2d, grid_sample_kernel
from .context import Context, register

_LINEAR, _NEAREST = ("linear", "bilinear"), ("nearest",)
# ONNX's mode names (opsets 16 and 20) -> topi's
_KERNEL_MODES = {"linear": "bilinear", "bilinear": "bilinear", "nearest": "nearest",
                 "cubic": "bicubic", "bicubic": "bicubic"}


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
    nd = ctx.ndim(x) - 2
    if mode not in _KERNEL_MODES or padding not in ("zeros", "border", "reflection"):
        raise ctx.fail(f"mode {mode!r} with padding {padding!r} is not supported (linear, "
                       f"nearest or cubic; zeros, border or reflection padding)")
    if nd not in (2, 3) or (nd == 3 and _KERNEL_MODES[mode] == "bicubic"):
        raise ctx.fail(f"{mode} sampling of a {nd + 2}-D input is not supported (2-D or 3-D "
                       "images, cubic in 2-D only)")
    if nd == 2 and mode in _LINEAR + _NEAREST and padding in ("zeros", "border"):
        return grid_sample_2d(ctx, x, grid, mode in _LINEAR, padding, align)
    return grid_sample_kernel(ctx, x, grid, _KERNEL_MODES[mode], padding, align)
