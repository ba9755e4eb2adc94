"""The partial last panel of a static N keeps only the lanes its columns need
(``gemm_kernel.NARROW_PARTIAL_PANEL``, ``GemmLoops.tile_lanes``): the width each panel gets, the
tiles' accumulators in the built function, and products against numpy for partial panels of
1 to 31 columns (batched, with bias + ReLU, a transposed C, the packed-as-used schedule)."""

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.schedule import gemm_kernel
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.buffer import decl_buffer
from minitvm.tir.function import PrimFunc
from minitvm.tir.stmt_functor import walk_stmts

MR, NR = 12, 32


@pytest.fixture
def narrow(monkeypatch):
    """Set the switch on this host's ISA (it is per ISA; AVX2 keeps it off)."""
    def set_to(on: bool):
        monkeypatch.setitem(gemm_kernel.NARROW_PARTIAL_PANEL, vector_isa(), on)
    set_to(True)
    return set_to


def _builder(batch, m, n, k, **kw):
    return gemm_kernel.GemmBuilder(batch, m, n, k, kw.get("tb", False), kw.get("bias", False),
                                   kw.get("relu", False), "float32", MR, NR, 144, False, False,
                                   False, gemm_kernel.PARALLEL_MIN_WORK)


def test_each_panel_gets_the_lanes_its_columns_need(narrow):
    want = {197: 8, 300: 16, 70: 8, 129: 4, 3: 4, 31: 32, 96: 32}
    for n, lanes in want.items():
        bld = _builder(None, 40, n, 64)
        assert bld.tile_lanes(False) == lanes, n
        assert bld.tile_lanes(True) == NR
    assert _builder(None, 40, tir.Var("n", "int32"), 64).tile_lanes(False) == NR  # symbolic N
    narrow(False)
    assert _builder(None, 40, 197, 64).tile_lanes(False) == NR


def _acc_widths(func) -> set:
    return {int(s.extents[0].value) for s in walk_stmts(func.body)
            if isinstance(s, S.Allocate) and s.buffer_var.name.startswith("acc")}


def test_the_partial_panels_tiles_hold_fewer_accumulators(narrow):
    func = gemm_kernel.gemm(2 * MR + 5, 3 * NR + 5, 300, mr=MR, nr=NR, mc=144)
    assert _acc_widths(func) == {MR * NR, 5 * NR, MR * 8, 5 * 8}
    narrow(False)
    func = gemm_kernel.gemm(2 * MR + 5, 3 * NR + 5, 300, mr=MR, nr=NR, mc=144)
    assert _acc_widths(func) == {MR * NR, 5 * NR}


def _run(func, args):
    codegen.build(func)[func.attrs["global_symbol"]](*args)


@pytest.mark.parametrize("part", [1, 3, 5, 8, 12, 17, 31])
def test_batched_products_match_numpy(narrow, part):
    rng = np.random.default_rng(part)
    batch, m, n, k = 2, MR + 7, NR + part, 70
    a = rng.standard_normal((batch, m, k), dtype=np.float32)
    b = rng.standard_normal((batch, k, n), dtype=np.float32)
    c = np.full((batch, m, n), np.nan, np.float32)
    _run(gemm_kernel.batch_gemm(batch, m, n, k, mr=MR, nr=NR, mc=144), [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_bias_relu_symbolic_rows_and_long_k(narrow):
    rng = np.random.default_rng(0)
    m, n, k = 3 * MR + 4, 2 * NR + 6, 600  # K in blocks: C added to across them
    a = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    bias = rng.standard_normal(n, dtype=np.float32)
    ref = np.maximum(a @ w.T + bias, 0)
    for rows in (m, tir.Var("m", "int32")):
        c = np.full((m, n), np.nan, np.float32)
        func = gemm_kernel.gemm(rows, n, k, transpose_b=True, bias=True, relu=True, mr=MR,
                                nr=NR, mc=144, prepacked_b=True)
        _run(func, [a, gemm_kernel.pack_b(w, NR, True), bias, c])
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


def test_transposed_c_and_inline_packing(narrow):
    rng = np.random.default_rng(1)
    m, n, k = 20, NR + 5, 300
    # C.T = W @ A.T: C given as [N, M], stored transposed (the swapped GEMM)
    bld = _builder(None, m, n, k, tb=True)
    bld.c_transposed = True
    bld.C = decl_buffer((n, m), "float32", "C")
    a = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    c = np.full((n, m), np.nan, np.float32)
    _run(bld.build("swapped"), [a, w, c])
    np.testing.assert_allclose(c, (a @ w.T).T, rtol=1e-4, atol=1e-4)
    # the [N, K] B packed block by block as the tiles use it
    bld = _builder(None, m, n, k, tb=True)
    bld.Bp = decl_buffer(bld.inline_pack_shape(), "float32", "bblock")
    body = S.Allocate(bld.Bp.data, "float32", list(bld.Bp.shape), True,
                      S.DeclBuffer(bld.Bp, bld.compute_inline_pack()))
    func = PrimFunc([bld.A, bld.B, bld.C], body,
                    attrs={"global_symbol": "inline", "tir.noalias": True})
    c = np.full((m, n), np.nan, np.float32)
    _run(func, [a, w, c])
    np.testing.assert_allclose(c, a @ w.T, rtol=1e-4, atol=1e-4)
