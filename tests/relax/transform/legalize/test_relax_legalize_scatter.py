"""Relax's scatters (``legalize_ops/scatter.py``): past ``SCATTER_MAX_PAIRS`` comparisons, or
with a symbolic dim, a scatter_elements / scatter_nd / index_put legalizes into the one-pass
stage's loops (no blocks, opaque, loops over the updates only), smaller ones into the te form's
blocks; both agree with
a numpy loop over the updates in row-major order (every reduction, repeated targets where the
last write wins, negative indices, broadcast index_put operands), a 100,000-update scatter
builds and runs, and the legalized module round-trips through TVMScript."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.tir import stmt as S
from minitvm.tir.function import PrimFunc
from minitvm.tir.stmt_functor import walk_stmts
from minitvm.topi.scatter_linear import SCATTER_MAX_PAIRS

sys.path.insert(0, str(Path(__file__).parents[2]))
from script_roundtrip_hook import roundtrip_failure  # noqa: E402

RNG = np.random.default_rng(11)
REDUCTIONS = ["update", "add", "mul", "min", "max"]
COMBINE = {"update": lambda old, new: new, "add": np.add, "mul": np.multiply,
           "min": np.minimum, "max": np.maximum}


# ------------------------------------------------------------------ numpy references
def elements_want(data, idx, upd, axis, red):
    """ONNX ScatterElements: each position of ``idx`` in row-major order in turn."""
    want = data.copy()
    n = data.shape[axis]
    for pos in np.ndindex(*idx.shape):
        to = list(pos)
        to[axis] = int(idx[pos]) % n
        to = tuple(to)
        want[to] = COMBINE[red](want[to], upd[pos])
    return want


def nd_want(data, idx, upd, red):
    """ONNX ScatterND: the index tuple on the last dim of ``idx``."""
    want = data.copy()
    m = idx.shape[-1]
    for pos in np.ndindex(*idx.shape[:-1]):
        to = tuple(int(j) % n for j, n in zip(idx[pos], data.shape, strict=False))
        want[to] = COMBINE[red](want[to], upd[pos])
    assert m <= data.ndim
    return want


def index_put_want(data, idxs, vals, accumulate):
    """torch's ``index_put``: the index tensors broadcast together, ``vals`` to what they
    select."""
    want = data.copy()
    bidx = np.broadcast_arrays(*idxs)
    sel = bidx[0].shape + data.shape[len(idxs):]
    vals = np.broadcast_to(vals, sel)
    for pos in np.ndindex(*bidx[0].shape):
        to = tuple(int(b[pos]) % n for b, n in zip(bidx, data.shape, strict=False))
        want[to] = want[to] + vals[pos] if accumulate else vals[pos]
    return want


# ------------------------------------------------------------------ helpers
def module(make, arrays):
    """A module whose main applies ``make`` to vars of ``arrays``' shapes and dtypes."""
    bb = relax.BlockBuilder()
    vs = [relax.Var(f"a{k}", relax.TensorStructInfo(a.shape, str(a.dtype)))
          for k, a in enumerate(arrays)]
    with bb.function("main", vs):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(make(*vs)))
        bb.emit_func_output(out)
    return bb.get()


def run(mod, arrays):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), minitvm.cpu())
    return vm["main"](*map(minitvm.nd.array, arrays)).numpy()


def prim_funcs(mod) -> list:
    return [f for f in relax.transform.LegalizeOps()(mod).functions.values()
            if isinstance(f, PrimFunc)]


def one_pass(mod) -> bool:
    """Is the module's one PrimFunc the one-pass stage's loops (no blocks, opaque)?"""
    (f,) = prim_funcs(mod)
    blocks = any(isinstance(s, S.BlockRealize) for s in walk_stmts(f.body))
    linear = "T_scatter_linear" in f.buffer_map[f.params[-1]].name
    assert linear != blocks, "a PrimFunc is either the one-pass loops or the te form's blocks"
    if linear:
        assert int(f.attrs["op_pattern"]) == 8  # (FuseOps leaves it alone)
    return linear


