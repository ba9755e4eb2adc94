"""ONNX Dropout (inference and ratio-0 training variants, with its mask output), NonZero of a
value known at import, If / Loop resolved at import, and training-mode BatchNormalization,
through relax.frontend.onnx.from_onnx, against ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402

F = TensorProto.FLOAT
rng = np.random.default_rng(0)


def model_of(nodes, inits, outputs, x_shape=(3, 4)):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, x_shape)],
                              [helper.make_empty_tensor_value_info(o) for o in outputs],
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def check(model, x):
    ref = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": x})
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    out = vm["main"](x)
    got = [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape and g.dtype == r.dtype
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ratio,training", [(0.5, False), (0.0, True)])
def test_dropout_with_mask(ratio, training):
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"])
    model = model_of([node], {"r": np.array(ratio, "float32"), "t": np.array(training)},
                     ["y", "mask"])
    check(model, rng.standard_normal((3, 4)).astype("float32"))


def test_random_dropout_is_a_clear_error():
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y"])
    model = model_of([node], {"r": np.array(0.25, "float32"), "t": np.array(True)}, ["y"])
    with pytest.raises(ONNXImportError, match="ratio 0.25 is random"):
        from_onnx(model)


def test_nonzero_of_a_known_value_and_of_data():
    w = (rng.standard_normal((2, 5)) > 0).astype("float32")
    nodes = [helper.make_node("NonZero", ["w"], ["nz"]),
             helper.make_node("Cast", ["nz"], ["f"], to=F),
             helper.make_node("ReduceSum", ["f"], ["s"], keepdims=1),
             helper.make_node("Add", ["x", "s"], ["y"])]
    check(model_of(nodes, {"w": w}, ["y"]), rng.standard_normal((3, 4)).astype("float32"))
    # of the data: relax.nonzero, lowered to its two native passes
    x = rng.standard_normal((3, 4)).astype("float32")
    x[1] = 0.0
    model = model_of([helper.make_node("NonZero", ["x"], ["y"])], {}, ["y"])
    assert "R.nonzero" in from_onnx(model).script()
    check(model, np.maximum(x, 0))


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def test_if_with_a_known_condition_and_a_runtime_condition():
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                               [vi("t", F, (3, 4))])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [vi("e", F, (3, 4))])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)
    x = rng.standard_normal((3, 4)).astype("float32")
    for flag in (True, False):
        check(model_of([node], {"c": np.array(flag)}, ["y"]), x)
    # the condition computed from the input's shape is known at import too
    shape_cond = [helper.make_node("Shape", ["x"], ["s"]),
                  helper.make_node("Gather", ["s", "one"], ["n"]),
                  helper.make_node("Greater", ["n", "three"], ["c"]), node]
    check(model_of(shape_cond, {"one": np.array(1, "int64"), "three": np.array(3, "int64")},
                   ["y"]), x)
    runtime = [helper.make_node("ReduceSum", ["x"], ["n"], keepdims=0),
               helper.make_node("Greater", ["n", "zero"], ["c"]), node]
    # a condition computed from the data: a Relax If in a private function, run by the VM
    runtime_model = model_of(runtime, {"zero": np.array(0.0, "float32")}, ["y"])
    check(runtime_model, np.abs(x))
    check(runtime_model, -np.abs(x))


def test_loop_unrolled_with_scan_output():
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["acc_in", "fi"], ["scaled"]),
         helper.make_node("Add", ["scaled", "x"], ["acc_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["scan"], keepdims=0)],
        "body", [vi("i", TensorProto.INT64, ()), vi("c_in", TensorProto.BOOL, ()),
                 vi("acc_in", F, (3, 4))],
        [vi("c_out", TensorProto.BOOL, ()), vi("acc_out", F, (3, 4)), vi("scan", F, ())])
    node = helper.make_node("Loop", ["M", "", "x"], ["acc", "sums"], body=body)
    model = model_of([node], {"M": np.array(3, "int64")}, ["acc", "sums"])
    check(model, rng.standard_normal((3, 4)).astype("float32"))


def test_batchnorm_training_mode():
    stats = {"s": rng.standard_normal(3).astype("float32"),
             "b": rng.standard_normal(3).astype("float32"),
             "m": rng.standard_normal(3).astype("float32"),
             "v": rng.random(3).astype("float32") + 0.5}
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                            ["y", "rm", "rv"], training_mode=1, momentum=0.7, epsilon=1e-3)
    model = model_of([node], stats, ["y", "rm", "rv"], x_shape=(2, 3, 4, 5))
    model.opset_import[0].version = 15
    x = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    check(model, x)


@pytest.mark.parametrize("attrs,shape", [
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (2, 3, 7, 6)),
    ({"kernel_shape": [2, 3], "storage_order": 1, "ceil_mode": 1, "strides": [2, 2]},
     (1, 2, 5, 7)),
])
def test_maxpool_indices(attrs, shape):
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    model = model_of([node], {}, ["y", "i"], x_shape=shape)
    model.opset_import[0].version = 12
    check(model, rng.standard_normal(shape).astype("float32"))
