"""relax.transform.Normalize: ANF operands, SeqExpr scopes, flattening and block merging."""

import numpy as np
import pytest
from relax_pass_util import T, assert_equal, assert_same_results, module

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import op as R
from minitvm.relax import transform as rt
from minitvm.relax.transform.normalize import is_normalized, normalize_expr


def _fn(params, blocks, body, ret=None):
    return relax.Function(params, relax.SeqExpr(blocks, body), ret or T(2, 3))


def _vb(var, value):
    return relax.VarBinding(var, value)


def test_nested_operands_are_bound_in_order():
    x, y = relax.Var("x", T(2, 3)), relax.Var("y", T(2, 3))
    lv = relax.Var("lv", T(2, 3))
    before = _fn([x, y], [relax.BindingBlock([
        _vb(lv, R.add(R.multiply(R.exp(x), y), R.subtract(R.exp(y), x)))])], lv)
    x2, y2 = relax.Var("x", T(2, 3)), relax.Var("y", T(2, 3))
    a, b, c, d = (relax.Var(n, T(2, 3)) for n in "abcd")
    lv2 = relax.Var("lv", T(2, 3))
    expected = _fn([x2, y2], [relax.BindingBlock([
        _vb(a, R.exp(x2)), _vb(b, R.multiply(a, y2)), _vb(c, R.exp(y2)),
        _vb(d, R.subtract(c, x2)), _vb(lv2, R.add(b, d))])], lv2)
    after = rt.Normalize()(module(main=before))
    assert_equal(after["main"], normalize_expr(expected))
    assert is_normalized(after["main"]) is None
    xs = np.random.rand(2, 3).astype("float32")
    assert_same_results(after, after, "main", xs, xs)


def test_operands_in_a_dataflow_block_become_dataflow_vars():
    x = relax.Var("x", T(2, 3))
    gv = relax.Var("gv", T(2, 3))
    before = _fn([x], [relax.DataflowBlock([_vb(gv, R.add(R.exp(x), x))])], gv)
    after = rt.Normalize()(module(main=before))["main"]
    (block,) = after.body.blocks
    assert isinstance(block, relax.DataflowBlock)
    first, second = block.bindings
    assert isinstance(first.var, relax.DataflowVar) and first.value.op.name == "relax.exp"
    assert second.var is gv and second.value.args[0] is first.var


def test_function_body_and_branches_become_seq_exprs():
    x = relax.Var("x", T(2, 3))
    cond = relax.Var("c", relax.TensorStructInfo([], "bool"))
    before = relax.Function([x, cond], relax.If(cond, R.exp(x), x), T(2, 3))
    after = rt.Normalize()(module(main=before))["main"]
    assert isinstance(after.body, relax.SeqExpr)
    (block,) = after.body.blocks
    (binding,) = block.bindings
    if_ = binding.value
    assert isinstance(if_, relax.If)
    assert isinstance(if_.true_branch, relax.SeqExpr) and isinstance(if_.false_branch,
                                                                     relax.SeqExpr)
    assert if_.true_branch.blocks[0].bindings[0].value.op.name == "relax.exp"
    assert if_.false_branch.blocks == () and if_.false_branch.body is x
    assert after.body.body is binding.var
    assert tvm.ir.structural_equal(if_.struct_info, T(2, 3))


def test_nested_seq_expr_is_flattened_and_blocks_merged():
    x = relax.Var("x", T(2, 3))
    a, b, c, d = (relax.Var(n, T(2, 3)) for n in "abcd")
    inner = relax.SeqExpr([relax.BindingBlock([_vb(a, R.exp(x))])], a)
    before = _fn([x], [
        relax.BindingBlock([_vb(b, inner)]),
        relax.BindingBlock([]),
        relax.BindingBlock([_vb(c, R.add(b, x))]),
        relax.DataflowBlock([_vb(d, R.exp(c))]),
    ], d)
    after = rt.Normalize()(module(main=before))["main"]
    kinds = [type(bk).__name__ for bk in after.body.blocks]
    assert kinds == ["BindingBlock", "DataflowBlock"]
    names = [bd.var.name_hint for bd in after.body.blocks[0].bindings]
    assert names == ["a", "b", "c"]
    assert after.body.blocks[0].bindings[1].value is a


