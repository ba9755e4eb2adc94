"""Quantized ONNX models through Relax's importer and relax.build, against ONNX Runtime: the
PyTorch convnet and MLP quantized by onnxruntime.quantization in QOperator format
(QLinearConv, com.microsoft QGemm / QLinearAdd...) and with quantize_dynamic
(DynamicQuantizeLinear + ConvInteger / MatMulInteger), exported with a dynamic batch axis and
built once for every batch size; and the integer ops one node at a time."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="building the test models needs `torch`")
onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

import onnx_finite_cases as finite_cases  # noqa: E402
import onnx_quant_cases as cases  # noqa: E402
import onnx_rnn_quant_reference as rnn_ref  # noqa: E402
from onnx import TensorProto  # noqa: E402
from onnx_quant_cases import (  # noqa: E402
    QDQ_CONV_CASES,
    QDQ_DEPTHWISE_CASES,
    qdq_conv,
    qdq_depthwise,
    quantized,
)
from onnx_quant_cases import inits_of as _inits  # noqa: E402
from onnx_quant_cases import ort_run as _ort  # noqa: E402
from onnx_quant_cases import single as _single  # noqa: E402
from onnx_quant_cases import vi as _vi  # noqa: E402
from onnxruntime.quantization import QuantType  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402


def _quantized(tmp_path, name: str, mode: str):
    """The model exported with a dynamic batch axis, quantized by onnxruntime (uint8
    activations where static)."""
    return quantized(tmp_path, name, mode, QuantType.QUInt8, dynamic_batch=True)


def _build(mod):
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    return relax.VirtualMachine(ex, tvm.cpu())["main"]


def _run(fn, feeds: dict):
    out = fn(*[tvm.nd.array(v) for v in feeds.values()])
    if isinstance(out, tvm.nd.NDArray):
        return [out.numpy()]
    return [o.numpy() for o in out]


def _output_step(proto) -> float:
    """The step of the output's int8 grid when a DequantizeLinear makes it, else 0."""
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    for node in proto.graph.node:
        if node.output[0] == proto.graph.output[0].name and node.op_type == "DequantizeLinear":
            return float(np.max(inits[node.input[1]]))
    return 0.0


@pytest.mark.parametrize("mode", ["qoperator", "dynamic"])
@pytest.mark.parametrize("name", ["convnet", "mlp"])
def test_quantized_model_matches_onnxruntime(tmp_path, name, mode):
    proto, shape = _quantized(tmp_path, name, mode)
    ops = {n.op_type for n in proto.graph.node}
    assert {"qoperator": "QGemm", "dynamic": "DynamicQuantizeLinear"}[mode] in ops
    fn = _build(from_onnx(proto))  # the batch stays symbolic: one build for every batch
    for batch in (shape[0], 3):
        x = np.random.default_rng(batch).standard_normal((batch,) + shape[1:]).astype(
            "float32")
        out = _run(fn, {"x": x})[0]
        ref = _ort(proto, {"x": x})[0]
        assert out.shape == ref.shape
        if mode == "qoperator":  # ORT's int8 kernels: within one step of the output's grid
            step = _output_step(proto)
            assert step > 0
            assert np.abs(out - ref).max() <= step * 1.001
            assert np.mean(np.abs(out - ref) <= 1e-6) >= 0.9
        else:  # exact integer products: only the float rounding of the rescale differs
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def _close_to_ort(model, feeds, steps: int = 1):
    out = _run(_build(from_onnx(model)), feeds)[0]
    ref = _ort(model, feeds)[0]
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= steps
    return out, ref


