"""relax.analysis.well_formed / check_well_formed, symbolic var analyses, the verify hook."""

import sys

import pytest

from minitvm import relax, tir
from minitvm.ir.dialect import find_hook
from minitvm.relax import op as R
from minitvm.relax.analysis import (
    check_well_formed,
    defined_symbolic_vars,
    free_symbolic_vars,
    well_formed,
)


def T(*shape):
    return relax.TensorStructInfo(list(shape), "float32")


def _fn(params, blocks, body):
    return relax.Function(params, relax.SeqExpr(blocks, body), body.struct_info_)


def _norm(e):
    return relax.BlockBuilder().normalize(e)


def test_simple_function_is_well_formed():
    x = relax.Var("x", T(2))
    y = relax.Var("y", T(2))
    f = _fn([x], [relax.BindingBlock([relax.VarBinding(y, _norm(R.exp(x)))])], y)
    assert well_formed(f)
    assert check_well_formed(f) is None


def test_use_before_definition():
    x = relax.Var("x", T(2))
    y = relax.Var("y", T(2))
    z = relax.Var("z", T(2))
    f = _fn([x], [relax.BindingBlock([relax.VarBinding(y, _norm(R.exp(z)))])], y)
    assert not well_formed(f)
    assert "%z" in check_well_formed(f) and "before it is defined" in check_well_formed(f)


def test_duplicate_definition():
    x = relax.Var("x", T(2))
    y = relax.Var("y", T(2))
    b = relax.VarBinding(y, _norm(R.exp(x)))
    f = _fn([x], [relax.BindingBlock([b, relax.VarBinding(y, _norm(R.exp(x)))])], y)
    assert "%y is defined more than once" in check_well_formed(f)


def test_dataflow_var_escaping_its_block():
    x = relax.Var("x", T(2))
    lv = relax.DataflowVar("lv", T(2))
    f = _fn([x], [relax.DataflowBlock([relax.VarBinding(lv, _norm(R.exp(x)))])], lv)
    why = check_well_formed(f)
    assert "DataflowVar %lv is used outside its dataflow block" in why
    gv = relax.Var("gv", T(2))
    ok = _fn([x], [relax.DataflowBlock([relax.VarBinding(lv, _norm(R.exp(x))),
                                        relax.VarBinding(gv, _norm(R.exp(lv)))])], gv)
    assert well_formed(ok)


def test_dataflow_var_outside_dataflow_block():
    x = relax.Var("x", T(2))
    lv = relax.DataflowVar("lv", T(2))
    f = _fn([x], [relax.BindingBlock([relax.VarBinding(lv, _norm(R.exp(x)))])], x)
    assert "defined outside a dataflow block" in check_well_formed(f)


def test_undefined_symbolic_var():
    n = tir.Var("n", "int64")
    m = tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([m], "float32"))
    f = _fn([x], [relax.BindingBlock([relax.VarBinding(y, _norm(R.exp(x)))])], y)
    why = check_well_formed(f)
    assert why is not None and "symbolic variable m" in why
    # a match_cast defines it
    z = relax.Var("z", relax.TensorStructInfo([m], "float32"))
    g = _fn([x], [relax.BindingBlock([
        relax.MatchCast(z, x, relax.TensorStructInfo([m], "float32"))])], z)
    assert well_formed(g)
    assert [v.name for v in defined_symbolic_vars(g)] == ["n", "m"]
    assert [v.name for v in free_symbolic_vars(f)] == ["m"]
    assert free_symbolic_vars(g) == []


def test_impure_call_in_dataflow_block():
    x = relax.Var("x", T(2))
    lv = relax.Var("lv", T(2))
    call = relax.Call(relax.ExternFunc("f"), [x], sinfo_args=[T(2)])
    call._struct_info = T(2)
    f = _fn([x], [relax.DataflowBlock([relax.VarBinding(lv, call)])], lv)
    assert "impure call" in check_well_formed(f)


def test_missing_struct_info():
    x = relax.Var("x", T(2))
    y = relax.Var("y", T(2))
    f = _fn([x], [relax.BindingBlock([relax.VarBinding(y, R.exp(x))])], y)
    assert "no struct info" in check_well_formed(f)
    assert well_formed(f, check_struct_info=False)


def test_module_global_vars_and_hook():
    x = relax.Var("x", T(2))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(R.exp(x)))
    mod = bb.get()
    assert well_formed(mod)
    hook = find_hook("well_formed", relax.Function)
    assert hook(mod["main"]) is None
    assert hook(mod.get_global_var("main"), mod["main"], 5) == []
    y = relax.Var("y", T(2))
    bad = _fn([y], [], relax.Var("w", T(2)))
    assert "%w" in hook(bad)


def test_large_block_is_checked_iteratively():
    assert sys.getrecursionlimit() <= 10000
    x = relax.Var("x", T(2))
    bindings, cur = [], x
    tup_sinfo = relax.TupleStructInfo([T(2)])
    for i in range(100_000):
        v = relax.Var(f"v{i}", T(2)) if i % 2 else relax.Var(f"v{i}", tup_sinfo)
        val = relax.Tuple([cur]) if not i % 2 else relax.TupleGetItem(cur, 0)
        bindings.append(relax.VarBinding(v, val))
        cur = v
    f = _fn([x], [relax.BindingBlock(bindings)], cur)
    assert well_formed(f)


def test_bad_argument():
    with pytest.raises(TypeError):
        well_formed(relax.Var("x", T(2)))
