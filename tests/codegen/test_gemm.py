"""The register-blocked TIR GEMM against numpy: odd shapes, dense layout, epilogues."""

import numpy as np
import pytest

from minitvm import codegen, tir

SHAPES = [(1, 1, 1), (1, 100, 37), (7, 13, 5), (8, 32, 16), (17, 33, 31), (29, 64, 3),
          (65, 97, 129)]


def _ref(a, b, bias, relu, transpose_b):
    out = a @ (b.T if transpose_b else b)
    if bias is not None:
        out = out + bias
    return np.maximum(out, 0) if relu else out


@pytest.mark.parametrize("M,N,K", SHAPES)
@pytest.mark.parametrize("transpose_b,bias,relu", [(False, False, False), (True, True, True),
                                                   (True, False, False)])
def test_gemm_static(M, N, K, transpose_b, bias, relu, rng):
    f = codegen.build(tir.gemm(M, N, K, transpose_b=transpose_b, bias=bias, relu=relu))["gemm"]
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((N, K) if transpose_b else (K, N), dtype=np.float32)
    bv = rng.standard_normal(N, dtype=np.float32) if bias else None
    c = np.empty((M, N), np.float32)
    f(*[x for x in (a, b, bv) if x is not None], c)
    np.testing.assert_allclose(c, _ref(a, b, bv, relu, transpose_b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m", [1, 5, 8, 70])
def test_gemm_symbolic_rows(m, rng):
    M = tir.Var("m", "int64")
    f = codegen.build(tir.gemm(M, 40, 24, transpose_b=True, bias=True))["gemm"]
    a = rng.standard_normal((m, 24), dtype=np.float32)
    w = rng.standard_normal((40, 24), dtype=np.float32)
    bias = rng.standard_normal(40, dtype=np.float32)
    c = np.empty((m, 40), np.float32)
    f(a, w, bias, c)
    np.testing.assert_allclose(c, a @ w.T + bias, rtol=1e-4, atol=1e-4)


def test_gemm_prepacked_weight(rng):
    w = rng.standard_normal((50, 16), dtype=np.float32)
    packed = tir.pack_b(w, nr=32, transpose_b=True)
    assert packed.shape == (2, 16, 32)
    f = codegen.build(tir.gemm(9, 50, 16, prepacked_b=True, relu=True))["gemm"]
    a = rng.standard_normal((9, 16), dtype=np.float32)
    c = np.empty((9, 50), np.float32)
    f(a, packed, c)
    np.testing.assert_allclose(c, np.maximum(a @ w.T, 0), rtol=1e-4, atol=1e-4)


def test_gemm_other_blockings(rng):
    f = codegen.build(tir.gemm(50, 70, 33, mr=6, nr=16, mc=12))["gemm"]
    a = rng.standard_normal((50, 33), dtype=np.float32)
    b = rng.standard_normal((33, 70), dtype=np.float32)
    c = np.empty((50, 70), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_gemm_uses_vector_fma():
    mod = codegen.build(tir.gemm(64, 64, 64))
    asm = mod.get_source("asm")
    assert "vfmadd" in asm
