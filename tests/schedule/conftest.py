"""Fixtures of the schedule tests."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def direct_conv_only(monkeypatch):
    """Pin ``conv_direct``'s own schedule: ``conv_lanes`` (which takes convs with constant
    weights on AVX2), ``conv_pointwise`` (1x1 convs, strided ones too) and ``conv_winograd``
    (3x3 stride-1 convs) are switched off, and kernels built with them on are forgotten."""
    from minitvm.backend import kernel_cache
    from minitvm.schedule import conv_lanes, conv_pointwise, conv_winograd

    monkeypatch.setattr(conv_winograd, "DEFAULT_ON", False)

    monkeypatch.setattr(conv_lanes, "ENABLED", {"avx512": False, "avx2": False})
    monkeypatch.setattr(conv_pointwise, "ENABLED", {"avx512": False, "avx2": False})
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


@pytest.fixture
def generic_resize(monkeypatch):
    """Resize stages on the generic injective lowering (``resize``'s rule switched off), with
    the kernels built under either setting forgotten."""
    from minitvm.backend import kernel_cache
    from minitvm.schedule import lower
    from minitvm.topi.image_resize import RESIZE_TAG

    monkeypatch.setitem(lower.RULES, RESIZE_TAG, [])
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


@pytest.fixture
def force_knobs(monkeypatch):
    """``force_knobs(**knobs)``: build every conv_lanes kernel with these knob values. The
    in-process kernel cache, which keys on the knob table and not on the defaults, is emptied
    before and after, so that no other test gets these kernels."""
    from minitvm.backend import kernel_cache
    from minitvm.schedule import conv_lanes

    default = conv_lanes.default_knobs

    def force(**knobs):
        kernel_cache.clear_cache()
        monkeypatch.setattr(conv_lanes, "default_knobs", lambda g: dict(default(g), **knobs))

    yield force
    kernel_cache.clear_cache()


@pytest.fixture
def restore_threads():
    """The thread pool's size put back after the test."""
    from minitvm.runtime import threadpool

    before = threadpool.get_num_threads()
    yield
    threadpool.set_num_threads(before)


@pytest.fixture
def no_winograd(monkeypatch):
    """3x3 stride-1 convs stay off conv_winograd (on conv_lanes / conv_direct), and the kernels
    built meanwhile stay out of other tests (a module takes it with ``usefixtures``)."""
    from minitvm.backend import kernel_cache
    from minitvm.schedule import conv_winograd

    monkeypatch.setattr(conv_winograd, "DEFAULT_ON", False)
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()
