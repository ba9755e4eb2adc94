"""Computes of Relay's ``image.affine_grid`` and ``image.grid_sample`` (nearest and bilinear over
any number of spatial axes, bicubic in 2-D; zeros, border and reflection padding), the sampling
pair of spatial transformer networks. Coordinates are float32 (the numpy reference's float64)."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from . import shape_conditions
from .utils import as_float as _f
from .utils import compute, out_dims, out_tensor_types
from .utils import i32 as _i

_F = "float32"


@compute("image.affine_grid")
def _affine_grid(attrs, inputs, out_type):
    """``grid[n, i, h, w] = theta[n, i] . (x_w, y_h, 1)`` over corner-aligned points of
    [-1, 1] (x first, as PyTorch's affine_grid with align_corners)."""
    t = out_tensor_types(out_type)[0]
    shape = out_dims(t)  # (the batch may be a symbolic kernel's size; the grid is static)
    theta = inputs[0]
    h, w = (int(s) for s in attrs.target_shape)

    def axis_point(j, n):
        return _f(-1.0) + _f(j) * _f(2.0 / (n - 1)) if n > 1 else _f(-1.0)

    def body(n, i, y, x):
        v = theta[n, i, _i(0)] * axis_point(x, w) + theta[n, i, _i(1)] * axis_point(y, h) + \
            theta[n, i, _i(2)]
        return v if v.dtype == str(t.dtype) else E.Cast(str(t.dtype), v)

    return [te.compute(shape, body, name="affine_grid")]


def _fsize(size, delta: int = 0):
    """``size + delta`` as a float32 expression (a constant of a static size)."""
    if isinstance(size, int):
        return _f(float(size + delta))
    return E.Cast(_F, size + _i(delta) if delta else size)


def _isize(size, delta: int = 0):
    """``size + delta`` as an int32 expression (a constant of a static size)."""
    return _i(size + delta) if isinstance(size, int) else (size + _i(delta) if delta else size)


def _reflect(v, size, align_corners: bool):
    """``v`` folded back into the image by mirroring at its borders (PyTorch's reflection);
    ``size`` an int or, over symbolic sizes, an int32 expression."""
    if not isinstance(size, int):
        lo = _f(0.0 if align_corners else -0.5)
        span = _fsize(size, -1) if align_corners else _fsize(size)
        v = tir_op.abs(v - lo)
        flips = tir_op.floor(v / span)
        extra = v - flips * span
        even = E.EQ(flips - _f(2.0) * tir_op.floor(flips / _f(2.0)), _f(0.0))
        v = E.Select(even, lo + extra, lo + span - extra)
        return E.Select(span <= _f(0.0), _f(0.0), E.Max(E.Min(v, _fsize(size, -1)), _f(0.0)))
    lo, span = (0.0, float(size - 1)) if align_corners else (-0.5, float(size))
    if span <= 0:
        return _f(0.0)
    v = tir_op.abs(v - _f(lo))
    flips = tir_op.floor(v / _f(span))
    extra = v - flips * _f(span)
    even = E.EQ(flips - _f(2.0) * tir_op.floor(flips / _f(2.0)), _f(0.0))
    v = E.Select(even, _f(lo) + extra, _f(lo + span) - extra)
    return E.Max(E.Min(v, _f(size - 1)), _f(0.0))


def _unnormalize(g, size, align_corners: bool):
    g = _f(g)
    if not isinstance(size, int):
        return (g + _f(1.0)) * (_fsize(size, -1) / _f(2.0)) if align_corners else \
            ((g + _f(1.0)) * _fsize(size) - _f(1.0)) / _f(2.0)
    return (g + _f(1.0)) * _f((size - 1) / 2.0) if align_corners else \
        ((g + _f(1.0)) * _f(size) - _f(1.0)) / _f(2.0)


def _cubic(t, a: float = -0.75):
    """The bicubic convolution weight of distance ``t`` (PyTorch's, a = -0.75)."""
    t = tir_op.abs(t)
    near = ((_f(a + 2) * t - _f(a + 3)) * t * t) + _f(1.0)
    far = ((_f(a) * t - _f(5 * a)) * t + _f(8 * a)) * t - _f(4 * a)
    return E.Select(t <= _f(1.0), near, E.Select(t < _f(2.0), far, _f(0.0)))


def _source(g, size: int, padding_mode: str, align_corners: bool):
    """The input coordinate of normalized grid value ``g`` along an axis of ``size``."""
    v = _unnormalize(g, size, align_corners)
    if padding_mode == "border":
        return E.Max(E.Min(v, _fsize(size, -1)), _f(0.0))
    if padding_mode == "reflection":
        return _reflect(v, size, align_corners)
    return v


@compute("image.grid_sample")
def _grid_sample(attrs, inputs, out_type):
    """Relay's ``image.grid_sample``: the grid is channels-first, (N, nd, *out)."""
    t = out_tensor_types(out_type)[0]
    data, grid = inputs
    return [grid_sample(data, grid, str(attrs.method), str(attrs.padding_mode),
                        bool(attrs.align_corners), out_dims(t), str(t.dtype))]


def grid_sample(data, grid, method: str, padding_mode: str, align: bool, shape, dt: str,
                channels_last_grid: bool = False):
    """``out[n, c, o] = data[n, c]`` sampled at the normalized position ``grid[n, :, o]``
    (channel k addresses the k-th spatial axis from the last; ``channels_last_grid``: the
    grid is (N, *out, nd), ONNX's and PyTorch's layout); zero outside the image unless
    ``padding_mode`` is border or reflection. The batch may be symbolic; the image's spatial
    sizes may be too (int32 expressions; each must be positive, a stated shape condition)."""
    sizes = [int(d) if isinstance(d, int | E.IntImm) else
             (d if d.dtype == "int32" else E.Cast("int32", d)) for d in data.shape[2:]]
    for d in data.shape[2:]:  # (an empty image has no pixel to clamp a tap to)
        shape_conditions.assume_positive(d)
    nd = len(sizes)
    if method not in ("nearest", "bilinear", "bicubic") or (method == "bicubic" and nd != 2):
        raise ValueError(f"image.grid_sample: method {method!r} in {nd}-D has no native "
                         "compute (nearest and bilinear do, bicubic in 2-D)")

    def coord(n, k, o):  # the grid's k-th coordinate (x first) at output position o
        return grid[(n, *o, _i(k))] if channels_last_grid else grid[(n, _i(k), *o)]

    def body(n, c, *o):
        src = [_source(coord(n, nd - 1 - a, o), sizes[a], padding_mode, align)
               for a in range(nd)]

        def at(idx):  # data at integer position idx (int32 per axis), zero outside
            conds, clamped = [], []
            for j, s in zip(idx, sizes, strict=True):
                conds.append(E.And(j >= 0, j < s))
                clamped.append(E.Max(E.Min(j, _isize(s, -1)), _i(0)))
            ok = conds[0]
            for k in conds[1:]:
                ok = E.And(ok, k)
            v = _f(data[(n, c, *clamped)])
            return E.Select(ok, v, _f(0.0))

        if method == "bicubic":
            return _bicubic(coord, n, o, sizes, padding_mode, align, at, dt)
        if method == "nearest":
            v = at([E.Cast("int32", tir_op.nearbyint(s)) for s in src])
        else:
            base = [tir_op.floor(s) for s in src]
            frac = [s - b for s, b in zip(src, base, strict=True)]
            base = [E.Cast("int32", b) for b in base]
            v = None
            for corner in range(1 << nd):
                bits = [(corner >> (nd - 1 - a)) & 1 for a in range(nd)]
                wgt = None
                for a in range(nd):
                    f = frac[a] if bits[a] else _f(1.0) - frac[a]
                    wgt = f if wgt is None else wgt * f
                term = wgt * at([b + _i(k) if k else b for b, k in zip(base, bits, strict=True)])
                v = term if v is None else v + term
        return v if dt == _F else E.Cast(dt, v)

    return te.compute(shape, body, name="grid_sample")


def _bicubic(coord, n, o, sizes, padding_mode: str, align: bool, at, dt: str):
    """Bicubic sample of 4 x 4 taps around the (unpadded) point; the padding applies to each
    tap, as the reference's: border clamps it, reflection mirrors it into the image."""
    y, x = (_unnormalize(coord(n, 1 - a, o), sizes[a], align) for a in range(2))
    y0, x0 = tir_op.floor(y), tir_op.floor(x)
    fy, fx = y - y0, x - x0
    y0, x0 = E.Cast("int32", y0), E.Cast("int32", x0)

    def tap(j, size):
        if padding_mode == "border":
            return E.Max(E.Min(j, _isize(size, -1)), _i(0))
        if padding_mode == "reflection":
            return E.Cast("int32", tir_op.nearbyint(_reflect(_f(j), size, align)))
        return j

    v = None
    for i in range(-1, 3):
        wy = _cubic(fy - _f(i))
        yy = tap(y0 + _i(i), sizes[0])
        for j in range(-1, 3):
            term = wy * _cubic(fx - _f(j)) * at([yy, tap(x0 + _i(j), sizes[1])])
            v = term if v is None else v + term
    return v if dt == _F else E.Cast(dt, v)
