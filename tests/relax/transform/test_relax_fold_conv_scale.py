"""Relax FoldConvScale: a conv2d's constant per-output-channel scale or inference batch norm
goes into its weights (structure and results), and what it cannot fold is left alone."""

import sys

import numpy as np
import pytest
from relax_pass_util import assert_equal, assert_same_results

import minitvm as tvm
from minitvm import relax

SHAPE = (1, 3, 6, 6)
RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
SCALE = RNG.uniform(0.5, 2.0, (4, 1, 1)).astype("float32")
BIAS = RNG.standard_normal((4, 1, 1)).astype("float32")
GAMMA, BETA, MEAN = (RNG.standard_normal(4).astype("float32") for _ in range(3))
VAR = RNG.uniform(0.5, 2.0, 4).astype("float32")


def _func(body, shape=SHAPE):
    """``main(x: shape)`` with ``body(bb, x)`` emitted in one dataflow block."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(body(bb, x))
        bb.emit_func_output(out)
    return bb.get()


def _run(mod):
    return relax.transform.FoldConvScale()(mod)


def _conv(x, w=W):
    return relax.op.nn.conv2d(x, relax.const(w), padding=(1, 1))


def _ops(mod) -> list[str]:
    return [b.value.op.name for blk in mod["main"].body.blocks for b in blk.bindings
            if isinstance(b.value, relax.Call)]


def _x(shape=SHAPE):
    return np.random.default_rng(1).standard_normal(shape).astype("float32")


def test_channel_scale_goes_into_the_weights():
    def before(bb, x):
        c = bb.emit(_conv(x))
        y = bb.emit(relax.op.multiply(relax.const(SCALE), c))  # (either operand order)
        return relax.op.nn.relu(bb.emit(relax.op.add(y, relax.const(BIAS))))

    def expected(bb, x):
        c = bb.emit(_conv(x, W * SCALE.reshape(4, 1, 1, 1)))
        return relax.op.nn.relu(bb.emit(relax.op.add(c, relax.const(BIAS))))

    mod = _func(before)
    out = _run(mod)
    assert_equal(out["main"], _func(expected)["main"], map_free_vars=True)
    assert_same_results(mod, out, "main", _x(), rtol=1e-5)


def test_inference_batch_norm_becomes_scaled_weights_and_a_bias():
    def before(bb, x):
        c = bb.emit(_conv(x))
        bn = bb.emit(relax.op.nn.batch_norm(c, *(relax.const(v) for v in
                                                 (GAMMA, BETA, MEAN, VAR)), axis=1,
                                            epsilon=1e-3))
        return relax.op.clip(bb.emit(relax.TupleGetItem(bn, 0)), 0.0, 6.0)

    k = GAMMA.astype("float64") / np.sqrt(VAR.astype("float64") + 1e-3)
    shift = (BETA - MEAN * k).astype("float32").reshape(4, 1, 1)

    def expected(bb, x):
        c = bb.emit(_conv(x, (W * k.astype("float32").reshape(4, 1, 1, 1)).astype("float32")))
        return relax.op.clip(bb.emit(relax.op.add(c, relax.const(shift))), 0.0, 6.0)

    mod = _func(before)
    out = _run(mod)
    assert _ops(out) == ["relax.nn.conv2d", "relax.add", "relax.clip"]
    assert_equal(out["main"], _func(expected)["main"], map_free_vars=True)
    x = tvm.nd.array(_x())
    got, ref = (relax.VirtualMachine(relax.build(m, "llvm"), tvm.cpu())["main"](x).numpy()
                for m in (out, mod))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def _two_uses(bb, x):
    c = bb.emit(_conv(x))
    return relax.op.add(bb.emit(relax.op.multiply(c, relax.const(SCALE))), c)


def _spatial_scale(bb, x):
    c = bb.emit(_conv(x))
    return relax.op.multiply(c, relax.const(np.arange(6, dtype="float32").reshape(6, 1)))


def _weight_is_an_input(bb, x):
    w = bb.emit(relax.op.multiply(relax.const(W), relax.const(np.float32(2.0))))
    c = bb.emit(relax.op.nn.conv2d(x, w, padding=(1, 1)))
    return relax.op.multiply(c, relax.const(SCALE))


def _rounded(bb, x):  # (a requantize: the conv's exact sums times the scale, rounded)
    c = bb.emit(_conv(x))
    return relax.op.round(bb.emit(relax.op.multiply(c, relax.const(np.float32(0.004)))))


def _cast_to_int(bb, x):
    c = bb.emit(_conv(x))
    return relax.op.astype(bb.emit(relax.op.multiply(c, relax.const(SCALE))), "int32")


@pytest.mark.parametrize("body", [_two_uses, _spatial_scale, _weight_is_an_input, _rounded,
                                  _cast_to_int])
def test_left_alone(body):
    mod = _func(body)
    out = _run(mod)
    assert_equal(out["main"], mod["main"])


def test_long_chain_at_the_default_recursion_limit():
    """A 100,000-binding chain after the scaled conv: walked without recursion."""
    n = 100_000
    assert sys.getrecursionlimit() <= 10_000

    def body(bb, x):
        y = bb.emit(relax.op.multiply(bb.emit(_conv(x)), relax.const(SCALE)))
        for _ in range(n):
            y = bb.emit(relax.op.nn.relu(y))
        return y

    out = _run(_func(body, (1, 3, 2, 2)))
    ops = _ops(out)
    assert len(ops) == n + 1 and ops[0] == "relax.nn.conv2d" and "relax.multiply" not in ops


def test_in_the_default_build():
    """The zero pipeline folds: one fused conv kernel, the same output as numpy's."""
    def body(bb, x):
        c = bb.emit(_conv(x))
        return relax.op.add(bb.emit(relax.op.multiply(c, relax.const(SCALE))),
                            relax.const(BIAS))

    mod = _func(body)
    zero = relax.get_pipeline("zero")(mod)
    assert not any("multiply" in gv.name_hint for gv in zero.get_global_vars())
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    x = _x()
    got = vm["main"](tvm.nd.array(x)).numpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 4, 6, 6), "float64")
    for i in range(3):
        for j in range(3):
            ref += np.einsum("chw,oc->ohw", xp[0, :, i:i + 6, j:j + 6], W[:, :, i, j])[None]
    np.testing.assert_allclose(got, ref * SCALE + BIAS, rtol=1e-4, atol=1e-4)


def test_a_rounded_product_keeps_the_integer_sums_exact():
    """Integer-valued data and weights (a quantized conv emulated in float32) sum exactly; the
    scale applied to the weights instead rounds each product: 127 * 25 - 75 * 54 = -875 times
    the multiplier is -3.4999998 (-3), the sum of the scaled products -3.5000002 (-4)."""
    w = np.zeros((1, 2, 3, 3), "float32")
    w[0, 0, 0, 0], w[0, 1, 0, 0] = 25.0, -54.0
    mult = np.float32(np.float32(0.02) * np.float32(0.01)) / np.float32(0.05)

    def body(bb, x):
        c = bb.emit(relax.op.nn.conv2d(x, relax.const(w)))
        return relax.op.round(bb.emit(relax.op.multiply(c, relax.const(mult))))

    mod = _func(body, (1, 2, 3, 3))
    x = np.ones((1, 2, 3, 3), "float32") * np.array([127.0, 75.0], "float32").reshape(1, 2, 1, 1)
    got = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())["main"](
        tvm.nd.array(x)).numpy()
    assert got.reshape(-1)[0] == np.round(np.float32(-875.0) * mult) == -3.0
