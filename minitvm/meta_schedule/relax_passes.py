"""TVM's ``relax.transform.MetaScheduleTuneTIR`` / ``MetaScheduleApplyDatabase`` on
minitvm's tuner.

``MetaScheduleTuneTIR(work_dir, max_trials_global)`` tunes the module's workloads for the
current target (``with target:``; llvm without one) and writes the records to
``work_dir/records.jsonl``; like TVM's pass it returns the module unchanged.
``MetaScheduleApplyDatabase(work_dir)`` reads those records and attaches the best knobs to the
module (TVM rewrites the PrimFuncs with their tuned schedules; minitvm's schedules take their
knobs when kernels are lowered), so ``relax.build`` of the result uses them. Both are
registered passes; ``minitvm/__init__.py`` exposes them as ``relax.transform.<name>``.
"""

from __future__ import annotations

from pathlib import Path

from ..schedule.knobs import SCHEDULE_KNOBS_ATTR, KnobTable, builtin_table
from ..target import Target
from ..transform.decorators import module_pass
from ..transform.registry import register_pass
from ..tune import RecordDatabase
from ..tune.records import knob_table
from .integration import tune_model

__all__ = ["MetaScheduleTuneTIR", "MetaScheduleApplyDatabase", "RECORDS_NAME"]

RECORDS_NAME = "records.jsonl"


def _target():
    return Target.current() or Target("llvm")


@register_pass("MetaScheduleTuneTIR")
def MetaScheduleTuneTIR(work_dir: str, max_trials_global: int,  # noqa: N802 - TVM's name
                        runner=None):
    """Module pass (opt 0): tune every workload of the module; records go to ``work_dir``.
    Beyond TVM, ``runner`` picks where candidates are measured (``minitvm.tune.tune_tasks``'
    runner: None for a worker process, "ray", or an object with ``run(task, candidates)``)."""

    def run(mod, ctx):
        tune_model(mod, None, _target(), work_dir, int(max_trials_global), None,
                   "evolutionary", None, "relax.transform.MetaScheduleTuneTIR", runner=runner)
        (Path(work_dir) / RECORDS_NAME).touch()  # the database exists, if empty (no tasks)
        return mod

    return module_pass(run, opt_level=0, name="MetaScheduleTuneTIR")


@register_pass("MetaScheduleApplyDatabase")
def MetaScheduleApplyDatabase(work_dir: str | None = None,  # noqa: N802 - TVM's name
                              enable_warning: bool = False, database=None):
    """Module pass (opt 0): the module with the best recorded knobs of every tuned workload
    attached (the built-in table's for the others), for ``relax.build``."""

    def run(mod, ctx):
        if database is not None:
            records = database
        elif work_dir is not None:
            path = Path(work_dir) / RECORDS_NAME
            if not path.exists():
                raise FileNotFoundError(
                    f"MetaScheduleApplyDatabase: no tuning records {str(path)!r}; run "
                    "MetaScheduleTuneTIR with the same work_dir first")
            records = RecordDatabase(path)
        else:
            raise ValueError("MetaScheduleApplyDatabase needs a work_dir (or a database)")
        table = knob_table(records, _target())
        base = builtin_table()
        if base is not None:
            table = KnobTable({**base.entries, **table.entries})
        return mod.with_attr(SCHEDULE_KNOBS_ATTR, table)

    return module_pass(run, opt_level=0, name="MetaScheduleApplyDatabase")
