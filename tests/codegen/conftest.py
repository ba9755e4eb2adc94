"""Fixtures of the codegen tests (helpers live in codegen_helpers.py)."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty on-disk kernel cache of the test's own, and an empty in-process cache, so each
    kernel is compiled here (and its pipeline level chosen) rather than found."""
    from minitvm.backend import disk_cache
    from minitvm.codegen import clear_cache

    monkeypatch.setenv("MINITVM_CACHE_DIR", str(tmp_path / "cache"))
    clear_cache()
    yield disk_cache.get_cache(tmp_path / "cache")
    clear_cache()
