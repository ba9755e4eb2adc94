"""Relay's softmax over the last axis on the row kernel of ``schedule/softmax_rows.py`` (its
compute is four stages: max, sum of exp, reciprocal, ``exp(x - max) * reciprocal``): one
parallel loop over rows, ``exp`` once per element, numerically equal to numpy for rows shorter
than a vector, of whole vectors and with a tail (the last vector overlapping the one before),
and with the row kernel switched off. Other axes keep the stage lowering. Reductions fold their
vector lanes by halves (``common.fold_lanes``)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, te
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.schedule import lower, softmax_rows
from minitvm.schedule.common import lanes, vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts

ROWS = softmax_rows.ROW_SOFTMAX[vector_isa()]


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _build(shape, axis=-1, fast=False):
    x = relay.var("x", shape=shape)
    op = relay.nn.fast_softmax if fast else relay.nn.softmax
    mod = tvm.IRModule.from_expr(relay.Function([x], op(x, axis=axis)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    return lib


def _run(lib, x):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.run()
    return m.get_output(0).numpy()


def _prim(lib):
    (kernel,) = lib.get_lib().kernels.values()
    return kernel.prim_func


def _exp_calls(func) -> int:
    return sum(isinstance(e, E.Call) and "exp" in str(getattr(e.op, "name", e.op))
               for s in walk_stmts(func.body) if isinstance(s, S.BufferStore)
               for e in post_order(s.value))


def _row_kernel(func) -> bool:
    return any(isinstance(s, S.DeclBuffer) and s.buffer.name == "softmax_y"
               for s in walk_stmts(func.body))


@pytest.fixture
def fresh_kernels():
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


@pytest.mark.skipif(not ROWS, reason="the row kernel is off for this ISA (ROW_SOFTMAX)")
def test_relay_softmax_is_one_row_loop_with_exp_once_per_element(fresh_kernels):
    g = _prim(_build((2, 5, 197)))
    assert _row_kernel(g)
    assert sum(isinstance(s, S.For) and s.kind == S.ForKind.PARALLEL
               for s in walk_stmts(g.body)) <= 1
    # the vector body and the last (overlapping) vector; no scalar tail computes exp
    assert _exp_calls(g) == 2
    assert not any(isinstance(s, S.For) and s.kind == S.ForKind.SERIAL and
                   isinstance(s.extent, E.IntImm) and s.extent.value == 197 % lanes("float32")
                   for s in walk_stmts(g.body))


@pytest.mark.parametrize("rows", [True, False])
@pytest.mark.parametrize("shape", [(3, 1), (2, 7), (4, 16), (2, 3, 19), (1, 3, 197, 197),
                                   (5, 48)])
def test_relay_softmax_matches_numpy(shape, rows, monkeypatch, fresh_kernels):
    monkeypatch.setitem(softmax_rows.ROW_SOFTMAX, vector_isa(), rows)
    lib = _build(shape)
    assert _row_kernel(_prim(lib)) == rows
    x = (4 * np.random.default_rng(len(shape)).standard_normal(shape)).astype("float32")
    np.testing.assert_allclose(_run(lib, x), _softmax(x.astype("float64")), rtol=1e-5,
                               atol=1e-7)


def test_relay_softmax_extreme_values_match_numpy(fresh_kernels):
    x = np.zeros((3, 37), "float32")
    x[0, 5] = 80.0  # exp would overflow without the max
    x[1, :] = -1e30
    x[1, 36] = 0.0
    x[2, 30:] = 50.0  # the largest values in the overlapping last vector only
    np.testing.assert_allclose(_run(_build(x.shape), x), _softmax(x.astype("float64")),
                               rtol=1e-5, atol=1e-7)


def test_relay_softmax_other_axis_and_fast_softmax_keep_the_stages(fresh_kernels):
    lib = _build((2, 19, 5), axis=1)
    assert not _row_kernel(_prim(lib))
    x = np.random.default_rng(1).standard_normal((2, 19, 5)).astype("float32")
    np.testing.assert_allclose(_run(lib, x), _softmax(x.astype("float64"), 1), rtol=1e-5,
                               atol=1e-7)
    fast = _build((2, 37), fast=True)  # fast_exp is not an exp call: the stages
    assert not _row_kernel(_prim(fast))
    y = np.random.default_rng(2).standard_normal((2, 37)).astype("float32")
    np.testing.assert_allclose(_run(fast, y), _softmax(y.astype("float64")), rtol=1e-4,
                               atol=1e-6)


def test_reduction_folds_lanes_by_halves():
    nl = lanes("float32")
    x = te.placeholder((6, 100), "float32", "x")
    k = te.reduce_axis((0, 100), "k")
    s = te.compute((6,), lambda i: te.sum(x[i, k], axis=k), name="s")
    f, _ = lower.lower_te([x], [s], "rowsum")
    widths = sorted(int(st.extent.value) for st in walk_stmts(f.body)
                    if isinstance(st, S.For) and st.kind == S.ForKind.VECTORIZED)
    halves = [nl >> j for j in range(1, nl.bit_length() - 1)]  # 8, 4, 2 for 16 lanes
    assert all(h in widths for h in halves)
    # no serial loop over the lanes remains
    assert not any(isinstance(st, S.For) and st.kind == S.ForKind.SERIAL and
                   isinstance(st.extent, E.IntImm) and st.extent.value == nl
                   for st in walk_stmts(f.body))
