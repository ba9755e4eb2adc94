"""TVM's ``topi.image.resize2d`` on te tensors with possibly symbolic shapes: nearest-neighbour,
bilinear and bicubic interpolation over the H, W letters of any plain layout, with ONNX's
coordinate transformation modes (``half_pixel``, ``align_corners``, ``asymmetric``,
``pytorch_half_pixel``, ``tf_half_pixel_for_nn``, ``tf_crop_and_resize``)."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .broadcast import ax_names

__all__ = ["resize2d", "source_coordinate"]

_F = "float32"


def _f(v) -> E.PrimExpr:
    if isinstance(v, E.PrimExpr):
        return v if v.dtype == _F else E.Cast(_F, v)
    return E.FloatImm(_F, float(v))


def source_coordinate(out_i, in_size, out_size, mode: str, roi_lo: float = 0.0,
                      roi_hi: float = 1.0) -> E.PrimExpr:
    """The (float) input coordinate that output position ``out_i`` samples under ``mode``."""
    o, n_in, n_out = _f(out_i), _f(in_size), _f(out_size)
    scale = n_in / n_out
    half = E.FloatImm(_F, 0.5)
    if mode == "half_pixel":
        return (o + half) * scale - half
    if mode == "align_corners":
        return E.Select(n_out > E.FloatImm(_F, 1.0),
                        o * (n_in - E.FloatImm(_F, 1.0)) / (n_out - E.FloatImm(_F, 1.0)),
                        E.FloatImm(_F, 0.0))
    if mode == "asymmetric":
        return o * scale
    if mode == "pytorch_half_pixel":
        return E.Select(n_out > E.FloatImm(_F, 1.0), (o + half) * scale - half,
                        E.FloatImm(_F, 0.0))
    if mode == "tf_half_pixel_for_nn":
        return (o + half) * scale
    if mode == "tf_crop_and_resize":
        lo, hi = E.FloatImm(_F, roi_lo), E.FloatImm(_F, roi_hi)
        last = n_in - E.FloatImm(_F, 1.0)
        return E.Select(n_out > E.FloatImm(_F, 1.0),
                        lo * last + o * (hi - lo) * last / (n_out - E.FloatImm(_F, 1.0)),
                        half * (lo + hi) * last)
    raise ValueError(f"resize2d: unsupported coordinate_transformation_mode {mode!r}")


def _nearest(x: E.PrimExpr, rounding: str) -> E.PrimExpr:
    if rounding in ("round", ""):
        r = tir_op.round(x)
    elif rounding == "round_prefer_floor":
        r = tir_op.ceil(x - E.FloatImm(_F, 0.5))
    elif rounding == "round_prefer_ceil":
        r = tir_op.floor(x + E.FloatImm(_F, 0.5))
    elif rounding == "floor":
        r = tir_op.floor(x)
    elif rounding == "ceil":
        r = tir_op.ceil(x)
    else:
        raise ValueError(f"resize2d: unsupported rounding_method {rounding!r}")
    return E.Cast("int64", r)


def _clamp(i: E.PrimExpr, size) -> E.PrimExpr:
    return E.Min(E.Max(i, E.IntImm("int64", 0)), size - 1)


def _cubic_weight(d: E.PrimExpr, alpha: float) -> E.PrimExpr:
    """Keys' cubic kernel at distance ``|d|`` (< 2)."""
    a = E.FloatImm(_F, alpha)
    d = tir_op.abs(d)
    near = ((a + E.FloatImm(_F, 2.0)) * d - (a + E.FloatImm(_F, 3.0))) * d * d + \
        E.FloatImm(_F, 1.0)
    far = ((a * d - E.FloatImm(_F, 5.0) * a) * d + E.FloatImm(_F, 8.0) * a) * d - \
        E.FloatImm(_F, 4.0) * a
    return E.Select(d <= E.FloatImm(_F, 1.0), near, far)


