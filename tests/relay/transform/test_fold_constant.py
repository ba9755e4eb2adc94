"""FoldConstant: what folds, what must not, numerics, deep programs."""

import numpy as np
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.ir.op import Op, OpPattern
from minitvm.relay.op.op import define_op

# A counter: every evaluation returns its argument plus the number of evaluations so far, so a
# compile-time evaluation (folding) is visible both in the IR and in the call count.
_EVALS = {"n": 0}


def _counter_impl(attrs, args, out_type):
    _EVALS["n"] += 1
    return args[0] + np.float32(_EVALS["n"])


for _name, _stateful in (("test.fold_counter", True), ("test.fold_counter_pure", False)):
    if _name not in Op.list_op_names():
        define_op(_name, lambda ts, attrs: ts[0], _counter_impl, OpPattern.OPAQUE,
                  num_inputs=1, stateful=_stateful)


def fold(f):
    mod = tvm.IRModule.from_expr(f)
    return mod, run_pass(relay.transform.FoldConstant(), mod)


def test_folds_constant_subexpressions():
    x = relay.var("x", shape=(2,))
    c = relay.const(np.array([1.0, 2.0], "float32"))
    f = relay.Function([x], relay.add(x, relay.multiply(relay.add(c, c), relay.const(2.0))))
    mod, out = fold(f)
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


def _run(mod):
    return relay.create_executor("debug", mod=mod).evaluate()().numpy()


def test_stateful_op_is_not_folded():
    c = relay.const(np.array([1.0, 2.0], "float32"))
    counter = relay.Call(Op.get("test.fold_counter"), [relay.add(c, c)])
    f = relay.Function([], relay.add(counter, relay.const(10.0)))
    _EVALS["n"] = 0
    mod, out = fold(f)
    assert _EVALS["n"] == 0, "FoldConstant evaluated a stateful op at compile time"
    # the pure argument folds, the stateful call and everything using it stay
    expected = relay.Function([], relay.add(
        relay.Call(Op.get("test.fold_counter"), [relay.const(np.array([2.0, 4.0], "float32"))]),
        relay.const(10.0)))
    tvm.ir.assert_structural_equal(out["main"], infer(expected))
    # the call runs on every evaluation: 2 + 1 + 10, then 2 + 2 + 10
    np.testing.assert_array_equal(_run(out), [13.0, 15.0])
    np.testing.assert_array_equal(_run(out), [14.0, 16.0])
    assert _EVALS["n"] == 2


def test_same_op_without_the_stateful_flag_folds():
    # the control for the test above: only TOpIsStateful keeps the call
    c = relay.const(np.array([1.0, 2.0], "float32"))
    f = relay.Function([], relay.Call(Op.get("test.fold_counter_pure"), [c]))
    _EVALS["n"] = 0
    _, out = fold(f)
    assert _EVALS["n"] == 1
    assert isinstance(out["main"].body, relay.Constant)
    np.testing.assert_array_equal(out["main"].body.data.numpy(), [2.0, 3.0])


def test_primitive_function_is_untouched():
    x = relay.var("x", shape=(2,))
    c = relay.const(np.array([1.0, 2.0], "float32"))
    prim = relay.Function([x], relay.add(x, relay.multiply(c, c))).with_attr("Primitive", 1)
    y = relay.var("y", shape=(2,))
    f = relay.Function([y], relay.add(y, relay.Call(prim, [relay.const(np.ones(2, "float32"))])))
    mod, out = fold(f)
    # neither the constant expression inside the primitive function nor its call is folded
    tvm.ir.assert_structural_equal(out["main"], infer(f))
    check_numerics(mod, out)
    args = [np.array([0.5, -1.0], "float32")]
    res = relay.create_executor("debug", mod=out).evaluate()(*args).numpy()
    np.testing.assert_array_equal(res, [0.5 + 2.0, -1.0 + 5.0])


def test_deep_chain_folds_completely():
    e = relay.const(1.0)
    for _ in range(100_000):
        e = relay.add(e, relay.const(1.0))
    _, out = fold(relay.Function([], e))
    assert float(out["main"].body.data.numpy()) == 100_001.0
