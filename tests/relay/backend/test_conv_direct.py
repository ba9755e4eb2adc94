"""The generated implicit-GEMM conv2d (conv_direct) against the numpy reference."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def _run(func, inputs, config):
    with tvm.transform.PassContext(opt_level=3, config=config):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(**inputs)
    return m.get_output(0).numpy().copy(), lib


CASES = [
    # (N, C, H, W), (O, KH, KW), strides, padding, dilation, epilogue
    ((1, 3, 23, 21), (10, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1), "relu"),
    ((2, 8, 14, 15), (16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "add_relu"),
    ((1, 5, 12, 9), (7, 3, 2), (1, 2), (0, 1, 2, 0), (2, 1), "none"),
    ((1, 16, 9, 9), (9, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), "bias"),
    ((1, 4, 11, 10), (3, 5, 3), (3, 2), (2, 1, 0, 1), (1, 2), "relu"),
]


@pytest.mark.parametrize("case", CASES)
def test_conv_direct_matches_numpy(case):
    shape, (o, kh, kw), strides, padding, dilation, epi = case
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=shape)
    wv = rng.standard_normal((o, shape[1], kh, kw)).astype("float32")
    y = relay.nn.conv2d(x, relay.const(wv), strides=strides, padding=padding,
                        dilation=dilation, kernel_size=(kh, kw), channels=o)
    if epi == "bias":
        y = relay.nn.bias_add(y, relay.const(rng.standard_normal(o).astype("float32")))
    if epi in ("relu", "add_relu"):
        y = relay.nn.relu(y + relay.const(np.float32(0.5)) if epi == "add_relu" else y)
    func = relay.Function([x], y)
    xv = rng.standard_normal(shape).astype("float32")
    got, lib = _run(func, {"x": xv}, {})
    ir = "".join(k.ir for k in lib.get_lib().kernels.values())
    assert "mtvm_sgemm" not in ir  # the generated conv, not BLAS
    want, _ = _run(func, {"x": xv}, {"relay.backend.use_native": False})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv_blas_path_still_available():
    from minitvm.runtime import blas

    if not blas.available():
        pytest.skip("no BLAS in this process")
    rng = np.random.default_rng(1)
    x = relay.var("x", shape=(1, 8, 16, 16))
    wv = rng.standard_normal((32, 8, 3, 3)).astype("float32")
    func = relay.Function([x], relay.nn.conv2d(x, relay.const(wv), padding=(1, 1)))
    xv = rng.standard_normal((1, 8, 16, 16)).astype("float32")
    got, lib = _run(func, {"x": xv}, {"relay.backend.use_generated_conv": False})
    assert any("mtvm_sgemm" in k.ir for k in lib.get_lib().kernels.values())
    want, _ = _run(func, {"x": xv}, {"relay.backend.use_native": False})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
