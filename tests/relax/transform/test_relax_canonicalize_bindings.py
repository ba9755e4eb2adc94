"""relax.transform.CanonicalizeBindings: trivial bindings, dataflow outputs, known tuples and
constants, match_cast refinements, symbolic variables."""

import numpy as np
import pytest
from relax_pass_util import T, assert_equal, assert_same_results

from minitvm import relax, tir
from minitvm.relax import op as R
from minitvm.relax import transform as rt


def _build(name, params, fn):
    bb = relax.BlockBuilder()
    with bb.function(name, params):
        out = fn(bb)
        bb.emit_func_output(out)
    return bb.get()


def _emit(bb, var_name, value, dataflow=False):
    """Bind ``value`` to a variable named ``var_name`` (to keep trivial bindings, which
    bb.emit would also create, under a chosen name)."""
    return bb.emit(value, var_name)


def test_trivial_chain_is_removed():
    x = relax.Var("x", T(2, 3))

    def before(bb):
        y = bb.emit(x, "y")
        z = bb.emit(y, "z")
        return bb.emit(R.add(z, z), "w")

    x2 = relax.Var("x", T(2, 3))

    def expected(bb):
        return bb.emit(R.add(x2, x2), "w")

    mod = _build("main", [x], before)
    after = rt.CanonicalizeBindings()(mod)
    assert_equal(after, _build("main", [x2], expected))
    a = np.random.rand(2, 3).astype("float32")
    assert_same_results(mod, after, "main", a)


def test_returned_trivial_binding_is_unwrapped():
    x = relax.Var("x", T(2, 3))
    mod = _build("main", [x], lambda bb: bb.emit(bb.emit(x, "y"), "z"))
    after = rt.CanonicalizeBindings()(mod)
    assert after["main"].body.blocks == ()
    assert after["main"].body.body is after["main"].params[0]


def test_output_of_dataflow_block_binds_the_value_directly():
    x = relax.Var("x", T(2, 3))

    def before(bb):
        with bb.dataflow():
            lv = bb.emit(R.add(x, x))
            gv = bb.emit_output(lv)
        return gv

    x2 = relax.Var("x", T(2, 3))

    def expected(bb):
        with bb.dataflow():
            gv = bb.emit_output(R.add(x2, x2))
        return gv

    after = rt.CanonicalizeBindings()(_build("main", [x], before))
    assert_equal(after, _build("main", [x2], expected))


def test_dataflow_var_used_in_block_is_replaced_by_the_output_var():
    x = relax.Var("x", T(2, 3))

    def before(bb):
        with bb.dataflow():
            lv = bb.emit(R.add(x, x))
            lv1 = bb.emit(R.exp(lv))
            gv = bb.emit_output(lv)
            gv1 = bb.emit_output(lv1)
        return relax.Tuple([gv, gv1])

    x2 = relax.Var("x", T(2, 3))

    def expected(bb):
        with bb.dataflow():
            gv = bb.emit_output(R.add(x2, x2))
            gv1 = bb.emit_output(R.exp(gv))
        return relax.Tuple([gv, gv1])

    mod = _build("main", [x], before)
    after = rt.CanonicalizeBindings()(mod)
    assert_equal(after, _build("main", [x2], expected))
    a = np.random.rand(2, 3).astype("float32")
    assert_same_results(mod, after, "main", a)


def test_trivial_match_cast_is_removed_refining_one_is_kept():
    x = relax.Var("x", T(2, 3))
    w = relax.Var("w", relax.TensorStructInfo(ndim=2, dtype="float32"))

    def before(bb):
        y = bb.match_cast(x, T(2, 3))
        v = bb.match_cast(w, T(2, 3))
        return bb.emit(R.add(y, v))

    x2 = relax.Var("x", T(2, 3))
    w2 = relax.Var("w", relax.TensorStructInfo(ndim=2, dtype="float32"))

    def expected(bb):
        v = bb.match_cast(w2, T(2, 3))
        return bb.emit(R.add(x2, v))

    after = rt.CanonicalizeBindings()(_build("main", [x, w], before))
    assert_equal(after, _build("main", [x2, w2], expected))


