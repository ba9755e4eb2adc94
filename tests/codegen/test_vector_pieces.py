"""Vectorized loops of a non-power-of-two or over 64 lanes: emitted in power-of-two pieces
(llvm/vector_pieces), numpy's answer at every width, vector code (not one scalar a lane)."""

import re

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.codegen.build import ir_pipeline_level
from minitvm.codegen.llvm.stmt import MASKED_STORES
from minitvm.codegen.llvm.vector_pieces import (
    MAX_PIECEWISE_LANES,
    lane_wise,
    needs_pieces,
    vector_pieces,
)
from minitvm.runtime import jit

WIDTHS = [8, 16, 24, 32, 48, 64, 80, 128, 256]
ODD = [7, 49, 99]  # (pieces down to one lane)
ROWS = 4


def _vec(var, lanes, body, annotations=None):
    return tir.For(var, 0, lanes, tir.ForKind.VECTORIZED, body, annotations=annotations)


def _elementwise(w, dtype, fma=False):
    """``D[r, j] = A[r, j] * B[r, j] + C[r, j]`` (``fma``) or ``A + B``, j vectorized."""
    A, B, C, D = (tir.decl_buffer((ROWS, w), dtype, x) for x in "ABCD")
    r, j = tir.Var("r", "int32"), tir.Var("j", "int32")
    v = A[r, j] * B[r, j] + C[r, j] if fma else A[r, j] + B[r, j]
    return tir.PrimFunc([A, B, C, D], tir.For(r, 0, ROWS, 0,
                                              _vec(j, w, tir.BufferStore(D, v, [r, j]))))


def _column_sum(w, n=8):
    """``S[j] = sum_k A[k, j]`` accumulated in S, j vectorized inside the k loop."""
    A = tir.decl_buffer((n, w), "float32", "A")
    S = tir.decl_buffer((w,), "float32", "S")
    k, j, j0 = tir.Var("k", "int32"), tir.Var("j", "int32"), tir.Var("j0", "int32")
    init = _vec(j0, w, tir.BufferStore(S, tir.const(0.0, "float32"), [j0]))
    acc = tir.For(k, 0, n, 0, _vec(j, w, tir.BufferStore(S, S[j] + A[k, j], [j])))
    return tir.PrimFunc([A, S], tir.SeqStmt([init, acc]))


def _mac(w, p_n=3, kk=8):
    """``O[p, j] = sum_c X[p, c] * W[c, j]``: a conv-like multiply-accumulate, j vectorized."""
    X = tir.decl_buffer((p_n, kk), "float32", "X")
    W = tir.decl_buffer((kk, w), "float32", "W")
    O = tir.decl_buffer((p_n, w), "float32", "O")
    p, c, j, j0 = (tir.Var(x, "int32") for x in ("p", "c", "j", "j0"))
    init = _vec(j0, w, tir.BufferStore(O, tir.const(0.0, "float32"), [p, j0]))
    acc = tir.For(c, 0, kk, 0, _vec(j, w, tir.BufferStore(O, O[p, j] + X[p, c] * W[c, j],
                                                          [p, j])))
    return tir.PrimFunc([X, W, O], tir.For(p, 0, p_n, 0, tir.SeqStmt([init, acc])))


def test_pieces_are_powers_of_two_of_at_most_64_lanes():
    assert vector_pieces(48) == [32, 16]
    assert vector_pieces(24) == [16, 8]
    assert vector_pieces(80) == [64, 16]
    assert vector_pieces(256) == [64] * 4
    assert vector_pieces(164) == [64, 64, 32, 4]
    assert vector_pieces(7) == [4, 2, 1]
    assert [w for w in WIDTHS if needs_pieces(w)] == [24, 48, 80, 128, 256]


@pytest.mark.parametrize("w", WIDTHS)
@pytest.mark.parametrize("dtype", ["float32", "int8", "int32"])
def test_add(w, dtype, rng):
    f = codegen.build(_elementwise(w, dtype))["main"]
    if dtype == "float32":
        a, b, c = rng.standard_normal((3, ROWS, w)).astype(dtype)
    else:
        a, b, c = rng.integers(-128, 128, (3, ROWS, w)).astype(dtype)
    d = np.zeros_like(a)
    f(a, b, c, d)
    np.testing.assert_array_equal(d, a + b)  # (int8 wraps in both)


@pytest.mark.parametrize("w", WIDTHS)
def test_fma(w, rng):
    f = codegen.build(_elementwise(w, "float32", fma=True))["main"]
    a, b, c = rng.standard_normal((3, ROWS, w)).astype("float32")
    d = np.zeros_like(a)
    f(a, b, c, d)
    np.testing.assert_allclose(d, a * b + c, rtol=1e-6, atol=1e-6)  # (fused: one rounding)


@pytest.mark.parametrize("w", WIDTHS)
def test_column_sum(w, rng):
    f = codegen.build(_column_sum(w))["main"]
    a = rng.standard_normal((8, w)).astype("float32")
    s = np.full(w, np.nan, "float32")
    f(a, s)
    want = np.zeros(w, "float32")
    for row in a:  # (the kernel's order: row after row)
        want += row
    np.testing.assert_array_equal(s, want)