@pytest.mark.parametrize("w_zp,per_channel,groups,weight", QDQ_CONV_CASES)
def test_qdq_conv_reads_int8_weights(w_zp, per_channel, groups, weight):
    """DequantizeLinear of a constant int8 weight feeding a Conv: R.nn.conv2d reads the int8
    values (out_dtype float32; on VNNI int32, with the uint8 input's values:
    ``test_relax_onnx_vnni_conv``) and its output is scaled per channel; within one step of
    ORT."""
    model, feeds = qdq_conv(w_zp, per_channel, groups)
    convs = [line for line in from_onnx(model).script().splitlines() if "R.nn.conv2d" in line]
    vnni = conv_vnni.products_available()
    if weight == "zp" and vnni:  # (the int32 conv, then its window sums' one-channel conv)
        assert len(convs) == 2 and all('out_dtype="int32"' in c for c in convs)
    else:
        want = "void" if weight != "int8" else "int32" if vnni else "float32"
        assert len(convs) == 1 and f'out_dtype="{want}"' in convs[0]
    out, ref = _close_to_ort(model, feeds)
    assert np.mean(out == ref) >= 0.99


@pytest.mark.parametrize("x_dtype,x_zp,stride,reads", QDQ_DEPTHWISE_CASES)
def test_qdq_depthwise_conv_reads_8bit_data(x_dtype, x_zp, stride, reads):
    """A QDQ depthwise Conv (``qdq_vnni.qdq_depthwise``): R.nn.conv2d reads the 8-bit
    activation (or its uint8 shift) with a float32 out_dtype, and its build runs it in the
    depthwise schedule reading that 8-bit tensor; any other zero point dequantizes. Within one
    step of ORT's output grid, nearly all equal."""
    model, feeds = qdq_depthwise(x_dtype, x_zp, stride)
    text = from_onnx(model).script()
    convs = [line for line in text.splitlines() if "R.nn.conv2d" in line]
    assert len(convs) == 1
    if reads == "float32":
        assert 'out_dtype="float32"' not in convs[0]
    else:
        assert 'out_dtype="float32"' in convs[0]
        assert ('dtype="int16"' in text) == (reads == "shift")  # (x + 128 in int16)
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(from_onnx(model), "llvm")
    out = _run(relax.VirtualMachine(ex, tvm.cpu())["main"], feeds)[0]
    ref = _ort(model, feeds)[0]
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    assert np.mean(out == ref) >= 0.99
    if reads != "float32":  # (one kernel takes the 8-bit tensor into the depthwise copies)
        dw = [rec.prim_func for rec, _ in ex.kernels.values()
              if "dw_xph" in str(rec.prim_func) or "dw_xt" in str(rec.prim_func) or
              "dw_flat" in str(rec.prim_func)]
        assert len(dw) == 1
        assert dw[0].buffer_map[dw[0].params[0]].dtype in ("uint8", "int8")


@pytest.mark.parametrize("fill", ["random", "positive", "zeros"])
def test_dynamic_quantize_linear(fill):
    model, feeds = cases.dynamic_quantize_linear(fill)
    outs = _run(_build(from_onnx(model)), feeds)
    refs = _ort(model, feeds)
    np.testing.assert_allclose(outs[1], refs[1], rtol=1e-7)
    assert outs[2] == refs[2] and outs[2].dtype == np.uint8
    assert np.abs(outs[0].astype(int) - refs[0].astype(int)).max() <= (0 if fill != "random"
                                                                        else 1)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_quantize_linear_of_nan_is_lowest(dtype):
    """NaN quantizes to the dtype's lowest value, +-inf saturate: ONNX Runtime's output."""
    model, feeds = cases.quantize_non_finite(dtype)
    out = _run(_build(from_onnx(model)), feeds)[0]
    np.testing.assert_array_equal(out, _ort(model, feeds)[0])
    assert out[0] == np.iinfo(dtype).min and out[1] == np.iinfo(dtype).max


def _matmul_out_dtypes(mod) -> list[str]:
    """The out_dtype of each R.matmul of the printed module (float32 where not given)."""
    lines = [line for line in mod.script().splitlines() if "R.matmul(" in line]
    return ["int32" if 'out_dtype="int32"' in line else "float32" for line in lines]


