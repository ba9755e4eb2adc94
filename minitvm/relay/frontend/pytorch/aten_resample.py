"""ATen resampling onto Relay: nearest and bilinear 2-D upsampling and 1-D linear upsampling
(``image.resize2d``), from output sizes or scale factors."""

from __future__ import annotations

import math

from ... import op as _op
from ...op import nn as _nn
from .aten import register


@register("upsample_nearest2d")
def _upsample_nearest(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    size = args[1]
    scales = args[2] if len(args) > 2 else None
    if size is not None:
        sh, sw = size[0] / s[2], size[1] / s[3]
    else:
        sh, sw = scales
    return _nn.upsampling(x, sh, sw, method="nearest_neighbor")


def _upsample_scales(args, first):
    """The scale factors of an ``upsample_*`` call: one list (the ``.vec`` overloads) or one
    float per axis from position ``first`` on."""
    if len(args) <= first:
        return None
    return args[first] if len(args) == first + 1 else list(args[first:])


def _resize_plan(ctx, x, size, scales, align=False):
    """The output size of a torch ``upsample_*`` call, checked against Relay's coordinates.

    Without aligned corners torch maps coordinates with the scale factor it is given, where
    Relay's resize uses in/out; the two agree only when out == in * scale exactly, and any
    other scale is refused rather than resized differently.
    """
    spatial = ctx.shape(x)[2:]
    if scales is not None and not isinstance(scales, list | tuple):
        scales = [scales] * len(spatial)
    if scales is not None and all(f is None for f in scales):
        scales = None
    if size is None:
        if scales is None:
            raise ctx.fail("needs an output size or scale factors")
        size = [int(math.floor(n * float(f))) for n, f in zip(spatial, scales, strict=True)]
    size = [int(v) for v in size]
    if not align and scales is not None:
        for n, m, f in zip(spatial, size, scales, strict=True):
            if f is not None and float(f) > 0 and not math.isclose(m, n * float(f)):
                raise ctx.fail(
                    f"scale_factor={float(f)} maps {n} -> {m} pixels with a scale of "
                    f"1/{float(f)}, which Relay's resize cannot express (it uses {n}/{m}); "
                    "pass size=(...) or recompute_scale_factor=True")
    return size


@register("upsample_bilinear2d")
def _upsample_bilinear(ctx, args):
    """(input, output_size, align_corners, scale_factors) or (..., scales_h, scales_w)."""
    x, align = args[0], bool(args[2])
    size = _resize_plan(ctx, x, args[1], _upsample_scales(args, 3), align)
    mode = "align_corners" if align else "half_pixel"
    return _op.image.resize2d(x, size, method="linear", coordinate_transformation_mode=mode)


@register("upsample_linear1d")
def _upsample_linear1d(ctx, args):
    """(input, output_size, align_corners, scale_factors): a 1-row bilinear resize."""
    x, align = args[0], bool(args[2])
    size = _resize_plan(ctx, x, args[1], _upsample_scales(args, 3), align)
    mode = "align_corners" if align else "half_pixel"
    y = _op.image.resize2d(_op.expand_dims(x, 2), [1, size[0]], method="linear",
                           coordinate_transformation_mode=mode)
    return _op.squeeze(y, [2])
