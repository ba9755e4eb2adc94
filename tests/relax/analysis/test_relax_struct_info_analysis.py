"""relax.analysis struct-info relations: base check, LCA, erasure, static types, derivation."""

import sys

import pytest

from minitvm import relax, tir
from minitvm.ir import FuncType, PrimType, TupleType
from minitvm.relax import analysis as A
from minitvm.relax.analysis import BaseCheckResult as L

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")
T = relax.TensorStructInfo
S = relax.ShapeStructInfo
P = relax.PrimStructInfo
Tup = relax.TupleStructInfo
F = relax.FuncStructInfo
Obj = relax.ObjectStructInfo


def level(base, derived):
    return A.struct_info_base_check_result(base, derived)


# --------------------------------------------------------------------------- base check
def test_object_covers_everything():
    for s in [T([2], "float32"), S([1]), P("int64"), Tup([]), F([], Obj())]:
        assert A.struct_info_base_check(Obj(), s)
        assert level(s, Obj()) == L.FAIL_L1
    assert A.struct_info_base_check(Obj(), Obj())


def test_tensor_base_check():
    assert A.struct_info_base_check(T(ndim=-1, dtype=None), T([2, 3], "float32"))
    assert A.struct_info_base_check(T(ndim=2, dtype="float32"), T([2, 3], "float32"))
    assert A.struct_info_base_check(T([2, 3], "float32"), T([2, 3], "float32"))
    assert level(T([2, 3], "float32"), T([2, 3], "int32")) == L.FAIL_L0
    assert level(T([2, 3], "float32"), T([2, 3], None)) == L.FAIL_L1
    assert level(T(ndim=2), T(ndim=3)) == L.FAIL_L0
    assert level(T(ndim=2), T(ndim=-1)) == L.FAIL_L1
    assert level(T([2, 3]), T(ndim=2)) == L.FAIL_L2
    assert level(T([2, 3]), T([2, 4])) == L.FAIL_L0
    assert level(T([n, 3]), T([m, 3])) == L.FAIL_L2
    assert level(T([n, 3]), T([n, 3])) == L.PASS
    assert level(T([n, 3]), T([n + 1, 3])) == L.FAIL_L0
    assert level(T([2, 3]), S([2, 3])) == L.FAIL_L0
    assert T(ndim=2).is_base_of(T([4, 5]))


def test_tensor_shape_var():
    s = relax.Var("s", S(ndim=2))
    t = T(s, "float32")
    assert A.struct_info_base_check(t, T(s, "float32"))
    assert level(t, T([1, 2], "float32")) == L.FAIL_L2
    assert A.struct_info_base_check(T(ndim=2), t)


def test_shape_and_prim_base_check():
    assert A.struct_info_base_check(S(ndim=2), S([n, 2]))
    assert level(S([n, 2]), S(ndim=2)) == L.FAIL_L2
    assert level(S(ndim=2), S(ndim=3)) == L.FAIL_L0
    assert level(S(ndim=2), S(ndim=-1)) == L.FAIL_L1
    assert level(S([1, 2]), S([1, 3])) == L.FAIL_L0
    assert A.struct_info_base_check(P("int64"), P("int64", n))
    assert level(P("int64", n), P("int64")) == L.FAIL_L2
    assert level(P("int64"), P("int32")) == L.FAIL_L0
    assert level(P("int64", 1), P("int64", 2)) == L.FAIL_L0


def test_tuple_base_check():
    assert A.struct_info_base_check(Tup([T(ndim=1), Obj()]), Tup([T([3]), S([1])]))
    assert level(Tup([T(ndim=1)]), Tup([T([3]), S([1])])) == L.FAIL_L0
    assert level(Tup([T([3]), T(ndim=1)]), Tup([T([3]), T(ndim=-1)])) == L.FAIL_L1
    assert level(Tup([]), T([1])) == L.FAIL_L0