def max_nest_work(f: PrimFunc) -> int:
    """The largest product of loop extents around any statement of ``f`` (explicit stack)."""
    best, stack = 1, [(f.body, 1)]
    while stack:
        s, work = stack.pop()
        best = max(best, work)
        if isinstance(s, S.For):
            stack.append((s.body, work * int(s.extent.value)))
        elif isinstance(s, S.SeqStmt):
            stack.extend((c, work) for c in s.seq)
        elif isinstance(s, S.IfThenElse):
            stack.extend((c, work) for c in (s.then_case, s.else_case) if c is not None)
        elif hasattr(s, "body") and isinstance(s.body, S.Stmt):
            stack.append((s.body, work))
    return best


# ------------------------------------------------------------------ scatter_elements
@pytest.mark.parametrize("red", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("size", ["small", "large"])
def test_scatter_elements(red, axis, size):
    data = RNG.standard_normal((6, 5) if size == "small" else (40, 24)).astype("float32")
    n = data.shape[axis]
    shape = (2, 3) if size == "small" else ((60, 24) if axis == 0 else (40, 30))
    idx = RNG.integers(-n, n, shape).astype("int64")  # repeated targets, negative indices
    upd = RNG.standard_normal(shape).astype("float32")
    mod = module(lambda x, i, u: R.scatter_elements(x, i, u, axis, red), [data, idx, upd])
    assert one_pass(mod) == (size == "large")
    np.testing.assert_allclose(run(mod, [data, idx, upd]),
                               elements_want(data, idx, upd, axis, red), rtol=1e-5, atol=1e-6)


def test_scatter_elements_last_write_wins():
    """Every update of a column hits row 3: ``update`` keeps the last one (as ORT on CPU)."""
    data = np.zeros((50, 40), "float32")
    idx = np.full((30, 40), 3, "int32")
    upd = RNG.standard_normal((30, 40)).astype("float32")
    mod = module(lambda x, i, u: R.scatter_elements(x, i, u, 0, "update"), [data, idx, upd])
    assert one_pass(mod)
    got = run(mod, [data, idx, upd])
    np.testing.assert_array_equal(got[3], upd[-1])
    assert not got[np.arange(50) != 3].any()


# ------------------------------------------------------------------ scatter_nd
@pytest.mark.parametrize("red", REDUCTIONS)
@pytest.mark.parametrize("size", ["small", "large"])
def test_scatter_nd_rows(red, size):
    rows = 8 if size == "small" else 200
    data = RNG.standard_normal((rows, 3 if size == "small" else 16)).astype("float32")
    idx = RNG.integers(-rows, rows, (5 if size == "small" else 300, 1)).astype("int64")
    upd = RNG.standard_normal((idx.shape[0], data.shape[1])).astype("float32")
    mod = module(lambda x, i, u: R.scatter_nd(x, i, u, red), [data, idx, upd])
    assert one_pass(mod) == (size == "large")
    np.testing.assert_allclose(run(mod, [data, idx, upd]), nd_want(data, idx, upd, red),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("red", ["update", "add", "max"])
def test_scatter_nd_full_tuples_batched(red):
    data = RNG.standard_normal((30, 20, 4)).astype("float32")
    idx = np.stack([RNG.integers(-30, 30, (12, 25)), RNG.integers(-20, 20, (12, 25))], -1)
    upd = RNG.standard_normal((12, 25, 4)).astype("float32")
    mod = module(lambda x, i, u: R.scatter_nd(x, i, u, red), [data, idx, upd])
    assert one_pass(mod)
    np.testing.assert_allclose(run(mod, [data, idx, upd]), nd_want(data, idx, upd, red),
                               rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ index_put
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("size", ["small", "large"])
def test_index_put_rows(accumulate, size):
    """``x[idx] = v`` / ``x.index_add(0, idx, v)``: one index tensor, whole rows."""
    rows, e = (6, 4) if size == "small" else (100, 400)
    data = RNG.standard_normal((rows, 8)).astype("float32")
    idx = RNG.integers(-rows, rows, (e,)).astype("int64")
    vals = RNG.standard_normal((e, 8)).astype("float32")
    mod = module(lambda x, i, v: R.index_put(x, (i,), v, accumulate), [data, idx, vals])
    assert one_pass(mod) == (size == "large")
    np.testing.assert_allclose(run(mod, [data, idx, vals]),
                               index_put_want(data, [idx], vals, accumulate), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_broadcast_indices_and_values(accumulate):
    """Two index tensors of different dtypes broadcast to (40, 30), one value broadcast."""
    data = RNG.standard_normal((50, 30, 2)).astype("float32")
    p = RNG.integers(-50, 50, (40, 1)).astype("int32")
    q = RNG.integers(-30, 30, (30,)).astype("int64")
    vals = RNG.standard_normal((2,)).astype("float32")
    mod = module(lambda x, i, j, v: R.index_put(x, (i, j), v, accumulate), [data, p, q, vals])
    assert one_pass(mod)
    np.testing.assert_allclose(run(mod, [data, p, q, vals]),
                               index_put_want(data, [p, q], vals, accumulate), rtol=1e-5,
                               atol=1e-6)


# ------------------------------------------------------------------ structure
def test_100k_updates_build_and_run_in_one_pass():
    """100,000 updates into 16,000 elements: the te form would compare 1.6e9 pairs; the
    legalized loops visit each element once to copy and each update once."""
    data = RNG.standard_normal((1000, 16)).astype("float32")
    idx = RNG.integers(0, 1000, (6250, 16)).astype("int64")
    upd = RNG.standard_normal((6250, 16)).astype("float32")
    mod = module(lambda x, i, u: R.scatter_elements(x, i, u, 0, "add"), [data, idx, upd])
    (f,) = prim_funcs(mod)
    assert one_pass(mod)
    assert max_nest_work(f) == idx.size  # (no loop nest over outputs x updates)
    want = data.copy()
    np.add.at(want, (idx, np.arange(16)[None, :]), upd)
    np.testing.assert_allclose(run(mod, [data, idx, upd]), want, rtol=1e-4, atol=1e-4)


def test_the_choice_follows_the_shared_threshold():
    """Relax decides as Relay does (``topi.scatter_linear.takes_linear``): one pair over the
    threshold takes the one pass."""
    cols = 4
    upd_rows = SCATTER_MAX_PAIRS // (8 * cols * cols)  # pairs = 8*cols outputs x rows*cols
    for rows, linear in ((upd_rows, False), (upd_rows + 1, True)):
        data = np.zeros((8, cols), "float32")
        idx = np.zeros((rows, cols), "int64")
        mod = module(lambda x, i, u: R.scatter_elements(x, i, u, 0, "add"),
                     [data, idx, np.zeros((rows, cols), "float32")])
        assert one_pass(mod) == linear


def _symbolic_batch(make, shapes):
    """A module over ``shapes`` (dtype, dims; "n" a symbolic batch) applying ``make``."""
    n = minitvm.tir.Var("n", "int64")
    bb = relax.BlockBuilder()
    vs = [relax.Var(f"a{k}", relax.TensorStructInfo([n if d == "n" else d for d in dims], dt))
          for k, (dt, dims) in enumerate(shapes)]
    with bb.function("main", vs):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(make(*vs)))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("red", ["update", "add"])
def test_symbolic_batch_takes_the_one_pass(red):
    """A dynamic batch: the te form would compare (n * 15 * 4) x (n * 50 * 4) pairs at run
    time; the one pass loops over the n * 50 * 4 updates, one build for every batch."""
    mod = _symbolic_batch(lambda x, i, u: R.scatter_elements(x, i, u, 1, red),
                          [("float32", ("n", 15, 4)), ("int64", ("n", 50, 4)),
                           ("float32", ("n", 50, 4))])
    assert one_pass(mod)
    (f,) = prim_funcs(mod)
    assert len(f.params) == 4  # (n comes from the buffers' shapes: no scalar parameter)
    assert roundtrip_failure(relax.transform.LegalizeOps()(mod)) is None
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), minitvm.cpu())
    for b in (1, 3):
        data = RNG.standard_normal((b, 15, 4)).astype("float32")
        idx = RNG.integers(-15, 15, (b, 50, 4)).astype("int64")
        upd = RNG.standard_normal((b, 50, 4)).astype("float32")
        got = vm["main"](*map(minitvm.nd.array, (data, idx, upd))).numpy()
        np.testing.assert_allclose(got, elements_want(data, idx, upd, 1, red), rtol=1e-5,
                                   atol=1e-6)


def test_symbolic_rows_scatter_nd_and_index_put():
    """scatter_nd rows into a symbolic number of rows; index_put accumulating a symbolic number
    of index / value rows."""
    nd = _symbolic_batch(lambda x, i, u: R.scatter_nd(x, i, u, "add"),
                         [("float32", ("n", 8)), ("int64", (30, 1)), ("float32", (30, 8))])
    put = _symbolic_batch(lambda x, i, u: R.index_put(x, (i,), u, True),
                          [("float32", (40, 8)), ("int64", ("n",)), ("float32", ("n", 8))])
    assert one_pass(nd) and one_pass(put)
    for rows in (10, 40):
        data = RNG.standard_normal((rows, 8)).astype("float32")
        idx = RNG.integers(-rows, rows, (30,)).astype("int64")
        upd = RNG.standard_normal((30, 8)).astype("float32")
        np.testing.assert_allclose(run(nd, [data, idx[:, None], upd]),
                                   nd_want(data, idx[:, None], upd, "add"), rtol=1e-5,
                                   atol=1e-6)
        data = RNG.standard_normal((40, 8)).astype("float32")  # (n: the number of updates)
        idx, upd = idx[:rows], upd[:rows]
        np.testing.assert_allclose(run(put, [data, idx, upd]),
                                   index_put_want(data, [idx], upd, True), rtol=1e-5, atol=1e-6)


def test_legalized_one_pass_module_round_trips_through_tvmscript():
    data = np.zeros((300, 64), "float32")
    mod = module(lambda x, i, u, p, q, v: R.index_put(
        R.scatter_elements(x, i, u, 0, "add"), (p, q), v, accumulate=True),
        [data, np.zeros((3000, 64), "int64"), np.zeros((3000, 64), "float32"),
         np.zeros((3000,), "int32"), np.zeros((1,), "int64"), np.zeros((1,), "float32")])
    legal = relax.transform.LegalizeOps()(mod)
    assert sum(isinstance(f, PrimFunc) for f in legal.functions.values()) == 2
    assert roundtrip_failure(legal) is None


def test_identical_scatters_share_one_prim_func():
    data = np.zeros((100, 16), "float32")
    idx = np.zeros((200, 16), "int64")
    mod = module(lambda x, i, u: R.add(R.scatter_elements(x, i, u, 0, "add"),
                                       R.scatter_elements(x, i, u, 0, "add")),
                 [data, idx, np.zeros((200, 16), "float32")])
    names = [gv.name_hint for gv, f in relax.transform.LegalizeOps()(mod).functions.items()
             if isinstance(f, PrimFunc) and "scatter" in gv.name_hint]
    assert names == ["scatter_elements"]


def test_bad_reduction_is_refused():
    from minitvm import te
    from minitvm.topi.scatter_linear import scatter_linear

    x = te.placeholder((8,), "float32", "x")
    i = te.placeholder((8,), "int64", "i")
    with pytest.raises(ValueError, match="reduction must be one of"):
        scatter_linear(x, i, x, "elements", "mean")