@pytest.mark.parametrize("per_channel, w_dtype, direction, batch",
                         [(False, "int8", "forward", 2), (True, "uint8", "bidirectional", 3)])
def test_dynamic_quantize_lstm(per_channel, w_dtype, direction, batch):
    """quantize_dynamic's LSTM. On VNNI it runs as ORT runs it: the input and each step's
    state quantized at run time, int32 matmuls (the input's, then one a step after the
    first), equal within float rounding to ORT's one-thread run and to the numpy run of that
    arithmetic (``onnx_rnn_quant_reference``); elsewhere the float LSTM over its weights
    dequantized, equal to ORT's LSTM over them."""
    qmodel, fmodel, feeds = cases.dynamic_quantize_lstm(per_channel, w_dtype, direction,
                                                        batch=batch)
    mod = from_onnx(qmodel, shape_dict={"x": feeds["x"].shape})
    seq, dirs = feeds["x"].shape[0], 2 if direction == "bidirectional" else 1
    vnni = conv_vnni.available()
    assert _matmul_out_dtypes(mod) == ["int32" if vnni else "float32"] * (seq * dirs)
    weights = {line.split("R.matmul(")[1].split(",")[1] for line in mod.script().splitlines()
               if "R.matmul(" in line}
    assert len(weights) == 2 * dirs  # one constant per weight and direction, every step's
    outs = _run(_build(mod), feeds)
    wants = [rnn_ref.from_model(qmodel, feeds["x"]), rnn_ref.ort_one_thread(qmodel, feeds)] \
        if vnni else [_ort(fmodel, feeds)]
    for want in wants:
        for got, w in zip(outs, want, strict=True):
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=2e-6)


