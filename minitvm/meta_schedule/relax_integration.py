"""``tvm.meta_schedule.relax_integration``: tune a Relax model, then build it with the best
configurations found."""

from __future__ import annotations

from .. import relax
from ..tune import RecordDatabase, apply_history_best
from .integration import check_database, tune_model


def tune_relax(mod, params, target, work_dir, max_trials_global: int, *,
               max_trials_per_task: int | None = None, num_trials_per_iter: int = 64,
               strategy: str = "evolutionary", seed: int | None = None,
               **kwargs) -> RecordDatabase:
    """Tune the workloads of Relax module ``mod`` for ``target``; returns the records."""
    return tune_model(mod, params, target, work_dir, max_trials_global, max_trials_per_task,
                      strategy, seed, "meta_schedule.relax_integration.tune_relax")


def compile_relax(database: RecordDatabase, mod, target, params=None,
                  enable_warning: bool = False):
    """``relax.build`` with the best configuration of every workload in ``database``."""
    check_database(database, "meta_schedule.relax_integration.compile_relax")
    if params:
        mod = relax.transform.BindParams("main", params)(mod)
    with apply_history_best(database, target):
        return relax.build(mod, target=target)
