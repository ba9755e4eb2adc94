"""Numpy references of TensorFlow-style sparse ops: sparse_fill_empty_rows, sparse_reshape and
sparse_segment_sum (COO indices of shape (N, ndim), row-major sorted)."""

from __future__ import annotations

import numpy as np

from ..utils import reference

__all__ = ["sparse_fill_empty_rows_np", "sparse_reshape_np", "sparse_segment_sum_np"]


def sparse_fill_empty_rows_np(indices, values, dense_shape, default_value):
    """Add an entry [row, 0, ...] = default_value for every row with no entry; returns
    (new_indices, new_values, empty_row_indicator) ordered by row."""
    rows = int(dense_shape[0])
    has = np.zeros(rows, bool)
    if indices.shape[0]:
        has[indices[:, 0].astype(np.int64)] = True
    empty = ~has
    extra = np.zeros((int(empty.sum()), indices.shape[1]), dtype=indices.dtype)
    extra[:, 0] = np.nonzero(empty)[0]
    all_idx = np.concatenate([indices, extra])
    all_val = np.concatenate([values, np.full(extra.shape[0], default_value, values.dtype)])
    order = np.argsort(all_idx[:, 0], kind="stable")
    return all_idx[order], all_val[order], empty


@reference("sparse_fill_empty_rows")
def _sparse_fill_empty_rows(attrs, args, out_type):
    indices, values, dense_shape, default = args
    return sparse_fill_empty_rows_np(indices, values, dense_shape, np.reshape(default, -1)[0])


def sparse_reshape_np(indices, prev_shape, new_shape):
    """Re-index COO entries of a tensor of ``prev_shape`` into ``new_shape`` (one -1 inferred)."""
    prev = [int(s) for s in prev_shape]
    new = [int(s) for s in new_shape]
    total = int(np.prod(prev))
    if -1 in new:
        known = int(np.prod([s for s in new if s != -1]))
        new[new.index(-1)] = total // known if known else 0
    if int(np.prod(new)) != total:
        raise ValueError(f"sparse_reshape: cannot reshape {prev} into {list(new_shape)}")
    flat = np.ravel_multi_index(indices.T.astype(np.int64), prev) if indices.shape[0] else \
        np.zeros(0, np.int64)
    out = np.stack(np.unravel_index(flat, new), axis=1) if indices.shape[0] else \
        np.zeros((0, len(new)), np.int64)
    return out.astype(indices.dtype), np.array(new, dtype=np.asarray(new_shape).dtype)


@reference("sparse_reshape")
def _sparse_reshape(attrs, args, out_type):
    return sparse_reshape_np(*args)


def sparse_segment_sum_np(data, indices, segment_ids):
    """out[s] = sum of data[indices[i]] over the i with segment_ids[i] == s."""
    n = int(segment_ids.max()) + 1 if segment_ids.size else 0
    out = np.zeros((n,) + data.shape[1:], dtype=data.dtype)
    np.add.at(out, segment_ids.astype(np.int64), data[indices.astype(np.int64)])
    return out


@reference("sparse_segment_sum")
def _sparse_segment_sum(attrs, args, out_type):
    return sparse_segment_sum_np(*args)
