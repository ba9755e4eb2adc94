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
