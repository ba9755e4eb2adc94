"""FirstOrderGradient (TVM v0.19's module pass, first_order_gradient.cc): every function becomes
``fn(params) -> (result, (gradients...))`` with that return type; the program form, gradient
values against numpy, TVM's warnings and errors, and a deep chain."""

import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay

T3 = relay.TensorType((3,), "float32")


def _mod(params, body):
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))


def _run(mod, *args):
    out = relay.create_executor("debug", mod=mod).evaluate()(*args)
    return out


def test_multiply_program_and_return_type():
    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(3,))
    after = relay.transform.FirstOrderGradient()(_mod([x, y], relay.multiply(x, y)))

    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(3,))
    v0, g1, g2, g3 = (relay.var(n, T3) for n in ("v0", "g1", "g2", "g3"))
    body = relay.Tuple([v0, relay.Tuple([g2, g3])])
    body = relay.Let(g3, relay.collapse_sum_like(relay.multiply(g1, x), y), body)
    body = relay.Let(g2, relay.collapse_sum_like(relay.multiply(g1, y), x), body)
    body = relay.Let(g1, relay.ones_like(v0), body)
    body = relay.Let(v0, relay.multiply(x, y), body)
    ret = relay.TupleType([T3, relay.TupleType([T3, T3])])
    expected = tvm.IRModule.from_expr(relay.Function([x, y], body, ret))
    tvm.ir.assert_structural_equal(after, expected)
    after = relay.transform.InferType()(after)
    assert after["main"].checked_type.ret_type == ret


def test_gradient_values():
    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(3,))
    f = relay.add(relay.multiply(x, y), relay.exp(x))
    after = relay.transform.InferType()(relay.transform.FirstOrderGradient()(_mod([x, y], f)))
    rng = np.random.default_rng(0)
    xv, yv = (rng.standard_normal(3).astype("float32") for _ in range(2))
    value, (gx, gy) = _run(after, xv, yv)
    np.testing.assert_allclose(value.numpy(), xv * yv + np.exp(xv), rtol=1e-5)
    np.testing.assert_allclose(gx.numpy(), yv + np.exp(xv), rtol=1e-5)
    np.testing.assert_allclose(gy.numpy(), xv, rtol=1e-5)


def test_tuple_result_seeds_every_field_and_broadcast():
    x = relay.var("x", shape=(2, 3))
    b = relay.var("b", shape=(3,))
    s = relay.add(x, b)
    after = relay.transform.InferType()(relay.transform.FirstOrderGradient()(
        _mod([x, b], relay.Tuple([s, relay.multiply(s, s)]))))
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((2, 3)).astype("float32")
    bv = rng.standard_normal(3).astype("float32")
    _, (gx, gb) = _run(after, xv, bv)
    sv = xv + bv
    np.testing.assert_allclose(gx.numpy(), 1 + 2 * sv, rtol=1e-5)
    np.testing.assert_allclose(gb.numpy(), (1 + 2 * sv).sum(axis=0), rtol=1e-5)


def test_several_functions_warn_and_are_each_differentiated():
    x = relay.var("x", shape=(3,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.exp(x)))
    z = relay.var("z", shape=(3,))
    mod["other"] = relay.Function([z], relay.negative(z))
    mod = relay.transform.InferType()(mod)
    with pytest.warns(UserWarning, match="several global functions"):
        after = relay.transform.FirstOrderGradient()(mod)
    after = relay.transform.InferType()(after)
    for name in ("main", "other"):
        assert isinstance(after[name].checked_type.ret_type, relay.TupleType)
    _, (g,) = relay.create_executor("debug", mod=after).evaluate(after.get_global_var("other"))(
        np.ones(3, "float32"))
    np.testing.assert_allclose(g.numpy(), -np.ones(3))


def test_errors():
    a = relay.TypeVar("a")
    x = relay.var("x", a)
    poly = tvm.IRModule.from_expr(relay.Function([x], x, a, [a]))
    with pytest.raises(TypeError, match="polymorphic"):
        relay.transform.FirstOrderGradient()(poly)
    c = relay.var("c", shape=(), dtype="bool")
    y = relay.var("y", shape=(3,))
    with pytest.raises(TypeError, match="first_order"):
        relay.transform.FirstOrderGradient()(_mod([c, y], relay.If(c, y, relay.negative(y))))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one function: no warning
        relay.transform.FirstOrderGradient()(_mod([y], relay.exp(y)))


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    after = relay.transform.FirstOrderGradient()(_mod([x], e))
    assert isinstance(after["main"].body, relay.Let)
    assert isinstance(after["main"].ret_type, relay.TupleType)
