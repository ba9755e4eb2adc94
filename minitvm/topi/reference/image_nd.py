"""Numpy references of TVM's other image ops: image.resize1d / resize3d (the resize2d rules on
one or three axes), image.crop_and_resize (TensorFlow's), image.grid_sample, image.affine_grid
and image.dilation2d (grey-scale morphological dilation)."""

from __future__ import annotations

import numpy as np

from ..shape import spatial_axes
from ..utils import pad_tuple, reference
from .image import _resize_axis, extrapolate

__all__ = ["resize_nd", "crop_and_resize_nchw", "grid_sample_nchw", "affine_grid",
           "dilation2d_nchw"]


def resize_nd(x: np.ndarray, axes, sizes, attrs, roi, dtype: str) -> np.ndarray:
    """Resize ``axes`` of ``x`` to ``sizes``; ``roi`` is (starts..., ends...) per axis."""
    nd = len(axes)
    work = x.astype(np.float64)
    for i, (a, s) in enumerate(zip(axes, sizes)):
        work = _resize_axis(work, a, int(s), attrs, (roi[i], roi[i + nd]))
    work = extrapolate(work, axes, [x.shape[a] for a in axes], attrs, roi)
    if np.dtype(dtype).kind in "iu":
        work = np.round(work)
    return work.astype(dtype)


def _resize(attrs, args, out_type, spatial):
    x = args[0]
    axes = spatial_axes(attrs.layout, x.ndim, spatial, "resize")
    nd = len(spatial)
    roi = [float(r) for r in (attrs.roi or (0.0,) * nd + (1.0,) * nd)]
    return resize_nd(x, axes, attrs.size, attrs, roi, out_type.dtype)


@reference("image.resize1d")
def _resize1d(attrs, args, out_type):
    return _resize(attrs, args, out_type, "W")


@reference("image.resize3d")
def _resize3d(attrs, args, out_type):
    return _resize(attrs, args, out_type, "DHW")


# ------------------------------------------------------------------ crop_and_resize
def crop_and_resize_nchw(data, boxes, box_indices, crop_size, method="bilinear",
                         extrapolation_value=0.0):
    """TensorFlow's crop_and_resize on NCHW data: boxes are normalized (y1, x1, y2, x2); a
    sample outside the image takes ``extrapolation_value``."""
    _, c, h, w = data.shape
    ch, cw = (int(s) for s in crop_size)
    out = np.empty((boxes.shape[0], c, ch, cw), dtype=np.float64)

    def coords(lo, hi, size, n):
        if n > 1:
            return lo * (size - 1) + np.arange(n) * (hi - lo) * (size - 1) / (n - 1)
        return np.full(n, 0.5 * (lo + hi) * (size - 1))

    for b, (y1, x1, y2, x2) in enumerate(boxes.astype(np.float64)):
        img = data[int(box_indices[b])].astype(np.float64)
        ys, xs = coords(y1, y2, h, ch), coords(x1, x2, w, cw)
        oky = (ys >= 0) & (ys <= h - 1)
        okx = (xs >= 0) & (xs <= w - 1)
        if method == "nearest_neighbor":
            yi = np.clip(np.round(ys), 0, h - 1).astype(np.int64)
            xi = np.clip(np.round(xs), 0, w - 1).astype(np.int64)
            val = img[:, yi][:, :, xi]
        else:
            y0 = np.clip(np.floor(ys), 0, h - 1).astype(np.int64)
            x0 = np.clip(np.floor(xs), 0, w - 1).astype(np.int64)
            y1i = np.clip(np.ceil(ys), 0, h - 1).astype(np.int64)
            x1i = np.clip(np.ceil(xs), 0, w - 1).astype(np.int64)
            fy = (ys - np.floor(ys))[:, None]
            fx = (xs - np.floor(xs))[None, :]
            top = img[:, y0][:, :, x0] * (1 - fx) + img[:, y0][:, :, x1i] * fx
            bot = img[:, y1i][:, :, x0] * (1 - fx) + img[:, y1i][:, :, x1i] * fx
            val = top * (1 - fy) + bot * fy
        out[b] = np.where(oky[:, None] & okx[None, :], val, extrapolation_value)
    return out


@reference("image.crop_and_resize")
def _crop_and_resize(attrs, args, out_type):
    data, boxes, idx = args
    nhwc = attrs.layout == "NHWC"
    x = data.transpose(0, 3, 1, 2) if nhwc else data
    out = crop_and_resize_nchw(x, boxes, idx, attrs.crop_size, attrs.method,
                               float(attrs.extrapolation_value))
    out = out.transpose(0, 2, 3, 1) if nhwc else out
    return out.astype(out_type.dtype)


# ------------------------------------------------------------------ grid_sample / affine_grid
def _unnormalize(g, size, align_corners):
    if align_corners:
        return (g + 1) * (size - 1) / 2
    return ((g + 1) * size - 1) / 2


def _reflect(v, size, align_corners):
    """Reflect coordinates into the image (PyTorch's / TVM's reflection padding)."""
    if align_corners:
        lo, span = 0.0, float(size - 1)
    else:
        lo, span = -0.5, float(size)
    if span <= 0:
        return np.zeros_like(v)
    v = np.abs(v - lo)
    flips = np.floor(v / span)
    extra = v - flips * span
    v = np.where(flips % 2 == 0, lo + extra, lo + span - extra)
    return np.clip(v, 0, size - 1)


def _source(g, size, padding_mode, align_corners):
    v = _unnormalize(g.astype(np.float64), size, align_corners)
    if padding_mode == "border":
        v = np.clip(v, 0, size - 1)
    elif padding_mode == "reflection":
        v = _reflect(v, size, align_corners)
    return v


