"""AVX-512's packed GEMM: the 12 x 32 register tile (24 zmm accumulators, for two 512-bit FMA
ports), K blocks of 256, and the prefetch of the next piece of B by each panel's first row tile
(``PREFETCH_NEXT_PIECE``): where the prefetches go, numerics against numpy on shapes that run
every row tail of the 12-row tile, partial panels, partial panel groups and several K blocks
(the prefetch's wrap to the next block), one row block or several, and the inner loop's machine
code on an AVX-512 host."""

import re
import sys

import numpy as np
import pytest
from asm_loops import fma_loops
from gemm_cases import check_gemm
from schedule_isa import force_isa

from minitvm import codegen
from minitvm.codegen.llvm.codegen import CodeGenLLVM
from minitvm.runtime import jit
from minitvm.schedule import common, gemm_kernel
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.expr import Var
from minitvm.tir.stmt_functor import walk_stmts


@pytest.fixture(params=sorted(gemm_kernel.TILES))
def isa(request, monkeypatch):
    """Force the vector ISA the GEMM schedule sizes its tile, blocking and prefetch by (its
    per-host switches read that ISA's entry, not the host CPU's)."""
    force_isa(monkeypatch, request.param)
    return request.param


def _prefetches(func) -> list:
    out = []
    for s in walk_stmts(getattr(func, "body", func)):
        if isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and \
                s.value.op_name == "tir.prefetch":
            out.append(s)
    return out


def _loops(func, name) -> list:
    return [s for s in walk_stmts(func.body) if isinstance(s, S.For)
            and s.loop_var.name == name]


def test_avx512_tile_and_blocking():
    assert gemm_kernel.TILES["avx512"] == (12, 32)
    assert gemm_kernel.TILES["avx2"] == (6, 16)  # AVX2 unchanged
    assert gemm_kernel.BLOCKING["avx512"][0] == 256 and gemm_kernel.BLOCKING["avx2"][0] == 384
    assert gemm_kernel.PREFETCH_NEXT_PIECE == {"avx512": True, "avx2": False, "znver3": True}


def test_first_tile_of_each_panel_prefetches(isa):
    mr, nr = gemm_kernel.default_tile()
    kc = gemm_kernel.BLOCKING[isa][0]
    # one row block of 5 tiles + 3 rows, K in 3 blocks (the panels-inner order)
    func = gemm_kernel.gemm(5 * mr + 3, 6 * nr, 3 * kc, mr=mr, nr=nr,
                            mc=gemm_kernel.default_mc(), prepacked_b=True)
    pfs = _prefetches(func)
    tiles = _loops(func, "t")
    if isa == "avx2":
        assert not pfs and all(int(t.min.value) == 0 for t in tiles)
        return
    # one prefetch per cache line of a panel row (nr floats), in the peeled first tile only:
    # the other tiles run in a loop from 1
    assert len(pfs) == nr // 16
    assert tiles and all(int(t.min.value) == 1 and int(t.extent.value) == 4 for t in tiles)
    lets = [s.var.name for s in walk_stmts(func.body) if isinstance(s, S.LetStmt)]
    assert "pf_panel" in lets and "pf_k" in lets


def test_zen3_avx2_tile_prefetches_next_piece(monkeypatch):
    # a Zen 3's entry (AVX2 code): the 6 x 16 tile's first row tile prefetches the next piece,
    # one line per panel row; other AVX2 CPUs (Haswell) do not
    force_isa(monkeypatch, "avx2", "znver3")
    mr, nr = gemm_kernel.default_tile()
    assert (mr, nr) == (6, 16)
    kc = gemm_kernel.BLOCKING["avx2"][0]
    func = gemm_kernel.gemm(5 * mr + 3, 6 * nr, 3 * kc, mr=mr, nr=nr,
                            mc=gemm_kernel.default_mc(), prepacked_b=True)
    assert len(_prefetches(func)) == 1
    assert all(int(t.min.value) == 1 for t in _loops(func, "t"))
    check_gemm(gemm_kernel.gemm, 5 * mr + 3, 6 * nr + 5, 3 * kc, transpose_b=True, bias=True,
               relu=True, prepacked=True)
    force_isa(monkeypatch, "avx2", "haswell")
    assert not _prefetches(gemm_kernel.gemm(5 * mr + 3, 6 * nr, 3 * kc, mr=mr, nr=nr,
                                            mc=gemm_kernel.default_mc(), prepacked_b=True))


def test_each_row_blocks_first_tile_prefetches(monkeypatch):
    monkeypatch.setattr(gemm_kernel, "vector_isa", lambda: "avx512")
    mr, nr = gemm_kernel.default_tile()
    # 30 tiles + 5 rows in row blocks of (about) mc rows: the first tile of the block loop is
    # peeled (guarded as the others), the rest run from 1
    func = gemm_kernel.gemm(30 * mr + 5, 4 * nr, 700, mr=mr, nr=nr,
                            mc=gemm_kernel.default_mc(), prepacked_b=True)
    assert len(_prefetches(func)) == nr // 16
    tiles = _loops(func, "t")
    assert tiles and all(int(t.min.value) == 1 for t in tiles)


def test_no_prefetch_for_short_k_symbolic_rows_or_b_in_place(monkeypatch):
    monkeypatch.setattr(gemm_kernel, "vector_isa", lambda: "avx512")
    # (the next-piece prefetch only: one row tile streaming B prefetches ahead in its own
    # panel, test_few_rows_prefetch_their_own_panel_ahead)
    monkeypatch.setitem(gemm_kernel.PREFETCH_AHEAD, "avx512", 0)
    mr, nr = gemm_kernel.default_tile()
    # K <= PANELS_INNER_MAX_K (tiles outer), a symbolic M (no peeled tile), one row tile
    for m, k in ((5 * mr, 200), (Var("m", "int64"), 700), (mr, 700)):
        assert not _prefetches(gemm_kernel.gemm(m, 4 * nr, k, mr=mr, nr=nr, prepacked_b=True))
    bld = gemm_kernel.GemmBuilder(None, 5 * mr, 4 * nr, 700, False, False, False, "float32",
                                  mr, nr, 144, False, False, False, 1 << 40)
    bld.direct_b = True
    assert not _prefetches(bld.compute())


