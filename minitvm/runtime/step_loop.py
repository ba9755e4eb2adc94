"""The native step loop: a graph too large for a compiled whole-graph entry still runs in one call.

The whole-graph entry (``backend.aot``) is one LLVM function per graph, with a call per kernel;
its compile time grows with the graph (100,000 steps: 4.5 CPU s of LLVM), so graphs over
``aot.MAX_ENTRY_STEPS`` steps get none. For them the executor fills a *step list* instead —
each step's kernel address and the offset of its argument pointers in the executor's pointer
table — and ``mtvm_graph_run_steps``, one small function JIT-compiled once per process, walks
it calling every kernel through its address. Nothing is compiled per graph, and a run is one
ctypes call, as with the entry.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

__all__ = ["StepLoop", "run_steps_function"]

_SYMBOL = "mtvm_graph_run_steps"

# steps: [kernel address, table offset (pointers)] as i64 pairs; kernel(table + offset, null, nth)
_RUN_STEPS_IR = f"""
define void @{_SYMBOL}(ptr %table, ptr %steps, i64 %n, i32 %nth) {{
entry:
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %step, label %done
step:
  %i = phi i64 [ 0, %entry ], [ %inext, %step ]
  %i2 = shl i64 %i, 1
  %p0 = getelementptr i64, ptr %steps, i64 %i2
  %fn = load ptr, ptr %p0
  %p1 = getelementptr i64, ptr %p0, i64 1
  %off = load i64, ptr %p1
  %args = getelementptr ptr, ptr %table, i64 %off
  call void %fn(ptr %args, ptr null, i32 %nth)
  %inext = add i64 %i, 1
  %more = icmp slt i64 %inext, %n
  br i1 %more, label %step, label %done
done:
  ret void
}}
"""

_RUN_STEPS = None
_RUN_STEPS_LOCK = threading.Lock()
_RUN_STEPS_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                   ctypes.c_int32)


def run_steps_function():
    """The ctypes function of ``mtvm_graph_run_steps(table, steps, n, num_threads)``: compiled
    once per process (the GIL is released while it runs, as for the whole-graph entry)."""
    global _RUN_STEPS
    with _RUN_STEPS_LOCK:
        if _RUN_STEPS is None:
            from . import jit

            compiled = jit.compile_ir(_RUN_STEPS_IR, _SYMBOL, opt=2)
            _RUN_STEPS = (compiled, _RUN_STEPS_TYPE(compiled.address))
        return _RUN_STEPS[1]


class StepLoop:
    """The step list of one graph: ``(kernel address, number of argument pointers)`` per native
    step, in order, their argument pointers back to back in the table ``run`` is given."""

    __slots__ = ("_steps", "_n", "_fn")

    def __init__(self, steps: list[tuple[int, int]]):
        if not steps:
            raise ValueError("StepLoop: a graph with no kernel steps needs no step loop")
        addresses = np.array([a for a, _ in steps], dtype=np.uint64)
        missing = np.flatnonzero(addresses == 0)
        if missing.size:
            raise ValueError(f"StepLoop: step {int(missing[0])} has no kernel address")
        nargs = np.array([n for _, n in steps], dtype=np.int64)
        rows = np.empty((len(steps), 2), dtype=np.int64)
        rows[:, 0] = addresses.view(np.int64)
        rows[0, 1] = 0
        np.cumsum(nargs[:-1], out=rows[1:, 1])
        self._steps = rows
        self._n = len(steps)
        self._fn = run_steps_function()

    def __len__(self) -> int:
        return self._n

    def run(self, table, num_threads: int) -> None:
        """Call every step's kernel with its slice of ``table`` (a ctypes pointer array)."""
        self._fn(ctypes.addressof(table), self._steps.ctypes.data, self._n, num_threads)
