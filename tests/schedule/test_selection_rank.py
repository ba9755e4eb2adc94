"""``schedule.selection``'s rank form (``_rank_rows``: each element's rank counted in vectors of
order keys, the ranks below ``k`` written) and top-k over a dynamic batch (the rows' loop over a
symbolic leading extent, Relax): equal to the stable numpy order for every element dtype, NaN,
infinities, -0.0 and ties, rows sorted either way; which selections take the rank form."""

import numpy as np
import pytest
from relay_build import build_run

import minitvm as tvm
from minitvm import relax, relay
from minitvm.relax import op as R
from minitvm.relax.transform import LegalizeOps
from minitvm.schedule import optimize_prim_func, selection
from minitvm.tir.function import PrimFunc
from minitvm.topi.testing import selection_order_python


def _data(dtype, shape, rng):
    if dtype[0] in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        x[..., :4] = np.array([info.min, info.max, 0, info.max], dtype)
        x[..., 10:30] = x[..., 30:50]  # ties
        return x
    x = (rng.integers(-20, 20, shape) / 4).astype(dtype)
    x[..., :7] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, np.finfo(dtype).max]
    x[..., 7:10] = [np.finfo(dtype).min, -0.0, np.nan]
    return x


def test_which_selections_rank():
    assert selection.ranked(192, 50)  # a detector's top 50 of 192 anchors
    assert selection.ranked(64, 8) and selection.ranked(512, 64)
    assert not selection.ranked(192, 4)  # few kept: the insertion chain compares once each
    assert not selection.ranked(1000, 100)  # n * n / lanes compare-adds grow past it
    assert not selection.ranked(400, 40)  # k under n / RANK_N_PER_K


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "int32", "int64",
                                   "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("is_ascend", [False, True])
def test_rank_form_matches_numpy(dtype, is_ascend):
    x = _data(dtype, (3, 150), np.random.default_rng(4))
    for k in (20, 50, 150):
        assert selection.ranked(150, k)
        (vals, idx), kinds = build_run(lambda v, k=k: relay.topk(
            v, k=k, axis=1, is_ascend=is_ascend, dtype="int64").astuple(), x)
        want = selection_order_python(x, 1, is_ascend)[:, :k]
        np.testing.assert_array_equal(idx, want)
        np.testing.assert_array_equal(vals, np.take_along_axis(x, want, 1))
        assert kinds == ["native"]


@pytest.mark.parametrize("rows", ["ascending", "descending", "constant"])
@pytest.mark.parametrize("n", [64, 97, 512])  # (97: no whole number of vectors, prime)
def test_rank_form_sorted_rows_and_odd_lengths(rows, n):
    base = {"ascending": np.arange(n), "descending": np.arange(n)[::-1],
            "constant": np.zeros(n)}[rows]
    x = np.stack([base, base[::-1]]).astype("float32")
    k = max(selection.RANK_MIN_K, n // 4)
    (vals, idx), _ = build_run(lambda v: relay.topk(v, k=k, axis=1, dtype="int32").astuple(), x)
    want = selection_order_python(x, 1, False)[:, :k]
    np.testing.assert_array_equal(idx, want)


def test_rank_form_on_an_inner_axis():
    # the axis not last: keys read at a stride of the inner extent
    x = np.moveaxis(_data("float32", (2, 3, 70), np.random.default_rng(1)), 2, 1).copy()
    (vals, idx), _ = build_run(lambda v: relay.topk(v, k=30, axis=1, dtype="int32").astuple(), x)
    want = selection_order_python(x, 1, False)[:, :30]
    np.testing.assert_array_equal(idx, want)


def _module(fn, shape):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(fn(x))
        bb.emit_func_output(gv)
    return bb.get()


@pytest.mark.parametrize("k", [3, 50])  # the insertion chain and the rank form
def test_dynamic_batch_topk_is_selected_natively(k):
    # a symbolic batch before the axis: the rank / pick stages are raised to the selection
    # schedule (its rows loop over the batch at run time), not run as the n * n reduction
    b = tvm.tir.Var("batch", "int64")
    fn = lambda v: R.topk(v, k, axis=1)  # noqa: E731
    (f,) = [g for _, g in LegalizeOps()(_module(fn, (b, 192))).functions.items()
            if isinstance(g, PrimFunc)]
    text = str(optimize_prim_func(f))
    assert "T_topk_rank" not in text
    assert ("rank_keys" in text) == selection.ranked(192, k)
    vm = relax.VirtualMachine(relax.build(_module(fn, (b, 192)), "llvm"), tvm.cpu())
    for batch in (1, 3):
        x = _data("float32", (batch, 192), np.random.default_rng(batch))
        vals, idx = (o.numpy() for o in vm["main"](tvm.nd.array(x)))
        want = selection_order_python(x, 1, False)[:, :k]
        np.testing.assert_array_equal(idx, want)
        np.testing.assert_array_equal(vals, np.take_along_axis(x, want, 1))
