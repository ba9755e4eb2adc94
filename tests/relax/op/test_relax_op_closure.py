"""relax.op.make_closure / invoke_closure / invoke_pure_closure: struct info and purity."""

import pytest

from minitvm import ir, relax
from minitvm.relax import op as R


def T(*shape):
    return relax.TensorStructInfo(list(shape), "float32")


def _norm(e):
    return relax.BlockBuilder().normalize(e)


def test_make_closure_is_an_object():
    x = relax.Var("x", T(2))
    c = _norm(R.make_closure(ir.GlobalVar("f"), [x]))
    assert c.op.name == "relax.make_closure"
    assert isinstance(c.struct_info, relax.ObjectStructInfo)
    assert c.op.get_attr("FPurity") is True


def test_invoke_closure_struct_info_and_purity():
    clo = relax.Var("c", relax.ObjectStructInfo())
    x = relax.Var("x", T(2))
    one = _norm(R.invoke_closure(clo, [x], T(2)))
    assert one.struct_info.ndim == 1
    two = _norm(R.invoke_pure_closure(clo, (x,), [T(2), T(3)]))
    assert isinstance(two.struct_info, relax.TupleStructInfo)
    assert len(two.struct_info.fields) == 2
    assert one.op.get_attr("FPurity") is False
    assert two.op.get_attr("FPurity") is True


def test_invoke_closure_needs_sinfo_args():
    clo = relax.Var("c", relax.ObjectStructInfo())
    with pytest.raises(ValueError, match="sinfo_args"):
        R.invoke_closure(clo, [], [])
    with pytest.raises(TypeError):
        R.invoke_closure(clo, [], ["not sinfo"])
