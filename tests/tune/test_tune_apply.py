"""Task extraction, a short real tuning run, and building with the records it wrote."""

from __future__ import annotations

import re

import numpy as np
from tune_helpers import CONV, DENSE, mlp_reference, small_mlp

import minitvm
from minitvm import relay
from minitvm.runtime import cpu
from minitvm.runtime.graph_executor import GraphModule
from minitvm.schedule import gemm, gemm_kernel
from minitvm.tune import (
    Record,
    RecordDatabase,
    apply_history_best,
    build_workload,
    extract_tasks,
    tune_relay,
)
from minitvm.tune.task import _primitive_calls


def _run(lib, x):
    gm = GraphModule(lib["default"](cpu(0)))
    gm.set_input("x", x)
    gm.run()
    return gm.get_output(0).numpy()


def _acc_sizes(lib) -> set[int]:
    """Sizes of the register tiles (``acc``) allocated in the built kernels."""
    out = set()
    lib = lib.get_lib() if hasattr(lib, "get_lib") else lib
    for k in lib.kernels.values():
        text = k.prim_func.script() if k.prim_func is not None else ""
        out |= {int(n) for n in re.findall(r"acc = T\.allocate\(\[(\d+)\]", text)}
    return out


def test_extract_tasks_finds_the_generated_gemms():
    tasks = extract_tasks(small_mlp())
    assert [t.workload for t in tasks] == [DENSE]  # the 16x16x48 layer is too small for it
    assert tasks[0].weight == 1 and tasks[0].space.size() > 100
    x = relay.var("x", shape=(1, 8, 10, 10))
    w = relay.const(np.ones((16, 8, 3, 3), "float32"))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1), channels=16, kernel_size=(3, 3)))
    tasks = extract_tasks(minitvm.IRModule.from_expr(relay.Function([x], y)))
    assert [t.workload for t in tasks] == [CONV]


def test_tune_then_build_with_records(tmp_path, patient_workers):
    mod = small_mlp()
    x = np.random.default_rng(1).standard_normal((16, 64)).astype("float32")
    db = tune_relay(mod, None, "llvm", work_dir=tmp_path, trials=3, progress="none",
                    timeout=patient_workers)
    path = tmp_path / "records.jsonl"
    # three candidates, then the best three measured again in turns: those not faster than
    # the default by the confirmation margin are recorded as not confirmed
    assert path.exists() and len(db) == 6, [(r.knobs, r.error) for r in db]
    assert all(r.ok or r.error.startswith("not confirmed") for r in db), \
        [(r.knobs, r.error) for r in db]
    best = db.best(DENSE)
    with apply_history_best(path):
        lib = relay.build(mod, "llvm")
    np.testing.assert_allclose(_run(lib, x), mlp_reference(mod, x), rtol=1e-4, atol=1e-4)
    # the model's kernel gets the measured candidate's register tile
    gm, _ = build_workload(DENSE, best.knobs)
    tile = best.knobs["mr"] * best.knobs["nr"] if best.knobs["impl"] == "generated" else None
    measured = _acc_sizes(gm.lib)
    assert measured == ({tile} if tile else set())
    assert measured <= _acc_sizes(lib)


def test_records_are_reused_across_models(tmp_path, patient_workers):
    path = tmp_path / "records.jsonl"
    # the confirmation round is beside the point here (test_tune_confirm.py tests it)
    tune_relay(small_mlp(), None, records=path, trials=2, progress="none", confirm=0,
               timeout=patient_workers)
    n = len(RecordDatabase(path).for_workload(DENSE))
    # another model with the same first layer: its tasks include DENSE, measured already
    rng = np.random.default_rng(5)
    first = small_mlp()["main"].body.args[0]  # relu(bias_add(dense(x, w1), b1))
    x = relay.analysis.free_vars(first)[0]
    y = relay.nn.dense(first, relay.const(rng.standard_normal((64, 48)).astype("float32")))
    other = minitvm.IRModule.from_expr(relay.Function([x], y))
    tasks = extract_tasks(other)
    assert DENSE in [t.workload for t in tasks] and len(tasks) == 2
    db = tune_relay(other, None, records=path, trials=2, progress="none", confirm=0,
                    timeout=patient_workers)
    assert len(db.for_workload(DENSE)) == n  # nothing new measured for the shared workload
    assert len(db) > n


