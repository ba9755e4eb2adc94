"""A one-row dense (batch 1: a GEMV) with a constant weight of ``gemm.GEMV_MIN_WEIGHT``
elements or ``gemm.GEMV_MIN_COLUMNS`` outputs runs on the packed GEMM kernels (a smaller one
keeps the generic schedule), and matches numpy, fused epilogue included."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.schedule import LoweringOptions, gemm


def _dense_stage(k, n):
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=(1, k)), relay.var("w", shape=(n, k))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.dense(x, w))))
    return te_compiler.build_te(mod["main"])[2][0]


def test_one_row_takes_the_packed_kernels_from_the_threshold():
    opts = LoweringOptions()
    assert gemm.use_generated_dense(_dense_stage(128, 512), opts)
    assert gemm.use_generated_dense(_dense_stage(128, 128), opts)  # 16384 = the threshold
    assert gemm.use_generated_dense(_dense_stage(64, 16), opts)  # (a GRU's: 16 outputs)
    assert not gemm.use_generated_dense(_dense_stage(128, 10), opts)
    assert not gemm.use_generated_dense(_dense_stage(1000, 10), opts)


@pytest.mark.parametrize("k,n", [(784, 128), (128, 512), (100, 333), (128, 10), (64, 192),
                                 (8, 32), (17, 16)])
def test_one_row_dense_matches_numpy(k, n, rng):
    wv = rng.standard_normal((n, k)).astype("float32")
    bv = rng.standard_normal(n).astype("float32")
    xv = rng.standard_normal((1, k)).astype("float32")
    x = relay.var("x", shape=(1, k))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, relay.const(wv)), relay.const(bv)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("x", xv)
    m.run()
    want = np.maximum(xv.astype("float64") @ wv.T.astype("float64") + bv, 0)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
