"""``tflite.fixed_point.multiply_wide_int32_expr``: LiteRT's 64-bit MultiplyByQuantizedMultiplier
(a Q15 significand, one rounding half up: ``fixed_point.multiply_wide`` in int64 numpy) of
int32 accumulators computed in int32 alone, equal over the whole int32 range (its extremes
among random values) and per-channel multipliers at the ends of ``INT32_SHIFTS``; shifts
outside it are refused."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.frontend.tflite import fixed_point
from minitvm.relay.frontend.tflite.quantized import quantize_multiplier


def _run(m0, shift, acc):
    x = relay.var("x", shape=acc.shape, dtype="int32")
    y = fixed_point.multiply_wide_int32_expr(x, m0, shift, 1, acc.ndim)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", acc)
    m.run()
    return m.get_output(0).numpy()


@pytest.mark.parametrize("scales", [[3e-4, 1.5e-3, 0.175, 2**-16], [1.5 * 2.0**-32]])
def test_int32_form_equals_the_int64_form(scales):
    rng = np.random.default_rng(len(scales))
    mult = np.array(scales * 4, "float64")[:8 if len(scales) > 1 else 1]
    m0, shift = quantize_multiplier(mult)
    assert fixed_point.int32_shifts(m0, shift)
    total = fixed_point.reduced_multiplier(m0, shift)[1]
    assert {int(total.min()), int(total.max())} & set(fixed_point.INT32_SHIFTS)  # (the ends)
    acc = rng.integers(-2**31, 2**31, (2, mult.size, 33, 5), dtype="int64")
    acc[0, :, 0, 0], acc[0, :, 0, 1] = -2**31, 2**31 - 1
    acc[1, :, 0, 0] = 0
    acc = acc.astype("int32")
    want = fixed_point.multiply_wide(acc, m0.reshape(1, -1, 1, 1), shift.reshape(1, -1, 1, 1))
    np.testing.assert_array_equal(_run(m0, shift, acc), want)


def test_shifts_outside_the_range_are_refused():
    m0, shift = quantize_multiplier(np.array([0.9, 1e-3]))  # (0.9: a total shift of 15)
    assert not fixed_point.int32_shifts(m0, shift)
    with pytest.raises(ValueError, match="total shift is outside"):
        fixed_point.multiply_wide_int32_expr(relay.var("x", shape=(1, 2), dtype="int32"), m0,
                                             shift, 1, 2)
