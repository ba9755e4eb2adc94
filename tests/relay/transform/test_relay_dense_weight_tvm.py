"""DenseToSparse / SimplifyFCTranspose and their data-dependent drivers
(``relay.data_dep_optimization.bsr_dense`` / ``simplify_fc_transpose``), as TVM v0.19's
test_sparse_dense_convert.py and test_simplify_fc_transpose.py use them (restated): the
rewritten program (new parameters after the used old ones), the updated params, and the
compiled results before and after."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def _build_run(func, params, x):
    with tvm.transform.PassContext(opt_level=3):
        graph, lib, new_params = relay.build(func, "llvm", params=params)
    m = graph_executor.create(graph, lib, tvm.cpu(0))
    m.set_input("data", tvm.nd.array(x))
    m.set_input(**new_params)
    m.run()
    return m.get_output(0).numpy()


def _random_bsr_dense(m, n, br, bc, density, rng):
    """A dense (m, n) matrix whose nonzeros fill whole (br, bc) blocks."""
    w = np.zeros((m, n), "float32")
    blocks = list(itertools.product(range(0, m, br), range(0, n, bc)))
    count = int(density * m * n / (br * bc)) + 1
    for k in rng.choice(len(blocks), size=count, replace=False):
        r, c = blocks[k]
        w[r:r + br, c:c + bc] = rng.standard_normal((br, bc))
    return w


def _dense_net():
    data = relay.var("data", shape=(1, 128))
    w = relay.var("weight", shape=(96, 128))
    z = relay.nn.relu(relay.nn.dense(relay.nn.relu(data), w))
    return relay.Function(relay.analysis.free_vars(z), z), data


def test_bsr_dense_convert_program_params_and_numerics():
    rng = np.random.default_rng(0)
    func, data = _dense_net()
    w = _random_bsr_dense(96, 128, 32, 1, 0.1, rng)
    params = {"weight": tvm.nd.array(w)}
    x = rng.standard_normal((1, 128)).astype("float32")
    dense_out = _build_run(func, params, x)

    new_func, new_params = relay.data_dep_optimization.bsr_dense.convert(
        func, params, (32, 1), 0.2)
    assert new_params is params and "weight" not in params  # updated in place, as TVM
    nblocks = params["weight.data"].shape[0]
    assert params["weight.indptr"].shape == (96 // 32 + 1,)
    d = relay.var("weight.data", shape=(nblocks, 32, 1))
    i = relay.var("weight.indices", shape=(nblocks,), dtype="int32")
    p = relay.var("weight.indptr", shape=(4,), dtype="int32")
    body = relay.nn.relu(relay.nn.sparse_dense(relay.nn.relu(data), (d, i, p)))
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([data, d, i, p], body)))["main"]
    tvm.ir.assert_structural_equal(new_func, expected, map_free_vars=True)
    np.testing.assert_allclose(_build_run(new_func, params, x), dense_out, rtol=1e-5,
                               atol=1e-5)


def test_bsr_dense_convert_leaves_dense_weights():
    func, _ = _dense_net()
    params = {"weight": tvm.nd.array(np.ones((96, 128), "float32"))}
    new_func, new_params = relay.data_dep_optimization.bsr_dense.convert(
        func, params, (32, 1), 0.2)
    assert list(new_params) == ["weight"]
    assert relay.analysis.list_op_freqs(tvm.IRModule.from_expr(new_func)) == {
        "nn.relu": 2, "nn.dense": 1}


def test_search_dense_op_weight_and_process_params():
    func, _ = _dense_net()
    assert relay.analysis.search_dense_op_weight(func) == ["weight"]
    from minitvm.relay.analysis import sparse_dense

    w = np.zeros((96, 128), "float32")
    w[:32, 0] = 1.0
    params = {"weight": tvm.nd.array(w)}
    info = sparse_dense.process_params(func, params, (32, 1), 0.5)
    assert info.weight_name == ["weight"] and info.weight_shape == [[1, 32, 1, 1, 4]]
    assert sorted(params) == ["weight.data", "weight.indices", "weight.indptr"]


def test_simplify_fc_transpose_convert_program_and_numerics():
    rng = np.random.default_rng(1)
    data = relay.var("data", shape=(1, 32))
    w1, w2 = relay.var("w1", shape=(32, 64)), relay.var("w2", shape=(64, 16))
    y = relay.nn.relu(relay.nn.dense(relay.nn.relu(data), relay.transpose(w1, axes=[1, 0])))
    out = relay.nn.dense(y, relay.transpose(w2, axes=[1, 0]))
    func = relay.Function(relay.analysis.free_vars(out), out)
    params = {"w1": tvm.nd.array(rng.uniform(-1, 1, (32, 64)).astype("float32")),
              "w2": tvm.nd.array(rng.uniform(-1, 1, (64, 16)).astype("float32"))}
    x = rng.uniform(-1, 1, (1, 32)).astype("float32")
    before = _build_run(func, dict(params), x)

    new_func, new_params = relay.data_dep_optimization.simplify_fc_transpose.convert(
        func, params)
    assert sorted(new_params) == ["w1.T", "w2.T"]
    np.testing.assert_array_equal(new_params["w1.T"].numpy().shape, (64, 32))
    t1, t2 = relay.var("w1.T", shape=(64, 32)), relay.var("w2.T", shape=(16, 64))
    body = relay.nn.dense(relay.nn.relu(relay.nn.dense(relay.nn.relu(data), t1)), t2)
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([data, t1, t2], body)))["main"]
    tvm.ir.assert_structural_equal(new_func, expected, map_free_vars=True)
    np.testing.assert_allclose(_build_run(new_func, new_params, x), before, rtol=1e-5,
                               atol=1e-5)


def test_simplify_fc_transpose_convert_needs_the_weight():
    data = relay.var("data", shape=(1, 4))
    w = relay.var("w", shape=(4, 4))
    out = relay.nn.dense(data, relay.transpose(w, axes=[1, 0]))
    with pytest.raises(KeyError, match="'w'"):
        relay.data_dep_optimization.simplify_fc_transpose.convert(
            relay.Function([data, w], out), {})
