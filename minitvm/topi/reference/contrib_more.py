"""Numpy references of nn.contrib_depthwise_conv2d_NCHWc, nn.contrib_dense_pack,
nn.internal.sparse_dense_padded, nn.sparse_add and nn.sparse_transpose."""

from __future__ import annotations

import numpy as np

from ..utils import reference
from .nn import _conv, _mm, _sparse_dense, _sparse_to_dense

reference("nn.contrib_depthwise_conv2d_NCHWc")(_conv)
reference("nn.internal.sparse_dense_padded")(_sparse_dense)


def unpack_weight(weight: np.ndarray) -> np.ndarray:
    """(N/n, K, n) or (N/n, K/k, n, k) (``NC{n}n{k}c``, TVM's VNNI packing) dense weights back
    to (N, K); 2-D weights are returned as they are."""
    if weight.ndim == 2:
        return weight
    if weight.ndim == 4:
        no, ko, n, k = weight.shape
        return weight.transpose(0, 2, 1, 3).reshape(no * n, ko * k)
    no, k, n = weight.shape
    return weight.transpose(0, 2, 1).reshape(no * n, k)


@reference("nn.contrib_dense_pack")
def _dense_pack(attrs, args, out_type):
    data, weight = args
    return _mm(data, unpack_weight(weight).T, out_type.dtype)


@reference("nn.sparse_add")
def _sparse_add(attrs, args, out_type):
    dense, values, indices, indptr = args
    return (dense + _sparse_to_dense(values, indices, indptr, dense.shape[1])).astype(
        out_type.dtype)


@reference("nn.sparse_transpose")
def _sparse_transpose(attrs, args, out_type):
    values, indices, indptr = args
    n = len(indptr) - 1
    dense = _sparse_to_dense(values, indices, indptr, n).T
    mask = np.zeros_like(dense, dtype=bool)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    mask[indices, rows] = True  # keep explicit zeros of the input as entries
    r, c = np.nonzero(mask)
    new_ptr = np.zeros(n + 1, dtype=indptr.dtype)
    np.cumsum(np.bincount(r, minlength=n), out=new_ptr[1:])
    return dense[r, c].astype(values.dtype), c.astype(indices.dtype), new_ptr
