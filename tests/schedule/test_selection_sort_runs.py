"""``schedule.selection``'s merge sort of whole rows (``sort``, ``argsort``, ``topk`` with
``k = n`` on elements of at most 32 bits): runs of ``RUN`` keys sorted by a sorting network, then
merge passes (equal runs from both ends at once, a shorter last run from the front, a lone run
copied). Row lengths around the run length and its powers of two, not multiples of it, ties in
input order, NaN, -0.0, rows sorted either way; the network itself by the 0-1 principle."""

import itertools

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.schedule.selection import RUN, network
from minitvm.topi.selection import MAX_K


def _run(fn, x):
    v = relay.var("x", shape=x.shape, dtype=str(x.dtype))
    mod = tvm.IRModule.from_expr(relay.Function([v], fn(v)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    kinds = sorted({k.kind for k in lib.get_lib().kernels.values()})
    return [g.get_output(i).numpy() for i in range(g.get_num_outputs())], kinds


def _stable(x, ascend):
    """The selection order along the last axis: ties by position, NaN last both ways."""
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        rank = np.where(nan, 0, x.astype("float64") * (1 if ascend else -1))
    else:
        nan = np.zeros(x.shape, bool)
        rank = x.astype("int64") * (1 if ascend else -1)
    pos = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
    return np.lexsort((pos, rank, nan), axis=-1)


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
    (order,), kinds = _run(lambda v: relay.argsort(v, axis=1, is_ascend=is_ascend), x)
    np.testing.assert_array_equal(order, _stable(x, is_ascend))
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
        (vals, idx), kinds = _run(lambda v, a=not largest: relay.topk(
            v, k=n, axis=1, is_ascend=a, dtype="int64").astuple(), x)
        want = _stable(x, not largest)
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
        (order,), _ = _run(lambda v, a=asc: relay.argsort(v, axis=1, is_ascend=a), x)
        np.testing.assert_array_equal(order, _stable(x, asc))
        (vals,), _ = _run(lambda v, a=asc: relay.sort(v, axis=1, is_ascend=a), x)
        want = np.sort(x, axis=1)
        np.testing.assert_array_equal(vals, want if asc else np.flip(want, 1))


@pytest.mark.parametrize("k", [MAX_K + 1, MAX_K + 2])
def test_topk_just_above_max_k_ties(k):
    x = np.random.default_rng(1).integers(0, 4, (4, 200)).astype("float32")
    (vals, idx), _ = _run(lambda v: relay.topk(v, k=k, axis=1, dtype="int32").astuple(), x)
    want = _stable(x, False)[:, :k]
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, want, 1))


def test_inner_axis_and_parallel_rows():
    x = np.random.default_rng(2).standard_normal((40, 3 * RUN + 5, 3)).astype("float32")
    x[:, ::9] = 1.0
    (order,), _ = _run(lambda v: relay.argsort(v, axis=1), x)
    want = np.moveaxis(_stable(np.moveaxis(x, 1, -1), True), -1, 1)
    np.testing.assert_array_equal(order, want)
