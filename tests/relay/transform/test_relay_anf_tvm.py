"""ToANormalForm builds TVM's programs: the structural cases of TVM v0.19's own test, restated.

Every non-atomic sub-expression gets a let in post-DFS order within its scope (constants too);
``if`` branches are scopes of their own; inside a fixed ``on_device`` the bound values carry its
device (TVM's device-aware binding).
"""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.analysis import Feature, detect_feature


def _opt(expr, passes):
    mod = tvm.IRModule.from_expr(expr)
    with tvm.transform.PassContext(opt_level=3):
        mod = tvm.transform.Sequential(passes)(mod)
    entry = mod["main"]
    return entry if isinstance(expr, relay.Function) else entry.body


def _anf(expr):
    return _opt(expr, [transform.ToANormalForm(), transform.InferType()])


def _fresh(*names):
    return [relay.Var(n, relay.IncompleteType()) for n in names]


def _eval(expr):
    return relay.create_executor("debug").evaluate(expr).numpy()


def test_explicit_bound_adds_lets_and_keeps_value():
    x = relay.const(1)
    z = relay.add(relay.add(x, x), relay.add(x, x))
    f = relay.Function([], relay.add(z, z))
    assert Feature.fLet not in detect_feature(f)
    anf = _opt(f, [transform.ToANormalForm()])
    assert Feature.fLet in detect_feature(anf)
    assert int(_eval(relay.Call(anf, []))) == int(_eval(relay.Call(f, []))) == 8


def test_order_is_post_dfs_not_construction_order():
    z, y, x = relay.const(3), relay.const(2), relay.const(1)
    val = x + y * z
    a, b, c, d, e = _fresh("a", "b", "c", "d", "e")
    expected = relay.Let(a, x, relay.Let(b, y, relay.Let(c, z, relay.Let(
        d, b * c, relay.Let(e, a + d, e)))))
    got = _anf(val)
    tvm.ir.assert_structural_equal(got, _opt(expected, [transform.InferType()]))
    assert int(_eval(got)) == 7


def test_if_branches_are_scopes():
    cond = relay.const(True)
    a, b, c, d = _fresh("a", "b", "c", "d")
    ite = relay.If(c, relay.Let(a, relay.const(2), a), relay.Let(b, relay.const(3), b))
    expected = relay.Let(c, cond, relay.Let(d, ite, d))
    got = _anf(relay.If(cond, relay.const(2), relay.const(3)))
    tvm.ir.assert_structural_equal(got, _opt(expected, [transform.InferType()]))
    assert int(_eval(got)) == 2


def test_let_as_subexpression_keeps_on_device():
    def on_cpu(e):
        return relay.annotation.on_device(e, tvm.device("cpu"), constrain_result=True)

    x = relay.Var("x", relay.IncompleteType())
    c = relay.const(1)
    let = relay.Let(x, on_cpu(c + c), x)
    got = _anf(let * let)
    v0, v1, v2 = _fresh("v0", "v1", "v2")
    expected = relay.Let(v0, on_cpu(c), relay.Let(
        x, on_cpu(v0 + v0), relay.Let(v1, x, relay.Let(v2, v1 * v1, v2))))
    tvm.ir.assert_structural_equal(got, _opt(expected, [transform.InferType()]))
    assert int(_eval(got)) == 4


def test_function_stays_a_function():
    x = relay.Var("x", relay.TensorType((), "float32"))
    f = relay.Function([x], x + x)
    anf = _opt(f, [transform.ToANormalForm()])
    assert isinstance(anf, relay.Function)
    d = relay.const(4.0, "float32")
    np.testing.assert_allclose(_eval(relay.Call(anf, [d])), 8.0)
