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
