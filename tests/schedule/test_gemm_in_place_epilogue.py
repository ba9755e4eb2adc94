"""A GEMM whose only consumer is an output of its shape writes that output's buffer and the
consumer then runs in place over it, unless the consumer reads the GEMM away from its own
position (a flip, a transpose): then the GEMM gets a buffer of its own. Checked on the unfused
path (``FUSED_EPILOGUE`` switched off for the host's ISA; it is on for AVX2 and AVX-512), which
once overwrote values the flip had yet to read."""

import numpy as np
import pytest

from minitvm.codegen.build import build
from minitvm.schedule import gemm, optimize_prim_func
from minitvm.schedule.common import vector_isa
from minitvm.script.parser import from_source
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

N, K = 24, 40
TAILS = {
    "own": ("T_out[v0, v1] = mm[v0, v1] + bias[v1]", lambda mm, b: mm + b),
    "flip": (f"T_out[v0, v1] = mm[v0, {N} - 1 - v1] + bias[v1]", lambda mm, b: mm[:, ::-1] + b),
}


def _source(stmt: str) -> str:
    return f"""
@T.prim_func
def fused(p_x: T.handle, w: T.Buffer((T.int64({N}), T.int64({K})), "float32"),
          bias: T.Buffer((T.int64({N}),), "float32"), p_out: T.handle):
    T.func_attr({{"tir.noalias": T.bool(True)}})
    m = T.int64()
    x = T.match_buffer(p_x, (m, T.int64({K})))
    T_out = T.match_buffer(p_out, (m, T.int64({N})))
    mm = T.alloc_buffer((m, T.int64({N})))
    for i, j, r in T.grid(m, T.int64({N}), T.int64({K})):
        with T.block("mm"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, r])
            with T.init():
                mm[vi, vj] = T.float32(0.0)
            mm[vi, vj] = mm[vi, vj] + x[vi, vk] * w[vj, vk]
    for a0, a1 in T.grid(m, T.int64({N})):
        with T.block("T_out"):
            v0, v1 = T.axis.remap("SS", [a0, a1])
            {stmt}
"""


@pytest.mark.parametrize("tail", sorted(TAILS))
def test_unfused_epilogue_in_place_only_at_its_own_position(tail, monkeypatch):
    monkeypatch.setitem(gemm.FUSED_EPILOGUE, vector_isa(), False)
    stmt, ref = TAILS[tail]
    g = optimize_prim_func(from_source(_source(stmt)))
    temps = {s.buffer_var.name for s in walk_stmts(g.body) if isinstance(s, S.Allocate)}
    # the in-place case writes the output directly; the flip needs the matmul's own buffer
    assert any("mm" in t for t in temps) == (tail == "flip"), temps
    f = build(g)["fused"]
    rng = np.random.default_rng(3)
    for m in (1, 7, 33):
        x = rng.standard_normal((m, K)).astype("float32")
        w = rng.standard_normal((N, K)).astype("float32")
        b = rng.standard_normal(N).astype("float32")
        out = np.zeros((m, N), "float32")
        f(x, w, b, out)
        np.testing.assert_allclose(out, ref(x.astype("float64") @ w.T, b), rtol=1e-4, atol=1e-4)
