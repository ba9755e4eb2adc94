"""The one-pass scatters (``topi.scatter_linear``, ``schedule/scatter_linear.py``): scatters
whose te form would compare more than ``SCATTER_MAX_PAIRS`` position pairs, built strict-native
in Relay and Relax and compared with numpy's ``ufunc.at`` / assignment (every reduction,
repeated targets, negative and out-of-range indices, partial index tuples), and the choice of
the stage (``tests/relax/transform/legalize/test_relax_legalize_scatter.py``: Relax's
legalization; ``test_scatter_linear_importers.py``: the importers' scatters)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, relay, te
from minitvm.contrib import graph_executor
from minitvm.topi.scatter_linear import SCATTER_MAX_PAIRS, scatter_linear

RNG = np.random.default_rng(7)
AT = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _relay_run(expr, feeds: dict) -> np.ndarray:
    mod = minitvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))
    with minitvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    for k, v in feeds.items():
        m.set_input(k, v)
    m.run()
    return m.get_output(0).numpy()


def _var(name, a):
    return relay.var(name, shape=a.shape, dtype=str(a.dtype))


def _nd_want(data, idx, upd, mode):
    """numpy's scatter_nd with Relay's layout (the index tuple on the first dim of idx);
    out-of-range targets skipped, negative ones wrapped."""
    want = data.copy()
    m = idx.shape[0]
    tuples = idx.reshape(m, -1).T
    vals = upd.reshape((tuples.shape[0],) + data.shape[m:])
    for t, v in zip(tuples, vals, strict=True):
        if any(not -n <= j < n for j, n in zip(t, data.shape, strict=False)):
            continue
        t = tuple(int(j) % n for j, n in zip(t, data.shape, strict=False))
        want[t] = v if mode == "update" else AT[mode](want[t], v)
    return want


@pytest.mark.parametrize("mode", ["update", "add", "mul", "min", "max"])
def test_scatter_nd_rows(mode):
    data = RNG.standard_normal((256, 64)).astype("float32")
    idx = RNG.integers(-256, 256, (1, 128)).astype("int64")  # repeats, negatives
    upd = RNG.standard_normal((128, 64)).astype("float32")
    got = _relay_run(relay.scatter_nd(_var("d", data), _var("i", idx), _var("u", upd), mode),
                     {"d": data, "i": idx, "u": upd})
    np.testing.assert_allclose(got, _nd_want(data, idx, upd, mode), rtol=1e-6, atol=1e-6)


def test_scatter_nd_two_index_dims_skips_out_of_range():
    data = RNG.standard_normal((40, 30, 8)).astype("float32")
    idx = np.stack([RNG.integers(-45, 45, (20, 50)), RNG.integers(-30, 35, (20, 50))])
    upd = RNG.standard_normal((20, 50, 8)).astype("float32")
    got = _relay_run(relay.scatter_nd(_var("d", data), _var("i", idx), _var("u", upd), "add"),
                     {"d": data, "i": idx, "u": upd})
    np.testing.assert_allclose(got, _nd_want(data, idx, upd, "add"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", ["update", "add", "max"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_elements(reduction, axis):
    data = RNG.standard_normal((64, 512)).astype("float32")
    n = data.shape[axis]
    shape = (64, 16) if axis == 1 else (16, 512)
    idx = RNG.integers(-n, n, shape).astype("int32")
    upd = RNG.standard_normal(shape).astype("float32")
    expr = relay.scatter_elements(_var("d", data), _var("i", idx), _var("u", upd), axis=axis,
                                  reduction=reduction)
    got = _relay_run(expr, {"d": data, "i": idx, "u": upd})
    pos = list(np.indices(shape))
    pos[axis] = idx % n
    want = data.copy()
    if reduction == "update":
        want[tuple(pos)] = upd
    else:
        AT[reduction].at(want, tuple(pos), upd)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_relax_large_scatter_nd_takes_the_stage():
    """Relax legalizes a large scatter into the one-pass stage's loops (Relax tests:
    ``tests/relax/transform/legalize/test_relax_legalize_scatter.py``)."""
    data = RNG.standard_normal((300, 32)).astype("float32")
    idx = RNG.integers(0, 300, (200, 1)).astype("int64")  # (Relax: the tuple on the last dim)
    upd = RNG.standard_normal((200, 32)).astype("float32")
    bb = relax.BlockBuilder()
    d, i, u = (relax.Var(n, relax.TensorStructInfo(a.shape, str(a.dtype)))
               for n, a in (("d", data), ("i", idx), ("u", upd)))
    with bb.function("main", [d, i, u]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.scatter_nd(d, i, u, "add"))
        bb.emit_func_output(out)
    legal = relax.transform.LegalizeOps()(bb.get())
    assert "T_scatter_linear" in legal["scatter_nd"].script()
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), minitvm.cpu())
    got = vm["main"](*map(minitvm.nd.array, (data, idx, upd))).numpy()
    want = data.copy()
    np.add.at(want, idx[:, 0], upd)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_stage_is_chosen_past_the_budget_only():
    from minitvm.topi.scatter_linear import takes_linear

    assert not takes_linear((16, 8), (4,))
    assert 16 * 8 * 12 > SCATTER_MAX_PAIRS and takes_linear((16, 8), (12,))
    assert 1024 * 64 * 300 > SCATTER_MAX_PAIRS and takes_linear((1024, 64), (300,))
    n = minitvm.tir.Var("n", "int64")
    assert takes_linear((n, 64), (2,))  # (symbolic: the te form would be quadratic at run time)


@pytest.mark.parametrize("rows, tag", [(300, "scatter_linear"), (4, None)])
def test_relays_scatter_compute_takes_the_stage_when_large(rows, tag):
    from types import SimpleNamespace

    from minitvm.topi.utils import get_compute

    x = te.placeholder((1024 if tag else 2, 64), "float32", "x")
    i = te.placeholder((1, rows), "int64", "i")
    u = te.placeholder((rows, 64), "float32", "u")
    out = get_compute("scatter_nd")(SimpleNamespace(mode="add"), [x, i, u], None)[0]
    assert (out.op.tag == "scatter_linear") == (tag is not None)


def test_bad_kind_and_symbolic_tuple_length_are_refused():
    x = te.placeholder((8,), "float32", "x")
    with pytest.raises(ValueError, match="kind must be"):
        scatter_linear(x, x, x, "rows", "add")
    n = minitvm.tir.Var("n", "int64")
    i = te.placeholder((4, n), "int64", "i")
    with pytest.raises(ValueError, match="must be static"):
        scatter_linear(x, i, te.placeholder((4,), "float32", "u"), "nd", "add")
