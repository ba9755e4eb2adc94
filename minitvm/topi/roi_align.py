"""RoI pooling computes. Relay's ``vision.roi_align`` (NCHW or NHWC, a fixed ``sample_ratio``):
each output bin averages (or takes the max of) a ``sample_ratio`` x ``sample_ratio`` grid of
bilinear samples, one te reduction; an adaptive ratio (``sample_ratio <= 0``) depends on each
box's size, so it has no fixed reduction extent and stays in numpy. ONNX's RoiAlign
(``vision.onnx_roi_align``: ``RoiAlignSpec``, adaptive grids included) and ``vision.roi_pool``
are stages of their own that ``schedule.roi_ops`` computes natively; ``roi_align_onnx_np`` is
the reference of the former."""

from __future__ import annotations

import numpy as np

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from . import shape_conditions
from .reference.vision import roi_sample_corners
from .utils import as_float as _f
from .utils import compute, out_dims, out_tensor_types, reference
from .utils import i32 as _i

_F = "float32"


def _size(d):
    """A data dimension as an int where static, else its symbolic size as an int32 expression."""
    if isinstance(d, int | E.IntImm):
        return int(d)
    return d if d.dtype == "int32" else E.Cast("int32", d)


def _corner(coord, size):
    """(low index, high index, fraction) of a sample coordinate already known to lie in
    [0, size]: past the last pixel both indices are the last one, as the reference's."""
    low = E.Cast("int32", tir_op.floor(coord))
    edge = low >= size - 1
    last = _i(size - 1) if isinstance(size, int) else size - _i(1)
    return (E.Select(edge, last, low), E.Select(edge, last, low + _i(1)),
            E.Select(edge, _f(0.0), coord - tir_op.floor(coord)))


@compute("vision.roi_align")
def _roi_align(attrs, inputs, out_type):
    """``out[r, c, i, j]`` (NCHW; ``[r, i, j, c]`` NHWC): the mean (``avg``) or max of bin (i, j) of box ``rois[r]`` sampled
    bilinearly; a sample more than a pixel outside the image counts as 0."""
    t = out_tensor_types(out_type)[0]
    shape = out_dims(t)  # (the box count may be symbolic: one kernel for every count)
    data, rois = inputs
    ratio = int(attrs.sample_ratio)
    layout = str(attrs.layout)
    if layout not in ("NCHW", "NHWC") or ratio <= 0:
        raise ValueError(f"vision.roi_align: layout {layout} with sample_ratio {ratio} has no "
                         "native compute (NCHW or NHWC with a fixed sample_ratio > 0 does)")
    nhwc = layout == "NHWC"
    h, w = (_size(data.shape[k]) for k in ((1, 2) if nhwc else (2, 3)))
    n = data.shape[0]  # (the images may be a symbolic count: the box's index is clamped to it)
    for size in (n, h, w):  # (a box reads pixel (0, 0) of image 0 at least: none may be empty)
        shape_conditions.assume_positive(size)
    last_image = _i(int(n) - 1) if isinstance(n, int | E.IntImm) else E.Cast("int32", n) - _i(1)
    ph, pw = (int(p) for p in attrs.pooled_size)
    scale = float(attrs.spatial_scale)
    mode = str(attrs.mode)
    ry = te.reduce_axis((0, ratio), name="ry")
    rx = te.reduce_axis((0, ratio), name="rx")
    dt = str(t.dtype)

    def body(*idx):
        r, i, j, c = idx if nhwc else (idx[0], idx[2], idx[3], idx[1])
        b = E.Max(E.Min(E.Cast("int32", rois[r, _i(0)]), last_image), _i(0))
        x1, y1, x2, y2 = (_f(rois[r, _i(k)]) * _f(scale) for k in range(1, 5))
        bh = E.Max(y2 - y1, _f(1.0)) / _f(ph)
        bw = E.Max(x2 - x1, _f(1.0)) / _f(pw)
        y = y1 + _f(i) * bh + (_f(ry.var) + _f(0.5)) * bh / _f(ratio)
        x = x1 + _f(j) * bw + (_f(rx.var) + _f(0.5)) * bw / _f(ratio)
        inside = E.And(E.And(y >= _f(-1.0), y <= _f(h)), E.And(x >= _f(-1.0), x <= _f(w)))
        # the corners are loaded whatever ``inside`` says: a sample outside (a NaN or huge
        # box, whose int32 cast is undefined) reads them at 0, in bounds, and is masked below
        y0, y1i, ly = _corner(E.Select(inside, E.Max(y, _f(0.0)), _f(0.0)), h)
        x0, x1i, lx = _corner(E.Select(inside, E.Max(x, _f(0.0)), _f(0.0)), w)

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


# ------------------------------------------------------------------ ONNX RoiAlign, ROIPool
ROI_ALIGN_ONNX_TAG = "roi_align_onnx"
ROI_POOL_TAG = "roi_pool"


