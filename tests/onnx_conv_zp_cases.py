"""Quantized ONNX convs whose weight has zero points (what onnxruntime.quantization writes
with weight_type=QUInt8, or WeightSymmetric=False), shared by the Relay and Relax importer
tests: ``onnx_quant.VnniConvPlan``'s int8 weight and window sums on VNNI. Each model comes
with an input and the exact integer conv (numpy) its integer part must equal."""

from __future__ import annotations

import numpy as np

# (input dtype, input zero point, weight dtype, weight zero points: "tensor" one, "channel"
# one per output channel, kernel, stride, padding, conv rank (1: a Conv1d), input channels)
ZP_CONV_CASES = [
    ("uint8", 7, "uint8", "tensor", 3, 1, 1, 2, 32),    # padding with the input's zero point
    ("uint8", 0, "uint8", "channel", 3, 2, 1, 2, 32),   # stride 2, the conv's own zero pads
    ("int8", -5, "uint8", "channel", 3, 1, 1, 2, 24),   # an int8 input (shifted into uint8)
    ("uint8", 9, "uint8", "channel", 1, 1, 0, 2, 64),   # 1x1: channel sums only
    ("uint8", 3, "uint8", "channel", 1, 2, 0, 2, 32),   # 1x1 stride 2
    ("uint8", 7, "int8", "channel", 3, 1, 1, 2, 32),    # int8 weight, zero points
    ("uint8", 128, "uint8", "channel", 5, 2, 2, 1, 40),  # Conv1d (the 2-D conv over a row)
]


def conv_ref(x, w, stride: int, pad: int, x_zp: int, w_zp):
    """The exact integer conv of ``x - x_zp`` (padded with ``x_zp``, so 0 there) and ``w -
    w_zp`` (one, or one per output channel), N = 1, 1-D or 2-D, int64."""
    x = x.astype(np.int64) - x_zp
    w = w.astype(np.int64) - np.asarray(w_zp, np.int64).reshape((-1,) + (1,) * (w.ndim - 1))
    rank = x.ndim - 2
    if rank == 1:
        x, w = x[:, :, None, :], w[:, :, None, :]
        x = np.pad(x, ((0, 0), (0, 0), (0, 0), (pad, pad)))
        sh, sw = 1, stride
    else:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        sh, sw = stride, stride
    o, _, kh, kw = w.shape
    oh, ow = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
    out = np.zeros((1, o, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            win = x[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw]
            out += np.einsum("nchw,oc->nohw", win, w[:, :, i, j])
    return out[:, :, 0, :] if rank == 1 else out


def _weights(rng, w_dtype: str, per: str, shape):
    """Weights as a quantizer writes them: each channel's values span its dtype's range
    around its zero point (so ``w - zp`` leaves int8 for some channels), one channel's fits."""
    o = shape[0]
    lo, hi = (0, 256) if w_dtype == "uint8" else (-128, 128)
    zp = rng.integers(lo + 40, hi - 40, o if per == "channel" else 1)
    w = rng.integers(lo, hi, shape)
    if per == "channel":  # (channel 0's values within int8 of its zero point)
        w[0] = np.clip(w[0], zp[0] - 100, zp[0] + 100)
    return w.astype(w_dtype), zp.astype(w_dtype)


def _arrays(case, seed: int):
    x_dtype, x_zp, w_dtype, per, k, s, p, rank, c = case
    rng = np.random.default_rng(seed)
    o, size = 32, 9 if rank == 2 else 31
    w, wz = _weights(rng, w_dtype, per, (o, c) + (k,) * rank)
    lo, hi = (0, 256) if x_dtype == "uint8" else (-128, 128)
    x = rng.integers(lo, hi, (1, c) + (size,) * rank).astype(x_dtype)
    return rng, x, w, wz


def conv_integer_model(case, seed: int = 0):
    """``(model, x, exact int32 output)``: a ConvInteger of ``ZP_CONV_CASES`` row ``case``."""
    from onnx import TensorProto, helper, numpy_helper

    x_dtype, x_zp, w_dtype, per, k, s, p, rank, c = case
    _, x, w, wz = _arrays(case, seed)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(x_zp, x_dtype),
                                                                      "xz"),
             numpy_helper.from_array(wz if per == "channel" else wz.reshape(()), "wz")]
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[p] * 2 * rank,
                            strides=[s] * rank)
    model = _model(node, x, TensorProto.INT32, inits)
    return model, x, conv_ref(x, w, s, p, x_zp, wz).astype(np.int32)


