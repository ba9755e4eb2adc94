"""relax.transform.FoldConstant (numpy references of the shared topi library)."""

import numpy as np
from relax_pass_util import T, assert_equal, assert_same_results

import minitvm as tvm
from minitvm import relax
from minitvm.instrument import PassTimingInstrument
from minitvm.relax import op as R
from minitvm.relax import transform as rt
from minitvm.relax.transform.fold_constant import fold_constant


def _build(params, fn):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        bb.emit_func_output(fn(bb))
    return bb.get()


def test_fold_chain_of_constant_calls():
    a = np.random.rand(2, 3).astype("float32")
    b = np.random.rand(2, 3).astype("float32")
    x = relax.Var("x", T(2, 3))

    def before(bb):
        with bb.dataflow():
            ca = bb.emit(relax.const(a))
            lv0 = bb.emit(R.add(ca, relax.const(b)))
            lv1 = bb.emit(R.exp(lv0))
            lv2 = bb.emit(R.multiply(lv1, x))
            gv = bb.emit_output(lv2)
        return gv

    x2 = relax.Var("x", T(2, 3))
    folded = relax.const(np.exp(a + b).astype("float32"))

    def expected(bb):
        with bb.dataflow():
            lv2 = bb.emit(R.multiply(folded, x2))
            gv = bb.emit_output(lv2)
        return gv

    mod = _build([x], before)
    timing = PassTimingInstrument()
    with tvm.transform.PassContext(instruments=[timing]):
        after = rt.FoldConstant()(mod)
        report = PassTimingInstrument.render()
    assert "calls folded" in report
    got = after["main"].body.blocks[0].bindings[0].value.args[0]
    np.testing.assert_allclose(got.data.numpy(), folded.data.numpy(), rtol=1e-6)
    assert_equal(after, _build([x2], expected))
    arr = np.random.rand(2, 3).astype("float32")
    assert_same_results(mod, after, "main", arr)


def test_whole_result_folds_to_a_constant():
    a = np.arange(6, dtype="float32").reshape(2, 3)

    def before(bb):
        with bb.dataflow():
            lv = bb.emit(R.sum(relax.const(a), axis=[1]))
            gv = bb.emit_output(R.multiply(lv, lv))
        return gv

    after = rt.FoldConstant()(_build([], before))["main"]
    assert after.body.blocks == ()
    assert isinstance(after.body.body, relax.Constant)
    np.testing.assert_allclose(after.body.body.data.numpy(), np.square(a.sum(axis=1)))


def test_not_folded_outside_dataflow_or_with_variable_arguments():
    a = np.ones((2, 3), "float32")
    x = relax.Var("x", T(2, 3))

    def before(bb):
        lv = bb.emit(R.add(relax.const(a), relax.const(a)))  # not in a dataflow block
        with bb.dataflow():
            gv = bb.emit_output(R.add(lv, x))
        return gv

    mod = _build([x], before)
    after = rt.FoldConstant()(mod)
    assert after["main"] is mod["main"]


def test_nothing_to_fold_gives_the_function_back_without_its_unused_bindings():
    # no constant, no shape value, no call of constants only: the folder's walk is skipped,
    # the unused bindings are still removed
    x = relax.Var("x", T(2, 3))

    def before(unused: bool):
        def body(bb):
            with bb.dataflow():
                lv0 = bb.emit(R.exp(x))
                if unused:
                    bb.emit(R.add(lv0, x))
                gv = bb.emit_output(R.multiply(lv0, x))
            return gv
        return _build([x], body)["main"]

    func = before(False)
    assert fold_constant(func) == (func, 0)
    out, n = fold_constant(before(True))
    assert n == 0
    assert [b.value.op.name for b in out.body.blocks[0].bindings] == ["relax.exp",
                                                                       "relax.multiply"]


def test_constant_variables_are_propagated_and_dropped():
    a = np.ones((3,), "float32")
    x = relax.Var("x", T(3))

    def before(bb):
        c = bb.emit(relax.const(a))  # outside a dataflow block: propagated all the same
        with bb.dataflow():
            gv = bb.emit_output(R.add(x, c))
        return gv

    after = rt.FoldConstant()(_build([x], before))["main"]
    (block,) = after.body.blocks
    (binding,) = block.bindings
    assert isinstance(binding.value.args[1], relax.Constant)


def test_renamed_reference_and_matmul():
    a = np.random.rand(2, 3).astype("float32")
    b = np.random.rand(3, 4).astype("float32")

    def before(bb):
        with bb.dataflow():
            t = bb.emit(R.permute_dims(relax.const(a)))
            m = bb.emit(R.matmul(relax.const(b.T), relax.const(a.T)))
            gv = bb.emit_output(relax.Tuple([t, m]))
        return gv

    after = rt.FoldConstant()(_build([], before))["main"]
    (block,) = after.body.blocks
    (binding,) = block.bindings
    t, m = binding.value.fields
    np.testing.assert_allclose(t.data.numpy(), a.T)
    np.testing.assert_allclose(m.data.numpy(), b.T @ a.T, rtol=1e-5)


