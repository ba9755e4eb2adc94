"""batch_matmul through the generated tir.batch_gemm (B packed per call) and through BLAS."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import blas
from minitvm.schedule.common import vector_isa


def _run(func, feeds, config):
    with tvm.transform.PassContext(opt_level=3, config=config):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(**feeds)
    ir = "".join(k.ir for k in lib.get_lib().kernels.values())
    return m.get_output(0).numpy().copy(), "mtvm_sgemm" in ir


@pytest.mark.parametrize("sa,sb,tb", [
    ((12, 128, 64), (12, 128, 64), True),    # BERT q @ k^T
    ((12, 128, 128), (12, 64, 128), True),   # BERT probs @ v
    ((3, 37, 50), (3, 50, 45), False),       # partial row tile and column panel
    ((1, 20, 30), (4, 70, 30), True),        # broadcast A
    ((5, 19, 30), (1, 30, 40), False),       # broadcast B
])
def test_generated_batch_matmul_matches_numpy(sa, sb, tb):
    rng = np.random.default_rng(0)
    a, b = relay.var("a", shape=sa), relay.var("b", shape=sb)
    func = relay.Function([a, b], relay.nn.relu(relay.nn.batch_matmul(a, b, transpose_b=tb)))
    av = rng.standard_normal(sa).astype("float32")
    bv = rng.standard_normal(sb).astype("float32")
    want = np.maximum(av @ (bv.transpose(0, 2, 1) if tb else bv), 0)
    got, used_blas = _run(func, {"a": av, "b": bv}, {})
    assert not used_blas
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    got, used_blas = _run(func, {"a": av, "b": bv},
                          {"relay.backend.use_generated_batch_matmul": False})
    assert used_blas == blas.available()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_transpose_a_is_not_generated():
    rng = np.random.default_rng(1)
    a, b = relay.var("a", shape=(2, 40, 30)), relay.var("b", shape=(2, 40, 50))
    func = relay.Function([a, b], relay.nn.batch_matmul(a, b, transpose_a=True,
                                                        transpose_b=False))
    av = rng.standard_normal((2, 40, 30)).astype("float32")
    bv = rng.standard_normal((2, 40, 50)).astype("float32")
    got, _ = _run(func, {"a": av, "b": bv}, {})
    np.testing.assert_allclose(got, av.transpose(0, 2, 1) @ bv, rtol=1e-4, atol=1e-4)


def test_few_rows_stay_on_blas():
    from minitvm.schedule.gemm import BMM_GENERATED_MIN_ROWS

    rng = np.random.default_rng(3)
    m = BMM_GENERATED_MIN_ROWS - 12
    a, b = relay.var("a", shape=(8, m, 256)), relay.var("b", shape=(8, 256, 256))
    func = relay.Function([a, b], relay.nn.batch_matmul(a, b))
    av = rng.standard_normal((8, m, 256)).astype("float32")
    bv = rng.standard_normal((8, 256, 256)).astype("float32")
    got, used_blas = _run(func, {"a": av, "b": bv}, {})
    assert used_blas == blas.available()
    np.testing.assert_allclose(got, av @ bv.transpose(0, 2, 1), rtol=1e-4, atol=1e-3)


def _has_buffer(lib, name: str) -> bool:
    """Does any kernel's PrimFunc allocate or declare a buffer called ``name``?"""
    return any(name in str(k.prim_func) for k in lib.get_lib().kernels.values()
               if k.prim_func is not None)


