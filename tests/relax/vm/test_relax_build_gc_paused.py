"""relax.build pauses Python's cyclic collector through the passes and the VM codegen (the IR
is freed by reference counting; the collector only rescans the program's nodes) and restores
the caller's setting after, also when the build fails; the result runs as numpy does."""

import gc

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax

# the collector's own state is what these tests check: on, as outside the suite
pytestmark = pytest.mark.cyclic_gc


def _ladder(steps: int = 40):
    """x_i = x_{i-1} - x_{i-2}: every value feeds two steps (period 6, bounded)."""
    R, bb = relax.op, relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            prev, y = x, bb.emit(R.negative(x))
            for _ in range(steps - 1):
                prev, y = y, bb.emit(R.subtract(y, prev))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


def _recording_pipeline(seen: list):
    """The default pipeline behind a module pass noting whether the collector runs."""

    @tvm.transform.module_pass(opt_level=0, name="NoteGC")
    def note(mod, _ctx):
        seen.append(gc.isenabled())
        return mod

    return tvm.transform.Sequential([note, relax.get_pipeline("default_build")])


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_paused_in_passes_and_restored(enabled):
    seen: list = []
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        exe = relax.build(_ladder(), "llvm", pipeline=_recording_pipeline(seen))
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
    assert seen == [False]
    data = np.random.default_rng(1).standard_normal((2, 8)).astype("float32")
    vm = relax.VirtualMachine(exe, tvm.cpu())
    p, v = data, -data
    for _ in range(39):
        p, v = v, v - p
    np.testing.assert_allclose(vm["main"](tvm.nd.array(data)).numpy(), v, rtol=1e-5, atol=1e-5)


def test_collector_restored_when_a_pass_fails():
    @tvm.transform.module_pass(opt_level=0, name="Fails")
    def fails(mod, _ctx):
        raise RuntimeError("pass failed on purpose")

    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="on purpose"):
        relax.build(_ladder(4), "llvm", pipeline=fails)
    assert gc.isenabled()


def test_bad_exec_mode_is_named():
    with pytest.raises(ValueError, match="exec_mode"):
        relax.build(_ladder(4), "llvm", exec_mode="jit")
