"""ONNX's ``RoiAlign`` as dense products, shared by the Relay and Relax importers.

Bilinear sampling is separable: the sample at (y, x) of a feature plane ``X`` [H, W] is
``wy @ X @ wx^T`` with ``wy`` [H] holding the two row weights and ``wx`` [W] the two column
weights. Stacking a box's samples gives interpolation matrices ``Wy`` [S_h, H] and ``Wx``
[S_w, W], built at run time from the boxes with elementwise ops, so

    avg:  out[r, c] = Ay[r] @ X[b_r, c] @ Ax[r]^T     Ay = the mean of each bin's Wy rows
    max:  the max over the four corner products (Wy_low | Wy_high) @ X @ (Wx_low | Wx_high)^T
          and over each bin's samples (ONNX Runtime's max mode: the max of weighted corners)

which the GEMM kernels run. A sample more than one pixel outside the plane contributes 0, as
in ONNX. The sampling grid must be fixed (``sampling_ratio > 0``): the adaptive grid depends
on each box's size at run time.

``ops`` is the dialect's arithmetic (see ``RoiOps``): this module decides the math once."""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["RoiOps", "RoiAlignPlan", "roi_align_plan", "roi_align"]


class RoiOps(Protocol):
    """The operations ``roi_align`` emits, in the importer's dialect."""

    def const(self, value: np.ndarray): ...
    def binary(self, name: str, a, b): ...  # add, subtract, multiply, divide, maximum,
    # greater_equal, less_equal, equal, logical_and
    def floor(self, x): ...
    def where(self, cond, a, b): ...
    def column(self, x, k: int): ...  # x[:, k:k+1]
    def reshape(self, x, shape): ...
    def sum(self, x, axis: int): ...
    def max(self, x, axes): ...
    def take(self, x, idx, axis: int): ...
    def matmul(self, a, b): ...
    def transpose(self, x, perm): ...
    def channels(self, x) -> int: ...


class RoiAlignPlan:
    """Static facts of one RoiAlign: output bins, the fixed grid, scale, half-pixel offset."""

    __slots__ = ("out_h", "out_w", "grid", "scale", "half_pixel", "mode", "height", "width")

    def __init__(self, **f):
        for k in self.__slots__:
            setattr(self, k, f[k])


def roi_align_plan(x_shape, attrs: dict, opset: int, fail) -> RoiAlignPlan:
    if len(x_shape) != 4:
        raise fail(f"the input must be NCHW, got shape {list(x_shape)}")
    h, w = x_shape[2], x_shape[3]
    if not isinstance(h, int | np.integer) or not isinstance(w, int | np.integer):
        raise fail(f"the feature map's H and W must be static, got {h} x {w}")
    grid = int(attrs.get("sampling_ratio", 0))
    if grid <= 0:
        raise fail("sampling_ratio 0 (adaptive) makes the sampling grid depend on each box's "
                   "size at run time; only a fixed sampling_ratio > 0 is supported")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel" if opset >= 16 else
                    "output_half_pixel")
    ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    mode = attrs.get("mode", "avg")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if ctm not in ("half_pixel", "output_half_pixel") or mode not in ("avg", "max"):
        raise fail(f"unknown coordinate_transformation_mode {ctm!r} or mode {mode!r}")
    return RoiAlignPlan(out_h=int(attrs.get("output_height", 1)),
                        out_w=int(attrs.get("output_width", 1)), grid=grid,
                        scale=float(attrs.get("spatial_scale", 1.0)),
                        half_pixel=ctm == "half_pixel", mode=mode, height=int(h),
                        width=int(w))


