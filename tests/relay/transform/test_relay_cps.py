"""to_cps / un_cps / ToCPS: continuation-passing style and back keeps every output."""

from __future__ import annotations

import numpy as np
import pytest
from relay_functional_programs import HIGHER_ORDER_PROGRAM

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import ToCPS, to_cps, un_cps

T = relay.TensorType((3,), "float32")


def _run(mod, func, args):
    m = mod.shallow_copy() if mod is not None else tvm.IRModule()
    m["main"] = func
    m = relay.transform.InferType()(m)
    return relay.create_executor("debug", mod=m).evaluate()(*args)


def test_primitive_ops_stay_direct():
    x = relay.var("x", T)
    got = to_cps(relay.Function([x], relay.add(x, x)))

    answer = relay.TypeVar("answer")
    x2 = relay.var("x", T)
    k = relay.var("k", relay.FuncType([T], answer))
    v = relay.var("v", T)
    expected = relay.Function([x2, k], relay.Let(v, relay.add(x2, x2), relay.Call(k, [v])),
                              answer, [answer])
    assert tvm.ir.structural_equal(got, expected)


def test_calls_take_a_continuation():
    x = relay.var("x", T)
    f = relay.var("f", relay.FuncType([T], T))
    got = to_cps(relay.Function([x, f], relay.Call(f, [x])))

    answer = relay.TypeVar("answer")
    x2 = relay.var("x", T)
    f2 = relay.var("f", relay.FuncType([T, relay.FuncType([T], answer)], answer))
    k = relay.var("k", relay.FuncType([T], answer))
    y = relay.var("y", T)
    body = relay.Call(f2, [x2, relay.Function([y], relay.Call(k, [y]))])
    expected = relay.Function([x2, f2, k], body, answer, [answer])
    assert tvm.ir.structural_equal(got, expected)


def test_if_binds_a_join_point():
    x = relay.var("x", T)
    c = relay.var("c", relay.TensorType((), "bool"))
    g = relay.var("g", relay.FuncType([T], T))
    h = relay.var("h", T)
    body = relay.add(relay.If(c, relay.Call(g, [x]), x), x)
    body = relay.Let(g, relay.Function([h], relay.multiply(h, relay.const(2.0))), body)
    func = relay.Function([x, c], body)
    got = to_cps(func)
    assert got.astext().count("if (") == 1
    kinds = []
    relay.analysis.post_order_visit(got, lambda e: kinds.append(type(e).__name__))
    # the outer function, g, the join point, and the continuation of the call of g
    assert kinds.count("Function") == 4
    arg = np.array([1.0, 2.0, 3.0], "float32")
    for cond in (True, False):
        args = [arg, np.array(cond)]
        want = _run(None, func, args).numpy()
        np.testing.assert_allclose(want, arg * (2 if cond else 1) + arg)
        np.testing.assert_allclose(_run(None, un_cps(got), args).numpy(), want)


def test_un_cps_round_trip_recursion_closures_adts_references():
    mod = relay.fromtext(HIGHER_ORDER_PROGRAM)
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([0.5, -1.0, 2.0])
    want = _run(mod, mod["main"], [x, y]).numpy()
    cps = to_cps(mod["main"], mod)
    assert "sumlist_cps" in [g.name_hint for g in mod.get_global_vars()]
    got = _run(mod, un_cps(cps), [x, y]).numpy()
    np.testing.assert_allclose(got, want)


def test_un_cps_round_trip_match_and_prelude():
    from minitvm.relay.prelude import Prelude

    p = Prelude(tvm.IRModule())
    t = relay.var("t", shape=(2,))
    lst = p.cons(t, p.cons(relay.exp(t), p.nil()))
    a, b = relay.var("a", shape=(2,)), relay.var("b", shape=(2,))
    body = p.foldl(relay.Function([a, b], relay.add(a, b)), relay.zeros((2,), "float32"), lst)
    func = relay.Function([t], body)
    arg = np.array([0.5, -1.0], "float32")
    want = _run(p.mod, func, [arg]).numpy()
    np.testing.assert_allclose(_run(p.mod, un_cps(to_cps(func, p.mod)), [arg]).numpy(), want,
                               rtol=1e-6)


def test_ToCPS_expression_and_pass_forms():
    x = relay.var("x", T)
    f = relay.Function([x], relay.exp(x))
    assert tvm.ir.structural_equal(ToCPS(f), to_cps(f))
    mod = tvm.IRModule.from_expr(f)
    out = ToCPS()(mod)
    assert len(out["main"].params) == 2
    assert tvm.ir.structural_equal(mod["main"], f)  # the input module is unchanged


def test_errors():
    x = relay.var("x", T)
    with pytest.raises(TypeError, match="to_cps expects a relay.Function"):
        to_cps(relay.exp(x))
    with pytest.raises(TypeError, match="un_cps expects a CPS relay.Function"):
        un_cps(relay.Function([], relay.const(1.0)))
    with pytest.raises(TypeError, match="continuation"):
        un_cps(relay.Function([x], x))
    g = relay.GlobalVar("g")
    with pytest.raises((TypeError, ValueError), match="@g is not defined"):
        to_cps(relay.Function([x], relay.Call(g, [x])))


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    cps = to_cps(relay.Function([x], e))
    assert len(cps.params) == 2
    assert isinstance(un_cps(cps), relay.Function)


def test_ToCPS_pass_on_a_module_with_globals():
    mod = relay.fromtext(HIGHER_ORDER_PROGRAM)
    out = ToCPS()(mod)
    names = [g.name_hint for g in out.get_global_vars()]
    assert {"sumlist_cps", "pow_cps"} <= set(names)
    assert "sumlist_cps" not in [g.name_hint for g in mod.get_global_vars()]
    assert len(out["main"].params) == 3  # x, y and the continuation
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([0.5, -1.0, 2.0])
    want = _run(mod, mod["main"], [x, y]).numpy()
    np.testing.assert_allclose(_run(out, un_cps(out["main"]), [x, y]).numpy(), want)
