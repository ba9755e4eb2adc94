"""Defunctionalization: higher-order programs become first-order with the same outputs."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.analysis import Feature, detect_feature
from minitvm.relay.prelude import Prelude
from minitvm.relay.transform import Defunctionalization


def _run(mod, args):
    mod = relay.transform.InferType()(mod)
    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


def _defunc(mod):
    mod = relay.transform.InferType()(mod)
    out = mod.shallow_copy()
    out["main"] = Defunctionalization(mod["main"], out)
    return relay.transform.InferType()(out)


def _first_order(mod, names):
    """No function-typed parameter or result and no lambda in the given functions."""
    for name in names:
        f = mod[name]
        t = f.checked_type
        assert all(not isinstance(a, relay.FuncType) for a in t.arg_types), name
        nodes = []
        relay.analysis.post_order_visit(f.body, nodes.append)
        assert not any(isinstance(e, relay.Function) for e in nodes), name


def test_simple_closure_becomes_constructor_and_apply():
    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(2,))
    f = relay.var("f")
    body = relay.Let(f, relay.Function([y], relay.add(y, x)), relay.Call(f, [relay.Call(f, [x])]))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    out = _defunc(mod)
    assert "apply_0" in [g.name_hint for g in out.get_global_vars()]
    adt, ctor = out.get_type("Func0")
    assert [str(t) for t in ctor.inputs] == ["Tensor[(2), float32]"]  # the captured %x
    assert Feature.fFunction in detect_feature(out["main"])  # only main itself
    _first_order(out, ["main"])
    arg = np.array([1.0, -2.0], "float32")
    np.testing.assert_allclose(_run(out, [arg]), 3 * arg)


def test_prelude_map_and_fold_are_specialized():
    p = Prelude(tvm.IRModule())
    mod = p.mod
    x, y, z = relay.var("x", shape=(2,)), relay.var("y", shape=(2,)), relay.var("z", shape=(2,))
    lst = p.cons(x, p.cons(relay.exp(x), p.nil()))
    mapped = p.map(relay.Function([z], relay.multiply(z, y)), lst)
    a, b = relay.var("a", shape=(2,)), relay.var("b", shape=(2,))
    total = p.foldl(relay.Function([a, b], relay.add(a, b)), relay.zeros((2,), "float32"),
                    mapped)
    mod["main"] = relay.Function([x, y], total)
    args = [np.array([1.0, 2.0], "float32"), np.array([0.5, -1.0], "float32")]
    want = _run(mod, args)
    out = _defunc(mod)
    names = [g.name_hint for g in out.get_global_vars()]
    specialized = [n for n in names if n.startswith(("map_", "foldl_"))
                   and n not in ("map_accuml", "map_accumr")]
    assert len(specialized) == 2
    _first_order(out, ["main", *specialized])
    np.testing.assert_allclose(_run(out, args), want, rtol=1e-6)


def test_global_function_passed_as_value_and_recursion():
    mod = relay.fromtext("""#[version = "0.0.5"]
def @twice(%f: fn (Tensor[(2), float32]) -> Tensor[(2), float32], %x: Tensor[(2), float32]) {
  %f(%f(%x))
}
def @neg(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  negative(%x)
}
def @loop(%n: int32, %f: fn (Tensor[(2), float32]) -> Tensor[(2), float32],
          %x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  if (equal(%n, 0)) { %x } else { @loop(subtract(%n, 1), %f, %f(%x)) }
}
def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  let %k = fn (%y: Tensor[(2), float32]) { multiply(%y, 2f) };
  add(@twice(@neg, %x), @loop(3, %k, %x))
}
""")
    arg = np.array([1.0, -3.0], "float32")
    want = _run(mod, [arg])
    out = _defunc(mod)
    np.testing.assert_allclose(_run(out, [arg]), want)
    np.testing.assert_allclose(want, arg + 8 * arg)


def test_errors():
    f = relay.var("f", relay.FuncType([relay.TensorType((2,))], relay.TensorType((2,))))
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([f, x], relay.Call(f, [x])))
    with pytest.raises(ValueError, match="must be first-order"):
        Defunctionalization(mod["main"], mod)
    with pytest.raises(TypeError, match="expects a relay.Function"):
        Defunctionalization(x, mod)


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    mod = tvm.IRModule.from_expr(relay.Function([x], e))
    out = Defunctionalization(mod["main"], mod)
    assert isinstance(out, relay.Function)


def test_before_expected():
    t = relay.TensorType((2,), "float32")
    x = relay.var("x", t)
    y = relay.var("y", t)
    f = relay.var("f")
    before = relay.Function([x], relay.Let(f, relay.Function([y], relay.add(y, x)),
                                           relay.Call(f, [x])))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(before))
    got = Defunctionalization(mod["main"], mod)
    adt, ctor = mod.get_type("Func0")
    apply = mod.get_global_var("apply_0")

    f2, r = relay.var("f"), relay.var("r")
    expected_main = relay.Function([x], relay.Let(f2, relay.Call(ctor, [x]), relay.Let(
        r, relay.Call(apply, [f2, x]), r)), t)
    assert tvm.ir.structural_equal(got, expected_main)

    clo = relay.var("f", relay.TypeCall(adt, []))
    a0 = relay.var("a0", t)
    captured, s = relay.var("x"), relay.var("s")
    clause = relay.Clause(relay.PatternConstructor(ctor, [relay.PatternVar(captured)]),
                          relay.Let(s, relay.add(a0, captured), s))  # the body in A-normal form
    expected_apply = relay.Function([clo, a0], relay.Match(clo, [clause]), t)
    assert tvm.ir.structural_equal(mod[apply], expected_apply)