def test_shared_operand_bound_once_per_block_and_tuples_stay():
    x = relax.Var("x", T(2, 3))
    shared = R.exp(x)
    lv = relax.Var("lv", relax.TupleStructInfo([T(2, 3), T(2, 3)]))
    before = _fn([x], [relax.BindingBlock([_vb(lv, relax.Tuple([shared, R.add(shared, x)]))])],
                 lv, relax.TupleStructInfo([T(2, 3), T(2, 3)]))
    after = rt.Normalize()(module(main=before))["main"]
    bindings = after.body.blocks[0].bindings
    assert [bd.value.op.name for bd in bindings[:2]] == ["relax.exp", "relax.add"]
    assert bindings[1].value.args[0] is bindings[0].var
    assert isinstance(bindings[2].value, relax.Tuple)
    assert bindings[2].value.fields == (bindings[0].var, bindings[1].var)


def test_match_cast_value_is_bound_first():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo(ndim=1, dtype="float32"))
    y = relax.Var("y", T(n))
    before = relax.Function([x], relax.SeqExpr(
        [relax.BindingBlock([relax.MatchCast(y, R.exp(x), T(n))])], y), T(n))
    after = rt.Normalize()(module(main=before))["main"]
    first, cast = after.body.blocks[0].bindings
    assert first.value.op.name == "relax.exp"
    assert isinstance(cast, relax.MatchCast) and cast.value is first.var


def test_binding_var_without_struct_info_gets_it():
    x = relax.Var("x", T(2, 3))
    lv = relax.Var("lv")
    before = relax.Function([x], relax.SeqExpr([relax.BindingBlock([_vb(lv, R.exp(x))])], lv),
                            T(2, 3))
    after = rt.Normalize()(module(main=before))["main"]
    assert tvm.ir.structural_equal(after.body.blocks[0].bindings[0].var.struct_info, T(2, 3))


def test_normalized_module_is_returned_unchanged():
    x = relax.Var("x", T(2, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(R.exp(x))
            gv = bb.emit_output(R.add(lv, x))
        bb.emit_func_output(gv)
    mod = bb.get()
    after = rt.Normalize()(mod)
    assert after["main"] is mod["main"]


def test_deeply_nested_operands_are_iterative():
    x = relax.Var("x", T(2))
    e = x
    for _ in range(20000):
        e = R.add(e, x)
    lv = relax.Var("lv", T(2))
    before = relax.Function([x], relax.SeqExpr([relax.BindingBlock([_vb(lv, e)])], lv), T(2))
    after = rt.Normalize()(module(main=before))["main"]
    assert len(after.body.blocks[0].bindings) == 20000
    assert is_normalized(after) is None


def test_property_is_established_for_passes_that_need_it():
    x = relax.Var("x", T(2, 3))
    lv = relax.Var("lv", T(2, 3))
    dead = relax.Var("dead", T(2, 3))
    before = _fn([x], [relax.BindingBlock([_vb(dead, R.exp(R.exp(x))),
                                           _vb(lv, R.add(R.exp(x), x))])], lv)
    mod = module(main=before.with_attr("global_symbol", "main"))
    assert tvm.transform.check_property("relax_normalized", mod) is not None
    after = rt.DeadCodeElimination()(mod)  # runs Normalize first (it needs relax_normalized)
    assert tvm.transform.check_property("relax_normalized", after) is None
    ops = [bd.value.op.name for bd in after["main"].body.blocks[0].bindings]
    assert ops == ["relax.exp", "relax.add"]


def test_unknown_variable_struct_info_is_an_error():
    x = relax.Var("x")
    with pytest.raises(ValueError, match="no struct info"):
        normalize_expr(R.exp(x))
