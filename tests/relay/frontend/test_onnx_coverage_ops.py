"""Relay ONNX converters added for the node-test coverage and for exported real-world models
(QuantizeLinear / DequantizeLinear incl. per-channel and blocked, GroupNormalization,
LpNormalization, MeanVarianceNormalization, CumProd, Resize by fractional scales) against ONNX
Runtime on random inputs, compiled with relay.build."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from minitvm import relay, transform  # noqa: E402
from minitvm.relay.frontend.onnx import from_onnx  # noqa: E402
from minitvm.runtime import cpu  # noqa: E402
from minitvm.runtime.graph_executor import GraphModule  # noqa: E402

rng = np.random.default_rng(11)
CODE = {np.dtype("float32"): TensorProto.FLOAT, np.dtype("int8"): TensorProto.INT8,
        np.dtype("uint8"): TensorProto.UINT8, np.dtype("int32"): TensorProto.INT32}


def case(op, inputs: dict, attrs=None, inits=None, opset=21):
    """(one-node model, its inputs)."""
    inits = inits or {}
    node = helper.make_node(op, list(inputs) + list(inits), ["y"], **(attrs or {}))
    g = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, CODE[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info("y")],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), inputs


def f32(*shape):
    return rng.standard_normal(shape).astype("float32")


CASES = {
    "quantize_per_tensor_int8": lambda: case(
        "QuantizeLinear", {"x": f32(3, 5) * 10},
        inits={"s": np.array(0.07, "float32"), "z": np.array(-4, "int8")}),
    "quantize_per_channel_uint8": lambda: case(
        "QuantizeLinear", {"x": f32(2, 3, 4) * 20},
        inits={"s": np.array([0.1, 0.2, 0.3], "float32"), "z": np.array([3, 120, 250], "uint8")}),
    "quantize_blocked": lambda: case(
        "QuantizeLinear", {"x": f32(2, 6) * 10}, {"axis": 1, "block_size": 4},
        inits={"s": np.array([[0.1, 0.3], [0.2, 0.05]], "float32"),
               "z": np.array([[1, -2], [0, 5]], "int8")}),
    "dequantize_per_channel": lambda: case(
        "DequantizeLinear", {"x": rng.integers(0, 256, (3, 4)).astype("uint8")}, {"axis": 0},
        inits={"s": np.array([0.1, 0.2, 0.3], "float32"), "z": np.array([1, 128, 9], "uint8")}),
    "dequantize_int32": lambda: case(
        "DequantizeLinear", {"x": rng.integers(-10**6, 10**6, (5,)).astype("int32")},
        inits={"s": np.array(0.001, "float32")}),
    "group_norm": lambda: case("GroupNormalization", {"x": f32(2, 6, 3, 3)},
                               {"num_groups": 2}, inits={"s": f32(6), "b": f32(6)}),
    "lp_norm_l2": lambda: case("LpNormalization", {"x": f32(3, 4)}, {"axis": 1}),
    "mvn": lambda: case("MeanVarianceNormalization", {"x": f32(2, 3, 4, 4)}),
    "reduce_min_empty_axis": lambda: case("ReduceMin", {"x": f32(2, 0, 4)}, {"keepdims": 0},
                                          inits={"a": np.array([1])}),
    "resize_downsample_linear": lambda: case(
        "Resize", {"x": f32(1, 2, 4, 5)}, {"mode": "linear"},
        inits={"r": np.zeros(0, "float32"), "s": np.array([1, 1, 0.6, 0.6], "float32")}),
}


def run(m, feeds):
    """Import, build at opt_level 3 and run: the first output."""
    mod, params = from_onnx(m, shape={k: v.shape for k, v in feeds.items()})
    with transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    gm = GraphModule(lib["default"](cpu()))
    for k, v in feeds.items():
        gm.set_input(k, v)
    gm.run()
    return gm.get_output(0).numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_converter_matches_onnxruntime(name):
    m, feeds = CASES[name]()
    ref = ort.InferenceSession(m.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = run(m, feeds)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.dtype, ref.dtype)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_cumprod_reverse_exclusive_matches_numpy():
    """CumProd (opset 26; ONNX Runtime does not run it yet) against numpy."""
    x = f32(3, 4)
    m, feeds = case("CumProd", {"x": x}, {"reverse": 1, "exclusive": 1},
                    inits={"a": np.array(1)}, opset=26)
    flipped = np.flip(x, 1)
    excl = np.concatenate([np.ones((3, 1), "float32"), np.cumprod(flipped, 1)[:, :-1]], 1)
    np.testing.assert_allclose(run(m, feeds), np.flip(excl, 1), rtol=1e-5, atol=1e-6)
