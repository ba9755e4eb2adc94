"""ONNX Resize / Upsample to output sizes known only at run time (sizes or scales computed, or
a spatial axis of run-time size). Given sizes: ``dyn.image.resize2d`` on rank-4 views of the
input (its scale in / out is onnxruntime's then). A 2-D resize is one call; a 1-D one resizes
(N, C, 1, W); a 3-D one resizes H and W of (N, C*D, H, W), then D of (N*C, D, 1, H'*W') in NHWC
(its W, of size 1, maps to itself in every coordinate mode), each axis sampled as ONNX's
separable interpolation does; tf_crop_and_resize passes each pass its axes' part of the roi.
Given scales, an antialiased linear / cubic resize, or a keep_aspect_ratio_policy: sampled by
the scale per axis (``run_time_taps``), as onnxruntime, whatever fraction in * scale has. An
integer input resizes in float64 and truncates back; keep_aspect_ratio_policy over the spatial
axes takes one scale. Sizes or scales <= 0 raise at run time, as onnxruntime; attributes with
no run-time form are refused by name."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_run_time_taps import split_roi
from ... import op as _op
from ...expr import Call
from ...op import dyn as _dyn
from .dynamic_dim import DynamicDim, has_dynamic
from .registry import Context
from .run_time_sized import checked
from .run_time_taps import resize_by_scales
from .shape_values import SizeOf

__all__ = ["integer_resized", "resizes_run_time_spatial", "run_time_resize"]

_MODES = ("nearest", "linear", "cubic")
_COORDINATES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                "tf_half_pixel_for_nn", "tf_crop_and_resize")
_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}
_ROUNDINGS = ("floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


def resizes_run_time_spatial(shape, scales_v, sizes_v) -> bool:
    """Whether constant ``sizes`` (any: the run-time size is unknown) or ``scales`` (one other
    than 1) resize a run-time spatial axis of the 3-, 4- or 5-D ``shape``."""
    if len(shape) not in (3, 4, 5) or not has_dynamic(shape[2:]):
        return False
    if sizes_v is not None and sizes_v.size:
        return True
    spatial = [a for a in range(2, len(shape)) if isinstance(shape[a], DynamicDim)]
    return scales_v is not None and scales_v.size == len(shape) and \
        any(scales_v[a] != 1.0 for a in spatial)


def _unsupported(attrs: dict, rank: int, dtype: str, spatial_sizes: bool = True,
                 by_scale: bool = False) -> str:
    """The attribute (or input property) of this resize that has no run-time form, as
    ``name=value``; "" when there is none. ``spatial_sizes``: the sizes name the spatial axes
    only (a keep_aspect_ratio_policy over the batch and channels would resize them);
    ``by_scale``: sampled by the scales (``run_time_taps``), not by resize2d."""
    mode = attrs.get("mode", "nearest")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    policy = attrs.get("keep_aspect_ratio_policy", "stretch")
    checks = (
        ("the input rank", rank, rank in (3, 4, 5)),
        ("the input dtype", dtype, dtype.startswith(("float", "int", "uint"))),
        ("mode", mode, mode in _MODES),
        ("antialias", attrs.get("antialias", 0), mode != "nearest" or
         not attrs.get("antialias", 0)),  # (onnxruntime: linear and cubic only)
        ("coordinate_transformation_mode", ctm, ctm in _COORDINATES),
        ("nearest_mode", attrs.get("nearest_mode", "round_prefer_floor"),
         mode != "nearest" or attrs.get("nearest_mode", "round_prefer_floor") in _ROUNDINGS),
        ("keep_aspect_ratio_policy", policy,
         policy in ("stretch", "not_larger", "not_smaller") and
         (policy == "stretch" or spatial_sizes)),
    )
    for name, value, ok in checks:
        if not ok:
            return f"{name}={value!r}"
    # (onnxruntime leaves an axis of scale 1 as it is; resize2d samples it at (i + 0.5) here,
    # which a ceiling or an interpolation moves: an axis that keeps its size would shift)
    if not by_scale and ctm == "tf_half_pixel_for_nn" and (mode != "nearest" or attrs.get(
            "nearest_mode", "round_prefer_floor") in ("ceil", "round_prefer_ceil")):
        rounding = f"nearest_mode={attrs.get('nearest_mode')!r}" if mode == "nearest" else \
            f"mode={mode!r}"
        return f"coordinate_transformation_mode='tf_half_pixel_for_nn' with {rounding}"
    return ""


def run_time_resize(ctx: Context, x, attrs, what: str, scales=None, sizes=None, roi=None):
    """``x`` (N, C, spatial...) resized to spatial sizes known at run time: those of
    ``sizes``, or floor(in * scale) of ``scales`` (as ONNX); the batch and channels must keep
    their sizes (1.0 scales, or sizes that are theirs). ``roi``: ONNX's roi input, which
    ``tf_crop_and_resize`` reads (known at import)."""
    shape = ctx.shape(x)
    nd = len(shape)
    axes = [int(a) % nd for a in attrs.get("axes", range(nd))]
    by_scale = sizes is None or attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch" \
        or (attrs.get("antialias", 0) and attrs.get("mode", "nearest") != "nearest")
    bad = _unsupported(attrs, nd, ctx.dtype(x), axes == list(range(2, nd)), by_scale)
    if bad:
        raise ctx.fail(f"{what} give output sizes known only at run time, and its {bad} has no "
                       "run-time form (image.resize2d samples 1-D to 3-D inputs: nearest / "
                       "linear / cubic; a keep_aspect_ratio_policy over the spatial axes only); "
                       "pass static sizes in from_onnx's shape=")
    dtype = ctx.dtype(x)
    if not dtype.startswith("float"):  # (sampled in float64, truncated back: integer_resized)
        y = run_time_resize(ctx, _op.cast(x, "float64"), attrs, what, scales, sizes, roi)
        return integer_resized(y, dtype, attrs)
    params = _params(attrs)
    k = nd - 2
    if axes not in (list(range(nd)), list(range(2, nd))):
        raise ctx.fail(f"{what} give output sizes known only at run time over axes {axes}: "
                       f"only the spatial axes {list(range(2, nd))} can be resized so")
    given = sizes if sizes is not None else scales
    lead = 2 if len(axes) == nd else 0
    if lead and not _keeps_batch_and_channels(ctx, shape, given, sizes is not None):
        raise ctx.fail(f"{what} give output sizes known only at run time, and must keep axes "
                       f"0 and 1 (the batch and channels of {tuple(shape)}): they are computed "
                       "too")
    old = _op.cast(_spatial_dims(x, nd), "float32")
    scale = None  # (set: sampled by these scales, as onnxruntime, rather than by resize2d)
    if sizes is not None:
        size = _op.strided_slice(_op.cast(ctx.fold(sizes), "int64"), [lead], [lead + k])
        size = _positive(ctx, size, "the spatial output sizes {} (Resize's sizes)")
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            size, scale = _kept_aspect(ctx, x, size, policy)
        elif attrs.get("antialias", 0) and attrs.get("mode", "nearest") != "nearest":
            scale = _op.divide(_op.cast(size, "float32"), old)
    else:
        factor = _op.strided_slice(_op.cast(ctx.fold(given), "float32"), [lead], [lead + k])
        scale = _positive(ctx, factor, "the spatial scales {}")
        size = _op.cast(_op.floor(_op.multiply(old, scale)), "int64")
    lo, hi = _spatial_roi(ctx, attrs, roi, x, size, what)
    if scale is not None:
        return resize_by_scales(ctx, x, attrs, size, scale, lo, hi)
    zero, one = (ctx.const(np.array([v], "float32")) for v in (0.0, 1.0))
    if k == 2:
        return _dyn.image.resize2d(x, size, roi=_op.concatenate([lo, hi], 0), **params)
    if k == 1:
        y = _dyn.image.resize2d(_op.expand_dims(x, 2),
                                _op.concatenate([ctx.const(np.array([1], "int64")), size], 0),
                                roi=_op.concatenate([zero, lo, one, hi], 0), **params)
        return _op.reshape(y, [0, 0, -1])
    return _resize3d(ctx, x, size, params, lo, hi)


def _params(attrs: dict) -> dict:
    """resize2d's keyword arguments for the sampling ONNX's attributes ask for."""
    mode = attrs.get("mode", "nearest")
    return {"method": _METHODS[mode],
            "coordinate_transformation_mode": attrs.get("coordinate_transformation_mode",
                                                        "half_pixel"),
            "rounding_method": attrs.get("nearest_mode", "round_prefer_floor")
            if mode == "nearest" else "",
            "cubic_alpha": float(attrs.get("cubic_coeff_a", -0.75)),
            "cubic_exclude": int(attrs.get("exclude_outside", 0)),
            "extrapolation_value": float(attrs.get("extrapolation_value", 0.0))}


def _spatial_roi(ctx: Context, attrs: dict, roi, x, size, what: str):
    """(starts, ends) of the spatial axes' region, float32 tensors: ``roi``'s for
    ``tf_crop_and_resize`` (given for every axis, or for the spatial ``axes``) except on an
    axis whose run-time ``size`` is its input's (onnxruntime leaves such an axis as it is),
    else the whole axis."""
    nd = len(ctx.shape(x))
    k = nd - 2
    whole = (ctx.const(np.zeros(k, "float32")), ctx.const(np.ones(k, "float32")))
    if attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize":
        return whole
    v = ctx.maybe_value(roi) if roi is not None else None
    if v is None:
        raise ctx.fail(f"{what} give output sizes known only at run time, and "
                       "tf_crop_and_resize needs its roi known at import")
    bounds = split_roi(v, nd)
    if isinstance(bounds, str):
        raise ctx.fail(bounds)
    lo, hi = bounds
    kept = _op.equal(size, _op.strided_slice(_op.shape_of(x, "int64"), [2], [nd]))
    return tuple(_op.where(kept, w, ctx.const(g)) for w, g in zip(whole, (lo, hi),
                                                                    strict=True))


def _resize3d(ctx: Context, x, size, params: dict, lo: list, hi: list):
    """(N, C, D, H, W) to the run-time (D', H', W') of ``size``: H and W of (N, C*D, H, W),
    then D of (N*C, D, 1, H'*W') in NHWC, reshaped to (N, C, D', H', W'); ``lo`` / ``hi``:
    the (D, H, W) region's starts and ends (float32 tensors)."""
    def at(v, i):
        return _op.take(v, ctx.const(np.array([i], "int64")))

    dims = _op.shape_of(x, "int64")
    n, c, d = (at(dims, i) for i in range(3))
    d2, h2, w2 = (at(size, i) for i in range(3))
    one = ctx.const(np.array([1], "int64"))
    zero_f, one_f = (ctx.const(np.array([v], "float32")) for v in (0.0, 1.0))
    hw_roi = _op.concatenate([_op.strided_slice(lo, [1], [3]), _op.strided_slice(hi, [1], [3])],
                             0)
    d_roi = _op.concatenate([_op.strided_slice(lo, [0], [1]), zero_f,
                             _op.strided_slice(hi, [0], [1]), one_f], 0)
    hw = _dyn.image.resize2d(_op.reshape(x, [0, -3, 0, 0]), _op.concatenate([h2, w2], 0),
                             roi=hw_roi, **params)
    rows = _op.concatenate([_op.multiply(n, c), d, one, _op.multiply(h2, w2)], 0)
    deep = _dyn.image.resize2d(_dyn.reshape(hw, rows), _op.concatenate([d2, one], 0),
                               roi=d_roi, layout="NHWC", **params)
    return _dyn.reshape(deep, _op.concatenate([n, c, d2, h2, w2], 0))


def integer_resized(y, dtype: str, attrs: dict):
    """The float64 resize ``y`` of an integer input back in ``dtype``: truncated toward zero
    as onnxruntime casts (its float32 arithmetic may land 1 off where an interpolated value is
    within rounding of an integer; nearest is exact), a cubic overshoot saturated."""
    if attrs.get("mode", "nearest") == "cubic":
        info = np.iinfo(dtype)
        y = _op.clip(y, float(info.min), float(info.max))
    return _op.cast(y, dtype)


def _spatial_dims(x, nd: int):
    """The spatial sizes of ``x`` at run time (int64)."""
    return _op.strided_slice(_op.shape_of(x, "int64"), [2], [nd])


def _kept_aspect(ctx: Context, x, size, policy: str):
    """(sizes, scales) ONNX's keep_aspect_ratio_policy makes of the requested spatial
    ``size``: one scale for every axis, the least (not_larger) or greatest (not_smaller) of
    size / input, each output round(scale * input); onnxruntime samples by that scale."""
    nd = len(ctx.shape(x))
    old = _op.cast(_spatial_dims(x, nd), "float32")
    ratio = _op.divide(_op.cast(size, "float32"), old)
    scale = (_op.min if policy == "not_larger" else _op.max)(ratio, keepdims=True)
    exact = _op.multiply(old, scale)
    kept = _op.cast(_op.floor(_op.add(exact, ctx.const(np.array(0.5, "float32")))), "int64")
    return kept, _op.multiply(_op.ones_like(ratio), scale)


def _positive(ctx: Context, v, what: str):
    """``v`` once its values are all > 0 at run time (onnxruntime rejects a size or scale of
    0 or below; resize2d would make an empty or failing output)."""
    zero = ctx.const(np.zeros((), ctx.dtype(v)))
    return checked(ctx, v, _op.all(_op.greater(v, zero)), f"{what} must be positive", [v])


def _keeps_batch_and_channels(ctx: Context, shape, given, are_sizes: bool) -> bool:
    """Whether the first two of ``given`` (sizes, or scales) keep those axes of ``shape``:
    scales of 1, sizes equal to the static size or the axis' own run-time size."""
    if not are_sizes:
        lead = _leading_values(ctx, given, 2)
        return lead is not None and bool(np.all(lead == 1.0))
    elems = ctx.elements(given)
    if elems is None:
        return False
    elems = np.asarray(elems).ravel()
    for a in (0, 1):
        v = elems[a]
        if isinstance(v, SizeOf):
            if v.tensor is None or ctx.shape(v.tensor)[v.axis] != shape[a]:
                return False
        elif isinstance(shape[a], DynamicDim) or int(v) != shape[a]:
            return False
    return True


def _leading_values(ctx: Context, e, n: int) -> np.ndarray | None:
    """The first ``n`` elements of the 1-D ``e`` where they are known at import: a constant,
    or a Concat whose leading parts are (``Concat([1, 1], computed)``, the scales PyTorch
    exports); else None."""
    v = ctx.maybe_value(e)
    if v is not None:
        return np.asarray(v).ravel()[:n]
    e = ctx.fold(e)
    if not (isinstance(e, Call) and getattr(e.op, "name", "") == "concatenate"):
        return None
    known = []
    for part in e.args[0].fields:
        pv = ctx.maybe_value(part)
        if pv is None:
            break
        known.extend(np.asarray(pv).ravel())
    return np.array(known[:n]) if len(known) >= n else None
