"""gc_paused / paused: the cyclic collector is off inside (a decorated call, a pass) and restored
after it."""

import gc

import pytest

from minitvm.ir.gc_pause import gc_paused

# the collector's own state is what these tests check: on, as outside the suite
pytestmark = pytest.mark.cyclic_gc


@gc_paused
def _state(inner=None):
    return gc.isenabled(), (inner() if inner else None)


@gc_paused
def _fail():
    raise KeyError("boom")


def test_paused_inside_and_restored_after():
    assert gc.isenabled()
    assert _state() == (False, None)
    assert gc.isenabled()
    # nested: still paused in the inner call, enabled again only after the outer one
    assert _state(lambda: _state()) == (False, (False, None))
    assert gc.isenabled()


def test_restored_after_an_exception_and_left_off_when_it_was_off():
    with pytest.raises(KeyError, match="boom"):
        _fail()
    assert gc.isenabled()
    gc.disable()
    try:
        assert _state() == (False, None)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_keeps_the_name_and_docstring():
    from minitvm.ir.structural import structural_hash

    assert structural_hash.__name__ == "structural_hash"
    assert "structural_equal" in structural_hash.__doc__


def test_every_pass_runs_with_the_collector_paused():
    """``Pass.__call__`` runs the pass paused (a module pass sees it off), and a pass that
    raises leaves the collector on again."""
    import minitvm as tvm
    from minitvm import relay

    seen = []

    @tvm.transform.module_pass(opt_level=0, name="RecordGC")
    def record(mod, ctx):
        seen.append(gc.isenabled())
        return mod

    @tvm.transform.module_pass(opt_level=0, name="Raise")
    def fail(mod, ctx):
        raise KeyError("inside a pass")

    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], x))
    record(mod)
    tvm.transform.Sequential([record, record])(mod)
    assert seen == [False, False, False] and gc.isenabled()
    with pytest.raises(KeyError, match="inside a pass"):
        fail(mod)
    assert gc.isenabled()


def test_frozen_leaves_live_objects_out_of_the_scans_and_gives_them_back():
    """``frozen()`` freezes what is alive on entry, ``freeze_new`` what is alive when called;
    on exit (also on an exception) nothing is left frozen, and cycles made inside are still
    collected."""
    from minitvm.ir.gc_pause import frozen

    assert gc.get_freeze_count() == 0
    with frozen() as freeze_new:
        before = gc.get_freeze_count()
        assert before > 0 and gc.isenabled()
        kept = [[] for _ in range(100)]
        freeze_new()
        assert gc.get_freeze_count() >= before + len(kept)
        cycle = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1  # garbage made inside is collected as before
    assert gc.get_freeze_count() == 0
    with pytest.raises(KeyError, match="inside"), frozen():
        raise KeyError("inside")
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_frozen_leaves_a_process_that_froze_objects_or_paused_the_collector_alone():
    """Objects the process froze itself stay frozen (unfreezing would give them back too); with
    the collector off nothing is frozen."""
    from minitvm.ir.gc_pause import frozen

    gc.freeze()
    try:
        count = gc.get_freeze_count()
        with frozen() as freeze_new:
            freeze_new()
            assert gc.get_freeze_count() == count
        assert gc.get_freeze_count() == count
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        with frozen() as freeze_new:
            freeze_new()
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_builds_freeze_the_program_while_kernels_compile_and_restore_the_collector(monkeypatch):
    """relay.build and relax.build compile their kernels with the program frozen (the
    collector on), and leave nothing frozen and the collector on after."""
    import importlib

    import numpy as np

    import minitvm as tvm
    from minitvm import relax, relay
    from minitvm.backend import compile as backend_compile

    relax_build = importlib.import_module("minitvm.relax.vm.build")  # (the package re-exports
    # a function of that name)

    seen = []
    real = backend_compile.compile_prim_func

    def spy(*args, **kwargs):
        seen.append((gc.isenabled(), gc.get_freeze_count() > 0))
        return real(*args, **kwargs)

    x = relay.var("x", shape=(2, 3), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.negative(x)))
    rx = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [rx]):
        bb.emit_func_output(bb.emit(relax.op.negative(rx)))
    a = np.arange(6, dtype="float32").reshape(2, 3)
    monkeypatch.setattr(backend_compile, "compile_prim_func", spy)
    monkeypatch.setattr(relax_build, "compile_prim_func", spy)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
        ex = relax.build(bb.get(), "llvm")
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert len(seen) >= 2 and all(s == (True, True) for s in seen), seen
    from minitvm.contrib import graph_executor

    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", a)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), -a)
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(a))
    np.testing.assert_array_equal(out.numpy(), -a)
