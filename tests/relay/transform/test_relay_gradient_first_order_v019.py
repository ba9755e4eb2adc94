"""gradient(mode="first_order") as TVM v0.19 has it: deprecated (DeprecationWarning), routed
through the FirstOrderGradient module pass, and refusing a module argument."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import FirstOrderGradient, gradient


def _func():
    x = relay.var("x", shape=(2, 3), dtype="float64")
    y = relay.var("y", shape=(2, 3), dtype="float64")
    return relay.Function([x, y], relay.multiply(relay.exp(x), y))


def test_warns_and_matches_the_module_pass():
    with pytest.warns(DeprecationWarning, match="FirstOrderGradient module pass"):
        got = gradient(_func(), mode="first_order")
    want = FirstOrderGradient()(tvm.IRModule.from_expr(_func()))["main"]
    tvm.ir.assert_structural_equal(got, want)
    # TVM's GradRetType is annotated on the result: (result, (d x, d y))
    assert str(got.ret_type) == ("(Tensor[(2, 3), float64], (Tensor[(2, 3), float64], "
                                 "Tensor[(2, 3), float64]))")


def test_values_and_gradients():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    with pytest.warns(DeprecationWarning):
        g = gradient(_func(), mode="first_order")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(g))
    out, (dx, dy) = relay.create_executor("debug", mod=mod).evaluate()(x, y)
    np.testing.assert_allclose(out.numpy(), np.exp(x) * y, rtol=1e-12)
    np.testing.assert_allclose(dx.numpy(), np.exp(x) * y, rtol=1e-12)
    np.testing.assert_allclose(dy.numpy(), np.exp(x), rtol=1e-12)


def test_module_argument_is_refused():
    mod = tvm.IRModule.from_expr(_func())
    with pytest.warns(DeprecationWarning), pytest.raises(RuntimeError,
                                                         match="FirstOrderGradient module pass"):
        gradient(mod["main"], mod, mode="first_order")


def test_non_function_is_refused():
    x = relay.var("x", shape=(2,))
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError,
                                                         match="expects a relay.Function"):
        gradient(relay.exp(x), mode="first_order")


def test_higher_order_does_not_warn():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        gradient(_func())
