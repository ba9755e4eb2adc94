"""A batch of small ``A @ B^T`` products (attention scores over few tokens), each under
``gemm.MIN_GEMM_MACS``, goes to the packed GEMM kernels when N is whole vectors and the batch
together has the work (``gemm.SMALL_TB_BATCH``), not to the generic reduction that gathers
B^T's columns."""

import numpy as np
import pytest
from relay_build import run_against_interpreter

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import gemm
from minitvm.schedule.common import lanes, vector_isa
from minitvm.schedule.options import LoweringOptions
from minitvm.te.create_prim_func import topo_order


def _bmm_stage(sa, sb, transpose_b):
    a, b = relay.var("a", shape=sa), relay.var("b", shape=sb)
    body = relay.nn.batch_matmul(a, b, transpose_b=transpose_b)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([a, b], body)))
    _, _, outs = te_compiler.build_te(mod["main"])
    return next(t for t in topo_order(list(outs)) if t.op.tag == "batch_matmul")


def test_taken_by_the_packed_kernels(monkeypatch):
    v = lanes("float32")
    opts = LoweringOptions(blas=False)
    monkeypatch.setitem(gemm.SMALL_TB_BATCH, vector_isa(), True)
    monkeypatch.setitem(gemm.SMALL_NT_BATCH, vector_isa(), False)  # (B not transposed: its own)
    assert gemm.use_generated_batch_matmul(_bmm_stage((16, 16, 20), (16, v, 20), True), opts)
    # N not whole vectors, B not transposed, too little work in all: the reduction
    assert not gemm.use_generated_batch_matmul(_bmm_stage((16, 8, 16), (16, v // 2, 16), True),
                                               opts)
    assert not gemm.use_generated_batch_matmul(_bmm_stage((16, 16, 20), (16, 20, v), False),
                                               opts)
    assert not gemm.use_generated_batch_matmul(_bmm_stage((2, 4, 16), (2, v, 16), True), opts)
    monkeypatch.setitem(gemm.SMALL_TB_BATCH, vector_isa(), False)
    assert not gemm.use_generated_batch_matmul(_bmm_stage((16, 16, 20), (16, v, 20), True), opts)


@pytest.mark.parametrize("sa, sb", [
    ((16, 16, 20), (16, 16, 20)),  # MobileViT's 4 heads x 4 patches of 16 tokens, d 20
    ((8, 32, 8), (8, 32, 8)),
    ((16, 17, 24), (16, 32, 24)),  # rows not a multiple of the register tile
    ((16, 16, 20), (1, 16, 20)),  # a broadcast B
    ((1, 16, 12), (12, 16, 12)),  # a broadcast A
])
@pytest.mark.parametrize("on", [False, True])
def test_matches_the_interpreter(sa, sb, on, rng, monkeypatch):
    from minitvm.backend import kernel_cache

    monkeypatch.setitem(gemm.SMALL_TB_BATCH, vector_isa(), on)
    kernel_cache.clear_cache()
    a = rng.standard_normal(sa).astype("float32")
    b = rng.standard_normal(sb).astype("float32")
    got, want = run_against_interpreter(
        lambda x, y: relay.nn.batch_matmul(x, y, transpose_b=True), a, b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, a @ np.swapaxes(b, 1, 2), rtol=1e-5, atol=1e-5)
    kernel_cache.clear_cache()
