"""relax.transform.DeadCodeElimination and EliminateCommonSubexpr."""

import numpy as np
import pytest
from relax_pass_util import T, assert_equal, assert_same_results

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import op as R
from minitvm.relax import transform as rt


def _impure(x):
    return relax.Call(relax.ExternFunc("effect"), [x])


def _build(params, fn, name="main", bb=None, private=False):
    bb = bb or relax.BlockBuilder()
    with bb.function(name, params, private=private):
        bb.emit_func_output(fn(bb))
    return bb


# ---------------------------------------------------------------------------------- DCE
def test_unused_bindings_removed_to_a_fixed_point():
    x = relax.Var("x", T(2, 3))

    def before(bb):
        with bb.dataflow():
            a = bb.emit(R.exp(x))
            b = bb.emit(R.add(a, a))  # only used by c, which is unused
            bb.emit(R.multiply(b, x))
            gv = bb.emit_output(R.add(x, x))
            bb.emit_output(R.exp(gv))  # an unused output
        d = bb.emit(R.exp(gv))  # unused, outside the block
        bb.emit(_impure(d))  # impure: kept, and keeps d
        bb.emit(R.exp(x))  # unused pure: removed
        return gv

    x2 = relax.Var("x", T(2, 3))

    def expected(bb):
        with bb.dataflow():
            gv = bb.emit_output(R.add(x2, x2))
        d = bb.emit(R.exp(gv))
        bb.emit(_impure(d))
        return gv

    mod = _build([x], before).get()
    after = rt.DeadCodeElimination()(mod)
    assert_equal(after, _build([x2], expected).get())


def test_empty_blocks_disappear_and_match_cast_kept():
    x = relax.Var("x", relax.TensorStructInfo(ndim=2, dtype="float32"))

    def before(bb):
        with bb.dataflow():
            lv = bb.emit(R.exp(x))
            bb.emit_output(R.exp(lv))
        bb.match_cast(x, T(2, 3))
        return relax.Tuple([])

    after = rt.DeadCodeElimination()(_build([x], before).get())["main"]
    (block,) = after.body.blocks
    assert isinstance(block, relax.BindingBlock) and not isinstance(block, relax.DataflowBlock)
    assert isinstance(block.bindings[0], relax.MatchCast)
    assert isinstance(after.body.body, relax.Tuple)


def test_unused_functions_removed_from_entries():
    bb = relax.BlockBuilder()
    x = relax.Var("x", T(2))
    _build([x], lambda b: b.emit(R.exp(x)), "helper", bb, private=True)
    y = relax.Var("y", T(2))
    _build([y], lambda b: b.emit(R.add(y, y)), "unused", bb, private=True)
    z = relax.Var("z", T(2))
    helper = bb.get().get_global_var("helper")
    _build([z], lambda b: b.emit(relax.Call(helper, [z])), "main", bb)
    w = relax.Var("w", T(2))
    _build([w], lambda b: b.emit(R.exp(w)), "internal_entry", bb, private=True)
    mod = bb.get()
    after = rt.DeadCodeElimination()(mod)
    assert sorted(g.name_hint for g in after.functions) == ["helper", "main"]
    after = rt.DeadCodeElimination(["internal_entry"])(mod)
    assert sorted(g.name_hint for g in after.functions) == ["helper", "internal_entry", "main"]


def test_call_removed_in_a_function_makes_callee_dead():
    bb = relax.BlockBuilder()
    x = relax.Var("x", T(2))
    _build([x], lambda b: b.emit(R.exp(x)), "helper", bb, private=True)
    helper = bb.get().get_global_var("helper")
    z = relax.Var("z", T(2))

    def main(b):
        b.emit(relax.Call(helper, [z]))  # unused result: removed, then helper is unreachable
        return b.emit(R.add(z, z))

    _build([z], main, "main", bb)
    after = rt.DeadCodeElimination()(bb.get())
    assert [g.name_hint for g in after.functions] == ["main"]
    assert len(after["main"].body.blocks[0].bindings) == 1


