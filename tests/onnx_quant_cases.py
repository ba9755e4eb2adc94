"""Quantized ONNX models as a new user makes them, shared by the Relay and Relax importer tests:
a small convnet and an MLP from PyTorch, exported to ONNX and quantized by onnxruntime
(``quantize_static`` in QDQ or QOperator format on a few random calibration batches, or
``quantize_dynamic``), a hand-made QDQ conv over a constant int8 weight, and onnxruntime's run
of a model. Needs torch, onnx and onnxruntime (the
importing test skips first)."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import ort_int8_reference
import torch
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_dynamic,
    quantize_static,
)


class CalibrationBatches(CalibrationDataReader):
    """``n`` random float32 batches of ``shape`` for input ``x``."""

    def __init__(self, shape, n: int = 4):
        rng = np.random.default_rng(1)
        self.it = iter([{"x": rng.standard_normal(shape).astype("float32")} for _ in range(n)])

    def get_next(self):
        return next(self.it, None)


def _convnet():
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU6(),      # depthwise
        nn.Conv2d(16, 24, 1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(24, 24, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(24, 10))


def _mlp():
    nn = torch.nn
    return nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32))


MODELS = {"convnet": (_convnet, (1, 3, 16, 16)), "mlp": (_mlp, (8, 32))}


def quantized(tmp_path, name: str, mode: str, activation=QuantType.QInt8,
              dynamic_batch: bool = False):
    """(model ``name`` quantized by ``mode``: "static" (QDQ), "qoperator" or "dynamic", its
    input shape); ``activation`` is the static modes' activation type, ``dynamic_batch`` makes
    the batch axis of input ``x`` symbolic."""
    make, shape = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    f32, q = str(tmp_path / "f32.onnx"), str(tmp_path / "q.onnx")
    axes = {"x": {0: "batch"}} if dynamic_batch else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(*shape),), f32, opset_version=17,
                          input_names=["x"], dynamic_axes=axes, dynamo=False)
        if mode in ("static", "qoperator"):
            fmt = QuantFormat.QDQ if mode == "static" else QuantFormat.QOperator
            quantize_static(f32, q, CalibrationBatches(shape), quant_format=fmt,
                            activation_type=activation, weight_type=QuantType.QInt8)
        else:
            quantize_dynamic(f32, q, weight_type=QuantType.QInt8)
    return onnx.load(q), shape


def ort_run(proto, feeds):
    """onnxruntime's outputs of ``proto`` (a ModelProto) on ``feeds``, its 8-bit products exact
    on hosts without VNNI too (``ort_int8_reference``)."""
    return ort_int8_reference.ort_run(proto, feeds)


# the QDQ conv cases (weight zero point, per-channel scales, groups): whether the importer's
# conv reads the int8 weight itself ("int8") or its dequantized float32 values
QDQ_CONV_CASES = [(None, True, 1, "int8"),      # a scale per output channel
                  (0, False, 1, "int8"),        # one scale, a zero point of 0
                  (2, False, 1, "zp"),          # a nonzero zero point: int8 on VNNI
                  #                                   (window sums), else float32
                  (None, True, 2, "float32")]   # grouped


def qdq_conv(w_zp, per_channel: bool, groups: int, cin: int = 16, cout: int = 32,
             rank: int = 2):
    """A QDQ conv as quantize_static writes one: QuantizeLinear / DequantizeLinear of a uint8
    activation, DequantizeLinear of a constant int8 weight (axis 0), Conv (``rank``-D: 1, an
    audio model's Conv1d, over 23 samples, stride 2), QuantizeLinear. Returns (model,
    feeds)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(3 + groups)
    x = rng.standard_normal((1, cin, 10, 10) if rank == 2 else (1, cin, 23)).astype("float32")
    w = rng.integers(-127, 128, (cout, cin // groups) + (3,) * rank).astype("int8")
    w_s = (rng.random(cout) * 0.01 + 0.002).astype("float32") if per_channel else \
        np.array(0.005, "float32")
    arrays = dict(x_s=np.array(0.02, "float32"), x_zp=np.array(128, "uint8"), w=w, w_s=w_s,
                  y_s=np.array(0.05, "float32"), y_zp=np.array(128, "uint8"))
    if w_zp is not None:
        arrays["w_zp"] = np.array(w_zp, "int8")
    w_in = ["w", "w_s"] + (["w_zp"] if w_zp is not None else [])
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_zp"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "x_s", "x_zp"], ["xf"]),
             helper.make_node("DequantizeLinear", w_in, ["wf"], axis=0),
             helper.make_node("Conv", ["xf", "wf"], ["yf"], pads=[1] * 2 * rank, group=groups,
                              strides=[1] * rank if rank == 2 else [2]),
             helper.make_node("QuantizeLinear", ["yf", "y_s", "y_zp"], ["y"])]
    inits = [onnx.numpy_helper.from_array(v, n) for n, v in arrays.items()]
    graph = helper.make_graph(
        nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), {"x": x}


# the QDQ depthwise conv cases (activation dtype, its zero point, stride): what the conv reads,
# the 8-bit activation as it is ("as_is"), shifted into uint8 ("shift"), or dequantized
# ("float32") (``onnx_quant.depthwise_data``)
QDQ_DEPTHWISE_CASES = [("uint8", 0, 1, "as_is"),    # a ReLU's uint8 output
                       ("int8", -128, 2, "shift"),  # a ReLU's int8 output, stride 2
                       ("uint8", 0, 2, "as_is"),
                       ("int8", 0, 1, "as_is"),     # int8, zero point 0: both signs
                       ("uint8", 131, 1, "float32")]  # another zero point: dequantized


def qdq_depthwise(x_dtype: str, x_zp: int, stride: int, c: int = 24, size: int = 13):
    """A depthwise QDQ conv as quantize_static writes one: QuantizeLinear / DequantizeLinear
    of an 8-bit activation (a ReLU's, so its range starts at the zero point's value but the
    values cover the grid), DequantizeLinear of a constant int8 weight with a scale per
    channel, Conv (group = channels, a bias), QuantizeLinear to uint8. Returns (model,
    feeds)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(7 + stride)
    x = (rng.standard_normal((1, c, size, size)) * 2).astype("float32")
    w = rng.integers(-127, 128, (c, 1, 3, 3)).astype("int8")
    arrays = dict(x_s=np.array(0.02, "float32"), x_zp=np.array(x_zp, x_dtype), w=w,
                  w_s=(rng.random(c) * 0.01 + 0.002).astype("float32"),
                  b=(rng.standard_normal(c) * 0.5).astype("float32"),
                  y_s=np.array(0.05, "float32"), y_zp=np.array(128, "uint8"))
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_zp"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "x_s", "x_zp"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "w_s"], ["wf"], axis=0),
             helper.make_node("Conv", ["xf", "wf", "b"], ["yf"], pads=[1, 1, 1, 1],
                              strides=[stride, stride], group=c),
             helper.make_node("QuantizeLinear", ["yf", "y_s", "y_zp"], ["y"])]
    inits = [onnx.numpy_helper.from_array(v, n) for n, v in arrays.items()]
    graph = helper.make_graph(
        nodes, "qdq_depthwise", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), {"x": x}


# ---------------------------------------------------------------- the integer ops one node at a time
def single(op: str, inputs, outputs, inits, domain: str = "", **attrs):
    """A model of one ``op`` node: ``inputs`` are value infos (graph inputs) or names of
    ``inits``; a ``domain`` op (com.microsoft) imports its opset too."""
    from onnx import helper

    node = helper.make_node(op, [i.name if hasattr(i, "name") else i for i in inputs],
                            [o.name for o in outputs], domain=domain, **attrs)
    graph = helper.make_graph([node], op, [i for i in inputs if hasattr(i, "name")], outputs,
                              initializer=inits)
    opsets = [helper.make_opsetid("", 13)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets)


def vi(name: str, dtype, shape):
    """A value info; ``dtype`` an onnx.TensorProto element type."""
    return onnx.helper.make_tensor_value_info(name, dtype, shape)


def inits_of(**arrays) -> list:
    """Initializers named by the keywords."""
    return [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in arrays.items()]


def q8(rng, shape, dtype: str = "uint8"):
    """Random integers over the whole range of ``dtype`` (uint8 or int8)."""
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    return rng.integers(lo, hi, shape).astype(dtype)


def quantize_non_finite(dtype: str):
    """QuantizeLinear to ``dtype`` (int8 or uint8, zero point 3) of NaN, +-inf and finite
    values (a NaN quantizes to the dtype's lowest value in onnxruntime: what a quantized causal
    mask's softmax gives). Returns (model, feeds)."""
    from onnx import TensorProto as P

    t = P.INT8 if dtype == "int8" else P.UINT8
    x = np.array([np.nan, np.inf, -np.inf, 1.0, -1.0, 30.0, -30.0, 0.26] * 5, "float32")
    model = single("QuantizeLinear", [vi("x", P.FLOAT, list(x.shape)), "s", "z"],
                   [vi("y", t, None)], inits_of(s=np.array(0.1, "float32"),
                                                z=np.array(3, dtype)))
    model.ir_version = 8
    return model, {"x": x}


def dynamic_quantize_linear(fill: str):
    """DynamicQuantizeLinear of a [4, 33] float input: "random", "positive" or "zeros"."""
    from onnx import TensorProto as P

    rng = np.random.default_rng(3)
    x = {"random": rng.standard_normal((4, 33)), "positive": rng.random((4, 33)) + 0.5,
         "zeros": np.zeros((4, 33))}[fill].astype("float32")
    model = single("DynamicQuantizeLinear", [vi("x", P.FLOAT, [4, 33])],
                   [vi("y", P.UINT8, [4, 33]), vi("s", P.FLOAT, []), vi("z", P.UINT8, [])], [])
    return model, {"x": x}


def qlinear_conv_with_bias(per_channel: bool):
    """A grouped, strided, unevenly padded QLinearConv with an int32 bias."""
    from onnx import TensorProto as P

    rng = np.random.default_rng(7)
    x = q8(rng, (1, 6, 8, 8))
    w_s = (rng.random(4) * 0.01 + 0.002).astype("float32") if per_channel else \
        np.array(0.005, "float32")
    inits = inits_of(x_s=np.array(0.02, "float32"), x_zp=np.array(120, "uint8"),
                     w=q8(rng, (4, 3, 3, 3), "int8"), w_s=w_s,
                     w_zp=np.zeros(4 if per_channel else (), "int8"),
                     y_s=np.array(0.05, "float32"), y_zp=np.array(3, "uint8"),
                     b=rng.integers(-2000, 2000, 4).astype("int32"))
    model = single("QLinearConv", [vi("x", P.UINT8, [1, 6, 8, 8]), "x_s", "x_zp", "w", "w_s",
                                   "w_zp", "y_s", "y_zp", "b"],
                   [vi("y", P.UINT8, None)], inits, pads=[1, 0, 1, 0], group=2, strides=[1, 2])
    return model, {"x": x}


def qlinear_matmul_per_column_scale():
    """An int8 QLinearMatMul of a 3-D input and a constant weight with a scale per column."""
    from onnx import TensorProto as P

    rng = np.random.default_rng(8)
    a = q8(rng, (3, 5, 40), "int8")
    inits = inits_of(a_s=np.array(0.03, "float32"), a_zp=np.array(2, "int8"),
                     b=q8(rng, (40, 6), "int8"), b_s=(rng.random(6) * 0.01).astype("float32"),
                     b_zp=np.zeros(6, "int8"), y_s=np.array(0.2, "float32"),
                     y_zp=np.array(1, "int8"))
    model = single("QLinearMatMul", [vi("a", P.INT8, [3, 5, 40]), "a_s", "a_zp", "b", "b_s",
                                     "b_zp", "y_s", "y_zp"], [vi("y", P.INT8, None)], inits)
    return model, {"a": a}


def qlinear_matmul_runtime_parameters():
    """QLinearMatMul whose weights, scales and zero points all come at run time."""
    from onnx import TensorProto as P

    rng = np.random.default_rng(11)
    feeds = {"a": q8(rng, (2, 4)), "a_s": np.array([0.05], "float32"),
             "a_zp": np.array([113], "uint8"), "b": q8(rng, (4, 3)),
             "b_s": np.array([0.003], "float32"), "b_zp": np.array([114], "uint8"),
             "y_s": np.array([0.0007], "float32"), "y_zp": np.array([118], "uint8")}
    types = {"a_s": P.FLOAT, "b_s": P.FLOAT, "y_s": P.FLOAT}
    inputs = [vi(n, types.get(n, P.UINT8), list(v.shape)) for n, v in feeds.items()]
    return single("QLinearMatMul", inputs, [vi("y", P.UINT8, [2, 3])], []), feeds


QPARAMS = dict(s1=np.array(0.03, "float32"), z1=np.array(100, "uint8"),
               s2=np.array(0.02, "float32"), z2=np.array(140, "uint8"),
               sy=np.array(0.04, "float32"), zy=np.array(128, "uint8"))
# com.microsoft's elementwise QLinear ops: (op, number of quantized inputs, attributes)
QLINEAR_ELEMENTWISE = [
    ("QLinearAdd", 2, {}), ("QLinearMul", 2, {}), ("QLinearGlobalAveragePool", 1, {}),
    ("QLinearAveragePool", 1, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("QLinearSigmoid", 1, {}), ("QLinearLeakyRelu", 1, {"alpha": 0.1})]


def qlinear_elementwise(op: str, n_in: int, attrs: dict):
    """One of ``QLINEAR_ELEMENTWISE`` over uint8 [1, 4, 6, 6] inputs."""
    from onnx import TensorProto as P

    rng = np.random.default_rng(9)
    feeds = {f"x{i}": q8(rng, (1, 4, 6, 6)) for i in range(n_in)}
    inputs = []
    for i in range(n_in):
        inputs += [vi(f"x{i}", P.UINT8, [1, 4, 6, 6]), f"s{i + 1}", f"z{i + 1}"]
    model = single(op, inputs + ["sy", "zy"], [vi("y", P.UINT8, None)], inits_of(**QPARAMS),
                   domain="com.microsoft", **attrs)
    return model, feeds


def qlinear_concat_and_qgemm():
    """[(model, feeds)] of com.microsoft's QLinearConcat and QGemm (transposed weight, alpha,
    an int32 bias)."""
    from onnx import TensorProto as P

    rng = np.random.default_rng(10)
    x0, x1 = q8(rng, (2, 3)), q8(rng, (2, 5))
    concat = single("QLinearConcat", ["sy", "zy", vi("x0", P.UINT8, [2, 3]), "s1", "z1",
                                      vi("x1", P.UINT8, [2, 5]), "s2", "z2"],
                    [vi("y", P.UINT8, None)], inits_of(**QPARAMS), domain="com.microsoft",
                    axis=1)
    a = q8(rng, (4, 16))
    inits = inits_of(**QPARAMS, b=q8(rng, (8, 16), "int8"), bz=np.array(0, "int8"),
                     c=rng.integers(-500, 500, 8).astype("int32"))
    qgemm = single("QGemm", [vi("a", P.UINT8, [4, 16]), "s1", "z1", "b", "s2", "bz", "c", "sy",
                             "zy"], [vi("y", P.UINT8, None)], inits, domain="com.microsoft",
                   transB=1, alpha=0.5)
    return [(concat, {"x0": x0, "x1": x1}), (qgemm, {"a": a})]


# the integer convs of int_conv_model: (input channels, output channels, plane, kernel, stride,
# dilation, x zero point)
VNNI_CONV_CASES = [
    (16, 32, 8, 3, 1, 1, 100),
    (18, 16, 9, 3, 2, 1, 37),   # a channel tail, stride 2
    (32, 48, 7, 3, 1, 2, 255),  # dilation 2, the largest zero point
    (64, 32, 6, 1, 2, 1, 3),    # 1x1, stride 2 (VNNI from 32 input channels: ``vnni_conv``)
    (24, 16, 5, 3, 1, 1, 0),    # no zero point's share: the conv pads by itself
]


def int_conv_model(op: str, c: int, o: int, hw: int, k: int, s: int, d: int, x_zp: int, rng,
                   x_dtype: str = "uint8"):
    """A QLinearConv (int8 weight, a scale per output channel, an int32 bias) or ConvInteger
    (int32 output) of a ``[1, c, hw, hw]`` 8-bit input, padded to keep the plane size."""
    from onnx import TensorProto, helper, numpy_helper

    w = rng.integers(-128, 128, (o, c, k, k)).astype("int8")
    inits = [numpy_helper.from_array(np.array(x_zp, x_dtype), "xz"),
             numpy_helper.from_array(w, "w")]
    pads = [d * (k // 2)] * 4
    if op == "QLinearConv":
        inits += [numpy_helper.from_array(np.array(0.02, "float32"), "xs"),
                  numpy_helper.from_array((rng.random(o) * 0.02 + 0.001).astype("float32"),
                                          "ws"),
                  numpy_helper.from_array(np.zeros(o, "int8"), "wz"),
                  numpy_helper.from_array(np.array(0.3 * c, "float32"), "ys"),
                  numpy_helper.from_array(np.array(128 if x_dtype == "uint8" else 5, x_dtype),
                                          "yz"),
                  numpy_helper.from_array(rng.integers(-999, 999, o).astype("int32"), "b")]
        node = helper.make_node(op, ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                                pads=pads, strides=[s, s], dilations=[d, d])
        out_t = TensorProto.UINT8 if x_dtype == "uint8" else TensorProto.INT8
    else:
        node = helper.make_node(op, ["x", "w", "xz"], ["y"], pads=pads, strides=[s, s],
                                dilations=[d, d])
        out_t = TensorProto.INT32
    x_t = TensorProto.UINT8 if x_dtype == "uint8" else TensorProto.INT8
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", x_t, [1, c, hw, hw])], [helper.make_tensor_value_info(
            "y", out_t, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def int_conv_case(op: str, c: int, o: int, hw: int, k: int, s: int, d: int, x_zp: int):
    """``(model, x)``: ``int_conv_model`` of a ``VNNI_CONV_CASES`` row (seeded by its sizes) and
    a uint8 input for it whose first row sits at the zero point (beside the padding)."""
    rng = np.random.default_rng(c * o + k)
    proto = int_conv_model(op, c, o, hw, k, s, d, x_zp, rng)
    x = rng.integers(0, 256, (1, c, hw, hw)).astype("uint8")
    x[0, :, 0, :] = x_zp
    return proto, x


# ---------------------------------------------------------------- integer matmuls (gemm_vnni)
# (A's shape, N, A's dtype, A's zero point): ragged M / K / N (K not a multiple of 4, N not of
# 16), a 3-D A, an int8 A, zero points 0 and the extremes
VNNI_MATMUL_CASES = [((16, 64), 256, "uint8", 124),
                     ((7, 13), 21, "uint8", 255),
                     ((2, 5, 40), 48, "int8", -3),
                     ((3, 8), 7, "uint8", 0),
                     ((33, 100), 64, "int8", 127)]
# the ops of one integer matmul node: ONNX's, com.microsoft's, and a QDQ MatMul / Gemm (and a
# QDQ MatMul with a weight scale per column: DequantizeLinear axis=1, what per_channel=True
# writes for a MatMul; and with a uint8 weight and zero points, weight_type=QUInt8)
VNNI_MATMUL_OPS = ["MatMulInteger", "QLinearMatMul", "QGemm", "qdq_MatMul", "qdq_Gemm",
                   "qdq_MatMul_pc", "qdq_MatMul_u8"]


def int_matmul_model(op: str, a_shape, n: int, a_dtype: str, a_zp: int, rng):
    """A one-node integer matmul of an 8-bit input ``a`` (``a_shape``) and a constant int8
    weight (``[K, N]``, ``[N, K]`` for QGemm's transB): MatMulInteger (int32 out),
    QLinearMatMul (a scale per column), QGemm (transB, alpha, an int32 bias), or a QDQ MatMul /
    Gemm (DequantizeLinear'd uint8 ``a`` and int8 weight, QuantizeLinear'd output; Gemm:
    transB, a scale per output column, a float bias; ``qdq_MatMul_pc``: a scale per column of
    the ``[K, N]`` weight, axis 1; ``qdq_MatMul_u8``: that with a uint8 weight and a zero
    point per column). Returns (model, feeds)."""
    from onnx import TensorProto as P
    from onnx import helper

    k = a_shape[-1]
    t8 = P.UINT8 if a_dtype == "uint8" else P.INT8
    a = q8(rng, a_shape, a_dtype)
    a.reshape(-1)[:k] = a_zp  # (a row at the zero point: its products are 0)
    w = q8(rng, (k, n), "int8")
    w.reshape(-1)[0] = -128
    yz = np.array(128 if a_dtype == "uint8" else 0, a_dtype)
    common = dict(a_s=np.array(0.02, "float32"), a_zp=np.array(a_zp, a_dtype),
                  y_s=np.array(0.05 * k, "float32"), y_zp=yz)
    if op == "MatMulInteger":
        model = single(op, [vi("a", t8, list(a_shape)), "w", "a_zp"], [vi("y", P.INT32, None)],
                       inits_of(w=w, a_zp=common["a_zp"]))
    elif op == "QLinearMatMul":
        inits = inits_of(**common, w=w, w_s=(rng.random(n) * 0.01 + 0.001).astype("float32"),
                         w_zp=np.zeros(n, "int8"))
        model = single(op, [vi("a", t8, list(a_shape)), "a_s", "a_zp", "w", "w_s", "w_zp",
                            "y_s", "y_zp"], [vi("y", t8, None)], inits)
    elif op == "QGemm":  # (A a matrix)
        a = a.reshape(-1, k)
        inits = inits_of(**common, w=np.ascontiguousarray(w.T), w_s=np.array(0.004, "float32"),
                         w_zp=np.array(0, "int8"), c=rng.integers(-900, 900, n).astype("int32"))
        model = single(op, [vi("a", t8, list(a.shape)), "a_s", "a_zp", "w", "w_s", "w_zp", "c",
                            "y_s", "y_zp"], [vi("y", t8, None)], inits, domain="com.microsoft",
                       transB=1, alpha=0.5)
    else:
        gemm, per_column = op == "qdq_Gemm", op in ("qdq_MatMul_pc", "qdq_MatMul_u8")
        u8 = op == "qdq_MatMul_u8"
        x = (rng.standard_normal(a_shape) * 2).astype("float32")
        ws = (rng.random(n) * 0.01 + 0.001).astype("float32") if gemm or per_column else \
            np.array(0.004, "float32")
        arrays = dict(a_s=common["a_s"], a_zp=np.array(abs(a_zp), "uint8"),
                      w=np.ascontiguousarray(w.T) if gemm else
                      (w.astype(int) + 128).astype("uint8") if u8 else w, w_s=ws,
                      y_s=common["y_s"] * 0.01, y_zp=np.array(128, "uint8"),
                      bias=rng.standard_normal(n).astype("float32"))
        nodes = [helper.make_node("QuantizeLinear", ["x", "a_s", "a_zp"], ["xq"]),
                 helper.make_node("DequantizeLinear", ["xq", "a_s", "a_zp"], ["xf"]),
                 helper.make_node("DequantizeLinear", ["w", "w_s"] + ["w_zp"] * u8, ["wf"],
                                  axis=1 if per_column else 0),
                 helper.make_node("Gemm", ["xf", "wf", "bias"], ["yf"], transB=1) if gemm else
                 helper.make_node("MatMul", ["xf", "wf"], ["yf"]),
                 helper.make_node("QuantizeLinear", ["yf", "y_s", "y_zp"], ["y"])]
        if u8:
            arrays["w_zp"] = rng.integers(90, 170, n).astype("uint8")
        shape = list(a_shape) if not gemm else [int(np.prod(a_shape[:-1])), k]
        x = x.reshape(shape)
        graph = helper.make_graph(nodes, op, [vi("x", P.FLOAT, shape)],
                                  [vi("y", P.UINT8, None)], initializer=inits_of(**arrays))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        return model, {"x": x}
    model.ir_version = 8
    return model, {"a": a}


def dynamic_matmul_model(rng, m: int = 12, k: int = 40, n: int = 32):
    """What quantize_dynamic writes for a float MatMul: DynamicQuantizeLinear of the input
    (scale and zero point known only at run time), MatMulInteger with the constant int8 weight,
    Cast, and the product of both scales. Returns (model, feeds)."""
    from onnx import TensorProto as P
    from onnx import helper

    w = q8(rng, (k, n), "int8")
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "w", "xz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=P.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["y"])]
    graph = helper.make_graph(nodes, "dyn", [vi("x", P.FLOAT, [m, k])], [vi("y", P.FLOAT, None)],
                              initializer=inits_of(w=w, ws=np.array(0.01, "float32")))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"x": (rng.standard_normal((m, k)) - 0.3).astype("float32")}


def dynamic_quantize_lstm(per_channel: bool, w_dtype: str = "int8", direction: str = "forward",
                          seq: int = 6, batch: int = 2, feat: int = 10, hidden: int = 8):
    """A com.microsoft DynamicQuantizeLSTM node (quantize_dynamic's LSTM: 8-bit W [dirs, input,
    4H] and R [dirs, H, 4H], transposed from LSTM's, with scales and zero points one per
    direction or per direction and gate row; ORT takes uint8 weights with the zero point 128
    alone) and the plain LSTM over the same weights
    dequantized. Returns (quantized model, float model, feeds)."""
    from onnx import TensorProto as P
    from onnx import helper

    rng = np.random.default_rng(seq + feat)
    dirs = 2 if direction == "bidirectional" else 1
    g = 4 * hidden
    arrays, floats = {}, {}
    for name, k in (("w", feat), ("r", hidden)):
        q = q8(rng, (dirs, k, g), w_dtype)
        s = (rng.random((dirs, g) if per_channel else (dirs,)) * 0.02 + 0.01).astype("float32")
        z = np.full(s.shape, 128 if w_dtype == "uint8" else 0).astype(w_dtype)
        arrays.update({name: q, f"{name}_s": s, f"{name}_z": z})
        sb, zb = s.reshape(dirs, 1, -1), z.astype("float32").reshape(dirs, 1, -1)
        floats[name] = ((q.astype("float32") - zb) * sb).transpose(0, 2, 1).copy()
    b = (rng.standard_normal((dirs, 2 * g)) * 0.1).astype("float32")
    x = rng.standard_normal((seq, batch, feat)).astype("float32")
    outs = [vi("y", P.FLOAT, None), vi("y_h", P.FLOAT, None), vi("y_c", P.FLOAT, None)]
    qnode = helper.make_node("DynamicQuantizeLSTM", ["x", "w", "r", "b", "", "", "", "", "w_s",
                                                     "w_z", "r_s", "r_z"],
                             ["y", "y_h", "y_c"], domain="com.microsoft", hidden_size=hidden,
                             direction=direction)
    graph = helper.make_graph([qnode], "dqlstm", [vi("x", P.FLOAT, list(x.shape))], outs,
                              initializer=inits_of(**arrays, b=b))
    qmodel = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                     helper.make_opsetid("com.microsoft", 1)])
    fnode = helper.make_node("LSTM", ["x", "w", "r", "b"], ["y", "y_h", "y_c"],
                             hidden_size=hidden, direction=direction)
    graph = helper.make_graph([fnode], "lstm", [vi("x", P.FLOAT, list(x.shape))], outs,
                              initializer=inits_of(w=floats["w"], r=floats["r"], b=b))
    fmodel = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    qmodel.ir_version = fmodel.ir_version = 8
    return qmodel, fmodel, {"x": x}


def int_conv1d_model(op: str, c: int = 24, o: int = 32, length: int = 37, k: int = 5,
                     stride: int = 2, pad: int = 2):
    """A 1-D ConvInteger (uint8 input, zero point 7; int8 weight) or QLinearConv (uint8 input
    and output, a scale per output channel, an int32 bias) over ``[1, c, length]``: what an
    audio model's Conv1d becomes under quantize_dynamic / QOperator. Returns (model,
    feeds)."""
    from onnx import TensorProto as P

    rng = np.random.default_rng(length + k)
    x = q8(rng, (1, c, length))
    w = q8(rng, (o, c, k), "int8")
    conv = dict(kernel_shape=[k], strides=[stride], pads=[pad, pad])
    if op == "ConvInteger":
        model = single(op, [vi("x", P.UINT8, list(x.shape)), "w", "xz"],
                       [vi("y", P.INT32, None)], inits_of(w=w, xz=np.array(7, "uint8")), **conv)
    else:
        inits = inits_of(xs=np.array(0.02, "float32"), xz=np.array(7, "uint8"), w=w,
                         ws=(rng.random(o) * 0.01 + 0.002).astype("float32"),
                         wz=np.zeros(o, "int8"), ys=np.array(0.3, "float32"),
                         yz=np.array(120, "uint8"),
                         b=rng.integers(-2000, 2000, o).astype("int32"))
        model = single(op, [vi("x", P.UINT8, list(x.shape)), "xs", "xz", "w", "ws", "wz", "ys",
                            "yz", "b"], [vi("y", P.UINT8, None)], inits, **conv)
    model.ir_version = 8
    return model, {"x": x}


# (op, weight dtype, its zero point: "column" one per column, else a scalar) of an integer
# matmul whose weight has a zero point (weight_type=QUInt8; an int8 weight with zero points)
WEIGHT_ZP_MATMUL_CASES = [("MatMulInteger", "uint8", "column"), ("MatMulInteger", "uint8", 0),
                          ("MatMulInteger", "int8", "column"), ("QLinearMatMul", "uint8", 131),
                          ("dynamic", "uint8", 128)]


def weight_zp_matmul_model(op: str, w_dtype: str, w_zp, m: int = 9, k: int = 70, n: int = 48):
    """An integer matmul of a uint8 A (zero point 7) and a constant ``w_dtype`` weight with
    zero point ``w_zp`` (see ``WEIGHT_ZP_MATMUL_CASES``): MatMulInteger, QLinearMatMul, or
    quantize_dynamic's DynamicQuantizeLinear + MatMulInteger. Returns (model, feeds)."""
    from onnx import TensorProto as P
    from onnx import helper

    rng = np.random.default_rng(k + n)
    w = q8(rng, (k, n), w_dtype)
    zp = q8(rng, (n,), w_dtype) if w_zp == "column" else np.array(w_zp, w_dtype)
    a = q8(rng, (m, k))
    if op == "MatMulInteger":
        model = single(op, [vi("a", P.UINT8, [m, k]), "w", "az", "wz"],
                       [vi("y", P.INT32, None)], inits_of(w=w, az=np.array(7, "uint8"), wz=zp))
    elif op == "QLinearMatMul":
        model = single(op, [vi("a", P.UINT8, [m, k]), "as", "az", "w", "ws", "wz", "ys", "yz"],
                       [vi("y", P.UINT8, None)],
                       inits_of(**{"as": np.array(0.02, "float32")}, az=np.array(7, "uint8"),
                                w=w, ws=np.array(0.01, "float32"), wz=zp,
                                ys=np.array(0.4, "float32"), yz=np.array(128, "uint8")))
    else:
        nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
                 helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]),
                 helper.make_node("Cast", ["acc"], ["accf"], to=P.FLOAT),
                 helper.make_node("Mul", ["xs", "ws"], ["s"]),
                 helper.make_node("Mul", ["accf", "s"], ["y"])]
        graph = helper.make_graph(nodes, "dyn", [vi("x", P.FLOAT, [m, k])],
                                  [vi("y", P.FLOAT, None)],
                                  initializer=inits_of(w=w, wz=zp, ws=np.array(0.01, "float32")))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        return model, {"x": (rng.standard_normal((m, k)) - 0.3).astype("float32")}
    model.ir_version = 8
    return model, {"a": a}


