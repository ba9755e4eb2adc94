"""``tvm.meta_schedule.relay_integration``: tune a Relay model, then build it with the best
configurations found."""

from __future__ import annotations

from .. import relay, transform
from ..tune import RecordDatabase, apply_history_best
from .integration import check_database, tune_model


def tune_relay(mod, params, target, work_dir, max_trials_global: int, *,
               max_trials_per_task: int | None = None, num_trials_per_iter: int = 64,
               strategy: str = "evolutionary", seed: int | None = None,
               **kwargs) -> RecordDatabase:
    """Tune the workloads of Relay module ``mod`` for ``target``; returns the records
    (``compile_relay`` builds with them). The other MetaSchedule options (builder, runner,
    cost model, task scheduler, ...) have no counterpart and are not used."""
    return tune_model(mod, params, target, work_dir, max_trials_global, max_trials_per_task,
                      strategy, seed, "meta_schedule.relay_integration.tune_relay")


def compile_relay(database: RecordDatabase, mod, target, params, *, backend: str = "graph",
                  opt_level: int = 3, pass_config=None, executor=None, disabled_pass=(),
                  instruments=None):
    """``relay.build`` (backend "graph") or ``relay.vm.compile`` ("vm") with the best
    configuration of every workload in ``database``."""
    check_database(database, "meta_schedule.relay_integration.compile_relay")
    if backend not in ("graph", "vm"):
        raise ValueError(f"compile_relay: backend must be 'graph' or 'vm', got {backend!r}")
    with apply_history_best(database, target), transform.PassContext(
            opt_level=opt_level, config=pass_config or {}, disabled_pass=disabled_pass,
            instruments=instruments):
        if backend == "graph":
            kwargs = {} if executor is None else {"executor": executor}
            return relay.build(mod, target=target, params=params, **kwargs)
        return relay.vm.compile(mod, target=target, params=params)
