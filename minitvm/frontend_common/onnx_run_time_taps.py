"""ONNX Resize sampled by scales known only at run time, for both importers: per spatial axis
the source coordinate of each output as onnxruntime computes it from the scale (float32,
``(o + 0.5) / s - 0.5`` for half_pixel, ...), then the interpolation taps of that coordinate --
one ``take`` per tap of nearest / linear / cubic, as the constant-scale paths -- or, for an
antialiased linear / cubic resize, whose tap count follows the run-time scale, an (out, in)
matrix of the kernel stretched by 1 / scale applied as a matrix product. ``image.resize2d``
samples by the ratio of the sizes instead, which differs where in * scale has a fraction.

The dialect's ops come in as ``ops`` (as ``torch_linalg``'s do): its op module's elementwise,
reduction and indexing ops by their shared names, and ``const``, ``cast``, ``dim`` (an axis'
run-time length, an int64 scalar), ``positions`` (``arange`` of a run-time int64 scalar
length), ``dense`` (a @ b.T), ``transpose``, ``materialize``, ``ndim``, ``dtype``, ``fail``."""

from __future__ import annotations

import numpy as np

from .onnx_resize import FUSED_TAPS

__all__ = ["resize_by_scales", "split_roi"]


def split_roi(roi, nd: int) -> tuple[np.ndarray, np.ndarray] | str:
    """A Resize's roi (known at import) as the spatial axes' (starts, ends), float32, given
    for all ``nd`` axes or for the spatial ones; else the error to raise."""
    v, k = np.ravel(roi).astype("float32"), nd - 2
    if v.size == 2 * nd:
        return v[2:nd], v[nd + 2:]
    if v.size == 2 * k:
        return v[:k], v[k:]
    return f"the roi {v.tolist()} has neither 2 x {nd} nor 2 x {k} values"


def resize_by_scales(ops, x, attrs: dict, size, scale, lo, hi):
    """``x`` (N, C, spatial...) of a float dtype resized to the run-time spatial ``size`` (int64,
    one per spatial axis) sampling each axis by ``scale`` (float32, one per axis); ``lo`` /
    ``hi``: each axis' roi (float32, read by tf_crop_and_resize), whose outputs outside the
    input take the extrapolation value."""
    nd = ops.ndim(x)
    mode = attrs.get("mode", "nearest")
    antialias = bool(attrs.get("antialias", 0)) and mode != "nearest"
    outside = []
    for i in range(nd - 2):
        a = i + 2
        n_in = ops.dim(x, a)
        n_out, s = _at(ops, size, i), _at(ops, scale, i)
        coords, out = _coordinates(ops, attrs, n_in, n_out, s, _at(ops, lo, i), _at(ops, hi, i))
        if antialias:
            x = _by_matrix(ops, x, a, _antialias_matrix(ops, attrs, coords, n_in, s))
        else:
            taps = _taps(ops, attrs, coords, n_in)
            if len(taps) > FUSED_TAPS:  # (each tap would recompute the previous axis's pass)
                x = ops.materialize(x)
            x = _by_taps(ops, x, a, taps)
        if out is not None:
            outside.append(ops.reshape(out, [-1] + [1] * (nd - 1 - a)))
    if outside:
        mask = outside[0]
        for m in outside[1:]:
            mask = ops.logical_or(mask, m)
        fill = ops.const(np.array(attrs.get("extrapolation_value", 0.0), ops.dtype(x)))
        x = ops.where(mask, fill, x)
    return x


def _at(ops, v, i: int):
    """Element ``i`` of the 1-D ``v``, a scalar."""
    return ops.take(v, ops.const(np.array(i, "int64")))


def _f32(ops, v: float):
    return ops.const(np.array(v, "float32"))


