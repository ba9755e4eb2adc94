"""``schedule.selection``'s merge sort of whole rows (``sort``, ``argsort``, ``topk`` with
``k = n`` on elements of at most 32 bits): runs of ``RUN`` keys sorted by a sorting network, then
merge passes (equal runs from both ends at once, a shorter last run from the front, a lone run
copied). Row lengths around the run length and its powers of two, not multiples of it, ties in
input order, NaN, -0.0, rows sorted either way; the network itself by the 0-1 principle."""

import itertools

import numpy as np
import pytest
from relay_build import build_run

from minitvm import relay
from minitvm.schedule.selection import RUN, network
from minitvm.topi.selection import MAX_K
from minitvm.topi.testing import selection_order_python


@pytest.mark.parametrize("size", [2, 4, 8, 16, 32])
def test_network_sorts_every_zero_one_input(size):
    pairs = network(size)
    assert all(0 <= a < b < size for a, b in pairs)
    if size <= 16:
        rows = np.array(list(itertools.product((0, 1), repeat=size)), "int8")
    else:  # 2**32 inputs are too many: random ones
        rows = np.random.default_rng(0).integers(0, 2, (20000, size)).astype("int8")
    for a, b in pairs:
        lo, hi = np.minimum(rows[:, a], rows[:, b]), np.maximum(rows[:, a], rows[:, b])
        rows[:, a], rows[:, b] = lo, hi
    assert (np.diff(rows, axis=1) >= 0).all()


_LENGTHS = [MAX_K + 1, 3 * RUN - 1, 3 * RUN + 1, 4 * RUN, 4 * RUN + 1, 8 * RUN - 3, 8 * RUN,
            8 * RUN + RUN // 2, 1000, 1023, 1025]


@pytest.mark.parametrize("n", _LENGTHS)
@pytest.mark.parametrize("is_ascend", [True, False])
def test_argsort_lengths_with_ties(n, is_ascend):
    rng = np.random.default_rng(n)
    x = rng.integers(-6, 6, (3, n)).astype("float32")  # many ties
    x[0, ::7] = np.nan
    x[1, 1::5] = -0.0
    x[1, 2::5] = 0.0
    (order,), kinds = build_run(lambda v: relay.argsort(v, axis=1, is_ascend=is_ascend), x)
    np.testing.assert_array_equal(order, selection_order_python(x, -1, is_ascend))
    assert kinds == ["native"]


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8", "int16", "int32", "uint8",
                                   "uint16", "uint32"])
@pytest.mark.parametrize("n", [RUN * 5 + 3, 517])
def test_topk_whole_row_dtypes(dtype, n):
    rng = np.random.default_rng(7)
    if dtype[0] in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (2, n), dtype=dtype, endpoint=True)
        x[:, :4] = [info.min, info.max, 0, info.max]
        x[:, 20:50] = x[:, 50:80]
    else:
        x = (rng.integers(-40, 40, (2, n)) / 8).astype(dtype)
        x[:, :6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan]
    for largest in (True, False):
        (vals, idx), kinds = build_run(lambda v, a=not largest: relay.topk(
            v, k=n, axis=1, is_ascend=a, dtype="int64").astuple(), x)
        want = selection_order_python(x, -1, not largest)
        np.testing.assert_array_equal(idx, want)
        np.testing.assert_array_equal(vals, np.take_along_axis(x, want, 1))
        assert kinds == ["native"]


@pytest.mark.parametrize("n", [4 * RUN, 300, 1000])
def test_sorted_and_constant_rows(n):
    """Rows sorted either way (one run of each merge is taken whole before the other) and
    constant rows (the order is the positions)."""
    x = np.stack([np.arange(n), np.arange(n)[::-1], np.zeros(n),
                  np.arange(n) % RUN]).astype("int32")
    for asc in (True, False):
        (order,), _ = build_run(lambda v, a=asc: relay.argsort(v, axis=1, is_ascend=a), x)
        np.testing.assert_array_equal(order, selection_order_python(x, -1, asc))
        (vals,), _ = build_run(lambda v, a=asc: relay.sort(v, axis=1, is_ascend=a), x)
        want = np.sort(x, axis=1)
        np.testing.assert_array_equal(vals, want if asc else np.flip(want, 1))


@pytest.mark.parametrize("k", [MAX_K + 1, MAX_K + 2])
def test_topk_just_above_max_k_ties(k):
    x = np.random.default_rng(1).integers(0, 4, (4, 200)).astype("float32")
    (vals, idx), _ = build_run(lambda v: relay.topk(v, k=k, axis=1, dtype="int32").astuple(), x)
    want = selection_order_python(x, -1, False)[:, :k]
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, want, 1))


def test_inner_axis_and_parallel_rows():
    x = np.random.default_rng(2).standard_normal((40, 3 * RUN + 5, 3)).astype("float32")
    x[:, ::9] = 1.0
    (order,), _ = build_run(lambda v: relay.argsort(v, axis=1), x)
    want = np.moveaxis(selection_order_python(np.moveaxis(x, 1, -1), -1, True), -1, 1)
    np.testing.assert_array_equal(order, want)
