"""Parameters are read in place: every thread's storage of a graph executor views the one
(aligned, read-only) copy of each parameter instead of holding its own; ``set_input`` of a
parameter gives the calling thread a copy of its own, ``load_params`` rebinds every thread."""

from __future__ import annotations

import threading

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend import build_cache
from minitvm.runtime.graph_executor import GraphModule


def _dense_model():
    """y = relu(x @ w.T + b) with w and b graph parameters (not bound: opt_level 0)."""
    x = relay.var("x", shape=(2, 8))
    w = relay.var("w", shape=(4, 8))
    b = relay.var("b", shape=(4,))
    y = relay.nn.relu(relay.add(relay.nn.dense(x, w), b))
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((4, 8)).astype("float32"),
              "b": rng.standard_normal(4).astype("float32")}
    cfg = {build_cache.CONFIG_KEY: False}
    with tvm.transform.PassContext(opt_level=0, config=cfg):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x, w, b], y)), target="llvm")
    return lib, params


def _ref(x, p):
    return np.maximum(x @ p["w"].T + p["b"], 0)


def _run(m, x):
    m.set_input("x", x)
    m.run()
    return m.get_output(0).numpy().copy()


def test_threads_read_one_copy_of_each_parameter():
    lib, params = _dense_model()
    m = GraphModule(lib["default"](tvm.cpu(0)))
    m.load_params(params)
    x = np.random.default_rng(1).standard_normal((2, 8)).astype("float32")
    ptrs, outs = [], []

    def worker():
        st = m._state()
        ptrs.append(st.views[m._input_index["w"]].ctypes.data)
        outs.append(_run(m, x))

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    worker()  # and the creating thread
    assert ptrs[0] == ptrs[1] == m._params["w"].ctypes.data  # one copy, no per-thread one
    assert ptrs[0] % 64 == 0 and not m._params["w"].flags.writeable
    for out in outs:
        np.testing.assert_allclose(out, _ref(x, params), rtol=1e-5, atol=1e-6)
    # planned bytes still count the parameters (the one copy every thread reads)
    assert m.memory_bytes >= params["w"].nbytes + params["b"].nbytes


def test_set_input_of_a_parameter_changes_only_the_calling_thread():
    lib, params = _dense_model()
    m = GraphModule(lib["default"](tvm.cpu(0)))
    m.load_params(params)
    x = np.ones((2, 8), "float32")
    other = {"w": np.zeros((4, 8), "float32"), "b": params["b"]}
    got = {}

    def worker():
        got["before"] = _run(m, x)  # this thread's storage, made before the change below
        done.wait()
        got["after"] = _run(m, x)

    done = threading.Event()
    t = threading.Thread(target=worker)
    t.start()
    while "before" not in got:
        t.join(0.01)
    m.set_input("w", other["w"])  # this thread only, as TVM's per-executor set_input
    np.testing.assert_allclose(_run(m, x), _ref(x, other), rtol=1e-5, atol=1e-6)
    done.set()
    t.join()
    np.testing.assert_allclose(got["after"], _ref(x, params), rtol=1e-5, atol=1e-6)
    # the shared copy was not written
    np.testing.assert_array_equal(m._params["w"], params["w"])


def test_load_params_rebinds_every_thread():
    lib, params = _dense_model()
    m = GraphModule(lib["default"](tvm.cpu(0)))
    m.load_params(params)
    x = np.random.default_rng(2).standard_normal((2, 8)).astype("float32")
    np.testing.assert_allclose(_run(m, x), _ref(x, params), rtol=1e-5, atol=1e-6)
    new = {"w": params["w"] * 2, "b": params["b"] - 1}
    m.load_params(new)
    np.testing.assert_allclose(_run(m, x), _ref(x, new), rtol=1e-5, atol=1e-6)
    new["w"][:] = 0  # load_params copied: the caller's array may change afterwards
    np.testing.assert_allclose(_run(m, x), _ref(x, {"w": params["w"] * 2,
                                                    "b": params["b"] - 1}), rtol=1e-5, atol=1e-6)


def test_bound_parameters_of_a_built_model_are_not_copied_per_executor():
    x = relay.var("x", shape=(1, 16))
    w = relay.var("w", shape=(32, 16))
    y = relay.nn.dense(x, w)
    wv = np.random.default_rng(3).standard_normal((32, 16)).astype("float32")
    cfg = {build_cache.CONFIG_KEY: False}
    with tvm.transform.PassContext(opt_level=0, config=cfg):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x, w], y)), target="llvm",
                          params={"w": wv})
    a = GraphModule(lib["default"](tvm.cpu(0)))
    b = GraphModule(lib["default"](tvm.cpu(0)))
    names = [n for n in a._params if a._params[n].size == wv.size]
    assert names, sorted(a._params)
    for n in names:  # both executors read the factory's one copy
        pa = a._state().views[a._input_index[n]].ctypes.data
        assert pa == b._state().views[b._input_index[n]].ctypes.data
    xv = np.ones((1, 16), "float32")
    np.testing.assert_allclose(_run(a, xv), xv @ wv.T, rtol=1e-5, atol=1e-5)
