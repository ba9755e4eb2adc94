"""Reductions (sum/max/min, matmul, fused epilogues) compiled from TE against numpy."""

import numpy as np
import pytest
from codegen_helpers import build_te

from minitvm import te, tir


@pytest.mark.parametrize("reducer,ref", [(te.sum, np.sum), (te.max, np.max),
                                         (te.min, np.min)])
@pytest.mark.parametrize("shape", [(1, 1), (3, 17), (13, 64)])
def test_row_reductions(reducer, ref, shape, rng):
    A = te.placeholder(shape, name="A")
    k = te.reduce_axis((0, shape[1]), name="k")
    B = te.compute((shape[0],), lambda i: reducer(A[i, k], axis=k), name="B")
    f = build_te([A, B])
    a = rng.standard_normal(shape).astype("float32")
    b = np.empty(shape[0], "float32")
    f(a, b)
    np.testing.assert_allclose(b, ref(a, axis=1), rtol=1e-5, atol=1e-5)


def test_two_axis_reduction_with_where(rng):
    A = te.placeholder((4, 5, 6), name="A")
    j = te.reduce_axis((0, 5), name="j")
    k = te.reduce_axis((0, 6), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, j, k], axis=[j, k], where=j < k), name="B")
    f = build_te([A, B])
    a = rng.standard_normal((4, 5, 6)).astype("float32")
    b = np.empty(4, "float32")
    f(a, b)
    mask = np.arange(5)[:, None] < np.arange(6)[None, :]
    np.testing.assert_allclose(b, (a * mask).sum(axis=(1, 2)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 7, 64])
def test_symbolic_matmul_bias_relu(n, rng):
    N = te.var("n", "int64")
    i64 = lambda v: tir.const(v, "int64")  # noqa: E731
    x = te.placeholder((N, i64(37)), name="x")
    w = te.placeholder((i64(37), i64(20)), name="w")
    b = te.placeholder((i64(20),), name="b")
    k = te.reduce_axis((i64(0), i64(37)), name="k")
    mm = te.compute((N, i64(20)), lambda i, j: te.sum(x[i, k] * w[k, j], axis=k), name="mm")
    add = te.compute((N, i64(20)), lambda i, j: mm[i, j] + b[j], name="add")
    out = te.compute((N, i64(20)), lambda i, j: te.max(add[i, j], tir.const(0.0)), name="relu")
    f = build_te([x, w, b, out])
    xa = rng.standard_normal((n, 37)).astype("float32")
    wa = rng.standard_normal((37, 20)).astype("float32")
    ba = rng.standard_normal(20).astype("float32")
    o = np.empty((n, 20), "float32")
    f(xa, wa, ba, o)
    np.testing.assert_allclose(o, np.maximum(xa @ wa + ba, 0), rtol=1e-4, atol=1e-4)


def test_softmax_like_pipeline(rng):
    A = te.placeholder((5, 9), name="A")
    k1 = te.reduce_axis((0, 9), name="k1")
    mx = te.compute((5,), lambda i: te.max(A[i, k1], axis=k1), name="mx")
    ex = te.compute((5, 9), lambda i, j: te.exp(A[i, j] - mx[i]), name="ex")
    k2 = te.reduce_axis((0, 9), name="k2")
    sm = te.compute((5,), lambda i: te.sum(ex[i, k2], axis=k2), name="sm")
    out = te.compute((5, 9), lambda i, j: ex[i, j] / sm[i], name="out")
    f = build_te([A, out])
    a = rng.standard_normal((5, 9)).astype("float32")
    o = np.empty_like(a)
    f(a, o)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(o, e / e.sum(1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("shape", [(1, 1), (3, 17), (5, 768), (2, 1031)])
def test_reassociated_sum_vectorizes_and_stays_accurate(shape, rng):
    from minitvm import codegen

    A = te.placeholder(shape, name="A")
    k = te.reduce_axis((0, shape[1]), name="k")
    B = te.compute((shape[0],), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="B",
                   attrs={"reduce_reassociate": True})
    mod = codegen.build(te.create_prim_func([A, B]), auto_parallel=False)
    a = rng.standard_normal(shape).astype("float32")
    b = np.empty(shape[0], "float32")
    mod["main"](a, b)
    ref = (a.astype("float64") ** 2).sum(axis=1)
    np.testing.assert_allclose(b, ref, rtol=1e-5)
    if shape[1] >= 64:
        assert "reassoc" in mod.get_source()
        assert "x float>" in mod["main"]._compiled.optimized_ir  # vector partial sums


def test_reassociate_for_annotation_on_hand_written_loop(rng):
    from minitvm import codegen

    A = tir.decl_buffer((1000,), "float32", "A")
    S = tir.decl_buffer((1,), "float32", "S")
    i = tir.Var("i", "int32")
    body = tir.SeqStmt([tir.BufferStore(S, 0.0, [0]), tir.For(
        i, 0, 1000, tir.ForKind.SERIAL, tir.BufferStore(S, S[0] + A[i], [0]),
        annotations={"reduce_reassociate": True})])
    mod = codegen.build(tir.PrimFunc([A, S], body, attrs={"tir.noalias": True}))
    a = rng.standard_normal(1000).astype("float32")
    s = np.empty(1, "float32")
    mod["main"](a, s)
    np.testing.assert_allclose(s[0], a.astype("float64").sum(), rtol=1e-5, atol=1e-4)
    assert any("fadd" in ln and "reassoc" in ln for ln in mod.get_source().splitlines())
