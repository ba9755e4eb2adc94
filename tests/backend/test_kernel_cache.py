"""The shared kernel cache: hits for structurally equal functions under the same options,
misses when the options (or constant inputs, or constant values) differ, renamed hits keep
the compiled code, ``clear_cache`` starts over."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.backend import clear_cache, kernel_cache
from minitvm.contrib import graph_executor
from minitvm.relay.backend import te_compiler
from minitvm.schedule import LoweringOptions

OPTS = LoweringOptions(blas=False)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _stats():
    return dict(kernel_cache.STATS)


def _typed(params, body):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))
    return mod["main"]


def _dense_relu(bias=1.0):
    """A fresh (new objects every call) fused dense + add + relu function."""
    x, w = relay.var("x", shape=(16, 64)), relay.var("w", shape=(32, 64))
    b = relay.const(np.full((32,), bias, "float32"))
    return _typed([x, w], relay.nn.relu(relay.add(relay.nn.dense(x, w), b)))


def _fallback_fn():
    x = relay.var("x", shape=(4, 6))
    ones = relay.const(np.ones(4, "float32"))
    return _typed([x], relay.matrix_set_diag(relay.nn.relu(x), ones))  # compute taken away


def test_same_function_twice_is_a_hit():
    f1, f2 = _dense_relu(), _dense_relu()
    assert f1 is not f2
    k1 = te_compiler.lower_function(f1, "k1", OPTS)
    assert _stats() == {"hits": 0, "misses": 1}
    assert k1.kind == "native" and k1.name == "k1"
    k2 = te_compiler.lower_function(f2, "k2", OPTS)
    assert _stats() == {"hits": 1, "misses": 1}
    # the hit is the same code under the new name, with the new source
    assert k2 is not k1 and k2.name == "k2" and k1.name == "k1"
    assert k2.kind == "native"
    assert k2.symbol == k1.symbol and k2.address == k1.address and k2.ir == k1.ir
    assert k2.compiled is k1.compiled and k2.kernel is k1.kernel
    assert k2.prim_func is k1.prim_func and k2.ws_bytes == k1.ws_bytes
    assert k2.source is f2 and k1.source is f1
    assert len(k2.consts) == len(k1.consts) == 1
    np.testing.assert_array_equal(k2.consts[0], k1.consts[0])
    # the same name again is a hit too
    k3 = te_compiler.lower_function(f1, "k1", OPTS)
    assert _stats() == {"hits": 2, "misses": 1} and k3.symbol == k1.symbol


def test_renamed_kernel_computes_the_same(rng):
    k1 = te_compiler.lower_function(_dense_relu(), "k1", OPTS)
    k2 = te_compiler.lower_function(_dense_relu(), "k2", OPTS)
    assert _stats()["hits"] == 1
    x = rng.standard_normal((16, 64), dtype=np.float32)
    w = rng.standard_normal((32, 64), dtype=np.float32)
    outs = []
    for k in (k1, k2):
        out = np.empty((16, 32), np.float32)
        args = [x, w, *k.consts, out] + ([np.empty(k.ws_bytes, np.uint8)] if k.ws_bytes else [])
        k.kernel(*args)
        outs.append(out)
    np.testing.assert_allclose(outs[0], np.maximum(x @ w.T + 1.0, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("other", [
    LoweringOptions(blas=False, generated_dense=False),
    LoweringOptions(blas=False, generated_conv=False),
    LoweringOptions(blas=True, generated_dense=False),
])
def test_different_options_are_a_miss(other):
    k1 = te_compiler.lower_function(_dense_relu(), "k1", OPTS)
    k2 = te_compiler.lower_function(_dense_relu(), "k2", other)
    assert _stats() == {"hits": 0, "misses": 2}
    assert k2.kind == "native" and k2.name == "k2"
    if not other.generated_dense:
        assert k2.ir != k1.ir  # a different schedule: no generated packed GEMM
    # each options value then hits its own entry
    assert te_compiler.lower_function(_dense_relu(), "k3", other).symbol == k2.symbol
    assert te_compiler.lower_function(_dense_relu(), "k4", OPTS).symbol == k1.symbol
    assert _stats() == {"hits": 2, "misses": 2}


def test_constant_inputs_and_constant_values_are_part_of_the_key():
    te_compiler.lower_function(_dense_relu(), "k1", OPTS)
    te_compiler.lower_function(_dense_relu(), "k2", OPTS, const_inputs=frozenset({1}))
    assert _stats() == {"hits": 0, "misses": 2}
    k3 = te_compiler.lower_function(_dense_relu(bias=2.0), "k3", OPTS)
    assert _stats() == {"hits": 0, "misses": 3}
    assert float(k3.consts[0][0]) == 2.0  # not the cached kernel's bias


@pytest.mark.usefixtures("matrix_set_diag_without_compute")
def test_fallback_kernels_are_cached_and_renamed():
    k1 = te_compiler.lower_function(_fallback_fn(), "fb1", OPTS)
    f2 = _fallback_fn()
    k2 = te_compiler.lower_function(f2, "fb2", OPTS)
    assert _stats() == {"hits": 1, "misses": 1}
    assert k1.kind == k2.kind == "fallback" and k2.name == "fb2"
    assert "matrix_set_diag" in k2.reason and k2.source is f2 and k2.source_format == "relay"
    xv = np.random.default_rng(0).standard_normal((4, 6)).astype("float32")
    (got,) = k2.run([xv])
    want = np.maximum(xv, 0)
    np.fill_diagonal(want, 1.0)
    np.testing.assert_array_equal(got, want)


def test_clear_cache_resets():
    te_compiler.lower_function(_dense_relu(), "k1", OPTS)
    te_compiler.lower_function(_dense_relu(), "k2", OPTS)
    assert _stats() == {"hits": 1, "misses": 1}
    clear_cache()
    assert _stats() == {"hits": 0, "misses": 0}
    te_compiler.lower_function(_dense_relu(), "k3", OPTS)
    assert _stats() == {"hits": 0, "misses": 1}  # forgotten: lowered again
    # the names relay exposes are the same cache
    assert te_compiler.clear_cache is clear_cache and te_compiler.STATS is kernel_cache.STATS


def test_relay_build_twice_hits_for_every_kernel(rng):
    mod = tvm.IRModule.from_expr(relay.Function(_dense_relu().params, _dense_relu().body))
    xv = rng.standard_normal((16, 64), dtype=np.float32)
    wv = rng.standard_normal((32, 64), dtype=np.float32)
    libs, outs = [], []
    for _ in range(2):
        with tvm.transform.PassContext(opt_level=3, config={"relay.backend.use_blas": False}):
            lib = relay.build(mod, target="llvm")
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(x=xv, w=wv)
        libs.append(lib)
        outs.append(m.get_output(0).numpy())
    n = len(libs[0].get_lib().kernels)
    assert n >= 1 and _stats() == {"hits": n, "misses": n}
    k0, k1 = libs[0].get_lib().kernels, libs[1].get_lib().kernels
    assert sorted(k0) == sorted(k1)
    assert all(k0[name].symbol == k1[name].symbol for name in k0)
    np.testing.assert_allclose(outs[0], np.maximum(xv @ wv.T + 1.0, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(outs[0], outs[1])
    # another config: every kernel of that build is a miss
    with tvm.transform.PassContext(opt_level=3, config={
            "relay.backend.use_blas": False, "relay.backend.use_generated_dense": False}):
        relay.build(mod, target="llvm")
    assert _stats()["misses"] > n and _stats()["hits"] == n
