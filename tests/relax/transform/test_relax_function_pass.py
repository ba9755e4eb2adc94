"""relax.transform.function_pass / dataflowblock_pass on the shared pass infrastructure."""

import pytest
from relax_pass_util import T, assert_equal

import minitvm as tvm
from minitvm import relax, tir
from minitvm.instrument import PassTimingInstrument
from minitvm.relax import op as R
from minitvm.relax import transform as rt


def _mod():
    x = relax.Var("x", T(2, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(R.add(x, x))
            gv = bb.emit_output(R.multiply(lv, x))
        bb.emit_func_output(gv)
    y = relax.Var("y", T(2, 3))
    with bb.function("other", [y]):
        with bb.dataflow():
            gv = bb.emit_output(R.exp(y))
        bb.emit_func_output(gv)
    return bb.get()


def _const_func(value):
    x = relax.Var("x", T(2, 3))
    c = relax.const(value, "float32")
    return relax.Function([x], relax.SeqExpr([], c), c.struct_info)


def test_decorated_function_applies_to_every_relax_function():
    seen = []

    @rt.function_pass(opt_level=1)
    def record(func, mod, ctx):
        seen.append(func)
        assert isinstance(mod, tvm.IRModule) and isinstance(ctx, tvm.transform.PassContext)
        return func

    assert isinstance(record, rt.FunctionPass)
    assert record.info.opt_level == 1 and record.info.name == "record"
    mod = _mod()
    out = record(mod)
    assert len(seen) == 2
    assert out is not mod  # a shallow copy, as TVM's FunctionPassNode
    assert out["main"] is mod["main"]


def test_direct_call_form_and_name():
    p = rt.function_pass(lambda f, m, c: f, opt_level=2, name="Nop", required=["Normalize"])
    assert p.info.name == "Nop" and p.info.opt_level == 2 and p.info.required == ["Normalize"]
    assert str(p) == "Run Function pass: Nop at the optimization level 2"


def test_opt_level_is_required_and_required_type_checked():
    with pytest.raises(ValueError, match="Please provide opt_level for the function pass"):
        rt.function_pass(lambda f, m, c: f)
    with pytest.raises(ValueError, match="Please provide opt_level for the dataflowblock"):
        rt.dataflowblock_pass(lambda b, m, c: b)
    with pytest.raises(TypeError, match="list/tuple"):
        rt.function_pass(lambda f, m, c: f, opt_level=0, required="Normalize")
    with pytest.raises(TypeError, match="callable"):
        rt.function_pass(42, opt_level=0)


def test_class_form_replaces_functions():
    @rt.function_pass(opt_level=1)
    class ReplaceWith:
        """Replace every function."""

        def __init__(self, new_func):
            self.new_func = new_func

        def transform_function(self, func, mod, ctx):
            return self.new_func

    new = _const_func(1.0)
    p = ReplaceWith(new)
    assert isinstance(p, rt.FunctionPass)
    assert p.new_func is new  # attributes fall back to the instance
    assert ReplaceWith.__doc__ == "Replace every function."
    out = p(_mod())
    assert out["main"] is new and out["other"] is new


def test_result_must_be_a_function():
    p = rt.function_pass(lambda f, m, c: None, opt_level=0, name="Bad")
    with pytest.raises(TypeError, match="expected a relax.Function"):
        p(_mod())


def test_skips_compiler_and_skip_optimization_functions_and_primfuncs():
    mod = _mod()
    mod["main"] = mod["main"].with_attr("Compiler", "ext")
    mod["other"] = mod["other"].with_attr("SkipOptimization", tir.IntImm("int32", 1))
    prim = tir.PrimFunc([], tir.stmt.Evaluate(tir.IntImm("int32", 0)))
    mod["prim"] = prim
    seen = []
    p = rt.function_pass(lambda f, m, c: seen.append(f) or f, opt_level=0, name="Rec")
    p(mod)
    assert seen == []
    mod["other"] = mod["other"].with_attr("SkipOptimization", tir.IntImm("int32", 0))
    p(mod)
    assert len(seen) == 1


def test_sequential_filters_by_opt_level_and_statistics():
    calls = []
    p3 = rt.function_pass(lambda f, m, c: calls.append(3) or f, opt_level=3, name="P3")
    p1 = rt.function_pass(lambda f, m, c: _const_func(2.0), opt_level=1, name="P1")
    seq = tvm.transform.Sequential([p3, p1])
    timing = PassTimingInstrument()
    with tvm.transform.PassContext(opt_level=2, instruments=[timing]):
        out = seq(_mod())
        report = PassTimingInstrument.render()
    assert calls == []  # opt_level 3 > 2
    assert isinstance(out["main"].body.body, relax.Constant)
    assert "functions changed" in report


def test_dataflowblock_pass_rewrites_each_block():
    seen = []

    @rt.dataflowblock_pass(opt_level=1)
    def drop_nothing(block, mod, ctx):
        seen.append(block)
        return block

    assert isinstance(drop_nothing, rt.DataflowBlockPass)
    mod = _mod()
    out = drop_nothing(mod)
    assert len(seen) == 2
    assert out["main"] is mod["main"]


def test_dataflowblock_pass_class_form_replaces_a_binding():
    @rt.dataflowblock_pass(opt_level=1)
    class ReplaceFirst:
        def transform_dataflowblock(self, block, mod, ctx):
            first = block.bindings[0]
            arg = first.value.args[0]
            new = relax.VarBinding(first.var, R.subtract(arg, arg))
            relax.BlockBuilder().normalize(new.value)
            return relax.DataflowBlock([new, *block.bindings[1:]])

    p = ReplaceFirst()
    assert isinstance(p, rt.DataflowBlockPass) and p.kind == "dataflowblock"
    out = p(_mod())
    assert out["main"].body.blocks[0].bindings[0].value.op.name == "relax.subtract"
    assert out["other"].body.blocks[0].bindings[0].value.op.name == "relax.subtract"


def test_dataflowblock_pass_must_keep_outputs():
    @rt.dataflowblock_pass(opt_level=0)
    def drop_outputs(block, mod, ctx):
        return relax.DataflowBlock([b for b in block.bindings
                                    if isinstance(b.var, relax.DataflowVar)])

    with pytest.raises(ValueError, match="should not delete any GlobalScope"):
        drop_outputs(_mod())

    @rt.dataflowblock_pass(opt_level=0)
    def rebind_output(block, mod, ctx):
        out = []
        for b in block.bindings:
            if not isinstance(b.var, relax.DataflowVar):
                b = relax.VarBinding(relax.Var(b.var.name_hint, b.var.struct_info), b.value)
            out.append(b)
        return relax.DataflowBlock(out)

    with pytest.raises(ValueError, match="should not rewrite any GlobalScope Var"):
        rebind_output(_mod())


def test_dataflowblock_pass_must_keep_symbolic_vars():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo(ndim=1, dtype="float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.match_cast(x, T(n))
            gv = bb.emit_output(R.exp(y))
        bb.emit_func_output(gv)
    mod = bb.get()

    @rt.dataflowblock_pass(opt_level=0)
    def new_symbol(block, mod, ctx):
        out = []
        for b in block.bindings:
            if isinstance(b, relax.MatchCast):
                m = tir.Var("n", "int64")
                b = relax.MatchCast(b.var, b.value, T(m))
            out.append(b)
        return relax.DataflowBlock(out)

    with pytest.raises(ValueError, match="Symbolic Var"):
        new_symbol(mod)


def test_registered_names_and_pipeline_text():
    names = {e.name for e in tvm.transform.list_passes()}
    for n in ("Normalize", "CanonicalizeBindings", "CanonicalizeTIRVariables",
              "CanonicalizeRelaxBindings", "ConvertToDataflow", "ToNonDataflow", "BindParams",
              "relax.BindSymbolicVars", "RemoveUnusedOutputs", "AttachGlobalSymbol"):
        assert n in names
        p = tvm.transform.get_pass(n) if n not in ("BindParams", "relax.BindSymbolicVars") \
            else None
        assert p is None or p.info.name == n
    # names Relay's passes hold are registered as relax.transform.<Name>
    for n in ("DeadCodeElimination", "EliminateCommonSubexpr", "FoldConstant", "LambdaLift"):
        p = tvm.transform.get_pass(f"relax.transform.{n}")
        assert p.info.name == n and isinstance(p, rt.Pass)
        assert tvm.transform.get_pass(n) is not None  # still Relay's
    p = tvm.transform.get_pass("relax.transform.EliminateCommonSubexpr", call_only=True)
    assert p.info.name == "EliminateCommonSubexpr" and p.info.opt_level == 1
    seq = tvm.transform.Sequential([rt.Normalize(), rt.EliminateCommonSubexpr(call_only=True),
                                    rt.ConvertToDataflow(min_size=3)])
    text = str(seq)
    assert text == ("Normalize,relax.transform.EliminateCommonSubexpr(call_only=True),"
                    "ConvertToDataflow(min_size=3)")
    again = tvm.transform.parse_pipeline(text)
    assert str(again) == text
    assert again.passes[1].info.name == "EliminateCommonSubexpr"
    assert isinstance(again.passes[1], rt.FunctionPass)


def test_disabling_by_tvm_name():
    x = relax.Var("x", T(2, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit(R.add(x, x))
        b = bb.emit(R.add(x, x))
        bb.emit_func_output(R.multiply(a, b))
    mod = bb.get()
    seq = tvm.transform.Sequential([rt.EliminateCommonSubexpr()])
    with tvm.transform.PassContext(disabled_pass=["EliminateCommonSubexpr"]):
        assert seq(mod)["main"] is mod["main"]
    assert seq(mod)["main"] is not mod["main"]


def test_opt_levels_match_tvm():
    levels = {
        rt.Normalize(): 1, rt.ToNonDataflow(): 0, rt.DeadCodeElimination(): 1,
        rt.EliminateCommonSubexpr(): 1, rt.FoldConstant(): 0, rt.LambdaLift(): 1,
        rt.BindParams("main", {}): 0, rt.BindSymbolicVars({}): 1,
        rt.AttachGlobalSymbol(): 0, rt.CanonicalizeTIRVariables(): 1,
        rt.CanonicalizeRelaxBindings(): 1,
    }
    for p, level in levels.items():
        assert p.info.opt_level == level, p.info.name
    assert rt.BindSymbolicVars({}).info.name == "relax.BindSymbolicVars"
    seq = rt.CanonicalizeBindings()
    assert seq.info.name == "CanonicalizeBindings"
    assert rt.ConvertToDataflow().info.name == "ConvertToDataflow"
    assert [c.info.name for c in seq.passes] == ["CanonicalizeTIRVariables",
                                                 "CanonicalizeRelaxBindings"]
    assert [c.info.name for c in rt.RemoveUnusedOutputs().passes] == [
        "RemoveUnusedOutputsInner", "CanonicalizeBindings", "DeadCodeElimination"]


def test_structural_equality_helper_smoke():
    assert_equal(_mod(), _mod(), map_free_vars=True)
