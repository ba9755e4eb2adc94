"""Candidates that crash, hang or raise are recorded as failures; the tuner goes on."""

from __future__ import annotations

import os
import time

import pytest
from tune_helpers import DENSE

from minitvm.schedule.knobs import Space
from minitvm.tune import LocalRunner, RecordDatabase, Task, tune_tasks
from minitvm.tune import runner as tune_runner

SPACE = Space.of({"mode": "ok", "v": 1}, mode=("ok", "crash", "hang", "raise"), v=(1, 2, 3))


def broken_measure(task, knobs):
    """A candidate measurement that misbehaves on purpose, by knob."""
    if knobs["mode"] == "crash":
        os._exit(3)  # like a kernel that segfaults: the worker dies without a word
    if knobs["mode"] == "hang":
        time.sleep(3600)
    if knobs["mode"] == "raise":
        raise RuntimeError("bad candidate")
    return [1e-3 / knobs["v"]]


def _task():
    return Task(list(DENSE), SPACE, measure=broken_measure)


@pytest.fixture
def quick_settle(monkeypatch):
    """Fresh workers settle OpenBLAS for 0.01 s, not 0.2 s: these tests restart a worker after
    every crash and time-out, and check what the runner records, not how BLAS settles (the
    settling itself is checked by test_workers_keep_the_processes_openblas_thread_count)."""
    monkeypatch.setattr(tune_runner, "BLAS_SETTLE_S", 0.01)


def test_runner_survives_crash_hang_and_exception(quick_settle):
    task = _task()
    with LocalRunner(timeout=0.5) as runner:
        ok = runner.measure(task, {"mode": "ok", "v": 2})
        assert ok.ok and ok.costs == [5e-4]
        crash = runner.measure(task, {"mode": "crash", "v": 1})
        assert not crash.ok and "worker crashed (exit code 3)" in crash.error
        t0 = time.perf_counter()
        hang = runner.measure(task, {"mode": "hang", "v": 1})
        assert time.perf_counter() - t0 < 10
        assert not hang.ok and hang.error.startswith("timeout")
        err = runner.measure(task, {"mode": "raise", "v": 1})
        assert not err.ok and "RuntimeError: bad candidate" in err.error
        after = runner.measure(task, {"mode": "ok", "v": 3})  # a fresh worker took over
        assert after.ok
        assert runner.restarts == 2


def test_tuner_records_failures_and_keeps_the_best(tmp_path, quick_settle):
    path = tmp_path / "records.jsonl"
    db = tune_tasks([_task()], path, trials=SPACE.size(), timeout=0.5, progress="none",
                    strategy="random", confirm=2)
    # every candidate measured once, failures included; the best two and the default again
    assert len(db) == SPACE.size() + 3
    errors = sorted(r.error.split(":")[0].split(" (")[0] for r in db if not r.ok)
    assert errors == ["RuntimeError"] * 3 + ["timeout"] * 3 + ["worker crashed"] * 3
    best = RecordDatabase(path).best(DENSE)
    # (decided by the confirmation round's measurement alone)
    assert best.knobs == {"mode": "ok", "v": 3} and best.costs == [1e-3 / 3]
    # tuning again with the same budget measures nothing new: the records are reused
    again = tune_tasks([_task()], path, trials=SPACE.size(), progress="none")
    assert len(again) == SPACE.size() + 3


def test_runner_errors():
    with pytest.raises(ValueError, match="timeout must be positive"):
        LocalRunner(timeout=0)
    with pytest.raises(ValueError, match="trials must be at least 1"):
        tune_tasks([_task()], None, trials=0)
    with pytest.raises(ValueError, match="unknown runner"):
        tune_tasks([_task()], None, runner="nowhere", progress="none")


def test_spawned_worker_survives_a_crash(patient_workers):
    # (a spawned worker imports minitvm and this module anew: under load that took the whole
    # 60 s a worker's start is allowed, and the candidate had no result)
    task = _task()
    with LocalRunner(timeout=patient_workers, start_method="spawn") as runner:
        ok = runner.measure(task, {"mode": "ok", "v": 1})
        assert ok.costs == [1e-3], ok.error
        crash = runner.measure(task, {"mode": "crash", "v": 1})
        assert "worker crashed (exit code 3)" in crash.error  # (a fresh one starts on demand)


def blas_threads_measure(task, knobs):
    from minitvm.runtime import blas

    return [float(blas.get_num_threads() or 1)]


def test_workers_keep_the_processes_openblas_thread_count(patient_workers):
    """A measuring worker starts OpenBLAS's threads before measuring (``settle_blas``) but keeps
    their count: a kernel calling BLAS then pays what it pays in a user's process."""
    from minitvm.runtime import blas

    if not blas.available():
        pytest.skip("no OpenBLAS found to control")
    task = Task(list(DENSE), SPACE, measure=blas_threads_measure)
    with LocalRunner(timeout=patient_workers) as runner:
        res = runner.measure(task, {"mode": "ok", "v": 1})
    assert res.costs == [float(blas.get_num_threads() or 1)], res.error


def test_a_slow_worker_start_is_not_the_candidates_time(monkeypatch):
    # (a loaded machine: the fresh worker settles for longer than the candidate's time-out;
    # 0.6 s against 0.5 s: a start counted as the candidate's time would time it out)
    # (the time-out leaves a crash on a loaded machine time to be seen as one)
    monkeypatch.setattr(tune_runner, "settle_blas", lambda: time.sleep(0.6))
    with LocalRunner(timeout=0.5) as runner:
        ok = runner.measure(_task(), {"mode": "ok", "v": 2})
        assert ok.ok and ok.costs == [5e-4]
        crash = runner.measure(_task(), {"mode": "crash", "v": 1})
        assert "worker crashed (exit code 3)" in crash.error
        after = runner.measure(_task(), {"mode": "ok", "v": 1})  # a fresh, slow worker again
        assert after.ok


def test_a_worker_that_never_starts_is_an_error_result(monkeypatch):
    monkeypatch.setattr(tune_runner, "settle_blas", lambda: time.sleep(30))
    monkeypatch.setattr(tune_runner, "WORKER_START_S", 0.3)
    with LocalRunner(timeout=5.0) as runner:
        res = runner.measure(_task(), {"mode": "ok", "v": 1})
    assert not res.ok and "did not start within 0.3 s" in res.error
