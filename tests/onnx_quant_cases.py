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
import onnxruntime as ort
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
    """onnxruntime's outputs of ``proto`` (a ModelProto) on ``feeds``."""
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(proto.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


# the QDQ conv cases (weight zero point, per-channel scales, groups): whether the importer's
# conv reads the int8 weight itself ("int8") or its dequantized float32 values
QDQ_CONV_CASES = [(None, True, 1, "int8"),      # a scale per output channel
                  (0, False, 1, "int8"),        # one scale, a zero point of 0
                  (2, False, 1, "float32"),     # a nonzero zero point
                  (None, True, 2, "float32")]   # grouped


def qdq_conv(w_zp, per_channel: bool, groups: int, cin: int = 16, cout: int = 32):
    """A QDQ conv as quantize_static writes one: QuantizeLinear / DequantizeLinear of a uint8
    activation, DequantizeLinear of a constant int8 weight (axis 0), Conv, QuantizeLinear.
    Returns (model, feeds)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(3 + groups)
    x = rng.standard_normal((1, cin, 10, 10)).astype("float32")
    w = rng.integers(-127, 128, (cout, cin // groups, 3, 3)).astype("int8")
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
             helper.make_node("Conv", ["xf", "wf"], ["yf"], pads=[1, 1, 1, 1], group=groups),
             helper.make_node("QuantizeLinear", ["yf", "y_s", "y_zp"], ["y"])]
    inits = [onnx.numpy_helper.from_array(v, n) for n, v in arrays.items()]
    graph = helper.make_graph(
        nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), {"x": x}
