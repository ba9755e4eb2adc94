"""Keeping the pool warm for the length of a run: ``threadpool.keep_warm`` (entered by the
graph executor, the Relay VM and the Relax VM around each run), and the polite spin of idle
workers (a ``sched_yield`` every few spins, sleeping at once when the machine is busy)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relax, relay, tir
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool

pytestmark = pytest.mark.skipif(threadpool.backend() != "minitvm",
                                reason="these tests exercise minitvm's own pool")


@pytest.fixture
def two_threads(monkeypatch):
    old = threadpool.get_num_threads()
    threadpool.set_num_threads(2)
    _scale_kernel()  # builds the JIT, and with it the pool
    # (the pool reads the wait policy once, when it is built: an earlier test in this process
    # may have built it under a passive policy)
    monkeypatch.setitem(threadpool._POOL, "warm", True)
    yield
    threadpool.set_num_threads(old)


def _scale_kernel():
    n = tir.Var("n", "int32")
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    i = tir.Var("i", "int32")
    body = tir.BufferStore(B, A[i] * tir.const(3.0, "float32"), [i])
    return codegen.build(tir.PrimFunc([A, B], tir.For(i, 0, n, tir.ForKind.PARALLEL,
                                                       body)))["main"]


def test_keep_warm_counts_runs_and_nests(two_threads):
    assert threadpool.warm_runs() == 0
    outer = threadpool.keep_warm()
    assert callable(outer) and threadpool.warm_runs() == 1
    inner = threadpool.keep_warm()
    assert threadpool.warm_runs() == 2
    inner()
    outer()
    assert threadpool.warm_runs() == 0


def test_one_thread_or_passive_policy_keeps_nothing_warm(two_threads, monkeypatch):
    threadpool.set_num_threads(1)
    assert threadpool.keep_warm() is None
    threadpool.set_num_threads(2)
    monkeypatch.setitem(threadpool._POOL, "warm", False)  # OMP_WAIT_POLICY=PASSIVE
    assert threadpool.keep_warm() is None
    assert threadpool.warm_runs() == 0


def test_kernels_in_a_warm_run_give_the_same_results(two_threads):
    f = _scale_kernel()
    done = threadpool.keep_warm()
    try:
        for n in (1, 7, 1000, 100_003):
            a = np.random.default_rng(n).standard_normal(n).astype("float32")
            b = tvm.nd.empty((n,), "float32")
            for _ in range(20):
                f(tvm.nd.array(a), b)
                np.testing.assert_array_equal(b.numpy(), a * np.float32(3.0))
    finally:
        done()
    assert threadpool.warm_runs() == 0


def _relu_module():
    x = relay.var("x", shape=(4, 300), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x * relay.const(2.0))))


def test_graph_executor_and_relay_vm_leave_the_pool_cold(two_threads):
    x = np.random.default_rng(0).standard_normal((4, 300)).astype("float32")
    lib = relay.build(_relu_module(), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), np.maximum(x * 2, 0))
    assert threadpool.warm_runs() == 0
    exe = relay.vm.compile(_relu_module(), target="llvm")
    vm = tvm.runtime.vm.VirtualMachine(exe, tvm.cpu())
    np.testing.assert_allclose(vm.invoke("main", x).numpy(), np.maximum(x * 2, 0))
    assert threadpool.warm_runs() == 0


def test_relax_vm_leaves_the_pool_cold_even_when_a_call_fails(two_threads):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(bb.emit(relax.op.add(x, x)))
        bb.emit_func_output(y)
    ex = relax.build(bb.get(), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    a = np.ones((4, 8), "float32")
    np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), a + a)
    assert threadpool.warm_runs() == 0
    with pytest.raises(TypeError, match="takes 1 argument"):
        vm["main"](tvm.nd.array(a), tvm.nd.array(a))
    assert threadpool.warm_runs() == 0


@pytest.mark.parametrize("value, every", [("32", 32), ("1", 1), ("0", 0), ("100", 128),
                                          ("junk", 32), ("", 32)])
def test_yield_every_setting(monkeypatch, value, every):
    monkeypatch.setenv("MINITVM_SPIN_YIELD", value)
    assert threadpool.yield_every() == every


def test_stall_backoff_runs_loops_on_the_caller_with_the_same_results(two_threads):
    """While the pool backs off (after a stalled worker), parallel loops run serially on the
    calling thread; results are the same before, during and after."""
    f = _scale_kernel()
    a = np.random.default_rng(1).standard_normal(50_000).astype("float32")
    b = tvm.nd.empty((50_000,), "float32")
    before = threadpool.pool_backoffs()
    threadpool._POOL["backoff_for"](2_000_000_000)  # as after a stall, for 2 s
    for _ in range(10):
        f(tvm.nd.array(a), b)
        np.testing.assert_array_equal(b.numpy(), a * np.float32(3.0))
    threadpool._POOL["backoff_for"](0)  # over: the pool is tried again
    for _ in range(10):
        f(tvm.nd.array(a), b)
        np.testing.assert_array_equal(b.numpy(), a * np.float32(3.0))
    assert threadpool.pool_backoffs() >= before


def test_stall_settings_reach_the_pool_ir():
    text = threadpool.pool_ir("x86_64-unknown-linux-gnu")
    assert "STALL_NS" not in text and "BACKOFF_NS" not in text and "BUSY_NS" not in text
    assert f"icmp sgt i64 %waited, {threadpool.STALL_NS}" in text
    assert f"add i64 %td, {threadpool.BACKOFF_NS}" in text


def test_backoff_needs_several_stalls_in_a_window():
    """One stall (the host preempting this VM for a moment) does not make the pool back off;
    STALL_COUNT of them within STALL_WINDOW_NS do."""
    text = threadpool.pool_ir("x86_64-unknown-linux-gnu")
    assert threadpool.STALL_COUNT >= 2
    assert f"icmp sge i64 %c1, {threadpool.STALL_COUNT}" in text
    assert f"icmp sgt i64 %age, {threadpool.STALL_WINDOW_NS}" in text
