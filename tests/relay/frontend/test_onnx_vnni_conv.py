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
    int_conv1d_model,
    int_conv_case,
    int_conv_model,
    ort_run,
    qdq_conv,
    qlinear_conv1d_chain,
)

import minitvm as tvm  # noqa: E402
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
    assert _int32_convs(relay.transform.InferType()(mod)) == int(conv_vnni.products_available() and
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
    assert _int32_convs(relay.transform.InferType()(mod)) == int(conv_vnni.products_available())
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
    assert _int32_convs(relay.transform.InferType()(mod)) == int(conv_vnni.products_available())
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
    # (a weight zero point: the conv and its window sums' one-channel conv)
    assert _int32_convs(relay.transform.InferType()(mod)) == (
        {"int8": 1, "zp": 2}.get(weight, 0) if conv_vnni.products_available() else 0)
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
    assert _int32_convs(relay.transform.InferType()(mod)) == int(conv_vnni.products_available())
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
    ok = conv_vnni.products_available()
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


def _fused(mod, params) -> list:
    """The Primitive functions of ``mod`` after relay.optimize at opt_level 3 (llvm)."""
    with tvm.transform.PassContext(opt_level=3):
        opt, _ = relay.optimize(mod, target="llvm", params=params)
    found = []
    post_order_visit(opt["main"], lambda e: found.append(e) if isinstance(e, relay.Function)
                     and e.attrs is not None and e.attrs.get("Primitive", 0) else None)
    return found


def _ops(f) -> list:
    names = []
    post_order_visit(f.body, lambda e: names.append(getattr(e.op, "name", "")) if isinstance(
        e, relay.Call) else None)
    return names


def test_qlinear_conv1d_requantizes_in_the_conv():
    """A 1-D QLinearConv (an audio model's, QOperator): the 2-D conv over one row requantizes
    before the row is squeezed away, so one fused kernel makes the uint8 output (the squeeze
    after it is a reshape, aliased); on VNNI the input zero point's share and the int32 bias
    are one constant subtracted. Equal to ORT's output."""
    model, feeds = int_conv1d_model("QLinearConv")
    mod, params = relay.frontend.from_onnx(model)
    funcs = _fused(mod, params)
    convs = [f for f in funcs if "nn.conv2d" in _ops(f)]
    assert len(convs) == 1
    ops = _ops(convs[0])
    assert "round" in ops and "squeeze" not in ops
    assert convs[0].body.checked_type.dtype == "uint8"
    if conv_vnni.products_available():
        assert ops[:2] == ["nn.conv2d", "subtract"] and "add" not in ops[:3]
    np.testing.assert_array_equal(build_and_run(mod, params, feeds)[0],
                                  ort_run(model, feeds)[0])


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qlinear_conv1d_chain(dtype):
    """Two 1-D QLinearConvs in a row: the second takes the first's unsqueezed row (no
    expand_dims of the squeeze between them), so an int8 row's uint8 shift fuses into the first
    conv's epilogue: two fused kernels with convs, the rest reshapes and the pads with the
    zero point (``nn.pad``). Equal to ORT's output."""
    model, feeds = qlinear_conv1d_chain(dtype)
    mod, params = relay.frontend.from_onnx(model)
    funcs = _fused(mod, params)
    heavy = [f for f in funcs if "nn.conv2d" in _ops(f)]
    assert len(heavy) == 2
    rest = [set(_ops(f)) for f in funcs if f not in heavy]
    other = [ops for ops in rest if not ops <= {"squeeze", "expand_dims", "reshape", "nn.pad"}]
    assert len(other) <= 1, rest  # (the graph input's own row, shift and pad)
    if conv_vnni.products_available():  # (the first conv stores the row the second reads: uint8)
        assert [f.body.checked_type.dtype for f in heavy] == ["uint8", dtype]
    np.testing.assert_array_equal(build_and_run(mod, params, feeds)[0],
                                  ort_run(model, feeds)[0])


def test_add_to_product_folds_into_the_subtracted_constant():
    """``(y - c) + b`` of an int32 product becomes ``y - (c - b)``, also where ``c - b``
    wraps around: int32 results equal numpy's wrapping ones; a term that does not broadcast
    within ``c`` (or an unknown one) stays an add."""
    from minitvm.relay.frontend.onnx.ops_extra import add_to_product

    y = relay.var("y", shape=(1, 3, 2, 2), dtype="int32")
    c = np.array([2**31 - 1, -(2**31), 5], "int32").reshape(1, 3, 1, 1)
    b = np.array([10, -10, 7], "int32").reshape(1, 3, 1, 1)
    out = add_to_product(relay.subtract(y, relay.const(c)), relay.const(b), b)
    assert out.op.name == "subtract" and out.args[0] is y
    np.testing.assert_array_equal(out.args[1].data.numpy(), c - b)  # (numpy wraps too)
    yv = np.array([[-5, 2**31 - 1], [0, -(2**31)]], "int32") + np.zeros((1, 3, 1, 1), "int32")
    mod = tvm.IRModule.from_expr(relay.Function([y], out))
    got = build_and_run(mod, {}, {"y": yv})[0]
    np.testing.assert_array_equal(got, (yv - c) + b)
    wide = np.ones((1, 3, 2, 2), "int32")
    kept = add_to_product(relay.subtract(y, relay.const(c)), relay.const(wide), wide)
    assert kept.op.name == "add"
    assert add_to_product(relay.subtract(y, relay.const(c)), relay.const(b), None).op.name == \
        "add"