def _coordinates(ops, attrs: dict, n_in, n_out, s, lo, hi):
    """(source coordinate of each output along one axis, float32; the mask of outputs outside
    the input under tf_crop_and_resize, else None), as onnxruntime: an axis of scale 1 samples
    each output at its own index."""
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    o = ops.cast(ops.positions(n_out), "float32")
    fin, fout = ops.cast(n_in, "float32"), ops.cast(n_out, "float32")
    half, one, zero = _f32(ops, 0.5), _f32(ops, 1.0), _f32(ops, 0.0)
    single = ops.less_equal(fout, one)  # (one output: align_corners / pytorch's sample 0)
    if ctm == "half_pixel":
        c = ops.subtract(ops.divide(ops.add(o, half), s), half)
    elif ctm == "pytorch_half_pixel":
        c = ops.where(single, ops.zeros_like(o),
                      ops.subtract(ops.divide(ops.add(o, half), s), half))
    elif ctm == "align_corners":
        c = ops.where(single, ops.zeros_like(o), ops.divide(
            ops.multiply(o, ops.subtract(fin, one)), ops.subtract(fout, one)))
    elif ctm == "asymmetric":
        c = ops.divide(o, s)
    elif ctm == "tf_half_pixel_for_nn":
        c = ops.divide(ops.add(o, half), s)
    elif ctm == "tf_crop_and_resize":
        span = ops.subtract(fin, one)
        c = ops.where(single, ops.full_like(o, ops.multiply(ops.multiply(
            ops.add(lo, hi), half), span)), ops.add(ops.multiply(lo, span), ops.divide(
                ops.multiply(o, ops.multiply(ops.subtract(hi, lo), span)),
                ops.subtract(fout, one))))
        out = ops.logical_or(ops.less(c, zero), ops.greater(c, span))
        return c, out
    else:
        raise ops.fail(f"coordinate_transformation_mode={ctm!r} has no run-time form")
    return ops.where(ops.equal(s, one), o, c), None


def _taps(ops, attrs: dict, c, n_in) -> list:
    """(int64 source index, float32 weight or None) per tap of the coordinates ``c``: the
    rounded index for nearest, floor and floor + 1 for linear, floor - 1 .. floor + 2 with
    Keys' cubic weights for cubic (``exclude_outside`` renormalizes over the taps inside);
    indices clamped into the axis."""
    mode = attrs.get("mode", "nearest")
    last = ops.subtract(n_in, ops.const(np.array(1, "int64")))
    zero = ops.const(np.array(0, "int64"))

    def clamp(i):
        return ops.minimum(ops.maximum(i, zero), last)

    if mode == "nearest":
        rounding = attrs.get("nearest_mode", "round_prefer_floor")
        half = _f32(ops, 0.5)
        r = {"round_prefer_floor": lambda: ops.ceil(ops.subtract(c, half)),
             "round_prefer_ceil": lambda: ops.floor(ops.add(c, half)),
             "floor": lambda: ops.floor(c), "ceil": lambda: ops.ceil(c)}[rounding]()
        return [(clamp(ops.cast(r, "int64")), None)]
    base = ops.floor(c)
    frac = ops.subtract(c, base)
    base = ops.cast(base, "int64")
    if mode == "linear":
        offsets, weights = (0, 1), [ops.subtract(_f32(ops, 1.0), frac), frac]
    else:
        a = float(attrs.get("cubic_coeff_a", -0.75))
        offsets = (-1, 0, 1, 2)
        weights = [_cubic(ops, ops.add(frac, _f32(ops, 1.0)), a), _cubic(ops, frac, a),
                   _cubic(ops, ops.subtract(_f32(ops, 1.0), frac), a),
                   _cubic(ops, ops.subtract(_f32(ops, 2.0), frac), a)]
    raw = [ops.add(base, ops.const(np.array(k, "int64"))) for k in offsets]
    if attrs.get("exclude_outside", 0):
        weights = [ops.where(ops.logical_or(ops.less(i, zero), ops.greater(i, last)),
                             _f32(ops, 0.0), w) for i, w in zip(raw, weights, strict=True)]
        total = weights[0]
        for w in weights[1:]:
            total = ops.add(total, w)
        weights = [ops.divide(w, total) for w in weights]
    return [(clamp(i), w) for i, w in zip(raw, weights, strict=True)]


