"""A QDQ Conv whose input is quantized in the graph (a model's first Conv: QuantizeLinear ->
DequantizeLinear -> Conv) through Relax's importer: the Conv reads ``clip(round(x / s), lo - z,
hi - z)`` of the QuantizeLinear's own float value, its scale folded into the weight
(``qdq_scale_fold.unscaled_fake_quant``), as Relay's DequantizeLinear does: no 8-bit cast and
back, no zero point added and subtracted. The values are the ones ``astype(q) - z`` gives (a
NaN input too: to ``lo - z``); the output matches ONNX Runtime within a quantization step."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_quant_cases import ort_run  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402


def _first_conv(x_dtype: str, x_zp, nan: bool = False):
    """Q / DQ of the float input (scalar scale, zero point ``x_zp`` of ``x_dtype``; None: no
    zero point, uint8), a 3 -> 16 3x3 Conv over a DequantizeLinear'd int8 weight, float
    output. (model, feeds)."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((1, 3, 12, 12)) * 3).astype("float32")
    if nan:
        x[0, 1, 2, 3] = np.nan
    arrays = dict(x_s=np.float32(0.03), w=rng.integers(-127, 128, (16, 3, 3, 3)).astype("int8"),
                  w_s=np.float32(0.004))
    q_in = ["x", "x_s"]
    if x_zp is not None:
        arrays["x_zp"] = np.array(x_zp, x_dtype)
        q_in.append("x_zp")
    nodes = [helper.make_node("QuantizeLinear", q_in, ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", *q_in[1:]], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "w_s"], ["wf"]),
             helper.make_node("Conv", ["xf", "wf"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes, "first_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in arrays.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"x": x}


def _eight_bit_casts(mod) -> int:
    n = 0
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            v = b.value
            n += getattr(getattr(v, "op", None), "name", "") == "relax.astype" and \
                v.attrs.dtype in ("uint8", "int8")
    return n


@pytest.mark.parametrize("x_dtype, x_zp", [("uint8", 124), ("int8", -3), ("uint8", None),
                                           ("int8", 0)])
def test_first_conv_reads_the_unscaled_fake_quant(x_dtype, x_zp):
    model, feeds = _first_conv(x_dtype, x_zp)
    mod = relax.transform.DeadCodeElimination()(from_onnx(model, shape_dict={"x": (1, 3, 12,
                                                                                   12)}))
    assert _eight_bit_casts(mod) == 0  # (the QuantizeLinear's 8-bit output is not read)
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(feeds["x"])).numpy()
    want = ort_run(model, feeds)[0]
    # (a float32 conv of the same integers; the sums round apart from ORT's in the last bits)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_nan_input_quantizes_to_the_lowest():
    """A NaN in the (not provably finite) graph input quantizes to the dtype's lowest value,
    ``lo - z`` once shifted, as onnxruntime's QuantizeLinear does."""
    model, feeds = _first_conv("uint8", 124, nan=True)
    mod = relax.transform.DeadCodeElimination()(from_onnx(model, shape_dict={"x": (1, 3, 12,
                                                                                   12)}))
    assert _eight_bit_casts(mod) == 0
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(feeds["x"])).numpy()
    want = ort_run(model, feeds)[0]
    assert np.isfinite(got).all() and np.isfinite(want).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
