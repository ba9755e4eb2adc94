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

A dynamic (``relay.Any()``) axis, the batch of an exported model, resizes only by 1: a scale of
1.0, or a ``sizes`` element that is that axis's own run-time size (PyTorch exports
``F.interpolate(x, size=...)`` as ``Concat(Shape(x)[:2], sizes)``). It then passes through with
its size unknown at import (``dynamic_resize_plan``). Sizes or scales computed at run time
(``F.interpolate`` to a size computed from the input's), and a resize of a run-time height or
width, are ``dyn.image.resize2d`` where resize2d samples as the Resize does (``run_time_resize``:
1-D, 2-D and 3-D resizes of the spatial axes); any other resize of a run-time size is an
error naming the attribute that has no run-time form. An integer input's weighted taps run in
float64 and truncate back, as onnxruntime casts.
"""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_resize import (
    FUSED_TAPS,
    axis_taps,
    resize2d_params,
    resize_plan,
)
from ... import op as _op
from ...op import annotation as _annotation
from .dynamic_dim import DynamicDim, has_dynamic
from .registry import register
from .run_time_resize import integer_resized, resizes_run_time_spatial, run_time_resize
from .shape_values import SizeOf


def _as_resize2d(ctx, x, attrs, out_shape, scales):
    """``image.resize2d`` of ``x`` when it samples exactly as the ONNX taps would (else None;
    the decision is shared with the Relax importer, ``frontend_common.onnx_resize``)."""
    params = resize2d_params(attrs, ctx.shape(x), out_shape, scales, ctx.dtype(x))
    if params is None:
        return None
    return _op.image.resize2d(x, out_shape[2:], **params)


def resize(ctx, x, attrs, out_shape, scales, roi):
    dt = ctx.dtype(x)
    if not dt.startswith("float") and attrs.get("mode", "nearest") != "nearest":
        # (weighted taps of an integer input: in float64, then truncated back, as onnxruntime;
        # weights cast to the integer dtype were 0 or 1)
        y = resize(ctx, _op.cast(x, "float64"), attrs, out_shape, scales, roi)
        return integer_resized(y, dt, attrs)
    fast = _as_resize2d(ctx, x, attrs, out_shape, scales)
    if fast is not None:
        return fast
    shape = ctx.shape(x)
    nd = len(shape)
    dt = ctx.dtype(x)
    # (a dynamic axis is never resized: the mask broadcasts along it)
    outside_mask = np.zeros([1 if isinstance(d, DynamicDim) else d for d in out_shape], bool)
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


def _own_sizes(ctx, shape, sizes):
    """The elements of ``sizes`` (shape arithmetic, not a constant), each a dynamic axis's own
    run-time size replaced by the placeholder 1; None when one is any other run-time size."""
    elems = ctx.elements(sizes)
    if elems is None:
        return None
    out = []
    for a, v in enumerate(elems.ravel()):
        if isinstance(v, SizeOf):
            if v.tensor is None or a >= len(shape) or \
                    ctx.shape(v.tensor)[v.axis] != shape[a]:
                return None
            out.append(1)
        else:
            out.append(int(v))
    return np.array(out, "int64")


def dynamic_resize_plan(ctx, shape, attrs, roi_v, scales_v, sizes_v):
    """``resize_plan`` of an input with dynamic axes: planned on a placeholder size of 1 for
    each (it must come out unresized), which the output shape then holds as the input's own
    ``DynamicDim``."""
    nd = len(shape)
    dynamic = [a for a, d in enumerate(shape) if isinstance(d, DynamicDim)]
    axes = [int(a) % nd for a in attrs.get("axes", range(nd))]
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    if sizes_v is not None and sizes_v.size and \
            attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch" and \
            any(a in axes for a in dynamic):
        raise ctx.fail(f"a keep_aspect_ratio_policy over the dynamic axes {dynamic} of "
                       f"{tuple(shape)} needs their static sizes; pass them in from_onnx's shape=")
    proxy = [1 if isinstance(d, DynamicDim) else d for d in shape]
    out, scales, roi = resize_plan(proxy, attrs, roi_v, scales_v, sizes_v, ctx.fail)
    for a in dynamic:
        if out[a] != 1 or scales[a] != 1.0 or ctm == "tf_crop_and_resize":
            raise ctx.fail(f"resizing the dynamic axis {a} of {tuple(shape)} (scale "
                           f"{scales[a]}) needs its static size; pass it in from_onnx's shape=")
        out[a] = shape[a]
    return out, scales, roi


@register("Resize")
def _resize(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    if ctx.opset < 11:
        attrs = dict(attrs)
        attrs.setdefault("coordinate_transformation_mode", "asymmetric")
        attrs.setdefault("nearest_mode", "floor")
        if ctx.at_run_time(ins[1]):
            return run_time_resize(ctx, x, attrs, scales=ins[1], what="Resize's scales")
        scales = [float(s) for s in ctx.value(ins[1], "Resize's scales")]
        return _by_scales(ctx, x, attrs, scales)
    roi_in = ins[1] if len(ins) > 1 and ins[1] is not None else None
    scales_in = ins[2] if len(ins) > 2 and ins[2] is not None else None
    sizes_in = ins[3] if len(ins) > 3 and ins[3] is not None else None
    own = None
    if sizes_in is not None and has_dynamic(shape) and ctx.maybe_value(sizes_in) is None:
        own = _own_sizes(ctx, shape, sizes_in)  # (the batch's own size: passes through)
    if own is None and sizes_in is not None and ctx.at_run_time(sizes_in):
        return run_time_resize(ctx, x, attrs, sizes=sizes_in, roi=roi_in, what="Resize's sizes")
    if scales_in is not None and ctx.at_run_time(scales_in):
        return run_time_resize(ctx, x, attrs, scales=scales_in, roi=roi_in, what="Resize's scales")
    roi_v = ctx.value(ins[1], "Resize's roi") if len(ins) > 1 and ins[1] is not None else None
    scales_v = ctx.value(scales_in, "Resize's scales") if scales_in is not None else None
    sizes_v = own if own is not None or sizes_in is None else \
        ctx.value(sizes_in, "Resize's sizes")
    if own is None and resizes_run_time_spatial(shape, scales_v, sizes_v):
        # (constant sizes or scales of a run-time height or width: resized at run time)
        if sizes_v is not None and sizes_v.size:
            return run_time_resize(ctx, x, attrs, sizes=sizes_in, roi=roi_in, what="Resize's sizes")
        return run_time_resize(ctx, x, attrs, scales=scales_in, roi=roi_in, what="Resize's scales")
    if has_dynamic(shape):
        out, scales, roi = dynamic_resize_plan(ctx, shape, attrs, roi_v, scales_v, sizes_v)
    else:
        out, scales, roi = resize_plan(shape, attrs, roi_v, scales_v, sizes_v, ctx.fail)
    return resize(ctx, x, attrs, out, scales, roi)


@register("Upsample")
def _upsample(ctx, ins, attrs):
    x = ins[0]
    a = {"mode": attrs.get("mode", "nearest"), "coordinate_transformation_mode": "asymmetric",
         "nearest_mode": "floor"}
    if len(ins) > 1 and ctx.at_run_time(ins[1]):
        return run_time_resize(ctx, x, a, scales=ins[1], what="Upsample's scales")
    scales = [float(s) for s in (ctx.value(ins[1], "Upsample's scales") if len(ins) > 1
                                  else attrs["scales"])]
    return _by_scales(ctx, x, a, scales)


def _by_scales(ctx, x, attrs, scales):
    """A resize of ``x`` by one scale per axis (Upsample; Resize before opset 11)."""
    shape = ctx.shape(x)
    nd = len(shape)
    if has_dynamic(shape):
        out, scales, roi = dynamic_resize_plan(ctx, shape, {**attrs, "axes": range(nd)},
                                               None, np.array(scales), None)
        return resize(ctx, x, attrs, out, scales, roi)
    out = [int(np.floor(d * s)) for d, s in zip(shape, scales)]
    return resize(ctx, x, attrs, out, scales, [0.0] * nd + [1.0] * nd)
