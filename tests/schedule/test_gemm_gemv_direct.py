"""A one-row matmul reading its ``[K, N]`` B in place takes the wide one-row tile
(``gemm.DIRECT_GEMV_TILE``: 64 columns, one partial sum on AVX-512) when the width divides N;
other widths and more rows keep the register tile of ``_direct_nr``. Numerics against numpy
(with a fused bias + ReLU) and the accumulator's shape."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import gemm, lower_te
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

WIDE = gemm.DIRECT_GEMV_TILE[vector_isa()]


def _lowered(m, n, k):
    """relay ``relu(matmul(x, w) + b)``, ``w`` ``[K, N]`` an input: (PrimFunc, workspace)."""
    x, w, b = (relay.var("x", shape=(m, k)), relay.var("w", shape=(k, n)),
               relay.var("b", shape=(n,)))
    body = relay.nn.relu(relay.add(relay.nn.matmul(x, w), b))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w, b], body)))
    ins, _, outs = te_compiler.build_te(mod["main"])
    return lower_te(ins, list(outs), "f")


def _acc_shapes(prim) -> set:
    return {tuple(int(d) for d in s.buffer.shape) for s in walk_stmts(prim.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "acc"}


@pytest.mark.parametrize("m,n,k", [(1, 128, 40), (1, 96, 33), (3, 128, 40)])
def test_one_row_matmul_in_place_matches_numpy(m, n, k):
    rng = np.random.default_rng(n + k + m)
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((k, n)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    prim, ws = _lowered(m, n, k)
    shapes = _acc_shapes(prim)
    if WIDE and m == 1 and n % WIDE[0] == 0:
        assert shapes == {(WIDE[1], WIDE[0])}
    else:
        assert all(cols <= 32 for _, cols in shapes), shapes
    out = np.full((m, n), np.nan, np.float32)
    codegen.build(prim)["f"](x, w, b, out, *([np.zeros(max(ws, 64), np.uint8)] if ws else []))
    want = np.maximum(x.astype("float64") @ w + b, 0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
