"""``schedule.selection``'s heap (``k > MAX_K``) and merge sort (``sort``, ``argsort``, ``k = n``)
through Relay's build: native kernels equal to the stable numpy order for every element dtype (one
int64 key for <= 32 bits, value and position for 64 bits), NaN, infinities, -0.0 and ties,
boundary ``k``, rows sorted either way (every element sinking), rows in parallel."""

import numpy as np
import pytest
from relay_build import build_run

from minitvm import relay
from minitvm.schedule import selection
from minitvm.topi.selection import MAX_K
from minitvm.topi.testing import selection_order_python


@pytest.fixture(autouse=True)
def _no_rank_form(monkeypatch):
    # these rows would take the rank form (test_selection_rank): keep the heap forms tested
    monkeypatch.setattr(selection, "RANK_MAX_N", 0)


def _data(dtype, shape, rng):
    if dtype[0] in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        x.flat[:3] = [info.min, info.max, 0]
        x.flat[10:40] = x.flat[40:70]  # ties
        return x
    x = rng.integers(-20, 20, shape).astype(dtype) / 4
    x.flat[:7] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, np.finfo(dtype).max]
    x.flat[7:14] = [np.finfo(dtype).min, np.finfo(dtype).tiny, -np.finfo(dtype).tiny, 0.0,
                    -0.0, np.nan, 1.0]
    return x


_DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64"]
# Every dtype both ways, ``k`` taking turns (the dtype and direction change only the order key,
# the same for every k; each k meets 32- and 64-bit keys both ways): the smallest heap
# (MAX_K + 1), a heap with one element past it (149), the whole row merged (150).
_HEAP_CASES = [(dtype, is_ascend, (MAX_K + 1, 149, 150)[(2 * i + j) % 3])
               for i, dtype in enumerate(_DTYPES) for j, is_ascend in enumerate((False, True))]


@pytest.mark.parametrize("dtype,is_ascend,k", _HEAP_CASES)
def test_topk_heap_dtypes(dtype, is_ascend, k):
    x = _data(dtype, (3, 150), np.random.default_rng(3))
    (vals, idx), kinds = build_run(lambda v: relay.topk(
        v, k=k, axis=1, is_ascend=is_ascend, dtype="int64").astuple(), x)
    want = selection_order_python(x, 1, is_ascend)[:, :k]
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, want, 1))
    assert kinds == ["native"]


@pytest.mark.parametrize("is_ascend", [False, True])
@pytest.mark.parametrize("rows", ["ascending", "descending", "constant"])
def test_heap_sorted_rows(rows, is_ascend):
    """Rows sorted either way (each later element beats the root, or none does) and constant
    rows (the order is the positions)."""
    n = 500
    base = {"ascending": np.arange(n), "descending": np.arange(n)[::-1],
            "constant": np.zeros(n)}[rows]
    x = np.tile(base.astype("float32"), (2, 1))
    for k in (MAX_K + 1, 300, n):
        (idx,), _ = build_run(lambda v, k=k: relay.topk(v, k=k, ret_type="indices",
                                                is_ascend=is_ascend), x)
        np.testing.assert_array_equal(idx, selection_order_python(x, 1, is_ascend)[:, :k])


@pytest.mark.parametrize("shape,axis", [((2, 300, 3), 1), ((300, 4), 0), ((64, 2000), 1),
                                        ((1, 8400), 1)])
@pytest.mark.parametrize("is_ascend", [True, False])
def test_sort_argsort_native(shape, axis, is_ascend):
    """Inner axes, the first axis, many rows (parallel), one long row."""
    x = np.random.default_rng(4).standard_normal(shape).astype("float32")
    x.flat[::17] = 0.5  # ties
    (order,), kinds = build_run(lambda v: relay.argsort(v, axis=axis, is_ascend=is_ascend), x)
    np.testing.assert_array_equal(order, selection_order_python(x, axis, is_ascend))
    assert kinds == ["native"] and order.dtype == "int32"
    (vals,), kinds = build_run(lambda v: relay.sort(v, axis=axis, is_ascend=is_ascend), x)
    want = np.sort(x, axis=axis)
    np.testing.assert_array_equal(vals, want if is_ascend else np.flip(want, axis))
    assert kinds == ["native"]


def test_sort_descending_puts_nan_first():
    x = np.array([[1.0, np.nan, -np.inf, 3.0, np.nan, 2.0] * 20], "float32")
    (vals,), _ = build_run(lambda v: relay.sort(v, is_ascend=False), x)
    np.testing.assert_array_equal(vals, np.flip(np.sort(x, axis=1), 1))
    assert np.isnan(vals[0, :40]).all()


@pytest.mark.numpy_fallback("argsort of bool keys has no native compute (by design of this test)")
def test_bool_runs_the_reference():
    x = np.array([[True, False, True] * 30])
    (order,), kinds = build_run(lambda v: relay.argsort(v), x)
    np.testing.assert_array_equal(order, np.argsort(x, axis=1, kind="stable"))
    assert kinds == ["fallback"]