@pytest.mark.parametrize("sa,sb,const,packs", [
    ((1, 64, 128), (1, 128, 1024), True, False),   # MoE: every expert's first layer at once
    ((4, 64, 256), (4, 256, 128), True, False),    # MoE: each expert's second layer
    ((16, 48, 48), (16, 48, 16), False, False),    # attention probs @ v, head dim 16
    ((3, 37, 50), (3, 50, 12), False, False),      # N under one vector: a 12-wide tile
    ((3, 37, 50), (3, 50, 24), False, True),       # N between one vector and a whole tile:
    #                                                 packed (a ragged 24-wide tile is 8x slower)
    ((8, 16, 64), (8, 64, 17), False, True),       # linear attention's ones column: packed
    ((5, 19, 30), (1, 30, 64), False, False),      # broadcast B read in place
    ((2, 300, 64), (2, 64, 40), False, True),      # N not a whole number of tiles: packed
    #                                                 (AVX-512's; AVX2's 8-lane tiles divide 40)
    ((2, 200, 512), (2, 512, 512), False, True),   # B of 1 MB and many rows: packed
])
def test_batch_matmul_reads_b_in_place(sa, sb, const, packs):
    from minitvm.schedule.gemm import _direct_bmm_nr

    rng = np.random.default_rng(4)
    av = rng.standard_normal(sa).astype("float32")
    bv = rng.standard_normal(sb).astype("float32")
    a = relay.var("a", shape=sa)
    b = relay.const(bv) if const else relay.var("b", shape=sb)
    func = relay.Function([a] if const else [a, b], relay.nn.batch_matmul(a, b,
                                                                           transpose_b=False))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(**({"a": av} if const else {"a": av, "b": bv}))
    want = av.astype("float64") @ bv.astype("float64")
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-3)
    direct = _direct_bmm_nr(sa[1], sb[2], sa[2], False)
    assert _has_buffer(lib, "bmm_bpack") == (direct is None)
    if vector_isa() == "avx512":  # (the cases' tile widths)
        assert (direct is None) == packs


def test_transposed_b_is_still_packed():
    from minitvm.schedule.gemm import _direct_bmm_nr

    assert _direct_bmm_nr(48, 48, 16, True) is None


@pytest.mark.parametrize("sa,sb", [
    ((16, 48, 16), (16, 48, 16)),   # attention scores, head dim 16: whole 16-wide panels
    ((3, 50, 64), (3, 50, 64)),     # 50 columns: the last panel partly past N
    ((2, 20, 40), (2, 197, 40)),    # ViT's 197 tokens: B's last rows end the allocation
])
def test_transposed_b_packs_by_vectors(sa, sb):
    from minitvm.schedule.common import host_switch
    from minitvm.schedule.gemm_kernel import PACK_TB_GATHER
    from minitvm.tir import expr as E
    from minitvm.tir import stmt as S
    from minitvm.tir.stmt_functor import post_order, walk_stmts

    rng = np.random.default_rng(5)
    av = rng.standard_normal(sa).astype("float32")
    bv = rng.standard_normal(sb).astype("float32")
    a, b = relay.var("a", shape=sa), relay.var("b", shape=sb)
    func = relay.Function([a, b], relay.nn.batch_matmul(a, b, transpose_b=True))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(a=av, b=bv)
    want = av.astype("float64") @ bv.astype("float64").transpose(0, 2, 1)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-3)
    (prim,) = [k.prim_func for k in lib.get_lib().kernels.values()]
    packs = [s for f in walk_stmts(prim.body)
             if isinstance(f, S.For) and f.kind == S.ForKind.VECTORIZED
             for s in walk_stmts(f.body)
             if isinstance(s, S.BufferStore) and s.buffer.name == "bmm_bpack"]
    assert bool(packs) == host_switch(PACK_TB_GATHER)
    if not packs:
        return
    partial = sb[1] % 16 != 0
    # every row index of B read by the packing (gathered into the panel, or loaded as a row
    # vector for PACK_TB_TRANSPOSE's in-register transpose) stays inside B
    b_buf = prim.buffer_map[prim.params[1]]
    loads = [e for s in walk_stmts(prim.body) if isinstance(s, S.BufferStore)
             for e in post_order(s.value) if isinstance(e, E.BufferLoad) and e.buffer is b_buf]
    assert loads and all(any(isinstance(x, E.Min) for x in post_order(ld.indices[1]))
                         == partial for ld in loads)
