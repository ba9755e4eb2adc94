"""Fully-quantized TFLite models (int8 / uint8 activations) through relay.frontend.from_tflite,
built at opt_level 3 and compared with ``tflite_qtwin``'s numpy simulation of TFLite's
arithmetic (within one quantization step per op); the integer convs in the IR; errors."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite", reason="the TFLite importer needs the `tflite` package")

import tflite_qtwin  # noqa: E402
from frontend_models import build_and_run  # noqa: E402
from tflite_qtwin import QTwin  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402
from minitvm.relay.frontend.tflite.builder import ModelBuilder  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402

DTYPES = ["uint8", "int8"]


def run(twin, outputs, steps=1):
    data, refs = twin.finish(outputs)
    mod, params = relay.frontend.from_tflite(data)
    feeds = twin.inputs()
    for name, v in feeds.items():  # the input keeps its quantized dtype
        assert mod["main"].params[0].type_annotation.dtype == str(v.dtype), name
    outs = build_and_run(mod, params, feeds)
    for out, ref, o in zip(outs, refs, outputs, strict=True):
        assert out.dtype == np.dtype(twin.b.tensors[o][2])
        assert out.shape == ref.shape
        diff = np.abs(out.astype("int64") - ref)
        assert diff.max() <= steps, f"max difference {diff.max()} steps"
    return mod, outs


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("stride,act,padding", [(1, None, "SAME"), (2, "relu6", "SAME"),
                                                (1, "relu", "VALID")])
def test_conv2d(dtype, depthwise, stride, act, padding):
    t = QTwin(dtype, 3)
    x = t.input("x", (1, 9, 9, 16))
    run(t, [t.conv(x, 32, 3, stride, act, depthwise=depthwise, padding=padding)])


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv2d_1x1_and_per_tensor(per_channel):
    t = QTwin("uint8", 4)
    x = t.input("x", (1, 6, 6, 8))
    run(t, [t.conv(x, 12, 1, 1, "relu", per_channel=per_channel)])


def test_conv2d_uint8_weights_with_zero_point():
    """The classic uint8 models (quantization-aware training) hold uint8 weights with a
    nonzero zero point per tensor."""
    t = QTwin("uint8", 5)
    x = t.input("x", (1, 7, 7, 16))
    run(t, [t.conv(x, 16, 3, 1, "relu6", per_channel=False, w_dtype="uint8", w_zp=131)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", [None, "relu"])
def test_fully_connected(dtype, act):
    t = QTwin(dtype, 6)
    x = t.input("x", (2, 40))
    run(t, [t.fully_connected(x, 24, act)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
def test_binary(dtype, op):
    t = QTwin(dtype, 7)
    a = t.input("a", (1, 4, 4, 8), scale=0.05)
    b = t.input("b", (1, 4, 4, 8), scale=0.02)
    run(t, [t.binary(op, a, b, "relu" if op == "ADD" else None)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind,padding", [("max", "SAME"), ("max", "VALID"), ("avg", "SAME"),
                                          ("avg", "VALID")])
def test_pool(dtype, kind, padding):
    t = QTwin(dtype, 8)
    x = t.input("x", (1, 7, 7, 4))
    run(t, [t.pool(kind, x, 3, 2, padding)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("keep", [False, True])
def test_mean(dtype, keep):
    t = QTwin(dtype, 9)
    x = t.input("x", (1, 5, 5, 6))
    run(t, [t.mean(x, [1, 2], keep)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_data_movement(dtype):
    """RESHAPE, SQUEEZE, TRANSPOSE, STRIDED_SLICE and PAD keep the quantized values (and the
    dtype: no float op in the program)."""
    t = QTwin(dtype, 10)
    x = t.input("x", (1, 6, 4, 3))
    y = t.pad(t.strided_slice(t.transpose(x, (0, 2, 1, 3)), [0, 1, 0, 0], [1, 4, 5, 3],
                              [1, 1, 2, 1]), [[0, 0], [1, 2], [0, 1], [0, 0]])
    y = t.squeeze(t.reshape(y, (1, 6, 4, 3)), [0])
    mod, _ = run(t, [y], steps=0)
    assert "float32" not in mod.astext()


@pytest.mark.parametrize("dtype", DTYPES)
def test_concat_different_scales(dtype):
    t = QTwin(dtype, 11)
    a = t.input("a", (1, 3, 3, 4), scale=0.05)
    b = t.input("b", (1, 3, 3, 2), scale=0.11)
    run(t, [t.concat([a, b], 3)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["SOFTMAX", "LOGISTIC", "HARD_SWISH", "RELU", "RELU6"])
def test_unary(dtype, op):
    t = QTwin(dtype, 12)
    x = t.input("x", (2, 10), scale=0.08)
    run(t, [t.unary(op, x)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", ["nearest", "bilinear"])
def test_resize(dtype, method):
    t = QTwin(dtype, 13)
    x = t.input("x", (1, 4, 5, 3))
    run(t, [t.resize(x, (8, 7), method)], steps=0 if method == "nearest" else 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_quantize_requantize_dequantize(dtype):
    t = QTwin(dtype, 14)
    f = t.float_input("f", (2, 9))
    q = t.quantize_float(f)
    r = t.requantize(q, 0.013, 3)
    d = t.dequantize(r)
    data, refs = t.finish([r, d])
    mod, params = relay.frontend.from_tflite(data)
    out_r, out_d = build_and_run(mod, params, t.inputs())
    assert out_r.dtype == np.dtype(dtype) and out_d.dtype == np.float32
    assert np.abs(out_r.astype("int64") - refs[0]).max() <= 1
    np.testing.assert_allclose(out_d, (out_r.astype("int64") - 3) * np.float32(0.013),
                               rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mobilenet_v2_end_to_end(dtype):
    """A quantized MobileNetV2-like model: every tensor within a few steps of the simulation
    (one-step rounding differences propagate through the layers), the class scores close."""
    t, (data, refs) = tflite_qtwin.mobilenet_v2(dtype)
    mod, params = relay.frontend.from_tflite(data)
    outs = build_and_run(mod, params, t.inputs())
    for out, ref in zip(outs, refs, strict=True):  # the logits and their softmax
        assert out.dtype == np.dtype(dtype) and out.shape == ref.shape
        assert np.abs(out.astype("int64") - ref).max() <= 3
    assert len(np.unique(refs[0])) == refs[0].size  # (a model whose logits differ)


def test_full_mobilenet_v2_end_to_end():
    """All 17 inverted residual blocks and the 1280-channel head (``tflite_qtwin.FULL_BLOCKS``:
    MobileNetV2 1.0's blocks after an 8-channel stem, at 32x32: planes down to 1x1, 24-channel
    convs) within a few steps of the simulation."""
    t, (data, refs) = tflite_qtwin.mobilenet_v2("uint8", size=32, width=8, full=True)
    mod, params = relay.frontend.from_tflite(data)
    outs = build_and_run(mod, params, t.inputs())
    for out, ref in zip(outs, refs, strict=True):
        assert out.dtype == np.uint8 and out.shape == ref.shape
        assert np.abs(out.astype("int64") - ref).max() <= 3


def _optimized(mod):
    with tvm.transform.PassContext(opt_level=3):
        return relay.optimize(mod, target="llvm")[0].astext()


def test_integer_conv_in_the_ir():
    """A 3x3 conv of 16 -> 32 channels: an int8 weight in the conv (VNNI: uint8 x int8 ->
    int32), never a float conv of dequantized weights."""
    t = QTwin("uint8", 15)
    x = t.input("x", (1, 8, 8, 16))
    data, _ = t.finish([t.conv(x, 32, 3, 1, "relu6")])
    mod, _ = relay.frontend.from_tflite(data)
    text = mod.astext()
    assert "int8]" in text and 'out_dtype="' in text
    opt = _optimized(mod)
    if conv_vnni.available():
        assert 'out_dtype="int32"' in opt and "uint8" in opt
    assert "Tensor[(32, 16, 3, 3), float32]" not in opt


def test_consecutive_convs_stay_nchw():
    """The transposes between two quantized convs cancel: one transpose in, one out."""
    t = QTwin("uint8", 16)
    x = t.input("x", (1, 8, 8, 16))
    data, _ = t.finish([t.conv(t.conv(x, 16, 3, 1, "relu6"), 16, 1, 1)])
    mod, _ = relay.frontend.from_tflite(data)
    assert _optimized(mod).count("transpose(") <= 2


def _depthwise_data_dtype(mod, params, channels: int) -> str:
    """The dtype of the data its depthwise conv kernel reads, built from ``mod``."""
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    found = []
    for k in lib.get_lib().kernels.values():
        prim = getattr(k, "prim_func", None)
        shapes = [tuple(int(d) for d in prim.buffer_map[p].shape) for p in prim.params] \
            if prim is not None else []
        if (channels, 1, 3, 3) in shapes:
            found.append(prim.buffer_map[prim.params[0]].dtype)
    assert len(found) == 1, found
    return found[0]


def _depthwise_model(t, x, stride, dtype_want, channels):
    data, refs = t.finish([t.conv(x, 0, 3, stride, "relu6", depthwise=True)])
    mod, params = relay.frontend.from_tflite(data)
    (out,) = build_and_run(mod, params, t.inputs())
    assert np.abs(out.astype("int64") - refs[0]).max() <= 1
    assert _depthwise_data_dtype(mod, params, channels) == dtype_want


@pytest.mark.parametrize("dtype", DTYPES)
def test_depthwise_reads_8bit_activations(dtype):
    """A depthwise conv after a ReLU6 conv (zero point 0 in uint8, -128 in int8: that shifted
    into uint8) reads the 8-bit activation as it is (``onnx_quant.depthwise_data``); one on
    the input (zero point 0 in int8: as it is; 128 in uint8) reads it dequantized to float32."""
    t = QTwin(dtype, 17)
    x = t.input("x", (1, 10, 10, 16))
    _depthwise_model(t, t.conv(x, 32, 1, 1, "relu6"), 2, "uint8", 32)
    t = QTwin(dtype, 18)
    x = t.input("x", (1, 10, 10, 16))
    _depthwise_model(t, x, 1, "int8" if dtype == "int8" else "float32", 16)


# ------------------------------------------------------------------ errors
def _single_conv(x_dtype="int8", w_quant=(0.1, 0), x_quant=(0.1, 0)):
    b = ModelBuilder()
    x = b.input("x", (1, 4, 4, 2), x_dtype, quant=x_quant)
    w = b.constant("w", np.ones((3, 1, 1, 2), "int8"), quant=w_quant)
    y = b.tensor("y", (1, 4, 4, 3), x_dtype, quant=(0.2, 0))
    b.operator("CONV_2D", [x, w, -1], [y], "Conv2DOptions", Padding=0, StrideH=1, StrideW=1,
               DilationHFactor=1, DilationWFactor=1, FusedActivationFunction=0)
    b.output(y)
    return b.finish()


def test_int16_activations_error():
    with pytest.raises(ImportError_, match="CONV_2D: input tensor 'x' is int16: quantized "
                                           "operators take int8 or uint8"):
        relay.frontend.from_tflite(_single_conv("int16"))


def test_weight_quantized_along_the_wrong_axis_error():
    with pytest.raises(ImportError_, match="CONV_2D: weight tensor 'w' is quantized along "
                                           "axis 3"):
        relay.frontend.from_tflite(_single_conv(w_quant=([0.1, 0.2], [0, 0], 3)))


def test_per_channel_activation_error():
    with pytest.raises(ImportError_, match="input tensor 'x' has per-channel quantization"):
        relay.frontend.from_tflite(_single_conv(x_quant=([0.1, 0.2], [0, 0], 3)))


def test_tanh_fused_into_a_quantized_conv_error():
    b = ModelBuilder()
    x = b.input("x", (1, 4, 4, 2), "int8", quant=(0.1, 0))
    w = b.constant("w", np.ones((3, 1, 1, 2), "int8"), quant=(0.1, 0))
    y = b.tensor("y", (1, 4, 4, 3), "int8", quant=(0.2, 0))
    b.operator("CONV_2D", [x, w, -1], [y], "Conv2DOptions", Padding=0, StrideH=1, StrideW=1,
               DilationHFactor=1, DilationWFactor=1, FusedActivationFunction=4)
    b.output(y)
    with pytest.raises(ImportError_, match="CONV_2D: a quantized operator's fused activation"):
        relay.frontend.from_tflite(b.finish())
