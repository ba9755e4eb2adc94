"""Quantized convs whose weight has zero points (weight_type=QUInt8, WeightSymmetric=False)
through Relax's ONNX importer, as Relay's takes them: on AVX-512 VNNI the int32 conv of the
uint8 input and ``onnx_quant.int8_conv_weight``'s int8 weight, less the zero points' shares,
the weight's by the input's window sums (``qdq_vnni.int_conv`` / ``window_sums``).
QLinearConv and ConvInteger are exact; a QDQ Conv is within one step of ORT's output; a QDQ
depthwise conv reads its 8-bit input with ``w - zp`` as float32 integers."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from onnx_conv_zp_cases import (  # noqa: E402
    ZP_CONV_CASES,
    conv_integer_model,
    qdq_conv_model,
    qdq_depthwise_zp_model,
    qlinear_conv_model,
)
from onnx_quant_cases import ort_run  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402
from minitvm.relax.struct_info import TensorStructInfo  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402


def _convs(mod):
    """(data dtype, weight dtype, output dtype, output channels) of each conv2d binding."""
    found = []
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            v = b.value
            if getattr(getattr(v, "op", None), "name", "") == "relax.nn.conv2d":
                s = b.var.struct_info
                assert isinstance(s, TensorStructInfo)
                found.append((str(v.args[0].struct_info.dtype), str(v.args[1].struct_info.dtype),
                              str(s.dtype), int(s.shape.values[1])))
    return found


def _build_run(mod, feeds):
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](*[tvm.nd.array(v) for v in feeds.values()])
    return out.numpy()


def _case_id(case):
    return "-".join(str(v) for v in case)


def _assert_vnni_with_window_sums(mod, case):
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
    """QLinearConv with weight zero points: the VNNI int32 conv with window sums; its output
    equals the exact integer conv requantized, and ORT's (no int8 input with a uint8 weight
    there)."""
    model, x, want = qlinear_conv_model(case)
    mod = from_onnx(model, shape_dict={"x": x.shape})
    _assert_vnni_with_window_sums(mod, case)
    got = _build_run(mod, {"x": x})
    np.testing.assert_array_equal(got, want)
    if case[0] == "uint8" or case[2] == "int8":
        np.testing.assert_array_equal(got, ort_run(model, {"x": x})[0])


@pytest.mark.parametrize("case", ZP_CONV_CASES, ids=_case_id)
def test_conv_integer_with_weight_zero_points(case):
    """ConvInteger with weight zero points: the VNNI int32 conv with window sums, equal to
    the numpy integer conv (and ORT's, which takes one weight zero point only)."""
    model, x, want = conv_integer_model(case)
    mod = from_onnx(model, shape_dict={"x": x.shape})
    _assert_vnni_with_window_sums(mod, case)
    got = _build_run(mod, {"x": x})
    np.testing.assert_array_equal(got, want)
    if case[3] == "tensor":
        np.testing.assert_array_equal(got, ort_run(model, {"x": x})[0])


@pytest.mark.parametrize("case", ZP_CONV_CASES, ids=_case_id)
def test_qdq_conv_with_weight_zero_points(case):
    """A QDQ Conv whose weight DequantizeLinear has zero points: the VNNI int32 conv with
    window sums; within one step of ORT's output, nearly all equal."""
    model, feeds = qdq_conv_model(case)
    mod = from_onnx(model)
    _assert_vnni_with_window_sums(mod, case)
    out = _build_run(mod, feeds)
    ref = ort_run(model, feeds)[0]
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    assert np.mean(out == ref) >= 0.99


@pytest.mark.parametrize("stride", [1, 2])
def test_qdq_depthwise_conv_with_weight_zero_points(stride):
    """A QDQ depthwise Conv of a uint8 weight with zero points per channel reads the 8-bit
    activation as it is and ``w - zp`` as float32 integers; within one step of ORT."""
    model, feeds = qdq_depthwise_zp_model(stride)
    mod = from_onnx(model)
    assert [c[:3] for c in _convs(mod)] == [("uint8", "float32", "float32")]
    out = _build_run(mod, feeds)
    ref = ort_run(model, feeds)[0]
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    assert np.mean(out == ref) >= 0.99
