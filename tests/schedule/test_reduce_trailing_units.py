"""A short reduction whose output keeps unit dimensions last (``keepdims``: argmax's max over the
classes, ``[n, anchors, 1]``) is vectorized across the innermost non-unit output axis
(``schedule.lower.reduce_nest``, ``_trailing_units``), not run one output at a time with its
accumulator in memory: the lowered loop nest, numerics against numpy (NaN, -inf, ties) in Relay
and through Relax's argmax over a dynamic batch."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay, tir
from minitvm.contrib import graph_executor
from minitvm.relax import op as R
from minitvm.schedule import lower as sched_lower
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def test_trailing_units_counted():
    assert sched_lower._trailing_units((4, 192, 1)) == 1
    assert sched_lower._trailing_units((4, 1, 1)) == 2
    assert sched_lower._trailing_units((1, 1)) == 1  # one dimension is always left
    assert sched_lower._trailing_units((192, 20)) == 0
    assert sched_lower._trailing_units(()) == 0


def _data(shape, rng):
    x = (rng.integers(-8, 8, shape) / 2).astype("float32")  # ties
    x.flat[::37] = np.nan
    x.flat[5::41] = -np.inf
    return x


@pytest.mark.parametrize("shape,axis", [((3, 192, 20), 2), ((2, 40, 7, 1), 2),
                                        ((1, 13, 20), 2)])
@pytest.mark.parametrize("op", ["max", "min", "sum"])
def test_keepdims_reduction_is_vectorized(shape, axis, op):
    x = relay.var("x", shape=shape)
    y = getattr(relay, op)(x, axis=axis, keepdims=True)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    xv = _data(shape, np.random.default_rng(0))
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", xv)
    g.run()
    got = g.get_output(0).numpy()
    want = getattr(np, op)(xv, axis=axis, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    if shape[axis - 1] >= 16:  # vectors across the axis before the reduced one
        loops = [s for k in lib.get_lib().kernels.values() if k.prim_func is not None
                 for s in walk_stmts(k.prim_func.body) if isinstance(s, S.For)]
        assert any(s.kind == S.ForKind.VECTORIZED for s in loops)


def test_relax_argmax_over_a_dynamic_batch():
    # Relax's argmax legalizes to a max kept as [n, rows, 1] and a first-position pick
    n = tir.Var("n", "int64")
    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorStructInfo((n, 192, 20), "float32"))
    with bb.function("main", [xv]):
        with bb.dataflow():
            gv = bb.emit_output(R.argmax(xv, axis=2))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for batch in (1, 3):
        x = _data((batch, 192, 20), np.random.default_rng(batch))
        x[np.isnan(x)] = 0.0  # (numpy's argmax takes the first NaN; compare on numbers)
        got = vm["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_array_equal(got, np.argmax(x, axis=2))
