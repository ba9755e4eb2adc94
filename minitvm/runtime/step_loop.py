"""The native step loop: a graph too large for a compiled whole-graph entry still runs in one call.

The whole-graph entry (``backend.aot``) is one LLVM function per graph, with a call per kernel;
its compile time grows with the graph (100,000 steps: 4.5 CPU s of LLVM), so graphs over
``aot.MAX_ENTRY_STEPS`` steps get none. For them the executor fills a *step list* instead —
each step's kernel address and the offset of its argument pointers in the executor's pointer
table — laid out as a plan without patches for the loop both VMs replay their plans with
(``native_plan``'s ``mtvm_relax_run_plan``, JIT-compiled once per process), which calls every
kernel through its address. Nothing is compiled per graph, and a run is one ctypes call, as
with the entry.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .native_plan import HEADER, run_plan_address

__all__ = ["StepLoop"]


class StepLoop:
    """The step list of one graph: ``(kernel address, number of argument pointers)`` per native
    step, in order, their argument pointers back to back in the table ``run`` is given."""

    __slots__ = ("_words", "_by_table", "_n", "_fn")

    def __init__(self, steps: list[tuple[int, int]]):
        if not steps:
            raise ValueError("StepLoop: a graph with no kernel steps needs no step loop")
        addresses = np.array([a for a, _ in steps], dtype=np.uint64)
        missing = np.flatnonzero(addresses == 0)
        if missing.size:
            raise ValueError(f"StepLoop: step {int(missing[0])} has no kernel address")
        n = len(steps)
        nargs = np.array([k for _, k in steps], dtype=np.int64)
        # plan words: the header (no patches, n steps; the table and vars addresses are set in a
        # copy per table), a (kernel, table offset, vars offset 0) row per step, one zero word
        # for the vars (graph kernels have static shapes and read none)
        words = np.zeros(HEADER + 3 * n + 1, dtype=np.int64)
        words[1] = n
        rows = words[HEADER:HEADER + 3 * n].reshape(n, 3)
        rows[:, 0] = addresses.view(np.int64)
        np.cumsum(nargs[:-1], out=rows[1:, 1])
        self._words = words
        self._by_table: dict[int, np.ndarray] = {}  # table address -> the words that use it
        self._n = n
        self._fn = run_plan_address()[1]  # (releases the GIL, as the whole-graph entry does)

    def __len__(self) -> int:
        return self._n

    def _words_for(self, table_address: int) -> np.ndarray:
        words = self._by_table.get(table_address)
        if words is None:
            if len(self._by_table) >= 4:  # (an executor keeps one table; a few at most)
                self._by_table.clear()
            words = self._words.copy()
            words[2] = table_address
            words[3] = words.ctypes.data + 8 * (len(words) - 1)
            self._by_table[table_address] = words
        return words

    def run(self, table, num_threads: int) -> None:
        """Call every step's kernel with its slice of ``table`` (a ctypes pointer array)."""
        words = self._words_for(ctypes.addressof(table))
        self._fn(None, words.ctypes.data, num_threads)