def test_an_elided_output_keeps_its_callee_and_the_unused_function_goes():
    """``lv = helper(z); gv = lv`` becomes ``gv = helper(z)`` (nothing removed: the walk of
    main's globals from before the elision is reused), helper stays, unused goes; same
    results."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", T(2))
    _build([x], lambda b: b.emit(R.exp(x)), "helper", bb, private=True)
    y = relax.Var("y", T(2))
    _build([y], lambda b: b.emit(R.add(y, y)), "unused", bb, private=True)
    helper = bb.get().get_global_var("helper")
    z = relax.Var("z", T(2))

    def main(b):
        with b.dataflow():
            lv = b.emit(relax.Call(helper, [z]))
            gv = b.emit_output(lv)
        return gv

    _build([z], main, "main", bb)
    before = bb.get()
    after = rt.DeadCodeElimination()(before)
    assert sorted(g.name_hint for g in after.functions) == ["helper", "main"]
    (binding,) = after["main"].body.blocks[0].bindings
    assert isinstance(binding.value, relax.Call) and binding.value.op.name_hint == "helper"
    assert not isinstance(binding.var, relax.DataflowVar)
    assert_same_results(before, after, "main", np.array([0.5, -1.0], "float32"))


def test_reference_to_unknown_global_keeps_every_function():
    bb = relax.BlockBuilder()
    z = relax.Var("z", T(2))
    missing = tvm.ir.GlobalVar("missing")
    missing._checked_type = relax.FuncStructInfo([T(2)], T(2))
    _build([z], lambda b: b.emit(relax.Call(missing, [z])), "main", bb)
    y = relax.Var("y", T(2))
    _build([y], lambda b: b.emit(R.exp(y)), "unused", bb, private=True)
    after = rt.DeadCodeElimination()(bb.get())
    assert sorted(g.name_hint for g in after.functions) == ["main", "unused"]


# ---------------------------------------------------------------------------------- CSE
def test_cse_replaces_duplicates_with_trivial_bindings():
    x, y = relax.Var("x", T(2, 3)), relax.Var("y", T(2, 3))

    def before(bb):
        with bb.dataflow():
            a = bb.emit(R.add(x, y))
            b = bb.emit(R.add(x, y))
            gv = bb.emit_output(R.multiply(a, b))
        return gv

    x2, y2 = relax.Var("x", T(2, 3)), relax.Var("y", T(2, 3))

    def expected(bb):
        with bb.dataflow():
            a = bb.emit(R.add(x2, y2))
            bb.emit(a)
            gv = bb.emit_output(R.multiply(a, a))
        return gv

    mod = _build([x, y], before).get()
    after = rt.EliminateCommonSubexpr()(mod)
    assert_equal(after, _build([x2, y2], expected).get())
    arrays = [np.random.rand(2, 3).astype("float32") for _ in range(2)]
    assert_same_results(mod, after, "main", *arrays)
    cleaned = tvm.transform.Sequential([rt.EliminateCommonSubexpr(), rt.CanonicalizeBindings(),
                                        rt.DeadCodeElimination()])(
        tvm.IRModule({"main": mod["main"]}))
    assert len(cleaned["main"].body.blocks[0].bindings) == 2


def test_cse_call_only_and_impure():
    x = relax.Var("x", T(2, 3))

    def before(bb):
        t1 = bb.emit(relax.Tuple([x, x]))
        t2 = bb.emit(relax.Tuple([x, x]))
        i1 = bb.emit(_impure(x))
        i2 = bb.emit(_impure(x))
        return bb.emit(relax.Tuple([t1, t2, i1, i2]))

    mod = _build([x], before).get()
    all_ = rt.EliminateCommonSubexpr()(mod)["main"].body.blocks[0].bindings
    assert all_[1].value is all_[0].var  # the duplicate tuple
    assert isinstance(all_[3].value, relax.Call)  # impure calls are never merged
    calls = rt.EliminateCommonSubexpr(call_only=True)(mod)["main"].body.blocks[0].bindings
    assert isinstance(calls[1].value, relax.Tuple)


def test_cse_dataflow_vars_do_not_escape_their_block():
    x = relax.Var("x", T(2, 3))

    def before(bb):
        with bb.dataflow():
            lv = bb.emit(R.exp(x))
            gv = bb.emit_output(R.add(lv, x))
        bb.emit(_impure(gv))  # keeps the two blocks apart
        with bb.dataflow():
            lv2 = bb.emit(R.exp(x))  # same value as lv, but lv is out of scope
            gv2 = bb.emit_output(R.add(lv2, gv))
        return gv2

    mod = _build([x], before).get()
    after = rt.EliminateCommonSubexpr()(mod)
    assert after["main"] is mod["main"]


def test_cse_match_cast_keys_include_the_struct_info():
    x = relax.Var("x", relax.TensorStructInfo(ndim=1, dtype="float32"))
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")

    def before(bb):
        a = bb.match_cast(x, T(m))
        b = bb.match_cast(x, T(n))
        c = bb.match_cast(x, T(m))
        return bb.emit(relax.Tuple([a, b, c]))

    after = rt.EliminateCommonSubexpr()(_build([x], before).get())["main"]
    bindings = after.body.blocks[0].bindings
    assert isinstance(bindings[1], relax.MatchCast)
    assert isinstance(bindings[2], relax.VarBinding) and bindings[2].value is bindings[0].var


def test_cse_branches_and_nested_functions_are_scoped():
    x = relax.Var("x", T(2, 3))
    c = relax.Var("c", relax.TensorStructInfo([], "bool"))
    p = relax.Var("p", T(2, 3))
    q = relax.Var("q", T(2, 3))
    inner = relax.Function([p], relax.SeqExpr([relax.BindingBlock([
        relax.VarBinding(q, R.add(x, x))])], q), T(2, 3))

    def before(bb):
        a = bb.emit(R.add(x, x))
        t_b = relax.Var("tb", T(2, 3))
        true_branch = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(t_b, R.add(x, x))])],
                                    t_b)
        r = bb.emit(relax.If(c, true_branch, relax.SeqExpr([], a)))
        after_if = bb.emit(R.add(x, x))
        f = bb.emit(inner)
        return bb.emit(relax.Tuple([r, after_if, f]))

    after = rt.EliminateCommonSubexpr()(_build([x, c], before).get())["main"]
    bindings = after.body.blocks[0].bindings
    a = bindings[0].var
    if_ = bindings[1].value
    assert if_.true_branch.blocks[0].bindings[0].value is a  # sees the enclosing binding
    assert bindings[2].value is a
    func = bindings[3].value
    assert isinstance(func.body.blocks[0].bindings[0].value, relax.Call)  # its own scope


@pytest.mark.parametrize("n", [3])
def test_cse_then_dce_numerics(n):
    x = relax.Var("x", T(n))

    def before(bb):
        with bb.dataflow():
            vals = [bb.emit(R.exp(x)) for _ in range(3)]
            s = bb.emit(R.add(vals[0], vals[1]))
            gv = bb.emit_output(R.add(s, vals[2]))
        return gv

    mod = _build([x], before).get()
    seq = tvm.transform.Sequential([rt.EliminateCommonSubexpr(), rt.CanonicalizeBindings(),
                                    rt.DeadCodeElimination()])
    after = seq(mod)
    assert len(after["main"].body.blocks[0].bindings) == 3
    assert_same_results(mod, after, "main", np.random.rand(n).astype("float32"))


REFS = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def half(x: T.Buffer((T.int64(4),), "float32"), y: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            with T.block("compute"):
                vi = T.axis.spatial(T.int64(4), i)
                y[vi] = x[vi] * T.float32(0.5)

    @R.function(private=True)
    def helper(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return x

    @R.function(private=True)
    def other(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return x

    @R.function(private=True)
    def last(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return x

    @R.function
    def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")):
        a = R.call_tir(Module.half, (x,), out_sinfo=R.Tensor((4,), "float32"))
        b = Module.helper(a)
        t = (a, (b, x))
        if c:
            y = Module.other(x)
        else:
            y = x
        return (y, Module.last(b))
'''


def test_referenced_globals_are_those_of_the_walk():
    """DCE's reachability reads a function's flat bindings in one loop and walks the rest:
    the same globals as the full walk (a call_tir's kernel, a direct call, a call inside an
    If branch and one in the result), for Relax and TIR functions."""
    from minitvm.relax.transform.dead_code_elimination import _globals_in, _referenced_globals
    from minitvm.script import from_source

    mod = from_source(REFS)
    for gv, f in mod.functions.items():
        assert set(_referenced_globals(f)) == set(_globals_in(f)), gv.name_hint
    names = {g.name_hint for g in _referenced_globals(mod["main"])}
    assert names == {"half", "helper", "other", "last"}
    # every function is reachable from main: DCE keeps them all
    assert len(rt.DeadCodeElimination()(mod).functions) == 5


def test_use_def_reads_flat_calls_as_the_walk_does():
    """The use-def chain reads a call of leaves and tuples of leaves (call_tir, a closure call,
    a packed call with a shape) in one loop: the same unused variables as the walk, which it
    still takes for nested calls, tuples of tuples and functions."""
    from minitvm.ir.expr import GlobalVar
    from minitvm.relax.transform import dead_code_elimination as dce

    t4 = relax.TensorStructInfo([4], "float32")
    x = relax.Var("x", t4)
    f = relax.Var("f", relax.FuncStructInfo([t4], t4))
    f2 = relax.Var("f2", relax.FuncStructInfo([t4, relax.PrimStructInfo("int64")], t4))
    nested = relax.TupleStructInfo([relax.TupleStructInfo([t4])])
    f3 = relax.Var("f3", relax.FuncStructInfo([nested], t4))
    k = GlobalVar("k")
    n = tir.Var("n", "int64")
    c = relax.const(np.ones(4, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, f, f2, f3]):
        with bb.dataflow():
            a = bb.emit(relax.op.call_tir(k, relax.Tuple([x, c]), t4))
            b = bb.emit(relax.op.call_tir(k, relax.Tuple([a]), t4, tir_vars=relax.ShapeExpr([n])))
            read = bb.emit(relax.Call(f2, [x, relax.PrimValue(n)]))
            g = bb.emit(relax.Call(f3, [relax.Tuple([relax.Tuple([b])])]))
            h = bb.emit(relax.op.add(g, relax.TupleGetItem(relax.Tuple([b, read]), 0)))
            unused = bb.emit(relax.op.call_tir(k, relax.Tuple([h, a]), t4))
            out = bb.emit_output(relax.Call(f, [h]))
        bb.emit_func_output(out)
    func = bb.get()["main"]
    flat = dce._unused_vars(func)
    walk = dce._UseDef._flat_call
    try:
        dce._UseDef._flat_call = lambda self, call, user: False
        walked = dce._unused_vars(func)
    finally:
        dce._UseDef._flat_call = walk
    assert flat == walked and unused in flat and read not in flat and b not in flat
