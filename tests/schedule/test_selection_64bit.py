"""``schedule.selection`` on 64-bit elements (int64, uint64, float64): items of an int64 order
key (``_key64``: NaN last, -0.0 tied with 0.0, the full integer range) and a position, sorted by
the sorting network and merge passes (``_sort_keys``) like 32-bit keys, for whole rows
(``sort``, ``argsort``, ``topk`` with ``k = n``) and for the ``k`` a heap keeps. Against the
stable numpy order: ties in input order, NaN after every number both ways (``sort`` descending:
NaN first), row lengths around the run length."""

import numpy as np
import pytest
from relay_build import build_run

from minitvm import relay
from minitvm.schedule import selection
from minitvm.schedule.selection import RUN
from minitvm.topi.selection import MAX_K
from minitvm.topi.testing import selection_order_python


@pytest.fixture(autouse=True)
def _no_rank_form(monkeypatch):
    # these rows would take the rank form (test_selection_rank): keep the heap and merge forms tested
    monkeypatch.setattr(selection, "RANK_MAX_N", 0)


@pytest.fixture
def _merge_form(monkeypatch):
    """Whole rows of 2 to 64 items sorted by the networks and merge passes (in a model such rows
    take the rank form), and a heap for any ``k > 1``: the insertion form they would take here
    instead is for a small ``k`` of many rows (``k = n`` is no path of a model)."""
    monkeypatch.setattr(selection, "MAX_K", 1)


def _data(dtype, shape, rng):
    n = shape[-1]
    if dtype[0] in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        few = rng.integers(0, 5, shape).astype(dtype)  # many duplicates
        x[..., ::2] = few[..., ::2]
        x[..., :min(n, 6)] = np.array([info.min, info.max, 0, info.max, info.min, 1],
                                      dtype)[:min(n, 6)]
        if dtype == "int64":  # values one apart near the ends and around 2**31, 2**32
            extra = np.array([info.min + 1, info.max - 1, -1, 2 ** 31, 2 ** 32 + 1, -(2 ** 31)],
                             dtype)
            x[..., 6:6 + len(extra)] = extra[:max(0, min(len(extra), n - 6))]
        return x
    x = rng.integers(-8, 8, shape).astype(dtype) / 4  # many duplicates
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, np.finfo(dtype).max,
                        np.finfo(dtype).min, np.finfo(dtype).tiny, -np.finfo(dtype).tiny,
                        5e-324, -5e-324, np.nan, 1.0 + 2 ** -52, 1.0], dtype)
    m = min(n, len(special))
    x[..., :m] = special[:m]
    if n > 40:
        x[..., 20:40:3] = np.nan
    return x


# Row lengths, each once, the dtypes taking turns (the dtype changes only the order key,
# ``_key64``; each meets short rows and rows of several merge passes): 1 and 2, a network
# alone; RUN - 1, a short run padded above all; RUN, one whole run; RUN + 1, a run and a
# shorter one merged from the front with bounds checks; 3 * RUN + 5, equal runs merged from
# both ends, then a shorter one; 8 * RUN, only equal runs; MAX_K + 1, a lone run of one copied
# along to the last pass; 1000 and 1025, many passes, lone runs copied, a last run of 1.
_CASES = [(1, "int64"), (2, "uint64"), (RUN - 1, "float64"), (RUN, "int64"),
          (RUN + 1, "uint64"), (3 * RUN + 5, "float64"), (8 * RUN, "uint64"),
          (MAX_K + 1, "int64"), (1000, "float64"), (1025, "uint64")]


@pytest.mark.parametrize("n,dtype", _CASES)
@pytest.mark.usefixtures("_merge_form")
def test_argsort(n, dtype):
    x = _data(dtype, (3, n), np.random.default_rng(n))
    for is_ascend in (True, False):
        (order,), kinds = build_run(
            lambda v, a=is_ascend: relay.argsort(v, axis=1, is_ascend=a, dtype="int64"), x)
        np.testing.assert_array_equal(order, selection_order_python(x, 1, is_ascend))
        assert kinds == ["native"]