def test_known_tuple_field_and_constants():
    x = relax.Var("x", T(2, 3))
    y = relax.Var("y", T(2, 3))

    def before(bb):
        t = bb.emit(relax.Tuple([x, y]), "t")
        a = bb.emit(relax.TupleGetItem(t, 1), "a")
        c = bb.emit(relax.const(np.ones((2, 3), "float32")), "c")
        return bb.emit(R.add(a, c), "b")

    x2, y2 = relax.Var("x", T(2, 3)), relax.Var("y", T(2, 3))
    const = relax.const(np.ones((2, 3), "float32"))

    def expected(bb):
        bb.emit(relax.Tuple([x2, y2]), "t")
        bb.emit(const, "c")
        return bb.emit(R.add(y2, const), "b")

    mod = _build("main", [x, y], before)
    after = rt.CanonicalizeBindings()(mod)
    assert_equal(after, _build("main", [x2, y2], expected))
    a, b = (np.random.rand(2, 3).astype("float32") for _ in range(2))
    assert_same_results(mod, after, "main", a, b)


def test_var_used_only_inside_its_dataflow_block_becomes_a_dataflow_var():
    x = relax.Var("x", T(2, 3))
    lv = relax.Var("lv", T(2, 3))
    gv = relax.Var("gv", T(2, 3))
    func = relax.Function([x], relax.SeqExpr([relax.DataflowBlock([
        relax.VarBinding(lv, R.exp(x)), relax.VarBinding(gv, R.add(lv, x))])], gv), T(2, 3))
    from minitvm.relax.transform.normalize import normalize_function

    func = normalize_function(func)
    import minitvm as tvm

    after = rt.CanonicalizeBindings()(tvm.IRModule({"main": func}))["main"]
    first, second = after.body.blocks[0].bindings
    assert isinstance(first.var, relax.DataflowVar) and first.var.name_hint == "lv"
    assert not isinstance(second.var, relax.DataflowVar)
    assert second.value.args[0] is first.var


def test_symbolic_variable_pinned_by_match_cast():
    n = tir.Var("n", "int64")
    x = relax.Var("x", T(16))

    def before(bb):
        y = bb.match_cast(x, T(n))
        return bb.emit(R.exp(y))

    x2 = relax.Var("x", T(16))

    def expected(bb):
        return bb.emit(R.exp(x2))

    mod = _build("main", [x], before)
    assert mod["main"].ret_struct_info.dims()[0] is n
    after = rt.CanonicalizeBindings()(mod)
    assert_equal(after, _build("main", [x2], expected))
    a = np.random.rand(16).astype("float32")
    assert_same_results(mod, after, "main", a)


def test_symbolic_variable_replaced_by_another():
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    x = relax.Var("x", T(m))

    def before(bb):
        y = bb.match_cast(x, T(n))
        return bb.emit(R.add(y, y))

    m2 = tir.Var("m", "int64")
    x2 = relax.Var("x", T(m2))

    def expected(bb):
        return bb.emit(R.add(x2, x2))

    after = rt.CanonicalizeBindings()(_build("main", [x], before))
    assert_equal(after, _build("main", [x2], expected))


def test_inconsistent_match_casts_are_an_error():
    n = tir.Var("n", "int64")
    x, w = relax.Var("x", T(16)), relax.Var("w", T(8))

    def before(bb):
        bb.match_cast(x, T(n))
        return bb.match_cast(w, T(n))

    with pytest.raises(ValueError, match="MatchCast statements must be consistent"):
        rt.CanonicalizeBindings()(_build("main", [x, w], before))


def test_nested_function_is_canonicalized():
    x = relax.Var("x", T(2, 3))
    p = relax.Var("p", T(2, 3))
    q = relax.Var("q", T(2, 3))
    r = relax.Var("r", T(2, 3))
    inner = relax.Function([p], relax.SeqExpr([relax.BindingBlock([
        relax.VarBinding(q, p), relax.VarBinding(r, R.exp(q))])], r), T(2, 3))

    def before(bb):
        f = bb.emit(inner, "f")
        return bb.emit(relax.Call(f, [x]))

    after = rt.CanonicalizeBindings()(_build("main", [x], before))
    lifted = after["main"].body.blocks[0].bindings[0].value
    (binding,) = lifted.body.blocks[0].bindings
    assert binding.value.args[0] is lifted.params[0]


def test_unchanged_function_is_kept():
    x = relax.Var("x", T(2, 3))

    def before(bb):
        with bb.dataflow():
            lv = bb.emit(R.exp(x))
            gv = bb.emit_output(R.add(lv, x))
        return gv

    mod = _build("main", [x], before)
    assert rt.CanonicalizeBindings()(mod)["main"] is mod["main"]
