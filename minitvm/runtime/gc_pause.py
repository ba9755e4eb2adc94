"""Pausing Python's cyclic garbage collector around work that builds or reads big IR.

IR graphs are acyclic and freed by reference counting. While a walk allocates (stack entries,
memo tables, new nodes), the collector's full collections rescan every live IR node, so
printing, parsing, type-checking, comparing or transforming a 100,000-node program spent a
third of its time in them (100k add chain: parse 3.6 -> 2.5 s, structural_equal 1.4 -> 0.8 s
CPU; a 30,000-node Relay pipeline 8.1 -> 4.3 s). Every pass (``transform.Pass.__call__``), the
parsers, printers, InferType, structural equal/hash and JSON run with it paused, and so do the
VMs' dispatch loops, linking and native-entry recording. It lives in the runtime, the lowest
layer, so that both the runtime and the compiler (``ir.gc_pause``) use this one copy.

Work that makes cyclic garbage of its own (lowering and compiling kernels: TE/TIR and llvmlite
objects) keeps the collector running but leaves the program alive when it starts out of its
scans (``frozen``): a 100,000-node program's kernels were lowered with every full collection
rescanning its millions of objects.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


@contextlib.contextmanager
def paused():
    """The cyclic collector off inside, restored as it was after (also on an exception; nested
    uses leave it off until the outermost one ends)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def gc_paused(fn: F) -> F:
    """Decorate ``fn`` to run ``paused()``."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not gc.isenabled():  # (already paused: a pass calling structural_equal per binding)
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return run  # type: ignore[return-value]



def _no_op() -> None:
    pass


@contextlib.contextmanager
def frozen():
    """Inside, the objects alive on entry are left out of the cyclic collector's scans
    (``gc.freeze``); on exit they go back to its oldest generation (``gc.unfreeze``), so cycles
    among them are still collected, later. Reference counting frees what it frees either way.

    Yields ``freeze_new()``, which leaves the objects alive when it is called out too: called
    where the collector is paused after building a program, the first collection after the
    pause does not scan every node made during it. A process that froze objects itself (a
    pre-fork server), or runs with the collector off, is left as it is (unfreezing would give
    back its objects too), and ``freeze_new`` does nothing there."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield _no_op
        return
    gc.freeze()
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()
