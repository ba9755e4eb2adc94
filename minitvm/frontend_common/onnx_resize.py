"""ONNX Resize arithmetic both importers share (numpy only, no IR): the output shape, scales
and region of interest a Resize node asks for, and per resized axis the source indices and
weights of each interpolation tap (one tap for nearest, two for linear, four for cubic, more
for an antialiased downsample), for every coordinate-transformation mode of the ONNX
specification."""

from __future__ import annotations

import numpy as np

__all__ = ["axis_taps", "resize_plan"]


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
        if attrs.get("antialias", 0):
            raise NotImplementedError("Resize: antialias=1 applies to the linear and cubic "
                                      "modes only, not 'nearest'")
        idx = _nearest(coords, attrs.get("nearest_mode", "round_prefer_floor"))
        return [(np.clip(idx, 0, in_n - 1).astype("int64"), None)], outside
    if attrs.get("antialias", 0):
        offsets, weights, lo = _antialias_taps(attrs, mode, coords, scale)
        return _finish_taps(attrs, in_n, lo, offsets, weights), outside
    lo = np.floor(coords)
    r = coords - lo
    if mode == "linear":
        offsets, weights = [0, 1], [1 - r, r]
    elif mode == "cubic":
        offsets, weights = [-1, 0, 1, 2], _cubic_weights(r, float(attrs.get("cubic_coeff_a",
                                                                             -0.75)))
    else:
        raise NotImplementedError(f"Resize: mode {mode!r} is not supported")
    return _finish_taps(attrs, in_n, lo, offsets, weights), outside


def _finish_taps(attrs, in_n, lo, offsets, weights):
    """(clamped indices, weights) per tap; ``exclude_outside`` drops the weight of taps past
    either edge and renormalizes the rest."""
    raw = [lo + o for o in offsets]
    if attrs.get("exclude_outside", 0):
        weights = [np.where((i < 0) | (i > in_n - 1), 0.0, w) for i, w in zip(raw, weights)]
        total = np.sum(weights, axis=0)
        weights = [w / np.where(total == 0, 1, total) for w in weights]
    return [(np.clip(i, 0, in_n - 1).astype("int64"), w) for i, w in zip(raw, weights)]


def _antialias_taps(attrs, mode, coords, scale):
    """Offsets, weights and base indices of an antialiased linear or cubic resize: when
    downsampling (scale < 1) the interpolation kernel is stretched by 1 / scale, so each
    output averages every input the stretched kernel covers, the weights normalized to sum
    to 1 (the ONNX specification; upsampling is the plain kernel)."""
    s = min(float(scale), 1.0)
    support = 1.0 if mode == "linear" else 2.0
    if mode == "linear":
        def kernel(t):
            return np.clip(1.0 - np.abs(t), 0.0, 1.0)
    elif mode == "cubic":
        a = float(attrs.get("cubic_coeff_a", -0.75))

        def kernel(t):
            t = np.abs(t)
            return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                            np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))
    else:
        raise NotImplementedError(f"Resize: mode {mode!r} is not supported")
    # the base index is the nearest input at or left of the coordinate, strictly left when
    # the coordinate is an integer (the ratio lies in (0, 1]), as the specification's
    # reference picks the neighbours
    lo = np.ceil(coords) - 1
    r = coords - lo
    start = int(np.floor(-support / s) + 1)
    offsets = list(range(start, 2 - start))
    weights = [kernel((o - r) * s) for o in offsets]
    total = np.sum(weights, axis=0)
    return offsets, [w / total for w in weights], lo


def resize_plan(shape: list, attrs: dict, roi_v, scales_v, sizes_v, fail):
    """(output shape, per-axis scales, roi as [starts..., ends...]) of an opset-11+ Resize.

    ``roi_v``, ``scales_v`` and ``sizes_v`` are the known input values (None when omitted);
    ``fail(message)`` builds the importer's error."""
    nd = len(shape)
    axes = [int(a) % nd for a in attrs.get("axes", range(nd))]
    roi = [0.0] * nd + [1.0] * nd
    if roi_v is not None and roi_v.size:
        k = len(axes)
        for i, a in enumerate(axes):
            roi[a], roi[a + nd] = float(roi_v[i]), float(roi_v[i + k])
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
        raise fail("one of scales or sizes must be a constant")
    return out, scales, roi
