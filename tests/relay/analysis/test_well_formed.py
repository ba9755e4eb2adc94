"""well_formed / check_well_formed: scoping of variables, double binding, module references."""

import minitvm as tvm
from minitvm import relay
from minitvm.ir.type import TypeCall, TypeVar
from minitvm.relay.adt import Clause, Constructor, Match, PatternConstructor, PatternVar, TypeData
from minitvm.relay.analysis import check_well_formed, well_formed
from minitvm.relay.expr import Call, Function, Let, Tuple, Var


def test_simple_programs_are_well_formed():
    x = relay.var("x", shape=(2,))
    v = Var("v")
    f = Function([x], Let(v, relay.add(x, x), Tuple([v, x])))
    assert well_formed(f)
    assert check_well_formed(f) == []


def test_free_vars_allowed_in_expressions_but_not_in_modules():
    x = relay.var("x", shape=(2,))
    z = relay.var("z", shape=(2,))
    f = Function([x], relay.add(x, z))
    assert well_formed(f)
    mod = tvm.IRModule()
    mod["main"] = f
    assert check_well_formed(mod) == ["@main: variable %z is free (unbound)"]
    assert check_well_formed(f, allow_free_vars=False) == ["variable %z is free (unbound)"]


def test_let_var_bound_twice():
    x = relay.var("x", shape=(2,))
    v = Var("v")
    e = Let(v, x, Let(v, v, v))
    assert not well_formed(e)
    assert check_well_formed(e) == ["variable %v is bound more than once"]


def test_param_bound_twice_in_nested_function():
    x = relay.var("x", shape=(2,))
    inner = Function([x], x)
    outer = Function([x], Call(inner, [x]))
    assert check_well_formed(outer) == ["variable %x is bound more than once"]


def test_use_outside_scope():
    x = relay.var("x", shape=(2,))
    v = Var("v")
    e = Function([x], Tuple([Let(v, x, v), v]))
    assert check_well_formed(e) == ["variable %v is used outside the scope that binds it"]


def test_shared_subexpression_is_not_a_double_binding():
    x = relay.var("x", shape=(2,))
    v = Var("v")
    shared = Let(v, x, relay.exp(v))
    assert well_formed(Function([x], Tuple([shared, shared])))


def test_match_pattern_scoping_and_module_references():
    mod = tvm.IRModule()
    lst = tvm.ir.GlobalTypeVar("List")
    a = TypeVar("A")
    cons = Constructor("Cons", [a, TypeCall(lst, [a])], lst)
    nil = Constructor("Nil", [], lst)
    mod[lst] = TypeData(lst, [a], [cons, nil])
    xs = Var("xs")
    hd, tl = Var("hd"), Var("tl")
    m = Match(xs, [Clause(PatternConstructor(cons, [PatternVar(hd), PatternVar(tl)]), hd),
                   Clause(PatternConstructor(nil), tl)])  # tl used outside its clause
    mod["main"] = Function([xs], Tuple([m, Call(tvm.ir.GlobalVar("missing"), [])]))
    problems = check_well_formed(mod)
    assert "@main: variable %tl is used outside the scope that binds it" in problems
    assert "@main: @missing is not defined in the module" in problems
    other = Constructor("Other", [], tvm.ir.GlobalTypeVar("Undefined"))
    mod["main"] = Function([xs], Call(other, []))
    assert check_well_formed(mod) == ["@main: constructor Other belongs to Undefined, which is "
                                      "not defined in the module"]


def test_deep_let_chain():
    x = relay.var("x", shape=(2,))
    vs = [Var(f"v{i}") for i in range(100_000)]
    body = vs[-1]
    for i in range(len(vs) - 1, -1, -1):
        body = Let(vs[i], relay.add(vs[i - 1] if i else x, x), body)
    assert well_formed(Function([x], body))


def test_deep_dataflow_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.add(e, x)
    mod = tvm.IRModule()
    mod["main"] = Function([x], e)
    assert check_well_formed(mod) == []
