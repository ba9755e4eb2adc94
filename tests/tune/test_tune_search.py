"""The search strategies and the progress report."""

from __future__ import annotations

import io
import sys
import types

import pytest
from tune_helpers import DENSE

from minitvm.schedule.knobs import Space
from minitvm.tune import EvolutionarySearch, MeasureResult, RandomSearch, Task
from minitvm.tune.progress import Progress
from minitvm.tune.search import config_key

SPACE = Space.of({"a": 1, "b": "x", "c": True}, a=(1, 2, 3, 4), b=("x", "y", "z"),
                 c=(True, False))


def _cost(k):
    return abs(k["a"] - 3) + (0 if k["b"] == "y" else 1) + (0 if k["c"] else 0.5) + 1


@pytest.mark.parametrize("cls", [EvolutionarySearch, RandomSearch])
def test_search_covers_the_space_without_repeats(cls):
    search = cls(SPACE, seed=1)
    seen = []
    while not search.exhausted():
        batch = search.propose(5)
        assert batch, "the search stopped before the space was exhausted"
        for k in batch:
            seen.append(config_key(k))
            search.tell(k, _cost(k))
    assert seen[0] == config_key(SPACE.default())  # the default is measured first
    assert len(seen) == len(set(seen)) == SPACE.size()
    assert search.best() == ({"a": 3, "b": "y", "c": True}, 1)
    assert search.propose(3) == []


def test_evolution_beats_random_sampling_on_a_smooth_space():
    space = Space.of({k: 0 for k in "abcd"}, **{k: tuple(range(8)) for k in "abcd"})

    def cost(k):
        return sum(abs(v - 5) for v in k.values())

    def best_after(cls, seed, trials=60):
        search, n = cls(space, seed=seed), 0
        while n < trials:
            for k in search.propose(4):
                search.tell(k, cost(k))
                n += 1
        return search.best()[1]

    evo = [best_after(EvolutionarySearch, s) for s in range(6)]
    rnd = [best_after(RandomSearch, s) for s in range(6)]
    assert sum(evo) < sum(rnd)  # 60 of 4096 configurations: evolution lands nearer 0


def test_failed_candidates_are_never_parents():
    search = EvolutionarySearch(SPACE, seed=0, init_random=1)
    search.tell({"a": 3, "b": "y", "c": True}, float("inf"))
    search.tell({"a": 1, "b": "x", "c": True}, 5.0)
    assert search.best() == ({"a": 1, "b": "x", "c": True}, 5.0)


def test_progress_lines_and_bar(monkeypatch):
    task = Task(list(DENSE), SPACE)
    out = io.StringIO()
    p = Progress(1, "lines", stream=out)
    p.start(task, 3)
    p.update(2e-3, 2e-3, MeasureResult([2e-3]))
    p.update(2e-3, 2e-3, MeasureResult([], "timeout: no result within 1 s"))
    p.update(1e-3, 2e-3, MeasureResult([1e-3]))
    p.finish(1e-3, 2e-3)
    text = out.getvalue()
    assert "[task 1/1] dense(16, 48, 64): up to 3 candidates (space of 24)" in text
    assert "failed (timeout: no result within 1 s)" in text
    assert "best 1.0000 ms (default 2.0000 ms, 2.00x)" in text

    updates = []

    class FakeBar:
        def __init__(self, total, desc, file, leave):
            updates.append(("open", total, desc))

        def set_postfix_str(self, s):
            updates.append(("postfix", s))

        def update(self, n):
            updates.append(("update", n))

        def close(self):
            updates.append(("close",))

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeBar))
    p = Progress(1, "auto", stream=io.StringIO())
    assert p.mode == "bar"
    p.start(task, 1)
    p.update(1e-3, 2e-3, MeasureResult([1e-3]))
    p.finish(1e-3, 2e-3)
    assert updates[0] == ("open", 1, "[1/1] dense(16, 48, 64)")
    assert ("postfix", "best 1.0000 ms default 2.0000 ms") in updates
    assert updates[-1] == ("close",)
    with pytest.raises(ValueError, match="progress: mode must be"):
        Progress(1, "fancy")
