"""ONNX Resize sampled by scales known only at run time: per spatial axis the source coordinate
of each output as onnxruntime computes it from the scale (float32, ``(o + 0.5) / s - 0.5`` for
half_pixel, ...), then the interpolation taps of that coordinate -- one ``take`` per tap of
nearest / linear / cubic, as the constant-scale path (``ops_resize.resize``) -- or, for an
antialiased linear / cubic resize, whose tap count follows the run-time scale, an (out, in)
matrix of the kernel stretched by 1 / scale applied as a ``dense`` product. ``image.resize2d``
samples by the ratio of the sizes instead, which differs where in * scale has a fraction."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_resize import FUSED_TAPS
from ... import op as _op
from ...op import annotation as _annotation
from .registry import Context

__all__ = ["resize_by_scales"]

_TAPS = {"nearest": 1, "linear": 2, "cubic": 4}


def resize_by_scales(ctx: Context, x, attrs: dict, size, scale, lo, hi):
    """``x`` (N, C, spatial...) of a float dtype resized to the run-time spatial ``size`` (int64,
    one per spatial axis) sampling each axis by ``scale`` (float32, one per axis); ``lo`` /
    ``hi``: each axis' roi (float32, read by tf_crop_and_resize), whose outputs outside the
    input take the extrapolation value."""
    nd = len(ctx.shape(x))
    mode = attrs.get("mode", "nearest")
    antialias = bool(attrs.get("antialias", 0)) and mode != "nearest"
    outside = []
    for i in range(nd - 2):
        a = i + 2
        n_in = _at(ctx, _op.shape_of(x, "int64"), a)
        n_out, s = _at(ctx, size, i), _at(ctx, scale, i)
        coords, out = _coordinates(ctx, attrs, n_in, n_out, s, _at(ctx, lo, i), _at(ctx, hi, i))
        if antialias:
            x = _by_matrix(ctx, x, a, _antialias_matrix(ctx, attrs, coords, n_in, s))
        else:
            taps = _taps(ctx, attrs, coords, n_in)
            if len(taps) > FUSED_TAPS:  # (each tap would recompute the previous axis's pass)
                x = _annotation.stop_fusion(x)
            x = _by_taps(ctx, x, a, taps)
        if out is not None:
            outside.append(_op.reshape(out, [-1] + [1] * (nd - 1 - a)))
    if outside:
        mask = outside[0]
        for m in outside[1:]:
            mask = _op.logical_or(mask, m)
        fill = ctx.const(np.array(attrs.get("extrapolation_value", 0.0), ctx.dtype(x)))
        x = _op.where(mask, fill, x)
    return x


def _at(ctx: Context, v, i: int):
    """Element ``i`` of the 1-D ``v``, a scalar."""
    return _op.take(v, ctx.const(np.array(i, "int64")))


def _f32(ctx: Context, v: float):
    return ctx.const(np.array(v, "float32"))


def _coordinates(ctx: Context, attrs: dict, n_in, n_out, s, lo, hi):
    """(source coordinate of each output along one axis, float32; the mask of outputs outside
    the input under tf_crop_and_resize, else None), as onnxruntime: an axis of scale 1 samples
    each output at its own index."""
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    o = _op.cast(_op.arange(ctx.const(np.array(0, "int64")), n_out,
                            ctx.const(np.array(1, "int64")), "int64"), "float32")
    fin, fout = _op.cast(n_in, "float32"), _op.cast(n_out, "float32")
    half, one, zero = _f32(ctx, 0.5), _f32(ctx, 1.0), _f32(ctx, 0.0)
    single = _op.less_equal(fout, one)  # (one output: align_corners / pytorch's sample 0)
    if ctm == "half_pixel":
        c = _op.subtract(_op.divide(_op.add(o, half), s), half)
    elif ctm == "pytorch_half_pixel":
        c = _op.where(single, _op.zeros_like(o),
                      _op.subtract(_op.divide(_op.add(o, half), s), half))
    elif ctm == "align_corners":
        c = _op.where(single, _op.zeros_like(o), _op.divide(
            _op.multiply(o, _op.subtract(fin, one)), _op.subtract(fout, one)))
    elif ctm == "asymmetric":
        c = _op.divide(o, s)
    elif ctm == "tf_half_pixel_for_nn":
        c = _op.divide(_op.add(o, half), s)
    elif ctm == "tf_crop_and_resize":
        span = _op.subtract(fin, one)
        c = _op.where(single, _op.full_like(o, _op.multiply(_op.multiply(
            _op.add(lo, hi), half), span)), _op.add(_op.multiply(lo, span), _op.divide(
                _op.multiply(o, _op.multiply(_op.subtract(hi, lo), span)),
                _op.subtract(fout, one))))
        out = _op.logical_or(_op.less(c, zero), _op.greater(c, span))
        return c, out
    else:
        raise ctx.fail(f"coordinate_transformation_mode={ctm!r} has no run-time form")
    return _op.where(_op.equal(s, one), o, c), None


def _taps(ctx: Context, attrs: dict, c, n_in) -> list:
    """(int64 source index, float32 weight or None) per tap of the coordinates ``c``: the
    rounded index for nearest, floor and floor + 1 for linear, floor - 1 .. floor + 2 with
    Keys' cubic weights for cubic (``exclude_outside`` renormalizes over the taps inside);
    indices clamped into the axis."""
    mode = attrs.get("mode", "nearest")
    last = _op.subtract(n_in, ctx.const(np.array(1, "int64")))
    zero = ctx.const(np.array(0, "int64"))

    def clamp(i):
        return _op.minimum(_op.maximum(i, zero), last)

    if mode == "nearest":
        rounding = attrs.get("nearest_mode", "round_prefer_floor")
        half = _f32(ctx, 0.5)
        r = {"round_prefer_floor": lambda: _op.ceil(_op.subtract(c, half)),
             "round_prefer_ceil": lambda: _op.floor(_op.add(c, half)),
             "floor": lambda: _op.floor(c), "ceil": lambda: _op.ceil(c)}[rounding]()
        return [(clamp(_op.cast(r, "int64")), None)]
    base = _op.floor(c)
    frac = _op.subtract(c, base)
    base = _op.cast(base, "int64")
    if mode == "linear":
        offsets, weights = (0, 1), [_op.subtract(_f32(ctx, 1.0), frac), frac]
    else:
        a = float(attrs.get("cubic_coeff_a", -0.75))
        offsets = (-1, 0, 1, 2)
        weights = [_cubic(ctx, _op.add(frac, _f32(ctx, 1.0)), a), _cubic(ctx, frac, a),
                   _cubic(ctx, _op.subtract(_f32(ctx, 1.0), frac), a),
                   _cubic(ctx, _op.subtract(_f32(ctx, 2.0), frac), a)]
    raw = [_op.add(base, ctx.const(np.array(k, "int64"))) for k in offsets]
    if attrs.get("exclude_outside", 0):
        weights = [_op.where(_op.logical_or(_op.less(i, zero), _op.greater(i, last)),
                             _f32(ctx, 0.0), w) for i, w in zip(raw, weights, strict=True)]
        total = weights[0]
        for w in weights[1:]:
            total = _op.add(total, w)
        weights = [_op.divide(w, total) for w in weights]
    return [(clamp(i), w) for i, w in zip(raw, weights, strict=True)]


def _cubic(ctx: Context, t, a: float):
    """Keys' cubic kernel of coefficient ``a`` at the distances ``t`` (float32)."""
    t = _op.abs(t)
    near = _op.add(_op.multiply(_op.multiply(_op.subtract(_op.multiply(_f32(ctx, a + 2), t),
                                                          _f32(ctx, a + 3)), t), t),
                   _f32(ctx, 1.0))
    far = _op.subtract(_op.multiply(_op.add(_op.multiply(_op.subtract(
        _op.multiply(_f32(ctx, a), t), _f32(ctx, 5 * a)), t), _f32(ctx, 8 * a)), t),
        _f32(ctx, 4 * a))
    return _op.where(_op.less_equal(t, _f32(ctx, 1.0)), near,
                     _op.where(_op.less(t, _f32(ctx, 2.0)), far, _f32(ctx, 0.0)))


