"""``autotvm.tuner``: ``XGBTuner``, ``GATuner``, ``RandomTuner`` over minitvm's search.

``tuner.tune(n_trial, measure_option=..., callbacks=[progress_bar(...), log_to_file(path)])``
measures up to ``n_trial`` configurations of the task's knobs with ``minitvm.tune`` and appends
every result to the log file. minitvm's search has no learned cost model: ``XGBTuner`` and
``GATuner`` run its evolutionary search (mutation and crossover of the best measured
configurations), ``RandomTuner`` its random search. ``early_stopping`` is not applied: the
search stops after ``n_trial`` measurements or when the space is exhausted.
"""

from __future__ import annotations

from ..tune import RecordDatabase, tune_tasks
from .callback import LogToFile, ProgressBar
from .differs import differs, missing_attribute
from .measure import measure_option as _measure_option
from .task import Task


class Tuner:
    """Base of the tuners: ``tune`` runs the search; afterwards ``best_config`` holds the
    fastest knobs found and ``best_cost`` their seconds per call."""

    strategy = "evolutionary"

    def __init__(self, task: Task, **kwargs):
        if not isinstance(task, Task):
            raise TypeError(f"{type(self).__name__} takes a task of autotvm.task."
                            f"extract_from_program, got {type(task).__name__}")
        self.task = task
        self.best_config: dict | None = None
        self.best_cost = float("inf")
        self.database: RecordDatabase | None = None

    def tune(self, n_trial: int, measure_option: dict | None = None, early_stopping=None,
             callbacks=(), si_prefix: str = "G") -> None:
        option = measure_option if measure_option is not None else _measure_option()
        records, progress = None, "none"
        for cb in callbacks or ():
            if isinstance(cb, LogToFile):
                records = cb.path
            elif isinstance(cb, ProgressBar):
                progress = "auto"
            else:
                raise differs(f"{type(self).__name__}.tune callback {cb!r}",
                              "the tuner does not pass TVM's MeasureInput/MeasureResult pairs "
                              "to user callbacks",
                              "autotvm.callback.log_to_file / progress_bar and read the log "
                              "with autotvm.record.load_from_file afterwards")
        self.database = tune_tasks([self.task.task], records, trials=int(n_trial),
                                   timeout=option["timeout"], strategy=self.strategy,
                                   progress=progress)
        best = self.database.best(self.task.task.workload, self.task.target)
        if best is not None:
            self.best_config, self.best_cost = dict(best.knobs), best.cost


class XGBTuner(Tuner):
    """TVM's XGBoost-guided tuner; here minitvm's evolutionary search (no cost model)."""

    def __init__(self, task: Task, plan_size: int = 64, feature_type: str = "itervar",
                 loss_type: str = "reg", num_threads=None, optimizer: str = "sa",
                 diversity_filter_ratio=None, log_interval: int = 50):
        super().__init__(task)


class GATuner(Tuner):
    """TVM's genetic-algorithm tuner; here minitvm's evolutionary search."""

    def __init__(self, task: Task, pop_size: int = 100, elite_num: int = 3,
                 mutation_prob: float = 0.1):
        super().__init__(task)


class RandomTuner(Tuner):
    """Configurations drawn at random without repeats."""

    strategy = "random"

    def __init__(self, task: Task, range_idx=None):
        super().__init__(task)


_LEFT_OUT = {
    "GridSearchTuner": ("minitvm's search has no enumeration in index order",
                        "autotvm.tuner.RandomTuner (every configuration at most once, in "
                        "random order) or XGBTuner"),
    "DropoutTuner": ("there is no dropout-based tuner", "autotvm.tuner.XGBTuner"),
    "PGATuner": ("there is no parallel genetic tuner", "autotvm.tuner.GATuner"),
}


def __getattr__(name: str):
    missing_attribute(__name__.replace("minitvm", "tvm"), name, _LEFT_OUT)
