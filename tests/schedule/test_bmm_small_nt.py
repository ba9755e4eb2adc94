"""A batch of small ``A @ B`` products (B not transposed), each under ``gemm.MIN_GEMM_MACS``,
goes to the packed GEMM kernels when the batch together has the work
(``gemm.SMALL_NT_BATCH``), any N and fewer than ``BMM_GENERATED_MIN_ROWS`` rows too (BLAS
takes no product that small): spectral pooling's DFT matrix applied from the left to every
map, 128 x (24x24 @ 24x24), ran 5x slower in the generic reduction."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend import te_compiler
from minitvm.schedule import gemm
from minitvm.schedule.common import vector_isa
from minitvm.schedule.options import LoweringOptions
from minitvm.te.create_prim_func import topo_order


def _bmm_stage(sa, sb, transpose_b=False):
    a, b = relay.var("a", shape=sa), relay.var("b", shape=sb)
    body = relay.nn.batch_matmul(a, b, transpose_b=transpose_b)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([a, b], body)))
    _, _, outs = te_compiler.build_te(mod["main"])
    return next(t for t in topo_order(list(outs)) if t.op.tag == "batch_matmul")


@pytest.mark.parametrize("blas", [False, True])
def test_taken_by_the_packed_kernels(blas, monkeypatch):
    opts = LoweringOptions(blas=blas)
    use = gemm.use_generated_batch_matmul
    monkeypatch.setitem(gemm.SMALL_NT_BATCH, vector_isa(), True)
    assert use(_bmm_stage((128, 24, 24), (128, 24, 24)), opts)
    assert use(_bmm_stage((1, 24, 24), (128, 24, 24)), opts)  # one A for every batch
    assert use(_bmm_stage((192, 12, 24), (192, 24, 24)), opts)  # 12 rows: BLAS takes none
    # too little work in all, B transposed (SMALL_TB_BATCH's): the reduction
    assert not use(_bmm_stage((2, 8, 8), (2, 8, 8)), opts)
    monkeypatch.setitem(gemm.SMALL_TB_BATCH, vector_isa(), False)
    assert not use(_bmm_stage((128, 24, 24), (128, 24, 24), True), opts)
    monkeypatch.setitem(gemm.SMALL_NT_BATCH, vector_isa(), False)
    assert not use(_bmm_stage((128, 24, 24), (128, 24, 24)), opts)


@pytest.mark.parametrize("sa, sb", [
    ((32, 24, 24), (32, 24, 24)),
    ((1, 24, 24), (32, 24, 24)),  # a broadcast A (a DFT matrix for every map)
    ((24, 12, 24), (1, 24, 20)),  # a broadcast B, N not whole vectors
    ((48, 6, 8), (48, 8, 9)),  # rows not a multiple of the register tile
])
@pytest.mark.parametrize("on", [False, True])
def test_matches_numpy(sa, sb, on, rng, monkeypatch):
    from minitvm.backend import kernel_cache

    monkeypatch.setitem(gemm.SMALL_NT_BATCH, vector_isa(), on)
    kernel_cache.clear_cache()
    a = rng.standard_normal(sa).astype("float32")
    b = rng.standard_normal(sb).astype("float32")
    x, y = relay.var("a", shape=sa), relay.var("b", shape=sb)
    f = relay.Function([x, y], relay.nn.batch_matmul(x, y, transpose_b=False))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(f), "llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("a", a)
    g.set_input("b", b)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), a @ b, rtol=1e-5, atol=1e-5)
    kernel_cache.clear_cache()