def qlinear_conv_model(case, seed: int = 0):
    """``(model, x, output)``: a QLinearConv (a scale per output channel, an int32 bias, a
    uint8 output) of ``ZP_CONV_CASES`` row ``case``, and its output from the exact integer
    conv requantized in float32 (``ops_qlinear``'s order, as onnxruntime does)."""
    from onnx import TensorProto, helper, numpy_helper

    x_dtype, x_zp, w_dtype, per, k, s, p, rank, c = case
    rng, x, w, wz = _arrays(case, seed)
    o = w.shape[0]
    arrays = dict(xs=np.array(0.02, "float32"), xz=np.array(x_zp, x_dtype), w=w,
                  ws=(rng.random(o) * 0.002 + 0.0005).astype("float32"),
                  wz=wz if per == "channel" else wz.reshape(()),
                  ys=np.array(0.5, "float32"), yz=np.array(128, "uint8"),
                  b=rng.integers(-999, 999, o).astype("int32"))
    inits = [numpy_helper.from_array(v, n) for n, v in arrays.items()]
    node = helper.make_node("QLinearConv", ["x", *arrays], ["y"], pads=[p] * 2 * rank,
                            strides=[s] * rank)
    acc = conv_ref(x, w, s, p, x_zp, wz) + arrays["b"].reshape((-1,) + (1,) * rank)
    mult = (arrays["xs"] * arrays["ws"] / arrays["ys"]).astype("float32")
    y = np.round(acc.astype("float32") * mult.reshape((-1,) + (1,) * rank)) + 128
    return _model(node, x, TensorProto.UINT8, inits), x, np.clip(y, 0, 255).astype("uint8")


def qdq_conv_model(case, seed: int = 0):
    """``(model, feeds)``: a QDQ Conv as quantize_static writes one with weight_type=QUInt8
    (Quantize / DequantizeLinear of the activation, DequantizeLinear of the constant 8-bit
    weight with its zero points, axis 0, a float bias, QuantizeLinear to uint8) of
    ``ZP_CONV_CASES`` row ``case``; a float32 input."""
    from onnx import TensorProto, helper, numpy_helper

    x_dtype, x_zp, w_dtype, per, k, s, p, rank, c = case
    rng, xq, w, wz = _arrays(case, seed)
    o = w.shape[0]
    x = ((xq.astype("float32") - x_zp) * 0.02).astype("float32")
    arrays = dict(xs=np.array(0.02, "float32"), xz=np.array(x_zp, x_dtype), w=w,
                  ws=(rng.random(o) * 0.002 + 0.0005).astype("float32") if per == "channel"
                  else np.array(0.001, "float32"),
                  wz=wz if per == "channel" else wz.reshape(()),
                  b=rng.standard_normal(o).astype("float32"),
                  ys=np.array(0.5, "float32"), yz=np.array(128, "uint8"))
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("Conv", ["xf", "wf", "b"], ["yf"], pads=[p] * 2 * rank,
                              strides=[s] * rank),
             helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"])]
    inits = [numpy_helper.from_array(v, n) for n, v in arrays.items()]
    graph = helper.make_graph(nodes, "qdq_conv_zp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), {"x": x}


def qdq_depthwise_zp_model(stride: int, c: int = 24, size: int = 13):
    """``(model, feeds)``: a QDQ depthwise Conv of a uint8 activation with zero point 0 (a
    ReLU's) and a uint8 weight with a zero point per channel (weight_type=QUInt8)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(stride)
    w, wz = _weights(rng, "uint8", "channel", (c, 1, 3, 3))
    x = (rng.random((1, c, size, size)) * 5).astype("float32")
    arrays = dict(xs=np.array(0.02, "float32"), xz=np.array(0, "uint8"), w=w,
                  ws=(rng.random(c) * 0.01 + 0.002).astype("float32"), wz=wz,
                  ys=np.array(0.05, "float32"), yz=np.array(128, "uint8"))
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("Conv", ["xf", "wf"], ["yf"], pads=[1] * 4, group=c,
                              strides=[stride] * 2),
             helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"])]
    inits = [numpy_helper.from_array(v, n) for n, v in arrays.items()]
    graph = helper.make_graph(nodes, "qdq_dw_zp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), {"x": x}


def _model(node, x, out_type, inits):
    from onnx import helper

    graph = helper.make_graph(
        [node], "conv_zp",
        [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype),
                                       x.shape)],
        [helper.make_tensor_value_info("y", out_type, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