def test_dynamic_quantize_lstm_sequence_lens():
    """Sequence lengths shorter than the input: the float LSTM over the dequantized weights
    (ORT's masked steps quantize states this one does not hold), equal to ORT's LSTM."""
    qmodel, fmodel, feeds = cases.dynamic_quantize_lstm(False, "int8", "forward")
    lens = np.array([4, 6], "int32")
    mod = from_onnx(rnn_ref.with_sequence_lens(qmodel, lens), shape_dict={"x": feeds["x"].shape})
    assert set(_matmul_out_dtypes(mod)) == {"float32"}
    outs = _run(_build(mod), feeds)
    for got, want in zip(outs, _ort(rnn_ref.with_sequence_lens(fmodel, lens), feeds),
                         strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dynamic_quantize_lstm_needs_constant_weights():
    """A weight that is a graph input is a clear error."""
    from onnx import helper

    qmodel, _, feeds = cases.dynamic_quantize_lstm(False)
    w = [i for i in qmodel.graph.initializer if i.name == "w"][0]
    qmodel.graph.initializer.remove(w)
    qmodel.graph.input.append(helper.make_tensor_value_info("w", TensorProto.INT8, [1, 10, 32]))
    with pytest.raises(Exception, match="W and its scale must be constants"):
        from_onnx(qmodel, shape_dict={"x": feeds["x"].shape, "w": (1, 10, 32)})


@pytest.mark.parametrize("op", ["ConvInteger", "QLinearConv"])
def test_int_conv1d(op):
    """A 1-D integer conv (an audio model's Conv1d, quantized) is the 2-D conv over one row:
    ORT's result exactly (the QLinearConv's requantization within one step), on VNNI an int32
    conv2d."""
    model, feeds = cases.int_conv1d_model(op)
    mod = from_onnx(model)
    convs = [line for line in mod.script().splitlines() if "R.nn.conv2d" in line]
    assert len(convs) == 1
    assert ('out_dtype="int32"' in convs[0]) == conv_vnni.products_available()
    out = _run(_build(mod), feeds)[0]
    want = _ort(model, feeds)[0]
    assert out.shape == want.shape and out.dtype == want.dtype
    assert np.abs(out.astype(int) - want.astype(int)).max() <= (0 if op == "ConvInteger" else 1)


@pytest.mark.parametrize("dtype, same", [("uint8", True), ("int8", True), ("uint8", False)])
def test_qdq_pair_skips_the_round_trip(dtype, same):
    """A DequantizeLinear of a QuantizeLinear with the same scalar scale and zero point is
    ``clip(round(x / s), lo - z, hi - z) * s``: no 8-bit cast; ORT's values, NaN and
    infinities included."""
    model, feeds = cases.qdq_chain(dtype, same)
    mod = from_onnx(model)
    text = relax.transform.DeadCodeElimination()(mod).script()  # (the unread QuantizeLinear)
    assert (f'"{dtype}"' in text) == (not same)  # (8-bit casts: the second pair keeps its own)
    out = _run(_build(mod), feeds)[0]
    np.testing.assert_array_equal(out, _ort(model, feeds)[0])


def _calls(mod, op: str) -> int:
    """How many ``R.<op>(`` calls the module holds after dead code elimination."""
    return relax.transform.DeadCodeElimination()(mod).script().count(f"R.{op}(")


@pytest.mark.parametrize("pow2", [False, True])
def test_quantize_of_finite_values_multiplies(pow2):
    """A QuantizeLinear whose input cannot be NaN (``onnx_finite``: the Relu of a MatMul of
    dequantized data, an Add of dequantized values) multiplies by the reciprocal scale, no NaN
    select; those of the graph input and of a Div keep the divide and the select. ORT's output
    (NaN and infinities in the input), and numpy's to the bit with power-of-two scales."""
    model, feeds = finite_cases.qdq_finite_chain(pow2)
    mod = from_onnx(model)
    assert _calls(mod, "isnan") == 2  # (the pairs of the graph input and of the Div)
    assert _calls(mod, "divide") == 3  # (those two and the Div itself)
    out = _run(_build(mod), feeds)[0]
    np.testing.assert_array_equal(out, _ort(model, feeds)[0])
    if pow2:
        np.testing.assert_array_equal(out, finite_cases.qdq_finite_chain_reference(
            model, feeds["x"]))


def test_quantize_of_graph_input_keeps_nan_select():
    """A lone QuantizeLinear of a graph input may see a NaN: its divide and select stay."""
    mod = from_onnx(cases.quantize_non_finite("uint8")[0])
    assert _calls(mod, "isnan") == 1 and _calls(mod, "divide") == 1
    assert _calls(mod, "multiply") == 0


def test_qlinear_inputs_are_not_qdq_pairs():
    """A QLinearAdd's second input, of its first's scale and zero point, stays itself."""
    model, feeds = cases.qlinear_add_after_quantize()
    out = _run(_build(from_onnx(model)), feeds)[0]
    assert np.abs(out.astype(int) - _ort(model, feeds)[0].astype(int)).max() <= 1


def _matmul_dtypes(mod):
    text = mod.script() if hasattr(mod, "script") else str(mod)
    return [line for line in text.splitlines() if "R.matmul" in line]


@pytest.mark.parametrize("k,b_const,n_matmuls", [(48, True, 1), (1200, True, 1),
                                                 (3000, True, 2), (8000, False, 1)])
@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
def test_matmul_integer(monkeypatch, k, b_const, n_matmuls, a_dtype):
    """Per-column weight zero points; float32 pieces where exact (one for K=1200 over known
    weights, the zero point near a's lowest value; two for K=3000), else one int32 product."""
    monkeypatch.setattr(conv_vnni, "available", lambda: False)  # (else VNNI: test_*vnni_matmul)
    monkeypatch.setattr(conv_vnni, "pairs_available", lambda: False)  # (and AVX2's pairs)
    rng = np.random.default_rng(k)
    lo, hi = (0, 256) if a_dtype == "uint8" else (-128, 128)
    a = rng.integers(lo, hi, (2, 5, k)).astype(a_dtype)
    b = rng.integers(-128, 128, (k, 7)).astype("int8")
    a_zp = np.array(lo + 3, a_dtype)
    b_zp = rng.integers(-5, 5, 7).astype("int8")
    t = TensorProto.UINT8 if a_dtype == "uint8" else TensorProto.INT8
    inits = _inits(**({"b": b} if b_const else {}), a_zp=a_zp, b_zp=b_zp)
    b_in = "b" if b_const else _vi("b", TensorProto.INT8, [k, 7])
    model = _single("MatMulInteger", [_vi("a", t, [2, 5, k]), b_in, "a_zp", "b_zp"],
                    [_vi("y", TensorProto.INT32, [2, 5, 7])], inits)
    mod = from_onnx(model)
    mms = _matmul_dtypes(mod)
    assert len(mms) == n_matmuls
    assert all(('"int32"' in m) == (not b_const) for m in mms)
    feeds = {"a": a} if b_const else {"a": a, "b": b}
    out = _run(_build(mod), feeds)[0]
    ref = (a.astype(np.int64) - a_zp) @ (b.astype(np.int64) - b_zp)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out, _ort(model, feeds)[0])


