"""``tvm.runtime.profiler_vm``: the Relay VM that times every kernel call.

``VirtualMachineProfiler(exe, dev).profile(*args)`` runs ``main`` once and returns a
``profiling.Report`` with one entry per kernel call (name, duration, argument shapes) and the
run's total, as TVM's debug VM does."""

from __future__ import annotations

import time

import numpy as np

from . import threadpool
from .profiling import Count, Duration, Percent, Report
from .vm import bytecode as B
from .vm.vm import VirtualMachine

__all__ = ["VirtualMachineProfiler", "enabled"]


def enabled() -> bool:
    """Whether the VM profiler is available (always, in minitvm)."""
    return True


def _shapes(arrays) -> str:
    return ", ".join(f"{a.dtype}[{', '.join(str(d) for d in a.shape)}]" for a in arrays)


class VirtualMachineProfiler(VirtualMachine):
    """A ``VirtualMachine`` whose ``profile`` reports the time of each kernel call."""

    def __init__(self, exe, device=None, memory_cfg=None):
        super().__init__(exe, device, memory_cfg)
        self._records: list[dict] | None = None
        self.native_entry = False  # every call in the dispatch loop, where kernels are timed

    def _prepare(self) -> list[tuple]:
        """Every kernel call goes through ``_invoke_packed`` (no direct fast entry), where it
        is timed."""
        prepared = []
        for code, nreg, nparams, name in super()._prepare():
            code = [ins[:5] + (None,) + ins[6:] if ins[0] == B.INVOKE_PACKED else ins
                    for ins in code]
            prepared.append((code, nreg, nparams, name))
        return prepared

    def _invoke_packed(self, idx: int, inputs: list, outputs: list | None) -> list:
        if self._records is None:
            return super()._invoke_packed(idx, inputs, outputs)
        t0 = time.perf_counter()
        res = super()._invoke_packed(idx, inputs, outputs)
        dt = time.perf_counter() - t0
        args = [np.asarray(a) for a in inputs] + [np.asarray(r) for r in res]
        self._records.append({"Name": self.exe.kernels[idx].name,
                              "Duration (us)": Duration(dt * 1e6),
                              "Device": self._device_name(), "Count": Count(1),
                              "Argument Shapes": _shapes(args)})
        return res

    def _device_name(self) -> str:
        return str(self.device).replace("(", "").replace(")", "")

    def profile(self, *args, func_name: str = "main", collectors=None, **kwargs) -> Report:
        """Run ``func_name`` once and return the per-call ``Report``."""
        if args or kwargs:
            self.set_input(func_name, *args, **kwargs)
        values = self._inputs.get(func_name) or self._check(func_name, (), {})
        collectors = list(collectors or ())
        for c in collectors:
            c.init([self.device])
        tokens = [c.start(self.device) for c in collectors]
        self._records = []
        t0 = time.perf_counter()
        try:
            self._execute(self.exe.global_map[func_name], values)
            total = (time.perf_counter() - t0) * 1e6
            calls = self._records
        finally:
            self._records = None
        for r in calls:
            r["Percent"] = Percent(100.0 * r["Duration (us)"].microseconds / total
                                   if total else 0.0)
        dev_metrics = {"Duration (us)": Duration(total), "Percent": Percent(100.0),
                       "Count": Count(1)}
        for c, tok in zip(collectors, tokens):
            dev_metrics.update(c.stop(tok) or {})
        config = {"Number of threads": threadpool.get_num_threads(), "Executor": "VM"}
        return Report(calls, {self._device_name(): dev_metrics}, config)
