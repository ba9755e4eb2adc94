"""The packing of an ``[N, K]`` B by 16 x 16 blocks transposed in registers
(``gemm_kernel.PACK_TB_TRANSPOSE``, AVX-512): batched products ``A @ B^T`` against numpy where
N leaves a partial panel (its columns past N packed as zeros), K leaves a tail of positions
(gathered) or is under one block, and the panels are 16, 32 or 64 wide."""

import numpy as np
import pytest

from minitvm import codegen
from minitvm.runtime import threadpool
from minitvm.schedule import gemm_kernel
from minitvm.schedule.common import vector_isa
from minitvm.tir import expr as E
from minitvm.tir.function import PrimFunc
from minitvm.tir.stmt_functor import post_order, walk_stmts

ON = gemm_kernel.PACK_TB_TRANSPOSE[vector_isa()]


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
