"""The JSON-lines records database: round trips, best per workload, clear errors."""

from __future__ import annotations

import pytest
from tune_helpers import CONV, DENSE

from minitvm.schedule.knobs import key_text
from minitvm.tune import (
    Record,
    RecordDatabase,
    apply_history_best,
    best_records,
    knob_table,
    load_records,
    save_records,
)


def _records():
    return [
        Record(DENSE, {"mr": 8, "nr": 32}, [2e-4, 2.2e-4], cpu="cpuA", timestamp=1.0),
        Record(DENSE, {"mr": 4, "nr": 16}, [1e-4, 1.1e-4], cpu="cpuA", timestamp=2.0),
        Record(DENSE, {"mr": 12, "nr": 64}, [], "timeout: no result within 1 s", cpu="cpuA",
               timestamp=3.0),
        Record(CONV, {"mr": 4}, [3e-4], cpu="cpuB", timestamp=4.0),
    ]


def test_record_round_trip(tmp_path):
    recs = _records()
    for r in recs:
        back = Record.from_json(r.to_json())
        assert back == r
    path = tmp_path / "r.jsonl"
    save_records(recs, path)
    assert list(load_records(path)) == recs
    assert path.read_text().count("\n") == len(recs)


def test_database_appends_and_reloads(tmp_path):
    path = tmp_path / "sub" / "db.jsonl"
    db = RecordDatabase(path)
    recs = _records()
    for r in recs:
        db.add(r)
    again = RecordDatabase(path)
    assert list(again) == recs
    assert len(again.for_workload(DENSE)) == 3
    assert again.best(DENSE).knobs == {"mr": 4, "nr": 16}


def test_best_records_skip_failures_and_prefer_this_cpu():
    best = best_records(_records(), "llvm", "cpuA")
    assert best[key_text(DENSE)].knobs == {"mr": 4, "nr": 16}
    assert best[key_text(CONV)].knobs == {"mr": 4}  # only measured elsewhere: still used
    other_cpu = Record(DENSE, {"mr": 6, "nr": 16}, [1e-6], cpu="cpuB")
    best = best_records(_records() + [other_cpu], "llvm", "cpuA")
    assert best[key_text(DENSE)].knobs == {"mr": 4, "nr": 16}
    assert not best_records(_records(), "c")  # "c" and "llvm" are different targets
    assert not best_records(_records(), "cuda")
    # a configuration measured twice has its costs pooled
    again = Record(DENSE, {"mr": 4, "nr": 16}, [9e-4], cpu="cpuA")
    best = best_records(_records() + [again], "llvm", "cpuA")[key_text(DENSE)]
    assert best.knobs == {"mr": 4, "nr": 16} and best.costs == [1e-4, 1.1e-4, 9e-4]
    table = knob_table(_records(), cpu="cpuA")
    assert table.lookup(DENSE) == {"mr": 4, "nr": 16}


def test_bad_records_are_clear_errors(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(Record(DENSE, {}, [1.0]).to_json() + "\n\n{not json\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:3: tuning record is not JSON"):
        list(load_records(path))
    with pytest.raises(ValueError, match="lacks 'workload'"):
        Record.from_json('{"knobs": {}}')
    with pytest.raises(ValueError, match="newer than"):
        Record.from_json('{"version": 99, "workload": [], "knobs": {}, "costs": []}')
    with pytest.raises(FileNotFoundError, match="no records file"):
        apply_history_best(tmp_path / "missing.jsonl")
