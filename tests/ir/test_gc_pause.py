"""gc_paused: the cyclic collector is off inside the decorated call and restored after it."""

import gc

import pytest

from minitvm.ir.gc_pause import gc_paused


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
