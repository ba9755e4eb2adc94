"""Loop kinds (parallel, vectorized, unrolled), guarded loads, lets and allocations."""

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.codegen.llvm.vector_pieces import needs_pieces, vector_pieces
from minitvm.runtime import threadpool


def _var(name, dtype="int32"):
    return tir.Var(name, dtype)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_parallel_loop_covers_every_iteration(threads):
    n = _var("n")
    A = tir.decl_buffer((n,), "int32", "A")
    i = _var("i")
    f = tir.PrimFunc([A], tir.For(i, 0, n, tir.ForKind.PARALLEL,
                                  tir.BufferStore(A, A[i] + i, [i])))
    k = codegen.build(f)["main"]
    old = threadpool.get_num_threads()
    threadpool.set_num_threads(threads)
    try:
        for size in (0, 1, 2, 7, 1000):
            a = np.ones(size, "int32")
            k(a)
            np.testing.assert_array_equal(a, 1 + np.arange(size))
    finally:
        threadpool.set_num_threads(old)


@pytest.mark.parametrize("lanes", [4, 16, 32, 7])
def test_vectorized_loop_contiguous_strided_and_broadcast(lanes, rng):
    A = tir.decl_buffer((3, lanes * 2), "float32", "A")
    B = tir.decl_buffer((3, lanes), "float32", "B")
    i, j = _var("i"), _var("j")
    body = tir.For(i, 0, 3, 0, tir.For(j, 0, lanes, tir.ForKind.VECTORIZED, tir.BufferStore(
        B, A[i, j * 2] * A[i, j + 1] + A[i, 0], [i, j])))
    f = tir.PrimFunc([A, B], body, attrs={"tir.noalias": True})
    mod = codegen.build(f)
    a = rng.standard_normal((3, lanes * 2)).astype("float32")
    b = np.empty((3, lanes), "float32")
    mod["main"](a, b)
    np.testing.assert_allclose(b, a[:, ::2] * a[:, 1:lanes + 1] + a[:, :1], rtol=1e-6)
    # (7 lanes: vectors of 4 and 2 and a scalar lane, llvm/vector_pieces)
    for piece in vector_pieces(lanes) if needs_pieces(lanes) else [lanes]:
        assert piece == 1 or f"<{piece} x float>" in mod.get_source()


def test_unrolled_loop_and_let(rng):
    A = tir.decl_buffer((10,), "float32", "A")
    i = _var("i")
    x = _var("x", "float32")
    body = tir.For(i, 1, 8, tir.ForKind.UNROLLED, tir.LetStmt(
        x, A[i] * 2.0, tir.BufferStore(A, x + tir.Let(_var("y", "float32"), x, x), [i])))
    f = tir.PrimFunc([A], body)
    a = rng.standard_normal(10).astype("float32")
    expect = a.copy()
    expect[1:9] = a[1:9] * 4
    codegen.build(f)["main"](a)
    np.testing.assert_allclose(a, expect, rtol=1e-6)


def test_if_then_else_guards_out_of_bounds_load():
    n = _var("n")
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n + 2,), "float32", "B")
    i = _var("i")
    val = tir.if_then_else(tir.all(i >= 1, i <= n), A[i - 1], tir.const(0.0, "float32"))
    f = tir.PrimFunc([A, B], tir.For(i, 0, n + 2, 0, tir.BufferStore(B, val, [i])))
    a = np.arange(1, 6, dtype="float32")
    b = np.empty(7, "float32")
    codegen.build(f)["main"](a, b)
    np.testing.assert_array_equal(b, [0, 1, 2, 3, 4, 5, 0])


def test_allocate_large_and_small_scratch(rng):
    n = _var("n")
    A = tir.decl_buffer((n,), "float32", "A")
    for size in (16, None):
        tmp = tir.decl_buffer((size or n,), "float32", "tmp")
        i = _var("i")
        ext = size or n
        body = tir.Allocate(tmp.data, "float32", [ext], True, tir.DeclBuffer(tmp, tir.SeqStmt([
            tir.For(i, 0, ext, 0, tir.BufferStore(tmp, A[i] + 1.0, [i])),
            tir.For(i, 0, ext, 0, tir.BufferStore(A, tmp[ext - 1 - i], [i])),
        ])))
        f = tir.PrimFunc([A], body)
        a = rng.standard_normal(16).astype("float32")
        expect = (a + 1)[::-1].copy()
        codegen.build(f)["main"](a)
        np.testing.assert_allclose(a, expect)


def test_strided_buffer_argument(rng):
    s0 = _var("s0")
    A = tir.decl_buffer((4, 3), "float32", "A", strides=[s0, 1])
    B = tir.decl_buffer((4, 3), "float32", "B")
    i, j = _var("i"), _var("j")
    f = tir.PrimFunc([A, B], tir.For(i, 0, 4, 0, tir.For(j, 0, 3, 0, tir.BufferStore(
        B, A[i, j], [i, j]))))
    big = rng.standard_normal((4, 10)).astype("float32")
    b = np.empty((4, 3), "float32")
    codegen.build(f)["main"](big[:, :3], b)
    np.testing.assert_array_equal(b, big[:, :3])
