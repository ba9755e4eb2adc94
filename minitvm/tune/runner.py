"""Measure candidates in worker processes, so a candidate that crashes or hangs costs only
itself: its result is an error and the tuner goes on.

``LocalRunner`` keeps one worker process (measurements on one machine run one at a time, or
they would disturb each other's timings) and replaces it when a candidate kills it or runs
past the time-out. ``RayRunner`` (``ray_runner.py``) sends candidates to a Ray cluster.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time
import traceback
from dataclasses import dataclass, field


@dataclass
class MeasureResult:
    """Costs in seconds of one candidate, or why it has none."""

    costs: list = field(default_factory=list)
    error: str | None = None
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.costs)


def run_candidate(task, knobs: dict) -> MeasureResult:
    """Measure one candidate in this process: ``task.measure(task, knobs)`` (default:
    build the workload alone and time it); an exception becomes the result's error."""
    from .workload import measure_workload

    t0 = time.perf_counter()
    fn = task.measure if task.measure is not None else measure_workload
    try:
        costs = [float(c) for c in fn(task, knobs)]
        if not costs:
            return MeasureResult([], "the measurement returned no costs",
                                 time.perf_counter() - t0)
        return MeasureResult(costs, None, time.perf_counter() - t0)
    except Exception as err:  # a failing candidate is a result, not a tuner failure
        last = traceback.format_exception_only(type(err), err)[-1].strip()
        return MeasureResult([], f"{type(err).__name__}: {last}", time.perf_counter() - t0)


# Seconds a measuring process waits, once, after starting OpenBLAS's threads (they spin for
# about 0.1 s before sleeping)
BLAS_SETTLE_S = 0.2


def settle_blas() -> None:
    """Start OpenBLAS's threads in a fresh measuring process and let them go idle first.

    A forked worker has none: the first call that needs them (numpy's reference output, or a
    BLAS kernel's guard restoring the thread count after a run) started them mid-measurement,
    and they spun on the second core: a BERT batch_matmul measured at one thread's speed, 0.32
    against 0.17 ms. The thread count stays the process's own, as in a user's process, so a
    kernel calling BLAS pays the same guard per run as in the model (pinning OpenBLAS to one
    thread here made MLP's 64x10x128 BLAS dense look 1.1 us faster than the generated one;
    it is 1 us slower)."""
    import numpy as np

    from ..runtime import blas

    if not blas.available():
        return
    n = blas.get_num_threads()
    if n:
        blas.set_num_threads(n)
    a = np.ones((256, 256), dtype="float32")
    a @ a
    time.sleep(BLAS_SETTLE_S)


# Seconds a fresh worker may take to start and settle before it is given up on. Its start is
# not the candidate's time: on a loaded machine a fork plus ``settle_blas`` took longer than a
# short time-out, and a crashing candidate after a restart was reported as a time-out
WORKER_START_S = 60.0
_READY = "ready"


def _worker_main(conn) -> None:
    """A worker's loop: receive (task, knobs), send back the MeasureResult; None stops it.

    OpenBLAS's threads are started and settled first (``settle_blas``), then the worker says
    it is ready."""
    settle_blas()
    conn.send(_READY)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        task, knobs = job
        conn.send(run_candidate(task, knobs))


def _default_start_method() -> str:
    # fork is cheap (no re-import) and the back end is fork-safe; elsewhere spawn
    return "fork" if sys.platform.startswith("linux") else "spawn"


class LocalRunner:
    """Candidates measured one at a time in a worker process with a per-candidate time-out.

    ``timeout``: seconds a candidate (build + timing) may take before its worker is killed; a
    fresh worker's own start does not count (``WORKER_START_S``).
    ``start_method``: "fork" (default on Linux) or "spawn".
    """

    def __init__(self, timeout: float = 60.0, start_method: str | None = None):
        if timeout <= 0:
            raise ValueError(f"LocalRunner: timeout must be positive, got {timeout}")
        self.timeout = float(timeout)
        self.start_method = start_method or _default_start_method()
        self._ctx = mp.get_context(self.start_method)
        self._proc = None
        self._conn = None
        self.restarts = 0

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_worker_main, args=(child,), daemon=True,
                                 name="minitvm-tune-worker")
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        try:
            ready = parent.poll(WORKER_START_S) and parent.recv() == _READY
        except (EOFError, OSError):
            ready = False
        if not ready:
            self._kill()
            raise RuntimeError(f"LocalRunner: a measuring worker did not start within "
                               f"{WORKER_START_S:g} s")

    def _kill(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if conn is not None:
            conn.close()
        if proc is not None and proc.is_alive():
            proc.kill()
        if proc is not None:
            proc.join(5)
        self.restarts += 1

    def measure(self, task, knobs: dict) -> MeasureResult:
        """Measure one candidate; a crash or a time-out is an error result."""
        if self._proc is None or not self._proc.is_alive():
            if self._proc is not None:
                self._kill()
            try:
                self._start()
            except RuntimeError as err:
                return MeasureResult([], str(err), 0.0)
        t0 = time.perf_counter()  # (the candidate's time: from a started, settled worker)
        try:
            self._conn.send((task, knobs))
        except Exception as err:  # unpicklable task, or the worker died meanwhile
            self._kill()
            return MeasureResult([], f"could not send the candidate: {err}", 0.0)
        if not self._conn.poll(self.timeout):
            self._kill()
            return MeasureResult([], f"timeout: no result within {self.timeout:g} s",
                                 time.perf_counter() - t0)
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            code = self._proc.exitcode if self._proc is not None else None
            if self._proc is not None:
                self._proc.join(5)
                code = self._proc.exitcode
            self._kill()
            return MeasureResult([], f"worker crashed (exit code {code})",
                                 time.perf_counter() - t0)

    def run(self, task, candidates: list[dict]) -> list[MeasureResult]:
        return [self.measure(task, k) for k in candidates]

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.send(None)
            except Exception:
                pass
        proc = self._proc
        if proc is not None:
            proc.join(2)
        self._kill()
        self.restarts -= 1  # closing is not a restart

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.is_alive():
            proc.kill()
