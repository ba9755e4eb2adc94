"""ONNX Resize / Upsample: separable per-axis interpolation with constant indices and weights.

A 4-D float resize of the two spatial axes whose sampling Relay's ``image.resize2d`` reproduces
(checked per axis on the actual sizes, see ``_as_resize2d``) becomes one ``image.resize2d``, which
has its own vectorized schedule. Every other resize becomes, per resized axis,
``sum_t take(x, idx_t, axis) * w_t`` (one tap for nearest, two for linear, four for cubic), which
reproduces every coordinate-transformation mode of the ONNX specification exactly. The input of
a pass of more than ``FUSED_TAPS`` taps (an antialiased downscale: 5-7 for 240x320 -> 112x112)
is materialized (``stop_fusion``): fused, every tap of the pass would recompute the previous
axis's pass (or x's producer), all its taps included (one thread, 240x320 -> 112x112 linear
antialiased: 0.76 ms as one kernel, ORT 0.29 ms).
"""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_resize import FUSED_TAPS, axis_taps, resize2d_params, resize_plan
from ... import op as _op
from ...op import annotation as _annotation
from .registry import register


def _as_resize2d(ctx, x, attrs, out_shape, scales):
    """``image.resize2d`` of ``x`` when it samples exactly as the ONNX taps would (else None;
    the decision is shared with the Relax importer, ``frontend_common.onnx_resize``)."""
    params = resize2d_params(attrs, ctx.shape(x), out_shape, scales, ctx.dtype(x))
    if params is None:
        return None
    return _op.image.resize2d(x, out_shape[2:], **params)


def resize(ctx, x, attrs, out_shape, scales, roi):
    fast = _as_resize2d(ctx, x, attrs, out_shape, scales)
    if fast is not None:
        return fast
    shape = ctx.shape(x)
    nd = len(shape)
    dt = ctx.dtype(x)
    outside_mask = np.zeros(out_shape, dtype=bool)
    any_outside = False
    for a in range(nd):
        in_n, out_n, scale = shape[a], out_shape[a], scales[a]
        ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
        if in_n == out_n and scale == 1.0 and ctm != "tf_crop_and_resize":
            continue
        taps, outside = axis_taps(attrs, in_n, out_n, scale, roi[a], roi[a + nd])
        bshape = [1] * nd
        bshape[a] = out_n
        if len(taps) > FUSED_TAPS:
            x = _annotation.stop_fusion(x)
        acc = None
        for idx, w in taps:
            term = _op.take(x, ctx.const(idx), axis=a)
            if w is not None:
                term = _op.multiply(term, ctx.const(w.reshape(bshape).astype(dt)))
            acc = term if acc is None else _op.add(acc, term)
        x = acc
        if outside.any():
            any_outside = True
            outside_mask |= outside.reshape(bshape)
    if any_outside:
        fill = ctx.const(np.array(attrs.get("extrapolation_value", 0.0), dt))
        x = _op.where(ctx.const(outside_mask), fill, x)
    return x


@register("Resize")
def _resize(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    nd = len(shape)
    if ctx.opset < 11:
        scales = [float(s) for s in ctx.value(ins[1], "Resize's scales")]
        attrs = dict(attrs)
        attrs.setdefault("coordinate_transformation_mode", "asymmetric")
        attrs.setdefault("nearest_mode", "floor")
        out = [int(np.floor(d * s)) for d, s in zip(shape, scales)]
        return resize(ctx, x, attrs, out, scales, [0.0] * nd + [1.0] * nd)
    roi_v = ctx.value(ins[1], "Resize's roi") if len(ins) > 1 and ins[1] is not None else None
    scales_v = ctx.value(ins[2], "Resize's scales") if len(ins) > 2 and ins[2] is not None \
        else None
    sizes_v = ctx.value(ins[3], "Resize's sizes") if len(ins) > 3 and ins[3] is not None \
        else None
    out, scales, roi = resize_plan(shape, attrs, roi_v, scales_v, sizes_v, ctx.fail)
    return resize(ctx, x, attrs, out, scales, roi)


@register("Upsample")
def _upsample(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    nd = len(shape)
    scales = [float(s) for s in (ctx.value(ins[1], "Upsample's scales") if len(ins) > 1
                                  else attrs["scales"])]
    a = {"mode": attrs.get("mode", "nearest"), "coordinate_transformation_mode": "asymmetric",
         "nearest_mode": "floor"}
    out = [int(np.floor(d * s)) for d, s in zip(shape, scales)]
    return resize(ctx, x, a, out, scales, [0.0] * nd + [1.0] * nd)
