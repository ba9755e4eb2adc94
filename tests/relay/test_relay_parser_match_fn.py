"""The Relay parser reads a match clause's right side as a full expression (TVM's parser does):
`%N = ...;` graph bindings and `let` bindings may come before its value, with or without braces;
a bare ADT name in a type is its call with no arguments (`nat` reads as `nat[]`)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay

HEADER = '#[version = "0.0.5"]\ntype Opt { Nothing, Just(int32) }\n'


def _expected():
    """@main built with the API: a clause that binds a closure and calls it."""
    mod = tvm.IRModule()
    opt = relay.GlobalTypeVar("Opt")
    nothing = relay.Constructor("Nothing", [], opt)
    just = relay.Constructor("Just", [relay.scalar_type("int32")], opt)
    mod[opt] = relay.TypeData(opt, [], [nothing, just])
    x = relay.Var("x", relay.TypeCall(opt, []))
    y, a = relay.Var("y"), relay.Var("a", relay.scalar_type("int32"))
    f = relay.Function([a], relay.add(a, y), relay.scalar_type("int32"))
    body = relay.Match(x, [
        relay.Clause(relay.PatternConstructor(nothing, []), relay.const(0)),
        relay.Clause(relay.PatternConstructor(just, [relay.PatternVar(y)]), f(y)),
    ])
    mod["main"] = relay.Function([x], body, relay.scalar_type("int32"))
    return relay.transform.InferType()(mod)


CLAUSE_FORMS = {
    "graph binding, no braces": "Just(%y) => %0 = fn (%a: int32) -> int32 { add(%a, %y) }; "
                                "%0(%y),",
    "graph binding in braces": "Just(%y) => {\n %0 = fn (%a: int32) -> int32 { add(%a, %y) };\n"
                               " %0(%y)\n },",
    "no binding": "Just(%y) => fn (%a: int32) -> int32 { add(%a, %y) }(%y),",
}


def _text(clause: str) -> str:
    return (HEADER + "def @main(%x: Opt) -> int32 {\n  match (%x) {\n    Nothing => 0,\n    "
            + clause + "\n  }\n}\n")


@pytest.mark.parametrize("form", sorted(CLAUSE_FORMS))
def test_clause_with_a_function_binding_parses_to_the_expected_program(form):
    got = relay.parse(_text(CLAUSE_FORMS[form]))
    tvm.ir.assert_structural_equal(got["main"], _expected()["main"], map_free_vars=True)


def test_let_binding_in_a_clause_without_braces():
    got = relay.parse(_text("Just(%y) => let %g = fn (%a: int32) -> int32 { add(%a, %y) }; "
                            "%g(%y),"))
    body = got["main"].body.clauses[1].rhs
    assert isinstance(body, relay.Let) and isinstance(body.value, relay.Function)
    _, _, just = got.get_type("Opt")
    out = relay.create_executor("debug", mod=got).evaluate(got["main"](just(relay.const(4))))
    assert int(out.numpy()) == 8


def test_parsed_clause_binding_runs_and_round_trips():
    mod = relay.parse(_text(CLAUSE_FORMS["graph binding, no braces"]))
    ex = relay.create_executor("debug", mod=mod)
    _, nothing, just = mod.get_type("Opt")
    for arg, want in ((just(relay.const(21)), 42), (nothing(), 0)):
        assert int(np.asarray(ex.evaluate(mod["main"](arg)).numpy())) == want
    again = relay.parse(mod.astext())
    tvm.ir.assert_structural_equal(again["main"], mod["main"], map_free_vars=True)


def test_bare_adt_name_is_a_type_call():
    mod = relay.parse(HEADER + "def @main(%x: Opt) -> Opt { %x }\n")
    opt = mod.get_global_type_var("Opt")
    assert mod["main"].params[0].type_annotation == relay.TypeCall(opt, [])
    assert mod["main"].checked_type == relay.FuncType([relay.TypeCall(opt, [])],
                                                      relay.TypeCall(opt, []))


def test_clause_binding_without_semicolon_is_a_clear_error():
    text = _text("Just(%y) => %0 = fn (%a: int32) -> int32 { add(%a, %y) } %0(%y),")
    with pytest.raises(relay.parser.ParseError, match=";"):
        relay.parse(text)


def test_many_bindings_in_one_clause_parse_iteratively():
    """A clause holding a 100,000-binding chain parses at the default recursion limit."""
    n = 100_000
    lines = ["%0 = add(%y, 1);"] + [f"%{i} = add(%{i - 1}, 1);" for i in range(1, n)]
    text = _text("Just(%y) => " + " ".join(lines) + f" %{n - 1},")
    mod = relay.parse(text)
    rhs = mod["main"].body.clauses[1].rhs
    depth = 0
    while isinstance(rhs, relay.Call):
        depth += 1
        rhs = rhs.args[0]
    assert depth == n
