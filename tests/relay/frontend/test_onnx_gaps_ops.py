"""ONNX TopK, NonZero, ScatterElements/Scatter, ScatterND, MaxPool's Indices output,
training-mode BatchNormalization and the Dropout variants through relay.frontend.from_onnx,
against ONNX Runtime (or ONNX's reference evaluator where Runtime has no kernel)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402
from minitvm.relay.frontend.onnx import NeedsConstantInput  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
rng = np.random.default_rng(0)


def model_of(node, inputs, outputs, inits=None, opset=18):
    """A one-node model; ``inputs``: name -> array (graph inputs), ``inits``: initializers."""
    elem = {np.dtype("float32"): F, np.dtype("int64"): I64, np.dtype("bool"): B}
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, elem[v.dtype], v.shape)
                      for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def reference(model, feeds):
    try:
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - no Runtime kernel: ONNX's own reference evaluator
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(model).run(None, feeds)
    return sess.run(None, feeds)


def run(model, feeds, compiled=False, **kw):
    mod, params = relay.frontend.from_onnx(model, **kw)
    if compiled:
        from frontend_models import build_and_run

        return build_and_run(mod, params, {k: v for k, v in feeds.items()
                                           if k not in kw.get("const_inputs", {})})
    ex = relay.create_executor("debug", mod=mod).evaluate()
    out = ex(*[feeds[p.name_hint] for p in mod["main"].params])
    return [o.numpy() for o in out] if not hasattr(out, "numpy") else [out.numpy()]


def check(model, feeds, compiled=False, **kw):
    ref = reference(model, feeds)
    got = run(model, feeds, compiled, **kw)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape, (g.shape, r.shape)
        assert g.dtype == r.dtype, (g.dtype, r.dtype)
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ TopK
@pytest.mark.parametrize("largest,axis", [(1, -1), (0, 1), (1, 0)])
def test_topk(largest, axis):
    x = rng.standard_normal((3, 5, 4)).astype("float32")
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)
    check(model_of(node, {"x": x}, ["v", "i"], {"k": np.array([2], "int64")}), {"x": x})


def test_topk_compiled_and_k_as_input():
    x = rng.standard_normal((4, 6)).astype("float32")
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"])
    model = model_of(node, {"x": x, "k": np.array([3], "int64")}, ["v", "i"])
    with pytest.raises(NeedsConstantInput, match="TopK's K"):
        relay.frontend.from_onnx(model)
    feeds = {"x": x, "k": np.array([3], "int64")}
    check(model, feeds, compiled=True, const_inputs={"k": feeds["k"]})


def test_topk_bad_k():
    x = np.zeros((2, 3), "float32")
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"])
    with pytest.raises(ImportError_, match="K=7 is outside"):
        relay.frontend.from_onnx(model_of(node, {"x": x}, ["v", "i"],
                                          {"k": np.array([7], "int64")}))


# ------------------------------------------------------------------ NonZero
def test_nonzero_of_a_constant_and_of_a_bound_input():
    c = (rng.standard_normal((3, 4)) > 0)
    node = helper.make_node("NonZero", ["c"], ["y"])
    model = model_of(node, {"c": c}, ["y"])
    with pytest.raises(NeedsConstantInput, match="depends on the values"):
        relay.frontend.from_onnx(model)
    check(model, {"c": c}, const_inputs={"c": c})
    # computed from an initializer: folded at import
    x = rng.standard_normal((2, 3)).astype("float32")
    nodes = [helper.make_node("Relu", ["w"], ["r"]), helper.make_node("NonZero", ["r"], ["nz"]),
             helper.make_node("Cast", ["nz"], ["f"], to=F),
             helper.make_node("ReduceSum", ["f"], ["s"], keepdims=1),
             helper.make_node("Add", ["x", "s"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, (2, 3))],
                              [helper.make_tensor_value_info("y", F, None)],
                              initializer=[numpy_helper.from_array(x, "w")])
    m2 = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    check(m2, {"x": x})


# ------------------------------------------------------------------ scatter
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements(reduction):
    data = rng.standard_normal((3, 4)).astype("float32")
    idx = np.array([[1, -1, 0], [2, 0, -4]], "int64")  # negative indices wrap
    if reduction == "none":
        idx = np.array([[1, -1, 0], [2, 0, -4]], "int64")[:, [0, 1, 2]]
    upd = rng.standard_normal((2, 3)).astype("float32")
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1,
                            reduction=reduction)
    feeds = {"d": data, "i": idx, "u": upd}
    check(model_of(node, feeds, ["y"]), feeds)


def test_scatter_elements_compiled_and_legacy_scatter():
    data = rng.standard_normal((4, 3)).astype("float32")
    idx = np.array([[3, 0, 1], [1, 2, 0]], "int64")
    upd = rng.standard_normal((2, 3)).astype("float32")
    feeds = {"d": data, "i": idx, "u": upd}
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=0)
    check(model_of(node, feeds, ["y"]), feeds, compiled=True)
    old = helper.make_node("Scatter", ["d", "i", "u"], ["y"], axis=0)
    check(model_of(old, feeds, ["y"], opset=10), feeds)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_elements_constant_index_is_native(reduction):
    """A graph network's message scatter (an edge-list initializer, repeated and negative
    targets) imports as a gather and a reduction: every kernel native (it ran as numpy)."""
    from frontend_models import build_and_run

    data = rng.standard_normal((1, 12, 5)).astype("float32")
    targets = rng.integers(-12, 12, 40)
    if reduction == "none":  # one update per target: the order of duplicates is unspecified
        targets = rng.permutation(12)[:9]
    idx = np.broadcast_to(targets.reshape(1, -1, 1), (1, len(targets), 5)).astype("int64")
    upd = rng.standard_normal(idx.shape).astype("float32")
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1,
                            reduction=reduction)
    model = model_of(node, {"d": data, "u": upd}, ["y"], {"i": np.ascontiguousarray(idx)})
    feeds = {"d": data, "u": upd}
    mod, params = relay.frontend.from_onnx(model)
    assert "scatter_elements" not in mod.astext(show_meta_data=False)
    got = build_and_run(mod, params, feeds)
    np.testing.assert_allclose(got[0], reference(model, feeds)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction):
    data = rng.standard_normal((4, 3, 2)).astype("float32")
    idx = np.array([[[0, 1]], [[-1, 2]]], "int64")  # (2, 1, 2): tuples into the first 2 axes
    upd = rng.standard_normal((2, 1, 2)).astype("float32")
    node = helper.make_node("ScatterND", ["d", "i", "u"], ["y"], reduction=reduction)
    feeds = {"d": data, "i": idx, "u": upd}
    check(model_of(node, feeds, ["y"]), feeds)


def test_scatter_nd_compiled():
    data = rng.standard_normal((5, 4)).astype("float32")
    idx = np.array([[4], [0], [2]], "int64")
    upd = rng.standard_normal((3, 4)).astype("float32")
    feeds = {"d": data, "i": idx, "u": upd}
    node = helper.make_node("ScatterND", ["d", "i", "u"], ["y"])
    check(model_of(node, feeds, ["y"]), feeds, compiled=True)


def test_scatter_bad_reduction():
    feeds = {"d": np.zeros((2, 2), "float32"), "i": np.zeros((1, 2), "int64"),
             "u": np.zeros((1, 2), "float32")}
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], reduction="avg")
    with pytest.raises(ImportError_, match="reduction='avg'"):
        relay.frontend.from_onnx(model_of(node, feeds, ["y"]))


# ------------------------------------------------------------------ MaxPool Indices
@pytest.mark.parametrize("attrs,shape", [
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (2, 3, 7, 6)),
    ({"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, (1, 2, 5, 5)),
    ({"kernel_shape": [2, 3], "storage_order": 1}, (1, 2, 4, 5)),
    ({"kernel_shape": [2, 2], "dilations": [2, 1]}, (1, 1, 5, 4)),
    ({"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER"}, (1, 1, 5, 4)),
    ({"kernel_shape": [3], "strides": [2], "pads": [1, 0]}, (2, 2, 9)),
    ({"kernel_shape": [2, 2, 2], "strides": [1, 2, 2]}, (1, 2, 3, 4, 4)),
])
def test_maxpool_indices(attrs, shape):
    x = rng.standard_normal(shape).astype("float32")
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    check(model_of(node, {"x": x}, ["y", "i"], opset=12), {"x": x})


def test_maxpool_indices_compiled():
    x = rng.standard_normal((1, 4, 8, 8)).astype("float32")
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1])
    check(model_of(node, {"x": x}, ["y", "i"], opset=12), {"x": x}, compiled=True)


# ------------------------------------------------------------------ BatchNorm / Dropout
def test_batchnorm_training_mode():
    x = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    stats = {"s": rng.standard_normal(3).astype("float32"),
             "b": rng.standard_normal(3).astype("float32"),
             "m": rng.standard_normal(3).astype("float32"),
             "v": rng.random(3).astype("float32") + 0.5}
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                            ["y", "rm", "rv"], training_mode=1, momentum=0.8, epsilon=1e-3)
    check(model_of(node, {"x": x}, ["y", "rm", "rv"], stats, opset=15), {"x": x},
          compiled=True)


def test_dropout_variants():
    x = rng.standard_normal((3, 4)).astype("float32")
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"])
    model = model_of(node, {"x": x}, ["y", "mask"],
                     {"r": np.array(0.5, "float32"), "t": np.array(False)})
    check(model, {"x": x})
    zero = model_of(node, {"x": x}, ["y", "mask"],
                    {"r": np.array(0.0, "float32"), "t": np.array(True)})
    check(zero, {"x": x})
    random = model_of(node, {"x": x}, ["y", "mask"],
                      {"r": np.array(0.3, "float32"), "t": np.array(True)})
    with pytest.raises(ImportError_, match="training-mode Dropout with ratio 0.3 is random"):
        relay.frontend.from_onnx(random)