def test_recorded_knobs_change_the_build_and_keep_numerics():
    mod = small_mlp()
    x = np.random.default_rng(2).standard_normal((16, 64)).astype("float32")
    untuned = relay.build(mod, "llvm")
    mr = gemm_kernel.default_tile()[0]  # 8 (x 32) on AVX-512
    default = mr * gemm._dense_nr(DENSE[2])
    assert default in _acc_sizes(untuned)  # the default register tile
    recs = [Record(DENSE, {"mr": 4, "nr": 16, "mc": 32, "gemv_split": 2}, [1e-6]),
            Record(DENSE, {"mr": 8, "nr": 64}, [5e-6])]  # slower: not chosen
    with apply_history_best(recs):
        lib = relay.build(mod, "llvm")
    assert 64 in _acc_sizes(lib) and default not in _acc_sizes(lib)
    np.testing.assert_allclose(_run(lib, x), mlp_reference(mod, x), rtol=1e-4, atol=1e-4)
    # outside the context the untuned schedule is back (the kernel caches key on the knobs)
    assert default in _acc_sizes(relay.build(mod, "llvm"))


def test_disk_cache_keys_on_the_knobs():
    from minitvm.backend import kernel_cache
    from minitvm.codegen.build import clear_cache

    mod = small_mlp(seed=7)
    x = np.random.default_rng(8).standard_normal((16, 64)).astype("float32")
    relay.build(mod, "llvm")  # the default kernels go to the on-disk cache
    kernel_cache.clear_cache()
    clear_cache()
    with apply_history_best([Record(DENSE, {"mr": 4, "nr": 16}, [1e-6])]):
        lib = relay.build(mod, "llvm")
    # a stale default kernel would read the weight packed 16 wide as if 32 wide: wrong numbers
    np.testing.assert_allclose(_run(lib, x), mlp_reference(mod, x), rtol=1e-4, atol=1e-4)


def test_conv2d_knobs_keep_numerics():
    x = relay.var("x", shape=tuple(CONV[1]))
    wv = np.random.default_rng(3).standard_normal(CONV[2]).astype("float32")
    y = relay.nn.conv2d(x, relay.const(wv), padding=(1, 1), channels=16, kernel_size=(3, 3))
    mod = minitvm.IRModule.from_expr(relay.Function([x], y))
    data = np.random.default_rng(4).standard_normal(CONV[1]).astype("float32")
    ref = relay.create_executor("debug", mod=mod).evaluate()(data).numpy()
    for knobs in ({"mr": 6, "nr": 48, "unroll_kw": False}, {"mr": 16, "nr": 16,
                                                             "min_macs": 1 << 18}):
        with apply_history_best([Record(CONV, knobs, [1e-6])]):
            lib = relay.build(mod, "llvm")
        np.testing.assert_allclose(_run(lib, data), ref, rtol=1e-4, atol=1e-4)


def test_primitive_function_walk_is_not_recursive():
    x = relay.var("x", shape=(2,))
    y = x
    for _ in range(100_000):
        y = relay.negative(y)
    assert _primitive_calls(relay.Function([x], y)) == []


def test_a_candidate_with_wrong_results_is_a_failure(monkeypatch):
    from minitvm.tune import fused, run_candidate, workload

    task = extract_tasks(small_mlp())[0]
    assert task.program is not None  # measured as the model runs it: with its epilogue
    assert run_candidate(task, {"mr": 4, "nr": 16}).ok
    ref = fused.reference_output(task.program)
    monkeypatch.setattr(fused, "reference_output", lambda spec: ref + 1.0)
    res = run_candidate(task, {"mr": 4, "nr": 16})
    assert not res.ok and "wrong result: max abs error 1" in res.error
    task.program = None  # the workload alone: its own reference
    assert run_candidate(task, {"mr": 4, "nr": 16}).ok
    ref = workload.reference_output(DENSE)
    monkeypatch.setattr(workload, "reference_output", lambda key: ref + 1.0)
    res = run_candidate(task, {"mr": 4, "nr": 16})
    assert not res.ok and "wrong result: max abs error 1" in res.error
