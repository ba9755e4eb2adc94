"""A QDQ Conv1d chain as onnxruntime's quantizer writes one (Q/DQ around each activation, int8
weights and int32 biases dequantized, a Relu after each conv), which both importers' tests of
SinkUnitSqueeze build and compare with ORT. Needs onnx (the calling test skips first)."""

from __future__ import annotations

import numpy as np

STEP = np.float32(0.05)  # the activations' scale: one step of the output's grid


def qdq_conv1d_chain(length: int = 24):
    """(ONNX model of two QDQ Conv1d + Relu layers over ``[1, 6, length]``, an input)."""
    from onnx import TensorProto as P
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    n = helper.make_node
    nodes = []
    inits = {"s": STEP, "z": np.array(3, "int8"), "z0": np.array(0, "int8"),
             "zi": np.array(0, "int32")}

    def qdq(name):
        nodes.extend([n("QuantizeLinear", [name, "s", "z"], [name + "_q"]),
                      n("DequantizeLinear", [name + "_q", "s", "z"], [name + "_d"])])
        return name + "_d"

    h = qdq("x")
    for k, (cin, cout) in enumerate([(6, 16), (16, 16)]):
        inits[f"w{k}"] = rng.integers(-90, 90, (cout, cin, 3)).astype("int8")
        inits[f"ws{k}"] = np.float32(0.01)
        inits[f"b{k}"] = rng.integers(-300, 300, cout).astype("int32")
        inits[f"bs{k}"] = STEP * np.float32(0.01)  # (what lets ORT fuse a QLinearConv)
        nodes += [n("DequantizeLinear", [f"w{k}", f"ws{k}", "z0"], [f"wd{k}"]),
                  n("DequantizeLinear", [f"b{k}", f"bs{k}", "zi"], [f"bd{k}"]),
                  n("Conv", [h, f"wd{k}", f"bd{k}"], [f"c{k}"], pads=[1, 1],
                    kernel_shape=[3])]
        h = qdq(f"c{k}")
        nodes.append(n("Relu", [h], [f"r{k}"]))
        h = qdq(f"r{k}")
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", P.FLOAT, [1, 6, length])],
        [helper.make_tensor_value_info(h, P.FLOAT, [1, 16, length])],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return model, rng.standard_normal((1, 6, length)).astype("float32")


def ort_output(model, x):
    """onnxruntime's output, its 8-bit products exact without VNNI too
    (``ort_int8_reference``)."""
    from ort_int8_reference import ort_run

    return ort_run(model, {"x": x})[0]


def steps_from(got, want) -> np.ndarray:
    """|got - want| in steps of the output grid."""
    return np.abs(got.astype("float64") - want) / STEP
