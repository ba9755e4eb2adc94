"""ONNX opset 23's RMSNormalization (what the dynamo exporter writes for ``nn.RMSNorm``, the
Differential Transformer's norm in the tenth round of new-user models) through both ONNX
importers: Relay (strict native) and Relax, against ONNX Runtime and numpy; the last axis
and several trailing axes, a broadcast scale, and the imported IR's form."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from onnx import TensorProto, helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402


def _model(x_shape, scale_shape, axis, eps):
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], axis=axis,
                            epsilon=eps)
    graph = helper.make_graph(
        [node], "rms", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
                        helper.make_tensor_value_info("scale", TensorProto.FLOAT,
                                                      scale_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def _reference(x, scale, axis, eps):
    axes = tuple(range(axis % x.ndim, x.ndim))
    return x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps) * scale


@pytest.mark.parametrize("x_shape,scale_shape,axis,eps", [
    ((2, 5, 8), (8,), -1, 1e-5), ((2, 3, 4, 6), (4, 6), 2, 1e-6),
    ((3, 4, 6), (1, 6), 1, 1e-5), ((2, 7), (7,), 1, 0.1)])
def test_rms_normalization_both_importers(x_shape, scale_shape, axis, eps):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(x_shape) * 2.0).astype("float32")
    scale = rng.uniform(0.5, 1.5, scale_shape).astype("float32")
    model = _model(x_shape, scale_shape, axis, eps)
    ref = _reference(x.astype("float64"), scale, axis, eps)
    ort = pytest.importorskip("onnxruntime", reason="the check against ORT needs it")
    got = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "scale": scale})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)

    mod, params = relay.frontend.from_onnx(model)
    assert "rsqrt(" in mod.astext() and "mean(" in mod.astext()
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    gm.set_input("x", x)
    gm.set_input("scale", scale)
    gm.run()
    np.testing.assert_allclose(gm.get_output(0).numpy(), ref, rtol=1e-5, atol=1e-6)

    rmod = relax.frontend.onnx.from_onnx(model)
    text = rmod.script()
    assert ("R.nn.rms_norm(" in text) == (len(scale_shape) == len(x_shape) - axis % len(x_shape)
                                          and scale_shape[0] != 1)
    vm = relax.VirtualMachine(relax.build(rmod, "llvm"), tvm.cpu())
    out = vm["main"](tvm.nd.array(x), tvm.nd.array(scale))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
