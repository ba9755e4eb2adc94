"""The plan that takes 8-bit integer products exactly in float32 pieces (frontend_common.onnx_quant):
its bound, the pieces it picks, and that the worst inputs it allows sum exactly in float32."""

import numpy as np
import pytest

from minitvm.frontend_common.onnx_quant import (
    EXACT,
    UNKNOWN,
    MatmulVnniPlan,
    VnniConvPlan,
    activation_qparams,
    depthwise_data,
    dequantized_lstm_weight,
    dequantized_weight_scale,
    dequantized_zero_point_weight,
    dynamic_quantized_lstm_weights,
    fake_quant_bounds,
    float_pieces,
    int8_conv_weight,
    int_span,
    keeps_int8_weight,
    row_conv_attrs,
    scalar_qparams,
    shifted_range,
    vnni_conv,
)


def test_shifted_range():
    assert shifted_range("uint8", None) == (0, 255)
    assert shifted_range("uint8", np.array(3, "uint8")) == (-3, 252)
    assert shifted_range("int8", np.array([-128, 5], "int8")) == (-133, 255)
    assert shifted_range("uint8", UNKNOWN) == (-255, 255)
    assert int_span("uint8", np.array(3, "uint8")) == 252
    assert int_span("int8", None) == 128


def _worst_sums(x_dtype, x_zp, w, w_zp, ranges):
    """For each output row of ``w`` (outputs, K) and each piece: the inputs that push the sum
    up (down) as far as their range allows, summed one term at a time in float32 and in int64."""
    lo, hi = shifted_range(x_dtype, x_zp)
    v = w.astype(np.int64) - np.asarray(w_zp if w_zp is not None else 0, np.int64).reshape(-1, 1)
    for a, b in ranges:
        piece = v[:, a:b]
        for sign in (1, -1):
            x = np.where(sign * piece > 0, hi, lo)  # each product at its extreme of that sign
            terms = x * piece
            yield np.cumsum(terms.astype(np.float32), axis=1, dtype=np.float32), \
                np.cumsum(terms, axis=1)


@pytest.mark.parametrize("x_dtype,x_zp", [("uint8", None), ("uint8", np.array(128, "uint8")),
                                          ("int8", np.array(-128, "int8")),
                                          ("int8", np.array(0, "int8"))])
def test_worst_partial_sums_are_exact(x_dtype, x_zp):
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, (6, 4000)).astype("int8")
    w_zp = rng.integers(-4, 4, 6).astype("int8")
    ranges = float_pieces(x_dtype, x_zp, "int8", w.shape, w, w_zp, 0, 1)
    assert ranges is not None and ranges[0][0] == 0 and ranges[-1][1] == 4000
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    for f32, i64 in _worst_sums(x_dtype, x_zp, w, w_zp, ranges):
        assert np.abs(i64).max() <= EXACT
        np.testing.assert_array_equal(f32.astype(np.int64), i64)


def test_one_signed_input_halves_the_bound():
    """A uint8 input with zero point 0 (after a relu) multiplies each weight with one sign
    only: K=1152 int8 weights (ResNet's 128-channel 3x3 conv) fit one piece, where the sum of
    the products' magnitudes would need two."""
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 128, (128, 128, 3, 3)).astype("int8")
    assert 255 * np.abs(w.astype(np.int64)).sum(axis=(1, 2, 3)).max() > EXACT
    assert float_pieces("uint8", np.array(0, "uint8"), "int8", w.shape, w, None, 0, 1) == \
        [(0, 128)]
    # an unknown zero point may put the input on either side of 0: the products' magnitudes
    assert len(float_pieces("uint8", UNKNOWN, "int8", w.shape, w, None, 0, 1)) == 2


