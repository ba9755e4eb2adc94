"""relax.frontend.onnx on ``EyeLike`` of a tensor whose size is symbolic: SigLIP's pairwise
labels ``2 * eye(batch) - 1`` exported with a dynamic batch (the thirteenth round of new-user
models). The identity is built from two ``arange``s compared (with the diagonal offset ``k``),
so one build serves every batch; checked against ONNX Runtime at several sizes."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402


def _model(k: int, dtype: int | None):
    """y = EyeLike(x @ x^T) (x: (batch, 4)); ``dtype`` None keeps x's float."""
    attrs = {"k": k} if dtype is None else {"k": k, "dtype": dtype}
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
             helper.make_node("MatMul", ["x", "xt"], ["g"]),
             helper.make_node("EyeLike", ["g"], ["y"], **attrs)]
    out = TensorProto.FLOAT if dtype is None else dtype
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", out, ["batch", "batch"])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("k,dtype", [(0, None), (1, TensorProto.INT64), (-2, None)])
def test_eyelike_of_a_symbolic_size(k, dtype):
    model = _model(k, dtype)
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 3, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype("float32")
        got = vm["main"](tvm.nd.array(x)).numpy()
        ref = sess.run(None, {"x": x})[0]
        assert got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref)