@pytest.mark.parametrize("cin,groups", [(8, 1), (8, 8), (256, 1)])
def test_conv_integer(cin, groups):
    """Padding counts as the input's zero point; a per-output-channel weight zero point."""
    rng = np.random.default_rng(cin + groups)
    cout = 8
    x = rng.integers(0, 256, (1, cin, 9, 9)).astype("uint8")
    w = rng.integers(-128, 128, (cout, cin // groups, 3, 3)).astype("int8")
    x_zp = np.array(131, "uint8")
    w_zp = rng.integers(-4, 4, cout).astype("int8")
    model = _single("ConvInteger", [_vi("x", TensorProto.UINT8, [1, cin, 9, 9]), "w", "x_zp",
                                    "w_zp"], [_vi("y", TensorProto.INT32, None)],
                    _inits(w=w, x_zp=x_zp, w_zp=w_zp), pads=[1, 1, 1, 1], strides=[2, 1],
                    group=groups)
    out = _run(_build(from_onnx(model)), {"x": x})[0]
    xs = torch.tensor(x.astype(np.float64) - 131.0)
    ws = torch.tensor(w.astype(np.float64) - w_zp.reshape(-1, 1, 1, 1))
    ref = torch.nn.functional.conv2d(xs, ws, padding=1, stride=(2, 1), groups=groups).numpy()
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ref.astype(np.int64))


@pytest.mark.parametrize("w_zp", [None, 0, 3])
def test_conv_integer_int8_weight(w_zp):
    """A constant int8 weight without a zero point (or a zero one) goes to R.nn.conv2d as
    int8 with a float32 out_dtype (on VNNI: int32, with the uint8 input); one shifted by its
    zero point as float32 (on VNNI: int32 with the window sums' one-channel conv). Exact
    every way."""
    rng = np.random.default_rng(11)
    x = rng.integers(0, 256, (1, 16, 10, 10)).astype("uint8")
    w = rng.integers(-128, 128, (32, 16, 3, 3)).astype("int8")
    zp = {} if w_zp is None else {"w_zp": np.array(w_zp, "int8")}
    model = _single("ConvInteger", [_vi("x", TensorProto.UINT8, [1, 16, 10, 10]), "w", "x_zp"]
                    + list(zp), [_vi("y", TensorProto.INT32, None)],
                    _inits(w=w, x_zp=np.array(7, "uint8"), **zp), pads=[1, 1, 1, 1])
    mod = from_onnx(model)
    convs = [line for line in mod.script().splitlines() if "R.nn.conv2d" in line]
    if w_zp and conv_vnni.products_available():
        assert len(convs) == 2 and all('out_dtype="int32"' in c for c in convs)
    else:
        want = "void" if w_zp else "int32" if conv_vnni.products_available() else "float32"
        assert len(convs) == 1 and f'out_dtype="{want}"' in convs[0]
    out = _run(_build(mod), {"x": x})[0]
    ws = torch.tensor(w.astype(np.float64) - (w_zp or 0))
    ref = torch.nn.functional.conv2d(torch.tensor(x.astype(np.float64) - 7.0), ws,
                                     padding=1).numpy()
    np.testing.assert_array_equal(out, ref.astype(np.int64))


@pytest.mark.parametrize("x_dtype, x_zp, reads", [
    ("uint8", 0, "uint8"),     # zero point 0: the 8-bit input as it is
    ("int8", -128, "uint8"),   # int8 with zero point -128: x + 128 as uint8
    ("uint8", 131, "float32"),  # any other: dequantized to float32 first
])
def test_depthwise_conv_integer_reads_8bit_data(x_dtype, x_zp, reads):
    """A depthwise ConvInteger (``onnx_quant.depthwise_data``): R.nn.conv2d reads the 8-bit
    input (or its uint8 shift) with a float32 out_dtype where the zero point allows; exact."""
    rng = np.random.default_rng(12)
    lo, hi = (0, 256) if x_dtype == "uint8" else (-128, 128)
    x = rng.integers(lo, hi, (1, 24, 10, 10)).astype(x_dtype)
    w = rng.integers(-128, 128, (24, 1, 3, 3)).astype("int8")
    elem = TensorProto.UINT8 if x_dtype == "uint8" else TensorProto.INT8
    model = _single("ConvInteger", [_vi("x", elem, [1, 24, 10, 10]), "w", "x_zp"],
                    [_vi("y", TensorProto.INT32, None)],
                    _inits(w=w, x_zp=np.array(x_zp, x_dtype)), pads=[1, 1, 1, 1],
                    strides=[2, 2], group=24)
    mod = from_onnx(model)
    text = mod.script()
    convs = [line for line in text.splitlines() if "R.nn.conv2d" in line]
    assert len(convs) == 1 and 'dtype="float32") = R.nn.conv2d(' in convs[0]
    if reads == "float32":
        assert "R.nn.conv2d(x," not in convs[0] and 'out_dtype="float32"' not in convs[0]
    elif x_dtype == "uint8":
        assert "R.nn.conv2d(x," in convs[0] and 'out_dtype="float32"' in convs[0]
    else:
        assert 'R.astype(x, dtype="int16")' in text
    out = _run(_build(mod), {"x": x})[0]
    ref = torch.nn.functional.conv2d(torch.tensor(x.astype(np.float64) - x_zp),
                                     torch.tensor(w.astype(np.float64)), padding=1, stride=2,
                                     groups=24).numpy()
    np.testing.assert_array_equal(out, ref.astype(np.int64))
    np.testing.assert_array_equal(out, _ort(model, {"x": x})[0])


@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv_with_bias(per_channel):
    out, ref = _close_to_ort(*cases.qlinear_conv_with_bias(per_channel))
    assert np.mean(out == ref) >= 0.99


def test_qlinear_matmul_per_column_scale():
    _close_to_ort(*cases.qlinear_matmul_per_column_scale())


def test_qlinear_matmul_runtime_parameters():
    """Scales and zero points given at run time, the weights too: an int32 product."""
    _close_to_ort(*cases.qlinear_matmul_runtime_parameters())


@pytest.mark.parametrize("op,n_in,attrs", cases.QLINEAR_ELEMENTWISE)
def test_com_microsoft_qlinear_elementwise(op, n_in, attrs):
    _close_to_ort(*cases.qlinear_elementwise(op, n_in, attrs))


def test_com_microsoft_qlinear_concat_and_qgemm():
    for model, feeds in cases.qlinear_concat_and_qgemm():
        _close_to_ort(model, feeds)