def qdq_chain(dtype: str, same: bool = True):
    """x -> QuantizeLinear -> DequantizeLinear -> Sigmoid -> QuantizeLinear -> DequantizeLinear:
    the Q / DQ pairs of a QDQ model's activations, ``dtype`` (uint8 / int8) with zero points;
    ``same`` False gives the second DequantizeLinear its own scale (no fake-quant pair). The
    input holds NaN and +-inf, and values far outside the 8-bit range. Returns (model,
    feeds)."""
    from onnx import TensorProto as P
    from onnx import helper

    z1, z2 = (100, 3) if dtype == "uint8" else (-20, 5)
    arrays = dict(s1=np.array(0.03, "float32"), z1=np.array(z1, dtype),
                  s2=np.array(1 / 255, "float32"), z2=np.array(z2, dtype),
                  s3=np.array(1 / 255 if same else 0.005, "float32"))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["q1"]),
             helper.make_node("DequantizeLinear", ["q1", "s1", "z1"], ["d1"]),
             helper.make_node("Sigmoid", ["d1"], ["g"]),
             helper.make_node("QuantizeLinear", ["g", "s2", "z2"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s3", "z2"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_chain", [vi("x", P.FLOAT, [4, 50])],
                              [vi("y", P.FLOAT, None)], initializer=inits_of(**arrays))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    x = (np.random.default_rng(9).standard_normal((4, 50)) * 4).astype("float32")
    x[0, :4] = [np.nan, np.inf, -np.inf, 1e9]
    x[1, :3] = [0.015, -0.045, 0.075]  # (halfway between steps: round half to even)
    return model, {"x": x}


def qlinear_add_after_quantize():
    """x -> QuantizeLinear -> a; QLinearAdd(a, b) with b a uint8 graph input of a's scale and
    zero point: only a DequantizeLinear node's own input is a Q / DQ pair, never a QLinear
    op's second input. Returns (model, feeds)."""
    from onnx import TensorProto as P
    from onnx import helper

    rng = np.random.default_rng(4)
    qadd = helper.make_node("QLinearAdd", ["a", "s", "z", "b", "s", "z", "ys", "yz"], ["y"],
                            domain="com.microsoft")
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["a"]), qadd], "qadd",
        [vi("x", P.FLOAT, [3, 20]), vi("b", P.UINT8, [3, 20])], [vi("y", P.UINT8, None)],
        initializer=inits_of(s=np.array(0.05, "float32"), z=np.array(90, "uint8"),
                             ys=np.array(0.1, "float32"), yz=np.array(128, "uint8")))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model, {"x": rng.standard_normal((3, 20)).astype("float32"),
                   "b": q8(rng, (3, 20))}


