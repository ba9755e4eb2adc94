"""QuantizeLinear / DequantizeLinear with a zero point of 0 (a ReLU's output as
quantize_static writes it, or int8 activations): the importer adds and subtracts nothing, so
a fused kernel's requantize epilogue carries no ``+ 0.0`` / ``- 0.0``; a nonzero or runtime
zero point is still applied. Outputs match ONNX Runtime within one uint8 step.

A Conv that alone reads a dequantized activation takes its scale into its weights
(``qdq_scale_fold``): the producer's fused kernel then ends at the float values of the uint8
grid, with no multiply by the scale."""

from __future__ import annotations

import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from onnx_quant_cases import ort_run  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402


def _chain(z_mid: int, z_out: int, zp_input: bool = False, expose_mid: bool = False):
    """x -> Q/DQ (zero point 120) -> Conv 3x3 (int8 weights) -> Relu -> Q/DQ (``z_mid``)
    -> Conv 1x1 -> Q (``z_out``), uint8 activations. ``zp_input``: the middle zero point is
    a graph input (known only at run time); ``expose_mid``: the middle dequantized tensor is
    a graph output too (a second reader)."""
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
    outputs = [helper.make_tensor_value_info("out", TensorProto.UINT8, (1, 6, 10, 10))]
    if expose_mid:
        outputs.append(helper.make_tensor_value_info("mf", TensorProto.FLOAT, (1, 8, 10, 10)))
    graph = helper.make_graph(
        nodes, "qdq_zero_point", inputs, outputs,
        initializer=[onnx.numpy_helper.from_array(v, n) for n, v in arrays.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), feeds


def _ops(mod, name: str) -> int:
    """How many ``R.<name>`` calls the imported module keeps once unused bindings are gone
    (FoldConstant drops them, as the build does)."""
    mod = relax.transform.FoldConstant()(mod)
    return sum(line.count(f"R.{name}(") for line in mod.script().splitlines())


def _matches_ort(model, feeds):
    """Build, run and compare with ONNX Runtime (within one uint8 step); the executable."""
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(from_onnx(model), "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](*[tvm.nd.array(v) for v in feeds.values()])
    outs = [got.numpy()] if isinstance(got, tvm.nd.NDArray) else [o.numpy() for o in got]
    refs = ort_run(model, feeds)
    out, ref = outs[0], refs[0]
    assert out.dtype == ref.dtype == np.uint8 and out.shape == ref.shape
    diff = np.abs(out.astype(int) - ref.astype(int))
    assert diff.max() <= 1 and np.mean(diff == 0) >= 0.95
    for o, r in zip(outs[1:], refs[1:]):  # (float outputs: dequantized uint8, one step apart)
        assert o.shape == r.shape and np.abs(o - r).max() <= 0.02 * 1.001
    return ex


def test_zero_zero_points_add_and_subtract_nothing():
    """No zero point is added or subtracted: the middle and output ones are 0, and the
    input's (120) cancels, the first Conv reading ``clip(round(x / s), lo - 120, hi - 120)``
    of the input's QuantizeLinear (``qdq_scale_fold.unscaled_fake_quant``)."""
    model, feeds = _chain(0, 0)
    mod = from_onnx(model)
    assert _ops(mod, "subtract") == 0
    assert _ops(mod, "add") == 1  # the first conv's bias
    _matches_ort(model, feeds)


@pytest.mark.parametrize("z_mid,z_out", [(0, 131), (7, 0), (7, 131)])
def test_nonzero_zero_points_are_applied(z_mid, z_out):
    model, feeds = _chain(z_mid, z_out)
    mod = from_onnx(model)
    # (each Conv reads its input's QuantizeLinear unscaled: the known zero points cancel; the
    # output's is added by its quantize)
    assert _ops(mod, "subtract") == 0
    assert _ops(mod, "add") == 1 + (z_out != 0)
    _matches_ort(model, feeds)


@pytest.mark.parametrize("z_mid", [0, 9])
def test_runtime_zero_point_is_applied(z_mid):
    """A zero point that is a graph input may be anything: it is always added and
    subtracted (the input's known one cancels: see above)."""
    model, feeds = _chain(z_mid, 0, zp_input=True)
    mod = from_onnx(model)
    assert _ops(mod, "subtract") == 1
    assert _ops(mod, "add") == 2
    _matches_ort(model, feeds)


def _epilogue_multiplies(ex) -> list:
    """The fused kernels whose last op is a multiply (a dequantize's scale)."""
    return [k for k in ex.kernels if re.search(r"_multiply\d*$", k)]


@pytest.mark.parametrize("z_mid", [0, 7])
def test_conv_reads_its_input_unscaled(z_mid):
    """Both Convs are the only readers of their dequantized inputs: no kernel ends with the
    dequantize's multiply."""
    model, feeds = _chain(z_mid, 131)
    ex = _matches_ort(model, feeds)
    assert not _epilogue_multiplies(ex)


def test_shared_dequantize_keeps_its_scale():
    """The middle dequantized tensor is also a graph output: the Conv reads it scaled, and
    both outputs match ONNX Runtime."""
    model, feeds = _chain(7, 131, expose_mid=True)
    ex = _matches_ort(model, feeds)
    assert _epilogue_multiplies(ex)


def test_reads_count_subgraph_readers():
    """The reader count that gates the fold sees names read inside an If's branches (at any
    depth) and graph outputs."""
    from minitvm.frontend_common.onnx_model import tensor_reads as _reads

    def branch(name, inner=None):
        nodes = [helper.make_node("Identity", ["a"], [f"{name}_y"])]
        if inner is not None:
            nodes.append(helper.make_node("If", ["c"], [f"{name}_z"], then_branch=inner,
                                          else_branch=inner))
        return helper.make_graph(
            nodes, name, [],
            [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, (1,))])

    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("If", ["c"], ["o"], then_branch=branch("t", branch("deep")),
                              else_branch=branch("e")),
             helper.make_node("Neg", ["a"], ["n"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1,)),
                     helper.make_tensor_value_info("c", TensorProto.BOOL, ())],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, (1,)),
         helper.make_tensor_value_info("a", TensorProto.FLOAT, (1,))])
    counts = _reads(graph)
    # Neg, the graph output, both branches, and the nested If's two branches
    assert counts["a"] == 1 + 1 + 2 + 2
    assert counts["x"] == 1 and counts["c"] == 2  # (the outer If and the nested one)
