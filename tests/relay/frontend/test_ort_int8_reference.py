"""The test suite's onnxruntime reference (``ort_int8_reference``): exact uint8 x int8
products on every host, where onnxruntime's own kernels saturate without VNNI."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the reference runs ONNX models")
pytest.importorskip("onnxruntime", reason="the reference is onnxruntime's")

import ort_int8_reference as ref  # noqa: E402
from onnx import TensorProto as P  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402


def _matmul_integer(b_const: bool):
    """MatMulInteger of uint8 255s (zero point 3) and int8 +127 / -128 weights (zero points
    per column), K = 64: pairs of products past int16."""
    rng = np.random.default_rng(0)
    a = np.full((4, 64), 255, "uint8")
    b = np.where(rng.random((64, 8)) < 0.5, 127, -128).astype("int8")
    zp = rng.integers(-3, 3, 8).astype("int8")
    inits = [numpy_helper.from_array(np.array(3, "uint8"), "a_zp"),
             numpy_helper.from_array(zp, "b_zp")] + \
        ([numpy_helper.from_array(b, "b")] if b_const else [])
    inputs = [helper.make_tensor_value_info("a", P.UINT8, [4, 64])] + \
        ([] if b_const else [helper.make_tensor_value_info("b", P.INT8, [64, 8])])
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["y"])], "mmi", inputs,
        [helper.make_tensor_value_info("y", P.INT32, [4, 8])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    feeds = {"a": a} if b_const else {"a": a, "b": b}
    return model, feeds, (a.astype(np.int64) - 3) @ (b.astype(np.int64) - zp)


@pytest.mark.parametrize("b_const", [True, False])
def test_reference_is_exact_on_this_host(b_const):
    model, feeds, want = _matmul_integer(b_const)
    np.testing.assert_array_equal(ref.ort_run(model, feeds)[0], want)


@pytest.mark.parametrize("b_const", [True, False])
def test_uint8_weights_are_the_same_model(b_const):
    """The rewrite (on any host): uint8 weights and zero points moved by 128, same results."""
    model, feeds, want = _matmul_integer(b_const)
    model2, feeds2 = ref.exact_weights(model, feeds)
    types = {i.name: i.data_type for i in model2.graph.initializer}
    types.update({i.name: i.type.tensor_type.elem_type for i in model2.graph.input})
    b_name = model2.graph.node[0].input[1]
    assert types[b_name] == P.UINT8 and types[model2.graph.node[0].input[3]] == P.UINT8
    np.testing.assert_array_equal(ref._session(model2).run(None, feeds2)[0], want)
    assert feeds["a"] is feeds2["a"] and (b_const or feeds2["b"].dtype == np.uint8)
