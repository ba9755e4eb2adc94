"""Numpy references of sorting, searching, scanning, scattering and rearranging operators
(``sort``, ``argsort``, ``topk``, ``searchsorted``, ``cumsum``, ``scatter_elements``, ``einsum``,
``nn.depth_to_space``, ``trilu``, ...)."""

from __future__ import annotations

import numpy as np

from ..utils import reference


def _axis(attrs, ndim):
    a = int(attrs.axis)
    return a + ndim if a < 0 else a


@reference("sort")
def _sort(attrs, args, t):
    # values only: any sorting algorithm gives them (numpy's default is the vectorized one)
    axis = _axis(attrs, args[0].ndim)
    x = np.sort(args[0], axis=axis)
    return x if attrs.is_ascend else np.flip(x, axis=axis)


def _argsort_values(x, axis, ascend):
    if ascend:
        return np.argsort(x, axis=axis, kind="stable")
    # descending, ties keep their original order
    # (~x, not -x, for integers: -x overflows on the most negative value)
    return np.argsort(-x if x.dtype.kind == "f" else ~x, axis=axis, kind="stable")


_SIGN = np.uint32(0x80000000)


def _order_keys(x, ascend):
    """``uint64`` keys of ``x`` (sorted axis last) whose order is the stable argsort's: the
    value's order as a ``uint32`` (NaN last both ways) above the position; None for 64-bit
    dtypes. The keys are distinct, so numpy's fastest sort and partition order them stably."""
    if x.dtype.kind == "f" and x.dtype.itemsize <= 4:
        f = x.astype(np.float32) + np.float32(0)  # (-0.0 becomes 0.0: they tie)
        u = f.view(np.uint32)
        key = np.where(u & _SIGN, ~u, u | _SIGN)
        if not ascend:
            key = ~key
        key[np.isnan(f)] = np.uint32(0xFFFFFFFF)
    elif x.dtype.kind in "biu" and x.dtype.itemsize <= 4:
        key = x.astype(np.int64)
        key = (key + (1 << 31) if x.dtype.kind == "i" else key).astype(np.uint32)
        if not ascend:
            key = ~key
    else:
        return None
    pos = np.arange(x.shape[-1], dtype=np.uint64)
    return (key.astype(np.uint64) << np.uint64(32)) | pos


def _ranked_positions(x, axis, ascend, k=None):
    """Positions along ``axis`` of the ``k`` first elements (all when None) in stable order."""
    n = x.shape[axis]
    keys = _order_keys(np.moveaxis(x, axis, -1), ascend)
    if keys is None:
        idx = _argsort_values(x, axis, ascend)
        return idx if k is None or k == n else np.take(idx, np.arange(k), axis=axis)
    if k is not None and k < n:
        keys = np.partition(keys, k - 1, axis=-1)[..., :k]
    idx = (np.sort(keys, axis=-1) & np.uint64(0xFFFFFFFF)).astype(np.int64)
    return np.moveaxis(idx, -1, axis)


@reference("argsort")
def _argsort(attrs, args, t):
    x = args[0]
    return _ranked_positions(x, _axis(attrs, x.ndim), attrs.is_ascend).astype(t.dtype)


@reference("topk")
def _topk(attrs, args, t):
    x = args[0]
    axis = _axis(attrs, x.ndim)
    k = int(attrs.k)
    k = x.shape[axis] if k < 1 else min(k, x.shape[axis])
    idx = _ranked_positions(x, axis, attrs.is_ascend, k)
    vals = np.take_along_axis(x, idx, axis=axis)
    idx = idx.astype(attrs.dtype)
    if attrs.ret_type == "values":
        return vals
    if attrs.ret_type == "indices":
        return idx
    return vals, idx


@reference("searchsorted")
def _searchsorted(attrs, args, t):
    seq, vals = args
    side = "right" if attrs.right else "left"
    if seq.ndim == 1:
        return np.searchsorted(seq, vals, side=side).astype(t.dtype)
    flat_seq = seq.reshape(-1, seq.shape[-1])
    flat_val = vals.reshape(-1, vals.shape[-1])
    out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(flat_seq, flat_val)])
    return out.reshape(vals.shape).astype(t.dtype)


def _scan(fn, attrs, args, t):
    x = args[0]
    dtype = t.dtype
    if attrs.axis is None:
        x, axis = x.reshape(-1), 0
    else:
        axis = _axis(attrs, x.ndim)
    out = fn(x.astype(dtype), axis=axis).astype(dtype)
    if attrs.exclusive and out.shape[axis]:  # (an empty axis: nothing to shift)
        ident = 0 if fn is np.cumsum else 1
        out = np.concatenate([np.full_like(np.take(out, [0], axis=axis), ident),
                              np.take(out, np.arange(out.shape[axis] - 1), axis=axis)],
                             axis=axis)
    return out


@reference("cumsum")
def _cumsum(attrs, args, t):
    return _scan(np.cumsum, attrs, args, t)


@reference("cumprod")
def _cumprod(attrs, args, t):
    return _scan(np.cumprod, attrs, args, t)


def _combine(mode, old, new):
    if mode == "add":
        return old + new
    if mode == "mul":
        return old * new
    if mode == "min":
        return np.minimum(old, new)
    if mode == "max":
        return np.maximum(old, new)
    return new


