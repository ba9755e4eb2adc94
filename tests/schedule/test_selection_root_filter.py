"""``schedule.selection``'s heap scan with the root's value at hand (``ROOT_VALUE_FILTER``):
each element past the first ``k`` is compared with the value at the heap's root, as its own
type, before its order key is made; only those not strictly worse go on to the key. Results
equal the stable numpy order with the filter on and off, where the root is a NaN (fewer
numbers than ``k``), at ties with the root (-0.0 and 0.0 included), for either direction,
float16 / float64 / integer rows and an inner axis (strided rows)."""

import numpy as np
import pytest
from relay_build import build_run

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.schedule import selection
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts
from minitvm.topi.selection import MAX_K
from minitvm.topi.testing import selection_order_python


@pytest.fixture
def root_filter(monkeypatch):
    """``root_filter(on)``: the filter on or off, the heap form kept (no rank form), kernels
    built before forgotten."""
    monkeypatch.setattr(selection, "RANK_MAX_N", 0)

    def put(on: bool):
        monkeypatch.setattr(selection, "ROOT_VALUE_FILTER", on)
        kernel_cache.clear_cache()
    yield put
    kernel_cache.clear_cache()


def _topk(x, k, axis, is_ascend):
    (vals, idx), kinds = build_run(lambda v: relay.topk(
        v, k=k, axis=axis, is_ascend=is_ascend, dtype="int64").astuple(), x)
    assert kinds == ["native"]
    return vals, idx


def _scan_compares():
    """The compares of an element with ``heap_worst`` in a built top-k's kernel."""
    v = relay.var("x", shape=(1, 300), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([v], relay.topk(v, k=MAX_K + 4).astuple()))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    (prim,) = [k.prim_func for k in lib.get_lib().kernels.values()]
    out = []
    for s in walk_stmts(prim.body):
        if isinstance(s, S.IfThenElse):
            for e in post_order(s.condition):
                if isinstance(e, (E.LT, E.GT)) and any(
                        isinstance(b, E.BufferLoad) and b.buffer.name == "heap_worst"
                        for b in (e.a, e.b)):
                    out.append(e)
    return out


@pytest.mark.parametrize("on", [True, False])
def test_scan_compares_with_the_root_value(on, root_filter):
    """On: one compare of the element (float32, as loaded) with the root's value; off: none."""
    root_filter(on)
    compares = _scan_compares()
    if not on:
        assert compares == []
        return
    assert len(compares) == 1
    assert isinstance(compares[0], E.LT) and compares[0].a.dtype == "float32"


def _rows(rng, n, nan_share):
    x = rng.integers(-8, 8, (3, n)).astype("float32") / 2  # many ties
    x[:, :5] = [-0.0, 0.0, np.inf, -np.inf, 0.0]
    x[rng.random(x.shape) < nan_share] = np.nan
    return x


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("is_ascend", [False, True])
@pytest.mark.parametrize("nan_share", [0.1, 0.8])  # 0.8: NaN at the root for long
def test_matches_numpy(on, is_ascend, nan_share, root_filter):
    root_filter(on)
    x = _rows(np.random.default_rng(1), 400, nan_share)
    k = MAX_K + 36
    vals, idx = _topk(x, k, 1, is_ascend)
    want = selection_order_python(x, 1, is_ascend)[:, :k]
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, want, 1))


@pytest.mark.parametrize("dtype", ["float16", "float64", "uint32"])
def test_other_dtypes_and_inner_axis(dtype, root_filter):
    """Element types compared as themselves; the selected axis not the last (strided rows)."""
    root_filter(True)
    rng = np.random.default_rng(2)
    if dtype[0] in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -50), min(info.max, 50), (2, 300, 3)).astype(dtype)
    else:
        x = _rows(rng, 900, 0.1).reshape(3, 300, 3)[:2].astype(dtype)
    for is_ascend in (False, True):
        vals, idx = _topk(x, MAX_K + 10, 1, is_ascend)
        want = selection_order_python(x, 1, is_ascend)[:, :MAX_K + 10]
        np.testing.assert_array_equal(idx, want)
        np.testing.assert_array_equal(vals, np.take_along_axis(x, want, 1))
