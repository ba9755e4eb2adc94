import numpy as np
import pytest
from pass_test_util import check_numerics, count_nodes, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.to_a_normal_form import to_a_normal_form


def _anf_main(func):
    mod = tvm.IRModule.from_expr(func)
    return run_pass(relay.transform.ToANormalForm(), mod)["main"]


def test_pass_info():
    p = relay.transform.ToANormalForm()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == ("ToANormalForm", 1, [])


def test_shared_subexpression_bound_once():
    x = relay.var("x", shape=(3,))
    e = relay.exp(x)
    before = relay.Function([x], relay.add(e, e))

    x2 = relay.var("x", shape=(3,))
    a, b = relay.Var("a"), relay.Var("b")
    expected = relay.Function([x2], relay.Let(a, relay.exp(x2), relay.Let(b, relay.add(a, a), b)))
    after = _anf_main(before)
    tvm.ir.assert_structural_equal(after, expected)
    check_numerics(before, after)


def test_constants_are_bound_and_vars_are_atomic():
    x = relay.var("x", shape=())
    before = relay.Function([x], relay.add(x, relay.const(1.0)))
    c, r = relay.Var("c"), relay.Var("r")
    x2 = relay.var("x", shape=())
    expected = relay.Function(
        [x2], relay.Let(c, relay.const(1.0), relay.Let(r, relay.add(x2, c), r)))
    tvm.ir.assert_structural_equal(_anf_main(before), expected)


def test_if_branches_are_scopes():
    c = relay.var("c", shape=(), dtype="bool")
    x = relay.var("x", shape=(2,))
    e = relay.exp(x)  # used in both branches: hoisted above the if
    before = relay.Function([c, x], relay.If(c, relay.negative(e), e))

    c2 = relay.var("c", shape=(), dtype="bool")
    x2 = relay.var("x", shape=(2,))
    a, n, r = relay.Var("a"), relay.Var("n"), relay.Var("r")
    branch = relay.Let(n, relay.negative(a), n)
    expected = relay.Function(
        [c2, x2], relay.Let(a, relay.exp(x2), relay.Let(r, relay.If(c2, branch, a), r)))
    after = _anf_main(before)
    tvm.ir.assert_structural_equal(after, expected)
    for cond in (True, False):
        check_numerics(before, after, [np.array(cond), np.ones(2, "float32")])


def test_local_function_is_bound_and_its_body_converted():
    x = relay.var("x", shape=())
    y = relay.var("y", shape=())
    inner = relay.Function([y], relay.multiply(relay.add(y, x), x))
    before = relay.Function([x], relay.Call(inner, [x]))
    after = _anf_main(before)
    # fn(x) { let f = fn(y) { let a = add(y, x); let m = multiply(a, x); m }; let r = f(x); r }
    let_f = after.body
    assert isinstance(let_f, relay.Let) and isinstance(let_f.value, relay.Function)
    assert isinstance(let_f.value.body, relay.Let)
    assert isinstance(let_f.body.value, relay.Call) and let_f.body.value.op is let_f.var
    check_numerics(before, after)


def test_primitive_function_kept_whole():
    x = relay.var("x", shape=())
    p = relay.var("p", shape=())
    prim = relay.Function([p], relay.exp(relay.exp(p))).with_attr("Primitive", 1)
    before = relay.Function([x], relay.Call(prim, [x]))
    after = _anf_main(before)
    assert after.body.value is prim
    check_numerics(before, after)


def test_nested_let_flattened():
    x = relay.var("x", shape=())
    v = relay.Var("v")
    inner = relay.Let(v, relay.exp(x), relay.add(v, v))
    before = relay.Function([x], relay.negative(inner))
    after = _anf_main(before)
    kinds = []
    e = after.body
    while isinstance(e, relay.Let):
        kinds.append(type(e.value).__name__)
        e = e.body
    # as TVM: the inner bindings move out, then the let's result is bound to a fresh var
    assert kinds == ["Call", "Call", "Var", "Call"] and isinstance(e, relay.Var)
    check_numerics(before, after)


def test_input_module_untouched_and_compiler_functions_skipped():
    x = relay.var("x", shape=())
    ext = relay.Function([x], relay.exp(relay.exp(x))).with_attr("Compiler", "ccompiler")
    mod = tvm.IRModule()
    mod["ext"] = ext
    y = relay.var("y", shape=())
    mod["main"] = relay.Function([y], relay.exp(relay.exp(y)))
    out = run_pass(relay.transform.ToANormalForm(), mod)
    assert out["ext"] is ext
    assert isinstance(out["main"].body, relay.Let)


def test_free_variable_is_an_error():
    x = relay.var("x", shape=())
    z = relay.var("z", shape=())
    mod = tvm.IRModule({relay.GlobalVar("main"): relay.Function([x], relay.add(x, z))})
    with pytest.raises(ValueError, match="free variables %z"):
        relay.transform.ToANormalForm()(mod)


def test_expression_form():
    x = relay.var("x", shape=())
    e = relay.transform.ToANormalFormExpr(relay.exp(x))
    assert isinstance(e, relay.Let) and e.body is e.var


def test_deep_chain():
    x = relay.var("x", shape=())
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    out = to_a_normal_form(relay.Function([x], e))
    n, body = 0, out.body
    while isinstance(body, relay.Let):
        n, body = n + 1, body.body
    assert n == 100_000 and count_nodes(out, relay.Call) == 100_000
    back = relay.transform.to_graph_normal_form.to_graph_normal_form(out)
    tvm.ir.assert_structural_equal(back, relay.Function([x], e))
