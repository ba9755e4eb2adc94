"""Pausing Python's cyclic garbage collector around walks that build or read big IR.

IR graphs are acyclic and freed by reference counting. While a walk allocates (stack entries,
memo tables, new nodes), the collector's full collections rescan every live IR node, so
printing, parsing, type-checking or comparing a 100,000-node program spent a third of its time
in them (100k add chain: parse 3.6 -> 2.5 s, structural_equal 1.4 -> 0.8 s CPU).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


def gc_paused(fn: F) -> F:
    """Decorate ``fn`` to run with the cyclic collector paused (restored as it was after, also
    on an exception; nested uses leave it paused until the outermost one returns)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return run  # type: ignore[return-value]
