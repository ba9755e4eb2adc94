"""Numpy references of the nn operators (activations, convolutions, matmuls, norms, pools...)."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...runtime.ndarray import contiguous
from ..shape import (
    adaptive_output_size,
    hw_axes,
    pool_out_size,
    pool_tuple,
    spatial_axes,
    window_tuple,
)
from ..utils import normalize_axis, pad_tuple, reference
from .utils import acc_dtype, np_dtype, np_from_primal, np_to_primal


# ------------------------------------------------------------------ activations
def _expand(vec, axis, ndim):
    shape = [1] * ndim
    shape[axis] = -1
    return vec.reshape(shape)


@reference("nn.bias_add")
def _bias_add(attrs, args, out_type):
    x, b = args
    return x + _expand(b, normalize_axis(attrs.axis, x.ndim), x.ndim)


@reference("nn.prelu")
def _prelu(attrs, args, out_type):
    x, alpha = args
    a = _expand(alpha, normalize_axis(attrs.axis, x.ndim), x.ndim)
    return np.where(x > 0, x, x * a).astype(x.dtype, copy=False)


@reference("nn.relu")
def _relu(attrs, args, out_type):
    return np.maximum(args[0], np.zeros((), dtype=args[0].dtype))


@reference("nn.leaky_relu")
def _leaky_relu(attrs, args, out_type):
    x = args[0]
    return np.where(x > 0, x, x * attrs.alpha).astype(x.dtype, copy=False)


@reference("nn.dropout")
def _dropout(attrs, args, out_type):
    """Inference semantics: the data passes through unchanged; the mask is all ones."""
    x = args[0]
    return x.copy(), np.ones_like(x)


@reference("nn.softmax")
@reference("nn.fast_softmax")
def _softmax(attrs, args, out_type):
    x = args[0]
    axis = normalize_axis(attrs.axis, x.ndim)
    if x.shape[axis] == 0:  # nothing to normalize (and max over an empty axis is an error)
        return x.copy()
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype, copy=False)


@reference("nn.log_softmax")
def _log_softmax(attrs, args, out_type):
    x = args[0]
    axis = normalize_axis(attrs.axis, x.ndim)
    if x.shape[axis] == 0:
        return x.copy()
    shifted = x - x.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(x.dtype)


# ------------------------------------------------------------------ convolutions
_SPATIAL = {1: "W", 2: "HW"}


def conv2d_nchw(x, w, strides, padding, dilation, groups, dtype):
    """Reference conv2d on NCHW data and OIHW weights (padding: top, left, bottom, right).

    An im2col matrix product; grouped and depthwise convolutions use one einsum over the groups
    (depthwise: one kernel tap at a time)."""
    acc = acc_dtype(dtype) if np_dtype(dtype).kind in "iu" else np.result_type(x, w, np.float32)
    x = x.astype(acc, copy=False)
    w = w.astype(acc, copy=False)
    pt, pl, pb, pr = padding
    if pt or pl or pb or pr:
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    sh, sw = strides
    dh, dw = dilation
    n, c = x.shape[:2]
    o, i, kh, kw = w.shape
    win = sliding_window_view(x, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]
    oh, ow = win.shape[2:4]
    if groups == 1:
        cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)
        out = (cols @ w.reshape(o, -1).T).reshape(n, oh, ow, o).transpose(0, 3, 1, 2)
    elif i == 1:
        # depthwise (channel multiplier o // c): accumulate one kernel tap at a time
        m = o // c
        wd = w.reshape(c, m, kh, kw)
        out = np.zeros((n, c, m, oh, ow), dtype=acc)
        for ky in range(kh):
            for kx in range(kw):
                tap = win[:, :, :, :, ky, kx][:, :, None]
                out += tap * wd[None, :, :, ky, kx, None, None]
        out = out.reshape(n, o, oh, ow)
    else:
        g = groups
        win = win.reshape(n, g, c // g, oh, ow, kh, kw)
        wg = w.reshape(g, o // g, i, kh, kw)
        out = np.einsum("ngchwij,gocij->ngohw", win, wg, optimize=True).reshape(n, o, oh, ow)
    return np.ascontiguousarray(out).astype(np_dtype(dtype), copy=False)


def _conv(attrs, args, out_type, nd=2):
    """An nd convolution in any data/kernel/output layouts, computed in NCHW/OIHW order."""
    data, weight = args
    sp = _SPATIAL[nd]
    x = np_to_primal(data, attrs.data_layout, "NC" + sp)
    w = np_to_primal(weight, attrs.kernel_layout, "OI" + sp)
    strides = window_tuple(attrs.strides, nd, "strides", "conv")
    dilation = window_tuple(attrs.dilation, nd, "dilation", "conv")
    pad = pad_tuple(attrs.padding, nd)
    if nd == 1:
        x, w = x[:, :, None, :], w[:, :, None, :]
        strides, dilation, pad = (1,) + strides, (1,) + dilation, (0, pad[0], 0, pad[1])
    out = conv2d_nchw(x, w, strides, pad, dilation, int(attrs.groups), out_type.dtype)
    if nd == 1:
        out = out[:, :, 0, :]
    return np_from_primal(out, "NC" + sp, attrs.out_layout or attrs.data_layout)


@reference("nn.conv1d")
def _conv1d(a, x, t):
    return _conv(a, x, t, 1)


reference("nn.conv2d")(_conv)


class _KernelLayoutAs:
    """``attrs`` read through, with another kernel_layout."""

    def __init__(self, attrs, kernel_layout: str):
        self._attrs, self.kernel_layout = attrs, kernel_layout

    def __getattr__(self, name):
        return getattr(self._attrs, name)


@reference("nn.contrib_conv2d_NCHWc")
def _conv2d_nchwc(attrs, args, out_type):
    """As conv2d; a 6-D weight whose kernel_layout names 4 axes is read as TVM's conv2d_NCHWc
    reads it, (O/oc, I/ic, H, W, ic, oc)."""
    weight = args[1]
    kernel_layout = str(attrs.kernel_layout)
    if weight.ndim == 6 and len(kernel_layout) == 4 and kernel_layout.isalpha():
        attrs = _KernelLayoutAs(attrs, f"OIHW{weight.shape[4]}i{weight.shape[5]}o")
    return _conv(attrs, args, out_type)


def _pad_or_crop(x, before_h, after_h, before_w, after_w):
    crop = (slice(None), slice(None), slice(max(0, -before_h), x.shape[2] - max(0, -after_h)),
            slice(max(0, -before_w), x.shape[3] - max(0, -after_w)))
    x = x[crop]
    return np.pad(x, ((0, 0), (0, 0), (max(0, before_h), max(0, after_h)),
                      (max(0, before_w), max(0, after_w))))


@reference("nn.conv2d_transpose")
def _conv2d_transpose(attrs, args, out_type):
    data, weight = args
    x = np_to_primal(data, attrs.data_layout, "NCHW")
    w = np_to_primal(weight, attrs.kernel_layout, "IOHW")
    g = int(attrs.groups)
    sh, sw = window_tuple(attrs.strides, 2, "strides", "")
    dh, dw = window_tuple(attrs.dilation, 2, "dilation", "")
    oph, opw = window_tuple(attrs.output_padding, 2, "output_padding", "")
    pt, pl, pb, pr = pad_tuple(attrs.padding, 2)
    n, c, h, wd = x.shape
    cin, og, kh, kw = w.shape
    up = np.zeros((n, c, (h - 1) * sh + 1, (wd - 1) * sw + 1), dtype=x.dtype)
    up[:, :, ::sh, ::sw] = x
    ekh, ekw = (kh - 1) * dh, (kw - 1) * dw
    up = _pad_or_crop(up, ekh - pt, ekh - pb + oph, ekw - pl, ekw - pr + opw)
    # per group: (cin/g, og, kh, kw) -> (og, cin/g, kh, kw), spatially flipped
    wg = w.reshape(g, cin // g, og, kh, kw).transpose(0, 2, 1, 3, 4)
    wconv = wg.reshape(g * og, cin // g, kh, kw)[:, :, ::-1, ::-1]
    out = conv2d_nchw(up, wconv, (1, 1), (0, 0, 0, 0), (dh, dw), g, out_type.dtype)
    return np_from_primal(out, "NCHW", attrs.out_layout or attrs.data_layout)


# ------------------------------------------------------------------ matrix products
def _mm(a, b, dtype):
    dt = np_dtype(dtype)
    acc = acc_dtype(dtype) if dt.kind in "iu" else np.result_type(a, b, np.float32)
    return np.matmul(a.astype(acc, copy=False), b.astype(acc, copy=False)).astype(dt, copy=False)


@reference("nn.dense")
def _dense(attrs, args, out_type):
    return _mm(args[0], args[1].T, out_type.dtype)


@reference("nn.matmul")
def _matmul(attrs, args, out_type):
    a, b = args
    if attrs.transpose_a:
        a = np.swapaxes(a, -1, -2)
    return _mm(a, b.T if attrs.transpose_b else b, out_type.dtype)


@reference("nn.batch_matmul")
def _batch_matmul(attrs, args, out_type):
    a, b = args
    if attrs.transpose_a:
        a = np.swapaxes(a, 1, 2)
    if attrs.transpose_b:
        b = np.swapaxes(b, 1, 2)
    return _mm(a, b, out_type.dtype)


def _sparse_to_dense(values, indices, indptr, ncols):
    """Dense matrix of a CSR (1-D values) or BSR (3-D values) sparse matrix with ``ncols``."""
    nrows = len(indptr) - 1
    row_of = np.repeat(np.arange(nrows), np.diff(indptr))
    if values.ndim == 1:
        out = np.zeros((nrows, ncols), dtype=values.dtype)
        out[row_of, indices] = values
        return out
    _, br, bc = values.shape
    blocks = np.zeros((nrows, ncols // bc, br, bc), dtype=values.dtype)
    blocks[row_of, indices] = values
    return blocks.transpose(0, 2, 1, 3).reshape(nrows * br, ncols)


@reference("nn.sparse_dense")
def _sparse_dense(attrs, args, out_type):
    dense, values, indices, indptr = args
    sparse = _sparse_to_dense(values, indices, indptr, dense.shape[1])
    if attrs.sparse_lhs:
        return _mm(sparse, dense.T, out_type.dtype)
    return _mm(dense, sparse.T, out_type.dtype)


# ------------------------------------------------------------------ normalizations (inference)
def _bcast(v, axis, ndim):
    shape = [1] * ndim
    shape[axis] = -1
    return v.reshape(shape)


def _affine(attrs, y, gamma, beta, axis):
    if attrs.scale:
        y = y * _bcast(gamma, axis, y.ndim)
    if attrs.center:
        y = y + _bcast(beta, axis, y.ndim)
    return y


@reference("nn.batch_norm")
def _batch_norm(attrs, args, out_type):
    x, gamma, beta, mean, var = args
    axis = normalize_axis(attrs.axis, x.ndim)
    y = (x - _bcast(mean, axis, x.ndim)) / np.sqrt(_bcast(var, axis, x.ndim) + attrs.epsilon)
    y = _affine(attrs, y, gamma, beta, axis)
    return y.astype(x.dtype, copy=False), mean.copy(), var.copy()


def _normalize(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


@reference("nn.layer_norm")
def _layer_norm(attrs, args, out_type):
    x, gamma, beta = args
    axis = normalize_axis(attrs.axis, x.ndim)
    y = _affine(attrs, _normalize(x, (axis,), attrs.epsilon), gamma, beta, axis)
    return y.astype(x.dtype, copy=False)


@reference("nn.instance_norm")
def _instance_norm(attrs, args, out_type):
    x, gamma, beta = args
    axis = normalize_axis(attrs.axis, x.ndim)
    axes = tuple(i for i in range(1, x.ndim) if i != axis)
    y = _affine(attrs, _normalize(x, axes, attrs.epsilon), gamma, beta, axis)
    return y.astype(x.dtype, copy=False)


@reference("nn.group_norm")
def _group_norm(attrs, args, out_type):
    x, gamma, beta = args
    axis = normalize_axis(attrs.axis, x.ndim)
    g = int(attrs.num_groups)
    c = x.shape[axis]
    split = x.shape[:axis] + (g, c // g) + x.shape[axis + 1:]
    xs = x.reshape(split)
    axes = tuple(i for i in range(1, xs.ndim) if i != axis)
    y = _normalize(xs, axes, attrs.epsilon).reshape(x.shape)
    return _affine(attrs, y, gamma, beta, axis).astype(x.dtype, copy=False)


@reference("nn.lrn")
def _lrn(attrs, args, out_type):
    x = args[0]
    axis = normalize_axis(attrs.axis, x.ndim)
    size = int(attrs.size)
    sq = np.moveaxis(x.astype(np.float64) ** 2, axis, -1)
    half = size // 2
    padded = np.pad(sq, [(0, 0)] * (sq.ndim - 1) + [(half, size - 1 - half)])
    csum = np.concatenate([np.zeros(padded.shape[:-1] + (1,)), np.cumsum(padded, -1)], -1)
    window = csum[..., size:] - csum[..., :-size]
    window = np.moveaxis(window, -1, axis)
    return (x / (attrs.bias + attrs.alpha * window / size) ** attrs.beta).astype(x.dtype)


@reference("nn.l2_normalize")
def _l2_normalize(attrs, args, out_type):
    x = args[0]
    axes = tuple(int(a) for a in attrs.axis)
    norm = np.sqrt(np.maximum((x * x).sum(axis=axes, keepdims=True), attrs.eps))
    return (x / norm).astype(x.dtype, copy=False)


# ------------------------------------------------------------------ pooling (in the input layout)
def _pool(attrs, args, out_type, kind: str, spatial: str = "HW"):
    x = args[0]
    nd = len(spatial)
    idx = spatial_axes(attrs.layout, x.ndim, spatial, "pool")
    pool = pool_tuple(attrs.pool_size, nd)
    strides = pool_tuple(attrs.strides, nd)
    dilation = pool_tuple(attrs.dilation, nd)
    pad = pad_tuple(attrs.padding, nd)
    lead = x.ndim - nd
    x = np.moveaxis(x, idx, list(range(lead, x.ndim)))
    sizes = x.shape[lead:]
    outs = [pool_out_size(s, pool[i], pad[i], pad[i + nd], strides[i], dilation[i],
                          attrs.ceil_mode)
            for i, s in enumerate(sizes)]
    dks = [(pool[i] - 1) * dilation[i] + 1 for i in range(nd)]
    # extra padding at the end so that ceil-mode windows fit
    extra = [max(0, (outs[i] - 1) * strides[i] + dks[i] - (sizes[i] + pad[i] + pad[i + nd]))
             for i in range(nd)]
    widths = [(0, 0)] * lead + [(pad[i], pad[i + nd] + extra[i]) for i in range(nd)]
    sl = tuple(slice(None, None, s) for s in strides) + tuple(slice(None, None, d)
                                                                for d in dilation)
    cut = (Ellipsis,) + tuple(slice(0, o) for o in outs) + (slice(None),) * nd
    axes = tuple(range(-nd, 0))
    if kind == "max":
        if np.issubdtype(x.dtype, np.floating):
            low = np.finfo(x.dtype).min  # TVM's topi pads with the lowest finite value
        elif x.dtype == np.bool_:
            low = False
        else:
            low = np.iinfo(x.dtype).min
        xp = np.pad(x, widths, constant_values=low)
        win = sliding_window_view(xp, dks, axis=tuple(range(lead, x.ndim)))
        res = win[(Ellipsis,) + sl][cut].max(axis=axes)
    else:
        integer = np.issubdtype(x.dtype, np.integer)
        acc = np.int64 if integer else np.float64 if x.dtype == np.float64 else np.float32
        xp = np.pad(x.astype(acc), widths)
        win = sliding_window_view(xp, dks, axis=tuple(range(lead, x.ndim)))
        total = win[(Ellipsis,) + sl][cut].sum(axis=axes)
        mask = np.zeros([s + w[0] + w[1] for s, w in zip(sizes, widths[lead:])], dtype=acc)
        if attrs.count_include_pad:
            region = tuple(slice(0, sizes[i] + pad[i] + pad[i + nd]) for i in range(nd))
        else:
            region = tuple(slice(pad[i], pad[i] + sizes[i]) for i in range(nd))
        mask[region] = 1
        mwin = sliding_window_view(mask, dks)[sl][tuple(slice(0, o) for o in outs)]
        count = np.maximum(mwin.sum(axis=axes), 1)
        if integer:  # TVM's topi sums in the input dtype (wrapping) and divides with C
            # semantics: truncation toward zero
            total = total.astype(x.dtype).astype(np.int64)
            count = count.astype(np.int64)
            res = np.sign(total) * (np.abs(total) // count)
        else:
            res = total / count
    res = res.astype(x.dtype, copy=False)
    return np.ascontiguousarray(np.moveaxis(res, list(range(lead, x.ndim)), idx))


def _adaptive(attrs, args, out_type, kind: str):
    x = args[0]
    idx = spatial_axes(attrs.layout, x.ndim, "HW", "pool")
    oh, ow = (int(d) for d in adaptive_output_size(attrs, x.shape, idx, "pool"))
    x = np.moveaxis(x, idx, [x.ndim - 2, x.ndim - 1])
    h, w = x.shape[-2:]
    reduce = np.max if kind == "max" else np.mean
    if h % oh == 0 and w % ow == 0:
        blocks = x.reshape(x.shape[:-2] + (oh, h // oh, ow, w // ow))
        res = reduce(blocks, axis=(-3, -1))
    else:
        res = np.empty(x.shape[:-2] + (oh, ow), dtype=np.result_type(x, np.float32)
                       if kind == "avg" else x.dtype)
        for i in range(oh):
            h0, h1 = (i * h) // oh, -((-(i + 1) * h) // oh)
            for j in range(ow):
                w0, w1 = (j * w) // ow, -((-(j + 1) * w) // ow)
                res[..., i, j] = reduce(x[..., h0:h1, w0:w1], axis=(-2, -1))
    res = res.astype(x.dtype, copy=False)
    return np.ascontiguousarray(np.moveaxis(res, [x.ndim - 2, x.ndim - 1], idx))


def _def_pool(name, kind, spatial):
    def impl(attrs, args, out_type):
        return _pool(attrs, args, out_type, kind, spatial)

    reference(name)(impl)


def _def_adaptive(name, kind):
    def impl(attrs, args, out_type):
        return _adaptive(attrs, args, out_type, kind)

    reference(name)(impl)


_def_pool("nn.max_pool2d", "max", "HW")
_def_pool("nn.avg_pool2d", "avg", "HW")
_def_pool("nn.max_pool1d", "max", "W")
_def_pool("nn.avg_pool1d", "avg", "W")
_def_adaptive("nn.global_max_pool2d", "max")
_def_adaptive("nn.global_avg_pool2d", "avg")
_def_adaptive("nn.adaptive_max_pool2d", "max")
_def_adaptive("nn.adaptive_avg_pool2d", "avg")


# ------------------------------------------------------------------ pad / flatten / upsampling
@reference("nn.pad")
def _pad(attrs, args, out_type):
    x, value = args
    widths = [(int(b), int(a)) for b, a in attrs.pad_width]
    if attrs.pad_mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value.astype(x.dtype))
    return np.pad(x, widths, mode=attrs.pad_mode)


@reference("nn.batch_flatten")
def _batch_flatten(attrs, args, out_type):
    x = args[0]
    return x.reshape(x.shape[0], int(np.prod(x.shape[1:], dtype=np.int64)))  # (0 rows too)


def _source_coords(n_out, n_in, align_corners):
    o = np.arange(n_out, dtype=np.float64)
    if align_corners:
        return o * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    return o * (n_in / n_out)


@reference("nn.upsampling")
def _upsampling(attrs, args, out_type):
    x = args[0]
    h, w = hw_axes(attrs.layout, x.ndim, "nn.upsampling")
    oh, ow = (int(out_type.shape[h]), int(out_type.shape[w]))
    ih, iw = x.shape[h], x.shape[w]
    ch = _source_coords(oh, ih, attrs.align_corners)
    cw = _source_coords(ow, iw, attrs.align_corners)
    if attrs.method == "nearest_neighbor":
        rnd = np.round if attrs.align_corners else np.floor
        ih_idx = np.minimum(rnd(ch).astype(np.int64), ih - 1)
        iw_idx = np.minimum(rnd(cw).astype(np.int64), iw - 1)
        return np.take(np.take(x, ih_idx, axis=h), iw_idx, axis=w)
    if attrs.method != "bilinear":
        raise NotImplementedError(f"nn.upsampling: method {attrs.method!r} has no numpy "
                                  f"reference")
    out = x.astype(np.float64)
    for axis, coords, n in ((h, ch, ih), (w, cw, iw)):
        lo = np.clip(np.floor(coords).astype(np.int64), 0, n - 1)
        hi = np.minimum(lo + 1, n - 1)
        frac = coords - np.floor(coords)
        shape = [1] * x.ndim
        shape[axis] = -1
        frac = frac.reshape(shape)
        out = np.take(out, lo, axis=axis) * (1 - frac) + np.take(out, hi, axis=axis) * frac
    return out.astype(x.dtype)


# ------------------------------------------------------------------ space_to_batch / batch_to_space
@reference("nn.space_to_batch_nd")
def _space_to_batch_nd(attrs, args, out_type):
    x = args[0]
    block = [int(b) for b in attrs.block_shape]
    m = len(block)
    pads = [(0, 0)] + [(int(lo), int(hi)) for lo, hi in attrs.paddings] + [(0, 0)] * (
        x.ndim - m - 1)
    x = np.pad(x, pads, constant_values=attrs.pad_value)
    n, rest = x.shape[0], x.shape[m + 1:]
    shape = [n]
    for i, b in enumerate(block):
        shape += [x.shape[i + 1] // b, b]
    x = x.reshape(shape + list(rest))
    # move the block offsets in front of the batch
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(
        range(2 * m + 1, x.ndim))
    x = x.transpose(order)
    return np.ascontiguousarray(x.reshape(out_type.concrete_shape))


@reference("nn.batch_to_space_nd")
def _batch_to_space_nd(attrs, args, out_type):
    x = args[0]
    block = [int(b) for b in attrs.block_shape]
    m = len(block)
    n = x.shape[0] // int(np.prod(block))
    x = x.reshape(block + [n] + list(x.shape[1:]))
    order = [m]
    for i in range(m):
        order += [m + 1 + i, i]
    order += list(range(2 * m + 1, x.ndim))
    x = x.transpose(order)
    shape = [n] + [x.shape[1 + 2 * i] * block[i] for i in range(m)] + list(x.shape[2 * m + 1:])
    x = x.reshape(shape)
    index = [slice(None)] + [slice(int(lo), shape[i + 1] - int(hi))
                             for i, (lo, hi) in enumerate(attrs.crops)]
    return contiguous(x[tuple(index)])
