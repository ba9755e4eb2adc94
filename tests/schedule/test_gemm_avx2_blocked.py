"""The packed GEMM's cache-blocked schedule (``BLOCKING``, on AVX2 and AVX-512 alike: K blocks,
panel groups, leftover rows as one multi-row tile in the last row block): its loop structure
with each ISA forced, the unblocked schedule with the switch off, numerics against numpy on odd
shapes (M, N, K not multiples of the tile, M = 1, K = 1, symbolic M) with each ISA forced (and
AVX-512's tile unblocked), and the inner loop's machine code (12 ymm accumulators, FMAs, no
spill) on an AVX2 host."""

import re
import sys

import numpy as np
import pytest
from asm_loops import fma_loops
from gemm_cases import check_gemm

from minitvm import codegen
from minitvm.codegen.llvm.codegen import CodeGenLLVM
from minitvm.runtime import jit
from minitvm.schedule import common, gemm_kernel
from minitvm.tir import stmt as S
from minitvm.tir.expr import Var
from minitvm.tir.stmt_functor import walk_stmts

ISAS = sorted(gemm_kernel.TILES)
UNBLOCKED = [f"{isa}-unblocked" for isa in ISAS]
# the numerics run each ISA's schedule, and AVX-512's tile with ``BLOCKING`` switched off (the
# schedule it had before the switch was measured there)
VARIANTS = [*ISAS, "avx512-unblocked"]


@pytest.fixture
def isa(request, monkeypatch):
    """Force the vector ISA the GEMM schedule sizes its tile and blocking by; "ISA-unblocked"
    also switches ``BLOCKING`` off for it, with row blocks of 64."""
    name, _, unblocked = request.param.partition("-")
    monkeypatch.setattr(gemm_kernel, "vector_isa", lambda: name)
    if unblocked:
        monkeypatch.setitem(gemm_kernel.BLOCKING, name, None)
        monkeypatch.setitem(gemm_kernel.BLOCK_ROWS, name, 64)
    return name


def _loops(func) -> dict[str, list]:
    out: dict[str, list] = {}
    for s in walk_stmts(func.body):
        if isinstance(s, S.For):
            out.setdefault(s.loop_var.name, []).append(s)
    return out


def _tile(isa):
    return gemm_kernel.TILES[isa]


@pytest.mark.parametrize("isa", ISAS, indirect=True)
def test_blocked_structure_k_blocks_and_rows_in_the_last_block(isa):
    """Both ISAs take the blocked schedule (measured on a Zen 4 with AVX-512; AVX-512's K
    blocks of 256 measured on a Sapphire Rapids)."""
    assert gemm_kernel.BLOCKING[isa] == ({"avx512": 256, "avx2": 384}[isa], 8)
    assert gemm_kernel.default_mc() == 144
    mr, nr = _tile(isa)
    kc, _ = gemm_kernel.BLOCKING[isa]
    m, n, k = 4 * mr + 3, 5 * nr, 3 * (kc - 50)  # three leftover rows; K in 3 equal blocks
    func = gemm_kernel.gemm(m, n, k, mr=mr, nr=nr, mc=gemm_kernel.default_mc(),
                            prepacked_b=True)
    loops = _loops(func)
    assert [int(f.extent.value) for f in loops["kb"]] == [3]
    # every micro-kernel's reduction runs over one K block, never all of K
    red = loops["k"]
    assert red and all(int(f.extent.value) == kc - 50 for f in red)
    # a K that does not split evenly: the last block is shorter (a min() extent)
    odd = _loops(gemm_kernel.gemm(m, n, k + 1, mr=mr, nr=nr, prepacked_b=True))["k"]
    assert odd and all(str(f.extent).startswith("T.min(") for f in odd)
    # no separate loop over leftover rows: they are one 3-row tile inside the row blocks
    assert "qr" not in loops and "r" not in loops
    accs = {int(s.extents[0].value) for s in walk_stmts(func.body) if isinstance(s, S.Allocate)
            and s.buffer_var.name == "acc"}
    assert accs == {mr * nr, 3 * nr}


@pytest.mark.parametrize("isa", UNBLOCKED, indirect=True)
def test_unblocked_schedule_with_the_switch_off(isa):
    """``BLOCKING`` off for the ISA (with the row block of 64 AVX-512 had before)."""
    mr, nr = _tile(isa)
    assert gemm_kernel.BLOCKING[isa] is None and gemm_kernel.default_mc() == 64
    func = gemm_kernel.gemm(4 * mr + 3, 5 * nr, 1001, mr=mr, nr=nr, prepacked_b=True)
    loops = _loops(func)
    assert "kb" not in loops and "qr" in loops  # whole-K micro-kernels, a row loop for the rest
    # the full tiles' reduction runs over the whole K (the one-row kernel's in steps of 4)
    assert max(int(f.extent.value) for f in loops["k"]) == 1001



SHAPES = [(1, 1, 1), (1, 17, 300), (2, 10, 1), (7, 33, 3), (13, 10, 777), (64, 48, 785),
          (29, 16, 1030)]


@pytest.mark.parametrize("isa", VARIANTS, indirect=True)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_gemm_odd_shapes(isa, m, n, k):
    check_gemm(gemm_kernel.gemm, m, n, k)
    check_gemm(gemm_kernel.gemm, m, n, k, transpose_b=True, bias=True, relu=True, sym=True)


