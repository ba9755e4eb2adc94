"""A QDQ ResNet downsample as quantize_static writes one (uint8 activations): a 1x1 stride-2
conv of dequantized int8 weights with a bias, quantized, dequantized and added to a quantized
residual, quantized again, at 8 x 8. Relax fuses the add into the conv's kernel; its uint8
epilogue must run as vectors over whole planes (``schedule/plane_nest``) and match ONNX
Runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from onnx_quant_cases import ort_run  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402
from minitvm.tir import stmt as S  # noqa: E402
from minitvm.tir.stmt_functor import walk_stmts  # noqa: E402


def _downsample(cin=16, cout=32, hw=16):
    rng = np.random.default_rng(7)
    arrays = dict(
        s_in=np.array(0.03, "float32"), z_in=np.array(120, "uint8"),
        w=rng.integers(-127, 128, (cout, cin, 1, 1)).astype("int8"),
        w_s=(rng.random(cout) * 0.01 + 0.002).astype("float32"),
        w_z=np.zeros(cout, "int8"), bias=rng.standard_normal(cout).astype("float32"),
        s_y=np.array(0.04, "float32"), z_y=np.array(130, "uint8"),
        s_r=np.array(0.05, "float32"), z_r=np.array(125, "uint8"),
        s_o=np.array(0.06, "float32"), z_o=np.array(0, "uint8"))
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_in", "z_in"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "s_in", "z_in"], ["xf"]),
        helper.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["wf"], axis=0),
        helper.make_node("Conv", ["xf", "wf", "bias"], ["yf"], strides=[2, 2]),
        helper.make_node("QuantizeLinear", ["yf", "s_y", "z_y"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "s_y", "z_y"], ["yd"]),
        helper.make_node("QuantizeLinear", ["r", "s_r", "z_r"], ["rq"]),
        helper.make_node("DequantizeLinear", ["rq", "s_r", "z_r"], ["rd"]),
        helper.make_node("Add", ["yd", "rd"], ["sf"]),
        helper.make_node("QuantizeLinear", ["sf", "s_o", "z_o"], ["out"])]
    inits = [onnx.numpy_helper.from_array(v, n) for n, v in arrays.items()]
    half = hw // 2
    graph = helper.make_graph(
        nodes, "qdq_downsample",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, cin, hw, hw)),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, (1, cout, half, half))],
        [helper.make_tensor_value_info("out", TensorProto.UINT8, (1, cout, half, half))],
        initializer=inits)
    feeds = {"x": rng.standard_normal((1, cin, hw, hw)).astype("float32") * 2,
             "r": rng.standard_normal((1, cout, half, half)).astype("float32") * 3}
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), feeds


@pytest.mark.parametrize("hw", [16, 14])
def test_downsample_requantize_matches_onnxruntime_with_vector_epilogue(hw):
    proto, feeds = _downsample(hw=hw)
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(from_onnx(proto), "llvm")
    fn = relax.VirtualMachine(ex, tvm.cpu())["main"]
    out = fn(*[tvm.nd.array(v) for v in feeds.values()]).numpy()
    ref = ort_run(proto, feeds)[0]
    assert out.dtype == ref.dtype == np.uint8 and out.shape == ref.shape
    diff = np.abs(out.astype(int) - ref.astype(int))
    assert diff.max() <= 1 and np.mean(diff == 0) >= 0.95  # (ORT's int8 conv rounds apart)
    # the uint8 stores are vector loops: no serial loop over one short row remains
    stores = []
    for rec in ex.kernels.values():
        rec = rec[0] if isinstance(rec, tuple) else rec
        for s in walk_stmts(rec.prim_func.body):
            if isinstance(s, S.For) and isinstance(s.body, S.BufferStore) and \
                    s.body.buffer.dtype == "uint8":
                stores.append(s)
    assert stores and all(s.kind == S.ForKind.VECTORIZED for s in stores
                          if int(s.extent) == hw // 2)
    assert any(s.kind == S.ForKind.VECTORIZED for s in stores)
