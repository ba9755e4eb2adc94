"""TVM's ``topi.image.resize*`` on te tensors with possibly symbolic shapes: nearest-neighbour,
(bi/tri)linear and (bi)cubic interpolation over any axes of a plain layout, with ONNX's
coordinate transformation modes (``half_pixel``, ``align_corners``, ``asymmetric``,
``pytorch_half_pixel``, ``tf_half_pixel_for_nn``, ``tf_crop_and_resize``); and the computes of
Relay's ``image.resize1d/2d/3d``, ``nn.upsampling`` and ``nn.upsampling3d``.

With static sizes every mode but ``tf_crop_and_resize`` maps output position ``o`` to the
rational input coordinate ``(a * o + b) / q``, so the sampled indices are integer arithmetic
(exact, as the float64 numpy reference; float32 coordinates round ``o * 0.7`` at ``o = 10``
below 7) and the weights ``rem / q``. The stage carries tag ``RESIZE_TAG`` and its
``ResizeSpec`` in ``attrs["resize"]``, from which ``minitvm.schedule.resize`` builds the same
per-axis index and weight tables once per call.
"""

from __future__ import annotations

import itertools
from math import gcd

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .broadcast import ax_names
from .shape import hw_axes, spatial_axes
from .utils import as_float as _f
from .utils import compute, out_dims, out_tensor_types

__all__ = ["RESIZE_TAG", "AxisMap", "ResizeSpec", "resize", "resize2d", "source_coordinate"]

RESIZE_TAG = "resize"
_F = "float32"
METHODS = ("nearest_neighbor", "linear", "cubic")
MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
         "tf_half_pixel_for_nn", "tf_crop_and_resize")
