"""Which tensors of an ONNX graph cannot be NaN (frontend_common.onnx_finite): what lets a
QuantizeLinear multiply by its reciprocal scale and skip the NaN select."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the rule reads ONNX protos")

from onnx import TensorProto as P  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from minitvm.frontend_common.onnx_finite import (  # noqa: E402
    finite_tensors,
    quantizes_finite,
    reciprocal_scale,
)


def _graph(nodes, inits, inputs=(("x", P.FLOAT),)):
    return helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, [4]) for n, t in inputs],
        [helper.make_tensor_value_info(nodes[-1].output[0], P.FLOAT, [4])],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])


def test_finite_from_dequantized_data_through_finite_ops():
    n = helper.make_node
    g = _graph([n("QuantizeLinear", ["x", "s"], ["q"]),
                n("DequantizeLinear", ["q", "s"], ["d"]),
                n("Conv", ["d", "wd", "b"], ["c"]),
                n("Relu", ["c"], ["r"]),
                n("Div", ["r", "zs"], ["v"]),  # (x / 0)
                n("Div", ["r", "s"], ["rs"]),  # (by a constant that is not 0)
                n("Div", ["r", "tiny"], ["rt"]),  # (1 / tiny overflows)
                n("Constant", [], ["two"], value_float=2.0),
                n("Div", ["r", "two"], ["r2"]),  # (a Constant node's value_float)
                n("Add", ["r", "v"], ["a"]),
                n("Mul", ["r", "bad"], ["m"]),  # (an initializer with a NaN)
                n("Add", ["x", "r"], ["xr"]),  # (the graph input)
                n("Gather", ["r", "ids"], ["gi"]),  # (an integer graph input)
                n("Constant", [], ["k"], value=numpy_helper.from_array(
                    np.array([1.0, np.inf], "float32"))),
                n("Mul", ["r", "k"], ["rk"]),
                n("Div", ["r", "k"], ["rk2"]),  # (a Constant holding inf)
                n("ReduceMean", ["r"], ["rm"], axes=[0]),
                n("LeakyRelu", ["r"], ["lr"], alpha=0.1),
                n("LeakyRelu", ["r"], ["lrinf"], alpha=float("inf")),  # (0 * inf)
                n("DequantizeLinear", ["q", "inf"], ["dinf"]),  # (0 * inf: a causal mask's)
                n("Relu", ["dinf"], ["rinf"]),
                n("Sigmoid", ["r"], ["out"])],
               {"s": np.array(0.1, "float32"), "wd": np.ones((4, 4, 1, 1), "float32"),
                "b": np.zeros(4, "float32"), "bad": np.array([np.nan], "float32"),
                "zs": np.array([1.0, 0.0], "float32"), "tiny": np.array(1e-40, "float32"),
                "inf": np.array(np.inf, "float32")},
               inputs=(("x", P.FLOAT), ("ids", P.INT64)))
    f = finite_tensors(g)
    assert {"q", "d", "c", "r", "rm", "out", "gi", "ids", "s", "wd", "b", "rs", "r2", "two",
            "zs", "tiny", "lr"} <= f
    assert not {"x", "v", "a", "m", "bad", "xr", "k", "rk", "rt", "rk2", "inf", "dinf",
                "rinf", "lrinf"} & f


def test_no_quantize_op_no_work():
    g = _graph([helper.make_node("Relu", ["x"], ["y"])], {})
    assert finite_tensors(g) == frozenset()


def test_quantizes_finite():
    n = helper.make_node
    finite = frozenset({"d", "xs", "xz", "ws", "w", "ys", "yz", "q"})
    assert quantizes_finite(n("QuantizeLinear", ["d", "ys", "yz"], ["o"]), finite)
    assert not quantizes_finite(n("QuantizeLinear", ["x", "ys", "yz"], ["o"]), finite)
    qconv = ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    assert quantizes_finite(n("QLinearConv", [*qconv[:5], "", *qconv[6:]], ["o"]), finite)
    assert not quantizes_finite(n("QLinearConv", qconv, ["o"]), finite)  # ("wz" unknown)
    add = n("QLinearAdd", ["q", "xs", "xz", "q", "xs", "xz", "ys", "yz"], ["o"],
            domain="com.microsoft")
    assert quantizes_finite(add, finite)
    leaky = ["q", "xs", "xz", "ys", "yz"]
    assert quantizes_finite(n("QLinearLeakyRelu", leaky, ["o"], domain="com.microsoft",
                              alpha=0.1), finite)
    assert not quantizes_finite(n("QLinearLeakyRelu", leaky, ["o"], domain="com.microsoft",
                                  alpha=float("nan")), finite)
    assert not quantizes_finite(n("Relu", ["d"], ["o"]), finite)  # (quantizes nothing)


def test_reciprocal_scale():
    r = reciprocal_scale(np.array([0.1, 2.0], "float32"))
    assert r.dtype == np.float32 and np.array_equal(r, np.float32(1) / np.float32([0.1, 2.0]))
    assert reciprocal_scale(np.array(0.0, "float32")) is None  # (x * inf: NaN at 0)
    assert reciprocal_scale(np.array(1e-45, "float32")) is None  # (subnormal: 1 / s = inf)
    assert reciprocal_scale(np.array(3, "int32")) is None
    assert reciprocal_scale(None) is None
    assert reciprocal_scale(np.array(np.inf, "float32")) == 0  # (x / inf is 0 as well)
