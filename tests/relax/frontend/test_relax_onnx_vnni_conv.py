"""8-bit convs through Relax's ONNX importer on a host with AVX-512 VNNI, as Relay's importer
takes them (``relax/frontend/onnx/qdq_vnni``): QLinearConv, ConvInteger and a QDQ Conv become an
int32 conv2d of the uint8 input and the constant int8 weight, which relax.build lowers to
``schedule/conv_vnni`` with the weight packed once, at build time (``relax/vm/const_prepack``).
Results equal ONNX Runtime's; without VNNI (``conv_vnni.available`` False) the float32 convs
stay, as exact."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

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
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402
from minitvm.relax.struct_info import TensorStructInfo  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402


def _int32_convs(mod) -> int:
    """The conv2d bindings of ``main`` whose result is int32 (the VNNI form's)."""
    n = 0
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            v = b.value
            if getattr(getattr(v, "op", None), "name", "") == "relax.nn.conv2d":
                s = b.var.struct_info
                n += isinstance(s, TensorStructInfo) and str(s.dtype) == "int32"
    return n


def _build_run(mod, feeds):
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](*[tvm.nd.array(v) for v in feeds.values()])
    return ex, out.numpy()


@pytest.mark.parametrize("op", ["QLinearConv", "ConvInteger"])
@pytest.mark.parametrize("c, o, hw, k, s, d, zp", VNNI_CONV_CASES)
def test_int_conv_equals_onnxruntime(op, c, o, hw, k, s, d, zp):
    proto, x = int_conv_case(op, c, o, hw, k, s, d, zp)
    mod = from_onnx(proto, shape_dict={"x": x.shape})
    assert _int32_convs(mod) == int(conv_vnni.products_available() and (k > 1 or c >= 32))
    _, got = _build_run(mod, {"x": x})
    np.testing.assert_array_equal(got, ort_run(proto, {"x": x})[0])


@pytest.mark.parametrize("zp", [-20, 127])
def test_int8_input_runs_shifted(zp):
    """An int8 QLinearConv input: the uint8 ``x + 128``, its zero point 128 more."""
    rng = np.random.default_rng(zp + 200)
    proto = int_conv_model("QLinearConv", 16, 32, 7, 3, 1, 1, zp, rng, "int8")
    x = rng.integers(-128, 128, (1, 16, 7, 7)).astype("int8")
    mod = from_onnx(proto, shape_dict={"x": x.shape})
    assert _int32_convs(mod) == int(conv_vnni.products_available())
    np.testing.assert_array_equal(_build_run(mod, {"x": x})[1], ort_run(proto, {"x": x})[0])


@pytest.mark.parametrize("w_zp, per_channel, groups, weight", QDQ_CONV_CASES)
def test_qdq_conv(w_zp, per_channel, groups, weight):
    """A QDQ conv (uint8 activation, int8 weight): on VNNI the int32 conv of the quantized
    values scaled by both scales, where the weight has no zero point and one group; within
    one step of ORT's output (an integer conv there), nearly all equal."""
    model, feeds = qdq_conv(w_zp, per_channel, groups)
    mod = from_onnx(model)
    # (a weight zero point: the conv and its window sums' one-channel conv)
    assert _int32_convs(mod) == ({"int8": 1, "zp": 2}.get(weight, 0)
                                 if conv_vnni.products_available()
                                 else 0)
    _, out = _build_run(mod, feeds)
    ref = ort_run(model, feeds)[0]
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    assert np.mean(out == ref) >= 0.99


@pytest.mark.parametrize("w_zp, per_channel", [(None, True), (0, False)])
def test_qdq_conv1d(w_zp, per_channel):
    """A QDQ Conv1d (an audio model's, quantize_static): on VNNI the int32 conv2d over one
    row, within one step of ORT's output."""
    model, feeds = qdq_conv(w_zp, per_channel, 1, cin=32, rank=1)
    mod = from_onnx(model)
    assert _int32_convs(mod) == int(conv_vnni.products_available())
    _, out = _build_run(mod, feeds)
    ref = ort_run(model, feeds)[0]
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    assert np.mean(out == ref) >= 0.97


