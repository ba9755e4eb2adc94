"""std/nat.rly (TVM's Peano naturals), mod.import_from_std("nat.rly") and relay.testing.nat:
the definitions, their types and values, the helpers, and TVM's ToBasicBlockNormalForm nat_add
case, all restated in our words."""

from __future__ import annotations

import sys

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.analysis import Feature, check_basic_block_normal_form, detect_feature
from minitvm.relay.backend.interpreter import ConstructorValue
from minitvm.relay.prelude import Prelude
from minitvm.relay.testing import count, make_nat_expr, make_nat_value


@pytest.fixture(scope="module")
def p():
    prelude = Prelude(tvm.IRModule())
    prelude.mod.import_from_std("nat.rly")
    return prelude


def _run(mod, expr):
    return relay.create_executor("debug", mod=mod).evaluate(expr)


def _ints(p, values):
    lst = p.nil()
    for v in reversed(values):
        lst = p.cons(relay.const(v, "int32"), lst)
    return lst


def _list_ints(v):
    out = []
    while len(v.fields) == 2:
        out.append(int(v.fields[0].numpy()))
        v = v.fields[1]
    return out


def test_nat_type_has_tvms_constructors(p):
    nat, zero, succ = p.mod.get_type("nat")
    assert (zero.name_hint, succ.name_hint) == ("zero", "succ")
    assert list(zero.inputs) == [] and list(succ.inputs) == [nat()]
    assert (p.nat, p.z, p.s) == (nat, zero, succ)


def test_nat_function_types(p):
    nat = p.mod.get_global_type_var("nat")
    n = nat()
    for name in ("nat_double",):
        assert p.mod[name].checked_type == relay.FuncType([n], n)
    assert p.mod["nat_add"].checked_type == relay.FuncType([n, n], n)
    assert p.mod["nat_to_int"].checked_type == relay.FuncType([n], relay.scalar_type("int32"))
    a = p.mod["nat_nth"].type_params[0]
    assert p.mod["nat_nth"].checked_type == relay.FuncType([p.l(a), n], a, [a])
    b = p.mod["nat_iterate"].type_params[0]
    fb = relay.FuncType([b], b)
    assert p.mod["nat_iterate"].checked_type == relay.FuncType([fb, n], fb, [b])


def test_nat_functions_compute(p):
    m = p.mod
    assert count(p, _run(m, m.get_global_var("nat_double")(make_nat_expr(p, 3)))) == 6
    add = m.get_global_var("nat_add")
    assert count(p, _run(m, add(make_nat_expr(p, 2), make_nat_expr(p, 5)))) == 7
    assert int(_run(m, p.nat_to_int(make_nat_expr(p, 4))).numpy()) == 4
    lst = _ints(p, [10, 20, 30, 40])
    assert int(_run(m, p.nat_nth(lst, make_nat_expr(p, 2))).numpy()) == 30
    updated = _run(m, p.nat_update(lst, make_nat_expr(p, 1), relay.const(7, "int32")))
    assert _list_ints(updated) == [10, 7, 30, 40]
    x = relay.var("x", shape=(), dtype="int32")
    inc = relay.Function([x], x + relay.const(1, "int32"))
    three_more = p.nat_iterate(inc, make_nat_expr(p, 3))
    assert int(_run(m, three_more(relay.const(5, "int32"))).numpy()) == 8


def test_import_from_std_pulls_in_the_prelude_and_is_idempotent():
    mod = tvm.IRModule()
    mod.import_from_std("nat.rly")
    names = {g.name_hint for g in mod.functions}
    assert {"nat_double", "nat_nth", "hd", "tl"} <= names
    assert {g.name_hint for g in mod.type_definitions} >= {"nat", "List"}
    before = dict(mod.functions)
    mod.import_from_std("nat.rly")
    assert dict(mod.functions) == before


def test_prelude_alone_has_no_nat_as_in_tvm():
    mod = tvm.IRModule()
    mod.import_from_std("prelude.rly")
    with pytest.raises(ValueError, match="nat"):
        mod.get_global_type_var("nat")


def test_count_and_make_nat_round_trip(p):
    for n in (0, 1, 5):
        v = make_nat_value(p, n)
        assert isinstance(v, ConstructorValue) and count(p, v) == n
        assert count(p, _run(p.mod, make_nat_expr(p, n))) == n


def test_nat_helpers_on_a_100000_deep_natural(p):
    assert sys.getrecursionlimit() <= 1000 + 500  # the default limit, not raised
    n = 100_000
    assert count(p, make_nat_value(p, n)) == n
    e = make_nat_expr(p, n)
    depth = 0
    while isinstance(e, relay.Call):
        depth += 1
        e = e.args[0] if e.args else None
    assert depth == n + 1  # n successors and the zero() call


def test_nat_helpers_reject_bad_input(p):
    with pytest.raises(ValueError, match="non-negative integer"):
        make_nat_expr(p, -1)
    with pytest.raises(ValueError, match="non-negative integer"):
        make_nat_value(p, 2.5)
    with pytest.raises(TypeError, match="ConstructorValue"):
        count(p, 3)
    with pytest.raises(ValueError, match="nat.rly"):
        count(_NoNat(), make_nat_value(p, 1))


class _NoNat:
    """A prelude-like object whose module has no ``nat``."""

    def __init__(self):
        self.mod = tvm.IRModule()


def test_to_basic_block_normal_form_nat_add(p):
    """TVM's nat_add case: the typed recursive function and a call of it keep their values and
    come out in basic block normal form, with no let added to nat_add."""
    mod = p.mod.shallow_copy()
    nat, zero, succ = mod.get_type("nat")
    add = mod.get_global_var("nat_add")
    assert mod[add].checked_type == relay.FuncType([nat(), nat()], nat())
    assert count(p, _run(mod, add(succ(zero()), succ(zero())))) == 2
    f = relay.GlobalVar("f")
    mod[f] = relay.Function([], add(succ(zero()), succ(zero())))
    mod = transform.InferType()(mod)
    mod = transform.ToBasicBlockNormalForm()(mod)
    out = mod["f"]
    assert count(p, _run(mod, out.body)) == 2
    assert Feature.fLet not in detect_feature(mod[add])
    assert check_basic_block_normal_form(out)
    # the call's operands are plain constructor calls: nothing to bind, the body is unchanged
    tvm.ir.assert_structural_equal(out.body, add(succ(zero()), succ(zero())))