@pytest.mark.parametrize("isa", VARIANTS, indirect=True)
@pytest.mark.parametrize("m", [1, 5, 6, 12, 13, 31, 150])
def test_gemm_symbolic_rows_every_leftover(isa, m):
    # a small row block: several blocks, the leftover rows in the last one (or a block of
    # their own when the full tiles fill the blocks exactly)
    mr, _ = gemm_kernel.default_tile()
    check_gemm(gemm_kernel.gemm, m, 40, 515, prepacked=True, sym=True, mc=2 * mr)
    check_gemm(gemm_kernel.gemm, m, 40, 515, prepacked=True, mc=2 * mr, bias=True, seed=1)


@pytest.mark.parametrize("isa", VARIANTS, indirect=True)
def test_batch_gemm_broadcast_and_odd_shapes(isa):
    mr, nr = gemm_kernel.default_tile()
    rng = np.random.default_rng(3)
    batch, m, n, k = 3, 2 * mr + 1, nr + 3, 401
    for bcast_a, bcast_b in ((False, False), (True, False), (False, True)):
        kern = codegen.build(gemm_kernel.batch_gemm(
            batch, m, n, k, transpose_b=True, mr=mr, nr=nr, mc=gemm_kernel.default_mc(),
            broadcast_a=bcast_a, broadcast_b=bcast_b))["batch_gemm"]
        a = rng.standard_normal((m, k) if bcast_a else (batch, m, k), dtype=np.float32)
        b = rng.standard_normal((n, k) if bcast_b else (batch, n, k), dtype=np.float32)
        c = np.full((batch, m, n), np.nan, np.float32)
        kern(a, b, c)
        ref = np.matmul(a, np.swapaxes(b, -1, -2))
        np.testing.assert_allclose(c, np.broadcast_to(ref, c.shape), rtol=1e-4, atol=1e-3)


@pytest.mark.skipif(common.vector_isa() != "avx2", reason="the AVX2 micro-kernel's machine code")
def test_avx2_inner_loop_is_twelve_ymm_fmas_without_spills():
    mr, nr = gemm_kernel.default_tile()
    func = gemm_kernel.gemm(64, 128, 784, mr=mr, nr=nr, prepacked_b=True,
                            parallel_min_work=1 << 40)
    # at the IR pipeline a build gives it (the full O3 one may unroll the K loop once more)
    level = sys.modules["minitvm.codegen.build"].ir_pipeline_level(func, 3)
    asm = jit.assembly(CodeGenLLVM(func, "kern", fast_math=False, gomp=False).generate(), level)
    # the hottest loops: basic blocks with FMAs that branch back to themselves
    inner = fma_loops(asm)
    assert inner, "no FMA loop found"
    full = [b for b in inner if b.count("vfmadd231ps") == mr * nr // 8]
    assert full, [b.count("vfmadd") for b in inner]
    for b in full:
        fmas = re.findall(r"vfmadd231ps\s+[^\n]*", b)
        assert all(re.search(r"%ymm\d+, %ymm\d+$", f) for f in fmas), fmas
        assert "rsp" not in b and "rbp" not in b  # no spill / reload in the K loop


@pytest.mark.parametrize("isa", VARIANTS, indirect=True)
def test_batch_gemm_symbolic_batch_and_rows(isa):
    mr, nr = gemm_kernel.default_tile()
    rng = np.random.default_rng(4)
    n, k = 2 * nr + 5, 130
    kern = codegen.build(gemm_kernel.batch_gemm(
        Var("b", "int64"), Var("m", "int64"), n, k, mr=mr, nr=nr, mc=2 * mr,
        broadcast_b=True))["batch_gemm"]
    for batch, m in ((1, 1), (2, 3 * mr + 4), (3, 2 * mr)):
        a = rng.standard_normal((batch, m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        c = np.full((batch, m, n), np.nan, np.float32)
        kern(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("isa", VARIANTS, indirect=True)
@pytest.mark.parametrize("sym_n,sym_k", [(True, False), (False, True), (True, True)])
def test_symbolic_n_and_k(isa, sym_n, sym_k):
    # as relax's attention batch_matmuls build it: N or K the symbolic sequence length
    mr, nr = gemm_kernel.default_tile()
    rng = np.random.default_rng(5)
    batch, n, k = 3, nr + 7, 70
    bld = gemm_kernel.GemmBuilder(
        batch, Var("m", "int64"), Var("n", "int64") if sym_n else n,
        Var("k", "int64") if sym_k else k, False, False, False, "float32", mr, nr, 2 * mr,
        False, False, False, gemm_kernel.PARALLEL_MIN_WORK)
    kern = codegen.build(bld.build("bg"))["bg"]
    for m in (1, 2 * mr + 3):
        a = rng.standard_normal((batch, m, k), dtype=np.float32)
        b = rng.standard_normal((batch, k, n), dtype=np.float32)
        c = np.full((batch, m, n), np.nan, np.float32)
        kern(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4 * np.abs(a @ b).max())


@pytest.mark.parametrize("isa", ISAS, indirect=True)
def test_short_k_runs_each_tile_over_the_panels(isa):
    mr, nr = gemm_kernel.default_tile()

    def nesting(k):
        func = gemm_kernel.gemm(4 * mr, 8 * nr, k, mr=mr, nr=nr, prepacked_b=True)
        loops = _loops(func)
        t_loop = loops["t"][0]
        inner = {s.loop_var.name for s in walk_stmts(t_loop.body) if isinstance(s, S.For)}
        return "j" in inner

    assert nesting(gemm_kernel.PANELS_INNER_MAX_K)  # tiles outer, panels inner
    assert not nesting(gemm_kernel.PANELS_INNER_MAX_K + 1)  # a panel over the row tiles