def _interpolation(ops: RoiOps, plan, rois, axis: int, dtype: str):
    """(low, high) interpolation matrices [R, bins * grid, size] of the boxes' samples along
    y (``axis`` 1) or x (``axis`` 0)."""
    size = plan.height if axis == 1 else plan.width
    bins = plan.out_h if axis == 1 else plan.out_w
    c = ops.const

    def f(v):
        return c(np.asarray(v, dtype))

    off = 0.5 if plan.half_pixel else 0.0
    start = ops.binary("subtract", ops.binary("multiply", ops.column(rois, axis), f(plan.scale)),
                       f(off))
    end = ops.binary("subtract",
                     ops.binary("multiply", ops.column(rois, axis + 2), f(plan.scale)), f(off))
    extent = ops.binary("subtract", end, start)
    if not plan.half_pixel:  # malformed boxes are forced to one pixel
        extent = ops.binary("maximum", extent, f(1.0))
    step = ops.binary("divide", extent, f(float(bins)))  # [R, 1]
    g = plan.grid
    t = (np.arange(bins)[:, None] + (np.arange(g)[None, :] + 0.5) / g).reshape(1, -1)
    pos = ops.binary("add", start, ops.binary("multiply", step, f(t)))  # [R, S]
    valid = ops.binary("logical_and", ops.binary("greater_equal", pos, f(-1.0)),
                       ops.binary("less_equal", pos, f(float(size))))
    p = ops.binary("maximum", pos, f(0.0))
    lo = ops.floor(p)
    edge = ops.binary("greater_equal", lo, f(size - 1.0))
    last = f(size - 1.0)
    lo = ops.where(edge, last, lo)
    hi = ops.where(edge, last, ops.binary("add", lo, f(1.0)))
    frac = ops.binary("subtract", ops.where(edge, lo, p), lo)
    zero = f(0.0)
    w_hi = ops.where(valid, frac, zero)
    w_lo = ops.where(valid, ops.binary("subtract", f(1.0), frac), zero)
    grid_ix = f(np.arange(size).reshape(1, 1, size))

    def one_hot(idx, weight):
        s = bins * g
        idx3 = ops.reshape(idx, (-1, s, 1))
        return ops.where(ops.binary("equal", idx3, grid_ix), ops.reshape(weight, (-1, s, 1)),
                         zero)

    return one_hot(lo, w_lo), one_hot(hi, w_hi)


def roi_align(ops: RoiOps, plan: RoiAlignPlan, x, rois, batch_indices, dtype: str):
    """RoiAlign of ``x`` [N, C, H, W] over ``rois`` [R, 4] (x1, y1, x2, y2) of images
    ``batch_indices`` [R] -> [R, C, out_h, out_w]. Each box's map is taken as [H, C * W], so
    both products are one batched GEMM per box with the channels in a wide dimension."""
    c, hh, ww = ops.channels(x), plan.height, plan.width
    xt = ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (-1, hh, c * ww))  # [N, H, C*W]
    xb = ops.take(xt, batch_indices, 0)  # [R, H, C*W]
    ylo, yhi = _interpolation(ops, plan, rois, 1, dtype)
    xlo, xhi = _interpolation(ops, plan, rois, 0, dtype)
    g, oh, ow = plan.grid, plan.out_h, plan.out_w

    def product(wy, wx, rows: int, cols: int):
        """wy [R, rows, H] @ map @ wx^T ([R, cols, W]) -> [R, rows, C, cols]."""
        left = ops.reshape(ops.matmul(wy, xb), (-1, rows * c, ww))
        out = ops.matmul(left, ops.transpose(wx, (0, 2, 1)))
        return ops.reshape(out, (-1, rows, c, cols))

    if plan.mode == "avg":
        inv = ops.const(np.asarray(1.0 / g, dtype))
        ay = ops.sum(ops.reshape(ops.binary("add", ylo, yhi), (-1, oh, g, hh)), 2)
        ax = ops.sum(ops.reshape(ops.binary("add", xlo, xhi), (-1, ow, g, ww)), 2)
        out = product(ops.binary("multiply", ay, inv), ops.binary("multiply", ax, inv), oh, ow)
    else:
        best = None
        for wy in (ylo, yhi):
            for wx in (xlo, xhi):
                s = product(wy, wx, oh * g, ow * g)  # [R, oh*g, C, ow*g]
                best = s if best is None else ops.binary("maximum", best, s)
        out = ops.max(ops.reshape(best, (-1, oh, g, c, ow, g)), (2, 5))
    return ops.transpose(out, (0, 2, 1, 3))
