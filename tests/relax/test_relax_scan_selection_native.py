"""Relax's cumsum / cumprod / topk / sort / argsort through ``relax.build``: LegalizeOps writes
them in the forms ``schedule.raise_scan`` raises (a masked-reduction scan; a rank and a pick
stage), the build runs them on the one-pass-per-row schedules that Relay's build uses, and the
results equal numpy's (ties in input order, NaN after every number, exact cumsum rounding)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.transform import LegalizeOps
from minitvm.schedule import optimize_prim_func
from minitvm.tir import stmt as S
from minitvm.tir.function import PrimFunc
from minitvm.tir.stmt_functor import walk_stmts
from minitvm.topi.selection import MAX_K
from minitvm.topi.testing import selection_order_python


def _module(fn, shape, dtype):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(shape, dtype))
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(fn(x))
        bb.emit_func_output(gv)
    return bb.get()


def _run(fn, a):
    mod = _module(fn, a.shape, str(a.dtype))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](tvm.nd.array(a))
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def _prim_funcs(fn, shape, dtype):
    mod = LegalizeOps()(_module(fn, shape, dtype))
    return [f for _, f in mod.functions.items() if isinstance(f, PrimFunc)]


def _blocks(func) -> int:
    return sum(isinstance(s, S.BlockRealize) for s in walk_stmts(func.body))


def _data(kind, shape, dtype, rng):
    if kind == "ties":
        return rng.integers(-2, 3, shape).astype(dtype)
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    if kind == "nan":
        x[rng.random(shape) < 0.2] = np.nan
        x[rng.random(shape) < 0.1] = -np.inf
        x[rng.random(shape) < 0.1] = np.inf
    return x


# ------------------------------------------------------------------------------ structure
@pytest.mark.parametrize("fn", [
    lambda x: R.cumsum(x, axis=1), lambda x: R.cumprod(x, axis=0, exclusive=True),
    lambda x: R.cumsum(x), lambda x: R.topk(x, 3, axis=1), lambda x: R.sort(x, axis=0),
    lambda x: R.argsort(x, axis=1, descending=True), lambda x: R.topk(x, 2, ret_type="indices"),
])
def test_legalized_prim_func_is_fully_raised(fn):
    """Every block of the legalized PrimFunc is replaced by the native schedules' loops."""
    (f,) = _prim_funcs(fn, (5, 9), "float32")
    assert _blocks(f) > 0
    g = optimize_prim_func(f)
    assert g is not f and _blocks(g) == 0


def test_legalized_topk_form():
    """topk legalizes to the rank / pick / gather stages of ``topi.selection.ranked_indices``."""
    (f,) = _prim_funcs(lambda x: R.topk(x, 3, axis=1), (5, 9), "float32")
    names = [s.block.name_hint for s in walk_stmts(f.body)
             if isinstance(s, S.BlockRealize) and s.block.name_hint != "root"]
    assert names == ["T_topk_rank", "T_topk_indices", "T_topk_values"]


def test_symbolic_axis_keeps_the_rank_stage():
    """A symbolic sorted axis: no static selection, the rank / pick stages run as written (the
    generic schedules), still right."""
    n = tvm.tir.Var("n", "int64")
    (f,) = _prim_funcs(lambda x: R.topk(x, 2, axis=1), (3, n), "float32")
    assert "T_topk_rank" in str(optimize_prim_func(f))
    x = _data("ties", (3, 11), "float32", np.random.default_rng(0))
    mod = _module(lambda v: R.topk(v, 2, axis=1), (3, n), "float32")
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    vals, idx = (o.numpy() for o in vm["main"](tvm.nd.array(x)))
    want = selection_order_python(x, 1, False)[:, :2]
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, want, axis=1))


# ------------------------------------------------------------------------------ numerics
SCANS = [  # shape, axis, exclusive, dtype, out dtype
    ((16, 1000), -1, False, "float32", None),
    ((16, 100), 0, False, "float32", None),
    ((2, 3, 40), 1, True, "float32", "float64"),
    ((2, 3, 40), None, False, "float32", None),
    ((3, 70), None, True, "int32", "int64"),
    ((5, 1, 6), 2, True, "int32", None),
    ((7,), 0, False, "float64", None),
]