def _cubic(ops, t, a: float):
    """Keys' cubic kernel of coefficient ``a`` at the distances ``t`` (float32)."""
    t = ops.abs(t)
    near = ops.add(ops.multiply(ops.multiply(ops.subtract(ops.multiply(_f32(ops, a + 2), t),
                                                          _f32(ops, a + 3)), t), t),
                   _f32(ops, 1.0))
    far = ops.subtract(ops.multiply(ops.add(ops.multiply(ops.subtract(
        ops.multiply(_f32(ops, a), t), _f32(ops, 5 * a)), t), _f32(ops, 8 * a)), t),
        _f32(ops, 4 * a))
    return ops.where(ops.less_equal(t, _f32(ops, 1.0)), near,
                     ops.where(ops.less(t, _f32(ops, 2.0)), far, _f32(ops, 0.0)))


def _by_taps(ops, x, a: int, taps: list):
    """The sum over ``taps`` of ``x`` gathered along axis ``a`` times each tap's weight."""
    nd = ops.ndim(x)
    acc = None
    for idx, w in taps:
        term = ops.take(x, idx, axis=a)
        if w is not None:
            w = ops.reshape(ops.cast(w, ops.dtype(x)), [-1] + [1] * (nd - 1 - a))
            term = ops.multiply(term, w)
        acc = term if acc is None else ops.add(acc, term)
    return acc


def _antialias_matrix(ops, attrs: dict, c, n_in, s):
    """The (out, in) weights of an antialiased linear or cubic resize along one axis: the
    kernel stretched by 1 / min(scale, 1) around each coordinate, over every integer position
    it covers (a range computed at run time), normalized to sum to 1; a position past either
    edge adds to the edge's input, or is dropped before normalizing with exclude_outside."""
    mode = attrs.get("mode")
    support = 1.0 if mode == "linear" else 2.0
    stretch = ops.minimum(s, _f32(ops, 1.0))
    reach = ops.divide(_f32(ops, support), stretch)
    first = ops.cast(ops.subtract(ops.floor(ops.subtract(ops.min(c), reach)), _f32(ops, 1.0)),
                     "int64")
    stop = ops.cast(ops.add(ops.ceil(ops.add(ops.max(c), reach)), _f32(ops, 2.0)), "int64")
    pos = ops.add(ops.positions(ops.subtract(stop, first)), first)
    t = ops.multiply(ops.subtract(ops.reshape(ops.cast(pos, "float32"), [1, -1]),
                                  ops.reshape(c, [-1, 1])), stretch)
    if mode == "linear":
        k = ops.maximum(ops.subtract(_f32(ops, 1.0), ops.abs(t)), _f32(ops, 0.0))
    else:
        k = _cubic(ops, t, float(attrs.get("cubic_coeff_a", -0.75)))
    zero = ops.const(np.array(0, "int64"))
    last = ops.subtract(n_in, ops.const(np.array(1, "int64")))
    if attrs.get("exclude_outside", 0):
        inside = ops.logical_and(ops.greater_equal(pos, zero), ops.less_equal(pos, last))
        k = ops.where(ops.reshape(inside, [1, -1]), k, _f32(ops, 0.0))
    k = ops.divide(k, ops.sum(k, axis=[1], keepdims=True))
    # (out, positions) x (positions, in): each position's weight onto its clamped input
    source = ops.minimum(ops.maximum(pos, zero), last)
    inputs = ops.positions(n_in)
    onto = ops.cast(ops.equal(ops.reshape(inputs, [-1, 1]), ops.reshape(source, [1, -1])),
                    "float32")
    return ops.dense(k, onto)


def _by_matrix(ops, x, a: int, m):
    """``x`` with axis ``a`` mapped through the (out, in) matrix ``m``: moved last, a dense
    product, moved back."""
    nd = ops.ndim(x)
    order = [d for d in range(nd) if d != a] + [a]
    back = list(np.argsort(order))
    y = ops.dense(ops.transpose(x, order), ops.cast(m, ops.dtype(x)))
    return ops.transpose(y, [int(v) for v in back])
