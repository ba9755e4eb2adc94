"""Legalize and FastMath: TVM's test_pass_legalize.py and test_pass_fast_math.py cases,
restated (Before -> pass -> Expected, plus numerics)."""

import numpy as np
import pytest
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.testing.temp_op_attr import TempOpAttr


def run_opt_pass(expr, passes):
    mod = tvm.IRModule.from_expr(expr)
    with tvm.transform.PassContext(opt_level=3):
        mod = tvm.transform.Sequential(passes if isinstance(passes, list) else [passes])(mod)
    return mod["main"] if isinstance(expr, relay.Function) else mod["main"].body


def _conv_relu(weight_fn=lambda w: w, relu_in=lambda y: y):
    x = relay.var("x", shape=(1, 8, 10, 10))
    weight = relay.var("weight", shape=(8, 8, 3, 3))
    y = relay.nn.conv2d(x, weight_fn(weight), channels=8, kernel_size=(3, 3), padding=(1, 1))
    return relay.Function([x, weight], relay.nn.relu(relu_in(y)))


def _double_weight(attrs, inputs, types):
    data, weight = inputs
    return relay.nn.conv2d(data, relay.multiply(weight, relay.const(2.0, "float32")), **attrs)


def test_legalize():
    with TempOpAttr("nn.conv2d", "FTVMLegalize", _double_weight):
        a = run_opt_pass(_conv_relu(), transform.Legalize())
    expected = _conv_relu(lambda w: relay.multiply(w, relay.const(2.0, "float32")))
    tvm.ir.assert_structural_equal(a, run_opt_pass(expected, transform.InferType()))
    before = tvm.IRModule.from_expr(_conv_relu())
    after = tvm.IRModule.from_expr(a)
    rng = np.random.default_rng(0)
    x = rng.random((1, 8, 10, 10), dtype="float32")
    w = rng.random((8, 8, 3, 3), dtype="float32")
    ref = relay.create_executor("debug", mod=before).evaluate()(x, 2 * w).numpy()
    got = relay.create_executor("debug", mod=after).evaluate()(x, w).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_legalize_none():
    called = []

    def keep(attrs, inputs, types):
        called.append(True)
        return None

    x = relay.var("x", shape=(1, 8, 10, 10))
    before = relay.Function([x], relay.nn.global_max_pool2d(x))
    with TempOpAttr("nn.global_max_pool2d", "FTVMLegalize", keep):
        a = run_opt_pass(before, transform.Legalize())
    tvm.ir.assert_structural_equal(a, run_opt_pass(before, transform.InferType()))
    assert called == [True]


def test_legalize_multiple_ops():
    def relu_after_zero_add(attrs, inputs, types):
        return relay.nn.relu(relay.add(relay.const(0, "float32"), inputs[0]))

    with TempOpAttr("nn.conv2d", "FTVMLegalize", _double_weight), \
            TempOpAttr("nn.relu", "FTVMLegalize", relu_after_zero_add):
        a = run_opt_pass(_conv_relu(), transform.Legalize())
    expected = _conv_relu(lambda w: relay.multiply(w, relay.const(2.0, "float32")),
                          lambda y: relay.add(relay.const(0, "float32"), y))
    tvm.ir.assert_structural_equal(a, run_opt_pass(expected, transform.InferType()))


def test_legalize_multi_input():
    seen = []

    def check_tuple(attrs, inputs, types):
        seen.append((inputs, types))
        return None

    x = relay.var("x", shape=(1, 8, 6, 6))
    y = relay.var("y", shape=(1, 8, 6, 2))
    z = relay.var("z", shape=(1, 8, 6, 1))
    before = relay.Function([x, y, z], relay.concatenate([x, y, z], axis=3))
    with TempOpAttr("concatenate", "FTVMLegalize", check_tuple):
        a = run_opt_pass(before, transform.Legalize())
    tvm.ir.assert_structural_equal(a, run_opt_pass(before, transform.InferType()))
    inputs, types = seen[0]
    assert len(inputs) == 1 and isinstance(inputs[0], relay.Tuple)
    assert len(types) == 2 and isinstance(types[0], relay.TupleType)
    assert isinstance(types[1], relay.TensorType)


# ------------------------------------------------------------------ FastMath
FAST = [(relay.exp, "fast_exp"), (relay.tanh, "fast_tanh"), (relay.erf, "fast_erf"),
        (lambda x: relay.nn.softmax(x, axis=1), "nn.fast_softmax")]


@pytest.mark.parametrize("build,fast", FAST, ids=[f for _, f in FAST])
def test_fast_math(build, fast):
    x = relay.var("x", shape=(1, 4, 4, 4), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], build(x)))
    fast_mod = transform.FastMath()(mod)
    assert fast in fast_mod.astext()
    # level 4 turns it on in the optimization pipeline, or required_pass at level 3
    with tvm.transform.PassContext(opt_level=4):
        assert fast in relay.optimize(mod, target="llvm", params=None)[0].astext()
    with tvm.transform.PassContext(opt_level=3, required_pass=["FastMath"]):
        assert fast in relay.optimize(mod, target="llvm", params=None)[0].astext()
    with tvm.transform.PassContext(opt_level=3):
        assert fast not in relay.optimize(mod, target="llvm", params=None)[0].astext()


def test_fast_math_expected_program():
    x = relay.var("x", shape=(2, 5))
    before = relay.Function([x], relay.add(relay.exp(x), relay.nn.softmax(relay.tanh(x))))
    # FastMath is level 4: above the level-3 context of run_opt_pass, so run it directly
    a = transform.FastMath()(transform.InferType()(tvm.IRModule.from_expr(before)))["main"]
    assert run_opt_pass(before, transform.FastMath()).body.args[0].op.name == "exp"
    fop = tvm.ir.Op.get
    sm = relay.nn.softmax(relay.tanh(x))
    expected = relay.Function([x], relay.add(
        relay.Call(fop("fast_exp"), [x]),
        relay.Call(fop("nn.fast_softmax"), [relay.Call(fop("fast_tanh"), [x])], sm.attrs)))
    tvm.ir.assert_structural_equal(a, run_opt_pass(expected, transform.InferType()))
    data = np.linspace(-5, 5, 10, dtype="float32").reshape(2, 5)
    check_numerics(tvm.IRModule.from_expr(before), tvm.IRModule.from_expr(a), [data],
                   rtol=1e-5, atol=1e-5)
