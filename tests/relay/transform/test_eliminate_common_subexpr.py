"""EliminateCommonSubexpr: identical calls shared, attrs respected, scalars compared by value."""

import numpy as np
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay


def cse(f, fskip=None):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    return mod, run_pass(relay.transform.EliminateCommonSubexpr(fskip), mod)


def test_duplicate_calls_are_shared():
    x = relay.var("x", shape=(1, 16))
    y1 = relay.nn.relu(relay.add(x, relay.const(1.0)))
    y2 = relay.nn.relu(relay.add(x, relay.const(1.0)))
    mod, out = cse(relay.Function([x], relay.add(y1, y2)))
    xx = relay.var("x", shape=(1, 16))
    y = relay.nn.relu(relay.add(xx, relay.const(1.0)))
    expected = infer(relay.Function([xx], relay.add(y, y)))
    tvm.ir.assert_structural_equal(out["main"], expected)
    check_numerics(mod, out)


def test_different_attrs_are_kept_apart():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], relay.Tuple([relay.sum(x, axis=0), relay.sum(x, axis=1),
                                         relay.sum(x, axis=0)]))
    _, out = cse(f)
    t = out["main"].body
    assert t.fields[0] is t.fields[2] and t.fields[0] is not t.fields[1]


def test_fskip_and_tuple_getitem():
    x = relay.var("x", shape=(2,))
    a, b = relay.exp(x), relay.exp(x)
    _, out = cse(relay.Function([x], relay.Tuple([a, b])),
                 fskip=lambda e: getattr(e.op, "name", "") == "exp")
    assert out["main"].body.fields[0] is not out["main"].body.fields[1]
    t = relay.Tuple([x, x])
    _, out = cse(relay.Function([x], relay.add(relay.TupleGetItem(t, 0),
                                               relay.TupleGetItem(t, 0))))
    body = out["main"].body
    assert body.args[0] is body.args[1]


def test_non_scalar_constants_compared_by_identity():
    x = relay.var("x", shape=(2,))
    c1 = relay.const(np.ones(2, "float32"))
    c2 = relay.const(np.ones(2, "float32"))
    _, out = cse(relay.Function([x], relay.Tuple([relay.add(x, c1), relay.add(x, c2)])))
    t = out["main"].body
    assert t.fields[0] is not t.fields[1]


def test_deep_chain():
    x = relay.var("x", shape=(1,))
    e = x
    for _ in range(100_000):
        e = relay.add(relay.exp(e), relay.exp(e))
    _, out = cse(relay.Function([x], e))
    assert out["main"].body.args[0] is out["main"].body.args[1]
