"""Relax's legalized softmax (four blocks: max, exp, sum, divide) on the row kernel of
``schedule/softmax_rows.py``: one pass per row, ``exp`` once per element, numerically equal to
numpy on odd and symbolic shapes (the row kernel on AVX2 and AVX-512 alike: ``ROW_SOFTMAX``;
the stage lowering with it switched off); other softmax-like block chains keep the stage
lowering."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.codegen.build import build
from minitvm.relax.pipeline import get_pipeline
from minitvm.schedule import optimize_prim_func, softmax_rows
from minitvm.schedule.common import vector_isa
from minitvm.script.parser import from_source
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts

ROWS = softmax_rows.ROW_SOFTMAX[vector_isa()]

# a LegalizeOps-style softmax over the last axis of a (2, n, 37) tensor, n symbolic
SOFTMAX = """
@T.prim_func
def softmax(var_x: T.handle, var_out: T.handle):
    T.func_attr({"tir.noalias": T.bool(True)})
    n = T.int64()
    x = T.match_buffer(var_x, (T.int64(2), n, T.int64(37)))
    out = T.match_buffer(var_out, (T.int64(2), n, T.int64(37)))
    mx = T.alloc_buffer((T.int64(2), n, T.int64(1)))
    ex = T.alloc_buffer((T.int64(2), n, T.int64(37)))
    sm = T.alloc_buffer((T.int64(2), n, T.int64(1)))
    for a0, a1, a2, k in T.grid(T.int64(2), n, T.int64(1), T.int64(37)):
        with T.block("mx"):
            v0, v1, v2, vk = T.axis.remap("SSSR", [a0, a1, a2, k])
            with T.init():
                mx[v0, v1, v2] = T.float32("-inf")
            mx[v0, v1, v2] = T.max(mx[v0, v1, v2], x[v0, v1, vk])
    for a0, a1, a2 in T.grid(T.int64(2), n, T.int64(37)):
        with T.block("ex"):
            v0, v1, v2 = T.axis.remap("SSS", [a0, a1, a2])
            ex[v0, v1, v2] = T.exp(x[v0, v1, v2] - mx[v0, v1, T.int64(0)])
    for a0, a1, a2, k in T.grid(T.int64(2), n, T.int64(1), T.int64(37)):
        with T.block("sm"):
            v0, v1, v2, vk = T.axis.remap("SSSR", [a0, a1, a2, k])
            with T.init():
                sm[v0, v1, v2] = T.float32(0.0)
            sm[v0, v1, v2] = sm[v0, v1, v2] + ex[v0, v1, vk]
    for a0, a1, a2 in T.grid(T.int64(2), n, T.int64(37)):
        with T.block("out"):
            v0, v1, v2 = T.axis.remap("SSS", [a0, a1, a2])
            out[v0, v1, v2] = ex[v0, v1, v2] / sm[v0, v1, T.int64(0)]
"""


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _exp_calls(func) -> int:
    n = 0
    for s in walk_stmts(func.body):
        if isinstance(s, S.BufferStore):
            n += sum(isinstance(e, E.Call) and "exp" in str(getattr(e.op, "name", e.op))
                     for e in post_order(s.value))
    return n


def _parallel_loops(func) -> int:
    return sum(isinstance(s, S.For) and s.kind == S.ForKind.PARALLEL
               for s in walk_stmts(func.body))


@pytest.mark.skipif(not ROWS, reason="the row kernel is off for this ISA (ROW_SOFTMAX)")
def test_softmax_blocks_become_one_row_loop_with_one_exp():
    f = from_source(SOFTMAX)
    g = optimize_prim_func(f)
    # one loop over the rows; exp in the vector body and in the last, overlapping vector only
    assert _parallel_loops(g) == 1
    assert _exp_calls(g) == 2
    monkey = dict(softmax_rows.ROW_SOFTMAX)
    try:
        softmax_rows.ROW_SOFTMAX[vector_isa()] = False
        staged = optimize_prim_func(f)
    finally:
        softmax_rows.ROW_SOFTMAX.update(monkey)
    # the stage lowering computes exp in the sum and again in the divide; the sum's short window
    # (37, under lower.SMALL_REDUCE, its kept unit dim last) is vectorized across the rows, its
    # 37 taps a loop (reduction_loops.TAP_LOOP_MIN) with one exp in the vector body and one in
    # the scalar tail; the divide's rows of 37 are 2 x 16 lanes, a quarter vector of 4 and one
    # scalar (lower._split_row), one exp in each
    assert _exp_calls(staged) == 2 + 3


@pytest.mark.parametrize("rows", [True, False])
def test_softmax_prim_func_matches_numpy(rows, monkeypatch):
    monkeypatch.setitem(softmax_rows.ROW_SOFTMAX, vector_isa(), rows)
    fn = build(optimize_prim_func(from_source(SOFTMAX)))["softmax"]
    rng = np.random.default_rng(3)
    for n in (1, 4, 33):
        x = (3 * rng.standard_normal((2, n, 37))).astype("float32")
        out = np.zeros_like(x)
        fn(x, out)
        np.testing.assert_allclose(out, _softmax(x.astype("float64")), rtol=1e-5, atol=1e-7)


def test_softmax_with_extreme_values_matches_numpy():
    fn = build(optimize_prim_func(from_source(SOFTMAX)))["softmax"]
    x = np.zeros((2, 3, 37), "float32")
    x[0, 0, 5] = 80.0  # exp would overflow without the max
    x[1, 2, :] = -1e30
    x[1, 2, 36] = 0.0
    out = np.zeros_like(x)
    fn(x, out)
    np.testing.assert_allclose(out, _softmax(x.astype("float64")), rtol=1e-5, atol=1e-7)


def _relax_softmax(shape, axis):
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.softmax(x, axis=axis))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    return bb.get()


@pytest.mark.parametrize("width", [1, 7, 16, 19, 129])
@pytest.mark.parametrize("axis", [-1, 1])
def test_relax_softmax_symbolic_rows_match_numpy(width, axis):
    n = tir.Var("n", "int64")
    mod = _relax_softmax([n, 3, width], axis)
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(width)
    for rows in (1, 5, 40):
        x = (4 * rng.standard_normal((rows, 3, width))).astype("float32")
        got = vm["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_allclose(got, _softmax(x.astype("float64"), axis), rtol=1e-5,
                                   atol=1e-7)


@pytest.mark.skipif(not ROWS, reason="the row kernel is off for this ISA (ROW_SOFTMAX)")
def test_softmax_over_another_axis_keeps_the_stage_lowering():
    n = tir.Var("n", "int64")
    mod = get_pipeline("default_build")(_relax_softmax([n, 3, 19], 1))
    prims = [f for f in mod.functions.values() if isinstance(f, tir.PrimFunc)]
    assert prims
    for f in prims:
        g = optimize_prim_func(f)
        assert not any(isinstance(s, S.DeclBuffer) and s.buffer.name == "softmax_y"
                       for s in walk_stmts(g.body))