def test_func_base_check():
    f_gen = F([T(ndim=2)], T(ndim=2))
    f_spec = F([T([2, 3])], T([2, 3]))
    # parameters are contravariant: the general function can stand in for the specific one
    assert level(f_spec, f_gen) == L.FAIL_L2
    assert level(f_gen, f_spec) == L.FAIL_L2
    f_any_in = F([Obj()], T([2, 3]))
    assert A.struct_info_base_check(f_spec, f_any_in)
    assert level(F([T([2])], Obj()), F([T([2]), T([2])], Obj())) == L.FAIL_L0
    assert level(F([], Obj(), purity=True), F([], Obj(), purity=False)) == L.FAIL_L0
    assert A.struct_info_base_check(F([], Obj(), purity=False), F([], Obj(), purity=True))
    opaque = F.opaque_func(ret=Obj(), purity=False)
    assert A.struct_info_base_check(opaque, f_spec)
    assert level(f_spec, opaque) == L.FAIL_L0  # impure cannot stand in for pure
    assert level(f_spec, F.opaque_func(ret=Obj(), purity=True)) == L.FAIL_L2
    assert level(F.opaque_func(ret=T([2]), purity=False), F([], T([3]))) == L.FAIL_L0


# --------------------------------------------------------------------------- erasure
def test_erase_to_well_defined():
    s = T([n, 4], "float32")
    out = A.erase_to_well_defined(s)
    assert out.shape is None and out.ndim == 2 and out.dtype == "float32"
    assert A.erase_to_well_defined(s, {n: n}) is s
    out = A.erase_to_well_defined(s, {n: tir.IntImm("int64", 3)})
    assert [int(d) for d in out.shape.values] == [3, 4]
    out = A.erase_to_well_defined(T([n * 2, 4]), {n: m})
    assert out.shape.values[0].a is m
    assert A.erase_to_well_defined(T([2, 4])).shape is not None
    sv = S([n, 1])
    assert A.erase_to_well_defined(sv).values is None and A.erase_to_well_defined(sv).ndim == 2
    pv = P("int64", n)
    assert A.erase_to_well_defined(pv).value is None
    tup = A.erase_to_well_defined(Tup([T([n]), T([3])]))
    assert tup.fields[0].shape is None and tup.fields[1].shape is not None
    shape_var = relax.Var("s", S(ndim=3))
    out = A.erase_to_well_defined(T(shape_var, "float32"))
    assert out.shape is None and out.ndim == 3
    kept = T(shape_var, "float32")
    assert A.erase_to_well_defined(kept, var_map={shape_var: shape_var}).shape is shape_var
    f = F([T([n])], T([n]))
    assert A.erase_to_well_defined(f) is f


def test_tir_vars_in_struct_info():
    vs = A.tir_vars_in_struct_info(Tup([T([n, m * 2]), P("int64", n), S([m])]))
    assert vs == [n, m]


# --------------------------------------------------------------------------- static type
def test_get_static_type():
    assert A.get_static_type(T([n, 2], "float16")) == A.TensorType(2, "float16")
    assert A.get_static_type(T(ndim=-1, dtype=None)) == A.TensorType(-1, "void")
    assert A.get_static_type(S([1, 2])) == A.ShapeType(2)
    assert A.get_static_type(P("int64", n)) == PrimType("int64")
    assert A.get_static_type(Obj()) == A.ObjectType()
    tt = A.get_static_type(Tup([T([1]), Obj()]))
    assert isinstance(tt, TupleType) and tt.fields == (A.TensorType(1, "float32"), A.ObjectType())
    ft = A.get_static_type(F([T([1])], S(ndim=1)))
    assert isinstance(ft, FuncType) and ft.ret_type == A.ShapeType(1)
    assert A.get_static_type(F.opaque_func()) == A.PackedFuncType()


