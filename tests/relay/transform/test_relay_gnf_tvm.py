"""ToGraphNormalForm builds TVM's programs: TVM v0.19's own cases, restated with the expected
dataflow graph spelled out (each let-bound value becomes a shared node)."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.analysis import Feature, detect_feature


def _opt(f, p):
    return p(tvm.IRModule.from_expr(f))["main"]


def _eval(f):
    return relay.create_executor("debug").evaluate(relay.Call(f, [])).numpy()


def _let_program():
    x, y, z = relay.Var("x"), relay.Var("y"), relay.Var("z")
    body = relay.Let(z, relay.add(y, y), relay.add(z, z))
    body = relay.Let(y, relay.add(x, x), body)
    return relay.Function([], relay.Let(x, relay.const(1), body))


def _dag():
    one = relay.const(1)
    y = relay.add(one, one)
    z = relay.add(y, y)
    return relay.Function([], relay.add(z, z))


def test_implicit_share():
    f = _let_program()
    g = _opt(f, transform.ToGraphNormalForm())
    assert Feature.fLet in detect_feature(f)
    assert Feature.fLet not in detect_feature(g)
    tvm.ir.assert_structural_equal(g, _opt(_dag(), transform.InferType()))
    assert int(_eval(f)) == int(_eval(g)) == 8


def test_round_trip():
    f = _let_program()
    g = _opt(f, transform.ToGraphNormalForm())
    h = _opt(g, transform.ToANormalForm())
    assert Feature.fLet in detect_feature(h)
    assert int(_eval(h)) == 8
    # and back again: the same graph
    tvm.ir.assert_structural_equal(_opt(h, transform.ToGraphNormalForm()),
                                   _opt(_dag(), transform.InferType()))


def test_no_explicit_bind_stays_without_lets_in_basic_block_form():
    f = _dag()
    bblock = _opt(f, transform.ToBasicBlockNormalForm())
    assert Feature.fLet not in detect_feature(bblock)
    relay.analysis.check_basic_block_normal_form(bblock)
    np.testing.assert_equal(int(_eval(bblock)), 8)
