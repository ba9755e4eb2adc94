"""dense through the generated packed GEMM (tir.gemm) and through BLAS, against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.schedule import gemm_kernel


def _run(func, xv, config):
    with tvm.transform.PassContext(opt_level=3, config=config):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(x=xv)
    ir = "".join(k.ir for k in lib.get_lib().kernels.values())
    return m.get_output(0).numpy().copy(), "mtvm_sgemm" in ir


@pytest.mark.parametrize("shape,units", [((64, 784), 128), ((2, 5, 33), 70), ((37, 300), 16)])
def test_generated_dense_matches_numpy(shape, units):
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=shape)
    w = rng.standard_normal((units, shape[-1])).astype("float32")
    b = rng.standard_normal(units).astype("float32")
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, relay.const(w)), relay.const(b),
                                        axis=-1))
    func = relay.Function([x], y)
    xv = rng.standard_normal(shape).astype("float32")
    want = np.maximum(xv @ w.T + b, 0)
    got, used_blas = _run(func, xv, {})
    assert not used_blas
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    from minitvm.runtime import blas

    got, used_blas = _run(func, xv, {"relay.backend.use_generated_dense": False})
    assert used_blas == blas.available()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_constant_weight_is_prepacked_at_build_time():
    rng = np.random.default_rng(2)
    x = relay.var("x", shape=(16, 40))
    w = rng.standard_normal((50, 40)).astype("float32")
    func = relay.Function([x], relay.nn.relu(relay.nn.dense(x, relay.const(w))))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    shapes = sorted(v.numpy().shape for v in lib.get_params().values())
    nr = gemm_kernel.default_tile()[1]  # 32 on AVX-512
    assert shapes == [(-(-50 // nr), 40, nr)]  # [ceil(N/nr), K, nr]
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    xv = rng.standard_normal((16, 40)).astype("float32")
    m.run(x=xv)
    np.testing.assert_allclose(m.get_output(0).numpy(), np.maximum(xv @ w.T, 0), rtol=1e-4,
                               atol=1e-4)
