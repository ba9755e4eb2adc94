"""TVM's "Algebraic Data Types in Relay" language reference with ``import minitvm as tvm``: its
programs written in the Relay text format TVM's parser reads (the page's own ``data ... { C :
(...) -> T }`` syntax is marked speculative there) — ``Numbers`` and ``@sum``, the polymorphic
``Optional`` with ``@inc_scalar``, the recursive ``List`` with ``@list_sum``, nested and wildcard
patterns (``@second_opt``), first-match order (``@match_order_beware``), the type errors the
page describes, and the Prelude's ``map`` / ``foldl`` / ``foldr`` doing the page's doubling and
concatenation — type-checked, printed back, and evaluated with the interpreter."""

from __future__ import annotations

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.prelude import Prelude

PROGRAM = '''#[version = "0.0.5"]
type Numbers {
  Empty,
  Single(Tensor[(), int32]),
  Pair(Tensor[(), int32], Tensor[(), int32]),
}
type Numbers2 {
  Empty2,
  Single2(Tensor[(), int32]),
}
type Optional[A] {
  Nothing,
  Some(A),
}
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @sum(%n: Numbers[]) -> Tensor[(), int32] {
  match (%n) {
    Empty => 0,
    Single(%x) => %x,
    Pair(%x, %y) => add(%x, %y),
  }
}
def @inc_scalar(%opt: Optional[Tensor[(), int32]]) -> Tensor[(), int32] {
  match (%opt) {
    Nothing => 1,
    Some(%s) => add(%s, 1),
  }
}
def @list_sum(%l: List[Tensor[(), int32]]) -> Tensor[(), int32] {
  match (%l) {
    Nil => 0,
    Cons(%h, %t) => add(%h, @list_sum(%t)),
  }
}
def @second_opt[A](%ll: Optional[List[A]]) -> Optional[A] {
  match (%ll) {
    Some(Cons(_, Cons(%s, _))) => Some(%s),
    _ => Nothing,
  }
}
def @match_order_beware[A](%l: List[A]) -> List[A] {
  match (%l) {
    %v => %v,
    Cons(%h, %t) => Cons(%h, @match_order_beware(%t)),
    Nil => Nil,
  }
}
'''


def evaluate(main: str, ret: str):
    """Run ``main``'s body (a call into the page's functions) with the interpreter."""
    mod = tvm.relay.parse(PROGRAM + f"def @main() -> {ret} {{\n  {main}\n}}\n")
    return relay.create_executor("debug", mod=mod).evaluate()()


def test_page_programs_type_check_and_print_back():
    mod = relay.transform.InferType()(tvm.relay.parse(PROGRAM))
    assert {gv.name_hint for gv in mod.get_global_type_vars()} >= {"Numbers", "Optional", "List"}
    text = mod.astext()
    # (names are unique across the printed module, scalar tensors print as their dtype)
    assert "Some(Cons(_, Cons(%s1: A, _))) => {" in text
    assert "def @sum(%n: Numbers[]) -> int32 {" in text
    assert "def @second_opt[A](%ll: Optional[List[A]]) -> Optional[A] {" in text
    assert tvm.ir.structural_equal(tvm.relay.parse(text), mod)


@pytest.mark.parametrize("call, want", [
    ("@sum(Empty)", 0), ("@sum(Single(3))", 3), ("@sum(Pair(5, 6))", 11),
    ("@inc_scalar(Nothing)", 1), ("@inc_scalar(Some(41))", 42),
    ("@list_sum(Cons(1, Cons(2, Cons(3, Nil))))", 6),
])
def test_match_evaluates(call, want):
    assert int(evaluate(call, "Tensor[(), int32]").numpy()) == want


def test_nested_patterns_and_first_match_order():
    none = evaluate("@second_opt(Some(Cons(1, Nil)))", "Optional[Tensor[(), int32]]")
    assert none.constructor.name_hint == "Nothing" and not none.fields
    two = evaluate("@second_opt(Some(Cons(1, Cons(2, Nil))))", "Optional[Tensor[(), int32]]")
    assert two.constructor.name_hint == "Some" and int(two.fields[0].numpy()) == 2
    assert evaluate("@second_opt(Some(Nil))", "Optional[Tensor[(), int32]]").fields == []
    # the first case binds everything: the list comes back as it was
    same = evaluate("@match_order_beware(Cons(7, Nil))", "List[Tensor[(), int32]]")
    assert same.constructor.name_hint == "Cons" and int(same.fields[0].numpy()) == 7


@pytest.mark.parametrize("main, ret", [
    ("@sum(Empty2)", "Tensor[(), int32]"),  # Numbers2 is another type, however alike
    ("@inc_scalar(Some(ones(shape=[10, 10], dtype=\"float32\")))", "Tensor[(), int32]"),
])
def test_type_errors_the_page_describes(main, ret):
    # (tvm.relay.parse type-checks the module it reads, as TVM's parser does)
    with pytest.raises(Exception, match="(?i)type|unif|mismatch"):
        tvm.relay.parse(PROGRAM + f"def @main() -> {ret} {{\n  {main}\n}}\n")


def test_prelude_map_and_folds():
    mod = tvm.IRModule()
    p = Prelude(mod)
    cons, nil = p.cons, p.nil

    def as_list(values):
        out = nil()
        for v in reversed(values):
            out = cons(relay.const(v, "int32"), out)
        return out

    i = relay.var("i", shape=(), dtype="int32")
    h, rest = relay.var("h", shape=(), dtype="int32"), relay.var("rest")
    acc = relay.var("acc", shape=(), dtype="int32")
    double = relay.Function([i], i * relay.const(2, "int32"))
    mod["main"] = relay.Function([], relay.Tuple([
        p.map(double, as_list([1, 2, 3])),
        p.foldr(relay.Function([h, rest], cons(h, rest)), as_list([3, 4]), as_list([1, 2])),
        p.foldl(relay.Function([acc, h], acc + h), relay.const(0, "int32"),
                as_list([1, 2, 3, 4])),
    ]))
    doubled, joined, total = relay.create_executor("debug", mod=mod).evaluate()()

    def values(v):
        out = []
        while v.constructor.name_hint == "Cons":
            out.append(int(v.fields[0].numpy()))
            v = v.fields[1]
        return out

    assert values(doubled) == [2, 4, 6]
    assert values(joined) == [1, 2, 3, 4]
    assert int(total.numpy()) == 10