# --------------------------------------------------------------------------- LCA
def test_struct_info_lca():
    a = T([2, 3], "float32")
    assert A.struct_info_lca(a, T([2, 3], "float32")) is a
    out = A.struct_info_lca(a, T([2, 4], "float32"))
    assert out.shape is None and out.ndim == 2 and out.dtype == "float32"
    out = A.struct_info_lca(a, T([2], "int32"))
    assert out.ndim == -1 and out.dtype == "void"
    assert isinstance(A.struct_info_lca(a, S([1])), Obj)
    assert A.struct_info_lca(S([n]), S([n])).values is not None
    assert A.struct_info_lca(S([n]), S([m])).values is None
    assert A.struct_info_lca(S([n]), S([m, 1])).ndim == -1
    assert A.struct_info_lca(P("int64", 1), P("int64", 2)).value is None
    assert isinstance(A.struct_info_lca(P("int64"), P("int32")), Obj)
    tup = A.struct_info_lca(Tup([a, P("int64")]), Tup([T([5, 3]), P("int64")]))
    assert tup.fields[0].ndim == 2 and tup.fields[0].shape is None
    assert isinstance(A.struct_info_lca(Tup([a]), Tup([a, a])), Obj)
    f1 = F([a], T([2], "float32"))
    f2 = F([a], T([3], "float32"))
    lf = A.struct_info_lca(f1, f2)
    assert not lf.is_opaque() and lf.ret.shape is None
    lf = A.struct_info_lca(f1, F([T([9])], T([2], "float32")))
    assert lf.is_opaque() and lf.ret.shape is not None
    assert A.struct_info_lca(f1, F([], Obj())).is_opaque()
    for x, y in [(a, T([2, 4])), (S([n]), S([m])), (f1, f2)]:
        lca = A.struct_info_lca(x, y)
        assert A.struct_info_base_check(lca, x) and A.struct_info_base_check(lca, y)


# --------------------------------------------------------------------------- derivation
def test_derive_call_ret_struct_info():
    f = F([T([n, m], "float32"), T([m, 4], "float32")], T([n, 4], "float32"))
    k = tir.Var("k", "int64")
    call = relax.Call(relax.Var("f", f), [relax.Var("a", T([k, 8], "float32")),
                                          relax.Var("b", T([8, 4], "float32"))])
    out = A.derive_call_ret_struct_info(f, call)
    assert out.shape.values[0] is k and int(out.shape.values[1]) == 4
    # a return dim the parameters do not define is erased
    g = F([T([n])], T([n, m]))
    out = A.derive_call_ret_struct_info(g, relax.Call(relax.Var("g", g),
                                                      [relax.Var("a", T([3]))]))
    assert out.shape is None and out.ndim == 2
    with pytest.raises(relax.op.StructInfoError, match="argument 1 type mismatch"):
        A.derive_call_ret_struct_info(f, relax.Call(relax.Var("f", f), [
            relax.Var("a", T([2, 8])), relax.Var("b", T([7, 4]))]))
    with pytest.raises(relax.op.StructInfoError, match="argument 0 type mismatch"):
        A.derive_call_ret_struct_info(f, relax.Call(relax.Var("f", f), [
            relax.Var("a", S([2, 8])), relax.Var("b", T([8, 4]))]))
    opaque = F.opaque_func(ret=T([1]))
    assert A.derive_call_ret_struct_info(opaque, relax.Call(relax.Var("o", opaque), [])) \
        is opaque.ret
    seen = []
    dyn = F.opaque_func(derive_func=lambda call, ctx: seen.append(call) or S(ndim=1))
    c = relax.Call(relax.Var("d", dyn), [])
    assert A.derive_call_ret_struct_info(dyn, c).ndim == 1 and seen == [c]


def test_deep_nesting_needs_no_recursion():
    depth = sys.getrecursionlimit() * 3
    a, b = T([2], "float32"), T([3], "float32")
    for _ in range(depth):
        a, b = Tup([a]), Tup([b])
    assert not A.struct_info_base_check(a, b)
    assert A.struct_info_base_check(a, a)
    lca = A.struct_info_lca(a, b)
    erased = A.erase_to_well_defined(a)
    ty = A.get_static_type(a)
    for _ in range(depth):
        lca, erased, ty = lca.fields[0], erased.fields[0], ty.fields[0]
    assert lca.shape is None and lca.ndim == 1
    assert erased.shape is not None and ty == A.TensorType(1, "float32")
