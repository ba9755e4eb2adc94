"""minitvm's thread pool: the wait policy, results independent of the thread count, no hang with
many waiting or concurrent callers, a forked child, and libgomp's spin setting."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.runtime import threadpool

pytestmark = pytest.mark.skipif(threadpool.backend() != "minitvm",
                                reason="these tests exercise minitvm's own pool")


@pytest.fixture
def threads():
    old = threadpool.get_num_threads()
    yield threadpool.set_num_threads
    threadpool.set_num_threads(old)


def _saxpy_kernel():
    """B[i] = A[i] * 2 + i over a parallel loop of symbolic length."""
    n = tir.Var("n", "int32")
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    i = tir.Var("i", "int32")
    body = tir.BufferStore(B, A[i] * tir.const(2.0, "float32") + tir.Cast("float32", i), [i])
    f = tir.PrimFunc([A, B], tir.For(i, 0, n, tir.ForKind.PARALLEL, body))
    return codegen.build(f)["main"]


def _row_sum_kernel():
    """B[i] = sum_j A[i, j]: a parallel outer loop with a serial reduction inside."""
    A = tir.decl_buffer((64, 257), "float32", "A")
    B = tir.decl_buffer((64,), "float32", "B")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    inner = tir.For(j, 0, 257, tir.ForKind.SERIAL,
                    tir.BufferStore(B, B[i] + A[i, j], [i]))
    body = tir.SeqStmt([tir.BufferStore(B, tir.const(0.0, "float32"), [i]), inner])
    f = tir.PrimFunc([A, B], tir.For(i, 0, 64, tir.ForKind.PARALLEL, body))
    return codegen.build(f)["main"]


@pytest.mark.parametrize("count", [1, 2, 8])
def test_parallel_kernel_same_result_for_1_2_8_threads(threads, count):
    threads(count)
    assert threadpool.pool_workers() >= count - 1
    saxpy, rows = _saxpy_kernel(), _row_sum_kernel()
    rng = np.random.default_rng(count)
    for size in (0, 1, 3, 17, 4099):
        a = rng.standard_normal(size).astype("float32")
        b = np.zeros(size, "float32")
        saxpy(a, b)
        np.testing.assert_array_equal(b, a * 2 + np.arange(size, dtype="float32"))
    a = rng.standard_normal((64, 257)).astype("float32")
    b = np.full(64, 7.0, "float32")
    rows(a, b)
    ref = np.zeros(64, "float32")
    for j in range(257):  # the kernel's order of additions
        ref += a[:, j]
    np.testing.assert_array_equal(b, ref)


def test_compiled_model_same_output_for_1_2_8_threads(threads):
    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor
    from minitvm.relay import testing

    mod, params = testing.resnet.get_small_workload(image_shape=(3, 48, 48), channels=16,
                                                    num_blocks=1)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    data = np.random.default_rng(0).standard_normal((1, 3, 48, 48)).astype("float32")
    outs = []
    for count in (1, 2, 8):
        threads(count)  # a GraphModule reads the thread count when it is created
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        m.set_input("data", data)
        for _ in range(3):
            m.run()
        outs.append(m.get_output(0).numpy())
    assert np.isfinite(outs[0]).all() and np.abs(outs[0]).max() > 0
    for out in outs[1:]:
        np.testing.assert_allclose(out, outs[0], rtol=1e-5, atol=1e-6)


def _run_with_deadline(fn, seconds: float):
    """Run ``fn`` in a thread; fail (instead of hanging the suite) when it is not done in time."""
    errors: list[BaseException] = []

    def target():
        try:
            fn()
        except BaseException as e:  # reported in the test thread
            errors.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"parallel kernels did not finish within {seconds} s (a hang)"
    if errors:
        raise errors[0]


def test_many_waiting_workers_and_many_calls_do_not_hang(threads):
    # 16 threads on a 2-core machine: most workers are asleep or descheduled at any call
    threads(16)
    saxpy = _saxpy_kernel()
    a = np.arange(1000, dtype="float32")
    expect = a * 2 + np.arange(1000, dtype="float32")

    def loop():
        for _ in range(2000):
            b = np.zeros(1000, "float32")
            saxpy(a, b)
            np.testing.assert_array_equal(b, expect)

    _run_with_deadline(loop, 120)


def test_concurrent_callers_get_correct_results(threads):
    # several Python threads calling kernels at once: one uses the pool, the others run serially
    threads(4)
    saxpy = _saxpy_kernel()
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(3001).astype("float32") for _ in range(6)]

    def caller(a):
        expect = a * 2 + np.arange(a.size, dtype="float32")
        for _ in range(200):
            b = np.empty_like(a)
            saxpy(a, b)
            np.testing.assert_array_equal(b, expect)

    def all_callers():
        ts = [threading.Thread(target=caller, args=(a,)) for a in inputs]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    _run_with_deadline(all_callers, 120)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_runs_parallel_kernels(threads):
    threads(2)
    saxpy = _saxpy_kernel()
    a = np.arange(5000, dtype="float32")
    saxpy(a, np.empty_like(a))  # the pool is running in the parent
    pid = os.fork()
    if pid == 0:  # the child: its pool restarts, the kernel still works
        code = 1
        try:
            b = np.empty_like(a)
            saxpy(a, b)
            ok = np.array_equal(b, a * 2 + np.arange(5000, dtype="float32"))
            code = 0 if ok and threadpool.pool_workers() >= 1 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("env, spin", [
    ({}, threadpool.DEFAULT_SPIN),
    ({"OMP_WAIT_POLICY": "passive"}, 0),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, threadpool.ACTIVE_SPIN),
    ({"GOMP_SPINCOUNT": "123", "OMP_WAIT_POLICY": "PASSIVE"}, 123),
    ({"GOMP_SPINCOUNT": "infinity"}, threadpool.ACTIVE_SPIN),
    ({"MINITVM_SPIN_COUNT": "7", "GOMP_SPINCOUNT": "123"}, 7),
])
def test_wait_policy_follows_user_settings(monkeypatch, env, spin):
    for key in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MINITVM_SPIN_COUNT"):
        monkeypatch.delenv(key, raising=False)
    for key, val in env.items():
        monkeypatch.setenv(key, val)
    assert threadpool.spin_count() == spin


def test_own_gomp_setting_is_not_taken_for_the_users(monkeypatch):
    for key in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MINITVM_SPIN_COUNT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(threadpool, "_SPIN_SET_HERE", False)
    assert threadpool.bound_gomp_spin()
    assert os.environ["GOMP_SPINCOUNT"] == str(threadpool.GOMP_DEFAULT_SPIN)
    assert threadpool.spin_count() == threadpool.DEFAULT_SPIN
    assert not threadpool.bound_gomp_spin()  # already set: left alone


def test_backend_choice_and_bad_value(monkeypatch):
    monkeypatch.delenv("MINITVM_NO_GOMP", raising=False)
    monkeypatch.setenv("MINITVM_THREADPOOL", "gomp")
    assert threadpool.backend() == "gomp"
    monkeypatch.setenv("MINITVM_THREADPOOL", "tbb")
    with pytest.raises(ValueError, match="MINITVM_THREADPOOL must be 'minitvm' or 'gomp'"):
        threadpool.backend()
    monkeypatch.setenv("MINITVM_NO_GOMP", "1")
    assert threadpool.backend() == "serial"


def test_set_num_threads_rejects_zero():
    with pytest.raises(ValueError, match="at least 1"):
        threadpool.set_num_threads(0)


_GOMP_PROBE = """
import os
from minitvm.runtime import jit, threadpool
jit.init()
lib = threadpool.gomp_library()
print(lib is not None, os.environ.get("GOMP_SPINCOUNT"))
"""


# (one fresh process a case; bound_gomp_spin does not look at the pool: the spin is checked
# under both pools, each user setting under one of them)
@pytest.mark.parametrize("user, expect, pool", [
    ({}, threadpool._GOMP_SPIN, "gomp"),
    ({}, threadpool._GOMP_SPIN, "minitvm"),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, "None", "minitvm"),
    ({"GOMP_SPINCOUNT": "55"}, "55", "gomp"),
])
def test_gomp_spin_set_before_load_unless_user_set(user, expect, pool):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MINITVM_NO_GOMP")}
    env.update(user, MINITVM_THREADPOOL=pool)
    proc = subprocess.run([sys.executable, "-c", _GOMP_PROBE], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"probe failed ({proc.returncode}): {proc.stderr[-2000:]}"
    out = proc.stdout.split()
    if out[0] != "True":
        pytest.skip("libgomp is not installed")
    assert out[1] == expect


def test_blas_single_threaded_sections_nest_and_overlap():
    from minitvm.runtime import blas

    if blas.get_num_threads() is None:
        pytest.skip("no BLAS with a thread setting was found")
    old = blas.get_num_threads()
    blas.set_num_threads(2)
    try:
        started, release = threading.Barrier(2), threading.Event()
        seen = []

        def section():
            with blas.single_threaded():
                started.wait(30)
                seen.append(blas.get_num_threads())
                release.wait(30)

        t = threading.Thread(target=section)
        t.start()
        with blas.single_threaded():
            with blas.single_threaded():  # nested
                started.wait(30)
            release.set()  # the other section may now leave: this one still holds BLAS at 1
            t.join(30)
            seen.append(blas.get_num_threads())
        assert seen == [1, 1]
        assert blas.get_num_threads() == 2  # restored when the last section left
    finally:
        blas.set_num_threads(old)


@pytest.mark.parametrize("triple, hint", [
    ("x86_64-unknown-linux-gnu", "pause"),
    ("aarch64-unknown-linux-gnu", "aarch64.hint"),
    ("riscv64-unknown-linux-gnu", ""),
])
def test_pool_ir_with_each_spin_hint_verifies(triple, hint):
    import llvmlite.binding as llvm

    decl, call = threadpool._spin_hint(triple)
    assert hint in call
    mod = llvm.parse_assembly(threadpool.pool_ir(triple))
    mod.verify()
    assert {"mtvm_parallel", "mtvm_num_threads", "mtvm_pool_grow"} <= {
        f.name for f in mod.functions}