def test_unknown_weights_and_too_long_k():
    """Unknown weights take the widest product of their dtype; past MAX_PIECES pieces the plan
    gives up (None: accumulate in int32)."""
    shape = (512, 8)  # (K, N): a matmul's B
    span = 255 * 128
    ranges = float_pieces("uint8", None, "int8", shape, None, None, -1, -2)
    assert len(ranges) == -(-512 * span // EXACT)
    assert all((b - a) * span <= EXACT for a, b in ranges)
    assert float_pieces("uint8", UNKNOWN, "int8", (5000, 8), None, None, -1, -2) is None


def test_keeps_int8_weight():
    """A constant int8 weight without a nonzero zero point, one group, more than one tap."""
    w = np.ones((8, 4, 3, 3), "int8")
    assert keeps_int8_weight("int8", w, None, 1, (3, 3))
    assert keeps_int8_weight("int8", w, np.zeros(8, "int8"), 1, (3, 3))
    assert not keeps_int8_weight("int8", w, np.array(1, "int8"), 1, (3, 3))
    assert not keeps_int8_weight("int8", w, UNKNOWN, 1, (3, 3))
    assert not keeps_int8_weight("int8", None, None, 1, (3, 3))  # not a constant
    assert not keeps_int8_weight("uint8", w, None, 1, (3, 3))
    assert not keeps_int8_weight("int8", w, None, 2, (3, 3))
    assert not keeps_int8_weight("int8", w, None, 1, (1, 1))


def test_activation_qparams():
    """A VNNI conv reads an 8-bit activation's DequantizeLinear with a float32 scalar scale and
    no, or a known scalar, zero point."""
    s = np.array(0.5, "float32")
    got = activation_qparams("uint8", s, np.array(3, "uint8"), 0)
    assert got[0] == np.float32(0.5) and got[0].dtype == np.float32 and int(got[1]) == 3
    assert activation_qparams("int8", np.array([0.5], "float32"), None, 0)[1] is None
    assert activation_qparams("int16", s, None, 0) is None
    assert activation_qparams("uint8", s, None, 4) is None  # blocked
    assert activation_qparams("uint8", None, None, 0) is None
    assert activation_qparams("uint8", s, UNKNOWN, 0) is None
    assert activation_qparams("uint8", np.array(0.5, "float64"), None, 0) is None
    assert activation_qparams("uint8", np.array([0.5, 1], "float32"), None, 0) is None
    assert activation_qparams("uint8", s, np.array([1, 2], "uint8"), 0) is None


def _conv_ref(x, w, pads, pad_value):
    t, left, b, r = pads
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (t, b), (left, r)),
                constant_values=pad_value)
    kh, kw = w.shape[2:]
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            out += np.einsum("nchw,oc->nohw", xp[:, :, ky:ky + oh, kx:kx + ow],
                             w[:, :, ky, kx].astype(np.int64))
    return out


@pytest.mark.parametrize("x_dtype, zp, pads", [("uint8", 37, (1, 1, 1, 1)),
                                               ("uint8", None, (1, 0, 2, 1)),
                                               ("uint8", 9, (0, 0, 0, 0)),
                                               ("int8", -20, (1, 2, 1, 0)),
                                               ("int8", None, (0, 0, 0, 0))])
def test_vnni_conv_plan_is_the_shifted_conv(x_dtype, zp, pads):
    """Following the plan (shift, explicit pad with the zero point, the conv's own zero
    padding, the zero point's sums subtracted) gives conv(x - x_zp, w) padded with x_zp."""
    rng = np.random.default_rng(2)
    lo, hi = (0, 256) if x_dtype == "uint8" else (-128, 128)
    x = rng.integers(lo, hi, (1, 5, 6, 6)).astype(x_dtype)
    w = rng.integers(-128, 128, (4, 5, 3, 3)).astype("int8")
    zv = None if zp is None else np.array(zp, x_dtype)
    plan = VnniConvPlan(x_dtype, zv, w, pads)
    assert plan.shift == (x_dtype == "int8")
    q = x.astype(np.int64) + (128 if plan.shift else 0)
    assert q.min() >= 0 and q.max() <= 255  # (uint8 values)
    if plan.pad_value is not None:
        t, left, b, r = plan.pads
        q = np.pad(q, ((0, 0), (0, 0), (t, b), (left, r)), constant_values=plan.pad_value)
    else:
        assert plan.conv_pads == pads
    got = _conv_ref(q, w, plan.conv_pads, 0)
    if plan.zero_point_sums is not None:
        assert plan.zero_point_sums.dtype == np.int32
        got = got - plan.zero_point_sums
    z = 0 if zp is None else zp
    want = _conv_ref(x.astype(np.int64) - z, w, pads, 0)
    np.testing.assert_array_equal(got, want)
    assert (plan.zero_point_sums is None) == (plan.zero_point == 0)