@pytest.mark.parametrize("shape,axis,exclusive,dtype,out_dtype", SCANS)
@pytest.mark.parametrize("kind", ["cumsum", "cumprod"])
def test_scan(shape, axis, exclusive, dtype, out_dtype, kind):
    rng = np.random.default_rng(5)
    if dtype.startswith("int"):
        x = rng.integers(-3, 4, shape).astype(dtype)
    else:
        x = (rng.standard_normal(shape) * (1.0 if kind == "cumsum" else 0.05) +
             (0.0 if kind == "cumsum" else 1.0)).astype(dtype)
    op = getattr(R, kind)
    (got,) = _run(lambda v: op(v, axis=axis, dtype=out_dtype, exclusive=exclusive), x)
    flat = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis
    want = getattr(np, kind)(flat.astype(out_dtype or dtype), axis=ax, dtype=out_dtype or dtype)
    if exclusive:
        ident = 0 if kind == "cumsum" else 1
        want = np.concatenate([np.full_like(np.take(want, [0], axis=ax), ident),
                               np.take(want, np.arange(want.shape[ax] - 1), axis=ax)], axis=ax)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # numpy's order of additions: the same rounding


TOPKS = [  # shape, axis, k, largest, dtype, data
    ((16, 100), -1, 5, True, "float32", "rand"),
    ((16, 100), -1, 1, False, "float32", "ties"),
    ((3, 90), 1, MAX_K, True, "int32", "ties"),
    ((3, 90), 1, MAX_K + 1, False, "int32", "ties"),
    ((3, 90), 1, 90, True, "float32", "nan"),
    ((2, 70), -1, 69, False, "float64", "nan"),
    ((4, 25, 6), 1, 4, True, "float32", "ties"),
    ((9, 5), 0, 2, False, "int8", "ties"),
    ((2, 200), -1, 150, True, "uint8", "ties"),
]


@pytest.mark.parametrize("shape,axis,k,largest,dtype,data", TOPKS)
def test_topk(shape, axis, k, largest, dtype, data):
    x = _data(data, shape, dtype, np.random.default_rng(k))
    vals, idx = _run(lambda v: R.topk(v, k, axis=axis, largest=largest, dtype="int64"), x)
    want = np.take(selection_order_python(x, axis, not largest), np.arange(k), axis=axis)
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, want, axis=axis))


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("shape,axis,dtype,data", [
    ((6, 40), 1, "float32", "ties"), ((40, 6), 0, "float32", "nan"),
    ((3, 130), -1, "int32", "ties"), ((2, 100), -1, "float64", "rand"),
    ((5, 80), 1, "uint16", "rand"),
])
def test_sort_argsort(shape, axis, dtype, data, descending):
    x = _data(data, shape, dtype, np.random.default_rng(7))
    if dtype == "uint16":
        x = np.random.default_rng(7).integers(0, 1 << 16, shape).astype(dtype)
    (order,) = _run(lambda v: R.argsort(v, axis=axis, descending=descending), x)
    np.testing.assert_array_equal(order, selection_order_python(x, axis, not descending))
    assert order.dtype == "int32"
    (vals,) = _run(lambda v: R.sort(v, axis=axis, descending=descending), x)
    want = np.sort(x, axis=axis)  # descending: numpy's order reversed, NaN first
    np.testing.assert_array_equal(vals, np.flip(want, axis=axis) if descending else want)


def test_onnx_cumsum_topk_match_onnxruntime():
    """An ONNX model with CumSum and TopK through the Relax frontend, against ORT."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    from minitvm.relax.frontend.onnx import from_onnx

    nodes = [helper.make_node("CumSum", ["x", "ax"], ["c"]),
             helper.make_node("TopK", ["c", "k"], ["v", "i"], axis=-1, largest=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 300])],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [4, 70]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [4, 70])],
        initializer=[helper.make_tensor("ax", TensorProto.INT64, [], [1]),
                     helper.make_tensor("k", TensorProto.INT64, [1], [70])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.random.default_rng(0).standard_normal((4, 300)).astype("float32")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want_v, want_i = sess.run(None, {"x": x})
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    got_v, got_i = (o.numpy() for o in vm["main"](tvm.nd.array(x)))
    np.testing.assert_allclose(got_v, want_v, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got_i, want_i)


@pytest.mark.parametrize("axis", [1, 0, None])
def test_symbolic_rows_scan_in_one_pass_with_numpys_rounding(axis):
    """A scan over a symbolic row count: the scan schedule takes symbolic extents (one pass per
    row, numpy's order of additions), so every size gives numpy's bits; an empty input too."""
    n = tvm.tir.Var("n", "int64")
    mod = _module(lambda v: R.cumsum(v, axis=axis), (n, 9), "float32")
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for m in (3, 10, 0):
        a = np.random.default_rng(m).standard_normal((m, 9)).astype("float32")
        np.testing.assert_array_equal(vm["main"](tvm.nd.array(a)).numpy(), np.cumsum(a, axis))
