"""Candidates measured as Ray tasks on a local one-node cluster; skipped when Ray is absent."""

from __future__ import annotations

import os
import sys

import pytest
from tune_helpers import DENSE

from minitvm.schedule.knobs import Space
from minitvm.tune import Task, tune_tasks

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'minitvm[tune]'")

SPACE = Space.of({"v": 1}, v=(1, 2, 4, 8))


def fake_measure(task, knobs):
    if knobs["v"] == 8:
        raise RuntimeError("bad candidate")
    return [1e-3 / knobs["v"]]


def test_ray_runner_local_mode(tmp_path):
    import cloudpickle

    from minitvm.tune.ray_runner import RayRunner

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers can't import tests
    task = Task(list(DENSE), SPACE, measure=fake_measure)
    here = os.path.dirname(os.path.abspath(__file__))  # Ray workers import this module
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join([here, *sys.path])}}
    with RayRunner(local_mode=True, timeout=60, num_cpus=1, runtime_env=env) as runner:
        results = runner.run(task, [{"v": 1}, {"v": 2}, {"v": 8}])
        assert [r.ok for r in results] == [True, True, False], results
        assert results[1].costs == [5e-4]
        assert "RuntimeError: bad candidate" in results[2].error
        db = tune_tasks([task], tmp_path / "r.jsonl", trials=4, runner=runner,
                        progress="none")
    assert len(db) == 4 + 3  # four candidates, then the three good ones confirmed
    assert db.best(DENSE).knobs == {"v": 4}