@reference("scatter_elements")
def _scatter_elements(attrs, args, t):
    data, indices, updates = args
    out = data.copy()
    axis = _axis(attrs, data.ndim)
    idx = indices.astype("int64")
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    # every update's target: its own position, the index on ``axis`` (vectorized: a Python
    # loop per element took ~1 us each, 80 ms for a small graph network's messages)
    target = list(np.indices(indices.shape, sparse=True))
    target[axis] = idx
    target = tuple(target)
    upd = np.broadcast_to(updates, indices.shape).astype(out.dtype, copy=False)
    at = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}
    if attrs.reduction in at:
        at[attrs.reduction].at(out, target, upd)
    else:  # update: numpy assigns in order, so the last of repeated targets wins
        out[target] = upd
    return out


@reference("scatter_nd")
def _scatter_nd(attrs, args, t):
    data, indices, updates = args
    out = data.copy()
    m = indices.shape[0]
    idx = indices.astype("int64").reshape(m, -1)
    upd = updates.reshape((idx.shape[1],) + updates.shape[indices.ndim - 1:])
    for j in range(idx.shape[1]):
        target = tuple(idx[:, j])
        out[target] = _combine(attrs.mode, out[target], upd[j])
    return out


@reference("einsum")
def _einsum(attrs, args, t):
    arrays = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    return np.einsum(attrs.equation, *arrays).astype(t.dtype)


@reference("nn.depth_to_space")
def _depth_to_space(attrs, args, t):
    x = args[0]
    b = int(attrs.block_size)
    nchw = attrs.layout == "NCHW"
    if not nchw:
        x = x.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    if attrs.mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    y = y.reshape(n, c // (b * b), h * b, w * b)
    return y if nchw else y.transpose(0, 2, 3, 1)


@reference("nn.space_to_depth")
def _space_to_depth(attrs, args, t):
    x = args[0]
    b = int(attrs.block_size)
    nchw = attrs.layout == "NCHW"
    if not nchw:
        x = x.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    y = y.reshape(n, c * b * b, h // b, w // b)
    return y if nchw else y.transpose(0, 2, 3, 1)


@reference("trilu")
def _trilu(attrs, args, t):
    x, k = args
    k = int(np.asarray(k))
    return np.triu(x, k) if attrs.upper else np.tril(x, k)


@reference("matrix_set_diag")
def _matrix_set_diag(attrs, args, t):
    x, diag = args
    out = x.copy()
    k1, k2 = int(attrs.k1), int(attrs.k2)
    rows, cols = x.shape[-2:]
    for d in range(k1, k2 + 1):
        # diagonals stacked from k2 down to k1 when there are several
        band = diag if k1 == k2 else diag[..., k2 - d, :]
        length = min(rows + min(d, 0), cols - max(d, 0))
        for i in range(length):
            r, c = i - min(d, 0), i + max(d, 0)
            pad = 0
            if k1 != k2:
                left = attrs.super_diag_right_align if d > 0 else attrs.sub_diag_right_align
                width = band.shape[-1]
                pad = width - length if left else 0
            out[..., r, c] = band[..., i + pad]
    return out


@reference("unravel_index")
def _unravel_index(attrs, args, t):
    idx, shape = args
    out = np.array(np.unravel_index(idx.astype("int64"), tuple(int(s) for s in shape)))
    return out.astype(t.dtype)


@reference("sparse_to_dense")
def _sparse_to_dense(attrs, args, t):
    indices, values, default = args
    out = np.full(tuple(int(s) for s in attrs.output_shape), default, dtype=t.dtype)
    idx = indices.astype("int64")
    if idx.ndim == 0:
        idx = idx.reshape(1, 1)
    elif idx.ndim == 1:
        idx = idx.reshape(-1, 1)
    vals = np.broadcast_to(values, (idx.shape[0],))
    for j in range(idx.shape[0]):
        out[tuple(idx[j])] = vals[j]
    return out


@reference("invert_permutation")
def _invert_permutation(attrs, args, t):
    p = args[0].astype("int64")
    out = np.empty_like(p)
    out[p] = np.arange(p.size)
    return out.astype(t.dtype)


@reference("nn.mirror_pad")
def _mirror_pad(attrs, args, t):
    mode = "symmetric" if attrs.mode == "SYMMETRIC" else "reflect"
    return np.pad(args[0], [tuple(int(v) for v in p) for p in attrs.pad_width], mode=mode)


@reference("nn.dilate")
def _dilate(attrs, args, t):
    x = args[0]
    strides = [int(s) for s in attrs.strides]
    shape = tuple((d - 1) * s + 1 for d, s in zip(x.shape, strides))
    out = np.full(shape, attrs.dilation_value, dtype=x.dtype)
    out[tuple(slice(None, None, s) for s in strides)] = x
    return out


@reference("fixed_point_multiply")
def _fixed_point_multiply(attrs, args, t):
    x = args[0].astype("int64")
    m, s = int(attrs.multiplier), int(attrs.shift)
    total = 31 - s  # x * m / 2^(31 - shift), rounded half up
    prod = x * m
    rounded = (prod + (np.int64(1) << (total - 1))) >> total if total > 0 else prod << -total
    return rounded.astype(t.dtype)
