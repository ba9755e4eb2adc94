"""ONNX Resize arithmetic both importers share (numpy only, no IR): the output shape, scales
and region of interest a Resize node asks for, and per resized axis the source indices and
weights of each interpolation tap (one tap for nearest, two for linear, four for cubic, more
for an antialiased downsample), for every coordinate-transformation mode of the ONNX
specification; and whether an image ``resize2d`` (which scales by in / out) samples exactly as
those taps, so that both importers emit the one fast op where it does."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..topi.reference.image import cubic_weights

__all__ = ["FUSED_TAPS", "axis_taps", "resize2d_method", "resize2d_params", "resize_plan"]

# the importers' per-axis passes of more taps than this read their input materialized: fused,
# each tap would recompute the previous axis's whole pass (both importers' ``stop_fusion``)
FUSED_TAPS = 2


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
        offsets, weights = [-1, 0, 1, 2], cubic_weights(r, float(attrs.get("cubic_coeff_a",
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


# image.resize2d's coordinate modes and nearest roundings that mean what ONNX's do
_RESIZE2D_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                   "tf_half_pixel_for_nn")
_RESIZE2D_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}
_ROUNDINGS = ("", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


def _tap_matrix(taps, in_n: int, out_n: int) -> np.ndarray:
    """The (out_n, in_n) matrix of one axis' interpolation taps."""
    m = np.zeros((out_n, in_n))
    rows = np.arange(out_n)
    for idx, w in taps:
        np.add.at(m, (rows, idx), 1.0 if w is None else w)
    return m


def _exact_nearest(ctm: str, rounding: str, in_n: int, out_n: int) -> np.ndarray:
    """The input index each output samples under resize2d's nearest-neighbour mapping, whose
    static coordinates are exact rationals (in / out as the scale)."""
    idx = np.empty(out_n, dtype="int64")
    r = Fraction(in_n, out_n)
    half = Fraction(1, 2)
    for o in range(out_n):
        if ctm == "asymmetric":
            c = o * r
        elif ctm == "tf_half_pixel_for_nn":
            c = (o + half) * r
        elif ctm == "align_corners":
            c = Fraction(o * (in_n - 1), out_n - 1) if out_n > 1 else Fraction(0)
        elif ctm == "pytorch_half_pixel" and out_n == 1:
            c = Fraction(0)
        else:  # half_pixel, pytorch_half_pixel
            c = (o + half) * r - half
        fl = c.numerator // c.denominator
        frac = c - fl
        up = {"floor": False, "ceil": frac > 0, "round_prefer_floor": frac > half,
              "round_prefer_ceil": frac >= half}[rounding]
        idx[o] = min(max(fl + int(up), 0), in_n - 1)
    return idx


def resize2d_method(attrs: dict, rank: int, dtype: str) -> dict | None:
    """The keyword arguments of an NCHW ``image.resize2d`` sampling as this ONNX Resize's
    attributes say (mode, coordinate transformation, rounding, cubic), or None where resize2d
    has no such sampling (antialiasing, tf_crop_and_resize, ...) or the input is not a rank-4
    float tensor. resize2d scales by in / out, ONNX by the given factor: they agree for
    ``sizes``, and for ``scales`` where out = in * scale exactly."""
    mode = attrs.get("mode", "nearest")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    rounding = attrs.get("nearest_mode", "round_prefer_floor") if mode == "nearest" else ""
    if (rank != 4 or not dtype.startswith("float") or attrs.get("antialias", 0)
            or mode not in _RESIZE2D_METHODS or ctm not in _RESIZE2D_MODES
            or rounding not in _ROUNDINGS):
        return None
    return {"method": _RESIZE2D_METHODS[mode], "coordinate_transformation_mode": ctm,
            "rounding_method": rounding, "cubic_alpha": float(attrs.get("cubic_coeff_a", -0.75)),
            "cubic_exclude": int(attrs.get("exclude_outside", 0))}


def resize2d_params(attrs: dict, shape: list, out_shape: list, scales: list,
                    dtype: str) -> dict | None:
    """The keyword arguments of an NCHW ``image.resize2d`` that samples exactly as this ONNX
    Resize's taps (static ``shape`` -> ``out_shape`` at ``scales``), else None.

    resize2d scales coordinates by in / out where ONNX uses the given scale factor, so the two
    agree only where the factor's taps equal in / out's: each spatial axis' tap matrix is
    compared (nearest indices exactly, against resize2d's exact rational coordinates)."""
    params = resize2d_method(attrs, len(shape), dtype)
    if params is None or any(out_shape[a] != shape[a] or scales[a] != 1.0 for a in (0, 1)):
        return None
    mode = attrs.get("mode", "nearest")
    ctm, rounding = params["coordinate_transformation_mode"], params["rounding_method"]
    for a in (2, 3):
        in_n, out_n = shape[a], out_shape[a]
        if in_n == out_n and scales[a] == 1.0:
            onnx_m = np.eye(in_n)
        else:
            onnx_m = _tap_matrix(axis_taps(attrs, in_n, out_n, scales[a])[0], in_n, out_n)
        if mode == "nearest":
            taps = [(_exact_nearest(ctm, rounding, in_n, out_n), None)]
        else:  # continuous weights: float64 taps at in / out's scale are resize2d's to rounding
            taps = axis_taps(attrs, in_n, out_n, out_n / in_n)[0]
        if not np.allclose(onnx_m, _tap_matrix(taps, in_n, out_n), rtol=0, atol=1e-6):
            return None
    return params
