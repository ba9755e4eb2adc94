"""Numpy references of the pooling gradients nn.max_pool2d_grad and nn.avg_pool2d_grad:
``(out_grad, data) -> data_grad``, NCHW or NHWC, looping over the window offsets only."""

from __future__ import annotations

import numpy as np

from ..shape import pool_tuple
from ..utils import reference


def _pad4(padding) -> tuple[int, int, int, int]:
    p = [int(x) for x in padding]
    return tuple(p) if len(p) == 4 else (p[0], p[1], p[0], p[1])


def _hw_axes(layout: str) -> tuple[int, int]:
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"pooling gradients support NCHW and NHWC layouts, got {layout!r}")
    return (2, 3) if layout == "NCHW" else (1, 2)


def _pool_grad_ref(attrs, args, out_type, is_max: bool):
    g, x = (np.asarray(a) for a in args)
    ha, wa = _hw_axes(attrs.layout)
    kh, kw = pool_tuple(attrs.pool_size, 2)
    sh, sw = pool_tuple(attrs.strides, 2)
    dh, dw = pool_tuple(attrs.dilation, 2)
    pt, pl, pb, pr = _pad4(attrs.padding)
    ho, wo = g.shape[ha], g.shape[wa]
    need_h = (ho - 1) * sh + (kh - 1) * dh + 1
    need_w = (wo - 1) * sw + (kw - 1) * dw + 1
    h, w = x.shape[ha], x.shape[wa]
    extra_h, extra_w = max(0, need_h - (h + pt + pb)), max(0, need_w - (w + pl + pr))
    widths = [(0, 0)] * x.ndim
    widths[ha] = (pt, pb + extra_h)
    widths[wa] = (pl, pr + extra_w)
    fill = -np.inf if is_max else 0.0
    xp = np.pad(x.astype("float64"), widths, constant_values=fill)
    counted = np.zeros(xp.shape, dtype=bool)
    region = [slice(None)] * x.ndim
    if not is_max and attrs.count_include_pad:
        region[ha], region[wa] = slice(0, h + pt + pb), slice(0, w + pl + pr)
    else:
        region[ha], region[wa] = slice(pt, pt + h), slice(pl, pl + w)
    counted[tuple(region)] = True

    def window(arr, i, j):
        idx = [slice(None)] * x.ndim
        idx[ha] = slice(i * dh, i * dh + (ho - 1) * sh + 1, sh)
        idx[wa] = slice(j * dw, j * dw + (wo - 1) * sw + 1, sw)
        return tuple(idx)

    offsets = [(i, j) for i in range(kh) for j in range(kw)]
    gp = np.zeros(xp.shape, dtype="float64")
    if is_max:
        stacked = np.stack([xp[window(xp, i, j)] for i, j in offsets])
        first = np.argmax(stacked, axis=0)
        for k, (i, j) in enumerate(offsets):
            gp[window(gp, i, j)] += np.where(first == k, g, 0.0)
    else:
        count = sum(counted[window(counted, i, j)].astype("float64") for i, j in offsets)
        share = g / np.maximum(count, 1.0)
        for i, j in offsets:
            sl = window(gp, i, j)
            gp[sl] += np.where(counted[sl], share, 0.0)
    crop = [slice(None)] * x.ndim
    crop[ha] = slice(pt, pt + h)
    crop[wa] = slice(pl, pl + w)
    out = gp[tuple(crop)]
    return out.astype(x.dtype)


@reference("nn.max_pool2d_grad")
def _max_pool2d_grad(attrs, args, out_type):
    return _pool_grad_ref(attrs, args, out_type, True)


@reference("nn.avg_pool2d_grad")
def _avg_pool2d_grad(attrs, args, out_type):
    return _pool_grad_ref(attrs, args, out_type, False)
