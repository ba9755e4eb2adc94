"""``autotvm.apply_history_best`` and ``autotvm.record``: use tuning logs in builds.

The logs are minitvm's JSON-lines records (``minitvm.tune``); a log written by TVM's AutoTVM
holds TVM schedule configurations, which minitvm's schedules cannot use: reading one is a
clear error that says so.
"""

from __future__ import annotations

import json
import os

from ..tune import RecordDatabase, best_records, load_records, save_records
from ..tune import apply_history_best as _apply
from .differs import differs


def _check_not_tvm_log(path) -> None:
    if not isinstance(path, (str, os.PathLike)) or not os.path.exists(path):
        return
    with open(path) as f:
        for line in f:
            if line.strip():
                try:
                    first = json.loads(line)
                except ValueError:
                    return  # load_records reports the bad line
                if isinstance(first, dict) and ({"input", "result"} <= first.keys()
                                                or {"i", "r"} <= first.keys()):
                    raise differs(f"tuning log {os.fspath(path)!r}",
                                  "it was written by TVM's AutoTVM/auto-scheduler; its schedule "
                                  "configurations are TVM's and mean nothing to minitvm's "
                                  "schedules", "a log written by minitvm's tuner (autotvm "
                                  "tuners with callback.log_to_file, or minitvm.tune)")
                return


def apply_history_best(records, target="llvm"):
    """``with autotvm.apply_history_best(log_file): relay.build(...)``: builds use the best
    configuration of every workload in the log (``minitvm.tune.apply_history_best``)."""
    _check_not_tvm_log(records)
    return _apply(records, target)


def load_from_file(filename):
    """The records of a log file, in order."""
    _check_not_tvm_log(filename)
    return list(load_records(filename))


def pick_best(in_file, out_file) -> None:
    """Write the fastest record of each workload of ``in_file`` to ``out_file``."""
    _check_not_tvm_log(in_file)
    records = list(load_records(in_file))
    best = {}
    for target in dict.fromkeys(r.target.split()[0] for r in records):
        best.update(best_records(records, target))
    save_records(best.values(), out_file)


__all__ = ["RecordDatabase", "apply_history_best", "load_from_file", "pick_best"]
