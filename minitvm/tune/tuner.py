"""The tuner: for each task, measure candidates proposed by the search and record every result.

Budgets: ``trials`` candidates per task and/or ``seconds`` in all (split over the tasks still to
tune). Records already in the database for a workload count as measured: they seed the search
and use up trials, so tuning a second model that shares workloads with the first measures only
what is new.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from ..backend.target_cpu import code_cpu_name, for_target
from ..schedule.knobs import builtin_table
from .progress import Progress
from .records import Record, RecordDatabase
from .runner import LocalRunner, MeasureResult
from .search import EvolutionarySearch, RandomSearch
from .task import Task, extract_tasks


def _make_runner(runner, timeout: float):
    if runner is None or runner == "local":
        return LocalRunner(timeout=timeout), True
    if isinstance(runner, str) and runner.startswith("ray"):
        from .ray_runner import RayRunner

        address = runner.split(":", 1)[1] if ":" in runner else None
        return RayRunner(address=address or None, timeout=timeout), True
    if isinstance(runner, str):
        raise ValueError(f"unknown runner {runner!r}: 'local', 'ray' or 'ray:ADDRESS'")
    return runner, False


def tune_tasks(tasks: list[Task], database: RecordDatabase | str | os.PathLike | None = None,
               trials: int = 32, seconds: float | None = None, runner=None,
               timeout: float = 60.0, strategy: str = "evolutionary", batch: int = 4,
               seed: int = 0, progress: str = "auto", confirm: int = 3,
               verbose: bool = False) -> RecordDatabase:
    """Tune ``tasks``; every measured candidate is appended to ``database`` (a path makes one).

    ``runner``: None / "local" (a worker process), "ray" / "ray:ADDRESS", or a runner object
    with ``run(task, candidates) -> [MeasureResult]``. ``timeout``: seconds per candidate.
    ``confirm``: the best few configurations of a task are measured again at its end (0: not).
    ``progress``: "auto", "bar", "lines" or "none" (``verbose``: a line per candidate).
    Returns the database.
    """
    if trials < 1:
        raise ValueError(f"tune: trials must be at least 1, got {trials}")
    if strategy not in ("evolutionary", "random"):
        raise ValueError(f"tune: strategy must be 'evolutionary' or 'random', got {strategy!r}")
    db = database if isinstance(database, RecordDatabase) else RecordDatabase(database)
    run, owned = _make_runner(runner, timeout)
    report = Progress(len(tasks), progress, verbose=verbose)
    deadline = time.perf_counter() + seconds if seconds is not None else None
    try:
        for n, task in enumerate(tasks):
            # (the CPU the task's code is made for: its target's -mcpu, or the host; its
            # records carry it, and the built-in table of its vector ISA seeds the search)
            cpu = code_cpu_name(task.target)
            with for_target(task.target):
                builtin = builtin_table()
            search = (RandomSearch(task.space, seed + n) if strategy == "random" else
                      EvolutionarySearch(task.space, seed + n))
            default = task.space.default()
            seed_knobs = builtin.lookup(task.workload) if builtin is not None else None
            if seed_knobs:  # the built-in table's entry is worth measuring early
                try:
                    search.seeds.append(task.space.validate(seed_knobs))
                except (ValueError, KeyError):
                    pass  # an entry the space no longer declares: not a candidate
            default_cost = None
            for r in db.for_workload(task.workload):
                if r.cpu == cpu or not r.cpu:
                    search.tell(r.knobs, r.cost)
                    if r.knobs == default:
                        default_cost = r.cost
            budget = min(trials, task.space.size()) - len(search.measured)
            report.start(task, max(0, budget))
            task_deadline = None
            if deadline is not None:
                task_deadline = time.perf_counter() + \
                    max(0.0, deadline - time.perf_counter()) / (len(tasks) - n)
            measured_now = 0
            while budget > 0 and not search.exhausted():
                if task_deadline is not None and time.perf_counter() >= task_deadline:
                    break
                cands = search.propose(min(batch, budget))
                if not cands:
                    break
                results = run.run(task, cands)
                for knobs, res in zip(cands, results, strict=True):
                    res = res if isinstance(res, MeasureResult) else MeasureResult([], str(res))
                    db.add(Record(list(task.workload), dict(knobs), list(res.costs), res.error,
                                  target=task.target, cpu=cpu))
                    cost = Record([], {}, list(res.costs), res.error).cost
                    search.tell(knobs, cost)
                    if knobs == default:
                        default_cost = cost
                    best = search.best()
                    report.update(best[1] if best else None, default_cost, res)
                budget -= len(cands)
                measured_now += len(cands)
            if confirm and measured_now and len(search.measured) > 1:
                _confirm(task, search, run, db, cpu, confirm, default)
            best = db.best(task.workload, task.target, cpu)
            report.finish(best.cost if best else None, default_cost)
    finally:
        if owned:
            run.close()
    return db


# the confirmation round: its finalists are measured this many times, in turns (a slow spell
# of a shared machine then hits every finalist alike), and one wins over the default only by
# at least CONFIRM_MARGIN (smaller gains are within the noise of such machines: a 2-vCPU VM
# measured one 3x3 conv's default from 1.9 to 3.0 ms within a minute)
CONFIRM_ROUNDS = 3
CONFIRM_MARGIN = 0.03


def _confirm(task, search, run, db, cpu: str, k: int, default: dict,
             rounds: int = CONFIRM_ROUNDS, margin: float = CONFIRM_MARGIN) -> None:
    """Measure the ``k`` best configurations (and the default) again, ``rounds`` times in
    turns, so the winner is not just the one measured during a quiet moment of the machine.
    Each gets a record (``confirm``) whose cost is the median over the rounds of its least
    cost in a round; these records alone decide the workload's best (``records.best_records``).
    A finalist not faster than the default by ``margin`` is recorded as not confirmed (an
    error), so that the default is kept."""
    ranked = sorted((c, key) for key, c in search.measured.items() if c != float("inf"))
    cands = [search.configs[key] for _, key in ranked[:k]]
    if default not in cands and any(search.configs[key] == default for _, key in ranked):
        cands.append(default)
    costs: list[list[float]] = [[] for _ in cands]
    errors: list[str | None] = [None] * len(cands)
    for r in range(rounds):
        turn = [(i + r) % len(cands) for i in range(len(cands))]  # each round starts elsewhere
        for i, res in zip(turn, run.run(task, [cands[i] for i in turn]), strict=True):
            if res.ok:
                costs[i].append(min(res.costs))
            elif errors[i] is None:
                errors[i] = res.error
    est = [statistics.median(c) if len(c) == rounds else None for c in costs]
    base = est[cands.index(default)] if default in cands else None
    for i, knobs in enumerate(cands):
        error, cost = errors[i], est[i]
        if cost is not None and base is not None and knobs != default and \
                cost > base * (1.0 - margin):
            error, cost = (f"not confirmed: {cost * 1e3:.4f} ms against the default's "
                           f"{base * 1e3:.4f} ms (a win needs {margin:.0%})"), None
        if cost is None:
            error = error or "no measurement"
        db.add(Record(list(task.workload), dict(knobs), [] if cost is None else [cost],
                      None if cost is not None else error, target=task.target, cpu=cpu,
                      confirm=True))


def tune_relay(mod, params: dict | None = None, target="llvm", work_dir=None, records=None,
               trials: int = 32, seconds: float | None = None, runner=None,
               timeout: float = 60.0, **kwargs) -> RecordDatabase:
    """Extract the tasks of Relay module ``mod`` and tune them (``tune_tasks``).

    Records go to ``records`` (a JSON-lines path), else ``work_dir/records.jsonl``, else stay
    in memory. Build with them: ``with apply_history_best(db_or_path): relay.build(...)``.
    """
    if records is None and work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        records = Path(work_dir) / "records.jsonl"
    tasks = extract_tasks(mod, params, target)
    return tune_tasks(tasks, records, trials=trials, seconds=seconds, runner=runner,
                      timeout=timeout, **kwargs)
