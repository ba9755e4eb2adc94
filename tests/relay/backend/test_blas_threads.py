"""Running a graph that calls BLAS leaves numpy's BLAS thread count as the user set it."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import blas


def test_graph_run_restores_blas_threads():
    if not blas.available() or blas.get_num_threads() is None:
        pytest.skip("no OpenBLAS with a thread-count getter in this process")
    before = blas.get_num_threads()
    try:
        blas.set_num_threads(2)
        x = relay.var("x", shape=(16, 64))
        w = np.random.default_rng(0).standard_normal((32, 64)).astype("float32")
        func = relay.Function([x], relay.nn.dense(x, relay.const(w)))
        cfg = {"relay.backend.use_generated_dense": False}
        with tvm.transform.PassContext(opt_level=3, config=cfg):
            lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        assert m._uses_blas
        assert blas.get_num_threads() == 2
        xv = np.ones((16, 64), "float32")
        m.run(x=xv)
        assert blas.get_num_threads() == 2
        np.testing.assert_allclose(m.get_output(0).numpy(), xv @ w.T, rtol=1e-4, atol=1e-4)
    finally:
        blas.set_num_threads(before)