@pytest.mark.parametrize("w_dtype, w_zp", [("uint8", 131), ("uint8", [0, 255, 128, 60]),
                                           ("int8", [-3, 0, 100, -128]), ("uint8", None)])
def test_int8_conv_weight_is_the_shifted_weight(w_dtype, w_zp):
    """w8 - z8 == w - zp per output channel, w8 in int8, z8 0 where a channel's w - zp fits
    int8 (channel 0 here, its values near its zero point)."""
    rng = np.random.default_rng(4)
    lo, hi = (0, 256) if w_dtype == "uint8" else (-128, 128)
    w = rng.integers(lo, hi, (4, 3, 2, 2))
    zv = None if w_zp is None else np.asarray(w_zp)
    z = np.zeros(4, np.int64) if zv is None else np.broadcast_to(zv, (4,)).astype(np.int64)
    w[0] = np.clip(w[0], max(lo, z[0] - 100), min(hi - 1, z[0] + 100))
    w8, z8 = int8_conv_weight(w.astype(w_dtype), w_dtype, None if zv is None else
                              zv.astype(w_dtype))
    assert w8.dtype == np.int8 and z8.shape == (4,)
    np.testing.assert_array_equal(w8.astype(np.int64) - z8.reshape(-1, 1, 1, 1),
                                  w - z.reshape(-1, 1, 1, 1))
    assert z8[0] == 0


