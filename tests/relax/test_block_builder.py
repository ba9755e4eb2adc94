"""relax.BlockBuilder: scopes, names, normalization and errors (no operators needed)."""

import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.block_builder import BlockBuilderError, NameSupply


def _t(*shape, dtype="float32"):
    return relax.TensorStructInfo(list(shape), dtype)


def test_name_supply_matches_tvm():
    ns = NameSupply()
    assert [ns.fresh("lv") for _ in range(3)] == ["lv", "lv1", "lv2"]
    assert ns.fresh("gv") == "gv"
    ns.reserve("x1")
    assert [ns.fresh("x"), ns.fresh("x")] == ["x", "x2"]


def test_function_with_dataflow_block():
    x = relax.Var("x", _t(2, 3))
    y = relax.Var("y", _t(2, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            t = bb.emit(relax.Tuple([x, y]))
            a = bb.emit(relax.TupleGetItem(t, 1))
            gv = bb.emit_output(a)
        bb.emit_func_output(gv)
    mod = bb.get()
    f = mod["main"]
    assert isinstance(f, relax.Function) and f.attrs["global_symbol"] == "main"
    (block,) = f.body.blocks
    assert isinstance(block, relax.DataflowBlock)
    names = [b.var.name_hint for b in block.bindings]
    assert names == ["lv", "lv1", "gv"]
    assert isinstance(block.bindings[0].var, relax.DataflowVar)
    assert not isinstance(block.bindings[2].var, relax.DataflowVar)
    assert isinstance(t.struct_info, relax.TupleStructInfo)
    assert tvm.ir.structural_equal(a.struct_info, _t(2, 3))
    assert f.body.body is gv
    assert tvm.ir.structural_equal(f.ret_struct_info, _t(2, 3))


def test_symbolic_shapes_and_match_cast():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo(ndim=2, dtype="float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        y = bb.match_cast(x, _t(n, 4))
        bb.emit_func_output(y)
    f = bb.get()["f"]
    (block,) = f.body.blocks
    (mc,) = block.bindings
    assert isinstance(mc, relax.MatchCast) and mc.value is x
    assert f.ret_struct_info.dims()[0] is n


def test_params_given_at_output_and_global_calls():
    x = relax.Var("x", _t(4))
    bb = relax.BlockBuilder()
    with bb.function("inner"):
        gv_inner = bb.emit_func_output(x, params=[x])
    z = relax.Var("z", _t(4))
    with bb.function("main", [z]):
        r = bb.emit(relax.Call(gv_inner, [z]))
        bb.emit_func_output(r)
    mod = bb.get()
    assert sorted(g.name_hint for g in mod.functions) == ["inner", "main"]
    assert tvm.ir.structural_equal(r.struct_info, _t(4))
    assert mod.get_global_var("inner") is gv_inner


def test_private_function_has_no_global_symbol():
    x = relax.Var("x", _t(1))
    bb = relax.BlockBuilder()
    with bb.function("helper", [x], private=True):
        bb.emit_func_output(x)
    assert bb.get()["helper"].attrs is None


def test_errors_name_what_is_wrong():
    bb = relax.BlockBuilder()
    x = relax.Var("x", _t(1))
    with pytest.raises(BlockBuilderError, match="inside `with bb.function"):
        bb.emit(x)
    with pytest.raises(BlockBuilderError, match="only valid inside a dataflow block"):
        with bb.function("f", [x]):
            bb.emit_output(x)
    with pytest.raises(BlockBuilderError, match="ended without emit_func_output"):
        with bb.function("g", [x]):
            pass
    with pytest.raises(BlockBuilderError, match="inside a dataflow"):
        with bb.function("h", [x]):
            with bb.dataflow():
                bb.emit_func_output(x)
    with pytest.raises(TypeError, match="cannot normalize"):
        bb.normalize(3)


def test_current_is_per_scope():
    assert relax.BlockBuilder.current() is None
    bb = relax.BlockBuilder()
    x = relax.Var("x", _t(1))
    with bb.function("f", [x]):
        assert relax.BlockBuilder.current() is bb
        bb.emit_func_output(x)
    assert relax.BlockBuilder.current() is None


def test_many_bindings_no_recursion():
    x = relax.Var("x", _t(2))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for _ in range(100_000):
                v = bb.emit(relax.TupleGetItem(relax.Tuple([v]), 0))
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    f = bb.get()["main"]
    assert len(f.body.blocks[0].bindings) == 100_001
    assert tvm.ir.structural_equal(f, f)
    assert tvm.ir.structural_hash(f) == tvm.ir.structural_hash(f)


def test_call_te_reuses_equal_prim_funcs_hashing_each_once(monkeypatch):
    from minitvm import te
    from minitvm.ir import structural

    calls = []
    real = structural.structural_hash
    monkeypatch.setattr(structural, "structural_hash", lambda f: calls.append(f) or real(f))
    x = relax.Var("x", _t(2, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit_te(lambda t: te.compute(t.shape, lambda i, j: t[i, j] + 1.0), x)
        b = bb.emit_te(lambda t: te.compute(t.shape, lambda i, j: t[i, j] * 2.0), a)
        c = bb.emit_te(lambda t: te.compute(t.shape, lambda i, j: t[i, j] + 1.0), b)
        bb.emit_func_output(c)
    mod = bb.get()
    prims = [f for f in mod.functions.values() if isinstance(f, tir.PrimFunc)]
    assert len(prims) == 2  # the third is the first one again
    calls_of = {id(f) for f in calls}
    assert len(calls) == 3 and all(id(p) in calls_of for p in prims)  # one hash per call_te
    main = mod["main"]
    gvs = [b.value.args[0] for b in main.body.blocks[0].bindings]
    assert gvs[0] is gvs[2] and gvs[0] is not gvs[1]
