"""Numpy reference of ``image.resize2d`` (nearest / linear / cubic, every coordinate
transformation mode TVM has, ``tf_crop_and_resize``'s extrapolation value), NCHW or NHWC."""

from __future__ import annotations

import numpy as np

from ..utils import reference


def _source(out_idx, in_size, out_size, mode, roi_start=0.0, roi_end=1.0):
    scale = in_size / out_size
    x = out_idx.astype("float64")
    if mode == "half_pixel":
        return (x + 0.5) * scale - 0.5
    if mode == "align_corners":
        return x * ((in_size - 1) / (out_size - 1)) if out_size > 1 else np.zeros_like(x)
    if mode == "pytorch_half_pixel":
        return (x + 0.5) * scale - 0.5 if out_size > 1 else np.zeros_like(x)
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) * scale
    if mode == "tf_crop_and_resize":
        if out_size > 1:
            return roi_start * (in_size - 1) + x * (roi_end - roi_start) * (in_size - 1) / (
                out_size - 1)
        return np.full_like(x, 0.5 * (roi_start + roi_end) * (in_size - 1))
    return x * scale  # "asymmetric"


def _nearest(src, in_size, rounding, mode):
    if rounding == "round" or (rounding == "" and mode == "align_corners"):
        idx = np.round(src)
    elif rounding == "round_prefer_floor":
        idx = np.ceil(src - 0.5)
    elif rounding == "round_prefer_ceil":
        idx = np.floor(src + 0.5)
    elif rounding == "ceil":
        idx = np.ceil(src)
    else:
        idx = np.floor(src)
    return np.clip(idx, 0, in_size - 1).astype("int64")


def cubic_weights(frac, a):
    """The four cubic-convolution weights (Keys' kernel of coefficient ``a``) of the taps at
    -1, 0, 1, 2 around each fractional position ``frac``: shared by the resize references and
    the ONNX importers' constant resize tables."""
    def w(x):
        x = np.abs(x)
        return np.where(x <= 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                        np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))

    return [w(frac + 1), w(frac), w(1 - frac), w(2 - frac)]


def _resize_axis(x, axis, out_size, attrs, roi):
    in_size = x.shape[axis]
    src = _source(np.arange(out_size), in_size, out_size, attrs.coordinate_transformation_mode,
                  *roi)
    method = attrs.method
    if method == "nearest_neighbor":
        return np.take(x, _nearest(src, in_size, attrs.rounding_method,
                                   attrs.coordinate_transformation_mode), axis=axis)
    shape = [1] * x.ndim
    shape[axis] = out_size
    if method == "linear":
        lo = np.floor(src)
        frac = (src - lo).reshape(shape)
        i0 = np.clip(lo, 0, in_size - 1).astype("int64")
        i1 = np.clip(lo + 1, 0, in_size - 1).astype("int64")
        return np.take(x, i0, axis=axis) * (1 - frac) + np.take(x, i1, axis=axis) * frac
    lo = np.floor(src)
    frac = src - lo
    weights = cubic_weights(frac, float(attrs.cubic_alpha))
    if attrs.cubic_exclude:
        valid = [((lo + k >= 0) & (lo + k < in_size)).astype("float64") for k in (-1, 0, 1, 2)]
        weights = [w * v for w, v in zip(weights, valid)]
        total = sum(weights)
        weights = [w / total for w in weights]
    out = 0.0
    for k, wk in zip((-1, 0, 1, 2), weights):
        idx = np.clip(lo + k, 0, in_size - 1).astype("int64")
        out = out + np.take(x, idx, axis=axis) * wk.reshape(shape)
    return out


def extrapolate(work, axes, in_sizes, attrs, roi):
    """``work`` (resized along ``axes``) with ``attrs.extrapolation_value`` where a
    ``tf_crop_and_resize`` coordinate falls outside the input; ``roi`` is (starts..., ends...)."""
    if attrs.coordinate_transformation_mode != "tf_crop_and_resize":
        return work
    nd = len(axes)
    for k, (a, n) in enumerate(zip(axes, in_sizes)):
        m = work.shape[a]
        src = _source(np.arange(m), n, m, "tf_crop_and_resize", roi[k], roi[k + nd])
        out = (src < 0) | (src > n - 1)
        if out.any():
            sel = [slice(None)] * work.ndim
            sel[a] = out
            work[tuple(sel)] = float(attrs.extrapolation_value)
    return work


@reference("image.resize2d")
def _resize2d(attrs, args, t):
    x = args[0]
    h_axis, w_axis = (2, 3) if attrs.layout == "NCHW" else (1, 2)
    roi = [float(r) for r in (attrs.roi or (0.0, 0.0, 1.0, 1.0))]
    size = [int(s) for s in attrs.size]
    work = x.astype("float64")
    work = _resize_axis(work, h_axis, size[0], attrs, (roi[0], roi[2]))
    work = _resize_axis(work, w_axis, size[1], attrs, (roi[1], roi[3]))
    work = extrapolate(work, (h_axis, w_axis), (x.shape[h_axis], x.shape[w_axis]), attrs, roi)
    if np.dtype(t.dtype).kind in "iu":
        work = np.round(work)
    return work.astype(t.dtype)
