"""Numpy references of the N-d convolutions TVM has beyond conv1d/conv2d: nn.conv3d,
nn.conv1d_transpose, nn.conv3d_transpose, nn.conv2d_backward_weight, nn.deformable_conv2d and
nn.correlation.

Everything is computed in the primal order (NC + spatial data, OI + spatial weights) by one
helper, ``conv_nd``: pad, take strided/dilated windows with ``sliding_window_view`` and contract
them with the weights per group (one einsum). Transposed convolutions are written as a
convolution of the stride-dilated input with the flipped, transposed weights.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..shape import window_tuple
from ..utils import pad_tuple, reference
from .utils import acc_dtype, np_dtype, np_from_primal, np_to_primal

__all__ = ["conv_nd", "conv_transpose_nd", "deformable_conv2d_nchw", "correlation_nchw",
           "conv2d_backward_weight_nchw"]

_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
_LETTERS = "dhw"


def _acc(x, w, dtype):
    if np_dtype(dtype).kind in "iu":
        return acc_dtype(dtype)
    return np.result_type(x, w, np.float32)


def conv_nd(x, w, strides, pad_before, pad_after, dilation, groups: int, dtype: str):
    """Convolution of (N, C, *S) data with (O, C/groups, *K) weights."""
    nd = x.ndim - 2
    acc = _acc(x, w, dtype)
    x = x.astype(acc, copy=False)
    w = w.astype(acc, copy=False)
    widths = [(0, 0), (0, 0)] + [(int(b), int(a)) for b, a in zip(pad_before, pad_after)]
    if any(b or a for b, a in widths):
        x = np.pad(x, widths)
    ks = w.shape[2:]
    dks = [(k - 1) * d + 1 for k, d in zip(ks, dilation)]
    win = sliding_window_view(x, dks, axis=tuple(range(2, 2 + nd)))
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)
              + tuple(slice(None, None, d) for d in dilation)]
    n, c = x.shape[:2]
    o = w.shape[0]
    outs = win.shape[2:2 + nd]
    g = int(groups)
    win = win.reshape((n, g, c // g) + outs + tuple(ks))
    wg = w.reshape((g, o // g, c // g) + tuple(ks))
    sp = _LETTERS[3 - nd:]
    ksp = "xyz"[:nd]
    out = np.einsum(f"ngc{sp}{ksp},goc{ksp}->ngo{sp}", win, wg, optimize=True)
    out = out.reshape((n, o) + outs)
    return np.ascontiguousarray(out).astype(np_dtype(dtype), copy=False)


def conv_transpose_nd(x, w, strides, pad_before, pad_after, output_padding, dilation,
                      groups: int, dtype: str):
    """Transposed convolution of (N, C, *S) data with (C, O/groups, *K) weights."""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    g = int(groups)
    ks = w.shape[2:]
    og = w.shape[1]
    up_shape = (n, c) + tuple((s - 1) * st + 1 for s, st in zip(x.shape[2:], strides))
    up = np.zeros(up_shape, dtype=x.dtype)
    up[(slice(None), slice(None)) + tuple(slice(None, None, st) for st in strides)] = x
    before, after = [], []
    for i in range(nd):
        ek = (ks[i] - 1) * dilation[i]
        before.append(ek - pad_before[i])
        after.append(ek - pad_after[i] + output_padding[i])
    # negative padding crops
    crop = (slice(None), slice(None)) + tuple(
        slice(max(0, -b), up.shape[2 + i] - max(0, -a)) for i, (b, a) in
        enumerate(zip(before, after)))
    up = up[crop]
    wt = w.reshape((g, c // g, og) + tuple(ks)).swapaxes(1, 2).reshape((g * og, c // g) + ks)
    wt = wt[(slice(None), slice(None)) + (slice(None, None, -1),) * nd]
    return conv_nd(up, wt, (1,) * nd, [max(0, b) for b in before], [max(0, a) for a in after],
                   dilation, g, dtype)


def _conv_attrs(attrs, nd, op):
    strides = window_tuple(attrs.strides, nd, "strides", op)
    dilation = window_tuple(attrs.dilation, nd, "dilation", op)
    pad = pad_tuple(attrs.padding, nd, op)
    return strides, dilation, pad[:nd], pad[nd:]


@reference("nn.conv3d")
def _conv3d(attrs, args, out_type):
    data, weight = args
    x = np_to_primal(data, attrs.data_layout, "NCDHW")
    w = np_to_primal(weight, attrs.kernel_layout, "OIDHW")
    strides, dilation, pb, pa = _conv_attrs(attrs, 3, "nn.conv3d")
    out = conv_nd(x, w, strides, pb, pa, dilation, int(attrs.groups), out_type.dtype)
    return np_from_primal(out, "NCDHW", attrs.out_layout or attrs.data_layout)


def _conv_transpose(attrs, args, out_type, nd):
    data, weight = args
    sp = _SPATIAL[nd]
    x = np_to_primal(data, attrs.data_layout, "NC" + sp)
    w = np_to_primal(weight, attrs.kernel_layout, "IO" + sp)
    op = f"nn.conv{nd}d_transpose"
    strides, dilation, pb, pa = _conv_attrs(attrs, nd, op)
    opad = window_tuple(attrs.output_padding, nd, "output_padding", op)
    out = conv_transpose_nd(x, w, strides, pb, pa, opad, dilation, int(attrs.groups),
                            out_type.dtype)
    return np_from_primal(out, "NC" + sp, attrs.out_layout or attrs.data_layout)


@reference("nn.conv1d_transpose")
def _conv1d_transpose(attrs, args, out_type):
    return _conv_transpose(attrs, args, out_type, 1)


@reference("nn.conv3d_transpose")
def _conv3d_transpose(attrs, args, out_type):
    return _conv_transpose(attrs, args, out_type, 3)


# ------------------------------------------------------------------ conv2d_backward_weight
def conv2d_backward_weight_nchw(dy, x, kernel_size, strides, padding, dilation, groups, dtype):
    """Gradient of conv2d (NCHW/OIHW) with respect to its weight, of shape
    (O, C/groups, kh, kw): correlate the padded input's windows with the output gradient."""
    acc = _acc(dy, x, dtype)
    pt, pl, pb, pr = padding
    x = np.pad(x.astype(acc), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, c = x.shape[:2]
    o, oh, ow = dy.shape[1:]
    kh, kw = kernel_size
    sh, sw = strides
    dh, dw = dilation
    g = int(groups)
    dyg = dy.astype(acc).reshape(n, g, o // g, oh, ow)
    out = np.zeros((g, o // g, c // g, kh, kw), dtype=acc)
    xg = x.reshape(n, g, c // g, x.shape[2], x.shape[3])
    for i in range(kh):
        for j in range(kw):
            tap = xg[:, :, :, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                     j * dw:j * dw + (ow - 1) * sw + 1:sw]
            out[:, :, :, i, j] = np.einsum("ngchw,ngohw->goc", tap, dyg, optimize=True)
    return out.reshape(o, c // g, kh, kw).astype(np_dtype(dtype), copy=False)


@reference("nn.conv2d_backward_weight")
def _conv2d_backward_weight(attrs, args, out_type):
    grad, data = args
    dy = np_to_primal(grad, attrs.data_layout, "NCHW")
    x = np_to_primal(data, attrs.data_layout, "NCHW")
    strides, dilation, pb, pa = _conv_attrs(attrs, 2, "nn.conv2d_backward_weight")
    ks = tuple(int(k) for k in attrs.kernel_size)
    out = conv2d_backward_weight_nchw(dy, x, ks, strides, (pb[0], pb[1], pa[0], pa[1]), dilation,
                                      int(attrs.groups), out_type.dtype)
    return np_from_primal(out, "OIHW", attrs.kernel_layout)


# ------------------------------------------------------------------ deformable_conv2d
def _bilinear_nchw(img, y, x):
    """Bilinear samples of img (C, H, W) at float positions y, x (any shape), as TVM's
    deformable conv samples: zero outside [0, H) x [0, W), corner indices clamped inside."""
    c, h, w = img.shape
    inside = (y >= 0) & (y < h) & (x >= 0) & (x < w)
    y = np.clip(y, 0, h - 1)
    x = np.clip(x, 0, w - 1)
    y0 = np.floor(y).astype(np.int64)
    x0 = np.floor(x).astype(np.int64)
    y1 = np.minimum(y0 + 1, h - 1)
    x1 = np.minimum(x0 + 1, w - 1)
    fy, fx = y - y0, x - x0
    out = (img[:, y0, x0] * ((1 - fy) * (1 - fx)) + img[:, y0, x1] * ((1 - fy) * fx)
           + img[:, y1, x0] * (fy * (1 - fx)) + img[:, y1, x1] * (fy * fx))
    return np.where(inside, out, 0.0)


def deformable_conv2d_nchw(data, offset, kernel, strides, padding, dilation,
                           deformable_groups: int, groups: int, dtype: str = "float32"):
    """Deformable conv2d (v1): each kernel tap samples the input bilinearly at its regular
    position plus a learned (dy, dx) offset; offsets have shape
    (N, deformable_groups * kh * kw * 2, OH, OW) in (tap, [y, x]) order."""
    n, c, h, w = data.shape
    o, _, kh, kw = kernel.shape
    oh, ow = offset.shape[2:]
    sh, sw = strides
    dh, dw = dilation
    pt, pl = padding[0], padding[1]
    cg = c // deformable_groups
    base_y = (np.arange(oh) * sh - pt)[:, None]
    base_x = (np.arange(ow) * sw - pl)[None, :]
    cols = np.zeros((n, c, kh, kw, oh, ow), dtype=np.float64)
    off = offset.reshape(n, deformable_groups, kh, kw, 2, oh, ow).astype(np.float64)
    for b in range(n):
        for dg in range(deformable_groups):
            img = data[b, dg * cg:(dg + 1) * cg].astype(np.float64)
            for i in range(kh):
                for j in range(kw):
                    y = base_y + i * dh + off[b, dg, i, j, 0]
                    x = base_x + j * dw + off[b, dg, i, j, 1]
                    cols[b, dg * cg:(dg + 1) * cg, i, j] = _bilinear_nchw(img, y, x)
    g = int(groups)
    cols = cols.reshape(n, g, c // g, kh, kw, oh, ow)
    wg = kernel.astype(np.float64).reshape(g, o // g, c // g, kh, kw)
    out = np.einsum("ngcijhw,gocij->ngohw", cols, wg, optimize=True).reshape(n, o, oh, ow)
    return out.astype(np_dtype(dtype))


@reference("nn.deformable_conv2d")
def _deformable_conv2d(attrs, args, out_type):
    data, offset, weight = args
    x = np_to_primal(data, attrs.data_layout, "NCHW")
    off = np_to_primal(offset, attrs.data_layout, "NCHW")
    w = np_to_primal(weight, attrs.kernel_layout, "OIHW")
    strides, dilation, pb, _ = _conv_attrs(attrs, 2, "nn.deformable_conv2d")
    out = deformable_conv2d_nchw(x, off, w, strides, pb, dilation,
                                 int(attrs.deformable_groups), int(attrs.groups), out_type.dtype)
    return np_from_primal(out, "NCHW", attrs.out_layout or attrs.data_layout)


# ------------------------------------------------------------------ correlation (FlowNet)
def correlation_nchw(a, b, kernel_size, max_displacement, stride1, stride2, padding,
                     is_multiply: bool):
    """FlowNet's correlation layer: for every displacement (dy, dx) on a grid of step stride2
    within max_displacement, the mean over a kernel_size window and the channels of a * b
    (or |a - b|), sampled every stride1 pixels."""
    n, c, h, w = a.shape
    pt, pl, pb, pr = padding
    pa = np.pad(a.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    pbb = np.pad(b.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    ph, pw = pa.shape[2:]
    kr = (kernel_size - 1) // 2
    border = max_displacement + kr
    oh = -(-(ph - 2 * border) // stride1)
    ow = -(-(pw - 2 * border) // stride1)
    rad = max_displacement // stride2
    nd = 2 * rad + 1
    out = np.zeros((n, nd * nd, oh, ow), dtype=np.float64)
    norm = kernel_size * kernel_size * c
    for q, (dy, dx) in enumerate((dy, dx) for dy in range(-rad, rad + 1)
                                 for dx in range(-rad, rad + 1)):
        for i in range(oh):
            y1 = i * stride1 + max_displacement
            y2 = y1 + dy * stride2
            for j in range(ow):
                x1 = j * stride1 + max_displacement
                x2 = x1 + dx * stride2
                p1 = pa[:, :, y1:y1 + kernel_size, x1:x1 + kernel_size]
                p2 = pbb[:, :, y2:y2 + kernel_size, x2:x2 + kernel_size]
                v = p1 * p2 if is_multiply else np.abs(p1 - p2)
                out[:, q, i, j] = v.sum(axis=(1, 2, 3)) / norm
    return out.astype(a.dtype)


@reference("nn.correlation")
def _correlation(attrs, args, out_type):
    a, b = args
    pad = pad_tuple(attrs.padding, 2, "nn.correlation")
    out = correlation_nchw(a, b, int(attrs.kernel_size), int(attrs.max_displacement),
                           int(attrs.stride1), int(attrs.stride2), pad, bool(attrs.is_multiply))
    return out.astype(out_type.dtype)