@pytest.mark.parametrize("w", WIDTHS + ODD)
def test_multiply_accumulate(w, rng):
    f = codegen.build(_mac(w))["main"]
    x = rng.standard_normal((3, 8)).astype("float32")
    wt = rng.standard_normal((8, w)).astype("float32")
    o = np.full((3, w), np.nan, "float32")
    f(x, wt, o)
    np.testing.assert_allclose(o, x @ wt, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("w", [48, 80, 256])
def test_wide_multiply_accumulate_is_vector_code(w):
    """The cliff: a 48-lane accumulator LLVM keeps in a loop phi was one scalar a lane (an
    insert per lane per iteration); over 64 lanes the loop was scalar. Now the source IR has
    only the pieces' vector types and the host code multiplies-adds whole registers."""
    func = _mac(w)
    ir_text = codegen.build(func).get_source("ll")
    types = set(re.findall(r"<(\d+) x float>", ir_text))
    assert types == {str(n) for n in vector_pieces(w)}, types
    asm = jit.assembly(ir_text, ir_pipeline_level(func, 3))
    reg = "zmm" if jit.host_has("avx512f") else "ymm" if jit.host_has("avx2") else "xmm"
    assert re.search(rf"vfmadd\w*ps\s.*%{reg}", asm) or re.search(rf"vmulps\s.*%{reg}", asm)
    assert "vinsertps" not in asm and not re.search(r"\bv(fmadd\w*|mul|add)ss\b", asm)


def test_statements_keep_whole_vector_order(rng):
    """Every piece of a statement is loaded before any is stored, and a statement is stored
    whole before the next: ``B[j] = 2 * A[j]; C[j] = B[w-1-j]; B[j] = B[w-1-j]`` gives the
    reversed rows of a whole 48-lane vector."""
    w = 48
    A, B, C = (tir.decl_buffer((w,), "float32", x) for x in "ABC")
    j = tir.Var("j", "int32")
    rev = tir.const(w - 1, "int32") - j
    body = tir.SeqStmt([tir.BufferStore(B, A[j] * tir.const(2.0, "float32"), [j]),
                        tir.BufferStore(C, B[rev], [j]),
                        tir.BufferStore(B, B[rev], [j])])
    mod = codegen.build(tir.PrimFunc([A, B, C], _vec(j, w, body)))
    assert "<32 x float>" in mod.get_source("ll")
    a = rng.standard_normal(w).astype("float32")
    b, c = np.zeros(w, "float32"), np.zeros(w, "float32")
    mod["main"](a, b, c)
    np.testing.assert_array_equal(c, (2 * a)[::-1])
    np.testing.assert_array_equal(b, (2 * a)[::-1])


@pytest.mark.parametrize("w", [80, 81])
def test_let_and_masked_store_in_pieces(w, rng):
    """A let shared by two stores and a masked store, 80 lanes (pieces of 64 and 16) and 81
    (its last lane a scalar store under a branch)."""
    A, B, C = (tir.decl_buffer((w,), "float32", x) for x in "ABC")
    m = tir.Var("m", "int32")
    j, t = tir.Var("j", "int32"), tir.Var("t", "float32")
    body = tir.LetStmt(t, A[j] * A[j], tir.SeqStmt([
        tir.BufferStore(B, t + tir.const(1.0, "float32"), [j]),
        tir.IfThenElse(j < m, tir.BufferStore(C, t, [j]))]))
    mod = codegen.build(tir.PrimFunc([A, B, C, m], _vec(j, w, body, {MASKED_STORES: True})))
    text = mod.get_source("ll")
    assert "llvm.masked.store.v64f32" in text and "llvm.masked.store.v16f32" in text
    a = rng.standard_normal(w).astype("float32")
    b, c = np.zeros(w, "float32"), np.full(w, -7.0, "float32")
    mod["main"](a, b, c, 70)
    np.testing.assert_array_equal(b, a * a + 1)
    np.testing.assert_array_equal(c, np.where(np.arange(w) < 70, a * a, -7.0).astype("float32"))


def test_lane_wise_bodies():
    """Split only bodies of lane-wise operations: not one with an expression of lanes of its
    own (a 4-lane broadcast) or a call whose lanes mix (an external function's)."""
    A, B = (tir.decl_buffer((48,), "float32", x) for x in "AB")
    j = tir.Var("j", "int32")
    one = tir.const(1.0, "float32")
    assert lane_wise(tir.BufferStore(B, tir.exp(A[j]) + one, [j]))
    assert not lane_wise(tir.BufferStore(B, A[j] + tir.Broadcast(one, 4), [j]))
    ext = tir.call_pure_extern("float32", "expf", A[j])
    assert not lane_wise(tir.BufferStore(B, ext, [j]))


def test_wider_than_the_piecewise_limit_stays_a_serial_loop(rng):
    w = MAX_PIECEWISE_LANES * 2
    mod = codegen.build(_elementwise(w, "float32"))
    assert not re.search(r"<\d+ x float>", mod.get_source("ll"))
    a, b, c = rng.standard_normal((3, ROWS, w)).astype("float32")
    d = np.zeros_like(a)
    mod["main"](a, b, c, d)
    np.testing.assert_array_equal(d, a + b)


def test_lane_wise_survives_a_deep_expression():
    """``lane_wise`` walks a 100,000-deep expression chain without recursion."""
    A = tir.decl_buffer((16,), "float32", "A")
    j = tir.Var("j", "int32")
    e = A[j]
    for _ in range(100_000):
        e = e + tir.const(1.0, "float32")
    assert lane_wise(tir.BufferStore(A, e, [j]))


def test_lane_wise_survives_a_deep_let_chain():
    """... and a 100,000-deep chain of lets."""
    A = tir.decl_buffer((16,), "float32", "A")
    j = tir.Var("j", "int32")
    body = tir.BufferStore(A, A[j], [j])
    for k in range(100_000):
        body = tir.LetStmt(tir.Var(f"t{k}", "int32"), j, body)
    assert lane_wise(body)
