"""The knobs are shared by both dialects: a Relax module's tasks, and records steering
``relax.build``."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.schedule.knobs import KnobTable, key_text, use_knobs
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.tune import Record, apply_history_best, extract_tasks, tune_tasks

MATMUL = ["matmul", 16, 48, 64, False, "float32"]


@I.ir_module
class Mlp:
    @R.function
    def main(x: R.Tensor((16, 64), "float32"), w: R.Tensor((64, 48), "float32")
             ) -> R.Tensor((16, 48), "float32"):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.relu(y)
            R.output(z)
        return z


def _run(ex, x, w):
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return vm["main"](tvm.nd.array(x), tvm.nd.array(w)).numpy()


def test_relax_tasks_and_records(patient_workers):
    tasks = extract_tasks(Mlp)
    assert [t.workload for t in tasks] == [MATMUL]
    db = tune_tasks(tasks, None, trials=2, progress="none", confirm=0,
                    timeout=patient_workers)
    # measured through a Relay rebuild
    assert len(db) == 2 and all(r.ok for r in db), [(r.knobs, r.error) for r in db]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 64)).astype("float32")
    w = rng.standard_normal((64, 48)).astype("float32")
    knobs = {"mr": 4, "nr": 16, "mc": 32}
    with apply_history_best([Record(MATMUL, knobs, [1e-6])]):
        ex = relax.build(Mlp, "llvm")
    np.testing.assert_allclose(_run(ex, x, w), np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)
    trace = KnobTable({key_text(MATMUL): knobs}, trace=True)
    with use_knobs(trace):
        relax.build(Mlp, "llvm")
    assert list(trace.seen) == [key_text(MATMUL)]  # relax.build asked for these knobs
