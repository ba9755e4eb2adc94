"""Quantized LEAKY_RELU, HARD_SWISH, AVERAGE_POOL_2D, MEAN, SUM, RESIZE_BILINEAR,
RESIZE_NEAREST_NEIGHBOR and DEQUANTIZE give LiteRT's own values (``tflite.exact_unary``,
``tflite.exact_spatial``): every output equal to the LiteRT interpreter's (builtin kernels, no
delegate) where ``ai_edge_litert`` is installed; the tables and the IR forms without it."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("tflite", reason="the TFLite importer needs the `tflite` package")

from frontend_models import build_and_run  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.frontend_common.onnx_quant import QRANGE  # noqa: E402
from minitvm.relay.frontend.tflite import exact_lut16, exact_unary  # noqa: E402
from minitvm.relay.frontend.tflite import fixed_point as fp  # noqa: E402
from minitvm.relay.frontend.tflite.builder import ModelBuilder  # noqa: E402

DTYPES = ["int8", "uint8"]


def _zp(dtype: str, z: int) -> int:
    """A zero point given as uint8's, in ``dtype``."""
    return z - 128 if dtype == "int8" else z


def _model(op, dtype, shape, qi, qo, out_shape=None, consts=(), options=None, out_dtype=None,
           **fields):
    b = ModelBuilder()
    ins = [b.input("x", shape, dtype, quant=qi)]
    ins += [b.constant(f"c{k}", np.asarray(c, "int32")) for k, c in enumerate(consts)]
    y = b.tensor("y", out_shape or shape, out_dtype or dtype, quant=qo)
    b.operator(op, ins, [y], options, **fields)
    b.output(y)
    return b.finish()


def _ours(blob, x):
    mod, params = relay.frontend.from_tflite(blob)
    return mod, build_and_run(mod, params, {"x": x})[0]


def _litert(blob, x):
    return _litert_inputs(blob, [x])


def _random(dtype, shape, seed=0):
    lo, hi = QRANGE[dtype]
    return np.random.default_rng(seed).integers(lo, hi + 1, shape).astype(dtype)


def _every_value(dtype):
    lo, hi = QRANGE[dtype]
    return np.arange(lo, hi + 1).astype(dtype).reshape(1, 16, 16)


def _check(blob, x):
    mod, got = _ours(blob, x)
    np.testing.assert_array_equal(got, _litert(blob, x))
    return mod


# ------------------------------------------------------------------ against LiteRT
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale,alpha", [(0.05, 0.1), (0.1, 0.2), (0.0234, 0.01)])
def test_leaky_relu_every_value(dtype, scale, alpha):
    blob = _model("LEAKY_RELU", dtype, (1, 16, 16), (scale, _zp(dtype, 120)),
                  (0.03, _zp(dtype, 100)), options="LeakyReluOptions", Alpha=alpha)
    _check(blob, _every_value(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale,out", [(0.05, (0.04, 30)), (0.1, (0.06, 10)),
                                       (0.0234, (0.011, 60)), (0.4, (0.2, 20))])
def test_hard_swish_every_value(dtype, scale, out):
    blob = _model("HARD_SWISH", dtype, (1, 16, 16), (scale, _zp(dtype, 120)),
                  (out[0], _zp(dtype, out[1])))
    _check(blob, _every_value(dtype))


@pytest.mark.parametrize("op", ["ABS", "SQRT", "NEG", "ELU", "RSQRT"])
@pytest.mark.parametrize("qi,qo", [((0.0234, -8), (0.03, -28)), ((0.05, -128), (0.05, -100)),
                                   ((0.11, -128), (0.017, 5)),
                                   ((0.39974162, -128), (0.00056858663, -128))])
def test_int8_unary_every_value(op, qi, qo):
    """LiteRT's int8 ABS (fixed-point rescale, none for equal scales), SQRT (a truncated float32
    quotient), NEG (the stored values negated), ELU (its table rounds a float32 product) and
    RSQRT (fixed-point inverse square root; the last parameters are a transformer's, where
    the float form was a step off)."""
    if op in ("SQRT", "RSQRT"):
        qi = (qi[0], -128)  # (LiteRT stops on a negative input)
    blob = _model(op, "int8", (1, 16, 16), qi, qo)
    mod = _check(blob, _every_value("int8"))
    assert "take(" in mod.astext()


def _i32(*v):
    return np.array(v, "int32")


