"""int8 models as a new user makes them: PyTorch exported to ONNX, quantized with
onnxruntime.quantization (quantize_static on a few random calibration batches, in QDQ format
and in QOperator format (QLinearConv, com.microsoft QGemm / QLinearAdd, ...); quantize_dynamic:
DynamicQuantizeLinear + MatMulInteger / ConvInteger), imported, compiled at
opt_level 3 and compared with ONNX Runtime's run of the same quantized file; plus the integer
ops one node at a time, against ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="building the test models needs `torch`")
onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

import onnx_finite_cases as finite_cases  # noqa: E402
import onnx_quant_cases as cases  # noqa: E402
import onnx_rnn_quant_reference as rnn_ref  # noqa: E402
from frontend_models import build_and_run  # noqa: E402
from onnx import TensorProto  # noqa: E402
from onnx_quant_cases import QDQ_CONV_CASES, QDQ_DEPTHWISE_CASES, qdq_conv  # noqa: E402
from onnx_quant_cases import ort_run as _ort  # noqa: E402
from onnx_quant_cases import quantized as _quantized  # noqa: E402
from onnx_quant_cases import single as _single  # noqa: E402
from onnx_quant_cases import vi as _vi  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.analysis import post_order_visit  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402


def _output_step(proto) -> float:
    """The quantization step of the graph output when a DequantizeLinear makes it, else 0."""
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    out = proto.graph.output[0].name
    for node in proto.graph.node:
        if node.output[0] == out and node.op_type == "DequantizeLinear":
            return float(np.max(inits[node.input[1]]))
    return 0.0


@pytest.mark.parametrize("mode", ["static", "qoperator", "dynamic"])
@pytest.mark.parametrize("name", ["convnet", "mlp"])
def test_quantized_model_matches_onnxruntime(tmp_path, name, mode):
    proto, shape = _quantized(tmp_path, name, mode)
    ops = {n.op_type for n in proto.graph.node}
    assert {"static": "QuantizeLinear", "qoperator": "QGemm",
            "dynamic": "DynamicQuantizeLinear"}[mode] in ops
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    mod, params = relay.frontend.from_onnx(proto, shape={"x": shape})
    out = build_and_run(mod, params, {"x": x})[0]
    ref = _ort(proto, {"x": x})[0]
    assert out.shape == ref.shape
    if mode != "dynamic":  # ORT runs int8 kernels: within one step of the output's int8 grid
        step = _output_step(proto)
        assert step > 0
        assert np.abs(out - ref).max() <= step * 1.001
        assert np.mean(np.abs(out - ref) <= 1e-6) >= 0.9  # and nearly all equal
    else:  # the integer products are exact: only float rounding of the rescale differs
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fill", ["random", "positive", "zeros"])
def test_dynamic_quantize_linear(fill):
    model, feeds = cases.dynamic_quantize_linear(fill)
    mod, params = relay.frontend.from_onnx(model)
    outs = build_and_run(mod, params, feeds)
    refs = _ort(model, feeds)
    np.testing.assert_allclose(outs[1], refs[1], rtol=1e-7)
    assert outs[2] == refs[2] and outs[2].dtype == np.uint8
    assert np.abs(outs[0].astype(int) - refs[0].astype(int)).max() <= (0 if fill != "random"
                                                                        else 1)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_quantize_linear_of_nan_is_lowest(dtype):
    """NaN quantizes to the dtype's lowest value, +-inf saturate: ONNX Runtime's output."""
    model, feeds = cases.quantize_non_finite(dtype)
    mod, params = relay.frontend.from_onnx(model)
    out = build_and_run(mod, params, feeds)[0]
    np.testing.assert_array_equal(out, _ort(model, feeds)[0])
    assert out[0] == np.iinfo(dtype).min and out[1] == np.iinfo(dtype).max


@pytest.mark.parametrize("per_channel, w_dtype, direction, batch",
                         [(False, "int8", "forward", 2), (True, "int8", "bidirectional", 3),
                          (True, "uint8", "reverse", 1)])
def test_dynamic_quantize_lstm(per_channel, w_dtype, direction, batch):
    """quantize_dynamic's LSTM. On VNNI it runs as ORT runs it: the input and each step's
    state quantized at run time, int32 products (the input's, then one a step after the
    first), equal within float rounding to ORT's one-thread run and to the numpy run of that
    arithmetic (``onnx_rnn_quant_reference``); elsewhere the float LSTM over its weights
    dequantized, equal to ORT's LSTM over them."""
    qmodel, fmodel, feeds = cases.dynamic_quantize_lstm(per_channel, w_dtype, direction,
                                                        batch=batch)
    mod, params = relay.frontend.from_onnx(qmodel, shape={"x": feeds["x"].shape})
    denses = _acc_dtypes(mod, "nn.dense")
    outs = build_and_run(mod, params, feeds)
    seq, dirs = feeds["x"].shape[0], 2 if direction == "bidirectional" else 1
    if conv_vnni.available():
        assert denses == ["int32"] * (seq * dirs)
        weights = set()  # one constant per weight and direction, read by every step
        post_order_visit(mod["main"].body, lambda e: weights.add(e.args[1]) if isinstance(
            e, relay.Call) and getattr(e.op, "name", "") == "nn.dense" else None)
        assert len(weights) == 2 * dirs
        wants = [rnn_ref.from_model(qmodel, feeds["x"]), rnn_ref.ort_one_thread(qmodel, feeds)]
    else:
        assert denses == ["float32"] * (seq * dirs)
        wants = [_ort(fmodel, feeds)]
    for want in wants:
        for got, w in zip(outs, want, strict=True):
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=2e-6)


