"""qnn.requantize of 8-bit data (and qnn.add's requantized inputs) canonicalized in int32 halves
(``canonicalize._fixed_int32``): bit for bit TVM's int64 fixed-point rule (numpy's int64
reference, ``topi.reference.qnn.requantize_values``) over every 8-bit value, both roundings,
scale ratios above and below 1, per channel; no int64 left in the canonical program; int32
data (a conv's sums) keeps the int64 form."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.qnn.op import canonicalize
from minitvm.topi.reference.qnn import requantize_values


def _requantize(dtype, in_scale, in_zp, out_scale, out_zp, rounding, axis=1, shape=(2, 3, 256)):
    x = relay.var("x", shape=shape, dtype=dtype)
    y = relay.qnn.op.requantize(x, relay.const(np.asarray(in_scale, "float32")),
                                relay.const(np.asarray(in_zp, "int32")),
                                relay.const(np.float32(out_scale)), relay.const(np.int32(out_zp)),
                                axis=axis, rounding=rounding, out_dtype="int8")
    return tvm.IRModule.from_expr(relay.Function([x], y))


def _canonical_dtypes(mod) -> set[str]:
    mod = relay.transform.InferType()(mod)
    mod = relay.qnn.transform.CanonicalizeOps()(mod)
    mod = relay.transform.InferType()(mod)
    dtypes = set()
    relay.analysis.post_order_visit(mod["main"].body, lambda e: dtypes.add(
        e.checked_type.dtype) if isinstance(e, relay.Call) else None)
    return dtypes


def _run(mod, x):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    from minitvm.contrib import graph_executor

    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(x=x)
    return m.get_output(0).numpy()


# (in scale(s), in zero point, out scale, out zero point): ratios 0.0123 .. 9.7 (shifts -7 .. 4)
CASES = [
    (np.float32(0.05), 3, 0.0711, -2),
    ([0.02, 0.5, 0.0007], 0, 0.0571, 5),       # per channel
    (np.float32(0.97), -128, 0.1, 0),          # ratio 9.7: a left shift of 4
    (np.float32(0.8955), 7, 8.955, 1),         # a ratio of exactly 1/10 (ties: stop 61's case)
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST"])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_int32_halves_equal_int64_rule(case, rounding, dtype):
    in_scale, in_zp, out_scale, out_zp = case
    lo = -128 if dtype == "int8" else 0
    x = np.broadcast_to((np.arange(256) + lo).astype(dtype), (2, 3, 256)).copy()
    mod = _requantize(dtype, in_scale, in_zp, out_scale, out_zp, rounding)
    assert "int64" not in _canonical_dtypes(mod)
    want = requantize_values(x, np.asarray(in_scale, "float32"), np.int32(in_zp),
                             np.float32(out_scale), np.int32(out_zp), 1, rounding, "int8",
                             compute="int64")
    np.testing.assert_array_equal(_run(mod, x), want)


def test_int32_data_keeps_int64(monkeypatch):
    """int32 data (unbounded here) keeps the int64 product; so does every requantization with
    the halves turned off (``INT32_HALVES``)."""
    assert "int64" in _canonical_dtypes(_requantize("int32", 0.05, 0, 0.07, 0, "UPWARD"))
    monkeypatch.setattr(canonicalize, "INT32_HALVES", False)
    assert "int64" in _canonical_dtypes(_requantize("int8", 0.05, 0, 0.07, 0, "UPWARD"))


def test_bound_too_wide_keeps_int64():
    """A ratio so large that the shifted data times the multiplier's high half passes int32
    (a left shift of 17: ratio 2**17) keeps the int64 form."""
    mod = _requantize("uint8", np.float32(2.0 ** 17 * 0.01), 0, 0.01, 0, "UPWARD")
    assert "int64" in _canonical_dtypes(mod)


def test_qnn_add_of_int8_inputs_in_int32():
    """qnn.add requantizes each 8-bit input to the output scale in int32 halves: equal to the
    int64 rule on every pair of values."""
    a = relay.var("a", shape=(256, 256), dtype="int8")
    b = relay.var("b", shape=(256, 256), dtype="int8")
    c = lambda v, d="float32": relay.const(np.asarray(v, d))  # noqa: E731
    y = relay.qnn.op.add(a, b, c(0.031), c(3, "int32"), c(0.017), c(-5, "int32"),
                         c(0.043), c(2, "int32"))
    mod = tvm.IRModule.from_expr(relay.Function([a, b], y))
    assert "int64" not in _canonical_dtypes(mod)
    va = np.repeat(np.arange(-128, 128, dtype="int8")[:, None], 256, axis=1)
    vb = va.T.copy()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    from minitvm.contrib import graph_executor

    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(a=va, b=vb)
    got = m.get_output(0).numpy()
    ra = requantize_values(va, np.float32(0.031), np.int32(3), np.float32(0.043), np.int32(0),
                           None, "UPWARD", "int32", saturate=False, compute="int64")
    rb = requantize_values(vb, np.float32(0.017), np.int32(-5), np.float32(0.043), np.int32(0),
                           None, "UPWARD", "int32", saturate=False, compute="int64")
    want = np.clip(ra.astype("int64") + rb + 2, -128, 127).astype("int8")
    np.testing.assert_array_equal(got, want)
