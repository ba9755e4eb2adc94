"""The plan that takes 8-bit integer products exactly in float32 pieces (frontend_common.onnx_quant):
its bound, the pieces it picks, and that the worst inputs it allows sum exactly in float32."""

import numpy as np
import pytest

from minitvm.frontend_common.onnx_quant import (
    EXACT,
    UNKNOWN,
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
