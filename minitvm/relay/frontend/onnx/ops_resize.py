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
width, are ``dyn.image.resize2d`` where resize2d samples as the Resize does (4-D float NCHW;
``_run_time_resize``); any other resize of a run-time size is an error.
"""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_resize import (
    FUSED_TAPS,
    axis_taps,
    resize2d_method,
    resize2d_params,
    resize_plan,
)
from ... import op as _op
from ...expr import Call
from ...op import annotation as _annotation
from ...op import dyn as _dyn
from .dynamic_dim import DynamicDim, has_dynamic
from .registry import register
from .run_time_sized import checked
from .shape_values import SizeOf


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
            return _run_time_resize(ctx, x, attrs, scales=ins[1], what="Resize's scales")
        scales = [float(s) for s in ctx.value(ins[1], "Resize's scales")]
        return _by_scales(ctx, x, attrs, scales)
    scales_in = ins[2] if len(ins) > 2 and ins[2] is not None else None
    sizes_in = ins[3] if len(ins) > 3 and ins[3] is not None else None
    own = None
    if sizes_in is not None and has_dynamic(shape) and ctx.maybe_value(sizes_in) is None:
        own = _own_sizes(ctx, shape, sizes_in)  # (the batch's own size: passes through)
    if own is None and sizes_in is not None and ctx.at_run_time(sizes_in):
        return _run_time_resize(ctx, x, attrs, sizes=sizes_in, what="Resize's sizes")
    if scales_in is not None and ctx.at_run_time(scales_in):
        return _run_time_resize(ctx, x, attrs, scales=scales_in, what="Resize's scales")
    roi_v = ctx.value(ins[1], "Resize's roi") if len(ins) > 1 and ins[1] is not None else None
    scales_v = ctx.value(scales_in, "Resize's scales") if scales_in is not None else None
    sizes_v = own if own is not None or sizes_in is None else \
        ctx.value(sizes_in, "Resize's sizes")
    if own is None and _resizes_run_time_hw(shape, scales_v, sizes_v):
        # (constant sizes or scales of a run-time height or width: resized at run time)
        if sizes_v is not None and sizes_v.size:
            return _run_time_resize(ctx, x, attrs, sizes=sizes_in, what="Resize's sizes")
        return _run_time_resize(ctx, x, attrs, scales=scales_in, what="Resize's scales")
    if has_dynamic(shape):
        out, scales, roi = dynamic_resize_plan(ctx, shape, attrs, roi_v, scales_v, sizes_v)
    else:
        out, scales, roi = resize_plan(shape, attrs, roi_v, scales_v, sizes_v, ctx.fail)
    return resize(ctx, x, attrs, out, scales, roi)


def _resizes_run_time_hw(shape, scales_v, sizes_v) -> bool:
    """Whether constant ``sizes`` (any: the run-time size is unknown) or ``scales`` (one other
    than 1) resize a run-time height or width of the 4-D ``shape``."""
    if len(shape) != 4 or not has_dynamic(shape[2:]):
        return False
    if sizes_v is not None and sizes_v.size:
        return True
    hw = [a for a in (2, 3) if isinstance(shape[a], DynamicDim)]
    return scales_v is not None and scales_v.size == 4 and any(scales_v[a] != 1.0 for a in hw)


def _run_time_resize(ctx, x, attrs, what: str, scales=None, sizes=None):
    """``dyn.image.resize2d`` of the NCHW ``x`` to spatial sizes known at run time: the last
    two of ``sizes``, or floor(in * scale) of the last two ``scales`` (as ONNX); the batch and
    channels must keep their sizes (1.0 scales, or sizes that are theirs)."""
    shape = ctx.shape(x)
    params = resize2d_method(attrs, len(shape), ctx.dtype(x))
    axes = [int(a) % max(len(shape), 1) for a in attrs.get("axes", range(len(shape)))]
    if params is None or attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise ctx.fail(f"{what} give output sizes known only at run time, which only a 4-D "
                       "float NCHW resize that image.resize2d samples takes (nearest / linear / "
                       "cubic, no antialias, no tf_crop_and_resize, keep_aspect_ratio_policy "
                       "stretch); pass static sizes in from_onnx's shape=")
    if axes not in ([0, 1, 2, 3], [2, 3]):
        raise ctx.fail(f"{what} give output sizes known only at run time over axes {axes}: "
                       "only the spatial axes (2, 3) can be resized so")
    given = sizes if sizes is not None else scales
    lead = 2 if len(axes) == 4 else 0
    if lead and not _keeps_batch_and_channels(ctx, shape, given, sizes is not None):
        raise ctx.fail(f"{what} give output sizes known only at run time, and must keep axes "
                       f"0 and 1 (the batch and channels of {tuple(shape)}): they are computed "
                       "too")
    if sizes is not None:
        size = _op.strided_slice(_op.cast(ctx.fold(sizes), "int64"), [lead], [lead + 2])
        size = _positive(ctx, size, "the output height and width {} (Resize's sizes)")
    else:
        hw = _op.cast(_op.strided_slice(_op.shape_of(x, "int64"), [2], [4]), "float32")
        factor = _op.strided_slice(_op.cast(ctx.fold(given), "float32"), [lead], [lead + 2])
        factor = _positive(ctx, factor, "the height and width scales {}")
        size = _op.cast(_op.floor(_op.multiply(hw, factor)), "int64")
    return _dyn.image.resize2d(x, size, **params)


def _positive(ctx, v, what: str):
    """``v`` once its values are all > 0 at run time (onnxruntime rejects a size or scale of
    0 or below; resize2d would make an empty or failing output)."""
    zero = ctx.const(np.zeros((), ctx.dtype(v)))
    return checked(ctx, v, _op.all(_op.greater(v, zero)), f"{what} must be positive", [v])


def _keeps_batch_and_channels(ctx, shape, given, are_sizes: bool) -> bool:
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


def _leading_values(ctx, e, n: int) -> np.ndarray | None:
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


@register("Upsample")
def _upsample(ctx, ins, attrs):
    x = ins[0]
    a = {"mode": attrs.get("mode", "nearest"), "coordinate_transformation_mode": "asymmetric",
         "nearest_mode": "floor"}
    if len(ins) > 1 and ctx.at_run_time(ins[1]):
        return _run_time_resize(ctx, x, a, scales=ins[1], what="Upsample's scales")
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
