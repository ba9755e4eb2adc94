"""QuantizeLinear / DequantizeLinear with a zero point of 0 (a ReLU's output as
quantize_static writes it, or int8 activations): the importer adds and subtracts nothing, so
a fused kernel's requantize epilogue carries no ``+ 0.0`` / ``- 0.0``; a nonzero or runtime
zero point is still applied. Outputs match ONNX Runtime within one uint8 step."""

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


def _chain(z_mid: int, z_out: int, zp_input: bool = False):
    """x -> Q/DQ (zero point 120) -> Conv 3x3 (int8 weights) -> Relu -> Q/DQ (``z_mid``)
    -> Conv 1x1 -> Q (``z_out``), uint8 activations. ``zp_input``: the middle zero point is
    a graph input (known only at run time)."""
    rng = np.random.default_rng(3)
    arrays = dict(
        s_in=np.array(0.03, "float32"), z_in=np.array(120, "uint8"),
        w1=rng.integers(-127, 128, (8, 4, 3, 3)).astype("int8"),
        w1_s=np.array(0.004, "float32"), w1_z=np.array(0, "int8"),
        b1=rng.standard_normal(8).astype("float32") * 0.1,
        s_mid=np.array(0.02, "float32"),
        w2=rng.integers(-127, 128, (6, 8, 1, 1)).astype("int8"),
        w2_s=np.array(0.005, "float32"), w2_z=np.array(0, "int8"),
        s_out=np.array(0.05, "float32"), z_out=np.array(z_out, "uint8"))
    if not zp_input:
        arrays["z_mid"] = np.array(z_mid, "uint8")
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_in", "z_in"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "s_in", "z_in"], ["xf"]),
        helper.make_node("DequantizeLinear", ["w1", "w1_s", "w1_z"], ["w1f"]),
        helper.make_node("Conv", ["xf", "w1f", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("QuantizeLinear", ["r1", "s_mid", "z_mid"], ["mq"]),
        helper.make_node("DequantizeLinear", ["mq", "s_mid", "z_mid"], ["mf"]),
        helper.make_node("DequantizeLinear", ["w2", "w2_s", "w2_z"], ["w2f"]),
        helper.make_node("Conv", ["mf", "w2f"], ["c2"]),
        helper.make_node("QuantizeLinear", ["c2", "s_out", "z_out"], ["out"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 4, 10, 10))]
    feeds = {"x": rng.standard_normal((1, 4, 10, 10)).astype("float32") * 2}
    if zp_input:
        inputs.append(helper.make_tensor_value_info("z_mid", TensorProto.UINT8, ()))
        feeds["z_mid"] = np.array(z_mid, "uint8")
    graph = helper.make_graph(
        nodes, "qdq_zero_point", inputs,
        [helper.make_tensor_value_info("out", TensorProto.UINT8, (1, 6, 10, 10))],
        initializer=[onnx.numpy_helper.from_array(v, n) for n, v in arrays.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), feeds


def _ops(mod, name: str) -> int:
    return sum(line.count(f"R.{name}(") for line in mod.script().splitlines())


def _matches_ort(model, feeds):
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(from_onnx(model), "llvm")
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](
        *[tvm.nd.array(v) for v in feeds.values()]).numpy()
    ref = ort_run(model, feeds)[0]
    assert out.dtype == ref.dtype == np.uint8 and out.shape == ref.shape
    diff = np.abs(out.astype(int) - ref.astype(int))
    assert diff.max() <= 1 and np.mean(diff == 0) >= 0.95


def test_zero_zero_points_add_and_subtract_nothing():
    """Only the input's zero point (120) is added (its quantize) and subtracted (its
    dequantize); the middle and output zero points (0) leave no add or subtract."""
    model, feeds = _chain(0, 0)
    mod = from_onnx(model)
    assert _ops(mod, "subtract") == 1
    assert _ops(mod, "add") == 2  # the input's zero point and the first conv's bias
    _matches_ort(model, feeds)


@pytest.mark.parametrize("z_mid,z_out", [(0, 131), (7, 0), (7, 131)])
def test_nonzero_zero_points_are_applied(z_mid, z_out):
    model, feeds = _chain(z_mid, z_out)
    mod = from_onnx(model)
    assert _ops(mod, "subtract") == 1 + (z_mid != 0)
    assert _ops(mod, "add") == 2 + (z_mid != 0) + (z_out != 0)
    _matches_ort(model, feeds)


@pytest.mark.parametrize("z_mid", [0, 9])
def test_runtime_zero_point_is_applied(z_mid):
    """A zero point that is a graph input may be anything: it is always added and
    subtracted."""
    model, feeds = _chain(z_mid, 0, zp_input=True)
    mod = from_onnx(model)
    assert _ops(mod, "subtract") == 2
    assert _ops(mod, "add") == 3
    _matches_ort(model, feeds)