def test_weight_packed_once_at_build():
    """The VM holds the conv's weight in conv_vnni's packed layout ([O/16, C/4, KH, KW, 16,
    4] int8, made at build time; AVX2's int16 pairs: [O/16, C/2, KH, KW, 16, 2] int16 seen as
    int8) and not the [O, C, KH, KW] one; the kernel reads it as it is (no per-call packing
    loop)."""
    if not conv_vnni.products_available():
        pytest.skip("the host has neither AVX-512 VNNI nor AVX2")
    rng = np.random.default_rng(5)
    proto = int_conv_model("QLinearConv", 18, 32, 8, 3, 1, 1, 7, rng)
    w = next(onnx.numpy_helper.to_array(i) for i in proto.graph.initializer if i.name == "w")
    ex, _ = _build_run(from_onnx(proto, shape_dict={"x": (1, 18, 8, 8)}),
                       {"x": rng.integers(0, 256, (1, 18, 8, 8)).astype("uint8")})
    consts = [c for c in ex.constants if isinstance(c, np.ndarray) and c.dtype == np.int8]
    kind = conv_vnni.kind_name(conv_vnni.row_words("uint8"))  # (the host's words)
    packed = conv_vnni.PackWeight(32, 18, 3, 3, kind)(w)
    assert any(c.shape == packed.shape and np.array_equal(c, packed) for c in consts)
    assert not any(c.shape == w.shape for c in consts)
    convs = [rec for rec, _ in ex.kernels.values() if "w_vnni" in str(rec.prim_func) or
             "x_vnni" in str(rec.prim_func)]
    assert convs and all("w_vnni" not in str(rec.prim_func) for rec in convs)


@pytest.mark.parametrize("op", ["QLinearConv", "ConvInteger", "qdq"])
def test_without_vnni_float_convs_stay(monkeypatch, op):
    """A host without VNNI: no int32 conv, and the results still equal ORT's."""
    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    monkeypatch.setattr(conv_vnni, "pairs_available", lambda: False)  # (and AVX2's pairs)
    rng = np.random.default_rng(11)
    if op == "qdq":
        model, feeds = qdq_conv(None, True, 1)
    else:
        model = int_conv_model(op, 16, 32, 8, 3, 1, 1, 100, rng)
        feeds = {"x": rng.integers(0, 256, (1, 16, 8, 8)).astype("uint8")}
    mod = from_onnx(model)
    assert _int32_convs(mod) == 0
    _, out = _build_run(mod, feeds)
    ref = ort_run(model, feeds)[0]
    if op == "qdq":
        assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    else:
        np.testing.assert_array_equal(out, ref)


def _bindings(mod) -> dict:
    """``main``'s bound values by variable."""
    return {b.var: b.value for block in mod["main"].body.blocks for b in block.bindings}


def _op_name(v) -> str:
    return getattr(getattr(v, "op", None), "name", "")


def test_qlinear_conv1d_requantizes_before_the_squeeze():
    """A 1-D QLinearConv (QOperator audio model): the row is squeezed away only after the
    requantization (its uint8 astype), so the epilogue fuses into the conv; on VNNI the input
    zero point's share less the int32 bias is one constant subtracted from the conv (no int32
    add). Equal to ORT's output."""
    model, feeds = int_conv1d_model("QLinearConv")
    mod = from_onnx(model)
    bound = _bindings(mod)
    squeezes = [v for v in bound.values() if _op_name(v) == "relax.squeeze"]
    assert len(squeezes) == 1
    assert _op_name(bound[squeezes[0].args[0]]) == "relax.astype"
    assert str(squeezes[0].args[0].struct_info.dtype) == "uint8"
    if conv_vnni.products_available():
        (conv,) = [k for k, v in bound.items() if _op_name(v) == "relax.nn.conv2d"]
        accs = [bound[v.args[0]] for v in bound.values() if _op_name(v) == "relax.astype" and
                v.args[0] in bound and
                any(a is conv for a in getattr(bound[v.args[0]], "args", ()))]
        assert [_op_name(a) for a in accs] == ["relax.subtract"]  # (the conv less a constant)
        assert not any(_op_name(v) == "relax.add" and str(k.struct_info.dtype) == "int32"
                       for k, v in bound.items())
    _, got = _build_run(mod, feeds)
    np.testing.assert_array_equal(got, ort_run(model, feeds)[0])


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qlinear_conv1d_chain(dtype):
    """Two 1-D QLinearConvs in a row: the second takes the first's row as it was before the
    squeeze (one expand_dims in all: the graph input's). Equal to ORT's output."""
    model, feeds = qlinear_conv1d_chain(dtype)
    mod = from_onnx(model)
    assert sum(_op_name(v) == "relax.expand_dims" for v in _bindings(mod).values()) == 1
    _, got = _build_run(mod, feeds)
    np.testing.assert_array_equal(got, ort_run(model, feeds)[0])
