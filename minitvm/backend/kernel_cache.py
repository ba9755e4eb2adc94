"""The in-process kernel cache shared by every dialect's build.

Kernels are keyed by a hash of their source function plus everything else that changes the code
(the lowering options, which inputs are constants); candidates under a key are confirmed with the
caller's equality (structural equality), so a repeated build, or a block repeated inside one
model, compiles nothing. Thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..runtime.module import Kernel

_CACHE: dict = {}
_LOCK = threading.Lock()
STATS = {"hits": 0, "misses": 0}


def cached_kernel(key, source, name: str, equal: Callable, make: Callable[[], Kernel]) -> Kernel:
    """The kernel for ``source`` under ``key`` (renamed ``name``), made by ``make()`` on a miss."""
    with _LOCK:
        for cand, kernel in _CACHE.get(key, ()):
            if equal(cand, source):
                STATS["hits"] += 1
                return kernel.renamed(name, source)
        STATS["misses"] += 1
    kernel = make()
    with _LOCK:
        _CACHE.setdefault(key, []).append((source, kernel))
    return kernel


def clear_cache() -> None:
    """Forget every cached kernel and reset the hit/miss counts."""
    with _LOCK:
        _CACHE.clear()
        STATS["hits"] = STATS["misses"] = 0
