"""float64 models through Relax's ONNX importer whose constants it used to build as float32
(``relax.const`` of a float64 array narrows it): a 1-D Conv's weight, a ConvTranspose of a
1x1 input's weight, an LSTM's transposed weights, tf_crop_and_resize's extrapolation value, a
computed OneHot's values and Pad's value, a DFT's matrix, GridSample's constants -- each a
dtype clash at import before. onnxruntime has
no double kernels for these, so the reference is onnx's own evaluator, to float64's
precision."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402

D, I64 = TensorProto.DOUBLE, TensorProto.INT64
node = helper.make_node
rng = np.random.default_rng(0)


def _model(nodes, inputs, inits):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info("y", D, None)],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


CASES = {
    "conv1d": (_model([node("Conv", ["x", "w"], ["y"], pads=[1, 1])], [("x", D, [2, 3, 7])],
                      {"w": rng.standard_normal((4, 3, 3))}),
               {"x": rng.standard_normal((2, 3, 7))}),
    "conv_transpose_1x1": (_model([node("ConvTranspose", ["x", "w"], ["y"])],
                                  [("x", D, [2, 3, 1, 1])],
                                  {"w": rng.standard_normal((3, 4, 3, 3))}),
                           {"x": rng.standard_normal((2, 3, 1, 1))}),
    "lstm": (_model([node("LSTM", ["x", "W", "R"], ["y"], hidden_size=4)], [("x", D, [3, 2, 5])],
                    {"W": rng.standard_normal((1, 16, 5)), "R": rng.standard_normal((1, 16, 4))}),
             {"x": rng.standard_normal((3, 2, 5))}),
    "crop_and_resize": (_model([node("Resize", ["x", "roi", "", "sz"], ["y"], mode="linear",
                                     coordinate_transformation_mode="tf_crop_and_resize",
                                     extrapolation_value=0.1)], [("x", D, [1, 1, 4, 4])],
                               {"roi": np.array([0, 0, -0.5, 0.2, 1, 1, 1.3, 0.9]),
                                "sz": np.array([1, 1, 5, 3])}),
                        {"x": rng.standard_normal((1, 1, 4, 4))}),
    "one_hot_of_the_batch": (_model([node("Shape", ["x"], ["s"], start=0, end=1),
                                     node("Squeeze", ["s"], ["d"]),
                                     node("OneHot", ["i", "d", "vals"], ["y"])],
                                    [("x", D, ["N", 3]), ("i", I64, [3])],
                                    {"vals": np.array([0.1, 0.7])}),
                             {"x": rng.standard_normal((4, 3)), "i": np.array([0, 3, -1])}),
    "pad_by_the_batch": (_model([node("Shape", ["x"], ["s"], start=0, end=1),
                                 node("Concat", ["z", "s", "z", "z"], ["p"], axis=0),
                                 node("Pad", ["x", "p", "v"], ["y"])], [("x", D, ["N", 3])],
                                {"z": np.array([0]), "v": np.array(0.1)}),
                         {"x": rng.standard_normal((2, 3))}),
    "dft": (_model([node("DFT", ["x"], ["y"], axis=1)], [("x", D, [2, 8, 1])], {}),
            {"x": rng.standard_normal((2, 8, 1))}),
    "grid_sample": (_model([node("GridSample", ["x", "g"], ["y"], mode="linear")],
                           [("x", D, [1, 2, 4, 5]), ("g", D, [1, 3, 3, 2])], {}),
                    {"x": rng.standard_normal((1, 2, 4, 5)),
                     "g": rng.uniform(-1.1, 1.1, (1, 3, 3, 2))}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_float64_constants_stay_double(name):
    model, feed = CASES[name]
    want = ReferenceEvaluator(model).run(None, feed)[0]
    mod = from_onnx(model)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](*[tvm.nd.array(feed[p.name_hint]) for p in mod["main"].params]).numpy()
    assert got.dtype == np.float64 and got.shape == want.shape
    # (topi.grid_sample computes its coordinates in float32 by design: its samples are float64
    # sums of float32-placed taps)
    tol = 1e-6 if name == "grid_sample" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
