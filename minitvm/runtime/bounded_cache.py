"""Bounded in-process caches of compiled code, named and listed in one place.

A process that builds many distinct programs (a fuzzer, a tuning loop, a test session) must not
keep every build's kernels alive: each JIT-compiled kernel keeps its machine code (in a shared
``jit.CodeArena`` since stop 61; an MCJIT engine of its own, about 0.8 MB, before), its LLVM IR
text and its PrimFunc, so unbounded code caches grew a long fuzzing run to 7 GB. A ``BoundedCache``
keeps its ``limit`` most recently used entries (LRU). With ``weak=True`` it also finds, by weak
reference, an evicted value that something else still holds (a built module's kernel): a
rebuild of a live program never compiles a second copy of its code, whatever the limit.

Every cache registers under its name (``caches()``), so a test can check that all of them stay
bounded and ``set_limits`` can resize them (e.g. to 0 to check that nothing depends on a cache
to keep code alive).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["BoundedCache", "caches", "set_limits"]

_REGISTRY: dict[str, BoundedCache] = {}
_MISSING = object()


class BoundedCache:
    """A thread-safe LRU mapping of at most ``limit`` entries, registered as ``name`` (a module
    loaded again replaces its caches there).

    ``weak``: evicted values (which must accept weak references) stay findable while anything
    else holds them, and come back as most recently used when asked for.
    """

    def __init__(self, name: str, limit: int, weak: bool = False):
        self.name = name
        self.limit = int(limit)
        self._strong: OrderedDict = OrderedDict()
        self._weak: dict | None = {} if weak else None  # key -> weak reference to its value
        self._lock = threading.RLock()
        _REGISTRY[name] = self

    def get(self, key, default=None):
        """The value under ``key`` (now the most recently used), else ``default``."""
        with self._lock:
            value = self._strong.get(key, _MISSING)
            if value is not _MISSING:
                self._strong.move_to_end(key)
                return value
            ref = self._weak.get(key) if self._weak is not None else None
            value = ref() if ref is not None else None
            if value is None:
                return default
            self._store(key, value)
            return value

    def __setitem__(self, key, value) -> None:
        with self._lock:
            self._store(key, value)

    def setdefault(self, key, value):
        """The value under ``key``, storing ``value`` there first when there is none."""
        with self._lock:
            found = self.get(key, _MISSING)
            if found is not _MISSING:
                return found
            self._store(key, value)
            return value

    def __len__(self) -> int:
        """Entries held strongly (the bounded part; weakly held ones cost nothing here)."""
        return len(self._strong)

    def weak_len(self) -> int:
        """Entries findable by weak reference (alive elsewhere), the strong ones included."""
        return 0 if self._weak is None else len(self._weak)

    def values(self) -> list:
        with self._lock:
            return list(self._strong.values())

    def clear(self) -> None:
        with self._lock:
            self._strong.clear()
            if self._weak is not None:
                self._weak.clear()

    def resize(self, limit: int) -> None:
        """Change the limit, evicting the least recently used entries beyond it."""
        with self._lock:
            self.limit = int(limit)
            self._trim()

    def _store(self, key, value) -> None:
        self._strong[key] = value
        self._strong.move_to_end(key)
        if self._weak is not None:
            ref = self._weak.get(key)
            if ref is None or ref() is not value:
                self._weak[key] = weakref.ref(value, self._dropper(key))
        self._trim()

    def _trim(self) -> None:
        while len(self._strong) > max(self.limit, 0):
            self._strong.popitem(last=False)

    def _dropper(self, key) -> Callable:
        """The callback forgetting ``key``'s weak entry when its value dies (unless the entry
        was replaced meanwhile)."""
        me = weakref.ref(self)

        def drop(ref) -> None:
            cache = me()
            if cache is not None and cache._weak.get(key) is ref:
                cache._weak.pop(key, None)
        return drop


def caches() -> dict[str, BoundedCache]:
    """Every bounded cache by name (those of the modules imported so far)."""
    return dict(_REGISTRY)


def set_limits(limits: dict[str, int]) -> dict[str, int]:
    """Resize the named caches; return their previous limits (to restore them)."""
    old = {}
    for name, limit in limits.items():
        cache = _REGISTRY.get(name)
        if cache is None:
            raise KeyError(f"no bounded cache named {name!r}; known: {sorted(_REGISTRY)}")
        old[name] = cache.limit
        cache.resize(limit)
    return old
