"""Bounded code caches: LRU order, weak references to values still alive elsewhere, and a
process building many distinct programs keeps at most each named cache's limit of them (a long
fuzzing run reached 7 GB with unbounded caches), while the modules it built still run."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.codegen.build import cache_info
from minitvm.contrib import graph_executor
from minitvm.runtime.bounded_cache import BoundedCache, caches, set_limits


class _Value:
    """A value that takes weak references (as ``jit.CompiledObject`` does)."""


@pytest.fixture
def cache():
    return BoundedCache("test.bounded_cache", 2)


def test_lru_keeps_the_most_recently_used(cache):
    cache["a"], cache["b"] = 1, 2
    assert cache.get("a") == 1  # "a" is now the most recent: "b" goes first
    cache["c"] = 3
    assert len(cache) == 2
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    assert cache.setdefault("c", 4) == 3 and cache.setdefault("d", 5) == 5
    assert cache.get("a") is None  # (the least recently used of a, c when d came)


def test_resize_evicts_and_clear_forgets(cache):
    cache["a"], cache["b"] = 1, 2
    cache.resize(1)
    assert cache.values() == [2]
    cache.resize(0)
    cache["c"] = 3
    assert len(cache) == 0 and cache.get("c") is None
    cache.resize(2)
    cache["d"] = 4
    cache.clear()
    assert len(cache) == 0 and cache.get("d") is None


def test_weak_cache_finds_evicted_values_alive_elsewhere():
    cache = BoundedCache("test.bounded_cache.weak", 1, weak=True)
    kept, dropped = _Value(), _Value()
    cache["kept"], cache["dropped"] = kept, dropped
    cache["other"] = _Value()  # evicts both: "kept" is still held here, "dropped" is not
    del dropped  # (no cycle: freed at once)
    assert len(cache) == 1
    assert cache.get("kept") is kept  # found by weak reference, now strongly held again
    assert cache.get("dropped") is None
    assert cache.weak_len() == 1  # (the dead entry is gone; "other" died when evicted)


def test_set_limits_names_the_caches():
    with pytest.raises(KeyError, match="no bounded cache named 'nope'"):
        set_limits({"nope": 1})
    old = set_limits({"codegen.kernels": 7})
    try:
        assert caches()["codegen.kernels"].limit == 7
    finally:
        set_limits(old)


def _add_program(n: int):
    """A small program of its own per ``n`` (a distinct shape, a distinct constant)."""
    x = relay.var("x", shape=(n,), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(x, relay.const(float(n)))))


def _run(lib, n: int) -> np.ndarray:
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", np.arange(n, dtype="float32"))
    m.run()
    return m.get_output(0).numpy()


def test_many_distinct_builds_keep_the_caches_bounded(monkeypatch):
    """Each named cache holds at most its limit after builds of distinct programs; modules whose
    kernels every cache dropped still run (they hold their code); rebuilding a live module's
    program compiles nothing (its kernel is found by weak reference)."""
    monkeypatch.setenv("MINITVM_DISABLE_DISK_CACHE", "1")
    limit = 2
    old = set_limits({name: limit for name in caches()})
    try:
        libs = {}
        for n in range(3, 9):
            with tvm.transform.PassContext(opt_level=3):
                libs[n] = relay.build(_add_program(n), "llvm")
        for name, c in caches().items():
            assert len(c) <= limit, name
        for n in (3, 8):  # the first (evicted everywhere) and the last
            np.testing.assert_allclose(_run(libs[n], n), np.arange(n) + n)
        misses = cache_info()["misses"]
        with tvm.transform.PassContext(opt_level=3):
            again = relay.build(_add_program(3), "llvm")
        assert cache_info()["misses"] == misses
        np.testing.assert_allclose(_run(again, 3), np.arange(3) + 3)
    finally:
        set_limits(old)
