"""Relax's ONNX GridSample for what the pixel-row decomposition does not take (cubic sampling,
reflection padding, volumetric 5-D inputs) is one call_tir of Relay's native kernel
(``topi.grid_sample`` with a channels-last grid); these were import errors. Checked against
ONNX Runtime and against Relay's build of the same model; a symbolic batch too."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from ONNX Runtime")
from onnx import TensorProto, helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402


def _model(x_dims, g_dims, mode: str, padding: str, align: int):
    graph = helper.make_graph(
        [helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding,
                          align_corners=align)], "gs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims),
         helper.make_tensor_value_info("grid", TensorProto.FLOAT, g_dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def _inputs(x_shape, g_shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype("float32")
    grid = (rng.random(g_shape) * 2.6 - 1.3).astype("float32")  # some samples outside
    return x, grid


def _ort(model, x, grid):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x, "grid": grid})[0]


def _relax(model, x, grid):
    mod = relax.frontend.onnx.from_onnx(model)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return mod, vm["main"](tvm.nd.array(x), tvm.nd.array(grid)).numpy()


CASES_2D = [("cubic", "zeros"), ("cubic", "border"), ("cubic", "reflection"),
            ("linear", "reflection"), ("nearest", "reflection")]


@pytest.mark.parametrize("mode,padding", CASES_2D)
@pytest.mark.parametrize("align", [0, 1])
def test_2d_kernel_modes_match_onnxruntime(mode, padding, align):
    x, grid = _inputs((2, 3, 6, 7), (2, 5, 4, 2))
    model = _model(x.shape, grid.shape, mode, padding, align)
    mod, got = _relax(model, x, grid)
    assert "grid_sample" in [gv.name_hint for gv in mod.functions]  # one shared kernel
    np.testing.assert_allclose(got, _ort(model, x, grid), rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_volumetric_matches_onnxruntime(mode, padding):
    x, grid = _inputs((1, 2, 4, 5, 6), (1, 3, 4, 2, 3), seed=1)
    model = _model(x.shape, grid.shape, mode, padding, 0)
    np.testing.assert_allclose(_relax(model, x, grid)[1], _ort(model, x, grid),
                               rtol=1e-5, atol=2e-5)


def test_matches_relay_build_and_symbolic_batch():
    """The same kernel as Relay's image.grid_sample; a batch named 'N' stays symbolic."""
    from minitvm import relay
    from minitvm.contrib import graph_executor

    x, grid = _inputs((3, 2, 8, 8), (3, 6, 5, 2), seed=2)
    model = _model(["N", 2, 8, 8], ["N", 6, 5, 2], "cubic", "reflection", 0)
    got = _relax(model, x, grid)[1]
    np.testing.assert_allclose(got, _ort(model, x, grid), rtol=1e-5, atol=2e-5)
    mod, params = relay.frontend.from_onnx(model, {"x": x.shape, "grid": grid.shape})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.set_input("grid", grid)
    m.run()
    np.testing.assert_allclose(got, m.get_output(0).numpy(), rtol=1e-6, atol=1e-6)


def test_volumetric_cubic_is_a_clear_error():
    model = _model([1, 2, 4, 4, 4], [1, 2, 2, 2, 3], "cubic", "zeros", 0)
    with pytest.raises(Exception, match="cubic sampling of a 5-D input"):
        relax.frontend.onnx.from_onnx(model)
