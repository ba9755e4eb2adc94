"""The in-process kernel cache shared by every dialect's build.

Kernels are keyed by a hash of their source function plus everything else that changes the code
(the lowering options, which inputs are constants); candidates under a key are confirmed with the
caller's equality (structural equality), so a repeated build, or a block repeated inside one
model, compiles nothing. Thread-safe.

The cache keeps the ``KERNEL_CACHE_SIZE`` most recently used keys (LRU): each entry holds its
source function and compiled kernel, so an unbounded cache kept every kernel of every program a
process ever built (a long fuzzing run reached 7 GB). A kernel evicted here but still held by a
live module is found again by the code generator's cache (``codegen.build``), which then
compiles nothing; only lowering and scheduling run again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..runtime.bounded_cache import BoundedCache
from ..runtime.module import Kernel

# 256 keys: the distinct kernels of several models (ResNet-50 has 36)
KERNEL_CACHE_SIZE = 256
_CACHE = BoundedCache("backend.kernels", KERNEL_CACHE_SIZE)
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
        _CACHE[key] = [*_CACHE.get(key, ()), (source, kernel)]
    return kernel


def clear_cache() -> None:
    """Forget every cached kernel and reset the hit/miss counts."""
    with _LOCK:
        _CACHE.clear()
        STATS["hits"] = STATS["misses"] = 0
