"""relay.qnn as TVM code uses it, under ``install_as_tvm()``: the ops build with TVM's
signatures, type-check, canonicalize to integer Relay (no qnn op left) and compute the
quantized values TVM's rounding rules give (compared with numpy formulas written here)."""

import numpy as np
import pytest

import minitvm


@pytest.fixture(scope="module")
def tvm():
    minitvm.compat.install_as_tvm()
    import tvm

    return tvm


def _canonical(tvm, body, params):
    from tvm import relay

    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    mod = relay.transform.InferType()(mod)
    canon = relay.qnn.transform.CanonicalizeOps()(mod)
    canon = relay.transform.InferType()(canon)
    text = canon.astext()
    assert "qnn." not in text, text
    return mod, canon


def _run(tvm, mod, *args):
    from tvm import relay

    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


def test_quantize_dequantize_round_trip(tvm):
    from tvm import relay

    x = relay.var("x", shape=(8,), dtype="float32")
    q = relay.qnn.op.quantize(x, relay.const(0.5), relay.const(3, "int32"), out_dtype="int8")
    mod, canon = _canonical(tvm, q, [x])
    a = np.array([-70.0, -1.3, -0.25, 0.0, 0.25, 0.74, 10.0, 70.0], "float32")
    want = np.clip(np.round(a / 0.5) + 3, -128, 127).astype("int8")
    np.testing.assert_array_equal(_run(tvm, mod, a), want)
    np.testing.assert_array_equal(_run(tvm, canon, a), want)
    qi = relay.var("q", shape=(8,), dtype="int8")
    dq = relay.qnn.op.dequantize(qi, relay.const(0.5), relay.const(3, "int32"))
    mod, canon = _canonical(tvm, dq, [qi])
    np.testing.assert_allclose(_run(tvm, canon, want), (want.astype("float32") - 3) * 0.5)


@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST"])
def test_requantize_rounding(tvm, rounding):
    from tvm import relay

    x = relay.var("x", shape=(6,), dtype="int32")
    r = relay.qnn.op.requantize(x, relay.const(1.0), relay.const(0, "int32"), relay.const(4.0),
                                relay.const(0, "int32"), rounding=rounding, out_dtype="int8")
    mod, canon = _canonical(tvm, r, [x])
    a = np.array([-6, -2, 2, 6, 10, 1000], "int32")
    q = a / 4.0
    if rounding == "UPWARD":
        rounded = np.floor(q + 0.5)
    else:  # ties away from zero
        rounded = np.sign(q) * np.floor(np.abs(q) + 0.5)
    want = np.clip(rounded, -128, 127).astype("int8")
    np.testing.assert_array_equal(_run(tvm, canon, a), want)
    np.testing.assert_array_equal(_run(tvm, mod, a), want)


def test_qnn_dense_and_conv2d(tvm):
    from tvm import relay

    rng = np.random.default_rng(0)
    d = relay.var("d", shape=(2, 5), dtype="int8")
    w = relay.var("w", shape=(3, 5), dtype="int8")
    dense = relay.qnn.op.dense(d, w, relay.const(1, "int32"), relay.const(-2, "int32"),
                               relay.const(0.5), relay.const(0.25), units=3)
    mod, canon = _canonical(tvm, dense, [d, w])
    a = rng.integers(-20, 20, (2, 5)).astype("int8")
    b = rng.integers(-20, 20, (3, 5)).astype("int8")
    want = (a.astype("int32") - 1) @ (b.astype("int32") + 2).T
    np.testing.assert_array_equal(_run(tvm, canon, a, b), want)

    x = relay.var("x", shape=(1, 2, 5, 5), dtype="uint8")
    k = relay.var("k", shape=(3, 2, 3, 3), dtype="uint8")
    conv = relay.qnn.op.conv2d(x, k, relay.const(4, "int32"), relay.const(2, "int32"),
                               relay.const(0.5), relay.const(0.5), kernel_size=(3, 3),
                               channels=3, padding=(1, 1))
    mod, canon = _canonical(tvm, conv, [x, k])
    xa = rng.integers(0, 30, (1, 2, 5, 5)).astype("uint8")
    ka = rng.integers(0, 30, (3, 2, 3, 3)).astype("uint8")
    xp = np.pad(xa.astype("int64") - 4, ((0, 0), (0, 0), (1, 1), (1, 1)))  # pads with the zero point
    want = np.zeros((1, 3, 5, 5), "int64")
    for o in range(3):
        for i in range(5):
            for j in range(5):
                want[0, o, i, j] = (xp[0, :, i:i + 3, j:j + 3] * (ka[o].astype("int64") - 2)).sum()
    np.testing.assert_array_equal(_run(tvm, canon, xa, ka), want)


def test_qnn_add_mul_concatenate(tvm):
    from tvm import relay

    a = relay.var("a", shape=(4,), dtype="uint8")
    b = relay.var("b", shape=(4,), dtype="uint8")
    s, z = relay.const(0.5), relay.const(10, "int32")
    add = relay.qnn.op.add(a, b, s, z, s, z, s, z)
    mul = relay.qnn.op.mul(a, b, s, z, s, z, relay.const(1.0), z)
    cat = relay.qnn.op.concatenate([a, b], [s, s], [z, z], s, z, axis=0)
    x = np.array([10, 12, 30, 200], "uint8")
    y = np.array([10, 20, 11, 100], "uint8")
    real = lambda v: (v.astype("float64") - 10) * 0.5  # noqa: E731
    for body, fn, out_scale in [(add, np.add, 0.5), (mul, np.multiply, 1.0)]:
        mod, canon = _canonical(tvm, body, [a, b])
        want = np.clip(np.round(fn(real(x), real(y)) / out_scale) + 10, 0, 255)
        got = _run(tvm, canon, x, y)
        assert np.abs(got.astype("int64") - want).max() <= 1  # one rounding step
    mod, canon = _canonical(tvm, cat, [a, b])
    np.testing.assert_array_equal(_run(tvm, canon, x, y), np.concatenate([x, y]))


def test_simulated_quantize_matches_quantize(tvm):
    from tvm import relay

    x = relay.var("x", shape=(5,), dtype="float32")
    sq = relay.qnn.op.simulated_quantize(x, relay.const(0.25), relay.const(1, "int32"),
                                         out_dtype="int8")
    q = relay.qnn.op.quantize(x, relay.const(0.25), relay.const(1, "int32"), out_dtype="int8")
    a = np.array([-40.0, -0.3, 0.0, 0.6, 40.0], "float32")
    m1 = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], sq)))
    m2 = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], q)))
    np.testing.assert_array_equal(_run(tvm, m1, a), _run(tvm, m2, a).astype("float32"))
