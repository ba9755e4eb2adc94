"""Pooling and upsampling references in TVM's testing signatures."""

from __future__ import annotations

import math

import numpy as np


def poolnd_python(np_data, kernel, strides, dilation, padding_before, padding_after, pool_type,
                  count_include_pad: bool = True, ceil_mode: bool = False, dtype="float32",
                  layout=None):
    """N-d max/avg pooling over the trailing ``len(kernel)`` axes (channels-first layouts) or the
    spatial axes named by ``layout`` ("NCHW", "NHWC", "NCDHW"...)."""
    nd = len(kernel)
    if layout is not None:
        spatial = [i for i, ch in enumerate(layout) if ch in "DHW"]
    else:
        spatial = list(range(np_data.ndim - nd, np_data.ndim))
    x = np.moveaxis(np_data, spatial, range(np_data.ndim - nd, np_data.ndim)).astype(dtype)
    lead = x.shape[:-nd]
    # TVM's reference pads a max pool with the dtype's lowest value only without
    # count_include_pad; otherwise (and for avg) with 0
    fill = 0.0
    if pool_type == "max" and not count_include_pad:
        dt = np.dtype(dtype)
        fill = np.finfo(dt).min if np.issubdtype(dt, np.floating) else np.iinfo(dt).min
    outs, dks = [], []
    for i in range(nd):
        dk = (kernel[i] - 1) * dilation[i] + 1
        size = x.shape[len(lead) + i] + padding_before[i] + padding_after[i] - dk
        outs.append((math.ceil if ceil_mode else math.floor)(size / strides[i]) + 1)
        dks.append(dk)
    extra = [max(0, (outs[i] - 1) * strides[i] + dks[i] - (x.shape[len(lead) + i]
             + padding_before[i] + padding_after[i])) for i in range(nd)]
    widths = [(0, 0)] * len(lead) + [(padding_before[i], padding_after[i] + extra[i])
                                     for i in range(nd)]
    padded = np.pad(x, widths, constant_values=fill)
    # count_include_pad counts the explicit padding, never the ceil-mode overhang
    pads = [(padding_before[i], padding_after[i]) for i in range(nd)]
    valid = np.pad(np.ones(x.shape[len(lead):], bool), pads, constant_values=True)
    valid = np.pad(valid, [(0, extra[i]) for i in range(nd)])
    inside = np.pad(np.ones(x.shape[len(lead):], bool), pads)
    inside = np.pad(inside, [(0, extra[i]) for i in range(nd)])
    out = np.zeros(lead + tuple(outs), dtype=dtype)
    for idx in np.ndindex(*outs):
        sl = tuple(slice(idx[i] * strides[i], idx[i] * strides[i] + dks[i], dilation[i])
                   for i in range(nd))
        win = padded[(Ellipsis,) + sl]
        if pool_type == "max":
            out[(Ellipsis,) + idx] = win.reshape(lead + (-1,)).max(axis=-1)
        else:
            cnt = (valid if count_include_pad else inside)[sl].sum()
            out[(Ellipsis,) + idx] = win.reshape(lead + (-1,)).sum(axis=-1) / max(cnt, 1)
    return np.moveaxis(out, range(out.ndim - nd, out.ndim), spatial)


def adaptive_pool(np_data, out_size, pool_type, layout):
    """Adaptive max/avg pooling to ``out_size`` over the spatial axes of ``layout``."""
    spatial = [i for i, ch in enumerate(layout) if ch in "DHW"]
    nd = len(spatial)
    x = np.moveaxis(np_data, spatial, range(np_data.ndim - nd, np_data.ndim))
    sizes = x.shape[-nd:]
    out = np.zeros(x.shape[:-nd] + tuple(out_size), dtype=np_data.dtype)
    reduce = np.max if pool_type == "max" else np.mean
    for idx in np.ndindex(*out_size):
        sl = tuple(slice(idx[i] * sizes[i] // out_size[i],
                         -(-(idx[i] + 1) * sizes[i] // out_size[i])) for i in range(nd))
        win = x[(Ellipsis,) + sl]
        out[(Ellipsis,) + idx] = reduce(win.reshape(win.shape[:-nd] + (-1,)), axis=-1)
    return np.moveaxis(out, range(out.ndim - nd, out.ndim), spatial)


def upsampling_python(data, scale, layout: str = "NCHW"):
    """Nearest-neighbour upsampling by integer ``scale`` (a pair) of NCHW or NHWC data."""
    h_axis, w_axis = (2, 3) if layout == "NCHW" else (1, 2)
    out = np.repeat(data, int(scale[0]), axis=h_axis)
    return np.repeat(out, int(scale[1]), axis=w_axis)
