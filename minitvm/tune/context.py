"""``apply_history_best``: build with the best recorded knobs (TVM's ``ApplyHistoryBest``)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..backend.target_cpu import for_target
from ..schedule.knobs import KnobTable, builtin_table, use_knobs
from .records import Record, RecordDatabase, knob_table


class ApplyHistoryBest:
    """A context in which builds (``relay.build``, ``relax.build``) schedule every tuned
    workload with the knobs of its fastest record; other workloads keep the built-in table's
    knobs or their defaults.

    ``records``: a JSON-lines path, a ``RecordDatabase`` or an iterable of ``Record``.
    ``builtin``: workloads without a record of the user's keep the built-in table's knobs
    (``minitvm.tune.builtin``, of ``target``'s ``-mcpu`` where a build honours it; the user's
    records win where both have one); False: their defaults.
    """

    def __init__(self, records: str | os.PathLike | RecordDatabase | Iterable[Record],
                 target="llvm", builtin: bool = True):
        if isinstance(records, (str, os.PathLike)) and not os.path.exists(records):
            raise FileNotFoundError(f"apply_history_best: no records file {str(records)!r}")
        self.table: KnobTable = knob_table(records, target)
        with for_target(target):  # (the table of its -mcpu's vector ISA: backend.target_cpu)
            base = builtin_table() if builtin else None
        if base is not None:
            self.table = KnobTable({**base.entries, **self.table.entries})
        self._cm = None

    def __enter__(self) -> ApplyHistoryBest:
        self._cm = use_knobs(self.table)
        self._cm.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        cm, self._cm = self._cm, None
        cm.__exit__(*exc)

    def __repr__(self) -> str:
        return f"ApplyHistoryBest({len(self.table)} workloads)"


def apply_history_best(records, target="llvm", builtin: bool = True) -> ApplyHistoryBest:
    """``with apply_history_best("records.jsonl"): relay.build(...)`` builds with the tuned
    knobs of every workload in the file (and the built-in table's for the others)."""
    return ApplyHistoryBest(records, target, builtin)