def _by_taps(ctx: Context, x, a: int, taps: list):
    """The sum over ``taps`` of ``x`` gathered along axis ``a`` times each tap's weight."""
    nd = len(ctx.shape(x))
    acc = None
    for idx, w in taps:
        term = _op.take(x, idx, axis=a)
        if w is not None:
            w = _op.reshape(_op.cast(w, ctx.dtype(x)), [-1] + [1] * (nd - 1 - a))
            term = _op.multiply(term, w)
        acc = term if acc is None else _op.add(acc, term)
    return acc


def _antialias_matrix(ctx: Context, attrs: dict, c, n_in, s):
    """The (out, in) weights of an antialiased linear or cubic resize along one axis: the
    kernel stretched by 1 / min(scale, 1) around each coordinate, over every integer position
    it covers (a range computed at run time), normalized to sum to 1; a position past either
    edge adds to the edge's input, or is dropped before normalizing with exclude_outside."""
    mode = attrs.get("mode")
    support = 1.0 if mode == "linear" else 2.0
    stretch = _op.minimum(s, _f32(ctx, 1.0))
    reach = _op.divide(_f32(ctx, support), stretch)
    first = _op.cast(_op.subtract(_op.floor(_op.subtract(_op.min(c), reach)), _f32(ctx, 1.0)),
                     "int64")
    stop = _op.cast(_op.add(_op.ceil(_op.add(_op.max(c), reach)), _f32(ctx, 2.0)), "int64")
    pos = _op.arange(first, stop, ctx.const(np.array(1, "int64")), "int64")
    t = _op.multiply(_op.subtract(_op.reshape(_op.cast(pos, "float32"), [1, -1]),
                                  _op.reshape(c, [-1, 1])), stretch)
    if mode == "linear":
        k = _op.maximum(_op.subtract(_f32(ctx, 1.0), _op.abs(t)), _f32(ctx, 0.0))
    else:
        k = _cubic(ctx, t, float(attrs.get("cubic_coeff_a", -0.75)))
    zero = ctx.const(np.array(0, "int64"))
    last = _op.subtract(n_in, ctx.const(np.array(1, "int64")))
    if attrs.get("exclude_outside", 0):
        inside = _op.logical_and(_op.greater_equal(pos, zero), _op.less_equal(pos, last))
        k = _op.where(_op.reshape(inside, [1, -1]), k, _f32(ctx, 0.0))
    k = _op.divide(k, _op.sum(k, axis=[1], keepdims=True))
    # (out, positions) x (positions, in): each position's weight onto its clamped input
    source = _op.minimum(_op.maximum(pos, zero), last)
    inputs = _op.arange(zero, n_in, ctx.const(np.array(1, "int64")), "int64")
    onto = _op.cast(_op.equal(_op.reshape(inputs, [-1, 1]), _op.reshape(source, [1, -1])),
                    "float32")
    return _op.nn.dense(k, onto)


def _by_matrix(ctx: Context, x, a: int, m):
    """``x`` with axis ``a`` mapped through the (out, in) matrix ``m``: moved last, a dense
    product, moved back."""
    nd = len(ctx.shape(x))
    order = [d for d in range(nd) if d != a] + [a]
    back = list(np.argsort(order))
    y = _op.nn.dense(_op.transpose(x, order), _op.cast(m, ctx.dtype(x)))
    return _op.transpose(y, [int(v) for v in back])
