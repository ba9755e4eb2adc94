"""EliminateCommonSubexpr builds TVM's programs: the cases of TVM v0.19's own test, restated.

Equal calls (same op, equal attributes, the same arguments or equal scalar constants) are shared;
``fskip`` keeps the calls it accepts apart; equal tuple projections and equal tuples are shared.
"""

import numpy as np
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform


def _opt(f, p):
    return p(tvm.IRModule.from_expr(f))["main"]


def _typed(f):
    return _opt(f, transform.InferType())


def _one():
    return relay.const(1.0, "float32")


def _two_branches(x):
    y1 = relay.add(relay.nn.relu(x), _one())
    y2 = relay.add(relay.nn.relu(x), _one())
    return relay.Function([x], relay.add(y1, y2))


def test_simple():
    before = _two_branches(relay.var("x", shape=(1, 16)))
    x = relay.var("x", shape=(1, 16))
    y = relay.add(relay.nn.relu(x), _one())
    expected = relay.Function([x], relay.add(y, y))
    got = _opt(before, transform.EliminateCommonSubexpr())
    tvm.ir.assert_structural_equal(got, _typed(expected))
    check_numerics(before, got)


def test_fskip_keeps_skipped_calls_apart():
    before = _two_branches(relay.var("x", shape=(1, 16)))
    x = relay.var("x", shape=(1, 16))
    y = relay.nn.relu(x)
    expected = relay.Function([x], relay.add(relay.add(y, _one()), relay.add(y, _one())))

    def fskip(expr):
        return isinstance(expr, relay.Call) and expr.op.name == "add"

    got = _opt(before, transform.EliminateCommonSubexpr(fskip))
    tvm.ir.assert_structural_equal(got, _typed(expected))
    check_numerics(before, got)


def _bn_vars():
    return [relay.var(n, shape=(16,)) for n in ("var", "mean", "beta", "gamma")]


def test_tuple_get_item_shared():
    def build(shared: bool):
        x = relay.var("x", shape=(1, 16, 1, 1))
        var, mean, beta, gamma = _bn_vars()
        bn = relay.nn.batch_norm(x, gamma, beta, mean, var, epsilon=1e-5)
        t1 = bn[0]
        t2 = t1 if shared else bn[0]
        return relay.Function([x, var, mean, beta, gamma], t1 + t2)

    got = _opt(build(False), transform.EliminateCommonSubexpr())
    tvm.ir.assert_structural_equal(got, _typed(build(True)))


def test_equal_tuple_arguments_shared():
    # one constant object in both tuples, as in TVM's case (equal arrays are not merged)
    c0 = relay.const(np.ones((1, 16), "float32"))
    x = relay.var("x", shape=(1, 16))
    y1 = relay.add(relay.nn.relu(x), _one())
    y2 = relay.add(relay.nn.relu(x), _one())
    before = relay.Function([x], relay.add(relay.concatenate([y1, c0], axis=0),
                                           relay.concatenate([y2, c0], axis=0)))
    x = relay.var("x", shape=(1, 16))
    y = relay.concatenate([relay.add(relay.nn.relu(x), _one()), c0], axis=0)
    expected = relay.Function([x], relay.add(y, y))
    got = _opt(before, transform.EliminateCommonSubexpr())
    tvm.ir.assert_structural_equal(got, _typed(expected))
    check_numerics(before, got)


def test_equal_non_scalar_constants_are_not_merged():
    # TVM compares non-scalar constants by identity: two equal arrays stay two calls
    x = relay.var("x", shape=(1, 16))
    ones = np.ones((1, 16), "float32")
    f = relay.Function([x], relay.add(relay.add(x, relay.const(ones)),
                                      relay.add(x, relay.const(ones))))
    got = _opt(f, transform.EliminateCommonSubexpr())
    tvm.ir.assert_structural_equal(got, _typed(f))
