"""relay.qnn: quantized ops type-check, their references follow TVM's definitions, and the
canonical integer lowering (QnnCanonicalize, run by relay.build) gives the same values."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import qnn

RNG = np.random.default_rng(0)


def _func(build, *arrays):
    vs = [relay.var(f"p{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    return tvm.IRModule.from_expr(relay.Function(vs, build(*vs)))


def _interp(mod, *arrays):
    return relay.create_executor("debug", mod=mod).evaluate()(*arrays).numpy()


def _compiled(mod, *arrays):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm")
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for i, a in enumerate(arrays):
        m.set_input(f"p{i}", a)
    m.run()
    return m.get_output(0).numpy()


def _both(build, *arrays):
    mod = _func(build, *arrays)
    want = _interp(mod, *arrays)
    got = _compiled(mod, *arrays)
    np.testing.assert_array_equal(got, want)
    canon = relay.transform.QnnCanonicalize()(relay.transform.InferType()(mod))
    assert "qnn." not in canon.astext()
    np.testing.assert_array_equal(_interp(canon, *arrays), want)
    return want


def test_quantize_dequantize_roundtrip():
    x = RNG.uniform(-3, 3, (4, 5)).astype("float32")
    q = _both(lambda a: qnn.op.quantize(a, 0.05, 3, out_dtype="int8"), x)
    want = np.clip(np.round(x / np.float32(0.05)) + 3, -128, 127).astype("int8")
    np.testing.assert_array_equal(q, want)
    d = _both(lambda a: qnn.op.dequantize(a, 0.05, 3), q)
    assert np.abs(d - np.clip(x, -6.55, 6.2)).max() <= 0.025 + 1e-6


def test_per_channel_quantize():
    x = RNG.uniform(-1, 1, (2, 3, 4)).astype("float32")
    scale = relay.const(np.array([0.01, 0.02, 0.05], "float32"))
    zp = relay.const(np.array([0, 1, -2], "int32"))
    q = _both(lambda a: qnn.op.quantize(a, scale, zp, axis=1, out_dtype="int8"), x)
    s = np.array([0.01, 0.02, 0.05], "float32").reshape(1, 3, 1)
    want = np.clip(np.round(x / s) + np.array([0, 1, -2]).reshape(1, 3, 1), -128, 127)
    np.testing.assert_array_equal(q, want.astype("int8"))


@pytest.mark.parametrize("rounding", ["None", "UPWARD", "TONEAREST"])
def test_requantize_rounding(rounding):
    q = np.array([-7, -5, -3, -1, 0, 1, 3, 5, 7, 127, -128], "int8")
    out = _both(lambda a: qnn.op.requantize(a, 0.5, 0, 1.0, 0, rounding=rounding,
                                            out_dtype="int8"), q)
    halves = q / 2.0
    if rounding == "TONEAREST":
        want = np.sign(halves) * np.floor(np.abs(halves) + 0.5)
    else:
        want = np.floor(halves + 0.5)
    np.testing.assert_array_equal(out, want.astype("int8"))


def test_requantize_saturates_and_int32_input():
    q = np.array([-100000, -5, 0, 5, 100000], "int32")
    out = _both(lambda a: qnn.op.requantize(a, 0.25, 0, 0.1, 10, out_dtype="uint8"), q)
    # 5 * 0.25 / float32(0.1) is just below 12.5: rounds to 12
    np.testing.assert_array_equal(out, np.array([0, 0, 10, 22, 255], "uint8"))


def test_qnn_conv2d_and_dense_match_integer_math():
    x = RNG.integers(0, 256, (1, 3, 6, 6)).astype("uint8")
    w = RNG.integers(-128, 128, (4, 3, 3, 3)).astype("int8")
    out = _both(lambda a, b: qnn.op.conv2d(a, b, 128, 2, 0.1, 0.2, (3, 3), 4, padding=(1, 1)),
                x, w)
    xi = np.pad(x.astype(np.int64) - 128, ((0, 0), (0, 0), (1, 1), (1, 1)))
    wi = w.astype(np.int64) - 2
    want = np.zeros((1, 4, 6, 6), np.int64)
    for i in range(6):
        for j in range(6):
            want[0, :, i, j] = np.einsum("chw,ochw->o", xi[0, :, i:i + 3, j:j + 3], wi)
    np.testing.assert_array_equal(out, want.astype("int32"))
    d = RNG.integers(-128, 128, (3, 8)).astype("int8")
    dw = RNG.integers(-128, 128, (5, 8)).astype("int8")
    out = _both(lambda a, b: qnn.op.dense(a, b, -1, 3, 0.1, 0.1, 5), d, dw)
    np.testing.assert_array_equal(out, ((d.astype(np.int64) + 1) @ (dw.astype(np.int64) - 3).T))


def test_qnn_add_sub_mul_concatenate():
    a = RNG.integers(-128, 128, (3, 4)).astype("int8")
    b = RNG.integers(-128, 128, (3, 4)).astype("int8")
    args = (0.05, 2, 0.1, -3, 0.08, 1)
    real_a, real_b = (a.astype(np.float64) - 2) * 0.05, (b.astype(np.float64) + 3) * 0.1
    for op, fn in ((qnn.op.add, np.add), (qnn.op.subtract, np.subtract),
                   (qnn.op.mul, np.multiply)):
        out = _both(lambda x, y, op=op: op(x, y, *args), a, b)
        real = (out.astype(np.float64) - 1) * 0.08
        want = np.clip(fn(real_a, real_b), (-128 - 1) * 0.08, (127 - 1) * 0.08)
        assert np.abs(real - want).max() <= 0.08 + 1e-9
    out = _both(lambda x, y: qnn.op.concatenate([x, y], [0.05, 0.1], [2, -3], 0.08, 1, axis=1),
                a, b)
    assert out.shape == (3, 8)
    real = (out.astype(np.float64) - 1) * 0.08
    want = np.clip(np.concatenate([real_a, real_b], axis=1), -129 * 0.08, 126 * 0.08)
    assert np.abs(real - want).max() <= 0.04 + 1e-9


def test_simulated_quantize():
    x = RNG.uniform(-2, 2, (5,)).astype("float32")
    q = _both(lambda a: qnn.op.simulated_quantize(a, relay.const(0.1), relay.const(0.0),
                                                  out_dtype="int8"), x)
    np.testing.assert_array_equal(q, np.clip(np.round(x / np.float32(0.1)), -128, 127))
    d = _both(lambda a: qnn.op.simulated_dequantize(a, relay.const(0.1), relay.const(0.0)), q)
    np.testing.assert_allclose(d, q * np.float32(0.1), rtol=1e-6)


def test_canonical_form_of_dequantize():
    mod = _func(lambda a: qnn.op.dequantize(a, 0.5, 1), np.zeros((2,), "int8"))
    got = relay.transform.QnnCanonicalize()(relay.transform.InferType()(mod))
    x = relay.var("p0", shape=(2,), dtype="int8")
    body = relay.multiply(relay.cast(relay.subtract(relay.cast(x, "int32"), relay.const(1)),
                                     "float32"), relay.const(0.5))
    want = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    tvm.ir.assert_structural_equal(got, want)


def test_type_errors_name_the_problem():
    f = relay.var("f", shape=(2, 3))
    i8 = relay.var("i", shape=(2, 3), dtype="int8")
    cases = [
        (qnn.op.quantize(i8, 0.1, 0), "float tensor"),
        (qnn.op.dequantize(f, 0.1, 0), "integer tensor"),
        (qnn.op.quantize(f, 0.1, 0, out_dtype="float16"), "out_dtype"),
        (qnn.op.quantize(f, relay.const(np.ones(4, "float32")), 0, axis=1), "per-channel"),
        (qnn.op.requantize(i8, 0.1, 0, 0.2, 0, rounding="DOWN"), "rounding"),
        (qnn.op.dense(i8, relay.var("w", shape=(4, 5), dtype="int8"), 0, 0, 0.1, 0.1, 4),
         "weight"),
    ]
    for expr, msg in cases:
        with pytest.raises(Exception, match=msg):
            relay.transform.InferType()(tvm.IRModule.from_expr(expr))
