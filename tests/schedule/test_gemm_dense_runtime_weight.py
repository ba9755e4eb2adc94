"""A dense whose weight arrives at run time (not a constant packed at build time) goes by the
matmul rules for an ``[N, K]`` B (``gemm.RUNTIME_W_AS_MATMUL``): read in place for few rows, the
swapped ``C.T = W @ A.T`` for a large square-ish weight, packed only for many rows. Numerics
against numpy on each path (odd widths, a K tail, a fused bias + ReLU) and the structure: few
rows copy nothing of W."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import gemm, lower_te
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

ON = gemm.RUNTIME_W_AS_MATMUL[vector_isa()]


def _lowered(m, n, k, bias_relu):
    """relay ``dense(x, w)`` (+ bias, ReLU) with ``w`` an input: (PrimFunc, workspace bytes)."""
    x, w = relay.var("x", shape=(m, k)), relay.var("w", shape=(n, k))
    args, body = [x, w], relay.nn.dense(x, w)
    if bias_relu:
        b = relay.var("b", shape=(n,))
        args.append(b)
        body = relay.nn.relu(relay.add(body, b))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(args, body)))
    ins, _, outs = te_compiler.build_te(mod["main"])
    return lower_te(ins, list(outs), "f")


def _stored_names(prim) -> set[str]:
    return {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.BufferStore)}


@pytest.mark.parametrize("m,n,k,bias_relu", [
    (1, 48, 40, False),     # one row: W read in place
    (3, 70, 33, True),      # a column tail of the tile and a K tail, bias + ReLU fused
    (20, 720, 768, False),  # the swapped product (N <= K, a large weight)
    (130, 40, 24, True),    # past gemm_tb.MAX_ROWS: W packed
])
def test_dense_with_runtime_weight_matches_numpy(m, n, k, bias_relu):
    rng = np.random.default_rng(m + n + k)
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    prim, ws = _lowered(m, n, k, bias_relu)
    out = np.full((m, n), np.nan, np.float32)
    args = [x, w] + ([b] if bias_relu else []) + [out]
    codegen.build(prim)["f"](*args, *([np.zeros(max(ws, 64), np.uint8)] if ws else []))
    want = x.astype("float64") @ w.T.astype("float64")
    if bias_relu:
        want = np.maximum(want + b, 0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not ON, reason="RUNTIME_W_AS_MATMUL is off for this vector ISA")
def test_few_rows_copy_nothing_of_the_weight():
    """At 4 rows W is read where it lies (no packed panel buffer is written); at 200 rows it
    is packed, as before."""
    few = _stored_names(_lowered(4, 96, 64, False)[0])
    many = _stored_names(_lowered(200, 96, 64, False)[0])
    packs = ("wpack", "bpack", "bblock")
    assert not any(p in name for name in few for p in packs), few
    assert any(p in name for name in many for p in packs), many
