"""The plan that takes 8-bit integer products exactly in float32 pieces (frontend_common.onnx_quant):
its bound, the pieces it picks, and that the worst inputs it allows sum exactly in float32."""

import numpy as np
import pytest

from minitvm.frontend_common.onnx_quant import (
    EXACT,
    UNKNOWN,
    VnniConvPlan,
    activation_qparams,
    depthwise_data,
    float_pieces,
    int_span,
    keeps_int8_weight,
    shifted_range,
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