ROUNDINGS = ("", "round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _static(d) -> int | None:
    if isinstance(d, E.IntImm):
        return d.value
    return d if isinstance(d, int) and not isinstance(d, bool) else None


def source_coordinate(out_i, in_size, out_size, mode: str, roi_lo: float = 0.0,
                      roi_hi: float = 1.0, dtype: str = _F) -> E.PrimExpr:
    """The (float) input coordinate that output position ``out_i`` samples under ``mode``."""
    def c(v):
        return E.FloatImm(dtype, v)

    o, n_in, n_out = _f(out_i, dtype), _f(in_size, dtype), _f(out_size, dtype)
    scale = n_in / n_out
    if mode == "half_pixel":
        return (o + c(0.5)) * scale - c(0.5)
    if mode == "align_corners":
        return E.Select(n_out > c(1.0), o * (n_in - c(1.0)) / (n_out - c(1.0)), c(0.0))
    if mode == "asymmetric":
        return o * scale
    if mode == "pytorch_half_pixel":
        return E.Select(n_out > c(1.0), (o + c(0.5)) * scale - c(0.5), c(0.0))
    if mode == "tf_half_pixel_for_nn":
        return (o + c(0.5)) * scale
    if mode == "tf_crop_and_resize":
        lo, hi, last = c(roi_lo), c(roi_hi), n_in - c(1.0)
        return E.Select(n_out > c(1.0), lo * last + o * (hi - lo) * last / (n_out - c(1.0)),
                        c(0.5) * (lo + hi) * last)
    raise ValueError(f"resize: unsupported coordinate_transformation_mode {mode!r}")


def _rational(n: int, m: int, mode: str) -> tuple[int, int, int] | None:
    """``(a, b, q)`` with coordinate ``(a * o + b) / q`` for static sizes, or None."""
    if mode == "asymmetric":
        a, b, q = n, 0, m
    elif mode == "half_pixel" or (mode == "pytorch_half_pixel" and m > 1):
        a, b, q = 2 * n, n - m, 2 * m
    elif mode == "pytorch_half_pixel" or (mode == "align_corners" and m == 1):
        a, b, q = 0, 0, 1
    elif mode == "align_corners":
        a, b, q = n - 1, 0, m - 1
    elif mode == "tf_half_pixel_for_nn":
        a, b, q = 2 * n, n, 2 * m
    else:
        return None
    g = gcd(gcd(a, abs(b)), q)
    return a // g, b // g, q // g


class AxisMap:
    """Where the output positions along one resized axis sample the input (``n_in`` ->
    ``n_out``, ints or PrimExprs): exact rational coordinates when both sizes are static."""

    __slots__ = ("n_in", "n_out", "mode", "lo", "hi", "rational", "dtype")

    def __init__(self, n_in, n_out, mode: str, lo: float = 0.0, hi: float = 1.0):
        if mode not in MODES:
            raise ValueError(f"resize: unsupported coordinate_transformation_mode {mode!r}")
        sn, sm = _static(n_in), _static(n_out)
        self.n_in = sn if sn is not None else n_in
        self.n_out = sm if sm is not None else n_out
        self.mode, self.lo, self.hi = mode, float(lo), float(hi)
        self.rational = _rational(sn, sm, mode) if sn is not None and sm is not None else None
        self.dtype = "int64"
        if self.rational is not None:
            a, b, q = self.rational
            big = max(abs(a * sm + b), abs(b), q) * 2 + 4
            self.dtype = "int32" if big < 2 ** 31 else "int64"

    def _o(self, o):
        return o if o.dtype == self.dtype else E.Cast(self.dtype, o)

    def _i(self, v: int) -> E.IntImm:
        return E.IntImm(self.dtype, v)

    def coordinate(self, o) -> E.PrimExpr:
        """The float coordinate of output position ``o`` (float64 for a crop box, whose ends
        float32 rounds off the reference's indices)."""
        dtype = "float64" if self.mode == "tf_crop_and_resize" else _F
        return source_coordinate(o, self.n_in, self.n_out, self.mode, self.lo, self.hi, dtype)

    def floor_frac(self, o, comp: str):
        """``(floor(c), c - floor(c))`` of the coordinate ``c`` of output position ``o``: an
        integer expression and a ``comp`` float expression (None when provably 0)."""
        if self.rational is None:
            c = self.coordinate(o)
            fl = tir_op.floor(c)
            return E.Cast("int64", fl), _f(c - fl, comp)
        a, b, q = self.rational
        p = self._o(o) * self._i(a) + self._i(b) if a else self._i(b)
        if q == 1:
            return p, None
        return E.FloorDiv(p, self._i(q)), E.Cast(comp, E.FloorMod(p, self._i(q))) / \
            E.FloatImm(comp, float(q))

    def floor_range(self, offset: int = 0) -> tuple[int, int] | None:
        """The smallest and largest ``floor(c) + offset`` over the outputs (static maps)."""
        if self.rational is None:
            return None
        a, b, q = self.rational
        return (b // q + offset, (a * (self.n_out - 1) + b) // q + offset)

    def nearest(self, o, rounding: str):
        """The (clamped) input index that nearest-neighbour sampling at ``o`` reads."""
        if rounding == "":  # TVM's default: round when aligning corners, else floor
            rounding = "round" if self.mode == "align_corners" else "floor"
        if rounding not in ROUNDINGS:
            raise ValueError(f"resize: unsupported rounding_method {rounding!r}")
        if self.rational is None:
            c = self.coordinate(o)
            half = E.FloatImm(c.dtype, 0.5)
            r = {"round": tir_op.round, "floor": tir_op.floor, "ceil": tir_op.ceil,
                 "round_prefer_floor": lambda x: tir_op.ceil(x - half),
                 "round_prefer_ceil": lambda x: tir_op.floor(x + half),
                 }[rounding](c)
            return self.clamp(E.Cast("int64", r), None)
        a, b, q = self.rational
        p = self._o(o) * self._i(a) + self._i(b) if a else self._i(b)
        if q == 1:
            return self.clamp(p, (b, a * (self.n_out - 1) + b))
        fl, rem = E.FloorDiv(p, self._i(q)), E.FloorMod(p, self._i(q))
        one, zero = self._i(1), self._i(0)
        if rounding == "floor":
            idx = fl
        elif rounding == "ceil":
            idx = fl + E.Select(rem > zero, one, zero)
        elif rounding == "round_prefer_floor":
            idx = fl + E.Select(rem * self._i(2) > self._i(q), one, zero)
        elif rounding == "round_prefer_ceil":
            idx = fl + E.Select(rem * self._i(2) >= self._i(q), one, zero)
        else:  # half to even, as numpy's and LLVM's nearbyint
            up = E.Or(rem * self._i(2) > self._i(q), E.And(
                E.EQ(rem * self._i(2), self._i(q)), E.EQ(E.FloorMod(fl, self._i(2)), one)))
            idx = fl + E.Select(up, one, zero)
        lo, hi = b // q, -(-(a * (self.n_out - 1) + b) // q)
        return self.clamp(idx, (lo, hi))

    def clamp(self, i, rng):
        """``i`` clamped to ``[0, n_in)``; a side ``rng`` (its static bounds) proves is skipped."""
        if rng is None or rng[0] < 0:
            i = E.Max(i, E.IntImm(i.dtype, 0))
        if rng is None or _static(self.n_in) is None or rng[1] > self.n_in - 1:
            last = self.n_in - 1
            last = E.IntImm(i.dtype, last) if isinstance(last, int) else (
                last if last.dtype == i.dtype else E.Cast(i.dtype, last))
            i = E.Min(i, last)
        return i

    def inside(self, o):
        """``0 <= c <= n_in - 1`` for ``tf_crop_and_resize`` (else None: always inside)."""
        if self.mode != "tf_crop_and_resize":
            return None
        c = self.coordinate(o)
        return E.And(c >= E.FloatImm(c.dtype, 0.0),
                     c <= _f(self.n_in, c.dtype) - E.FloatImm(c.dtype, 1.0))


class ResizeSpec:
    """A resize stage's parameters, shared by its compute and its schedule."""

    __slots__ = ("axes", "maps", "method", "rounding", "alpha", "exclude", "extrapolation",
                 "comp")

    def __init__(self, axes, maps, method, rounding, alpha, exclude, extrapolation, comp):
        if method not in METHODS:
            raise ValueError(f"resize: unsupported method {method!r}")
        self.axes, self.maps = tuple(axes), tuple(maps)
        self.method, self.rounding = method, rounding
        self.alpha, self.exclude = float(alpha), int(exclude)
        self.extrapolation, self.comp = float(extrapolation), comp

    def taps(self, k: int, o) -> list:
        """``[(input index, weight or None), ...]`` that output position ``o`` of resized axis
        ``k`` combines (one unweighted tap for nearest-neighbour sampling)."""
        m = self.maps[k]
        if self.method == "nearest_neighbor":
            return [(m.nearest(o, self.rounding), None)]
        fl, frac = m.floor_frac(o, self.comp)
        if self.method == "linear":
            if frac is None:
                return [(m.clamp(fl, m.floor_range()), None)]
            one = E.FloatImm(self.comp, 1.0)
            return [(m.clamp(fl, m.floor_range()), one - frac),
                    (m.clamp(fl + E.IntImm(fl.dtype, 1), m.floor_range(1)), frac)]
        t = frac if frac is not None else E.FloatImm(self.comp, 0.0)
        out = []
        for d in (-1, 0, 1, 2):
            w = _cubic_weight(t - E.FloatImm(self.comp, float(d)), self.alpha, self.comp)
            j = fl + E.IntImm(fl.dtype, d)
            if self.exclude:
                n = m.n_in if isinstance(m.n_in, E.PrimExpr) else E.IntImm(fl.dtype, m.n_in)
                n = n if n.dtype == fl.dtype else E.Cast(fl.dtype, n)
                w = E.Select(E.And(j >= E.IntImm(fl.dtype, 0), j < n), w,
                             E.FloatImm(self.comp, 0.0))
            out.append((m.clamp(j, m.floor_range(d)), w))
        if self.exclude:
            total = out[0][1] + out[1][1] + out[2][1] + out[3][1]
            out = [(j, w / total) for j, w in out]
        return out

    def inside(self, idx):
        """The condition under which output position ``idx`` samples inside the input (None:
        always)."""
        cond = None
        for a, m in zip(self.axes, self.maps):
            c = m.inside(idx[a])
            if c is not None:
                cond = c if cond is None else E.And(cond, c)
        return cond


def _cubic_weight(d: E.PrimExpr, alpha: float, comp: str) -> E.PrimExpr:
    """Keys' cubic kernel at distance ``|d|`` (< 2)."""
    a = E.FloatImm(comp, alpha)

    def c(v):
        return E.FloatImm(comp, v)

    d = tir_op.abs(d)
    near = ((a + c(2.0)) * d - (a + c(3.0))) * d * d + c(1.0)
    far = ((a * d - c(5.0) * a) * d + c(8.0) * a) * d - c(4.0) * a
    return E.Select(d <= c(1.0), near, far)


def resize(data, axes, sizes, method: str = "linear",
           coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "",
           cubic_alpha: float = -0.5, cubic_exclude: int = 0, extrapolation_value: float = 0.0,
           roi=None, out_dtype: str | None = None, name: str = "resize"):
    """Resize ``axes`` of ``data`` to ``sizes``; ``roi`` is (starts..., ends...) per axis (for
    ``tf_crop_and_resize``; default the whole input)."""
    nd = len(axes)
    out_dtype = out_dtype or data.dtype
    roi = [float(v) for v in roi] if roi else [0.0] * nd + [1.0] * nd
    comp = "float64" if "float64" in (data.dtype, out_dtype) else _F
    maps = [AxisMap(data.shape[a], s, coordinate_transformation_mode, roi[k], roi[k + nd])
            for k, (a, s) in enumerate(zip(axes, sizes))]
    spec = ResizeSpec(axes, maps, method, rounding_method, cubic_alpha, cubic_exclude,
                      extrapolation_value, comp)
    shape = list(data.shape)
    for a, s in zip(axes, sizes):
        shape[a] = s

    def body(*i):
        v = None
        for combo in itertools.product(*(spec.taps(k, i[a]) for k, a in enumerate(axes))):
            idx, w = list(i), None
            for a, (j, wt) in zip(axes, combo):
                idx[a] = j
                if wt is not None:
                    w = wt if w is None else w * wt
            x = data[tuple(idx)]
            if w is not None:
                x = (x if x.dtype == comp else E.Cast(comp, x)) * w
            v = x if v is None else v + x
        cond = spec.inside(i)
        if cond is not None:
            v = E.Select(cond, _f(v, comp), E.FloatImm(comp, spec.extrapolation))
        if v.dtype != out_dtype:
            if v.dtype.startswith("float") and not out_dtype.startswith(("float", "bfloat")):
                v = tir_op.round(v)
            v = E.Cast(out_dtype, v)
        return v

    return te.compute(shape, body, name=name, tag=RESIZE_TAG,
                      attrs={"operands": (data,), "resize": spec},
                      varargs_names=ax_names(len(shape)))


def resize2d(data, size, layout: str = "NCHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "round",
             cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, roi=(0.0, 0.0, 0.0, 0.0),
             out_dtype: str | None = None):
    """Resize the H and W dims of ``data`` (letters of ``layout``) to ``size`` (two dims)."""
    axes = (layout.index("H"), layout.index("W"))
    return resize(data, axes, list(size), method, coordinate_transformation_mode,
                  rounding_method, cubic_alpha, cubic_exclude, extrapolation_value,
                  list(roi) if roi else [0.0] * 4, out_dtype, name="resize")


# ------------------------------------------------------------------ Relay's computes
def _out(out_type):
    t = out_tensor_types(out_type)[0]
    return out_dims(t), t.dtype  # (ints where static; a symbolic size's expression)


def _image_resize(spatial: str):
    def fcompute(attrs, inputs, out_type):
        (x,) = inputs
        shape, dtype = _out(out_type)
        axes = spatial_axes(attrs.layout, len(shape), spatial, f"image.resize{len(spatial)}d")
        nd = len(axes)
        roi = list(attrs.roi) if attrs.roi else [0.0] * nd + [1.0] * nd
        return [resize(x, axes, [shape[a] for a in axes], attrs.method,
                       attrs.coordinate_transformation_mode, attrs.rounding_method,
                       attrs.cubic_alpha, attrs.cubic_exclude, attrs.extrapolation_value, roi,
                       dtype, name=f"resize{nd}d")]

    return fcompute


compute("image.resize1d")(_image_resize("W"))
compute("image.resize2d")(_image_resize("HW"))
compute("image.resize3d")(_image_resize("DHW"))

_UPSAMPLE_METHODS = {"nearest_neighbor": "nearest_neighbor", "bilinear": "linear",
                     "bicubic": "cubic", "trilinear": "linear"}


def _method(op_name: str, method: str) -> str:
    if method not in _UPSAMPLE_METHODS:
        raise ValueError(f"{op_name}: unsupported method {method!r}")
    return _UPSAMPLE_METHODS[method]


@compute("nn.upsampling")
def _upsampling(attrs, inputs, out_type):
    """TVM's upsampling: a resize to the output size, corners aligned or asymmetric."""
    (x,) = inputs
    shape, dtype = _out(out_type)
    axes = hw_axes(attrs.layout, len(shape), "nn.upsampling")
    mode = "align_corners" if attrs.align_corners else "asymmetric"
    return [resize(x, axes, [shape[a] for a in axes], _method("nn.upsampling", attrs.method),
                   mode, out_dtype=dtype, name="upsampling")]


@compute("nn.upsampling3d")
def _upsampling3d(attrs, inputs, out_type):
    (x,) = inputs
    shape, dtype = _out(out_type)
    axes = spatial_axes(attrs.layout, len(shape), "DHW", "nn.upsampling3d")
    return [resize(x, axes, [shape[a] for a in axes], _method("nn.upsampling3d", attrs.method),
                   attrs.coordinate_transformation_mode, out_dtype=dtype, name="upsampling3d")]
