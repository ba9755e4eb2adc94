"""A linear Resize of an integer input with static sizes, through both ONNX importers, against
onnxruntime: the taps' weights used to be cast to the integer dtype (0 or 1), an answer off by
up to 246 on uint8; now the taps run in float64 and truncate back as onnxruntime casts (its
float32 arithmetic may land 1 off next to an integer)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402


def _model(elem, ctm):
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="linear",
                          coordinate_transformation_mode=ctm)], "g",
        [helper.make_tensor_value_info("x", elem, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", elem, None)],
        initializer=[helper.make_tensor("s", TensorProto.INT64, [4], [2, 3, 7, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("elem", [TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32])
@pytest.mark.parametrize("ctm", ["half_pixel", "align_corners"])
def test_linear_resize_of_an_integer_input(elem, ctm):
    model = _model(elem, ctm)
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    info = np.iinfo(dtype)
    x = np.random.default_rng(elem).integers(max(info.min, -10**5), min(info.max, 10**5),
                                             (2, 3, 4, 5), endpoint=True).astype(dtype)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, params = relay.frontend.from_onnx(model)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm", params=params)
    from minitvm.contrib import graph_executor

    gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    gm.set_input("x", x)
    gm.run()
    vm = relax.VirtualMachine(relax.build(relax.frontend.onnx.from_onnx(model), "llvm"),
                              tvm.cpu())
    for got in (gm.get_output(0).numpy(), vm["main"](tvm.nd.array(x)).numpy()):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.astype("int64"), want.astype("int64"), rtol=0, atol=1)
        assert np.mean(got == want) > 0.9
