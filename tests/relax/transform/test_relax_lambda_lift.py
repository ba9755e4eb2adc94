"""relax.transform.LambdaLift: naming, plain lambdas, closures, recursion."""

import numpy as np
import pytest
from relax_pass_util import T, assert_equal, assert_same_results, has_op

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax import transform as rt
from minitvm.relax.transform.normalize import normalize_function


def _lambda(params, body_fn, ret):
    bb = relax.BlockBuilder()
    bb.begin_binding_block()
    out = body_fn(bb)
    block = bb.end_block()
    return relax.Function(params, relax.SeqExpr([block] if block.bindings else [], out), ret)


def _main(params, fn, name="main", mod=None):
    bb = relax.BlockBuilder(mod)
    with bb.function(name, params):
        bb.emit_func_output(fn(bb))
    return bb.get()


def test_plain_lambda_becomes_a_private_global():
    x = relax.Var("x", T(2, 3))
    p = relax.Var("p", T(2, 3))
    inner = _lambda([p], lambda bb: bb.emit(R.exp(p)), T(2, 3))

    def before(bb):
        f = bb.emit(inner, "inner")
        return bb.emit(relax.Call(f, [x]))

    mod = _main([x], before)
    after = rt.LambdaLift()(mod)
    assert sorted(g.name_hint for g in after.functions) == ["main", "main_inner"]
    lifted = after["main_inner"]
    assert lifted.attrs is None or lifted.attrs.get("global_symbol") is None
    p2 = relax.Var("p", T(2, 3))
    assert_equal(lifted, normalize_function(_lambda([p2], lambda bb: bb.emit(R.exp(p2)),
                                                    T(2, 3))))
    (binding,) = after["main"].body.blocks[0].bindings
    assert isinstance(binding.value.op, tvm.ir.GlobalVar)
    assert binding.value.op.name_hint == "main_inner"
    arr = np.random.rand(2, 3).astype("float32")
    assert_same_results(mod, after, "main", arr)


def test_names_avoid_existing_globals_and_nest():
    x = relax.Var("x", T(2))
    p = relax.Var("p", T(2))
    q = relax.Var("q", T(2))
    innermost = _lambda([q], lambda bb: bb.emit(R.exp(q)), T(2))

    def outer_body(bb):
        g = bb.emit(innermost, "inner")
        return bb.emit(relax.Call(g, [p]))

    outer = _lambda([p], outer_body, T(2))

    def before(bb):
        f = bb.emit(outer, "outer")
        return bb.emit(relax.Call(f, [x]))

    mod = _main([x], before)
    y = relax.Var("y", T(2))
    mod = _main([y], lambda bb: bb.emit(R.exp(y)), "main_inner", mod)
    after = rt.LambdaLift()(mod)
    names = sorted(g.name_hint for g in after.functions)
    assert names == ["main", "main_inner", "main_outer", "main_outer_inner"]
    lifted_outer = after["main_outer"]
    (call,) = lifted_outer.body.blocks[0].bindings
    assert call.value.op.name_hint == "main_outer_inner"


def test_lambda_with_global_symbol_keeps_it():
    x = relax.Var("x", T(2))
    p = relax.Var("p", T(2))
    inner = _lambda([p], lambda bb: bb.emit(R.exp(p)), T(2)).with_attr("global_symbol",
                                                                        "exported")

    def before(bb):
        f = bb.emit(inner, "inner")
        return bb.emit(relax.Call(f, [x]))

    after = rt.LambdaLift()(_main([x], before))
    assert sorted(g.name_hint for g in after.functions) == ["exported", "main"]

    y = relax.Var("y", T(2))
    clash = _main([y], lambda bb: bb.emit(R.exp(y)), "exported", _main([x], before))
    with pytest.raises(ValueError, match="already contains a GlobalVar with this name"):
        rt.LambdaLift()(clash)


def test_recursive_lambda_calls_its_global():
    x = relax.Var("x", T(2))
    p = relax.Var("p", T(2))
    fvar = relax.Var("f", relax.FuncStructInfo([T(2)], T(2)))
    rec = relax.Function([p], relax.SeqExpr([], relax.Call(fvar, [p])), T(2))
    rec = normalize_function(rec)

    def before(bb):
        bb.emit_normalized(relax.VarBinding(fvar, rec))
        return bb.emit(relax.Call(fvar, [x]))

    after = rt.LambdaLift()(_main([x], before))
    lifted = after["main_f"]
    (binding,) = lifted.body.blocks[0].bindings
    assert isinstance(binding.value.op, tvm.ir.GlobalVar)
    assert binding.value.op.name_hint == "main_f"


@pytest.mark.skipif(not has_op("relax.make_closure"),
                    reason="relax.make_closure / invoke_closure are not registered yet "
                           "(minitvm/relax/op)")
def test_closure_captures_free_variables():
    x = relax.Var("x", T(2, 3))
    y = relax.Var("y", T(2, 3))
    p = relax.Var("p", T(2, 3))
    inner = _lambda([p], lambda bb: bb.emit(R.add(p, y)), T(2, 3))

    def before(bb):
        f = bb.emit(inner, "inner")
        return bb.emit(relax.Call(f, [x]))

    mod = _main([x, y], before)
    after = rt.LambdaLift()(mod)
    lifted = after["main_inner"]
    assert [v.name_hint for v in lifted.params] == ["p", "y"]
    make, invoke = after["main"].body.blocks[0].bindings
    assert make.value.op.name == "relax.make_closure"
    assert invoke.value.op.name in ("relax.invoke_pure_closure", "relax.invoke_closure")
    a, b = (np.random.rand(2, 3).astype("float32") for _ in range(2))
    assert_same_results(mod, after, "main", a, b)


def test_module_without_lambdas_is_unchanged():
    x = relax.Var("x", T(2))
    mod = _main([x], lambda bb: bb.emit(R.exp(x)))
    after = rt.LambdaLift()(mod)
    assert after["main"] is mod["main"]
