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
from minitvm.relay.frontend.tflite import quantized  # noqa: E402
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
def test_depth_to_space_split_v_gather_nd(dtype):
    """EfficientNet-Lite / segmentation-head data movement on quantized values: the values
    themselves, exactly (no float op in the program)."""
    t = QTwin(dtype, 27)
    x = t.input("x", (1, 3, 4, 8))
    v = t.val[x]
    d = t._same_params(x, v.reshape(1, 3, 4, 2, 2, 2).transpose(0, 1, 3, 2, 4, 5).reshape(
        1, 6, 8, 2), "d2s")
    t.b.operator("DEPTH_TO_SPACE", [x], [d], "DepthToSpaceOptions", BlockSize=2)
    parts = [t._same_params(x, p, "split") for p in np.split(v, [3], axis=3)]
    t.b.operator("SPLIT_V", [x, t._i32([3, 5]), t._i32([3])], parts, "SplitVOptions",
                 NumSplits=2)
    ind = np.array([[0, 1, 2], [0, 2, 0], [0, 0, 3]], "int32")
    g = t._same_params(x, v[tuple(ind.T)], "gather_nd")
    t.b.operator("GATHER_ND", [x, t.b.constant("ind", ind)], [g])
    mod, _ = run(t, [d, *parts, g], steps=0)
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
    run(t, [t.unary(op, x)], steps=0 if op == "LOGISTIC" else 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", ["nearest", "bilinear"])
def test_resize(dtype, method):
    t = QTwin(dtype, 13)
    x = t.input("x", (1, 4, 5, 3))
    run(t, [t.resize(x, (8, 7), method)], steps=0 if method == "nearest" else 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align,half,size", [(True, False, (8, 7)), (False, True, (8, 7)),
                                             (False, True, (2, 3))])
def test_resize_bilinear_coordinate_modes(dtype, align, half, size):
    """Segmentation decoders' RESIZE_BILINEAR: align_corners and half_pixel_centers, up and
    down."""
    t = QTwin(dtype, 29)
    x = t.input("x", (1, 4, 5, 3))
    run(t, [t.resize(x, size, "bilinear", align, half)])


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
    np.testing.assert_array_equal(out_r, refs[0])  # (TFLite's arithmetic exactly)
    np.testing.assert_allclose(out_d, (out_r.astype("int64") - 3) * np.float32(0.013),
                               rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_quantize_and_requantize_round_ties_as_tflite(dtype):
    """Exact halves: QUANTIZE of a float rounds them away from zero (AffineQuantize's
    TfLiteRound; Relay's round would take the even neighbour), and a Requantize to twice the
    scale (multiplier 0.5: the Q31 high multiply rounds them up, toward +inf) matches
    TFLite's integer arithmetic to the step."""
    t = QTwin(dtype, 19)
    f = t.float_input("f", (4, 16))
    t.val[f] = np.arange(-32, 32).reshape(4, 16) * 0.25
    q = t.quantize_float(f, params=(0.5, 128 if dtype == "uint8" else 0))  # x.25 / 0.5: ties
    r = t.requantize(q, 1.0, 128 if dtype == "uint8" else 1)  # scale x2: odd values tie
    r2 = t.requantize(q, 0.37, 5)  # (an arbitrary multiplier)
    data, refs = t.finish([q, r, r2])
    mod, params = relay.frontend.from_tflite(data)
    outs = build_and_run(mod, params, t.inputs())
    for out, ref in zip(outs, refs, strict=True):
        np.testing.assert_array_equal(out, ref)
    assert np.any(t.val[f] / 0.5 % 1 == 0.5)  # (ties were there to round)


def test_activation_range_rounds_half_away():
    """CalculateActivationRangeQuantized: RELU_N1_TO_1 at scale 2 puts the bounds at -0.5
    and 0.5 steps, which TFLite rounds to -1 and 1 (half to even would give 0 and 0)."""
    q = quantized.QTensor("t", "int8", (np.array([2.0], "float32"), np.array([3]), 0))
    assert quantized.clamp_range(q, -1.0, 1.0) == (2, 4)
    assert quantized.clamp_range(q, 0.0, None) == (3, 127)


def test_fixed_point_multiply_matches_tflite():
    """quantized.fixed_point_multiply (the int64 Relay form) against tflite_qtwin's
    step-by-step TFLite arithmetic: multipliers below and above one (a left shift), ties."""
    rng = np.random.default_rng(30)
    xs = np.concatenate([rng.integers(-2**20, 2**20, 400), np.arange(-40, 41),
                         [2**23 - 1, -2**23]]).astype("int32")
    for m in [0.5, 0.25, 0.75, 1.0, 1.5, 3.0, 2.0**-20, 0.0013, 0.37, 0.999999,
              *rng.uniform(1e-4, 2.0, 6)]:
        x = relay.var("x", shape=xs.shape, dtype="int32")
        body = quantized.fixed_point_multiply(x, np.array([m]), 0, 1)
        mod = tvm.IRModule.from_expr(relay.Function([x], body))
        (out,) = build_and_run(mod, {}, {"x": xs})
        np.testing.assert_array_equal(out, tflite_qtwin.multiply_by_quantized_multiplier(
            xs, m), err_msg=f"multiplier {m}")


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
    convs) against the simulation of TFLite's integer arithmetic, every tensor an output: each
    equal to it until the first float32 boundary case of a conv's requantization (one step on
    one or two values), which the random network then spreads: the logits within a few steps."""
    t, _ = tflite_qtwin.mobilenet_v2("uint8", size=32, width=8, full=True)
    produced = [o for op in t.b.ops for o in op[2]]
    t.b.outputs = list(produced)
    mod, params = relay.frontend.from_tflite(t.b.finish())
    outs = build_and_run(mod, params, t.inputs())
    diffs = [np.abs(out.astype("int64") - t.val[o]) for out, o in zip(outs, produced, strict=True)]
    first = next((k for k, d in enumerate(diffs) if d.any()), len(diffs))
    if first < len(diffs):
        assert diffs[first].max() == 1 and (diffs[first] > 0).sum() <= 2
    assert outs[-1].dtype == np.uint8 and diffs[-1].max() <= 8


# ------------------------------------------------------------------ transformer pieces
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("adj_y", [False, True])
def test_batch_matmul_of_two_activations(dtype, adj_y):
    """Attention's QK^T and PV: BATCH_MATMUL of two quantized activations."""
    t = QTwin(dtype, 20)
    a = t.input("a", (2, 5, 8), scale=0.05)
    b = t.input("b", (2, 6, 8) if adj_y else (2, 8, 6), scale=0.04)
    run(t, [t.batch_matmul(a, b, adj_y=adj_y)])


