"""relay.prelude.Prelude and IRModule.import_from_std: the std ADTs and list functions run."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.prelude import Prelude


def _eval(mod, body, params=(), args=()):
    m = mod.shallow_copy()
    m["main"] = relay.Function(list(params), body)
    m = relay.transform.InferType()(m)
    return relay.create_executor("debug", mod=m).evaluate()(*args)


def _to_list(v):
    out = []
    while len(v.fields) == 2:
        out.append(v.fields[0])
        v = v.fields[1]
    return out


def _ints(p, values):
    lst = p.nil()
    for v in reversed(values):
        lst = p.cons(relay.const(v, "int32"), lst)
    return lst


@pytest.fixture(scope="module")
def p():
    return Prelude(tvm.IRModule())


def test_prelude_defines_types_and_functions(p):
    assert [c.name_hint for c in p.mod.get_type("List")[1:]] == ["Cons", "Nil"]
    assert [c.name_hint for c in p.mod.get_type("Option")[1:]] == ["Some", "None"]
    assert p.l.name_hint == "List" and p.cons.name_hint == "Cons"
    for name in ("map", "foldl", "foldr", "concat", "hd", "tl", "nth", "length", "zip", "rev"):
        assert getattr(p, name) is p.mod.get_global_var(name)
    # every function is typed
    for gv in p.mod.get_global_vars():
        assert p.mod[gv].checked_type is not None


def test_list_functions(p):
    xs = _ints(p, [1, 2, 3])
    assert int(_eval(p.mod, p.length(xs)).numpy()) == 3
    assert int(_eval(p.mod, p.hd(xs)).numpy()) == 1
    assert int(_eval(p.mod, p.nth(xs, relay.const(2))).numpy()) == 3
    assert int(_eval(p.mod, p.sum(xs)).numpy()) == 6
    x = relay.var("x", shape=(), dtype="int32")
    double = relay.Function([x], relay.multiply(x, relay.const(2)))
    mapped = _to_list(_eval(p.mod, p.map(double, xs)))
    assert [int(v.numpy()) for v in mapped] == [2, 4, 6]
    a, b = relay.var("a", shape=(), dtype="int32"), relay.var("b", shape=(), dtype="int32")
    minus = relay.Function([a, b], relay.subtract(a, b))
    assert int(_eval(p.mod, p.foldl(minus, relay.const(0), xs)).numpy()) == -6
    assert int(_eval(p.mod, p.foldr(minus, relay.const(0), xs)).numpy()) == 2  # 1-(2-(3-0))
    both = _to_list(_eval(p.mod, p.concat(xs, _ints(p, [7]))))
    assert [int(v.numpy()) for v in both] == [1, 2, 3, 7]
    rev = _to_list(_eval(p.mod, p.rev(xs)))
    assert [int(v.numpy()) for v in rev] == [3, 2, 1]
    pairs = _to_list(_eval(p.mod, p.zip(xs, _ints(p, [9, 8]))))
    assert [(int(q.fields[0].numpy()), int(q.fields[1].numpy())) for q in pairs] == [(1, 9),
                                                                                     (2, 8)]


def test_tensor_lists_and_nat(p):
    t = relay.var("t", shape=(2,))
    lst = p.cons(t, p.cons(relay.add(t, t), p.nil()))
    out = _eval(p.mod, p.nth(lst, relay.const(1)), [t], [np.array([1.0, 2.0], "float32")])
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0])
    three = p.s(p.s(p.s(p.z())))
    assert int(_eval(p.mod, p.nat_to_int(p.nat_add(three, p.s(p.z())))).numpy()) == 4
    y = relay.var("y", shape=(), dtype="int32")
    inc = relay.Function([y], relay.add(y, relay.const(1)))
    it = relay.Call(p.iterate(inc, relay.const(5)), [relay.const(10)])
    assert int(_eval(p.mod, it).numpy()) == 15


def test_tree_functions(p):
    leaf = p.rose(relay.const(1), p.nil())
    tree = p.rose(relay.const(2), p.cons(leaf, p.cons(leaf, p.nil())))
    assert int(_eval(p.mod, p.size(tree)).numpy()) == 3


def test_import_from_std_in_place_and_idempotent():
    mod = tvm.IRModule()
    out = mod.import_from_std("prelude.rly")
    assert "map" in [g.name_hint for g in mod.get_global_vars()]
    assert out["map"].checked_type is not None
    n = len(mod.functions)
    mod.import_from_std("prelude.rly")
    assert len(mod.functions) == n
    p = Prelude(mod)  # a module that already has the prelude
    assert p.map is mod.get_global_var("map")


def test_import_from_std_errors():
    with pytest.raises(ValueError, match="no standard library file 'nope.rly'"):
        tvm.IRModule().import_from_std("nope.rly")
    mod = tvm.IRModule()
    x = relay.var("x", shape=())
    mod["map"] = relay.Function([x], x)
    with pytest.raises(ValueError, match="already defines map"):
        mod.import_from_std("prelude.rly")
