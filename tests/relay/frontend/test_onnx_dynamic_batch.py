"""ONNX models imported with a dynamic batch (``relay.Any()`` in ``shape=``), compiled once for
the Relay VM and run at several batch sizes against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm.relay.frontend.common import ImportError_

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.runtime import vm as runtime_vm  # noqa: E402

F = TensorProto.FLOAT


def _model(nodes, inits, out_shape):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["N", 2, 5, 5])],
                          [helper.make_tensor_value_info("y", F, out_shape)],
                          initializer=[numpy_helper.from_array(v, n) for n, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _conv_relu(x, w):
    n, c, h, wd = x.shape
    cols = np.stack([x[:, :, i:i + h - 2, j:j + wd - 2] for i in range(3) for j in range(3)], 2)
    out = np.einsum("nckhw,ock->nohw", cols, w.reshape(w.shape[0], c, 9))
    return np.maximum(out, 0)


def test_conv_flatten_gemm_and_shape_reshape_at_three_batches():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 2, 3, 3)).astype("float32")
    fc = rng.standard_normal((3, 36)).astype("float32")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Shape", ["r"], ["s"]),  # (N, 4, 3, 3) at run time
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Reshape", ["r", "flat"], ["r2"]),  # (N, 4, 9) by copying N
             helper.make_node("Flatten", ["r2"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    inits = {"w": w, "fc": fc, "zero": np.array(0, "int64"),
             "flat": np.array([0, 4, 9], "int64")}
    mod, params = relay.frontend.from_onnx(_model(nodes, inits, ["N", 3]),
                                           shape={"x": [relay.Any(), 2, 5, 5]})
    assert str(mod["main"].ret_type) == "Tensor[(?, 3), float32]"
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm", params=params), tvm.cpu())
    for batch in (1, 4, 3):
        x = rng.standard_normal((batch, 2, 5, 5)).astype("float32")
        ref = _conv_relu(x, w).reshape(batch, -1) @ fc.T
        np.testing.assert_allclose(vm.run(x).numpy(), ref, rtol=1e-4, atol=1e-4)


def test_an_operator_needing_the_batch_size_is_a_clear_error():
    nodes = [helper.make_node("Reshape", ["x", "to"], ["y"])]
    model = _model(nodes, {"to": np.array([5, 10, 5], "int64")}, [5, 10, 5])
    with pytest.raises(ImportError_, match=r"dynamic axes \[0\] are neither copied"):
        relay.frontend.from_onnx(model, shape={"x": [relay.Any(), 2, 5, 5]})


def test_matmul_of_a_dynamic_batch_by_a_weight():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((5, 3)).astype("float32")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    mod, params = relay.frontend.from_onnx(_model(nodes, {"w": w}, ["N", 2, 5, 3]),
                                           shape={"x": [relay.Any(), 2, 5, 5]})
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm", params=params), tvm.cpu())
    for batch in (2, 1):
        x = rng.standard_normal((batch, 2, 5, 5)).astype("float32")
        np.testing.assert_allclose(vm.run(x).numpy(), x @ w, rtol=1e-5, atol=1e-5)


def test_pytorch_style_shape_chains_expand_and_4d_matmul():
    """x.reshape(B, 2, 5, 5) with B from Shape, a token expanded to (B, 1, 5) (the -1 test of
    torch's expand through Equal/Where), and a 4-D MatMul over the run-time batch."""
    rng = np.random.default_rng(2)
    cls = rng.standard_normal((1, 1, 5)).astype("float32")
    i64 = lambda *v: np.array(v, "int64")  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
             helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
             helper.make_node("Concat", ["b1", "rest"], ["t"], axis=0),     # (B, 2, 5, 5)
             helper.make_node("Reshape", ["x", "t"], ["r"]),
             helper.make_node("MatMul", ["r", "r"], ["mm"]),                 # (B, 2, 5, 5)
             helper.make_node("Concat", ["b1", "m1", "m1"], ["e"], axis=0),  # (B, -1, -1)
             helper.make_node("Equal", ["e", "m1"], ["eq"]),
             helper.make_node("Where", ["eq", "one3", "e"], ["e2"]),         # (B, 1, 1)
             helper.make_node("Expand", ["cls", "e2"], ["c"]),               # (B, 1, 5)
             helper.make_node("Gather", ["s", "two"], ["h"], axis=0),        # 5, static
             helper.make_node("Unsqueeze", ["h", "ax0"], ["h1"]),
             helper.make_node("Concat", ["b1", "ten", "h1"], ["t2"], axis=0),
             helper.make_node("Reshape", ["mm", "t2"], ["mm2"]),             # (B, 10, 5)
             helper.make_node("Concat", ["c", "mm2"], ["y"], axis=1)]        # (B, 11, 5)
    inits = {"zero": np.array(0, "int64"), "two": np.array(2, "int64"), "ax0": i64(0),
             "rest": i64(2, 5, 5), "m1": i64(-1), "ten": i64(10), "one3": i64(1, 1, 1), "cls": cls}
    mod, params = relay.frontend.from_onnx(_model(nodes, inits, ["N", 11, 5]),
                                           shape={"x": [relay.Any(), 2, 5, 5]})
    assert str(mod["main"].ret_type) == "Tensor[(?, 11, 5), float32]"
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm", params=params), tvm.cpu())
    for batch in (3, 1):
        x = rng.standard_normal((batch, 2, 5, 5)).astype("float32")
        ref = np.concatenate([np.broadcast_to(cls, (batch, 1, 5)),
                              (x @ x).reshape(batch, 10, 5)], axis=1)
        np.testing.assert_allclose(vm.run(x).numpy(), ref, rtol=1e-4, atol=1e-4)
