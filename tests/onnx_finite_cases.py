"""QDQ chains whose QuantizeLinear inputs can or cannot be NaN (frontend_common.onnx_finite),
for the Relay and Relax importer tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as P
from onnx import helper
from onnx_quant_cases import inits_of, vi


def qdq_finite_chain(pow2: bool = False):
    """x -> Q -> DQ -> MatMul (a DQ'd int8 weight) -> Relu -> Q -> DQ -> Div -> Q -> DQ -> Add
    -> Q: four QuantizeLinear nodes, of the graph input (may be NaN), of the Relu and of the
    Add (finite: the multiply, no NaN select) and of the Div (x / 0 may be NaN). ``pow2``: all
    scales powers of two, where ``x * (1 / s)`` is ``x / s`` exactly (numpy's value to the
    bit). The input holds NaN, +-inf and values past the 8-bit range. Returns (model, feeds)."""
    rng = np.random.default_rng(5)
    scales = ([1 / 32, 1 / 64, 1 / 8, 1 / 16, 1 / 4] if pow2
              else [0.03, 0.0123, 0.1, 0.05, 0.07])
    s = [np.array(v, "float32") for v in scales]
    arrays = dict(s1=s[0], z1=np.array(100, "uint8"), w=rng.integers(-128, 128, (24, 16))
                  .astype("int8"), sw=s[1], s2=s[2], z2=np.array(7, "uint8"),
                  d=np.array([2.0, 0.0, -3.0, 0.5] * 4, "float32"), s3=s[3],
                  z3=np.array(128, "uint8"), s4=s[4], z4=np.array(20, "uint8"))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["q1"]),
             helper.make_node("DequantizeLinear", ["q1", "s1", "z1"], ["d1"]),
             helper.make_node("DequantizeLinear", ["w", "sw"], ["dw"]),
             helper.make_node("MatMul", ["d1", "dw"], ["m"]),
             helper.make_node("Relu", ["m"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s2", "z2"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s2", "z2"], ["d2"]),
             helper.make_node("Div", ["d2", "d"], ["v"]),
             helper.make_node("QuantizeLinear", ["v", "s3", "z3"], ["q3"]),
             helper.make_node("DequantizeLinear", ["q3", "s3", "z3"], ["d3"]),
             helper.make_node("Add", ["d3", "d2"], ["a"]),
             helper.make_node("QuantizeLinear", ["a", "s4", "z4"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_finite_chain", [vi("x", P.FLOAT, [6, 24])],
                              [vi("y", P.UINT8, [6, 16])], initializer=inits_of(**arrays))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    x = (rng.standard_normal((6, 24)) * 3).astype("float32")
    x[0, :3] = [np.nan, np.inf, -np.inf]
    return model, {"x": x}


def qdq_finite_chain_reference(model, x: np.ndarray) -> np.ndarray:
    """``qdq_finite_chain``'s output by the ONNX definitions in numpy (float32, round half to
    even, a NaN quantizing to 0: onnxruntime's choice)."""
    a = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}

    def q(v, s, z):
        with np.errstate(invalid="ignore"):
            r = np.clip(np.round(v / a[s]) + np.float32(a[z]), 0, 255)
        return np.where(np.isnan(r), 0, r).astype("uint8")

    def dq(v, s, z):
        return ((v.astype("float32") - np.float32(a[z])) * a[s]).astype("float32")

    d1 = dq(q(x, "s1", "z1"), "s1", "z1")
    r = np.maximum(d1 @ (a["w"].astype("float32") * a["sw"]), 0).astype("float32")
    d2 = dq(q(r, "s2", "z2"), "s2", "z2")
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (d2 / a["d"]).astype("float32")
    d3 = dq(q(v, "s3", "z3"), "s3", "z3")
    return q((d3 + d2).astype("float32"), "s4", "z4")
