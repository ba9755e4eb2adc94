import numpy as np
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.dead_code_elimination import dead_code_elimination


def _dce(func, **kw):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(func))
    return run_pass(relay.transform.DeadCodeElimination(**kw), mod)["main"]


def test_pass_info():
    p = relay.transform.DeadCodeElimination()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "DeadCodeElimination", 1, ["InferType"])


def test_unused_bindings_removed():
    x = relay.var("x", shape=(2,))
    a, b, c = relay.Var("a"), relay.Var("b"), relay.Var("c")
    body = relay.Let(a, relay.exp(x), relay.Let(b, relay.negative(x),
                                                 relay.Let(c, relay.add(a, x), c)))
    before = relay.Function([x], body)
    after = _dce(before)
    expected = relay.Function([x], relay.Let(a, relay.exp(x), relay.Let(c, relay.add(a, x), c)))
    tvm.ir.assert_structural_equal(after, infer(expected))
    check_numerics(before, after)


def test_chain_of_dead_bindings_removed_transitively():
    x = relay.var("x", shape=())
    a, b = relay.Var("a"), relay.Var("b")
    before = relay.Function([x], relay.Let(a, relay.exp(x), relay.Let(b, relay.exp(a), x)))
    tvm.ir.assert_structural_equal(_dce(before), infer(relay.Function([x], x)))


def test_inline_once():
    x = relay.var("x", shape=(2,))
    a, b = relay.Var("a"), relay.Var("b")
    before = relay.Function([x], relay.Let(a, relay.exp(x),
                                           relay.Let(b, relay.add(a, a), relay.negative(b))))
    after = _dce(before, inline_once=True)
    a2 = relay.Var("a")
    expected = relay.Function([x], relay.Let(a2, relay.exp(x), relay.negative(relay.add(a2, a2))))
    tvm.ir.assert_structural_equal(after, infer(expected))
    check_numerics(before, after)


def test_binding_used_in_local_function_not_inlined():
    x = relay.var("x", shape=())
    y = relay.var("y", shape=())
    a = relay.Var("a")
    fn = relay.Function([y], relay.add(y, a))
    before = relay.Function([x], relay.Let(a, relay.exp(x), relay.Call(fn, [x])))
    after = _dce(before, inline_once=True)
    assert isinstance(after.body, relay.Let) and after.body.var.name_hint == "a"
    check_numerics(before, after)


def test_impure_binding_kept_unless_ignored():
    r, u = relay.Var("r"), relay.Var("u")
    body = relay.Let(u, relay.RefWrite(r, relay.const(2.0)), relay.RefRead(r))
    before = relay.Function([], relay.Let(r, relay.RefCreate(relay.const(1.0)), body))
    after = _dce(before)
    assert isinstance(after.body.body, relay.Let)  # the write stays
    check_numerics(before, after, [])
    dropped = _dce(before, ignore_impurity=True)
    assert not isinstance(dropped.body.body, relay.Let)
    np.testing.assert_allclose(
        relay.create_executor("debug", mod=tvm.IRModule.from_expr(dropped)).evaluate()().numpy(),
        1.0)


def test_stateful_op_call_is_impure():
    from minitvm.ir.op import Op
    from minitvm.relay.op.op import define_op

    if "test.dce_stateful" not in Op.list_op_names():
        define_op("test.dce_stateful", lambda ts, attrs: ts[0], lambda a, xs, t: xs[0], 8,
                  num_inputs=1, stateful=True)
    x = relay.var("x", shape=())
    a = relay.Var("a")
    call = relay.Call(Op.get("test.dce_stateful"), [x])
    before = relay.Function([x], relay.Let(a, call, x))
    assert isinstance(_dce(before).body, relay.Let)


def test_prim_funcs_and_other_functions_pass_through():
    x = relay.var("x", shape=())
    a = relay.Var("a")
    mod = tvm.IRModule()
    mod["helper"] = relay.Function([x], relay.Let(a, relay.exp(x), x))
    y = relay.var("y", shape=())
    mod["main"] = relay.Function([y], relay.Call(mod.get_global_var("helper"), [y]))
    mod = relay.transform.InferType()(mod)
    out = run_pass(relay.transform.DeadCodeElimination(), mod)
    assert isinstance(out["helper"].body, relay.Var)


def test_deep_let_chain():
    x = relay.var("x", shape=())
    vs = [relay.Var(f"v{i}") for i in range(100_000)]
    body = x
    for v in reversed(vs):
        body = relay.Let(v, relay.negative(x), body)
    out = dead_code_elimination(relay.Function([x], body), ignore_impurity=True)
    assert out.body is x
    # a used chain survives, and inline_once folds it into one expression
    body = vs[-1]
    prev = [x] + vs[:-1]
    for v, p in zip(reversed(vs), reversed(prev)):
        body = relay.Let(v, relay.negative(p), body)
    out = dead_code_elimination(relay.Function([x], body), inline_once=True,
                                ignore_impurity=True)
    assert isinstance(out.body, relay.Call)
