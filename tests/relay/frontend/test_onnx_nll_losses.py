"""ONNX SoftmaxCrossEntropyLoss (torch's dynamo exporter writes it for F.cross_entropy) and
NegativeLogLikelihoodLoss through both ONNX importers (OpNotImplemented in each before), against
ONNX Runtime: every reduction, class weights, ignore_index, 2-D and 3-D scores, the optional
log-probability output."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay
from minitvm.contrib import graph_executor

onnx = pytest.importorskip("onnx", reason="needs the onnx extra")
ort = pytest.importorskip("onnxruntime", reason="needs the onnx extra")
from onnx import TensorProto, helper  # noqa: E402

CASES = [  # (op, scores shape, reduction, weighted, ignore_index)
    ("SoftmaxCrossEntropyLoss", (6, 5), "mean", False, None),
    ("SoftmaxCrossEntropyLoss", (6, 5), "sum", True, None),
    ("SoftmaxCrossEntropyLoss", (6, 5), "mean", True, 2),
    ("SoftmaxCrossEntropyLoss", (3, 5, 4), "none", False, 1),
    ("SoftmaxCrossEntropyLoss", (3, 5, 4), "mean", False, 0),
    ("NegativeLogLikelihoodLoss", (6, 5), "mean", True, None),
    ("NegativeLogLikelihoodLoss", (3, 5, 4), "sum", False, 3),
]


def _model(op, shape, reduction, weighted, ignore):
    n, c, rest = shape[0], shape[1], list(shape[2:])
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape)),
              helper.make_tensor_value_info("t", TensorProto.INT64, [n] + rest)]
    names = ["x", "t"]
    if weighted:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [c]))
        names.append("w")
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    outs = ["loss", "logp"] if op == "SoftmaxCrossEntropyLoss" else ["loss"]
    node = helper.make_node(op, names, outs, **attrs)
    loss_shape = [n] + rest if reduction == "none" else []
    out_infos = [helper.make_tensor_value_info("loss", TensorProto.FLOAT, loss_shape)]
    if len(outs) == 2:
        out_infos.append(helper.make_tensor_value_info("logp", TensorProto.FLOAT, list(shape)))
    graph = helper.make_graph([node], "loss", inputs, out_infos)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _feeds(shape, weighted, ignore):
    rng = np.random.default_rng(7)
    feeds = {"x": rng.standard_normal(shape).astype("float32"),
             "t": rng.integers(0, shape[1], (shape[0],) + shape[2:]).astype("int64")}
    if ignore is not None:
        feeds["t"].reshape(-1)[::3] = ignore  # some targets ignored
    if weighted:
        feeds["w"] = rng.uniform(0.5, 2.0, shape[1]).astype("float32")
    return feeds


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0][:4]}-{c[1]}-{c[2]}-{c[3]}-{c[4]}")
def test_nll_losses_both_importers_vs_ort(case):
    model = _model(*case)
    feeds = _feeds(case[1], case[3], case[4])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    refs = sess.run(None, feeds)

    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    assert all(k.kind == "native" for k in lib.get_lib().kernels.values())
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, v in feeds.items():
        g.set_input(k, v)
    g.run()
    for i, ref in enumerate(refs):
        np.testing.assert_allclose(g.get_output(i).numpy(), ref, rtol=1e-5, atol=1e-6)

    ex = relax.build(relax.frontend.onnx.from_onnx(model), "llvm")
    assert ex.numpy_calls() == {}
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](*map(tvm.nd.array, feeds.values()))
    outs = [out] if hasattr(out, "numpy") else list(out)
    for got, ref in zip(outs, refs, strict=True):
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)