@pytest.mark.parametrize("m", [1, 2, 5, 12, 16, 17])
def test_few_rows_prefetch_their_own_panel_ahead(monkeypatch, m):
    """2 to PREFETCH_AHEAD_MAX_ROWS rows (no next-piece prefetch: K under two blocks) prefetch
    each line of their panel PREFETCH_AHEAD positions on, clamped to the panel's last row; one
    row and more rows prefetch nothing; the results match numpy."""
    monkeypatch.setattr(gemm_kernel, "vector_isa", lambda: "avx512")
    mr, nr = gemm_kernel.default_tile()
    ahead = gemm_kernel.PREFETCH_AHEAD["avx512"]
    func = gemm_kernel.gemm(m, 3 * nr, 300, mr=mr, nr=nr, prepacked_b=True)
    pfs = _prefetches(func)
    if not 1 < m <= gemm_kernel.PREFETCH_AHEAD_MAX_ROWS or not ahead:
        assert not pfs
        return
    assert pfs
    for pf in pfs:
        (load,) = pf.value.args
        clamp = load.indices[1]
        assert isinstance(clamp, E.Min) and int(clamp.b.value) == 300 - 1
        assert int(load.indices[2].value) % 16 == 0
    if common.vector_isa() == "avx512":
        check_gemm(gemm_kernel.gemm, m, 3 * nr, 300, transpose_b=True, bias=True, relu=False,
                   prepacked=True, seed=m)


def _run_gemm(m, n, k, transpose_b, bias, relu, seed=0):
    check_gemm(gemm_kernel.gemm, m, n, k, transpose_b=transpose_b, bias=bias, relu=relu,
               prepacked=True, seed=seed)


@pytest.mark.parametrize("isa,rest", [(isa, rest) for isa in sorted(gemm_kernel.TILES)
                                       for rest in range(gemm_kernel.TILES[isa][0])],
                         indirect=["isa"])
def test_every_row_tail_of_the_twelve_row_tile(isa, rest):
    # 3 full tiles and every leftover row count of the ISA's tile (one multi-row tile), K over
    # two blocks, a partial panel
    mr, nr = gemm_kernel.default_tile()
    _run_gemm(3 * mr + rest, 2 * nr + 5, 530, transpose_b=True, bias=True, relu=True,
              seed=rest)


@pytest.mark.parametrize("m,n,k", [(128, 96, 768), (64, 128, 784), (37, 7 * 32 + 9, 3 * 256 + 1),
                                   (140, 11 * 32, 2 * 256), (25, 33, 1030), (130, 40, 260),
                                   (300, 70, 530), (384, 64, 768), (12 * 13, 96, 300)])
def test_prefetching_gemm_odd_shapes(isa, m, n, k):
    # several K blocks (the prefetch wraps to the group's first panel at the next block),
    # partial panels, panel counts that are not a multiple of the group
    _run_gemm(m, n, k, transpose_b=True, bias=True, relu=False)
    _run_gemm(m, n, k, transpose_b=False, bias=False, relu=True, seed=1)


def test_prefetching_batch_gemm_packed_b_per_batch(isa):
    mr, nr = gemm_kernel.default_tile()
    batch, m, n, k = 3, 2 * mr + 5, 3 * nr + 1, 600
    kern = codegen.build(gemm_kernel.batch_gemm(batch, m, n, k, transpose_b=True, mr=mr, nr=nr,
                                                mc=gemm_kernel.default_mc(), prepacked_b=True)
                         )["batch_gemm"]
    rng = np.random.default_rng(7)
    a = rng.standard_normal((batch, m, k), dtype=np.float32)
    b = rng.standard_normal((batch, n, k), dtype=np.float32)
    c = np.full((batch, m, n), np.nan, np.float32)
    kern(a, gemm_kernel.pack_b(b, nr, transpose_b=True), c)
    np.testing.assert_allclose(c, a @ np.swapaxes(b, -1, -2), rtol=1e-4, atol=1e-3)


@pytest.mark.skipif(common.vector_isa() != "avx512",
                    reason="the AVX-512 micro-kernel's machine code")
def test_avx512_inner_loop_is_24_zmm_fmas_without_spills():
    mr, nr = gemm_kernel.default_tile()
    func = gemm_kernel.gemm(128, 768, 768, transpose_b=True, mr=mr, nr=nr,
                            mc=gemm_kernel.default_mc(), prepacked_b=True,
                            parallel_min_work=1 << 40)
    level = sys.modules["minitvm.codegen.build"].ir_pipeline_level(func, 3)
    asm = jit.assembly(CodeGenLLVM(func, "kern", fast_math=False, gomp=False).generate(), level)
    inner = fma_loops(asm)
    full = [b for b in inner if b.count("vfmadd231ps") == mr * nr // 16]
    assert full, [b.count("vfmadd") for b in inner]
    # the peeled first tile's loop prefetches (two lines a turn), the others do not
    assert sorted(b.count("prefetcht0") for b in full) == [0] * (len(full) - 1) + [2]
    for b in full:
        fmas = re.findall(r"vfmadd231ps\s+[^\n]*", b)
        assert all(re.search(r"%zmm\d+, %zmm\d+$", f) for f in fmas), fmas
        assert "rsp" not in b and "rbp" not in b  # no spill / reload in the K loop
