import numpy as np
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.to_graph_normal_form import to_graph_normal_form


def test_pass_info():
    p = relay.transform.ToGraphNormalForm()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == ("ToGraphNormalForm", 1, [])


def test_lets_become_a_dag():
    x = relay.var("x", shape=(2,))
    a, b = relay.Var("a"), relay.Var("b")
    before = relay.Function([x], relay.Let(a, relay.exp(x), relay.Let(b, relay.add(a, a), b)))
    mod = tvm.IRModule.from_expr(before)
    after = run_pass(relay.transform.ToGraphNormalForm(), mod)["main"]
    x2 = relay.var("x", shape=(2,))
    e = relay.exp(x2)
    tvm.ir.assert_structural_equal(after, infer(relay.Function([x2], relay.add(e, e))))
    check_numerics(before, after)


def test_round_trip_through_anf():
    x = relay.var("x", shape=(3,))
    e = relay.exp(x)
    f = relay.Function([x], relay.multiply(relay.add(e, e), e))
    anf = relay.transform.ToANormalFormExpr(f)
    tvm.ir.assert_structural_equal(to_graph_normal_form(anf), f)


def test_recursive_binding_stays_let():
    # let %f = fn (%n) { if (%n > 0) { %f(%n - 1) } else { %n } }; %f(%x)
    n = relay.var("n", shape=(), dtype="int32")
    f = relay.Var("f")
    fn = relay.Function([n], relay.If(relay.greater(n, relay.const(0)),
                                      relay.Call(f, [relay.subtract(n, relay.const(1))]), n))
    x = relay.var("x", shape=(), dtype="int32")
    before = relay.Function([x], relay.Let(f, fn, relay.Call(f, [x])))
    after = to_graph_normal_form(before)
    call = after.body
    assert isinstance(call, relay.Call) and isinstance(call.op, relay.Let)
    assert call.op.var is f and call.op.body is f
    check_numerics(before, after, [np.array(3, "int32")])


def test_effectful_binding_kept():
    # TVM would drop the unused write and change the result; here the write stays.
    r, u = relay.Var("r"), relay.Var("u")
    body = relay.Let(u, relay.RefWrite(r, relay.const(2.0)), relay.RefRead(r))
    before = relay.Function([], relay.Let(r, relay.RefCreate(relay.const(1.0)), body))
    after = to_graph_normal_form(before)
    assert isinstance(after.body, relay.Let) and isinstance(after.body.body, relay.Let)
    check_numerics(before, after, [])


def test_deep_let_chain():
    x = relay.var("x", shape=())
    vs = [relay.Var(f"v{i}") for i in range(100_000)]
    body = vs[-1]
    prev = [x] + vs[:-1]
    for v, p in zip(reversed(vs), reversed(prev)):
        body = relay.Let(v, relay.negative(p), body)
    out = to_graph_normal_form(relay.Function([x], body))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    tvm.ir.assert_structural_equal(out, relay.Function([x], e))
