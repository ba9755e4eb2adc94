"""Reductions along a contiguous axis of at least ``2 * REDUCE_ACCUMULATORS`` vectors keep that
many independent vector accumulators (``schedule.lower.reduce_nest``): blocks of vectors, the
vectors left over into the first accumulator, then one fold of them all. Numerics against numpy
on static and symbolic extents, in Relay and Relax; NaN and -inf in every accumulator and in
the leftover vectors; the accumulator's width in the lowered PrimFunc."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay, tir
from minitvm.contrib import graph_executor
from minitvm.schedule import lower as sched_lower
from minitvm.schedule.common import lanes
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

NACC = sched_lower.REDUCE_ACCUMULATORS
L = lanes("float32")


def _relay_lib(shape, make):
    x = relay.var("x", shape=shape)
    mod = tvm.IRModule.from_expr(relay.Function([x], make(x)))
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="llvm")


def _relay_run(lib, xv):
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", xv)
    g.run()
    return g.get_output(0).numpy()


def _acc_widths(lib) -> list[int]:
    out = []
    for k in lib.get_lib().kernels.values():
        if k.prim_func is not None:
            out += [int(s.buffer.shape[0]) for s in walk_stmts(k.prim_func.body)
                    if isinstance(s, S.DeclBuffer) and s.buffer.name == "acc"]
    return out


REDUCERS = {
    "sum": (relay.sum, np.sum),
    "max": (relay.max, np.max),
    "min": (relay.min, np.min),
    "mean": (relay.mean, np.mean),
}

# (shape, axes) with 16 lanes: vectors per output 49 (blocks and leftovers), 64 (blocks only),
# 8 (two blocks), 7 (one accumulator), blocks, leftovers and a scalar tail, 2100 floats over
# two trailing axes (flattened)
SHAPES = [
    ((1, 6, 28, 28), (2, 3)),
    ((2, 3, 32, 32), (2, 3)),
    ((5, 128), (1,)),
    ((5, 112), (1,)),
    ((3, 2 * NACC * L + 3 * L + 5), (1,)),
    ((4, 7, 300), (1, 2)),
]


@pytest.mark.parametrize("kind", list(REDUCERS))
@pytest.mark.parametrize("shape, axes", SHAPES)
def test_relay_matches_numpy(kind, shape, axes, rng):
    rop, nop = REDUCERS[kind]
    xv = rng.standard_normal(shape).astype("float32")
    lib = _relay_lib(shape, lambda x: rop(x, axis=axes))
    want = nop(xv.astype("float64"), axis=axes)
    np.testing.assert_allclose(_relay_run(lib, xv), want, rtol=2e-5, atol=2e-5)


def test_accumulator_width_follows_the_vector_count():
    many = _relay_lib((2, 4 * L * NACC), lambda x: relay.max(x, axis=1))
    few = _relay_lib((2, (2 * NACC - 1) * L), lambda x: relay.max(x, axis=1))
    assert _acc_widths(many) == [NACC * L]
    assert _acc_widths(few) == [L]


@pytest.mark.parametrize("kind", ["max", "min"])
def test_nan_and_inf_reach_the_result_from_every_accumulator(kind, rng):
    rop, nop = REDUCERS[kind]
    n = 3 * NACC * L + 2 * L + 3  # three blocks, two leftover vectors, a scalar tail
    rows = NACC + 4
    xv = rng.standard_normal((rows, n)).astype("float32")
    for a in range(NACC):  # a NaN in each accumulator's vectors, one per row
        xv[a, L * NACC + a * L + 5] = np.nan
    xv[NACC, 3 * NACC * L + L + 1] = np.nan  # in a leftover vector
    xv[NACC + 1, n - 1] = np.nan  # in the scalar tail
    inf = np.inf if kind == "max" else -np.inf
    xv[NACC + 2, 2 * L + 7] = inf  # the extreme, not NaN
    xv[NACC + 3, :] = -inf  # a row of the identity: stays infinite
    lib = _relay_lib(xv.shape, lambda x: rop(x, axis=1))
    out = _relay_run(lib, xv)
    assert np.isnan(out[: NACC + 2]).all()
    np.testing.assert_array_equal(out[NACC + 2:], nop(xv[NACC + 2:], axis=1))


# ------------------------------------------------------------------------------------ Relax
def _relax_vm(make, shape_sinfo):
    x = relax.Var("x", relax.TensorStructInfo(shape_sinfo, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(make(x))
        bb.emit_func_output(gv)
    return relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())


@pytest.mark.parametrize("kind", ["sum", "max", "min", "mean"])
def test_relax_symbolic_extent(kind, rng):
    """A symbolic reduction length: the block count and the leftovers are run-time values."""
    n = tir.Var("n", "int64")
    fn = getattr(relax.op, kind)
    vm = _relax_vm(lambda x: fn(x, axis=[1]), [3, n])
    for length in (5, L * 2 * NACC - 1, L * 2 * NACC, 1000):
        xv = rng.standard_normal((3, length)).astype("float32")
        got = vm["main"](tvm.nd.array(xv)).numpy()
        want = getattr(np, kind)(xv.astype("float64"), axis=1)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_relax_static_max_over_trailing_plane(rng):
    vm = _relax_vm(lambda x: relax.op.max(x, axis=[2, 3]), [1, 16, 28, 28])
    xv = rng.standard_normal((1, 16, 28, 28)).astype("float32")
    xv[0, 3, 27, 27] = np.nan
    got = vm["main"](tvm.nd.array(xv)).numpy()
    np.testing.assert_array_equal(got, xv.max(axis=(2, 3)))
