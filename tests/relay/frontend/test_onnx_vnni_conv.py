"""QLinearConv and ConvInteger on a host with AVX-512 VNNI: the importer passes the uint8 input
and the int8 weight to an int32 conv2d (``schedule/conv_vnni``), the input padded with its zero
point and ``x_zp * sum(w)`` subtracted per output channel (``onnx_quant.vnni_conv``). The
results equal ONNX Runtime's exactly: nonzero zero points with padding, stride 2, dilation, a
channel count not a multiple of 4. Elsewhere (and for 1x1 convs) the float32 convs stay (as
exact)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from frontend_models import build_and_run  # noqa: E402
from onnx_quant_cases import (  # noqa: E402
    QDQ_CONV_CASES,
    VNNI_CONV_CASES,
    int_conv_case,
    int_conv_model,
    ort_run,
    qdq_conv,
)

from minitvm import relay  # noqa: E402
from minitvm.frontend_common import onnx_quant  # noqa: E402
from minitvm.relay.analysis import post_order_visit  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402


def _int32_convs(mod) -> int:
    found = []
    post_order_visit(mod["main"], lambda e: found.append(e) if isinstance(e, relay.Call) and
                     getattr(e.op, "name", "") == "nn.conv2d" and
                     e.checked_type.dtype == "int32" else None)
    return len(found)


@pytest.mark.parametrize("op", ["QLinearConv", "ConvInteger"])
@pytest.mark.parametrize("c, o, hw, k, s, d, zp", VNNI_CONV_CASES)
def test_vnni_conv_equals_onnxruntime(op, c, o, hw, k, s, d, zp):
    proto, x = int_conv_case(op, c, o, hw, k, s, d, zp)
    mod, params = relay.frontend.from_onnx(proto, shape={"x": x.shape})
    assert _int32_convs(relay.transform.InferType()(mod)) == int(conv_vnni.available() and
                                                                 (k > 1 or c >= 32))
    got = build_and_run(mod, params, {"x": x})[0]
    want = ort_run(proto, {"x": x})[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["QLinearConv", "ConvInteger"])
@pytest.mark.parametrize("c, o, hw, k, s, d, zp", [
    (40, 24, 14, 1, 1, 1, 7),   # MobileNetV2's 24-channel 1x1 conv: pixel lanes, zero rows
    (24, 40, 9, 3, 2, 1, 0),    # 40 = 32 + a last channel tile of 8, stride 2
    (32, 8, 5, 3, 1, 1, 100),   # 8 output channels: half a tile stored
])
def test_vnni_conv_of_8s_of_channels_equals_onnxruntime(op, c, o, hw, k, s, d, zp):
    proto, x = int_conv_case(op, c, o, hw, k, s, d, zp)
    mod, params = relay.frontend.from_onnx(proto, shape={"x": x.shape})
    assert _int32_convs(relay.transform.InferType()(mod)) == int(conv_vnni.available())
    np.testing.assert_array_equal(build_and_run(mod, params, {"x": x})[0],
                                  ort_run(proto, {"x": x})[0])


@pytest.mark.parametrize("c, o, hw, k, s, d, zp", [(16, 32, 8, 3, 1, 1, -20),
                                                    (20, 16, 9, 3, 2, 1, 0),
                                                    (16, 16, 6, 3, 1, 1, 127)])
def test_int8_input_runs_shifted(c, o, hw, k, s, d, zp):
    """An int8 QLinearConv input: the uint8 ``x + 128`` with its zero point 128 more."""
    rng = np.random.default_rng(c + o + zp)
    proto = int_conv_model("QLinearConv", c, o, hw, k, s, d, zp, rng, "int8")
    x = rng.integers(-128, 128, (1, c, hw, hw)).astype("int8")
    x[0, :, 0, :] = -128
    mod, params = relay.frontend.from_onnx(proto, shape={"x": x.shape})
    assert _int32_convs(relay.transform.InferType()(mod)) == int(conv_vnni.available())
    np.testing.assert_array_equal(build_and_run(mod, params, {"x": x})[0],
                                  ort_run(proto, {"x": x})[0])


@pytest.mark.parametrize("w_zp, per_channel, groups, weight", QDQ_CONV_CASES)
def test_qdq_conv_on_vnni(w_zp, per_channel, groups, weight):
    """A QDQ conv (uint8 activation, int8 weight): on VNNI an int32 conv of the quantized
    values, scaled by both scales (``qdq_weight.vnni_qdq_conv``) where the weight has no zero
    point and one group; within one step of ORT's output (which runs the QDQ group as an
    integer conv), nearly all equal."""
    model, feeds = qdq_conv(w_zp, per_channel, groups)
    mod, params = relay.frontend.from_onnx(model)
    assert _int32_convs(relay.transform.InferType()(mod)) == int(
        conv_vnni.available() and weight == "int8")
    out = build_and_run(mod, params, feeds)[0]
    ref = ort_run(model, feeds)[0]
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    assert np.mean(out == ref) >= 0.99


@pytest.mark.parametrize("w_zp, per_channel", [(None, True), (0, False)])
def test_qdq_conv1d_on_vnni(w_zp, per_channel):
    """A QDQ Conv1d (an audio model's, quantize_static): on VNNI the int32 conv2d over one
    row, within one step of ORT's output."""
    model, feeds = qdq_conv(w_zp, per_channel, 1, cin=32, rank=1)
    mod, params = relay.frontend.from_onnx(model)
    assert _int32_convs(relay.transform.InferType()(mod)) == int(conv_vnni.available())
    out = build_and_run(mod, params, feeds)[0]
    ref = ort_run(model, feeds)[0]
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    assert np.mean(out == ref) >= 0.97


def test_vnni_conv_choice():
    """Only uint8 inputs with a scalar constant zero point and constant int8 weights without
    zero points, one group, 8s of output channels (``VNNI_CHANNEL_STEP``) and enough of a
    reduction."""
    w = np.ones((32, 16, 3, 3), "int8")
    ok = conv_vnni.available()
    assert onnx_quant.vnni_conv("uint8", np.uint8(3), "int8", w, None, 1, 32) == ok
    assert onnx_quant.vnni_conv("uint8", None, "int8", w, np.zeros(32, "int8"), 1, 32) == ok
    assert onnx_quant.vnni_conv("int8", np.int8(-3), "int8", w, None, 1, 32) == ok
    assert not onnx_quant.vnni_conv("int16", None, "int8", w, None, 1, 32)
    assert not onnx_quant.vnni_conv("uint8", None, "int8", w, np.ones(32, "int8"), 1, 32)
    assert not onnx_quant.vnni_conv("uint8", onnx_quant.UNKNOWN, "int8", w, None, 1, 32)
    assert not onnx_quant.vnni_conv("uint8", None, "int8", None, None, 1, 32)
    assert onnx_quant.vnni_conv("uint8", None, "int8", w[:24], None, 1, 24) == ok  # (8s)
    assert not onnx_quant.vnni_conv("uint8", None, "int8", w[:20], None, 1, 20)
    assert not onnx_quant.vnni_conv("uint8", None, "int8", w, None, 2, 32)
    assert not onnx_quant.vnni_conv("uint8", None, "int8", np.ones((16, 3, 7, 7), "int8"), None,
                                    1, 16)  # (a stem of 3 channels)
    assert onnx_quant.vnni_conv("uint8", None, "int8", np.ones((16, 32, 1, 1), "int8"), None,
                                1, 16) == ok  # (a 1x1 conv of 32 input channels)
    assert onnx_quant.vnni_conv("uint8", None, "int8", np.ones((16, 16, 1, 1), "int8"), None,
                                1, 16) == ok  # (a 1x1 conv of 16)
    assert not onnx_quant.vnni_conv("uint8", None, "int8", np.ones((16, 8, 1, 1), "int8"), None,
                                    1, 16)  # (a 1x1 conv of 8)
    sums = onnx_quant.zero_point_sums(np.full((2, 3, 1, 1), -2, "int8"), np.uint8(5))
    np.testing.assert_array_equal(sums, np.full((1, 2, 1, 1), -30, "int32"))