def _gather(img, idx, padding_mode):
    """img (C, *S) at integer positions idx (list per axis, same shapes); zero outside."""
    sizes = img.shape[1:]
    ok = np.ones(idx[0].shape, bool)
    clipped = []
    for i, s in zip(idx, sizes):
        ok &= (i >= 0) & (i < s)
        clipped.append(np.clip(i, 0, s - 1))
    return np.where(ok, img[(slice(None),) + tuple(clipped)], 0.0)


def _cubic(t, a=-0.75):
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def grid_sample_nchw(data, grid, method="bilinear", padding_mode="zeros", align_corners=True):
    """Sample (N, C, *S) data at the normalized [-1, 1] positions of grid (N, nd, *O), whose
    first channel is x (the last axis), as PyTorch's grid_sample."""
    n = data.shape[0]
    nd = data.ndim - 2
    sizes = data.shape[2:]
    out = np.empty((n, data.shape[1]) + grid.shape[2:], dtype=np.float64)
    for b in range(n):
        img = data[b].astype(np.float64)
        # grid channel k addresses spatial axis nd - 1 - k
        src = [_source(grid[b, nd - 1 - a], sizes[a], padding_mode, align_corners)
               for a in range(nd)]
        if method == "nearest":
            out[b] = _gather(img, [np.rint(s).astype(np.int64) for s in src], padding_mode)
        elif method == "bilinear":
            base = [np.floor(s).astype(np.int64) for s in src]
            frac = [s - np.floor(s) for s in src]
            acc = 0.0
            for corner in np.ndindex(*(2,) * nd):
                wgt = 1.0
                for a in range(nd):
                    wgt = wgt * (frac[a] if corner[a] else 1 - frac[a])
                acc = acc + wgt * _gather(img, [bb + c for bb, c in zip(base, corner)],
                                          padding_mode)
            out[b] = acc
        else:  # bicubic, 2-D: the padding applies to each tap, not the sampled point
            y, x = (_unnormalize(grid[b, 1 - a].astype(np.float64), sizes[a], align_corners)
                    for a in range(2))
            y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
            fy, fx = y - y0, x - x0
            acc = 0.0
            for i in range(-1, 3):
                wy = _cubic(fy - i)
                for j in range(-1, 3):
                    yy, xx = y0 + i, x0 + j
                    if padding_mode == "border":
                        yy, xx = np.clip(yy, 0, sizes[0] - 1), np.clip(xx, 0, sizes[1] - 1)
                    elif padding_mode == "reflection":
                        yy = np.rint(_reflect(yy.astype(np.float64), sizes[0],
                                              align_corners)).astype(np.int64)
                        xx = np.rint(_reflect(xx.astype(np.float64), sizes[1],
                                              align_corners)).astype(np.int64)
                    acc = acc + wy * _cubic(fx - j) * _gather(img, [yy, xx], padding_mode)
            out[b] = acc
    return out


@reference("image.grid_sample")
def _grid_sample(attrs, args, out_type):
    data, grid = args
    out = grid_sample_nchw(data, grid, attrs.method, attrs.padding_mode,
                           bool(attrs.align_corners))
    return out.astype(out_type.dtype)


def affine_grid(theta: np.ndarray, target_shape) -> np.ndarray:
    """Sampling grid (N, 2, H, W) of affine matrices theta (N, 2, 3) over [-1, 1] x [-1, 1]
    (corner-aligned points, x first)."""
    h, w = (int(s) for s in target_shape)
    ys = np.linspace(-1.0, 1.0, h) if h > 1 else np.array([-1.0])
    xs = np.linspace(-1.0, 1.0, w) if w > 1 else np.array([-1.0])
    yy, xx = np.meshgrid(ys, xs, indexing="ij")
    pts = np.stack([xx, yy, np.ones_like(xx)])  # (3, H, W)
    return np.einsum("nij,jhw->nihw", theta.astype(np.float64), pts)


@reference("image.affine_grid")
def _affine_grid(attrs, args, out_type):
    return affine_grid(args[0], attrs.target_shape).astype(out_type.dtype)


# ------------------------------------------------------------------ dilation2d
def dilation2d_nchw(x, w, strides, padding, dilations):
    """Morphological dilation: max over the window of (input + kernel), kernel (C, kh, kw);
    padding is zero-valued (as TVM pads)."""
    pt, pl, pb, pr = padding
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    _, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    oh = (xp.shape[2] - ((kh - 1) * dh + 1)) // sh + 1
    ow = (xp.shape[3] - ((kw - 1) * dw + 1)) // sw + 1
    out = None
    for i in range(kh):
        for j in range(kw):
            tap = xp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                     j * dw:j * dw + (ow - 1) * sw + 1:sw] + w[None, :, i, j, None, None]
            out = tap if out is None else np.maximum(out, tap)
    return out


@reference("image.dilation2d")
def _dilation2d(attrs, args, out_type):
    data, weight = args
    nhwc = attrs.data_layout == "NHWC"
    x = data.transpose(0, 3, 1, 2) if nhwc else data
    w = weight.transpose(2, 0, 1) if attrs.kernel_layout == "HWI" else weight
    out = dilation2d_nchw(x, w, tuple(int(s) for s in attrs.strides),
                          pad_tuple(attrs.padding, 2), tuple(int(d) for d in attrs.dilations))
    out = out.transpose(0, 2, 3, 1) if nhwc else out
    return out.astype(out_type.dtype)
