"""The tuning records database: one JSON object per line, appended as candidates are measured.

A record holds the workload key (``minitvm.schedule.knobs``: op, shapes, dtype, layout), the
knob values, the measured costs in seconds (empty and an ``error`` text for a failed
candidate), a timestamp, the target and the CPU the candidate's code was made for (the host's,
or the target's ``-mcpu``: ``backend.target_cpu``). Records are keyed by workload alone, so a
file written while tuning one model serves every model sharing its workloads; a build uses only
records of code for its own vector width (an AVX2 build none tuned as AVX-512 code).
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..backend.target_cpu import code_cpu_name, same_vector_isa
from ..schedule.knobs import KnobTable, key_text

RECORD_VERSION = 1


def host_cpu() -> str:
    """The host CPU as LLVM names it (``znver4``, ``skylake-avx512``...)."""
    try:
        import llvmlite.binding as llvm

        return str(llvm.get_host_cpu_name())
    except Exception:  # pragma: no cover - llvmlite always present in practice
        return platform.machine()


@dataclass
class Record:
    """One measured candidate: workload, knobs, costs (seconds) or error, when and where."""

    workload: list
    knobs: dict
    costs: list = field(default_factory=list)
    error: str | None = None
    timestamp: float = field(default_factory=time.time)
    target: str = "llvm"
    cpu: str = field(default_factory=host_cpu)
    # measured in a tuning run's confirmation round (the few best and the default again, side
    # by side): such records alone decide their workload's best (see ``best_records``)
    confirm: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.costs)

    @property
    def cost(self) -> float:
        """The lowest measured cost (infinity for a failed candidate): on a shared machine the
        noise only ever adds time, so the minimum is the steadiest estimate of the kernel's."""
        return min(self.costs) if self.ok else float("inf")

    @property
    def key(self) -> str:
        return key_text(self.workload)

    def to_json(self) -> str:
        d = {"version": RECORD_VERSION, "workload": self.workload, "knobs": self.knobs,
             "costs": self.costs, "error": self.error, "timestamp": self.timestamp,
             "target": self.target, "cpu": self.cpu}
        if self.confirm:
            d["confirm"] = True
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    @staticmethod
    def from_json(line: str) -> Record:
        try:
            d = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"tuning record is not JSON: {err}") from None
        if not isinstance(d, dict) or "workload" not in d or "knobs" not in d:
            raise ValueError(f"tuning record lacks 'workload'/'knobs': {line[:80]!r}")
        if d.get("version", RECORD_VERSION) > RECORD_VERSION:
            raise ValueError(f"tuning record version {d['version']} is newer than this "
                             f"minitvm reads ({RECORD_VERSION})")
        return Record(list(d["workload"]), dict(d["knobs"]), [float(c) for c in d["costs"]],
                      d.get("error"), float(d.get("timestamp", 0.0)),
                      str(d.get("target", "llvm")), str(d.get("cpu", "")),
                      bool(d.get("confirm", False)))


def _target_kind(target) -> str:
    return str(getattr(getattr(target, "kind", None), "name", target) or "llvm").split()[0]


class RecordDatabase:
    """Records in memory, appended to a JSON-lines file (when a path is given) as they come."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else None
        self.records: list[Record] = []
        if self.path is not None and self.path.exists():
            self.records = list(load_records(self.path))

    def add(self, record: Record) -> None:
        self.records.append(record)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as f:
                f.write(record.to_json() + "\n")

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def for_workload(self, workload) -> list[Record]:
        k = key_text(workload)
        return [r for r in self.records if r.key == k]

    def best(self, workload, target="llvm", cpu: str | None = None) -> Record | None:
        return best_records(self.records, target, cpu).get(key_text(workload))


def load_records(path: str | os.PathLike) -> Iterator[Record]:
    """The records of a JSON-lines file (blank lines skipped; a bad line is a clear error)."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield Record.from_json(line)
            except ValueError as err:
                raise ValueError(f"{path}:{n}: {err}") from None


def save_records(records: Iterable[Record], path: str | os.PathLike) -> None:
    """Write ``records`` to ``path`` (replacing it), one JSON object per line."""
    with open(path, "w") as f:
        for r in records:
            f.write(r.to_json() + "\n")


def best_records(records: Iterable[Record], target="llvm", cpu: str | None = None
                 ) -> dict[str, Record]:
    """The fastest successful configuration per workload for ``target`` (and ``cpu`` when
    given: records made for another CPU are used only for workloads with none for this one, and
    only where that CPU has the same vector width: ``target_cpu.same_vector_isa``).

    A configuration measured several times (a second tuning run) has its costs pooled in the
    record returned. Where a workload has confirmation-round records (``Record.confirm``),
    only those compete: the search's best cost is the least of many noisy estimates, biased
    low by the choice itself, while the round measures the finalists and the default afresh.
    """
    kind = _target_kind(target)
    records = [r for r in records if r.ok and _target_kind(r.target) == kind and
               (cpu is None or not r.cpu or same_vector_isa(r.cpu, cpu))]
    confirmed = {(r.key, cpu is None or r.cpu == cpu) for r in records if r.confirm}
    pooled: dict[tuple, Record] = {}
    for r in records:
        same_cpu = cpu is None or r.cpu == cpu
        if not r.confirm and (r.key, same_cpu) in confirmed:
            continue
        k = (r.key, json.dumps(r.knobs, sort_keys=True), same_cpu)
        if k in pooled:
            p = pooled[k]
            pooled[k] = Record(p.workload, p.knobs, p.costs + r.costs, None,
                               max(p.timestamp, r.timestamp), p.target, p.cpu, p.confirm)
        else:
            pooled[k] = r
    best: dict[str, tuple] = {}
    for (key, _, same_cpu), r in pooled.items():
        rank = (0 if same_cpu else 1, r.cost)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, r)
    return {k: v[1] for k, v in best.items()}


def knob_table(records, target="llvm", cpu: str | None = None) -> KnobTable:
    """The knob table of the best record per workload (records, a database or a path) for a
    build for ``target``: for the CPU it makes code for (``cpu``, default: its ``-mcpu`` where
    builds honour it, else the host)."""
    if isinstance(records, (str, os.PathLike)):
        records = load_records(records)
    cpu = code_cpu_name(target) if cpu is None else cpu
    best = best_records(records, target, cpu or None)
    return KnobTable({k: r.knobs for k, r in best.items()})