class RoiAlignSpec:
    """The static facts of one ONNX ``RoiAlign``: output bins, the sampling grid per bin
    (``grid`` 0: adaptive, ``ceil(bin size)`` samples per axis, box by box), the spatial scale,
    half-pixel boxes (opset 16's default; else malformed boxes are forced to one pixel) and the
    pooling mode (``max``: ONNX Runtime's max of the weighted corners)."""

    __slots__ = ("out_h", "out_w", "grid", "scale", "half_pixel", "mode")

    def __init__(self, out_h: int, out_w: int, grid: int, scale: float, half_pixel: bool,
                 mode: str):
        if mode not in ("avg", "max") or out_h < 1 or out_w < 1 or grid < 0:
            raise ValueError(f"RoiAlign: bad spec ({out_h}x{out_w} bins, grid {grid}, mode "
                             f"{mode!r})")
        self.out_h, self.out_w, self.grid = int(out_h), int(out_w), int(grid)
        self.scale, self.half_pixel, self.mode = float(scale), bool(half_pixel), mode

    @classmethod
    def of_attrs(cls, attrs) -> RoiAlignSpec:
        return cls(int(attrs.output_height), int(attrs.output_width),
                   int(attrs.sampling_ratio), float(attrs.spatial_scale),
                   bool(attrs.half_pixel), str(attrs.mode))


def roi_align_onnx(x, rois, batch_indices, spec: RoiAlignSpec):
    """The [R, C, out_h, out_w] stage of ONNX RoiAlign; ``schedule.roi_ops`` computes it (the te
    body only gives it a shape), ``roi_align_onnx_np`` is the reference."""
    shape = (rois.shape[0], x.shape[1], spec.out_h, spec.out_w)
    return te.compute(shape, lambda *_: E.const(0.0, x.dtype), name="T_roi_align",
                      tag=ROI_ALIGN_ONNX_TAG,
                      attrs={"operands": (x, rois, batch_indices), "spec": spec})


def roi_pool_stage(x, rois, pooled_size, spatial_scale: float, layout: str = "NCHW"):
    """The [R, C, ph, pw] ([R, ph, pw, C] NHWC) stage of ROIPool (Relay's ``vision.roi_pool``:
    corners rounded half to even); ``schedule.roi_ops`` computes it."""
    ph, pw = (int(p) for p in pooled_size)
    nhwc = layout == "NHWC"
    shape = (rois.shape[0], ph, pw, x.shape[3]) if nhwc else (rois.shape[0], x.shape[1], ph, pw)
    return te.compute(shape, lambda *_: E.const(0.0, x.dtype), name="T_roi_pool",
                      tag=ROI_POOL_TAG, attrs={"operands": (x, rois), "pooled": (ph, pw),
                                               "scale": float(spatial_scale), "nhwc": nhwc})


@compute("vision.onnx_roi_align")
def _roi_align_onnx_compute(attrs, inputs, out_type):
    x, rois, idx = inputs
    return [roi_align_onnx(x, rois, idx, RoiAlignSpec.of_attrs(attrs))]


@compute("vision.roi_pool")
def _roi_pool_compute(attrs, inputs, out_type):
    if str(attrs.layout) not in ("NCHW", "NHWC"):
        raise ValueError(f"vision.roi_pool: layout {attrs.layout} has no native compute (NCHW "
                         "and NHWC have)")
    x, rois = inputs
    return [roi_pool_stage(x, rois, attrs.pooled_size, float(attrs.spatial_scale),
                           str(attrs.layout))]


def roi_align_onnx_np(x, rois, batch_indices, spec: RoiAlignSpec) -> np.ndarray:
    """ONNX RoiAlign as ONNX Runtime computes it, in float32 (the reference of the kernel):
    out [R, C, out_h, out_w]."""
    x = np.asarray(x, "float32")
    f = np.float32
    _, c, h, w = x.shape
    oh, ow = spec.out_h, spec.out_w
    out = np.zeros((len(rois), c, oh, ow), "float32")
    off = f(0.5 if spec.half_pixel else 0.0)
    for r, box in enumerate(np.asarray(rois, "float32")):
        img = x[min(max(int(batch_indices[r]), 0), x.shape[0] - 1)]
        x0, y0, x1, y1 = (f(v) * f(spec.scale) - off for v in box)
        rw, rh = x1 - x0, y1 - y0
        if not spec.half_pixel:
            rw, rh = max(rw, f(1.0)), max(rh, f(1.0))
        bh, bw = rh / f(oh), rw / f(ow)
        gh = spec.grid or int(np.ceil(bh))
        gw = spec.grid or int(np.ceil(bw))
        for i in range(oh):
            for j in range(ow):
                vals = []
                for iy in range(gh):
                    yy = y0 + f(i) * bh + f(iy + 0.5) * bh / f(gh)
                    for ix in range(gw):
                        xx = x0 + f(j) * bw + f(ix + 0.5) * bw / f(gw)
                        vals.append(_corners_np(img, yy, xx))
                if not vals:
                    continue
                v = np.stack(vals)  # [samples, 4, C]
                if spec.mode == "max":
                    out[r, :, i, j] = v.max(axis=(0, 1))
                else:
                    out[r, :, i, j] = v.sum(axis=1).sum(axis=0) / f(max(gh * gw, 1))
    return out


def _corners_np(img, y, x) -> np.ndarray:
    """The four weighted corners [4, C] of one bilinear sample (zeros more than a pixel out)."""
    f = np.float32
    corners = roi_sample_corners(img.shape[1], img.shape[2], y, x, f)
    if corners is None:
        return np.zeros((4, img.shape[0]), "float32")
    y0, x0, y1, x1, ly, lx = corners
    hy, hx = f(1.0) - ly, f(1.0) - lx
    return np.stack([hy * hx * img[:, y0, x0], hy * lx * img[:, y0, x1],
                     ly * hx * img[:, y1, x0], ly * lx * img[:, y1, x1]])



@reference("vision.onnx_roi_align")
def _roi_align_onnx_ref(attrs, args, out_type):
    x, rois, idx = args
    return roi_align_onnx_np(x, rois, idx, RoiAlignSpec.of_attrs(attrs)).astype(out_type.dtype)
