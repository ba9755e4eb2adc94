"""ONNX Resize / Upsample: separable per-axis interpolation with constant indices and weights.

With static shapes, each resized axis becomes ``sum_t take(x, idx_t, axis) * w_t`` (one tap for
nearest, two for linear, four for cubic), which reproduces every coordinate-transformation mode
of the ONNX specification exactly.
"""

from __future__ import annotations

import numpy as np

from ... import op as _op
from .registry import register


def _source_coords(mode, out_n, in_n, scale, roi_lo, roi_hi):
    x = np.arange(out_n, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjustment = out_n / (scale * in_n)
        center = in_n / 2.0
        offset = center * (1 - adjustment)
        return offset + (x + 0.5) / scale - 0.5
    out_w = scale * in_n  # the spec's (fractional) resized length
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_w > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return x * (in_n - 1) / (out_w - 1) if out_w > 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_crop_and_resize":
        if out_n > 1:
            return roi_lo * (in_n - 1) + x * (roi_hi - roi_lo) * (in_n - 1) / (out_n - 1)
        return np.full_like(x, 0.5 * (roi_lo + roi_hi) * (in_n - 1))
    raise NotImplementedError(f"Resize: coordinate_transformation_mode {mode!r} is not supported")


def _nearest(coords, mode):
    if mode == "round_prefer_floor":
        return np.ceil(coords - 0.5)
    if mode == "round_prefer_ceil":
        return np.floor(coords + 0.5)
    if mode == "floor":
        return np.floor(coords)
    if mode == "ceil":
        return np.ceil(coords)
    raise NotImplementedError(f"Resize: nearest_mode {mode!r} is not supported")


def _cubic_weights(r, a):
    def k(t):
        t = np.abs(t)
        return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                        np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))

    return [k(r + 1), k(r), k(1 - r), k(2 - r)]


def axis_taps(attrs, in_n, out_n, scale, roi_lo=0.0, roi_hi=1.0):
    """Per tap: (indices, weights) along one axis, plus a mask of out-of-range outputs."""
    mode = attrs.get("mode", "nearest")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    coords = _source_coords(ctm, out_n, in_n, scale, roi_lo, roi_hi)
    outside = (coords < 0) | (coords > in_n - 1) if ctm == "tf_crop_and_resize" else \
        np.zeros(out_n, bool)
    if mode == "nearest":
        idx = _nearest(coords, attrs.get("nearest_mode", "round_prefer_floor"))
        return [(np.clip(idx, 0, in_n - 1).astype("int64"), None)], outside
    lo = np.floor(coords)
    r = coords - lo
    if mode == "linear":
        offsets, weights = [0, 1], [1 - r, r]
    elif mode == "cubic":
        offsets, weights = [-1, 0, 1, 2], _cubic_weights(r, float(attrs.get("cubic_coeff_a",
                                                                             -0.75)))
    else:
        raise NotImplementedError(f"Resize: mode {mode!r} is not supported")
    raw = [lo + o for o in offsets]
    if attrs.get("exclude_outside", 0):
        weights = [np.where((i < 0) | (i > in_n - 1), 0.0, w) for i, w in zip(raw, weights)]
        total = np.sum(weights, axis=0)
        weights = [w / np.where(total == 0, 1, total) for w in weights]
    taps = [(np.clip(i, 0, in_n - 1).astype("int64"), w) for i, w in zip(raw, weights)]
    return taps, outside


def resize(ctx, x, attrs, out_shape, scales, roi):
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
    if attrs.get("antialias", 0):
        raise NotImplementedError(f"{ctx.where()}: Resize with antialias=1 is not supported")
    if ctx.opset < 11:
        scales = [float(s) for s in ctx.value(ins[1], "Resize's scales")]
        attrs = dict(attrs)
        attrs.setdefault("coordinate_transformation_mode", "asymmetric")
        attrs.setdefault("nearest_mode", "floor")
        out = [int(np.floor(d * s)) for d, s in zip(shape, scales)]
        return resize(ctx, x, attrs, out, scales, [0.0] * nd + [1.0] * nd)
    axes = [int(a) % nd for a in attrs.get("axes", range(nd))]
    roi_v = ctx.value(ins[1], "Resize's roi") if len(ins) > 1 and ins[1] is not None else None
    roi = [0.0] * nd + [1.0] * nd
    if roi_v is not None and roi_v.size:
        k = len(axes)
        for i, a in enumerate(axes):
            roi[a], roi[a + nd] = float(roi_v[i]), float(roi_v[i + k])
    scales_v = ctx.value(ins[2], "Resize's scales") if len(ins) > 2 and ins[2] is not None \
        else None
    sizes_v = ctx.value(ins[3], "Resize's sizes") if len(ins) > 3 and ins[3] is not None \
        else None
    scales, out = [1.0] * nd, list(shape)
    if sizes_v is not None and sizes_v.size:
        sizes = [int(s) for s in sizes_v]
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy == "stretch":
            for i, a in enumerate(axes):
                out[a] = sizes[i]
                scales[a] = sizes[i] / shape[a]
        else:
            ratios = [sizes[i] / shape[a] for i, a in enumerate(axes)]
            s = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                scales[a] = s
                out[a] = int(np.floor(shape[a] * s + 0.5))
    elif scales_v is not None and scales_v.size:
        for i, a in enumerate(axes):
            scales[a] = float(scales_v[i])
            out[a] = int(np.floor(shape[a] * scales[a]))
    else:
        raise ctx.fail("one of scales or sizes must be a constant")
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