def test_dynamic_quantize_lstm_without_vnni(monkeypatch):
    """Where the host has no VNNI the LSTM is the float one over the dequantized weights:
    float products, ORT's LSTM over those weights."""
    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    qmodel, fmodel, feeds = cases.dynamic_quantize_lstm(True, "uint8", "forward")
    mod, params = relay.frontend.from_onnx(qmodel, shape={"x": feeds["x"].shape})
    assert set(_acc_dtypes(mod, "nn.dense")) == {"float32"}
    outs = build_and_run(mod, params, feeds)
    for got, want in zip(outs, _ort(fmodel, feeds), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("vnni", ["host", "off"])
def test_dynamic_quantize_lstm_states(monkeypatch, vnni):
    """Initial states, peepholes and clip around the run-time quantized products: on VNNI
    ORT's one-thread DynamicQuantizeLSTM within float rounding (its first step's product is
    that of the quantized initial state); without it (the host's, or turned off) the float
    LSTM over the dequantized weights, ORT's LSTM over them with the same states."""
    if vnni == "off":
        monkeypatch.setattr(conv_vnni, "available", lambda: False)
    qmodel, fmodel, feeds = cases.dynamic_quantize_lstm(True, "int8", "bidirectional", batch=3)
    qmodel = rnn_ref.with_states(qmodel, np.random.default_rng(5), clip=2.5)
    fmodel = rnn_ref.with_states(fmodel, np.random.default_rng(5), clip=2.5)
    mod, params = relay.frontend.from_onnx(qmodel, shape={"x": feeds["x"].shape})
    assert ("int32" if conv_vnni.available() else "float32") in _acc_dtypes(mod, "nn.dense")
    outs = build_and_run(mod, params, feeds)
    want = rnn_ref.ort_one_thread(qmodel, feeds) if conv_vnni.available() else \
        _ort(fmodel, feeds)
    for got, w in zip(outs, want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=2e-6)


def test_dynamic_quantize_lstm_sequence_lens():
    """With sequence lengths known and all full the run-time quantized LSTM stays; with
    shorter ones it is the float LSTM over the dequantized weights (ORT's masked steps
    quantize states this one does not hold), equal to ORT's LSTM over them."""
    qmodel, fmodel, feeds = cases.dynamic_quantize_lstm(False, "int8", "forward")
    full = np.full(feeds["x"].shape[1], feeds["x"].shape[0], "int32")
    mod, _ = relay.frontend.from_onnx(rnn_ref.with_sequence_lens(qmodel, full),
                                      shape={"x": feeds["x"].shape})
    assert set(_acc_dtypes(mod, "nn.dense")) == {"int32" if conv_vnni.available() else
                                                 "float32"}
    lens = np.array([4, 6], "int32")
    mod, params = relay.frontend.from_onnx(rnn_ref.with_sequence_lens(qmodel, lens),
                                           shape={"x": feeds["x"].shape})
    assert set(_acc_dtypes(mod, "nn.dense")) == {"float32"}
    outs = build_and_run(mod, params, feeds)
    for got, want in zip(outs, _ort(rnn_ref.with_sequence_lens(fmodel, lens), feeds),
                         strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["ConvInteger", "QLinearConv"])
def test_int_conv1d(op):
    """A 1-D integer conv (an audio model's Conv1d, quantized) is the 2-D conv over one row:
    ORT's result exactly (the QLinearConv's requantization within one step), on VNNI an int32
    conv2d."""
    model, feeds = cases.int_conv1d_model(op)
    mod, params = relay.frontend.from_onnx(model)
    convs = _acc_dtypes(mod, "nn.conv2d")
    assert convs == (["int32"] if conv_vnni.available() else convs) and len(convs) == 1
    out = build_and_run(mod, params, feeds)[0]
    want = _ort(model, feeds)[0]
    assert out.shape == want.shape and out.dtype == want.dtype
    assert np.abs(out.astype(int) - want.astype(int)).max() <= (0 if op == "ConvInteger" else 1)


@pytest.mark.parametrize("dtype, same", [("uint8", True), ("int8", True), ("uint8", False)])
def test_qdq_pair_skips_the_round_trip(dtype, same):
    """A DequantizeLinear of a QuantizeLinear with the same scalar scale and zero point is
    ``clip(round(x / s), lo - z, hi - z) * s`` (``onnx_quant.fake_quant_bounds``): no 8-bit
    cast in the graph; the same values as ORT, NaN and infinities included."""
    model, feeds = cases.qdq_chain(dtype, same)
    mod, params = relay.frontend.from_onnx(model)
    casts = []
    post_order_visit(mod["main"], lambda e: casts.append(e.attrs.dtype) if isinstance(
        e, relay.Call) and getattr(e.op, "name", "") == "cast" else None)
    assert (dtype in casts) == (not same)  # (the second pair, its scales apart, keeps it)
    out = build_and_run(mod, params, feeds)[0]
    np.testing.assert_array_equal(out, _ort(model, feeds)[0])


def _op_counts(mod) -> dict:
    found: dict = {}
    post_order_visit(mod["main"], lambda e: found.__setitem__(e.op.name, found.get(
        e.op.name, 0) + 1) if isinstance(e, relay.Call) and hasattr(e.op, "name") else None)
    return found


@pytest.mark.parametrize("pow2", [False, True])
def test_quantize_of_finite_values_multiplies(pow2):
    """A QuantizeLinear whose input cannot be NaN (``onnx_finite``: the Relu of a MatMul of
    dequantized data, an Add of dequantized values) multiplies by the reciprocal scale, no NaN
    select; those of the graph input and of a Div keep the divide and the select. ORT's output
    (NaN and infinities in the input), and numpy's to the bit with power-of-two scales."""
    model, feeds = finite_cases.qdq_finite_chain(pow2)
    mod, params = relay.frontend.from_onnx(model)
    ops = _op_counts(mod)
    assert ops.get("isnan") == 2  # (the pairs of the graph input and of the Div)
    assert ops.get("divide") == 3  # (those two and the Div itself)
    out = build_and_run(mod, params, feeds)[0]
    np.testing.assert_array_equal(out, _ort(model, feeds)[0])
    if pow2:
        np.testing.assert_array_equal(out, finite_cases.qdq_finite_chain_reference(
            model, feeds["x"]))


def test_quantize_of_graph_input_keeps_nan_select():
    """A lone QuantizeLinear of a graph input may see a NaN: its divide and select stay."""
    model, feeds = cases.quantize_non_finite("uint8")
    ops = _op_counts(relay.frontend.from_onnx(model)[0])
    assert ops.get("isnan") == 1 and ops.get("divide") == 1 and "multiply" not in ops


def test_qlinear_inputs_are_not_qdq_pairs():
    """A QLinearAdd's second input, of its first's scale and zero point, stays itself."""
    model, feeds = cases.qlinear_add_after_quantize()
    mod, params = relay.frontend.from_onnx(model)
    out = build_and_run(mod, params, feeds)[0]
    assert np.abs(out.astype(int) - _ort(model, feeds)[0].astype(int)).max() <= 1


def _acc_dtypes(mod, op_name):
    found = []

    def visit(e):
        if getattr(getattr(e, "op", None), "name", None) == op_name:
            found.append(e.checked_type.dtype)

    post_order_visit(relay.transform.InferType()(mod)["main"].body, visit)
    return found


@pytest.mark.parametrize("k,b_const,accs", [
    (48, True, ["float32"]),                    # every partial sum < 2**24: float32 is exact
    (1200, True, ["float32"]),                  # a's zero point near its lowest value: the
    # positive and negative products bound the partial sums apart, each under 2**24
    (3000, True, ["float32", "float32"]),       # two float32 pieces of K, added in int32
    (8000, False, ["int32"])])                  # unknown B over so long a K: int32
@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
def test_matmul_integer(monkeypatch, k, b_const, accs, a_dtype):
    """Per-column weight zero points; float32 products where they are exact, else int32."""
    monkeypatch.setattr(conv_vnni, "available", lambda: False)  # (else VNNI: test_*vnni_matmul)
    monkeypatch.setattr(conv_vnni, "pairs_available", lambda: False)  # (and AVX2's pairs)
    rng = np.random.default_rng(k)
    lo, hi = (0, 256) if a_dtype == "uint8" else (-128, 128)
    a = rng.integers(lo, hi, (2, 5, k)).astype(a_dtype)
    b = rng.integers(-128, 128, (k, 7)).astype("int8")
    a_zp = np.array(lo + 3, a_dtype)
    b_zp = rng.integers(-5, 5, 7).astype("int8")
    t = TensorProto.UINT8 if a_dtype == "uint8" else TensorProto.INT8
    inits = [onnx.numpy_helper.from_array(v, n) for n, v in
             ([("b", b)] if b_const else []) + [("a_zp", a_zp), ("b_zp", b_zp)]]
    b_in = "b" if b_const else _vi("b", TensorProto.INT8, [k, 7])
    model = _single("MatMulInteger", [_vi("a", t, [2, 5, k]), b_in, "a_zp", "b_zp"],
                    [_vi("y", TensorProto.INT32, [2, 5, 7])], inits)
    mod, params = relay.frontend.from_onnx(model)
    assert _acc_dtypes(mod, "nn.dense") == accs
    feeds = {"a": a} if b_const else {"a": a, "b": b}
    out = build_and_run(mod, params, feeds)[0]
    ref = (a.astype(np.int64) - a_zp) @ (b.astype(np.int64) - b_zp)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out, _ort(model, feeds)[0])


