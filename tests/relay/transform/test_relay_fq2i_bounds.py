"""``fake_quantization_to_integer_bounds.int_range``: the sound range of an integer expression
FakeQuantizationToInteger built (a QAT pool's sums), which the dense rule needs to prove its
int32 sums exact."""

import numpy as np

from minitvm import relay
from minitvm.relay.transform.fake_quantization_to_integer_bounds import MAX_DEPTH, int_range


def _c(v, dtype):
    return relay.const(np.asarray(v, dtype), dtype)


def test_pool_sums_range():
    """cast(uint8) - 3 summed over an 8x8 plane, flattened: 64 x [-3, 252]; as int16, kept."""
    x = relay.var("x", shape=(2, 32, 8, 8), dtype="uint8")
    s = relay.sum(relay.subtract(relay.cast(x, "int32"), _c(3, "int32")), [2, 3], keepdims=True)
    assert int_range(relay.nn.batch_flatten(s)) == (-192, 252 * 64)
    assert int_range(relay.cast(s, "int16")) == (-192, 252 * 64)
    assert int_range(relay.add(_c(5, "int32"), relay.cast(x, "int32"))) == (5, 260)
    assert int_range(relay.clip(relay.cast(x, "int32"), 10, 20)) == (10, 20)


def test_ranges_past_a_dtype_or_unknown_ops():
    """A sum that could wrap int16 is int16's whole range; a multiply of two tensors, or a
    cast from floats, is its dtype's range; a float expression has none."""
    x = relay.var("x", shape=(1, 4, 16, 16), dtype="uint8")
    wide = relay.cast(relay.sum(relay.cast(x, "int32"), [2, 3]), "int16")
    assert int_range(wide) == (-32768, 32767)
    y = relay.cast(x, "int32")
    assert int_range(relay.multiply(y, y)) == (-(2**31), 2**31 - 1)
    assert int_range(relay.cast(relay.round(relay.cast(x, "float32")), "int32")) == \
        (-(2**31), 2**31 - 1)
    assert int_range(relay.cast(x, "float32")) is None


def test_long_chain_is_capped():
    """100,000 copies above a uint8 input: the walk stops after MAX_DEPTH calls (no
    recursion, nothing typed), taking the expression's dtype's range."""
    x = relay.var("x", shape=(4,), dtype="int16")
    e = relay.cast(relay.cast(x, "uint8"), "int32")
    for _ in range(100_000):
        e = relay.copy(e)
    assert MAX_DEPTH < 100_000
    assert int_range(e, "int32") == (-(2**31), 2**31 - 1)
    assert int_range(relay.reshape(relay.cast(relay.cast(x, "uint8"), "int32"), (4,))) == (0, 255)
