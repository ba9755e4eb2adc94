"""Quantized attention products for the Relay and Relax importer tests: the batch matmul of two
8-bit activations one node at a time (QLinearMatMul, or a QDQ MatMul of two DequantizeLinear'd
QuantizeLinear outputs, the second one a Transpose's as Q @ K^T is), and a small PyTorch
attention layer quantized by onnxruntime (quantize_static, QDQ or QOperator). Needs onnx,
onnxruntime and (for the layer) torch; the importing test skips first."""

from __future__ import annotations

import warnings

import numpy as np
from onnx import TensorProto as P
from onnx import helper, numpy_helper

# (A's dtype, its zero point, B's dtype, its zero point): the encoder's int8 Q @ K^T (zero
# points near 0), its int8 P @ V (P's zero point -128), qdq_u8's uint8 ones, none at all
PRODUCT_CASES = [("int8", 3, "int8", -5), ("int8", -128, "int8", 7), ("uint8", 0, "uint8", 131),
                 ("uint8", 120, "uint8", 128), ("uint8", None, "uint8", None)]
TYPES = {"uint8": P.UINT8, "int8": P.INT8}


def _model(nodes, inputs, out_dtype: str, inits):
    graph = helper.make_graph(nodes, "attention", inputs,
                              [helper.make_tensor_value_info("y", TYPES[out_dtype], None)],
                              initializer=[numpy_helper.from_array(np.asarray(v), k)
                                           for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def qlinear_product(a_dtype: str, a_zp, b_dtype: str, b_zp, a_shape=(1, 2, 9, 12), n: int = 10,
                    b_batch=None, seed: int = 0):
    """QLinearMatMul of two 8-bit graph inputs ``a`` (``a_shape``) and ``b`` (``[..., K, n]``;
    its batch axes ``b_batch``, A's by default), requantized to A's dtype. (model, feeds)."""
    rng = np.random.default_rng(seed)
    k = a_shape[-1]
    b_shape = [*(a_shape[:-2] if b_batch is None else b_batch), k, n]

    def q8(dt, shape):
        lo = 0 if dt == "uint8" else -128
        return rng.integers(lo, lo + 256, shape).astype(dt)

    a, b = q8(a_dtype, a_shape), q8(b_dtype, b_shape)
    inits = dict(a_s=np.float32(0.03), a_zp=np.array(a_zp or 0, a_dtype), b_s=np.float32(0.02),
                 b_zp=np.array(b_zp or 0, b_dtype), y_s=np.float32(0.0006 * k),
                 y_zp=np.array(128 if a_dtype == "uint8" else 0, a_dtype))
    node = helper.make_node("QLinearMatMul", ["a", "a_s", "a_zp", "b", "b_s", "b_zp", "y_s",
                                              "y_zp"], ["y"])
    ins = [helper.make_tensor_value_info("a", TYPES[a_dtype], list(a_shape)),
           helper.make_tensor_value_info("b", TYPES[b_dtype], b_shape)]
    return _model([node], ins, a_dtype, inits), {"a": a, "b": b}


def qdq_product(a_dtype: str, a_zp, b_dtype: str, b_zp, a_shape=(1, 2, 9, 12), n: int = 10,
                seed: int = 0):
    """A QDQ MatMul: float inputs ``q`` (``a_shape``) and ``k`` (``[..., n, K]``, transposed in
    the graph as K^T is), each QuantizeLinear'd and DequantizeLinear'd (scalar scales, the
    given zero points; None: no zero point input, uint8), the product QuantizeLinear'd to A's
    dtype. (model, feeds)."""
    rng = np.random.default_rng(seed)
    k = a_shape[-1]
    nd = len(a_shape)
    perm = [*range(nd - 2), nd - 1, nd - 2]
    feeds = {"q": (rng.standard_normal(a_shape) * 2).astype("float32"),
             "k": (rng.standard_normal([*a_shape[:-2], n, k]) * 2).astype("float32")}
    inits = dict(a_s=np.float32(0.03), b_s=np.float32(0.025), y_s=np.float32(0.004 * k))
    a_in, b_in = ["q", "a_s"], ["kt", "b_s"]
    if a_zp is not None:
        inits["a_zp"] = np.array(a_zp, a_dtype)
        a_in.append("a_zp")
    if b_zp is not None:
        inits["b_zp"] = np.array(b_zp, b_dtype)
        b_in.append("b_zp")
    out_dtype = a_dtype if a_zp is not None else "uint8"
    inits["y_zp"] = np.array(0 if out_dtype == "int8" else 128, out_dtype)
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=perm),
             helper.make_node("QuantizeLinear", a_in, ["qa"]),
             helper.make_node("DequantizeLinear", ["qa", *a_in[1:]], ["fa"]),
             helper.make_node("QuantizeLinear", b_in, ["qb"]),
             helper.make_node("DequantizeLinear", ["qb", *b_in[1:]], ["fb"]),
             helper.make_node("MatMul", ["fa", "fb"], ["p"]),
             helper.make_node("QuantizeLinear", ["p", "y_s", "y_zp"], ["y"])]
    ins = [helper.make_tensor_value_info("q", P.FLOAT, list(a_shape)),
           helper.make_tensor_value_info("k", P.FLOAT, list(feeds["k"].shape))]
    return _model(nodes, ins, out_dtype, inits), feeds


def attention_layer(tmp_path, fmt: str, activation: str, seq: int = 16, hidden: int = 32,
                    heads: int = 2):
    """A small attention layer (QKV projection, softmax(Q K^T / sqrt(d)) V, output projection)
    exported from PyTorch and quantized by onnxruntime's quantize_static (``fmt`` "QDQ" or
    "QOperator", ``activation`` "QInt8" or "QUInt8", int8 weights). (model, feeds)."""
    import onnx
    import torch
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(hidden, 3 * hidden)
            self.out = torch.nn.Linear(hidden, hidden)

        def forward(self, x):
            b, s, _ = x.shape
            d = hidden // heads
            q, k, v = self.qkv(x).reshape(b, s, 3, heads, d).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) * d ** -0.5, dim=-1)
            return self.out((att @ v).transpose(1, 2).reshape(b, s, hidden))

    shape = (1, seq, hidden)

    class Batches(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.it = iter([{"x": rng.standard_normal(shape).astype("float32")}
                            for _ in range(4)])

        def get_next(self):
            return next(self.it, None)

    torch.manual_seed(0)
    f32, q = str(tmp_path / "f32.onnx"), str(tmp_path / "q.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Layer().eval(), (torch.randn(*shape),), f32, opset_version=17,
                          input_names=["x"], dynamo=False)
        quantize_static(f32, q, Batches(), quant_format=getattr(QuantFormat, fmt),
                        activation_type=getattr(QuantType, activation),
                        weight_type=QuantType.QInt8)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    return onnx.load(q), {"x": x}


def output_step(model) -> float:
    """The scale of the DequantizeLinear that makes the model's output (0 when none does)."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.output[0] == model.graph.output[0].name and node.op_type == "DequantizeLinear":
            return float(np.max(inits[node.input[1]]))
    return 0.0
