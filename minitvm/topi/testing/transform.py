"""Indexing and matmul references in TVM's testing signatures."""

from __future__ import annotations

import numpy as np


def batch_matmul(x, y, out_dtype=None, trans_x: bool = False, trans_y: bool = True):
    """Batched matmul with TVM's default ``trans_y=True`` (y is (batch, N, K))."""
    a = x.transpose(0, 2, 1) if trans_x else x
    b = y.transpose(0, 2, 1) if trans_y else y
    if a.shape[0] != b.shape[0] and 1 not in (a.shape[0], b.shape[0]):
        raise ValueError(f"batch_matmul: batch sizes {a.shape[0]} and {b.shape[0]} differ")
    out = np.matmul(a, b)
    return out.astype(out_dtype) if out_dtype else out


def gather_python(data, axis, indices):
    return np.take_along_axis(data, indices.astype("int64"), axis=axis)


def gather_nd_python(a_np, indices_np):
    """``out[y...] = a[indices[0][y...], ..., indices[m-1][y...], ...]``."""
    idx = tuple(indices_np.astype("int64"))
    return a_np[idx]


def one_hot(indices, on_value, off_value, depth, axis, dtype):
    out = np.full(indices.shape + (depth,), off_value, dtype=dtype)
    np.put_along_axis(out, indices.astype("int64")[..., None], on_value, axis=-1)
    return out if axis == -1 else np.moveaxis(out, -1, axis)


def strided_slice_python(data, begin, end, strides, slice_mode: str = "end", axes=None):
    """numpy slicing with TVM's strided_slice arguments (``slice_mode="size"``: end is a
    length, -1 meaning to the end)."""
    axes = list(axes) if axes is not None else list(range(len(begin)))
    strides = list(strides) if strides is not None else [1] * len(axes)
    if len(strides) < len(axes):
        strides = strides + [strides[-1] if strides else 1] * (len(axes) - len(strides))
    slices = [slice(None)] * data.ndim
    for k, ax in enumerate(axes):
        b = begin[k]
        if slice_mode == "size":
            e = data.shape[ax] if end[k] < 0 else b + end[k]
            slices[ax] = slice(b, e, 1)
        else:
            slices[ax] = slice(b, end[k] if k < len(end) else None, strides[k])
    return data[tuple(slices)]


def sequence_mask(data, valid_length, mask_value, axis):
    """Positions at or past ``valid_length[b]`` along ``axis`` (0: (T, B, ...), 1: (B, T, ...))
    set to ``mask_value``."""
    t = data.shape[axis]
    b_axis = 1 - axis
    steps = np.arange(t).reshape([t if i == axis else 1 for i in range(2)])
    lens = valid_length.reshape([data.shape[b_axis] if i == b_axis else 1 for i in range(2)])
    mask = (steps < lens).reshape(steps.shape[:1] + lens.shape[1:] if axis == 0 else
                                  lens.shape[:1] + steps.shape[1:])
    mask = mask.reshape(mask.shape + (1,) * (data.ndim - 2))
    return np.where(mask, data, np.asarray(mask_value, dtype=data.dtype))


def space_to_depth_python(data, block_size: int):
    n, c, h, w = data.shape
    b = block_size
    x = data.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return x.reshape(n, c * b * b, h // b, w // b)


def depth_to_space_python(data, block_size: int, mode: str = "DCR"):
    n, c, h, w = data.shape
    b = block_size
    if mode == "DCR":
        x = data.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        x = data.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return x.reshape(n, c // (b * b), h * b, w * b)
