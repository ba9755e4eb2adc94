"""ONNX Resize / Upsample: separable per-axis interpolation with constant indices and weights.

A 4-D float resize of the two spatial axes whose sampling Relay's ``image.resize2d`` reproduces
(checked per axis on the actual sizes, see ``_as_resize2d``) becomes one ``image.resize2d``, which
has its own vectorized schedule. Every other resize becomes, per resized axis,
``sum_t take(x, idx_t, axis) * w_t`` (one tap for nearest, two for linear, four for cubic), which
reproduces every coordinate-transformation mode of the ONNX specification exactly.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ....frontend_common.onnx_resize import axis_taps, resize_plan
from ... import op as _op
from .registry import register

# image.resize2d's coordinate modes and nearest roundings that mean what ONNX's do
_RESIZE2D_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                   "tf_half_pixel_for_nn")
_RESIZE2D_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}


def _tap_matrix(taps, in_n, out_n):
    """The (out_n, in_n) matrix of one axis' interpolation taps."""
    m = np.zeros((out_n, in_n))
    rows = np.arange(out_n)
    for idx, w in taps:
        np.add.at(m, (rows, idx), 1.0 if w is None else w)
    return m


def _exact_nearest(ctm, rounding, in_n, out_n):
    """The input index each output samples under image.resize2d's nearest-neighbour mapping,
    whose static coordinates are exact rationals (in / out as the scale)."""
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


def _as_resize2d(ctx, x, attrs, out_shape, scales):
    """``image.resize2d`` of ``x`` when it samples exactly as the ONNX taps would (else None).

    Relay's resize scales coordinates by in/out where ONNX uses the given scale factor, so the
    two agree only where the factor's taps equal in/out's; each spatial axis' tap matrix is
    compared (nearest indices exactly, against resize2d's exact rational coordinates)."""
    shape = ctx.shape(x)
    mode = attrs.get("mode", "nearest")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    rounding = attrs.get("nearest_mode", "round_prefer_floor") if mode == "nearest" else ""
    if (len(shape) != 4 or not ctx.dtype(x).startswith("float") or attrs.get("antialias", 0)
            or mode not in _RESIZE2D_METHODS or ctm not in _RESIZE2D_MODES
            or rounding not in ("", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")
            or any(out_shape[a] != shape[a] or scales[a] != 1.0 for a in (0, 1))):
        return None
    for a in (2, 3):
        in_n, out_n = shape[a], out_shape[a]
        if in_n == out_n and scales[a] == 1.0:
            onnx_m = np.eye(in_n)
        else:
            onnx_m = _tap_matrix(axis_taps(attrs, in_n, out_n, scales[a])[0], in_n, out_n)
        if mode == "nearest":
            relay_taps = [(_exact_nearest(ctm, rounding, in_n, out_n), None)]
        else:  # continuous weights: float64 taps at in/out's scale are resize2d's to rounding
            relay_taps = axis_taps(attrs, in_n, out_n, out_n / in_n)[0]
        if not np.allclose(onnx_m, _tap_matrix(relay_taps, in_n, out_n), rtol=0, atol=1e-6):
            return None
    return _op.image.resize2d(
        x, out_shape[2:], method=_RESIZE2D_METHODS[mode], coordinate_transformation_mode=ctm,
        rounding_method=rounding, cubic_alpha=float(attrs.get("cubic_coeff_a", -0.75)),
        cubic_exclude=int(attrs.get("exclude_outside", 0)))


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