@pytest.mark.parametrize("keep", [False, True])
def test_fully_connected_3d_input(keep):
    """A transformer's projections: FULLY_CONNECTED on (batch, tokens, features), with
    keep_num_dims (output (2, 5, 12)) or without (output (10, 12))."""
    t = QTwin("int8", 21)
    x = t.input("x", (2, 5, 16))
    y = t.fully_connected(x, 12, keep_num_dims=keep)
    _, (out,) = run(t, [y])
    assert out.shape == ((2, 5, 12) if keep else (10, 12))


def _gelu(v):
    from math import erf

    return 0.5 * v * (1 + np.vectorize(erf)(v / np.sqrt(2)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["TANH", "GELU"])
def test_tanh_gelu(dtype, op):
    """TANH at TFLite's fixed output parameters (1/128, zero point 0 / 128); GELU."""
    t = QTwin(dtype, 22)
    x = t.input("x", (2, 10), scale=0.05)
    if op == "TANH":
        y = t.op("TANH", [x], np.tanh, params=(1 / 128, 0 if dtype == "int8" else 128))
    else:
        y = t.op("GELU", [x], _gelu, "GeluOptions", Approximate=False)
    run(t, [y], steps=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transcendental_ops_are_a_table(dtype):
    """LOGISTIC / TANH / GELU / EXP on 8-bit values: one take from a 256-entry table built at
    import (as TFLite's LUT kernels), no float math left; every input value covered."""
    t = QTwin(dtype, 26)
    x = t.input("x", (2, 128), scale=0.06)
    lo, hi = tflite_qtwin.QRANGE[dtype]
    t.val[x] = np.resize(np.arange(lo, hi + 1), (2, 128))
    ys = [t.unary("LOGISTIC", x),
          t.op("TANH", [x], np.tanh, params=(1 / 128, 0 if dtype == "int8" else 128)),
          t.op("GELU", [x], _gelu, "GeluOptions", Approximate=False),
          t.op("EXP", [x], np.exp)]
    mod, _ = run(t, ys, steps=0)
    text = mod.astext()
    assert text.count("take(") == 4
    assert not any(f in text for f in ("sigmoid(", "tanh(", "erf(", "exp("))


def test_layer_norm_decomposed():
    """LayerNorm as the TFLite converter writes it in an int8 model: MEAN,
    SQUARED_DIFFERENCE, MEAN, ADD (epsilon), RSQRT, SUB, MUL, each on quantized tensors."""
    t = QTwin("int8", 23)
    x = t.input("x", (2, 4, 16), scale=0.05)
    eps = t.b.constant("eps", np.array([1], "int8"), quant=(0.01, 0))
    t.val[eps], t.qp[eps] = np.array([1]), (0.01, 0)

    def mean(v):
        return t.op("MEAN", [v], lambda a: a.mean(-1, keepdims=True), "ReducerOptions",
                    consts=[[-1]], KeepDims=True)

    m = mean(x)
    var = mean(t.op("SQUARED_DIFFERENCE", [x, m], lambda a, b: (a - b) ** 2))
    r = t.op("RSQRT", [t.binary("ADD", var, eps)], lambda v: 1 / np.sqrt(v))
    c = t.op("SUB", [x, m], np.subtract, "SubOptions", FusedActivationFunction=0)
    run(t, [t.op("MUL", [c, r], np.multiply, "MulOptions", FusedActivationFunction=0)])


def test_transformer_encoder_end_to_end():
    """Two BERT-like int8 encoder layers (``tflite_qtwin.transformer_encoder``, the model
    ``bench_tflite`` times): every output within four steps of the simulation (whose MEAN,
    SQUARED_DIFFERENCE and RSQRT round the ideal float result, not TFLite's fixed point: the
    step apart spreads through two layers)."""
    t, (data, refs) = tflite_qtwin.transformer_encoder("int8", tokens=16, dim=32, heads=2,
                                                       ffn=64, layers=2)
    mod, params = relay.frontend.from_tflite(data)
    (out,) = build_and_run(mod, params, t.inputs())
    assert out.dtype == np.int8 and out.shape == refs[0].shape == (1, 16, 32)
    assert np.abs(out.astype("int64") - refs[0]).max() <= 4
    assert len(np.unique(refs[0])) > 50  # (a model whose outputs vary)


# ------------------------------------------------------------------ TRANSPOSE_CONV
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k,stride,out_hw,padding,bias", [
    (3, 2, (8, 8), "SAME", True), (4, 2, (8, 8), "SAME", False), (3, 1, (5, 5), "SAME", True),
    (3, 2, (9, 9), "VALID", True), (2, 2, (8, 8), "VALID", False)])
