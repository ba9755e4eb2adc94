"""Quantized convs whose weight has zero points (weight_type=QUInt8, WeightSymmetric=False)
on a host with AVX-512 VNNI: the Relay importer runs them as the int32 conv of the uint8
input and the int8 weight ``w8`` (``onnx_quant.int8_conv_weight``: w - zp == w8 - z8), less
``x_zp * (sum(w8) - K * z8)`` and ``z8`` times the input's window sums
(``onnx_quant.VnniConvPlan``, ``qdq_weight.vnni_int_conv``). QLinearConv's integer conv is
exact (its output equals ONNX Runtime's); a QDQ Conv is within one step of ORT's output;
a QDQ depthwise conv reads its 8-bit input with ``w - zp`` as float32 integers."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from frontend_models import build_and_run  # noqa: E402
from onnx_conv_zp_cases import (  # noqa: E402
    ZP_CONV_CASES,
    conv_integer_model,
    qdq_conv_model,
    qdq_depthwise_zp_model,
    qlinear_conv_model,
)
from onnx_quant_cases import ort_run  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.analysis import post_order_visit  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402


def _convs(mod):
    """(data dtype, weight dtype, output dtype, output channels) of each nn.conv2d."""
    found = []

    def visit(e):
        if isinstance(e, relay.Call) and getattr(e.op, "name", "") == "nn.conv2d":
            found.append((e.args[0].checked_type.dtype, e.args[1].checked_type.dtype,
                          e.checked_type.dtype, int(e.checked_type.shape[1])))

    post_order_visit(relay.transform.InferType()(mod)["main"], visit)
    return found


def _case_id(case):
    return "-".join(str(v) for v in case)


def _assert_vnni_with_window_sums(mod, case):
    """The int32 conv of uint8 data and an int8 weight, and (3x3, strided or 1-D) the window
    sums' one-channel int32 conv of ones; float32 convs elsewhere."""
    convs = _convs(mod)
    if not conv_vnni.products_available():
        assert all(c[2] != "int32" for c in convs)
        return
    assert ("uint8", "int8", "int32", 32) in convs
    k, s = case[4], case[5]
    windows = [c for c in convs if c[1] == "int32"]
    assert windows == ([] if k == 1 and s == 1 else [("int32", "int32", "int32", 1)])


@pytest.mark.parametrize("case", ZP_CONV_CASES, ids=_case_id)
def test_qlinear_conv_with_weight_zero_points(case):
    """QLinearConv with weight zero points (per tensor, per channel; padded with the input's
    zero point, stride 2, 1x1, an int8 input, an int8 weight, a Conv1d): the VNNI int32 conv
    with window sums; its output equals the exact integer conv requantized, and ORT's (which
    has no int8 input with a uint8 weight)."""
    model, x, want = qlinear_conv_model(case)
    mod, params = relay.frontend.from_onnx(model, shape={"x": x.shape})
    _assert_vnni_with_window_sums(mod, case)
    got = build_and_run(mod, params, {"x": x})[0]
    np.testing.assert_array_equal(got, want)
    if case[0] == "uint8" or case[2] == "int8":
        np.testing.assert_array_equal(got, ort_run(model, {"x": x})[0])


@pytest.mark.parametrize("case", ZP_CONV_CASES[:3], ids=_case_id)
def test_conv_integer_with_weight_zero_points_is_exact(case):
    """ConvInteger with weight zero points equals the numpy integer conv (and ORT's, which
    takes one weight zero point only); on VNNI with the window sums, as QLinearConv."""
    model, x, want = conv_integer_model(case)
    mod, params = relay.frontend.from_onnx(model, shape={"x": x.shape})
    _assert_vnni_with_window_sums(mod, case)
    got = build_and_run(mod, params, {"x": x})[0]
    np.testing.assert_array_equal(got, want)
    if case[3] == "tensor":
        np.testing.assert_array_equal(got, ort_run(model, {"x": x})[0])


@pytest.mark.parametrize("case", ZP_CONV_CASES, ids=_case_id)
def test_qdq_conv_with_weight_zero_points(case):
    """A QDQ Conv whose weight DequantizeLinear has zero points: the VNNI int32 conv with
    window sums, scaled back per channel; within one step of ORT's output, nearly all
    equal."""
    model, feeds = qdq_conv_model(case)
    mod, params = relay.frontend.from_onnx(model)
    _assert_vnni_with_window_sums(mod, case)
    out = build_and_run(mod, params, feeds)[0]
    ref = ort_run(model, feeds)[0]
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    assert np.mean(out == ref) >= 0.99


@pytest.mark.parametrize("stride", [1, 2])
def test_qdq_depthwise_conv_with_weight_zero_points(stride):
    """A QDQ depthwise Conv of a uint8 weight with zero points per channel reads the 8-bit
    activation as it is, the weight as ``w - zp`` float32 integers (exact sums); within one
    step of ORT's output."""
    model, feeds = qdq_depthwise_zp_model(stride)
    mod, params = relay.frontend.from_onnx(model)
    assert [c[:3] for c in _convs(mod)] == [("uint8", "float32", "float32")]
    out = build_and_run(mod, params, feeds)[0]
    ref = ort_run(model, feeds)[0]
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    assert np.mean(out == ref) >= 0.99