@pytest.mark.parametrize("cin,groups,accs", [(8, 1, ["float32"]), (8, 8, ["float32"]),
                                             (256, 1, "vnni")])
def test_conv_integer(cin, groups, accs):
    """Padding counts as the input's zero point; a per-output-channel weight zero point (on
    VNNI hosts a wide conv is the int32 conv and its window-sum conv, else float32 pieces)."""
    if accs == "vnni":
        accs = ["int32"] * 2 if conv_vnni.products_available() else ["float32"] * 2
    rng = np.random.default_rng(cin + groups)
    cout = 8
    x = rng.integers(0, 256, (1, cin, 9, 9)).astype("uint8")
    w = rng.integers(-128, 128, (cout, cin // groups, 3, 3)).astype("int8")
    x_zp = np.array(131, "uint8")
    w_zp = rng.integers(-4, 4, cout).astype("int8")
    inits = [onnx.numpy_helper.from_array(v, n) for n, v in
             [("w", w), ("x_zp", x_zp), ("w_zp", w_zp)]]
    model = _single("ConvInteger", [_vi("x", TensorProto.UINT8, [1, cin, 9, 9]), "w", "x_zp",
                                    "w_zp"], [_vi("y", TensorProto.INT32, None)], inits,
                    pads=[1, 1, 1, 1], strides=[2, 1], group=groups)
    mod, params = relay.frontend.from_onnx(model)
    assert _acc_dtypes(mod, "nn.conv2d") == accs
    out = build_and_run(mod, params, {"x": x})[0]
    xs = torch.tensor(x.astype(np.float64) - 131.0)
    ws = torch.tensor(w.astype(np.float64) - w_zp.reshape(-1, 1, 1, 1))
    ref = torch.nn.functional.conv2d(xs, ws, padding=1, stride=(2, 1), groups=groups).numpy()
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ref.astype(np.int64))


def _conv_weight_dtypes(mod):
    found = []

    def visit(e):
        if getattr(getattr(e, "op", None), "name", None) == "nn.conv2d":
            found.append(e.args[1].checked_type.dtype)

    post_order_visit(relay.transform.InferType()(mod)["main"].body, visit)
    return found


@pytest.mark.parametrize("k,w_zp,groups,weight", [
    (3, None, 1, "int8"),        # symmetric int8 weights are read as they are
    (3, "zeros", 1, "int8"),     # a zero point of 0 likewise
    (3, "some", 1, "zp"),        # (w - w_zp) can leave int8: on VNNI the int8 weight and
    #                              the window sums' conv, else shifted float32 weights
    (1, None, 1, "1x1"),         # the VNNI conv's int8 weight where the host has VNNI
    #                              (``onnx_quant.vnni_conv``), else the float32 weights a 1x1
    #                              conv's schedule reads
    (3, None, 2, "float32")])    # grouped
def test_conv_integer_keeps_int8_weights(k, w_zp, groups, weight):
    """ConvInteger over a constant int8 weight without zero points passes the weight to a
    float32 conv2d as int8 (the schedules widen it as they load it); the result stays the
    exact integer convolution, as onnxruntime computes it."""
    rng = np.random.default_rng(k + groups)
    cin, cout = 16, 32
    x = rng.integers(0, 256, (1, cin, 10, 10)).astype("uint8")
    w = rng.integers(-128, 128, (cout, cin // groups, k, k)).astype("int8")
    zp = {None: None, "zeros": np.array(0, "int8"), "some": np.array(3, "int8")}[w_zp]
    arrays = [("w", w), ("x_zp", np.array(7, "uint8"))] + ([("w_zp", zp)] if zp is not None
                                                          else [])
    inits = [onnx.numpy_helper.from_array(v, n) for n, v in arrays]
    model = _single("ConvInteger", [_vi("x", TensorProto.UINT8, [1, cin, 10, 10]), "w",
                                    "x_zp"] + (["w_zp"] if zp is not None else []),
                    [_vi("y", TensorProto.INT32, None)], inits, pads=[k // 2] * 4,
                    group=groups)
    mod, params = relay.frontend.from_onnx(model)
    if weight == "1x1":
        weight = "int8" if conv_vnni.products_available() else "float32"
    weights = [weight]
    if weight == "zp":
        weights = ["int8", "int32"] if conv_vnni.products_available() else ["float32"]
    assert _conv_weight_dtypes(mod) == weights
    out = build_and_run(mod, params, {"x": x})[0]
    ws = w.astype(np.float64) - (0 if zp is None else int(zp))
    ref = torch.nn.functional.conv2d(torch.tensor(x.astype(np.float64) - 7.0), torch.tensor(ws),
                                     padding=k // 2, groups=groups).numpy()
    np.testing.assert_array_equal(out, ref.astype(np.int64))
    np.testing.assert_array_equal(out, _ort(model, {"x": x})[0])


@pytest.mark.parametrize("w_zp,per_channel,groups,weight", QDQ_CONV_CASES)
def test_qdq_conv_reads_int8_weights(w_zp, per_channel, groups, weight):
    """DequantizeLinear of a constant int8 weight feeding a Conv: the conv reads the int8
    values and scales its output (per output channel); within one step of ORT's output grid
    (ORT runs the QDQ group as an integer conv), nearly all equal."""
    model, feeds = qdq_conv(w_zp, per_channel, groups)
    mod, params = relay.frontend.from_onnx(model)
    if weight == "zp":  # (on VNNI the int8 weight and its window sums' int32 conv of ones)
        weight = ["int8", "int32"] if conv_vnni.products_available() else ["float32"]
    assert _conv_weight_dtypes(mod) == (weight if isinstance(weight, list) else [weight])
    out, ref = _close_to_ort(model, feeds)
    assert np.mean(out == ref) >= 0.99


@pytest.mark.parametrize("x_dtype,x_zp,stride,reads", QDQ_DEPTHWISE_CASES)
def test_qdq_depthwise_conv_reads_8bit_data(x_dtype, x_zp, stride, reads):
    """A QDQ depthwise Conv (``qdq_weight.depthwise_qdq_conv``): nn.conv2d reads the 8-bit
    activation (or its uint8 shift) and the weight's int8 values as float32 integers, and one
    kernel builds it (the depthwise schedule widening the input); any other zero point
    dequantizes. Within one step of ORT's output grid, nearly all equal."""
    model, feeds = cases.qdq_depthwise(x_dtype, x_zp, stride)
    mod, _ = relay.frontend.from_onnx(model)
    found = []

    def visit(e):
        if getattr(getattr(e, "op", None), "name", None) == "nn.conv2d":
            found.append((e.args[0].checked_type.dtype, e.args[1].checked_type.dtype))

    post_order_visit(relay.transform.InferType()(mod)["main"].body, visit)
    want = {"as_is": x_dtype, "shift": "uint8", "float32": "float32"}[reads]
    assert found == [(want, "float32")]
    out, ref = _close_to_ort(model, feeds)
    assert np.mean(out == ref) >= 0.99


def _close_to_ort(model, feeds, steps: int = 1):
    mod, params = relay.frontend.from_onnx(model)
    out = build_and_run(mod, params, feeds)[0]
    ref = _ort(model, feeds)[0]
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= steps
    return out, ref


@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv_with_bias(per_channel):
    out, ref = _close_to_ort(*cases.qlinear_conv_with_bias(per_channel))
    assert np.mean(out == ref) >= 0.99


def test_qlinear_matmul_per_column_scale():
    _close_to_ort(*cases.qlinear_matmul_per_column_scale())


@pytest.mark.parametrize("op,n_in,attrs", cases.QLINEAR_ELEMENTWISE)
def test_com_microsoft_qlinear_elementwise(op, n_in, attrs):
    _close_to_ort(*cases.qlinear_elementwise(op, n_in, attrs))


def test_com_microsoft_qlinear_concat_and_qgemm():
    for model, feeds in cases.qlinear_concat_and_qgemm():
        _close_to_ort(model, feeds)


def test_qlinear_matmul_runtime_scales_build_natively():
    """Scales given at run time: the per-column scale folded into the weights becomes a
    ``repeat``, which must lower natively (strict mode raises on a numpy fallback)."""
    _close_to_ort(*cases.qlinear_matmul_runtime_parameters())


@pytest.mark.parametrize("name", ["convnet", "mlp"])
def test_static_qdq_model_through_relax(tmp_path, name):
    """The QDQ file through Relax's ONNX importer and relax.build too (Relax has no converters
    for the dynamic or QOperator ops yet)."""
    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax.frontend.onnx import from_onnx as relax_from_onnx

    proto, shape = _quantized(tmp_path, name, "static")
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    mod = relax_from_onnx(proto, shape_dict={"x": shape})
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()
    ref = _ort(proto, {"x": x})[0]
    assert np.abs(out - ref).max() <= _output_step(proto) * 1.001
