"""Let bindings inside a vectorized loop: the bound value is a vector shared by the stores after
it (the depthwise schedule's row blocks load each input row vector once this way)."""

import numpy as np
import pytest

from minitvm import codegen, tir


def _var(name, dtype="int32"):
    return tir.Var(name, dtype)


@pytest.mark.parametrize("lanes", [8, 16])
def test_let_bound_vector_shared_by_two_stores(lanes, rng):
    A = tir.decl_buffer((2 * lanes + 2,), "float32", "A")
    B = tir.decl_buffer((2, lanes), "float32", "B")
    j = _var("j")
    u, v = _var("u", "float32"), _var("v", "float32")
    body = tir.For(j, 0, lanes, tir.ForKind.VECTORIZED, tir.LetStmt(u, A[j + 1], tir.LetStmt(
        v, A[j + lanes] * 2.0, tir.SeqStmt([tir.BufferStore(B, u * v, [0, j]),
                                            tir.BufferStore(B, u + v + A[j], [1, j])]))))
    f = tir.PrimFunc([A, B], body, attrs={"tir.noalias": True})
    mod = codegen.build(f)
    a = rng.standard_normal(2 * lanes + 2).astype("float32")
    b = np.empty((2, lanes), "float32")
    mod["main"](a, b)
    u_, v_ = a[1:lanes + 1], a[lanes:2 * lanes] * 2
    np.testing.assert_allclose(b[0], u_ * v_, rtol=1e-6)
    np.testing.assert_allclose(b[1], u_ + v_ + a[:lanes], rtol=1e-6)
    ir = mod.get_source()
    # vectorized, not a scalar loop: whole-vector loads of A and stores of B
    assert f"load <{lanes} x float>" in ir and f"store <{lanes} x float>" in ir


def test_let_of_the_loop_index_and_a_scalar(rng):
    # a let bound to an index expression (a ramp) and one not depending on the loop variable
    A = tir.decl_buffer((24,), "float32", "A")
    B = tir.decl_buffer((8,), "float32", "B")
    j, k = _var("j"), _var("k")
    s = _var("s", "float32")
    body = tir.For(j, 0, 8, tir.ForKind.VECTORIZED, tir.LetStmt(k, j * 2 + 1, tir.LetStmt(
        s, A[0], tir.BufferStore(B, A[k] + s, [j]))))
    f = tir.PrimFunc([A, B], body, attrs={"tir.noalias": True})
    a = rng.standard_normal(24).astype("float32")
    b = np.empty(8, "float32")
    codegen.build(f)["main"](a, b)
    np.testing.assert_allclose(b, a[1:17:2] + a[0], rtol=1e-6)
