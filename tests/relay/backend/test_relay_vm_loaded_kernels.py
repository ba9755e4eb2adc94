"""Kernels of an exported or whole-executable-cached Relay VM executable run as the compiled
ones did. A shape-specializing kernel (``vm/specialized.py``: its ops do not lower symbolically,
multiclass NMS over a run-time class count) comes back as the ``ShapeSpecializer`` it was, where
its Relay text read back as the ops' numpy references run at every call; a static native kernel
is called through its tuple entry (``_py``), not a ctypes pointer array a call."""

import numpy as np
import pytest
from vm_disk_cache import forget_compiled as _forget
from vm_disk_cache import own_disk_cache

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm import exe_cache
from minitvm.relay.backend.vm.kernels import (
    SPECIALIZED_FORMAT,
    ShapeSpecializer,
    dynamic_kernel_counts,
)
from minitvm.relay.backend.vm.specialized import read_specialized, specialized_text
from minitvm.runtime.module import load_module
from minitvm.runtime.vm import Executable, VirtualMachine


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty disk cache of its own with whole builds on, nothing kept in process."""
    yield own_disk_cache(tmp_path, monkeypatch)
    _forget()


# (the function's ops must have no symbolic kernel: this was a take of a run-time row until the
# take lowered symbolically, then a conv3d until conv3d and grid_sample did (sym61), then
# Darknet's reorg until it did (sympool62); multiclass NMS needs a static class count)
def _nms_of_scores():
    """multiclass_nms(boxes, x) for scores x of any (1, 6, k): the NMS specializes per class
    count."""
    x = relay.var("x", shape=(1, 6, relay.Any()), dtype="float32")
    boxes = np.sort(np.random.default_rng(0).random((1, 6, 4)), axis=-1).astype("float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.vision.multiclass_nms(
        relay.const(boxes), x, 5, 3, 0.5, 0.1)))


# the interpreter's values (the ops' numpy references)
_REFERENCE = relay.create_executor("debug", mod=_nms_of_scores()).evaluate()


def _specializers(exe) -> list:
    return [k for k in exe.kernels if isinstance(k.run, ShapeSpecializer)]


def _check_runs(exe, want_exe) -> None:
    got_vm, want_vm = VirtualMachine(exe, tvm.cpu()), VirtualMachine(want_exe, tvm.cpu())
    rng = np.random.default_rng(0)
    for n in (5, 1, 7):
        x = rng.standard_normal((1, 6, n)).astype("float32")
        got = got_vm.run(x).numpy()
        assert got.tobytes() == want_vm.run(x).numpy().tobytes()
        np.testing.assert_allclose(got, _REFERENCE(x).numpy(), rtol=1e-5, atol=1e-6)


def test_exported_specializing_kernel_loads_as_a_specializer(tmp_path):
    exe = relay.vm.compile(_nms_of_scores(), target="llvm")
    (kernel,) = _specializers(exe)
    assert kernel.source_format == SPECIALIZED_FORMAT
    code, lib = exe.save()
    lib.export_library(str(tmp_path / "kernels.so"))
    loaded = Executable.load_exec(code, load_module(str(tmp_path / "kernels.so")))
    (back,) = _specializers(loaded)
    assert back.name == kernel.name and back.run.const_inputs == kernel.run.const_inputs
    _check_runs(loaded, exe)


def test_a_warm_compile_keeps_the_specializer(fresh_cache):
    cold = relay.vm.compile(_nms_of_scores(), target="llvm")
    _forget()  # (a fresh process: only the disk remembers)
    hits = exe_cache.STATS["hits"]
    warm = relay.vm.compile(_nms_of_scores(), target="llvm")
    assert exe_cache.STATS["hits"] == hits + 1
    assert dynamic_kernel_counts(warm.kernels) == dynamic_kernel_counts(cold.kernels) == \
        {"symbolic": 0, "specialized": 1}
    _check_runs(warm, cold)


def test_the_text_round_trips_and_a_bad_header_is_refused():
    exe = relay.vm.compile(_nms_of_scores(), target="llvm")
    (kernel,) = _specializers(exe)
    func, run = read_specialized(specialized_text(kernel))
    assert isinstance(run, ShapeSpecializer) and run.name == kernel.name
    assert tvm.ir.structural_equal(func.body, kernel.source.body, map_free_vars=True)
    with pytest.raises(ValueError, match="not a relay_specialized kernel"):
        read_specialized("fn (%x) { %x }")
    with pytest.raises(ValueError, match="needs 'name' and 'const_inputs'"):
        read_specialized('// minitvm relay_specialized {"name": 3}\nfn () { 0 }')


def test_loaded_static_kernels_take_their_tuple_entry(tmp_path):
    x = relay.var("x", shape=(4, 8), dtype="float32")
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function(
        [x], relay.sigmoid(x) * relay.const(2.0, "float32"))), target="llvm")
    code, lib = exe.save()
    lib.export_library(str(tmp_path / "kernels.so"))
    loaded = Executable.load_exec(code, load_module(str(tmp_path / "kernels.so")))
    cold, warm = VirtualMachine(exe, tvm.cpu()), VirtualMachine(loaded, tvm.cpu())
    assert all(k.kernel is None for k in loaded.kernels)  # (machine code only)
    assert [f is not None for f in warm._fast] == [f is not None for f in cold._fast]
    assert any(f is not None for f in warm._fast)
    xv = np.random.default_rng(1).standard_normal((4, 8)).astype("float32")
    for _ in range(2):
        assert warm.run(xv).numpy().tobytes() == cold.run(xv).numpy().tobytes()
