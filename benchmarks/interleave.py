"""Timing peers side by side without one disturbing the next: interleaved rounds, each
implementation's turn preceded by a pause in which the previous one's pool threads go idle.

OpenBLAS (under numpy) and libgomp (under PyTorch) keep their worker threads spinning for a
while after a call (libgomp up to ``GOMP_SPINCOUNT`` = 300,000 polls when torch loaded it before
minitvm set a shorter one). Timed right after them, a 2-thread runtime finds a core taken:
minitvm's MLP n=1024 read 2.35 ms instead of 1.42 ms, MobileNetV2 9.9 ms instead of 5.2 ms.

The pause has a cost of its own: a CPU left idle for 0.15 s comes back slow for a millisecond
or two (clock and caches; on this virtual machine the MLP at batch 64, 0.16 ms per call, took
0.34 ms for the first six calls after it, at one thread as at two). So each turn then runs its
implementation untimed for ``WARM_S`` before the timed calls.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

SETTLE_S = 0.15
WARM_S = 0.02


def settled_rounds(impls: dict[str, Callable[[], object]], rounds: int, reps: int,
                   clock: Callable[[], float] = time.perf_counter,
                   settle_s: float = SETTLE_S, warm_s: float = WARM_S) -> dict[str, list[float]]:
    """Seconds per call of each implementation: one median of ``reps`` calls per round. Each
    turn starts with a ``settle_s`` pause, then untimed calls for ``warm_s`` (at least one),
    which wake this implementation's own threads, the CPU and the caches."""
    times: dict[str, list[float]] = {k: [] for k in impls}
    for _ in range(rounds):
        for name, fn in impls.items():
            time.sleep(settle_s)
            end = time.perf_counter() + warm_s
            fn()
            while time.perf_counter() < end:
                fn()
            ts = []
            for _ in range(reps):
                t0 = clock()
                fn()
                ts.append(clock() - t0)
            times[name].append(statistics.median(ts))
    return times


def best_vm_time(vm, a, calls: int = 5) -> float:
    """The best of ``calls`` wall times of ``vm.run(a)`` (a Relay VM), after two untimed calls
    (the second records the VM's native entry)."""
    vm.run(a)
    vm.run(a)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        vm.run(a)
        times.append(time.perf_counter() - t0)
    return min(times)
