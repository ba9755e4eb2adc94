"""sparse_fill_empty_rows, sparse_reshape, sparse_segment_sum (TensorFlow semantics): types,
numerics against direct definitions and the text round trip."""

import numpy as np
import pytest
from relay_op_check import _mod, run_all

from minitvm import relay


def test_sparse_fill_empty_rows():
    idx = np.array([[0, 1], [0, 3], [2, 0], [4, 2]], "int64")
    vals = np.array([1.0, 2.0, 3.0, 4.0], "float32")
    shape = np.array([6, 5], "int64")
    default = np.array([-1.0], "float32")
    mod = _mod(lambda a, b, c, d: relay.sparse_fill_empty_rows(a, b, c, d).astuple(), idx, vals,
               shape, default)
    t = mod["main"].body.checked_type
    assert str(t) == "(Tensor[(?, 2), int64], Tensor[(?), float32], Tensor[(?), bool])"
    new_idx, new_vals, empty = run_all(
        lambda a, b, c, d: relay.sparse_fill_empty_rows(a, b, c, d).astuple(), idx, vals,
        shape, default, compiled=False)
    np.testing.assert_array_equal(new_idx, [[0, 1], [0, 3], [1, 0], [2, 0], [3, 0], [4, 2],
                                            [5, 0]])
    np.testing.assert_array_equal(new_vals, [1, 2, -1, 3, -1, 4, -1])
    np.testing.assert_array_equal(empty, [False, True, False, True, False, True])
    with pytest.raises(Exception, match="sparse_fill_empty_rows: default_value dtype"):
        _mod(lambda a, b, c, d: relay.sparse_fill_empty_rows(a, b, c, d).astuple(), idx, vals,
             shape, default.astype("float64"))


def test_sparse_reshape():
    idx = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 2, 3]], "int64")
    prev = np.array([2, 3, 6], "int64")
    new = np.array([9, -1], "int64")
    out_idx, out_shape = run_all(lambda a, b, c: relay.sparse_reshape(a, b, c).astuple(), idx,
                                 prev, new)
    np.testing.assert_array_equal(out_shape, [9, 4])
    flat = np.ravel_multi_index(idx.T, (2, 3, 6))
    np.testing.assert_array_equal(out_idx, np.stack(np.unravel_index(flat, (9, 4)), 1))
    with pytest.raises(Exception, match="sparse_reshape: sparse_indices must be a 2-D integer"):
        _mod(lambda a, b, c: relay.sparse_reshape(a, b, c).astuple(), idx[0], prev, new)


def test_sparse_segment_sum():
    c = np.array([[1, 2, 3, 4], [-1, -2, -3, -4], [5, 6, 7, 8]], "float32")
    out = run_all(relay.sparse_segment_sum, c, np.array([0, 1], "int32"),
                  np.array([0, 0], "int32"), compiled=False)[0]
    np.testing.assert_array_equal(out, [[0, 0, 0, 0]])
    out = run_all(relay.sparse_segment_sum, c, np.array([0, 2, 1], "int32"),
                  np.array([0, 1, 1], "int32"), compiled=False)[0]
    np.testing.assert_array_equal(out, [[1, 2, 3, 4], [4, 4, 4, 4]])
    with pytest.raises(Exception, match="sparse_segment_sum: indices .* must have one length"):
        _mod(relay.sparse_segment_sum, c, np.array([0, 1], "int32"), np.array([0], "int32"))
