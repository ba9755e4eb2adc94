"""B packed per call (an activation): an ``[N, K]`` B by 16 x 16 blocks transposed in
registers (``gemm_kernel.PACK_TB_TRANSPOSE``, AVX-512), batched products ``A @ B^T`` against
numpy where N leaves a partial panel (its columns past N packed as zeros), K leaves a tail of
positions (gathered) or is under one block, and the panels are 16, 32 or 64 wide; a ``[K, N]``
B with a partial last panel copies its other panels by vectors
(``PACK_FULL_PANELS_BY_VECTORS``)."""

import numpy as np
import pytest

from minitvm import codegen
from minitvm.runtime import threadpool
from minitvm.schedule import gemm_kernel
from minitvm.schedule.common import vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.function import PrimFunc
from minitvm.tir.stmt_functor import post_order, walk_stmts

ON = gemm_kernel.PACK_TB_TRANSPOSE[vector_isa()]
BY_VECTORS = gemm_kernel.PACK_FULL_PANELS_BY_VECTORS[vector_isa()]


def _shuffles(stmt) -> int:
    count = 0
    for s in walk_stmts(stmt):
        value = getattr(s, "value", None)
        if value is not None:
            count += sum(isinstance(e, E.Call) and e.op == "tir.vector_shuffle"
                         for e in post_order(value))
    return count


@pytest.mark.parametrize("batch,m,n,k,nr", [
    (3, 13, 77, 64, 32),   # a partial last panel (77 = 2 x 32 + 13)
    (2, 5, 40, 70, 16),    # K: 4 blocks of 16 and a tail of 6 gathered
    (2, 7, 64, 130, 64),   # a 64-wide panel, K tail of 2
    (2, 9, 33, 12, 32),    # K under one block: gathered only
])
def test_batch_gemm_transposed_pack_matches_numpy(batch, m, n, k, nr):
    rng = np.random.default_rng(batch * 1000 + n + k)
    a = rng.standard_normal((batch, m, k)).astype("float32")
    b = rng.standard_normal((batch, n, k)).astype("float32")
    c = np.full((batch, m, n), np.nan, np.float32)
    prim = gemm_kernel.batch_gemm(batch, m, n, k, transpose_b=True, mr=12, nr=nr, mc=144)
    if ON:
        assert (_shuffles(prim.body) > 0) == (k >= 16)
    threadpool.set_num_threads(1)
    codegen.build(prim)["batch_gemm"](a, b, c)
    want = a.astype("float64") @ b.swapaxes(1, 2).astype("float64")
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not ON, reason="PACK_TB_TRANSPOSE is off for this vector ISA")
def test_packed_panel_past_n_is_zero():
    """The packed B itself: columns past N hold zeros, the rest B's transpose (K = 32: two
    blocks, N = 20: one full 16-wide half and one of 4 columns)."""
    n, k, nr = 20, 32, 32
    bld = gemm_kernel.GemmBuilder(None, 1, n, k, True, False, False, "float32", 12, nr, 144,
                                  False, False, False, 1 << 30)
    prim = PrimFunc([bld.B, bld.Bp], bld.pack(), attrs={"global_symbol": "pack",
                                                        "tir.noalias": True})
    w = np.random.default_rng(7).standard_normal((n, k)).astype("float32")
    packed = np.full((1, k, nr), np.nan, np.float32)
    codegen.build(prim)["pack"](w, packed)
    np.testing.assert_array_equal(packed[0, :, :n], w.T)
    np.testing.assert_array_equal(packed[0, :, n:], 0)


@pytest.mark.parametrize("batch,m,n,k,nr", [
    (3, 20, 197, 64, 32),   # ViT's 197 tokens: 6 panels by vectors, the 7th 5 columns wide
    (2, 5, 40, 9, 16),      # 2 panels by vectors, the last 8 wide
    (2, 4, 13, 7, 16),      # under one panel: element by element only
])
def test_batch_gemm_row_major_b_partial_panel_matches_numpy(batch, m, n, k, nr):
    rng = np.random.default_rng(batch * 100 + n)
    a = rng.standard_normal((batch, m, k)).astype("float32")
    b = rng.standard_normal((batch, k, n)).astype("float32")
    c = np.full((batch, m, n), np.nan, np.float32)
    prim = gemm_kernel.batch_gemm(batch, m, n, k, transpose_b=False, mr=12, nr=nr, mc=144)
    copies = [s for s in walk_stmts(prim.body) if isinstance(s, S.For) and
              s.kind == S.ForKind.VECTORIZED and any(
                  isinstance(t, S.BufferStore) and t.buffer.name == "B_packed"
                  for t in walk_stmts(s.body))]
    assert bool(copies) == (BY_VECTORS and n >= nr)
    threadpool.set_num_threads(1)
    codegen.build(prim)["batch_gemm"](a, b, c)
    want = a.astype("float64") @ b.astype("float64")
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


def test_gather_switch_is_read_per_host(monkeypatch):
    """``PACK_TB_GATHER`` applies by host: Zen 3's own entry for its AVX2 code, the AVX2 row
    for another AVX2 CPU, the AVX-512 row for an AVX-512 CPU (whatever the Zen 3 entry says)."""
    from minitvm.runtime import jit
    from minitvm.schedule.common import host_switch

    avx2 = "+avx,+avx2,+fma,+sse4.2,-avx512f"
    avx512 = "+avx,+avx2,+fma,+sse4.2,+avx512f,+avx512bw,+avx512dq,+avx512vl"
    table = {"avx512": "avx512 row", "avx2": "avx2 row", "znver3": "znver3 entry"}
    monkeypatch.setattr(gemm_kernel, "PACK_TB_GATHER", table)
    for cpu, features, want in (("znver3", avx2, "znver3 entry"), ("haswell", avx2, "avx2 row"),
                                ("icelake-server", avx512, "avx512 row"),
                                ("rocketlake", avx512, "avx512 row")):
        monkeypatch.setattr(jit, "host_cpu", lambda c=cpu, f=features: (c, f))
        assert host_switch(gemm_kernel.PACK_TB_GATHER) == want, cpu
