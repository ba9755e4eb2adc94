"""``autotvm.measure_option``, ``LocalBuilder``, ``LocalRunner``: how candidates are measured.

minitvm builds and times each candidate in one worker process (``minitvm.tune.LocalRunner``)
with its own timing protocol (the candidate's fused function, best of several runs); the
builder's settings and the runner's ``number``/``repeat``/``min_repeat_ms``/cache-flush
options are kept on the objects for scripts that read them but do not change that protocol.
A candidate may take the builder's ``timeout`` plus the runner's (it is built and run in one
step); one that takes longer is recorded as failed.
"""

from __future__ import annotations

from .differs import differs


class LocalBuilder:
    """TVM's local builder settings (minitvm builds inside the measuring worker)."""

    def __init__(self, timeout: float = 10, n_parallel: int | None = None,
                 build_kwargs: dict | None = None, build_func: str = "default",
                 do_fork: bool = False, runtime=None):
        if timeout <= 0:
            raise ValueError(f"autotvm.LocalBuilder: timeout must be positive, got {timeout}")
        self.timeout, self.n_parallel = float(timeout), n_parallel
        self.build_kwargs, self.build_func = build_kwargs, build_func


class LocalRunner:
    """Measure on this machine; ``timeout`` (seconds) bounds each candidate's build and run."""

    def __init__(self, timeout: float = 10, number: int = 4, repeat: int = 3,
                 min_repeat_ms: int = 0, cooldown_interval: float = 0.1,
                 enable_cpu_cache_flush: bool = False, module_loader=None):
        if timeout <= 0:
            raise ValueError(f"autotvm.LocalRunner: timeout must be positive, got {timeout}")
        self.timeout = float(timeout)
        self.number, self.repeat, self.min_repeat_ms = number, repeat, min_repeat_ms
        self.enable_cpu_cache_flush = enable_cpu_cache_flush


def RPCRunner(*args, **kwargs):  # noqa: N802  (TVM's class name)
    raise differs("tvm.autotvm.RPCRunner", "there is no RPC tracker or remote device runner",
                  "autotvm.LocalRunner (this machine), or minitvm.tune.tune_tasks(..., "
                  "runner='ray') to spread measurements over a Ray cluster")


def _local(value, cls: type, role: str):
    """``value`` as an instance of ``cls`` (``"local"`` or None makes one), else a clear error."""
    if value is None or value == "local":
        return cls()
    if isinstance(value, str):
        raise ValueError(f"autotvm.measure_option: {role} must be 'local' or a {cls.__name__}, "
                         f"got {value!r}")
    if not isinstance(value, cls):
        raise TypeError(f"autotvm.measure_option: {role} must be an autotvm.{cls.__name__}, "
                        f"got {type(value).__name__}")
    return value


def measure_option(builder=None, runner=None) -> dict:
    """The measurement settings a tuner's ``tune(measure_option=...)`` takes."""
    builder = _local(builder, LocalBuilder, "builder")
    runner = _local(runner, LocalRunner, "runner")
    return {"builder": builder, "runner": runner, "timeout": builder.timeout + runner.timeout}
