"""Schedule tuning: search the knobs of the tunable schedules per workload, keep the best.

TVM users know ``autotvm`` / ``meta_schedule.tune_relay``; the workflow is the same::

    from minitvm import tune
    tune.tune_relay(mod, params, "llvm", records="records.jsonl", trials=32)
    with tune.apply_history_best("records.jsonl"):
        lib = relay.build(mod, "llvm", params=params)

Tasks are the workloads (op, shapes, dtype, layout) the schedules ask knobs for
(``extract_tasks``); candidates are measured in worker processes with a time-out
(``LocalRunner``) or as Ray tasks (``RayRunner``, ``pip install minitvm[tune]``); every result
goes to a JSON-lines records file (``RecordDatabase``).

Untuned builds are not left with the hand-picked defaults alone: a small table of verified
records per vector ISA ships in ``minitvm/tune/builtin`` and is used by every build outside
``apply_history_best`` (which lays the user's records over it); ``MINITVM_BUILTIN_KNOBS=0``
turns it off. ``python -m minitvm.tune.builtin RECORDS`` re-measures a tuning run's winners
against the defaults and adds the clear wins to it.
"""

from .context import ApplyHistoryBest, apply_history_best
from .records import Record, RecordDatabase, best_records, knob_table, load_records, save_records
from .runner import LocalRunner, MeasureResult, run_candidate
from .search import EvolutionarySearch, RandomSearch
from .task import Task, extract_tasks
from .tuner import tune_relay, tune_tasks
from .workload import build_workload, measure_workload, workload_program