def qlinear_conv1d_chain(dtype: str = "int8", c: int = 32, length: int = 40):
    """Two 1-D QLinearConvs in a row (k 3, pad 1; int32 biases; activations of ``dtype``, zero
    points nonzero), as quantize_static(QOperator) writes an audio model's Conv1d stack: the
    second takes the first's output row. Returns (model, feeds)."""
    from onnx import TensorProto as P
    from onnx import helper

    rng = np.random.default_rng(c + length)
    zp = np.array(-5 if dtype == "int8" else 120, dtype)
    inits = inits_of(s=np.array(0.02, "float32"), z=zp, s2=np.array(0.1, "float32"),
                     w1=q8(rng, (c, c, 3), "int8"), w2=q8(rng, (c, c, 3), "int8"),
                     ws=(rng.random(c) * 0.01 + 0.002).astype("float32"),
                     wz=np.zeros(c, "int8"),
                     b1=rng.integers(-2000, 2000, c).astype("int32"),
                     b2=rng.integers(-2000, 2000, c).astype("int32"))
    conv = dict(kernel_shape=[3], pads=[1, 1])
    nodes = [helper.make_node("QLinearConv", ["x", "s", "z", "w1", "ws", "wz", "s2", "z", "b1"],
                              ["h"], **conv),
             helper.make_node("QLinearConv", ["h", "s2", "z", "w2", "ws", "wz", "s2", "z", "b2"],
                              ["y"], **conv)]
    et = P.INT8 if dtype == "int8" else P.UINT8
    graph = helper.make_graph(nodes, "chain", [vi("x", et, [1, c, length])],
                              [vi("y", et, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"x": q8(rng, (1, c, length), dtype)}
