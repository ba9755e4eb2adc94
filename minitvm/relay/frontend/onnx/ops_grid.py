"""ONNX's spatial-transformer ops on Relay: AffineGrid (opset 20) and GridSample (opset 16's
mode names and opset 20's), onto the sampling the PyTorch importer uses too
(``relay.frontend.spatial``)."""

from __future__ import annotations

from ..spatial import affine_grid_2d, grid_sample
from .dynamic_dim import DynamicDim
from .registry import register
from .shape_values import SizeOf

# opset 20 renamed the modes (linear, cubic); both spellings mean the same sampling
_MODES = {"bilinear": "bilinear", "linear": "bilinear", "nearest": "nearest",
          "bicubic": "bicubic", "cubic": "bicubic"}


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


@register("AffineGrid")
def _affine_grid(ctx, ins, attrs):
    """theta (N, 2, 3), a size [N, C, H, W] -> the (N, H, W, 2) sampling grid. N may be a
    run-time size (a dynamic batch's ``Shape(x)[0]``: the grid's batch is theta's); H and W
    must be constants."""
    elems = ctx.elements(ins[1])
    if elems is None or any(isinstance(v, SizeOf) for v in elems.ravel()[1:]):
        elems = ctx.value(ins[1], "AffineGrid's size (its H and W)")  # (raises its clear error)
    size = list(elems.ravel())
    if len(size) != 4:
        raise ctx.fail(f"only 2-D grids (a size of 4 dims) are supported, got {size}")
    n, _, h, w = size
    rows = ctx.shape(ins[0])[0]
    if not isinstance(n, SizeOf) and not isinstance(rows, DynamicDim) and int(n) != rows:
        raise ctx.fail(f"size's N = {int(n)} but theta has {rows} rows")
    return affine_grid_2d(ins[0], int(h), int(w), bool(attrs.get("align_corners", 0)),
                          ctx.dtype(ins[0]))


@register("GridSample")
def _grid_sample(ctx, ins, attrs):
    x, grid = ins[0], ins[1]
    mode = _text(attrs.get("mode", "linear" if ctx.opset >= 20 else "bilinear"))
    padding = _text(attrs.get("padding_mode", "zeros"))
    if mode not in _MODES or padding not in ("zeros", "border", "reflection"):
        raise ctx.fail(f"mode {mode!r} with padding {padding!r} is not supported")
    shape = ctx.shape(x)
    if len(shape) not in (4, 5):
        raise ctx.fail(f"expects a 4-D or 5-D input, got {len(shape)}-D")
    return grid_sample(x, grid, shape, ctx.dtype(x), _MODES[mode], padding,
                       bool(attrs.get("align_corners", 0)))
