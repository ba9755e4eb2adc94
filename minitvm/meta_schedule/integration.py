"""What the Relay and Relax integrations share: MetaSchedule's tuning arguments mapped onto
``minitvm.tune.tune_tasks``."""

from __future__ import annotations

import math
from pathlib import Path

from ..autotvm.differs import differs
from ..tune import RecordDatabase, extract_tasks, tune_tasks

# MetaSchedule's search strategies -> minitvm's
STRATEGIES = {"evolutionary": "evolutionary", "replay-trace": "random", "replay-func": "random"}


def tune_model(mod, params, target, work_dir, max_trials_global: int,
               max_trials_per_task: int | None, strategy: str, seed: int | None,
               where: str, runner=None) -> RecordDatabase:
    """Tune every workload of ``mod``; records go to ``work_dir/records.jsonl``.

    ``max_trials_global`` is shared evenly by the tasks (each gets at least one trial),
    ``max_trials_per_task`` caps each; ``runner`` is ``tune_tasks``' (None: a worker
    process)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"{where}: strategy must be one of {sorted(STRATEGIES)}, got "
                         f"{strategy!r}")
    if max_trials_global < 1:
        raise ValueError(f"{where}: max_trials_global must be at least 1, got "
                         f"{max_trials_global}")
    tasks = extract_tasks(mod, params, target)
    records = None
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        records = Path(work_dir) / "records.jsonl"
    if not tasks:
        return RecordDatabase(records)
    per_task = max(1, math.ceil(max_trials_global / len(tasks)))
    if max_trials_per_task is not None:
        per_task = max(1, min(per_task, int(max_trials_per_task)))
    return tune_tasks(tasks, records, trials=per_task, strategy=STRATEGIES[strategy],
                      seed=seed or 0, progress="none", runner=runner)


def check_database(database, where: str) -> None:
    if not isinstance(database, RecordDatabase):
        raise differs(f"{where}(database={type(database).__name__})",
                      "builds read minitvm's tuning records, not MetaSchedule databases",
                      "the database returned by tune_relay / tune_relax (or a "
                      "minitvm.tune.RecordDatabase)")
