"""Numpy references of the indexing, broadcasting and creating ops (take, gather, arange...)."""

from __future__ import annotations

import numpy as np

from ...ir.type import TensorType
from ...runtime.ndarray import contiguous
from ..shape import slice_like_axes
from ..utils import normalize_axis, reference


# ------------------------------------------------------------------ take / gather
def _take_1(data, idx, axis, mode):
    n = data.shape[axis]
    if n == 0:  # (no element for any index: zeros, as the kernels)
        return np.zeros(data.shape[:axis] + np.shape(idx) + data.shape[axis + 1:], data.dtype)
    if mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    elif mode == "wrap":
        idx = np.mod(idx, n)
    elif np.any((idx < -n) | (idx >= n)):
        raise IndexError(f"take: an index is out of bounds for axis {axis} of size {n} "
                         "(mode='fast')")
    return np.take(data, idx, axis=axis)


@reference("take")
def _take(attrs, args, out_type):
    data, idx = np.asarray(args[0]), np.asarray(args[1])
    if attrs.axis is None:
        return _take_1(data.reshape(-1), idx, 0, attrs.mode)
    axis = normalize_axis(attrs.axis, data.ndim, "take")
    bd = int(attrs.batch_dims)
    bd = bd + idx.ndim if bd < 0 else bd
    if bd == 0:
        return _take_1(data, idx, axis, attrs.mode)
    out = np.empty(data.shape[:axis] + idx.shape[bd:] + data.shape[axis + 1:], data.dtype)
    for b in np.ndindex(*idx.shape[:bd]):
        out[b] = _take_1(data[b], idx[b], axis - bd, attrs.mode)
    return out


@reference("gather")
def _gather(attrs, a, t):
    # (indices shorter than the data on another dim read its first positions there, as the kernel)
    data, idx = a[0], a[1].astype("int64")
    axis = int(attrs.axis) % data.ndim
    data = data[tuple(slice(None) if k == axis else slice(0, n) for k, n in enumerate(idx.shape))]
    return np.take_along_axis(data, idx, axis)


@reference("gather_nd")
def _gather_nd(attrs, args, out_type):
    data, idx = np.asarray(args[0]), np.asarray(args[1]).astype("int64")
    bd = int(attrs.batch_dims)
    if bd == 0:
        return contiguous(data[tuple(idx)])
    out = np.empty(idx.shape[1:] + data.shape[bd + idx.shape[0]:], data.dtype)
    for b in np.ndindex(*data.shape[:bd]):
        sel = idx[(slice(None),) + b]
        out[b] = data[b][tuple(sel)]
    return out


# ------------------------------------------------------------------ creating ops
@reference("one_hot")
def _one_hot(attrs, args, out_type):
    idx = np.asarray(args[0])
    depth = int(attrs.depth)
    axis = idx.ndim if attrs.axis == -1 else attrs.axis % (idx.ndim + 1)
    hot = np.expand_dims(idx, axis) == np.arange(depth).reshape(
        (1,) * axis + (depth,) + (1,) * (idx.ndim - axis))
    return np.where(hot, args[1], args[2]).astype(out_type.dtype)


@reference("arange")
def _arange(attrs, args, out_type):
    start, stop, step = (np.asarray(a).item() for a in args)
    return np.arange(start, stop, step).astype(out_type.dtype)


@reference("shape_of")
def _shape_of(attrs, a, t):
    return np.array(np.shape(a[0]), dtype=t.dtype).reshape(-1)


@reference("ndarray_size")
def _ndarray_size(attrs, a, t):
    return np.array(np.size(a[0]), dtype=t.dtype)


# ------------------------------------------------------------------ broadcast_to / collapse_sum
@reference("broadcast_to")
def _broadcast_to(attrs, a, t):
    return np.broadcast_to(a[0], tuple(attrs.shape)).copy()


@reference("broadcast_to_like")
def _broadcast_to_like(attrs, a, t):
    return np.broadcast_to(a[0], a[1].shape).copy()


def _collapse_to(x, shape):
    shape = tuple(shape)
    lead = x.ndim - len(shape)
    out = x.sum(axis=tuple(range(lead))) if lead > 0 else x
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and out.shape[i] != 1)
    return out.sum(axis=axes, keepdims=True) if axes else out


@reference("collapse_sum_like")
def _collapse_sum_like(attrs, a, t):
    return _collapse_to(a[0], a[1].shape).astype(t.dtype)


@reference("collapse_sum_to")
def _collapse_sum_to(attrs, a, t):
    return _collapse_to(a[0], attrs.shape).astype(t.dtype)


# ------------------------------------------------------------------ slice_like / sequences
@reference("slice_like")
def _slice_like(attrs, args, out_type):
    data, like = args
    index = [slice(None)] * data.ndim
    for a in slice_like_axes(TensorType(data.shape), TensorType(like.shape), attrs.axes):
        index[a] = slice(0, like.shape[a])
    return contiguous(data[tuple(index)])


@reference("sequence_mask")
def _sequence_mask(attrs, args, out_type):
    data, lengths = np.asarray(args[0]), np.asarray(args[1])
    axis = int(attrs.axis)
    steps = np.arange(data.shape[axis])
    mask = steps[:, None] < lengths[None, :] if axis == 0 else lengths[:, None] > steps[None, :]
    mask = mask.reshape(mask.shape + (1,) * (data.ndim - 2))
    return np.where(mask, data, np.asarray(attrs.mask_value, data.dtype)).astype(data.dtype)


@reference("reverse_sequence")
def _reverse_sequence(attrs, args, out_type):
    data, lengths = np.asarray(args[0]), np.asarray(args[1])
    seq = normalize_axis(attrs.seq_axis, data.ndim)
    bat = normalize_axis(attrs.batch_axis, data.ndim)
    out = data.copy()
    for b in range(data.shape[bat]):
        n = int(min(max(lengths[b], 0), data.shape[seq]))
        src = [slice(None)] * data.ndim
        src[bat] = b
        src[seq] = slice(0, n)
        dst = list(src)
        dst_seq = seq - (1 if bat < seq else 0)
        piece = data[tuple(src)]
        out[tuple(dst)] = np.flip(piece, dst_seq)
    return out
