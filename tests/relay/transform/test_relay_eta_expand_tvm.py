"""EtaExpand builds TVM's programs: the cases of TVM's own test of the pass, written as Relay text.

A global function used as a value becomes ``fn (%x) { @f(%x) }``; a polymorphic constructor used
as a value becomes ``fn [A](%x: A, %xs: List[A]) -> List[A] { Cons(%x, %xs) }``.
"""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform

LIST = """
type List[A] {
    Cons(A, List[A]),
    Nil,
}
"""


def _parse(text):
    return relay.fromtext('#[version = "0.0.5"]\n' + text)


def test_eta_expand_global_var():
    src = """
    def @aux(%x: Tensor[(), int32]) -> Tensor[(), int32] { %x }
    def @main() -> fn(Tensor[(), int32]) -> Tensor[(), int32] { @aux }
    """
    mod = _parse(src)
    with tvm.transform.PassContext(opt_level=3):
        out = tvm.transform.Sequential([transform.EtaExpand(expand_global_var=True)])(mod)
    expected = _parse("""
    def @aux(%x: Tensor[(), int32]) -> Tensor[(), int32] { %x }
    def @main() -> fn(Tensor[(), int32]) -> Tensor[(), int32] {
        fn (%x: Tensor[(), int32]) -> Tensor[(), int32] { @aux(%x) }
    }
    """)
    tvm.ir.assert_structural_equal(out["main"], expected["main"], map_free_vars=True)
    # and it runs: applying what main() returns is calling @aux
    w = relay.var("w", shape=(), dtype="int32")
    out["run"] = relay.Function([w], relay.Call(relay.Call(out.get_global_var("main"), []), [w]))
    ex = relay.create_executor("debug", mod=out)
    assert int(ex.evaluate(out.get_global_var("run"))(np.array(7, "int32")).numpy()) == 7


def _list_mod():
    mod = _parse(LIST)
    lst = mod.get_global_type_var("List")
    cons, nil = mod[lst].constructors
    return mod, lst, cons, nil


def _poly_main(body_of):
    """``def @main[A]() -> fn(A, List[A]) -> List[A] { body }`` built directly: the text form
    needs the unifier gap below closed before it can be parsed (it type-checks on parsing)."""
    mod, lst, cons, nil = _list_mod()
    a = relay.TypeVar("A")
    ret = relay.FuncType([a, relay.TypeCall(lst, [a])], relay.TypeCall(lst, [a]))
    mod["main"] = relay.Function([], body_of(lst, cons), ret, [a])
    return mod


def test_eta_expand_polymorphic_constructor():
    mod = _poly_main(lambda lst, cons: cons)
    out = transform.EtaExpand(expand_constructor=True)(mod)

    def expanded(lst, cons):
        b = relay.TypeVar("A")
        x, xs = relay.Var("x", b), relay.Var("xs", relay.TypeCall(lst, [b]))
        return relay.Function([x, xs], relay.Call(cons, [x, xs]), relay.TypeCall(lst, [b]), [b])

    expected = _poly_main(expanded)
    tvm.ir.assert_structural_equal(out["main"], expected["main"], map_free_vars=True)


def test_eta_expand_polymorphic_constructor_then_infer_type():
    mod = _poly_main(lambda lst, cons: cons)
    with tvm.transform.PassContext(opt_level=3):
        out = tvm.transform.Sequential([transform.EtaExpand(expand_constructor=True),
                                        transform.InferType()])(mod)
    assert isinstance(out["main"].body, relay.Function)


def test_applied_constructor_stays_and_a_bare_one_is_expanded():
    mod, lst, cons, nil = _list_mod()
    x = relay.var("x", "int32")
    mod["main"] = relay.Function([x], relay.Call(cons, [x, nil]))
    out = transform.EtaExpand(expand_constructor=True)(mod)
    body = out["main"].body
    assert body.op is cons and body.args[0] is x
    # Nil, a value here, becomes fn [A]() -> List[A] { Nil() }
    a = relay.TypeVar("A")
    expected = relay.Function([], relay.Call(nil, []), relay.TypeCall(lst, [a]), [a])
    tvm.ir.assert_structural_equal(body.args[1], expected, map_free_vars=True)
    out = transform.EtaExpand(expand_global_var=True)(mod)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_one_fresh_type_variable_per_original_for_the_whole_run():
    """TVM keeps one replacement map for the run: Cons and Nil share their fresh ``A``."""
    mod, lst, cons, nil = _list_mod()
    mod["main"] = relay.Function([], relay.Tuple([cons, nil]))
    out = transform.EtaExpand(expand_constructor=True)(mod)
    econs, enil = out["main"].body.fields
    assert econs.type_params[0] is enil.type_params[0]
    assert econs.params[0].type_annotation is econs.type_params[0]
    assert econs.params[1].type_annotation == relay.TypeCall(lst, [econs.type_params[0]])


def test_global_var_callee_is_expanded_too():
    """As in TVM, a global var is expanded wherever it appears, also as a call's callee."""
    mod = _parse("""
    def @aux(%x: Tensor[(), int32]) -> Tensor[(), int32] { %x }
    def @main(%y: Tensor[(), int32]) -> Tensor[(), int32] { @aux(%y) }
    """)
    out = transform.EtaExpand(expand_global_var=True)(mod)
    callee = out["main"].body.op
    assert isinstance(callee, relay.Function)
    expected = _parse("""
    def @aux(%x: Tensor[(), int32]) -> Tensor[(), int32] { %x }
    def @main(%y: Tensor[(), int32]) -> Tensor[(), int32] {
        %0 = fn (%x: Tensor[(), int32]) -> Tensor[(), int32] { @aux(%x) };
        %0(%y)
    }
    """)
    tvm.ir.assert_structural_equal(out["main"], expected["main"], map_free_vars=True)


def test_needs_a_feature():
    with pytest.raises(ValueError, match="at least one language feature"):
        transform.EtaExpand()(_parse("def @main() -> int32 { 1 }"))


def test_long_chain_is_iterative():
    x = relay.var("x", shape=())
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    mod = tvm.IRModule.from_expr(relay.Function([x], e))
    out = transform.EtaExpand(expand_global_var=True)(mod)
    assert out["main"].body.op.name == "negative"
