"""``tvm.meta_schedule`` for TVM scripts that tune whole models, on ``minitvm.tune``.

``ms.relay_integration.tune_relay`` / ``compile_relay`` and ``ms.relax_integration.tune_relax``
/ ``compile_relax`` run minitvm's tuner over the model's workloads and build with the best
configurations. MetaSchedule's TIR-level machinery (schedule rules, cost models, task
schedulers, ``tune_tir``, its JSON databases) has no counterpart: minitvm tunes the knobs of
its built-in schedules, and those names raise an error that says what to use.
"""

from __future__ import annotations

from ..autotvm.differs import TVMDifferenceError, missing_attribute
from . import relax_integration, relay_integration

__all__ = ["TVMDifferenceError", "relax_integration", "relay_integration"]

_TIR = ("minitvm does not search TIR schedules (schedule rules, cost models and task "
        "schedulers): it tunes the knobs of its built-in operator schedules",
        "tvm.meta_schedule.relay_integration.tune_relay / relax_integration.tune_relax on a "
        "model, or minitvm.tune")
_LEFT_OUT = {name: _TIR for name in (
    "tune_tir", "tir_integration", "tune_tasks", "extract_tasks", "TuneContext", "cost_model",
    "schedule_rule", "postproc", "mutator", "search_strategy", "space_generator",
    "task_scheduler", "feature_extractor", "measure_callback", "builder", "runner",
    "database", "Database", "JSONDatabase", "ExtractedTask", "tune")}


def __getattr__(name: str):
    missing_attribute("tvm.meta_schedule", name, _LEFT_OUT)
