"""Compute of Relay's ``vision.roi_align`` (NCHW or NHWC, a fixed ``sample_ratio``): each output bin
averages (or takes the max of) a ``sample_ratio`` x ``sample_ratio`` grid of bilinear samples,
one te reduction. An adaptive ratio (``sample_ratio <= 0``) depends on each box's size, so it has
no fixed reduction extent and stays in numpy."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .utils import as_float as _f
from .utils import compute, ishape, out_tensor_types, static_shape
from .utils import i32 as _i

_F = "float32"


def _corner(coord, size: int):
    """(low index, high index, fraction) of a sample coordinate already known to lie in
    [0, size]: past the last pixel both indices are the last one, as the reference's."""
    low = E.Cast("int32", tir_op.floor(coord))
    edge = low >= size - 1
    last = _i(size - 1)
    return (E.Select(edge, last, low), E.Select(edge, last, low + _i(1)),
            E.Select(edge, _f(0.0), coord - tir_op.floor(coord)))


@compute("vision.roi_align")
def _roi_align(attrs, inputs, out_type):
    """``out[r, c, i, j]`` (NCHW; ``[r, i, j, c]`` NHWC): the mean (``avg``) or max of bin (i, j) of box ``rois[r]`` sampled
    bilinearly; a sample more than a pixel outside the image counts as 0."""
    t = out_tensor_types(out_type)[0]
    shape = static_shape(t)
    data, rois = inputs
    ratio = int(attrs.sample_ratio)
    layout = str(attrs.layout)
    if layout not in ("NCHW", "NHWC") or ratio <= 0:
        raise ValueError(f"vision.roi_align: layout {layout} with sample_ratio {ratio} has no "
                         "native compute (NCHW or NHWC with a fixed sample_ratio > 0 does)")
    nhwc = layout == "NHWC"
    n, h, w = (ishape(data)[k] for k in ((0, 1, 2) if nhwc else (0, 2, 3)))
    ph, pw = (int(p) for p in attrs.pooled_size)
    scale = float(attrs.spatial_scale)
    mode = str(attrs.mode)
    ry = te.reduce_axis((0, ratio), name="ry")
    rx = te.reduce_axis((0, ratio), name="rx")
    dt = str(t.dtype)

    def body(*idx):
        r, i, j, c = idx if nhwc else (idx[0], idx[2], idx[3], idx[1])
        b = E.Max(E.Min(E.Cast("int32", rois[r, _i(0)]), _i(n - 1)), _i(0))
        x1, y1, x2, y2 = (_f(rois[r, _i(k)]) * _f(scale) for k in range(1, 5))
        bh = E.Max(y2 - y1, _f(1.0)) / _f(ph)
        bw = E.Max(x2 - x1, _f(1.0)) / _f(pw)
        y = y1 + _f(i) * bh + (_f(ry.var) + _f(0.5)) * bh / _f(ratio)
        x = x1 + _f(j) * bw + (_f(rx.var) + _f(0.5)) * bw / _f(ratio)
        inside = E.And(E.And(y >= _f(-1.0), y <= _f(h)), E.And(x >= _f(-1.0), x <= _f(w)))
        y0, y1i, ly = _corner(E.Max(y, _f(0.0)), h)
        x0, x1i, lx = _corner(E.Max(x, _f(0.0)), w)

        def px(yy, xx):
            return _f(data[b, yy, xx, c] if nhwc else data[b, c, yy, xx])

        v = (_f(1.0) - ly) * (_f(1.0) - lx) * px(y0, x0) + (_f(1.0) - ly) * lx * px(y0, x1i) \
            + ly * (_f(1.0) - lx) * px(y1i, x0) + ly * lx * px(y1i, x1i)
        v = E.Select(inside, v, _f(0.0))
        if mode == "max":
            return te.max(v, axis=[ry, rx])
        return te.sum(v, axis=[ry, rx])

    acc = te.compute(shape, body, name="roi_align_acc")
    if mode == "max":
        out = te.compute(shape, lambda *k: acc[k] if dt == _F else E.Cast(dt, acc[k]),
                         name="roi_align")
    else:
        out = te.compute(shape, lambda *k: E.Cast(dt, acc[k] / _f(ratio * ratio))
                         if dt != _F else acc[k] / _f(ratio * ratio), name="roi_align")
    return [out]