def _window_sums(xp, kh, kw, stride):
    """Sums over all channels of each ``kh x kw`` window of the padded ``xp`` at ``stride``."""
    s = xp.astype(np.int64).sum(axis=1, keepdims=True)
    oh, ow = (s.shape[2] - kh) // stride + 1, (s.shape[3] - kw) // stride + 1
    out = np.zeros((s.shape[0], 1, oh, ow), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            out += s[:, :, ky:ky + stride * oh:stride, kx:kx + stride * ow:stride]
    return out


@pytest.mark.parametrize("x_dtype, x_zp, w_dtype, w_zp, pads, stride", [
    ("uint8", 37, "uint8", 131, (1, 1, 1, 1), 1),           # per tensor, zero-point padding
    ("uint8", None, "uint8", [0, 255, 77, 128], (1, 0, 2, 1), 2),  # per channel, stride 2
    ("int8", -20, "uint8", [3, 250, 128, 9], (1, 2, 1, 0), 1),    # an int8 input
    ("uint8", 9, "int8", [5, -7, 0, 127], (0, 0, 0, 0), 2)])      # int8 weight, zero points
def test_vnni_conv_plan_with_weight_zero_points(x_dtype, x_zp, w_dtype, w_zp, pads, stride):
    """Following the plan with a weight zero point (the int8 weight, the zero point sums, and
    the window sums of the padded input times ``window_weight``) gives the integer conv of
    x - x_zp (padded with x_zp) and w - w_zp."""
    rng = np.random.default_rng(5)
    lo, hi = (0, 256) if x_dtype == "uint8" else (-128, 128)
    x = rng.integers(lo, hi, (1, 5, 7, 7)).astype(x_dtype)
    wlo, whi = (0, 256) if w_dtype == "uint8" else (-128, 128)
    w = rng.integers(wlo, whi, (4, 5, 3, 3)).astype(w_dtype)
    xz = None if x_zp is None else np.array(x_zp, x_dtype)
    wz = np.asarray(w_zp, w_dtype)
    plan = VnniConvPlan(x_dtype, xz, w, pads, w_dtype, wz)
    assert plan.weight.dtype == np.int8 and plan.window_weight is not None
    q = x.astype(np.int64) + (128 if plan.shift else 0)
    if plan.pad_value is not None:
        t, left, b, r = plan.pads
        q = np.pad(q, ((0, 0), (0, 0), (t, b), (left, r)), constant_values=plan.pad_value)
    t, left, b, r = plan.conv_pads
    q = np.pad(q, ((0, 0), (0, 0), (t, b), (left, r)))  # (the conv's own zero padding)
    got = _conv_ref(q, plan.weight, (0, 0, 0, 0), 0)[:, :, ::stride, ::stride]
    got = got - plan.window_weight.astype(np.int64) * _window_sums(q, 3, 3, stride)
    if plan.zero_point_sums is not None:
        got = got - plan.zero_point_sums
    want = _conv_ref(x.astype(np.int64) - (x_zp or 0),
                     w.astype(np.int64) - np.broadcast_to(wz.astype(np.int64), (4,)).reshape(
                         -1, 1, 1, 1), pads, 0)[:, :, ::stride, ::stride]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("x_dtype, x_zp, w_zp, pads, stride, dil", [
    ("uint8", 37, None, (1, 1, 1, 1), 1, 1),
    ("int8", -6, None, (0, 2, 0, 2), 2, 1),        # a Conv1d's row: (1, 5) taps, stride 2
    ("uint8", 200, [3, 250, 128, 9], (2, 1, 0, 3), 1, 2),  # weight zero points, dilation 2
    ("uint8", 5, 131, (1, 0, 1, 1), 2, 1)])
def test_border_zero_point_sums_replace_the_pad(x_dtype, x_zp, w_zp, pads, stride, dil):
    """Given the geometry of a small output the plan pads with zero bytes (no explicit pad)
    and subtracts the zero point's share per output element (``border_zero_point_sums``): the
    same integer conv as padding with the zero point."""
    rng = np.random.default_rng(6)
    lo, hi = (0, 256) if x_dtype == "uint8" else (-128, 128)
    kw = 5 if pads[0] == pads[2] == 0 else 3
    kh = 1 if kw == 5 else 3
    x = rng.integers(lo, hi, (1, 6, 1 if kh == 1 else 8, 11)).astype(x_dtype)
    w_dtype = "int8" if w_zp is None else "uint8"
    w = rng.integers(-128 if w_zp is None else 0, 128 if w_zp is None else 256,
                     (4, 6, kh, kw)).astype(w_dtype)
    wz = None if w_zp is None else np.asarray(w_zp, "uint8")
    plan = VnniConvPlan(x_dtype, np.array(x_zp, x_dtype), w, pads, w_dtype, wz,
                        (x.shape[2:], (stride, stride), (dil, dil)))
    assert plan.pad_value is None and plan.conv_pads == pads
    q = x.astype(np.int64) + (128 if plan.shift else 0)
    t, left, b, r = pads
    q = np.pad(q, ((0, 0), (0, 0), (t, b), (left, r)))  # (zero bytes: the conv's own)
    wd = np.zeros((4, 6, (kh - 1) * dil + 1, (kw - 1) * dil + 1), np.int64)
    wd[:, :, ::dil, ::dil] = plan.weight
    got = _conv_ref(q, wd, (0, 0, 0, 0), 0)[:, :, ::stride, ::stride]
    assert plan.zero_point_sums.shape == (1,) + got.shape[1:]
    if plan.window_weight is not None:
        ones = np.zeros_like(wd[:1, :1])
        ones[:, :, ::dil, ::dil] = 1
        sums = _conv_ref(q.sum(axis=1, keepdims=True), ones, (0, 0, 0, 0), 0)
        got = got - plan.window_weight.astype(np.int64) * sums[:, :, ::stride, ::stride]
    got = got - plan.zero_point_sums
    z = np.zeros(4, np.int64) if wz is None else np.broadcast_to(wz.astype(np.int64), (4,))
    wt = np.zeros_like(wd)
    wt[:, :, ::dil, ::dil] = w.astype(np.int64) - z.reshape(-1, 1, 1, 1)
    want = _conv_ref(x.astype(np.int64) - x_zp, wt, pads, 0)[:, :, ::stride, ::stride]
    np.testing.assert_array_equal(got, want)


def test_large_outputs_keep_the_explicit_pad():
    """Past ``BORDER_MAX_OUTPUTS`` output elements the input is padded with its zero point
    (one ``(1, O, 1, 1)`` constant), as without the geometry."""
    from minitvm.frontend_common.onnx_quant import BORDER_MAX_OUTPUTS

    w = np.ones((64, 16, 3, 3), "int8")
    side = int(np.sqrt(BORDER_MAX_OUTPUTS // 64)) + 2
    plan = VnniConvPlan("uint8", np.uint8(9), w, (1, 1, 1, 1), "int8", None,
                        ((side, side), (1, 1), (1, 1)))
    assert plan.pad_value == 9 and plan.zero_point_sums.shape == (1, 64, 1, 1)
    small = VnniConvPlan("uint8", np.uint8(9), w, (1, 1, 1, 1), "int8", None,
                         ((8, 8), (1, 1), (1, 1)))
    assert small.pad_value is None and small.zero_point_sums.shape == (1, 64, 8, 8)


def test_vnni_conv_takes_weight_zero_points_when_asked():
    """A uint8 weight, or an int8 one with nonzero zero points, only for a caller that builds
    the window sums (``weight_zero_points``); zero points one or one per output channel."""
    from minitvm.schedule import conv_vnni

    ok = conv_vnni.products_available()
    w = np.ones((32, 16, 3, 3), "uint8")
    assert not vnni_conv("uint8", None, "uint8", w, np.uint8(3), 1, 32)
    assert vnni_conv("uint8", None, "uint8", w, np.uint8(3), 1, 32,
                     weight_zero_points=True) == ok
    assert vnni_conv("uint8", None, "uint8", w, np.full(32, 3, "uint8"), 1, 32,
                     weight_zero_points=True) == ok
    assert not vnni_conv("uint8", None, "uint8", w, np.full(16, 3, "uint8"), 1, 32,
                         weight_zero_points=True)
    assert not vnni_conv("uint8", None, "int8", w.astype("int8"), np.int8(2), 1, 32)
    assert vnni_conv("uint8", None, "int8", w.astype("int8"), np.int8(2), 1, 32,
                     weight_zero_points=True) == ok
    assert not vnni_conv("uint8", None, "uint8", w, UNKNOWN, 1, 32, weight_zero_points=True)


def test_dequantized_zero_point_weight_of_a_conv():
    """A conv's 4-D uint8 weight with zero points: one scale, or one per output channel
    (axis 0); a per-channel scale along another axis is none."""
    q = np.ones((8, 4, 3, 3), "uint8")
    s, z = dequantized_zero_point_weight(q, "uint8", np.float32(0.5), np.uint8(3), 1, 0)
    assert s.shape == z.shape == (1,)
    s, z = dequantized_zero_point_weight(q, "uint8", np.ones(8, "float32"),
                                         np.arange(8, dtype="uint8"), 0, 0)
    assert s.shape == z.shape == (8,)
    assert dequantized_zero_point_weight(q, "uint8", np.ones(4, "float32"),
                                         np.arange(4, dtype="uint8"), 1, 0) is None


@pytest.mark.parametrize("x_dtype, zp, groups, w_shape, want", [
    ("uint8", None, 8, (8, 1, 3, 3), "as_is"),
    ("uint8", np.array(0, "uint8"), 8, (8, 1, 3, 3), "as_is"),
    ("int8", np.array(0, "int8"), 8, (16, 1, 3, 3), "as_is"),   # a channel multiplier of 2
    ("int8", np.array(-128, "int8"), 8, (8, 1, 3, 3), "shift"),  # an int8 ReLU's output
    ("uint8", np.array(128, "uint8"), 8, (8, 1, 3, 3), None),    # nonzero: float32
    ("int8", np.array(5, "int8"), 8, (8, 1, 3, 3), None),
    ("uint8", UNKNOWN, 8, (8, 1, 3, 3), None),                   # not known at import
    ("uint8", None, 2, (8, 4, 3, 3), None),                      # 4 channels a group
    ("uint8", None, 1, (8, 8, 3, 3), None),                      # one group
    ("float32", None, 8, (8, 1, 3, 3), None),
])
def test_depthwise_data(x_dtype, zp, groups, w_shape, want):
    """Which depthwise convs read their 8-bit input as it is, or shifted into uint8."""
    assert depthwise_data(x_dtype, zp, groups, w_shape) == want


def test_depthwise_data_shift_is_the_shifted_input():
    """An int8 input with zero point -128, ``x + 128`` as uint8, is ``x - zp`` itself: the
    zero padding of the shifted input is the zero point's."""
    x = np.arange(-128, 128, dtype=np.int64)
    assert np.array_equal((x + 128).astype(np.uint8).astype(np.int64), x - (-128))


@pytest.mark.parametrize("a_dtype, a_zp, b_dtype, b_zp", [
    ("uint8", 7, "uint8", 131), ("int8", -3, "uint8", "column"), ("uint8", None, "int8",
                                                                   "column"),
    ("int8", 0, "int8", None), ("uint8", 255, "uint8", None)])
def test_matmul_vnni_plan_is_the_shifted_product(a_dtype, a_zp, b_dtype, b_zp):
    """The plan's int32 form ``A' @ W - z_a' * column_sums - z_b' * rowsum(A')`` (A' the
    uint8 rows, W the int8 weight) equals (a - a_zp) @ (b - b_zp), zero points scalar or per
    column, uint8 weights included."""
    rng = np.random.default_rng(5)
    lo, hi = (0, 256) if a_dtype == "uint8" else (-128, 128)
    a = rng.integers(lo, hi, (6, 37)).astype(a_dtype)
    blo, bhi = (0, 256) if b_dtype == "uint8" else (-128, 128)
    b = rng.integers(blo, bhi, (37, 11)).astype(b_dtype)
    bz = rng.integers(blo, bhi, 11).astype(b_dtype) if b_zp == "column" else \
        None if b_zp is None else np.array(b_zp, b_dtype)
    az = None if a_zp is None else np.array(a_zp, a_dtype)
    plan = MatmulVnniPlan(a_dtype, az, b, b_dtype, bz)
    ap = a.astype(np.int64) + (128 if plan.shift else 0)
    assert ap.min() >= 0 and ap.max() <= 255 and plan.weight.dtype == np.int8
    got = ap @ plan.weight.astype(np.int64)
    if plan.constant_correction is not None:
        got -= plan.constant_correction
    if plan.row_sum_weight is not None:
        got -= ap.sum(axis=1, keepdims=True) * plan.row_sum_weight
    want = (a.astype(np.int64) - (0 if az is None else az.astype(np.int64))) @ \
        (b.astype(np.int64) - (0 if bz is None else bz.astype(np.int64)))
    np.testing.assert_array_equal(got, want)
    assert (plan.row_sum_weight is None) == (b_dtype == "int8" and b_zp is None)


def test_dequantized_weight_scales_per_axis():
    """One scale (1,), one per row (n,) along axis 0, one per column (1, n) along axis 1 of a
    2-D weight (a MatMul's per_channel=True); a zero point or a uint8 weight: not these
    (``dequantized_zero_point_weight``: scales and zero points shaped alike)."""
    q = np.ones((4, 6), "int8")
    assert dequantized_weight_scale(q, "int8", np.float32(0.5), None, 0, 0).shape == (1,)
    assert dequantized_weight_scale(q, "int8", np.ones(4, "float32"), None, 0, 0).shape == (4,)
    assert dequantized_weight_scale(q, "int8", np.ones(6, "float32"), None, 1, 0).shape == (1, 6)
    assert dequantized_weight_scale(q, "int8", np.ones(6, "float32"), None, 0, 0) is None
    assert dequantized_weight_scale(np.ones((2, 3, 4), "int8"), "int8", np.ones(3, "float32"),
                                    None, 1, 0) is None
    assert dequantized_weight_scale(q, "int8", np.float32(0.5), np.int8(1), 1, 0) is None
    s, z = dequantized_zero_point_weight(q.astype("uint8"), "uint8", np.ones(6, "float32"),
                                         np.arange(6, dtype="uint8"), 1, 0)
    assert s.shape == z.shape == (1, 6)
    np.testing.assert_array_equal(z, [[0, 1, 2, 3, 4, 5]])
    assert dequantized_zero_point_weight(q, "int8", np.float32(1), None, 1, 0) is None
    assert dequantized_zero_point_weight(q, "int8", np.float32(1), UNKNOWN, 1, 0) is None


def test_fake_quant_bounds_equal_the_round_trip():
    """clip(round(x / s), lo - z, hi - z) * s is dequantize(quantize(x)), NaN included; a
    pair whose parameters differ, or per-axis ones, is none."""
    x = np.array([np.nan, np.inf, -np.inf, -3.0, -0.045, 0.015, 0.5, 2.0, 1e9], "float32")
    for dtype, z in (("uint8", 100), ("int8", -20), ("uint8", 0)):
        qp = scalar_qparams(np.array(0.03, "float32"), np.array(z, dtype), 0)
        s, lo, hi = fake_quant_bounds(dtype, qp, qp)
        r = np.clip(np.round(x / s), lo, hi)
        got = np.where(np.isnan(r), lo, r) * s
        info = np.iinfo(dtype)
        q = np.clip(np.round(x / s) + z, info.min, info.max)
        q = np.where(np.isnan(q), info.min, q).astype(dtype)
        np.testing.assert_array_equal(got, (q.astype("float32") - z) * s)
    a = scalar_qparams(np.array(0.03, "float32"), np.array(3, "uint8"), 0)
    b = scalar_qparams(np.array(0.03, "float32"), np.array(4, "uint8"), 0)
    assert fake_quant_bounds("uint8", a, b) is None
    assert scalar_qparams(np.ones(3, "float32"), None, 0) is None
    assert scalar_qparams(np.array(0.1, "float32"), None, 16) is None
    assert scalar_qparams(np.array(0.1, "float32"), None, 0) == (np.float32(0.1), 0)


def test_row_conv_attrs():
    got = row_conv_attrs({"kernel_shape": [5], "strides": [2], "pads": [2, 1], "group": 1})
    assert got == {"kernel_shape": [1, 5], "strides": [1, 2], "pads": [0, 2, 0, 1], "group": 1}
    assert row_conv_attrs({"auto_pad": "SAME_UPPER"}) == {"auto_pad": "SAME_UPPER"}


def test_dequantized_lstm_weight():
    """DynamicQuantizeLSTM's [dirs, input, 4H] 8-bit weight, scales and zero points per
    direction or per gate row, as LSTM's [dirs, 4H, input] float32 one; unknown values are
    an error."""
    rng = np.random.default_rng(2)
    q = rng.integers(0, 256, (2, 5, 8)).astype("uint8")
    s, z = rng.random((2, 8)).astype("float32"), rng.integers(0, 256, (2, 8)).astype("uint8")
    w = dequantized_lstm_weight(q, s, z, "W", ValueError)
    assert w.shape == (2, 8, 5) and w.dtype == np.float32
    np.testing.assert_allclose(w[1, 3, 4], (float(q[1, 4, 3]) - float(z[1, 3])) * s[1, 3],
                               rtol=1e-6)
    w = dequantized_lstm_weight(q.astype("int8"), np.array([0.5, 2.0], "float32"), None, "R",
                                ValueError)
    np.testing.assert_array_equal(w[1], q.astype("int8")[1].T.astype("float32") * 2.0)
    with pytest.raises(ValueError, match="R and its scale must be constants"):
        dequantized_lstm_weight(None, s, z, "R", ValueError)
    with pytest.raises(ValueError, match="one value per direction"):
        dequantized_lstm_weight(q, np.ones((2, 3), "float32"), None, "W", ValueError)


def test_dynamic_quantized_lstm_weights(monkeypatch):
    """DynamicQuantizeLSTM's weight as one run-time-quantized product per direction: the VNNI
    plan's int8 weight and column sums of each direction's [input, 4H] slice (a uint8 one
    shifted by 128, its zero point's share in the row sums), the scale per direction or per
    column; None where the host has no VNNI (the float LSTM then)."""
    from minitvm.schedule import conv_vnni

    rng = np.random.default_rng(3)
    q = rng.integers(0, 256, (2, 5, 8)).astype("uint8")
    s = rng.random((2, 8)).astype("float32")
    z = np.full((2, 8), 128, "uint8")
    monkeypatch.setattr(conv_vnni, "available", lambda: True)
    ws = dynamic_quantized_lstm_weights(q, s, z, "W", ValueError)
    assert len(ws) == 2 and ws[1].units == 8
    np.testing.assert_array_equal(ws[1].plan.weight, (q[1].astype("int64") - 128).astype("int8"))
    np.testing.assert_array_equal(ws[1].plan.column_sums, q[1].astype("int64").sum(0) - 5 * 128)
    np.testing.assert_array_equal(ws[0].scale, s[0])
    assert ws[0].plan.runtime_zero_point
    qs = q.astype("int8")
    ws = dynamic_quantized_lstm_weights(qs, np.array([0.5, 2.0], "float32"),
                                        np.zeros(2, "int8"), "R", ValueError)
    assert ws[1].scale.shape == () and float(ws[1].scale) == 2.0
    assert ws[1].plan.row_sum_weight is None  # (an int8 weight with zero point 0)
    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    assert dynamic_quantized_lstm_weights(q, s, z, "W", ValueError) is None
    with pytest.raises(ValueError, match="W and its scale must be constants"):
        dynamic_quantized_lstm_weights(q, None, z, "W", ValueError)
