"""Candidates measured as Ray tasks (``pip install minitvm[tune]``), for a cluster of machines.

Each candidate is a Ray task running ``runner.run_candidate``; a task that raises, whose worker
dies, or that runs past the time-out (then cancelled) is an error result. Ray is imported only
when a ``RayRunner`` is made.
"""

from __future__ import annotations

import time

from .runner import MeasureResult, run_candidate, settle_blas

_SETTLED: list[bool] = []


def _remote_measure(task, knobs):
    if not _SETTLED:  # once per Ray worker process
        settle_blas()
        _SETTLED.append(True)
    return run_candidate(task, knobs)


class RayRunner:
    """``RayRunner(address)`` connects to a running cluster (``"auto"``, ``"ray://host:10001"``);
    ``address=None`` connects to one if running, else starts one; ``local_mode=True`` always
    starts a small local one (tests).

    ``num_cpus``: CPUs each measurement reserves (Ray's default is 1; give a node's core count
    so that measurements on one node never overlap and disturb each other's timings).
    """

    def __init__(self, address: str | None = None, timeout: float = 60.0,
                 local_mode: bool = False, num_cpus: float | None = None, **init_kwargs):
        try:
            import ray
        except ImportError as err:
            raise ImportError("RayRunner needs Ray: pip install 'minitvm[tune]' "
                              "(or pip install ray)") from err
        self.ray = ray
        self.timeout = float(timeout)
        self.local_mode = local_mode
        self._owns = not ray.is_initialized()
        if self._owns:
            kwargs = dict(address=address, ignore_reinit_error=True, include_dashboard=False,
                          log_to_driver=False, logging_level="ERROR")
            if local_mode:  # a single-node cluster on this machine (Ray >= 2.40 dropped
                # the in-process local_mode)
                kwargs["address"] = "local"
                kwargs.setdefault("num_cpus", int(num_cpus or 1))
            kwargs.update(init_kwargs)
            ray.init(**kwargs)
        opts = {"max_retries": 0}
        if num_cpus is not None:
            opts["num_cpus"] = num_cpus
        self._remote = ray.remote(**opts)(_remote_measure)

    def run(self, task, candidates: list[dict]) -> list[MeasureResult]:
        """Measure ``candidates`` as concurrent Ray tasks (collected in order)."""
        ray = self.ray
        refs = [self._remote.remote(task, k) for k in candidates]
        out = []
        for ref in refs:
            t0 = time.perf_counter()
            try:
                out.append(ray.get(ref, timeout=self.timeout))
            except ray.exceptions.GetTimeoutError:
                ray.cancel(ref, force=True)
                out.append(MeasureResult([], f"timeout: no result within {self.timeout:g} s",
                                         time.perf_counter() - t0))
            except ray.exceptions.RayError as err:
                msg = " ".join(str(err).split())[-300:] or type(err).__name__
                out.append(MeasureResult([], f"ray: {type(err).__name__}: {msg}",
                                         time.perf_counter() - t0))
        return out

    def measure(self, task, knobs: dict) -> MeasureResult:
        return self.run(task, [knobs])[0]

    def close(self) -> None:
        if self._owns and self.ray.is_initialized():
            self.ray.shutdown()
        self._owns = False

    def __enter__(self) -> RayRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
