"""relax.transform.ConvertToDataflow and ToNonDataflow."""

import numpy as np
from relax_pass_util import T, assert_equal, assert_same_results

from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax import transform as rt


def _impure(x):
    """A call of an external function: impure, as TVM's ExternFunc calls are."""
    return relax.Call(relax.ExternFunc("effect"), [x])


def _build(params, fn, name="main"):
    bb = relax.BlockBuilder()
    with bb.function(name, params):
        bb.emit_func_output(fn(bb))
    return bb.get()


def test_pure_runs_become_dataflow_blocks():
    x = relax.Var("x", T(2, 3))

    def before(bb):
        a = bb.emit(R.add(x, x))
        b = bb.emit(R.exp(a))
        bb.emit(_impure(b))
        c = bb.emit(R.multiply(b, b))
        return bb.emit(R.add(c, x))

    x2 = relax.Var("x", T(2, 3))

    def expected(bb):
        with bb.dataflow():
            a = bb.emit(R.add(x2, x2))
            b = bb.emit_output(R.exp(a))
        bb.emit(_impure(b))
        with bb.dataflow():
            c = bb.emit(R.multiply(b, b))
            d = bb.emit_output(R.add(c, x2))
        return d

    mod = _build([x], before)
    after = rt.ConvertToDataflow()(mod)
    assert_equal(after, _build([x2], expected))
    a = np.random.rand(2, 3).astype("float32")
    # the external call is not evaluated by the test interpreter: compare a pure version
    pure = rt.ConvertToDataflow()(_build([x], lambda bb: bb.emit(R.exp(bb.emit(R.add(x, x))))))
    assert_same_results(pure, pure, "main", a)


def test_min_size():
    x = relax.Var("x", T(2, 3))

    def before(bb):
        a = bb.emit(R.add(x, x))
        bb.emit(_impure(a))
        b = bb.emit(R.exp(a))
        c = bb.emit(R.exp(b))
        return bb.emit(R.exp(c))

    mod = _build([x], before)
    after = rt.ConvertToDataflow(min_size=3)(mod)["main"]
    kinds = [type(b).__name__ for b in after.body.blocks]
    assert kinds == ["BindingBlock", "DataflowBlock"]
    assert len(after.body.blocks[0].bindings) == 2  # the lone add stayed outside
    after1 = rt.ConvertToDataflow(min_size=1)(mod)["main"]
    assert [type(b).__name__ for b in after1.body.blocks] == [
        "DataflowBlock", "BindingBlock", "DataflowBlock"]
    unchanged = rt.ConvertToDataflow(min_size=4)(mod)
    assert unchanged["main"] is mod["main"]


def test_if_ends_a_run_and_existing_blocks_join():
    x = relax.Var("x", T(2, 3))
    c = relax.Var("c", relax.TensorStructInfo([], "bool"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, c]):
        a = bb.emit(R.add(x, x))
        with bb.dataflow():
            lv = bb.emit(R.exp(a))
            gv = bb.emit_output(R.exp(lv))
        d = bb.emit(R.multiply(gv, gv))
        branch = relax.If(c, relax.SeqExpr([], d), relax.SeqExpr([], x))
        r = bb.emit(branch)
        bb.emit_func_output(r)
    after = rt.ConvertToDataflow()(bb.get())["main"]
    blocks = after.body.blocks
    assert [type(b).__name__ for b in blocks] == ["DataflowBlock", "BindingBlock"]
    assert len(blocks[0].bindings) == 4
    assert isinstance(blocks[1].bindings[0].value, relax.If)
    # a (used only in the block) became a DataflowVar; d is used by the If: still a Var
    assert isinstance(blocks[0].bindings[0].var, relax.DataflowVar)
    assert not isinstance(blocks[0].bindings[3].var, relax.DataflowVar)


def test_to_non_dataflow():
    x = relax.Var("x", T(2, 3))

    def before(bb):
        a = bb.emit(R.exp(x))
        with bb.dataflow():
            lv = bb.emit(R.add(a, x))
            gv = bb.emit_output(R.exp(lv))
        return bb.emit(R.add(gv, a))

    x2 = relax.Var("x", T(2, 3))

    def expected(bb):
        a = bb.emit(R.exp(x2))
        lv = bb.emit(R.add(a, x2))
        gv = bb.emit(R.exp(lv))
        return bb.emit(R.add(gv, a))

    mod = _build([x], before)
    after = rt.ToNonDataflow()(mod)
    assert_equal(after, _build([x2], expected))
    assert not any(isinstance(v, relax.DataflowVar)
                   for b in after["main"].body.blocks for v in [bd.var for bd in b.bindings])
    arr = np.random.rand(2, 3).astype("float32")
    assert_same_results(mod, after, "main", arr)
    # and back
    again = rt.ConvertToDataflow()(after)["main"]
    assert [type(b).__name__ for b in again.body.blocks] == ["DataflowBlock"]


def test_rename_of_a_call_tir_tuple_matches_the_walk():
    """A call of leaves and tuples of leaves (a call_tir) is renamed without the worklist:
    the same rebuilt call and tuple (struct info kept, a tuple passed twice rebuilt once) as
    the walk gives it inside a tuple-get-item, and the call itself when nothing is renamed."""
    from minitvm.ir.expr import GlobalVar
    from minitvm.relax.transform.to_non_dataflow import rename_vars

    s = relax.TensorStructInfo((2,), "float32")
    a, b = relax.DataflowVar("a", s), relax.DataflowVar("b", s)
    a2 = relax.Var("a", s)
    tup = relax.Tuple([a, b, relax.const(np.ones(2, "float32"))])
    tup._checked_type = relax.TupleStructInfo([s, s, s])
    call = relax.Call(relax.ExternFunc("f"), [GlobalVar("k"), tup, tup, relax.ShapeExpr([2])])
    call._checked_type = s
    assert rename_vars(call, {b: b}) is call
    flat = rename_vars(call, {a: a2})
    walked = rename_vars(relax.TupleGetItem(call, 0), {a: a2}).tuple_value
    for got in (flat, walked):
        assert got is not call and got._checked_type is s
        assert got.args[0] is call.args[0] and got.args[3] is call.args[3]
        assert got.args[1] is got.args[2] and got.args[1]._checked_type is tup._checked_type
        assert [id(f) for f in got.args[1].fields] == [id(a2), id(b), id(tup.fields[2])]
