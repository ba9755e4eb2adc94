"""ONNX graphs of the fourth round of new-user architectures through the Relax importer:
1-D ``Conv`` imported as a one-row ``conv2d`` (a Whisper / ECG front end: the conv1d kernel was a
plain loop nest, 100-250x slower), ``ConvTranspose`` of a 1x1 input imported as one GEMM (a
DCGAN generator's first layer), and the batch-of-one ``MatMul`` of a spatial attention block.
Checked against ONNX Runtime, at a static and at a symbolic batch."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402

F = TensorProto.FLOAT


def _model(nodes, inputs, inits=None):
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", F, None)],
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _ops(mod) -> set[str]:
    """The Relax op names ``main`` calls (before legalization)."""
    found = set()

    def visit(e):
        if isinstance(e, relax.Call) and hasattr(e.op, "name"):
            found.add(e.op.name)

    relax.analysis.post_order_visit(mod["main"], visit)
    return found


def _check(model, feeds, rtol=1e-5, atol=1e-5):
    """One build, every feed against ONNX Runtime; returns the imported module."""
    mod = from_onnx(model)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    for feed in feeds:
        got = vm["main"](*[tvm.nd.array(feed[n]) for n in names])
        np.testing.assert_allclose(got.numpy(), sess.run(None, feed)[0], rtol=rtol, atol=atol)
    return mod


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


@pytest.mark.parametrize("attrs", [
    {"strides": [2], "pads": [1, 1]},                       # Whisper's second conv
    {"pads": [7, 7]},
    {"dilations": [3], "pads": [2, 4]},                     # uneven padding, dilated
    {"auto_pad": "SAME_UPPER", "strides": [3]},
    {"group": 4, "pads": [1, 1]},
    {"group": 8},                                           # depthwise
])
@pytest.mark.parametrize("batch", [2, "n"])
def test_conv1d_is_a_one_row_conv2d(attrs, batch):
    k = 15 if attrs.get("pads") == [7, 7] else 3
    w = _rand(16, 8 // attrs.get("group", 1), k, seed=1)
    model = _model([helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)],
                   [helper.make_tensor_value_info("x", F, [batch, 8, 37])],
                   {"w": w, "b": _rand(16, seed=2)})
    feeds = [{"x": _rand(n, 8, 37, seed=n)} for n in ((2,) if batch == 2 else (1, 3))]
    mod = _check(model, feeds)
    assert "relax.nn.conv1d" not in _ops(mod) and "relax.nn.conv2d" in _ops(mod)


def test_conv1d_with_a_run_time_weight():
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1])],
                   [helper.make_tensor_value_info("x", F, [2, 4, 10]),
                    helper.make_tensor_value_info("w", F, [6, 4, 3])])
    _check(model, [{"x": _rand(2, 4, 10), "w": _rand(6, 4, 3, seed=1)}])


@pytest.mark.parametrize("kernel,strides", [((4, 4), (1, 1)), ((3, 5), (2, 2)), ((4,), (1,)),
                                            ((2, 3, 2), (1, 1, 1))])
@pytest.mark.parametrize("batch", [2, "n"])
def test_conv_transpose_of_a_1x1_input_is_a_gemm(kernel, strides, batch):
    nd = len(kernel)
    w = _rand(8, 5, *kernel, seed=3)
    model = _model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"],
                                     strides=list(strides))],
                   [helper.make_tensor_value_info("x", F, [batch, 8] + [1] * nd)],
                   {"w": w, "b": _rand(5, seed=4)})
    feeds = [{"x": _rand(n, 8, *[1] * nd, seed=n)} for n in ((2,) if batch == 2 else (1, 3))]
    mod = _check(model, feeds)
    assert not any("conv" in op for op in _ops(mod))


def test_conv_transpose_of_a_1x1_input_with_a_run_time_weight():
    model = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"])],
                   [helper.make_tensor_value_info("x", F, [2, 3, 1, 1]),
                    helper.make_tensor_value_info("w", F, [3, 4, 2, 2])])
    _check(model, [{"x": _rand(2, 3, 1, 1), "w": _rand(3, 4, 2, 2, seed=1)}])


@pytest.mark.parametrize("attrs", [{"pads": [1, 1, 1, 1]}, {"group": 2},
                                   {"output_padding": [1, 1], "strides": [2, 2]}])
def test_conv_transpose_of_a_1x1_input_keeps_the_conv_when_it_must(attrs):
    """Padding, groups or output padding: not the plain GEMM; still right."""
    model = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)],
                   [helper.make_tensor_value_info("x", F, [2, 4, 1, 1])],
                   {"w": _rand(4, 3, 3, 3, seed=5)})
    mod = _check(model, [{"x": _rand(2, 4, 1, 1)}])
    assert "relax.nn.conv2d_transpose" in _ops(mod)


def test_spatial_attention_matmuls_with_a_batch_of_one():
    """A VAE / diffusion mid block: softmax(q^T k) then v @ attn^T, batch 1."""
    nodes = [helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["qt", "k"], ["s"]),
             helper.make_node("Softmax", ["s"], ["a"], axis=-1),
             helper.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["v", "at"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info(n, F, [1, 32, 64]) for n in "qkv"])
    _check(model, [{n: _rand(1, 32, 64, seed=i) for i, n in enumerate("qkv")}], atol=1e-4)