def test_transpose_conv(dtype, k, stride, out_hw, padding, bias):
    """A decoder's upsampling: per-channel int8 weights (quantized along the output
    channels) and an int32 bias, dequantized at import."""
    t = QTwin(dtype, 24)
    x = t.input("x", (1, 4, 4, 8))
    run(t, [t.transpose_conv(x, 6, k, stride, out_hw, padding, bias)])


def test_16x8_transpose_conv():
    """A 16x8 decoder's TRANSPOSE_CONV: int16 activations, int8 weights, an int64 bias."""
    t = QTwin("int16", 28)
    x = t.input("x", (1, 4, 4, 8), scale=1e-4)
    _, (out,) = run(t, [t.transpose_conv(x, 6, 3, 2, (8, 8), "SAME", True)])
    assert out.dtype == np.int16


# ------------------------------------------------------------------ 16x8
def test_16x8_conv_depthwise_fully_connected_add():
    """int16 activations (symmetric) with int8 weights and int64 biases: convs, a depthwise
    conv, a fully connected layer and an ADD of two scales; int16 outputs."""
    t = QTwin("int16", 25)
    x = t.input("x", (1, 6, 6, 16), scale=1e-4)
    y = t.conv(x, 24, 3, 1, "relu6")
    z = t.conv(y, 0, 3, 2, None, depthwise=True)
    s = t.binary("ADD", z, t.conv(z, 24, 1, 1, None))
    f = t.fully_connected(t.reshape(s, (1, 9 * 24)), 10, "relu")
    # (the twin rounds each 16x8 product in float: 2 steps off LiteRT's fixed point after
    # three of them, 4 after the fully connected layer; the importer's are LiteRT's:
    # test_tflite_exact_ops' 16x8 tests)
    _, outs = run(t, [s, f], steps=4)
    assert all(o.dtype == np.int16 for o in outs)


def test_relay_vm_runs_the_quantized_mobilenet():
    """relay.create_executor("vm") on an imported model gives the graph executor's outputs."""
    t, _ = tflite_qtwin.mobilenet_v2("uint8", size=16, width=8)
    mod, params = relay.frontend.from_tflite(t.b.finish())
    ref = build_and_run(mod, params, t.inputs())
    with tvm.transform.PassContext(opt_level=3):
        out = relay.create_executor("vm", mod=mod, target="llvm", params=params).evaluate()(
            **t.inputs())
    for o, r in zip(out, ref, strict=True):
        np.testing.assert_array_equal(o.numpy(), r)


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


def test_int32_activations_error():
    with pytest.raises(ImportError_, match="CONV_2D: input tensor 'x' is int32: quantized "
                                           "operators take int8, uint8 or int16"):
        relay.frontend.from_tflite(_single_conv("int32"))


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
