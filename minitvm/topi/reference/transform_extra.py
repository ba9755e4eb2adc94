"""Numpy references of meshgrid, argwhere, unique, adv_index, sliding_window and strided_set
(TVM's semantics: unique pads its outputs to the input's length, with zeros here)."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...runtime.ndarray import contiguous
from ..utils import reference

__all__ = ["unique_padded", "strided_set_np"]


@reference("meshgrid")
def _meshgrid(attrs, args, out_type):
    arrays = [np.reshape(a, -1) for a in args[0]]
    return tuple(np.ascontiguousarray(g) for g in np.meshgrid(*arrays, indexing=attrs.indexing))


@reference("argwhere")
def _argwhere(attrs, args, out_type):
    return np.argwhere(args[0]).astype(out_type.dtype)


def _runs(data: np.ndarray) -> tuple:
    """(values, first, inverse, counts) of the runs of ``==`` neighbours (a NaN ends a run)."""
    starts = np.ones(data.shape[0], bool)
    starts[1:] = data[1:] != data[:-1]
    first = np.flatnonzero(starts)
    counts = np.diff(np.append(first, data.shape[0]))
    return data[first], first, np.cumsum(starts) - 1, counts


def unique_padded(data: np.ndarray, is_sorted: bool = True, return_counts: bool = False,
                  equal_nan: bool = True, consecutive: bool = False):
    """(unique, first indices, inverse indices, [num_unique], counts?) padded to len(data);
    with ``equal_nan`` False each NaN is its own value, in the order of its position;
    ``consecutive``: of the runs of equal neighbours instead."""
    n = data.shape[0]
    if consecutive:
        values, first, inverse, counts = _runs(data)
    else:
        values, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True,
                                                   return_counts=True, equal_nan=equal_nan)
    if not is_sorted and not consecutive:  # order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values, first, counts = values[order], first[order], counts[order]
        inverse = rank[inverse]
    k = values.size

    def pad(a, dtype):
        out = np.zeros(n, dtype=dtype)
        out[:k] = a
        return out

    outs = [pad(values, data.dtype), pad(first, "int32"), inverse.astype("int32").reshape(-1),
            np.array([k], "int32")]
    if return_counts:
        outs.append(pad(counts, "int32"))
    return tuple(outs)


@reference("unique")
def _unique(attrs, args, out_type):
    return unique_padded(args[0], bool(attrs.sorted), bool(attrs.return_counts),
                         bool(attrs.get("equal_nan", True)),
                         bool(attrs.get("consecutive", False)))


@reference("adv_index")
def _adv_index(attrs, args, out_type):
    data, *indices = args[0]
    return contiguous(data[tuple(i.astype(np.int64) for i in indices)])


@reference("sliding_window")
def _sliding_window(attrs, args, out_type):
    x = args[0]
    axis = int(attrs.axis)
    win = [int(w) for w in attrs.window_shape]
    strides = [int(s) for s in attrs.strides]
    axes = tuple(range(axis, x.ndim))
    v = sliding_window_view(x, win, axis=axes)
    v = v[(slice(None),) * axis + tuple(slice(None, None, s) for s in strides)]
    return contiguous(v)


def strided_set_np(data, v, begin, end, strides):
    """A copy of ``data`` with the strided slice [begin:end:strides] set to ``v``."""
    out = data.copy()
    sl = []
    for i in range(data.ndim):
        s = int(strides[i]) if i < len(strides) else (int(strides[-1]) if len(strides) else 1)
        b = int(begin[i]) if i < len(begin) else None
        e = int(end[i]) if i < len(end) else None
        sl.append(slice(b, e, s))
    out[tuple(sl)] = v
    return out


@reference("strided_set")
def _strided_set(attrs, args, out_type):
    data, v, begin, end, strides = args
    return strided_set_np(data, v, np.reshape(begin, -1), np.reshape(end, -1),
                          np.reshape(strides, -1))
