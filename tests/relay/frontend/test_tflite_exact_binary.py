"""Quantized ADD / SUB / MUL of 8-bit tensors (``tflite.exact_binary``): TFLite's integer
results on every one of the 256 x 256 input pairs, built and run (the float32 form where it is
exact, TFLite's integer arithmetic otherwise); against the LiteRT interpreter where
``ai_edge_litert`` is installed."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite", reason="the TFLite importer needs the `tflite` package")

import tflite_qtwin  # noqa: E402
from frontend_models import build_and_run  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.frontend_common.onnx_quant import QRANGE  # noqa: E402
from minitvm.relay.frontend.tflite import exact_binary as eb  # noqa: E402
from minitvm.relay.frontend.tflite.builder import ModelBuilder  # noqa: E402

# (scale, zero point) of input 1, input 2, output; the zero points as uint8 (int8: - 128)
SCALES = [((0.02, 130), (0.02, 130), (0.04, 128)),  # equal input scales: many exact halves
          ((0.0183, 7), (0.0049, 250), (0.0211, 99)),
          ((0.0071, 140), (0.0912, 33), (0.0630, 200))]
# an ADD whose float32 form differs from TFLite on some pair (found by search): the integer
# form is taken
NO_FLOAT_FORM = ((0.10560276359319687, 133), (0.0034499536268413067, 95),
                 (0.07781287282705307, 64))


def _params(q, dtype):
    (s, z) = q
    return float(np.float32(s)), z - (128 if dtype == "int8" else 0)


FLOAT_OPS = ("ADD", "SUB", "MUL")  # (SQUARED_DIFFERENCE: the integer form always)


def _model(op, dtype, q1, q2, qo, act=0):
    b = ModelBuilder()
    a = b.input("a", (1, 256, 256), dtype, quant=q1)
    c = b.input("b", (1, 256, 256), dtype, quant=q2)
    y = b.tensor("y", (1, 256, 256), dtype, quant=qo)
    if op == "SQUARED_DIFFERENCE":
        b.operator(op, [a, c], [y])
    else:
        b.operator(op, [a, c], [y], f"{op.capitalize()}Options", FusedActivationFunction=act)
    b.output(y)
    return b.finish()


def _pairs(dtype):
    lo, hi = QRANGE[dtype]
    v = np.arange(lo, hi + 1).astype(dtype)
    return {"a": np.repeat(v[:, None], 256, 1)[None], "b": np.repeat(v[None, :], 256, 0)[None]}


def _run(blob, dtype):
    mod, params = relay.frontend.from_tflite(blob)
    return mod, build_and_run(mod, params, _pairs(dtype))[0][0].astype("int64")


def test_reference_matches_scalar_rescale():
    """``multiply`` (vectorized) against the twin's scalar step-by-step TFLite rescale (its
    nudge, truncating division and mask / threshold), on values around every rounding case."""
    rng = np.random.default_rng(0)
    x = np.concatenate([np.arange(-600, 600), rng.integers(-2**27, 2**27, 2000)])
    for m in (0.5, 0.37, 1.9e-6, 3.1, 2.0**-20 * 0.77):
        np.testing.assert_array_equal(eb.multiply(x, m),
                                      tflite_qtwin.multiply_by_quantized_multiplier(x, m))


def _sqd_output(q1, q2):
    return float(np.float32(max(q1[0], q2[0]) ** 2 * 300)), -128


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("op", FLOAT_OPS)
@pytest.mark.parametrize("k", range(len(SCALES)))
def test_every_pair_exact(op, dtype, k):
    q1, q2, qo = (_params(q, dtype) for q in SCALES[k])
    if op == "MUL":
        qo = (float(np.float32(q1[0] * q2[0] * 90)), qo[1])
    lo, hi = QRANGE[dtype]
    mod, got = _run(_model(op, dtype, q1, q2, qo), dtype)
    np.testing.assert_array_equal(got, eb.reference(op, dtype, q1, q2, qo, lo, hi))
    # the float32 form, no int64 arithmetic, wherever a candidate matched
    assert eb.float_constants(op, dtype, q1, q2, qo, lo, hi) is not None
    assert "int64" not in mod.astext()


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_fused_relu_clamps_exactly(dtype):
    q1, q2, qo = (_params(q, dtype) for q in SCALES[1])
    _, got = _run(_model("ADD", dtype, q1, q2, qo, act=1), dtype)
    lo, hi = QRANGE[dtype]
    np.testing.assert_array_equal(got, eb.reference("ADD", dtype, q1, q2, qo, qo[1], hi))
    assert got.min() == qo[1]


def test_integer_form_where_no_float_form_is_exact():
    q1, q2, qo = NO_FLOAT_FORM
    assert eb.float_constants("ADD", "uint8", q1, q2, qo, 0, 255) is None
    mod, got = _run(_model("ADD", "uint8", q1, q2, qo), "uint8")
    assert "int64" in mod.astext()
    np.testing.assert_array_equal(got, eb.reference("ADD", "uint8", q1, q2, qo, 0, 255))


def test_ties_round_away_from_zero():
    """Equal input scales and an output scale twice theirs: every odd sum is an exact half,
    which TFLite rounds away from zero (the signed form; round's ties to even would not)."""
    q1, q2, qo = (_params(q, "uint8") for q in SCALES[0])
    form, _ = eb.float_constants("ADD", "uint8", q1, q2, qo, 0, 255)
    assert form == "add_signed"


@pytest.mark.parametrize("op", eb.OPS)
def test_integer_form_every_pair(op, monkeypatch):
    """The fallback itself (forced) on every pair, SUB and MUL too; int8 SQUARED_DIFFERENCE
    (its only form)."""
    monkeypatch.setattr(eb, "float_constants", lambda *a: None)
    q1, q2, qo = (_params(q, "int8") for q in SCALES[2])
    if op == "MUL":
        qo = (float(np.float32(q1[0] * q2[0] * 300)), qo[1])
    if op == "SQUARED_DIFFERENCE":
        qo = _sqd_output(q1, q2)
    _, got = _run(_model(op, "int8", q1, q2, qo), "int8")
    np.testing.assert_array_equal(got, eb.reference(op, "int8", q1, q2, qo, -128, 127))


def test_uint8_squared_difference_stays_float():
    """TFLite has no uint8 SQUARED_DIFFERENCE kernel: that one keeps the float path."""
    q1, q2, _ = (_params(q, "uint8") for q in SCALES[1])
    mod, _ = _run(_model("SQUARED_DIFFERENCE", "uint8", q1, q2, (_sqd_output(q1, q2)[0], 0)),
                  "uint8")
    assert "int64" not in mod.astext()


def test_constant_operand_broadcast():
    """An ADD of an activation and a constant quantized vector (broadcast)."""
    b = ModelBuilder()
    q = (0.0183, 7), (0.0049, 250), (0.0211, 99)
    a = b.input("a", (1, 4, 256), "uint8", quant=q[0])
    c = b.constant("c", np.array([0, 77, 200, 255], "uint8").reshape(1, 4, 1), quant=q[1])
    y = b.tensor("y", (1, 4, 256), "uint8", quant=q[2])
    b.operator("ADD", [a, c], [y], "AddOptions", FusedActivationFunction=0)
    b.output(y)
    mod, params = relay.frontend.from_tflite(b.finish())
    x = np.tile(np.arange(256, dtype="uint8"), (1, 4, 1))
    got = build_and_run(mod, params, {"a": x})[0]
    ref = eb.reference("ADD", "uint8", *q, 0, 255)
    np.testing.assert_array_equal(got[0], ref[:, [0, 77, 200, 255]].T)


@pytest.mark.parametrize("op", eb.OPS)
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_against_litert_interpreter(op, dtype):
    """TFLite itself (LiteRT's builtin kernels, no delegate) on every pair."""
    litert = pytest.importorskip("ai_edge_litert.interpreter",
                                 reason="the reference needs ai_edge_litert")
    rng = np.random.default_rng(7)
    for _ in range(2):
        q1, q2, qo = (_params((float(rng.uniform(0.004, 0.1)), int(rng.integers(0, 256))),
                              dtype) for _ in range(3))
        if op == "MUL":
            qo = (float(np.float32(q1[0] * q2[0] * 100)), qo[1])
        if op == "SQUARED_DIFFERENCE":
            if dtype == "uint8":
                pytest.skip("TFLite's SQUARED_DIFFERENCE takes int8, not uint8")
            qo = _sqd_output(q1, q2)
        blob = _model(op, dtype, q1, q2, qo)
        it = litert.Interpreter(
            model_content=blob, num_threads=1,
            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        it.allocate_tensors()
        feeds = _pairs(dtype)
        for d in it.get_input_details():
            it.set_tensor(d["index"], feeds[d["name"]])
        it.invoke()
        ref = it.get_tensor(it.get_output_details()[0]["index"])
        _, got = _run(blob, dtype)
        np.testing.assert_array_equal(got, ref[0].astype("int64"))


def test_simulation_is_litert_on_int8_mobilenet_v2():
    """``tflite_qtwin``'s simulation (TFLite's integer arithmetic for the convs, ADD and the
    head) equals LiteRT's kernels on every tensor of an int8 MobileNetV2."""
    litert = pytest.importorskip("ai_edge_litert.interpreter",
                                 reason="the reference needs ai_edge_litert")
    t, _ = tflite_qtwin.mobilenet_v2("int8", size=32, width=8, full=True)
    it = litert.Interpreter(
        model_content=t.b.finish(), num_threads=1, experimental_preserve_all_tensors=True,
        experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], t.inputs()["input"])
    it.invoke()
    for _, _, outs, *_ in t.b.ops:
        np.testing.assert_array_equal(it.get_tensor(outs[0]).astype("int64"), t.val[outs[0]])


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_batch_matmul_integer_results(dtype):
    """BATCH_MATMUL of two activations: the exact integer products requantized with
    gemmlowp's roundings (the simulation's integer result, every value)."""
    t = tflite_qtwin.QTwin(dtype, 5)
    a = t.input("a", (2, 24, 40))
    b = t.input("b", (2, 33, 40), scale=0.03)
    y = t.batch_matmul(a, b, adj_y=True)
    blob, (ref,) = t.finish([y])
    mod, params = relay.frontend.from_tflite(blob)
    (got,) = build_and_run(mod, params, t.inputs())
    np.testing.assert_array_equal(got.astype("int64"), ref)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_requantization_rounds_as_tflite(dtype, depthwise):
    """A conv's outputs equal TFLite's fixed-point requantization (its double rounding's
    offset, ``quantized.double_rounding_offset``) but for float32 boundary cases: at most
    one value in ten thousand a step off (without the offset 6 of these 36864 conv outputs
    and 14 of the 18432 depthwise ones)."""
    t = tflite_qtwin.QTwin(dtype, 9)
    x = t.input("x", (1, 24, 24, 32))
    y = t.conv(x, 64, 3, 1, None, depthwise=depthwise)
    blob, (ref,) = t.finish([y])
    mod, params = relay.frontend.from_tflite(blob)
    (got,) = build_and_run(mod, params, t.inputs())
    d = np.abs(got.astype("int64") - ref)
    assert d.max() <= 1 and (d > 0).sum() <= ref.size // 10000
