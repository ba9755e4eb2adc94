"""Conv2dToSparse / Conv2dToSparse2 and relay.data_dep_optimization.bsr_conv2d (TVM v0.19's
convert_sparse_conv2d.cc, test_sparse_conv2d_convert.py restated): Before/Expected programs with
BSR parts computed independently by scipy, numerics before/after, errors and a deep chain."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import minitvm as tvm
from minitvm import relay
from minitvm.relay.data_dep_optimization import bsr_conv2d

RNG = np.random.default_rng(0)


def _block_sparse(rows, cols, bh, bw, density=0.2):
    """A dense (rows, cols) float32 matrix whose nonzeros fill a few bh x bw blocks."""
    m = np.zeros((rows, cols), "float32")
    blocks = list(itertools.product(range(0, rows, bh), range(0, cols, bw)))
    count = max(1, int(density * len(blocks)))
    for k in RNG.choice(len(blocks), size=count, replace=False):
        r, c = blocks[k]
        m[r:r + bh, c:c + bw] = RNG.standard_normal((bh, bw))
    return m


def _run(func, params, x):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(func))
    args = {"data": x, **{k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in params.items()}}
    return relay.create_executor("debug", mod=mod).evaluate()(**args).numpy()


def _net(layout, wshape, kernel, **conv):
    dshape = (1, 8, 6, 6) if layout == "NCHW" else (1, 6, 6, 8)
    data = relay.var("data", shape=dshape)
    w = relay.var("weight", shape=wshape)
    y = relay.nn.conv2d(relay.nn.relu(data), w, kernel_size=kernel, data_layout=layout,
                        kernel_layout="OIHW" if layout == "NCHW" else "HWIO", **conv)
    return relay.Function([data, w], relay.nn.relu(y)), data.type_annotation


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_convert_1x1(layout):
    matrix = _block_sparse(16, 8, 4, 2)  # (out, in)
    w = matrix.reshape(16, 8, 1, 1) if layout == "NCHW" else matrix.T.reshape(1, 1, 8, 16)
    func, dtype = _net(layout, w.shape, 1)
    x = RNG.standard_normal(dtype.concrete_shape).astype("float32")
    dense = _run(func, {"weight": w}, x)
    params = {"weight": tvm.nd.array(w)}
    sparse_func, params = bsr_conv2d.convert(func, params, (4, 2), 0.5, layout)
    assert sorted(params) == ["weight.data", "weight.indices", "weight.indptr"]
    ref = sp.bsr_matrix(matrix, blocksize=(4, 2))
    np.testing.assert_array_equal(params["weight.data"].numpy(), ref.data)
    np.testing.assert_array_equal(params["weight.indices"].numpy(), ref.indices)
    np.testing.assert_array_equal(params["weight.indptr"].numpy(), ref.indptr)
    np.testing.assert_allclose(_run(sparse_func, params, x), dense, rtol=1e-5, atol=1e-5)

    data = relay.var("data", dtype)
    parts = [relay.var("weight.data", shape=ref.data.shape),
             relay.var("weight.indices", shape=ref.indices.shape, dtype="int32"),
             relay.var("weight.indptr", shape=ref.indptr.shape, dtype="int32")]
    body = relay.nn.relu(relay.nn.sparse_conv2d(relay.nn.relu(data), parts, layout, 1))
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([data, *parts], body)))
    got = relay.transform.InferType()(tvm.IRModule.from_expr(sparse_func))
    tvm.ir.assert_structural_equal(got, expected)


def test_convert_3x3_nhwc():
    matrix = _block_sparse(16, 72, 4, 8)  # (out, 3*3*in)
    w = matrix.T.reshape(3, 3, 8, 16)
    func, dtype = _net("NHWC", w.shape, 3, padding=(1, 1))
    x = RNG.standard_normal(dtype.concrete_shape).astype("float32")
    dense = _run(func, {"weight": w}, x)
    sparse_func, params = bsr_conv2d.convert(func, {"weight": tvm.nd.array(w)}, (4, 8), 0.5,
                                             "NHWC", kernel_size=3)
    assert "weight.data" in params and "weight" not in params
    np.testing.assert_allclose(_run(sparse_func, params, x), dense, rtol=1e-4, atol=1e-4)


def test_convert_keeps_dense_weights_and_other_kernels():
    w = RNG.standard_normal((16, 8, 1, 1)).astype("float32")  # no zeros at all
    func, _ = _net("NCHW", w.shape, 1)
    params = {"weight": tvm.nd.array(w)}
    new_func, params = bsr_conv2d.convert(func, params, (4, 2), 0.5, "NCHW")
    tvm.ir.assert_structural_equal(new_func, relay.transform.InferType()(
        tvm.IRModule.from_expr(func))["main"])
    assert list(params) == ["weight"]


@pytest.mark.parametrize("layout,kernel", [("NCHW", 1), ("NHWC", 1), ("NHWC", 3)])
def test_conv2d_to_sparse2_on_constants(layout, kernel):
    cols = 8 * kernel * kernel
    matrix = _block_sparse(16, cols, 4, 4)
    if layout == "NCHW":
        w = matrix.reshape(16, 8, kernel, kernel)
    else:
        w = matrix.T.reshape(kernel, kernel, 8, 16)
    pad = (kernel - 1) // 2
    func, dtype = _net(layout, w.shape, kernel, padding=(pad, pad))
    x = RNG.standard_normal(dtype.concrete_shape).astype("float32")
    dense = _run(func, {"weight": w}, x)
    new_func, _ = bsr_conv2d.convert2(func, {"weight": tvm.nd.array(w)}, (4, 4), 0.5, layout,
                                      kernel)
    ref = sp.bsr_matrix(matrix, blocksize=(4, 4))
    data = relay.var("data", dtype)
    parts = [relay.const(ref.data.astype("float32")), relay.const(ref.indices.astype("int32")),
             relay.const(ref.indptr.astype("int32"))]
    body = relay.nn.relu(relay.nn.sparse_conv2d(relay.nn.relu(data), parts, layout, kernel))
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([data], body)))["main"]
    tvm.ir.assert_structural_equal(new_func, expected)
    got = relay.create_executor("debug", mod=tvm.IRModule.from_expr(new_func)).evaluate()(x)
    np.testing.assert_allclose(got.numpy(), dense, rtol=1e-4, atol=1e-4)


def test_conv2d_to_sparse2_leaves_ineligible_convs():
    matrix = _block_sparse(16, 8, 4, 4)
    w = relay.const(matrix.reshape(16, 8, 1, 1))
    x = relay.var("data", shape=(1, 8, 6, 6))
    convs = [relay.nn.conv2d(x, w, kernel_size=1, strides=(2, 2)),     # stride 2
             relay.nn.conv2d(x, w, kernel_size=1, padding=(1, 1)),     # padding on a 1x1
             relay.nn.conv2d(x, relay.const(matrix.reshape(16, 8, 1, 1), "float64"),
                             kernel_size=1)]                           # not float32
    for conv in convs:
        mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], conv)))
        out = relay.transform.Conv2dToSparse2("NCHW", 1, (4, 4), 0.5)(mod)
        tvm.ir.assert_structural_equal(out, mod)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.nn.conv2d(x, w, kernel_size=1))))
    dense_enough = relay.transform.Conv2dToSparse2("NCHW", 1, (4, 4), 0.95)(mod)
    tvm.ir.assert_structural_equal(dense_enough, mod)


def test_pass_info_and_errors():
    p = relay.transform.Conv2dToSparse(["w"], [[2, 4, 2, 2, 5]], "NHWC", 1)
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "Conv2dToSparse", 4, ["DeadCodeElimination"])
    q = relay.transform.Conv2dToSparse2("NHWC", 3, (4, 4), 0.5)
    assert (q.info.name, q.info.opt_level) == ("Conv2dToSparse2", 5)
    with pytest.raises(ValueError, match="layout must be 'NCHW' or 'NHWC'"):
        relay.transform.Conv2dToSparse([], [], "HWCN", 1)
    with pytest.raises(ValueError, match="3x3 kernels only in NHWC"):
        relay.transform.Conv2dToSparse2("NCHW", 3, (4, 4), 0.5)
    with pytest.raises(ValueError, match="blocksize must be two positive ints"):
        relay.transform.Conv2dToSparse2("NHWC", 1, (4, 0), 0.5)
    x = relay.var("x", shape=(1, 4, 4, 8))
    w = relay.var("w", shape=(1, 1, 8, 4))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO"))))
    with pytest.raises(ValueError, match="1 weight names but 2 shapes"):
        relay.transform.Conv2dToSparse(["w"], [[1, 2, 2, 3, 4], [1]], "NHWC", 1)(mod)
    with pytest.raises(ValueError, match="must list the data dims"):
        relay.transform.Conv2dToSparse(["w"], [[1, 2]], "NHWC", 1)(mod)


def test_deep_chain():
    x = relay.var("data", shape=(1, 2, 2, 8))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    matrix = _block_sparse(8, 8, 4, 4)
    w = relay.const(matrix.T.reshape(1, 1, 8, 8))
    conv = relay.nn.conv2d(e, w, data_layout="NHWC", kernel_layout="HWIO")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], conv)))
    out = relay.transform.Conv2dToSparse2("NHWC", 1, (4, 4), 0.5)(mod)
    assert out["main"].body.op.name == "nn.sparse_conv2d"
