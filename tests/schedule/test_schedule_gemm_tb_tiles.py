"""schedule/gemm_tb.py's in-place ``C = A @ W.T`` kernel with each ISA's register tile (4x4 of
16 lanes for AVX-512, 4x3 of 8 for AVX2), whatever the host: odd and symbolic row counts, column
and K tails, against the as-written PrimFunc."""

import numpy as np
import pytest

from minitvm import te, tir
from minitvm.codegen.build import build
from minitvm.schedule import gemm_tb, optimize_prim_func
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def c(v: int):
    return tir.IntImm("int64", v)


def _matmul_tb(rows, k: int, n: int):
    x = te.placeholder((rows, c(k)), name="x")
    w = te.placeholder((c(n), c(k)), name="w")
    r = te.reduce_axis((c(0), c(k)), name="k")
    return [x, w, te.compute((rows, c(n)), lambda i, j: te.sum(x[i, r] * w[j, r], axis=r),
                             name="matmul")]


def _nt_acc_lanes(func) -> set:
    return {int(s.extents[0]) for s in walk_stmts(func.body)
            if isinstance(s, S.Allocate) and s.buffer_var.name.startswith("nt_acc")}


@pytest.mark.parametrize("isa", sorted(gemm_tb.TILES))
@pytest.mark.parametrize("k,n", [(37, 13), (64, 10), (5, 7), (300, 9)])
def test_tile_of_each_isa_matches_reference(monkeypatch, isa, k, n):
    rows, cols, lanes = gemm_tb.TILES[isa]
    monkeypatch.setattr(gemm_tb, "tile_shape", lambda: (rows, cols, lanes))
    m = tir.Var("m", "int64")
    args = _matmul_tb(m, k, n)
    f = te.create_prim_func(args)
    g = optimize_prim_func(f)
    # the in-place kernel, with accumulators of the tile's shape (a 1x1 tail tile included)
    if k >= lanes:
        assert _nt_acc_lanes(g) >= {rows * cols * lanes}, _nt_acc_lanes(g)
    ref, opt = build(f)["main"], build(g)["main"]
    rng = np.random.default_rng(k * n)
    for mv in (1, rows - 1, rows + 2, 4 * rows + 3):
        a = [rng.standard_normal((mv, k)).astype("float32"),
             rng.standard_normal((n, k)).astype("float32"), np.zeros((mv, n), "float32")]
        b = [v.copy() for v in a]
        ref(*a)
        opt(*b)
        np.testing.assert_allclose(b[-1], a[-1], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(b[-1], a[0] @ a[1].T, rtol=1e-4, atol=1e-4)


def test_host_tile_and_row_limit_follow_the_vector_isa():
    assert gemm_tb.vector_isa() in gemm_tb.TILES
    assert gemm_tb.tile_shape() == gemm_tb.TILES[gemm_tb.vector_isa()]
    assert gemm_tb.MAX_ROWS == gemm_tb.MAX_ROWS_BY_ISA[gemm_tb.vector_isa()]


@pytest.mark.parametrize("isa,n,left", [("avx2", 14, 2), ("avx512", 11, 3), ("avx2", 13, 1)])
def test_columns_past_the_last_block_share_one_rolled_loop(monkeypatch, isa, n, left):
    """The ``n % cols`` last columns: one serial loop over them (one copy of the row loops),
    not a copy per column; a single one stays a straight copy. Same numbers as written."""
    rows, cols, lanes = gemm_tb.TILES[isa]
    monkeypatch.setattr(gemm_tb, "tile_shape", lambda: (rows, cols, lanes))
    k = 2 * lanes + 3
    stmt = gemm_tb.emit(tir.Var("m", "int64"), n, k, *[tir.decl_buffer(s, "float32", nm) for
                                                        s, nm in (((5, k), "a"), ((n, k), "w"),
                                                                  ((5, n), "c"))])
    tails = [s for s in walk_stmts(stmt) if isinstance(s, S.For)
             and s.loop_var.name.startswith("j") and not s.loop_var.name.startswith("jb")]
    assert [int(s.extent.value) for s in tails] == ([left] if left > 1 else [])
    blocks = [s for s in walk_stmts(stmt) if isinstance(s, S.For)
              and s.loop_var.name.startswith("ib")]
    assert len(blocks) == 2  # the column blocks' row tiles and the last columns'
    if isa != gemm_tb.vector_isa() or left < 2:
        return  # (the numbers: of a rolled loop on the host's own tile; the rest above)
    f = te.create_prim_func(_matmul_tb(tir.Var("m", "int64"), k, n))
    opt = build(optimize_prim_func(f))["main"]
    rng = np.random.default_rng(n)
    a = [rng.standard_normal((rows + 1, k)).astype("float32"),
         rng.standard_normal((n, k)).astype("float32"), np.zeros((rows + 1, n), "float32")]
    opt(*a)
    np.testing.assert_allclose(a[-1], a[0] @ a[1].T, rtol=1e-4, atol=1e-4)