def test_ops_without_a_reference_are_left_alone():
    a = np.ones((4,), "float32")

    def before(bb):
        with bb.dataflow():
            gv = bb.emit_output(R.flip(relax.const(a), 0))  # (no numpy reference here)
        return gv

    mod = _build([], before)
    after = rt.FoldConstant()(mod)
    assert after["main"] is mod["main"]


def test_reshape_and_broadcast_of_constants_to_static_shapes_fold():
    """A quantized model's per-channel bias (``reshape(scale) * bias`` reshaped to [1, C, 1,
    1]) folds to one constant, so the conv it follows can take the add as its epilogue; a
    reshape to a symbolic shape does not fold."""
    s = np.array([0.5], "float32")
    b = np.arange(4, dtype="float32")
    x = relax.Var("x", T(1, 4, 2, 2))

    def before(bb):
        with bb.dataflow():
            lv0 = bb.emit(R.reshape(relax.const(s), [1]))
            lv1 = bb.emit(R.multiply(relax.const(b), lv0))
            lv2 = bb.emit(R.reshape(lv1, [1, 4, 1, 1]))
            lv3 = bb.emit(R.broadcast_to(lv2, [1, 4, 2, 2]))
            gv = bb.emit_output(R.add(x, lv3))
        return gv

    out = rt.FoldConstant()(_build([x], before))
    calls = [b.value for blk in out["main"].body.blocks for b in blk.bindings
             if isinstance(b.value, relax.Call)]
    assert [c.op.name for c in calls] == ["relax.add"]
    folded = calls[0].args[1]
    assert isinstance(folded, relax.Constant)
    np.testing.assert_array_equal(folded.data.numpy(),
                                  np.broadcast_to((b * 0.5).reshape(1, 4, 1, 1), (1, 4, 2, 2)))

    n = tvm.tir.Var("n", "int64")
    y = relax.Var("y", relax.TensorStructInfo((n, 4), "float32"))

    def symbolic(bb):
        with bb.dataflow():
            gv = bb.emit_output(R.add(y, R.broadcast_to(relax.const(b), relax.ShapeExpr([n, 4]))))
        return gv

    kept = rt.FoldConstant()(_build([y], symbolic))
    names = [b.value.op.name for blk in kept["main"].body.blocks for b in blk.bindings
             if isinstance(b.value, relax.Call)]
    assert "relax.broadcast_to" in names


def test_clip_with_scalar_bounds_and_axis_lists_fold():
    """A ternary weight's quantization (BitNet's ``round(w * s).clamp(-1, 1)``, the bounds
    ``R.prim_value`` operands) and ``expand_dims`` / ``squeeze`` with Relax's axis lists fold,
    so the matmul behind them reads a constant weight (it was quantized on every call)."""
    w = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")
    x = relax.Var("x", T(2, 4))

    def before(bb):
        with bb.dataflow():
            q = bb.emit(R.clip(R.round(R.multiply(relax.const(w), relax.const(
                np.float32(2.0)))), relax.PrimValue(-1.0), relax.PrimValue(1.0)))
            e = bb.emit(R.squeeze(R.expand_dims(q, [0, 2]), [0, 2]))
            gv = bb.emit_output(R.matmul(x, e))
        return gv

    mod = _build([x], before)
    out = rt.FoldConstant()(mod)
    calls = [b.value for blk in out["main"].body.blocks for b in blk.bindings
             if isinstance(b.value, relax.Call)]
    assert [c.op.name for c in calls] == ["relax.matmul"]
    np.testing.assert_array_equal(calls[0].args[1].data.numpy(),
                                  np.clip(np.round(w * 2), -1, 1))
    assert_same_results(mod, out, "main", np.random.rand(2, 4).astype("float32"))


def test_clip_with_a_symbolic_bound_is_left_alone():
    n = tvm.tir.Var("n", "int64")
    x = relax.Var("x", T(3))

    def before(bb):
        with bb.dataflow():
            c = bb.emit(R.clip(relax.const(np.arange(3, dtype="float32")), relax.PrimValue(0.5),
                               relax.PrimValue(n)))
            gv = bb.emit_output(R.add(x, c))
        return gv

    mod = _build([x], before)
    calls = [b.value for blk in rt.FoldConstant()(mod)["main"].body.blocks
             for b in blk.bindings if isinstance(b.value, relax.Call)]
    assert [c.op.name for c in calls] == ["relax.clip", "relax.add"]
