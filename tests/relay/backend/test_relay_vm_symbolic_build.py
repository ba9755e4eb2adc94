"""Building and saving Relay VM kernels over symbolic sizes: ``relay.vm.compile`` compiles them
in parallel worker processes (``vm/prefetch.py``) into the same kernels as a sequential build,
and an exported executable loads them back as native symbolic kernels, not numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.backend import parallel_compile
from minitvm.backend.kernel_cache import clear_cache
from minitvm.codegen.build import clear_cache as clear_codegen_cache
from minitvm.relay.backend.vm import prefetch
from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
from minitvm.relay.backend.vm.symbolic import SymbolicKernel, clear_symbolic_cache
from minitvm.runtime.module import load_module
from minitvm.runtime.vm import Executable, VirtualMachine


def _mlp(batch):
    """Dense layers of distinct widths with distinct activations: a kernel each."""
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(batch, 6), dtype="float32")
    y, width = x, 6
    acts = (relay.nn.relu, relay.sigmoid, relay.tanh, relay.exp, relay.negative)
    for k, out in enumerate((7, 9, 5, 8, 4, 10, 3, 6, 11, 5)):
        w = relay.const((rng.standard_normal((out, width)) * 0.4).astype("float32"))
        y = acts[k % len(acts)](relay.nn.dense(y, w))
        width = out
    return tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(y)))


def _reference(x):
    return relay.create_executor("debug", mod=_mlp(x.shape[0])).evaluate()(x).numpy()


@pytest.fixture
def fresh_caches(tmp_path, monkeypatch):
    """An empty disk cache under tmp_path and no kernel kept in process."""
    monkeypatch.delenv("MINITVM_DISABLE_DISK_CACHE", raising=False)

    def reset(name):
        monkeypatch.setenv("MINITVM_CACHE_DIR", str(tmp_path / name))
        clear_cache()
        clear_codegen_cache()
        clear_symbolic_cache()

    yield reset
    clear_cache()
    clear_codegen_cache()
    clear_symbolic_cache()


def _symbolic_irs(exe):
    return [k.run.kernel.ir for k in exe.kernels if isinstance(k.run, SymbolicKernel)]


def test_parallel_compile_gives_the_sequential_kernels(fresh_caches, monkeypatch):
    workers = []
    real = prefetch.run_sharded

    def counted(*args, **kwargs):
        workers.append(real(*args, **kwargs))
        return workers[-1]

    monkeypatch.setattr(prefetch, "run_sharded", counted)
    built = {}
    for jobs in (1, 2):
        fresh_caches(f"jobs{jobs}")
        with tvm.transform.PassContext(opt_level=3, config={parallel_compile.CONFIG_KEY: jobs}):
            built[jobs] = relay.vm.compile(_mlp(relay.Any()), target="llvm")
    assert workers == [0, 1]  # (sequential; then one worker forked beside this process)
    n = len(built[2].kernels)
    assert n >= 10 and dynamic_kernel_counts(built[2].kernels) == {"symbolic": n,
                                                                   "specialized": 0}
    assert _symbolic_irs(built[2]) == _symbolic_irs(built[1])
    x = np.random.default_rng(1).standard_normal((3, 6)).astype("float32")
    got = [VirtualMachine(built[j], tvm.cpu()).run(x).numpy() for j in (1, 2)]
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_allclose(got[1], _reference(x), rtol=1e-5, atol=1e-6)


def test_exported_executable_keeps_native_symbolic_kernels(tmp_path):
    exe = relay.vm.compile(_mlp(relay.Any()), target="llvm")
    code, lib = exe.save()
    lib.export_library(str(tmp_path / "kernels.so"))
    loaded = Executable.load_exec(code, load_module(str(tmp_path / "kernels.so")))
    n = len(exe.kernels)
    assert dynamic_kernel_counts(loaded.kernels) == {"symbolic": n, "specialized": 0}
    assert all(k.run.kernel.kind == "native" for k in loaded.kernels)
    assert f"Native kernels: {n} of {n} ({n} over symbolic sizes)" in loaded.stats
    before, after = VirtualMachine(exe, tvm.cpu()), VirtualMachine(loaded, tvm.cpu())
    for batch in (1, 4):
        x = np.random.default_rng(batch).standard_normal((batch, 6)).astype("float32")
        want = before.run(x).numpy()
        np.testing.assert_allclose(after.run(x).numpy(), want, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(want, _reference(x), rtol=1e-5, atol=1e-6)
