"""TypeSolver's planned instantiation and unify fast paths give what the general paths give."""

import pytest

from minitvm import relay
from minitvm.ir.type import FuncType, GlobalTypeVar, IncompleteType, TupleType, TypeCall
from minitvm.relay.type_solver import TypeSolver, UnifyError, substitute

F32 = relay.TensorType((2,), "float32")
F32_3 = relay.TensorType((3,), "float32")


def _poly():
    a, b = relay.TypeVar("A"), relay.TypeVar("B")
    adt = GlobalTypeVar("Cell")
    inner = FuncType([a], a, [a])  # binds its own A: instantiation leaves it alone
    ft = FuncType([a, TypeCall(adt, [a, F32]), F32, TupleType([b, a]), TypeCall(adt, [inner, b]),
                   inner], TypeCall(adt, [b]), [a, b])
    return ft, a, b, adt, inner


def test_instantiate_matches_substitution():
    ft, a, b, _, inner = _poly()
    solver = TypeSolver()
    for _ in range(2):  # the second call uses the remembered plan
        out = solver.instantiate(ft)
        assert not out.type_params
        fresh_a, fresh_b = out.arg_types[0], out.ret_type.args[0]
        assert type(fresh_a) is IncompleteType and type(fresh_b) is IncompleteType
        expect = [substitute(t, {a: fresh_a, b: fresh_b}) for t in (*ft.arg_types, ft.ret_type)]
        assert list(out.arg_types) + [out.ret_type] == expect
        assert out.arg_types[2] is F32 and out.arg_types[5] is inner
    given = solver.instantiate(ft, [F32, F32_3])
    assert given.arg_types[0] is F32 and given.ret_type.args == (F32_3,)
    with pytest.raises(UnifyError, match="expected 2 type arguments, got 1"):
        solver.instantiate(ft, [F32])


def test_unify_leaf_and_flat_call_paths():
    s = TypeSolver()
    i, j = IncompleteType(), IncompleteType()
    assert s.unify(i, F32) is F32 and s.find(i) is F32
    assert s.unify(F32, j) is F32 and s.find(j) is F32
    with pytest.raises(UnifyError, match=r"dimension 0: 2 vs 3"):
        s.unify(F32, F32_3)
    adt = GlobalTypeVar("Cell")
    k = IncompleteType()
    out = s.unify(TypeCall(adt, [k, F32]), TypeCall(adt, [F32_3, IncompleteType()]))
    assert out.args == (F32_3, F32) and s.find(k) is F32_3
    # the same unknown twice: the second pair is not trivial once the first is bound
    m = IncompleteType()
    with pytest.raises(UnifyError, match="type argument 1: .*dimension 0: 2 vs 3"):
        s.unify(TypeCall(adt, [m, m]), TypeCall(adt, [F32, F32_3]))
    with pytest.raises(UnifyError, match="type argument 0"):
        s.unify(TypeCall(adt, [F32]), TypeCall(adt, [F32_3]))
    # a pair with parts falls back to the general unifier from where the fast path stopped
    n, p = IncompleteType(), IncompleteType()
    out = s.unify(TypeCall(adt, [n, TupleType([p])]), TypeCall(adt, [F32, TupleType([F32_3])]))
    assert s.resolve(out).args == (F32, TupleType([F32_3]))
    assert s.find(n) is F32 and s.find(p) is F32_3


def test_polymorphic_calls_type_check():
    mod = relay.fromtext("""#[version = "0.0.5"]
type Box[T] { Wrap(T) }
def @id[T](%x: T) -> T { %x }
def @main(%a: Tensor[(2), float32]) -> Box[Tensor[(2), float32]] {
  Wrap(@id(@id(%a)))
}
""")
    out = relay.transform.InferType()(mod)
    assert str(out["main"].checked_type.ret_type) == str(mod["main"].ret_type)
    with pytest.raises(Exception, match=r"type argument 0: dimension 0: 3 vs 2"):
        relay.transform.InferType()(relay.fromtext("""#[version = "0.0.5"]
type Box[T] { Wrap(T) }
def @main(%a: Tensor[(2), float32]) -> Box[Tensor[(3), float32]] {
  Wrap(%a)
}
"""))
