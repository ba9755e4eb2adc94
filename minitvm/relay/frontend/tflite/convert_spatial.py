"""Float converters of the spatial rearrangements: PAD / PADV2 / MIRROR_PAD, the resizes,
SPACE_TO_DEPTH / DEPTH_TO_SPACE and SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND."""

from __future__ import annotations

from ... import expr as _expr
from ... import op as _op
from ...op import dyn as _dyn
from ...op import nn as _nn
from .op_context import _ints, register


@register("PAD", "PADV2")
def _pad(ctx):
    pads = ctx.value(1, "the paddings").astype("int64")
    value = 0.0
    if ctx.name == "PADV2" and len(ctx.inputs) > 2:
        value = float(ctx.value(2, "the pad value").reshape(-1)[0])
    return _nn.pad(ctx.inputs[0], [tuple(p) for p in pads], pad_value=value)


@register("MIRROR_PAD")
def _mirror_pad(ctx):
    pads = ctx.value(1, "the paddings").astype("int64")
    mode = "REFLECT" if int(ctx.options().Mode()) == 0 else "SYMMETRIC"
    return _nn.mirror_pad(ctx.inputs[0], [tuple(int(v) for v in p) for p in pads], mode=mode)


def _resize(method):
    def convert(ctx):
        x = ctx.inputs[0]
        size_in = ctx.importer.fold(ctx.inputs[1])
        # a size computed when the model runs (SHAPE of a run-time sized tensor): dyn resize
        size = _ints(ctx, 1, "the output size") if isinstance(size_in, _expr.Constant) \
            else None
        opt = ctx.options()
        align = bool(opt.AlignCorners()) if opt is not None else False
        half = bool(opt.HalfPixelCenters()) if opt is not None else False
        if align:
            mode = "align_corners"
        elif half:
            mode = "half_pixel" if method == "linear" else "tf_half_pixel_for_nn"
        else:
            mode = "asymmetric"
        rounding = "round_prefer_ceil" if align else "floor"
        kw = dict(layout="NHWC", method=method, coordinate_transformation_mode=mode,
                  rounding_method=rounding if method != "linear" else "")
        if size is None:
            return _dyn.resize2d(x, _op.cast(size_in, "int64"), **kw)
        return _op.image.resize2d(x, size, **kw)

    return convert


register("RESIZE_BILINEAR")(_resize("linear"))
register("RESIZE_NEAREST_NEIGHBOR")(_resize("nearest_neighbor"))


@register("SPACE_TO_DEPTH")
def _space_to_depth(ctx):
    return _nn.space_to_depth(ctx.inputs[0], int(ctx.options().BlockSize()), layout="NHWC")


@register("DEPTH_TO_SPACE")
def _depth_to_space(ctx):
    return _nn.depth_to_space(ctx.inputs[0], int(ctx.options().BlockSize()), layout="NHWC",
                              mode="DCR")


@register("SPACE_TO_BATCH_ND")
def _space_to_batch(ctx):
    pads = ctx.value(2, "the paddings").astype("int64").tolist()
    return _nn.space_to_batch_nd(ctx.inputs[0], _ints(ctx, 1, "the block shape"), pads)


@register("BATCH_TO_SPACE_ND")
def _batch_to_space(ctx):
    crops = ctx.value(2, "the crops").astype("int64").tolist()
    return _nn.batch_to_space_nd(ctx.inputs[0], _ints(ctx, 1, "the block shape"), crops)
