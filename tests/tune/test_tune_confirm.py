"""The confirmation round: the finalists and the default are measured again in turns over
several rounds; a finalist replaces the default only when it is faster by the margin."""

from __future__ import annotations

from tune_helpers import DENSE

from minitvm.schedule.knobs import Space
from minitvm.tune import RecordDatabase, Task, tune_tasks
from minitvm.tune import tuner as tuner_mod
from minitvm.tune.runner import MeasureResult

SPACE = Space.of({"v": 0}, v=(0, 1, 2, 3))


class _ScriptedRunner:
    """Costs by knob: ``search`` during the search, ``again`` in the confirmation rounds
    (told apart by the batch: the search proposes one candidate at a time here)."""

    def __init__(self, search: dict, again: dict):
        self.search, self.again, self.batches = search, again, []

    def run(self, task, candidates):
        self.batches.append([c["v"] for c in candidates])
        table = self.search if len(candidates) == 1 else self.again
        return [MeasureResult([table[c["v"]]]) for c in candidates]


def _tune(runner, tmp_path):
    path = tmp_path / "records.jsonl"
    tune_tasks([Task(list(DENSE), SPACE)], path, trials=4, runner=runner, batch=1,
               progress="none", strategy="random", confirm=2)
    return RecordDatabase(path)


def test_a_lucky_finalist_within_the_margin_keeps_the_default(tmp_path):
    # v=3 looked 40% faster while searching; measured again it is 1% faster: noise
    runner = _ScriptedRunner({0: 1.0e-3, 1: 2e-3, 2: 0.9e-3, 3: 0.6e-3},
                             {0: 1.0e-3, 1: 2e-3, 2: 1.2e-3, 3: 0.99e-3})
    db = _tune(runner, tmp_path)
    rounds = runner.batches[4:]
    assert len(rounds) == tuner_mod.CONFIRM_ROUNDS  # the finalists and the default, in turns
    assert all(sorted(b) == [0, 2, 3] for b in rounds) and len({b[0] for b in rounds}) == 3
    assert db.best(DENSE).knobs == {"v": 0}
    lucky = [r for r in db if r.confirm and r.knobs == {"v": 3}]
    assert lucky and not lucky[0].ok and lucky[0].error.startswith("not confirmed")


def test_a_finalist_clearly_faster_replaces_the_default(tmp_path):
    runner = _ScriptedRunner({0: 1.0e-3, 1: 2e-3, 2: 0.9e-3, 3: 0.6e-3},
                             {0: 1.0e-3, 1: 2e-3, 2: 0.95e-3, 3: 0.8e-3})
    db = _tune(runner, tmp_path)
    best = db.best(DENSE)
    assert best.knobs == {"v": 3} and best.confirm and best.costs == [0.8e-3]
    assert db.best(DENSE).cost < 1e-3 * (1 - tuner_mod.CONFIRM_MARGIN)


def test_the_round_cost_is_the_median_over_rounds(tmp_path):
    """One quiet moment in one round does not make a winner: the median of the rounds does."""
    class Spiky(_ScriptedRunner):
        def run(self, task, candidates):
            out = super().run(task, candidates)
            if len(candidates) > 1 and len(self.batches) == 5:  # the first confirmation round
                out = [MeasureResult([0.1e-3]) if c["v"] == 2 else r
                       for c, r in zip(candidates, out, strict=True)]
            return out

    runner = Spiky({0: 1.0e-3, 1: 2e-3, 2: 0.9e-3, 3: 0.95e-3},
                   {0: 1.0e-3, 1: 2e-3, 2: 1.0e-3, 3: 1.0e-3})
    db = _tune(runner, tmp_path)
    assert db.best(DENSE).knobs == {"v": 0}
