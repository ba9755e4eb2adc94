"""Relax op registry contract, calling-convention ops, and the symbolic-dim fallback."""

import pytest

from minitvm import relax, tir
from minitvm.ir import GlobalVar, Op
from minitvm.ir.attrs import get_attrs_type, make_node
from minitvm.relax import op as R
from minitvm.relax.op import _common

n = tir.Var("n", "int64")
inf = R.infer_struct_info


def tvar(name, shape=None, dtype="float32", ndim=-1):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype, ndim=ndim))


def test_every_relax_op_has_inference_and_purity():
    names = [k for k in Op.list_op_names() if k.startswith("relax.")]
    assert len(names) > 100
    for name in names:
        op = Op.get(name)
        if op.get_attr("FInferStructInfo") is None:
            continue  # registered by another part of the tree (builtins, VM ops)
        assert isinstance(op.get_attr("FPurity"), bool), name


def test_tvm_names_are_registered():
    for name in ["relax.add", "relax.matmul", "relax.permute_dims", "relax.nn.relu",
                 "relax.call_tir", "relax.call_dps_packed", "relax.call_pure_packed",
                 "relax.shape_of", "relax.null_value", "relax.nn.conv2d", "relax.astype",
                 "relax.reshape", "relax.strided_slice", "relax.nn.batch_norm"]:
        assert Op.get(name).get_attr("FInferStructInfo") is not None


def test_attrs_type_keys():
    assert get_attrs_type("relax.attrs.MatmulAttrs") is R.op_attrs.MatmulAttrs
    a = make_node("relax.attrs.PermuteDimsAttrs", axes=[1, 0])
    assert a.axes == (1, 0)
    assert R.op_attrs.Conv2DAttrs.type_key == "relax.attrs.Conv2DAttrs"
    # Relay's class of the same name keeps its by-name registry entry
    assert get_attrs_type("Conv2DAttrs").type_key != "relax.attrs.Conv2DAttrs" or \
        get_attrs_type("relay.attrs.Conv2DAttrs") is None


def test_constructors_do_not_normalize():
    call = R.add(tvar("x", [2]), tvar("y", [2]))
    assert call.struct_info_ is None


def test_call_tir():
    gv = GlobalVar("add_one")
    x = tvar("x", [n, 4])
    out = relax.TensorStructInfo([n, 4], "float32")
    call = R.call_tir(gv, x, out)
    assert call.op.name == "relax.call_tir" and isinstance(call.args[1], relax.Tuple)
    assert call.sinfo_args == (out,)
    assert inf(call) is out
    call = R.call_tir(gv, [x], [out, out], tir_vars=[n])
    assert isinstance(call.args[2], relax.ShapeExpr)
    res = inf(call)
    assert isinstance(res, relax.TupleStructInfo) and len(res.fields) == 2
    with pytest.raises(ValueError, match="known shape"):
        R.call_tir(gv, x, relax.TensorStructInfo(ndim=2))
    with pytest.raises(TypeError, match="GlobalVar"):
        R.call_tir("f", x, out)
    assert Op.get("relax.call_tir").get_attr("FPurity") is True


def test_call_dps_packed_and_pure_packed():
    x = tvar("x", [2, 3])
    out = relax.TensorStructInfo([2, 3], "float32")
    call = R.call_dps_packed("my_func", [x], out)
    assert isinstance(call.args[0], relax.ExternFunc)
    assert inf(call) is out
    call = R.call_pure_packed("vm.builtin.copy", x, sinfo_args=out)
    assert isinstance(call.args[0], relax.ExternFunc) and call.args[1] is x
    assert inf(call) is out
    assert Op.get("relax.call_pure_packed").get_attr("FPurity") is True
    with pytest.raises(ValueError, match="sinfo_args"):
        R.call_pure_packed("f", x, sinfo_args=[])


def test_shape_of_and_null_value():
    res = inf(R.shape_of(tvar("x", [n, 4])))
    assert isinstance(res, relax.ShapeStructInfo) and res.values[0] is n
    assert inf(R.shape_of(tvar("x", ndim=3))).ndim == 3
    s = relax.Var("s", relax.ShapeStructInfo(ndim=2))
    x = relax.Var("x", relax.TensorStructInfo(s, "float32"))
    assert inf(R.shape_of(x)) is s.struct_info
    with pytest.raises(TypeError, match="tensor"):
        inf(R.shape_of(relax.Var("t", relax.TupleStructInfo([]))))
    assert isinstance(inf(R.null_value()), relax.ObjectStructInfo)


def test_infer_struct_info_of_function_calls():
    m = tir.Var("m", "int64")
    p = relax.Var("p", relax.TensorStructInfo([m, 4], "float32"))
    fsinfo = relax.FuncStructInfo([p.struct_info], relax.TensorStructInfo([m * 2], "float32"))
    f = relax.Var("f", fsinfo)
    res = inf(relax.Call(f, [tvar("x", [n, 4])]))
    assert res.ndim == 1 and _common.prove_equal(res.shape[0], n * 2)
    with pytest.raises(R.StructInfoError, match="mismatch"):
        inf(relax.Call(f, [tvar("x", [n, 5])]))
    with pytest.raises(R.StructInfoError, match="1 parameters with 2"):
        inf(relax.Call(f, [tvar("x", [n, 4]), tvar("y", [1])]))
    opaque = relax.Var("g", relax.FuncStructInfo.opaque_func(ret=relax.ObjectStructInfo()))
    assert isinstance(inf(relax.Call(opaque, [])), relax.ObjectStructInfo)
    with pytest.raises(TypeError):
        inf(tvar("x", [2]))


def test_error_is_value_error_naming_op_and_shapes():
    with pytest.raises(ValueError) as e:
        inf(R.matmul(tvar("x", [2, 3]), tvar("w", [4, 5])))
    assert "relax.matmul" in str(e.value) and "(2, 3)" in str(e.value)
    assert isinstance(e.value, R.StructInfoError)


def test_fallback_simplifier_without_arith(monkeypatch):
    monkeypatch.setattr(_common, "_Analyzer", None)
    monkeypatch.setattr(_common, "_DEFAULT_ANALYZER", None)
    m = tir.Var("m", "int64")
    s = _common.fallback_simplify
    assert s(n + 2 - 2) is n
    assert _common.prove_equal(n + 3 - 1, n + 2)
    assert _common.prove_equal((n * 4) // 2, n * 2)
    assert _common.prove_not_equal(n + 1, n)
    assert not _common.prove_not_equal(n, m)
    assert not _common.prove_equal(n, m)
    assert int(s(tir.Min(tir.const(3, "int64"), tir.const(5, "int64")))) == 3
    assert _common.prove(tir.EQ(n + 1, 1 + n))
    x, k = tvar("x", [1, 3, n, m]), tvar("k", [8, 3, 3, 3])
    out = inf(R.nn.conv2d(x, k, padding=1))
    assert out.shape[2] is n and out.shape[3] is m
    out = inf(R.concat([tvar("a", [n, 2]), tvar("b", [n, 2])]))
    assert _common.prove_equal(out.shape[0], n * 2)
    with pytest.raises(R.StructInfoError, match="reduction"):
        inf(R.matmul(tvar("a", [2, n + 1]), tvar("b", [n + 3, 4])))


def test_fold_helpers():
    assert _common.mul(1, n) is n and int(_common.mul(3, 4)) == 12
    assert _common.add(0, n) is n and _common.sub(n, 0) is n
    assert _common.floordiv(n, 1) is n and int(_common.floordiv(7, 2)) == 3
    assert int(_common.shape_product([2, 3, 4])) == 24
