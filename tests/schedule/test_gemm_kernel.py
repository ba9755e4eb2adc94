"""The register-blocked TIR GEMM against numpy: odd shapes, dense layout, epilogues."""

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.schedule import gemm_kernel

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
    f = codegen.build(gemm_kernel.gemm(M, N, K, transpose_b=transpose_b, bias=bias, relu=relu))["gemm"]
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((N, K) if transpose_b else (K, N), dtype=np.float32)
    bv = rng.standard_normal(N, dtype=np.float32) if bias else None
    c = np.empty((M, N), np.float32)
    f(*[x for x in (a, b, bv) if x is not None], c)
    np.testing.assert_allclose(c, _ref(a, b, bv, relu, transpose_b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m", [1, 5, 8, 70])
def test_gemm_symbolic_rows(m, rng):
    M = tir.Var("m", "int64")
    f = codegen.build(gemm_kernel.gemm(M, 40, 24, transpose_b=True, bias=True))["gemm"]
    a = rng.standard_normal((m, 24), dtype=np.float32)
    w = rng.standard_normal((40, 24), dtype=np.float32)
    bias = rng.standard_normal(40, dtype=np.float32)
    c = np.empty((m, 40), np.float32)
    f(a, w, bias, c)
    np.testing.assert_allclose(c, a @ w.T + bias, rtol=1e-4, atol=1e-4)


def test_gemm_prepacked_weight(rng):
    w = rng.standard_normal((50, 16), dtype=np.float32)
    packed = gemm_kernel.pack_b(w, nr=32, transpose_b=True)
    assert packed.shape == (2, 16, 32)
    f = codegen.build(gemm_kernel.gemm(9, 50, 16, prepacked_b=True, relu=True))["gemm"]
    a = rng.standard_normal((9, 16), dtype=np.float32)
    c = np.empty((9, 50), np.float32)
    f(a, packed, c)
    np.testing.assert_allclose(c, np.maximum(a @ w.T, 0), rtol=1e-4, atol=1e-4)


def test_gemm_other_blockings(rng):
    f = codegen.build(gemm_kernel.gemm(50, 70, 33, mr=6, nr=16, mc=12))["gemm"]
    a = rng.standard_normal((50, 33), dtype=np.float32)
    b = rng.standard_normal((33, 70), dtype=np.float32)
    c = np.empty((50, 70), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_gemm_uses_vector_fma():
    mod = codegen.build(gemm_kernel.gemm(64, 64, 64))
    asm = mod.get_source("asm")
    assert "vfmadd" in asm


@pytest.mark.parametrize("N,K", [(1, 1), (7, 3), (128, 784), (10, 128), (33, 9), (97, 131)])
@pytest.mark.parametrize("prepacked", [False, True])
def test_gemv_one_row(N, K, prepacked, rng):
    f = codegen.build(gemm_kernel.gemm(1, N, K, transpose_b=True, bias=True, relu=True,
                               prepacked_b=prepacked))["gemm"]
    a = rng.standard_normal((1, K), dtype=np.float32)
    w = rng.standard_normal((N, K), dtype=np.float32)
    bias = rng.standard_normal(N, dtype=np.float32)
    c = np.empty((1, N), np.float32)
    f(a, gemm_kernel.pack_b(w, 32, True) if prepacked else w, bias, c)
    np.testing.assert_allclose(c, np.maximum(a @ w.T + bias, 0), rtol=1e-4, atol=1e-4)


def test_small_gemm_runs_serial_large_gemm_parallel():
    small = gemm_kernel.gemm(1, 128, 784, transpose_b=True).script()
    assert "T.parallel" not in small
    large = gemm_kernel.gemm(64, 128, 784, transpose_b=True).script()
    assert "T.parallel" in large and "parallel_min_extent" in large


@pytest.mark.parametrize("batch,M,N,K", [(1, 1, 1, 1), (3, 5, 7, 9), (2, 17, 33, 31),
                                         (12, 128, 128, 64), (4, 9, 64, 128)])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_batch_gemm(batch, M, N, K, transpose_b, rng):
    f = codegen.build(gemm_kernel.batch_gemm(batch, M, N, K, transpose_b=transpose_b))["batch_gemm"]
    a = rng.standard_normal((batch, M, K), dtype=np.float32)
    b = rng.standard_normal((batch, N, K) if transpose_b else (batch, K, N), dtype=np.float32)
    c = np.empty((batch, M, N), np.float32)
    f(a, b, c)
    ref = a @ (b.transpose(0, 2, 1) if transpose_b else b)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


def test_batch_gemm_broadcast_prepacked_epilogue_and_symbolic(rng):
    bsz = tir.Var("b", "int32")
    f = codegen.build(gemm_kernel.batch_gemm(bsz, 6, 40, 24, transpose_b=True, bias=True, relu=True,
                                     broadcast_b=True, prepacked_b=True))["batch_gemm"]
    w = rng.standard_normal((40, 24), dtype=np.float32)
    bias = rng.standard_normal(40, dtype=np.float32)
    for nb in (1, 5):
        a = rng.standard_normal((nb, 6, 24), dtype=np.float32)
        c = np.empty((nb, 6, 40), np.float32)
        f(a, gemm_kernel.pack_b(w, 32, True), bias, c)
        np.testing.assert_allclose(c, np.maximum(a @ w.T + bias, 0), rtol=1e-4, atol=1e-4)
    g = codegen.build(gemm_kernel.batch_gemm(3, 5, 8, 4, broadcast_a=True))["batch_gemm"]
    a = rng.standard_normal((5, 4), dtype=np.float32)
    b = rng.standard_normal((3, 4, 8), dtype=np.float32)
    c = np.empty((3, 5, 8), np.float32)
    g(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n,nr", [(64, 16), (50, 16), (7, 32), (96, 32)])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_pack_b_matches_its_layout(rng, n, nr, transpose_b):
    """packed[j, kk, r] = B[kk, j*nr + r], zero past N (B = w.T for a dense weight w)."""
    k = 9
    mat = rng.standard_normal((k, n), dtype=np.float32)
    p = gemm_kernel.pack_b(mat.T.copy() if transpose_b else mat, nr, transpose_b)
    panels = -(-n // nr)
    want = np.zeros((k, panels * nr), np.float32)
    want[:, :n] = mat
    assert p.shape == (panels, k, nr) and p.flags.c_contiguous
    np.testing.assert_array_equal(p, want.reshape(k, panels, nr).transpose(1, 0, 2))


def test_pack_b_batched_and_errors():
    b = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5)
    p = gemm_kernel.pack_b(b, nr=4)
    assert p.shape == (2, 2, 3, 4)
    np.testing.assert_array_equal(p[1, 1, :, :1], b[1][:, 4:5])
    with pytest.raises(ValueError, match="expects a matrix"):
        gemm_kernel.pack_b(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="nr must be positive"):
        gemm_kernel.pack_b(np.zeros((2, 2), np.float32), nr=0)


@pytest.mark.parametrize("kwargs,msg", [
    (dict(M=0, N=4, K=4), "M must be a positive int"),
    (dict(M=4, N=0, K=4), "N must be a positive int"),
    (dict(M=4, N=4, K=-1), "K must be a positive int"),
    (dict(M=4, N=4, K=4, nr=128), "exceeds the widest vector"),
    (dict(M=4, N=4, K=4, dtype="int32"), "only float dtypes"),
    (dict(M=tir.Var("m", "float32"), N=4, K=4), "integer Var"),
])
def test_gemm_bad_arguments(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        gemm_kernel.gemm(**kwargs)


def test_batch_gemm_bad_batch():
    with pytest.raises(ValueError, match="batch must be a positive int"):
        gemm_kernel.batch_gemm(0, 4, 4, 4)


@pytest.mark.parametrize("rows,n", [(1, 40), (5, 40), (5, 33)])
def test_partial_panel_of_a_static_n_stores_its_columns_only(rows, n, rng):
    """The last panel of a static N stores its ``N % nr`` columns, unguarded: one vector (8
    columns), or an unrolled store of one column (a rolled one-column loop would index the
    accumulator by its variable, keeping the tile in memory). Its 32 guarded scalar stores a
    row were most of the LLVM IR of an odd-shaped GEMM (seconds of compile time)."""
    k = 8  # one full 32-wide panel and one of n - 32 columns
    prim = gemm_kernel.gemm(rows, n, k, transpose_b=True, bias=True, relu=True, mr=4, nr=32,
                            prepacked_b=True)
    text = prim.script()
    assert f"jj < {n}" not in text
    assert ("for jj in T.vectorized(8)" if n == 40 else "for jj in T.unroll(1)") in text
    f = codegen.build(prim)["gemm"]
    a = rng.standard_normal((rows, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    bias = rng.standard_normal(n, dtype=np.float32)
    c = np.full((rows, n), np.nan, np.float32)
    f(a, gemm_kernel.pack_b(w, 32, True), bias, c)
    np.testing.assert_allclose(c, np.maximum(a @ w.T + bias, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("static_m", [True, False])
def test_partial_panel_of_a_symbolic_n_guards_each_column(static_m, rng):
    """With a symbolic N each of the partial panel's 32 columns is guarded by ``col < N``:
    unrolled for a static M (a rolled loop would keep the tile in memory), a loop for a
    symbolic M (its row tail is a chain of ``mr - 1`` tiles, and unrolled stores multiplied a
    dynamic-batch classifier's IR)."""
    m, n, k = 5, 40, 8
    bld = gemm_kernel.GemmBuilder(None, m if static_m else tir.Var("m", "int32"),
                                  tir.Var("n", "int32"), k, True, False, False, "float32", 4,
                                  32, 64, True, False, False, gemm_kernel.PARALLEL_MIN_WORK)
    prim = bld.build("gemm")
    lines = prim.script().splitlines()
    guarded = [i for i, line in enumerate(lines) if "+ jj < n:" in line]
    assert guarded
    for i in guarded:
        assert ("for jj in T.unroll(32)" if static_m else "for jj in range(32)") in lines[i - 1]
    f = codegen.build(prim)["gemm"]
    a = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    f(a, gemm_kernel.pack_b(w, 32, True), c)
    np.testing.assert_allclose(c, a @ w.T, rtol=1e-4, atol=1e-4)
