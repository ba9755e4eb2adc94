"""relay.transform.recast (TVM v0.19's python helper): TVM's test_recast.py cases restated, plus
numerics, errors and a deep chain."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import recast


def _conv(x, w, **kw):
    return relay.nn.conv2d(x, w, padding=(1, 1), **kw)


def _two_convs():
    x = relay.var("x", shape=[2, 4, 6, 6])
    w = relay.var("w", shape=[4, 4, 3, 3])
    w2 = relay.var("w2", shape=[4, 4, 3, 3])
    c = _conv(x, w, out_dtype="float32")
    return x, w, w2, relay.Function([x, w, w2], _conv(c, w2, out_dtype="float32"))


def test_single_conv_to_int8():
    x = relay.var("x", shape=[2, 4, 6, 6])
    w = relay.var("w", shape=[4, 4, 3, 3])
    before = relay.Function([x, w], _conv(x, w, out_dtype="float32"))
    after = recast(before, "int8", "int32")
    c = _conv(relay.cast(x, "int8"), relay.cast(w, "int8"), out_dtype="int32")
    expected = relay.Function([x, w], relay.cast(c, "float32"))
    assert tvm.ir.structural_equal(after, expected)


def test_two_convs_both_recast():
    x, w, w2, before = _two_convs()
    after = recast(before, "int8", "int32")
    c = relay.cast(_conv(relay.cast(x, "int8"), relay.cast(w, "int8"), out_dtype="int32"),
                   "float32")
    c2 = _conv(relay.cast(c, "int8"), relay.cast(w2, "int8"), out_dtype="int32")
    expected = relay.Function([x, w, w2], relay.cast(c2, "float32"))
    tvm.ir.assert_structural_equal(after, expected)


@pytest.mark.parametrize("skip", [[0], [-2]])
def test_skip_first_layer(skip):
    x, w, w2, before = _two_convs()
    after = recast(before, "int8", "int32", skip_layers=skip)
    c = _conv(x, w, out_dtype="float32")
    c2 = _conv(relay.cast(c, "int8"), relay.cast(w2, "int8"), out_dtype="int32")
    expected = relay.Function([x, w, w2], relay.cast(c2, "float32"))
    tvm.ir.assert_structural_equal(after, expected)
    assert skip in ([0], [-2])  # the caller's list is not rewritten (TVM's is)


def test_skip_last_layer_and_default_out_dtype():
    """A conv without out_dtype takes its result dtype from type inference."""
    x = relay.var("x", shape=[2, 4, 6, 6])
    w = relay.var("w", shape=[4, 4, 3, 3])
    w2 = relay.var("w2", shape=[4, 4, 3, 3])
    before = relay.Function([x, w, w2], _conv(_conv(x, w), w2))
    after = recast(before, "float16", "float16", skip_layers=[-1])
    c = relay.cast(_conv(relay.cast(x, "float16"), relay.cast(w, "float16"),
                         out_dtype="float16"), "float32")
    expected = relay.Function([x, w, w2], _conv(c, w2))
    tvm.ir.assert_structural_equal(after, expected)


def test_other_ops_and_module_input():
    x = relay.var("x", shape=[3, 5])
    w = relay.var("w", shape=[4, 5])
    d = relay.nn.dense(x, w)
    before = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.relu(d)))
    after = recast(before, "float16", "float16", ops=["nn.dense", "nn.relu"])
    assert isinstance(after, tvm.IRModule)
    d2 = relay.cast(relay.nn.dense(relay.cast(x, "float16"), relay.cast(w, "float16"),
                                   out_dtype="float16"), "float32")
    expected = relay.Function([x, w], relay.cast(relay.nn.relu(relay.cast(d2, "float16")),
                                                 "float32"))
    tvm.ir.assert_structural_equal(after["main"], expected)


def _run(func, *args):
    mod = tvm.IRModule.from_expr(func)
    return relay.create_executor("debug", mod=mod, target="llvm").evaluate()(*args).numpy()


def test_numerics_float16_close_to_float32():
    x, w, w2, before = _two_convs()
    rng = np.random.default_rng(0)
    args = [rng.uniform(-1, 1, s).astype("float32") for s in
            ((2, 4, 6, 6), (4, 4, 3, 3), (4, 4, 3, 3))]
    after = recast(before, "float16", "float16")
    ref = _run(before, *args)
    got = _run(after, *args)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2)


def test_numerics_int8_on_integer_valued_inputs():
    """Integer-valued small inputs survive the int8 casts, so the result is exact."""
    x, w, w2, before = _two_convs()
    rng = np.random.default_rng(1)
    args = [rng.integers(-1, 2, s).astype("float32") for s in
            ((2, 4, 6, 6), (4, 4, 3, 3), (4, 4, 3, 3))]
    after = recast(before, "int8", "int32", skip_layers=[1])
    np.testing.assert_array_equal(_run(after, *args), _run(before, *args))


def test_errors():
    x, w, w2, before = _two_convs()
    with pytest.raises(ValueError, match="'nn.nope' in ops is not a registered operator"):
        recast(before, "int8", "int32", ops=["nn.nope"])
    with pytest.raises(TypeError, match="dtype must be a dtype string"):
        recast(before, 8, "int32")
    y = relay.var("y", shape=[2])
    with pytest.raises(Exception, match="add"):
        recast(relay.Function([y], relay.add(y, relay.var("z", shape=[3]))), "float16",
               "float16", ops=["add"])


def test_deep_chain():
    x = relay.var("x", shape=[2])
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    after = recast(relay.Function([x], relay.exp(e)), "float16", "float16", ops=["exp"])
    assert after.body.op.name == "cast" and after.body.args[0].op.name == "exp"
    assert after.body.args[0].args[0].op.name == "cast"
