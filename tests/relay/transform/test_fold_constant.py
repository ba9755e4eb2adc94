"""FoldConstant: what folds, what must not, numerics, deep programs."""

import numpy as np
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay


def fold(f):
    mod = tvm.IRModule.from_expr(f)
    return mod, run_pass(relay.transform.FoldConstant(), mod)


def test_folds_constant_subexpressions():
    x = relay.var("x", shape=(2,))
    c = relay.const(np.array([1.0, 2.0], "float32"))
    f = relay.Function([x], relay.add(x, relay.multiply(relay.add(c, c), relay.const(2.0))))
    mod, out = fold(f)
    expected = relay.Function([relay.var("x", shape=(2,))], relay.add(
        relay.var("x", shape=(2,)), relay.const(np.array([4.0, 8.0], "float32"))))
    xx = relay.var("x", shape=(2,))
    expected = infer(relay.Function([xx], relay.add(xx, relay.const(np.array([4.0, 8.0],
                                                                              "float32")))))
    tvm.ir.assert_structural_equal(out["main"], expected)
    check_numerics(mod, out)


def test_let_if_tuple_folding():
    x = relay.var("x", shape=(2,))
    v = relay.var("v")
    t = relay.Tuple([relay.const(1.0), relay.const(2.0)])
    body = relay.If(relay.const(True), relay.add(x, relay.TupleGetItem(t, 1)), x)
    f = relay.Function([x], relay.Let(v, relay.const(3.0), relay.add(body, v)))
    mod, out = fold(f)
    text = str(out)
    assert "if" not in text and "let" not in text and "3f" in text and "2f" in text
    check_numerics(mod, out)


def test_shape_of_folds_on_static_shapes():
    x = relay.var("x", shape=(2, 5))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x],
                                                                            relay.shape_of(x))))
    out = relay.transform.FoldConstant()(mod)
    assert isinstance(out["main"].body, relay.Constant)
    np.testing.assert_array_equal(out["main"].body.data.numpy(), [2, 5])


def test_stateful_and_primitive_untouched():
    x = relay.var("x", shape=(2,))
    prim = relay.Function([x], relay.exp(x)).with_attr("Primitive", 1)
    y = relay.var("y", shape=(2,))
    f = relay.Function([y], relay.add(y, relay.Call(prim, [relay.const(np.ones(2, "float32"))])))
    _, out = fold(f)
    assert any(isinstance(c, relay.Function) for c in [out["main"].body.args[1].op])


def test_deep_chain_folds_completely():
    e = relay.const(1.0)
    for _ in range(100_000):
        e = relay.add(e, relay.const(1.0))
    _, out = fold(relay.Function([], e))
    assert float(out["main"].body.data.numpy()) == 100_001.0
