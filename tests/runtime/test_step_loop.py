"""Graphs over ``aot.MAX_ENTRY_STEPS`` steps run through the shared native step loop: one native
call per run, the same outputs as the whole-graph entry, the kernel-by-kernel Python loop and
numpy."""

import ctypes

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.backend import aot
from minitvm.contrib import graph_executor
from minitvm.relay.backend import build_cache
from minitvm.runtime import step_loop

STEPS = 24  # operators of the test chain (each its own kernel at opt_level 0)


def _chain(n: int):
    """x -> sigmoid -> negative -> abs -> ... (n unary ops), and its numpy reference."""
    x = relay.var("x", shape=(3, 5), dtype="float32")
    ops = [(relay.sigmoid, lambda v: 1 / (1 + np.exp(-v))), (relay.negative, np.negative),
           (relay.abs, np.abs)]
    y = x
    for i in range(n):
        y = ops[i % 3][0](y)

    def ref(v):
        for i in range(n):
            v = ops[i % 3][1](v)
        return v

    return tvm.IRModule.from_expr(relay.Function([x], y)), ref


def _build(mod):
    cfg = {build_cache.CONFIG_KEY: False}  # (a cached build would keep its entry)
    with tvm.transform.PassContext(opt_level=0, config=cfg):
        return relay.build(mod, target="llvm")


def _run(lib, xv):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("x", xv)
    m.run()
    return m, m.get_output(0).numpy()


def test_large_graph_runs_through_the_step_loop(monkeypatch, tmp_path):
    mod, ref = _chain(STEPS)
    xv = np.random.default_rng(0).standard_normal((3, 5)).astype("float32")
    with_entry = _build(mod)
    assert with_entry.get_lib().entry is not None
    m_entry, out_entry = _run(with_entry, xv)
    assert m_entry._step_loop is None
    steps = len(m_entry._native_steps)
    assert steps >= STEPS // 2

    monkeypatch.setattr(aot, "MAX_ENTRY_STEPS", steps - 1)
    big = _build(mod)
    assert big.get_lib().entry is None  # over the limit: no compiled entry
    m_loop, out_loop = _run(big, xv)
    assert m_loop._step_loop is not None and len(m_loop._step_loop) == steps

    m_loop._step_loop = None  # the kernel-by-kernel Python loop
    m_loop.run()
    out_python = m_loop.get_output(0).numpy()
    np.testing.assert_array_equal(out_loop, out_python)
    np.testing.assert_array_equal(out_loop, out_entry)
    np.testing.assert_allclose(out_loop, ref(xv.astype("float64")), rtol=1e-5, atol=1e-6)
    assert "the native step loop" in big.get_lib().summary()

    path = str(tmp_path / "big.so")  # exported and loaded, it still runs through the loop
    big.export_library(path)
    m_loaded, out_loaded = _run(tvm.runtime.load_module(path), xv)
    assert m_loaded._step_loop is not None
    np.testing.assert_array_equal(out_loaded, out_loop)


def test_step_loop_follows_zero_copy_inputs(monkeypatch):
    mod, ref = _chain(STEPS)
    monkeypatch.setattr(aot, "MAX_ENTRY_STEPS", 1)
    lib = _build(mod)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    assert m._step_loop is not None
    rng = np.random.default_rng(1)
    for _ in range(2):  # the loop reads the table the zero-copy input rebinds
        xv = rng.standard_normal((3, 5)).astype("float32")
        m.set_input_zero_copy("x", tvm.nd.array(xv))
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), ref(xv.astype("float64")),
                                   rtol=1e-5, atol=1e-6)


def test_step_loop_calls_each_kernel_with_its_arguments():
    seen = []
    kernel_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)

    @kernel_type
    def kernel(args, _unused, nth):
        seen.append((args, nth))

    address = ctypes.cast(kernel, ctypes.c_void_p).value
    table = (ctypes.c_void_p * 6)()
    loop = step_loop.StepLoop([(address, 1), (address, 3), (address, 2)])
    loop.run(table, 3)
    base = ctypes.addressof(table)
    assert seen == [(base, 3), (base + 8, 3), (base + 32, 3)]


def test_step_loop_rejects_bad_steps():
    with pytest.raises(ValueError, match="no kernel steps"):
        step_loop.StepLoop([])
    with pytest.raises(ValueError, match="step 1 has no kernel address"):
        step_loop.StepLoop([(1234, 1), (0, 2)])


def test_step_loop_runs_100k_native_steps():
    """The size the loop is for: 100,000 native kernel calls in one run (each adds its step's
    number to a counter, so a skipped, repeated or misplaced step changes the sum)."""
    from minitvm.runtime import jit

    ir = """
define void @mtvm_test_add_step(ptr %args, ptr %unused, i32 %nth) {
  %counter = load ptr, ptr %args
  %p1 = getelementptr ptr, ptr %args, i64 1
  %step = load i64, ptr %p1
  %old = load i64, ptr %counter
  %new = add i64 %old, %step
  store i64 %new, ptr %counter
  ret void
}
"""
    kernel = jit.compile_ir(ir, "mtvm_test_add_step", opt=1)
    n = 100_000
    counter = np.zeros(1, dtype=np.int64)
    table = (ctypes.c_void_p * (2 * n))()
    table[0::2] = [counter.ctypes.data] * n
    table[1::2] = list(range(1, n + 1))
    step_loop.StepLoop([(kernel.address, 2)] * n).run(table, 1)
    assert counter[0] == n * (n + 1) // 2