RAW_MOVE_CASES = [
    ("RESHAPE", (1, 128), [_i32(1, 128)], None, {}),
    ("TRANSPOSE", (1, 8, 4, 4), [_i32(0, 3, 1, 2)], None, {}),
    ("STRIDED_SLICE", (1, 2, 4, 8), [_i32(0, 1, 0, 0), _i32(1, 3, 4, 8), _i32(1, 1, 1, 1)],
     "StridedSliceOptions", {}),
    ("GATHER", (1, 4, 4, 3), [_i32(0, 5, 7)], "GatherOptions", {"Axis": 3}),
    ("DEPTH_TO_SPACE", (1, 8, 8, 2), [], "DepthToSpaceOptions", {"BlockSize": 2}),
    ("PAD", (1, 6, 6, 8), [np.array([[0, 0], [1, 1], [1, 1], [0, 0]], "int32")], None, {}),
    ("MAX_POOL_2D", (1, 2, 2, 8), [], "Pool2DOptions",
     {"Padding": 1, "StrideW": 2, "StrideH": 2, "FilterWidth": 2, "FilterHeight": 2,
      "FusedActivationFunction": 0}),
    ("MAX_POOL_2D", (1, 2, 2, 8), [], "Pool2DOptions",
     {"Padding": 1, "StrideW": 2, "StrideH": 2, "FilterWidth": 2, "FilterHeight": 2,
      "FusedActivationFunction": 3}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", RAW_MOVE_CASES, ids=lambda c: c[0])
def test_moves_copy_stored_values(dtype, case):
    """LiteRT's moves copy the stored values even where the output's parameters differ from
    the input's (a fused RELU6 clamps in the output's); PAD pads with the output's zero
    point."""
    op, out, consts, options, fields = case
    b = ModelBuilder()
    x = b.input("x", (1, 4, 4, 8), dtype, quant=(0.05, _zp(dtype, 120)))
    ins = [x] + [b.constant(f"c{k}", c) for k, c in enumerate(consts)]
    y = b.tensor("y", out, dtype, quant=(0.03, _zp(dtype, 100)))
    b.operator(op, ins, [y], options, **fields)
    b.output(y)
    mod = _check(b.finish(), _random(dtype, (1, 4, 4, 8), 4))
    assert "float32" not in mod.astext()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["MAXIMUM", "MINIMUM"])
def test_maximum_of_different_parameters_compares_stored_values(dtype, op):
    b = ModelBuilder()
    x = b.input("x", (1, 4, 4, 8), dtype, quant=(0.05, _zp(dtype, 120)))
    x2 = b.input("x2", (1, 1, 4, 8), dtype, quant=(0.07, _zp(dtype, 140)))
    y = b.tensor("y", (1, 4, 4, 8), dtype, quant=(0.03, _zp(dtype, 100)))
    b.operator(op, [x, x2], [y])
    b.output(y)
    blob = b.finish()
    xs = {"x": _random(dtype, (1, 4, 4, 8), 5), "x2": _random(dtype, (1, 1, 4, 8), 6)}
    mod, params = relay.frontend.from_tflite(blob)
    got = build_and_run(mod, params, xs)[0]
    np.testing.assert_array_equal(got, _litert_inputs(blob, [xs["x"], xs["x2"]]))


def _litert_inputs(blob, xs):
    litert = pytest.importorskip("ai_edge_litert.interpreter",
                                 reason="the reference needs ai_edge_litert")
    it = litert.Interpreter(
        model_content=blob, num_threads=1,
        experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k,stride,padding", [(3, 1, 0), (3, 2, 0), (2, 2, 1), ((9, 11), 1, 1)])
def test_average_pool(dtype, k, stride, padding):
    """SAME and VALID windows, the output's parameters other than the input's (LiteRT's kernel
    ignores them: so do we)."""
    kh, kw = k if isinstance(k, tuple) else (k, k)
    if padding == 0:
        oh, ow = -(-9 // stride), -(-11 // stride)
    else:
        oh, ow = (9 - kh) // stride + 1, (11 - kw) // stride + 1
    blob = _model("AVERAGE_POOL_2D", dtype, (1, 9, 11, 16), (0.05, _zp(dtype, 120)),
                  (0.037, _zp(dtype, 100)), (1, oh, ow, 16), options="Pool2DOptions",
                  Padding=padding, StrideW=stride, StrideH=stride, FilterWidth=kw,
                  FilterHeight=kh, FusedActivationFunction=0)
    _check(blob, _random(dtype, (1, 9, 11, 16)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axes,keep", [((1, 7, 7, 40), (1, 2), True),
                                             ((1, 4, 4, 8), (2, 1), True),
                                             ((1, 9, 11, 16), (3,), False),
                                             ((2, 5, 6, 8), (1, 2), False),
                                             ((1, 6, 40), (-1,), True)])
@pytest.mark.parametrize("same", [True, False])
def test_mean(dtype, shape, axes, keep, same):
    """LiteRT's 4-D H/W path (40 channels: two NEON blocks of 16, rounding half up, and 8
    scalar ones) and its general one, equal and differing parameters."""
    qi = (0.05, _zp(dtype, 120))
    qo = qi if same else (0.031, _zp(dtype, 90))
    nd = len(shape)
    red = {a % nd for a in axes}
    out = tuple(1 if a in red else d for a, d in enumerate(shape)) if keep else \
        tuple(d for a, d in enumerate(shape) if a not in red)
    blob = _model("MEAN", dtype, shape, qi, qo, out, [list(axes)], "ReducerOptions",
                  KeepDims=keep)
    _check(blob, _random(dtype, shape, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axes,keep,out", [((1, 2), True, (1, 1, 1, 16)), ((3,), False, (1, 9, 11))])
@pytest.mark.parametrize("qo", [(0.4, 110), (0.05, 120)])
def test_sum(dtype, axes, keep, out, qo):
    blob = _model("SUM", dtype, (1, 9, 11, 16), (0.05, _zp(dtype, 120)),
                  (qo[0], _zp(dtype, qo[1])), out, [list(axes)], "ReducerOptions",
                  KeepDims=keep)
    _check(blob, _random(dtype, (1, 9, 11, 16), 2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("align,half,size", [(False, False, (19, 23)), (True, False, (19, 23)),
                                             (False, True, (19, 23)), (False, True, (4, 5))])
def test_resize(dtype, op, align, half, size):
    """Up and down, TensorFlow's three coordinate modes; the output's parameters other than the
    input's (LiteRT's kernels copy raw values: so do we)."""
    options = "ResizeBilinearOptions" if op == "RESIZE_BILINEAR" else \
        "ResizeNearestNeighborOptions"
    blob = _model(op, dtype, (1, 9, 11, 16), (0.05, _zp(dtype, 120)), (0.043, _zp(dtype, 100)),
                  (1, *size, 16), [list(size)], options, AlignCorners=align, HalfPixelCenters=half)
    _check(blob, _random(dtype, (1, 9, 11, 16), 3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.05, 0.1, 0.0234])
def test_dequantize_every_value(dtype, scale):
    blob = _model("DEQUANTIZE", dtype, (1, 16, 16), (scale, _zp(dtype, 120)), None,
                  out_dtype="float32")
    _check(blob, _every_value(dtype))


@pytest.mark.parametrize("pair", [("int8", "uint8"), ("uint8", "int8"), ("int8", "int8"),
                                  ("uint8", "uint8")])
@pytest.mark.parametrize("n", [256, 300, 7])
def test_requantize_neon_blocks(pair, n):
    """QUANTIZE between two quantizations: LiteRT's NEON loop rounds 16 values at a time half
    up, the tail (300 = 18 blocks + 12; 7: tail only) half away from zero."""
    rng = np.random.default_rng(n)
    src, dst = pair
    for _ in range(4):
        qi = (float(np.float32(rng.uniform(0.005, 0.3))), int(rng.integers(*QRANGE[src])))
        qo = (float(np.float32(rng.uniform(0.005, 0.3))), int(rng.integers(*QRANGE[dst])))
        blob = _model("QUANTIZE", src, (1, n), qi, qo, out_dtype=dst)
        lo, hi = QRANGE[src]
        _check(blob, np.resize(np.arange(lo, hi + 1), (1, n)).astype(src))


def test_requantize_of_a_conv_output_in_nchw():
    """A QUANTIZE of a conv output computed in NCHW (``layout.convert_in_nchw``) with 75 values
    (4 NEON blocks and a tail): the half-up mask laid out in NCHW too (int8: LiteRT's
    per-channel convs take int8 activations)."""
    import tflite_qtwin

    t = tflite_qtwin.QTwin("int8", 3)
    x = t.input("x", (1, 5, 5, 3))
    y = t.requantize(t.conv(x, 3, 3, 1, None), 0.0137, -7)
    blob, (ref,) = t.finish([y])
    mod = _check(blob, t.inputs()["x"])
    assert "int64" in mod.astext()
    _, got = _ours(blob, t.inputs()["x"])
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("depth", [3, 100, 9000])
def test_l2_normalization(dtype, depth):
    """LiteRT's integer inverse square root per row (9000 values: a sum of squares past 2**29,
    its pairs-of-bits scaling both ways), a row all at the zero point included."""
    qi = (0.05, _zp(dtype, 130))
    qo = (1 / 128, 128 if dtype == "uint8" else 0)
    x = _random(dtype, (4, depth), depth)
    x[1] = qi[1]
    if depth == 9000:
        x[2] = QRANGE[dtype][1] if dtype == "uint8" else QRANGE[dtype][0]
    blob = _model("L2_NORMALIZATION", dtype, (4, depth), qi, qo, options="L2NormOptions",
                  FusedActivationFunction=0)
    mod = _check(blob, x)
    assert "float32" not in mod.astext()


# ------------------------------------------------------------------ without LiteRT
@pytest.mark.parametrize("dtype", DTYPES)
def test_integer_tables_are_one_lookup(dtype):
    for op, fields in (("LEAKY_RELU", {"Alpha": 0.1}), ("HARD_SWISH", {})):
        blob = _model(op, dtype, (1, 16, 16), (0.05, _zp(dtype, 120)), (0.03, _zp(dtype, 100)),
                      options="LeakyReluOptions" if fields else None, **fields)
        mod, got = _ours(blob, _every_value(dtype))
        text = mod.astext()
        assert "take(" in text and "float32" not in text
        table = exact_unary.table(op, dtype, (0.05, _zp(dtype, 120)), (0.03, _zp(dtype, 100)),
                                  None if op == "HARD_SWISH" else _Alpha(0.1))
        np.testing.assert_array_equal(got.reshape(-1), table)


class _Alpha:
    def __init__(self, a):
        self.a = a

    def Alpha(self):  # noqa: N802 - the flatbuffer accessor's name
        return self.a


@pytest.mark.parametrize("dtype", DTYPES)
def test_tables_within_a_step_of_the_real_function(dtype):
    """TFLite's fixed point stays within one step of the exact function, rounded."""
    qi, qo = (0.05, _zp(dtype, 120)), (0.03, _zp(dtype, 100))
    x = (np.arange(*QRANGE[dtype]) - qi[1] + 0.0)
    x = np.append(x, QRANGE[dtype][1] - qi[1]) * np.float32(qi[0])
    ideal = {"LEAKY_RELU": np.where(x >= 0, x, 0.1 * x),
             "HARD_SWISH": x * np.clip(x + 3, 0, 6) / 6}
    for op, f in ideal.items():
        q = np.clip(np.round(f / np.float32(qo[0])) + qo[1], *QRANGE[dtype])
        t = exact_unary.table(op, dtype, qi, qo, _Alpha(0.1) if op == "LEAKY_RELU" else None)
        assert np.abs(t.astype("int64") - q).max() <= 1


def test_rounding_divide_by_pot_modes():
    x = np.array([-6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 5, 6])
    np.testing.assert_array_equal(fp.rounding_divide_by_pot(x, 2),
                                  [-2, -1, -1, -1, -1, 0, 0, 0, 1, 1, 1, 2])
    np.testing.assert_array_equal(fp.rounding_divide_by_pot(x, 2, True),
                                  [-1, -1, -1, -1, 0, 0, 0, 0, 1, 1, 1, 2])


def test_int16_high_multiplies():
    """The rounding one rounds half up (+-1.5 -> 2, -1), the other truncates."""
    a = np.array([-32768, 16384, -16384, 3, -3, 12345])
    b = np.array([-32768, 16384, 16384, 16384, 16384, -23456])
    np.testing.assert_array_equal(fp.rounding_doubling_high_mul16(a, b),
                                  [32767, 8192, -8192, 2, -1, -8837])
    np.testing.assert_array_equal(fp.doubling_high_mul16(a, b),
                                  [32767, 8192, -8192, 1, -1, -8836])


@pytest.mark.parametrize("dtype", DTYPES)
def test_average_pool_rounds_exact_halves_away_from_zero(dtype):
    """A 2x2 window whose sums are odd multiples of 2: exact halves, TFLite rounds them away
    from zero (round's ties to even would not)."""
    lo = QRANGE[dtype][0]
    x = np.full((1, 2, 4, 1), lo + 10, dtype)
    x[0, 0, 0, 0] = x[0, 0, 2, 0] = lo + 12  # sums 4 * (lo + 10) + 2: mean lo + 10.5
    blob = _model("AVERAGE_POOL_2D", dtype, (1, 2, 4, 1), (0.05, 0), (0.05, 0), (1, 1, 2, 1),
                  options="Pool2DOptions", Padding=1, StrideW=2, StrideH=2, FilterWidth=2,
                  FilterHeight=2, FusedActivationFunction=0)
    _, got = _ours(blob, x)
    want = lo + 11 if lo + 10.5 > 0 else lo + 10
    np.testing.assert_array_equal(got.reshape(-1), [want, want])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("stride,padding,bias,act", [(1, 0, False, 0), (2, 0, True, 0),
                                                     (2, 1, True, 3), (3, 1, False, 1)])
def test_transpose_conv(dtype, stride, padding, bias, act):
    """8-bit TRANSPOSE_CONV as LiteRT's integer kernel (int8: per-channel weights; uint8:
    per-tensor uint8 weights with a zero point): exact sums, the final shift rounding half
    up; no float left."""
    rng = np.random.default_rng(stride * 10 + padding)
    o, k, c = 6, 3, 5
    if dtype == "int8":
        w = rng.integers(-127, 128, (o, k, k, c)).astype("int8")
        wq = (rng.uniform(0.002, 0.02, o).astype("float32"), np.zeros(o, "int64"), 0)
    else:
        w = rng.integers(0, 256, (o, k, k, c)).astype("uint8")
        wq = (0.01, 131)
    size = 7 * stride if padding == 0 else (7 - 1) * stride + k
    qi, qo = (0.05, _zp(dtype, 120)), (0.2, _zp(dtype, 100))
    b = ModelBuilder()
    ins = [b.constant("shape", np.array([1, size, size, o], "int32")),
           b.constant("w", w, quant=wq), b.input("x", (1, 7, 7, c), dtype, quant=qi)]
    if bias:
        bs = np.float32(qi[0]) * np.atleast_1d(wq[0]).astype("float32")
        ins.append(b.constant("b", rng.integers(-3000, 3000, o).astype("int32"),
                              quant=(np.resize(bs, o), np.zeros(o, "int64"), 0)))
    y = b.tensor("y", (1, size, size, o), dtype, quant=qo)
    b.operator("TRANSPOSE_CONV", ins, [y], "TransposeConvOptions", Padding=padding,
               StrideW=stride, StrideH=stride, FusedActivationFunction=act)
    b.output(y)
    mod = _check(b.finish(), _random(dtype, (1, 7, 7, c), 8))
    assert "int64" in mod.astext()  # (the fixed-point requantization)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("alpha_shape,scales", [((1, 1, 16), (0.05, 0.01, 0.03)),
                                                ((16,), (0.11, 0.004, 0.02)),
                                                ((1, 8, 1, 16), (0.02, 0.2, 0.09))])
def test_prelu(dtype, alpha_shape, scales):
    """8-bit PRELU as LiteRT's kernel: two fixed-point multipliers, one per sign, alpha
    broadcast; integer ops only."""
    si, sa, so = scales
    b = ModelBuilder()
    x = b.input("x", (1, 8, 8, 16), dtype, quant=(si, _zp(dtype, 120)))
    a = b.constant("a", _random(dtype, alpha_shape, 9), quant=(sa, _zp(dtype, 100)))
    y = b.tensor("y", (1, 8, 8, 16), dtype, quant=(so, _zp(dtype, 140)))
    b.operator("PRELU", [x, a], [y])
    b.output(y)
    mod = _check(b.finish(), _random(dtype, (1, 8, 8, 16), 10))
    assert "float32" not in mod.astext()


@pytest.mark.parametrize("mult,channels", [(1, 24), (2, 8), (4, 5)])
def test_uint8_depthwise_rounds_half_away(mult, channels):
    """LiteRT's uint8 depthwise kernel rounds its requantization's final shift half away from
    zero (its int8 and other convs half up): exact on every output."""
    rng = np.random.default_rng(mult)
    o = channels * mult
    b = ModelBuilder()
    x = b.input("x", (1, 12, 12, channels), "uint8", quant=(0.05, 120))
    w = b.constant("w", _random("uint8", (1, 3, 3, o), mult), quant=(0.01, 131))
    bias = b.constant("b", rng.integers(-2000, 2000, o).astype("int32"),
                      quant=(np.float32(0.05) * np.float32(0.01), 0))
    y = b.tensor("y", (1, 12, 12, o), "uint8", quant=(0.1, 100))
    b.operator("DEPTHWISE_CONV_2D", [x, w, bias], [y], "DepthwiseConv2DOptions", Padding=0,
               StrideW=1, StrideH=1, DepthMultiplier=mult, DilationWFactor=1,
               DilationHFactor=1, FusedActivationFunction=0)
    b.output(y)
    _check(b.finish(), _random("uint8", (1, 12, 12, channels), 20 + mult))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scales,act", [((0.05, 0.07, 0.03), 0), ((0.2, 0.011, 0.09), 3)])
def test_div_every_pair(dtype, scales, act):
    """8-bit DIV as LiteRT's kernel (``exact_div``) on every pair of values but a divisor at
    its zero point (LiteRT stops there), a dividend within one of its zero point included
    (LiteRT's shift passes 31 there and saturates); one lookup, no float."""
    z1, z2, zo = _zp(dtype, 120), _zp(dtype, 140), _zp(dtype, 100)
    b = ModelBuilder()
    x = b.input("x", (256, 256), dtype, quant=(scales[0], z1))
    x2 = b.input("x2", (256, 256), dtype, quant=(scales[1], z2))
    y = b.tensor("y", (256, 256), dtype, quant=(scales[2], zo))
    b.operator("DIV", [x, x2], [y], "DivOptions", FusedActivationFunction=act)
    b.output(y)
    blob = b.finish()
    lo, hi = QRANGE[dtype]
    a = np.repeat(np.arange(lo, hi + 1), 256).reshape(256, 256).astype(dtype)
    c = a.T.copy()
    c[c == z2] = z2 + 1
    mod, params = relay.frontend.from_tflite(blob)
    got = build_and_run(mod, params, {"x": a, "x2": c})[0]
    np.testing.assert_array_equal(got, _litert_inputs(blob, [a, c]))
    assert "float32" not in mod.astext()


@pytest.mark.parametrize("op", ["ADD", "SUB"])
@pytest.mark.parametrize("act", [0, 1])
def test_int16_add_sub(op, act):
    """int16 ADD / SUB as LiteRT's general-scale kernel (15 bits of headroom), broadcast."""
    rng = np.random.default_rng(act)
    b = ModelBuilder()
    x = b.input("x", (2, 512), "int16", quant=(0.0005, 0))
    x2 = b.input("x2", (1, 512), "int16", quant=(0.0007, 0))
    y = b.tensor("y", (2, 512), "int16", quant=(0.0004, 0))
    b.operator(op, [x, x2], [y], f"{op.title()}Options", FusedActivationFunction=act,
               PotScaleInt16=False)
    b.output(y)
    blob = b.finish()
    xs = [rng.integers(-32768, 32768, s).astype("int16") for s in ((2, 512), (1, 512))]
    mod, params = relay.frontend.from_tflite(blob)
    got = build_and_run(mod, params, {"x": xs[0], "x2": xs[1]})[0]
    np.testing.assert_array_equal(got, _litert_inputs(blob, xs))
    assert "float32" not in mod.astext()


@pytest.mark.parametrize("scales,pair", [
    ((0.0012104559, 0.00038262733, 0.0051579936), (-1045, 3407)),
    ((6.4917942e-05, 0.00017434923, 0.00072537479), (8311, -5984)),
    ((0.00037828888, 0.00047214323, 0.0016583422), (-2434, 7512)),
    ((1e-7, 0.1, 0.2), (-91, 16085))])
def test_int16_add_elementwise(scales, pair):
    """int16 ADD of two same-shape tensors as LiteRT's elementwise kernel, which rounds each
    input once (its right shift folded into the left shift, floor where 15 + shift < 0): the
    pairs were a step off with twice-rounded inputs (the output's rounding a tie; at the last
    scales the folded shift is -5, a floor shift of the input)."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.input("x", (2, 512), "int16", quant=(scales[0], 0))
    x2 = b.input("x2", (2, 512), "int16", quant=(scales[1], 0))
    y = b.tensor("y", (2, 512), "int16", quant=(scales[2], 0))
    b.operator("ADD", [x, x2], [y], "AddOptions", FusedActivationFunction=0,
               PotScaleInt16=False)
    b.output(y)
    blob = b.finish()
    xs = [rng.integers(-32768, 32768, (2, 512)).astype("int16") for _ in range(2)]
    xs[0][0, 0], xs[1][0, 0] = pair
    mod, params = relay.frontend.from_tflite(blob)
    got = build_and_run(mod, params, {"x": xs[0], "x2": xs[1]})[0]
    np.testing.assert_array_equal(got, _litert_inputs(blob, xs))
    assert "float32" not in mod.astext()


@pytest.mark.parametrize("op", ["ABS", "NEG", "LEAKY_RELU"])
@pytest.mark.parametrize("scales", [(0.0005, 0.0004), (0.0003, 0.0003)])
def test_int16_unary_every_value(op, scales):
    """int16 ABS, NEG (raw, wrapping) and LEAKY_RELU as LiteRT's kernels: a 65536-entry
    table, every value."""
    fields = {"options": "LeakyReluOptions", "Alpha": 0.2} if op == "LEAKY_RELU" else {}
    blob = _model(op, "int16", (256, 256), (scales[0], 0), (scales[1], 0), **fields)
    x = np.arange(-32768, 32768).astype("int16").reshape(256, 256)
    mod = _check(blob, x)
    assert "take(" in mod.astext()


@pytest.mark.parametrize("n", [1000, 1007])
def test_requantize_from_int16_rounds_half_away(n):
    """QUANTIZE int16 -> int8: LiteRT's loop is scalar there (half away from zero on every
    value, no NEON blocks)."""
    blob = _model("QUANTIZE", "int16", (1, n), (0.00037, 0), (0.031, 5), out_dtype="int8")
    _check(blob, _random("int16", (1, n), n))


_APPROX = {"options": "GeluOptions", "Approximate": True}
_LUT16_SCALES = [(0.0005, 0.0004), (0.0001, 0.00003), (0.002, 0.0011)]


@pytest.mark.parametrize("op,fields,scales", [
    *[(op, f, sc) for op, f in (("LOG", {}), ("EXP", {}), ("GELU", _APPROX))
      for sc in _LUT16_SCALES],
    *[("GELU", {}, sc) for sc in _LUT16_SCALES],
    ("GELU", _APPROX, (4.5772409e-05, 5.1084149e-05)), ("LOG", {}, (0.0014302277, 0.00020816048)),
    ("EXP", {}, (5.051905827713199e-05, 0.00010583435505395755))])
def test_int16_lut_every_value(op, fields, scales):
    """int16 LOG, EXP and GELU (exact and tanh form) as LiteRT's interpolated 513-anchor
    tables (``exact_lut16``), on every int16 value. (GELU's erf form at scales 0.0001 ->
    0.00003 with erf in double, and the last three scale pairs with numpy's float32 tanh,
    log and exp, not the C library's, had anchors a step off LiteRT's: 124, 254, 130 and 248
    of 65536 values.)"""
    blob = _model(op, "int16", (256, 256), (scales[0], 0), (scales[1], 0), **fields)
    x = np.arange(-32768, 32768).astype("int16").reshape(256, 256)
    mod = _check(blob, x)
    assert "take(" in mod.astext()


def test_lut16_c_float_fallback():
    """Where the C library lacks the function, ``exact_lut16._c_float`` rounds the double
    fallback to float32; erfcf / tanhf / logf / expf load and stay within a float32 step of
    double."""
    f = exact_lut16._c_float("no_such_function_f", math.erfc)
    assert f(0.5) == np.float32(math.erfc(0.5)) and f(0.5).dtype == np.float32
    for name, ref in (("erfcf", math.erfc), ("tanhf", math.tanh), ("logf", math.log),
                      ("expf", math.exp)):
        g = exact_lut16._c_float(name, ref)
        for v in (0.3, 0.7, 3.0) if name == "logf" else (-2.5, -0.3, 0.0, 0.7, 3.0):
            assert abs(float(g(v)) - ref(v)) <= 2 * abs(float(np.spacing(np.float32(ref(v)))))


BYTE_SPLIT = 'dtype="uint8"'  # (a 16x8 product's low bytes, as the byte split casts them)


def _conv16x8(op, shape, o, k, stride, padding, act, seed, wmax=127):
    """A 16x8 CONV_2D / DEPTHWISE_CONV_2D: int16 activations, int8 weights per channel (up to
    ``wmax``), an int64 bias; (model, input, the TFLite weight)."""
    rng = np.random.default_rng(seed)
    n, h, w, c = shape
    depthwise = op == "DEPTHWISE_CONV_2D"
    ws = rng.uniform(0.001, 0.03, o).astype("float32")
    wt = rng.integers(-wmax, wmax + 1, (1, k, k, o) if depthwise else (o, k, k, c)).astype(
        "int8")
    si, so = 0.0003, 0.002
    b = ModelBuilder()
    x = b.input("x", shape, "int16", quant=(si, 0))
    wi = b.constant("w", wt, quant=(ws, np.zeros(o, "int64"), 3 if depthwise else 0))
    bias = b.constant("b", rng.integers(-2**21, 2**21, o).astype("int64"),
                      quant=(np.float32(si) * ws, np.zeros(o, "int64"), 0))
    oh = -(-h // stride) if padding == 0 else (h - k) // stride + 1
    ow = -(-w // stride) if padding == 0 else (w - k) // stride + 1
    y = b.tensor("y", (n, oh, ow, o), "int16", quant=(so, 0))
    fields = {"Padding": padding, "StrideW": stride, "StrideH": stride, "DilationWFactor": 1,
              "DilationHFactor": 1, "FusedActivationFunction": act}
    if depthwise:
        fields["DepthMultiplier"] = o // c
    b.operator(op, [x, wi, bias], [y], "DepthwiseConv2DOptions" if depthwise else
               "Conv2DOptions", **fields)
    b.output(y)
    return b.finish(), _random("int16", shape, seed + 1), wt


@pytest.mark.parametrize("op,o", [("CONV_2D", 10), ("DEPTHWISE_CONV_2D", 12)])
@pytest.mark.parametrize("k,stride,padding,act", [(3, 1, 0, 0), (3, 2, 1, 3), (1, 1, 1, 1)])
@pytest.mark.parametrize("wmax", [127, 50])
def test_16x8_conv(op, o, k, stride, padding, act, wmax):
    """16x8 CONV_2D / DEPTHWISE_CONV_2D as LiteRT's int16 kernels: exact sums, the 64-bit
    MultiplyByQuantizedMultiplier (a Q15 multiplier rounding half up). The sums are one op on
    the int16 data (``products16``): an int32 conv (weights bounding the sums below 2**31),
    a float32 depthwise one, its filters as they are where they bound the sums below 2**24
    (3x3 taps up to 50), else each split in a high and a low part (two output channels each:
    taps up to 127)."""
    from minitvm.schedule import conv_vnni

    blob, x, wt = _conv16x8(op, (1, 7, 8, 6), o, k, stride, padding, act, k * 10 + stride,
                            wmax)
    text = _check(blob, x).astext()
    split = False
    if op == "CONV_2D":
        one = "int32" if conv_vnni.pairs_available() else None
    else:  # (each output channel's taps: the last axis of the TFLite depthwise weight)
        one = "float32"
        split = int(np.abs(wt.astype("int64")).sum(axis=(0, 1, 2)).max()) * 32768 >= 2**24
        assert split == (k == 3 and wmax == 127)
    if one is None:
        assert BYTE_SPLIT in text
    else:
        assert BYTE_SPLIT not in text and f'out_dtype="{one}"' in text
        assert "float64" not in text  # (requantized in int32: multiply_wide_int32_expr)
        assert (f"channels={2 * o}" in text) == split


def test_16x8_conv_sums_past_int32():
    """Sums past 2**31 (1024 taps of 32767 * 127): LiteRT accumulates in int64, its Q15
    multiplier makes 28408.55 28408 (and -28408.55 -28409)."""
    b = ModelBuilder()
    x = b.input("x", (1, 1, 2, 1024), "int16", quant=(1e-5, 0))
    w = b.constant("w", np.full((3, 1, 1, 1024), 127, "int8"),
                   quant=(np.full(3, 1e-3, "float32"), np.zeros(3, "int64"), 0))
    y = b.tensor("y", (1, 1, 2, 3), "int16", quant=(1.5e-3, 0))
    b.operator("CONV_2D", [x, w], [y], "Conv2DOptions", Padding=1, StrideW=1, StrideH=1,
               DilationWFactor=1, DilationHFactor=1, FusedActivationFunction=0)
    b.output(y)
    xv = np.full((1, 1, 2, 1024), 32767, "int16")
    xv[0, 0, 1] = -32768
    mod, got = _ours(b.finish(), xv)
    np.testing.assert_array_equal(got.reshape(-1), [28408] * 3 + [-28409] * 3)
    assert BYTE_SPLIT in mod.astext()  # (past int32: the byte split, not one int32 conv)


def _fc16x8(shape, units, scales, act, seed, bias=True):
    rng = np.random.default_rng(seed)
    si, ws, so = scales
    b = ModelBuilder()
    x = b.input("x", shape, "int16", quant=(si, 0))
    ins = [x, b.constant("w", rng.integers(-127, 128, (units, shape[-1])).astype("int8"),
                         quant=(ws, 0))]
    if bias:
        ins.append(b.constant("b", rng.integers(-2**21, 2**21, units).astype("int64"),
                              quant=(float(np.float32(si) * np.float32(ws)), 0)))
    y = b.tensor("y", (shape[0], units), "int16", quant=(so, 0))
    b.operator("FULLY_CONNECTED", ins, [y], "FullyConnectedOptions",
               FusedActivationFunction=act, KeepNumDims=False)
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("shape,units,scales,act", [
    ((300, 40), 16, (0.0003, 0.01, 0.004), 0), ((64, 257), 9, (0.00011, 0.02, 0.03), 1),
    ((3, 5), 30, (0.001, 0.005, 0.0007), 0)])
def test_16x8_fully_connected(shape, units, scales, act):
    """16x8 FULLY_CONNECTED as LiteRT's kernel: int64 sums, then the real multiplier in
    double, rounded half away from zero. The sums: one int32 dense of the int16 rows
    (``products16``; 257 taps of 127 stay below 2**31)."""
    from minitvm.schedule import conv_vnni

    blob = _fc16x8(shape, units, scales, act, units)
    text = _check(blob, _random("int16", shape, units + 1)).astext()
    one = conv_vnni.pairs_available()
    assert (BYTE_SPLIT in text) != one
    dense = [ln for ln in text.splitlines() if "nn.dense(%x" in ln]  # (of the int16 rows)
    assert (len(dense) == 1 and 'out_dtype="int32"' in dense[0]) == one


def test_16x8_fully_connected_rounds_halves_away():
    """in * w / out scale 2**-10: every x / 1024 (every int16 value), exact halves rounded away
    from zero as LiteRT's double does, and no bias."""
    b = ModelBuilder()
    x = b.input("x", (65536, 1), "int16", quant=(2.0**-10, 0))
    w = b.constant("w", np.ones((1, 1), "int8"), quant=(2.0**-5, 0))
    y = b.tensor("y", (65536, 1), "int16", quant=(2.0**-5, 0))
    b.operator("FULLY_CONNECTED", [x, w], [y], "FullyConnectedOptions",
               FusedActivationFunction=0, KeepNumDims=False)
    b.output(y)
    xv = np.arange(-32768, 32768).astype("int16").reshape(-1, 1)
    _, got = _ours(b.finish(), xv)
    v = xv.astype("int64") / 1024
    np.testing.assert_array_equal(got, np.sign(v) * np.floor(np.abs(v) + 0.5))


@pytest.mark.parametrize("k,stride,padding,act", [(3, 1, 0, 0), (2, 2, 1, 1), ((9, 11), 1, 1, 3),
                                                  (4, 3, 0, 0)])
def test_int16_average_pool(k, stride, padding, act):
    """int16 AVERAGE_POOL_2D as LiteRT's kernel: the sum over in-bounds taps divided rounding
    half away from zero (in float64 here: float32's error reaches the rounding margin of a
    99-tap window of int16 values), clamped."""
    kh, kw = k if isinstance(k, tuple) else (k, k)
    if padding == 0:
        oh, ow = -(-9 // stride), -(-11 // stride)
    else:
        oh, ow = (9 - kh) // stride + 1, (11 - kw) // stride + 1
    blob = _model("AVERAGE_POOL_2D", "int16", (1, 9, 11, 16), (0.0005, 0), (0.0005, 0),
                  (1, oh, ow, 16), options="Pool2DOptions", Padding=padding, StrideW=stride,
                  StrideH=stride, FilterWidth=kw, FilterHeight=kh, FusedActivationFunction=act)
    mod = _check(blob, _random("int16", (1, 9, 11, 16), 7))
    assert "float32" not in mod.astext()


@pytest.mark.parametrize("shape,scale,beta,spread", [
    ((4, 37), 0.0004, 1.0, 1.0), ((2, 3, 300), 0.0001, 0.5, 0.3), ((3, 2000), 0.002, 2.0, 0.05),
    ((5, 1), 0.001, 1.0, 1.0), ((512, 40), 0.0004, 1.0, 1.0)])
def test_int16_softmax(shape, scale, beta, spread):
    """int16 SOFTMAX as LiteRT's kernel (``exact_softmax16``): rows of 1 to 2000 values (sums
    of exps up to 2**26), wide and narrow inputs, three betas; integer ops only. (The 512
    rows: with the reciprocal's anchors in float32, 2 values a step off.)"""
    blob = _model("SOFTMAX", "int16", shape, (scale, 0), (1 / 32768, 0), options="SoftmaxOptions",
                  Beta=beta)
    x = np.random.default_rng(len(shape)).normal(0, spread * 10000, shape)
    mod = _check(blob, np.clip(np.round(x), -32768, 32767).astype("int16"))
    assert "float" not in mod.astext()


def test_int16_softmax_tables():
    """The two interpolated tables within a few steps of exp over [-10, 0] and 1 / (1 + x)
    over [0, 1] (output 2 / 65535) at every int16 value (the anchors' bias moves exp's top
    5 steps down), monotonic."""
    from minitvm.relay.frontend.tflite import exact_softmax16

    v = np.arange(-32768, 32768)
    exp, recip = exact_softmax16.exp_table(), exact_softmax16.reciprocal_table()
    ideal_exp = np.minimum(np.round(np.exp((v - 32767) * 10 / 65535) * 65535 / 2), 32767)
    ideal_recip = np.minimum(np.round(65535 / 2 / (1 + (v + 32768) / 65535)), 32767)
    assert np.abs(exp - ideal_exp).max() <= 6 and np.abs(recip - ideal_recip).max() <= 2
    assert np.all(np.diff(exp.astype("int64")) >= 0)
    assert np.all(np.diff(recip.astype("int64")) <= 0)


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("scale", [0.0001, 0.00037, 0.001, 2.0**-14, 2.0**-10, 2.0**-12,
                                   2.0**-11])
def test_int16_sigmoid_tanh_every_value(op, scale):
    """int16 LOGISTIC / TANH as LiteRT's kernels (``exact_sigmoid16``) on every int16 value:
    the table kernels (the input rescaled to 1 / (3 * 4096) per step, the 256 anchors
    interpolated, the last one reached by TANH near saturation), and gemmlowp's fixed point
    at 2**-12 (both) and 2**-11 (TANH)."""
    blob = _model(op, "int16", (256, 256), (scale, 0), (1 / 32768, 0))
    mod = _check(blob, np.arange(-32768, 32768).astype("int16").reshape(256, 256))
    assert "take(" in mod.astext() and "float" not in mod.astext()


def test_sigmoid_anchors():
    """The 256 anchors within a step of 65536 * sigmoid(i / 24) plus half the interpolation's
    midpoint error; the table kernel only at the scales LiteRT takes it."""
    from minitvm.relay.frontend.tflite import exact_sigmoid16

    t = exact_sigmoid16.sigmoid_table()
    i = np.arange(256)
    assert t[0] == 32768 and t[-1] == 65535 and np.all(np.diff(t) >= 0)
    assert np.abs(t - 65536 / (1 + np.exp(-i / 24))).max() < 2
    assert not exact_sigmoid16.uses_table("LOGISTIC", 2.0**-12)
    assert exact_sigmoid16.uses_table("LOGISTIC", 2.0**-11)
    assert not exact_sigmoid16.uses_table("TANH", 2.0**-11)


@pytest.mark.parametrize("op", ["SOFTMAX", "LOGISTIC", "TANH"])
def test_int16_other_output_parameters_go_through_float(op):
    """An int16 output quantized other than 1 / 32768 (LiteRT rejects it) still imports:
    through float, within a step of the real function."""
    fields = {"options": "SoftmaxOptions", "Beta": 1.0} if op == "SOFTMAX" else {}
    blob = _model(op, "int16", (4, 64), (0.0005, 0), (1 / 256, 0), **fields)
    x = _random("int16", (4, 64), 3)
    mod, got = _ours(blob, x)
    v = x.astype("float64") * np.float32(0.0005)
    ref = {"SOFTMAX": lambda: np.exp(v - v.max(-1, keepdims=True)) /
           np.exp(v - v.max(-1, keepdims=True)).sum(-1, keepdims=True),
           "LOGISTIC": lambda: 1 / (1 + np.exp(-v)), "TANH": lambda: np.tanh(v)}[op]()
    assert np.abs(got - np.round(ref * 256)).max() <= 1
    assert "float32" in mod.astext()


def test_16x8_conv_large_bias_takes_int64():
    """Biases near 2**39 (sums past the float64 form's 2**38 bound): the int64 form, still
    LiteRT's values."""
    rng = np.random.default_rng(5)
    b = ModelBuilder()
    x = b.input("x", (1, 5, 5, 4), "int16", quant=(1e-5, 0))
    w = b.constant("w", rng.integers(-127, 128, (3, 3, 3, 4)).astype("int8"),
                   quant=(np.full(3, 1e-3, "float32"), np.zeros(3, "int64"), 0))
    bias = b.constant("b", np.array([2**39, -(2**39) + 12345, 3], "int64"),
                      quant=(np.full(3, 1e-8, "float32"), np.zeros(3, "int64"), 0))
    y = b.tensor("y", (1, 5, 5, 3), "int16", quant=(0.5, 0))
    b.operator("CONV_2D", [x, w, bias], [y], "Conv2DOptions", Padding=0, StrideW=1, StrideH=1,
               DilationWFactor=1, DilationHFactor=1, FusedActivationFunction=0)
    b.output(y)
    mod = _check(b.finish(), _random("int16", (1, 5, 5, 4), 6))
    assert "int64" in mod.astext()


def test_16x8_fully_connected_with_a_zero_point():
    """An int16 input zero point (LiteRT takes none): x - zp split in three bytes, against the
    integer form in numpy."""
    rng = np.random.default_rng(8)
    w = rng.integers(-127, 128, (7, 33)).astype("int8")
    b = ModelBuilder()
    x = b.input("x", (5, 33), "int16", quant=(0.0003, 1234))
    wi = b.constant("w", w, quant=(0.01, 0))
    y = b.tensor("y", (5, 7), "int16", quant=(0.002, 0))
    b.operator("FULLY_CONNECTED", [x, wi], [y], "FullyConnectedOptions",
               FusedActivationFunction=0, KeepNumDims=False)
    b.output(y)
    xv = _random("int16", (5, 33), 9)
    xv[0] = -32768
    _, got = _ours(b.finish(), xv)
    acc = (xv.astype("int64") - 1234) @ w.T.astype("int64")
    v = acc * (np.float64(np.float32(0.0003)) * np.float64(np.float32(0.01)) /
               np.float64(np.float32(0.002)))
    np.testing.assert_array_equal(got, np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5),
                                               -32768, 32767))