def resize2d(data, size, layout: str = "NCHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "round",
             cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, roi=(0.0, 0.0, 0.0, 0.0),
             out_dtype: str | None = None):
    """Resize the H and W dims of ``data`` (letters of ``layout``) to ``size`` (two dims)."""
    out_dtype = out_dtype or data.dtype
    hpos, wpos = layout.index("H"), layout.index("W")
    in_sz = [data.shape[hpos], data.shape[wpos]]
    out_sz = list(size)
    shape = list(data.shape)
    shape[hpos], shape[wpos] = out_sz
    mode = coordinate_transformation_mode
    roi = [float(v) for v in roi] if roi else [0.0] * 4
    comp = data.dtype if data.dtype.startswith(("float", "bfloat")) else _F

    def load(i, y, x):
        idx = list(i)
        idx[hpos], idx[wpos] = y, x
        v = data[tuple(idx)]
        return v if v.dtype == comp else E.Cast(comp, v)

    def body(*i):
        cy = source_coordinate(i[hpos], in_sz[0], out_sz[0], mode, roi[0], roi[2])
        cx = source_coordinate(i[wpos], in_sz[1], out_sz[1], mode, roi[1], roi[3])
        if method == "nearest_neighbor":
            v = load(i, _clamp(_nearest(cy, rounding_method), in_sz[0]),
                     _clamp(_nearest(cx, rounding_method), in_sz[1]))
        elif method == "linear":
            fy, fx = tir_op.floor(cy), tir_op.floor(cx)
            ty, tx = E.Cast(comp, cy - fy), E.Cast(comp, cx - fx)
            y0, x0 = E.Cast("int64", fy), E.Cast("int64", fx)
            one = E.FloatImm(comp, 1.0)
            v = None
            for dy, wy in ((0, one - ty), (1, ty)):
                for dx, wx in ((0, one - tx), (1, tx)):
                    term = load(i, _clamp(y0 + dy, in_sz[0]), _clamp(x0 + dx, in_sz[1])) * wy * wx
                    v = term if v is None else v + term
        elif method == "cubic":
            fy, fx = tir_op.floor(cy), tir_op.floor(cx)
            ty, tx = cy - fy, cx - fx
            y0, x0 = E.Cast("int64", fy), E.Cast("int64", fx)

            def weights(t, base, n):
                ws = []
                for k in (-1, 0, 1, 2):
                    w = _cubic_weight(t - E.FloatImm(_F, float(k)), cubic_alpha)
                    if cubic_exclude:
                        j = base + k
                        w = E.Select(E.And(j >= 0, j < n), w, E.FloatImm(_F, 0.0))
                    ws.append(w)
                if cubic_exclude:
                    total = ws[0] + ws[1] + ws[2] + ws[3]
                    ws = [w / total for w in ws]
                return ws

            wys, wxs = weights(ty, y0, in_sz[0]), weights(tx, x0, in_sz[1])
            v = None
            for a, ky in enumerate((-1, 0, 1, 2)):
                for b, kx in enumerate((-1, 0, 1, 2)):
                    w = E.Cast(comp, wys[a] * wxs[b])
                    term = load(i, _clamp(y0 + ky, in_sz[0]), _clamp(x0 + kx, in_sz[1])) * w
                    v = term if v is None else v + term
        else:
            raise ValueError(f"resize2d: unsupported method {method!r}")
        if mode == "tf_crop_and_resize":
            zero, last_y, last_x = _f(0), _f(in_sz[0]) - _f(1), _f(in_sz[1]) - _f(1)
            inside = E.And(E.And(cy >= zero, cy <= last_y), E.And(cx >= zero, cx <= last_x))
            v = E.Select(inside, v, E.FloatImm(comp, float(extrapolation_value)))
        return v if v.dtype == out_dtype else E.Cast(out_dtype, v)

    return te.compute(shape, body, name="resize", varargs_names=ax_names(len(shape)))