@pytest.mark.parametrize("dtype", ["int64", "uint64", "float64"])
@pytest.mark.usefixtures("_merge_form")
def test_sort(dtype):
    """``sort``: the ascending order's values, read back to front when descending (NaN first)."""
    n = 3 * RUN + 5
    x = _data(dtype, (3, n), np.random.default_rng(n))
    want = np.sort(x, axis=1, kind="stable")
    for is_ascend in (True, False):
        (vals,), kinds = build_run(lambda v, a=is_ascend: relay.sort(v, axis=1, is_ascend=a), x)
        np.testing.assert_array_equal(vals, want if is_ascend else want[:, ::-1])
        assert kinds == ["native"]


# (n, k), each once, the dtypes taking turns: k = n (the whole row merged, no heap); the
# smallest heap (MAX_K + 1); a heap of a third of the row; one element past the heap; a heap
# of half the row, kept items with a run tail; a long scan past a large heap.
@pytest.mark.parametrize("n,k,dtype", [(MAX_K + 1, MAX_K + 1, "int64"),
                                       (300, MAX_K + 1, "uint64"), (300, 100, "float64"),
                                       (1000, 999, "int64"), (1025, 517, "uint64"),
                                       (4099, 1000, "float64")])
def test_topk_heap_then_sorted(n, k, dtype):
    x = _data(dtype, (2, n), np.random.default_rng(k))
    for is_ascend in (False, True):
        (vals, idx), kinds = build_run(lambda v, a=is_ascend: relay.topk(
            v, k=k, axis=1, is_ascend=a, dtype="int64").astuple(), x)
        want = selection_order_python(x, 1, is_ascend)[:, :k]
        np.testing.assert_array_equal(idx, want)
        np.testing.assert_array_equal(vals, np.take_along_axis(x, want, 1))
        assert kinds == ["native"]


def _inner_axis_rows(dtype):
    """(2, n, 3) with the selected axis in the middle: rows ascending, descending, constant
    (two runs: the other row lengths are test_argsort's)."""
    n = 2 * RUN
    base = np.stack([np.arange(n), np.arange(n)[::-1], np.zeros(n)]).astype(dtype)
    return np.ascontiguousarray(np.stack([base, base + 1]).transpose(0, 2, 1))


@pytest.mark.usefixtures("_merge_form")
def test_inner_axis_sorted_and_constant_rows_merged():
    """The selected axis not innermost, whole rows sorted either way and constant (all ties:
    the positions are the order) through the networks and merges."""
    x = _inner_axis_rows("int64")
    for is_ascend in (True, False):
        (order,), _ = build_run(lambda v, a=is_ascend: relay.argsort(v, axis=1, is_ascend=a), x)
        np.testing.assert_array_equal(order, selection_order_python(x, 1, is_ascend))


@pytest.mark.usefixtures("_merge_form")
def test_inner_axis_sorted_and_constant_rows_heap():
    """The same rows through a heap of ``k < n`` (every later element beating the root, or
    none; constant rows: none)."""
    x, k = _inner_axis_rows("float64"), RUN + 3
    for is_ascend in (True, False):
        (_, idx), _ = build_run(lambda v, a=is_ascend: relay.topk(
            v, k=k, axis=1, is_ascend=a).astuple(), x)
        np.testing.assert_array_equal(idx, selection_order_python(x, 1, is_ascend)[:, :k])


def test_selection_kernels_skip_slp(tmp_path):
    """The selection kernels (networks and merges; the insertion chain) take LLVM's O3 without
    its SLP vectorizer, which cost seconds on their compare-select chains and vectorized
    nothing; an exported library records that pipeline and loads through it again."""
    import minitvm as tvm
    from minitvm.contrib import graph_executor
    from minitvm.runtime import jit

    x = _data("float64", (2, RUN + 1), np.random.default_rng(5))
    v = relay.var("x", shape=x.shape, dtype="float64")
    y = relay.Tuple([relay.argsort(v, axis=1), relay.topk(v, k=2, ret_type="indices")])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([v], y)), target="llvm")
    built = {n: k.compiled.opt for n, k in lib.get_lib().kernels.items()}
    assert sorted(built.values()) == [jit.NO_SLP_PIPELINE] * 2
    lib.export_library(str(tmp_path / "sel.so"))
    loaded = tvm.runtime.load_module(str(tmp_path / "sel.so"))
    assert {n: loaded.get_lib().kernels[n].compiled.opt for n in built} == built
    g = graph_executor.GraphModule(loaded["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    want = selection_order_python(x, 1, True)
    np.testing.assert_array_equal(g.get_output(0).numpy(), want)
    np.testing.assert_array_equal(g.get_output(1).numpy(), selection_order_python(x, 1, False)[:, :2])
