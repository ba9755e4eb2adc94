"""batch_matmul through the generated tir.batch_gemm (B packed per call) and through BLAS."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import blas


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
